/*
 * drain_read.c - reading object data out of a drain directory, checking every extent it serves
 * against its CRC-32C, and verifying a whole drain's checksums.
 *
 * pdcbb_drain_read_box walks the box's row-major byte runs (pdcbb_box_runs) against the object's
 * extents ordered by object offset and preads exactly the bytes each run needs into place; the
 * rest of the buffer reads as zero. Objects with a placement map apply their entries oldest seq
 * first, each from its rank's extents only. Data files stay open in a small cache kept in the
 * model's private state (drain_internal.h) until pdcbb_drain_free.
 *
 * Every reader of a drain (pdcbb get / export, the read-only API, stage-in) reads through
 * pdcbb_drain_read_box, so the checksums are checked here, once: rd_piece serves no byte of an
 * extent before the whole extent matched its CRC-32C. An extent a run needs whole is read into
 * the caller's buffer and checked there (no extra pass); one needed in part is read whole into
 * the model's extent buffer, checked, and served from it, also to the next reads of its other
 * parts (the next slab of an object read slab by slab). The model remembers which extents were
 * checked, so no extent is checked twice.
 *
 * pdcbb_drain_verify reads every extent once, file by file in file-offset order, through one
 * 8 MiB buffer, so a data file is read sequentially in large requests. Both name an extent the
 * same way (rd_extent_name).
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
#include <time.h>
#include <unistd.h>

#include "drain_internal.h"
#include "pdcbb_crc32c.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"
#include "pdcbb_name.h"

#define DRAIN_VERIFY_CHUNK ((size_t)8 << 20)
#define DRAIN_PROGRESS_NS 250000000ull /* at most 4 progress calls a second */


void drain_priv_release_read(drain_priv_t *p)
{
    for (uint32_t i = 0; i < p->nfds; i++)
        close(p->fds[i].fd);
    p->nfds = 0;
    free(p->order);
    p->order = NULL;
    p->norder = 0;
    p->order_valid = 0;
    free(p->checked);
    p->checked = NULL;
    p->nchecked = 0;
    free(p->xbuf);
    p->xbuf = NULL;
    p->xbuf_cap = 0;
    p->xbuf_ext = UINT64_MAX;
}

pdcbb_err_t pdcbb_drain_skip_damaged(pdcbb_drain_t *m, pdcbb_drain_damaged_fn fn, void *arg)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL)
        return PDCBB_ERR_NOMEM;
    p->skip_damaged = 1;
    p->on_damaged = fn;
    p->on_damaged_arg = arg;
    return PDCBB_OK;
}

void pdcbb_drain_read_stats(const pdcbb_drain_t *m, pdcbb_drain_read_stats_t *stats)
{
    const drain_priv_t *p = m->priv;
    pdcbb_drain_read_stats_t none = {0};
    *stats = p != NULL ? p->stats : none;
}

/*
 * "object 'NAME' (id ID), extent K, bytes A..B: FILE offset OFF (+LEN bytes)" for extent xi of
 * m: what every message about one extent starts with (reads and pdcbb_drain_verify alike). K
 * is its index among its object's extents (m->extents order: by rank, then object offset).
 */
static void rd_extent_name(const pdcbb_drain_t *m, uint64_t xi, char *out, size_t len)
{
    const pdcbb_drain_extent_t *x = &m->extents[xi];
    const pdcbb_drain_object_t *o = pdcbb_drain_find_object_id(m, x->object_id);
    uint64_t first = xi, count;
    pdcbb_drain_object_extents(m, x->object_id, &first, &count);
    int n;
    if (o != NULL)
        n = snprintf(out, len, "object '%s' (id %" PRIu64 ")", pdcbb_esc(o->name), o->id);
    else
        n = snprintf(out, len, "object id %" PRIu64, x->object_id);
    if (n < 0 || (size_t)n >= len)
        return;
    snprintf(out + n, len - (size_t)n,
             ", extent %" PRIu64 ", bytes %" PRIu64 "..%" PRIu64 ": %s offset %" PRIu64
             " (+%" PRIu64 " bytes)",
             count > 0 && xi >= first ? xi - first : 0, x->object_offset,
             x->object_offset + x->length, x->file, x->file_offset, x->length);
}

