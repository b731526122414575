/*
 * pdc_remote_bench - what one client's calls to another node's daemon cost: metadata round
 * trips and region writes and reads, every object on a daemon of another node. Run it twice,
 * once with PDCBB_FORWARD=never (straight to that daemon) and once with PDCBB_FORWARD=always
 * (through this node's daemon, FORWARD), to see what forwarding costs (bench/forward.sh does,
 * docs/PERFORMANCE.md "Forwarding").
 *
 *   pdc_remote_bench [--ops N] [--sizes LIST] [--total BYTES] [--repeat R]
 *
 * Run inside a job of N >= 2 daemons whose first daemon (rank 0) is this process's node's, e.g.
 * `pdcbb run --nodes 2 -- pdc_remote_bench`: objects are named so that their home daemon is
 * not rank 0 (FNV-1a of the name mod N, docs/PROTOCOL.md "Ids and placement"), and the first
 * object's metadata server is checked to be another daemon.
 *
 * Metadata: --ops object creates, then as many tag puts, tag gets and opens by name (ops/s).
 * Data, per region size: --repeat fresh objects of --total bytes (PDC_OBJ_STATIC, on their
 * home daemon), each written region by region from a plain malloc'ed buffer and read back
 * (every byte checked). "first" is each object's first region (a fresh object's first write:
 * what a program that writes once per job sees), "steady" the rest; medians of the repetitions.
 * Prints a table and RESULT lines: 'RESULT name=remote_PHASE forward=F ... '.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "pdc.h"
#include "pdcbb_proto.h"

static const char *prog = "pdc_remote_bench";
static pdcid_t pdc, cont;

void pdc_fail(const char *what)
{
    bench_pdc_report(prog, -1, what);
    exit(1);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: pdc_remote_bench [--ops N] [--sizes LIST] [--total BYTES] [--repeat R]\n"
               "One client's metadata calls and region transfers to another node's daemon\n"
               "(in a job of 2 or more daemons whose daemon 0 is this node's).\n"
               "  --ops N        object creates, tag puts, tag gets and opens (default 20000)\n"
               "  --sizes LIST   region sizes, comma-separated (default 64K,1M,16M,64M)\n"
               "  --total BYTES  bytes per object, one object per size and repetition\n"
               "                 (default 256M; at least one region)\n"
               "  --repeat R     fresh objects per size, medians reported (default 3)\n"
               "Set PDCBB_FORWARD=never or always to compare the straight path with forwarding.\n"
               "Run inside a job:  pdcbb run --nodes 2 -- pdc_remote_bench\n");
}

/* The next name (prefix, counter) whose home daemon is not rank 0. */
static void remote_name(char *out, size_t len, const char *prefix, unsigned *counter,
                        unsigned ndaemons)
{
    do
        snprintf(out, len, "%s-%u", prefix, (*counter)++);
    while (pdcbb_home_server(out, ndaemons) == 0);
}

static const char *forward_mode(void)
{
    const char *f = getenv("PDCBB_FORWARD");
    return f && *f ? f : "auto";
}

static void result(const char *phase, const char *extra, double value, const char *unit)
{
    printf("RESULT name=remote_%s forward=%s %s%s%s=%.1f\n", phase, forward_mode(), extra,
           extra[0] ? " " : "", unit, value);
}

static void meta(unsigned ndaemons, unsigned ops)
{
    char name[64];
    unsigned counter = 0;
    pdcid_t *objs = calloc(ops, sizeof(*objs));
    char(*names)[64] = calloc(ops, 64);
    if (objs == NULL || names == NULL) {
        fprintf(stderr, "%s: out of memory\n", prog);
        exit(1);
    }
    for (unsigned i = 0; i < ops; i++)
        remote_name(names[i], 64, "meta", &counter, ndaemons);
    pdcid_t prop = PDC_ID(PDCprop_create(PDC_OBJ_CREATE, pdc), "PDCprop_create");
    double t0 = now();
    for (unsigned i = 0; i < ops; i++)
        objs[i] = PDC_ID(PDCobj_create(cont, names[i], prop), "PDCobj_create");
    double create = now() - t0;
    struct pdc_obj_info *info = PDCobj_get_info(objs[0]);
    if (info == NULL || info->metadata_server_id == 0) {
        fprintf(stderr,
                "%s: object %s is on daemon %u, not another node's: is daemon 0 of the "
                "job's %u this node's?\n",
                prog, names[0], info ? info->metadata_server_id : 0, ndaemons);
        exit(1);
    }
    int v = 7;
    t0 = now();
    for (unsigned i = 0; i < ops; i++)
        PDC_OK(PDCobj_put_tag(objs[i], "t", &v, PDC_INT, sizeof(v)), "PDCobj_put_tag");
    double put = now() - t0;
    t0 = now();
    for (unsigned i = 0; i < ops; i++) {
        void *val = NULL;
        pdc_var_type_t type;
        psize_t size = 0;
        PDC_OK(PDCobj_get_tag(objs[i], "t", &val, &type, &size), "PDCobj_get_tag");
        if (size != sizeof(v) || memcmp(val, &v, sizeof(v)) != 0) {
            fprintf(stderr, "%s: tag of %s read back wrong\n", prog, names[i]);
            exit(1);
        }
        free(val);
    }
    double get = now() - t0;
    for (unsigned i = 0; i < ops; i++)
        PDCobj_close(objs[i]);
    t0 = now();
    for (unsigned i = 0; i < ops; i++) {
        objs[i] = PDC_ID(PDCobj_open(names[i], pdc), "PDCobj_open");
        PDCobj_close(objs[i]);
    }
    double open = now() - t0;
    PDCprop_close(prop);
    printf("%-8s %10s %12s %12s\n", "phase", "ops", "ops/s", "us/op");
    const char *phases[] = {"create", "tag_put", "tag_get", "open"};
    double secs[] = {create, put, get, open};
    for (int i = 0; i < 4; i++) {
        printf("%-8s %10u %12.0f %12.1f\n", phases[i], ops, ops / secs[i], secs[i] / ops * 1e6);
        snprintf(name, sizeof(name), "ops=%u", ops);
        char phase[32];
        snprintf(phase, sizeof(phase), "%s", phases[i]);
        result(phase, name, ops / secs[i], "ops_per_s");
    }
    free(objs);
    free(names);
}

