/*
 * pdc_vpic_bench - VPIC-IO-style write and BD-CATS-style read through the PDC API, against a
 * raw baseline measured in the same run.
 *
 *   pdc_vpic_bench [--particles N] [--repeat R] [--dir DIR]
 *
 * Run it inside a job:  pdcbb run --nodes 1 -- pdc_vpic_bench
 *             or:       pdcbb run --nodes 2 -- mpirun -np 2 pdc_vpic_bench   (MPI builds)
 *
 * Like PDC's own vpicio / bdcats benchmarks: 8 variables per particle, x y z px py pz (float)
 * and id1 id2 (int), 32 bytes per particle, N particles per process, stored as 8 one-dimensional
 * objects of N x nprocs elements in one container. Each process owns the elements
 * [rank*N, rank*N + N) of every object.
 *
 *  write  one transfer request per variable per process (PDCregion_transfer_create), one
 *         PDCregion_transfer_start_all over the 8, one PDCregion_transfer_wait_all, then
 *         PDCregion_transfer_close. Timed from the first region create to the last close.
 *  read   the objects are closed, reopened by name (untimed), and read the same way into
 *         separate buffers that were cleared (and so pre-touched) before timing; every element
 *         is then checked against the fill values (which depend on the particle index, the
 *         variable and the repeat). A mismatch is an error exit (status 1).
 *  raw    in the same run, on the same bytes, in the same directory (--dir, default
 *         $PDCBB_JOB_DIR, where the daemons keep their data): each process writes each
 *         variable's N*4 bytes with one buffered write() into a new file of its own, then
 *         closes it (no fsync: the daemon does not fsync either); raw read reads the files back
 *         (page cache, as the daemon's data also is) and checks them, then deletes them.
 *         The cold repetition (the job's first transfer) deletes the raw files and the PDC
 *         objects only when both sides ran: on this VM memory touched again right after it
 *         was freed is up to 10x faster to write than memory the guest has not used lately, so
 *         the side running second would otherwise be favoured (each warm repetition deletes
 *         right away, so both sides reuse the memory the other just freed: the steady state).
 *
 * With MPI (libpdc built with MPI and the program started by mpirun), every rank takes part:
 * rank 0 creates the container and the objects, the others open them, and each measurement is
 * bracketed by barriers; the time reported is the slowest rank's. Without mpirun the program
 * runs as one process and does not initialise MPI.
 *
 * Each measurement is repeated --repeat times (fresh objects and files, PDC and raw alternating
 * in order). Output: one table line per measurement (MB/s = 10^6 bytes/s and MiB/s, for
 * comparison with PDC's published numbers: medians; ratio_to_raw: the median of the
 * per-repetition ratios), the target (regions >= 1 MiB at >= 60% of
 * raw; informational only), and machine-readable lines such as
 *   RESULT name=vpic_write particles=8388608 procs=1 daemons=1 bytes=268435456 mbps=... ratio=...
 * Exit status: 0 after a complete run, 1 on any error, 2 on usage errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_procs.h"
#include "pdc.h"

#define NVARS        8
#define MAX_REPEAT   BENCH_MAX_REPEAT
#define TARGET_RATIO 0.60

static const char *prog = "pdc_vpic_bench";
static const char *var_names[NVARS] = {"x", "y", "z", "px", "py", "pz", "id1", "id2"};
static int rank = 0, nprocs = 1, verbose;
static int aligned;   /* --aligned: 4096-aligned, pre-touched buffers (else plain malloc) */
static double cold_settle = 5; /* --cold-settle: seconds of quiet before each cold side */
static int reopen;    /* --reopen: read through objects reopened by name (else the same ids) */
static int placement; /* pdc_region_partition_t, default PDC_OBJ_STATIC */
static char raw_paths[NVARS][4096];

