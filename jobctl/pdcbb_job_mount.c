/*
 * pdcbb_job_mount.c - the job's filesystem on one node (mount=yes): starting pdcbb_mount on the
 * job directory's mnt/ and stopping it (pdcbb_job.h; docs/INTERNALS.md "The mount").
 *
 * The mount process always runs as the job user: started by `pdcbb run` (the user) or by the
 * Slurm prolog (root, through pdcbb_job_as_user's child, which has dropped to the user), it
 * creates the mount point and mounts through fusermount3, so the kernel lets nobody else into
 * the mount. Stopping unmounts lazily (a process that still holds a file open loses the mount,
 * not the node), then ends the process: a node is never left with a dead mount. Whether a mount
 * is there is read from /proc/self/mountinfo, not from stat(): a dead FUSE mount answers stat
 * with ENOTCONN, and root is not let into a user's FUSE mount at all.
 *
 * As root (the epilog) nothing the user can write is trusted: the pid in mount.pid is signalled
 * only when that process belongs to the job user, and the mount point is unmounted without
 * following a symbolic link the user may have put there.
 */
#include "pdcbb_job_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
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

pdcbb_err_t pdcbb_job_mount_point(const pdcbb_job_t *job, char *out, size_t len)
{
    return mount_path_of(job, MOUNT_DIR, out, len);
}

/* mountinfo's escaped field (octal \ooo for blanks and backslashes) equals path? */
static bool mountinfo_field_is(const char *field, size_t flen, const char *path)
{
    size_t i = 0;
    for (const char *p = path; *p; p++) {
        if (i >= flen)
            return false;
        char c = field[i];
        if (c == '\\' && i + 3 < flen) {
            c = (char)(((field[i + 1] - '0') << 6) | ((field[i + 2] - '0') << 3) |
                       (field[i + 3] - '0'));
            i += 4;
        } else {
            i++;
        }
        if (c != *p)
            return false;
    }
    return i == flen;
}

/* Is something mounted exactly at path, in this process's mount namespace? */
static bool is_mounted(const char *path)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (f == NULL)
        return false;
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    while (!found && getline(&line, &cap, f) > 0) {
        /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...": the fifth field */
        char *p = line;
        for (int i = 0; i < 4 && p; i++)
            p = (p = strchr(p, ' ')) ? p + 1 : NULL;
        if (p != NULL)
            found = mountinfo_field_is(p, strcspn(p, " \n"), path);
    }
    free(line);
    fclose(f);
    return found;
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

/* Unmount path lazily: root directly (never following a link there), the user through the
 * setuid fusermount3. */
static bool unmount_lazily(const char *path)
{
    if (geteuid() == 0)
        return umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0;
    return run_wait((char *const[]){"fusermount3", "-u", "-z", (char *)path, NULL}) == 0;
}

/* The real uid of process pid and whether it is still running (not a zombie); false if gone. */
static bool process_running(pid_t pid, long *uid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return false;
    bool running = false;
    *uid = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "State:", 6) == 0)
            running = strchr(line, 'Z') == NULL && strchr(line, 'X') == NULL;
        else if (strncmp(line, "Uid:", 4) == 0)
            *uid = strtol(line + 4, NULL, 10);
    }
    fclose(f);
    return running;
}

typedef struct mount_start_arg {
    const pdcbb_job_t *job;
    const char *mount_path, *dir, *mnt, *pidfile;
} mount_start_arg_t;

typedef struct mount_start_out {
    char msg[PDCBB_JOB_ERR_LEN];
} mount_start_out_t;

