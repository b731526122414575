/*
 * pdc_interrupt - operations interrupted by a daemon's death, for tests/bats/31-interrupt.bats:
 * a loop of one kind of operation runs until a daemon is killed under it, and a later process
 * (after the daemon's restart, or over the drain with PDCBB_DRAINED_DIR) checks that every
 * operation the loop saw acknowledged is there.
 *
 *   pdc_interrupt write NAME PLACEMENT SEED  create NAME (uint32 [64 x 1000], PLACEMENT one of
 *                                            objstatic rstatic dynamic local) and write it whole
 *   pdc_interrupt check NAME SEED            NAME holds what `write NAME ... SEED` wrote
 *   pdc_interrupt del NAME                   PDCobj_del(NAME): prints "del NAME: OK" or the
 *                                            error (the delete may reach only some daemons)
 *   pdc_interrupt gone NAME                  NAME does not exist (PDCobj_open: NOT_FOUND)
 *   pdc_interrupt loop KIND PREFIX           repeat operation i = 0, 1, ... of KIND until one
 *                                            fails; prints "acked KIND I" once operation I was
 *                                            acknowledged, then "stopped KIND after N: ERROR"
 *   pdc_interrupt verify KIND PREFIX N       operations 0..N-1 of `loop KIND PREFIX` are there
 * KINDs: cont (PDCcont_create), create (PDCobj_create), tag (PDCobj_put_tag on one of 8
 * objects), write (a column band of a REGION_STATIC object: every daemon), kv (PDCkv_set on a
 * KV object over every daemon), append (PDCbb_obj_append of 4 rows), del (create, write and
 * delete a REGION_STATIC object: its data is on every daemon).
 * Everything lives in container "intr". Exit status: 0 when every check passed, 1 otherwise, 2
 * on usage errors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"
#include "pdc_kv.h"
#include "prog_util.h"

#define ROWS 64
#define COLS 1000
#define WCOLS 8             /* columns per write operation */
#define WBANDS 16384        /* write operations before the loop gives up waiting for a kill */
#define AROWS 4             /* rows per append */
#define ACOLS 16
#define LOOP_MAX 100000     /* a loop that was never interrupted stops here (the test fails) */

static pdcid_t pdc, cont;
static int failures;

#define FAILF(...)                                                                                 \
    do {                                                                                           \
        printf("FAIL: ");                                                                          \
        printf(__VA_ARGS__);                                                                       \
        printf(" [%s: %s]\n", PDCbb_last_error_name(), PDCbb_last_error_message());                \
        failures++;                                                                                \
    } while (0)

static uint32_t value(uint64_t seed, uint64_t a, uint64_t b)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + a * 1000003ULL + b;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 29;
    return (uint32_t)x | 1u; /* never zero: a zero is an element that was never written */
}

static pdcid_t mkobj(const char *name, int nd, const uint64_t *dims, pdc_var_type_t type,
                     pdc_region_partition_t placement)
{
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t d[4];
    memcpy(d, dims, (size_t)nd * sizeof(*d));
    if (!prop || PDCprop_set_obj_dims(prop, nd, d) != SUCCEED ||
        PDCprop_set_obj_type(prop, type) != SUCCEED ||
        PDCprop_set_obj_transfer_region_type(prop, placement) != SUCCEED)
        return 0;
    pdcid_t id = PDCobj_create(cont, (char *)name, prop);
    if (id)
        PDCprop_close(prop);
    return id;
}

static int placement_of(const char *s, pdc_region_partition_t *p)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, prog_part_names[i]) == 0) {
            *p = prog_parts[i];
            return 1;
        }
    return 0;
}

/* The whole [ROWS x COLS] object written with value(seed, element, 0). */
static int obj_write(const char *name, pdc_region_partition_t pl, uint64_t seed)
{
    uint64_t dims[2] = {ROWS, COLS}, z[2] = {0, 0};
    uint32_t *buf = malloc(ROWS * COLS * 4);
    pdcid_t o = mkobj(name, 2, dims, PDC_UINT32, pl);
    int ok = o != 0 && buf != NULL;
    for (uint64_t e = 0; ok && e < ROWS * COLS; e++)
        buf[e] = value(seed, e, 0);
    ok = ok && prog_transfer(o, PDC_WRITE, buf, 2, z, dims);
    if (o)
        PDCobj_close(o);
    free(buf);
    return ok;
}

