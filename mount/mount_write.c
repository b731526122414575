/*
 * mount_write.c - the mount's request loop and its writer thread (mount_write.h).
 *
 * Why: a write through the mount costs a copy from the writer through /dev/fuse into the
 * request's buffer, then the store into the daemon's data file (libpdc's direct path: a copy,
 * its CRC-32C and two daemon round trips). One thread doing both in turn left the other core
 * idle. Here the loop reads the next request while the writer thread stores the last ones,
 * and the writer thread stores every write queued meanwhile with one batch of transfers
 * (PDCregion_transfer_start_all: one direct request and one DONE per daemon for the batch).
 *
 * The request buffers are SLOTS of ours, handed to libfuse for each read of /dev/fuse (libfuse
 * reads into a buffer it is given); a write's bytes stay where the kernel put them until they
 * are stored, and the loop reads the next request into a free slot. No splice (op_init), so a
 * request is always in memory.
 *
 * Ordering: the writer thread takes the queue in order and stores one batch at a time; a batch
 * never holds two writes to overlapping bytes of one file (the later one starts the next
 * batch). Every request that is not a write or a forget waits first until the queue is stored
 * (so a read, stat, flush, close, truncate, rename... of any file sees every write before it).
 */
#define FUSE_USE_VERSION 34
#include "mount_write.h"

#include <errno.h>
#include <fuse3/fuse_lowlevel.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mount_io.h"
#include "mount_kernel.h"

/* Request buffers: each at least what libfuse reads at a time (max_write, 1 MiB, plus its 4 KiB
 * of header room; libfuse 3.14 reads 256 pages + 4 KiB before INIT). Eight: the writer thread's
 * batch and the loop's next requests. */
#define SLOTS      8
#define SLOT_BYTES (((size_t)1 << 20) + ((size_t)64 << 10))
#define BATCH_MAX  (SLOTS - 1)
_Static_assert(BATCH_MAX <= MOUNT_XFER_MAX, "a batch is one mount_transfers call");

enum { SLOT_FREE, SLOT_LOOP, SLOT_QUEUED, SLOT_STORING, SLOT_STORED };

typedef struct {
    char *mem;
    int state;
    pdcid_t obj;
    uint64_t ino, off, len;
    const void *data;
    pdcbb_err_t rc;
    char msg[240];
} slot_t;

static slot_t slots[SLOTS];
static unsigned queue[SLOTS], qhead, qlen; /* SLOT_QUEUED slots, oldest first */
static unsigned storing;                   /* slots the writer thread took and has not stored */
static unsigned cur;                       /* the loop's slot */
static int taken;                          /* the request in cur was queued */
static int stopping;
static mount_write_done_fn done_fn;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER, stored_cv = PTHREAD_COND_INITIALIZER;

/* Store slots b[0..n) with one batch of transfers; if the batch fails, each alone (a write is
 * idempotent), so that each write gets its own result. */
static void store_batch(slot_t **b, unsigned n)
{
    mount_xfer_t t[BATCH_MAX];
    for (unsigned i = 0; i < n; i++)
        t[i] = (mount_xfer_t){b[i]->obj, (void *)b[i]->data, 1, &b[i]->off, &b[i]->len};
    pdcbb_err_t rc = mount_transfers(PDC_WRITE, n, t);
    for (unsigned i = 0; i < n; i++) {
        pdcbb_err_t one = rc == PDCBB_OK || n == 1 ? rc : mount_transfers(PDC_WRITE, 1, &t[i]);
        b[i]->rc = one;
        if (one != PDCBB_OK)
            snprintf(b[i]->msg, sizeof(b[i]->msg), "%s", PDCbb_last_error_message());
    }
}

static int overlaps(const slot_t *a, const slot_t *b)
{
    return a->ino == b->ino && a->off < b->off + b->len && b->off < a->off + a->len;
}

static void *writer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (qlen == 0 && !stopping)
            pthread_cond_wait(&work_cv, &mu);
        if (qlen == 0)
            break;
        slot_t *b[BATCH_MAX];
        unsigned n = 0;
        while (qlen > 0 && n < BATCH_MAX) {
            slot_t *s = &slots[queue[qhead]];
            int clash = 0;
            for (unsigned i = 0; i < n && !clash; i++)
                clash = overlaps(b[i], s);
            if (clash)
                break;
            qhead = (qhead + 1) % SLOTS, qlen--;
            s->state = SLOT_STORING;
            b[n++] = s;
        }
        storing = n;
        pthread_mutex_unlock(&mu);
        store_batch(b, n);
        pthread_mutex_lock(&mu);
        for (unsigned i = 0; i < n; i++)
            b[i]->state = SLOT_STORED;
        storing = 0;
        pthread_cond_broadcast(&stored_cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

void mount_write_reap(void)
{
    slot_t got[SLOTS];
    unsigned n = 0;
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < SLOTS; i++)
        if (slots[i].state == SLOT_STORED) {
            got[n++] = slots[i];
            slots[i].state = SLOT_FREE;
        }
    pthread_mutex_unlock(&mu);
    for (unsigned i = 0; i < n; i++)
        done_fn(got[i].ino, got[i].off, got[i].len, got[i].rc, got[i].msg);
}

