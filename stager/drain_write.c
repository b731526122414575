/*
 * drain_write.c - draining a stopped node's job directory into the drain format
 * (pdcbb_drain_node, docs/DRAIN-FORMAT.md).
 *
 * For every daemon rank of this node that has no part in the drain directory yet:
 *   1. read its LMDB store in one read transaction: containers with their tags and object ids,
 *      objects with their tags and placement map, and the layouts of the data files it holds;
 *   2. plan the extents: the written byte ranges of each data file (SEEK_DATA/SEEK_HOLE),
 *      widened to whole elements and clipped to what this rank owns (below), cut at
 *      PDCBB_DRAIN_EXTENT_MAX;
 *   3. copy them into data/rank-R.dat: a reader thread preads the node-local files into large
 *      buffers and computes each extent's CRC-32C while the calling thread writes the full
 *      buffers sequentially (multiple buffering, so reading, checksumming and writing
 *      overlap), and a verifier thread re-reads every extent once it is written and compares
 *      its CRC;
 *   4. fdatasync (writeback was started behind the writer with sync_file_range);
 *   5. write parts/rank-R.yaml (write, fsync, rename): from then on the rank counts as drained.
 * Then pdcbb_drain_finish merges the parts when every rank of the job has one.
 *
 * Which bytes of a data file a rank owns. A data file is laid out like its object, holes
 * never written; SEEK_DATA finds written blocks, so a range may carry zero padding around the
 * written elements. That padding is harmless except for PDC_REGION_STATIC objects split over
 * several daemons, whose extents from different ranks must not overlap: there the ranges are
 * clipped to the rank's stripe (the client writes stripe k only on daemon k). A rank knows an
 * object's partition only from the object's record, which lives on its home rank:
 *   - home rank with the record: the partition decides (REGION_STATIC: clip; others: keep);
 *   - not the home rank: the object cannot be OBJ_STATIC (only its home holds such data); it is
 *     REGION_STATIC or a placement-map object (REGION_LOCAL/DYNAMIC), which this rank cannot
 *     tell apart. Bytes inside the stripe are kept; bytes outside it are kept only if some are
 *     non-zero. For REGION_STATIC those bytes were never written (all zero) and are dropped;
 *     for a map object, the reader only takes the boxes the map assigns to this rank and reads
 *     positions without extents as zero, so dropping all-zero runs changes nothing.
 *   - home rank without a record (a deleted object whose data file survived): skipped.
 *
 * Verification: the re-read goes through the page cache (it would after fdatasync too, unless
 * the pages were dropped first), so it checks what the file system holds for the file (short
 * or misplaced writes, a file changed under us, our own bugs), not the device's media. Since a
 * re-read before or after the sync reads the same pages, it runs behind the writer rather than
 * after the sync, which keeps the drain close to the speed of a plain copy. A failed fdatasync
 * fails the rank. Afterwards POSIX_FADV_DONTNEED drops the data file's pages so that a drain
 * does not evict the rest of the node's page cache.
 *
 * Threads: pdcbb_drain_node starts and joins its own threads (a reader and a verifier per rank
 * being copied); it is not reentrant for the same drain directory and rank, and two drains of
 * the same job directory exclude each other with a lock file (drain.lock in the job
 * directory).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pdcbb_config.h"
#include "pdcbb_crc32c.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kvstore.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_log.h"
#include "pdcbb_proto.h"
#include "pdcbb_store.h"

#define DW_BUF_SIZE ((size_t)16 << 20) /* one copy buffer */
#define DW_NBUF 3                      /* reader fills one while the writer writes another */
#define DW_PROGRESS_SECONDS 5.0
#define DW_PARTITION_OBJ_STATIC 0
#define DW_PARTITION_REGION_STATIC 1

static double dw_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------------------------------- */
/* Errors: every message ends with where the node-local data is kept.                        */

typedef struct dw_ctx {
    const pdcbb_drain_job_t *job;
    uint32_t nservers;
    uint64_t map_size;
    char drain_dir[PATH_MAX];
    char *err;
    size_t errlen;
    pdcbb_drain_progress_fn progress;
    void *progress_arg;
    /* progress over the whole call */
    uint64_t total_bytes, done_bytes;
    double t0, last_log, last_cb;
    int last_decile;
} dw_ctx_t;

static pdcbb_err_t dw_fail(dw_ctx_t *c, pdcbb_err_t rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pdcbb_err_t dw_fail(dw_ctx_t *c, pdcbb_err_t rc, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
        size_t used = n < 0 ? 0 : (size_t)n < c->errlen ? (size_t)n : c->errlen - 1;
        snprintf(c->err + used, c->errlen - used, "; node-local data kept in %s",
                 c->job->job_dir);
    }
    PDCBB_ERROR("%s", c->err ? c->err : pdcbb_strerror(rc));
    return rc;
}

/* The error code of a failed file system call on the destination. */
static pdcbb_err_t dw_errno_code(int e)
{
    switch (e) {
    case ENOSPC:
    case EDQUOT: return PDCBB_ERR_NOSPC;
    case EACCES:
    case EPERM:
    case EROFS: return PDCBB_ERR_PERM;
    case ENOENT: return PDCBB_ERR_NOT_FOUND;
    case EIO: return PDCBB_ERR_IO;
    default: return pdcbb_err_from_errno(e);
    }
}

/* "cannot write X: No space left on device (destination full)" */
static pdcbb_err_t dw_fail_errno(dw_ctx_t *c, int e, const char *what, const char *path)
{
    pdcbb_err_t rc = dw_errno_code(e);
    const char *why = rc == PDCBB_ERR_NOSPC ? " (destination full)"
                      : rc == PDCBB_ERR_PERM ? " (destination not writable)"
                                             : "";
    return dw_fail(c, rc, "%s %s: %s%s", what, path, strerror(e), why);
}

/* ---------------------------------------------------------------------------------------- */
/* Progress                                                                                   */

static void dw_progress(dw_ctx_t *c, uint32_t rank, int force)
{
    double now = dw_now();
    int decile = c->total_bytes ? (int)(c->done_bytes * 10 / c->total_bytes) : 10;
    if (c->progress && (force || now - c->last_cb >= 0.25)) {
        c->progress(c->done_bytes, c->total_bytes, c->progress_arg);
        c->last_cb = now;
    }
    if (force || now - c->last_log >= DW_PROGRESS_SECONDS || decile > c->last_decile) {
        double el = now - c->t0;
        PDCBB_INFO("rank %u: %.1f of %.1f GiB (%d%%), %.0f MB/s", rank,
                   (double)c->done_bytes / (1 << 30), (double)c->total_bytes / (1 << 30),
                   c->total_bytes ? (int)(c->done_bytes * 100 / c->total_bytes) : 100,
                   el > 0 ? (double)c->done_bytes / 1e6 / el : 0.0);
        c->last_log = now;
        c->last_decile = decile;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Reading a rank's store                                                                     */

/* What this rank knows about an object it holds data of. */
typedef struct dw_layout {
    uint64_t obj;
    uint64_t unit;
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX];
} dw_layout_t;

/* An object record of this rank (for the data plan). */
typedef struct dw_objinfo {
    uint64_t id;
    uint32_t partition;
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX];
} dw_objinfo_t;

typedef struct dw_rank {
    uint32_t rank;
    pdcbb_drain_t *m;      /* the part being built */
    dw_layout_t *layouts;
    size_t nlayouts;
    dw_objinfo_t *objs;
    size_t nobjs;
} dw_rank_t;

static void *dw_grow(void *p, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap)
        return p;
    size_t nc = *cap ? 2 * *cap : 16;
    void *g = realloc(p, nc * elem);
    if (g != NULL)
        *cap = nc;
    return g;
}

