/*
 * mount_pdc_view.c - the job's PDC containers and objects as read-only files under `.pdc/`
 * (mount_pdc_view.h).
 *
 * A small table of the entries the kernel has seen (ino, parent, container or object meta id,
 * name), grown at lookup and readdir and never shrunk (a view of a job's objects, not of its
 * files: thousands at most). The daemons are asked again at every lookup and opendir, so an
 * object created on another node shows up at once and a deleted one is gone (ENOENT).
 *
 * An object file's bytes are the object's elements in row-major order, its size the element
 * count times the element size (an unlimited first dimension: its current extent). A read of
 * [off, off + size) becomes one region transfer of the whole rows it touches when a row is at
 * most VIEW_ROW_MAX bytes, else one transfer per run along the last dimension.
 */
#include "mount_pdc_view.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mount_io.h"
#include "mount_listing.h"
#include "pdc_ns.h"
#include "pdcbb_region.h"

#define VIEW_INO_KIND   0xfull /* the top 4 bits of a view ino (meta ids use 1..3) */
#define VIEW_ROOT       ((VIEW_INO_KIND << 60) | 1u)
#define VIEW_ROW_MAX    ((uint64_t)8 << 20)
#define FILES_CONTAINER "pdcbb.files" /* the mount's own files: shown in the tree already */

typedef struct ventry {
    uint64_t ino, parent, meta; /* meta: the container's or object's meta id */
    int is_dir;
    char *name;  /* escaped */
    pdcid_t obj; /* an object file's handle while open */
    unsigned opens;
} ventry_t;

static ventry_t *ents;
static size_t nents, capents;
static uint64_t next_ino = 2;
static pdcid_t view_pdc;
static uid_t view_uid;
static gid_t view_gid;
static double view_timeout;
static struct timespec view_time;

void view_init(pdcid_t pdc, uid_t uid, gid_t gid, double attr_timeout)
{
    view_pdc = pdc;
    view_uid = uid;
    view_gid = gid;
    view_timeout = attr_timeout;
    clock_gettime(CLOCK_REALTIME, &view_time);
}

bool view_owns(uint64_t ino)
{
    return (ino >> 60) == VIEW_INO_KIND;
}

static ventry_t *ent_by_ino(uint64_t ino)
{
    for (size_t i = 0; i < nents; i++)
        if (ents[i].ino == ino)
            return &ents[i];
    return NULL;
}

bool view_name(uint64_t parent, const char *name)
{
    return (parent == 1 && strcmp(name, PDCBB_VIEW_NAME) == 0) || view_owns(parent);
}

/* A PDC name as one file name: '%' and '/' (and a leading '.' of "." and "..") escaped. */
static int escape(const char *in, char *out, size_t len)
{
    size_t o = 0;
    int dots = strcmp(in, ".") == 0 || strcmp(in, "..") == 0;
    for (const char *c = in; *c; c++) {
        const char *rep = *c == '%' ? "%25" : *c == '/' ? "%2F" : (dots && c == in) ? "%2E" : NULL;
        size_t l = rep ? 3 : 1;
        if (o + l >= len)
            return -1;
        if (rep)
            memcpy(out + o, rep, 3);
        else
            out[o] = *c;
        o += l;
    }
    out[o] = '\0';
    return o > 0 && o <= 255 ? 0 : -1;
}

/* The entry (parent, meta), made if new: NULL when out of memory. */
static ventry_t *ent_get(uint64_t parent, uint64_t meta, int is_dir, const char *name)
{
    for (size_t i = 0; i < nents; i++)
        if (ents[i].parent == parent && ents[i].meta == meta) {
            if (strcmp(ents[i].name, name) != 0) { /* cannot happen: names do not change */
                char *c = strdup(name);
                if (c == NULL)
                    return NULL;
                free(ents[i].name);
                ents[i].name = c;
            }
            return &ents[i];
        }
    if (nents == capents) {
        size_t cap = capents ? 2 * capents : 64;
        ventry_t *g = realloc(ents, cap * sizeof(*g));
        if (g == NULL)
            return NULL;
        ents = g;
        capents = cap;
    }
    ventry_t *e = &ents[nents];
    memset(e, 0, sizeof(*e));
    if ((e->name = strdup(name)) == NULL)
        return NULL;
    e->ino = (VIEW_INO_KIND << 60) | next_ino++;
    e->parent = parent;
    e->meta = meta;
    e->is_dir = is_dir;
    nents++;
    return e;
}

