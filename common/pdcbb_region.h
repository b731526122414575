/*
 * pdcbb_region.h - N-dimensional region arithmetic shared by the client library and the daemon.
 *
 * A region is a box: ndim dimensions, each the half-open interval [off[d], off[d] + size[d]).
 * Arrays are laid out row-major (C order): the last dimension varies fastest. This module
 * validates boxes against object shapes, intersects them, linearises them into contiguous byte
 * runs, copies them between an array and a packed buffer, and splits them across the stripes
 * of a statically partitioned object.
 *
 * Every multiplication or addition of sizes, offsets and strides is overflow-checked. Array byte
 * strides are limited to 2^62 and byte offsets to 2^63, so callers may add a run length to any
 * offset handed to them without overflowing.
 *
 * Threads: every function here is pure (no global state) and may be called from any thread.
 * Boxes are plain values; no function keeps a pointer to its arguments after it returns.
 */
#ifndef PDCBB_REGION_H
#define PDCBB_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_error.h"

/* Most dimensions of a box (equals PDCBB_NDIM_MAX of the wire protocol). */
#define PDCBB_REGION_NDIM_MAX 16
/* An object dimension without upper bound (PDC_SIZE_UNLIMITED). */
#define PDCBB_DIM_UNLIMITED UINT64_MAX
/* Largest byte size of one row-major stride of an array (product of dims[1..] times unit). */
#define PDCBB_REGION_STRIDE_MAX (1ull << 62)
/* Largest byte offset (exclusive end) that box_runs and box_copy will produce. */
#define PDCBB_REGION_OFFSET_MAX (1ull << 63)

/*
 * A box: ndim dimensions, each [off[d], off[d] + size[d]). Entries at and beyond ndim are zero in
 * boxes built by pdcbb_box_make(), so boxes can be compared with memcmp().
 */
typedef struct pdcbb_box {
    uint32_t ndim;
    uint64_t off[PDCBB_REGION_NDIM_MAX];
    uint64_t size[PDCBB_REGION_NDIM_MAX];
} pdcbb_box_t;

/*
 * Fill a box.
 *   b     [out] the box; written only on success.
 *   ndim  [in]  number of dimensions, 1..PDCBB_REGION_NDIM_MAX.
 *   off   [in]  ndim offsets (borrowed for the call).
 *   size  [in]  ndim sizes, each at least 1 (borrowed for the call).
 * Errors: PDCBB_ERR_INVAL if a pointer is NULL; PDCBB_ERR_BAD_REGION if ndim is 0 or larger
 * than PDCBB_REGION_NDIM_MAX, a size is 0, or off[d] + size[d] overflows uint64.
 */
pdcbb_err_t pdcbb_box_make(pdcbb_box_t *b, uint32_t ndim, const uint64_t *off,
                           const uint64_t *size);

/*
 * Number of elements of a box (the product of its sizes).
 *   b      [in]  the box.
 *   count  [out] the count; written only on success.
 * Errors: PDCBB_ERR_BAD_REGION if b->ndim is 0 or larger than PDCBB_REGION_NDIM_MAX;
 * PDCBB_ERR_TOO_BIG if the product overflows uint64.
 */
pdcbb_err_t pdcbb_box_count(const pdcbb_box_t *b, uint64_t *count);

/*
 * Intersect two boxes.
 *   a, b  [in]  the boxes.
 *   out   [out] a∩b, written only if the intersection is non-empty; may alias a or b.
 * Returns 1 if the intersection is non-empty, else 0. Boxes of different ndim (or an ndim out
 * of range) do not intersect: 0.
 */
int pdcbb_box_intersect(const pdcbb_box_t *a, const pdcbb_box_t *b, pdcbb_box_t *out);

/*
 * Returns 1 if box inner lies entirely within box outer (same ndim), else 0 (also for boxes of
 * different ndim or an ndim out of range).
 */
int pdcbb_box_contains(const pdcbb_box_t *outer, const pdcbb_box_t *inner);

