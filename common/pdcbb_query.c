/*
 * pdcbb_query.c - query programs, their evaluation over element arrays, block statistics and
 * the piece scan (see pdcbb_query.h).
 */
#include "pdcbb_query.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdcbb_checked.h"
#include "pdcbb_proto.h"
#include "pdcbb_types.h"

/* Chunk of elements evaluated at once (masks are this long). */
#define QCHUNK 4096u

int pdcbb_query_class(int type)
{
    const pdcbb_type_info_t *t = pdcbb_type_info(type);

    switch (t ? t->kind : PDCBB_KIND_OPAQUE) {
    case PDCBB_KIND_INT:
        return PDCBB_QCLASS_INT;
    case PDCBB_KIND_UINT:
    case PDCBB_KIND_BOOL:
        return PDCBB_QCLASS_UINT;
    case PDCBB_KIND_FLOAT:
        return PDCBB_QCLASS_FLOAT;
    case PDCBB_KIND_CHARS:
    case PDCBB_KIND_OPAQUE:
        break; /* strings, void pointers, unknown types */
    }
    return PDCBB_QCLASS_NONE;
}

/* Machine kinds: class and size. */
enum { K_NONE, K_I8, K_I16, K_I32, K_I64, K_U8, K_U16, K_U32, K_U64, K_F32, K_F64 };

static int kind_of(int type)
{
    int cls = pdcbb_query_class(type);
    size_t sz = pdcbb_type_size(type);
    if (cls == PDCBB_QCLASS_INT)
        return sz == 1 ? K_I8 : sz == 2 ? K_I16 : sz == 4 ? K_I32 : sz == 8 ? K_I64 : K_NONE;
    if (cls == PDCBB_QCLASS_UINT)
        return sz == 1 ? K_U8 : sz == 2 ? K_U16 : sz == 4 ? K_U32 : sz == 8 ? K_U64 : K_NONE;
    if (cls == PDCBB_QCLASS_FLOAT)
        return sz == 4 ? K_F32 : sz == 8 ? K_F64 : K_NONE;
    return K_NONE;
}

pdcbb_qval_t pdcbb_query_value(int type, const void *raw)
{
    pdcbb_qval_t v = {.bits = 0};
    switch (kind_of(type)) {
    case K_I8: { int8_t x; memcpy(&x, raw, 1); v.i = x; break; }
    case K_I16: { int16_t x; memcpy(&x, raw, 2); v.i = x; break; }
    case K_I32: { int32_t x; memcpy(&x, raw, 4); v.i = x; break; }
    case K_I64: { int64_t x; memcpy(&x, raw, 8); v.i = x; break; }
    case K_U8: { uint8_t x; memcpy(&x, raw, 1); v.u = x; break; }
    case K_U16: { uint16_t x; memcpy(&x, raw, 2); v.u = x; break; }
    case K_U32: { uint32_t x; memcpy(&x, raw, 4); v.u = x; break; }
    case K_U64: { uint64_t x; memcpy(&x, raw, 8); v.u = x; break; }
    case K_F32: { float x; memcpy(&x, raw, 4); v.f = x; break; }
    case K_F64: { double x; memcpy(&x, raw, 8); v.f = x; break; }
    default: break;
    }
    return v;
}

void pdcbb_query_value_str(int type, pdcbb_qval_t v, char *buf, size_t len)
{
    switch (pdcbb_query_class(type)) {
    case PDCBB_QCLASS_INT: snprintf(buf, len, "%" PRId64, v.i); break;
    case PDCBB_QCLASS_UINT: snprintf(buf, len, "%" PRIu64, v.u); break;
    case PDCBB_QCLASS_FLOAT: snprintf(buf, len, "%.17g", v.f); break;
    default: snprintf(buf, len, "?"); break;
    }
}

double pdcbb_qval_double(int cls, pdcbb_qval_t v)
{
    return cls == PDCBB_QCLASS_INT ? (double)v.i : cls == PDCBB_QCLASS_UINT ? (double)v.u : v.f;
}

void pdcbb_qnode_encode(const pdcbb_qnode_t *node, uint64_t *w)
{
    w[0] = (uint64_t)node->kind | (uint64_t)node->op << 8 | (uint64_t)node->is_range << 16 |
           (uint64_t)node->op2 << 24;
    w[1] = node->v.bits;
    w[2] = node->v2.bits;
}

