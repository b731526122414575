/*
 * pdcbb_job_drain.c - drain a node's part of a job as the job user, then remove its data.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdcbb_job_drain.h"
#include "pdcbb_job_internal.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_log.h"

#define DRAIN_ERROR_FILE "drain.error"
#define DRAIN_LOG_FILE "drain.log"

typedef struct drain_result {
    pdcbb_drain_node_stats_t stats;
    char err[PDCBB_JOB_ERR_LEN];
    char report[PATH_MAX]; /* where the FAILED report went ("" if none could be written) */
} drain_result_t;

/* In the job user's process: write (or, with text NULL, remove) <job dir>/drain.error. */
static void drain_error_file(const char *dir, const char *text)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    if (pdcbb_jobdir_path(dir, DRAIN_ERROR_FILE, path, sizeof(path)) != PDCBB_OK)
        return;
    if (text == NULL) {
        unlink(path);
        return;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    size_t len = strlen(text);
    int ok = write(fd, text, len) == (ssize_t)len && write(fd, "\n", 1) == 1;
    if (close(fd) == 0 && ok && rename(tmp, path) == 0)
        return;
    unlink(tmp);
}

/* Copy dir/name (not followed if a link) to dest (a new file, written then renamed). */
static int drain_copy_file(int dirfd, const char *name, const char *dest)
{
    char tmp[PATH_MAX + 32], buf[65536];
    int in = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (in < 0)
        return errno == ENOENT ? 0 : -1;
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", dest, (long)getpid());
    int outfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int ok = outfd >= 0;
    ssize_t n;
    while (ok && (n = read(in, buf, sizeof(buf))) != 0)
        ok = n > 0 && write(outfd, buf, (size_t)n) == n;
    close(in);
    if (outfd >= 0 && close(outfd) != 0)
        ok = 0;
    if (ok && rename(tmp, dest) == 0)
        return 0;
    if (outfd >= 0)
        unlink(tmp);
    return -1;
}

int pdcbb_job_drain_keep_logs(const char *job_dir, const char *drain_dir, const char *node)
{
    char logs[PATH_MAX], dest[PATH_MAX];
    if (snprintf(logs, sizeof(logs), "%s/logs", drain_dir) >= (int)sizeof(logs))
        return -1;
    if (mkdir(logs, 0755) != 0 && errno != EEXIST)
        return -1;
    DIR *d;
    int dirfd = job_dir_open(job_dir, &d);
    if (dirfd < 0)
        return -1;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        size_t l = strlen(n);
        int daemon_log = strncmp(n, "bbd-", 4) == 0 && l > 8 && strcmp(n + l - 4, ".log") == 0 &&
                         strspn(n + 4, "0123456789") == l - 8;
        if (!daemon_log && strcmp(n, "daemons.died") != 0 &&
            strcmp(n, "script-start.log") != 0 && strcmp(n, "script-end.log") != 0)
            continue;
        if (snprintf(dest, sizeof(dest), "%s/%s.%s", logs, node, n) >= (int)sizeof(dest) ||
            drain_copy_file(dirfd, n, dest) != 0)
            rc = -1;
    }
    closedir(d);
    close(dirfd);
    return rc;
}

typedef struct drain_call {
    pdcbb_drain_job_t job;
    pdcbb_drain_progress_fn progress;
    void *arg;
} drain_call_t;

