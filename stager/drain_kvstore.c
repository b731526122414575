/*
 * drain_kvstore.c - KV dumps written from a daemon's LMDB store (pdcbb_drain_kvstore.h): the
 * drain of a stopped daemon (drain_write_store.c) and a migration during the job (the daemon's
 * KV_MIGRATE op, bbd/bbd_kv_migrate.c) read the tables "kvmeta", "kv" and "kvtx" (layout in
 * common/pdcbb_kv.h, docs/KV.md "Storage") in one read transaction.
 *
 * The tags of its committed transactions ('C' entries) go into the manifest (committed_tags).
 * For each KV object whose meta record ('I' entry) this daemon holds: every record version of
 * its id in "kv", except versions of a transaction that is not committed (a 'P' entry: open or
 * prepared; those were never visible, and the job can no longer commit them) and, for a
 * migration, versions with tag >= below_tag. Records are collected as pointers into the read
 * transaction (LMDB maps the store), sorted by (full encoded key, tag) - long keys sharing
 * their first 448 bytes are ordered by hash in LMDB - and written to the dump in that order.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drain_store_scan.h"
#include "pdcbb_drain_kvstore.h"
#include "pdcbb_grow.h"
#include "pdcbb_kv.h"
#include "pdcbb_proto.h"

typedef struct kvs_rec {
    const uint8_t *key;
    size_t klen;
    uint64_t tag;
    unsigned flags;
    const uint8_t *value;
    uint64_t vlen;
} kvs_rec_t;

static int kvs_rec_cmp(const void *a, const void *b)
{
    const kvs_rec_t *x = a, *y = b;
    int c = pdcbb_kv_key_cmp(x->key, x->klen, y->key, y->klen);
    if (c != 0)
        return c;
    return x->tag < y->tag ? -1 : x->tag > y->tag;
}

static void be64(uint8_t *out, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (uint8_t)v;
}

/* Tags of the transactions of kv id of kind 'P' (not committed) or 'C' (committed), sorted. */
static pdcbb_err_t kvs_txtags(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t id,
                              uint8_t kind, uint64_t **out, size_t *nout)
{
    uint8_t prefix[9];
    be64(prefix, id);
    prefix[8] = kind;
    return drain_scan_key_u64s(ops, txn, PDCBB_T_KVTX, prefix, 9, out, nout);
}

static int kvs_pending_has(const uint64_t *tags, size_t n, uint64_t tag)
{
    for (size_t i = 0; i < n; i++) /* tags ascending (LMDB order) */
        if (tags[i] == tag)
            return 1;
    return 0;
}