/* ---- helpers --------------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void remove_raw(void)
{
    for (int v = 0; v < NVARS; v++)
        if (raw_paths[v][0]) {
            unlink(raw_paths[v]);
            raw_paths[v][0] = '\0';
        }
}

static void abort_all(int code) __attribute__((noreturn));
static void abort_all(int code)
{
    remove_raw();
    fflush(stdout);
#ifdef ENABLE_MPI
    if (nprocs > 1) /* only MPI ranks (bench_procs_start without --procs) */
        MPI_Abort(MPI_COMM_WORLD, code);
#endif
    exit(code);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s[%d]: error: ", prog, rank);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort_all(1);
}

void pdc_fail(const char *what)
{
    bench_pdc_report(prog, rank, what);
    abort_all(1);
}

/* ---- particle data --------------------------------------------------------------------- */

/* The 32-bit pattern of element gi (global particle index) of variable v in repeat r. */
static inline uint32_t value_bits(uint64_t gi, int v, int r)
{
    if (v < 6) { /* float: an integer below 2^24, exact */
        float f = (float)((gi * 8 + (uint64_t)v * 1299721 + (uint64_t)r * 15485863) & 0xFFFFFF);
        uint32_t u;
        memcpy(&u, &f, 4);
        return u;
    }
    return (uint32_t)(gi * 2654435761u) ^ ((uint32_t)v << 28) ^ ((uint32_t)r * 0x9E3779B9u);
}

static void fill(uint32_t *buf, uint64_t n, uint64_t first, int v, int r)
{
    for (uint64_t i = 0; i < n; i++)
        buf[i] = value_bits(first + i, v, r);
}

static void verify(const uint32_t *buf, uint64_t n, uint64_t first, int v, int r,
                   const char *what)
{
    for (uint64_t i = 0; i < n; i++) {
        uint32_t want = value_bits(first + i, v, r);
        if (buf[i] != want)
            die("%s: variable %s, particle %llu: expected bits %#010x, read %#010x", what,
                var_names[v], (unsigned long long)(first + i), want, buf[i]);
    }
}

/* ---- the PDC transfers ----------------------------------------------------------------- */

struct phases {
    double create, start, wait, close;
    double cpu_self, cpu_daemons; /* CPU seconds meanwhile (rank 0; daemons: -1 if unknown) */
    uint64_t rss;                 /* the largest daemon's peak resident set meanwhile (rank 0;
                                     0 if unknown) */
};

/* Delete (rank 0) and close the objects of a repetition. */
static void delete_pdc(const pdcid_t *obj)
{
    bench_barrier();
    if (rank == 0)
        for (int v = 0; v < NVARS; v++)
            PDC_OK(PDCobj_del(obj[v]), "PDCobj_del");
    for (int v = 0; v < NVARS; v++)
        PDC_OK(PDCobj_close(obj[v]), "PDCobj_close");
}

/* One request per variable: buf[v] (n elements) <-> elements [first, first+n) of obj[v]. */
static double pdc_transfer(const pdcid_t obj[NVARS], uint32_t *buf[NVARS], uint64_t n,
                           uint64_t first, pdc_access_t access, struct phases *ph)
{
    pdcid_t req[NVARS];
    uint64_t zero = 0;
    int rss_ok = rank == 0 && bench_daemons_rss_reset();
    bench_barrier();
    double c0 = bench_self_cpu(), d0 = bench_daemons_cpu();
    double t0 = now();
    for (int v = 0; v < NVARS; v++) {
        pdcid_t lreg = PDC_ID(PDCregion_create(1, &zero, &n), "PDCregion_create(local)");
        pdcid_t rreg = PDC_ID(PDCregion_create(1, &first, &n), "PDCregion_create(remote)");
        req[v] = PDC_ID(PDCregion_transfer_create(buf[v], access, obj[v], lreg, rreg),
                        "PDCregion_transfer_create");
        PDC_OK(PDCregion_close(lreg), "PDCregion_close");
        PDC_OK(PDCregion_close(rreg), "PDCregion_close");
    }
    double t1 = now();
    PDC_OK(PDCregion_transfer_start_all(req, NVARS), "PDCregion_transfer_start_all");
    double t2 = now();
    PDC_OK(PDCregion_transfer_wait_all(req, NVARS), "PDCregion_transfer_wait_all");
    double t3 = now();
    for (int v = 0; v < NVARS; v++)
        PDC_OK(PDCregion_transfer_close(req[v]), "PDCregion_transfer_close");
    double t4 = now();
    bench_barrier();
    ph->cpu_self = bench_self_cpu() - c0;
    ph->cpu_daemons = d0 < 0 ? -1 : bench_daemons_cpu() - d0;
    ph->rss = rss_ok ? bench_daemons_peak_rss() : 0;
    ph->create = t1 - t0;
    ph->start = t2 - t1;
    ph->wait = t3 - t2;
    ph->close = t4 - t3;
    return bench_max_all(t4 - t0);
}

