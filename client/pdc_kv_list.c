/*
 * pdc_kv_list.c - ordered listings of KV records (PDCkv_get_list, PDCkv_list_key,
 * PDCkv_list_free): page by page from every shard, walked in key order (RANGE sharding or one
 * shard) or merged (HASH); values that did not fit in a page fetched whole; where a listing
 * ended is kept on the handle, so that the next page of the same tag resumes from there.
 */
#include <stdlib.h>
#include <string.h>

#include "pdc_kv_internal.h"

/* Records asked for in one KV_LIST. */
#define KV_LIST_PAGE 4096u
#define KV_LIST_BYTES ((uint64_t)8 << 20)

/* Where a paged listing ended, per shard: the next page at offset next_off and the same tag
 * resumes from there when no shard's write generation changed (docs/KV.md "Sharding"). */
typedef struct kv_shard_pos {
    int started, done, gen_known;
    uint64_t gen;
    size_t poslen; /* 0: nothing consumed */
    uint8_t pos[PDCBB_KV_ENC_MAX];
} kv_shard_pos_t;
typedef struct kv_cursor {
    uint64_t tag, next_off;
    uint32_t ns;
    kv_shard_pos_t sh[];
} kv_cursor_t;

/* ------------------------------------------------------------------ get_list / list_key */

/* A record of a listing, owned. */
typedef struct lrec {
    uint8_t *key;
    size_t klen;
    uint64_t tag;
    uint8_t *value; /* NULL when not fetched yet (or list_key) */
    uint64_t vlen;
} lrec_t;

/* A stream of one shard's records, fetched page by page in key order. */
typedef struct stream {
    unsigned daemon;
    lrec_t *r;          /* the current page; [pos, n) not consumed yet */
    size_t n, pos;
    int more;           /* the daemon has records after the page */
    int started;
    int done_before;    /* finished in an earlier page (resumed listing) */
    uint8_t *last;      /* key of the last record received: the next page starts after it */
    size_t lastlen;
    uint64_t skip;      /* records to skip on the daemon (RANGE offset) */
    client_pending_t *p;
    uint64_t gen, vgen; /* generation of the last reply; the one to validate against */
    int gen_known, check_gen;
    uint8_t cons[PDCBB_KV_ENC_MAX]; /* key of the last record consumed */
    size_t conslen;
    uint64_t tgen0;     /* transaction generation at the first reply of this listing */
    int has_tgen;
} stream_t;

typedef struct list_ctx {
    uint64_t tag, offset, count;
    int values;
    pdc_kv_t **out;
    uint64_t *nout;
    uint32_t ns;
    stream_t *st;
    lrec_t *res;
    size_t nres, capres;
    uint64_t consumed; /* records passed over by the merge (HASH offset) */
    int resume;        /* continue from the handle's cursor */
    int stale;         /* a shard changed since the cursor: list again from the offset */
    kv_cursor_t *cur;  /* copy of the cursor to resume from */
} list_ctx_t;

static void lrecs_free(lrec_t *r, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++) {
        free(r[i].key);
        free(r[i].value);
    }
}

static void streams_free(list_ctx_t *g)
{
    if (g->st == NULL)
        return;
    for (uint32_t s = 0; s < g->ns; s++) {
        if (g->st[s].p)
            client_pending_free(g->st[s].p);
        lrecs_free(g->st[s].r, g->st[s].pos, g->st[s].n);
        free(g->st[s].r);
        free(g->st[s].last);
    }
    free(g->st);
    g->st = NULL;
}

static void list_cleanup(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    streams_free(g);
    lrecs_free(g->res, 0, g->nres);
    free(g->res);
    g->res = NULL;
    g->nres = g->capres = 0;
}

static void list_cleanup_all(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    list_cleanup(c);
    free(g->cur);
    g->cur = NULL;
}

/* Every stream's posted page has arrived (PDCkv_event_test). */
static int list_ready(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    for (uint32_t i = 0; g->st && i < g->ns; i++)
        if (g->st[i].p && !g->st[i].p->done)
            return 0;
    return 1;
}

