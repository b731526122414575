/*
 * bbd_harness.c - a daemon in the test's process (bbd_harness.h): the set-up of bbd_main.c
 * without UCX, and the path of one message through bbd_server.c's process_one and io_reap
 * without the event loop.
 */
#include "bbd_harness.h"

#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdcbb_log.h"

struct bbd_harness {
    bbd_t d;
    bbd_conn_t conn;
    char dir[PATH_MAX];
    uint64_t next_req_id;
    int store_open, data_open, io_started;
    /* The last reply and what its view points into. */
    bbd_harness_reply_t last;
    void *reply;
    bbd_bulk_t reply_bulk;
    pdcbb_any_body_t rep;
    unsigned rep_op;
    int rep_decoded;
};

static size_t rep_size(unsigned op)
{
    switch (op) {
#define X_SIZE(OP, val, lname, RQ, RP, ...)                                                        \
    case PDCBB_OP_##OP:                                                                            \
        return sizeof(pdcbb_##lname##_rep_t);
        PDCBB_OPS(X_SIZE)
#undef X_SIZE
    default:
        return 0;
    }
}

static void last_release(bbd_harness_t *h)
{
    if (h->rep_decoded)
        pdcbb_body_free(h->rep_op, 1, &h->rep);
    h->rep_decoded = 0;
    free(h->reply);
    h->reply = NULL;
    bbd_bulk_release(&h->d, &h->reply_bulk);
    memset(&h->last, 0, sizeof(h->last));
    h->last.result = BBD_HARNESS_NO_REPLY;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    if (remove(path) != 0)
        fprintf(stderr, "bbd_harness: cannot remove %s: %s\n", path, strerror(errno));
    return 0;
}

void bbd_harness_close(bbd_harness_t *h)
{
    if (h == NULL)
        return;
    bbd_t *d = &h->d;
    last_release(h);
    /* As bbd_server.c when a connection ends, then bbd_main.c's shutdown. */
    bbd_lock_conn_gone(d, &h->conn);
    bbd_data_direct_release(d, &h->conn);
    bbd_table_free(d);
    bbd_server_stop(d);
    if (h->io_started)
        bbd_io_stop(d);
    if (h->data_open)
        bbd_data_close(d);
    if (h->store_open)
        d->store_ops->close(d->store);
    if (h->dir[0])
        nftw(h->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    bbd_staging_free(d);
    free(h);
}

pdcbb_err_t bbd_harness_open(const pdcbb_config_t *cfg, bbd_harness_t **out)
{
    char err[PATH_MAX + 512] = "", path[PATH_MAX];
    pdcbb_err_t rc;
    bbd_harness_t *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return PDCBB_ERR_NOMEM;
    h->last.result = BBD_HARNESS_NO_REPLY;
    bbd_t *d = &h->d;

    const char *log = getenv("PDCBB_HARNESS_LOG");
    int level = log ? pdcbb_log_level_parse(log) : -1;
    pdcbb_log_set_ident("bbd_harness");
    pdcbb_log_set_level(level >= 0 ? (pdcbb_log_level_t)level : PDCBB_LOG_ERROR);

    const char *tmp = getenv("TMPDIR");
    snprintf(h->dir, sizeof(h->dir), "%s/bbd_harness.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(h->dir) == NULL || realpath(h->dir, d->job_dir) == NULL) {
        rc = pdcbb_err_from_errno(errno);
        snprintf(err, sizeof(err), "cannot create %s: %s", h->dir, strerror(errno));
        h->dir[0] = '\0';
        goto fail;
    }
    if (cfg)
        d->cfg = *cfg;
    else
        pdcbb_config_init(&d->cfg);
    d->rank = 0;
    d->nservers = 1;
    d->job_id = 1;
    snprintf(d->node, sizeof(d->node), "harness");
    /* A known token, also written where the job's other tools look for it. */
    for (int i = 0; i < PDCBB_TOKEN_LEN; i++)
        d->token[i] = (uint8_t)(0xa5 ^ (i * 37));
    if ((rc = pdcbb_jobdir_path(d->job_dir, "token", path, sizeof(path))) != PDCBB_OK ||
        (rc = pdcbb_token_write(path, d->token)) != PDCBB_OK) {
        snprintf(err, sizeof(err), "cannot write the token: %s", pdcbb_strerror(rc));
        goto fail;
    }
    pdcbb_jobdir_rank_path(d->job_dir, 0, "pid", d->pid_path, sizeof(d->pid_path));
    pdcbb_jobdir_rank_path(d->job_dir, 0, "endpoint", d->endpoint_path, sizeof(d->endpoint_path));
    pdcbb_jobdir_rank_path(d->job_dir, 0, "", d->data_dir, sizeof(d->data_dir));
    if (mkdir(d->data_dir, 0700) != 0) {
        rc = pdcbb_err_from_errno(errno);
        snprintf(err, sizeof(err), "cannot create %s: %s", d->data_dir, strerror(errno));
        goto fail;
    }
    d->store_ops = &pdcbb_store_lmdb;
    if ((rc = d->store_ops->open(d->data_dir, d->cfg.lmdb_map_size, &d->store, err, sizeof(err))) !=
        PDCBB_OK)
        goto fail;
    h->store_open = 1;
    if ((rc = bbd_stage_in(d, err, sizeof(err))) != PDCBB_OK)
        goto fail;
    if ((rc = bbd_data_open(d, err, sizeof(err))) != PDCBB_OK)
        goto fail;
    h->data_open = 1;
    if ((rc = bbd_io_start(d)) != PDCBB_OK) {
        snprintf(err, sizeof(err), "cannot start the I/O thread: %s", pdcbb_strerror(rc));
        goto fail;
    }
    h->io_started = 1;
    bbd_stats_start(d);
    h->conn.id = ++d->next_conn_id;
    h->conn.d = d;
    d->stats.connections++;
    /* The connection proves the token as every UCX client does (HELLO, AUTH). */
    if ((rc = bbd_harness_handshake(h, d->token)) != PDCBB_OK) {
        snprintf(err, sizeof(err), "the handshake failed: %s", pdcbb_errname(rc));
        goto fail;
    }
    *out = h;
    return PDCBB_OK;

fail:
    fprintf(stderr, "bbd_harness_open: %s\n", err);
    bbd_harness_close(h);
    return rc;
}

bbd_t *bbd_harness_daemon(bbd_harness_t *h)
{
    return &h->d;
}

bbd_conn_t *bbd_harness_conn(bbd_harness_t *h)
{
    return &h->conn;
}

const char *bbd_harness_dir(const bbd_harness_t *h)
{
    return h->d.job_dir;
}

const bbd_harness_reply_t *bbd_harness_last(const bbd_harness_t *h)
{
    return &h->last;
}

pdcbb_err_t bbd_harness_msg(bbd_harness_t *h, unsigned op, const void *req, uint8_t **msg,
                            size_t *len)
{
    pdcbb_msg_hdr_t hdr;
    pdcbb_any_body_t empty;
    void *out;
    if (req == NULL) {
        memset(&empty, 0, sizeof(empty));
        req = &empty;
    }
    /* No token: the connection proved it (bbd_harness_handshake), as on UCX. */
    pdcbb_request_hdr(&hdr, op, ++h->next_req_id, NULL);
    pdcbb_err_t rc = pdcbb_msg_build(&hdr, req, &out, len);
    if (rc == PDCBB_OK)
        *msg = out;
    return rc;
}

/* Run the I/O batch of a DATA_WRITE to its end and build its reply, as io_drain/io_reap do. */
static void *io_wait(bbd_harness_t *h, size_t *reply_len)
{
    bbd_t *d = &h->d;
    void *reply = NULL;
    while (bbd_io_in_flight(d) > 0) {
        struct pollfd pfd = {.fd = bbd_io_event_fd(d), .events = POLLIN};
        poll(&pfd, 1, 100);
        bbd_io_batch_t *b = bbd_io_take_done(d);
        while (b) {
            bbd_io_batch_t *next = b->next;
            bbd_conn_t *c = b->conn;
            void *r;
            size_t rl;
            bbd_io_batch_end(&h->d, b, &r, &rl);
            free(reply); /* one batch is in flight at a time: there is no other */
            reply = r;
            *reply_len = rl;
            c->refs--;
            b = next;
        }
    }
    return reply;
}

/* Check the form of the reply to the len-byte request msg and decode it into h->last. */
static int reply_check(bbd_harness_t *h, const uint8_t *msg, size_t len, void *reply,
                       size_t reply_len)
{
    pdcbb_msg_hdr_t rh;
    h->reply = reply;
    h->last.msg = reply;
    h->last.len = reply_len;
    h->last.bulk = h->reply_bulk.ptr;
    h->last.bulk_len = h->reply_bulk.ptr ? h->reply_bulk.len : 0;
    if (reply == NULL)
        return BBD_HARNESS_NO_REPLY;
    if (pdcbb_hdr_decode(reply, reply_len, &rh) != PDCBB_OK || !(rh.flags & PDCBB_MSG_FLAG_REPLY))
        return BBD_HARNESS_BAD_REPLY;
    h->last.hdr = rh;
    if (len >= PDCBB_HDR_LEN) {
        uint64_t id;
        uint16_t op;
        memcpy(&id, msg + 8, 8); /* little-endian hosts, as bbd_dispatch.c */
        memcpy(&op, msg + 6, 2);
        if (rh.req_id != id || rh.op != op)
            return BBD_HARNESS_BAD_REPLY;
    }
    if (rh.status < 0)
        return BBD_HARNESS_BAD_REPLY;
    if (rh.status != PDCBB_OK)
        /* Errors are the status alone. */
        return rh.payload_len == 0 && h->last.bulk == NULL ? rh.status : BBD_HARNESS_BAD_REPLY;
    if (!pdcbb_op_valid(rh.op) ||
        pdcbb_body_decode(rh.op, 1, (const uint8_t *)reply + PDCBB_HDR_LEN, rh.payload_len,
                          &h->rep) != PDCBB_OK)
        return BBD_HARNESS_BAD_REPLY;
    h->rep_op = rh.op;
    h->rep_decoded = 1;
    return PDCBB_OK;
}

int bbd_harness_raw(bbd_harness_t *h, const void *msg, size_t len, const void *bulk,
                    size_t bulk_len)
{
    bbd_t *d = &h->d;
    void *reply = NULL, *staging = NULL;
    size_t reply_len = 0;
    bbd_io_batch_t *io = NULL;
    last_release(h);
    if (bulk == NULL)
        bulk_len = 0;
    /* The server's copies: the control message malloc'ed to its size, the bulk part in a
     * staging buffer (am_recv_cb, am_data_cb). */
    uint8_t *copy = malloc(len ? len : 1);
    if (copy == NULL ||
        (bulk && (staging = bbd_staging_get(d, bulk_len ? bulk_len : 1, 1)) == NULL)) {
        free(copy);
        return h->last.result = BBD_HARNESS_ENCODE;
    }
    if (len)
        memcpy(copy, msg, len);
    if (bulk_len)
        memcpy(staging, bulk, bulk_len);
    /* Then process_one. */
    if (bbd_dispatch(d, &h->conn, copy, len, staging, staging ? bulk_len : 0, &reply, &reply_len,
                     &h->reply_bulk, &io))
        staging = NULL; /* kept by the handler (FORWARD), which releases it */
    if (io) {
        /* The writes run on the I/O thread; it keeps the data and the connection. */
        io->conn = &h->conn;
        h->conn.refs++;
        io->staging = staging;
        staging = NULL;
        bbd_io_submit(d, io);
        reply = io_wait(h, &reply_len);
    }
    bbd_staging_put(d, staging);
    if (reply)
        bbd_stats_sent(d, reply, reply_len, h->reply_bulk.ptr ? h->reply_bulk.len : 0);
    h->last.result = reply_check(h, copy, len, reply, reply_len);
    free(copy);
    return h->last.result;
}

int bbd_harness_call(bbd_harness_t *h, unsigned op, const void *req, const void *bulk,
                     size_t bulk_len, void *rep)
{
    uint8_t *msg;
    size_t len;
    if (bbd_harness_msg(h, op, req, &msg, &len) != PDCBB_OK) {
        last_release(h);
        return h->last.result = BBD_HARNESS_ENCODE;
    }
    int rc = bbd_harness_raw(h, msg, len, bulk, bulk_len);
    free(msg);
    if (rc == PDCBB_OK && rep != NULL && h->rep_op == op)
        memcpy(rep, &h->rep, rep_size(op));
    return rc;
}

int bbd_harness_handshake(bbd_harness_t *h, const uint8_t *token)
{
    uint8_t cn[PDCBB_AUTH_NONCE_LEN], expected[PDCBB_AUTH_PROOF_LEN], proof[PDCBB_AUTH_PROOF_LEN];
    if (pdcbb_auth_nonce(cn) != PDCBB_OK)
        return PDCBB_ERR_INTERNAL;
    pdcbb_hello_req_t q = {.client_pid = (uint32_t)getpid(),
                           .job_id = h->d.job_id,
                           .client_node = "harness-client",
                           .nonce = cn,
                           .nonce_len = sizeof(cn)};
    pdcbb_hello_rep_t rep;
    int rc = bbd_harness_call(h, PDCBB_OP_HELLO, &q, NULL, 0, &rep);
    if (rc != PDCBB_OK)
        return rc;
    if (rep.nonce_len != PDCBB_AUTH_NONCE_LEN)
        return BBD_HARNESS_BAD_REPLY;
    /* The daemon proves the job's token (whatever token this side holds). */
    pdcbb_auth_daemon_proof(h->d.token, cn, rep.nonce, expected);
    if (!pdcbb_auth_proof_ok(expected, rep.proof, rep.proof_len))
        return BBD_HARNESS_BAD_REPLY;
    pdcbb_auth_client_proof(token, cn, rep.nonce, proof);
    pdcbb_auth_req_t aq = {.proof = proof, .proof_len = sizeof(proof)};
    return bbd_harness_call(h, PDCBB_OP_AUTH, &aq, NULL, 0, NULL);
}
