/*
 * pdc_query_eval.c - evaluating PDC data queries (pdc_query_internal.h): the daemons that hold
 * the data evaluate (QUERY_EVAL, bbd/bbd_query.c) and send only hits or counts.
 *
 * Who evaluates what. For each object the client names every daemon's own pieces of the query's
 * scope (the PDCquery_sel_region region, else the whole object), by the object's placement as
 * client_transfer.c places data:
 *   PDC_OBJ_STATIC     the home daemon: the whole scope;
 *   PDC_REGION_STATIC  daemon k: the scope's part of stripe k;
 *   PDC_REGION_LOCAL, PDC_REGION_DYNAMIC
 *                      from the home daemon's placement map (MAP_GET), oldest write first:
 *                      each written box to its daemon, minus the boxes written later (another
 *                      daemon, or this one, holds newer values there); elements that no write
 *                      placed are evaluated here, in the client, as the zeros they read as.
 * Never-written elements are value 0 everywhere (a region read returns 0 for them), so they
 * match a predicate that 0 satisfies, exactly as reading the object and filtering would.
 *
 * Several objects. A subtree whose leaves all name one object is one program sent to that
 * object's daemons. Where a subtree mixes objects (which must then have the same dimensions),
 * each side is evaluated to its sorted set of linear element indices and the client intersects
 * (AND) or merges (OR) them by coordinate.
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pdc_query_internal.h"
#include "pdcbb_checked.h"

/* Hits asked for per QUERY_EVAL reply. */
#define QUERY_HITS_PER_REPLY (1u << 20)

/* Hits asked for per reply; PDCBB_QUERY_HITS_PER_REPLY (a debugging knob, for tests) lowers it
 * so that a selection takes several replies (daemons answer at least PDCBB_QBLOCK). */
static uint64_t hits_per_reply(void)
{
    const char *e = getenv("PDCBB_QUERY_HITS_PER_REPLY");
    uint64_t v = e ? strtoull(e, NULL, 10) : 0;
    return v > 0 && v < QUERY_HITS_PER_REPLY ? v : QUERY_HITS_PER_REPLY;
}

static __thread struct {
    uint64_t scanned, skipped, moved;
} last_stats;

void query_stats_reset(void)
{
    memset(&last_stats, 0, sizeof(last_stats));
}

/* ------------------------------------------------------------------ hit sets */

/*
 * Memory for hit arrays and selections (freed with free()). Large ones are aligned to and
 * advised for 2 MiB pages: fresh memory is faulted in one 4 KiB page at a time otherwise, which
 * on a virtual machine costs more than the hits themselves (measured: a 10% selection of 1 GiB,
 * 27 million hits, spent most of its time in page faults).
 */
void *query_big_alloc(size_t len)
{
    const size_t huge = (size_t)2 << 20;
    if (len < 2 * huge)
        return malloc(len ? len : 1);
    void *p = NULL;
    if (posix_memalign(&p, huge, (len + huge - 1) & ~(huge - 1)) != 0)
        return NULL;
    madvise(p, (len + huge - 1) & ~(huge - 1), MADV_HUGEPAGE); /* advice only */
    return p;
}

static int hits_reserve(hitset_t *h, uint64_t more)
{
    if (h->cap - h->n >= more)
        return 0;
    uint64_t cap = h->cap ? h->cap : 1024;
    while (cap - h->n < more)
        cap *= 2;
    if (cap > SIZE_MAX / sizeof(uint64_t))
        return -1;
    uint64_t *v = query_big_alloc(cap * sizeof(uint64_t));
    if (v == NULL)
        return -1;
    if (h->n)
        memcpy(v, h->v, h->n * sizeof(uint64_t));
    free(h->v);
    h->v = v;
    h->cap = cap;
    return 0;
}

void query_hits_free(hitset_t *h)
{
    free(h->v);
    memset(h, 0, sizeof(*h));
}

