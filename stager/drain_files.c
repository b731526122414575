/*
 * drain_files.c - the mount's tree in the drain, as files (pdcbb_drain.h:
 * pdcbb_drain_files_build; docs/DRAIN-FORMAT.md "Files of the mount").
 *
 * Each rank wrote the namespace entries its store holds to ns/rank-R.ns (drain_ns_dump.c): a
 * text file, one entry per line with its name and link target in hex, and a last line holding
 * the CRC-32C of everything before it. The node that completes the drain builds
 * files/ from every rank's entries and the drained objects: each directory, each file (its
 * bytes read through pdcbb_drain_read_box, so every extent is checked against its CRC before a
 * byte is copied; the copy is synced and read back against the CRC-32C of what was written) and
 * each symbolic link, with their permission bits and mtimes. Everything it made goes into the
 * list files.manifest (pdcbb_drain_files.h), which the merged manifest names with its size and
 * CRC-32C. The tree is built in files.tmp.HOST.PID/, the list written, and the tree renamed to
 * files/, all before manifest.yaml and COMPLETE: whenever files/ exists its list does, and a
 * drain finished again later keeps both.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drain_internal.h"
#include "pdcbb_crc32c.h"
#include "pdcbb_drain_files.h"
#include "pdcbb_log.h"
#include "pdcbb_ns.h"
#include "pdcbb_proto.h"

#define FILES_DIR PDCBB_DRAIN_FILES_DIR
#define FILES_TMP "files.tmp"
#define FILES_OLD "files.old"
#define COPY_SLAB ((uint64_t)64 << 20)

static int cmp_ino(const void *a, const void *b)
{
    const pdcbb_drain_ns_ent_t *x = *(pdcbb_drain_ns_ent_t *const *)a,
                               *y = *(pdcbb_drain_ns_ent_t *const *)b;
    return (x->ino > y->ino) - (x->ino < y->ino);
}

/* The directory entry whose ino is ino (dirs sorted by ino), or NULL. */
static pdcbb_drain_ns_ent_t *dir_of(pdcbb_drain_ns_ent_t **dirs, size_t nd, uint64_t ino)
{
    pdcbb_drain_ns_ent_t key = {.ino = ino}, *kp = &key;
    pdcbb_drain_ns_ent_t **hit = bsearch(&kp, dirs, nd, sizeof(*dirs), cmp_ino);
    return hit ? *hit : NULL;
}

/* Resolve a directory's path under root (recursively through its parents, at most depth). */
static const char *dir_path(pdcbb_drain_ns_ent_t **dirs, size_t nd, uint64_t ino, const char *root,
                            int depth)
{
    if (ino == PDCBB_NS_ROOT)
        return root;
    pdcbb_drain_ns_ent_t *d = dir_of(dirs, nd, ino);
    if (d == NULL || depth > 4096)
        return NULL; /* an orphan (its parent was removed meanwhile), or a cycle */
    if (d->path != NULL)
        return d->path;
    const char *up = dir_path(dirs, nd, d->parent, root, depth + 1);
    if (up == NULL)
        return NULL;
    size_t l = strlen(up) + 1 + strlen(d->name) + 1;
    if (l > PATH_MAX || (d->path = malloc(l)) == NULL)
        return NULL;
    snprintf(d->path, l, "%s/%s", up, d->name);
    return d->path;
}

