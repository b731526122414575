/*
 * spank_job_output.h - where the SPANK plugin's epilog tells the job's user what became of the
 * job's data, through Slurm's own tools: the job's own output file (StdOut of `scontrol show
 * job`) gets each node's drain line at its end, and the job's accounting record gets the
 * outcome as its AdminComment (`sacct -o AdminComment`, `sacctmgr modify job`: `scontrol update`
 * refuses a job that has finished, and the epilog runs after that). Both run as root, in the
 * epilog, with a time limit; a failure is logged and changes nothing else (a site without
 * accounting has only the output line and `pdcbb why`). Epilog only; starts no threads.
 */
#ifndef SPANK_JOB_OUTPUT_H
#define SPANK_JOB_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#define SPANK_HIDDEN __attribute__((visibility("hidden")))

/* The job's standard output file (an absolute path) into out. 0, or -1 (no batch output file,
 * or scontrol failed: why says which). */
SPANK_HIDDEN int spank_job_stdout(uint64_t job_id, char *out, size_t len, char *why,
                                  size_t whylen);

/* Set the AdminComment of the job's accounting record to text (sacctmgr). 0, or -1 with why
 * (no accounting, no record of the job, sacctmgr failed). */
SPANK_HIDDEN int spank_job_admin_comment(uint64_t job_id, const char *text, char *why,
                                         size_t whylen);

#endif
