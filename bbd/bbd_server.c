/*
 * bbd_server.c - the daemon's transport and event loop.
 *
 * Owns the UCX listener, the client connections and the queue of received requests. Active
 * message callbacks only copy (eager) or start receiving (rendezvous) a message and queue it;
 * the loop dispatches queued messages outside UCX callbacks and sends each reply on the
 * connection the request came from. A peer error (client died or closed) marks the connection
 * dead; requests it still had queued are processed (they may change the store) but not
 * answered. The loop sleeps in epoll on the worker's event fd and a signalfd, so SIGTERM and
 * SIGINT are handled synchronously: stop accepting, finish what is queued, flush replies.
 * The same loop serves the shared-memory channels of this node's clients (bbd_shm.c): it polls
 * their request slots on every pass, keeps polling for BBD_SHM_SPIN_SECONDS after the last
 * such request, and sleeps only after telling the channels so (their clients then wake it
 * through their sockets, which are in the same epoll set).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "bbd.h"
#include "bbd_peer.h"
#include "pdcbb_log.h"
#include "pdcbb_shm.h"

typedef struct send_ctx {
    void *buf;
    bbd_bulk_t bulk; /* the bulk part of a reply (ptr NULL if none) */
    bbd_conn_t *conn;
} send_ctx_t;

/* How long the loop keeps polling the shared-memory channels after the last request on one,
 * before it sleeps. It never yields the CPU while polling: on a node whose cores all compute,
 * sched_yield hands the core to the application for a whole time slice (milliseconds), while
 * a sleeping daemon woken by the client's doorbell gets it back at once. */
#define BBD_SHM_SPIN_SECONDS 30e-6

static double monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bbd_signals_block(sigset_t *mask)
{
    sigemptyset(mask);
    sigaddset(mask, SIGTERM);
    sigaddset(mask, SIGINT);
    sigaddset(mask, SIGHUP);
    /* Before any thread exists (UCX starts some), so every thread inherits the mask and the
     * signals reach only our signalfd. */
    sigprocmask(SIG_BLOCK, mask, NULL);
}
static void conn_release(bbd_t *d, bbd_conn_t *c)
{
    if (--c->refs > 0 || !c->dead)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        d->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free(c);
}

static void conn_close_ep(bbd_t *d, bbd_conn_t *c, int force)
{
    pdcbb_ucx_ep_close(d->ucx.worker, c->ep, force, 2.0);
    c->ep = NULL;
}

static void ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    bbd_conn_t *c = arg;
    bbd_t *d = c->d;
    if (c->dead)
        return;
    /* A normal disconnect arrives as CONNECTION_RESET: an ordinary close. */
    if (status == UCS_ERR_CONNECTION_RESET)
        PDCBB_DEBUG("client connection %llu closed", (unsigned long long)c->id);
    else
        PDCBB_INFO("client connection %llu lost: %s", (unsigned long long)c->id,
                   ucs_status_string(status));
    c->dead = 1;
    /* Closing from inside the callback is not allowed; mark and close in the loop. */
    (void)ep;
    (void)d;
}

/* Stop counting c among the unauthenticated connections (it authenticated, or is closing). */
static void conn_uncount(bbd_t *d, bbd_conn_t *c)
{
    if (c->unauth_counted) {
        c->unauth_counted = 0;
        d->unauth_conns--;
    }
}

void bbd_conn_authenticated(bbd_t *d, bbd_conn_t *c)
{
    c->authenticated = 1;
    conn_uncount(d, c);
}

/* Mark c for closing by the loop (reap_dead): UCX then frees what it buffered for it. */
static void conn_expire(bbd_t *d, bbd_conn_t *c, const char *why)
{
    PDCBB_INFO("closing client connection %llu: %s", (unsigned long long)c->id, why);
    c->dead = 1;
    conn_uncount(d, c);
}

/*
 * A handshake flood must not grow the daemon's memory: beyond BBD_UNAUTH_CONNS_MAX connections
 * that did not prove the token yet, the oldest of them is closed for each new one.
 */
#define BBD_UNAUTH_CONNS_MAX 256

