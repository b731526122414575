/*
 * pdc_kv_get.c - reading one KV record or a count (PDCkv_get_value, PDCkv_get_num): the value
 * of a key at a tag, in slices of KV_GET_CHUNK read again from the start if its version changed
 * meanwhile; the number of visible keys summed over the shards, consistent across a commit.
 */
#include <stdlib.h>
#include <string.h>

#include "pdc_kv_internal.h"

/* ------------------------------------------------------------------ get_value */

typedef struct get_ctx {
    uint64_t tag;
    uint8_t key[PDCBB_KV_ENC_MAX];
    size_t klen;
    unsigned daemon;
    void *value;
    uint64_t *len;
    uint64_t cap;
    pdc_kv_tag_t *found_tag;
} get_ctx_t;

static pdcbb_err_t get_post(kv_call_t *c)
{
    get_ctx_t *g = c->ctx;
    pdcbb_kv_get_req_t q = {.id = c->kv.id, .tag = g->tag, .key = g->key, .key_len = (uint32_t)g->klen,
                            .value_off = 0, .max_len = g->cap < KV_GET_CHUNK ? g->cap : KV_GET_CHUNK};
    return kv_call_post(c, g->daemon, PDCBB_OP_KV_GET, &q);
}

static pdcbb_err_t get_finish(kv_call_t *c)
{
    get_ctx_t *g = c->ctx;
    double deadline = 0;
    for (;;) {
        pdcbb_kv_get_rep_t p;
        void *keep;
        pdcbb_err_t rc = kv_take(c, c->np - 1, &p, &keep, "a get");
        c->np--;
        if (rc == PDCBB_ERR_BUSY) {
            kv_busy_pause(&deadline);
            if (client_now() > deadline)
                return client_fail(rc, "%s: KV object '%s': a transaction stayed in doubt (being committed) for %.0f s",
                                   c->fn, c->kv.name, client_g.cfg.request_timeout);
            if ((rc = get_post(c)) != PDCBB_OK)
                return rc;
            client_rpc_wait(c->p[c->np - 1], client_g.cfg.request_timeout);
            continue;
        }
        if (rc == PDCBB_ERR_NOT_FOUND) {
            char kp[96];
            kv_key_print(&c->kv, g->key, g->klen, kp, sizeof(kp));
            return client_fail(rc, "%s: key %s of KV object '%s' has no visible version at tag %#llx",
                               c->fn, kp, c->kv.name, (unsigned long long)g->tag);
        }
        if (rc != PDCBB_OK)
            return rc;
        uint64_t total = p.total_len, ftag = p.found_tag;
        *g->len = total;
        if (g->found_tag)
            *g->found_tag = ftag;
        if (g->value == NULL && g->cap == 0) {
            client_rpc_release(PDCBB_OP_KV_GET, &p, keep);
            return PDCBB_OK; /* the size was asked */
        }
        if (total > g->cap) {
            client_rpc_release(PDCBB_OP_KV_GET, &p, keep);
            char kp[96];
            kv_key_print(&c->kv, g->key, g->klen, kp, sizeof(kp));
            return client_fail(PDCBB_ERR_TOO_BIG, "%s: the value of key %s is %llu bytes, the buffer %llu",
                               c->fn, kp, (unsigned long long)total, (unsigned long long)g->cap);
        }
        if (p.value_len)
            memcpy(g->value, p.value, p.value_len);
        uint64_t have = p.value_len;
        client_rpc_release(PDCBB_OP_KV_GET, &p, keep);
        int changed = 0;
        while (have < total && !changed) {
            pdcbb_kv_get_req_t q = {.id = c->kv.id, .tag = g->tag, .key = g->key,
                                    .key_len = (uint32_t)g->klen, .value_off = have,
                                    .max_len = KV_GET_CHUNK};
            if ((rc = kv_rt(c, g->daemon, PDCBB_OP_KV_GET, &q, &p, &keep, "a get")) != PDCBB_OK) {
                if (rc != PDCBB_ERR_NOT_FOUND && rc != PDCBB_ERR_BUSY)
                    return rc;
                changed = 1;
                break;
            }
            if (p.total_len != total || p.found_tag != ftag || p.value_len == 0)
                changed = 1;
            else {
                memcpy((uint8_t *)g->value + have, p.value, p.value_len);
                have += p.value_len;
            }
            client_rpc_release(PDCBB_OP_KV_GET, &p, keep);
        }
        if (!changed)
            return PDCBB_OK;
        /* The version changed between pieces: read it again from the start. */
        if ((rc = get_post(c)) != PDCBB_OK)
            return rc;
        client_rpc_wait(c->p[c->np - 1], client_g.cfg.request_timeout);
    }
}

