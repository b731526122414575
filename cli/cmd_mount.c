/*
 * cmd_mount.c - `pdcbb mount DRAIN DIR`: a drained job's files (DRAIN/files, listed with their
 * checksums in DRAIN/files.manifest) read-only at DIR, after the job and without daemons. The
 * filesystem is pdcbb_mount_drain (mount/mount_drain.c), found as `pdcbb run` finds pdcbb_mount:
 * $PDCBB_MOUNT_DRAIN_PATH, else beside this program, else where the build put it. This file
 * checks the command line and hands it over (exec); the program checks the drain (complete,
 * trusted, yours, its list matching its manifest) before it mounts anything.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_data.h"

static void mount_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb mount [--foreground] [--log FILE] [--owner USER] [--job ID] DRAIN DIR\n"
            "\n"
            "Show the files of a drained job read-only at directory DIR, after the job and\n"
            "without its daemons: the tree the job wrote to its mount (--pdc mount=yes), as\n"
            "the drain kept it in DRAIN/files. DRAIN is the job's drain directory\n"
            "(DEST/pdcbb.JOBID) or a destination that holds exactly one of them. It must be\n"
            "complete and pass the checks every reader makes (nobody but its owner can have\n"
            "changed it; it is yours, or --owner's; it is the job it claims to be); otherwise\n"
            "nothing is mounted and the reason is printed.\n"
            "\n"
            "What the mount shows is the drain's checksummed list of its files: names, types,\n"
            "modes, sizes, modification times and link targets come from the list, so nothing\n"
            "added to DRAIN/files shows. Every byte of a file is checked against the list's\n"
            "CRC-32C before any of it is read (at its first open, and again when the file in\n"
            "the drain changed since): a file that does not match, or that the drain built\n"
            "from damaged extents, fails to open with EIO (\"Input/output error\") and a log\n"
            "line names it. Nothing can be changed: writes, new files, renames, removals,\n"
            "chmod and touch fail with EROFS (\"Read-only file system\"). Only you can enter\n"
            "the mount.\n"
            "\n"
            "The command returns once the mount is ready; the filesystem keeps running in the\n"
            "background until it is unmounted with\n"
            "  fusermount3 -u DIR\n"
            "\n"
            "Options:\n"
            "  -f, --foreground  stay in the foreground until DIR is unmounted (log lines on\n"
            "                  standard error; Ctrl-C unmounts)\n"
            "  -L, --log FILE  append log lines (each file refused, with why) to FILE; without\n"
            "                  it they go to syslog in the background\n" CMD_READ_HELP
            "  -h, --help      show this help\n"
            "\n"
            "Environment: PDCBB_MOUNT_DRAIN_PATH, the pdcbb_mount_drain program to run (default:\n"
            "the one beside pdcbb).\n"
            "\n"
            "Exit status: 0 mounted (with --foreground: mounted, then unmounted); 1 the drain\n"
            "is incomplete, untrusted, not yours, has no files or a damaged list of them, or\n"
            "DIR cannot be mounted on; 2 bad command line.\n");
}

/* Where pdcbb_mount_drain is: $PDCBB_MOUNT_DRAIN_PATH, else beside us (installed: bin/; built:
 * the build tree's mount/), else where the build put it. "" if none. */
static void mount_find(char *out, size_t len)
{
    const char *env = getenv("PDCBB_MOUNT_DRAIN_PATH");
    out[0] = '\0';
    if (env != NULL && env[0] != '\0') {
        snprintf(out, len, "%s", env);
        return;
    }
    static const char *const rel[] = {"/pdcbb_mount_drain", "/../mount/pdcbb_mount_drain"};
    if (cli_find_beside(rel, sizeof(rel) / sizeof(rel[0]), out, len))
        return;
#ifdef PDCBB_BUILD_MOUNT_DRAIN_PATH
    if (access(PDCBB_BUILD_MOUNT_DRAIN_PATH, X_OK) == 0)
        snprintf(out, len, "%s", PDCBB_BUILD_MOUNT_DRAIN_PATH);
#endif
}

int cli_cmd_mount(int argc, char **argv)
{
    static const struct option opts[] = {
        {"foreground", no_argument, NULL, 'f'},
        {"log", required_argument, NULL, 'L'},
        CMD_READ_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cmd_read_t rd = {0};
    const char *log = NULL, *job = NULL;
    bool fg = false;
    int c, bad;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":fL:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            fg = true;
            break;
        case 'L':
            log = optarg;
            break;
        case 'h':
            mount_usage(stdout);
            return 0;
        default:
            if (c == CMD_OPT_JOB)
                job = optarg;
            if ((bad = cmd_read_opt("mount", c, optarg, argv, &rd)) != 0)
                return bad;
            break;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "pdcbb mount: %s (see pdcbb mount --help)\n",
                optind >= argc       ? "missing the drain directory DRAIN and the directory DIR"
                : argc - optind == 1 ? "missing the directory DIR to mount on"
                                     : "too many arguments");
        return CLI_EXIT_USAGE;
    }
    char prog[PATH_MAX];
    mount_find(prog, sizeof(prog));
    if (prog[0] == '\0') {
        fprintf(stderr, "pdcbb mount: cannot find pdcbb_mount_drain beside pdcbb (set "
                        "PDCBB_MOUNT_DRAIN_PATH)\n");
        return 1;
    }
    const char *args[16];
    int n = 0;
    args[n++] = "pdcbb_mount_drain";
    if (fg)
        args[n++] = "--foreground";
    if (log != NULL) {
        args[n++] = "--log";
        args[n++] = log;
    }
    if (rd.owner != NULL) {
        args[n++] = "--owner";
        args[n++] = rd.owner;
    }
    if (job != NULL) {
        args[n++] = "--job";
        args[n++] = job;
    }
    args[n++] = "--";
    args[n++] = argv[optind];
    args[n++] = argv[optind + 1];
    args[n] = NULL;
    fflush(stdout);
    execv(prog, (char *const *)args);
    fprintf(stderr, "pdcbb mount: cannot execute %s: %s\n", prog, strerror(errno));
    return 1;
}
