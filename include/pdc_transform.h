/*
 * pdc_transform.h - PDC's data transforms, where PDC declares them.
 *
 * PDCobj_transform_register and PDCbuf_map_transform_register are declared in pdc.h (included
 * here), with the types pdc_obj_transform_t, pdc_state_next_t and pdc_data_movement_t; this
 * header adds the type of a transform function and PDCbuf_io_transform_register. Threads,
 * errors and ownership follow the rules at the top of pdc.h.
 *
 * How pdcbb runs transforms
 *   A transform is a function of the application (exported: link with -rdynamic) or of a
 *   library ("function:library"), found by name when registered, with PDC's signature:
 *       size_t f(void *dataIn, pdc_var_type_t srcType, int ndim, uint64_t *dims,
 *                void **dataOut, pdc_var_type_t destType);
 *   dataIn holds the region's elements of srcType packed row-major, dims its ndim sizes. The
 *   function writes the converted elements (destType) into *dataOut, a buffer of the right size
 *   that the library provides, or sets *dataOut to a buffer it allocated with malloc (the
 *   library frees it). It returns the number of bytes produced, which must be the region's
 *   element count times the size of destType, or (size_t)-1 on failure.
 *   Transforms of mapped buffers (PDC_DATA_MAP) run in the application process when the data
 *   moves: DATA_OUT when a PDC_WRITE lock on the mapped region is released (srcType is the
 *   buffer's type given to PDCbuf_obj_map, destType the object's; what the function produces
 *   is what is stored), DATA_IN when a PDC_READ lock is granted (from the object's type to the
 *   buffer's). So a float buffer can be mapped to a double object with a float-to-double
 *   DATA_OUT transform. A transform runs only while the object's data state (0 at first, kept
 *   per process) equals its current_state; running moves the state to its next state.
 */
#ifndef PDC_TRANSFORM_H
#define PDC_TRANSFORM_H

#include "pdc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The type of a transform function (see above). */
typedef size_t (*pdc_transform_ftn_t)(void *dataIn, pdc_var_type_t srcType, int ndim,
                                      uint64_t *dims, void **dataOut, pdc_var_type_t destType);

/** @brief Register a transform of a buffer's I/O (PDC declares it and does not implement it).
 * @return FAIL with PDCBB_ERR_UNSUPPORTED (PDCBB_ERR_NOT_INIT before PDCinit), as PDC fails it.
 */
PDC_EXPORT perr_t PDCbuf_io_transform_register(char *func, void *buf, pdcid_t src_region_id,
                                               int current_state, int next_state,
                                               pdc_data_movement_t when);

#ifdef __cplusplus
}
#endif

#endif
