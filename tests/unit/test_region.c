/*
 * test_region.c - N-dimensional region arithmetic: box construction, counting, intersection and
 * containment tables; strides and their limits; exact runs for hand-worked boxes; and randomized
 * gather/scatter, packed-overlap copies and stripe splits checked against naive per-element
 * reference implementations.
 */
#include <stdlib.h>
#include <string.h>

#include "pdcbb_region.h"
#include "unit_check.h"

#define U   UINT64_MAX
#define UNL PDCBB_DIM_UNLIMITED

/* Build a box that the test knows to be valid. */
static pdcbb_box_t box(uint32_t ndim, const uint64_t *off, const uint64_t *size)
{
    pdcbb_box_t b;
    pdcbb_err_t err = pdcbb_box_make(&b, ndim, off, size);
    CHECK_ERR(err, PDCBB_OK);
    if (err != PDCBB_OK)
        memset(&b, 0, sizeof(b));
    return b;
}

/* ---- box_make and box_count ---------------------------------------------------------------- */

static void test_box_make(void)
{
    static const struct {
        uint32_t ndim;
        uint64_t off[3], size[3];
        pdcbb_err_t want;
    } cases[] = {
        {1, {0}, {1}, PDCBB_OK},
        {3, {1, 2, 3}, {4, 5, 6}, PDCBB_OK},
        {0, {0}, {1}, PDCBB_ERR_BAD_REGION},
        {17, {0}, {1}, PDCBB_ERR_BAD_REGION},
        {1, {5}, {0}, PDCBB_ERR_BAD_REGION},
        {3, {0, 0, 0}, {1, 0, 1}, PDCBB_ERR_BAD_REGION},
        {1, {U}, {1}, PDCBB_ERR_BAD_REGION},       /* off + size = 2^64 */
        {2, {0, 1}, {1, U}, PDCBB_ERR_BAD_REGION}, /* off + size = 2^64 */
        {1, {U - 1}, {1}, PDCBB_OK},               /* ends exactly at UINT64_MAX */
        {1, {0}, {U}, PDCBB_OK},                   /* the largest 1-D box */
        {2, {1ull << 63, 0}, {1ull << 63, 1}, PDCBB_ERR_BAD_REGION},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        /* ndim 17 reads 17 entries: give it room. */
        uint64_t off[PDCBB_REGION_NDIM_MAX + 1] = {0}, size[PDCBB_REGION_NDIM_MAX + 1];
        for (int d = 0; d <= PDCBB_REGION_NDIM_MAX; d++)
            size[d] = 1;
        memcpy(off, cases[i].off, sizeof(cases[i].off));
        memcpy(size, cases[i].size, sizeof(cases[i].size));
        pdcbb_box_t b;
        memset(&b, 0xee, sizeof(b));
        pdcbb_err_t err = pdcbb_box_make(&b, cases[i].ndim, off, size);
        if (err != cases[i].want)
            fprintf(stderr, "box_make case %zu\n", i);
        CHECK_ERR(err, cases[i].want);
        if (err == PDCBB_OK) {
            CHECK(b.ndim == cases[i].ndim);
            CHECK(memcmp(b.off, off, b.ndim * 8) == 0 && memcmp(b.size, size, b.ndim * 8) == 0);
            CHECK(b.off[PDCBB_REGION_NDIM_MAX - 1] == 0 && b.size[PDCBB_REGION_NDIM_MAX - 1] == 0);
        } else {
            CHECK(b.ndim == 0xeeeeeeeeu); /* untouched on error */
        }
    }
    /* All 16 dimensions. */
    uint64_t off[PDCBB_REGION_NDIM_MAX], size[PDCBB_REGION_NDIM_MAX];
    for (int d = 0; d < PDCBB_REGION_NDIM_MAX; d++) {
        off[d] = (uint64_t)d;
        size[d] = 2;
    }
    pdcbb_box_t b;
    CHECK_ERR(pdcbb_box_make(&b, PDCBB_REGION_NDIM_MAX, off, size), PDCBB_OK);
    uint64_t n = 0;
    CHECK_ERR(pdcbb_box_count(&b, &n), PDCBB_OK);
    CHECK(n == 1u << 16);
    CHECK_ERR(pdcbb_box_make(NULL, 1, off, size), PDCBB_ERR_INVAL);
    CHECK_ERR(pdcbb_box_make(&b, 1, NULL, size), PDCBB_ERR_INVAL);
    CHECK_ERR(pdcbb_box_make(&b, 1, off, NULL), PDCBB_ERR_INVAL);
}

