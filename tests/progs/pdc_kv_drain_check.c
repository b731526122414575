/*
 * pdc_kv_drain_check - writes known KV objects during a job and reports what gets and lists
 * answer, live, from the job's drain (PDCBB_DRAINED_DIR) or after a stage-in, for
 * tests/bats/79-kv-drain.bats. The report must be byte for byte the same in every case.
 *
 *   pdc_kv_drain_check write CONT        create CONT and the KV objects below, write them
 *   pdc_kv_drain_check report CONT [OBJ [T]]  the report (stdout); only OBJ, tags <= T
 *   pdc_kv_drain_check cli CONT OUTDIR   what `pdcbb kv keys/get` must print, as files:
 *                                        OUTDIR/keys.OBJ.TAG (KEY TAB TAG lines at each tag),
 *                                        OUTDIR/records.OBJ (key, tag, value hex at MAXTAG,
 *                                        one line each, for the JSONL/CSV checks),
 *                                        OUTDIR/big.value (the 17 MiB value)
 *   pdc_kv_drain_check txcheck CONT      trans_start of the committed tag 30 and of a new one
 *   pdc_kv_drain_check readonly CONT     every modifying call must fail PDCBB_ERR_READ_ONLY
 *   pdc_kv_drain_check migrate CONT OBJ T  PDCkv_migrate(OBJ, T)
 *
 * KV objects of CONT:
 *   s (STRING keys, HASH over every daemon): NULLTAG versions, versions at 5/10/20, a deletion
 *     marker at 15, a committed transaction 30, an aborted transaction 40, a 1024-byte key, a
 *     17 MiB value at 7, values that are binary, empty, or hold commas, quotes and newlines,
 *     a key that is not UTF-8
 *   i (INT keys, RANGE over every daemon): -1000..1000 step 37, versions, deletions
 *   f (FLOAT keys, HASH on 2 shards): -inf, -2.5, 0, 1e-300, 3.25, 1e300, inf
 * Exit status: 0 on success, 1 on a failed check, 2 on usage errors.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pdc.h"
#include "prog_util.h"
#include "pdc_client_connect.h"
#include "pdc_kv.h"

static int failures;

#define BIG ((size_t)17 << 20)
static const pdc_kv_tag_t TAGS[] = {0, 1, 5, 6, 7, 10, 14, 15, 19, 20, 29, 30, 39, 40, 41,
                                    PDC_KV_MAXTAG};
#define NTAGS (sizeof(TAGS) / sizeof(TAGS[0]))

static pdcid_t pdc;
static char longkey[1025];

static uint8_t *big_value(void)
{
    uint8_t *b = malloc(BIG);
    for (size_t i = 0; b && i < BIG; i++)
        b[i] = (uint8_t)((i * 2654435761u) >> 13);
    return b;
}

static void set_s(pdcid_t kv, pdc_kv_tag_t tag, const char *key, const void *v, size_t n)
{
    pdc_kv_key_t k = PDC_KV_KEY_STR(key);
    PROG_CHECK(PDCkv_set(kv, tag, &k, v, n, NULL) == SUCCEED, "set '%.20s' at %" PRIu64, key, tag);
}

static void set_str(pdcid_t kv, pdc_kv_tag_t tag, const char *key, const char *v)
{
    set_s(kv, tag, key, v, strlen(v));
}

static int do_write(const char *cont_name)
{
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create(cont_name, cprop);
    PROG_CHECK(cont != 0, "PDCcont_create %s", cont_name);
    if (cont == 0)
        return 1;
    /* s: string keys */
    pdc_kv_info_t si = {.key_type = PDC_KV_STRING, .sharding = PDC_KV_SHARD_HASH};
    pdcid_t s = PDCkv_create(cont, "s", &si);
    PROG_CHECK(s != 0, "PDCkv_create s");
    if (s == 0)
        return 1;
    set_str(s, 0, "alpha", "alpha-null");
    set_str(s, 5, "alpha", "alpha-5");
    set_str(s, 10, "alpha", "alpha-10");
    set_str(s, 20, "alpha", "alpha-20");
    set_str(s, 0, "beta", "beta-null");
    set_str(s, 5, "beta", "beta-5");
    pdc_kv_key_t bk = PDC_KV_KEY_STR("beta");
    PROG_CHECK(PDCkv_unlink_keys(s, 15, 1, &bk, NULL) == SUCCEED, "unlink beta at 15");
    set_str(s, 10, "gamma", "g,\"quoted\"\nline two");
    set_s(s, 10, "empty", "", 0);
    const uint8_t bin[] = {0xff, 0x00, 0x01, 0xc3, 0x28, 0x80, 'x'};
    set_s(s, 5, "binary", bin, sizeof(bin));
    set_str(s, 20, "unicode", "gr\xc3\xbc\xc3\x9f dich \xe2\x82\xac");
    set_str(s, 0, "key with spaces, commas", "v");
    set_str(s, 3, "not-utf8-\xff\xfe", "a key that is not UTF-8");
    set_str(s, 5, longkey, "the long key");
    uint8_t *big = big_value();
    set_s(s, 7, "big", big, BIG);
    free(big);
    /* a committed transaction 30 and an aborted one 40 */
    PROG_CHECK(PDCkv_trans_start(s, 30) == SUCCEED, "trans_start 30");
    set_str(s, 30, "alpha", "alpha-30-tx");
    set_str(s, 30, "delta", "delta-30-tx");
    pdc_kv_key_t gk = PDC_KV_KEY_STR("gamma");
    PROG_CHECK(PDCkv_unlink_keys(s, 30, 1, &gk, NULL) == SUCCEED, "unlink gamma in 30");
    PROG_CHECK(PDCkv_trans_commit(s, 30) == SUCCEED, "commit 30");
    PROG_CHECK(PDCkv_trans_start(s, 40) == SUCCEED, "trans_start 40");
    set_str(s, 40, "alpha", "alpha-40-aborted");
    set_str(s, 40, "epsilon", "epsilon-40-aborted");
    PROG_CHECK(PDCkv_unlink_keys(s, 40, 1, &bk, NULL) == SUCCEED, "unlink beta in 40");
    PROG_CHECK(PDCkv_trans_abort(s, 40) == SUCCEED, "abort 40");
    /* NULLTAG updated in place */
    set_str(s, 0, "zeta", "zeta-first");
    set_str(s, 0, "zeta", "zeta-second");
    PROG_CHECK(PDCkv_close(s) == SUCCEED, "close s");

    /* i: int keys, range sharding */
    pdc_kv_info_t ii = {.key_type = PDC_KV_INT, .sharding = PDC_KV_SHARD_RANGE};
    pdcid_t ik = PDCkv_create(cont, "i", &ii);
    PROG_CHECK(ik != 0, "PDCkv_create i");
    if (ik == 0)
        return 1;
    for (int64_t v = -1000; v <= 1000; v += 37) {
        char val[64];
        pdc_kv_key_t k = PDC_KV_KEY_INT(v);
        snprintf(val, sizeof(val), "int %" PRId64 " at 1", v);
        PROG_CHECK(PDCkv_set(ik, 1, &k, val, strlen(val), NULL) == SUCCEED, "set int");
        if (v % 2 == 0) {
            snprintf(val, sizeof(val), "int %" PRId64 " at 20", v);
            PROG_CHECK(PDCkv_set(ik, 20, &k, val, strlen(val), NULL) == SUCCEED, "set int");
        }
        if (v % 3 == 0)
            PROG_CHECK(PDCkv_unlink_keys(ik, 14, 1, &k, NULL) == SUCCEED, "unlink int");
    }
    pdc_kv_key_t kmin = PDC_KV_KEY_INT(INT64_MIN), kmax = PDC_KV_KEY_INT(INT64_MAX);
    PROG_CHECK(PDCkv_set(ik, 6, &kmin, "min", 3, NULL) == SUCCEED, "set min");
    PROG_CHECK(PDCkv_set(ik, 6, &kmax, "max", 3, NULL) == SUCCEED, "set max");
    PROG_CHECK(PDCkv_close(ik) == SUCCEED, "close i");

    /* f: float keys on 2 shards */
    pdc_kv_info_t fi = {.key_type = PDC_KV_FLOAT, .sharding = PDC_KV_SHARD_HASH, .nshards = 2};
    if (PDCbb_nservers() < 2)
        fi.nshards = 1;
    pdcid_t fk = PDCkv_create(cont, "f", &fi);
    PROG_CHECK(fk != 0, "PDCkv_create f");
    if (fk == 0)
        return 1;
    const double fl[] = {-INFINITY, -2.5, 0.0, 1e-300, 3.25, 1e300, INFINITY};
    for (size_t n = 0; n < sizeof(fl) / sizeof(fl[0]); n++) {
        char val[64];
        pdc_kv_key_t k = PDC_KV_KEY_FLOAT(fl[n]);
        snprintf(val, sizeof(val), "float %.17g", fl[n]);
        PROG_CHECK(PDCkv_set(fk, 5 + n, &k, val, strlen(val), NULL) == SUCCEED, "set float");
    }
    pdc_kv_key_t mz = PDC_KV_KEY_FLOAT(-0.0);
    PROG_CHECK(PDCkv_set(fk, 30, &mz, "minus zero is zero", 18, NULL) == SUCCEED, "set -0.0");
    PROG_CHECK(PDCkv_close(fk) == SUCCEED, "close f");
    PDCcont_close(cont);
    return 0;
}

