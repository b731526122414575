/*
 * pdcbb_job.c - per-node prolog and epilog of a pdcbb job (pdcbb_job.h).
 *
 * Owns everything that happens to a node between "the job was allocated here" and "the job's
 * daemons are gone": creating and checking the job directory, the capacity check, writing the
 * token and the resolved config, starting the daemons (double fork, privilege drop, ready pipe),
 * stopping them again (pid files plus a /proc scan, SIGTERM then SIGKILL), and removing the
 * directory when asked.
 *
 * When this runs as root for another user (the Slurm prolog), every file operation inside the
 * user-owned job directory that could follow a link the user planted (writing token, config and
 * prolog.error, removing the tree) runs in a short-lived child that has dropped to the job user;
 * root itself only creates the directory, checks it through a descriptor, reads pid files with
 * O_NOFOLLOW and unlinks names. Signals go only to processes that look like pdc_bbd of this job.
 */
#include "pdcbb_job.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pdcbb_drain.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_log.h"

/* How long the epilog waits for a process after SIGKILL (D state, slow reaping). */
#define JOB_KILL_WAIT 5.0
/* Poll interval while waiting for processes to exit. */
#define JOB_POLL_NS (10 * 1000 * 1000L)
/* Longest line a daemon may write on its ready pipe that we keep. */
#define JOB_READY_LINE 512

/* Set by pdcbb_job_set_interrupt_flag: a non-zero value cuts the prolog's wait short. */
static volatile sig_atomic_t *job_interrupt;

void pdcbb_job_set_interrupt_flag(volatile sig_atomic_t *flag)
{
    job_interrupt = flag;
}

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                              */
/* ---------------------------------------------------------------------------------------- */

/* Append "; <message>" (or just the message when err is empty). */
static void job_note(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void job_note(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    size_t used = strnlen(err, errlen);
    if (used + 1 >= errlen)
        return;
    if (used > 0) {
        int n = snprintf(err + used, errlen - used, "; ");
        if (n < 0 || (size_t)n >= errlen - used)
            return;
        used += (size_t)n;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + used, errlen - used, fmt, ap);
    va_end(ap);
}

static double job_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void job_nap(void)
{
    struct timespec ts = {0, JOB_POLL_NS};
    nanosleep(&ts, NULL);
}

/* The effective local root: job->local_root overrides cfg.local_root. */
static const char *job_root(const pdcbb_job_t *job)
{
    return job->local_root[0] != '\0' ? job->local_root : job->cfg.local_root;
}

/* Append a NUL-terminated string to buf (async-signal-safe, truncates). */
static void job_cat(char *buf, size_t len, const char *s)
{
    size_t used = strnlen(buf, len);
    while (*s != '\0' && used + 1 < len)
        buf[used++] = *s++;
    buf[used] = '\0';
}

/* Decimal text of v into buf (async-signal-safe). */
static void job_utoa(unsigned long long v, char *buf, size_t len)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0 && n < sizeof(tmp));
    size_t i = 0;
    while (n > 0 && i + 1 < len)
        buf[i++] = tmp[--n];
    buf[i] = '\0';
}

/* strerror that is async-signal-safe (a static description, never translated). */
static const char *job_strerror(int e)
{
    const char *s = strerrordesc_np(e);
    return s != NULL ? s : "unknown error";
}

