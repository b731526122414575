/*
 * client_rpc.c - the client's side of the transport: one UCX worker, one endpoint per daemon
 * (connected on first use; HELLO and AUTH then prove the job token both ways, so requests
 * carry none: common/pdcbb_auth.h), and request/reply round trips.
 *
 * A call never hangs on a dead daemon: endpoints run in UCP_ERR_HANDLING_MODE_PEER, so a
 * daemon that dies fails its outstanding requests at once (PDCBB_ERR_UNREACHABLE), and every
 * wait has a deadline (connect_timeout to connect, request_timeout for a reply) for a daemon
 * that is alive but stuck. A failed connection is retried on the next call, after re-reading
 * the daemon's endpoint record when this process can see it (a restarted daemon listens on a
 * new port).
 *
 * In a job of many nodes (configuration key forward) a request for a daemon of another node
 * goes to a daemon of this node inside a FORWARD request, which sends it on and carries the
 * reply back (bbd/bbd_forward.c): the process then holds connections to this node's daemons
 * only. The reply is unwrapped when it arrives, so the rest reads it as the daemon's own.
 *
 * Requests are posted asynchronously (client_rpc_post) and completed by progressing the one
 * worker: control replies arrive as PDCBB_AM_ID_MSG messages, replies with a bulk part (region
 * reads) as PDCBB_AM_ID_DATA, whose data is received straight into the caller's destination.
 * client_rpc() is the synchronous round trip built on the same calls; to a daemon of this node
 * it goes over the shared-memory channel instead when it can (client_shm.c).
 *
 * Serving a drained job (client_g.drained, PDCBB_DRAINED_DIR) there is no worker: a posted
 * request is answered at once by client_drained_serve, whose reply (a whole message, as a
 * daemon sends it) fills the pending request as an arriving reply would, so finishing and
 * decoding take the same path.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "pdcbb_auth.h"
#include "pdcbb_log.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double client_now(void)
{
    return now_seconds();
}

static client_pending_t *pending_find(uint64_t req_id)
{
    for (client_pending_t *p = client_g.pending; p; p = p->next)
        if (p->req_id == req_id)
            return p;
    return NULL;
}

static void pending_remove(client_pending_t *x)
{
    for (client_pending_t **pp = &client_g.pending; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            return;
        }
}

/* Peek the request id of a reply from its header (magic and version checked). */
static int reply_req_id(const void *data, size_t len, uint64_t *req_id)
{
    pdcbb_msg_hdr_t h;
    uint8_t tmp[PDCBB_HDR_LEN];
    if (len < PDCBB_HDR_LEN)
        return -1;
    memcpy(tmp, data, PDCBB_HDR_LEN);
    tmp[24] = tmp[25] = tmp[26] = tmp[27] = 0; /* validate the fixed part only */
    if (pdcbb_hdr_decode(tmp, PDCBB_HDR_LEN, &h) != PDCBB_OK)
        return -1;
    *req_id = h.req_id;
    return 0;
}

static void pending_done(client_pending_t *p, pdcbb_err_t status)
{
    if (p->done)
        return;
    p->done = 1;
    p->status = status;
}

/*
 * A forwarded request's reply (p->via is not p->server): the FORWARD reply in *ctrl becomes the
 * other daemon's reply inside it (pointing into the same buffer). 0 when there is none (the
 * request did not reach that daemon): p is then done with the reason.
 */
static int forward_unwrap(client_pending_t *p, const void **ctrl, size_t *len)
{
    pdcbb_msg_hdr_t h;
    pdcbb_forward_rep_t fr;
    pdcbb_err_t rc = pdcbb_hdr_decode(*ctrl, *len, &h);
    if (rc == PDCBB_OK && h.op != PDCBB_OP_FORWARD)
        rc = PDCBB_ERR_PROTO;
    if (rc == PDCBB_OK)
        rc = h.status;
    if (rc == PDCBB_OK)
        rc = pdcbb_body_decode(PDCBB_OP_FORWARD, 1, (const uint8_t *)*ctrl + PDCBB_HDR_LEN,
                               h.payload_len, &fr);
    if (rc != PDCBB_OK) {
        p->forward_failed = 1;
        pending_done(p, rc);
        return 0;
    }
    *ctrl = fr.msg;
    *len = fr.msg_len;
    pdcbb_body_free(PDCBB_OP_FORWARD, 1, &fr); /* a BLOB points into the message */
    return 1;
}

