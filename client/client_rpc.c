/*
 * client_rpc.c - the client's side of the transport: one UCX worker, one endpoint per daemon
 * (connected on first use and checked with a HELLO), and request/reply round trips.
 *
 * A call never hangs on a dead daemon: endpoints run in UCP_ERR_HANDLING_MODE_PEER, so a
 * daemon that dies fails its outstanding requests at once (PDCBB_ERR_UNREACHABLE), and every
 * wait has a deadline (connect_timeout to connect, request_timeout for a reply) for a daemon
 * that is alive but stuck. A failed connection is retried on the next call, after re-reading
 * the daemon's endpoint record when this process can see it (a restarted daemon listens on a
 * new port).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "pdcbb_log.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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

static void reply_complete(void *buf, size_t len)
{
    uint64_t req_id;
    client_pending_t *p = NULL;
    if (reply_req_id(buf, len, &req_id) == 0)
        p = pending_find(req_id);
    if (p == NULL || p->done) {
        free(buf); /* malformed, or a late reply to a request that timed out */
        return;
    }
    p->done = 1;
    p->status = PDCBB_OK;
    p->buf = buf;
    p->len = len;
}

static void rndv_cb(void *request, ucs_status_t status, size_t length, void *user_data)
{
    if (status == UCS_OK)
        reply_complete(user_data, length);
    else
        free(user_data);
    ucp_request_free(request);
}

static ucs_status_t am_reply_cb(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ucp_am_recv_param_t *param)
{
    void *buf = malloc(length ? length : 1);
    if (buf == NULL) {
        if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)
            ucp_am_data_release(client_g.ucx.worker, data);
        return UCS_OK; /* the waiting call times out with a clear error */
    }
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        memcpy(buf, data, length);
        reply_complete(buf, length);
        return UCS_OK;
    }
    /* Daemons send replies eagerly; accept a rendezvous one anyway. */
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    prm.cb.recv_am = rndv_cb;
    prm.user_data = buf;
    void *req = ucp_am_recv_data_nbx(client_g.ucx.worker, data, buf, length, &prm);
    if (UCS_PTR_IS_ERR(req))
        free(buf);
    return UCS_OK;
}

static void ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    client_server_t *s = arg;
    unsigned rank = (unsigned)(s - client_g.servers);
    s->failed = 1;
    s->fail_status = status;
    for (client_pending_t *p = client_g.pending; p; p = p->next)
        if (p->server == rank && !p->done) {
            p->done = 1;
            p->status = PDCBB_ERR_UNREACHABLE;
        }
    PDCBB_DEBUG("connection to daemon %u failed: %s", rank, ucs_status_string(status));
}

pdcbb_err_t client_rpc_open(char *err, size_t errlen)
{
    pdcbb_err_t rc = pdcbb_ucx_open(&client_g.ucx, client_g.cfg.ucx_tls,
                                    client_g.cfg.ucx_net_devices, err, errlen);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = pdcbb_ucx_set_am_handler(client_g.ucx.worker, PDCBB_AM_ID_MSG, am_reply_cb, NULL,
                                       err, errlen)) != PDCBB_OK) {
        pdcbb_ucx_close(&client_g.ucx);
        return rc;
    }
    return PDCBB_OK;
}

static void ep_close(client_server_t *s)
{
    pdcbb_ucx_ep_close(client_g.ucx.worker, s->ep, s->failed, 2.0);
    s->ep = NULL;
    s->connected = 0;
}

void client_rpc_close(void)
{
    for (unsigned i = 0; i < client_g.nservers; i++)
        ep_close(&client_g.servers[i]);
    /* Let UCX finish what the closes queued before the worker goes. */
    for (int i = 0; i < 100; i++)
        ucp_worker_progress(client_g.ucx.worker);
    while (client_g.pending) {
        client_pending_t *p = client_g.pending;
        client_g.pending = p->next;
        free(p->buf);
        free(p);
    }
    pdcbb_ucx_close(&client_g.ucx);
}

/* Progress until p is done or the deadline passes; sleeps in poll when idle. */
static void wait_done(client_pending_t *p, double deadline)
{
    int efd = -1;
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
}

