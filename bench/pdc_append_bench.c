/*
 * pdc_append_bench.c - PDCbb_obj_append against the other ways to move the same bytes, in one
 * run (docs/PERFORMANCE.md, "Append"). Run inside a job of 2 daemons or more:
 *
 *   pdcbb run --nodes 2 -- build/bench/pdc_append_bench [--mib N] [--reps R]
 *
 * src (int64 [N*16 x 8192], OBJ_STATIC) and dst (int64 [UNLIMITED x 8192], OBJ_STATIC) have
 * their homes, so all their data, on different daemons (names picked by their home). Each
 * repetition times, best of R:
 *   append     PDCbb_obj_append(dst, src): the daemons move the rows;
 *   via client the same rows read into this process and written at dst's end (what a program
 *              does without append), 64 MiB at a time;
 *   cp         cp of a file of the same size in $TMPDIR (the job directory's filesystem).
 * and prints the MiB/s of each and its ratio to cp, for the best repetition and for the first
 * (the job's first append, into a fresh object). The last append is checked row by row.
 * PDCBB_BENCH_QUICK=1: 4 MiB, 1 repetition.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pdc.h"
#include "pdcbb_proto.h"

#define COLS 8192
#define ROW_BYTES (COLS * 8)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int xfer(pdcid_t obj, uint64_t r0, uint64_t n, void *buf, pdc_access_t acc)
{
    uint64_t loff[2] = {0, 0}, roff[2] = {r0, 0}, size[2] = {n, COLS};
    pdcid_t l = PDCregion_create(2, loff, size), r = PDCregion_create(2, roff, size);
    pdcid_t req = PDCregion_transfer_create(buf, acc, obj, l, r);
    int ok = req && PDCregion_transfer_start(req) == SUCCEED &&
             PDCregion_transfer_wait(req) == SUCCEED;
    if (req)
        PDCregion_transfer_close(req);
    PDCregion_close(l);
    PDCregion_close(r);
    return ok;
}

static pdcid_t make(pdcid_t pdc, pdcid_t cont, const char *name, uint64_t rows)
{
    uint64_t dims[2] = {rows, COLS};
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    PDCprop_set_obj_type(prop, PDC_INT64);
    PDCprop_set_obj_dims(prop, 2, dims);
    PDCprop_set_obj_transfer_region_type(prop, PDC_OBJ_STATIC);
    pdcid_t o = PDCobj_create(cont, name, prop);
    PDCprop_close(prop);
    return o;
}

static int die(const char *what)
{
    fprintf(stderr, "pdc_append_bench: %s: %s\n", what, PDCbb_last_error_message());
    return 1;
}

int main(int argc, char **argv)
{
    uint64_t mib = 256;
    int reps = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mib") == 0)
            mib = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]);
    }
    const char *quick = getenv("PDCBB_BENCH_QUICK");
    if (quick && strcmp(quick, "1") == 0) {
        mib = 4;
        reps = 1;
    }
    if (mib == 0 || reps < 1) {
        fprintf(stderr, "usage: pdc_append_bench [--mib N] [--reps R]\n");
        return 2;
    }
    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0)
        return die("PDCinit");
    unsigned ns = (unsigned)PDCbb_nservers();
    if (ns < 2) {
        fprintf(stderr, "pdc_append_bench: needs 2 daemons or more (pdcbb run --nodes 2)\n");
        return 2;
    }
    /* Names whose homes differ: the copy crosses daemons. */
    char sname[64], dname[64];
    snprintf(sname, sizeof(sname), "appbench-src");
    unsigned shome = pdcbb_home_server(sname, ns);
    for (int k = 0;; k++) {
        snprintf(dname, sizeof(dname), "appbench-dst%d", k);
        if (pdcbb_home_server(dname, ns) != shome)
            break;
    }
    pdcid_t cont = PDCcont_create("appbench", PDCprop_create(PDC_CONT_CREATE, pdc));
    uint64_t rows = mib * (1 << 20) / ROW_BYTES, chunk = (64u << 20) / ROW_BYTES;
    pdcid_t src = make(pdc, cont, sname, rows);
    pdcid_t dst = make(pdc, cont, dname, PDC_SIZE_UNLIMITED);
    if (cont == 0 || src == 0 || dst == 0)
        return die("create");
    int64_t *buf = malloc(chunk * ROW_BYTES);
    for (uint64_t r = 0; r < rows; r += chunk) {
        uint64_t n = rows - r < chunk ? rows - r : chunk;
        for (uint64_t i = 0; i < n * COLS; i++)
            buf[i] = (int64_t)((r + i / COLS) * COLS + i % COLS);
        if (!xfer(src, r, n, buf, PDC_WRITE))
            return die("write src");
    }
    double best_app = 1e30, best_cli = 1e30, best_cp = 1e30, first_app = 0, first_cli = 0,
           first_cp = 0;
    uint64_t start = 0;
    for (int rep = 0; rep < reps; rep++) {
        uint64_t dims[2];
        PDCbb_obj_get_extent(dst, dims);
        start = dims[0];
        double t = now();
        if (PDCbb_obj_append(dst, src) != SUCCEED)
            return die("PDCbb_obj_append");
        t = now() - t;
        best_app = t < best_app ? t : best_app;
        first_app = rep == 0 ? t : first_app;
        /* The same through this process. */
        t = now();
        PDCbb_obj_get_extent(dst, dims);
        for (uint64_t r = 0; r < rows; r += chunk) {
            uint64_t n = rows - r < chunk ? rows - r : chunk;
            if (!xfer(src, r, n, buf, PDC_READ) || !xfer(dst, dims[0] + r, n, buf, PDC_WRITE))
                return die("copy through the client");
        }
        t = now() - t;
        best_cli = t < best_cli ? t : best_cli;
        first_cli = rep == 0 ? t : first_cli;
        /* cp of as many bytes. */
        char cmd[1024];
        const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(cmd, sizeof(cmd),
                 "head -c %" PRIu64 " /dev/zero > '%s/appbench.a' && sync '%s/appbench.a'",
                 mib << 20, tmp, tmp);
        if (system(cmd) != 0)
            return die("make the cp file");
        snprintf(cmd, sizeof(cmd), "cp '%s/appbench.a' '%s/appbench.b'", tmp, tmp);
        t = now();
        if (system(cmd) != 0)
            return die("cp");
        t = now() - t;
        best_cp = t < best_cp ? t : best_cp;
        first_cp = rep == 0 ? t : first_cp;
        snprintf(cmd, sizeof(cmd), "rm -f '%s/appbench.a' '%s/appbench.b'", tmp, tmp);
        if (system(cmd) != 0)
            return die("rm");
    }
    /* The last append's rows (those of the last repetition's append, at start). */
    int bad = 0;
    for (uint64_t r = 0; r < rows && !bad; r += chunk) {
        uint64_t n = rows - r < chunk ? rows - r : chunk;
        if (!xfer(dst, start + r, n, buf, PDC_READ))
            return die("read dst");
        for (uint64_t i = 0; i < n * COLS; i++)
            if (buf[i] != (int64_t)((r + i / COLS) * COLS + i % COLS)) {
                fprintf(stderr, "pdc_append_bench: dst row %" PRIu64 " is wrong\n",
                        start + r + i / COLS);
                bad = 1;
                break;
            }
    }
    double mb = (double)mib;
    printf("append of %" PRIu64 " MiB across %u daemons, best of %d, then the first repetition "
           "(the job's first append):\n",
           mib, ns, reps);
    printf("  %-12s %8.3f s %9.1f MiB/s  %5.2fx cp   first %8.3f s %9.1f MiB/s  %5.2fx cp\n",
           "append", best_app, mb / best_app, best_cp / best_app, first_app, mb / first_app,
           first_cp / first_app);
    printf("  %-12s %8.3f s %9.1f MiB/s  %5.2fx cp   first %8.3f s %9.1f MiB/s  %5.2fx cp\n",
           "via client", best_cli, mb / best_cli, best_cp / best_cli, first_cli, mb / first_cli,
           first_cp / first_cli);
    printf("  %-12s %8.3f s %9.1f MiB/s  %5.2fx cp   first %8.3f s %9.1f MiB/s  %5.2fx cp\n",
           "cp", best_cp, mb / best_cp, 1.0, first_cp, mb / first_cp, 1.0);
    printf("%s\n", bad ? "append data: WRONG" : "append data: ok");
    free(buf);
    PDCclose(pdc);
    return bad;
}
