/*
 * pdc_kv_seed - the IOD KV store design's own examples (seed 002) as a test, plus the bad
 * input cases of issue 12, against real daemons. Run under mpirun (any number of ranks):
 *   mpirun -np N pdc_kv_seed [SHARDING]       SHARDING: hash | range | default
 * 1. "sample process": collective init over MPI_COMM_WORLD (rank 0 creates and decides the
 *    layout, every rank gets an id of the same KV object); every rank sets its own keys (set
 *    and set_list), then gets and lists everyone's, in ascending key order; rank 0 deletes.
 * 2. "Versioning": NULLTAG records updated in place; MAXTAG gets the latest; a get at an older
 *    tag sees the older version; MAXTAG cannot be set; versions stay until unlinked.
 * 3. Bad input: clear errors naming the problem.
 * Prints "ok <case>" per passed case on rank 0 and "FAIL <case>: why" for a failure (exit 1).
 */
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"
#include "pdc_client_connect.h"
#include "pdc_kv.h"

static int rank, size, failed;

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            printf("FAIL rank %d line %d: ", rank, __LINE__);                                     \
            printf(__VA_ARGS__);                                                                  \
            printf(" [last error: %s]\n", PDCbb_last_error_message());                            \
            failed = 1;                                                                           \
        }                                                                                         \
    } while (0)

