/*
 * pdc_query_internal.h - what the parts of PDC data queries share (include/pdc_query.h):
 *
 *   pdc_query.c         query trees: building, checking, walking, freeing, printing
 *   pdc_query_eval.c    evaluation by the daemons (QUERY_EVAL): pieces per daemon, hit sets
 *   pdc_query_result.c  PDCquery_get_nhits, _get_selection, _get_data, _get_sel_data
 *   pdc_query_hist.c    PDCquery_get_histogram, PDCbb_obj_histogram
 *
 * Internal to libpdc; everything runs under the library lock.
 */
#ifndef PDC_QUERY_INTERNAL_H
#define PDC_QUERY_INTERNAL_H

#include "client.h"
#include "client_strided.h"
#include "client_transfer.h"
#include "pdcbb_query.h"
#include "pdcbb_region.h"

/* A set of linear element indices (sorted once evaluated). */

typedef struct hitset {
    uint64_t *v;
    uint64_t n, cap;
} hitset_t;

/* A checked query: its shape and scope. */

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

/* The pieces of an object's query scope, per daemon (pdc_query_eval.c). */

typedef struct plan {
    uint64_t **w;          /* per daemon: piece words */
    uint32_t *n, *cap;
    pdcbb_box_t *written;  /* remembered placements: the written boxes within the scope */
    size_t nwritten;
    int remembered;
} plan_t;

/* What one QUERY_EVAL over an object collects, by mode. */

typedef struct eval_out {
    hitset_t *hits;       /* HITS */
    uint64_t count;       /* COUNT: hits; STATS/HIST: elements */
    pdcbb_qstats_t st;    /* STATS */
    uint64_t *bins;       /* HIST: nbin counters */
} eval_out_t;

/* pdc_query.c: the library is initialised and id is a live object (NULL, error recorded). */
client_obj_t *query_live_obj(pdcid_t id, const char *fn);
/* pdc_query.c: dims as "AxBxC" into buf (len bytes). */
void query_dims_str(uint32_t ndim, const uint64_t *dims, char *buf, size_t len);
/* pdc_query.c: check query tree q and fill cx (shape, scope); fn names the caller. */
pdcbb_err_t query_prepare(pdc_query_t *q, qctx_t *cx, const char *fn);
/* pdc_query.c: the object all leaves of q name, or NULL when they name several. */
client_obj_t *query_single_obj(pdc_query_t *q);
/* pdc_query.c: the leftmost condition of q, or NULL. */
pdc_query_t *query_first_leaf(pdc_query_t *q);
/* pdc_query.c: append the postfix program of one-object subtree q to w (*n nodes). */
void query_build_prog(pdc_query_t *q, uint64_t *w, uint32_t *n);

/* pdc_query_eval.c: clear this thread's statistics of the last query (PDCbb_query_last_stats). */
void query_stats_reset(void);
/* pdc_query_eval.c: len bytes for hits or coordinates (huge pages when large; free()). */
void *query_big_alloc(size_t len);
/* pdc_query_eval.c: free a hit set's indices and empty it. */
void query_hits_free(hitset_t *h);
/* pdc_query_eval.c: REGION_STATIC: the dimension striped along, or -1. */
int query_static_split_dim(uint32_t ndim, const uint64_t *dims);
/* pdc_query_eval.c: the placement map entries of o overlapping box, oldest first. */
pdcbb_err_t query_map_entries(client_obj_t *o, const pdcbb_box_t *box, pdcbb_box_t **boxes,
                              unsigned **daemons, size_t *n);
/* pdc_query_eval.c: the pieces of o's scope per daemon, into pl (free with query_plan_free). */
pdcbb_err_t query_plan_make(client_obj_t *o, const qctx_t *cx, plan_t *pl);
/* pdc_query_eval.c: free a plan. */
void query_plan_free(plan_t *pl);
/* pdc_query_eval.c: the scope's never-written elements (zeros): HITS, COUNT or STATS. */
pdcbb_err_t query_unwritten(const plan_t *pl, const qctx_t *cx, int want, hitset_t *hits,
                            uint64_t *count);
/* pdc_query_eval.c: QUERY_EVAL of o in mode over every daemon of plan pl, into out. */
pdcbb_err_t query_run_eval(client_obj_t *o, const qctx_t *cx, const plan_t *pl, uint32_t mode,
                           const uint64_t *prog, uint32_t nprog, const uint64_t *hist,
                           eval_out_t *out);
/* pdc_query_eval.c: evaluate q to its sorted hit set, or only count it (count != NULL). */
pdcbb_err_t query_eval_node(pdc_query_t *q, const qctx_t *cx, hitset_t *hits, uint64_t *count);

#endif
