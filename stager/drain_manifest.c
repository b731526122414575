/*
 * drain_manifest.c - the in-memory model of a drain directory (docs/DRAIN-FORMAT.md) and its
 * YAML manifests: building and merging models, lookups, object shapes, writing a manifest with
 * libyaml's emitter (write to a temporary name, fsync, rename, fsync the directory), the strict
 * manifest loader, opening a drain directory and finishing a drain (manifest.yaml + COMPLETE).
 *
 * The loader streams: libyaml's events are assembled into a small tree per top-level value and
 * per item of the ranks / containers / objects / extents lists, so a manifest of millions of
 * extents is read without holding its whole document in memory. Every error names the file, the
 * YAML line and the key.
 */
#include <ctype.h>
#include <dirent.h>
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
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "drain_internal.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"

#define DRAIN_TAG_VALUE_MAX (1u << 20) /* bytes of one tag value */
#define DRAIN_NSERVERS_MAX 65535u      /* PDCBB_SERVERS_MAX of the wire protocol */
#define DRAIN_YAML_DEPTH_MAX 16

void drain_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------------------------------- */
/* Private state                                                                              */
/* ---------------------------------------------------------------------------------------- */

drain_priv_t *drain_priv_get(pdcbb_drain_t *m)
{
    if (m->priv == NULL) {
        drain_priv_t *p = calloc(1, sizeof(*p));
        if (p == NULL)
            return NULL;
        m->priv = p;
    }
    return m->priv;
}

void drain_priv_invalidate(pdcbb_drain_t *m)
{
    drain_priv_t *p = m->priv;
    if (p != NULL)
        p->order_valid = 0;
}

static void drain_priv_free(drain_priv_t *p)
{
    if (p == NULL)
        return;
    drain_priv_release_read(p);
    for (uint32_t i = 0; i < p->nfiles; i++)
        free(p->files[i]);
    free(p->files);
    free(p);
}

/* The interned copy of an extent's file name (extents of one file share one string). */
static char *drain_intern(pdcbb_drain_t *m, const char *file)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL)
        return NULL;
    if (p->last_file < p->nfiles && strcmp(p->files[p->last_file], file) == 0)
        return p->files[p->last_file];
    for (uint32_t i = 0; i < p->nfiles; i++) {
        if (strcmp(p->files[i], file) == 0) {
            p->last_file = i;
            return p->files[i];
        }
    }
    if (p->nfiles == p->cap_files) {
        uint32_t cap = p->cap_files ? 2 * p->cap_files : 16;
        char **v = realloc(p->files, cap * sizeof(*v));
        if (v == NULL)
            return NULL;
        p->files = v;
        p->cap_files = cap;
    }
    char *s = strdup(file);
    if (s == NULL)
        return NULL;
    p->last_file = p->nfiles;
    p->files[p->nfiles++] = s;
    return s;
}

/* Make room for one more element of an array of n elements whose capacity is *cap. */
static int drain_grow(void **arr, uint64_t n, uint64_t *cap, size_t elem)
{
    if (n < *cap)
        return 0;
    uint64_t ncap = n < 8 ? 8 : 2 * n;
    if (ncap > SIZE_MAX / elem)
        return -1;
    void *v = realloc(*arr, (size_t)(ncap * elem));
    if (v == NULL)
        return -1;
    *arr = v;
    *cap = ncap;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The model                                                                                  */
/* ---------------------------------------------------------------------------------------- */

pdcbb_drain_t *pdcbb_drain_new(void)
{
    return calloc(1, sizeof(pdcbb_drain_t));
}

static void drain_tags_free(pdcbb_drain_tag_t *t, uint32_t n)
{
    for (uint32_t i = 0; t != NULL && i < n; i++) {
        free(t[i].name);
        free(t[i].value);
    }
    free(t);
}

static void drain_cont_clear(pdcbb_drain_cont_t *c)
{
    free(c->name);
    drain_tags_free(c->tags, c->ntags);
    free(c->obj_ids);
}

static void drain_object_clear(pdcbb_drain_object_t *o)
{
    free(o->name);
    free(o->container);
    free(o->app_name);
    free(o->data_loc);
    free(o->tags_str);
    drain_tags_free(o->tags, o->ntags);
    free(o->map);
}

void pdcbb_drain_free(pdcbb_drain_t *m)
{
    if (m == NULL)
        return;
    free(m->dir);
    free(m->user);
    free(m->instance);
    for (uint32_t i = 0; i < m->nranks; i++) {
        free(m->ranks[i].node);
        free(m->ranks[i].data_file);
    }
    free(m->ranks);
    for (uint32_t i = 0; i < m->nconts; i++)
        drain_cont_clear(&m->conts[i]);
    free(m->conts);
    for (uint32_t i = 0; i < m->nobjs; i++)
        drain_object_clear(&m->objs[i]);
    free(m->objs);
    /* extent file names are interned: the table in priv owns them */
    free(m->extents);
    for (uint32_t i = 0; i < m->nkvs; i++) {
        free(m->kvs[i].name);
        free(m->kvs[i].container);
        free(m->kvs[i].committed);
    }
    free(m->kvs);
    for (uint32_t i = 0; i < m->nkvdumps; i++)
        free(m->kvdumps[i].file);
    free(m->kvdumps);
    drain_priv_free(m->priv);
    free(m);
}

static char *drain_strdup0(const char *s)
{
    return strdup(s != NULL ? s : "");
}

static pdcbb_err_t drain_tags_dup(const pdcbb_drain_tag_t *src, uint32_t n,
                                  pdcbb_drain_tag_t **out)
{
    *out = NULL;
    if (n == 0)
        return PDCBB_OK;
    pdcbb_drain_tag_t *t = calloc(n, sizeof(*t));
    if (t == NULL)
        return PDCBB_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        t[i].type = src[i].type;
        t[i].len = src[i].len;
        t[i].name = drain_strdup0(src[i].name);
        t[i].value = malloc(src[i].len ? src[i].len : 1);
        if (t[i].name == NULL || t[i].value == NULL) {
            drain_tags_free(t, i + 1);
            return PDCBB_ERR_NOMEM;
        }
        if (src[i].len)
            memcpy(t[i].value, src[i].value, src[i].len);
    }
    *out = t;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_add_rank(pdcbb_drain_t *m, const pdcbb_drain_rank_t *r)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL || drain_grow((void **)&m->ranks, m->nranks, &p->cap_ranks, sizeof(*r)))
        return PDCBB_ERR_NOMEM;
    pdcbb_drain_rank_t x = *r;
    x.node = drain_strdup0(r->node);
    x.data_file = drain_strdup0(r->data_file);
    if (x.node == NULL || x.data_file == NULL) {
        free(x.node);
        free(x.data_file);
        return PDCBB_ERR_NOMEM;
    }
    m->ranks[m->nranks++] = x;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_add_cont(pdcbb_drain_t *m, const pdcbb_drain_cont_t *c,
                                 pdcbb_drain_cont_t **out)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL || drain_grow((void **)&m->conts, m->nconts, &p->cap_conts, sizeof(*c)))
        return PDCBB_ERR_NOMEM;
    pdcbb_drain_cont_t x = *c;
    x.name = drain_strdup0(c->name);
    x.tags = NULL;
    x.obj_ids = NULL;
    if (x.name == NULL || drain_tags_dup(c->tags, c->ntags, &x.tags) != PDCBB_OK)
        goto nomem;
    if (c->nobj_ids) {
        x.obj_ids = malloc(c->nobj_ids * sizeof(uint64_t));
        if (x.obj_ids == NULL)
            goto nomem;
        memcpy(x.obj_ids, c->obj_ids, c->nobj_ids * sizeof(uint64_t));
    }
    m->conts[m->nconts] = x;
    if (out != NULL)
        *out = &m->conts[m->nconts];
    m->nconts++;
    return PDCBB_OK;
nomem:
    drain_cont_clear(&x);
    return PDCBB_ERR_NOMEM;
}

pdcbb_err_t pdcbb_drain_add_object(pdcbb_drain_t *m, const pdcbb_drain_object_t *o,
                                   pdcbb_drain_object_t **out)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL || drain_grow((void **)&m->objs, m->nobjs, &p->cap_objs, sizeof(*o)))
        return PDCBB_ERR_NOMEM;
    pdcbb_drain_object_t x = *o;
    x.name = drain_strdup0(o->name);
    x.container = drain_strdup0(o->container);
    x.app_name = drain_strdup0(o->app_name);
    x.data_loc = drain_strdup0(o->data_loc);
    x.tags_str = drain_strdup0(o->tags_str);
    x.tags = NULL;
    x.map = NULL;
    if (x.name == NULL || x.container == NULL || x.app_name == NULL || x.data_loc == NULL ||
        x.tags_str == NULL || drain_tags_dup(o->tags, o->ntags, &x.tags) != PDCBB_OK)
        goto nomem;
    if (o->nmap) {
        x.map = malloc(o->nmap * sizeof(*x.map));
        if (x.map == NULL)
            goto nomem;
        memcpy(x.map, o->map, o->nmap * sizeof(*x.map));
    }
    m->objs[m->nobjs] = x;
    if (out != NULL)
        *out = &m->objs[m->nobjs];
    m->nobjs++;
    return PDCBB_OK;
nomem:
    drain_object_clear(&x);
    return PDCBB_ERR_NOMEM;
}

pdcbb_err_t pdcbb_drain_add_extent(pdcbb_drain_t *m, const pdcbb_drain_extent_t *e)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL || drain_grow((void **)&m->extents, m->nextents, &p->cap_extents, sizeof(*e)))
        return PDCBB_ERR_NOMEM;
    pdcbb_drain_extent_t x = *e;
    x.file = drain_intern(m, e->file != NULL ? e->file : "");
    if (x.file == NULL)
        return PDCBB_ERR_NOMEM;
    m->extents[m->nextents++] = x;
    p->order_valid = 0;
    return PDCBB_OK;
}

const pdcbb_drain_kv_t *pdcbb_drain_find_kv(const pdcbb_drain_t *m, const char *container,
                                            const char *name, int *ambiguous)
{
    const pdcbb_drain_kv_t *hit = NULL;
    if (ambiguous != NULL)
        *ambiguous = 0;
    for (uint32_t i = 0; i < m->nkvs; i++) {
        const pdcbb_drain_kv_t *k = &m->kvs[i];
        if (strcmp(k->name, name) != 0 || (container != NULL && strcmp(k->container, container)))
            continue;
        if (hit != NULL) {
            if (ambiguous != NULL)
                *ambiguous = 1;
            return NULL;
        }
        hit = k;
    }
    return hit;
}

const pdcbb_drain_kv_t *pdcbb_drain_find_kv_id(const pdcbb_drain_t *m, uint64_t id)
{
    for (uint32_t i = 0; i < m->nkvs; i++)
        if (m->kvs[i].id == id)
            return &m->kvs[i];
    return NULL;
}

