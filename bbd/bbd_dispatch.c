/*
 * bbd_dispatch.c - from a received message to a reply: header, token, op and body checks,
 * then the op's handler inside one store transaction.
 *
 * Nothing a client sends is trusted: a message that fails any check gets an error reply that
 * names the cause (PDCBB_ERR_PROTO, _VERSION, _BAD_OP, _TRUNCATED, _TOO_BIG, _AUTH) and is
 * counted; a message too broken to answer (no readable header) is dropped and counted. A
 * reply is encoded before the transaction commits and sent only after it did, so a client is
 * never told something is stored that is not.
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

void bbd_req_scratch_free(bbd_req_t *r)
{
    while (r->scratch) {
        bbd_scratch_t *n = r->scratch->next;
        free(r->scratch);
        r->scratch = n;
    }
}

int bbd_op_is_write(unsigned op)
{
    switch (op) {
    case PDCBB_OP_CONT_CREATE:
    case PDCBB_OP_CONT_DEL:
    case PDCBB_OP_CONT_PERSIST:
    case PDCBB_OP_CONT_OBJIDS_PUT:
    case PDCBB_OP_CONT_OBJIDS_DEL:
    case PDCBB_OP_TAG_PUT:
    case PDCBB_OP_TAG_DEL:
    case PDCBB_OP_OBJ_CREATE:
    case PDCBB_OP_OBJ_DEL:
    case PDCBB_OP_OBJ_SET_DIMS:
    case PDCBB_OP_DATA_WRITE:
    case PDCBB_OP_DATA_DIRECT:
    case PDCBB_OP_DATA_DROP:
    case PDCBB_OP_DATA_RESIZE:
    case PDCBB_OP_MAP_PUT: return 1;
    default: return 0;
    }
}

/* One typed trampoline per op so handlers keep their real signatures. */
typedef pdcbb_err_t (*handler_fn)(bbd_req_t *r, const void *q, void *p);
#define X_TRAMPOLINE(OP, val, lname, RQ, RP)                                                      \
    static pdcbb_err_t call_##lname(bbd_req_t *r, const void *q, void *p)                         \
    {                                                                                             \
        return bbd_op_##lname(r, q, p);                                                           \
    }
PDCBB_OPS(X_TRAMPOLINE)
#undef X_TRAMPOLINE

static const handler_fn handlers[PDCBB_OP_MAX_] = {
#define X_ENTRY(OP, val, lname, RQ, RP) [val] = call_##lname,
    PDCBB_OPS(X_ENTRY)
#undef X_ENTRY
};

/* The largest request/reply struct, so one stack buffer fits any op. */
typedef union any_body {
#define X_MEMBER(OP, val, lname, RQ, RP)                                                          \
    pdcbb_##lname##_req_t lname##_req;                                                            \
    pdcbb_##lname##_rep_t lname##_rep;
    PDCBB_OPS(X_MEMBER)
#undef X_MEMBER
} any_body_t;

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

void bbd_bulk_release(bbd_bulk_t *b)
{
    if (b->map)
        munmap(b->map, b->map_len);
    else
        bbd_staging_put(b->ptr);
    memset(b, 0, sizeof(*b));
}

void bbd_dispatch(bbd_t *d, bbd_conn_t *conn, const uint8_t *msg, size_t len,
                  const uint8_t *bulk, size_t bulk_len, void **reply, size_t *reply_len,
                  bbd_bulk_t *reply_bulk, bbd_io_batch_t **io)
{
    pdcbb_msg_hdr_t h;
    any_body_t q, p;
    bbd_req_t r = {.d = d, .conn = conn, .in_bulk = bulk, .in_bulk_len = bulk_len};
    pdcbb_err_t rc;

    *reply = NULL;
    *io = NULL;
    memset(reply_bulk, 0, sizeof(*reply_bulk));
    d->stats.requests++;
    rc = pdcbb_hdr_decode(msg, len, &h);
    if (rc != PDCBB_OK) {
        d->stats.proto_errors++;
        if (len < PDCBB_HDR_LEN) {
            PDCBB_WARN("dropped a %zu-byte message: too short for a header", len);
            return;
        }
        /* Answer with what we could read so the client learns why. */
        memset(&h, 0, sizeof(h));
        memcpy(&h.req_id, msg + 8, 8); /* little-endian on every supported host */
        memcpy(&h.op, msg + 6, 2);
        PDCBB_WARN("refused a message: %s", pdcbb_strerror(rc));
        bbd_reply_build(&h, rc, NULL, reply, reply_len);
        return;
    }
    if (h.flags & PDCBB_MSG_FLAG_REPLY) {
        d->stats.proto_errors++;
        PDCBB_WARN("refused a reply sent as a request (op %u)", h.op);
        bbd_reply_build(&h, PDCBB_ERR_PROTO, NULL, reply, reply_len);
        return;
    }
    if (!pdcbb_token_equal(h.token, d->token)) {
        d->stats.auth_failures++;
        PDCBB_WARN("refused %s request %llu: wrong or missing job token (%llu refused so far)",
                   pdcbb_op_name(h.op), (unsigned long long)h.req_id,
                   (unsigned long long)d->stats.auth_failures);
        bbd_reply_build(&h, PDCBB_ERR_AUTH, NULL, reply, reply_len);
        return;
    }
    if (!pdcbb_op_valid(h.op)) {
        d->stats.proto_errors++;
        PDCBB_WARN("refused request %llu: unknown op %u", (unsigned long long)h.req_id, h.op);
        bbd_reply_build(&h, PDCBB_ERR_BAD_OP, NULL, reply, reply_len);
        return;
    }
    if (d->stopping && bbd_op_is_write(h.op)) {
        bbd_reply_build(&h, PDCBB_ERR_SHUTDOWN, NULL, reply, reply_len);
        return;
    }
    rc = pdcbb_body_decode(h.op, 0, msg + PDCBB_HDR_LEN, h.payload_len, &q);
    if (rc != PDCBB_OK) {
        d->stats.proto_errors++;
        PDCBB_WARN("refused %s request %llu: %s", pdcbb_op_name(h.op),
                   (unsigned long long)h.req_id, pdcbb_strerror(rc));
        bbd_reply_build(&h, rc, NULL, reply, reply_len);
        return;
    }

    int write = bbd_op_is_write(h.op);
    memset(&p, 0, sizeof(p));
    rc = d->store_ops->txn_begin(d->store, write, &r.txn);
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
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND && rc != PDCBB_ERR_EXISTS)
        PDCBB_INFO("%s request %llu failed: %s", pdcbb_op_name(h.op),
                   (unsigned long long)h.req_id, pdcbb_errname(rc));
    if (r.io) {
        if (rc == PDCBB_OK && r.io->nruns > 0) {
            /* The reply is built again when the writes are done, with their results. */
            r.io->hdr = h;
            *io = r.io;
            free(*reply);
            *reply = NULL;
        } else {
            d->data_inflight -= r.io->bytes;
            bbd_io_batch_free(r.io);
        }
    }
    bbd_bulk_t out = {r.out_bulk, r.out_bulk_len, r.out_map, r.out_map_len};
    if (rc == PDCBB_OK && r.out_bulk)
        *reply_bulk = out;
    else
        bbd_bulk_release(&out);
    pdcbb_body_free(h.op, 0, &q);
    bbd_req_scratch_free(&r);
}
