/*
 * mount_drain.c - pdcbb_mount_drain: a drained job's files as a read-only filesystem (FUSE),
 * after the job, without daemons (`pdcbb mount DRAIN DIR`, cli/cmd_mount.c; docs/USER-GUIDE.md
 * "After the job: the files").
 *
 *   pdcbb_mount_drain [--foreground] [--log FILE] [--owner USER] [--job ID] [--debug]
 *                     DRAIN MOUNTPOINT
 *
 * What it shows is the drain's list of its files/ (files.manifest, pdcbb_drain_files.h): the
 * tree and every entry's type, mode, size, mtime and link target come from the list, so an
 * entry planted in files/ never shows and a removed one fails with EIO. A file's bytes are
 * read from files/PATH, opened without following any link, and checked whole against the
 * list's CRC-32C before the first byte is served: at its first open, and again at an open after
 * the file on disk changed (another inode, size, mtime or ctime). A file that does not match,
 * or that the drain built from damaged extents, fails open with EIO and a log line naming it.
 * Nothing changes: the filesystem is mounted read-only (ro) and every call that would change
 * something answers EROFS.
 *
 * Before mounting it refuses (exit status 1, one line on standard error) a drain that is not
 * complete, fails the readers' checks (pdcbb_drain_reader_check: nobody but its owner can have
 * changed it, it is the caller's or --owner's, it is the job it claims to be), has no files or a
 * list that does not match its manifest. Then it mounts, goes to the background (unless
 * --foreground) once the mount is ready, and serves until the filesystem is unmounted
 * (fusermount3 -u MOUNTPOINT) or it gets SIGTERM, SIGINT or SIGHUP (it then unmounts). Log
 * lines go to --log FILE, else to standard error in the foreground and to syslog in the
 * background.
 *
 * Threads: fuse_loop_mt serves requests on several threads. The list is only read; each file's
 * check state is under one mutex.
 */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fcntl.h>
#include <fuse3/fuse.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "pdcbb_drain.h"
#include "pdcbb_drain_files.h"

#define PROG       "pdcbb mount"
#define MD_TIMEOUT 86400.0 /* s: nothing in a drain changes, the kernel may cache it all */

/* What the kernel last saw of a file when its bytes were checked. */
typedef struct md_seen {
    int checked;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
} md_seen_t;

typedef struct md_state {
    pdcbb_drain_files_t *list;
    int files_fd;     /* DRAIN/files, opened before the mount */
    mode_t root_mode; /* files/ itself */
    struct timespec root_mtime;
    int64_t *first_child; /* per entry (and [n]: the root): its first entry, -1 none */
    int64_t *next;        /* per entry: the next one in the same directory, -1 none */
    uint32_t *subdirs;    /* per entry (and [n]: the root): directories in it */
    md_seen_t *seen;      /* per entry, under lock */
    pthread_mutex_t lock;
    char drain[PATH_MAX]; /* for log lines */
    uid_t uid;
    gid_t gid;
} md_state_t;

static md_state_t md;
static int md_log_fd = -1;
static bool md_foreground, md_syslog;

/* ------------------------------------------------------------------ log */

