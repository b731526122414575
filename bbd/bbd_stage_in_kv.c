/*
 * bbd_stage_in_kv.c - the KV objects of a drained job loaded into this daemon at stage-in
 * (bbd_stage_in.c), re-sharded over the new job's daemons.
 *
 * Every daemon computes the same plan from the manifest (its KV objects in manifest order):
 *   - the home daemon of a KV object is pdcbb_home_server(name) of the new job, and its new id
 *     the one that daemon's sequence hands out next (after the containers and objects staged
 *     on it, bbd_stage_in.c's plan_ids), exactly as KV_CREATE would;
 *   - its shards: as many as before when the drained object did not use every daemon of its
 *     job (at most the new job's daemons), else every daemon of the new job; shard i is on
 *     daemon (home + i) % ndaemons, as PDCkv_create places them (client/pdc_kv.c);
 *   - the home daemon and every shard daemon register the meta record (bbd_op_kv_create);
 *   - every record version (key, tag, flags, value) of every dump of the object is read
 *     (every block's CRC-32C checked) and the shard daemons keep the ones whose key shards to
 *     them (pdcbb_kv_shard_of), written into "kv" with the live layout (pdcbb_kv.h), in the
 *     stage-in's one transaction.
 *   - the tags of its committed transactions are recorded on the home and shard daemons, so
 *     they cannot be started again, as in the drained job.
 * So gets and lists answer as in the drained job at every tag.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbd.h"
#include "bbd_stage_in_kv.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"
#include "pdcbb_kv.h"
#include "pdcbb_log.h"
#include "pdcbb_name.h"

uint32_t bbd_stage_kv_nshards(const pdcbb_drain_t *m, const pdcbb_drain_kv_t *k, unsigned n)
{
    uint32_t ns = (k->nshards >= m->nservers || k->nshards == 0) ? n : k->nshards;
    if (ns > n)
        ns = n;
    if (ns > PDCBB_KV_SHARDS_MAX)
        ns = PDCBB_KV_SHARDS_MAX;
    return ns ? ns : 1;
}

/* Load the records of m->kvs[i] (new id) that shard to this daemon. */
static pdcbb_err_t stage_kv_records(bbd_req_t *r, const pdcbb_drain_t *m, uint32_t i,
                                    uint64_t id, const pdcbb_kv_meta_t *meta, uint64_t *records,
                                    char *err, size_t errlen)
{
    const pdcbb_drain_kv_t *k = &m->kvs[i];
    pdcbb_err_t rc = PDCBB_OK;
    uint8_t rk[PDCBB_KV_RECKEY_MAX];
    uint8_t *vb = NULL;
    size_t vcap = 0;
    for (uint32_t d = 0; d < m->nkvdumps && rc == PDCBB_OK; d++) {
        const pdcbb_drain_kvdump_t *dd = &m->kvdumps[d];
        if (dd->kv != k->id)
            continue;
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%s/%s", m->dir, dd->file);
        pdcbb_kvd_header_t h;
        pdcbb_kvd_reader_t *rd = NULL;
        if ((rc = pdcbb_kvd_open(path, &h, &rd, err, errlen)) != PDCBB_OK)
            break;
        if (h.key_type != k->key_type) {
            snprintf(err, errlen, "KV dump %s: %s keys, the manifest says %s", path,
                     pdcbb_kvd_key_type_name(h.key_type), pdcbb_kvd_key_type_name(k->key_type));
            pdcbb_kvd_close_reader(rd);
            rc = PDCBB_ERR_IO;
            break;
        }
        pdcbb_kvd_rec_t rec;
        uint64_t n = 0;
        while ((rc = pdcbb_kvd_next(rd, &rec, err, errlen)) == PDCBB_OK) {
            n++;
            uint32_t s = pdcbb_kv_shard_of(meta->sharding, meta->key_type, meta->nshards,
                                           rec.key, rec.klen);
            if (meta->shards[s] != r->d->rank)
                continue;
            int deleted = (rec.flags & PDCBB_KVR_DELETED) != 0;
            size_t rkl = pdcbb_kv_rec_key(id, rec.key, rec.klen, rec.tag, rk);
            size_t vl = pdcbb_kv_rec_val_size(rec.key, rec.klen, deleted, rec.vlen);
            if (vl > vcap) {
                uint8_t *g = realloc(vb, vl);
                if (g == NULL) {
                    rc = PDCBB_ERR_NOMEM;
                    snprintf(err, errlen, "out of memory for a record of %zu bytes", vl);
                    break;
                }
                vb = g;
                vcap = vl;
            }
            pdcbb_kv_rec_val_build(rec.key, rec.klen, deleted, rec.value, rec.vlen, vb);
            rc = r->d->store_ops->put(r->txn, PDCBB_T_KV, (pdcbb_val_t){rk, rkl},
                                      (pdcbb_val_t){vb, vl}, 0);
            if (rc != PDCBB_OK) {
                snprintf(err, errlen, "KV object '%s': cannot store a record: %s",
                         pdcbb_esc(k->name), pdcbb_strerror(rc));
                break;
            }
            (*records)++;
        }
        if (rc == PDCBB_ERR_NOT_FOUND) {
            rc = PDCBB_OK;
            if (n != dd->records) {
                snprintf(err, errlen, "KV dump %s: %" PRIu64 " records, the manifest says %" PRIu64,
                         path, n, dd->records);
                rc = PDCBB_ERR_IO;
            }
        }
        pdcbb_kvd_close_reader(rd);
    }
    free(vb);
    return rc;
}

