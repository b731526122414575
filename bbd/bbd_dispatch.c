/*
 * bbd_dispatch.c - from a received message to a reply: header, token, op and body checks,
 * then the op's handler inside one store transaction (bbd_dispatch), or, for metadata requests
 * that arrived together, the handlers of all of them inside one transaction with one commit
 * (bbd_dispatch_batch: group commit).
 *
 * Nothing a client sends is trusted: a message that fails any check gets an error reply that
 * names the cause (PDCBB_ERR_PROTO, _VERSION, _BAD_OP, _TRUNCATED, _TOO_BIG, _AUTH) and is
 * counted. On a UCX connection that did not prove the job token (HELLO, then AUTH: bbd_meta.c)
 * only those two are answered, anything else is _AUTH; shared-memory requests (conn NULL)
 * carry the token, checked per request; a message too broken to answer (no readable header) is
 * dropped and counted. A reply is encoded before the transaction commits and sent only after it
 * did, so a client is never told something is stored that is not.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bbd.h"
#include "pdcbb_log.h"

void *bbd_req_alloc(bbd_req_t *r, size_t size)
{
    bbd_scratch_t *s = malloc(sizeof(*s) + size);
    if (s == NULL)
        return NULL;
    s->next = r->scratch;
    r->scratch = s;
    return s + 1;
}

void *bbd_req_grow(bbd_req_t *r, void *v, size_t n, size_t need, size_t *cap, size_t elem,
                   size_t first)
{
    if (n + need <= *cap)
        return v;
    size_t ncap = *cap ? 2 * *cap : first;
    while (ncap < n + need)
        ncap *= 2;
    void *g = bbd_req_alloc(r, ncap * elem);
    if (g == NULL)
        return NULL;
    if (n)
        memcpy(g, v, n * elem);
    *cap = ncap;
    return g;
}

void bbd_req_scratch_free(bbd_req_t *r)
{
    while (r->scratch) {
        bbd_scratch_t *n = r->scratch->next;
        free(r->scratch);
        r->scratch = n;
    }
}

_Static_assert((int)PDCBB_OPTXN_READ == (int)PDCBB_TXN_READ &&
                   (int)PDCBB_OPTXN_WRITE == (int)PDCBB_TXN_WRITE &&
                   (int)PDCBB_OPTXN_REMOVE == (int)PDCBB_TXN_REMOVE,
               "a row's transaction is the store's mode");

int bbd_op_txn_mode(unsigned op)
{
    /* The row of PDCBB_OPS says (its transaction column); ops that only remove may use the
     * store's reserve (a full metadata store never blocks a delete). */
    const pdcbb_op_props_t *p = pdcbb_op_props(op);
    return p ? (int)p->txn : PDCBB_TXN_READ;
}

int bbd_op_is_write(unsigned op)
{
    return bbd_op_txn_mode(op) != PDCBB_TXN_READ;
}

/* One typed trampoline per op so handlers keep their real signatures. */
typedef pdcbb_err_t (*handler_fn)(bbd_req_t *r, const void *q, void *p);
#define X_TRAMPOLINE(OP, val, lname, RQ, RP, ...)                                                  \
    static pdcbb_err_t call_##lname(bbd_req_t *r, const void *q, void *p)                          \
    {                                                                                              \
        return bbd_op_##lname(r, q, p);                                                            \
    }
PDCBB_OPS(X_TRAMPOLINE)
#undef X_TRAMPOLINE

static const handler_fn handlers[PDCBB_OP_MAX_] = {
#define X_ENTRY(OP, val, lname, RQ, RP, ...) [val] = call_##lname,
    PDCBB_OPS(X_ENTRY)
#undef X_ENTRY
};

void bbd_reply_build(const pdcbb_msg_hdr_t *req, int status, const void *body, void **reply,
                     size_t *reply_len)
{
    pdcbb_msg_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.magic = PDCBB_PROTO_MAGIC;
    h.version = PDCBB_PROTO_VERSION;
    h.op = req->op;
    h.req_id = req->req_id;
    h.flags = PDCBB_MSG_FLAG_REPLY;
    h.status = status;
    /* Only successful replies carry a body; errors are the status alone. */
    if (pdcbb_msg_build(&h, status == PDCBB_OK ? body : NULL, reply, reply_len) != PDCBB_OK &&
        status == PDCBB_OK) {
        h.status = PDCBB_ERR_NOMEM;
        if (pdcbb_msg_build(&h, NULL, reply, reply_len) != PDCBB_OK)
            *reply = NULL;
    }
}

void bbd_bulk_release(bbd_t *d, bbd_bulk_t *b)
{
    if (b->map)
        munmap(b->map, b->map_len);
    else
        bbd_staging_put(d, b->ptr);
    memset(b, 0, sizeof(*b));
}

