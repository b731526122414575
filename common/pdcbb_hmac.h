/*
 * pdcbb_hmac.h - SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for proving the job token
 * on a connection without sending it (docs/RELIABILITY.md): each side sends
 * HMAC(token, label | its peer's nonce | its own nonce) instead of the token itself.
 *
 * Pure functions of their inputs, safe from any thread. Checked against the test vectors of
 * FIPS 180-4 and RFC 4231 (tests/unit/test_hmac.c).
 */
#ifndef PDCBB_HMAC_H
#define PDCBB_HMAC_H

#include <stddef.h>
#include <stdint.h>

#define PDCBB_SHA256_LEN   32
#define PDCBB_SHA256_BLOCK 64

typedef struct pdcbb_sha256 {
    uint32_t h[8];
    uint64_t bytes;                  /* message length so far */
    uint8_t buf[PDCBB_SHA256_BLOCK]; /* a block being filled */
    size_t fill;
} pdcbb_sha256_t;

void pdcbb_sha256_init(pdcbb_sha256_t *s);
void pdcbb_sha256_update(pdcbb_sha256_t *s, const void *data, size_t len);
void pdcbb_sha256_final(pdcbb_sha256_t *s, uint8_t out[PDCBB_SHA256_LEN]);
/* The digest of len bytes at data. */
void pdcbb_sha256(const void *data, size_t len, uint8_t out[PDCBB_SHA256_LEN]);

/* HMAC-SHA256 of the n parts parts[i] (lens[i] bytes each, concatenated) under key. */
void pdcbb_hmac_sha256(const void *key, size_t key_len, size_t n, const void *const *parts,
                       const size_t *lens, uint8_t out[PDCBB_SHA256_LEN]);

#endif
