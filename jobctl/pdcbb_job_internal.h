/*
 * pdcbb_job_internal.h - what the parts of jobctl/ share behind pdcbb_job.h; not installed,
 * not for callers outside jobctl/.
 *
 * pdcbb_job.c (prolog and epilog) drives the parts: pdcbb_job_creds.c (the job user),
 * pdcbb_job_procs.c (recognising our daemons, pid files), pdcbb_job_stop.c (stopping them),
 * pdcbb_job_dir.c (the job directory) and pdcbb_job_start.c (starting them). Like pdcbb_job.h:
 * no threads, not thread-safe. Functions that fill err (errlen bytes, may be NULL) do so only
 * on failure unless said otherwise.
 */
#ifndef PDCBB_JOB_INTERNAL_H
#define PDCBB_JOB_INTERNAL_H

#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pdcbb_job.h"

/* Longest line a daemon may write on its ready pipe that we keep. */
#define JOB_READY_LINE 512

/* ---- pdcbb_job.c: small helpers ---- */

/* Append "; <message>" to err (or just the message when err is empty); never overflows. */
void job_note(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Seconds on the monotonic clock. */
double job_now(void);
/* The last non-empty lines of a log file (at most max_lines, at most JOB_LOG_TAIL_MAX),
 * "; "-joined into out; "" if none. Links are not followed. */
#define JOB_LOG_TAIL_MAX 8
void job_log_tail(const char *log, unsigned max_lines, char *out, size_t len);
/* The effective local root: job->local_root overrides cfg.local_root. */
const char *job_root(const pdcbb_job_t *job);
/* strerror that is async-signal-safe (a static description, never translated). */
const char *job_strerror(int e);

/* ---- pdcbb_job_creds.c: who the daemons and the job's files belong to ---- */

typedef struct job_creds {
    bool drop;     /* running as root for another user: children become uid/gid/groups */
    uid_t uid;
    gid_t gid;
    gid_t *groups; /* supplementary groups of the user (malloc'ed), resolved before fork */
    int ngroups;
} job_creds_t;

/* Resolve the job user's credentials into *cr (PDCBB_ERR_PERM: not root and not the user). */
pdcbb_err_t job_creds_init(const pdcbb_job_t *job, job_creds_t *cr, char *err, size_t errlen);
/* Free what job_creds_init allocated (safe on a zeroed or already freed cr). */
void job_creds_free(job_creds_t *cr);
/* In a forked child: become the job user for good; 0 or an errno value (system calls only). */
int job_creds_drop(const job_creds_t *cr);
/* Run fn(arg) as the job user (in a child that dropped, when needed); returns fn's code. */
pdcbb_err_t job_as_user(const job_creds_t *cr, pdcbb_err_t (*fn)(void *), void *arg);

/* ---- pdcbb_job_procs.c: recognising our daemons, their pid files ---- */

/* What the command line of a process says about it. */
typedef struct job_proc_info {
    bool is_bbd;        /* an argument or /proc/PID/exe names pdc_bbd */
    bool has_job_id, has_job_dir, has_rank;
    uint64_t job_id;
    unsigned rank;
    char job_dir[PATH_MAX];
} job_proc_info_t;

/* Is pid a live pdc_bbd of this job (strict: its command line names job id and directory)? */
bool job_is_daemon(pid_t pid, uint64_t job_id, const char *job_dir, long uid, bool strict,
                   job_proc_info_t *pi);
/* "bbd-R.pid" -> R; -1 if the name is not a pid file. */
long job_pidfile_rank(const char *name);
/* Read a pid file of dirfd without following links or blocking on a fifo; 0 if malformed. */
pid_t job_pidfile_read(int dirfd, const char *name);
/* Remove bbd-R.pid and bbd-R.endpoint of a daemon that is gone (never its data). */
void job_remove_rank_files(int dirfd, long rank);

/* ---- pdcbb_job_stop.c: stopping daemons ---- */

/* Stop every daemon of the job in dir (ranks rank_lo..rank_hi-1 when rank_hi >= 0) and the
 * nextra pids in extra (with their ranks); PDCBB_ERR_BUSY when one is left running. */
pdcbb_err_t job_stop_all(const pdcbb_job_t *job, const char *dir, long rank_lo, long rank_hi,
                         const pid_t *extra, const long *extra_rank, size_t nextra,
                         pdcbb_job_stop_stats_t *stats, char *err, size_t errlen);
/* How many daemons of the job (those ranks) run now, signalling none; the first named in who. */
size_t job_find_running(const pdcbb_job_t *job, const char *dir, long rank_lo, long rank_hi,
                        char *who, size_t len);
/* This node's ranks of the job when the job says which node it is (rank_hi < 0: every rank). */
void job_node_ranks(const pdcbb_job_t *job, long *rank_lo, long *rank_hi);

/* ---- pdcbb_job_dir.c: the job directory ---- */

/* Create (or accept) the job directory dir; an O_DIRECTORY descriptor of it in *dirfd. */
pdcbb_err_t job_dir_create(const pdcbb_job_t *job, const char *dir, int *dirfd, char *err,
                           size_t errlen);
/* Refuse a capacity above the site maximum or the free space of dirfd's filesystem. */
pdcbb_err_t job_check_capacity(const pdcbb_job_t *job, int dirfd, char *err, size_t errlen);
/* Open directory dir (not followed if a link): returns a descriptor of it and in *d a stream
 * on a duplicate of that descriptor (the caller closes both), or -1 with nothing left open. */
int job_dir_open(const char *dir, DIR **d);

/* ---- pdcbb_job_start.c: starting daemons ---- */

typedef struct job_daemon {
    unsigned rank;
    pid_t pid;         /* the daemon (grandchild); 0 if unknown */
    int rfd;           /* read end of its ready pipe; -1 once done */
    char line[JOB_READY_LINE];
    size_t len;
    bool done, ok, eof;
} job_daemon_t;

/* Start daemon d->rank of nservers (double fork, privilege drop); its pid and pipe in *d. */
pdcbb_err_t job_start_daemon(const pdcbb_job_t *job, const job_creds_t *cr, const char *dir,
                             const char *cfgpath, unsigned nservers, job_daemon_t *d, char *err,
                             size_t errlen);
/* Wait until the n daemons in ds report ready (PDCBB_OK) or the first fails, times out or a
 * signal interrupts the wait (pdcbb_job_set_interrupt_flag). */
pdcbb_err_t job_wait_ready(const pdcbb_job_t *job, const char *dir, job_daemon_t *ds, size_t n,
                           char *err, size_t errlen);

#endif
