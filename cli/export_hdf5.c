/*
 * export_hdf5.c - `pdcbb export --format hdf5`: a drained job as one HDF5 file.
 *
 * Layout (man pdcbb, "pdcbb export"):
 *   /                      attributes pdc_job_id, pdc_user, pdc_instance, pdc_nservers,
 *                          pdc_complete, pdc_format
 *   /<container>           a group per container: attributes pdc_name, pdc_id, pdc_lifetime,
 *                          pdc_rank, pdc_obj_ids (when set), and its tags
 *   /<container>/<object>  a dataset per object, of its PDC type and shape; objects whose
 *                          container is not in the drain are datasets of the root group
 * Object metadata are attributes named pdc_*; tags keep their names ("tag:" is put in front of
 * a tag named "" or pdc_*). Names are the PDC names with '/' replaced by '_' ("." and "" become
 * "_"); names that collide in one group get "-<id>" appended, as the other export formats do.
 *
 * Data is copied slab by slab (cmd_read_slabs: at most CMD_SLAB_BYTES in memory, every extent
 * checked against its CRC-32C as it is read) into hyperslabs of the datasets. The file is
 * written as NAME.tmp.PID, synced and renamed; a damaged extent fails the export and the
 * temporary file is removed, so a file of that name is always whole and checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "cmd_data.h"
#include "export.h"
#include "pdcbb_drain.h"
#include "pdcbb_name.h"
#include "pdcbb_types.h"

#define H5X_CHUNK_BYTES ((uint64_t)1 << 20) /* target chunk size of unlimited objects */
#define H5X_NAME_MAX 200                     /* bytes of a group or dataset name before -<id> */

/* ---- HDF5 errors: the innermost message of the library's error stack ---- */

static herr_t h5x_walk(unsigned n, const H5E_error2_t *e, void *arg)
{
    char *out = arg;
    if (n == 0 && e->desc != NULL)
        snprintf(out, 256, "%s (%s)", e->desc, e->func_name ? e->func_name : "?");
    return 0;
}

/* Print "pdcbb export: <what>: <HDF5's reason>" and clear the error stack. */
__attribute__((format(printf, 1, 2))) static void h5x_fail(const char *fmt, ...)
{
    char why[256] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, h5x_walk, why);
    H5Eclear2(H5E_DEFAULT);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pdcbb export: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s%s\n", why[0] ? ": " : "", why);
}

/* ---- types ---- */

/* The native integer type of size bytes, signed or not; -1 for other sizes. */
static hid_t h5x_native_int(uint32_t size, bool is_signed)
{
    switch (size) {
    case 1:
        return is_signed ? H5T_NATIVE_INT8 : H5T_NATIVE_UINT8;
    case 2:
        return is_signed ? H5T_NATIVE_INT16 : H5T_NATIVE_UINT16;
    case 4:
        return is_signed ? H5T_NATIVE_INT32 : H5T_NATIVE_UINT32;
    case 8:
        return is_signed ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64;
    default:
        return -1;
    }
}

/* The HDF5 type of a PDC type of element size es (0: the type's own), from its row of the type
 * table (pdcbb_types.h): a new type the caller closes. Integers and floats are the native type
 * of their kind and size (PDC_INT -> H5T_NATIVE_INT32, PDC_LONG -> H5T_NATIVE_INT64, ...);
 * PDC_STRING (characters) is a 1-byte string type; PDC_BOOLEAN an int8 enum FALSE/TRUE (h5py:
 * bool); PDC_VOID_PTR, unknown types and element sizes that differ from the type's are opaque
 * types of es bytes (h5py: void, V<es>). */
