/*
 * cmd_run.c - `pdcbb run`: a local job on one machine without Slurm. N "nodes" are N
 * directories of a work directory; each gets the prolog the Slurm plugin runs (its daemons), the
 * job's start script, then the user's command with the environment a job step gets, then the
 * end script, the epilog (the daemons stopped) and the drain, node by node, as the Slurm epilog
 * does (jobctl/). SIGINT, SIGTERM and SIGHUP go on to the command; the exit status is its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_data.h"
#include "pdcbb_config.h"
#include "pdcbb_job.h"
#include "pdcbb_job_drain.h"
#include "pdcbb_job_script.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_log.h"

#define CLI_NODES_MAX 256
#define CLI_PDC_SPECS_MAX 32

/* Library logging goes to stderr at the level $PDCBB_LOG names (default: none, the CLI speaks). */
static void cli_log_setup(void)
{
    int lvl = pdcbb_log_level_parse(getenv("PDCBB_LOG"));
    pdcbb_log_set_level(lvl < 0 ? PDCBB_LOG_NONE : (pdcbb_log_level_t)lvl);
    pdcbb_log_set_ident("pdcbb");
}

static bool cli_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* mkdir -p, mode for each created component. 0 or -1 with errno. */
static int cli_mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -1;
        *p = saved;
        if (saved == '\0')
            break;
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static int cli_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if ((flag == FTW_DP || flag == FTW_D) ? rmdir(path) : unlink(path))
        if (errno != ENOENT)
            fprintf(stderr, "pdcbb: cannot remove %s: %s\n", path, strerror(errno));
    return 0;
}

/* Print the last lines of each daemon log of a node whose prolog failed (at most 4 KiB each). */
static void run_print_daemon_logs(const pdcbb_job_t *job, unsigned k)
{
    char dir[PATH_MAX];
    if (pdcbb_job_dir(job, dir, sizeof(dir)) != PDCBB_OK)
        return;
    for (unsigned r = 0; r < job->cfg.servers_per_node; r++) {
        char name[64], path[PATH_MAX], buf[4097];
        snprintf(name, sizeof(name), "bbd-%u.log", job->node_index * job->cfg.servers_per_node + r);
        if (pdcbb_jobdir_path(dir, name, path, sizeof(path)) != PDCBB_OK)
            continue;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            continue;
        off_t end = lseek(fd, 0, SEEK_END);
        off_t from = end > 4096 ? end - 4096 : 0;
        ssize_t n = end > 0 ? pread(fd, buf, (size_t)(end - from), from) : 0;
        close(fd);
        if (n <= 0) {
            fprintf(stderr, "pdcbb run: node%u: %s is empty\n", k, name);
            continue;
        }
        buf[n] = '\0';
        char *text = buf;
        if (from > 0 && (text = strchr(buf, '\n')) != NULL)
            text++; /* from the first whole line */
        else if (from > 0)
            text = buf;
        fprintf(stderr, "pdcbb run: node%u: %s%s:\n%s%s", k, from > 0 ? "end of " : "", name,
                text, text[0] && text[strlen(text) - 1] != '\n' ? "\n" : "");
    }
}

