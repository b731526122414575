/*
 * test_query.c - query programs (common/pdcbb_query.c): decoding rejects malformed programs
 * (they come from the network); evaluation of every operator on every machine kind, exact for
 * 64-bit integers and false for NaN; the min/max interval test never skips a block holding a
 * match (randomized against evaluation); piece parsing bounds; the scan with exclusions, block
 * statistics and paging against a naive scan.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdcbb_query.h"
#include "unit_check.h"

enum { T_INT = 0, T_FLOAT = 1, T_DOUBLE = 2, T_STRING = 4, T_INT64 = 8, T_UINT64 = 9,
       T_INT8 = 11, T_UINT8 = 12, T_VOIDP = 17 };

static void leaf(uint64_t *w, unsigned op, uint64_t v)
{
    pdcbb_qnode_t n = {.kind = PDCBB_QNODE_LEAF, .op = (uint8_t)op};
    n.v.bits = v;
    pdcbb_qnode_encode(&n, w);
}

static void inner(uint64_t *w, int kind)
{
    pdcbb_qnode_t n = {.kind = (uint8_t)kind};
    pdcbb_qnode_encode(&n, w);
}

static pdcbb_qprog_t prog;

static void test_decode(void)
{
    uint64_t w[12];
    leaf(w, PDCBB_QOP_GT, 3);
    CHECK_ERR(pdcbb_qprog_decode(w, 3, T_INT, &prog), PDCBB_OK);
    CHECK_ERR(pdcbb_qprog_decode(w, 3, T_STRING, &prog), PDCBB_ERR_WRONG_TYPE);
    CHECK_ERR(pdcbb_qprog_decode(w, 3, T_VOIDP, &prog), PDCBB_ERR_WRONG_TYPE);
    CHECK_ERR(pdcbb_qprog_decode(w, 3, 99, &prog), PDCBB_ERR_WRONG_TYPE);
    CHECK_ERR(pdcbb_qprog_decode(w, 2, T_INT, &prog), PDCBB_ERR_PROTO);   /* partial node */
    leaf(w, 0, 3);
    CHECK_ERR(pdcbb_qprog_decode(w, 3, T_INT, &prog), PDCBB_ERR_PROTO);   /* op 0 */
    leaf(w, 6, 3);
    CHECK_ERR(pdcbb_qprog_decode(w, 3, T_INT, &prog), PDCBB_ERR_PROTO);   /* op 6 */
    inner(w, PDCBB_QNODE_AND);
    CHECK_ERR(pdcbb_qprog_decode(w, 3, T_INT, &prog), PDCBB_ERR_PROTO);   /* AND of nothing */
    leaf(w, PDCBB_QOP_GT, 1);
    leaf(w + 3, PDCBB_QOP_LT, 9);
    CHECK_ERR(pdcbb_qprog_decode(w, 6, T_INT, &prog), PDCBB_ERR_PROTO);   /* two roots */
    inner(w + 6, PDCBB_QNODE_OR);
    CHECK_ERR(pdcbb_qprog_decode(w, 9, T_INT, &prog), PDCBB_OK);
    CHECK(prog.n == 3 && prog.depth == 2);
    inner(w + 6, 7);
    CHECK_ERR(pdcbb_qprog_decode(w, 9, T_INT, &prog), PDCBB_ERR_PROTO);   /* kind 7 */
    w[0] |= (uint64_t)1 << 40;
    CHECK_ERR(pdcbb_qprog_decode(w, 3, T_INT, &prog), PDCBB_ERR_PROTO);   /* high bits */
    w[0] = PDCBB_QNODE_LEAF | PDCBB_QOP_GT << 8 | 1u << 16 | 9u << 24; /* range, bad op2 */
    CHECK_ERR(pdcbb_qprog_decode(w, 3, T_INT, &prog), PDCBB_ERR_PROTO);
    CHECK_ERR(pdcbb_qprog_decode(w, (PDCBB_QPROG_MAX + 1) * 3, T_INT, &prog), PDCBB_ERR_PROTO);
    CHECK_ERR(pdcbb_qprog_decode(w, 0, T_INT, &prog), PDCBB_OK);           /* empty: STATS */
}

