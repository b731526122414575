/*
 * pdc_query_result.c - the results of PDC data queries: the number of hits
 * (PDCquery_get_nhits), the selection (PDCquery_get_selection) and the values at a selection
 * (PDCquery_get_data, PDCquery_get_sel_data).
 *
 * Selections hold absolute object coordinates, nhits points of ndim values each, in row-major
 * order. PDCquery_get_data reads an object's values at a selection from the daemons holding
 * them (QUERY_VALUES). Everything runs under the library lock.
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pdc_query_internal.h"

/* Indices per QUERY_VALUES request. */
#define QUERY_VALUES_PER_REQ (1u << 20)

/* ------------------------------------------------------------------ public: results */

/* The common start of PDCquery_get_nhits and _get_selection: the last error and statistics
 * cleared, out (the output named what) not NULL, the query checked into cx and evaluated into
 * h, or only counted into *count where it can be (count != NULL). */
static pdcbb_err_t query_evaluate(pdc_query_t *query, const void *out, const char *what,
                                  qctx_t *cx, hitset_t *h, uint64_t *count, const char *fn)
{
    client_clear_error();
    query_stats_reset();
    if (out == NULL)
        return client_fail(PDCBB_ERR_INVAL, "%s: %s is NULL", fn, what);
    pdcbb_err_t rc = query_prepare(query, cx, fn);
    return rc != PDCBB_OK ? rc : query_eval_node(query, cx, h, count);
}

perr_t PDCquery_get_nhits(pdc_query_t *query, uint64_t *n)
{
    qctx_t cx;
    hitset_t h = {0};
    uint64_t count = 0;
    perr_t ret = FAIL;
    CLIENT_ENTER();
    if (query_evaluate(query, n, "n", &cx, &h, &count, "PDCquery_get_nhits") == PDCBB_OK) {
        *n = count;
        ret = SUCCEED;
    }
    query_hits_free(&h);
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
    if (query_evaluate(query, sel, "sel", &cx, &h, NULL, fn) != PDCBB_OK)
        goto out;
    uint64_t *coords = NULL;
    if (cx.ndim == 1) {
        coords = h.v; /* 1-D: the linear indices are the coordinates */
        h.v = NULL;
        h.cap = 0;
    } else if (h.n > 0 && (h.n > SIZE_MAX / 8 / cx.ndim ||
                           (coords = query_big_alloc((size_t)h.n * cx.ndim * 8)) == NULL)) {
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
    query_hits_free(&h);
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
    int dim = part == PDC_REGION_STATIC && ns > 1 ? query_static_split_dim(ndim, dims) : -1;
    if (part == PDC_REGION_LOCAL || part == PDC_REGION_DYNAMIC) {
        pdcbb_box_t whole;
        uint64_t zero[PDCBB_REGION_NDIM_MAX] = {0};
        pdcbb_box_make(&whole, ndim, zero, dims);
        if ((rc = query_map_entries(o, &whole, &boxes, &daemons, &nent)) != PDCBB_OK) {
            free(owner);
            return rc;
        }
    }
    uint64_t w = dim >= 0 ? (dims[dim] + ns - 1) / ns : 0;
    uint64_t stripe_rows = part == PDCBB_REGION_STRIPED ? client_stripe_rows(unit, ndim, dims) : 0;
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
        } else if (stripe_rows > 0) {
            owner[i] = pdcbb_stripe_daemon(c[0] / stripe_rows, home, ns);
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
    client_obj_t *o = query_live_obj(obj_id, fn);
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
                query_dims_str(ndim, dims, a, sizeof(a));
                client_fail(PDCBB_ERR_BAD_REGION, "%s: hit %" PRIu64 " of the selection lies "
                            "outside object '%s' of dimensions %s", fn, i, o->name, a);
                free(lin);
                return FAIL;
            }
            l += c * strides[d];
        }
        lin[i] = l;
    }
    pdcbb_err_t rc = values_at(o, lin, sel->nhits, obj_data, dims, ndim, fn);
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
    pdc_query_t *leaf = query_first_leaf(query);
    if (query == NULL || leaf == NULL)
        client_fail(PDCBB_ERR_INVAL, "%s: the query is NULL or has no condition", fn);
    else
        ret = get_data(leaf->constraint->obj_id, sel ? sel : query->sel, data, fn);
    CLIENT_LEAVE();
    return ret;
}