static void print_key(FILE *f, const pdc_kv_key_t *k)
{
    if (k->type == PDC_KV_INT)
        fprintf(f, "%" PRId64, k->i);
    else if (k->type == PDC_KV_FLOAT)
        fprintf(f, "%.17g", k->f);
    else
        fputs(k->str, f);
}

static void print_value(const void *v, uint64_t n)
{
    if (n > 64) {
        printf("len=%" PRIu64 " fnv=%016" PRIx64, n, prog_fnv1a(v, (size_t)n));
        return;
    }
    printf("hex=");
    for (uint64_t i = 0; i < n; i++)
        printf("%02x", ((const uint8_t *)v)[i]);
}

static const char *const NAMES[] = {"s", "i", "f"};

/* Probe keys of each object for get_value. */
static void probes(int obj, pdc_kv_key_t *out, int *n)
{
    *n = 0;
    if (obj == 0) {
        static const char *const ks[] = {"alpha", "beta", "gamma", "delta", "epsilon", "empty",
                                         "binary", "big", "zeta", "nope", NULL};
        for (int i = 0; ks[i]; i++)
            out[(*n)++] = PDC_KV_KEY_STR(ks[i]);
        out[(*n)++] = PDC_KV_KEY_STR(longkey);
    } else if (obj == 1) {
        const int64_t ks[] = {-1000, -963, 0, 1, 110, 961, INT64_MIN, INT64_MAX};
        for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
            out[(*n)++] = PDC_KV_KEY_INT(ks[i]);
    } else {
        const double ks[] = {-INFINITY, -2.5, -0.0, 0.0, 3.25, 7.0, INFINITY};
        for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
            out[(*n)++] = PDC_KV_KEY_FLOAT(ks[i]);
    }
}

