/*
 * pdc_query_model - randomized model test of PDC data queries against a brute-force scan in the
 * client, for tests/bats/75-query.bats.
 *
 *   pdc_query_model --seed S [--queries Q] [--objects K] [--mode write|check] [--name P]
 *                   [--inject-mismatch]
 *   pdc_query_model --cases
 *
 * From the seed alone it derives K objects (random element type among every PDC type with
 * values, 1-3 dimensions, placements in turn PDC_OBJ_STATIC, PDC_REGION_STATIC,
 * PDC_REGION_DYNAMIC, PDC_REGION_LOCAL, PDCBB_REGION_STRIPED), in groups sharing one shape so
 * queries can combine objects, plus one larger 1-D double object (a ramp) for block skipping; and
 * random writes of random boxes (overlapping each other, leaving some elements never written, which
 * read as zero) kept in zero-initialised reference arrays. Mode write creates and writes them; mode
 * check opens them by name (e.g. from a drained job) and writes nothing. Then Q random queries:
 * trees of up to 7 leaves with <, <=, >, >=, == (and some range leaves) on one object or on
 * several objects of a group, half restricted to a random region; each is checked against the
 * reference: PDCquery_get_nhits, PDCquery_get_selection (coordinates, in row-major order),
 * PDCquery_get_sel_data and PDCquery_get_data of another object of the group. Then
 * PDCquery_get_histogram of every object against a histogram computed here, and a query on the
 * ramp twice: the second must skip blocks (PDCbb_query_last_stats). Prints "result ..." lines
 * (identical for the same seed whatever the placement and daemons) and "OK" at the end.
 * --inject-mismatch corrupts one expected value: the run must then fail.
 *
 * --cases: bad input, each printed as "case NAME: ERRNAME: message" and checked for its code.
 * Exit status 0 when everything matched, 1 otherwise, 2 on usage errors.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"
#include "prog_util.h"

#define MAXOBJ 32
#define MAXLEAF 7
#define RAMP_OVERWRITE 65536 /* elements of the ramp rewritten after its statistics exist */

static uint64_t rng_state;
static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t below(uint64_t n) { return n ? rng() % n : 0; }