/*
 * Check that a box lies within an array of shape dims.
 *   b     [in] the box.
 *   ndim  [in] number of dimensions of the array.
 *   dims  [in] ndim extents (borrowed); dims[d] == PDCBB_DIM_UNLIMITED has no upper bound.
 * Returns PDCBB_OK if every [off[d], off[d] + size[d]) lies within [0, dims[d]).
 * Errors: PDCBB_ERR_BAD_REGION if b->ndim differs from ndim, ndim is out of range, a size of b
 * is 0, or the box sticks out of the array; PDCBB_ERR_INVAL if a pointer is NULL.
 */
pdcbb_err_t pdcbb_box_check_within(const pdcbb_box_t *b, uint32_t ndim, const uint64_t *dims);

/*
 * Row-major linearisation of an array of shape dims whose elements take unit bytes.
 *   ndim     [in]  number of dimensions, 1..PDCBB_REGION_NDIM_MAX.
 *   dims     [in]  ndim extents (borrowed). dims[0] may be PDCBB_DIM_UNLIMITED (the first
 *                  dimension can grow: it enters no stride); the others must be finite, non-zero.
 *   unit     [in]  bytes per element, at least 1.
 *   strides  [out] ndim strides in elements (strides[ndim-1] == 1); written only on success.
 * Errors: PDCBB_ERR_INVAL if a pointer is NULL or unit is 0; PDCBB_ERR_BAD_REGION if ndim is
 * out of range, a dimension is 0 or a dimension other than the first is unlimited;
 * PDCBB_ERR_TOO_BIG if the product of dims[1..] times unit overflows or exceeds
 * PDCBB_REGION_STRIDE_MAX (2^62) bytes.
 */
pdcbb_err_t pdcbb_layout_strides(uint32_t ndim, const uint64_t *dims, size_t unit,
                                 uint64_t *strides);

/*
 * Callback of pdcbb_box_runs(): one contiguous run of len bytes, at byte offset array_off in the
 * array and at byte offset packed_off in the packed buffer holding the box's elements in
 * row-major order. A non-zero return stops the walk.
 */
typedef int (*pdcbb_run_fn)(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg);

/*
 * Visit the contiguous runs of box b inside a row-major array of shape dims.
 *   b     [in] the box.
 *   ndim  [in] number of dimensions of the array; dims [in] its extents (as pdcbb_layout_strides).
 *   unit  [in] bytes per element.
 *   fn    [in] called once per run, in increasing order of both array_off and packed_off;
 *   arg   [in] passed to fn untouched.
 * Trailing dimensions that the box covers completely are merged with the last partially covered
 * one, so runs are as long as possible: a box covering whole rows of a 2-D array is one run.
 * The walk iterates over rows with an odometer; it does no per-element work.
 * Returns PDCBB_OK after visiting every run, or the first non-zero value fn returned (callers
 * that need to tell it apart from the errors below should return values outside pdcbb_err_t,
 * e.g. negative ones).
 * Errors: those of pdcbb_layout_strides and pdcbb_box_check_within (PDCBB_ERR_BAD_REGION if b is
 * not within dims or has another ndim); PDCBB_ERR_INVAL if fn or another pointer is NULL;
 * PDCBB_ERR_TOO_BIG if the end of the box's last run would exceed PDCBB_REGION_OFFSET_MAX (2^63)
 * bytes (possible only along an unlimited first dimension). Nothing is visited on error.
 */
int pdcbb_box_runs(const pdcbb_box_t *b, uint32_t ndim, const uint64_t *dims, size_t unit,
                   pdcbb_run_fn fn, void *arg);

/*
 * Copy box sub of an array to or from a packed buffer, one memcpy per run of pdcbb_box_runs().
 *   sub        [in]     the box.
 *   ndim, dims [in]     shape of the array (as pdcbb_layout_strides); unit [in] element bytes.
 *   array      [in/out] base of the array (read if to_packed, written otherwise).
 *   packed     [in/out] buffer of count(sub) * unit bytes holding sub's elements row-major
 *                       (written if to_packed, read otherwise). Must not overlap array.
 *   to_packed  [in]     1: array -> packed (gather); 0: packed -> array (scatter).
 * Errors: those of pdcbb_box_runs; PDCBB_ERR_INVAL if array or packed is NULL; PDCBB_ERR_TOO_BIG
 * if an offset does not fit in size_t (32-bit hosts). Nothing is copied on error.
 */
