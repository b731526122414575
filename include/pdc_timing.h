/*
 * pdc_timing.h - exists for source compatibility only.
 *
 * Some PDC applications include this header without using anything from it. pdcbb declares
 * PDC_timing_report() in pdc.h, which this header includes; there is nothing else here.
 */
#ifndef PDC_TIMING_H
#define PDC_TIMING_H

#include "pdc.h"

#endif /* PDC_TIMING_H */
