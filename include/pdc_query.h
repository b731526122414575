/*
 * pdc_query.h - exists for source compatibility: PDC programs include it for the data query
 * API (PDCquery_*, PDCselection_*, pdc_query_t, pdc_selection_t), which pdcbb declares in
 * pdc.h (as PDC's pdc.h includes its pdc_query.h).
 */
#ifndef PDC_QUERY_H
#define PDC_QUERY_H

#include "pdc.h"

#endif /* PDC_QUERY_H */
