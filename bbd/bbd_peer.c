/*
 * bbd_peer.c - requests from this daemon to other daemons, replies handled in the event loop
 * (bbd_peer.h). Used by file broadcast (bbd_bcast.c) and append (bbd_append.c).
 *
 * A reply is recognised by its request id, which is unguessable (replies carry no token). The
 * active-message callback only copies it to an inbox; bbd_peer_poll decodes the header and
 * calls the request's done once both the reply arrived and the send completed (the bulk part
 * is then no longer used by UCX).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "bbd_peer.h"
#include "pdcbb_log.h"

/* A request sent to a peer. */
typedef struct peer_out {
    struct peer_out *next;
    uint64_t req_id;
    unsigned rank;
    unsigned op;
    int kind;
    void *msg;
    size_t len;
    const void *bulk; /* the bulk part, bulk_len bytes (the caller keeps it valid) */
    size_t bulk_len;
    int queued;          /* waits for the peer's handshake: not sent yet */
    int sending;         /* UCX still uses msg and the bulk part */
    int answered;        /* reply (or failure) recorded */
    double deadline;     /* CLOCK_MONOTONIC seconds after which it fails TIMEOUT; 0: never */
    pdcbb_err_t status;
    char why[256];
    uint8_t *reply; /* malloc'ed reply, when one arrived (its status may be an error) */
    size_t reply_len;
    void *reply_bulk; /* its bulk part (bbd_staging_get), until done takes it */
    size_t reply_bulk_len;
    bbd_peer_done_fn done;
    void *arg;
} peer_out_t;

/* A reply that arrived (copied in the callback, handled in the loop). */
typedef struct peer_inbox {
    struct peer_inbox *next;
    bbd_t *d;
    void *bulk; /* the bulk part of a data reply (bbd_staging_get), or NULL */
    size_t bulk_len;
    int failed; /* the bulk part could not be received */
    size_t len;
    uint8_t data[];
} peer_inbox_t;

/* A daemon's connections to the others and its requests to them (d->peers: made by the first
 * bbd_peer_get, freed by bbd_peer_stop). */
struct bbd_peers {
    bbd_peer_t *peer; /* by rank */
    unsigned n;
    peer_out_t *outs;
    peer_inbox_t *inbox_head, *inbox_tail;
    uint64_t next_req_id;
    peer_out_t *current; /* the request whose done runs (bbd_peer_reply_bulk) */
};

/* ------------------------------------------------------------------ endpoints */

static void peer_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    bbd_peer_t *p = arg;
    (void)ep;
    p->failed = 1;
    p->fail_status = status;
}

static pdcbb_err_t handshake_start(bbd_t *d, unsigned rank, char *err, size_t errlen);

