/*
 * pdc_strided_model - model test of strided regions (PDCbb_region_create_strided) against an
 * in-memory reference, for tests/bats/72-strided.bats.
 *
 *   pdc_strided_model model --seed S --ops N --name P   random transfers and queries
 *   pdc_strided_model verify --name P                   read back what "model" left (after
 *                                                       the job, with PDCBB_DRAINED_DIR)
 *   pdc_strided_model bad                               bad input, each error named
 *
 * model: creates two objects per placement (PDC_OBJ_STATIC, PDC_REGION_STATIC,
 * PDC_REGION_DYNAMIC, PDC_REGION_LOCAL) of 1..3 random dimensions, element type int or double,
 * each with a zeroed reference array, then performs N random operations: strided writes and
 * plain box writes (the reference is updated element by element, walking the selection with
 * nested loops over blocks: no code shared with the library), strided and plain reads compared
 * with the reference, batches of strided transfers (one per object: writes, and reads of
 * objects the batch does not write) through PDCregion_transfer_start_all / wait_all, and
 * queries (int objects) restricted to a strided region, whose hit count and coordinates are
 * compared with the reference's. Local buffers are packed, some with padding before the local
 * box that must stay untouched. At the end every object is read whole and compared, and the
 * reference is written to P-<k>.model (a header, then the bytes) for "verify".
 * Prints "placement NAME strided_writes=.. strided_reads=.." per placement and OK; exits 1
 * with the object, selection and element on the first mismatch.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pdc.h"

#define NOBJ 8
#define MAXB 6

static const char *pl_name[] = {"obj_static", "region_static", "region_dynamic", "region_local"};
static const pdc_region_partition_t pl_val[] = {PDC_OBJ_STATIC, PDC_REGION_STATIC,
                                                PDC_REGION_DYNAMIC, PDC_REGION_LOCAL};

static uint64_t rng_state;
static uint64_t rnd64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t rnd(uint64_t n) { return n ? rnd64() % n : 0; }

typedef struct obj {
    char name[64];
    pdcid_t id;
    int pl;
    pdc_var_type_t type;
    size_t unit;
    uint32_t ndim;
    uint64_t dims[3];
    uint64_t nelem;
    uint8_t *ref;
    unsigned sw, sr, bw, br, q;
} obj_t;

typedef struct sel {
    uint32_t ndim;
    uint64_t start[3], stride[3], count[3], block[3];
} sel_t;

static obj_t objs[NOBJ];

#define FAIL_IF(cond, ...)                                                                        \
    do {                                                                                          \
        if (cond) {                                                                               \
            printf("FAILED: ");                                                                   \
            printf(__VA_ARGS__);                                                                  \
            printf(" [%s: %s]\n", PDCbb_last_error_name(), PDCbb_last_error_message());           \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

static void sel_text(const sel_t *s, char *out, size_t len)
{
    size_t n = 0;
    for (uint32_t d = 0; d < s->ndim; d++)
        n += (size_t)snprintf(out + n, len - n, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]",
                              d ? " " : "", s->start[d], s->stride[d], s->count[d], s->block[d]);
}

static uint64_t sel_count(const sel_t *s)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < s->ndim; d++)
        n *= s->count[d] * s->block[d];
    return n;
}

/* The reference's walk: element k of the selection (row-major over blocks, then elements). */
static uint64_t sel_lin(const obj_t *o, const sel_t *s, uint64_t k)
{
    uint64_t c[3], lin = 0;
    for (int d = (int)s->ndim - 1; d >= 0; d--) {
        uint64_t n = s->count[d] * s->block[d], i = k % n;
        k /= n;
        c[d] = s->start[d] + (i / s->block[d]) * s->stride[d] + i % s->block[d];
    }
    for (uint32_t d = 0; d < s->ndim; d++)
        lin = lin * o->dims[d] + c[d];
    return lin;
}