static pdcbb_err_t stream_post(kv_call_t *c, stream_t *s, uint64_t want)
{
    list_ctx_t *g = c->ctx;
    pdcbb_kv_list_req_t q = {.id = c->kv.id, .tag = g->tag, .skip = s->skip,
                             .max = want > KV_LIST_PAGE ? KV_LIST_PAGE : (want ? (uint32_t)want : 1),
                             .max_bytes = KV_LIST_BYTES,
                             .flags = g->values ? PDCBB_KV_LIST_VALUES : 0};
    if (s->last) {
        q.start = s->last;
        q.start_len = (uint32_t)s->lastlen;
        q.flags |= PDCBB_KV_LIST_AFTER;
    }
    s->started = 1;
    return kv_post(c, s->daemon, PDCBB_OP_KV_LIST, &q, &s->p);
}

/* Receive a stream's page (the previous one must be consumed). */
static pdcbb_err_t stream_take(kv_call_t *c, stream_t *s)
{
    list_ctx_t *g = c->ctx;
    client_pending_t *p = s->p;
    s->p = NULL;
    if (!p->done)
        client_rpc_wait(p, client_g.cfg.request_timeout);
    unsigned daemon = p->server;
    pdcbb_kv_list_rep_t rep;
    void *keep;
    pdcbb_err_t rc = client_rpc_finish(p, &rep, &keep);
    if (rc != PDCBB_OK)
        return rc == PDCBB_ERR_BUSY || client_g.drained ? rc : kv_refused(c, rc, daemon, "a listing");
    lrecs_free(s->r, s->pos, s->n);
    free(s->r);
    s->r = calloc(rep.count ? rep.count : 1, sizeof(*s->r));
    s->n = s->pos = 0;
    if (s->r == NULL) {
        client_rpc_release(PDCBB_OP_KV_LIST, &rep, keep);
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
    }
    size_t pos = 0;
    char why[128];
    for (uint32_t i = 0; i < rep.count; i++) {
        pdcbb_kv_wrec_t w;
        if (pdcbb_kv_wlist_get(rep.recs, rep.recs_len, &pos, &w) != PDCBB_OK ||
            pdcbb_kv_key_check(c->kv.key_type, w.key, w.key_len, 0, why, sizeof(why)) != PDCBB_OK) {
            rc = client_fail(PDCBB_ERR_PROTO, "%s: malformed listing from daemon %u", c->fn, daemon);
            break;
        }
        lrec_t *r = &s->r[s->n];
        r->klen = w.key_len;
        r->tag = w.tag;
        r->vlen = w.value_len;
        if ((r->key = malloc(w.key_len)) == NULL ||
            (w.included && g->values && (r->value = malloc(w.value_len ? w.value_len : 1)) == NULL)) {
            free(r->key);
            rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
            break;
        }
        memcpy(r->key, w.key, w.key_len);
        if (r->value && w.value_len)
            memcpy(r->value, w.value, w.value_len);
        s->n++;
    }
    if (rc == PDCBB_OK && s->n) {
        free(s->last);
        if ((s->last = malloc(s->r[s->n - 1].klen)) == NULL)
            rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
        else {
            memcpy(s->last, s->r[s->n - 1].key, s->r[s->n - 1].klen);
            s->lastlen = s->r[s->n - 1].klen;
        }
    }
    s->more = rep.more != 0;
    s->skip = rep.skipped <= s->skip ? s->skip - rep.skipped : 0;
    s->gen = rep.gen;
    s->gen_known = 1;
    if (!s->has_tgen) {
        s->tgen0 = rep.tgen;
        s->has_tgen = 1;
    }
    if (s->check_gen && rep.gen != s->vgen && rc == PDCBB_OK) {
        g->stale = 1;
        rc = PDCBB_ERR_BUSY;
    }
    client_rpc_release(PDCBB_OP_KV_LIST, &rep, keep);
    return rc;
}

