/*
 * cmd_data.h - helpers of the commands that read a drain directory (cli/cmd_data.c), shared by
 * those commands (cmd_ls.c, cmd_get.c, cmd_export.c, cmd_verify.c) and the writers of export
 * formats that live in files of their own (export.h).
 */
#ifndef PDCBB_CMD_DATA_H
#define PDCBB_CMD_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pdcbb_drain.h"

/* Object data is read in slabs of at most this many bytes (one element row when larger). */
#define CMD_SLAB_BYTES ((uint64_t)64 << 20)

/* What every command that reads a drain is told about which drain to read. */
typedef struct cmd_read {
    bool partial;      /* --partial: accept an incomplete drain, read damaged extents as zeros */
    const char *owner; /* --owner USER: whose drain is expected (NULL: the caller's) */
    uint64_t job;      /* --job ID: DIR is a destination, read job ID's drain in it (0: DIR is
                        * the drain) */
} cmd_read_t;

/* Long-only option codes of --owner and --job, their getopt_long table entries, and their help
 * lines for a command's usage text. */
#define CMD_OPT_OWNER 0x100
#define CMD_OPT_JOB 0x101
#define CMD_READ_LONGOPTS                                                                      \
    {"owner", required_argument, NULL, CMD_OPT_OWNER}, {"job", required_argument, NULL, CMD_OPT_JOB}
#define CMD_READ_HELP                                                                          \
    "      --owner USER    read USER's drain (a name or a uid); without it only your own\n"      \
    "                      drain is read, and someone else's is refused\n"                      \
    "      --job ID        DIR is a drain destination: read the drain of job ID in it,\n"        \
    "                      whatever name it got (the newest, if the id was used again)\n"
/* The default case of a reader's option loop: take c if it is --owner or --job (arg its
 * value) into r and return 0; else return the exit status after printing why (a bad value as
 * "pdcbb CMD: ...", any other option through cli_bad_option with argv). */
int cmd_read_opt(const char *cmd, int c, const char *arg, char **argv, cmd_read_t *r);

/* Open the drain dir for command cmd ("ls", a string that outlives the drain) as r says (r->job:
 * dir is a destination). Refuses a drain someone else could have changed, and one that is not
 * the expected user's or not the job it claims to be (pdcbb_drain_reader_check). With
 * r->partial, damaged extents read as zeros, each named once on standard error
 * (pdcbb_drain_skip_damaged). Returns it (pdcbb_drain_free), or NULL after printing why (as
 * "pdcbb CMD: ..."). */
pdcbb_drain_t *cmd_open(const char *cmd, const char *dir, const cmd_read_t *r);
/* Write all of buf to fd (retrying short writes and EINTR); 0, or -1 with errno. */
int cmd_write_all(int fd, const void *buf, size_t len);
/* dims (ndim of them) as "100x2048" ("unlimited" for PDCBB_DIM_UNLIMITED, "-" when none). */
void cmd_dims(const uint64_t *dims, uint32_t ndim, char *out, size_t len);

/* Progress of a long command on standard error. */
typedef struct cmd_progress {
    const char *cmd;
    bool on, tty;
    double last, start, interval;
    int printed;
    uint64_t done_objects, total_objects; /* shown when total_objects > 0 */
    uint64_t last_done, last_total;       /* of the line printed last */
} cmd_progress_t;

/* Start progress reporting for command cmd ("export"); on: report at all. */
void cmd_progress_init(cmd_progress_t *p, const char *cmd, bool on);
/* A line at most once a second on a terminal (every 10 s otherwise; PDCBB_PROGRESS_INTERVAL
 * seconds when set): percent, bytes (and objects) done of the total, the rate and, before the
 * end, the time left; final: the last line (printed only when an earlier one was). */
void cmd_progress(cmd_progress_t *p, uint64_t done, uint64_t total, bool final);
/* A pdcbb_drain_progress_fn for cmd_progress (arg: the cmd_progress_t). */
void cmd_drain_progress(const pdcbb_drain_progress_t *d, void *arg);
/* After a drain reported through cmd_drain_progress: its final line (ok) or the end of the
 * line left open on a terminal (failed: the error follows on its own line). */
void cmd_drain_progress_end(cmd_progress_t *p, bool ok, uint64_t bytes, uint64_t objects);
/* b as "12.3 MiB". */
void cmd_human(uint64_t b, char *out, size_t len);

/*
 * Read box of o slab by slab (each at most CMD_SLAB_BYTES, or one element row when that is
 * larger) and hand each slab, in row-major order, to fn with the box it covers (in o's
 * coordinates). done is advanced by each slab's bytes and reported to prog (may be NULL)
 * against total. Every extent is checked against its CRC-32C before its bytes reach fn
 * (pdcbb_drain_read_box): a damaged one stops the read (unless --partial). Returns 0, or 1
 * after printing why (as "pdcbb CMD: ...", naming the object, and the extent and its bytes
 * when one is damaged); the caller then removes what it wrote.
 */
typedef int (*cmd_slab_fn)(const void *data, size_t len, const pdcbb_box_t *slab, void *arg);
int cmd_read_slabs(const char *cmd, pdcbb_drain_t *m, const pdcbb_drain_object_t *o,
                   const pdcbb_box_t *box, cmd_slab_fn fn, void *arg, cmd_progress_t *prog,
                   uint64_t *done, uint64_t total);

#endif