pdcbb_err_t pdcbb_box_copy(const pdcbb_box_t *sub, uint32_t ndim, const uint64_t *dims, size_t unit,
                           void *array, void *packed, int to_packed);

/*
 * Copy the intersection of two packed boxes: src holds box a's elements packed row-major, dst
 * holds box b's; the elements of a∩b are copied from src to dst at their positions in each.
 * Used to assemble a read from stored pieces and to check data in tests.
 *   a, src  [in]     the source box and its count(a) * unit bytes.
 *   b, dst  [in/out] the destination box (in) and its count(b) * unit bytes (written).
 *   unit    [in]     bytes per element.
 * src and dst must not overlap.
 * Returns 1 if something was copied, 0 if the boxes do not intersect (or differ in ndim), and
 * -1 (nothing copied) if a pointer is NULL, unit is 0, or count(a) * unit or count(b) * unit
 * exceeds PDCBB_REGION_OFFSET_MAX or SIZE_MAX: such boxes cannot be held in memory, so -1 means
 * a caller bug.
 */
int pdcbb_box_copy_overlap(const pdcbb_box_t *a, const void *src, const pdcbb_box_t *b, void *dst,
                           size_t unit);

/*
 * Split box b along dimension dim at the boundaries of a static partition of that dimension of
 * an object of extent 'extent' into n equal stripes: stripe k = [k*w, (k+1)*w) with
 * w = ceil(extent / n). The last stripe, n-1, also takes everything beyond (n-1)*w, so the
 * pieces always cover the whole box, even if it reaches past extent.
 *   b          [in]  the box.
 *   dim        [in]  the dimension to split, < b->ndim.
 *   extent     [in]  the object's extent along dim.
 *   n          [in]  number of stripes (0 is treated as 1).
 *   pieces     [out] room for n boxes (at least 1); pieces[i] is the part of b in stripe
 *                    stripe_of[i]. May alias b.
 *   stripe_of  [out] room for n stripe numbers, increasing.
 * Returns the number of pieces (>= 1). If extent is PDCBB_DIM_UNLIMITED or smaller than n, or n
 * is at most 1, returns 1 piece (the whole box) in stripe 0. Returns 0 (nothing written) if dim
 * is not a dimension of b, b->ndim is out of range or a pointer is NULL.
 */
int pdcbb_box_split_stripes(const pdcbb_box_t *b, uint32_t dim, uint64_t extent, unsigned n,
                            pdcbb_box_t *pieces, unsigned *stripe_of);

/*
 * PDCBB_REGION_STRIPED (pdc.h): the first dimension cut into stripes of about
 * PDCBB_STRIPE_BYTES, stripe k on daemon (home + k) mod nservers, so a large object is spread
 * over every daemon and a small one stays on its home. A stripe's bytes are a multiple of
 * PDCBB_STRIPE_ALIGN, so in a daemon's data file (laid out like the object) no filesystem
 * block holds bytes of two stripes: the drain's SEEK_DATA ranges of different daemons never
 * overlap.
 */
#define PDCBB_STRIPE_BYTES ((uint64_t)1 << 20)
#define PDCBB_STRIPE_ALIGN ((uint64_t)1 << 16)
/* Rows (of the first dimension) per stripe for rows of row_bytes bytes (an element's size
 * times the other dimensions' extents): at least PDCBB_STRIPE_BYTES worth, a multiple of
 * PDCBB_STRIPE_ALIGN bytes; 0 if row_bytes is 0 or the stripe would not fit in 64 bits. */
uint64_t pdcbb_stripe_rows(uint64_t row_bytes);
/* The stripes box b touches: first (out) and count (return); 0 for a bad box or rows 0. */
uint64_t pdcbb_box_stripe_span(const pdcbb_box_t *b, uint64_t rows, uint64_t *first);
/* The part of box b in stripe k (rows per stripe): 1 with *part set, 0 if b has none. */
int pdcbb_box_stripe_part(const pdcbb_box_t *b, uint64_t rows, uint64_t k, pdcbb_box_t *part);
/* The daemon of stripe k of an object whose home is home, among n (n 0 is treated as 1). */
static inline unsigned pdcbb_stripe_daemon(uint64_t k, unsigned home, unsigned n)
{
    return n <= 1 ? 0 : (unsigned)((home % n + k % n) % n);
}

#endif