static int drain_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Merge tags (n of them) into k's committed tags: sorted, without duplicates. */
static pdcbb_err_t drain_kv_merge_committed(pdcbb_drain_kv_t *k, const uint64_t *tags, uint32_t n)
{
    if (n == 0)
        return PDCBB_OK;
    uint64_t *all = realloc(k->committed, ((size_t)k->ncommitted + n) * sizeof(uint64_t));
    if (all == NULL)
        return PDCBB_ERR_NOMEM;
    memcpy(all + k->ncommitted, tags, (size_t)n * sizeof(uint64_t));
    uint32_t total = k->ncommitted + n, out = 0;
    qsort(all, total, sizeof(uint64_t), drain_u64_cmp);
    for (uint32_t i = 0; i < total; i++)
        if (out == 0 || all[out - 1] != all[i])
            all[out++] = all[i];
    k->committed = all;
    k->ncommitted = out;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_add_kv(pdcbb_drain_t *m, const pdcbb_drain_kv_t *kv)
{
    pdcbb_drain_kv_t *old = (pdcbb_drain_kv_t *)pdcbb_drain_find_kv_id(m, kv->id);
    if (old != NULL) {
        /* a shard's copy may not know the container's name: keep the one that does */
        if (old->container[0] == '\0' && kv->container && kv->container[0]) {
            char *c = strdup(kv->container);
            if (c == NULL)
                return PDCBB_ERR_NOMEM;
            free(old->container);
            old->container = c;
        }
        return drain_kv_merge_committed(old, kv->committed, kv->ncommitted);
    }
    pdcbb_drain_kv_t *g = realloc(m->kvs, ((size_t)m->nkvs + 1) * sizeof(*g));
    if (g == NULL)
        return PDCBB_ERR_NOMEM;
    m->kvs = g;
    pdcbb_drain_kv_t x = *kv;
    x.name = drain_strdup0(kv->name);
    x.container = drain_strdup0(kv->container);
    x.committed = NULL;
    x.ncommitted = 0;
    if (x.name == NULL || x.container == NULL ||
        drain_kv_merge_committed(&x, kv->committed, kv->ncommitted) != PDCBB_OK) {
        free(x.name);
        free(x.container);
        free(x.committed);
        return PDCBB_ERR_NOMEM;
    }
    m->kvs[m->nkvs++] = x;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_add_kvdump(pdcbb_drain_t *m, const pdcbb_drain_kvdump_t *d)
{
    pdcbb_drain_kvdump_t *g = realloc(m->kvdumps, ((size_t)m->nkvdumps + 1) * sizeof(*g));
    if (g == NULL)
        return PDCBB_ERR_NOMEM;
    m->kvdumps = g;
    pdcbb_drain_kvdump_t x = *d;
    x.file = drain_strdup0(d->file);
    if (x.file == NULL)
        return PDCBB_ERR_NOMEM;
    m->kvdumps[m->nkvdumps++] = x;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_merge(pdcbb_drain_t *into, const pdcbb_drain_t *part)
{
    pdcbb_err_t rc;

    if (into == NULL || part == NULL)
        return PDCBB_ERR_INVAL;
    if (into->nservers == 0 && into->job_id == 0) {
        into->job_id = part->job_id;
        into->uid = part->uid;
        into->nservers = part->nservers;
        into->servers_per_node = part->servers_per_node;
        free(into->user);
        into->user = drain_strdup0(part->user);
        free(into->instance);
        into->instance = drain_strdup0(part->instance);
        if (into->user == NULL || into->instance == NULL)
            return PDCBB_ERR_NOMEM;
    } else if (into->job_id != part->job_id || into->nservers != part->nservers ||
               strcmp(into->instance ? into->instance : "",
                      part->instance ? part->instance : "") != 0) {
        return PDCBB_ERR_INVAL; /* parts of two different jobs */
    }
    for (uint32_t i = 0; i < part->nranks; i++)
        if ((rc = pdcbb_drain_add_rank(into, &part->ranks[i])) != PDCBB_OK)
            return rc;
    for (uint32_t i = 0; i < part->nconts; i++)
        if ((rc = pdcbb_drain_add_cont(into, &part->conts[i], NULL)) != PDCBB_OK)
            return rc;
    for (uint32_t i = 0; i < part->nobjs; i++)
        if ((rc = pdcbb_drain_add_object(into, &part->objs[i], NULL)) != PDCBB_OK)
            return rc;
    for (uint64_t i = 0; i < part->nextents; i++)
        if ((rc = pdcbb_drain_add_extent(into, &part->extents[i])) != PDCBB_OK)
            return rc;
    for (uint32_t i = 0; i < part->nkvs; i++)
        if ((rc = pdcbb_drain_add_kv(into, &part->kvs[i])) != PDCBB_OK)
            return rc;
    for (uint32_t i = 0; i < part->nkvdumps; i++)
        if ((rc = pdcbb_drain_add_kvdump(into, &part->kvdumps[i])) != PDCBB_OK)
            return rc;
    return PDCBB_OK;
}

const pdcbb_drain_cont_t *pdcbb_drain_find_cont(const pdcbb_drain_t *m, const char *name)
{
    for (uint32_t i = 0; m != NULL && name != NULL && i < m->nconts; i++)
        if (strcmp(m->conts[i].name, name) == 0)
            return &m->conts[i];
    return NULL;
}

const pdcbb_drain_cont_t *pdcbb_drain_find_cont_id(const pdcbb_drain_t *m, uint64_t id)
{
    for (uint32_t i = 0; m != NULL && i < m->nconts; i++)
        if (m->conts[i].id == id)
            return &m->conts[i];
    return NULL;
}

const pdcbb_drain_object_t *pdcbb_drain_find_object(const pdcbb_drain_t *m, const char *name)
{
    for (uint32_t i = 0; m != NULL && name != NULL && i < m->nobjs; i++)
        if (strcmp(m->objs[i].name, name) == 0)
            return &m->objs[i];
    return NULL;
}

const pdcbb_drain_object_t *pdcbb_drain_find_object_id(const pdcbb_drain_t *m, uint64_t id)
{
    for (uint32_t i = 0; m != NULL && i < m->nobjs; i++)
        if (m->objs[i].id == id)
            return &m->objs[i];
    return NULL;
}

void pdcbb_drain_object_extents(const pdcbb_drain_t *m, uint64_t obj_id, uint64_t *first,
                                uint64_t *count)
{
    uint64_t lo = 0, hi = m->nextents;

    while (lo < hi) { /* first extent with object_id >= obj_id */
        uint64_t mid = lo + (hi - lo) / 2;
        if (m->extents[mid].object_id < obj_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t end = lo;
    hi = m->nextents;
    while (end < hi) { /* first extent with object_id > obj_id */
        uint64_t mid = end + (hi - end) / 2;
        if (m->extents[mid].object_id <= obj_id)
            end = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    *count = end - lo;
}

static int drain_rank_cmp(const void *a, const void *b)
{
    const pdcbb_drain_rank_t *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int drain_extent_cmp(const void *a, const void *b)
{
    const pdcbb_drain_extent_t *x = a, *y = b;
    if (x->object_id != y->object_id)
        return x->object_id < y->object_id ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->object_offset != y->object_offset)
        return x->object_offset < y->object_offset ? -1 : 1;
    return 0;
}

static int drain_map_cmp(const void *a, const void *b)
{
    const pdcbb_drain_map_entry_t *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

void pdcbb_drain_sort(pdcbb_drain_t *m)
{
    if (m->nranks > 1)
        qsort(m->ranks, m->nranks, sizeof(*m->ranks), drain_rank_cmp);
    if (m->nextents > 1)
        qsort(m->extents, (size_t)m->nextents, sizeof(*m->extents), drain_extent_cmp);
    for (uint32_t i = 0; i < m->nobjs; i++)
        if (m->objs[i].nmap > 1)
            qsort(m->objs[i].map, m->objs[i].nmap, sizeof(*m->objs[i].map), drain_map_cmp);
    /* An object's part names its container only when both have the same home rank. */
    for (uint32_t i = 0; i < m->nobjs; i++) {
        pdcbb_drain_object_t *o = &m->objs[i];
        const pdcbb_drain_cont_t *c;
        if ((o->container == NULL || o->container[0] == '\0') &&
            (c = pdcbb_drain_find_cont_id(m, o->cont_id)) != NULL) {
            char *name = strdup(c->name);
            if (name != NULL) {
                free(o->container);
                o->container = name;
            }
        }
    }
    for (uint32_t i = 0; i < m->nkvs; i++) {
        pdcbb_drain_kv_t *k = &m->kvs[i];
        const pdcbb_drain_cont_t *c;
        if (k->container[0] == '\0' && (c = pdcbb_drain_find_cont_id(m, k->cont_id)) != NULL) {
            char *name = strdup(c->name);
            if (name != NULL) {
                free(k->container);
                k->container = name;
            }
        }
    }
    drain_priv_invalidate(m);
}

/* Bytes of one row (dims[1..] elements) of o; 0 when it overflows or a dim is bad. */
static uint64_t drain_row_bytes(const pdcbb_drain_object_t *o)
{
    uint64_t row = o->element_size;
    for (uint32_t d = 1; d < o->ndim; d++) {
        if (o->dims[d] == 0 || o->dims[d] == PDCBB_DIM_UNLIMITED ||
            row > PDCBB_REGION_STRIDE_MAX / o->dims[d])
            return 0;
        row *= o->dims[d];
    }
    return row <= PDCBB_REGION_STRIDE_MAX ? row : 0;
}

pdcbb_err_t pdcbb_drain_object_shape(const pdcbb_drain_t *m, const pdcbb_drain_object_t *o,
                                     uint64_t *shape)
{
    uint64_t first, count;

    if (o->ndim > PDCBB_REGION_NDIM_MAX || o->element_size == 0)
        return PDCBB_ERR_BAD_REGION;
    if (o->ndim == 0)
        return PDCBB_OK; /* no dimensions, no data */
    uint64_t row = drain_row_bytes(o);
    if (row == 0)
        return PDCBB_ERR_BAD_REGION;
    uint64_t tmp[PDCBB_REGION_NDIM_MAX];
    memcpy(tmp, o->dims, sizeof(tmp));
    if (o->dims[0] == PDCBB_DIM_UNLIMITED) {
        uint64_t end = 0, rows = 0;
        pdcbb_drain_object_extents(m, o->id, &first, &count);
        for (uint64_t i = first; i < first + count; i++)
            if (m->extents[i].object_offset + m->extents[i].length > end)
                end = m->extents[i].object_offset + m->extents[i].length;
        rows = end / row + (end % row != 0);
        for (uint32_t k = 0; k < o->nmap; k++)
            if (o->map[k].box.off[0] + o->map[k].box.size[0] > rows)
                rows = o->map[k].box.off[0] + o->map[k].box.size[0];
        /* The extent the home daemon kept covers every write; never less than the data. */
        if (o->has_current_dims && o->current_rows > rows)
            rows = o->current_rows;
        tmp[0] = rows;
    } else if (o->dims[0] == 0 || o->dims[0] > UINT64_MAX / row) {
        return PDCBB_ERR_BAD_REGION;
    }
    memcpy(shape, tmp, sizeof(tmp));
    return PDCBB_OK;
}

uint64_t pdcbb_drain_object_bytes(const pdcbb_drain_t *m, const pdcbb_drain_object_t *o)
{
    uint64_t first, count, sum = 0;
    pdcbb_drain_object_extents(m, o->id, &first, &count);
    for (uint64_t i = first; i < first + count; i++)
        sum += m->extents[i].length;
    return sum;
}

static const char *const drain_type_names[] = {
    "PDC_INT",   "PDC_FLOAT",  "PDC_DOUBLE", "PDC_CHAR",   "PDC_STRING",   "PDC_BOOLEAN",
    "PDC_SHORT", "PDC_UINT",   "PDC_INT64",  "PDC_UINT64", "PDC_INT16",    "PDC_INT8",
    "PDC_UINT8", "PDC_UINT16", "PDC_INT32",  "PDC_UINT32", "PDC_LONG",     "PDC_VOID_PTR",
    "PDC_SIZE_T",
};
#define DRAIN_NTYPES ((int32_t)(sizeof(drain_type_names) / sizeof(drain_type_names[0])))

static const char *const drain_partition_names[] = {
    "PDC_OBJ_STATIC", "PDC_REGION_STATIC", "PDC_REGION_DYNAMIC", "PDC_REGION_LOCAL"};
#define DRAIN_NPARTITIONS 4u

const char *pdcbb_drain_type_name(int32_t type)
{
    return type >= 0 && type < DRAIN_NTYPES ? drain_type_names[type] : NULL;
}

int32_t pdcbb_drain_type_parse(const char *name)
{
    for (int32_t i = 0; name != NULL && i < DRAIN_NTYPES; i++)
        if (strcmp(drain_type_names[i], name) == 0)
            return i;
    return -1;
}

const char *pdcbb_drain_partition_name(uint32_t partition)
{
    return partition < DRAIN_NPARTITIONS ? drain_partition_names[partition] : NULL;
}

int32_t pdcbb_drain_partition_parse(const char *name)
{
    for (uint32_t i = 0; name != NULL && i < DRAIN_NPARTITIONS; i++)
        if (strcmp(drain_partition_names[i], name) == 0)
            return (int32_t)i;
    return -1;
}

/* A file name inside a drain directory: relative, no "..", no empty component. */
static bool drain_file_name_ok(const char *f)
{
    if (f[0] == '\0' || f[0] == '/')
        return false;
    for (const char *p = f; *p != '\0';) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.'))
            return false;
        p += n;
        if (*p == '/')
            p++;
        else
            break;
        if (*p == '\0')
            return false;
    }
    return true;
}

/* ---------------------------------------------------------------------------------------- */
/* Writing                                                                                    */
/* ---------------------------------------------------------------------------------------- */

typedef struct drain_buf {
    char *p;
    size_t len, cap;
} drain_buf_t;

static int drain_buf_write(void *data, unsigned char *buffer, size_t size)
{
    drain_buf_t *b = data;
    if (b->len + size > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + size)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, buffer, size);
    b->len += size;
    return 1;
}

static int mw_scalar(yaml_emitter_t *e, const char *s, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
                                      style))
        return 0;
    return yaml_emitter_emit(e, &ev);
}

static int mw_plain(yaml_emitter_t *e, const char *s)
{
    return mw_scalar(e, s, YAML_PLAIN_SCALAR_STYLE);
}

static int mw_str(yaml_emitter_t *e, const char *s)
{
    return mw_scalar(e, s != NULL ? s : "", YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

static int mw_u64(yaml_emitter_t *e, uint64_t v)
{
    char b[32];
    snprintf(b, sizeof(b), "%" PRIu64, v);
    return mw_plain(e, b);
}

static int mw_kv_u64(yaml_emitter_t *e, const char *k, uint64_t v)
{
    return mw_plain(e, k) && mw_u64(e, v);
}

static int mw_kv_str(yaml_emitter_t *e, const char *k, const char *v)
{
    return mw_plain(e, k) && mw_str(e, v);
}

static int mw_kv_plain(yaml_emitter_t *e, const char *k, const char *v)
{
    return mw_plain(e, k) && mw_plain(e, v);
}

static int mw_map_start(yaml_emitter_t *e, int flow)
{
    yaml_event_t ev;
    if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                             flow ? YAML_FLOW_MAPPING_STYLE
                                                  : YAML_BLOCK_MAPPING_STYLE))
        return 0;
    return yaml_emitter_emit(e, &ev);
}

static int mw_map_end(yaml_emitter_t *e)
{
    yaml_event_t ev;
    return yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
}

static int mw_seq_start(yaml_emitter_t *e, int flow)
{
    yaml_event_t ev;
    if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                              flow ? YAML_FLOW_SEQUENCE_STYLE
                                                   : YAML_BLOCK_SEQUENCE_STYLE))
        return 0;
    return yaml_emitter_emit(e, &ev);
}

static int mw_seq_end(yaml_emitter_t *e)
{
    yaml_event_t ev;
    return yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
}

static int mw_u64_list(yaml_emitter_t *e, const uint64_t *v, uint32_t n, int unlimited_first)
{
    if (!mw_seq_start(e, 1))
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        int ok = (i == 0 && unlimited_first && v[i] == PDCBB_DIM_UNLIMITED)
                     ? mw_plain(e, "unlimited")
                     : mw_u64(e, v[i]);
        if (!ok)
            return 0;
    }
    return mw_seq_end(e);
}

