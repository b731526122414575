/*
 * bbd_query.c - data queries evaluated where the data lives (QUERY_EVAL, QUERY_VALUES), and the
 * per-block min/max that lets a query skip blocks that cannot match.
 *
 * A daemon evaluates a query over the pieces of an object the client names as its own (see
 * client/pdc_query_eval.c for who owns what under each placement), reading its data file of the
 * object; elements never written read as zero, as they do in a region read. Only the hits
 * travel back: their linear indices (or only their number), and for QUERY_VALUES the values at
 * given indices.
 *
 * Block statistics: the object's row-major index space is cut into blocks of PDCBB_QBLOCK
 * elements; for each block of a data file the daemon may know the min and max of the block's
 * elements in the file (holes count as zero). They are computed lazily, when a scan reads a
 * whole block, and kept in memory only. Every change of a data file marks the blocks it
 * touches unknown before any query can see the change: DATA_WRITE when it is accepted (queries
 * wait for answered writes: op_needs_drain), DATA_DIRECT WRITE and DONE (the client writes the
 * file itself in between: both marks are needed so that no stats computed from a half-written
 * file survive), DATA_DROP and DATA_RESIZE forget the object, and a restart starts with no
 * stats. So stats are never stale; at worst a block is scanned that could have been skipped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bbd.h"
#include "pdcbb_checked.h"
#include "pdcbb_log.h"
#include "pdcbb_query.h"
#include "pdcbb_region.h"

/* Most hits in one reply (8 bytes each): well under the message limit, at least one block. */
#define QUERY_HITS_MAX (1u << 21)
/* One QUERY_EVAL reads at most this many elements and visits at most this many blocks, then
 * answers "more" with where to resume (docs/PROTOCOL.md, "Limits per request"): a query of any
 * size keeps the daemon's event loop answering others. */
#define QUERY_STEP_ELEMS  ((uint64_t)PDCBB_QBLOCK * 32)
#define QUERY_STEP_BLOCKS ((uint64_t)1 << 16)

typedef struct bbd_qobj {
    struct bbd_qobj *next;
    uint64_t obj;
    int type;            /* the type the stats were computed for */
    uint64_t nblk;
    pdcbb_qstats_t *st;
    uint8_t *known;
} qobj_t;

static qobj_t *qobj_find(bbd_t *d, uint64_t obj)
{
    for (qobj_t *q = d->qobjs; q; q = q->next)
        if (q->obj == obj)
            return q;
    return NULL;
}

void bbd_query_forget(bbd_t *d, uint64_t obj)
{
    for (qobj_t **pp = &d->qobjs; *pp; pp = &(*pp)->next)
        if ((*pp)->obj == obj) {
            qobj_t *q = *pp;
            *pp = q->next;
            free(q->st);
            free(q->known);
            free(q);
            return;
        }
}

void bbd_query_cleanup(bbd_t *d)
{
    while (d->qobjs)
        bbd_query_forget(d, d->qobjs->obj);
}

void bbd_query_dirty_box(bbd_t *daemon, uint64_t obj, uint32_t ndim, const uint64_t *dims,
                         const void *boxp)
{
    const pdcbb_box_t *b = boxp;
    qobj_t *q = qobj_find(daemon, obj);
    uint64_t strides[PDCBB_REGION_NDIM_MAX];
    if (q == NULL)
        return;
    if (pdcbb_layout_strides(ndim, dims, 1, strides) != PDCBB_OK || b->ndim != ndim) {
        bbd_query_forget(daemon, obj);
        return;
    }
    uint64_t first = 0, last = 0;
    for (uint32_t d = 0; d < ndim; d++) {
        first += b->off[d] * strides[d];
        last += (b->off[d] + b->size[d] - 1) * strides[d];
    }
    for (uint64_t k = first / PDCBB_QBLOCK; k <= last / PDCBB_QBLOCK && k < q->nblk; k++)
        q->known[k] = 0;
}

/* Where a scan reads: this daemon's data file of the object, mapped (the page cache is read in
 * place, no copy). */
typedef struct dsrc {
    bbd_t *d; /* whose statistics */
    int fd; /* -1: no data here (zeros) */
    size_t unit;
    uint64_t obj;
    int type;
    const uint8_t *map; /* the file's first size bytes, or NULL */
    uint64_t size;
} dsrc_t;

