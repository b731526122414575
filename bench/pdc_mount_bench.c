/*
 * pdc_mount_bench.c - the job's filesystem (pdcbb_mount) against the node-local filesystem it
 * lives on and against the PDC API, the same work in the same run (docs/PERFORMANCE.md "The
 * mount"). Run inside a job with --pdc mount=yes; bench/mount.sh starts one:
 *
 *   pdc_mount_bench [--mib N] [--files N] [--reps R] [--settle S] [--ref-pid PID]
 *                   MOUNT_DIR RAW_DIR REF_DIR
 *
 * MOUNT_DIR is a directory in the mount ($PDCBB_MOUNT), RAW_DIR one on the node-local
 * filesystem the daemons keep their data on (the job directory's), REF_DIR one in a reference
 * FUSE filesystem over that same filesystem ("fuse-ref": libfuse's own passthrough_ll, what
 * FUSE itself allows on this kernel; bench/mount.sh mounts it, PID is its process). Each
 * repetition times, on each side:
 *   write, read   a file of N MiB written, then read back, with write(2) / read(2) of 1 MiB from
 *                 plain malloc'd buffers (raw, mount); through the PDC API, a 1-D uint8 object
 *                 (what a file of the mount is) with one region transfer per MiB ("pdc-1MiB",
 *                 the same requests) or one transfer of the whole ("pdc-1xfer", what a PDC
 *                 program does). Every byte read is checked.
 *   create        FILES files of 4 KiB created, written and closed in a new directory
 *                 (mdtest-like); through PDC, an object created, written and closed each;
 *   stat          stat(2) of each, right after (the kernel may answer from what it keeps);
 *   stat>1s       the same after the mount's attribute timeout (1 s) expired;
 *   read4k        each opened, read whole (4 KiB, checked) and closed (PDC: opened by name);
 *   remove        each unlinked (PDC: opened and deleted).
 * The first repetition is the job's first (fresh files, objects, buffers); the later ones are
 * the steady state. Each side deletes its files right after it ran, the sides taking turns in
 * which goes first, and in the first repetition each side waits --settle seconds before it
 * starts: every side then writes into memory in the same state. (This virtual machine runs a
 * write into memory the guest has not used lately at a fifth of the speed: keeping every
 * side's files until all ran gave the first side warm memory and the others fresh.) Nothing is
 * synced: the burst buffer keeps written bytes in the page cache of its data files, as raw keeps
 * them in the kernel's. For each figure it prints the rate of the first repetition and the
 * median of the others, each side's ratio to raw (median of the per-repetition ratios), the CPU
 * the program, the mount process and the daemons used meanwhile (share of the wall time, from
 * /proc: what is busy), and what limits the figure. RESULT lines repeat it for scripts.
 * PDCBB_BENCH_QUICK=1: 64 MiB, 200 files, one steady repetition, no settling (a smoke run).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "pdc.h"

#define PROG        "pdc_mount_bench"
#define REQ         ((uint64_t)1 << 20) /* the request size of the large-file figures */
#define SMALL       4096                /* the size of each small file */
#define ATTR_WAIT_S 1.2                 /* past the mount's default --attr-timeout (1 s) */

enum side { RAW, MNT, REF, PDC_REQ, PDC_ONE, NSIDES };
static const char *side_name[NSIDES] = {"raw", "mount", "fuse-ref", "pdc-1MiB", "pdc-1xfer"};
#define IS_FILES(s) ((s) == RAW || (s) == MNT || (s) == REF) /* a side of files, not objects */

enum fig { F_WRITE, F_READ, F_CREATE, F_STAT, F_STAT_LATE, F_READ4K, F_REMOVE, NFIGS };
static const char *fig_name[NFIGS] = {"write",   "read",   "create", "stat",
                                      "stat>1s", "read4k", "remove"};

/* What limits each figure of each side, from the profiles behind docs/PERFORMANCE.md "The
 * mount" (the CPU shares printed next to it say which process is busy in this run); raw's
 * small-file figures: the local filesystem's own path. */