/* "tags: [...]"; *bad names a tag whose type has no name. */
static int mw_tags(yaml_emitter_t *e, const pdcbb_drain_tag_t *t, uint32_t n, const char **bad)
{
    if (!mw_plain(e, "tags") || !mw_seq_start(e, n == 0))
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *tn = pdcbb_drain_type_name(t[i].type);
        if (tn == NULL) {
            *bad = t[i].name;
            return 0;
        }
        char *hex = malloc(2 * (size_t)t[i].len + 1);
        if (hex == NULL)
            return 0;
        for (uint32_t k = 0; k < t[i].len; k++)
            snprintf(hex + 2 * k, 3, "%02x", t[i].value[k]);
        hex[2 * (size_t)t[i].len] = '\0';
        int ok = mw_map_start(e, 0) && mw_kv_str(e, "name", t[i].name) &&
                 mw_kv_plain(e, "type", tn) && mw_kv_str(e, "value", hex) && mw_map_end(e);
        free(hex);
        if (!ok)
            return 0;
    }
    return mw_seq_end(e);
}

/* Emit the whole manifest into b; 0 on failure (*what says about what, if known). */
static int mw_manifest(yaml_emitter_t *e, const pdcbb_drain_t *m, const char **what,
                       char *whatbuf, size_t whatlen)
{
    yaml_event_t ev;
    char num[64];
    const char *bad = NULL;

    if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) ||
        !yaml_emitter_emit(e, &ev))
        return 0;
    if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) ||
        !yaml_emitter_emit(e, &ev))
        return 0;
    if (!mw_map_start(e, 0) || !mw_kv_plain(e, "format", PDCBB_DRAIN_FORMAT) ||
        !mw_kv_u64(e, "version", PDCBB_DRAIN_VERSION))
        return 0;
    if (!mw_plain(e, "job") || !mw_map_start(e, 0) || !mw_kv_u64(e, "id", m->job_id) ||
        !mw_kv_str(e, "user", m->user) || !mw_kv_u64(e, "uid", m->uid) ||
        !mw_kv_u64(e, "nservers", m->nservers) ||
        !mw_kv_u64(e, "servers_per_node", m->servers_per_node) ||
        (m->instance && m->instance[0] && !mw_kv_str(e, "instance", m->instance)) ||
        !mw_map_end(e))
        return 0;

    if (!mw_plain(e, "ranks") || !mw_seq_start(e, m->nranks == 0))
        return 0;
    for (uint32_t i = 0; i < m->nranks; i++) {
        const pdcbb_drain_rank_t *r = &m->ranks[i];
        snprintf(num, sizeof(num), "%.3f", r->seconds);
        if (!mw_map_start(e, 0) || !mw_kv_u64(e, "rank", r->rank) ||
            !mw_kv_str(e, "node", r->node) || !mw_kv_str(e, "data_file", r->data_file) ||
            !mw_kv_u64(e, "data_bytes", r->data_bytes) || !mw_kv_plain(e, "seconds", num) ||
            !mw_map_end(e))
            return 0;
    }
    if (!mw_seq_end(e))
        return 0;

    if (!mw_plain(e, "containers") || !mw_seq_start(e, m->nconts == 0))
        return 0;
    for (uint32_t i = 0; i < m->nconts; i++) {
        const pdcbb_drain_cont_t *c = &m->conts[i];
        snprintf(whatbuf, whatlen, "container '%s'", c->name);
        *what = whatbuf;
        if (!mw_map_start(e, 0) || !mw_kv_u64(e, "id", c->id) || !mw_kv_str(e, "name", c->name) ||
            !mw_kv_plain(e, "lifetime", c->lifetime ? "transient" : "persistent") ||
            !mw_kv_u64(e, "rank", c->rank) || !mw_tags(e, c->tags, c->ntags, &bad) ||
            !mw_plain(e, "objects") || !mw_u64_list(e, c->obj_ids, c->nobj_ids, 0) ||
            !mw_map_end(e))
            goto fail;
    }
    if (!mw_seq_end(e))
        return 0;

    if (!mw_plain(e, "objects") || !mw_seq_start(e, m->nobjs == 0))
        return 0;
    for (uint32_t i = 0; i < m->nobjs; i++) {
        const pdcbb_drain_object_t *o = &m->objs[i];
        const char *tn = pdcbb_drain_type_name(o->type);
        const char *pn = pdcbb_drain_partition_name(o->partition);
        snprintf(whatbuf, whatlen, "object '%s'", o->name);
        *what = whatbuf;
        if (tn == NULL || pn == NULL) {
            snprintf(whatbuf, whatlen, "object '%s': unknown %s %d", o->name,
                     tn == NULL ? "type" : "partition",
                     tn == NULL ? (int)o->type : (int)o->partition);
            return 0;
        }
        if (!mw_map_start(e, 0) || !mw_kv_u64(e, "id", o->id) || !mw_kv_str(e, "name", o->name) ||
            !mw_kv_str(e, "container", o->container) ||
            !mw_kv_u64(e, "container_id", o->cont_id) || !mw_kv_u64(e, "rank", o->rank) ||
            !mw_kv_plain(e, "type", tn) || !mw_kv_u64(e, "element_size", o->element_size) ||
            !mw_plain(e, "dims") || !mw_u64_list(e, o->dims, o->ndim, 1) ||
            !mw_kv_plain(e, "partition", pn) || !mw_kv_u64(e, "consistency", o->consistency) ||
            !mw_kv_u64(e, "user_id", o->user_id) || !mw_kv_u64(e, "time_step", o->time_step) ||
            !mw_kv_str(e, "app_name", o->app_name) || !mw_kv_str(e, "data_loc", o->data_loc) ||
            !mw_kv_str(e, "tags_string", o->tags_str) || !mw_tags(e, o->tags, o->ntags, &bad))
            goto fail;
        if (o->ndim > 0 && o->dims[0] == PDCBB_DIM_UNLIMITED && o->has_current_dims) {
            uint64_t cur[PDCBB_REGION_NDIM_MAX];
            memcpy(cur, o->dims, sizeof(cur));
            cur[0] = o->current_rows;
            if (!mw_plain(e, "current_dims") || !mw_u64_list(e, cur, o->ndim, 0))
                return 0;
        }
        if (!mw_plain(e, "placement_map") || !mw_seq_start(e, o->nmap == 0))
            return 0;
        for (uint32_t k = 0; k < o->nmap; k++) {
            const pdcbb_drain_map_entry_t *p = &o->map[k];
            if (!mw_map_start(e, 1) || !mw_kv_u64(e, "seq", p->seq) ||
                !mw_kv_u64(e, "rank", p->rank) || !mw_plain(e, "offset") ||
                !mw_u64_list(e, p->box.off, p->box.ndim, 0) || !mw_plain(e, "size") ||
                !mw_u64_list(e, p->box.size, p->box.ndim, 0) || !mw_map_end(e))
                return 0;
        }
        if (!mw_seq_end(e) || !mw_map_end(e))
            return 0;
    }
    if (!mw_seq_end(e))
        return 0;
    *what = NULL;

    if (!mw_plain(e, "extents") || !mw_seq_start(e, m->nextents == 0))
        return 0;
    for (uint64_t i = 0; i < m->nextents; i++) {
        const pdcbb_drain_extent_t *x = &m->extents[i];
        snprintf(num, sizeof(num), "0x%08" PRIx32, x->crc32c);
        if (!mw_map_start(e, 1) || !mw_kv_u64(e, "object", x->object_id) ||
            !mw_kv_u64(e, "rank", x->rank) || !mw_kv_u64(e, "object_offset", x->object_offset) ||
            !mw_kv_u64(e, "length", x->length) || !mw_kv_str(e, "file", x->file) ||
            !mw_kv_u64(e, "file_offset", x->file_offset) || !mw_kv_plain(e, "crc32c", num) ||
            !mw_map_end(e))
            return 0;
    }
    if (!mw_seq_end(e))
        return 0;

    /* KV objects and their dumps: only when there are any (older readers know neither key) */
    if (m->nkvs > 0 || m->nkvdumps > 0) {
        if (!mw_plain(e, "kv_objects") || !mw_seq_start(e, m->nkvs == 0))
            return 0;
        for (uint32_t i = 0; i < m->nkvs; i++) {
            const pdcbb_drain_kv_t *k = &m->kvs[i];
            const char *kt = pdcbb_kvd_key_type_name(k->key_type);
            const char *sh = pdcbb_kvd_shard_name(k->sharding);
            if (kt == NULL || sh == NULL) {
                snprintf(whatbuf, whatlen, "KV object '%s': unknown %s", k->name,
                         kt == NULL ? "key type" : "sharding");
                *what = whatbuf;
                return 0;
            }
            if (!mw_map_start(e, 0) || !mw_kv_u64(e, "id", k->id) ||
                !mw_kv_str(e, "name", k->name) ||
                !mw_kv_str(e, "container", k->container) ||
                !mw_kv_u64(e, "container_id", k->cont_id) || !mw_kv_u64(e, "rank", k->rank) ||
                !mw_kv_plain(e, "key_type", kt) || !mw_kv_plain(e, "sharding", sh) ||
                !mw_kv_u64(e, "nshards", k->nshards) ||
                !mw_kv_u64(e, "max_key_len", k->max_key_len) ||
                !mw_kv_u64(e, "max_value_len", k->max_value_len) ||
                (k->ncommitted > 0 && (!mw_plain(e, "committed_tags") ||
                                       !mw_u64_list(e, k->committed, k->ncommitted, 0))) ||
                !mw_map_end(e))
                return 0;
        }
        if (!mw_seq_end(e))
            return 0;
        if (!mw_plain(e, "kv_dumps") || !mw_seq_start(e, m->nkvdumps == 0))
            return 0;
        for (uint32_t i = 0; i < m->nkvdumps; i++) {
            const pdcbb_drain_kvdump_t *d = &m->kvdumps[i];
            snprintf(num, sizeof(num), "0x%08" PRIx32, d->crc32c);
            if (!mw_map_start(e, 1) || !mw_kv_u64(e, "kv", d->kv) ||
                !mw_kv_u64(e, "rank", d->rank) ||
                !mw_kv_str(e, "file", d->file) || !mw_kv_u64(e, "records", d->records) ||
                !mw_kv_u64(e, "bytes", d->bytes) || !mw_kv_plain(e, "crc32c", num) ||
                !mw_map_end(e))
                return 0;
        }
        if (!mw_seq_end(e))
            return 0;
    }
    if (!mw_map_end(e))
        return 0;
    if (!yaml_document_end_event_initialize(&ev, 1) || !yaml_emitter_emit(e, &ev))
        return 0;
    if (!yaml_stream_end_event_initialize(&ev) || !yaml_emitter_emit(e, &ev))
        return 0;
    return yaml_emitter_flush(e);