static void rndv_cb(void *request, ucs_status_t status, size_t length, void *user_data)
{
    client_pending_t *p = user_data;
    p->bulk_len = length;
    p->receiving = 0;
    pending_done(p, status == UCS_OK ? PDCBB_OK : pdcbb_err_from_ucs(status));
    ucp_request_free(request);
}

/* A reply's control part arrived (copied into p); data is its bulk part, if any. */
static void reply_arrived(client_pending_t *p, const void *ctrl, size_t ctrl_len, void *data,
                          size_t length, int rndv)
{
    p->buf = malloc(ctrl_len ? ctrl_len : 1);
    if (p->buf == NULL) {
        if (rndv)
            ucp_am_data_release(client_g.ucx.worker, data);
        pending_done(p, PDCBB_ERR_NOMEM);
        return;
    }
    memcpy(p->buf, ctrl, ctrl_len);
    p->len = ctrl_len;
    if (data == NULL || length == 0) {
        pending_done(p, PDCBB_OK);
        return;
    }
    void *dest = p->dest;
    if (dest == NULL || length > p->dest_len) {
        dest = p->bulk_own = malloc(length);
        if (dest == NULL) {
            if (rndv)
                ucp_am_data_release(client_g.ucx.worker, data);
            pending_done(p, PDCBB_ERR_NOMEM);
            return;
        }
    }
    p->bulk = dest;
    p->bulk_len = length;
    if (!rndv) {
        memcpy(dest, data, length);
        pending_done(p, PDCBB_OK);
        return;
    }
    /* Large read data: pulled straight into the destination (single-copy over cma). */
    p->receiving = 1;
    void *req = pdcbb_ucx_recv_data(client_g.ucx.worker, data, dest, length, rndv_cb, p);
    if (UCS_PTR_IS_ERR(req)) {
        p->receiving = 0;
        pending_done(p, pdcbb_err_from_ucs(UCS_PTR_STATUS(req)));
    }
}

static ucs_status_t am_reply_cb(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ucp_am_recv_param_t *param)
{
    uint64_t id;
    int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    client_pending_t *p = NULL;
    if (rndv) {
        /* Daemons send control replies eagerly; refuse anything else. */
        ucp_am_data_release(client_g.ucx.worker, data);
        return UCS_OK;
    }
    if (reply_req_id(data, length, &id) == 0)
        p = pending_find(id);
    if (p == NULL || p->done || p->buf) {
        PDCBB_DEBUG("dropped a %zu-byte reply to no pending request", length);
        return UCS_OK; /* a late reply to a request that timed out, or junk */
    }
    const void *ctrl = data;
    if (p->via != p->server && !forward_unwrap(p, &ctrl, &length))
        return UCS_OK;
    reply_arrived(p, ctrl, length, NULL, 0, 0);
    return UCS_OK;
}

static ucs_status_t am_data_reply_cb(void *arg, const void *header, size_t header_length,
                                     void *data, size_t length, const ucp_am_recv_param_t *param)
{
    uint64_t id;
    int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    client_pending_t *p = NULL;
    if (reply_req_id(header, header_length, &id) == 0)
        p = pending_find(id);
    if (p == NULL || p->done || p->buf) {
        if (rndv)
            ucp_am_data_release(client_g.ucx.worker, data);
        return UCS_OK;
    }
    if (p->via != p->server && !forward_unwrap(p, &header, &header_length)) {
        if (rndv)
            ucp_am_data_release(client_g.ucx.worker, data);
        return UCS_OK;
    }
    reply_arrived(p, header, header_length, data, length, rndv);
    return UCS_OK;
}