#define RAW_META "the local filesystem's own path (ext4, dentry and inode caches)"
static const char *const limits[NFIGS][NSIDES] = {
    [F_WRITE] =
        {
            [RAW] = "one copy into the page cache (allocation of its pages)",
            [MNT] = "2 copies where raw makes 1: from the writer's buffer through /dev/fuse to the "
                    "mount (write-only open: direct_io), then into the daemon's data file with its "
                    "CRC by the mount's writer thread while the loop reads the next requests",
            [PDC_REQ] = "one copy (the direct path's pwrite) plus two daemon round trips per MiB",
            [PDC_ONE] = "one copy (the direct path's pwrite), checksummed by a helper thread",
            [REF] = "FUSE's own floor: passthrough_ll, every file direct_io: the kernel copies the "
                    "writer's buffer into a pipe spliced from /dev/fuse, the filesystem splices it "
                    "into its file (2 copies), threads of libfuse's loop",
        },
    [F_READ] =
        {
            [RAW] = "one copy from the page cache",
            [MNT] =
                "1 copy, as raw (the data file spliced through /dev/fuse into the reader's buffer, "
                "512 KiB requests, two at a time), but each request a FUSE round trip; where the "
                "kernel refuses shared maps of direct_io files (before Linux 6.6): 3 copies, "
                "through the page cache in 128 KiB requests",
            [REF] =
                "FUSE's own floor: direct_io reads answered by splicing from the file (1 copy), "
                "a FUSE round trip per request",
            [PDC_REQ] = "one copy (pread of the data file, page cache) plus daemon round trips",
            [PDC_ONE] = "one copy (pread of the data file, page cache) plus daemon round trips",
        },
    [F_CREATE] =
        {
            [RAW] = RAW_META,
            [MNT] = "per file: lookup, object create, entry create, 4 KiB write, flush: daemon "
                    "round trips, each behind a FUSE request the mount serves in turn",
            [PDC_REQ] = "per file: object create, 4 KiB transfer, close: daemon round trips",
            [REF] = "per file: FUSE lookup, create, write, flush, release, each an ext4 call",
        },
    [F_STAT] =
        {
            [RAW] = RAW_META,
            [MNT] = "a write made the kernel forget the size: one getattr, one daemon lookup",
            [REF] = "one FUSE request per stat (getattr or lookup: an fstatat of the file)",
        },
    [F_STAT_LATE] =
        {
            [RAW] = RAW_META,
            [MNT] = "entry expired: one FUSE lookup, one daemon lookup",
            [REF] = "one FUSE request per stat (getattr or lookup: an fstatat of the file)",
        },
    [F_READ4K] =
        {
            [RAW] = RAW_META,
            [MNT] = "per file: open (a daemon lookup), 4 KiB read (DATA_DIRECT over UCX's TCP "
                    "loopback, an open of the data file, a splice), flush, release",
            [PDC_REQ] = "per file: open by name, 4 KiB transfer, close: daemon round trips",
            [REF] = "per file: FUSE open, read, flush, release",
        },
    [F_REMOVE] =
        {
            [RAW] = RAW_META,
            [MNT] = "per file: entry unlink and object delete: two daemon round trips",
            [PDC_REQ] = "per file: open by name and delete: daemon round trips",
            [REF] = "per file: FUSE unlink (an unlinkat)",
        },
};

/* One timed phase: wall seconds and the CPU seconds used meanwhile. */
typedef struct sample {
    double secs, app_cpu, mount_cpu, daemon_cpu;
    int done;
} sample_t;

static int nreps = 4; /* the first + the steady repetitions */
static sample_t res[NFIGS][NSIDES][BENCH_MAX_REPEAT];
static pid_t mount_pid, ref_pid;
static pdcid_t pdc, cont;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

