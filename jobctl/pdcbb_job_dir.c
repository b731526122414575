/*
 * pdcbb_job_dir.c - the job directory on the node (pdcbb_job.h, pdcbb_job_internal.h).
 *
 * Owns its name ("<local_root>/pdcbb.<job id>"), creating it safely (the local root made
 * root's with mode 01733 when running as root, a squatter of the name moved aside, every step
 * after the mkdir through descriptors), the capacity check against the site maximum and the
 * free space, and removing the tree again (as the job user, never under a running daemon).
 */
#include "pdcbb_job_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "pdcbb_log.h"

/* ---------------------------------------------------------------------------------------- */
/* Name and creation                                                                        */
/* ---------------------------------------------------------------------------------------- */

pdcbb_err_t pdcbb_job_dir(const pdcbb_job_t *job, char *out, size_t len)
{
    if (job == NULL || out == NULL || len == 0)
        return PDCBB_ERR_INVAL;
    const char *root = job_root(job);
    if (root[0] == '\0')
        return PDCBB_ERR_INVAL;
    /* "/" + "pdcbb.N": avoid "//pdcbb.N" for a root of "/" or "dir/" */
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/')
        rl--;
    int n = snprintf(out, len, "%.*s%spdcbb.%" PRIu64, (int)rl, root,
                     root[rl - 1] == '/' ? "" : "/", job->job_id);
    return (n < 0 || (size_t)n >= len) ? PDCBB_ERR_TOO_BIG : PDCBB_OK;
}

/* A directory as a descriptor plus a stream on a duplicate of it (the epilog, the drain). */
int job_dir_open(const char *dir, DIR **d)
{
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0)
        return -1;
    int fd = dup(dirfd);
    *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (*d == NULL) {
        if (fd >= 0)
            close(fd);
        close(dirfd);
        return -1;
    }
    return dirfd;
}

/* mkdir -p with mode 0755 for every component we create. */
static pdcbb_err_t job_mkdir_p(const char *path, char *err, size_t errlen)
{
    char buf[PATH_MAX];
    struct stat st;
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return PDCBB_ERR_TOO_BIG;
    if (stat(buf, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return PDCBB_OK;
        pdcbb_errf(err, errlen, "local root %s exists but is not a directory", path);
        return PDCBB_ERR_EXISTS;
    }
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, 0755) == 0) {
            chmod(buf, 0755); /* whatever the umask */
            PDCBB_INFO("created %s", buf);
        } else if (errno != EEXIST) {
            int e = errno;
            pdcbb_errf(err, errlen, "cannot create local root %s: %s", buf, strerror(e));
            return pdcbb_err_from_errno(e);
        }
        *p = saved;
        if (saved == '\0')
            break;
    }
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        pdcbb_errf(err, errlen, "local root %s is not a directory", path);
        return PDCBB_ERR_IO;
    }
    return PDCBB_OK;
}

/*
 * As root: local_root is root's, mode 01733 (sticky, writable and searchable by all, listable
 * by root only), so that each job user can remove its own job directory after a late drain
 * (`pdcbb drain`) but nobody can rename or remove another user's, and users cannot list
 * which jobs run on the node. A root-owned local root with another mode is set to 01733 (an
 * existing 01777 is kept); one owned by anybody else is refused: its owner could move job
 * directories around.
 */