static int op_ok(unsigned op) { return op >= PDCBB_QOP_GT && op <= PDCBB_QOP_EQ; }

pdcbb_err_t pdcbb_qprog_decode(const uint64_t *w, uint32_t count, int type, pdcbb_qprog_t *p)
{
    memset(p, 0, sizeof(*p) - sizeof(p->node));
    p->type = type;
    p->cls = pdcbb_query_class(type);
    if (p->cls == PDCBB_QCLASS_NONE || kind_of(type) == K_NONE)
        return PDCBB_ERR_WRONG_TYPE;
    if (count % PDCBB_QNODE_WORDS != 0 || count / PDCBB_QNODE_WORDS > PDCBB_QPROG_MAX)
        return PDCBB_ERR_PROTO;
    p->n = count / PDCBB_QNODE_WORDS;
    uint32_t depth = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        const uint64_t *x = w + (size_t)i * PDCBB_QNODE_WORDS;
        pdcbb_qnode_t *nd = &p->node[i];
        if (x[0] >> 32)
            return PDCBB_ERR_PROTO;
        nd->kind = (uint8_t)(x[0] & 0xff);
        nd->op = (uint8_t)(x[0] >> 8 & 0xff);
        nd->is_range = (uint8_t)(x[0] >> 16 & 0xff);
        nd->op2 = (uint8_t)(x[0] >> 24 & 0xff);
        nd->v.bits = x[1];
        nd->v2.bits = x[2];
        if (nd->kind == PDCBB_QNODE_LEAF) {
            if (!op_ok(nd->op) || nd->is_range > 1 || (nd->is_range && !op_ok(nd->op2)))
                return PDCBB_ERR_PROTO;
            if (++depth > p->depth)
                p->depth = depth;
        } else if (nd->kind == PDCBB_QNODE_AND || nd->kind == PDCBB_QNODE_OR) {
            if (depth < 2)
                return PDCBB_ERR_PROTO;
            depth--;
        } else {
            return PDCBB_ERR_PROTO;
        }
    }
    if (p->n > 0 && depth != 1)
        return PDCBB_ERR_PROTO;
    return PDCBB_OK;
}

/* mask[i] = x[i] OP c for one machine type and its class member. */
#define LEAF_LOOP(CT, M)                                                                          \
    do {                                                                                          \
        const CT *x = vals;                                                                       \
        switch (op) {                                                                             \
        case PDCBB_QOP_GT: for (size_t i = 0; i < n; i++) m[i] = x[i] > c.M; break;               \
        case PDCBB_QOP_LT: for (size_t i = 0; i < n; i++) m[i] = x[i] < c.M; break;               \
        case PDCBB_QOP_GTE: for (size_t i = 0; i < n; i++) m[i] = x[i] >= c.M; break;             \
        case PDCBB_QOP_LTE: for (size_t i = 0; i < n; i++) m[i] = x[i] <= c.M; break;             \
        default: for (size_t i = 0; i < n; i++) m[i] = x[i] == c.M; break;                        \
        }                                                                                         \
    } while (0)

/* Signed elements compare as int64, unsigned as uint64, floating point as double: convert the
 * element (never the constant) so comparisons are exact. */
#define LEAF_LOOP_CAST(CT, WT, M)                                                                 \
    do {                                                                                          \
        const CT *x = vals;                                                                       \
        switch (op) {                                                                             \
        case PDCBB_QOP_GT: for (size_t i = 0; i < n; i++) m[i] = (WT)x[i] > c.M; break;           \
        case PDCBB_QOP_LT: for (size_t i = 0; i < n; i++) m[i] = (WT)x[i] < c.M; break;           \
        case PDCBB_QOP_GTE: for (size_t i = 0; i < n; i++) m[i] = (WT)x[i] >= c.M; break;         \
        case PDCBB_QOP_LTE: for (size_t i = 0; i < n; i++) m[i] = (WT)x[i] <= c.M; break;         \
        default: for (size_t i = 0; i < n; i++) m[i] = (WT)x[i] == c.M; break;                    \
        }                                                                                         \
    } while (0)

