/*
 * pdc_kv_write.c - writing KV records (PDCkv_set, PDCkv_set_list, PDCkv_unlink_keys): every
 * record checked first, then batched per shard into SET messages pipelined over the shards;
 * a value larger than KV_BIG_VALUE goes first in KV_PART pieces, then as a SET_PART record.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pdc_kv_internal.h"

/* One SET message carries about this many bytes of records (pipelined over shards). */
#define KV_MSG_BYTES ((size_t)4 << 20)
/* Values above this go in KV_PART pieces of this size, then a SET_PART record. */
#define KV_BIG_VALUE ((uint64_t)8 << 20)
#define KV_PIECE ((size_t)8 << 20)

/* ------------------------------------------------------------------ set / unlink */

typedef struct shardbuf {
    uint8_t *buf;
    size_t len, cap;
    uint32_t count;
} shardbuf_t;

typedef struct set_ctx {
    uint64_t upload_seq;
} set_ctx_t;

static pdcbb_err_t set_finish(kv_call_t *c)
{
    pdcbb_err_t first = PDCBB_OK;
    for (size_t i = 0; i < c->np; i++) {
        if (c->p[i] == NULL)
            continue;
        pdcbb_kv_set_rep_t p;
        void *keep;
        pdcbb_err_t rc = kv_take(c, i, &p, &keep, "a batch of records");
        if (rc == PDCBB_OK)
            client_rpc_release(PDCBB_OP_KV_SET, &p, keep);
        else if (first == PDCBB_OK)
            first = rc;
    }
    return first;
}

static pdcbb_err_t flush_shard(kv_call_t *c, unsigned daemon, uint64_t tag, shardbuf_t *sb)
{
    if (sb->count == 0)
        return PDCBB_OK;
    pdcbb_kv_set_req_t q = {.id = c->kv.id, .tag = tag, .count = sb->count, .recs = sb->buf,
                            .recs_len = (uint32_t)sb->len};
    pdcbb_err_t rc = kv_call_post(c, daemon, PDCBB_OP_KV_SET, &q);
    sb->len = 0;
    sb->count = 0;
    return rc;
}

/* Send a big value in KV_PART pieces (acknowledged before the SET_PART record goes out). */
static pdcbb_err_t upload(kv_call_t *c, unsigned daemon, const void *value, uint64_t len,
                          uint64_t *id)
{
    static uint64_t seq;
    *id = ((uint64_t)getpid() << 32) ^ ((uint64_t)time(NULL) << 12) ^ ++seq;
    if (*id == 0)
        *id = 1;
    for (uint64_t off = 0; off < len; off += KV_PIECE) {
        size_t n = len - off < KV_PIECE ? (size_t)(len - off) : KV_PIECE;
        pdcbb_kv_part_req_t q = {.id = c->kv.id, .upload = *id, .offset = off,
                                 .data = (const uint8_t *)value + off, .data_len = (uint32_t)n};
        pdcbb_kv_part_rep_t p;
        void *keep;
        pdcbb_err_t rc = kv_rt(c, daemon, PDCBB_OP_KV_PART, &q, &p, &keep, "a piece of a large value");
        if (rc != PDCBB_OK)
            return rc;
        client_rpc_release(PDCBB_OP_KV_PART, &p, keep);
    }
    return PDCBB_OK;
}