static pdcbb_err_t job_root_secure(int rootfd, const char *root, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(rootfd, &st) != 0) {
        int e = errno;
        pdcbb_errf(err, errlen, "cannot stat local root %s: %s", root, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    if (st.st_uid != 0) {
        pdcbb_errf(err, errlen, "local root %s is owned by uid %ld, not root: refusing to put job "
                              "directories there (make it root's, mode 1733)",
                 root, (long)st.st_uid);
        return PDCBB_ERR_PERM;
    }
    mode_t m = st.st_mode & 07777;
    if (m == 01733 || m == 01777)
        return PDCBB_OK;
    if (fchmod(rootfd, 01733) != 0) {
        int e = errno;
        pdcbb_errf(err, errlen, "cannot set local root %s to mode 1733: %s", root, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    PDCBB_INFO("local root %s: mode %04o set to 1733", root, (unsigned)m);
    return PDCBB_OK;
}

/*
 * As root: a "pdcbb.<job>" that is not a directory of the job user with mode 0700 was put
 * there by somebody else (local_root is writable by all): it is never used, but renamed to
 * "pdcbb-moved.<job>.<uid>.<time>" beside it (a rename inside the directory follows no link),
 * where `pdcbb admin stranded` lists it for the administrator.
 */
static pdcbb_err_t job_dir_move_squatter(const pdcbb_job_t *job, int rootfd, const char *name,
                                         const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (fstatat(rootfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return PDCBB_OK; /* nothing there (or the mkdir will say what is wrong) */
    if (S_ISDIR(st.st_mode) && st.st_uid == job->uid && (st.st_mode & 07777) == 0700)
        return PDCBB_OK; /* the job's own (a restart) */
    char aside[128];
    snprintf(aside, sizeof(aside), "pdcbb-moved.%" PRIu64 ".%ld.%lld", job->job_id,
             (long)st.st_uid, (long long)time(NULL));
    if (renameat(rootfd, name, rootfd, aside) != 0) {
        int e = errno;
        pdcbb_errf(err, errlen, "%s exists (owned by uid %ld, not the job user's directory) and "
                              "cannot be moved aside: %s",
                 dir, (long)st.st_uid, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    PDCBB_ERROR("job %" PRIu64 ": %s was not the job's (uid %ld, mode %04o, %s): moved aside to "
                "%s",
                job->job_id, dir, (long)st.st_uid, (unsigned)(st.st_mode & 07777),
                S_ISDIR(st.st_mode) ? "a directory" : "not a directory", aside);
    return PDCBB_OK;
}

/*
 * Create (or accept) the job directory; returns an O_DIRECTORY descriptor of it in *dirfd.
 * Everything after the mkdir goes through descriptors, so a rename or a link planted in
 * local_root cannot redirect the chown.
 */
pdcbb_err_t job_dir_create(const pdcbb_job_t *job, const char *dir, int *dirfd, char *err,
                           size_t errlen)
{
    const char *root = job_root(job);
    const char *name = strrchr(dir, '/') + 1;
    pdcbb_err_t rc;
    int rootfd = -1, fd = -1;
    bool created = false;
    struct stat st;

    if (root[0] != '/') {
        pdcbb_errf(err, errlen, "local root '%s' is not an absolute path", root);
        return PDCBB_ERR_CONFIG;
    }
    if ((rc = job_mkdir_p(root, err, errlen)) != PDCBB_OK)
        return rc;
    rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        rc = pdcbb_err_from_errno(errno);
        pdcbb_errf(err, errlen, "cannot open local root %s: %s", root, strerror(errno));
        goto done;
    }
    if (geteuid() == 0 && (rc = job_root_secure(rootfd, root, err, errlen)) != PDCBB_OK)
        goto done;
    if (geteuid() == 0 && (rc = job_dir_move_squatter(job, rootfd, name, dir, err, errlen)) !=
                              PDCBB_OK)
        goto done;
    if (mkdirat(rootfd, name, 0700) == 0) {
        created = true;
    } else if (errno != EEXIST) {
        rc = pdcbb_err_from_errno(errno);
        pdcbb_errf(err, errlen, "cannot create job directory %s: %s", dir, strerror(errno));
        goto done;
    }
    if (fstatat(rootfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = pdcbb_err_from_errno(errno);
        pdcbb_errf(err, errlen, "cannot stat job directory %s: %s", dir, strerror(errno));
        goto done;
    }
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
        rc = PDCBB_ERR_EXISTS;
        pdcbb_errf(err, errlen, "job directory %s exists and is %s, not a directory", dir,
                 S_ISLNK(st.st_mode) ? "a symbolic link" : "something else");
        goto done;
    }
    fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        rc = pdcbb_err_from_errno(errno);
        pdcbb_errf(err, errlen, "cannot open job directory %s: %s", dir, strerror(errno));
        goto done;
    }
    if (created) {
        if (fchmod(fd, 0700) != 0 || (geteuid() == 0 && fchown(fd, job->uid, job->gid) != 0)) {
            rc = pdcbb_err_from_errno(errno);
            pdcbb_errf(err, errlen, "cannot give job directory %s to uid %ld: %s", dir,
                     (long)job->uid, strerror(errno));
            goto done;
        }
        PDCBB_INFO("job %" PRIu64 ": created %s", job->job_id, dir);
    } else {
        if (st.st_uid != job->uid) {
            rc = PDCBB_ERR_PERM;
            pdcbb_errf(err, errlen, "job directory %s exists but is owned by uid %ld, not the "
                                  "job user (uid %ld)",
                     dir, (long)st.st_uid, (long)job->uid);
            goto done;
        }
        if ((st.st_mode & 07777) != 0700) {
            rc = PDCBB_ERR_PERM;
            pdcbb_errf(err, errlen, "job directory %s exists with mode %04o (expected 0700)", dir,
                     (unsigned)(st.st_mode & 07777));
            goto done;
        }
        PDCBB_INFO("job %" PRIu64 ": reusing %s", job->job_id, dir);
    }
    *dirfd = fd;
    fd = -1;
    rc = PDCBB_OK;
done:
    if (fd >= 0)
        close(fd);
    if (rootfd >= 0)
        close(rootfd);
    return rc;
}

/* Refuse a capacity above the site maximum or the free space of the filesystem. */
pdcbb_err_t job_check_capacity(const pdcbb_job_t *job, int dirfd, char *err, size_t errlen)
{
    char a[32], b[32];
    uint64_t cap = job->cfg.capacity;
    if (job->cfg.max_capacity != 0 && cap > job->cfg.max_capacity) {
        pdcbb_errf(err, errlen, "requested capacity %s exceeds the site maximum %s (max_capacity)",
                 pdcbb_format_size(cap, a, sizeof(a)),
                 pdcbb_format_size(job->cfg.max_capacity, b, sizeof(b)));
        return PDCBB_ERR_NOSPC;
    }
    struct statvfs vfs;
    if (fstatvfs(dirfd, &vfs) != 0) {
        int e = errno;
        pdcbb_errf(err, errlen, "cannot get the free space under %s: %s", job_root(job),
                 strerror(e));
        return pdcbb_err_from_errno(e);
    }
    uint64_t avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
    uint64_t stores = (uint64_t)job->cfg.servers_per_node * PDCBB_STORE_AHEAD;
    if (cap > avail || stores > avail - cap) {
        char c[32];
        pdcbb_errf(err, errlen,
                 "requested capacity %s plus %s for the metadata of %u daemon(s) exceeds the "
                 "free space %s (%.1fG) under %s",
                 pdcbb_format_size(cap, a, sizeof(a)), pdcbb_format_size(stores, c, sizeof(c)),
                 job->cfg.servers_per_node, pdcbb_format_size(avail, b, sizeof(b)),
                 (double)avail / (1024.0 * 1024 * 1024), job_root(job));
        return PDCBB_ERR_NOSPC;
    }
    return PDCBB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Removal                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/* nftw has no user pointer: the removal keeps its state here (the module is not thread-safe). */
static int job_rm_errno;
static char job_rm_path[PATH_MAX];

static int job_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    if (ftw->level == 0)
        return 0; /* the job directory itself: removed by the caller, who may write local_root */
    int r = (flag == FTW_DP || flag == FTW_D) ? rmdir(path) : unlink(path);
    if (r != 0 && errno != ENOENT && job_rm_errno == 0) {
        job_rm_errno = errno;
        snprintf(job_rm_path, sizeof(job_rm_path), "%s", path);
    }
    return 0; /* keep going: remove as much as possible */
}

typedef struct job_rm_arg {
    const char *dir;
} job_rm_arg_t;

static pdcbb_err_t job_rm_tree(void *arg)
{
    const job_rm_arg_t *a = arg;
    job_rm_errno = 0;
    job_rm_path[0] = '\0';
    if (nftw(a->dir, job_rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0 && job_rm_errno == 0) {
        job_rm_errno = errno ? errno : EIO;
        snprintf(job_rm_path, sizeof(job_rm_path), "%s", a->dir);
    }
    return pdcbb_err_from_errno(job_rm_errno);
}

pdcbb_err_t pdcbb_job_remove_dir(const pdcbb_job_t *job, char *err, size_t errlen)
{
    char dir[PATH_MAX], rroot[PATH_MAX], rdir[PATH_MAX];
    job_creds_t cr;
    struct stat st;
    pdcbb_err_t rc;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (job == NULL)
        return PDCBB_ERR_INVAL;
    if ((rc = pdcbb_job_dir(job, dir, sizeof(dir))) != PDCBB_OK) {
        pdcbb_errf(err, errlen, "cannot name the job directory under '%s'", job_root(job));
        return rc;
    }
    if (lstat(dir, &st) != 0) {
        if (errno == ENOENT)
            return PDCBB_OK; /* nothing to remove */
        rc = pdcbb_err_from_errno(errno);
        pdcbb_errf(err, errlen, "cannot remove %s: %s", dir, strerror(errno));
        PDCBB_ERROR("job %" PRIu64 ": %s", job->job_id, err ? err : "");
        return rc;
    }
    /* the directory itself must be a real directory directly under the real local root */
    if (!S_ISDIR(st.st_mode) || realpath(job_root(job), rroot) == NULL ||
        realpath(dir, rdir) == NULL) {
        pdcbb_errf(err, errlen, "refusing to remove %s: not a directory under %s", dir,
                 job_root(job));
        PDCBB_ERROR("job %" PRIu64 ": %s", job->job_id, err ? err : "");
        return PDCBB_ERR_PERM;
    }
    size_t rl = strlen(rroot);
    const char *rest = rdir + rl;
    if (strcmp(rroot, "/") == 0)
        rest = rdir;
    if (strncmp(rdir, rroot, rl) != 0 || rest[0] != '/' || strchr(rest + 1, '/') != NULL ||
        strncmp(rest + 1, "pdcbb.", 6) != 0) {
        pdcbb_errf(err, errlen, "refusing to remove %s: it resolves to %s, not under %s", dir,
                 rdir, rroot);
        PDCBB_ERROR("job %" PRIu64 ": %s", job->job_id, err ? err : "");
        return PDCBB_ERR_PERM;
    }
    /* never pull the directory from under a running daemon */
    long rank_lo, rank_hi;
    job_node_ranks(job, &rank_lo, &rank_hi);
    size_t nrun = job_find_running(job, rdir, rank_lo, rank_hi, NULL, 0);
    if (nrun > 0) {
        pdcbb_errf(err, errlen, "refusing to remove %s: %zu daemon%s of the job %s still running "
                              "(run the epilog first)",
                 rdir, nrun, nrun == 1 ? "" : "s", nrun == 1 ? "is" : "are");
        PDCBB_ERROR("job %" PRIu64 ": %s", job->job_id, err ? err : "");
        return PDCBB_ERR_BUSY;
    }
    if ((rc = job_creds_init(job, &cr, err, errlen)) != PDCBB_OK)
        return rc;
    job_rm_arg_t a = {.dir = rdir};
    /* as root the tree is removed as the user: it is the user's tree */
    rc = job_as_user(&cr, job_rm_tree, &a);
    job_creds_free(&cr);
    if (rc == PDCBB_OK && rmdir(rdir) != 0 && errno != ENOENT) {
        int e = errno;
        pdcbb_errf(err, errlen, "cannot remove %s: %s", rdir, strerror(e));
        PDCBB_ERROR("job %" PRIu64 ": %s", job->job_id, err ? err : "");
        return pdcbb_err_from_errno(e);
    }
    if (rc != PDCBB_OK) {
        if (job_rm_path[0] != '\0' && !cr.drop)
            pdcbb_errf(err, errlen, "cannot remove %s: %s", job_rm_path, strerror(job_rm_errno));
        else
            pdcbb_errf(err, errlen, "cannot remove %s completely: %s", rdir, pdcbb_strerror(rc));
        PDCBB_ERROR("job %" PRIu64 ": %s", job->job_id, err ? err : "");
        return rc;
    }
    PDCBB_INFO("job %" PRIu64 ": removed %s", job->job_id, rdir);
    return PDCBB_OK;
}
