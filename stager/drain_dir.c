/*
 * drain_dir.c - where a job's drain goes and whether a drain can be trusted (pdcbb_drain.h,
 * "the job's drain directory"):
 *   - pdcbb_drain_dest_check: a destination the caller may drain into (submission, pdcbb run,
 *     every node's prolog, all as the job user);
 *   - pdcbb_drain_dir_create / _find: the job's own directory, made with mkdir by the job user
 *     and recognised by its IDENTITY file and owner, never one somebody else prepared;
 *   - pdcbb_drain_trust_check: readers refuse a drain that someone other than its owner could
 *     have changed;
 *   - pdcbb_drain_report_write / _remove: the FAILED report a failed drain leaves for the user.
 * Everything here runs with the caller's credentials; nothing follows a link it did not expect.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drain_internal.h"
#include "pdcbb_drain.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_log.h"
#include "pdcbb_name.h"

#define DD_IDENTITY_MAGIC "pdcbb-drain-identity 1"
#define DD_REPORT_MAGIC "pdcbb drain FAILED" /* a FAILED report's first line */
#define DD_TRUST_DEPTH 4 /* the drain dir, parts/ and data/, and a little room */

/* "alice (uid 1000)" or "uid 1000" */
static const char *dd_who(uid_t uid, char *buf, size_t len)
{
    struct passwd pw, *res = NULL;
    char pwbuf[4096];
    if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res != NULL)
        snprintf(buf, len, "%s (uid %ld)", pw.pw_name, (long)uid);
    else
        snprintf(buf, len, "uid %ld", (long)uid);
    return buf;
}

int pdcbb_drain_share_parse(const char *s)
{
    if (s == NULL || s[0] == '\0' || strcmp(s, "none") == 0)
        return PDCBB_DRAIN_SHARE_NONE;
    if (strcmp(s, "group") == 0)
        return PDCBB_DRAIN_SHARE_GROUP;
    if (strcmp(s, "all") == 0)
        return PDCBB_DRAIN_SHARE_ALL;
    return -1;
}

static mode_t dd_dir_mode(int share)
{
    return share == PDCBB_DRAIN_SHARE_ALL ? 0755 : share == PDCBB_DRAIN_SHARE_GROUP ? 0750 : 0700;
}

/* ---------------------------------------------------------------------------------------- */
/* The destination                                                                            */

/* Directories no job drains into (and what is under them). "/" itself is matched exactly. */
static const char *const dd_system_dirs[] = {
    "/etc",  "/usr", "/bin",  "/sbin", "/lib",     "/lib32",   "/lib64",     "/libx32", "/boot",
    "/dev",  "/proc", "/sys", "/run",  "/var/lib", "/var/log", "/var/spool",
};

