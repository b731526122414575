/*
 * mount_read.c - the mount's read-ahead window (mount_read.h).
 */
#include "mount_read.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mount_io.h"
#include "pdc_ns.h"

/* The read-ahead window: bytes of one file read ahead of the kernel's requests. The kernel
 * asks for 128 KiB at a time (its read-ahead for a FUSE mount), each a transfer of its own and
 * too small for libpdc's direct path (256 KiB and more): a read that goes on where the last one
 * of its file ended fetches up to RA_WINDOW at once, and the next requests are answered from
 * here. Dropped when the file is written, cut or opened on this node, so it never holds bytes
 * older than the kernel's page cache may (which is dropped at every open: close-to-open). */
#define RA_WINDOW ((uint64_t)4 << 20)
/* When the window's bytes are all on this node's daemon, they are not copied here: the window
 * is the daemon's data file of the object (PDCbb_obj_local_read, which the daemon checked), and
 * requests are answered by splicing from it (no copy in this process); larger, as it costs no
 * memory. */
#define RA_WINDOW_FILE ((uint64_t)16 << 20)
static struct {
    uint64_t ino, off, len; /* [off, off + len) of file ino; len 0: empty */
    uint64_t cap;           /* bytes at buf */
    char *buf;
    int fd;         /* >= 0: the window is this data file (same offsets), not buf */
    uint64_t valid; /* with fd: [off, off + valid) is in the file, the rest reads as zeros */
} ra = {.fd = -1};

/*
 * The replier thread: answers reads from the data file (a splice, whose copy into the reader's
 * pages the kernel makes in the caller's time) while the loop takes the next request, such as
 * the other half of a 1 MiB read (the kernel asks for max_read, 512 KiB, at a time). It only
 * splices from ra.fd, which is closed after it is idle.
 */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv, idle_cv;
    pthread_t thread;
    int running, stop;
    int busy; /* a job is set (pending or being answered) */
    fuse_req_t req;
    int fd;
    uint64_t pos;
    size_t size;
} rq = {.mu = PTHREAD_MUTEX_INITIALIZER,
        .cv = PTHREAD_COND_INITIALIZER,
        .idle_cv = PTHREAD_COND_INITIALIZER};

static void splice_reply(fuse_req_t req, int fd, uint64_t pos, size_t size)
{
    struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);
    bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    bv.buf[0].fd = fd;
    bv.buf[0].pos = (off_t)pos;
    fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_NONBLOCK);
}

static void *replier_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&rq.mu);
    for (;;) {
        while (!rq.busy && !rq.stop)
            pthread_cond_wait(&rq.cv, &rq.mu);
        if (!rq.busy)
            break;
        pthread_mutex_unlock(&rq.mu);
        splice_reply(rq.req, rq.fd, rq.pos, rq.size);
        pthread_mutex_lock(&rq.mu);
        rq.busy = 0;
        pthread_cond_broadcast(&rq.idle_cv);
    }
    pthread_mutex_unlock(&rq.mu);
    return NULL;
}

/* Hand a splice reply to the replier when it is idle, else make it here: two replies at a time,
 * one per core. */
static void queue_reply(fuse_req_t req, int fd, uint64_t pos, size_t size)
{
    pthread_mutex_lock(&rq.mu);
    if (rq.running && !rq.busy) {
        rq.req = req, rq.fd = fd, rq.pos = pos, rq.size = size;
        rq.busy = 1;
        pthread_cond_signal(&rq.cv);
        pthread_mutex_unlock(&rq.mu);
        return;
    }
    pthread_mutex_unlock(&rq.mu);
    splice_reply(req, fd, pos, size);
}

static void replies_wait(void)
{
    pthread_mutex_lock(&rq.mu);
    while (rq.busy)
        pthread_cond_wait(&rq.idle_cv, &rq.mu);
    pthread_mutex_unlock(&rq.mu);
}

void mount_read_start(void)
{
    rq.running = pthread_create(&rq.thread, NULL, replier_main, NULL) == 0;
}

