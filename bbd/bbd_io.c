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

#include "pdcbb_grow.h"
#include "pdcbb_log.h"

static pthread_t io_thread;
static pthread_mutex_t io_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t io_cond = PTHREAD_COND_INITIALIZER;
static bbd_io_batch_t *todo_head, *todo_tail, *done_head, *done_tail;
/* Batches submitted and not yet taken back: changed under io_lock, read without it (the event
 * loop asks on every pass). */
static _Atomic unsigned in_flight;
static int io_efd = -1, io_stop, io_running;

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
    (void)arg;
    pthread_mutex_lock(&io_lock);
    for (;;) {
        while (todo_head == NULL && !io_stop)
            pthread_cond_wait(&io_cond, &io_lock);
        if (todo_head == NULL && io_stop)
            break;
        bbd_io_batch_t *b = todo_head;
        todo_head = b->next;
        if (todo_head == NULL)
            todo_tail = NULL;
        pthread_mutex_unlock(&io_lock);
        run_batch(b);
        pthread_mutex_lock(&io_lock);
        push(&done_head, &done_tail, b);
        uint64_t one = 1;
        ssize_t w = write(io_efd, &one, sizeof(one));
        (void)w;
    }
    pthread_mutex_unlock(&io_lock);
    return NULL;
}

pdcbb_err_t bbd_io_start(struct bbd *d)
{
    (void)d;
    io_stop = 0; /* a process may start the thread again after bbd_io_stop (unit tests) */
    io_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (io_efd < 0)
        return pdcbb_err_from_errno(errno);
    /* Shutdown signals stay blocked in this thread (inherited mask): they reach the loop. */
    if (pthread_create(&io_thread, NULL, io_main, NULL) != 0) {
        close(io_efd);
        io_efd = -1;
        return PDCBB_ERR_INTERNAL;
    }
    io_running = 1;
    return PDCBB_OK;
}

void bbd_io_stop(struct bbd *d)
{
    (void)d;
    if (!io_running)
        return;
    pthread_mutex_lock(&io_lock);
    io_stop = 1;
    pthread_cond_signal(&io_cond);
    pthread_mutex_unlock(&io_lock);
    pthread_join(io_thread, NULL);
    io_running = 0;
    close(io_efd);
    io_efd = -1;
}

int bbd_io_event_fd(void)
{
    return io_efd;
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

void bbd_io_submit(bbd_io_batch_t *b)
{
    pthread_mutex_lock(&io_lock);
    push(&todo_head, &todo_tail, b);
    in_flight++;
    pthread_cond_signal(&io_cond);
    pthread_mutex_unlock(&io_lock);
}

bbd_io_batch_t *bbd_io_take_done(void)
{
    uint64_t n;
    ssize_t r = read(io_efd, &n, sizeof(n));
    (void)r;
    pthread_mutex_lock(&io_lock);
    bbd_io_batch_t *b = done_head;
    done_head = done_tail = NULL;
    for (bbd_io_batch_t *x = b; x; x = x->next)
        in_flight--;
    pthread_mutex_unlock(&io_lock);
    return b;
}

unsigned bbd_io_in_flight(void)
{
    return atomic_load_explicit(&in_flight, memory_order_relaxed);
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
