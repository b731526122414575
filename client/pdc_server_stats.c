/*
 * pdc_server_stats.c - PDCbb_server_stats: one daemon's live counters (the STATS op), and
 * PDCbb_server_stats_all: every daemon's in one GATHER through the tree (client_gather.c), for
 * `pdcbb stats`, which finds and reaches the job's daemons through this library (PDCinit's
 * discovery).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

/* The reply p encoded again: what the pdcbb tools decode. */
static pdcbb_err_t encode_stats(const pdcbb_stats_rep_t *p, void **body, size_t *len)
{
    size_t n = 0;
    uint8_t *buf = NULL;
    pdcbb_err_t rc = pdcbb_body_size(PDCBB_OP_STATS, 1, p, &n);
    if (rc == PDCBB_OK && (buf = malloc(n ? n : 1)) == NULL)
        rc = PDCBB_ERR_NOMEM;
    if (rc == PDCBB_OK)
        rc = pdcbb_body_encode(PDCBB_OP_STATS, 1, p, buf, n);
    if (rc != PDCBB_OK) {
        free(buf);
        return rc;
    }
    *body = buf;
    *len = n;
    return PDCBB_OK;
}

static pdcbb_err_t check_job(const char *fn)
{
    if (client_check_init() != PDCBB_OK)
        return PDCBB_ERR_NOT_INIT;
    if (client_g.drained != NULL)
        return client_fail(PDCBB_ERR_UNSUPPORTED,
                           "%s: %s is a drained job: it has no daemons to ask", fn,
                           client_drained_dir());
    return PDCBB_OK;
}

perr_t PDCbb_server_stats(int rank, void **body, size_t *len)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (check_job("PDCbb_server_stats") != PDCBB_OK)
        goto out;
    if (body == NULL || len == NULL) {
        client_fail(PDCBB_ERR_INVAL, "PDCbb_server_stats: body and len must not be NULL");
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
    pdcbb_err_t rc = encode_stats(&p, body, len);
    client_rpc_release(PDCBB_OP_STATS, &p, keep);
    if (rc != PDCBB_OK) {
        client_fail(rc, "PDCbb_server_stats: cannot copy the reply of daemon %d", rank);
        goto out;
    }
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}

typedef struct stats_all {
    void **bodies;
    size_t *lens;
    char **errors;
} stats_all_t;

static void one_daemon(void *arg, unsigned rank, pdcbb_err_t status, const void *rep,
                       const void *bulk, size_t bulk_len)
{
    stats_all_t *a = arg;
    char why[256];
    (void)bulk;
    (void)bulk_len;
    if (status == PDCBB_OK)
        status = encode_stats(rep, &a->bodies[rank], &a->lens[rank]);
    if (status == PDCBB_OK)
        return;
    snprintf(why, sizeof(why), "STATS to daemon %u through the tree of daemons: %s", rank,
             pdcbb_strerror(status));
    a->errors[rank] = strdup(why);
}

perr_t PDCbb_server_stats_all(int n, void **bodies, size_t *lens, char **errors)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (check_job("PDCbb_server_stats_all") != PDCBB_OK)
        goto out;
    if (bodies == NULL || lens == NULL || errors == NULL) {
        client_fail(PDCBB_ERR_INVAL,
                    "PDCbb_server_stats_all: bodies, lens and errors must not be NULL");
        goto out;
    }
    if (n < 0 || (unsigned)n != client_g.nservers) {
        client_fail(PDCBB_ERR_INVAL, "PDCbb_server_stats_all: n is %d, the job has %u daemons", n,
                    client_g.nservers);
        goto out;
    }
    for (int r = 0; r < n; r++) {
        bodies[r] = NULL;
        lens[r] = 0;
        errors[r] = NULL;
    }
    pdcbb_stats_req_t q = {0};
    const void *reqs[1] = {&q};
    stats_all_t a = {bodies, lens, errors};
    if (client_gather("PDCbb_server_stats_all", PDCBB_OP_STATS, NULL, reqs, 1, one_daemon, &a) !=
        PDCBB_OK) {
        for (int r = 0; r < n; r++) {
            free(bodies[r]);
            free(errors[r]);
            bodies[r] = NULL;
            errors[r] = NULL;
        }
        goto out;
    }
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}