static bool dd_under(const char *path, const char *root)
{
    size_t n = strlen(root);
    return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

pdcbb_err_t pdcbb_drain_dest_check(const char *dest, char *err, size_t errlen)
{
    struct stat st;
    char real[PATH_MAX], who[128];
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (dest == NULL || dest[0] != '/') {
        drain_errf(err, errlen, "drain destination '%s' is not an absolute path",
                dest ? dest : "");
        return PDCBB_ERR_INVAL;
    }
    if (stat(dest, &st) != 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) {
            drain_errf(err, errlen, "drain destination %s does not exist (create it first)", dest);
            return PDCBB_ERR_NOT_FOUND;
        }
        drain_errf(err, errlen, "cannot access drain destination %s as %s: %s", dest,
                dd_who(geteuid(), who, sizeof(who)), strerror(e));
        return e == EACCES ? PDCBB_ERR_PERM : pdcbb_err_from_errno(e);
    }
    if (!S_ISDIR(st.st_mode)) {
        drain_errf(err, errlen, "drain destination %s is not a directory", dest);
        return PDCBB_ERR_INVAL;
    }
    if (realpath(dest, real) == NULL)
        snprintf(real, sizeof(real), "%s", dest);
    bool sys = strcmp(real, "/") == 0;
    for (size_t i = 0; !sys && i < sizeof(dd_system_dirs) / sizeof(dd_system_dirs[0]); i++)
        sys = dd_under(real, dd_system_dirs[i]);
    if (sys) {
        if (strcmp(real, dest) != 0)
            drain_errf(err, errlen, "drain destination %s (that is, %s) is a system directory: "
                                 "drain to a directory of your own",
                    dest, real);
        else
            drain_errf(err, errlen, "drain destination %s is a system directory: drain to a "
                                 "directory of your own",
                    dest);
        return PDCBB_ERR_PERM;
    }
    if (faccessat(AT_FDCWD, dest, W_OK | X_OK, AT_EACCESS) != 0) {
        int e = errno;
        char owner[128];
        if (e == EROFS)
            drain_errf(err, errlen, "drain destination %s is not writable: it is on a read-only "
                                 "file system",
                    dest);
        else
            drain_errf(err, errlen, "drain destination %s is not writable by %s (it belongs to %s, "
                                 "mode %04o)",
                    dest, dd_who(geteuid(), who, sizeof(who)),
                    dd_who(st.st_uid, owner, sizeof(owner)), (unsigned)(st.st_mode & 07777));
        return PDCBB_ERR_PERM;
    }
    return PDCBB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* The job's directory and its identity                                                       */

pdcbb_err_t pdcbb_drain_identity_read(const char *path, uid_t uid, pdcbb_drain_identity_t *id,
                                      char *why, size_t whylen)
{
    char who[128];
    struct stat st;
    if (why != NULL && whylen > 0)
        why[0] = '\0';
    memset(id, 0, sizeof(*id));
    if (lstat(path, &st) != 0) {
        drain_errf(why, whylen, "%s: %s", path, strerror(errno));
        return PDCBB_ERR_NOT_FOUND;
    }
    if (!S_ISDIR(st.st_mode)) {
        drain_errf(why, whylen, "%s is not a directory", path);
        return PDCBB_ERR_INVAL;
    }
    if (st.st_uid != uid) {
        drain_errf(why, whylen, "%s belongs to %s", path, dd_who(st.st_uid, who, sizeof(who)));
        return PDCBB_ERR_PERM;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        drain_errf(why, whylen, "%s is writable by others (mode %04o)", path,
                (unsigned)(st.st_mode & 07777));
        return PDCBB_ERR_PERM;
    }
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        drain_errf(why, whylen, "%s: %s", path, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    int fd = openat(dfd, PDCBB_DRAIN_IDENTITY, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    close(dfd);
    if (fd < 0) {
        drain_errf(why, whylen, "%s has no %s of a pdcbb job", path, PDCBB_DRAIN_IDENTITY);
        return PDCBB_ERR_NOT_FOUND;
    }
    char buf[512];
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid &&
        !(st.st_mode & (S_IWGRP | S_IWOTH)))
        n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        drain_errf(why, whylen, "%s/%s is not a readable file of %s, writable by it alone", path,
                PDCBB_DRAIN_IDENTITY, dd_who(uid, who, sizeof(who)));
        return PDCBB_ERR_PERM;
    }
    buf[n] = '\0';
    id->uid = -1;
    id->created = st.st_mtime;
    char *save = NULL;
    int magic = 0;
    for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (strcmp(l, DD_IDENTITY_MAGIC) == 0)
            magic = 1;
        else if (strncmp(l, "job_id ", 7) == 0)
            id->job_id = strtoull(l + 7, NULL, 10);
        else if (strncmp(l, "instance ", 9) == 0)
            snprintf(id->instance, sizeof(id->instance), "%s", strcmp(l + 9, "-") ? l + 9 : "");
        else if (strncmp(l, "cluster ", 8) == 0 && pdcbb_cluster_name_ok(l + 8))
            snprintf(id->cluster, sizeof(id->cluster), "%s", l + 8);
        else if (strncmp(l, "uid ", 4) == 0)
            id->uid = strtol(l + 4, NULL, 10);
    }
    if (!magic || id->uid != (long)uid) {
        drain_errf(why, whylen, "%s/%s is not a pdcbb job's identity of %s", path,
                PDCBB_DRAIN_IDENTITY, dd_who(uid, who, sizeof(who)));
        return PDCBB_ERR_PERM;
    }
    return PDCBB_OK;
}

/*
 * Is path this job's drain directory? 1 yes, 0 no (why says why, for the caller's message).
 * The directory itself and its IDENTITY are opened without following links.
 */
static int dd_is_ours(const char *path, uint64_t job_id, const char *instance, uid_t uid,
                      char *why, size_t whylen)
{
    pdcbb_drain_identity_t id;
    if (pdcbb_drain_identity_read(path, uid, &id, why, whylen) != PDCBB_OK)
        return 0;
    const char *want = instance ? instance : "";
    if (id.job_id != job_id || strcmp(id.instance, want) != 0) {
        drain_errf(why, whylen, "%s belongs to another job (its %s names job %" PRIu64
                             ", instance %s)",
                path, PDCBB_DRAIN_IDENTITY, id.job_id, id.instance[0] ? id.instance : "none");
        return 0;
    }
    return 1;
}

