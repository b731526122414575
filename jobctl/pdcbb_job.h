/*
 * pdcbb_job.h - per-node prolog and epilog of a pdcbb job.
 *
 * The Slurm SPANK plugin (spank_plugin/, as root in slurm_spank_job_prolog/epilog) and the
 * local launcher (`pdcbb run`, as the invoking user) call exactly these functions, so a local
 * run exercises the production path.
 *
 * The prolog never leaves a half-started node behind silently: on any failure it writes the
 * reason to <job dir>/prolog.error (read by clients and `pdcbb status`) and returns an error
 * code with the same message; callers decide whether that is fatal (the plugin never fails the
 * Slurm prolog because of it). The epilog always tries to stop every daemon of the job on the
 * node, whatever state the directory is in. Neither starts threads. Not thread-safe.
 */
#ifndef PDCBB_JOB_H
#define PDCBB_JOB_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "pdcbb_config.h"
#include "pdcbb_error.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_proto.h"

#define PDCBB_JOB_ERR_LEN 1024

typedef struct pdcbb_job {
    uint64_t job_id;
    uid_t uid;        /* the job user: owns the job directory, runs the daemons */
    gid_t gid;
    char node_name[256];  /* this node's name as the launcher names it */
    unsigned node_index;  /* 0..nnodes-1 */
    unsigned nnodes;
    pdcbb_config_t cfg;   /* resolved: defaults < site < user < --pdc */
    char local_root[PATH_MAX]; /* overrides cfg.local_root when non-empty (local launcher) */
    char instance[PDCBB_INSTANCE_LEN + 1]; /* random id shared by the job's nodes ("": none) */
    char cluster[PDCBB_CLUSTER_NAME_MAX];  /* the cluster's name (Slurm's ClusterName, "local"
                                            * for pdcbb run; "": unknown) */
    char rendezvous_root[PATH_MAX]; /* overrides cfg.rendezvous_dir when non-empty */
} pdcbb_job_t;

/*
 * Let a signal abort the prolog's wait for its daemons (for `pdcbb run` and Ctrl-C): when a
 * signal interrupts the wait and *flag is non-zero, pdcbb_job_prolog stops what it started and
 * returns PDCBB_ERR_SHUTDOWN ("interrupted by signal N"). flag is borrowed until replaced;
 * NULL (the default) means the wait is never cut short. The epilog is never interrupted.
 */
void pdcbb_job_set_interrupt_flag(volatile sig_atomic_t *flag);

/* "<local_root>/pdcbb.<job_id>" into out. */
pdcbb_err_t pdcbb_job_dir(const pdcbb_job_t *job, char *out, size_t len);

/*
 * Prepare this node for the job and start its daemons:
 *  1. create the job directory, mode 0700, owned by uid:gid. As root, local_root is made
 *     root's with mode 01733 (refused if another user owns it), and anything else already
 *     named pdcbb.<job id> (not a 0700 directory of the job user) is renamed aside to
 *     pdcbb-moved.<job id>.<its uid>.<time>, never used;
 *  2. check cfg.capacity against cfg.max_capacity and the free space under local_root;
 *  3. write token (token == NULL: generate one), config.yaml and job.info (pdcbb_jobinfo_t),
 *     owned by the job user;
 *  4. start cfg.servers_per_node daemons with ranks node_index*spn + k of nnodes*spn: double
 *     fork, setsid, supplementary groups, gid and uid dropped (when running as root), inherited
 *     descriptors closed, exec cfg.daemon_path;
 *  5. wait up to cfg.ready_timeout for each to report ready on its pipe.
 * With cfg.drain set, before starting daemons: the destination is checked as the job user
 * (pdcbb_drain_dest_check) on every node, and node 0 creates the job's drain directory as the
 * job user (pdcbb_drain_dir_create, mode from cfg.drain_share); a failure is a prolog failure
 * (prolog.error: the job's clients report it at PDCinit), never left for the end of the job.
 * On success err is "" or a notice worth showing (a fresh drain directory name was used because
 * "pdcbb.<job id>" was someone else's).
 * On failure stops whatever it started, writes prolog.error, fills err and returns the cause.
 * On success removes a stale prolog.error. When running as root, the files inside the job
 * directory are written by a short-lived child that has dropped to the job user (so they are
 * the user's, and a link the user plants there cannot redirect a root write).
 *
 *  job    (in)  the job and its resolved config; cfg.daemon_path must be absolute.
 *  token  (in)  PDCBB_TOKEN_LEN bytes shared by all nodes of the job, or NULL to generate one.
 *  err    (out) one line: why it failed (also in prolog.error when the directory is usable).
 * Errors:
 *  PDCBB_ERR_INVAL   bad job description (job id 0, node_index >= nnodes, no node name, ...);
 *  PDCBB_ERR_PERM    not root and uid is not ours; the existing job directory belongs to
 *                    someone else or is not mode 0700;
 *  PDCBB_ERR_EXISTS  the job directory name is taken by a symlink or a non-directory;
 *  PDCBB_ERR_BUSY    a daemon of one of this node's ranks is still running there (nothing is
 *                    touched; restarting is fine once the epilog stopped the old ones);
 *  PDCBB_ERR_NOSPC   capacity above max_capacity or above the free space under local_root;
 *  PDCBB_ERR_CONFIG  daemon_path or local_root not absolute;
 *  PDCBB_ERR_UNREACHABLE  a daemon reported "error ..." or exited without reporting ready;
 *  PDCBB_ERR_TIMEOUT no report within cfg.ready_timeout;
 *  PDCBB_ERR_SHUTDOWN interrupted (pdcbb_job_set_interrupt_flag);
 *  others            from errno (creating directories, writing files, fork, pipe).
 */