fail:
    if (bad != NULL) {
        char tmp[256];
        snprintf(tmp, sizeof(tmp), "%s", whatbuf);
        snprintf(whatbuf, whatlen, "%s: tag '%s' has an unknown type", tmp, bad);
    }
    return 0;
}

static pdcbb_err_t drain_fsync_dir_of(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return pdcbb_err_from_errno(errno);
    int r = fsync(fd);
    int e = errno;
    close(fd);
    /* some filesystems refuse fsync on a directory: that is not a failure of ours */
    return (r == 0 || e == EINVAL || e == EROFS) ? PDCBB_OK : pdcbb_err_from_errno(e);
}

/* Write len bytes to path via path.tmp.HOST.PID: fsync, rename, fsync the directory. */
static pdcbb_err_t drain_write_atomic(const char *path, const void *data, size_t len, char *err,
                                      size_t errlen)
{
    char tmp[PATH_MAX], host[256] = "";
    pdcbb_err_t rc;
    int fd;

    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "host");
    host[strcspn(host, "/")] = '\0';
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%s.%ld", path, host, (long)getpid()) >=
        (int)sizeof(tmp)) {
        drain_errf(err, errlen, "%s: path too long", path);
        return PDCBB_ERR_INVAL;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        drain_errf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            drain_errf(err, errlen, "%s: cannot write: %s", tmp, strerror(e));
            rc = pdcbb_err_from_errno(e);
            goto fail;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0) {
        drain_errf(err, errlen, "%s: fsync: %s", tmp, strerror(errno));
        rc = pdcbb_err_from_errno(errno);
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        drain_errf(err, errlen, "%s: close: %s", tmp, strerror(errno));
        rc = pdcbb_err_from_errno(errno);
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        drain_errf(err, errlen, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
        rc = pdcbb_err_from_errno(errno);
        goto fail;
    }
    if ((rc = drain_fsync_dir_of(path)) != PDCBB_OK) {
        drain_errf(err, errlen, "%s: fsync of its directory: %s", path, pdcbb_strerror(rc));
        return rc;
    }
    return PDCBB_OK;
fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return rc;
}

pdcbb_err_t pdcbb_drain_write_manifest(const pdcbb_drain_t *m, const char *path, char *err,
                                       size_t errlen)
{
    yaml_emitter_t e;
    drain_buf_t b = {0};
    const char *what = NULL;
    char whatbuf[512] = "";
    pdcbb_err_t rc;

    if (m == NULL || path == NULL) {
        drain_errf(err, errlen, "pdcbb_drain_write_manifest: no model or no path");
        return PDCBB_ERR_INVAL;
    }
    if (!yaml_emitter_initialize(&e)) {
        drain_errf(err, errlen, "%s: out of memory", path);
        return PDCBB_ERR_NOMEM;
    }
    yaml_emitter_set_output(&e, drain_buf_write, &b);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_width(&e, -1); /* one extent per line */
    yaml_emitter_set_indent(&e, 2);
    if (!mw_manifest(&e, m, &what, whatbuf, sizeof(whatbuf))) {
        if (e.error == YAML_MEMORY_ERROR || (e.error == YAML_WRITER_ERROR)) {
            drain_errf(err, errlen, "%s: out of memory", path);
            rc = PDCBB_ERR_NOMEM;
        } else {
            drain_errf(err, errlen, "%s: cannot write %s: %s", path,
                       what != NULL ? what : (whatbuf[0] ? whatbuf : "the manifest"),
                       e.problem != NULL ? e.problem : "bad value");
            rc = PDCBB_ERR_INVAL;
        }
        goto done;
    }
    rc = drain_write_atomic(path, b.p, b.len, err, errlen);
done:
    yaml_emitter_delete(&e);
    free(b.p);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Loading                                                                                    */
/* ---------------------------------------------------------------------------------------- */

enum { MF_SCALAR, MF_SEQ, MF_MAP };

/* A YAML value assembled from parser events. A map's kids alternate key, value. */
typedef struct mf_node {
    int kind;
    int plain;       /* scalar written without quotes */
    size_t line;     /* 1-based */
    char *text;      /* scalar */
    size_t len;
    struct mf_node **kids;
    size_t nkids, cap;
} mf_node_t;

typedef struct mf_ctx {
    yaml_parser_t parser;
    const char *path;
    char *err;
    size_t errlen;
    pdcbb_drain_t *m;
    uint32_t *ext_lines; /* YAML line of each extent, for later checks */
    uint64_t cap_lines;
} mf_ctx_t;

static void mf_free(mf_node_t *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->nkids; i++)
        mf_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

static pdcbb_err_t mf_syntax(mf_ctx_t *c)
{
    yaml_parser_t *p = &c->parser;
    if (p->error == YAML_MEMORY_ERROR) {
        drain_errf(c->err, c->errlen, "%s: out of memory while reading YAML", c->path);
        return PDCBB_ERR_NOMEM;
    }
    drain_errf(c->err, c->errlen, "%s:%zu: YAML syntax error: %s", c->path,
               (size_t)p->problem_mark.line + 1, p->problem ? p->problem : "unknown problem");
    return PDCBB_ERR_CONFIG;
}

static pdcbb_err_t mf_next(mf_ctx_t *c, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&c->parser, ev))
        return mf_syntax(c);
    return PDCBB_OK;
}

/* Build the value starting with event ev (consumed). */
static pdcbb_err_t mf_build(mf_ctx_t *c, yaml_event_t *ev, int depth, mf_node_t **out)
{
    pdcbb_err_t rc = PDCBB_OK;
    mf_node_t *n = calloc(1, sizeof(*n));
    yaml_event_t sub;

    if (n == NULL) {
        yaml_event_delete(ev);
        drain_errf(c->err, c->errlen, "%s: out of memory", c->path);
        return PDCBB_ERR_NOMEM;
    }
    n->line = ev->start_mark.line + 1;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        n->kind = MF_SCALAR;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n->len = ev->data.scalar.length;
        n->text = malloc(n->len + 1);
        if (n->text == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        memcpy(n->text, ev->data.scalar.value, n->len);
        n->text[n->len] = '\0';
        break;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        int map = ev->type == YAML_MAPPING_START_EVENT;
        yaml_event_type_t end = map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
        n->kind = map ? MF_MAP : MF_SEQ;
        if (depth >= DRAIN_YAML_DEPTH_MAX) {
            drain_errf(c->err, c->errlen, "%s:%zu: values nested too deeply", c->path, n->line);
            rc = PDCBB_ERR_CONFIG;
            break;
        }
        for (;;) {
            if ((rc = mf_next(c, &sub)) != PDCBB_OK)
                break;
            if (sub.type == end) {
                yaml_event_delete(&sub);
                break;
            }
            if (n->nkids == n->cap) {
                size_t cap = n->cap ? 2 * n->cap : 8;
                mf_node_t **k = realloc(n->kids, cap * sizeof(*k));
                if (k == NULL) {
                    yaml_event_delete(&sub);
                    rc = PDCBB_ERR_NOMEM;
                    break;
                }
                n->kids = k;
                n->cap = cap;
            }
            if ((rc = mf_build(c, &sub, depth + 1, &n->kids[n->nkids])) != PDCBB_OK)
                break;
            n->nkids++;
        }
        break;
    }
    case YAML_ALIAS_EVENT:
        drain_errf(c->err, c->errlen, "%s:%zu: YAML aliases are not allowed in a manifest",
                   c->path, n->line);
        rc = PDCBB_ERR_CONFIG;
        break;
    default:
        drain_errf(c->err, c->errlen, "%s:%zu: unexpected YAML event", c->path, n->line);
        rc = PDCBB_ERR_CONFIG;
        break;
    }
    yaml_event_delete(ev);
    if (rc == PDCBB_ERR_NOMEM && c->err != NULL && c->err[0] == '\0')
        drain_errf(c->err, c->errlen, "%s: out of memory", c->path);
    if (rc != PDCBB_OK) {
        mf_free(n);
        return rc;
    }
    *out = n;
    return PDCBB_OK;
}

static const char *mf_kind(const mf_node_t *n)
{
    return n->kind == MF_SCALAR ? "a single value" : n->kind == MF_SEQ ? "a list" : "a mapping";
}

/*
 * Fetch the values of a mapping's keys: keys is NULL-terminated; vals[i] gets key i's value
 * (NULL if absent). Unknown, duplicate and missing required keys (bit i of required) are
 * errors naming what ("objects[3]"), the line and the key.
 */
static pdcbb_err_t mf_fields(mf_ctx_t *c, const mf_node_t *map, const char *what,
                             const char *const *keys, uint32_t required, mf_node_t **vals)
{
    size_t nkeys = 0;
    while (keys[nkeys] != NULL)
        nkeys++;
    if (map->kind != MF_MAP) {
        drain_errf(c->err, c->errlen, "%s:%zu: %s: expected a mapping, found %s", c->path,
                   map->line, what, mf_kind(map));
        return PDCBB_ERR_CONFIG;
    }
    for (size_t i = 0; i < nkeys; i++)
        vals[i] = NULL;
    for (size_t i = 0; i + 1 < map->nkids; i += 2) {
        const mf_node_t *k = map->kids[i];
        size_t j;
        if (k->kind != MF_SCALAR) {
            drain_errf(c->err, c->errlen, "%s:%zu: %s: a key must be a name, found %s",
                       c->path, k->line, what, mf_kind(k));
            return PDCBB_ERR_CONFIG;
        }
        for (j = 0; j < nkeys; j++)
            if (strcmp(keys[j], k->text) == 0)
                break;
        if (j == nkeys) {
            drain_errf(c->err, c->errlen, "%s:%zu: %s: unknown key '%s'", c->path, k->line,
                       what, k->text);
            return PDCBB_ERR_CONFIG;
        }
        if (vals[j] != NULL) {
            drain_errf(c->err, c->errlen, "%s:%zu: %s: duplicate key '%s' (first on line %zu)",
                       c->path, k->line, what, k->text, vals[j]->line);
            return PDCBB_ERR_CONFIG;
        }
        vals[j] = map->kids[i + 1];
    }
    for (size_t j = 0; j < nkeys; j++) {
        if (vals[j] == NULL && (required & (1u << j))) {
            drain_errf(c->err, c->errlen, "%s:%zu: %s: missing key '%s'", c->path, map->line,
                       what, keys[j]);
            return PDCBB_ERR_CONFIG;
        }
    }
    return PDCBB_OK;
}

static pdcbb_err_t mf_bad(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                          const char *why)
{
    drain_errf(c->err, c->errlen, "%s:%zu: %s: key '%s': %s", c->path, v->line, what, key, why);
    return PDCBB_ERR_CONFIG;
}

