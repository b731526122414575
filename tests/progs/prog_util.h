/*
 * prog_util.h - what the test programs of tests/progs share: one blocking region transfer of a
 * box (prog_transfer) or of a band of rows (prog_xfer_rows), the four placements with their
 * short names, the data checksum (prog_fnv1a) and the failure macros. The macros count into
 * the including program's `static int failures;`; PROG_FAILF also names the program's
 * `myrank`, CALL calls the program's own FAILF.
 */
#ifndef PROG_UTIL_H
#define PROG_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pdc.h"

/* The four placements, in the order of prog_part_names ("objstatic", "rstatic", "dynamic",
 * "local"). */
extern const char *const prog_part_names[4];
extern const pdc_region_partition_t prog_parts[4];

/* One region transfer (create, start, wait, close) of the box (off, size) of ndim dimensions
 * between buf (packed) and obj; 1 on success, 0 on any failure (prog_xfer_error says why: the
 * closes that follow a failure clear the library's last error). */
int prog_transfer(pdcid_t obj, pdc_access_t access, void *buf, int ndim, const uint64_t *off,
                  const uint64_t *size);

/* "NAME: MESSAGE" of the library's last error when the last prog_transfer failed ("" after
 * one that succeeded). */
extern char prog_xfer_error[1200];

/* Transfer rows [r0, r0 + n) x [0, ncols) of the 2-D obj from/to buf; 1 on success, else 0. */
int prog_xfer_rows(pdcid_t obj, uint64_t r0, uint64_t n, uint64_t ncols, void *buf,
                   pdc_access_t acc);

/* The FNV-1a 64 hash of n bytes at p (the programs' data checksums). */
uint64_t prog_fnv1a(const void *p, size_t n);

/* A failed check of rank myrank: "rank R: FAIL: ..." with the library's last error, on stderr. */
#define PROG_FAILF(...)                                                                            \
    do {                                                                                           \
        fprintf(stderr, "rank %d: FAIL: ", myrank);                                                \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, " [%s: %s]\n", PDCbb_last_error_name(), PDCbb_last_error_message());       \
        failures++;                                                                                \
    } while (0)

/* cond must hold: else "FAILED file:line: cond: ..." with the library's last error, on stdout. */
#define PROG_CHECK(cond, ...)                                                                     \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            printf("FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);                              \
            printf(__VA_ARGS__);                                                                  \
            printf(" [%s: %s]\n", PDCbb_last_error_name(), PDCbb_last_error_message());           \
            failures++;                                                                           \
        }                                                                                         \
    } while (0)

/* A PDC call that must succeed; on failure report (FAILF) and return -1 from the case. */
#define CALL(expr)                                                                                 \
    do {                                                                                           \
        if (!(expr)) {                                                                             \
            FAILF("%s failed: %s: %s", #expr, PDCbb_last_error_name(),                             \
                  PDCbb_last_error_message());                                                     \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

#endif