static int obj_check(const char *name, uint64_t seed)
{
    uint64_t dims[2] = {ROWS, COLS}, z[2] = {0, 0};
    uint32_t *buf = calloc(ROWS * COLS, 4);
    pdcid_t o = PDCobj_open(name, pdc);
    int ok = o != 0 && buf != NULL && prog_transfer(o, PDC_READ, buf, 2, z, dims);
    if (!ok)
        FAILF("%s: cannot read it", name);
    for (uint64_t e = 0; ok && e < ROWS * COLS; e++)
        if (buf[e] != value(seed, e, 0)) {
            FAILF("%s: element %" PRIu64 " is %08x, expected %08x", name, e, buf[e],
                  value(seed, e, 0));
            ok = 0;
        }
    if (o)
        PDCobj_close(o);
    free(buf);
    return ok;
}

/* ---- the loops: setup (once), operation i, and the check of operation i ---- */

typedef struct loop_state {
    const char *kind, *prefix;
    pdcid_t objs[8], kv, src;
} loop_state_t;

static const char *nm(const loop_state_t *s, const char *what, uint64_t i)
{
    static char buf[4][256];
    static int next;
    next = (next + 1) % 4;
    snprintf(buf[next], sizeof(buf[next]), "%s-%s%" PRIu64, s->prefix, what, i);
    return buf[next];
}

/* Create (loop) or open (verify) what the operations work on. */
static int loop_setup(loop_state_t *s, int create)
{
    uint64_t wdims[2] = {ROWS, (uint64_t)WCOLS * WBANDS};
    uint64_t adims[2] = {PDC_SIZE_UNLIMITED, ACOLS}, sdims[2] = {AROWS, ACOLS};
    if (strcmp(s->kind, "tag") == 0) {
        uint64_t d = 1;
        for (uint64_t k = 0; k < 8; k++)
            if (!(s->objs[k] = create ? mkobj(nm(s, "t", k), 1, &d, PDC_INT, PDC_OBJ_STATIC)
                                      : PDCobj_open(nm(s, "t", k), pdc)))
                return 0;
    } else if (strcmp(s->kind, "write") == 0) {
        s->objs[0] = create ? mkobj(nm(s, "w", 0), 2, wdims, PDC_UINT32, PDC_REGION_STATIC)
                            : PDCobj_open(nm(s, "w", 0), pdc);
        return s->objs[0] != 0;
    } else if (strcmp(s->kind, "kv") == 0) {
        pdc_kv_info_t info = {.key_type = PDC_KV_STRING, .sharding = PDC_KV_SHARD_HASH};
        s->kv = create ? PDCkv_create(cont, nm(s, "kv", 0), &info)
                       : PDCkv_open(cont, nm(s, "kv", 0));
        return s->kv != 0;
    } else if (strcmp(s->kind, "append") == 0) {
        if (!(s->objs[0] = create ? mkobj(nm(s, "dst", 0), 2, adims, PDC_INT64, PDC_REGION_STATIC)
                                  : PDCobj_open(nm(s, "dst", 0), pdc)))
            return 0;
        if (create) {
            int64_t buf[AROWS * ACOLS];
            uint64_t z[2] = {0, 0};
            for (int e = 0; e < AROWS * ACOLS; e++)
                buf[e] = (int64_t)value(7, (uint64_t)e, 0);
            if (!(s->src = mkobj(nm(s, "src", 0), 2, sdims, PDC_INT64, PDC_REGION_STATIC)) ||
                !prog_transfer(s->src, PDC_WRITE, buf, 2, z, sdims))
                return 0;
        }
    }
    return 1;
}

