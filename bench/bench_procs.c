/* bench_procs.c - see bench_procs.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench_procs.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int bench_rank = 0, bench_nprocs = 1;

static const char *bench_prog = "bench";
#ifdef ENABLE_MPI
static int use_mpi;
#endif

/* --procs: shared between the forked processes. */
typedef struct shared {
    pthread_barrier_t barrier;
    double seconds[BENCH_MAX_PROCS];
    int failed;
} shared_t;
static shared_t *shared;
static pid_t kids[BENCH_MAX_PROCS];

void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s[%d]: error: ", bench_prog, bench_rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (shared)
        shared->failed = 1;
#ifdef ENABLE_MPI
    if (use_mpi && bench_nprocs > 1)
        MPI_Abort(MPI_COMM_WORLD, 1);
#endif
    exit(1);
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int bench_procs_start(const char *prog, int *argc, char ***argv, int procs, int allow_mpi)
{
    bench_prog = prog;
#ifdef ENABLE_MPI
    /* Initialise MPI only when a launcher started us (no singleton start-up otherwise). */
    if (allow_mpi && (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK"))) {
        MPI_Init(argc, argv);
        use_mpi = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &bench_rank);
        MPI_Comm_size(MPI_COMM_WORLD, &bench_nprocs);
        if (procs > 1) {
            fprintf(stderr, "%s: --procs and mpirun exclude each other\n", prog);
            MPI_Finalize();
            return 2;
        }
    }
#else
    (void)argc;
    (void)argv;
    (void)allow_mpi;
#endif
    if (procs <= 1)
        return 0;
    shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        shared = NULL;
        bench_die("mmap: %s", strerror(errno));
    }
    pthread_barrierattr_t ba;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&shared->barrier, &ba, (unsigned)procs);
    bench_nprocs = procs;
    fflush(stdout);
    for (int i = 1; i < procs; i++) {
        pid_t k = fork();
        if (k < 0)
            bench_die("fork: %s", strerror(errno));
        if (k == 0) {
            bench_rank = i;
            break;
        }
        kids[i] = k;
    }
    return 0;
}

void bench_barrier(void)
{
#ifdef ENABLE_MPI
    if (use_mpi)
        MPI_Barrier(MPI_COMM_WORLD);
#endif
    if (shared) {
        pthread_barrier_wait(&shared->barrier);
        if (shared->failed)
            exit(1);
    }
}

double bench_max_all(double v)
{
#ifdef ENABLE_MPI
    if (use_mpi) {
        double out;
        MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        return out;
    }
#endif
    if (!shared)
        return v;
    shared->seconds[bench_rank] = v;
    bench_barrier();
    double m = 0;
    for (int i = 0; i < bench_nprocs; i++)
        if (shared->seconds[i] > m)
            m = shared->seconds[i];
    bench_barrier(); /* nobody overwrites seconds[] before everyone read it */
    return m;
}

long bench_bcast_long(long v)
{
#ifdef ENABLE_MPI
    if (use_mpi)
        MPI_Bcast(&v, 1, MPI_LONG, 0, MPI_COMM_WORLD);
#endif
    return v;
}

int bench_procs_finish(void)
{
#ifdef ENABLE_MPI
    if (use_mpi)
        MPI_Finalize();
#endif
    if (shared && bench_rank != 0)
        _exit(0);
    int status = 0;
    for (int i = 1; shared && i < bench_nprocs; i++) {
        int ws;
        if (waitpid(kids[i], &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
            status = 1;
    }
    return status;
}
