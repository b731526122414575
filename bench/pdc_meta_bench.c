/*
 * pdc_meta_bench - metadata operations per second through the synchronous PDC API.
 *
 *   pdc_meta_bench [--counts LIST] [--containers N] [--procs N] [--phases LIST] [-v]
 *
 * Run it inside a job:  pdcbb run --nodes 1 -- pdc_meta_bench --counts 2000,20000
 *             or:       pdcbb run --nodes 1 -- pdc_meta_bench --procs 4      (4 processes)
 *             or:       pdcbb run --nodes 1 -- mpirun --oversubscribe -np 4 pdc_meta_bench   (MPI builds)
 *
 * For each object count N of --counts (default 2000,20000) every process, one call at a time:
 *   cont_create  PDCcont_create of --containers new containers (first count only; default 2000)
 *   create       PDCobj_create of N new objects (1-D PDC_INT, 100 elements) in one container
 *   tag_put      PDCobj_put_tag of one 4-byte PDC_INT tag on each of them
 *   tag_get      PDCobj_get_tag of that tag from each of them (value checked)
 *   open         PDCobj_open by name of each of them (after closing them, untimed)
 * Only the calls above are timed, PDCobj_close and the freeing of tag values are not. Names are
 * unique per run, process and count, so every count starts from the store the previous counts
 * left (the daemon holds sum(counts) x procs objects at the end, as a growing job would).
 *
 * Several processes: with --procs P the program forks P processes before PDCinit (each its own
 * client, as P ranks of an application would be); under mpirun (MPI builds) the ranks take
 * part instead. Every phase starts after a barrier of all processes and ends with a barrier;
 * the aggregate is (P x ops per process) / the slowest process's time. A failed call ends the
 * program with status 1 (and a message naming the call and the object).
 *
 * Output: a table (ops/s per phase and count), then one machine-readable line per measurement:
 *   RESULT name=meta_create count=2000 procs=1 daemons=1 ops=2000 seconds=0.0741 ops_per_s=26990
 * ("ops" is the aggregate over all processes; "count" the objects per process.)
 * Exit status: 0 after a complete run, 1 on any error, 2 on usage errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_procs.h"
#include "pdc.h"

#define MAX_COUNTS 32
#define MAX_PROCS BENCH_MAX_PROCS

enum { PH_CONT, PH_CREATE, PH_TAG_PUT, PH_TAG_GET, PH_OPEN, PH_COUNT_ };
static const char *const phase_names[PH_COUNT_] = {"cont_create", "create", "tag_put", "tag_get",
                                                    "open"};

static const char *prog = "pdc_meta_bench";
static const char *last_error(void)
{
    const char *m = PDCbb_last_error_message();
    return m && m[0] ? m : "(no message)";
}

/* Daemons of this job: bbd-R.pid files in node 0's job directory (informational). */
static int count_daemons(void)
{
    const char *dir = getenv("PDCBB_JOB_DIR");
    int n = 0;
    DIR *d = dir ? opendir(dir) : NULL;
    if (d == NULL)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, "bbd-", 4) == 0 && l > 4 && strcmp(e->d_name + l - 4, ".pid") == 0)
            n++;
    }
    closedir(d);
    return n;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [--counts LIST] [--containers N] [--procs N] [--phases LIST] [-v]\n"
            "Metadata operations per second through the synchronous PDC API.\n"
            "  --counts LIST      objects per process per round, comma-separated "
            "(default 2000,20000;\n"
            "                     suffixes k and M: 2k,20k,200k,1M)\n"
            "  --containers N     containers PDCcont_create'd per process in the first round "
            "(default 2000)\n"
            "  --procs N          fork N client processes (default 1; not with mpirun)\n"
            "  --phases LIST      subset of cont_create,create,tag_put,tag_get,open "
            "(default all;\n"
            "                     tag_put, tag_get and open need create)\n"
            "  -v                 progress on stderr\n"
            "Run inside a job:  pdcbb run --nodes 1 -- %s --counts 2k,20k,200k,1M\n"
            "Prints a table and lines 'RESULT name=meta_PHASE count=N procs=P daemons=D ops=... "
            "seconds=... ops_per_s=...'\n",
            prog, prog);
}

static int parse_count(const char *s, long *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -1;
    if (*end == 'k' || *end == 'K')
        v *= 1e3, end++;
    else if (*end == 'm' || *end == 'M')
        v *= 1e6, end++;
    if (*end != '\0' || v < 1 || v > 1e9)
        return -1;
    *out = (long)v;
    return 0;
}

typedef struct result {
    int phase;
    long count;
    long ops;
    double seconds;
} result_t;