static int do_report(const char *cont_name, const char *only, pdc_kv_tag_t upto)
{
    pdcid_t cont = PDCcont_open(cont_name, pdc);
    PROG_CHECK(cont != 0, "PDCcont_open %s", cont_name);
    if (cont == 0)
        return 1;
    uint8_t *buf = malloc(BIG + 16);
    for (int o = 0; o < 3; o++) {
        if (only && strcmp(only, NAMES[o]) != 0)
            continue;
        pdcid_t kv = PDCkv_open(cont, NAMES[o]);
        PROG_CHECK(kv != 0, "PDCkv_open %s", NAMES[o]);
        if (kv == 0)
            continue;
        pdc_kv_info_t info;
        PROG_CHECK(PDCkv_get_info(kv, &info) == SUCCEED, "get_info");
        printf("kv %s key_type %d sharding %d max_key_len %u max_value_len %" PRIu64 "\n",
               NAMES[o], (int)info.key_type, (int)info.sharding, info.max_key_len,
               info.max_value_len);
        for (size_t t = 0; t < NTAGS; t++) {
            pdc_kv_tag_t tag = TAGS[t];
            if (tag > upto)
                continue;
            uint64_t num = 0;
            PROG_CHECK(PDCkv_get_num(kv, tag, &num, NULL) == SUCCEED, "get_num");
            printf("%s tag %" PRIu64 " num %" PRIu64 "\n", NAMES[o], tag, num);
            pdc_kv_t *recs = NULL;
            uint64_t n = 0;
            PROG_CHECK(PDCkv_get_list(kv, tag, 0, UINT64_MAX, &recs, &n, NULL) == SUCCEED,
                       "get_list");
            PROG_CHECK(n == num, "get_list %" PRIu64 " records, get_num %" PRIu64, n, num);
            for (uint64_t i = 0; i < n; i++) {
                printf("  list ");
                print_key(stdout, &recs[i].key);
                printf(" tag %" PRIu64 " ", recs[i].tag);
                print_value(recs[i].value, recs[i].value_len);
                printf("\n");
            }
            PDCkv_list_free(recs);
            /* a page of keys */
            recs = NULL;
            n = 0;
            PROG_CHECK(PDCkv_list_key(kv, tag, 2, 3, &recs, &n, NULL) == SUCCEED, "list_key");
            printf("  keys[2..5):");
            for (uint64_t i = 0; i < n; i++) {
                printf(" ");
                print_key(stdout, &recs[i].key);
                printf("@%" PRIu64, recs[i].tag);
            }
            printf("\n");
            PDCkv_list_free(recs);
            pdc_kv_key_t pk[16];
            int np;
            probes(o, pk, &np);
            for (int i = 0; i < np; i++) {
                uint64_t len = BIG + 16;
                pdc_kv_tag_t found = 0;
                perr_t rc = PDCkv_get_value(kv, tag, &pk[i], buf, &len, &found, NULL);
                printf("  get ");
                print_key(stdout, &pk[i]);
                if (rc == SUCCEED) {
                    printf(" -> tag %" PRIu64 " ", found);
                    print_value(buf, len);
                } else {
                    printf(" -> %s", PDCbb_last_error_name());
                }
                printf("\n");
            }
        }
        PROG_CHECK(PDCkv_close(kv) == SUCCEED, "close");
    }
    /* errors: unknown object, key type mismatch */
    pdcid_t none = PDCkv_open(cont, "no-such-kv");
    printf("open no-such-kv: %s\n", none == 0 ? PDCbb_last_error_name() : "opened");
    free(buf);
    PDCcont_close(cont);
    return 0;
}

