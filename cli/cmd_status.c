/*
 * cmd_status.c - `pdcbb status`: the daemons of a job (rank, node, address, pid, state) and
 * why its prolog or drain failed, from the files of its job directories alone: the endpoint and
 * pid files of each daemon (bbd-R.endpoint, bbd-R.pid), prolog.error and drain.error. Works
 * inside a job ($PDCBB_JOB_DIR, $PDCBB_SERVER_DIRS) or on a `pdcbb run --workdir` job.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "cli.h"
#include "pdcbb_job.h"
#include "pdcbb_jobdir.h"

static void status_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb status [--job-dir DIR ...] [--workdir WORKDIR]\n"
            "\n"
            "Show the burst-buffer daemons of a job: rank, node, address, pid and state\n"
            "(running, dead (stale pid file), no pid file), and why the prolog failed if it did.\n"
            "Without options: the job directories named by $PDCBB_JOB_DIR and\n"
            "$PDCBB_SERVER_DIRS (set inside a job). Exit status: 0 if every daemon runs,\n"
            "1 if one is not running or the prolog failed, 2 on a usage error.\n"
            "\n"
            "Options:\n"
            "  -d, --job-dir DIR      a job directory (may be repeated)\n"
            "  -w, --workdir WORKDIR  every job directory WORKDIR/node*/pdcbb.* of a\n"
            "                         `pdcbb run --workdir WORKDIR` job\n"
            "  -h, --help             show this help\n");
}

typedef struct status_dirs {
    char **v;
    size_t n, cap;
} status_dirs_t;

static int status_dirs_add(status_dirs_t *d, const char *dir)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->v[i], dir) == 0)
            return 0;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 8;
        char **v = realloc(d->v, cap * sizeof(*v));
        if (v == NULL)
            return -1;
        d->v = v;
        d->cap = cap;
    }
    if ((d->v[d->n] = strdup(dir)) == NULL)
        return -1;
    d->n++;
    return 0;
}

static void status_dirs_free(status_dirs_t *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->v[i]);
    free(d->v);
}