/* A random selection within o (nested selections of every shape: stride == block, count 1). */
static sel_t rand_sel(const obj_t *o)
{
    sel_t s;
    s.ndim = o->ndim;
    for (uint32_t d = 0; d < o->ndim; d++) {
        uint64_t D = o->dims[d];
        s.block[d] = 1 + rnd(D < 3 ? D : 3);
        s.stride[d] = s.block[d] + rnd(5);
        s.start[d] = rnd(D - s.block[d] + 1);
        uint64_t maxc = (D - s.start[d] - s.block[d]) / s.stride[d] + 1;
        s.count[d] = 1 + rnd(maxc);
    }
    return s;
}

static pdcid_t sel_region(const sel_t *s)
{
    uint64_t st[3], sd[3], ct[3], bk[3];
    memcpy(st, s->start, sizeof(st));
    memcpy(sd, s->stride, sizeof(sd));
    memcpy(ct, s->count, sizeof(ct));
    memcpy(bk, s->block, sizeof(bk));
    pdcid_t r = PDCbb_region_create_strided(s->ndim, st, sd, ct, bk);
    FAIL_IF(r == 0, "PDCbb_region_create_strided");
    return r;
}

static void fill_random(uint8_t *b, size_t n, size_t unit)
{
    for (size_t i = 0; i < n; i += unit) {
        if (unit == 4) {
            int v = (int)rnd(1000);
            memcpy(b + i, &v, 4);
        } else {
            double v = (double)rnd(1000) / 4.0;
            memcpy(b + i, &v, 8);
        }
    }
}

/* A transfer request of selection s (strided) or box (off, size) of o: buf holds pad elements
 * before the packed elements; the local region is a 1-D box [pad, pad + n). */
typedef struct req {
    obj_t *o;
    sel_t s;
    int strided;
    uint64_t off[3], size[3];
    uint64_t n, pad;
    uint8_t *buf;
    pdcid_t id;
    pdc_access_t acc;
} req_t;

static void req_make(req_t *q, obj_t *o, int strided, pdc_access_t acc)
{
    memset(q, 0, sizeof(*q));
    q->o = o;
    q->strided = strided;
    q->acc = acc;
    if (strided) {
        q->s = rand_sel(o);
        q->n = sel_count(&q->s);
    } else {
        /* A box is the selection of stride 1, count 1: the same reference walk. */
        q->s.ndim = o->ndim;
        for (uint32_t d = 0; d < o->ndim; d++) {
            q->off[d] = rnd(o->dims[d]);
            q->size[d] = 1 + rnd(o->dims[d] - q->off[d]);
            q->s.start[d] = q->off[d];
            q->s.stride[d] = q->size[d];
            q->s.count[d] = 1;
            q->s.block[d] = q->size[d];
        }
        q->n = sel_count(&q->s);
    }
    q->pad = rnd(3) == 0 ? 1 + rnd(4) : 0;
    q->buf = malloc((q->pad + q->n) * o->unit);
    fill_random(q->buf, (q->pad + q->n) * o->unit, o->unit);
    uint64_t loff = q->pad, lsize = q->n;
    pdcid_t lr = PDCregion_create(1, &loff, &lsize);
    pdcid_t rr = strided ? sel_region(&q->s) : PDCregion_create(o->ndim, q->off, q->size);
    FAIL_IF(lr == 0 || rr == 0, "PDCregion_create");
    q->id = PDCregion_transfer_create(q->buf, acc, o->id, lr, rr);
    FAIL_IF(q->id == 0, "PDCregion_transfer_create on %s", o->name);
    PDCregion_close(lr);
    PDCregion_close(rr);
}