/* ---- raw baseline ---------------------------------------------------------------------- */

static double raw_write(const char *dir, long runid, uint32_t *buf[NVARS], uint64_t nbytes)
{
    bench_barrier();
    double t0 = now();
    for (int v = 0; v < NVARS; v++) {
        snprintf(raw_paths[v], sizeof(raw_paths[v]), "%s/pdcbb-vpic-raw.%ld.%d.%s", dir, runid,
                 rank, var_names[v]);
        int fd = open(raw_paths[v], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
            die("raw write: open %s: %s", raw_paths[v], strerror(errno));
        const char *p = (const char *)buf[v];
        for (uint64_t off = 0; off < nbytes;) {
            ssize_t w = write(fd, p + off, (size_t)(nbytes - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                die("raw write: %s: %s", raw_paths[v], w < 0 ? strerror(errno) : "short write");
            off += (uint64_t)w;
        }
        if (close(fd) != 0)
            die("raw write: close %s: %s", raw_paths[v], strerror(errno));
    }
    double t = now() - t0;
    bench_barrier();
    return bench_max_all(t);
}

static double raw_read(uint32_t *buf[NVARS], uint64_t nbytes)
{
    bench_barrier();
    double t0 = now();
    for (int v = 0; v < NVARS; v++) {
        int fd = open(raw_paths[v], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            die("raw read: open %s: %s", raw_paths[v], strerror(errno));
        char *p = (char *)buf[v];
        for (uint64_t off = 0; off < nbytes;) {
            ssize_t r = read(fd, p + off, (size_t)(nbytes - off));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                die("raw read: %s: %s", raw_paths[v], r < 0 ? strerror(errno) : "end of file");
            off += (uint64_t)r;
        }
        close(fd);
    }
    double t = now() - t0;
    bench_barrier();
    return bench_max_all(t);
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [OPTIONS]\n"
            "VPIC-IO-style write and BD-CATS-style read of 8 particle variables (32 bytes per\n"
            "particle) through the PDC region transfer API, against raw write()/read() of the\n"
            "same bytes in the daemons' node-local directory. Run inside a pdcbb job, e.g.\n"
            "  pdcbb run --nodes 1 -- %s\n"
            "  pdcbb run --nodes 2 -- mpirun -np 2 %s     (MPI builds)\n"
            "Options:\n"
            "  --particles N   particles per process (default 8M = 256 MiB per process);\n"
            "                  K, M, G suffixes are powers of 1024\n"
            "  --repeat R      repetitions, median reported (default 3)\n"
            "  --dir DIR       where the raw baseline files go (default $PDCBB_JOB_DIR)\n"
            "  --placement P   PDCprop_set_obj_transfer_region_type: obj_static (default),\n"
            "                  region_static, region_dynamic or region_local\n"
            "  --aligned       buffers from posix_memalign(4096), touched before timing\n"
            "                  (default: plain malloc, as applications allocate; the read\n"
            "                  buffers are fresh, untouched memory for PDC and raw alike)\n"
            "  --reopen        read through objects closed and reopened by name (BD-CATS\n"
            "                  style; default: through the same ids, right after the write)\n"
            "  --cold-settle S seconds to wait before each side of the cold repetition\n"
            "                  (default 5): lets the machine reclaim freed memory, so the\n"
            "                  job's first PDC write and the first raw write both find\n"
            "                  memory in the same state (see docs/PERFORMANCE.md)\n"
            "  -v, --verbose   print every repetition's MB/s\n"
            "The first repetition is the job's first transfer (cold: fresh endpoints,\n"
            "registrations and staging memory) and is reported on its own line; the\n"
            "median of the others is the steady state (warm).\n"
            "  -h, --help      this text\n"
            "MB/s means 10^6 bytes/s; MiB/s is also printed for comparison with PDC's numbers.\n",
            prog, prog, prog);
}

int main(int argc, char **argv)
{
    uint64_t n = 8ULL << 20;
    int repeat = 3;
    const char *dir = getenv("PDCBB_JOB_DIR");
    static const struct option opts[] = {{"particles", required_argument, 0, 'p'},
                                         {"repeat", required_argument, 0, 'r'},
                                         {"dir", required_argument, 0, 'd'},
                                         {"verbose", no_argument, 0, 'v'},
                                         {"placement", required_argument, 0, 'P'},
                                         {"aligned", no_argument, 0, 'A'},
                                         {"reopen", no_argument, 0, 'O'},
                                         {"cold-settle", required_argument, 0, 'S'},
        {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            n = bench_parse_size(optarg, 0);
            if (n == 0 || n > (1ULL << 31)) {
                fprintf(stderr, "%s: bad --particles '%s'\n", prog, optarg);
                return 2;
            }
            break;
        case 'r':
            repeat = atoi(optarg);
            if (repeat < 1 || repeat > MAX_REPEAT) {
                fprintf(stderr, "%s: bad --repeat '%s' (1..%d)\n", prog, optarg, MAX_REPEAT);
                return 2;
            }
            break;
        case 'd':
            dir = optarg;
            break;
        case 'v':
            verbose = 1;
            break;
        case 'A':
            aligned = 1;
            break;
        case 'O':
            reopen = 1;
            break;
        case 'S': {
            char *end;
            cold_settle = strtod(optarg, &end);
            if (*end || cold_settle < 0 || cold_settle > 600) {
                fprintf(stderr, "%s: bad --cold-settle '%s' (seconds, 0..600)\n", prog, optarg);
                return 2;
            }
            break;
        }
        case 'P':
            if ((placement = bench_parse_placement(prog, optarg)) < 0)
                return 2;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (!dir || !*dir) {
        fprintf(stderr, "%s: no directory for the raw baseline: PDCBB_JOB_DIR is not set "
                        "(run inside 'pdcbb run', or give --dir)\n", prog);
        return 2;
    }

    /* MPI only when a launcher started us (no singleton start-up otherwise). */
    bench_procs_start(prog, &argc, &argv, 1, 1);
    rank = bench_rank;
    nprocs = bench_nprocs;
    atexit(remove_raw);

    uint64_t nbytes = n * 4, first = (uint64_t)rank * n;
    uint64_t total = nbytes * NVARS * (uint64_t)nprocs;
    /* The PDC read and the raw read each get their own buffers, so that with plain malloc
     * both read into memory nobody touched before (as an application's first read does). */
    uint32_t *wbuf[NVARS], *rbuf[NVARS], *rawbuf[NVARS];
    for (int v = 0; v < NVARS; v++) {
        if (aligned) {
            if (posix_memalign((void **)&wbuf[v], 4096, nbytes) ||
                posix_memalign((void **)&rbuf[v], 4096, nbytes) ||
                posix_memalign((void **)&rawbuf[v], 4096, nbytes))
                die("cannot allocate 24 x %llu bytes", (unsigned long long)nbytes);
            memset(wbuf[v], 1, nbytes); /* pre-touch: first-touch page faults not measured */
            memset(rbuf[v], 2, nbytes);
            memset(rawbuf[v], 2, nbytes);
        } else if ((wbuf[v] = malloc(nbytes)) == NULL || (rbuf[v] = malloc(nbytes)) == NULL ||
                   (rawbuf[v] = malloc(nbytes)) == NULL) {
            die("cannot allocate 24 x %llu bytes", (unsigned long long)nbytes);
        }
    }

    pdcid_t pdc = PDC_ID(PDCinit("pdc"), "PDCinit");
    if (rank == 0)
        bench_find_daemons();
    int nservers = PDCbb_nservers();
    long runid = bench_bcast_long((long)getpid());
    char cname[128];
    snprintf(cname, sizeof(cname), "bench-vpic-%ld", runid);
    pdcid_t cprop = PDC_ID(PDCprop_create(PDC_CONT_CREATE, pdc), "PDCprop_create(cont)");
    pdcid_t cont = 0;
    if (rank == 0)
        cont = PDC_ID(PDCcont_create(cname, cprop), "PDCcont_create");
    bench_barrier();
    if (rank != 0)
        cont = PDC_ID(PDCcont_open(cname, pdc), "PDCcont_open");
    pdcid_t oprop = PDC_ID(PDCprop_create(PDC_OBJ_CREATE, pdc), "PDCprop_create(obj)");
    uint64_t dims[1] = {n * (uint64_t)nprocs};
    PDC_OK(PDCprop_set_obj_dims(oprop, 1, dims), "PDCprop_set_obj_dims");
    PDC_OK(PDCprop_set_obj_transfer_region_type(oprop, (pdc_region_partition_t)placement),
           "PDCprop_set_obj_transfer_region_type");

    if (rank == 0) {
        printf("# pdc_vpic_bench: %d process(es), %d daemon(s) via %s, %llu particles per "
               "process, 8 variables (6 float, 2 int) = %llu bytes per process, %llu in all; "
               "placement %s; buffers %s; read %s; 1 cold + repeat %d warm (median)\n",
               nprocs, nservers, PDCbb_discovery_method(), (unsigned long long)n,
               (unsigned long long)(nbytes * NVARS), (unsigned long long)total,
               bench_placement_name(placement),
               aligned ? "posix_memalign(4096), pre-touched" : "malloc",
               reopen ? "after close and reopen by name" : "through the same ids", repeat);
        printf("# PDC: one request of %llu bytes per variable per process, create + start_all "
               "+ wait_all + close timed; objects created / reopened untimed\n",
               (unsigned long long)nbytes);
        printf("# raw baseline in %s: per process and variable one buffered write() of %llu "
               "bytes into a new file, close, no fsync; read() back from the page cache\n",
               dir, (unsigned long long)nbytes);
        fflush(stdout);
    }

    /* Create (rank 0) or open (others) the 8 objects of repeat r (r < 0: the job's first, cold transfer). */
    pdcid_t obj[NVARS];
    double t_meta_create = 0, t_meta_open = 0;
    struct phases wph[MAX_REPEAT], rph[MAX_REPEAT], cold, cold_read;
    double wt[MAX_REPEAT], rt[MAX_REPEAT], rwt[MAX_REPEAT], rrt[MAX_REPEAT];
    double cold_w = 0, cold_r = 0, cold_rw = 0, cold_rr = 0; /* the job's first transfer */

    for (int r = -1; r < repeat; r++) {
        int rr = r < 0 ? 0x7fff : r; /* fill salt */
        char oname[NVARS][160];
        for (int v = 0; v < NVARS; v++) {
            snprintf(oname[v], sizeof(oname[v]), "vpic-%ld-%s%d-%s", runid, r < 0 ? "w" : "r",
                     r < 0 ? 0 : r, var_names[v]);
            fill(wbuf[v], n, first, v, rr);
        }
        /* Alternate which of PDC and raw goes first. */
        for (int pass = 0; pass < 2; pass++) {
            int do_raw = (pass == 0) == (r >= 0 && r % 2 == 1);
            if (r < 0 && cold_settle > 0) {
                bench_barrier();
                struct timespec ts = {(time_t)cold_settle,
                                      (long)((cold_settle - (double)(time_t)cold_settle) * 1e9)};
                nanosleep(&ts, NULL);
            }
            if (!do_raw) {
                bench_barrier();
                double t0 = now();
                if (rank == 0)
                    for (int v = 0; v < NVARS; v++) {
                        PDC_OK(PDCprop_set_obj_type(oprop, v < 6 ? PDC_FLOAT : PDC_INT),
                               "PDCprop_set_obj_type");
                        obj[v] = PDC_ID(PDCobj_create(cont, oname[v], oprop), "PDCobj_create");
                    }
                bench_barrier();
                if (rank != 0)
                    for (int v = 0; v < NVARS; v++)
                        obj[v] = PDC_ID(PDCobj_open(oname[v], pdc), "PDCobj_open");
                double tc = bench_max_all(now() - t0);

                double tw = pdc_transfer(obj, wbuf, n, first, PDC_WRITE, r < 0 ? &cold : &wph[r]);

                /* Read back: through the same ids, or (--reopen, BD-CATS) after closing and
                 * reopening by name. Aligned buffers are cleared first (touched); malloc'd
                 * ones keep what the last read left (its salt differs: verify still tells). */
                double to = 0;
                if (reopen) {
                    for (int v = 0; v < NVARS; v++)
                        PDC_OK(PDCobj_close(obj[v]), "PDCobj_close");
                    bench_barrier();
                    t0 = now();
                    for (int v = 0; v < NVARS; v++)
                        obj[v] = PDC_ID(PDCobj_open(oname[v], pdc), "PDCobj_open");
                    to = bench_max_all(now() - t0);
                }
                if (aligned)
                    for (int v = 0; v < NVARS; v++)
                        memset(rbuf[v], 0xA5, nbytes);
                bench_barrier();
                double tr = pdc_transfer(obj, rbuf, n, first, PDC_READ, r < 0 ? &cold_read : &rph[r]);
                for (int v = 0; v < NVARS; v++)
                    verify(rbuf[v], n, first, v, rr, "PDC read");
                if (r >= 0) {
                    delete_pdc(obj);
                    wt[r] = tw;
                    rt[r] = tr;
                    t_meta_create += tc;
                    t_meta_open += to;
                } else {
                    cold_w = tw;
                    cold_r = tr;
                }
            } else {
                double tw = raw_write(dir, runid, wbuf, nbytes);
                if (aligned)
                    for (int v = 0; v < NVARS; v++)
                        memset(rawbuf[v], 0x5A, nbytes);
                double tr = raw_read(rawbuf, nbytes);
                for (int v = 0; v < NVARS; v++)
                    verify(rawbuf[v], n, first, v, rr, "raw read");
                if (r >= 0) {
                    remove_raw();
                    rwt[r] = tw;
                    rrt[r] = tr;
                } else {
                    cold_rw = tw;
                    cold_rr = tr;
                }
            }
        }
        if (r < 0) {
            delete_pdc(obj);
            remove_raw();
        }
    }

    if (rank == 0) {
        double mw = bench_median(wt, repeat), mr = bench_median(rt, repeat);
        double mrw = bench_median(rwt, repeat), mrr = bench_median(rrt, repeat);
        double w = (double)total / mw / 1e6, rd = (double)total / mr / 1e6;
        double rw = (double)total / mrw / 1e6, rr = (double)total / mrr / 1e6;
        /* Ratios: median of the per-repetition ratios (PDC and raw measured back to back). */
        double wq[MAX_REPEAT], rq[MAX_REPEAT];
        for (int i = 0; i < repeat; i++) {
            wq[i] = rwt[i] / wt[i];
            rq[i] = rrt[i] / rt[i];
            if (verbose)
                printf("    repeat %d (%s first): write %.1f raw %.1f | read %.1f raw %.1f MB/s\n",
                       i, i % 2 ? "raw" : "PDC", (double)total / wt[i] / 1e6,
                       (double)total / rwt[i] / 1e6, (double)total / rt[i] / 1e6,
                       (double)total / rrt[i] / 1e6);
        }
        double wratio = bench_median(wq, repeat), rratio = bench_median(rq, repeat);
        const double MiB = 1048576.0;
        printf("%-12s %9s %7s %11s %10s %10s %10s %13s\n", "measurement", "particles", "procs",
               "bytes", "MB/s", "MiB/s", "raw_MB/s", "ratio_to_raw");
        printf("%-12s %9llu %7d %11llu %10.1f %10.1f %10.1f %13.2f\n", "vpic_write",
               (unsigned long long)n, nprocs, (unsigned long long)total, w, (double)total / mw / MiB,
               rw, wratio);
        printf("%-12s %9llu %7d %11llu %10.1f %10.1f %10.1f %13.2f\n", "bdcats_read",
               (unsigned long long)n, nprocs, (unsigned long long)total, rd,
               (double)total / mr / MiB, rr, rratio);
        /* The job's first transfer, against the first raw write/read of the job. */
        printf("%-12s %9llu %7d %11llu %10.1f %10.1f %10.1f %13.2f\n", "cold_write",
               (unsigned long long)n, nprocs, (unsigned long long)total,
               (double)total / cold_w / 1e6, (double)total / cold_w / MiB,
               (double)total / cold_rw / 1e6, cold_rw / cold_w);
        printf("%-12s %9llu %7d %11llu %10.1f %10.1f %10.1f %13.2f\n", "cold_read",
               (unsigned long long)n, nprocs, (unsigned long long)total,
               (double)total / cold_r / 1e6, (double)total / cold_r / MiB,
               (double)total / cold_rr / 1e6, cold_rr / cold_r);
        /* Phases of rank 0 in the repeat closest to the median. */
        int bw = 0, br = 0;
        for (int i = 1; i < repeat; i++) {
            if ((wt[i] - mw) * (wt[i] - mw) < (wt[bw] - mw) * (wt[bw] - mw))
                bw = i;
            if ((rt[i] - mr) * (rt[i] - mr) < (rt[br] - mr) * (rt[br] - mr))
                br = i;
        }
        printf("    phases (s, rank 0) write: create %.4f start_all %.4f wait_all %.4f close "
               "%.4f | read: create %.4f start_all %.4f wait_all %.4f close %.4f\n",
               wph[bw].create, wph[bw].start, wph[bw].wait, wph[bw].close, rph[br].create,
               rph[br].start, rph[br].wait, rph[br].close);
        printf("    cpu (s) write: wall %.3f rank-0 client %.3f daemons %.3f | read: wall %.3f "
               "rank-0 client %.3f daemons %.3f\n",
               wt[bw], wph[bw].cpu_self, wph[bw].cpu_daemons, rt[br], rph[br].cpu_self,
               rph[br].cpu_daemons);
        printf("    metadata (untimed above, mean per repeat): create/open 8 objects %.2f ms, "
               "reopen 8 objects by name %.2f ms\n",
               t_meta_create / repeat * 1e3, t_meta_open / repeat * 1e3);
        /* Per phase: the largest peak over the cold transfer and every repeat. Reads count the
         * file pages a daemon maps to answer them. */
        uint64_t rss_w = cold.rss, rss_r = cold_read.rss;
        for (int i = 0; i < repeat; i++) {
            rss_w = wph[i].rss > rss_w ? wph[i].rss : rss_w;
            rss_r = rph[i].rss > rss_r ? rph[i].rss : rss_r;
        }
        uint64_t rss = bench_daemons_peak_rss();
        if (rss_w && rss_r)
            printf("    daemon memory: peak resident set of the largest of %d daemon(s) on this "
                   "machine during writes %.1f MiB, during reads %.1f MiB (includes the file "
                   "pages it maps to answer reads)\n",
                   bench_ndaemons(), (double)rss_w / 1048576.0, (double)rss_r / 1048576.0);
        else if (rss)
            printf("    daemon memory: peak resident set of the largest of %d daemon(s) on this "
                   "machine %.1f MiB\n",
                   bench_ndaemons(), (double)rss / 1048576.0);
        printf("\n# targets\n");
        if (nbytes >= (1u << 20)) {
            printf("TARGET vpic regions of %llu bytes: write >= %.0f%% of raw: %-7s (%.2f)\n",
                   (unsigned long long)nbytes, TARGET_RATIO * 100,
                   wratio >= TARGET_RATIO ? "met" : "NOT met", wratio);
            printf("TARGET vpic regions of %llu bytes: read  >= %.0f%% of raw: %-7s (%.2f)\n",
                   (unsigned long long)nbytes, TARGET_RATIO * 100,
                   rratio >= TARGET_RATIO ? "met" : "NOT met", rratio);
        } else {
            printf("# (regions below 1 MiB: ratio target not evaluated)\n");
        }
        printf("\n# summary\n");
        printf("RESULT name=vpic_write particles=%llu procs=%d daemons=%d bytes=%llu size=%llu "
               "placement=%s mbps=%.1f mibps=%.1f raw_mbps=%.1f ratio=%.2f\n",
               (unsigned long long)n, nprocs, nservers, (unsigned long long)total,
               (unsigned long long)nbytes, bench_placement_name(placement), w,
               (double)total / mw / MiB, rw, wratio);
        printf("RESULT name=bdcats_read particles=%llu procs=%d daemons=%d bytes=%llu size=%llu "
               "placement=%s mbps=%.1f mibps=%.1f raw_mbps=%.1f ratio=%.2f\n",
               (unsigned long long)n, nprocs, nservers, (unsigned long long)total,
               (unsigned long long)nbytes, bench_placement_name(placement), rd,
               (double)total / mr / MiB, rr, rratio);
        if (rss_w && rss_r)
            printf("RESULT name=daemon_peak_rss particles=%llu procs=%d daemons=%d bytes=%llu "
                   "rss_bytes=%llu write_rss_bytes=%llu read_rss_bytes=%llu\n",
                   (unsigned long long)n, nprocs, nservers, (unsigned long long)total,
                   (unsigned long long)(rss_w > rss_r ? rss_w : rss_r),
                   (unsigned long long)rss_w, (unsigned long long)rss_r);
        else if (rss)
            printf("RESULT name=daemon_peak_rss particles=%llu procs=%d daemons=%d bytes=%llu "
                   "rss_bytes=%llu\n",
                   (unsigned long long)n, nprocs, nservers, (unsigned long long)total,
                   (unsigned long long)rss);
        printf("RESULT name=vpic_write_cold particles=%llu procs=%d daemons=%d bytes=%llu "
               "size=%llu placement=%s mbps=%.1f raw_mbps=%.1f ratio=%.2f\n",
               (unsigned long long)n, nprocs, nservers, (unsigned long long)total,
               (unsigned long long)nbytes, bench_placement_name(placement),
               (double)total / cold_w / 1e6, (double)total / cold_rw / 1e6, cold_rw / cold_w);
        printf("RESULT name=bdcats_read_cold particles=%llu procs=%d daemons=%d bytes=%llu "
               "size=%llu placement=%s mbps=%.1f raw_mbps=%.1f ratio=%.2f\n",
               (unsigned long long)n, nprocs, nservers, (unsigned long long)total,
               (unsigned long long)nbytes, bench_placement_name(placement),
               (double)total / cold_r / 1e6, (double)total / cold_rr / 1e6, cold_rr / cold_r);
        fflush(stdout);
    }

    bench_barrier();
    PDC_OK(PDCprop_close(oprop), "PDCprop_close");
    PDC_OK(PDCprop_close(cprop), "PDCprop_close");
    if (rank == 0 && PDCcont_del(cont) != SUCCEED)
        fprintf(stderr, "%s: warning: PDCcont_del: %s\n", prog, PDCbb_last_error_message());
    PDCcont_close(cont);
    bench_barrier();
    PDC_OK(PDCclose(pdc), "PDCclose");
    for (int v = 0; v < NVARS; v++) {
        free(wbuf[v]);
        free(rbuf[v]);
        free(rawbuf[v]);
    }
    bench_procs_finish();
    return 0;
}