void pdc_fail(const char *what)
{
    bench_pdc_report(PROG, -1, what);
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* CPU seconds used so far by the filesystem process of side s: the job's mount, or fuse-ref's
 * (-1 if unknown: not started by the job, no --ref-pid). */
static double mount_cpu(enum side s)
{
    pid_t pid = s == REF ? ref_pid : mount_pid;
    if (pid <= 0)
        return -1;
    char path[64], line[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(line, 1, sizeof(line) - 1, f);
    fclose(f);
    line[n] = '\0';
    char *p = strrchr(line, ')');
    unsigned long long ut, st;
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void find_mount_pid(void)
{
    const char *dir = getenv("PDCBB_JOB_DIR");
    char path[4096];
    if (dir == NULL || snprintf(path, sizeof(path), "%s/mount.pid", dir) >= (int)sizeof(path))
        return;
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f && fscanf(f, "%ld", &pid) == 1 && pid > 0)
        mount_pid = (pid_t)pid;
    if (f)
        fclose(f);
}

static sample_t phase_begin(enum side s)
{
    return (sample_t){now(), bench_self_cpu(), mount_cpu(s), bench_daemons_cpu(), 0};
}

static void phase_end(enum fig f, enum side s, int rep, sample_t b)
{
    double m = mount_cpu(s), d = bench_daemons_cpu();
    res[f][s][rep] = (sample_t){now() - b.secs, bench_self_cpu() - b.app_cpu,
                                b.mount_cpu < 0 || m < 0 ? -1 : m - b.mount_cpu,
                                b.daemon_cpu < 0 || d < 0 ? -1 : d - b.daemon_cpu, 1};
}

/* ------------------------------------------------------------------ the three filesystems */

static void path_of(char *out, size_t len, const char *dir, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void path_of(char *out, size_t len, const char *dir, const char *fmt, ...)
{
    int n = snprintf(out, len, "%s/", dir);
    va_list ap;
    va_start(ap, fmt);
    if (n < 0 || (size_t)n >= len ||
        vsnprintf(out + n, len - (size_t)n, fmt, ap) >= (int)(len - (size_t)n))
        die("path too long in %s", dir);
    va_end(ap);
}

static void file_write(const char *path, const uint8_t *buf, uint64_t bytes)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        die("creating %s: %s", path, strerror(errno));
    for (uint64_t off = 0; off < bytes;) {
        size_t n = (size_t)(bytes - off < REQ ? bytes - off : REQ);
        ssize_t w = write(fd, buf + off, n);
        if (w <= 0)
            die("writing %s at %" PRIu64 ": %s", path, off, w < 0 ? strerror(errno) : "wrote 0");
        off += (uint64_t)w;
    }
    if (close(fd) != 0)
        die("closing %s: %s", path, strerror(errno));
}

static void file_read(const char *path, uint8_t *buf, uint64_t bytes)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("opening %s: %s", path, strerror(errno));
    for (uint64_t off = 0; off < bytes;) {
        size_t n = (size_t)(bytes - off < REQ ? bytes - off : REQ);
        ssize_t r = read(fd, buf + off, n);
        if (r <= 0)
            die("reading %s at %" PRIu64 ": %s", path, off, r < 0 ? strerror(errno) : "early end");
        off += (uint64_t)r;
    }
    close(fd);
}

/* ------------------------------------------------------------------ the PDC API */

static pdcid_t obj_create(const char *name, uint64_t bytes)
{
    pdcid_t prop = PDC_ID(PDCprop_create(PDC_OBJ_CREATE, pdc), "PDCprop_create");
    PDC_OK(PDCprop_set_obj_dims(prop, 1, &bytes), "PDCprop_set_obj_dims");
    PDC_OK(PDCprop_set_obj_type(prop, PDC_UINT8), "PDCprop_set_obj_type");
    pdcid_t obj = PDC_ID(PDCobj_create(cont, name, prop), "PDCobj_create");
    PDCprop_close(prop);
    return obj;
}

/* Move [off, off + len) of obj to or from buf: one region transfer, started and waited for. */
static void obj_xfer(pdcid_t obj, pdc_access_t access, uint8_t *buf, uint64_t off, uint64_t len)
{
    uint64_t zero = 0;
    pdcid_t local = PDC_ID(PDCregion_create(1, &zero, &len), "PDCregion_create");
    pdcid_t remote = PDC_ID(PDCregion_create(1, &off, &len), "PDCregion_create");
    pdcid_t x = PDC_ID(PDCregion_transfer_create(buf, access, obj, local, remote),
                       "PDCregion_transfer_create");
    PDC_OK(PDCregion_transfer_start(x), "PDCregion_transfer_start");
    PDC_OK(PDCregion_transfer_wait(x), "PDCregion_transfer_wait");
    PDCregion_transfer_close(x);
    PDCregion_close(local);
    PDCregion_close(remote);
}

static void obj_io(pdcid_t obj, pdc_access_t access, uint8_t *buf, uint64_t bytes, uint64_t req)
{
    for (uint64_t off = 0; off < bytes; off += req)
        obj_xfer(obj, access, buf + off, off, bytes - off < req ? bytes - off : req);
}

/* ------------------------------------------------------------------ large files */

static void fill(uint8_t *buf, uint64_t bytes, int rep)
{
    uint64_t *w = (uint64_t *)buf;
    for (uint64_t i = 0; i < bytes / 8; i++)
        w[i] = i * 0x9e3779b97f4a7c15ull + (uint64_t)rep;
}

/* The directory of a side of files in dirs (indexed by side). */
#define DIR_OF(dirs, s) ((dirs)[(s) == REF ? 2 : (s) == MNT ? 0 : 1])

typedef struct large {
    const char *dirs[3]; /* MOUNT_DIR, RAW_DIR, REF_DIR */
    uint64_t bytes;
    uint8_t *wbuf, *rbuf; /* rbuf: the steady state's read buffer, touched once */
    pdcid_t obj[NSIDES];
} large_t;

/* Write and read back one side's file or object; the first repetition reads into a fresh
 * malloc'd buffer, as a program's first read does. */
static void large_side(large_t *L, enum side s, int rep)
{
    char path[4096];
    if (IS_FILES(s))
        path_of(path, sizeof(path), DIR_OF(L->dirs, s), "big.%d", rep);
    if (s == PDC_REQ || s == PDC_ONE) {
        char name[64];
        snprintf(name, sizeof(name), "mountbench.big.%d.%d", rep, (int)s);
        L->obj[s] = obj_create(name, L->bytes);
    }
    sample_t b = phase_begin(s);
    if (IS_FILES(s))
        file_write(path, L->wbuf, L->bytes);
    else
        obj_io(L->obj[s], PDC_WRITE, L->wbuf, L->bytes, s == PDC_REQ ? REQ : L->bytes);
    phase_end(F_WRITE, s, rep, b);

    uint8_t *rbuf = rep == 0 ? malloc(L->bytes) : L->rbuf;
    if (rbuf == NULL)
        die("out of memory for a read buffer of %" PRIu64 " bytes", L->bytes);
    b = phase_begin(s);
    if (IS_FILES(s))
        file_read(path, rbuf, L->bytes);
    else
        obj_io(L->obj[s], PDC_READ, rbuf, L->bytes, s == PDC_REQ ? REQ : L->bytes);
    phase_end(F_READ, s, rep, b);
    if (memcmp(rbuf, L->wbuf, L->bytes) != 0)
        die("%s: the bytes read back differ from those written (repetition %d)", side_name[s], rep);
    if (rep == 0)
        free(rbuf);
}

static void large_drop(large_t *L, enum side s, int rep)
{
    char path[4096];
    if (IS_FILES(s)) {
        path_of(path, sizeof(path), DIR_OF(L->dirs, s), "big.%d", rep);
        if (unlink(path) != 0)
            die("removing %s: %s", path, strerror(errno));
    } else {
        PDC_OK(PDCobj_del(L->obj[s]), "PDCobj_del");
        PDCobj_close(L->obj[s]);
        L->obj[s] = 0;
    }
}

static void large_rep(large_t *L, int rep, double settle)
{
    fill(L->wbuf, L->bytes, rep);
    for (int k = 0; k < NSIDES; k++) {
        enum side s = (enum side)((k + rep) % NSIDES);
        if (rep == 0)
            sleep_s(settle);
        large_side(L, s, rep);
        large_drop(L, s, rep);
    }
}

/* ------------------------------------------------------------------ many small files */

typedef struct small {
    const char *dirs[3]; /* MOUNT_DIR, RAW_DIR, REF_DIR */
    int files;
    uint8_t wbuf[SMALL], rbuf[SMALL];
} small_t;

static const enum side small_sides[] = {RAW, MNT, REF, PDC_REQ};
#define NSMALL 4

static void small_name(char *out, size_t len, small_t *S, enum side s, int rep, int i)
{
    if (s == PDC_REQ)
        snprintf(out, len, "mountbench.small.%d.%d", rep, i);
    else
        path_of(out, len, DIR_OF(S->dirs, s), "mdt.%d/f%d", rep, i);
}

static void small_phase(small_t *S, enum fig f, enum side s, int rep)
{
    char name[4096];
    struct stat st;
    sample_t b = phase_begin(s);
    for (int i = 0; i < S->files; i++) {
        small_name(name, sizeof(name), S, s, rep, i);
        if (s == PDC_REQ) {
            pdcid_t o = f == F_CREATE ? obj_create(name, SMALL)
                                      : PDC_ID(PDCobj_open(name, pdc), "PDCobj_open");
            if (f == F_CREATE)
                obj_xfer(o, PDC_WRITE, S->wbuf, 0, SMALL);
            else if (f == F_READ4K)
                obj_xfer(o, PDC_READ, S->rbuf, 0, SMALL);
            else
                PDC_OK(PDCobj_del(o), "PDCobj_del");
            PDCobj_close(o);
        } else if (f == F_CREATE) {
            int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0 || write(fd, S->wbuf, SMALL) != SMALL || close(fd) != 0)
                die("creating %s: %s", name, strerror(errno));
        } else if (f == F_STAT || f == F_STAT_LATE) {
            if (stat(name, &st) != 0 || st.st_size != SMALL)
                die("stat of %s: %s", name, strerror(errno));
        } else if (f == F_READ4K) {
            int fd = open(name, O_RDONLY | O_CLOEXEC);
            if (fd < 0 || read(fd, S->rbuf, SMALL) != SMALL)
                die("reading %s: %s", name, strerror(errno));
            close(fd);
        } else if (unlink(name) != 0) {
            die("removing %s: %s", name, strerror(errno));
        }
        if (f == F_READ4K && memcmp(S->rbuf, S->wbuf, SMALL) != 0)
            die("%s: the bytes read back differ from those written", name);
    }
    phase_end(f, s, rep, b);
}