/* Read up to len-1 bytes of a small /proc file; returns bytes read or -1. */
static ssize_t job_read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t r = read(fd, buf + got, len - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

/* ---------------------------------------------------------------------------------------- */
/* Credentials: who the daemons and the job's files belong to                                */
/* ---------------------------------------------------------------------------------------- */

typedef struct job_creds {
    bool drop;     /* running as root for another user: children become uid/gid/groups */
    uid_t uid;
    gid_t gid;
    gid_t *groups; /* supplementary groups of the user (malloc'ed), resolved before fork */
    int ngroups;
} job_creds_t;

static void job_creds_free(job_creds_t *cr)
{
    free(cr->groups);
    cr->groups = NULL;
    cr->ngroups = 0;
}

/*
 * Resolve the job user's groups now, in the parent: getpwuid and getgrouplist are not safe
 * between fork and exec. A user without a passwd entry gets only the job's gid.
 */
static pdcbb_err_t job_creds_init(const pdcbb_job_t *job, job_creds_t *cr, char *err,
                                  size_t errlen)
{
    memset(cr, 0, sizeof(*cr));
    cr->uid = job->uid;
    cr->gid = job->gid;
    if (geteuid() != 0) {
        if (job->uid != geteuid()) {
            pdcbb_errf(err, errlen,
                     "running as uid %ld, cannot prepare a job of uid %ld (needs root)",
                     (long)geteuid(), (long)job->uid);
            return PDCBB_ERR_PERM;
        }
        return PDCBB_OK;
    }
    if (job->uid == 0)
        return PDCBB_OK;
    cr->drop = true;

    struct passwd pw, *res = NULL;
    char pwbuf[16384];
    int n = 64;
    if (getpwuid_r(job->uid, &pw, pwbuf, sizeof(pwbuf), &res) != 0 || res == NULL) {
        cr->groups = malloc(sizeof(gid_t));
        if (cr->groups == NULL)
            goto nomem;
        cr->groups[0] = job->gid;
        cr->ngroups = 1;
        PDCBB_INFO("uid %ld has no passwd entry: daemons get only group %ld", (long)job->uid,
                   (long)job->gid);
        return PDCBB_OK;
    }
    for (;;) {
        gid_t *g = realloc(cr->groups, (size_t)n * sizeof(gid_t));
        if (g == NULL)
            goto nomem;
        cr->groups = g;
        int want = n;
        if (getgrouplist(pw.pw_name, job->gid, cr->groups, &want) >= 0) {
            cr->ngroups = want;
            return PDCBB_OK;
        }
        if (want <= n) /* failed without saying how many: should not happen */
            want = n * 2;
        if (want > 65536) {
            pdcbb_errf(err, errlen, "user %s is in too many groups", pw.pw_name);
            job_creds_free(cr);
            return PDCBB_ERR_INTERNAL;
        }
        n = want;
    }
nomem:
    job_creds_free(cr);
    pdcbb_errf(err, errlen, "out of memory");
    return PDCBB_ERR_NOMEM;
}

/*
 * In a forked child: become the job user for good. Returns 0 or an errno value. Uses only
 * system calls (safe after fork in a threaded parent).
 */
static int job_creds_drop(const job_creds_t *cr)
{
    if (!cr->drop)
        return 0;
    if (setgroups((size_t)cr->ngroups, cr->groups) != 0)
        return errno;
    if (setresgid(cr->gid, cr->gid, cr->gid) != 0)
        return errno;
    if (setresuid(cr->uid, cr->uid, cr->uid) != 0)
        return errno;
    /* the drop must be irreversible */
    if (setresuid(0, 0, 0) == 0 || geteuid() != cr->uid || getegid() != cr->gid)
        return EPERM;
    return 0;
}

/*
 * Run fn(arg) as the job user: directly when no drop is needed, else in a child that drops
 * first. fn returns a pdcbb_err_t, which crosses back as the child's exit status.
 */
static pdcbb_err_t job_as_user(const job_creds_t *cr, pdcbb_err_t (*fn)(void *), void *arg)
{
    if (!cr->drop)
        return fn(arg);
    pid_t pid = fork();
    if (pid < 0)
        return pdcbb_err_from_errno(errno);
    if (pid == 0) {
        if (job_creds_drop(cr) != 0)
            _exit(PDCBB_ERR_PERM);
        _exit((int)fn(arg));
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return PDCBB_ERR_INTERNAL;
    }
    if (WIFEXITED(st))
        return (pdcbb_err_t)WEXITSTATUS(st);
    return PDCBB_ERR_INTERNAL;
}

pdcbb_err_t pdcbb_job_as_user(const pdcbb_job_t *job, pdcbb_err_t (*fn)(void *arg, void *out),
                              void *arg, void *out, size_t outlen, char *err, size_t errlen)
{
    job_creds_t cr;
    pdcbb_err_t rc = job_creds_init(job, &cr, err, errlen);
    if (rc != PDCBB_OK)
        return rc;
    if (!cr.drop) {
        job_creds_free(&cr);
        return fn(arg, out);
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        pdcbb_errf(err, errlen, "pipe: %s", job_strerror(errno));
        job_creds_free(&cr);
        return pdcbb_err_from_errno(errno);
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        job_creds_free(&cr);
        pdcbb_errf(err, errlen, "fork: %s", job_strerror(e));
        return pdcbb_err_from_errno(e);
    }
    if (pid == 0) {
        close(pfd[0]);
        int e = job_creds_drop(&cr);
        pdcbb_err_t crc = e ? PDCBB_ERR_PERM : fn(arg, out);
        const uint8_t *p = out;
        size_t left = e ? 0 : outlen;
        while (left > 0) {
            ssize_t w = write(pfd[1], p, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            p += w;
            left -= (size_t)w;
        }
        _exit((int)crc);
    }
    close(pfd[1]);
    job_creds_free(&cr);
    uint8_t *p = out;
    size_t got = 0;
    while (got < outlen) {
        ssize_t r = read(pfd[0], p + got, outlen - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            pdcbb_errf(err, errlen, "waitpid: %s", job_strerror(errno));
            return PDCBB_ERR_INTERNAL;
        }
    }
    if (!WIFEXITED(st)) {
        pdcbb_errf(err, errlen, "the process running as uid %ld died (signal %d)",
                 (long)job->uid, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        return PDCBB_ERR_INTERNAL;
    }
    rc = (pdcbb_err_t)WEXITSTATUS(st);
    if (rc == PDCBB_ERR_PERM && got == 0)
        pdcbb_errf(err, errlen, "cannot become uid %ld gid %ld", (long)job->uid, (long)job->gid);
    else if (got < outlen)
        memset(p + got, 0, outlen - got);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Recognising our daemons                                                                    */
/* ---------------------------------------------------------------------------------------- */

/* Real uid of pid from /proc/PID/status; -1 if unknown. */
static long job_proc_uid(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    if (job_read_small(path, buf, sizeof(buf)) <= 0)
        return -1;
    const char *p = strstr(buf, "\nUid:");
    if (p == NULL)
        return -1;
    return strtol(p + 5, NULL, 10);
}

/* Two directory names are the same directory (same text, or same device and inode). */
static bool job_same_dir(const char *a, const char *b)
{
    if (strcmp(a, b) == 0)
        return true;
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* What the command line of a process says about it. */
typedef struct job_proc_info {
    bool is_bbd;        /* an argument or /proc/PID/exe names pdc_bbd */
    bool has_job_id, has_job_dir, has_rank;
    uint64_t job_id;
    unsigned rank;
    char job_dir[PATH_MAX];
} job_proc_info_t;

static bool job_proc_read(pid_t pid, job_proc_info_t *pi)
{
    char path[64], buf[16384];
    memset(pi, 0, sizeof(*pi));
    snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
    ssize_t n = job_read_small(path, buf, sizeof(buf));
    if (n <= 0)
        return false; /* gone, a zombie or a kernel thread */
    buf[n] = '\0';
    const char *end = buf + n;
    const char *argv0 = buf;
    const char *base;
    /* Any argument, not only argv[0]: a daemon run under a wrapper (valgrind, strace) is still
     * the job's daemon; the job id and directory on its command line identify it. */
    for (const char *a = argv0; a < end && !pi->is_bbd; a += strlen(a) + 1) {
        base = strrchr(a, '/');
        if (strstr(base ? base + 1 : a, "pdc_bbd") != NULL)
            pi->is_bbd = true;
    }
    if (!pi->is_bbd) {
        char exe[PATH_MAX];
        snprintf(path, sizeof(path), "/proc/%ld/exe", (long)pid);
        ssize_t l = readlink(path, exe, sizeof(exe) - 1);
        if (l > 0) {
            exe[l] = '\0';
            base = strrchr(exe, '/');
            if (strstr(base ? base + 1 : exe, "pdc_bbd") != NULL)
                pi->is_bbd = true;
        }
    }
    for (const char *a = argv0; a < end; a += strlen(a) + 1) {
        const char *next = a + strlen(a) + 1;
        const char *val = NULL;
        const char *opt = NULL;
        /* "--opt value" and "--opt=value" */
        if (strncmp(a, "--", 2) == 0) {
            const char *eq = strchr(a, '=');
            if (eq != NULL) {
                val = eq + 1;
                opt = a;
            } else if (next < end) {
                val = next;
                opt = a;
            }
        }
        if (opt == NULL)
            continue;
        size_t ol = strcspn(opt, "=");
        if (ol == 8 && strncmp(opt, "--job-id", 8) == 0) {
            char *e;
            errno = 0;
            unsigned long long v = strtoull(val, &e, 10);
            if (errno == 0 && *e == '\0' && e != val) {
                pi->has_job_id = true;
                pi->job_id = v;
            }
        } else if (ol == 9 && strncmp(opt, "--job-dir", 9) == 0) {
            if (strlen(val) < sizeof(pi->job_dir)) {
                strcpy(pi->job_dir, val);
                pi->has_job_dir = true;
            }
        } else if (ol == 6 && strncmp(opt, "--rank", 6) == 0) {
            char *e;
            errno = 0;
            unsigned long v = strtoul(val, &e, 10);
            if (errno == 0 && *e == '\0' && e != val && v < PDCBB_SERVERS_MAX) {
                pi->has_rank = true;
                pi->rank = (unsigned)v;
            }
        }
    }
    return true;
}

/*
 * Is pid a live pdc_bbd of this job? strict: the command line must name the job id and the job
 * directory (the /proc scan); otherwise only contradicting values disqualify (a pid file).
 * When we are root, the process must also run as the job user.
 */
static bool job_is_daemon(pid_t pid, uint64_t job_id, const char *job_dir, long uid,
                          bool strict, job_proc_info_t *pi)
{
    if (!pdcbb_pid_alive(pid) || !job_proc_read(pid, pi) || !pi->is_bbd)
        return false;
    if (strict && (!pi->has_job_id || !pi->has_job_dir))
        return false;
    if (job_id != 0 && pi->has_job_id && pi->job_id != job_id)
        return false;
    if (job_dir != NULL && pi->has_job_dir && !job_same_dir(pi->job_dir, job_dir))
        return false;
    if (uid >= 0 && job_proc_uid(pid) != uid)
        return false;
    return true;
}

int pdcbb_job_daemon_alive(pid_t pid, uint64_t job_id, const char *job_dir)
{
    job_proc_info_t pi;
    return job_is_daemon(pid, job_id, job_dir, -1, false, &pi) ? 1 : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Stopping daemons (the epilog, and the prolog's clean-up)                                  */
/* ---------------------------------------------------------------------------------------- */

typedef struct job_target {
    pid_t pid;
    long rank;              /* -1: unknown */
    char pidfile[64];       /* "bbd-R.pid" in the job directory, "" if none */
    bool alive;
    bool killed;
} job_target_t;

typedef struct job_targets {
    job_target_t *v;
    size_t n, cap;
} job_targets_t;

static job_target_t *job_targets_find(job_targets_t *t, pid_t pid)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].pid == pid)
            return &t->v[i];
    return NULL;
}

static pdcbb_err_t job_targets_add(job_targets_t *t, pid_t pid, long rank, const char *pidfile)
{
    job_target_t *have = job_targets_find(t, pid);
    if (have != NULL) {
        if (have->rank < 0)
            have->rank = rank;
        if (pidfile != NULL && have->pidfile[0] == '\0')
            snprintf(have->pidfile, sizeof(have->pidfile), "%s", pidfile);
        return PDCBB_OK;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 8;
        job_target_t *v = realloc(t->v, cap * sizeof(*v));
        if (v == NULL)
            return PDCBB_ERR_NOMEM;
        t->v = v;
        t->cap = cap;
    }
    job_target_t *x = &t->v[t->n++];
    memset(x, 0, sizeof(*x));
    x->pid = pid;
    x->rank = rank;
    x->alive = true;
    if (pidfile != NULL)
        snprintf(x->pidfile, sizeof(x->pidfile), "%s", pidfile);
    return PDCBB_OK;
}

/* "daemon rank R (pid P)" or "daemon (pid P)". */
static const char *job_target_name(const job_target_t *x, char *buf, size_t len)
{
    if (x->rank >= 0)
        snprintf(buf, len, "daemon rank %ld (pid %ld)", x->rank, (long)x->pid);
    else
        snprintf(buf, len, "daemon (pid %ld)", (long)x->pid);
    return buf;
}

/* "bbd-R.pid" -> R; -1 if the name is not a pid file. */
static long job_pidfile_rank(const char *name)
{
    if (strncmp(name, "bbd-", 4) != 0)
        return -1;
    const char *p = name + 4;
    char *e;
    if (*p < '0' || *p > '9')
        return -1;
    errno = 0;
    unsigned long r = strtoul(p, &e, 10);
    if (errno != 0 || strcmp(e, ".pid") != 0 || r >= PDCBB_SERVERS_MAX)
        return -1;
    return (long)r;
}

/* Read a pid file without following links or blocking on a fifo; 0 if malformed. */
static pid_t job_pidfile_read(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    char buf[32];
    ssize_t r = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 0)
        return 0;
    buf[r] = '\0';
    char *e;
    errno = 0;
    long v = strtol(buf, &e, 10);
    while (*e == '\n' || *e == ' ')
        e++;
    if (errno != 0 || e == buf || *e != '\0' || v <= 1 || v > INT32_MAX)
        return 0;
    return (pid_t)v;
}

/* Remove bbd-R.pid and bbd-R.endpoint of a daemon that is gone (never its data). */
static void job_remove_rank_files(int dirfd, long rank)
{
    char name[64];
    if (dirfd < 0 || rank < 0)
        return;
    snprintf(name, sizeof(name), "bbd-%ld.pid", rank);
    unlinkat(dirfd, name, 0);
    snprintf(name, sizeof(name), "bbd-%ld.endpoint", rank);
    unlinkat(dirfd, name, 0);
}

typedef struct job_stop_ctx {
    const pdcbb_job_t *job;
    const char *dir;
    int dirfd;          /* -1 if the job directory cannot be opened */
    long uid;           /* process uid to require (root), -1: any */
    long rank_lo, rank_hi; /* only daemons with rank_lo <= rank < rank_hi; rank_hi < 0: all */
    pdcbb_job_stop_stats_t stats;
    char *err;
    size_t errlen;
} job_stop_ctx_t;

/* Is rank one of those this stop is about? (An unknown rank always is.) */
static bool job_rank_wanted(const job_stop_ctx_t *c, long rank)
{
    return c->rank_hi < 0 || rank < 0 || (rank >= c->rank_lo && rank < c->rank_hi);
}

/* Collect targets from bbd-*.pid; pid files of dead or foreign processes are removed. */
static pdcbb_err_t job_collect_pidfiles(job_stop_ctx_t *c, job_targets_t *t)
{
    if (c->dirfd < 0)
        return PDCBB_OK;
    int fd = dup(c->dirfd);
    if (fd < 0)
        return pdcbb_err_from_errno(errno);
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return pdcbb_err_from_errno(errno);
    }
    rewinddir(d);
    pdcbb_err_t rc = PDCBB_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        long rank = job_pidfile_rank(de->d_name);
        if (rank < 0 || !job_rank_wanted(c, rank))
            continue;
        pid_t pid = job_pidfile_read(c->dirfd, de->d_name);
        job_proc_info_t pi;
        if (pid == 0) {
            job_note(c->err, c->errlen, "removed unreadable pid file %s", de->d_name);
            PDCBB_INFO("job %" PRIu64 ": removing unreadable pid file %s/%s", c->job->job_id,
                       c->dir, de->d_name);
            unlinkat(c->dirfd, de->d_name, 0);
            c->stats.stale++;
            continue;
        }
        if (!job_is_daemon(pid, c->job->job_id, c->dir, c->uid, false, &pi)) {
            bool alive = pdcbb_pid_alive(pid);
            job_note(c->err, c->errlen, "daemon rank %ld had already exited (pid %ld %s)", rank,
                     (long)pid, alive ? "is another process now" : "is not running");
            PDCBB_INFO("job %" PRIu64 ": removing stale pid file %s/%s (pid %ld %s)",
                       c->job->job_id, c->dir, de->d_name, (long)pid,
                       alive ? "is not a pdc_bbd of this job" : "is not running");
            job_remove_rank_files(c->dirfd, rank);
            c->stats.stale++;
            continue;
        }
        if ((rc = job_targets_add(t, pid, rank, de->d_name)) != PDCBB_OK)
            break;
    }
    closedir(d);
    return rc;
}

/* Collect pdc_bbd processes whose command line names this job (lost or missing pid files). */
static pdcbb_err_t job_collect_proc(job_stop_ctx_t *c, job_targets_t *t)
{
    DIR *d = opendir("/proc");
    if (d == NULL)
        return PDCBB_OK; /* no /proc: the pid files are all we have */
    pdcbb_err_t rc = PDCBB_OK;
    struct dirent *de;
    pid_t self = getpid();
    while ((de = readdir(d)) != NULL) {
        char *e;
        long v = strtol(de->d_name, &e, 10);
        if (*e != '\0' || v <= 1 || v == self)
            continue;
        pid_t pid = (pid_t)v;
        if (job_targets_find(t, pid) != NULL)
            continue;
        job_proc_info_t pi;
        if (!job_is_daemon(pid, c->job->job_id, c->dir, c->uid, true, &pi))
            continue;
        long rank = pi.has_rank ? (long)pi.rank : -1;
        if (!job_rank_wanted(c, rank))
            continue;
        char nm[96];
        job_target_t tmp = {.pid = pid, .rank = rank};
        job_note(c->err, c->errlen, "found %s without a pid file",
                 job_target_name(&tmp, nm, sizeof(nm)));
        if ((rc = job_targets_add(t, pid, rank, NULL)) != PDCBB_OK)
            break;
    }
    closedir(d);
    return rc;
}

/* Wait until every target is dead or the deadline passes; returns how many are alive. */
static size_t job_wait_targets(job_targets_t *t, double seconds)
{
    double deadline = job_now() + seconds;
    for (;;) {
        size_t alive = 0;
        for (size_t i = 0; i < t->n; i++) {
            if (t->v[i].alive && !pdcbb_pid_alive(t->v[i].pid))
                t->v[i].alive = false;
            alive += t->v[i].alive;
        }
        if (alive == 0 || job_now() >= deadline)
            return alive;
        job_nap();
    }
}

/*
 * SIGTERM every target, wait stop_timeout, SIGKILL the rest, wait JOB_KILL_WAIT. Fills stats
 * and notes; returns PDCBB_OK when none is left running.
 */
static pdcbb_err_t job_stop_targets(job_stop_ctx_t *c, job_targets_t *t)
{
    char nm[96];
    pdcbb_err_t rc = PDCBB_OK;
    double stop_timeout = c->job->cfg.stop_timeout > 0 ? c->job->cfg.stop_timeout : 10.0;

    for (size_t i = 0; i < t->n; i++) {
        job_target_t *x = &t->v[i];
        c->stats.found++;
        if (kill(x->pid, SIGTERM) != 0) {
            if (errno == ESRCH) {
                x->alive = false;
                continue;
            }
            job_note(c->err, c->errlen, "cannot send SIGTERM to %s: %s",
                     job_target_name(x, nm, sizeof(nm)), strerror(errno));
        } else {
            PDCBB_INFO("job %" PRIu64 ": sent SIGTERM to %s", c->job->job_id,
                       job_target_name(x, nm, sizeof(nm)));
        }
    }
    if (job_wait_targets(t, stop_timeout) > 0) {
        for (size_t i = 0; i < t->n; i++) {
            job_target_t *x = &t->v[i];
            if (!x->alive)
                continue;
            if (kill(x->pid, SIGKILL) != 0 && errno != ESRCH) {
                job_note(c->err, c->errlen, "cannot send SIGKILL to %s: %s",
                         job_target_name(x, nm, sizeof(nm)), strerror(errno));
                continue;
            }
            x->killed = true;
            c->stats.killed++;
            job_note(c->err, c->errlen, "%s ignored SIGTERM for %gs and was killed",
                     job_target_name(x, nm, sizeof(nm)), stop_timeout);
            PDCBB_ERROR("job %" PRIu64 ": %s ignored SIGTERM for %gs: sent SIGKILL",
                        c->job->job_id, nm, stop_timeout);
        }
        job_wait_targets(t, JOB_KILL_WAIT);
    }
    for (size_t i = 0; i < t->n; i++) {
        job_target_t *x = &t->v[i];
        if (x->alive) {
            c->stats.running++;
            job_note(c->err, c->errlen, "%s is still running%s",
                     job_target_name(x, nm, sizeof(nm)), x->killed ? " after SIGKILL" : "");
            PDCBB_ERROR("job %" PRIu64 ": %s is still running%s", c->job->job_id, nm,
                        x->killed ? " after SIGKILL" : "");
            rc = PDCBB_ERR_BUSY;
            continue;
        }
        if (x->killed)
            job_remove_rank_files(c->dirfd, x->rank);
        else
            c->stats.terminated++;
        /* A daemon that exited cleanly removed its own pid file; one that crashed did not. */
        if (x->pidfile[0] != '\0' && c->dirfd >= 0 &&
            job_pidfile_read(c->dirfd, x->pidfile) == x->pid)
            job_remove_rank_files(c->dirfd, x->rank);
    }
    return rc;
}

/*
 * Find and stop every daemon of the job on this node (ranks rank_lo..rank_hi-1 only, when
 * rank_hi >= 0). extra: pids the caller started itself (the prolog's clean-up), which count
 * even without a pid file.
 */
static pdcbb_err_t job_stop_all(const pdcbb_job_t *job, const char *dir, long rank_lo,
                                long rank_hi, const pid_t *extra, const long *extra_rank,
                                size_t nextra, pdcbb_job_stop_stats_t *stats, char *err,
                                size_t errlen)
{
    job_targets_t t = {0};
    job_stop_ctx_t c = {.job = job, .dir = dir, .dirfd = -1, .rank_lo = rank_lo,
                        .rank_hi = rank_hi, .err = err, .errlen = errlen};
    pdcbb_err_t rc;

    c.uid = geteuid() == 0 ? (long)job->uid : -1;
    c.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (c.dirfd < 0) {
        if (errno == ENOENT)
            job_note(err, errlen, "job directory %s does not exist", dir);
        else
            job_note(err, errlen, "cannot open job directory %s: %s (looking for daemons in "
                                  "/proc instead)",
                     dir, strerror(errno));
        PDCBB_INFO("job %" PRIu64 ": cannot open %s: %s", job->job_id, dir, strerror(errno));
    }
    if ((rc = job_collect_pidfiles(&c, &t)) != PDCBB_OK)
        goto done;
    for (size_t i = 0; i < nextra; i++) {
        if (extra[i] > 0 && pdcbb_pid_alive(extra[i]) &&
            (rc = job_targets_add(&t, extra[i], extra_rank[i], NULL)) != PDCBB_OK)
            goto done;
    }
    if ((rc = job_collect_proc(&c, &t)) != PDCBB_OK)
        goto done;
    rc = job_stop_targets(&c, &t);
done:
    if (rc == PDCBB_ERR_NOMEM)
        job_note(err, errlen, "out of memory");
    if (c.dirfd >= 0)
        close(c.dirfd);
    free(t.v);
    if (stats != NULL)
        *stats = c.stats;
    return rc;
}

/*
 * Daemons of the job that are running now (pid files and /proc; ranks rank_lo..rank_hi-1 only
 * when rank_hi >= 0), without signalling any; stale pid files are removed on the way. Returns
 * how many; describes the first in who.
 */
static size_t job_find_running(const pdcbb_job_t *job, const char *dir, long rank_lo,
                               long rank_hi, char *who, size_t len)
{
    job_targets_t t = {0};
    char scratch[PDCBB_JOB_ERR_LEN] = "";
    job_stop_ctx_t c = {.job = job, .dir = dir, .rank_lo = rank_lo, .rank_hi = rank_hi,
                        .err = scratch, .errlen = sizeof(scratch)};
    c.uid = geteuid() == 0 ? (long)job->uid : -1;
    c.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    job_collect_pidfiles(&c, &t);
    job_collect_proc(&c, &t);
    if (c.dirfd >= 0)
        close(c.dirfd);
    size_t n = t.n;
    if (n > 0 && who != NULL)
        job_target_name(&t.v[0], who, len);
    free(t.v);
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* Job directory                                                                              */
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
static pdcbb_err_t job_dir_create(const pdcbb_job_t *job, const char *dir, int *dirfd,
                                  char *err, size_t errlen)
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
static pdcbb_err_t job_check_capacity(const pdcbb_job_t *job, int dirfd, char *err,
                                      size_t errlen)
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

/* Files written as the job user (job_as_user). */
typedef struct job_files {
    const char *dir;
    const pdcbb_job_t *job;
    const uint8_t *token;
    const pdcbb_config_t *cfg;
    const char *text; /* prolog.error content */
    const char *rendezvous;
} job_files_t;

static pdcbb_err_t job_write_files(void *arg)
{
    const job_files_t *f = arg;
    char path[PATH_MAX];
    pdcbb_err_t rc = pdcbb_jobdir_path(f->dir, "token", path, sizeof(path));
    if (rc == PDCBB_OK)
        rc = pdcbb_token_write(path, f->token);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = pdcbb_jobdir_path(f->dir, "config.yaml", path, sizeof(path))) != PDCBB_OK ||
        (rc = pdcbb_config_write_file(f->cfg, path)) != PDCBB_OK)
        return rc;
    pdcbb_jobinfo_t ji = {.job_id = f->job->job_id, .node_index = f->job->node_index,
                          .nnodes = f->job->nnodes,
                          .servers_per_node = f->cfg->servers_per_node};
    snprintf(ji.instance, sizeof(ji.instance), "%s", f->job->instance);
    snprintf(ji.node, sizeof(ji.node), "%s", f->job->node_name);
    snprintf(ji.rendezvous, sizeof(ji.rendezvous), "%s", f->rendezvous ? f->rendezvous : "");
    return pdcbb_jobinfo_write(f->dir, &ji);
}