void mount_read_stop(void)
{
    if (!rq.running)
        return;
    pthread_mutex_lock(&rq.mu);
    rq.stop = 1;
    pthread_cond_signal(&rq.cv);
    pthread_mutex_unlock(&rq.mu);
    pthread_join(rq.thread, NULL);
    rq.running = 0;
}

void mount_read_drop(uint64_t ino)
{
    if (ra.ino != ino)
        return;
    ra.len = 0;
    if (ra.fd >= 0) {
        replies_wait();
        close(ra.fd);
    }
    ra.fd = -1;
}

/* Fill the window with want bytes of file ino (object obj) from from: the daemon's data file
 * when they are all on this node's daemon, else a transfer into buf (at least size bytes). */
static pdcbb_err_t ra_fill(pdcid_t obj, uint64_t ino, uint64_t from, uint64_t want, uint64_t size)
{
    mount_read_drop(ra.ino);
    pdcbb_err_t rc = PDCbb_obj_local_read(obj, from, want, &ra.fd, &ra.valid);
    if (rc == PDCBB_OK && ra.fd >= 0) {
        ra.ino = ino, ra.off = from, ra.len = want;
        return PDCBB_OK;
    }
    if (rc != PDCBB_OK && rc != PDCBB_ERR_UNSUPPORTED)
        return rc;
    if (want > RA_WINDOW) /* into memory: the smaller window */
        want = RA_WINDOW > size ? RA_WINDOW : size;
    if (want > ra.cap) {
        char *b = realloc(ra.buf, want);
        if (b == NULL)
            return PDCBB_ERR_NOMEM;
        ra.buf = b, ra.cap = want;
    }
    if ((rc = mount_transfer(obj, PDC_READ, ra.buf, 1, &from, &want)) != PDCBB_OK)
        return rc;
    ra.ino = ino, ra.off = from, ra.len = want;
    return PDCBB_OK;
}

/* Answer a read of [from, from + size) from the window, which holds it. */
static void ra_reply(fuse_req_t req, uint64_t from, size_t size)
{
    if (ra.fd < 0) {
        fuse_reply_buf(req, ra.buf + (from - ra.off), size);
        return;
    }
    if (from + size <= ra.off + ra.valid) { /* all in the data file: spliced from it */
        queue_reply(req, ra.fd, from, size);
        return;
    }
    /* past the data file's end (never written): zeros after what it has */
    if (size > ra.cap) {
        char *b = realloc(ra.buf, size);
        if (b == NULL) {
            fuse_reply_err(req, ENOMEM);
            return;
        }
        ra.buf = b, ra.cap = size;
    }
    uint64_t in_file = ra.off + ra.valid > from ? ra.off + ra.valid - from : 0;
    ssize_t got = in_file ? pread(ra.fd, ra.buf, (size_t)in_file, (off_t)from) : 0;
    if (got < 0 || (uint64_t)got != in_file) {
        fprintf(stderr, "pdcbb_mount: read: the data file of file %#" PRIx64 ": %s\n", ra.ino,
                got < 0 ? strerror(errno) : "shorter than the daemon said");
        fuse_reply_err(req, EIO);
        return;
    }
    memset(ra.buf + in_file, 0, size - in_file);
    fuse_reply_buf(req, ra.buf, size);
}

pdcbb_err_t mount_read_reply(fuse_req_t req, pdcid_t obj, uint64_t ino, uint64_t from, size_t size,
                             uint64_t end, int sequential)
{
    uint64_t to = from + size;
    if (ra.len == 0 || ra.ino != ino || from < ra.off || to > ra.off + ra.len) {
        /* not in the window: fill it from here, with more than asked if the read goes on */
        uint64_t want = sequential ? RA_WINDOW_FILE : size;
        if (want < size)
            want = size;
        if (want > end - from)
            want = end - from;
        pdcbb_err_t rc = ra_fill(obj, ino, from, want, size);
        if (rc != PDCBB_OK)
            return rc;
    }
    ra_reply(req, from, size);
    return PDCBB_OK;
}