static void md_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void md_log(const char *fmt, ...)
{
    char msg[2 * PATH_MAX], line[2 * PATH_MAX + 128], when[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (md_syslog) {
        syslog(LOG_ERR, "%s", msg);
        return;
    }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    int n = snprintf(line, sizeof(line), "%s %s[%ld]: %s\n", when, PROG, (long)getpid(), msg);
    if (n > (int)sizeof(line) - 1)
        n = (int)sizeof(line) - 1;
    if (write(md_log_fd >= 0 ? md_log_fd : STDERR_FILENO, line, (size_t)n) < 0) {
        /* nowhere else to say it */
    }
}

/* ------------------------------------------------------------------ the tree */

/* The entry of a FUSE path ("/a/b"): its index, PDCBB_DRAIN_FILES root as list->n, -1 none. */
static int64_t md_lookup(const char *path)
{
    if (path == NULL || path[0] != '/')
        return -1;
    if (path[1] == '\0')
        return (int64_t)md.list->n;
    return pdcbb_drain_files_find(md.list, path + 1);
}

static void md_fill(int64_t i, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_uid = md.uid;
    st->st_gid = md.gid;
    st->st_ino = (ino_t)i + 2; /* the root is 1 */
    if (i == (int64_t)md.list->n) {
        st->st_ino = 1;
        st->st_mode = S_IFDIR | md.root_mode;
        st->st_nlink = 2 + md.subdirs[i];
        st->st_mtim = st->st_ctim = st->st_atim = md.root_mtime;
        return;
    }
    const pdcbb_drain_file_t *e = &md.list->e[i];
    st->st_mode = (mode_t)e->mode | (e->type == PDCBB_DRAIN_FILE_DIR    ? S_IFDIR
                                     : e->type == PDCBB_DRAIN_FILE_LINK ? S_IFLNK
                                                                        : S_IFREG);
    st->st_nlink = e->type == PDCBB_DRAIN_FILE_DIR ? 2 + md.subdirs[i] : 1;
    st->st_size = (off_t)e->size;
    st->st_blksize = 4096;
    st->st_blocks = (blkcnt_t)((e->size + 511) / 512);
    st->st_mtim.tv_sec = (time_t)(e->mtime_ns / 1000000000u);
    st->st_mtim.tv_nsec = (long)(e->mtime_ns % 1000000000u);
    st->st_ctim = st->st_atim = st->st_mtim;
}

/* ------------------------------------------------------------------ operations */

static void *md_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    cfg->use_ino = 1;
    cfg->kernel_cache = 1; /* a drain does not change under us: keep its pages across opens */
    cfg->entry_timeout = MD_TIMEOUT;
    cfg->attr_timeout = MD_TIMEOUT;
    cfg->negative_timeout = MD_TIMEOUT;
    return NULL;
}

static int md_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    (void)fi;
    int64_t i = md_lookup(path);
    if (i < 0)
        return -ENOENT;
    md_fill(i, st);
    return 0;
}

static int md_readlink(const char *path, char *buf, size_t size)
{
    int64_t i = md_lookup(path);
    if (i < 0)
        return -ENOENT;
    if (i == (int64_t)md.list->n || md.list->e[i].type != PDCBB_DRAIN_FILE_LINK)
        return -EINVAL;
    if (size == 0)
        return -EINVAL;
    snprintf(buf, size, "%s", md.list->e[i].target);
    return 0;
}

static int md_opendir(const char *path, struct fuse_file_info *fi)
{
    (void)fi;
    int64_t i = md_lookup(path);
    if (i < 0)
        return -ENOENT;
    if (i < (int64_t)md.list->n && md.list->e[i].type != PDCBB_DRAIN_FILE_DIR)
        return -ENOTDIR;
    return 0;
}

static int md_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off;
    (void)fi;
    (void)flags;
    int64_t i = md_lookup(path);
    if (i < 0)
        return -ENOENT;
    if (i < (int64_t)md.list->n && md.list->e[i].type != PDCBB_DRAIN_FILE_DIR)
        return -ENOTDIR;
    struct stat st;
    md_fill(i, &st);
    fill(buf, ".", &st, 0, 0);
    fill(buf, "..", NULL, 0, 0);
    for (int64_t k = md.first_child[i]; k >= 0; k = md.next[k]) {
        md_fill(k, &st);
        if (fill(buf, md.list->e[k].name, &st, 0, 0) != 0)
            return -ENOMEM; /* offset 0 mode: the whole directory fits, or nothing */
    }
    return 0;
}

