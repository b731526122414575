/*
 * cmd_admin.c - `pdcbb admin stranded`: the administrator's view of job directories left on a
 * node after their job (a drain that failed, an epilog that was cut short, a directory the
 * prolog moved aside), with the owner, job id, size, age and why each is there; and, past an
 * age (`stranded_max_age` in the site file, or --older-than), draining them as their owner
 * (through `pdcbb drain`, which drops to the owner) or removing them as their owner. Root never
 * follows a link or writes into a user's tree: removals run in a child that dropped to the
 * directory's owner (local_root is sticky 1733, so the owner may remove its own directory).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pdcbb_config.h"
#include "pdcbb_job.h"
#include "pdcbb_jobdir.h"

#define ADMIN_EXIT_USAGE 2

static void admin_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb admin stranded [OPTIONS]\n"
            "\n"
            "List the job directories left under this node's local root after their job\n"
            "(pdcbb.JOBID, and pdcbb-moved.* that a prolog moved aside), with owner, job id,\n"
            "size, age (since the last change inside) and why each is there: a failed drain\n"
            "(drain.error), a failed prolog (prolog.error), daemons still running, a daemon\n"
            "that died, a drain that never ran, or no drain requested. With --drain or\n"
            "--remove, act on those older than the age limit and without running daemons.\n"
            "\n"
            "Options:\n"
            "      --site-config FILE  site configuration (default: $PDCBB_SITE_CONFIG): its\n"
            "                          local_root and stranded_max_age\n"
            "      --local-root DIR    the local root to look in (default: the site's\n"
            "                          local_root, %%n replaced by --node)\n"
            "      --node NAME         node name for %%n in local_root (default: the host name)\n"
            "      --older-than AGE    age limit for --drain/--remove, e.g. 3d, 12h, 90m, 0\n"
            "                          (default: the site's stranded_max_age, 7d)\n"
            "      --drain             drain each one as its owner (pdcbb drain), which\n"
            "                          removes it once drained and verified\n"
            "      --to DEST           with --drain: drain to DEST instead of the job's drain\n"
            "      --remove            remove each one, as its owner (its data is lost)\n"
            "  -h, --help              show this help\n"
            "\n"
            "Exit status: 0 if nothing failed, 1 if a drain or removal failed or the local\n"
            "root cannot be read, 2 on a usage error.\n");
}

typedef struct stranded {
    char name[256];
    char path[PATH_MAX];
    uint64_t job_id; /* 0: not known */
    uid_t uid;
    gid_t gid;
    uint64_t bytes;
    time_t newest;
    bool running;
    bool moved;
    char why[1024];
} stranded_t;

/* nftw has no user pointer. */
static uint64_t walk_bytes;
static time_t walk_newest;

static int admin_walk(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)path;
    (void)flag;
    (void)ftw;
    walk_bytes += (uint64_t)sb->st_blocks * 512u;
    if (sb->st_mtime > walk_newest)
        walk_newest = sb->st_mtime;
    return 0;
}

/* First line of dir/name, read without following a link ("" if absent). */
static void admin_first_line(const char *dir, const char *name, char *out, size_t len)
{
    char path[PATH_MAX];
    out[0] = '\0';
    if (pdcbb_jobdir_path(dir, name, path, sizeof(path)) != PDCBB_OK)
        return;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, len - 1);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    out[strcspn(out, "\n")] = '\0';
}

/* Append "pre" "arg" "post" to the reasons, "; "-separated. */
static void why_add3(stranded_t *s, const char *pre, const char *arg, const char *post)
{
    size_t used = strlen(s->why);
    if (used + 3 >= sizeof(s->why))
        return;
    if (used > 0) {
        strcpy(s->why + used, "; ");
        used += 2;
    }
    snprintf(s->why + used, sizeof(s->why) - used, "%s%s%s", pre, arg, post);
}