static void run_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb run [OPTIONS] -- CMD [ARGS...]\n"
            "\n"
            "Run CMD with a burst buffer on this machine, without Slurm: create N node-local\n"
            "directories, start the burst-buffer daemons of N \"nodes\" with the same prolog the\n"
            "Slurm plugin uses, run CMD with the environment a job step gets, then stop the\n"
            "daemons. The exit status is CMD's (128+N if it died of signal N).\n"
            "\n"
            "Options:\n"
            "  -n, --nodes N          number of simulated nodes (1 to %d; default 1)\n"
            "  -w, --workdir DIR      keep node directories in DIR (created if missing, kept);\n"
            "                         default: a temporary directory, removed at the end\n"
            "      --pdc SPEC         job options as for sbatch --pdc, e.g.\n"
            "                         capacity=2G,servers_per_node=2 (may be repeated)\n"
            "      --site-config FILE site configuration (default: $PDCBB_SITE_CONFIG, if set)\n"
            "      --job-id ID        job id (default: the pid of pdcbb)\n"
            "      --drain DIR        at the end, drain the burst buffer to DIR/pdcbb.<job id>\n"
            "                         (as --pdc drain=DIR); the node data is removed once\n"
            "                         drained and verified, kept if the drain fails (then\n"
            "                         DIR/pdcbb.<job id>.<node>.FAILED says why: pdcbb why).\n"
            "                         DIR must exist and be writable by you: checked before\n"
            "                         CMD runs\n"
            "      --stage-in DIR     load a drained job directory before CMD starts\n"
            "                         (as --pdc stage_in=DIR; any number of nodes)\n"
            "      --script PATH      run the executable PATH on every node before CMD starts\n"
            "                         (argument start) and after it ended, before the drain\n"
            "                         (argument end); as --pdc script=PATH. A failing start\n"
            "                         script fails the job: CMD is not run\n"
            "      --ntasks N         the job's number of tasks, given to the script as\n"
            "                         PDCBB_NTASKS (default 1: CMD)\n"
            "  -k, --keep             keep the temporary work directory and its data\n"
            "  -q, --quiet            no report at the end (errors are still printed)\n"
            "  -h, --help             show this help\n"
            "\n"
            "Environment given to CMD: PDCBB_JOB_ID, PDCBB_JOB_DIR, PDCBB_SERVER_DIRS,\n"
            "PDCBB_NNODES, PDCBB_NODE_NAME, and with --pdc mount=yes PDCBB_MOUNT (node 0's\n"
            "filesystem; node k's is mnt/ in its job directory). Read by pdcbb:\n"
            "PDCBB_SITE_CONFIG, PDCBB_DAEMON_PATH, PDCBB_MOUNT_PATH, TMPDIR, PDCBB_LOG, and the\n"
            "PDCBB_<KEY> debugging knobs of the configuration.\n",
            CLI_NODES_MAX);
}

/* Signal state while CMD runs (see run_on_signal). */
static volatile sig_atomic_t run_child_pid;
static volatile sig_atomic_t run_last_signal;

/*
 * Forward SIGINT/SIGTERM/SIGHUP to CMD and remember them. A signal the terminal generated
 * (si_code SI_KERNEL) already went to CMD if it is in our process group: do not send it twice.
 */
static void run_on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int saved = errno;
    run_last_signal = sig;
    pid_t child = (pid_t)run_child_pid;
    if (child > 0) {
        bool from_tty = si != NULL && si->si_code == SI_KERNEL;
        if (!from_tty || getpgid(child) != getpgrp())
            kill(child, sig);
    }
    errno = saved;
}

static const int run_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define RUN_NSIGNALS (sizeof(run_signals) / sizeof(run_signals[0]))

static void run_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = run_on_signal;
    sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: let waits see EINTR */
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < RUN_NSIGNALS; i++)
        sigaction(run_signals[i], &sa, NULL);
}

static void run_signals_block(bool block, sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < RUN_NSIGNALS; i++)
        sigaddset(&set, run_signals[i]);
    sigprocmask(block ? SIG_BLOCK : SIG_SETMASK, block ? &set : old, block ? old : NULL);
}

/* Where the daemon is: $PDCBB_DAEMON_PATH, the configured one if it exists, else next to us. */
static void run_find_daemon(pdcbb_config_t *cfg)
{
    const char *env = getenv("PDCBB_DAEMON_PATH");
    char buf[PATH_MAX];
    if (env != NULL && env[0] != '\0') {
        if (realpath(env, buf) != NULL) {
            snprintf(cfg->daemon_path, sizeof(cfg->daemon_path), "%s", buf);
        } else if (env[0] != '/' && getcwd(buf, sizeof(buf)) != NULL) {
            /* missing: keep it, the prolog reports "cannot execute", but make it absolute */
            size_t bl = strlen(buf), el = strlen(env);
            if (bl + 1 + el < sizeof(cfg->daemon_path)) {
                memcpy(cfg->daemon_path, buf, bl);
                cfg->daemon_path[bl] = '/';
                memcpy(cfg->daemon_path + bl + 1, env, el + 1);
            }
        } else {
            snprintf(cfg->daemon_path, sizeof(cfg->daemon_path), "%s", env);
        }
        return;
    }
    if (cfg->daemon_path[0] != '\0' && access(cfg->daemon_path, X_OK) == 0)
        return;
    static const char *const rel[] = {"/../bbd/pdc_bbd", "/../sbin/pdc_bbd"};
    if (cli_find_beside(rel, sizeof(rel) / sizeof(rel[0]), cfg->daemon_path,
                        sizeof(cfg->daemon_path)))
        return;
#ifdef PDCBB_BUILD_DAEMON_PATH
    if (access(PDCBB_BUILD_DAEMON_PATH, X_OK) == 0)
        snprintf(cfg->daemon_path, sizeof(cfg->daemon_path), "%s", PDCBB_BUILD_DAEMON_PATH);
#endif
}

