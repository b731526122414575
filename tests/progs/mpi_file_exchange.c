/*
 * mpi_file_exchange.c - an ordinary MPI program that knows nothing of pdcbb: every rank writes
 * its own file in DIR with plain POSIX calls, the ranks meet at a barrier, and every rank then
 * reads every other rank's file and checks each byte (130-mount, 99-slurm-mount: ranks on
 * different nodes of a job, through the job's filesystem).
 *
 *   mpi_file_exchange DIR[:DIR...] [BYTES]   (default 3 MiB + 17 bytes per rank)
 *
 * With several DIRs (one machine standing for several nodes, each with its own mount of the
 * same tree), rank r works in DIR number r modulo their count.
 *
 * Prints "rank R of N on HOST: wrote B bytes, read N-1 files: ok" and exits 0, or names the
 * file, offset and byte that differ and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The byte at offset off of rank r's file. */
static unsigned char pattern(int r, size_t off)
{
    return (unsigned char)((off * 131u + (size_t)r * 7919u + (off >> 12)) & 0xff);
}

static int fail(int rank, const char *what, const char *path)
{
    fprintf(stderr, "rank %d: %s %s: %s\n", rank, what, path, strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_file_exchange DIR [BYTES]\n");
        MPI_Finalize();
        return 2;
    }
    size_t bytes = argc > 2 ? strtoull(argv[2], NULL, 10) : (3u << 20) + 17;
    /* this rank's directory: entry rank % count of the colon-separated list */
    char dir[4096];
    int ndirs = 1;
    for (const char *c = argv[1]; *c; c++)
        ndirs += *c == ':';
    const char *d = argv[1];
    for (int i = 0; i < rank % ndirs; i++)
        d = strchr(d, ':') + 1;
    snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(d, ":"), d);
    unsigned char *buf = malloc(bytes ? bytes : 1);
    /* the node: Slurm's name for it (nodes of a test cluster may share one host name) */
    char path[4096], host[256] = "?";
    const char *node = getenv("SLURMD_NODENAME");
    if (node != NULL && node[0] != '\0')
        snprintf(host, sizeof(host), "%s", node);
    else
        gethostname(host, sizeof(host));
    for (size_t i = 0; i < bytes; i++)
        buf[i] = pattern(rank, i);
    snprintf(path, sizeof(path), "%s/rank-%d.dat", dir, rank);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return fail(rank, "cannot create", path);
    /* in 1 MiB writes, as a checkpoint library would */
    for (size_t off = 0; off < bytes;) {
        size_t n = bytes - off < (1u << 20) ? bytes - off : (1u << 20);
        ssize_t w = write(fd, buf + off, n);
        if (w <= 0)
            return fail(rank, "cannot write", path);
        off += (size_t)w;
    }
    if (close(fd) != 0)
        return fail(rank, "cannot close", path);
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = 0;
    for (int r = 0; r < size; r++) {
        if (r == rank)
            continue;
        snprintf(path, sizeof(path), "%s/rank-%d.dat", dir, r);
        fd = open(path, O_RDONLY);
        if (fd < 0)
            return fail(rank, "cannot open", path);
        size_t got = 0;
        ssize_t n;
        while ((n = read(fd, buf, bytes)) > 0) {
            for (ssize_t i = 0; i < n && !bad; i++)
                if (buf[i] != pattern(r, got + (size_t)i)) {
                    fprintf(stderr, "rank %d: %s: byte %zu is %u, not %u\n", rank, path,
                            got + (size_t)i, buf[i], pattern(r, got + (size_t)i));
                    bad = 1;
                }
            got += (size_t)n;
        }
        if (n < 0)
            return fail(rank, "cannot read", path);
        close(fd);
        if (!bad && got != bytes) {
            fprintf(stderr, "rank %d: %s has %zu bytes, not %zu\n", rank, path, got, bytes);
            bad = 1;
        }
    }
    if (!bad)
        printf("rank %d of %d on %s in %s: wrote %zu bytes, read %d files: ok\n", rank, size, host,
               dir, bytes, size - 1);
    fflush(stdout);
    free(buf);
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