static hid_t h5x_type(int32_t type, uint32_t es)
{
    const pdcbb_type_info_t *t = pdcbb_type_info(type);
    hid_t base = -1;
    if (t != NULL && (es == 0 || es == t->size)) {
        switch (t->kind) {
        case PDCBB_KIND_INT:
        case PDCBB_KIND_UINT:
            base = h5x_native_int(t->size, t->kind == PDCBB_KIND_INT);
            break;
        case PDCBB_KIND_FLOAT:
            base = t->size == 4 ? H5T_NATIVE_FLOAT : t->size == 8 ? H5T_NATIVE_DOUBLE : -1;
            break;
        case PDCBB_KIND_BOOL: {
            /* h5py and NumPy read this enum as bool */
            hid_t e = H5Tenum_create(H5T_NATIVE_INT8);
            int8_t f = 0, v = 1;
            if (e >= 0 &&
                (H5Tenum_insert(e, "FALSE", &f) < 0 || H5Tenum_insert(e, "TRUE", &v) < 0)) {
                H5Tclose(e);
                return -1;
            }
            return e;
        }
        case PDCBB_KIND_CHARS: {
            /* characters, 1-byte strings (h5py: dtype S1) */
            hid_t c = H5Tcopy(H5T_C_S1);
            if (c >= 0 && H5Tset_strpad(c, H5T_STR_NULLPAD) < 0) {
                H5Tclose(c);
                return -1;
            }
            return c;
        }
        case PDCBB_KIND_OPAQUE:
            break;
        }
    }
    if (base >= 0)
        return H5Tcopy(base);
    /* no tag: HDF5 converts only between opaque types of equal tags, and h5py reads untagged
     * ones (the PDC type is the pdc_type attribute) */
    return H5Tcreate(H5T_OPAQUE, es ? es : 1);
}

/* ---- attributes ---- */

/* Attribute name of type t holding n elements at value: a 1-D array, or a scalar when n == 1
 * and !array; n == 0: an empty attribute with a null dataspace. 0 or -1 (printed). */
static int h5x_attr_n(hid_t loc, const char *what, const char *name, hid_t t, uint64_t n,
                      const void *value, bool array)
{
    hsize_t dim = n;
    hid_t s = n == 0                ? H5Screate(H5S_NULL)
              : n == 1 && !array    ? H5Screate(H5S_SCALAR)
                                    : H5Screate_simple(1, &dim, NULL);
    hid_t a = s < 0 ? -1 : H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && (n == 0 || H5Awrite(a, t, value) >= 0) ? 0 : -1;
    if (a >= 0)
        H5Aclose(a);
    if (s >= 0)
        H5Sclose(s);
    if (rc != 0)
        h5x_fail("%s: cannot write attribute '%s'", what, pdcbb_esc(name));
    return rc;
}

static int h5x_attr(hid_t loc, const char *what, const char *name, hid_t t, uint64_t n,
                    const void *value)
{
    return h5x_attr_n(loc, what, name, t, n, value, false);
}

static int h5x_attr_u64(hid_t loc, const char *what, const char *name, uint64_t v)
{
    return h5x_attr(loc, what, name, H5T_NATIVE_UINT64, 1, &v);
}

/* A variable-length UTF-8 string (h5py reads it as str). */
static int h5x_attr_str(hid_t loc, const char *what, const char *name, const char *v)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
        if (t >= 0)
            H5Tclose(t);
        h5x_fail("%s: cannot make a string type for '%s'", what, pdcbb_esc(name));
        return -1;
    }
    const char *p = v ? v : "";
    int rc = h5x_attr(loc, what, name, t, 1, &p);
    H5Tclose(t);
    return rc;
}

/*
 * A tag as an attribute: PDC_STRING and PDC_CHAR values are strings (one trailing NUL dropped;
 * a value with a NUL inside is opaque instead); numeric types are a scalar (one element) or a
 * 1-D array of their HDF5 type; anything else (a length that is not a multiple of the element
 * size, PDC_VOID_PTR, unknown types) is one opaque element of the value's length.
 */