static void small_rep(small_t *S, int rep)
{
    memset(S->wbuf, 'a' + rep % 26, SMALL);
    char dir[4096];
    for (int k = 0; k < 3; k++) {
        path_of(dir, sizeof(dir), S->dirs[k], "mdt.%d", rep);
        if (mkdir(dir, 0755) != 0)
            die("creating %s: %s", dir, strerror(errno));
    }
    /* the sides take turns in which goes first; stat>1s needs the wait, once for all */
    static const enum fig before[] = {F_CREATE, F_STAT},
                          after[] = {F_STAT_LATE, F_READ4K, F_REMOVE};
    for (size_t p = 0; p < 2; p++)
        for (int k = 0; k < NSMALL; k++) {
            enum side s = small_sides[(k + rep) % NSMALL];
            if (!(s == PDC_REQ && before[p] == F_STAT))
                small_phase(S, before[p], s, rep);
        }
    sleep_s(ATTR_WAIT_S);
    for (size_t p = 0; p < 3; p++)
        for (int k = 0; k < NSMALL; k++) {
            enum side s = small_sides[(k + rep) % NSMALL];
            if (!(s == PDC_REQ && after[p] == F_STAT_LATE))
                small_phase(S, after[p], s, rep);
        }
    for (int k = 0; k < 3; k++) {
        path_of(dir, sizeof(dir), S->dirs[k], "mdt.%d", rep);
        if (rmdir(dir) != 0)
            die("removing %s: %s", dir, strerror(errno));
    }
}

