/*
 * test_select.c - strided selections: the checks of pdcbb_sel_make (each bad input named),
 * ranks, clipping and the run walk, the last two compared on random selections with a naive
 * per-element enumeration; runs that would end beyond the byte offset limit.
 */
#include <stdlib.h>
#include <string.h>

#include "pdcbb_select.h"
#include "unit_check.h"

static void test_make(void)
{
    pdcbb_sel_t s;
    char why[256];
    uint64_t st[2] = {1, 2}, sd[2] = {2, 3}, ct[2] = {3, 4}, bk[2] = {1, 2};
    CHECK_ERR(pdcbb_sel_make(&s, 2, st, sd, ct, bk, why, sizeof(why)), PDCBB_OK);
    CHECK(pdcbb_sel_count(&s) == 3 * 8);
    pdcbb_box_t b;
    pdcbb_sel_bbox(&s, &b);
    CHECK(b.off[0] == 1 && b.size[0] == 5 && b.off[1] == 2 && b.size[1] == 11);
    uint64_t z[2] = {3, 0};
    CHECK_ERR(pdcbb_sel_make(&s, 2, st, sd, z, bk, why, sizeof(why)), PDCBB_ERR_BAD_REGION);
    CHECK(strstr(why, "count[1] is 0") != NULL);
    uint64_t zb[2] = {1, 0};
    CHECK_ERR(pdcbb_sel_make(&s, 2, st, sd, ct, zb, why, sizeof(why)), PDCBB_ERR_BAD_REGION);
    CHECK(strstr(why, "block[1] is 0") != NULL);
    uint64_t big[2] = {1, 4};
    CHECK_ERR(pdcbb_sel_make(&s, 2, st, sd, ct, big, why, sizeof(why)), PDCBB_ERR_BAD_REGION);
    CHECK(strstr(why, "block[1] = 4 is larger than stride[1] = 3") != NULL);
    uint64_t hst[2] = {1, UINT64_MAX - 3};
    CHECK_ERR(pdcbb_sel_make(&s, 2, hst, sd, ct, bk, why, sizeof(why)), PDCBB_ERR_BAD_REGION);
    CHECK(strstr(why, "dimension 1 overflows") != NULL);
    uint64_t hs[2] = {2, UINT64_MAX / 2};
    CHECK_ERR(pdcbb_sel_make(&s, 2, st, hs, ct, bk, why, sizeof(why)), PDCBB_ERR_BAD_REGION);
    CHECK_ERR(pdcbb_sel_make(&s, 0, st, sd, ct, bk, why, sizeof(why)), PDCBB_ERR_BAD_REGION);
    CHECK_ERR(pdcbb_sel_make(&s, 17, st, sd, ct, bk, why, sizeof(why)), PDCBB_ERR_BAD_REGION);
    CHECK(strstr(why, "17 dimensions") != NULL);
    CHECK_ERR(pdcbb_sel_make(&s, 2, st, NULL, ct, bk, why, sizeof(why)), PDCBB_ERR_INVAL);
    /* The element count overflows although every dimension fits. */
    uint64_t one[3] = {0, 0, 0}, huge[3] = {1ull << 22, 1ull << 22, 1ull << 22};
    CHECK_ERR(pdcbb_sel_make(&s, 3, one, huge, huge, huge, why, sizeof(why)),
              PDCBB_ERR_BAD_REGION);
}

typedef struct rec {
    uint64_t *elems; /* array offsets in elements, in packed order */
    uint64_t n, cap;
    size_t unit;
    int bad;
} rec_t;

static int collect(uint64_t aoff, uint64_t len, uint64_t poff, void *arg)
{
    rec_t *r = arg;
    if (aoff % r->unit || len % r->unit || poff != r->n * r->unit || len == 0)
        r->bad = 1;
    for (uint64_t i = 0; i < len / r->unit; i++) {
        if (r->n == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 64;
            r->elems = realloc(r->elems, r->cap * sizeof(uint64_t));
        }
        r->elems[r->n++] = aoff / r->unit + i;
    }
    return 0;
}

