/*
 * pdcbb_store.h - the key-value store of a node's daemon, behind a small table of functions.
 *
 * Written by the daemon (bbd/) and read by the stager (stager/) when it drains a stopped daemon;
 * it depends only on common/ and LMDB.
 *
 * Metadata, tags and (later) the region index are kept as ordered key-value pairs in a few
 * named tables. Request handlers only see this table, so the same cases can be run against
 * every backend and another backend can be added without touching request handling. The one
 * backend today is LMDB (pdcbb_store_lmdb.c).
 *
 * Durability: a committed transaction survives the death of the daemon process (LMDB writes
 * through the page cache with MDB_NOSYNC; the environment reopens consistent after kill -9).
 * sync() forces everything to the device (shutdown, drain).
 *
 * Values returned by get() and cursors point into the store and are valid until the
 * transaction ends. Single-threaded use: one transaction at a time per store.
 */
#ifndef PDCBB_STORE_H
#define PDCBB_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pdcbb_error.h"

typedef enum pdcbb_table {
    PDCBB_T_STATE = 0, /* "next_seq" -> u64 */
    PDCBB_T_CONT_NAME, /* container name -> id (8 bytes, big-endian) */
    PDCBB_T_CONT,      /* id -> encoded CONT_INFO reply body */
    PDCBB_T_OBJ_NAME,  /* object name -> id */
    PDCBB_T_OBJ,       /* id -> encoded OBJ_INFO reply body */
    PDCBB_T_TAG,       /* id + tag name -> i32 type (LE) + value bytes */
    PDCBB_T_OBJIDS,    /* container id + object id -> "" (PDCcont_put_objids) */
    PDCBB_T_DATA,      /* object id -> layout of its data file here (bbd_data.c) */
    PDCBB_T_MAP,       /* object id + sequence -> data daemon and box (REGION_LOCAL/DYNAMIC) */
    PDCBB_T_TAGIDX,    /* tag search index entries (bbd_tagidx.c) -> "" */
    PDCBB_T_DART,      /* DART reference: data + ref type + record hash -> key NUL value */
    PDCBB_T_KV,        /* KV records: kv id + key group + tag -> flags + value (pdcbb_kv.h) */
    PDCBB_T_KVMETA,    /* KV objects: 'N' + container + name -> id; 'I' + id -> meta record */
    PDCBB_T_KVTX,      /* KV transactions: id + 'P'/'C' + tag -> state */
    PDCBB_T_CSUM,      /* object id + block -> checksum of that block of its data file
                          (common/pdcbb_csum.h) */
    PDCBB_T_NS,        /* the mount's entries: parent ino + name -> encoded NS_LOOKUP reply
                          body; a removed directory: its ino alone -> "" (bbd_ns.c) */
    PDCBB_T_TAGLOG,    /* tag changes not yet in PDCBB_T_TAGIDX: sequence (8 bytes,
                          big-endian) -> op, id, name, value (bbd_tagidx.c) */
    PDCBB_T_COUNT_
} pdcbb_table_t;

typedef struct pdcbb_val {
    const void *data;
    size_t len;
} pdcbb_val_t;

typedef struct pdcbb_store pdcbb_store_t;
typedef struct pdcbb_txn pdcbb_txn_t;
typedef struct pdcbb_cursor pdcbb_cursor_t;

/*
 * Transaction modes. A WRITE transaction may not grow the store beyond its map size; a REMOVE
 * transaction (deletes: they free space, but LMDB's copy-on-write needs some to do it) may use
 * a reserve beyond it, so a full store never blocks the deletes that would empty it.
 */
enum { PDCBB_TXN_READ = 0, PDCBB_TXN_WRITE = 1, PDCBB_TXN_REMOVE = 2 };