/* One leaf on an array: mask against expected. */
static void eval_one(int type, unsigned op, uint64_t cbits, const void *vals, size_t n,
                     const char *want)
{
    uint64_t w[3];
    uint8_t mask[16], scratch[16];
    leaf(w, op, cbits);
    CHECK_ERR(pdcbb_qprog_decode(w, 3, type, &prog), PDCBB_OK);
    pdcbb_qprog_eval(&prog, vals, n, mask, scratch);
    for (size_t i = 0; i < n; i++)
        if (mask[i] != (want[i] == '1')) {
            fprintf(stderr, "type %d op %u element %zu: got %d\n", type, op, i, mask[i]);
            CHECK(0);
        }
}

static void test_eval(void)
{
    int32_t i32[4] = {-5, 0, 3, 7};
    pdcbb_qval_t c = {.i = 3};
    eval_one(T_INT, PDCBB_QOP_GT, c.bits, i32, 4, "0001");
    eval_one(T_INT, PDCBB_QOP_GTE, c.bits, i32, 4, "0011");
    eval_one(T_INT, PDCBB_QOP_LT, c.bits, i32, 4, "1100");
    eval_one(T_INT, PDCBB_QOP_LTE, c.bits, i32, 4, "1110");
    eval_one(T_INT, PDCBB_QOP_EQ, c.bits, i32, 4, "0010");
    int8_t i8[3] = {-128, -1, 127};
    c.i = -1;
    eval_one(T_INT8, PDCBB_QOP_LTE, c.bits, i8, 3, "110");
    uint8_t u8[3] = {0, 200, 255};
    c.u = 200;
    eval_one(T_UINT8, PDCBB_QOP_GTE, c.bits, u8, 3, "011");
    /* 64-bit integers compare exactly (as doubles 2^63-1 and 2^63-2 would be equal). */
    int64_t i64[2] = {INT64_MAX - 1, INT64_MAX};
    c.i = INT64_MAX - 1;
    eval_one(T_INT64, PDCBB_QOP_EQ, c.bits, i64, 2, "10");
    uint64_t u64[2] = {UINT64_MAX - 1, UINT64_MAX};
    c.u = UINT64_MAX;
    eval_one(T_UINT64, PDCBB_QOP_LT, c.bits, u64, 2, "10");
    float f[4] = {-1.5f, 0.25f, NAN, 2.0f};
    c.f = 0.25;
    eval_one(T_FLOAT, PDCBB_QOP_EQ, c.bits, f, 4, "0100");
    eval_one(T_FLOAT, PDCBB_QOP_GTE, c.bits, f, 4, "0101"); /* NaN matches nothing */
    double d[3] = {1e300, -1e300, 0};
    c.f = 0;
    eval_one(T_DOUBLE, PDCBB_QOP_GT, c.bits, d, 3, "100");
    /* A range leaf and AND/OR. */
    uint64_t w[9];
    pdcbb_qnode_t n = {.kind = PDCBB_QNODE_LEAF, .op = PDCBB_QOP_GT, .is_range = 1,
                       .op2 = PDCBB_QOP_LT};
    n.v.i = 0;
    n.v2.i = 7;
    pdcbb_qnode_encode(&n, w);
    uint8_t mask[4], scratch[16];
    CHECK_ERR(pdcbb_qprog_decode(w, 3, T_INT, &prog), PDCBB_OK);
    pdcbb_qprog_eval(&prog, i32, 4, mask, scratch);
    CHECK(!mask[0] && !mask[1] && mask[2] && !mask[3]);
    c.i = 0;
    leaf(w, PDCBB_QOP_LT, c.bits);
    c.i = 7;
    leaf(w + 3, PDCBB_QOP_EQ, c.bits);
    inner(w + 6, PDCBB_QNODE_OR);
    CHECK_ERR(pdcbb_qprog_decode(w, 9, T_INT, &prog), PDCBB_OK);
    pdcbb_qprog_eval(&prog, i32, 4, mask, scratch);
    CHECK(mask[0] && !mask[1] && !mask[2] && mask[3]);
}