/* Move a stream's current record into the result (or drop it while skipping). */
static pdcbb_err_t consume(kv_call_t *c, stream_t *s, int keep_it)
{
    list_ctx_t *g = c->ctx;
    lrec_t *r = &s->r[s->pos++];
    memcpy(s->cons, r->key, r->klen);
    s->conslen = r->klen;
    if (!keep_it) {
        free(r->key);
        free(r->value);
        return PDCBB_OK;
    }
    if (g->nres == g->capres) {
        size_t cap = g->capres ? 2 * g->capres : 64;
        lrec_t *n = realloc(g->res, cap * sizeof(*n));
        if (n == NULL) {
            free(r->key);
            free(r->value);
            return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
        }
        g->res = n;
        g->capres = cap;
    }
    g->res[g->nres] = *r;
    g->res[g->nres].value = r->value;
    g->nres++;
    return PDCBB_OK;
}

/* Shards hold consecutive key ranges (RANGE, or a single shard): a listing walks them in order
 * and lets each daemon skip the offset; else (HASH) it merges them. */
static int walk_in_order(const client_kv_t *kv)
{
    return kv->sharding == PDCBB_KV_SHARD_RANGE || kv->nshards == 1;
}

static pdcbb_err_t streams_init(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    g->ns = c->kv.nshards;
    g->st = calloc(g->ns, sizeof(*g->st));
    if (g->st == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
    for (uint32_t s = 0; s < g->ns; s++)
        g->st[s].daemon = c->kv.shards[s];
    g->consumed = 0;
    if (g->count == 0 || g->resume)
        return PDCBB_OK; /* a resumed listing validates the cursor first (list_finish) */
    if (walk_in_order(&c->kv)) {
        /* Shards in key order: the first one skips the offset itself. */
        g->st[0].skip = g->offset;
        return stream_post(c, &g->st[0], g->count);
    }
    for (uint32_t s = 0; s < g->ns; s++) {
        pdcbb_err_t rc = stream_post(c, &g->st[s], g->offset + g->count);
        if (rc != PDCBB_OK)
            return rc;
    }
    return PDCBB_OK;
}

static pdcbb_err_t list_range(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    uint64_t skip_left = g->resume ? 0 : g->offset;
    for (uint32_t i = 0; i < g->ns && g->nres < g->count; i++) {
        stream_t *s = &g->st[i];
        pdcbb_err_t rc;
        if (s->done_before)
            continue;
        if (!s->started) {
            s->skip = skip_left;
            if ((rc = stream_post(c, s, g->count - g->nres)) != PDCBB_OK)
                return rc;
        }
        for (;;) {
            if (s->p) {
                if ((rc = stream_take(c, s)) != PDCBB_OK)
                    return rc;
                skip_left = s->skip;
            }
            while (s->pos < s->n && g->nres < g->count)
                if ((rc = consume(c, s, 1)) != PDCBB_OK)
                    return rc;
            if (g->nres >= g->count || !s->more)
                break;
            if ((rc = stream_post(c, s, g->count - g->nres)) != PDCBB_OK)
                return rc;
        }
    }
    return PDCBB_OK;
}

static pdcbb_err_t list_hash(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    pdcbb_err_t rc;
    if (g->count == 0)
        return PDCBB_OK;
    /* The first pages were posted; receive them. */
    for (uint32_t i = 0; i < g->ns; i++)
        if (g->st[i].p && (rc = stream_take(c, &g->st[i])) != PDCBB_OK)
            return rc;
    while (g->nres < g->count) {
        /* Refill the streams that ran dry and have more, together. */
        uint64_t want = g->offset > g->consumed ? g->offset - g->consumed : 0; /* (resumed: 0) */
        want += g->count - g->nres;
        int posted = 0;
        for (uint32_t i = 0; i < g->ns; i++) {
            stream_t *s = &g->st[i];
            if (s->pos == s->n && s->more) {
                if ((rc = stream_post(c, s, want)) != PDCBB_OK)
                    return rc;
                posted = 1;
            }
        }
        if (posted)
            for (uint32_t i = 0; i < g->ns; i++)
                if (g->st[i].p && (rc = stream_take(c, &g->st[i])) != PDCBB_OK)
                    return rc;
        /* The smallest current key over the streams. */
        stream_t *best = NULL;
        for (uint32_t i = 0; i < g->ns; i++) {
            stream_t *s = &g->st[i];
            if (s->pos == s->n)
                continue;
            if (best == NULL || pdcbb_kv_key_cmp(s->r[s->pos].key, s->r[s->pos].klen,
                                                 best->r[best->pos].key, best->r[best->pos].klen) < 0)
                best = s;
        }
        if (best == NULL)
            break;
        /* Take from it while it stays the smallest (every other stream's head is larger or
         * that stream must be refilled first). */
        int keep_it = g->consumed >= g->offset;
        g->consumed++;
        if ((rc = consume(c, best, keep_it)) != PDCBB_OK)
            return rc;
    }
    return PDCBB_OK;
}

/* Fetch a whole value (listings whose value did not fit in a reply). */
static pdcbb_err_t fetch_value(kv_call_t *c, unsigned daemon, lrec_t *r, uint64_t tag)
{
    uint64_t have = 0, total = r->vlen;
    uint8_t *buf = malloc(total ? total : 1);
    if (buf == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory for a value of %llu bytes", c->fn,
                           (unsigned long long)total);
    while (have < total) {
        pdcbb_kv_get_req_t q = {.id = c->kv.id, .tag = tag, .key = r->key, .key_len = (uint32_t)r->klen,
                                .value_off = have, .max_len = KV_GET_CHUNK};
        pdcbb_kv_get_rep_t p;
        void *keep;
        pdcbb_err_t rc = kv_rt(c, daemon, PDCBB_OP_KV_GET, &q, &p, &keep, "a get");
        if (rc != PDCBB_OK) {
            free(buf);
            return rc;
        }
        int bad = p.total_len != total || p.found_tag != r->tag || p.value_len == 0;
        if (!bad)
            memcpy(buf + have, p.value, p.value_len);
        have += p.value_len;
        client_rpc_release(PDCBB_OP_KV_GET, &p, keep);
        if (bad) {
            free(buf);
            return PDCBB_ERR_BUSY; /* changed meanwhile: list again */
        }
    }
    r->value = buf;
    return PDCBB_OK;
}

/*
 * Resume from the cursor: every shard that was read validates its generation (a one-record
 * listing after its position), then the streams continue from their positions. Returns
 * PDCBB_ERR_BUSY with g->stale set when a shard changed.
 */
static pdcbb_err_t resume_init(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    kv_cursor_t *cu = g->cur;
    pdcbb_err_t rc;
    for (uint32_t i = 0; i < g->ns; i++) {
        stream_t *s = &g->st[i];
        kv_shard_pos_t *sp = &cu->sh[i];
        if (sp->poslen) {
            if ((s->last = malloc(sp->poslen)) == NULL)
                return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
            memcpy(s->last, sp->pos, sp->poslen);
            s->lastlen = sp->poslen;
            memcpy(s->cons, sp->pos, sp->poslen);
            s->conslen = sp->poslen;
        }
        if (!sp->started)
            continue;
        if (!sp->gen_known) {
            g->stale = 1;
            return PDCBB_ERR_BUSY;
        }
        s->check_gen = 1;
        s->vgen = sp->gen;
        s->started = 1;
        if (sp->done) {
            /* nothing after its position: a one-record probe checks that with the generation */
            s->done_before = 1;
        }
        if ((rc = stream_post(c, s, sp->done ? 1 : g->count)) != PDCBB_OK)
            return rc;
    }
    for (uint32_t i = 0; i < g->ns; i++) {
        stream_t *s = &g->st[i];
        if (s->p == NULL)
            continue;
        /* a changed generation makes stream_take answer BUSY with g->stale set */
        if ((rc = stream_take(c, s)) != PDCBB_OK)
            return rc;
        if (s->done_before) {
            /* unchanged and finished: its probe's records were already passed */
            lrecs_free(s->r, s->pos, s->n);
            s->n = s->pos = 0;
            s->more = 0;
        }
    }
    if (!walk_in_order(&c->kv))
        g->consumed = g->offset; /* HASH: the offset is behind the positions */
    return PDCBB_OK;
}

static pdcbb_err_t list_tgen_check(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    unsigned d[PDCBB_KV_SHARDS_MAX];
    uint64_t t0[PDCBB_KV_SHARDS_MAX];
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->ns; i++)
        if (g->st[i].has_tgen) {
            d[n] = g->st[i].daemon;
            t0[n++] = g->st[i].tgen0;
        }
    return n > 1 ? kv_tgen_check(c, g->tag, n, d, t0) : PDCBB_OK;
}