static void leaf_eval(int kind, unsigned op, pdcbb_qval_t c, const void *vals, size_t n,
                      uint8_t *m)
{
    switch (kind) {
    case K_I8: LEAF_LOOP_CAST(int8_t, int64_t, i); break;
    case K_I16: LEAF_LOOP_CAST(int16_t, int64_t, i); break;
    case K_I32: LEAF_LOOP_CAST(int32_t, int64_t, i); break;
    case K_I64: LEAF_LOOP(int64_t, i); break;
    case K_U8: LEAF_LOOP_CAST(uint8_t, uint64_t, u); break;
    case K_U16: LEAF_LOOP_CAST(uint16_t, uint64_t, u); break;
    case K_U32: LEAF_LOOP_CAST(uint32_t, uint64_t, u); break;
    case K_U64: LEAF_LOOP(uint64_t, u); break;
    case K_F32: LEAF_LOOP_CAST(float, double, f); break;
    case K_F64: LEAF_LOOP(double, f); break;
    default: memset(m, 0, n); break;
    }
}

void pdcbb_qprog_eval(const pdcbb_qprog_t *p, const void *vals, size_t n, uint8_t *mask,
                      uint8_t *scratch)
{
    int kind = kind_of(p->type);
    uint32_t sp = 0;
    if (p->n == 0) {
        memset(mask, 1, n);
        return;
    }
    for (uint32_t k = 0; k < p->n; k++) {
        const pdcbb_qnode_t *nd = &p->node[k];
        if (nd->kind == PDCBB_QNODE_LEAF) {
            uint8_t *m = scratch + (size_t)sp * n;
            leaf_eval(kind, nd->op, nd->v, vals, n, m);
            if (nd->is_range) {
                uint8_t *m2 = mask; /* free until the end */
                leaf_eval(kind, nd->op2, nd->v2, vals, n, m2);
                for (size_t i = 0; i < n; i++)
                    m[i] &= m2[i];
            }
            sp++;
        } else {
            uint8_t *a = scratch + (size_t)(sp - 2) * n, *b = a + n;
            if (nd->kind == PDCBB_QNODE_AND)
                for (size_t i = 0; i < n; i++)
                    a[i] &= b[i];
            else
                for (size_t i = 0; i < n; i++)
                    a[i] |= b[i];
            sp--;
        }
    }
    memcpy(mask, scratch, n);
}

/* Can some v in [mn, mx] satisfy v op c? */
static int leaf_may(int cls, unsigned op, pdcbb_qval_t c, const pdcbb_qstats_t *st)
{
#define MAY(M)                                                                                    \
    switch (op) {                                                                                 \
    case PDCBB_QOP_GT: return st->mx.M > c.M;                                                     \
    case PDCBB_QOP_GTE: return st->mx.M >= c.M;                                                   \
    case PDCBB_QOP_LT: return st->mn.M < c.M;                                                     \
    case PDCBB_QOP_LTE: return st->mn.M <= c.M;                                                   \
    default: return st->mn.M <= c.M && c.M <= st->mx.M;                                           \
    }
    if (cls == PDCBB_QCLASS_INT) {
        MAY(i)
    } else if (cls == PDCBB_QCLASS_UINT) {
        MAY(u)
    } else {
        MAY(f)
    }
#undef MAY
    return 1;
}

int pdcbb_qprog_may_match(const pdcbb_qprog_t *p, const pdcbb_qstats_t *st)
{
    uint8_t stack[PDCBB_QPROG_MAX];
    uint32_t sp = 0;
    if (!st->has)
        return 0; /* nothing but NaN: no comparison holds */
    if (p->n == 0)
        return 1;
    for (uint32_t k = 0; k < p->n; k++) {
        const pdcbb_qnode_t *nd = &p->node[k];
        if (nd->kind == PDCBB_QNODE_LEAF) {
            int m = leaf_may(p->cls, nd->op, nd->v, st);
            if (nd->is_range)
                m = m && leaf_may(p->cls, nd->op2, nd->v2, st);
            stack[sp++] = (uint8_t)m;
        } else {
            sp--;
            stack[sp - 1] = nd->kind == PDCBB_QNODE_AND ? (stack[sp - 1] && stack[sp])
                                                        : (stack[sp - 1] || stack[sp]);
        }
    }
    return stack[0];
}

