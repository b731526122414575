/*
 * pdcbb.c - the `pdcbb` command, the user-facing front of pdcbb: the table of subcommands, the
 * helpers they share (option errors, numbers, the clock; declared in cli.h) and main.
 *
 * One table (cli_cmds) lists the subcommands: name, handler, one-line help. Each handler lives
 * in a file of its own (cmd_<name>.c, see cli.h), parses its own options with getopt_long,
 * answers --help, and returns the process exit status (CLI_EXIT_USAGE for a bad command line):
 *   run     a local job on one machine without Slurm (cmd_run.c);
 *   status  the daemons of a job, from the files in its job directories (cmd_status.c);
 *   stats   the live counters of a running job's daemons (cmd_stats.c);
 *   bcast   a copy of a file on every node of the running job (cmd_bcast.c);
 *   drain, why, admin; ls, get, export, verify, kv and mount, which read a drained job.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#ifndef PDCBB_VERSION
#define PDCBB_VERSION "0.1.0"
#endif

typedef struct cli_cmd {
    const char *name;
    int (*handler)(int argc, char **argv); /* argv[0] is the subcommand's name */
    const char *help;                      /* one line for `pdcbb --help` */
} cli_cmd_t;

static const cli_cmd_t cli_cmds[] = {
    {"run", cli_cmd_run, "run a command with a burst buffer on this machine (no Slurm)"},
    {"status", cli_cmd_status, "show the burst-buffer daemons of a job and whether they run"},
    {"stats", cli_cmd_stats, "show the live counters of every daemon of a running job"},
    {"bcast", cli_cmd_bcast, "copy a file to every node of the running job"},
    {"drain", cli_cmd_drain, "drain a node's job directory to its destination (or finish one)"},
    {"why", cli_cmd_why, "say where a job's drained data is, and why its drain failed"},
    {"ls", cli_cmd_ls, "list the containers, objects and files of a drained job"},
    {"get", cli_cmd_get, "write an object (or a region of it) of a drained job to stdout"},
    {"export", cli_cmd_export, "write a drained job as .raw or .npy files or one HDF5 file"},
    {"verify", cli_cmd_verify, "check every checksum of a drained job"},
    {"mount", cli_cmd_mount, "show a drained job's files read-only at a directory (FUSE)"},
    {"kv", cli_cmd_kv, "list, get and export the KV objects of a drained job"},
    {"admin", cli_cmd_admin, "list (and drain or remove) job directories left on this node"},
};
#define CLI_NCMDS (sizeof(cli_cmds) / sizeof(cli_cmds[0]))

/* ---------------------------------------------------------------------------------------- */
/* Helpers shared by the subcommands (cli.h)                                                  */
/* ---------------------------------------------------------------------------------------- */

/* "pdcbb run: bad value for --nodes: 'x' (expected an integer from 1 to 256)" */
int cli_parse_u64(const char *cmd, const char *opt, const char *val, uint64_t min, uint64_t max,
                  uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = 0;
    bool ok = val[0] >= '0' && val[0] <= '9';
    if (ok) {
        v = strtoull(val, &end, 10);
        ok = errno == 0 && *end == '\0' && v >= min && v <= max;
    }
    if (!ok) {
        fprintf(stderr, "pdcbb %s: bad value for %s: '%s' (expected an integer from %" PRIu64
                        " to %" PRIu64 ")\n",
                cmd, opt, val, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

/*
 * Report what getopt_long (with opterr = 0 and a leading ':' in optstring) refused. Returns
 * CLI_EXIT_USAGE.
 */
int cli_bad_option(const char *cmd, int c, char **argv)
{
    const char *arg = argv[optind - 1];
    /* A short option may be bundled ("-qt"): name it alone, not the word it was found in. */
    char shortopt[3] = {'-', (char)optopt, '\0'};
    if (c == ':')
        fprintf(stderr, "pdcbb %s: option '%s' needs a value (see pdcbb %s --help)\n", cmd,
                optopt != 0 && strncmp(arg, "--", 2) != 0 ? shortopt : arg, cmd);
    else if (optopt != 0 && strncmp(arg, "--", 2) != 0)
        fprintf(stderr, "pdcbb %s: unknown option '-%c' (see pdcbb %s --help)\n", cmd, optopt,
                cmd);
    else
        fprintf(stderr, "pdcbb %s: unknown option '%s' (see pdcbb %s --help)\n", cmd, arg, cmd);
    return CLI_EXIT_USAGE;
}

int cli_find_beside(const char *const *rel, size_t nrel, char *out, size_t len)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *dir = dirname(buf);
    for (size_t i = 0; i < nrel; i++) {
        char cand[PATH_MAX + 32], real[PATH_MAX];
        snprintf(cand, sizeof(cand), "%s%s", dir, rel[i]);
        if (access(cand, X_OK) == 0 && realpath(cand, real) != NULL) {
            snprintf(out, len, "%s", real);
            return 1;
        }
    }
    return 0;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------------------------------- */
/* main                                                                                       */
/* ---------------------------------------------------------------------------------------- */

static void main_usage(FILE *out)
{
    fprintf(out, "Usage: pdcbb COMMAND [OPTIONS] [ARGS...]\n"
                 "       pdcbb --help | --version\n"
                 "\n"
                 "pdcbb is a job-scoped burst buffer. Commands:\n");
    for (size_t i = 0; i < CLI_NCMDS; i++)
        fprintf(out, "  %-10s %s\n", cli_cmds[i].name, cli_cmds[i].help);
    fprintf(out, "\n`pdcbb COMMAND --help` describes a command's options.\n");
}

static const cli_cmd_t *main_find(const char *name)
{
    for (size_t i = 0; i < CLI_NCMDS; i++)
        if (strcmp(cli_cmds[i].name, name) == 0)
            return &cli_cmds[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *a = argv[1];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        main_usage(stdout);
        return 0;
    }
    if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
        printf("pdcbb %s\n", PDCBB_VERSION);
        return 0;
    }
    if (strcmp(a, "help") == 0) {
        if (argc < 3) {
            main_usage(stdout);
            return 0;
        }
        const cli_cmd_t *cmd = main_find(argv[2]);
        if (cmd == NULL) {
            fprintf(stderr, "pdcbb: unknown command '%s' (see pdcbb --help)\n", argv[2]);
            return CLI_EXIT_USAGE;
        }
        char *hargv[] = {argv[2], "--help", NULL};
        return cmd->handler(2, hargv);
    }
    if (a[0] == '-') {
        fprintf(stderr, "pdcbb: unknown option '%s' (see pdcbb --help)\n", a);
        return CLI_EXIT_USAGE;
    }
    const cli_cmd_t *cmd = main_find(a);
    if (cmd == NULL) {
        fprintf(stderr, "pdcbb: unknown command '%s' (see pdcbb --help)\n", a);
        return CLI_EXIT_USAGE;
    }
    return cmd->handler(argc - 1, argv + 1);
}