/* ------------------------------------------------------------------ what the daemons say */

typedef struct listing {
    size_t n;
    struct {
        uint64_t meta;
        char name[256];
    } * e;
} listing_t;

/* The containers (dir VIEW_ROOT) or a container's objects, escaped names; errno or 0. */
static int list_dir(uint64_t dir_meta, int containers, listing_t *l)
{
    uint64_t *ids = NULL;
    size_t n = 0;
    memset(l, 0, sizeof(*l));
    if (PDCbb_list_ids(containers ? PDCBB_META_KIND_CONT : PDCBB_META_KIND_OBJ, dir_meta, &ids,
                       &n) != PDCBB_OK)
        return EIO;
    l->e = calloc(n ? n : 1, sizeof(*l->e));
    if (l->e == NULL) {
        free(ids);
        return ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        char name[1024] = "";
        if (containers) {
            if (PDCbb_cont_name(ids[i], name, sizeof(name)) != PDCBB_OK ||
                strcmp(name, FILES_CONTAINER) == 0)
                continue; /* gone meanwhile, or the mount's own files */
        } else {
            pdcid_t h = PDCbb_obj_open_id(ids[i]);
            struct pdc_obj_info *info = h ? PDCobj_get_info(h) : NULL;
            if (info != NULL && info->name != NULL)
                snprintf(name, sizeof(name), "%s", info->name);
            if (h)
                PDCobj_close(h);
        }
        if (name[0] == '\0' || escape(name, l->e[l->n].name, sizeof(l->e[l->n].name)) != 0)
            continue; /* gone, or a name too long for a file name */
        l->e[l->n++].meta = ids[i];
    }
    free(ids);
    return 0;
}

/* An object's size in bytes (its element count times the element size); false if gone. */
static bool object_shape(pdcid_t h, uint32_t *ndim, uint64_t *dims, size_t *unit, uint64_t *bytes)
{
    struct pdc_obj_info *info = PDCobj_get_info(h);
    if (info == NULL || info->obj_pt == NULL || info->obj_pt->ndim > PDCBB_REGION_NDIM_MAX)
        return false;
    *ndim = (uint32_t)info->obj_pt->ndim;
    *unit = pdcbb_type_size((int)info->obj_pt->type);
    memcpy(dims, info->obj_pt->dims, *ndim * sizeof(uint64_t));
    if (*ndim > 0 && dims[0] == PDC_SIZE_UNLIMITED && PDCbb_obj_get_extent(h, dims) != SUCCEED)
        return false;
    uint64_t b = *ndim ? *unit : 0;
    for (uint32_t d = 0; d < *ndim; d++)
        b = dims[d] != 0 && b > UINT64_MAX / dims[d] ? UINT64_MAX : b * dims[d];
    *bytes = b;
    return true;
}

static void ent_stat(const ventry_t *e, uint64_t size, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = e ? e->ino : VIEW_ROOT;
    st->st_mode = e == NULL || e->is_dir ? S_IFDIR | 0500 : S_IFREG | 0400;
    st->st_nlink = e == NULL || e->is_dir ? 2 : 1;
    st->st_uid = view_uid;
    st->st_gid = view_gid;
    st->st_size = (off_t)size;
    st->st_blksize = 1 << 20;
    st->st_blocks = (blkcnt_t)((size + 511) / 512);
    st->st_mtim = st->st_ctim = st->st_atim = view_time;
}

