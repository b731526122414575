/*
 * bbd_strided.c - STRIDED_WRITE and STRIDED_READ: region data of strided selections
 * (common/pdcbb_select.h), gathered and scattered here from one compact descriptor per region.
 *
 * A descriptor (docs/PROTOCOL.md) is: object id, element size, ndim, the object's dims, then per
 * dimension start, stride, count, block of the selection, then the offsets and sizes of the box
 * that clips it (the part of the selection this daemon holds). Its data, packed, is the clipped
 * selection's elements in row-major order. Everything is checked before use: nothing from the
 * wire is trusted.
 *
 * Runs separated by small gaps are coalesced into spans of the file. A read preads each span
 * and gathers the selected bytes from it. A write, when no client of this node holds a
 * DATA_DIRECT write reservation (then nobody else can write the files until it returns), reads
 * the span, fills in the runs and writes it back. Otherwise it allocates the span (fallocate:
 * a later page fault cannot fail for lack of space), maps it and stores only the selected
 * bytes, so the direct writer's elements between them are never overwritten. A lone run, or a
 * span the filesystem cannot allocate or map, is written with pwrite. Writes run on the event
 * thread after every queued DATA_WRITE is done (the server drains the I/O thread first), so the
 * order of writes is kept; the reply follows the stores into the page cache, as for DATA_WRITE.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bbd.h"
#include "bbd_csum.h"
#include "pdcbb_checked.h"
#include "pdcbb_log.h"
#include "pdcbb_select.h"

/* Runs separated by at most this many bytes are read with one pread. */
#define GAP_MAX ((uint64_t)8 << 10)
/* Largest span read at once. */
#define SPAN_MAX ((uint64_t)1 << 20)

typedef struct sdesc {
    uint64_t obj, unit, bytes;
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX];
    pdcbb_sel_t sel;
    pdcbb_box_t clip;
} sdesc_t;

/* Words of a descriptor of ndim dimensions. */
#define SDESC_WORDS(n) (3u + 7u * (n))

/* Parse and check one descriptor at a[*pos]; *why says what is wrong. */
static pdcbb_err_t sdesc_parse(const uint64_t *a, uint32_t n, uint32_t *pos, sdesc_t *s,
                               char *why, size_t wl)
{
    uint32_t p = *pos;
    if (!pdcbb_range_ok(p, 3, n)) {
        snprintf(why, wl, "truncated descriptor");
        return PDCBB_ERR_PROTO;
    }
    uint64_t nd = a[p + 2];
    if (nd == 0 || nd > PDCBB_REGION_NDIM_MAX) {
        snprintf(why, wl, "%" PRIu64 " dimensions (1..%d allowed)", nd, PDCBB_REGION_NDIM_MAX);
        return PDCBB_ERR_PROTO;
    }
    if (!pdcbb_range_ok(p, SDESC_WORDS(nd), n)) {
        snprintf(why, wl, "truncated descriptor");
        return PDCBB_ERR_PROTO;
    }
    *pos = p + SDESC_WORDS(nd);
    s->obj = a[p];
    s->unit = a[p + 1];
    s->ndim = (uint32_t)nd;
    const uint64_t *v = a + p + 3;
    memcpy(s->dims, v, nd * 8);
    if (pdcbb_meta_id_kind(s->obj) != PDCBB_META_KIND_OBJ) {
        snprintf(why, wl, "%#" PRIx64 " is not an object id", s->obj);
        return PDCBB_ERR_BAD_ID;
    }
    if (s->unit == 0 || s->unit > 64) {
        snprintf(why, wl, "element size %" PRIu64 " (1..64 allowed)", s->unit);
        return PDCBB_ERR_BAD_REGION;
    }
    char sw[200];
    pdcbb_err_t rc = pdcbb_sel_make(&s->sel, s->ndim, v + nd, v + 2 * nd, v + 3 * nd, v + 4 * nd,
                                    sw, sizeof(sw));
    if (rc != PDCBB_OK) {
        snprintf(why, wl, "bad selection: %s", sw);
        return PDCBB_ERR_BAD_REGION;
    }
    pdcbb_box_t ib, bb;
    if (pdcbb_box_make(&s->clip, s->ndim, v + 5 * nd, v + 6 * nd) != PDCBB_OK ||
        !pdcbb_sel_index_box(&s->sel, &s->clip, &ib)) {
        snprintf(why, wl, "the clip box is empty or selects nothing");
        return PDCBB_ERR_BAD_REGION;
    }
    pdcbb_sel_bbox(&s->sel, &bb);
    if (pdcbb_box_check_within(&bb, s->ndim, s->dims) != PDCBB_OK) {
        snprintf(why, wl, "the selection reaches past the object's dimensions");
        return PDCBB_ERR_BAD_REGION;
    }
    uint64_t strides[PDCBB_REGION_NDIM_MAX], cnt;
    if ((rc = pdcbb_layout_strides(s->ndim, s->dims, (size_t)s->unit, strides)) != PDCBB_OK ||
        (rc = pdcbb_box_count(&ib, &cnt)) != PDCBB_OK ||
        pdcbb_mul_overflow(cnt, s->unit, &s->bytes)) {
        snprintf(why, wl, "the object's layout or the selection's size is too large");
        return PDCBB_ERR_TOO_BIG;
    }
    return PDCBB_OK;
}