/* Record a measurement and show it at once (a long run shows its progress). */
static void record(result_t *results, int *nres, int phase, long count, long ops, double sec)
{
    results[(*nres)++] = (result_t){phase, count, ops, sec};
    if (bench_rank == 0) {
        printf("# %-12s count %ld: %.0f ops/s\n", phase_names[phase], count, ops / sec);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    long counts[MAX_COUNTS];
    int ncounts = 0, verbose = 0, procs = 1;
    long containers = 2000;
    int want[PH_COUNT_] = {1, 1, 1, 1, 1};
    static const struct option longopts[] = {
        {"counts", required_argument, NULL, 'c'}, {"containers", required_argument, NULL, 'C'},
        {"procs", required_argument, NULL, 'p'},  {"phases", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c': {
            char *copy = strdup(optarg), *save = NULL;
            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (ncounts == MAX_COUNTS || parse_count(t, &counts[ncounts]) != 0) {
                    fprintf(stderr, "%s: bad --counts '%s'\n", prog, optarg);
                    return 2;
                }
                ncounts++;
            }
            free(copy);
            break;
        }
        case 'C':
            if (parse_count(optarg, &containers) != 0 && strcmp(optarg, "0") != 0) {
                fprintf(stderr, "%s: bad --containers '%s'\n", prog, optarg);
                return 2;
            }
            if (strcmp(optarg, "0") == 0)
                containers = 0;
            break;
        case 'p':
            procs = atoi(optarg);
            if (procs < 1 || procs > MAX_PROCS) {
                fprintf(stderr, "%s: bad --procs '%s' (1..%d)\n", prog, optarg, MAX_PROCS);
                return 2;
            }
            break;
        case 'P': {
            char *copy = strdup(optarg), *save = NULL;
            memset(want, 0, sizeof(want));
            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int k;
                for (k = 0; k < PH_COUNT_ && strcmp(t, phase_names[k]) != 0; k++)
                    ;
                if (k == PH_COUNT_) {
                    fprintf(stderr, "%s: unknown phase '%s'\n", prog, t);
                    return 2;
                }
                want[k] = 1;
            }
            free(copy);
            if ((want[PH_TAG_PUT] || want[PH_TAG_GET] || want[PH_OPEN]) && !want[PH_CREATE]) {
                fprintf(stderr, "%s: tag_put, tag_get and open need the create phase\n", prog);
                return 2;
            }
            break;
        }
        case 'v': verbose = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (ncounts == 0) {
        counts[0] = 2000;
        counts[1] = 20000;
        ncounts = 2;
    }
    if (containers == 0)
        want[PH_CONT] = 0;

    int rc0 = bench_procs_start(prog, &argc, &argv, procs, 1);
    if (rc0 != 0)
        return rc0;
    long runid = bench_bcast_long((long)getpid());

    pdcid_t pdc = PDCinit("pdc_meta_bench");
    if (pdc == 0)
        bench_die("PDCinit: %s", last_error());
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t oprop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t dims[1] = {100};
    if (cprop == 0 || oprop == 0 || PDCprop_set_obj_type(oprop, PDC_INT) != SUCCEED ||
        PDCprop_set_obj_dims(oprop, 1, dims) != SUCCEED)
        bench_die("properties: %s", last_error());
    int daemons = count_daemons();

    long maxc = 0;
    for (int i = 0; i < ncounts; i++)
        if (counts[i] > maxc)
            maxc = counts[i];
    pdcid_t *ids = calloc((size_t)maxc, sizeof(*ids));
    if (ids == NULL)
        bench_die("out of memory for %ld ids", maxc);
    result_t results[MAX_COUNTS * PH_COUNT_];
    int nres = 0;
    char name[256];

    if (bench_rank == 0)
        printf("# pdc_meta_bench: %d process(es), %d daemon(s); synchronous PDC calls, one at a "
               "time per process\n",
               bench_nprocs, daemons);
    fflush(stdout);

    for (int ci = 0; ci < ncounts; ci++) {
        long n = counts[ci];
        double t0, sec;
        if (ci == 0 && want[PH_CONT]) {
            bench_barrier();
            t0 = bench_now();
            for (long i = 0; i < containers; i++) {
                snprintf(name, sizeof(name), "mbc-%ld-%d-%ld", runid, bench_rank, i);
                pdcid_t c = PDCcont_create(name, cprop);
                if (c == 0)
                    bench_die("PDCcont_create('%s'): %s", name, last_error());
                if (PDCcont_close(c) != SUCCEED)
                    bench_die("PDCcont_close('%s'): %s", name, last_error());
            }
            sec = bench_max_all(bench_now() - t0);
            record(results, &nres, PH_CONT, containers, containers * bench_nprocs, sec);
        }
        if (!want[PH_CREATE])
            continue;
        snprintf(name, sizeof(name), "mbcont-%ld-%d-%d", runid, bench_rank, ci);
        pdcid_t cont = PDCcont_create(name, cprop);
        if (cont == 0)
            bench_die("PDCcont_create('%s'): %s", name, last_error());

        bench_barrier();
        t0 = bench_now();
        for (long i = 0; i < n; i++) {
            snprintf(name, sizeof(name), "mbo-%ld-%d-%d-%ld", runid, bench_rank, ci, i);
            if ((ids[i] = PDCobj_create(cont, name, oprop)) == 0)
                bench_die("PDCobj_create('%s'): %s", name, last_error());
        }
        sec = bench_max_all(bench_now() - t0);
        record(results, &nres, PH_CREATE, n, n * bench_nprocs, sec);
        if (verbose)
            fprintf(stderr, "%s[%d]: %ld created\n", prog, bench_rank, n);

        if (want[PH_TAG_PUT] || want[PH_TAG_GET]) {
            bench_barrier();
            t0 = bench_now();
            for (long i = 0; i < n; i++) {
                int v = (int)(i ^ 0x5a5a);
                if (PDCobj_put_tag(ids[i], "mbtag", &v, PDC_INT, sizeof(v)) != SUCCEED)
                    bench_die("PDCobj_put_tag(object %ld): %s", i, last_error());
            }
            sec = bench_max_all(bench_now() - t0);
            if (want[PH_TAG_PUT])
                record(results, &nres, PH_TAG_PUT, n, n * bench_nprocs, sec);
        }
        if (want[PH_TAG_GET]) {
            void **vals = calloc((size_t)n, sizeof(*vals));
            if (vals == NULL)
                bench_die("out of memory");
            bench_barrier();
            t0 = bench_now();
            for (long i = 0; i < n; i++) {
                pdc_var_type_t type;
                psize_t size;
                if (PDCobj_get_tag(ids[i], "mbtag", &vals[i], &type, &size) != SUCCEED)
                    bench_die("PDCobj_get_tag(object %ld): %s", i, last_error());
                if (size != sizeof(int) || type != PDC_INT)
                    bench_die("PDCobj_get_tag(object %ld): %llu bytes of type %d", i,
                        (unsigned long long)size, (int)type);
            }
            sec = bench_max_all(bench_now() - t0);
            record(results, &nres, PH_TAG_GET, n, n * bench_nprocs, sec);
            for (long i = 0; i < n; i++) {
                if (*(int *)vals[i] != (int)(i ^ 0x5a5a))
                    bench_die("PDCobj_get_tag(object %ld): wrong value %d", i, *(int *)vals[i]);
                free(vals[i]);
            }
            free(vals);
        }
        for (long i = 0; i < n; i++)
            if (PDCobj_close(ids[i]) != SUCCEED)
                bench_die("PDCobj_close(object %ld): %s", i, last_error());
        if (want[PH_OPEN]) {
            bench_barrier();
            t0 = bench_now();
            for (long i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "mbo-%ld-%d-%d-%ld", runid, bench_rank, ci, i);
                if ((ids[i] = PDCobj_open(name, pdc)) == 0)
                    bench_die("PDCobj_open('%s'): %s", name, last_error());
            }
            sec = bench_max_all(bench_now() - t0);
            record(results, &nres, PH_OPEN, n, n * bench_nprocs, sec);
            for (long i = 0; i < n; i++)
                if (PDCobj_close(ids[i]) != SUCCEED)
                    bench_die("PDCobj_close(object %ld): %s", i, last_error());
        }
        PDCcont_close(cont);
        if (verbose)
            fprintf(stderr, "%s[%d]: round of %ld done\n", prog, bench_rank, n);
    }

    if (bench_rank == 0) {
        printf("%-12s %10s %6s %10s %10s %12s\n", "phase", "count", "procs", "ops", "seconds",
               "ops/s");
        for (int i = 0; i < nres; i++)
            printf("%-12s %10ld %6d %10ld %10.4f %12.0f\n", phase_names[results[i].phase],
                   results[i].count, bench_nprocs, results[i].ops, results[i].seconds,
                   results[i].ops / results[i].seconds);
        printf("\n# summary\n");
        for (int i = 0; i < nres; i++)
            printf("RESULT name=meta_%s count=%ld procs=%d daemons=%d ops=%ld seconds=%.4f "
                   "ops_per_s=%.0f\n",
                   phase_names[results[i].phase], results[i].count, bench_nprocs, daemons,
                   results[i].ops, results[i].seconds, results[i].ops / results[i].seconds);
        fflush(stdout);
    }
    free(ids);
    PDCprop_close(oprop);
    PDCprop_close(cprop);
    if (PDCclose(pdc) != SUCCEED)
        bench_die("PDCclose: %s", last_error());
    return bench_procs_finish();
}
