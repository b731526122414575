/*
 * pdcbb_job_script.c - the user script of a pdcbb job (pdcbb_job_script.h).
 *
 * Everything that touches the script, its log and its records runs as the job user: as root
 * inside pdcbb_job_as_user's child (which has dropped to the user for good), otherwise in the
 * caller. The script itself is one more fork of that process: its own process group, the job
 * directory as working directory, stdout and stderr into script-<phase>.log, the environment
 * built before the fork (nothing but system calls between fork and exec).
 */
#include "pdcbb_job_script.h"
#include "pdcbb_job_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pdcbb_drain.h"
#include "pdcbb_jobdir.h"

extern char **environ;

#define SCRIPT_MSG_LEN 1024
#define SCRIPT_TAIL_LINES 3
#define SCRIPT_ENV_MAX 64

const char *pdcbb_job_script_phase_name(pdcbb_script_phase_t phase)
{
    return phase == PDCBB_SCRIPT_START ? "start" : "end";
}

pdcbb_err_t pdcbb_job_script_check(const char *path, uid_t uid, char *err, size_t errlen)
{
    struct stat st;
    if (path[0] != '/') {
        pdcbb_errf(err, errlen, "script %s: not an absolute path", path);
        return PDCBB_ERR_INVAL;
    }
    if (stat(path, &st) != 0) {
        int e = errno;
        pdcbb_errf(err, errlen, "script %s: %s", path, strerror(e));
        return e == ENOENT || e == ENOTDIR ? PDCBB_ERR_NOT_FOUND : PDCBB_ERR_PERM;
    }
    if (!S_ISREG(st.st_mode)) {
        pdcbb_errf(err, errlen, "script %s: not a regular file", path);
        return PDCBB_ERR_PERM;
    }
    if (st.st_uid != uid && st.st_uid != 0) {
        pdcbb_errf(err, errlen, "script %s: owned by uid %ld, not by you (uid %ld) or root",
                   path, (long)st.st_uid, (long)uid);
        return PDCBB_ERR_PERM;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        pdcbb_errf(err, errlen, "script %s: writable by others (mode %04o)", path,
                   (unsigned)(st.st_mode & 07777));
        return PDCBB_ERR_PERM;
    }
    if (access(path, R_OK | X_OK) != 0) {
        pdcbb_errf(err, errlen, "script %s: not readable and executable by you (mode %04o)",
                   path, (unsigned)(st.st_mode & 07777));
        return PDCBB_ERR_PERM;
    }
    return PDCBB_OK;
}

/* What the as-user part reports back (copied through pdcbb_job_as_user's pipe). */
typedef struct script_result {
    int32_t rc; /* pdcbb_err_t */
    char msg[SCRIPT_MSG_LEN];
} script_result_t;

typedef struct script_ctx {
    const pdcbb_job_t *job;
    pdcbb_script_phase_t phase;
    const pdcbb_job_script_env_t *env;
    bool skip; /* the end of a job that never ran: only stop the start's leftovers */
    char dir[PATH_MAX];
} script_ctx_t;

static double script_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Write (or with text NULL remove) a small file of the job directory, atomically. */
static void script_record(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    if (pdcbb_jobdir_path(dir, name, path, sizeof(path)) != PDCBB_OK)
        return;
    if (text == NULL) {
        unlink(path);
        return;
    }
    char line[SCRIPT_MSG_LEN + 2];
    int l = snprintf(line, sizeof(line), "%s\n", text);
    pdcbb_write_file_atomic(path, line, (size_t)l < sizeof(line) ? (size_t)l : sizeof(line) - 1,
                            0600);
}

/* As the user: record why this node's start failed (NULL: it did not) where every node's
 * tasks look (pdcbb_job_script_failed): the job directory and the rendezvous directory. */
static void script_record_start(const pdcbb_job_t *job, const char *dir, const char *msg)
{
    script_record(dir, PDCBB_SCRIPT_ERROR_FILE, msg);
    char rdv[PATH_MAX], name[64];
    snprintf(name, sizeof(name), "node-%u." PDCBB_SCRIPT_ERROR_FILE, job->node_index);
    if (pdcbb_job_rendezvous(job, rdv, sizeof(rdv)) == PDCBB_OK && rdv[0])
        script_record(rdv, name, msg);
}

typedef struct start_failed_arg {
    const pdcbb_job_t *job;
    const char *dir, *msg;
} start_failed_arg_t;

static pdcbb_err_t start_failed_as_user(void *arg, void *out)
{
    (void)out;
    const start_failed_arg_t *a = arg;
    script_record_start(a->job, a->dir, a->msg);
    return PDCBB_OK;
}

