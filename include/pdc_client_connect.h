/*
 * pdc_client_connect.h - key-value tag search, where PDC declares it.
 *
 * PDC applications include this header for metadata search: PDC_Client_query_kvtag (and its MPI
 * variant) and the DART index calls (insert, search, delete object references). That is all it
 * declares: the rest of PDC's header of this name is PDC-internal and not part of pdcbb. It
 * includes pdc.h; threads, errors and ownership follow the rules at the top of pdc.h. As PDC's
 * does, it also includes query_utils.h (and through it string_utils.h: PDC's string and tag-list
 * helpers) and pdc_client_server_common.h (PDC_get_elapsed_time_double), which PDC programs use
 * without including them.
 *
 * Patterns. A tag name, a string tag value or a DART key or value pattern is matched at its
 * ends, as PDC does: "abc" exactly, "abc*" as a prefix, "*abc" as a suffix, "*abc*" anywhere
 * inside; any other '*' is an ordinary character. A pattern that is empty or only '*' is
 * refused (PDCBB_ERR_INVAL). Searches go to every daemon of the job, each answering from its
 * index (docs/INTERNALS.md, "Tag search"), and the results are merged.
 */
#ifndef PDC_CLIENT_CONNECT_H
#define PDC_CLIENT_CONNECT_H