void mount_write_wait(void)
{
    pthread_mutex_lock(&mu);
    while (qlen > 0 || storing > 0)
        pthread_cond_wait(&stored_cv, &mu);
    pthread_mutex_unlock(&mu);
    mount_write_reap();
}

void mount_write_queue(pdcid_t obj, uint64_t ino, const void *data, uint64_t off, uint64_t len)
{
    slot_t *s = &slots[cur];
    if ((const char *)data < s->mem || (const char *)data + len > s->mem + SLOT_BYTES) {
        /* not in our buffer (a libfuse that copied the request): stored here and now */
        mount_write_wait();
        pdcbb_err_t rc = mount_transfer(obj, PDC_WRITE, (void *)data, 1, &off, &len);
        done_fn(ino, off, len, rc, rc == PDCBB_OK ? "" : PDCbb_last_error_message());
        return;
    }
    s->obj = obj, s->ino = ino, s->data = data, s->off = off, s->len = len;
    s->rc = PDCBB_OK, s->msg[0] = '\0';
    pthread_mutex_lock(&mu);
    s->state = SLOT_QUEUED;
    queue[(qhead + qlen) % SLOTS] = cur;
    qlen++;
    pthread_cond_signal(&work_cv);
    pthread_mutex_unlock(&mu);
    taken = 1;
}

/* A free slot for the loop's next request: one whose write was stored (its result told) or
 * never used; waits for the writer thread when every slot holds a write. */
static unsigned next_slot(void)
{
    for (;;) {
        mount_write_reap();
        pthread_mutex_lock(&mu);
        int stored = 0;
        for (unsigned i = 0; i < SLOTS; i++) {
            if (slots[i].state == SLOT_FREE) {
                slots[i].state = SLOT_LOOP;
                pthread_mutex_unlock(&mu);
                return i;
            }
            stored |= slots[i].state == SLOT_STORED;
        }
        if (!stored) /* the writer thread wakes us when it stored its batch */
            pthread_cond_wait(&stored_cv, &mu);
        pthread_mutex_unlock(&mu);
    }
}

/* A request that must see every write before it: any but a write and a forget (no reply). */
static int needs_writes(const struct fuse_buf *fb)
{
    if (fb->size < sizeof(struct fuse_in_header))
        return 1;
    const struct fuse_in_header *h = fb->mem;
    return h->opcode != FUSE_WRITE && h->opcode != FUSE_FORGET && h->opcode != FUSE_BATCH_FORGET;
}

int mount_loop(struct fuse_session *se, mount_write_done_fn done, void (*on_init)(void))
{
    done_fn = done;
    for (unsigned i = 0; i < SLOTS; i++) {
        if ((slots[i].mem = malloc(SLOT_BYTES)) == NULL) {
            fprintf(stderr, "pdcbb_mount: out of memory for the request buffers\n");
            for (unsigned k = 0; k < i; k++)
                free(slots[k].mem);
            return -1;
        }
        slots[i].state = SLOT_FREE;
    }
    pthread_t writer;
    if ((errno = pthread_create(&writer, NULL, writer_main, NULL)) != 0) {
        perror("pdcbb_mount: cannot start the writer thread");
        for (unsigned i = 0; i < SLOTS; i++)
            free(slots[i].mem);
        return -1;
    }
    cur = next_slot();
    int res = 0;
    while (!fuse_session_exited(se)) {
        struct fuse_buf fb = {.mem = slots[cur].mem, .size = SLOT_BYTES};
        res = fuse_session_receive_buf(se, &fb);
        if (res == -EINTR)
            continue;
        if (res <= 0)
            break;
        if (needs_writes(&fb))
            mount_write_wait();
        mount_kernel_saw(&fb);
        int init = ((const struct fuse_in_header *)fb.mem)->opcode == FUSE_INIT;
        taken = 0;
        fuse_session_process_buf(se, &fb);
        if (taken)
            cur = next_slot();
        if (init && on_init && !fuse_session_exited(se))
            on_init();
    }
    mount_write_wait();
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_signal(&work_cv);
    pthread_mutex_unlock(&mu);
    pthread_join(writer, NULL);
    for (unsigned i = 0; i < SLOTS; i++)
        free(slots[i].mem);
    fuse_session_reset(se);
    return res < 0 ? res : 0;
}