static void ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    client_server_t *s = arg;
    unsigned rank = (unsigned)(s - client_g.servers);
    s->failed = 1;
    s->fail_status = status;
    for (client_pending_t *p = client_g.pending; p; p = p->next)
        if (p->via == rank && !p->done && !p->receiving)
            pending_done(p, PDCBB_ERR_UNREACHABLE);
    PDCBB_DEBUG("connection to daemon %u failed: %s", rank, ucs_status_string(status));
}

pdcbb_err_t client_rpc_open(char *err, size_t errlen)
{
    if (client_g.drained) {
        /* No transport; the control-part limit only sizes batches of regions. */
        client_g.max_am_header = 64 << 10;
        return PDCBB_OK;
    }
    pdcbb_err_t rc = pdcbb_ucx_open(&client_g.ucx, client_g.cfg.ucx_tls,
                                    client_g.cfg.ucx_net_devices, err, errlen);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = pdcbb_ucx_set_am_handler(client_g.ucx.worker, PDCBB_AM_ID_MSG, am_reply_cb, NULL,
                                       err, errlen)) != PDCBB_OK ||
        (rc = pdcbb_ucx_set_am_handler(client_g.ucx.worker, PDCBB_AM_ID_DATA, am_data_reply_cb,
                                       NULL, err, errlen)) != PDCBB_OK) {
        pdcbb_ucx_close(&client_g.ucx);
        return rc;
    }
    ucp_worker_attr_t wa;
    memset(&wa, 0, sizeof(wa));
    wa.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
    client_g.max_am_header = 1024;
    if (ucp_worker_query(client_g.ucx.worker, &wa) == UCS_OK && wa.max_am_header > 256)
        client_g.max_am_header = wa.max_am_header;
    return PDCBB_OK;
}

static void ep_close(client_server_t *s)
{
    pdcbb_ucx_ep_close(client_g.ucx.worker, s->ep, s->failed, 2.0);
    s->ep = NULL;
    s->connected = 0;
}

/* Wait for a posted send to finish (the message buffer is freed after it). */
static void send_finish(client_pending_t *p)
{
    if (p->sreq == NULL)
        return;
    double deadline = now_seconds() + 2.0;
    while (ucp_request_check_status(p->sreq) == UCS_INPROGRESS && now_seconds() < deadline)
        ucp_worker_progress(client_g.ucx.worker);
    if (ucp_request_check_status(p->sreq) == UCS_INPROGRESS) {
        ucp_request_cancel(client_g.ucx.worker, p->sreq);
        while (ucp_request_check_status(p->sreq) == UCS_INPROGRESS)
            ucp_worker_progress(client_g.ucx.worker);
    }
    ucp_request_free(p->sreq);
    p->sreq = NULL;
}

void client_pending_free(client_pending_t *p)
{
    if (p == NULL)
        return;
    pending_remove(p);
    send_finish(p);
    if (p->receiving) {
        /* Never free a buffer UCX is still writing into: let the receive end first. */
        double deadline = now_seconds() + 2.0;
        while (p->receiving && now_seconds() < deadline)
            ucp_worker_progress(client_g.ucx.worker);
    }
    free(p->msg);
    free(p->buf);
    free(p->bulk_own);
    free(p->why);
    free(p);
}

void client_rpc_close(void)
{
    if (client_g.drained) {
        while (client_g.pending)
            client_pending_free(client_g.pending);
        return;
    }
    for (unsigned i = 0; i < client_g.nservers; i++) {
        client_shm_close(i);
        ep_close(&client_g.servers[i]);
    }
    /* Let UCX finish what the closes queued before the worker goes. */
    for (int i = 0; i < 100; i++)
        ucp_worker_progress(client_g.ucx.worker);
    while (client_g.pending)
        client_pending_free(client_g.pending);
    pdcbb_ucx_close(&client_g.ucx);
}

int client_rpc_progress(void)
{
    if (client_g.drained)
        return 0; /* requests are answered when posted */
    return (int)ucp_worker_progress(client_g.ucx.worker);
}

