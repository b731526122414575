/*
 * drain_manifest_yaml.c - the strict YAML layer of the manifest loader (drain_manifest_yaml.h):
 * libyaml's events assembled into a small value tree (one per top-level value or list item,
 * so that a manifest of millions of extents is never held whole), and the typed readers of a
 * mapping's fields (integers in a range, strings, file names inside the drain, lists of
 * integers, CRCs). Every error names the file, the YAML line and the key.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "drain_manifest_yaml.h"
#include "pdcbb_grow.h"

#define DRAIN_YAML_DEPTH_MAX 16

void mf_free(mf_node_t *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->nkids; i++)
        mf_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

static pdcbb_err_t mf_syntax(mf_ctx_t *c)
{
    yaml_parser_t *p = &c->parser;
    if (p->error == YAML_MEMORY_ERROR) {
        drain_errf(c->err, c->errlen, "%s: out of memory while reading YAML", c->path);
        return PDCBB_ERR_NOMEM;
    }
    if (p->error == YAML_READER_ERROR) {
        /* bytes that are not UTF-8 (or a control character): libyaml knows only the offset */
        drain_errf(c->err, c->errlen, "%s: not a valid manifest: %s at byte %zu", c->path,
                   p->problem ? p->problem : "unreadable text", p->problem_offset);
        return PDCBB_ERR_CONFIG;
    }
    drain_errf(c->err, c->errlen, "%s:%zu: YAML syntax error: %s", c->path,
               (size_t)p->problem_mark.line + 1, p->problem ? p->problem : "unknown problem");
    return PDCBB_ERR_CONFIG;
}

pdcbb_err_t mf_next(mf_ctx_t *c, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&c->parser, ev))
        return mf_syntax(c);
    return PDCBB_OK;
}

/* Build the value starting with event ev (consumed). */
pdcbb_err_t mf_build(mf_ctx_t *c, yaml_event_t *ev, int depth, mf_node_t **out)
{
    pdcbb_err_t rc = PDCBB_OK;
    mf_node_t *n = calloc(1, sizeof(*n));
    yaml_event_t sub;

    if (n == NULL) {
        yaml_event_delete(ev);
        drain_errf(c->err, c->errlen, "%s: out of memory", c->path);
        return PDCBB_ERR_NOMEM;
    }
    n->line = ev->start_mark.line + 1;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        n->kind = MF_SCALAR;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n->len = ev->data.scalar.length;
        n->text = malloc(n->len + 1);
        if (n->text == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        memcpy(n->text, ev->data.scalar.value, n->len);
        n->text[n->len] = '\0';
        break;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        int map = ev->type == YAML_MAPPING_START_EVENT;
        yaml_event_type_t end = map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
        n->kind = map ? MF_MAP : MF_SEQ;
        if (depth >= DRAIN_YAML_DEPTH_MAX) {
            drain_errf(c->err, c->errlen, "%s:%zu: values nested too deeply", c->path, n->line);
            rc = PDCBB_ERR_CONFIG;
            break;
        }
        for (;;) {
            if ((rc = mf_next(c, &sub)) != PDCBB_OK)
                break;
            if (sub.type == end) {
                yaml_event_delete(&sub);
                break;
            }
            mf_node_t **k = pdcbb_grow(n->kids, n->nkids, &n->cap, sizeof(*k), 8);
            if (k == NULL) {
                yaml_event_delete(&sub);
                rc = PDCBB_ERR_NOMEM;
                break;
            }
            n->kids = k;
            if ((rc = mf_build(c, &sub, depth + 1, &n->kids[n->nkids])) != PDCBB_OK)
                break;
            n->nkids++;
        }
        break;
    }
    case YAML_ALIAS_EVENT:
        drain_errf(c->err, c->errlen, "%s:%zu: YAML aliases are not allowed in a manifest",
                   c->path, n->line);
        rc = PDCBB_ERR_CONFIG;
        break;
    default:
        drain_errf(c->err, c->errlen, "%s:%zu: unexpected YAML event", c->path, n->line);
        rc = PDCBB_ERR_CONFIG;
        break;
    }
    yaml_event_delete(ev);
    if (rc == PDCBB_ERR_NOMEM && c->err != NULL && c->err[0] == '\0')
        drain_errf(c->err, c->errlen, "%s: out of memory", c->path);
    if (rc != PDCBB_OK) {
        mf_free(n);
        return rc;
    }
    *out = n;
    return PDCBB_OK;
}