static void conn_make_room(bbd_t *d)
{
    if (d->unauth_conns < BBD_UNAUTH_CONNS_MAX)
        return;
    bbd_conn_t *oldest = NULL;
    for (bbd_conn_t *c = d->conns; c; c = c->next) /* newest first */
        if (c->unauth_counted && !c->dead)
            oldest = c;
    if (oldest != NULL)
        conn_expire(d, oldest, "too many connections that did not prove the job token");
}

/* UCX progress calls per pass of the event loop (each one handles at most a few fragments). */
#define BBD_PROGRESS_BATCH 64

/* Close the connections that did not prove the token within cfg.auth_timeout. */
static void conn_expire_unauthenticated(bbd_t *d)
{
    if (d->unauth_conns == 0)
        return;
    double now = monotonic_seconds();
    if (now < d->auth_next_check)
        return;
    d->auth_next_check = now + 0.1;
    for (bbd_conn_t *c = d->conns; c; c = c->next)
        if (c->unauth_counted && !c->dead && now - c->accepted > d->cfg.auth_timeout)
            conn_expire(d, c, "it did not prove the job token within auth_timeout");
}

static void conn_request_cb(ucp_conn_request_h req, void *arg)
{
    bbd_t *d = arg;
    if (d->stopping) {
        ucp_listener_reject(d->listener, req);
        return;
    }
    bbd_conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        ucp_listener_reject(d->listener, req);
        return;
    }
    c->d = d;
    ucp_ep_params_t ep;
    memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_USER_DATA;
    ep.conn_request = req;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = ep_error_cb;
    ep.err_handler.arg = c;
    ep.user_data = c;
    ucs_status_t st = ucp_ep_create(d->ucx.worker, &ep, &c->ep);
    if (st != UCS_OK) {
        PDCBB_WARN("cannot accept a connection: %s", ucs_status_string(st));
        free(c);
        return;
    }
    c->id = ++d->next_conn_id;
    c->refs = 1; /* the connection list's reference */
    c->accepted = monotonic_seconds();
    conn_make_room(d);
    c->unauth_counted = 1;
    d->unauth_conns++;
    c->next = d->conns;
    if (d->conns)
        d->conns->prev = c;
    d->conns = c;
    d->stats.connections++;
    PDCBB_DEBUG("accepted client connection %llu", (unsigned long long)c->id);
}

static bbd_conn_t *conn_of_ep(bbd_t *d, ucp_ep_h ep)
{
    for (bbd_conn_t *c = d->conns; c; c = c->next)
        if (c->ep == ep && !c->dead)
            return c;
    return NULL;
}

static void queue_push(bbd_t *d, bbd_msg_t *m)
{
    m->next = NULL;
    if (d->queue_tail)
        d->queue_tail->next = m;
    else
        d->queue_head = m;
    d->queue_tail = m;
}

static void msg_free(bbd_t *d, bbd_msg_t *m)
{
    free(m->data);
    bbd_staging_put(d, m->bulk);
    free(m);
}

static void rndv_recv_cb(void *request, ucs_status_t status, size_t length, void *user_data)
{
    bbd_msg_t *m = user_data;
    m->conn->d->recv_active--;
    if (status != UCS_OK) {
        PDCBB_WARN("receiving a %zu-byte request failed: %s", m->bulk_len ? m->bulk_len : m->len,
                   ucs_status_string(status));
        m->failed = 1;
    } else if (m->bulk) {
        m->bulk_len = length;
    } else {
        m->len = length;
    }
    m->pending = 0;
    ucp_request_free(request);
}

/* Start receiving rendezvous data into buf (the message is queued already). */
static void recv_start(bbd_t *d, bbd_msg_t *m, void *data, void *buf, size_t length)
{
    m->pending = 1;
    d->recv_active++;
    void *req = pdcbb_ucx_recv_data(d->ucx.worker, data, buf, length, rndv_recv_cb, m);
    if (UCS_PTR_IS_ERR(req)) {
        PDCBB_WARN("cannot receive a %zu-byte request: %s", length,
                   ucs_status_string(UCS_PTR_STATUS(req)));
        d->recv_active--;
        m->pending = 0;
        m->failed = 1;
    }
}

static void recv_rndv(bbd_t *d, bbd_msg_t *m, void *data, void *buf, size_t length)
{
    queue_push(d, m);
    recv_start(d, m, data, buf, length);
}