/* Where pdcbb_mount is: $PDCBB_MOUNT_PATH, else beside us (installed: bin/; built: the build
 * tree's mount/), else where the build put it. "" if none. */
static void run_find_mount(char *out, size_t len)
{
    const char *env = getenv("PDCBB_MOUNT_PATH");
    out[0] = '\0';
    if (env != NULL && env[0] != '\0') {
        snprintf(out, len, "%s", env);
        return;
    }
    static const char *const rel[] = {"/pdcbb_mount", "/../mount/pdcbb_mount"};
    if (cli_find_beside(rel, sizeof(rel) / sizeof(rel[0]), out, len))
        return;
#ifdef PDCBB_BUILD_MOUNT_PATH
    if (access(PDCBB_BUILD_MOUNT_PATH, X_OK) == 0)
        snprintf(out, len, "%s", PDCBB_BUILD_MOUNT_PATH);
#endif
}

/* Build the resolved configuration; on error prints it and returns false. */
static bool run_config(pdcbb_config_t *cfg, const char *site, const char **specs, int nspecs)
{
    char err[PDCBB_CONFIG_ERR_LEN];
    pdcbb_err_t rc;

    pdcbb_config_init(cfg);
    /* one machine: loopback unless the site file or the user says otherwise */
    snprintf(cfg->listen_address, sizeof(cfg->listen_address), "127.0.0.1");
    snprintf(cfg->ucx_net_devices, sizeof(cfg->ucx_net_devices), "lo");
    if (site == NULL || site[0] == '\0')
        site = getenv("PDCBB_SITE_CONFIG");
    if (site != NULL && site[0] != '\0') {
        rc = pdcbb_config_load_file(cfg, site, PDCBB_SCOPE_SITE, err, sizeof(err));
        if (rc != PDCBB_OK) {
            if (rc == PDCBB_ERR_NOT_FOUND && err[0] == '\0')
                snprintf(err, sizeof(err), "cannot open site config %s", site);
            fprintf(stderr, "pdcbb run: %s\n", err);
            return false;
        }
    }
    for (int i = 0; i < nspecs; i++) {
        rc = pdcbb_config_parse_spec(cfg, specs[i], err, sizeof(err));
        if (rc != PDCBB_OK) {
            fprintf(stderr, "pdcbb run: %s\n", err);
            return false;
        }
    }
    if ((rc = pdcbb_config_apply_env(cfg, err, sizeof(err))) != PDCBB_OK) {
        fprintf(stderr, "pdcbb run: %s\n", err);
        return false;
    }
    run_find_daemon(cfg);
    if ((rc = pdcbb_config_validate(cfg, err, sizeof(err))) != PDCBB_OK) {
        fprintf(stderr, "pdcbb run: %s\n", err);
        return false;
    }
    /* a drain that cannot work is refused before CMD runs, not discovered after it */
    if (cfg->drain[0] != '\0' &&
        (rc = pdcbb_drain_dest_check(cfg->drain, err, sizeof(err))) != PDCBB_OK) {
        fprintf(stderr, "pdcbb run: --drain %s: %s\n", cfg->drain, err);
        return false;
    }
    return true;
}

/* PDCBB_SERVER_DIRS: the nodes' job directories, ':'-separated (malloc'ed; NULL: no memory). */
static char *run_server_dirs(const pdcbb_job_t *jobs, unsigned nodes)
{
    char *dirs = malloc((size_t)nodes * (PATH_MAX + 1) + 1);
    if (dirs == NULL)
        return NULL;
    dirs[0] = '\0';
    for (unsigned k = 0; k < nodes; k++) {
        char d[PATH_MAX];
        pdcbb_job_dir(&jobs[k], d, sizeof(d));
        if (k > 0)
            strcat(dirs, ":");
        strcat(dirs, d);
    }
    return dirs;
}