const char *mf_kind(const mf_node_t *n)
{
    return n->kind == MF_SCALAR ? "a single value" : n->kind == MF_SEQ ? "a list" : "a mapping";
}

/*
 * Fetch the values of a mapping's keys: keys is NULL-terminated; vals[i] gets key i's value
 * (NULL if absent). Unknown, duplicate and missing required keys (bit i of required) are
 * errors naming what ("objects[3]"), the line and the key.
 */
pdcbb_err_t mf_fields(mf_ctx_t *c, const mf_node_t *map, const char *what,
                      const char *const *keys, uint32_t required, mf_node_t **vals)
{
    size_t nkeys = 0;
    while (keys[nkeys] != NULL)
        nkeys++;
    if (map->kind != MF_MAP) {
        drain_errf(c->err, c->errlen, "%s:%zu: %s: expected a mapping, found %s", c->path,
                   map->line, what, mf_kind(map));
        return PDCBB_ERR_CONFIG;
    }
    for (size_t i = 0; i < nkeys; i++)
        vals[i] = NULL;
    for (size_t i = 0; i + 1 < map->nkids; i += 2) {
        const mf_node_t *k = map->kids[i];
        size_t j;
        if (k->kind != MF_SCALAR) {
            drain_errf(c->err, c->errlen, "%s:%zu: %s: a key must be a name, found %s",
                       c->path, k->line, what, mf_kind(k));
            return PDCBB_ERR_CONFIG;
        }
        for (j = 0; j < nkeys; j++)
            if (strcmp(keys[j], k->text) == 0)
                break;
        if (j == nkeys) {
            drain_errf(c->err, c->errlen, "%s:%zu: %s: unknown key '%s'", c->path, k->line,
                       what, k->text);
            return PDCBB_ERR_CONFIG;
        }
        if (vals[j] != NULL) {
            drain_errf(c->err, c->errlen, "%s:%zu: %s: duplicate key '%s' (first on line %zu)",
                       c->path, k->line, what, k->text, vals[j]->line);
            return PDCBB_ERR_CONFIG;
        }
        vals[j] = map->kids[i + 1];
    }
    for (size_t j = 0; j < nkeys; j++) {
        if (vals[j] == NULL && (required & (1u << j))) {
            drain_errf(c->err, c->errlen, "%s:%zu: %s: missing key '%s'", c->path, map->line,
                       what, keys[j]);
            return PDCBB_ERR_CONFIG;
        }
    }
    return PDCBB_OK;
}

pdcbb_err_t mf_bad(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                   const char *why)
{
    drain_errf(c->err, c->errlen, "%s:%zu: %s: key '%s': %s", c->path, v->line, what, key, why);
    return PDCBB_ERR_CONFIG;
}

pdcbb_err_t mf_u64(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                   uint64_t min, uint64_t max, uint64_t *out)
{
    char why[128];
    if (v->kind != MF_SCALAR || !v->plain || v->text[0] < '0' || v->text[0] > '9')
        goto bad;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v->text, &end, 10);
    if (errno != 0 || *end != '\0' || (uint64_t)x < min || (uint64_t)x > max ||
        (v->text[0] == '0' && v->text[1] != '\0'))
        goto bad;
    *out = x;
    return PDCBB_OK;
bad:
    snprintf(why, sizeof(why), "expected an integer from %" PRIu64 " to %" PRIu64 ", found '%s'",
             min, max, v->kind == MF_SCALAR ? v->text : mf_kind(v));
    return mf_bad(c, v, what, key, why);
}

