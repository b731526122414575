/*
 * pdcbb_job_start.c - starting the job's daemons on this node (pdcbb_job_internal.h).
 *
 * Each daemon is started by a double fork: the middle child setsid()s, forks the daemon,
 * reports its pid and exits, so the daemon is re-parented away from the caller (Slurm never
 * waits for it). Between fork and exec the daemon's process drops to the job user, resets
 * signals, closes inherited descriptors and keeps only its ready pipe, using nothing but
 * system calls and the async-signal-safe helpers here. The caller then waits on the pipes
 * until every daemon wrote "ready ..." or one failed, timed out or a signal cut the wait.
 */
#include "pdcbb_job_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pdcbb_jobdir.h"
#include "pdcbb_log.h"

/* Set by pdcbb_job_set_interrupt_flag: a non-zero value cuts the prolog's wait short. */
static volatile sig_atomic_t *job_interrupt;

void pdcbb_job_set_interrupt_flag(volatile sig_atomic_t *flag)
{
    job_interrupt = flag;
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
pdcbb_err_t job_start_daemon(const pdcbb_job_t *job, const job_creds_t *cr, const char *dir,
                             const char *cfgpath, unsigned nservers, job_daemon_t *d, char *err,
                             size_t errlen)
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
pdcbb_err_t job_wait_ready(const pdcbb_job_t *job, const char *dir, job_daemon_t *ds, size_t n,
                           char *err, size_t errlen)
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
