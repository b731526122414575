/*
 * client_gather.c - requests for many daemons in one message: GATHER to a daemon of this node,
 * which carries them down the tree of daemons and brings every reply back in one message
 * (bbd/bbd_gather.c, docs/PROTOCOL.md "Fan-out").
 *
 * Used where one call would otherwise send a request to every daemon from this process: a
 * query over a spread object in a job that forwards (pdc_query_eval.c) and `pdcbb stats`
 * (pdc_server_stats.c). Each daemon's reply is handed to the caller as if it had come from that
 * daemon directly, its error included.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

/* The daemon of this node that roots the tree. */
static unsigned gather_root(void)
{
    return client_g.local_rank < client_g.nservers ? client_g.local_rank : 0;
}

/* The whole requests (op, reqs[i]) one after the other, malloc'ed in *out. */
static pdcbb_err_t encode_all(unsigned op, const void *const *reqs, size_t n, uint8_t **out,
                              size_t *len)
{
    size_t total = 0;
    void **msg = calloc(n, sizeof(*msg));
    size_t *mlen = calloc(n, sizeof(*mlen));
    pdcbb_err_t rc = msg && mlen ? PDCBB_OK : PDCBB_ERR_NOMEM;
    for (size_t i = 0; i < n && rc == PDCBB_OK; i++) {
        pdcbb_msg_hdr_t h;
        pdcbb_request_hdr(&h, op, i, NULL);
        rc = pdcbb_msg_build(&h, reqs[i], &msg[i], &mlen[i]);
        total += mlen[i];
    }
    if (rc == PDCBB_OK && total > PDCBB_PAYLOAD_MAX - 4096)
        rc = PDCBB_ERR_TOO_BIG;
    uint8_t *all = rc == PDCBB_OK ? malloc(total + 1) : NULL;
    if (rc == PDCBB_OK && all == NULL)
        rc = PDCBB_ERR_NOMEM;
    for (size_t i = 0, off = 0; i < n; i++) {
        if (all != NULL) {
            memcpy(all + off, msg[i], mlen[i]);
            off += mlen[i];
        }
        if (msg)
            free(msg[i]);
    }
    free(msg);
    free(mlen);
    *out = all;
    *len = total;
    return rc;
}

/* Hand each reply of rep (bulk parts in bulk) to fn; a daemon asked that did not answer gets
 * PDCBB_ERR_PROTO. */
static pdcbb_err_t hand_out(const char *what, unsigned op, const unsigned *ranks, size_t n,
                            const pdcbb_gather_rep_t *rep, const uint8_t *bulk, size_t bulk_len,
                            client_gather_fn fn, void *arg)
{
    unsigned ns = client_g.nservers, root = gather_root();
    uint8_t *seen = calloc(ns, 1);
    if (seen == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", what);
    pdcbb_err_t rc = rep->bulk_lens_count == rep->ranks_count ? PDCBB_OK : PDCBB_ERR_PROTO;
    size_t off = 0, boff = 0;
    for (uint32_t i = 0; rc == PDCBB_OK && i < rep->ranks_count; i++) {
        pdcbb_msg_hdr_t h;
        size_t l;
        uint64_t r = rep->ranks[i];
        if (r >= ns || seen[r] || rep->bulk_lens[i] > bulk_len - boff ||
            pdcbb_hdr_decode_next(rep->msgs + off, rep->msgs_len - off, &h, &l) != PDCBB_OK ||
            !(h.flags & PDCBB_MSG_FLAG_REPLY)) {
            rc = PDCBB_ERR_PROTO;
            break;
        }
        seen[r] = 1;
        pdcbb_any_body_t body;
        pdcbb_err_t one = (pdcbb_err_t)h.status;
        if (one == PDCBB_OK)
            one = pdcbb_body_decode(op, 1, rep->msgs + off + PDCBB_HDR_LEN, h.payload_len, &body);
        fn(arg, (unsigned)r, one, one == PDCBB_OK ? &body : NULL, bulk + boff,
           (size_t)rep->bulk_lens[i]);
        if (one == PDCBB_OK)
            pdcbb_body_free(op, 1, &body);
        off += PDCBB_HDR_LEN + (size_t)h.payload_len;
        boff += rep->bulk_lens[i];
    }
    if (rc != PDCBB_OK) {
        free(seen);
        return client_fail(rc, "%s: a malformed GATHER reply from daemon %u", what, root);
    }
    /* Every daemon asked has its answer, or an error. */
    for (size_t i = 0; i < (ranks ? n : ns); i++) {
        unsigned r = ranks ? ranks[i] : (unsigned)i;
        if (r < ns && !seen[r]) {
            seen[r] = 1;
            fn(arg, r, PDCBB_ERR_PROTO, NULL, NULL, 0);
        }
    }
    free(seen);
    return PDCBB_OK;
}

pdcbb_err_t client_gather(const char *what, unsigned op, const unsigned *ranks,
                          const void *const *reqs, size_t n, client_gather_fn fn, void *arg)
{
    unsigned root = gather_root();
    uint8_t *msgs = NULL;
    size_t len = 0;
    pdcbb_err_t rc = encode_all(op, reqs, ranks ? n : 1, &msgs, &len);
    if (rc != PDCBB_OK)
        return client_fail(rc, "%s: cannot build the requests for %zu daemons: %s", what,
                           ranks ? n : (size_t)client_g.nservers, pdcbb_strerror(rc));
    uint64_t *r64 = calloc(ranks ? n + 1 : 1, sizeof(*r64));
    if (r64 == NULL) {
        free(msgs);
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", what);
    }
    for (size_t i = 0; ranks && i < n; i++)
        r64[i] = ranks[i];
    pdcbb_gather_req_t q = {.tree = root + 1,
                            .every = ranks == NULL,
                            .ranks = r64,
                            .ranks_count = ranks ? (uint32_t)n : 0,
                            .msgs = msgs,
                            .msgs_len = (uint32_t)len};
    client_pending_t *p = NULL;
    rc = client_rpc_post(root, PDCBB_OP_GATHER, &q, NULL, 0, NULL, 0, &p);
    free(msgs);
    free(r64);
    if (rc != PDCBB_OK)
        return rc; /* the transport's message names the daemon */
    /* The daemons below time out after request_timeout: give their answers time to come up. */
    client_rpc_wait(p, client_g.cfg.request_timeout * 1.5 + 1);
    void *bulk = NULL;
    size_t bulk_len = 0;
    if (p->done && p->status == PDCBB_OK && p->bulk_len > 0) {
        bulk = p->bulk;
        bulk_len = p->bulk_len;
        if (bulk == p->bulk_own)
            p->bulk_own = NULL; /* kept past client_rpc_finish */
        else if ((bulk = malloc(bulk_len)) != NULL)
            memcpy(bulk, p->bulk, bulk_len);
    }
    pdcbb_gather_rep_t rep;
    void *keep;
    rc = client_rpc_finish(p, &rep, &keep);
    if (rc != PDCBB_OK) {
        free(bulk);
        return rc;
    }
    if (bulk_len > 0 && bulk == NULL)
        rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", what);
    else
        rc = hand_out(what, op, ranks, n, &rep, bulk, bulk_len, fn, arg);
    client_rpc_release(PDCBB_OP_GATHER, &rep, keep);
    free(bulk);
    return rc;
}