/* One synchronous transfer of n bytes at off of obj; seconds. */
static double xfer(pdcid_t obj, uint8_t *buf, uint64_t off, uint64_t n, pdc_access_t acc)
{
    uint64_t zero = 0;
    pdcid_t lr = PDC_ID(PDCregion_create(1, &zero, &n), "PDCregion_create(local)");
    pdcid_t rr = PDC_ID(PDCregion_create(1, &off, &n), "PDCregion_create(remote)");
    double t0 = now();
    pdcid_t t =
        PDC_ID(PDCregion_transfer_create(buf, acc, obj, lr, rr), "PDCregion_transfer_create");
    PDC_OK(PDCregion_transfer_start(t), "PDCregion_transfer_start");
    PDC_OK(PDCregion_transfer_wait(t), "PDCregion_transfer_wait");
    double dt = now() - t0;
    PDCregion_transfer_close(t);
    PDCregion_close(lr);
    PDCregion_close(rr);
    return dt;
}

static void fill(uint8_t *b, uint64_t n, uint64_t salt)
{
    uint64_t *w = (uint64_t *)b;
    for (uint64_t i = 0; i < n / 8; i++)
        w[i] = (i + 1) * 0x9E3779B97F4A7C15ULL ^ salt;
}

static double mbps(uint64_t bytes, double s)
{
    return s > 0 ? (double)bytes / s / 1e6 : 0;
}

/*
 * Write (acc PDC_WRITE, from buf) or read back (PDC_READ, into buf, each region checked against
 * the pattern rebuilt in check) regions regions of size bytes of obj one after the other; the
 * first region's MB/s in *first, the rest's in *steady (the first's when there is one only).
 */
static void one_pass(pdcid_t obj, const char *name, pdc_access_t acc, uint8_t *buf, uint8_t *check,
                     uint64_t size, uint64_t regions, uint64_t salt, double *first, double *steady)
{
    double t_first = 0, t_rest = 0;
    for (uint64_t i = 0; i < regions; i++) {
        if (acc == PDC_WRITE)
            fill(buf, size, i ^ salt);
        double dt = xfer(obj, buf, i * size, size, acc);
        if (check) {
            fill(check, size, i ^ salt);
            if (memcmp(check, buf, size) != 0) {
                fprintf(stderr, "%s: region %llu of %s read back wrong\n", prog,
                        (unsigned long long)i, name);
                exit(1);
            }
        }
        if (i == 0)
            t_first = dt;
        else
            t_rest += dt;
    }
    *first = mbps(size, t_first);
    *steady = regions > 1 ? mbps((regions - 1) * size, t_rest) : *first;
}