/* The interval test never rules out a block that holds a match. */
static void test_may_match(void)
{
    srand(7);
    int misses = 0, skips = 0;
    for (int t = 0; t < 20000; t++) {
        int32_t v[8];
        uint64_t w[12];
        for (int i = 0; i < 8; i++)
            v[i] = rand() % 21 - 10;
        pdcbb_qval_t a = {.i = rand() % 25 - 12}, b = {.i = rand() % 25 - 12};
        leaf(w, 1 + (unsigned)(rand() % 5), a.bits);
        leaf(w + 3, 1 + (unsigned)(rand() % 5), b.bits);
        inner(w + 6, rand() % 2 ? PDCBB_QNODE_AND : PDCBB_QNODE_OR);
        if (pdcbb_qprog_decode(w, 9, T_INT, &prog) != PDCBB_OK) {
            CHECK(0);
            continue;
        }
        uint8_t mask[8], scratch[16];
        pdcbb_qprog_eval(&prog, v, 8, mask, scratch);
        int any = 0;
        for (int i = 0; i < 8; i++)
            any |= mask[i];
        pdcbb_qstats_t st = {.has = 0};
        pdcbb_qstats_add(T_INT, v, 8, &st);
        int may = pdcbb_qprog_may_match(&prog, &st);
        if (any && !may)
            misses++;
        skips += !may;
    }
    CHECK(misses == 0);
    CHECK(skips > 1000); /* and it does rule blocks out */
    float nan[2] = {NAN, NAN};
    pdcbb_qstats_t st = {.has = 0};
    pdcbb_qstats_add(T_FLOAT, nan, 2, &st);
    CHECK(!st.has);
    CHECK(!pdcbb_qprog_may_match(&prog, &st));
}

static void test_pieces(void)
{
    uint64_t dims[2] = {10, 10};
    pdcbb_box_t box, ex[2];
    uint32_t pos = 0, ne = 0;
    uint64_t ok[] = {1, 0, 0, 10, 10, 2, 2, 3, 3};
    CHECK_ERR(pdcbb_qpiece_parse(ok, 9, &pos, 2, dims, &box, ex, 2, &ne), PDCBB_OK);
    CHECK(pos == 9 && ne == 1 && ex[0].off[0] == 2 && box.size[1] == 10);
    pos = 0;
    CHECK_ERR(pdcbb_qpiece_parse(ok, 8, &pos, 2, dims, &box, ex, 2, &ne), PDCBB_ERR_PROTO);
    pos = 0;
    CHECK_ERR(pdcbb_qpiece_parse(ok, 9, &pos, 2, dims, &box, ex, 0, &ne), PDCBB_ERR_PROTO);
    uint64_t out[] = {0, 5, 0, 6, 10}; /* rows 5..10 of 10 */
    pos = 0;
    CHECK_ERR(pdcbb_qpiece_parse(out, 5, &pos, 2, dims, &box, ex, 2, &ne), PDCBB_ERR_BAD_REGION);
    uint64_t huge[] = {UINT64_MAX, 0, 0, 1, 1};
    pos = 0;
    CHECK_ERR(pdcbb_qpiece_parse(huge, 5, &pos, 2, dims, &box, ex, 2, &ne), PDCBB_ERR_PROTO);
    /* No dimensions: a bad box, not a division by zero (2 * ndim words per excluded box). */
    pos = 0;
    CHECK_ERR(pdcbb_qpiece_parse(ok, 9, &pos, 0, dims, &box, ex, 2, &ne), PDCBB_ERR_BAD_REGION);
}

/* The scan: a 2-D int array, a piece with an exclusion, stats, and paging. */
typedef struct mem_src {
    const int32_t *a;
    pdcbb_qstats_t st[64];
    int known[64];
} mem_src_t;