/*
 * Bulk parts are pulled a few at a time, in arrival order: a client may post hundreds of large
 * writes at once, and receiving them all together would need that much staging memory (fresh
 * memory costs a page fault per 4 KiB) for no gain in speed. A received part stays in staging
 * until the I/O thread has written it, so receives also wait while the bytes received and not
 * yet written exceed BBD_STAGING_INBOUND_MAX (many writers at once: bounded daemon memory).
 */
#define RECV_ACTIVE_MAX 4

static void start_receives(bbd_t *d)
{
    for (bbd_msg_t *m = d->queue_head; m && d->recv_active < RECV_ACTIVE_MAX; m = m->next) {
        if (m->rndv_desc == NULL)
            continue;
        if (!m->conn->dead && !bbd_staging_room(d, m->bulk_len))
            break; /* in arrival order: wait until written data frees staging */
        void *desc = m->rndv_desc;
        m->rndv_desc = NULL;
        if (m->conn->dead || (m->bulk = bbd_staging_get(d, m->bulk_len, 1)) == NULL) {
            ucp_am_data_release(d->ucx.worker, desc);
            m->pending = 0;
            m->failed = 1;
            continue;
        }
        recv_start(d, m, desc, m->bulk, m->bulk_len);
    }
}

/* Messages with a bulk part: control message in the AM header, bulk in the AM data. */
static ucs_status_t am_data_cb(void *arg, const void *header, size_t header_length, void *data,
                               size_t length, const ucp_am_recv_param_t *param)
{
    bbd_t *d = arg;
    bbd_conn_t *c = NULL;
    int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    if (length <= PDCBB_DATA_BULK_MAX &&
        bbd_peer_on_data_reply(d, header, header_length, data, length, rndv)) {
        /* Another daemon's reply with data to a request this one sent (a forwarded read). */
        return UCS_OK;
    }
    if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)
        c = conn_of_ep(d, param->reply_ep);
    /* Nothing is received on a connection that has not proved the job's token (HELLO, AUTH):
     * the data is left unreceived (rendezvous data not fetched is dropped when this callback
     * returns) and the request, queued without it, gets its AUTH refusal from the dispatcher.
     * A malformed header gets its refusal there too, without the data. */
    pdcbb_msg_hdr_t hh;
    if (c != NULL &&
        (pdcbb_hdr_decode(header, header_length, &hh) != PDCBB_OK || !c->authenticated)) {
        length = 0;
        rndv = 0;
    }
    bbd_msg_t *m = c ? calloc(1, sizeof(*m)) : NULL;
    if (m)
        m->data = malloc(header_length ? header_length : 1);
    if (m && m->data && !rndv)
        m->bulk = bbd_staging_get(d, length ? length : 1, 1);
    if (m == NULL || m->data == NULL || (!rndv && m->bulk == NULL) ||
        length > PDCBB_DATA_BULK_MAX) {
        d->stats.proto_errors++;
        PDCBB_WARN("dropped a %zu-byte data message (%s)", length,
                   c ? "out of memory or too big" : "unknown endpoint");
        if (m)
            msg_free(d, m);
        /* Rendezvous data is dropped and the sender's send fails with this status. */
        return rndv ? UCS_ERR_NO_MEMORY : UCS_OK;
    }
    memcpy(m->data, header, header_length);
    m->len = header_length;
    m->bulk_len = length;
    m->conn = c;
    c->refs++;
    if (rndv) {
        /* Received when its turn comes (start_receives); the descriptor stays valid. */
        m->rndv_desc = data;
        m->pending = 1;
        queue_push(d, m);
        start_receives(d);
        return UCS_INPROGRESS; /* keeps the descriptor valid after this callback */
    }
    if (length)
        memcpy(m->bulk, data, length);
    queue_push(d, m);
    return UCS_OK;
}

/* The largest message taken from a connection that did not prove the token yet. */
#define BBD_UNAUTH_MSG_MAX (16u << 10)

