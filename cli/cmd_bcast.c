/*
 * cmd_bcast.c - `pdcbb bcast SRC DEST`: put a copy of a file on every node of the running job
 * (ZOID's file broadcast). This process reads SRC once; the job's daemons pass it down a tree,
 * each writing its node's copy (libpdc's PDCbb_bcast, bbd/bbd_bcast.c). The job is found as
 * `pdcbb stats` finds it: $PDCBB_JOB_DIR, set in every step and job script, or --job-dir.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "pdc.h"

#define BCAST_EXIT_USAGE 2
/* Files from this size on get progress lines on stderr (unless --quiet). */
#define BCAST_PROGRESS_MIN ((uint64_t)64 << 20)

static void bcast_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb bcast [options] SRC DEST\n"
            "\n"
            "Copy the file SRC to every node of the running job, as DEST. SRC is read once, by\n"
            "this process (with your rights), and streamed through the job's burst-buffer\n"
            "daemons in a tree: each node writes its copy while passing the data on. Every copy\n"
            "is checked (CRC-32C, read back from the node's file), gets SRC's permission bits,\n"
            "and appears atomically (renamed into place); on any failure no node keeps a\n"
            "partial copy and the failed nodes are named. Single files only (no directories).\n"
            "\n"
            "DEST is relative to each node's job directory ($PDCBB_JOB_DIR there; no '..'), or\n"
            "an absolute node-local path, written with your rights. In DEST, %%n is the node's\n"
            "name, %%r its daemon's rank and %%%% a percent sign. A DEST that is a directory or\n"
            "ends with '/' receives SRC's base name. Missing directories of a relative DEST are\n"
            "created.\n"
            "\n"
            "Options:\n"
            "  -c, --chunk SIZE    bytes per message (suffix K, M or G; 4K to 256M; default 4M)\n"
            "  -f, --fanout K      children per node in the tree (1 to 64; default 2)\n"
            "  -J, --job-dir DIR   the job directory on this node (default: $PDCBB_JOB_DIR)\n"
            "  -v, --verbose       print each node's copy: daemon rank, node, path\n"
            "  -q, --quiet         print nothing on success (no progress, no summary)\n"
            "  -h, --help          show this help\n"
            "\n"
            "Progress goes to stderr for files of 64 MiB and more. Exit status: 0 every node has\n"
            "its copy; 1 no running job, SRC unreadable, or a node failed; 2 a usage error.\n");
}

typedef struct bcast_prog {
    double start, last;
} bcast_prog_t;

static void bcast_progress(uint64_t done, uint64_t total, void *arg)
{
    bcast_prog_t *p = arg;
    double now = cli_now();
    if (done < total && now - p->last < 1.0)
        return;
    p->last = now;
    double secs = now - p->start;
    fprintf(stderr, "pdcbb bcast: %3.0f%% %.1f of %.1f MiB, %.1f MB/s\n",
            100.0 * (double)done / (double)total, (double)done / 1048576.0,
            (double)total / 1048576.0, secs > 0 ? (double)done / 1e6 / secs : 0.0);
}

static int bcast_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (s[0] < '0' || s[0] > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (*end != '\0' || errno != 0 || v > (1ull << 40))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

int cli_cmd_bcast(int argc, char **argv)
{
    static const struct option opts[] = {
        {"chunk", required_argument, NULL, 'c'},   {"fanout", required_argument, NULL, 'f'},
        {"job-dir", required_argument, NULL, 'J'}, {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},         {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t chunk = 4u << 20;
    unsigned long fanout = 2;
    bool verbose = false, quiet = false;
    const char *job_dir = NULL;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":c:f:J:vqh", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            if (bcast_parse_size(optarg, &chunk) != 0 || chunk < (4u << 10) ||
                chunk > (256u << 20)) {
                fprintf(stderr, "pdcbb bcast: bad value for --chunk: '%s' (expected 4K to "
                                "256M)\n", optarg);
                return BCAST_EXIT_USAGE;
            }
            break;
        case 'f': {
            char *end;
            errno = 0;
            fanout = strtoul(optarg, &end, 10);
            if (optarg[0] < '0' || optarg[0] > '9' || *end || errno || fanout < 1 ||
                fanout > 64) {
                fprintf(stderr, "pdcbb bcast: bad value for --fanout: '%s' (expected 1 to "
                                "64)\n", optarg);
                return BCAST_EXIT_USAGE;
            }
            break;
        }
        case 'J':
            job_dir = optarg;
            break;
        case 'v':
            verbose = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            bcast_usage(stdout);
            return 0;
        default:
            return cli_bad_option("bcast", c, argv);
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "pdcbb bcast: expected SRC and DEST (see pdcbb bcast --help)\n");
        return BCAST_EXIT_USAGE;
    }
    const char *src = argv[optind], *dest = argv[optind + 1];
    if (dest[0] == '\0') {
        fprintf(stderr, "pdcbb bcast: DEST is empty\n");
        return BCAST_EXIT_USAGE;
    }
    if (job_dir) {
        setenv("PDCBB_JOB_DIR", job_dir, 1);
    } else if ((job_dir = getenv("PDCBB_JOB_DIR")) == NULL || job_dir[0] == '\0') {
        fprintf(stderr, "pdcbb bcast: no running job: run inside the job ($PDCBB_JOB_DIR) or "
                        "give its job directory (--job-dir)\n");
        return 1;
    }
    struct stat st;
    if (stat(src, &st) != 0) {
        fprintf(stderr, "pdcbb bcast: cannot read %s: %s\n", src, strerror(errno));
        return 1;
    }
    unsetenv("PDCBB_DRAINED_DIR"); /* a drained job has no nodes to send to */
    pdcid_t pdc = PDCinit("pdcbb-bcast");
    if (pdc == 0) {
        fprintf(stderr, "pdcbb bcast: no running job at %s: %s\n", job_dir,
                PDCbb_last_error_message());
        return 1;
    }
    bcast_prog_t prog = {.start = cli_now()};
    prog.last = prog.start;
    bool show = !quiet && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= BCAST_PROGRESS_MIN;
    uint32_t crc = 0;
    char *report = NULL;
    int status = 0;
    if (PDCbb_bcast(src, dest, chunk, (unsigned)fanout, show ? bcast_progress : NULL, &prog,
                    &crc, &report) != SUCCEED) {
        fprintf(stderr, "pdcbb bcast: %s -> %s: %s\n", src, dest, PDCbb_last_error_message());
        status = 1;
    } else {
        double secs = cli_now() - prog.start;
        unsigned nodes = 0;
        for (const char *s = report; s && *s; s++)
            nodes += *s == '\n';
        if (verbose && report)
            fputs(report, stdout);
        if (!quiet)
            printf("pdcbb bcast: %s -> %s on %u node%s: %jd bytes, CRC-32C %08x, %.2f s, "
                   "%.1f MB/s\n",
                   src, dest, nodes, nodes == 1 ? "" : "s", (intmax_t)st.st_size, crc, secs,
                   secs > 0 ? (double)st.st_size / 1e6 / secs : 0.0);
    }
    free(report);
    PDCclose(pdc);
    return status;
}