void client_rpc_idle(double max_seconds)
{
    int efd = -1;
    if (client_g.drained)
        return;
    if (ucp_worker_get_efd(client_g.ucx.worker, &efd) != UCS_OK || efd < 0)
        return;
    if (ucp_worker_arm(client_g.ucx.worker) == UCS_ERR_BUSY)
        return;
    struct pollfd pfd = {.fd = efd, .events = POLLIN};
    int ms = (int)(max_seconds * 1000);
    poll(&pfd, 1, ms < 1 ? 1 : ms);
}

/* Progress until p is done or timeout seconds pass; sleeps in poll when idle. */
void client_rpc_wait(client_pending_t *p, double timeout)
{
    double deadline = now_seconds() + timeout;
    int efd = -1;
    if (client_g.drained) {
        if (!p->done)
            pending_done(p, PDCBB_ERR_INTERNAL); /* cannot happen: answered when posted */
        return;
    }
    ucp_worker_get_efd(client_g.ucx.worker, &efd);
    int idle = 0;
    while (!p->done) {
        if (ucp_worker_progress(client_g.ucx.worker)) {
            idle = 0;
            continue;
        }
        if (p->done)
            break;
        double left = deadline - now_seconds();
        if (left <= 0)
            break;
        if (++idle < 2000 || efd < 0)
            continue; /* spin briefly: replies usually arrive within microseconds */
        if (ucp_worker_arm(client_g.ucx.worker) == UCS_ERR_BUSY)
            continue;
        struct pollfd pfd = {.fd = efd, .events = POLLIN};
        int ms = left > 0.05 ? 50 : (int)(left * 1000) + 1;
        poll(&pfd, 1, ms);
    }
    if (!p->done && !p->receiving)
        pending_done(p, PDCBB_ERR_TIMEOUT);
}

void client_request_hdr(unsigned server, unsigned op, pdcbb_msg_hdr_t *h)
{
    pdcbb_request_hdr(h, op, ++client_g.next_req_id, client_g.servers[server].info.token);
}

/* Fill in request p (its reply may go straight to dest) and list it among the pending ones. */
static void pending_link(client_pending_t *p, uint64_t req_id, unsigned server, unsigned op,
                         void *dest, size_t dest_len)
{
    p->req_id = req_id;
    p->server = server;
    p->via = server;
    p->op = op;
    p->dest = dest;
    p->dest_len = dest_len;
    p->next = client_g.pending;
    client_g.pending = p;
}

/* Wrap p's request (for p->server) in a FORWARD request to daemon via, with the same id. */
static pdcbb_err_t forward_wrap(client_pending_t *p, unsigned via)
{
    pdcbb_msg_hdr_t h;
    pdcbb_request_hdr(&h, PDCBB_OP_FORWARD, p->req_id, NULL);
    pdcbb_forward_req_t q = {.rank = p->server, .msg = p->msg, .msg_len = (uint32_t)p->msg_len};
    void *msg;
    size_t len;
    pdcbb_err_t rc = pdcbb_msg_build(&h, &q, &msg, &len);
    if (rc != PDCBB_OK)
        return rc;
    free(p->msg);
    p->msg = msg;
    p->msg_len = len;
    p->via = via;
    return PDCBB_OK;
}

/* The daemon a request of op for server is sent to: server, or this node's daemon when
 * forwarding (client_g.forward) and server is on another node. */
static unsigned route(unsigned server, unsigned op)
{
    unsigned local = client_g.local_rank;
    if (!client_g.forward || server == local || local >= client_g.nservers ||
        !pdcbb_op_forwardable(op) || strcmp(client_g.servers[server].info.node, client_g.node) == 0)
        return server;
    return local;
}

