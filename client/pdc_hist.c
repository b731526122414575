/*
 * pdc_hist.c - PDC's histogram functions (PDC_gen_hist, PDC_dup_hist, PDC_merge_hist,
 * PDC_free_hist, PDC_print_hist): plain local computations on pdc_histogram_t, which
 * PDCquery_get_histogram (pdc_query_hist.c) also fills from the daemons. Bin i holds the values
 * of [range[2i], range[2i+1]); the last bin also takes the maximum.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "pdcbb_query.h"

#define HIST_NBIN 64

static pdc_histogram_t *hist_new(pdc_var_type_t dtype, int nbin, double lo, double incr)
{
    pdc_histogram_t *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return NULL;
    h->range = malloc(2 * (size_t)nbin * sizeof(double));
    h->bin = calloc((size_t)nbin, sizeof(uint64_t));
    if (h->range == NULL || h->bin == NULL) {
        PDC_free_hist(h);
        return NULL;
    }
    h->dtype = dtype;
    h->nbin = nbin;
    h->incr = incr;
    for (int i = 0; i < nbin; i++) {
        h->range[2 * i] = lo + i * incr;
        h->range[2 * i + 1] = lo + (i + 1) * incr;
    }
    return h;
}

pdc_histogram_t *PDC_gen_hist(pdc_var_type_t dtype, uint64_t n, void *data)
{
    int cls = pdcbb_query_class(dtype);
    size_t unit = pdcbb_type_size(dtype);
    if (cls == PDCBB_QCLASS_NONE || (data == NULL && n > 0)) {
        client_fail(PDCBB_ERR_INVAL, "PDC_gen_hist: %s", data == NULL && n > 0
                                                             ? "data is NULL"
                                                             : "the type has no values");
        return NULL;
    }
    pdcbb_qstats_t st = {.has = 0};
    pdcbb_qstats_add(dtype, data, (size_t)n, &st);
    double lo = st.has ? pdcbb_qval_double(cls, st.mn) : 0;
    double hi = st.has ? pdcbb_qval_double(cls, st.mx) : 0;
    double incr = hi > lo ? (hi - lo) / HIST_NBIN : 1;
    pdc_histogram_t *h = hist_new(dtype, HIST_NBIN, lo, incr);
    if (h == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "PDC_gen_hist: out of memory");
        return NULL;
    }
    for (uint64_t i = 0; i < n; i++) {
        pdcbb_qval_t v = pdcbb_query_value(dtype, (const uint8_t *)data + i * unit);
        if (cls == PDCBB_QCLASS_FLOAT && v.f != v.f)
            continue; /* NaN */
        h->bin[pdcbb_qhist_bin(cls, v, lo, incr, HIST_NBIN)]++;
    }
    return h;
}

pdc_histogram_t *PDC_dup_hist(pdc_histogram_t *hist)
{
    if (hist == NULL || hist->nbin <= 0 || hist->range == NULL || hist->bin == NULL)
        return NULL;
    pdc_histogram_t *h = hist_new(hist->dtype, hist->nbin, hist->range[0], hist->incr);
    if (h == NULL)
        return NULL;
    memcpy(h->range, hist->range, 2 * (size_t)hist->nbin * sizeof(double));
    memcpy(h->bin, hist->bin, (size_t)hist->nbin * sizeof(uint64_t));
    return h;
}

pdc_histogram_t *PDC_merge_hist(int n, pdc_histogram_t **hists)
{
    if (n < 1 || hists == NULL) {
        client_fail(PDCBB_ERR_INVAL, "PDC_merge_hist: no histograms");
        return NULL;
    }
    double lo = 0, hi = 0;
    for (int k = 0; k < n; k++) {
        pdc_histogram_t *s = hists[k];
        if (s == NULL || s->nbin <= 0 || s->range == NULL || s->bin == NULL ||
            s->dtype != hists[0]->dtype) {
            client_fail(PDCBB_ERR_INVAL, "PDC_merge_hist: histogram %d is NULL, empty or of "
                        "another type", k);
            return NULL;
        }
        double slo = s->range[0], shi = s->range[2 * s->nbin - 1];
        if (k == 0 || slo < lo)
            lo = slo;
        if (k == 0 || shi > hi)
            hi = shi;
    }
    int nbin = hists[0]->nbin;
    int same = 1;
    for (int k = 1; k < n; k++)
        same = same && hists[k]->nbin == nbin && hists[k]->range[0] == hists[0]->range[0] &&
               hists[k]->incr == hists[0]->incr;
    double incr = same ? hists[0]->incr : hi > lo ? (hi - lo) / nbin : 1;
    pdc_histogram_t *h = hist_new(hists[0]->dtype, nbin, lo, incr);
    if (h == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "PDC_merge_hist: out of memory");
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        pdc_histogram_t *s = hists[k];
        for (int i = 0; i < s->nbin; i++) {
            if (same) {
                h->bin[i] += s->bin[i];
                continue;
            }
            pdcbb_qval_t mid = {.f = (s->range[2 * i] + s->range[2 * i + 1]) / 2};
            h->bin[pdcbb_qhist_bin(PDCBB_QCLASS_FLOAT, mid, lo, incr, (uint32_t)nbin)] +=
                s->bin[i];
        }
    }
    return h;
}

void PDC_free_hist(pdc_histogram_t *hist)
{
    if (hist == NULL)
        return;
    free(hist->range);
    free(hist->bin);
    free(hist);
}

void PDC_print_hist(pdc_histogram_t *hist)
{
    if (hist == NULL || hist->range == NULL || hist->bin == NULL) {
        printf("histogram: NULL\n");
        fflush(stdout);
        return;
    }
    printf("histogram: %s, %d bins of width %g\n", pdcbb_type_name(hist->dtype), hist->nbin,
           hist->incr);
    for (int i = 0; i < hist->nbin; i++)
        printf("  [%g, %g%c %" PRIu64 "\n", hist->range[2 * i], hist->range[2 * i + 1],
               i == hist->nbin - 1 ? ']' : ')', hist->bin[i]);
    fflush(stdout);
}