/* Open file (relative to m->dir) for reading, through the cache. */
static pdcbb_err_t rd_open(pdcbb_drain_t *m, drain_priv_t *p, const char *file, int *fd,
                           char *err, size_t errlen)
{
    char path[PATH_MAX];
    uint32_t victim = 0;

    p->tick++;
    for (uint32_t i = 0; i < p->nfds; i++) {
        if (p->fds[i].file == file || strcmp(p->fds[i].file, file) == 0) {
            p->fds[i].used = p->tick;
            *fd = p->fds[i].fd;
            return PDCBB_OK;
        }
        if (p->fds[i].used < p->fds[victim].used)
            victim = i;
    }
    if (snprintf(path, sizeof(path), "%s/%s", m->dir != NULL ? m->dir : ".", file) >=
        (int)sizeof(path)) {
        drain_errf(err, errlen, "%s/%s: path too long", m->dir, file);
        return PDCBB_ERR_INVAL;
    }
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) {
        int e = errno;
        drain_errf(err, errlen, "%s: cannot open: %s", path, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    if (p->nfds < DRAIN_FD_CACHE) {
        victim = p->nfds++;
    } else {
        close(p->fds[victim].fd);
    }
    p->fds[victim].file = file;
    p->fds[victim].fd = f;
    p->fds[victim].used = p->tick;
    *fd = f;
    return PDCBB_OK;
}

/* pread exactly len bytes; a file that ends before is PDCBB_ERR_CORRUPT (err: where it ends),
 * a read error PDCBB_ERR_IO or an errno code. */
static pdcbb_err_t rd_pread(pdcbb_drain_t *m, const char *file, int fd, void *buf, uint64_t len,
                            uint64_t off, char *err, size_t errlen)
{
    uint8_t *b = buf;
    uint64_t done = 0;

    while (done < len) {
        size_t want = len - done > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)(len - done);
        ssize_t r = pread(fd, b + done, want, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            drain_errf(err, errlen, "read error at offset %" PRIu64 " of %s/%s: %s", off + done,
                       m->dir ? m->dir : ".", file, strerror(e));
            return pdcbb_err_from_errno(e) == PDCBB_ERR_NOT_FOUND ? PDCBB_ERR_IO
                                                                   : pdcbb_err_from_errno(e);
        }
        if (r == 0) {
            drain_errf(err, errlen,
                       "missing: the file ends at offset %" PRIu64 ", the extent needs bytes "
                       "up to %" PRIu64 " (cut short)",
                       off + done, off + len);
            return PDCBB_ERR_CORRUPT;
        }
        done += (uint64_t)r;
    }
    return PDCBB_OK;
}