/* Remember where this listing ended on the handle (if it is still open). */
static void cursor_save(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    client_kv_t *kv = client_handle_get(c->hid, CLIENT_H_KV, NULL);
    if (kv == NULL || kv->id != c->kv.id)
        return;
    free(kv->cur);
    kv->cur = NULL;
    kv_cursor_t *cu = calloc(1, sizeof(*cu) + g->ns * sizeof(kv_shard_pos_t));
    if (cu == NULL)
        return;
    cu->tag = g->tag;
    cu->next_off = g->offset + g->nres;
    cu->ns = g->ns;
    for (uint32_t i = 0; i < g->ns; i++) {
        stream_t *s = &g->st[i];
        kv_shard_pos_t *sp = &cu->sh[i];
        sp->started = s->started || s->done_before;
        sp->done = s->done_before || (s->started && s->p == NULL && s->pos == s->n && !s->more);
        sp->gen = s->gen_known ? s->gen : s->vgen;
        sp->gen_known = s->gen_known || s->check_gen;
        sp->poslen = s->conslen;
        memcpy(sp->pos, s->cons, s->conslen);
        /* a RANGE shard read only through its daemon-side skip has no position to resume at */
        if (sp->started && !sp->done && sp->poslen == 0 && walk_in_order(&c->kv)) {
            free(cu);
            return;
        }
        if (s->p != NULL) { /* a page still in flight: its records were not seen */
            free(cu);
            return;
        }
    }
    kv->cur = cu;
}

