/*
 * cmd_why.c - `pdcbb why`: where a job's drained data is and, when a node's drain failed, why
 * and how to finish it, from what the job left in the destination (and the home directory).
 *
 * Only the job's own records count: drain directories are shown as the job's only when they
 * carry an IDENTITY of the caller (pdcbb_drain_identity_read), and FAILED reports only when the
 * caller wrote them and they name the job (pdcbb_drain_report_read). Anything else gets one line
 * that says whose it is, and nothing of its contents. Fields of a trusted report are printed
 * escaped, and the command that finishes a drain is made here from the report's node, job
 * directory and destination, quoted for the shell, never copied from the file.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pdcbb_drain.h"
#include "pdcbb_name.h"

#define WHY_EXIT_USAGE 2

static void why_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb why DEST/pdcbb.<job id>\n"
            "       pdcbb why --job ID DEST\n"
            "\n"
            "Say where the drained data of a job is and, when a node's drain failed at the end\n"
            "of the job, why, where that node's data is kept and the command that finishes the\n"
            "drain. Runs anywhere the destination is visible (a login node): it reads what the\n"
            "job left in DEST, no node logs needed:\n"
            "  DEST/pdcbb.<job id>[.<suffix>]/      the job's drain directory (a suffix when\n"
            "                                       pdcbb.<job id> was taken by someone else);\n"
            "                                       complete when it holds COMPLETE\n"
            "  DEST/pdcbb.<job id>.<node>.FAILED    written by a node whose drain failed\n"
            "  ~/pdcbb.<job id>.<node>.FAILED       the same, when DEST could not take it\n"
            "Only your own records count: a directory or report of this name that another user\n"
            "wrote (or that does not name the job) is listed as such in one line and never\n"
            "read. Run it as the job's user (as root, the job's user is the owner of the job's\n"
            "drain directory, or root when there is none).\n"
            "The argument is the drain directory the job asked for (it need not exist), or a\n"
            "FAILED report, or DEST with --job ID.\n"
            "\n"
            "Options:\n"
            "  -j, --job ID    the job id (when the argument is the destination)\n"
            "  -h, --help      show this help\n"
            "\n"
            "Exit status: 0 when the job's drain is complete and no node reports a failure, 1\n"
            "otherwise (failed, incomplete or not found), 2 on a usage error.\n");
}

/* s quoted for a POSIX shell: as is when it holds only safe characters, else in single quotes
 * (a ' inside as '\''). Returns false (out unusable) when s holds a control character or
 * invalid UTF-8, or does not fit. */
static bool why_shell_quote(const char *s, char *out, size_t len)
{
    size_t n = strlen(s), o = 0;
    bool plain = n > 0;
    if (!pdcbb_utf8_valid(s, n, NULL))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return false;
        if (!(c == '/' || c == '.' || c == '_' || c == '-' || c == '+' || c == ':' ||
              c == ',' || c == '=' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
              (c >= 'A' && c <= 'Z')))
            plain = false;
    }
    if (plain)
        return snprintf(out, len, "%s", s) < (int)len;
    if (o + 1 >= len)
        return false;
    out[o++] = '\'';
    for (size_t i = 0; i < n; i++) {
        const char *piece = s[i] == '\'' ? "'\\''" : NULL;
        size_t pl = piece ? 4 : 1;
        if (o + pl + 2 > len)
            return false;
        if (piece)
            memcpy(out + o, piece, pl);
        else
            out[o] = s[i];
        o += pl;
    }
    out[o++] = '\'';
    out[o] = '\0';
    return true;
}

/* A node name as Slurm and pdcbb make them: letters, digits, '.', '_', '-'. */
static bool why_node_ok(const char *node)
{
    if (node[0] == '\0' || strlen(node) > 255)
        return false;
    for (const char *c = node; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              *c == '.' || *c == '_' || *c == '-'))
            return false;
    return true;
}