/* As the job user: create the mount point, start pdcbb_mount on it and wait for "ready". */
static pdcbb_err_t mount_start_as_user(void *arg, void *out)
{
    const mount_start_arg_t *a = arg;
    mount_start_out_t *o = out;
    const pdcbb_job_t *job = a->job;
    char fd_s[16];
    int ready[2];
    o->msg[0] = '\0';
    if (mkdir(a->mnt, 0700) != 0 && errno != EEXIST) {
        pdcbb_errf(o->msg, sizeof(o->msg), "cannot create the mount point %s: %s", a->mnt,
                   strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    /* The mount is a client of every node's daemons: on a node whose prolog finished first,
     * wait (ready_timeout at most) until this node's daemon has found them all (job.table);
     * if it never does, the mount's own start names the node that is missing. */
    char table[PATH_MAX];
    struct stat st;
    double deadline = job_now() + job->cfg.ready_timeout;
    if (job->nnodes > 1 && pdcbb_jobdir_path(a->dir, "job.table", table, sizeof(table)) == PDCBB_OK)
        while (stat(table, &st) != 0 && job_now() < deadline)
            usleep(20000);
    if (pipe2(ready, O_CLOEXEC) != 0) {
        pdcbb_errf(o->msg, sizeof(o->msg), "cannot create a pipe: %s", strerror(errno));
        return PDCBB_ERR_INTERNAL;
    }
    pid_t pid = fork();
    if (pid < 0) {
        pdcbb_errf(o->msg, sizeof(o->msg), "cannot fork: %s", strerror(errno));
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
        signal(SIGPIPE, SIG_DFL);
        int wfd = ready[1] >= 3 ? ready[1] : fcntl(ready[1], F_DUPFD, 3);
        fcntl(wfd, F_SETFD, 0);
        snprintf(fd_s, sizeof(fd_s), "%d", wfd);
        setenv("PDCBB_JOB_DIR", a->dir, 1);
        /* the node's name as its tasks know it: libpdc moves the bytes of this node's daemons
         * itself (the direct path) only for daemons that name its node */
        setenv("PDCBB_NODE_NAME", job->node_name, 1);
        char logp[PATH_MAX + 16];
        snprintf(logp, sizeof(logp), "%s/mount.log", a->dir);
        int log = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0)
            dup2(nul, 0);
        if (log >= 0) {
            dup2(log, 1);
            dup2(log, 2);
        }
        char *argv[] = {(char *)a->mount_path, "--ready-fd", fd_s, (char *)a->mnt, NULL};
        execv(a->mount_path, argv);
        dprintf(wfd, "error cannot execute %s: %s\n", a->mount_path, strerror(errno));
        _exit(127);
    }
    close(ready[1]);
    /* wait for "ready" (or an error line, or the process's end) */
    char line[512] = "";
    size_t used = 0;
    int ms = (int)(job->cfg.ready_timeout * 1000.0);
    bool timed_out = false;
    while (used + 1 < sizeof(line)) {
        struct pollfd p = {.fd = ready[0], .events = POLLIN};
        int n = poll(&p, 1, ms);
        if (n < 0 && errno == EINTR)
            continue;
        timed_out = n == 0;
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
        if (is_mounted(a->mnt))
            unmount_lazily(a->mnt);
        rmdir(a->mnt);
        /* its own words: the error line it sent, else the end of its log */
        char why[384] = "", logp[PATH_MAX + 16];
        snprintf(logp, sizeof(logp), "%s/mount.log", a->dir);
        if (strncmp(line, "error ", 6) == 0)
            snprintf(why, sizeof(why), "%s", line + 6);
        else
            job_log_tail(logp, 2, why, sizeof(why));
        pdcbb_errf(o->msg, sizeof(o->msg), "the filesystem did not start at %s: %s%s%s (see %s)",
                   a->mnt, timed_out ? "no answer within ready_timeout" : "",
                   timed_out && why[0] ? ": " : "",
                   why[0] || timed_out ? why : "it ended without a word", logp);
        return PDCBB_ERR_DISCOVERY;
    }
    char num[32];
    int l = snprintf(num, sizeof(num), "%ld\n", (long)pid);
    if (pdcbb_write_file_atomic(a->pidfile, num, (size_t)l, 0600) != PDCBB_OK)
        PDCBB_WARN("cannot record the filesystem's pid in %s", a->pidfile);
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_job_mount_start(const pdcbb_job_t *job, const char *mount_path, char *mnt,
                                  size_t mntlen, char *err, size_t errlen)
{
    char dir[PATH_MAX], pidfile[PATH_MAX];
    pdcbb_err_t rc;
    if ((rc = pdcbb_job_dir(job, dir, sizeof(dir))) != PDCBB_OK ||
        (rc = pdcbb_jobdir_path(dir, MOUNT_DIR, mnt, mntlen)) != PDCBB_OK ||
        (rc = pdcbb_jobdir_path(dir, MOUNT_PID, pidfile, sizeof(pidfile))) != PDCBB_OK) {
        pdcbb_errf(err, errlen, "job directory path under '%s' is too long", job_root(job));
        return rc;
    }
    if (mount_path[0] != '/') {
        pdcbb_errf(err, errlen, "mount_path '%s' is not an absolute path", mount_path);
        return PDCBB_ERR_CONFIG;
    }
    mount_start_arg_t a = {
        .job = job, .mount_path = mount_path, .dir = dir, .mnt = mnt, .pidfile = pidfile};
    mount_start_out_t out;
    char aerr[256] = "";
    memset(&out, 0, sizeof(out));
    rc = pdcbb_job_as_user(job, mount_start_as_user, &a, &out, sizeof(out), aerr, sizeof(aerr));
    if (rc != PDCBB_OK) {
        pdcbb_errf(err, errlen, "%s", out.msg[0] ? out.msg : aerr);
        return rc;
    }
    PDCBB_INFO("job %" PRIu64 " on %s: filesystem at %s", job->job_id, job->node_name, mnt);
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
    int fd = open(pidfile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        char buf[32];
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        pid = strtol(buf, NULL, 10);
        close(fd);
    }
    bool mounted = is_mounted(mnt);
    if (pid <= 0 && !mounted)
        return PDCBB_OK; /* no filesystem on this node */
    if (mounted && !unmount_lazily(mnt) && is_mounted(mnt)) {
        /* lazily: a process still in it loses it; the node is left clean */
        pdcbb_errf(err, errlen, "cannot unmount the job's filesystem at %s: %s", mnt,
                   strerror(errno));
        rc = PDCBB_ERR_BUSY;
    }
    /* the process, only when it is the job user's (the pid file is the user's to write) */
    long uid;
    if (pid > 1 && process_running((pid_t)pid, &uid) && uid == (long)job->uid) {
        kill((pid_t)pid, SIGTERM);
        for (int i = 0; i < 100 && process_running((pid_t)pid, &uid); i++) {
            if (waitpid((pid_t)pid, NULL, WNOHANG) == (pid_t)pid)
                break;
            usleep(20000);
        }
        if (process_running((pid_t)pid, &uid) && uid == (long)job->uid) {
            kill((pid_t)pid, SIGKILL);
            for (int i = 0; i < 50 && process_running((pid_t)pid, &uid); i++)
                usleep(20000);
        }
    }
    if (pid > 1)
        waitpid((pid_t)pid, NULL, WNOHANG); /* our child (pdcbb run): reaped */
    unlink(pidfile);
    if (rc == PDCBB_OK)
        rmdir(mnt);
    return rc;
}

typedef struct stage_files_arg {
    const pdcbb_job_t *job;
    const char *dir, *mnt;
} stage_files_arg_t;

typedef struct stage_files_out {
    char msg[PDCBB_JOB_ERR_LEN];
} stage_files_out_t;

/* As the job user: copy the tree into the mount with cp (symbolic links as links, modes and
 * times kept), within stage_in_timeout; its output goes to stage-in-files.log. */
static pdcbb_err_t stage_files_as_user(void *arg, void *out)
{
    const stage_files_arg_t *a = arg;
    stage_files_out_t *o = out;
    const char *src = a->job->cfg.stage_in_files;
    struct stat st;
    o->msg[0] = '\0';
    const char *why = NULL;
    if (stat(src, &st) != 0)
        why = strerror(errno);
    else if (!S_ISDIR(st.st_mode))
        why = "not a directory";
    else if (access(src, R_OK | X_OK) != 0)
        why = "not a directory you can read";
    if (why != NULL) {
        pdcbb_errf(o->msg, sizeof(o->msg), "stage_in_files %s: %s", src, why);
        return PDCBB_ERR_NOT_FOUND;
    }
    char from[PATH_MAX + 4], to[PATH_MAX + 4], logp[PATH_MAX + 32];
    snprintf(from, sizeof(from), "%s/.", src);
    snprintf(to, sizeof(to), "%s/", a->mnt);
    snprintf(logp, sizeof(logp), "%s/stage-in-files.log", a->dir);
    int log = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    double t0 = job_now();
    pid_t pid = fork();
    if (pid < 0) {
        pdcbb_errf(o->msg, sizeof(o->msg), "stage_in_files: cannot fork: %s", strerror(errno));
        if (log >= 0)
            close(log);
        return PDCBB_ERR_INTERNAL;
    }
    if (pid == 0) {
        setpgid(0, 0);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        if (log >= 0) {
            dup2(log, 1);
            dup2(log, 2);
        }
        execlp("cp", "cp", "-R", "-P", "--preserve=mode,timestamps", "--", from, to, (char *)NULL);
        dprintf(2, "cannot execute cp: %s\n", strerror(errno));
        _exit(127);
    }
    if (log >= 0)
        close(log);
    int wst = 0;
    bool timed_out = false;
    for (;;) {
        pid_t r = waitpid(pid, &wst, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            break;
        if (job_now() - t0 > a->job->cfg.stage_in_timeout) {
            kill(-pid, SIGKILL);
            waitpid(pid, &wst, 0);
            timed_out = true;
            break;
        }
        usleep(20000);
    }
    if (timed_out || !WIFEXITED(wst) || WEXITSTATUS(wst) != 0) {
        char tail[512];
        job_log_tail(logp, 2, tail, sizeof(tail));
        pdcbb_errf(o->msg, sizeof(o->msg), "stage_in_files %s: copying into %s %s%s%s (see %s)",
                   src, a->mnt, timed_out ? "took longer than stage_in_timeout" : "failed",
                   tail[0] ? ": " : "", tail, logp);
        return timed_out ? PDCBB_ERR_TIMEOUT : PDCBB_ERR_IO;
    }
    PDCBB_INFO("job %" PRIu64 ": %s copied into %s in %.1f s", a->job->job_id, src, a->mnt,
               job_now() - t0);
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_job_mount_stage_in(const pdcbb_job_t *job, char *err, size_t errlen)
{
    char dir[PATH_MAX], mnt[PATH_MAX];
    if (job->cfg.stage_in_files[0] == '\0' || job->node_index != 0)
        return PDCBB_OK;
    if (pdcbb_job_dir(job, dir, sizeof(dir)) != PDCBB_OK ||
        pdcbb_jobdir_path(dir, MOUNT_DIR, mnt, sizeof(mnt)) != PDCBB_OK) {
        pdcbb_errf(err, errlen, "job directory path under '%s' is too long", job_root(job));
        return PDCBB_ERR_TOO_BIG;
    }
    stage_files_arg_t a = {.job = job, .dir = dir, .mnt = mnt};
    stage_files_out_t out;
    char aerr[256] = "";
    memset(&out, 0, sizeof(out));
    pdcbb_err_t rc =
        pdcbb_job_as_user(job, stage_files_as_user, &a, &out, sizeof(out), aerr, sizeof(aerr));
    if (rc != PDCBB_OK)
        pdcbb_errf(err, errlen, "%s", out.msg[0] ? out.msg : aerr);
    return rc;
}
