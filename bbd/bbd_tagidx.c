/*
 * bbd_tagidx.c - tag search: the index of tag names and values, and DART object references.
 *
 * Records. A tag is (id, name, value) in PDCBB_T_TAG (bbd_meta.c); a DART reference is
 * (ref_type, key, value, data) in PDCBB_T_DART, keyed data(8) ref_type(1) hash(8) -> key NUL value,
 * on the daemon pdcbb_dart_home(data) names. Both are "records" of a space ('T' for tags,
 * '0' + ref_type for references) with a name (tag name / DART key), a value and an id
 * (tag owner / DART data).
 *
 * Index (PDCBB_T_TAGIDX, every key -> ""). Per record and field (name, and value when the value
 * is text, pdcbb_pat_text_of), three kinds of entry, each
 *     space(1) form(1) text(<= cap) term(1) id(8, big-endian) hash(8)
 * where term is 0 when the text is whole and 1 when it was cut at cap bytes, and hash is
 * FNV-1a-64 of the record (space, name, value), so two records never share an entry:
 *   'N' / 'V'  the text (cap 240): exact and prefix patterns are one key range;
 *   'R' / 'W'  the text reversed (cap 240): a suffix pattern is a prefix range of these;
 *   'X' / 'Y'  every suffix of the text, cut at 16 bytes: an infix pattern is a prefix range
 *              of these (DART's "suffix tree mode"; cost and figures in docs/INTERNALS.md).
 * A search takes the candidates of one range (of the name's and the value's, the one that ends
 * first when both are read in step), and checks each candidate's records against both
 * patterns, so cut texts and long patterns are still answered exactly.
 *
 * When entries are written. DART references: in the transaction that changes the record
 * (insert, delete, object delete). Tags: lazily. A tag put, overwrite or delete (and an object
 * or container delete, for each of its tags) appends to the log PDCBB_T_TAGLOG, in its own
 * transaction, one record per change:
 *     seq(8, big-endian) -> op('A' add / 'D' remove) id(8) name_len(4, big-endian) name value
 * where a remove carries the value the index holds (the old value of an overwrite), so the
 * log alone says which entries go. The log is applied (bbd_tagidx_apply) in batches, each in
 * one write transaction: every entry of the batch's records is generated, the entries are
 * sorted by key (neighbouring keys share B-tree pages: one page copy serves many), the last
 * change of each key wins (entries are a set, so this is the result of applying them in
 * order), and the applied records leave the log. A batch is applied when the daemon is idle
 * (bbd_tagidx_idle) and before each tag search (bbd_tagidx_before); the search itself reads the
 * index and what is left of the log (log_candidates), so it sees every tag change answered
 * before it however long the log is. The log is in the store, so a change is exactly as
 * durable as the tag itself: what a crash leaves unapplied is applied after the restart. A put
 * costs one short append at the end of the log instead of ~20 index writes spread over the
 * whole index (docs/PERFORMANCE.md, "Tag writes against the number of objects").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bbd.h"
#include "pdcbb_log.h"
#include "pdcbb_pattern.h"

#define OPS (r->d->store_ops)

#define IDX_CAP 240 /* text bytes kept by N/V/R/W entries */
#define SFX_CAP 16  /* bytes kept of each suffix (X/Y entries) */
#define SPACE_TAG 'T'

/* A record as the index sees it. */
typedef struct rec {
    uint8_t space;
    const char *name;
    size_t name_len;
    const void *value;
    size_t value_len;
    uint64_t id;
} rec_t;

static uint64_t rec_hash(const rec_t *x)
{
    uint64_t h = 1469598103934665603ull;
    const uint8_t *p;
#define FNV(b) (h = (h ^ (uint8_t)(b)) * 1099511628211ull)
    FNV(x->space);
    p = (const uint8_t *)x->name;
    for (size_t i = 0; i < x->name_len; i++)
        FNV(p[i]);
    FNV(0);
    p = x->value;
    for (size_t i = 0; i < x->value_len; i++)
        FNV(p[i]);
#undef FNV
    return h;
}

/* Build an index key into buf (at least 2 + IDX_CAP + 17 bytes); returns its length. */
static size_t idx_key(uint8_t *buf, uint8_t space, uint8_t form, const char *text, size_t len,
                      size_t cap, int reversed, uint64_t id, uint64_t hash)
{
    size_t n = len < cap ? len : cap;
    buf[0] = space;
    buf[1] = form;
    if (reversed)
        for (size_t i = 0; i < n; i++)
            buf[2 + i] = (uint8_t)text[len - 1 - i];
    else
        memcpy(buf + 2, text, n);
    buf[2 + n] = len > cap ? 1 : 0;
    pdcbb_key_u64(buf + 3 + n, id);
    pdcbb_key_u64(buf + 11 + n, hash);
    return 19 + n;
}

/* Where generated entries go: the store (eager) or a batch being applied (lazy). */
typedef pdcbb_err_t (*emit_fn)(void *ctx, const uint8_t *key, size_t len, int add);