/* Tags of id (key = id + name), copied into a malloc'ed array; names malloc'ed too. */
static void dw_tags_free(pdcbb_drain_tag_t *t, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        free(t[i].name);
    free(t);
}

static pdcbb_err_t dw_read_tags(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t id,
                                pdcbb_drain_tag_t **out, uint32_t *nout)
{
    uint8_t prefix[8];
    pdcbb_cursor_t *cur;
    pdcbb_val_t k, v;
    pdcbb_drain_tag_t *tags = NULL;
    size_t n = 0, cap = 0;
    pdcbb_key_u64(prefix, id);
    pdcbb_err_t rc = ops->cursor_open(txn, PDCBB_T_TAG, &cur);
    if (rc != PDCBB_OK)
        return rc;
    rc = ops->cursor_seek(cur, (pdcbb_val_t){prefix, 8}, &k, &v);
    while (rc == PDCBB_OK && k.len > 8 && memcmp(k.data, prefix, 8) == 0) {
        if (v.len >= 4) {
            pdcbb_drain_tag_t *g = dw_grow(tags, n, &cap, sizeof(*tags));
            if (g == NULL) {
                rc = PDCBB_ERR_NOMEM;
                break;
            }
            tags = g;
            const uint8_t *b = v.data;
            pdcbb_drain_tag_t *t = &tags[n];
            t->name = strndup((const char *)k.data + 8, k.len - 8);
            if (t->name == NULL) {
                rc = PDCBB_ERR_NOMEM;
                break;
            }
            t->type = (int32_t)(b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24);
            t->value = (uint8_t *)b + 4; /* copied by pdcbb_drain_add_* within the txn */
            t->len = (uint32_t)(v.len - 4);
            n++;
        }
        rc = ops->cursor_next(cur, &k, &v);
    }
    ops->cursor_close(cur);
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND) {
        dw_tags_free(tags, (uint32_t)n);
        return rc;
    }
    *out = tags;
    *nout = (uint32_t)n;
    return PDCBB_OK;
}

/* Object ids a container was given with PDCcont_put_objids (key = container id + object id). */
static pdcbb_err_t dw_read_objids(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t id,
                                  uint64_t **out, uint32_t *nout)
{
    uint8_t prefix[8];
    pdcbb_cursor_t *cur;
    pdcbb_val_t k, v;
    uint64_t *ids = NULL;
    size_t n = 0, cap = 0;
    pdcbb_key_u64(prefix, id);
    pdcbb_err_t rc = ops->cursor_open(txn, PDCBB_T_OBJIDS, &cur);
    if (rc != PDCBB_OK)
        return rc;
    rc = ops->cursor_seek(cur, (pdcbb_val_t){prefix, 8}, &k, &v);
    while (rc == PDCBB_OK && k.len == 16 && memcmp(k.data, prefix, 8) == 0) {
        uint64_t *g = dw_grow(ids, n, &cap, sizeof(*ids));
        if (g == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        ids = g;
        ids[n++] = pdcbb_key_get_u64((const uint8_t *)k.data + 8);
        rc = ops->cursor_next(cur, &k, &v);
    }
    ops->cursor_close(cur);
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND) {
        free(ids);
        return rc;
    }
    *out = ids;
    *nout = (uint32_t)n;
    return PDCBB_OK;
}

/* Placement map of obj (key = object id + seq; value daemon, ndim, offsets, sizes, bytes). */
static pdcbb_err_t dw_read_map(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t id,
                               uint32_t nservers, pdcbb_drain_map_entry_t **out, uint32_t *nout)
{
    uint8_t prefix[8];
    pdcbb_cursor_t *cur;
    pdcbb_val_t k, v;
    pdcbb_drain_map_entry_t *es = NULL;
    size_t n = 0, cap = 0;
    pdcbb_key_u64(prefix, id);
    pdcbb_err_t rc = ops->cursor_open(txn, PDCBB_T_MAP, &cur);
    if (rc != PDCBB_OK)
        return rc;
    rc = ops->cursor_seek(cur, (pdcbb_val_t){prefix, 8}, &k, &v);
    while (rc == PDCBB_OK && k.len == 16 && memcmp(k.data, prefix, 8) == 0) {
        uint64_t vals[3 + 2 * PDCBB_REGION_NDIM_MAX];
        if (v.len % 8 != 0 || v.len > sizeof(vals) || v.len < 8 * 3) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        memcpy(vals, v.data, v.len);
        size_t nv = v.len / 8;
        pdcbb_box_t b;
        if (vals[1] == 0 || vals[1] > PDCBB_REGION_NDIM_MAX || nv != 3 + 2 * vals[1] ||
            vals[0] >= nservers ||
            pdcbb_box_make(&b, (uint32_t)vals[1], vals + 2, vals + 2 + vals[1]) != PDCBB_OK) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        pdcbb_drain_map_entry_t *g = dw_grow(es, n, &cap, sizeof(*es));
        if (g == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        es = g;
        es[n].seq = pdcbb_key_get_u64((const uint8_t *)k.data + 8);
        es[n].rank = (uint32_t)vals[0];
        es[n].box = b;
        n++;
        rc = ops->cursor_next(cur, &k, &v);
    }
    ops->cursor_close(cur);
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND) {
        free(es);
        return rc;
    }
    *out = es;
    *nout = (uint32_t)n;
    return PDCBB_OK;
}