/* After the transfer: writes update the reference, reads are compared with it. */
static void req_done(req_t *q, const char *how)
{
    obj_t *o = q->o;
    size_t u = o->unit;
    char t[256];
    for (uint64_t k = 0; k < q->n; k++) {
        uint64_t lin = sel_lin(o, &q->s, k);
        uint8_t *mine = q->buf + (q->pad + k) * u;
        if (q->acc == PDC_WRITE) {
            memcpy(o->ref + lin * u, mine, u);
        } else if (memcmp(o->ref + lin * u, mine, u) != 0) {
            sel_text(&q->s, t, sizeof(t));
            printf("MISMATCH %s: object %s (%s) %s read of %s: element %" PRIu64
                   " (linear %" PRIu64 ") differs\n",
                   how, o->name, pl_name[o->pl], q->strided ? "strided" : "box", t, k, lin);
            exit(1);
        }
    }
    if (q->acc == PDC_WRITE)
        q->strided ? o->sw++ : o->bw++;
    else
        q->strided ? o->sr++ : o->br++;
    PDCregion_transfer_close(q->id);
    free(q->buf);
}

static void one_transfer(obj_t *o, int strided, pdc_access_t acc)
{
    req_t q;
    req_make(&q, o, strided, acc);
    FAIL_IF(PDCregion_transfer_start(q.id) != SUCCEED, "start on %s", o->name);
    FAIL_IF(PDCregion_transfer_wait(q.id) != SUCCEED, "wait on %s", o->name);
    req_done(&q, "single");
}

static void batch(void)
{
    req_t q[NOBJ];
    pdcid_t ids[NOBJ];
    int n = 0;
    for (int k = 0; k < NOBJ; k++) {
        if (rnd(3) == 0)
            continue;
        req_make(&q[n], &objs[k], rnd(4) != 0, rnd(2) ? PDC_WRITE : PDC_READ);
        ids[n] = q[n].id;
        n++;
    }
    if (n == 0)
        return;
    FAIL_IF(PDCregion_transfer_start_all(ids, n) != SUCCEED, "start_all of %d", n);
    FAIL_IF(PDCregion_transfer_wait_all(ids, n) != SUCCEED, "wait_all of %d", n);
    for (int i = 0; i < n; i++)
        req_done(&q[i], "start_all");
}

static void query(obj_t *o)
{
    sel_t s = rand_sel(o);
    int v = (int)rnd(1000);
    pdcid_t r = sel_region(&s);
    pdc_query_t *qq = PDCquery_create(o->id, PDC_GT, PDC_INT, &v);
    FAIL_IF(qq == NULL, "PDCquery_create");
    FAIL_IF(PDCquery_sel_region(qq, PDCregion_get_info(r)) != SUCCEED, "PDCquery_sel_region");
    uint64_t nh = 0, want = 0, n = sel_count(&s);
    FAIL_IF(PDCquery_get_nhits(qq, &nh) != SUCCEED, "PDCquery_get_nhits");
    /* The reference's hits, in row-major order of the object (the selection's order is the
     * same: both are row-major). */
    uint64_t *hits = malloc((n + 1) * sizeof(uint64_t));
    for (uint64_t k = 0; k < n; k++) {
        uint64_t lin = sel_lin(o, &s, k);
        int x;
        memcpy(&x, o->ref + lin * 4, 4);
        if (x > v)
            hits[want++] = lin;
    }
    char t[256];
    sel_text(&s, t, sizeof(t));
    if (nh != want) {
        printf("MISMATCH query: object %s (%s) value > %d in %s: %" PRIu64 " hits, model %" PRIu64
               "\n", o->name, pl_name[o->pl], v, t, nh, want);
        exit(1);
    }
    pdc_selection_t sel;
    FAIL_IF(PDCquery_get_selection(qq, &sel) != SUCCEED, "PDCquery_get_selection");
    FAIL_IF(sel.nhits != want, "selection of %" PRIu64 " hits, model %" PRIu64, sel.nhits, want);
    for (uint64_t i = 0; i < want; i++) {
        uint64_t lin = 0;
        for (uint32_t d = 0; d < o->ndim; d++)
            lin = lin * o->dims[d] + sel.coords[i * o->ndim + d];
        if (lin != hits[i]) {
            printf("MISMATCH query: object %s (%s) value > %d in %s: hit %" PRIu64 " is element %"
                   PRIu64 ", model %" PRIu64 "\n", o->name, pl_name[o->pl], v, t, i, lin, hits[i]);
            exit(1);
        }
    }
    PDCselection_free(&sel);
    PDCquery_free(qq);
    PDCregion_close(r);
    free(hits);
    o->q++;
}

