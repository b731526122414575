/*
 * pdc_load - load with a checker, for the reliability suite (scripts/reliability.sh,
 * tests/bats/35-reliability.bats, docs/RELIABILITY.md).
 *
 *   pdc_load write --id N --seconds S --log FILE [--seed X] [--objects M]
 *                  [--keep-going [--stop-after F]]
 *   pdc_load check LOG...
 *
 * write: one client of the job mixing, for S seconds, object creates, tag puts, whole-region
 * writes (every placement) and KV sets, in container "load" and KV object "load-kv" (created by
 * whichever client comes first). Every operation the burst buffer acknowledged is appended to
 * FILE (flushed at once) as "obj NAME PLACEMENT", "tag NAME VALUE", "data NAME SEED" or
 * "kv KEY SEED", so a client killed at any moment has logged exactly what it was told is stored
 * (an operation in flight when the client was killed is logged as tried). A failed operation is
 * an error (exit 1) unless --keep-going (faults are being injected): then it is counted and the
 * client goes on, until F operations failed (--stop-after F: a fault that lasts). Before each tag
 * put, region write and KV set the client logs what it is about to do ("trytag", "trydata",
 * "trykv"): an operation that failed, or whose client was killed before the answer, may still have
 * been applied (a reply lost with its daemon), and the checker allows for it. --objects M: at most
 * M objects (then the creates become region writes), so the data the client stores is bounded
 * (M x 4 KiB) however fast the machine is. Prints "wrote N operations (E failed)".
 *
 * check: reads the logs and checks, in the job or from a drain (PDCBB_DRAINED_DIR), that every
 * object is there with its last logged data and tag, and every KV key with its last logged
 * value. After a failed operation a name may hold its last acknowledged value or the failed
 * one's; a failed region write may also have been applied in part ("torn": the region's
 * content is undefined after a failed write, as after a failed pwrite). Prints "checked O
 * objects, T tags, D data, K kv records: M missing, B bad (N torn by a failed write)" and exits
 * 1 if anything is missing or bad.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pdc.h"
#include "pdc_kv.h"
#include "prog_util.h"

#define OBJ_BYTES 4096

static pdcid_t pdc, cont, kv;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pattern(uint64_t seed, uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)((seed * 2654435761u + i * 40503u) >> 13);
}

/* The shared container and KV object: created by the first client, opened by the others. */
static int open_shared(int create)
{
    for (int tries = 0; tries < 50; tries++) {
        if (create && cont == 0) {
            pdcid_t prop = PDCprop_create(PDC_CONT_CREATE, pdc);
            cont = PDCcont_create("load", prop);
            PDCprop_close(prop);
        }
        if (cont == 0)
            cont = PDCcont_open("load", pdc);
        if (cont != 0 && kv == 0) {
            pdc_kv_info_t info = {.key_type = PDC_KV_STRING};
            if (create)
                kv = PDCkv_create(cont, "load-kv", &info);
            if (kv == 0)
                kv = PDCkv_open(cont, "load-kv");
        }
        if (cont != 0 && kv != 0)
            return 0;
        usleep(20000);
    }
    fprintf(stderr, "pdc_load: cannot create or open container 'load' / KV 'load-kv': %s: %s\n",
            PDCbb_last_error_name(), PDCbb_last_error_message());
    return -1;
}

static char create_error[1200]; /* why the last create_obj failed */

static pdcid_t create_obj(const char *name, int placement)
{
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t dims[1] = {OBJ_BYTES};
    PDCprop_set_obj_dims(prop, 1, dims);
    PDCprop_set_obj_type(prop, PDC_UINT8);
    PDCprop_set_obj_transfer_region_type(prop, prog_parts[placement]);
    pdcid_t id = PDCobj_create(cont, name, prop);
    if (id == 0) /* kept: PDCprop_close resets the last error */
        snprintf(create_error, sizeof(create_error), "%s: %s", PDCbb_last_error_name(),
                 PDCbb_last_error_message());
    PDCprop_close(prop);
    return id;
}

/* Append one line to the log, at once (a kill -9 loses nothing written before it). */
static void log_line(FILE *log, const char *line)
{
    fprintf(log, "%s\n", line);
    fflush(log);
}