static pdcbb_err_t job_write_error_file(void *arg)
{
    const job_files_t *f = arg;
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    pdcbb_err_t rc = pdcbb_jobdir_path(f->dir, "prolog.error", path, sizeof(path));
    if (rc != PDCBB_OK)
        return rc;
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return pdcbb_err_from_errno(errno);
    size_t len = strlen(f->text);
    ssize_t w = write(fd, f->text, len);
    ssize_t w2 = write(fd, "\n", 1);
    if (w != (ssize_t)len || w2 != 1 || close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno ? errno : EIO;
        unlink(tmp);
        return pdcbb_err_from_errno(e);
    }
    return PDCBB_OK;
}

/* The drain destination, checked (and, on the first node, the job's drain directory made)
 * as the job user (pdcbb_job_as_user). */
typedef struct job_drain_prep {
    char dir[PATH_MAX];
    char note[PDCBB_JOB_ERR_LEN];
    char err[PDCBB_JOB_ERR_LEN];
} job_drain_prep_t;

static pdcbb_err_t job_drain_prepare(void *arg, void *out)
{
    const pdcbb_job_t *job = arg;
    job_drain_prep_t *p = out;
    memset(p, 0, sizeof(*p));
    pdcbb_err_t rc = pdcbb_drain_dest_check(job->cfg.drain, p->err, sizeof(p->err));
    if (rc != PDCBB_OK || job->node_index != 0)
        return rc;
    int share = pdcbb_drain_share_parse(job->cfg.drain_share);
    return pdcbb_drain_dir_create(job->cfg.drain, job->job_id, job->instance,
                                  share < 0 ? PDCBB_DRAIN_SHARE_NONE : share, p->dir,
                                  sizeof(p->dir), p->note, sizeof(p->note), p->err,
                                  sizeof(p->err));
}

