/*
 * pdcbb_job.c - per-node prolog and epilog of a pdcbb job (pdcbb_job.h).
 *
 * Owns the order of everything that happens to a node between "the job was allocated here" and
 * "the job's daemons are gone": the prolog checks the job description, creates and checks the
 * job directory (pdcbb_job_dir.c), refuses a restart over running daemons, checks capacity,
 * writes the token, the resolved config and job.info, prepares the drain, starts the daemons
 * and waits for them (pdcbb_job_start.c), and on failure stops what it started
 * (pdcbb_job_stop.c) and records why in prolog.error; the epilog records daemons that died
 * during the job in daemons.died and stops the node's daemons. Credentials are in
 * pdcbb_job_creds.c, recognising our daemons in pdcbb_job_procs.c.
 *
 * When this runs as root for another user (the Slurm prolog), every file operation inside the
 * user-owned job directory that could follow a link the user planted (writing token, config and
 * prolog.error, removing the tree) runs in a short-lived child that has dropped to the job user;
 * root itself only creates the directory, checks it through a descriptor, reads pid files with
 * O_NOFOLLOW and unlinks names. Signals go only to processes that look like pdc_bbd of this job.
 */
#include "pdcbb_job_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pdcbb_drain.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_log.h"

/* ---------------------------------------------------------------------------------------- */
/* Small helpers shared by the parts (pdcbb_job_internal.h)                                 */
/* ---------------------------------------------------------------------------------------- */

/* Append "; <message>" (or just the message when err is empty). */
void job_note(char *err, size_t errlen, const char *fmt, ...)
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

void job_log_tail(const char *log, unsigned max_lines, char *out, size_t len)
{
    out[0] = '\0';
    int fd = open(log, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[2048];
    off_t end = lseek(fd, 0, SEEK_END);
    off_t start = end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, start);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    const char *lines[JOB_LOG_TAIL_MAX];
    if (max_lines > JOB_LOG_TAIL_MAX)
        max_lines = JOB_LOG_TAIL_MAX;
    int nl = 0;
    for (char *p = buf + n; p > buf && nl < (int)max_lines;) {
        while (p > buf && (p[-1] == '\n' || p[-1] == '\r'))
            *--p = '\0';
        char *e = p;
        while (p > buf && p[-1] != '\n')
            p--;
        if (e > p && (start == 0 || p > buf)) /* never a line cut by the window */
            lines[nl++] = p;
    }
    size_t o = 0;
    for (int i = nl - 1; i >= 0 && o < len; i--)
        o += (size_t)snprintf(out + o, len - o, "%s%s", o ? "; " : "", lines[i]);
}

double job_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The effective local root: job->local_root overrides cfg.local_root. */
const char *job_root(const pdcbb_job_t *job)
{
    return job->local_root[0] != '\0' ? job->local_root : job->cfg.local_root;
}

/* strerror that is async-signal-safe (a static description, never translated). */
const char *job_strerror(int e)
{
    const char *s = strerrordesc_np(e);
    return s != NULL ? s : "unknown error";
}

/* ---------------------------------------------------------------------------------------- */
/* Prolog                                                                                   */
/* ---------------------------------------------------------------------------------------- */

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
    if (pdcbb_cluster_name_ok(f->job->cluster))
        snprintf(ji.cluster, sizeof(ji.cluster), "%s", f->job->cluster);
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
    return pdcbb_drain_dir_create(job->cfg.drain, job->job_id, job->instance, job->cluster,
                                  share < 0 ? PDCBB_DRAIN_SHARE_NONE : share, p->dir,
                                  sizeof(p->dir), p->note, sizeof(p->note), p->err, sizeof(p->err));
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
/* Epilog                                                                                     */
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
    DIR *d;
    int dirfd = job_dir_open(a->dir, &d);
    if (dirfd < 0)
        return PDCBB_OK;
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
    /* The filesystem first: its process is a client of the daemons. */
    char merr[PDCBB_JOB_ERR_LEN] = "";
    if (pdcbb_job_mount_stop(job, merr, sizeof(merr)) != PDCBB_OK)
        PDCBB_ERROR("job %" PRIu64 " on %s: %s", job->job_id, job->node_name, merr);
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