static const void *dsrc_read(void *arg, uint64_t lin, uint64_t pk, uint64_t n, void *buf,
                             pdcbb_err_t *rc)
{
    dsrc_t *s = arg;
    uint64_t len = n * s->unit, off = lin * s->unit, have = 0;
    (void)pk;
    (void)rc;
    if (s->map && off + len <= s->size)
        return s->map + off;
    if (s->map && off < s->size) {
        have = s->size - off;
        memcpy(buf, s->map + off, have);
    }
    memset((uint8_t *)buf + have, 0, len - have); /* past the end of the file: never written */
    return buf;
}

static void dsrc_map(dsrc_t *s)
{
    struct stat st;
    s->map = NULL;
    s->size = 0;
    if (s->fd < 0 || fstat(s->fd, &st) != 0 || st.st_size <= 0)
        return;
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, s->fd, 0);
    if (m == MAP_FAILED) {
        PDCBB_ERROR("cannot map the data file of object %#" PRIx64 ": %s", s->obj,
                    strerror(errno));
        return; /* the caller fails the request with PDCBB_ERR_IO */
    }
    madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
    s->map = m;
    s->size = (uint64_t)st.st_size;
}

static void dsrc_unmap(dsrc_t *s)
{
    if (s->map)
        munmap((void *)s->map, s->size);
    s->map = NULL;
}

static int dsrc_stats_get(void *arg, uint64_t blk, pdcbb_qstats_t *st)
{
    dsrc_t *s = arg;
    qobj_t *q = qobj_find(s->d, s->obj);
    if (q == NULL || q->type != s->type || blk >= q->nblk || !q->known[blk])
        return 0;
    *st = q->st[blk];
    return 1;
}

static void dsrc_stats_put(void *arg, uint64_t blk, const pdcbb_qstats_t *st)
{
    dsrc_t *s = arg;
    qobj_t *q = qobj_find(s->d, s->obj);
    if (q != NULL && q->type != s->type) {
        bbd_query_forget(s->d, s->obj);
        q = NULL;
    }
    if (q == NULL) {
        if ((q = calloc(1, sizeof(*q))) == NULL)
            return;
        q->obj = s->obj;
        q->type = s->type;
        q->next = s->d->qobjs;
        s->d->qobjs = q;
    }
    if (blk >= q->nblk) {
        uint64_t n = blk + 1 > 2 * q->nblk ? blk + 1 : 2 * q->nblk;
        pdcbb_qstats_t *st2 = realloc(q->st, n * sizeof(*st2));
        if (st2 == NULL)
            return;
        q->st = st2;
        uint8_t *k2 = realloc(q->known, n);
        if (k2 == NULL)
            return;
        memset(k2 + q->nblk, 0, n - q->nblk);
        q->known = k2;
        q->nblk = n;
    }
    q->st[blk] = *st;
    q->known[blk] = 1;
}

