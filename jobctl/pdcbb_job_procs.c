/*
 * pdcbb_job_procs.c - recognising the job's daemons among the node's processes
 * (pdcbb_job_internal.h).
 *
 * Owns what /proc says about a process (its command line, executable and real uid), the test
 * "is this pid a live pdc_bbd of this job" that guards every signal the epilog sends, and the
 * daemons' pid files in the job directory (bbd-R.pid: naming, reading without following links
 * or blocking, removing a gone daemon's pid and endpoint files).
 */
#include "pdcbb_job_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
 * When we are root, the process must also run as the job user. A daemon binary under another
 * name (PDCBB_DAEMON_PATH to a copy, a site's own path) is known from its pid file only, by its
 * command line naming this job's id and directory; the /proc scan takes only pdc_bbd.
 */
bool job_is_daemon(pid_t pid, uint64_t job_id, const char *job_dir, long uid, bool strict,
                   job_proc_info_t *pi)
{
    if (!pdcbb_pid_alive(pid) || !job_proc_read(pid, pi))
        return false;
    bool renamed = !strict && job_id != 0 && job_dir != NULL && pi->has_job_id && pi->has_job_dir &&
                   pi->job_id == job_id && job_same_dir(pi->job_dir, job_dir);
    if (!pi->is_bbd && !renamed)
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

/* "bbd-R.pid" -> R; -1 if the name is not a pid file. */
long job_pidfile_rank(const char *name)
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
pid_t job_pidfile_read(int dirfd, const char *name)
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
void job_remove_rank_files(int dirfd, long rank)
{
    char name[64];
    if (dirfd < 0 || rank < 0)
        return;
    snprintf(name, sizeof(name), "bbd-%ld.pid", rank);
    unlinkat(dirfd, name, 0);
    snprintf(name, sizeof(name), "bbd-%ld.endpoint", rank);
    unlinkat(dirfd, name, 0);
}
