/*
 * drain_store_scan.c - walking the keys of a store that start with a prefix (drain_store_scan.h):
 * the one cursor loop of the stager's readers of a daemon's store, and the list of u64 ids
 * that end such keys (a container's object ids, a KV object's transaction tags).
 */
#include <stdlib.h>
#include <string.h>

#include "drain_store_scan.h"
#include "pdcbb_grow.h"

pdcbb_err_t drain_scan_open(drain_scan_t *s, const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn,
                            pdcbb_table_t t, const void *prefix, size_t plen, size_t kmin,
                            size_t kmax)
{
    memset(s, 0, sizeof(*s));
    s->ops = ops;
    s->prefix = prefix;
    s->plen = plen;
    s->kmin = kmin;
    s->kmax = kmax;
    return ops->cursor_open(txn, t, &s->cur);
}

int drain_scan_next(drain_scan_t *s)
{
    if (s->rc != PDCBB_OK)
        return 0;
    s->rc = s->started ? s->ops->cursor_next(s->cur, &s->k, &s->v)
                       : s->ops->cursor_seek(s->cur, (pdcbb_val_t){s->prefix, s->plen}, &s->k,
                                             &s->v);
    s->started = 1;
    if (s->rc != PDCBB_OK)
        return 0;
    if (s->k.len < s->kmin || s->k.len > s->kmax ||
        (s->plen > 0 && memcmp(s->k.data, s->prefix, s->plen) != 0)) {
        s->rc = PDCBB_ERR_NOT_FOUND; /* past the keys of the scan */
        return 0;
    }
    return 1;
}

pdcbb_err_t drain_scan_close(drain_scan_t *s, pdcbb_err_t rc)
{
    s->ops->cursor_close(s->cur);
    if (rc == PDCBB_OK)
        rc = s->rc;
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

pdcbb_err_t drain_scan_key_u64s(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn,
                                pdcbb_table_t t, const void *prefix, size_t plen,
                                uint64_t **out, size_t *nout)
{
    drain_scan_t s;
    uint64_t *ids = NULL;
    size_t n = 0, cap = 0;
    pdcbb_err_t rc = drain_scan_open(&s, ops, txn, t, prefix, plen, plen + 8, plen + 8);
    if (rc != PDCBB_OK)
        return rc;
    while (rc == PDCBB_OK && drain_scan_next(&s)) {
        uint64_t *g = pdcbb_grow(ids, n, &cap, sizeof(*g), 16);
        if (g == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        ids = g;
        ids[n++] = pdcbb_key_get_u64((const uint8_t *)s.k.data + plen);
    }
    rc = drain_scan_close(&s, rc);
    if (rc != PDCBB_OK) {
        free(ids);
        return rc;
    }
    *out = ids;
    *nout = n;
    return PDCBB_OK;
}