/* ---------------------------------------------------------------------------------------- */
/* Starting daemons                                                                           */
/* ---------------------------------------------------------------------------------------- */

typedef struct job_daemon {
    unsigned rank;
    pid_t pid;         /* the daemon (grandchild); 0 if unknown */
    int rfd;           /* read end of its ready pipe; -1 once done */
    char line[JOB_READY_LINE];
    size_t len;
    bool done, ok, eof;
} job_daemon_t;

/* Write "error <a><b><c><d>\n" on fd as one line (async-signal-safe). */
static void job_child_report(int fd, const char *a, const char *b, const char *c, const char *d)
{
    char msg[JOB_READY_LINE];
    const char *parts[] = {"error ", a, b, c, d};
    msg[0] = '\0';
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        job_cat(msg, sizeof(msg) - 1, parts[i]);
    job_cat(msg, sizeof(msg), "\n");
    ssize_t w = write(fd, msg, strlen(msg));
    (void)w;
}

/* Close every descriptor >= 3 except keep. */
static void job_child_close_fds(int keep)
{
    bool done = true;
    if (keep > 3 && close_range(3, (unsigned)keep - 1, 0) != 0)
        done = false;
    if (done && close_range((unsigned)keep + 1, ~0u, 0) != 0)
        done = false;
    if (done)
        return;
    /* old kernel: walk /proc/self/fd */
    DIR *d = opendir("/proc/self/fd");
    if (d != NULL) {
        int dfd = dirfd(d);
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            int fd = atoi(de->d_name);
            if (fd >= 3 && fd != keep && fd != dfd)
                close(fd);
        }
        closedir(d);
        return;
    }
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = 3; fd < max; fd++)
        if (fd != keep)
            close(fd);
}