/* qsort_r comparisons of extent indices; ctx is the extents array */
static int rd_order_cmp(const void *a, const void *b, void *ctx)
{
    const pdcbb_drain_extent_t *ext = ctx;
    const pdcbb_drain_extent_t *x = &ext[*(const uint64_t *)a];
    const pdcbb_drain_extent_t *y = &ext[*(const uint64_t *)b];
    if (x->object_offset != y->object_offset)
        return x->object_offset < y->object_offset ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The extents [first, first+count) of one object, ordered by object offset (cached). */
static pdcbb_err_t rd_order(drain_priv_t *p, const pdcbb_drain_t *m, uint64_t obj_id,
                            uint64_t first, uint64_t count)
{
    if (p->order_valid && p->order_obj == obj_id && p->norder == count)
        return PDCBB_OK;
    free(p->order);
    p->order = NULL;
    p->order_valid = 0;
    p->norder = 0;
    if (count == 0) {
        p->order_valid = 1;
        p->order_obj = obj_id;
        return PDCBB_OK;
    }
    p->order = malloc((size_t)count * sizeof(uint64_t));
    if (p->order == NULL)
        return PDCBB_ERR_NOMEM;
    bool sorted = true;
    for (uint64_t i = 0; i < count; i++) {
        p->order[i] = first + i;
        if (i > 0 && m->extents[first + i].object_offset < m->extents[first + i - 1].object_offset)
            sorted = false;
    }
    if (!sorted) {
        qsort_r(p->order, (size_t)count, sizeof(uint64_t), rd_order_cmp, m->extents);
    }
    p->norder = count;
    p->order_obj = obj_id;
    p->order_valid = 1;
    return PDCBB_OK;
}

/* State of one walk over the runs of a piece of the box. */
typedef struct rd_walk {
    pdcbb_drain_t *m;
    drain_priv_t *p;
    const pdcbb_drain_object_t *o;
    uint8_t *buf;
    /* the extents to take, by increasing object offset: ext[idx[i]] or ext[lo + i] */
    const uint64_t *idx;
    uint64_t lo, n, cursor;
    /* mapping of a run's array offset to the packed box (NULL: packed_off is the place) */
    const pdcbb_box_t *box;
    const uint64_t *strides;   /* object strides in elements */
    const uint64_t *bstrides;  /* box strides in elements */
    int zero_runs;             /* a map entry: positions no extent holds become zero */
    pdcbb_err_t rc;
    char *err;
    size_t errlen;
} rd_walk_t;

/* The index in m->extents of the walk's i-th extent. */
static uint64_t rd_ext_index(const rd_walk_t *w, uint64_t i)
{
    return w->idx != NULL ? w->idx[i] : w->lo + i;
}

static const pdcbb_drain_extent_t *rd_ext(const rd_walk_t *w, uint64_t i)
{
    return &w->m->extents[rd_ext_index(w, i)];
}

/* The checked state of every extent (allocated on first use; NULL when out of memory). */
static uint8_t *rd_checked(pdcbb_drain_t *m, drain_priv_t *p)
{
    if (p->checked == NULL || p->nchecked != m->nextents) {
        free(p->checked);
        p->checked = calloc(m->nextents ? m->nextents : 1, 1);
        p->nchecked = p->checked != NULL ? m->nextents : 0;
        p->xbuf_ext = UINT64_MAX;
    }
    return p->checked;
}

/*
 * Extent xi is damaged (rc, what says how). Without skip_damaged: the read fails, err naming
 * the extent. With it: note it once, and its bytes read as zero (dest, len: the piece wanted).
 */
static pdcbb_err_t rd_damaged(rd_walk_t *w, uint64_t xi, pdcbb_err_t rc, const char *what,
                              uint8_t *dest, uint64_t len)
{
    char name[PDCBB_DRAIN_ERR_LEN / 2];
    rd_extent_name(w->m, xi, name, sizeof(name));
    if (!w->p->skip_damaged || (rc != PDCBB_ERR_CORRUPT && rc != PDCBB_ERR_IO)) {
        drain_errf(w->err, w->errlen, "%s: %s", name, what);
        return rc;
    }
    if (w->p->checked[xi] != DRAIN_X_DAMAGED) {
        w->p->checked[xi] = DRAIN_X_DAMAGED;
        w->p->stats.damaged++;
        if (w->p->on_damaged != NULL) {
            char line[PDCBB_DRAIN_ERR_LEN * 2];
            snprintf(line, sizeof(line), "%s: %s", name, what);
            w->p->on_damaged(line, w->p->on_damaged_arg);
        }
    }
    memset(dest, 0, (size_t)len);
    return PDCBB_OK;
}

/* Read bytes [off, off + len) of extent xi's file into dest (counted in the stats). */
static pdcbb_err_t rd_extent_bytes(rd_walk_t *w, const pdcbb_drain_extent_t *x, uint64_t off,
                                   uint64_t len, uint8_t *dest, char *what, size_t whatlen)
{
    int fd = -1;
    pdcbb_err_t rc = rd_open(w->m, w->p, x->file, &fd, what, whatlen);
    if (rc == PDCBB_ERR_NOT_FOUND) {
        char why[PDCBB_DRAIN_ERR_LEN / 2];
        snprintf(why, sizeof(why), "%s", what);
        drain_errf(what, whatlen, "missing: %s", why);
        return PDCBB_ERR_CORRUPT;
    }
    if (rc != PDCBB_OK)
        return rc;
    rc = rd_pread(w->m, x->file, fd, dest, len, x->file_offset + off, what, whatlen);
    if (rc == PDCBB_OK)
        w->p->stats.bytes_read += len;
    return rc;
}

/* Compare the CRC-32C of extent x's bytes (all of them, at bytes) with the manifest's. */
static pdcbb_err_t rd_extent_check(rd_walk_t *w, const pdcbb_drain_extent_t *x,
                                   const uint8_t *bytes, char *what, size_t whatlen)
{
    uint32_t crc = pdcbb_crc32c(0, bytes, (size_t)x->length);
    w->p->stats.extents_checked++;
    w->p->stats.bytes_checked += x->length;
    if (crc == x->crc32c)
        return PDCBB_OK;
    drain_errf(what, whatlen,
               "CRC-32C mismatch (manifest 0x%08" PRIx32 ", data 0x%08" PRIx32 ")", x->crc32c,
               crc);
    return PDCBB_ERR_CORRUPT;
}

/*
 * Put bytes [s, e) (object offsets) of extent xi into dest, never serving a byte of an extent
 * whose CRC-32C did not match: an extent wanted whole is read into dest and checked there; one
 * wanted in part is read whole into the extent buffer, checked and kept there for its other
 * parts; an extent already checked is read as wanted.
 */
static pdcbb_err_t rd_piece(rd_walk_t *w, uint64_t xi, uint64_t s, uint64_t e, uint8_t *dest)
{
    const pdcbb_drain_extent_t *x = &w->m->extents[xi];
    drain_priv_t *p = w->p;
    char what[PDCBB_DRAIN_ERR_LEN / 2] = "";
    uint64_t off = s - x->object_offset, len = e - s;
    pdcbb_err_t rc;

    if (p->checked[xi] == DRAIN_X_DAMAGED) {
        memset(dest, 0, (size_t)len);
        return PDCBB_OK;
    }
    if (x->damaged != 0) {
        /* the drain found these bytes damaged on the node (manifest key `damaged`): their
         * checksum here is of what was found, so it proves nothing */
        snprintf(what, sizeof(what),
                 "damaged on the node before the drain (%s): %s",
                 pdcbb_drain_damaged_name(x->damaged) ? pdcbb_drain_damaged_name(x->damaged)
                                                      : "?",
                 x->damaged == PDCBB_DRAIN_DAMAGED_TRUNCATED
                     ? "its data file there was cut short, the bytes are lost"
                     : "its bytes did not match the checksum taken when they were written");
        return rd_damaged(w, xi, PDCBB_ERR_CORRUPT, what, dest, len);
    }
    if (p->checked[xi] == DRAIN_X_GOOD) {
        if (p->xbuf_ext == xi) {
            memcpy(dest, p->xbuf + off, (size_t)len);
            return PDCBB_OK;
        }
        rc = rd_extent_bytes(w, x, off, len, dest, what, sizeof(what));
        return rc == PDCBB_OK ? rc : rd_damaged(w, xi, rc, what, dest, len);
    }
    if (len == x->length) {
        rc = rd_extent_bytes(w, x, 0, len, dest, what, sizeof(what));
        if (rc == PDCBB_OK)
            rc = rd_extent_check(w, x, dest, what, sizeof(what));
    } else {
        if (p->xbuf_cap < x->length) {
            free(p->xbuf);
            p->xbuf_cap = 0;
            if ((p->xbuf = malloc((size_t)x->length)) == NULL) {
                drain_errf(w->err, w->errlen, "object '%s': out of memory (%" PRIu64 " bytes)",
                           pdcbb_esc(w->o->name), x->length);
                return PDCBB_ERR_NOMEM;
            }
            p->xbuf_cap = x->length;
        }
        p->xbuf_ext = UINT64_MAX;
        rc = rd_extent_bytes(w, x, 0, x->length, p->xbuf, what, sizeof(what));
        if (rc == PDCBB_OK)
            rc = rd_extent_check(w, x, p->xbuf, what, sizeof(what));
        if (rc == PDCBB_OK) {
            p->xbuf_ext = xi;
            memcpy(dest, p->xbuf + off, (size_t)len);
        }
    }
    if (rc != PDCBB_OK)
        return rd_damaged(w, xi, rc, what, dest, len);
    p->checked[xi] = DRAIN_X_GOOD;
    return PDCBB_OK;
}

static int rd_run(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    rd_walk_t *w = arg;
    uint64_t end = array_off + len, dest = packed_off;
    uint32_t es = w->o->element_size;

    if (w->box != NULL) {
        /* the run's first element's coordinates give its place in the packed box */
        uint64_t el = array_off / es, pos = 0;
        for (uint32_t d = 0; d < w->o->ndim; d++) {
            uint64_t c = el / w->strides[d];
            el %= w->strides[d];
            pos += (c - w->box->off[d]) * w->bstrides[d];
        }
        dest = pos * es;
    }
    if (w->zero_runs)
        memset(w->buf + dest, 0, (size_t)len);
    /* extents are ordered by start and do not overlap, so their ends are ordered too */
    while (w->cursor < w->n) {
        const pdcbb_drain_extent_t *x = rd_ext(w, w->cursor);
        if (x->object_offset + x->length > array_off)
            break;
        w->cursor++;
    }
    for (uint64_t i = w->cursor; i < w->n; i++) {
        const pdcbb_drain_extent_t *x = rd_ext(w, i);
        if (x->object_offset >= end)
            break;
        uint64_t xend = x->object_offset + x->length;
        if (xend <= array_off)
            continue; /* overlapping extents (a malformed drain): keep going */
        uint64_t s = x->object_offset > array_off ? x->object_offset : array_off;
        uint64_t e = xend < end ? xend : end;
        w->rc = rd_piece(w, rd_ext_index(w, i), s, e, w->buf + dest + (s - array_off));
        if (w->rc != PDCBB_OK)
            return -1;
    }
    return 0;
}

pdcbb_err_t pdcbb_drain_read_box(pdcbb_drain_t *m, const pdcbb_drain_object_t *o,
                                 const pdcbb_box_t *box, void *buf, char *err, size_t errlen)
{
    uint64_t first, count, nbytes;
    uint64_t strides[PDCBB_REGION_NDIM_MAX], bstrides[PDCBB_REGION_NDIM_MAX];
    pdcbb_err_t rc;
    int r;

    if (m == NULL || o == NULL || box == NULL || buf == NULL) {
        drain_errf(err, errlen, "pdcbb_drain_read_box: missing argument");
        return PDCBB_ERR_INVAL;
    }
    if (pdcbb_box_check_within(box, o->ndim, o->dims) != PDCBB_OK ||
        pdcbb_box_count(box, &nbytes) != PDCBB_OK || nbytes > SIZE_MAX / o->element_size) {
        drain_errf(err, errlen, "object '%s': the box lies outside its dimensions",
                   pdcbb_esc(o->name));
        return PDCBB_ERR_BAD_REGION;
    }
    nbytes *= o->element_size;
    if (pdcbb_layout_strides(o->ndim, o->dims, o->element_size, strides) != PDCBB_OK) {
        drain_errf(err, errlen, "object '%s': bad dimensions", pdcbb_esc(o->name));
        return PDCBB_ERR_BAD_REGION;
    }
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL || rd_checked(m, p) == NULL) {
        drain_errf(err, errlen, "object '%s': out of memory", pdcbb_esc(o->name));
        return PDCBB_ERR_NOMEM;
    }
    memset(buf, 0, (size_t)nbytes);
    pdcbb_drain_object_extents(m, o->id, &first, &count);
    if (count == 0)
        return PDCBB_OK;

    rd_walk_t w = {.m = m, .p = p, .o = o, .buf = buf, .rc = PDCBB_OK, .err = err,
                   .errlen = errlen, .strides = strides, .bstrides = bstrides};
    if (o->nmap == 0) {
        if ((rc = rd_order(p, m, o->id, first, count)) != PDCBB_OK) {
            drain_errf(err, errlen, "object '%s': out of memory", pdcbb_esc(o->name));
            return rc;
        }
        w.idx = p->order;
        w.n = count;
        r = pdcbb_box_runs(box, o->ndim, o->dims, o->element_size, rd_run, &w);
        if (r != 0)
            goto fail;
        return PDCBB_OK;
    }
    /* a placement map: each entry's box from its rank's extents (sorted by rank, offset) */
    bstrides[o->ndim - 1] = 1;
    for (int d = (int)o->ndim - 2; d >= 0; d--)
        bstrides[d] = bstrides[d + 1] * box->size[d + 1];
    for (uint32_t k = 0; k < o->nmap; k++) {
        const pdcbb_drain_map_entry_t *e = &o->map[k];
        pdcbb_box_t piece;
        if (!pdcbb_box_intersect(box, &e->box, &piece))
            continue;
        uint64_t lo = first, hi = first + count;
        while (lo < hi && m->extents[lo].rank < e->rank)
            lo++;
        hi = lo;
        while (hi < first + count && m->extents[hi].rank == e->rank)
            hi++;
        w.idx = NULL;
        w.lo = lo;
        w.n = hi - lo;
        w.cursor = 0;
        w.box = box;
        w.zero_runs = 1;
        r = pdcbb_box_runs(&piece, o->ndim, o->dims, o->element_size, rd_run, &w);
        if (r != 0)
            goto fail;
    }
    return PDCBB_OK;
fail:
    if (w.rc != PDCBB_OK)
        return w.rc;
    drain_errf(err, errlen, "object '%s': bad box: %s", pdcbb_esc(o->name), pdcbb_strerror(r));
    return r > 0 ? (pdcbb_err_t)r : PDCBB_ERR_INTERNAL;
}

