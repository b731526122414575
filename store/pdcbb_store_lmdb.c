/*
 * pdcbb_store_lmdb.c - the LMDB backend of the daemon's store (pdcbb_store.h).
 *
 * One environment per daemon in its node-local directory, one named database per table.
 * MDB_NOTLS because the daemon owns transactions explicitly.
 *
 * Durability (unchanged by the choices below, and the same for every transport): a request
 * that changes the store is answered only after its transaction committed, and a committed
 * transaction survives the death of the daemon process (kill -9): with MDB_NOSYNC a commit
 * ends in the kernel's page cache, which outlives the process, and LMDB's copy-on-write pages
 * plus the meta page written last make the environment reopen consistent. It does not survive
 * the loss of the node (power, kernel crash) until sync() or close(), which flush to the device
 * (shutdown, drain); DESIGN section 6 puts node loss out of scope.
 *
 * MDB_WRITEMAP: transactions write their pages straight into the shared file mapping (the page
 * cache) instead of malloc'ed copies written out with pwrite/writev/lseek at commit. A commit
 * then costs no system call (with MDB_NOSYNC), which is most of a metadata request's cost on
 * this kind of machine (docs/PERFORMANCE.md, "Metadata"). The catch: LMDB makes the file as big
 * as the map (sparse), and a store into a page the filesystem cannot allocate kills the process
 * with SIGBUS instead of failing with ENOSPC. So the file is kept *allocated* (fallocate) at
 * least STORE_RESERVE_MIN bytes beyond LMDB's last used page, more than any single request can
 * add (requests are at most 16 MiB), and a write transaction that cannot get that reserve is
 * refused with PDCBB_ERR_DISK_FULL before it touches anything. On a filesystem without fallocate
 * the environment is opened without MDB_WRITEMAP (pwrite at commit, as before).
 *
 * A full store: LMDB's map is lmdb_map_size plus PDCBB_STORE_REMOVE_RESERVE. A WRITE
 * transaction whose commit would leave more than lmdb_map_size bytes of pages in use (every
 * table's pages, the free list's own pages and the two meta pages; pages on the free list are
 * free) is aborted with PDCBB_ERR_META_FULL; a REMOVE transaction may go into the reserve, so
 * deletes (which need fresh pages for LMDB's copy-on-write) work on a full store and give space
 * back to the writes.
 */
#include "pdcbb_jobdir.h"
#include "pdcbb_store.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Allocated bytes kept beyond the last used page (WRITEMAP), and the step to extend by. */
#define STORE_RESERVE_MIN  PDCBB_STORE_RESERVE_MIN
#define STORE_RESERVE_STEP PDCBB_STORE_RESERVE_STEP

static const char *const table_names[PDCBB_T_COUNT_] = {
    "state",  "cont_name", "cont", "obj_name", "obj",  "tag",  "objids", "data",   "map",
    "tagidx", "dart",      "kv",   "kvmeta",   "kvtx", "csum", "ns",     "taglog",
};

struct pdcbb_store {
    MDB_env *env;
    MDB_dbi dbi[PDCBB_T_COUNT_];
    int writemap; /* opened with MDB_WRITEMAP: keep the file allocated ahead */
    int fd;       /* the data file (WRITEMAP) */
    uint64_t map_size;          /* lmdb_map_size: what WRITE transactions may fill */
    uint64_t lmdb_size;         /* LMDB's map: map_size + PDCBB_STORE_REMOVE_RESERVE */
    uint64_t allocated;         /* bytes of the file known to be allocated */
    struct pdcbb_txn *free_txn; /* one reusable transaction wrapper */
};

struct pdcbb_txn {
    pdcbb_store_t *st;
    MDB_txn *txn;
    int mode; /* PDCBB_TXN_* */
};

struct pdcbb_cursor {
    MDB_cursor *cur;
};