pdcbb_err_t bbd_stage_in_kv(bbd_req_t *r, const pdcbb_drain_t *m, const uint64_t *kv_ids,
                            const uint64_t *kv_conts, uint64_t *records, char *err,
                            size_t errlen)
{
    bbd_t *d = r->d;
    pdcbb_kv_meta_t *meta = malloc(sizeof(*meta));
    uint64_t *shards = malloc(PDCBB_KV_SHARDS_MAX * sizeof(uint64_t));
    pdcbb_err_t rc = PDCBB_OK;
    *records = 0;
    if (meta == NULL || shards == NULL) {
        free(meta);
        free(shards);
        snprintf(err, errlen, "out of memory");
        return PDCBB_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < m->nkvs && rc == PDCBB_OK; i++) {
        const pdcbb_drain_kv_t *k = &m->kvs[i];
        if (kv_ids[i] == 0)
            continue;
        unsigned home = pdcbb_meta_id_server(kv_ids[i]);
        uint32_t ns = bbd_stage_kv_nshards(m, k, d->nservers);
        int mine = home == d->rank;
        memset(meta, 0, sizeof(*meta));
        meta->id = kv_ids[i];
        meta->key_type = k->key_type;
        meta->sharding = k->sharding;
        meta->nshards = ns;
        for (uint32_t s = 0; s < ns; s++) {
            meta->shards[s] = (home + s) % d->nservers;
            shards[s] = meta->shards[s];
            mine |= meta->shards[s] == d->rank;
        }
        if (!mine)
            continue;
        pdcbb_kv_create_req_t q = {.id = home == d->rank ? 0 : kv_ids[i], .cont_id = kv_conts[i],
                                   .name = k->name, .key_type = k->key_type,
                                   .sharding = k->sharding, .max_key_len = k->max_key_len,
                                   .max_value_len = k->max_value_len, .shards = shards,
                                   .shards_count = ns};
        pdcbb_kv_create_rep_t p;
        rc = bbd_op_kv_create(r, &q, &p);
        uint64_t got = p.id;
        bbd_req_scratch_free(r);
        if (rc != PDCBB_OK) {
            snprintf(err, errlen, "KV object '%s': cannot create it: %s", pdcbb_esc(k->name),
                     pdcbb_strerror(rc));
            break;
        }
        if (got != kv_ids[i]) {
            snprintf(err, errlen, "KV object '%s' got an unexpected id", pdcbb_esc(k->name));
            rc = PDCBB_ERR_INTERNAL;
            break;
        }
        /* committed transaction tags: they cannot be started again, as in the drained job */
        for (uint32_t t = 0; t < k->ncommitted && rc == PDCBB_OK; t++) {
            uint8_t ck[17];
            pdcbb_kv_tx_key(kv_ids[i], 'C', k->committed[t], ck);
            rc = d->store_ops->put(r->txn, PDCBB_T_KVTX, (pdcbb_val_t){ck, 17},
                                   (pdcbb_val_t){"", 0}, 0);
        }
        if (rc != PDCBB_OK) {
            snprintf(err, errlen, "KV object '%s': cannot record its transactions: %s",
                     pdcbb_esc(k->name), pdcbb_strerror(rc));
            break;
        }
        uint64_t before = *records;
        rc = stage_kv_records(r, m, i, kv_ids[i], meta, records, err, errlen);
        if (rc == PDCBB_OK)
            PDCBB_INFO("stage-in: KV object '%s' (%u shards): %" PRIu64 " record versions here",
                       pdcbb_esc(k->name), ns, *records - before);
    }
    free(meta);
    free(shards);
    return rc;
}