static bool md_same(const md_seen_t *s, const struct stat *st)
{
    return s->checked && s->dev == st->st_dev && s->ino == st->st_ino && s->size == st->st_size &&
           s->mtime.tv_sec == st->st_mtim.tv_sec && s->mtime.tv_nsec == st->st_mtim.tv_nsec &&
           s->ctime.tv_sec == st->st_ctim.tv_sec && s->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static int md_open(const char *path, struct fuse_file_info *fi)
{
    int64_t i = md_lookup(path);
    if (i < 0)
        return -ENOENT;
    if (i == (int64_t)md.list->n || md.list->e[i].type == PDCBB_DRAIN_FILE_DIR)
        return -EISDIR;
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
        return -EROFS;
    const pdcbb_drain_file_t *e = &md.list->e[i];
    if (e->type != PDCBB_DRAIN_FILE_REG)
        return -ELOOP;
    if (e->damaged) {
        md_log("files/%s: the drain built it from damaged extents of its object (those bytes are "
               "not the job's; pdcbb verify %s lists them): refused with EIO",
               e->path, md.drain);
        return -EIO;
    }
    int fd = pdcbb_drain_files_open(md.files_fd, e->path, O_RDONLY);
    if (fd < 0) {
        int err = errno;
        md_log("files/%s: cannot open it in the drain: %s: refused with EIO", e->path,
               err == ELOOP ? "a symbolic link is in its way" : strerror(err));
        return -EIO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        md_log("files/%s: cannot check it: %s: refused with EIO", e->path, strerror(err));
        return -EIO;
    }
    pthread_mutex_lock(&md.lock);
    bool known = md_same(&md.seen[i], &st);
    pthread_mutex_unlock(&md.lock);
    if (!known) { /* every byte against the list before any is served */
        char why[512];
        pdcbb_err_t rc = pdcbb_drain_file_check(fd, e, NULL, why, sizeof(why));
        if (rc != PDCBB_OK) {
            close(fd);
            md_log("files/%s: does not match the drain's list of files: %s: refused with EIO "
                   "(pdcbb verify %s says what else differs)",
                   e->path, why, md.drain);
            return -EIO;
        }
        pthread_mutex_lock(&md.lock);
        md.seen[i] = (md_seen_t){.checked = 1,
                                 .dev = st.st_dev,
                                 .ino = st.st_ino,
                                 .size = st.st_size,
                                 .mtime = st.st_mtim,
                                 .ctime = st.st_ctim};
        pthread_mutex_unlock(&md.lock);
    }
    fi->fh = (uint64_t)fd;
    fi->keep_cache = known;
    return 0;
}

static int md_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread((int)fi->fh, buf + got, size - got, off + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return got > 0 ? (int)got : -errno;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (int)got;
}

static int md_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    close((int)fi->fh);
    return 0;
}

static int md_statfs(const char *path, struct statvfs *sv)
{
    (void)path;
    memset(sv, 0, sizeof(*sv));
    sv->f_bsize = 4096;
    sv->f_frsize = 4096;
    sv->f_blocks = (fsblkcnt_t)((md.list->bytes + 4095) / 4096);
    sv->f_files = (fsfilcnt_t)md.list->n + 1;
    sv->f_namemax = NAME_MAX;
    sv->f_flag = ST_RDONLY | ST_NOSUID | ST_NODEV;
    return 0;
}