static pdcbb_err_t mf_u64(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                          uint64_t min, uint64_t max, uint64_t *out)
{
    char why[128];
    if (v->kind != MF_SCALAR || !v->plain || v->text[0] < '0' || v->text[0] > '9')
        goto bad;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v->text, &end, 10);
    if (errno != 0 || *end != '\0' || (uint64_t)x < min || (uint64_t)x > max ||
        (v->text[0] == '0' && v->text[1] != '\0'))
        goto bad;
    *out = x;
    return PDCBB_OK;
bad:
    snprintf(why, sizeof(why), "expected an integer from %" PRIu64 " to %" PRIu64 ", found '%s'",
             min, max, v->kind == MF_SCALAR ? v->text : mf_kind(v));
    return mf_bad(c, v, what, key, why);
}

static pdcbb_err_t mf_u32(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                          uint32_t max, uint32_t *out)
{
    uint64_t x;
    pdcbb_err_t rc = mf_u64(c, v, what, key, 0, max, &x);
    if (rc == PDCBB_OK)
        *out = (uint32_t)x;
    return rc;
}

/* A string value: any scalar without a NUL byte; *out is malloc'ed. */
static pdcbb_err_t mf_str(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                          char **out)
{
    if (v->kind != MF_SCALAR)
        return mf_bad(c, v, what, key, "expected a string");
    if (strlen(v->text) != v->len)
        return mf_bad(c, v, what, key, "the string contains a NUL character");
    char *s = strdup(v->text);
    if (s == NULL) {
        drain_errf(c->err, c->errlen, "%s: out of memory", c->path);
        return PDCBB_ERR_NOMEM;
    }
    free(*out);
    *out = s;
    return PDCBB_OK;
}

static pdcbb_err_t mf_file_name(mf_ctx_t *c, const mf_node_t *v, const char *what,
                                const char *key)
{
    if (v->kind != MF_SCALAR || strlen(v->text) != v->len || !drain_file_name_ok(v->text))
        return mf_bad(c, v, what, key,
                      "expected a file name relative to the drain directory, without '..'");
    return PDCBB_OK;
}

/* A list of min_n..16 integers; "unlimited" allowed as the first when unlimited_first. */
static pdcbb_err_t mf_u64_list(mf_ctx_t *c, const mf_node_t *v, const char *what,
                               const char *key, int unlimited_first, uint64_t min,
                               size_t min_n, uint64_t *out, uint32_t *n)
{
    if (v->kind != MF_SEQ || v->nkids < min_n || v->nkids > PDCBB_REGION_NDIM_MAX)
        return mf_bad(c, v, what, key,
                      min_n ? "expected a list of 1 to 16 integers"
                            : "expected a list of at most 16 integers");
    for (size_t i = 0; i < v->nkids; i++) {
        const mf_node_t *x = v->kids[i];
        if (i == 0 && unlimited_first && x->kind == MF_SCALAR && strcmp(x->text, "unlimited") == 0) {
            out[i] = PDCBB_DIM_UNLIMITED;
            continue;
        }
        pdcbb_err_t rc = mf_u64(c, x, what, key, min, UINT64_MAX - 1, &out[i]);
        if (rc != PDCBB_OK)
            return rc;
    }
    *n = (uint32_t)v->nkids;
    return PDCBB_OK;
}

static int mf_hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static pdcbb_err_t mf_tags(mf_ctx_t *c, const mf_node_t *v, const char *owner,
                           pdcbb_drain_tag_t **out, uint32_t *nout)
{
    static const char *const keys[] = {"name", "type", "value", NULL};
    char what[300];
    pdcbb_err_t rc = PDCBB_OK;

    if (v->kind != MF_SEQ)
        return mf_bad(c, v, owner, "tags", "expected a list");
    if (v->nkids == 0)
        return PDCBB_OK;
    pdcbb_drain_tag_t *t = calloc(v->nkids, sizeof(*t));
    if (t == NULL)
        return PDCBB_ERR_NOMEM;
    uint32_t n = 0;
    for (size_t i = 0; i < v->nkids; i++) {
        mf_node_t *f[3];
        snprintf(what, sizeof(what), "%s: tags[%zu]", owner, i);
        if ((rc = mf_fields(c, v->kids[i], what, keys, 0x7, f)) != PDCBB_OK)
            goto fail;
        n++;
        if ((rc = mf_str(c, f[0], what, "name", &t[i].name)) != PDCBB_OK)
            goto fail;
        if (f[1]->kind != MF_SCALAR || (t[i].type = pdcbb_drain_type_parse(f[1]->text)) < 0) {
            rc = mf_bad(c, f[1], what, "type", "expected a pdc_var_type_t name (PDC_INT ...)");
            goto fail;
        }
        const mf_node_t *hv = f[2];
        if (hv->kind != MF_SCALAR || hv->len % 2 != 0 || hv->len / 2 > DRAIN_TAG_VALUE_MAX) {
            rc = mf_bad(c, hv, what, "value", "expected an even number of hex digits");
            goto fail;
        }
        t[i].len = (uint32_t)(hv->len / 2);
        t[i].value = malloc(t[i].len ? t[i].len : 1);
        if (t[i].value == NULL) {
            rc = PDCBB_ERR_NOMEM;
            goto fail;
        }
        for (uint32_t k = 0; k < t[i].len; k++) {
            int hi = mf_hexval(hv->text[2 * k]), lo = mf_hexval(hv->text[2 * k + 1]);
            if (hi < 0 || lo < 0) {
                rc = mf_bad(c, hv, what, "value", "expected an even number of hex digits");
                goto fail;
            }
            t[i].value[k] = (uint8_t)(hi << 4 | lo);
        }
    }
    *out = t;
    *nout = n;
    return PDCBB_OK;
fail:
    drain_tags_free(t, (uint32_t)v->nkids);
    return rc;
}

static pdcbb_err_t mf_job(mf_ctx_t *c, const mf_node_t *v)
{
    static const char *const keys[] = {"id", "user", "uid", "nservers", "servers_per_node",
                                       "instance", NULL};
    mf_node_t *f[6];
    pdcbb_drain_t *m = c->m;
    pdcbb_err_t rc;

    if ((rc = mf_fields(c, v, "job", keys, 0x1f, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], "job", "id", 0, UINT64_MAX, &m->job_id)) != PDCBB_OK ||
        (rc = mf_str(c, f[1], "job", "user", &m->user)) != PDCBB_OK ||
        (rc = mf_u32(c, f[2], "job", "uid", UINT32_MAX, &m->uid)) != PDCBB_OK)
        return rc;
    uint64_t x;
    if ((rc = mf_u64(c, f[3], "job", "nservers", 1, DRAIN_NSERVERS_MAX, &x)) != PDCBB_OK)
        return rc;
    m->nservers = (uint32_t)x;
    if ((rc = mf_u64(c, f[4], "job", "servers_per_node", 1, m->nservers, &x)) != PDCBB_OK)
        return rc;
    m->servers_per_node = (uint32_t)x;
    if (f[5] != NULL) { /* optional: drains by launchers that gave no instance id lack it */
        if ((rc = mf_str(c, f[5], "job", "instance", &m->instance)) != PDCBB_OK)
            return rc;
        for (const char *p = m->instance; *p; p++)
            if (!isxdigit((unsigned char)*p) || p - m->instance >= 64)
                return mf_bad(c, f[5], "job", "instance", "hex digits");
    }
    return PDCBB_OK;
}

static pdcbb_err_t mf_rank_of(mf_ctx_t *c, const mf_node_t *v, const char *what, uint32_t *out)
{
    if (c->m->nservers == 0)
        return mf_bad(c, v, what, "rank", "the job section must come first");
    return mf_u32(c, v, what, "rank", c->m->nservers - 1, out);
}

static pdcbb_err_t mf_rank_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"rank", "node", "data_file", "data_bytes", "seconds",
                                       NULL};
    mf_node_t *f[5];
    char what[64];
    pdcbb_drain_rank_t r = {0};
    pdcbb_err_t rc;

    snprintf(what, sizeof(what), "ranks[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x1f, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_rank_of(c, f[0], what, &r.rank)) != PDCBB_OK ||
        (rc = mf_str(c, f[1], what, "node", &r.node)) != PDCBB_OK ||
        (rc = mf_file_name(c, f[2], what, "data_file")) != PDCBB_OK ||
        (rc = mf_str(c, f[2], what, "data_file", &r.data_file)) != PDCBB_OK ||
        (rc = mf_u64(c, f[3], what, "data_bytes", 0, INT64_MAX, &r.data_bytes)) != PDCBB_OK)
        goto done;
    char *end;
    errno = 0;
    r.seconds = f[4]->kind == MF_SCALAR ? strtod(f[4]->text, &end) : -1;
    if (f[4]->kind != MF_SCALAR || errno != 0 || *end != '\0' || f[4]->text[0] == '\0' ||
        !(r.seconds >= 0 && r.seconds < 1e12)) {
        rc = mf_bad(c, f[4], what, "seconds", "expected a number of seconds");
        goto done;
    }
    for (uint32_t i = 0; i < c->m->nranks; i++) {
        if (c->m->ranks[i].rank == r.rank) {
            rc = mf_bad(c, f[0], what, "rank", "this rank is listed twice");
            goto done;
        }
    }
    rc = pdcbb_drain_add_rank(c->m, &r);
done:
    free(r.node);
    free(r.data_file);
    return rc;
}

static pdcbb_err_t mf_cont_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"id", "name", "lifetime", "rank", "tags", "objects",
                                       NULL};
    mf_node_t *f[6];
    char what[300];
    pdcbb_drain_cont_t x = {0};
    pdcbb_err_t rc;

    snprintf(what, sizeof(what), "containers[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x3f, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], what, "id", 1, UINT64_MAX, &x.id)) != PDCBB_OK ||
        (rc = mf_str(c, f[1], what, "name", &x.name)) != PDCBB_OK)
        goto done;
    snprintf(what, sizeof(what), "container '%s'", x.name);
    if (f[2]->kind == MF_SCALAR && strcmp(f[2]->text, "persistent") == 0) {
        x.lifetime = 0;
    } else if (f[2]->kind == MF_SCALAR && strcmp(f[2]->text, "transient") == 0) {
        x.lifetime = 1;
    } else {
        rc = mf_bad(c, f[2], what, "lifetime", "expected persistent or transient");
        goto done;
    }
    if ((rc = mf_rank_of(c, f[3], what, &x.rank)) != PDCBB_OK ||
        (rc = mf_tags(c, f[4], what, &x.tags, &x.ntags)) != PDCBB_OK)
        goto done;
    if (f[5]->kind != MF_SEQ) {
        rc = mf_bad(c, f[5], what, "objects", "expected a list of object ids");
        goto done;
    }
    if (f[5]->nkids > 0) {
        x.obj_ids = calloc(f[5]->nkids, sizeof(uint64_t));
        if (x.obj_ids == NULL) {
            rc = PDCBB_ERR_NOMEM;
            goto done;
        }
        for (size_t i = 0; i < f[5]->nkids; i++)
            if ((rc = mf_u64(c, f[5]->kids[i], what, "objects", 1, UINT64_MAX, &x.obj_ids[i])) !=
                PDCBB_OK)
                goto done;
        x.nobj_ids = (uint32_t)f[5]->nkids;
    }
    rc = pdcbb_drain_add_cont(c->m, &x, NULL);
done:
    drain_cont_clear(&x);
    return rc;
}

