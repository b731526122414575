/*
 * spank_job_output.h - where the SPANK plugin's epilog tells the job's user what became of the
 * job's data: the job's own output file (StdOut of `scontrol show job`), which gets each node's
 * drain line at its end. scontrol runs as root, in the epilog, with a time limit; a failure is
 * logged and changes nothing else. (The job's record in Slurm itself cannot be changed from
 * the epilog: `scontrol update` refuses a job that has finished, and `sacctmgr modify job`
 * needs the site's accounting database.) Called from the epilog only; starts no threads.
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

#endif
