/*
 * pdc_strided_bench - strided regions (PDCbb_region_create_strided) against the same bytes
 * moved as one contiguous box, in the same run (docs/PERFORMANCE.md, "Strided regions").
 *
 *   pdc_strided_bench [--n N] [--reps R] [--placement obj_static|region_static]
 *
 * One N x N double object (default N 4096: 128 MiB; PDCBB_BENCH_QUICK=1: N 256, 1 repetition).
 * Cases, each written then read back R times (best time kept, and the first one: the job's
 * first write is the first of "cols", into a fresh object), every read checked:
 *   cols      every other column of every row (stride 2, block 1 along the last dimension):
 *             N*N/2 elements, one 8-byte run each on the daemon;
 *   cols-box  the same number of bytes as a contiguous box (the first N/2 rows);
 *   rows      every 4th row (stride 4 along the first dimension): N/4 runs of a row;
 *   rows-box  the same bytes contiguous (the first N/4 rows);
 *   cols-bbox the columns read the way a client would without strided regions: the whole
 *             N x N box read, the columns gathered in the client (twice the bytes).
 * Prints one line per case: bytes, best write and read seconds and MB/s, then the first
 * repetition's write and read MB/s. Exits 1 on a wrong byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pdc.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static pdcid_t obj;

/* One transfer of remote region rr with a packed buffer of n doubles; seconds. */
static double xfer(double *buf, uint64_t n, pdc_access_t acc, pdcid_t rr)
{
    uint64_t zero = 0;
    pdcid_t lr = PDCregion_create(1, &zero, &n);
    double t0 = now();
    pdcid_t t = PDCregion_transfer_create(buf, acc, obj, lr, rr);
    if (t == 0 || PDCregion_transfer_start(t) != SUCCEED || PDCregion_transfer_wait(t) != SUCCEED) {
        fprintf(stderr, "pdc_strided_bench: transfer failed: %s\n", PDCbb_last_error_message());
        exit(1);
    }
    double dt = now() - t0;
    PDCregion_transfer_close(t);
    PDCregion_close(lr);
    return dt;
}

static double mbps(uint64_t bytes, double s)
{
    return s > 0 ? (double)bytes / s / 1e6 : 0.0;
}

/* Best of the repetitions (w, r), then the first one (fw, fr) of the case. */
static void report(const char *name, uint64_t bytes, double w, double r, double fw, double fr)
{
    printf("%-10s %10llu bytes  write %8.4f s %9.1f MB/s  read %8.4f s %9.1f MB/s"
           "  first: write %9.1f MB/s  read %9.1f MB/s\n",
           name, (unsigned long long)bytes, w, mbps(bytes, w), r, mbps(bytes, r), mbps(bytes, fw),
           mbps(bytes, fr));
}

