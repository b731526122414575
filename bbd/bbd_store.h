/*
 * bbd_store.h - the daemon's key-value store, behind a small table of functions.
 *
 * Metadata, tags and (later) the region index are kept as ordered key-value pairs in a few
 * named tables. Request handlers only see this table, so the same cases can be run against
 * every backend and another backend can be added without touching request handling. The one
 * backend today is LMDB (bbd_store_lmdb.c).
 *
 * Durability: a committed transaction survives the death of the daemon process (LMDB writes
 * through the page cache with MDB_NOSYNC; the environment reopens consistent after kill -9).
 * sync() forces everything to the device (shutdown, drain).
 *
 * Values returned by get() and cursors point into the store and are valid until the
 * transaction ends. Single-threaded use: one transaction at a time per store.
 */
#ifndef BBD_STORE_H
#define BBD_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pdcbb_error.h"

typedef enum bbd_table {
    BBD_T_STATE = 0,  /* "next_seq" -> u64 */
    BBD_T_CONT_NAME,  /* container name -> id (8 bytes, big-endian) */
    BBD_T_CONT,       /* id -> encoded CONT_INFO reply body */
    BBD_T_OBJ_NAME,   /* object name -> id */
    BBD_T_OBJ,        /* id -> encoded OBJ_INFO reply body */
    BBD_T_TAG,        /* id + tag name -> i32 type (LE) + value bytes */
    BBD_T_OBJIDS,     /* container id + object id -> "" (PDCcont_put_objids) */
    BBD_T_DATA,       /* object id -> layout of its data file here (bbd_data.c) */
    BBD_T_MAP,        /* object id + sequence -> data daemon and box (REGION_LOCAL/DYNAMIC) */
    BBD_T_TAGIDX,     /* tag search index entries (bbd_tagidx.c) -> "" */
    BBD_T_DART,       /* DART reference: data + ref type + record hash -> key NUL value */
    BBD_T_KV,         /* KV records: kv id + key group + tag -> flags + value (pdcbb_kv.h) */
    BBD_T_KVMETA,     /* KV objects: 'N' + container + name -> id; 'I' + id -> meta record */
    BBD_T_KVTX,       /* KV transactions: id + 'P'/'C' + tag -> state */
    BBD_T_COUNT_
} bbd_table_t;

typedef struct bbd_val {
    const void *data;
    size_t len;
} bbd_val_t;

typedef struct bbd_store bbd_store_t;
typedef struct bbd_txn bbd_txn_t;
typedef struct bbd_cursor bbd_cursor_t;

typedef struct bbd_store_ops {
    const char *name;
    /* Open (creating if needed) the store in directory dir. err gets the backend's message. */
    pdcbb_err_t (*open)(const char *dir, uint64_t map_size, bbd_store_t **out, char *err,
                        size_t errlen);
    /* Sync and close; accepts NULL. */
    void (*close)(bbd_store_t *st);
    /* Force committed data to the device. */
    pdcbb_err_t (*sync)(bbd_store_t *st);
    pdcbb_err_t (*txn_begin)(bbd_store_t *st, int write, bbd_txn_t **out);
    /* Commit; on failure the transaction is aborted. PDCBB_ERR_NOSPC when the map is full. */
    pdcbb_err_t (*txn_commit)(bbd_txn_t *txn);
    void (*txn_abort)(bbd_txn_t *txn);
    /* PDCBB_ERR_NOT_FOUND if absent. */
    pdcbb_err_t (*get)(bbd_txn_t *txn, bbd_table_t t, bbd_val_t key, bbd_val_t *val);
    /* no_overwrite: PDCBB_ERR_EXISTS if the key is present. */
    pdcbb_err_t (*put)(bbd_txn_t *txn, bbd_table_t t, bbd_val_t key, bbd_val_t val,
                       int no_overwrite);
    /* PDCBB_ERR_NOT_FOUND if absent. */
    pdcbb_err_t (*del)(bbd_txn_t *txn, bbd_table_t t, bbd_val_t key);
    pdcbb_err_t (*cursor_open)(bbd_txn_t *txn, bbd_table_t t, bbd_cursor_t **out);
    /* Position at the first key >= key (key.len 0: the first key). NOT_FOUND past the end. */
    pdcbb_err_t (*cursor_seek)(bbd_cursor_t *c, bbd_val_t key, bbd_val_t *k, bbd_val_t *v);
    /* Next key; NOT_FOUND past the end. */
    pdcbb_err_t (*cursor_next)(bbd_cursor_t *c, bbd_val_t *k, bbd_val_t *v);
    void (*cursor_close)(bbd_cursor_t *c);
    /* Number of entries of a table. */
    pdcbb_err_t (*count)(bbd_txn_t *txn, bbd_table_t t, uint64_t *n);
} bbd_store_ops_t;

extern const bbd_store_ops_t bbd_store_lmdb;

/* Big-endian 8-byte keys sort numerically. */
static inline void bbd_key_u64(uint8_t *out, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (uint8_t)v;
}
static inline uint64_t bbd_key_get_u64(const void *p)
{
    const uint8_t *b = p;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | b[i];
    return v;
}

/*
 * The current extent (rows) of an object whose first dimension is unlimited (bbd_grow.c), kept
 * by its home daemon in BBD_T_STATE under "extent" + the object id (big-endian), as an 8-byte
 * big-endian row count. Absent: 0 rows.
 */
#define BBD_EXTENT_KEY_LEN 14
static inline bbd_val_t bbd_extent_key(uint8_t out[BBD_EXTENT_KEY_LEN], uint64_t id)
{
    memcpy(out, "extent", 6);
    bbd_key_u64(out + 6, id);
    return (bbd_val_t){out, BBD_EXTENT_KEY_LEN};
}
/* The extent of object id in an open transaction (0 when none is recorded). */
static inline pdcbb_err_t bbd_extent_read(const bbd_store_ops_t *ops, bbd_txn_t *txn,
                                          uint64_t id, uint64_t *rows)
{
    uint8_t key[BBD_EXTENT_KEY_LEN];
    bbd_val_t v;
    pdcbb_err_t rc = ops->get(txn, BBD_T_STATE, bbd_extent_key(key, id), &v);
    *rows = 0;
    if (rc == PDCBB_ERR_NOT_FOUND)
        return PDCBB_OK;
    if (rc != PDCBB_OK)
        return rc;
    if (v.len != 8)
        return PDCBB_ERR_STORE;
    *rows = bbd_key_get_u64(v.data);
    return PDCBB_OK;
}

#endif