static const void *mem_read(void *arg, uint64_t lin, uint64_t pk, uint64_t n, void *buf,
                            pdcbb_err_t *rc)
{
    (void)pk, (void)n, (void)buf, (void)rc;
    return ((mem_src_t *)arg)->a + lin;
}
static int mem_get(void *arg, uint64_t blk, pdcbb_qstats_t *st)
{
    mem_src_t *m = arg;
    if (blk >= 64 || !m->known[blk])
        return 0;
    *st = m->st[blk];
    return 1;
}
static void mem_put(void *arg, uint64_t blk, const pdcbb_qstats_t *st)
{
    mem_src_t *m = arg;
    if (blk < 64) {
        m->st[blk] = *st;
        m->known[blk] = 1;
    }
}

static void test_scan(void)
{
    const uint64_t R = 1024, C = 256; /* 4 blocks of 65536 elements */
    int32_t *a = malloc(R * C * sizeof(int32_t));
    mem_src_t *m = calloc(1, sizeof(*m));
    if (a == NULL || m == NULL) {
        CHECK(0);
        return;
    }
    for (uint64_t i = 0; i < R * C; i++)
        a[i] = (int32_t)(i / 1000); /* increasing: blocks are skippable */
    m->a = a;
    pdcbb_qsrc_t src = {.read = mem_read, .stats_get = mem_get, .stats_put = mem_put, .arg = m};
    uint64_t w[3];
    pdcbb_qval_t c = {.i = 100};
    leaf(w, PDCBB_QOP_GTE, c.bits); /* elements >= 100000: blocks 1-3, several pages */
    CHECK_ERR(pdcbb_qprog_decode(w, 3, T_INT, &prog), PDCBB_OK);
    uint64_t off[2] = {0, 0}, size[2] = {R, C}, eo[2] = {900, 0}, es[2] = {10, C};
    pdcbb_box_t box, ex;
    CHECK_ERR(pdcbb_box_make(&box, 2, off, size), PDCBB_OK);
    CHECK_ERR(pdcbb_box_make(&ex, 2, eo, es), PDCBB_OK);
    uint64_t want = 0;
    for (uint64_t i = 0; i < R * C; i++)
        if (a[i] >= 100 && !(i / C >= 900 && i / C < 910))
            want++;
    for (int pass = 0; pass < 2; pass++) {
        pdcbb_qscan_t s;
        memset(&s, 0, sizeof(s));
        s.prog = &prog;
        s.mode = PDCBB_QMODE_HITS;
        s.ndim = 2;
        s.dims[0] = R;
        s.dims[1] = C;
        s.max_hits = PDCBB_QBLOCK; /* pages of one block */
        CHECK_ERR(pdcbb_qscan_init(&s), PDCBB_OK);
        uint64_t start = 0, stop = 0, total = 0, prev = 0;
        int pages = 0, x, sorted = 1;
        do {
            s.nhits = 0;
            x = pdcbb_qscan_piece(&s, &src, &box, &ex, 1, start, &stop);
            for (uint64_t i = 0; i < s.nhits; i++) {
                if (total + i > 0 && s.hits[i] <= prev)
                    sorted = 0;
                prev = s.hits[i];
                if (a[s.hits[i]] < 100 || (s.hits[i] / C >= 900 && s.hits[i] / C < 910))
                    CHECK(0);
            }
            total += s.nhits;
            start = stop;
            pages++;
        } while (x == 1 && pages < 100);
        CHECK(x == 0);
        CHECK(total == want);
        CHECK(sorted);
        CHECK(pages > 1);
        /* The second pass knows the blocks' min/max: block 0 holds only values < 100. */
        CHECK(pass == 0 ? s.blocks_skipped == 0 : s.blocks_skipped >= 1);
        free(s.hits);
        pdcbb_qscan_free(&s);
    }
    free(a);
    free(m);
}

int main(void)
{
    test_decode();
    test_eval();
    test_may_match();
    test_pieces();
    test_scan();
    UNIT_DONE("test_query");
}
