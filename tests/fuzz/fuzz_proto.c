/*
 * fuzz_proto.c - the wire protocol's decoders (common/pdcbb_proto.c): the 64-byte message
 * header and the request and reply body of every op of PDCBB_OPS, as a daemon decodes requests
 * and a client decodes replies (the shared-memory channel and UCX carry the same messages).
 *
 * Input: byte 0 picks the op (modulo the number of ops, so every op of PDCBB_OPS is reached),
 * byte 1 bit 0 a reply (else a request), bit 1 a whole message (the header decoded first, the
 * op and reply flag then taken from it, as bbd_dispatch and client_rpc do); the rest is the
 * body or the message. Properties: a decoded header or body encodes back to the very bytes it
 * came from (one encoding per value; the header's reserved bytes aside), and a decoded body is
 * released with pdcbb_body_free as the product releases it.
 */
#include <string.h>

#include "fuzz_target.h"
#include "pdcbb_proto.h"

static const unsigned fuzz_ops[] = {
#define FUZZ_X_OP(OP, val, lname, RQ, RP, ...) PDCBB_OP_##OP,
    PDCBB_OPS(FUZZ_X_OP)
#undef FUZZ_X_OP
};
#define FUZZ_NOPS (sizeof(fuzz_ops) / sizeof(fuzz_ops[0]))

/* Decode a body; when it decodes, it must encode back to the same bytes. */
static void fuzz_body(unsigned op, int is_reply, const uint8_t *payload, size_t len)
{
    pdcbb_any_body_t body;
    if (pdcbb_body_decode(op, is_reply, payload, len, &body) != PDCBB_OK)
        return;
    size_t size = 0;
    FUZZ_REQUIRE(pdcbb_body_size(op, is_reply, &body, &size) == PDCBB_OK);
    FUZZ_REQUIRE(size == len);
    uint8_t *again = malloc(size ? size : 1);
    FUZZ_REQUIRE(again != NULL);
    FUZZ_REQUIRE(pdcbb_body_encode(op, is_reply, &body, again, size) == PDCBB_OK);
    FUZZ_REQUIRE(memcmp(again, payload, size) == 0);
    free(again);
    pdcbb_body_free(op, is_reply, &body);
}

static void fuzz_message(const uint8_t *msg, size_t len)
{
    pdcbb_msg_hdr_t h;
    if (pdcbb_hdr_decode(msg, len, &h) != PDCBB_OK)
        return;
    uint8_t again[PDCBB_HDR_LEN];
    pdcbb_hdr_encode(&h, again);
    FUZZ_REQUIRE(memcmp(again, msg, 28) == 0 && memcmp(again + 32, msg + 32, 32) == 0);
    FUZZ_REQUIRE((size_t)h.payload_len == len - PDCBB_HDR_LEN);
    /* The receivers name the op in logs whatever it is, and decode known ones. */
    FUZZ_REQUIRE(pdcbb_op_name(h.op) != NULL);
    if (pdcbb_op_valid(h.op))
        fuzz_body(h.op, (h.flags & PDCBB_MSG_FLAG_REPLY) != 0, msg + PDCBB_HDR_LEN, h.payload_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned op = fuzz_ops[data[0] % FUZZ_NOPS];
    int is_reply = data[1] & 1, whole = data[1] & 2;
    if (whole)
        fuzz_message(data + 2, size - 2);
    else
        fuzz_body(op, is_reply, data + 2, size - 2);
    return 0;
}
