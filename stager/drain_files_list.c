/*
 * drain_files_list.c - the list of a drain's files/ (pdcbb_drain_files.h; docs/DRAIN-FORMAT.md
 * "Files of the mount"): formatting and strict parsing of DRAIN/files.manifest, loading it
 * against the manifest's files key, opening an entry of files/ without following links,
 * checking a file's bytes against its CRC-32C, and pdcbb verify's walk of files/ against the
 * list (drain_files.c builds files/ and writes the list).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drain_internal.h"
#include "pdcbb_crc32c.h"
#include "pdcbb_drain_files.h"

#define FL_READ_CHUNK ((size_t)8 << 20)
#define FL_LIST_MAX   ((uint64_t)1 << 34) /* a list larger than 16 GiB is not one of ours */

/* ---------------------------------------------------------------------------------------- */
/* The list in memory                                                                         */

static void fl_entry_clear(pdcbb_drain_file_t *e)
{
    free(e->path);
    free(e->target);
}

void pdcbb_drain_files_free(pdcbb_drain_files_t *f)
{
    if (f == NULL)
        return;
    for (uint64_t i = 0; i < f->n; i++)
        fl_entry_clear(&f->e[i]);
    free(f->e);
    free(f);
}

pdcbb_err_t pdcbb_drain_files_add(pdcbb_drain_files_t *f, const pdcbb_drain_file_t *e)
{
    if (drain_grow((void **)&f->e, f->n, &f->cap, sizeof(*f->e)) != 0)
        return PDCBB_ERR_NOMEM;
    pdcbb_drain_file_t *x = &f->e[f->n];
    *x = *e;
    x->path = strdup(e->path);
    x->target = e->target != NULL ? strdup(e->target) : NULL;
    if (x->path == NULL || (e->target != NULL && x->target == NULL)) {
        fl_entry_clear(x);
        return PDCBB_ERR_NOMEM;
    }
    x->name = strrchr(x->path, '/') ? strrchr(x->path, '/') + 1 : x->path;
    x->parent = -1;
    f->n++;
    if (x->type == PDCBB_DRAIN_FILE_REG) {
        f->nfiles++;
        f->bytes += x->size;
    }
    return PDCBB_OK;
}

static int fl_cmp(const void *a, const void *b)
{
    return strcmp(((const pdcbb_drain_file_t *)a)->path, ((const pdcbb_drain_file_t *)b)->path);
}

