/*
 * cmd_drain.c - `pdcbb drain`: drain one node-local job directory to the job's drain destination
 * (pdcbb_drain_node), by hand: to finish a drain that failed at the end of the job, or to drain a
 * job that ran without one.
 *
 * What the job was is read from the directory itself: its name (pdcbb.<job id>), config.yaml
 * (servers_per_node, drain), the daemons' ranks (bbd-R/ directories) and, for the number of
 * daemons of the whole job, the node's name and the job's instance id, job.info (written by the
 * prolog); for directories without it, the daemons' endpoint records while they exist, else
 * the first line each daemon logs ("starting: job J, rank R of N, node NODE, ..."), else the
 * parts other nodes already wrote to the drain directory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_data.h"
#include "pdcbb_config.h"
#include "pdcbb_drain.h"
#include "pdcbb_job.h"
#include "pdcbb_job_drain.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_log.h"

#define DRAIN_EXIT_USAGE 2
#define DRAIN_RANKS_MAX 64

static void drain_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb drain [--to DEST] [--keep] [--quiet] JOB_DIR\n"
            "\n"
            "Drain the burst-buffer data of one node of a finished job to the parallel file\n"
            "system: JOB_DIR is the job's node-local directory (<local_root>/pdcbb.<job id>,\n"
            "for example /tmp/pdcbb/pdcbb.1234). Every daemon rank kept there is written to\n"
            "DEST/pdcbb.<job id>/ in the drain format (docs/DRAIN-FORMAT.md): its data file is\n"
            "written, synced, re-read and checked against the CRC-32C of the node-local bytes,\n"
            "then its part (parts/rank-R.yaml) is written. Ranks that already have a part are\n"
            "skipped, so an interrupted or failed drain is finished by running the same command\n"
            "again. When the last rank of the job has its part, manifest.yaml and COMPLETE are\n"
            "written: the drain is complete.\n"
            "\n"
            "After a successful drain the node-local directory is removed (unless --keep). On\n"
            "any failure nothing node-local is removed, and the message says why and where the\n"
            "data is kept.\n"
            "\n"
            "The daemons of the job must be stopped (the job ended, or `pdcbb run` returned).\n"
            "The drain runs as the owner of JOB_DIR, the job user: drained files belong to that\n"
            "user. Only the owner or root may drain a job directory; root drains as the owner.\n"
            "\n"
            "Options:\n"
            "  -t, --to DEST   the drain destination, an existing directory (default: the\n"
            "                  job's drain= setting, from JOB_DIR/config.yaml)\n"
            "  -k, --keep      keep the node-local directory after a successful drain\n"
            "  -q, --quiet     no progress and no summary (errors are still printed)\n"
            "  -h, --help      show this help\n"
            "\n"
            "Exit status: 0 when this node's ranks are drained (whether or not other nodes of\n"
            "the job still have to drain: the summary says), 1 on failure, 2 on a usage error.\n"
            "PDCBB_LOG=info shows the drain's log lines on stderr.\n");
}

/* ---------------------------------------------------------------------------------------- */
/* What the job directory says                                                               */

typedef struct drain_info {
    uint64_t job_id;
    uint32_t nservers;         /* 0: unknown */
    char node[PDCBB_NODE_NAME_MAX];
    uint32_t ranks[DRAIN_RANKS_MAX];
    unsigned nranks;
} drain_info_t;

static int drain_u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* "bbd-R" directories: the ranks this node held. -1 on error (message printed). */
static int drain_find_ranks(const char *dir, drain_info_t *in)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "pdcbb drain: cannot read %s: %s\n", dir, strerror(errno));
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end;
        if (strncmp(de->d_name, "bbd-", 4) != 0 || de->d_name[4] < '0' || de->d_name[4] > '9')
            continue;
        unsigned long r = strtoul(de->d_name + 4, &end, 10);
        struct stat st;
        if (*end != '\0' || r >= PDCBB_SERVERS_MAX ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (in->nranks == DRAIN_RANKS_MAX) {
            closedir(d);
            fprintf(stderr, "pdcbb drain: more than %d daemon directories in %s\n",
                    DRAIN_RANKS_MAX, dir);
            return -1;
        }
        in->ranks[in->nranks++] = (uint32_t)r;
    }
    closedir(d);
    qsort(in->ranks, in->nranks, sizeof(in->ranks[0]), drain_u32_cmp);
    return 0;
}

