/*
 * spank_job_output.c - the job's output file and its accounting record, through Slurm's own
 * commands (spank_job_output.h): scontrol and sacctmgr, run by the epilog (root) with a time
 * limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spank_job_output.h"

#define SLURM_CMD_TIMEOUT_MS 10000

/* A Slurm command (scontrol, sacctmgr) into buf: epilogs run without a search path, so look
 * where Debian and sites put it. NULL when it is in none of them. */
static const char *slurm_cmd_path(const char *name, char *buf, size_t len)
{
    static const char *const where[] = {"/usr/bin", "/usr/local/bin", "/opt/slurm/bin", NULL};
    for (size_t i = 0; where[i]; i++) {
        snprintf(buf, len, "%s/%s", where[i], name);
        if (access(buf, X_OK) == 0)
            return buf;
    }
    return NULL;
}

/* Run Slurm command name with args; its standard output (at most len - 1 bytes) into out.
 * Its exit status, or -1 with why. */
static int run_slurm_cmd(const char *name, const char *const args[], char *out, size_t len,
                         char *why, size_t whylen)
{
    char pathbuf[64];
    const char *path = slurm_cmd_path(name, pathbuf, sizeof(pathbuf));
    if (path == NULL) {
        snprintf(why, whylen, "%s not found", name);
        return -1;
    }
    const char *argv[16] = {path};
    size_t n = 1;
    for (; args[n - 1] != NULL && n < 15; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(why, whylen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(fds[1], 1);
        dup2(null, 2);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        long left = SLURM_CMD_TIMEOUT_MS - ((t.tv_sec - t0.tv_sec) * 1000 +
                                           (t.tv_nsec - t0.tv_nsec) / 1000000);
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
            kill(pid, SIGKILL);
            snprintf(why, whylen, "%s did not answer in %d s", name, SLURM_CMD_TIMEOUT_MS / 1000);
            break;
        }
        char buf[4096];
        ssize_t r = read(fds[0], buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (out != NULL && got + 1 < len) {
            size_t take = (size_t)r < len - 1 - got ? (size_t)r : len - 1 - got;
            memcpy(out + got, buf, take);
            got += take;
        }
    }
    if (out != NULL && len > 0)
        out[got] = '\0';
    close(fds[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (why[0] != '\0')
        return -1;
    if (!WIFEXITED(st)) {
        snprintf(why, whylen, "%s was killed by signal %d", name, WTERMSIG(st));
        return -1;
    }
    return WEXITSTATUS(st);
}

int spank_job_stdout(uint64_t job_id, char *out, size_t len, char *why, size_t whylen)
{
    char id[32], text[16384];
    snprintf(id, sizeof(id), "%" PRIu64, job_id);
    why[0] = '\0';
    const char *args[] = {"-o", "show", "job", id, NULL};
    int rc = run_slurm_cmd("scontrol", args, text, sizeof(text), why, whylen);
    if (rc != 0) {
        if (why[0] == '\0')
            snprintf(why, whylen, "scontrol show job %s exited with status %d", id, rc);
        return -1;
    }
    /* one line of Key=Value fields; StdOut= is the last field that may hold spaces, so take it
     * up to the next " Key=" */
    const char *s = strstr(text, " StdOut=");
    if (s == NULL) {
        snprintf(why, whylen, "job %s has no StdOut (not a batch job)", id);
        return -1;
    }
    s += 8;
    size_t n = strcspn(s, "\n");
    const char *next = s;
    while ((next = strchr(next, ' ')) != NULL && next < s + n) {
        const char *eq = strchr(next + 1, '=');
        const char *sp = strchr(next + 1, ' ');
        if (eq != NULL && (sp == NULL || eq < sp) && eq < s + n) {
            n = (size_t)(next - s);
            break;
        }
        next++;
    }
    if (n == 0 || s[0] != '/' || n >= len) {
        snprintf(why, whylen, "job %s: StdOut is not an absolute path", id);
        return -1;
    }
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

int spank_job_admin_comment(uint64_t job_id, const char *text, char *why, size_t whylen)
{
    char where[48], set[1200], out[4096];
    snprintf(where, sizeof(where), "jobid=%" PRIu64, job_id);
    snprintf(set, sizeof(set), "AdminComment=%s", text);
    why[0] = '\0';
    const char *args[] = {"-i", "modify", "job", "where", where, "set", set, NULL};
    int rc = run_slurm_cmd("sacctmgr", args, out, sizeof(out), why, whylen);
    if (rc == 0 && strstr(out, "Modified") == NULL) {
        snprintf(why, whylen, "sacctmgr modified no job %" PRIu64 " (no accounting record)",
                 job_id);
        return -1;
    }
    if (rc != 0 && why[0] == '\0')
        snprintf(why, whylen, "sacctmgr modify job where %s exited with status %d (is the "
                              "site's accounting, slurmdbd, configured?)",
                 where, rc);
    return rc == 0 ? 0 : -1;
}
