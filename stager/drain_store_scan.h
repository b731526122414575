/*
 * drain_store_scan.h - walking the keys of a daemon's store (store/pdcbb_store.h) that start
 * with a prefix, for the stager's readers of a stopped or running daemon's store
 * (drain_write_store.c, drain_kvstore.c). Not installed, not used outside stager/.
 *
 *     drain_scan_t s;
 *     pdcbb_err_t rc = drain_scan_open(&s, ops, txn, PDCBB_T_TAG, prefix, 8, 9, SIZE_MAX);
 *     if (rc != PDCBB_OK)
 *         return rc;
 *     while (rc == PDCBB_OK && drain_scan_next(&s))
 *         rc = use(s.k, s.v);
 *     rc = drain_scan_close(&s, rc);
 */
#ifndef PDCBB_DRAIN_STORE_SCAN_H
#define PDCBB_DRAIN_STORE_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_store.h"

typedef struct drain_scan {
    const pdcbb_store_ops_t *ops;
    pdcbb_cursor_t *cur;
    const void *prefix;
    size_t plen, kmin, kmax;
    int started;
    pdcbb_err_t rc;   /* the cursor's status; PDCBB_ERR_NOT_FOUND once past the last match */
    pdcbb_val_t k, v; /* the current entry (valid until the transaction ends) */
} drain_scan_t;

/* Open a scan of table t over the keys that start with the plen bytes of prefix (plen 0: every
 * key) and are kmin..kmax bytes long; it ends at the first key that is not. Nothing to close
 * when it fails. */
pdcbb_err_t drain_scan_open(drain_scan_t *s, const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn,
                            pdcbb_table_t t, const void *prefix, size_t plen, size_t kmin,
                            size_t kmax);
/* The next entry into s->k, s->v: 1, or 0 at the end of the scan or when the cursor failed. */
int drain_scan_next(drain_scan_t *s);
/* Close the scan: rc if the caller failed, else the cursor's error; the end counts as success
 * (so does a PDCBB_ERR_NOT_FOUND from the caller). */
pdcbb_err_t drain_scan_close(drain_scan_t *s, pdcbb_err_t rc);

/* The last 8 bytes (a big-endian u64) of each key of table t that starts with the plen bytes
 * of prefix and is plen + 8 bytes long, in key order, into *out (malloc'ed; NULL when none). */
pdcbb_err_t drain_scan_key_u64s(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn,
                                pdcbb_table_t t, const void *prefix, size_t plen,
                                uint64_t **out, size_t *nout);

#endif
