/*
 * pdc_server_stats.c - PDCbb_server_stats: one daemon's live counters (the STATS op) for
 * `pdcbb stats`, which finds and reaches the job's daemons through this library (PDCinit's
 * discovery, then one STATS round trip per daemon).
 */
#include <stdlib.h>

#include "client.h"

perr_t PDCbb_server_stats(int rank, void **body, size_t *len)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK)
        goto out;
    if (body == NULL || len == NULL) {
        client_fail(PDCBB_ERR_INVAL, "PDCbb_server_stats: body and len must not be NULL");
        goto out;
    }
    if (client_g.drained != NULL) {
        client_fail(PDCBB_ERR_UNSUPPORTED,
                    "PDCbb_server_stats: %s is a drained job: it has no "
                    "daemons to ask",
                    client_drained_dir());
        goto out;
    }
    if (rank < 0 || (unsigned)rank >= client_g.nservers) {
        client_fail(PDCBB_ERR_INVAL, "PDCbb_server_stats: no daemon %d (the job has %u)", rank,
                    client_g.nservers);
        goto out;
    }
    pdcbb_stats_req_t q = {0};
    pdcbb_stats_rep_t p;
    void *keep;
    if (client_op_stats((unsigned)rank, &q, &p, &keep) != PDCBB_OK)
        goto out;
    size_t n = 0;
    uint8_t *buf = NULL;
    pdcbb_err_t rc = pdcbb_body_size(PDCBB_OP_STATS, 1, &p, &n);
    if (rc == PDCBB_OK && (buf = malloc(n ? n : 1)) == NULL)
        rc = PDCBB_ERR_NOMEM;
    if (rc == PDCBB_OK)
        rc = pdcbb_body_encode(PDCBB_OP_STATS, 1, &p, buf, n);
    client_rpc_release(PDCBB_OP_STATS, &p, keep);
    if (rc != PDCBB_OK) {
        free(buf);
        client_fail(rc, "PDCbb_server_stats: cannot copy the reply of daemon %d", rank);
        goto out;
    }
    *body = buf;
    *len = n;
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}
