/*
 * pdc_query.c - PDC data queries (PDCquery_*, PDCselection_*): predicate trees built locally,
 * evaluated by the daemons that hold the data (QUERY_EVAL, bbd/bbd_query.c); only hits travel.
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
 *
 * Selections hold absolute object coordinates, nhits points of ndim values each, in row-major
 * order. PDCquery_get_data reads an object's values at a selection from the daemons holding
 * them (QUERY_VALUES). Everything runs under the library lock.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "client.h"
#include "client_strided.h"
#include "pdcbb_query.h"
#include "pdcbb_region.h"

#define QUERY_DEPTH_MAX 64
/* Hits asked for per QUERY_EVAL reply; indices per QUERY_VALUES request. */
#define QUERY_HITS_PER_REPLY (1u << 20)
#define QUERY_VALUES_PER_REQ (1u << 20)
#define HIST_NBIN 64

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

typedef struct hitset {
    uint64_t *v;
    uint64_t n, cap;
} hitset_t;

typedef struct qctx {
    const char *fn;
    client_obj_t *first; /* the first leaf's object */
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX];
    uint64_t strides[PDCBB_REGION_NDIM_MAX];
    pdcbb_box_t scope;
    uint32_t nodes;
    int strided;     /* the region is strided (PDCbb_region_create_strided): scope is its */
    pdcbb_sel_t sel; /* bounding box, and only the hits in sel count */
} qctx_t;

/* ------------------------------------------------------------------ helpers */

static client_obj_t *query_obj(pdcid_t id, const char *fn)
{
    pdcbb_err_t e;
    client_obj_t *o = client_handle_get(id, CLIENT_H_OBJ, &e);
    if (o == NULL) {
        if (e == PDCBB_ERR_WRONG_TYPE)
            client_fail(e, "%s: id %#llx is a %s, not an object", fn, (unsigned long long)id,
                        client_hkind_name(client_handle_kind(id)));
        else
            client_fail(e, "%s: %#llx is not a live object id (closed or never opened)", fn,
                        (unsigned long long)id);
    }
    return o;
}

static void dims_str(uint32_t ndim, const uint64_t *dims, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t d = 0; d < ndim && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%" PRIu64, d ? "x" : "", dims[d]);
}

/*
 * Memory for hit arrays and selections (freed with free()). Large ones are aligned to and
 * advised for 2 MiB pages: fresh memory is faulted in one 4 KiB page at a time otherwise, which
 * on a virtual machine costs more than the hits themselves (measured: a 10% selection of 1 GiB,
 * 27 million hits, spent most of its time in page faults).
 */
static void *big_alloc(size_t len)
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
    uint64_t *v = big_alloc(cap * sizeof(uint64_t));
    if (v == NULL)
        return -1;
    if (h->n)
        memcpy(v, h->v, h->n * sizeof(uint64_t));
    free(h->v);
    h->v = v;
    h->cap = cap;
    return 0;
}

static void hits_free(hitset_t *h)
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
    uint64_t *tmp = big_alloc(n * sizeof(uint64_t));
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

/* ------------------------------------------------------------------ tree checks */

static int is_leaf(const pdc_query_t *q) { return q->constraint != NULL; }

static pdcbb_err_t check_leaf_value(const pdc_query_constraint_t *c, client_obj_t *o,
                                    const char *fn)
{
    if (c->op < PDC_GT || c->op > PDC_EQ || (c->is_range && (c->op2 < PDC_GT || c->op2 > PDC_EQ)))
        return client_fail(PDCBB_ERR_INVAL, "%s: bad query operator %d on object '%s'", fn,
                           (int)(c->is_range && (c->op2 < PDC_GT || c->op2 > PDC_EQ) ? c->op2
                                                                                      : c->op),
                           o->name);
    if ((int)c->type != (int)o->prop.pub.type)
        return client_fail(PDCBB_ERR_INVAL,
                           "%s: the query value's type %s does not match the element type %s of "
                           "object '%s'",
                           fn, pdcbb_type_name(c->type), pdcbb_type_name(o->prop.pub.type),
                           o->name);
    if (pdcbb_query_class(c->type) == PDCBB_QCLASS_NONE)
        return client_fail(PDCBB_ERR_INVAL, "%s: object '%s' has elements of type %s, which have "
                           "no values to compare", fn, o->name, pdcbb_type_name(c->type));
    return PDCBB_OK;
}

