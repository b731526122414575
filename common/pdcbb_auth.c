/*
 * pdcbb_auth.c - the connection handshake's proofs (pdcbb_auth.h): one place computes them for
 * the client library, the daemon and its peers.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "pdcbb_auth.h"
#include "pdcbb_hmac.h"

_Static_assert(PDCBB_AUTH_PROOF_LEN == PDCBB_SHA256_LEN, "a proof is one HMAC-SHA256");
_Static_assert(PDCBB_AUTH_PROOF_LEN == PDCBB_TOKEN_LEN, "proofs compare as tokens do");

pdcbb_err_t pdcbb_auth_nonce(uint8_t out[PDCBB_AUTH_NONCE_LEN])
{
    uint8_t buf[PDCBB_AUTH_NONCE_LEN];
    size_t got = 0;
    while (got < sizeof(buf)) {
        ssize_t n = getrandom(buf + got, sizeof(buf) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return PDCBB_ERR_INTERNAL;
        got += (size_t)n;
    }
    memcpy(out, buf, sizeof(buf));
    return PDCBB_OK;
}

static void proof(const uint8_t *token, const char *label, const uint8_t *first,
                  const uint8_t *second, uint8_t *out)
{
    const void *parts[3] = {label, first, second};
    const size_t lens[3] = {strlen(label), PDCBB_AUTH_NONCE_LEN, PDCBB_AUTH_NONCE_LEN};
    pdcbb_hmac_sha256(token, PDCBB_TOKEN_LEN, 3, parts, lens, out);
}

void pdcbb_auth_daemon_proof(const uint8_t token[PDCBB_TOKEN_LEN],
                             const uint8_t cn[PDCBB_AUTH_NONCE_LEN],
                             const uint8_t dn[PDCBB_AUTH_NONCE_LEN],
                             uint8_t out[PDCBB_AUTH_PROOF_LEN])
{
    proof(token, "pdcbb-daemon-1", cn, dn, out);
}

void pdcbb_auth_client_proof(const uint8_t token[PDCBB_TOKEN_LEN],
                             const uint8_t cn[PDCBB_AUTH_NONCE_LEN],
                             const uint8_t dn[PDCBB_AUTH_NONCE_LEN],
                             uint8_t out[PDCBB_AUTH_PROOF_LEN])
{
    proof(token, "pdcbb-client-1", dn, cn, out);
}

int pdcbb_auth_proof_ok(const uint8_t expected[PDCBB_AUTH_PROOF_LEN], const void *proof_bytes,
                        uint32_t len)
{
    if (proof_bytes == NULL || len != PDCBB_AUTH_PROOF_LEN)
        return 0;
    return pdcbb_token_equal(expected, proof_bytes);
}
