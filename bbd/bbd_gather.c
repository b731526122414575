/*
 * bbd_gather.c - GATHER: requests for many daemons of the job carried down the tree of daemons
 * in one message per edge, and their replies carried back up in one message per edge
 * (common/pdcbb_proto.h, docs/PROTOCOL.md "Fan-out").
 *
 * A client that asks every daemon holding part of a spread object (QUERY_EVAL, QUERY_VALUES)
 * or every daemon of the job (STATS: `pdcbb stats`) sends one GATHER to a daemon of its node,
 * the root of the tree (the same tree as TAG_SEARCH's, bbd_fanout.c: virtual rank
 * v = (k - root) mod N, children v*F+1 .. v*F+F, F the key table_fanout). Each daemon checks
 * that every request it was given is for itself or a daemon below it, answers its own one
 * inside its transaction (bbd_dispatch_nested), sends each child one GATHER with the requests of
 * that child's subtree, and answers once every child did with all the replies: its own, then
 * its children's, with their bulk parts one after the other. A child that fails (unreachable,
 * no reply within request_timeout, a malformed reply) does not fail the rest: each daemon it
 * was to answer for gets an error reply with that status, as the client would have seen
 * asking it directly.
 */
#include <stdlib.h>
#include <string.h>

#include "bbd.h"
#include "bbd_peer.h"
#include "pdcbb_log.h"
#include "pdcbb_stats.h"

/* The tree: virtual ranks relative to the root. */
typedef struct tree {
    unsigned n, root, fanout;
} tree_t;

/* One daemon's reply, as gathered. */
typedef struct part {
    uint64_t rank;
    void *msg; /* the whole reply, malloc'ed */
    size_t len;
    bbd_bulk_t bulk; /* its bulk part (released once copied) */
} part_t;

/* The replies being gathered for one GATHER. */
typedef struct gather_wait {
    bbd_t *d;
    bbd_conn_t *conn; /* the connection to answer on (referenced) */
    pdcbb_msg_hdr_t hdr;
    tree_t t;
    unsigned outstanding;
    part_t *parts;
    size_t n, cap;
} gather_wait_t;

/* The requests sent to one child: what to answer for them when it fails. */
typedef struct gather_child {
    gather_wait_t *w;
    unsigned rank;
    uint64_t *ranks;
    pdcbb_msg_hdr_t *hdrs; /* the request of each (one for all with every) */
    size_t n;
    int every;
} gather_child_t;

static uint64_t vrank(const tree_t *t, uint64_t rank)
{
    return (rank + t->n - t->root) % t->n;
}

static unsigned real_rank(const tree_t *t, uint64_t v)
{
    return (unsigned)((v + t->root) % t->n);
}

/* The child of virtual rank self whose subtree holds virtual rank v (v below self), or
 * UINT64_MAX when v is not below self. */
static uint64_t child_toward(const tree_t *t, uint64_t self, uint64_t v)
{
    while (v > self) {
        uint64_t parent = (v - 1) / t->fanout;
        if (parent == self)
            return v;
        v = parent;
    }
    return UINT64_MAX;
}

static part_t *part_new(gather_wait_t *w)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        part_t *g = realloc(w->parts, cap * sizeof(*g));
        if (g == NULL)
            return NULL;
        w->parts = g;
        w->cap = cap;
    }
    part_t *pt = &w->parts[w->n++];
    memset(pt, 0, sizeof(*pt));
    return pt;
}

/* An error reply of rank to the request with header h. */
static void part_error(gather_wait_t *w, uint64_t rank, const pdcbb_msg_hdr_t *h, pdcbb_err_t st)
{
    part_t *pt = part_new(w);
    if (pt == NULL)
        return; /* the client sees that daemon's reply missing */
    pt->rank = rank;
    bbd_reply_build(h, st, NULL, &pt->msg, &pt->len);
    if (pt->msg == NULL)
        w->n--;
}

static void wait_free(gather_wait_t *w)
{
    for (size_t i = 0; i < w->n; i++) {
        free(w->parts[i].msg);
        bbd_bulk_release(w->d, &w->parts[i].bulk);
    }
    free(w->parts);
    free(w);
}

/* The GATHER reply of w's parts: its fields in p (arrays in *arena, malloc'ed) and its bulk
 * part in *bulk. */