static pdcbb_err_t post(unsigned server, unsigned via, unsigned op, const void *req,
                        const void *bulk, size_t bulk_len, void *dest, size_t dest_len,
                        client_pending_t **out)
{
    client_server_t *s = &client_g.servers[via];
    pdcbb_msg_hdr_t h;
    client_request_hdr(server, op, &h);
    /* Over UCX the connection proved the token (connect_once): it never travels. */
    memset(h.token, 0, sizeof(h.token));
    client_pending_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "out of memory");
    pdcbb_err_t rc = pdcbb_msg_build(&h, req, &p->msg, &p->msg_len);
    if (rc != PDCBB_OK) {
        free(p);
        return client_fail(rc, "%s: cannot encode the request: %s", pdcbb_op_name(op),
                           pdcbb_strerror(rc));
    }
    p->req_id = h.req_id;
    p->server = server;
    if (via != server && (rc = forward_wrap(p, via)) != PDCBB_OK) {
        free(p->msg);
        free(p);
        return client_fail(rc, "%s: cannot encode the request for daemon %u: %s", pdcbb_op_name(op),
                           server, pdcbb_strerror(rc));
    }
    if (bulk && p->msg_len > client_g.max_am_header) {
        size_t len = p->msg_len;
        free(p->msg);
        free(p);
        return client_fail(PDCBB_ERR_TOO_BIG, "%s: control part of %zu bytes exceeds %zu",
                           pdcbb_op_name(op), len, client_g.max_am_header);
    }
    pending_link(p, h.req_id, server, op, dest, dest_len);
    p->via = via;

    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = UCP_AM_SEND_FLAG_REPLY;
    void *sreq = bulk ? ucp_am_send_nbx(s->ep, PDCBB_AM_ID_DATA, p->msg, p->msg_len, bulk,
                                        bulk_len, &prm)
                      : ucp_am_send_nbx(s->ep, PDCBB_AM_ID_MSG, NULL, 0, p->msg, p->msg_len,
                                        &prm);
    if (UCS_PTR_IS_ERR(sreq))
        pending_done(p, pdcbb_err_from_ucs(UCS_PTR_STATUS(sreq)));
    else
        p->sreq = sreq;
    *out = p;
    return PDCBB_OK;
}

/* One round trip of the handshake (HELLO or AUTH) to server: the reply's status, and on
 * PDCBB_OK its body in rep (released with client_rpc_release(op, rep, *keep)). */
static pdcbb_err_t handshake_step(unsigned server, unsigned op, const void *req, void *rep,
                                  void **keep)
{
    client_pending_t *p;
    pdcbb_err_t rc = post(server, server, op, req, NULL, 0, NULL, 0, &p);
    if (rc != PDCBB_OK)
        return rc;
    client_rpc_wait(p, client_g.cfg.connect_timeout);
    rc = p->status;
    pdcbb_msg_hdr_t h;
    if (rc == PDCBB_OK && (rc = pdcbb_hdr_decode(p->buf, p->len, &h)) == PDCBB_OK) {
        rc = h.status;
        if (rc == PDCBB_OK && (h.op != op || !(h.flags & PDCBB_MSG_FLAG_REPLY)))
            rc = PDCBB_ERR_PROTO;
    }
    if (rc == PDCBB_OK)
        rc = pdcbb_body_decode(op, 1, (uint8_t *)p->buf + PDCBB_HDR_LEN, h.payload_len, rep);
    if (rc == PDCBB_OK) {
        *keep = p->buf;
        p->buf = NULL;
    }
    client_pending_free(p);
    return rc;
}