/* From a daemon's log: the last "starting: job J, rank R of N, node NODE," line. */
static bool drain_from_log(const char *dir, uint32_t rank, drain_info_t *in)
{
    char path[PATH_MAX];
    if (pdcbb_jobdir_rank_path(dir, rank, "log", path, sizeof(path)) != PDCBB_OK)
        return false;
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return false;
    char line[2048];
    bool found = false;
    while (fgets(line, sizeof(line), f) != NULL) {
        const char *p = strstr(line, "starting: job ");
        uint64_t job;
        unsigned r, n;
        char node[PDCBB_NODE_NAME_MAX];
        if (p != NULL &&
            sscanf(p, "starting: job %" SCNu64 ", rank %u of %u, node %255[^,],", &job, &r, &n,
                   node) == 4 &&
            r == rank && n > 0) {
            in->nservers = n;
            snprintf(in->node, sizeof(in->node), "%s", node);
            if (in->job_id == 0)
                in->job_id = job;
            found = true;
        }
    }
    fclose(f);
    return found;
}

/* From a part another node already wrote into the job's drain directory. */
static bool drain_from_parts(const char *dest, uint64_t job_id, const char *instance, uid_t owner,
                             drain_info_t *in)
{
    char pat[PATH_MAX], ddir[PATH_MAX], ferr[PDCBB_DRAIN_ERR_LEN];
    if (pdcbb_drain_dir_find(dest, job_id, instance, owner, ddir, sizeof(ddir), ferr,
                             sizeof(ferr)) != PDCBB_OK)
        return false;
    snprintf(pat, sizeof(pat), "%s/%s", ddir, PDCBB_DRAIN_PARTS_DIR);
    DIR *d = opendir(pat);
    if (d == NULL)
        return false;
    struct dirent *de;
    bool found = false;
    while (!found && (de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (strncmp(de->d_name, "rank-", 5) != 0 || l < 6 || strcmp(de->d_name + l - 5, ".yaml"))
            continue;
        char path[PATH_MAX + 300], err[PDCBB_DRAIN_ERR_LEN];
        snprintf(path, sizeof(path), "%s/%s", pat, de->d_name);
        pdcbb_drain_t *m = NULL;
        if (pdcbb_drain_load_manifest(path, &m, err, sizeof(err)) == PDCBB_OK && m->nservers) {
            in->nservers = m->nservers;
            found = true;
        }
        pdcbb_drain_free(m);
    }
    closedir(d);
    return found;
}

/* ---------------------------------------------------------------------------------------- */
/* Draining (as the job user)                                                                */

typedef struct drain_result {
    pdcbb_drain_node_stats_t stats;
    char err[PDCBB_DRAIN_ERR_LEN];
} drain_result_t;

typedef struct drain_arg {
    pdcbb_drain_job_t job;
    cmd_progress_t prog; /* on a terminal, unless --quiet */
} drain_arg_t;

static pdcbb_err_t drain_run(void *arg, void *out)
{
    drain_arg_t *a = arg;
    drain_result_t *res = out;
    memset(res, 0, sizeof(*res));
    pdcbb_err_t rc = pdcbb_drain_node(&a->job, &res->stats, a->prog.on ? cmd_drain_progress : NULL,
                                      &a->prog, res->err, sizeof(res->err));
    if (rc == PDCBB_OK && res->stats.drain_dir[0])
        pdcbb_job_drain_keep_logs(a->job.job_dir, res->stats.drain_dir, a->job.node);
    cmd_drain_progress_end(&a->prog, rc == PDCBB_OK, res->stats.bytes, res->stats.objects);
    if (rc == PDCBB_OK) /* this node is drained: its old FAILED reports are stale */
        pdcbb_drain_report_remove(a->job.destination, a->job.job_id, a->job.node);
    return rc;
}

/* 1 if dir exists and holds nothing. */
static bool drain_dir_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return false;
    struct dirent *de;
    bool empty = true;
    while (empty && (de = readdir(d)) != NULL)
        empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
    closedir(d);
    return empty;
}

