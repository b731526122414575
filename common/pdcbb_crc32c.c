/*
 * pdcbb_crc32c.c - CRC-32C: the SSE4.2 instruction when present (three independent streams
 * combined for long buffers: the instruction's latency, not its throughput, limits one
 * stream), else slicing-by-8; and the register arithmetic of pdcbb_crc32c.h.
 */
#include <pthread.h>
#include <string.h>

#include "pdcbb_crc32c.h"

#define POLY 0x82F63B78u

static uint32_t table[8][256];

static void table_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            table[k][n] = (table[k - 1][n] >> 8) ^ table[0][table[k - 1][n] & 0xff];
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc; /* little-endian: the low 32 bits take the running CRC */
        crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
              table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^
              table[2][(w >> 40) & 0xff] ^ table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_HW 1
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p,
                                                         size_t len)
{
    uint64_t c = crc;
    while (len && ((uintptr_t)p & 7)) {
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return (uint32_t)c;
}

static uint32_t shift(uint32_t state, uint64_t n);

/* Three streams over thirds of the buffer, combined: about three times one stream's speed. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw3(uint32_t crc, const uint8_t *p,
                                                          size_t len)
{
    if (len < 3 * 4096)
        return crc_hw(crc, p, len);
    size_t third = (len / 3) & ~(size_t)7;
    const uint8_t *q = p + third, *r = p + 2 * third;
    uint64_t a = crc, b = 0, c = 0;
    for (size_t i = 0; i < third; i += 8) {
        uint64_t wa, wb, wc;
        memcpy(&wa, p + i, 8);
        memcpy(&wb, q + i, 8);
        memcpy(&wc, r + i, 8);
        a = __builtin_ia32_crc32di(a, wa);
        b = __builtin_ia32_crc32di(b, wb);
        c = __builtin_ia32_crc32di(c, wc);
    }
    /* raw(s, X Y) == shift(raw(s, X), |Y|) ^ raw(0, Y) */
    uint32_t s = shift((uint32_t)a, third) ^ (uint32_t)b;
    s = shift(s, third) ^ (uint32_t)c;
    return crc_hw(s, r + third, len - 3 * third);
}
#endif

typedef uint32_t (*crc_fn)(uint32_t, const uint8_t *, size_t);

static crc_fn choose(void)
{
#ifdef HAVE_HW
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2"))
        return crc_hw3;
#endif
    return crc_sw;
}

/* Registers are polynomials over GF(2), bit 31 the constant term (reflected). */
static uint32_t multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
    }
    return p;
}

static uint32_t x2n[67]; /* x^(2^k) mod P, k < 3 + 64 */

/* state * x^(8n) mod P: the register after n zero bytes. */
static uint32_t shift(uint32_t state, uint64_t n)
{
    uint32_t p = 1u << 31; /* x^0 */
    for (unsigned k = 3; n; n >>= 1, k++)
        if (n & 1)
            p = multmodp(x2n[k], p);
    return multmodp(p, state);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static crc_fn fn;

static void init(void)
{
    table_init();
    uint32_t p = 1u << 30; /* x^1 */
    for (int k = 0; k < 67; k++) {
        x2n[k] = p;
        p = multmodp(p, p);
    }
    fn = choose();
}

uint32_t pdcbb_crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&once, init);
    return ~fn(~crc, buf, len);
}

uint32_t pdcbb_crc32c_raw(uint32_t state, const void *buf, size_t len)
{
    pthread_once(&once, init);
    return fn(state, buf, len);
}

uint32_t pdcbb_crc32c_shift(uint32_t state, uint64_t n)
{
    pthread_once(&once, init);
    return shift(state, n);
}

uint32_t pdcbb_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    pthread_once(&once, init);
    return shift(crc_a, len_b) ^ crc_b;
}