void pdcbb_job_start_failed_record(const pdcbb_job_t *job, const char *msg)
{
    char dir[PATH_MAX], err[256];
    if (pdcbb_job_dir(job, dir, sizeof(dir)) != PDCBB_OK)
        return;
    start_failed_arg_t a = {.job = job, .dir = dir, .msg = msg};
    pdcbb_job_as_user(job, start_failed_as_user, &a, NULL, 0, err, sizeof(err));
}

/* Kill the process group recorded by the start phase (as the user: only the user's own). */
static void script_kill_start_group(const char *dir)
{
    char path[PATH_MAX], buf[32];
    if (pdcbb_jobdir_path(dir, "script-start.pgid", path, sizeof(path)) != PDCBB_OK)
        return;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    long pg = n > 0 ? (buf[n] = '\0', strtol(buf, NULL, 10)) : 0;
    if (pg > 1)
        kill(-(pid_t)pg, SIGKILL);
    unlink(path);
}

/* Append "K=V" to env (strings are malloc'ed; a NULL value adds nothing). */
static void script_env_add(char **env, int *n, const char *k, const char *v)
{
    if (v == NULL || *n >= SCRIPT_ENV_MAX)
        return;
    size_t l = strlen(k) + strlen(v) + 2;
    char *s = malloc(l);
    if (s == NULL)
        return;
    snprintf(s, l, "%s=%s", k, v);
    env[(*n)++] = s;
}

/* The script's environment: NULL-terminated, malloc'ed (script_env_free). */
static char **script_env_build(const script_ctx_t *c, const char *log, const char *drain_dir)
{
    const pdcbb_job_t *job = c->job;
    char **own = calloc(SCRIPT_ENV_MAX + 1, sizeof(char *));
    int n = 0;
    if (own == NULL)
        return NULL;
    char num[32];
    script_env_add(own, &n, "PDCBB_SCRIPT_PHASE", pdcbb_job_script_phase_name(c->phase));
    snprintf(num, sizeof(num), "%" PRIu64, job->job_id);
    script_env_add(own, &n, "PDCBB_JOB_ID", num);
    script_env_add(own, &n, "PDCBB_JOB_DIR", c->dir);
    script_env_add(own, &n, "PDCBB_NODE_NAME", job->node_name);
    snprintf(num, sizeof(num), "%u", job->node_index);
    script_env_add(own, &n, "PDCBB_NODE_INDEX", num);
    snprintf(num, sizeof(num), "%u", job->nnodes);
    script_env_add(own, &n, "PDCBB_NNODES", num);
    char mnt[PATH_MAX];
    if (strcmp(job->cfg.mount, "yes") == 0 &&
        pdcbb_job_mount_point(job, mnt, sizeof(mnt)) == PDCBB_OK)
        script_env_add(own, &n, "PDCBB_MOUNT", mnt);
    if (c->env && c->env->ntasks > 0) {
        snprintf(num, sizeof(num), "%u", c->env->ntasks);
        script_env_add(own, &n, "PDCBB_NTASKS", num);
    }
    if (job->cfg.drain[0])
        script_env_add(own, &n, "PDCBB_DRAIN", job->cfg.drain);
    if (drain_dir[0])
        script_env_add(own, &n, "PDCBB_DRAIN_DIR", drain_dir);
    script_env_add(own, &n, "PDCBB_SCRIPT_LOG", log);
    if (c->env && c->env->server_dirs)
        script_env_add(own, &n, "PDCBB_SERVER_DIRS", c->env->server_dirs);
    if (c->env && c->env->inherit) {
        /* the caller's variables first, without those the job sets */
        size_t ne = 0;
        while (environ && environ[ne])
            ne++;
        char **all = calloc(ne + (size_t)n + 1, sizeof(char *));
        if (all == NULL)
            return own; /* the job's facts at least */
        size_t k = 0;
        for (size_t i = 0; i < ne; i++) {
            bool ours = false;
            for (int j = 0; j < n && !ours; j++) {
                size_t kl = (size_t)(strchr(own[j], '=') - own[j]);
                ours = strncmp(environ[i], own[j], kl + 1) == 0;
            }
            if (!ours && (all[k] = strdup(environ[i])) != NULL)
                k++;
        }
        for (int j = 0; j < n; j++)
            all[k++] = own[j];
        free(own);
        return all;
    }
    /* a clean environment, as a login would give, with the launcher's own variables */
    size_t pl = c->env && c->env->pass_prefix ? strlen(c->env->pass_prefix) : 0;
    for (size_t i = 0; pl && environ && environ[i] && n < SCRIPT_ENV_MAX - 5; i++)
        if (strncmp(environ[i], c->env->pass_prefix, pl) == 0 && (own[n] = strdup(environ[i])))
            n++;
    struct passwd pw, *res = NULL;
    char pwbuf[16384];
    if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res != NULL) {
        script_env_add(own, &n, "HOME", pw.pw_dir);
        script_env_add(own, &n, "USER", pw.pw_name);
        script_env_add(own, &n, "LOGNAME", pw.pw_name);
        script_env_add(own, &n, "SHELL", pw.pw_shell[0] ? pw.pw_shell : "/bin/sh");
    }
    script_env_add(own, &n, "PATH", "/usr/local/bin:/usr/bin:/bin");
    return own;
}