static pdcbb_err_t emit_store(void *ctx, const uint8_t *key, size_t len, int add)
{
    bbd_req_t *r = ctx;
    if (add)
        return OPS->put(r->txn, PDCBB_T_TAGIDX, (pdcbb_val_t){key, len}, (pdcbb_val_t){"", 0}, 0);
    /* Suffixes cut at SFX_CAP bytes may repeat ("aaaa..."): the repeated delete finds nothing. */
    pdcbb_err_t rc = OPS->del(r->txn, PDCBB_T_TAGIDX, (pdcbb_val_t){key, len});
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

/* Add (add=1) or remove the index entries of one field of a record. */
static pdcbb_err_t field_entries(const rec_t *x, uint64_t hash, const char *text, size_t len,
                                 const uint8_t forms[3], int add, emit_fn emit, void *ctx)
{
    uint8_t buf[2 + IDX_CAP + 17];
    size_t kl = idx_key(buf, x->space, forms[0], text, len, IDX_CAP, 0, x->id, hash);
    pdcbb_err_t rc = emit(ctx, buf, kl, add);
    if (rc == PDCBB_OK) {
        kl = idx_key(buf, x->space, forms[1], text, len, IDX_CAP, 1, x->id, hash);
        rc = emit(ctx, buf, kl, add);
    }
    for (size_t i = 0; rc == PDCBB_OK && i < len; i++) {
        kl = idx_key(buf, x->space, forms[2], text + i, len - i, SFX_CAP, 0, x->id, hash);
        rc = emit(ctx, buf, kl, add);
    }
    return rc;
}

static pdcbb_err_t rec_keys(const rec_t *x, int add, emit_fn emit, void *ctx)
{
    static const uint8_t name_forms[3] = {'N', 'R', 'X'}, value_forms[3] = {'V', 'W', 'Y'};
    uint64_t hash = rec_hash(x);
    size_t tl;
    pdcbb_err_t rc = field_entries(x, hash, x->name, x->name_len, name_forms, add, emit, ctx);
    if (rc == PDCBB_OK && pdcbb_pat_text_of(x->value, x->value_len, &tl))
        rc = field_entries(x, hash, x->value, tl, value_forms, add, emit, ctx);
    return rc;
}

/* Eager: write the entries in r's transaction (DART references). */
static pdcbb_err_t rec_entries(bbd_req_t *r, const rec_t *x, int add)
{
    return rec_keys(x, add, emit_store, r);
}

/* ------------------------------------------------------------------ the log of tag changes */

#define LOG_HDR            13    /* op(1) id(8) name_len(4) */
#define APPLY_BATCH        8192  /* records per transaction when the whole log is applied */
#define SEARCH_BATCH       2048  /* ... before a search (the rest of the log is scanned) */
/* ... per idle pass: a request that comes meanwhile waits for it (~20 us a record: ~1.3 ms). On
 * a busy node a client is often off its core for a few ms, which looks idle here: a pass of
 * 512 records (~10 ms) then held up its next requests (docs/PERFORMANCE.md, "Busy nodes"). */
#define IDLE_BATCH         64
#define IDLE_AFTER_SECONDS 0.002 /* no request for this long: the daemon is idle */
#define IDLE_POLL_MS       2     /* the most the event loop sleeps while records wait */
/* The most records the log holds: past it each change also applies two of the oldest, in its
 * own transaction, so the log shrinks even on a daemon never idle and never searched, at the
 * price of the eager index's cost (~20 us a record here: tag puts at ~20,000/s instead of
 * ~170,000/s). A search scans what is not applied, ~0.1 us per record here: at most ~0.5 s. */
#define LOG_MAX     ((uint64_t)1 << 22)
#define LOG_CATCHUP 2

static size_t log_name_len(const uint8_t *rec)
{
    return (size_t)rec[9] << 24 | (size_t)rec[10] << 16 | (size_t)rec[11] << 8 | rec[12];
}

/* The key of the last record of the log, by binary search over cursor seeks (the store has no
 * seek-to-last); first is the key of the first record. */
static pdcbb_err_t log_last(bbd_t *d, pdcbb_txn_t *txn, uint64_t first, uint64_t *last)
{
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    uint64_t lo = first, hi = UINT64_MAX;
    pdcbb_err_t rc = d->store_ops->cursor_open(txn, PDCBB_T_TAGLOG, &c);
    if (rc != PDCBB_OK)
        return rc;
    while (rc == PDCBB_OK && lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2 + 1;
        uint8_t key[8];
        pdcbb_key_u64(key, mid);
        rc = d->store_ops->cursor_seek(c, (pdcbb_val_t){key, 8}, &k, &v);
        if (rc == PDCBB_OK && k.len == 8) {
            lo = pdcbb_key_get_u64(k.data);
        } else if (rc == PDCBB_OK) {
            rc = PDCBB_ERR_STORE;
        } else if (rc == PDCBB_ERR_NOT_FOUND) {
            hi = mid - 1;
            rc = PDCBB_OK;
        }
    }
    d->store_ops->cursor_close(c);
    if (rc == PDCBB_OK)
        *last = lo;
    return rc;
}

/* Learn the log's state (next key, anything pending, *count records) from the store. */
static pdcbb_err_t log_learn(bbd_t *d, pdcbb_txn_t *txn, uint64_t *count)
{
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    uint64_t last = 0;
    pdcbb_err_t rc = d->store_ops->count(txn, PDCBB_T_TAGLOG, count);
    if (rc != PDCBB_OK)
        return rc;
    if (*count == 0) {
        d->tagidx_next_seq = 0;
        d->tagidx_first_seq = 0;
        d->tagidx_pending = 0;
        d->tagidx_known = 1;
        return PDCBB_OK;
    }
    if ((rc = d->store_ops->cursor_open(txn, PDCBB_T_TAGLOG, &c)) != PDCBB_OK)
        return rc;
    rc = d->store_ops->cursor_seek(c, (pdcbb_val_t){NULL, 0}, &k, &v);
    if (rc == PDCBB_OK && k.len != 8)
        rc = PDCBB_ERR_STORE;
    uint64_t first = rc == PDCBB_OK ? pdcbb_key_get_u64(k.data) : 0;
    d->store_ops->cursor_close(c);
    if (rc != PDCBB_OK || (rc = log_last(d, txn, first, &last)) != PDCBB_OK)
        return rc;
    d->tagidx_next_seq = last + 1;
    d->tagidx_first_seq = first;
    d->tagidx_pending = 1;
    d->tagidx_known = 1;
    return PDCBB_OK;
}

static pdcbb_err_t apply_batch(bbd_req_t *r, size_t max, size_t *taken);

/* Append a tag change to the log in r's transaction. */
static pdcbb_err_t log_append(bbd_req_t *r, int add, uint64_t id, const char *name, size_t nlen,
                              const void *value, size_t vlen)
{
    bbd_t *d = r->d;
    uint64_t n;
    uint8_t key[8];
    pdcbb_err_t rc;
    if (!d->tagidx_known && (rc = log_learn(d, r->txn, &n)) != PDCBB_OK)
        return rc;
    uint8_t *rec = bbd_req_alloc(r, LOG_HDR + nlen + vlen);
    if (rec == NULL)
        return PDCBB_ERR_NOMEM;
    rec[0] = add ? 'A' : 'D';
    pdcbb_key_u64(rec + 1, id);
    for (int i = 0; i < 4; i++)
        rec[9 + i] = (uint8_t)(nlen >> (24 - 8 * i));
    memcpy(rec + LOG_HDR, name, nlen);
    if (vlen)
        memcpy(rec + LOG_HDR + nlen, value, vlen);
    /* Keys only grow, also past a transaction that aborts (its key is simply never used): the
     * log's order is the order of the changes. */
    pdcbb_key_u64(key, d->tagidx_next_seq++);
    d->tagidx_pending = 1;
    rc = OPS->put(r->txn, PDCBB_T_TAGLOG, (pdcbb_val_t){key, 8},
                  (pdcbb_val_t){rec, LOG_HDR + nlen + vlen}, PDCBB_PUT_APPEND);
    size_t taken;
    uint64_t max = d->tagidx_log_max ? d->tagidx_log_max : LOG_MAX;
    if (rc == PDCBB_OK && d->tagidx_next_seq - d->tagidx_first_seq > max)
        rc = apply_batch(r, LOG_CATCHUP, &taken); /* the log is at its bound */
    return rc;
}

pdcbb_err_t bbd_tagidx_tag(bbd_req_t *r, uint64_t id, const char *name, const void *value,
                           size_t len, int add)
{
    return log_append(r, add, id, name, strlen(name), value, len);
}

/* One index change of a batch being applied. */
typedef struct change {
    uint64_t head; /* the key's first 8 bytes, big-endian: most comparisons end here */
    const uint8_t *key;
    uint32_t len;
    uint32_t ord; /* position in the batch: of two changes of one key, the later wins */
    int add;
} change_t;

typedef struct batch {
    bbd_req_t *r;
    change_t *c; /* malloc'ed */
    size_t n, cap;
    uint8_t *arena; /* key bytes: scratch blocks of the request, filled in turn */
    size_t arena_left;
} batch_t;

static pdcbb_err_t emit_batch(void *ctx, const uint8_t *key, size_t len, int add)
{
    batch_t *b = ctx;
    if (b->arena_left < len) {
        size_t sz = (size_t)1 << 20;
        if ((b->arena = bbd_req_alloc(b->r, sz)) == NULL)
            return PDCBB_ERR_NOMEM;
        b->arena_left = sz;
    }
    change_t *g = pdcbb_grow(b->c, b->n, &b->cap, sizeof(*g), 4096);
    if (g == NULL)
        return PDCBB_ERR_NOMEM;
    b->c = g;
    memcpy(b->arena, key, len);
    /* Index keys are at least 19 bytes (idx_key). */
    b->c[b->n] = (change_t){pdcbb_key_get_u64(key), b->arena, (uint32_t)len, (uint32_t)b->n, add};
    b->n++;
    b->arena += len;
    b->arena_left -= len;
    return PDCBB_OK;
}

static int cmp_key(const change_t *a, const change_t *b)
{
    if (a->head != b->head)
        return a->head < b->head ? -1 : 1;
    int c = memcmp(a->key + 8, b->key + 8, (a->len < b->len ? a->len : b->len) - 8);
    return c ? c : (a->len < b->len ? -1 : a->len > b->len);
}

static int cmp_change(const void *pa, const void *pb)
{
    const change_t *a = pa, *b = pb;
    int c = cmp_key(a, b);
    return c ? c : (a->ord < b->ord ? -1 : a->ord > b->ord);
}

/* Apply up to max records of the log in r's (write) transaction; *taken: records applied. */
static pdcbb_err_t apply_batch(bbd_req_t *r, size_t max, size_t *taken)
{
    pdcbb_cursor_t *cur;
    pdcbb_val_t k, v;
    batch_t b = {.r = r};
    uint64_t first = 0, last = 0;
    size_t n = 0;
    pdcbb_err_t rc = OPS->cursor_open(r->txn, PDCBB_T_TAGLOG, &cur);
    if (rc != PDCBB_OK)
        return rc;
    for (rc = OPS->cursor_seek(cur, (pdcbb_val_t){NULL, 0}, &k, &v); rc == PDCBB_OK && n < max;
         rc = OPS->cursor_next(cur, &k, &v)) {
        const uint8_t *p = v.data;
        size_t nlen = k.len == 8 && v.len >= LOG_HDR ? log_name_len(p) : 0;
        if (k.len != 8 || v.len < LOG_HDR || (p[0] != 'A' && p[0] != 'D') ||
            nlen > v.len - LOG_HDR) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        rec_t x = {SPACE_TAG,          (const char *)p + LOG_HDR, nlen,
                   p + LOG_HDR + nlen, v.len - LOG_HDR - nlen,    pdcbb_key_get_u64(p + 1)};
        if ((rc = rec_keys(&x, p[0] == 'A', emit_batch, &b)) != PDCBB_OK)
            break;
        last = pdcbb_key_get_u64(k.data);
        if (n++ == 0)
            first = last;
    }
    OPS->cursor_close(cur);
    if (rc == PDCBB_ERR_NOT_FOUND)
        rc = PDCBB_OK;
    if (rc == PDCBB_OK && b.n > 1)
        qsort(b.c, b.n, sizeof(*b.c), cmp_change);
    /* Of the changes of one key (neighbours now, in log order), the last one is the result.
     * Written in key order through one cursor: each search starts on the page of the last. */
    pdcbb_cursor_t *ic = NULL;
    if (rc == PDCBB_OK && b.n > 0)
        rc = OPS->cursor_open(r->txn, PDCBB_T_TAGIDX, &ic);
    for (size_t i = 0; rc == PDCBB_OK && i < b.n; i++) {
        const change_t *x = &b.c[i];
        if (i + 1 < b.n && cmp_key(x, &b.c[i + 1]) == 0)
            continue;
        pdcbb_val_t key = {x->key, x->len};
        if (x->add)
            rc = OPS->cursor_put(ic, key, (pdcbb_val_t){"", 0});
        else if ((rc = OPS->cursor_del(ic, key)) == PDCBB_ERR_NOT_FOUND)
            rc = PDCBB_OK;
    }
    if (ic)
        OPS->cursor_close(ic);
    free(b.c);
    /* The records applied are the first n of the log: keys first..last, with gaps where a
     * transaction aborted. */
    pdcbb_cursor_t *lc = NULL;
    if (rc == PDCBB_OK && n > 0)
        rc = OPS->cursor_open(r->txn, PDCBB_T_TAGLOG, &lc);
    for (size_t done = 0; rc == PDCBB_OK && done < n; first++) {
        uint8_t key[8];
        pdcbb_key_u64(key, first);
        rc = OPS->cursor_del(lc, (pdcbb_val_t){key, 8});
        if (rc == PDCBB_OK)
            done++;
        else if (rc == PDCBB_ERR_NOT_FOUND && first < last)
            rc = PDCBB_OK;
    }
    /* (If the transaction aborts, the log is longer than this says until it is learnt again:
     * the bound then applies a little late.) */
    if (rc == PDCBB_OK && n > 0)
        r->d->tagidx_first_seq = last + 1;
    if (lc)
        OPS->cursor_close(lc);
    if (rc == PDCBB_OK)
        *taken = n;
    return rc;
}

pdcbb_err_t bbd_tagidx_apply(bbd_t *d, size_t max, int *more)
{
    pdcbb_err_t rc = PDCBB_OK;
    size_t total = 0;
    int left = d->tagidx_pending || !d->tagidx_known;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (rc == PDCBB_OK && left && (max == 0 || total < max)) {
        bbd_req_t r = {.d = d};
        size_t want = max == 0 ? APPLY_BATCH : max - total, taken = 0;
        if (want > APPLY_BATCH)
            want = APPLY_BATCH;
        if ((rc = d->store_ops->txn_begin(d->store, PDCBB_TXN_WRITE, &r.txn)) != PDCBB_OK)
            break;
        uint64_t n;
        if (!d->tagidx_known)
            rc = log_learn(d, r.txn, &n);
        if (rc == PDCBB_OK && d->tagidx_pending)
            rc = apply_batch(&r, want, &taken);
        if (rc == PDCBB_OK && taken > 0)
            rc = d->store_ops->txn_commit(r.txn);
        else
            d->store_ops->txn_abort(r.txn);
        bbd_req_scratch_free(&r);
        if (rc != PDCBB_OK)
            break;
        total += taken;
        /* A short batch emptied the log. */
        if (taken < want)
            d->tagidx_pending = 0;
        left = d->tagidx_pending;
    }
    if (rc != PDCBB_OK)
        PDCBB_ERROR("cannot apply the tag index's log (%zu records applied): %s", total,
                    pdcbb_strerror(rc));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (rc == PDCBB_OK && secs >= 0.1)
        PDCBB_INFO("tag index: %zu logged changes applied in %.3f s%s", total, secs,
                   left ? ", more wait" : "");
    else if (rc == PDCBB_OK && total > 0)
        PDCBB_DEBUG("tag index: %zu logged changes applied in %.3f s%s", total, secs,
                    left ? ", more wait" : "");
    if (more)
        *more = rc == PDCBB_OK ? left : 1;
    return rc;
}

pdcbb_err_t bbd_tagidx_open(bbd_t *d)
{
    pdcbb_txn_t *txn;
    uint64_t n = 0;
    pdcbb_err_t rc = d->store_ops->txn_begin(d->store, PDCBB_TXN_READ, &txn);
    if (rc != PDCBB_OK)
        return rc;
    const char *env = getenv("PDCBB_TAGIDX_IDLE");
    d->tagidx_idle_off = env != NULL && strcmp(env, "0") == 0;
    env = getenv("PDCBB_TAGIDX_LOG_MAX");
    d->tagidx_log_max = env && strtoull(env, NULL, 10) > 0 ? strtoull(env, NULL, 10) : LOG_MAX;
    if (d->tagidx_idle_off)
        PDCBB_INFO("tag index: the log is applied by searches only (PDCBB_TAGIDX_IDLE=0)");
    rc = log_learn(d, txn, &n);
    d->store_ops->txn_abort(txn);
    if (rc == PDCBB_OK && n > 0)
        PDCBB_INFO("tag index: %llu logged tag changes to apply (left by the previous run)",
                   (unsigned long long)n);
    return rc;
}

void bbd_tagidx_before(bbd_t *d, unsigned op)
{
    if (op != PDCBB_OP_TAG_SEARCH && op != PDCBB_OP_TAG_QUERY)
        return;
    if (d->tagidx_known && !d->tagidx_pending)
        return;
    /* One bounded batch: a search of a daemon that is never idle still moves the log into
     * the index, and no search waits for a long log (the search reads what is left, and is
     * answered even when the index cannot grow: the error is logged). Tests set the batch
     * with PDCBB_TAGIDX_SEARCH_BATCH (0: none, the search reads the whole log). */
    const char *env = getenv("PDCBB_TAGIDX_SEARCH_BATCH");
    size_t n = env ? (size_t)strtoul(env, NULL, 10) : SEARCH_BATCH;
    if (n > 0)
        bbd_tagidx_apply(d, n, NULL);
}

int bbd_tagidx_idle(bbd_t *d, double now, int *wait_ms)
{
    *wait_ms = -1;
    if ((d->tagidx_known && !d->tagidx_pending) || d->tagidx_idle_off || now < d->tagidx_retry)
        return 0;
    if (d->stats.requests != d->tagidx_seen) {
        d->tagidx_seen = d->stats.requests;
        d->tagidx_quiet = now;
    }
    *wait_ms = IDLE_POLL_MS;
    if (now - d->tagidx_quiet < IDLE_AFTER_SECONDS)
        return 0;
    int more = 0;
    /* On an error (logged), the next search tries again and reports it; idle passes wait. */
    if (bbd_tagidx_apply(d, IDLE_BATCH, &more) != PDCBB_OK) {
        d->tagidx_retry = now + 1;
        more = 0;
    }
    if (!more)
        *wait_ms = -1;
    return more;
}

/* ------------------------------------------------------------------ record iteration */

/* Copies of the records of one key prefix (the store's pointers die with the next write). */
typedef struct kv_copy {
    uint8_t *k;
    size_t klen;
    uint8_t *v;
    size_t vlen;
} kv_copy_t;

static pdcbb_err_t collect_prefix(bbd_req_t *r, pdcbb_table_t t, const uint8_t *prefix, size_t plen,
                                  kv_copy_t **out, size_t *n)
{
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    size_t cap = 0;
    kv_copy_t *a = NULL;
    *n = 0;
    pdcbb_err_t rc = OPS->cursor_open(r->txn, t, &c);
    if (rc != PDCBB_OK)
        return rc;
    for (rc = OPS->cursor_seek(c, (pdcbb_val_t){prefix, plen}, &k, &v);
         rc == PDCBB_OK && k.len >= plen && memcmp(k.data, prefix, plen) == 0;
         rc = OPS->cursor_next(c, &k, &v)) {
        kv_copy_t *b = bbd_req_grow(r, a, *n, 1, &cap, sizeof(*b), 8);
        if (b == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        a = b;
        uint8_t *m = bbd_req_alloc(r, k.len + v.len + 1);
        if (m == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        memcpy(m, k.data, k.len);
        memcpy(m + k.len, v.data, v.len);
        m[k.len + v.len] = 0;
        a[*n] = (kv_copy_t){m, k.len, m + k.len, v.len};
        (*n)++;
    }
    OPS->cursor_close(c);
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND)
        return rc;
    *out = a;
    return PDCBB_OK;
}

/* A DART record's value is key NUL value. */
static int dart_split(const kv_copy_t *e, rec_t *x)
{
    const uint8_t *nul = memchr(e->v, 0, e->vlen);
    if (e->klen != 17 || nul == NULL)
        return 0;
    x->space = (uint8_t)('0' + e->k[8]);
    x->name = (const char *)e->v;
    x->name_len = (size_t)(nul - e->v);
    x->value = nul + 1;
    x->value_len = e->vlen - x->name_len - 1;
    x->id = pdcbb_key_get_u64(e->k);
    return 1;
}

pdcbb_err_t bbd_tagidx_forget(bbd_req_t *r, uint64_t id)
{
    uint8_t prefix[8];
    kv_copy_t *a;
    size_t n;
    pdcbb_key_u64(prefix, id);
    /* Tags: their entries go here, the records with the caller's delete of the tag table. */
    pdcbb_err_t rc = collect_prefix(r, PDCBB_T_TAG, prefix, 8, &a, &n);
    for (size_t i = 0; rc == PDCBB_OK && i < n; i++) {
        if (a[i].klen <= 8 || a[i].vlen < 4)
            return PDCBB_ERR_STORE;
        rc = log_append(r, 0, id, (const char *)a[i].k + 8, a[i].klen - 8, a[i].v + 4,
                        a[i].vlen - 4);
    }
    /* DART references to an object (they live here, pdcbb_dart_home): they would name an
     * object that no longer exists. */
    n = 0;
    if (rc == PDCBB_OK && pdcbb_meta_id_kind(id) == PDCBB_META_KIND_OBJ)
        rc = collect_prefix(r, PDCBB_T_DART, prefix, 8, &a, &n);
    for (size_t i = 0; rc == PDCBB_OK && i < n; i++) {
        rec_t x;
        if (!dart_split(&a[i], &x))
            return PDCBB_ERR_STORE;
        if ((rc = rec_entries(r, &x, 0)) == PDCBB_OK)
            rc = OPS->del(r->txn, PDCBB_T_DART, (pdcbb_val_t){a[i].k, a[i].klen});
    }
    return rc;
}

/* ------------------------------------------------------------------ search */

/* What a search asks: a name pattern, a value predicate, a space and an id kind. */
typedef struct query {
    uint8_t space;
    pdcbb_pat_t name;
    uint32_t value_mode; /* PDCBB_TAGVAL_* */
    pdcbb_pat_t value;   /* PATTERN */
    const void *bytes;   /* BYTES */
    size_t bytes_len;
    unsigned kind;       /* tags: 0 any, else PDCBB_META_KIND_* */
} query_t;

static int rec_matches(const query_t *q, const char *name, size_t nlen, const void *value,
                       size_t vlen)
{
    size_t tl;
    if (!pdcbb_pat_match(&q->name, name, nlen))
        return 0;
    switch (q->value_mode) {
    case PDCBB_TAGVAL_ANY: return 1;
    case PDCBB_TAGVAL_BYTES:
        return vlen == q->bytes_len && (vlen == 0 || memcmp(value, q->bytes, vlen) == 0);
    default: return pdcbb_pat_text_of(value, vlen, &tl) && pdcbb_pat_match(&q->value, value, tl);
    }
}

/* 1 if a record of id in q's space matches q. */
static pdcbb_err_t verify(bbd_req_t *r, const query_t *q, uint64_t id, int *match)
{
    uint8_t prefix[9];
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    int tags = q->space == SPACE_TAG;
    size_t plen = tags ? 8 : 9;
    pdcbb_key_u64(prefix, id);
    prefix[8] = (uint8_t)(q->space - '0');
    *match = 0;
    pdcbb_err_t rc = OPS->cursor_open(r->txn, tags ? PDCBB_T_TAG : PDCBB_T_DART, &c);
    if (rc != PDCBB_OK)
        return rc;
    for (rc = OPS->cursor_seek(c, (pdcbb_val_t){prefix, plen}, &k, &v);
         rc == PDCBB_OK && !*match && k.len >= plen && memcmp(k.data, prefix, plen) == 0;
         rc = OPS->cursor_next(c, &k, &v)) {
        if (tags) {
            if (k.len > 8 && v.len >= 4)
                *match = rec_matches(q, (const char *)k.data + 8, k.len - 8,
                                     (const uint8_t *)v.data + 4, v.len - 4);
        } else {
            const uint8_t *nul = memchr(v.data, 0, v.len);
            if (nul != NULL) {
                size_t nl = (size_t)(nul - (const uint8_t *)v.data);
                *match = rec_matches(q, v.data, nl, nul + 1, v.len - nl - 1);
            }
        }
    }
    OPS->cursor_close(c);
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One side's key range of the index and the candidate ids read from it so far. */
typedef struct range {
    uint8_t prefix[2 + IDX_CAP + 1];
    size_t plen;
    pdcbb_cursor_t *c;
    int started, done;
    uint64_t *cand; /* malloc'ed */
    size_t n, cap;
} range_t;

/* The range of pattern p on field 'N' (names) or 'V' (values) of space. */
static void range_init(range_t *g, uint8_t space, int on_value, const pdcbb_pat_t *p)
{
    uint8_t form;
    int reversed = 0;
    size_t cap = IDX_CAP;
    memset(g, 0, sizeof(*g));
    switch (p->kind) {
    case PDCBB_PAT_EXACT:
    case PDCBB_PAT_PREFIX: form = on_value ? 'V' : 'N'; break;
    case PDCBB_PAT_SUFFIX:
        form = on_value ? 'W' : 'R';
        reversed = 1;
        break;
    default:
        form = on_value ? 'Y' : 'X';
        cap = SFX_CAP;
        break;
    }
    /* space, form, the literal (reversed for suffixes, cut at cap) and, for an exact literal,
     * its terminator. */
    size_t n = p->len < cap ? p->len : cap;
    g->prefix[0] = space;
    g->prefix[1] = form;
    for (size_t i = 0; i < n; i++)
        g->prefix[2 + i] = (uint8_t)(reversed ? p->lit[p->len - 1 - i] : p->lit[i]);
    g->plen = 2 + n;
    if (p->kind == PDCBB_PAT_EXACT)
        g->prefix[g->plen++] = p->len > cap ? 1 : 0;
}

/* Read the next entry of g's range: its id joins the candidates (kind-filtered). Sets done at
 * the end of the range. */
static pdcbb_err_t range_step(bbd_req_t *r, range_t *g, unsigned kind)
{
    pdcbb_val_t k, v;
    pdcbb_err_t rc;
    if (!g->started) {
        g->started = 1;
        if ((rc = OPS->cursor_open(r->txn, PDCBB_T_TAGIDX, &g->c)) != PDCBB_OK)
            return rc;
        rc = OPS->cursor_seek(g->c, (pdcbb_val_t){g->prefix, g->plen}, &k, &v);
    } else {
        rc = OPS->cursor_next(g->c, &k, &v);
    }
    if (rc == PDCBB_ERR_NOT_FOUND || (rc == PDCBB_OK && (k.len < g->plen ||
                                                         memcmp(k.data, g->prefix, g->plen))))
    {
        g->done = 1;
        return PDCBB_OK;
    }
    if (rc != PDCBB_OK)
        return rc;
    if (k.len < g->plen + 16)
        return PDCBB_ERR_STORE;
    uint64_t id = pdcbb_key_get_u64((const uint8_t *)k.data + k.len - 16);
    if ((kind && pdcbb_meta_id_kind(id) != kind) || (g->n && g->cand[g->n - 1] == id))
        return PDCBB_OK; /* a record's suffixes often come together */
    uint64_t *b = pdcbb_grow(g->cand, g->n, &g->cap, sizeof(*b), 256);
    if (b == NULL)
        return PDCBB_ERR_NOMEM;
    g->cand = b;
    g->cand[g->n++] = id;
    return PDCBB_OK;
}

static void range_close(bbd_req_t *r, range_t *g)
{
    if (g->c)
        OPS->cursor_close(g->c);
    free(g->cand);
}

/*
 * Tag changes still in the log (not yet in the index) give candidates too: the ids of its adds
 * that match q. Its removes need nothing: every candidate is checked against the tag table,
 * which drops the index's entries of removed or overwritten values. A scan of the log: cheap
 * while the log is short, which applying it before searches and when idle sees to.
 */
static pdcbb_err_t log_candidates(bbd_req_t *r, const query_t *q, uint64_t **cand, size_t *n,
                                  size_t *cap)
{
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    if (q->space != SPACE_TAG || (r->d->tagidx_known && !r->d->tagidx_pending))
        return PDCBB_OK;
    pdcbb_err_t rc = OPS->cursor_open(r->txn, PDCBB_T_TAGLOG, &c);
    if (rc != PDCBB_OK)
        return rc;
    for (rc = OPS->cursor_seek(c, (pdcbb_val_t){NULL, 0}, &k, &v); rc == PDCBB_OK;
         rc = OPS->cursor_next(c, &k, &v)) {
        const uint8_t *p = v.data;
        size_t nlen;
        if (v.len < LOG_HDR || (nlen = log_name_len(p)) > v.len - LOG_HDR) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        uint64_t id = pdcbb_key_get_u64(p + 1);
        if (p[0] != 'A' || (q->kind && pdcbb_meta_id_kind(id) != q->kind) ||
            !rec_matches(q, (const char *)p + LOG_HDR, nlen, p + LOG_HDR + nlen,
                         v.len - LOG_HDR - nlen))
            continue;
        uint64_t *b = pdcbb_grow(*cand, *n, cap, sizeof(*b), 256);
        if (b == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        *cand = b;
        (*cand)[(*n)++] = id;
    }
    OPS->cursor_close(c);
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

/*
 * The ids of q's matching records, sorted and distinct, in scratch memory. Candidates come from
 * one key range: the name's, or the value's when the query has a text value. Which one holds
 * fewer entries is not known in advance (no statistics), so both are read in step and the one
 * that ends first is taken: the cost is at most twice that of the smaller range.
 */
static pdcbb_err_t search(bbd_req_t *r, const query_t *q, uint64_t **ids, uint32_t *count,
                          uint32_t *more)
{
    range_t g[2];
    int ng = 1, win = -1;
    size_t tl;
    pdcbb_pat_t bytes_pat;
    range_init(&g[0], q->space, 0, &q->name);
    if (q->value_mode == PDCBB_TAGVAL_PATTERN) {
        range_init(&g[1], q->space, 1, &q->value);
        ng = 2;
    } else if (q->value_mode == PDCBB_TAGVAL_BYTES &&
               pdcbb_pat_text_of(q->bytes, q->bytes_len, &tl) && tl > 0) {
        /* Equal bytes have equal text: the value's exact entries hold every candidate. */
        bytes_pat = (pdcbb_pat_t){PDCBB_PAT_EXACT, q->bytes, tl};
        range_init(&g[1], q->space, 1, &bytes_pat);
        ng = 2;
    }
    pdcbb_err_t rc = PDCBB_OK;
    while (rc == PDCBB_OK && win < 0)
        for (int i = 0; i < ng && rc == PDCBB_OK && win < 0; i++)
            if ((rc = range_step(r, &g[i], q->kind)) == PDCBB_OK && g[i].done)
                win = i;
    uint64_t *cand = NULL;
    size_t ncand = 0, ccap = 0;
    if (rc == PDCBB_OK) {
        cand = g[win].cand;
        ncand = g[win].n;
        ccap = g[win].cap;
        g[win].cand = NULL;
    }
    for (int i = 0; i < ng; i++)
        range_close(r, &g[i]);
    if (rc == PDCBB_OK)
        rc = log_candidates(r, q, &cand, &ncand, &ccap);
    if (rc != PDCBB_OK) {
        free(cand);
        return rc;
    }
    if (ncand > 1)
        qsort(cand, ncand, sizeof(*cand), cmp_u64);
    size_t limit = PDCBB_PAYLOAD_MAX / 8 - 16;
    uint64_t *out = bbd_req_alloc(r, (ncand ? ncand : 1) * sizeof(*out));
    if (out == NULL) {
        free(cand);
        return PDCBB_ERR_NOMEM;
    }
    uint32_t nout = 0;
    *more = 0;
    for (size_t i = 0; i < ncand && rc == PDCBB_OK; i++) {
        int match;
        if (i && cand[i] == cand[i - 1])
            continue;
        if ((rc = verify(r, q, cand[i], &match)) == PDCBB_OK && match) {
            if (nout == limit) {
                *more = 1;
                break;
            }
            out[nout++] = cand[i];
        }
    }
    free(cand);
    if (rc != PDCBB_OK)
        return rc;
    *ids = out;
    *count = nout;
    return PDCBB_OK;
}

pdcbb_err_t bbd_tagidx_tag_search(bbd_req_t *r, const char *name, uint32_t value_mode,
                                  const void *value, size_t value_len, unsigned kind,
                                  uint64_t **ids, uint32_t *count, uint32_t *more)
{
    query_t q = {.space = SPACE_TAG, .value_mode = value_mode, .bytes = value,
                 .bytes_len = value_len, .kind = kind};
    pdcbb_err_t rc = bbd_check_name("tag", name);
    if (rc != PDCBB_OK)
        return rc;
    if (kind != 0 && kind != PDCBB_META_KIND_CONT && kind != PDCBB_META_KIND_OBJ)
        return PDCBB_ERR_INVAL;
    if (value_len > PDCBB_TAG_VALUE_MAX)
        return PDCBB_ERR_TOO_BIG;
    rc = pdcbb_pat_parse(name, strlen(name), &q.name);
    if (rc != PDCBB_OK)
        return rc;
    switch (value_mode) {
    case PDCBB_TAGVAL_ANY: break;
    case PDCBB_TAGVAL_BYTES:
        if (value_len == 0)
            return PDCBB_ERR_INVAL;
        break;
    case PDCBB_TAGVAL_PATTERN: {
        size_t tl;
        if (!pdcbb_pat_text_of(value, value_len, &tl))
            return PDCBB_ERR_INVAL;
        if ((rc = pdcbb_pat_parse(value, tl, &q.value)) != PDCBB_OK)
            return rc;
        break;
    }
    default: return PDCBB_ERR_INVAL;
    }
    return search(r, &q, ids, count, more);
}

/* ------------------------------------------------------------------ DART handlers */

/* A DART key or value (max PDCBB_DART_TEXT_MAX), or a pattern of one (two '*' more). */
static pdcbb_err_t check_text(const char *s, size_t max)
{
    if (s == NULL || s[0] == '\0')
        return PDCBB_ERR_INVAL;
    return strlen(s) > max ? PDCBB_ERR_TOO_BIG : PDCBB_OK;
}

/* Check a DART reference of this daemon and build its primary key. */
static pdcbb_err_t dart_ref(bbd_req_t *r, uint32_t ref_type, const char *k, const char *v,
                            uint64_t data, rec_t *x, uint8_t key[17])
{
    pdcbb_err_t rc;
    if (ref_type < 1 || ref_type > 3)
        return PDCBB_ERR_INVAL;
    if ((rc = check_text(k, PDCBB_DART_TEXT_MAX)) != PDCBB_OK ||
        (rc = check_text(v, PDCBB_DART_TEXT_MAX)) != PDCBB_OK)
        return rc;
    if (pdcbb_dart_home(data, r->d->nservers) != r->d->rank)
        return PDCBB_ERR_BAD_ID;
    *x = (rec_t){(uint8_t)('0' + ref_type), k, strlen(k), v, strlen(v), data};
    pdcbb_key_u64(key, data);
    key[8] = (uint8_t)ref_type;
    pdcbb_key_u64(key + 9, rec_hash(x));
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_dart_insert(bbd_req_t *r, const pdcbb_dart_insert_req_t *q,
                               pdcbb_dart_insert_rep_t *p)
{
    rec_t x;
    uint8_t key[17];
    pdcbb_val_t v;
    pdcbb_err_t rc = dart_ref(r, q->ref_type, q->key, q->value, q->data, &x, key);
    if (rc != PDCBB_OK)
        return rc;
    rc = OPS->get(r->txn, PDCBB_T_DART, (pdcbb_val_t){key, 17}, &v);
    if (rc == PDCBB_OK)
        return PDCBB_OK; /* already there: inserting a reference twice keeps one */
    if (rc != PDCBB_ERR_NOT_FOUND)
        return rc;
    size_t kl = x.name_len, vl = x.value_len;
    uint8_t *val = bbd_req_alloc(r, kl + 1 + vl);
    if (val == NULL)
        return PDCBB_ERR_NOMEM;
    memcpy(val, x.name, kl);
    val[kl] = 0;
    memcpy(val + kl + 1, x.value, vl);
    if ((rc = OPS->put(r->txn, PDCBB_T_DART, (pdcbb_val_t){key, 17},
                       (pdcbb_val_t){val, kl + 1 + vl}, 0)) != PDCBB_OK)
        return rc;
    return rec_entries(r, &x, 1);
}

pdcbb_err_t bbd_op_dart_delete(bbd_req_t *r, const pdcbb_dart_delete_req_t *q,
                               pdcbb_dart_delete_rep_t *p)
{
    rec_t x;
    uint8_t key[17];
    pdcbb_val_t v;
    pdcbb_err_t rc = dart_ref(r, q->ref_type, q->key, q->value, q->data, &x, key);
    if (rc == PDCBB_OK)
        rc = OPS->get(r->txn, PDCBB_T_DART, (pdcbb_val_t){key, 17}, &v);
    if (rc == PDCBB_OK)
        rc = OPS->del(r->txn, PDCBB_T_DART, (pdcbb_val_t){key, 17});
    return rc == PDCBB_OK ? rec_entries(r, &x, 0) : rc;
}

pdcbb_err_t bbd_op_dart_search(bbd_req_t *r, const pdcbb_dart_search_req_t *q,
                               pdcbb_dart_search_rep_t *p)
{
    query_t s = {.value_mode = PDCBB_TAGVAL_PATTERN};
    pdcbb_err_t rc;
    if (q->ref_type < 1 || q->ref_type > 3)
        return PDCBB_ERR_INVAL;
    if ((rc = check_text(q->key, PDCBB_DART_TEXT_MAX + 2)) != PDCBB_OK ||
        (rc = check_text(q->value, PDCBB_DART_TEXT_MAX + 2)) != PDCBB_OK)
        return rc;
    if ((rc = pdcbb_pat_parse(q->key, strlen(q->key), &s.name)) != PDCBB_OK ||
        (rc = pdcbb_pat_parse(q->value, strlen(q->value), &s.value)) != PDCBB_OK)
        return rc;
    s.space = (uint8_t)('0' + q->ref_type);
    if ((rc = search(r, &s, &p->ids, &p->ids_count, &p->more)) != PDCBB_OK)
        return rc;
    /* With tree set, the other daemons' references too (bbd_fanout.c). */
    return bbd_fanout_ids(r, PDCBB_OP_DART_SEARCH, q, q->tree, &p->ids, &p->ids_count, &p->more);
}

pdcbb_err_t bbd_op_tag_search(bbd_req_t *r, const pdcbb_tag_search_req_t *q,
                              pdcbb_tag_search_rep_t *p)
{
    pdcbb_err_t rc = bbd_tagidx_tag_search(r, q->name, q->value_mode, q->value, q->value_len,
                                           q->kind, &p->ids, &p->ids_count, &p->more);
    if (rc != PDCBB_OK)
        return rc;
    /* With tree set, the other daemons' matches too (asked down the tree, merged here). */
    return bbd_fanout_ids(r, PDCBB_OP_TAG_SEARCH, q, q->tree, &p->ids, &p->ids_count, &p->more);
}