/* The layout of the object here must match the descriptor's; 1 in *exists if there is one. */
static pdcbb_err_t layout_match(bbd_req_t *r, const sdesc_t *s, int create, int *exists)
{
    uint64_t unit, dims[PDCBB_REGION_NDIM_MAX];
    uint32_t nd;
    pdcbb_err_t rc = bbd_data_layout_get(r, s->obj, &unit, &nd, dims, exists);
    if (rc != PDCBB_OK)
        return rc;
    if (!*exists)
        return create ? bbd_data_layout_create(r, s->obj, s->unit, s->ndim, s->dims) : PDCBB_OK;
    if (unit != s->unit || nd != s->ndim)
        return PDCBB_ERR_BAD_REGION;
    for (uint32_t i = 1; i < nd; i++)
        if (dims[i] != s->dims[i])
            return PDCBB_ERR_BAD_REGION;
    return PDCBB_OK;
}

typedef struct hctx {
    int fd;
    uint64_t need;
} hctx_t;

static int run_holes(uint64_t aoff, uint64_t len, uint64_t poff, void *arg)
{
    hctx_t *h = arg;
    h->need += bbd_data_hole_bytes(h->fd, aoff, len);
    (void)poff;
    return 0;
}

static void log_bad(bbd_req_t *r, const char *op, const char *why)
{
    (void)r;
    PDCBB_WARN("%s refused: %s", op, why);
}

/* Runs gathered into spans of the file when their gaps are small. */
typedef struct rctx {
    int fd;
    int write;          /* scatter src into the file, else gather into out */
    int alone;          /* a write: no other writer of the files can run meanwhile */
    const uint8_t *src;
    uint8_t *out;
    uint8_t *span;  /* SPAN_MAX bytes */
    uint64_t s_off, s_len; /* the pending span in the file */
    struct { uint64_t aoff, len, poff; } *runs;
    size_t nruns, cap;
    int err;
} rctx_t;

/* One run's bytes: element-sized runs (the common case of a stride along the last dimension)
 * copied without a call. */
static inline void copy_run(uint8_t *dst, const uint8_t *src, uint64_t len)
{
    switch (len) {
    case 8: memcpy(dst, src, 8); break;
    case 4: memcpy(dst, src, 4); break;
    case 16: memcpy(dst, src, 16); break;
    default: memcpy(dst, src, len);
    }
}

static int pread_full(int fd, uint8_t *buf, uint64_t len, uint64_t off, int *err)
{
    uint64_t done = 0;
    while (done < len) {
        ssize_t k = pread(fd, buf + done, len - done, (off_t)(off + done));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            *err = errno;
            return -1;
        }
        if (k == 0) { /* past the end of the file: never written */
            memset(buf + done, 0, len - done);
            break;
        }
        done += (uint64_t)k;
    }
    return 0;
}

