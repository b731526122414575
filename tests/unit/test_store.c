/*
 * test_store.c - the daemon's key-value store (store/pdcbb_store.h) through its table of
 * functions, on a temporary directory: put/get/del, cursors (seek, next, the end of a prefix,
 * the end of a table), transactions (commit, abort, a read transaction's snapshot), a full map,
 * and data kept across close and reopen. Every case runs against each backend in `backends`
 * (LMDB today), so a second backend gets the same checks.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdcbb_store.h"
#include "unit_check.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const pdcbb_store_ops_t *ops;
static char dir[4096];

static pdcbb_val_t str(const char *s)
{
    return (pdcbb_val_t){s, strlen(s)};
}

static int val_is(pdcbb_val_t v, const char *s)
{
    return v.len == strlen(s) && memcmp(v.data, s, v.len) == 0;
}

static pdcbb_store_t *store_open(uint64_t map_size)
{
    pdcbb_store_t *st = NULL;
    char err[512] = "";
    pdcbb_err_t rc = ops->open(dir, map_size, &st, err, sizeof(err));
    CHECK_ERR(rc, PDCBB_OK);
    if (rc != PDCBB_OK)
        fprintf(stderr, "open: %s\n", err);
    return st;
}

/* Commit a write transaction that puts key -> value in table t. */
static pdcbb_err_t put1(pdcbb_store_t *st, pdcbb_table_t t, const char *key, const char *value)
{
    pdcbb_txn_t *w;
    pdcbb_err_t rc = ops->txn_begin(st, 1, &w);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = ops->put(w, t, str(key), str(value), 0)) != PDCBB_OK) {
        ops->txn_abort(w);
        return rc;
    }
    return ops->txn_commit(w);
}

/* 1 if key has the value want in table t (want NULL: is absent), in a read transaction of its
 * own. */
static int get_is(pdcbb_store_t *st, pdcbb_table_t t, const char *key, const char *want)
{
    pdcbb_txn_t *r;
    pdcbb_val_t v;
    if (ops->txn_begin(st, 0, &r) != PDCBB_OK)
        return 0;
    pdcbb_err_t rc = ops->get(r, t, str(key), &v);
    int ok = want ? rc == PDCBB_OK && val_is(v, want) : rc == PDCBB_ERR_NOT_FOUND;
    ops->txn_abort(r);
    return ok;
}