/*
 * Every check before the handler: header, reply flag, the connection's handshake (UCX) or the
 * token (shared memory), op, shutdown, body. Returns 1 with
 * h and q filled when the request is to be run, else 0 with *reply the error reply (or NULL
 * for a message too short to answer).
 */
static int request_prepare(bbd_t *d, const bbd_conn_t *conn, const uint8_t *msg, size_t len,
                           pdcbb_msg_hdr_t *hp, pdcbb_any_body_t *q, void **reply,
                           size_t *reply_len)
{
    pdcbb_msg_hdr_t h;
    pdcbb_err_t rc;
    *reply = NULL;
    d->stats.requests++;
    bbd_stats_recv(d, msg, len);
    rc = pdcbb_hdr_decode(msg, len, &h);
    if (rc != PDCBB_OK) {
        d->stats.proto_errors++;
        if (len < PDCBB_HDR_LEN) {
            PDCBB_WARN("dropped a %zu-byte message: too short for a header", len);
            return 0;
        }
        /* Answer with what we could read so the client learns why. */
        memset(&h, 0, sizeof(h));
        memcpy(&h.req_id, msg + 8, 8); /* little-endian on every supported host */
        memcpy(&h.op, msg + 6, 2);
        PDCBB_WARN("refused a message: %s", pdcbb_strerror(rc));
        bbd_reply_build(&h, rc, NULL, reply, reply_len);
        return 0;
    }
    if (h.flags & PDCBB_MSG_FLAG_REPLY) {
        d->stats.proto_errors++;
        PDCBB_WARN("refused a reply sent as a request (op %u)", h.op);
        bbd_reply_build(&h, PDCBB_ERR_PROTO, NULL, reply, reply_len);
        return 0;
    }
    if (conn == NULL ? !pdcbb_token_equal(h.token, d->token)
                     : !conn->authenticated && h.op != PDCBB_OP_HELLO && h.op != PDCBB_OP_AUTH) {
        /* A shared-memory channel's requests carry the token (its set-up checked the peer);
         * on UCX the header's token is not trusted: the connection proved it, or it did not. */
        d->stats.auth_failures++;
        PDCBB_WARN("refused %s request %llu: %s (%llu refused so far)", pdcbb_op_name(h.op),
                   (unsigned long long)h.req_id,
                   conn == NULL ? "wrong or missing job token"
                                : "the connection did not prove the job token (HELLO, AUTH)",
                   (unsigned long long)d->stats.auth_failures);
        bbd_reply_build(&h, PDCBB_ERR_AUTH, NULL, reply, reply_len);
        return 0;
    }
    if (!pdcbb_op_valid(h.op)) {
        d->stats.proto_errors++;
        PDCBB_WARN("refused request %llu: unknown op %u", (unsigned long long)h.req_id, h.op);
        bbd_reply_build(&h, PDCBB_ERR_BAD_OP, NULL, reply, reply_len);
        return 0;
    }
    if (d->stopping && bbd_op_is_write(h.op)) {
        bbd_reply_build(&h, PDCBB_ERR_SHUTDOWN, NULL, reply, reply_len);
        return 0;
    }
    rc = pdcbb_body_decode(h.op, 0, msg + PDCBB_HDR_LEN, h.payload_len, q);
    if (rc != PDCBB_OK) {
        d->stats.proto_errors++;
        PDCBB_WARN("refused %s request %llu: %s", pdcbb_op_name(h.op),
                   (unsigned long long)h.req_id, pdcbb_strerror(rc));
        bbd_reply_build(&h, rc, NULL, reply, reply_len);
        return 0;
    }
    *hp = h;
    return 1;
}

static void log_failure(const pdcbb_msg_hdr_t *h, pdcbb_err_t rc)
{
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND && rc != PDCBB_ERR_EXISTS)
        PDCBB_INFO("%s request %llu failed: %s", pdcbb_op_name(h->op),
                   (unsigned long long)h->req_id, pdcbb_errname(rc));
}