static void script_env_free(char **env)
{
    for (size_t i = 0; env && env[i]; i++)
        free(env[i]);
    free(env);
}

/* The script's child: own group, stdio, defaults for every signal, then exec. */
static void script_child(const char *dir, const char *path, const char *phase, int logfd,
                         char **env)
{
    setpgid(0, 0);
    /* stdin, stdout or stderr may be closed in the caller (a daemon's child): the log's and
     * /dev/null's descriptors must not be one of them before they are put there */
    logfd = fcntl(logfd, F_DUPFD, 10);
    sigset_t none;
    sigemptyset(&none);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0 && nul < 10)
        nul = fcntl(nul, F_DUPFD, 10);
    if (logfd < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0 ||
        chdir(dir) != 0)
        _exit(126);
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    char *argv[] = {(char *)path, (char *)phase, NULL};
    execve(path, argv, env);
    static const char msg[] = "pdcbb: cannot execute the script\n";
    ssize_t w = write(2, msg, sizeof(msg) - 1);
    (void)w;
    _exit(126);
}

/* As the job user: check, run, wait, report into res. */
static pdcbb_err_t script_as_user(void *arg, void *out)
{
    const script_ctx_t *c = arg;
    script_result_t *res = out;
    const pdcbb_job_t *job = c->job;
    const char *phase = pdcbb_job_script_phase_name(c->phase);
    char why[SCRIPT_MSG_LEN] = "", log[PATH_MAX] = "", logname[32];
    memset(res, 0, sizeof(*res));
    if (c->skip) {
        script_kill_start_group(c->dir);
        return PDCBB_OK;
    }
    pdcbb_err_t rc;
    snprintf(logname, sizeof(logname), "script-%s.log", phase);
    if ((rc = pdcbb_jobdir_path(c->dir, logname, log, sizeof(log))) != PDCBB_OK) {
        log[0] = '\0';
        snprintf(why, sizeof(why), "job directory name too long");
        goto done;
    }
    if ((rc = pdcbb_job_script_check(job->cfg.script, getuid(), why, sizeof(why))) !=
        PDCBB_OK)
        goto done;
    char drain_dir[PATH_MAX] = "", derr[256];
    if (job->cfg.drain[0])
        pdcbb_drain_dir_find(job->cfg.drain, job->job_id, job->instance, getuid(), drain_dir,
                             sizeof(drain_dir), derr, sizeof(derr));
    int logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (logfd < 0) {
        rc = pdcbb_err_from_errno(errno);
        snprintf(why, sizeof(why), "cannot open %s: %s", log, strerror(errno));
        goto done;
    }
    char **env = script_env_build(c, log, drain_dir);
    pid_t pid = env ? fork() : -1;
    if (pid == 0)
        script_child(c->dir, job->cfg.script, phase, logfd, env);
    int e = errno;
    close(logfd);
    script_env_free(env);
    if (pid < 0) {
        rc = pdcbb_err_from_errno(e);
        snprintf(why, sizeof(why), "cannot start it: %s", strerror(e));
        goto done;
    }
    setpgid(pid, pid); /* also here: no race with the kill below */
    double deadline = script_now() + job->cfg.script_timeout;
    int st = 0;
    bool timed_out = false;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            st = 0x7f00; /* lost: reported as a failure */
            break;
        }
        if (!timed_out && script_now() >= deadline) {
            timed_out = true;
            kill(-pid, SIGKILL);
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (timed_out) {
        rc = PDCBB_ERR_TIMEOUT;
        snprintf(why, sizeof(why), "timed out after %g s (its process group was killed)",
                 job->cfg.script_timeout);
    } else if (WIFSIGNALED(st)) {
        rc = PDCBB_ERR_INTERNAL;
        snprintf(why, sizeof(why), "killed by signal %d (%s)", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    } else if (WEXITSTATUS(st) != 0) {
        rc = PDCBB_ERR_INTERNAL;
        snprintf(why, sizeof(why), "exit status %d", WEXITSTATUS(st));
    }
    if (c->phase == PDCBB_SCRIPT_START && rc == PDCBB_OK) {
        /* its background processes live on until the end phase */
        char num[32];
        snprintf(num, sizeof(num), "%ld", (long)pid);
        script_record(c->dir, "script-start.pgid", num);
    } else {
        kill(-pid, SIGKILL); /* whatever it left behind */
    }
    if (rc != PDCBB_OK) {
        char tail[SCRIPT_MSG_LEN];
        job_log_tail(log, SCRIPT_TAIL_LINES, tail, sizeof(tail));
        if (tail[0])
            snprintf(why + strlen(why), sizeof(why) - strlen(why), ": %s", tail);
    }
done:
    if (c->phase == PDCBB_SCRIPT_END)
        script_kill_start_group(c->dir);
    res->rc = (int32_t)rc;
    if (rc != PDCBB_OK)
        snprintf(res->msg, sizeof(res->msg), "%s script %s failed on %s: %s", phase,
                 job->cfg.script, job->node_name, why);
    if (c->phase == PDCBB_SCRIPT_START)
        script_record_start(job, c->dir, rc == PDCBB_OK ? NULL : res->msg);
    if (rc != PDCBB_OK && log[0]) { /* the log says it too (it goes with a drain) */
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            dprintf(fd, "pdcbb: %s\n", res->msg);
            close(fd);
        }
    }
    return rc;
}

