/*
 * cmd_verify.c - `pdcbb verify`: every checksum of a drained job (pdcbb_drain_verify): each
 * extent's CRC-32C against the manifest and every KV dump, and the mount's files/ against their
 * list (pdcbb_drain_files_verify); problems on standard output, a summary line, progress on
 * standard error when it is a terminal.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_data.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_files.h"

static void verify_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb verify [--partial] [--owner USER] [--job ID] [--rank R] [-q] DIR\n"
            "\n"
            "Re-read every extent of a drained job's data files and compare its CRC-32C with\n"
            "the manifest, and every KV dump (each block's CRC-32C, the file's CRC-32C, size\n"
            "and record count). Each bad extent or KV dump is printed on standard output,\n"
            "an extent with its object,\n"
            "data file and offset, followed by a summary:\n"
            "  verified N extents, X bytes: OK\n"
            "  verified N extents, X bytes: K bad, M missing\n"
            "An extent is bad when its checksum differs or it cannot be read, and missing\n"
            "when its data file is missing or too short. An extent the manifest marks damaged\n"
            "(its bytes were damaged on the node before the drain) is printed as DAMAGED and\n"
            "counted: the summary then ends with \", K damaged\". Data files are read\n"
            "sequentially in 8 MiB requests; progress is shown on standard error when it is a\n"
            "terminal.\n"
            "\n"
            "A job that used the mount (--pdc mount=yes) also has its files as files/: each\n"
            "entry is compared with the drain's list of them (files.manifest, named with its\n"
            "CRC-32C in the manifest): type, mode, mtime (to the second), size, link target,\n"
            "and every byte of every file against its CRC-32C. Each problem is one line\n"
            "naming the entry: MISSING (listed, not in files/), EXTRA (in files/, not\n"
            "listed), CHANGED (another type, or other bytes, size, mode, mtime or link\n"
            "target, each with what the list says) or DAMAGED (built from damaged extents\n"
            "of its object), for example\n"
            "  CHANGED files/out/a.h5: mode 0600, the list says 0640\n"
            "The summary then has \", F files (Y bytes)\" after the bytes, and counts what\n"
            "is wrong (\"N missing files\", \"N extra files\", \"N changed files\", \"N damaged\n"
            "files\"). Files are checked in a complete drain, without --rank.\n"
            "\n"
            "Options:\n"
            "  -p, --partial   verify an incomplete drain: the ranks drained so far\n"
            "  -r, --rank R    only the extents daemon rank R held\n"
            "  -q, --quiet     print only bad extents and the summary (no progress)\n" CMD_READ_HELP
            "  -h, --help      show this help\n"
            "\n"
            "Exit status: 0 every checksum matches and files/ is as listed (and the drain\n"
            "is complete, or --partial is given); 1 an extent is bad, missing or damaged, an\n"
            "entry of files/ is missing, extra, changed or damaged, the drain is incomplete,\n"
            "or it cannot be read; 2 bad command line.\n");
}

static void verify_line(const char *tag, const char *line, void *arg)
{
    cmd_progress_t *p = arg;
    if (p->on && p->tty && p->printed)
        fprintf(stderr, "\r%60s\r", "");
    printf("%s %s\n", tag, pdcbb_esc(line)); /* names the object: escaped */
    fflush(stdout);
}

static void verify_report(const char *line, void *arg)
{
    verify_line("BAD", line, arg);
}

static void verify_damaged(const char *line, void *arg)
{
    verify_line("DAMAGED", line, arg);
}

static void verify_files_report(const char *tag, const char *line, void *arg)
{
    verify_line(tag, line, arg);
}

/* ", N WHAT files" (or "N WHAT files" first; "file" for one) into the summary when n > 0;
 * returns whether printed. */
static bool verify_count(bool first, uint64_t n, const char *what)
{
    if (n == 0)
        return false;
    printf("%s%" PRIu64 " %s file%s", first ? "" : ", ", n, what, n == 1 ? "" : "s");
    return true;
}

