/*
 * drain_manifest_yaml.h - the strict YAML layer shared by the manifest loader
 * (drain_manifest_load.c) and its implementation (drain_manifest_yaml.c): value trees built
 * from libyaml's events and typed readers of a mapping's fields. Each reader writes an error
 * naming the file, the YAML line, what is read ("objects[3]") and the key into the context.
 * Not installed, not used outside stager/drain_manifest_*.c.
 */
#ifndef PDCBB_DRAIN_MANIFEST_YAML_H
#define PDCBB_DRAIN_MANIFEST_YAML_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "drain_internal.h"
#include "pdcbb_drain.h"

enum { MF_SCALAR, MF_SEQ, MF_MAP };

/* A YAML value assembled from parser events. A map's kids alternate key, value. */
typedef struct mf_node {
    int kind;
    int plain;       /* scalar written without quotes */
    size_t line;     /* 1-based */
    char *text;      /* scalar */
    size_t len;
    struct mf_node **kids;
    size_t nkids, cap;
} mf_node_t;

typedef struct mf_ctx {
    yaml_parser_t parser;
    const char *path;
    char *err;
    size_t errlen;
    pdcbb_drain_t *m;
    uint32_t *ext_lines; /* YAML line of each extent, for later checks */
    uint64_t cap_lines;
} mf_ctx_t;

/* Free a value tree; accepts NULL. */
void mf_free(mf_node_t *n);
/* The next parser event into ev (a syntax error is reported with its line). */
pdcbb_err_t mf_next(mf_ctx_t *c, yaml_event_t *ev);
/* Build the value starting with event ev (consumed) at nesting depth into *out. */
pdcbb_err_t mf_build(mf_ctx_t *c, yaml_event_t *ev, int depth, mf_node_t **out);
/* "a single value", "a list" or "a mapping", for messages. */
const char *mf_kind(const mf_node_t *n);
/* The values of a mapping's keys (NULL-terminated keys; bit i of required: key i must be
 * there); unknown, duplicate and missing keys are errors. */
pdcbb_err_t mf_fields(mf_ctx_t *c, const mf_node_t *map, const char *what,
                      const char *const *keys, uint32_t required, mf_node_t **vals);
/* Report a bad value of key (why says what was expected); returns PDCBB_ERR_CONFIG. */
pdcbb_err_t mf_bad(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                   const char *why);
/* A plain decimal integer from min to max. */
pdcbb_err_t mf_u64(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                   uint64_t min, uint64_t max, uint64_t *out);
/* A plain decimal integer from 0 to max. */
pdcbb_err_t mf_u32(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                   uint32_t max, uint32_t *out);
/* A string value without a NUL byte; replaces *out (malloc'ed). */
pdcbb_err_t mf_str(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                   char **out);
/* A file name relative to the drain directory, without "..". */
pdcbb_err_t mf_file_name(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key);
/* A list of min_n..16 integers >= min; "unlimited" allowed first when unlimited_first. */
pdcbb_err_t mf_u64_list(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                        int unlimited_first, uint64_t min, size_t min_n, uint64_t *out,
                        uint32_t *n);
/* The value of one hex digit, -1 if ch is none. */
int mf_hexval(int ch);
/* A crc32c value: 0x and 1 to 8 hex digits. */
pdcbb_err_t mf_crc(mf_ctx_t *c, const mf_node_t *cv, const char *what, uint32_t *out);

#endif
