/*
 * pdc_tag_bench - tag search: insert rate and query latency per kind of match.
 *
 *   pdc_tag_bench [--count N] [--queries Q] [--seed S] [--scan] [--tags-only]
 *
 * Run it inside a job:  pdcbb run --nodes 2 -- pdc_tag_bench --count 1000000
 * PDCBB_BENCH_QUICK=1 makes the defaults tiny (N 2000, Q 10), for smoke runs.
 *
 * Object i (N objects, default 1000000, in one container, spread over the job's daemons by
 * name) gets the string tag  k<i mod 1000, 3 digits> = "f<i, 7 digits>_r<i mod 97, 2 digits>"
 * (PDCobj_put_tag) and the same pair as a DART reference to its id
 * (PDC_Client_insert_obj_ref_into_dart), as PDC applications do. Phases, one call at a time:
 *   create      PDCobj_create of the N objects
 *   tag_put     PDCobj_put_tag: the tag and its index entries
 *   tag_first_search  one PDC_Client_query_kvtag right after the puts (value exact): what a
 *               search pays for tag index work the puts left to do (docs/INTERNALS.md)
 *   dart_insert PDC_Client_insert_obj_ref_into_dart
 * then Q queries of each kind through PDC_Client_query_kvtag ("kvtag") and
 * PDC_Client_search_obj_ref_through_dart ("dart"), for a random object i each time:
 *   value_exact  k*="f<i>_r<..>"        1 match
 *   value_prefix k*="f<i/10, 6 digits>*"  10 matches
 *   value_suffix k*="*<i mod 10^5>_r<..>"  about 1
 *   value_infix  k*="*<i mod 10^5>_*"      N/10^5
 *   name_exact   k<i mod 1000>="f*"        N/1000
 *   name_prefix  k<i mod 1000 / 10>*="f*"  N/100
 *   name_suffix  *<i mod 100, 2 digits>="f*"  N/100
 *   name_infix   *<i mod 100>*="f*"       about N/50
 * Each answer's count is checked against the count the formula gives (exact where it is known).
 * --tags-only skips the DART phase and queries (tag put figures in less time).
 * --scan adds the kind "all" (k*="f*": every object), whose cost is that of reading every
 * index entry of both fields and checking every record: what a search without an index (or an
 * infix search without the suffix entries, PDC's default DART mode) pays.
 * Output: one line per phase and kind:
 *   RESULT name=tag_put count=N daemons=D ops=N seconds=S ops_per_s=R
 *   RESULT name=kvtag_value_exact count=N daemons=D queries=Q hits_avg=H median_ms=M p99_ms=P
 * Exit status: 0 after a complete run, 1 on an error or a wrong count, 2 on usage errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pdc.h"
#include "pdc_client_connect.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng = 42;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fail(const char *what, long i)
{
    fprintf(stderr, "pdc_tag_bench: %s (object %ld) failed: %s: %s\n", what, i,
            PDCbb_last_error_name(), PDCbb_last_error_message());
    exit(1);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void tag_value(char *out, size_t len, long i)
{
    snprintf(out, len, "f%07ld_r%02ld", i, i % 97);
}

/* Expected matches of kind k for object i among N objects (-1: not known exactly). */
static long expected(int k, long i, long n)
{
    long c = 0;
    switch (k) {
    case 0: return 1;
    case 1: /* f<i/10>* */
        for (long j = (i / 10) * 10; j < (i / 10) * 10 + 10; j++)
            c += j < n;
        return c;
    case 2: /* *<i mod 10^5>_r<i mod 97> */
        for (long j = i % 100000; j < n; j += 100000)
            c += j % 97 == i % 97;
        return c;
    case 3: /* *<i mod 10^5>_* : '_' follows the last 5 digits only */
        for (long j = i % 100000; j < n; j += 100000)
            c++;
        return c;
    case 4: return n / 1000 + (i % 1000 < n % 1000);
    case 8: return n;
    case 5: /* k<i mod 1000 / 10>* : names k<d><d>x */
        for (long j = 0; j < 1000 && j < n; j++)
            if (j / 10 == (i % 1000) / 10)
                c += n / 1000 + (j < n % 1000);
        return c;
    default: return -1;
    }
}