static int h5x_tag(hid_t loc, const char *what, const pdcbb_drain_tag_t *tag)
{
    char name[1024];
    if (tag->name[0] == '\0' || strncmp(tag->name, "pdc_", 4) == 0)
        snprintf(name, sizeof(name), "tag:%s", tag->name);
    else
        snprintf(name, sizeof(name), "%s", tag->name);
    if (tag->type == 3 || tag->type == 4) {
        uint32_t n = tag->len;
        if (n > 0 && tag->value[n - 1] == '\0')
            n--;
        if (n == 0 || memchr(tag->value, '\0', n) == NULL) {
            char *s = malloc((size_t)n + 1);
            if (s == NULL) {
                fprintf(stderr, "pdcbb export: out of memory\n");
                return -1;
            }
            if (n > 0)
                memcpy(s, tag->value, n);
            s[n] = '\0';
            int rc = h5x_attr_str(loc, what, name, s);
            free(s);
            return rc;
        }
    } else {
        hid_t t = h5x_type(tag->type, 0);
        if (t >= 0 && H5Tget_class(t) != H5T_OPAQUE) {
            size_t es = H5Tget_size(t);
            if (tag->len % es == 0) {
                int rc = h5x_attr(loc, what, name, t, tag->len / es, tag->value);
                H5Tclose(t);
                return rc;
            }
        }
        if (t >= 0)
            H5Tclose(t);
        H5Eclear2(H5E_DEFAULT);
    }
    /* opaque: the value's bytes as one element (an empty value: a null dataspace) */
    hid_t t = h5x_type(tag->type, tag->len);
    if (t < 0) {
        h5x_fail("%s: cannot make a type for tag '%s'", what, pdcbb_esc(tag->name));
        return -1;
    }
    if (H5Tget_class(t) != H5T_OPAQUE) { /* an exact size match of a numeric type */
        H5Tclose(t);
        t = h5x_type(-1, tag->len);
        if (t < 0) {
            h5x_fail("%s: cannot make a type for tag '%s'", what, pdcbb_esc(tag->name));
            return -1;
        }
    }
    int rc = h5x_attr(loc, what, name, t, tag->len ? 1 : 0, tag->value);
    H5Tclose(t);
    return rc;
}

static int h5x_tags(hid_t loc, const char *what, const pdcbb_drain_tag_t *tags, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (h5x_tag(loc, what, &tags[i]) != 0)
            return -1;
    return 0;
}

/* ---- names ---- */

typedef struct h5x_item {
    int64_t parent;   /* -1: the root group; else the index of the container in m->conts */
    int64_t cont;     /* >= 0: this item is that container; -1: an object */
    const pdcbb_drain_object_t *o;
    uint64_t id;
    char name[H5X_NAME_MAX + 32];
} h5x_item_t;

static void h5x_name(const char *pdc, char *out, size_t len)
{
    size_t n = 0;
    for (const char *p = pdc; *p != '\0' && n < H5X_NAME_MAX && n + 1 < len; p++)
        out[n++] = *p == '/' ? '_' : *p;
    out[n] = '\0';
    if (n == 0 || strcmp(out, ".") == 0)
        snprintf(out, len, "_");
}

static int h5x_item_cmp(const void *a, const void *b)
{
    const h5x_item_t *x = a, *y = b;
    if (x->parent != y->parent)
        return x->parent < y->parent ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c != 0)
        return c;
    if (x->cont != y->cont) /* containers first */
        return x->cont > y->cont ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The index of o's container in m->conts, -1 when it is not in the drain. */
static int64_t h5x_cont_index(const pdcbb_drain_t *m, const pdcbb_drain_object_t *o)
{
    const pdcbb_drain_cont_t *c = o->cont_id ? pdcbb_drain_find_cont_id(m, o->cont_id) : NULL;
    return c ? (int64_t)(c - m->conts) : -1;
}

/* ---- data ---- */

typedef struct h5x_sink {
    hid_t dset, type, fspace;
    const char *name;
} h5x_sink_t;