#define NOT_NAN_INT(v) 1
#define NOT_NAN_FLT(v) ((v) == (v))
#define STATS_LOOP(CT, M, OK)                                                                     \
    do {                                                                                          \
        const CT *x = vals;                                                                       \
        size_t i = 0;                                                                             \
        if (!st->has) {                                                                           \
            for (; i < n && !OK(x[i]); i++) /* NaN */                                             \
                ;                                                                                 \
            if (i == n)                                                                           \
                break;                                                                            \
            st->mn.M = st->mx.M = x[i];                                                           \
            st->has = 1;                                                                          \
        }                                                                                         \
        for (; i < n; i++) {                                                                      \
            if (x[i] < st->mn.M)                                                                  \
                st->mn.M = x[i];                                                                  \
            if (x[i] > st->mx.M)                                                                  \
                st->mx.M = x[i];                                                                  \
        }                                                                                         \
    } while (0)

void pdcbb_qstats_add(int type, const void *vals, size_t n, pdcbb_qstats_t *st)
{
    switch (kind_of(type)) {
    case K_I8: STATS_LOOP(int8_t, i, NOT_NAN_INT); break;
    case K_I16: STATS_LOOP(int16_t, i, NOT_NAN_INT); break;
    case K_I32: STATS_LOOP(int32_t, i, NOT_NAN_INT); break;
    case K_I64: STATS_LOOP(int64_t, i, NOT_NAN_INT); break;
    case K_U8: STATS_LOOP(uint8_t, u, NOT_NAN_INT); break;
    case K_U16: STATS_LOOP(uint16_t, u, NOT_NAN_INT); break;
    case K_U32: STATS_LOOP(uint32_t, u, NOT_NAN_INT); break;
    case K_U64: STATS_LOOP(uint64_t, u, NOT_NAN_INT); break;
    case K_F32: STATS_LOOP(float, f, NOT_NAN_FLT); break;
    case K_F64: STATS_LOOP(double, f, NOT_NAN_FLT); break;
    default: break;
    }
}

void pdcbb_qstats_merge(int cls, pdcbb_qstats_t *st, const pdcbb_qstats_t *b)
{
    if (!b->has)
        return;
    if (!st->has) {
        *st = *b;
        return;
    }
#define MERGE(M)                                                                                  \
    if (b->mn.M < st->mn.M)                                                                       \
        st->mn.M = b->mn.M;                                                                       \
    if (b->mx.M > st->mx.M)                                                                       \
        st->mx.M = b->mx.M;
    if (cls == PDCBB_QCLASS_INT) {
        MERGE(i)
    } else if (cls == PDCBB_QCLASS_UINT) {
        MERGE(u)
    } else {
        MERGE(f)
    }
#undef MERGE
}

uint32_t pdcbb_qhist_bin(int cls, pdcbb_qval_t v, double lo, double incr, uint32_t nbin)
{
    double x = pdcbb_qval_double(cls, v);
    double b = incr > 0 ? (x - lo) / incr : 0; /* truncation is floor for b >= 0 */
    if (!(b >= 0))
        return 0;
    if (b >= (double)nbin)
        return nbin - 1;
    return (uint32_t)b;
}

pdcbb_err_t pdcbb_qscan_init(pdcbb_qscan_t *s)
{
    s->unit = pdcbb_type_size(s->prog->type);
    s->total = 1;
    for (uint32_t d = 0; d < s->ndim; d++)
        if (s->dims[d] == 0 || s->dims[d] == PDCBB_DIM_UNLIMITED ||
            pdcbb_mul_overflow(s->total, s->dims[d], &s->total))
            return PDCBB_ERR_BAD_REGION;
    pdcbb_err_t rc = pdcbb_layout_strides(s->ndim, s->dims, s->unit, s->strides);
    if (rc != PDCBB_OK)
        return rc;
    s->last_blk = UINT64_MAX;
    s->buf = malloc((size_t)PDCBB_QBLOCK * s->unit);
    s->mask = malloc(QCHUNK);
    s->scratch = malloc((size_t)QCHUNK * (s->prog->depth ? s->prog->depth : 1));
    if (s->buf == NULL || s->mask == NULL || s->scratch == NULL) {
        pdcbb_qscan_free(s);
        return PDCBB_ERR_NOMEM;
    }
    return PDCBB_OK;
}

void pdcbb_qscan_free(pdcbb_qscan_t *s)
{
    free(s->buf);
    free(s->mask);
    free(s->scratch);
    s->buf = s->mask = s->scratch = NULL;
}