static pdcbb_err_t wait_reply(gather_wait_t *w, pdcbb_gather_rep_t *p, void **arena,
                              bbd_bulk_t *bulk)
{
    size_t msgs = 0, bulks = 0;
    for (size_t i = 0; i < w->n; i++) {
        msgs += w->parts[i].len;
        bulks += w->parts[i].bulk.len;
    }
    if (msgs + w->n * 16 + 64 > PDCBB_PAYLOAD_MAX || bulks > PDCBB_DATA_BULK_MAX)
        return PDCBB_ERR_TOO_BIG;
    uint8_t *a = malloc(w->n * 16 + msgs + 1);
    void *b = bulks ? bbd_staging_get(w->d, bulks, 0) : NULL;
    if (a == NULL || (bulks && b == NULL)) {
        free(a);
        bbd_staging_put(w->d, b);
        return PDCBB_ERR_NOMEM;
    }
    uint64_t *ranks = (uint64_t *)a, *lens = ranks + w->n;
    uint8_t *m = (uint8_t *)(lens + w->n), *bb = b;
    for (size_t i = 0; i < w->n; i++) {
        part_t *pt = &w->parts[i];
        ranks[i] = pt->rank;
        lens[i] = pt->bulk.len;
        memcpy(m, pt->msg, pt->len);
        m += pt->len;
        if (pt->bulk.len) {
            memcpy(bb, pt->bulk.ptr, pt->bulk.len);
            bb += pt->bulk.len;
        }
    }
    p->ranks = ranks;
    p->ranks_count = (uint32_t)w->n;
    p->bulk_lens = lens;
    p->bulk_lens_count = (uint32_t)w->n;
    p->msgs = (uint8_t *)(lens + w->n);
    p->msgs_len = (uint32_t)msgs;
    *arena = a;
    *bulk = (bbd_bulk_t){.ptr = b, .len = bulks};
    return PDCBB_OK;
}

/* Every child answered: answer the deferred GATHER. */
static void wait_finish(bbd_t *d, gather_wait_t *w)
{
    pdcbb_gather_rep_t p;
    void *arena = NULL;
    bbd_bulk_t bulk = {0};
    pdcbb_err_t rc = wait_reply(w, &p, &arena, &bulk);
    bbd_server_answer_bulk(d, w->conn, &w->hdr, rc, rc == PDCBB_OK ? &p : NULL, &bulk);
    free(arena);
    wait_free(w);
}

static void child_free(gather_child_t *c)
{
    free(c->ranks);
    free(c->hdrs);
    free(c);
}

/* Every daemon the child was to answer for gets status as its reply. */
static void child_failed(gather_child_t *c, pdcbb_err_t status)
{
    const tree_t *t = &c->w->t;
    if (!c->every) {
        for (size_t i = 0; i < c->n; i++)
            part_error(c->w, c->ranks[i], &c->hdrs[i], status);
        return;
    }
    /* The child's whole subtree: virtual ranks level by level. */
    uint64_t lo = vrank(t, c->rank), hi = lo;
    while (lo < t->n) {
        for (uint64_t v = lo; v <= hi && v < t->n; v++)
            part_error(c->w, real_rank(t, v), &c->hdrs[0], status);
        lo = lo * t->fanout + 1;
        hi = hi * t->fanout + t->fanout;
    }
}

