/*
 * pdcbb_job_mount.c - the job's filesystem on one node (mount=yes): starting pdcbb_mount on the
 * job directory's mnt/ and stopping it (pdcbb_job.h; docs/INTERNALS.md "The mount").
 *
 * The mount process is started by the caller, who must be the job user (`pdcbb run`): it then
 * mounts through fusermount3, and the kernel lets nobody else into the mount. Stopping unmounts
 * lazily (a process that still holds a file open loses the mount, not the node), then ends the
 * process: a node is never left with a dead mount.
 */
#include "pdcbb_job_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pdcbb_jobdir.h"
#include "pdcbb_log.h"

#define MOUNT_DIR "mnt"
#define MOUNT_PID "mount.pid"

/* <job dir>/name into out. */
static pdcbb_err_t mount_path_of(const pdcbb_job_t *job, const char *name, char *out, size_t len)
{
    char dir[PATH_MAX];
    pdcbb_err_t rc = pdcbb_job_dir(job, dir, sizeof(dir));
    return rc != PDCBB_OK ? rc : pdcbb_jobdir_path(dir, name, out, len);
}

/* Is path the root of a mount (its device differs from its parent's)? */
static int is_mounted(const char *path)
{
    char parent[PATH_MAX + 4];
    struct stat a, b;
    snprintf(parent, sizeof(parent), "%s/..", path);
    return stat(path, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

/* Run argv and wait for it; its exit status, or -1. */
static int run_wait(char *const argv[])
{
    pid_t p = fork();
    if (p < 0)
        return -1;
    if (p == 0) {
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 1);
            dup2(nul, 2);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(p, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

pdcbb_err_t pdcbb_job_mount_start(const pdcbb_job_t *job, const char *mount_path, char *mnt,
                                  size_t mntlen, char *err, size_t errlen)
{
    char dir[PATH_MAX], pidfile[PATH_MAX], fd_s[16];
    int ready[2];
    pdcbb_err_t rc;
    if ((rc = pdcbb_job_dir(job, dir, sizeof(dir))) != PDCBB_OK ||
        (rc = pdcbb_jobdir_path(dir, MOUNT_DIR, mnt, mntlen)) != PDCBB_OK ||
        (rc = pdcbb_jobdir_path(dir, MOUNT_PID, pidfile, sizeof(pidfile))) != PDCBB_OK) {
        pdcbb_errf(err, errlen, "job directory path under '%s' is too long", job_root(job));
        return rc;
    }
    if (mkdir(mnt, 0700) != 0 && errno != EEXIST) {
        pdcbb_errf(err, errlen, "cannot create the mount point %s: %s", mnt, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    if (pipe2(ready, O_CLOEXEC) != 0) {
        pdcbb_errf(err, errlen, "cannot create a pipe: %s", strerror(errno));
        return PDCBB_ERR_INTERNAL;
    }
    pid_t pid = fork();
    if (pid < 0) {
        pdcbb_errf(err, errlen, "cannot fork: %s", strerror(errno));
        close(ready[0]);
        close(ready[1]);
        return PDCBB_ERR_INTERNAL;
    }
    if (pid == 0) {
        /* the mount's own session, so a Ctrl-C of the job's command does not reach it; no
         * signal blocked or ignored from the caller */
        setsid();
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        int wfd = ready[1] >= 3 ? ready[1] : fcntl(ready[1], F_DUPFD, 3);
        fcntl(wfd, F_SETFD, 0);
        snprintf(fd_s, sizeof(fd_s), "%d", wfd);
        setenv("PDCBB_JOB_DIR", dir, 1);
        /* the node's name as its tasks know it: libpdc moves the bytes of this node's daemons
         * itself (the direct path) only for daemons that name its node */
        setenv("PDCBB_NODE_NAME", job->node_name, 1);
        char logp[PATH_MAX + 16];
        snprintf(logp, sizeof(logp), "%s/mount.log", dir);
        int log = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0)
            dup2(nul, 0);
        if (log >= 0) {
            dup2(log, 1);
            dup2(log, 2);
        }
        char *argv[] = {(char *)mount_path, "--ready-fd", fd_s, mnt, NULL};
        execv(mount_path, argv);
        dprintf(wfd, "error cannot execute %s: %s\n", mount_path, strerror(errno));
        _exit(127);
    }
    close(ready[1]);
    /* wait for "ready" (or an error line, or the process's end) */
    char line[512] = "";
    size_t used = 0;
    int ms = (int)(job->cfg.ready_timeout * 1000.0);
    while (used + 1 < sizeof(line)) {
        struct pollfd p = {.fd = ready[0], .events = POLLIN};
        int n = poll(&p, 1, ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        ssize_t r = read(ready[0], line + used, sizeof(line) - 1 - used);
        if (r <= 0)
            break;
        used += (size_t)r;
        line[used] = '\0';
        if (strchr(line, '\n'))
            break;
    }
    close(ready[0]);
    line[strcspn(line, "\n")] = '\0';
    if (strcmp(line, "ready") != 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        char ignored[256];
        if (is_mounted(mnt))
            pdcbb_job_mount_stop(job, ignored, sizeof(ignored));
        pdcbb_errf(err, errlen, "the filesystem did not start at %s: %s (see %s/mount.log)", mnt,
                   line[0] ? line : "no answer within ready_timeout", dir);
        return PDCBB_ERR_DISCOVERY;
    }
    FILE *f = fopen(pidfile, "we");
    if (f != NULL) {
        fprintf(f, "%ld\n", (long)pid);
        fclose(f);
    }
    PDCBB_INFO("job %" PRIu64 " on %s: filesystem at %s (pid %ld)", job->job_id, job->node_name,
               mnt, (long)pid);
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_job_mount_stop(const pdcbb_job_t *job, char *err, size_t errlen)
{
    char mnt[PATH_MAX], pidfile[PATH_MAX];
    pdcbb_err_t rc;
    if ((rc = mount_path_of(job, MOUNT_DIR, mnt, sizeof(mnt))) != PDCBB_OK ||
        (rc = mount_path_of(job, MOUNT_PID, pidfile, sizeof(pidfile))) != PDCBB_OK)
        return rc;
    long pid = 0;
    FILE *f = fopen(pidfile, "re");
    if (f != NULL) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    if (pid <= 0 && !is_mounted(mnt))
        return PDCBB_OK; /* no filesystem on this node */
    if (is_mounted(mnt)) {
        /* lazily: a process still in it loses it; the node is left clean */
        int ok = geteuid() == 0
                     ? umount2(mnt, MNT_DETACH) == 0
                     : run_wait((char *const[]){"fusermount3", "-u", "-z", mnt, NULL}) == 0;
        if (!ok && is_mounted(mnt)) {
            pdcbb_errf(err, errlen, "cannot unmount the job's filesystem at %s", mnt);
            rc = PDCBB_ERR_BUSY;
        }
    }
    if (pid > 0 && kill((pid_t)pid, 0) == 0) {
        kill((pid_t)pid, SIGTERM);
        for (int i = 0; i < 100 && kill((pid_t)pid, 0) == 0; i++) {
            if (waitpid((pid_t)pid, NULL, WNOHANG) == (pid_t)pid)
                break;
            usleep(20000);
        }
        if (kill((pid_t)pid, 0) == 0 && waitpid((pid_t)pid, NULL, WNOHANG) != (pid_t)pid) {
            kill((pid_t)pid, SIGKILL);
            waitpid((pid_t)pid, NULL, 0);
        }
    }
    unlink(pidfile);
    if (rc == PDCBB_OK)
        rmdir(mnt);
    return rc;
}
