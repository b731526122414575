/*
 * pdc_kv_trans.c - KV transactions (PDCkv_trans_start, PDCkv_trans_commit, PDCkv_trans_abort)
 * over every shard daemon of the object: a start undone where it half succeeded, a commit in
 * two phases (every shard prepares, then every shard commits).
 */
#include <stdlib.h>
#include <string.h>

#include "pdc_kv_internal.h"

/* ------------------------------------------------------------------ transactions */

static pdcbb_err_t trans_all(kv_call_t *c, uint64_t tag, uint32_t mode, int *nok, int *nnf,
                             pdcbb_err_t *other)
{
    unsigned d[PDCBB_KV_SHARDS_MAX + 1];
    uint32_t nd = kv_daemons(&c->kv, d);
    *nok = *nnf = 0;
    *other = PDCBB_OK;
    for (uint32_t i = 0; i < nd; i++) {
        pdcbb_kv_trans_req_t q = {.id = c->kv.id, .tag = tag, .mode = mode};
        pdcbb_err_t rc = kv_call_post(c, d[i], PDCBB_OP_KV_TRANS, &q);
        if (rc != PDCBB_OK)
            return rc;
    }
    for (size_t i = 0; i < c->np; i++) {
        client_rpc_wait(c->p[i], client_g.cfg.request_timeout);
        pdcbb_kv_trans_rep_t p;
        void *keep;
        pdcbb_err_t rc = kv_take(c, i, &p, &keep, "a transaction step");
        if (rc == PDCBB_OK) {
            (*nok)++;
            client_rpc_release(PDCBB_OP_KV_TRANS, &p, keep);
        } else if (rc == PDCBB_ERR_NOT_FOUND || rc == PDCBB_ERR_EXISTS) {
            (*nnf)++;
            if (*other == PDCBB_OK)
                *other = rc;
        } else if (*other == PDCBB_OK || *other == PDCBB_ERR_NOT_FOUND || *other == PDCBB_ERR_EXISTS) {
            *other = rc;
        }
    }
    c->np = 0;
    return PDCBB_OK;
}

static pdcbb_err_t no_finish(kv_call_t *c)
{
    (void)c;
    return PDCBB_OK;
}

static perr_t kv_trans(pdcid_t kv_id, pdc_kv_tag_t tag, int what, const char *fn)
{
    perr_t ret = FAIL;
    client_kv_t *kv;
    kv_call_t *c = NULL;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK || (kv = kv_get(kv_id, fn)) == NULL)
        goto out;
    if (tag == PDC_KV_NULLTAG || tag >= PDC_KV_MAXTAG) {
        client_fail(PDCBB_ERR_INVAL, "%s: tag %#llx cannot be a transaction of KV object '%s' (0 < tag < MAXTAG)",
                    fn, (unsigned long long)tag, kv->name);
        goto out;
    }
    if ((c = kv_call_new(kv, fn, NULL, no_finish, 0)) == NULL)
        goto out;
    int nok, nnf;
    pdcbb_err_t other, rc;
    if (what == PDCBB_KV_TRANS_START) {
        if ((rc = trans_all(c, tag, PDCBB_KV_TRANS_START, &nok, &nnf, &other)) != PDCBB_OK)
            goto out;
        if (other != PDCBB_OK) {
            /* Undo the shards that opened it, then report. */
            char *m = strdup(PDCbb_last_error_message());
            if (nok) {
                int a, b;
                pdcbb_err_t o;
                trans_all(c, tag, PDCBB_KV_TRANS_ABORT, &a, &b, &o);
            }
            if (other == PDCBB_ERR_EXISTS)
                client_fail(other, "%s: transaction %#llx of KV object '%s' is already open or committed",
                            fn, (unsigned long long)tag, kv->name);
            else
                client_fail(other, "%s", m ? m : pdcbb_strerror(other));
            free(m);
            goto out;
        }
    } else if (what == PDCBB_KV_TRANS_COMMIT) {
        /* Phase 1: every shard prepares (readers of its records then wait for the outcome). */
        if ((rc = trans_all(c, tag, PDCBB_KV_TRANS_PREPARE, &nok, &nnf, &other)) != PDCBB_OK)
            goto out;
        if (other != PDCBB_OK) {
            if (other == PDCBB_ERR_NOT_FOUND)
                client_fail(other, "%s: transaction %#llx of KV object '%s' is not open%s", fn,
                            (unsigned long long)tag, kv->name, nok ? " on every shard" : "");
            goto out;
        }
        /* Phase 2: every shard commits. */
        if ((rc = trans_all(c, tag, PDCBB_KV_TRANS_COMMIT, &nok, &nnf, &other)) != PDCBB_OK || other != PDCBB_OK)
            goto out;
    } else {
        if ((rc = trans_all(c, tag, PDCBB_KV_TRANS_ABORT, &nok, &nnf, &other)) != PDCBB_OK)
            goto out;
        if (other != PDCBB_OK && other != PDCBB_ERR_NOT_FOUND)
            goto out;
        if (nok == 0) {
            client_fail(PDCBB_ERR_NOT_FOUND, "%s: transaction %#llx of KV object '%s' is not open", fn,
                        (unsigned long long)tag, kv->name);
            goto out;
        }
    }
    ret = SUCCEED;
out:
    if (c)
        kv_call_free(c);
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCkv_trans_start(pdcid_t kv_id, pdc_kv_tag_t tag)
{
    return kv_trans(kv_id, tag, PDCBB_KV_TRANS_START, "PDCkv_trans_start");
}

perr_t PDCkv_trans_commit(pdcid_t kv_id, pdc_kv_tag_t tag)
{
    return kv_trans(kv_id, tag, PDCBB_KV_TRANS_COMMIT, "PDCkv_trans_commit");
}

perr_t PDCkv_trans_abort(pdcid_t kv_id, pdc_kv_tag_t tag)
{
    return kv_trans(kv_id, tag, PDCBB_KV_TRANS_ABORT, "PDCkv_trans_abort");
}