/* ---------------------------------------------------------------------------------------- */
/* Verification                                                                               */
/* ---------------------------------------------------------------------------------------- */

static int rd_verify_cmp(const void *a, const void *b, void *ctx)
{
    const pdcbb_drain_extent_t *ext = ctx;
    const pdcbb_drain_extent_t *x = &ext[*(const uint64_t *)a];
    const pdcbb_drain_extent_t *y = &ext[*(const uint64_t *)b];
    if (x->file != y->file) {
        int c = strcmp(x->file, y->file);
        if (c != 0)
            return c;
    }
    if (x->file_offset != y->file_offset)
        return x->file_offset < y->file_offset ? -1 : 1;
    return 0;
}

static uint64_t rd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct rd_verify {
    pdcbb_drain_t *m;
    void (*report)(const char *line, void *arg);
    void *arg;
    pdcbb_drain_verify_stats_t *st;
} rd_verify_t;

/* Report extent xi as bad: its name (rd_extent_name), then what is wrong. */
__attribute__((format(printf, 3, 4))) static void rd_report(rd_verify_t *v, uint64_t xi,
                                                            const char *fmt, ...)
{
    char what[512], name[PDCBB_DRAIN_ERR_LEN / 2], line[PDCBB_DRAIN_ERR_LEN];
    va_list ap;

    if (v->report == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    rd_extent_name(v->m, xi, name, sizeof(name));
    snprintf(line, sizeof(line), "%s: %s", name, what);
    v->report(line, v->arg);
}

pdcbb_err_t pdcbb_drain_verify(pdcbb_drain_t *m, int rank, pdcbb_drain_verify_stats_t *stats,
                               void (*report)(const char *line, void *arg),
                               pdcbb_drain_progress_fn progress, void *arg, char *err,
                               size_t errlen)
{
    pdcbb_drain_verify_stats_t st = {0};
    uint64_t *ix = NULL, n = 0, total = 0, done = 0;
    uint8_t *buf = NULL;
    pdcbb_err_t rc = PDCBB_OK;
    int fd = -1;
    char path[PATH_MAX];

    if (m == NULL) {
        drain_errf(err, errlen, "pdcbb_drain_verify: no model");
        return PDCBB_ERR_INVAL;
    }
    if (m->nextents > 0) {
        ix = malloc((size_t)m->nextents * sizeof(*ix));
        buf = malloc(DRAIN_VERIFY_CHUNK);
        if (ix == NULL || buf == NULL) {
            drain_errf(err, errlen, "out of memory");
            rc = PDCBB_ERR_NOMEM;
            goto done;
        }
    }
    for (uint64_t i = 0; i < m->nextents; i++) {
        if (rank >= 0 && m->extents[i].rank != (uint32_t)rank)
            continue;
        ix[n++] = i;
        total += m->extents[i].length;
    }
    if (n > 1) {
        qsort_r(ix, (size_t)n, sizeof(*ix), rd_verify_cmp, m->extents);
    }
    rd_verify_t v = {m, report, arg, &st};
    uint64_t last_progress = rd_now_ns();
    const char *cur_file = NULL;
    uint64_t file_size = 0;
    int open_errno = 0;
    /* the buffer holds bytes [wb, we) of cur_file */
    uint64_t wb = 0, we = 0;

    for (uint64_t k = 0; k < n; k++) {
        const pdcbb_drain_extent_t *x = &m->extents[ix[k]];
        if (cur_file == NULL || strcmp(cur_file, x->file) != 0) {
            if (fd >= 0)
                close(fd);
            fd = -1;
            cur_file = x->file;
            wb = we = 0;
            snprintf(path, sizeof(path), "%s/%s", m->dir ? m->dir : ".", x->file);
            fd = open(path, O_RDONLY | O_CLOEXEC);
            open_errno = fd < 0 ? errno : 0;
            if (fd < 0 && open_errno != ENOENT && open_errno != ENOTDIR) {
                drain_errf(err, errlen, "%s: cannot open: %s", path, strerror(open_errno));
                rc = pdcbb_err_from_errno(open_errno);
                goto done;
            }
            struct stat sb;
            file_size = (fd >= 0 && fstat(fd, &sb) == 0) ? (uint64_t)sb.st_size : 0;
#ifdef POSIX_FADV_SEQUENTIAL
            if (fd >= 0)
                posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
        }
        st.extents++;
        st.bytes += x->length;
        if (fd < 0) {
            st.missing++;
            rd_report(&v, ix[k], "missing: %s", strerror(open_errno));
            goto next;
        }
        if (x->file_offset + x->length > file_size) {
            st.missing++;
            rd_report(&v, ix[k], "missing: the file ends at %" PRIu64 " bytes", file_size);
            goto next;
        }
        uint32_t crc = 0;
        uint64_t pos = x->file_offset, end = x->file_offset + x->length;
        int ioerr = 0;
        while (pos < end) {
            if (pos < wb || pos >= we) {
                ssize_t r;
                do
                    r = pread(fd, buf, DRAIN_VERIFY_CHUNK, (off_t)pos);
                while (r < 0 && errno == EINTR);
                if (r <= 0) {
                    ioerr = r < 0 ? errno : 0;
                    wb = we = 0;
                    break;
                }
                wb = pos;
                we = pos + (uint64_t)r;
            }
            uint64_t take = (we < end ? we : end) - pos;
            crc = pdcbb_crc32c(crc, buf + (pos - wb), (size_t)take);
            pos += take;
        }
        if (pos < end) {
            if (ioerr != 0) {
                st.bad++;
                rd_report(&v, ix[k], "read error: %s", strerror(ioerr));
            } else {
                st.missing++;
                rd_report(&v, ix[k], "missing: the file ends before the extent does");
            }
        } else if (crc != x->crc32c) {
            st.bad++;
            rd_report(&v, ix[k], "CRC-32C mismatch (manifest 0x%08" PRIx32 ", data 0x%08" PRIx32 ")",
                      x->crc32c, crc);
        }
    next:
        done += x->length;
        if (progress != NULL) {
            uint64_t now = rd_now_ns();
            if (now - last_progress >= DRAIN_PROGRESS_NS) {
                last_progress = now;
                progress(&(pdcbb_drain_progress_t){.done_bytes = done, .total_bytes = total}, arg);
            }
        }
    }
    if (progress != NULL)
        progress(&(pdcbb_drain_progress_t){.done_bytes = done, .total_bytes = total}, arg);
    /* KV dumps: every block's CRC-32C, the end block, and the whole file's CRC-32C, record
     * count and size against the manifest */
    for (uint32_t i = 0; i < m->nkvdumps; i++) {
        const pdcbb_drain_kvdump_t *d = &m->kvdumps[i];
        if (rank >= 0 && d->rank != (uint32_t)rank)
            continue;
        char why[PDCBB_DRAIN_ERR_LEN] = "";
        pdcbb_kvd_stats_t want = {d->records, d->bytes, d->crc32c}, got;
        snprintf(path, sizeof(path), "%s/%s", m->dir ? m->dir : ".", d->file);
        st.kv_dumps++;
        if (pdcbb_kvd_verify(path, &want, &got, why, sizeof(why)) != PDCBB_OK) {
            st.kv_bad++;
            if (report != NULL) {
                char line[PDCBB_DRAIN_ERR_LEN + 600];
                const pdcbb_drain_kv_t *k = pdcbb_drain_find_kv_id(m, d->kv);
                snprintf(line, sizeof(line), "KV object '%s' (id %" PRIu64 "), rank %" PRIu32
                         ": %s",
                         k ? k->name : "?", d->kv, d->rank, why);
                report(line, arg);
            }
        }
        st.kv_records += got.records;
    }
    if (st.bad > 0 || st.missing > 0 || st.kv_bad > 0) {
        drain_errf(err, errlen, "%" PRIu64 " of %" PRIu64 " extents bad, %" PRIu64
                   " missing, %" PRIu64 " of %" PRIu64 " KV dumps bad",
                   st.bad, st.extents, st.missing, st.kv_bad, st.kv_dumps);
        rc = PDCBB_ERR_IO;
    }
done:
    if (fd >= 0)
        close(fd);
    free(ix);
    free(buf);
    if (stats != NULL)
        *stats = st;
    return rc;
}
