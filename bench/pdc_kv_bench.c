/*
 * pdc_kv_bench - the versioned key-value store (pdc_kv.h): sets, batched sets, gets and ordered
 * scans per second, next to LMDB's own rate measured on the same node-local storage in the same
 * run.
 *
 *   pdc_kv_bench [--count N] [--procs P] [--value-size B] [--batch K] [--order random|sorted]
 *                [--seed S] [--phases LIST]
 *
 * Run it inside a job:  pdcbb run --nodes 1 -- pdc_kv_bench --count 200000
 *                       pdcbb run --nodes 1 -- pdc_kv_bench --count 50000 --procs 8
 * PDCBB_BENCH_QUICK=1 makes the count tiny (2000, whatever --count says), for smoke runs.
 *
 * Records: N per process (default 200000), string keys "k<rank, 2 digits>-<i, 12 digits>" (16
 * bytes), values of B bytes (default 256, small records as in LMDB's own benchmarks), written in
 * random order of i (--order sorted: ascending), tag 1. With --procs P the program forks P client
 * processes before PDCinit; they share one KV object (rank 0 creates it, the others open it).
 * Phases, each timed from a barrier to the slowest process's end:
 *   set        PDCkv_set, one blocking call per record, into KV object "bench_set"
 *   set_async  PDCkv_set with a completion event, 64 outstanding per process, into "bench_async"
 *   set_list   PDCkv_set_list in batches of K (default 10000) into "bench_list"
 *   get        PDCkv_get_value at MAXTAG of every record of "bench_list" in random order; each
 *              value is checked
 *   scan       process 0 only: PDCkv_get_list pages of K records over all of "bench_list" in key
 *              order; the count and the order are checked
 * Then the LMDB baseline, process 0 only, in a fresh environment in $PDCBB_JOB_DIR (this node's
 * local storage, where the daemon's store lives) opened with the daemon's flags (MDB_WRITEMAP |
 * MDB_NOSYNC | MDB_NOTLS), the same records (P x N) and order:
 *   lmdb_put        one write transaction per record (what one set costs the daemon, at best)
 *   lmdb_put_batch  K records per write transaction (what one set_list message costs)
 *   lmdb_get        one read transaction per get, random order
 *   lmdb_scan       one cursor over everything in order
 * Output: a table and one line per phase:
 *   RESULT name=kv_set_list procs=P count=N daemons=D ops=P*N seconds=S ops_per_s=R
 *          lmdb_ops_per_s=L ratio=R/L
 * where L is the LMDB phase of the same kind (set, set_async: lmdb_put; set_list: lmdb_put_batch;
 * get: lmdb_get; scan: lmdb_scan). The ratio with 8 processes compares their total with LMDB's
 * one writer. Exit status: 0 after a complete, correct run; 1 on an error or a wrong answer;
 * 2 on usage errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_procs.h"
#include "pdc.h"
#include "pdc_kv.h"

#define MAX_PROCS 64 /* <= BENCH_MAX_PROCS */
#define ASYNC_WINDOW 64
#define KEY_LEN 16