static int excluded(const pdcbb_qscan_t *s, uint64_t lin, const pdcbb_box_t *excl,
                    uint32_t nexcl)
{
    uint64_t c[PDCBB_REGION_NDIM_MAX];
    for (uint32_t d = 0; d < s->ndim; d++) {
        c[d] = lin / s->strides[d];
        lin %= s->strides[d];
    }
    for (uint32_t k = 0; k < nexcl; k++) {
        uint32_t d = 0;
        for (; d < s->ndim; d++)
            if (c[d] < excl[k].off[d] || c[d] - excl[k].off[d] >= excl[k].size[d])
                break;
        if (d == s->ndim)
            return 1;
    }
    return 0;
}

typedef struct scan_run {
    pdcbb_qscan_t *s;
    const pdcbb_qsrc_t *src;
    const pdcbb_box_t *excl;
    uint32_t nexcl;
    uint64_t start, stop;
    int result; /* 1 stopped, negative error */
} scan_run_t;

/* Evaluate n elements at data, linear indices from lin. Returns -1 when out of memory. */
static int eval_elems(scan_run_t *c, const uint8_t *data, uint64_t lin, uint64_t n)
{
    pdcbb_qscan_t *s = c->s;
    int cls = s->prog->cls;
    if (s->mode == PDCBB_QMODE_HITS && s->hits_cap - s->nhits < n) {
        uint64_t cap = s->hits_cap ? s->hits_cap : 4096;
        while (cap - s->nhits < n)
            cap *= 2;
        if (cap > s->max_hits)
            cap = s->max_hits;
        uint64_t *h = realloc(s->hits, cap * sizeof(uint64_t));
        if (h == NULL)
            return -1;
        s->hits = h;
        s->hits_cap = cap;
    }
    for (uint64_t done = 0; done < n;) {
        size_t k = n - done > QCHUNK ? QCHUNK : (size_t)(n - done);
        const uint8_t *v = data + done * s->unit;
        if (s->mode == PDCBB_QMODE_STATS || s->mode == PDCBB_QMODE_HIST) {
            for (size_t i = 0; i < k; i++) {
                if (c->nexcl && excluded(s, lin + done + i, c->excl, c->nexcl))
                    continue;
                s->nhits++;
                if (s->mode == PDCBB_QMODE_STATS) {
                    pdcbb_qstats_add(s->prog->type, v + i * s->unit, 1, &s->st);
                } else {
                    pdcbb_qval_t x = pdcbb_query_value(s->prog->type, v + i * s->unit);
                    if (cls == PDCBB_QCLASS_FLOAT && x.f != x.f)
                        continue;
                    s->bins[pdcbb_qhist_bin(cls, x, s->hist_lo, s->hist_incr, s->nbin)]++;
                }
            }
        } else if (s->mode == PDCBB_QMODE_COUNT && c->nexcl == 0) {
            pdcbb_qprog_eval(s->prog, v, k, s->mask, s->scratch);
            uint64_t cnt = 0;
            for (size_t i = 0; i < k; i++)
                cnt += s->mask[i];
            s->nhits += cnt;
        } else if (s->mode == PDCBB_QMODE_HITS && c->nexcl == 0) {
            /* Branch-free: write every index, advance past the matching ones (room for the
             * whole segment was ensured above). */
            pdcbb_qprog_eval(s->prog, v, k, s->mask, s->scratch);
            uint64_t *h = s->hits + s->nhits, m = 0, l0 = lin + done;
            for (size_t i = 0; i < k; i++) {
                h[m] = l0 + i;
                m += s->mask[i];
            }
            s->nhits += m;
        } else {
            pdcbb_qprog_eval(s->prog, v, k, s->mask, s->scratch);
            for (size_t i = 0; i < k; i++) {
                if (!s->mask[i])
                    continue;
                uint64_t l = lin + done + i;
                if (c->nexcl && excluded(s, l, c->excl, c->nexcl))
                    continue;
                if (s->mode == PDCBB_QMODE_HITS)
                    s->hits[s->nhits] = l;
                s->nhits++;
            }
        }
        done += k;
    }
    return 0;
}

