/*
 * drain_open.c - drain directories: resolving a directory to a job's drain, opening it
 * (pdcbb_drain_open: the merged manifest of a complete drain, or the per-rank parts of an
 * unfinished one, loaded and merged: what is intact, what is not named in the model) and
 * finishing a drain once every rank has its part (pdcbb_drain_finish: manifest.yaml, then the
 * COMPLETE marker). Both run the orphan sweep (drain_sweep_deleted) once every rank is in.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drain_internal.h"
#include "pdcbb_drain.h"

static bool drain_exists(const char *dir, const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static int drain_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "rank-RRRRR.yaml" -> R, else -1. */
static long drain_part_rank(const char *name)
{
    if (strncmp(name, "rank-", 5) != 0 || name[5] < '0' || name[5] > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long r = strtoul(name + 5, &end, 10);
    if (errno != 0 || strcmp(end, ".yaml") != 0 || r >= DRAIN_NSERVERS_MAX)
        return -1;
    return (long)r;
}

/* The part files of drain_dir, sorted (malloc'ed names; free with drain_names_free). */
static pdcbb_err_t drain_list_parts(const char *drain_dir, char ***names, size_t *n, char *err,
                                    size_t errlen)
{
    char p[PATH_MAX];
    size_t cap = 0;
    *names = NULL;
    *n = 0;
    snprintf(p, sizeof(p), "%s/%s", drain_dir, PDCBB_DRAIN_PARTS_DIR);
    DIR *d = opendir(p);
    if (d == NULL) {
        if (errno == ENOENT)
            return PDCBB_OK;
        drain_errf(err, errlen, "%s: cannot read: %s", p, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (drain_part_rank(de->d_name) < 0)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **v = realloc(*names, cap * sizeof(*v));
            if (v == NULL)
                goto nomem;
            *names = v;
        }
        if (((*names)[*n] = strdup(de->d_name)) == NULL)
            goto nomem;
        (*n)++;
    }
    closedir(d);
    if (*n > 1)
        qsort(*names, *n, sizeof(char *), drain_name_cmp);
    return PDCBB_OK;
nomem:
    closedir(d);
    drain_errf(err, errlen, "%s: out of memory", p);
    return PDCBB_ERR_NOMEM;
}

static void drain_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/*
 * Load every part of drain_dir and merge them into *out (sorted, swept, checked). partial: a
 * part that cannot be read is left out and noted in (*out)->skipped (a reader reads what is
 * intact); else it is an error (the finish of a drain writes only a whole manifest).
 */
static pdcbb_err_t drain_load_parts(const char *drain_dir, char **names, size_t n, int partial,
                                    pdcbb_drain_t **out, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    pdcbb_drain_t *all = pdcbb_drain_new(), *part = NULL;
    char path[PATH_MAX], perr[PDCBB_DRAIN_ERR_LEN];
    int first = 1;

    if (all == NULL) {
        drain_errf(err, errlen, "%s: out of memory", drain_dir);
        return PDCBB_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        long r = drain_part_rank(names[i]);
        snprintf(path, sizeof(path), "%s/%s/%s", drain_dir, PDCBB_DRAIN_PARTS_DIR, names[i]);
        perr[0] = '\0';
        rc = drain_load_manifest_part(path, &part, perr, sizeof(perr));
        if (rc == PDCBB_OK && (part->nranks != 1 || part->ranks[0].rank != (uint32_t)r)) {
            drain_errf(perr, sizeof(perr), "%s: a part must describe exactly its rank %ld", path,
                       r);
            rc = PDCBB_ERR_CONFIG;
        }
        if (rc == PDCBB_OK && !first &&
            (part->job_id != all->job_id || part->nservers != all->nservers)) {
            drain_errf(perr, sizeof(perr),
                       "%s: job %" PRIu64 " with %" PRIu32 " ranks, but the other parts say "
                       "job %" PRIu64 " with %" PRIu32 " ranks",
                       path, part->job_id, part->nservers, all->job_id, all->nservers);
            rc = PDCBB_ERR_CONFIG;
        }
        if (rc == PDCBB_OK && (rc = pdcbb_drain_merge(all, part)) != PDCBB_OK)
            drain_errf(perr, sizeof(perr), "%s: %s", path,
                       rc == PDCBB_ERR_INVAL ? "a part of another job (its job id, daemon count "
                                               "or instance differs from the other parts)"
                                             : pdcbb_strerror(rc));
        pdcbb_drain_free(part);
        part = NULL;
        if (rc == PDCBB_ERR_NOMEM || (rc != PDCBB_OK && !partial)) {
            drain_errf(err, errlen, "%s", perr[0] ? perr : pdcbb_strerror(rc));
            goto done;
        }
        if (rc != PDCBB_OK) { /* partial: read what is intact, say what was left out */
            if ((rc = drain_skipped_add(all, perr[0] ? perr : pdcbb_strerror(rc))) != PDCBB_OK)
                goto done;
            continue;
        }
        first = 0;
    }
    if (first) {
        drain_errf(err, errlen, "%s: no part could be read (the first: %s)", drain_dir,
                   all->nskipped ? all->skipped[0] : "none");
        rc = PDCBB_ERR_CONFIG;
        goto done;
    }
    pdcbb_drain_sort(all);
    if ((rc = drain_sweep_deleted(all)) != PDCBB_OK) {
        drain_errf(err, errlen, "%s: out of memory", drain_dir);
        goto done;
    }
    rc = drain_check(all, drain_dir, NULL, all->nranks == all->nservers, err, errlen);
done:
    pdcbb_drain_free(part);
    if (rc != PDCBB_OK) {
        pdcbb_drain_free(all);
        return rc;
    }
    *out = all;
    return PDCBB_OK;
}

/* Resolve dir to a job's drain directory (itself, or its only pdcbb.* subdirectory). */
static pdcbb_err_t drain_resolve(const char *dir, char *out, size_t outlen, char *err,
                                 size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        int e = errno;
        drain_errf(err, errlen, "%s: %s", dir, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    if (!S_ISDIR(st.st_mode)) {
        drain_errf(err, errlen, "%s: not a directory", dir);
        return PDCBB_ERR_INVAL;
    }
    if (drain_exists(dir, PDCBB_DRAIN_MANIFEST) || drain_exists(dir, PDCBB_DRAIN_COMPLETE) ||
        drain_exists(dir, PDCBB_DRAIN_PARTS_DIR)) {
        snprintf(out, outlen, "%s", dir);
        return PDCBB_OK;
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        int e = errno;
        drain_errf(err, errlen, "%s: cannot read: %s", dir, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    char found[8][256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char p[PATH_MAX];
        if (strncmp(de->d_name, "pdcbb.", 6) != 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (n < 8)
            snprintf(found[n], sizeof(found[n]), "%s", de->d_name);
        n++;
    }
    closedir(d);
    if (n == 0) {
        drain_errf(err, errlen,
                   "%s: not a drain directory (no %s, %s or %s/, and no pdcbb.* directory "
                   "inside)",
                   dir, PDCBB_DRAIN_MANIFEST, PDCBB_DRAIN_COMPLETE, PDCBB_DRAIN_PARTS_DIR);
        return PDCBB_ERR_NOT_FOUND;
    }
    if (n > 1) {
        char list[1024] = "";
        size_t len = 0;
        for (size_t i = 0; i < n && i < 8; i++)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
                                    found[i]);
        drain_errf(err, errlen, "%s holds %zu drained jobs (%s%s): name one of them", dir, n,
                   list, n > 8 ? ", ..." : "");
        return PDCBB_ERR_INVAL;
    }
    if (snprintf(out, outlen, "%s/%s", dir, found[0]) >= (int)outlen) {
        drain_errf(err, errlen, "%s: path too long", dir);
        return PDCBB_ERR_INVAL;
    }
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_open(const char *dir, int flags, pdcbb_drain_t **out, char *err,
                             size_t errlen)
{
    char ddir[PATH_MAX], path[PATH_MAX + 32];
    pdcbb_drain_t *m = NULL;
    char **names = NULL;
    size_t nnames = 0;
    pdcbb_err_t rc;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (dir == NULL || out == NULL) {
        drain_errf(err, errlen, "pdcbb_drain_open: no directory");
        return PDCBB_ERR_INVAL;
    }
    if ((rc = drain_resolve(dir, ddir, sizeof(ddir), err, errlen)) != PDCBB_OK)
        return rc;
    if (drain_exists(ddir, PDCBB_DRAIN_COMPLETE)) {
        snprintf(path, sizeof(path), "%s/%s", ddir, PDCBB_DRAIN_MANIFEST);
        if (!drain_exists(ddir, PDCBB_DRAIN_MANIFEST)) {
            drain_errf(err, errlen, "%s: missing, although %s/%s exists", path, ddir,
                       PDCBB_DRAIN_COMPLETE);
            return PDCBB_ERR_IO;
        }
        if ((rc = pdcbb_drain_load_manifest(path, &m, err, errlen)) != PDCBB_OK)
            return rc;
        if (m->nranks != m->nservers) {
            drain_errf(err, errlen, "%s: lists %" PRIu32 " of %" PRIu32 " ranks", path,
                       m->nranks, m->nservers);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        pdcbb_drain_sort(m);
        m->complete = 1;
    } else {
        if ((rc = drain_list_parts(ddir, &names, &nnames, err, errlen)) != PDCBB_OK)
            goto done;
        if (!(flags & PDCBB_DRAIN_OPEN_PARTIAL)) {
            if (nnames == 0) {
                drain_errf(err, errlen,
                           "%s: incomplete drain: no rank drained yet (finish it with pdcbb "
                           "drain)",
                           ddir);
                rc = PDCBB_ERR_NOT_FOUND;
                goto done;
            }
            snprintf(path, sizeof(path), "%s/%s/%s", ddir, PDCBB_DRAIN_PARTS_DIR, names[0]);
            if ((rc = pdcbb_drain_load_manifest(path, &m, err, errlen)) != PDCBB_OK)
                goto done;
            drain_errf(err, errlen,
                       "incomplete drain: %zu of %" PRIu32 " ranks drained (finish it with "
                       "pdcbb drain)",
                       nnames, m->nservers);
            pdcbb_drain_free(m);
            m = NULL;
            rc = PDCBB_ERR_NOT_FOUND;
            goto done;
        }
        if (nnames == 0) {
            drain_errf(err, errlen, "%s: no rank drained yet (no %s/rank-*.yaml)", ddir,
                       PDCBB_DRAIN_PARTS_DIR);
            rc = PDCBB_ERR_NOT_FOUND;
            goto done;
        }
        if ((rc = drain_load_parts(ddir, names, nnames, 1, &m, err, errlen)) != PDCBB_OK)
            goto done;
        m->complete = 0;
    }
    m->dir = strdup(ddir);
    if (m->dir == NULL) {
        drain_errf(err, errlen, "%s: out of memory", ddir);
        rc = PDCBB_ERR_NOMEM;
    }
done:
    drain_names_free(names, nnames);
    if (rc != PDCBB_OK) {
        pdcbb_drain_free(m);
        return rc;
    }
    *out = m;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_finish(const char *drain_dir, uint32_t nservers, int *complete,
                               uint64_t *dropped_extents, uint64_t *dropped_bytes, char *err,
                               size_t errlen)
{
    char path[PATH_MAX + 32], line[256], when[64];
    char **names = NULL;
    size_t nnames = 0;
    pdcbb_drain_t *m = NULL;
    pdcbb_err_t rc;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (drain_dir == NULL || complete == NULL || nservers == 0) {
        drain_errf(err, errlen, "pdcbb_drain_finish: no directory or no ranks");
        return PDCBB_ERR_INVAL;
    }
    *complete = 0;
    if (dropped_extents != NULL)
        *dropped_extents = 0;
    if (dropped_bytes != NULL)
        *dropped_bytes = 0;
    if (drain_exists(drain_dir, PDCBB_DRAIN_COMPLETE)) {
        *complete = 1;
        return PDCBB_OK;
    }
    for (uint32_t r = 0; r < nservers; r++) {
        snprintf(path, sizeof(path), "%s/rank-%05" PRIu32 ".yaml", PDCBB_DRAIN_PARTS_DIR, r);
        if (!drain_exists(drain_dir, path))
            return PDCBB_OK; /* another node still drains */
    }
    if ((rc = drain_list_parts(drain_dir, &names, &nnames, err, errlen)) != PDCBB_OK)
        goto done;
    if ((rc = drain_load_parts(drain_dir, names, nnames, 0, &m, err, errlen)) != PDCBB_OK)
        goto done;
    if (m->nservers != nservers || m->nranks != nservers) {
        drain_errf(err, errlen,
                   "%s: the parts describe %" PRIu32 " of %" PRIu32 " ranks, expected %" PRIu32,
                   drain_dir, m->nranks, m->nservers, nservers);
        rc = PDCBB_ERR_CONFIG;
        goto done;
    }
    /* the mount's tree as files and their list (drain_files.c), before the manifest that names
     * the list and COMPLETE that says the drain is whole */
    uint64_t nfiles = 0;
    if ((rc = pdcbb_drain_files_build(drain_dir, nservers, &m->files, &nfiles, err, errlen)) !=
        PDCBB_OK)
        goto done;
    snprintf(path, sizeof(path), "%s/%s", drain_dir, PDCBB_DRAIN_MANIFEST);
    if ((rc = pdcbb_drain_write_manifest(m, path, err, errlen)) != PDCBB_OK)
        goto done;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    int len = snprintf(line, sizeof(line), "%s %d job %" PRIu64 " ranks %" PRIu32 " %s\n",
                       PDCBB_DRAIN_FORMAT, PDCBB_DRAIN_VERSION, m->job_id, m->nservers, when);
    snprintf(path, sizeof(path), "%s/%s", drain_dir, PDCBB_DRAIN_COMPLETE);
    if ((rc = drain_write_atomic(path, line, (size_t)len, err, errlen)) != PDCBB_OK)
        goto done;
    *complete = 1;
    pdcbb_drain_dropped_totals(m, dropped_extents, dropped_bytes);
done:
    drain_names_free(names, nnames);
    pdcbb_drain_free(m);
    return rc;
}