/* Runs as the job user. */
static pdcbb_err_t drain_as_user(void *arg, void *out)
{
    const drain_call_t *call = arg;
    const pdcbb_drain_job_t *dj = &call->job;
    drain_result_t *res = out;
    memset(res, 0, sizeof(*res));
    /* Progress goes to <job dir>/drain.log: `tail -f` it during a long drain; it stays with
     * the data when the drain fails. */
    char log[PATH_MAX];
    int saved_level = pdcbb_log_level_current, logging = 0;
    if (pdcbb_jobdir_path(dj->job_dir, DRAIN_LOG_FILE, log, sizeof(log)) == PDCBB_OK &&
        pdcbb_log_open(log) == 0) {
        logging = 1;
        if (saved_level < PDCBB_LOG_INFO)
            pdcbb_log_set_level(PDCBB_LOG_INFO);
    }
    pdcbb_err_t rc =
        pdcbb_drain_node(dj, &res->stats, call->progress, call->arg, res->err, sizeof(res->err));
    /* The daemons' logs (and the record of any that died) outlive the node-local data. */
    if (rc == PDCBB_OK && res->stats.drain_dir[0] &&
        pdcbb_job_drain_keep_logs(dj->job_dir, res->stats.drain_dir, dj->node) != 0)
        PDCBB_ERROR("job %" PRIu64 ": cannot copy the daemons' logs of %s to %s/logs: %s",
                    dj->job_id, dj->job_dir, res->stats.drain_dir, strerror(errno));
    drain_error_file(dj->job_dir, rc == PDCBB_OK ? NULL : res->err);
    /* The user learns of a failed drain without node logs: a report beside the destination
     * (or in the home directory), removed again once a later drain of this node succeeds. */
    if (rc == PDCBB_OK) {
        pdcbb_drain_report_remove(dj->destination, dj->job_id, dj->node);
    } else {
        pdcbb_drain_report_t r = {.job_id = dj->job_id, .node = dj->node, .user = dj->user,
                                  .destination = dj->destination,
                                  .drain_dir = res->stats.drain_dir, .job_dir = dj->job_dir,
                                  .reason = res->err, .instance = dj->instance};
        if (pdcbb_drain_report_write(&r, res->report, sizeof(res->report)) != PDCBB_OK)
            PDCBB_ERROR("cannot write a FAILED report for job %llu in %s or the home directory",
                        (unsigned long long)dj->job_id, dj->destination);
    }
    if (logging) {
        pdcbb_log_close();
        pdcbb_log_set_level((pdcbb_log_level_t)saved_level);
    }
    return rc;
}

pdcbb_err_t pdcbb_job_drain(const pdcbb_job_t *job, int keep, pdcbb_drain_progress_fn progress,
                            void *arg, pdcbb_drain_node_stats_t *stats, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    pdcbb_err_t rc = pdcbb_job_dir(job, dir, sizeof(dir));
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "job directory name too long");
        return rc;
    }
    if (stats)
        memset(stats, 0, sizeof(*stats));
    err[0] = '\0';
    if (access(dir, F_OK) != 0 && errno == ENOENT) {
        snprintf(err, errlen, "no job directory %s: nothing to drain", dir);
        return PDCBB_OK;
    }
    char perr[PATH_MAX];
    int never_started = pdcbb_jobdir_path(dir, "prolog.error", perr, sizeof(perr)) == PDCBB_OK &&
                        access(perr, F_OK) == 0;
    if (job->cfg.drain[0] == '\0' || never_started) {
        /* no destination, or a burst buffer that never served anyone (the prolog stopped
         * whatever it had started): nothing to keep */
        if (never_started)
            snprintf(err, errlen, "the burst buffer never started on this node: nothing to drain");
        return keep ? PDCBB_OK : pdcbb_job_remove_dir(job, err, errlen);
    }

    char user[256];
    struct passwd pw, *pr = NULL;
    char pwbuf[16384];
    if (getpwuid_r(job->uid, &pw, pwbuf, sizeof(pwbuf), &pr) == 0 && pr != NULL)
        snprintf(user, sizeof(user), "%s", pw.pw_name);
    else
        snprintf(user, sizeof(user), "%ld", (long)job->uid);
    drain_call_t call = {.progress = progress, .arg = arg};
    call.job = (pdcbb_drain_job_t){
        .job_id = job->job_id,
        .uid = job->uid,
        .user = user,
        .node = job->node_name,
        .node_index = job->node_index,
        .nnodes = job->nnodes,
        .servers_per_node = job->cfg.servers_per_node,
        .job_dir = dir,
        .destination = job->cfg.drain,
        .instance = job->instance,
        .cluster = job->cluster,
        .may_create = 0 /* only the prolog creates it: never one someone else prepared */};
    static drain_result_t res; /* large: not on the stack of a plugin */
    memset(&res, 0, sizeof(res));
    char xerr[PDCBB_JOB_ERR_LEN] = "";
    rc = pdcbb_job_as_user(job, drain_as_user, &call, &res, sizeof(res), xerr, sizeof(xerr));
    if (stats)
        *stats = res.stats;
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "drain to %s failed: %s", job->cfg.drain,
                 res.err[0] ? res.err : xerr[0] ? xerr : pdcbb_strerror(rc));
        if (strstr(err, dir) == NULL) {
            size_t n = strlen(err);
            snprintf(err + n, errlen - n, "; node-local data kept in %s", dir);
        }
        size_t n = strlen(err);
        if (res.report[0])
            snprintf(err + n, errlen - n, "; report in %s", res.report);
        return rc;
    }
    if (keep)
        return PDCBB_OK;
    return pdcbb_job_remove_dir(job, err, errlen);
}
