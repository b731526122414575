/*
 * pdcbb_job_report.c - telling the job's user what became of the job's data, where a user
 * looks: the line each node adds at the end of the job's output (the Slurm epilog) and that
 * `pdcbb run` prints, written as the job user.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdcbb_job_drain.h"
#include "pdcbb_name.h"

void pdcbb_job_drain_line(const pdcbb_job_t *job, pdcbb_err_t rc,
                          const pdcbb_drain_node_stats_t *st, const char *err, char *out,
                          size_t len)
{
    out[0] = '\0';
    if (job->cfg.drain[0] == '\0')
        return;
    if (rc != PDCBB_OK) {
        snprintf(out, len,
                 "pdcbb: job %" PRIu64 " node %s: drain FAILED: %s; see: pdcbb why --job %" PRIu64
                 " %s",
                 job->job_id, pdcbb_esc(job->node_name), pdcbb_esc(err && err[0] ? err : "?"),
                 job->job_id, pdcbb_esc(job->cfg.drain));
        return;
    }
    if (st == NULL || st->drain_dir[0] == '\0')
        return;
    if (st->ranks_drained == 0) {
        snprintf(out, len, "pdcbb: job %" PRIu64 " node %s: nothing to drain; the job's drain is "
                           "in %s%s",
                 job->job_id, pdcbb_esc(job->node_name), pdcbb_esc(st->drain_dir),
                 st->complete ? " (complete)" : "");
        return;
    }
    snprintf(out, len,
             "pdcbb: job %" PRIu64 " node %s: drained %.1f MiB of %u rank%s to %s; %s",
             job->job_id, pdcbb_esc(job->node_name), (double)st->bytes / 1048576.0,
             st->ranks_drained, st->ranks_drained == 1 ? "" : "s", pdcbb_esc(st->drain_dir),
             st->complete ? "the job's drain is complete" : "other nodes still draining");
}

typedef struct output_append {
    const char *path;
    const char *line;
} output_append_t;

/* In the job user's process: append the line to a regular file of the user. */
static pdcbb_err_t output_append_as_user(void *arg, void *out)
{
    const output_append_t *a = arg;
    char *why = out;
    int fd = open(a->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, PDCBB_JOB_ERR_LEN, "cannot open %s: %s", a->path, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        close(fd);
        snprintf(why, PDCBB_JOB_ERR_LEN, "%s is not a regular file of the job user", a->path);
        return PDCBB_ERR_PERM;
    }
    char buf[PDCBB_JOB_ERR_LEN * 2];
    int n = snprintf(buf, sizeof(buf), "%s\n", a->line);
    if (n < 0 || (size_t)n >= sizeof(buf))
        n = (int)strlen(buf);
    ssize_t w = write(fd, buf, (size_t)n);
    int e = errno;
    close(fd);
    if (w != n) {
        snprintf(why, PDCBB_JOB_ERR_LEN, "cannot write %s: %s", a->path,
                 w < 0 ? strerror(e) : "short write");
        return PDCBB_ERR_IO;
    }
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_job_output_append(const pdcbb_job_t *job, const char *path, const char *line,
                                    char *err, size_t errlen)
{
    char why[PDCBB_JOB_ERR_LEN] = "";
    output_append_t a = {path, line};
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (path == NULL || path[0] != '/' || line == NULL) {
        snprintf(err, errlen, "no absolute output file to append to");
        return PDCBB_ERR_INVAL;
    }
    pdcbb_err_t rc =
        pdcbb_job_as_user(job, output_append_as_user, &a, why, sizeof(why), err, errlen);
    if (rc != PDCBB_OK && why[0])
        snprintf(err, errlen, "%s", why);
    return rc;
}