static pdcbb_err_t connect_once(unsigned server)
{
    client_server_t *s = &client_g.servers[server];
    if (s->connected && !s->failed)
        return PDCBB_OK;
    if (s->ep)
        ep_close(s);
    if (s->failed && s->record_path[0]) {
        /* The daemon may have been restarted on a new port. */
        pdcbb_endpoint_t fresh;
        if (pdcbb_endpoint_read(s->record_path, &fresh) == PDCBB_OK && fresh.rank == server) {
            memcpy(fresh.token, s->info.token, PDCBB_TOKEN_LEN);
            s->info = fresh;
        }
    }
    s->failed = 0;

    struct sockaddr_storage ss;
    socklen_t sslen;
    if (pdcbb_sockaddr_make(s->info.ip, s->info.port, &ss, &sslen) != PDCBB_OK)
        return client_fail(PDCBB_ERR_DISCOVERY, "daemon %u has a bad address '%s'", server,
                           s->info.ip);
    ucs_status_t st = pdcbb_ucx_connect(client_g.ucx.worker, &ss, sslen, ep_error_cb, s, &s->ep);
    if (st != UCS_OK) {
        s->ep = NULL;
        s->failed = 1;
        return client_fail(PDCBB_ERR_UNREACHABLE, "cannot connect to daemon %u at %s:%u: %s",
                           server, s->info.ip, s->info.port, ucs_status_string(st));
    }
    s->connected = 1;

    /* The handshake (common/pdcbb_auth.h): the daemon proves the token, then this process. */
    uint8_t cn[PDCBB_AUTH_NONCE_LEN], expected[PDCBB_AUTH_PROOF_LEN];
    pdcbb_err_t rc = pdcbb_auth_nonce(cn);
    if (rc != PDCBB_OK) {
        s->failed = 1;
        return client_fail(rc, "cannot make a nonce: the kernel's random source failed");
    }
    pdcbb_hello_req_t q = {.client_pid = (uint32_t)getpid(),
                           .job_id = client_g.job_id,
                           .client_node = client_g.node,
                           .nonce = cn,
                           .nonce_len = sizeof(cn)};
    pdcbb_hello_rep_t hr;
    void *keep = NULL;
    rc = handshake_step(server, PDCBB_OP_HELLO, &q, &hr, &keep);
    if (rc == PDCBB_OK) {
        int proved = 0;
        uint8_t proof[PDCBB_AUTH_PROOF_LEN];
        if (hr.nonce_len == PDCBB_AUTH_NONCE_LEN) {
            pdcbb_auth_daemon_proof(s->info.token, cn, hr.nonce, expected);
            proved = pdcbb_auth_proof_ok(expected, hr.proof, hr.proof_len);
            pdcbb_auth_client_proof(s->info.token, cn, hr.nonce, proof);
        }
        client_rpc_release(PDCBB_OP_HELLO, &hr, keep);
        if (!proved) {
            s->failed = 1;
            return client_fail(PDCBB_ERR_AUTH,
                               "daemon %u at %s:%u (node %s) could not prove job %llu's token: "
                               "this process holds another token (a client of another job), or "
                               "it is not this job's daemon (a stale endpoint record, or another "
                               "process listening on its port)",
                               server, s->info.ip, s->info.port, s->info.node,
                               (unsigned long long)client_g.job_id);
        }
        pdcbb_auth_req_t aq = {.proof = proof, .proof_len = sizeof(proof)};
        pdcbb_auth_rep_t ar;
        rc = handshake_step(server, PDCBB_OP_AUTH, &aq, &ar, &keep);
        if (rc == PDCBB_OK)
            client_rpc_release(PDCBB_OP_AUTH, &ar, keep);
    }
    if (rc != PDCBB_OK) {
        s->failed = 1;
        if (rc == PDCBB_ERR_AUTH)
            return client_fail(rc, "daemon %u at %s:%u refused this client: not a process of "
                                   "job %llu, or a wrong token",
                               server, s->info.ip, s->info.port,
                               (unsigned long long)client_g.job_id);
        return client_fail(rc == PDCBB_ERR_TIMEOUT ? PDCBB_ERR_UNREACHABLE : rc,
                           "cannot reach daemon %u at %s:%u (node %s): %s", server, s->info.ip,
                           s->info.port, s->info.node, pdcbb_strerror(rc));
    }
    return PDCBB_OK;
}

/*
 * Connect to a daemon. A daemon of another node that cannot be reached may have been restarted
 * on a new port after this process (or the node's job.table) learned its record: ask this
 * node's daemon for its record again and retry once if it changed.
 */