/* The call failed with err and the message contains want. */
#define EXPECT_ERR(call, err, want)                                                               \
    do {                                                                                          \
        perr_t r_ = (call);                                                                       \
        CHECK(r_ == FAIL, "%s succeeded", #call);                                                 \
        CHECK(strcmp(PDCbb_last_error_name(), #err) == 0, "%s: error %s, expected %s", #call,                    \
              PDCbb_last_error_name(), #err);                                                     \
        CHECK(strstr(PDCbb_last_error_message(), (want)) != NULL,                                 \
              "%s: message '%s' does not say '%s'", #call, PDCbb_last_error_message(), want);     \
    } while (0)

static void ok(const char *what)
{
    int f = failed, any;
    MPI_Allreduce(&f, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s %s\n", any ? "FAIL" : "ok", what);
    if (any) {
        MPI_Finalize();
        exit(1);
    }
}

static int64_t get_str(pdcid_t kv, pdc_kv_tag_t tag, const char *key, char *buf, size_t cap,
                       pdc_kv_tag_t *ftag)
{
    uint64_t len = cap;
    pdc_kv_key_t k = PDC_KV_KEY_STR(key);
    if (PDCkv_get_value(kv, tag, &k, buf, &len, ftag, NULL) != SUCCEED)
        return -1;
    buf[len < cap ? len : cap - 1] = 0;
    return (int64_t)len;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "default";
    pdc_kv_info_t info = {PDC_KV_STRING, PDC_KV_SHARD_DEFAULT, 0, 0, 0};
    if (strcmp(mode, "hash") == 0)
        info.sharding = PDC_KV_SHARD_HASH;
    else if (strcmp(mode, "range") == 0)
        info.sharding = PDC_KV_SHARD_RANGE;

    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0) {
        printf("rank %d: PDCinit: %s\n", rank, PDCbb_last_error_message());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create_col("kvseed", cprop);
    CHECK(cont != 0, "container");
    ok("init");

    /* ---- 1. sample process: collective init, set/get/list/delete ---- */
    pdcid_t kv = PDCkv_create_coll(cont, "seedkv", &info, MPI_COMM_WORLD);
    CHECK(kv != 0, "PDCkv_create_coll");
    pdc_kv_info_t got;
    CHECK(PDCkv_get_info(kv, &got) == SUCCEED, "get_info");
    int nd = 0;
    CHECK(got.nshards >= 1 && got.sharding != PDC_KV_SHARD_DEFAULT, "layout decided: nshards %u sharding %d",
          got.nshards, got.sharding);
    nd = (int)got.nshards;
    /* every rank sees the same layout */
    int mine[2] = {(int)got.nshards, (int)got.sharding}, r0[2] = {mine[0], mine[1]};
    MPI_Bcast(r0, 2, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(r0[0] == mine[0] && r0[1] == mine[1], "ranks agree on the layout");
    if (rank == 0)
        printf("layout nshards=%d sharding=%s\n", nd, got.sharding == PDC_KV_SHARD_HASH ? "hash" : "range");
    ok("sample: collective create, every rank the same layout");

    const int per = 50;
    char key[64], val[64], buf[256];
    for (int i = 0; i < per; i++) {
        snprintf(key, sizeof(key), "r%02d-k%03d", rank, i);
        snprintf(val, sizeof(val), "value of %s", key);
        if (i % 2 == 0) {
            pdc_kv_key_t k = PDC_KV_KEY_STR(key);
            CHECK(PDCkv_set(kv, PDC_KV_NULLTAG, &k, val, strlen(val), NULL) == SUCCEED, "set %s", key);
        }
    }
    /* the odd ones with one set_list, non-blocking */
    pdc_kv_t recs[25];
    char keys[25][64], vals[25][64];
    for (int j = 0; j < 25; j++) {
        int i = 2 * j + 1;
        snprintf(keys[j], 64, "r%02d-k%03d", rank, i);
        snprintf(vals[j], 64, "value of %s", keys[j]);
        recs[j] = (pdc_kv_t){PDC_KV_KEY_STR(keys[j]), 0, vals[j], strlen(vals[j])};
    }
    pdc_kv_event_t ev = {0};
    CHECK(PDCkv_set_list(kv, PDC_KV_NULLTAG, 25, recs, &ev) == SUCCEED, "set_list posted");
    int done = 0;
    CHECK(PDCkv_event_test(&ev, &done) == SUCCEED, "event_test");
    CHECK(PDCkv_event_wait(&ev) == SUCCEED, "event_wait of set_list");
    MPI_Barrier(MPI_COMM_WORLD);
    /* every rank reads every rank's keys */
    for (int r = 0; r < size; r++)
        for (int i = 0; i < per; i += 7) {
            snprintf(key, sizeof(key), "r%02d-k%03d", r, i);
            snprintf(val, sizeof(val), "value of %s", key);
            CHECK(get_str(kv, PDC_KV_MAXTAG, key, buf, sizeof(buf), NULL) == (int64_t)strlen(val) &&
                      strcmp(buf, val) == 0, "get %s -> '%s'", key, buf);
        }
    uint64_t num = 0;
    CHECK(PDCkv_get_num(kv, PDC_KV_MAXTAG, &num, NULL) == SUCCEED && num == (uint64_t)(per * size),
          "get_num %llu, expected %d", (unsigned long long)num, per * size);
    /* the whole listing in pages of 13, ascending */
    uint64_t total = 0;
    char prev[64] = "";
    for (uint64_t off = 0;; off += 13) {
        pdc_kv_t *l = NULL;
        uint64_t n = 0;
        CHECK(PDCkv_get_list(kv, PDC_KV_MAXTAG, off, 13, &l, &n, NULL) == SUCCEED, "get_list at %llu",
              (unsigned long long)off);
        for (uint64_t i = 0; i < n; i++) {
            int r = -1, k = -1;
            sscanf(l[i].key.str, "r%d-k%d", &r, &k);
            snprintf(key, sizeof(key), "r%02d-k%03d", r, k);
            snprintf(val, sizeof(val), "value of %s", key);
            CHECK(strcmp(l[i].key.str, key) == 0 && strcmp(prev, l[i].key.str) < 0 &&
                      l[i].value_len == strlen(val) && memcmp(l[i].value, val, l[i].value_len) == 0,
                  "list record %llu: '%s' after '%s'", (unsigned long long)(off + i), l[i].key.str, prev);
            CHECK(off + i == (uint64_t)(r * per + k), "list position of %s is %llu", key,
                  (unsigned long long)(off + i));
            snprintf(prev, sizeof(prev), "%s", l[i].key.str);
        }
        total += n;
        PDCkv_list_free(l);
        if (n < 13)
            break;
    }
    CHECK(total == (uint64_t)(per * size), "listed %llu", (unsigned long long)total);
    /* list_key: keys only */
    pdc_kv_t *l = NULL;
    uint64_t n = 0;
    CHECK(PDCkv_list_key(kv, PDC_KV_MAXTAG, 1, 3, &l, &n, NULL) == SUCCEED && n == 3 &&
              strcmp(l[0].key.str, "r00-k001") == 0 && l[0].value == NULL,
          "list_key");
    PDCkv_list_free(l);
    ok("sample: every rank sets its keys, gets and lists everyone's in key order");

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(PDCkv_delete(kv) == SUCCEED, "delete");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) {
        pdc_kv_key_t k = PDC_KV_KEY_STR("r00-k000");
        uint64_t len = sizeof(buf);
        EXPECT_ERR(PDCkv_get_value(kv, PDC_KV_MAXTAG, &k, buf, &len, NULL, NULL), PDCBB_ERR_BAD_ID,
                   "does not exist");
        CHECK(PDCkv_close(kv) == SUCCEED, "close");
    }
    CHECK(PDCkv_open(cont, "seedkv") == 0 && strcmp(PDCbb_last_error_name(), "PDCBB_ERR_NOT_FOUND") == 0, "open after delete");
    ok("sample: delete by rank 0; other ranks' ids are stale");

    /* ---- 2. versioning (rank 0) ---- */
    if (rank == 0) {
        pdcid_t v = PDCkv_create(cont, "versions", &info);
        CHECK(v != 0, "create versions");
        pdc_kv_key_t k = PDC_KV_KEY_STR("state");
        pdc_kv_tag_t ft = 99;
        /* NULLTAG updated in place */
        CHECK(PDCkv_set(v, PDC_KV_NULLTAG, &k, "a", 1, NULL) == SUCCEED, "set null a");
        CHECK(PDCkv_set(v, PDC_KV_NULLTAG, &k, "bb", 2, NULL) == SUCCEED, "set null bb");
        CHECK(get_str(v, PDC_KV_MAXTAG, "state", buf, sizeof(buf), &ft) == 2 && strcmp(buf, "bb") == 0 &&
                  ft == 0, "NULLTAG in place: '%s' tag %llu", buf, (unsigned long long)ft);
        CHECK(get_str(v, 5, "state", buf, sizeof(buf), &ft) == 2 && strcmp(buf, "bb") == 0,
              "NULLTAG visible at every tag");
        /* versions 10, 20 */
        CHECK(PDCkv_set(v, 10, &k, "v10", 3, NULL) == SUCCEED, "set 10");
        CHECK(PDCkv_set(v, 20, &k, "v20", 3, NULL) == SUCCEED, "set 20");
        CHECK(get_str(v, PDC_KV_MAXTAG, "state", buf, sizeof(buf), &ft) == 3 && strcmp(buf, "v20") == 0 &&
                  ft == 20, "MAXTAG gets the latest: '%s' %llu", buf, (unsigned long long)ft);
        CHECK(get_str(v, 15, "state", buf, sizeof(buf), &ft) == 3 && strcmp(buf, "v10") == 0 && ft == 10,
              "get at 15 sees 10: '%s'", buf);
        CHECK(get_str(v, 9, "state", buf, sizeof(buf), &ft) == 2 && strcmp(buf, "bb") == 0 && ft == 0,
              "get at 9 sees NULLTAG: '%s'", buf);
        /* overwrite a version with the same tag */
        CHECK(PDCkv_set(v, 10, &k, "v10b", 4, NULL) == SUCCEED, "reset 10");
        CHECK(get_str(v, 19, "state", buf, sizeof(buf), &ft) == 4 && strcmp(buf, "v10b") == 0, "same tag overwrites");
        /* MAXTAG cannot be set */
        EXPECT_ERR(PDCkv_set(v, PDC_KV_MAXTAG, &k, "x", 1, NULL), PDCBB_ERR_INVAL, "MAXTAG cannot be set");
        /* unlink at 30: gets >= 30 see nothing, < 30 still the old versions */
        CHECK(PDCkv_unlink_keys(v, 30, 1, &k, NULL) == SUCCEED, "unlink 30");
        uint64_t len = sizeof(buf);
        EXPECT_ERR(PDCkv_get_value(v, PDC_KV_MAXTAG, &k, buf, &len, NULL, NULL), PDCBB_ERR_NOT_FOUND, "'state'");
        CHECK(get_str(v, 29, "state", buf, sizeof(buf), &ft) == 3 && strcmp(buf, "v20") == 0, "before the marker");
        uint64_t c0 = 9, c1 = 9;
        CHECK(PDCkv_get_num(v, PDC_KV_MAXTAG, &c0, NULL) == SUCCEED && c0 == 0, "num after unlink %llu", (unsigned long long)c0);
        CHECK(PDCkv_get_num(v, 25, &c1, NULL) == SUCCEED && c1 == 1, "num at 25 %llu", (unsigned long long)c1);
        /* unlink MAXTAG purges every version */
        CHECK(PDCkv_unlink_keys(v, PDC_KV_MAXTAG, 1, &k, NULL) == SUCCEED, "purge");
        len = sizeof(buf);
        EXPECT_ERR(PDCkv_get_value(v, 15, &k, buf, &len, NULL, NULL), PDCBB_ERR_NOT_FOUND, "no visible version");
        /* size query, small buffer */
        CHECK(PDCkv_set(v, 40, &k, "0123456789", 10, NULL) == SUCCEED, "set 40");
        len = 0;
        CHECK(PDCkv_get_value(v, PDC_KV_MAXTAG, &k, NULL, &len, NULL, NULL) == SUCCEED && len == 10, "size query");
        len = 4;
        EXPECT_ERR(PDCkv_get_value(v, PDC_KV_MAXTAG, &k, buf, &len, NULL, NULL), PDCBB_ERR_TOO_BIG, "10 bytes");
        CHECK(len == 10, "len set on TOO_BIG");
        CHECK(PDCkv_delete(v) == SUCCEED, "delete versions");
    }
    ok("versioning: NULLTAG in place, MAXTAG latest, older tags, markers, purge, MAXTAG refused");

    /* ---- 3. bad input ---- */
    if (rank == 0) {
        pdc_kv_info_t ii = {PDC_KV_INT, info.sharding, 0, 0, 16};
        pdcid_t ik = PDCkv_create(cont, "ints", &ii);
        CHECK(ik != 0, "create ints");
        pdc_kv_key_t fk = PDC_KV_KEY_FLOAT(1.5), sk = PDC_KV_KEY_STR("x"), good = PDC_KV_KEY_INT(3);
        EXPECT_ERR(PDCkv_set(ik, 1, &fk, "v", 1, NULL), PDCBB_ERR_INVAL, "key type FLOAT does not match KV object 'ints' (INT keys)");
        EXPECT_ERR(PDCkv_set(ik, 1, &sk, "v", 1, NULL), PDCBB_ERR_INVAL, "STRING does not match");
        EXPECT_ERR(PDCkv_set(ik, 1, &good, "01234567890123456789", 20, NULL), PDCBB_ERR_TOO_BIG, "allows 16");
        EXPECT_ERR(PDCkv_set(ik, PDC_KV_MAXTAG + 1, &good, "v", 1, NULL), PDCBB_ERR_INVAL, "MAXTAG cannot be set");
        EXPECT_ERR(PDCkv_trans_start(ik, 0), PDCBB_ERR_INVAL, "cannot be a transaction");
        EXPECT_ERR(PDCkv_trans_start(ik, PDC_KV_MAXTAG), PDCBB_ERR_INVAL, "cannot be a transaction");
        EXPECT_ERR(PDCkv_trans_commit(ik, 77), PDCBB_ERR_NOT_FOUND, "not open");
        EXPECT_ERR(PDCkv_trans_abort(ik, 77), PDCBB_ERR_NOT_FOUND, "not open");
        CHECK(PDCkv_trans_start(ik, 77) == SUCCEED, "start 77");
        EXPECT_ERR(PDCkv_trans_start(ik, 77), PDCBB_ERR_EXISTS, "already open or committed");
        CHECK(PDCkv_trans_commit(ik, 77) == SUCCEED, "commit 77");
        EXPECT_ERR(PDCkv_trans_start(ik, 77), PDCBB_ERR_EXISTS, "already open or committed");
        pdc_kv_info_t fi = {PDC_KV_FLOAT, info.sharding, 0, 0, 0};
        pdcid_t fkv = PDCkv_create(cont, "floats", &fi);
        pdc_kv_key_t nan = PDC_KV_KEY_FLOAT(NAN);
        EXPECT_ERR(PDCkv_set(fkv, 1, &nan, "v", 1, NULL), PDCBB_ERR_INVAL, "NaN");
        pdc_kv_info_t si = {PDC_KV_STRING, info.sharding, 0, 8, 0};
        pdcid_t skv = PDCkv_create(cont, "short", &si);
        pdc_kv_key_t longk = PDC_KV_KEY_STR("123456789");
        EXPECT_ERR(PDCkv_set(skv, 1, &longk, "v", 1, NULL), PDCBB_ERR_TOO_BIG, "longer than KV object 'short' allows (8 bytes)");
        char *huge = malloc(1100);
        memset(huge, 'h', 1099);
        huge[1099] = 0;
        pdcid_t dkv = PDCkv_create(cont, "default", NULL);
        pdc_kv_key_t hk = PDC_KV_KEY_STR(huge), ek = PDC_KV_KEY_STR("");
        EXPECT_ERR(PDCkv_set(dkv, 1, &hk, "v", 1, NULL), PDCBB_ERR_TOO_BIG, "(1024 bytes)");
        EXPECT_ERR(PDCkv_set(dkv, 1, &ek, "v", 1, NULL), PDCBB_ERR_INVAL, "empty STRING key");
        free(huge);
        EXPECT_ERR(PDCkv_set(0x1234, 1, &good, "v", 1, NULL), PDCBB_ERR_BAD_ID, "not an open KV object id");
        EXPECT_ERR(PDCkv_open(cont, "nonexistent") == 0 ? FAIL : SUCCEED, PDCBB_ERR_NOT_FOUND, "no KV object named 'nonexistent'");
        CHECK(PDCkv_create(cont, "ints", &ii) == 0 && strcmp(PDCbb_last_error_name(), "PDCBB_ERR_EXISTS") == 0 &&
                  strstr(PDCbb_last_error_message(), "already exists"), "create twice");
        pdc_kv_info_t bad = {(pdc_kv_key_type_t)7, 0, 0, 0, 0};
        CHECK(PDCkv_create(cont, "badtype", &bad) == 0 && strcmp(PDCbb_last_error_name(), "PDCBB_ERR_INVAL") == 0, "bad key type");
        pdc_kv_info_t many = {PDC_KV_STRING, 0, 100000, 0, 0};
        CHECK(PDCkv_create(cont, "many", &many) == 0 && strstr(PDCbb_last_error_message(), "daemons"), "too many shards");
        PDCkv_delete(ik), PDCkv_delete(fkv), PDCkv_delete(skv), PDCkv_delete(dkv);
    }
    ok("bad input: wrong key type, NaN, long keys, MAXTAG set, bad tags, unknown objects");

    PDCcont_close(cont);
    PDCclose(pdc);
    MPI_Finalize();
    return failed;
}