/* Index of path among the first n entries (sorted), or -1. */
static int64_t fl_find_n(const pdcbb_drain_files_t *f, uint64_t n, const char *path, size_t len)
{
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const char *p = f->e[mid].path;
        int c = strncmp(p, path, len);
        if (c == 0)
            c = p[len] != '\0'; /* p is longer: after path */
        if (c == 0)
            return (int64_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int64_t pdcbb_drain_files_find(const pdcbb_drain_files_t *f, const char *path)
{
    return f != NULL ? fl_find_n(f, f->n, path, strlen(path)) : -1;
}

/* Set every entry's parent (entries sorted); -1 with *bad the first entry whose directory is
 * not listed before it as a directory, or that repeats a path. */
static int fl_link(pdcbb_drain_files_t *f, uint64_t *bad)
{
    for (uint64_t i = 0; i < f->n; i++) {
        pdcbb_drain_file_t *e = &f->e[i];
        const char *slash = strrchr(e->path, '/');
        e->name = slash ? slash + 1 : e->path;
        e->parent = -1;
        if (i > 0 && strcmp(f->e[i - 1].path, e->path) >= 0) {
            *bad = i;
            return -1;
        }
        if (slash == NULL)
            continue;
        int64_t p = fl_find_n(f, i, e->path, (size_t)(slash - e->path));
        if (p < 0 || f->e[p].type != PDCBB_DRAIN_FILE_DIR) {
            *bad = i;
            return -1;
        }
        e->parent = p;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Text                                                                                       */

static void fl_hex_put(FILE *out, const char *s)
{
    if (s == NULL || *s == '\0')
        fputc('-', out);
    for (; s != NULL && *s; s++)
        fprintf(out, "%02x", (unsigned char)*s);
}

pdcbb_err_t pdcbb_drain_files_format(pdcbb_drain_files_t *f, char **text, size_t *len)
{
    uint64_t bad;
    if (f->n > 0)
        qsort(f->e, f->n, sizeof(*f->e), fl_cmp);
    if (fl_link(f, &bad) != 0)
        return PDCBB_ERR_INVAL;
    char *buf = NULL;
    size_t blen = 0;
    FILE *out = open_memstream(&buf, &blen);
    if (out == NULL)
        return PDCBB_ERR_NOMEM;
    fputs(PDCBB_DRAIN_FILES_MAGIC, out);
    for (uint64_t i = 0; i < f->n; i++) {
        const pdcbb_drain_file_t *e = &f->e[i];
        fprintf(out, "%c %04o %" PRIu64 " %" PRIu64 " ", e->type, e->mode & 07777, e->size,
                e->mtime_ns);
        if (e->type == PDCBB_DRAIN_FILE_REG)
            fprintf(out, "%08" PRIx32 " %s ", e->crc32c, e->damaged ? "damaged" : "-");
        else
            fputs("- - ", out);
        fl_hex_put(out, e->path);
        fputc(' ', out);
        fl_hex_put(out, e->type == PDCBB_DRAIN_FILE_LINK ? e->target : NULL);
        fputc('\n', out);
    }
    if (fclose(out) != 0 || buf == NULL) {
        free(buf);
        return PDCBB_ERR_NOMEM;
    }
    char tail[32];
    int tl = snprintf(tail, sizeof(tail), "crc %08" PRIx32 "\n", pdcbb_crc32c(0, buf, blen));
    char *all = realloc(buf, blen + (size_t)tl + 1);
    if (all == NULL) {
        free(buf);
        return PDCBB_ERR_NOMEM;
    }
    memcpy(all + blen, tail, (size_t)tl + 1);
    *text = all;
    *len = blen + (size_t)tl;
    return PDCBB_OK;
}

/* Decode hex (or "-": empty) of n characters into a malloc'ed string; NULL if bad or it holds a
 * NUL. */
static char *fl_hex_get(const char *h, size_t n)
{
    if (n == 1 && h[0] == '-')
        return strdup("");
    if (n == 0 || n % 2 != 0)
        return NULL;
    char *out = malloc(n / 2 + 1);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n / 2; i++) {
        int v = 0;
        for (int k = 0; k < 2; k++) {
            char c = h[2 * i + (size_t)k];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0) {
                free(out);
                return NULL;
            }
            v = v * 16 + d;
        }
        if (v == 0) {
            free(out);
            return NULL;
        }
        out[i] = (char)v;
    }
    out[n / 2] = '\0';
    return out;
}

/* A path under files/: components neither empty, "." nor "..", each at most NAME_MAX bytes,
 * the whole shorter than PATH_MAX. */
static int fl_path_ok(const char *p)
{
    size_t len = strlen(p);
    if (len == 0 || len >= PATH_MAX)
        return 0;
    for (const char *c = p;;) {
        const char *slash = strchr(c, '/');
        size_t l = slash ? (size_t)(slash - c) : strlen(c);
        if (l == 0 || l > NAME_MAX || (l == 1 && c[0] == '.') ||
            (l == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        if (slash == NULL)
            return 1;
        c = slash + 1;
    }
}

/* A decimal number of at most 20 digits into *v (bounded by max); 0 on success. */
static int fl_u64(const char *s, size_t n, uint64_t max, uint64_t *v)
{
    if (n == 0 || n > 20)
        return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || x > (UINT64_MAX - 9) / 10)
            return -1;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    if (x > max)
        return -1;
    *v = x;
    return 0;
}

/* Parse one entry line (without its newline) into e; NULL, or what is wrong. */
static const char *fl_parse_line(const char *line, size_t len, pdcbb_drain_file_t *e)
{
    const char *tok[8];
    size_t tl[8], nt = 0;
    memset(e, 0, sizeof(*e));
    for (size_t i = 0, start = 0; i <= len; i++) {
        if (i < len && line[i] != ' ')
            continue;
        if (nt == 8)
            return "more than 8 fields";
        tok[nt] = line + start;
        tl[nt++] = i - start;
        start = i + 1;
    }
    if (nt != 8)
        return "fewer than 8 fields";
    if (tl[0] != 1 || (tok[0][0] != PDCBB_DRAIN_FILE_REG && tok[0][0] != PDCBB_DRAIN_FILE_DIR &&
                       tok[0][0] != PDCBB_DRAIN_FILE_LINK))
        return "the type is not f, d or l";
    e->type = tok[0][0];
    uint64_t v = 0;
    if (tl[1] != 4)
        return "the mode is not 4 octal digits";
    for (size_t i = 0; i < 4; i++) {
        if (tok[1][i] < '0' || tok[1][i] > '7')
            return "the mode is not 4 octal digits";
        v = v * 8 + (uint64_t)(tok[1][i] - '0');
    }
    e->mode = (uint32_t)v;
    if (fl_u64(tok[2], tl[2], INT64_MAX, &e->size) != 0)
        return "bad size";
    if (fl_u64(tok[3], tl[3], UINT64_MAX, &e->mtime_ns) != 0)
        return "bad mtime";
    if (e->type == PDCBB_DRAIN_FILE_REG) {
        if (tl[4] != 8)
            return "a file's CRC-32C is not 8 hex digits";
        for (size_t i = 0; i < 8; i++) {
            char c = tok[4][i];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0)
                return "a file's CRC-32C is not 8 hex digits";
            e->crc32c = e->crc32c << 4 | (uint32_t)d;
        }
        if (tl[5] == 7 && memcmp(tok[5], "damaged", 7) == 0)
            e->damaged = 1;
        else if (tl[5] != 1 || tok[5][0] != '-')
            return "the sixth field is neither - nor damaged";
    } else if (tl[4] != 1 || tok[4][0] != '-' || tl[5] != 1 || tok[5][0] != '-') {
        return "a directory or link with a CRC-32C or a damaged mark";
    }
    if ((e->path = fl_hex_get(tok[6], tl[6])) == NULL || !fl_path_ok(e->path))
        return "the path is not hex of a relative path (no empty, . or .. component)";
    if ((e->target = fl_hex_get(tok[7], tl[7])) == NULL)
        return "the link target is not hex";
    if (e->type == PDCBB_DRAIN_FILE_LINK) {
        if (e->target[0] == '\0')
            return "a link without a target";
        if (e->size != strlen(e->target))
            return "a link's size is not its target's length";
    } else {
        if (e->target[0] != '\0')
            return "a link target on an entry that is not a link";
        free(e->target);
        e->target = NULL;
        if (e->type == PDCBB_DRAIN_FILE_DIR && e->size != 0)
            return "a directory with a size";
    }
    return NULL;
}

pdcbb_err_t pdcbb_drain_files_parse(const char *text, size_t len, const char *name,
                                    pdcbb_drain_files_t **out, char *err, size_t errlen)
{
    size_t ml = strlen(PDCBB_DRAIN_FILES_MAGIC);
    pdcbb_drain_files_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return PDCBB_ERR_NOMEM;
    const char *why = NULL;
    size_t lineno = 1, pos = ml;
    if (len < ml || memcmp(text, PDCBB_DRAIN_FILES_MAGIC, ml) != 0) {
        why = "it does not begin with the line 'pdcbb-files 1'";
        goto bad;
    }
    for (;;) {
        lineno++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        if (nl == NULL) {
            why = "it ends without its crc line";
            goto bad;
        }
        size_t ll = (size_t)(nl - (text + pos));
        if (ll >= 4 && memcmp(text + pos, "crc ", 4) == 0) {
            uint32_t want = 0;
            if (ll != 12 || (size_t)(nl + 1 - text) != len) {
                why = ll != 12 ? "a bad crc line" : "bytes after its crc line";
                goto bad;
            }
            for (size_t i = 4; i < 12; i++) {
                char c = text[pos + i];
                int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
                if (d < 0) {
                    why = "a bad crc line";
                    goto bad;
                }
                want = want << 4 | (uint32_t)d;
            }
            uint32_t have = pdcbb_crc32c(0, text, pos);
            if (have != want) {
                drain_errf(err, errlen,
                           "%s is damaged: its CRC-32C is 0x%08" PRIx32 ", its crc line says "
                           "0x%08" PRIx32,
                           name, have, want);
                pdcbb_drain_files_free(f);
                return PDCBB_ERR_CORRUPT;
            }
            break;
        }
        pdcbb_drain_file_t e = {0};
        why = fl_parse_line(text + pos, ll, &e);
        if (why == NULL && pdcbb_drain_files_add(f, &e) != PDCBB_OK)
            why = "out of memory";
        fl_entry_clear(&e);
        if (why != NULL)
            goto bad;
        pos += ll + 1;
    }
    uint64_t badi;
    if (fl_link(f, &badi) != 0) {
        lineno = (size_t)badi + 2;
        why = badi > 0 && strcmp(f->e[badi - 1].path, f->e[badi].path) >= 0
                  ? "entries out of order, or one listed twice"
                  : "its directory is not listed before it";
        goto bad;
    }
    *out = f;
    return PDCBB_OK;
bad:
    drain_errf(err, errlen, "%s:%zu: not a list of files: %s", name, lineno, why);
    pdcbb_drain_files_free(f);
    return strcmp(why, "out of memory") == 0 ? PDCBB_ERR_NOMEM : PDCBB_ERR_CORRUPT;
}

/* Read all of the regular file at path (not through a link): at most max bytes, else
 * PDCBB_ERR_CORRUPT; want_len (UINT64_MAX: any) is the size it must have. */
static pdcbb_err_t fl_read_all(const char *path, uint64_t want_len, const char *want_who,
                               char **text, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        drain_errf(err, errlen, "%s: cannot open: %s", path,
                   e == ELOOP ? "it is a symbolic link" : strerror(e));
        return e == ELOOP ? PDCBB_ERR_CORRUPT : pdcbb_err_from_errno(e);
    }
    struct stat st;
    pdcbb_err_t rc = PDCBB_OK;
    char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        drain_errf(err, errlen, "%s: not a regular file", path);
        rc = PDCBB_ERR_CORRUPT;
        goto done;
    }
    if ((want_len != UINT64_MAX && (uint64_t)st.st_size != want_len) ||
        (uint64_t)st.st_size > FL_LIST_MAX) {
        drain_errf(err, errlen, "%s is damaged: %jd bytes, %s %" PRIu64, path, (intmax_t)st.st_size,
                   want_who ? want_who : "at most",
                   want_len != UINT64_MAX ? want_len : FL_LIST_MAX);
        rc = PDCBB_ERR_CORRUPT;
        goto done;
    }
    size_t n = (size_t)st.st_size;
    if ((buf = malloc(n + 1)) == NULL) {
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    for (size_t got = 0; got < n;) {
        ssize_t r = pread(fd, buf + got, n - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            drain_errf(err, errlen, "%s: cannot read: %s", path,
                       r < 0 ? strerror(e) : "it is shorter than it was");
            rc = r < 0 ? pdcbb_err_from_errno(e) : PDCBB_ERR_CORRUPT;
            goto done;
        }
        got += (size_t)r;
    }
    *text = buf;
    *len = n;
    buf = NULL;
done:
    free(buf);
    close(fd);
    return rc;
}

pdcbb_err_t drain_files_list_read(const char *path, pdcbb_drain_files_t **out,
                                  pdcbb_drain_files_ref_t *ref, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    pdcbb_err_t rc = fl_read_all(path, UINT64_MAX, NULL, &text, &len, err, errlen);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = pdcbb_drain_files_parse(text, len, path, out, err, errlen)) == PDCBB_OK) {
        memset(ref, 0, sizeof(*ref));
        if ((ref->list = strdup(PDCBB_DRAIN_FILES_LIST)) == NULL) {
            pdcbb_drain_files_free(*out);
            *out = NULL;
            rc = PDCBB_ERR_NOMEM;
        } else {
            ref->entries = (*out)->n;
            ref->bytes = len;
            ref->crc32c = pdcbb_crc32c(0, text, len);
        }
    }
    free(text);
    return rc;
}