/*
 * The grandchild: become the daemon. Never returns. Between fork and exec only system calls
 * and our own async-signal-safe helpers are used (the parent may be threaded).
 */
static void job_child_exec(const job_creds_t *cr, const char *dir, int wfd, char **argv,
                           char *fdbuf, size_t fdlen)
{
    char num[24];
    int e;

    /* the daemon insists on a descriptor >= 3, and 0-2 are about to become /dev/null */
    if (wfd < 3) {
        int nfd = fcntl(wfd, F_DUPFD_CLOEXEC, 3);
        if (nfd < 0)
            _exit(126);
        wfd = nfd;
    }
    if ((e = job_creds_drop(cr)) != 0) {
        job_utoa((unsigned long long)cr->uid, num, sizeof(num));
        job_child_report(wfd, "cannot switch to uid ", num, ": ", job_strerror(e));
        _exit(126);
    }
    if (chdir(dir) != 0) {
        e = errno;
        job_child_report(wfd, "cannot enter job directory ", dir, ": ", job_strerror(e));
        _exit(126);
    }
    umask(077);

    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        sigaction(s, &dfl, NULL); /* fails harmlessly for SIGKILL, SIGSTOP, glibc's own */

    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(nul, 2);
        if (nul > 2 && nul != wfd)
            close(nul);
    }
    job_child_close_fds(wfd);
    fcntl(wfd, F_SETFD, 0);
    job_utoa((unsigned long long)wfd, fdbuf, fdlen);

    execv(argv[0], argv);
    e = errno;
    job_child_report(wfd, "cannot execute ", argv[0], ": ", job_strerror(e));
    _exit(127);
}

/*
 * Start daemon d->rank: fork; the child setsid()s and forks the daemon, tells us its pid and
 * exits at once, so the daemon is re-parented away from us (Slurm never waits for it).
 */
static pdcbb_err_t job_start_daemon(const pdcbb_job_t *job, const job_creds_t *cr,
                                    const char *dir, const char *cfgpath, unsigned nservers,
                                    job_daemon_t *d, char *err, size_t errlen)
{
    int ready[2] = {-1, -1}, pidp[2] = {-1, -1};
    char rank_s[24], nserv_s[24], jobid_s[24], fd_s[24] = "";
    char *argv[] = {(char *)job->cfg.daemon_path,
                    "--job-dir", (char *)dir,
                    "--rank", rank_s,
                    "--nservers", nserv_s,
                    "--job-id", jobid_s,
                    "--node", (char *)job->node_name,
                    "--config", (char *)cfgpath,
                    "--ready-fd", fd_s,
                    NULL};
    snprintf(rank_s, sizeof(rank_s), "%u", d->rank);
    snprintf(nserv_s, sizeof(nserv_s), "%u", nservers);
    snprintf(jobid_s, sizeof(jobid_s), "%" PRIu64, job->job_id);

    if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(pidp, O_CLOEXEC) != 0) {
        int e = errno;
        pdcbb_errf(err, errlen, "cannot create a pipe for daemon rank %u: %s", d->rank,
                 strerror(e));
        goto fail;
    }
    pid_t mid = fork();
    if (mid < 0) {
        pdcbb_errf(err, errlen, "cannot fork daemon rank %u: %s", d->rank, strerror(errno));
        goto fail;
    }
    if (mid == 0) {
        /* middle child: new session, fork the daemon, report its pid, vanish */
        close(ready[0]);
        close(pidp[0]);
        setsid();
        pid_t g = fork();
        if (g < 0) {
            job_child_report(ready[1], "cannot fork: ", job_strerror(errno), "", "");
            _exit(1);
        }
        if (g > 0) {
            ssize_t w = write(pidp[1], &g, sizeof(g));
            _exit(w == (ssize_t)sizeof(g) ? 0 : 1);
        }
        close(pidp[1]);
        job_child_exec(cr, dir, ready[1], argv, fd_s, sizeof(fd_s));
        _exit(127); /* not reached */
    }
    close(ready[1]);
    ready[1] = -1;
    close(pidp[1]);
    pidp[1] = -1;
    int st;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
        ;
    pid_t g = 0;
    ssize_t r;
    while ((r = read(pidp[0], &g, sizeof(g))) < 0 && errno == EINTR)
        ;
    d->pid = r == (ssize_t)sizeof(g) ? g : 0;
    close(pidp[0]);
    d->rfd = ready[0];
    PDCBB_DEBUG("job %" PRIu64 ": started daemon rank %u, pid %ld", job->job_id, d->rank,
                (long)d->pid);
    return PDCBB_OK;