static const char *prog = "pdc_kv_bench";
static const char *last_error(void)
{
    const char *m = PDCbb_last_error_message();
    return m && m[0] ? m : "(no message)";
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A permutation of 0..n-1 (identity when sorted). */
static long *order_of(long n, int sorted, uint64_t seed)
{
    long *o = malloc((size_t)n * sizeof *o);
    if (o == NULL)
        bench_die("out of memory for %ld indices", n);
    for (long i = 0; i < n; i++)
        o[i] = i;
    if (!sorted)
        for (long i = n - 1; i > 0; i--) {
            long j = (long)(splitmix(&seed) % (uint64_t)(i + 1));
            long t = o[i];
            o[i] = o[j];
            o[j] = t;
        }
    return o;
}

static void key_of(char *out, int r, long i) { snprintf(out, KEY_LEN + 1, "k%02d-%012ld", r, i); }

/* Value of record (r, i): bytes derived from both, so a wrong record is noticed. */
static void value_of(unsigned char *v, size_t len, int r, long i)
{
    uint64_t s = ((uint64_t)r << 40) ^ (uint64_t)i;
    for (size_t k = 0; k < len; k += 8) {
        uint64_t x = splitmix(&s);
        memcpy(v + k, &x, len - k < 8 ? len - k : 8);
    }
}

static int count_daemons(void)
{
    const char *servers = getenv("PDCBB_SERVER_DIRS");
    int n = 0;
    for (const char *p = servers; p && *p; p++)
        n += *p == ':';
    return n + (servers && *servers);
}

typedef struct result {
    const char *name;
    double ops;
    double seconds;
} result_t;

static pdcid_t kv_shared(pdcid_t cont, const char *name)
{
    pdcid_t kv = 0;
    if (bench_rank == 0) {
        pdc_kv_info_t info = {.key_type = PDC_KV_STRING};
        kv = PDCkv_create(cont, name, &info);
        if (kv == 0)
            bench_die("PDCkv_create(%s): %s", name, last_error());
    }
    bench_barrier();
    if (bench_rank != 0 && (kv = PDCkv_open(cont, name)) == 0)
        bench_die("PDCkv_open(%s): %s", name, last_error());
    return kv;
}

/* ------------------------------------------------------------------ LMDB baseline */

#define MDB_CHECK(call, what)                                                                     \
    do {                                                                                          \
        int rc_ = (call);                                                                         \
        if (rc_ != 0)                                                                             \
            bench_die("LMDB baseline: %s: %s", what, mdb_strerror(rc_));                                \
    } while (0)

static MDB_env *lmdb_open(const char *dir, size_t map)
{
    MDB_env *env;
    MDB_CHECK(mdb_env_create(&env), "mdb_env_create");
    MDB_CHECK(mdb_env_set_mapsize(env, map), "mdb_env_set_mapsize");
    MDB_CHECK(mdb_env_open(env, dir, MDB_WRITEMAP | MDB_NOSYNC | MDB_NOTLS, 0600), "mdb_env_open");
    return env;
}

static void rm_dir_files(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/data.mdb", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/lock.mdb", dir);
    unlink(p);
    rmdir(dir);
}

/* Puts the P x N records in the bench's order, batch records per transaction. */
static double lmdb_put(const char *dir, long n, int procs, const long *ord, size_t vsize,
                       long batch)
{
    size_t map = (size_t)procs * (size_t)n * (vsize + KEY_LEN + 64) * 3 + (64u << 20);
    if (mkdir(dir, 0700) != 0)
        bench_die("LMDB baseline: mkdir %s: %s", dir, strerror(errno));
    MDB_env *env = lmdb_open(dir, map);
    MDB_dbi dbi;
    MDB_txn *txn;
    MDB_CHECK(mdb_txn_begin(env, NULL, 0, &txn), "mdb_txn_begin");
    MDB_CHECK(mdb_dbi_open(txn, NULL, 0, &dbi), "mdb_dbi_open");
    MDB_CHECK(mdb_txn_commit(txn), "mdb_txn_commit");
    unsigned char *v = malloc(vsize ? vsize : 1);
    char k[KEY_LEN + 1];
    long in_txn = 0;
    double t0 = bench_now();
    txn = NULL;
    for (long i = 0; i < n; i++)
        for (int r = 0; r < procs; r++) {
            if (txn == NULL)
                MDB_CHECK(mdb_txn_begin(env, NULL, 0, &txn), "mdb_txn_begin");
            key_of(k, r, ord[i]);
            value_of(v, vsize, r, ord[i]);
            MDB_val mk = {KEY_LEN, k}, mv = {vsize, v};
            MDB_CHECK(mdb_put(txn, dbi, &mk, &mv, 0), "mdb_put");
            if (++in_txn == batch) {
                MDB_CHECK(mdb_txn_commit(txn), "mdb_txn_commit");
                txn = NULL;
                in_txn = 0;
            }
        }
    if (txn)
        MDB_CHECK(mdb_txn_commit(txn), "mdb_txn_commit");
    double s = bench_now() - t0;
    free(v);
    mdb_env_close(env);
    return s;
}