static int scan_run_fn(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    scan_run_t *c = arg;
    pdcbb_qscan_t *s = c->s;
    uint64_t lin = array_off / s->unit, pk = packed_off / s->unit, n = len / s->unit;
    if (pk + n <= c->start)
        return 0;
    if (pk < c->start) {
        lin += c->start - pk;
        n -= c->start - pk;
        pk = c->start;
    }
    int filter = s->mode == PDCBB_QMODE_HITS || s->mode == PDCBB_QMODE_COUNT;
    while (n > 0) {
        uint64_t blk = lin / PDCBB_QBLOCK, bstart = blk * PDCBB_QBLOCK;
        uint64_t seg = bstart + PDCBB_QBLOCK - lin;
        if (seg > n)
            seg = n;
        /* a bounded step of work: stop here, the caller resumes at this element */
        if ((s->step_elems && s->elems_read >= s->step_elems) ||
            (s->step_blocks && s->blocks_seen >= s->step_blocks)) {
            c->stop = pk;
            c->result = 1;
            return 1;
        }
        s->blocks_seen++;
        int known = 0;
        pdcbb_qstats_t st;
        if (c->src->stats_get)
            known = c->src->stats_get(c->src->arg, blk, &st);
        if (filter && blk != s->last_blk) {
            s->last_blk = blk;
            s->last_skip = known && !pdcbb_qprog_may_match(s->prog, &st);
            if (s->last_skip)
                s->blocks_skipped++;
            else
                s->blocks_scanned++;
        }
        if (filter && s->last_skip) {
            lin += seg;
            pk += seg;
            n -= seg;
            continue;
        }
        if (s->mode == PDCBB_QMODE_HITS && s->max_hits - s->nhits < seg) {
            c->stop = pk;
            c->result = 1;
            return 1;
        }
        pdcbb_err_t rc = PDCBB_OK;
        s->elems_read += seg;
        const uint8_t *data = c->src->read(c->src->arg, lin, pk, seg, s->buf, &rc);
        if (data == NULL) {
            c->result = -(int)(rc ? rc : PDCBB_ERR_IO);
            return 1;
        }
        /* A whole block read for the first time since it changed: remember its min/max. */
        if (!known && c->src->stats_put && lin == bstart && seg == PDCBB_QBLOCK) {
            memset(&st, 0, sizeof(st));
            pdcbb_qstats_add(s->prog->type, data, PDCBB_QBLOCK, &st);
            c->src->stats_put(c->src->arg, blk, &st);
        }
        if (eval_elems(c, data, lin, seg) != 0) {
            c->result = -(int)PDCBB_ERR_NOMEM;
            return 1;
        }
        lin += seg;
        pk += seg;
        n -= seg;
    }
    return 0;
}

int pdcbb_qscan_piece(pdcbb_qscan_t *s, const pdcbb_qsrc_t *src, const pdcbb_box_t *box,
                      const pdcbb_box_t *excl, uint32_t nexcl, uint64_t start, uint64_t *stop)
{
    scan_run_t c = {.s = s, .src = src, .excl = excl, .nexcl = nexcl, .start = start};
    s->last_blk = UINT64_MAX; /* decisions are per piece */
    int rc = pdcbb_box_runs(box, s->ndim, s->dims, s->unit, scan_run_fn, &c);
    if (c.result == 1) {
        *stop = c.stop;
        return 1;
    }
    if (c.result < 0)
        return c.result;
    return rc == 0 ? 0 : -(int)(rc > 0 ? rc : PDCBB_ERR_INTERNAL);
}

pdcbb_err_t pdcbb_qpiece_parse(const uint64_t *w, uint32_t count, uint32_t *pos, uint32_t ndim,
                               const uint64_t *dims, pdcbb_box_t *box, pdcbb_box_t *excl,
                               uint32_t max, uint32_t *nexcl)
{
    uint32_t p = *pos;
    if (!pdcbb_range_ok(p, 1 + 2 * (uint64_t)ndim, count))
        return PDCBB_ERR_PROTO;
    uint64_t ne = w[p];
    if (ne > max || !pdcbb_array_fits(ne, 2 * (size_t)ndim, count - p - 1 - 2 * ndim))
        return PDCBB_ERR_PROTO;
    p++;
    if (pdcbb_box_make(box, ndim, w + p, w + p + ndim) != PDCBB_OK ||
        pdcbb_box_check_within(box, ndim, dims) != PDCBB_OK)
        return PDCBB_ERR_BAD_REGION;
    p += 2 * ndim;
    for (uint64_t k = 0; k < ne; k++) {
        if (pdcbb_box_make(&excl[k], ndim, w + p, w + p + ndim) != PDCBB_OK)
            return PDCBB_ERR_BAD_REGION;
        p += 2 * ndim;
    }
    *nexcl = (uint32_t)ne;
    *pos = p;
    return PDCBB_OK;
}