#include "pdc.h"
#include "pdc_client_server_common.h"
#include "query_utils.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Find the objects of the job that carry a key-value tag with a given value.
 *
 * An object matches when it has a tag whose name matches kvtag->name (a pattern, see the top
 * of this header) and whose value matches kvtag->value: for kvtag->type PDC_STRING the value is
 * a pattern too, compared with the text of string tag values (without their terminating NUL;
 * a value written in double quotes, PDC's newer query syntax, loses them); for any other type
 * the value must be the same kvtag->size bytes (kvtag->type is not compared).
 * @param[in]  kvtag    the tag to match; name and value belong to the caller and are not kept.
 * @param[out] n_res    receives the number of matching objects.
 * @param[out] pdc_ids  receives *n_res job-wide object ids (pdc_obj_info.meta_id; they are not
 *                      open ids), allocated with malloc: the caller frees *pdc_ids with free().
 *                      NULL when *n_res is 0.
 * @return SUCCEED (also when nothing matches), or FAIL (out-parameters unchanged).
 * Errors (PDCbb_last_error()): PDCBB_ERR_NOT_INIT (no PDCinit), PDCBB_ERR_INVAL (NULL argument,
 * NULL name, NULL value or size 0, a pattern that is empty or only '*'), PDCBB_ERR_TOO_BIG (a
 * name over 1023 bytes, or more results than one reply holds), PDCBB_ERR_UNREACHABLE / PDCBB_ERR_TIMEOUT (a
 * daemon did not answer), PDCBB_ERR_NOMEM.
 */
PDC_EXPORT perr_t PDC_Client_query_kvtag(const pdc_kvtag_t *kvtag, int *n_res, uint64_t **pdc_ids);

#ifdef ENABLE_MPI
/** @brief Collective PDC_Client_query_kvtag: every rank of comm calls it with the same tag.
 *
 * Every rank receives the complete result.
 * @param[in]  kvtag    the tag to match (same on every rank).
 * @param[out] n_res    receives the number of matching objects.
 * @param[out] pdc_ids  receives *n_res job-wide object ids, allocated with malloc: the caller
 *                      frees *pdc_ids with free(). NULL when *n_res is 0.
 * @param[in]  comm     the communicator; every rank of it must call.
 * @return SUCCEED, or FAIL (on every rank).
 * Errors: as PDC_Client_query_kvtag.
 */
PDC_EXPORT perr_t PDC_Client_query_kvtag_mpi(const pdc_kvtag_t *kvtag, int *n_res,
                                             uint64_t **pdc_ids, MPI_Comm comm);
#endif

/* PDC's DART index kinds (dart_core.h). pdcbb keeps one ordered index per daemon whatever the
 * algorithm: the value is checked and otherwise ignored. */
typedef enum { DHT_FULL_HASH = 1, DHT_INITIAL_HASH = 2, DART_HASH = 3 } dart_hash_algo_t;

/* What the data of a DART reference is (dart_core.h): kept with the reference, and a search
 * finds only references of the type it asks for. */
typedef enum { REF_PRIMARY_ID = 1, REF_SECONDARY_ID = 2, REF_SERVER_ID = 3 } dart_object_ref_type_t;

/** @brief Add an object reference to the job's search index: data is found by attr_key=attr_val.
 *
 * PDC applications call it right after PDCobj_put_tag with the tag's name and (string) value and
 * the object's id (pdc_obj_info.meta_id). The reference lives on the daemon of the object named
 * by data (any other data: daemon data mod the number of daemons) and is dropped with that object.
 * Inserting the same (attr_key, attr_val, ref_type, data) again keeps one reference.
 * @param[in] hash_algo   DHT_FULL_HASH, DHT_INITIAL_HASH or DART_HASH (checked, else ignored).
 * @param[in] attr_key    the key, 1 to 240 bytes, NUL-terminated; not kept.
 * @param[in] attr_val    the value, 1 to 240 bytes, NUL-terminated; not kept.
 * @param[in] ref_type    REF_PRIMARY_ID, REF_SECONDARY_ID or REF_SERVER_ID.
 * @param[in] data        the reference (usually an object id).
 * @return SUCCEED, or FAIL.
 * Errors (PDCbb_last_error()): PDCBB_ERR_NOT_INIT, PDCBB_ERR_INVAL (NULL or empty key or value,
 * a bad hash_algo or ref_type), PDCBB_ERR_TOO_BIG (key or value over 240 bytes),
 * PDCBB_ERR_NOSPC, PDCBB_ERR_UNREACHABLE / PDCBB_ERR_TIMEOUT (the daemon did not answer).
 */
PDC_EXPORT perr_t PDC_Client_insert_obj_ref_into_dart(dart_hash_algo_t hash_algo, char *attr_key,
                                                      char *attr_val,
                                                      dart_object_ref_type_t ref_type,
                                                      uint64_t data);

/** @brief Remove an object reference that PDC_Client_insert_obj_ref_into_dart added.
 * @param[in] hash_algo, attr_key, attr_val, ref_type, data  as given to the insert.
 * @return SUCCEED, or FAIL.
 * Errors: as the insert, and PDCBB_ERR_NOT_FOUND (no such reference).
 */
PDC_EXPORT perr_t PDC_Client_delete_obj_ref_from_dart(dart_hash_algo_t hash_algo, char *attr_key,
                                                      char *attr_val,
                                                      dart_object_ref_type_t ref_type,
                                                      uint64_t data);

/** @brief Find the data of the references whose key and value match a query.
 *
 * query_string is "KEY=VALUE" (split at the first '='), each side a pattern (see the top of
 * this header), e.g. "abcd=1234", "ab*=12*", "*cd=*34", "*bc*=*23*"; VALUE may be written in
 * double quotes (key="val*"). Each calling process asks every daemon.
 * @param[in]  hash_algo     DHT_FULL_HASH, DHT_INITIAL_HASH or DART_HASH.
 * @param[in]  query_string  the query; not kept.
 * @param[in]  ref_type      the type of references to find.
 * @param[out] n_res         receives the number of distinct results.
 * @param[out] out           receives *n_res values of data, sorted, allocated with malloc (the
 *                           caller frees *out with free()); NULL when *n_res is 0.
 * @return SUCCEED (also when nothing matches), or FAIL (out-parameters unchanged).
 * Errors: PDCBB_ERR_NOT_INIT, PDCBB_ERR_INVAL (NULL argument, no '=', an empty pattern or one of
 * only '*', a bad hash_algo or ref_type), PDCBB_ERR_TOO_BIG (a side over 240 bytes, or more
 * results than one reply holds), PDCBB_ERR_UNREACHABLE / PDCBB_ERR_TIMEOUT, PDCBB_ERR_NOMEM.
 * Over a drained job (PDCBB_DRAINED_DIR) references are not kept: PDCBB_ERR_UNSUPPORTED.
 */
PDC_EXPORT perr_t PDC_Client_search_obj_ref_through_dart(dart_hash_algo_t hash_algo,
                                                         char *query_string,
                                                         dart_object_ref_type_t ref_type,
                                                         int *n_res, uint64_t **out);

#ifdef ENABLE_MPI
/** @brief Collective PDC_Client_search_obj_ref_through_dart: every rank of comm calls it with
 * the same arguments; rank 0 asks the daemons and every rank receives the complete result.
 * @param[in]  hash_algo, query_string, ref_type  as for the point-to-point search.
 * @param[out] n_res, out   as for the point-to-point search (each rank frees its own *out).
 * @param[in]  comm         the communicator; every rank of it must call.
 * @return SUCCEED, or FAIL (on every rank).
 * Errors: as PDC_Client_search_obj_ref_through_dart.
 */
PDC_EXPORT perr_t PDC_Client_search_obj_ref_through_dart_mpi(dart_hash_algo_t hash_algo,
                                                             char *query_string,
                                                             dart_object_ref_type_t ref_type,
                                                             int *n_res, uint64_t **out,
                                                             MPI_Comm comm);
#endif

#ifdef __cplusplus
}
#endif

#endif /* PDC_CLIENT_CONNECT_H */
