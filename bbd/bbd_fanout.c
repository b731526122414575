/*
 * bbd_fanout.c - a search every daemon of the job answers, passed down a tree of daemons and
 * merged on the way up (TAG_SEARCH with tree set; docs/PROTOCOL.md, "Fan-out").
 *
 * A client sends one request to one daemon (its node's) instead of one to every daemon. That
 * daemon is the root of a tree over the job's daemons: with root t, daemon k has the virtual
 * rank v = (k - t) mod N, and the children of v are v*F+1 .. v*F+F (F the config key
 * table_fanout), so every daemon is reached once, in about log_F N rounds, each daemon sending
 * at most F requests and holding at most F+1 connections for it. A daemon searches its own
 * store, forwards the same request to its children (bbd_peer.c), and answers once they did,
 * with its ids and theirs merged (sorted, distinct). A child that fails makes the whole answer
 * fail with its status, logged with the child's rank.
 */
#include <stdlib.h>
#include <string.h>

#include "bbd.h"
#include "bbd_peer.h"
#include "pdcbb_log.h"

/* The answer being gathered for one request: this daemon's part and its children's. */
typedef struct fan_wait {
    bbd_conn_t *conn; /* the connection to answer on (referenced) */
    pdcbb_msg_hdr_t hdr;
    unsigned outstanding;
    pdcbb_err_t status; /* the first failure */
    uint64_t *ids;
    size_t n, cap;
    uint32_t more;
} fan_wait_t;

/* A request forwarded to a child. */
typedef struct fan_out {
    fan_wait_t *w;
    unsigned rank;
} fan_out_t;

static pdcbb_err_t wait_add(fan_wait_t *w, const uint64_t *ids, size_t n)
{
    if (w->n + n > w->cap) {
        size_t cap = (w->cap ? w->cap * 2 : 64) + n;
        uint64_t *g = realloc(w->ids, cap * sizeof(*g));
        if (g == NULL)
            return PDCBB_ERR_NOMEM;
        w->ids = g;
        w->cap = cap;
    }
    memcpy(w->ids + w->n, ids, n * sizeof(*ids));
    w->n += n;
    return PDCBB_OK;
}

/* Sorted, distinct, and at most what one reply holds (more set beyond). */
static void wait_merge(fan_wait_t *w)
{
    w->n = pdcbb_ids_sort_unique(w->ids, w->n);
    size_t limit = PDCBB_PAYLOAD_MAX / 8 - 16;
    if (w->n > limit) {
        w->n = limit;
        w->more = 1;
    }
}

static void wait_free(fan_wait_t *w)
{
    free(w->ids);
    free(w);
}

/* Every child answered: answer the deferred request. */
static void wait_finish(bbd_t *d, fan_wait_t *w)
{
    wait_merge(w);
    pdcbb_tag_search_rep_t p = {.ids = w->ids, .ids_count = (uint32_t)w->n, .more = w->more};
    bbd_server_answer(d, w->conn, &w->hdr, w->status, w->status == PDCBB_OK ? &p : NULL);
    wait_free(w);
}

static void child_done(bbd_t *d, void *arg, pdcbb_err_t status, const char *why, const uint8_t *msg,
                       size_t len)
{
    fan_out_t *o = arg;
    fan_wait_t *w = o->w;
    pdcbb_msg_hdr_t h;
    pdcbb_tag_search_rep_t p;
    if (status == PDCBB_OK && (status = pdcbb_hdr_decode(msg, len, &h)) == PDCBB_OK &&
        (status = pdcbb_body_decode(h.op, 1, msg + PDCBB_HDR_LEN, h.payload_len, &p)) == PDCBB_OK) {
        if (p.more)
            w->more = 1;
        status = wait_add(w, p.ids, p.ids_count);
        pdcbb_body_free(h.op, 1, &p);
    }
    if (status != PDCBB_OK) {
        PDCBB_WARN("%s through the tree: daemon %u: %s", pdcbb_op_name(w->hdr.op), o->rank,
                   why && *why ? why : pdcbb_strerror(status));
        if (w->status == PDCBB_OK)
            w->status = status;
    }
    free(o);
    if (--w->outstanding == 0)
        wait_finish(d, w);
}

pdcbb_err_t bbd_fanout_ids(bbd_req_t *r, unsigned op, const void *q, uint32_t tree, uint64_t **ids,
                           uint32_t *count, uint32_t *more)
{
    bbd_t *d = r->d;
    unsigned n = d->nservers;
    if (tree == 0)
        return PDCBB_OK; /* this daemon alone */
    if (tree > n) {
        PDCBB_WARN("%s: tree %u names no daemon (the job has %u)", pdcbb_op_name(op), tree, n);
        return PDCBB_ERR_INVAL;
    }
    unsigned root = tree - 1, fanout = bbd_tree_fanout(d);
    uint64_t v = (d->rank + n - root) % n;
    if (v * fanout + 1 >= n)
        return PDCBB_OK; /* a leaf: its own answer */
    if (r->conn == NULL || r->hdr == NULL)
        return PDCBB_ERR_UNSUPPORTED; /* no connection to answer on later */
    fan_wait_t *w = calloc(1, sizeof(*w));
    if (w == NULL || wait_add(w, *ids, *count) != PDCBB_OK) {
        if (w)
            wait_free(w);
        return PDCBB_ERR_NOMEM;
    }
    w->more = *more;
    for (uint64_t c = v * fanout + 1; c <= v * fanout + fanout && c < n; c++) {
        unsigned rank = (unsigned)((c + root) % n);
        char why[512] = "";
        fan_out_t *o = calloc(1, sizeof(*o));
        pdcbb_err_t rc = o ? PDCBB_OK : PDCBB_ERR_NOMEM;
        if (o) {
            o->w = w;
            o->rank = rank;
            rc = bbd_peer_send(d, rank, op, q, NULL, 0, PDCBB_KIND_QUERY, child_done, o, why,
                               sizeof(why));
        }
        if (rc != PDCBB_OK) {
            free(o);
            PDCBB_WARN("%s through the tree: daemon %u: %s", pdcbb_op_name(op), rank,
                       why[0] ? why : pdcbb_strerror(rc));
            if (w->status == PDCBB_OK)
                w->status = rc;
            continue;
        }
        w->outstanding++;
    }
    if (w->outstanding == 0) {
        /* No child could be asked: answered now. */
        pdcbb_err_t rc = w->status;
        wait_free(w);
        return rc;
    }
    w->conn = r->conn;
    w->hdr = *r->hdr;
    bbd_conn_ref(r->conn);
    r->deferred = 1;
    return PDCBB_OK;
}