/* rm -rf of a directory this process made (no symlinks followed). */
static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d != NULL) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char p[PATH_MAX];
            if (snprintf(p, sizeof(p), "%s/%s", path, de->d_name) >= (int)sizeof(p))
                continue;
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                remove_tree(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

static void log_damaged(const char *line, void *arg)
{
    uint64_t *seen = arg;
    (*seen)++;
    PDCBB_ERROR("drain: files/: %s (read as zeros in the file; pdcbb verify lists it)", line);
}

static pdcbb_err_t set_times(const char *path, uint64_t mtime_ns, char *err, size_t errlen)
{
    struct timespec ts[2] = {
        {(time_t)(mtime_ns / 1000000000ull), (long)(mtime_ns % 1000000000ull)},
        {(time_t)(mtime_ns / 1000000000ull), (long)(mtime_ns % 1000000000ull)}};
    if (utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) != 0) {
        drain_errf(err, errlen, "cannot set the times of %s: %s", path, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    return PDCBB_OK;
}

/* Does m mark an extent of object id damaged (manifest key damaged)? */
static int object_damaged(const pdcbb_drain_t *m, uint64_t id)
{
    uint64_t first, count;
    pdcbb_drain_object_extents(m, id, &first, &count);
    for (uint64_t i = first; i < first + count; i++)
        if (m->extents[i].damaged)
            return 1;
    return 0;
}

/* Copy file e's bytes (object e->ino of m) to path; *crc gets their CRC-32C, *made whether the
 * file was made (0: left out, its object is not in the drain). The copy is synced and read back
 * against *crc. */
static pdcbb_err_t copy_file(pdcbb_drain_t *m, const pdcbb_drain_ns_ent_t *e, const char *path,
                             uint8_t *slab, uint32_t *crc, int *made, char *err, size_t errlen)
{
    *crc = 0;
    *made = 0;
    if (e->size > 0 && pdcbb_drain_find_object_id(m, e->ino) == NULL) {
        /* its object was deleted meanwhile (an unlink racing the job's end): left out, said */
        PDCBB_ERROR("drain: file %s is left out of files/: its object %#" PRIx64
                    " is not in the drain",
                    path, e->ino);
        return PDCBB_OK;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        drain_errf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    *made = 1;
    pdcbb_err_t rc = PDCBB_OK;
    const pdcbb_drain_object_t *o = pdcbb_drain_find_object_id(m, e->ino);
    for (uint64_t off = 0; o != NULL && rc == PDCBB_OK && off < e->size;) {
        uint64_t len = e->size - off < COPY_SLAB ? e->size - off : COPY_SLAB;
        pdcbb_box_t box;
        memset(&box, 0, sizeof(box));
        box.ndim = 1;
        box.off[0] = off;
        box.size[0] = len;
        if ((rc = pdcbb_drain_read_box(m, o, &box, slab, err, errlen)) != PDCBB_OK)
            break;
        *crc = pdcbb_crc32c(*crc, slab, (size_t)len);
        if (pwrite(fd, slab, len, (off_t)off) != (ssize_t)len) {
            drain_errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
            rc = pdcbb_err_from_errno(errno);
        }
        off += len;
    }
    if (rc == PDCBB_OK && (ftruncate(fd, (off_t)e->size) != 0 || fdatasync(fd) != 0)) {
        drain_errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        rc = pdcbb_err_from_errno(errno);
    }
    if (rc == PDCBB_OK) { /* read back, as the data files are */
        pdcbb_drain_file_t want = {.type = PDCBB_DRAIN_FILE_REG, .size = e->size, .crc32c = *crc};
        char why[256];
        if ((rc = pdcbb_drain_file_check(fd, &want, NULL, why, sizeof(why))) != PDCBB_OK)
            drain_errf(err, errlen, "%s, read back after it was written: %s", path, why);
    }
    close(fd);
    return rc;
}

/* The list of an earlier build (files/ exists): *ref and *nfiles from it. PDCBB_ERR_NOT_FOUND
 * when there is no list (files/ of a pdcbb that wrote none). */
static pdcbb_err_t files_existing(const char *drain_dir, pdcbb_drain_files_ref_t *ref,
                                  uint64_t *nfiles, char *err, size_t errlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", drain_dir, PDCBB_DRAIN_FILES_LIST);
    pdcbb_drain_files_t *f = NULL;
    pdcbb_err_t rc = drain_files_list_read(path, &f, ref, err, errlen);
    if (rc == PDCBB_OK) {
        *nfiles = f->nfiles;
        pdcbb_drain_files_free(f);
    }
    return rc;
}

/* Add what path (under root) is to the list: lstat gives the mode as made. */
static pdcbb_err_t list_add(pdcbb_drain_files_t *list, const char *root, const char *path,
                            char type, uint64_t size, uint64_t mtime_ns, uint32_t crc, int damaged,
                            const char *target, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        drain_errf(err, errlen, "cannot check %s: %s", path, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    pdcbb_drain_file_t e = {.path = (char *)path + strlen(root) + 1,
                            .type = type,
                            .mode = (uint32_t)(st.st_mode & 07777),
                            .size = size,
                            .mtime_ns = mtime_ns,
                            .crc32c = crc,
                            .damaged = damaged,
                            .target = (char *)target};
    if (type == PDCBB_DRAIN_FILE_LINK)
        e.mode = 0777;
    return pdcbb_drain_files_add(list, &e);
}

pdcbb_err_t pdcbb_drain_files_build(const char *drain_dir, uint32_t nservers,
                                    pdcbb_drain_files_ref_t *ref, uint64_t *nfiles, char *err,
                                    size_t errlen)
{
    char path[PATH_MAX], root[PATH_MAX], final[PATH_MAX], old[PATH_MAX];
    pdcbb_drain_ns_t s = {0};
    pdcbb_err_t rc = PDCBB_OK;
    memset(ref, 0, sizeof(*ref));
    *nfiles = 0;
    rc = pdcbb_drain_ns_load(drain_dir, nservers, &s, err, errlen);
    if (rc != PDCBB_OK || s.n == 0) {
        pdcbb_drain_ns_free(&s);
        return rc; /* no mount in this job: no files/ */
    }
    /* several nodes may finish the drain at once: each builds in its own temporary directory,
     * the first rename wins and the others' trees (the same) are removed */
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    host[strcspn(host, "/")] = '\0';
    snprintf(root, sizeof(root), "%s/%s.%s.%ld", drain_dir, FILES_TMP, host, (long)getpid());
    snprintf(old, sizeof(old), "%s/%s.%s.%ld", drain_dir, FILES_OLD, host, (long)getpid());
    snprintf(final, sizeof(final), "%s/%s", drain_dir, FILES_DIR);
    snprintf(path, sizeof(path), "%s/%s", drain_dir, PDCBB_DRAIN_FILES_LIST);
    struct stat fst;
    if (lstat(final, &fst) == 0) { /* built and renamed by an earlier finish: whole */
        rc = files_existing(drain_dir, ref, nfiles, err, errlen);
        if (rc != PDCBB_ERR_NOT_FOUND && rc != PDCBB_ERR_CORRUPT) {
            pdcbb_drain_ns_free(&s);
            return rc;
        }
        /* files/ without its list (a pdcbb that wrote none built it), or with a damaged one:
         * built again */
        PDCBB_WARN("drain: %s: %s; building files/ again", final,
                   rc == PDCBB_ERR_NOT_FOUND ? "it has no list" : err);
        rc = PDCBB_OK;
        if (rename(final, old) != 0) {
            drain_errf(err, errlen, "cannot move %s aside to %s: %s", final, old, strerror(errno));
            pdcbb_drain_ns_free(&s);
            return pdcbb_err_from_errno(errno);
        }
        remove_tree(old);
    }
    remove_tree(root); /* an earlier attempt of this process's name */
    pdcbb_drain_t *m = NULL;
    pdcbb_drain_ns_ent_t **dirs = calloc(s.n, sizeof(*dirs));
    uint8_t *slab = malloc(COPY_SLAB);
    pdcbb_drain_files_t *list = calloc(1, sizeof(*list));
    char *text = NULL;
    size_t tlen = 0;
    uint64_t damaged_seen = 0;
    size_t nd = 0;
    if (dirs == NULL || slab == NULL || list == NULL) {
        rc = PDCBB_ERR_NOMEM;
        goto out;
    }
    if (mkdir(root, 0700) != 0) {
        drain_errf(err, errlen, "cannot create %s: %s", root, strerror(errno));
        rc = pdcbb_err_from_errno(errno);
        goto out;
    }
    if ((rc = pdcbb_drain_open(drain_dir, PDCBB_DRAIN_OPEN_PARTIAL, &m, err, errlen)) != PDCBB_OK ||
        (rc = pdcbb_drain_skip_damaged(m, log_damaged, &damaged_seen)) != PDCBB_OK)
        goto out;
    for (size_t i = 0; i < s.n; i++)
        if (s.e[i].kind == PDCBB_NS_DIR)
            dirs[nd++] = &s.e[i];
    qsort(dirs, nd, sizeof(*dirs), cmp_ino);
    /* directories first (parents before children: dir_path makes them in that order) */
    for (size_t i = 0; i < nd && rc == PDCBB_OK; i++) {
        const char *p = dir_path(dirs, nd, dirs[i]->ino, root, 0);
        if (p == NULL)
            continue; /* removed meanwhile: nothing under it is reachable */
        for (const char *q = p + strlen(root) + 1;; q++) { /* every level, parents first */
            const char *slash = strchr(q, '/');
            char sub[PATH_MAX];
            size_t l = slash ? (size_t)(slash - p) : strlen(p);
            memcpy(sub, p, l);
            sub[l] = '\0';
            if (mkdir(sub, 0700) != 0 && errno != EEXIST) {
                drain_errf(err, errlen, "cannot create %s: %s", sub, strerror(errno));
                rc = pdcbb_err_from_errno(errno);
                break;
            }
            if (slash == NULL)
                break;
            q = slash;
        }
    }
    /* files and links */
    for (size_t i = 0; i < s.n && rc == PDCBB_OK; i++) {
        pdcbb_drain_ns_ent_t *e = &s.e[i];
        if (e->kind == PDCBB_NS_DIR)
            continue;
        const char *up = dir_path(dirs, nd, e->parent, root, 0);
        if (up == NULL)
            continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof(p), "%s/%s", up, e->name) >= (int)sizeof(p)) {
            drain_errf(err, errlen, "a path under %s is too long", root);
            rc = PDCBB_ERR_TOO_BIG;
            break;
        }
        if (e->kind == PDCBB_NS_SYMLINK) {
            if (symlink(e->target, p) != 0) {
                drain_errf(err, errlen, "cannot create %s: %s", p, strerror(errno));
                rc = pdcbb_err_from_errno(errno);
            } else if ((rc = set_times(p, e->mtime_ns, err, errlen)) == PDCBB_OK) {
                rc = list_add(list, root, p, PDCBB_DRAIN_FILE_LINK, strlen(e->target), e->mtime_ns,
                              0, 0, e->target, err, errlen);
            }
            continue;
        }
        uint32_t crc;
        int made;
        uint64_t seen = damaged_seen;
        if ((rc = copy_file(m, e, p, slab, &crc, &made, err, errlen)) != PDCBB_OK || !made)
            continue;
        /* nobody but the user may change a drain; the user may always read it */
        if (chmod(p, (e->mode | 0400) & ~(mode_t)022) != 0) {
            drain_errf(err, errlen, "cannot set the mode of %s: %s", p, strerror(errno));
            rc = pdcbb_err_from_errno(errno);
        } else if ((rc = set_times(p, e->mtime_ns, err, errlen)) == PDCBB_OK) {
            int damaged = damaged_seen != seen || object_damaged(m, e->ino);
            rc = list_add(list, root, p, PDCBB_DRAIN_FILE_REG, e->size, e->mtime_ns, crc, damaged,
                          NULL, err, errlen);
            (*nfiles)++;
        }
    }
    /* directories' modes and times last: their contents are in */
    for (size_t i = 0; i < nd && rc == PDCBB_OK; i++) {
        if (dirs[i]->path == NULL)
            continue;
        if (chmod(dirs[i]->path, (dirs[i]->mode | 0700) & ~(mode_t)022) != 0) {
            drain_errf(err, errlen, "cannot set the mode of %s: %s", dirs[i]->path,
                       strerror(errno));
            rc = pdcbb_err_from_errno(errno);
        } else if ((rc = set_times(dirs[i]->path, dirs[i]->mtime_ns, err, errlen)) == PDCBB_OK) {
            rc = list_add(list, root, dirs[i]->path, PDCBB_DRAIN_FILE_DIR, 0, dirs[i]->mtime_ns, 0,
                          0, NULL, err, errlen);
        }
    }
    if (rc == PDCBB_OK && (rc = pdcbb_drain_files_format(list, &text, &tlen)) != PDCBB_OK)
        drain_errf(err, errlen, "cannot list the files of %s: %s", root, pdcbb_strerror(rc));
    if (rc != PDCBB_OK)
        goto out;
    /* the list first, then the tree: whenever files/ exists, its list does */
    if (lstat(final, &fst) == 0) { /* another node's finish renamed its tree first */
        remove_tree(root);
        rc = files_existing(drain_dir, ref, nfiles, err, errlen);
        goto out;
    }
    if ((rc = drain_write_atomic(path, text, tlen, err, errlen)) != PDCBB_OK)
        goto out;
    if (rename(root, final) != 0) {
        if (errno == EEXIST || errno == ENOTEMPTY) {
            remove_tree(root); /* another node's finish renamed its tree first */
            rc = files_existing(drain_dir, ref, nfiles, err, errlen);
        } else {
            drain_errf(err, errlen, "cannot rename %s to %s: %s", root, final, strerror(errno));
            rc = pdcbb_err_from_errno(errno);
        }
        goto out;
    }
    if ((ref->list = strdup(PDCBB_DRAIN_FILES_LIST)) == NULL) {
        rc = PDCBB_ERR_NOMEM;
        goto out;
    }
    ref->entries = list->n;
    ref->bytes = tlen;
    ref->crc32c = pdcbb_crc32c(0, text, tlen);
out:
    if (rc != PDCBB_OK) {
        remove_tree(root);
        free(ref->list);
        memset(ref, 0, sizeof(*ref));
    }
    pdcbb_drain_free(m);
    pdcbb_drain_files_free(list);
    free(text);
    free(dirs);
    free(slab);
    pdcbb_drain_ns_free(&s);
    return rc;
}
