/*
 * test_hmac.c - SHA-256 against FIPS 180-4's examples and HMAC-SHA256 against RFC 4231's test
 * cases 1, 2, 4 and 6, whole and fed in pieces; the connection handshake's proofs
 * (common/pdcbb_auth.h) against values computed independently (Python's hmac module), so the
 * wire format of the proofs is pinned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdcbb_auth.h"
#include "pdcbb_hmac.h"
#include "unit_check.h"

static int digest_is(const uint8_t d[PDCBB_SHA256_LEN], const char *hex)
{
    char got[2 * PDCBB_SHA256_LEN + 1];
    for (int i = 0; i < PDCBB_SHA256_LEN; i++)
        snprintf(got + 2 * i, 3, "%02x", d[i]);
    if (strcmp(got, hex) != 0) {
        fprintf(stderr, "    got %s\n   want %s\n", got, hex);
        return 0;
    }
    return 1;
}

static int hmac_is(const void *key, size_t klen, const char *msg, const char *hex)
{
    uint8_t d[PDCBB_SHA256_LEN];
    const void *parts[1] = {msg};
    size_t lens[1] = {strlen(msg)};
    pdcbb_hmac_sha256(key, klen, 1, parts, lens, d);
    if (!digest_is(d, hex))
        return 0;
    /* the same message in three parts gives the same MAC */
    size_t n = strlen(msg), a = n / 3, b = n / 2;
    const void *p3[3] = {msg, msg + a, msg + b};
    size_t l3[3] = {a, b - a, n - b};
    pdcbb_hmac_sha256(key, klen, 3, p3, l3, d);
    return digest_is(d, hex);
}

/* The proofs of token 00 01 .. 1f, client nonce 32 x 0x11, daemon nonce 32 x 0x22:
 * hmac.new(token, b"pdcbb-daemon-1" + cn + dn, sha256) and (b"pdcbb-client-1" + dn + cn). */
static void test_auth(void)
{
    uint8_t token[PDCBB_TOKEN_LEN], cn[PDCBB_AUTH_NONCE_LEN], dn[PDCBB_AUTH_NONCE_LEN];
    uint8_t dp[PDCBB_AUTH_PROOF_LEN], cp[PDCBB_AUTH_PROOF_LEN];
    for (int i = 0; i < PDCBB_TOKEN_LEN; i++)
        token[i] = (uint8_t)i;
    memset(cn, 0x11, sizeof(cn));
    memset(dn, 0x22, sizeof(dn));
    pdcbb_auth_daemon_proof(token, cn, dn, dp);
    pdcbb_auth_client_proof(token, cn, dn, cp);
    CHECK(digest_is(dp, "ab46ff6f7db8cab6f90d53c81654bca23265d6abf370278da467b1bd53b1fcb5"));
    CHECK(digest_is(cp, "bca272b2e7847ac2573247ceba7ac444cea8b79ea8e41249f6c9da48435a5c60"));
    CHECK(pdcbb_auth_proof_ok(cp, cp, sizeof(cp)));
    CHECK(!pdcbb_auth_proof_ok(cp, dp, sizeof(dp)));
    CHECK(!pdcbb_auth_proof_ok(cp, cp, sizeof(cp) - 1));
    CHECK(!pdcbb_auth_proof_ok(cp, NULL, 0));
    /* another token, or the nonces swapped, give another proof */
    token[31] ^= 1;
    pdcbb_auth_daemon_proof(token, cn, dn, cp);
    CHECK(memcmp(cp, dp, sizeof(dp)) != 0);
    token[31] ^= 1;
    pdcbb_auth_daemon_proof(token, dn, cn, cp);
    CHECK(memcmp(cp, dp, sizeof(dp)) != 0);
    /* nonces are fresh */
    uint8_t n1[PDCBB_AUTH_NONCE_LEN], n2[PDCBB_AUTH_NONCE_LEN];
    CHECK_ERR(pdcbb_auth_nonce(n1), PDCBB_OK);
    CHECK_ERR(pdcbb_auth_nonce(n2), PDCBB_OK);
    CHECK(memcmp(n1, n2, sizeof(n1)) != 0);
}

int main(void)
{
    uint8_t d[PDCBB_SHA256_LEN];
    pdcbb_sha256("abc", 3, d);
    CHECK(digest_is(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    pdcbb_sha256("", 0, d);
    CHECK(digest_is(d, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    pdcbb_sha256(two, strlen(two), d);
    CHECK(digest_is(d, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    /* a million 'a', fed in uneven pieces across block boundaries */
    char *ma = malloc(1000000);
    CHECK(ma != NULL);
    if (ma != NULL) {
        memset(ma, 'a', 1000000);
        pdcbb_sha256_t s;
        pdcbb_sha256_init(&s);
        for (size_t off = 0, step = 1; off < 1000000; off += step, step = step * 3 % 1000 + 1)
            pdcbb_sha256_update(&s, ma + off, off + step > 1000000 ? 1000000 - off : step);
        pdcbb_sha256_final(&s, d);
        CHECK(digest_is(d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
        free(ma);
    }
    /* 55, 56 and 64 bytes: the padding's edge cases, against the one-call digest of pieces */
    for (size_t n = 55; n <= 64; n++) {
        char m[64];
        memset(m, 'x', sizeof(m));
        uint8_t whole[PDCBB_SHA256_LEN], byte[PDCBB_SHA256_LEN];
        pdcbb_sha256(m, n, whole);
        pdcbb_sha256_t s;
        pdcbb_sha256_init(&s);
        for (size_t i = 0; i < n; i++)
            pdcbb_sha256_update(&s, m + i, 1);
        pdcbb_sha256_final(&s, byte);
        CHECK(memcmp(whole, byte, sizeof(whole)) == 0);
    }

    uint8_t k1[20];
    memset(k1, 0x0b, sizeof(k1));
    CHECK(hmac_is(k1, sizeof(k1), "Hi There",
                  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"));
    CHECK(hmac_is("Jefe", 4, "what do ya want for nothing?",
                  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    uint8_t k4[25];
    for (int i = 0; i < 25; i++)
        k4[i] = (uint8_t)(i + 1);
    char m4[51];
    memset(m4, 0xcd, 50);
    m4[50] = '\0';
    CHECK(hmac_is(k4, sizeof(k4), m4,
                  "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"));
    uint8_t k6[131];
    memset(k6, 0xaa, sizeof(k6));
    CHECK(hmac_is(k6, sizeof(k6), "Test Using Larger Than Block-Size Key - Hash Key First",
                  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
    test_auth();
    UNIT_DONE("hmac");
}