static void whole_check(obj_t *o, const char *how)
{
    uint8_t *b = malloc(o->nelem * o->unit);
    uint64_t off[3] = {0, 0, 0};
    pdcid_t lr = PDCregion_create(o->ndim, off, o->dims), rr = PDCregion_create(o->ndim, off,
                                                                                 o->dims);
    pdcid_t t = PDCregion_transfer_create(b, PDC_READ, o->id, lr, rr);
    FAIL_IF(t == 0 || PDCregion_transfer_start(t) != SUCCEED || PDCregion_transfer_wait(t) != SUCCEED,
            "whole read of %s", o->name);
    for (uint64_t i = 0; i < o->nelem; i++)
        if (memcmp(b + i * o->unit, o->ref + i * o->unit, o->unit) != 0) {
            printf("MISMATCH %s: object %s (%s) element %" PRIu64 " differs\n", how, o->name,
                   pl_name[o->pl], i);
            exit(1);
        }
    PDCregion_transfer_close(t);
    PDCregion_close(lr);
    PDCregion_close(rr);
    free(b);
}

static int run_model(uint64_t seed, int ops, const char *name)
{
    rng_state = seed;
    pdcid_t pdc = PDCinit("pdc");
    FAIL_IF(pdc == 0, "PDCinit");
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create(name, cprop);
    FAIL_IF(cont == 0, "PDCcont_create");
    for (int k = 0; k < NOBJ; k++) {
        obj_t *o = &objs[k];
        snprintf(o->name, sizeof(o->name), "%s-%d", name, k);
        o->pl = k % 4;
        o->type = k < 4 ? PDC_INT : PDC_DOUBLE;
        o->unit = k < 4 ? 4 : 8;
        o->ndim = 1 + (uint32_t)rnd(3);
        o->nelem = 1;
        for (uint32_t d = 0; d < o->ndim; d++) {
            o->dims[d] = o->ndim == 1 ? 50 + rnd(3000) : o->ndim == 2 ? 4 + rnd(60) : 3 + rnd(14);
            o->nelem *= o->dims[d];
        }
        o->ref = calloc(o->nelem, o->unit);
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        PDCprop_set_obj_type(prop, o->type);
        PDCprop_set_obj_dims(prop, o->ndim, o->dims);
        PDCprop_set_obj_transfer_region_type(prop, pl_val[o->pl]);
        o->id = PDCobj_create(cont, o->name, prop);
        FAIL_IF(o->id == 0, "PDCobj_create %s", o->name);
        PDCprop_close(prop);
    }
    for (int i = 0; i < ops; i++) {
        obj_t *o = &objs[rnd(NOBJ)];
        switch (rnd(8)) {
        case 0:
        case 1: one_transfer(o, 1, PDC_WRITE); break;
        case 2: one_transfer(o, 0, PDC_WRITE); break;
        case 3:
        case 4: one_transfer(o, 1, PDC_READ); break;
        case 5: one_transfer(o, 0, PDC_READ); break;
        case 6: batch(); break;
        default:
            if (o->type == PDC_INT)
                query(o);
            else
                one_transfer(o, 1, PDC_READ);
        }
    }
    for (int p = 0; p < 4; p++) {
        unsigned sw = 0, sr = 0, bw = 0, br = 0, q = 0;
        for (int k = 0; k < NOBJ; k++)
            if (objs[k].pl == p) {
                sw += objs[k].sw, sr += objs[k].sr, bw += objs[k].bw, br += objs[k].br;
                q += objs[k].q;
            }
        printf("placement %s strided_writes=%u strided_reads=%u box_writes=%u box_reads=%u "
               "queries=%u\n",
               pl_name[p], sw, sr, bw, br, q);
    }
    for (int k = 0; k < NOBJ; k++) {
        obj_t *o = &objs[k];
        whole_check(o, "final");
        char path[128];
        snprintf(path, sizeof(path), "%s.model", o->name);
        FILE *f = fopen(path, "wb");
        FAIL_IF(f == NULL, "cannot write %s", path);
        uint64_t hdr[6] = {(uint64_t)o->type, o->unit, o->ndim, o->dims[0], o->dims[1],
                           o->dims[2]};
        fwrite(hdr, sizeof(hdr), 1, f);
        fwrite(o->ref, o->unit, o->nelem, f);
        fclose(f);
        PDCobj_close(o->id);
        free(o->ref);
    }
    PDCcont_close(cont);
    PDCprop_close(cprop);
    PDCclose(pdc);
    printf("OK\n");
    return 0;
}