static int pwrite_full(int fd, const uint8_t *buf, uint64_t len, uint64_t off, int *err)
{
    uint64_t done = 0;
    while (done < len) {
        ssize_t k = pwrite(fd, buf + done, len - done, (off_t)(off + done));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            *err = errno;
            return -1;
        }
        done += (uint64_t)k;
    }
    return 0;
}

/* Store the pending runs of a write: when nobody else may write the file meanwhile, read the
 * span, fill in the runs and write it back; else through a mapping of the span; else (or for a
 * lone run) one pwrite per run. */
static int span_store(rctx_t *c)
{
    if (c->nruns > 1 && c->alone && c->span != NULL) {
        if (pread_full(c->fd, c->span, c->s_len, c->s_off, &c->err) != 0)
            return -1;
        for (size_t i = 0; i < c->nruns; i++)
            copy_run(c->span + (c->runs[i].aoff - c->s_off), c->src + c->runs[i].poff,
                     c->runs[i].len);
        c->nruns = 0;
        return pwrite_full(c->fd, c->span, c->s_len, c->s_off, &c->err);
    }
    if (c->nruns > 1 && fallocate(c->fd, 0, (off_t)c->s_off, (off_t)c->s_len) == 0) {
        uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
        uint64_t base = c->s_off & ~(page - 1), delta = c->s_off - base;
        uint8_t *map = mmap(NULL, c->s_len + delta, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, c->fd,
                            (off_t)base);
        if (map != MAP_FAILED) {
            for (size_t i = 0; i < c->nruns; i++)
                memcpy(map + delta + (c->runs[i].aoff - c->s_off), c->src + c->runs[i].poff,
                       c->runs[i].len);
            munmap(map, c->s_len + delta);
            c->nruns = 0;
            return 0;
        }
    }
    for (size_t i = 0; i < c->nruns; i++)
        if (pwrite_full(c->fd, c->src + c->runs[i].poff, c->runs[i].len, c->runs[i].aoff,
                        &c->err) != 0)
            return -1;
    c->nruns = 0;
    return 0;
}

static int span_flush(rctx_t *c)
{
    if (c->nruns == 0)
        return 0;
    if (c->write)
        return span_store(c);
    if (c->nruns == 1) {
        int rc = pread_full(c->fd, c->out + c->runs[0].poff, c->runs[0].len, c->runs[0].aoff,
                            &c->err);
        c->nruns = 0;
        return rc;
    }
    if (pread_full(c->fd, c->span, c->s_len, c->s_off, &c->err) != 0)
        return -1;
    for (size_t i = 0; i < c->nruns; i++)
        copy_run(c->out + c->runs[i].poff, c->span + (c->runs[i].aoff - c->s_off), c->runs[i].len);
    c->nruns = 0;
    return 0;
}

static int run_span(uint64_t aoff, uint64_t len, uint64_t poff, void *arg)
{
    rctx_t *c = arg;
    if (c->nruns > 0 && aoff >= c->s_off + c->s_len && aoff - (c->s_off + c->s_len) <= GAP_MAX &&
        aoff + len - c->s_off <= SPAN_MAX) {
        c->s_len = aoff + len - c->s_off;
    } else {
        if (span_flush(c) != 0)
            return -1;
        c->s_off = aoff;
        c->s_len = len;
    }
    void *g = pdcbb_grow(c->runs, c->nruns, &c->cap, sizeof(*c->runs), 256);
    if (g == NULL) {
        c->err = ENOMEM;
        return -1;
    }
    c->runs = g;
    c->runs[c->nruns].aoff = aoff;
    c->runs[c->nruns].len = len;
    c->runs[c->nruns].poff = poff;
    c->nruns++;
    if (len > SPAN_MAX / 2) /* a long run: read it alone */
        return span_flush(c);
    return 0;
}