static void lmdb_read(const char *dir, long n, int procs, const long *ord, size_t vsize,
                      double *get_s, double *scan_s)
{
    size_t map = (size_t)procs * (size_t)n * (vsize + KEY_LEN + 64) * 3 + (64u << 20);
    MDB_env *env = lmdb_open(dir, map);
    MDB_dbi dbi;
    MDB_txn *txn;
    MDB_CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), "mdb_txn_begin");
    MDB_CHECK(mdb_dbi_open(txn, NULL, 0, &dbi), "mdb_dbi_open");
    mdb_txn_reset(txn);
    char k[KEY_LEN + 1];
    unsigned char *want = malloc(vsize ? vsize : 1), *copy = malloc(vsize ? vsize : 1);
    double t0 = bench_now();
    for (long i = 0; i < n; i++)
        for (int r = 0; r < procs; r++) {
            long j = ord[(i * 7919 + r) % n];
            MDB_CHECK(mdb_txn_renew(txn), "mdb_txn_renew");
            key_of(k, r, j);
            MDB_val mk = {KEY_LEN, k}, mv;
            MDB_CHECK(mdb_get(txn, dbi, &mk, &mv), "mdb_get");
            if (mv.mv_size != vsize)
                bench_die("LMDB baseline: record %s has %zu bytes", k, mv.mv_size);
            memcpy(copy, mv.mv_data, vsize); /* what a reply costs at least */
            mdb_txn_reset(txn);
        }
    *get_s = bench_now() - t0;
    value_of(want, vsize, 0, 0);
    MDB_CHECK(mdb_txn_renew(txn), "mdb_txn_renew");
    MDB_cursor *c;
    MDB_CHECK(mdb_cursor_open(txn, dbi, &c), "mdb_cursor_open");
    MDB_val mk, mv;
    long seen = 0;
    t0 = bench_now();
    for (int rc = mdb_cursor_get(c, &mk, &mv, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &mk, &mv, MDB_NEXT)) {
        memcpy(copy, mv.mv_data, mv.mv_size < vsize ? mv.mv_size : vsize);
        seen++;
    }
    *scan_s = bench_now() - t0;
    if (seen != n * procs)
        bench_die("LMDB baseline: the scan saw %ld records, not %ld", seen, n * procs);
    mdb_cursor_close(c);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    free(want);
    free(copy);
}

/* ------------------------------------------------------------------ pdcbb phases */

static void phase_set(pdcid_t kv, long n, const long *ord, size_t vsize)
{
    unsigned char *v = malloc(vsize ? vsize : 1);
    char k[KEY_LEN + 1];
    for (long i = 0; i < n; i++) {
        key_of(k, bench_rank, ord[i]);
        value_of(v, vsize, bench_rank, ord[i]);
        pdc_kv_key_t key = PDC_KV_KEY_STR(k);
        if (PDCkv_set(kv, 1, &key, v, vsize, NULL) != SUCCEED)
            bench_die("PDCkv_set(%s): %s", k, last_error());
    }
    free(v);
}

static void phase_set_async(pdcid_t kv, long n, const long *ord, size_t vsize)
{
    pdc_kv_event_t ev[ASYNC_WINDOW];
    memset(ev, 0, sizeof ev); /* events start zeroed (pdc_kv.h) */
    unsigned char *v = malloc((vsize ? vsize : 1) * ASYNC_WINDOW);
    char k[ASYNC_WINDOW][KEY_LEN + 1];
    pdc_kv_key_t key[ASYNC_WINDOW];
    int busy[ASYNC_WINDOW] = {0};
    for (long i = 0; i < n; i++) {
        int s = (int)(i % ASYNC_WINDOW);
        if (busy[s] && PDCkv_event_wait(&ev[s]) != SUCCEED)
            bench_die("PDCkv_set (event) of %s: %s", k[s], last_error());
        key_of(k[s], bench_rank, ord[i]);
        key[s] = PDC_KV_KEY_STR(k[s]);
        value_of(v + (size_t)s * vsize, vsize, bench_rank, ord[i]);
        if (PDCkv_set(kv, 1, &key[s], v + (size_t)s * vsize, vsize, &ev[s]) != SUCCEED)
            bench_die("PDCkv_set(%s, event): %s", k[s], last_error());
        busy[s] = 1;
    }
    for (int s = 0; s < ASYNC_WINDOW; s++)
        if (busy[s] && PDCkv_event_wait(&ev[s]) != SUCCEED)
            bench_die("PDCkv_set (event) of %s: %s", k[s], last_error());
    free(v);
}