/* After the job: each object whole, and strided reads, against the reference files. */
static int run_verify(const char *name)
{
    rng_state = 99;
    pdcid_t pdc = PDCinit("pdc");
    FAIL_IF(pdc == 0, "PDCinit");
    for (int k = 0; k < NOBJ; k++) {
        obj_t *o = &objs[k];
        snprintf(o->name, sizeof(o->name), "%s-%d", name, k);
        o->pl = k % 4;
        char path[128];
        snprintf(path, sizeof(path), "%s.model", o->name);
        FILE *f = fopen(path, "rb");
        FAIL_IF(f == NULL, "cannot read %s", path);
        uint64_t hdr[6];
        FAIL_IF(fread(hdr, sizeof(hdr), 1, f) != 1, "short %s", path);
        o->type = (pdc_var_type_t)hdr[0];
        o->unit = hdr[1];
        o->ndim = (uint32_t)hdr[2];
        memcpy(o->dims, hdr + 3, 3 * sizeof(uint64_t));
        o->nelem = 1;
        for (uint32_t d = 0; d < o->ndim; d++)
            o->nelem *= o->dims[d];
        o->ref = malloc(o->nelem * o->unit);
        FAIL_IF(fread(o->ref, o->unit, o->nelem, f) != o->nelem, "short %s", path);
        fclose(f);
        o->id = PDCobj_open(o->name, pdc);
        FAIL_IF(o->id == 0, "PDCobj_open %s", o->name);
        whole_check(o, "drained whole");
        for (int i = 0; i < 20; i++)
            one_transfer(o, 1, PDC_READ);
        /* Writes are refused after the job. */
        req_t q;
        req_make(&q, o, 1, PDC_WRITE);
        FAIL_IF(PDCregion_transfer_start(q.id) == SUCCEED, "a strided write after the job");
        printf("verify %s (%s): whole and 20 strided reads match; write refused: %s\n", o->name,
               pl_name[o->pl], PDCbb_last_error_name());
        PDCregion_transfer_close(q.id);
        free(q.buf);
        PDCobj_close(o->id);
        free(o->ref);
    }
    PDCclose(pdc);
    printf("OK\n");
    return 0;
}

/* Bad input: each refused with a message naming it. */
static void expect_fail(int failed, const char *what, const char *needle)
{
    const char *m = PDCbb_last_error_message();
    if (!failed || strstr(m, needle) == NULL) {
        printf("FAILED bad input %s: %s, message '%s' (wanted '%s')\n", what,
               failed ? "refused" : "accepted", m, needle);
        exit(1);
    }
    printf("refused %s: %s: %s\n", what, PDCbb_last_error_name(), m);
}

