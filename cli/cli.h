/*
 * cli.h - subcommands of the pdcbb command, each in its own file. A handler gets argv[0] = the
 * subcommand's name and returns the process exit status (0 ok, 1 failure, 2 usage error).
 */
#ifndef PDCBB_CLI_H
#define PDCBB_CLI_H

/* cmd_admin.c: `pdcbb admin stranded` */
int cli_cmd_admin(int argc, char **argv);
/* cmd_drain.c */
int cli_cmd_drain(int argc, char **argv);
int cli_cmd_why(int argc, char **argv);
/* cmd_data.c: reading a drain directory */
int cli_cmd_ls(int argc, char **argv);
int cli_cmd_get(int argc, char **argv);
int cli_cmd_export(int argc, char **argv);
int cli_cmd_verify(int argc, char **argv);
/* cmd_kv.c: `pdcbb kv ls|keys|get|export`, the KV objects of a drained job */
int cli_cmd_kv(int argc, char **argv);

/* cmd_stats.c: `pdcbb stats`, the live counters of a running job's daemons */
int cli_cmd_stats(int argc, char **argv);
/* cmd_bcast.c: `pdcbb bcast SRC DEST`, a file to every node of the running job */
int cli_cmd_bcast(int argc, char **argv);

#endif
