/*
 * pdcbb_jobdir.h - the node-local job directory: file names, the auth token and the daemons'
 * endpoint records. Shared by the prolog/epilog (jobctl), the daemon, the client and the CLI so
 * that the layout is defined in one place:
 *
 *     <job dir>/token            the job's auth token, 64 hex digits, mode 0600
 *     <job dir>/config.yaml      the job's resolved configuration (written by the prolog)
 *     <job dir>/job.info         who this node is in the job (pdcbb_jobinfo_t, by the prolog)
 *     <job dir>/prolog.error     why the prolog could not start the burst buffer (if it failed)
 *     <job dir>/bbd-R.endpoint   endpoint record of daemon rank R (written atomically)
 *     <job dir>/bbd-R.pid        its pid
 *     <job dir>/bbd-R.log        its log
 *     <job dir>/script-P.log     output of the user script's phase P, start or end
 *     <job dir>/script.error     why the start script failed (pdcbb_job_script.h)
 *     <job dir>/bbd-R/           its LMDB environment and data files
 *     <job dir>/job.table        every daemon's record with its token, once a daemon of this
 *                                node found them all (the JOB_TABLE text; 0600)
 *
 * A job of several nodes also has a rendezvous directory on a filesystem every node sees
 * (site key rendezvous_dir), where the daemons of all nodes learn each other:
 *
 *     <rendezvous>/bbd-R.record  daemon R's endpoint record with its node's token (0600)
 *     <rendezvous>/node-I.error  why node I's prolog could not start its daemons
 *     <rendezvous>/node-I.script.error  why node I's start script failed (pdcbb_job_script.h)
 *
 * All functions are thread-safe.
 */
#ifndef PDCBB_JOBDIR_H
#define PDCBB_JOBDIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Node-local space a daemon's LMDB store (<job dir>/bbd-R/) keeps allocated beyond what its
 * metadata uses, on top of the job's capacity: with MDB_WRITEMAP a store into a page the
 * filesystem cannot allocate would be SIGBUS, so the file is kept allocated at least
 * RESERVE_MIN ahead and extended by RESERVE_STEP (store/pdcbb_store_lmdb.c). The prolog counts
 * PDCBB_STORE_AHEAD per daemon when it checks the free space.
 */
#define PDCBB_STORE_RESERVE_MIN ((uint64_t)40 << 20)
#define PDCBB_STORE_RESERVE_STEP ((uint64_t)64 << 20)
#define PDCBB_STORE_AHEAD (PDCBB_STORE_RESERVE_MIN + PDCBB_STORE_RESERVE_STEP)
/* LMDB map space beyond lmdb_map_size that only removals may use, so that a full metadata
 * store never blocks a delete (store/pdcbb_store_lmdb.c). */
#define PDCBB_STORE_REMOVE_RESERVE ((uint64_t)64 << 20)

#include "pdcbb_error.h"
#include "pdcbb_proto.h"

#define PDCBB_NODE_NAME_MAX 256
#define PDCBB_ENDPOINT_VERSION 1

/* One daemon as clients need to know it. */
typedef struct pdcbb_endpoint {
    uint64_t job_id;
    uint32_t rank;
    uint32_t nservers;
    char node[PDCBB_NODE_NAME_MAX];
    char ip[64];
    uint16_t port;
    pid_t pid;
    uint8_t token[PDCBB_TOKEN_LEN]; /* not part of the record file: read from the token file */
} pdcbb_endpoint_t;

/* A job's identity as one node's prolog knows it: read back by the drain after the daemons
 * are gone. instance is a random id shared by all nodes of one job (32 hex digits; "" if the
 * launcher gave none), so that a job id used twice cannot mix two jobs' drains. */
#define PDCBB_INSTANCE_LEN 32
#define PDCBB_CLUSTER_NAME_MAX 64

/* 1 when name is a cluster name job.info and a drain IDENTITY can hold: 1-63 characters
 * [A-Za-z0-9._-], the first a letter or digit (Slurm's ClusterName is lower case letters,
 * digits and _-). */
int pdcbb_cluster_name_ok(const char *name);
typedef struct pdcbb_jobinfo {
    uint64_t job_id;
    char instance[PDCBB_INSTANCE_LEN + 1];
    char cluster[PDCBB_CLUSTER_NAME_MAX]; /* the Slurm cluster's name, "local" for pdcbb run
                                           * ("" if unknown) */
    char node[PDCBB_NODE_NAME_MAX];
    uint32_t node_index;
    uint32_t nnodes;
    uint32_t servers_per_node;
    char rendezvous[4096]; /* the job's rendezvous directory ("" for a one-node job) */
} pdcbb_jobinfo_t;