static int dd_write_identity(int dfd, uint64_t job_id, const char *instance, const char *cluster,
                             mode_t fmode)
{
    char buf[256];
    int n = snprintf(buf, sizeof(buf), "%s\njob_id %" PRIu64 "\ninstance %s\ncluster %s\nuid %ld\n",
                     DD_IDENTITY_MAGIC, job_id, instance && instance[0] ? instance : "-",
                     cluster && pdcbb_cluster_name_ok(cluster) ? cluster : "-", (long)geteuid());
    int fd = openat(dfd, PDCBB_DRAIN_IDENTITY ".tmp",
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, fmode);
    if (fd < 0)
        return -1;
    int ok = write(fd, buf, (size_t)n) == n && fsync(fd) == 0;
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (!ok || renameat(dfd, PDCBB_DRAIN_IDENTITY ".tmp", dfd, PDCBB_DRAIN_IDENTITY) != 0) {
        if (ok)
            e = errno;
        unlinkat(dfd, PDCBB_DRAIN_IDENTITY ".tmp", 0);
        errno = e;
        return -1;
    }
    return 0;
}

pdcbb_err_t pdcbb_drain_dir_create(const char *dest, uint64_t job_id, const char *instance,
                                   const char *cluster, int share, char *out, size_t outlen,
                                   char *note, size_t notelen, char *err, size_t errlen)
{
    char path[PATH_MAX], first[PATH_MAX], why[PATH_MAX + 256], suffix[16];
    mode_t dmode = dd_dir_mode(share), fmode = dmode & 0644;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (note != NULL && notelen > 0)
        note[0] = '\0';
    first[0] = why[0] = '\0';
    if (dest == NULL || job_id == 0) {
        drain_errf(err, errlen, "no drain destination or job id");
        return PDCBB_ERR_INVAL;
    }
    for (int attempt = 0; attempt < 10; attempt++) {
        if (attempt == 0) {
            suffix[0] = '\0';
        } else if (attempt == 1 && instance != NULL && strlen(instance) >= 8) {
            snprintf(suffix, sizeof(suffix), ".%.8s", instance);
        } else {
            uint32_t r = 0;
            if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
                r = (uint32_t)getpid() * 2654435761u + (uint32_t)attempt;
            snprintf(suffix, sizeof(suffix), ".%08" PRIx32, r);
        }
        if (snprintf(path, sizeof(path), "%s/pdcbb.%" PRIu64 "%s", dest, job_id, suffix) >=
            (int)sizeof(path) - 64) {
            drain_errf(err, errlen, "drain destination path %s too long", dest);
            return PDCBB_ERR_TOO_BIG;
        }
        if (attempt == 0)
            snprintf(first, sizeof(first), "%s", path);
        if (mkdir(path, 0700) != 0) {
            int e = errno;
            if (e != EEXIST) {
                const char *hint = (e == EACCES || e == EPERM || e == EROFS)
                                       ? " (destination not writable)"
                                   : e == ENOSPC || e == EDQUOT ? " (destination full)"
                                                                : "";
                drain_errf(err, errlen, "cannot create %s: %s%s", path, strerror(e), hint);
                return e == EACCES || e == EPERM || e == EROFS ? PDCBB_ERR_PERM
                       : e == ENOENT                           ? PDCBB_ERR_NOT_FOUND
                       : e == ENOSPC || e == EDQUOT            ? PDCBB_ERR_DISK_FULL
                                                               : pdcbb_err_from_errno(e);
            }
            char w[PATH_MAX + 128];
            if (dd_is_ours(path, job_id, instance, geteuid(), w, sizeof(w))) {
                snprintf(out, outlen, "%s", path);
                if (attempt > 0)
                    drain_errf(note, notelen, "%s", why);
                return PDCBB_OK;
            }
            if (attempt == 0)
                snprintf(why, sizeof(why), "%s", w);
            continue;
        }
        /* ours: the mode we want (umask may have taken bits), then the identity */
        int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0 || fchmod(dfd, dmode) != 0 ||
            dd_write_identity(dfd, job_id, instance, cluster, fmode) != 0) {
            int e = errno;
            if (dfd >= 0)
                close(dfd);
            rmdir(path);
            drain_errf(err, errlen, "cannot prepare %s: %s", path, strerror(e));
            return pdcbb_err_from_errno(e);
        }
        close(dfd);
        snprintf(out, outlen, "%s", path);
        if (attempt > 0) {
            drain_errf(note, notelen, "%s: draining into %s instead", why, path);
            PDCBB_WARN("%s: draining into %s instead", why, path);
        } else {
            PDCBB_INFO("created drain directory %s (mode %04o)", path, (unsigned)dmode);
        }
        return PDCBB_OK;
    }
    drain_errf(err, errlen, "cannot create a drain directory for job %" PRIu64 " in %s: %s and "
                         "every fresh name are taken",
            job_id, dest, first);
    return PDCBB_ERR_EXISTS;
}

