/*
 * fuzz_dispatch.c - the daemon's request handling: bbd_dispatch's checks and every op's
 * handler, on a real LMDB store and data files, through the in-process daemon of
 * tests/unit/bbd_harness.h (no UCX). What a client holding the job's token can send, on a
 * connection that proved it (the harness's handshake), and what a stranger can send on one
 * that did not.
 *
 * Input: byte 0 picks the op (modulo the ops of PDCBB_OPS, so every handler is reached), byte 1
 * how the rest is sent:
 *   bit 0   0: the rest is the body of a request of that op, with the daemon's token (most
 *           inputs reach the handler); 1: the rest is a whole message as fuzzed, with the
 *           daemon's token written into its header unless bit 1 is set
 *   bit 1   (with bit 0) the message comes on a connection that did not authenticate
 *   bits 2-3  the bulk part: none, the last 64 bytes of the input, the last 4 KiB, or 1 MiB
 *           of a pattern (a DATA_WRITE's data)
 * The daemon is opened once per process, with a small metadata store and capacity, so state
 * builds up from input to input as in a long job (objects created by one input are used by
 * later ones). Properties: nothing crashes or leaks (ASan, UBSan), and every reply the daemon
 * builds is well formed (bbd_harness checks header, request id, op and body:
 * BBD_HARNESS_BAD_REPLY is a finding).
 */
#include <string.h>

#include "bbd_harness.h"
#include "fuzz_target.h"

static const unsigned fuzz_ops[] = {
#define FUZZ_X_OP(OP, val, lname, RQ, RP, ...) PDCBB_OP_##OP,
    PDCBB_OPS(FUZZ_X_OP)
#undef FUZZ_X_OP
};
#define FUZZ_NOPS (sizeof(fuzz_ops) / sizeof(fuzz_ops[0]))

static bbd_harness_t *harness;

static void fuzz_dispatch_close(void)
{
    bbd_harness_close(harness);
    harness = NULL;
}

static bbd_harness_t *fuzz_daemon(void)
{
    if (harness != NULL)
        return harness;
    pdcbb_config_t cfg;
    pdcbb_config_init(&cfg);
    cfg.lmdb_map_size = (uint64_t)64 << 20;
    cfg.capacity = (uint64_t)256 << 20;
    FUZZ_REQUIRE(bbd_harness_open(&cfg, &harness) == PDCBB_OK);
    atexit(fuzz_dispatch_close);
    return harness;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    bbd_harness_t *h = fuzz_daemon();
    unsigned op = fuzz_ops[data[0] % FUZZ_NOPS];
    unsigned how = data[1];
    const uint8_t *rest = data + 2;
    size_t len = size - 2;

    static uint8_t pattern[1 << 20];
    if (pattern[1] == 0)
        for (size_t i = 0; i < sizeof(pattern); i++)
            pattern[i] = (uint8_t)(i * 7 + 1);
    const uint8_t *bulk = NULL;
    size_t bulk_len = 0;
    switch ((how >> 2) & 3) {
    case 1:
        bulk_len = len < 64 ? len : 64;
        break;
    case 2:
        bulk_len = len < 4096 ? len : 4096;
        break;
    case 3:
        bulk = pattern;
        bulk_len = sizeof(pattern);
        break;
    default:
        break;
    }
    if (bulk == NULL && bulk_len > 0) {
        bulk = rest + len - bulk_len;
        len -= bulk_len;
    }

    uint8_t *msg;
    size_t msg_len;
    if (how & 1) {
        /* a whole message: the fuzzed header, with the job's token unless bit 1 */
        msg = malloc(len ? len : 1);
        FUZZ_REQUIRE(msg != NULL);
        memcpy(msg, rest, len);
        msg_len = len;
        if (!(how & 2) && msg_len >= PDCBB_HDR_LEN)
            memcpy(msg + 32, bbd_harness_daemon(h)->token, PDCBB_TOKEN_LEN);
    } else {
        /* a request of op with the job's token and this body */
        pdcbb_msg_hdr_t hd = {.magic = PDCBB_PROTO_MAGIC,
                              .version = PDCBB_PROTO_VERSION,
                              .op = (uint16_t)op,
                              .req_id = 1,
                              .payload_len = (uint32_t)len};
        memcpy(hd.token, bbd_harness_daemon(h)->token, PDCBB_TOKEN_LEN);
        msg_len = PDCBB_HDR_LEN + len;
        msg = malloc(msg_len);
        FUZZ_REQUIRE(msg != NULL);
        pdcbb_hdr_encode(&hd, msg);
        memcpy(msg + PDCBB_HDR_LEN, rest, len);
    }
    /* The token in the header opens nothing on UCX: only the connection's handshake does. */
    bbd_conn_t *conn = bbd_harness_conn(h);
    int authenticated = conn->authenticated;
    if ((how & 3) == 3)
        conn->authenticated = 0;
    int r = bbd_harness_raw(h, msg, msg_len, bulk, bulk_len);
    conn->authenticated = authenticated;
    free(msg);
    FUZZ_REQUIRE(r != BBD_HARNESS_BAD_REPLY);
    return 0;
}