static pdcbb_err_t dw_read_conts(dw_ctx_t *c, dw_rank_t *r, const pdcbb_store_ops_t *ops,
                                 pdcbb_txn_t *txn)
{
    pdcbb_cursor_t *cur;
    pdcbb_val_t k, v;
    pdcbb_err_t rc = ops->cursor_open(txn, PDCBB_T_CONT, &cur);
    if (rc != PDCBB_OK)
        return rc;
    rc = ops->cursor_seek(cur, (pdcbb_val_t){NULL, 0}, &k, &v);
    while (rc == PDCBB_OK) {
        pdcbb_cont_info_rep_t rec;
        pdcbb_err_t d = pdcbb_body_decode(PDCBB_OP_CONT_INFO, 1, v.data, v.len, &rec);
        if (d != PDCBB_OK || k.len != 8) {
            rc = d != PDCBB_OK ? d : PDCBB_ERR_STORE;
            break;
        }
        pdcbb_drain_cont_t dc = {.id = rec.id, .name = (char *)rec.name,
                                 .lifetime = rec.lifetime, .rank = r->rank};
        rc = dw_read_tags(ops, txn, rec.id, &dc.tags, &dc.ntags);
        if (rc == PDCBB_OK) {
            rc = dw_read_objids(ops, txn, rec.id, &dc.obj_ids, &dc.nobj_ids);
            if (rc == PDCBB_OK)
                rc = pdcbb_drain_add_cont(r->m, &dc, NULL);
            free(dc.obj_ids);
            dw_tags_free(dc.tags, dc.ntags);
        }
        pdcbb_body_free(PDCBB_OP_CONT_INFO, 1, &rec);
        if (rc != PDCBB_OK)
            break;
        rc = ops->cursor_next(cur, &k, &v);
    }
    ops->cursor_close(cur);
    (void)c;
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

/* The name of container id if this rank holds its record ("" otherwise), malloc'ed. */
static char *dw_cont_name(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t id)
{
    uint8_t key[8];
    pdcbb_val_t v;
    char *name = NULL;
    pdcbb_key_u64(key, id);
    if (id != 0 && ops->get(txn, PDCBB_T_CONT, (pdcbb_val_t){key, 8}, &v) == PDCBB_OK) {
        pdcbb_cont_info_rep_t rec;
        if (pdcbb_body_decode(PDCBB_OP_CONT_INFO, 1, v.data, v.len, &rec) == PDCBB_OK) {
            name = strdup(rec.name ? rec.name : "");
            pdcbb_body_free(PDCBB_OP_CONT_INFO, 1, &rec);
            return name;
        }
    }
    return strdup("");
}

static const dw_layout_t *dw_find_layout(const dw_rank_t *r, uint64_t obj)
{
    for (size_t i = 0; i < r->nlayouts; i++)
        if (r->layouts[i].obj == obj)
            return &r->layouts[i];
    return NULL;
}

static pdcbb_err_t dw_read_objs(dw_ctx_t *c, dw_rank_t *r, const pdcbb_store_ops_t *ops,
                                pdcbb_txn_t *txn)
{
    pdcbb_cursor_t *cur;
    pdcbb_val_t k, v;
    size_t cap = 0;
    pdcbb_err_t rc = ops->cursor_open(txn, PDCBB_T_OBJ, &cur);
    if (rc != PDCBB_OK)
        return rc;
    rc = ops->cursor_seek(cur, (pdcbb_val_t){NULL, 0}, &k, &v);
    while (rc == PDCBB_OK) {
        pdcbb_obj_info_rep_t rec;
        pdcbb_err_t d = pdcbb_body_decode(PDCBB_OP_OBJ_INFO, 1, v.data, v.len, &rec);
        if (d != PDCBB_OK || k.len != 8) {
            rc = d != PDCBB_OK ? d : PDCBB_ERR_STORE;
            break;
        }
        if (rec.dims_count > PDCBB_REGION_NDIM_MAX) {
            pdcbb_body_free(PDCBB_OP_OBJ_INFO, 1, &rec);
            rc = PDCBB_ERR_STORE;
            break;
        }
        pdcbb_drain_object_t o;
        memset(&o, 0, sizeof(o));
        o.id = rec.id;
        o.cont_id = rec.cont_id;
        o.name = (char *)(rec.name ? rec.name : "");
        o.container = dw_cont_name(ops, txn, rec.cont_id);
        o.rank = r->rank;
        o.type = rec.type;
        const dw_layout_t *lay = dw_find_layout(r, rec.id);
        size_t tsize = pdcbb_type_size(rec.type);
        o.element_size = (uint32_t)(lay ? lay->unit : tsize ? tsize : 1);
        o.partition = rec.partition;
        o.consistency = rec.consistency;
        o.user_id = rec.user_id;
        o.time_step = rec.time_step;
        o.ndim = rec.dims_count;
        if (rec.dims_count)
            memcpy(o.dims, rec.dims, 8 * (size_t)rec.dims_count);
        o.app_name = (char *)(rec.app_name ? rec.app_name : "");
        o.data_loc = (char *)(rec.data_loc ? rec.data_loc : "");
        o.tags_str = (char *)(rec.tags ? rec.tags : "");
        rc = o.container ? PDCBB_OK : PDCBB_ERR_NOMEM;
        if (rc == PDCBB_OK && o.ndim > 0 && o.dims[0] == PDCBB_DIM_UNLIMITED) {
            /* The extent its home daemon kept (0 rows when never extended nor written). */
            rc = pdcbb_extent_read(ops, txn, rec.id, &o.current_rows);
            o.has_current_dims = 1;
        }
        if (rc == PDCBB_OK)
            rc = dw_read_tags(ops, txn, rec.id, &o.tags, &o.ntags);
        if (rc == PDCBB_OK && (rec.partition == 2 || rec.partition == 3))
            rc = dw_read_map(ops, txn, rec.id, c->nservers, &o.map, &o.nmap);
        if (rc == PDCBB_OK)
            rc = pdcbb_drain_add_object(r->m, &o, NULL);
        if (rc == PDCBB_OK) {
            dw_objinfo_t *g = dw_grow(r->objs, r->nobjs, &cap, sizeof(*g));
            if (g == NULL) {
                rc = PDCBB_ERR_NOMEM;
            } else {
                r->objs = g;
                dw_objinfo_t *oi = &r->objs[r->nobjs++];
                oi->id = o.id;
                oi->partition = o.partition;
                oi->ndim = o.ndim;
                memcpy(oi->dims, o.dims, sizeof(oi->dims));
            }
        }
        free(o.container);
        free(o.map);
        dw_tags_free(o.tags, o.ntags);
        pdcbb_body_free(PDCBB_OP_OBJ_INFO, 1, &rec);
        if (rc != PDCBB_OK)
            break;
        rc = ops->cursor_next(cur, &k, &v);
    }
    ops->cursor_close(cur);
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

static pdcbb_err_t dw_read_layouts(dw_rank_t *r, const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn)
{
    pdcbb_cursor_t *cur;
    pdcbb_val_t k, v;
    size_t cap = 0;
    pdcbb_err_t rc = ops->cursor_open(txn, PDCBB_T_DATA, &cur);
    if (rc != PDCBB_OK)
        return rc;
    rc = ops->cursor_seek(cur, (pdcbb_val_t){NULL, 0}, &k, &v);
    while (rc == PDCBB_OK) {
        uint64_t rec[2 + PDCBB_REGION_NDIM_MAX];
        if (k.len != 8 || v.len % 8 != 0 || v.len < 24 || v.len > sizeof(rec)) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        memcpy(rec, v.data, v.len);
        if (rec[0] == 0 || rec[0] > 64 || rec[1] == 0 || rec[1] > PDCBB_REGION_NDIM_MAX ||
            v.len != 8 * (2 + rec[1])) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        dw_layout_t *g = dw_grow(r->layouts, r->nlayouts, &cap, sizeof(*g));
        if (g == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        r->layouts = g;
        dw_layout_t *l = &r->layouts[r->nlayouts++];
        memset(l, 0, sizeof(*l));
        l->obj = pdcbb_key_get_u64(k.data);
        l->unit = rec[0];
        l->ndim = (uint32_t)rec[1];
        memcpy(l->dims, rec + 2, 8 * (size_t)l->ndim);
        rc = ops->cursor_next(cur, &k, &v);
    }
    ops->cursor_close(cur);
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

/* Read everything of rank r's store into r (one read transaction). */
static pdcbb_err_t dw_read_store(dw_ctx_t *c, dw_rank_t *r, const char *store_dir)
{
    const pdcbb_store_ops_t *ops = &pdcbb_store_lmdb;
    pdcbb_store_t *st = NULL;
    pdcbb_txn_t *txn = NULL;
    char serr[512] = "";
    pdcbb_err_t rc = ops->open(store_dir, c->map_size, &st, serr, sizeof(serr));
    if (rc != PDCBB_OK)
        return dw_fail(c, rc, "cannot open the store of rank %u: %s", r->rank,
                       serr[0] ? serr : pdcbb_strerror(rc));
    if ((rc = ops->txn_begin(st, 0, &txn)) == PDCBB_OK) {
        /* layouts first: objects take their element size from them */
        rc = dw_read_layouts(r, ops, txn);
        if (rc == PDCBB_OK)
            rc = dw_read_conts(c, r, ops, txn);
        if (rc == PDCBB_OK)
            rc = dw_read_objs(c, r, ops, txn);
        if (rc == PDCBB_OK) {
            /* KV objects: one dump per KV object this rank holds records or meta of */
            char rel[64];
            snprintf(rel, sizeof(rel), "%s/rank-%05u", PDCBB_DRAIN_KV_DIR, r->rank);
            pdcbb_drain_kvstore_stats_t ks = {0};
            pdcbb_drain_kvstore_req_t kq = {.rank = r->rank, .dir = c->drain_dir,
                                            .rel_prefix = rel, .stats = &ks};
            char kerr[PDCBB_DRAIN_ERR_LEN] = "";
            rc = pdcbb_drain_kv_from_store(ops, txn, &kq, r->m, kerr, sizeof(kerr));
            if (rc != PDCBB_OK) {
                ops->txn_abort(txn);
                ops->close(st);
                return dw_fail(c, rc, "cannot drain the KV objects of rank %u: %s", r->rank,
                               kerr);
            }
            if (ks.objects > 0)
                PDCBB_INFO("rank %u: %" PRIu64 " KV dumps, %" PRIu64 " records, %" PRIu64
                           " bytes, verified",
                           r->rank, ks.objects, ks.records, ks.bytes);
        }
        ops->txn_abort(txn);
    }
    ops->close(st);
    if (rc != PDCBB_OK)
        return dw_fail(c, rc, "cannot read the store of rank %u in %s: %s", r->rank, store_dir,
                       pdcbb_strerror(rc));
    return PDCBB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* The data plan                                                                              */

/* A candidate extent: bytes [off, off+len) of a node-local data file (= of the object). */
typedef struct dw_piece {
    uint64_t obj;
    uint32_t src;          /* index into the plan's source files */
    int conditional;       /* kept only if some byte is non-zero (see the file comment) */
    uint64_t off, len;
    /* filled by the reader */
    int kept;
    uint64_t file_offset;
    uint32_t crc;
} dw_piece_t;

typedef struct dw_plan {
    dw_piece_t *pieces;
    size_t npieces, cap;
    char **paths;          /* source files (the pieces of each are consecutive) */
    size_t nsrc, capsrc;
    uint64_t bytes;        /* sum of the pieces' lengths */
} dw_plan_t;

static void dw_plan_free(dw_plan_t *p)
{
    for (size_t i = 0; i < p->nsrc; i++)
        free(p->paths[i]);
    free(p->paths);
    free(p->pieces);
    memset(p, 0, sizeof(*p));
}

/* Append [off, off+len) cut at the extent limit (conditional pieces at one buffer). */
static pdcbb_err_t dw_plan_add(dw_plan_t *p, uint64_t obj, uint32_t src, uint64_t off,
                               uint64_t len, int conditional)
{
    uint64_t max = conditional ? DW_BUF_SIZE : PDCBB_DRAIN_EXTENT_MAX;
    while (len > 0) {
        uint64_t n = len < max ? len : max;
        dw_piece_t *g = dw_grow(p->pieces, p->npieces, &p->cap, sizeof(*g));
        if (g == NULL)
            return PDCBB_ERR_NOMEM;
        p->pieces = g;
        p->pieces[p->npieces++] =
            (dw_piece_t){.obj = obj, .src = src, .conditional = conditional, .off = off, .len = n};
        p->bytes += n;
        off += n;
        len -= n;
    }
    return PDCBB_OK;
}

/* How a data range is clipped. */
typedef enum { DW_CLIP_NONE, DW_CLIP_STRIPE, DW_CLIP_COND } dw_clip_t;

/* The stripe of rank along a REGION_STATIC object's split dimension, as the client splits. */
typedef struct dw_stripe {
    int dim;               /* -1: not split */
    uint64_t sb;           /* bytes per index of dim */
    uint64_t period;       /* bytes per index of dim - 1 (dim > 0), else 0 */
    uint64_t lo, hi;       /* stripe [lo, hi) along dim, hi <= dims[dim] unless dim 0 */
} dw_stripe_t;

static void dw_stripe_of(const uint64_t *dims, uint32_t ndim, uint64_t unit, uint32_t nservers,
                         uint32_t rank, dw_stripe_t *s)
{
    s->dim = -1;
    if (nservers <= 1)
        return;
    for (uint32_t d = 0; d < ndim; d++)
        if (dims[d] != PDCBB_DIM_UNLIMITED && dims[d] >= nservers) {
            s->dim = (int)d;
            break;
        }
    if (s->dim < 0)
        return;
    uint32_t d = (uint32_t)s->dim;
    uint64_t sb = unit;
    for (uint32_t i = d + 1; i < ndim; i++)
        sb *= dims[i]; /* bounded: the daemon checked the layout's strides */
    uint64_t w = (dims[d] + nservers - 1) / nservers;
    s->sb = sb;
    s->lo = (uint64_t)rank * w;
    /* the last stripe takes everything beyond: relevant for dim 0 only */
    s->hi = rank + 1 == nservers ? (d == 0 ? UINT64_MAX : dims[d]) : (uint64_t)(rank + 1) * w;
    if (d > 0 && s->hi > dims[d])
        s->hi = dims[d];
    s->period = d > 0 ? sb * dims[d] : 0;
}

/* Add the range [a, b) split into in-stripe (kept) and out-of-stripe (dropped or conditional)
 * runs. */
static pdcbb_err_t dw_plan_striped(dw_plan_t *p, uint64_t obj, uint32_t src, uint64_t a,
                                   uint64_t b, const dw_stripe_t *s, dw_clip_t clip)
{
    pdcbb_err_t rc = PDCBB_OK;
    uint64_t pos = a;
    while (pos < b && rc == PDCBB_OK) {
        uint64_t in_lo, in_hi; /* the stripe's bytes in the period containing pos */
        if (s->dim == 0) {
            in_lo = s->lo > UINT64_MAX / s->sb ? UINT64_MAX : s->lo * s->sb;
            in_hi = s->hi > UINT64_MAX / s->sb ? UINT64_MAX : s->hi * s->sb;
        } else {
            uint64_t base = pos - pos % s->period;
            in_lo = base + s->lo * s->sb;
            in_hi = base + s->hi * s->sb;
        }
        uint64_t next;
        int inside;
        if (pos < in_lo) {
            next = in_lo;
            inside = 0;
        } else if (pos < in_hi) {
            next = in_hi;
            inside = 1;
        } else {
            next = s->dim == 0 ? b : pos - pos % s->period + s->period;
            inside = 0;
        }
        if (next > b)
            next = b;
        if (inside)
            rc = dw_plan_add(p, obj, src, pos, next - pos, 0);
        else if (clip == DW_CLIP_COND)
            rc = dw_plan_add(p, obj, src, pos, next - pos, 1);
        pos = next;
    }
    return rc;
}

/* Plan the extents of one data file. */
static pdcbb_err_t dw_plan_object(dw_ctx_t *c, dw_rank_t *r, dw_plan_t *p, const dw_layout_t *l,
                                  const char *store_dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/objects/%016" PRIx64 ".dat", store_dir, l->obj) >=
        (int)sizeof(path))
        return dw_fail(c, PDCBB_ERR_TOO_BIG, "path of the data of object %#" PRIx64 " too long",
                       l->obj);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT)
            return PDCBB_OK; /* a layout without data (the object was created, never written) */
        return dw_fail(c, pdcbb_err_from_errno(errno), "cannot open %s: %s", path,
                       strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return dw_fail(c, pdcbb_err_from_errno(e), "cannot stat %s: %s", path, strerror(e));
    }
    /* Which bytes this rank owns (see the file comment). */
    dw_clip_t clip = DW_CLIP_NONE;
    const uint64_t *dims = l->dims;
    uint32_t ndim = l->ndim;
    if (pdcbb_meta_id_server(l->obj) == r->rank) {
        const dw_objinfo_t *oi = NULL;
        for (size_t i = 0; i < r->nobjs; i++)
            if (r->objs[i].id == l->obj)
                oi = &r->objs[i];
        if (oi == NULL) {
            PDCBB_WARN("rank %u: data file %s has no object record (a deleted object): skipped",
                       r->rank, path);
            close(fd);
            return PDCBB_OK;
        }
        if (oi->partition == DW_PARTITION_REGION_STATIC) {
            clip = DW_CLIP_STRIPE;
            if (oi->ndim == l->ndim)
                dims = oi->dims; /* the object's current dims, as the client splits them */
        }
    } else {
        clip = DW_CLIP_COND;
    }
    dw_stripe_t s;
    dw_stripe_of(dims, ndim, l->unit, c->nservers, r->rank, &s);
    if (s.dim < 0)
        clip = DW_CLIP_NONE;
    /* the object's size in bytes (UINT64_MAX: unlimited first dimension) */
    uint64_t limit = l->unit;
    for (uint32_t d = 0; d < l->ndim && limit != UINT64_MAX; d++) {
        if (l->dims[d] == PDCBB_DIM_UNLIMITED || __builtin_mul_overflow(limit, l->dims[d], &limit))
            limit = UINT64_MAX;
    }
    if (dims != l->dims && dims[0] != PDCBB_DIM_UNLIMITED && limit != UINT64_MAX) {
        uint64_t row = limit / (l->dims[0] ? l->dims[0] : 1);
        uint64_t cur;
        if (!__builtin_mul_overflow(row, dims[0], &cur) && cur < limit)
            limit = cur; /* shrunk since the first write: data beyond was discarded */
    }
    uint64_t size = (uint64_t)st.st_size < limit ? (uint64_t)st.st_size : limit;

    size -= size % l->unit; /* a partial element at the end was never completely written */
    size_t before = p->npieces;
    uint32_t src = (uint32_t)p->nsrc;
    uint64_t pos = 0, ra = 0, rb = 0;
    int have = 0;
    pdcbb_err_t rc = PDCBB_OK;
    while (pos < size && rc == PDCBB_OK) {
        off_t d = lseek(fd, (off_t)pos, SEEK_DATA);
        if (d < 0) {
            if (errno != ENXIO) /* ENXIO: no data after pos */
                rc = dw_fail(c, pdcbb_err_from_errno(errno), "cannot scan %s: %s", path,
                             strerror(errno));
            break;
        }
        if ((uint64_t)d >= size)
            break;
        off_t h = lseek(fd, d, SEEK_HOLE);
        uint64_t a = (uint64_t)d, b = h < 0 || (uint64_t)h > size ? size : (uint64_t)h;
        pos = b;
        /* whole elements: widen to element boundaries */
        a -= a % l->unit;
        if (b % l->unit)
            b += l->unit - b % l->unit;
        if (b > size)
            b = size;
        if (a >= b)
            continue;
        if (have && a <= rb) { /* touches the previous range after widening */
            if (b > rb)
                rb = b;
            continue;
        }
        if (have)
            rc = clip == DW_CLIP_NONE ? dw_plan_add(p, l->obj, src, ra, rb - ra, 0)
                                      : dw_plan_striped(p, l->obj, src, ra, rb, &s, clip);
        ra = a;
        rb = b;
        have = 1;
    }
    if (have && rc == PDCBB_OK)
        rc = clip == DW_CLIP_NONE ? dw_plan_add(p, l->obj, src, ra, rb - ra, 0)
                                  : dw_plan_striped(p, l->obj, src, ra, rb, &s, clip);
    if (rc != PDCBB_OK) {
        close(fd);
        if (rc == PDCBB_ERR_NOMEM)
            return dw_fail(c, rc, "out of memory planning the data of rank %u", r->rank);
        return rc;
    }
    if (p->npieces == before) {
        close(fd);
        return PDCBB_OK;
    }
    close(fd); /* the reader opens the files one at a time */
    char **gp = dw_grow(p->paths, p->nsrc, &p->capsrc, sizeof(*gp));
    if (gp == NULL || (gp[p->nsrc] = strdup(path)) == NULL) {
        if (gp != NULL)
            p->paths = gp;
        return dw_fail(c, PDCBB_ERR_NOMEM, "out of memory");
    }
    p->paths = gp;
    p->nsrc++;
    return PDCBB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Copy and verify: three threads over one plan.                                              */
/*   reader   (thread) preads the node-local files into buffers, CRCs each extent;           */
/*   writer   (caller) writes the full buffers to the data file, sequentially;               */
/*   verifier (thread) re-reads each extent from the data file once it is written and        */
/*            compares its CRC.                                                              */
/* The verifier's re-read goes through the page cache, before or after fdatasync alike, so it */
/* runs behind the writer instead of after the sync; the caller syncs when all are done.     */

typedef struct dw_buf {
    uint8_t *data;
    size_t used;
    size_t pieces_done;    /* pieces the reader had finished when it handed this buffer over */
    int last;              /* the reader is done after this buffer */
} dw_buf_t;

typedef struct dw_copy {
    dw_plan_t *plan;
    dw_buf_t bufs[DW_NBUF];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* ring: the reader fills bufs[filled % N], the writer drains bufs[drained % N] */
    uint64_t filled, drained;
    int stop;              /* the writer or the verifier failed: everybody stops */
    int done;              /* the writer wrote the last buffer (or gave up) */
    /* what the verifier may check: pieces [0, pieces_known) are decided, bytes [0, written)
     * of the data file are written */
    size_t pieces_known;
    uint64_t written;
    /* results */
    pdcbb_err_t rrc, vrc;
    char rerr[512], verr[512];
    uint64_t out_bytes;    /* bytes the reader emitted (= the data file's size) */
    uint64_t verified;     /* bytes the verifier checked */
    int vfd;               /* the data file, opened for reading */
} dw_copy_t;

static int dw_all_zero(const uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i < n && ((uintptr_t)(p + i) & 7); i++)
        if (p[i])
            return 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w)
            return 0;
    }
    for (; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static int dw_pread_full(int fd, uint8_t *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, buf + done, len - done, (off_t)(off + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = EIO; /* shorter than it was when planned */
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/* Wait for an empty buffer; NULL when told to stop. */
static dw_buf_t *dw_reader_get(dw_copy_t *cp)
{
    pthread_mutex_lock(&cp->mu);
    while (!cp->stop && cp->filled - cp->drained >= DW_NBUF)
        pthread_cond_wait(&cp->cv, &cp->mu);
    dw_buf_t *b = cp->stop ? NULL : &cp->bufs[cp->filled % DW_NBUF];
    pthread_mutex_unlock(&cp->mu);
    if (b) {
        b->used = 0;
        b->last = 0;
    }
    return b;
}

static void dw_reader_put(dw_copy_t *cp, dw_buf_t *b, size_t pieces_done)
{
    b->pieces_done = pieces_done;
    pthread_mutex_lock(&cp->mu);
    cp->filled++;
    pthread_cond_broadcast(&cp->cv);
    pthread_mutex_unlock(&cp->mu);
}

static void *dw_reader(void *arg)
{
    dw_copy_t *cp = arg;
    dw_plan_t *p = cp->plan;
    uint64_t out = 0;
    int fd = -1;
    uint32_t fd_src = UINT32_MAX;
    size_t i = 0;
    dw_buf_t *b = dw_reader_get(cp);
    for (; b != NULL && i < p->npieces; i++) {
        dw_piece_t *pc = &p->pieces[i];
        if (pc->src != fd_src) {
            if (fd >= 0)
                close(fd);
            fd_src = pc->src;
            if ((fd = open(p->paths[fd_src], O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
                goto read_failed;
            posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        }
        if (pc->conditional) {
            /* whole in one buffer (planned at most DW_BUF_SIZE), kept only if non-zero */
            if (DW_BUF_SIZE - b->used < pc->len) {
                dw_reader_put(cp, b, i);
                if ((b = dw_reader_get(cp)) == NULL)
                    break;
            }
            if (dw_pread_full(fd, b->data + b->used, (size_t)pc->len, pc->off) != 0)
                goto read_failed;
            if (dw_all_zero(b->data + b->used, (size_t)pc->len))
                continue;
            pc->kept = 1;
            pc->file_offset = out;
            pc->crc = pdcbb_crc32c(0, b->data + b->used, (size_t)pc->len);
            b->used += (size_t)pc->len;
            out += pc->len;
            continue;
        }
        pc->kept = 1;
        pc->file_offset = out;
        pc->crc = 0;
        uint64_t done = 0;
        while (done < pc->len) {
            if (b->used == DW_BUF_SIZE) {
                dw_reader_put(cp, b, i);
                if ((b = dw_reader_get(cp)) == NULL)
                    break;
            }
            size_t n = DW_BUF_SIZE - b->used;
            if (n > pc->len - done)
                n = (size_t)(pc->len - done);
            if (dw_pread_full(fd, b->data + b->used, n, pc->off + done) != 0)
                goto read_failed;
            pc->crc = pdcbb_crc32c(pc->crc, b->data + b->used, n);
            b->used += n;
            done += n;
            out += n;
        }
        continue;
    read_failed: {
        int e = errno;
        snprintf(cp->rerr, sizeof(cp->rerr), "cannot read %s at offset %" PRIu64 ": %s",
                 p->paths[pc->src], pc->off, strerror(e));
        pthread_mutex_lock(&cp->mu);
        cp->rrc = e == EIO ? PDCBB_ERR_IO : pdcbb_err_from_errno(e);
        pthread_cond_broadcast(&cp->cv);
        pthread_mutex_unlock(&cp->mu);
        b = NULL; /* the writer stops at the error, not at a last buffer */
        break;
    }
    }
    if (fd >= 0)
        close(fd);
    cp->out_bytes = out;
    if (b != NULL) { /* NULL: stopped by the writer or the verifier, or by a read error */
        b->last = 1;
        dw_reader_put(cp, b, p->npieces);
    }
    return NULL;
}

static void *dw_verifier(void *arg)
{
    dw_copy_t *cp = arg;
    const dw_plan_t *p = cp->plan;
    size_t bufsz = (size_t)4 << 20;
    uint8_t *buf = malloc(bufsz);
    pdcbb_err_t rc = buf ? PDCBB_OK : PDCBB_ERR_NOMEM;
    char msg[512] = "out of memory";
    for (size_t i = 0; rc == PDCBB_OK && i < p->npieces; i++) {
        const dw_piece_t *pc = &p->pieces[i];
        int go = 0;
        pthread_mutex_lock(&cp->mu);
        for (;;) {
            if (cp->stop || cp->rrc != PDCBB_OK)
                break;
            if (cp->pieces_known > i && (!pc->kept || cp->written >= pc->file_offset + pc->len)) {
                go = 1;
                break;
            }
            if (cp->done)
                break;
            pthread_cond_wait(&cp->cv, &cp->mu);
        }
        pthread_mutex_unlock(&cp->mu);
        if (!go)
            break;
        if (!pc->kept)
            continue;
        uint32_t crc = 0;
        uint64_t done = 0;
        while (done < pc->len) {
            size_t n = pc->len - done < bufsz ? (size_t)(pc->len - done) : bufsz;
            if (dw_pread_full(cp->vfd, buf, n, pc->file_offset + done) != 0) {
                rc = PDCBB_ERR_IO;
                snprintf(msg, sizeof(msg), "re-reading offset %" PRIu64 ": %s",
                         pc->file_offset + done, strerror(errno));
                break;
            }
            crc = pdcbb_crc32c(crc, buf, n);
            done += n;
        }
        if (rc == PDCBB_OK && crc != pc->crc) {
            rc = PDCBB_ERR_IO;
            snprintf(msg, sizeof(msg),
                     "checksum mismatch at offset %" PRIu64 " (%" PRIu64 " bytes of object %#" PRIx64
                     "): crc32c %08x of the node-local bytes, %08x read back",
                     pc->file_offset, pc->len, pc->obj, pc->crc, crc);
        }
        if (rc == PDCBB_OK)
            cp->verified += pc->len;
    }
    free(buf);
    if (rc != PDCBB_OK) {
        pthread_mutex_lock(&cp->mu);
        snprintf(cp->verr, sizeof(cp->verr), "%s", msg);
        cp->vrc = rc;
        cp->stop = 1;
        pthread_cond_broadcast(&cp->cv);
        pthread_mutex_unlock(&cp->mu);
    }
    return NULL;
}

static int dw_write_full(int fd, const uint8_t *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = ENOSPC;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/*
 * Copy the plan into fd (the data file at path) and verify it; *out_bytes gets its size. The
 * caller syncs afterwards.
 */
static pdcbb_err_t dw_copy(dw_ctx_t *c, uint32_t rank, dw_plan_t *p, int fd, const char *path,
                           uint64_t *out_bytes)
{
    dw_copy_t cp;
    memset(&cp, 0, sizeof(cp));
    cp.plan = p;
    pthread_mutex_init(&cp.mu, NULL);
    pthread_cond_init(&cp.cv, NULL);
    pdcbb_err_t rc = PDCBB_OK;
    int started = 0;
    pthread_t rth, vth;
    if ((cp.vfd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        int e = errno;
        pthread_mutex_destroy(&cp.mu);
        pthread_cond_destroy(&cp.cv);
        return dw_fail_errno(c, e, "cannot re-read", path);
    }
    for (int i = 0; i < DW_NBUF; i++)
        if ((cp.bufs[i].data = malloc(DW_BUF_SIZE)) == NULL)
            rc = PDCBB_ERR_NOMEM;
    if (rc == PDCBB_OK && pthread_create(&rth, NULL, dw_reader, &cp) == 0)
        started |= 1;
    if (rc == PDCBB_OK && (started & 1) && pthread_create(&vth, NULL, dw_verifier, &cp) == 0)
        started |= 2;
    if (started != 3) {
        pthread_mutex_lock(&cp.mu);
        cp.stop = 1;
        pthread_cond_broadcast(&cp.cv);
        pthread_mutex_unlock(&cp.mu);
        rc = PDCBB_ERR_NOMEM;
    }
    int werr = 0;
    uint64_t pos = 0, synced = 0;
    while (rc == PDCBB_OK) {
        pthread_mutex_lock(&cp.mu);
        while (cp.filled == cp.drained && cp.rrc == PDCBB_OK && !cp.stop)
            pthread_cond_wait(&cp.cv, &cp.mu);
        int have = cp.filled > cp.drained && !cp.stop;
        pthread_mutex_unlock(&cp.mu);
        if (!have)
            break; /* the reader or the verifier failed */
        dw_buf_t *b = &cp.bufs[cp.drained % DW_NBUF];
        if (b->used > 0 && dw_write_full(fd, b->data, b->used) != 0) {
            werr = errno;
            break;
        }
        pos += b->used;
        /* start writeback behind the writer, so that the final sync finds little to do */
        if (pos - synced >= ((uint64_t)64 << 20)) {
            sync_file_range(fd, (off_t)synced, (off_t)(pos - synced), SYNC_FILE_RANGE_WRITE);
            synced = pos;
        }
        c->done_bytes += b->used;
        int last = b->last;
        pthread_mutex_lock(&cp.mu);
        cp.drained++;
        cp.written = pos;
        cp.pieces_known = b->pieces_done;
        pthread_cond_broadcast(&cp.cv);
        pthread_mutex_unlock(&cp.mu);
        dw_progress(c, rank, 0);
        if (last)
            break;
    }
    pthread_mutex_lock(&cp.mu);
    cp.done = 1;
    if (werr || rc != PDCBB_OK)
        cp.stop = 1;
    pthread_cond_broadcast(&cp.cv);
    pthread_mutex_unlock(&cp.mu);
    if (started & 1)
        pthread_join(rth, NULL);
    if (started & 2)
        pthread_join(vth, NULL);
    for (int i = 0; i < DW_NBUF; i++)
        free(cp.bufs[i].data);
    pthread_mutex_destroy(&cp.mu);
    pthread_cond_destroy(&cp.cv);
    /* verified: its pages need not stay in the node's page cache (dropped once synced) */
    int vfd = cp.vfd;
    if (rc != PDCBB_OK) {
        close(vfd);
        return dw_fail(c, rc, "out of memory for the copy of rank %u", rank);
    }
    if (werr) {
        close(vfd);
        return dw_fail_errno(c, werr, "cannot write", path);
    }
    close(vfd);
    if (cp.rrc != PDCBB_OK)
        return dw_fail(c, cp.rrc, "%s", cp.rerr);
    if (cp.vrc != PDCBB_OK)
        return dw_fail(c, cp.vrc, "verification of %s failed: %s", path, cp.verr);
    if (cp.verified != cp.out_bytes || pos != cp.out_bytes)
        return dw_fail(c, PDCBB_ERR_INTERNAL,
                       "%s: %" PRIu64 " bytes emitted, %" PRIu64 " written, %" PRIu64 " verified",
                       path, cp.out_bytes, pos, cp.verified);
    *out_bytes = cp.out_bytes;
    return PDCBB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* One rank                                                                                   */

static pdcbb_err_t dw_rank_drain(dw_ctx_t *c, uint32_t rank, const char *part_path,
                                 pdcbb_drain_node_stats_t *stats)
{
    const pdcbb_drain_job_t *job = c->job;
    double t0 = dw_now();
    char store_dir[PATH_MAX], pidpath[PATH_MAX], rel[64], data_path[PATH_MAX];
    pdcbb_err_t rc;
    if ((rc = pdcbb_jobdir_rank_path(job->job_dir, rank, "", store_dir, sizeof(store_dir))) !=
            PDCBB_OK ||
        (rc = pdcbb_jobdir_rank_path(job->job_dir, rank, "pid", pidpath, sizeof(pidpath))) !=
            PDCBB_OK)
        return dw_fail(c, rc, "job directory path %s too long", job->job_dir);
    snprintf(rel, sizeof(rel), "%s/rank-%05u.dat", PDCBB_DRAIN_DATA_DIR, rank);
    if (snprintf(data_path, sizeof(data_path), "%s/%s", c->drain_dir, rel) >=
        (int)sizeof(data_path))
        return dw_fail(c, PDCBB_ERR_TOO_BIG, "drain directory path %s too long", c->drain_dir);

    /* the daemon must be stopped: its store and files may still change */
    FILE *pf = fopen(pidpath, "re");
    if (pf != NULL) {
        long pid = 0;
        int got = fscanf(pf, "%ld", &pid);
        fclose(pf);
        if (got == 1 && pid > 0 && pdcbb_pid_alive((pid_t)pid))
            return dw_fail(c, PDCBB_ERR_BUSY,
                           "daemon rank %u (pid %ld) is still running; stop the job's daemons "
                           "before draining",
                           rank, pid);
    }
    struct stat st;
    if (stat(store_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return dw_fail(c, PDCBB_ERR_NOT_FOUND, "no store of rank %u: %s is missing", rank,
                       store_dir);

    dw_rank_t r;
    memset(&r, 0, sizeof(r));
    r.rank = rank;
    dw_plan_t plan;
    memset(&plan, 0, sizeof(plan));
    int fd = -1;
    if ((r.m = pdcbb_drain_new()) == NULL ||
        (r.m->user = strdup(job->user ? job->user : "")) == NULL ||
        (r.m->instance = strdup(job->instance ? job->instance : "")) == NULL) {
        rc = dw_fail(c, PDCBB_ERR_NOMEM, "out of memory");
        goto out;
    }
    r.m->job_id = job->job_id;
    r.m->uid = (uint32_t)job->uid;
    r.m->nservers = c->nservers;
    r.m->servers_per_node = job->servers_per_node;
    if ((rc = dw_read_store(c, &r, store_dir)) != PDCBB_OK)
        goto out;
    for (size_t i = 0; i < r.nlayouts; i++)
        if ((rc = dw_plan_object(c, &r, &plan, &r.layouts[i], store_dir)) != PDCBB_OK)
            goto out;
    c->total_bytes += plan.bytes;
    PDCBB_INFO("rank %u: %u containers, %u objects, %zu data files, %.1f MiB to drain", rank,
               r.m->nconts, r.m->nobjs, plan.nsrc, (double)plan.bytes / (1 << 20));

    fd = open(data_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        rc = dw_fail_errno(c, errno, "cannot create", data_path);
        goto out;
    }
    uint64_t size = 0;
    double t_copy = dw_now();
    if ((rc = dw_copy(c, rank, &plan, fd, data_path, &size)) != PDCBB_OK)
        goto out;
    c->total_bytes -= plan.bytes - size; /* all-zero runs that were dropped */
    double t_sync = dw_now();
    struct stat dst;
    if (fdatasync(fd) != 0) {
        rc = dw_fail_errno(c, errno, "cannot sync", data_path);
        goto out;
    }
    if (fstat(fd, &dst) != 0 || (uint64_t)dst.st_size != size) {
        rc = dw_fail(c, PDCBB_ERR_IO, "%s holds %lld bytes after the sync, %" PRIu64
                                      " were written",
                     data_path, (long long)dst.st_size, size);
        goto out;
    }
    /* written, verified and synced: its pages need not stay in the node's page cache */
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (close(fd) != 0) {
        fd = -1;
        rc = dw_fail_errno(c, errno, "cannot close", data_path);
        goto out;
    }
    fd = -1;
    PDCBB_DEBUG("rank %u: read store %.3f s, copy and verify %.3f s, sync %.3f s", rank,
                t_copy - t0, t_sync - t_copy, dw_now() - t_sync);

    /* the part: extents, the rank, then written atomically */
    uint64_t nextents = 0;
    for (size_t i = 0; i < plan.npieces && rc == PDCBB_OK; i++) {
        const dw_piece_t *pc = &plan.pieces[i];
        if (!pc->kept)
            continue;
        pdcbb_drain_extent_t e = {.object_id = pc->obj, .rank = rank, .object_offset = pc->off,
                                  .length = pc->len, .file = rel, .file_offset = pc->file_offset,
                                  .crc32c = pc->crc};
        rc = pdcbb_drain_add_extent(r.m, &e);
        nextents++;
    }
    double secs = dw_now() - t0;
    pdcbb_drain_rank_t dr = {.rank = rank, .node = (char *)(job->node ? job->node : ""),
                             .data_file = rel, .data_bytes = size, .seconds = secs};
    if (rc == PDCBB_OK)
        rc = pdcbb_drain_add_rank(r.m, &dr);
    if (rc != PDCBB_OK) {
        rc = dw_fail(c, rc, "cannot build the part of rank %u: %s", rank, pdcbb_strerror(rc));
        goto out;
    }
    char merr[PDCBB_DRAIN_ERR_LEN] = "";
    if ((rc = pdcbb_drain_write_manifest(r.m, part_path, merr, sizeof(merr))) != PDCBB_OK) {
        rc = dw_fail(c, rc, "cannot write %s: %s", part_path,
                     merr[0] ? merr : pdcbb_strerror(rc));
        goto out;
    }
    stats->ranks_drained++;
    stats->objects += r.m->nobjs;
    stats->extents += nextents;
    stats->bytes += size;
    PDCBB_INFO("rank %u: drained %" PRIu64 " bytes in %" PRIu64 " extents, %u objects in %.2f s "
               "(%.0f MB/s), verified",
               rank, size, nextents, r.m->nobjs, secs, secs > 0 ? (double)size / 1e6 / secs : 0.0);
out:
    if (fd >= 0)
        close(fd);
    if (rc != PDCBB_OK && access(part_path, F_OK) != 0)
        unlink(data_path); /* not part of any drain: give the space back */
    dw_plan_free(&plan);
    free(r.layouts);
    free(r.objs);
    pdcbb_drain_free(r.m);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */

/* mkdir that accepts an existing directory (never writable by group or others: the job's
 * drain directory's own mode decides who may read); errno on failure. */
static int dw_mkdir(const char *path)
{
    if (mkdir(path, 0755) == 0)
        return 0;
    if (errno != EEXIST)
        return -1;
    struct stat st;
    if (lstat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

pdcbb_err_t pdcbb_drain_node(const pdcbb_drain_job_t *job, pdcbb_drain_node_stats_t *stats,
                             pdcbb_drain_progress_fn progress, void *arg, char *err,
                             size_t errlen)
{
    dw_ctx_t c;
    memset(&c, 0, sizeof(c));
    pdcbb_drain_node_stats_t local;
    if (stats == NULL)
        stats = &local;
    memset(stats, 0, sizeof(*stats));
    if (err && errlen)
        err[0] = '\0';
    static const pdcbb_drain_job_t empty = {.job_dir = "(none)"};
    c.job = job && job->job_dir ? job : &empty;
    c.err = err;
    c.errlen = errlen;
    c.progress = progress;
    c.progress_arg = arg;
    c.t0 = c.last_log = c.last_cb = dw_now();
    if (job == NULL || job->job_dir == NULL || job->destination == NULL || job->job_id == 0 ||
        job->servers_per_node == 0 || job->nnodes == 0 || job->node_index >= job->nnodes ||
        (uint64_t)job->nnodes * job->servers_per_node > PDCBB_SERVERS_MAX)
        return dw_fail(&c, PDCBB_ERR_INVAL, "bad drain request (job id, nodes or servers per "
                                            "node missing)");
    c.nservers = job->nnodes * job->servers_per_node;

    /* the destination and the job's drain directory: one this job's prolog (or an earlier
     * `pdcbb drain`) made, recognised by its IDENTITY and owner; never one someone else made */
    char derr[PDCBB_DRAIN_ERR_LEN];
    pdcbb_err_t drc = pdcbb_drain_dest_check(job->destination, derr, sizeof(derr));
    if (drc != PDCBB_OK)
        return dw_fail(&c, drc, "%s", derr);
    drc = pdcbb_drain_dir_find(job->destination, job->job_id, job->instance, geteuid(),
                               c.drain_dir, sizeof(c.drain_dir), derr, sizeof(derr));
    if (drc == PDCBB_ERR_NOT_FOUND && job->may_create) {
        char note[PDCBB_DRAIN_ERR_LEN];
        drc = pdcbb_drain_dir_create(job->destination, job->job_id, job->instance, job->share,
                                     c.drain_dir, sizeof(c.drain_dir), note, sizeof(note), derr,
                                     sizeof(derr));
        if (drc == PDCBB_OK && note[0])
            PDCBB_WARN("%s", note);
    }
    if (drc != PDCBB_OK)
        return dw_fail(&c, drc, "%s", derr);
    snprintf(stats->drain_dir, sizeof(stats->drain_dir), "%s", c.drain_dir);
    char parts[PATH_MAX], data[PATH_MAX];
    snprintf(parts, sizeof(parts), "%s/%s", c.drain_dir, PDCBB_DRAIN_PARTS_DIR);
    snprintf(data, sizeof(data), "%s/%s", c.drain_dir, PDCBB_DRAIN_DATA_DIR);
    if (dw_mkdir(parts) != 0)
        return dw_fail_errno(&c, errno, "cannot create", parts);
    if (dw_mkdir(data) != 0)
        return dw_fail_errno(&c, errno, "cannot create", data);
    char kvdir[PATH_MAX];
    snprintf(kvdir, sizeof(kvdir), "%s/%s", c.drain_dir, PDCBB_DRAIN_KV_DIR);
    if (dw_mkdir(kvdir) != 0)
        return dw_fail_errno(&c, errno, "cannot create", kvdir);

    /* one drain of this job directory at a time */
    char lockpath[PATH_MAX];
    int lockfd = -1;
    if (pdcbb_jobdir_path(job->job_dir, "drain.lock", lockpath, sizeof(lockpath)) == PDCBB_OK &&
        (lockfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) >= 0 &&
        flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
        close(lockfd);
        return dw_fail(&c, PDCBB_ERR_BUSY, "another drain of %s is running", job->job_dir);
    }

    /* the job's LMDB map size (a smaller one than the store's would fail to open it) */
    pdcbb_config_t *cfg = malloc(sizeof(*cfg));
    char cpath[PATH_MAX];
    c.map_size = (uint64_t)16 << 30;
    if (cfg != NULL) {
        char cerr[PDCBB_CONFIG_ERR_LEN];
        pdcbb_config_init(cfg);
        if (pdcbb_jobdir_path(job->job_dir, "config.yaml", cpath, sizeof(cpath)) == PDCBB_OK &&
            pdcbb_config_load_file(cfg, cpath, PDCBB_SCOPE_ALL, cerr, sizeof(cerr)) == PDCBB_OK &&
            cfg->lmdb_map_size > 0)
            c.map_size = cfg->lmdb_map_size;
        free(cfg);
    }

    pdcbb_err_t rc = PDCBB_OK;
    uint32_t first = job->node_index * job->servers_per_node;
    PDCBB_INFO("draining ranks %u..%u of job %" PRIu64 " from %s to %s", first,
               first + job->servers_per_node - 1, job->job_id, job->job_dir, c.drain_dir);
    for (uint32_t k = 0; k < job->servers_per_node && rc == PDCBB_OK; k++) {
        uint32_t rank = first + k;
        char part[PATH_MAX];
        snprintf(part, sizeof(part), "%s/rank-%05u.yaml", parts, rank);
        if (access(part, F_OK) == 0) {
            /* resume only our own job's drain: a job id can be used twice (pdcbb run) */
            pdcbb_drain_t *old = NULL;
            char lerr[PDCBB_DRAIN_ERR_LEN] = "";
            rc = pdcbb_drain_load_manifest(part, &old, lerr, sizeof(lerr));
            if (rc != PDCBB_OK) {
                rc = dw_fail(&c, rc, "cannot read the existing part %s: %s", part, lerr);
                break;
            }
            const char *mine = job->instance ? job->instance : "";
            const char *theirs = old->instance ? old->instance : "";
            if (old->job_id != job->job_id || strcmp(mine, theirs) != 0) {
                rc = dw_fail(&c, PDCBB_ERR_EXISTS,
                             "%s already holds a drain of another job with id %" PRIu64
                             " (instance %s; this job's is %s): move it away or drain to "
                             "another destination",
                             c.drain_dir, old->job_id, theirs[0] ? theirs : "unknown",
                             mine[0] ? mine : "unknown");
                pdcbb_drain_free(old);
                break;
            }
            pdcbb_drain_free(old);
            PDCBB_INFO("rank %u: already drained (%s exists)", rank, part);
            stats->ranks_skipped++;
            continue;
        }
        rc = dw_rank_drain(&c, rank, part, stats);
    }
    if (rc == PDCBB_OK) {
        dw_progress(&c, first, 1);
        char ferr[PDCBB_DRAIN_ERR_LEN] = "";
        int complete = 0;
        rc = pdcbb_drain_finish(c.drain_dir, c.nservers, &complete, ferr, sizeof(ferr));
        if (rc != PDCBB_OK)
            rc = dw_fail(&c, rc, "cannot finish the drain in %s: %s", c.drain_dir,
                         ferr[0] ? ferr : pdcbb_strerror(rc));
        stats->complete = complete;
    }
    stats->seconds = dw_now() - c.t0;
    if (lockfd >= 0)
        close(lockfd); /* releases the lock */
    return rc;
}
