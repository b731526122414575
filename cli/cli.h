/*
 * cli.h - subcommands of the pdcbb command, each in its own file. A handler gets argv[0] = the
 * subcommand's name and returns the process exit status (0 ok, 1 failure, 2 usage error).
 */
#ifndef PDCBB_CLI_H
#define PDCBB_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_name.h" /* pdcbb_esc: every name and untrusted string printed */

/* Exit status of a bad command line. */
#define CLI_EXIT_USAGE 2

/* pdcbb.c: helpers shared by the subcommands */
/* Parse val, the value of option opt of command cmd, as an integer from min to max into *out;
 * returns 0, or -1 after printing "pdcbb CMD: bad value for OPT: 'VAL' (expected ...)". */
int cli_parse_u64(const char *cmd, const char *opt, const char *val, uint64_t min, uint64_t max,
                  uint64_t *out);
/* Print what getopt_long (opterr = 0, optstring starting with ':') refused as "pdcbb CMD: ...";
 * c is what it returned. Returns CLI_EXIT_USAGE. */
int cli_bad_option(const char *cmd, int c, char **argv);
/* CLOCK_MONOTONIC in seconds. */
double cli_now(void);
/* The first of the paths rel (relative to the directory of this program, each starting with
 * '/') that is an executable, resolved, into out; 1 if found, else 0. (How `pdcbb run` finds
 * pdc_bbd and pdcbb_mount, and `pdcbb mount` pdcbb_mount_drain.) */
int cli_find_beside(const char *const *rel, size_t nrel, char *out, size_t len);

/* cmd_run.c: `pdcbb run`, a local job without Slurm */
int cli_cmd_run(int argc, char **argv);
/* cmd_status.c: `pdcbb status`, a job's daemons from its job directories */
int cli_cmd_status(int argc, char **argv);
/* cmd_admin.c: `pdcbb admin stranded` */
int cli_cmd_admin(int argc, char **argv);
/* cmd_drain.c: `pdcbb drain`, a node-local job directory by hand */
int cli_cmd_drain(int argc, char **argv);
/* cmd_why.c: `pdcbb why`, where a job's drain went and why it failed */
int cli_cmd_why(int argc, char **argv);
/* reading a drain directory (helpers in cmd_data.c): cmd_ls.c, cmd_get.c, cmd_export.c,
 * cmd_verify.c */
int cli_cmd_ls(int argc, char **argv);
int cli_cmd_get(int argc, char **argv);
int cli_cmd_export(int argc, char **argv);
int cli_cmd_verify(int argc, char **argv);
/* cmd_kv.c: `pdcbb kv ls|keys|get|export`, the KV objects of a drained job */
int cli_cmd_kv(int argc, char **argv);
/* cmd_mount.c: `pdcbb mount DRAIN DIR`, a drained job's files read-only (pdcbb_mount_drain) */
int cli_cmd_mount(int argc, char **argv);

/* cmd_stats.c: `pdcbb stats`, the live counters of a running job's daemons */
int cli_cmd_stats(int argc, char **argv);
/* cmd_bcast.c: `pdcbb bcast SRC DEST`, a file to every node of the running job */
int cli_cmd_bcast(int argc, char **argv);

#endif