fail:
    for (int i = 0; i < 2; i++) {
        if (ready[i] >= 0)
            close(ready[i]);
        if (pidp[i] >= 0)
            close(pidp[i]);
    }
    return PDCBB_ERR_INTERNAL;
}

/* Consume what is readable on d->rfd; sets done once a line or EOF arrived. */
static void job_read_ready(job_daemon_t *d)
{
    char buf[256];
    ssize_t r = read(d->rfd, buf, sizeof(buf));
    if (r < 0) {
        if (errno == EINTR || errno == EAGAIN)
            return;
        r = 0;
    }
    if (r == 0) {
        d->eof = true;
        d->done = true;
        return;
    }
    for (ssize_t i = 0; i < r && !d->done; i++) {
        if (buf[i] == '\n' || d->len + 1 >= sizeof(d->line)) {
            d->done = true;
            break;
        }
        d->line[d->len++] = buf[i];
    }
    d->line[d->len] = '\0';
    if (d->done) {
        d->eof = false;
        d->ok = strncmp(d->line, "ready", 5) == 0 && (d->line[5] == ' ' || d->line[5] == '\0');
    }
}

/*
 * Wait until every daemon reported, one fails, or the deadline passes. Returns PDCBB_OK when
 * all are ready, else the first failure with its message.
 */
static pdcbb_err_t job_wait_ready(const pdcbb_job_t *job, const char *dir, job_daemon_t *ds,
                                  size_t n, char *err, size_t errlen)
{
    double timeout = job->cfg.ready_timeout > 0 ? job->cfg.ready_timeout : 30.0;
    if (job->cfg.stage_in[0] && job->cfg.stage_in_timeout > timeout)
        timeout = job->cfg.stage_in_timeout; /* the daemons load data before they are ready */
    double deadline = job_now() + timeout;
    struct pollfd *pf = calloc(n ? n : 1, sizeof(*pf));
    if (pf == NULL) {
        pdcbb_errf(err, errlen, "out of memory");
        return PDCBB_ERR_NOMEM;
    }
    pdcbb_err_t rc = PDCBB_OK;
    for (;;) {
        size_t np = 0;
        for (size_t i = 0; i < n; i++) {
            job_daemon_t *d = &ds[i];
            if (!d->done)
                continue;
            if (d->rfd >= 0) {
                close(d->rfd);
                d->rfd = -1;
            }
            if (d->ok)
                continue;
            char log[PATH_MAX];
            pdcbb_jobdir_rank_path(dir, d->rank, "log", log, sizeof(log));
            if (d->eof && d->len == 0)
                pdcbb_errf(err, errlen, "daemon rank %u (pid %ld) exited without reporting ready "
                                      "(see %s)",
                         d->rank, (long)d->pid, log);
            else if (strncmp(d->line, "error ", 6) == 0)
                pdcbb_errf(err, errlen, "daemon rank %u on %s failed to start: %s", d->rank,
                         job->node_name, d->line + 6);
            else
                pdcbb_errf(err, errlen, "daemon rank %u (pid %ld) sent '%s' instead of "
                                      "\"ready\" (see %s)",
                         d->rank, (long)d->pid, d->line, log);
            rc = PDCBB_ERR_UNREACHABLE;
            goto done;
        }
        for (size_t i = 0; i < n; i++) {
            if (!ds[i].done) {
                pf[np].fd = ds[i].rfd;
                pf[np].events = POLLIN;
                pf[np].revents = 0;
                np++;
            }
        }
        if (np == 0)
            break;
        if (job_interrupt != NULL && *job_interrupt != 0) {
            pdcbb_errf(err, errlen, "interrupted by signal %d while waiting for the daemons",
                     (int)*job_interrupt);
            rc = PDCBB_ERR_SHUTDOWN;
            goto done;
        }
        double left = deadline - job_now();
        if (left <= 0) {
            for (size_t i = 0; i < n; i++) {
                if (ds[i].done)
                    continue;
                char log[PATH_MAX];
                pdcbb_jobdir_rank_path(dir, ds[i].rank, "log", log, sizeof(log));
                pdcbb_errf(err, errlen, "daemon rank %u (pid %ld) did not report ready within "
                                      "%gs (see %s)",
                         ds[i].rank, (long)ds[i].pid, timeout, log);
                break;
            }
            rc = PDCBB_ERR_TIMEOUT;
            goto done;
        }
        int ms = (int)(left * 1000.0) + 1;
        int pr = poll(pf, np, ms);
        if (pr < 0 && errno != EINTR) {
            pdcbb_errf(err, errlen, "poll: %s", strerror(errno));
            rc = PDCBB_ERR_INTERNAL;
            goto done;
        }
        if (pr <= 0)
            continue;
        for (size_t i = 0, k = 0; i < n; i++) {
            if (ds[i].done)
                continue;
            if (pf[k].revents != 0)
                job_read_ready(&ds[i]);
            k++;
        }
    }
done:
    free(pf);
    return rc;
}

