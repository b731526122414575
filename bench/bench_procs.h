/*
 * bench_procs.h - the client processes of a metadata-style benchmark (pdc_meta_bench,
 * pdc_kv_bench): either P processes forked before PDCinit (--procs P), sharing a barrier in an
 * anonymous shared mapping, or the ranks of an MPI job. Phases are timed from a barrier to the
 * slowest process's end (bench_max_all). Not thread-safe; one group per program.
 */
#ifndef BENCH_PROCS_H
#define BENCH_PROCS_H

#include "pdc.h" /* ENABLE_MPI when libpdc was built with MPI */

#define BENCH_MAX_PROCS 256

/* This process's rank and the group's size (0 and 1 until bench_procs_start). */
extern int bench_rank, bench_nprocs;

/*
 * Start the group: with MPI under a launcher (OpenMPI or PMIx environment; only when allow_mpi),
 * MPI_Init and the world's ranks; else fork procs - 1 children (procs 1: nothing). Returns 2
 * (usage error, message printed) if both --procs > 1 and a launcher, else 0.
 */
int bench_procs_start(const char *prog, int *argc, char ***argv, int procs, int allow_mpi);
/* Barrier of the whole group; a child that saw another fail exits 1. */
void bench_barrier(void);
/* The slowest process's v, on every process. */
double bench_max_all(double v);
/* Rank 0's v, on every process. */
long bench_bcast_long(long v);
/* Monotonic seconds. */
double bench_now(void);
/* "PROG[RANK]: error: ...", mark the group failed (others stop at their next barrier), exit 1. */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* End of the group: MPI_Finalize; forked children exit 0 here; rank 0 waits for them and
 * returns 0 if every child exited 0, else 1. */
int bench_procs_finish(void);

#endif