static void check(const double *got, const double *want, uint64_t n, const char *name)
{
    if (memcmp(got, want, n * sizeof(double)) != 0) {
        fprintf(stderr, "pdc_strided_bench: %s: read back differs\n", name);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int quick = getenv("PDCBB_BENCH_QUICK") && strcmp(getenv("PDCBB_BENCH_QUICK"), "1") == 0;
    uint64_t N = quick ? 256 : 4096;
    int reps = quick ? 1 : 3;
    pdc_region_partition_t pl = PDC_OBJ_STATIC;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--n") == 0 && !quick)
            N = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--reps") == 0 && !quick)
            reps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--placement") == 0)
            pl = strcmp(argv[i + 1], "region_static") == 0 ? PDC_REGION_STATIC : PDC_OBJ_STATIC;
        else {
            fprintf(stderr, "usage: pdc_strided_bench [--n N] [--reps R] "
                            "[--placement obj_static|region_static]\n");
            return 2;
        }
    }
    if (N < 8 || N % 8 != 0 || reps < 1) {
        fprintf(stderr, "pdc_strided_bench: --n must be a multiple of 8, --reps at least 1\n");
        return 2;
    }
    pdcid_t pdc = PDCinit("pdc");
    char cname[64];
    snprintf(cname, sizeof(cname), "strided-bench-%d", (int)getpid());
    pdcid_t cont = PDCcont_create(cname, PDCprop_create(PDC_CONT_CREATE, pdc));
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t dims[2] = {N, N};
    PDCprop_set_obj_type(prop, PDC_DOUBLE);
    PDCprop_set_obj_dims(prop, 2, dims);
    PDCprop_set_obj_transfer_region_type(prop, pl);
    char oname[64];
    snprintf(oname, sizeof(oname), "strided-bench-grid-%d", (int)getpid());
    obj = PDCobj_create(cont, oname, prop);
    if (obj == 0) {
        fprintf(stderr, "pdc_strided_bench: %s\n", PDCbb_last_error_message());
        return 1;
    }
    uint64_t half = N * N / 2, quarter = N * N / 4;
    double *w = malloc(N * N * sizeof(double)), *r = malloc(N * N * sizeof(double));
    for (uint64_t i = 0; i < N * N; i++)
        w[i] = (double)i;
    printf("object %llu x %llu doubles, %s, best of %d\n", (unsigned long long)N,
           (unsigned long long)N, pl == PDC_OBJ_STATIC ? "obj_static" : "region_static", reps);
    printf("first: each case's first transfer in this job (the first write of \"cols\" is the "
           "job's first: a fresh object from a plain malloc'd buffer)\n");

    uint64_t s0[2] = {0, 0}, st_c[2] = {1, 2}, ct_c[2] = {N, N / 2}, one[2] = {1, 1};
    uint64_t st_r[2] = {4, N}, ct_r[2] = {N / 4, 1}, bk_r[2] = {1, N};
    uint64_t box_c[2] = {N / 2, N}, box_r[2] = {N / 4, N};
    pdcid_t cols = PDCbb_region_create_strided(2, s0, st_c, ct_c, one);
    pdcid_t rows = PDCbb_region_create_strided(2, s0, st_r, ct_r, bk_r);
    pdcid_t colsbox = PDCregion_create(2, s0, box_c), rowsbox = PDCregion_create(2, s0, box_r);
    pdcid_t whole = PDCregion_create(2, s0, dims);
    struct {
        const char *name;
        pdcid_t rr;
        uint64_t n;
    } cs[] = {{"cols", cols, half}, {"cols-box", colsbox, half}, {"rows", rows, quarter},
              {"rows-box", rowsbox, quarter}};
    for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
        double bw = 1e30, br = 1e30, fw = 0, fr = 0;
        for (int k = 0; k < reps; k++) {
            double t = xfer(w, cs[c].n, PDC_WRITE, cs[c].rr);
            bw = t < bw ? t : bw;
            fw = k == 0 ? t : fw;
            memset(r, 0, cs[c].n * sizeof(double));
            t = xfer(r, cs[c].n, PDC_READ, cs[c].rr);
            br = t < br ? t : br;
            fr = k == 0 ? t : fr;
            check(r, w, cs[c].n, cs[c].name);
        }
        report(cs[c].name, cs[c].n * sizeof(double), bw, br, fw, fr);
    }
    /* The columns without strided regions: the whole box, gathered in the client. */
    xfer(w, half, PDC_WRITE, cols);
    double best = 1e30, first = 0;
    double *g = malloc(half * sizeof(double));
    for (int k = 0; k < reps; k++) {
        double t0 = now();
        xfer(r, N * N, PDC_READ, whole);
        for (uint64_t i = 0; i < half; i++)
            g[i] = r[(i / (N / 2)) * N + (i % (N / 2)) * 2];
        double t = now() - t0;
        best = t < best ? t : best;
        first = k == 0 ? t : first;
        check(g, w, half, "cols-bbox");
    }
    report("cols-bbox", half * sizeof(double), 0, best, 0, first);
    PDCregion_close(cols);
    PDCregion_close(rows);
    PDCregion_close(colsbox);
    PDCregion_close(rowsbox);
    PDCregion_close(whole);
    PDCobj_close(obj);
    PDCcont_close(cont);
    PDCclose(pdc);
    free(w);
    free(r);
    free(g);
    return 0;
}
