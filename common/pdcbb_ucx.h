/*
 * pdcbb_ucx.h - UCX setup shared by the client library and the daemon.
 *
 * Both sides must use the same transports and error-handling mode or a connection fails or
 * silently falls back to TCP (docs/INTERNALS.md, Transport), so the context is created in one
 * place from the job's configuration: UCP active messages + wakeup, endpoints in
 * UCP_ERR_HANDLING_MODE_PEER, TLS from the config (default "cma,tcp"), NET_DEVICES when set,
 * MEMORY_INVALIDATE=y and RNDV_SCHEME=get_zcopy so large messages move single-copy via cma.
 * A worker must only be used from the thread that created it.
 */
#ifndef PDCBB_UCX_H
#define PDCBB_UCX_H

#include <ucp/api/ucp.h>

#include "pdcbb_error.h"

typedef struct pdcbb_ucx {
    ucp_context_h context;
    ucp_worker_h worker;
} pdcbb_ucx_t;

/*
 * Create context and single-threaded worker. tls and net_devices may be NULL or "" for UCX's
 * defaults. On failure fills err (errlen bytes) with the UCX message.
 */
pdcbb_err_t pdcbb_ucx_open(pdcbb_ucx_t *u, const char *tls, const char *net_devices, char *err,
                           size_t errlen);
/* Destroy worker and context; accepts a zeroed or half-opened u. */
void pdcbb_ucx_close(pdcbb_ucx_t *u);

/* Convert a UCX status to the project's error code. */
pdcbb_err_t pdcbb_err_from_ucs(ucs_status_t st);

/* Fill a sockaddr_storage from a dotted IPv4/IPv6 address and port. */
pdcbb_err_t pdcbb_sockaddr_make(const char *ip, uint16_t port, struct sockaddr_storage *ss,
                                socklen_t *len);

/*
 * This node's own IPv4 address for listening: the first non-loopback address of the host name,
 * else of the first interface that is up, else 127.0.0.1.
 */
pdcbb_err_t pdcbb_node_address(char *out, size_t len);

/*
 * Connect an endpoint to a listener at ss (client-server sockaddr connection, peer error
 * handling reporting to cb with arg): the one way clients and daemons connect to a daemon.
 * *ep is NULL on failure.
 */
ucs_status_t pdcbb_ucx_connect(ucp_worker_h worker, const struct sockaddr_storage *ss,
                               socklen_t sslen, ucp_err_handler_cb_t cb, void *arg,
                               ucp_ep_h *ep);

/* Register cb for active messages with id (whole messages only). */
pdcbb_err_t pdcbb_ucx_set_am_handler(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t cb,
                                     void *arg, char *err, size_t errlen);

/*
 * Close ep (force: without flushing, for a failed peer) and progress the worker until the
 * close completes or timeout seconds pass; a close still pending then is cancelled.
 */
void pdcbb_ucx_ep_close(ucp_worker_h worker, ucp_ep_h ep, int force, double timeout);

/*
 * Send msg (len bytes, a message of pdcbb_proto.h) on ep, with a bulk part when bulk is not NULL:
 * then as PDCBB_AM_ID_DATA (msg as the UCX header, bulk as the data), else as PDCBB_AM_ID_MSG.
 * flags: UCP_AM_SEND_FLAG_*; cb(request, status, user_data) runs once the send completes, never
 * from this call. Returns ucp_am_send_nbx's request (UCS_PTR_IS_ERR on failure).
 */
void *pdcbb_ucx_send_msg(ucp_ep_h ep, const void *msg, size_t len, const void *bulk,
                         size_t bulk_len, uint32_t flags, ucp_send_nbx_callback_t cb,
                         void *user_data);

/*
 * Start receiving the rendezvous data of an active message (data, as the handler got it) into
 * buf (length bytes); cb(request, status, length, user_data) runs once it is received, never
 * from this call. Returns ucp_am_recv_data_nbx's request (UCS_PTR_IS_ERR on failure).
 */
void *pdcbb_ucx_recv_data(ucp_worker_h worker, void *data, void *buf, size_t length,
                          ucp_am_recv_data_nbx_callback_t cb, void *user_data);

/* Wait for a request from a *_nbx call to complete, progressing the worker. */
ucs_status_t pdcbb_ucx_wait(ucp_worker_h worker, void *request);

#endif