pdcbb_err_t bbd_op_strided_write(bbd_req_t *r, const pdcbb_strided_write_req_t *q,
                                 pdcbb_strided_write_rep_t *p)
{
    bbd_t *d = r->d;
    char why[256];
    uint64_t *results = bbd_req_alloc(r, 8 * ((size_t)q->descs_count / SDESC_WORDS(1) + 4));
    if (results == NULL)
        return PDCBB_ERR_NOMEM;
    uint32_t pos = 0, n = 0;
    uint64_t data_off = 0, nospc[3] = {0, 0, 0};
    int refused = 0;
    /* After the server's drain of the I/O thread, bytes in flight are DATA_DIRECT writes that
     * clients of this node are doing themselves: with none, nobody else writes the files.
     * PDCBB_STRIDED_MAPPED=1 in the daemon's environment forces the mapping path (tests). */
    rctx_t c = {.fd = -1, .write = 1,
                .alone = d->data_inflight == 0 && getenv("PDCBB_STRIDED_MAPPED") == NULL};
    if (c.alone) {
        c.span = malloc(SPAN_MAX); /* NULL: the mapping path */
    } else {
        if (!d->strided_mapped_told++)
            PDCBB_INFO("strided writes store through mappings (%s)",
                       getenv("PDCBB_STRIDED_MAPPED") ? "PDCBB_STRIDED_MAPPED"
                                                      : "a direct writer is active");
    }
    while (pos < q->descs_count) {
        sdesc_t s;
        pdcbb_err_t one = sdesc_parse(q->descs, q->descs_count, &pos, &s, why, sizeof(why));
        if (one != PDCBB_OK) {
            log_bad(r, "STRIDED_WRITE", why);
            free(c.runs);
            free(c.span);
            return one;
        }
        if (!pdcbb_range_ok(data_off, s.bytes, r->in_bulk_len)) {
            free(c.runs);
            free(c.span);
            return PDCBB_ERR_TRUNCATED;
        }
        int exists = 0, fd = -1;
        one = layout_match(r, &s, 1, &exists);
        if (one == PDCBB_OK)
            fd = bbd_data_fd(d, s.obj, &one);
        if (one == PDCBB_ERR_NOT_FOUND) {
            /* No file yet: create it (bbd_data_fd opens existing files only). */
            char path[PATH_MAX + 64];
            bbd_data_path(d, s.obj, path, sizeof(path));
            int cfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
            if (cfd >= 0) {
                close(cfd);
                one = PDCBB_OK;
                fd = bbd_data_fd(d, s.obj, &one);
            } else {
                one = pdcbb_err_from_errno(errno);
            }
        }
        if (one == PDCBB_OK) {
            uint64_t used = d->data_used + d->data_inflight;
            hctx_t h = {.fd = fd};
            /* May not fit: count exactly what is new (holes), as DATA_WRITE does. */
            if (used + s.bytes > d->data_capacity)
                pdcbb_sel_runs(&s.sel, &s.clip, s.ndim, s.dims, (size_t)s.unit, run_holes, &h);
            if (used + s.bytes > d->data_capacity && used + h.need > d->data_capacity) {
                if (!refused) {
                    nospc[0] = d->data_capacity;
                    nospc[1] = used;
                    nospc[2] = h.need;
                }
                refused = 1;
                one = PDCBB_ERR_NOSPC;
            }
        }
        bbd_csum_touch_t touch = {0};
        if (one == PDCBB_OK) {
            /* the blocks it changes are checked first, checksummed again after */
            pdcbb_box_t bb;
            bbd_csum_bad_t bad;
            pdcbb_sel_bbox(&s.sel, &bb);
            pdcbb_box_intersect(&bb, &s.clip, &bb);
            one = bbd_csum_touch_box(&touch, s.obj, &bb, s.ndim, s.dims, s.unit);
            if (one == PDCBB_OK)
                one = bbd_csum_serve(r, fd, &touch, 0, &bad);
        }
        if (one == PDCBB_OK) {
            pdcbb_box_t bb;
            pdcbb_sel_bbox(&s.sel, &bb);
            pdcbb_box_intersect(&bb, &s.clip, &bb);
            bbd_query_dirty_box(r->d, s.obj, s.ndim, s.dims, &bb);
            c.fd = fd;
            c.src = r->in_bulk + data_off;
            c.nruns = 0;
            c.err = 0;
            if (pdcbb_sel_runs(&s.sel, &s.clip, s.ndim, s.dims, (size_t)s.unit, run_span, &c) !=
                    0 ||
                span_flush(&c) != 0) {
                one = c.err ? pdcbb_err_from_errno(c.err) : PDCBB_ERR_IO;
                PDCBB_ERROR("strided write to object %#" PRIx64 " failed: %s", s.obj,
                            pdcbb_strerror(one));
            }
            pdcbb_err_t crc = bbd_csum_rewrite(r, fd, &touch);
            if (one == PDCBB_OK)
                one = crc;
            bbd_data_recount(d, s.obj);
        }
        bbd_csum_touch_free(&touch);
        results[n++] = (uint64_t)(uint32_t)one;
        data_off += s.bytes;
    }
    free(c.runs);
    free(c.span);
    if (data_off != r->in_bulk_len)
        return PDCBB_ERR_PROTO;
    if (refused) {
        memcpy(results + n, nospc, sizeof(nospc));
        n += 3;
    }
    p->results = results;
    p->results_count = n;
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_strided_read(bbd_req_t *r, const pdcbb_strided_read_req_t *q,
                                pdcbb_strided_read_rep_t *p)
{
    bbd_t *d = r->d;
    char why[256];
    uint32_t pos = 0, n = 0;
    uint64_t total = 0;
    while (pos < q->descs_count) {
        sdesc_t s;
        pdcbb_err_t one = sdesc_parse(q->descs, q->descs_count, &pos, &s, why, sizeof(why));
        if (one != PDCBB_OK) {
            log_bad(r, "STRIDED_READ", why);
            return one;
        }
        if (pdcbb_add_overflow(total, s.bytes, &total) || total > PDCBB_DATA_BULK_MAX)
            return PDCBB_ERR_TOO_BIG;
        n++;
    }
    uint64_t *results = bbd_req_alloc(r, 8 * ((size_t)n + 1));
    uint8_t *out = bbd_staging_get(d, total ? total : 1, 0);
    if (results == NULL || out == NULL) {
        bbd_staging_put(d, out);
        return PDCBB_ERR_NOMEM;
    }
    rctx_t c = {.fd = -1};
    pos = n = 0;
    uint64_t off = 0;
    while (pos < q->descs_count) {
        sdesc_t s;
        sdesc_parse(q->descs, q->descs_count, &pos, &s, why, sizeof(why));
        int exists = 0;
        pdcbb_err_t one = layout_match(r, &s, 0, &exists);
        int fd = -1;
        if (one == PDCBB_OK && exists)
            fd = bbd_data_fd(d, s.obj, &one);
        if (one == PDCBB_ERR_NOT_FOUND || (one == PDCBB_OK && fd < 0)) {
            one = PDCBB_OK;
            memset(out + off, 0, s.bytes); /* nothing of this object here: zeros */
        } else if (one == PDCBB_OK) {
            pdcbb_box_t bb;
            bbd_csum_bad_t bad;
            pdcbb_sel_bbox(&s.sel, &bb);
            pdcbb_box_intersect(&bb, &s.clip, &bb);
            one = bbd_csum_serve_box(r, fd, s.obj, &bb, s.ndim, s.dims, s.unit, &bad);
            if (one != PDCBB_OK) {
                /* damaged (logged with its range) or unreadable */
            } else if (c.span == NULL && (c.span = malloc(SPAN_MAX)) == NULL) {
                one = PDCBB_ERR_NOMEM;
            } else {
                c.fd = fd;
                c.out = out + off;
                c.nruns = 0;
                c.err = 0;
                if (pdcbb_sel_runs(&s.sel, &s.clip, s.ndim, s.dims, (size_t)s.unit, run_span,
                                   &c) != 0 ||
                    span_flush(&c) != 0)
                    one = c.err ? pdcbb_err_from_errno(c.err) : PDCBB_ERR_IO;
            }
        }
        if (one != PDCBB_OK)
            memset(out + off, 0, s.bytes);
        off += s.bytes;
        results[n++] = (uint64_t)(uint32_t)one;
    }
    free(c.span);
    free(c.runs);
    r->out_bulk = out;
    r->out_bulk_len = total;
    p->results = results;
    p->results_count = n;
    return PDCBB_OK;
}