static uint64_t rnd(uint64_t n)
{
    return (uint64_t)random() % n;
}

static void test_random(void)
{
    for (int iter = 0; iter < 3000; iter++) {
        uint32_t nd = 1 + (uint32_t)rnd(3);
        uint64_t st[3], sd[3], ct[3], bk[3], dims[3], lo[3], sz[3];
        for (uint32_t d = 0; d < nd; d++) {
            bk[d] = 1 + rnd(3);
            sd[d] = bk[d] + rnd(3);
            ct[d] = 1 + rnd(4);
            st[d] = rnd(4);
            dims[d] = st[d] + (ct[d] - 1) * sd[d] + bk[d] + rnd(3);
            lo[d] = rnd(dims[d]);
            sz[d] = 1 + rnd(dims[d] - lo[d]);
        }
        pdcbb_sel_t s;
        CHECK_ERR(pdcbb_sel_make(&s, nd, st, sd, ct, bk, NULL, 0), PDCBB_OK);
        pdcbb_box_t clip, ib;
        CHECK_ERR(pdcbb_box_make(&clip, nd, lo, sz), PDCBB_OK);
        /* Naive: every element of the array in row-major order, selected and in the clip. */
        uint64_t total = 1;
        for (uint32_t d = 0; d < nd; d++)
            total *= dims[d];
        uint64_t *want = malloc(total * sizeof(uint64_t)), nw = 0;
        for (uint64_t e = 0; e < total; e++) {
            uint64_t c[3], r = e;
            int in = 1;
            for (int d = (int)nd - 1; d >= 0; d--) {
                c[d] = r % dims[d];
                r /= dims[d];
                in &= c[d] >= lo[d] && c[d] < lo[d] + sz[d];
            }
            /* Naive membership, independent of pdcbb_sel_contains. */
            int sel = 1;
            for (uint32_t d = 0; d < nd; d++) {
                int hit = 0;
                for (uint64_t i = 0; i < ct[d]; i++)
                    hit |= c[d] >= st[d] + i * sd[d] && c[d] < st[d] + i * sd[d] + bk[d];
                sel &= hit;
            }
            CHECK(pdcbb_sel_contains(&s, c) == sel);
            if (in && sel)
                want[nw++] = e;
        }
        int has = pdcbb_sel_index_box(&s, &clip, &ib);
        CHECK(has == (nw > 0));
        if (has) {
            uint64_t ic = 1;
            for (uint32_t d = 0; d < nd; d++)
                ic *= ib.size[d];
            CHECK(ic == nw);
            rec_t r = {.unit = 4};
            CHECK_ERR(pdcbb_sel_runs(&s, &clip, nd, dims, 4, collect, &r), PDCBB_OK);
            CHECK(!r.bad && r.n == nw && (nw == 0 || memcmp(r.elems, want, nw * 8) == 0));
            free(r.elems);
        } else {
            rec_t r = {.unit = 4};
            CHECK_ERR(pdcbb_sel_runs(&s, &clip, nd, dims, 4, collect, &r), PDCBB_ERR_BAD_REGION);
        }
        /* Dims too small: refused. */
        uint64_t small[3];
        memcpy(small, dims, sizeof(small));
        pdcbb_box_t bb;
        pdcbb_sel_bbox(&s, &bb);
        small[0] = bb.off[0] + bb.size[0] - 1;
        rec_t r = {.unit = 4};
        if (small[0] > 0)
            CHECK_ERR(pdcbb_sel_runs(&s, &bb, nd, small, 4, collect, &r), PDCBB_ERR_BAD_REGION);
        free(r.elems);
        free(want);
    }
}