/* Everything that would change the drain. */
static int md_rofs_mknod(const char *p, mode_t m, dev_t d)
{
    (void)p, (void)m, (void)d;
    return -EROFS;
}
static int md_rofs_mkdir(const char *p, mode_t m)
{
    (void)p, (void)m;
    return -EROFS;
}
static int md_rofs_path(const char *p)
{
    (void)p;
    return -EROFS;
}
static int md_rofs_two(const char *a, const char *b)
{
    (void)a, (void)b;
    return -EROFS;
}
static int md_rofs_rename(const char *a, const char *b, unsigned int flags)
{
    (void)a, (void)b, (void)flags;
    return -EROFS;
}
static int md_rofs_chmod(const char *p, mode_t m, struct fuse_file_info *fi)
{
    (void)p, (void)m, (void)fi;
    return -EROFS;
}
static int md_rofs_chown(const char *p, uid_t u, gid_t g, struct fuse_file_info *fi)
{
    (void)p, (void)u, (void)g, (void)fi;
    return -EROFS;
}
static int md_rofs_truncate(const char *p, off_t s, struct fuse_file_info *fi)
{
    (void)p, (void)s, (void)fi;
    return -EROFS;
}
static int md_rofs_write(const char *p, const char *b, size_t n, off_t o, struct fuse_file_info *fi)
{
    (void)p, (void)b, (void)n, (void)o, (void)fi;
    return -EROFS;
}
static int md_rofs_create(const char *p, mode_t m, struct fuse_file_info *fi)
{
    (void)p, (void)m, (void)fi;
    return -EROFS;
}
static int md_rofs_utimens(const char *p, const struct timespec tv[2], struct fuse_file_info *fi)
{
    (void)p, (void)tv, (void)fi;
    return -EROFS;
}
static int md_rofs_setxattr(const char *p, const char *n, const char *v, size_t s, int f)
{
    (void)p, (void)n, (void)v, (void)s, (void)f;
    return -EROFS;
}
static int md_rofs_removexattr(const char *p, const char *n)
{
    (void)p, (void)n;
    return -EROFS;
}
static int md_rofs_fallocate(const char *p, int mode, off_t o, off_t l, struct fuse_file_info *fi)
{
    (void)p, (void)mode, (void)o, (void)l, (void)fi;
    return -EROFS;
}

static const struct fuse_operations md_ops = {
    .init = md_init,
    .getattr = md_getattr,
    .readlink = md_readlink,
    .opendir = md_opendir,
    .readdir = md_readdir,
    .open = md_open,
    .read = md_read,
    .release = md_release,
    .statfs = md_statfs,
    .mknod = md_rofs_mknod,
    .mkdir = md_rofs_mkdir,
    .unlink = md_rofs_path,
    .rmdir = md_rofs_path,
    .symlink = md_rofs_two,
    .link = md_rofs_two,
    .rename = md_rofs_rename,
    .chmod = md_rofs_chmod,
    .chown = md_rofs_chown,
    .truncate = md_rofs_truncate,
    .write = md_rofs_write,
    .create = md_rofs_create,
    .utimens = md_rofs_utimens,
    .setxattr = md_rofs_setxattr,
    .removexattr = md_rofs_removexattr,
    .fallocate = md_rofs_fallocate,
};

/* ------------------------------------------------------------------ start */

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb_mount_drain [--foreground] [--log FILE] [--owner USER] [--job ID]\n"
            "                         [--debug] DRAIN MOUNTPOINT\n"
            "\n"
            "Show the files of a drained job (DRAIN/files) read-only at MOUNTPOINT, every\n"
            "file checked against the drain's checksums before it is read. Started by\n"
            "`pdcbb mount` (see pdcbb mount --help); unmount with fusermount3 -u MOUNTPOINT.\n");
}

/* Index the tree: each directory's entries, and how many of them are directories. */
static int md_index(void)
{
    uint64_t n = md.list->n;
    md.first_child = malloc((n + 1) * sizeof(*md.first_child));
    md.next = malloc((n + 1) * sizeof(*md.next));
    md.subdirs = calloc(n + 1, sizeof(*md.subdirs));
    md.seen = calloc(n + 1, sizeof(*md.seen));
    if (md.first_child == NULL || md.next == NULL || md.subdirs == NULL || md.seen == NULL)
        return -1;
    for (uint64_t i = 0; i <= n; i++)
        md.first_child[i] = md.next[i] = -1;
    for (uint64_t k = n; k-- > 0;) { /* backwards: each directory's entries in path order */
        int64_t p = md.list->e[k].parent >= 0 ? md.list->e[k].parent : (int64_t)n;
        md.next[k] = md.first_child[p];
        md.first_child[p] = (int64_t)k;
        if (md.list->e[k].type == PDCBB_DRAIN_FILE_DIR)
            md.subdirs[p]++;
    }
    return 0;
}

