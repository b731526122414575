/*
 * pdcbb_job_drain.h - the end of a job on one node, after pdcbb_job_epilog stopped its daemons:
 * drain to the job's destination as the job user, then free the node. Called by the SPANK
 * plugin's epilog and by `pdcbb run`, like the prolog and epilog themselves.
 */
#ifndef PDCBB_JOB_DRAIN_H
#define PDCBB_JOB_DRAIN_H

#include "pdcbb_drain.h"
#include "pdcbb_job.h"

/*
 * With job->cfg.drain set: drain this node's ranks into "<drain>/pdcbb.<job id>" with the job
 * user's credentials (pdcbb_drain_node in a child that dropped to the user when called as
 * root), and once they are written and verified remove the node-local job directory. When the
 * drain fails, the node-local data is kept, <job dir>/drain.error gets the reason (which
 * `pdcbb status` shows), a report "<drain>/pdcbb.<job id>.<node>.FAILED" (or in the user's home
 * when the destination cannot take it; pdcbb_drain_report_write) tells the user without node
 * logs, and err says where the data is, where the report is and how to finish (`pdcbb drain`).
 * The drain only goes into the directory the prolog made for this job (pdcbb_drain_dir_find),
 * never creates one. A successful drain removes this node's stale reports.
 * Without a drain destination, or when the prolog failed on this node (prolog.error: the
 * burst buffer never served anyone), the job directory is removed unless keep is set (err then
 * says why when it is worth saying). stats (may be NULL) gets what was drained. Returns
 * PDCBB_OK when nothing is left to do on this node. progress (may be NULL) is called as
 * pdcbb_drain_node calls it, in the process that drains as the job user (a child of the
 * caller's: arg is the child's copy).
 */
pdcbb_err_t pdcbb_job_drain(const pdcbb_job_t *job, int keep, pdcbb_drain_progress_fn progress,
                            void *arg, pdcbb_drain_node_stats_t *stats, char *err, size_t errlen);

/*
 * After a node's drain, as the job user: copy the job directory's daemon logs (bbd-R.log), its
 * record of daemons that died (daemons.died) and the user script's output (script-start.log,
 * script-end.log) to "<drain_dir>/logs/<node>.<file>", so they
 * outlive the node-local data (docs/DRAIN-FORMAT.md). Links are not followed. Returns 0, or -1
 * with errno when a file could not be copied (the drain itself stays valid).
 */
int pdcbb_job_drain_keep_logs(const char *job_dir, const char *drain_dir, const char *node);

/*
 * The line that tells the job's user what became of this node's data, for the end of the job's
 * own output (the Slurm epilog appends it) and for `pdcbb run`. rc, st and err are what
 * pdcbb_job_drain returned. Shapes (out gets "" when the job asked for no drain):
 *   pdcbb: job J node N: drained SIZE of R rank(s) to DIR; the job's drain is complete
 *   pdcbb: job J node N: drained SIZE of R rank(s) to DIR; other nodes still draining
 *   pdcbb: job J node N: nothing to drain; the job's drain is in DIR
 *   pdcbb: job J node N: drain FAILED: REASON; see: pdcbb why --job J DEST
 * Every name and reason in it is escaped (pdcbb_esc).
 */
void pdcbb_job_drain_line(const pdcbb_job_t *job, pdcbb_err_t rc,
                          const pdcbb_drain_node_stats_t *st, const char *err, char *out,
                          size_t len);

/*
 * Append line (and a newline) to the job's output file path as the job user (never through a
 * link, never creating it, only a regular file of the user): the user reads the drain's
 * outcome where the job's own output ends. PDCBB_OK, or an error with err saying why.
 */
pdcbb_err_t pdcbb_job_output_append(const pdcbb_job_t *job, const char *path, const char *line,
                                    char *err, size_t errlen);

#endif
