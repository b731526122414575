/*
 * pdcbb_config_check.c - validating a whole configuration (pdcbb_config_validate): every
 * stored value against its key's bounds again (code may have written the struct directly), and
 * the checks across keys: capacity within max_capacity, drain and stage_in under one of
 * drain_roots after lexical normalisation of "." and "..".
 */
#include "pdcbb_config_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdcbb_log.h"

/* Lexically normalise an absolute path: no "//", "." or ".."; ".." at the root stays there. */
static void cfg_path_normalise(const char *in, char *out, size_t len)
{
    size_t n = 0;
    const char *p = in;

    while (*p != '\0') {
        const char *start, *end;
        size_t clen;

        while (*p == '/')
            p++;
        start = p;
        while (*p != '\0' && *p != '/')
            p++;
        end = p;
        clen = (size_t)(end - start);
        if (clen == 0 || (clen == 1 && start[0] == '.'))
            continue;
        if (clen == 2 && start[0] == '.' && start[1] == '.') {
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--; /* the '/' before the dropped component */
            continue;
        }
        if (n + 1 + clen >= len) /* cannot happen: the result is never longer than in */
            break;
        out[n++] = '/';
        memcpy(out + n, start, clen);
        n += clen;
    }
    if (n == 0)
        out[n++] = '/';
    out[n] = '\0';
}

/* Is normalised path equal to or below normalised root? */
static bool cfg_path_under(const char *path, const char *root)
{
    size_t rl = strlen(root);

    if (strcmp(root, "/") == 0)
        return true;
    return strncmp(path, root, rl) == 0 && (path[rl] == '\0' || path[rl] == '/');
}

