/*
 * pdc_query.c - PDC data queries (PDCquery_*, PDCselection_*): predicate trees built locally,
 * evaluated by the daemons that hold the data (QUERY_EVAL, bbd/bbd_query.c; pdc_query_eval.c);
 * only hits travel. This file owns the trees: building them (PDCquery_create, _and, _or,
 * _sel_region), checking them before a query runs (types, shapes, the region), walking them
 * (the program of a one-object subtree), freeing and printing them and their selections.
 * Results are in pdc_query_result.c, histograms in pdc_query_hist.c.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc_query_internal.h"

#define QUERY_DEPTH_MAX 64

/* ------------------------------------------------------------------ helpers */

client_obj_t *query_live_obj(pdcid_t id, const char *fn)
{
    pdcbb_err_t rc = client_check_init();
    if (rc != PDCBB_OK) {
        client_fail(rc, "%s: %s", fn, pdcbb_strerror(rc));
        return NULL;
    }
    return client_obj_get(id, fn);
}

void query_dims_str(uint32_t ndim, const uint64_t *dims, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t d = 0; d < ndim && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%" PRIu64, d ? "x" : "", dims[d]);
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
    client_obj_t *o = client_obj_get(q->constraint->obj_id, cx->fn);
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
        query_dims_str(cx->ndim, cx->dims, a, sizeof(a));
        query_dims_str((uint32_t)o->prop.pub.ndim, o->prop.pub.dims, b, sizeof(b));
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
        query_dims_str(cx->ndim, cx->dims, a, sizeof(a));
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: the query region (empty, or reaching past the object) is not "
                           "within object '%s' of dimensions %s",
                           cx->fn, cx->first->name, a);
    }
    return PDCBB_OK;
}

/* Check a query tree and fill cx (shape, scope). */
pdcbb_err_t query_prepare(pdc_query_t *q, qctx_t *cx, const char *fn)
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
client_obj_t *query_single_obj(pdc_query_t *q)
{
    if (is_leaf(q))
        return client_handle_get(q->constraint->obj_id, CLIENT_H_OBJ, NULL);
    client_obj_t *a = query_single_obj(q->left), *b = query_single_obj(q->right);
    return a && b && a->meta_id == b->meta_id ? a : NULL;
}

pdc_query_t *query_first_leaf(pdc_query_t *q)
{
    while (q && !is_leaf(q))
        q = q->left;
    return q;
}

/* Postfix program of a one-object subtree. */
void query_build_prog(pdc_query_t *q, uint64_t *w, uint32_t *n)
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
        query_build_prog(q->left, w, n);
        query_build_prog(q->right, w, n);
        nd.kind = q->combine_op == PDC_QUERY_AND ? PDCBB_QNODE_AND : PDCBB_QNODE_OR;
    }
    pdcbb_qnode_encode(&nd, w + (size_t)*n * PDCBB_QNODE_WORDS);
    (*n)++;
}

/* ------------------------------------------------------------------ public: building */

pdc_query_t *PDCquery_create(pdcid_t obj_id, pdc_query_op_t op, pdc_var_type_t type, void *value)
{
    static const char fn[] = "PDCquery_create";
    pdc_query_t *q = NULL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = query_live_obj(obj_id, fn);
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