static pdcbb_err_t send_and_wait(unsigned server, unsigned op, const void *req, double timeout,
                                 client_pending_t **out)
{
    client_server_t *s = &client_g.servers[server];
    pdcbb_msg_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.magic = PDCBB_PROTO_MAGIC;
    h.version = PDCBB_PROTO_VERSION;
    h.op = (uint16_t)op;
    h.req_id = ++client_g.next_req_id;
    memcpy(h.token, s->info.token, PDCBB_TOKEN_LEN);
    void *msg;
    size_t len;
    pdcbb_err_t rc = pdcbb_msg_build(&h, req, &msg, &len);
    if (rc != PDCBB_OK)
        return client_fail(rc, "%s: cannot encode the request: %s", pdcbb_op_name(op),
                           pdcbb_strerror(rc));
    client_pending_t *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        free(msg);
        return client_fail(PDCBB_ERR_NOMEM, "out of memory");
    }
    p->req_id = h.req_id;
    p->server = server;
    p->next = client_g.pending;
    client_g.pending = p;

    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = UCP_AM_SEND_FLAG_REPLY;
    void *sreq = ucp_am_send_nbx(s->ep, PDCBB_AM_ID_MSG, NULL, 0, msg, len, &prm);
    double deadline = now_seconds() + timeout;
    if (UCS_PTR_IS_ERR(sreq)) {
        p->done = 1;
        p->status = pdcbb_err_from_ucs(UCS_PTR_STATUS(sreq));
    } else if (sreq != NULL) {
        /* The message buffer must live until the send completes. */
        while (ucp_request_check_status(sreq) == UCS_INPROGRESS && !p->done &&
               now_seconds() < deadline)
            ucp_worker_progress(client_g.ucx.worker);
        ucs_status_t st = ucp_request_check_status(sreq);
        if (st == UCS_INPROGRESS) {
            ucp_request_cancel(client_g.ucx.worker, sreq);
            while (ucp_request_check_status(sreq) == UCS_INPROGRESS)
                ucp_worker_progress(client_g.ucx.worker);
            if (!p->done) {
                p->done = 1;
                p->status = PDCBB_ERR_TIMEOUT;
            }
        } else if (st != UCS_OK && !p->done) {
            p->done = 1;
            p->status = pdcbb_err_from_ucs(st);
        }
        ucp_request_free(sreq);
    }
    free(msg);
    wait_done(p, deadline);
    if (!p->done) {
        p->done = 1;
        p->status = PDCBB_ERR_TIMEOUT;
    }
    pending_remove(p);
    *out = p;
    return PDCBB_OK;
}

static pdcbb_err_t connect_server(unsigned server)
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
    ucp_ep_params_t ep;
    memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep.sockaddr.addr = (const struct sockaddr *)&ss;
    ep.sockaddr.addrlen = sslen;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = ep_error_cb;
    ep.err_handler.arg = s;
    ucs_status_t st = ucp_ep_create(client_g.ucx.worker, &ep, &s->ep);
    if (st != UCS_OK) {
        s->ep = NULL;
        s->failed = 1;
        return client_fail(PDCBB_ERR_UNREACHABLE, "cannot connect to daemon %u at %s:%u: %s",
                           server, s->info.ip, s->info.port, ucs_status_string(st));
    }
    s->connected = 1;

    pdcbb_hello_req_t q = {.client_pid = (uint32_t)getpid(), .job_id = client_g.job_id,
                           .client_node = client_g.node};
    client_pending_t *p;
    pdcbb_err_t rc = send_and_wait(server, PDCBB_OP_HELLO, &q, client_g.cfg.connect_timeout, &p);
    if (rc != PDCBB_OK)
        return rc;
    rc = p->status;
    pdcbb_msg_hdr_t h;
    if (rc == PDCBB_OK && (rc = pdcbb_hdr_decode(p->buf, p->len, &h)) == PDCBB_OK)
        rc = h.status;
    free(p->buf);
    free(p);
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

pdcbb_err_t client_rpc(unsigned server, unsigned op, const void *req, void *rep, void **keep)
{
    double t0 = now_seconds();
    *keep = NULL;
    if (server >= client_g.nservers)
        return client_fail(PDCBB_ERR_BAD_ID, "%s: no daemon %u (the job has %u)",
                           pdcbb_op_name(op), server, client_g.nservers);
    pdcbb_err_t rc = connect_server(server);
    if (rc != PDCBB_OK)
        return rc;
    client_pending_t *p;
    rc = send_and_wait(server, op, req, client_g.cfg.request_timeout, &p);
    if (rc != PDCBB_OK)
        return rc;
    rc = p->status;
    client_server_t *s = &client_g.servers[server];
    if (rc != PDCBB_OK) {
        free(p->buf);
        free(p);
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
        free(p->buf);
        free(p);
        return client_fail(rc, "%s: bad reply from daemon %u: %s", pdcbb_op_name(op), server,
                           pdcbb_strerror(rc));
    }
    if (h.status != PDCBB_OK) {
        free(p->buf);
        free(p);
        /* The daemon's own cause; callers add the names involved. */
        return client_fail(h.status, "daemon %u: %s (%s)", server, pdcbb_strerror(h.status),
                           pdcbb_op_name(op));
    }
    rc = pdcbb_body_decode(op, 1, (uint8_t *)p->buf + PDCBB_HDR_LEN, h.payload_len, rep);
    if (rc != PDCBB_OK) {
        free(p->buf);
        free(p);
        return client_fail(rc, "%s: malformed reply from daemon %u: %s", pdcbb_op_name(op),
                           server, pdcbb_strerror(rc));
    }
    *keep = p->buf;
    free(p);
    if (op < PDCBB_OP_MAX_) {
        client_g.op_count[op]++;
        client_g.op_seconds[op] += now_seconds() - t0;
    }
    return PDCBB_OK;
}

void client_rpc_release(unsigned op, void *rep, void *keep)
{
    pdcbb_body_free(op, 1, rep);
    free(keep);
}