static int run_bad(void)
{
    pdcid_t pdc = PDCinit("pdc");
    FAIL_IF(pdc == 0, "PDCinit");
    uint64_t st[17] = {0}, sd[17], ct[17], bk[17];
    for (int d = 0; d < 17; d++)
        sd[d] = 2, ct[d] = 2, bk[d] = 1;
    ct[1] = 0;
    expect_fail(PDCbb_region_create_strided(2, st, sd, ct, bk) == 0, "zero count",
                "count[1] is 0");
    ct[1] = 2;
    bk[0] = 3;
    expect_fail(PDCbb_region_create_strided(2, st, sd, ct, bk) == 0, "block > stride",
                "block[0] = 3 is larger than stride[0] = 2");
    bk[0] = 0;
    expect_fail(PDCbb_region_create_strided(2, st, sd, ct, bk) == 0, "zero block", "block[0] is 0");
    bk[0] = 1;
    expect_fail(PDCbb_region_create_strided(17, st, sd, ct, bk) == 0, "too many dims",
                "ndims 17 out of range");
    expect_fail(PDCbb_region_create_strided(0, st, sd, ct, bk) == 0, "no dims",
                "ndims 0 out of range");
    uint64_t big[1] = {UINT64_MAX / 2}, two[1] = {3}, one[1] = {1};
    expect_fail(PDCbb_region_create_strided(1, one, big, two, one) == 0, "overflow",
                "dimension 0 overflows");
    expect_fail(PDCbb_region_create_strided(1, one, NULL, two, one) == 0, "NULL stride",
                "NULL");
    /* Outside the object, wrong ndim, strided local region. */
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create("strided-bad", cprop);
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t dims[2] = {10, 10};
    PDCprop_set_obj_type(prop, PDC_INT);
    PDCprop_set_obj_dims(prop, 2, dims);
    pdcid_t obj = PDCobj_create(cont, "strided-bad-obj", prop);
    FAIL_IF(obj == 0, "PDCobj_create");
    int buf[100];
    uint64_t s0[2] = {1, 0}, s1[2] = {2, 2}, c1[2] = {5, 5}, b1[2] = {1, 1};
    uint64_t lo = 0, ln = 25;
    pdcid_t lr = PDCregion_create(1, &lo, &ln);
    pdcid_t out = PDCbb_region_create_strided(2, s0, s1, c1, b1); /* rows 1..9: fits */
    FAIL_IF(out == 0, "create");
    pdcid_t t = PDCregion_transfer_create(buf, PDC_WRITE, obj, lr, out);
    FAIL_IF(t == 0, "a strided region within the object was refused");
    PDCregion_transfer_close(t);
    PDCregion_close(out);
    uint64_t s2[2] = {2, 0};                                   /* rows 2..10: one too far */
    out = PDCbb_region_create_strided(2, s2, s1, c1, b1);
    expect_fail(PDCregion_transfer_create(buf, PDC_WRITE, obj, lr, out) == 0,
                "outside the object", "strided remote region's bounding box [2:9,0:9]");
    PDCregion_close(out);
    uint64_t s3[3] = {0, 0, 0}, st3[3] = {2, 2, 2}, c3[3] = {2, 2, 2}, b3[3] = {1, 1, 1};
    out = PDCbb_region_create_strided(3, s3, st3, c3, b3);
    expect_fail(PDCregion_transfer_create(buf, PDC_WRITE, obj, lr, out) == 0, "wrong ndim",
                "has 3 dimensions, object 'strided-bad-obj' has 2");
    PDCregion_close(out);
    out = PDCbb_region_create_strided(2, s0, s1, c1, b1);
    uint64_t l24 = 24;
    pdcid_t lr24 = PDCregion_create(1, &lo, &l24);
    expect_fail(PDCregion_transfer_create(buf, PDC_WRITE, obj, lr24, out) == 0,
                "count mismatch", "has 24 elements but remote region");
    expect_fail(PDCregion_transfer_create(buf, PDC_WRITE, obj, out, out) == 0,
                "strided local region", "the local region is strided");
    PDCregion_close(out);
    PDCregion_close(lr24);
    PDCregion_close(lr);
    PDCobj_close(obj);
    PDCprop_close(prop);
    PDCcont_close(cont);
    PDCprop_close(cprop);
    PDCclose(pdc);
    printf("OK\n");
    return 0;
}

/* Capacity (run with --pdc capacity=4M, one daemon): a strided write that does not fit is
 * refused with the figures; one that fits, and its overwrite, succeed. */