static pdcbb_err_t list_finish(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    double deadline = 0;
    pdcbb_err_t rc;
    for (;;) {
        rc = g->resume && g->count ? resume_init(c) : PDCBB_OK;
        if (rc == PDCBB_OK)
            rc = walk_in_order(&c->kv) ? list_range(c) : list_hash(c);
        for (size_t i = 0; rc == PDCBB_OK && g->values && i < g->nres; i++)
            if (g->res[i].value == NULL) {
                uint32_t sh = pdcbb_kv_shard_of(c->kv.sharding, c->kv.key_type, c->kv.nshards,
                                                g->res[i].key, g->res[i].klen);
                rc = fetch_value(c, c->kv.shards[sh], &g->res[i], g->tag);
            }
        if (rc == PDCBB_OK)
            rc = list_tgen_check(c);
        if (rc != PDCBB_ERR_BUSY && rc != PDCBB_ERR_NOT_FOUND)
            break;
        list_cleanup(c);
        if (g->stale) {
            /* The object changed since the cursor: list from the offset. */
            g->stale = 0;
            g->resume = 0;
            if ((rc = streams_init(c)) != PDCBB_OK)
                return rc;
            continue;
        }
        /* A transaction was being committed (or a value changed under the listing): again. */
        kv_busy_pause(&deadline);
        if (client_now() > deadline)
            return client_fail(PDCBB_ERR_BUSY, "%s: KV object '%s': a transaction stayed in doubt", c->fn, c->kv.name);
        if ((rc = streams_init(c)) != PDCBB_OK)
            return rc;
    }
    if (rc != PDCBB_OK)
        return rc;
    /* One block: the records, then keys and values. */
    size_t total = g->nres * sizeof(pdc_kv_t);
    for (size_t i = 0; i < g->nres; i++)
        total += g->res[i].klen + (g->values ? g->res[i].vlen : 0) + 8;
    pdc_kv_t *out = malloc(total ? total : 1);
    if (out == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory for %zu records", c->fn, g->nres);
    uint8_t *heap = (uint8_t *)(out + g->nres);
    for (size_t i = 0; i < g->nres; i++) {
        lrec_t *r = &g->res[i];
        pdc_kv_t *o = &out[i];
        memset(o, 0, sizeof(*o));
        o->key.type = (pdc_kv_key_type_t)c->kv.key_type;
        if (c->kv.key_type == PDCBB_KV_INT)
            o->key.i = pdcbb_kv_dec_int(r->key);
        else if (c->kv.key_type == PDCBB_KV_FLOAT)
            o->key.f = pdcbb_kv_dec_float(r->key);
        else {
            memcpy(heap, r->key, r->klen); /* NUL-terminated encoding */
            o->key.str = (const char *)heap;
            heap += r->klen;
        }
        o->tag = r->tag;
        if (g->values) {
            if (r->vlen)
                memcpy(heap, r->value, r->vlen);
            o->value = heap;
            o->value_len = r->vlen;
            heap += r->vlen;
        }
    }
    *g->out = out;
    *g->nout = g->nres;
    cursor_save(c);
    return PDCBB_OK;
}

static perr_t kv_list(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t offset, uint64_t count,
                      pdc_kv_t **recs, uint64_t *n, pdc_kv_event_t *ev, int values, const char *fn)
{
    perr_t ret = FAIL;
    client_kv_t *kv;
    CLIENT_ENTER();
    if ((kv = kv_call_begin(kv_id, ev, fn)) == NULL)
        goto out;
    if (recs == NULL || n == NULL || tag > PDC_KV_MAXTAG) {
        client_fail(PDCBB_ERR_INVAL, "%s: %s", fn,
                    recs == NULL || n == NULL ? "recs or n is NULL" : "tag above MAXTAG");
        goto out;
    }
    kv_call_t *c = kv_call_new(kv, fn, ev, list_finish, sizeof(list_ctx_t));
    if (c == NULL)
        goto out;
    c->cleanup = list_cleanup_all;
    c->ready = list_ready;
    c->hid = kv_id;
    list_ctx_t *g = c->ctx;
    if (kv->cur && kv->cur->tag == tag && kv->cur->next_off == offset && offset > 0 &&
        kv->cur->ns == kv->nshards) {
        size_t sz = sizeof(kv_cursor_t) + kv->cur->ns * sizeof(kv_shard_pos_t);
        if ((g->cur = malloc(sz)) != NULL) {
            memcpy(g->cur, kv->cur, sz);
            g->resume = 1;
        }
    }
    g->tag = tag;
    g->offset = offset;
    g->count = count;
    g->values = values;
    g->out = recs;
    g->nout = n;
    ret = kv_call_run(c, streams_init(c), ev);
out:
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCkv_get_list(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t offset, uint64_t count,
                      pdc_kv_t **recs, uint64_t *n, pdc_kv_event_t *ev)
{
    return kv_list(kv_id, tag, offset, count, recs, n, ev, 1, "PDCkv_get_list");
}

perr_t PDCkv_list_key(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t offset, uint64_t count,
                      pdc_kv_t **recs, uint64_t *n, pdc_kv_event_t *ev)
{
    return kv_list(kv_id, tag, offset, count, recs, n, ev, 0, "PDCkv_list_key");
}

void PDCkv_list_free(pdc_kv_t *recs) { free(recs); }