static pdcbb_err_t check_tree(pdc_query_t *q, qctx_t *cx, int depth)
{
    if (q == NULL)
        return client_fail(PDCBB_ERR_INVAL, "%s: a query node is NULL", cx->fn);
    if (depth > QUERY_DEPTH_MAX || ++cx->nodes > PDCBB_QPROG_MAX)
        return client_fail(PDCBB_ERR_TOO_BIG, "%s: the query has more than %u nodes or %d levels",
                           cx->fn, PDCBB_QPROG_MAX, QUERY_DEPTH_MAX);
    if (!is_leaf(q)) {
        if (q->left == NULL || q->right == NULL ||
            (q->combine_op != PDC_QUERY_AND && q->combine_op != PDC_QUERY_OR))
            return client_fail(PDCBB_ERR_INVAL,
                               "%s: a query node is neither a condition nor an AND/OR of two "
                               "queries",
                               cx->fn);
        pdcbb_err_t rc = check_tree(q->left, cx, depth + 1);
        return rc != PDCBB_OK ? rc : check_tree(q->right, cx, depth + 1);
    }
    client_obj_t *o = query_obj(q->constraint->obj_id, cx->fn);
    if (o == NULL)
        return (pdcbb_err_t)PDCbb_last_error();
    pdcbb_err_t rc = check_leaf_value(q->constraint, o, cx->fn);
    if (rc != PDCBB_OK)
        return rc;
    if (cx->first == NULL) {
        cx->first = o;
        cx->ndim = (uint32_t)o->prop.pub.ndim;
        if (cx->ndim == 0 || cx->ndim > PDCBB_REGION_NDIM_MAX)
            return client_fail(PDCBB_ERR_INVAL, "%s: object '%s' has no dimensions", cx->fn,
                               o->name);
        memcpy(cx->dims, o->prop.pub.dims, cx->ndim * sizeof(uint64_t));
        for (uint32_t d = 0; d < cx->ndim; d++)
            if (cx->dims[d] == PDC_SIZE_UNLIMITED)
                return client_fail(PDCBB_ERR_BAD_REGION,
                                   "%s: object '%s' has an unlimited dimension; give its current "
                                   "size with PDCobj_set_dims before querying it",
                                   cx->fn, o->name);
        return PDCBB_OK;
    }
    if (o->prop.pub.ndim != cx->ndim ||
        memcmp(o->prop.pub.dims, cx->dims, cx->ndim * sizeof(uint64_t)) != 0) {
        char a[256], b[256];
        dims_str(cx->ndim, cx->dims, a, sizeof(a));
        dims_str((uint32_t)o->prop.pub.ndim, o->prop.pub.dims, b, sizeof(b));
        return client_fail(PDCBB_ERR_INVAL,
                           "%s: the objects of a query must have the same dimensions: '%s' is "
                           "%s, '%s' is %s",
                           cx->fn, cx->first->name, a, o->name, b);
    }
    return PDCBB_OK;
}

static pdcbb_err_t region_box(const struct pdc_region_info *r, qctx_t *cx, pdcbb_box_t *out)
{
    char a[256];
    if (r->ndim != cx->ndim || r->offset == NULL || r->size == NULL)
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: the query region has %zu dimensions, object '%s' has %u", cx->fn,
                           r->ndim, cx->first->name, cx->ndim);
    if (pdcbb_box_make(out, cx->ndim, r->offset, r->size) != PDCBB_OK ||
        pdcbb_box_check_within(out, cx->ndim, cx->dims) != PDCBB_OK) {
        dims_str(cx->ndim, cx->dims, a, sizeof(a));
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: the query region (empty, or reaching past the object) is not "
                           "within object '%s' of dimensions %s",
                           cx->fn, cx->first->name, a);
    }
    return PDCBB_OK;
}

/* Check a query tree and fill cx (shape, scope). */
static pdcbb_err_t query_prepare(pdc_query_t *q, qctx_t *cx, const char *fn)
{
    memset(cx, 0, sizeof(*cx));
    cx->fn = fn;
    pdcbb_err_t rc = client_check_init();
    if (rc != PDCBB_OK)
        return client_fail(rc, "%s: %s", fn, pdcbb_strerror(rc));
    if (q == NULL)
        return client_fail(PDCBB_ERR_INVAL, "%s: the query is NULL", fn);
    if ((rc = check_tree(q, cx, 0)) != PDCBB_OK)
        return rc;
    if ((rc = pdcbb_layout_strides(cx->ndim, cx->dims, 1, cx->strides)) != PDCBB_OK)
        return client_fail(rc, "%s: object '%s' has a bad shape", fn, cx->first->name);
    if (q->region) {
        cx->strided = client_strided_region_of(q->region, &cx->sel);
        return region_box(q->region, cx, &cx->scope);
    }
    uint64_t zero[PDCBB_REGION_NDIM_MAX] = {0};
    return pdcbb_box_make(&cx->scope, cx->ndim, zero, cx->dims);
}

/* The object all leaves of q name, or NULL when they name several. */
static client_obj_t *single_obj(pdc_query_t *q)
{
    if (is_leaf(q))
        return client_handle_get(q->constraint->obj_id, CLIENT_H_OBJ, NULL);
    client_obj_t *a = single_obj(q->left), *b = single_obj(q->right);
    return a && b && a->meta_id == b->meta_id ? a : NULL;
}

static pdc_query_t *first_leaf(pdc_query_t *q)
{
    while (q && !is_leaf(q))
        q = q->left;
    return q;
}

/* Postfix program of a one-object subtree. */
static void build_prog(pdc_query_t *q, uint64_t *w, uint32_t *n)
{
    pdcbb_qnode_t nd;
    memset(&nd, 0, sizeof(nd));
    if (is_leaf(q)) {
        const pdc_query_constraint_t *c = q->constraint;
        nd.kind = PDCBB_QNODE_LEAF;
        nd.op = (uint8_t)c->op;
        nd.v = pdcbb_query_value(c->type, &c->value);
        if (c->is_range) {
            nd.is_range = 1;
            nd.op2 = (uint8_t)c->op2;
            nd.v2 = pdcbb_query_value(c->type, &c->value2);
        }
    } else {
        build_prog(q->left, w, n);
        build_prog(q->right, w, n);
        nd.kind = q->combine_op == PDC_QUERY_AND ? PDCBB_QNODE_AND : PDCBB_QNODE_OR;
    }
    pdcbb_qnode_encode(&nd, w + (size_t)*n * PDCBB_QNODE_WORDS);
    (*n)++;
}

/* ------------------------------------------------------------------ pieces per daemon */