/* ------------------------------------------------------------------ report */

static double rate(enum fig f, double secs, uint64_t bytes, int files)
{
    return f <= F_READ ? (double)bytes / secs / 1e6 : (double)files / secs;
}

static void cpu_share(char *out, size_t len, enum fig f, enum side s)
{
    double wall = 0, app = 0, mnt = 0, dmn = 0;
    int known_m = 1, known_d = 1;
    for (int r = nreps > 1 ? 1 : 0; r < nreps; r++) {
        sample_t *x = &res[f][s][r];
        wall += x->secs, app += x->app_cpu, mnt += x->mount_cpu, dmn += x->daemon_cpu;
        known_m &= x->mount_cpu >= 0;
        known_d &= x->daemon_cpu >= 0;
    }
    char m[16] = "-", d[16] = "-";
    if (known_m)
        snprintf(m, sizeof(m), "%.0f%%", 100 * mnt / wall);
    if (known_d)
        snprintf(d, sizeof(d), "%.0f%%", 100 * dmn / wall);
    snprintf(out, len, "%3.0f%% %5s %5s", 100 * app / wall, m, d);
}

/* The median over the steady repetitions (or the first, if none) of side s's rate against side
 * base's in the same repetition. */
static double ratio_to(enum fig f, enum side s, enum side base)
{
    double ratio[BENCH_MAX_REPEAT];
    int n = 0;
    for (int r = 1; r < nreps; r++)
        ratio[n++] = res[f][base][r].secs / res[f][s][r].secs;
    return n ? bench_median(ratio, n) : res[f][base][0].secs / res[f][s][0].secs;
}