static int status_verscmp(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* One daemon as the files of its job directory describe it. */
typedef struct status_rank {
    unsigned rank;
    bool has_ep, ep_bad, has_pid;
    pdcbb_endpoint_t ep;
    pid_t pid; /* 0: pid file unreadable */
} status_rank_t;

static int status_rank_cmp(const void *a, const void *b)
{
    const status_rank_t *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* "bbd-R.<kind>" -> R, kind 1 = endpoint, 2 = pid; -1 otherwise. */
static long status_name_rank(const char *name, int *kind)
{
    if (strncmp(name, "bbd-", 4) != 0 || name[4] < '0' || name[4] > '9')
        return -1;
    char *e;
    errno = 0;
    unsigned long r = strtoul(name + 4, &e, 10);
    if (errno != 0 || r >= PDCBB_SERVERS_MAX)
        return -1;
    if (strcmp(e, ".endpoint") == 0)
        *kind = 1;
    else if (strcmp(e, ".pid") == 0)
        *kind = 2;
    else
        return -1;
    return (long)r;
}

static pid_t status_read_pid(const char *path)
{
    char buf[32];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    ssize_t r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 0)
        return 0;
    buf[r] = '\0';
    char *e;
    long v = strtol(buf, &e, 10);
    if (e == buf || (*e != '\0' && *e != '\n') || v <= 0 || v > INT32_MAX)
        return 0;
    return (pid_t)v;
}

/* Print one job directory; returns true if its burst buffer is healthy. */
static bool status_one(const char *dir)
{
    char path[PATH_MAX + 64];
    uint64_t job_id = 0;
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    if (strncmp(base, "pdcbb.", 6) == 0)
        job_id = strtoull(base + 6, NULL, 10);

    printf("%s", dir);
    if (job_id != 0)
        printf(" (job %" PRIu64 ")", job_id);
    printf(":\n");

    DIR *d = opendir(dir);
    if (d == NULL) {
        printf("  cannot read the job directory: %s\n", strerror(errno));
        return false;
    }
    bool healthy = true;
    static const char *const reports[][2] = {{"prolog.error", "prolog failed"},
                                             {"drain.error", "drain failed"}};
    for (size_t k = 0; k < sizeof(reports) / sizeof(reports[0]); k++) {
        snprintf(path, sizeof(path), "%s/%s", dir, reports[k][0]);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        char line[PDCBB_JOB_ERR_LEN];
        if (fgets(line, sizeof(line), f) != NULL) {
            line[strcspn(line, "\n")] = '\0';
            printf("  %s: %s\n", reports[k][1], line);
        } else {
            printf("  %s (no reason recorded)\n", reports[k][1]);
        }
        fclose(f);
        healthy = false;
    }

    status_rank_t *rs = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int kind = 0;
        long r = status_name_rank(de->d_name, &kind);
        if (r < 0)
            continue;
        status_rank_t *x = NULL;
        for (size_t i = 0; i < n; i++)
            if (rs[i].rank == (unsigned)r)
                x = &rs[i];
        if (x == NULL) {
            if (n == cap) {
                cap = cap ? 2 * cap : 8;
                status_rank_t *v = realloc(rs, cap * sizeof(*v));
                if (v == NULL) {
                    fprintf(stderr, "pdcbb status: out of memory\n");
                    free(rs);
                    closedir(d);
                    return false;
                }
                rs = v;
            }
            x = &rs[n++];
            memset(x, 0, sizeof(*x));
            x->rank = (unsigned)r;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (kind == 1) {
            x->has_ep = true;
            x->ep_bad = pdcbb_endpoint_read(path, &x->ep) != PDCBB_OK;
        } else {
            x->has_pid = true;
            x->pid = status_read_pid(path);
        }
    }
    closedir(d);
    if (n > 1)
        qsort(rs, n, sizeof(*rs), status_rank_cmp);

    if (n == 0) {
        printf("  no daemons (none started yet, or stopped by the epilog)\n");
        healthy = false;
    } else {
        printf("  %-5s %-16s %-22s %-8s %s\n", "RANK", "NODE", "ADDRESS", "PID", "STATE");
    }
    for (size_t i = 0; i < n; i++) {
        status_rank_t *x = &rs[i];
        char addr[96] = "-", pidtxt[24] = "-";
        const char *node = "-";
        const char *state;
        pid_t pid = x->pid;
        if (x->has_ep && !x->ep_bad) {
            snprintf(addr, sizeof(addr), "%s:%u", x->ep.ip, x->ep.port);
            node = x->ep.node;
            if (pid == 0 && !x->has_pid)
                pid = x->ep.pid;
        } else if (x->has_ep) {
            snprintf(addr, sizeof(addr), "(bad endpoint record)");
        }
        if (pid > 0)
            snprintf(pidtxt, sizeof(pidtxt), "%ld", (long)pid);
        if (!x->has_pid) {
            state = "no pid file";
            healthy = false;
        } else if (x->pid > 0 && pdcbb_job_daemon_alive(x->pid, job_id, dir)) {
            state = "running";
        } else {
            state = x->pid > 0 ? "dead (stale pid file)" : "dead (unreadable pid file)";
            healthy = false;
        }
        printf("  %-5u %-16s %-22s %-8s %s\n", x->rank, node, addr, pidtxt, state);
    }
    free(rs);
    return healthy;
}

int cli_cmd_status(int argc, char **argv)
{
    static const struct option opts[] = {
        {"job-dir", required_argument, NULL, 'd'},
        {"workdir", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    status_dirs_t dirs = {0};
    int c, status = CLI_EXIT_USAGE;
    bool given = false;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":d:w:h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            given = true;
            if (status_dirs_add(&dirs, optarg) != 0)
                goto nomem;
            break;
        case 'w': {
            given = true;
            char pat[PATH_MAX + 32];
            glob_t g;
            snprintf(pat, sizeof(pat), "%s/node*/pdcbb.*", optarg);
            int gr = glob(pat, GLOB_NOSORT, NULL, &g);
            if (gr == GLOB_NOMATCH) {
                fprintf(stderr, "pdcbb status: no job directories in %s (expected "
                                "%s/node*/pdcbb.*)\n",
                        optarg, optarg);
                status = 1;
                goto out;
            }
            if (gr != 0) {
                fprintf(stderr, "pdcbb status: cannot read %s\n", optarg);
                status = 1;
                goto out;
            }
            qsort(g.gl_pathv, g.gl_pathc, sizeof(char *), status_verscmp);
            for (size_t i = 0; i < g.gl_pathc; i++) {
                if (status_dirs_add(&dirs, g.gl_pathv[i]) != 0) {
                    globfree(&g);
                    goto nomem;
                }
            }
            globfree(&g);
            break;
        }
        case 'h':
            status_usage(stdout);
            status = 0;
            goto out;
        default:
            status = cli_bad_option("status", c, argv);
            goto out;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "pdcbb status: unexpected argument '%s' (see pdcbb status --help)\n",
                argv[optind]);
        goto out;
    }
    if (!given) {
        const char *jd = getenv("PDCBB_JOB_DIR");
        const char *sd = getenv("PDCBB_SERVER_DIRS");
        if (jd != NULL && jd[0] != '\0' && status_dirs_add(&dirs, jd) != 0)
            goto nomem;
        if (sd != NULL && sd[0] != '\0') {
            char *copy = strdup(sd), *save = NULL;
            if (copy == NULL)
                goto nomem;
            for (char *t = strtok_r(copy, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
                if (status_dirs_add(&dirs, t) != 0) {
                    free(copy);
                    goto nomem;
                }
            }
            free(copy);
        }
        if (dirs.n == 0) {
            fprintf(stderr, "pdcbb status: no job directory: give --job-dir or --workdir, or "
                            "run inside a job (PDCBB_JOB_DIR)\n");
            goto out;
        }
    }
    status = 0;
    for (size_t i = 0; i < dirs.n; i++)
        if (!status_one(dirs.v[i]))
            status = 1;
    goto out;
nomem:
    fprintf(stderr, "pdcbb status: out of memory\n");
    status = 1;
out:
    status_dirs_free(&dirs);
    return status;
}