pdcbb_err_t pdcbb_drain_dir_find(const char *dest, uint64_t job_id, const char *instance,
                                 uid_t uid, char *out, size_t outlen, char *err, size_t errlen)
{
    char prefix[64], path[PATH_MAX], why[PATH_MAX + 256], first_why[PATH_MAX + 256];
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    first_why[0] = '\0';
    snprintf(prefix, sizeof(prefix), "pdcbb.%" PRIu64, job_id);
    size_t pl = strlen(prefix);
    /* the usual name first, then the fresh ones */
    snprintf(path, sizeof(path), "%s/%s", dest, prefix);
    if (dd_is_ours(path, job_id, instance, uid, why, sizeof(why))) {
        snprintf(out, outlen, "%s", path);
        return PDCBB_OK;
    }
    if (access(path, F_OK) == 0 || errno != ENOENT)
        snprintf(first_why, sizeof(first_why), "%s", why);
    DIR *d = opendir(dest);
    if (d == NULL) {
        int e = errno;
        drain_errf(err, errlen, "cannot read drain destination %s: %s", dest, strerror(e));
        return e == ENOENT ? PDCBB_ERR_NOT_FOUND : pdcbb_err_from_errno(e);
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, pl) != 0 || de->d_name[pl] != '.')
            continue;
        size_t l = strlen(de->d_name);
        size_t sl = strlen(PDCBB_DRAIN_FAILED_SUFFIX);
        if (l > sl && strcmp(de->d_name + l - sl, PDCBB_DRAIN_FAILED_SUFFIX) == 0)
            continue;
        if (snprintf(path, sizeof(path), "%s/%s", dest, de->d_name) >= (int)sizeof(path))
            continue;
        if (dd_is_ours(path, job_id, instance, uid, why, sizeof(why))) {
            closedir(d);
            snprintf(out, outlen, "%s", path);
            return PDCBB_OK;
        }
    }
    closedir(d);
    if (first_why[0])
        drain_errf(err, errlen, "no drain directory of job %" PRIu64 " in %s (%s)", job_id, dest,
                first_why);
    else
        drain_errf(err, errlen, "no drain directory of job %" PRIu64 " in %s (its prolog creates "
                             "%s/%s)",
                job_id, dest, dest, prefix);
    return PDCBB_ERR_NOT_FOUND;
}

unsigned pdcbb_drain_parts_count(const char *drain_dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", drain_dir, PDCBB_DRAIN_PARTS_DIR);
    DIR *d = opendir(path);
    unsigned n = 0;
    if (d == NULL)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (strncmp(de->d_name, "rank-", 5) == 0 && l > 10 && !strcmp(de->d_name + l - 5, ".yaml"))
            n++;
    }
    closedir(d);
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* Trust                                                                                      */

typedef struct dd_trust {
    uid_t owner;
    int in_files; /* under files/ (the mount's tree): the user's symbolic links are allowed */
    char *err;
    size_t errlen;
} dd_trust_t;

/* Check the entry name in dfd (path for messages); recurse into directories. */
static pdcbb_err_t dd_trust_dir(dd_trust_t *t, int dfd, const char *path, int depth)
{
    DIR *d = fdopendir(dfd);
    if (d == NULL) {
        int e = errno;
        close(dfd);
        drain_errf(t->err, t->errlen, "cannot read %s: %s", path, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    pdcbb_err_t rc = PDCBB_OK;
    struct dirent *de;
    while (rc == PDCBB_OK && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char sub[PATH_MAX], who[128], own[128];
        snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT)
                continue; /* a temporary file that went away */
            drain_errf(t->err, t->errlen, "cannot check %s: %s", sub, strerror(errno));
            rc = pdcbb_err_from_errno(errno);
            break;
        }
        /* files/ holds the job's symbolic links as the job made them; no reader follows them */
        int user_link = t->in_files && S_ISLNK(st.st_mode) && st.st_uid == t->owner;
        if (user_link)
            continue;
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            drain_errf(t->err, t->errlen, "untrusted drain: %s is %s, not a regular file", sub,
                    S_ISLNK(st.st_mode) ? "a symbolic link" : "a special file");
            rc = PDCBB_ERR_PERM;
            break;
        }
        if (st.st_uid != t->owner) {
            drain_errf(t->err, t->errlen, "untrusted drain: %s belongs to %s, but the drain "
                                       "directory belongs to %s: someone else may have changed "
                                       "the drained data",
                    sub, dd_who(st.st_uid, who, sizeof(who)), dd_who(t->owner, own, sizeof(own)));
            rc = PDCBB_ERR_PERM;
            break;
        }
        if (st.st_mode & (S_IWGRP | S_IWOTH)) {
            drain_errf(t->err, t->errlen, "untrusted drain: %s is writable by %s (mode %04o): "
                                       "someone else may have changed the drained data (if you "
                                       "trust it: chmod -R go-w on the drain directory)",
                    sub, (st.st_mode & S_IWOTH) ? "everyone" : "its group",
                    (unsigned)(st.st_mode & 07777));
            rc = PDCBB_ERR_PERM;
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            if (depth >= DD_TRUST_DEPTH)
                continue;
            int sfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sfd < 0) {
                drain_errf(t->err, t->errlen, "cannot read %s: %s", sub, strerror(errno));
                rc = pdcbb_err_from_errno(errno);
                break;
            }
            int was = t->in_files;
            if (depth == 1 &&
                (strcmp(de->d_name, "files") == 0 || strncmp(de->d_name, "files.tmp.", 10) == 0))
                t->in_files = 1;
            rc = dd_trust_dir(t, sfd, sub, depth + 1);
            t->in_files = was;
        }
    }
    closedir(d);
    return rc;
}