/* Dump the records of one KV object (meta) into path. */
static pdcbb_err_t kvs_dump_one(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn,
                                const pdcbb_kv_meta_t *meta, const char *container, uint32_t rank,
                                uint64_t below_tag, const char *path, pdcbb_kvd_stats_t *st,
                                char *err, size_t errlen)
{
    uint64_t *pending = NULL;
    size_t npending = 0;
    kvs_rec_t *recs = NULL;
    size_t n = 0, cap = 0;
    pdcbb_kvd_writer_t *w = NULL;
    pdcbb_err_t rc = kvs_txtags(ops, txn, meta->id, 'P', &pending, &npending);
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "KV object '%s': cannot read its transactions: %s", meta->name,
                 pdcbb_strerror(rc));
        return rc;
    }
    uint8_t prefix[8];
    be64(prefix, meta->id);
    pdcbb_cursor_t *cur;
    pdcbb_val_t k, v;
    if ((rc = ops->cursor_open(txn, PDCBB_T_KV, &cur)) != PDCBB_OK)
        goto out;
    rc = ops->cursor_seek(cur, (pdcbb_val_t){prefix, 8}, &k, &v);
    while (rc == PDCBB_OK && k.len > 8 && memcmp(k.data, prefix, 8) == 0) {
        uint64_t kvid, tag;
        const uint8_t *group, *fk, *value;
        size_t glen, fklen;
        unsigned flags;
        uint64_t vlen;
        if (!pdcbb_kv_rec_key_parse(k.data, k.len, &kvid, &group, &glen, &tag) ||
            pdcbb_kv_rec_val_parse(v.data, v.len, &flags, &fk, &fklen, &value, &vlen) !=
                PDCBB_OK) {
            rc = PDCBB_ERR_STORE;
            snprintf(err, errlen, "KV object '%s': a malformed record in the store",
                     meta->name);
            break;
        }
        if ((below_tag == 0 || tag < below_tag) && !kvs_pending_has(pending, npending, tag)) {
            kvs_rec_t *g = pdcbb_grow(recs, n, &cap, sizeof(*g), 256);
            if (g == NULL) {
                rc = PDCBB_ERR_NOMEM;
                break;
            }
            recs = g;
            recs[n++] = (kvs_rec_t){.key = fk ? fk : group, .klen = fk ? fklen : glen,
                                    .tag = tag, .flags = flags, .value = value, .vlen = vlen};
        }
        rc = ops->cursor_next(cur, &k, &v);
    }
    ops->cursor_close(cur);
    if (rc == PDCBB_ERR_NOT_FOUND)
        rc = PDCBB_OK;
    if (rc != PDCBB_OK) {
        if (err[0] == '\0')
            snprintf(err, errlen, "KV object '%s': cannot read its records: %s", meta->name,
                     pdcbb_strerror(rc));
        goto out;
    }
    if (n > 1)
        qsort(recs, n, sizeof(*recs), kvs_rec_cmp);
    pdcbb_kvd_header_t h = {.key_type = meta->key_type, .sharding = meta->sharding,
                            .nshards = meta->nshards, .rank = rank, .kv_id = meta->id,
                            .below_tag = below_tag};
    snprintf(h.container, sizeof(h.container), "%s", container ? container : "");
    snprintf(h.name, sizeof(h.name), "%s", meta->name);
    if ((rc = pdcbb_kvd_create(path, &h, &w, err, errlen)) != PDCBB_OK)
        goto out;
    for (size_t i = 0; i < n && rc == PDCBB_OK; i++)
        rc = pdcbb_kvd_add(w, recs[i].key, recs[i].klen, recs[i].tag,
                           (recs[i].flags & PDCBB_KV_F_DELETED) ? PDCBB_KVR_DELETED : 0,
                           recs[i].value, (recs[i].flags & PDCBB_KV_F_DELETED) ? 0 : recs[i].vlen);
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "KV object '%s': cannot write %s: %s", meta->name, path,
                 pdcbb_strerror(rc));
        pdcbb_kvd_abort(w);
        goto out;
    }
    rc = pdcbb_kvd_close(w, st, err, errlen);
    /* re-read what was written: every block's checksum, the count and the file's CRC-32C */
    if (rc == PDCBB_OK)
        rc = pdcbb_kvd_verify(path, st, NULL, err, errlen);
out:
    free(pending);
    free(recs);
    return rc;
}

/* The name of container id if this store holds its record ("" otherwise). */
static void kvs_cont_name(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t id, char *out,
                          size_t outlen)
{
    uint8_t key[8];
    pdcbb_val_t v;
    out[0] = '\0';
    pdcbb_key_u64(key, id);
    if (id != 0 && ops->get(txn, PDCBB_T_CONT, (pdcbb_val_t){key, 8}, &v) == PDCBB_OK) {
        pdcbb_cont_info_rep_t rec;
        if (pdcbb_body_decode(PDCBB_OP_CONT_INFO, 1, v.data, v.len, &rec) == PDCBB_OK) {
            snprintf(out, outlen, "%s", rec.name ? rec.name : "");
            pdcbb_body_free(PDCBB_OP_CONT_INFO, 1, &rec);
        }
    }
}