pdcbb_err_t pdcbb_job_script_run(const pdcbb_job_t *job, pdcbb_script_phase_t phase,
                                 const pdcbb_job_script_env_t *env, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (job->cfg.script[0] == '\0')
        return PDCBB_OK;
    script_ctx_t c = {.job = job, .phase = phase, .env = env};
    pdcbb_err_t rc = pdcbb_job_dir(job, c.dir, sizeof(c.dir));
    if (rc != PDCBB_OK) {
        pdcbb_errf(err, errlen, "%s script: job directory name too long",
                   pdcbb_job_script_phase_name(phase));
        return rc;
    }
    /* No end for a job that never ran: no burst buffer here, or a failed start script (of
     * any node); what a start script left running is still stopped. */
    struct stat st;
    char path[PATH_MAX], msg[SCRIPT_MSG_LEN];
    if (phase == PDCBB_SCRIPT_END &&
        pdcbb_jobdir_path(c.dir, "prolog.error", path, sizeof(path)) == PDCBB_OK &&
        lstat(path, &st) == 0)
        return PDCBB_OK;
    c.skip = phase == PDCBB_SCRIPT_END && pdcbb_job_script_failed(c.dir, msg, sizeof(msg));
    script_result_t res;
    memset(&res, 0, sizeof(res));
    char aerr[256] = "";
    rc = pdcbb_job_as_user(job, script_as_user, &c, &res, sizeof(res), aerr, sizeof(aerr));
    if (rc != PDCBB_OK)
        pdcbb_errf(err, errlen, "%s", res.msg[0] ? res.msg : aerr);
    return rc;
}

/* 1 with the first line of dir/name in msg if that file exists (links not followed). */
static int script_read_error(const char *dir, const char *name, char *msg, size_t len)
{
    char path[PATH_MAX];
    if (pdcbb_jobdir_path(dir, name, path, sizeof(path)) != PDCBB_OK)
        return 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, msg, len - 1);
    close(fd);
    msg[n > 0 ? n : 0] = '\0';
    msg[strcspn(msg, "\n")] = '\0';
    if (msg[0] == '\0')
        snprintf(msg, len, "the start script failed");
    return 1;
}

int pdcbb_job_script_failed(const char *job_dir, char *msg, size_t len)
{
    msg[0] = '\0';
    if (script_read_error(job_dir, PDCBB_SCRIPT_ERROR_FILE, msg, len))
        return 1;
    /* another node's, through the job's rendezvous directory (multi-node jobs) */
    pdcbb_jobinfo_t ji;
    if (pdcbb_jobinfo_read(job_dir, &ji) != PDCBB_OK || ji.rendezvous[0] == '\0')
        return 0;
    for (unsigned i = 0; i < ji.nnodes; i++) {
        char name[64];
        snprintf(name, sizeof(name), "node-%u." PDCBB_SCRIPT_ERROR_FILE, i);
        if (script_read_error(ji.rendezvous, name, msg, len))
            return 1;
    }
    return 0;
}