/* The stat of entry e now (a file's size from the daemons); errno or 0. */
static int ent_attr(const ventry_t *e, struct stat *st)
{
    uint64_t size = 0;
    if (e != NULL && !e->is_dir) {
        pdcid_t h = e->obj ? e->obj : PDCbb_obj_open_id(e->meta);
        uint32_t ndim;
        uint64_t dims[PDCBB_REGION_NDIM_MAX];
        size_t unit;
        bool ok = h && object_shape(h, &ndim, dims, &unit, &size);
        if (h && h != e->obj)
            PDCobj_close(h);
        if (!ok)
            return ENOENT;
    }
    ent_stat(e, size, st);
    return 0;
}

/* ------------------------------------------------------------------ operations */

bool view_lookup(fuse_req_t req, uint64_t parent, const char *name)
{
    if (!view_name(parent, name))
        return false;
    struct fuse_entry_param ep;
    memset(&ep, 0, sizeof(ep));
    ep.attr_timeout = ep.entry_timeout = view_timeout;
    if (parent == 1) {
        ent_stat(NULL, 0, &ep.attr);
        ep.ino = VIEW_ROOT;
        fuse_reply_entry(req, &ep);
        return true;
    }
    const ventry_t *dir = parent == VIEW_ROOT ? NULL : ent_by_ino(parent);
    if (parent != VIEW_ROOT && (dir == NULL || !dir->is_dir)) {
        fuse_reply_err(req, ENOENT);
        return true;
    }
    listing_t l;
    int err = list_dir(dir ? dir->meta : 0, dir == NULL, &l);
    ventry_t *e = NULL;
    for (size_t i = 0; err == 0 && i < l.n && e == NULL; i++)
        if (strcmp(l.e[i].name, name) == 0 &&
            (e = ent_get(parent, l.e[i].meta, dir == NULL, name)) == NULL)
            err = ENOMEM;
    free(l.e);
    if (err == 0 && e == NULL)
        err = ENOENT;
    if (err == 0)
        err = ent_attr(e, &ep.attr);
    if (err != 0) {
        fuse_reply_err(req, err);
        return true;
    }
    ep.ino = e->ino;
    fuse_reply_entry(req, &ep);
    return true;
}

bool view_getattr(fuse_req_t req, uint64_t ino)
{
    if (!view_owns(ino))
        return false;
    struct stat st;
    const ventry_t *e = ino == VIEW_ROOT ? NULL : ent_by_ino(ino);
    int err = ino != VIEW_ROOT && e == NULL ? ENOENT : ent_attr(e, &st);
    if (err)
        fuse_reply_err(req, err);
    else
        fuse_reply_attr(req, &st, view_timeout);
    return true;
}

bool view_opendir(fuse_req_t req, uint64_t ino, struct fuse_file_info *fi)
{
    if (!view_owns(ino))
        return false;
    const ventry_t *dir = ino == VIEW_ROOT ? NULL : ent_by_ino(ino);
    if (ino != VIEW_ROOT && (dir == NULL || !dir->is_dir)) {
        fuse_reply_err(req, dir ? ENOTDIR : ENOENT);
        return true;
    }
    listing_t l = {0};
    mount_listing_t *out = mount_listing_new();
    int err = out ? list_dir(dir ? dir->meta : 0, dir == NULL, &l) : ENOMEM;
    /* every entry gets its ino now, so readdir and a later lookup agree */
    for (size_t i = 0; err == 0 && i < l.n; i++) {
        const ventry_t *e = ent_get(ino, l.e[i].meta, dir == NULL, l.e[i].name);
        if (e == NULL || mount_listing_add(out, e->ino, e->is_dir ? S_IFDIR : S_IFREG, e->name,
                                           strlen(e->name)) != 0)
            err = ENOMEM;
    }
    free(l.e);
    if (err) {
        mount_listing_free(out);
        fuse_reply_err(req, err);
        return true;
    }
    fi->fh = (uint64_t)(uintptr_t)out; /* read and freed as the tree's listings are */
    fuse_reply_open(req, fi);
    return true;
}

