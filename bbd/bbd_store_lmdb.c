/*
 * bbd_store_lmdb.c - the LMDB backend of the daemon's store (bbd_store.h).
 *
 * One environment per daemon in its node-local directory, one named database per table.
 * MDB_NOSYNC: commits reach the page cache, which survives the daemon's death; sync() and
 * close() flush to the device. MDB_NOTLS because the daemon owns transactions explicitly.
 */
#include "bbd_store.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const table_names[BBD_T_COUNT_] = {
    "state", "cont_name", "cont", "obj_name", "obj", "tag", "objids", "data", "map",
};

struct bbd_store {
    MDB_env *env;
    MDB_dbi dbi[BBD_T_COUNT_];
};

struct bbd_txn {
    bbd_store_t *st;
    MDB_txn *txn;
};

struct bbd_cursor {
    MDB_cursor *cur;
};

static pdcbb_err_t err_from_mdb(int rc)
{
    switch (rc) {
    case MDB_SUCCESS: return PDCBB_OK;
    case MDB_NOTFOUND: return PDCBB_ERR_NOT_FOUND;
    case MDB_KEYEXIST: return PDCBB_ERR_EXISTS;
    case MDB_MAP_FULL:
    case MDB_TXN_FULL: return PDCBB_ERR_NOSPC;
    case MDB_BAD_VALSIZE: return PDCBB_ERR_TOO_BIG;
    case ENOMEM: return PDCBB_ERR_NOMEM;
    case ENOSPC: return PDCBB_ERR_NOSPC;
    default: return rc > 0 ? pdcbb_err_from_errno(rc) : PDCBB_ERR_STORE;
    }
}

static void lmdb_close(bbd_store_t *st)
{
    if (st == NULL)
        return;
    if (st->env) {
        mdb_env_sync(st->env, 1);
        mdb_env_close(st->env);
    }
    free(st);
}

static pdcbb_err_t lmdb_open(const char *dir, uint64_t map_size, bbd_store_t **out, char *err,
                             size_t errlen)
{
    bbd_store_t *st = calloc(1, sizeof(*st));
    MDB_txn *txn = NULL;
    int rc;
    const char *what = "mdb_env_create";
    if (st == NULL)
        return PDCBB_ERR_NOMEM;
    if ((rc = mdb_env_create(&st->env)) != 0)
        goto fail;
    what = "mdb_env_set_mapsize";
    if ((rc = mdb_env_set_mapsize(st->env, (size_t)map_size)) != 0)
        goto fail;
    what = "mdb_env_set_maxdbs";
    if ((rc = mdb_env_set_maxdbs(st->env, BBD_T_COUNT_ + 4)) != 0)
        goto fail;
    what = "mdb_env_open";
    if ((rc = mdb_env_open(st->env, dir, MDB_NOSYNC | MDB_NOTLS, 0600)) != 0)
        goto fail;
    what = "mdb_txn_begin";
    if ((rc = mdb_txn_begin(st->env, NULL, 0, &txn)) != 0)
        goto fail;
    what = "mdb_dbi_open";
    for (int i = 0; i < BBD_T_COUNT_; i++)
        if ((rc = mdb_dbi_open(txn, table_names[i], MDB_CREATE, &st->dbi[i])) != 0)
            goto fail;
    what = "mdb_txn_commit";
    rc = mdb_txn_commit(txn);
    txn = NULL;
    if (rc != 0)
        goto fail;
    *out = st;
    return PDCBB_OK;
fail:
    if (err)
        snprintf(err, errlen, "LMDB %s in %s: %s", what, dir, mdb_strerror(rc));
    if (txn)
        mdb_txn_abort(txn);
    lmdb_close(st);
    return err_from_mdb(rc);
}

static pdcbb_err_t lmdb_sync(bbd_store_t *st)
{
    return err_from_mdb(mdb_env_sync(st->env, 1));
}

static pdcbb_err_t lmdb_txn_begin(bbd_store_t *st, int write, bbd_txn_t **out)
{
    bbd_txn_t *t = malloc(sizeof(*t));
    if (t == NULL)
        return PDCBB_ERR_NOMEM;
    int rc = mdb_txn_begin(st->env, NULL, write ? 0 : MDB_RDONLY, &t->txn);
    if (rc != 0) {
        free(t);
        return err_from_mdb(rc);
    }
    t->st = st;
    *out = t;
    return PDCBB_OK;
}

