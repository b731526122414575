/*
 * pdc_query_bench - data queries evaluated by the daemons against reading everything and
 * filtering in the client (docs/PERFORMANCE.md "Queries").
 *
 *   pdcbb run --nodes N -- pdc_query_bench [--bytes SIZE] [--placement obj_static|region_static]
 *
 * Writes two float objects of SIZE bytes each (default 1 GiB; PDCBB_BENCH_QUICK=1 in the
 * environment: 8 MiB): "random" holds uniform values in [0, 1), "sorted" the same values in
 * increasing order. For selectivities 0.1% and 10% (the predicate x < s) it times
 *   query-count   PDCquery_get_nhits (only the count travels),
 *   query-sel     PDCquery_get_selection (the hits' coordinates travel),
 *   read+filter   reading the whole object with region transfers (64 MiB each) and counting
 *                 in the client,
 * the first query of an object "cold" (block statistics not yet known: every block is read
 * and its min/max remembered), the others "warm"; it prints the throughput over the object's
 * bytes, the ratio read+filter / query, and the daemons' blocks scanned and skipped
 * (PDCbb_query_last_stats). On "sorted" a query skips the blocks that cannot match.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pdc.h"

#define CHUNK (64u << 20)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (uint64_t)v;
}

static int xfer(pdcid_t obj, pdc_access_t acc, void *buf, uint64_t off, uint64_t n)
{
    uint64_t zero = 0;
    pdcid_t l = PDCregion_create(1, &zero, &n), r = PDCregion_create(1, &off, &n);
    pdcid_t x = PDCregion_transfer_create(buf, acc, obj, l, r);
    int ok = x && PDCregion_transfer_start(x) == SUCCEED && PDCregion_transfer_wait(x) == SUCCEED;
    if (x)
        PDCregion_transfer_close(x);
    PDCregion_close(l);
    PDCregion_close(r);
    if (!ok)
        fprintf(stderr, "transfer failed: %s\n", PDCbb_last_error_message());
    return ok;
}

static uint64_t rng_state = 42;
static double rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

static void report(const char *obj, double sel, const char *what, const char *when, double secs,
                   uint64_t bytes, uint64_t hits, double base)
{
    uint64_t sc = 0, sk = 0, mv = 0;
    PDCbb_query_last_stats(&sc, &sk, &mv);
    printf("%-7s sel=%-5g%% %-12s %-5s %8.3f s %9.1f MiB/s hits=%-10" PRIu64, obj, sel * 100, what,
           when, secs, (double)bytes / secs / (1 << 20), hits);
    if (base > 0)
        printf(" vs-read+filter=%.1fx blocks scanned=%" PRIu64 " skipped=%" PRIu64, base / secs,
               sc, sk);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    uint64_t bytes = 1ull << 30;
    pdc_region_partition_t part = PDC_OBJ_STATIC;
    const char *q = getenv("PDCBB_BENCH_QUICK");
    if (q && strcmp(q, "1") == 0)
        bytes = 8u << 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            bytes = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "--placement") && i + 1 < argc)
            part = !strcmp(argv[++i], "region_static") ? PDC_REGION_STATIC : PDC_OBJ_STATIC;
        else {
            fprintf(stderr, "usage: %s [--bytes SIZE] [--placement obj_static|region_static]\n",
                    argv[0]);
            return 2;
        }
    }
    uint64_t n = bytes / sizeof(float);
    if (n < 1024) {
        fprintf(stderr, "--bytes: at least 4 KiB\n");
        return 2;
    }
    bytes = n * sizeof(float);
    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0) {
        fprintf(stderr, "PDCinit: %s\n", PDCbb_last_error_message());
        return 1;
    }
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create("qbench", cprop);
    printf("query bench: %d daemons, 2 float objects of %" PRIu64 " MiB, placement %s\n",
           PDCbb_nservers(), bytes >> 20, part == PDC_OBJ_STATIC ? "obj_static" : "region_static");
    float *buf = malloc(CHUNK);
    if (cont == 0 || buf == NULL)
        return 1;
    const char *names[2] = {"random", "sorted"};
    pdcid_t objs[2];
    for (int k = 0; k < 2; k++) {
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        PDCprop_set_obj_type(prop, PDC_FLOAT);
        PDCprop_set_obj_dims(prop, 1, &n);
        PDCprop_set_obj_transfer_region_type(prop, part);
        objs[k] = PDCobj_create(cont, names[k], prop);
        PDCprop_close(prop);
        if (objs[k] == 0) {
            fprintf(stderr, "PDCobj_create: %s\n", PDCbb_last_error_message());
            return 1;
        }
        rng_state = 42;
        double t0 = now();
        uint64_t per = CHUNK / sizeof(float);
        for (uint64_t off = 0; off < n; off += per) {
            uint64_t m = n - off < per ? n - off : per;
            for (uint64_t i = 0; i < m; i++)
                /* sorted: the same distribution, increasing (the quantile of the position) */
                buf[i] = k == 0 ? (float)rnd() : (float)((double)(off + i) / (double)n);
            if (!xfer(objs[k], PDC_WRITE, buf, off, m))
                return 1;
        }
        printf("%-7s written in %.3f s\n", names[k], now() - t0);
    }
    const double sels[2] = {0.001, 0.1};
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < 2; s++) {
            float v = (float)sels[s];
            /* The baseline: read everything, filter here. */
            double t0 = now();
            uint64_t per = CHUNK / sizeof(float), cnt = 0;
            for (uint64_t off = 0; off < n; off += per) {
                uint64_t m = n - off < per ? n - off : per;
                if (!xfer(objs[k], PDC_READ, buf, off, m))
                    return 1;
                for (uint64_t i = 0; i < m; i++)
                    cnt += buf[i] < v;
            }
            double base = now() - t0;
            report(names[k], sels[s], "read+filter", "", base, bytes, cnt, 0);
            pdc_query_t *qq = PDCquery_create(objs[k], PDC_LT, PDC_FLOAT, &v);
            /* The first query of an object finds no block statistics (cold): it reads every
             * block and remembers its min/max; the later ones (warm) use them. */
            for (int rep = 0; rep < 2; rep++) {
                uint64_t nh = 0;
                const char *when = s == 0 && rep == 0 ? "cold" : "warm";
                t0 = now();
                if (PDCquery_get_nhits(qq, &nh) != SUCCEED) {
                    fprintf(stderr, "PDCquery_get_nhits: %s\n", PDCbb_last_error_message());
                    return 1;
                }
                report(names[k], sels[s], "query-count", when, now() - t0, bytes, nh, base);
                if (nh != cnt) {
                    fprintf(stderr, "MISMATCH: query found %" PRIu64 ", the client %" PRIu64 "\n",
                            nh, cnt);
                    return 1;
                }
            }
            pdc_selection_t sel;
            memset(&sel, 0, sizeof(sel));
            t0 = now();
            if (PDCquery_get_selection(qq, &sel) != SUCCEED) {
                fprintf(stderr, "PDCquery_get_selection: %s\n", PDCbb_last_error_message());
                return 1;
            }
            report(names[k], sels[s], "query-sel", "warm", now() - t0, bytes, sel.nhits, base);
            if (sel.nhits != cnt) {
                fprintf(stderr, "MISMATCH: selection of %" PRIu64 ", the client %" PRIu64 "\n",
                        sel.nhits, cnt);
                return 1;
            }
            PDCselection_free(&sel);
            PDCquery_free_all(qq);
        }
    free(buf);
    for (int k = 0; k < 2; k++)
        PDCobj_close(objs[k]);
    PDCcont_close(cont);
    PDCprop_close(cprop);
    PDCclose(pdc);
    printf("OK\n");
    return 0;
}