static pdcbb_err_t mf_object_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"id",          "name",          "container",
                                       "container_id", "rank",         "type",
                                       "element_size", "dims",         "partition",
                                       "consistency",  "user_id",      "time_step",
                                       "app_name",     "data_loc",     "tags_string",
                                       "tags",         "placement_map", "current_dims",
                                       NULL};
    mf_node_t *f[18];
    char what[300];
    pdcbb_drain_object_t o;
    pdcbb_err_t rc;
    uint64_t tmp[PDCBB_REGION_NDIM_MAX];

    memset(&o, 0, sizeof(o));
    snprintf(what, sizeof(what), "objects[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x1ffff, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], what, "id", 1, UINT64_MAX, &o.id)) != PDCBB_OK ||
        (rc = mf_str(c, f[1], what, "name", &o.name)) != PDCBB_OK)
        goto done;
    snprintf(what, sizeof(what), "object '%s'", o.name);
    if ((rc = mf_str(c, f[2], what, "container", &o.container)) != PDCBB_OK ||
        (rc = mf_u64(c, f[3], what, "container_id", 0, UINT64_MAX, &o.cont_id)) != PDCBB_OK ||
        (rc = mf_rank_of(c, f[4], what, &o.rank)) != PDCBB_OK)
        goto done;
    if (f[5]->kind != MF_SCALAR || (o.type = pdcbb_drain_type_parse(f[5]->text)) < 0) {
        rc = mf_bad(c, f[5], what, "type", "expected a pdc_var_type_t name (PDC_INT ...)");
        goto done;
    }
    if ((rc = mf_u32(c, f[6], what, "element_size", UINT32_MAX, &o.element_size)) != PDCBB_OK)
        goto done;
    if (o.element_size == 0) {
        rc = mf_bad(c, f[6], what, "element_size", "must be at least 1");
        goto done;
    }
    /* An object without dimensions (PDC allows one: metadata and tags only) has no data. */
    if ((rc = mf_u64_list(c, f[7], what, "dims", 1, 1, 0, o.dims, &o.ndim)) != PDCBB_OK)
        goto done;
    if (o.ndim > 0 &&
        (pdcbb_layout_strides(o.ndim, o.dims, o.element_size, tmp) != PDCBB_OK ||
         (o.dims[0] != PDCBB_DIM_UNLIMITED &&
          pdcbb_drain_object_shape(c->m, &o, tmp) != PDCBB_OK))) {
        rc = mf_bad(c, f[7], what, "dims", "the object's size overflows");
        goto done;
    }
    if (f[17] != NULL) { /* optional: the extent of an object with an unlimited first dim */
        uint64_t cur[PDCBB_REGION_NDIM_MAX];
        uint32_t ncur = 0;
        if ((rc = mf_u64_list(c, f[17], what, "current_dims", 0, 0, 1, cur, &ncur)) != PDCBB_OK)
            goto done;
        if (o.ndim == 0 || o.dims[0] != PDCBB_DIM_UNLIMITED) {
            rc = mf_bad(c, f[17], what, "current_dims",
                        "only an object whose first dimension is unlimited has one");
            goto done;
        }
        if (ncur != o.ndim || memcmp(cur + 1, o.dims + 1, 8 * (size_t)(ncur - 1)) != 0) {
            rc = mf_bad(c, f[17], what, "current_dims",
                        "expected the rows, then the object's other dims as created");
            goto done;
        }
        o.has_current_dims = 1;
        o.current_rows = cur[0];
    }
    int32_t part = f[8]->kind == MF_SCALAR ? pdcbb_drain_partition_parse(f[8]->text) : -1;
    if (part < 0) {
        rc = mf_bad(c, f[8], what, "partition",
                    "expected PDC_OBJ_STATIC, PDC_REGION_STATIC, PDC_REGION_DYNAMIC or "
                    "PDC_REGION_LOCAL");
        goto done;
    }
    o.partition = (uint32_t)part;
    if ((rc = mf_u32(c, f[9], what, "consistency", 4, &o.consistency)) != PDCBB_OK ||
        (rc = mf_u32(c, f[10], what, "user_id", UINT32_MAX, &o.user_id)) != PDCBB_OK ||
        (rc = mf_u32(c, f[11], what, "time_step", UINT32_MAX, &o.time_step)) != PDCBB_OK ||
        (rc = mf_str(c, f[12], what, "app_name", &o.app_name)) != PDCBB_OK ||
        (rc = mf_str(c, f[13], what, "data_loc", &o.data_loc)) != PDCBB_OK ||
        (rc = mf_str(c, f[14], what, "tags_string", &o.tags_str)) != PDCBB_OK ||
        (rc = mf_tags(c, f[15], what, &o.tags, &o.ntags)) != PDCBB_OK)
        goto done;
    const mf_node_t *pm = f[16];
    if (pm->kind != MF_SEQ) {
        rc = mf_bad(c, pm, what, "placement_map", "expected a list");
        goto done;
    }
    if (pm->nkids > 0 && o.partition != 2 && o.partition != 3) {
        rc = mf_bad(c, pm, what, "placement_map",
                    "only PDC_REGION_DYNAMIC and PDC_REGION_LOCAL objects have one");
        goto done;
    }
    if (pm->nkids > 0) {
        static const char *const mkeys[] = {"seq", "rank", "offset", "size", NULL};
        o.map = calloc(pm->nkids, sizeof(*o.map));
        if (o.map == NULL) {
            rc = PDCBB_ERR_NOMEM;
            goto done;
        }
        for (size_t i = 0; i < pm->nkids; i++) {
            mf_node_t *g[4];
            char mwhat[340];
            uint64_t off[PDCBB_REGION_NDIM_MAX], size[PDCBB_REGION_NDIM_MAX];
            uint32_t noff = 0, nsize = 0;
            pdcbb_drain_map_entry_t *e = &o.map[i];
            snprintf(mwhat, sizeof(mwhat), "%s: placement_map[%zu]", what, i);
            if ((rc = mf_fields(c, pm->kids[i], mwhat, mkeys, 0xf, g)) != PDCBB_OK ||
                (rc = mf_u64(c, g[0], mwhat, "seq", 0, UINT64_MAX, &e->seq)) != PDCBB_OK ||
                (rc = mf_rank_of(c, g[1], mwhat, &e->rank)) != PDCBB_OK ||
                (rc = mf_u64_list(c, g[2], mwhat, "offset", 0, 0, 1, off, &noff)) != PDCBB_OK ||
                (rc = mf_u64_list(c, g[3], mwhat, "size", 0, 1, 1, size, &nsize)) != PDCBB_OK)
                goto done;
            if (noff != o.ndim || nsize != o.ndim) {
                rc = mf_bad(c, pm->kids[i], mwhat, noff != o.ndim ? "offset" : "size",
                            "expected one number per dimension of the object");
                goto done;
            }
            if (pdcbb_box_make(&e->box, o.ndim, off, size) != PDCBB_OK ||
                pdcbb_box_check_within(&e->box, o.ndim, o.dims) != PDCBB_OK) {
                rc = mf_bad(c, pm->kids[i], mwhat, "size", "the box lies outside the object");
                goto done;
            }
            o.nmap++;
        }
    }
    rc = pdcbb_drain_add_object(c->m, &o, NULL);
done:
    drain_object_clear(&o);
    return rc;
}

/* crc32c: 0x followed by 1 to 8 hex digits */
static pdcbb_err_t mf_crc(mf_ctx_t *c, const mf_node_t *cv, const char *what, uint32_t *out)
{
    uint32_t crc = 0;
    bool ok = cv->kind == MF_SCALAR && cv->len >= 3 && cv->len <= 10 && cv->text[0] == '0' &&
              (cv->text[1] == 'x' || cv->text[1] == 'X');
    for (size_t i = 2; ok && i < cv->len; i++) {
        int h = mf_hexval(cv->text[i]);
        ok = h >= 0;
        crc = crc << 4 | (uint32_t)(h < 0 ? 0 : h);
    }
    if (!ok)
        return mf_bad(c, cv, what, "crc32c", "expected 0x and up to 8 hex digits (0x8a9136aa)");
    *out = crc;
    return PDCBB_OK;
}

static pdcbb_err_t mf_kv_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"id",       "name",     "container",   "container_id",
                                       "rank",     "key_type", "sharding",    "nshards",
                                       "max_key_len", "max_value_len", "committed_tags",
                                       NULL};
    mf_node_t *f[11];
    char what[300];
    pdcbb_drain_kv_t x = {0};
    pdcbb_err_t rc;
    int t;

    snprintf(what, sizeof(what), "kv_objects[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x3ff, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], what, "id", 1, UINT64_MAX, &x.id)) != PDCBB_OK ||
        (rc = mf_str(c, f[1], what, "name", &x.name)) != PDCBB_OK ||
        (rc = mf_str(c, f[2], what, "container", &x.container)) != PDCBB_OK)
        goto done;
    snprintf(what, sizeof(what), "KV object '%s'", x.name);
    if ((rc = mf_u64(c, f[3], what, "container_id", 0, UINT64_MAX, &x.cont_id)) != PDCBB_OK ||
        (rc = mf_rank_of(c, f[4], what, &x.rank)) != PDCBB_OK)
        goto done;
    if (f[5]->kind != MF_SCALAR || (t = pdcbb_kvd_key_type_parse(f[5]->text)) < 0) {
        rc = mf_bad(c, f[5], what, "key_type", "expected STRING, INT or FLOAT");
        goto done;
    }
    x.key_type = (uint32_t)t;
    if (f[6]->kind != MF_SCALAR || (t = pdcbb_kvd_shard_parse(f[6]->text)) < 0) {
        rc = mf_bad(c, f[6], what, "sharding", "expected DEFAULT, HASH or RANGE");
        goto done;
    }
    x.sharding = (uint32_t)t;
    if ((rc = mf_u32(c, f[7], what, "nshards", DRAIN_NSERVERS_MAX, &x.nshards)) != PDCBB_OK ||
        (rc = mf_u32(c, f[8], what, "max_key_len", PDCBB_KV_KEY_MAXLEN, &x.max_key_len)) !=
            PDCBB_OK ||
        (rc = mf_u64(c, f[9], what, "max_value_len", 0, UINT64_MAX, &x.max_value_len)) !=
            PDCBB_OK)
        goto done;
    if (f[10] != NULL) {
        if (f[10]->kind != MF_SEQ) {
            rc = mf_bad(c, f[10], what, "committed_tags", "expected a list of tags");
            goto done;
        }
        if (f[10]->nkids > 0 &&
            (x.committed = calloc(f[10]->nkids, sizeof(uint64_t))) == NULL) {
            rc = PDCBB_ERR_NOMEM;
            goto done;
        }
        for (size_t i = 0; i < f[10]->nkids; i++)
            if ((rc = mf_u64(c, f[10]->kids[i], what, "committed_tags", 1, PDCBB_KV_MAXTAG - 1,
                             &x.committed[i])) != PDCBB_OK)
                goto done;
        x.ncommitted = (uint32_t)f[10]->nkids;
    }
    if (pdcbb_drain_find_kv_id(c->m, x.id) != NULL) {
        rc = mf_bad(c, f[0], what, "id", "two KV objects have this id");
        goto done;
    }
    rc = pdcbb_drain_add_kv(c->m, &x);
done:
    free(x.name);
    free(x.container);
    free(x.committed);
    return rc;
}

static pdcbb_err_t mf_kvdump_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"kv", "rank", "file", "records", "bytes", "crc32c", NULL};
    mf_node_t *f[6];
    char what[300];
    pdcbb_drain_kvdump_t x = {0};
    pdcbb_err_t rc;

    snprintf(what, sizeof(what), "kv_dumps[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x3f, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], what, "kv", 1, UINT64_MAX, &x.kv)) != PDCBB_OK ||
        (rc = mf_rank_of(c, f[1], what, &x.rank)) != PDCBB_OK ||
        (rc = mf_file_name(c, f[2], what, "file")) != PDCBB_OK ||
        (rc = mf_u64(c, f[3], what, "records", 0, UINT64_MAX, &x.records)) != PDCBB_OK ||
        (rc = mf_u64(c, f[4], what, "bytes", 1, (uint64_t)INT64_MAX, &x.bytes)) != PDCBB_OK ||
        (rc = mf_crc(c, f[5], what, &x.crc32c)) != PDCBB_OK)
        return rc;
    x.file = f[2]->text;
    return pdcbb_drain_add_kvdump(c->m, &x);
}