/* Why a job directory is still here. */
static void admin_explain(stranded_t *s)
{
    char line[600];
    if (s->moved) {
        why_add3(s, "", "moved aside by a prolog: it was not that job's directory (created "
                         "by its owner before the job)", "");
        return;
    }
    DIR *d = opendir(s->path);
    if (d == NULL) {
        why_add3(s, "cannot read it: ", strerror(errno), "");
        return;
    }
    struct dirent *de;
    char pids[256] = "";
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (strncmp(de->d_name, "bbd-", 4) != 0 || l < 9 || strcmp(de->d_name + l - 4, ".pid"))
            continue;
        admin_first_line(s->path, de->d_name, line, sizeof(line));
        long pid = strtol(line, NULL, 10);
        if (pid > 1 && pid <= INT32_MAX && pdcbb_job_daemon_alive((pid_t)pid, s->job_id, s->path)) {
            s->running = true;
            size_t u = strlen(pids);
            snprintf(pids + u, sizeof(pids) - u, "%s%ld", u ? "," : "", pid);
        }
    }
    closedir(d);
    if (s->running)
        why_add3(s, "daemons running (pid ", pids, "): its job may still be running");
    admin_first_line(s->path, "drain.error", line, sizeof(line));
    if (line[0])
        why_add3(s, "drain failed: ", line, "");
    admin_first_line(s->path, "prolog.error", line, sizeof(line));
    if (line[0])
        why_add3(s, "prolog failed: ", line, "");
    admin_first_line(s->path, "daemons.died", line, sizeof(line));
    if (line[0])
        why_add3(s, "", "a daemon died during the job (daemons.died)", "");
    if (s->why[0] == '\0') {
        /* config.yaml is the job user's file: read as plain text, links not followed */
        char cfgline[PATH_MAX] = "";
        char path[PATH_MAX];
        FILE *f = NULL;
        if (pdcbb_jobdir_path(s->path, "config.yaml", path, sizeof(path)) == PDCBB_OK) {
            int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            f = fd >= 0 ? fdopen(fd, "r") : NULL;
            if (f == NULL && fd >= 0)
                close(fd);
        }
        bool have_cfg = f != NULL, drain = false;
        while (f && fgets(cfgline, sizeof(cfgline), f)) {
            if (strncmp(cfgline, "drain:", 6) == 0) {
                char *v = cfgline + 6;
                v += strspn(v, " \"'");
                drain = *v != '\0' && *v != '\n' && *v != '"' && *v != '\'' && *v != '~';
            }
        }
        if (f)
            fclose(f);
        if (!have_cfg)
            why_add3(s, "", "no config.yaml: the prolog did not get far (or it is not a job "
                             "directory)", "");
        else if (drain)
            why_add3(s, "", "its drain never finished (the epilog did not run to its end): "
                             "pdcbb drain finishes it", "");
        else
            why_add3(s, "", "no drain requested, and the epilog did not remove it", "");
    }
}

static int admin_collect(const char *root, stranded_t **out, size_t *n)
{
    DIR *d = opendir(root);
    if (d == NULL) {
        fprintf(stderr, "pdcbb admin stranded: cannot read local root %s: %s\n", root,
                strerror(errno));
        return -1;
    }
    stranded_t *v = NULL;
    size_t cnt = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        bool moved = strncmp(de->d_name, "pdcbb-moved.", 12) == 0;
        char *end = NULL;
        uint64_t id = 0;
        if (!moved) {
            if (strncmp(de->d_name, "pdcbb.", 6) != 0)
                continue;
            errno = 0;
            id = strtoull(de->d_name + 6, &end, 10);
            if (errno || end == de->d_name + 6 || *end != '\0')
                continue;
        } else {
            id = strtoull(de->d_name + 12, NULL, 10);
        }
        if (cnt == cap) {
            cap = cap ? cap * 2 : 16;
            stranded_t *nv = realloc(v, cap * sizeof(*v));
            if (nv == NULL) {
                free(v);
                closedir(d);
                return -1;
            }
            v = nv;
        }
        stranded_t *s = &v[cnt];
        memset(s, 0, sizeof(*s));
        snprintf(s->name, sizeof(s->name), "%s", de->d_name);
        snprintf(s->path, sizeof(s->path), "%s/%s", root, de->d_name);
        struct stat st;
        if (lstat(s->path, &st) != 0)
            continue;
        s->job_id = id;
        s->moved = moved;
        s->uid = st.st_uid;
        s->gid = st.st_gid;
        walk_bytes = 0;
        walk_newest = st.st_mtime;
        if (S_ISDIR(st.st_mode))
            nftw(s->path, admin_walk, 16, FTW_PHYS | FTW_MOUNT);
        else
            walk_bytes = (uint64_t)st.st_blocks * 512u;
        s->bytes = walk_bytes;
        s->newest = walk_newest;
        if (!S_ISDIR(st.st_mode))
            why_add3(s, "", "not a directory", "");
        else
            admin_explain(s);
        cnt++;
    }
    closedir(d);
    *out = v;
    *n = cnt;
    return 0;
}

