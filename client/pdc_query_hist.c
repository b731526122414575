/*
 * pdc_query_hist.c - histograms of objects from the daemons (PDCquery_get_histogram,
 * PDCbb_obj_histogram): the value range (QUERY_EVAL in STATS mode), then HIST_NBIN equal bins
 * counted where the data is (HIST mode), never-written elements counted here as zeros. The
 * local histogram functions (PDC_gen_hist, ...) are in pdc_hist.c.
 */

#include <stdlib.h>
#include <string.h>

#include "pdc_query_internal.h"

#define HIST_NBIN 64

perr_t PDCquery_get_histogram(pdcid_t obj_id)
{
    static const char fn[] = "PDCquery_get_histogram";
    perr_t ret = FAIL;
    plan_t pl;
    memset(&pl, 0, sizeof(pl));
    CLIENT_ENTER();
    client_clear_error();
    query_stats_reset();
    client_obj_t *o = query_live_obj(obj_id, fn);
    if (o == NULL)
        goto out;
    /* A query on the object checks its type and shape. */
    pdc_query_constraint_t c = {.obj_id = obj_id, .op = PDC_GT, .type = o->prop.pub.type};
    pdc_query_t leaf = {.constraint = &c};
    qctx_t cx;
    if (query_prepare(&leaf, &cx, fn) != PDCBB_OK || query_plan_make(o, &cx, &pl) != PDCBB_OK)
        goto out;
    int cls = pdcbb_query_class(o->prop.pub.type);
    eval_out_t st = {0};
    uint64_t zeros = 0;
    if (query_run_eval(o, &cx, &pl, PDCBB_QMODE_STATS, NULL, 0, NULL, &st) != PDCBB_OK)
        goto out;
    if (pl.remembered && query_unwritten(&pl, &cx, PDCBB_QMODE_STATS, NULL, &zeros) != PDCBB_OK)
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
    if (query_run_eval(o, &cx, &pl, PDCBB_QMODE_HIST, NULL, 0, hist, &ho) != PDCBB_OK) {
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
    query_plan_free(&pl);
    CLIENT_LEAVE();
    return ret;
}

pdc_histogram_t *PDCbb_obj_histogram(pdcid_t obj_id)
{
    pdc_histogram_t *h = NULL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = query_live_obj(obj_id, "PDCbb_obj_histogram");
    if (o && o->hist == NULL)
        client_fail(PDCBB_ERR_NOT_FOUND, "PDCbb_obj_histogram: no histogram of object '%s' yet "
                    "(call PDCquery_get_histogram)", o->name);
    else if (o && (h = PDC_dup_hist(o->hist)) == NULL)
        client_fail(PDCBB_ERR_NOMEM, "PDCbb_obj_histogram: out of memory");
    CLIENT_LEAVE();
    return h;
}