pdcbb_err_t mf_u32(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                   uint32_t max, uint32_t *out)
{
    uint64_t x;
    pdcbb_err_t rc = mf_u64(c, v, what, key, 0, max, &x);
    if (rc == PDCBB_OK)
        *out = (uint32_t)x;
    return rc;
}

/* A string value: any scalar without a NUL byte; *out is malloc'ed. */
pdcbb_err_t mf_str(mf_ctx_t *c, const mf_node_t *v, const char *what, const char *key,
                   char **out)
{
    if (v->kind != MF_SCALAR)
        return mf_bad(c, v, what, key, "expected a string");
    if (strlen(v->text) != v->len)
        return mf_bad(c, v, what, key, "the string contains a NUL character");
    char *s = strdup(v->text);
    if (s == NULL) {
        drain_errf(c->err, c->errlen, "%s: out of memory", c->path);
        return PDCBB_ERR_NOMEM;
    }
    free(*out);
    *out = s;
    return PDCBB_OK;
}

/* A file name inside a drain directory: relative, no "..", no empty component. */
static bool drain_file_name_ok(const char *f)
{
    if (f[0] == '\0' || f[0] == '/')
        return false;
    for (const char *p = f; *p != '\0';) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.'))
            return false;
        p += n;
        if (*p == '/')
            p++;
        else
            break;
        if (*p == '\0')
            return false;
    }
    return true;
}

pdcbb_err_t mf_file_name(mf_ctx_t *c, const mf_node_t *v, const char *what,
                         const char *key)
{
    if (v->kind != MF_SCALAR || strlen(v->text) != v->len || !drain_file_name_ok(v->text))
        return mf_bad(c, v, what, key,
                      "expected a file name relative to the drain directory, without '..'");
    return PDCBB_OK;
}

/* A list of min_n..16 integers; "unlimited" allowed as the first when unlimited_first. */
pdcbb_err_t mf_u64_list(mf_ctx_t *c, const mf_node_t *v, const char *what,
                        const char *key, int unlimited_first, uint64_t min,
                        size_t min_n, uint64_t *out, uint32_t *n)
{
    if (v->kind != MF_SEQ || v->nkids < min_n || v->nkids > PDCBB_REGION_NDIM_MAX)
        return mf_bad(c, v, what, key,
                      min_n ? "expected a list of 1 to 16 integers"
                            : "expected a list of at most 16 integers");
    for (size_t i = 0; i < v->nkids; i++) {
        const mf_node_t *x = v->kids[i];
        if (i == 0 && unlimited_first && x->kind == MF_SCALAR && strcmp(x->text, "unlimited") == 0) {
            out[i] = PDCBB_DIM_UNLIMITED;
            continue;
        }
        pdcbb_err_t rc = mf_u64(c, x, what, key, min, UINT64_MAX - 1, &out[i]);
        if (rc != PDCBB_OK)
            return rc;
    }
    *n = (uint32_t)v->nkids;
    return PDCBB_OK;
}

int mf_hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* crc32c: 0x followed by 1 to 8 hex digits */
pdcbb_err_t mf_crc(mf_ctx_t *c, const mf_node_t *cv, const char *what, uint32_t *out)
{
    uint32_t crc = 0;
    bool ok = cv->kind == MF_SCALAR && cv->len >= 3 && cv->len <= 10 && cv->text[0] == '0' &&
              (cv->text[1] == 'x' || cv->text[1] == 'X');
    for (size_t i = 2; ok && i < cv->len; i++) {
        int h = mf_hexval(cv->text[i]);
        ok = h >= 0;
        crc = crc << 4 | (uint32_t)(h < 0 ? 0 : h);
    }
    if (!ok)
        return mf_bad(c, cv, what, "crc32c", "expected 0x and up to 8 hex digits (0x8a9136aa)");
    *out = crc;
    return PDCBB_OK;
}
