/*
 * pdcbb_drain_kvstore.h - KV dumps written from a daemon's LMDB store (stager/drain_kvstore.c):
 * used by the drain of a stopped daemon (drain_write_store.c) and by a migration during the job
 * (PDCkv_migrate, the daemon's KV_MIGRATE op).
 */
#ifndef PDCBB_DRAIN_KVSTORE_H
#define PDCBB_DRAIN_KVSTORE_H

#include <stdint.h>

#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"
#include "pdcbb_store.h"

typedef struct pdcbb_drain_kvstore_stats {
    uint64_t objects;  /* dumps written */
    uint64_t records;
    uint64_t bytes;
} pdcbb_drain_kvstore_stats_t;

typedef struct pdcbb_drain_kvstore_req {
    uint32_t rank;            /* the daemon rank whose store this is */
    const char *dir;          /* the drain (or migration) directory */
    const char *rel_prefix;   /* dump names: "<rel_prefix>.<n>.kvd" relative to dir; the
                               * directory part must exist */
    uint64_t only_kv;         /* 0: every KV object of the store; else only this id */
    uint64_t below_tag;       /* 0: every record; else only records with tag < below_tag */
    pdcbb_drain_kvstore_stats_t *stats; /* may be NULL; added to */
} pdcbb_drain_kvstore_req_t;

/*
 * In the read (or write) transaction txn of a daemon's store: write one dump per KV object
 * whose meta record the store holds (or only q->only_kv), records in (key, tag) order, without
 * versions of transactions that are not committed; add the KV objects and their dumps to part.
 * err names the KV object and file on failure (PDCBB_ERR_STORE for a malformed store, errno
 * codes for the destination).
 */
pdcbb_err_t pdcbb_drain_kv_from_store(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn,
                                      const pdcbb_drain_kvstore_req_t *q, pdcbb_drain_t *part,
                                      char *err, size_t errlen);

/*
 * In the read transaction txn of a daemon's store: write the namespace entries (the mount's
 * tree, table ns) it holds to DRAIN/ns/rank-R.ns (drain_ns_dump.c; nothing when it holds
 * none); *entries gets their count. err names the file on failure.
 */
pdcbb_err_t pdcbb_drain_ns_dump(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn,
                                const char *drain_dir, uint32_t rank, uint64_t *entries, char *err,
                                size_t errlen);

#endif
