/*
 * pdcbb_config_internal.h - what the parts of yaml/ share behind pdcbb_config.h; not installed,
 * not for callers outside yaml/.
 *
 * The one table of keys (cfg_keys[], defined in pdcbb_config.c) and the functions that set one
 * key from text are used by the YAML loader (pdcbb_config_yaml.c), --pdc specs and the
 * environment (pdcbb_config_spec.c), validation (pdcbb_config_check.c) and printing
 * (pdcbb_config_print.c); the value parsers are pdcbb_config_values.c. Plain functions on
 * caller-owned data: callable from any thread as long as each config has one writer.
 */
#ifndef PDCBB_CONFIG_INTERNAL_H
#define PDCBB_CONFIG_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pdcbb_config.h"

/* ---- the table (pdcbb_config.c) ---- */

/* Every key, in the order pdcbb_config_print writes them (pdcbb_config_keys() outside yaml/). */
extern const pdcbb_config_key_t cfg_keys[];
/* How many entries cfg_keys[] has. */
extern const size_t cfg_nkeys;
/* At least cfg_nkeys (checked at compile time): the size of arrays with one slot per key. */
#define CFG_NKEYS_MAX 64

/* One day in seconds (bounds of durations, the "d" suffix). */
#define CFG_DAY 86400.0

/* Longest "SOURCE: key 'NAME'" prefix: a file name plus a line number and a key. */
#define CFG_WHERE_LEN (PATH_MAX + 128)

/* The field of key k in config c. */
static inline const void *cfg_field_const(const pdcbb_config_t *c, const pdcbb_config_key_t *k)
{
    return (const char *)c + k->offset;
}

/* An ASCII decimal digit (not locale-dependent like isdigit). */
static inline bool cfg_isdigit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* ---- setting one key (pdcbb_config.c) ---- */

/* Checks shared by every string-like value: true when fine, else false and the reason in why. */
bool cfg_text_ok(const pdcbb_config_key_t *k, const char *value, size_t cap, bool is_path,
                 char *why, size_t whylen);
/* Store the n paths in items as list key k; where prefixes messages; c written only on success. */
pdcbb_err_t cfg_apply_list(pdcbb_config_t *c, const pdcbb_config_key_t *k, const char *const *items,
                           size_t n, const char *where, char *err, size_t errlen);
/* Parse value for key k into c (scope not checked); where prefixes messages. */
pdcbb_err_t cfg_apply(pdcbb_config_t *c, const pdcbb_config_key_t *k, const char *value,
                      const char *where, char *err, size_t errlen);
/* Find key and check that scope may set it; messages name source, extra_known ends the list. */
pdcbb_err_t cfg_lookup(const char *key, unsigned scope, const char *source, const char *extra_known,
                       const pdcbb_config_key_t **out, char *err, size_t errlen);
/* cfg_lookup then cfg_apply, with messages "SOURCE: key 'NAME': ...". */
pdcbb_err_t cfg_set(pdcbb_config_t *c, const char *key, const char *value, unsigned scope,
                    const char *source, const char *extra_known, char *err, size_t errlen);

/* ---- value parsers (pdcbb_config_values.c) ---- */

typedef enum cfg_size_status {
    CFG_SIZE_OK,
    CFG_SIZE_SYNTAX,
    CFG_SIZE_INEXACT,
    CFG_SIZE_OVERFLOW,
} cfg_size_status_t;

/* A size "DIGITS[.DIGITS][K|M|G|T|P][B|iB]" into *out (written only on CFG_SIZE_OK). */
cfg_size_status_t cfg_size_parse(const char *s, uint64_t *out);
/* A duration "SECONDS[.FRACTION][s|m|h|d]" into *out; false if malformed. */
bool cfg_seconds_parse(const char *s, double *out);
/* The shortest "%g" text of d that cfg_seconds_parse reads back to exactly d. */
void cfg_format_seconds(double d, char *buf, size_t len);

#endif