/* The table (results 0), then the same as RESULT lines (results 1). */
static void report(uint64_t bytes, int files, int results)
{
    if (!results)
        printf("%-8s %-9s %10s %6s %10s %6s %6s %6s %5s %5s\n", "figure", "side", "first", "ratio",
               "steady", "ratio", "/ref", "app", "fs", "bbd");
    for (int f = 0; f < NFIGS; f++) {
        for (int s = 0; s < NSIDES; s++) {
            if (!res[f][s][0].done)
                continue;
            double steady[BENCH_MAX_REPEAT];
            int n = 0;
            for (int r = 1; r < nreps; r++)
                steady[n++] = rate((enum fig)f, res[f][s][r].secs, bytes, files);
            double first = rate((enum fig)f, res[f][s][0].secs, bytes, files);
            double first_ratio = res[f][RAW][0].secs / res[f][s][0].secs;
            double st = n ? bench_median(steady, n) : first;
            double st_ratio = ratio_to((enum fig)f, (enum side)s, RAW);
            double ref_ratio = ratio_to((enum fig)f, (enum side)s, REF);
            /* a small file through PDC is an object of its own: no request size */
            const char *name = f >= F_CREATE && s == PDC_REQ ? "pdc" : side_name[s];
            if (results) {
                printf("RESULT name=mount_%s side=%s unit=%s first=%.1f first_ratio=%.3f "
                       "steady=%.1f steady_ratio=%.3f steady_reps=%d steady_ref_ratio=%.3f\n",
                       fig_name[f], name, f <= F_READ ? "MB/s" : "files/s", first, first_ratio, st,
                       st_ratio, n, ref_ratio);
                continue;
            }
            char cpu[64];
            cpu_share(cpu, sizeof(cpu), (enum fig)f, s);
            printf("%-8s %-9s %10.0f %6.2f %10.0f %6.2f %6.2f %s\n", fig_name[f], name, first,
                   first_ratio, st, st_ratio, ref_ratio, cpu);
            printf("%19s limit: %s\n", "", limits[f][s] ? limits[f][s] : "");
        }
    }
}

static void usage(FILE *f)
{
    fprintf(
        f, "usage: " PROG " [--mib N] [--files N] [--reps R] [--settle S] [--ref-pid PID]\n"
           "                       MOUNT_DIR RAW_DIR REF_DIR\n"
           "\n"
           "Inside a job with --pdc mount=yes (bench/mount.sh starts one): times the same work\n"
           "in MOUNT_DIR (a directory in the mount), in RAW_DIR (on the node-local filesystem of\n"
           "the daemons' data), in REF_DIR (in a reference FUSE filesystem over that filesystem:\n"
           "libfuse's passthrough_ll) and through the PDC API, and prints each rate, its ratio to\n"
           "raw and to the reference (/ref), and the CPU used meanwhile by this program, the\n"
           "side's FUSE process (fs) and the daemons.\n"
           "\n"
           "  --mib N      size of the large file, MiB, written and read in 1 MiB requests "
           "(1024)\n"
           "  --files N    small files of 4 KiB (mdtest-like create, stat, read, remove; 2000)\n"
           "  --reps R     steady-state repetitions after the job's first (3)\n"
           "  --settle S   seconds each side waits before its first write (10)\n"
           "  --ref-pid P  the reference filesystem's process, for its CPU (fs column)\n"
           "PDCBB_BENCH_QUICK=1: --mib 64 --files 200 --reps 1 --settle 0 (a smoke run).\n");
}