static pdcbb_err_t lmdb_txn_commit(bbd_txn_t *t)
{
    int rc = mdb_txn_commit(t->txn);
    free(t);
    return err_from_mdb(rc);
}

static void lmdb_txn_abort(bbd_txn_t *t)
{
    if (t == NULL)
        return;
    mdb_txn_abort(t->txn);
    free(t);
}

static pdcbb_err_t lmdb_get(bbd_txn_t *t, bbd_table_t tb, bbd_val_t key, bbd_val_t *val)
{
    MDB_val k = {key.len, (void *)key.data}, v;
    int rc = mdb_get(t->txn, t->st->dbi[tb], &k, &v);
    if (rc == 0) {
        val->data = v.mv_data;
        val->len = v.mv_size;
    }
    return err_from_mdb(rc);
}

static pdcbb_err_t lmdb_put(bbd_txn_t *t, bbd_table_t tb, bbd_val_t key, bbd_val_t val,
                            int no_overwrite)
{
    MDB_val k = {key.len, (void *)key.data}, v = {val.len, (void *)val.data};
    return err_from_mdb(mdb_put(t->txn, t->st->dbi[tb], &k, &v, no_overwrite ? MDB_NOOVERWRITE : 0));
}

static pdcbb_err_t lmdb_del(bbd_txn_t *t, bbd_table_t tb, bbd_val_t key)
{
    MDB_val k = {key.len, (void *)key.data};
    return err_from_mdb(mdb_del(t->txn, t->st->dbi[tb], &k, NULL));
}

static pdcbb_err_t lmdb_cursor_open(bbd_txn_t *t, bbd_table_t tb, bbd_cursor_t **out)
{
    bbd_cursor_t *c = malloc(sizeof(*c));
    if (c == NULL)
        return PDCBB_ERR_NOMEM;
    int rc = mdb_cursor_open(t->txn, t->st->dbi[tb], &c->cur);
    if (rc != 0) {
        free(c);
        return err_from_mdb(rc);
    }
    *out = c;
    return PDCBB_OK;
}

static pdcbb_err_t cursor_get(bbd_cursor_t *c, MDB_val *k, MDB_cursor_op op, bbd_val_t *ko,
                              bbd_val_t *vo)
{
    MDB_val v;
    int rc = mdb_cursor_get(c->cur, k, &v, op);
    if (rc == 0) {
        if (ko) {
            ko->data = k->mv_data;
            ko->len = k->mv_size;
        }
        if (vo) {
            vo->data = v.mv_data;
            vo->len = v.mv_size;
        }
    }
    return err_from_mdb(rc);
}

static pdcbb_err_t lmdb_cursor_seek(bbd_cursor_t *c, bbd_val_t key, bbd_val_t *k, bbd_val_t *v)
{
    MDB_val mk = {key.len, (void *)key.data};
    return cursor_get(c, &mk, key.len ? MDB_SET_RANGE : MDB_FIRST, k, v);
}

static pdcbb_err_t lmdb_cursor_next(bbd_cursor_t *c, bbd_val_t *k, bbd_val_t *v)
{
    MDB_val mk;
    return cursor_get(c, &mk, MDB_NEXT, k, v);
}

static void lmdb_cursor_close(bbd_cursor_t *c)
{
    if (c == NULL)
        return;
    mdb_cursor_close(c->cur);
    free(c);
}

static pdcbb_err_t lmdb_count(bbd_txn_t *t, bbd_table_t tb, uint64_t *n)
{
    MDB_stat s;
    int rc = mdb_stat(t->txn, t->st->dbi[tb], &s);
    if (rc == 0)
        *n = s.ms_entries;
    return err_from_mdb(rc);
}

const bbd_store_ops_t bbd_store_lmdb = {
    .name = "lmdb",
    .open = lmdb_open,
    .close = lmdb_close,
    .sync = lmdb_sync,
    .txn_begin = lmdb_txn_begin,
    .txn_commit = lmdb_txn_commit,
    .txn_abort = lmdb_txn_abort,
    .get = lmdb_get,
    .put = lmdb_put,
    .del = lmdb_del,
    .cursor_open = lmdb_cursor_open,
    .cursor_seek = lmdb_cursor_seek,
    .cursor_next = lmdb_cursor_next,
    .cursor_close = lmdb_cursor_close,
    .count = lmdb_count,
};