static pdcbb_err_t mf_extent_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"object", "rank", "object_offset", "length", "file",
                                       "file_offset", "crc32c", NULL};
    mf_node_t *f[7];
    char what[64];
    pdcbb_drain_extent_t x = {0};
    pdcbb_err_t rc;

    snprintf(what, sizeof(what), "extents[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x7f, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], what, "object", 1, UINT64_MAX, &x.object_id)) != PDCBB_OK ||
        (rc = mf_rank_of(c, f[1], what, &x.rank)) != PDCBB_OK ||
        (rc = mf_u64(c, f[2], what, "object_offset", 0, PDCBB_REGION_OFFSET_MAX - 1,
                     &x.object_offset)) != PDCBB_OK ||
        (rc = mf_u64(c, f[3], what, "length", 1, PDCBB_DRAIN_EXTENT_MAX, &x.length)) !=
            PDCBB_OK ||
        (rc = mf_file_name(c, f[4], what, "file")) != PDCBB_OK ||
        (rc = mf_u64(c, f[5], what, "file_offset", 0, (uint64_t)INT64_MAX - x.length,
                     &x.file_offset)) != PDCBB_OK)
        return rc;
    if ((rc = mf_crc(c, f[6], what, &x.crc32c)) != PDCBB_OK)
        return rc;
    if (x.object_offset > PDCBB_REGION_OFFSET_MAX - x.length)
        return mf_bad(c, f[3], what, "length", "the extent ends past 2^63");
    x.file = f[4]->text;
    if ((rc = pdcbb_drain_add_extent(c->m, &x)) != PDCBB_OK)
        return rc;
    if (drain_grow((void **)&c->ext_lines, c->m->nextents - 1, &c->cap_lines,
                   sizeof(*c->ext_lines)) != 0)
        return PDCBB_ERR_NOMEM;
    c->ext_lines[c->m->nextents - 1] = (uint32_t)v->line;
    return PDCBB_OK;
}

typedef struct drain_obj_ix {
    uint64_t id;
    uint32_t idx;
} drain_obj_ix_t;