pdcbb_err_t pdcbb_job_prolog(const pdcbb_job_t *job, const uint8_t *token, char *err,
                             size_t errlen)
{
    char dir[PATH_MAX], cfgpath[PATH_MAX], msg[PDCBB_JOB_ERR_LEN], rdv[PATH_MAX] = "";
    uint8_t tok[PDCBB_TOKEN_LEN];
    job_creds_t cr;
    job_daemon_t *ds = NULL;
    pdcbb_config_t *cfg = NULL;
    unsigned spn, nservers, started = 0;
    int dirfd = -1;
    double t0 = job_now();
    pdcbb_err_t rc;

    memset(&cr, 0, sizeof(cr));
    msg[0] = '\0';
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (job == NULL) {
        pdcbb_errf(err, errlen, "no job");
        return PDCBB_ERR_INVAL;
    }
    spn = job->cfg.servers_per_node;
    if (job->nnodes == 0 || job->node_index >= job->nnodes || spn == 0 ||
        (uint64_t)job->nnodes * spn > PDCBB_SERVERS_MAX || job->node_name[0] == '\0' ||
        strpbrk(job->node_name, " \t\n") != NULL || job->job_id == 0 ||
        strspn(job->instance, "0123456789abcdef") != strlen(job->instance)) {
        pdcbb_errf(err, errlen, "bad job description (job id %" PRIu64 ", node '%s', index %u of "
                              "%u nodes, %u servers per node)",
                 job->job_id, job->node_name, job->node_index, job->nnodes, spn);
        PDCBB_ERROR("%s", err ? err : "bad job description");
        return PDCBB_ERR_INVAL;
    }
    nservers = job->nnodes * spn;
    if ((rc = pdcbb_job_dir(job, dir, sizeof(dir))) != PDCBB_OK) {
        pdcbb_errf(err, errlen, "cannot name the job directory under '%s': %s", job_root(job),
                 pdcbb_strerror(rc));
        PDCBB_ERROR("job %" PRIu64 ": %s", job->job_id, err ? err : "");
        return rc;
    }
    if ((rc = pdcbb_jobdir_path(dir, "config.yaml", cfgpath, sizeof(cfgpath))) != PDCBB_OK) {
        pdcbb_errf(err, errlen, "job directory path %s is too long", dir);
        return rc;
    }
    if ((rc = job_creds_init(job, &cr, msg, sizeof(msg))) != PDCBB_OK)
        goto out; /* not ours to write into: no prolog.error */
    if ((rc = job_dir_create(job, dir, &dirfd, msg, sizeof(msg))) != PDCBB_OK)
        goto out;
    /*
     * A restart is fine once the old daemons are gone; two daemons per rank are not. Only our
     * own ranks count: simulated nodes sharing one directory each start their own ranks.
     */
    long rank_lo = (long)job->node_index * spn, rank_hi = rank_lo + spn;
    char who[96];
    if (job_find_running(job, dir, rank_lo, rank_hi, who, sizeof(who)) > 0) {
        pdcbb_errf(msg, sizeof(msg), "%s of job %" PRIu64 " is still running in %s (stop it "
                                   "with the epilog before starting the job's daemons again)",
                 who, job->job_id, dir);
        rc = PDCBB_ERR_BUSY;
        goto out; /* leave the running daemons and their directory alone */
    }

    /* From here on the directory is the job's: failures are recorded in prolog.error. */
    if ((rc = pdcbb_job_rendezvous(job, rdv, sizeof(rdv))) != PDCBB_OK) {
        pdcbb_errf(msg, sizeof(msg), "cannot name the job's rendezvous directory under '%s' "
                                   "(site key rendezvous_dir): %s",
                 job->rendezvous_root[0] ? job->rendezvous_root : job->cfg.rendezvous_dir,
                 rc == PDCBB_ERR_NOT_FOUND ? "the job user has no home directory"
                                           : pdcbb_strerror(rc));
        rdv[0] = '\0';
        goto fail;
    }
    if (rdv[0] && (rc = pdcbb_job_rendezvous_create(job, rdv, msg, sizeof(msg))) != PDCBB_OK) {
        rdv[0] = '\0'; /* not ours: write nothing there */
        goto fail;
    }
    if ((rc = job_check_capacity(job, dirfd, msg, sizeof(msg))) != PDCBB_OK)
        goto fail;
    if (job->cfg.daemon_path[0] != '/') {
        pdcbb_errf(msg, sizeof(msg), "daemon_path '%s' is not an absolute path",
                 job->cfg.daemon_path);
        rc = PDCBB_ERR_CONFIG;
        goto fail;
    }
    if (token == NULL) {
        if ((rc = pdcbb_token_generate(tok)) != PDCBB_OK) {
            pdcbb_errf(msg, sizeof(msg), "cannot generate the job token: %s", pdcbb_strerror(rc));
            goto fail;
        }
        token = tok;
    }
    cfg = malloc(sizeof(*cfg));
    if (cfg == NULL) {
        rc = PDCBB_ERR_NOMEM;
        pdcbb_errf(msg, sizeof(msg), "out of memory");
        goto fail;
    }
    *cfg = job->cfg;
    snprintf(cfg->local_root, sizeof(cfg->local_root), "%s", job_root(job));
    job_files_t files = {.dir = dir, .job = job, .token = token, .cfg = cfg, .rendezvous = rdv};
    if ((rc = job_as_user(&cr, job_write_files, &files)) != PDCBB_OK) {
        pdcbb_errf(msg, sizeof(msg), "cannot write token and config.yaml in %s: %s", dir,
                 pdcbb_strerror(rc));
        goto fail;
    }

    /* A drain that cannot work is reported now, not after the job: the destination is checked
     * as the user on every node, and the first node makes the job's drain directory (the other
     * nodes find it by its identity at the end). */
    static job_drain_prep_t prep; /* large: not on the stack of a plugin */
    memset(&prep, 0, sizeof(prep));
    if (job->cfg.drain[0] != '\0') {
        char xerr[PDCBB_JOB_ERR_LEN] = "";
        rc = pdcbb_job_as_user(job, job_drain_prepare, (void *)job, &prep, sizeof(prep), xerr,
                               sizeof(xerr));
        if (rc != PDCBB_OK) {
            if (prep.err[0])
                pdcbb_errf(msg, sizeof(msg), "%s", prep.err);
            else
                pdcbb_errf(msg, sizeof(msg), "drain=%s: %s", job->cfg.drain,
                         xerr[0] ? xerr : pdcbb_strerror(rc));
            goto fail;
        }
        if (prep.note[0])
            PDCBB_WARN("job %" PRIu64 ": %s", job->job_id, prep.note);
        else if (prep.dir[0])
            PDCBB_INFO("job %" PRIu64 ": drain directory %s", job->job_id, prep.dir);
    }

    ds = calloc(spn, sizeof(*ds));
    if (ds == NULL) {
        rc = PDCBB_ERR_NOMEM;
        pdcbb_errf(msg, sizeof(msg), "out of memory");
        goto fail;
    }
    for (unsigned k = 0; k < spn; k++) {
        ds[k].rank = job->node_index * spn + k;
        ds[k].rfd = -1;
    }
    for (; started < spn; started++) {
        rc = job_start_daemon(job, &cr, dir, cfgpath, nservers, &ds[started], msg, sizeof(msg));
        if (rc != PDCBB_OK)
            goto fail;
    }
    if ((rc = job_wait_ready(job, dir, ds, spn, msg, sizeof(msg))) != PDCBB_OK)
        goto fail;

    unlinkat(dirfd, "prolog.error", 0);
    if (prep.note[0] && err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", prep.note); /* worth telling the user even on success */
    PDCBB_INFO("job %" PRIu64 ": %u daemon%s (ranks %u-%u of %u) ready on %s in %.3fs, %s",
               job->job_id, spn, spn == 1 ? "" : "s", ds[0].rank, ds[spn - 1].rank, nservers,
               job->node_name, job_now() - t0, dir);
    rc = PDCBB_OK;
    goto out;

fail:
    PDCBB_ERROR("job %" PRIu64 " on %s: %s", job->job_id, job->node_name, msg);
    {
        /* stop whatever started: our own pids plus anything the pid files or /proc name */
        pid_t pids[64];
        long ranks[64];
        size_t np = 0;
        for (unsigned k = 0; k < started && np < 64; k++) {
            pids[np] = ds[k].pid;
            ranks[np++] = ds[k].rank;
        }
        char stopmsg[PDCBB_JOB_ERR_LEN] = "";
        if (job_stop_all(job, dir, rank_lo, rank_hi, pids, ranks, np, NULL, stopmsg,
                         sizeof(stopmsg)) != PDCBB_OK)
            PDCBB_ERROR("job %" PRIu64 ": clean-up after failed prolog: %s", job->job_id,
                        stopmsg);
        /* The record names its node: clients that see several nodes' directories quote it,
         * and a task on another node must not read it as its own node's failure. */
        char text[PDCBB_JOB_ERR_LEN + 300];
        snprintf(text, sizeof(text), "node %s: %s", job->node_name, msg);
        job_files_t ef = {.dir = dir, .text = text};
        pdcbb_err_t wrc = job_as_user(&cr, job_write_error_file, &ef);
        if (wrc != PDCBB_OK)
            PDCBB_ERROR("job %" PRIu64 ": cannot write %s/prolog.error: %s", job->job_id, dir,
                        pdcbb_strerror(wrc));
        /* Clients on the other nodes learn why this node has no daemons. */
        pdcbb_job_rendezvous_report(job, rdv, msg);
    }
out:
    if (rc != PDCBB_OK) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s", msg);
        if (dirfd < 0)
            PDCBB_ERROR("job %" PRIu64 " on %s: %s", job->job_id, job->node_name, msg);
    }
    if (ds != NULL) {
        for (unsigned k = 0; k < spn; k++)
            if (ds[k].rfd >= 0)
                close(ds[k].rfd);
    }
    free(ds);
    free(cfg);
    if (dirfd >= 0)
        close(dirfd);
    job_creds_free(&cr);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Epilog and removal                                                                         */
/* ---------------------------------------------------------------------------------------- */

typedef struct job_died_arg {
    const pdcbb_job_t *job;
    const char *dir;
} job_died_arg_t;

typedef struct job_died_out {
    unsigned count;
    char text[2048]; /* the lines appended to daemons.died */
} job_died_out_t;

/* The last non-empty line of a file opened without following links ("" if none). */
static void job_last_line(int dirfd, const char *name, char *out, size_t len)
{
    char buf[1025];
    out[0] = '\0';
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > 1024 ? end - 1024 : 0;
    ssize_t n = end > 0 ? pread(fd, buf, (size_t)(end - from), from) : 0;
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    const char *l = strrchr(buf, '\n');
    snprintf(out, len, "%s", l ? l + 1 : buf);
}

/*
 * As the job user, before the daemons are stopped: a bbd-R.pid whose process is gone (a daemon
 * that exits on its own removes its pid file first) means the daemon died during the job.
 * Append one line per such daemon to daemons.died (rank, pid, how, its last log line); the
 * drain keeps that record and the daemons' logs (docs/DRAIN-FORMAT.md, logs/). The daemon is
 * not our child, so its exit status is not knowable: its log's last line is the best witness.
 */
static pdcbb_err_t job_record_died(void *arg, void *out)
{
    const job_died_arg_t *a = arg;
    job_died_out_t *o = out;
    memset(o, 0, sizeof(*o));
    int dirfd = open(a->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0)
        return PDCBB_OK;
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        close(dirfd);
        return PDCBB_OK;
    }
    size_t used = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        long rank = job_pidfile_rank(de->d_name);
        if (rank < 0)
            continue;
        pid_t pid = job_pidfile_read(dirfd, de->d_name);
        if (pid > 0 && pdcbb_job_daemon_alive(pid, a->job->job_id, a->dir))
            continue;
        char logname[64], last[600];
        snprintf(logname, sizeof(logname), "bbd-%ld.log", rank);
        job_last_line(dirfd, logname, last, sizeof(last));
        time_t now = time(NULL);
        struct tm tm;
        char when[32];
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
        used += (size_t)snprintf(
            o->text + used, used < sizeof(o->text) ? sizeof(o->text) - used : 0,
            "%s node %s: daemon rank %ld (pid %ld) was not running when the job ended: it died "
            "during the job (killed or crashed; it did not exit on its own)%s%s\n",
            when, a->job->node_name, rank, (long)pid, last[0] ? "; last log line: " : "",
            last);
        o->count++;
    }
    closedir(d);
    if (used >= sizeof(o->text))
        used = sizeof(o->text) - 1;
    if (o->count > 0) {
        int wfd = openat(dirfd, "daemons.died",
                         O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (wfd >= 0) {
            ssize_t w = write(wfd, o->text, used);
            (void)w;
            close(wfd);
        }
    }
    close(dirfd);
    return PDCBB_OK;
}