static ucs_status_t am_recv_cb(void *arg, const void *header, size_t header_length, void *data,
                               size_t length, const ucp_am_recv_param_t *param)
{
    bbd_t *d = arg;
    bbd_conn_t *c = NULL;
    if (length >= PDCBB_HDR_LEN && !(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) &&
        (((const uint8_t *)data)[16] & PDCBB_MSG_FLAG_REPLY) &&
        bbd_peer_on_reply(d, data, length)) {
        /* A reply of another daemon to a request this one sent (bbd_bcast.c, bbd_peer.c). */
        return UCS_OK;
    }
    if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)
        c = conn_of_ep(d, param->reply_ep);
    if (c == NULL) {
        /* No way to answer: the sender did not ask for replies or is gone. */
        d->stats.proto_errors++;
        PDCBB_WARN("dropped a %zu-byte message from an unknown endpoint", length);
        return UCS_OK;
    }
    if (length > PDCBB_HDR_LEN + (size_t)PDCBB_PAYLOAD_MAX ||
        (!c->authenticated && length > BBD_UNAUTH_MSG_MAX)) {
        /* Too big to even receive (before the handshake: more than a HELLO or an AUTH can
         * need): answer from the header alone. */
        d->stats.proto_errors++;
        length = 0; /* rendezvous data not fetched is dropped when this callback returns */
    }
    bbd_msg_t *m = calloc(1, sizeof(*m));
    uint8_t *buf = malloc(length ? length : 1);
    if (m == NULL || buf == NULL) {
        free(m);
        free(buf);
        PDCBB_ERROR("out of memory receiving a %zu-byte message", length);
        return UCS_OK;
    }
    m->conn = c;
    m->data = buf;
    m->len = length;
    c->refs++;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV && length > 0) {
        recv_rndv(d, m, data, buf, length);
        return UCS_OK;
    }
    if (length)
        memcpy(buf, data, length);
    queue_push(d, m);
    return UCS_OK;
}

static void send_cb(void *request, ucs_status_t status, void *user_data)
{
    send_ctx_t *s = user_data;
    if (status != UCS_OK && status != UCS_ERR_CANCELED)
        PDCBB_DEBUG("reply not delivered: %s", ucs_status_string(status));
    bbd_t *d = s->conn->d;
    free(s->buf);
    bbd_bulk_release(d, &s->bulk);
    conn_release(d, s->conn);
    free(s);
    d->pending_sends--;
    ucp_request_free(request);
}

/* Send a reply (and its bulk part, as a PDCBB_AM_ID_DATA message); takes both buffers. */
static void send_reply(bbd_t *d, bbd_conn_t *c, void *buf, size_t len, bbd_bulk_t *bulk)
{
    send_ctx_t *s = NULL;
    if (c->dead || c->ep == NULL || (s = malloc(sizeof(*s))) == NULL) {
        free(buf);
        bbd_bulk_release(d, bulk);
        return;
    }
    /* Counted from a copy of the header: send_cb may free buf before the send returns. */
    uint8_t head[24] = {0};
    size_t bulk_len = bulk->ptr ? bulk->len : 0;
    memcpy(head, buf, len < sizeof(head) ? len : sizeof(head));
    s->buf = buf;
    s->bulk = *bulk;
    s->conn = c;
    c->refs++;
    /* With a bulk part: the control message in the header (it must stay valid until completion:
     * it does, in s), data in the body: large read replies go by rendezvous, single-copy.
     * Without: eager, replies are small; clients need no rendezvous. */
    void *req = pdcbb_ucx_send_msg(c->ep, buf, len, s->bulk.ptr, s->bulk.len,
                                   s->bulk.ptr ? 0 : UCP_AM_SEND_FLAG_EAGER, send_cb, s);
    if (UCS_PTR_IS_ERR(req)) {
        PDCBB_DEBUG("cannot send reply: %s", ucs_status_string(UCS_PTR_STATUS(req)));
        free(buf);
        bbd_bulk_release(d, &s->bulk);
        free(s);
        conn_release(d, c);
        return;
    }
    bbd_stats_sent(d, head, len, bulk_len);
    d->pending_sends++;
}

void bbd_io_batch_end(bbd_t *d, bbd_io_batch_t *b, void **reply, size_t *reply_len)
{
    bbd_data_account(d, b);
    bbd_csum_batch_end(d, b); /* checksummed before the client hears of it */
    pdcbb_data_write_rep_t rep = {.results = b->results, .results_count = b->nresults};
    *reply = NULL;
    *reply_len = 0;
    bbd_reply_build(&b->hdr, PDCBB_OK, &rep, reply, reply_len);
    bbd_staging_put(d, b->staging);
    bbd_io_batch_free(b);
}

