/*
 * client_direct.c - region bytes moved by the client itself for daemons of its own node; see
 * client_direct.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"
#include "client_direct.h"
#include "pdcbb_log.h"

/* Data files opened for the pieces of one message (closed after its I/O). */
#define FILE_CACHE 64

typedef struct direct_daemon {
    int state; /* 0 not asked, 1 usable, -1 not usable */
    int dirfd;
} direct_daemon_t;

typedef struct direct_file {
    unsigned daemon;
    uint64_t obj, dev, ino;
    int fd;
} direct_file_t;

static direct_daemon_t *daemons;
static unsigned ndaemons;
static direct_file_t files[FILE_CACHE];
static int files_ready;

static int direct_enabled(void)
{
    const char *e = getenv("PDCBB_DIRECT");
    return e == NULL || strcmp(e, "0") != 0;
}

/* Ask the daemon for its object directory and keep it open if it is the very same one. */
static int probe(unsigned daemon, direct_daemon_t *s)
{
    pdcbb_data_direct_req_t q = {.mode = PDCBB_DIRECT_PROBE};
    pdcbb_data_direct_rep_t p;
    void *keep;
    if (client_op_data_direct(daemon, &q, &p, &keep) != PDCBB_OK) {
        PDCBB_DEBUG("daemon %u cannot be written directly: %s", daemon,
                    PDCbb_last_error_message());
        return -1;
    }
    int ok = -1;
    struct stat st;
    int fd = p.results_count == 2 && p.dir && p.dir[0] == '/'
                 ? open(p.dir, O_PATH | O_DIRECTORY | O_CLOEXEC)
                 : -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == p.results[0] &&
        (uint64_t)st.st_ino == p.results[1]) {
        s->dirfd = fd;
        ok = 1;
        PDCBB_DEBUG("daemon %u: region bytes move directly through %s", daemon, p.dir);
    } else {
        if (fd >= 0)
            close(fd);
        PDCBB_DEBUG("daemon %u: its directory %s is not this process's: through UCX", daemon,
                    p.dir ? p.dir : "?");
    }
    client_rpc_release(PDCBB_OP_DATA_DIRECT, &p, keep);
    return ok;
}

int client_direct_usable(unsigned daemon)
{
    if (daemon >= client_g.nservers || client_g.drained)
        return 0;
    if (ndaemons != client_g.nservers) {
        client_direct_close();
        daemons = calloc(client_g.nservers, sizeof(*daemons));
        if (daemons == NULL)
            return 0;
        ndaemons = client_g.nservers;
    }
    direct_daemon_t *s = &daemons[daemon];
    if (s->state == 0) {
        s->dirfd = -1;
        /* Only a daemon that names this node: elsewhere its files are not ours to see. */
        s->state = direct_enabled() && strcmp(client_g.servers[daemon].info.node,
                                              client_g.node) == 0
                       ? probe(daemon, s)
                       : -1;
    }
    return s->state == 1;
}

int client_direct_open(unsigned daemon, uint64_t obj, uint64_t dev, uint64_t ino, int write,
                       pdcbb_err_t *rc)
{
    char name[64];
    snprintf(name, sizeof(name), PDCBB_DATA_FILE_FMT, obj);
    int fd =
        openat(daemons[daemon].dirfd, name, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0) {
        *rc = client_fail(pdcbb_err_from_errno(errno), "cannot open the data file %s: %s", name,
                          strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino) {
        close(fd);
        *rc = client_fail(PDCBB_ERR_PROTO,
                          "the data file %s is not the one daemon %u keeps the object in", name,
                          daemon);
        return -1;
    }
    return fd;
}

/* The data file of obj on daemon, cached (client_direct_open); -1 with *rc. */
static int file_of(unsigned daemon, uint64_t obj, uint64_t dev, uint64_t ino, pdcbb_err_t *rc)
{
    if (!files_ready) {
        for (int i = 0; i < FILE_CACHE; i++)
            files[i].fd = -1;
        files_ready = 1;
    }
    direct_file_t *f = &files[((obj * 0x9e3779b97f4a7c15ull) >> 58 ^ daemon) & (FILE_CACHE - 1)];
    if (f->fd >= 0 && f->daemon == daemon && f->obj == obj && f->dev == dev && f->ino == ino)
        return f->fd;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    int fd = client_direct_open(daemon, obj, dev, ino, 1, rc);
    if (fd < 0)
        return -1;
    *f = (direct_file_t){daemon, obj, dev, ino, fd};
    return fd;
}

typedef struct io_ctx {
    int fd;
    pdcbb_csum_list_t *csum; /* a write's checksum updates; NULL: a read */
    uint64_t obj, size;
    uint8_t *data;
    int err;
} io_ctx_t;

static int run_io(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    io_ctx_t *c = arg;
    uint64_t done = 0;
    if (c->csum) {
        /* the daemon is idle meanwhile: its core checksums while this one writes */
        pdcbb_err_t rc = pdcbb_csum_pwrite(c->fd, &c->size, c->obj, array_off,
                                           c->data + packed_off, len, c->csum, &c->err, 1);
        if (rc != PDCBB_OK && c->err == 0)
            c->err = rc == PDCBB_ERR_NOMEM ? ENOMEM : EIO;
        return rc == PDCBB_OK ? 0 : -1;
    }
    while (done < len) {
        uint8_t *p = c->data + packed_off + done;
        size_t want = (size_t)(len - done);
        ssize_t n = pread(c->fd, p, want, (off_t)(array_off + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            c->err = errno;
            return -1;
        }
        if (n == 0) {
            memset(p, 0, want); /* past the end of the file: never written */
            break;
        }
        done += (uint64_t)n;
    }
    return 0;
}

pdcbb_err_t client_direct_io(unsigned daemon, uint64_t obj, uint64_t dev, uint64_t ino,
                             pdcbb_csum_list_t *csum, const pdcbb_box_t *box, uint32_t ndim,
                             const uint64_t *dims, size_t unit, uint8_t *data)
{
    pdcbb_err_t rc = PDCBB_OK;
    int write = csum != NULL;
    struct stat st;
    if (!client_direct_usable(daemon))
        return client_fail(PDCBB_ERR_INTERNAL, "daemon %u is not on this node", daemon);
    io_ctx_t c = {.fd = file_of(daemon, obj, dev, ino, &rc), .csum = csum, .obj = obj,
                  .data = data};
    if (c.fd < 0)
        return rc;
    if (write && fstat(c.fd, &st) != 0)
        return client_fail(pdcbb_err_from_errno(errno), "the data file of the object on daemon "
                           "%u: %s", daemon, strerror(errno));
    c.size = write ? (uint64_t)st.st_size : 0;
    if (pdcbb_box_runs(box, ndim, dims, unit, run_io, &c) != 0) {
        rc = c.err ? pdcbb_err_from_errno(c.err) : PDCBB_ERR_IO;
        return client_fail(rc, "%s the data file of the object on daemon %u: %s",
                           write ? "writing" : "reading", daemon,
                           c.err ? strerror(c.err) : "bad region");
    }
    return PDCBB_OK;
}

void client_direct_files_close(void)
{
    if (files_ready)
        for (int i = 0; i < FILE_CACHE; i++)
            if (files[i].fd >= 0) {
                close(files[i].fd);
                files[i].fd = -1;
            }
}

void client_direct_close(void)
{
    client_direct_files_close();
    for (unsigned i = 0; i < ndaemons; i++)
        if (daemons[i].state == 1 && daemons[i].dirfd >= 0)
            close(daemons[i].dirfd);
    free(daemons);
    daemons = NULL;
    ndaemons = 0;
}