static int failures;
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("MISMATCH: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

static const pdc_var_type_t types[] = {PDC_INT,    PDC_FLOAT,  PDC_DOUBLE, PDC_CHAR,  PDC_BOOLEAN,
                                       PDC_SHORT,  PDC_UINT,   PDC_INT64,  PDC_UINT64, PDC_INT16,
                                       PDC_INT8,   PDC_UINT8,  PDC_UINT16, PDC_INT32, PDC_UINT32,
                                       PDC_LONG,   PDC_SIZE_T};
#define NTYPES (sizeof(types) / sizeof(types[0]))
/* pdc_region_partition_t values 0..3 and PDCBB_REGION_STRIPED (4) */
#define NPARTS 5
static const char *const part_names[NPARTS] = {"obj_static", "region_static", "region_dynamic",
                                               "region_local", "region_striped"};

enum { C_INT, C_UINT, C_FLOAT };
static int cls_of(pdc_var_type_t t)
{
    switch (t) {
    case PDC_FLOAT:
    case PDC_DOUBLE: return C_FLOAT;
    case PDC_BOOLEAN:
    case PDC_UINT:
    case PDC_UINT64:
    case PDC_UINT8:
    case PDC_UINT16:
    case PDC_UINT32:
    case PDC_SIZE_T: return C_UINT;
    default: return C_INT;
    }
}
static size_t size_of(pdc_var_type_t t)
{
    switch (t) {
    case PDC_CHAR:
    case PDC_BOOLEAN:
    case PDC_INT8:
    case PDC_UINT8: return 1;
    case PDC_SHORT:
    case PDC_INT16:
    case PDC_UINT16: return 2;
    case PDC_INT:
    case PDC_FLOAT:
    case PDC_UINT:
    case PDC_INT32:
    case PDC_UINT32: return 4;
    default: return 8;
    }
}

/* A value in its class. */
typedef struct val {
    int64_t i;
    uint64_t u;
    double f;
} val_t;

static val_t get_val(pdc_var_type_t t, const void *p)
{
    val_t v = {0, 0, 0};
    switch (t) {
    case PDC_INT: case PDC_INT32: v.i = *(const int32_t *)p; break;
    case PDC_CHAR: case PDC_INT8: v.i = *(const int8_t *)p; break;
    case PDC_SHORT: case PDC_INT16: v.i = *(const int16_t *)p; break;
    case PDC_INT64: case PDC_LONG: v.i = *(const int64_t *)p; break;
    case PDC_BOOLEAN: case PDC_UINT8: v.u = *(const uint8_t *)p; break;
    case PDC_UINT16: v.u = *(const uint16_t *)p; break;
    case PDC_UINT: case PDC_UINT32: v.u = *(const uint32_t *)p; break;
    case PDC_UINT64: case PDC_SIZE_T: v.u = *(const uint64_t *)p; break;
    case PDC_FLOAT: v.f = *(const float *)p; break;
    case PDC_DOUBLE: v.f = *(const double *)p; break;
    default: break;
    }
    return v;
}

/* A random value of type t into p: small ranges so that == finds elements. Extremes of 64-bit
 * types show up now and then (exact comparison beyond 2^53). */
static void rand_val(pdc_var_type_t t, void *p)
{
    int64_t s = (int64_t)below(41) - 20;
    uint64_t u = below(41);
    int big = below(20) == 0;
    switch (t) {
    case PDC_INT: case PDC_INT32: *(int32_t *)p = (int32_t)s; break;
    case PDC_CHAR: case PDC_INT8: *(int8_t *)p = (int8_t)s; break;
    case PDC_SHORT: case PDC_INT16: *(int16_t *)p = (int16_t)s; break;
    case PDC_INT64: case PDC_LONG:
        *(int64_t *)p = big ? (INT64_MAX - (int64_t)below(3)) * (below(2) ? 1 : -1) : s;
        break;
    case PDC_BOOLEAN: *(uint8_t *)p = (uint8_t)(u & 1); break;
    case PDC_UINT8: *(uint8_t *)p = (uint8_t)(big ? 255 - below(3) : u); break;
    case PDC_UINT16: *(uint16_t *)p = (uint16_t)u; break;
    case PDC_UINT: case PDC_UINT32: *(uint32_t *)p = (uint32_t)(big ? UINT32_MAX - below(3) : u); break;
    case PDC_UINT64: case PDC_SIZE_T: *(uint64_t *)p = big ? UINT64_MAX - below(3) : u; break;
    case PDC_FLOAT: *(float *)p = (float)s / 4.0f; break;
    case PDC_DOUBLE: *(double *)p = (double)s / 4.0; break;
    default: break;
    }
}

typedef struct obj {
    char name[128];
    pdcid_t id;
    pdc_var_type_t type;
    int part;
    int group;
    int ndim;
    uint64_t dims[3];
    uint64_t n;
    size_t unit;
    uint8_t *ref;
} obj_t;

static obj_t objs[MAXOBJ + 1];
static int nobj;
static pdcid_t pdc, cont;
static int write_mode = 1;

static uint64_t lin_of(const obj_t *o, const uint64_t *c)
{
    uint64_t l = 0;
    for (int d = 0; d < o->ndim; d++)
        l = l * o->dims[d] + c[d];
    return l;
}

static int transfer(pdcid_t obj, pdc_access_t access, void *buf, int ndim, const uint64_t *off,
                    const uint64_t *size)
{
    int ok = prog_transfer(obj, access, buf, ndim, off, size);
    if (!ok)
        printf("FAILED transfer: %s: %s\n", PDCbb_last_error_name(), PDCbb_last_error_message());
    return ok;
}

static void rand_box(const obj_t *o, uint64_t *off, uint64_t *size)
{
    for (int d = 0; d < o->ndim; d++) {
        off[d] = below(o->dims[d]);
        size[d] = 1 + below(o->dims[d] - off[d]);
    }
}

/* Objects, their data and (write mode) the writes. */
static int setup(const char *prefix, int k)
{
    int ngroups = k < 4 ? 1 : 3;
    uint64_t gdims[3][3];
    int gndim[3];
    for (int g = 0; g < ngroups; g++) {
        gndim[g] = 1 + (int)below(3);
        uint64_t maxe = gndim[g] == 1 ? 3000 : gndim[g] == 2 ? 60 : 16;
        for (int d = 0; d < gndim[g]; d++)
            gdims[g][d] = 3 + below(maxe);
    }
    nobj = k + 1;
    for (int i = 0; i < nobj; i++) {
        obj_t *o = &objs[i];
        memset(o, 0, sizeof(*o));
        if (i == k) { /* the ramp */
            o->type = PDC_DOUBLE;
            o->part = (int)below(3); /* obj_static, region_static or striped (2.6 MB: 3 stripes) */
            if (o->part == 2)
                o->part = 4;
            o->group = -1;
            o->ndim = 1;
            o->dims[0] = 5 * 65536 + 1234;
        } else {
            o->type = types[below(NTYPES)];
            o->part = i % NPARTS;
            o->group = i % ngroups;
            o->ndim = gndim[o->group];
            memcpy(o->dims, gdims[o->group], sizeof(o->dims));
        }
        snprintf(o->name, sizeof(o->name), "%s.o%d", prefix, i);
        o->unit = size_of(o->type);
        o->n = 1;
        for (int d = 0; d < o->ndim; d++)
            o->n *= o->dims[d];
        o->ref = calloc(o->n, o->unit);
        if (o->ref == NULL)
            return 1;
    }
    char cname[160];
    snprintf(cname, sizeof(cname), "%s.cont", prefix);
    if (write_mode) {
        pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
        cont = PDCcont_create(cname, cprop);
        PDCprop_close(cprop);
    } else {
        cont = PDCcont_open(cname, pdc);
    }
    if (cont == 0) {
        printf("FAILED container %s: %s\n", cname, PDCbb_last_error_message());
        return 1;
    }
    for (int i = 0; i < nobj; i++) {
        obj_t *o = &objs[i];
        if (write_mode) {
            pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
            PDCprop_set_obj_type(prop, o->type);
            PDCprop_set_obj_dims(prop, o->ndim, o->dims);
            PDCprop_set_obj_transfer_region_type(prop, (pdc_region_partition_t)o->part);
            o->id = PDCobj_create(cont, o->name, prop);
            PDCprop_close(prop);
        } else {
            o->id = PDCobj_open(o->name, pdc);
        }
        if (o->id == 0) {
            printf("FAILED object %s: %s\n", o->name, PDCbb_last_error_message());
            return 1;
        }
        /* The data: random boxes of random values; the ramp is written whole. */
        if (o->group < 0) {
            double *r = (double *)o->ref;
            for (uint64_t e = 0; e < o->n; e++)
                r[e] = (double)e;
            uint64_t off = 0;
            if (write_mode && !transfer(o->id, PDC_WRITE, o->ref, 1, &off, o->dims))
                return 1;
            if (!write_mode) /* what check_skipping overwrote during the job */
                for (uint64_t e = 0; e < RAMP_OVERWRITE; e++)
                    r[e] = 1e12;
            continue;
        }
        int nw = 2 + (int)below(6);
        for (int w = 0; w < nw; w++) {
            uint64_t off[3], size[3], c[3], cnt = 1;
            rand_box(o, off, size);
            for (int d = 0; d < o->ndim; d++)
                cnt *= size[d];
            uint8_t *buf = malloc(cnt * o->unit);
            if (buf == NULL)
                return 1;
            memcpy(c, off, sizeof(c));
            for (uint64_t e = 0; e < cnt; e++) {
                rand_val(o->type, buf + e * o->unit);
                memcpy(o->ref + lin_of(o, c) * o->unit, buf + e * o->unit, o->unit);
                for (int d = o->ndim - 1; d >= 0; d--) {
                    if (++c[d] < off[d] + size[d])
                        break;
                    c[d] = off[d];
                }
            }
            int ok = !write_mode || transfer(o->id, PDC_WRITE, buf, o->ndim, off, size);
            free(buf);
            if (!ok)
                return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ queries and the model */

typedef struct mleaf {
    int obj;
    int op, is_range, op2;
    uint8_t v[8], v2[8];
} mleaf_t;

/* The model's tree: nodes in an array; leaves or AND/OR of two nodes. */
typedef struct mnode {
    int leaf; /* index into leaves, or -1 */
    int and_;
    int l, r;
} mnode_t;

typedef struct mquery {
    mleaf_t leaves[MAXLEAF];
    int nleaves;
    mnode_t nodes[2 * MAXLEAF];
    int nnodes, root;
    int has_region;
    uint64_t off[3], size[3];
} mquery_t;

static int cmp(int cls, val_t a, val_t b)
{
    if (cls == C_INT)
        return a.i < b.i ? -1 : a.i > b.i;
    if (cls == C_UINT)
        return a.u < b.u ? -1 : a.u > b.u;
    return a.f < b.f ? -1 : a.f > b.f ? 1 : a.f == b.f ? 0 : 2; /* 2: unordered */
}

static int op_holds(int op, int c)
{
    if (c == 2)
        return 0;
    switch (op) {
    case PDC_GT: return c > 0;
    case PDC_LT: return c < 0;
    case PDC_GTE: return c >= 0;
    case PDC_LTE: return c <= 0;
    default: return c == 0;
    }
}

static int leaf_holds(const mleaf_t *lf, uint64_t lin)
{
    const obj_t *o = &objs[lf->obj];
    int cls = cls_of(o->type);
    val_t x = get_val(o->type, o->ref + lin * o->unit);
    int ok = op_holds(lf->op, cmp(cls, x, get_val(o->type, lf->v)));
    if (lf->is_range)
        ok = ok && op_holds(lf->op2, cmp(cls, x, get_val(o->type, lf->v2)));
    return ok;
}

static int node_holds(const mquery_t *q, int n, uint64_t lin)
{
    const mnode_t *nd = &q->nodes[n];
    if (nd->leaf >= 0)
        return leaf_holds(&q->leaves[nd->leaf], lin);
    return nd->and_ ? node_holds(q, nd->l, lin) && node_holds(q, nd->r, lin)
                    : node_holds(q, nd->l, lin) || node_holds(q, nd->r, lin);
}

static int gen_node(mquery_t *q, int group_objs[], int ng, int depth, int multi)
{
    int n = q->nnodes++;
    if (q->nleaves < MAXLEAF - 1 && depth < 3 && below(3) != 0) {
        q->nodes[n].leaf = -1;
        q->nodes[n].and_ = (int)below(2);
        q->nodes[n].l = gen_node(q, group_objs, ng, depth + 1, multi);
        q->nodes[n].r = gen_node(q, group_objs, ng, depth + 1, multi);
        return n;
    }
    mleaf_t *lf = &q->leaves[q->nleaves];
    q->nodes[n].leaf = q->nleaves++;
    lf->obj = multi ? group_objs[below((uint64_t)ng)] : group_objs[0];
    const obj_t *o = &objs[lf->obj];
    lf->op = 1 + (int)below(5);
    /* Constants: mostly a value present in the object, else random. */
    if (below(3) != 0)
        memcpy(lf->v, o->ref + below(o->n) * o->unit, o->unit);
    else
        rand_val(o->type, lf->v);
    lf->is_range = below(8) == 0;
    if (lf->is_range) {
        lf->op2 = 1 + (int)below(5);
        rand_val(o->type, lf->v2);
    }
    return n;
}

static pdc_query_t *build(const mquery_t *q, int n)
{
    const mnode_t *nd = &q->nodes[n];
    if (nd->leaf >= 0) {
        const mleaf_t *lf = &q->leaves[nd->leaf];
        const obj_t *o = &objs[lf->obj];
        pdc_query_t *x = PDCquery_create(o->id, (pdc_query_op_t)lf->op, o->type, (void *)lf->v);
        if (x && lf->is_range) {
            /* PDC's range constraint: a second comparison on the same leaf. */
            x->constraint->is_range = 1;
            x->constraint->op2 = (pdc_query_op_t)lf->op2;
            memcpy(&x->constraint->value2, lf->v2, o->unit);
        }
        return x;
    }
    pdc_query_t *l = build(q, nd->l), *r = build(q, nd->r);
    if (l == NULL || r == NULL)
        return NULL;
    return nd->and_ ? PDCquery_and(l, r) : PDCquery_or(l, r);
}

static int inject;
static uint64_t total_hits;

static void one_query(int qi, int multi)
{
    mquery_t q;
    memset(&q, 0, sizeof(q));
    /* A group (not the ramp) and its objects. */
    int g = objs[below((uint64_t)nobj - 1)].group, group_objs[MAXOBJ] = {0}, ng = 0;
    for (int i = 0; i < nobj; i++)
        if (objs[i].group == g)
            group_objs[ng++] = i;
    if (!multi) {
        int pick = group_objs[below((uint64_t)ng)];
        group_objs[0] = pick;
        ng = 1;
    }
    q.root = gen_node(&q, group_objs, ng, 0, multi);
    const obj_t *shape = &objs[group_objs[0]];
    q.has_region = below(2);
    if (q.has_region)
        rand_box(shape, q.off, q.size);
    pdc_query_t *pq = build(&q, q.root);
    if (pq == NULL) {
        fail("query %d: building failed: %s: %s", qi, PDCbb_last_error_name(),
             PDCbb_last_error_message());
        return;
    }
    struct pdc_region_info reg;
    memset(&reg, 0, sizeof(reg));
    if (q.has_region) {
        reg.ndim = (size_t)shape->ndim;
        reg.offset = q.off;
        reg.size = q.size;
        if (PDCquery_sel_region(pq, &reg) != SUCCEED) {
            fail("query %d: PDCquery_sel_region: %s", qi, PDCbb_last_error_message());
            PDCquery_free_all(pq);
            return;
        }
    }
    /* The model: every element of the scope, row-major. */
    uint64_t *exp = malloc(shape->n * sizeof(uint64_t)), nexp = 0;
    for (uint64_t lin = 0; lin < shape->n; lin++) {
        uint64_t c[3], l = lin;
        for (int d = shape->ndim - 1; d >= 0; d--) {
            c[d] = l % shape->dims[d];
            l /= shape->dims[d];
        }
        int in = 1;
        for (int d = 0; d < shape->ndim && q.has_region; d++)
            in = in && c[d] >= q.off[d] && c[d] < q.off[d] + q.size[d];
        if (in && node_holds(&q, q.root, lin))
            exp[nexp++] = lin;
    }
    if (inject && qi == 0) {
        if (nexp > 0)
            nexp--;
        else
            exp[nexp++] = 0;
    }
    uint64_t nh = UINT64_MAX;
    if (PDCquery_get_nhits(pq, &nh) != SUCCEED)
        fail("query %d: PDCquery_get_nhits: %s: %s", qi, PDCbb_last_error_name(),
             PDCbb_last_error_message());
    else if (nh != nexp) {
        fail("query %d: nhits %" PRIu64 ", expected %" PRIu64, qi, nh, nexp);
        PDCquery_print(pq);
    }
    pdc_selection_t sel;
    memset(&sel, 0, sizeof(sel));
    if (PDCquery_get_selection(pq, &sel) != SUCCEED) {
        fail("query %d: PDCquery_get_selection: %s: %s", qi, PDCbb_last_error_name(),
             PDCbb_last_error_message());
        goto out;
    }
    if (sel.nhits != nexp || sel.ndim != (size_t)shape->ndim) {
        fail("query %d: selection of %" PRIu64 " hits in %zu dims, expected %" PRIu64 " in %d", qi,
             sel.nhits, sel.ndim, nexp, shape->ndim);
        PDCquery_print(pq);
        goto out;
    }
    for (uint64_t i = 0; i < nexp; i++)
        if (lin_of(shape, sel.coords + i * sel.ndim) != exp[i]) {
            fail("query %d: hit %" PRIu64 " at element %" PRIu64 ", expected %" PRIu64, qi, i,
                 lin_of(shape, sel.coords + i * sel.ndim), exp[i]);
            goto out;
        }
    /* Values: of the first leaf's object (get_sel_data) and of another object of the group. */
    for (int pass = 0; pass < 2; pass++) {
        const obj_t *o = pass == 0 ? &objs[q.leaves[0].obj]
                                   : &objs[group_objs[below((uint64_t)ng)]];
        if (pass == 1 && multi == 0) {
            for (int i = 0; i < nobj; i++)
                if (objs[i].group == shape->group && below(2))
                    o = &objs[i];
        }
        uint8_t *vals = malloc(nexp * o->unit + 1);
        int rc = pass == 0 ? PDCquery_get_sel_data(pq, &sel, vals)
                           : PDCquery_get_data(o->id, &sel, vals);
        if (rc != SUCCEED) {
            fail("query %d: %s of %s: %s: %s", qi, pass ? "PDCquery_get_data" : "get_sel_data",
                 o->name, PDCbb_last_error_name(), PDCbb_last_error_message());
        } else {
            for (uint64_t i = 0; i < nexp; i++)
                if (memcmp(vals + i * o->unit, o->ref + exp[i] * o->unit, o->unit) != 0) {
                    fail("query %d: value %" PRIu64 " of %s at element %" PRIu64 " differs", qi,
                         i, o->name, exp[i]);
                    break;
                }
        }
        free(vals);
    }
    printf("result q%d leaves=%d multi=%d region=%d nhits=%" PRIu64 "\n", qi, q.nleaves, multi,
           q.has_region, nexp);
    total_hits += nexp;
out:
    PDCselection_free(&sel);
    free(exp);
    PDCquery_free_all(pq);
}

/* The histogram of every object against one computed here with the same bins. */
static void check_histograms(void)
{
    for (int i = 0; i < nobj; i++) {
        obj_t *o = &objs[i];
        if (PDCquery_get_histogram(o->id) != SUCCEED) {
            fail("PDCquery_get_histogram %s: %s: %s", o->name, PDCbb_last_error_name(),
                 PDCbb_last_error_message());
            continue;
        }
        pdc_histogram_t *h = PDCbb_obj_histogram(o->id);
        pdc_histogram_t *g = PDC_gen_hist(o->type, o->n, o->ref);
        if (h == NULL || g == NULL) {
            fail("histogram of %s missing: %s", o->name, PDCbb_last_error_message());
        } else if (h->nbin != g->nbin || h->range[0] != g->range[0] || h->incr != g->incr) {
            fail("histogram of %s: %d bins from %g by %g, expected %d from %g by %g", o->name,
                 h->nbin, h->range[0], h->incr, g->nbin, g->range[0], g->incr);
        } else {
            uint64_t sum = 0;
            for (int b = 0; b < h->nbin; b++) {
                sum += h->bin[b];
                if (h->bin[b] != g->bin[b]) {
                    fail("histogram of %s: bin %d holds %" PRIu64 ", expected %" PRIu64,
                         o->name, b, h->bin[b], g->bin[b]);
                    break;
                }
            }
            if (sum != o->n)
                fail("histogram of %s counts %" PRIu64 " elements of %" PRIu64, o->name, sum,
                     o->n);
        }
        /* A query made after it carries a copy. */
        uint8_t zero[8] = {0};
        pdc_query_t *q = PDCquery_create(o->id, PDC_GTE, o->type, zero);
        if (q == NULL || q->constraint->hist == NULL || h == NULL ||
            q->constraint->hist->nbin != h->nbin)
            fail("a query on %s does not carry the histogram", o->name);
        PDCquery_free_all(q);
        PDC_free_hist(h);
        PDC_free_hist(g);
    }
    printf("result histograms=%d\n", nobj);
}

/* The ramp: x > v selects its tail; once the blocks' min/max are known they are skipped. */
static void check_skipping(void)
{
    obj_t *o = &objs[nobj - 1];
    double v = (double)o->n - 70000.5;
    uint64_t n1 = 0, n2 = 0, sc1, sk1, sc2, sk2;
    pdc_query_t *q = PDCquery_create(o->id, PDC_GT, PDC_DOUBLE, &v);
    if (q == NULL || PDCquery_get_nhits(q, &n1) != SUCCEED) {
        fail("ramp query: %s", PDCbb_last_error_message());
        PDCquery_free_all(q);
        return;
    }
    PDCbb_query_last_stats(&sc1, &sk1, NULL);
    if (PDCquery_get_nhits(q, &n2) != SUCCEED)
        fail("ramp query again: %s", PDCbb_last_error_message());
    PDCbb_query_last_stats(&sc2, &sk2, NULL);
    uint64_t tail = write_mode ? 70000 : 70000 + RAMP_OVERWRITE;
    if (n1 != tail || n2 != tail)
        fail("ramp query: %" PRIu64 " and %" PRIu64 " hits, expected %" PRIu64, n1, n2, tail);
    /* A drained job has no daemons to keep block statistics. */
    if (sk2 == 0 && strcmp(PDCbb_discovery_method(), "drained") != 0)
        fail("ramp query: no blocks skipped the second time (scanned %" PRIu64
             ", skipped %" PRIu64 "; first time %" PRIu64 ", %" PRIu64 ")",
             sc2, sk2, sc1, sk1);
    /* Statistics are never stale: rewrite the first block (whose min/max the daemon knows
     * and which the query skipped) with values that match, and ask again. */
    if (write_mode) {
        double *r = (double *)o->ref;
        for (uint64_t e = 0; e < RAMP_OVERWRITE; e++)
            r[e] = 1e12;
        uint64_t off = 0, cnt = RAMP_OVERWRITE, n3 = 0;
        if (!transfer(o->id, PDC_WRITE, o->ref, 1, &off, &cnt))
            fail("ramp overwrite: %s", PDCbb_last_error_message());
        else if (PDCquery_get_nhits(q, &n3) != SUCCEED)
            fail("ramp query after the overwrite: %s", PDCbb_last_error_message());
        else if (n3 != 70000 + RAMP_OVERWRITE)
            fail("ramp query after the overwrite: %" PRIu64 " hits, expected %u (stale block "
                 "statistics?)", n3, 70000 + RAMP_OVERWRITE);
        else
            printf("stale-check: the rewritten block was scanned again\n");
    }
    /* Many hits: the selection comes in several replies. */
    double zero = -1;
    pdc_query_t *all = PDCquery_create(o->id, PDC_GT, PDC_DOUBLE, &zero);
    pdc_selection_t sel;
    memset(&sel, 0, sizeof(sel));
    if (all == NULL || PDCquery_get_selection(all, &sel) != SUCCEED)
        fail("ramp selection: %s", PDCbb_last_error_message());
    else if (sel.nhits != o->n)
        fail("ramp selection: %" PRIu64 " hits, expected %" PRIu64, sel.nhits, o->n);
    else
        for (uint64_t i = 0; i < sel.nhits; i++)
            if (sel.coords[i] != i) {
                fail("ramp selection: hit %" PRIu64 " is %" PRIu64, i, sel.coords[i]);
                break;
            }
    PDCselection_free(&sel);
    PDCquery_free_all(all);
    PDCquery_free_all(q);
    printf("skipping first scanned=%" PRIu64 " skipped=%" PRIu64 " then scanned=%" PRIu64
           " skipped=%" PRIu64 "\n", sc1, sk1, sc2, sk2);
}

/* ------------------------------------------------------------------ bad input */

static int expect_case(const char *name, int failed, const char *want)
{
    const char *got = PDCbb_last_error_name();
    printf("case %s: %s: %s\n", name, got, PDCbb_last_error_message());
    if (!failed || strcmp(got, want) != 0) {
        printf("MISMATCH: case %s: %s, expected failure %s\n", name, failed ? got : "success",
               want);
        failures++;
        return 0;
    }
    return 1;
}

static int cases(void)
{
    uint64_t d1[1] = {100}, d2[2] = {10, 10};
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    cont = PDCcont_create("qcases.cont", cprop);
    PDCprop_close(cprop);
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    PDCprop_set_obj_type(prop, PDC_INT);
    PDCprop_set_obj_dims(prop, 1, d1);
    pdcid_t a = PDCobj_create(cont, "qcases.a", prop);
    pdcid_t gone = PDCobj_create(cont, "qcases.gone", prop);
    PDCprop_set_obj_dims(prop, 2, d2);
    pdcid_t b = PDCobj_create(cont, "qcases.b", prop);
    PDCprop_close(prop);
    if (!a || !b || !gone) {
        printf("FAILED setup: %s\n", PDCbb_last_error_message());
        return 1;
    }
    int iv = 5;
    float fv = 5;
    uint64_t n;
    expect_case("null-query", PDCquery_get_nhits(NULL, &n) != SUCCEED, "PDCBB_ERR_INVAL");
    pdc_selection_t sel;
    memset(&sel, 0, sizeof(sel));
    expect_case("null-query-selection", PDCquery_get_selection(NULL, &sel) != SUCCEED,
                "PDCBB_ERR_INVAL");
    expect_case("wrong-type", PDCquery_create(a, PDC_GT, PDC_FLOAT, &fv) == NULL,
                "PDCBB_ERR_INVAL");
    expect_case("unknown-object", PDCquery_create((pdcid_t)0x123456789ull, PDC_GT, PDC_INT, &iv) ==
                                      NULL,
                "PDCBB_ERR_BAD_ID");
    expect_case("bad-operator", PDCquery_create(a, (pdc_query_op_t)42, PDC_INT, &iv) == NULL,
                "PDCBB_ERR_INVAL");
    expect_case("null-value", PDCquery_create(a, PDC_GT, PDC_INT, NULL) == NULL,
                "PDCBB_ERR_INVAL");
    pdc_query_t *qa = PDCquery_create(a, PDC_GT, PDC_INT, &iv);
    pdc_query_t *qg = PDCquery_create(gone, PDC_GT, PDC_INT, &iv);
    pdc_query_t *qb = PDCquery_create(b, PDC_GT, PDC_INT, &iv);
    if (!qa || !qg || !qb) {
        printf("FAILED queries: %s\n", PDCbb_last_error_message());
        return 1;
    }
    expect_case("null-and", PDCquery_and(qa, NULL) == NULL, "PDCBB_ERR_INVAL");
    PDCobj_close(gone);
    expect_case("closed-object", PDCquery_get_nhits(qg, &n) != SUCCEED, "PDCBB_ERR_BAD_ID");
    uint64_t off[1] = {90}, size[1] = {20};
    struct pdc_region_info reg = {.ndim = 1, .offset = off, .size = size};
    expect_case("region-outside", PDCquery_sel_region(qa, &reg) != SUCCEED,
                "PDCBB_ERR_BAD_REGION");
    uint64_t off2[2] = {0, 0}, size2[2] = {1, 1};
    struct pdc_region_info reg2 = {.ndim = 2, .offset = off2, .size = size2};
    expect_case("region-wrong-ndim", PDCquery_sel_region(qa, &reg2) != SUCCEED,
                "PDCBB_ERR_BAD_REGION");
    pdc_query_t *qb2 = PDCquery_create(b, PDC_LT, PDC_INT, &iv);
    pdc_query_t *mixed = PDCquery_and(qa, qb2);
    expect_case("different-shapes", PDCquery_get_nhits(mixed, &n) != SUCCEED, "PDCBB_ERR_INVAL");
    uint64_t coords[1] = {100};
    pdc_selection_t bad = {.ndim = 1, .nhits = 1, .coords = coords};
    int out;
    expect_case("selection-outside", PDCquery_get_data(a, &bad, &out) != SUCCEED,
                "PDCBB_ERR_BAD_REGION");
    expect_case("get-data-null", PDCquery_get_data(a, NULL, &out) != SUCCEED, "PDCBB_ERR_INVAL");
    expect_case("histogram-unknown", PDCquery_get_histogram((pdcid_t)0x123456789ull) != SUCCEED,
                "PDCBB_ERR_BAD_ID");
    PDCquery_free_all(mixed);
    PDCquery_free_all(qg);
    /* A correct query still works after all this. */
    if (PDCquery_get_nhits(qb, &n) != SUCCEED || n != 0) {
        printf("MISMATCH: the good query failed or found %" PRIu64 ": %s\n", n,
               PDCbb_last_error_message());
        failures++;
    }
    PDCquery_print(qb);
    PDCquery_free_all(qb);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t seed = 1;
    int nq = 40, k = 8, do_cases = 0;
    const char *prefix = "qm";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--queries") && i + 1 < argc)
            nq = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--objects") && i + 1 < argc)
            k = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--name") && i + 1 < argc)
            prefix = argv[++i];
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
            write_mode = strcmp(argv[++i], "check") != 0;
        else if (!strcmp(argv[i], "--inject-mismatch"))
            inject = 1;
        else if (!strcmp(argv[i], "--cases"))
            do_cases = 1;
        else {
            fprintf(stderr, "usage: %s --seed S [--queries Q] [--objects K] [--mode write|check] "
                            "[--name P] [--inject-mismatch] | --cases\n", argv[0]);
            return 2;
        }
    }
    if (k < 1 || k > MAXOBJ) {
        fprintf(stderr, "--objects: 1..%d\n", MAXOBJ);
        return 2;
    }
    rng_state = seed;
    pdc = PDCinit("pdc");
    if (pdc == 0) {
        printf("FAILED PDCinit: %s\n", PDCbb_last_error_message());
        return 1;
    }
    printf("daemons %d\n", PDCbb_nservers());
    if (do_cases) {
        int rc = cases();
        PDCclose(pdc);
        printf("%s\n", rc == 0 && failures == 0 ? "OK" : "FAILED");
        return rc == 0 && failures == 0 ? 0 : 1;
    }
    if (setup(prefix, k) != 0) {
        PDCclose(pdc);
        return 1;
    }
    int per_part[NPARTS] = {0};
    for (int i = 0; i < nobj; i++)
        per_part[objs[i].part]++;
    for (int p = 0; p < NPARTS; p++)
        printf("placement %s objects=%d\n", part_names[p], per_part[p]);
    for (int i = 0; i < nobj; i++)
        printf("object %s type=%d ndim=%d n=%" PRIu64 " part=%s\n", objs[i].name,
               (int)objs[i].type, objs[i].ndim, objs[i].n, part_names[objs[i].part]);
    for (int qi = 0; qi < nq; qi++)
        one_query(qi, qi % 3 == 2);
    check_histograms();
    check_skipping();
    for (int i = 0; i < nobj; i++) {
        PDCobj_close(objs[i].id);
        free(objs[i].ref);
    }
    PDCcont_close(cont);
    PDCclose(pdc);
    printf("queries=%d hits=%" PRIu64 " failures=%d\n", nq, total_hits, failures);
    printf("%s\n", failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