static pdcbb_err_t connect_server(unsigned server)
{
    pdcbb_err_t rc = connect_once(server);
    client_server_t *s = &client_g.servers[server];
    if ((rc != PDCBB_ERR_UNREACHABLE && rc != PDCBB_ERR_TIMEOUT) || s->record_path[0])
        return rc;
    pdcbb_endpoint_t before = s->info;
    if (client_discovery_refresh(server) != PDCBB_OK || (before.port == s->info.port &&
                                                         strcmp(before.ip, s->info.ip) == 0))
        return rc;
    PDCBB_INFO("daemon %u moved from %s:%u to %s:%u: reconnecting", server, before.ip,
               before.port, s->info.ip, s->info.port);
    return connect_once(server);
}

/* A drained job: the request is answered in-process, its reply fills p as a daemon's would. */
static pdcbb_err_t post_drained(unsigned server, unsigned op, const void *req, void *dest,
                                size_t dest_len, client_pending_t **out)
{
    client_pending_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "out of memory");
    pending_link(p, ++client_g.next_req_id, server, op, dest, dest_len);
    void *ctrl, *bulk;
    size_t ctrl_len, bulk_len;
    pdcbb_err_t rc = client_drained_serve(op, p->req_id, req, dest, dest_len, &ctrl, &ctrl_len,
                                          &bulk, &bulk_len);
    if (rc == PDCBB_OK && client_drained_why()[0] != '\0')
        p->why = strdup(client_drained_why()); /* NULL: the message lacks the reason */
    if (rc == PDCBB_OK) {
        p->buf = ctrl;
        p->len = ctrl_len;
        if (bulk) {
            p->bulk = bulk;
            p->bulk_len = bulk_len;
            if (bulk != dest)
                p->bulk_own = bulk;
        }
    }
    pending_done(p, rc);
    *out = p;
    return PDCBB_OK;
}

pdcbb_err_t client_rpc_post(unsigned server, unsigned op, const void *req, const void *bulk,
                            size_t bulk_len, void *dest, size_t dest_len, client_pending_t **out)
{
    if (server >= client_g.nservers)
        return client_fail(PDCBB_ERR_BAD_ID, "%s: no daemon %u (the job has %u)",
                           pdcbb_op_name(op), server, client_g.nservers);
    if (client_g.drained)
        return post_drained(server, op, req, dest, dest_len, out);
    unsigned via = route(server, op);
    pdcbb_err_t rc = connect_server(via);
    return rc != PDCBB_OK ? rc : post(server, via, op, req, bulk, bulk_len, dest, dest_len, out);
}