pdcbb_err_t pdcbb_job_prolog(const pdcbb_job_t *job, const uint8_t *token, char *err,
                             size_t errlen);

/*
 * Stop the job's daemons on this node: SIGTERM to every pid in bbd-*.pid, wait up to
 * cfg.stop_timeout, then SIGKILL and wait again. Node-local data is kept (the stager decides
 * what to delete). Returns PDCBB_OK when no daemon of the job is left running (details, also
 * of how daemons are recognised, at pdcbb_job_epilog_stats).
 */
pdcbb_err_t pdcbb_job_epilog(const pdcbb_job_t *job, char *err, size_t errlen);

/* What an epilog found and did (pdcbb_job_epilog_stats). */
typedef struct pdcbb_job_stop_stats {
    unsigned found;      /* daemons of the job that were running when the epilog started */
    unsigned terminated; /* of those, exited after SIGTERM */
    unsigned killed;     /* of those, needed SIGKILL */
    unsigned running;    /* of those, still running at the end (then the return is not OK) */
    unsigned stale;      /* pid files of dead or foreign processes that were removed */
    unsigned died;       /* daemons that died during the job (pid file, no process): each is
                            recorded in <job dir>/daemons.died, which the drain keeps */
} pdcbb_job_stop_stats_t;

/*
 * pdcbb_job_epilog, also reporting counts in *stats (out, may be NULL). Daemons are found by
 * their pid files and, in case those are lost, by a /proc scan for pdc_bbd processes whose
 * command line names this job's id and directory; a pid file whose process is dead or is not a
 * pdc_bbd of this job (pid reuse) is removed, never signalled. When running as root, only
 * processes of the job's uid are signalled. A missing or unreadable job directory is not an
 * error by itself (err says so). Returns PDCBB_OK when nothing of the job is left running,
 * PDCBB_ERR_BUSY if a daemon survived SIGKILL or could not be signalled. err (out) describes
 * anything unusual even on success, e.g. "daemon rank 1 (pid 123) ignored SIGTERM for 10s and
 * was killed"; it is empty after an ordinary stop.
 */
/*
 * The job's filesystem on this node (mount=yes; jobctl/pdcbb_job_mount.c): mount_path (the
 * pdcbb_mount program, an absolute path) is started as the job user (by the caller, or by a
 * child that drops to the user when the caller is root) on <job dir>/mnt (its path in mnt),
 * and waited for (ready_timeout); its output goes to <job dir>/mount.log. Every node's daemons
 * must be starting: the mount is a client of all of them. PDCBB_ERR_DISCOVERY if it did not
 * come up (err says why).
 */
pdcbb_err_t pdcbb_job_mount_start(const pdcbb_job_t *job, const char *mount_path, char *mnt,
                                  size_t mntlen, char *err, size_t errlen);
