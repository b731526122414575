/*
 * client_strided.h - strided regions in queries (client_strided.c): a query restricted with
 * PDCquery_sel_region to a strided region's info evaluates the selection's bounding box on the
 * daemons and keeps the hits that are selected.
 */
#ifndef CLIENT_STRIDED_H
#define CLIENT_STRIDED_H

#include <stdint.h>

#include "client.h"
#include "pdcbb_select.h"

/* 1 and *sel if info is the PDCregion_get_info of a live strided region, else 0. */
int client_strided_region_of(const struct pdc_region_info *info, pdcbb_sel_t *sel);
/* Keep the linear element indices lin[0..n) (strides: elements per index of each dimension)
 * that sel selects, in order; returns how many were kept. */
uint64_t client_strided_filter(uint64_t *lin, uint64_t n, const pdcbb_sel_t *sel,
                               const uint64_t *strides);

#endif
