/*
 * fuzz_shm.c - what a receiver reads from a shared-memory channel's segment
 * (common/pdcbb_shm.h, docs/PROTOCOL.md "Shared-memory channel"), which the peer process writes
 * at will: the daemon reads a request (req_len and the request slot), the client a reply
 * (rep_flags, rep_len and the reply slot). Each copies the message out when its length is one
 * to take (pdcbb_shm_msg_len_ok), then checks it as a message over UCX: the header
 * (pdcbb_hdr_decode), a request's op against what a channel carries (pdcbb_shm_op_allowed), a
 * reply's flag, and the body (pdcbb_body_decode, released with pdcbb_body_free).
 *
 * Input: byte 0 the side (bit 0: the client reading a reply, else the daemon reading a
 * request; bit 1: the daemon set PDCBB_SHM_REP_RETRY), bytes 1-8 the length the peer wrote
 * (little-endian), then the bytes the peer left in the slot (the rest of the slot is zero).
 * The segment is a real one of PDCBB_SHM_SIZE bytes.
 */
#include <string.h>
#include <sys/mman.h>

#include "fuzz_target.h"
#include "pdcbb_shm.h"

static uint8_t *fuzz_segment;  /* PDCBB_SHM_SIZE bytes, mapped once */
static size_t fuzz_slot_dirty; /* bytes of the slots the previous input wrote */

/* The peer's side: ctl fields and slot bytes as the input says. */
static void fuzz_peer_writes(const uint8_t *data, size_t size, int reply, uint64_t len)
{
    pdcbb_shm_ctl_t *ctl = (pdcbb_shm_ctl_t *)fuzz_segment;
    uint8_t *slot = reply ? pdcbb_shm_rep_slot(fuzz_segment) : pdcbb_shm_req_slot(fuzz_segment);
    memset(pdcbb_shm_req_slot(fuzz_segment), 0, fuzz_slot_dirty);
    memset(pdcbb_shm_rep_slot(fuzz_segment), 0, fuzz_slot_dirty);
    fuzz_slot_dirty = size < PDCBB_SHM_SLOT ? size : PDCBB_SHM_SLOT;
    memcpy(slot, data, fuzz_slot_dirty);
    if (reply)
        ctl->rep_len = len;
    else
        ctl->req_len = len;
}

/* The receiver's side, as bbd_shm.c (requests) and client_shm.c with client_rpc.c (replies). */
static void fuzz_receiver_reads(int reply, int retry_flag)
{
    pdcbb_shm_ctl_t *ctl = (pdcbb_shm_ctl_t *)fuzz_segment;
    ctl->rep_flags = retry_flag ? PDCBB_SHM_REP_RETRY : 0;
    if (reply && (ctl->rep_flags & PDCBB_SHM_REP_RETRY))
        return; /* the client asks again over UCX */
    uint64_t len =
        reply ? *(volatile uint64_t *)&ctl->rep_len : *(volatile uint64_t *)&ctl->req_len;
    if (!pdcbb_shm_msg_len_ok(len))
        return;
    uint8_t *msg = malloc(len);
    FUZZ_REQUIRE(msg != NULL);
    memcpy(msg, reply ? pdcbb_shm_rep_slot(fuzz_segment) : pdcbb_shm_req_slot(fuzz_segment), len);
    pdcbb_msg_hdr_t h;
    if (pdcbb_hdr_decode(msg, len, &h) == PDCBB_OK && pdcbb_op_valid(h.op) &&
        (reply ? (h.flags & PDCBB_MSG_FLAG_REPLY) != 0 && h.status == PDCBB_OK
               : !(h.flags & PDCBB_MSG_FLAG_REPLY) && pdcbb_shm_op_allowed(h.op))) {
        pdcbb_any_body_t body;
        if (pdcbb_body_decode(h.op, reply, msg + PDCBB_HDR_LEN, h.payload_len, &body) == PDCBB_OK)
            pdcbb_body_free(h.op, reply, &body);
    }
    free(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 9)
        return 0;
    if (fuzz_segment == NULL) {
        void *m =
            mmap(NULL, PDCBB_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        FUZZ_REQUIRE(m != MAP_FAILED);
        fuzz_segment = m;
    }
    int reply = data[0] & 1, retry_flag = data[0] & 2;
    uint64_t len = 0;
    for (int i = 8; i >= 1; i--)
        len = len << 8 | data[i];
    fuzz_peer_writes(data + 9, size - 9, reply, len);
    fuzz_receiver_reads(reply, retry_flag);
    return 0;
}
