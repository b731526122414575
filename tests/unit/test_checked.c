/*
 * test_checked.c - the overflow-safe helpers of common/pdcbb_checked.h at their edges: sums and
 * products just inside and just beyond 64 bits, ranges ending exactly at their limit and one
 * past it, arrays whose byte size would overflow, and zero lengths and counts.
 */
#include <stdint.h>
#include <stdio.h>

#include "pdcbb_checked.h"
#include "unit_check.h"

static void test_add(void)
{
    uint64_t r = 0;
    CHECK(!pdcbb_add_overflow(1, 2, &r) && r == 3);
    CHECK(!pdcbb_add_overflow(0, 0, &r) && r == 0);
    CHECK(!pdcbb_add_overflow(UINT64_MAX - 1, 1, &r) && r == UINT64_MAX);
    CHECK(!pdcbb_add_overflow(UINT64_MAX, 0, &r) && r == UINT64_MAX);
    /* UINT64_MAX + 1 wraps to 0: reported, and *r holds the sum modulo 2^64 */
    CHECK(pdcbb_add_overflow(UINT64_MAX, 1, &r) && r == 0);
    CHECK(pdcbb_add_overflow(1, UINT64_MAX, &r) && r == 0);
    CHECK(pdcbb_add_overflow(UINT64_MAX, UINT64_MAX, &r) && r == UINT64_MAX - 1);
    CHECK(pdcbb_add_overflow((uint64_t)1 << 63, (uint64_t)1 << 63, &r));
    CHECK(!pdcbb_add_overflow(((uint64_t)1 << 63) - 1, (uint64_t)1 << 63, &r) && r == UINT64_MAX);
}

static void test_mul(void)
{
    uint64_t r = 0;
    const uint64_t two32 = (uint64_t)1 << 32;
    CHECK(!pdcbb_mul_overflow(6, 7, &r) && r == 42);
    CHECK(!pdcbb_mul_overflow(0, UINT64_MAX, &r) && r == 0);
    CHECK(!pdcbb_mul_overflow(UINT64_MAX, 0, &r) && r == 0);
    CHECK(!pdcbb_mul_overflow(UINT64_MAX, 1, &r) && r == UINT64_MAX);
    /* 2^32 * 2^32 = 2^64: one past the largest value, wraps to 0 */
    CHECK(pdcbb_mul_overflow(two32, two32, &r) && r == 0);
    CHECK(!pdcbb_mul_overflow(two32 - 1, two32 + 1, &r) && r == UINT64_MAX);
    CHECK(!pdcbb_mul_overflow(two32, two32 - 1, &r) && r == two32 * (two32 - 1));
    CHECK(pdcbb_mul_overflow(UINT64_MAX, 2, &r) && r == UINT64_MAX - 1);
    CHECK(pdcbb_mul_overflow((uint64_t)1 << 62, 4, &r));
    CHECK(!pdcbb_mul_overflow((uint64_t)1 << 62, 3, &r) && r == 3 * ((uint64_t)1 << 62));
}

static void test_range(void)
{
    /* off + len == limit is within it; one more byte is not */
    CHECK(pdcbb_range_ok(10, 6, 16));
    CHECK(!pdcbb_range_ok(10, 7, 16));
    CHECK(!pdcbb_range_ok(11, 6, 16));
    CHECK(pdcbb_range_ok(0, 16, 16));
    CHECK(!pdcbb_range_ok(0, 17, 16));
    /* empty ranges: anywhere up to the limit, not beyond it */
    CHECK(pdcbb_range_ok(0, 0, 0));
    CHECK(pdcbb_range_ok(16, 0, 16));
    CHECK(!pdcbb_range_ok(17, 0, 16));
    CHECK(!pdcbb_range_ok(0, 1, 0));
    /* at the top of the 64-bit range, where off + len would wrap */
    CHECK(pdcbb_range_ok(UINT64_MAX - 1, 1, UINT64_MAX));
    CHECK(pdcbb_range_ok(UINT64_MAX, 0, UINT64_MAX));
    CHECK(!pdcbb_range_ok(UINT64_MAX, 1, UINT64_MAX));
    CHECK(!pdcbb_range_ok(1, UINT64_MAX, UINT64_MAX));
    CHECK(!pdcbb_range_ok(UINT64_MAX, UINT64_MAX, UINT64_MAX));
    CHECK(!pdcbb_range_ok(2, UINT64_MAX - 1, 16)); /* the sum wraps to 0: still refused */
    CHECK(!pdcbb_range_ok(UINT64_MAX - 3, 8, 16));
    CHECK(pdcbb_range_ok(0, UINT64_MAX, UINT64_MAX));
}

static void test_array(void)
{
    /* exactly full, one element over, one byte short */
    CHECK(pdcbb_array_fits(4, 8, 32));
    CHECK(!pdcbb_array_fits(5, 8, 32));
    CHECK(!pdcbb_array_fits(4, 8, 31));
    CHECK(pdcbb_array_fits(3, 8, 31));
    /* zero counts and zero-sized elements always fit, even in nothing */
    CHECK(pdcbb_array_fits(0, 8, 0));
    CHECK(pdcbb_array_fits(0, SIZE_MAX, 0));
    CHECK(pdcbb_array_fits(UINT64_MAX, 0, 0));
    CHECK(!pdcbb_array_fits(1, 1, 0));
    /* count * elem_size would overflow size_t (and uint64): the product wraps to a small
     * number, which a plain "count * size <= avail" would have let through */
    CHECK(!pdcbb_array_fits((uint64_t)1 << 61, 8, 64));
    CHECK(!pdcbb_array_fits(((uint64_t)1 << 61) + 1, 8, 64));
    CHECK(!pdcbb_array_fits(UINT64_MAX, 2, SIZE_MAX));
    CHECK(!pdcbb_array_fits((uint64_t)SIZE_MAX / 16 + 1, 16, SIZE_MAX));
    CHECK(pdcbb_array_fits((uint64_t)SIZE_MAX / 16, 16, SIZE_MAX));
    CHECK(pdcbb_array_fits((uint64_t)SIZE_MAX, 1, SIZE_MAX));
    /* a u32 count of u64 values against what is left of a 16 MiB payload */
    CHECK(pdcbb_array_fits(2u << 20, 8, 16u << 20));
    CHECK(!pdcbb_array_fits(UINT32_MAX, 8, 16u << 20));
}

int main(void)
{
    test_add();
    test_mul();
    test_range();
    test_array();
    UNIT_DONE("checked");
}
