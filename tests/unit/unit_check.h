/* unit_check.h - check macros for pdcbb's unit tests: print the expression and error names. */
#ifndef UNIT_CHECK_H
#define UNIT_CHECK_H

#include <stdio.h>

#include "pdcbb_error.h"

static int unit_failures, unit_checks;

#define CHECK(expr)                                                                               \
    do {                                                                                          \
        unit_checks++;                                                                            \
        if (!(expr)) {                                                                            \
            unit_failures++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #expr);              \
        }                                                                                         \
    } while (0)

/* Check that an expression returns the expected pdcbb error code. */
#define CHECK_ERR(expr, want)                                                                     \
    do {                                                                                          \
        int got_ = (int)(expr);                                                                   \
        unit_checks++;                                                                            \
        if (got_ != (int)(want)) {                                                                \
            unit_failures++;                                                                      \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #expr,    \
                    pdcbb_errname(got_), pdcbb_errname(want));                                    \
        }                                                                                         \
    } while (0)

#define UNIT_DONE(name)                                                                           \
    do {                                                                                          \
        printf("%s: %d checks, %d failed\n", name, unit_checks, unit_failures);                   \
        return unit_failures ? 1 : 0;                                                             \
    } while (0)

#endif
