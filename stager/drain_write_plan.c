/*
 * drain_write_plan.c - step 2 of draining a rank (drain_write.c): the data plan, the extents
 * of each node-local data file: its written byte ranges (SEEK_DATA/SEEK_HOLE), widened to
 * whole elements and clipped to what this rank owns (below), cut at PDCBB_DRAIN_EXTENT_MAX.
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
 * Damage (dw_plan_damage). Every block of the file is checked against the checksum the daemon
 * kept (common/pdcbb_csum.h): the file must reach what was written (else the missing bytes
 * become extents of their own, copied as zeros, marked `truncated`), and each block's bytes
 * must match its CRC (else the extents are cut at the block's bounds and those inside are
 * marked `checksum`). Damaged extents are copied like the others, so the rest of the job
 * drains, and the manifest says which bytes are not the job's. The size is checked here; the
 * bytes, to read them once: the copy's reader computes each block's CRC from the bytes it
 * copies, and dw_check_blocks compares them afterwards (reading only blocks the copy did not
 * read whole). Damage is rare: when a block does not match, the rank is planned again with
 * every block's bytes checked here first (p->crc_checked) and copied again.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drain_write_internal.h"
#include "pdcbb_checked.h"
#include "pdcbb_grow.h"
#include "pdcbb_log.h"
#include "pdcbb_proto.h"

#define DW_PARTITION_OBJ_STATIC 0
#define DW_PARTITION_REGION_STATIC 1

void dw_plan_free(dw_plan_t *p)
{
    for (size_t i = 0; i < p->nsrc; i++)
        free(p->paths[i]);
    free(p->paths);
    free(p->src_sizes);
    free(p->pieces);
    int checked = p->crc_checked;
    memset(p, 0, sizeof(*p));
    p->crc_checked = checked;
}

/* Append [off, off+len) cut at the extent limit (conditional pieces at one buffer). */
static pdcbb_err_t dw_plan_add(dw_plan_t *p, uint64_t obj, uint32_t src, uint64_t off,
                               uint64_t len, int conditional)
{
    uint64_t max = conditional ? DW_BUF_SIZE : PDCBB_DRAIN_EXTENT_MAX;
    while (len > 0) {
        uint64_t n = len < max ? len : max;
        dw_piece_t *g = pdcbb_grow(p->pieces, p->npieces, &p->cap, sizeof(*g), 16);
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

/* A damaged byte range of one data file. */
typedef struct dw_bad {
    uint64_t a, b;
    uint32_t kind; /* PDCBB_DRAIN_DAMAGED_* */
} dw_bad_t;

/* The checksums of obj in r: *first and the count. */
static size_t dw_csums_of(const dw_rank_t *r, uint64_t obj, size_t *first)
{
    size_t lo = 0, hi = r->ncsums;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->csums[mid].obj < obj)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t n = 0;
    while (lo + n < r->ncsums && r->csums[lo + n].obj == obj)
        n++;
    *first = lo;
    return n;
}

/* Re-add pieces [before, npieces) of p cut at the bounds of bad[0..nbad) (sorted, disjoint),
 * the pieces inside a damaged range marked (and kept whatever their bytes). */
static pdcbb_err_t dw_plan_cut(dw_plan_t *p, size_t before, const dw_bad_t *bad, size_t nbad)
{
    size_t n = p->npieces - before;
    dw_piece_t *old = malloc((n ? n : 1) * sizeof(*old));
    if (old == NULL)
        return PDCBB_ERR_NOMEM;
    memcpy(old, p->pieces + before, n * sizeof(*old));
    for (size_t i = 0; i < n; i++)
        p->bytes -= old[i].len;
    p->npieces = before;
    pdcbb_err_t rc = PDCBB_OK;
    for (size_t i = 0; i < n && rc == PDCBB_OK; i++) {
        uint64_t pos = old[i].off, end = old[i].off + old[i].len;
        while (pos < end && rc == PDCBB_OK) {
            uint64_t next = end;
            uint32_t kind = 0;
            for (size_t k = 0; k < nbad; k++) {
                if (pos >= bad[k].a && pos < bad[k].b) {
                    kind = bad[k].kind;
                    next = bad[k].b < end ? bad[k].b : end;
                    break;
                }
                if (bad[k].a > pos && bad[k].a < next)
                    next = bad[k].a;
            }
            size_t at = p->npieces;
            rc = dw_plan_add(p, old[i].obj, old[i].src, pos, next - pos,
                             kind ? 0 : old[i].conditional);
            for (; rc == PDCBB_OK && at < p->npieces; at++)
                p->pieces[at].damaged = kind;
            pos = next;
        }
    }
    free(old);
    return rc;
}

/*
 * Check the data file fd (size bytes, planned as pieces [before, npieces) of p) of layout l
 * against r's checksums; plan the missing bytes of a truncated file, and mark the damaged
 * pieces (see the file comment). limit: the object's size in bytes.
 */
static pdcbb_err_t dw_plan_damage(dw_ctx_t *c, dw_rank_t *r, dw_plan_t *p, size_t before,
                                  uint32_t src, const dw_layout_t *l, int fd, uint64_t size,
                                  uint64_t limit, const char *path, dw_clip_t clip,
                                  const dw_stripe_t *s)
{
    size_t first, n = dw_csums_of(r, l->obj, &first);
    dw_bad_t *bad = NULL;
    size_t nbad = 0, cap = 0, pending = 0;
    uint8_t *scratch = n && p->crc_checked ? malloc(PDCBB_CSUM_BLOCK) : NULL;
    pdcbb_err_t rc = n && p->crc_checked && scratch == NULL ? PDCBB_ERR_NOMEM : PDCBB_OK;
    for (size_t i = 0; i < n && rc == PDCBB_OK; i++) {
        const dw_csum_t *x = &r->csums[first + i];
        if (x->rec.flags & PDCBB_CSUM_PENDING) {
            pending++; /* a write that was never acknowledged: nothing to hold it to */
            continue;
        }
        int kind = 0, err = 0;
        if (!p->crc_checked && size >= x->block * PDCBB_CSUM_BLOCK + x->rec.end)
            continue; /* long enough; its bytes are checked from the copy (dw_check_blocks) */
        rc = pdcbb_csum_check(fd, size, x->block, &x->rec, scratch, &kind, &err);
        if (rc == PDCBB_ERR_IO) {
            rc = dw_fail(c, pdcbb_err_from_errno(err), "cannot read %s: %s", path,
                         strerror(err));
            break;
        }
        if (rc != PDCBB_ERR_CORRUPT)
            continue;
        rc = PDCBB_OK;
        uint64_t a = x->block * PDCBB_CSUM_BLOCK, b = a + x->rec.end;
        if (kind == PDCBB_CSUM_BAD_CRC)
            b = a + PDCBB_CSUM_BLOCK < size ? a + PDCBB_CSUM_BLOCK : size;
        else if (a < size)
            a = size; /* what is missing */
        if (b > limit)
            b = limit;
        a -= a % l->unit; /* whole elements */
        if (b % l->unit)
            b += l->unit - b % l->unit;
        if (a >= b)
            continue;
        PDCBB_ERROR("rank %u: object %#" PRIx64 ": bytes %" PRIu64 "-%" PRIu64 " of %s (checksum"
                    " block %" PRIu64 ") are damaged: %s",
                    r->rank, l->obj, a, b - 1, path, x->block, pdcbb_csum_kind_str(kind));
        dw_bad_t *g = pdcbb_grow(bad, nbad, &cap, sizeof(*g), 8);
        if (g == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        bad = g;
        if (nbad > 0 && bad[nbad - 1].b >= a &&
            bad[nbad - 1].kind == PDCBB_DRAIN_DAMAGED_TRUNCATED && kind == PDCBB_CSUM_BAD_SIZE) {
            bad[nbad - 1].b = b; /* one missing range */
            continue;
        }
        bad[nbad++] = (dw_bad_t){a, b, kind == PDCBB_CSUM_BAD_SIZE ? PDCBB_DRAIN_DAMAGED_TRUNCATED
                                                                 : PDCBB_DRAIN_DAMAGED_CHECKSUM};
    }
    free(scratch);
    if (pending > 0)
        PDCBB_WARN("rank %u: object %#" PRIx64 ": %zu blocks were being written when the daemon "
                   "stopped: drained as found, not checked",
                   r->rank, l->obj, pending);
    if (rc == PDCBB_OK && nbad > 0)
        rc = dw_plan_cut(p, before, bad, nbad);
    /* the missing bytes: extents of their own (past every planned piece: beyond the end) */
    for (size_t k = 0; k < nbad && rc == PDCBB_OK; k++) {
        if (bad[k].kind != PDCBB_DRAIN_DAMAGED_TRUNCATED)
            continue;
        size_t at = p->npieces;
        /* a REGION_STATIC object's home rank clips to its stripe, as for the written ranges;
         * elsewhere the rank cannot tell the partition and keeps every missing byte */
        rc = clip != DW_CLIP_STRIPE
                 ? dw_plan_add(p, l->obj, src, bad[k].a, bad[k].b - bad[k].a, 0)
                 : dw_plan_striped(p, l->obj, src, bad[k].a, bad[k].b, s, DW_CLIP_STRIPE);
        for (; rc == PDCBB_OK && at < p->npieces; at++)
            p->pieces[at].damaged = PDCBB_DRAIN_DAMAGED_TRUNCATED;
    }
    free(bad);
    if (rc == PDCBB_ERR_NOMEM)
        return dw_fail(c, rc, "out of memory checking the data of rank %u", r->rank);
    return rc;
}

/* Plan the extents of one data file. */
pdcbb_err_t dw_plan_object(dw_ctx_t *c, dw_rank_t *r, dw_plan_t *p, const dw_layout_t *l,
                           const char *store_dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/objects/%016" PRIx64 ".dat", store_dir, l->obj) >=
        (int)sizeof(path))
        return dw_fail(c, PDCBB_ERR_TOO_BIG, "path of the data of object %#" PRIx64 " too long",
                       l->obj);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    size_t first;
    if (fd < 0) {
        /* a layout without data (the object was created, never written), unless the daemon
         * checksummed data of it: then the file was lost, and is drained as an empty one */
        if (errno != ENOENT)
            return dw_fail(c, pdcbb_err_from_errno(errno), "cannot open %s: %s", path,
                           strerror(errno));
        if (dw_csums_of(r, l->obj, &first) == 0)
            return PDCBB_OK;
        PDCBB_ERROR("rank %u: the data file %s of object %#" PRIx64 " is missing", r->rank,
                    path, l->obj);
    }
    struct stat st = {0};
    if (fd >= 0 && fstat(fd, &st) != 0) {
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
            if (fd >= 0)
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
        if (l->dims[d] == PDCBB_DIM_UNLIMITED || pdcbb_mul_overflow(limit, l->dims[d], &limit))
            limit = UINT64_MAX;
    }
    if (dims != l->dims && dims[0] != PDCBB_DIM_UNLIMITED && limit != UINT64_MAX) {
        uint64_t row = limit / (l->dims[0] ? l->dims[0] : 1);
        uint64_t cur;
        if (!pdcbb_mul_overflow(row, dims[0], &cur) && cur < limit)
            limit = cur; /* shrunk since the first write: data beyond was discarded */
    }
    uint64_t size = (uint64_t)st.st_size < limit ? (uint64_t)st.st_size : limit;

    size -= size % l->unit; /* a partial element at the end was never completely written */
    size_t before = p->npieces;
    uint32_t src = (uint32_t)p->nsrc;
    uint64_t pos = 0, ra = 0, rb = 0;
    int have = 0;
    pdcbb_err_t rc = PDCBB_OK;
    while (fd >= 0 && pos < size && rc == PDCBB_OK) {
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
        if (fd >= 0)
            close(fd);
        if (rc == PDCBB_ERR_NOMEM)
            return dw_fail(c, rc, "out of memory planning the data of rank %u", r->rank);
        return rc;
    }
    if ((rc = dw_plan_damage(c, r, p, before, src, l, fd, (uint64_t)st.st_size, limit, path, clip,
                             &s)) != PDCBB_OK) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    if (fd >= 0)
        close(fd); /* the reader opens the files one at a time */
    if (p->npieces == before)
        return PDCBB_OK;
    size_t capsrc = p->capsrc;
    char **gp = pdcbb_grow(p->paths, p->nsrc, &capsrc, sizeof(*gp), 16);
    if (gp != NULL)
        p->paths = gp;
    size_t capsz = p->capsrc;
    uint64_t *gs = pdcbb_grow(p->src_sizes, p->nsrc, &capsz, sizeof(*gs), 16);
    if (gs != NULL)
        p->src_sizes = gs;
    if (gp == NULL || gs == NULL || (gp[p->nsrc] = strdup(path)) == NULL)
        return dw_fail(c, PDCBB_ERR_NOMEM, "out of memory");
    p->capsrc = capsrc;
    gs[p->nsrc] = (uint64_t)st.st_size;
    p->nsrc++;
    return PDCBB_OK;
}

static int dw_blocksum_cmp(const void *a, const void *b)
{
    const dw_blocksum_t *x = a, *y = b;
    if (x->obj != y->obj)
        return x->obj < y->obj ? -1 : 1;
    return (x->block > y->block) - (x->block < y->block);
}

pdcbb_err_t dw_check_blocks(dw_ctx_t *c, dw_rank_t *r, dw_blocksums_t *sums, const char *store_dir,
                            int *damaged)
{
    *damaged = 0;
    if (sums->n > 1)
        qsort(sums->v, sums->n, sizeof(*sums->v), dw_blocksum_cmp);
    uint8_t *scratch = NULL;
    pdcbb_err_t rc = PDCBB_OK;
    uint64_t reread = 0;
    for (size_t i = 0; i < r->nlayouts && rc == PDCBB_OK && !*damaged; i++) {
        const dw_layout_t *l = &r->layouts[i];
        size_t first, n = dw_csums_of(r, l->obj, &first);
        int fd = -1, opened = 0;
        uint64_t size = 0;
        for (size_t k = 0; k < n && rc == PDCBB_OK && !*damaged; k++) {
            const dw_csum_t *x = &r->csums[first + k];
            if (x->rec.flags & PDCBB_CSUM_PENDING)
                continue; /* never acknowledged: drained as found (dw_plan_damage) */
            dw_blocksum_t key = {l->obj, x->block, 0};
            const dw_blocksum_t *got =
                sums->n ? bsearch(&key, sums->v, sums->n, sizeof(key), dw_blocksum_cmp) : NULL;
            if (got != NULL && got->crc == x->rec.crc)
                continue;
            if (!opened) { /* the file's size, and its bytes for blocks the copy did not read */
                char path[PATH_MAX];
                struct stat st;
                opened = 1;
                snprintf(path, sizeof(path), "%s/objects/%016" PRIx64 ".dat", store_dir, l->obj);
                if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0 &&
                    fstat(fd, &st) == 0)
                    size = (uint64_t)st.st_size;
                else if (fd >= 0 || errno != ENOENT)
                    *damaged = 1; /* unreadable: the careful pass says why */
            }
            if (*damaged)
                break;
            /* a file shorter than what was written was planned as truncated already */
            if (size < x->block * PDCBB_CSUM_BLOCK + x->rec.end)
                continue;
            if (got != NULL || fd < 0) {
                *damaged = 1; /* the bytes the copy read do not match */
                break;
            }
            /* not read whole by the copy (a hole, another rank's stripe, the file's end cut
             * to whole elements): read it now */
            if (scratch == NULL && (scratch = malloc(PDCBB_CSUM_BLOCK)) == NULL) {
                rc = dw_fail(c, PDCBB_ERR_NOMEM, "out of memory checking the data of rank %u",
                             r->rank);
                break;
            }
            int kind = 0, err = 0;
            reread++;
            if (pdcbb_csum_check(fd, size, x->block, &x->rec, scratch, &kind, &err) != PDCBB_OK)
                *damaged = 1; /* damaged or unreadable: the careful pass says which */
        }
        if (fd >= 0)
            close(fd);
    }
    free(scratch);
    if (rc == PDCBB_OK)
        PDCBB_DEBUG("rank %u: %zu block checksums from the copy, %" PRIu64 " blocks read again%s",
                    r->rank, sums->n, reread, *damaged ? ": damage found" : "");
    return rc;
}