int main(int argc, char **argv)
{
    uint64_t mib = 1024;
    long files = 2000, reps = 3;
    double settle = 10;
    const char *dirs[3] = {NULL, NULL, NULL};
    long rpid = 0;
    int ndirs = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *end = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--mib") == 0 && i + 1 < argc) {
            mib = strtoull(argv[++i], &end, 10);
        } else if (strcmp(a, "--files") == 0 && i + 1 < argc) {
            files = strtol(argv[++i], &end, 10);
        } else if (strcmp(a, "--reps") == 0 && i + 1 < argc) {
            reps = strtol(argv[++i], &end, 10);
        } else if (strcmp(a, "--settle") == 0 && i + 1 < argc) {
            settle = strtod(argv[++i], &end);
        } else if (strcmp(a, "--ref-pid") == 0 && i + 1 < argc) {
            rpid = strtol(argv[++i], &end, 10);
        } else if (a[0] != '-' && ndirs < 3) {
            dirs[ndirs++] = a;
        } else {
            fprintf(stderr, PROG ": unknown or extra argument '%s' (see --help)\n", a);
            return 2;
        }
        if (end && *end) {
            fprintf(stderr, PROG ": %s wants a number, not '%s'\n", a, argv[i]);
            return 2;
        }
    }
    const char *quick = getenv("PDCBB_BENCH_QUICK");
    if (quick && strcmp(quick, "1") == 0)
        mib = 64, files = 200, reps = 1, settle = 0;
    if (ndirs != 3 || rpid < 0 || mib == 0 || mib > ((uint64_t)1 << 20) || files < 1 ||
        files > 10000000 || reps < 0 || reps >= BENCH_MAX_REPEAT ||
        !(settle >= 0 && settle <= 600)) {
        usage(stderr);
        return 2;
    }
    nreps = (int)reps + 1;
    ref_pid = (pid_t)rpid;
    for (int k = 0; k < 3; k++) {
        struct stat st;
        if (stat(dirs[k], &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, PROG ": %s is not a directory\n", dirs[k]);
            return 2;
        }
    }
    pdc = PDCinit("pdc");
    if (pdc == 0)
        pdc_fail("PDCinit (run me inside a job: bench/mount.sh)");
    pdcid_t cprop = PDC_ID(PDCprop_create(PDC_CONT_CREATE, pdc), "PDCprop_create");
    cont = PDC_ID(PDCcont_create("mountbench", cprop), "PDCcont_create");
    PDCprop_close(cprop);
    bench_find_daemons();
    find_mount_pid();

    large_t L = {.dirs = {dirs[0], dirs[1], dirs[2]}, .bytes = mib << 20};
    L.wbuf = malloc(L.bytes);
    L.rbuf = malloc(L.bytes);
    if (L.wbuf == NULL || L.rbuf == NULL)
        die("out of memory for two buffers of %" PRIu64 " MiB", mib);
    small_t *S = calloc(1, sizeof(*S));
    if (S == NULL)
        die("out of memory");
    memcpy(S->dirs, dirs, sizeof(S->dirs));
    S->files = (int)files;

    printf("%s: %" PRIu64 " MiB files in 1 MiB requests, %ld files of 4 KiB; first = the job's "
           "first repetition, steady = median of %ld more; ratio = rate / raw's in the same "
           "repetition; /ref = rate / fuse-ref's; app, fs, bbd = CPU used meanwhile by this "
           "program, the "
           "side's FUSE process and the daemons (share of the wall time, steady)\n",
           PROG, mib, files, reps);
    fflush(stdout);
    for (int rep = 0; rep < nreps; rep++) {
        if (rep == 1)
            memset(L.rbuf, 0, L.bytes); /* the steady state reads into memory it has */
        large_rep(&L, rep, settle);
        small_rep(S, rep);
    }
    report(L.bytes, S->files, 0);
    report(L.bytes, S->files, 1);
    free(L.wbuf);
    free(L.rbuf);
    free(S);
    PDCcont_close(cont);
    PDCclose(pdc);
    return 0;
}