static void test_box_count(void)
{
    static const struct {
        uint32_t ndim;
        uint64_t size[4];
        pdcbb_err_t want;
        uint64_t count;
    } cases[] = {
        {1, {7}, PDCBB_OK, 7},
        {3, {2, 3, 4}, PDCBB_OK, 24},
        {2, {1ull << 32, (1ull << 32) - 1}, PDCBB_OK, (1ull << 32) * ((1ull << 32) - 1)},
        {2, {1ull << 32, 1ull << 32}, PDCBB_ERR_TOO_BIG, 0},
        {1, {U}, PDCBB_OK, U},
        {2, {U, 2}, PDCBB_ERR_TOO_BIG, 0},
        {4, {1ull << 16, 1ull << 16, 1ull << 16, 1ull << 15}, PDCBB_OK, 1ull << 63},
        {4, {1ull << 16, 1ull << 16, 1ull << 16, 1ull << 16}, PDCBB_ERR_TOO_BIG, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t off[4] = {0};
        pdcbb_box_t b = box(cases[i].ndim, off, cases[i].size);
        uint64_t n = 12345;
        CHECK_ERR(pdcbb_box_count(&b, &n), cases[i].want);
        CHECK(n == (cases[i].want == PDCBB_OK ? cases[i].count : 12345));
    }
    pdcbb_box_t z;
    memset(&z, 0, sizeof(z));
    uint64_t n;
    CHECK_ERR(pdcbb_box_count(&z, &n), PDCBB_ERR_BAD_REGION);
}

/* ---- intersect, contains, check_within ----------------------------------------------------- */

static void test_intersect_contains(void)
{
    static const struct {
        uint32_t ndim;
        uint64_t aoff[3], asize[3], boff[3], bsize[3];
        int hit;
        uint64_t xoff[3], xsize[3];
        int a_in_b, b_in_a;
    } cases[] = {
        /* 1-D */
        {1, {0}, {10}, {5}, {10}, 1, {5}, {5}, 0, 0},
        {1, {0}, {10}, {10}, {5}, 0, {0}, {0}, 0, 0}, /* touching is not overlapping */
        {1, {3}, {2}, {0}, {10}, 1, {3}, {2}, 1, 0},
        {1, {4}, {3}, {4}, {3}, 1, {4}, {3}, 1, 1},
        {1, {U - 5}, {3}, {U - 2}, {2}, 0, {0}, {0}, 0, 0}, /* touching at the top */
        {1, {U - 5}, {5}, {U - 2}, {2}, 1, {U - 2}, {2}, 0, 1},
        {1, {0}, {U}, {7}, {U - 7}, 1, {7}, {U - 7}, 0, 1},
        /* 2-D */
        {2, {0, 0}, {4, 4}, {2, 2}, {4, 4}, 1, {2, 2}, {2, 2}, 0, 0},
        {2, {0, 0}, {4, 4}, {4, 0}, {1, 4}, 0, {0}, {0}, 0, 0},
        {2, {0, 0}, {4, 4}, {1, 5}, {1, 1}, 0, {0}, {0}, 0, 0}, /* overlaps in dim 0 only */
        {2, {1, 1}, {2, 2}, {0, 0}, {4, 4}, 1, {1, 1}, {2, 2}, 1, 0},
        {2, {0, 3}, {10, 1}, {3, 0}, {1, 10}, 1, {3, 3}, {1, 1}, 0, 0}, /* a cross */
        /* 3-D */
        {3, {0, 0, 0}, {2, 3, 4}, {1, 1, 1}, {5, 5, 5}, 1, {1, 1, 1}, {1, 2, 3}, 0, 0},
        {3, {0, 0, 0}, {2, 3, 4}, {0, 0, 4}, {2, 3, 4}, 0, {0}, {0}, 0, 0},
        {3, {5, 5, 5}, {1, 1, 1}, {0, 0, 0}, {6, 6, 6}, 1, {5, 5, 5}, {1, 1, 1}, 1, 0},
        {3, {0, 0, 0}, {6, 6, 6}, {0, 0, 0}, {6, 6, 7}, 1, {0, 0, 0}, {6, 6, 6}, 1, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint32_t nd = cases[i].ndim;
        pdcbb_box_t a = box(nd, cases[i].aoff, cases[i].asize);
        pdcbb_box_t b = box(nd, cases[i].boff, cases[i].bsize);
        pdcbb_box_t x, y;
        memset(&x, 0x5a, sizeof(x));
        int hit = pdcbb_box_intersect(&a, &b, &x);
        int hit2 = pdcbb_box_intersect(&b, &a, &y);
        if (hit != cases[i].hit)
            fprintf(stderr, "intersect case %zu\n", i);
        CHECK(hit == cases[i].hit && hit2 == cases[i].hit);
        if (hit) {
            pdcbb_box_t want = box(nd, cases[i].xoff, cases[i].xsize);
            CHECK(memcmp(&x, &want, sizeof(x)) == 0);
            CHECK(memcmp(&y, &want, sizeof(y)) == 0);
            CHECK(pdcbb_box_contains(&a, &x) && pdcbb_box_contains(&b, &x));
            /* out aliasing an input */
            pdcbb_box_t a2 = a;
            CHECK(pdcbb_box_intersect(&a2, &b, &a2) == 1);
            CHECK(memcmp(&a2, &want, sizeof(a2)) == 0);
            pdcbb_box_t b2 = b;
            CHECK(pdcbb_box_intersect(&a, &b2, &b2) == 1);
            CHECK(memcmp(&b2, &want, sizeof(b2)) == 0);
        } else {
            CHECK(x.ndim == 0x5a5a5a5au); /* untouched */
        }
        if (pdcbb_box_contains(&b, &a) != cases[i].a_in_b ||
            pdcbb_box_contains(&a, &b) != cases[i].b_in_a)
            fprintf(stderr, "contains case %zu\n", i);
        CHECK(pdcbb_box_contains(&b, &a) == cases[i].a_in_b);
        CHECK(pdcbb_box_contains(&a, &b) == cases[i].b_in_a);
        CHECK(pdcbb_box_contains(&a, &a) && pdcbb_box_contains(&b, &b));
    }
    /* Different ndim never intersect nor contain. */
    uint64_t z[2] = {0, 0}, s[2] = {4, 4};
    pdcbb_box_t a1 = box(1, z, s), a2 = box(2, z, s), x;
    CHECK(pdcbb_box_intersect(&a1, &a2, &x) == 0);
    CHECK(pdcbb_box_contains(&a1, &a2) == 0 && pdcbb_box_contains(&a2, &a1) == 0);
}

static void test_check_within(void)
{
    static const struct {
        uint32_t ndim;
        uint64_t off[3], size[3];
        uint32_t dndim;
        uint64_t dims[3];
        pdcbb_err_t want;
    } cases[] = {
        {1, {0}, {10}, 1, {10}, PDCBB_OK},
        {1, {1}, {10}, 1, {10}, PDCBB_ERR_BAD_REGION},
        {1, {10}, {1}, 1, {10}, PDCBB_ERR_BAD_REGION},
        {1, {1000}, {10}, 1, {UNL}, PDCBB_OK},
        {1, {U - 1}, {1}, 1, {UNL}, PDCBB_OK},
        {2, {3, 0}, {1, 5}, 2, {4, 5}, PDCBB_OK},
        {2, {3, 0}, {1, 6}, 2, {4, 5}, PDCBB_ERR_BAD_REGION},
        {2, {1ull << 40, 2}, {7, 3}, 2, {UNL, 5}, PDCBB_OK},
        {2, {0, 0}, {1, 1}, 1, {4}, PDCBB_ERR_BAD_REGION},       /* ndim mismatch */
        {2, {0, 0}, {1, 1}, 3, {4, 4, 4}, PDCBB_ERR_BAD_REGION}, /* ndim mismatch */
        {3, {0, 0, 0}, {2, 2, 2}, 3, {2, 2, 2}, PDCBB_OK},
        {3, {0, 1, 0}, {2, 2, 2}, 3, {2, 2, 2}, PDCBB_ERR_BAD_REGION},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pdcbb_box_t b = box(cases[i].ndim, cases[i].off, cases[i].size);
        pdcbb_err_t err = pdcbb_box_check_within(&b, cases[i].dndim, cases[i].dims);
        if (err != cases[i].want)
            fprintf(stderr, "check_within case %zu\n", i);
        CHECK_ERR(err, cases[i].want);
    }
    /* A hand-filled box with a zero size is refused. */
    pdcbb_box_t z;
    memset(&z, 0, sizeof(z));
    z.ndim = 1;
    uint64_t d10 = 10;
    CHECK_ERR(pdcbb_box_check_within(&z, 1, &d10), PDCBB_ERR_BAD_REGION);
}

/* ---- strides ------------------------------------------------------------------------------- */

static void test_layout_strides(void)
{
    static const struct {
        uint32_t ndim;
        uint64_t dims[4];
        size_t unit;
        pdcbb_err_t want;
        uint64_t strides[4];
    } cases[] = {
        {1, {10}, 4, PDCBB_OK, {1}},
        {1, {UNL}, 8, PDCBB_OK, {1}},
        {3, {2, 3, 4}, 1, PDCBB_OK, {12, 4, 1}},
        {3, {UNL, 3, 4}, 8, PDCBB_OK, {12, 4, 1}},
        {4, {5, 6, 7, 8}, 2, PDCBB_OK, {336, 56, 8, 1}},
        {2, {3, UNL}, 1, PDCBB_ERR_BAD_REGION, {0}},
        {3, {UNL, UNL, 4}, 1, PDCBB_ERR_BAD_REGION, {0}},
        {4, {1, UNL, 1ull << 40, 1ull << 40}, 1, PDCBB_ERR_BAD_REGION, {0}}, /* shape first */
        {2, {0, 4}, 1, PDCBB_ERR_BAD_REGION, {0}},
        {3, {4, 4, 0}, 1, PDCBB_ERR_BAD_REGION, {0}},
        {3, {1, 1ull << 40, 1ull << 40}, 1, PDCBB_ERR_TOO_BIG, {0}}, /* product overflows */
        {2, {UNL, 1ull << 61}, 2, PDCBB_OK, {1ull << 61, 1}},        /* exactly 2^62 bytes */
        {2, {UNL, 1ull << 61}, 4, PDCBB_ERR_TOO_BIG, {0}},           /* 2^63 bytes */
        {2, {UNL, (1ull << 62) + 1}, 1, PDCBB_ERR_TOO_BIG, {0}},
        {2, {UNL, 1ull << 62}, 8, PDCBB_ERR_TOO_BIG, {0}}, /* bytes overflow */
        {0, {1}, 1, PDCBB_ERR_BAD_REGION, {0}},
        {17, {1}, 1, PDCBB_ERR_BAD_REGION, {0}},
        {1, {4}, 0, PDCBB_ERR_INVAL, {0}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t st[PDCBB_REGION_NDIM_MAX], dims[PDCBB_REGION_NDIM_MAX + 1];
        for (int d = 0; d <= PDCBB_REGION_NDIM_MAX; d++)
            dims[d] = 1;
        memcpy(dims, cases[i].dims, sizeof(cases[i].dims));
        memset(st, 0x77, sizeof(st));
        pdcbb_err_t err = pdcbb_layout_strides(cases[i].ndim, dims, cases[i].unit, st);
        if (err != cases[i].want)
            fprintf(stderr, "layout_strides case %zu\n", i);
        CHECK_ERR(err, cases[i].want);
        if (err == PDCBB_OK)
            CHECK(memcmp(st, cases[i].strides, cases[i].ndim * 8) == 0);
        else
            CHECK(st[0] == 0x7777777777777777ull); /* untouched on error */
    }
}

/* ---- runs: hand-worked cases --------------------------------------------------------------- */

#define RUNS_MAX 64

typedef struct run {
    uint64_t array_off, len, packed_off;
} run_t;

typedef struct run_log {
    int n;
    int stop_at; /* return 7 when the stop_at-th run (1-based) is seen; 0: never */
    run_t runs[RUNS_MAX];
} run_log_t;

static int log_run(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    run_log_t *l = arg;
    if (l->n < RUNS_MAX)
        l->runs[l->n] = (run_t){array_off, len, packed_off};
    l->n++;
    return l->n == l->stop_at ? 7 : 0;
}

static void test_runs_exact(void)
{
    static const struct {
        const char *what;
        uint32_t ndim;
        uint64_t dims[4], off[4], size[4];
        size_t unit;
        int nruns;
        run_t runs[4];
    } cases[] = {
        /* clang-format off */
        {"1-D", 1, {10}, {3}, {4}, 2, 1, {{6, 8, 0}}},
        {"1-D whole", 1, {10}, {0}, {10}, 1, 1, {{0, 10, 0}}},
        {"2-D whole rows", 2, {4, 5}, {1, 0}, {2, 5}, 4, 1, {{20, 40, 0}}},
        {"2-D whole array", 2, {4, 5}, {0, 0}, {4, 5}, 1, 1, {{0, 20, 0}}},
        {"2-D partial rows", 2, {4, 5}, {1, 1}, {3, 2}, 1, 3, {{6, 2, 0}, {11, 2, 2}, {16, 2, 4}}},
        {"2-D one column", 2, {3, 4}, {0, 3}, {3, 1}, 8, 3, {{24, 8, 0}, {56, 8, 8}, {88, 8, 16}}},
        {"3-D last two full", 3, {3, 4, 5}, {1, 0, 0}, {2, 4, 5}, 1, 1, {{20, 40, 0}}},
        {"3-D last full", 3, {3, 4, 5}, {0, 1, 0}, {2, 2, 5}, 1, 2, {{5, 10, 0}, {25, 10, 10}}},
        {"3-D small rows", 3, {2, 3, 4}, {0, 1, 1}, {2, 2, 2}, 1, 4,
         {{5, 2, 0}, {9, 2, 2}, {17, 2, 4}, {21, 2, 6}}},
        /* strides {60, 20, 5, 1}; last dim full, dim 2 partial: runs of 2*5 elements */
        {"4-D", 4, {2, 3, 4, 5}, {1, 0, 1, 0}, {1, 2, 2, 5}, 2, 2, {{130, 20, 0}, {170, 20, 20}}},
        {"4-D trailing three full", 4, {3, 2, 2, 2}, {1, 0, 0, 0}, {2, 2, 2, 2}, 4, 1,
         {{32, 64, 0}}},
        {"4-D single elements", 4, {2, 2, 2, 2}, {0, 1, 0, 1}, {2, 1, 2, 1}, 1, 4,
         {{5, 1, 0}, {7, 1, 1}, {13, 1, 2}, {15, 1, 3}}},
        {"unlimited first dim", 2, {UNL, 4}, {5, 1}, {2, 2}, 8, 2, {{168, 16, 0}, {200, 16, 16}}},
        {"at the offset limit", 1, {UNL}, {(1ull << 63) - 1}, {1}, 1, 1,
         {{(1ull << 63) - 1, 1, 0}}},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pdcbb_box_t b = box(cases[i].ndim, cases[i].off, cases[i].size);
        run_log_t log = {0};
        int rc = pdcbb_box_runs(&b, cases[i].ndim, cases[i].dims, cases[i].unit, log_run, &log);
        int ok = rc == 0 && log.n == cases[i].nruns &&
                 memcmp(log.runs, cases[i].runs, (size_t)cases[i].nruns * sizeof(run_t)) == 0;
        if (!ok) {
            fprintf(stderr, "runs case '%s': rc %s, %d runs:", cases[i].what, pdcbb_errname(rc),
                    log.n);
            for (int k = 0; k < log.n && k < RUNS_MAX; k++)
                fprintf(stderr, " (%llu,%llu,%llu)", (unsigned long long)log.runs[k].array_off,
                        (unsigned long long)log.runs[k].len,
                        (unsigned long long)log.runs[k].packed_off);
            fprintf(stderr, "\n");
        }
        CHECK(ok);
    }
}

static void test_runs_stop_and_errors(void)
{
    /* fn's non-zero return stops the walk and is returned. */
    uint64_t dims[3] = {4, 4, 4}, off[3] = {0, 0, 1}, size[3] = {4, 4, 2};
    pdcbb_box_t b = box(3, off, size);
    run_log_t log = {0};
    CHECK(pdcbb_box_runs(&b, 3, dims, 1, log_run, &log) == 0 && log.n == 16);
    for (int stop = 1; stop <= 16; stop += 5) {
        memset(&log, 0, sizeof(log));
        log.stop_at = stop;
        CHECK(pdcbb_box_runs(&b, 3, dims, 1, log_run, &log) == 7);
        CHECK(log.n == stop);
    }
    /* A single-run walk stops too. */
    uint64_t off1[1] = {2}, size1[1] = {3}, dims1[1] = {8};
    pdcbb_box_t b1 = box(1, off1, size1);
    memset(&log, 0, sizeof(log));
    log.stop_at = 1;
    CHECK(pdcbb_box_runs(&b1, 1, dims1, 1, log_run, &log) == 7 && log.n == 1);

    /* Errors visit nothing. */
    static const struct {
        const char *what;
        uint32_t bndim;
        uint64_t off[3], size[3];
        uint32_t ndim;
        uint64_t dims[3];
        size_t unit;
        pdcbb_err_t want;
    } cases[] = {
        {"out of bounds dim 0", 2, {3, 0}, {2, 1}, 2, {4, 4}, 1, PDCBB_ERR_BAD_REGION},
        {"out of bounds dim 1", 2, {0, 4}, {1, 1}, 2, {4, 4}, 1, PDCBB_ERR_BAD_REGION},
        {"ndim mismatch", 2, {0, 0}, {1, 1}, 3, {4, 4, 4}, 1, PDCBB_ERR_BAD_REGION},
        {"ndim mismatch 2", 3, {0, 0, 0}, {1, 1, 1}, 2, {4, 4}, 1, PDCBB_ERR_BAD_REGION},
        {"zero dim", 2, {0, 0}, {1, 1}, 2, {4, 0}, 1, PDCBB_ERR_BAD_REGION},
        {"unlimited dim 1", 2, {0, 0}, {1, 1}, 2, {4, UNL}, 1, PDCBB_ERR_BAD_REGION},
        {"unit 0", 1, {0}, {1}, 1, {4}, 0, PDCBB_ERR_INVAL},
        {"stride too big", 2, {0, 0}, {1, 1}, 2, {UNL, 1ull << 61}, 4, PDCBB_ERR_TOO_BIG},
        {"offset past 2^63", 1, {1ull << 63}, {1}, 1, {UNL}, 1, PDCBB_ERR_TOO_BIG},
        {"offset overflows", 2, {1ull << 62, 0}, {1, 4}, 2, {UNL, 4}, 8, PDCBB_ERR_TOO_BIG},
        {"end past 2^63", 2, {(1ull << 59) - 1, 0}, {2, 4}, 2, {UNL, 4}, 4, PDCBB_ERR_TOO_BIG},
        {"end at 2^63", 2, {(1ull << 59) - 1, 0}, {1, 4}, 2, {UNL, 4}, 4, PDCBB_OK},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pdcbb_box_t e = box(cases[i].bndim, cases[i].off, cases[i].size);
        memset(&log, 0, sizeof(log));
        int rc = pdcbb_box_runs(&e, cases[i].ndim, cases[i].dims, cases[i].unit, log_run, &log);
        if (rc != (int)cases[i].want)
            fprintf(stderr, "runs error case '%s'\n", cases[i].what);
        CHECK_ERR(rc, cases[i].want);
        CHECK(cases[i].want == PDCBB_OK ? log.n == 1 : log.n == 0);
        /* box_copy reports the same error and copies nothing. */
        if (cases[i].want != PDCBB_OK) {
            unsigned char arr[64] = {0}, pk[64] = {0};
            CHECK_ERR(pdcbb_box_copy(&e, cases[i].ndim, cases[i].dims, cases[i].unit, arr, pk, 1),
                      cases[i].want);
        }
    }
    CHECK_ERR(pdcbb_box_runs(&b, 3, dims, 1, NULL, NULL), PDCBB_ERR_INVAL);
    unsigned char buf[64];
    CHECK_ERR(pdcbb_box_copy(&b, 3, dims, 1, NULL, buf, 1), PDCBB_ERR_INVAL);
    CHECK_ERR(pdcbb_box_copy(&b, 3, dims, 1, buf, NULL, 0), PDCBB_ERR_INVAL);
}

/* ---- randomized against naive references --------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    /* xorshift64*: fixed seed, reproducible everywhere */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static uint64_t rnd_below(uint64_t n)
{
    return rnd() % n;
}

/* Advance a row-major multi-index idx over sizes; 0 when it wraps around (the walk is done). */
static int odo_next(uint32_t ndim, uint64_t *idx, const uint64_t *size)
{
    for (uint32_t d = ndim; d > 0; d--) {
        if (++idx[d - 1] < size[d - 1])
            return 1;
        idx[d - 1] = 0;
    }
    return 0;
}

/* Row-major element index of coordinates c in an array of shape dims, computed by hand. */
static uint64_t naive_index(uint32_t ndim, const uint64_t *dims, const uint64_t *c)
{
    uint64_t i = 0;
    for (uint32_t d = 0; d < ndim; d++)
        i = i * dims[d] + c[d];
    return i;
}

/* Naive gather/scatter: one element at a time, in row-major order of the box. */
static void naive_copy(const pdcbb_box_t *b, const uint64_t *dims, size_t unit,
                       unsigned char *array, unsigned char *packed, int to_packed)
{
    uint64_t idx[PDCBB_REGION_NDIM_MAX] = {0}, c[PDCBB_REGION_NDIM_MAX] = {0};
    uint64_t k = 0;
    do {
        for (uint32_t d = 0; d < b->ndim; d++)
            c[d] = b->off[d] + idx[d];
        uint64_t a = naive_index(b->ndim, dims, c);
        if (to_packed)
            memcpy(packed + k * unit, array + a * unit, unit);
        else
            memcpy(array + a * unit, packed + k * unit, unit);
        k++;
    } while (odo_next(b->ndim, idx, b->size));
}

static void fill_random(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)rnd();
}

/* A random box inside dims; each dimension is made full with probability 1/3 (to merge runs). */
static pdcbb_box_t random_box_in(uint32_t ndim, const uint64_t *dims)
{
    uint64_t off[PDCBB_REGION_NDIM_MAX], size[PDCBB_REGION_NDIM_MAX];
    for (uint32_t d = 0; d < ndim; d++) {
        if (rnd_below(3) == 0) {
            off[d] = 0;
            size[d] = dims[d];
        } else {
            off[d] = rnd_below(dims[d]);
            size[d] = 1 + rnd_below(dims[d] - off[d]);
        }
    }
    return box(ndim, off, size);
}

/* Checks the walk's invariants: ordered, packed offsets contiguous, runs maximal. */
typedef struct run_check {
    uint64_t next_packed, prev_end;
    int n, bad;
} run_check_t;

static int check_run(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    run_check_t *c = arg;
    if (len == 0 || packed_off != c->next_packed || (c->n > 0 && array_off <= c->prev_end))
        c->bad = 1; /* array_off == prev_end would mean two runs that should have merged */
    c->next_packed = packed_off + len;
    c->prev_end = array_off + len;
    c->n++;
    return 0;
}

static void test_copy_random(void)
{
    static const size_t units[] = {1, 2, 3, 8};
    int failed = 0;
    for (int iter = 0; iter < 3000; iter++) {
        uint32_t ndim = 1 + (uint32_t)rnd_below(5);
        uint64_t dims[PDCBB_REGION_NDIM_MAX];
        uint64_t total = 1;
        for (uint32_t d = 0; d < ndim; d++) {
            dims[d] = 1 + rnd_below(6);
            total *= dims[d];
        }
        size_t unit = units[rnd_below(4)];
        pdcbb_box_t b = random_box_in(ndim, dims);
        uint64_t count = 0;
        CHECK_ERR(pdcbb_box_count(&b, &count), PDCBB_OK);

        size_t abytes = (size_t)(total * unit), pbytes = (size_t)(count * unit);
        unsigned char *arr = malloc(abytes), *ref_arr = malloc(abytes);
        unsigned char *pk = malloc(pbytes), *ref_pk = malloc(pbytes);
        fill_random(arr, abytes);

        run_check_t rc = {0};
        CHECK(pdcbb_box_runs(&b, ndim, dims, unit, check_run, &rc) == 0);
        int ok = !rc.bad && rc.next_packed == pbytes;

        /* gather */
        memset(pk, 0xcc, pbytes);
        CHECK_ERR(pdcbb_box_copy(&b, ndim, dims, unit, arr, pk, 1), PDCBB_OK);
        naive_copy(&b, dims, unit, arr, ref_pk, 1);
        ok &= memcmp(pk, ref_pk, pbytes) == 0;

        /* scatter: only the box's elements change */
        fill_random(pk, pbytes);
        memcpy(ref_arr, arr, abytes);
        CHECK_ERR(pdcbb_box_copy(&b, ndim, dims, unit, arr, pk, 0), PDCBB_OK);
        naive_copy(&b, dims, unit, ref_arr, pk, 0);
        ok &= memcmp(arr, ref_arr, abytes) == 0;

        /* An unlimited first dimension gives the same layout. */
        uint64_t udims[PDCBB_REGION_NDIM_MAX];
        memcpy(udims, dims, sizeof(udims));
        udims[0] = UNL;
        memset(pk, 0xcc, pbytes);
        CHECK_ERR(pdcbb_box_copy(&b, ndim, udims, unit, arr, pk, 1), PDCBB_OK);
        naive_copy(&b, dims, unit, arr, ref_pk, 1);
        ok &= memcmp(pk, ref_pk, pbytes) == 0;

        if (!ok && failed++ < 5)
            fprintf(stderr, "copy iteration %d (ndim %u, unit %zu) differs\n", iter, ndim, unit);
        CHECK(ok);
        free(arr);
        free(ref_arr);
        free(pk);
        free(ref_pk);
    }
}

/* Naive packed-to-packed copy: visit every element of b, copy it if a holds it. */
static int naive_overlap(const pdcbb_box_t *a, const unsigned char *src, const pdcbb_box_t *b,
                         unsigned char *dst, size_t unit)
{
    uint64_t idx[PDCBB_REGION_NDIM_MAX] = {0}, c[PDCBB_REGION_NDIM_MAX] = {0};
    uint64_t k = 0;
    int copied = 0;
    do {
        int inside = 1;
        for (uint32_t d = 0; d < b->ndim; d++) {
            uint64_t x = b->off[d] + idx[d];
            if (x < a->off[d] || x >= a->off[d] + a->size[d])
                inside = 0;
            c[d] = x - a->off[d];
        }
        if (inside) {
            memcpy(dst + k * unit, src + naive_index(a->ndim, a->size, c) * unit, unit);
            copied = 1;
        }
        k++;
    } while (odo_next(b->ndim, idx, b->size));
    return copied;
}

static pdcbb_box_t random_box(uint32_t ndim)
{
    uint64_t off[PDCBB_REGION_NDIM_MAX], size[PDCBB_REGION_NDIM_MAX];
    for (uint32_t d = 0; d < ndim; d++) {
        off[d] = rnd_below(6);
        size[d] = 1 + rnd_below(5);
    }
    return box(ndim, off, size);
}

static void test_overlap_random(void)
{
    int failed = 0, hits = 0;
    for (int iter = 0; iter < 3000; iter++) {
        uint32_t ndim = 1 + (uint32_t)rnd_below(5);
        size_t unit = 1 + rnd_below(4);
        pdcbb_box_t a = random_box(ndim), b = random_box(ndim);
        /* Sometimes make b share a's trailing extents, so that runs merge on both sides. */
        if (rnd_below(3) == 0)
            for (uint32_t d = 1 + (uint32_t)rnd_below(ndim); d < ndim; d++) {
                b.off[d] = a.off[d];
                b.size[d] = a.size[d];
            }
        uint64_t na, nb;
        CHECK_ERR(pdcbb_box_count(&a, &na), PDCBB_OK);
        CHECK_ERR(pdcbb_box_count(&b, &nb), PDCBB_OK);
        unsigned char *src = malloc(na * unit), *dst = malloc(nb * unit), *ref = malloc(nb * unit);
        fill_random(src, na * unit);
        fill_random(dst, nb * unit);
        memcpy(ref, dst, nb * unit);
        int got = pdcbb_box_copy_overlap(&a, src, &b, dst, unit);
        int want = naive_overlap(&a, src, &b, ref, unit);
        hits += want;
        int ok = got == want && memcmp(dst, ref, nb * unit) == 0;
        if (!ok && failed++ < 5)
            fprintf(stderr, "overlap iteration %d (ndim %u): got %d want %d\n", iter, ndim, got,
                    want);
        CHECK(ok);
        free(src);
        free(dst);
        free(ref);
    }
    CHECK(hits > 300); /* the generator does produce overlaps */

    /* Degenerate arguments. */
    uint64_t z[2] = {0, 0}, s[2] = {2, 2};
    pdcbb_box_t a1 = box(1, z, s), a2 = box(2, z, s);
    unsigned char buf[16] = {0};
    CHECK(pdcbb_box_copy_overlap(&a1, buf, &a2, buf + 8, 1) == 0);
    CHECK(pdcbb_box_copy_overlap(&a2, NULL, &a2, buf, 1) == -1);
    CHECK(pdcbb_box_copy_overlap(&a2, buf, &a2, buf + 8, 0) == -1);
    uint64_t big[2] = {1ull << 40, 1ull << 30};
    pdcbb_box_t huge = box(2, z, big);
    CHECK(pdcbb_box_copy_overlap(&huge, buf, &a2, buf + 8, 1) == -1);
}

static void test_split_random(void)
{
    int failed = 0, multi = 0;
    pdcbb_box_t pieces[9];
    unsigned stripe_of[9];
    for (int iter = 0; iter < 3000; iter++) {
        uint32_t ndim = 1 + (uint32_t)rnd_below(5);
        pdcbb_box_t b = random_box(ndim);
        uint32_t dim = (uint32_t)rnd_below(ndim);
        unsigned n = (unsigned)rnd_below(9); /* 0 behaves as 1 */
        uint64_t end = b.off[dim] + b.size[dim];
        uint64_t extent;
        switch (rnd_below(4)) {
        case 0:
            extent = UNL;
            break;
        case 1: /* the box may reach past the extent */
            extent = rnd_below(end + 1);
            break;
        default:
            extent = end + rnd_below(20);
            break;
        }
        memset(pieces, 0, sizeof(pieces));
        int np = pdcbb_box_split_stripes(&b, dim, extent, n, pieces, stripe_of);
        int ok = np >= 1 && np <= (n ? (int)n : 1);
        if (ok && (extent == UNL || extent < n || n <= 1)) {
            ok = np == 1 && stripe_of[0] == 0 && memcmp(&pieces[0], &b, sizeof(b)) == 0;
        } else if (ok) {
            uint64_t w = (extent + n - 1) / n, sum = 0, cb;
            CHECK_ERR(pdcbb_box_count(&b, &cb), PDCBB_OK);
            for (int i = 0; i < np; i++) {
                uint64_t c, lo = pieces[i].off[dim], hi = lo + pieces[i].size[dim];
                uint64_t k = stripe_of[i];
                ok &= pdcbb_box_contains(&b, &pieces[i]);
                ok &= pdcbb_box_count(&pieces[i], &c) == PDCBB_OK;
                sum += c;
                ok &= k < n && lo >= k * w && (k == n - 1 || hi <= (k + 1) * w);
                ok &= i == 0 || stripe_of[i] > stripe_of[i - 1];
                for (uint32_t d = 0; d < ndim; d++) /* only dim is cut */
                    ok &= d == dim ||
                          (pieces[i].off[d] == b.off[d] && pieces[i].size[d] == b.size[d]);
                for (int j = 0; j < i; j++)
                    ok &= !pdcbb_box_intersect(&pieces[i], &pieces[j], NULL);
            }
            ok &= sum == cb;
            multi += np > 1;
        }
        if (!ok && failed++ < 5)
            fprintf(stderr, "split iteration %d: dim %u extent %llu n %u -> %d pieces\n", iter, dim,
                    (unsigned long long)extent, n, np);
        CHECK(ok);
    }
    CHECK(multi > 300);

    /* Hand-worked: extent 10 over 4 stripes of 3: [0,3) [3,6) [6,9) [9,12). */
    uint64_t off[2] = {2, 1}, size[2] = {6, 3};
    pdcbb_box_t b = box(2, off, size);
    int np = pdcbb_box_split_stripes(&b, 0, 10, 4, pieces, stripe_of);
    CHECK(np == 3);
    CHECK(stripe_of[0] == 0 && pieces[0].off[0] == 2 && pieces[0].size[0] == 1);
    CHECK(stripe_of[1] == 1 && pieces[1].off[0] == 3 && pieces[1].size[0] == 3);
    CHECK(stripe_of[2] == 2 && pieces[2].off[0] == 6 && pieces[2].size[0] == 2);
    CHECK(pieces[1].off[1] == 1 && pieces[1].size[1] == 3);
    /* Past the extent, everything lands in the last stripe. */
    uint64_t off2[1] = {8}, size2[1] = {100};
    pdcbb_box_t c = box(1, off2, size2);
    np = pdcbb_box_split_stripes(&c, 0, 10, 4, pieces, stripe_of);
    CHECK(np == 2 && stripe_of[0] == 2 && stripe_of[1] == 3);
    CHECK(pieces[1].off[0] == 9 && pieces[1].size[0] == 99);
    /* Near the top of the range, no overflow. */
    uint64_t off3[1] = {U - 10}, size3[1] = {10};
    pdcbb_box_t t = box(1, off3, size3);
    np = pdcbb_box_split_stripes(&t, 0, U - 1, 3, pieces, stripe_of);
    CHECK(np == 1 && stripe_of[0] == 2 && memcmp(&pieces[0], &t, sizeof(t)) == 0);
    /* pieces aliasing b */
    pieces[0] = b;
    np = pdcbb_box_split_stripes(&pieces[0], 0, 10, 4, pieces, stripe_of);
    CHECK(np == 3 && pieces[2].off[0] == 6 && pieces[2].size[0] == 2);
    /* Bad arguments. */
    CHECK(pdcbb_box_split_stripes(&b, 2, 10, 4, pieces, stripe_of) == 0);
    CHECK(pdcbb_box_split_stripes(&b, 0, 10, 4, NULL, stripe_of) == 0);
}

/* PDCBB_REGION_STRIPED: stripe sizes, and a box cut into its stripes covers it exactly. */
static void test_stripes(void)
{
    /* bytes rows: 1 MiB exactly; odd rows: a multiple of 64 KiB of at least 1 MiB */
    CHECK(pdcbb_stripe_rows(1) == (1u << 20));
    CHECK(pdcbb_stripe_rows(8) == (1u << 17));
    CHECK(pdcbb_stripe_rows(3) * 3 % PDCBB_STRIPE_ALIGN == 0);
    CHECK(pdcbb_stripe_rows(3) * 3 >= PDCBB_STRIPE_BYTES);
    CHECK(pdcbb_stripe_rows(3) * 3 < PDCBB_STRIPE_BYTES + PDCBB_STRIPE_ALIGN * 3);
    CHECK(pdcbb_stripe_rows(3 << 20) == 1);   /* a 3 MiB row is one stripe */
    CHECK(pdcbb_stripe_rows(3 << 10) == 384); /* 3 KiB rows: 1152 KiB, 18 x 64 KiB */
    CHECK(pdcbb_stripe_rows(0) == 0);
    CHECK(pdcbb_stripe_rows(UINT64_MAX) == 0); /* a stripe would not fit in 64 bits */
    /* the daemon of stripe k: round robin from the home daemon */
    CHECK(pdcbb_stripe_daemon(0, 2, 3) == 2 && pdcbb_stripe_daemon(1, 2, 3) == 0 &&
          pdcbb_stripe_daemon(5, 2, 3) == 1 && pdcbb_stripe_daemon(7, 9, 1) == 0 &&
          pdcbb_stripe_daemon(7, 9, 0) == 0);
    /* a 1-D file object of 2^50 bytes: the last stripe and a box near the end, no overflow */
    uint64_t off = (1ull << 50) - 10, size = 10, first;
    pdcbb_box_t b, part;
    CHECK(pdcbb_box_make(&b, 1, &off, &size) == PDCBB_OK);
    CHECK(pdcbb_box_stripe_span(&b, 1u << 20, &first) == 1 && first == (1ull << 30) - 1);
    CHECK(pdcbb_box_stripe_part(&b, 1u << 20, first, &part) == 1 && part.off[0] == off &&
          part.size[0] == 10);
    CHECK(pdcbb_box_stripe_part(&b, 1u << 20, first + 1, &part) == 0);
    CHECK(pdcbb_box_stripe_part(&b, 1u << 20, UINT64_MAX, &part) == 0); /* k * rows overflows */
    CHECK(pdcbb_box_stripe_span(&b, 0, &first) == 0);
    /* random boxes: the parts are in order, inside their stripes, and add up to the box */
    int failed = 0;
    for (int iter = 0; iter < 3000; iter++) {
        uint32_t ndim = 1 + (uint32_t)rnd_below(4);
        pdcbb_box_t r = random_box(ndim);
        uint64_t rows = 1 + rnd_below(40), n = pdcbb_box_stripe_span(&r, rows, &first);
        uint64_t next = r.off[0], total = 0;
        for (uint64_t k = first; k < first + n; k++) {
            if (!pdcbb_box_stripe_part(&r, rows, k, &part) || part.off[0] != next ||
                part.off[0] / rows != k || (part.off[0] + part.size[0] - 1) / rows != k ||
                memcmp(part.off + 1, r.off + 1, (ndim - 1) * 8) != 0 ||
                memcmp(part.size + 1, r.size + 1, (ndim - 1) * 8) != 0)
                failed++;
            next = part.off[0] + part.size[0];
            total += part.size[0];
        }
        if (n == 0 || total != r.size[0] || pdcbb_box_stripe_part(&r, rows, first + n, &part) ||
            (first > 0 && pdcbb_box_stripe_part(&r, rows, first - 1, &part)))
            failed++;
    }
    CHECK(failed == 0);
}

int main(void)
{
    test_box_make();
    test_box_count();
    test_intersect_contains();
    test_check_within();
    test_layout_strides();
    test_runs_exact();
    test_runs_stop_and_errors();
    test_copy_random();
    test_overlap_random();
    test_split_random();
    test_stripes();
    UNIT_DONE("test_region");
}
