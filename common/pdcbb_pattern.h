/*
 * pdcbb_pattern.h - tag search patterns: exact, prefix "abc*", suffix "*abc", infix "*abc*".
 *
 * PDC's metadata search (DART, and PDC_Client_query_kvtag with wildcards) looks only at the
 * pattern's ends: one leading '*' makes a suffix pattern, one trailing '*' a prefix pattern,
 * both an infix pattern; any other '*' is an ordinary character. A pattern that is empty or
 * made only of '*' is refused (it would match everything: list objects with PDCobj_iter
 * instead). The client, the daemon and the read-only drained reader share these functions, so
 * they agree on what matches. Pure functions, thread-safe.
 */
#ifndef PDCBB_PATTERN_H
#define PDCBB_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_error.h"

typedef enum pdcbb_pat_kind {
    PDCBB_PAT_EXACT = 0,
    PDCBB_PAT_PREFIX = 1,
    PDCBB_PAT_SUFFIX = 2,
    PDCBB_PAT_INFIX = 3
} pdcbb_pat_kind_t;

/* A parsed pattern: lit points into the parsed string (not NUL-terminated at len). */
typedef struct pdcbb_pat {
    pdcbb_pat_kind_t kind;
    const char *lit;
    size_t len;
} pdcbb_pat_t;

/* Longest DART key or value, in bytes (each; they form one LMDB key together). */
#define PDCBB_DART_TEXT_MAX 240

/*
 * Parse pattern s of len bytes (s need not be NUL-terminated). PDCBB_ERR_INVAL when s is
 * NULL, empty, or only '*'. On success p->lit points into s.
 */
pdcbb_err_t pdcbb_pat_parse(const char *s, size_t len, pdcbb_pat_t *p);
/* 1 if text (len bytes) matches p. */
int pdcbb_pat_match(const pdcbb_pat_t *p, const void *text, size_t len);
/* "EXACT", "PREFIX", "SUFFIX" or "INFIX". */
const char *pdcbb_pat_kind_name(pdcbb_pat_kind_t k);

/*
 * Split a DART query "KEY=VALUE" at its first '=' into the key and value pattern strings; a
 * value written in double quotes (PDC's newer query syntax, key="value*") loses its quotes.
 * key, klen, val and vlen point into q. PDCBB_ERR_INVAL when q has no '='.
 */
pdcbb_err_t pdcbb_pat_split_query(const char *q, const char **key, size_t *klen, const char **val,
                                  size_t *vlen);

/*
 * The text form of a tag value for pattern matching: the bytes without one trailing NUL
 * (PDC strings are stored with it). Returns 0 when the value is not text (a NUL inside), 1
 * with *len set otherwise.
 */
int pdcbb_pat_text_of(const void *value, size_t size, size_t *len);

#endif