static int strided_write_1d(pdcid_t o, uint64_t start, uint64_t stride, uint64_t count)
{
    int *b = calloc(count, sizeof(int));
    uint64_t zero = 0, one = 1;
    pdcid_t lr = PDCregion_create(1, &zero, &count);
    pdcid_t rr = PDCbb_region_create_strided(1, &start, &stride, &count, &one);
    pdcid_t t = PDCregion_transfer_create(b, PDC_WRITE, o, lr, rr);
    FAIL_IF(t == 0, "transfer_create");
    int ok = PDCregion_transfer_start(t) == SUCCEED && PDCregion_transfer_wait(t) == SUCCEED;
    if (!ok)
        printf("write failed: %s: %s\n", PDCbb_last_error_name(), PDCbb_last_error_message());
    PDCregion_transfer_close(t);
    PDCregion_close(lr);
    PDCregion_close(rr);
    free(b);
    return ok;
}

static int run_nospc(void)
{
    pdcid_t pdc = PDCinit("pdc");
    pdcid_t cont = PDCcont_create("strided-nospc", PDCprop_create(PDC_CONT_CREATE, pdc));
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t n = 8u << 20;
    PDCprop_set_obj_type(prop, PDC_INT);
    PDCprop_set_obj_dims(prop, 1, &n);
    pdcid_t o = PDCobj_create(cont, "strided-nospc-obj", prop);
    FAIL_IF(o == 0, "PDCobj_create");
    /* Every other int of 16 MiB: 8 MiB of elements, more than 4 MiB. */
    FAIL_IF(strided_write_1d(o, 0, 2, 2u << 20), "a strided write beyond the capacity succeeded");
    /* 1 MiB of every other int: fits, and so does writing it again. */
    FAIL_IF(!strided_write_1d(o, 0, 2, 256u << 10), "a strided write that fits");
    FAIL_IF(!strided_write_1d(o, 0, 2, 256u << 10), "its overwrite");
    printf("fits and overwrite: ok\n");
    PDCobj_close(o);
    PDCclose(pdc);
    printf("OK\n");
    return 0;
}

/* Interleaved writers of one 512 x 512 int object (run "interleave-even" and
 * "interleave-odd" at the same time in one job, then "interleave-check"): even writes the even
 * columns with a strided region, odd writes the odd columns as 256 one-column boxes in one
 * start_all (enough bytes for the direct path of a client on the daemon's node), each ITERS
 * times with the iteration in the values. Neither may overwrite the other's elements: at the
 * end every even column holds even's last values and every odd column odd's. */
#define IL_N 512
#define IL_ITERS 30

static pdcid_t il_open(pdcid_t pdc, int create)
{
    if (!create) {
        for (int i = 0; i < 200; i++) {
            pdcid_t o = PDCobj_open("interleaved", pdc);
            if (o != 0)
                return o;
            struct timespec ts = {0, 50000000};
            nanosleep(&ts, NULL);
        }
        FAIL_IF(1, "PDCobj_open interleaved");
    }
    pdcid_t cont = PDCcont_create("strided-interleave", PDCprop_create(PDC_CONT_CREATE, pdc));
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t dims[2] = {IL_N, IL_N};
    PDCprop_set_obj_type(prop, PDC_INT);
    PDCprop_set_obj_dims(prop, 2, dims);
    pdcid_t o = PDCobj_create(cont, "interleaved", prop);
    FAIL_IF(o == 0, "PDCobj_create interleaved");
    return o;
}

static int il_value(int odd, int iter, uint64_t r, uint64_t c)
{
    return (odd ? 1 << 30 : 0) + iter * 1000000 + (int)(r * IL_N + c) % 1000000;
}