/* Print one FAILED report of job_id if it is the caller's (trusted_uid); else one line saying
 * whose it is. Returns true if it was a trusted report. */
static bool why_report(const char *path, uint64_t job_id, long trusted_uid)
{
    pdcbb_drain_report_info_t r;
    char why[PATH_MAX + 256];
    if (trusted_uid < 0) {
        struct stat st;
        if (lstat(path, &st) == 0) {
            struct passwd *pw = getpwuid(st.st_uid);
            printf("  ignoring %s: written by %s (uid %ld); as root, with the job's drain "
                   "directories of several users, pdcbb cannot tell whose job %" PRIu64 " was: "
                   "run pdcbb why as the job's user\n",
                   pdcbb_esc(path), pw ? pdcbb_esc(pw->pw_name) : "?", (long)st.st_uid, job_id);
        }
        return false;
    }
    pdcbb_err_t rc = pdcbb_drain_report_read(path, job_id, (uid_t)trusted_uid, &r, why,
                                             sizeof(why));
    if (rc != PDCBB_OK) {
        if (rc != PDCBB_ERR_NOT_FOUND)
            printf("  ignoring %s: not this job's report, its contents are not shown\n",
                   pdcbb_esc(why));
        return false;
    }
    printf("  FAILED on node %s%s%s (report %s", pdcbb_esc(r.node[0] ? r.node : "?"),
           r.time[0] ? " at " : "", pdcbb_esc(r.time), pdcbb_esc(path));
    if (r.instance[0])
        printf(", job instance %s", pdcbb_esc(r.instance));
    printf("):\n");
    if (r.reason[0])
        printf("    reason: %s\n", pdcbb_esc(r.reason));
    if (r.job_dir[0])
        printf("    data: kept on node %s in %s\n", pdcbb_esc(r.node), pdcbb_esc(r.job_dir));
    if (r.drain_dir[0])
        printf("    drain directory: %s\n", pdcbb_esc(r.drain_dir));
    char qdest[PATH_MAX * 4 + 8], qdir[PATH_MAX * 4 + 8];
    if (why_node_ok(r.node) && r.job_dir[0] == '/' && r.destination[0] == '/' &&
        why_shell_quote(r.destination, qdest, sizeof(qdest)) &&
        why_shell_quote(r.job_dir, qdir, sizeof(qdir))) {
        struct passwd *pw = getpwuid((uid_t)trusted_uid);
        printf("    finish it: on node %s, as %s: pdcbb drain --to %s %s\n", r.node,
               pw ? pdcbb_esc(pw->pw_name) : "the job user", qdest, qdir);
        printf("    under Slurm, from a login node: srun -w %s -N 1 -n 1 pdcbb drain --to %s %s\n",
               r.node, qdest, qdir);
    } else {
        printf("    finish it: the report names no usable node, job directory and destination; "
               "run pdcbb drain --to DEST JOBDIR on the node that holds the data\n");
    }
    return true;
}

static int why_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir that start with prefix followed by '\0' or '.', sorted. */
static char **why_names(const char *dir, const char *prefix, size_t *count)
{
    size_t pl = strlen(prefix), n = 0, cap = 0;
    char **names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return NULL;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, pl) != 0 ||
            (de->d_name[pl] != '\0' && de->d_name[pl] != '.'))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            char **v = realloc(names, cap * sizeof(*v));
            if (v == NULL)
                break;
            names = v;
        }
        if ((names[n] = strdup(de->d_name)) != NULL)
            n++;
    }
    closedir(d);
    if (n > 0)
        qsort(names, n, sizeof(char *), why_name_cmp);
    *count = n;
    return names;
}

static void why_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static bool why_is_report_name(const char *name)
{
    size_t l = strlen(name), sl = strlen(PDCBB_DRAIN_FAILED_SUFFIX);
    return l > sl && strcmp(name + l - sl, PDCBB_DRAIN_FAILED_SUFFIX) == 0;
}