static void phase_set_list(pdcid_t kv, long n, const long *ord, size_t vsize, long batch)
{
    pdc_kv_t *recs = calloc((size_t)batch, sizeof *recs);
    char *keys = malloc((size_t)batch * (KEY_LEN + 1));
    unsigned char *vals = malloc((size_t)batch * (vsize ? vsize : 1));
    if (!recs || !keys || !vals)
        bench_die("out of memory for a batch of %ld", batch);
    for (long i = 0; i < n; i += batch) {
        long m = n - i < batch ? n - i : batch;
        for (long j = 0; j < m; j++) {
            char *k = keys + j * (KEY_LEN + 1);
            key_of(k, bench_rank, ord[i + j]);
            value_of(vals + (size_t)j * vsize, vsize, bench_rank, ord[i + j]);
            recs[j].key = PDC_KV_KEY_STR(k);
            recs[j].value = vals + (size_t)j * vsize;
            recs[j].value_len = vsize;
        }
        if (PDCkv_set_list(kv, 1, (uint64_t)m, recs, NULL) != SUCCEED)
            bench_die("PDCkv_set_list of %ld records from %ld: %s", m, i, last_error());
    }
    free(recs);
    free(keys);
    free(vals);
}

static void phase_get(pdcid_t kv, long n, const long *ord, size_t vsize)
{
    unsigned char *v = malloc(vsize ? vsize : 1), *want = malloc(vsize ? vsize : 1);
    char k[KEY_LEN + 1];
    for (long i = 0; i < n; i++) {
        long j = ord[(i * 7919) % n];
        key_of(k, bench_rank, j);
        pdc_kv_key_t key = PDC_KV_KEY_STR(k);
        uint64_t len = vsize;
        pdc_kv_tag_t tag = 0;
        if (PDCkv_get_value(kv, PDC_KV_MAXTAG, &key, v, &len, &tag, NULL) != SUCCEED)
            bench_die("PDCkv_get_value(%s): %s", k, last_error());
        value_of(want, vsize, bench_rank, j);
        if (len != vsize || tag != 1 || memcmp(v, want, vsize) != 0)
            bench_die("PDCkv_get_value(%s): wrong answer (%llu bytes, tag %llu)", k,
                (unsigned long long)len, (unsigned long long)tag);
    }
    free(v);
    free(want);
}

/* Every record in key order: k00-000000000000 ... k<P-1>-<N-1>. */
static void phase_scan(pdcid_t kv, long n, long batch, size_t vsize)
{
    long expect = 0;
    int r = 0;
    char want[KEY_LEN + 1];
    for (uint64_t off = 0;; ) {
        pdc_kv_t *recs = NULL;
        uint64_t got = 0;
        if (PDCkv_get_list(kv, PDC_KV_MAXTAG, off, (uint64_t)batch, &recs, &got, NULL) != SUCCEED)
            bench_die("PDCkv_get_list(offset %llu): %s", (unsigned long long)off, last_error());
        for (uint64_t j = 0; j < got; j++) {
            key_of(want, r, expect);
            if (recs[j].key.type != PDC_KV_STRING || strcmp(recs[j].key.str, want) != 0 ||
                recs[j].value_len != vsize)
                bench_die("PDCkv_get_list: record %llu is '%s' (%llu bytes), expected '%s'",
                    (unsigned long long)(off + j), recs[j].key.str ? recs[j].key.str : "?",
                    (unsigned long long)recs[j].value_len, want);
            if (++expect == n) {
                expect = 0;
                r++;
            }
        }
        PDCkv_list_free(recs);
        off += got;
        if (got < (uint64_t)batch)
            break;
    }
    if (r != bench_nprocs || expect != 0)
        bench_die("PDCkv_get_list: the scan ended at process %d record %ld", r, expect);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [--count N] [--procs P] [--value-size B] [--batch K] [--order random|sorted]\n"
            "          [--seed S] [--phases LIST]\n"
            "  --count N        records per process (default 200000; PDCBB_BENCH_QUICK=1: at most 2000)\n"
            "  --procs P        fork P client processes (1..%d, default 1)\n"
            "  --value-size B   bytes per value (default 256)\n"
            "  --batch K        records per set_list call and per scan page (default 10000)\n"
            "  --order O        order of the records written: random (default) or sorted\n"
            "  --seed S         seed of the random order (default 1)\n"
            "  --phases LIST    subset of set,set_async,set_list,get,scan,lmdb (default all)\n"
            "Run inside a job: pdcbb run --nodes 1 -- %s --count 200000\n"
            "Prints a table and 'RESULT name=kv_PHASE ... ops_per_s=R lmdb_ops_per_s=L ratio=X'.\n",
            prog, MAX_PROCS, prog);
}