pdcbb_err_t client_rpc_finish(client_pending_t *p, void *rep, void **keep)
{
    unsigned op = p->op, server = p->server;
    client_server_t *s = &client_g.servers[server];
    pdcbb_err_t rc = p->status;
    *keep = NULL;
    if (rc != PDCBB_OK && client_g.drained) {
        client_pending_free(p);
        return client_fail(rc, "%s: %s (serving the drained job %s)", pdcbb_op_name(op),
                           pdcbb_strerror(rc), client_drained_dir());
    }
    if (rc != PDCBB_OK && p->via != server) {
        /* Sent through this node's daemon: say which hop failed. */
        client_server_t *v = &client_g.servers[p->via];
        int hop = p->forward_failed;
        client_pending_free(p);
        if (rc == PDCBB_ERR_TIMEOUT)
            return client_fail(rc,
                               "%s: no reply from daemon %u (node %s) through daemon %u of "
                               "this node within %.1f s",
                               pdcbb_op_name(op), server, s->info.node, v->info.rank,
                               client_g.cfg.request_timeout);
        if (hop)
            return client_fail(rc,
                               "%s: daemon %u (node %s) could not be reached through daemon "
                               "%u of this node: %s",
                               pdcbb_op_name(op), server, s->info.node, v->info.rank,
                               pdcbb_strerror(rc));
        return client_fail(rc,
                           "%s: lost the connection to daemon %u of this node at %s:%u, "
                           "through which daemon %u is reached: %s",
                           pdcbb_op_name(op), v->info.rank, v->info.ip, v->info.port, server,
                           v->failed ? ucs_status_string(v->fail_status) : pdcbb_strerror(rc));
    }
    if (rc != PDCBB_OK) {
        client_pending_free(p);
        if (rc == PDCBB_ERR_TIMEOUT)
            return client_fail(rc, "%s: daemon %u at %s:%u did not answer within %.1f s",
                               pdcbb_op_name(op), server, s->info.ip, s->info.port,
                               client_g.cfg.request_timeout);
        return client_fail(rc, "%s: lost the connection to daemon %u at %s:%u (node %s): %s",
                           pdcbb_op_name(op), server, s->info.ip, s->info.port, s->info.node,
                           s->failed ? ucs_status_string(s->fail_status) : pdcbb_strerror(rc));
    }
    pdcbb_msg_hdr_t h;
    rc = pdcbb_hdr_decode(p->buf, p->len, &h);
    if (rc == PDCBB_OK && (h.op != op || !(h.flags & PDCBB_MSG_FLAG_REPLY)))
        rc = PDCBB_ERR_PROTO;
    if (rc != PDCBB_OK) {
        client_pending_free(p);
        return client_fail(rc, "%s: bad reply from daemon %u: %s", pdcbb_op_name(op), server,
                           pdcbb_strerror(rc));
    }
    if (h.status != PDCBB_OK && client_g.drained) {
        pdcbb_err_t st = h.status;
        char why[1100] = "";
        if (p->why != NULL)
            snprintf(why, sizeof(why), ": %s", p->why);
        client_pending_free(p);
        if (st == PDCBB_ERR_READ_ONLY)
            return client_fail(st,
                               "%s refused: %s; %s is a drained job directory, opened read-only "
                               "(PDCBB_DRAINED_DIR)",
                               pdcbb_op_name(op), pdcbb_strerror(st), client_drained_dir());
        return client_fail(st, "%s: %s%s (drained job directory %s)", pdcbb_op_name(op),
                           pdcbb_strerror(st), why, client_drained_dir());
    }
    if (h.status != PDCBB_OK) {
        client_pending_free(p);
        /* The daemon's own cause; callers add the names involved. */
        return client_fail(h.status, "daemon %u: %s (%s)", server, pdcbb_strerror(h.status),
                           pdcbb_op_name(op));
    }
    rc = pdcbb_body_decode(op, 1, (uint8_t *)p->buf + PDCBB_HDR_LEN, h.payload_len, rep);
    if (rc != PDCBB_OK) {
        client_pending_free(p);
        return client_fail(rc, "%s: malformed reply from daemon %u: %s", pdcbb_op_name(op),
                           server, pdcbb_strerror(rc));
    }
    /* The caller keeps the reply buffer (strings in rep point into it). */
    *keep = p->buf;
    p->buf = NULL;
    client_pending_free(p);
    return PDCBB_OK;
}

pdcbb_err_t client_rpc(unsigned server, unsigned op, const void *req, void *rep, void **keep)
{
    double t0 = now_seconds();
    client_pending_t *p;
    pdcbb_err_t rc;
    *keep = NULL;
    if (server < client_g.nservers && client_shm_call(server, op, req, &p)) {
        rc = client_rpc_finish(p, rep, keep);
    } else {
        rc = client_rpc_post(server, op, req, NULL, 0, NULL, 0, &p);
        if (rc != PDCBB_OK)
            return rc;
        client_rpc_wait(p, client_g.cfg.request_timeout);
        rc = client_rpc_finish(p, rep, keep);
    }
    if (rc == PDCBB_OK && op < PDCBB_OP_MAX_ && !client_g.timing_stopped) {
        client_g.op_count[op]++;
        client_g.op_seconds[op] += now_seconds() - t0;
    }
    return rc;
}

void client_rpc_release(unsigned op, void *rep, void *keep)
{
    pdcbb_body_free(op, 1, rep);
    free(keep);
}