/* A child's GATHER reply: its parts, each a whole reply from a daemon of its subtree. */
static pdcbb_err_t child_take(gather_child_t *c, const uint8_t *msg, size_t len)
{
    bbd_t *d = c->w->d;
    const tree_t *t = &c->w->t;
    pdcbb_msg_hdr_t h;
    pdcbb_gather_rep_t p;
    size_t blen = 0;
    uint8_t *bulk = bbd_peer_reply_bulk(d, &blen);
    pdcbb_err_t rc = pdcbb_hdr_decode(msg, len, &h);
    if (rc == PDCBB_OK && h.status != PDCBB_OK)
        rc = (pdcbb_err_t)h.status;
    if (rc == PDCBB_OK)
        rc = pdcbb_body_decode(PDCBB_OP_GATHER, 1, msg + PDCBB_HDR_LEN, h.payload_len, &p);
    if (rc != PDCBB_OK) {
        bbd_staging_put(d, bulk);
        return rc;
    }
    uint64_t self = vrank(t, c->rank), total = 0;
    if (p.bulk_lens_count != p.ranks_count)
        rc = PDCBB_ERR_PROTO;
    for (uint32_t i = 0; rc == PDCBB_OK && i < p.ranks_count; i++) {
        uint64_t v = p.ranks[i] < t->n ? vrank(t, p.ranks[i]) : UINT64_MAX;
        if (v == UINT64_MAX || (v != self && child_toward(t, self, v) == UINT64_MAX) ||
            p.bulk_lens[i] > blen - total)
            rc = PDCBB_ERR_PROTO;
        else
            total += p.bulk_lens[i];
    }
    if (rc == PDCBB_OK && total != blen)
        rc = PDCBB_ERR_PROTO;
    size_t off = 0, boff = 0, first = c->w->n;
    for (uint32_t i = 0; rc == PDCBB_OK && i < p.ranks_count; i++) {
        pdcbb_msg_hdr_t r;
        part_t *pt;
        size_t l;
        if (pdcbb_hdr_decode_next(p.msgs + off, p.msgs_len - off, &r, &l) != PDCBB_OK ||
            !(r.flags & PDCBB_MSG_FLAG_REPLY)) {
            rc = PDCBB_ERR_PROTO;
        } else if ((pt = part_new(c->w)) == NULL ||
                   (pt->msg = malloc(PDCBB_HDR_LEN + r.payload_len)) == NULL) {
            if (pt)
                c->w->n--;
            rc = PDCBB_ERR_NOMEM;
        } else {
            pt->rank = p.ranks[i];
            pt->len = PDCBB_HDR_LEN + r.payload_len;
            memcpy(pt->msg, p.msgs + off, pt->len);
            off += pt->len;
            if (p.bulk_lens[i] > 0) {
                pt->bulk.ptr = bbd_staging_get(d, p.bulk_lens[i], 0);
                if (pt->bulk.ptr == NULL) {
                    rc = PDCBB_ERR_NOMEM;
                } else {
                    memcpy(pt->bulk.ptr, bulk + boff, p.bulk_lens[i]);
                    pt->bulk.len = p.bulk_lens[i];
                }
            }
            boff += p.bulk_lens[i];
        }
    }
    if (rc == PDCBB_OK && off != p.msgs_len)
        rc = PDCBB_ERR_PROTO;
    if (rc != PDCBB_OK) {
        /* Keep nothing of a reply that is not whole. */
        while (c->w->n > first) {
            part_t *pt = &c->w->parts[--c->w->n];
            free(pt->msg);
            bbd_bulk_release(d, &pt->bulk);
        }
    }
    pdcbb_body_free(PDCBB_OP_GATHER, 1, &p);
    bbd_staging_put(d, bulk);
    return rc;
}

static void child_done(bbd_t *d, void *arg, pdcbb_err_t status, const char *why, const uint8_t *msg,
                       size_t len)
{
    gather_child_t *c = arg;
    gather_wait_t *w = c->w;
    if (status == PDCBB_OK && msg != NULL)
        status = child_take(c, msg, len);
    else if (status == PDCBB_OK)
        status = PDCBB_ERR_PROTO;
    if (status != PDCBB_OK) {
        PDCBB_WARN("GATHER %llu through the tree: daemon %u (node %s): %s",
                   (unsigned long long)w->hdr.req_id, c->rank, bbd_peer_node(d, c->rank),
                   why && *why ? why : pdcbb_strerror(status));
        child_failed(c, status);
    }
    child_free(c);
    if (--w->outstanding == 0)
        wait_finish(d, w);
}

/* The requests of GATHER q, checked: msgs split into whole requests of ops GATHER carries, one
 * per rank (or one for every daemon), each rank this daemon or one below it, none twice. */