static pdcbb_err_t err_from_mdb(int rc)
{
    switch (rc) {
    case MDB_SUCCESS:
        return PDCBB_OK;
    case MDB_NOTFOUND:
        return PDCBB_ERR_NOT_FOUND;
    case MDB_KEYEXIST:
        return PDCBB_ERR_EXISTS;
    case MDB_MAP_FULL:
    case MDB_TXN_FULL:
        return PDCBB_ERR_META_FULL;
    case MDB_BAD_VALSIZE:
        return PDCBB_ERR_TOO_BIG;
    case ENOMEM:
        return PDCBB_ERR_NOMEM;
    case ENOSPC:
        return PDCBB_ERR_DISK_FULL;
    default:
        return rc > 0 ? pdcbb_err_from_errno(rc) : PDCBB_ERR_STORE;
    }
}

static void lmdb_close(pdcbb_store_t *st)
{
    if (st == NULL)
        return;
    if (st->env) {
        mdb_env_sync(st->env, 1);
        mdb_env_close(st->env);
    }
    free(st->free_txn);
    free(st);
}

/* Can the filesystem of dir allocate file space (fallocate)? Tried on the data file itself. */
static int can_fallocate(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/data.mdb", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return 0;
    int ok = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4096) == 0;
    close(fd);
    return ok;
}

/* WRITEMAP: make sure STORE_RESERVE_MIN bytes past the last used page are allocated. */
static pdcbb_err_t reserve_space(pdcbb_store_t *st)
{
    MDB_envinfo info;
    MDB_stat ms;
    if (mdb_env_info(st->env, &info) != 0 || mdb_env_stat(st->env, &ms) != 0)
        return PDCBB_ERR_STORE;
    uint64_t used = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
    if (st->allocated >= used + STORE_RESERVE_MIN || st->allocated >= st->lmdb_size)
        return PDCBB_OK;
    uint64_t want = used + STORE_RESERVE_MIN + STORE_RESERVE_STEP;
    if (want > st->lmdb_size)
        want = st->lmdb_size;
    if (fallocate(st->fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)want) != 0) {
        /* Refuse the write instead of risking SIGBUS on an unallocated page. */
        return pdcbb_err_from_errno(errno);
    }
    st->allocated = want;
    return PDCBB_OK;
}

