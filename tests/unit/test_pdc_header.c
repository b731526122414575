/*
 * test_pdc_header.c - compile-time check of the public API surface (include/pdc.h.in).
 *
 * Every function of the PDC API must be declared with PDC's exact signature, and every type,
 * enum value and struct field must exist with PDC's name, value and type, so that existing PDC
 * applications compile unchanged. Almost everything is checked with _Static_assert: a mismatch
 * fails the build and names the item. The program is built without linking libpdc:
 * __typeof__(&fn) names a function's type without referencing the symbol. At run time it only
 * checks the header-only type helpers. Compile as C11 (gcc or clang); with ENABLE_MPI (from
 * pdc.h or -DENABLE_MPI) the MPI declarations are checked too.
 */
#include "pdc.h"
#include "pdc_client_connect.h"
#include "pdc_timing.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SAME_TYPE(a, b) __builtin_types_compatible_p(a, b)

/* fn is declared with type pointer-to-function ftype. */
#define CHECK_FN(fn, ftype)                                                                       \
    _Static_assert(SAME_TYPE(__typeof__(&fn), ftype), "signature of " #fn)

/* Enumerator has the value PDC gives it. */
#define CHECK_ENUM(name, value) _Static_assert((name) == (value), "value of " #name)

/* Field of struct type st exists with type ft. */
#define CHECK_FIELD(st, field, ft)                                                                \
    _Static_assert(SAME_TYPE(__typeof__(((st *)0)->field), ft), "type of " #st "." #field);      \
    _Static_assert(offsetof(st, field) < sizeof(st), "offset of " #st "." #field)

/* ---- Basic types and constants ---- */

_Static_assert(SAME_TYPE(perr_t, int), "perr_t");
_Static_assert(SAME_TYPE(pdcid_t, uint64_t), "pdcid_t");
_Static_assert(SAME_TYPE(psize_t, unsigned long long), "psize_t");
_Static_assert(SAME_TYPE(pbool_t, bool), "pbool_t");
_Static_assert(SAME_TYPE(PDC_int_t, int), "PDC_int_t");
_Static_assert(SAME_TYPE(PDC_float_t, float), "PDC_float_t");
_Static_assert(SAME_TYPE(PDC_double_t, double), "PDC_double_t");
_Static_assert(SUCCEED == 0, "SUCCEED");
_Static_assert(FAIL == -1, "FAIL");
_Static_assert(PDC_SIZE_UNLIMITED == UINT64_MAX, "PDC_SIZE_UNLIMITED");
_Static_assert(PDCBB_VERSION_MAJOR >= 0 && PDCBB_VERSION_MINOR >= 0 && PDCBB_VERSION_PATCH >= 0,
               "version macros");

/* pdc_var_type_t */
_Static_assert(SAME_TYPE(pdc_var_type_t, pdc_c_var_type_t), "pdc_var_type_t");
_Static_assert(SAME_TYPE(pdc_var_type_t, enum pdc_c_var_type_t), "enum pdc_c_var_type_t tag");
CHECK_ENUM(PDC_UNKNOWN, -1);
CHECK_ENUM(PDC_INT, 0);
CHECK_ENUM(PDC_FLOAT, 1);
CHECK_ENUM(PDC_DOUBLE, 2);
CHECK_ENUM(PDC_CHAR, 3);
CHECK_ENUM(PDC_STRING, 4);
CHECK_ENUM(PDC_BOOLEAN, 5);
CHECK_ENUM(PDC_SHORT, 6);
CHECK_ENUM(PDC_UINT, 7);
CHECK_ENUM(PDC_INT64, 8);
CHECK_ENUM(PDC_UINT64, 9);
CHECK_ENUM(PDC_INT16, 10);
CHECK_ENUM(PDC_INT8, 11);
CHECK_ENUM(PDC_UINT8, 12);
CHECK_ENUM(PDC_UINT16, 13);
CHECK_ENUM(PDC_INT32, 14);
CHECK_ENUM(PDC_UINT32, 15);
CHECK_ENUM(PDC_LONG, 16);
CHECK_ENUM(PDC_VOID_PTR, 17);
CHECK_ENUM(PDC_SIZE_T, 18);
CHECK_ENUM(PDC_TYPE_COUNT, 19);

/* pdc_kvtag_t */
_Static_assert(SAME_TYPE(pdc_kvtag_t, struct pdc_kvtag_t), "pdc_kvtag_t tag");
CHECK_FIELD(pdc_kvtag_t, name, char *);
CHECK_FIELD(pdc_kvtag_t, size, uint32_t);
CHECK_FIELD(pdc_kvtag_t, type, int8_t);
CHECK_FIELD(pdc_kvtag_t, value, void *);

CHECK_ENUM(PDC_PERSIST, 0);
CHECK_ENUM(PDC_TRANSIENT, 1);
_Static_assert(sizeof(pdc_lifetime_t) > 0, "pdc_lifetime_t");
CHECK_ENUM(PDC_SERVER_DEFAULT, 0);
CHECK_ENUM(PDC_SERVER_PER_CLIENT, 1);
_Static_assert(sizeof(pdc_server_selection_t) > 0, "pdc_server_selection_t");

/* pdc_histogram_t */
_Static_assert(SAME_TYPE(pdc_histogram_t, struct pdc_histogram_t), "pdc_histogram_t tag");
CHECK_FIELD(pdc_histogram_t, dtype, pdc_var_type_t);
CHECK_FIELD(pdc_histogram_t, nbin, int);
CHECK_FIELD(pdc_histogram_t, incr, double);
CHECK_FIELD(pdc_histogram_t, range, double *);
CHECK_FIELD(pdc_histogram_t, bin, uint64_t *);

/* Small enums */
CHECK_ENUM(PDC_CONT_CREATE, 0);
CHECK_ENUM(PDC_OBJ_CREATE, 1);
_Static_assert(sizeof(pdc_prop_type_t) > 0, "pdc_prop_type_t");
CHECK_ENUM(PDC_NA, 0);
CHECK_ENUM(PDC_READ, 1);
CHECK_ENUM(PDC_WRITE, 2);
_Static_assert(sizeof(pdc_access_t) > 0, "pdc_access_t");
CHECK_ENUM(PDC_OBJ_STATIC, 0);
CHECK_ENUM(PDC_REGION_STATIC, 1);
CHECK_ENUM(PDC_REGION_DYNAMIC, 2);
CHECK_ENUM(PDC_REGION_LOCAL, 3);
_Static_assert(sizeof(pdc_region_partition_t) > 0, "pdc_region_partition_t");
CHECK_ENUM(PDC_BLOCK, 0);
CHECK_ENUM(PDC_NOBLOCK, 1);
_Static_assert(sizeof(pdc_lock_mode_t) > 0, "pdc_lock_mode_t");
CHECK_ENUM(PDC_CONSISTENCY_DEFAULT, 0);
CHECK_ENUM(PDC_CONSISTENCY_POSIX, 1);
CHECK_ENUM(PDC_CONSISTENCY_COMMIT, 2);
CHECK_ENUM(PDC_CONSISTENCY_SESSION, 3);
CHECK_ENUM(PDC_CONSISTENCY_EVENTUAL, 4);
_Static_assert(sizeof(pdc_consistency_t) > 0, "pdc_consistency_t");
CHECK_ENUM(PDC_TRANSFER_STATUS_COMPLETE, 0);
CHECK_ENUM(PDC_TRANSFER_STATUS_PENDING, 1);
CHECK_ENUM(PDC_TRANSFER_STATUS_NOT_FOUND, 2);
_Static_assert(sizeof(pdc_transfer_status_t) > 0, "pdc_transfer_status_t");

/* Public structs */
CHECK_FIELD(struct pdc_cont_info, name, char *);
CHECK_FIELD(struct pdc_cont_info, local_id, pdcid_t);
CHECK_FIELD(struct pdc_cont_info, meta_id, uint64_t);

CHECK_FIELD(struct pdc_obj_prop, obj_prop_id, pdcid_t);
CHECK_FIELD(struct pdc_obj_prop, ndim, size_t);
CHECK_FIELD(struct pdc_obj_prop, dims, uint64_t *);
CHECK_FIELD(struct pdc_obj_prop, type, pdc_var_type_t);
CHECK_FIELD(struct pdc_obj_prop, region_partition, pdc_region_partition_t);
CHECK_FIELD(struct pdc_obj_prop, consistency, pdc_consistency_t);

CHECK_FIELD(struct pdc_obj_info, name, char *);
CHECK_FIELD(struct pdc_obj_info, meta_id, pdcid_t);
CHECK_FIELD(struct pdc_obj_info, local_id, pdcid_t);
CHECK_FIELD(struct pdc_obj_info, server_id, int);
CHECK_FIELD(struct pdc_obj_info, metadata_server_id, uint32_t);
CHECK_FIELD(struct pdc_obj_info, obj_pt, struct pdc_obj_prop *);

CHECK_FIELD(struct pdc_region_info, local_id, pdcid_t);
CHECK_FIELD(struct pdc_region_info, obj, struct _pdc_obj_info *);
CHECK_FIELD(struct pdc_region_info, ndim, size_t);
CHECK_FIELD(struct pdc_region_info, offset, uint64_t *);
CHECK_FIELD(struct pdc_region_info, size, uint64_t *);
CHECK_FIELD(struct pdc_region_info, mapping, bool);
CHECK_FIELD(struct pdc_region_info, registered_op, int);
CHECK_FIELD(struct pdc_region_info, buf, void *);
CHECK_FIELD(struct pdc_region_info, unit, size_t);

_Static_assert(SAME_TYPE(cont_handle, struct _pdc_id_info), "cont_handle");
_Static_assert(SAME_TYPE(obj_handle, struct _pdc_id_info), "obj_handle");

/* Queries */
CHECK_ENUM(PDC_OBJ_NAME, 0);
CHECK_ENUM(PDC_CONT_NAME, 1);
CHECK_ENUM(PDC_APP_NAME, 2);
CHECK_ENUM(PDC_USER_ID, 3);
_Static_assert(sizeof(enum pdc_prop_name_t) > 0, "enum pdc_prop_name_t");
CHECK_ENUM(PDC_OP_NONE, 0);
CHECK_ENUM(PDC_GT, 1);
CHECK_ENUM(PDC_LT, 2);
CHECK_ENUM(PDC_GTE, 3);
CHECK_ENUM(PDC_LTE, 4);
CHECK_ENUM(PDC_EQ, 5);
_Static_assert(sizeof(pdc_query_op_t) > 0, "pdc_query_op_t");
CHECK_ENUM(PDC_QUERY_NONE, 0);
CHECK_ENUM(PDC_QUERY_AND, 1);
CHECK_ENUM(PDC_QUERY_OR, 2);
_Static_assert(sizeof(pdc_query_combine_op_t) > 0, "pdc_query_combine_op_t");
CHECK_ENUM(PDC_QUERY_GET_NONE, 0);
CHECK_ENUM(PDC_QUERY_GET_NHITS, 1);
CHECK_ENUM(PDC_QUERY_GET_SEL, 2);
CHECK_ENUM(PDC_QUERY_GET_DATA, 3);
_Static_assert(sizeof(pdc_query_get_op_t) > 0, "pdc_query_get_op_t");

_Static_assert(SAME_TYPE(pdc_selection_t, struct pdcquery_selection_t), "pdc_selection_t tag");
CHECK_FIELD(pdc_selection_t, query_id, pdcid_t);
CHECK_FIELD(pdc_selection_t, ndim, size_t);
CHECK_FIELD(pdc_selection_t, nhits, uint64_t);
CHECK_FIELD(pdc_selection_t, coords, uint64_t *);
CHECK_FIELD(pdc_selection_t, coords_alloc, uint64_t);

_Static_assert(SAME_TYPE(pdc_query_constraint_t, struct pdc_query_constraint_t),
               "pdc_query_constraint_t tag");
CHECK_FIELD(pdc_query_constraint_t, obj_id, pdcid_t);
CHECK_FIELD(pdc_query_constraint_t, op, pdc_query_op_t);
CHECK_FIELD(pdc_query_constraint_t, type, pdc_var_type_t);
CHECK_FIELD(pdc_query_constraint_t, value, double);
CHECK_FIELD(pdc_query_constraint_t, hist, pdc_histogram_t *);
CHECK_FIELD(pdc_query_constraint_t, is_range, int);
CHECK_FIELD(pdc_query_constraint_t, op2, pdc_query_op_t);
CHECK_FIELD(pdc_query_constraint_t, value2, double);
CHECK_FIELD(pdc_query_constraint_t, storage_region_list_head, void *);
CHECK_FIELD(pdc_query_constraint_t, origin_server, pdcid_t);
CHECK_FIELD(pdc_query_constraint_t, n_sent, int);
CHECK_FIELD(pdc_query_constraint_t, n_recv, int);

_Static_assert(SAME_TYPE(pdc_query_t, struct pdc_query_t), "pdc_query_t tag");
CHECK_FIELD(pdc_query_t, constraint, pdc_query_constraint_t *);
CHECK_FIELD(pdc_query_t, left, struct pdc_query_t *);
CHECK_FIELD(pdc_query_t, right, struct pdc_query_t *);
CHECK_FIELD(pdc_query_t, combine_op, pdc_query_combine_op_t);
CHECK_FIELD(pdc_query_t, region, struct pdc_region_info *);
CHECK_FIELD(pdc_query_t, region_constraint, void *);
CHECK_FIELD(pdc_query_t, sel, pdc_selection_t *);

/* Analysis and transforms: the values PDC's pdc_transform.h gives. */
CHECK_ENUM(PDC_TESTING, 0);
CHECK_ENUM(PDC_FILE_IO, 1);
CHECK_ENUM(PDC_DATA_MAP, 2);
CHECK_ENUM(PDC_PRE_ANALYSIS, 4);
CHECK_ENUM(PDC_POST_ANALYSIS, 8);
_Static_assert(sizeof(pdc_obj_transform_t) > 0, "pdc_obj_transform_t");
CHECK_ENUM(DECR_STATE, -100);
CHECK_ENUM(INCR_STATE, 100);
CHECK_ENUM(_STATIC_STATE, 0);
_Static_assert(sizeof(pdc_state_next_t) > 0, "pdc_state_next_t");
CHECK_ENUM(DATA_IN, 1);
CHECK_ENUM(DATA_OUT, 2);
CHECK_ENUM(DATA_RELOCATION, 4);
_Static_assert(sizeof(pdc_data_movement_t) > 0, "pdc_data_movement_t");

/* ---- Functions ---- */

/* General */
CHECK_FN(PDC_timing_report, int (*)(const char *));
CHECK_FN(PDCinit, pdcid_t (*)(const char *));
CHECK_FN(PDCclose, perr_t (*)(pdcid_t));

/* Properties */
CHECK_FN(PDCprop_create, pdcid_t (*)(pdc_prop_type_t, pdcid_t));
CHECK_FN(PDCprop_close, perr_t (*)(pdcid_t));
CHECK_FN(PDCprop_obj_dup, pdcid_t (*)(pdcid_t));
CHECK_FN(PDCcont_prop_get_info, struct _pdc_cont_prop *(*)(pdcid_t));
CHECK_FN(PDCobj_prop_get_info, struct pdc_obj_prop *(*)(pdcid_t));
CHECK_FN(PDCprop_update, perr_t (*)(pdcid_t, pdcid_t));
CHECK_FN(PDCtag_get, perr_t (*)(pdcid_t, char *, void *));
CHECK_FN(PDCprop_set_obj_user_id, perr_t (*)(pdcid_t, uint32_t));
CHECK_FN(PDCprop_set_obj_data_loc, perr_t (*)(pdcid_t, char *));
CHECK_FN(PDCprop_set_obj_app_name, perr_t (*)(pdcid_t, char *));
CHECK_FN(PDCprop_set_obj_time_step, perr_t (*)(pdcid_t, uint32_t));
CHECK_FN(PDCprop_set_obj_tags, perr_t (*)(pdcid_t, char *));
CHECK_FN(PDCprop_set_obj_dims, perr_t (*)(pdcid_t, PDC_int_t, uint64_t *));
CHECK_FN(PDCprop_set_obj_type, perr_t (*)(pdcid_t, pdc_var_type_t));
CHECK_FN(PDCprop_set_obj_transfer_region_type, perr_t (*)(pdcid_t, pdc_region_partition_t));
CHECK_FN(PDCprop_set_obj_consistency_semantics, perr_t (*)(pdcid_t, pdc_consistency_t));
CHECK_FN(PDCprop_set_obj_buf, perr_t (*)(pdcid_t, void *));

/* Containers */
CHECK_FN(PDCcont_create, pdcid_t (*)(const char *, pdcid_t));
CHECK_FN(PDCcont_create_col, pdcid_t (*)(const char *, pdcid_t));
CHECK_FN(PDCcont_open, pdcid_t (*)(const char *, pdcid_t));
CHECK_FN(PDCcont_open_col, pdcid_t (*)(const char *, pdcid_t));
CHECK_FN(PDCcont_close, perr_t (*)(pdcid_t));
CHECK_FN(PDCcont_get_info, struct pdc_cont_info *(*)(const char *));
CHECK_FN(PDCcont_persist, perr_t (*)(pdcid_t));
CHECK_FN(PDCprop_set_cont_lifetime, perr_t (*)(pdcid_t, pdc_lifetime_t));
CHECK_FN(PDCcont_get_id, pdcid_t (*)(const char *, pdcid_t));
CHECK_FN(PDCcont_iter_start, cont_handle *(*)()); /* no prototype, as PDC */
CHECK_FN(PDCcont_iter_null, pbool_t (*)(cont_handle *));
CHECK_FN(PDCcont_iter_next, cont_handle *(*)(cont_handle *));
CHECK_FN(PDCcont_iter_get_info, struct pdc_cont_info *(*)(cont_handle *));
CHECK_FN(PDCcont_del, perr_t (*)(pdcid_t));
CHECK_FN(PDCcont_put_tag, perr_t (*)(pdcid_t, char *, void *, pdc_var_type_t, psize_t));
CHECK_FN(PDCcont_get_tag, perr_t (*)(pdcid_t, char *, void **, pdc_var_type_t *, psize_t *));
CHECK_FN(PDCcont_del_tag, perr_t (*)(pdcid_t, char *));
CHECK_FN(PDCcont_put_objids, perr_t (*)(pdcid_t, int, pdcid_t *));
CHECK_FN(PDCcont_get_objids, perr_t (*)(pdcid_t, int *, pdcid_t **));
CHECK_FN(PDCcont_del_objids, perr_t (*)(pdcid_t, int, pdcid_t *));

/* Objects */
#ifdef ENABLE_MPI
CHECK_FN(PDCobj_create_mpi, pdcid_t (*)(pdcid_t, const char *, pdcid_t, int, MPI_Comm));
CHECK_FN(PDC_Client_query_kvtag_mpi, perr_t (*)(const pdc_kvtag_t *, int *, uint64_t **, MPI_Comm));
CHECK_FN(PDC_Client_search_obj_ref_through_dart_mpi,
         perr_t (*)(dart_hash_algo_t, char *, dart_object_ref_type_t, int *, uint64_t **, MPI_Comm));
#endif
CHECK_FN(PDCobj_create, pdcid_t (*)(pdcid_t, const char *, pdcid_t));
CHECK_FN(PDCobj_open, pdcid_t (*)(const char *, pdcid_t));
CHECK_FN(PDCobj_open_col, pdcid_t (*)(const char *, pdcid_t));
CHECK_FN(PDCobj_flush_start, perr_t (*)(pdcid_t));
CHECK_FN(PDCobj_flush_all_start, perr_t (*)(void));
CHECK_FN(PDCobj_close, perr_t (*)(pdcid_t));
CHECK_FN(PDCobj_get_info, struct pdc_obj_info *(*)(pdcid_t));
CHECK_FN(PDCobj_get_id, perr_t (*)(const char *, void *, int, int *, uint64_t **));
CHECK_FN(PDCobj_get_name, perr_t (*)(const char *, void *, int, int *, char **));
CHECK_FN(PDCobj_set_dims, perr_t (*)(pdcid_t, int, uint64_t *));
CHECK_FN(PDCobj_get_dims, perr_t (*)(pdcid_t, int *, uint64_t **));
CHECK_FN(PDCobj_buf_retrieve, void **(*)(pdcid_t));
CHECK_FN(PDCobj_iter_start, obj_handle *(*)(pdcid_t));
CHECK_FN(PDCobj_iter_null, pbool_t (*)(obj_handle *));
CHECK_FN(PDCobj_iter_next, obj_handle *(*)(obj_handle *, pdcid_t));
CHECK_FN(PDCobj_iter_get_info, struct pdc_obj_info *(*)(obj_handle *));
CHECK_FN(PDCview_iter_start, obj_handle *(*)(pdcid_t));
CHECK_FN(PDCobj_put_data, pdcid_t (*)(const char *, void *, uint64_t, pdcid_t));
CHECK_FN(PDCobj_get_data, perr_t (*)(pdcid_t, void *, uint64_t));
CHECK_FN(PDCobj_del, perr_t (*)(pdcid_t));
CHECK_FN(PDCobj_put_tag, perr_t (*)(pdcid_t, char *, void *, pdc_var_type_t, psize_t));
CHECK_FN(PDCobj_get_tag, perr_t (*)(pdcid_t, char *, void **, pdc_var_type_t *, psize_t *));
CHECK_FN(PDCobj_del_tag, perr_t (*)(pdcid_t, char *));

/* Region helpers */
CHECK_FN(check_overlap, int (*)(int, uint64_t *, uint64_t *, uint64_t *, uint64_t *));
CHECK_FN(PDC_region_overlap_detect, int (*)(int, uint64_t *, uint64_t *, uint64_t *, uint64_t *,
                                            uint64_t **, uint64_t **));
CHECK_FN(memcpy_subregion, int (*)(int, uint64_t, pdc_access_t, char *, uint64_t *, char *,
                                   uint64_t *, uint64_t *));
CHECK_FN(memcpy_overlap_subregion, int (*)(int, uint64_t, char *, uint64_t *, uint64_t *, char *,
                                           uint64_t *, uint64_t *, uint64_t *, uint64_t *));
CHECK_FN(detect_region_contained, int (*)(uint64_t *, uint64_t *, uint64_t *, uint64_t *, int));

/* Regions and transfers */
CHECK_FN(PDCregion_create, pdcid_t (*)(psize_t, uint64_t *, uint64_t *));
CHECK_FN(PDCregion_close, perr_t (*)(pdcid_t));
CHECK_FN(PDCregion_free, void (*)(struct pdc_region_info *));
CHECK_FN(PDCregion_transfer_create, pdcid_t (*)(void *, pdc_access_t, pdcid_t, pdcid_t, pdcid_t));
CHECK_FN(PDCregion_transfer_start, perr_t (*)(pdcid_t));
CHECK_FN(PDCregion_transfer_start_all, perr_t (*)(pdcid_t *, int));
CHECK_FN(PDCregion_transfer_status, perr_t (*)(pdcid_t, pdc_transfer_status_t *));
CHECK_FN(PDCregion_transfer_wait, perr_t (*)(pdcid_t));
CHECK_FN(PDCregion_transfer_wait_all, perr_t (*)(pdcid_t *, int));
CHECK_FN(PDCregion_transfer_close, perr_t (*)(pdcid_t));
CHECK_FN(PDCregion_get_info, struct pdc_region_info *(*)(pdcid_t));

/* Deprecated map/lock */
CHECK_FN(PDCbuf_obj_map, perr_t (*)(void *, pdc_var_type_t, pdcid_t, pdcid_t, pdcid_t));
CHECK_FN(PDCbuf_obj_unmap, perr_t (*)(pdcid_t, pdcid_t));
CHECK_FN(PDCreg_obtain_lock, perr_t (*)(pdcid_t, pdcid_t, pdc_access_t, pdc_lock_mode_t));
CHECK_FN(PDCreg_release_lock, perr_t (*)(pdcid_t, pdcid_t, pdc_access_t));

/* Queries */
CHECK_FN(PDCquery_create, pdc_query_t *(*)(pdcid_t, pdc_query_op_t, pdc_var_type_t, void *));
CHECK_FN(PDCquery_and, pdc_query_t *(*)(pdc_query_t *, pdc_query_t *));
CHECK_FN(PDCquery_or, pdc_query_t *(*)(pdc_query_t *, pdc_query_t *));
CHECK_FN(PDCobj_prop_query,
         perr_t (*)(pdcid_t, enum pdc_prop_name_t, void *, pdcid_t **, size_t *));
CHECK_FN(PDCquery_sel_region, perr_t (*)(pdc_query_t *, struct pdc_region_info *));
CHECK_FN(PDCquery_get_selection, perr_t (*)(pdc_query_t *, pdc_selection_t *));
CHECK_FN(PDCquery_get_nhits, perr_t (*)(pdc_query_t *, uint64_t *));
CHECK_FN(PDCquery_get_data, perr_t (*)(pdcid_t, pdc_selection_t *, void *));
CHECK_FN(PDCquery_get_histogram, perr_t (*)(pdcid_t));
CHECK_FN(PDCquery_get_sel_data, perr_t (*)(pdc_query_t *, pdc_selection_t *, void *));
CHECK_FN(PDCselection_free, void (*)(pdc_selection_t *));
CHECK_FN(PDCquery_free, void (*)(pdc_query_t *));
CHECK_FN(PDCquery_free_all, void (*)(pdc_query_t *));
CHECK_FN(PDCquery_print, void (*)(pdc_query_t *));
CHECK_FN(PDCselection_print, void (*)(pdc_selection_t *));
CHECK_FN(PDCselection_print_all, void (*)(pdc_selection_t *));

/* Analysis and transforms */
CHECK_FN(PDCobj_data_iter_create, pdcid_t (*)(pdcid_t, pdcid_t));
CHECK_FN(PDCobj_data_block_iterator_create, pdcid_t (*)(pdcid_t, pdcid_t, int));
CHECK_FN(PDCobj_analysis_register, perr_t (*)(char *, pdcid_t, pdcid_t));
CHECK_FN(PDCiter_get_nextId, int (*)(void));
CHECK_FN(PDCobj_transform_register,
         perr_t (*)(char *, pdcid_t, int, int, pdc_obj_transform_t, pdc_data_movement_t));
CHECK_FN(PDCbuf_map_transform_register, perr_t (*)(char *, void *, pdcid_t, pdcid_t, pdcid_t, int,
                                                   int, pdc_data_movement_t));

/* pdc_client_connect.h */
CHECK_FN(PDC_Client_query_kvtag, perr_t (*)(const pdc_kvtag_t *, int *, uint64_t **));
CHECK_FN(PDC_Client_insert_obj_ref_into_dart,
         perr_t (*)(dart_hash_algo_t, char *, char *, dart_object_ref_type_t, uint64_t));
CHECK_FN(PDC_Client_delete_obj_ref_from_dart,
         perr_t (*)(dart_hash_algo_t, char *, char *, dart_object_ref_type_t, uint64_t));
CHECK_FN(PDC_Client_search_obj_ref_through_dart,
         perr_t (*)(dart_hash_algo_t, char *, dart_object_ref_type_t, int *, uint64_t **));
_Static_assert(DHT_FULL_HASH == 1 && DHT_INITIAL_HASH == 2 && DART_HASH == 3, "dart_hash_algo_t");
_Static_assert(REF_PRIMARY_ID == 1 && REF_SECONDARY_ID == 2 && REF_SERVER_ID == 3,
               "dart_object_ref_type_t");

/* pdcbb extensions */
CHECK_FN(PDCbb_last_error, int (*)(void));
CHECK_FN(PDCbb_last_error_name, const char *(*)(void));
CHECK_FN(PDCbb_last_error_message, const char *(*)(void));
CHECK_FN(PDCbb_discovery_method, const char *(*)(void));
CHECK_FN(PDCbb_nservers, int (*)(void));

/* Header-only helpers */
CHECK_FN(get_size_by_dtype, size_t (*)(pdc_var_type_t));
CHECK_FN(get_name_by_dtype, const char *(*)(pdc_var_type_t));
CHECK_FN(get_enum_name_by_dtype, const char *(*)(pdc_var_type_t));

/* ---- Run time: the type helpers ---- */

static int failures;

#define CHECK(cond)                                                                               \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);              \
            failures++;                                                                           \
        }                                                                                         \
    } while (0)

static const struct {
    pdc_var_type_t type;
    size_t         size;
    const char    *c_name;
    const char    *enum_name;
} type_table[] = {
    {PDC_INT, sizeof(int), "int", "PDC_INT"},
    {PDC_FLOAT, sizeof(float), "float", "PDC_FLOAT"},
    {PDC_DOUBLE, sizeof(double), "double", "PDC_DOUBLE"},
    {PDC_CHAR, sizeof(char), "char", "PDC_CHAR"},
    {PDC_STRING, sizeof(char *), "char*", "PDC_STRING"},
    {PDC_BOOLEAN, sizeof(bool), "bool", "PDC_BOOLEAN"},
    {PDC_SHORT, sizeof(short), "short", "PDC_SHORT"},
    {PDC_UINT, sizeof(unsigned int), "unsigned int", "PDC_UINT"},
    {PDC_INT64, sizeof(int64_t), "int64_t", "PDC_INT64"},
    {PDC_UINT64, sizeof(uint64_t), "uint64_t", "PDC_UINT64"},
    {PDC_INT16, sizeof(int16_t), "int16_t", "PDC_INT16"},
    {PDC_INT8, sizeof(int8_t), "int8_t", "PDC_INT8"},
    {PDC_UINT8, sizeof(uint8_t), "uint8_t", "PDC_UINT8"},
    {PDC_UINT16, sizeof(uint16_t), "uint16_t", "PDC_UINT16"},
    {PDC_INT32, sizeof(int32_t), "int32_t", "PDC_INT32"},
    {PDC_UINT32, sizeof(uint32_t), "uint32_t", "PDC_UINT32"},
    {PDC_LONG, sizeof(long), "long", "PDC_LONG"},
    {PDC_VOID_PTR, sizeof(void *), "void*", "PDC_VOID_PTR"},
    {PDC_SIZE_T, sizeof(size_t), "size_t", "PDC_SIZE_T"},
};
_Static_assert(sizeof(type_table) / sizeof(type_table[0]) == PDC_TYPE_COUNT,
               "type_table covers every type");

int
main(void)
{
    size_t i;

    for (i = 0; i < sizeof(type_table) / sizeof(type_table[0]); i++) {
        CHECK((size_t)type_table[i].type == i); /* table is in enum order */
        CHECK(get_size_by_dtype(type_table[i].type) == type_table[i].size);
        CHECK(strcmp(get_name_by_dtype(type_table[i].type), type_table[i].c_name) == 0);
        CHECK(strcmp(get_enum_name_by_dtype(type_table[i].type), type_table[i].enum_name) == 0);
    }

    /* Unknown and out-of-range types: size 0, never a NULL name. */
    CHECK(get_size_by_dtype(PDC_UNKNOWN) == 0);
    CHECK(get_size_by_dtype(PDC_TYPE_COUNT) == 0);
    CHECK(get_size_by_dtype((pdc_var_type_t)1000) == 0);
    CHECK(strcmp(get_name_by_dtype(PDC_UNKNOWN), "Unknown") == 0);
    CHECK(strcmp(get_name_by_dtype(PDC_TYPE_COUNT), "Unknown") == 0);
    CHECK(strcmp(get_enum_name_by_dtype(PDC_UNKNOWN), "PDC_UNKNOWN") == 0);
    CHECK(strcmp(get_enum_name_by_dtype(PDC_TYPE_COUNT), "PDC_UNKNOWN") == 0);
    CHECK(strcmp(get_enum_name_by_dtype((pdc_var_type_t)-7), "PDC_UNKNOWN") == 0);

    if (failures) {
        fprintf(stderr, "test_pdc_header: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_pdc_header: ok (%s MPI declarations)\n",
#ifdef ENABLE_MPI
           "with"
#else
           "without"
#endif
    );
    return 0;
}
