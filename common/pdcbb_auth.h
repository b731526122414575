/*
 * pdcbb_auth.h - proving the job token once per UCX connection (docs/PROTOCOL.md, "Connection
 * handshake"), for the client library, the daemon and daemons talking to each other.
 *
 * HELLO carries a fresh client nonce; its reply a fresh daemon nonce and the daemon's proof
 * HMAC-SHA256(token, "pdcbb-daemon-1" | client nonce | daemon nonce), which the client checks
 * (a daemon without the token cannot make it). AUTH then carries the client's proof
 * HMAC-SHA256(token, "pdcbb-client-1" | daemon nonce | client nonce), which the daemon checks
 * before it serves anything else on the connection. The token never travels; the two labels
 * keep one side's proof from ever being usable as the other's.
 *
 * Pure functions (pdcbb_auth_nonce reads the kernel's random source); thread-safe.
 */
#ifndef PDCBB_AUTH_H
#define PDCBB_AUTH_H

#include <stdint.h>

#include "pdcbb_error.h"
#include "pdcbb_proto.h"

/* Bytes of a nonce and of a proof. */
#define PDCBB_AUTH_NONCE_LEN 32
#define PDCBB_AUTH_PROOF_LEN 32

/*
 * Fill out with PDCBB_AUTH_NONCE_LEN fresh random bytes (getrandom). Returns PDCBB_OK, or
 * PDCBB_ERR_INTERNAL when the kernel's random source fails (out unchanged then).
 */
pdcbb_err_t pdcbb_auth_nonce(uint8_t out[PDCBB_AUTH_NONCE_LEN]);

/* The daemon's proof of token for the client nonce cn and the daemon nonce dn (in, 32 bytes
 * each) into out. */
void pdcbb_auth_daemon_proof(const uint8_t token[PDCBB_TOKEN_LEN],
                             const uint8_t cn[PDCBB_AUTH_NONCE_LEN],
                             const uint8_t dn[PDCBB_AUTH_NONCE_LEN],
                             uint8_t out[PDCBB_AUTH_PROOF_LEN]);

/* The client's proof of token for the same nonces into out. */
void pdcbb_auth_client_proof(const uint8_t token[PDCBB_TOKEN_LEN],
                             const uint8_t cn[PDCBB_AUTH_NONCE_LEN],
                             const uint8_t dn[PDCBB_AUTH_NONCE_LEN],
                             uint8_t out[PDCBB_AUTH_PROOF_LEN]);

/*
 * 1 if the len bytes at proof are the expected proof (PDCBB_AUTH_PROOF_LEN bytes), compared in
 * constant time; 0 otherwise (also for another length or a NULL proof).
 */
int pdcbb_auth_proof_ok(const uint8_t expected[PDCBB_AUTH_PROOF_LEN], const void *proof,
                        uint32_t len);

#endif