static int drain_obj_ix_cmp(const void *a, const void *b)
{
    const drain_obj_ix_t *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Cross-checks of a model: unique object ids, and every extent within its object's shape and
 * aligned to its element size. Extents of objects not in the model are accepted unless
 * require_objects (a part lists the extents its rank held, also of objects homed elsewhere).
 * lines (may be NULL) gives each extent's YAML line.
 */
static pdcbb_err_t drain_check(const pdcbb_drain_t *m, const char *path, const uint32_t *lines,
                               int require_objects, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    drain_obj_ix_t *ix = NULL;
    char where[PATH_MAX + 64];

    if (m->nobjs > 0) {
        ix = malloc(m->nobjs * sizeof(*ix));
        if (ix == NULL) {
            drain_errf(err, errlen, "%s: out of memory", path);
            return PDCBB_ERR_NOMEM;
        }
        for (uint32_t i = 0; i < m->nobjs; i++) {
            ix[i].id = m->objs[i].id;
            ix[i].idx = i;
        }
        qsort(ix, m->nobjs, sizeof(*ix), drain_obj_ix_cmp);
        for (uint32_t i = 1; i < m->nobjs; i++) {
            if (ix[i].id == ix[i - 1].id) {
                drain_errf(err, errlen, "%s: objects '%s' and '%s' have the same id %" PRIu64,
                           path, m->objs[ix[i - 1].idx].name, m->objs[ix[i].idx].name,
                           ix[i].id);
                rc = PDCBB_ERR_CONFIG;
                goto done;
            }
        }
    }
    for (uint64_t i = 0; i < m->nextents; i++) {
        const pdcbb_drain_extent_t *x = &m->extents[i];
        if (lines != NULL)
            snprintf(where, sizeof(where), "%s:%" PRIu32 ": extents[%" PRIu64 "]", path,
                     lines[i], i);
        else
            snprintf(where, sizeof(where), "%s: extent %" PRIu64 " of object %" PRIu64, path, i,
                     x->object_id);
        drain_obj_ix_t key = {x->object_id, 0};
        drain_obj_ix_t *hit =
            m->nobjs ? bsearch(&key, ix, m->nobjs, sizeof(*ix), drain_obj_ix_cmp) : NULL;
        if (hit == NULL) {
            if (!require_objects)
                continue;
            drain_errf(err, errlen, "%s: key 'object': no object has id %" PRIu64, where,
                       x->object_id);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        const pdcbb_drain_object_t *o = &m->objs[hit->idx];
        if (x->object_offset % o->element_size != 0 || x->length % o->element_size != 0) {
            drain_errf(err, errlen,
                       "%s: key '%s': not a multiple of object '%s''s element size %" PRIu32,
                       where, x->object_offset % o->element_size ? "object_offset" : "length",
                       o->name, o->element_size);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        if (o->dims[0] != PDCBB_DIM_UNLIMITED) {
            uint64_t total = drain_row_bytes(o) * o->dims[0]; /* checked at load */
            if (x->object_offset + x->length > total) {
                drain_errf(err, errlen,
                           "%s: key 'length': bytes %" PRIu64 "..%" PRIu64
                           " lie outside object '%s' (%" PRIu64 " bytes)",
                           where, x->object_offset, x->object_offset + x->length, o->name, total);
                rc = PDCBB_ERR_CONFIG;
                goto done;
            }
        }
    }
    /* a KV dump belongs to a KV object of the manifest (a part may list dumps of KV objects
     * homed elsewhere only when it does not hold their meta: never, but stay lenient there) */
    for (uint32_t i = 0; require_objects && i < m->nkvdumps; i++) {
        if (pdcbb_drain_find_kv_id(m, m->kvdumps[i].kv) == NULL) {
            drain_errf(err, errlen, "%s: kv_dumps[%" PRIu32 "]: key 'kv': no KV object has id %" PRIu64,
                       path, i, m->kvdumps[i].kv);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
    }
done:
    free(ix);
    return rc;
}

/* The top level: streams the four lists item by item. */
static pdcbb_err_t mf_document(mf_ctx_t *c)
{
    static const char *const keys[] = {"format",  "version", "job",        "ranks",
                                       "containers", "objects", "extents", "kv_objects",
                                       "kv_dumps", NULL};
    yaml_event_t ev;
    pdcbb_err_t rc;
    size_t seen[9] = {0};
    size_t root_line = 1;

    if ((rc = mf_next(c, &ev)) != PDCBB_OK)
        return rc;
    yaml_event_delete(&ev); /* stream start */
    if ((rc = mf_next(c, &ev)) != PDCBB_OK)
        return rc;
    if (ev.type != YAML_DOCUMENT_START_EVENT) {
        yaml_event_delete(&ev);
        drain_errf(c->err, c->errlen, "%s: empty file (not a manifest)", c->path);
        return PDCBB_ERR_CONFIG;
    }
    yaml_event_delete(&ev);
    if ((rc = mf_next(c, &ev)) != PDCBB_OK)
        return rc;
    root_line = ev.start_mark.line + 1;
    if (ev.type != YAML_MAPPING_START_EVENT) {
        yaml_event_delete(&ev);
        drain_errf(c->err, c->errlen, "%s:%zu: the top level must be a mapping", c->path,
                   root_line);
        return PDCBB_ERR_CONFIG;
    }
    yaml_event_delete(&ev);
    for (;;) {
        mf_node_t *kn = NULL, *vn = NULL;
        size_t j;
        if ((rc = mf_next(c, &ev)) != PDCBB_OK)
            return rc;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if ((rc = mf_build(c, &ev, 1, &kn)) != PDCBB_OK)
            return rc;
        if (kn->kind != MF_SCALAR) {
            drain_errf(c->err, c->errlen, "%s:%zu: a key must be a name, found %s", c->path,
                       kn->line, mf_kind(kn));
            mf_free(kn);
            return PDCBB_ERR_CONFIG;
        }
        for (j = 0; keys[j] != NULL; j++)
            if (strcmp(keys[j], kn->text) == 0)
                break;
        if (keys[j] == NULL) {
            drain_errf(c->err, c->errlen, "%s:%zu: unknown key '%s'", c->path, kn->line,
                       kn->text);
            mf_free(kn);
            return PDCBB_ERR_CONFIG;
        }
        if (seen[j]) {
            drain_errf(c->err, c->errlen, "%s:%zu: duplicate key '%s' (first on line %zu)",
                       c->path, kn->line, kn->text, seen[j]);
            mf_free(kn);
            return PDCBB_ERR_CONFIG;
        }
        seen[j] = kn->line;
        mf_free(kn);
        if (j >= 2 && c->m->nservers == 0 && j != 2) {
            drain_errf(c->err, c->errlen, "%s:%zu: key '%s' before key 'job'", c->path,
                       seen[j], keys[j]);
            return PDCBB_ERR_CONFIG;
        }
        if ((rc = mf_next(c, &ev)) != PDCBB_OK)
            return rc;
        if (j >= 3 && ev.type == YAML_SEQUENCE_START_EVENT) {
            yaml_event_delete(&ev);
            for (size_t idx = 0;; idx++) {
                if ((rc = mf_next(c, &ev)) != PDCBB_OK)
                    return rc;
                if (ev.type == YAML_SEQUENCE_END_EVENT) {
                    yaml_event_delete(&ev);
                    break;
                }
                if ((rc = mf_build(c, &ev, 2, &vn)) != PDCBB_OK)
                    return rc;
                rc = j == 3   ? mf_rank_item(c, vn, idx)
                     : j == 4 ? mf_cont_item(c, vn, idx)
                     : j == 5 ? mf_object_item(c, vn, idx)
                     : j == 6 ? mf_extent_item(c, vn, idx)
                     : j == 7 ? mf_kv_item(c, vn, idx)
                              : mf_kvdump_item(c, vn, idx);
                mf_free(vn);
                if (rc == PDCBB_ERR_NOMEM && c->err != NULL && c->err[0] == '\0')
                    drain_errf(c->err, c->errlen, "%s: out of memory", c->path);
                if (rc != PDCBB_OK)
                    return rc;
            }
            continue;
        }
        if ((rc = mf_build(c, &ev, 1, &vn)) != PDCBB_OK)
            return rc;
        if (j == 0) {
            if (vn->kind != MF_SCALAR || strcmp(vn->text, PDCBB_DRAIN_FORMAT) != 0)
                rc = mf_bad(c, vn, "top level", "format", "expected pdcbb-drain");
        } else if (j == 1) {
            uint64_t ver = 0;
            rc = mf_u64(c, vn, "top level", "version", 1, UINT32_MAX, &ver);
            if (rc == PDCBB_OK && ver != PDCBB_DRAIN_VERSION) {
                drain_errf(c->err, c->errlen,
                           "%s:%zu: key 'version': drain format version %" PRIu64
                           " is not supported (this pdcbb reads version %d)",
                           c->path, vn->line, ver, PDCBB_DRAIN_VERSION);
                rc = PDCBB_ERR_VERSION;
            }
        } else if (j == 2) {
            rc = mf_job(c, vn);
        } else {
            rc = mf_bad(c, vn, "top level", keys[j], "expected a list");
        }
        mf_free(vn);
        if (rc != PDCBB_OK)
            return rc;
    }
    for (size_t j = 0; keys[j] != NULL && j < 7; j++) { /* kv_objects, kv_dumps: optional */
        if (!seen[j]) {
            drain_errf(c->err, c->errlen, "%s:%zu: missing key '%s'", c->path, root_line,
                       keys[j]);
            return PDCBB_ERR_CONFIG;
        }
    }
    if ((rc = mf_next(c, &ev)) != PDCBB_OK)
        return rc;
    yaml_event_delete(&ev); /* document end */
    if ((rc = mf_next(c, &ev)) != PDCBB_OK)
        return rc;
    if (ev.type != YAML_STREAM_END_EVENT) {
        drain_errf(c->err, c->errlen, "%s:%zu: only one YAML document is allowed", c->path,
                   (size_t)ev.start_mark.line + 1);
        yaml_event_delete(&ev);
        return PDCBB_ERR_CONFIG;
    }
    yaml_event_delete(&ev);
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_load_manifest(const char *path, pdcbb_drain_t **out, char *err,
                                      size_t errlen)
{
    mf_ctx_t c;
    pdcbb_err_t rc;
    FILE *f;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (path == NULL || out == NULL) {
        drain_errf(err, errlen, "pdcbb_drain_load_manifest: no path");
        return PDCBB_ERR_INVAL;
    }
    f = fopen(path, "rbe");
    if (f == NULL) {
        int e = errno;
        drain_errf(err, errlen, "%s: cannot open: %s", path, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    memset(&c, 0, sizeof(c));
    c.path = path;
    c.err = err;
    c.errlen = errlen;
    c.m = pdcbb_drain_new();
    if (c.m == NULL || !yaml_parser_initialize(&c.parser)) {
        drain_errf(err, errlen, "%s: out of memory", path);
        pdcbb_drain_free(c.m);
        fclose(f);
        return PDCBB_ERR_NOMEM;
    }
    yaml_parser_set_input_file(&c.parser, f);
    rc = mf_document(&c);
    if (rc == PDCBB_OK) {
        /* a manifest listing every rank (the merged one) must describe every extent's object */
        rc = drain_check(c.m, path, c.ext_lines, c.m->nranks == c.m->nservers, err, errlen);
    }
    yaml_parser_delete(&c.parser);
    fclose(f);
    free(c.ext_lines);
    if (rc != PDCBB_OK) {
        if (err != NULL && errlen > 0 && err[0] == '\0')
            drain_errf(err, errlen, "%s: %s", path, pdcbb_strerror(rc));
        pdcbb_drain_free(c.m);
        return rc;
    }
    *out = c.m;
    return PDCBB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Drain directories                                                                          */
/* ---------------------------------------------------------------------------------------- */

static bool drain_exists(const char *dir, const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static int drain_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "rank-RRRRR.yaml" -> R, else -1. */
static long drain_part_rank(const char *name)
{
    if (strncmp(name, "rank-", 5) != 0 || name[5] < '0' || name[5] > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long r = strtoul(name + 5, &end, 10);
    if (errno != 0 || strcmp(end, ".yaml") != 0 || r >= DRAIN_NSERVERS_MAX)
        return -1;
    return (long)r;
}

/* The part files of drain_dir, sorted (malloc'ed names; free with drain_names_free). */
static pdcbb_err_t drain_list_parts(const char *drain_dir, char ***names, size_t *n, char *err,
                                    size_t errlen)
{
    char p[PATH_MAX];
    size_t cap = 0;
    *names = NULL;
    *n = 0;
    snprintf(p, sizeof(p), "%s/%s", drain_dir, PDCBB_DRAIN_PARTS_DIR);
    DIR *d = opendir(p);
    if (d == NULL) {
        if (errno == ENOENT)
            return PDCBB_OK;
        drain_errf(err, errlen, "%s: cannot read: %s", p, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (drain_part_rank(de->d_name) < 0)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **v = realloc(*names, cap * sizeof(*v));
            if (v == NULL)
                goto nomem;
            *names = v;
        }
        if (((*names)[*n] = strdup(de->d_name)) == NULL)
            goto nomem;
        (*n)++;
    }
    closedir(d);
    if (*n > 1)
        qsort(*names, *n, sizeof(char *), drain_name_cmp);
    return PDCBB_OK;
nomem:
    closedir(d);
    drain_errf(err, errlen, "%s: out of memory", p);
    return PDCBB_ERR_NOMEM;
}

static void drain_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Load every part of drain_dir and merge them into *out (sorted, checked). */
static pdcbb_err_t drain_load_parts(const char *drain_dir, char **names, size_t n,
                                    pdcbb_drain_t **out, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    pdcbb_drain_t *all = pdcbb_drain_new(), *part = NULL;
    char path[PATH_MAX];

    if (all == NULL) {
        drain_errf(err, errlen, "%s: out of memory", drain_dir);
        return PDCBB_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        long r = drain_part_rank(names[i]);
        snprintf(path, sizeof(path), "%s/%s/%s", drain_dir, PDCBB_DRAIN_PARTS_DIR, names[i]);
        if ((rc = pdcbb_drain_load_manifest(path, &part, err, errlen)) != PDCBB_OK)
            goto done;
        if (part->nranks != 1 || part->ranks[0].rank != (uint32_t)r) {
            drain_errf(err, errlen, "%s: a part must describe exactly its rank %ld", path, r);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        if (i > 0 && (part->job_id != all->job_id || part->nservers != all->nservers)) {
            drain_errf(err, errlen,
                       "%s: job %" PRIu64 " with %" PRIu32 " ranks, but the other parts say "
                       "job %" PRIu64 " with %" PRIu32 " ranks",
                       path, part->job_id, part->nservers, all->job_id, all->nservers);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        if ((rc = pdcbb_drain_merge(all, part)) != PDCBB_OK) {
            drain_errf(err, errlen, "%s: %s", path, rc == PDCBB_ERR_INVAL ? "a part of another job (its job id, daemon count or instance differs from the other parts)" : pdcbb_strerror(rc));
            goto done;
        }
        pdcbb_drain_free(part);
        part = NULL;
    }
    pdcbb_drain_sort(all);
    rc = drain_check(all, drain_dir, NULL, all->nranks == all->nservers, err, errlen);
done:
    pdcbb_drain_free(part);
    if (rc != PDCBB_OK) {
        pdcbb_drain_free(all);
        return rc;
    }
    *out = all;
    return PDCBB_OK;
}

/* Resolve dir to a job's drain directory (itself, or its only pdcbb.* subdirectory). */
static pdcbb_err_t drain_resolve(const char *dir, char *out, size_t outlen, char *err,
                                 size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        int e = errno;
        drain_errf(err, errlen, "%s: %s", dir, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    if (!S_ISDIR(st.st_mode)) {
        drain_errf(err, errlen, "%s: not a directory", dir);
        return PDCBB_ERR_INVAL;
    }
    if (drain_exists(dir, PDCBB_DRAIN_MANIFEST) || drain_exists(dir, PDCBB_DRAIN_COMPLETE) ||
        drain_exists(dir, PDCBB_DRAIN_PARTS_DIR)) {
        snprintf(out, outlen, "%s", dir);
        return PDCBB_OK;
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        int e = errno;
        drain_errf(err, errlen, "%s: cannot read: %s", dir, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    char found[8][256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char p[PATH_MAX];
        if (strncmp(de->d_name, "pdcbb.", 6) != 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (n < 8)
            snprintf(found[n], sizeof(found[n]), "%s", de->d_name);
        n++;
    }
    closedir(d);
    if (n == 0) {
        drain_errf(err, errlen,
                   "%s: not a drain directory (no %s, %s or %s/, and no pdcbb.* directory "
                   "inside)",
                   dir, PDCBB_DRAIN_MANIFEST, PDCBB_DRAIN_COMPLETE, PDCBB_DRAIN_PARTS_DIR);
        return PDCBB_ERR_NOT_FOUND;
    }
    if (n > 1) {
        char list[1024] = "";
        size_t len = 0;
        for (size_t i = 0; i < n && i < 8; i++)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
                                    found[i]);
        drain_errf(err, errlen, "%s holds %zu drained jobs (%s%s): name one of them", dir, n,
                   list, n > 8 ? ", ..." : "");
        return PDCBB_ERR_INVAL;
    }
    if (snprintf(out, outlen, "%s/%s", dir, found[0]) >= (int)outlen) {
        drain_errf(err, errlen, "%s: path too long", dir);
        return PDCBB_ERR_INVAL;
    }
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_open(const char *dir, int flags, pdcbb_drain_t **out, char *err,
                             size_t errlen)
{
    char ddir[PATH_MAX], path[PATH_MAX + 32];
    pdcbb_drain_t *m = NULL;
    char **names = NULL;
    size_t nnames = 0;
    pdcbb_err_t rc;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (dir == NULL || out == NULL) {
        drain_errf(err, errlen, "pdcbb_drain_open: no directory");
        return PDCBB_ERR_INVAL;
    }
    if ((rc = drain_resolve(dir, ddir, sizeof(ddir), err, errlen)) != PDCBB_OK)
        return rc;
    if (drain_exists(ddir, PDCBB_DRAIN_COMPLETE)) {
        snprintf(path, sizeof(path), "%s/%s", ddir, PDCBB_DRAIN_MANIFEST);
        if (!drain_exists(ddir, PDCBB_DRAIN_MANIFEST)) {
            drain_errf(err, errlen, "%s: missing, although %s/%s exists", path, ddir,
                       PDCBB_DRAIN_COMPLETE);
            return PDCBB_ERR_IO;
        }
        if ((rc = pdcbb_drain_load_manifest(path, &m, err, errlen)) != PDCBB_OK)
            return rc;
        if (m->nranks != m->nservers) {
            drain_errf(err, errlen, "%s: lists %" PRIu32 " of %" PRIu32 " ranks", path,
                       m->nranks, m->nservers);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        pdcbb_drain_sort(m);
        m->complete = 1;
    } else {
        if ((rc = drain_list_parts(ddir, &names, &nnames, err, errlen)) != PDCBB_OK)
            goto done;
        if (!(flags & PDCBB_DRAIN_OPEN_PARTIAL)) {
            if (nnames == 0) {
                drain_errf(err, errlen,
                           "%s: incomplete drain: no rank drained yet (finish it with pdcbb "
                           "drain)",
                           ddir);
                rc = PDCBB_ERR_NOT_FOUND;
                goto done;
            }
            snprintf(path, sizeof(path), "%s/%s/%s", ddir, PDCBB_DRAIN_PARTS_DIR, names[0]);
            if ((rc = pdcbb_drain_load_manifest(path, &m, err, errlen)) != PDCBB_OK)
                goto done;
            drain_errf(err, errlen,
                       "incomplete drain: %zu of %" PRIu32 " ranks drained (finish it with "
                       "pdcbb drain)",
                       nnames, m->nservers);
            pdcbb_drain_free(m);
            m = NULL;
            rc = PDCBB_ERR_NOT_FOUND;
            goto done;
        }
        if (nnames == 0) {
            drain_errf(err, errlen, "%s: no rank drained yet (no %s/rank-*.yaml)", ddir,
                       PDCBB_DRAIN_PARTS_DIR);
            rc = PDCBB_ERR_NOT_FOUND;
            goto done;
        }
        if ((rc = drain_load_parts(ddir, names, nnames, &m, err, errlen)) != PDCBB_OK)
            goto done;
        m->complete = 0;
    }
    m->dir = strdup(ddir);
    if (m->dir == NULL) {
        drain_errf(err, errlen, "%s: out of memory", ddir);
        rc = PDCBB_ERR_NOMEM;
    }
done:
    drain_names_free(names, nnames);
    if (rc != PDCBB_OK) {
        pdcbb_drain_free(m);
        return rc;
    }
    *out = m;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_finish(const char *drain_dir, uint32_t nservers, int *complete,
                               char *err, size_t errlen)
{
    char path[PATH_MAX + 32], line[256], when[64];
    char **names = NULL;
    size_t nnames = 0;
    pdcbb_drain_t *m = NULL;
    pdcbb_err_t rc;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (drain_dir == NULL || complete == NULL || nservers == 0) {
        drain_errf(err, errlen, "pdcbb_drain_finish: no directory or no ranks");
        return PDCBB_ERR_INVAL;
    }
    *complete = 0;
    if (drain_exists(drain_dir, PDCBB_DRAIN_COMPLETE)) {
        *complete = 1;
        return PDCBB_OK;
    }
    for (uint32_t r = 0; r < nservers; r++) {
        snprintf(path, sizeof(path), "%s/rank-%05" PRIu32 ".yaml", PDCBB_DRAIN_PARTS_DIR, r);
        if (!drain_exists(drain_dir, path))
            return PDCBB_OK; /* another node still drains */
    }
    if ((rc = drain_list_parts(drain_dir, &names, &nnames, err, errlen)) != PDCBB_OK)
        goto done;
    if ((rc = drain_load_parts(drain_dir, names, nnames, &m, err, errlen)) != PDCBB_OK)
        goto done;
    if (m->nservers != nservers || m->nranks != nservers) {
        drain_errf(err, errlen,
                   "%s: the parts describe %" PRIu32 " of %" PRIu32 " ranks, expected %" PRIu32,
                   drain_dir, m->nranks, m->nservers, nservers);
        rc = PDCBB_ERR_CONFIG;
        goto done;
    }
    snprintf(path, sizeof(path), "%s/%s", drain_dir, PDCBB_DRAIN_MANIFEST);
    if ((rc = pdcbb_drain_write_manifest(m, path, err, errlen)) != PDCBB_OK)
        goto done;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    int len = snprintf(line, sizeof(line), "%s %d job %" PRIu64 " ranks %" PRIu32 " %s\n",
                       PDCBB_DRAIN_FORMAT, PDCBB_DRAIN_VERSION, m->job_id, m->nservers, when);
    snprintf(path, sizeof(path), "%s/%s", drain_dir, PDCBB_DRAIN_COMPLETE);
    if ((rc = drain_write_atomic(path, line, (size_t)len, err, errlen)) != PDCBB_OK)
        goto done;
    *complete = 1;
done:
    drain_names_free(names, nnames);
    pdcbb_drain_free(m);
    return rc;
}