static int h5x_write_slab(const void *data, size_t len, const pdcbb_box_t *slab, void *arg)
{
    h5x_sink_t *s = arg;
    hsize_t off[PDCBB_REGION_NDIM_MAX], cnt[PDCBB_REGION_NDIM_MAX];
    (void)len;
    for (uint32_t d = 0; d < slab->ndim; d++) {
        off[d] = slab->off[d];
        cnt[d] = slab->size[d];
    }
    hid_t ms = H5Screate_simple((int)slab->ndim, cnt, NULL);
    int rc = -1;
    if (ms >= 0 && H5Sselect_hyperslab(s->fspace, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0 &&
        H5Dwrite(s->dset, s->type, ms, s->fspace, H5P_DEFAULT, data) >= 0)
        rc = 0;
    if (ms >= 0)
        H5Sclose(ms);
    if (rc != 0)
        h5x_fail("object '%s': cannot write its data", pdcbb_esc(s->name));
    return rc;
}

/* Chunk dimensions of an unlimited object with rows rows: whole inner rows where they fit
 * H5X_CHUNK_BYTES (the largest inner dimension halved until they do), as many rows as fit but
 * no more than the object has (a small object does not take a whole MiB). */
static void h5x_chunk(const pdcbb_drain_object_t *o, uint64_t rows, hsize_t *chunk)
{
    uint64_t row = o->element_size ? o->element_size : 1;
    for (uint32_t d = 1; d < o->ndim; d++)
        chunk[d] = o->dims[d] ? o->dims[d] : 1;
    for (;;) {
        row = o->element_size ? o->element_size : 1;
        uint32_t big = 0;
        for (uint32_t d = 1; d < o->ndim; d++) {
            row *= chunk[d];
            if (big == 0 || chunk[d] > chunk[big])
                big = d;
        }
        if (row <= H5X_CHUNK_BYTES || big == 0 || chunk[big] <= 1)
            break;
        chunk[big] = (chunk[big] + 1) / 2;
    }
    chunk[0] = row >= H5X_CHUNK_BYTES ? 1 : H5X_CHUNK_BYTES / row;
    if (chunk[0] > rows && rows > 0)
        chunk[0] = rows;
}

/* The object's metadata as pdc_* attributes. */
static int h5x_object_attrs(const pdcbb_drain_t *m, hid_t d, const pdcbb_drain_object_t *o)
{
    const char *w = o->name;
    const char *tn = pdcbb_drain_type_name(o->type);
    const char *pn = pdcbb_drain_partition_name(o->partition);
    (void)m;
    if (h5x_attr_str(d, w, "pdc_name", o->name) || h5x_attr_u64(d, w, "pdc_id", o->id) ||
        h5x_attr_str(d, w, "pdc_type", tn ? tn : "PDC_UNKNOWN") ||
        h5x_attr_u64(d, w, "pdc_element_size", o->element_size) ||
        h5x_attr_str(d, w, "pdc_container", o->container ? o->container : "") ||
        h5x_attr_u64(d, w, "pdc_container_id", o->cont_id) ||
        h5x_attr_u64(d, w, "pdc_rank", o->rank) ||
        h5x_attr_str(d, w, "pdc_partition", pn ? pn : "PDC_UNKNOWN") ||
        h5x_attr_u64(d, w, "pdc_consistency", o->consistency) ||
        h5x_attr_u64(d, w, "pdc_user_id", o->user_id) ||
        h5x_attr_u64(d, w, "pdc_time_step", o->time_step) ||
        h5x_attr_str(d, w, "pdc_app_name", o->app_name) ||
        h5x_attr_str(d, w, "pdc_data_loc", o->data_loc) ||
        h5x_attr_str(d, w, "pdc_tag_string", o->tags_str) ||
        h5x_attr_n(d, w, "pdc_dims", H5T_NATIVE_UINT64, o->ndim, o->dims, true))
        return -1;
    return h5x_tags(d, w, o->tags, o->ntags);
}

/* One object: its dataset, attributes and data. 0 or -1 (printed). */
static int h5x_object(pdcbb_drain_t *m, hid_t parent, const char *name,
                      const pdcbb_drain_object_t *o, cmd_progress_t *prog, uint64_t *done,
                      uint64_t total)
{
    uint64_t shape[PDCBB_REGION_NDIM_MAX], zero[PDCBB_REGION_NDIM_MAX] = {0};
    hsize_t cur[PDCBB_REGION_NDIM_MAX], max[PDCBB_REGION_NDIM_MAX], chunk[PDCBB_REGION_NDIM_MAX];
    hid_t t = -1, s = -1, dcpl = -1, dapl = -1, d = -1;
    int rc = -1;
    bool empty = o->ndim == 0;

    if (pdcbb_drain_object_shape(m, o, shape) != PDCBB_OK) {
        fprintf(stderr, "pdcbb export: object '%s': its size overflows\n", pdcbb_esc(o->name));
        return -1;
    }
    t = h5x_type(o->type, o->element_size);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    dapl = H5Pcreate(H5P_DATASET_ACCESS);
    if (t < 0 || dcpl < 0 || dapl < 0) {
        h5x_fail("object '%s': cannot make its type", pdcbb_esc(o->name));
        goto done;
    }
    if (o->ndim == 0) {
        s = H5Screate(H5S_NULL); /* metadata and tags only */
    } else {
        bool unlimited = o->dims[0] == PDCBB_DIM_UNLIMITED;
        for (uint32_t k = 0; k < o->ndim; k++) {
            cur[k] = shape[k];
            max[k] = shape[k];
            empty |= shape[k] == 0;
        }
        if (unlimited) {
            max[0] = H5S_UNLIMITED;
            h5x_chunk(o, shape[0], chunk);
            /* fully written chunks leave the cache first; a slab spans many chunks */
            if (H5Pset_chunk(dcpl, (int)o->ndim, chunk) < 0 ||
                H5Pset_chunk_cache(dapl, 12421, (size_t)CMD_SLAB_BYTES, 1.0) < 0) {
                h5x_fail("object '%s': cannot set its chunks", pdcbb_esc(o->name));
                goto done;
            }
        }
        s = H5Screate_simple((int)o->ndim, cur, max);
    }
    /* every element is written (unwritten ones as the zeros the drain reads), so no fill */
    if (s < 0 || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0) {
        h5x_fail("object '%s': cannot make its dataspace", pdcbb_esc(o->name));
        goto done;
    }
    d = H5Dcreate2(parent, name, t, s, H5P_DEFAULT, dcpl, dapl);
    if (d < 0) {
        h5x_fail("object '%s': cannot create dataset '%s'", pdcbb_esc(o->name), pdcbb_esc(name));
        goto done;
    }
    if (h5x_object_attrs(m, d, o) != 0)
        goto done;
    if (!empty) {
        pdcbb_box_t box;
        if (pdcbb_box_make(&box, o->ndim, zero, shape) != PDCBB_OK) {
            fprintf(stderr, "pdcbb export: object '%s': bad dimensions\n", pdcbb_esc(o->name));
            goto done;
        }
        h5x_sink_t sink = {d, t, H5Dget_space(d), o->name};
        if (sink.fspace < 0) {
            h5x_fail("object '%s': cannot get its dataspace", pdcbb_esc(o->name));
            goto done;
        }
        int r = cmd_read_slabs("export", m, o, &box, h5x_write_slab, &sink, prog, done, total);
        H5Sclose(sink.fspace);
        if (r != 0)
            goto done;
    }
    rc = 0;
done:
    if (d >= 0)
        H5Dclose(d);
    if (s >= 0)
        H5Sclose(s);
    if (dapl >= 0)
        H5Pclose(dapl);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (t >= 0)
        H5Tclose(t);
    return rc;
}

static int h5x_cont(hid_t g, const pdcbb_drain_cont_t *c)
{
    const char *w = c->name;
    if (h5x_attr_str(g, w, "pdc_name", c->name) || h5x_attr_u64(g, w, "pdc_id", c->id) ||
        h5x_attr_str(g, w, "pdc_lifetime", c->lifetime ? "transient" : "persistent") ||
        h5x_attr_u64(g, w, "pdc_rank", c->rank) ||
        (c->nobj_ids > 0 &&
         h5x_attr_n(g, w, "pdc_obj_ids", H5T_NATIVE_UINT64, c->nobj_ids, c->obj_ids, true)))
        return -1;
    return h5x_tags(g, w, c->tags, c->ntags);
}

/* ---- the file ---- */

/* The output file's path from -o (see export.h), ext the extension of a file named after the
 * drain. 0 or -1 (printed). */
static int h5x_path(const pdcbb_drain_t *m, const char *output, const char *ext, char *path,
                    size_t len)
{
    size_t n = output ? strlen(output) : 0;
    if (n > 3 && (strcmp(output + n - 3, ".h5") == 0 ||
                  (n > 5 && strcmp(output + n - 5, ".hdf5") == 0))) {
        if ((size_t)snprintf(path, len, "%s", output) >= len) {
            fprintf(stderr, "pdcbb export: %s: path too long\n", output);
            return -1;
        }
        return 0;
    }
    const char *dir = output ? output : ".";
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "pdcbb export: cannot create %s: %s\n", dir, strerror(errno));
        return -1;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "pdcbb export: %s is not a directory\n", dir);
        return -1;
    }
    const char *base = strrchr(m->dir, '/');
    base = base ? base + 1 : m->dir;
    if ((size_t)snprintf(path, len, "%s/%s%s", dir, base[0] ? base : "pdcbb", ext) >= len) {
        fprintf(stderr, "pdcbb export: %s: path too long\n", dir);
        return -1;
    }
    return 0;
}