/* Replies of finished write batches. */
static void io_reap(bbd_t *d)
{
    bbd_io_batch_t *b = bbd_io_take_done(d);
    while (b) {
        bbd_io_batch_t *next = b->next;
        bbd_conn_t *c = b->conn;
        void *reply;
        size_t reply_len;
        bbd_bulk_t none = {0};
        bbd_io_batch_end(d, b, &reply, &reply_len);
        if (reply)
            send_reply(d, c, reply, reply_len, &none);
        conn_release(d, c);
        b = next;
    }
}

/* Wait until every write handed to the I/O thread is done and answered. */
static void io_drain(bbd_t *d)
{
    while (bbd_io_in_flight(d) > 0) {
        struct pollfd pfd = {.fd = bbd_io_event_fd(d), .events = POLLIN};
        poll(&pfd, 1, 10);
        io_reap(d);
    }
}

static unsigned msg_op(const bbd_msg_t *m)
{
    return (unsigned)(m->data[6] | m->data[7] << 8);
}

/* Ops that read or change region data see every write answered before them (PDCBB_OPF_DRAIN). */
static int op_needs_drain(const bbd_msg_t *m)
{
    return m->len >= PDCBB_HDR_LEN && pdcbb_op_has(msg_op(m), PDCBB_OPF_DRAIN);
}

/* Ops that touch region data keep their place behind every earlier message (PDCBB_OPF_DATA);
 * so does a message too short for a header (it is refused in its turn). */
static int op_is_data(const bbd_msg_t *m)
{
    return m->len < PDCBB_HDR_LEN || pdcbb_op_has(msg_op(m), PDCBB_OPF_DATA);
}

static void process_one(bbd_t *d, bbd_msg_t *m)
{
    if (m->failed) {
        conn_release(d, m->conn);
        msg_free(d, m);
        return;
    }
    void *reply = NULL;
    size_t reply_len = 0;
    bbd_bulk_t bulk = {0};
    bbd_io_batch_t *io = NULL;
    if (op_needs_drain(m))
        io_drain(d);
    if (m->len == 0) {
        /* An oversized message: answer with TOO_BIG and no request id. */
        bbd_stats_recv(d, NULL, 0);
        pdcbb_msg_hdr_t h = {.magic = PDCBB_PROTO_MAGIC, .version = PDCBB_PROTO_VERSION,
                             .flags = PDCBB_MSG_FLAG_REPLY, .status = PDCBB_ERR_TOO_BIG};
        pdcbb_msg_build(&h, NULL, &reply, &reply_len);
    } else {
        if (bbd_dispatch(d, m->conn, m->data, m->len, m->bulk, m->bulk_len, &reply, &reply_len,
                         &bulk, &io))
            m->bulk = NULL; /* the handler keeps it (FORWARD sends it on) */
    }
    if (io) {
        /* The writes run on the I/O thread; it keeps the data and the connection. */
        io->conn = m->conn;
        m->conn->refs++;
        io->staging = m->bulk;
        m->bulk = NULL;
        bbd_io_submit(d, io);
    } else if (reply)
        send_reply(d, m->conn, reply, reply_len, &bulk);
    else
        bbd_bulk_release(d, &bulk);
    conn_release(d, m->conn);
    msg_free(d, m);
}

/*
 * Messages are processed in arrival order: a message whose data is still arriving holds back
 * the later ones. Two exceptions keep a connection from waiting behind other clients' large
 * writes (their receives may wait for staging, BBD_STAGING_INBOUND_MAX): a message that does
 * not touch region data, from a connection with nothing earlier in the queue (a HELLO, a
 * metadata call), is processed at once. A connection's own messages never overtake each other,
 * and data ops never overtake anything.
 */