/* LSD radix sort on 16-bit digits, skipping digits that are equal in every key. */
static int hits_sort(hitset_t *h)
{
    uint64_t i, n = h->n, or_all = 0, and_all = UINT64_MAX;
    for (i = 1; i < n && h->v[i - 1] < h->v[i]; i++)
        ;
    if (i >= n)
        return 0; /* already sorted (the usual case: pieces come in order) */
    uint64_t *tmp = query_big_alloc(n * sizeof(uint64_t));
    size_t *cnt = malloc(65536 * sizeof(size_t));
    if (tmp == NULL || cnt == NULL) {
        free(tmp);
        free(cnt);
        return -1;
    }
    for (i = 0; i < n; i++) {
        or_all |= h->v[i];
        and_all &= h->v[i];
    }
    uint64_t *src = h->v, *dst = tmp;
    for (unsigned shift = 0; shift < 64; shift += 16) {
        if ((((or_all ^ and_all) >> shift) & 0xffff) == 0)
            continue;
        memset(cnt, 0, 65536 * sizeof(size_t));
        for (i = 0; i < n; i++)
            cnt[(src[i] >> shift) & 0xffff]++;
        size_t sum = 0;
        for (size_t k = 0; k < 65536; k++) {
            size_t c = cnt[k];
            cnt[k] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++)
            dst[cnt[(src[i] >> shift) & 0xffff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != h->v) {
        memcpy(h->v, src, n * sizeof(uint64_t));
    }
    free(tmp);
    free(cnt);
    return 0;
}

/* ------------------------------------------------------------------ pieces per daemon */

void query_plan_free(plan_t *pl)
{
    for (unsigned s = 0; pl->w && s < client_g.nservers; s++)
        free(pl->w[s]);
    free(pl->w);
    free(pl->n);
    free(pl->cap);
    free(pl->written);
    memset(pl, 0, sizeof(*pl));
}

static pdcbb_err_t plan_add(plan_t *pl, unsigned daemon, const pdcbb_box_t *b,
                            const pdcbb_box_t *excl, uint32_t nexcl)
{
    uint32_t nd = b->ndim, need = 1 + 2 * nd * (1 + nexcl);
    if (pl->cap[daemon] - pl->n[daemon] < need) {
        uint32_t cap = pl->cap[daemon] ? pl->cap[daemon] : 64;
        while (cap - pl->n[daemon] < need) {
            if (cap > PDCBB_PAYLOAD_MAX / 16)
                return client_fail(PDCBB_ERR_TOO_BIG, "query: too many written pieces to name");
            cap *= 2;
        }
        uint64_t *w = realloc(pl->w[daemon], (size_t)cap * 8);
        if (w == NULL)
            return client_fail(PDCBB_ERR_NOMEM, "query: out of memory");
        pl->w[daemon] = w;
        pl->cap[daemon] = cap;
    }
    uint64_t *w = pl->w[daemon] + pl->n[daemon];
    *w++ = nexcl;
    memcpy(w, b->off, nd * 8);
    memcpy(w + nd, b->size, nd * 8);
    w += 2 * nd;
    for (uint32_t k = 0; k < nexcl; k++, w += 2 * nd) {
        memcpy(w, excl[k].off, nd * 8);
        memcpy(w + nd, excl[k].size, nd * 8);
    }
    pl->n[daemon] += need;
    return PDCBB_OK;
}

/* REGION_STATIC: the dimension striped along, as client_transfer.c chooses it. */
int query_static_split_dim(uint32_t ndim, const uint64_t *dims)
{
    for (uint32_t d = 0; d < ndim; d++)
        if (dims[d] != PDC_SIZE_UNLIMITED && dims[d] >= client_g.nservers)
            return (int)d;
    return -1;
}

/* Remembered placements: the map entries overlapping box, oldest first. */
pdcbb_err_t query_map_entries(client_obj_t *o, const pdcbb_box_t *box, pdcbb_box_t **boxes,
                              unsigned **daemons, size_t *n)
{
    uint64_t req[1 + 2 * PDCBB_REGION_NDIM_MAX];
    uint32_t nd = box->ndim;
    req[0] = nd;
    memcpy(req + 1, box->off, nd * 8);
    memcpy(req + 1 + nd, box->size, nd * 8);
    pdcbb_map_get_req_t q = {.id = o->meta_id, .box = req, .box_count = 1 + 2 * nd};
    pdcbb_map_get_rep_t p;
    void *keep;
    *boxes = NULL;
    *daemons = NULL;
    *n = 0;
    pdcbb_err_t rc = client_op_map_get(pdcbb_meta_id_server(o->meta_id), &q, &p, &keep);
    if (rc != PDCBB_OK)
        return rc;
    size_t max = p.entries_count / (3 + 2 * nd) + 1;
    *boxes = malloc(max * sizeof(**boxes));
    *daemons = malloc(max * sizeof(**daemons));
    if (*boxes == NULL || *daemons == NULL)
        rc = client_fail(PDCBB_ERR_NOMEM, "query: out of memory");
    uint32_t pos = 0;
    while (rc == PDCBB_OK && pos < p.entries_count) {
        const uint64_t *e = p.entries + pos;
        pdcbb_box_t eb;
        if (!pdcbb_range_ok(pos, 3 + 2 * (uint64_t)nd, p.entries_count) || e[2] != nd ||
            e[1] >= client_g.nservers || pdcbb_box_make(&eb, nd, e + 3, e + 3 + nd) != PDCBB_OK) {
            rc = client_fail(PDCBB_ERR_PROTO, "query: bad MAP_GET reply for object '%s'",
                             o->name);
            break;
        }
        pos += 3 + 2 * nd;
        (*boxes)[*n] = eb;
        (*daemons)[*n] = (unsigned)e[1];
        (*n)++;
    }
    client_rpc_release(PDCBB_OP_MAP_GET, &p, keep);
    if (rc != PDCBB_OK) {
        free(*boxes);
        free(*daemons);
        *boxes = NULL;
        *daemons = NULL;
        *n = 0;
    }
    return rc;
}

pdcbb_err_t query_plan_make(client_obj_t *o, const qctx_t *cx, plan_t *pl)
{
    unsigned ns = client_g.nservers, home = pdcbb_meta_id_server(o->meta_id);
    memset(pl, 0, sizeof(*pl));
    pl->w = calloc(ns, sizeof(*pl->w));
    pl->n = calloc(ns, sizeof(*pl->n));
    pl->cap = calloc(ns, sizeof(*pl->cap));
    if (pl->w == NULL || pl->n == NULL || pl->cap == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "query: out of memory");
    if (home >= ns)
        return client_fail(PDCBB_ERR_BAD_ID, "%s: object '%s' names daemon %u of %u", cx->fn,
                           o->name, home, ns);
    switch ((int)o->prop.pub.region_partition) {
    case PDC_REGION_STATIC: {
        int dim = query_static_split_dim(cx->ndim, cx->dims);
        if (dim < 0 || ns == 1)
            return plan_add(pl, home, &cx->scope, NULL, 0);
        pdcbb_box_t *parts = malloc(ns * sizeof(*parts));
        unsigned *stripe = malloc(ns * sizeof(*stripe));
        pdcbb_err_t rc = PDCBB_OK;
        int n = parts && stripe ? pdcbb_box_split_stripes(&cx->scope, (uint32_t)dim,
                                                          cx->dims[dim], ns, parts, stripe)
                                : -1;
        if (n <= 0)
            rc = client_fail(n < 0 ? PDCBB_ERR_NOMEM : PDCBB_ERR_INTERNAL,
                             "query: cannot split the scope of object '%s'", o->name);
        for (int i = 0; i < n && rc == PDCBB_OK; i++)
            rc = plan_add(pl, stripe[i] % ns, &parts[i], NULL, 0);
        free(parts);
        free(stripe);
        return rc;
    }
    case (int)PDCBB_REGION_STRIPED: {
        uint64_t rows = client_stripe_rows(pdcbb_type_size(o->prop.pub.type), cx->ndim, cx->dims);
        uint64_t first, n = pdcbb_box_stripe_span(&cx->scope, rows, &first);
        pdcbb_err_t rc = n == 0
                             ? client_fail(PDCBB_ERR_INTERNAL,
                                           "query: cannot split the scope of object '%s'", o->name)
                             : PDCBB_OK;
        for (uint64_t k = first; k < first + n && rc == PDCBB_OK; k++) {
            pdcbb_box_t part;
            if (pdcbb_box_stripe_part(&cx->scope, rows, k, &part))
                rc = plan_add(pl, pdcbb_stripe_daemon(k, home, ns), &part, NULL, 0);
        }
        return rc;
    }
    case PDC_REGION_LOCAL:
    case PDC_REGION_DYNAMIC: {
        pdcbb_box_t *boxes;
        unsigned *daemons;
        size_t n;
        pl->remembered = 1;
        pdcbb_err_t rc = query_map_entries(o, &cx->scope, &boxes, &daemons, &n);
        if (rc != PDCBB_OK)
            return rc;
        pdcbb_box_t *excl = malloc((n + 1) * sizeof(*excl));
        pl->written = malloc((n + 1) * sizeof(*pl->written));
        if (excl == NULL || pl->written == NULL)
            rc = client_fail(PDCBB_ERR_NOMEM, "query: out of memory");
        for (size_t i = 0; i < n && rc == PDCBB_OK; i++) {
            pdcbb_box_t b;
            if (!pdcbb_box_intersect(&boxes[i], &cx->scope, &b))
                continue;
            pl->written[pl->nwritten++] = b;
            uint32_t ne = 0;
            int hidden = 0;
            for (size_t j = i + 1; j < n; j++) {
                pdcbb_box_t x;
                if (!pdcbb_box_intersect(&boxes[j], &b, &x))
                    continue;
                if (memcmp(&x, &b, sizeof(x)) == 0) {
                    hidden = 1; /* wholly rewritten later */
                    break;
                }
                excl[ne++] = x;
            }
            if (!hidden)
                rc = plan_add(pl, daemons[i], &b, excl, ne);
        }
        free(excl);
        free(boxes);
        free(daemons);
        return rc;
    }
    case PDC_OBJ_STATIC:
    default: return plan_add(pl, home, &cx->scope, NULL, 0);
    }
}

/* Remembered placements: the scope's elements no write placed (zeros), evaluated here. want:
 * HITS (append to hits), COUNT (add to *count) or STATS (*count only). */
pdcbb_err_t query_unwritten(const plan_t *pl, const qctx_t *cx, int want, hitset_t *hits,
                            uint64_t *count)
{
    uint64_t total;
    uint32_t nd = cx->ndim;
    if (pdcbb_box_count(&cx->scope, &total) != PDCBB_OK)
        return client_fail(PDCBB_ERR_TOO_BIG, "%s: the query's scope is too large", cx->fn);
    uint64_t c[PDCBB_REGION_NDIM_MAX];
    memcpy(c, cx->scope.off, nd * 8);
    for (uint64_t e = 0; e < total; e++) {
        int covered = 0;
        for (size_t k = 0; k < pl->nwritten && !covered; k++) {
            uint32_t d = 0;
            for (; d < nd; d++)
                if (c[d] < pl->written[k].off[d] || c[d] - pl->written[k].off[d] >=
                                                        pl->written[k].size[d])
                    break;
            covered = d == nd;
        }
        if (!covered) {
            if (want == PDCBB_QMODE_HITS) {
                uint64_t lin = 0;
                for (uint32_t d = 0; d < nd; d++)
                    lin += c[d] * cx->strides[d];
                if (hits_reserve(hits, 1) != 0)
                    return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
                hits->v[hits->n++] = lin;
            } else {
                (*count)++;
            }
        }
        for (int d = (int)nd - 1; d >= 0; d--) { /* odometer over the scope */
            if (++c[d] < cx->scope.off[d] + cx->scope.size[d])
                break;
            c[d] = cx->scope.off[d];
        }
    }
    return PDCBB_OK;
}

/* ------------------------------------------------------------------ evaluation */

/* One QUERY_EVAL of an object over the daemons holding pieces of it: each daemon's request
 * (req[s]: resumed while it answers "more") and hits (dh[s]), and what they add up to. */
typedef struct eval_run {
    client_obj_t *o;
    const qctx_t *cx;
    uint32_t mode;
    const uint64_t *hist;
    int cls;
    uint64_t per; /* hits asked for per reply */
    pdcbb_query_eval_req_t *req;
    hitset_t *dh;
    eval_out_t *out;
    pdcbb_err_t rc; /* the first failure */
} eval_run_t;

/* Room in dh[s] for the hits of one more reply (the daemon answers at most max(per, 65536)). */
static int eval_room(eval_run_t *e, unsigned s)
{
    uint64_t room = e->per > PDCBB_QBLOCK ? e->per : PDCBB_QBLOCK;
    if (hits_reserve(&e->dh[s], room) != 0) {
        e->rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", e->cx->fn);
        return 0;
    }
    return 1;
}

/* Daemon s's hits (blen bytes at bulk) onto dh[s], unless they were received there already. */
static void eval_hits(eval_run_t *e, unsigned s, const void *bulk, size_t blen)
{
    hitset_t *h = &e->dh[s];
    if (e->rc != PDCBB_OK || e->mode != PDCBB_QMODE_HITS || blen == 0)
        return;
    if (blen % 8 != 0)
        e->rc =
            client_fail(PDCBB_ERR_PROTO, "%s: bad QUERY_EVAL reply from daemon %u", e->cx->fn, s);
    else if (bulk == (const void *)(h->v + h->n))
        h->n += blen / 8;
    else if (hits_reserve(h, blen / 8) != 0)
        e->rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", e->cx->fn);
    else {
        memcpy(h->v + h->n, bulk, blen);
        h->n += blen / 8;
    }
}

/* Daemon s answered rep (one: its status; got: the hits just added to dh[s]). Returns 1 when
 * it has more to say: req[s] then resumes where it stopped. */
static int eval_take(eval_run_t *e, unsigned s, pdcbb_err_t one, const pdcbb_query_eval_rep_t *rep,
                     uint64_t got, const char *how, const char *why)
{
    const char *fn = e->cx->fn;
    eval_out_t *out = e->out;
    if (one != PDCBB_OK) {
        if (e->rc == PDCBB_OK)
            e->rc = client_fail(one, "%s: evaluating the query on object '%s' at daemon %u%s: %s",
                                fn, e->o->name, s, how, why);
        return 0;
    }
    if (e->rc == PDCBB_OK && e->mode == PDCBB_QMODE_HITS && got != rep->count)
        e->rc =
            client_fail(PDCBB_ERR_PROTO, "%s: daemon %u sent %" PRIu64 " hits, announced %" PRIu64,
                        fn, s, got, rep->count);
    if (e->rc != PDCBB_OK)
        return 0;
    last_stats.scanned += rep->scanned;
    last_stats.skipped += rep->skipped;
    if (e->mode == PDCBB_QMODE_HITS)
        last_stats.moved += rep->count;
    else
        out->count += rep->count;
    if (e->mode == PDCBB_QMODE_STATS && rep->stats_count == 3) {
        pdcbb_qstats_t st = {.has = rep->stats[2] != 0};
        st.mn.bits = rep->stats[0];
        st.mx.bits = rep->stats[1];
        pdcbb_qstats_merge(e->cls, &out->st, &st);
    }
    if (e->mode == PDCBB_QMODE_HIST && e->hist && rep->bins_count == e->hist[2]) {
        for (uint32_t b = 0; b < rep->bins_count; b++)
            out->bins[b] += rep->bins[b];
    } else if (e->mode == PDCBB_QMODE_HIST) {
        e->rc = client_fail(PDCBB_ERR_PROTO, "%s: bad histogram from daemon %u", fn, s);
        return 0;
    }
    if (!rep->more)
        return 0;
    pdcbb_query_eval_req_t *q = &e->req[s];
    if (rep->next_piece == q->resume_piece && rep->next_elem == q->resume_elem) {
        e->rc = client_fail(PDCBB_ERR_PROTO, "%s: daemon %u made no progress in the query", fn, s);
        return 0;
    }
    q->resume_piece = rep->next_piece;
    q->resume_elem = rep->next_elem;
    return 1;
}

/* Every daemon at once, each asked directly (or forwarded by this node's daemon): hits are
 * received straight into dh[s] (no copy). */
static void eval_direct(eval_run_t *e, unsigned ns)
{
    client_pending_t **pend = calloc(ns, sizeof(*pend));
    unsigned left = 0;
    if (pend == NULL) {
        e->rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", e->cx->fn);
        return;
    }
    for (unsigned s = 0; s < ns && e->rc == PDCBB_OK; s++) {
        if (e->req[s].pieces_count == 0)
            continue;
        void *dest = NULL;
        size_t dest_len = 0;
        if (e->mode == PDCBB_QMODE_HITS) {
            if (!eval_room(e, s))
                break;
            dest = e->dh[s].v + e->dh[s].n;
            dest_len = (size_t)(e->dh[s].cap - e->dh[s].n) * 8;
        }
        e->rc =
            client_rpc_post(s, PDCBB_OP_QUERY_EVAL, &e->req[s], NULL, 0, dest, dest_len, &pend[s]);
        if (e->rc == PDCBB_OK)
            left++;
    }
    while (left > 0) {
        for (unsigned s = 0; s < ns; s++) {
            client_pending_t *p = pend[s];
            if (p == NULL)
                continue;
            client_rpc_wait(p, client_g.cfg.request_timeout);
            pend[s] = NULL;
            left--;
            /* The bulk part: in dh[s] already, or (did not fit) copied before p is freed. */
            uint64_t before = e->dh[s].n;
            eval_hits(e, s, p->bulk, p->done && p->status == PDCBB_OK ? p->bulk_len : 0);
            pdcbb_query_eval_rep_t rep;
            void *keep;
            pdcbb_err_t one = client_rpc_finish(p, &rep, &keep);
            int more = eval_take(e, s, one, &rep, e->dh[s].n - before, "",
                                 one == PDCBB_OK ? "" : PDCbb_last_error_message());
            if (one == PDCBB_OK)
                client_rpc_release(PDCBB_OP_QUERY_EVAL, &rep, keep);
            if (more && eval_room(e, s)) {
                pdcbb_err_t rc = client_rpc_post(s, PDCBB_OP_QUERY_EVAL, &e->req[s], NULL, 0,
                                                 e->dh[s].v + e->dh[s].n,
                                                 (size_t)(e->dh[s].cap - e->dh[s].n) * 8, &pend[s]);
                if (rc == PDCBB_OK)
                    left++;
                else
                    e->rc = rc;
            }
        }
    }
    free(pend);
}

/* One daemon's answer in a GATHER round (client_gather). */
static void eval_gathered(void *arg, unsigned s, pdcbb_err_t status, const void *rep,
                          const void *bulk, size_t bulk_len)
{
    eval_run_t *e = arg;
    uint64_t before = e->dh[s].n;
    if (status == PDCBB_OK)
        eval_hits(e, s, bulk, bulk_len);
    if (eval_take(e, s, status, rep, e->dh[s].n - before, " (through the tree of daemons)",
                  pdcbb_strerror(status)) == 0)
        e->req[s].pieces_count = 0; /* done */
}

/* Most hits one GATHER brings back (the daemons' bulk parts together). */
#define GATHER_HITS_MAX ((uint64_t)16 << 20)

/* Every daemon through the tree of daemons (a job that forwards): one GATHER per round, with
 * the requests of the daemons that still have more to say, each asked for a share of
 * GATHER_HITS_MAX hits (at least PDCBB_QBLOCK, which a daemon may answer anyway). */
static void eval_tree(eval_run_t *e, unsigned ns, unsigned asked)
{
    unsigned *ranks = malloc(ns * sizeof(*ranks));
    const void **reqs = malloc(ns * sizeof(*reqs));
    uint64_t share = GATHER_HITS_MAX / asked, each;
    if (share < e->per)
        e->per = share;
    each = e->per > PDCBB_QBLOCK ? e->per : PDCBB_QBLOCK;
    unsigned batch = (unsigned)(GATHER_HITS_MAX / each);
    if (ranks == NULL || reqs == NULL)
        e->rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", e->cx->fn);
    for (unsigned s = 0; s < ns; s++)
        e->req[s].max_hits = e->per;
    while (e->rc == PDCBB_OK) {
        unsigned n = 0;
        for (unsigned s = 0; s < ns && n < (batch ? batch : 1); s++)
            if (e->req[s].pieces_count > 0) {
                ranks[n] = s;
                reqs[n++] = &e->req[s];
            }
        if (n == 0)
            break;
        pdcbb_err_t rc =
            client_gather(e->cx->fn, PDCBB_OP_QUERY_EVAL, ranks, reqs, n, eval_gathered, e);
        if (rc != PDCBB_OK && e->rc == PDCBB_OK)
            e->rc = rc;
    }
    free(ranks);
    free(reqs);
}

/* Run QUERY_EVAL of one object over every daemon holding pieces of it, all daemons at once,
 * then concatenate their hits. */
pdcbb_err_t query_run_eval(client_obj_t *o, const qctx_t *cx, const plan_t *pl, uint32_t mode,
                           const uint64_t *prog, uint32_t nprog, const uint64_t *hist,
                           eval_out_t *out)
{
    unsigned ns = client_g.nservers, asked = 0;
    eval_run_t e = {.o = o,
                    .cx = cx,
                    .mode = mode,
                    .hist = hist,
                    .cls = pdcbb_query_class(o->prop.pub.type),
                    .per = hits_per_reply(),
                    .out = out};
    e.req = calloc(ns, sizeof(*e.req));
    e.dh = calloc(ns, sizeof(*e.dh));
    if (e.req == NULL || e.dh == NULL) {
        free(e.req);
        free(e.dh);
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
    }
    for (unsigned s = 0; s < ns && pl->w; s++) {
        pdcbb_query_eval_req_t *q = &e.req[s];
        q->id = o->meta_id;
        q->type = o->prop.pub.type;
        q->mode = mode;
        q->dims = (uint64_t *)cx->dims;
        q->dims_count = cx->ndim;
        q->prog = (uint64_t *)prog;
        q->prog_count = nprog;
        q->pieces = pl->w[s];
        q->pieces_count = pl->n[s];
        q->max_hits = e.per;
        q->hist = (uint64_t *)hist;
        q->hist_count = hist ? 3 : 0;
        asked += pl->n[s] > 0;
    }
    /* Through the tree when this process forwards and more than one daemon is asked. */
    if (client_g.forward && asked > 1)
        eval_tree(&e, ns, asked);
    else
        eval_direct(&e, ns);
    /* Daemons in order: REGION_STATIC stripes then come out sorted already. */
    pdcbb_err_t rc = e.rc;
    for (unsigned s = 0; s < ns && rc == PDCBB_OK && mode == PDCBB_QMODE_HITS; s++) {
        if (e.dh[s].n == 0)
            continue;
        if (out->hits->n == 0) {
            query_hits_free(out->hits);
            *out->hits = e.dh[s];
            memset(&e.dh[s], 0, sizeof(e.dh[s]));
        } else if (hits_reserve(out->hits, e.dh[s].n) != 0) {
            rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
        } else {
            memcpy(out->hits->v + out->hits->n, e.dh[s].v, e.dh[s].n * 8);
            out->hits->n += e.dh[s].n;
        }
    }
    for (unsigned s = 0; s < ns; s++)
        query_hits_free(&e.dh[s]);
    free(e.dh);
    free(e.req);
    return rc;
}

/* Evaluate a one-object subtree: HITS into hits (sorted) or COUNT into *count. */
static pdcbb_err_t eval_object(pdc_query_t *q, client_obj_t *o, const qctx_t *cx, int count_only,
                               hitset_t *hits, uint64_t *count)
{
    uint64_t *prog = malloc((size_t)PDCBB_QPROG_MAX * PDCBB_QNODE_WORDS * 8);
    uint32_t n = 0;
    plan_t pl;
    if (cx->strided)
        count_only = 0; /* the hits are filtered here */
    if (prog == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
    query_build_prog(q, prog, &n);
    pdcbb_err_t rc = query_plan_make(o, cx, &pl);
    eval_out_t out = {.hits = hits};
    if (rc == PDCBB_OK)
        rc = query_run_eval(o, cx, &pl, count_only ? PDCBB_QMODE_COUNT : PDCBB_QMODE_HITS, prog,
                      n * PDCBB_QNODE_WORDS, NULL, &out);
    if (rc == PDCBB_OK && pl.remembered) {
        /* Does a never-written element (zero) match? */
        pdcbb_qprog_t *pp = malloc(sizeof(*pp));
        uint8_t zero[16] = {0}, mask[1], scratch[PDCBB_QPROG_MAX];
        if (pp == NULL)
            rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
        else if (pdcbb_qprog_decode(prog, n * PDCBB_QNODE_WORDS, o->prop.pub.type, pp) != PDCBB_OK)
            rc = client_fail(PDCBB_ERR_INTERNAL, "%s: cannot decode the query", cx->fn);
        else {
            pdcbb_qprog_eval(pp, zero, 1, mask, scratch);
            if (mask[0])
                rc = query_unwritten(&pl, cx, count_only ? PDCBB_QMODE_COUNT : PDCBB_QMODE_HITS, hits,
                               &out.count);
        }
        free(pp);
    }
    if (rc == PDCBB_OK && !count_only && hits_sort(hits) != 0)
        rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
    if (rc == PDCBB_OK && cx->strided)
        out.count = hits->n = client_strided_filter(hits->v, hits->n, &cx->sel, cx->strides);
    if (count)
        *count = out.count;
    query_plan_free(&pl);
    free(prog);
    return rc;
}

static pdcbb_err_t combine(int and, hitset_t *a, hitset_t *b, hitset_t *out)
{
    uint64_t i = 0, j = 0;
    if (hits_reserve(out, and ? (a->n < b->n ? a->n : b->n) : a->n + b->n) != 0)
        return PDCBB_ERR_NOMEM;
    while (i < a->n && j < b->n) {
        if (a->v[i] < b->v[j]) {
            if (!and)
                out->v[out->n++] = a->v[i];
            i++;
        } else if (a->v[i] > b->v[j]) {
            if (!and)
                out->v[out->n++] = b->v[j];
            j++;
        } else {
            out->v[out->n++] = a->v[i];
            i++;
            j++;
        }
    }
    if (!and) {
        for (; i < a->n; i++)
            out->v[out->n++] = a->v[i];
        for (; j < b->n; j++)
            out->v[out->n++] = b->v[j];
    }
    return PDCBB_OK;
}

/* Evaluate q to its sorted hit set, or only count it (count != NULL and q is one object). */
pdcbb_err_t query_eval_node(pdc_query_t *q, const qctx_t *cx, hitset_t *hits, uint64_t *count)
{
    client_obj_t *o = query_single_obj(q);
    if (o)
        return eval_object(q, o, cx, count != NULL, hits, count);
    hitset_t a = {0}, b = {0};
    pdcbb_err_t rc = query_eval_node(q->left, cx, &a, NULL);
    if (rc == PDCBB_OK)
        rc = query_eval_node(q->right, cx, &b, NULL);
    if (rc == PDCBB_OK && combine(q->combine_op == PDC_QUERY_AND, &a, &b, hits) != PDCBB_OK)
        rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
    query_hits_free(&a);
    query_hits_free(&b);
    if (rc == PDCBB_OK && count)
        *count = hits->n;
    return rc;
}

void PDCbb_query_last_stats(uint64_t *blocks_scanned, uint64_t *blocks_skipped,
                            uint64_t *hits_moved)
{
    if (blocks_scanned)
        *blocks_scanned = last_stats.scanned;
    if (blocks_skipped)
        *blocks_skipped = last_stats.skipped;
    if (hits_moved)
        *hits_moved = last_stats.moved;
}
