/*
 * pdcbb_region.c - N-dimensional box arithmetic (see pdcbb_region.h).
 *
 * Owns box validation, intersection, row-major linearisation and the run walker that every
 * region copy in the client and the daemon goes through. The walker reduces a box to a few
 * "outer" dimensions driven by an odometer and one contiguous run per odometer position; both
 * pdcbb_box_runs() (array <-> packed) and pdcbb_box_copy_overlap() (packed <-> packed) are set
 * up as such a walk over two byte layouts.
 */
#include "pdcbb_region.h"

#include <string.h>

#include "pdcbb_checked.h"

/* 1 if ndim is a valid number of dimensions. */
static int region_ndim_ok(uint32_t ndim)
{
    return ndim >= 1 && ndim <= PDCBB_REGION_NDIM_MAX;
}

/*
 * Exclusive end of a box along d, saturated at UINT64_MAX. Boxes from pdcbb_box_make() never
 * saturate; saturation only keeps hand-filled, invalid boxes from wrapping around.
 */
static uint64_t region_end(const pdcbb_box_t *b, uint32_t d)
{
    uint64_t end;
    if (pdcbb_add_overflow(b->off[d], b->size[d], &end))
        return UINT64_MAX;
    return end;
}

/*
 * A walk over two byte layouts of the same box ("a" and "b"): the odometer runs over nouter
 * dimensions (outermost first), dimension k taking count[k] steps of step_a[k] / step_b[k]
 * bytes; each position is one run of len bytes starting at base + the steps taken.
 */
typedef struct region_walk {
    uint32_t nouter;
    uint64_t count[PDCBB_REGION_NDIM_MAX];
    uint64_t step_a[PDCBB_REGION_NDIM_MAX];
    uint64_t step_b[PDCBB_REGION_NDIM_MAX];
    uint64_t base_a, base_b;
    uint64_t len;
} region_walk_t;

/*
 * Drive a prepared walk. The caller has checked that every offset reached stays below
 * PDCBB_REGION_OFFSET_MAX, so the additions here cannot overflow. The innermost outer
 * dimension is a plain loop; the odometer only moves once per row of runs.
 */
static int region_walk_run(const region_walk_t *w, pdcbb_run_fn fn, void *arg)
{
    if (w->nouter == 0)
        return fn(w->base_a, w->len, w->base_b, arg);

    uint64_t idx[PDCBB_REGION_NDIM_MAX] = {0};
    uint32_t last = w->nouter - 1;
    uint64_t a = w->base_a, b = w->base_b;
    const uint64_t n_in = w->count[last], sa_in = w->step_a[last], sb_in = w->step_b[last];
    const uint64_t len = w->len;
    for (;;) {
        uint64_t ra = a, rb = b;
        for (uint64_t i = 0; i < n_in; i++) {
            int rc = fn(ra, len, rb, arg);
            if (rc != 0)
                return rc;
            ra += sa_in;
            rb += sb_in;
        }
        /* Advance the odometer over dimensions 0..last-1; rewind those that wrap. */
        uint32_t d = last;
        for (;;) {
            if (d == 0)
                return 0;
            d--;
            if (++idx[d] < w->count[d]) {
                a += w->step_a[d];
                b += w->step_b[d];
                break;
            }
            idx[d] = 0;
            a -= (w->count[d] - 1) * w->step_a[d];
            b -= (w->count[d] - 1) * w->step_b[d];
        }
    }
}

/* Add dimension d (count steps of sa / sb bytes) to a walk's odometer unless it is trivial. */
static void region_walk_add(region_walk_t *w, uint64_t count, uint64_t sa, uint64_t sb)
{
    /* A dimension of one step only shifts the base, which the caller already accounted for. */
    if (count <= 1)
        return;
    w->count[w->nouter] = count;
    w->step_a[w->nouter] = sa;
    w->step_b[w->nouter] = sb;
    w->nouter++;
}