static int has_phase(const char *list, const char *p)
{
    size_t l = strlen(p);
    for (const char *s = list; s && *s;) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == l && strncmp(s, p, l) == 0)
            return 1;
        s = e ? e + 1 : NULL;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int quick = getenv("PDCBB_BENCH_QUICK") && strcmp(getenv("PDCBB_BENCH_QUICK"), "1") == 0;
    long n = quick ? 2000 : 200000, batch = 10000;
    size_t vsize = 256;
    int procs = 1, sorted = 0;
    uint64_t seed = 1;
    const char *phases = "set,set_async,set_list,get,scan,lmdb";
    static const struct option opts[] = {
        {"count", required_argument, NULL, 'n'},  {"procs", required_argument, NULL, 'p'},
        {"value-size", required_argument, NULL, 'v'}, {"batch", required_argument, NULL, 'b'},
        {"order", required_argument, NULL, 'o'},  {"seed", required_argument, NULL, 's'},
        {"phases", required_argument, NULL, 'P'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            n = strtol(optarg, &end, 10);
            if (*end || n < 1 || n > 100000000)
                bench_die("bad --count '%s' (1..100000000)", optarg);
            break;
        case 'p':
            procs = atoi(optarg);
            if (procs < 1 || procs > MAX_PROCS)
                bench_die("bad --procs '%s' (1..%d)", optarg, MAX_PROCS);
            break;
        case 'v':
            vsize = (size_t)strtoul(optarg, &end, 10);
            if (*end || vsize > (1u << 20))
                bench_die("bad --value-size '%s' (0..1048576)", optarg);
            break;
        case 'b':
            batch = strtol(optarg, &end, 10);
            if (*end || batch < 1 || batch > 1000000)
                bench_die("bad --batch '%s' (1..1000000)", optarg);
            break;
        case 'o':
            if (strcmp(optarg, "random") && strcmp(optarg, "sorted"))
                bench_die("bad --order '%s' (random or sorted)", optarg);
            sorted = strcmp(optarg, "sorted") == 0;
            break;
        case 's': seed = strtoull(optarg, NULL, 0); break;
        case 'P': phases = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    if (quick && n > 2000)
        n = 2000;
    const char *jobdir = getenv("PDCBB_JOB_DIR");
    if (has_phase(phases, "lmdb") && (jobdir == NULL || !*jobdir))
        bench_die("PDCBB_JOB_DIR is not set: run me inside a job (pdcbb run -- %s)", prog);

    int rc0 = bench_procs_start(prog, &argc, &argv, procs, 0);
    if (rc0 != 0)
        return rc0;
    long *ord = order_of(n, sorted, seed);

    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0)
        bench_die("PDCinit: %s", last_error());
    pdcid_t cont = 0;
    if (bench_rank == 0) {
        pdcid_t cp = PDCprop_create(PDC_CONT_CREATE, pdc);
        if ((cont = PDCcont_create("kv_bench", cp)) == 0)
            bench_die("PDCcont_create: %s", last_error());
        PDCprop_close(cp);
    }
    bench_barrier();
    if (bench_rank != 0 && (cont = PDCcont_open("kv_bench", pdc)) == 0)
        bench_die("PDCcont_open: %s", last_error());

    result_t res[8];
    int nres = 0;
    double t0, s;
    if (has_phase(phases, "set")) {
        pdcid_t kv = kv_shared(cont, "bench_set");
        bench_barrier();
        t0 = bench_now();
        phase_set(kv, n, ord, vsize);
        s = bench_max_all(bench_now() - t0);
        res[nres++] = (result_t){"set", (double)n * procs, s};
        PDCkv_close(kv);
    }
    if (has_phase(phases, "set_async")) {
        pdcid_t kv = kv_shared(cont, "bench_async");
        bench_barrier();
        t0 = bench_now();
        phase_set_async(kv, n, ord, vsize);
        s = bench_max_all(bench_now() - t0);
        res[nres++] = (result_t){"set_async", (double)n * procs, s};
        PDCkv_close(kv);
    }
    pdcid_t kvl = 0;
    if (has_phase(phases, "set_list") || has_phase(phases, "get") || has_phase(phases, "scan")) {
        kvl = kv_shared(cont, "bench_list");
        bench_barrier();
        t0 = bench_now();
        phase_set_list(kvl, n, ord, vsize, batch);
        s = bench_max_all(bench_now() - t0);
        if (has_phase(phases, "set_list"))
            res[nres++] = (result_t){"set_list", (double)n * procs, s};
        uint64_t num = 0;
        if (PDCkv_get_num(kvl, PDC_KV_MAXTAG, &num, NULL) != SUCCEED)
            bench_die("PDCkv_get_num: %s", last_error());
        if (num != (uint64_t)n * (uint64_t)procs)
            bench_die("PDCkv_get_num says %llu records, %ld were set", (unsigned long long)num,
                n * procs);
    }
    if (has_phase(phases, "get")) {
        bench_barrier();
        t0 = bench_now();
        phase_get(kvl, n, ord, vsize);
        s = bench_max_all(bench_now() - t0);
        res[nres++] = (result_t){"get", (double)n * procs, s};
    }
    if (has_phase(phases, "scan")) {
        bench_barrier();
        t0 = bench_now();
        if (bench_rank == 0)
            phase_scan(kvl, n, batch, vsize);
        s = bench_max_all(bench_now() - t0);
        res[nres++] = (result_t){"scan", (double)n * procs, s};
    }
    if (kvl)
        PDCkv_close(kvl);
    bench_barrier();

    /* The LMDB baseline runs alone, after the daemons were last asked to do anything. */
    double l_put = 0, l_batch = 0, l_get = 0, l_scan = 0;
    if (bench_rank == 0 && has_phase(phases, "lmdb")) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/kv-bench-lmdb.%d", jobdir, (int)getpid());
        l_put = (double)n * procs / lmdb_put(dir, n, procs, ord, vsize, 1);
        rm_dir_files(dir);
        l_batch = (double)n * procs / lmdb_put(dir, n, procs, ord, vsize, batch);
        double gs, ss;
        lmdb_read(dir, n, procs, ord, vsize, &gs, &ss);
        l_get = (double)n * procs / gs;
        l_scan = (double)n * procs / ss;
        rm_dir_files(dir);
    }
    bench_barrier();

    if (bench_rank == 0) {
        int daemons = count_daemons();
        printf("# pdc_kv_bench: %d process(es) x %ld records, %zu-byte values, %s order, "
               "batch %ld, %d daemon(s)\n",
               procs, n, vsize, sorted ? "sorted" : "random", batch, daemons);
        printf("%-10s %12s %10s %14s %14s %7s\n", "phase", "records", "seconds", "records/s",
               "LMDB rec/s", "ratio");
        for (int i = 0; i < nres; i++) {
            const char *nm = res[i].name;
            double l = !strcmp(nm, "set_list") ? l_batch
                       : !strcmp(nm, "get")    ? l_get
                       : !strcmp(nm, "scan")   ? l_scan
                                               : l_put;
            double r = res[i].ops / res[i].seconds;
            printf("%-10s %12.0f %10.3f %14.0f %14.0f %7.2f\n", nm, res[i].ops, res[i].seconds, r,
                   l, l > 0 ? r / l : 0);
            printf("RESULT name=kv_%s procs=%d count=%ld daemons=%d ops=%.0f seconds=%.4f "
                   "ops_per_s=%.0f lmdb_ops_per_s=%.0f ratio=%.3f\n",
                   nm, procs, n, daemons, res[i].ops, res[i].seconds, r, l, l > 0 ? r / l : 0);
        }
        if (l_put > 0)
            printf("LMDB alone: put %.0f/s, put in batches of %ld %.0f/s, get %.0f/s, scan %.0f/s\n",
                   l_put, batch, l_batch, l_get, l_scan);
    }
    PDCcont_close(cont);
    PDCclose(pdc);
    free(ord);
    return bench_procs_finish();
}