int bbd_dispatch(bbd_t *d, bbd_conn_t *conn, const uint8_t *msg, size_t len, const uint8_t *bulk,
                 size_t bulk_len, void **reply, size_t *reply_len, bbd_bulk_t *reply_bulk,
                 bbd_io_batch_t **io)
{
    pdcbb_msg_hdr_t h;
    pdcbb_any_body_t q, p;
    bbd_req_t r = {.d = d, .conn = conn, .in_bulk = bulk, .in_bulk_len = bulk_len};
    pdcbb_err_t rc;

    *reply = NULL;
    *io = NULL;
    memset(reply_bulk, 0, sizeof(*reply_bulk));
    if (bulk_len > 0)
        bbd_stats_recv_bulk(d, msg, len, bulk_len);
    if (!request_prepare(d, conn, msg, len, &h, &q, reply, reply_len))
        return 0;
    r.hdr = &h;

    int write = bbd_op_is_write(h.op);
    memset(&p, 0, sizeof(p));
    /* Before a search, some of the tag index's log goes into the index (bbd_tagidx.c). */
    bbd_tagidx_before(d, h.op);
    rc = d->store_ops->txn_begin(d->store, bbd_op_txn_mode(h.op), &r.txn);
    if (rc == PDCBB_OK) {
        rc = handlers[h.op](&r, &q, &p);
        bbd_reply_build(&h, rc, &p, reply, reply_len);
        if (rc == PDCBB_OK && write) {
            rc = d->store_ops->txn_commit(r.txn);
            if (rc != PDCBB_OK) {
                free(*reply);
                bbd_reply_build(&h, rc, NULL, reply, reply_len);
            }
        } else {
            d->store_ops->txn_abort(r.txn);
        }
    } else {
        bbd_reply_build(&h, rc, NULL, reply, reply_len);
    }
    log_failure(&h, rc);
    if (r.deferred && rc == PDCBB_OK) {
        /* The handler keeps the request and answers it later (bbd_server_answer). */
        free(*reply);
        *reply = NULL;
    }
    if (r.io) {
        if (rc == PDCBB_OK && r.io->nruns > 0) {
            /* The reply is built again when the writes are done, with their results. */
            r.io->hdr = h;
            *io = r.io;
            free(*reply);
            *reply = NULL;
        } else {
            d->data_inflight -= r.io->bytes;
            bbd_csum_abandon(d, &r.io->touch);
            bbd_io_batch_free(r.io);
        }
    }
    bbd_bulk_t out = {r.out_bulk, r.out_bulk_len, r.out_map, r.out_map_len};
    if (rc == PDCBB_OK && r.out_bulk)
        *reply_bulk = out;
    else
        bbd_bulk_release(d, &out);
    pdcbb_body_free(h.op, 0, &q);
    bbd_req_scratch_free(&r);
    return r.keep_bulk && rc == PDCBB_OK;
}

pdcbb_err_t bbd_dispatch_nested(bbd_req_t *r, const uint8_t *msg, size_t len, void **reply,
                                size_t *reply_len, bbd_bulk_t *reply_bulk)
{
    pdcbb_msg_hdr_t h;
    pdcbb_any_body_t q, p;
    *reply = NULL;
    memset(reply_bulk, 0, sizeof(*reply_bulk));
    pdcbb_err_t rc = pdcbb_hdr_decode(msg, len, &h);
    if (rc != PDCBB_OK)
        return rc;
    if (!pdcbb_op_gatherable(h.op) || bbd_op_is_write(h.op))
        return PDCBB_ERR_UNSUPPORTED;
    r->d->stats.requests++;
    memset(&p, 0, sizeof(p));
    bbd_req_t s = {.d = r->d, .conn = r->conn, .txn = r->txn, .hdr = &h};
    rc = pdcbb_body_decode(h.op, 0, msg + PDCBB_HDR_LEN, h.payload_len, &q);
    if (rc == PDCBB_OK) {
        rc = handlers[h.op](&s, &q, &p);
        if (s.deferred || s.io || s.keep_bulk) {
            /* Not a request answered at once (pdcbb_op_gatherable lists only those). */
            PDCBB_ERROR("%s inside GATHER was not answered at once", pdcbb_op_name(h.op));
            rc = PDCBB_ERR_INTERNAL;
        }
        pdcbb_body_free(h.op, 0, &q);
    }
    log_failure(&h, rc);
    bbd_reply_build(&h, rc, rc == PDCBB_OK ? &p : NULL, reply, reply_len);
    bbd_bulk_t out = {s.out_bulk, s.out_bulk_len, s.out_map, s.out_map_len};
    if (rc == PDCBB_OK && *reply != NULL)
        *reply_bulk = out;
    else
        bbd_bulk_release(r->d, &out);
    bbd_req_scratch_free(&s);
    return *reply ? PDCBB_OK : PDCBB_ERR_NOMEM;
}

int bbd_op_is_batchable(unsigned op)
{
    /* Handlers that only touch the store (no data files, no bulk parts, no I/O thread). */
    return pdcbb_op_has(op, PDCBB_OPF_BATCH);
}

