/*
 * pdc_client_connect.h - key-value tag search, where PDC declares it.
 *
 * PDC applications include this header for PDC_Client_query_kvtag (and its MPI variant). That
 * is all it declares: the rest of PDC's header of this name is PDC-internal and not part of
 * pdcbb. It includes pdc.h; threads, errors and ownership follow the rules at the top of pdc.h.
 */
#ifndef PDC_CLIENT_CONNECT_H
#define PDC_CLIENT_CONNECT_H

#include "pdc.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Find the objects of the job that carry a key-value tag with a given value.
 *
 * An object matches when it has a tag named kvtag->name whose value is the kvtag->size bytes
 * at kvtag->value (kvtag->type is not compared).
 * @param[in]  kvtag    the tag to match; name and value belong to the caller and are not kept.
 * @param[out] n_res    receives the number of matching objects.
 * @param[out] pdc_ids  receives *n_res job-wide object ids (pdc_obj_info.meta_id; they are not
 *                      open ids), allocated with malloc: the caller frees *pdc_ids with free().
 *                      NULL when *n_res is 0.
 * @return SUCCEED (also when nothing matches), or FAIL (out-parameters unchanged).
 * Errors (PDCbb_last_error()): PDCBB_ERR_NOT_INIT (no PDCinit), PDCBB_ERR_INVAL (NULL argument,
 * NULL name, NULL value with a non-zero size), PDCBB_ERR_UNREACHABLE / PDCBB_ERR_TIMEOUT (a
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

#ifdef __cplusplus
}
#endif

#endif /* PDC_CLIENT_CONNECT_H */