/* Write "<dir>/job.info" atomically (lines "key value"). */
pdcbb_err_t pdcbb_jobinfo_write(const char *dir, const pdcbb_jobinfo_t *ji);
/* Read it: PDCBB_ERR_NOT_FOUND if absent, PDCBB_ERR_PROTO if a field is missing or bad. */
pdcbb_err_t pdcbb_jobinfo_read(const char *dir, pdcbb_jobinfo_t *ji);
/* A new random instance id (32 hex digits and NUL) into out. */
pdcbb_err_t pdcbb_instance_generate(char *out);

/* snprintf "<dir>/<name>" into out; PDCBB_ERR_TOO_BIG if it does not fit. */
pdcbb_err_t pdcbb_jobdir_path(const char *dir, const char *name, char *out, size_t len);
/* Same for per-rank files: kind is "endpoint", "pid", "log" or "" (the data directory). */
pdcbb_err_t pdcbb_jobdir_rank_path(const char *dir, unsigned rank, const char *kind, char *out,
                                   size_t len);

/* Fill token with PDCBB_TOKEN_LEN random bytes from getrandom(2). */
pdcbb_err_t pdcbb_token_generate(uint8_t *token);
/* Write token as hex to path (mode 0600, atomically), owned by the caller. */
pdcbb_err_t pdcbb_token_write(const char *path, const uint8_t *token);
/* Read a token file; PDCBB_ERR_NOT_FOUND, PDCBB_ERR_PERM, or PDCBB_ERR_PROTO if malformed. */
pdcbb_err_t pdcbb_token_read(const char *path, uint8_t *token);

/* Write an endpoint record atomically (temporary file + rename). */
pdcbb_err_t pdcbb_endpoint_write(const char *path, const pdcbb_endpoint_t *ep);
/* Read and validate one record (every field present and in range). token is left zero. */
pdcbb_err_t pdcbb_endpoint_read(const char *path, pdcbb_endpoint_t *ep);
/* Serialise a record to text (for the PMIx exchange, including the token as hex). */
pdcbb_err_t pdcbb_endpoint_format(const pdcbb_endpoint_t *ep, int with_token, char *out,
                                  size_t len);
/* Parse what pdcbb_endpoint_format produced; with_token requires the token line. */
pdcbb_err_t pdcbb_endpoint_parse(const char *text, int with_token, pdcbb_endpoint_t *ep);

/*
 * The next record of a JOB_TABLE text (the records of pdcbb_endpoint_format with their tokens,
 * separated by PDCBB_JOB_TABLE_SEP; the JOB_TABLE reply's records and <job dir>/job.table):
 * the record at *pos of the len bytes of text is parsed into ep and *pos moves past it and its
 * separator. PDCBB_ERR_NOT_FOUND at the end of the text; PDCBB_ERR_PROTO for a malformed
 * record (one with a NUL byte or longer than a record can be included); ep and *pos are then
 * unchanged. text need not be NUL-terminated and is not modified.
 */
pdcbb_err_t pdcbb_job_table_next(const char *text, size_t len, size_t *pos, pdcbb_endpoint_t *ep);

/*
 * Read every endpoint record of a job directory (bbd-*.endpoint) plus its token. *eps is
 * malloc'ed (caller frees), *n its length (0 if the directory holds none yet).
 */
pdcbb_err_t pdcbb_jobdir_read_endpoints(const char *dir, pdcbb_endpoint_t **eps, size_t *n);

/* "<rendezvous>/bbd-R.record" and "<rendezvous>/node-I.error" into out. */
pdcbb_err_t pdcbb_rendezvous_record_path(const char *rdv, unsigned rank, char *out, size_t len);
pdcbb_err_t pdcbb_rendezvous_error_path(const char *rdv, unsigned node_index, char *out,
                                        size_t len);
/* Publish daemon ep's record with its token in the rendezvous directory (atomically, 0600). */
pdcbb_err_t pdcbb_rendezvous_publish(const char *rdv, const pdcbb_endpoint_t *ep);
/* Read daemon rank's published record (with token): PDCBB_ERR_NOT_FOUND if absent,
 * PDCBB_ERR_PROTO if malformed or if it names another rank. */
pdcbb_err_t pdcbb_rendezvous_read(const char *rdv, unsigned rank, pdcbb_endpoint_t *ep);
/* Write len bytes to path through a temporary file and rename (mode for a new file); no fsync:
 * for files that can be rebuilt (a crash of the node ends the job anyway). */
pdcbb_err_t pdcbb_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* Read a small text file (at most len-1 bytes) into buf, NUL-terminated, trailing newlines
 * removed. */
pdcbb_err_t pdcbb_read_text(const char *path, char *buf, size_t len);

/* 1 if pid names a live process (state Z counts as dead). */
int pdcbb_pid_alive(pid_t pid);

#endif