static int do_cli(const char *cont_name, const char *outdir)
{
    pdcid_t cont = PDCcont_open(cont_name, pdc);
    PROG_CHECK(cont != 0, "PDCcont_open %s", cont_name);
    if (cont == 0)
        return 1;
    mkdir(outdir, 0755);
    char path[4096];
    for (int o = 0; o < 3; o++) {
        pdcid_t kv = PDCkv_open(cont, NAMES[o]);
        PROG_CHECK(kv != 0, "PDCkv_open %s", NAMES[o]);
        if (kv == 0)
            continue;
        for (size_t t = 0; t < NTAGS; t++) {
            pdc_kv_t *recs = NULL;
            uint64_t n = 0;
            snprintf(path, sizeof(path), "%s/keys.%s.%s", outdir, NAMES[o],
                     TAGS[t] == PDC_KV_MAXTAG ? "max" : "");
            if (TAGS[t] != PDC_KV_MAXTAG)
                snprintf(path, sizeof(path), "%s/keys.%s.%" PRIu64, outdir, NAMES[o], TAGS[t]);
            FILE *f = fopen(path, "w");
            PROG_CHECK(PDCkv_list_key(kv, TAGS[t], 0, UINT64_MAX, &recs, &n, NULL) == SUCCEED,
                       "list_key");
            for (uint64_t i = 0; f && i < n; i++) {
                print_key(f, &recs[i].key);
                fprintf(f, "\t%" PRIu64 "\n", recs[i].tag);
            }
            if (f)
                fclose(f);
            PDCkv_list_free(recs);
        }
        pdc_kv_t *recs = NULL;
        uint64_t n = 0;
        snprintf(path, sizeof(path), "%s/records.%s", outdir, NAMES[o]);
        FILE *f = fopen(path, "w");
        PROG_CHECK(PDCkv_get_list(kv, PDC_KV_MAXTAG, 0, UINT64_MAX, &recs, &n, NULL) == SUCCEED,
                   "get_list");
        for (uint64_t i = 0; f && i < n; i++) {
            if (recs[i].key.type == PDC_KV_STRING) {
                for (const char *c = recs[i].key.str; *c; c++)
                    fprintf(f, "%02x", (uint8_t)*c);
            } else {
                print_key(f, &recs[i].key);
            }
            fprintf(f, " %" PRIu64 " ", recs[i].tag);
            for (uint64_t b = 0; b < recs[i].value_len; b++)
                fprintf(f, "%02x", ((const uint8_t *)recs[i].value)[b]);
            fprintf(f, "\n");
            if (o == 0 && recs[i].key.type == PDC_KV_STRING && strcmp(recs[i].key.str, "big") == 0) {
                char bp[4200];
                snprintf(bp, sizeof(bp), "%s/big.value", outdir);
                FILE *bf = fopen(bp, "wb");
                if (bf) {
                    fwrite(recs[i].value, 1, recs[i].value_len, bf);
                    fclose(bf);
                }
            }
        }
        if (f)
            fclose(f);
        PDCkv_list_free(recs);
        PDCkv_close(kv);
    }
    PDCcont_close(cont);
    return 0;
}