typedef struct plan {
    uint64_t **w;          /* per daemon: piece words */
    uint32_t *n, *cap;
    pdcbb_box_t *written;  /* remembered placements: the written boxes within the scope */
    size_t nwritten;
    int remembered;
} plan_t;

static void plan_free(plan_t *pl)
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
static int static_split_dim(uint32_t ndim, const uint64_t *dims)
{
    for (uint32_t d = 0; d < ndim; d++)
        if (dims[d] != PDC_SIZE_UNLIMITED && dims[d] >= client_g.nservers)
            return (int)d;
    return -1;
}

/* Remembered placements: the map entries overlapping box, oldest first. */
static pdcbb_err_t map_entries(client_obj_t *o, const pdcbb_box_t *box, pdcbb_box_t **boxes,
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
        if (p.entries_count - pos < 3 + 2 * nd || e[2] != nd || e[1] >= client_g.nservers ||
            pdcbb_box_make(&eb, nd, e + 3, e + 3 + nd) != PDCBB_OK) {
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

static pdcbb_err_t plan_make(client_obj_t *o, const qctx_t *cx, plan_t *pl)
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
    switch (o->prop.pub.region_partition) {
    case PDC_REGION_STATIC: {
        int dim = static_split_dim(cx->ndim, cx->dims);
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
    case PDC_REGION_LOCAL:
    case PDC_REGION_DYNAMIC: {
        pdcbb_box_t *boxes;
        unsigned *daemons;
        size_t n;
        pl->remembered = 1;
        pdcbb_err_t rc = map_entries(o, &cx->scope, &boxes, &daemons, &n);
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
static pdcbb_err_t unwritten(const plan_t *pl, const qctx_t *cx, int want, hitset_t *hits,
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

typedef struct eval_out {
    hitset_t *hits;       /* HITS */
    uint64_t count;       /* COUNT: hits; STATS/HIST: elements */
    pdcbb_qstats_t st;    /* STATS */
    uint64_t *bins;       /* HIST: nbin counters */
} eval_out_t;

/* Run QUERY_EVAL of one object over every daemon holding pieces of it, all daemons at once.
 * Hits are received straight into one array per daemon (no copy), then concatenated. */
static pdcbb_err_t run_eval(client_obj_t *o, const qctx_t *cx, const plan_t *pl, uint32_t mode,
                            const uint64_t *prog, uint32_t nprog, const uint64_t *hist,
                            eval_out_t *out)
{
    unsigned ns = client_g.nservers;
    client_pending_t **pend = calloc(ns, sizeof(*pend));
    pdcbb_query_eval_req_t *req = calloc(ns, sizeof(*req));
    hitset_t *dh = calloc(ns, sizeof(*dh));
    pdcbb_err_t rc = PDCBB_OK;
    uint64_t per = hits_per_reply();
    if (pend == NULL || req == NULL || dh == NULL) {
        free(pend);
        free(req);
        free(dh);
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
    }
    int cls = pdcbb_query_class(o->prop.pub.type);
    unsigned left = 0;
    for (unsigned s = 0; s < ns && rc == PDCBB_OK; s++) {
        if (pl->n[s] == 0)
            continue;
        pdcbb_query_eval_req_t *q = &req[s];
        q->id = o->meta_id;
        q->type = o->prop.pub.type;
        q->mode = mode;
        q->dims = (uint64_t *)cx->dims;
        q->dims_count = cx->ndim;
        q->prog = (uint64_t *)prog;
        q->prog_count = nprog;
        q->pieces = pl->w[s];
        q->pieces_count = pl->n[s];
        q->max_hits = per;
        q->hist = (uint64_t *)hist;
        q->hist_count = hist ? 3 : 0;
        void *dest = NULL;
        size_t dest_len = 0;
        if (mode == PDCBB_QMODE_HITS) {
            /* The daemon answers at most max(per, 65536) hits. */
            uint64_t room = per > PDCBB_QBLOCK ? per : PDCBB_QBLOCK;
            if (hits_reserve(&dh[s], room) != 0) {
                rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
                break;
            }
            dest = dh[s].v + dh[s].n;
            dest_len = (size_t)(dh[s].cap - dh[s].n) * 8;
        }
        rc = client_rpc_post(s, PDCBB_OP_QUERY_EVAL, q, NULL, 0, dest, dest_len, &pend[s]);
        if (rc == PDCBB_OK)
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
            uint64_t before = dh[s].n;
            size_t blen = p->done && p->status == PDCBB_OK ? p->bulk_len : 0;
            if (rc == PDCBB_OK && mode == PDCBB_QMODE_HITS && blen > 0) {
                if (blen % 8 != 0) {
                    rc = client_fail(PDCBB_ERR_PROTO, "%s: bad QUERY_EVAL reply from daemon %u",
                                     cx->fn, s);
                } else if (p->bulk == (void *)(dh[s].v + dh[s].n)) {
                    dh[s].n += blen / 8;
                } else if (hits_reserve(&dh[s], blen / 8) != 0) {
                    rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
                } else {
                    memcpy(dh[s].v + dh[s].n, p->bulk, blen);
                    dh[s].n += blen / 8;
                }
            }
            pdcbb_query_eval_rep_t rep;
            void *keep;
            pdcbb_err_t one = client_rpc_finish(p, &rep, &keep);
            if (one != PDCBB_OK) {
                if (rc == PDCBB_OK)
                    rc = client_fail(one, "%s: evaluating the query on object '%s' at daemon %u: "
                                     "%s",
                                     cx->fn, o->name, s, PDCbb_last_error_message());
                continue;
            }
            if (rc == PDCBB_OK && mode == PDCBB_QMODE_HITS && dh[s].n - before != rep.count)
                rc = client_fail(PDCBB_ERR_PROTO, "%s: daemon %u sent %" PRIu64
                                 " hits, announced %" PRIu64, cx->fn, s,
                                 dh[s].n - before, rep.count);
            if (rc == PDCBB_OK) {
                last_stats.scanned += rep.scanned;
                last_stats.skipped += rep.skipped;
                if (mode == PDCBB_QMODE_HITS)
                    last_stats.moved += rep.count;
                if (mode != PDCBB_QMODE_HITS)
                    out->count += rep.count;
                if (mode == PDCBB_QMODE_STATS && rep.stats_count == 3) {
                    pdcbb_qstats_t st = {.has = rep.stats[2] != 0};
                    st.mn.bits = rep.stats[0];
                    st.mx.bits = rep.stats[1];
                    pdcbb_qstats_merge(cls, &out->st, &st);
                }
                if (mode == PDCBB_QMODE_HIST && hist && rep.bins_count == hist[2])
                    for (uint32_t b = 0; b < rep.bins_count; b++)
                        out->bins[b] += rep.bins[b];
                else if (mode == PDCBB_QMODE_HIST)
                    rc = client_fail(PDCBB_ERR_PROTO, "%s: bad histogram from daemon %u",
                                     cx->fn, s);
            }
            uint32_t more = rep.more;
            uint64_t np = rep.next_piece, ne = rep.next_elem;
            client_rpc_release(PDCBB_OP_QUERY_EVAL, &rep, keep);
            if (rc == PDCBB_OK && more && np == req[s].resume_piece &&
                ne == req[s].resume_elem)
                rc = client_fail(PDCBB_ERR_PROTO, "%s: daemon %u made no progress in the query",
                                 cx->fn, s);
            if (rc == PDCBB_OK && more) {
                req[s].resume_piece = np;
                req[s].resume_elem = ne;
                uint64_t room = per > PDCBB_QBLOCK ? per : PDCBB_QBLOCK;
                if (hits_reserve(&dh[s], room) != 0) {
                    rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
                    continue;
                }
                one = client_rpc_post(s, PDCBB_OP_QUERY_EVAL, &req[s], NULL, 0,
                                      dh[s].v + dh[s].n, (size_t)(dh[s].cap - dh[s].n) * 8,
                                      &pend[s]);
                if (one == PDCBB_OK)
                    left++;
                else
                    rc = one;
            }
        }
    }
    /* Daemons in order: REGION_STATIC stripes then come out sorted already. */
    for (unsigned s = 0; s < ns && rc == PDCBB_OK && mode == PDCBB_QMODE_HITS; s++) {
        if (dh[s].n == 0)
            continue;
        if (out->hits->n == 0) {
            hits_free(out->hits);
            *out->hits = dh[s];
            memset(&dh[s], 0, sizeof(dh[s]));
        } else if (hits_reserve(out->hits, dh[s].n) != 0) {
            rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
        } else {
            memcpy(out->hits->v + out->hits->n, dh[s].v, dh[s].n * 8);
            out->hits->n += dh[s].n;
        }
    }
    for (unsigned s = 0; s < ns; s++)
        hits_free(&dh[s]);
    free(dh);
    free(pend);
    free(req);
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
    build_prog(q, prog, &n);
    pdcbb_err_t rc = plan_make(o, cx, &pl);
    eval_out_t out = {.hits = hits};
    if (rc == PDCBB_OK)
        rc = run_eval(o, cx, &pl, count_only ? PDCBB_QMODE_COUNT : PDCBB_QMODE_HITS, prog,
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
                rc = unwritten(&pl, cx, count_only ? PDCBB_QMODE_COUNT : PDCBB_QMODE_HITS, hits,
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
    plan_free(&pl);
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
static pdcbb_err_t eval_node(pdc_query_t *q, const qctx_t *cx, hitset_t *hits, uint64_t *count)
{
    client_obj_t *o = single_obj(q);
    if (o)
        return eval_object(q, o, cx, count != NULL, hits, count);
    hitset_t a = {0}, b = {0};
    pdcbb_err_t rc = eval_node(q->left, cx, &a, NULL);
    if (rc == PDCBB_OK)
        rc = eval_node(q->right, cx, &b, NULL);
    if (rc == PDCBB_OK && combine(q->combine_op == PDC_QUERY_AND, &a, &b, hits) != PDCBB_OK)
        rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", cx->fn);
    hits_free(&a);
    hits_free(&b);
    if (rc == PDCBB_OK && count)
        *count = hits->n;
    return rc;
}

/* ------------------------------------------------------------------ public: building */

pdc_query_t *PDCquery_create(pdcid_t obj_id, pdc_query_op_t op, pdc_var_type_t type, void *value)
{
    static const char fn[] = "PDCquery_create";
    pdc_query_t *q = NULL;
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = client_check_init();
    if (rc != PDCBB_OK) {
        client_fail(rc, "%s: %s", fn, pdcbb_strerror(rc));
        goto out;
    }
    client_obj_t *o = query_obj(obj_id, fn);
    if (o == NULL)
        goto out;
    if (value == NULL) {
        client_fail(PDCBB_ERR_INVAL, "%s: value is NULL", fn);
        goto out;
    }
    pdc_query_constraint_t c;
    memset(&c, 0, sizeof(c));
    c.obj_id = obj_id;
    c.op = op;
    c.type = type;
    if (check_leaf_value(&c, o, fn) != PDCBB_OK)
        goto out;
    /* PDC's "generic 64-bit value": the typed constant's bytes. */
    memcpy(&c.value, value, pdcbb_type_size(type));
    q = calloc(1, sizeof(*q));
    if (q == NULL || (q->constraint = malloc(sizeof(c))) == NULL) {
        free(q);
        q = NULL;
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    *q->constraint = c;
    if (o->hist)
        q->constraint->hist = PDC_dup_hist(o->hist);
out:
    CLIENT_LEAVE();
    return q;
}

static pdc_query_t *combine_new(pdc_query_t *a, pdc_query_t *b, pdc_query_combine_op_t op,
                                const char *fn)
{
    CLIENT_ENTER();
    client_clear_error();
    pdc_query_t *q = NULL;
    if (a == NULL || b == NULL)
        client_fail(PDCBB_ERR_INVAL, "%s: query%s NULL", fn, a == NULL ? "1 is" : "2 is");
    else if (a == b)
        client_fail(PDCBB_ERR_INVAL, "%s: query1 and query2 are the same node (build a second "
                    "query instead: the tree is freed node by node)", fn);
    else if ((q = calloc(1, sizeof(*q))) == NULL)
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
    else {
        q->left = a;
        q->right = b;
        q->combine_op = op;
    }
    CLIENT_LEAVE();
    return q;
}

pdc_query_t *PDCquery_and(pdc_query_t *query1, pdc_query_t *query2)
{
    return combine_new(query1, query2, PDC_QUERY_AND, "PDCquery_and");
}

pdc_query_t *PDCquery_or(pdc_query_t *query1, pdc_query_t *query2)
{
    return combine_new(query1, query2, PDC_QUERY_OR, "PDCquery_or");
}

perr_t PDCquery_sel_region(pdc_query_t *query, struct pdc_region_info *obj_region)
{
    static const char fn[] = "PDCquery_sel_region";
    qctx_t cx;
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (query == NULL || obj_region == NULL) {
        client_fail(PDCBB_ERR_INVAL, "%s: %s is NULL", fn, query ? "obj_region" : "query");
        goto out;
    }
    struct pdc_region_info *old = query->region;
    query->region = NULL;
    if (query_prepare(query, &cx, fn) != PDCBB_OK) {
        query->region = old;
        goto out;
    }
    pdcbb_box_t b;
    if (region_box(obj_region, &cx, &b) != PDCBB_OK) {
        query->region = old;
        goto out;
    }
    query->region = obj_region;
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}

/* ------------------------------------------------------------------ public: results */

perr_t PDCquery_get_nhits(pdc_query_t *query, uint64_t *n)
{
    static const char fn[] = "PDCquery_get_nhits";
    qctx_t cx;
    hitset_t h = {0};
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    memset(&last_stats, 0, sizeof(last_stats));
    if (n == NULL) {
        client_fail(PDCBB_ERR_INVAL, "%s: n is NULL", fn);
        goto out;
    }
    uint64_t count = 0;
    if (query_prepare(query, &cx, fn) == PDCBB_OK && eval_node(query, &cx, &h, &count) == PDCBB_OK) {
        *n = count;
        ret = SUCCEED;
    }
out:
    hits_free(&h);
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCquery_get_selection(pdc_query_t *query, pdc_selection_t *sel)
{
    static const char fn[] = "PDCquery_get_selection";
    static uint64_t next_sel_id;
    qctx_t cx;
    hitset_t h = {0};
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    memset(&last_stats, 0, sizeof(last_stats));
    if (sel == NULL) {
        client_fail(PDCBB_ERR_INVAL, "%s: sel is NULL", fn);
        goto out;
    }
    if (query_prepare(query, &cx, fn) != PDCBB_OK || eval_node(query, &cx, &h, NULL) != PDCBB_OK)
        goto out;
    uint64_t *coords = NULL;
    if (cx.ndim == 1) {
        coords = h.v; /* 1-D: the linear indices are the coordinates */
        h.v = NULL;
        h.cap = 0;
    } else if (h.n > 0 && (h.n > SIZE_MAX / 8 / cx.ndim ||
                           (coords = big_alloc((size_t)h.n * cx.ndim * 8)) == NULL)) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory for %" PRIu64 " hits", fn, h.n);
        goto out;
    }
    for (uint64_t i = 0; i < h.n && cx.ndim > 1; i++) {
        uint64_t lin = h.v[i];
        for (uint32_t d = 0; d < cx.ndim; d++) {
            coords[i * cx.ndim + d] = lin / cx.strides[d];
            lin %= cx.strides[d];
        }
    }
    sel->query_id = ++next_sel_id;
    sel->ndim = cx.ndim;
    sel->nhits = h.n;
    sel->coords = coords;
    sel->coords_alloc = h.n * cx.ndim;
    query->sel = sel;
    ret = SUCCEED;
out:
    hits_free(&h);
    CLIENT_LEAVE();
    return ret;
}

/* The values of object o at n linear indices (element i to out + i * unit). */
static pdcbb_err_t values_at(client_obj_t *o, const uint64_t *lin, uint64_t n, uint8_t *out,
                             const uint64_t *dims, uint32_t ndim, const char *fn)
{
    unsigned ns = client_g.nservers, home = pdcbb_meta_id_server(o->meta_id);
    size_t unit = pdcbb_type_size(o->prop.pub.type);
    uint64_t strides[PDCBB_REGION_NDIM_MAX];
    pdcbb_err_t rc = pdcbb_layout_strides(ndim, dims, 1, strides);
    if (rc != PDCBB_OK)
        return client_fail(rc, "%s: object '%s' has a bad shape", fn, o->name);
    unsigned *owner = malloc((n ? n : 1) * sizeof(unsigned));
    if (owner == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
    pdcbb_box_t *boxes = NULL;
    unsigned *daemons = NULL;
    size_t nent = 0;
    int part = o->prop.pub.region_partition;
    int dim = part == PDC_REGION_STATIC && ns > 1 ? static_split_dim(ndim, dims) : -1;
    if (part == PDC_REGION_LOCAL || part == PDC_REGION_DYNAMIC) {
        pdcbb_box_t whole;
        uint64_t zero[PDCBB_REGION_NDIM_MAX] = {0};
        pdcbb_box_make(&whole, ndim, zero, dims);
        if ((rc = map_entries(o, &whole, &boxes, &daemons, &nent)) != PDCBB_OK) {
            free(owner);
            return rc;
        }
    }
    uint64_t w = dim >= 0 ? (dims[dim] + ns - 1) / ns : 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t c[PDCBB_REGION_NDIM_MAX], l = lin[i];
        for (uint32_t d = 0; d < ndim; d++) {
            c[d] = l / strides[d];
            l %= strides[d];
        }
        if (part == PDC_REGION_LOCAL || part == PDC_REGION_DYNAMIC) {
            owner[i] = UINT32_MAX; /* never written: zero */
            for (size_t k = nent; k-- > 0;) {
                uint32_t d = 0;
                for (; d < ndim; d++)
                    if (c[d] < boxes[k].off[d] || c[d] - boxes[k].off[d] >= boxes[k].size[d])
                        break;
                if (d == ndim) {
                    owner[i] = daemons[k];
                    break;
                }
            }
        } else if (dim >= 0) {
            uint64_t k = c[dim] / w;
            owner[i] = (unsigned)((k > ns - 1 ? ns - 1 : k) % ns);
        } else {
            owner[i] = home;
        }
    }
    free(boxes);
    free(daemons);
    uint64_t *idx = malloc((size_t)QUERY_VALUES_PER_REQ * 8);
    uint64_t *pos = malloc((size_t)QUERY_VALUES_PER_REQ * 8);
    if (idx == NULL || pos == NULL)
        rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
    for (uint64_t i = 0; i < n; i++)
        if (owner[i] == UINT32_MAX)
            memset(out + i * unit, 0, unit);
    /* One daemon at a time, in chunks: values come back in the order asked. */
    for (unsigned s = 0; s < ns && rc == PDCBB_OK; s++) {
        uint64_t i = 0;
        while (rc == PDCBB_OK) {
            uint32_t k = 0;
            for (; i < n && k < QUERY_VALUES_PER_REQ; i++)
                if (owner[i] == s) {
                    idx[k] = lin[i];
                    pos[k++] = i;
                }
            if (k == 0)
                break;
            pdcbb_query_values_req_t q = {.id = o->meta_id, .type = o->prop.pub.type,
                                          .dims = (uint64_t *)dims, .dims_count = ndim,
                                          .idx = idx, .idx_count = k};
            client_pending_t *p;
            if ((rc = client_rpc_post(s, PDCBB_OP_QUERY_VALUES, &q, NULL, 0, NULL, 0, &p)) !=
                PDCBB_OK)
                break;
            client_rpc_wait(p, client_g.cfg.request_timeout);
            int ok = p->done && p->status == PDCBB_OK && p->bulk_len == (size_t)k * unit;
            if (ok)
                for (uint32_t j = 0; j < k; j++)
                    memcpy(out + pos[j] * unit, (uint8_t *)p->bulk + (size_t)j * unit, unit);
            pdcbb_query_values_rep_t rep;
            void *keep;
            pdcbb_err_t one = client_rpc_finish(p, &rep, &keep);
            if (one != PDCBB_OK) {
                rc = client_fail(one, "%s: reading values of object '%s' at daemon %u: %s", fn,
                                 o->name, s, PDCbb_last_error_message());
                break;
            }
            if (!ok || rep.count != k)
                rc = client_fail(PDCBB_ERR_PROTO, "%s: daemon %u sent a bad QUERY_VALUES reply",
                                 fn, s);
            client_rpc_release(PDCBB_OP_QUERY_VALUES, &rep, keep);
        }
    }
    free(idx);
    free(pos);
    free(owner);
    return rc;
}

static perr_t get_data(pdcid_t obj_id, pdc_selection_t *sel, void *obj_data, const char *fn)
{
    pdcbb_err_t rc = client_check_init();
    if (rc != PDCBB_OK) {
        client_fail(rc, "%s: %s", fn, pdcbb_strerror(rc));
        return FAIL;
    }
    client_obj_t *o = query_obj(obj_id, fn);
    if (o == NULL)
        return FAIL;
    if (sel == NULL || (obj_data == NULL && sel->nhits > 0) ||
        (sel->nhits > 0 && sel->coords == NULL)) {
        client_fail(PDCBB_ERR_INVAL, "%s: %s is NULL", fn,
                    sel == NULL ? "sel" : obj_data == NULL ? "obj_data" : "sel->coords");
        return FAIL;
    }
    uint32_t ndim = (uint32_t)o->prop.pub.ndim;
    const uint64_t *dims = o->prop.pub.dims;
    if (pdcbb_query_class(o->prop.pub.type) == PDCBB_QCLASS_NONE) {
        client_fail(PDCBB_ERR_INVAL, "%s: object '%s' has elements of type %s, which have no "
                    "values to read this way", fn, o->name, pdcbb_type_name(o->prop.pub.type));
        return FAIL;
    }
    if (sel->nhits > 0 && sel->ndim != ndim) {
        client_fail(PDCBB_ERR_BAD_REGION, "%s: the selection has %zu dimensions, object '%s' "
                    "has %u", fn, sel->ndim, o->name, ndim);
        return FAIL;
    }
    for (uint32_t d = 0; d < ndim; d++)
        if (dims[d] == PDC_SIZE_UNLIMITED) {
            client_fail(PDCBB_ERR_BAD_REGION, "%s: object '%s' has an unlimited dimension", fn,
                        o->name);
            return FAIL;
        }
    uint64_t strides[PDCBB_REGION_NDIM_MAX];
    if (pdcbb_layout_strides(ndim, dims, 1, strides) != PDCBB_OK) {
        client_fail(PDCBB_ERR_BAD_REGION, "%s: object '%s' has a bad shape", fn, o->name);
        return FAIL;
    }
    uint64_t *lin = malloc((sel->nhits ? sel->nhits : 1) * 8);
    if (lin == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        return FAIL;
    }
    for (uint64_t i = 0; i < sel->nhits; i++) {
        uint64_t l = 0;
        for (uint32_t d = 0; d < ndim; d++) {
            uint64_t c = sel->coords[i * ndim + d];
            if (c >= dims[d]) {
                char a[256];
                dims_str(ndim, dims, a, sizeof(a));
                client_fail(PDCBB_ERR_BAD_REGION, "%s: hit %" PRIu64 " of the selection lies "
                            "outside object '%s' of dimensions %s", fn, i, o->name, a);
                free(lin);
                return FAIL;
            }
            l += c * strides[d];
        }
        lin[i] = l;
    }
    rc = values_at(o, lin, sel->nhits, obj_data, dims, ndim, fn);
    free(lin);
    return rc == PDCBB_OK ? SUCCEED : FAIL;
}

perr_t PDCquery_get_data(pdcid_t obj_id, pdc_selection_t *sel, void *obj_data)
{
    CLIENT_ENTER();
    client_clear_error();
    perr_t ret = get_data(obj_id, sel, obj_data, "PDCquery_get_data");
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCquery_get_sel_data(pdc_query_t *query, pdc_selection_t *sel, void *data)
{
    static const char fn[] = "PDCquery_get_sel_data";
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    pdc_query_t *leaf = first_leaf(query);
    if (query == NULL || leaf == NULL)
        client_fail(PDCBB_ERR_INVAL, "%s: the query is NULL or has no condition", fn);
    else
        ret = get_data(leaf->constraint->obj_id, sel ? sel : query->sel, data, fn);
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCquery_get_histogram(pdcid_t obj_id)
{
    static const char fn[] = "PDCquery_get_histogram";
    perr_t ret = FAIL;
    plan_t pl;
    memset(&pl, 0, sizeof(pl));
    CLIENT_ENTER();
    client_clear_error();
    memset(&last_stats, 0, sizeof(last_stats));
    pdcbb_err_t rc = client_check_init();
    if (rc != PDCBB_OK) {
        client_fail(rc, "%s: %s", fn, pdcbb_strerror(rc));
        goto out;
    }
    client_obj_t *o = query_obj(obj_id, fn);
    if (o == NULL)
        goto out;
    /* A query on the object checks its type and shape. */
    pdc_query_constraint_t c = {.obj_id = obj_id, .op = PDC_GT, .type = o->prop.pub.type};
    pdc_query_t leaf = {.constraint = &c};
    qctx_t cx;
    if (query_prepare(&leaf, &cx, fn) != PDCBB_OK || plan_make(o, &cx, &pl) != PDCBB_OK)
        goto out;
    int cls = pdcbb_query_class(o->prop.pub.type);
    eval_out_t st = {0};
    uint64_t zeros = 0;
    if (run_eval(o, &cx, &pl, PDCBB_QMODE_STATS, NULL, 0, NULL, &st) != PDCBB_OK)
        goto out;
    if (pl.remembered && unwritten(&pl, &cx, PDCBB_QMODE_STATS, NULL, &zeros) != PDCBB_OK)
        goto out;
    if (zeros) {
        pdcbb_qstats_t z = {.has = 1};
        pdcbb_qstats_merge(cls, &st.st, &z); /* all-zero bits are 0 in every class */
    }
    double lo = st.st.has ? pdcbb_qval_double(cls, st.st.mn) : 0;
    double hi = st.st.has ? pdcbb_qval_double(cls, st.st.mx) : 0;
    double incr = hi > lo ? (hi - lo) / HIST_NBIN : 1;
    pdc_histogram_t *h = calloc(1, sizeof(*h));
    uint64_t *bins = calloc(HIST_NBIN, sizeof(uint64_t));
    double *range = malloc(2 * HIST_NBIN * sizeof(double));
    if (h == NULL || bins == NULL || range == NULL) {
        free(h);
        free(bins);
        free(range);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    uint64_t hist[3];
    memcpy(&hist[0], &lo, 8);
    memcpy(&hist[1], &incr, 8);
    hist[2] = HIST_NBIN;
    eval_out_t ho = {.bins = bins};
    if (run_eval(o, &cx, &pl, PDCBB_QMODE_HIST, NULL, 0, hist, &ho) != PDCBB_OK) {
        free(h);
        free(bins);
        free(range);
        goto out;
    }
    if (zeros) {
        pdcbb_qval_t z = {.bits = 0};
        bins[pdcbb_qhist_bin(cls, z, lo, incr, HIST_NBIN)] += zeros;
    }
    for (int i = 0; i < HIST_NBIN; i++) {
        range[2 * i] = lo + i * incr;
        range[2 * i + 1] = lo + (i + 1) * incr;
    }
    h->dtype = o->prop.pub.type;
    h->nbin = HIST_NBIN;
    h->incr = incr;
    h->range = range;
    h->bin = bins;
    PDC_free_hist(o->hist);
    o->hist = h;
    ret = SUCCEED;
out:
    plan_free(&pl);
    CLIENT_LEAVE();
    return ret;
}

pdc_histogram_t *PDCbb_obj_histogram(pdcid_t obj_id)
{
    pdc_histogram_t *h = NULL;
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = client_check_init();
    client_obj_t *o = rc == PDCBB_OK ? query_obj(obj_id, "PDCbb_obj_histogram") : NULL;
    if (rc != PDCBB_OK)
        client_fail(rc, "PDCbb_obj_histogram: %s", pdcbb_strerror(rc));
    else if (o && o->hist == NULL)
        client_fail(PDCBB_ERR_NOT_FOUND, "PDCbb_obj_histogram: no histogram of object '%s' yet "
                    "(call PDCquery_get_histogram)", o->name);
    else if (o && (h = PDC_dup_hist(o->hist)) == NULL)
        client_fail(PDCBB_ERR_NOMEM, "PDCbb_obj_histogram: out of memory");
    CLIENT_LEAVE();
    return h;
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

/* ------------------------------------------------------------------ freeing and printing */

void PDCselection_free(pdc_selection_t *sel)
{
    if (sel == NULL)
        return;
    free(sel->coords);
    sel->coords = NULL;
    sel->coords_alloc = 0;
    sel->nhits = 0;
}

void PDCquery_free(pdc_query_t *query)
{
    if (query == NULL)
        return;
    if (query->constraint) {
        PDC_free_hist(query->constraint->hist);
        free(query->constraint);
    }
    free(query);
}

void PDCquery_free_all(pdc_query_t *query)
{
    if (query == NULL)
        return;
    PDCquery_free_all(query->left);
    PDCquery_free_all(query->right);
    PDCquery_free(query);
}

static const char *op_str(int op)
{
    switch (op) {
    case PDC_GT: return ">";
    case PDC_LT: return "<";
    case PDC_GTE: return ">=";
    case PDC_LTE: return "<=";
    case PDC_EQ: return "==";
    default: return "?";
    }
}

static void print_node(pdc_query_t *q, int depth)
{
    if (depth > QUERY_DEPTH_MAX) {
        printf("...");
        return;
    }
    if (is_leaf(q)) {
        const pdc_query_constraint_t *c = q->constraint;
        char v[64], v2[64];
        client_obj_t *o = client_handle_get(c->obj_id, CLIENT_H_OBJ, NULL);
        pdcbb_query_value_str(c->type, pdcbb_query_value(c->type, &c->value), v, sizeof(v));
        printf("(%s %s %s", o ? o->name : "<closed object>", op_str(c->op), v);
        if (c->is_range) {
            pdcbb_query_value_str(c->type, pdcbb_query_value(c->type, &c->value2), v2,
                                  sizeof(v2));
            printf(" and %s %s", op_str(c->op2), v2);
        }
        printf(")");
        return;
    }
    printf("(");
    if (q->left)
        print_node(q->left, depth + 1);
    fputs(q->combine_op == PDC_QUERY_AND ? " AND " : q->combine_op == PDC_QUERY_OR ? " OR " : " ? ",
          stdout);
    if (q->right)
        print_node(q->right, depth + 1);
    printf(")");
}

void PDCquery_print(pdc_query_t *query)
{
    CLIENT_ENTER();
    if (query == NULL) {
        printf("query: NULL\n");
    } else {
        printf("query: ");
        print_node(query, 0);
        if (query->region) {
            printf(" in region");
            for (size_t d = 0; d < query->region->ndim; d++)
                printf("%s%" PRIu64 "+%" PRIu64, d ? "," : " ", query->region->offset[d],
                       query->region->size[d]);
        }
        printf("\n");
    }
    fflush(stdout);
    CLIENT_LEAVE();
}

static void sel_print(pdc_selection_t *sel, uint64_t max)
{
    if (sel == NULL) {
        printf("selection: NULL\n");
        fflush(stdout);
        return;
    }
    printf("selection: ndim %zu, nhits %" PRIu64 "\n", sel->ndim, sel->nhits);
    for (uint64_t i = 0; i < sel->nhits && i < max && sel->coords; i++) {
        printf("  (");
        for (size_t d = 0; d < sel->ndim; d++)
            printf("%s%" PRIu64, d ? ", " : "", sel->coords[i * sel->ndim + d]);
        printf(")\n");
    }
    if (sel->nhits > max)
        printf("  ... %" PRIu64 " more\n", sel->nhits - max);
    fflush(stdout);
}

void PDCselection_print(pdc_selection_t *sel) { sel_print(sel, 10); }

void PDCselection_print_all(pdc_selection_t *sel) { sel_print(sel, UINT64_MAX); }