/* Open and check the drain (and its files) as every reader does; 0, or 1 after saying why. */
static int md_open_drain(const char *dir, const char *owner, uint64_t job)
{
    char err[PDCBB_DRAIN_ERR_LEN] = "", warn[PDCBB_DRAIN_ERR_LEN] = "", path[PATH_MAX];
    long uid;
    if (pdcbb_drain_reader_uid(owner, &uid, err, sizeof(err)) != PDCBB_OK) {
        fprintf(stderr, PROG ": --owner: %s\n", err);
        return 1;
    }
    if (job != 0) {
        if (pdcbb_drain_dir_latest(dir, job, uid >= 0 ? (uid_t)uid : getuid(), path,
                                   sizeof(path)) != PDCBB_OK) {
            fprintf(stderr,
                    PROG ": no drain of job %" PRIu64 " of %s in %s (pdcbb why --job %" PRIu64
                         " %s says what is there)\n",
                    job, owner ? owner : "yours", dir, job, dir);
            return 1;
        }
        dir = path;
    }
    pdcbb_drain_t *m = NULL;
    pdcbb_err_t rc = pdcbb_drain_open(dir, 0, &m, err, sizeof(err));
    if (rc != PDCBB_OK) {
        if (strncmp(err, "incomplete drain", 16) == 0)
            fprintf(stderr,
                    PROG ": %s: %s; only a complete drain can be mounted (pdcbb why %s says "
                         "what became of it)\n",
                    dir, err, dir);
        else
            fprintf(stderr, PROG ": %s\n", err[0] ? err : pdcbb_strerror(rc));
        return 1;
    }
    rc = pdcbb_drain_reader_check(m, uid, "--owner ", warn, sizeof(warn), err, sizeof(err));
    if (rc == PDCBB_OK && warn[0])
        fprintf(stderr, PROG ": WARNING: %s\n", warn);
    if (rc == PDCBB_OK)
        rc = pdcbb_drain_files_load(m, &md.list, err, sizeof(err));
    if (rc != PDCBB_OK) {
        fprintf(stderr, PROG ": %s\n", err);
        pdcbb_drain_free(m);
        return 1;
    }
    if (realpath(m->dir, md.drain) == NULL) /* for log lines, after the daemon's chdir("/") */
        snprintf(md.drain, sizeof(md.drain), "%s", m->dir);
    snprintf(path, sizeof(path), "%s/%s", m->dir, PDCBB_DRAIN_FILES_DIR);
    pdcbb_drain_free(m);
    md.files_fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (md.files_fd < 0 || fstat(md.files_fd, &st) != 0) {
        fprintf(stderr, PROG ": %s: cannot open: %s\n", path, strerror(errno));
        return 1;
    }
    md.root_mode = st.st_mode & 07777;
    md.root_mtime = st.st_mtim;
    if (md_index() != 0) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"foreground", no_argument, NULL, 'f'},
        {"log", required_argument, NULL, 'L'},
        {"owner", required_argument, NULL, 'o'},
        {"job", required_argument, NULL, 'j'},
        {"debug", no_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *log_path = NULL, *owner = NULL;
    uint64_t job = 0;
    bool debug = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":fdh", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            md_foreground = true;
            break;
        case 'L':
            log_path = optarg;
            break;
        case 'o':
            owner = optarg;
            break;
        case 'j': {
            char *end;
            errno = 0;
            job = strtoull(optarg, &end, 10);
            if (errno || *end || job == 0 || optarg[0] < '0' || optarg[0] > '9') {
                fprintf(stderr, PROG ": --job %s: not a job id\n", optarg);
                return 2;
            }
            break;
        }
        case 'd':
            debug = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            fprintf(stderr, PROG ": %s '%s' (see pdcbb mount --help)\n",
                    c == ':' ? "option needs a value" : "unknown option", argv[optind - 1]);
            return 2;
        }
    }
    if (argc - optind != 2) {
        usage(stderr);
        return 2;
    }
    const char *drain = argv[optind], *mnt = argv[optind + 1];
    char real_mnt[PATH_MAX];
    struct stat st;
    if (realpath(mnt, real_mnt) == NULL || stat(real_mnt, &st) != 0) {
        fprintf(stderr, PROG ": mount point %s: %s\n", mnt, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, PROG ": mount point %s: not a directory\n", mnt);
        return 1;
    }
    if (!md_foreground)
        closefrom(3); /* a daemon keeps none of its caller's descriptors (a test's pipes) */
    md.uid = getuid();
    md.gid = getgid();
    pthread_mutex_init(&md.lock, NULL);
    if (md_open_drain(drain, owner, job) != 0)
        return 1;
    if (log_path != NULL) {
        md_log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (md_log_fd < 0) {
            fprintf(stderr, PROG ": --log %s: %s\n", log_path, strerror(errno));
            return 1;
        }
    }

    /* mount options: read-only, the kernel checks modes, named after the drain in mtab */
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    char *fopts = NULL, fsname[PATH_MAX + 16];
    snprintf(fsname, sizeof(fsname), "fsname=pdcbb-drain:%s", md.drain);
    if (fuse_opt_add_arg(&args, "pdcbb_mount_drain") != 0 ||
        fuse_opt_add_opt(&fopts, "ro,default_permissions,subtype=pdcbb") != 0 ||
        fuse_opt_add_opt_escaped(&fopts, fsname) != 0 || fuse_opt_add_arg(&args, "-o") != 0 ||
        fuse_opt_add_arg(&args, fopts) != 0 || (debug && fuse_opt_add_arg(&args, "-d") != 0)) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    free(fopts);
    struct fuse *f = fuse_new(&args, &md_ops, sizeof(md_ops), NULL);
    fuse_opt_free_args(&args);
    if (f == NULL) {
        fprintf(stderr, PROG ": cannot start a FUSE filesystem\n");
        return 1;
    }
    if (fuse_mount(f, real_mnt) != 0) {
        fprintf(stderr,
                PROG ": cannot mount on %s (a directory of yours is needed; fusermount3 and "
                     "/dev/fuse must be there)\n",
                mnt);
        fuse_destroy(f);
        return 1;
    }
    if (fuse_set_signal_handlers(fuse_get_session(f)) != 0) {
        fprintf(stderr, PROG ": cannot set signal handlers\n");
        fuse_unmount(f);
        fuse_destroy(f);
        return 1;
    }
    if (log_path == NULL && !md_foreground) {
        openlog("pdcbb-mount", LOG_PID, LOG_USER);
        md_syslog = true;
    }
    md_log("%s: %" PRIu64 " entries (%" PRIu64 " files, %" PRIu64 " bytes) mounted read-only at "
           "%s",
           md.drain, md.list->n, md.list->nfiles, md.list->bytes, real_mnt);
    if (fuse_daemonize(md_foreground) != 0) {
        fprintf(stderr, PROG ": cannot go to the background\n");
        fuse_remove_signal_handlers(fuse_get_session(f));
        fuse_unmount(f);
        fuse_destroy(f);
        return 1;
    }
    struct fuse_loop_config cfg = {.clone_fd = 0, .max_idle_threads = 10};
    int rc = fuse_loop_mt(f, &cfg);
    fuse_remove_signal_handlers(fuse_get_session(f));
    fuse_unmount(f);
    fuse_destroy(f);
    md_log("%s: unmounted from %s", md.drain, real_mnt);
    close(md.files_fd);
    pdcbb_drain_files_free(md.list);
    free(md.first_child);
    free(md.next);
    free(md.subdirs);
    free(md.seen);
    return rc >= 0 ? 0 : 1; /* unmounted, or a signal that ended it */
}