static void data(unsigned ndaemons, const uint64_t *sizes, int nsizes, uint64_t total, int repeat)
{
    unsigned counter = 0;
    printf("\n%-8s %8s %14s %14s %14s %14s\n", "size", "regions", "write first", "write steady",
           "read first", "read steady");
    for (int s = 0; s < nsizes; s++) {
        uint64_t size = sizes[s], regions = total / size ? total / size : 1;
        uint64_t bytes = regions * size;
        uint8_t *buf = malloc(size), *back = malloc(size);
        if (buf == NULL || back == NULL) {
            fprintf(stderr, "%s: out of memory for %llu-byte regions\n", prog,
                    (unsigned long long)size);
            exit(1);
        }
        double wf[BENCH_MAX_REPEAT], ws[BENCH_MAX_REPEAT], rf[BENCH_MAX_REPEAT],
            rs[BENCH_MAX_REPEAT];
        for (int r = 0; r < repeat; r++) {
            char name[64];
            remote_name(name, sizeof(name), "data", &counter, ndaemons);
            pdcid_t prop = PDC_ID(PDCprop_create(PDC_OBJ_CREATE, pdc), "PDCprop_create");
            PDC_OK(PDCprop_set_obj_type(prop, PDC_UINT8), "PDCprop_set_obj_type");
            PDC_OK(PDCprop_set_obj_dims(prop, 1, &bytes), "PDCprop_set_obj_dims");
            pdcid_t obj = PDC_ID(PDCobj_create(cont, name, prop), "PDCobj_create");
            uint64_t salt = (uint64_t)r << 32;
            one_pass(obj, name, PDC_WRITE, buf, NULL, size, regions, salt, &wf[r], &ws[r]);
            one_pass(obj, name, PDC_READ, back, buf, size, regions, salt, &rf[r], &rs[r]);
            PDCobj_close(obj);
            PDCprop_close(prop);
        }
        char label[32], extra[64];
        snprintf(label, sizeof(label), "%lluK", (unsigned long long)(size >> 10));
        printf("%-8s %8llu %9.0f MB/s %9.0f MB/s %9.0f MB/s %9.0f MB/s\n", label,
               (unsigned long long)regions, bench_median(wf, repeat), bench_median(ws, repeat),
               bench_median(rf, repeat), bench_median(rs, repeat));
        snprintf(extra, sizeof(extra), "size=%llu regions=%llu", (unsigned long long)size,
                 (unsigned long long)regions);
        result("write_first", extra, bench_median(wf, repeat), "mb_per_s");
        result("write_steady", extra, bench_median(ws, repeat), "mb_per_s");
        result("read_first", extra, bench_median(rf, repeat), "mb_per_s");
        result("read_steady", extra, bench_median(rs, repeat), "mb_per_s");
        free(buf);
        free(back);
    }
}

int main(int argc, char **argv)
{
    unsigned ndaemons, ops = 20000;
    int repeat = 3, nsizes = 0;
    uint64_t total = 256ull << 20, sizes[32];
    const char *size_list = "64K,1M,16M,64M";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (v == NULL) {
            fprintf(stderr, "%s: %s needs a value (or unknown option)\n", prog, a);
            usage(stderr);
            return 2;
        }
        char *end = NULL;
        if (strcmp(a, "--ops") == 0)
            ops = (unsigned)strtoul(v, &end, 10);
        else if (strcmp(a, "--repeat") == 0)
            repeat = (int)strtol(v, &end, 10);
        else if (strcmp(a, "--total") == 0)
            total = bench_parse_size(v, 1);
        else if (strcmp(a, "--sizes") == 0)
            size_list = v;
        else {
            fprintf(stderr, "%s: unknown option '%s'\n", prog, a);
            usage(stderr);
            return 2;
        }
        if ((end && *end) || (strcmp(a, "--ops") == 0 && ops < 1) ||
            (strcmp(a, "--repeat") == 0 && (repeat < 1 || repeat > BENCH_MAX_REPEAT)) ||
            (strcmp(a, "--total") == 0 && total == 0)) {
            fprintf(stderr, "%s: bad value '%s' for %s\n", prog, v, a);
            return 2;
        }
        i++;
    }
    char list[256];
    snprintf(list, sizeof(list), "%s", size_list);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        uint64_t s = bench_parse_size(tok, 1);
        if (s == 0 || s % 8 != 0 || s > PDCBB_DATA_BULK_MAX || nsizes == 32) {
            fprintf(stderr,
                    "%s: bad region size '%s' in --sizes (a multiple of 8 bytes, at most "
                    "256M, at most 32 sizes)\n",
                    prog, tok);
            return 2;
        }
        sizes[nsizes++] = s;
    }
    if (getenv("PDCBB_BENCH_QUICK")) {
        ops = ops < 500 ? ops : 500;
        total = total < (16u << 20) ? total : (16u << 20);
        repeat = 1;
    }
    pdc = PDC_ID(PDCinit("pdc_remote_bench"), "PDCinit");
    ndaemons = (unsigned)PDCbb_nservers();
    if (ndaemons < 2) {
        fprintf(stderr, "%s: the job has %u daemon(s): run it in a job of 2 nodes or more\n", prog,
                ndaemons);
        return 1;
    }
    pdcid_t cprop = PDC_ID(PDCprop_create(PDC_CONT_CREATE, pdc), "PDCprop_create");
    cont = PDC_ID(PDCcont_create("remote_bench", cprop), "PDCcont_create");
    printf("one client, objects on another node's daemon; PDCBB_FORWARD=%s\n\n", forward_mode());
    meta(ndaemons, ops);
    data(ndaemons, sizes, nsizes, total, repeat);
    PDCcont_close(cont);
    PDCprop_close(cprop);
    PDCclose(pdc);
    return 0;
}
