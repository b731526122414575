/*
 * drain_ns_load.c - the mount's tree as the ranks drained it (pdcbb_drain.h:
 * pdcbb_drain_ns_load; written by drain_ns_dump.c, docs/DRAIN-FORMAT.md "Files of the mount"),
 * read by the drain's files/ builder (drain_files.c) and by stage-in (bbd/bbd_stage_in_ns.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drain_internal.h"
#include "pdcbb_crc32c.h"
#include "pdcbb_ns.h"
#include "pdcbb_proto.h"

/* Decode hex (or "-" for empty) into a NUL-terminated malloc'ed string; NULL if bad. */
static char *hex_get(const char *h)
{
    size_t n = strlen(h);
    if (strcmp(h, "-") == 0)
        return strdup("");
    if (n % 2)
        return NULL;
    char *out = malloc(n / 2 + 1);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1) {
            free(out);
            return NULL;
        }
        out[i] = (char)v;
    }
    out[n / 2] = '\0';
    if (strlen(out) != n / 2) { /* a NUL inside */
        free(out);
        return NULL;
    }
    return out;
}

/* Read one rank's ns file into s; a missing file is an empty rank. */
static pdcbb_err_t ns_load_rank(const char *path, pdcbb_drain_ns_t *s, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return errno == ENOENT ? PDCBB_OK : pdcbb_err_from_errno(errno);
    char *all = NULL;
    size_t alen = 0;
    FILE *m = open_memstream(&all, &alen);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int crc_ok = 0, first = 1, bad = 0;
    while (!bad && (n = getline(&line, &cap, f)) > 0) {
        if (first) {
            bad = strcmp(line, PDCBB_DRAIN_NS_MAGIC) != 0;
            first = 0;
            fputs(line, m);
            continue;
        }
        unsigned crc;
        if (sscanf(line, "crc %8x", &crc) == 1) {
            fflush(m);
            crc_ok = crc == pdcbb_crc32c(0, all, alen);
            break;
        }
        fputs(line, m);
        if (s->n == s->cap) {
            size_t nc = s->cap ? 2 * s->cap : 256;
            pdcbb_drain_ns_ent_t *g = realloc(s->e, nc * sizeof(*g));
            if (g == NULL) {
                bad = 1;
                break;
            }
            s->e = g;
            s->cap = nc;
        }
        pdcbb_drain_ns_ent_t *e = &s->e[s->n];
        memset(e, 0, sizeof(*e));
        char name[2 * PDCBB_NS_NAME_MAX + 2], target[2 * PDCBB_NS_TARGET_MAX + 2];
        if (strlen(line) > sizeof(target) + sizeof(name) + 200 ||
            sscanf(line,
                   "%" SCNx64 " %" SCNx64 " %u %o %u %u %" SCNu64 " %" SCNu64 " %" SCNu64
                   " %511s %8191s",
                   &e->parent, &e->ino, &e->kind, &e->mode, &e->uid, &e->gid, &e->size,
                   &e->mtime_ns, &e->ctime_ns, name, target) != 11 ||
            (e->name = hex_get(name)) == NULL || (e->target = hex_get(target)) == NULL ||
            pdcbb_ns_name_check(e->name) != PDCBB_OK ||
            (e->kind != PDCBB_NS_FILE && e->kind != PDCBB_NS_DIR && e->kind != PDCBB_NS_SYMLINK)) {
            free(e->name);
            free(e->target);
            bad = 1;
            break;
        }
        e->mode &= 07777;
        s->n++;
    }
    free(line);
    fclose(m);
    free(all);
    fclose(f);
    if (bad || !crc_ok) {
        drain_errf(err, errlen, "%s is damaged (%s)", path,
                   bad ? "a line does not parse" : "its CRC-32C does not match or is missing");
        return PDCBB_ERR_CORRUPT;
    }
    return PDCBB_OK;
}

void pdcbb_drain_ns_free(pdcbb_drain_ns_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->e[i].name);
        free(s->e[i].target);
        free(s->e[i].path);
    }
    free(s->e);
    memset(s, 0, sizeof(*s));
}

pdcbb_err_t pdcbb_drain_ns_load(const char *drain_dir, uint32_t nservers, pdcbb_drain_ns_t *ns,
                                char *err, size_t errlen)
{
    char path[PATH_MAX];
    pdcbb_err_t rc = PDCBB_OK;
    for (uint32_t r = 0; r < nservers && rc == PDCBB_OK; r++) {
        if (snprintf(path, sizeof(path), "%s/%s/rank-%05u.ns", drain_dir, PDCBB_DRAIN_NS_DIR, r) >=
            (int)sizeof(path)) {
            drain_errf(err, errlen, "%s: path too long", drain_dir);
            return PDCBB_ERR_TOO_BIG;
        }
        rc = ns_load_rank(path, ns, err, errlen);
    }
    return rc;
}
