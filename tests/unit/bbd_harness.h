/*
 * bbd_harness.h - a pdc_bbd daemon inside a test process: the real dispatcher, handlers, LMDB
 * store, data files and I/O thread, without UCX, processes or a job.
 *
 * bbd_harness_open sets up what bbd_main.c would for rank 0 of 1 on a fresh temporary directory
 * under $TMPDIR (the job directory, with a token file and the rank's data directory), except the
 * UCX worker and listener: the store is opened, the data files (bbd_data_open) and the I/O
 * thread started, and the connection record does the real handshake (HELLO, AUTH). A request
 * then goes straight to bbd_dispatch() on that plain connection record (no endpoint), as
 * bbd_server.c would pass it: its bulk part in a staging buffer, a DATA_WRITE's
 * I/O batch run to completion and answered as the event loop does (bbd_io_batch_end). Replies
 * are checked for form (header, request id, op, reply flag, a body that decodes) and decoded.
 *
 * Not covered: the event loop's queue and ordering, shared-memory channels, group commit
 * (bbd_dispatch_batch can be called on bbd_harness_daemon directly), replies sent later
 * (a lock granted after a wait, broadcast and append replies: they go to a connection without
 * an endpoint and are dropped), and requests to other daemons (there are none: those ops answer
 * with an error).
 *
 * Threads and state: everything a daemon keeps is in its bbd_t (each module's state behind a
 * pointer of its own), so several harnesses may be open at once in a process, each a daemon of
 * its own with its own directory, store, I/O thread, descriptors, checksum state, locks and
 * buffers (tests/unit/test_bbd_two.c). Call each from one thread. The process's log level is
 * set to errors only, or to $PDCBB_HARNESS_LOG (a level name: warn, info, debug) when set.
 */
#ifndef BBD_HARNESS_H
#define BBD_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "bbd.h"

/* Results of bbd_harness_call and bbd_harness_raw besides a reply's status (>= 0). */
enum {
    BBD_HARNESS_NO_REPLY = -1,  /* the daemon answered nothing (dropped, or answers later) */
    BBD_HARNESS_BAD_REPLY = -2, /* the reply is malformed: a daemon bug */
    BBD_HARNESS_ENCODE = -3     /* the request could not be encoded (a test bug) */
};

typedef struct bbd_harness bbd_harness_t;

/* The last reply; pointers valid until the next call or close. */
typedef struct bbd_harness_reply {
    int result;          /* what the call returned */
    pdcbb_msg_hdr_t hdr; /* the reply's header (zero without a reply) */
    const uint8_t *msg;  /* the whole reply message, len bytes (NULL: none) */
    size_t len;
    const uint8_t *bulk; /* the reply's bulk part (DATA_READ...), bulk_len bytes, or NULL */
    size_t bulk_len;
} bbd_harness_reply_t;

/*
 * Open a daemon on a fresh directory. cfg: the configuration (copied), or NULL for the
 * defaults (pdcbb_config_init). Returns PDCBB_OK with *out (close with bbd_harness_close), or
 * the error of the step that failed (printed on stderr): errno-mapped errors of the directory,
 * the store's and bbd_data_open's errors, the I/O thread's.
 */
pdcbb_err_t bbd_harness_open(const pdcbb_config_t *cfg, bbd_harness_t **out);
/* Stop the daemon as bbd_main.c does, remove the directory, free everything; accepts NULL. */
void bbd_harness_close(bbd_harness_t *h);

/* The daemon state (for counters, or to call daemon functions directly). */
bbd_t *bbd_harness_daemon(bbd_harness_t *h);
/* The connection requests come on (it has no endpoint: replies sent to it later are dropped). */
bbd_conn_t *bbd_harness_conn(bbd_harness_t *h);
/* The job directory (removed by bbd_harness_close). */
const char *bbd_harness_dir(const bbd_harness_t *h);

/*
 * Build the request message of op with body req (the op's pdcbb_<op>_req_t; NULL for an empty
 * body) as a UCX client would: header with a zero token (the connection proved it) and a fresh
 * request id. *msg is malloc'ed (the caller frees it). PDCBB_OK or the codec's error.
 */
pdcbb_err_t bbd_harness_msg(bbd_harness_t *h, unsigned op, const void *req, uint8_t **msg,
                            size_t *len);

/*
 * Send op with body req (as bbd_harness_msg) and bulk part bulk (bulk_len bytes; NULL: none)
 * and decode the reply into rep (the op's pdcbb_<op>_rep_t, or NULL) when its status is
 * PDCBB_OK. Returns the reply's status (a pdcbb_err_t), or a BBD_HARNESS_* result. rep's
 * strings, blobs and arrays are valid until the next call or close.
 */
int bbd_harness_call(bbd_harness_t *h, unsigned op, const void *req, const void *bulk,
                     size_t bulk_len, void *rep);

/*
 * Send the len bytes at msg as they are (copied into a buffer of exactly len bytes, so a read
 * past them is caught by ASan), with bulk part bulk as bbd_harness_call. Returns the reply's
 * status or a BBD_HARNESS_* result; bbd_harness_last gives the reply.
 */
int bbd_harness_raw(bbd_harness_t *h, const void *msg, size_t len, const void *bulk,
                    size_t bulk_len);

/*
 * The connection handshake (common/pdcbb_auth.h) with token (in, PDCBB_TOKEN_LEN bytes): HELLO
 * with a fresh nonce, the daemon's proof checked against the daemon's own token, then AUTH
 * with the proof made from token. Returns what AUTH returned (PDCBB_OK: the connection is
 * authenticated; PDCBB_ERR_AUTH for a wrong token), or HELLO's failure, or
 * BBD_HARNESS_BAD_REPLY when the daemon's proof is wrong. bbd_harness_open does it with the
 * job's token; bbd_harness_msg builds requests with a zero token, as UCX clients send them.
 */
int bbd_harness_handshake(bbd_harness_t *h, const uint8_t *token);

/* The last reply (never NULL). */
const bbd_harness_reply_t *bbd_harness_last(const bbd_harness_t *h);

#endif
