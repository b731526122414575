/*
 * bbd_forward.c - FORWARD: a request of one of this node's clients for another daemon, sent on
 * over this daemon's one connection to that daemon, its reply (and the reply's bulk part)
 * carried back (common/pdcbb_proto.h, docs/PROTOCOL.md "Forwarding").
 *
 * With it a daemon holds connections to its own node's clients and to the other daemons, P + N
 * in a job of N nodes of P processes, where clients that connect to every daemon they use
 * would make it N x P (docs/SCALE.md, "Connections"). The request's bulk part (a region write)
 * stays in the staging memory it was received into until the other daemon has taken it, so
 * forwarded writes count against the same inbound bound as this daemon's own.
 *
 * The request is checked here as far as forwarding needs: the daemon named is another of the
 * job's, the message is a request with a whole header, and its op may be forwarded
 * (pdcbb_op_forwardable: not the handshake, nor what holds state per connection). The daemon
 * it is for checks the rest, as it does for its own clients.
 */
#include <stdlib.h>
#include <string.h>

#include "bbd.h"
#include "bbd_peer.h"
#include "pdcbb_log.h"
#include "pdcbb_stats.h"

typedef struct fwd {
    bbd_conn_t *conn;    /* the client's connection (a reference) */
    pdcbb_msg_hdr_t hdr; /* the FORWARD request's header */
    unsigned rank;       /* the daemon the request is for */
    void *bulk;          /* the request's bulk part (staging memory), or NULL */
} fwd_t;

/* The other daemon answered (msg: its whole reply), or the request did not reach it. */
static void forward_done(bbd_t *d, void *arg, pdcbb_err_t status, const char *why,
                         const uint8_t *msg, size_t len)
{
    fwd_t *f = arg;
    bbd_staging_put(d, f->bulk);
    bbd_bulk_t bulk = {0};
    bulk.ptr = bbd_peer_reply_bulk(d, &bulk.len);
    if (msg == NULL) {
        PDCBB_WARN("forwarding request %llu to daemon %u (node %s): %s",
                   (unsigned long long)f->hdr.req_id, f->rank, bbd_peer_node(d, f->rank), why);
        bbd_bulk_release(d, &bulk);
        bbd_server_answer(d, f->conn, &f->hdr, status == PDCBB_OK ? PDCBB_ERR_PROTO : status, NULL);
    } else {
        /* The reply as it came: its status (perhaps an error) is the client's to read. */
        pdcbb_forward_rep_t p = {.msg = msg, .msg_len = (uint32_t)len};
        bbd_server_answer_bulk(d, f->conn, &f->hdr, PDCBB_OK, &p, &bulk);
    }
    free(f);
}

pdcbb_err_t bbd_op_forward(bbd_req_t *r, const pdcbb_forward_req_t *q, pdcbb_forward_rep_t *p)
{
    bbd_t *d = r->d;
    pdcbb_msg_hdr_t h;
    (void)p;
    if (r->conn == NULL || r->hdr == NULL)
        return PDCBB_ERR_UNSUPPORTED; /* a shared-memory channel: no connection to answer on */
    if (q->rank >= d->nservers || q->rank == d->rank) {
        PDCBB_WARN("refused FORWARD %llu: daemon %u is %s", (unsigned long long)r->hdr->req_id,
                   q->rank, q->rank == d->rank ? "this one" : "not one of the job's");
        return PDCBB_ERR_INVAL;
    }
    pdcbb_err_t rc = pdcbb_hdr_decode(q->msg, q->msg_len, &h);
    if (rc == PDCBB_OK &&
        (PDCBB_HDR_LEN + (size_t)h.payload_len != q->msg_len || (h.flags & PDCBB_MSG_FLAG_REPLY)))
        rc = PDCBB_ERR_PROTO;
    if (rc != PDCBB_OK) {
        PDCBB_WARN("refused FORWARD %llu: the message inside is not a request: %s",
                   (unsigned long long)r->hdr->req_id, pdcbb_strerror(rc));
        return rc;
    }
    if (!pdcbb_op_forwardable(h.op)) {
        PDCBB_WARN("refused FORWARD %llu: %s (op %u) is not forwarded",
                   (unsigned long long)r->hdr->req_id, pdcbb_op_name(h.op), h.op);
        return PDCBB_ERR_UNSUPPORTED;
    }
    fwd_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return PDCBB_ERR_NOMEM;
    f->conn = r->conn;
    f->hdr = *r->hdr;
    f->rank = q->rank;
    char why[512] = "";
    rc = bbd_peer_send_msg(d, q->rank, q->msg, q->msg_len, r->in_bulk, r->in_bulk_len,
                           PDCBB_KIND_FORWARD, forward_done, f, why, sizeof(why));
    if (rc != PDCBB_OK) {
        PDCBB_WARN("forwarding %s to daemon %u: %s", pdcbb_op_name(h.op), q->rank, why);
        free(f);
        return rc;
    }
    /* The bulk part stays until forward_done (bbd_peer_send_msg sends it from there). */
    f->bulk = (void *)r->in_bulk;
    r->keep_bulk = r->in_bulk != NULL;
    bbd_conn_ref(r->conn);
    r->deferred = 1;
    return PDCBB_OK;
}