bool view_open(fuse_req_t req, uint64_t ino, struct fuse_file_info *fi)
{
    if (!view_owns(ino))
        return false;
    ventry_t *e = ent_by_ino(ino);
    if (e == NULL || e->is_dir) {
        fuse_reply_err(req, e ? EISDIR : ENOENT);
        return true;
    }
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
        fuse_reply_err(req, EROFS);
        return true;
    }
    if (e->obj == 0 && (e->obj = PDCbb_obj_open_id(e->meta)) == 0) {
        fuse_reply_err(req, ENOENT);
        return true;
    }
    e->opens++;
    fi->keep_cache = 0;
    fuse_reply_open(req, fi);
    return true;
}

bool view_read(fuse_req_t req, uint64_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)fi;
    if (!view_owns(ino))
        return false;
    ventry_t *e = ent_by_ino(ino);
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX], bytes;
    size_t unit;
    if (e == NULL || e->obj == 0 || !object_shape(e->obj, &ndim, dims, &unit, &bytes)) {
        fuse_reply_err(req, ENOENT);
        return true;
    }
    uint64_t lo = (uint64_t)off, hi = lo + size < bytes ? lo + size : bytes;
    if (lo >= hi || unit == 0) {
        fuse_reply_buf(req, NULL, 0);
        return true;
    }
    /* bytes of one row of the first dimension, elements of one run of the last */
    uint64_t row = unit, boxoff[PDCBB_REGION_NDIM_MAX], boxsize[PDCBB_REGION_NDIM_MAX];
    for (uint32_t d = 1; d < ndim; d++)
        row *= dims[d];
    uint8_t *out = malloc(hi - lo), *tmp = NULL;
    bool ok = out != NULL;
    if (ok && row <= VIEW_ROW_MAX) {
        /* the whole rows touched, in one transfer */
        uint64_t r0 = lo / row, r1 = (hi - 1) / row;
        ok = (tmp = malloc((r1 - r0 + 1) * row)) != NULL;
        for (uint32_t d = 0; d < ndim; d++) {
            boxoff[d] = d ? 0 : r0;
            boxsize[d] = d ? dims[d] : r1 - r0 + 1;
        }
        ok = ok && mount_transfer(e->obj, PDC_READ, tmp, ndim, boxoff, boxsize) == PDCBB_OK;
        if (ok)
            memcpy(out, tmp + (lo - r0 * row), hi - lo);
    } else {
        /* runs along the last dimension, each its own transfer */
        uint64_t last = dims[ndim - 1], el = lo / unit, elend = (hi + unit - 1) / unit;
        ok = ok && (tmp = malloc((elend - el) * unit)) != NULL;
        uint8_t *w = tmp;
        while (ok && el < elend) {
            uint64_t rest = el;
            for (int d = (int)ndim - 1; d >= 0; d--) {
                boxoff[d] = rest % dims[d];
                rest /= dims[d];
                boxsize[d] = 1;
            }
            uint64_t n = last - boxoff[ndim - 1];
            if (n > elend - el)
                n = elend - el;
            boxsize[ndim - 1] = n;
            ok = mount_transfer(e->obj, PDC_READ, w, ndim, boxoff, boxsize) == PDCBB_OK;
            w += n * unit;
            el += n;
        }
        if (ok)
            memcpy(out, tmp + (lo - lo / unit * unit), hi - lo);
    }
    if (ok)
        fuse_reply_buf(req, (const char *)out, hi - lo);
    else
        fuse_reply_err(req, out ? EIO : ENOMEM);
    if (!ok && out)
        fprintf(stderr, "pdcbb_mount: reading %s: %s\n", e->name, PDCbb_last_error_message());
    free(tmp);
    free(out);
    return true;
}

bool view_release(fuse_req_t req, uint64_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    if (!view_owns(ino))
        return false;
    ventry_t *e = ent_by_ino(ino);
    if (e != NULL && e->opens > 0 && --e->opens == 0 && e->obj) {
        PDCobj_close(e->obj);
        e->obj = 0;
    }
    fuse_reply_err(req, 0);
    return true;
}