/* Common part of set, set_list and unlink_keys: n records (keys from recs or keys). */
static perr_t kv_write(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t n, const pdc_kv_t *recs,
                       const pdc_kv_key_t *keys, int unlink, pdc_kv_event_t *ev, const char *fn)
{
    client_kv_t *kv;
    perr_t ret = FAIL;
    shardbuf_t *sb = NULL;
    uint32_t nsb = 0;
    kv_call_t *c = NULL;
    CLIENT_ENTER();
    if ((kv = kv_call_begin(kv_id, ev, fn)) == NULL)
        goto out;
    if (tag > PDC_KV_MAXTAG || (!unlink && tag == PDC_KV_MAXTAG)) {
        client_fail(PDCBB_ERR_INVAL, "%s: tag %#llx on KV object '%s': MAXTAG cannot be set%s", fn,
                    (unsigned long long)tag, kv->name, tag > PDC_KV_MAXTAG ? " (and is the largest tag)" : "");
        goto out;
    }
    if (n > 0 && ((unlink && keys == NULL) || (!unlink && recs == NULL))) {
        client_fail(PDCBB_ERR_INVAL, "%s: %s is NULL", fn, unlink ? "keys" : "recs");
        goto out;
    }
    /* Check every record before anything is sent. */
    uint8_t enc[PDCBB_KV_ENC_MAX];
    size_t elen;
    for (uint64_t i = 0; i < n; i++) {
        const pdc_kv_key_t *k = unlink ? &keys[i] : &recs[i].key;
        if (kv_enc_key(kv, k, enc, &elen, fn) != PDCBB_OK)
            goto out;
        if (!unlink) {
            if (recs[i].value == NULL && recs[i].value_len) {
                client_fail(PDCBB_ERR_INVAL, "%s: record %llu has a NULL value of %llu bytes", fn,
                            (unsigned long long)i, (unsigned long long)recs[i].value_len);
                goto out;
            }
            if (recs[i].value_len > PDCBB_KV_VALUE_MAX) {
                char kp[96];
                kv_key_print(kv, enc, elen, kp, sizeof(kp));
                client_fail(PDCBB_ERR_TOO_BIG, "%s: value of key %s is %llu bytes, a KV value is "
                            "at most %llu (1 GiB)", fn, kp, (unsigned long long)recs[i].value_len,
                            (unsigned long long)PDCBB_KV_VALUE_MAX);
                goto out;
            }
            if (kv->max_value_len && recs[i].value_len > kv->max_value_len) {
                char kp[96];
                kv_key_print(kv, enc, elen, kp, sizeof(kp));
                client_fail(PDCBB_ERR_TOO_BIG, "%s: value of key %s is %llu bytes, KV object '%s' allows %llu",
                            fn, kp, (unsigned long long)recs[i].value_len, kv->name,
                            (unsigned long long)kv->max_value_len);
                goto out;
            }
        }
    }
    c = kv_call_new(kv, fn, ev, set_finish, 0);
    sb = calloc(kv->nshards, sizeof(*sb));
    nsb = sb ? kv->nshards : 0;
    if (c == NULL || sb == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    pdcbb_err_t rc = PDCBB_OK;
    for (uint64_t i = 0; i < n && rc == PDCBB_OK; i++) {
        const pdc_kv_key_t *k = unlink ? &keys[i] : &recs[i].key;
        kv_enc_key(kv, k, enc, &elen, fn);
        uint32_t s = pdcbb_kv_shard_of(kv->sharding, kv->key_type, kv->nshards, enc, elen);
        unsigned daemon = kv->shards[s];
        pdcbb_kv_wrec_t w = {.op = unlink ? PDCBB_KV_OP_UNLINK : PDCBB_KV_OP_SET, .key = enc, .key_len = elen};
        if (!unlink) {
            w.value = recs[i].value;
            w.value_len = recs[i].value_len;
            if (w.value_len > KV_BIG_VALUE) {
                /* Earlier records of this shard go first (they may set the same key). */
                if ((rc = flush_shard(c, daemon, tag, &sb[s])) != PDCBB_OK ||
                    (rc = upload(c, daemon, w.value, w.value_len, &w.upload)) != PDCBB_OK)
                    break;
                w.op = PDCBB_KV_OP_SET_PART;
                w.value = NULL;
            }
        }
        size_t need = pdcbb_kv_wset_size(&w);
        if (sb[s].count && (sb[s].len + need > KV_MSG_BYTES || sb[s].count == UINT32_MAX)) {
            if ((rc = flush_shard(c, daemon, tag, &sb[s])) != PDCBB_OK)
                break;
        }
        if (sb[s].len + need > sb[s].cap) {
            size_t cap = sb[s].cap ? sb[s].cap : 65536;
            while (cap < sb[s].len + need)
                cap *= 2;
            uint8_t *nb = realloc(sb[s].buf, cap);
            if (nb == NULL) {
                rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
                break;
            }
            sb[s].buf = nb;
            sb[s].cap = cap;
        }
        sb[s].len += pdcbb_kv_wset_put(&w, sb[s].buf + sb[s].len);
        sb[s].count++;
    }
    for (uint32_t s = 0; s < kv->nshards && rc == PDCBB_OK; s++)
        rc = flush_shard(c, kv->shards[s], tag, &sb[s]);
    if (rc != PDCBB_OK && c->np) {
        /* Some batches went out: collect their answers before failing. */
        char *m = strdup(PDCbb_last_error_message());
        kv_call_complete(c);
        client_fail(rc, "%s", m ? m : pdcbb_strerror(rc));
        free(m);
    }
    ret = kv_call_run(c, rc, ev);
    c = NULL;
out:
    if (sb)
        for (uint32_t s = 0; s < nsb; s++)
            free(sb[s].buf);
    free(sb);
    if (c)
        kv_call_free(c);
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCkv_set(pdcid_t kv_id, pdc_kv_tag_t tag, const pdc_kv_key_t *key, const void *value,
                 uint64_t value_len, pdc_kv_event_t *ev)
{
    pdc_kv_t r = {.value = value, .value_len = value_len};
    if (key)
        r.key = *key;
    else
        r.key.type = (pdc_kv_key_type_t)-1;
    if (key == NULL) {
        CLIENT_ENTER();
        client_fail(PDCBB_ERR_INVAL, "PDCkv_set: key is NULL");
        CLIENT_LEAVE();
        return FAIL;
    }
    return kv_write(kv_id, tag, 1, &r, NULL, 0, ev, "PDCkv_set");
}

perr_t PDCkv_set_list(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t n, const pdc_kv_t *recs,
                      pdc_kv_event_t *ev)
{
    return kv_write(kv_id, tag, n, recs, NULL, 0, ev, "PDCkv_set_list");
}

perr_t PDCkv_unlink_keys(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t n, const pdc_kv_key_t *keys,
                         pdc_kv_event_t *ev)
{
    return kv_write(kv_id, tag, n, NULL, keys, 1, ev, "PDCkv_unlink_keys");
}