perr_t PDCkv_get_value(pdcid_t kv_id, pdc_kv_tag_t tag, const pdc_kv_key_t *key, void *value,
                       uint64_t *len, pdc_kv_tag_t *found_tag, pdc_kv_event_t *ev)
{
    static const char fn[] = "PDCkv_get_value";
    perr_t ret = FAIL;
    client_kv_t *kv;
    CLIENT_ENTER();
    if ((kv = kv_call_begin(kv_id, ev, fn)) == NULL)
        goto out;
    if (len == NULL || (value == NULL && *len != 0)) {
        client_fail(PDCBB_ERR_INVAL, "%s: %s", fn, len == NULL ? "len is NULL" : "value is NULL but *len is not 0");
        goto out;
    }
    if (tag > PDC_KV_MAXTAG) {
        client_fail(PDCBB_ERR_INVAL, "%s: tag %#llx is above MAXTAG", fn, (unsigned long long)tag);
        goto out;
    }
    kv_call_t *c = kv_call_new(kv, fn, ev, get_finish, sizeof(get_ctx_t));
    if (c == NULL)
        goto out;
    get_ctx_t *g = c->ctx;
    if (kv_enc_key(kv, key, g->key, &g->klen, fn) != PDCBB_OK) {
        kv_call_free(c);
        goto out;
    }
    g->tag = tag;
    g->daemon = kv->shards[pdcbb_kv_shard_of(kv->sharding, kv->key_type, kv->nshards, g->key, g->klen)];
    g->value = value;
    g->len = len;
    g->cap = *len;
    g->found_tag = found_tag;
    ret = kv_call_run(c, get_post(c), ev);
out:
    CLIENT_LEAVE();
    return ret;
}

/* ------------------------------------------------------------------ get_num */

typedef struct num_ctx {
    uint64_t tag;
    uint64_t *num;
    unsigned d[PDCBB_KV_SHARDS_MAX + 1];
    uint64_t tgen[PDCBB_KV_SHARDS_MAX + 1];
    uint32_t nd;
} num_ctx_t;

static pdcbb_err_t num_post(kv_call_t *c)
{
    num_ctx_t *g = c->ctx;
    g->nd = kv_daemons(&c->kv, g->d);
    for (uint32_t i = 0; i < g->nd; i++) {
        pdcbb_kv_count_req_t q = {.id = c->kv.id, .tag = g->tag};
        pdcbb_err_t rc = kv_call_post(c, g->d[i], PDCBB_OP_KV_COUNT, &q);
        if (rc != PDCBB_OK)
            return rc;
    }
    return PDCBB_OK;
}

static pdcbb_err_t num_finish(kv_call_t *c)
{
    num_ctx_t *g = c->ctx;
    double deadline = 0;
    for (;;) {
        uint64_t sum = 0;
        pdcbb_err_t first = PDCBB_OK;
        for (size_t i = 0; i < c->np; i++) {
            if (c->p[i] == NULL)
                continue;
            if (!c->p[i]->done)
                client_rpc_wait(c->p[i], client_g.cfg.request_timeout);
            pdcbb_kv_count_rep_t p;
            void *keep;
            pdcbb_err_t rc = kv_take(c, i, &p, &keep, "a count");
            if (rc == PDCBB_OK) {
                sum += p.count;
                if (i < g->nd)
                    g->tgen[i] = p.tgen;
                client_rpc_release(PDCBB_OP_KV_COUNT, &p, keep);
            } else if (first == PDCBB_OK || first == PDCBB_ERR_BUSY) {
                first = rc;
            }
        }
        c->np = 0;
        if (first == PDCBB_OK && g->nd > 1)
            first = kv_tgen_check(c, g->tag, g->nd, g->d, g->tgen);
        if (first == PDCBB_ERR_BUSY) {
            kv_busy_pause(&deadline);
            if (client_now() > deadline)
                return client_fail(first, "%s: KV object '%s': a transaction stayed in doubt", c->fn, c->kv.name);
            if ((first = num_post(c)) != PDCBB_OK)
                return first;
            continue;
        }
        if (first != PDCBB_OK)
            return first;
        *g->num = sum;
        return PDCBB_OK;
    }
}

perr_t PDCkv_get_num(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t *num, pdc_kv_event_t *ev)
{
    static const char fn[] = "PDCkv_get_num";
    perr_t ret = FAIL;
    client_kv_t *kv;
    CLIENT_ENTER();
    if ((kv = kv_call_begin(kv_id, ev, fn)) == NULL)
        goto out;
    if (num == NULL || tag > PDC_KV_MAXTAG) {
        client_fail(PDCBB_ERR_INVAL, "%s: %s", fn, num == NULL ? "num is NULL" : "tag above MAXTAG");
        goto out;
    }
    kv_call_t *c = kv_call_new(kv, fn, ev, num_finish, sizeof(num_ctx_t));
    if (c == NULL)
        goto out;
    num_ctx_t *g = c->ctx;
    g->tag = tag;
    g->num = num;
    ret = kv_call_run(c, num_post(c), ev);
out:
    CLIENT_LEAVE();
    return ret;
}
