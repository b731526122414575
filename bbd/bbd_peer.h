/*
 * bbd_peer.h - a daemon as the client of other daemons: endpoints to the other daemons of the
 * job (addresses and each node's token from the job table) and requests whose replies come
 * back asynchronously into the single-threaded event loop.
 *
 * bbd_peer_send sends a request (with a bulk part, if any) and calls done once, from the event
 * loop (bbd_peer_poll), with the reply or with the failure: a send that failed, a peer that went
 * away, a peer that could not prove its node's token. A new endpoint first does the handshake
 * (HELLO, AUTH: the peer proves its node's token, then this daemon), driven by the same loop;
 * requests wait for it and carry no token. bbd_peer_on_reply (the active-message callback) only
 * copies a reply that answers one of these requests (returns 1) and returns 0 for anything else.
 */
#ifndef BBD_PEER_H
#define BBD_PEER_H

#include "bbd.h"

typedef struct bbd_peer {
    ucp_ep_h ep;
    int failed;
    ucs_status_t fail_status;
    char node[PDCBB_NODE_NAME_MAX];
    char ip[64]; /* the address connected to */
    uint16_t port;
    uint8_t token[PDCBB_TOKEN_LEN]; /* its node's token (each node of a Slurm job has its own) */
    int auth_state;                 /* the handshake on ep: BBD_PEER_* below */
    uint8_t nonce[PDCBB_AUTH_NONCE_LEN]; /* this daemon's nonce of the handshake */
} bbd_peer_t;

/* A peer's handshake (common/pdcbb_auth.h): requests sent before it is done wait for it. */
enum { BBD_PEER_NEW = 0, BBD_PEER_HELLO = 1, BBD_PEER_AUTH = 2, BBD_PEER_READY = 3 };

/* The connected peer of daemon rank (connecting if needed), or NULL with a message in err. */
bbd_peer_t *bbd_peer_get(bbd_t *d, unsigned rank, char *err, size_t errlen);
/* The node name of rank once connected, else "?". */
const char *bbd_peer_node(bbd_t *d, unsigned rank);
/* 1 if the endpoint of rank failed (its requests get no more replies). */
int bbd_peer_failed(bbd_t *d, unsigned rank, ucs_status_t *status);
/* A new request header for op from d to a peer: magic, version, an unguessable request id, no
 * token (the connection's handshake proved it). Needs d->peers (bbd_peer_get). */
void bbd_peer_hdr(bbd_t *d, unsigned op, pdcbb_msg_hdr_t *h);

/*
 * The outcome of a request: status is the transport's failure or the peer's reply status; when
 * a reply came (always on PDCBB_OK) msg (len bytes, header included) is the reply, else NULL;
 * valid during the call only. A reply's bulk part is bbd_peer_reply_bulk's.
 */
typedef void (*bbd_peer_done_fn)(bbd_t *d, void *arg, pdcbb_err_t status, const char *why,
                                 const uint8_t *msg, size_t len);
/*
 * Send body of op (bulk: bulk_len bytes that must stay valid until done is called) to daemon
 * rank; stats count it under kind. Returns PDCBB_OK when done will be called, else an error
 * with why (done is not called).
 */
pdcbb_err_t bbd_peer_send(bbd_t *d, unsigned rank, unsigned op, const void *body,
                          const void *bulk, size_t bulk_len, int kind, bbd_peer_done_fn done,
                          void *arg, char *why, size_t whylen);
/*
 * Send msg, a whole request (header and body) of another sender, to daemon rank as this
 * daemon's: the header's request id is replaced with one of this daemon's and its token
 * cleared (FORWARD, bbd_forward.c). It fails with PDCBB_ERR_TIMEOUT when no reply came within
 * request_timeout. As bbd_peer_send otherwise.
 */
pdcbb_err_t bbd_peer_send_msg(bbd_t *d, unsigned rank, const uint8_t *msg, size_t len,
                              const void *bulk, size_t bulk_len, int kind, bbd_peer_done_fn done,
                              void *arg, char *why, size_t whylen);
/* In a done callback: the bulk part of the reply (bbd_staging_get memory that the caller now
 * owns; NULL, *len 0 if it had none). */
void *bbd_peer_reply_bulk(bbd_t *d, size_t *len);
int bbd_peer_on_reply(bbd_t *d, const void *data, size_t len);
/* The data active-message callback's part: a reply with a bulk part (a forwarded read's) to one
 * of this daemon's requests is taken (received into staging memory; returns 1), else 0. */
int bbd_peer_on_data_reply(bbd_t *d, const void *header, size_t header_len, void *data, size_t len,
                           int rndv);
/* Handle the replies that arrived and the requests of failed peers; returns how many. */
int bbd_peer_poll(bbd_t *d);
/* Close the endpoints (shutdown); d->peers is freed unless requests are still out. */
void bbd_peer_stop(bbd_t *d);

#endif