static void process_queue(bbd_t *d)
{
    bbd_msg_t *m;
    while ((m = d->queue_head) != NULL && !m->pending) {
        d->queue_head = m->next;
        if (d->queue_head == NULL)
            d->queue_tail = NULL;
        process_one(d, m);
    }
    if (d->queue_head == NULL)
        return;
    uint64_t pass = ++d->queue_pass;
    bbd_msg_t *prev = NULL;
    for (m = d->queue_head; m != NULL;) {
        bbd_msg_t *next = m->next;
        if (m->pending || m->conn->held_pass == pass || op_is_data(m)) {
            /* keeps its place; so do its connection's later messages */
            m->conn->held_pass = pass;
            prev = m;
        } else {
            if (prev)
                prev->next = next;
            else
                d->queue_head = next;
            if (d->queue_tail == m)
                d->queue_tail = prev;
            process_one(d, m);
        }
        m = next;
    }
}

void bbd_server_local_request(bbd_t *d, const uint8_t *msg, size_t len, void **reply,
                              size_t *reply_len)
{
    bbd_bulk_t bulk = {0};
    bbd_io_batch_t *io = NULL;
    *reply = NULL;
    *reply_len = 0;
    unsigned op = len >= PDCBB_HDR_LEN ? (unsigned)(msg[6] | msg[7] << 8) : 0;
    if (len >= PDCBB_HDR_LEN && !pdcbb_shm_op_allowed(op) && pdcbb_op_valid(op)) {
        /* Region data needs a bulk part, and newer ops may tie state to a UCX connection:
         * UCX only. Validate first, so a bad message still gets its precise error. */
        pdcbb_msg_hdr_t h;
        pdcbb_err_t rc = pdcbb_hdr_decode(msg, len, &h);
        d->stats.requests++;
        d->stats.proto_errors++;
        bbd_stats_recv(d, msg, len);
        memset(&h, 0, sizeof(h));
        memcpy(&h.req_id, msg + 8, 8);
        h.op = (uint16_t)op;
        bbd_reply_build(&h, rc != PDCBB_OK ? rc : PDCBB_ERR_UNSUPPORTED, NULL, reply, reply_len);
        return;
    }
    bbd_msg_t m = {.data = (uint8_t *)msg, .len = len};
    if (op_needs_drain(&m))
        io_drain(d);
    bbd_dispatch(d, NULL, msg, len, NULL, 0, reply, reply_len, &bulk, &io);
    bbd_bulk_release(d, &bulk);
    if (io) {
        /* Cannot happen without a bulk part; never leave the batch behind. */
        d->data_inflight -= io->bytes;
        bbd_io_batch_free(io);
        free(*reply);
        *reply = NULL;
    }
}

unsigned bbd_server_queued(bbd_t *d)
{
    unsigned n = 0;
    for (const bbd_msg_t *m = d->queue_head; m; m = m->next)
        n++;
    return n;
}

void bbd_server_answer_bulk(bbd_t *d, bbd_conn_t *c, const pdcbb_msg_hdr_t *req, int status,
                            const void *body, bbd_bulk_t *bulk)
{
    void *reply = NULL;
    size_t len = 0;
    bbd_bulk_t none = {0};
    if (bulk == NULL)
        bulk = &none;
    bbd_reply_build(req, status, body, &reply, &len);
    if (reply)
        send_reply(d, c, reply, len, bulk);
    else
        bbd_bulk_release(d, bulk);
    bbd_conn_unref(d, c);
}

void bbd_server_answer(bbd_t *d, bbd_conn_t *c, const pdcbb_msg_hdr_t *req, int status,
                       const void *body)
{
    bbd_server_answer_bulk(d, c, req, status, body, NULL);
}

void bbd_conn_ref(bbd_conn_t *c)
{
    c->refs++;
}

void bbd_conn_unref(bbd_t *d, bbd_conn_t *c)
{
    conn_release(d, c);
}

/* Close the endpoints of connections whose peer failed. */
static void reap_dead(bbd_t *d)
{
    bbd_conn_t *c = d->conns;
    while (c) {
        bbd_conn_t *next = c->next;
        if (c->dead && c->ep) {
            conn_uncount(d, c);
            bbd_lock_conn_gone(d, c); /* its locks are free again */
            bbd_data_direct_release(d, c);
            conn_close_ep(d, c, 1);
            conn_release(d, c); /* the list's reference */
        }
        c = next;
    }
}

static pdcbb_err_t pick_listen_ip(bbd_t *d)
{
    if (d->cfg.listen_address[0]) {
        snprintf(d->listen_ip, sizeof(d->listen_ip), "%s", d->cfg.listen_address);
        return PDCBB_OK;
    }
    return pdcbb_node_address(d->listen_ip, sizeof(d->listen_ip));
}