static int run_interleave(const char *role)
{
    pdcid_t pdc = PDCinit("pdc");
    FAIL_IF(pdc == 0, "PDCinit");
    int odd = strcmp(role, "odd") == 0;
    pdcid_t o = il_open(pdc, strcmp(role, "even") == 0);
    int *buf = malloc(IL_N * IL_N * sizeof(int));
    uint64_t zero = 0, half = IL_N * IL_N / 2;
    if (strcmp(role, "check") == 0) {
        uint64_t z2[2] = {0, 0}, dims[2] = {IL_N, IL_N};
        pdcid_t lr = PDCregion_create(2, z2, dims), rr = PDCregion_create(2, z2, dims);
        pdcid_t t = PDCregion_transfer_create(buf, PDC_READ, o, lr, rr);
        FAIL_IF(t == 0 || PDCregion_transfer_start(t) != SUCCEED ||
                    PDCregion_transfer_wait(t) != SUCCEED,
                "read");
        for (uint64_t r = 0; r < IL_N; r++)
            for (uint64_t c = 0; c < IL_N; c++)
                if (buf[r * IL_N + c] != il_value((int)(c & 1), IL_ITERS - 1, r, c)) {
                    printf("MISMATCH interleave: element (%llu, %llu) is %d, expected %d\n",
                           (unsigned long long)r, (unsigned long long)c, buf[r * IL_N + c],
                           il_value((int)(c & 1), IL_ITERS - 1, r, c));
                    return 1;
                }
        printf("interleave check: every column holds its writer's last values\n");
        PDCclose(pdc);
        return 0;
    }
    for (int it = 0; it < IL_ITERS; it++) {
        if (!odd) {
            for (uint64_t k = 0; k < half; k++)
                buf[k] = il_value(0, it, k / (IL_N / 2), 2 * (k % (IL_N / 2)));
            uint64_t st[2] = {0, 0}, sd[2] = {1, 2}, ct[2] = {IL_N, IL_N / 2}, bk[2] = {1, 1};
            pdcid_t lr = PDCregion_create(1, &zero, &half);
            pdcid_t rr = PDCbb_region_create_strided(2, st, sd, ct, bk);
            pdcid_t t = PDCregion_transfer_create(buf, PDC_WRITE, o, lr, rr);
            FAIL_IF(t == 0 || PDCregion_transfer_start(t) != SUCCEED ||
                        PDCregion_transfer_wait(t) != SUCCEED,
                    "even write");
            PDCregion_transfer_close(t);
            PDCregion_close(lr);
            PDCregion_close(rr);
        } else {
            pdcid_t ids[IL_N / 2];
            uint64_t n = IL_N;
            pdcid_t lr = PDCregion_create(1, &zero, &n);
            for (uint64_t j = 0; j < IL_N / 2; j++) {
                uint64_t c = 2 * j + 1, off[2] = {0, c}, size[2] = {IL_N, 1};
                for (uint64_t r = 0; r < IL_N; r++)
                    buf[j * IL_N + r] = il_value(1, it, r, c);
                pdcid_t rr = PDCregion_create(2, off, size);
                ids[j] = PDCregion_transfer_create(buf + j * IL_N, PDC_WRITE, o, lr, rr);
                FAIL_IF(ids[j] == 0, "odd create");
                PDCregion_close(rr);
            }
            FAIL_IF(PDCregion_transfer_start_all(ids, IL_N / 2) != SUCCEED ||
                        PDCregion_transfer_wait_all(ids, IL_N / 2) != SUCCEED,
                    "odd write");
            for (uint64_t j = 0; j < IL_N / 2; j++)
                PDCregion_transfer_close(ids[j]);
            PDCregion_close(lr);
        }
    }
    printf("interleave %s: %d writes\n", role, IL_ITERS);
    PDCclose(pdc);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t seed = 1;
    int ops = 200;
    const char *name = "strided";
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--seed") == 0)
            seed = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--ops") == 0)
            ops = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--name") == 0)
            name = argv[i + 1];
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "model") == 0)
        return run_model(seed, ops, name);
    if (argc >= 2 && strcmp(argv[1], "verify") == 0)
        return run_verify(name);
    if (argc >= 2 && strcmp(argv[1], "bad") == 0)
        return run_bad();
    if (argc >= 2 && strcmp(argv[1], "nospc") == 0)
        return run_nospc();
    if (argc >= 2 && strncmp(argv[1], "interleave-", 11) == 0)
        return run_interleave(argv[1] + 11);
    fprintf(stderr, "usage: pdc_strided_model model|verify|bad [--seed S] [--ops N] [--name P]\n");
    return 2;
}