/* Operation i of the loop; 1 when it was acknowledged. */
static int loop_op(loop_state_t *s, uint64_t i)
{
    const char *k = s->kind;
    if (strcmp(k, "cont") == 0) {
        pdcid_t prop = PDCprop_create(PDC_CONT_CREATE, pdc);
        pdcid_t c = prop ? PDCcont_create(nm(s, "c", i), prop) : 0;
        if (c)
            PDCcont_close(c);
        return c != 0;
    }
    if (strcmp(k, "create") == 0) {
        uint64_t d[2] = {ROWS, COLS};
        pdcid_t o = mkobj(nm(s, "o", i), 2, d, PDC_UINT32, PDC_REGION_STATIC);
        if (o)
            PDCobj_close(o);
        return o != 0;
    }
    if (strcmp(k, "tag") == 0) {
        int v = (int)i;
        char t[32];
        snprintf(t, sizeof(t), "t%" PRIu64, i);
        return PDCobj_put_tag(s->objs[i % 8], t, &v, PDC_INT, sizeof(v)) == SUCCEED;
    }
    if (strcmp(k, "write") == 0) {
        uint32_t buf[ROWS * WCOLS];
        uint64_t off[2] = {0, i * WCOLS}, size[2] = {ROWS, WCOLS};
        if (i >= WBANDS)
            return 0;
        for (uint64_t e = 0; e < ROWS * WCOLS; e++)
            buf[e] = value(i, e, 1);
        return prog_transfer(s->objs[0], PDC_WRITE, buf, 2, off, size);
    }
    if (strcmp(k, "kv") == 0) {
        char key[32], val[32];
        snprintf(key, sizeof(key), "k%" PRIu64, i);
        snprintf(val, sizeof(val), "v%" PRIu64, i);
        pdc_kv_key_t kk = PDC_KV_KEY_STR(key);
        return PDCkv_set(s->kv, 0, &kk, val, strlen(val), NULL) == SUCCEED;
    }
    if (strcmp(k, "append") == 0)
        return PDCbb_obj_append(s->objs[0], s->src) == SUCCEED;
    if (strcmp(k, "del") == 0) {
        pdcid_t o;
        return obj_write(nm(s, "d", i), PDC_REGION_STATIC, i) &&
               (o = PDCobj_open(nm(s, "d", i), pdc)) != 0 && PDCobj_del(o) == SUCCEED;
    }
    return 0;
}

/* Is operation i there? */
static int loop_check(loop_state_t *s, uint64_t i)
{
    const char *k = s->kind;
    if (strcmp(k, "cont") == 0) {
        pdcid_t c = PDCcont_open(nm(s, "c", i), pdc);
        if (c)
            PDCcont_close(c);
        return c != 0;
    }
    if (strcmp(k, "create") == 0) {
        pdcid_t o = PDCobj_open(nm(s, "o", i), pdc);
        if (o)
            PDCobj_close(o);
        return o != 0;
    }
    if (strcmp(k, "tag") == 0) {
        char t[32];
        void *v = NULL;
        pdc_var_type_t type;
        psize_t size = 0;
        snprintf(t, sizeof(t), "t%" PRIu64, i);
        int ok = PDCobj_get_tag(s->objs[i % 8], t, &v, &type, &size) == SUCCEED &&
                 size == sizeof(int) && *(int *)v == (int)i;
        free(v);
        return ok;
    }
    if (strcmp(k, "write") == 0) {
        uint32_t buf[ROWS * WCOLS];
        uint64_t off[2] = {0, i * WCOLS}, size[2] = {ROWS, WCOLS};
        if (!prog_transfer(s->objs[0], PDC_READ, buf, 2, off, size))
            return 0;
        for (uint64_t e = 0; e < ROWS * WCOLS; e++)
            if (buf[e] != value(i, e, 1))
                return 0;
        return 1;
    }
    if (strcmp(k, "kv") == 0) {
        char key[32], val[32], got[32];
        uint64_t len = sizeof(got);
        snprintf(key, sizeof(key), "k%" PRIu64, i);
        snprintf(val, sizeof(val), "v%" PRIu64, i);
        pdc_kv_key_t kk = PDC_KV_KEY_STR(key);
        return PDCkv_get_value(s->kv, PDC_KV_MAXTAG, &kk, got, &len, NULL, NULL) == SUCCEED &&
               len == strlen(val) && memcmp(got, val, len) == 0;
    }
    if (strcmp(k, "append") == 0) {
        int64_t buf[AROWS * ACOLS];
        uint64_t off[2] = {i * AROWS, 0}, size[2] = {AROWS, ACOLS};
        if (!prog_transfer(s->objs[0], PDC_READ, buf, 2, off, size))
            return 0;
        for (int e = 0; e < AROWS * ACOLS; e++)
            if (buf[e] != (int64_t)value(7, (uint64_t)e, 0))
                return 0;
        return 1;
    }
    if (strcmp(k, "del") == 0) { /* deleted: gone */
        pdcid_t o = PDCobj_open(nm(s, "d", i), pdc);
        return o == 0 && strcmp(PDCbb_last_error_name(), "PDCBB_ERR_NOT_FOUND") == 0;
    }
    return 0;
}