pdcbb_err_t bbd_server_start(bbd_t *d, char *err, size_t errlen)
{
    pdcbb_err_t rc;
    bbd_stats_start(d);
    rc = pdcbb_ucx_open(&d->ucx, d->cfg.ucx_tls, d->cfg.ucx_net_devices, err, errlen);
    if (rc != PDCBB_OK)
        return rc;

    if ((rc = pdcbb_ucx_set_am_handler(d->ucx.worker, PDCBB_AM_ID_MSG, am_recv_cb, d, err,
                                       errlen)) != PDCBB_OK ||
        (rc = pdcbb_ucx_set_am_handler(d->ucx.worker, PDCBB_AM_ID_DATA, am_data_cb, d, err,
                                       errlen)) != PDCBB_OK)
        return rc;

    if ((rc = pick_listen_ip(d)) != PDCBB_OK) {
        snprintf(err, errlen, "cannot find this node's IP address (set listen_address)");
        return rc;
    }
    struct sockaddr_storage ss;
    socklen_t sslen;
    if (pdcbb_sockaddr_make(d->listen_ip, 0, &ss, &sslen) != PDCBB_OK) {
        snprintf(err, errlen, "listen_address '%s' is not an IP address", d->listen_ip);
        return PDCBB_ERR_CONFIG;
    }
    ucp_listener_params_t lp;
    memset(&lp, 0, sizeof(lp));
    lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lp.sockaddr.addr = (const struct sockaddr *)&ss;
    lp.sockaddr.addrlen = sslen;
    lp.conn_handler.cb = conn_request_cb;
    lp.conn_handler.arg = d;
    ucs_status_t st = ucp_listener_create(d->ucx.worker, &lp, &d->listener);
    if (st != UCS_OK) {
        snprintf(err, errlen, "UCX cannot listen on %s: %s", d->listen_ip,
                 ucs_status_string(st));
        return PDCBB_ERR_TRANSPORT;
    }
    ucp_listener_attr_t la;
    memset(&la, 0, sizeof(la));
    la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    if ((st = ucp_listener_query(d->listener, &la)) != UCS_OK) {
        snprintf(err, errlen, "UCX cannot query the listener: %s", ucs_status_string(st));
        return PDCBB_ERR_TRANSPORT;
    }
    if (la.sockaddr.ss_family == AF_INET)
        d->port = ntohs(((struct sockaddr_in *)&la.sockaddr)->sin_port);
    else
        d->port = ntohs(((struct sockaddr_in6 *)&la.sockaddr)->sin6_port);
    PDCBB_INFO("listening on %s port %u", d->listen_ip, d->port);
    return PDCBB_OK;
}

