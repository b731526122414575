/*
 * pdcbb_job_script.h - the user script of a pdcbb job (config key `script`, like ZeptoOS's
 * ZOID user script): an executable run on every node of the job, as the job user, once when
 * the node's daemons are up and before the first task starts ("start"), and once after the
 * last task ended, while the daemons still run and before the drain ("end").
 *
 * Called by the SPANK plugin (job prolog / epilog, as root: the script runs in a child that
 * dropped to the job user's uid, gid and groups) and by `pdcbb run` (as the user), the same
 * way for both. Documented for users in docs/USER-GUIDE.md ("User scripts").
 *
 * The script gets the phase as its one argument and in PDCBB_SCRIPT_PHASE ("start" or "end"),
 * and the job's facts in PDCBB_JOB_ID, PDCBB_JOB_DIR, PDCBB_NODE_NAME (what `pdcbb` commands
 * and libpdc need to find the running job), PDCBB_NODE_INDEX, PDCBB_NNODES, PDCBB_NTASKS (when
 * known), PDCBB_DRAIN and PDCBB_DRAIN_DIR (when the job drains), PDCBB_SCRIPT_LOG (see
 * pdcbb_job_script_env_t for the rest of its environment). It runs in
 * the job directory with stdin from /dev/null and stdout and stderr appended to
 * <job dir>/script-<phase>.log, in a process group of its own: after script_timeout seconds
 * the whole group is killed. Processes the start script leaves running in the background keep
 * running during the job; the end phase kills what is left of both groups.
 */
#ifndef PDCBB_JOB_SCRIPT_H
#define PDCBB_JOB_SCRIPT_H

#include <sys/types.h>

#include "pdcbb_job.h"

typedef enum pdcbb_script_phase {
    PDCBB_SCRIPT_START = 0,
    PDCBB_SCRIPT_END = 1,
} pdcbb_script_phase_t;

/* The file of <job dir> that records why this node's start script failed. */
#define PDCBB_SCRIPT_ERROR_FILE "script.error"

/* How the runner builds the script's environment. */
typedef struct pdcbb_job_script_env {
    unsigned ntasks;         /* tasks of the job; 0: unknown (PDCBB_NTASKS not set) */
    const char *server_dirs; /* PDCBB_SERVER_DIRS of the local launcher; NULL: not set */
    int inherit;             /* 1: start from the caller's environment (`pdcbb run`, the
                                user's own); 0: a clean one (PATH, HOME, USER, LOGNAME, SHELL) */
    const char *pass_prefix; /* with inherit 0: also the caller's variables named so ("SLURM_":
                                the prolog's job facts); NULL: none */
} pdcbb_job_script_env_t;

/* "start" or "end". */
const char *pdcbb_job_script_phase_name(pdcbb_script_phase_t phase);

/*
 * Whether path may run as the user uid, called as that user: an absolute path of a regular
 * file (links followed), owned by uid or root, not writable by group or others, readable and
 * executable by the caller. err (out) names the file and what is wrong. PDCBB_ERR_INVAL (not
 * absolute), PDCBB_ERR_NOT_FOUND, PDCBB_ERR_PERM.
 */
pdcbb_err_t pdcbb_job_script_check(const char *path, uid_t uid, char *err, size_t errlen);

/*
 * Run job->cfg.script for phase on this node and wait for it (nothing to do, PDCBB_OK, when
 * the key is empty). As root the script runs in a child that dropped to the job user
 * (pdcbb_job_as_user); the checks of pdcbb_job_script_check are made again as that user.
 * Returns PDCBB_OK when it exited with status 0. Otherwise err says "start script PATH failed
 * on NODE: <why>[: <its last output lines>]" (why: exit status N, killed by signal N, timed
 * out after S s, or the check's reason) and the return is PDCBB_ERR_TIMEOUT (timed out),
 * PDCBB_ERR_NOT_FOUND / PDCBB_ERR_PERM (the file), or PDCBB_ERR_INTERNAL (it failed). A
 * failed start phase also writes err to <job dir>/script.error and, for a multi-node job,
 * to <rendezvous>/node-I.script.error (as the user), which pdcbb_job_script_failed reads; a
 * successful one removes them. The end phase does not run the script where the job never ran
 * (prolog.error, or pdcbb_job_script_failed): it only kills what the start left running.
 */
pdcbb_err_t pdcbb_job_script_run(const pdcbb_job_t *job, pdcbb_script_phase_t phase,
                                 const pdcbb_job_script_env_t *env, char *err, size_t errlen);

/*
 * 1 if the start script failed on this node (job_dir holds script.error) or, for a multi-node
 * job, on another node (the rendezvous directory named by job_dir's job.info holds
 * node-I.script.error): msg gets its text; 0 if not. Opens the files without following
 * links (call as the job user).
 */
int pdcbb_job_script_failed(const char *job_dir, char *msg, size_t len);

/*
 * Record msg as the reason this node's part of the job did not start (e.g. its filesystem,
 * mount=yes), where a failed start script's reason goes: every task of the job then refuses
 * to start with it (pdcbb_job_script_failed) and the end script does not run. Written as the
 * job user; best effort.
 */
void pdcbb_job_start_failed_record(const pdcbb_job_t *job, const char *msg);

#endif
