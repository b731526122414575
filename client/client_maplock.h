/*
 * client_maplock.h - buffer maps, region locks, transforms and analyses of libpdc.
 *
 * pdc_maplock.c   PDCbuf_obj_map/unmap, PDCreg_obtain_lock/release_lock: maps are this
 *                 process's (buffer, local region) -> (object, region) ties; locks are granted
 *                 by the object's home daemon (LOCK_OBTAIN / LOCK_RELEASE, bbd/bbd_lock.c).
 * pdc_transform.c PDCobj_transform_register, PDCbuf_map_transform_register: functions found by
 *                 name (client_udf_resolve) and run in this process when a mapped buffer's data
 *                 moves (DATA_OUT at a write lock's release, DATA_IN at a read lock's grant).
 * pdc_analysis.c  iterators (PDCobj_data_iter_create, PDCobj_data_getNextBlock, ...) and
 *                 PDCobj_analysis_register: functions run in this process when this process
 *                 writes a region of the input iterator's object (client_analysis_written).
 * Everything runs under the library lock.
 */
#ifndef CLIENT_MAPLOCK_H
#define CLIENT_MAPLOCK_H

#include "client_transfer.h"

/*
 * One synchronous transfer between box local of a buffer of shape local_shape (offset + size
 * per dimension, as PDCregion_transfer_create's local region) and box remote of object o
 * (described by o; the object id need not be open). A completed write tells the analyses
 * (client_analysis_written). Errors: as PDCregion_transfer_start/wait; the thread's error names
 * fn and the object.
 */
pdcbb_err_t client_transfer_box(const client_obj_t *o, pdc_access_t access, void *buf,
                                const pdcbb_box_t *local, const uint64_t *local_shape,
                                const pdcbb_box_t *remote, const char *fn);
/* The same for a buffer holding exactly the elements of remote, packed row-major. */
pdcbb_err_t client_transfer_packed(const client_obj_t *o, pdc_access_t access, void *packed,
                                   const pdcbb_box_t *remote, const char *fn);

/* Element size of an object's type as transfers use it (PDC_STRING: 1 byte); 0 if none. */
size_t client_obj_unit(const client_obj_t *o);

/*
 * Find a user function by PDC's "function[:library]" spec: without a library, in the
 * application itself (the executable must export it: link with -rdynamic) or any library it
 * loaded, then in default_lib (PDC's libpdcanalysis.so / libpdctransforms.so) in the
 * application's directory; with a library, that file (a bare name is looked for in the
 * application's directory first, then where dlopen looks). Returns the function, or NULL with
 * the thread's error set (PDCBB_ERR_INVAL for a bad spec, PDCBB_ERR_NOT_FOUND otherwise).
 */
void *client_udf_resolve(const char *spec, const char *default_lib, const char *fn);

/* PDC's transform function type (see pdc_transform.h). */
typedef size_t (*client_transform_fn_t)(void *data_in, pdc_var_type_t src_type, int ndim,
                                        uint64_t *dims, void **data_out,
                                        pdc_var_type_t dest_type);

/*
 * Data movement of a mapping (buffer buf of type buf_type <-> box remote of object o): find the
 * transform registered for it and direction when (DATA_OUT: buffer -> object; DATA_IN: object
 * -> buffer) that is ready in the object's current state and run it on in (count elements of
 * in_type); out (out_bytes) receives the converted elements. *ran is 1 if a transform ran
 * (then the object's state moved on), 0 if none applies (nothing written). Errors:
 * PDCBB_ERR_INVAL when the function fails or produces another size than out_bytes.
 */
pdcbb_err_t client_transform_apply(const void *buf, const client_obj_t *o, const pdcbb_box_t *remote,
                                   int when, void *in, pdc_var_type_t in_type, void *out,
                                   size_t out_bytes, pdc_var_type_t out_type, int *ran,
                                   const char *fn);
/* 1 if some transform is registered for the mapping and direction (in any state). */
int client_transform_exists(const void *buf, uint64_t obj_meta, const pdcbb_box_t *remote, int when);

/* This process wrote box of object obj_meta: run the analyses whose input covers it. */
void client_analysis_written(uint64_t obj_meta, const pdcbb_box_t *box);

/* PDCclose: release locks (best effort), drop maps, transforms, iterators and analyses. */
void client_maplock_cleanup(void);
void client_transform_cleanup(void);
void client_analysis_cleanup(void);

#endif