/* Check the request's object against what this daemon stores of it; opens its file. */
static pdcbb_err_t query_object(bbd_req_t *r, uint64_t id, int type, const uint64_t *dims,
                                uint32_t ndim, dsrc_t *src)
{
    uint64_t unit, rdims[PDCBB_REGION_NDIM_MAX];
    uint32_t rndim;
    int exists;
    if (pdcbb_meta_id_kind(id) != PDCBB_META_KIND_OBJ)
        return PDCBB_ERR_BAD_ID;
    if (pdcbb_query_class(type) == PDCBB_QCLASS_NONE)
        return PDCBB_ERR_WRONG_TYPE;
    if (ndim == 0 || ndim > PDCBB_REGION_NDIM_MAX)
        return PDCBB_ERR_BAD_REGION;
    src->unit = pdcbb_type_size(type);
    src->obj = id;
    src->type = type;
    src->d = r->d;
    src->fd = -1;
    src->map = NULL;
    src->size = 0;
    pdcbb_err_t rc = bbd_data_layout_get(r, id, &unit, &rndim, rdims, &exists);
    if (rc != PDCBB_OK || !exists)
        return rc;
    if (unit != src->unit || rndim != ndim)
        return PDCBB_ERR_BAD_REGION;
    for (uint32_t d = 1; d < ndim; d++)
        if (rdims[d] != dims[d])
            return PDCBB_ERR_BAD_REGION;
    src->fd = bbd_data_fd(r->d, id, &rc);
    if (src->fd < 0 && rc != PDCBB_ERR_NOT_FOUND)
        return rc;
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_query_eval(bbd_req_t *r, const pdcbb_query_eval_req_t *q,
                              pdcbb_query_eval_rep_t *p)
{
    dsrc_t ds;
    pdcbb_qprog_t *prog = bbd_req_alloc(r, sizeof(*prog));
    if (prog == NULL)
        return PDCBB_ERR_NOMEM;
    if (q->mode > PDCBB_QMODE_HIST)
        return PDCBB_ERR_PROTO;
    pdcbb_err_t rc = pdcbb_qprog_decode(q->prog, q->prog_count, q->type, prog);
    if (rc != PDCBB_OK)
        return rc;
    if (prog->n == 0 && (q->mode == PDCBB_QMODE_HITS || q->mode == PDCBB_QMODE_COUNT))
        return PDCBB_ERR_PROTO;
    if ((rc = query_object(r, q->id, q->type, q->dims, q->dims_count, &ds)) != PDCBB_OK)
        return rc;
    pdcbb_qscan_t s;
    memset(&s, 0, sizeof(s));
    s.prog = prog;
    s.mode = q->mode;
    s.step_elems = QUERY_STEP_ELEMS;
    s.step_blocks = QUERY_STEP_BLOCKS;
    s.ndim = q->dims_count;
    memcpy(s.dims, q->dims, 8 * (size_t)q->dims_count);
    if (q->mode == PDCBB_QMODE_HIST) {
        double lo, incr;
        if (q->hist_count != 3 || q->hist[2] == 0 || q->hist[2] > PDCBB_QHIST_MAX)
            return PDCBB_ERR_PROTO;
        memcpy(&lo, &q->hist[0], 8);
        memcpy(&incr, &q->hist[1], 8);
        if (!(incr > 0) || lo != lo)
            return PDCBB_ERR_PROTO;
        s.hist_lo = lo;
        s.hist_incr = incr;
        s.nbin = (uint32_t)q->hist[2];
        if ((s.bins = bbd_req_alloc(r, 8 * (size_t)s.nbin)) == NULL)
            return PDCBB_ERR_NOMEM;
        memset(s.bins, 0, 8 * (size_t)s.nbin);
    }
    if (q->mode == PDCBB_QMODE_HITS) {
        /* Hits go straight into a (reused, already faulted-in) staging buffer: the reply's
         * bulk part. */
        s.max_hits = q->max_hits < PDCBB_QBLOCK ? PDCBB_QBLOCK
                     : q->max_hits > QUERY_HITS_MAX ? QUERY_HITS_MAX : q->max_hits;
        if ((s.hits = bbd_staging_get(r->d, 8 * (size_t)s.max_hits, 0)) == NULL)
            return PDCBB_ERR_NOMEM;
        s.hits_cap = s.max_hits;
    }
    if ((rc = pdcbb_qscan_init(&s)) != PDCBB_OK) {
        bbd_staging_put(r->d, s.hits);
        return rc;
    }
    uint32_t maxex = q->pieces_count / (2 * s.ndim) + 1;
    pdcbb_box_t *excl = malloc(maxex * sizeof(*excl));
    if (excl == NULL) {
        pdcbb_qscan_free(&s);
        bbd_staging_put(r->d, s.hits);
        return PDCBB_ERR_NOMEM;
    }
    dsrc_map(&ds);
    if (ds.fd >= 0 && ds.map == NULL && ds.size == 0) {
        struct stat fst;
        if (fstat(ds.fd, &fst) == 0 && fst.st_size > 0) { /* a file we could not map */
            free(excl);
            pdcbb_qscan_free(&s);
            bbd_staging_put(r->d, s.hits);
            return PDCBB_ERR_IO;
        }
    }
    pdcbb_qsrc_t src = {.read = dsrc_read, .stats_get = dsrc_stats_get,
                        .stats_put = dsrc_stats_put, .arg = &ds};
    uint32_t pos = 0;
    for (uint64_t k = 0; pos < q->pieces_count; k++) {
        pdcbb_box_t box;
        uint32_t nexcl;
        if ((rc = pdcbb_qpiece_parse(q->pieces, q->pieces_count, &pos, s.ndim, s.dims, &box,
                                     excl, maxex, &nexcl)) != PDCBB_OK)
            break;
        if (k < q->resume_piece)
            continue;
        uint64_t stop = 0;
        int x = pdcbb_qscan_piece(&s, &src, &box, excl, nexcl,
                                  k == q->resume_piece ? q->resume_elem : 0, &stop);
        if (x == 1) {
            p->more = 1;
            p->next_piece = k;
            p->next_elem = stop;
            break;
        }
        if (x < 0) {
            rc = (pdcbb_err_t)-x;
            PDCBB_ERROR("query of object %#" PRIx64 ": %s", q->id, pdcbb_strerror(rc));
            break;
        }
    }
    free(excl);
    dsrc_unmap(&ds);
    pdcbb_qscan_free(&s);
    if (rc != PDCBB_OK) {
        bbd_staging_put(r->d, s.hits);
        return rc;
    }
    p->count = s.nhits;
    p->scanned = s.blocks_scanned;
    p->skipped = s.blocks_skipped;
    if (q->mode == PDCBB_QMODE_STATS) {
        uint64_t *st = bbd_req_alloc(r, 24);
        if (st == NULL)
            return PDCBB_ERR_NOMEM;
        st[0] = s.st.mn.bits;
        st[1] = s.st.mx.bits;
        st[2] = (uint64_t)s.st.has;
        p->stats = st;
        p->stats_count = 3;
    }
    if (q->mode == PDCBB_QMODE_HIST) {
        p->bins = s.bins;
        p->bins_count = s.nbin;
    }
    if (s.hits && s.nhits > 0) {
        r->out_bulk = s.hits; /* bbd_bulk_release gives it back once sent */
        r->out_bulk_len = 8 * (size_t)s.nhits;
    } else {
        bbd_staging_put(r->d, s.hits);
    }
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_query_values(bbd_req_t *r, const pdcbb_query_values_req_t *q,
                                pdcbb_query_values_rep_t *p)
{
    dsrc_t ds;
    uint64_t total = 1;
    pdcbb_err_t rc = query_object(r, q->id, q->type, q->dims, q->dims_count, &ds);
    if (rc != PDCBB_OK)
        return rc;
    for (uint32_t d = 0; d < q->dims_count; d++)
        if (q->dims[d] == 0 || pdcbb_mul_overflow(total, q->dims[d], &total))
            return PDCBB_ERR_BAD_REGION;
    for (uint32_t i = 0; i < q->idx_count; i++)
        if (q->idx[i] >= total)
            return PDCBB_ERR_BAD_REGION;
    size_t len = (size_t)q->idx_count * ds.unit;
    uint8_t *out = bbd_staging_get(r->d, len ? len : 1, 0);
    if (out == NULL)
        return PDCBB_ERR_NOMEM;
    struct stat st;
    uint64_t size = 0;
    uint8_t *map = NULL;
    if (ds.fd >= 0 && fstat(ds.fd, &st) == 0 && st.st_size > 0) {
        size = (uint64_t)st.st_size;
        map = mmap(NULL, size, PROT_READ, MAP_SHARED, ds.fd, 0);
        if (map == MAP_FAILED) {
            bbd_staging_put(r->d, out);
            return pdcbb_err_from_errno(errno);
        }
    }
    for (uint32_t i = 0; i < q->idx_count; i++) {
        uint64_t off = q->idx[i] * ds.unit;
        if (map && off + ds.unit <= size)
            memcpy(out + (size_t)i * ds.unit, map + off, ds.unit);
        else
            memset(out + (size_t)i * ds.unit, 0, ds.unit);
    }
    if (map)
        munmap(map, size);
    p->count = q->idx_count;
    if (len) {
        r->out_bulk = out;
        r->out_bulk_len = len;
    } else {
        bbd_staging_put(r->d, out);
    }
    return PDCBB_OK;
}