/* Transactions: a committed tag cannot be started again; a new one can (then aborted). */
static int do_txcheck(const char *cont_name)
{
    pdcid_t cont = PDCcont_open(cont_name, pdc);
    pdcid_t kv = cont ? PDCkv_open(cont, "s") : 0;
    PROG_CHECK(kv != 0, "PDCkv_open s");
    if (kv == 0)
        return 1;
    perr_t rc = PDCkv_trans_start(kv, 30);
    printf("trans_start 30: %s\n", rc == SUCCEED ? "SUCCEED" : PDCbb_last_error_name());
    rc = PDCkv_trans_start(kv, 31);
    printf("trans_start 31: %s\n", rc == SUCCEED ? "SUCCEED" : PDCbb_last_error_name());
    if (rc == SUCCEED)
        PROG_CHECK(PDCkv_trans_abort(kv, 31) == SUCCEED, "abort 31");
    PDCkv_close(kv);
    PDCcont_close(cont);
    return 0;
}

static int do_readonly(const char *cont_name)
{
    pdcid_t cont = PDCcont_open(cont_name, pdc);
    PROG_CHECK(cont != 0, "PDCcont_open %s", cont_name);
    if (cont == 0)
        return 1;
    pdcid_t kv = PDCkv_open(cont, "s");
    PROG_CHECK(kv != 0, "PDCkv_open s");
    if (kv == 0)
        return 1;
    pdc_kv_key_t k = PDC_KV_KEY_STR("alpha");
    struct {
        const char *what;
        perr_t rc;
    } calls[8];
    int n = 0;
    calls[n].what = "set";
    calls[n++].rc = PDCkv_set(kv, 50, &k, "x", 1, NULL);
    calls[n].what = "unlink_keys";
    calls[n++].rc = PDCkv_unlink_keys(kv, 50, 1, &k, NULL);
    calls[n].what = "trans_start";
    calls[n++].rc = PDCkv_trans_start(kv, 60);
    calls[n].what = "migrate";
    calls[n++].rc = PDCkv_migrate(kv, 10);
    calls[n].what = "create";
    calls[n++].rc = PDCkv_create(cont, "new", NULL) == 0 ? FAIL : SUCCEED;
    calls[n].what = "delete";
    calls[n++].rc = PDCkv_delete(kv);
    for (int i = 0; i < n; i++) {
        printf("%s: %s\n", calls[i].what, calls[i].rc == SUCCEED ? "SUCCEED"
                                                                 : PDCbb_last_error_name());
    }
    PDCcont_close(cont);
    return 0;
}

int main(int argc, char **argv)
{
    memset(longkey, 'K', 1024);
    longkey[0] = 'L';
    longkey[1024] = '\0';
    if (argc < 3) {
        fprintf(stderr, "usage: pdc_kv_drain_check write|report|cli|readonly|migrate CONT ...\n");
        return 2;
    }
    pdc = PDCinit("pdc_kv_drain_check");
    if (pdc == 0) {
        printf("PDCinit failed: %s: %s\n", PDCbb_last_error_name(), PDCbb_last_error_message());
        return 1;
    }
    int rc;
    if (strcmp(argv[1], "write") == 0) {
        rc = do_write(argv[2]);
    } else if (strcmp(argv[1], "report") == 0) {
        rc = do_report(argv[2], argc > 3 ? argv[3] : NULL,
                       argc > 4 ? strtoull(argv[4], NULL, 10) : PDC_KV_MAXTAG);
    } else if (strcmp(argv[1], "cli") == 0 && argc == 4) {
        rc = do_cli(argv[2], argv[3]);
    } else if (strcmp(argv[1], "txcheck") == 0) {
        rc = do_txcheck(argv[2]);
    } else if (strcmp(argv[1], "readonly") == 0) {
        rc = do_readonly(argv[2]);
    } else if (strcmp(argv[1], "migrate") == 0 && argc == 5) {
        pdcid_t cont = PDCcont_open(argv[2], pdc);
        pdcid_t kv = cont ? PDCkv_open(cont, argv[3]) : 0;
        PROG_CHECK(kv != 0, "open %s", argv[3]);
        perr_t r = kv ? PDCkv_migrate(kv, strtoull(argv[4], NULL, 10)) : FAIL;
        printf("migrate %s %s: %s%s%s\n", argv[3], argv[4], r == SUCCEED ? "SUCCEED" : "FAIL",
               r == SUCCEED ? "" : ": ", r == SUCCEED ? "" : PDCbb_last_error_message());
        rc = r == SUCCEED ? 0 : 1;
    } else {
        fprintf(stderr, "unknown mode '%s'\n", argv[1]);
        PDCclose(pdc);
        return 2;
    }
    PROG_CHECK(PDCclose(pdc) == SUCCEED, "PDCclose");
    return rc || failures ? 1 : 0;
}
