/*
 * pdcbb_hmac.c - SHA-256 as FIPS 180-4 specifies it (section 6.2), and HMAC over it as RFC 2104
 * does (key longer than a block hashed first, inner and outer pads 0x36 and 0x5c).
 */
#include "pdcbb_hmac.h"

#include <string.h>

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

/* One 64-byte block into the state (FIPS 180-4, 6.2.2). */
static void sha256_block(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                      sha256_k[t] + w[t];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void pdcbb_sha256_init(pdcbb_sha256_t *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof(h0));
    s->bytes = 0;
    s->fill = 0;
}

void pdcbb_sha256_update(pdcbb_sha256_t *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    s->bytes += len;
    while (len > 0) {
        if (s->fill == 0 && len >= PDCBB_SHA256_BLOCK) {
            sha256_block(s->h, p);
            p += PDCBB_SHA256_BLOCK;
            len -= PDCBB_SHA256_BLOCK;
            continue;
        }
        size_t k = PDCBB_SHA256_BLOCK - s->fill < len ? PDCBB_SHA256_BLOCK - s->fill : len;
        memcpy(s->buf + s->fill, p, k);
        s->fill += k;
        p += k;
        len -= k;
        if (s->fill == PDCBB_SHA256_BLOCK) {
            sha256_block(s->h, s->buf);
            s->fill = 0;
        }
    }
}

void pdcbb_sha256_final(pdcbb_sha256_t *s, uint8_t out[PDCBB_SHA256_LEN])
{
    /* padding (5.1.1): 0x80, zeros, the length in bits as a 64-bit big-endian number */
    uint64_t bits = s->bytes * 8;
    uint8_t pad[PDCBB_SHA256_BLOCK + 8] = {0x80};
    size_t padlen = s->fill < 56 ? 56 - s->fill : 120 - s->fill;
    for (int i = 0; i < 8; i++)
        pad[padlen + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
    uint64_t keep = s->bytes;
    pdcbb_sha256_update(s, pad, padlen + 8);
    s->bytes = keep;
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
}

void pdcbb_sha256(const void *data, size_t len, uint8_t out[PDCBB_SHA256_LEN])
{
    pdcbb_sha256_t s;
    pdcbb_sha256_init(&s);
    pdcbb_sha256_update(&s, data, len);
    pdcbb_sha256_final(&s, out);
}

void pdcbb_hmac_sha256(const void *key, size_t key_len, size_t n, const void *const *parts,
                       const size_t *lens, uint8_t out[PDCBB_SHA256_LEN])
{
    uint8_t k[PDCBB_SHA256_BLOCK] = {0}, pad[PDCBB_SHA256_BLOCK], inner[PDCBB_SHA256_LEN];
    if (key_len > PDCBB_SHA256_BLOCK)
        pdcbb_sha256(key, key_len, k);
    else if (key_len > 0)
        memcpy(k, key, key_len);
    pdcbb_sha256_t s;
    for (int i = 0; i < PDCBB_SHA256_BLOCK; i++)
        pad[i] = k[i] ^ 0x36;
    pdcbb_sha256_init(&s);
    pdcbb_sha256_update(&s, pad, sizeof(pad));
    for (size_t i = 0; i < n; i++)
        pdcbb_sha256_update(&s, parts[i], lens[i]);
    pdcbb_sha256_final(&s, inner);
    for (int i = 0; i < PDCBB_SHA256_BLOCK; i++)
        pad[i] = k[i] ^ 0x5c;
    pdcbb_sha256_init(&s);
    pdcbb_sha256_update(&s, pad, sizeof(pad));
    pdcbb_sha256_update(&s, inner, sizeof(inner));
    pdcbb_sha256_final(&s, out);
}