void bbd_server_run(bbd_t *d)
{
    int efd = -1, sfd = -1, ep = -1;
    sigset_t mask;
    bbd_signals_block(&mask);
    sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ucp_worker_get_efd(d->ucx.worker, &efd) != UCS_OK || sfd < 0 || ep < 0) {
        PDCBB_ERROR("cannot set up the event loop: %s", strerror(errno));
        d->stopping = 1;
    } else {
        struct epoll_event ev = {.events = EPOLLIN};
        ev.data.fd = efd;
        epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
        ev.data.fd = sfd;
        epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
        ev.data.fd = bbd_io_event_fd(d);
        epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
        bbd_shm_start(d, ep);
    }

    /* After a request on a shared-memory channel the loop polls on (spinning) for
     * BBD_SHM_SPIN_SECONDS from spin_from, the first clock reading after it (0: not read yet).
     * Reading the clock costs ~0.1 us on a VM: an idle loop reads it once per 16 passes. */
    int spinning = 0;
    double spin_from = 0;
    unsigned idle_spins = 0;
    while (!d->stopping) {
        /* Bounded: a large message arrives as many fragments, each one progress; the rest of
         * the loop (queued requests, other channels, the handshake deadline) must not wait
         * for all of them. */
        for (int i = 0; i < BBD_PROGRESS_BATCH && ucp_worker_progress(d->ucx.worker); i++)
            ;
        process_queue(d);
        if (bbd_peer_poll(d) > 0)
            continue;
        if (bbd_shm_serve(d) > 0) {
            spinning = 1;
            spin_from = 0;
            idle_spins = 0;
        }
        start_receives(d);
        /* Only with writes in flight: taking finished ones costs a system call (a read of the
         * I/O thread's eventfd), which the polling passes for shared memory cannot afford. */
        if (bbd_io_in_flight(d) > 0)
            io_reap(d);
        conn_expire_unauthenticated(d);
        reap_dead(d);
        /* Work queued, or a rendezvous receive in flight (its completion does not always wake
         * the event fd): keep progressing instead of sleeping. */
        if (d->queue_head)
            continue;
        /* A client on a shared-memory channel sends its next request within microseconds of
         * its last reply: poll a little before paying for a sleep and a wake-up. */
        if (spinning && (++idle_spins & 15) != 0)
            continue;
        int tag_work = d->tagidx_pending || !d->tagidx_known;
        double now = spinning || tag_work ? monotonic_seconds() : 0;
        if (spinning && spin_from == 0)
            spin_from = now;
        /* Tag changes wait in the index's log: an idle daemon applies them a batch at a time,
         * and sleeps at most a few milliseconds while some wait. */
        int tag_wait_ms = -1;
        if (tag_work && bbd_tagidx_idle(d, now, &tag_wait_ms))
            continue;
        if (spinning && now - spin_from < BBD_SHM_SPIN_SECONDS)
            continue;
        spinning = 0;
        if (bbd_shm_sleep_prepare(d)) {
            bbd_shm_awake(d);
            continue;
        }
        if (ucp_worker_arm(d->ucx.worker) == UCS_ERR_BUSY) {
            bbd_shm_awake(d);
            continue;
        }
        struct epoll_event evs[16];
        int wait_ms = bbd_table_poll(d);
        if (tag_wait_ms >= 0 && (wait_ms < 0 || wait_ms > tag_wait_ms))
            wait_ms = tag_wait_ms;
        int n = epoll_wait(ep, evs, 16, wait_ms < 0 || wait_ms > 1000 ? 1000 : wait_ms);
        bbd_shm_awake(d);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.fd == sfd) {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                    PDCBB_INFO("signal %u received: shutting down", si.ssi_signo);
                    d->stopping = 1;
                }
            } else {
                bbd_shm_event(d, evs[i].data.fd);
            }
        }
    }

    /* Finish in-flight work: everything received is processed and answered. */
    for (int i = 0; i < 100; i++)
        ucp_worker_progress(d->ucx.worker);
    process_queue(d);
    bbd_shm_serve(d);
    for (int spins = 0; d->queue_head && spins < 20000; spins++) {
        if (!ucp_worker_progress(d->ucx.worker)) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        process_queue(d);
        start_receives(d);
    }
    io_drain(d);
    /* Replies to live clients get a bounded time to leave; a stopped client cannot hold us. */
    for (int spins = 0; d->pending_sends > 0 && spins < 50000; spins++)
        if (!ucp_worker_progress(d->ucx.worker)) {
            reap_dead(d);
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
    if (d->pending_sends > 0)
        PDCBB_WARN("%d replies not delivered at shutdown", d->pending_sends);
    PDCBB_INFO("%llu requests served, %llu of them over %llu shared-memory channels; %llu in "
               "%llu group commits",
               (unsigned long long)d->stats.requests, (unsigned long long)d->stats.shm_requests,
               (unsigned long long)d->stats.shm_channels,
               (unsigned long long)d->stats.batched_requests,
               (unsigned long long)d->stats.batches);
    bbd_shm_stop(d);
    if (sfd >= 0)
        close(sfd);
    if (ep >= 0)
        close(ep);
}

void bbd_server_stop(bbd_t *d)
{
    bbd_lock_free(d);
    bbd_bcast_stop(d);
    bbd_peer_stop(d);
    if (d->listener) {
        ucp_listener_destroy(d->listener);
        d->listener = NULL;
    }
    for (bbd_conn_t *c = d->conns; c; c = c->next)
        conn_close_ep(d, c, 1);
    while (d->conns) {
        bbd_conn_t *n = d->conns->next;
        free(d->conns);
        d->conns = n;
    }
    pdcbb_ucx_close(&d->ucx);
}