pdcbb_err_t pdcbb_drain_files_load(const pdcbb_drain_t *m, pdcbb_drain_files_t **out, char *err,
                                   size_t errlen)
{
    char path[PATH_MAX];
    if (m->files.list == NULL) {
        drain_errf(err, errlen, "%s has no files: %s", m->dir ? m->dir : "the drain",
                   m->complete ? "the job did not use the mount (--pdc mount=yes)"
                               : "they are listed when the drain completes");
        return PDCBB_ERR_NOT_FOUND;
    }
    if (snprintf(path, sizeof(path), "%s/%s", m->dir ? m->dir : ".", m->files.list) >=
        (int)sizeof(path)) {
        drain_errf(err, errlen, "%s/%s: path too long", m->dir, m->files.list);
        return PDCBB_ERR_INVAL;
    }
    char *text = NULL;
    size_t len = 0;
    pdcbb_err_t rc =
        fl_read_all(path, m->files.bytes, "the manifest says", &text, &len, err, errlen);
    if (rc == PDCBB_ERR_NOT_FOUND)
        rc = PDCBB_ERR_CORRUPT; /* listed in the manifest, so it must be there */
    if (rc != PDCBB_OK)
        return rc;
    uint32_t crc = pdcbb_crc32c(0, text, len);
    if (crc != m->files.crc32c) {
        drain_errf(err, errlen,
                   "%s is damaged: its CRC-32C is 0x%08" PRIx32 ", the manifest says 0x%08" PRIx32,
                   path, crc, m->files.crc32c);
        rc = PDCBB_ERR_CORRUPT;
    } else if ((rc = pdcbb_drain_files_parse(text, len, path, out, err, errlen)) == PDCBB_OK &&
               (*out)->n != m->files.entries) {
        drain_errf(err, errlen, "%s lists %" PRIu64 " entries, the manifest says %" PRIu64, path,
                   (*out)->n, m->files.entries);
        pdcbb_drain_files_free(*out);
        *out = NULL;
        rc = PDCBB_ERR_CORRUPT;
    }
    free(text);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* files/ on disk                                                                             */

int pdcbb_drain_files_open(int files_fd, const char *path, int flags)
{
    char *copy = strdup(path);
    if (copy == NULL) {
        errno = ENOMEM;
        return -1;
    }
    int dfd = files_fd, fd = -1, e = 0;
    for (char *p = copy;;) {
        char *slash = strchr(p, '/');
        if (slash == NULL) {
            fd = openat(dfd, p, flags | O_NOFOLLOW | O_CLOEXEC);
            e = errno;
            break;
        }
        *slash = '\0';
        int nfd = openat(dfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        e = errno;
        if (dfd != files_fd)
            close(dfd);
        if (nfd < 0) {
            dfd = files_fd;
            break;
        }
        dfd = nfd;
        p = slash + 1;
    }
    if (dfd != files_fd)
        close(dfd);
    free(copy);
    errno = e;
    return fd;
}

pdcbb_err_t pdcbb_drain_file_check(int fd, const pdcbb_drain_file_t *e, uint64_t *done, char *why,
                                   size_t whylen)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        drain_errf(why, whylen, "cannot check it: %s", strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    if (!S_ISREG(st.st_mode)) {
        drain_errf(why, whylen, "not a regular file");
        return PDCBB_ERR_CORRUPT;
    }
    if ((uint64_t)st.st_size != e->size) {
        drain_errf(why, whylen, "%jd bytes, the list says %" PRIu64, (intmax_t)st.st_size, e->size);
        return PDCBB_ERR_CORRUPT;
    }
    size_t cap = e->size < FL_READ_CHUNK ? (size_t)e->size + 1 : FL_READ_CHUNK;
    char *buf = malloc(cap);
    if (buf == NULL)
        return PDCBB_ERR_NOMEM;
    uint32_t crc = 0;
    uint64_t off = 0;
    pdcbb_err_t rc = PDCBB_OK;
    for (;;) {
        ssize_t r = pread(fd, buf, cap, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            drain_errf(why, whylen, "cannot read it: %s", strerror(errno));
            rc = pdcbb_err_from_errno(errno);
            break;
        }
        if (r == 0)
            break;
        crc = pdcbb_crc32c(crc, buf, (size_t)r);
        off += (uint64_t)r;
        if (done != NULL)
            *done += (uint64_t)r;
    }
    free(buf);
    if (rc != PDCBB_OK)
        return rc;
    if (off != e->size) { /* changed while it was read */
        drain_errf(why, whylen, "%" PRIu64 " bytes read, the list says %" PRIu64, off, e->size);
        return PDCBB_ERR_CORRUPT;
    }
    if (crc != e->crc32c) {
        drain_errf(why, whylen,
                   "contents differ: CRC-32C 0x%08" PRIx32 ", the list says 0x%08" PRIx32, crc,
                   e->crc32c);
        return PDCBB_ERR_CORRUPT;
    }
    return PDCBB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* pdcbb verify: files/ against the list                                                      */

typedef struct fl_verify {
    const pdcbb_drain_files_t *f;
    uint8_t *state; /* per entry: FL_UNSEEN, FL_SEEN (same type), FL_OTHER (another type) */
    pdcbb_drain_files_stats_t *st;
    pdcbb_drain_files_report_fn report;
    pdcbb_drain_progress_fn progress;
    void *arg;
    uint64_t done;
    char path[PATH_MAX + NAME_MAX + 2]; /* the entry being looked at, under files/ */
} fl_verify_t;

#define FL_UNSEEN 0
#define FL_SEEN   1
#define FL_OTHER  2

static void fl_report(fl_verify_t *v, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fl_report(fl_verify_t *v, const char *tag, const char *fmt, ...)
{
    char line[2 * PATH_MAX + 512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (v->report != NULL)
        v->report(tag, line, v->arg);
}

static const char *fl_kind(char type)
{
    return type == PDCBB_DRAIN_FILE_DIR    ? "a directory"
           : type == PDCBB_DRAIN_FILE_LINK ? "a symbolic link"
                                           : "a regular file";
}

static char fl_type_of(mode_t m)
{
    return S_ISDIR(m)   ? PDCBB_DRAIN_FILE_DIR
           : S_ISLNK(m) ? PDCBB_DRAIN_FILE_LINK
           : S_ISREG(m) ? PDCBB_DRAIN_FILE_REG
                        : '?';
}

static void fl_when(uint64_t sec, char *out, size_t len)
{
    time_t t = (time_t)sec;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(out, len, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
        snprintf(out, len, "%" PRIu64 " s", sec);
}

/* Append "; what" (or "what" first) to diffs. */
static void fl_diff(char *diffs, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fl_diff(char *diffs, size_t len, const char *fmt, ...)
{
    size_t o = strlen(diffs);
    if (o > 0 && o + 2 < len) {
        memcpy(diffs + o, "; ", 3);
        o += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(diffs + o, len - o, fmt, ap);
    va_end(ap);
}

/* Compare the entry name of directory dfd (lstat'ed as st) with list entry i. */
static void fl_compare(fl_verify_t *v, int dfd, const char *name, const struct stat *st, int64_t i)
{
    const pdcbb_drain_file_t *e = &v->f->e[i];
    char diffs[2 * PATH_MAX + 256] = "", a[64], b[64];
    if (e->type != PDCBB_DRAIN_FILE_LINK && (uint32_t)(st->st_mode & 07777) != e->mode)
        fl_diff(diffs, sizeof(diffs), "mode %04o, the list says %04o",
                (unsigned)(st->st_mode & 07777), (unsigned)e->mode);
    if ((uint64_t)st->st_mtim.tv_sec != e->mtime_ns / 1000000000u) {
        fl_when((uint64_t)st->st_mtim.tv_sec, a, sizeof(a));
        fl_when(e->mtime_ns / 1000000000u, b, sizeof(b));
        fl_diff(diffs, sizeof(diffs), "modified %s, the list says %s", a, b);
    }
    if (e->type == PDCBB_DRAIN_FILE_LINK) {
        char target[PATH_MAX + 1];
        ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);
        if (n >= 0)
            target[n] = '\0';
        if (n < 0)
            fl_diff(diffs, sizeof(diffs), "cannot read the link: %s", strerror(errno));
        else if (strcmp(target, e->target) != 0)
            fl_diff(diffs, sizeof(diffs), "a link to '%s', the list says '%s'", target, e->target);
    } else if (e->type == PDCBB_DRAIN_FILE_REG) {
        char why[256] = "";
        int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            fl_diff(diffs, sizeof(diffs), "cannot be read: %s", strerror(errno));
        } else {
            v->st->files++;
            v->st->bytes += e->size;
            if (pdcbb_drain_file_check(fd, e, &v->done, why, sizeof(why)) != PDCBB_OK)
                fl_diff(diffs, sizeof(diffs), "%s", why);
            close(fd);
            if (v->progress != NULL)
                v->progress(
                    &(pdcbb_drain_progress_t){.done_bytes = v->done, .total_bytes = v->f->bytes},
                    v->arg);
        }
        if (e->damaged) {
            v->st->damaged++;
            fl_report(v, "DAMAGED",
                      "files/%s: built from damaged extents of its object (those bytes are not "
                      "the job's; the DAMAGED extents are listed above)",
                      e->path);
        }
    }
    if (diffs[0] != '\0') {
        v->st->changed++;
        fl_report(v, "CHANGED", "files/%s: %s", e->path, diffs);
    }
}

static int fl_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Walk directory dfd (its path under files/ is v->path, plen bytes; "" for files/): every
 * entry compared with the list, listed directories walked in turn. Takes dfd. */
static pdcbb_err_t fl_walk(fl_verify_t *v, int dfd, size_t plen, char *err, size_t errlen)
{
    DIR *d = fdopendir(dfd);
    if (d == NULL) {
        int e = errno;
        close(dfd);
        drain_errf(err, errlen, "cannot read files/%s: %s", v->path, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    char **names = NULL;
    uint64_t n = 0, cap = 0;
    pdcbb_err_t rc = PDCBB_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (drain_grow((void **)&names, n, &cap, sizeof(*names)) != 0 ||
            (names[n] = strdup(de->d_name)) == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        n++;
    }
    if (n > 0)
        qsort(names, n, sizeof(*names), fl_name_cmp);
    for (uint64_t k = 0; k < n && rc == PDCBB_OK; k++) {
        size_t nl = strlen(names[k]);
        if (plen + 1 + nl >= sizeof(v->path) - 1) {
            fl_report(v, "EXTRA", "files/%s/%s: not in the list (its path is too long)", v->path,
                      names[k]);
            v->st->extra++;
            continue;
        }
        size_t sub = plen;
        if (plen > 0)
            v->path[sub++] = '/';
        memcpy(v->path + sub, names[k], nl + 1);
        sub += nl;
        struct stat st;
        if (fstatat(dirfd(d), names[k], &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT) {
                drain_errf(err, errlen, "cannot check files/%s: %s", v->path, strerror(errno));
                rc = pdcbb_err_from_errno(errno);
            }
            v->path[plen] = '\0';
            continue;
        }
        int64_t i = pdcbb_drain_files_find(v->f, v->path);
        char type = fl_type_of(st.st_mode);
        if (i < 0) {
            v->st->extra++;
            if (type == PDCBB_DRAIN_FILE_REG)
                fl_report(v, "EXTRA", "files/%s: not in the list (a regular file of %jd bytes)",
                          v->path, (intmax_t)st.st_size);
            else
                fl_report(v, "EXTRA", "files/%s: not in the list (%s)", v->path,
                          type == '?' ? "a special file" : fl_kind(type));
        } else if (type != v->f->e[i].type) {
            v->state[i] = FL_OTHER;
            v->st->changed++;
            fl_report(v, "CHANGED", "files/%s: %s, the list says %s", v->path,
                      type == '?' ? "a special file" : fl_kind(type), fl_kind(v->f->e[i].type));
        } else {
            v->state[i] = FL_SEEN;
            fl_compare(v, dirfd(d), names[k], &st, i);
            if (type == PDCBB_DRAIN_FILE_DIR) {
                int sfd =
                    openat(dirfd(d), names[k], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sfd < 0) {
                    drain_errf(err, errlen, "cannot read files/%s: %s", v->path, strerror(errno));
                    rc = pdcbb_err_from_errno(errno);
                } else {
                    rc = fl_walk(v, sfd, sub, err, errlen);
                }
            }
        }
        v->path[plen] = '\0';
    }
    for (uint64_t k = 0; k < n; k++)
        free(names[k]);
    free(names);
    closedir(d);
    return rc;
}

/* Entries under directory i (indices after it with its path as prefix). */
static uint64_t fl_under(const pdcbb_drain_files_t *f, uint64_t i)
{
    size_t l = strlen(f->e[i].path);
    uint64_t n = 0;
    for (uint64_t k = i + 1; k < f->n; k++) {
        if (strncmp(f->e[k].path, f->e[i].path, l) != 0 || f->e[k].path[l] != '/')
            break;
        n++;
    }
    return n;
}

pdcbb_err_t pdcbb_drain_files_verify(const pdcbb_drain_t *m, pdcbb_drain_files_stats_t *stats,
                                     pdcbb_drain_files_report_fn report,
                                     pdcbb_drain_progress_fn progress, void *arg, char *err,
                                     size_t errlen)
{
    char path[PATH_MAX];
    memset(stats, 0, sizeof(*stats));
    fl_verify_t v = {.st = stats, .report = report, .progress = progress, .arg = arg};
    snprintf(path, sizeof(path), "%s/%s", m->dir ? m->dir : ".", PDCBB_DRAIN_FILES_DIR);
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int derr = errno;
    if (m->files.list == NULL) {
        if (dfd < 0 && derr == ENOENT)
            return PDCBB_OK; /* no mount in this job */
        if (dfd >= 0)
            close(dfd);
        stats->extra = 1;
        fl_report(&v, "EXTRA",
                  "files/: the manifest lists no files (its manifest.yaml has no files key: the "
                  "drain did not write this files/)");
        return PDCBB_ERR_IO;
    }
    pdcbb_drain_files_t *f = NULL;
    pdcbb_err_t rc = pdcbb_drain_files_load(m, &f, err, errlen);
    if (rc != PDCBB_OK) {
        if (dfd >= 0)
            close(dfd);
        return rc;
    }
    v.f = f;
    stats->entries = f->n;
    if (dfd < 0) {
        stats->missing = f->n;
        fl_report(&v, "MISSING", "files/: %s (the list has %" PRIu64 " entries)",
                  derr == ENOENT ? "missing" : strerror(derr), f->n);
        pdcbb_drain_files_free(f);
        return PDCBB_ERR_IO;
    }
    if ((v.state = calloc(f->n + 1, 1)) == NULL) {
        close(dfd);
        pdcbb_drain_files_free(f);
        return PDCBB_ERR_NOMEM;
    }
    v.path[0] = '\0';
    rc = fl_walk(&v, dfd, 0, err, errlen);
    /* what is listed and was not found: each counted, named once at the top of a missing tree */
    for (uint64_t i = 0; rc == PDCBB_OK && i < f->n; i++) {
        if (v.state[i] != FL_UNSEEN)
            continue;
        stats->missing++;
        int64_t p = f->e[i].parent;
        if (p >= 0 && v.state[p] != FL_SEEN)
            continue; /* under a missing or replaced directory: named with it */
        if (f->e[i].type == PDCBB_DRAIN_FILE_DIR)
            fl_report(&v, "MISSING",
                      "files/%s: missing (a directory, with %" PRIu64 " entries under it)",
                      f->e[i].path, fl_under(f, i));
        else if (f->e[i].type == PDCBB_DRAIN_FILE_REG)
            fl_report(&v, "MISSING", "files/%s: missing (a regular file of %" PRIu64 " bytes)",
                      f->e[i].path, f->e[i].size);
        else
            fl_report(&v, "MISSING", "files/%s: missing (a symbolic link to '%s')", f->e[i].path,
                      f->e[i].target);
    }
    free(v.state);
    pdcbb_drain_files_free(f);
    if (rc != PDCBB_OK)
        return rc;
    return stats->missing || stats->extra || stats->changed || stats->damaged ? PDCBB_ERR_IO
                                                                              : PDCBB_OK;
}