static const char *const op_names[] = {"object create", "tag put", "region write", "KV set"};

typedef struct own_obj {
    char name[64];
    pdcid_t id;
} own_obj_t;

static int cmd_write(int id, double seconds, const char *logpath, uint64_t seed, int keep_going,
                     uint64_t stop_after, size_t max_objects)
{
    FILE *log = fopen(logpath, "a");
    if (log == NULL) {
        perror(logpath);
        return 2;
    }
    if (open_shared(1) != 0)
        return 1;
    own_obj_t *objs = NULL;
    size_t nobj = 0, cap = 0;
    uint64_t ops = 0, failed = 0, kvn = 0;
    uint8_t buf[OBJ_BYTES];
    srand((unsigned)(seed * 7919 + (uint64_t)id));
    double end = now() + seconds;
    while (now() < end) {
        int what = nobj == 0 ? 0 : rand() % 4;
        if (what == 0 && max_objects > 0 && nobj >= max_objects)
            what = 2;
        char line[160], tried[160] = "";
        int ok = 0;
        if (what == 0) {
            if (nobj == cap) {
                cap = cap ? 2 * cap : 64;
                own_obj_t *g = realloc(objs, cap * sizeof(*objs));
                if (g == NULL)
                    break;
                objs = g;
            }
            own_obj_t *o = &objs[nobj];
            snprintf(o->name, sizeof(o->name), "p%d-o%zu", id, nobj);
            int placement = (int)(nobj % 4);
            if ((o->id = create_obj(o->name, placement)) != 0) {
                nobj++;
                ok = 1;
                snprintf(line, sizeof(line), "obj %s %s", o->name, prog_part_names[placement]);
            }
        } else if (what == 1) {
            own_obj_t *o = &objs[(size_t)rand() % nobj];
            int64_t v = (int64_t)rand() * 1000 + (int64_t)ops;
            snprintf(line, sizeof(line), "tag %s %" PRId64, o->name, v);
            snprintf(tried, sizeof(tried), "try%s", line);
            log_line(log, tried);
            ok = PDCobj_put_tag(o->id, "v", &v, PDC_INT64, sizeof(v)) == SUCCEED;
        } else if (what == 2) {
            own_obj_t *o = &objs[(size_t)rand() % nobj];
            uint64_t s = seed * 1000003u + (uint64_t)id * 7777u + ops;
            uint64_t off = 0, size = OBJ_BYTES;
            pattern(s, buf, sizeof(buf));
            snprintf(line, sizeof(line), "data %s %" PRIu64, o->name, s);
            snprintf(tried, sizeof(tried), "try%s", line);
            log_line(log, tried);
            ok = prog_transfer(o->id, PDC_WRITE, buf, 1, &off, &size);
        } else {
            char key[64];
            uint64_t s = seed * 1000003u + (uint64_t)id * 7777u + ops;
            snprintf(key, sizeof(key), "p%d-k%" PRIu64, id, kvn % 500);
            kvn++;
            pattern(s, buf, 64);
            pdc_kv_key_t k = PDC_KV_KEY_STR(key);
            snprintf(line, sizeof(line), "kv %s %" PRIu64, key, s);
            snprintf(tried, sizeof(tried), "try%s", line);
            log_line(log, tried);
            ok = PDCkv_set(kv, 0, &k, buf, 64, NULL) == SUCCEED;
        }
        ops++;
        if (ok) {
            log_line(log, line);
        } else {
            failed++;
            char why[1300];
            if (what == 0)
                snprintf(why, sizeof(why), "%s", create_error);
            else if (what == 2) /* prog_transfer kept it: the closes after the failure reset it */
                snprintf(why, sizeof(why), "%s", prog_xfer_error);
            else
                snprintf(why, sizeof(why), "%s: %s", PDCbb_last_error_name(),
                         PDCbb_last_error_message());
            if (failed <= 3 || !keep_going)
                fprintf(stderr, "pdc_load %d: operation %" PRIu64 " (%s) failed: %s\n", id, ops,
                        op_names[what], why);
            if (!keep_going || (stop_after > 0 && failed >= stop_after))
                break;
            usleep(50000);
        }
    }
    for (size_t i = 0; i < nobj; i++)
        PDCobj_close(objs[i].id);
    free(objs);
    fclose(log);
    printf("wrote %" PRIu64 " operations (%" PRIu64 " failed)\n", ops - failed, failed);
    return failed && !keep_going ? 1 : 0;
}

