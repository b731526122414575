/*
 * pdcbb_select.c - strided hyperslab selections: checks, ranks, clipping and the run walk
 * (see pdcbb_select.h).
 */
#include <stdio.h>
#include <string.h>

#include "pdcbb_checked.h"
#include "pdcbb_select.h"

pdcbb_err_t pdcbb_sel_make(pdcbb_sel_t *s, uint32_t ndim, const uint64_t *start,
                           const uint64_t *stride, const uint64_t *count, const uint64_t *block,
                           char *why, size_t whylen)
{
    char tmp[8];
    if (why == NULL) {
        why = tmp;
        whylen = sizeof(tmp);
    }
    why[0] = '\0';
    if (s == NULL || start == NULL || stride == NULL || count == NULL) {
        snprintf(why, whylen, "start, stride or count is NULL");
        return PDCBB_ERR_INVAL;
    }
    if (ndim == 0 || ndim > PDCBB_REGION_NDIM_MAX) {
        snprintf(why, whylen, "%u dimensions (1..%d allowed)", ndim, PDCBB_REGION_NDIM_MAX);
        return PDCBB_ERR_BAD_REGION;
    }
    pdcbb_sel_t t;
    memset(&t, 0, sizeof(t));
    t.ndim = ndim;
    uint64_t total = 1;
    for (uint32_t d = 0; d < ndim; d++) {
        uint64_t b = block ? block[d] : 1, end;
        if (count[d] == 0) {
            snprintf(why, whylen, "count[%u] is 0", d);
            return PDCBB_ERR_BAD_REGION;
        }
        if (b == 0) {
            snprintf(why, whylen, "block[%u] is 0", d);
            return PDCBB_ERR_BAD_REGION;
        }
        if (b > stride[d]) {
            snprintf(why, whylen, "block[%u] = %llu is larger than stride[%u] = %llu", d,
                     (unsigned long long)b, d, (unsigned long long)stride[d]);
            return PDCBB_ERR_BAD_REGION;
        }
        if (pdcbb_mul_overflow(count[d] - 1, stride[d], &end) ||
            pdcbb_add_overflow(end, start[d], &end) || pdcbb_add_overflow(end, b, &end) ||
            pdcbb_mul_overflow(total, count[d], &total) || pdcbb_mul_overflow(total, b, &total)) {
            snprintf(why, whylen,
                     "dimension %u overflows (start %llu + (count %llu - 1) * stride %llu + "
                     "block %llu, or the element count, exceeds 2^64)",
                     d, (unsigned long long)start[d], (unsigned long long)count[d],
                     (unsigned long long)stride[d], (unsigned long long)b);
            return PDCBB_ERR_BAD_REGION;
        }
        t.start[d] = start[d];
        t.stride[d] = stride[d];
        t.count[d] = count[d];
        t.block[d] = b;
    }
    *s = t;
    return PDCBB_OK;
}

void pdcbb_sel_bbox(const pdcbb_sel_t *s, pdcbb_box_t *out)
{
    memset(out, 0, sizeof(*out));
    out->ndim = s->ndim;
    for (uint32_t d = 0; d < s->ndim; d++) {
        out->off[d] = s->start[d];
        out->size[d] = (s->count[d] - 1) * s->stride[d] + s->block[d];
    }
}

uint64_t pdcbb_sel_count(const pdcbb_sel_t *s)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < s->ndim; d++)
        n *= s->count[d] * s->block[d];
    return n;
}

uint64_t pdcbb_sel_rank(const pdcbb_sel_t *s, uint32_t d, uint64_t x)
{
    if (x <= s->start[d])
        return 0;
    uint64_t r = x - s->start[d], i = r / s->stride[d], j = r % s->stride[d];
    if (i >= s->count[d])
        return s->count[d] * s->block[d];
    return i * s->block[d] + (j < s->block[d] ? j : s->block[d]);
}

uint64_t pdcbb_sel_coord(const pdcbb_sel_t *s, uint32_t d, uint64_t k)
{
    return s->start[d] + (k / s->block[d]) * s->stride[d] + k % s->block[d];
}