static void test_put_get_del(pdcbb_store_t *st)
{
    pdcbb_txn_t *w;
    pdcbb_val_t v;
    CHECK_ERR(ops->txn_begin(st, 1, &w), PDCBB_OK);
    CHECK_ERR(ops->get(w, PDCBB_T_CONT_NAME, str("a"), &v), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(ops->put(w, PDCBB_T_CONT_NAME, str("a"), str("one"), PDCBB_PUT_NO_OVERWRITE),
              PDCBB_OK);
    CHECK_ERR(ops->get(w, PDCBB_T_CONT_NAME, str("a"), &v), PDCBB_OK); /* own writes */
    CHECK(val_is(v, "one"));
    CHECK_ERR(ops->put(w, PDCBB_T_CONT_NAME, str("a"), str("two"), PDCBB_PUT_NO_OVERWRITE),
              PDCBB_ERR_EXISTS);
    CHECK_ERR(ops->get(w, PDCBB_T_CONT_NAME, str("a"), &v), PDCBB_OK);
    CHECK(val_is(v, "one"));
    CHECK_ERR(ops->put(w, PDCBB_T_CONT_NAME, str("a"), str("two"), 0), PDCBB_OK);
    /* tables are separate key spaces */
    CHECK_ERR(ops->put(w, PDCBB_T_OBJ_NAME, str("a"), str("obj"), 1), PDCBB_OK);
    CHECK_ERR(ops->put(w, PDCBB_T_CONT_NAME, str("empty"), (pdcbb_val_t){"", 0}, 0), PDCBB_OK);
    CHECK_ERR(ops->txn_commit(w), PDCBB_OK);
    CHECK(get_is(st, PDCBB_T_CONT_NAME, "a", "two"));
    CHECK(get_is(st, PDCBB_T_OBJ_NAME, "a", "obj"));
    CHECK(get_is(st, PDCBB_T_CONT_NAME, "empty", ""));
    CHECK(get_is(st, PDCBB_T_TAG, "a", NULL));

    CHECK_ERR(ops->txn_begin(st, 1, &w), PDCBB_OK);
    CHECK_ERR(ops->del(w, PDCBB_T_CONT_NAME, str("a")), PDCBB_OK);
    CHECK_ERR(ops->del(w, PDCBB_T_CONT_NAME, str("a")), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(ops->del(w, PDCBB_T_CONT_NAME, str("never")), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(ops->get(w, PDCBB_T_CONT_NAME, str("a"), &v), PDCBB_ERR_NOT_FOUND);
    /* keys: at most 511 bytes (LMDB's mdb_env_get_maxkeysize), not empty */
    static char k511[512], k512[513];
    memset(k511, 'k', 511);
    memset(k512, 'k', 512);
    CHECK_ERR(ops->put(w, PDCBB_T_CONT_NAME, str(k511), str("x"), 0), PDCBB_OK);
    CHECK_ERR(ops->put(w, PDCBB_T_CONT_NAME, str(k512), str("x"), 0), PDCBB_ERR_TOO_BIG);
    CHECK_ERR(ops->get(w, PDCBB_T_CONT_NAME, str(k512), &v), PDCBB_ERR_NOT_FOUND); /* no check */
    CHECK_ERR(ops->put(w, PDCBB_T_CONT_NAME, (pdcbb_val_t){"", 0}, str("x"), 0), PDCBB_ERR_TOO_BIG);
    /* large values are fine */
    size_t big = 4u << 20;
    char *b = malloc(big);
    memset(b, 'v', big);
    CHECK_ERR(ops->put(w, PDCBB_T_OBJ, str("big"), (pdcbb_val_t){b, big}, 0), PDCBB_OK);
    CHECK_ERR(ops->get(w, PDCBB_T_OBJ, str("big"), &v), PDCBB_OK);
    CHECK(v.len == big && memcmp(v.data, b, big) == 0);
    free(b);
    CHECK_ERR(ops->txn_commit(w), PDCBB_OK);
    CHECK(get_is(st, PDCBB_T_CONT_NAME, "a", NULL));
    CHECK(get_is(st, PDCBB_T_CONT_NAME, k511, "x"));

    /* puts and deletes through a cursor, in order and out of order */
    pdcbb_cursor_t *c;
    CHECK_ERR(ops->txn_begin(st, 1, &w), PDCBB_OK);
    CHECK_ERR(ops->cursor_open(w, PDCBB_T_TAGIDX, &c), PDCBB_OK);
    CHECK_ERR(ops->cursor_put(c, str("c1"), str("")), PDCBB_OK);
    CHECK_ERR(ops->cursor_put(c, str("c2"), str("")), PDCBB_OK);
    CHECK_ERR(ops->cursor_put(c, str("c0"), str("")), PDCBB_OK);
    CHECK_ERR(ops->cursor_put(c, str("c2"), str("again")), PDCBB_OK);
    CHECK_ERR(ops->cursor_del(c, str("c1")), PDCBB_OK);
    CHECK_ERR(ops->cursor_del(c, str("c1")), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(ops->cursor_del(c, str("c9")), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(ops->cursor_put(c, str("c3"), str("")), PDCBB_OK);
    ops->cursor_close(c);
    CHECK_ERR(ops->txn_commit(w), PDCBB_OK);
    CHECK(get_is(st, PDCBB_T_TAGIDX, "c0", ""));
    CHECK(get_is(st, PDCBB_T_TAGIDX, "c1", NULL));
    CHECK(get_is(st, PDCBB_T_TAGIDX, "c2", "again"));
    CHECK(get_is(st, PDCBB_T_TAGIDX, "c3", ""));

    /* count */
    pdcbb_txn_t *r;
    uint64_t n = 99;
    CHECK_ERR(ops->txn_begin(st, 0, &r), PDCBB_OK);
    CHECK_ERR(ops->count(r, PDCBB_T_CONT_NAME, &n), PDCBB_OK);
    CHECK(n == 2); /* "empty" and k511 */
    CHECK_ERR(ops->count(r, PDCBB_T_KVTX, &n), PDCBB_OK);
    CHECK(n == 0);
    /* a read transaction cannot write */
    CHECK(ops->put(r, PDCBB_T_CONT_NAME, str("ro"), str("x"), 0) != PDCBB_OK);
    CHECK(ops->del(r, PDCBB_T_CONT_NAME, str("empty")) != PDCBB_OK);
    ops->txn_abort(r);
    CHECK(get_is(st, PDCBB_T_CONT_NAME, "ro", NULL));
    CHECK(get_is(st, PDCBB_T_CONT_NAME, "empty", ""));
}

/* Keys id (big-endian) + suffix byte, as the daemon's tables key records of an id. */
static pdcbb_val_t idkey(uint8_t *k, uint64_t id, int suffix)
{
    pdcbb_key_u64(k, id);
    if (suffix < 0)
        return (pdcbb_val_t){k, 8};
    k[8] = (uint8_t)suffix;
    return (pdcbb_val_t){k, 9};
}

/* put_new: one search for "put unless present", the present value when it is; PDCBB_PUT_APPEND:
 * keys after every key of the table only. */
static void test_put_new_append(pdcbb_store_t *st)
{
    pdcbb_txn_t *w;
    pdcbb_val_t old = {0}, v;
    CHECK_ERR(ops->txn_begin(st, 1, &w), PDCBB_OK);
    CHECK_ERR(ops->put_new(w, PDCBB_T_TAG, str("t1"), str("first"), &old), PDCBB_OK);
    CHECK_ERR(ops->put_new(w, PDCBB_T_TAG, str("t1"), str("second"), &old), PDCBB_ERR_EXISTS);
    CHECK(val_is(old, "first"));
    CHECK_ERR(ops->get(w, PDCBB_T_TAG, str("t1"), &v), PDCBB_OK);
    CHECK(val_is(v, "first")); /* unchanged */
    uint8_t k[8];
    for (uint64_t i = 10; i < 2000; i++) {
        pdcbb_key_u64(k, i);
        CHECK_ERR(ops->put(w, PDCBB_T_TAGLOG, (pdcbb_val_t){k, 8}, str("rec"), PDCBB_PUT_APPEND),
                  PDCBB_OK);
    }
    pdcbb_key_u64(k, 5); /* before the last key */
    CHECK_ERR(ops->put(w, PDCBB_T_TAGLOG, (pdcbb_val_t){k, 8}, str("rec"), PDCBB_PUT_APPEND),
              PDCBB_ERR_EXISTS);
    pdcbb_key_u64(k, 1999); /* the last key itself */
    CHECK_ERR(ops->put(w, PDCBB_T_TAGLOG, (pdcbb_val_t){k, 8}, str("rec"), PDCBB_PUT_APPEND),
              PDCBB_ERR_EXISTS);
    CHECK_ERR(ops->txn_commit(w), PDCBB_OK);
    uint64_t n = 0;
    CHECK_ERR(ops->txn_begin(st, 0, &w), PDCBB_OK);
    CHECK_ERR(ops->count(w, PDCBB_T_TAGLOG, &n), PDCBB_OK);
    CHECK(n == 1990);
    ops->txn_abort(w);
}

static void test_cursors(pdcbb_store_t *st)
{
    pdcbb_txn_t *w, *r;
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    uint8_t kb[9], sb[9];
    CHECK_ERR(ops->txn_begin(st, 1, &w), PDCBB_OK);
    /* an empty table */
    CHECK_ERR(ops->cursor_open(w, PDCBB_T_MAP, &c), PDCBB_OK);
    CHECK_ERR(ops->cursor_seek(c, (pdcbb_val_t){NULL, 0}, &k, &v), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(ops->cursor_seek(c, idkey(sb, 1, -1), &k, &v), PDCBB_ERR_NOT_FOUND);
    ops->cursor_close(c);
    /* ids 256 and 300 (they sort numerically only big-endian), 3 records each, and 1000 */
    static const uint64_t ids[] = {300, 256, 1000};
    for (size_t i = 0; i < ARRAY_LEN(ids); i++)
        for (int s = 2; s >= 0; s--)
            if (ids[i] != 1000 || s == 0)
                CHECK_ERR(ops->put(w, PDCBB_T_MAP, idkey(kb, ids[i], s), str("v"), 1), PDCBB_OK);
    CHECK_ERR(ops->txn_commit(w), PDCBB_OK);

    CHECK_ERR(ops->txn_begin(st, 0, &r), PDCBB_OK);
    CHECK_ERR(ops->cursor_open(r, PDCBB_T_MAP, &c), PDCBB_OK);
    /* the whole table in key order */
    static const struct {
        uint64_t id;
        int s;
    } order[] = {{256, 0}, {256, 1}, {256, 2}, {300, 0}, {300, 1}, {300, 2}, {1000, 0}};
    pdcbb_err_t rc = ops->cursor_seek(c, (pdcbb_val_t){NULL, 0}, &k, &v);
    for (size_t i = 0; i < ARRAY_LEN(order); i++) {
        CHECK_ERR(rc, PDCBB_OK);
        CHECK(rc == PDCBB_OK && k.len == 9 && pdcbb_key_get_u64(k.data) == order[i].id &&
              ((const uint8_t *)k.data)[8] == order[i].s && val_is(v, "v"));
        rc = ops->cursor_next(c, &k, &v);
    }
    CHECK_ERR(rc, PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(ops->cursor_next(c, &k, &v), PDCBB_ERR_NOT_FOUND); /* stays at the end */

    /* a prefix: seek to the id, walk while the key starts with it; the next key is the next
     * id's (the caller sees the prefix end by comparing) */
    int n = 0;
    rc = ops->cursor_seek(c, idkey(sb, 256, -1), &k, &v);
    while (rc == PDCBB_OK && k.len >= 8 && memcmp(k.data, sb, 8) == 0) {
        n++;
        rc = ops->cursor_next(c, &k, &v);
    }
    CHECK(n == 3 && rc == PDCBB_OK && pdcbb_key_get_u64(k.data) == 300);
    /* the last prefix ends with the table */
    n = 0;
    rc = ops->cursor_seek(c, idkey(sb, 1000, -1), &k, &v);
    while (rc == PDCBB_OK && memcmp(k.data, sb, 8) == 0) {
        n++;
        rc = ops->cursor_next(c, &k, &v);
    }
    CHECK(n == 1 && rc == PDCBB_ERR_NOT_FOUND);
    /* seek: the first key >= the one asked */
    CHECK_ERR(ops->cursor_seek(c, idkey(sb, 256, 1), &k, &v), PDCBB_OK);
    CHECK(k.len == 9 && memcmp(k.data, sb, 9) == 0);
    CHECK_ERR(ops->cursor_seek(c, idkey(sb, 257, -1), &k, &v), PDCBB_OK);
    CHECK(pdcbb_key_get_u64(k.data) == 300 && ((const uint8_t *)k.data)[8] == 0);
    CHECK_ERR(ops->cursor_seek(c, idkey(sb, 1, -1), &k, &v), PDCBB_OK);
    CHECK(pdcbb_key_get_u64(k.data) == 256);
    CHECK_ERR(ops->cursor_seek(c, idkey(sb, 1001, -1), &k, &v), PDCBB_ERR_NOT_FOUND);
    /* NULL out-parameters are allowed */
    CHECK_ERR(ops->cursor_seek(c, (pdcbb_val_t){NULL, 0}, NULL, NULL), PDCBB_OK);
    CHECK_ERR(ops->cursor_next(c, NULL, NULL), PDCBB_OK);
    ops->cursor_close(c);
    ops->cursor_close(NULL);
    ops->txn_abort(r);

    /* a cursor sees its own transaction's writes and deletes */
    CHECK_ERR(ops->txn_begin(st, 1, &w), PDCBB_OK);
    CHECK_ERR(ops->del(w, PDCBB_T_MAP, idkey(kb, 256, 0)), PDCBB_OK);
    CHECK_ERR(ops->put(w, PDCBB_T_MAP, idkey(kb, 5, 0), str("new"), 1), PDCBB_OK);
    CHECK_ERR(ops->cursor_open(w, PDCBB_T_MAP, &c), PDCBB_OK);
    CHECK_ERR(ops->cursor_seek(c, (pdcbb_val_t){NULL, 0}, &k, &v), PDCBB_OK);
    CHECK(pdcbb_key_get_u64(k.data) == 5 && val_is(v, "new"));
    CHECK_ERR(ops->cursor_next(c, &k, &v), PDCBB_OK);
    CHECK(pdcbb_key_get_u64(k.data) == 256 && ((const uint8_t *)k.data)[8] == 1);
    ops->cursor_close(c);
    ops->txn_abort(w);
}

static void test_transactions(pdcbb_store_t *st)
{
    pdcbb_txn_t *w, *r1, *r2;
    pdcbb_val_t v;
    /* abort drops everything the transaction did */
    CHECK_ERR(ops->txn_begin(st, 1, &w), PDCBB_OK);
    CHECK_ERR(ops->put(w, PDCBB_T_STATE, str("aborted"), str("x"), 0), PDCBB_OK);
    CHECK_ERR(ops->del(w, PDCBB_T_CONT_NAME, str("empty")), PDCBB_OK);
    ops->txn_abort(w);
    ops->txn_abort(NULL);
    CHECK(get_is(st, PDCBB_T_STATE, "aborted", NULL));
    CHECK(get_is(st, PDCBB_T_CONT_NAME, "empty", ""));

    /* a read transaction keeps its snapshot: neither an open write nor a later commit shows */
    CHECK_ERR(put1(st, PDCBB_T_STATE, "seq", "1"), PDCBB_OK);
    CHECK_ERR(ops->txn_begin(st, 0, &r1), PDCBB_OK);
    CHECK_ERR(ops->txn_begin(st, 1, &w), PDCBB_OK);
    CHECK_ERR(ops->put(w, PDCBB_T_STATE, str("seq"), str("2"), 0), PDCBB_OK);
    CHECK_ERR(ops->put(w, PDCBB_T_STATE, str("fresh"), str("f"), 0), PDCBB_OK);
    CHECK_ERR(ops->get(r1, PDCBB_T_STATE, str("seq"), &v), PDCBB_OK);
    CHECK(val_is(v, "1"));
    CHECK_ERR(ops->txn_commit(w), PDCBB_OK);
    CHECK_ERR(ops->get(r1, PDCBB_T_STATE, str("seq"), &v), PDCBB_OK);
    CHECK(val_is(v, "1"));
    CHECK_ERR(ops->get(r1, PDCBB_T_STATE, str("fresh"), &v), PDCBB_ERR_NOT_FOUND);
    uint64_t n1 = 0, n2 = 0;
    CHECK_ERR(ops->count(r1, PDCBB_T_STATE, &n1), PDCBB_OK);
    /* a transaction begun after the commit sees it */
    CHECK_ERR(ops->txn_begin(st, 0, &r2), PDCBB_OK);
    CHECK_ERR(ops->get(r2, PDCBB_T_STATE, str("seq"), &v), PDCBB_OK);
    CHECK(val_is(v, "2"));
    CHECK_ERR(ops->count(r2, PDCBB_T_STATE, &n2), PDCBB_OK);
    CHECK(n2 == n1 + 1);
    ops->txn_abort(r2);
    ops->txn_abort(r1);
}

/* A full store (pdcbb_store.h): a WRITE transaction that would leave more than the map size in
 * use is refused at its commit with PDCBB_ERR_META_FULL and changes nothing; a REMOVE
 * transaction may use the reserve beyond it, so deletes work on a full store and make room. */
static void test_map_full(void)
{
    pdcbb_store_t *st = store_open(1 << 20);
    if (st == NULL)
        return;
    pdcbb_txn_t *w;
    static char value[64 << 10];
    char key[32];
    int i;
    memset(value, 'f', sizeof(value));
    /* 4 MiB in one transaction: every put fits LMDB's map, the commit is refused */
    CHECK_ERR(ops->txn_begin(st, PDCBB_TXN_WRITE, &w), PDCBB_OK);
    for (i = 0; i < 64; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        CHECK_ERR(ops->put(w, PDCBB_T_KV, str(key), (pdcbb_val_t){value, sizeof(value)}, 0),
                  PDCBB_OK);
    }
    CHECK_ERR(ops->txn_commit(w), PDCBB_ERR_META_FULL);
    CHECK(get_is(st, PDCBB_T_KV, "k000", NULL));

    /* one value per transaction: about 1 MiB of them fit, then META_FULL */
    pdcbb_err_t rc = PDCBB_OK;
    for (i = 0; i < 64 && rc == PDCBB_OK; i++) {
        CHECK_ERR(ops->txn_begin(st, PDCBB_TXN_WRITE, &w), PDCBB_OK);
        snprintf(key, sizeof(key), "k%03d", i);
        CHECK_ERR(ops->put(w, PDCBB_T_KV, str(key), (pdcbb_val_t){value, sizeof(value)}, 0),
                  PDCBB_OK);
        rc = ops->txn_commit(w);
    }
    CHECK_ERR(rc, PDCBB_ERR_META_FULL);
    int fit = i - 1;
    CHECK(fit > 4 && fit < 17);
    snprintf(key, sizeof(key), "k%03d", fit);
    CHECK(get_is(st, PDCBB_T_KV, key, NULL)); /* the refused one is not there */
    CHECK(get_is(st, PDCBB_T_KV, "k000", NULL) == 0);
    /* deleting on the full store works, and makes room again */
    CHECK_ERR(ops->txn_begin(st, PDCBB_TXN_REMOVE, &w), PDCBB_OK);
    for (i = 0; i < fit; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        CHECK_ERR(ops->del(w, PDCBB_T_KV, str(key)), PDCBB_OK);
    }
    CHECK_ERR(ops->txn_commit(w), PDCBB_OK);
    CHECK_ERR(ops->txn_begin(st, PDCBB_TXN_WRITE, &w), PDCBB_OK);
    CHECK_ERR(ops->put(w, PDCBB_T_KV, str("again"), (pdcbb_val_t){value, sizeof(value)}, 0),
              PDCBB_OK);
    CHECK_ERR(ops->txn_commit(w), PDCBB_OK);
    /* beyond the reserve too, LMDB's own map is full: META_FULL at the put */
    CHECK_ERR(ops->txn_begin(st, PDCBB_TXN_REMOVE, &w), PDCBB_OK);
    rc = PDCBB_OK;
    for (i = 0; i < 2000 && rc == PDCBB_OK; i++) {
        snprintf(key, sizeof(key), "r%04d", i);
        rc = ops->put(w, PDCBB_T_KV, str(key), (pdcbb_val_t){value, sizeof(value)}, 0);
    }
    CHECK_ERR(rc, PDCBB_ERR_META_FULL);
    CHECK(i > 900 && i < 1100); /* 1 MiB + 64 MiB of 64 KiB values */
    ops->txn_abort(w);
    ops->close(st);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

int main(void)
{
    static const pdcbb_store_ops_t *const backends[] = {&pdcbb_store_lmdb};
    const char *tmp = getenv("TMPDIR");
    for (size_t b = 0; b < ARRAY_LEN(backends); b++) {
        ops = backends[b];
        snprintf(dir, sizeof(dir), "%s/test_store.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(dir) == NULL) {
            perror("mkdtemp");
            return 1;
        }
        pdcbb_store_t *st = store_open(64 << 20);
        if (st) {
            test_put_get_del(st);
            test_put_new_append(st);
            test_cursors(st);
            test_transactions(st);
            CHECK_ERR(ops->sync(st), PDCBB_OK);
            ops->close(st);
        }
        ops->close(NULL);
        /* everything committed is there after a reopen; what was aborted is not */
        if ((st = store_open(64 << 20)) != NULL) {
            CHECK(get_is(st, PDCBB_T_STATE, "seq", "2"));
            CHECK(get_is(st, PDCBB_T_STATE, "fresh", "f"));
            CHECK(get_is(st, PDCBB_T_OBJ_NAME, "a", "obj"));
            CHECK(get_is(st, PDCBB_T_STATE, "aborted", NULL));
            CHECK(get_is(st, PDCBB_T_CONT_NAME, "a", NULL));
            ops->close(st);
        }
        nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
        snprintf(dir, sizeof(dir), "%s/test_store.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(dir) == NULL) {
            perror("mkdtemp");
            return 1;
        }
        test_map_full();
        nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
        /* a directory that does not exist */
        pdcbb_store_t *none = NULL;
        char err[512] = "";
        CHECK(ops->open(dir, 1 << 20, &none, err, sizeof(err)) != PDCBB_OK && none == NULL &&
              err[0] != '\0');
        printf("%s: backend %s done\n", "store", ops->name);
    }
    UNIT_DONE("store");
}