static int run_loop(const char *kind, const char *prefix)
{
    loop_state_t s = {.kind = kind, .prefix = prefix};
    uint64_t i;
    if (!loop_setup(&s, 1)) {
        FAILF("loop %s: setup failed", kind);
        return 1;
    }
    printf("ready %s\n", kind);
    for (i = 0; i < LOOP_MAX && loop_op(&s, i); i++)
        printf("acked %s %" PRIu64 "\n", kind, i);
    printf("stopped %s after %" PRIu64 ": %s: %s\n", kind, i,
           i == LOOP_MAX ? "never interrupted" : PDCbb_last_error_name(),
           PDCbb_last_error_message());
    return 0;
}

static int run_verify(const char *kind, const char *prefix, uint64_t n)
{
    loop_state_t s = {.kind = kind, .prefix = prefix};
    if (!loop_setup(&s, 0)) {
        FAILF("verify %s: cannot open what loop %s made", kind, kind);
        return 1;
    }
    for (uint64_t i = 0; i < n; i++)
        if (!loop_check(&s, i))
            FAILF("verify %s: acknowledged operation %" PRIu64 " is not there", kind, i);
    if (failures == 0)
        printf("ok verify %s: %" PRIu64 " acknowledged operations there\n", kind, n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: see the comment at the top of tests/progs/pdc_interrupt.c\n");
        return 2;
    }
    const char *c = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if ((pdc = PDCinit("pdc")) == 0) {
        FAILF("PDCinit");
        return 1;
    }
    /* the container: open it (another process, or a drain, made it), else create it */
    if ((cont = PDCcont_open("intr", pdc)) == 0) {
        pdcid_t prop = PDCprop_create(PDC_CONT_CREATE, pdc);
        cont = prop ? PDCcont_create("intr", prop) : 0;
    }
    if (!cont) {
        FAILF("container intr");
        return 1;
    }
    pdc_region_partition_t pl;
    if (strcmp(c, "write") == 0 && argc == 5 && placement_of(argv[3], &pl)) {
        if (!obj_write(argv[2], pl, strtoull(argv[4], NULL, 0)))
            FAILF("write %s", argv[2]);
        else
            printf("ok write %s\n", argv[2]);
    } else if (strcmp(c, "check") == 0 && argc == 4) {
        if (obj_check(argv[2], strtoull(argv[3], NULL, 0)))
            printf("ok check %s\n", argv[2]);
    } else if (strcmp(c, "del") == 0 && argc == 3) {
        pdcid_t o = PDCobj_open(argv[2], pdc);
        if (!o)
            printf("del %s: not deleted: cannot open it: %s: %s\n", argv[2],
                   PDCbb_last_error_name(), PDCbb_last_error_message());
        else if (PDCobj_del(o) == SUCCEED)
            printf("del %s: OK\n", argv[2]);
        else
            printf("del %s: %s: %s\n", argv[2], PDCbb_last_error_name(),
                   PDCbb_last_error_message());
    } else if (strcmp(c, "gone") == 0 && argc == 3) {
        if (PDCobj_open(argv[2], pdc) != 0 ||
            strcmp(PDCbb_last_error_name(), "PDCBB_ERR_NOT_FOUND") != 0)
            FAILF("gone %s: it still exists (or another error)", argv[2]);
        else
            printf("ok gone %s\n", argv[2]);
    } else if (strcmp(c, "loop") == 0 && argc == 4) {
        run_loop(argv[2], argv[3]);
    } else if (strcmp(c, "verify") == 0 && argc == 5) {
        run_verify(argv[2], argv[3], strtoull(argv[4], NULL, 0));
    } else {
        fprintf(stderr, "unknown command or wrong arguments: '%s'\n", c);
        return 2;
    }
    PDCclose(pdc);
    return failures ? 1 : 0;
}
