/*
 * pdcbb_select.h - strided hyperslab selections (HDF5's model) shared by the client library and
 * the daemon.
 *
 * A selection has ndim dimensions; along dimension d it selects count[d] blocks of block[d]
 * consecutive indices, block i starting at start[d] + i * stride[d] (stride[d] >= block[d]). The
 * selected elements are the Cartesian product of the per-dimension index sets; their packed
 * order is row-major over that product (the last dimension varies fastest), so a packed buffer
 * of a selection is an array of shape n[0] x ... x n[ndim-1], n[d] = count[d] * block[d]: its
 * "index space".
 *
 * Transfers split a selection by boxes of the object (stripes, map entries): a selection
 * clipped by a box is the product of the per-dimension sets clipped to the box's interval, whose
 * elements are a box of the index space (pdcbb_sel_index_box). Clipped selections are what
 * travel on the wire (docs/PROTOCOL.md, STRIDED_WRITE / STRIDED_READ): a fixed-size descriptor,
 * never one box per element.
 *
 * Threads: pure functions, no global state.
 */
#ifndef PDCBB_SELECT_H
#define PDCBB_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_error.h"
#include "pdcbb_region.h"

typedef struct pdcbb_sel {
    uint32_t ndim;
    uint64_t start[PDCBB_REGION_NDIM_MAX];
    uint64_t stride[PDCBB_REGION_NDIM_MAX];
    uint64_t count[PDCBB_REGION_NDIM_MAX];
    uint64_t block[PDCBB_REGION_NDIM_MAX];
} pdcbb_sel_t;

/*
 * Fill and check a selection (not yet against an object).
 *   s       [out] the selection; written only on success.
 *   ndim    [in]  1..PDCBB_REGION_NDIM_MAX.
 *   start, stride, count, block [in] ndim values each (borrowed). block may be NULL: 1 each.
 *   why     [out] on error, a sentence naming the bad value (may be NULL); whylen its size.
 * Errors: PDCBB_ERR_INVAL if a required pointer is NULL; PDCBB_ERR_BAD_REGION if ndim is out of
 * range, a count or block is 0, a block is larger than its stride, or the end of a dimension
 * (start + (count - 1) * stride + block) overflows uint64 or the element count of the
 * selection overflows uint64.
 */
pdcbb_err_t pdcbb_sel_make(pdcbb_sel_t *s, uint32_t ndim, const uint64_t *start,
                           const uint64_t *stride, const uint64_t *count, const uint64_t *block,
                           char *why, size_t whylen);

/* The smallest box holding every selected element of a valid selection. */
void pdcbb_sel_bbox(const pdcbb_sel_t *s, pdcbb_box_t *out);

/* Number of selected elements of a valid selection (checked by pdcbb_sel_make). */
uint64_t pdcbb_sel_count(const pdcbb_sel_t *s);

/*
 * Number of indices of dimension d of a valid selection that are below x (the rank of x).
 */
uint64_t pdcbb_sel_rank(const pdcbb_sel_t *s, uint32_t d, uint64_t x);

/*
 * The index-space box of the selection clipped by box clip (same ndim).
 * Returns 1 and fills *out if the clipped selection has elements, else 0.
 */
int pdcbb_sel_index_box(const pdcbb_sel_t *s, const pdcbb_box_t *clip, pdcbb_box_t *out);

/* The coordinate of index k (< count[d] * block[d]) of dimension d of a valid selection. */
uint64_t pdcbb_sel_coord(const pdcbb_sel_t *s, uint32_t d, uint64_t k);

/* 1 if the element at coordinates c (s->ndim values) is selected, else 0. */
int pdcbb_sel_contains(const pdcbb_sel_t *s, const uint64_t *c);

/*
 * Visit the contiguous runs of the selection s clipped by box clip in a row-major array of
 * shape dims (ndim == s->ndim) with unit-byte elements: fn(array_off, len, packed_off, arg) as
 * in pdcbb_box_runs, packed_off counting in the packed buffer of the clipped selection. Runs
 * adjacent in both the array and the packed buffer are merged (a stride equal to the block
 * gives whole rows). The walk costs one step per run, never per element.
 * Returns PDCBB_OK, the first non-zero value of fn, or PDCBB_ERR_BAD_REGION if the clipped
 * selection is empty, its bounding box is not within dims or another layout error of
 * pdcbb_layout_strides occurs, PDCBB_ERR_TOO_BIG if its last run would end beyond
 * PDCBB_REGION_OFFSET_MAX (2^63) bytes or the layout's strides are too large.
 */
int pdcbb_sel_runs(const pdcbb_sel_t *s, const pdcbb_box_t *clip, uint32_t ndim,
                   const uint64_t *dims, size_t unit, pdcbb_run_fn fn, void *arg);

#endif
