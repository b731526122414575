/*
 * test_drained_ops.c - libpdc's drained mode (client/client_drained.c, compiled into this test)
 * does with every op value what the op's row of PDCBB_OPS says: READ_ONLY and UNSUPPORTED
 * refuse it with that error, ANSWER answers it (a zeroed request against an empty drain: some
 * answer of its own, never one of those refusals nor INTERNAL, which a row saying ANSWER
 * without a case in answer() would give), a value that is no op is BAD_OP.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "pdcbb_drain.h"
#include "unit_check.h"

/* What client_drained.c takes from the rest of libpdc. */
client_state_t client_g;
pthread_mutex_t client_lock = PTHREAD_MUTEX_INITIALIZER;

/* The status of the reply to a zeroed request of op, or -1 if there is no reply. */
static int serve(unsigned op)
{
    pdcbb_any_body_t q;
    char dest[64];
    void *ctrl, *bulk;
    size_t ctrl_len, bulk_len;
    pdcbb_msg_hdr_t h;
    memset(&q, 0, sizeof(q));
    if (client_drained_serve(op, 7, &q, dest, sizeof(dest), &ctrl, &ctrl_len, &bulk, &bulk_len) !=
        PDCBB_OK)
        return -1;
    int st = pdcbb_hdr_decode(ctrl, ctrl_len, &h) == PDCBB_OK && h.op == op && h.req_id == 7 &&
                     (h.flags & PDCBB_MSG_FLAG_REPLY)
                 ? h.status
                 : -1;
    free(ctrl);
    if (bulk != NULL && bulk != dest)
        free(bulk);
    return st;
}

int main(void)
{
    static pdcbb_drain_t empty; /* no containers, no objects */
    client_g.drained = &empty;
    client_g.nservers = 1;
    unsigned answered = 0;
    for (unsigned op = 0; op < PDCBB_OP_VALUES_MAX + 8; op++) {
        const pdcbb_op_props_t *p = pdcbb_op_props(op);
        int st = serve(op);
        int want = p == NULL                                 ? PDCBB_ERR_BAD_OP
                   : p->drained == PDCBB_DRAINED_READ_ONLY   ? PDCBB_ERR_READ_ONLY
                   : p->drained == PDCBB_DRAINED_UNSUPPORTED ? PDCBB_ERR_UNSUPPORTED
                                                             : -2;
        unit_checks++;
        if (want != -2 ? st != want
                       : st < 0 || st == PDCBB_ERR_INTERNAL || st == PDCBB_ERR_BAD_OP ||
                             st == PDCBB_ERR_READ_ONLY || st == PDCBB_ERR_UNSUPPORTED) {
            unit_failures++;
            fprintf(stderr, "op %s (%u): drained mode answers %s, its row says %s\n",
                    pdcbb_op_name(op), op, st < 0 ? "nothing" : pdcbb_errname(st),
                    want == -2 ? "answered" : pdcbb_errname(want));
        }
        answered += want == -2;
    }
    CHECK(answered >= 20);
    UNIT_DONE("drained_ops");
}