/* The uid whose records count: the caller's; for root, the owner of the job's drain
 * directories when they all have one owner, root's own when there is none (-1 when there
 * are several owners). */
static long why_trusted_uid(const char *dest, char **names, size_t n)
{
    if (getuid() != 0)
        return (long)getuid();
    long owner = -1;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 300], ident[PATH_MAX + 320];
        struct stat st, ist;
        snprintf(path, sizeof(path), "%s/%s", dest, names[i]);
        snprintf(ident, sizeof(ident), "%s/%s", path, PDCBB_DRAIN_IDENTITY);
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || lstat(ident, &ist) != 0 ||
            ist.st_uid != st.st_uid)
            continue;
        if (any && owner != (long)st.st_uid)
            return -1;
        owner = (long)st.st_uid;
        any = true;
    }
    return any ? owner : 0;
}

int cli_cmd_why(int argc, char **argv)
{
    static const struct option opts[] = {
        {"job", required_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t job_id = 0;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":j:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': {
            char *e;
            errno = 0;
            job_id = strtoull(optarg, &e, 10);
            if (errno != 0 || *e != '\0' || job_id == 0 || optarg[0] == '-') {
                fprintf(stderr, "pdcbb why: --job %s: not a job id\n", pdcbb_esc(optarg));
                return WHY_EXIT_USAGE;
            }
            break;
        }
        case 'h': why_usage(stdout); return 0;
        default:
            return cli_bad_option("why", c, argv);
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "pdcbb why: %s (usage: pdcbb why DEST/pdcbb.<job id>, or pdcbb why "
                        "--job ID DEST)\n",
                optind >= argc ? "no drain directory given" : "more than one argument given");
        return WHY_EXIT_USAGE;
    }
    /* DEST and the job id: from --job, or from the name pdcbb.<id>[...] */
    char dest[PATH_MAX];
    snprintf(dest, sizeof(dest), "%s", argv[optind]);
    size_t dl = strlen(dest);
    while (dl > 1 && dest[dl - 1] == '/')
        dest[--dl] = '\0';
    if (job_id == 0) {
        char *slash = strrchr(dest, '/');
        const char *base = slash ? slash + 1 : dest;
        char *e = NULL;
        if (strncmp(base, "pdcbb.", 6) == 0 && base[6] >= '0' && base[6] <= '9')
            job_id = strtoull(base + 6, &e, 10);
        if (job_id == 0 || e == NULL || (*e != '\0' && *e != '.')) {
            fprintf(stderr, "pdcbb why: %s is not named pdcbb.<job id>: give --job ID with the "
                            "destination\n",
                    pdcbb_esc(argv[optind]));
            return WHY_EXIT_USAGE;
        }
        if (slash == NULL)
            snprintf(dest, sizeof(dest), ".");
        else if (slash == dest)
            dest[1] = '\0';
        else
            *slash = '\0';
    }
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "pdcbb.%" PRIu64, job_id);
    printf("job %" PRIu64 ", drain destination %s:\n", job_id, pdcbb_esc(dest));

    int complete = 0, dirs = 0, failed = 0;
    size_t n = 0;
    char **names = why_names(dest, prefix, &n);
    long trusted = why_trusted_uid(dest, names, n);
    if (names == NULL && n == 0) {
        DIR *d = opendir(dest);
        if (d == NULL)
            printf("  cannot read the destination: %s\n", strerror(errno));
        else
            closedir(d);
    }
    /* the drain directories first, then the reports */
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 300], why[PATH_MAX + 300];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dest, names[i]);
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        pdcbb_drain_identity_t id;
        if (trusted < 0 || st.st_uid != (uid_t)trusted) {
            struct passwd *pw = getpwuid(st.st_uid);
            printf("  %s: belongs to %s (uid %ld), not to %s: not your job's drain, do not use "
                   "it\n",
                   pdcbb_esc(path), pw ? pdcbb_esc(pw->pw_name) : "?", (long)st.st_uid,
                   trusted < 0 ? "the job's user" : "you");
            continue;
        }
        if (pdcbb_drain_identity_read(path, (uid_t)trusted, &id, why, sizeof(why)) != PDCBB_OK) {
            printf("  %s: not a pdcbb job's drain, do not use it: %s\n", pdcbb_esc(path),
                   pdcbb_esc(why));
            continue;
        }
        if (id.job_id != job_id) {
            printf("  %s: its %s names job %" PRIu64 ", not %" PRIu64 ": not this job's drain\n",
                   pdcbb_esc(path), PDCBB_DRAIN_IDENTITY, id.job_id, job_id);
            continue;
        }
        dirs++;
        char created[64] = "?";
        struct tm tm;
        if (localtime_r(&id.created, &tm) != NULL)
            strftime(created, sizeof(created), "%Y-%m-%d %H:%M:%S", &tm);
        char cpath[PATH_MAX + 320];
        snprintf(cpath, sizeof(cpath), "%s/%s", path, PDCBB_DRAIN_COMPLETE);
        if (access(cpath, F_OK) == 0) {
            complete = 1;
            printf("  %s: complete (job instance %s%s%s, created %s); read it with pdcbb "
                   "ls/get/verify %s\n",
                   pdcbb_esc(path), id.instance[0] ? pdcbb_esc(id.instance) : "none",
                   id.cluster[0] ? ", cluster " : "", id.cluster, created, pdcbb_esc(path));
        } else {
            printf("  %s: INCOMPLETE, %u rank(s) drained so far (job instance %s%s%s, created "
                   "%s): the other ranks' data is still on their nodes\n",
                   pdcbb_esc(path), pdcbb_drain_parts_count(path),
                   id.instance[0] ? pdcbb_esc(id.instance) : "none",
                   id.cluster[0] ? ", cluster " : "", id.cluster, created);
        }
    }
    if (dirs > 1)
        printf("  %d drain directories of job id %" PRIu64 " (job ids were used again): each "
               "is one run of a job with this id; the newest created is the latest run\n",
               dirs, job_id);
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 300];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dest, names[i]);
        if (lstat(path, &st) != 0 || S_ISDIR(st.st_mode) || !why_is_report_name(names[i]))
            continue;
        if (why_report(path, job_id, trusted))
            failed++;
    }
    why_names_free(names, n);
    /* reports that went to the home directory because DEST could not take them */
    const char *home = getenv("HOME");
    struct passwd *me = getpwuid(getuid());
    if (me != NULL && me->pw_dir != NULL)
        home = me->pw_dir;
    const char *homes[2] = {getenv("HOME"), home};
    for (int h = 0; h < 2; h++) {
        if (homes[h] == NULL || homes[h][0] != '/' || (h == 1 && homes[0] != NULL &&
                                                        strcmp(homes[0], homes[1]) == 0))
            continue;
        size_t hn = 0;
        char **hnames = why_names(homes[h], prefix, &hn);
        for (size_t i = 0; i < hn; i++) {
            char path[PATH_MAX + 300];
            if (!why_is_report_name(hnames[i]) || strchr(hnames[i] + strlen(prefix), '.') ==
                                                      NULL)
                continue;
            snprintf(path, sizeof(path), "%s/%s", homes[h], hnames[i]);
            if (why_report(path, job_id, getuid() == 0 ? trusted : (long)getuid()))
                failed++;
        }
        why_names_free(hnames, hn);
    }
    if (dirs == 0 && failed == 0)
        printf("  nothing of this job here: no drain directory %s/%s of yours and no FAILED "
               "report (is the job still running, or was it drained elsewhere?)\n",
               pdcbb_esc(dest), prefix);
    else if (failed > 0)
        printf("  %d node(s) failed to drain: their data is kept on those nodes until the "
               "drain is finished with the command above\n",
               failed);
    return complete && failed == 0 ? 0 : 1;
}