/* Groups and datasets of every container and object, in the file f. 0 or -1 (printed). */
static int h5x_contents(pdcbb_drain_t *m, hid_t f, bool quiet, uint64_t total,
                        uint64_t *done_bytes, uint32_t *written)
{
    uint64_t nitems = (uint64_t)m->nconts + m->nobjs;
    h5x_item_t *items = calloc(nitems + 1, sizeof(*items));
    char **gnames = calloc((size_t)m->nconts + 1, sizeof(char *));
    int rc = -1;
    if (items == NULL || gnames == NULL) {
        fprintf(stderr, "pdcbb export: out of memory\n");
        goto done;
    }
    for (uint32_t i = 0; i < m->nconts; i++) {
        items[i] = (h5x_item_t){-1, i, NULL, m->conts[i].id, ""};
        h5x_name(m->conts[i].name, items[i].name, sizeof(items[i].name));
    }
    for (uint32_t i = 0; i < m->nobjs; i++) {
        h5x_item_t *it = &items[m->nconts + i];
        *it = (h5x_item_t){h5x_cont_index(m, &m->objs[i]), -1, &m->objs[i], m->objs[i].id, ""};
        h5x_name(m->objs[i].name, it->name, sizeof(it->name));
    }
    qsort(items, nitems, sizeof(*items), h5x_item_cmp);
    /* names that collide in one group: every one of them gets -<id> */
    bool *dup = calloc(nitems + 1, sizeof(bool));
    if (dup == NULL) {
        fprintf(stderr, "pdcbb export: out of memory\n");
        goto done;
    }
    for (uint64_t i = 1; i < nitems; i++)
        if (items[i].parent == items[i - 1].parent && strcmp(items[i].name, items[i - 1].name) == 0)
            dup[i] = dup[i - 1] = true;
    for (uint64_t i = 0; i < nitems; i++) {
        if (dup[i]) {
            size_t n = strlen(items[i].name);
            snprintf(items[i].name + n, sizeof(items[i].name) - n, "-%" PRIu64, items[i].id);
        }
        if (items[i].cont >= 0)
            gnames[items[i].cont] = items[i].name;
    }
    free(dup);

    cmd_progress_t prog;
    cmd_progress_init(&prog, "export", !quiet && total > ((uint64_t)1 << 30));
    /* containers sort before objects of the root (parent -1), so groups exist when needed */
    for (uint64_t i = 0; i < nitems; i++) {
        h5x_item_t *it = &items[i];
        if (it->cont >= 0) {
            const pdcbb_drain_cont_t *c = &m->conts[it->cont];
            hid_t g = H5Gcreate2(f, it->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            if (g < 0) {
                h5x_fail("container '%s': cannot create group '%s'", c->name, it->name);
                goto done;
            }
            int r = h5x_cont(g, c);
            H5Gclose(g);
            if (r != 0)
                goto done;
            continue;
        }
    }
    for (uint64_t i = 0; i < nitems; i++) {
        h5x_item_t *it = &items[i];
        if (it->cont >= 0)
            continue;
        hid_t parent = it->parent < 0 ? f : H5Gopen2(f, gnames[it->parent], H5P_DEFAULT);
        if (parent < 0) {
            h5x_fail("object '%s': cannot open group '%s'", it->o->name, gnames[it->parent]);
            goto done;
        }
        if (it->o->ndim == 0 && !quiet)
            fprintf(stderr, "pdcbb export: object '%s' has no dimensions: an empty dataset "
                            "with its attributes only\n",
                    it->o->name);
        int r = h5x_object(m, parent, it->name, it->o, &prog, done_bytes, total);
        if (parent != f)
            H5Gclose(parent);
        if (r != 0)
            goto done;
        (*written)++;
    }
    cmd_progress(&prog, *done_bytes, total, true);
    rc = 0;
done:
    free(gnames);
    free(items);
    return rc;
}

static int h5x_root_attrs(const pdcbb_drain_t *m, hid_t f)
{
    const char *w = "the file";
    return (h5x_attr_str(f, w, "pdc_format", "pdcbb-drain") ||
            h5x_attr_u64(f, w, "pdc_job_id", m->job_id) ||
            h5x_attr_str(f, w, "pdc_user", m->user ? m->user : "") ||
            h5x_attr_str(f, w, "pdc_instance", m->instance ? m->instance : "") ||
            h5x_attr_u64(f, w, "pdc_nservers", m->nservers) ||
            h5x_attr_u64(f, w, "pdc_complete", m->complete ? 1 : 0))
               ? -1
               : 0;
}

int export_hdf5(const export_format_t *fmt, pdcbb_drain_t *m, const char *output, bool force,
                bool quiet)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    if (h5x_path(m, output, fmt->ext, path, sizeof(path)) != 0)
        return 1;
    if (!force && access(path, F_OK) == 0) {
        fprintf(stderr, "pdcbb export: %s exists (use --force to overwrite); nothing written\n",
                path);
        return 1;
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < m->nobjs; i++) {
        uint64_t shape[PDCBB_REGION_NDIM_MAX], b = m->objs[i].ndim ? m->objs[i].element_size : 0;
        if (pdcbb_drain_object_shape(m, &m->objs[i], shape) == PDCBB_OK)
            for (uint32_t d = 0; d < m->objs[i].ndim; d++)
                b *= shape[d];
        total += b;
    }
    for (uint32_t i = 0; i < m->nkvs; i++) {
        const char *c = m->kvs[i].container;
        fprintf(stderr, "pdcbb export: KV object '%s' (container %s%s%s) skipped: the HDF5 "
                        "export holds no KV objects (use pdcbb kv export)\n",
                m->kvs[i].name, c && c[0] ? "'" : "", c && c[0] ? c : "not in the drain",
                c && c[0] ? "'" : "");
    }

    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported by h5x_fail */
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    /* closing the file closes whatever an error path left open */
    if (fapl < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
        h5x_fail("%s: cannot make file properties", tmp);
        if (fapl >= 0)
            H5Pclose(fapl);
        return 1;
    }
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (f < 0) {
        h5x_fail("cannot create %s", tmp);
        unlink(tmp);
        return 1;
    }
    uint64_t done_bytes = 0;
    uint32_t written = 0;
    int rc = h5x_root_attrs(m, f);
    if (rc == 0)
        rc = h5x_contents(m, f, quiet, total, &done_bytes, &written);
    if (H5Fclose(f) < 0 && rc == 0) {
        h5x_fail("cannot write %s", tmp);
        rc = -1;
    }
    if (rc == 0) {
        /* the data reaches the disk before the name does */
        int fd = open(tmp, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL)) {
            fprintf(stderr, "pdcbb export: cannot write %s: %s\n", tmp, strerror(errno));
            rc = -1;
        }
        if (fd >= 0)
            close(fd);
    }
    /* without --force, a file that appeared meanwhile is not replaced either */
    if (rc == 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, force ? 0 : RENAME_NOREPLACE) != 0) {
        if (errno == EEXIST)
            fprintf(stderr, "pdcbb export: %s exists (use --force to overwrite); nothing "
                            "written\n",
                    path);
        else
            fprintf(stderr, "pdcbb export: cannot rename %s to %s: %s\n", tmp, path,
                    strerror(errno));
        rc = -1;
    }
    if (rc != 0) {
        unlink(tmp);
        return 1;
    }
    if (!quiet) {
        printf("%s\n", path);
        cmd_export_report(m, written, done_bytes, path);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