/* Run one prepared request in its own transaction (the fallback of a failed batch). */
static void run_alone(bbd_t *d, bbd_batch_item_t *it, const pdcbb_msg_hdr_t *h, pdcbb_any_body_t *q)
{
    pdcbb_any_body_t p;
    bbd_req_t r = {.d = d};
    int write = bbd_op_is_write(h->op);
    memset(&p, 0, sizeof(p));
    pdcbb_err_t rc = d->store_ops->txn_begin(d->store, bbd_op_txn_mode(h->op), &r.txn);
    if (rc == PDCBB_OK) {
        rc = handlers[h->op](&r, q, &p);
        bbd_reply_build(h, rc, &p, &it->reply, &it->reply_len);
        if (rc == PDCBB_OK && write) {
            rc = d->store_ops->txn_commit(r.txn);
            if (rc != PDCBB_OK) {
                free(it->reply);
                bbd_reply_build(h, rc, NULL, &it->reply, &it->reply_len);
            }
        } else {
            d->store_ops->txn_abort(r.txn);
        }
    } else {
        bbd_reply_build(h, rc, NULL, &it->reply, &it->reply_len);
    }
    log_failure(h, rc);
    bbd_req_scratch_free(&r);
}

void bbd_dispatch_batch(bbd_t *d, bbd_batch_item_t *items, size_t n)
{
    pdcbb_msg_hdr_t *hs = malloc(n * sizeof(*hs));
    pdcbb_any_body_t *qs = malloc(n * sizeof(*qs));
    uint8_t *ready = calloc(n, 1);
    size_t nready = 0;
    int any_write = 0;
    if (hs == NULL || qs == NULL || ready == NULL) {
        /* Out of memory: one at a time, as if there were no batch. */
        free(hs), free(qs), free(ready);
        for (size_t i = 0; i < n; i++) {
            bbd_bulk_t bulk;
            bbd_io_batch_t *io;
            bbd_dispatch(d, NULL, items[i].msg, items[i].len, NULL, 0, &items[i].reply,
                         &items[i].reply_len, &bulk, &io);
            bbd_bulk_release(d, &bulk);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        items[i].reply = NULL;
        items[i].reply_len = 0;
        if (!request_prepare(d, NULL, items[i].msg, items[i].len, &hs[i], &qs[i], &items[i].reply,
                             &items[i].reply_len))
            continue;
        if (!bbd_op_is_batchable(hs[i].op)) {
            /* Callers pass only such ops: the message changed under them (a client writing
             * into its shared slot while the daemon copied it). */
            d->stats.proto_errors++;
            PDCBB_WARN("refused %s request %llu: not a metadata request (message changed while "
                       "being read?)", pdcbb_op_name(hs[i].op), (unsigned long long)hs[i].req_id);
            bbd_reply_build(&hs[i], PDCBB_ERR_PROTO, NULL, &items[i].reply, &items[i].reply_len);
            pdcbb_body_free(hs[i].op, 0, &qs[i]);
            continue;
        }
        ready[i] = 1;
        nready++;
        any_write |= bbd_op_is_write(hs[i].op);
    }
    /*
     * One transaction for them all, in order; one commit. A write request whose handler fails
     * may have changed the store half-way: then everything is rolled back and each request
     * runs alone, as it would have without the batch. Replies are built right after each
     * handler (values point into the store's pages) and go out after the commit.
     */
    int done = 0;
    pdcbb_txn_t *txn = NULL;
    if (nready > 1 &&
        d->store_ops->txn_begin(d->store, any_write ? PDCBB_TXN_WRITE : PDCBB_TXN_READ, &txn) ==
            PDCBB_OK) {
        int failed = 0;
        for (size_t i = 0; i < n && !failed; i++) {
            if (!ready[i])
                continue;
            pdcbb_any_body_t p;
            bbd_req_t r = {.d = d, .txn = txn};
            memset(&p, 0, sizeof(p));
            pdcbb_err_t rc = handlers[hs[i].op](&r, &qs[i], &p);
            if (rc != PDCBB_OK && bbd_op_is_write(hs[i].op))
                failed = 1;
            else
                bbd_reply_build(&hs[i], rc, &p, &items[i].reply, &items[i].reply_len);
            bbd_req_scratch_free(&r);
        }
        pdcbb_err_t crc = PDCBB_OK;
        if (failed)
            d->store_ops->txn_abort(txn);
        else if (any_write)
            crc = d->store_ops->txn_commit(txn);
        else
            d->store_ops->txn_abort(txn);
        if (failed || crc != PDCBB_OK) {
            for (size_t i = 0; i < n; i++)
                if (ready[i]) {
                    free(items[i].reply);
                    items[i].reply = NULL;
                }
            if (crc != PDCBB_OK)
                PDCBB_WARN("a batch of %zu requests failed to commit: %s; running them one by one",
                           nready, pdcbb_errname(crc));
        } else {
            d->stats.batches++;
            d->stats.batched_requests += nready;
            done = 1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!ready[i])
            continue;
        if (!done)
            run_alone(d, &items[i], &hs[i], &qs[i]);
        else
            log_failure(&hs[i], PDCBB_OK);
        pdcbb_body_free(hs[i].op, 0, &qs[i]);
    }
    free(hs);
    free(qs);
    free(ready);
}