int pdcbb_sel_index_box(const pdcbb_sel_t *s, const pdcbb_box_t *clip, pdcbb_box_t *out)
{
    if (clip->ndim != s->ndim)
        return 0;
    pdcbb_box_t b;
    memset(&b, 0, sizeof(b));
    b.ndim = s->ndim;
    for (uint32_t d = 0; d < s->ndim; d++) {
        uint64_t lo = pdcbb_sel_rank(s, d, clip->off[d]);
        uint64_t hi = pdcbb_sel_rank(s, d, clip->off[d] + clip->size[d]);
        if (hi <= lo)
            return 0;
        b.off[d] = lo;
        b.size[d] = hi - lo;
    }
    *out = b;
    return 1;
}

int pdcbb_sel_contains(const pdcbb_sel_t *s, const uint64_t *c)
{
    for (uint32_t d = 0; d < s->ndim; d++) {
        if (c[d] < s->start[d])
            return 0;
        uint64_t r = c[d] - s->start[d];
        if (r / s->stride[d] >= s->count[d] || r % s->stride[d] >= s->block[d])
            return 0;
    }
    return 1;
}

typedef struct pending {
    uint64_t aoff, len, poff;
    int have;
} pending_t;

int pdcbb_sel_runs(const pdcbb_sel_t *s, const pdcbb_box_t *clip, uint32_t ndim,
                   const uint64_t *dims, size_t unit, pdcbb_run_fn fn, void *arg)
{
    if (s == NULL || clip == NULL || dims == NULL || fn == NULL || unit == 0)
        return PDCBB_ERR_INVAL;
    pdcbb_box_t ib;
    uint64_t strides[PDCBB_REGION_NDIM_MAX];
    if (ndim != s->ndim || !pdcbb_sel_index_box(s, clip, &ib))
        return PDCBB_ERR_BAD_REGION;
    pdcbb_err_t rc = pdcbb_layout_strides(ndim, dims, unit, strides);
    if (rc != PDCBB_OK)
        return rc;
    /* Every coordinate of the clipped selection within the array, and the byte end in range. */
    uint64_t last_end = 0;
    for (uint32_t d = 0; d < ndim; d++) {
        uint64_t c = pdcbb_sel_coord(s, d, ib.off[d] + ib.size[d] - 1), t;
        if (dims[d] != PDCBB_DIM_UNLIMITED && c >= dims[d])
            return PDCBB_ERR_BAD_REGION;
        if (pdcbb_mul_overflow(c, strides[d] * unit, &t) ||
            pdcbb_add_overflow(last_end, t, &last_end))
            return PDCBB_ERR_TOO_BIG;
    }
    if (!pdcbb_range_ok(last_end, unit, PDCBB_REGION_OFFSET_MAX))
        return PDCBB_ERR_TOO_BIG;
    /* Odometer over the index box of dimensions 0..ndim-2; each row walks the last one. */
    uint32_t L = ndim - 1;
    uint64_t k[PDCBB_REGION_NDIM_MAX];
    memcpy(k, ib.off, sizeof(uint64_t) * ndim);
    uint64_t poff = 0;
    pending_t p = {0, 0, 0, 0};
    for (;;) {
        uint64_t base = 0;
        for (uint32_t d = 0; d < L; d++)
            base += pdcbb_sel_coord(s, d, k[d]) * strides[d] * unit;
        /* The last dimension block by block, without a division per block. */
        uint64_t kk = ib.off[L], kend = ib.off[L] + ib.size[L], blk = s->block[L];
        uint64_t within = kk % blk;
        uint64_t bstart = base + (s->start[L] + (kk / blk) * s->stride[L]) * unit;
        uint64_t bstep = s->stride[L] * unit;
        while (kk < kend) {
            uint64_t n = blk - within < kend - kk ? blk - within : kend - kk;
            uint64_t aoff = bstart + within * unit, len = n * unit;
            bstart += bstep;
            within = 0;
            if (p.have && p.aoff + p.len == aoff && p.poff + p.len == poff) {
                p.len += len;
            } else {
                if (p.have) {
                    int r = fn(p.aoff, p.len, p.poff, arg);
                    if (r != 0)
                        return r;
                }
                p = (pending_t){aoff, len, poff, 1};
            }
            poff += len;
            kk += n;
        }
        /* Next row. */
        int d = (int)L - 1;
        while (d >= 0) {
            if (++k[d] < ib.off[d] + ib.size[d])
                break;
            k[d] = ib.off[d];
            d--;
        }
        if (d < 0)
            break;
    }
    return p.have ? fn(p.aoff, p.len, p.poff, arg) : PDCBB_OK;
}