pdcbb_err_t pdcbb_drain_trust_check(const char *drain_dir, long manifest_uid, char *warn,
                                    size_t warnlen, char *err, size_t errlen)
{
    char who[128], own[128];
    if (warn != NULL && warnlen > 0)
        warn[0] = '\0';
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    int dfd = open(drain_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        int e = errno;
        drain_errf(err, errlen, "cannot open drain directory %s: %s", drain_dir,
                e == ELOOP ? "it is a symbolic link" : strerror(e));
        return e == ELOOP ? PDCBB_ERR_PERM : pdcbb_err_from_errno(e);
    }
    struct stat st;
    if (fstat(dfd, &st) != 0) {
        int e = errno;
        close(dfd);
        drain_errf(err, errlen, "cannot check %s: %s", drain_dir, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        close(dfd);
        drain_errf(err, errlen, "untrusted drain: %s is writable by %s (mode %04o): someone else "
                             "may have changed the drained data (if you trust it: chmod -R go-w "
                             "%s)",
                drain_dir, (st.st_mode & S_IWOTH) ? "everyone" : "its group",
                (unsigned)(st.st_mode & 07777), drain_dir);
        return PDCBB_ERR_PERM;
    }
    dd_trust_t t = {.owner = st.st_uid, .err = err, .errlen = errlen};
    pdcbb_err_t rc = dd_trust_dir(&t, dfd, drain_dir, 1);
    if (rc != PDCBB_OK)
        return rc;
    if (manifest_uid >= 0 && (uid_t)manifest_uid != st.st_uid)
        drain_errf(warn, warnlen, "%s belongs to %s, but its manifest says the job ran as %s (a "
                               "copy, or not the drain the job wrote)",
                drain_dir, dd_who(st.st_uid, own, sizeof(own)),
                dd_who((uid_t)manifest_uid, who, sizeof(who)));
    else if (getuid() != 0 && getuid() != st.st_uid)
        drain_errf(warn, warnlen, "%s was drained by %s, not by you", drain_dir,
                dd_who(st.st_uid, own, sizeof(own)));
    return PDCBB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Readers: the drain is the job's own                                                        */

pdcbb_err_t pdcbb_drain_reader_uid(const char *owner, long *uid, char *err, size_t errlen)
{
    if (owner == NULL || owner[0] == '\0') {
        *uid = getuid() == 0 ? -1 : (long)getuid();
        return PDCBB_OK;
    }
    struct passwd pw, *res = NULL;
    char pwbuf[4096];
    if (getpwnam_r(owner, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res != NULL) {
        *uid = (long)pw.pw_uid;
        return PDCBB_OK;
    }
    char *e;
    errno = 0;
    unsigned long v = strtoul(owner, &e, 10);
    if (owner[0] >= '0' && owner[0] <= '9' && errno == 0 && *e == '\0' && v <= 0x7fffffffUL) {
        *uid = (long)v;
        return PDCBB_OK;
    }
    drain_errf(err, errlen, "owner '%s' is neither a user name nor a uid", owner);
    return PDCBB_ERR_INVAL;
}

/* The job id a drain directory's name claims: pdcbb.<N> or pdcbb.<N>.<suffix>; 0 if none. */
static uint64_t dd_claimed_job(const char *dir)
{
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    if (strncmp(base, "pdcbb.", 6) != 0 || base[6] < '0' || base[6] > '9')
        return 0;
    char *e;
    errno = 0;
    uint64_t id = strtoull(base + 6, &e, 10);
    return errno == 0 && (*e == '\0' || *e == '.') ? id : 0;
}

pdcbb_err_t pdcbb_drain_dir_latest(const char *dest, uint64_t job_id, uid_t uid, char *out,
                                   size_t outlen)
{
    char prefix[64], path[PATH_MAX];
    time_t best_time = 0;
    bool found = false;
    snprintf(prefix, sizeof(prefix), "pdcbb.%" PRIu64, job_id);
    size_t pl = strlen(prefix);
    DIR *d = opendir(dest);
    if (d == NULL)
        return errno == ENOENT ? PDCBB_ERR_NOT_FOUND : pdcbb_err_from_errno(errno);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, pl) != 0 ||
            (de->d_name[pl] != '\0' && de->d_name[pl] != '.'))
            continue;
        if (snprintf(path, sizeof(path), "%s/%s", strcmp(dest, "/") ? dest : "", de->d_name) >=
            (int)sizeof(path))
            continue;
        pdcbb_drain_identity_t id;
        if (pdcbb_drain_identity_read(path, uid, &id, NULL, 0) == PDCBB_OK &&
            id.job_id == job_id && (!found || id.created > best_time)) {
            snprintf(out, outlen, "%s", path);
            best_time = id.created;
            found = true;
        }
    }
    closedir(d);
    return found ? PDCBB_OK : PDCBB_ERR_NOT_FOUND;
}