static pdcbb_err_t lmdb_open(const char *dir, uint64_t map_size, pdcbb_store_t **out, char *err,
                             size_t errlen)
{
    pdcbb_store_t *st = calloc(1, sizeof(*st));
    MDB_txn *txn = NULL;
    int rc;
    const char *what = "mdb_env_create";
    if (st == NULL)
        return PDCBB_ERR_NOMEM;
    st->fd = -1;
    st->map_size = map_size;
    st->lmdb_size = map_size + PDCBB_STORE_REMOVE_RESERVE;
    st->writemap = can_fallocate(dir);
    if ((rc = mdb_env_create(&st->env)) != 0)
        goto fail;
    what = "mdb_env_set_mapsize";
    if ((rc = mdb_env_set_mapsize(st->env, (size_t)st->lmdb_size)) != 0)
        goto fail;
    what = "mdb_env_set_maxdbs";
    if ((rc = mdb_env_set_maxdbs(st->env, PDCBB_T_COUNT_ + 4)) != 0)
        goto fail;
    what = "mdb_env_open";
    if ((rc = mdb_env_open(st->env, dir, MDB_NOSYNC | MDB_NOTLS | (st->writemap ? MDB_WRITEMAP : 0),
                           0600)) != 0)
        goto fail;
    if (st->writemap) {
        what = "fallocate (the reserve of the data file)";
        if ((rc = mdb_env_get_fd(st->env, &st->fd)) != 0)
            goto fail;
        pdcbb_err_t e = reserve_space(st);
        if (e != PDCBB_OK) {
            rc = e == PDCBB_ERR_DISK_FULL ? ENOSPC : EIO;
            goto fail;
        }
    }
    what = "mdb_txn_begin";
    if ((rc = mdb_txn_begin(st->env, NULL, 0, &txn)) != 0)
        goto fail;
    what = "mdb_dbi_open";
    for (int i = 0; i < PDCBB_T_COUNT_; i++)
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

static pdcbb_err_t lmdb_sync(pdcbb_store_t *st)
{
    return err_from_mdb(mdb_env_sync(st->env, 1));
}

/* Transaction wrappers are recycled: one malloc less per request. */
static void txn_release(pdcbb_txn_t *t)
{
    pdcbb_store_t *st = t->st;
    if (st->free_txn == NULL)
        st->free_txn = t;
    else
        free(t);
}

static pdcbb_err_t lmdb_txn_begin(pdcbb_store_t *st, int mode, pdcbb_txn_t **out)
{
    int write = mode != PDCBB_TXN_READ;
    if (write && st->writemap) {
        pdcbb_err_t e = reserve_space(st);
        if (e != PDCBB_OK)
            return e;
    }
    pdcbb_txn_t *t = st->free_txn;
    if (t)
        st->free_txn = NULL;
    else if ((t = malloc(sizeof(*t))) == NULL)
        return PDCBB_ERR_NOMEM;
    t->st = st;
    t->mode = mode;
    int rc = mdb_txn_begin(st->env, NULL, write ? 0 : MDB_RDONLY, &t->txn);
    if (rc != 0) {
        txn_release(t);
        return err_from_mdb(rc);
    }
    *out = t;
    return PDCBB_OK;
}

/* Bytes of pages the transaction's view of the store uses: every table's branch, leaf and
 * overflow pages, the main and free-list databases' own pages and the two meta pages (pages on
 * the free list are not counted: they are free). */
static uint64_t txn_used_bytes(pdcbb_txn_t *t)
{
    pdcbb_store_t *st = t->st;
    MDB_stat ms;
    uint64_t pages = 2, psize = 4096;
    for (int i = -2; i < PDCBB_T_COUNT_; i++) {
        MDB_dbi dbi = i == -2 ? 0 /* FREE_DBI */ : i == -1 ? 1 /* MAIN_DBI */ : st->dbi[i];
        if (mdb_stat(t->txn, dbi, &ms) != 0)
            continue;
        psize = ms.ms_psize;
        pages += ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
    }
    return pages * psize;
}

/* 1 when the store cannot hold more than map_size bytes after this commit: its high-water mark
 * (LMDB's last page ever used, free or not) plus what one transaction can add (the reserve the
 * file is kept allocated ahead by) stays below it. Two reads of the environment's meta page,
 * instead of a statistic of every table per commit. */
static int surely_fits(const pdcbb_store_t *st)
{
    MDB_envinfo info;
    MDB_stat ms;
    if (mdb_env_info(st->env, &info) != 0 || mdb_env_stat(st->env, &ms) != 0)
        return 0;
    return ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize + STORE_RESERVE_MIN <= st->map_size;
}

static pdcbb_err_t lmdb_txn_commit(pdcbb_txn_t *t)
{
    if (t->mode == PDCBB_TXN_WRITE && !surely_fits(t->st) && txn_used_bytes(t) > t->st->map_size) {
        mdb_txn_abort(t->txn);
        txn_release(t);
        return PDCBB_ERR_META_FULL;
    }
    int rc = mdb_txn_commit(t->txn);
    txn_release(t);
    return err_from_mdb(rc);
}

static void lmdb_txn_abort(pdcbb_txn_t *t)
{
    if (t == NULL)
        return;
    mdb_txn_abort(t->txn);
    txn_release(t);
}

static pdcbb_err_t lmdb_get(pdcbb_txn_t *t, pdcbb_table_t tb, pdcbb_val_t key, pdcbb_val_t *val)
{
    MDB_val k = {key.len, (void *)key.data}, v;
    int rc = mdb_get(t->txn, t->st->dbi[tb], &k, &v);
    if (rc == 0) {
        val->data = v.mv_data;
        val->len = v.mv_size;
    }
    return err_from_mdb(rc);
}

static pdcbb_err_t lmdb_put(pdcbb_txn_t *t, pdcbb_table_t tb, pdcbb_val_t key, pdcbb_val_t val,
                            int flags)
{
    MDB_val k = {key.len, (void *)key.data}, v = {val.len, (void *)val.data};
    unsigned f = ((flags & PDCBB_PUT_NO_OVERWRITE) ? MDB_NOOVERWRITE : 0) |
                 ((flags & PDCBB_PUT_APPEND) ? MDB_APPEND : 0);
    return err_from_mdb(mdb_put(t->txn, t->st->dbi[tb], &k, &v, f));
}

static pdcbb_err_t lmdb_put_new(pdcbb_txn_t *t, pdcbb_table_t tb, pdcbb_val_t key, pdcbb_val_t val,
                                pdcbb_val_t *old)
{
    MDB_val k = {key.len, (void *)key.data}, v = {val.len, (void *)val.data};
    int rc = mdb_put(t->txn, t->st->dbi[tb], &k, &v, MDB_NOOVERWRITE);
    if (rc == MDB_KEYEXIST) /* v is the value present */
        *old = (pdcbb_val_t){v.mv_data, v.mv_size};
    return err_from_mdb(rc);
}

static pdcbb_err_t lmdb_del(pdcbb_txn_t *t, pdcbb_table_t tb, pdcbb_val_t key)
{
    MDB_val k = {key.len, (void *)key.data};
    return err_from_mdb(mdb_del(t->txn, t->st->dbi[tb], &k, NULL));
}

static pdcbb_err_t lmdb_cursor_open(pdcbb_txn_t *t, pdcbb_table_t tb, pdcbb_cursor_t **out)
{
    pdcbb_cursor_t *c = malloc(sizeof(*c));
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

static pdcbb_err_t cursor_get(pdcbb_cursor_t *c, MDB_val *k, MDB_cursor_op op, pdcbb_val_t *ko,
                              pdcbb_val_t *vo)
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

static pdcbb_err_t lmdb_cursor_seek(pdcbb_cursor_t *c, pdcbb_val_t key, pdcbb_val_t *k,
                                    pdcbb_val_t *v)
{
    MDB_val mk = {key.len, (void *)key.data};
    return cursor_get(c, &mk, key.len ? MDB_SET_RANGE : MDB_FIRST, k, v);
}

static pdcbb_err_t lmdb_cursor_next(pdcbb_cursor_t *c, pdcbb_val_t *k, pdcbb_val_t *v)
{
    MDB_val mk;
    return cursor_get(c, &mk, MDB_NEXT, k, v);
}

static void lmdb_cursor_close(pdcbb_cursor_t *c)
{
    if (c == NULL)
        return;
    mdb_cursor_close(c->cur);
    free(c);
}

static pdcbb_err_t lmdb_cursor_put(pdcbb_cursor_t *c, pdcbb_val_t key, pdcbb_val_t val)
{
    MDB_val k = {key.len, (void *)key.data}, v = {val.len, (void *)val.data};
    return err_from_mdb(mdb_cursor_put(c->cur, &k, &v, 0));
}

static pdcbb_err_t lmdb_cursor_del(pdcbb_cursor_t *c, pdcbb_val_t key)
{
    MDB_val k = {key.len, (void *)key.data}, v;
    /* MDB_SET on a positioned cursor looks at its page first (mdb_cursor_set). */
    int rc = mdb_cursor_get(c->cur, &k, &v, MDB_SET);
    if (rc == 0)
        rc = mdb_cursor_del(c->cur, 0);
    return err_from_mdb(rc);
}

static pdcbb_err_t lmdb_count(pdcbb_txn_t *t, pdcbb_table_t tb, uint64_t *n)
{
    MDB_stat s;
    int rc = mdb_stat(t->txn, t->st->dbi[tb], &s);
    if (rc == 0)
        *n = s.ms_entries;
    return err_from_mdb(rc);
}

const pdcbb_store_ops_t pdcbb_store_lmdb = {
    .name = "lmdb",
    .open = lmdb_open,
    .close = lmdb_close,
    .sync = lmdb_sync,
    .txn_begin = lmdb_txn_begin,
    .txn_commit = lmdb_txn_commit,
    .txn_abort = lmdb_txn_abort,
    .get = lmdb_get,
    .put = lmdb_put,
    .put_new = lmdb_put_new,
    .del = lmdb_del,
    .cursor_open = lmdb_cursor_open,
    .cursor_seek = lmdb_cursor_seek,
    .cursor_next = lmdb_cursor_next,
    .cursor_close = lmdb_cursor_close,
    .cursor_put = lmdb_cursor_put,
    .cursor_del = lmdb_cursor_del,
    .count = lmdb_count,
};