int cli_cmd_verify(int argc, char **argv)
{
    static const struct option opts[] = {
        {"partial", no_argument, NULL, 'p'},
        CMD_READ_LONGOPTS,
        {"rank", required_argument, NULL, 'r'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cmd_read_t rd = {0};
    int bad;
    bool quiet = false;
    long rank = -1;
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":pr:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': rd.partial = true; break;
        case 'r': {
            uint64_t v;
            if (cli_parse_u64("verify", "--rank", optarg, 0, 65534, &v) != 0)
                return CLI_EXIT_USAGE;
            rank = (long)v;
            break;
        }
        case 'q': quiet = true; break;
        case 'h': verify_usage(stdout); return 0;
        default:
            if ((bad = cmd_read_opt("verify", c, optarg, argv, &rd)) != 0)
                return bad;
            break;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "pdcbb verify: %s (see pdcbb verify --help)\n",
                optind >= argc ? "missing the drain directory DIR" : "too many arguments");
        return CLI_EXIT_USAGE;
    }
    pdcbb_drain_t *m = cmd_open("verify", argv[optind], &rd);
    if (m == NULL)
        return 1;
    if (rank >= 0 && (uint32_t)rank >= m->nservers) {
        fprintf(stderr, "pdcbb verify: --rank %ld: the job has ranks 0 to %" PRIu32 "\n", rank,
                m->nservers - 1);
        pdcbb_drain_free(m);
        return CLI_EXIT_USAGE;
    }
    cmd_progress_t prog;
    cmd_progress_init(&prog, "verify", !quiet && isatty(STDERR_FILENO));
    pdcbb_drain_verify_stats_t st;
    char err[PDCBB_DRAIN_ERR_LEN] = "";
    pdcbb_err_t rc = pdcbb_drain_verify(m, (int)rank, &st, verify_report, cmd_drain_progress, &prog,
                                        err, sizeof(err));
    cmd_progress(&prog, st.bytes, st.bytes, true);
    uint64_t damaged = pdcbb_drain_damaged_extents(m, (int)rank, verify_damaged, &prog);
    /* the mount's files: listed only when the drain completed; not a rank's */
    pdcbb_drain_files_stats_t fst = {0};
    pdcbb_err_t frc = PDCBB_OK;
    char ferr[PDCBB_DRAIN_ERR_LEN] = "";
    if (m->complete && rank < 0 && (rc == PDCBB_OK || rc == PDCBB_ERR_IO)) {
        cmd_progress_init(&prog, "verify", !quiet && isatty(STDERR_FILENO));
        frc = pdcbb_drain_files_verify(m, &fst, verify_files_report, cmd_drain_progress, &prog,
                                       ferr, sizeof(ferr));
        cmd_progress(&prog, fst.bytes, fst.bytes, true);
    }
    bool files_bad = fst.missing || fst.extra || fst.changed || fst.damaged;
    int status = 0;
    if (rc != PDCBB_OK && rc != PDCBB_ERR_IO) {
        fprintf(stderr, "pdcbb verify: %s\n", err[0] ? pdcbb_esc(err) : pdcbb_strerror(rc));
        status = 1;
    } else if (frc != PDCBB_OK && frc != PDCBB_ERR_IO) {
        fprintf(stderr, "pdcbb verify: %s\n", ferr[0] ? pdcbb_esc(ferr) : pdcbb_strerror(frc));
        status = 1;
    } else {
        printf("verified %" PRIu64 " extents, %" PRIu64 " bytes", st.extents, st.bytes);
        if (st.kv_dumps > 0)
            printf(", %" PRIu64 " KV dumps (%" PRIu64 " records)", st.kv_dumps, st.kv_records);
        if (fst.entries > 0)
            printf(", %" PRIu64 " file%s (%" PRIu64 " bytes)", fst.files, fst.files == 1 ? "" : "s",
                   fst.bytes);
        bool data_bad = st.bad || st.missing || st.kv_bad;
        if (!data_bad && !files_bad && damaged == 0) {
            printf(": OK");
        } else {
            printf(": ");
            bool first = true;
            if (data_bad && st.kv_dumps > 0)
                printf("%" PRIu64 " bad, %" PRIu64 " missing, %" PRIu64 " bad KV dumps", st.bad,
                       st.missing, st.kv_bad);
            else if (data_bad)
                printf("%" PRIu64 " bad, %" PRIu64 " missing", st.bad, st.missing);
            first = !data_bad;
            first &= !verify_count(first, fst.missing, "missing");
            first &= !verify_count(first, fst.extra, "extra");
            first &= !verify_count(first, fst.changed, "changed");
            first &= !verify_count(first, fst.damaged, "damaged");
            if (first)
                printf("%" PRIu64 " damaged", damaged);
        }
        if (!m->complete)
            printf(" (INCOMPLETE drain: %" PRIu32 " of %" PRIu32 " ranks)", m->nranks,
                   m->nservers);
        if (damaged > 0 && (data_bad || files_bad))
            printf(", %" PRIu64 " damaged", damaged);
        printf("\n");
        status = (data_bad || files_bad || damaged) ? 1 : 0;
    }
    pdcbb_drain_free(m);
    if (fflush(stdout) != 0)
        status = 1;
    return status;
}