bbd_peer_t *bbd_peer_get(bbd_t *d, unsigned rank, char *err, size_t errlen)
{
    if (rank >= d->nservers) {
        snprintf(err, errlen, "daemon %u is not one of the job's %u daemons", rank, d->nservers);
        return NULL;
    }
    if (d->peers == NULL && (d->peers = calloc(1, sizeof(*d->peers))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (d->peers->peer == NULL) {
        if ((d->peers->peer = calloc(d->nservers, sizeof(*d->peers->peer))) == NULL) {
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        d->peers->n = d->nservers;
    }
    bbd_peer_t *p = &d->peers->peer[rank];
    if (p->ep && p->failed) {
        pdcbb_ucx_ep_close(d->ucx.worker, p->ep, 1, 1.0);
        p->ep = NULL;
        bbd_table_reread(d, rank); /* restarted at a new address, perhaps */
    }
    if (p->ep)
        return p;
    pdcbb_endpoint_t rec;
    char problem[1024];
    if (bbd_table_record(d, rank, &rec, problem, sizeof(problem)) != PDCBB_OK) {
        snprintf(err, errlen, "daemon %u cannot be found: %s", rank, problem);
        return NULL;
    }
    snprintf(p->node, sizeof(p->node), "%s", rec.node);
    snprintf(p->ip, sizeof(p->ip), "%s", rec.ip);
    p->port = rec.port;
    memcpy(p->token, rec.token, PDCBB_TOKEN_LEN);
    struct sockaddr_storage ss;
    socklen_t sslen;
    if (pdcbb_sockaddr_make(rec.ip, rec.port, &ss, &sslen) != PDCBB_OK) {
        snprintf(err, errlen, "daemon %u has a bad address '%s'", rank, rec.ip);
        return NULL;
    }
    p->failed = 0;
    ucs_status_t st = pdcbb_ucx_connect(d->ucx.worker, &ss, sslen, peer_err_cb, p, &p->ep);
    if (st != UCS_OK) {
        snprintf(err, errlen, "cannot connect to %s:%u: %s", rec.ip, rec.port,
                 ucs_status_string(st));
        return NULL;
    }
    p->auth_state = BBD_PEER_NEW;
    if (handshake_start(d, rank, err, errlen) != PDCBB_OK) {
        pdcbb_ucx_ep_close(d->ucx.worker, p->ep, 1, 1.0);
        p->ep = NULL;
        return NULL;
    }
    return p;
}

const char *bbd_peer_node(bbd_t *d, unsigned rank)
{
    return d->peers && rank < d->peers->n && d->peers->peer[rank].node[0]
               ? d->peers->peer[rank].node
               : "?";
}

int bbd_peer_failed(bbd_t *d, unsigned rank, ucs_status_t *status)
{
    if (d->peers == NULL || rank >= d->peers->n || !d->peers->peer[rank].failed)
        return 0;
    if (status)
        *status = d->peers->peer[rank].fail_status;
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bbd_peer_hdr(bbd_t *d, unsigned op, pdcbb_msg_hdr_t *h)
{
    /* Replies carry no token: an unguessable id is what ties one to its request. */
    if (d->peers->next_req_id == 0 &&
        getrandom(&d->peers->next_req_id, sizeof(d->peers->next_req_id), 0) !=
            sizeof(d->peers->next_req_id))
        d->peers->next_req_id = (uint64_t)now_s() * 1000003u ^ (uint64_t)getpid() << 32;
    /* The connection proved the token (the handshake): the header carries none. */
    pdcbb_request_hdr(h, op, ++d->peers->next_req_id, NULL);
}

/* ------------------------------------------------------------------ requests */

/* The reply (req_id) this daemon waits for, or NULL. */
static peer_out_t *out_waiting(bbd_t *d, uint64_t req_id)
{
    peer_out_t *o = d->peers ? d->peers->outs : NULL;
    while (o && (o->req_id != req_id || o->answered))
        o = o->next;
    return o;
}

static void inbox_push(bbd_t *d, peer_inbox_t *m)
{
    m->next = NULL;
    if (d->peers->inbox_tail)
        d->peers->inbox_tail->next = m;
    else
        d->peers->inbox_head = m;
    d->peers->inbox_tail = m;
}

static void out_unlink(bbd_t *d, peer_out_t *o)
{
    for (peer_out_t **pp = &d->peers->outs; *pp; pp = &(*pp)->next)
        if (*pp == o) {
            *pp = o->next;
            return;
        }
}

/* Call done once the reply is in and UCX let go of the message. */
static int out_maybe_done(bbd_t *d, peer_out_t *o)
{
    if (!o->answered || o->sending)
        return 0;
    out_unlink(d, o);
    d->peers->current = o;
    o->done(d, o->arg, o->status, o->why, o->reply, o->reply_len);
    d->peers->current = NULL;
    bbd_staging_put(d, o->reply_bulk);
    free(o->reply);
    free(o->msg);
    free(o);
    return 1;
}

static void out_answer(peer_out_t *o, pdcbb_err_t status, const char *why)
{
    if (o->answered)
        return;
    o->answered = 1;
    o->status = status;
    snprintf(o->why, sizeof(o->why), "%s", why ? why : "");
}

static void out_send_cb(void *request, ucs_status_t status, void *user_data)
{
    peer_out_t *o = user_data;
    o->sending = 0;
    if (status != UCS_OK)
        out_answer(o, PDCBB_ERR_UNREACHABLE, ucs_status_string(status));
    ucp_request_free(request);
    /* done runs from bbd_peer_poll, in the event loop. */
}

/* Hand o to UCX; PDCBB_OK, or PDCBB_ERR_UNREACHABLE with why (o not sent). */
static pdcbb_err_t out_post(bbd_t *d, bbd_peer_t *peer, peer_out_t *o, char *why, size_t whylen)
{
    o->sending = 1;
    void *req = pdcbb_ucx_send_msg(peer->ep, o->msg, o->len, o->bulk, o->bulk_len,
                                   UCP_AM_SEND_FLAG_REPLY, out_send_cb, o);
    if (UCS_PTR_IS_ERR(req)) {
        o->sending = 0;
        snprintf(why, whylen, "%s", ucs_status_string(UCS_PTR_STATUS(req)));
        return PDCBB_ERR_UNREACHABLE;
    }
    uint64_t *k = d->stats.kinds[o->kind];
    k[PDCBB_STAT_MSGS_SENT]++;
    k[PDCBB_STAT_BYTES_SENT] += o->len + o->bulk_len;
    return PDCBB_OK;
}

/* Send o (its message built, with request id req_id) or queue it while the handshake runs. */
static pdcbb_err_t out_launch(bbd_t *d, bbd_peer_t *peer, peer_out_t *o, uint64_t req_id,
                              unsigned rank, unsigned op, const void *bulk, size_t bulk_len,
                              int kind, bbd_peer_done_fn done, void *arg, char *why, size_t whylen)
{
    o->req_id = req_id;
    o->rank = rank;
    o->op = op;
    o->kind = kind;
    o->done = done;
    o->arg = arg;
    o->bulk = bulk;
    o->bulk_len = bulk ? bulk_len : 0;
    int handshake = op == PDCBB_OP_HELLO || op == PDCBB_OP_AUTH;
    if (!handshake && peer->auth_state != BBD_PEER_READY) {
        o->queued = 1;
    } else if (out_post(d, peer, o, why, whylen) != PDCBB_OK) {
        free(o->msg);
        free(o);
        return PDCBB_ERR_UNREACHABLE;
    }
    o->next = d->peers->outs;
    d->peers->outs = o;
    return PDCBB_OK;
}

/* Build a request of op to rank (peer) and send it, or queue it while the handshake runs. */
static pdcbb_err_t out_start(bbd_t *d, bbd_peer_t *peer, unsigned rank, unsigned op,
                             const void *body, const void *bulk, size_t bulk_len, int kind,
                             bbd_peer_done_fn done, void *arg, char *why, size_t whylen)
{
    pdcbb_msg_hdr_t h;
    bbd_peer_hdr(d, op, &h);
    peer_out_t *o = calloc(1, sizeof(*o));
    if (o == NULL || pdcbb_msg_build(&h, body, &o->msg, &o->len) != PDCBB_OK) {
        free(o);
        snprintf(why, whylen, "out of memory");
        return PDCBB_ERR_NOMEM;
    }
    return out_launch(d, peer, o, h.req_id, rank, op, bulk, bulk_len, kind, done, arg, why, whylen);
}

pdcbb_err_t bbd_peer_send(bbd_t *d, unsigned rank, unsigned op, const void *body, const void *bulk,
                          size_t bulk_len, int kind, bbd_peer_done_fn done, void *arg, char *why,
                          size_t whylen)
{
    bbd_peer_t *peer = bbd_peer_get(d, rank, why, whylen);
    if (peer == NULL)
        return PDCBB_ERR_UNREACHABLE;
    return out_start(d, peer, rank, op, body, bulk, bulk_len, kind, done, arg, why, whylen);
}

pdcbb_err_t bbd_peer_send_msg(bbd_t *d, unsigned rank, const uint8_t *msg, size_t len,
                              const void *bulk, size_t bulk_len, int kind, bbd_peer_done_fn done,
                              void *arg, char *why, size_t whylen)
{
    pdcbb_msg_hdr_t h;
    if (len < PDCBB_HDR_LEN || pdcbb_hdr_decode(msg, len, &h) != PDCBB_OK) {
        snprintf(why, whylen, "not a request");
        return PDCBB_ERR_PROTO;
    }
    bbd_peer_t *peer = bbd_peer_get(d, rank, why, whylen);
    if (peer == NULL)
        return PDCBB_ERR_UNREACHABLE;
    peer_out_t *o = calloc(1, sizeof(*o));
    uint8_t *copy = malloc(len);
    if (o == NULL || copy == NULL) {
        free(o);
        free(copy);
        snprintf(why, whylen, "out of memory");
        return PDCBB_ERR_NOMEM;
    }
    /* This daemon's own request id (its replies are matched by it) and no token. */
    pdcbb_msg_hdr_t mine;
    bbd_peer_hdr(d, h.op, &mine);
    memcpy(copy, msg, len);
    memcpy(copy + 8, &mine.req_id, 8); /* little-endian on every supported host */
    memset(copy + PDCBB_HDR_LEN - PDCBB_TOKEN_LEN, 0, PDCBB_TOKEN_LEN);
    o->msg = copy;
    o->len = len;
    /* The client gives up after request_timeout: so does this daemon, freeing what it holds
     * for the request (a write's bulk part) when the other daemon is alive but stuck. */
    o->deadline = now_s() + d->cfg.request_timeout;
    return out_launch(d, peer, o, mine.req_id, rank, h.op, bulk, bulk_len, kind, done, arg, why,
                      whylen);
}

void *bbd_peer_reply_bulk(bbd_t *d, size_t *len)
{
    void *b = d->peers && d->peers->current ? d->peers->current->reply_bulk : NULL;
    *len = b ? d->peers->current->reply_bulk_len : 0;
    if (b)
        d->peers->current->reply_bulk = NULL;
    return b;
}

/* ------------------------------------------------------------------ handshake */

/* The handshake with rank ended: send what waited for it, or fail it with status. */
static void handshake_end(bbd_t *d, unsigned rank, pdcbb_err_t status, const char *why)
{
    bbd_peer_t *peer = &d->peers->peer[rank];
    peer->auth_state = status == PDCBB_OK ? BBD_PEER_READY : BBD_PEER_NEW;
    if (status != PDCBB_OK) {
        PDCBB_WARN("handshake with daemon %u (node %s) failed: %s", rank, peer->node, why);
        /* A new endpoint (and handshake) on the next request. */
        peer->failed = 1;
        peer->fail_status = UCS_ERR_REJECTED;
    }
    for (peer_out_t *o = d->peers->outs; o; o = o->next) {
        if (!o->queued || o->rank != rank || o->answered)
            continue;
        o->queued = 0;
        char err[256];
        if (status != PDCBB_OK)
            out_answer(o, status, why);
        else if (out_post(d, peer, o, err, sizeof(err)) != PDCBB_OK)
            out_answer(o, PDCBB_ERR_UNREACHABLE, err);
    }
}

static void auth_done(bbd_t *d, void *arg, pdcbb_err_t status, const char *why, const uint8_t *msg,
                      size_t len)
{
    unsigned rank = (unsigned)(uintptr_t)arg;
    (void)msg, (void)len;
    if (d->peers == NULL || rank >= d->peers->n)
        return;
    char text[300];
    if (status != PDCBB_OK)
        snprintf(text, sizeof(text), "AUTH: %s",
                 status == PDCBB_ERR_AUTH ? "it refused this daemon's proof of its token" : why);
    handshake_end(d, rank, status, status == PDCBB_OK ? NULL : text);
}

/*
 * The handshake with rank could not reach it: if its record now names another address (it was
 * restarted since this daemon learned it), connect there and keep the requests that waited for
 * the handshake waiting for the new one. 1 if so.
 */
static int handshake_retry(bbd_t *d, unsigned rank)
{
    bbd_peer_t *peer = &d->peers->peer[rank];
    pdcbb_endpoint_t rec;
    char err[1024];
    bbd_table_reread(d, rank);
    if (bbd_table_record(d, rank, &rec, err, sizeof(err)) != PDCBB_OK ||
        (rec.port == peer->port && strcmp(rec.ip, peer->ip) == 0))
        return 0;
    PDCBB_INFO("daemon %u moved from %s:%u to %s:%u: reconnecting", rank, peer->ip, peer->port,
               rec.ip, rec.port);
    pdcbb_ucx_ep_close(d->ucx.worker, peer->ep, 1, 1.0);
    peer->ep = NULL;
    if (bbd_peer_get(d, rank, err, sizeof(err)) == NULL) {
        PDCBB_WARN("reconnecting to daemon %u: %s", rank, err);
        return 0;
    }
    return 1;
}

static void hello_done(bbd_t *d, void *arg, pdcbb_err_t status, const char *why, const uint8_t *msg,
                       size_t len)
{
    unsigned rank = (unsigned)(uintptr_t)arg;
    if (d->peers == NULL || rank >= d->peers->n)
        return;
    bbd_peer_t *peer = &d->peers->peer[rank];
    char text[300];
    if (status == PDCBB_ERR_UNREACHABLE && handshake_retry(d, rank))
        return;
    if (status != PDCBB_OK) {
        snprintf(text, sizeof(text), "HELLO: %s", why);
        handshake_end(d, rank, status, text);
        return;
    }
    pdcbb_hello_rep_t rep;
    pdcbb_msg_hdr_t h;
    uint8_t expected[PDCBB_AUTH_PROOF_LEN], proof[PDCBB_AUTH_PROOF_LEN];
    int proved = 0;
    if (pdcbb_hdr_decode(msg, len, &h) == PDCBB_OK &&
        pdcbb_body_decode(PDCBB_OP_HELLO, 1, msg + PDCBB_HDR_LEN, h.payload_len, &rep) ==
            PDCBB_OK) {
        if (rep.nonce_len == PDCBB_AUTH_NONCE_LEN) {
            pdcbb_auth_daemon_proof(peer->token, peer->nonce, rep.nonce, expected);
            proved = pdcbb_auth_proof_ok(expected, rep.proof, rep.proof_len);
            pdcbb_auth_client_proof(peer->token, peer->nonce, rep.nonce, proof);
        }
        pdcbb_body_free(PDCBB_OP_HELLO, 1, &rep);
    }
    if (!proved) {
        handshake_end(d, rank, PDCBB_ERR_AUTH,
                      "it could not prove its node's token (not the job's daemon)");
        return;
    }
    pdcbb_auth_req_t q = {.proof = proof, .proof_len = sizeof(proof)};
    char err[256];
    peer->auth_state = BBD_PEER_AUTH;
    pdcbb_err_t rc = out_start(d, peer, rank, PDCBB_OP_AUTH, &q, NULL, 0, PDCBB_KIND_OTHER,
                               auth_done, (void *)(uintptr_t)rank, err, sizeof(err));
    if (rc != PDCBB_OK)
        handshake_end(d, rank, rc, err);
}

/* Send HELLO with a fresh nonce on d->peers->peer[rank]'s new endpoint (its reply: hello_done). */
static pdcbb_err_t handshake_start(bbd_t *d, unsigned rank, char *err, size_t errlen)
{
    bbd_peer_t *peer = &d->peers->peer[rank];
    pdcbb_err_t rc = pdcbb_auth_nonce(peer->nonce);
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "cannot make a nonce: the kernel's random source failed");
        return rc;
    }
    pdcbb_hello_req_t q = {.client_pid = (uint32_t)getpid(),
                           .job_id = d->job_id,
                           .client_node = d->node,
                           .nonce = peer->nonce,
                           .nonce_len = PDCBB_AUTH_NONCE_LEN};
    peer->auth_state = BBD_PEER_HELLO;
    return out_start(d, peer, rank, PDCBB_OP_HELLO, &q, NULL, 0, PDCBB_KIND_OTHER, hello_done,
                     (void *)(uintptr_t)rank, err, errlen);
}

int bbd_peer_on_reply(bbd_t *d, const void *data, size_t len)
{
    uint64_t req_id;
    memcpy(&req_id, (const uint8_t *)data + 8, 8); /* little-endian on every supported host */
    if (out_waiting(d, req_id) == NULL)
        return 0; /* not ours: the dispatcher refuses it as a reply sent as a request */
    peer_inbox_t *m = calloc(1, sizeof(*m) + len);
    if (m == NULL) {
        d->stats.proto_errors++;
        return 1;
    }
    m->d = d;
    m->len = len;
    memcpy(m->data, data, len);
    inbox_push(d, m);
    return 1;
}

static void data_reply_cb(void *request, ucs_status_t status, size_t length, void *user_data)
{
    peer_inbox_t *m = user_data;
    bbd_t *d = m->d;
    if (status != UCS_OK)
        m->failed = 1;
    else
        m->bulk_len = length;
    inbox_push(d, m);
    ucp_request_free(request);
}

int bbd_peer_on_data_reply(bbd_t *d, const void *header, size_t header_len, void *data, size_t len,
                           int rndv)
{
    uint64_t req_id;
    if (header_len < PDCBB_HDR_LEN || !(((const uint8_t *)header)[16] & PDCBB_MSG_FLAG_REPLY))
        return 0;
    memcpy(&req_id, (const uint8_t *)header + 8, 8);
    if (out_waiting(d, req_id) == NULL)
        return 0; /* a request's bulk part, or junk: the dispatcher's */
    peer_inbox_t *m = calloc(1, sizeof(*m) + header_len);
    if (m == NULL || (len > 0 && (m->bulk = bbd_staging_get(d, len, 0)) == NULL)) {
        free(m);
        d->stats.proto_errors++;
        return 1;
    }
    m->d = d;
    m->len = header_len;
    memcpy(m->data, header, header_len);
    m->bulk_len = len;
    if (!rndv || len == 0) {
        if (len)
            memcpy(m->bulk, data, len);
        inbox_push(d, m);
        return 1;
    }
    void *req = pdcbb_ucx_recv_data(d->ucx.worker, data, m->bulk, len, data_reply_cb, m);
    if (UCS_PTR_IS_ERR(req)) {
        m->failed = 1;
        inbox_push(d, m);
    }
    return 1;
}

static void reply_handle(bbd_t *d, peer_inbox_t *in)
{
    pdcbb_msg_hdr_t h;
    const uint8_t *msg = in->data;
    size_t len = in->len;
    if (pdcbb_hdr_decode(msg, len, &h) != PDCBB_OK) {
        d->stats.proto_errors++;
        return;
    }
    peer_out_t *o = d->peers->outs;
    while (o && o->req_id != h.req_id)
        o = o->next;
    if (o == NULL || o->answered || h.op != o->op) {
        PDCBB_DEBUG("dropped a reply to no request of this daemon (%llu)",
                    (unsigned long long)h.req_id);
        return;
    }
    uint64_t *k = d->stats.kinds[o->kind];
    k[PDCBB_STAT_MSGS_RECV]++;
    k[PDCBB_STAT_BYTES_RECV] += len + in->bulk_len;
    if (in->failed) {
        out_answer(o, PDCBB_ERR_UNREACHABLE, "the reply's data part could not be received");
        return;
    }
    out_answer(o, h.status, h.status != PDCBB_OK ? pdcbb_strerror(h.status) : NULL);
    /* An error reply is kept too: a forwarded request's client gets it as it is. */
    o->reply = malloc(len);
    if (o->reply == NULL) {
        o->status = PDCBB_ERR_NOMEM;
        return;
    }
    memcpy(o->reply, msg, len);
    o->reply_len = len;
    o->reply_bulk = in->bulk;
    o->reply_bulk_len = in->bulk_len;
    in->bulk = NULL;
}

int bbd_peer_poll(bbd_t *d)
{
    int n = 0;
    if (d->peers == NULL)
        return 0;
    while (d->peers->inbox_head) {
        peer_inbox_t *m = d->peers->inbox_head;
        d->peers->inbox_head = m->next;
        if (d->peers->inbox_head == NULL)
            d->peers->inbox_tail = NULL;
        reply_handle(d, m);
        bbd_staging_put(d, m->bulk);
        free(m);
        n++;
    }
    for (peer_out_t *o = d->peers->outs, *next; o; o = next) {
        next = o->next;
        ucs_status_t st;
        /* A peer that went away answers nothing more. A request that waits for the handshake
         * waits for its outcome (which may reconnect: handshake_retry). */
        if (!o->answered && !o->queued && bbd_peer_failed(d, o->rank, &st))
            out_answer(o, PDCBB_ERR_UNREACHABLE, ucs_status_string(st));
        if (!o->answered && o->deadline > 0 && now_s() > o->deadline)
            out_answer(o, PDCBB_ERR_TIMEOUT, "no reply within request_timeout");
        n += out_maybe_done(d, o);
    }
    return n;
}

void bbd_peer_stop(bbd_t *d)
{
    if (d->peers == NULL)
        return;
    while (d->peers->inbox_head) {
        peer_inbox_t *m = d->peers->inbox_head;
        d->peers->inbox_head = m->next;
        bbd_staging_put(d, m->bulk);
        free(m);
    }
    d->peers->inbox_tail = NULL;
    for (unsigned i = 0; i < d->peers->n; i++)
        if (d->peers->peer[i].ep)
            pdcbb_ucx_ep_close(d->ucx.worker, d->peers->peer[i].ep, 1, 1.0);
    free(d->peers->peer);
    d->peers->peer = NULL;
    d->peers->n = 0;
    if (d->peers->outs == NULL) { /* else UCX may still hold them: kept with the requests */
        free(d->peers);
        d->peers = NULL;
    }
}