int cli_cmd_drain(int argc, char **argv)
{
    static const struct option opts[] = {
        {"to", required_argument, NULL, 't'}, {"keep", no_argument, NULL, 'k'},
        {"quiet", no_argument, NULL, 'q'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *to = NULL;
    bool keep = false, quiet = false;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":t:kqh", opts, NULL)) != -1) {
        switch (c) {
        case 't': to = optarg; break;
        case 'k': keep = true; break;
        case 'q': quiet = true; break;
        case 'h': drain_usage(stdout); return 0;
        default:
            return cli_bad_option("drain", c, argv);
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "pdcbb drain: %s (usage: pdcbb drain [--to DEST] [--keep] [--quiet] "
                        "JOB_DIR)\n",
                optind >= argc ? "no job directory given" : "more than one job directory given");
        return DRAIN_EXIT_USAGE;
    }
    int lvl = pdcbb_log_level_parse(getenv("PDCBB_LOG"));
    pdcbb_log_set_level(lvl < 0 ? PDCBB_LOG_NONE : (pdcbb_log_level_t)lvl);
    pdcbb_log_set_ident("pdcbb drain");

    /* the job directory: a real directory named pdcbb.<job id> */
    const char *arg_dir = argv[optind];
    char dir[PATH_MAX], parent[PATH_MAX];
    struct stat st;
    if (realpath(arg_dir, dir) == NULL || stat(dir, &st) != 0) {
        fprintf(stderr, "pdcbb drain: cannot use job directory %s: %s\n", arg_dir,
                strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "pdcbb drain: %s is not a directory\n", arg_dir);
        return 1;
    }
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    char *end = NULL;
    uint64_t job_id = strncmp(base, "pdcbb.", 6) == 0 ? strtoull(base + 6, &end, 10) : 0;
    if (job_id == 0 || end == NULL || *end != '\0') {
        fprintf(stderr, "pdcbb drain: %s is not a job directory (expected a directory named "
                        "pdcbb.<job id>)\n",
                dir);
        return 1;
    }
    snprintf(parent, sizeof(parent), "%.*s", (int)(base - dir > 1 ? base - dir - 1 : 1), dir);

    /* only its owner drains it; root drains as the owner */
    uid_t owner = st.st_uid;
    gid_t group = st.st_gid;
    if (getuid() != 0 && getuid() != owner) {
        struct passwd *pw = getpwuid(owner);
        fprintf(stderr, "pdcbb drain: %s belongs to %s (uid %ld): only that user or root can "
                        "drain it\n",
                dir, pw ? pw->pw_name : "another user", (long)owner);
        return 1;
    }
    struct passwd *pw = getpwuid(owner);
    char user[256];
    snprintf(user, sizeof(user), "%s", pw ? pw->pw_name : "");
    if (user[0] == '\0')
        snprintf(user, sizeof(user), "%ld", (long)owner);
    if (pw != NULL && owner != 0)
        group = pw->pw_gid;

    /* its configuration */
    pdcbb_job_t *job = calloc(1, sizeof(*job));
    if (job == NULL) {
        fprintf(stderr, "pdcbb drain: out of memory\n");
        return 1;
    }
    int status = 1;
    char cpath[PATH_MAX], cerr[PDCBB_CONFIG_ERR_LEN];
    pdcbb_config_init(&job->cfg);
    pdcbb_err_t rc = pdcbb_jobdir_path(dir, "config.yaml", cpath, sizeof(cpath));
    if (rc == PDCBB_OK)
        rc = pdcbb_config_load_file(&job->cfg, cpath, PDCBB_SCOPE_ALL, cerr, sizeof(cerr));
    if (rc != PDCBB_OK) {
        fprintf(stderr, "pdcbb drain: %s is not a usable job directory: %s\n", dir,
                rc == PDCBB_ERR_NOT_FOUND ? "no config.yaml" : cerr);
        goto out;
    }
    const char *dest = to ? to : job->cfg.drain;
    if (dest[0] == '\0') {
        fprintf(stderr, "pdcbb drain: no destination: the job had no drain= setting; give "
                        "--to DEST\n");
        status = DRAIN_EXIT_USAGE;
        goto out;
    }
    unsigned spn = job->cfg.servers_per_node ? job->cfg.servers_per_node : 1;

    /* its ranks, the number of daemons of the job, this node's name */
    drain_info_t in;
    memset(&in, 0, sizeof(in));
    in.job_id = job_id;
    if (drain_find_ranks(dir, &in) != 0)
        goto out;
    if (in.nranks == 0) {
        fprintf(stderr, "pdcbb drain: %s holds no daemon data (no bbd-R directory)\n", dir);
        goto out;
    }
    pdcbb_jobinfo_t ji;
    memset(&ji, 0, sizeof(ji));
    if (pdcbb_jobinfo_read(dir, &ji) == PDCBB_OK) { /* written by the prolog */
        if (ji.job_id != job_id) {
            fprintf(stderr, "pdcbb drain: %s names job %" PRIu64 " but its job.info says job %"
                            PRIu64 "\n",
                    dir, job_id, ji.job_id);
            goto out;
        }
        in.nservers = ji.nnodes * ji.servers_per_node;
        snprintf(in.node, sizeof(in.node), "%s", ji.node);
    }
    pdcbb_endpoint_t *eps = NULL;
    size_t neps = 0;
    if (in.nservers == 0 && pdcbb_jobdir_read_endpoints(dir, &eps, &neps) == PDCBB_OK &&
        neps > 0) {
        in.nservers = eps[0].nservers;
        snprintf(in.node, sizeof(in.node), "%s", eps[0].node);
        if (eps[0].job_id != job_id) {
            fprintf(stderr, "pdcbb drain: %s names job %" PRIu64 " but its daemons served job "
                            "%" PRIu64 "\n",
                    dir, job_id, eps[0].job_id);
            free(eps);
            goto out;
        }
    }
    free(eps);
    for (unsigned i = 0; i < in.nranks && in.nservers == 0; i++)
        drain_from_log(dir, in.ranks[i], &in);
    if (in.nservers == 0 && !drain_from_parts(dest, job_id, ji.instance, owner, &in)) {
        fprintf(stderr, "pdcbb drain: cannot tell how many daemons job %" PRIu64 " had: no "
                        "endpoint record or daemon log in %s and no part of it in %s\n",
                job_id, dir, dest);
        goto out;
    }
    if (in.node[0] == '\0') {
        char host[256] = "";
        gethostname(host, sizeof(host) - 1);
        snprintf(in.node, sizeof(in.node), "%s", host);
    }
    uint32_t first = in.ranks[0];
    bool consecutive = in.nranks == spn && first % spn == 0 && in.nservers % spn == 0 &&
                       in.ranks[in.nranks - 1] < in.nservers;
    for (unsigned i = 1; i < in.nranks && consecutive; i++)
        consecutive = in.ranks[i] == first + i;
    if (!consecutive) {
        fprintf(stderr, "pdcbb drain: %s holds daemon ranks %u..%u (%u of them), which is not "
                        "one node of %u daemons per node of a job of %u daemons\n",
                dir, first, in.ranks[in.nranks - 1], in.nranks, spn, in.nservers);
        goto out;
    }

    /* drain, as the owner: into this job's drain directory, made now if there is none (a
     * drain by hand is the user's own decision; the epilog never creates one) */
    int share = pdcbb_drain_share_parse(job->cfg.drain_share);
    if (share < 0)
        share = PDCBB_DRAIN_SHARE_NONE;
    job->job_id = job_id;
    job->uid = owner;
    job->gid = group;
    snprintf(job->node_name, sizeof(job->node_name), "%s", in.node);
    job->node_index = first / spn;
    job->nnodes = in.nservers / spn;
    snprintf(job->local_root, sizeof(job->local_root), "%s", parent);
    drain_arg_t da = {.job = {.job_id = job_id,
                              .uid = owner,
                              .user = user,
                              .node = in.node,
                              .node_index = first / spn,
                              .nnodes = in.nservers / spn,
                              .servers_per_node = spn,
                              .job_dir = dir,
                              .destination = dest,
                              .instance = ji.instance,
                              .cluster = ji.cluster,
                              .may_create = 1,
                              .share = share}};
    cmd_progress_init(&da.prog, "drain", !quiet && isatty(STDERR_FILENO));
    static drain_result_t res;
    char xerr[PDCBB_JOB_ERR_LEN] = "";
    memset(&res, 0, sizeof(res));
    rc = pdcbb_job_as_user(job, drain_run, &da, &res, sizeof(res), xerr, sizeof(xerr));
    if (rc != PDCBB_OK) {
        fprintf(stderr, "pdcbb drain: %s\n",
                res.err[0] ? res.err : xerr[0] ? xerr : pdcbb_strerror(rc));
        if (res.err[0] == '\0')
            fprintf(stderr, "pdcbb drain: node-local data kept in %s\n", dir);
        goto out;
    }
    const pdcbb_drain_node_stats_t *s = &res.stats;
    if (!quiet) {
        double mbs = s->seconds > 0 ? (double)s->bytes / 1e6 / s->seconds : 0.0;
        printf("pdcbb drain: job %" PRIu64 " ranks %u..%u: %u drained", job_id, first,
               first + spn - 1, s->ranks_drained);
        if (s->ranks_skipped)
            printf(", %u already drained", s->ranks_skipped);
        printf("; %" PRIu64 " bytes in %" PRIu64 " extents, %" PRIu64 " objects, %.2f s"
               " (%.0f MB/s), verified\n",
               s->bytes, s->extents, s->objects, s->seconds, mbs);
        if (s->dropped_extents > 0)
            printf("pdcbb drain: dropped %" PRIu64 " extents of deleted objects (%" PRIu64
                   " bytes a daemon still held: see dropped_objects in the manifest)\n",
                   s->dropped_extents, s->dropped_bytes);
        if (s->complete)
            printf("pdcbb drain: %s is complete (all %u ranks)\n", s->drain_dir, in.nservers);
        else
            printf("pdcbb drain: %s is not complete yet: %u of %u ranks drained (drain the "
                   "other nodes' job directories)\n",
                   s->drain_dir, pdcbb_drain_parts_count(s->drain_dir), in.nservers);
    }
    status = 0;
    if (keep) {
        if (!quiet)
            printf("pdcbb drain: node-local data kept in %s (--keep)\n", dir);
        goto out;
    }
    char rerr[PDCBB_JOB_ERR_LEN];
    if ((rc = pdcbb_job_remove_dir(job, rerr, sizeof(rerr))) != PDCBB_OK) {
        if (drain_dir_empty(dir)) {
            /* A user's drain by hand (the recovery command of a FAILED report): the data is
             * gone from the node, only the empty directory stays, because local_root is not
             * the user's to write. Nothing is lost or stranded: not a failure. */
            if (!quiet)
                printf("pdcbb drain: removed the node-local data; the empty directory %s stays "
                       "(its parent is not writable by you)\n",
                       dir);
        } else {
            fprintf(stderr, "pdcbb drain: drained, but the node-local data could not be "
                            "removed: %s\n",
                    rerr);
            status = 1;
        }
    } else if (!quiet) {
        printf("pdcbb drain: removed %s\n", dir);
    }
out:
    free(job);
    return status;
}