/* Every other column of a 4x6 array: one run per element; stride == block: whole rows merge. */
static void test_runs_merge(void)
{
    pdcbb_sel_t s;
    uint64_t st[2] = {0, 1}, sd[2] = {1, 2}, ct[2] = {4, 3}, dims[2] = {4, 6};
    CHECK_ERR(pdcbb_sel_make(&s, 2, st, sd, ct, NULL, NULL, 0), PDCBB_OK);
    pdcbb_box_t bb;
    pdcbb_sel_bbox(&s, &bb);
    rec_t r = {.unit = 8};
    int calls = 0;
    CHECK_ERR(pdcbb_sel_runs(&s, &bb, 2, dims, 8, collect, &r), PDCBB_OK);
    CHECK(r.n == 12 && r.elems[0] == 1 && r.elems[1] == 3 && r.elems[3] == 7);
    free(r.elems);
    uint64_t st2[2] = {1, 0}, sd2[2] = {1, 6}, ct2[2] = {2, 1}, bk2[2] = {1, 6};
    CHECK_ERR(pdcbb_sel_make(&s, 2, st2, sd2, ct2, bk2, NULL, 0), PDCBB_OK);
    pdcbb_sel_bbox(&s, &bb);
    (void)calls;
    rec_t r2 = {.unit = 8};
    CHECK_ERR(pdcbb_sel_runs(&s, &bb, 2, dims, 8, collect, &r2), PDCBB_OK);
    CHECK(r2.n == 12 && r2.elems[0] == 6 && r2.elems[11] == 17);
    free(r2.elems);
}

/* In an array whose unlimited first dimension lets a coordinate be that large, the run of the
 * selected element ends exactly at the byte offset limit (2^63: walked), 8 bytes beyond it
 * (refused), or at 2^64 (refused: that end wrapped to 0 and passed the check before
 * pdcbb_sel_runs checked it with pdcbb_range_ok). */
static int far_run(uint64_t aoff, uint64_t len, uint64_t poff, void *arg)
{
    uint64_t *got = arg;
    got[0] = aoff, got[1] = len, got[2] = poff, got[3]++;
    return 0;
}

static void test_runs_far(void)
{
    uint64_t dims[1] = {PDCBB_DIM_UNLIMITED}, sd[1] = {1}, ct[1] = {1};
    uint64_t ok[1] = {((uint64_t)1 << 60) - 1}, wraps[1] = {((uint64_t)1 << 61) - 1};
    uint64_t beyond[1] = {(uint64_t)1 << 60};
    pdcbb_sel_t s;
    pdcbb_box_t bb;
    uint64_t got[4] = {0};
    CHECK_ERR(pdcbb_sel_make(&s, 1, ok, sd, ct, NULL, NULL, 0), PDCBB_OK);
    pdcbb_sel_bbox(&s, &bb);
    CHECK_ERR(pdcbb_sel_runs(&s, &bb, 1, dims, 8, far_run, got), PDCBB_OK);
    CHECK(got[3] == 1 && got[0] == ((uint64_t)1 << 63) - 8 && got[1] == 8 && got[2] == 0);
    got[3] = 0;
    CHECK_ERR(pdcbb_sel_make(&s, 1, beyond, sd, ct, NULL, NULL, 0), PDCBB_OK);
    pdcbb_sel_bbox(&s, &bb);
    CHECK_ERR(pdcbb_sel_runs(&s, &bb, 1, dims, 8, far_run, got), PDCBB_ERR_TOO_BIG);
    CHECK_ERR(pdcbb_sel_make(&s, 1, wraps, sd, ct, NULL, NULL, 0), PDCBB_OK);
    pdcbb_sel_bbox(&s, &bb);
    CHECK_ERR(pdcbb_sel_runs(&s, &bb, 1, dims, 8, far_run, got), PDCBB_ERR_TOO_BIG);
    CHECK(got[3] == 0);
}

int main(void)
{
    srandom(1234);
    test_make();
    test_random();
    test_runs_merge();
    test_runs_far();
    printf("select: %d checks, %d failures\n", unit_checks, unit_failures);
    return unit_failures != 0;
}
