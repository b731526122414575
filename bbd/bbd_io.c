/* bbd_io.c - the I/O thread that performs region writes (see bbd_io.h). */
#include "bbd_io.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bbd.h"
#include "pdcbb_grow.h"
#include "pdcbb_log.h"

/* A daemon's I/O thread (d->io, from bbd_io_start to bbd_io_stop). */
struct bbd_io {
    pthread_t thread;
    pthread_mutex_t lock; /* the lists and stop */
    pthread_cond_t cond;
    bbd_io_batch_t *todo_head, *todo_tail, *done_head, *done_tail;
    /* Batches submitted and not yet taken back: changed under lock, read without it (the event
     * loop asks on every pass). */
    _Atomic unsigned in_flight;
    int efd; /* eventfd: batches done */
    int stop;
};

static void push(bbd_io_batch_t **head, bbd_io_batch_t **tail, bbd_io_batch_t *b)
{
    b->next = NULL;
    if (*tail)
        (*tail)->next = b;
    else
        *head = b;
    *tail = b;
}

static void run_batch(bbd_io_batch_t *b)
{
    int last = -1;
    uint64_t size = 0;
    for (uint32_t i = 0; i < b->nruns; i++) {
        bbd_io_run_t *r = &b->runs[i];
        if (b->results[r->region] != PDCBB_OK)
            continue;
        struct stat st;
        int err = 0;
        pdcbb_err_t rc = PDCBB_OK;
        if (r->fd != last) { /* runs of one region share a descriptor */
            if (fstat(r->fd, &st) != 0)
                err = errno, rc = PDCBB_ERR_IO;
            size = (uint64_t)st.st_size;
            last = r->fd;
        }
        if (rc == PDCBB_OK)
            rc = pdcbb_csum_pwrite(r->fd, &size, r->obj, r->off, r->src, r->len, &b->csum, &err,
                                   0);
        if (rc != PDCBB_OK) {
            /* updates of bytes not written may be in the list: send none, the blocks are then
             * checksummed from their files (bbd_csum_end) */
            b->csum.n = 0;
            b->results[r->region] = (uint64_t)(uint32_t)(err ? pdcbb_err_from_errno(err) : rc);
            last = -1;
            PDCBB_ERROR("write to object %#llx failed: %s", (unsigned long long)r->obj,
                        err ? strerror(err) : pdcbb_strerror(rc));
        }
    }
}

static void *io_main(void *arg)
{
    struct bbd_io *io = arg;
    pthread_mutex_lock(&io->lock);
    for (;;) {
        while (io->todo_head == NULL && !io->stop)
            pthread_cond_wait(&io->cond, &io->lock);
        if (io->todo_head == NULL && io->stop)
            break;
        bbd_io_batch_t *b = io->todo_head;
        io->todo_head = b->next;
        if (io->todo_head == NULL)
            io->todo_tail = NULL;
        pthread_mutex_unlock(&io->lock);
        run_batch(b);
        pthread_mutex_lock(&io->lock);
        push(&io->done_head, &io->done_tail, b);
        uint64_t one = 1;
        ssize_t w = write(io->efd, &one, sizeof(one));
        (void)w;
    }
    pthread_mutex_unlock(&io->lock);
    return NULL;
}

pdcbb_err_t bbd_io_start(struct bbd *d)
{
    struct bbd_io *io = calloc(1, sizeof(*io));
    if (io == NULL)
        return PDCBB_ERR_NOMEM;
    pthread_mutex_init(&io->lock, NULL);
    pthread_cond_init(&io->cond, NULL);
    io->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pdcbb_err_t rc = io->efd < 0 ? pdcbb_err_from_errno(errno) : PDCBB_OK;
    /* Shutdown signals stay blocked in this thread (inherited mask): they reach the loop. */
    if (rc == PDCBB_OK && pthread_create(&io->thread, NULL, io_main, io) != 0)
        rc = PDCBB_ERR_INTERNAL;
    if (rc != PDCBB_OK) {
        if (io->efd >= 0)
            close(io->efd);
        pthread_cond_destroy(&io->cond);
        pthread_mutex_destroy(&io->lock);
        free(io);
        return rc;
    }
    d->io = io;
    return PDCBB_OK;
}

void bbd_io_stop(struct bbd *d)
{
    struct bbd_io *io = d->io;
    if (io == NULL)
        return;
    pthread_mutex_lock(&io->lock);
    io->stop = 1;
    pthread_cond_signal(&io->cond);
    pthread_mutex_unlock(&io->lock);
    pthread_join(io->thread, NULL);
    close(io->efd);
    pthread_cond_destroy(&io->cond);
    pthread_mutex_destroy(&io->lock);
    free(io);
    d->io = NULL;
}

int bbd_io_event_fd(struct bbd *d)
{
    return d->io ? d->io->efd : -1;
}

pdcbb_err_t bbd_io_add_run(bbd_io_batch_t *b, int fd, const uint8_t *src, uint64_t len,
                           uint64_t off, uint32_t region, uint64_t obj)
{
    bbd_io_run_t *g = pdcbb_grow(b->runs, b->nruns, &b->cap, sizeof(*g), 16);
    if (g == NULL)
        return PDCBB_ERR_NOMEM;
    b->runs = g;
    /* Runs of one region share a descriptor: dup once per region. */
    int own = -1;
    if (b->nruns > 0 && b->runs[b->nruns - 1].region == region &&
        b->runs[b->nruns - 1].obj == obj)
        own = b->runs[b->nruns - 1].fd;
    else if ((own = dup(fd)) < 0)
        return pdcbb_err_from_errno(errno);
    b->runs[b->nruns++] = (bbd_io_run_t){own, src, len, off, region, obj};
    return PDCBB_OK;
}

void bbd_io_submit(struct bbd *d, bbd_io_batch_t *b)
{
    struct bbd_io *io = d->io;
    pthread_mutex_lock(&io->lock);
    push(&io->todo_head, &io->todo_tail, b);
    io->in_flight++;
    pthread_cond_signal(&io->cond);
    pthread_mutex_unlock(&io->lock);
}

bbd_io_batch_t *bbd_io_take_done(struct bbd *d)
{
    struct bbd_io *io = d->io;
    uint64_t n;
    ssize_t r = read(io->efd, &n, sizeof(n));
    (void)r;
    pthread_mutex_lock(&io->lock);
    bbd_io_batch_t *b = io->done_head;
    io->done_head = io->done_tail = NULL;
    for (bbd_io_batch_t *x = b; x; x = x->next)
        io->in_flight--;
    pthread_mutex_unlock(&io->lock);
    return b;
}

unsigned bbd_io_in_flight(struct bbd *d)
{
    return d->io ? atomic_load_explicit(&d->io->in_flight, memory_order_relaxed) : 0;
}

void bbd_io_batch_free(bbd_io_batch_t *b)
{
    if (b == NULL)
        return;
    int last = -1;
    for (uint32_t i = 0; i < b->nruns; i++)
        if (b->runs[i].fd != last) {
            close(b->runs[i].fd);
            last = b->runs[i].fd;
        }
    free(b->runs);
    free(b->results);
    bbd_csum_touch_free(&b->touch);
    pdcbb_csum_list_free(&b->csum);
    free(b);
}