static pdcbb_err_t split_requests(const tree_t *t, uint64_t self, const pdcbb_gather_req_t *q,
                                  pdcbb_msg_hdr_t *hdrs, size_t *offs)
{
    size_t want = q->every ? 1 : q->ranks_count, off = 0;
    if (q->every && q->ranks_count != 0) {
        PDCBB_WARN("refused GATHER: every is set and %u ranks are named", q->ranks_count);
        return PDCBB_ERR_INVAL;
    }
    for (size_t i = 0; i < want; i++) {
        pdcbb_msg_hdr_t *h = &hdrs[i];
        size_t l;
        if (pdcbb_hdr_decode_next(q->msgs + off, q->msgs_len - off, h, &l) != PDCBB_OK ||
            (h->flags & PDCBB_MSG_FLAG_REPLY)) {
            PDCBB_WARN("refused GATHER: request %zu of %zu is not a whole request", i + 1, want);
            return PDCBB_ERR_PROTO;
        }
        if (!pdcbb_op_gatherable(h->op)) {
            PDCBB_WARN("refused GATHER: request %zu is %s (op %u), which GATHER does not carry",
                       i + 1, pdcbb_op_name(h->op), h->op);
            return PDCBB_ERR_UNSUPPORTED;
        }
        offs[i] = off;
        off += PDCBB_HDR_LEN + (size_t)h->payload_len;
    }
    if (off != q->msgs_len) {
        PDCBB_WARN("refused GATHER: %u bytes after its %zu requests", q->msgs_len - (uint32_t)off,
                   want);
        return PDCBB_ERR_PROTO;
    }
    for (uint32_t i = 0; i < q->ranks_count; i++) {
        uint64_t r = q->ranks[i];
        uint64_t v = r < t->n ? vrank(t, r) : 0;
        if (r >= t->n || (v != self && child_toward(t, self, v) == UINT64_MAX)) {
            PDCBB_WARN("refused GATHER: daemon %llu is %s", (unsigned long long)r,
                       r >= t->n ? "not one of the job's" : "not below this one in the tree");
            return PDCBB_ERR_INVAL;
        }
        for (uint32_t j = 0; j < i; j++)
            if (q->ranks[j] == r) {
                PDCBB_WARN("refused GATHER: daemon %llu is named twice", (unsigned long long)r);
                return PDCBB_ERR_INVAL;
            }
    }
    return PDCBB_OK;
}

/* Send child c (a virtual rank) its part of q: its subtree's requests. Returns 1 if sent (its
 * reply will come to child_done), 0 if it had nothing to do or failed (its daemons answered
 * with the error). */
static int send_child(bbd_t *d, gather_wait_t *w, uint64_t cv, const pdcbb_gather_req_t *q,
                      const pdcbb_msg_hdr_t *hdrs, const size_t *offs)
{
    const tree_t *t = &w->t;
    uint64_t self = vrank(t, d->rank);
    gather_child_t *c = calloc(1, sizeof(*c));
    size_t want = q->every ? 1 : q->ranks_count, len = 0;
    pdcbb_err_t rc = PDCBB_ERR_NOMEM;
    uint8_t *msgs = NULL;
    void *msg = NULL;
    size_t msg_len = 0;
    char why[512] = "";
    if (c == NULL)
        return 0;
    c->w = w;
    c->rank = real_rank(t, cv);
    c->every = q->every != 0;
    c->ranks = malloc((q->ranks_count + 1) * sizeof(*c->ranks));
    c->hdrs = malloc(want * sizeof(*c->hdrs));
    msgs = malloc(q->msgs_len + 1);
    if (c->ranks == NULL || c->hdrs == NULL || msgs == NULL)
        goto fail;
    for (size_t i = 0; i < want; i++) {
        if (!q->every && child_toward(t, self, vrank(t, q->ranks[i])) != cv)
            continue;
        size_t l = PDCBB_HDR_LEN + (size_t)hdrs[i].payload_len;
        memcpy(msgs + len, q->msgs + offs[i], l);
        len += l;
        if (!q->every)
            c->ranks[c->n] = q->ranks[i];
        c->hdrs[c->n++] = hdrs[i];
    }
    if (c->n == 0) {
        free(msgs);
        child_free(c);
        return 0;
    }
    pdcbb_gather_req_t sub = {.tree = q->tree,
                              .every = q->every,
                              .ranks = c->ranks,
                              .ranks_count = q->every ? 0 : (uint32_t)c->n,
                              .msgs = msgs,
                              .msgs_len = (uint32_t)len};
    pdcbb_msg_hdr_t h;
    pdcbb_request_hdr(&h, PDCBB_OP_GATHER, 0, NULL);
    rc = pdcbb_msg_build(&h, &sub, &msg, &msg_len);
    if (rc == PDCBB_OK)
        rc = bbd_peer_send_msg(d, c->rank, msg, msg_len, NULL, 0, PDCBB_KIND_OTHER, child_done, c,
                               why, sizeof(why));
    free(msg);
    free(msgs);
    if (rc == PDCBB_OK)
        return 1;
    msgs = NULL;
fail:
    free(msgs);
    PDCBB_WARN("GATHER %llu through the tree: daemon %u: %s", (unsigned long long)w->hdr.req_id,
               c->rank, why[0] ? why : pdcbb_strerror(rc));
    child_failed(c, rc);
    child_free(c);
    return 0;
}

