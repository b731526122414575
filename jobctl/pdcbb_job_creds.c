/*
 * pdcbb_job_creds.c - who the job's daemons and files belong to (pdcbb_job_internal.h).
 *
 * Owns the job user's credentials (uid, gid and supplementary groups, resolved in the parent
 * because getpwuid and getgrouplist are not safe between fork and exec), the irreversible drop
 * to them in a forked child, and running a function as the job user: directly when no drop is
 * needed, else in a short-lived child that dropped first (job_as_user, and the public
 * pdcbb_job_as_user that also carries a result back through a pipe).
 */
#include "pdcbb_job_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pdcbb_log.h"

void job_creds_free(job_creds_t *cr)
{
    free(cr->groups);
    cr->groups = NULL;
    cr->ngroups = 0;
}

/*
 * Resolve the job user's groups now, in the parent: getpwuid and getgrouplist are not safe
 * between fork and exec. A user without a passwd entry gets only the job's gid.
 */
pdcbb_err_t job_creds_init(const pdcbb_job_t *job, job_creds_t *cr, char *err, size_t errlen)
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
int job_creds_drop(const job_creds_t *cr)
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
pdcbb_err_t job_as_user(const job_creds_t *cr, pdcbb_err_t (*fn)(void *), void *arg)
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