/* Tag every object i with k<i%1000>=tag_value(i): as an object tag (PDCobj_put_tag) or, with
 * dart, as a DART reference to its metadata id meta[i]. */
static void tag_all(const pdcid_t *oid, const uint64_t *meta, long n, int dart)
{
    char key[32], val[64];
    for (long i = 0; i < n; i++) {
        snprintf(key, sizeof key, "k%03ld", i % 1000);
        tag_value(val, sizeof val, i);
        if (dart) {
            if (PDC_Client_insert_obj_ref_into_dart(DART_HASH, key, val, REF_PRIMARY_ID,
                                                    meta[i]) != SUCCEED)
                fail("PDC_Client_insert_obj_ref_into_dart", i);
        } else if (PDCobj_put_tag(oid[i], key, val, PDC_STRING, strlen(val) + 1) != SUCCEED) {
            fail("PDCobj_put_tag", i);
        }
    }
}

/* The RESULT line of a phase of n operations that took seconds. */
static void result(const char *name, long n, int daemons, double seconds)
{
    printf("RESULT name=%s count=%ld daemons=%d ops=%ld seconds=%.3f ops_per_s=%.0f\n", name, n,
           daemons, n, seconds, n / seconds);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int quick = getenv("PDCBB_BENCH_QUICK") && strcmp(getenv("PDCBB_BENCH_QUICK"), "1") == 0;
    long n = quick ? 2000 : 1000000;
    int nq = quick ? 10 : 200, scan = 0, tags_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--count") && i + 1 < argc)
            n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--queries") && i + 1 < argc)
            nq = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rng = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--scan"))
            scan = 1;
        else if (!strcmp(argv[i], "--tags-only"))
            tags_only = 1;
        else {
            fprintf(stderr,
                    "usage: %s [--count N] [--queries Q] [--seed S] [--scan] [--tags-only]\n",
                    argv[0]);
            return 2;
        }
    }
    if (n < 1 || n > 10000000 || nq < 1) {
        fprintf(stderr, "pdc_tag_bench: --count must be 1..10000000 and --queries positive\n");
        return 2;
    }
    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0)
        fail("PDCinit", -1);
    int daemons = 0;
    const char *servers = getenv("PDCBB_SERVER_DIRS");
    for (const char *p = servers; p && *p; p++)
        daemons += *p == ':';
    daemons += servers && *servers;
    char cname[64];
    snprintf(cname, sizeof cname, "tagbench.%ld.%d", (long)time(NULL), (int)(rnd() % 100000));
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create(cname, cprop);
    pdcid_t oprop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    if (cont == 0 || oprop == 0)
        fail("PDCcont_create", -1);
    uint64_t *meta = malloc((size_t)n * sizeof(uint64_t));
    pdcid_t *oid = malloc((size_t)n * sizeof(pdcid_t));
    if (meta == NULL || oid == NULL)
        fail("malloc", -1);

    char name[64];
    double t0 = now();
    for (long i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s.o%ld", cname, i);
        if ((oid[i] = PDCobj_create(cont, name, oprop)) == 0)
            fail("PDCobj_create", i);
        struct pdc_obj_info *info = PDCobj_get_info(oid[i]);
        if (info == NULL)
            fail("PDCobj_get_info", i);
        meta[i] = info->meta_id;
    }
    double t1 = now();
    result("create", n, daemons, t1 - t0);
    tag_all(oid, meta, n, 0);
    double t2 = now();
    result("tag_put", n, daemons, t2 - t1);
    {
        char vp[64];
        int nres = 0;
        uint64_t *ids = NULL;
        tag_value(vp, sizeof vp, n - 1);
        pdc_kvtag_t kv = {
            .name = "k*", .type = PDC_STRING, .value = vp, .size = (uint32_t)strlen(vp) + 1};
        double s = now();
        if (PDC_Client_query_kvtag(&kv, &nres, &ids) != SUCCEED || nres != 1)
            fail("first PDC_Client_query_kvtag", n - 1);
        printf("RESULT name=tag_first_search count=%ld daemons=%d ms=%.3f\n", n, daemons,
               (now() - s) * 1e3);
        free(ids);
    }
    double t3 = now();
    if (!tags_only) {
        t2 = now();
        tag_all(oid, meta, n, 1);
        t3 = now();
        result("dart_insert", n, daemons, t3 - t2);
    }
    for (long i = 0; i < n; i++)
        PDCobj_close(oid[i]);

    static const char *const kinds[] = {"value_exact", "value_prefix", "value_suffix",
                                        "value_infix", "name_exact",   "name_prefix",
                                        "name_suffix", "name_infix",   "all"};
    double *lat = malloc((size_t)nq * sizeof(double));
    for (int dart = 0; dart < 2 - tags_only; dart++) {
        for (int k = 0; k < 8 + scan; k++) {
            double hits = 0;
            for (int q = 0; q < nq; q++) {
                long i = (long)(rnd() % (uint64_t)n);
                char np[64], vp[64], query[160];
                snprintf(np, sizeof np, "k*");
                snprintf(vp, sizeof vp, "f*");
                switch (k) {
                case 0: tag_value(vp, sizeof vp, i); break;
                case 1: snprintf(vp, sizeof vp, "f%06ld*", i / 10); break;
                case 2: snprintf(vp, sizeof vp, "*%05ld_r%02ld", i % 100000, i % 97); break;
                case 3: snprintf(vp, sizeof vp, "*%05ld_*", i % 100000); break;
                case 4: snprintf(np, sizeof np, "k%03ld", i % 1000); break;
                case 5: snprintf(np, sizeof np, "k%02ld*", (i % 1000) / 10); break;
                case 6: snprintf(np, sizeof np, "*%02ld", i % 100); break;
                case 7: snprintf(np, sizeof np, "*%02ld*", i % 100); break;
                default: break; /* all: k*="f*" */
                }
                int nres = 0;
                uint64_t *ids = NULL;
                double s = now();
                perr_t rc;
                if (dart) {
                    snprintf(query, sizeof query, "%s=%s", np, vp);
                    rc = PDC_Client_search_obj_ref_through_dart(DART_HASH, query, REF_PRIMARY_ID,
                                                                &nres, &ids);
                } else {
                    pdc_kvtag_t kv = {.name = np, .type = PDC_STRING, .value = vp,
                                      .size = (uint32_t)strlen(vp) + 1};
                    rc = PDC_Client_query_kvtag(&kv, &nres, &ids);
                }
                lat[q] = now() - s;
                if (rc != SUCCEED)
                    fail(kinds[k], i);
                long want = expected(k, i, n);
                if ((want >= 0 && nres != want) || nres < 1) {
                    fprintf(stderr, "pdc_tag_bench: %s %s for object %ld: %d matches, expected %ld\n",
                            dart ? "dart" : "kvtag", kinds[k], i, nres, want);
                    return 1;
                }
                hits += nres;
                free(ids);
            }
            qsort(lat, (size_t)nq, sizeof(double), cmp_d);
            printf("RESULT name=%s_%s count=%ld daemons=%d queries=%d hits_avg=%.1f median_ms=%.3f "
                   "p99_ms=%.3f\n",
                   dart ? "dart" : "kvtag", kinds[k], n, daemons, nq, hits / nq,
                   lat[nq / 2] * 1e3, lat[(nq * 99) / 100] * 1e3);
            fflush(stdout);
        }
    }
    free(lat);
    free(meta);
    free(oid);
    PDCclose(pdc);
    return 0;
}