pdcbb_err_t bbd_op_gather(bbd_req_t *r, const pdcbb_gather_req_t *q, pdcbb_gather_rep_t *p)
{
    bbd_t *d = r->d;
    if (r->conn == NULL || r->hdr == NULL)
        return PDCBB_ERR_UNSUPPORTED; /* a shared-memory channel: no connection to answer on */
    if (q->tree == 0 || q->tree > d->nservers) {
        PDCBB_WARN("refused GATHER %llu: tree %u names no daemon (the job has %u)",
                   (unsigned long long)r->hdr->req_id, q->tree, d->nservers);
        return PDCBB_ERR_INVAL;
    }
    tree_t t = {d->nservers, q->tree - 1, bbd_tree_fanout(d)};
    uint64_t self = vrank(&t, d->rank);
    size_t want = q->every ? 1 : q->ranks_count;
    if (want == 0)
        return PDCBB_ERR_INVAL;
    pdcbb_msg_hdr_t *hdrs = bbd_req_alloc(r, want * sizeof(*hdrs));
    size_t *offs = bbd_req_alloc(r, want * sizeof(*offs));
    gather_wait_t *w = calloc(1, sizeof(*w));
    if (hdrs == NULL || offs == NULL || w == NULL) {
        free(w);
        return PDCBB_ERR_NOMEM;
    }
    w->d = d;
    pdcbb_err_t rc = split_requests(&t, self, q, hdrs, offs);
    if (rc != PDCBB_OK) {
        free(w);
        return rc;
    }
    w->t = t;
    w->hdr = *r->hdr;
    /* This daemon's own request first. */
    for (size_t i = 0; i < want; i++) {
        if (!q->every && q->ranks[i] != d->rank)
            continue;
        part_t *pt = part_new(w);
        size_t len = PDCBB_HDR_LEN + (size_t)hdrs[i].payload_len;
        if (pt == NULL || bbd_dispatch_nested(r, q->msgs + offs[i], len, &pt->msg, &pt->len,
                                              &pt->bulk) != PDCBB_OK) {
            wait_free(w);
            return PDCBB_ERR_NOMEM;
        }
        pt->rank = d->rank;
    }
    /* Then the children with something to do below them. */
    for (uint64_t cv = self * t.fanout + 1; cv <= self * t.fanout + t.fanout && cv < t.n; cv++)
        w->outstanding += (unsigned)send_child(d, w, cv, q, hdrs, offs);
    if (w->outstanding > 0) {
        w->conn = r->conn;
        bbd_conn_ref(r->conn);
        r->deferred = 1;
        return PDCBB_OK;
    }
    /* Nothing below: answered now. */
    void *arena = NULL;
    bbd_bulk_t bulk = {0};
    rc = wait_reply(w, p, &arena, &bulk);
    if (rc == PDCBB_OK) {
        void *keep = bbd_req_alloc(r, w->n * 16 + p->msgs_len + 1);
        if (keep == NULL) {
            rc = PDCBB_ERR_NOMEM;
            bbd_bulk_release(d, &bulk);
        } else {
            memcpy(keep, arena, w->n * 16 + p->msgs_len);
            p->ranks = keep;
            p->bulk_lens = p->ranks + w->n;
            p->msgs = (uint8_t *)(p->bulk_lens + w->n);
            r->out_bulk = bulk.ptr;
            r->out_bulk_len = bulk.len;
        }
    }
    free(arena);
    wait_free(w);
    return rc;
}