/* Run CMD with the job's environment; returns its wait status, or -1 if it was never run. */
static int run_command(char **cmd, pdcbb_job_t *jobs, unsigned nodes, bool *exec_failed)
{
    char jobdir[PATH_MAX], num[32];
    char *dirs = run_server_dirs(jobs, nodes);
    int errpipe[2];
    sigset_t old;

    *exec_failed = false;
    if (dirs == NULL) {
        fprintf(stderr, "pdcbb run: out of memory\n");
        return -1;
    }
    pdcbb_job_dir(&jobs[0], jobdir, sizeof(jobdir));
    if (pipe2(errpipe, O_CLOEXEC) != 0) {
        fprintf(stderr, "pdcbb run: pipe: %s\n", strerror(errno));
        free(dirs);
        return -1;
    }
    run_signals_block(true, &old);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "pdcbb run: cannot fork: %s\n", strerror(errno));
        run_signals_block(false, &old);
        close(errpipe[0]);
        close(errpipe[1]);
        free(dirs);
        return -1;
    }
    if (pid == 0) {
        for (size_t i = 0; i < RUN_NSIGNALS; i++)
            signal(run_signals[i], SIG_DFL);
        run_signals_block(false, &old);
        close(errpipe[0]);
        snprintf(num, sizeof(num), "%" PRIu64, jobs[0].job_id);
        setenv("PDCBB_JOB_ID", num, 1);
        setenv("PDCBB_JOB_DIR", jobdir, 1);
        setenv("PDCBB_SERVER_DIRS", dirs, 1);
        snprintf(num, sizeof(num), "%u", nodes);
        setenv("PDCBB_NNODES", num, 1);
        setenv("PDCBB_NODE_NAME", jobs[0].node_name, 1);
        execvp(cmd[0], cmd);
        int e = errno;
        fprintf(stderr, "pdcbb run: cannot execute '%s': %s\n", cmd[0], strerror(e));
        ssize_t w = write(errpipe[1], &e, sizeof(e));
        (void)w;
        _exit(127);
    }
    run_child_pid = pid;
    int pending = run_last_signal;
    run_signals_block(false, &old);
    close(errpipe[1]);
    free(dirs);
    if (pending != 0) /* arrived while we were forking: CMD has not seen it */
        kill(pid, pending);

    int e = 0;
    ssize_t r;
    while ((r = read(errpipe[0], &e, sizeof(e))) < 0 && errno == EINTR)
        ;
    close(errpipe[0]);
    *exec_failed = r == (ssize_t)sizeof(e);

    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "pdcbb run: waitpid: %s\n", strerror(errno));
            st = 127 << 8;
            break;
        }
    }
    run_child_pid = 0;
    return st;
}