/* Unmount it (lazily: a process still in it loses it) and end its process; PDCBB_OK also when
 * there is none. Called by pdcbb_job_epilog_stats before it stops the daemons. */
pdcbb_err_t pdcbb_job_mount_stop(const pdcbb_job_t *job, char *err, size_t errlen);
/*
 * stage_in_files: on node 0 of the job (nothing to do elsewhere, or without the key), copy that
 * directory tree into the job's filesystem, which must be mounted (pdcbb_job_mount_start), as
 * the job user, symbolic links as links, modes and times kept, within stage_in_timeout; the
 * copy's output goes to <job dir>/stage-in-files.log. err names the directory and the reason.
 */
pdcbb_err_t pdcbb_job_mount_stage_in(const pdcbb_job_t *job, char *err, size_t errlen);
/* Where the job's filesystem is mounted on this node (<job dir>/mnt): PDCBB_MOUNT. */
pdcbb_err_t pdcbb_job_mount_point(const pdcbb_job_t *job, char *out, size_t len);

pdcbb_err_t pdcbb_job_epilog_stats(const pdcbb_job_t *job, pdcbb_job_stop_stats_t *stats,
                                   char *err, size_t errlen);

/*
 * 1 if pid is alive (zombies count as dead) and looks like a pdc_bbd of the job: argv[0] or
 * /proc/PID/exe names pdc_bbd, and its --job-id / --job-dir, when present, match job_id (0:
 * any) and job_dir (NULL: any). For `pdcbb status`, which must not call a reused pid running.
 */
int pdcbb_job_daemon_alive(pid_t pid, uint64_t job_id, const char *job_dir);

/*
 * Run fn(arg, out) with the job user's credentials: directly when the caller is that user, else
 * (root) in a forked child that has irreversibly dropped to uid, gid and the user's groups; the
 * child's out (outlen bytes) is copied back through a pipe and its return value is returned.
 * err is filled only when the switch itself fails (fork, credentials, a child killed by a
 * signal: PDCBB_ERR_INTERNAL). Used to drain a job as its user.
 */
pdcbb_err_t pdcbb_job_as_user(const pdcbb_job_t *job, pdcbb_err_t (*fn)(void *arg, void *out),
                              void *arg, void *out, size_t outlen, char *err, size_t errlen);

/*
 * Remove the job directory and everything in it (used after a successful drain or by
 * `pdcbb run` when asked not to keep data). Refuses a job directory that is not a real
 * directory directly under the real local_root (PDCBB_ERR_PERM), and one in which a daemon of
 * the job is still running (PDCBB_ERR_BUSY). A missing directory is PDCBB_OK. When running as
 * root, the tree is removed by a child running as the job user (it is the user's tree).
 */
pdcbb_err_t pdcbb_job_remove_dir(const pdcbb_job_t *job, char *err, size_t errlen);

/*
 * The job's rendezvous directory (pdcbb_job_rendezvous.c): where the daemons of a multi-node
 * job publish their endpoint records so that a client on any node can learn all of them from
 * its own node's daemon. pdcbb_job_rendezvous names it ("<rendezvous_dir>/job.<id>.<instance>",
 * '~/' meaning the job user's home) into out, or "" for a one-node job (PDCBB_ERR_NOT_FOUND:
 * no home directory; PDCBB_ERR_TOO_BIG). pdcbb_job_rendezvous_create makes it as the job user,
 * mode 0700, or accepts it only when it is the user's own private directory (PDCBB_ERR_PERM,
 * err says why). pdcbb_job_rendezvous_report writes node-I.error with why this node has no
 * daemons (errors are logged). pdcbb_job_rendezvous_cleanup removes this node's records and
 * error there, and the directory once it is empty (best effort, as the job user).
 */
pdcbb_err_t pdcbb_job_rendezvous(const pdcbb_job_t *job, char *out, size_t len);
pdcbb_err_t pdcbb_job_rendezvous_create(const pdcbb_job_t *job, const char *rdv, char *err,
                                        size_t errlen);
void pdcbb_job_rendezvous_report(const pdcbb_job_t *job, const char *rdv, const char *why);
void pdcbb_job_rendezvous_cleanup(const pdcbb_job_t *job);

#endif