void pdcbb_drain_real_hint(const char *dir, uint64_t job_id, uid_t uid, char *out, size_t len)
{
    char parent[PATH_MAX], best[PATH_MAX];
    out[0] = '\0';
    if (job_id == 0 && (job_id = dd_claimed_job(dir)) == 0)
        return;
    snprintf(parent, sizeof(parent), "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash == NULL)
        snprintf(parent, sizeof(parent), ".");
    else if (slash == parent)
        parent[1] = '\0';
    else
        *slash = '\0';
    if (pdcbb_drain_dir_latest(parent, job_id, uid, best, sizeof(best)) == PDCBB_OK &&
        strcmp(best, dir) != 0)
        snprintf(out, len, "; %s job %" PRIu64 "'s drain in this destination is %s",
                 uid == getuid() ? "your" : "that user's", job_id, best);
}

pdcbb_err_t pdcbb_drain_reader_check(const pdcbb_drain_t *m, long expect_uid, const char *how,
                                     char *warn, size_t warnlen, char *err, size_t errlen)
{
    char who[128], own[128], hint[PATH_MAX + 128];
    if (warn != NULL && warnlen > 0)
        warn[0] = '\0';
    pdcbb_err_t rc =
        pdcbb_drain_trust_check(m->dir, (long)m->uid, warn, warnlen, err, errlen);
    if (rc != PDCBB_OK)
        return rc;
    struct stat st;
    if (lstat(m->dir, &st) != 0) {
        drain_errf(err, errlen, "cannot check %s: %s", m->dir, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    /* whose: the reader's own drain, or the one it asked for by name */
    if (expect_uid >= 0 && st.st_uid != (uid_t)expect_uid) {
        bool mine = (uid_t)expect_uid == getuid();
        char oname[64];
        struct passwd pw, *res = NULL;
        char pwbuf[4096];
        if (getpwuid_r(st.st_uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res != NULL)
            snprintf(oname, sizeof(oname), "%s", pw.pw_name);
        else
            snprintf(oname, sizeof(oname), "%ld", (long)st.st_uid);
        pdcbb_drain_real_hint(m->dir, m->job_id, (uid_t)expect_uid, hint, sizeof(hint));
        drain_errf(err, errlen, "untrusted drain: %s belongs to %s, not to %s: it is not %s job's "
                             "drain%s (to read %s's drain on purpose: %s%s)",
                m->dir, dd_who(st.st_uid, own, sizeof(own)),
                mine ? "you" : dd_who((uid_t)expect_uid, who, sizeof(who)),
                mine ? "your" : "that user's", hint, oname, how ? how : "", oname);
        return PDCBB_ERR_PERM;
    }
    /* what: a name that claims another job, or an IDENTITY of another job or run */
    uint64_t claimed = dd_claimed_job(m->dir);
    if (claimed != 0 && claimed != m->job_id) {
        pdcbb_drain_real_hint(m->dir, claimed, st.st_uid, hint, sizeof(hint));
        drain_errf(err, errlen, "untrusted drain: %s is named for job %" PRIu64 " but holds the "
                             "drain of job %" PRIu64 "%s",
                m->dir, claimed, m->job_id, hint);
        return PDCBB_ERR_PERM;
    }
    pdcbb_drain_identity_t id;
    char why[PATH_MAX + 256];
    rc = pdcbb_drain_identity_read(m->dir, st.st_uid, &id, why, sizeof(why));
    if (rc == PDCBB_ERR_NOT_FOUND)
        return PDCBB_OK; /* drains older than IDENTITY, and copies made without it */
    if (rc == PDCBB_ERR_PERM && m->uid != st.st_uid && warn != NULL && warn[0])
        return PDCBB_OK; /* a copy (cp -r) by its owner: warn says so */
    if (rc != PDCBB_OK) {
        drain_errf(err, errlen, "untrusted drain: %s", why);
        return PDCBB_ERR_PERM;
    }
    const char *inst = m->instance ? m->instance : "";
    if (id.job_id != m->job_id || (id.instance[0] && inst[0] && strcmp(id.instance, inst) != 0)) {
        drain_errf(err, errlen, "untrusted drain: %s/%s names job %" PRIu64 " instance %s, but "
                             "its manifest is job %" PRIu64 " instance %s: parts of two jobs",
                m->dir, PDCBB_DRAIN_IDENTITY, id.job_id, id.instance[0] ? id.instance : "none",
                m->job_id, inst[0] ? inst : "none");
        return PDCBB_ERR_PERM;
    }
    return PDCBB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* FAILED reports                                                                             */

static pdcbb_err_t dd_write_file(const char *path, const char *text)
{
    char tmp[PATH_MAX + 32];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return PDCBB_ERR_TOO_BIG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return pdcbb_err_from_errno(errno);
    size_t len = strlen(text);
    int ok = write(fd, text, len) == (ssize_t)len;
    int e = ok ? 0 : (errno ? errno : EIO);
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        return pdcbb_err_from_errno(e);
    }
    return PDCBB_OK;
}

/* The caller's home: $HOME when it is a directory of the caller (not root's $HOME inherited
 * by a process that dropped to the job user), else the passwd entry's. */
static bool dd_home(char *out, size_t len)
{
    const char *h = getenv("HOME");
    struct stat st;
    if (h != NULL && h[0] == '/' && stat(h, &st) == 0 && S_ISDIR(st.st_mode) &&
        st.st_uid == geteuid()) {
        snprintf(out, len, "%s", h);
        return true;
    }
    struct passwd pw, *res = NULL;
    char pwbuf[4096];
    if (getpwuid_r(geteuid(), &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res != NULL &&
        pw.pw_dir != NULL && pw.pw_dir[0] == '/') {
        snprintf(out, len, "%s", pw.pw_dir);
        return true;
    }
    return false;
}

static void dd_report_name(char *out, size_t len, const char *dir, uint64_t job_id,
                           const char *node)
{
    snprintf(out, len, "%s/pdcbb.%" PRIu64 ".%s%s", dir, job_id, node && node[0] ? node : "node",
             PDCBB_DRAIN_FAILED_SUFFIX);
}

pdcbb_err_t pdcbb_drain_report_write(const pdcbb_drain_report_t *r, char *where,
                                     size_t wherelen)
{
    char when[64], text[8192], path[PATH_MAX], home[PATH_MAX];
    if (where != NULL && wherelen > 0)
        where[0] = '\0';
    if (r == NULL || r->destination == NULL || r->job_dir == NULL)
        return PDCBB_ERR_INVAL;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    const char *node = r->node && r->node[0] ? r->node : "node";
    const char *dd = r->drain_dir && r->drain_dir[0] ? r->drain_dir : "none";
    /* One line of text whatever the reason holds (names, a message from a daemon): newlines,
     * control characters and bytes that are not UTF-8 are escaped (common/pdcbb_name.h). */
    const char *why = r->reason ? r->reason : "unknown";
    char reason[PDCBB_DRAIN_ERR_LEN * 2];
    pdcbb_escape(reason, sizeof(reason), why, strlen(why));
    snprintf(text, sizeof(text),
             "%s\n"
             "job: %" PRIu64 "\n"
             "node: %s\n"
             "user: %s\n"
             "uid: %ld\n"
             "instance: %s\n"
             "time: %s\n"
             "reason: %s\n"
             "data: kept on node %s in %s\n"
             "job_dir: %s\n"
             "destination: %s\n"
             "drain_directory: %s\n"
             "recover: on node %s, as %s: pdcbb drain --to %s %s\n"
             "recover_slurm: srun -w %s -N 1 -n 1 pdcbb drain --to %s %s\n",
             DD_REPORT_MAGIC, r->job_id, node, r->user ? r->user : "?", (long)geteuid(),
             r->instance && r->instance[0] ? r->instance : "-", when, reason, node, r->job_dir,
             r->job_dir, r->destination, dd, node, r->user ? r->user : "the job user",
             r->destination, r->job_dir, node, r->destination, r->job_dir);
    dd_report_name(path, sizeof(path), r->destination, r->job_id, node);
    pdcbb_err_t rc = dd_write_file(path, text);
    if (rc == PDCBB_OK) {
        snprintf(where, wherelen, "%s", path);
        return PDCBB_OK;
    }
    PDCBB_WARN("cannot write %s: %s; trying the home directory", path, pdcbb_strerror(rc));
    if (!dd_home(home, sizeof(home)))
        return rc;
    dd_report_name(path, sizeof(path), home, r->job_id, node);
    if ((rc = dd_write_file(path, text)) == PDCBB_OK)
        snprintf(where, wherelen, "%s", path);
    return rc;
}

pdcbb_err_t pdcbb_drain_report_read(const char *path, uint64_t job_id, uid_t uid,
                                    pdcbb_drain_report_info_t *info, char *why, size_t whylen)
{
    char who[128];
    struct stat st;
    if (why != NULL && whylen > 0)
        why[0] = '\0';
    memset(info, 0, sizeof(*info));
    info->uid = -1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        drain_errf(why, whylen, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? PDCBB_ERR_NOT_FOUND : PDCBB_ERR_PERM;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        drain_errf(why, whylen, "%s is not a regular file", path);
        return PDCBB_ERR_INVAL;
    }
    if (st.st_uid != uid) {
        close(fd);
        drain_errf(why, whylen, "%s was written by %s", path,
                   dd_who(st.st_uid, who, sizeof(who)));
        return PDCBB_ERR_PERM;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        close(fd);
        drain_errf(why, whylen, "%s is writable by others (mode %04o)", path,
                   (unsigned)(st.st_mode & 07777));
        return PDCBB_ERR_PERM;
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        close(fd);
        drain_errf(why, whylen, "%s: %s", path, strerror(errno));
        return PDCBB_ERR_IO;
    }
    struct {
        const char *key;
        char *val;
        size_t len;
    } fields[] = {
        {"node: ", info->node, sizeof(info->node)},
        {"user: ", info->user, sizeof(info->user)},
        {"instance: ", info->instance, sizeof(info->instance)},
        {"time: ", info->time, sizeof(info->time)},
        {"reason: ", info->reason, sizeof(info->reason)},
        {"job_dir: ", info->job_dir, sizeof(info->job_dir)},
        {"destination: ", info->destination, sizeof(info->destination)},
        {"drain_directory: ", info->drain_dir, sizeof(info->drain_dir)},
    };
    char line[8192], data[4096] = "";
    bool magic = false, job_seen = false;
    for (int lineno = 0; fgets(line, sizeof(line), f) != NULL; lineno++) {
        line[strcspn(line, "\n")] = '\0';
        if (lineno == 0) {
            magic = strcmp(line, DD_REPORT_MAGIC) == 0;
            if (!magic)
                break;
        } else if (strncmp(line, "job: ", 5) == 0) {
            char *e;
            errno = 0;
            info->job_id = strtoull(line + 5, &e, 10);
            job_seen = errno == 0 && *e == '\0';
        } else if (strncmp(line, "uid: ", 5) == 0) {
            info->uid = strtol(line + 5, NULL, 10);
        } else if (strncmp(line, "data: kept on node ", 19) == 0) {
            snprintf(data, sizeof(data), "%s", line + 19);
        } else {
            for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++)
                if (strncmp(line, fields[k].key, strlen(fields[k].key)) == 0)
                    snprintf(fields[k].val, fields[k].len, "%s", line + strlen(fields[k].key));
        }
    }
    fclose(f);
    if (!magic) {
        drain_errf(why, whylen, "%s is not a pdcbb FAILED report", path);
        return PDCBB_ERR_INVAL;
    }
    if (!job_seen || info->job_id != job_id || (info->uid != -1 && info->uid != (long)uid)) {
        drain_errf(why, whylen, "%s is not a report of job %" PRIu64 " by %s", path, job_id,
                   dd_who(uid, who, sizeof(who)));
        return PDCBB_ERR_INVAL;
    }
    if (strcmp(info->instance, "-") == 0)
        info->instance[0] = '\0';
    /* reports older than the job_dir line: "data: kept on node N in DIR" */
    if (info->job_dir[0] == '\0' && info->node[0] != '\0') {
        size_t nl = strlen(info->node);
        if (strncmp(data, info->node, nl) == 0 && strncmp(data + nl, " in ", 4) == 0)
            snprintf(info->job_dir, sizeof(info->job_dir), "%s", data + nl + 4);
    }
    return PDCBB_OK;
}

static void dd_unlink_mine(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
        unlink(path);
}

void pdcbb_drain_report_remove(const char *destination, uint64_t job_id, const char *node)
{
    char path[PATH_MAX], home[PATH_MAX];
    if (destination != NULL) {
        dd_report_name(path, sizeof(path), destination, job_id, node);
        dd_unlink_mine(path);
    }
    if (dd_home(home, sizeof(home))) {
        dd_report_name(path, sizeof(path), home, job_id, node);
        dd_unlink_mine(path);
    }
}