static const char *admin_age(double secs, char *buf, size_t len)
{
    long s = secs < 0 ? 0 : (long)secs;
    if (s >= 86400)
        snprintf(buf, len, "%ldd%ldh", s / 86400, (s % 86400) / 3600);
    else if (s >= 3600)
        snprintf(buf, len, "%ldh%ldm", s / 3600, (s % 3600) / 60);
    else if (s >= 60)
        snprintf(buf, len, "%ldm%lds", s / 60, s % 60);
    else
        snprintf(buf, len, "%lds", s);
    return buf;
}

static const char *admin_size(uint64_t b, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)b;
    unsigned u = 0;
    while (v >= 1024.0 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)b);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}

static int admin_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    int r = (flag == FTW_DP || flag == FTW_D) ? rmdir(path) : unlink(path);
    if (r != 0 && errno != ENOENT)
        fprintf(stderr, "pdcbb admin stranded: cannot remove %s: %s\n", path, strerror(errno));
    return 0;
}

/* Remove s->path in a child that dropped to its owner; 0 when it is gone. */
static int admin_remove(const stranded_t *s)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (geteuid() == 0 && s->uid != 0) {
            if (setgroups(0, NULL) != 0 || setresgid(s->gid, s->gid, s->gid) != 0 ||
                setresuid(s->uid, s->uid, s->uid) != 0) {
                fprintf(stderr, "pdcbb admin stranded: cannot become uid %ld: %s\n",
                        (long)s->uid, strerror(errno));
                _exit(1);
            }
        }
        nftw(s->path, admin_rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
        _exit(access(s->path, F_OK) == 0 ? 1 : 0);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* `pdcbb drain [--to DEST] DIR`, which drops to the directory's owner itself. */
static int admin_drain(const stranded_t *s, const char *to)
{
    char self[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (l <= 0)
        return -1;
    self[l] = '\0';
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (to)
            execl(self, self, "drain", "--to", to, s->path, (char *)NULL);
        else
            execl(self, self, "drain", s->path, (char *)NULL);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int admin_stranded(int argc, char **argv)
{
    static const struct option opts[] = {
        {"site-config", required_argument, NULL, 's'}, {"local-root", required_argument, NULL, 'r'},
        {"node", required_argument, NULL, 'n'},        {"older-than", required_argument, NULL, 'o'},
        {"drain", no_argument, NULL, 'd'},             {"remove", no_argument, NULL, 'x'},
        {"to", required_argument, NULL, 't'},          {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *site = getenv("PDCBB_SITE_CONFIG"), *root_opt = NULL, *node = NULL,
               *older = NULL, *to = NULL;
    bool drain = false, remove_ = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 's': site = optarg; break;
        case 'r': root_opt = optarg; break;
        case 'n': node = optarg; break;
        case 'o': older = optarg; break;
        case 'd': drain = true; break;
        case 'x': remove_ = true; break;
        case 't': to = optarg; break;
        case 'h': admin_usage(stdout); return 0;
        default: return cli_bad_option("admin stranded", c, argv);
        }
    }
    if (optind != argc || (drain && remove_) || (to && !drain)) {
        fprintf(stderr, "pdcbb admin stranded: %s\n",
                optind != argc ? "unexpected argument"
                : to           ? "--to goes with --drain"
                               : "give --drain or --remove, not both");
        return ADMIN_EXIT_USAGE;
    }
    pdcbb_config_t *cfg = malloc(sizeof(*cfg));
    stranded_t *v = NULL;
    size_t n = 0;
    int status = 1;
    char err[PDCBB_CONFIG_ERR_LEN];
    if (cfg == NULL)
        return 1;
    pdcbb_config_init(cfg);
    if (site && *site &&
        pdcbb_config_load_file(cfg, site, PDCBB_SCOPE_SITE | PDCBB_SCOPE_USER, err,
                               sizeof(err)) != PDCBB_OK) {
        fprintf(stderr, "pdcbb admin stranded: %s\n", err);
        goto out;
    }
    if (older &&
        pdcbb_config_set(cfg, "stranded_max_age", older, PDCBB_SCOPE_SITE, "--older-than", err,
                         sizeof(err)) != PDCBB_OK) {
        fprintf(stderr, "pdcbb admin stranded: %s\n", err);
        status = ADMIN_EXIT_USAGE;
        goto out;
    }
    char root[PATH_MAX], host[256] = "";
    if (node == NULL) {
        gethostname(host, sizeof(host) - 1);
        node = host;
    }
    const char *pattern = root_opt ? root_opt : cfg->local_root;
    size_t o = 0;
    for (const char *p = pattern; *p && o + 1 < sizeof(root); p++) {
        if (p[0] == '%' && p[1] == 'n') {
            o += (size_t)snprintf(root + o, sizeof(root) - o, "%s", node);
            p++;
        } else {
            root[o++] = *p;
        }
    }
    root[o < sizeof(root) ? o : sizeof(root) - 1] = '\0';
    if (admin_collect(root, &v, &n) != 0)
        goto out;
    time_t now = time(NULL);
    char agebuf[32];
    printf("%zu job director%s in %s (act on those older than %s)\n", n, n == 1 ? "y" : "ies",
           root, admin_age(cfg->stranded_max_age, agebuf, sizeof(agebuf)));
    if (n > 0)
        printf("%-10s %-12s %10s %8s  %-s\n", "JOB", "OWNER", "SIZE", "AGE", "DIRECTORY: WHY");
    status = 0;
    for (size_t i = 0; i < n; i++) {
        stranded_t *s = &v[i];
        struct passwd pw, *pr = NULL;
        char pwbuf[4096], owner[64], size[32], age[32], job[32];
        if (getpwuid_r(s->uid, &pw, pwbuf, sizeof(pwbuf), &pr) == 0 && pr)
            snprintf(owner, sizeof(owner), "%s", pw.pw_name);
        else
            snprintf(owner, sizeof(owner), "%ld", (long)s->uid);
        snprintf(job, sizeof(job), "%" PRIu64, s->job_id);
        double secs = difftime(now, s->newest);
        printf("%-10s %-12s %10s %8s  %s: %s\n", job, owner,
               admin_size(s->bytes, size, sizeof(size)), admin_age(secs, age, sizeof(age)),
               s->path, s->why);
        if (!drain && !remove_)
            continue;
        if (secs < cfg->stranded_max_age) {
            printf("  kept: younger than %s\n",
                   admin_age(cfg->stranded_max_age, agebuf, sizeof(agebuf)));
            continue;
        }
        if (s->running) {
            printf("  kept: its daemons are running\n");
            continue;
        }
        if (drain && s->moved) {
            printf("  kept: not a job directory, nothing to drain (--remove removes it)\n");
            continue;
        }
        fflush(stdout);
        if (drain ? admin_drain(s, to) : admin_remove(s)) {
            printf("  %s failed (see above); kept\n", drain ? "drain" : "removal");
            status = 1;
        } else {
            printf("  %s\n", drain ? "drained and removed" : "removed");
        }
    }
out:
    free(v);
    free(cfg);
    return status;
}

int cli_cmd_admin(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        admin_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? ADMIN_EXIT_USAGE : 0;
    }
    if (strcmp(argv[1], "stranded") == 0)
        return admin_stranded(argc - 1, argv + 1);
    fprintf(stderr, "pdcbb admin: unknown command '%s' (pdcbb admin stranded --help)\n", argv[1]);
    return ADMIN_EXIT_USAGE;
}
