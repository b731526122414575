/*
 * bench_common.h - what the region data-path benchmarks (pdc_region_sweep, pdc_vpic_bench)
 * share: the CPU time and peak memory of the job's daemons on this machine (found through the
 * bbd-R.pid files), this process's CPU time, medians of the repetitions, the names of the
 * region placements, and the report of a failed PDC call (PDC_ID / PDC_OK). Diagnostic only:
 * nothing here changes what a benchmark measures.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdint.h>

#include "pdc.h"

/* The most repetitions a benchmark keeps (the size of bench_median's scratch array). */
#define BENCH_MAX_REPEAT 101

/* Find the daemons' pids from bbd-R.pid in every job directory of PDCBB_SERVER_DIRS (or
 * PDCBB_JOB_DIR); only daemons on this machine can be measured. Call once. */
void bench_find_daemons(void);
/* How many daemons bench_find_daemons found. */
int bench_ndaemons(void);
/* CPU seconds (user + system) used so far by the daemons; -1 if none can be read. */
double bench_daemons_cpu(void);
/* Peak resident set (VmHWM, bytes) of the largest daemon on this machine; 0 if none. */
uint64_t bench_daemons_peak_rss(void);
/* Reset the daemons' VmHWM (Linux >= 4.0, "5" to clear_refs) so that the next
 * bench_daemons_peak_rss tells one phase's peak; 0 if any reset failed (then peaks are the
 * job's so far). */
int bench_daemons_rss_reset(void);
/* CPU seconds (user + system) used so far by this process. */
double bench_self_cpu(void);
/* "4096", "4K", "1M", "2G" (K, M, G: powers of 1024) -> the number; with bytes also a "B" or
 * "iB" after the suffix ("4KiB", "4096B"); 0 on a bad value. */
uint64_t bench_parse_size(const char *s, int bytes);
/* The median of v[0..n), 1 <= n <= BENCH_MAX_REPEAT (v is not changed). */
double bench_median(const double *v, int n);
/* "obj_static", "region_static", "region_dynamic", "region_local" -> the
 * pdc_region_partition_t; -1 if unknown, after "PROG: bad --placement 'S' (...)" on stderr. */
int bench_parse_placement(const char *prog, const char *s);
/* The name of a pdc_region_partition_t ("?" if unknown). */
const char *bench_placement_name(int p);
/* Print "WHO: error: WHAT failed: NAME: MESSAGE" for the library's last error, where WHO is
 * prog or, with rank >= 0, "prog[rank]", and a hint to give the job more capacity after
 * PDCBB_ERR_NOSPC. */
void bench_pdc_report(const char *prog, int rank, const char *what);

/* Defined by each benchmark: report a failed PDC call (bench_pdc_report), clean up, exit 1. */
void pdc_fail(const char *what) __attribute__((noreturn));

static inline pdcid_t pdc_id(pdcid_t id, const char *what)
{
    if (id == 0)
        pdc_fail(what);
    return id;
}
#define PDC_ID(call, what) pdc_id((call), (what))
#define PDC_OK(call, what)                                                                        \
    do {                                                                                          \
        if ((call) != SUCCEED)                                                                    \
            pdc_fail(what);                                                                       \
    } while (0)

#endif