int cli_cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"nodes", required_argument, NULL, 'n'},   {"workdir", required_argument, NULL, 'w'},
        {"pdc", required_argument, NULL, 'p'},     {"site-config", required_argument, NULL, 's'},
        {"job-id", required_argument, NULL, 'j'},  {"keep", no_argument, NULL, 'k'},
        {"quiet", no_argument, NULL, 'q'},         {"help", no_argument, NULL, 'h'},
        {"drain", required_argument, NULL, 'D'},   {"stage-in", required_argument, NULL, 'S'},
        {"script", required_argument, NULL, 'X'},  {"ntasks", required_argument, NULL, 'T'},
        {NULL, 0, NULL, 0},
    };
    const char *specs[CLI_PDC_SPECS_MAX];
    static char drain_spec[PATH_MAX + 16], stage_spec[PATH_MAX + 16], script_spec[PATH_MAX + 16];
    const char *workdir_opt = NULL, *site = NULL;
    int nspecs = 0, c;
    uint64_t nodes = 1, job_id = (uint64_t)getpid(), ntasks = 1;
    bool keep = false, quiet = false;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+:n:w:kqh", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (cli_parse_u64("run", "--nodes", optarg, 1, CLI_NODES_MAX, &nodes) != 0)
                return CLI_EXIT_USAGE;
            break;
        case 'w':
            workdir_opt = optarg;
            break;
        case 'p':
            if (nspecs == CLI_PDC_SPECS_MAX) {
                fprintf(stderr, "pdcbb run: too many --pdc options (at most %d)\n",
                        CLI_PDC_SPECS_MAX);
                return CLI_EXIT_USAGE;
            }
            specs[nspecs++] = optarg;
            break;
        case 'T':
            if (cli_parse_u64("run", "--ntasks", optarg, 1, UINT32_MAX, &ntasks) != 0)
                return CLI_EXIT_USAGE;
            break;
        case 'D':
        case 'S':
        case 'X':
            if (nspecs == CLI_PDC_SPECS_MAX) {
                fprintf(stderr, "pdcbb run: too many --pdc options (at most %d)\n",
                        CLI_PDC_SPECS_MAX);
                return CLI_EXIT_USAGE;
            }
            if (strchr(optarg, ',') != NULL) {
                fprintf(stderr, "pdcbb run: %s %s: the %s name must not contain ','\n",
                        c == 'D' ? "--drain" : c == 'S' ? "--stage-in" : "--script", optarg,
                        c == 'X' ? "file" : "directory");
                return CLI_EXIT_USAGE;
            }
            if (c == 'D')
                snprintf(drain_spec, sizeof(drain_spec), "drain=%s", optarg);
            else if (c == 'S')
                snprintf(stage_spec, sizeof(stage_spec), "stage_in=%s", optarg);
            else
                snprintf(script_spec, sizeof(script_spec), "script=%s", optarg);
            specs[nspecs++] = c == 'D' ? drain_spec : c == 'S' ? stage_spec : script_spec;
            break;
        case 's':
            site = optarg;
            break;
        case 'j':
            if (cli_parse_u64("run", "--job-id", optarg, 1, UINT32_MAX, &job_id) != 0)
                return CLI_EXIT_USAGE;
            break;
        case 'k':
            keep = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            run_usage(stdout);
            return 0;
        default:
            return cli_bad_option("run", c, argv);
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "pdcbb run: no command given (usage: pdcbb run [OPTIONS] -- CMD "
                        "[ARGS...])\n");
        return CLI_EXIT_USAGE;
    }
    char **cmd = argv + optind;
    cli_log_setup();

    pdcbb_config_t *cfg = malloc(sizeof(*cfg));
    pdcbb_job_t *jobs = calloc((size_t)nodes, sizeof(*jobs));
    if (cfg == NULL || jobs == NULL) {
        fprintf(stderr, "pdcbb run: out of memory\n");
        free(cfg);
        free(jobs);
        return 1;
    }
    int status = 1;
    char workdir[PATH_MAX] = "";
    bool temp_workdir = false, prolog_failed = false, cleanup_failed = false, ran = false;
    bool exec_failed = false, script_failed = false, end_script_failed = false;
    int wst = 0, interrupted = 0, setup_status = 0;
    unsigned prologs = 0, scripts_started = 0, mounts = 0;
    bool mount_failed = false;
    pdcbb_job_stop_stats_t total = {0};

    if (!run_config(cfg, site, specs, nspecs)) {
        status = CLI_EXIT_USAGE;
        goto out;
    }
    if (cfg->script[0]) { /* as at a submission: checked before anything starts */
        char err[PDCBB_JOB_ERR_LEN];
        if (pdcbb_job_script_check(cfg->script, getuid(), err, sizeof(err)) != PDCBB_OK) {
            fprintf(stderr, "pdcbb run: %s\n", err);
            status = CLI_EXIT_USAGE;
            goto out;
        }
    }

    /* the work directory: absolute, because the daemons chdir into their job directories */
    if (workdir_opt != NULL) {
        if (cli_mkdir_p(workdir_opt, 0700) != 0 || realpath(workdir_opt, workdir) == NULL) {
            fprintf(stderr, "pdcbb run: cannot create work directory %s: %s\n", workdir_opt,
                    strerror(errno));
            goto out;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        char templ[PATH_MAX];
        if (tmp == NULL || tmp[0] == '\0')
            tmp = "/tmp";
        snprintf(templ, sizeof(templ), "%s/pdcbb-run.XXXXXX", tmp);
        if (mkdtemp(templ) == NULL || realpath(templ, workdir) == NULL) {
            fprintf(stderr, "pdcbb run: cannot create a temporary directory %s: %s\n", templ,
                    strerror(errno));
            goto out;
        }
        temp_workdir = true;
    }
    if (strchr(workdir, ':') != NULL) { /* ':' separates PDCBB_SERVER_DIRS */
        fprintf(stderr, "pdcbb run: the work directory %s must not contain ':'\n", workdir);
        setup_status = CLI_EXIT_USAGE;
        goto cleanup;
    }

    /* the same token on every node: clients present one token to every daemon */
    uint8_t token[PDCBB_TOKEN_LEN];
    pdcbb_err_t rc = pdcbb_token_generate(token);
    if (rc != PDCBB_OK) {
        fprintf(stderr, "pdcbb run: cannot generate the job token: %s\n", pdcbb_strerror(rc));
        goto cleanup;
    }
    char instance[PDCBB_INSTANCE_LEN + 1];
    if ((rc = pdcbb_instance_generate(instance)) != PDCBB_OK) {
        fprintf(stderr, "pdcbb run: cannot generate the job's instance id: %s\n",
                pdcbb_strerror(rc));
        goto cleanup;
    }
    for (unsigned k = 0; k < nodes; k++) {
        pdcbb_job_t *j = &jobs[k];
        snprintf(j->instance, sizeof(j->instance), "%s", instance);
        snprintf(j->cluster, sizeof(j->cluster), "local");
        j->job_id = job_id;
        j->uid = getuid();
        j->gid = getgid();
        snprintf(j->node_name, sizeof(j->node_name), "node%u", k);
        j->node_index = k;
        j->nnodes = (unsigned)nodes;
        j->cfg = *cfg;
        /* The nodes of a local job find each other's daemons where a cluster's would: in a
         * rendezvous directory, here inside the work directory (every node sees it). */
        if (snprintf(j->local_root, sizeof(j->local_root), "%s/node%u", workdir, k) >=
                (int)sizeof(j->local_root) ||
            snprintf(j->rendezvous_root, sizeof(j->rendezvous_root), "%s/rendezvous", workdir) >=
                (int)sizeof(j->rendezvous_root)) {
            fprintf(stderr, "pdcbb run: work directory path %s is too long\n", workdir);
            goto cleanup;
        }
    }

    run_signals_install();
    pdcbb_job_set_interrupt_flag(&run_last_signal);
    for (unsigned k = 0; k < nodes && !run_last_signal; k++) {
        char err[PDCBB_JOB_ERR_LEN];
        prologs = k + 1;
        rc = pdcbb_job_prolog(&jobs[k], token, err, sizeof(err));
        if (rc != PDCBB_OK && run_last_signal)
            break; /* Ctrl-C while waiting: reported as an interruption below */
        if (rc == PDCBB_OK && err[0] != '\0')
            fprintf(stderr, "pdcbb run: node%u: %s\n", k, err); /* a notice */
        if (rc != PDCBB_OK) {
            fprintf(stderr, "pdcbb run: node%u: %s\n", k, err);
            /* the daemons' own words, since a temporary work directory goes away */
            if (temp_workdir && !keep)
                run_print_daemon_logs(&jobs[k], k);
            prolog_failed = true;
            /* busy: the daemons there belong to another live run of this job id: hands off */
            if (rc == PDCBB_ERR_BUSY)
                prologs = k;
            break;
        }
    }
    pdcbb_job_set_interrupt_flag(NULL);
    interrupted = run_last_signal;
    /* mount=yes: the job's filesystem on every node, once every node's daemons are up,
     * before the start script (which may fill it) */
    if (!prolog_failed && !interrupted && strcmp(cfg->mount, "yes") == 0) {
        char mpath[PATH_MAX], mnt[PATH_MAX], err[PDCBB_JOB_ERR_LEN];
        run_find_mount(mpath, sizeof(mpath));
        for (unsigned k = 0; k < nodes && !mount_failed; k++) {
            mounts = k + 1;
            if (pdcbb_job_mount_start(&jobs[k], mpath[0] ? mpath : cfg->mount_path, mnt,
                                      sizeof(mnt), err, sizeof(err)) != PDCBB_OK) {
                fprintf(stderr, "pdcbb run: node%u: %s\n", k, err);
                mount_failed = true;
            } else if (k == 0) {
                setenv("PDCBB_MOUNT", mnt, 1);
            }
        }
        /* stage_in_files: copied once, through node 0's mount */
        if (!mount_failed && pdcbb_job_mount_stage_in(&jobs[0], err, sizeof(err)) != PDCBB_OK) {
            fprintf(stderr, "pdcbb run: node0: %s\n", err);
            mount_failed = true;
        }
    }
    /* the user script: every node, before CMD and after it (pdcbb_job_script.h) */
    char *server_dirs = cfg->script[0] ? run_server_dirs(jobs, (unsigned)nodes) : NULL;
    pdcbb_job_script_env_t senv = {.ntasks = (unsigned)ntasks, .server_dirs = server_dirs,
                                   .inherit = 1};
    for (unsigned k = 0; !prolog_failed && !interrupted && !mount_failed && k < nodes; k++) {
        char err[PDCBB_JOB_ERR_LEN];
        if (pdcbb_job_script_run(&jobs[k], PDCBB_SCRIPT_START, &senv, err, sizeof(err)) !=
            PDCBB_OK) {
            fprintf(stderr, "pdcbb run: node%u: %s\n", k, err);
            script_failed = true;
            break;
        }
        scripts_started = k + 1;
    }
    if (!prolog_failed && !interrupted && !script_failed && !mount_failed) {
        wst = run_command(cmd, jobs, (unsigned)nodes, &exec_failed);
        ran = wst >= 0;
    }
    for (unsigned k = 0; k < scripts_started; k++) {
        char err[PDCBB_JOB_ERR_LEN];
        if (pdcbb_job_script_run(&jobs[k], PDCBB_SCRIPT_END, &senv, err, sizeof(err)) !=
            PDCBB_OK) {
            fprintf(stderr, "pdcbb run: node%u: %s%s\n", k, err,
                    cfg->drain[0] ? " (the drain goes on)" : "");
            end_script_failed = true;
        }
    }
    free(server_dirs);

cleanup:
    /* every node, whatever happened: unmount (the epilog would too; here first, so the
     * daemons' stop never waits on a mount that still calls them) */
    for (unsigned k = 0; k < mounts; k++) {
        char err[PDCBB_JOB_ERR_LEN];
        if (pdcbb_job_mount_stop(&jobs[k], err, sizeof(err)) != PDCBB_OK) {
            fprintf(stderr, "pdcbb run: node%u: %s\n", k, err);
            cleanup_failed = true;
        }
    }
    /* every node, whatever happened: stop the daemons */
    for (unsigned k = 0; k < prologs; k++) {
        char err[PDCBB_JOB_ERR_LEN];
        pdcbb_job_stop_stats_t st;
        rc = pdcbb_job_epilog_stats(&jobs[k], &st, err, sizeof(err));
        total.found += st.found;
        total.killed += st.killed;
        total.running += st.running;
        total.stale += st.stale;
        if (rc != PDCBB_OK) {
            cleanup_failed = true;
            fprintf(stderr, "pdcbb run: node%u: cannot stop the burst buffer: %s\n", k, err);
        } else if (err[0] != '\0' && (!prolog_failed || st.found > 0 || st.killed > 0)) {
            fprintf(stderr, "pdcbb run: node%u: %s\n", k, err);
        }
    }
    /* the drain: node by node, as the Slurm epilog does on each node */
    bool drain_failed = false, drain_complete = false;
    char drained_to[sizeof(((pdcbb_drain_node_stats_t *)0)->drain_dir)] = "";
    for (unsigned k = 0; ran && cfg->drain[0] && total.running == 0 && k < prologs; k++) {
        char err[PDCBB_JOB_ERR_LEN], what[32];
        pdcbb_drain_node_stats_t dst;
        cmd_progress_t prog; /* on a terminal: bytes and objects, rate, time left */
        snprintf(what, sizeof(what), "run: node%u: drain", k);
        cmd_progress_init(&prog, what, !quiet && isatty(STDERR_FILENO));
        rc = pdcbb_job_drain(&jobs[k], keep, prog.on ? cmd_drain_progress : NULL, &prog, &dst, err,
                             sizeof(err));
        /* the child that drained printed the lines: end the open one here */
        if (prog.on && prog.tty)
            fprintf(stderr, "\r%*s\r", 100, "");
        if (rc != PDCBB_OK) {
            drain_failed = true;
            fprintf(stderr, "pdcbb run: node%u: %s (finish it with: pdcbb drain %s/node%u/pdcbb.%"
                            PRIu64 ")\n",
                    k, err, workdir, k, job_id);
        } else if (!quiet && dst.ranks_drained == 0) {
            fprintf(stderr, "pdcbb run: node%u: %s\n", k,
                    err[0] ? err : "nothing of this node to drain");
        } else if (!quiet) {
            fprintf(stderr,
                    "pdcbb run: node%u: drained %.1f MiB, %" PRIu64 " object%s of %u rank%s in "
                    "%.2f s (%.0f MB/s) to %s%s\n",
                    k, (double)dst.bytes / 1048576.0, dst.objects, dst.objects == 1 ? "" : "s",
                    dst.ranks_drained, dst.ranks_drained == 1 ? "" : "s", dst.seconds,
                    dst.seconds > 0 ? (double)dst.bytes / dst.seconds / 1e6 : 0.0, dst.drain_dir,
                    dst.complete ? " (complete)" : "");
        }
        if (rc == PDCBB_OK && dst.drain_dir[0]) {
            snprintf(drained_to, sizeof(drained_to), "%s", dst.drain_dir);
            drain_complete = dst.complete;
        }
        if (rc == PDCBB_OK && dst.dropped_extents > 0) /* said even with --quiet */
            fprintf(stderr, "pdcbb run: node%u: dropped %" PRIu64 " extents of deleted objects "
                            "(%" PRIu64 " bytes a daemon still held: see dropped_objects in the "
                            "manifest)\n",
                    k, dst.dropped_extents, dst.dropped_bytes);
    }
    /* where the data went, in one line, as the Slurm epilog adds it to the job's output */
    if (drain_failed)
        fprintf(stderr, "pdcbb run: job %" PRIu64 ": the drain FAILED (above): node-local data "
                        "kept in %s; see: pdcbb why --job %" PRIu64 " %s\n",
                job_id, workdir, job_id, cfg->drain);
    else if (!quiet && drained_to[0])
        fprintf(stderr, "pdcbb run: job %" PRIu64 ": data drained to %s%s\n", job_id,
                drained_to, drain_complete ? " (complete)" : " (INCOMPLETE)");
    if (total.running > 0) {
        fprintf(stderr, "pdcbb run: %u daemon%s of job %" PRIu64 " still running: "
                        "see above; the work directory %s is kept\n",
                total.running, total.running == 1 ? " is" : "s are", job_id, workdir);
    }

    /* the exit status and the report */
    char what[PATH_MAX + 128];
    if (prolog_failed) {
        status = 1;
        snprintf(what, sizeof(what), "burst buffer not started, %s not run", cmd[0]);
    } else if (script_failed) {
        status = 1;
        snprintf(what, sizeof(what), "the start script failed, %s not run", cmd[0]);
    } else if (mount_failed) {
        status = 1;
        snprintf(what, sizeof(what), "the job's filesystem did not start, %s not run", cmd[0]);
    } else if (interrupted) {
        status = 128 + interrupted;
        snprintf(what, sizeof(what), "interrupted by signal %d (%s) before %s started",
                 interrupted, strsignal(interrupted), cmd[0]);
    } else if (!ran) {
        status = setup_status != 0 ? setup_status : 1;
        snprintf(what, sizeof(what), "%s not run", cmd[0]);
    } else if (exec_failed) {
        status = 127;
        snprintf(what, sizeof(what), "%s could not be executed (status 127)", cmd[0]);
    } else if (WIFSIGNALED(wst)) {
        status = 128 + WTERMSIG(wst);
        snprintf(what, sizeof(what), "%s was killed by signal %d (%s)", cmd[0], WTERMSIG(wst),
                 strsignal(WTERMSIG(wst)));
    } else {
        status = WEXITSTATUS(wst);
        snprintf(what, sizeof(what), "%s exited with status %d", cmd[0], status);
    }
    if ((cleanup_failed || drain_failed || end_script_failed) && status == 0)
        status = 1;

    bool removed = false;
    /* a failed prolog's daemon logs were printed above: the temporary directory, which holds
     * the job's token, goes too (--keep keeps it) */
    if (workdir[0] != '\0' && temp_workdir && !keep && !cleanup_failed && !drain_failed &&
        total.running == 0) {
        bool ok = true;
        for (unsigned k = 0; k < nodes; k++) {
            char err[PDCBB_JOB_ERR_LEN];
            if (pdcbb_job_remove_dir(&jobs[k], err, sizeof(err)) != PDCBB_OK) {
                fprintf(stderr, "pdcbb run: node%u: %s\n", k, err);
                ok = false;
            }
        }
        if (ok) {
            nftw(workdir, cli_rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
            removed = !cli_exists(workdir);
        }
    }
    /* a temporary directory left behind is news even to --quiet */
    if (!quiet || (temp_workdir && !keep && !removed && workdir[0] != '\0')) {
        char stopped[96] = "";
        if (total.killed > 0)
            snprintf(stopped, sizeof(stopped), " (%u killed after ignoring SIGTERM)",
                     total.killed);
        if (workdir[0] == '\0')
            fprintf(stderr, "pdcbb run: %s; %u daemon%s stopped%s\n", what, total.found,
                    total.found == 1 ? "" : "s", stopped);
        else
            fprintf(stderr, "pdcbb run: %s; %u daemon%s stopped%s; job data %s%s\n", what,
                    total.found, total.found == 1 ? "" : "s", stopped,
                    removed ? "removed" : "kept in ",
                    !removed                ? workdir
                    : prolog_failed         ? " (--keep keeps it, with the daemons' logs)"
                                            : "");
    }
out:
    free(cfg);
    free(jobs);
    return status;
}