pdcbb_err_t pdcbb_drain_kv_from_store(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn,
                                      const pdcbb_drain_kvstore_req_t *q, pdcbb_drain_t *part,
                                      char *err, size_t errlen)
{
    drain_scan_t s;
    uint32_t seq = 0;
    err[0] = '\0';
    pdcbb_kv_meta_t *meta = malloc(sizeof(*meta));
    if (meta == NULL) {
        snprintf(err, errlen, "out of memory");
        return PDCBB_ERR_NOMEM;
    }
    uint8_t first[9] = {'I'};
    size_t flen = 1;
    if (q->only_kv != 0) {
        be64(first + 1, q->only_kv);
        flen = 9;
    }
    pdcbb_err_t rc = drain_scan_open(&s, ops, txn, PDCBB_T_KVMETA, first, flen, 9, 9);
    if (rc != PDCBB_OK) {
        free(meta);
        snprintf(err, errlen, "cannot read the KV objects: %s", pdcbb_strerror(rc));
        return rc;
    }
    while (rc == PDCBB_OK && drain_scan_next(&s)) {
        pdcbb_val_t v = s.v;
        if (pdcbb_kv_meta_decode(v.data, v.len, meta) != PDCBB_OK) {
            snprintf(err, errlen, "a malformed KV object record in the store");
            rc = PDCBB_ERR_STORE;
            break;
        }
        char container[1024], rel[PATH_MAX], path[PATH_MAX * 2];
        kvs_cont_name(ops, txn, meta->cont_id, container, sizeof(container));
        /* one dump per KV object this rank holds a shard of (or is home of) */
        int n = snprintf(rel, sizeof(rel), "%s.%u.kvd", q->rel_prefix, seq++);
        if (n < 0 || (size_t)n >= sizeof(rel) ||
            snprintf(path, sizeof(path), "%s/%s", q->dir, rel) >= (int)sizeof(path)) {
            snprintf(err, errlen, "path %s/%s too long", q->dir, q->rel_prefix);
            rc = PDCBB_ERR_TOO_BIG;
            break;
        }
        pdcbb_kvd_stats_t st = {0};
        if ((rc = kvs_dump_one(ops, txn, meta, container, q->rank, q->below_tag, path, &st, err,
                               errlen)) != PDCBB_OK)
            break;
        uint64_t *committed = NULL;
        size_t ncommitted = 0;
        if ((rc = kvs_txtags(ops, txn, meta->id, 'C', &committed, &ncommitted)) != PDCBB_OK) {
            snprintf(err, errlen, "KV object '%s': cannot read its transactions: %s",
                     meta->name, pdcbb_strerror(rc));
            break;
        }
        /* a migration keeps only what lies below its tag */
        while (q->below_tag != 0 && ncommitted > 0 && committed[ncommitted - 1] >= q->below_tag)
            ncommitted--;
        pdcbb_drain_kv_t dk = {.id = meta->id, .name = meta->name, .container = container,
                               .cont_id = meta->cont_id,
                               .rank = pdcbb_meta_id_server(meta->id),
                               .key_type = meta->key_type, .sharding = meta->sharding,
                               .nshards = meta->nshards, .max_key_len = meta->max_key_len,
                               .max_value_len = meta->max_value_len,
                               .committed = committed, .ncommitted = (uint32_t)ncommitted};
        pdcbb_drain_kvdump_t dd = {.kv = meta->id, .rank = q->rank, .file = rel,
                                   .records = st.records, .bytes = st.bytes,
                                   .crc32c = st.crc32c};
        rc = pdcbb_drain_add_kv(part, &dk);
        free(committed);
        if (rc != PDCBB_OK || (rc = pdcbb_drain_add_kvdump(part, &dd)) != PDCBB_OK) {
            snprintf(err, errlen, "out of memory");
            break;
        }
        if (q->stats != NULL) {
            q->stats->objects++;
            q->stats->records += st.records;
            q->stats->bytes += st.bytes;
        }
        if (q->only_kv != 0)
            break;
    }
    rc = drain_scan_close(&s, rc);
    free(meta);
    return rc;
}
