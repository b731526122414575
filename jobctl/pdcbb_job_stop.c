/*
 * pdcbb_job_stop.c - stopping the job's daemons on this node (pdcbb_job_internal.h): the
 * epilog, and the prolog's clean-up after a failed start.
 *
 * Daemons are collected from their pid files and, in case those are lost, from a /proc scan
 * (pdcbb_job_procs.c says which processes are ours); each gets SIGTERM, a bounded wait, then
 * SIGKILL and a last wait. Stale pid files are removed, never signalled. The same collection
 * without signals answers "is a daemon of these ranks still running" (job_find_running).
 */
#include "pdcbb_job_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pdcbb_grow.h"
#include "pdcbb_log.h"

/* How long the epilog waits for a process after SIGKILL (D state, slow reaping). */
#define JOB_KILL_WAIT 5.0
/* Poll interval while waiting for processes to exit. */
#define JOB_POLL_NS (10 * 1000 * 1000L)

static void job_nap(void)
{
    struct timespec ts = {0, JOB_POLL_NS};
    nanosleep(&ts, NULL);
}

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
    job_target_t *v = pdcbb_grow(t->v, t->n, &t->cap, sizeof(*v), 8);
    if (v == NULL)
        return PDCBB_ERR_NOMEM;
    t->v = v;
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
pdcbb_err_t job_stop_all(const pdcbb_job_t *job, const char *dir, long rank_lo, long rank_hi,
                         const pid_t *extra, const long *extra_rank, size_t nextra,
                         pdcbb_job_stop_stats_t *stats, char *err, size_t errlen)
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
size_t job_find_running(const pdcbb_job_t *job, const char *dir, long rank_lo, long rank_hi,
                        char *who, size_t len)
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

/*
 * The ranks of this node's daemons, when the job says which node it is (rank_hi < 0: every rank).
 * The epilog stops, and the removal of the job directory waits for, this node's daemons only: a
 * /proc scan must not take another node's daemons for this one's where nodes share a process
 * table and the node-local path (the test cluster's nodes on one host).
 */
void job_node_ranks(const pdcbb_job_t *job, long *rank_lo, long *rank_hi)
{
    *rank_lo = 0;
    *rank_hi = -1;
    if (job->nnodes > 0 && job->node_index < job->nnodes && job->cfg.servers_per_node > 0) {
        *rank_lo = (long)job->node_index * (long)job->cfg.servers_per_node;
        *rank_hi = *rank_lo + (long)job->cfg.servers_per_node;
    }
}