typedef struct pdcbb_store_ops {
    const char *name;
    /* Open (creating if needed) the store in directory dir. err gets the backend's message. */
    pdcbb_err_t (*open)(const char *dir, uint64_t map_size, pdcbb_store_t **out, char *err,
                        size_t errlen);
    /* Sync and close; accepts NULL. */
    void (*close)(pdcbb_store_t *st);
    /* Force committed data to the device. */
    pdcbb_err_t (*sync)(pdcbb_store_t *st);
    /* mode: PDCBB_TXN_READ, _WRITE or _REMOVE. */
    pdcbb_err_t (*txn_begin)(pdcbb_store_t *st, int mode, pdcbb_txn_t **out);
    /* Commit; on failure the transaction is aborted. PDCBB_ERR_META_FULL when a WRITE
     * transaction would leave the store holding more than map_size bytes (a REMOVE transaction
     * may use PDCBB_STORE_REMOVE_RESERVE beyond it), PDCBB_ERR_DISK_FULL when the node's
     * file system is full. */
    pdcbb_err_t (*txn_commit)(pdcbb_txn_t *txn);
    void (*txn_abort)(pdcbb_txn_t *txn);
    /* PDCBB_ERR_NOT_FOUND if absent. */
    pdcbb_err_t (*get)(pdcbb_txn_t *txn, pdcbb_table_t t, pdcbb_val_t key, pdcbb_val_t *val);
    /* flags: 0, or PDCBB_PUT_NO_OVERWRITE / PDCBB_PUT_APPEND below. */
    pdcbb_err_t (*put)(pdcbb_txn_t *txn, pdcbb_table_t t, pdcbb_val_t key, pdcbb_val_t val,
                       int flags);
    /* Put key's val unless key is present: then PDCBB_ERR_EXISTS, nothing changed, and *old
     * its value (valid until the transaction's next write). One search where get then put
     * makes two. */
    pdcbb_err_t (*put_new)(pdcbb_txn_t *txn, pdcbb_table_t t, pdcbb_val_t key, pdcbb_val_t val,
                           pdcbb_val_t *old);
    /* PDCBB_ERR_NOT_FOUND if absent. */
    pdcbb_err_t (*del)(pdcbb_txn_t *txn, pdcbb_table_t t, pdcbb_val_t key);
    pdcbb_err_t (*cursor_open)(pdcbb_txn_t *txn, pdcbb_table_t t, pdcbb_cursor_t **out);
    /* Position at the first key >= key (key.len 0: the first key). NOT_FOUND past the end. */
    pdcbb_err_t (*cursor_seek)(pdcbb_cursor_t *c, pdcbb_val_t key, pdcbb_val_t *k, pdcbb_val_t *v);
    /* Next key; NOT_FOUND past the end. */
    pdcbb_err_t (*cursor_next)(pdcbb_cursor_t *c, pdcbb_val_t *k, pdcbb_val_t *v);
    void (*cursor_close)(pdcbb_cursor_t *c);
    /* Put / delete key through a cursor of a write transaction, which is left at that key (at
     * its neighbour after a delete). Keys written in order go much faster than with put/del:
     * each search starts on the page the cursor is on instead of at the root. cursor_del:
     * PDCBB_ERR_NOT_FOUND if absent. */
    pdcbb_err_t (*cursor_put)(pdcbb_cursor_t *c, pdcbb_val_t key, pdcbb_val_t val);
    pdcbb_err_t (*cursor_del)(pdcbb_cursor_t *c, pdcbb_val_t key);
    /* Number of entries of a table. */
    pdcbb_err_t (*count)(pdcbb_txn_t *txn, pdcbb_table_t t, uint64_t *n);
} pdcbb_store_ops_t;

/* put's flags. */
#define PDCBB_PUT_NO_OVERWRITE 1 /* PDCBB_ERR_EXISTS if the key is present */
#define PDCBB_PUT_APPEND                                                                           \
    2 /* key sorts after every key of the table (else                                              \
       * PDCBB_ERR_EXISTS): no search, and full pages when a page                                  \
       * splits */

extern const pdcbb_store_ops_t pdcbb_store_lmdb;

/* Big-endian 8-byte keys sort numerically. */
static inline void pdcbb_key_u64(uint8_t *out, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (uint8_t)v;
}
static inline uint64_t pdcbb_key_get_u64(const void *p)
{
    const uint8_t *b = p;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | b[i];
    return v;
}

/*
 * The current extent (rows) of an object whose first dimension is unlimited (bbd_grow.c), kept
 * by its home daemon in PDCBB_T_STATE under "extent" + the object id (big-endian), as an 8-byte
 * big-endian row count. Absent: 0 rows.
 */
#define PDCBB_EXTENT_KEY_LEN 14
static inline pdcbb_val_t pdcbb_extent_key(uint8_t out[PDCBB_EXTENT_KEY_LEN], uint64_t id)
{
    memcpy(out, "extent", 6);
    pdcbb_key_u64(out + 6, id);
    return (pdcbb_val_t){out, PDCBB_EXTENT_KEY_LEN};
}
/* The extent of object id in an open transaction (0 when none is recorded). */
static inline pdcbb_err_t pdcbb_extent_read(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn,
                                            uint64_t id, uint64_t *rows)
{
    uint8_t key[PDCBB_EXTENT_KEY_LEN];
    pdcbb_val_t v;
    pdcbb_err_t rc = ops->get(txn, PDCBB_T_STATE, pdcbb_extent_key(key, id), &v);
    *rows = 0;
    if (rc == PDCBB_ERR_NOT_FOUND)
        return PDCBB_OK;
    if (rc != PDCBB_OK)
        return rc;
    if (v.len != 8)
        return PDCBB_ERR_STORE;
    *rows = pdcbb_key_get_u64(v.data);
    return PDCBB_OK;
}

#endif