/*
 * The ranks of this node's daemons, when the job says which node it is (rank_hi < 0: every rank).
 * The epilog stops, and the removal of the job directory waits for, this node's daemons only: a
 * /proc scan must not take another node's daemons for this one's where nodes share a process
 * table and the node-local path (the test cluster's nodes on one host).
 */
static void job_node_ranks(const pdcbb_job_t *job, long *rank_lo, long *rank_hi)
{
    *rank_lo = 0;
    *rank_hi = -1;
    if (job->nnodes > 0 && job->node_index < job->nnodes && job->cfg.servers_per_node > 0) {
        *rank_lo = (long)job->node_index * (long)job->cfg.servers_per_node;
        *rank_hi = *rank_lo + (long)job->cfg.servers_per_node;
    }
}

pdcbb_err_t pdcbb_job_epilog_stats(const pdcbb_job_t *job, pdcbb_job_stop_stats_t *stats,
                                   char *err, size_t errlen)
{
    char dir[PATH_MAX];
    pdcbb_job_stop_stats_t st;
    pdcbb_err_t rc;

    memset(&st, 0, sizeof(st));
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (stats != NULL)
        *stats = st;
    if (job == NULL) {
        pdcbb_errf(err, errlen, "no job");
        return PDCBB_ERR_INVAL;
    }
    if ((rc = pdcbb_job_dir(job, dir, sizeof(dir))) != PDCBB_OK) {
        pdcbb_errf(err, errlen, "cannot name the job directory under '%s': %s", job_root(job),
                 pdcbb_strerror(rc));
        PDCBB_ERROR("job %" PRIu64 ": %s", job->job_id, err ? err : "");
        return rc;
    }
    /* Before stopping anything: which daemons died during the job (daemons.died). */
    static job_died_out_t died; /* large: not on the stack of a plugin */
    job_died_arg_t da = {.job = job, .dir = dir};
    char xerr[256] = "";
    memset(&died, 0, sizeof(died));
    if (access(dir, F_OK) == 0 &&
        pdcbb_job_as_user(job, job_record_died, &da, &died, sizeof(died), xerr, sizeof(xerr)) ==
            PDCBB_OK &&
        died.count > 0)
        PDCBB_ERROR("job %" PRIu64 " on %s: %s", job->job_id, job->node_name, died.text);
    long rank_lo, rank_hi;
    job_node_ranks(job, &rank_lo, &rank_hi);
    rc = job_stop_all(job, dir, rank_lo, rank_hi, NULL, NULL, 0, &st, err, errlen);
    st.died = died.count;
    if (died.count > 0)
        job_note(err, errlen, "%u daemon%s died during the job (recorded in %s/daemons.died; "
                              "a drain keeps it with the daemons' logs in its logs/)",
                 died.count, died.count == 1 ? "" : "s", dir);
    if (stats != NULL)
        *stats = st;
    if (rc == PDCBB_OK)
        pdcbb_job_rendezvous_cleanup(job);
    if (rc == PDCBB_OK)
        PDCBB_INFO("job %" PRIu64 " on %s: %u daemon%s stopped (%u killed)%s%s", job->job_id,
                   job->node_name, st.found, st.found == 1 ? "" : "s", st.killed,
                   err && err[0] ? ": " : "", err ? err : "");
    else
        PDCBB_ERROR("job %" PRIu64 " on %s: %s", job->job_id, job->node_name, err ? err : "");
    return rc;
}

pdcbb_err_t pdcbb_job_epilog(const pdcbb_job_t *job, char *err, size_t errlen)
{
    return pdcbb_job_epilog_stats(job, NULL, err, errlen);
}

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