/* A value placed in the struct by code rather than by cfg_apply still has to respect bounds. */
static pdcbb_err_t cfg_check_stored(const pdcbb_config_t *c, const pdcbb_config_key_t *k, char *err,
                                    size_t errlen)
{
    const void *f = cfg_field_const(c, k);
    char why[PATH_MAX + 128], a[32], b[32];

    switch (k->type) {
    case PDCBB_CFG_SIZE: {
        uint64_t v = *(const uint64_t *)f;
        if (v < k->umin || v > k->umax) {
            pdcbb_errf(err, errlen, "key '%s': %s is out of range (%s to %s)", k->name,
                     pdcbb_format_size(v, why, sizeof(why)),
                     pdcbb_format_size(k->umin, a, sizeof(a)),
                     pdcbb_format_size(k->umax, b, sizeof(b)));
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    }
    case PDCBB_CFG_UINT: {
        unsigned v = *(const unsigned *)f;
        if (v < k->umin || v > k->umax) {
            pdcbb_errf(err, errlen, "key '%s': %u is out of range (%llu to %llu)", k->name, v,
                     (unsigned long long)k->umin, (unsigned long long)k->umax);
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    }
    case PDCBB_CFG_SECONDS: {
        double v = *(const double *)f;
        if (!(v >= k->dmin && v <= k->dmax)) { /* also refuses NaN */
            cfg_format_seconds(k->dmin, a, sizeof(a));
            cfg_format_seconds(k->dmax, b, sizeof(b));
            pdcbb_errf(err, errlen, "key '%s': %g is out of range (%s to %s seconds)", k->name,
                     v, a, b);
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    }
    case PDCBB_CFG_STRING:
    case PDCBB_CFG_PATH: {
        const char *s = f;
        if (memchr(s, '\0', k->size) == NULL) {
            pdcbb_errf(err, errlen, "key '%s': value is not terminated", k->name);
            return PDCBB_ERR_CONFIG;
        }
        if (!cfg_text_ok(k, s, k->size, k->type == PDCBB_CFG_PATH, why, sizeof(why))) {
            pdcbb_errf(err, errlen, "key '%s': %s", k->name, why);
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    }
    case PDCBB_CFG_PATH_LIST:
        if (c->n_drain_roots < 0 || c->n_drain_roots > PDCBB_CONFIG_LIST_MAX) {
            pdcbb_errf(err, errlen, "key '%s': bad number of entries %d", k->name,
                     c->n_drain_roots);
            return PDCBB_ERR_CONFIG;
        }
        for (int i = 0; i < c->n_drain_roots; i++) {
            const char *s = c->drain_roots[i];
            if (memchr(s, '\0', PATH_MAX) == NULL || s[0] == '\0' ||
                !cfg_text_ok(k, s, PATH_MAX, true, why, sizeof(why))) {
                pdcbb_errf(err, errlen, "key '%s': entry %d: %s", k->name, i + 1,
                         s[0] == '\0' ? "empty" : why);
                return PDCBB_ERR_CONFIG;
            }
        }
        return PDCBB_OK;
    case PDCBB_CFG_PLACEMENT:
        if ((int)*(const pdcbb_placement_t *)f < PDCBB_PLACE_OBJ_STATIC ||
            *(const pdcbb_placement_t *)f > PDCBB_PLACE_REGION_LOCAL) {
            pdcbb_errf(err, errlen, "key '%s': bad placement %d", k->name,
                     (int)*(const pdcbb_placement_t *)f);
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    case PDCBB_CFG_LOG_LEVEL: {
        int l = *(const int *)f;
        if (l < PDCBB_LOG_NONE || l > PDCBB_LOG_DEBUG) {
            pdcbb_errf(err, errlen, "key '%s': bad log level %d", k->name, l);
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    }
    }
    return PDCBB_OK;
}

/* drain, stage_in or stage_in_files: absolute, and under a drain root when there are any. */
static pdcbb_err_t cfg_check_under_roots(const pdcbb_config_t *c, const char *key,
                                         const char *path, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    char *norm = NULL, *root = NULL, *list = NULL;
    size_t n = 0, cap = 1024;

    if (path[0] == '\0')
        goto done;
    if (path[0] != '/') {
        pdcbb_errf(err, errlen, "key '%s': path '%s' must be absolute (start with '/')", key, path);
        rc = PDCBB_ERR_CONFIG;
        goto done;
    }
    if (c->n_drain_roots <= 0)
        goto done;
    norm = malloc(PATH_MAX);
    root = malloc(PATH_MAX);
    list = malloc(cap);
    if (norm == NULL || root == NULL || list == NULL) {
        pdcbb_errf(err, errlen, "key '%s': out of memory", key);
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    cfg_path_normalise(path, norm, PATH_MAX);
    list[0] = '\0';
    for (int i = 0; i < c->n_drain_roots; i++) {
        cfg_path_normalise(c->drain_roots[i], root, PATH_MAX);
        if (cfg_path_under(norm, root))
            goto done;
        if (n < cap)
            n += (size_t)snprintf(list + n, cap - n, "%s%s", i ? ", " : "", c->drain_roots[i]);
    }
    if (strcmp(norm, path) != 0)
        pdcbb_errf(err, errlen, "key '%s': '%s' (that is, %s) is not under an allowed drain root "
                 "(%s)", key, path, norm, list);
    else
        pdcbb_errf(err, errlen, "key '%s': '%s' is not under an allowed drain root (%s)", key,
                 path, list);
    rc = PDCBB_ERR_CONFIG;
done:
    free(list);
    free(root);
    free(norm);
    return rc;
}

pdcbb_err_t pdcbb_config_validate(const pdcbb_config_t *c, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    char a[32], b[32];

    if (c == NULL) {
        pdcbb_errf(err, errlen, "pdcbb_config_validate: no config");
        rc = PDCBB_ERR_INVAL;
        goto done;
    }
    for (size_t i = 0; i < cfg_nkeys; i++) {
        rc = cfg_check_stored(c, &cfg_keys[i], err, errlen);
        if (rc != PDCBB_OK)
            goto done;
    }
    if (c->max_capacity != 0 && c->capacity > c->max_capacity) {
        pdcbb_errf(err, errlen, "key 'capacity': %s is larger than the site's max_capacity %s",
                 pdcbb_format_size(c->capacity, a, sizeof(a)),
                 pdcbb_format_size(c->max_capacity, b, sizeof(b)));
        rc = PDCBB_ERR_CONFIG;
        goto done;
    }
    rc = cfg_check_under_roots(c, "drain", c->drain, err, errlen);
    if (rc != PDCBB_OK)
        goto done;
    rc = cfg_check_under_roots(c, "stage_in", c->stage_in, err, errlen);
    if (rc != PDCBB_OK)
        goto done;
    rc = cfg_check_under_roots(c, "stage_in_files", c->stage_in_files, err, errlen);
    if (rc != PDCBB_OK)
        goto done;
    if (c->stage_in_files[0] != '\0' && strcmp(c->mount, "yes") != 0) {
        pdcbb_errf(err, errlen,
                   "key 'stage_in_files': the files are copied into the job's filesystem: add "
                   "mount=yes");
        rc = PDCBB_ERR_CONFIG;
    }
done:
    return rc;
}