pdcbb_err_t pdcbb_box_make(pdcbb_box_t *b, uint32_t ndim, const uint64_t *off, const uint64_t *size)
{
    if (b == NULL || off == NULL || size == NULL)
        return PDCBB_ERR_INVAL;
    if (!region_ndim_ok(ndim))
        return PDCBB_ERR_BAD_REGION;
    for (uint32_t d = 0; d < ndim; d++) {
        uint64_t end;
        if (size[d] == 0 || pdcbb_add_overflow(off[d], size[d], &end))
            return PDCBB_ERR_BAD_REGION;
    }
    /* Zero the unused tail so that boxes compare equal with memcmp. */
    memset(b, 0, sizeof(*b));
    b->ndim = ndim;
    memcpy(b->off, off, ndim * sizeof(off[0]));
    memcpy(b->size, size, ndim * sizeof(size[0]));
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_box_count(const pdcbb_box_t *b, uint64_t *count)
{
    if (b == NULL || count == NULL)
        return PDCBB_ERR_INVAL;
    if (!region_ndim_ok(b->ndim))
        return PDCBB_ERR_BAD_REGION;
    uint64_t n = 1;
    for (uint32_t d = 0; d < b->ndim; d++)
        if (pdcbb_mul_overflow(n, b->size[d], &n))
            return PDCBB_ERR_TOO_BIG;
    *count = n;
    return PDCBB_OK;
}

int pdcbb_box_intersect(const pdcbb_box_t *a, const pdcbb_box_t *b, pdcbb_box_t *out)
{
    if (a == NULL || b == NULL || a->ndim != b->ndim || !region_ndim_ok(a->ndim))
        return 0;
    /* Build in a temporary: out may alias a or b. */
    pdcbb_box_t r;
    memset(&r, 0, sizeof(r));
    r.ndim = a->ndim;
    for (uint32_t d = 0; d < a->ndim; d++) {
        uint64_t lo = a->off[d] > b->off[d] ? a->off[d] : b->off[d];
        uint64_t ea = region_end(a, d), eb = region_end(b, d);
        uint64_t hi = ea < eb ? ea : eb;
        if (hi <= lo)
            return 0;
        r.off[d] = lo;
        r.size[d] = hi - lo;
    }
    if (out != NULL)
        *out = r;
    return 1;
}

int pdcbb_box_contains(const pdcbb_box_t *outer, const pdcbb_box_t *inner)
{
    if (outer == NULL || inner == NULL || outer->ndim != inner->ndim ||
        !region_ndim_ok(outer->ndim))
        return 0;
    for (uint32_t d = 0; d < outer->ndim; d++) {
        /* inner.off >= outer.off and inner.end <= outer.end, without forming either end. */
        if (inner->off[d] < outer->off[d])
            return 0;
        uint64_t rel = inner->off[d] - outer->off[d];
        if (rel > outer->size[d] || inner->size[d] > outer->size[d] - rel)
            return 0;
    }
    return 1;
}

pdcbb_err_t pdcbb_box_check_within(const pdcbb_box_t *b, uint32_t ndim, const uint64_t *dims)
{
    if (b == NULL || dims == NULL)
        return PDCBB_ERR_INVAL;
    if (b->ndim != ndim || !region_ndim_ok(ndim))
        return PDCBB_ERR_BAD_REGION;
    for (uint32_t d = 0; d < ndim; d++) {
        uint64_t end;
        if (b->size[d] == 0 || pdcbb_add_overflow(b->off[d], b->size[d], &end))
            return PDCBB_ERR_BAD_REGION;
        if (dims[d] != PDCBB_DIM_UNLIMITED && end > dims[d])
            return PDCBB_ERR_BAD_REGION;
    }
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_layout_strides(uint32_t ndim, const uint64_t *dims, size_t unit,
                                 uint64_t *strides)
{
    if (dims == NULL || strides == NULL || unit == 0)
        return PDCBB_ERR_INVAL;
    if (!region_ndim_ok(ndim))
        return PDCBB_ERR_BAD_REGION;
    /* Shape errors first, so that a bad shape is never reported as merely too big. */
    for (uint32_t d = 0; d < ndim; d++)
        if (dims[d] == 0 || (d > 0 && dims[d] == PDCBB_DIM_UNLIMITED))
            return PDCBB_ERR_BAD_REGION;
    uint64_t st[PDCBB_REGION_NDIM_MAX];
    uint64_t elems = 1, bytes;
    st[ndim - 1] = 1;
    for (uint32_t d = ndim - 1; d > 0; d--) {
        if (pdcbb_mul_overflow(elems, dims[d], &elems))
            return PDCBB_ERR_TOO_BIG;
        st[d - 1] = elems;
    }
    /* Check the bytes of the largest stride (elems is now the product of dims[1..]). */
    if (pdcbb_mul_overflow(elems, (uint64_t)unit, &bytes) || bytes > PDCBB_REGION_STRIDE_MAX)
        return PDCBB_ERR_TOO_BIG;
    memcpy(strides, st, ndim * sizeof(st[0]));
    return PDCBB_OK;
}

int pdcbb_box_runs(const pdcbb_box_t *b, uint32_t ndim, const uint64_t *dims, size_t unit,
                   pdcbb_run_fn fn, void *arg)
{
    if (b == NULL || dims == NULL || fn == NULL)
        return PDCBB_ERR_INVAL;
    if (b->ndim != ndim)
        return PDCBB_ERR_BAD_REGION;
    uint64_t st[PDCBB_REGION_NDIM_MAX];
    pdcbb_err_t err = pdcbb_layout_strides(ndim, dims, unit, st);
    if (err != PDCBB_OK)
        return err;
    err = pdcbb_box_check_within(b, ndim, dims);
    if (err != PDCBB_OK)
        return err;

    /*
     * The largest byte offset reached is the end of the box's last element; every other offset
     * computed below (run starts, steps, run lengths, packed offsets) is smaller, so checking
     * this one sum bounds them all. Only an unlimited first dimension can actually make it big.
     */
    uint64_t last = 0, end;
    for (uint32_t d = 0; d < ndim; d++) {
        uint64_t t;
        if (pdcbb_mul_overflow(b->off[d] + b->size[d] - 1, st[d], &t) ||
            pdcbb_add_overflow(last, t, &last))
            return PDCBB_ERR_TOO_BIG;
    }
    if (pdcbb_add_overflow(last, 1, &last) || pdcbb_mul_overflow(last, (uint64_t)unit, &end) ||
        end > PDCBB_REGION_OFFSET_MAX)
        return PDCBB_ERR_TOO_BIG;

    /* Merge trailing dimensions the box covers completely into the run of the one before. */
    uint32_t m = ndim - 1;
    while (m > 0 && b->off[m] == 0 && b->size[m] == dims[m])
        m--;

    region_walk_t w;
    w.nouter = 0;
    w.base_a = 0;
    w.base_b = 0;
    w.len = b->size[m] * st[m] * unit;
    uint64_t packed_stride[PDCBB_REGION_NDIM_MAX];
    packed_stride[ndim - 1] = unit;
    for (uint32_t d = ndim - 1; d > 0; d--)
        packed_stride[d - 1] = packed_stride[d] * b->size[d];
    for (uint32_t d = 0; d < ndim; d++)
        w.base_a += b->off[d] * st[d] * unit;
    for (uint32_t d = 0; d < m; d++)
        region_walk_add(&w, b->size[d], st[d] * unit, packed_stride[d]);
    return region_walk_run(&w, fn, arg);
}

/* Argument of region_copy_run: the two buffers of a copy. */
typedef struct region_copy_arg {
    unsigned char *array;
    unsigned char *packed;
    int to_packed;
} region_copy_arg_t;

static int region_copy_run(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    region_copy_arg_t *c = arg;
    if (c->to_packed)
        memcpy(c->packed + packed_off, c->array + array_off, (size_t)len);
    else
        memcpy(c->array + array_off, c->packed + packed_off, (size_t)len);
    return 0;
}

#if SIZE_MAX < UINT64_MAX
/* On hosts with a narrow size_t, refuse walks whose offsets do not fit before copying. */
static int region_fits_run(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    (void)arg;
    if (len > SIZE_MAX || array_off > SIZE_MAX - len || packed_off > SIZE_MAX - len)
        return PDCBB_ERR_TOO_BIG;
    return 0;
}
#endif

pdcbb_err_t pdcbb_box_copy(const pdcbb_box_t *sub, uint32_t ndim, const uint64_t *dims, size_t unit,
                           void *array, void *packed, int to_packed)
{
    if (array == NULL || packed == NULL)
        return PDCBB_ERR_INVAL;
#if SIZE_MAX < UINT64_MAX
    {
        int rc = pdcbb_box_runs(sub, ndim, dims, unit, region_fits_run, NULL);
        if (rc != 0)
            return (pdcbb_err_t)rc;
    }
#endif
    region_copy_arg_t c = {array, packed, to_packed};
    return (pdcbb_err_t)pdcbb_box_runs(sub, ndim, dims, unit, region_copy_run, &c);
}

/* Argument of region_overlap_run: source and destination of a packed-to-packed copy. */
typedef struct region_overlap_arg {
    const unsigned char *src;
    unsigned char *dst;
} region_overlap_arg_t;

static int region_overlap_run(uint64_t src_off, uint64_t len, uint64_t dst_off, void *arg)
{
    region_overlap_arg_t *c = arg;
    memcpy(c->dst + dst_off, c->src + src_off, (size_t)len);
    return 0;
}

/*
 * Byte strides of a box packed row-major (stride[ndim-1] == unit). Returns 0 if its total size
 * exceeds PDCBB_REGION_OFFSET_MAX or SIZE_MAX, which bounds every stride too.
 */
static int region_packed_strides(const pdcbb_box_t *b, size_t unit, uint64_t *stride)
{
    uint64_t total = unit;
    for (uint32_t d = b->ndim; d > 0; d--) {
        stride[d - 1] = total;
        if (pdcbb_mul_overflow(total, b->size[d - 1], &total))
            return 0;
    }
    return total <= PDCBB_REGION_OFFSET_MAX && total <= SIZE_MAX;
}

int pdcbb_box_copy_overlap(const pdcbb_box_t *a, const void *src, const pdcbb_box_t *b, void *dst,
                           size_t unit)
{
    if (a == NULL || b == NULL || src == NULL || dst == NULL || unit == 0)
        return -1;
    pdcbb_box_t x;
    if (!pdcbb_box_intersect(a, b, &x))
        return 0;
    uint64_t sa[PDCBB_REGION_NDIM_MAX] = {0}, sb[PDCBB_REGION_NDIM_MAX] = {0};
    if (!region_packed_strides(a, unit, sa) || !region_packed_strides(b, unit, sb))
        return -1;

    /*
     * A trailing dimension merges when the intersection spans it fully in both boxes; then the
     * two boxes' strides agree from there on and one memcpy covers it. x lies within a and b,
     * so every offset below is less than the (checked) packed size of a or b.
     */
    uint32_t m = x.ndim - 1;
    while (m > 0 && x.size[m] == a->size[m] && x.size[m] == b->size[m])
        m--;
    region_walk_t w;
    w.nouter = 0;
    w.base_a = 0;
    w.base_b = 0;
    w.len = x.size[m] * sa[m];
    for (uint32_t d = 0; d < x.ndim; d++) {
        w.base_a += (x.off[d] - a->off[d]) * sa[d];
        w.base_b += (x.off[d] - b->off[d]) * sb[d];
    }
    for (uint32_t d = 0; d < m; d++)
        region_walk_add(&w, x.size[d], sa[d], sb[d]);
    region_overlap_arg_t c = {src, dst};
    region_walk_run(&w, region_overlap_run, &c);
    return 1;
}

int pdcbb_box_split_stripes(const pdcbb_box_t *b, uint32_t dim, uint64_t extent, unsigned n,
                            pdcbb_box_t *pieces, unsigned *stripe_of)
{
    if (b == NULL || pieces == NULL || stripe_of == NULL || !region_ndim_ok(b->ndim) ||
        dim >= b->ndim)
        return 0;
    pdcbb_box_t whole = *b; /* pieces may alias b */
    if (n <= 1 || extent == PDCBB_DIM_UNLIMITED || extent < n) {
        pieces[0] = whole;
        stripe_of[0] = 0;
        return 1;
    }
    uint64_t w = extent / n + (extent % n != 0);
    uint64_t lo = whole.off[dim];
    uint64_t hi = region_end(&whole, dim); /* exclusive; > lo for a valid box */
    uint64_t k_first = lo / w, k_last = (hi - 1) / w;
    if (k_first > n - 1)
        k_first = n - 1;
    if (k_last > n - 1)
        k_last = n - 1;
    int np = 0;
    for (uint64_t k = k_first; k <= k_last; k++) {
        /* k*w <= hi-1 and, for k < k_last, (k+1)*w <= hi-1: neither can overflow. */
        uint64_t s = k == k_first ? lo : k * w;
        uint64_t e = k == k_last ? hi : (k + 1) * w;
        pieces[np] = whole;
        pieces[np].off[dim] = s;
        pieces[np].size[dim] = e - s;
        stripe_of[np] = (unsigned)k;
        np++;
    }
    return np;
}

uint64_t pdcbb_stripe_rows(uint64_t row_bytes)
{
    if (row_bytes == 0)
        return 0;
    /* rows such that rows * row_bytes is a multiple of the alignment: a multiple of
     * ALIGN / gcd(row_bytes, ALIGN) */
    uint64_t g = PDCBB_STRIPE_ALIGN, r = row_bytes;
    while (r != 0) {
        uint64_t t = g % r;
        g = r;
        r = t;
    }
    uint64_t step = PDCBB_STRIPE_ALIGN / g;
    uint64_t rows = PDCBB_STRIPE_BYTES / row_bytes + (PDCBB_STRIPE_BYTES % row_bytes != 0);
    rows = (rows + step - 1) / step * step;
    uint64_t bytes;
    return pdcbb_mul_overflow(rows, row_bytes, &bytes) ? 0 : rows;
}

uint64_t pdcbb_box_stripe_span(const pdcbb_box_t *b, uint64_t rows, uint64_t *first)
{
    *first = 0;
    if (b == NULL || rows == 0 || !region_ndim_ok(b->ndim) || b->size[0] == 0)
        return 0;
    uint64_t lo = b->off[0], hi = region_end(b, 0); /* exclusive */
    *first = lo / rows;
    return (hi - 1) / rows - *first + 1;
}

int pdcbb_box_stripe_part(const pdcbb_box_t *b, uint64_t rows, uint64_t k, pdcbb_box_t *part)
{
    if (b == NULL || rows == 0 || !region_ndim_ok(b->ndim) || b->size[0] == 0)
        return 0;
    uint64_t lo = b->off[0], hi = region_end(b, 0), s, e;
    if (pdcbb_mul_overflow(k, rows, &s) || s >= hi)
        return 0;
    e = pdcbb_add_overflow(s, rows, &e) ? UINT64_MAX : e;
    if (e <= lo)
        return 0;
    *part = *b;
    part->off[0] = s > lo ? s : lo;
    part->size[0] = (e < hi ? e : hi) - part->off[0];
    return 1;
}
