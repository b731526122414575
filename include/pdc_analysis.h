/*
 * pdc_analysis.h - PDC's data iterators and analysis functions, where PDC declares them.
 *
 * PDC applications that register analyses include this header for the iterator functions an
 * analysis uses (PDCobj_data_getSliceCount, PDCobj_data_getNextBlock). The iterator and
 * registration functions themselves (PDCobj_data_iter_create, PDCobj_data_block_iterator_create,
 * PDCobj_analysis_register, PDCiter_get_nextId) are declared in pdc.h, which this header
 * includes; threads, errors and ownership follow the rules at the top of pdc.h.
 *
 * How pdcbb runs analyses
 *   An analysis is a function of the application (or of a library), found by name:
 *       int my_analysis(pdcid_t iterIn, pdcid_t iterOut);
 *   PDCobj_analysis_register("my_analysis", in, out) looks it up in the application (which
 *   must export it: link with -rdynamic) or, for "my_analysis:libfoo.so", in that library
 *   (looked for in the application's directory first). It runs in the registering process,
 *   not in a daemon: once at registration, and again each time this process writes a region of
 *   the input iterator's object that overlaps the iterator's region (releasing a PDC_WRITE
 *   lock on a mapped region, a completed PDCregion_transfer write, PDCobj_put_data). Before
 *   each run both iterators hold their regions as stored; the function reads the input blocks
 *   and fills the output blocks through PDCobj_data_getNextBlock; afterwards the output region
 *   is written to its object. Writes of other processes do not run this process's analyses.
 */
#ifndef PDC_ANALYSIS_H
#define PDC_ANALYSIS_H

#include <stddef.h>

#include "pdc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A region id meaning "the whole object" for PDCobj_data_iter_create, and the null iterator. */
#ifndef PDC_REGION_ALL
#define PDC_REGION_ALL ((pdcid_t)(-1))
#endif
#ifndef PDC_ITER_NULL
#define PDC_ITER_NULL ((pdcid_t)(0))
#endif

/* The type of an analysis function (PDCobj_analysis_register). Negative: failure. */
typedef int (*pdc_analysis_ftn_t)(pdcid_t iterIn, pdcid_t iterOut);

/** @brief Number of blocks an iterator returns (slices of the region's first dimension,
 *         contig_blocks at a time).
 * @param[in] iter  an iterator id, or 0 (the null iterator).
 * @return the number of blocks; 0 for the null iterator or a bad id (PDCBB_ERR_BAD_ID).
 */
PDC_EXPORT size_t PDCobj_data_getSliceCount(pdcid_t iter);

/** @brief The next block of an iterator.
 *
 * A block is contig_blocks slices of the region's first dimension (row-major: rows of a 2-D
 * region, planes of a 3-D one), or fewer at the end. After the last block the call returns 0
 * and the next call starts again from the first block, as in PDC.
 * @param[in]  iter       an iterator id, or 0 (the null iterator: returns 0).
 * @param[out] nextBlock  receives a pointer to the block's elements, packed row-major, or NULL
 *                        at the end. The memory belongs to the iterator: valid until the next
 *                        run of an analysis using it or PDCclose. During an analysis, what is
 *                        written through an output iterator's blocks is stored when the
 *                        analysis returns. May be NULL.
 * @param[out] dims       receives the block's extent in up to 3 dimensions (slices, then the
 *                        region's sizes); may be NULL.
 * @return the number of elements in the block; 0 at the end or on failure.
 * The data an iterator walks outside an analysis is read at its first call: from the object's
 * buffer given with PDCprop_set_obj_buf when it has one (as PDC's client iterators), else from
 * the daemons.
 * Errors: PDCBB_ERR_BAD_ID (not an iterator of this process), those of a region read.
 */
PDC_EXPORT size_t PDCobj_data_getNextBlock(pdcid_t iter, void **nextBlock, size_t *dims);

#ifdef __cplusplus
}
#endif

#endif