/* One logged fact: kind ('o' object, 't' tag, 'd' data, 'k' kv), name, value, log order. */
typedef struct fact {
    char kind;
    int failed; /* "try<kind>" not followed by its acknowledgement: it may have been applied */
    char name[64];
    uint64_t value;
    uint64_t order;
} fact_t;

static int cmp_fact(const void *a, const void *b)
{
    const fact_t *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return (x->order > y->order) - (x->order < y->order);
}

/* 1 if the len bytes at got are what fact from (acknowledged) or any failed fact after it up
 * to last left there, else 0. */
static int match(const fact_t *f, size_t from, size_t last, const void *got, size_t len)
{
    uint8_t want[OBJ_BYTES];
    for (size_t k = from; k <= last; k++) {
        if (f[k].kind == 't') {
            int64_t v = (int64_t)f[k].value;
            if (len == 8 && memcmp(got, &v, 8) == 0)
                return 1;
            continue;
        }
        pattern(f[k].value, want, len);
        if (memcmp(got, want, len) == 0)
            return 1;
    }
    return 0;
}

static int cmd_check(int nlogs, char **logs)
{
    fact_t *f = NULL;
    size_t n = 0, cap = 0;
    for (int l = 0; l < nlogs; l++) {
        FILE *in = fopen(logs[l], "r");
        if (in == NULL) {
            perror(logs[l]);
            return 2;
        }
        char kind[16], name[64], val[64];
        while (fscanf(in, "%15s %63s %63s", kind, name, val) == 3) {
            if (n == cap) {
                cap = cap ? 2 * cap : 1024;
                fact_t *g = realloc(f, cap * sizeof(*f));
                if (g == NULL)
                    return 2;
                f = g;
            }
            const char *k = strncmp(kind, "try", 3) == 0 ? kind + 3 : kind;
            f[n].failed = k != kind;
            f[n].kind = strcmp(k, "obj") == 0    ? 'o'
                        : strcmp(k, "tag") == 0  ? 't'
                        : strcmp(k, "data") == 0 ? 'd'
                                                 : 'k';
            snprintf(f[n].name, sizeof(f[n].name), "%s", name);
            f[n].value = (uint64_t)strtoll(val, NULL, 10);
            f[n].order = n;
            n++;
        }
        fclose(in);
    }
    qsort(f, n, sizeof(*f), cmp_fact);
    if (open_shared(0) != 0)
        return 1;
    uint64_t counted[128] = {0}, missing = 0, bad = 0, torn = 0;
    uint8_t got[OBJ_BYTES];
    size_t first = 0; /* the first fact of the current name */
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && (f[i - 1].kind != f[i].kind || strcmp(f[i - 1].name, f[i].name) != 0))
            first = i;
        if (i + 1 < n && f[i + 1].kind == f[i].kind && strcmp(f[i + 1].name, f[i].name) == 0)
            continue; /* the name's last fact decides */
        /* What the name may hold: its last acknowledged value, and the value of every failed
         * operation after it (a failure may still have been applied: the reply was lost). */
        size_t from = i;
        while (from > first && f[from].failed)
            from--;
        int known = !f[from].failed; /* an acknowledged value exists */
        if (!known && f[i].kind != 'o')
            continue; /* nothing acknowledged: nothing to check */
        counted[(unsigned char)f[i].kind]++;
        if (f[i].kind == 'o')
            from = i;
        int r;
        if (f[i].kind == 'k') {
            pdc_kv_key_t k = PDC_KV_KEY_STR(f[i].name);
            uint64_t len = 64;
            r = PDCkv_get_value(kv, PDC_KV_MAXTAG, &k, got, &len, NULL, NULL) == SUCCEED &&
                        len == 64
                    ? match(f, from, i, got, 64)
                    : -1;
        } else {
            pdcid_t o = PDCobj_open(f[i].name, pdc);
            if (o == 0) {
                missing++;
                printf("missing: object %s (%s)\n", f[i].name, PDCbb_last_error_name());
                continue;
            }
            r = 1;
            if (f[i].kind == 't') {
                void *v = NULL;
                pdc_var_type_t t;
                psize_t sz = 0;
                r = PDCobj_get_tag(o, "v", &v, &t, &sz) == SUCCEED && v != NULL && sz == 8
                        ? match(f, from, i, v, 8)
                        : -1;
                free(v);
            } else if (f[i].kind == 'd') {
                uint64_t off = 0, size = OBJ_BYTES;
                memset(got, 0, sizeof(got));
                r = prog_transfer(o, PDC_READ, got, 1, &off, &size)
                        ? match(f, from, i, got, OBJ_BYTES)
                        : -1;
            }
            PDCobj_close(o);
        }
        const char *what = f[i].kind == 'k' ? "kv" : f[i].kind == 't' ? "tag v of" : "data of";
        if (r < 0) {
            missing++;
            printf("missing: %s %s (%s)\n", what, f[i].name, PDCbb_last_error_name());
        } else if (r == 0 && f[i].failed && f[i].kind == 'd') {
            torn++; /* a failed write, applied in part: the region's content is undefined */
            printf("torn: data of %s (a write that failed was applied in part)\n", f[i].name);
        } else if (r == 0) {
            bad++;
            printf("bad: %s %s\n", what, f[i].name);
        }
    }
    free(f);
    printf("checked %" PRIu64 " objects, %" PRIu64 " tags, %" PRIu64 " data, %" PRIu64
           " kv records: %" PRIu64 " missing, %" PRIu64 " bad (%" PRIu64
           " torn by a failed write)\n",
           counted['o'], counted['t'], counted['d'], counted['k'], missing, bad, torn);
    return missing || bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "check") != 0)) {
        fprintf(stderr, "usage: pdc_load write --id N --seconds S --log FILE [--seed X] "
                        "[--objects M] [--keep-going [--stop-after F]]\n"
                        "       pdc_load check LOG...\n");
        return 2;
    }
    int id = -1, keep_going = 0;
    uint64_t stop_after = 0;
    size_t max_objects = 0;
    double seconds = 0;
    const char *log = NULL;
    uint64_t seed = 1;
    if (strcmp(argv[1], "write") == 0) {
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--keep-going") == 0)
                keep_going = 1;
            else if (i + 1 < argc && strcmp(argv[i], "--id") == 0)
                id = atoi(argv[++i]);
            else if (i + 1 < argc && strcmp(argv[i], "--seconds") == 0)
                seconds = atof(argv[++i]);
            else if (i + 1 < argc && strcmp(argv[i], "--log") == 0)
                log = argv[++i];
            else if (i + 1 < argc && strcmp(argv[i], "--stop-after") == 0)
                stop_after = strtoull(argv[++i], NULL, 10);
            else if (i + 1 < argc && strcmp(argv[i], "--objects") == 0)
                max_objects = strtoull(argv[++i], NULL, 10);
            else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0)
                seed = strtoull(argv[++i], NULL, 10);
            else {
                fprintf(stderr, "pdc_load: unknown or incomplete option '%s'\n", argv[i]);
                return 2;
            }
        }
        if (id < 0 || seconds <= 0 || log == NULL) {
            fprintf(stderr, "pdc_load write: --id, --seconds and --log are required\n");
            return 2;
        }
    }
    pdc = PDCinit("pdc");
    if (pdc == 0) {
        fprintf(stderr, "pdc_load: PDCinit: %s: %s\n", PDCbb_last_error_name(),
                PDCbb_last_error_message());
        return 1;
    }
    int rc = argv[1][0] == 'w'
                 ? cmd_write(id, seconds, log, seed, keep_going, stop_after, max_objects)
                 : cmd_check(argc - 2, argv + 2);
    if (kv)
        PDCkv_close(kv);
    if (cont)
        PDCcont_close(cont);
    PDCclose(pdc);
    return rc;
}
