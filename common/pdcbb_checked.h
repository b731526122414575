/*
 * pdcbb_checked.h - overflow-safe arithmetic on sizes, counts and offsets.
 *
 * Every length, count and offset that comes from a message (a request or reply body, a bulk
 * descriptor, a KV record, a shared-memory slot) or from a file (the store, a drain, the job
 * directory) goes through these before it sizes, indexes or bounds anything: the wire decoder
 * (pdcbb_proto.c), the KV record readers (pdcbb_kv.c), the region, selection and query
 * arithmetic, and the daemon's and the client's descriptor parsers. They are the only callers
 * of the compiler's __builtin_*_overflow in the tree, so there is one place to read when asking
 * whether a sum or a product can wrap, and no hand-written "a > max - b" to get wrong.
 *
 * Threads: pure functions, callable from any thread.
 */
#ifndef PDCBB_CHECKED_H
#define PDCBB_CHECKED_H

#include <stddef.h>
#include <stdint.h>

/*
 * a + b into *r (out). Returns 1 if the sum does not fit in 64 bits (*r then holds it modulo
 * 2^64, as __builtin_add_overflow leaves it), 0 if it does.
 */
static inline int pdcbb_add_overflow(uint64_t a, uint64_t b, uint64_t *r)
{
    return __builtin_add_overflow(a, b, r);
}

/*
 * a * b into *r (out). Returns 1 if the product does not fit in 64 bits (*r then holds it modulo
 * 2^64), 0 if it does.
 */
static inline int pdcbb_mul_overflow(uint64_t a, uint64_t b, uint64_t *r)
{
    return __builtin_mul_overflow(a, b, r);
}

/*
 * 1 if the range [off, off + len) lies within [0, limit), i.e. off + len <= limit, the sum
 * never being formed (so it cannot wrap); 0 otherwise. An empty range (len 0) is within limit
 * when off <= limit. Typical use: "the field of len bytes at off fits in the buffer".
 */
static inline int pdcbb_range_ok(uint64_t off, uint64_t len, uint64_t limit)
{
    return len <= limit && off <= limit - len;
}

/*
 * 1 if count elements of elem_size bytes (or words, whatever unit avail is in) fit in avail,
 * i.e. count * elem_size <= avail, the product never being formed; 0 otherwise. A count of 0
 * or an elem_size of 0 always fits.
 */
static inline int pdcbb_array_fits(uint64_t count, size_t elem_size, size_t avail)
{
    return elem_size == 0 || count <= avail / elem_size;
}

#endif
