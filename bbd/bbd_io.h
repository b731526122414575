/*
 * bbd_io.h - the daemon's I/O thread: region writes leave the event loop.
 *
 * A DATA_WRITE needs two copies: the rendezvous pull of the client's data into a staging
 * buffer, then the write into the object's data file. Done one after the other on the event
 * thread they cap a daemon at about half of a raw file write (docs/PERFORMANCE.md). So the event
 * thread checks and indexes a write, then hands its runs to this thread and goes on receiving
 * the next message while the file write happens; the reply is sent when the write is done, so
 * a client still learns of success only once its data is in the file.
 *
 * Threads: the I/O thread only runs pwrite(2) on descriptors it owns (dup'ed), computing each
 * block's checksum update just before its bytes are written (pdcbb_csum_pwrite), and touches no
 * UCX or LMDB state; finished batches come back through an eventfd that the event loop polls,
 * and everything else (replies, accounting, buffers) happens on the event thread. Batches run
 * in submission order, and the event thread drains them before any read or other data op, so
 * every access sees the writes answered before it.
 */
#ifndef BBD_IO_H
#define BBD_IO_H

#include <stddef.h>
#include <stdint.h>

#include "bbd_csum.h"
#include "pdcbb_error.h"
#include "pdcbb_proto.h"

struct bbd;
struct bbd_conn;

typedef struct bbd_io_run {
    int fd;            /* dup'ed; closed by the batch */
    const uint8_t *src;
    uint64_t len;
    uint64_t off;
    uint32_t region;   /* index into results */
    uint64_t obj;
} bbd_io_run_t;

typedef struct bbd_io_batch {
    struct bbd_io_batch *next;
    struct bbd_conn *conn;   /* where the reply goes (a reference is held) */
    pdcbb_msg_hdr_t hdr;     /* the request's header (op, request id) */
    uint64_t *results;       /* one status per region; I/O errors are filled in */
    uint32_t nresults;
    bbd_io_run_t *runs;
    uint32_t nruns;
    size_t cap;
    void *staging;           /* the received bulk part, released when done */
    uint64_t bytes;          /* reserved against capacity until done */
    bbd_csum_touch_t touch;  /* the blocks its regions write (counted as writers) */
    pdcbb_csum_list_t csum;  /* their checksum updates, computed by the I/O thread */
} bbd_io_batch_t;

/* Start d's I/O thread (d->io); PDCBB_ERR_NOMEM, an errno-mapped error or
 * PDCBB_ERR_INTERNAL (no thread). */
pdcbb_err_t bbd_io_start(struct bbd *d);
/* Let the thread finish the batches submitted, then end it (d->io NULL after; accepts none). */
void bbd_io_stop(struct bbd *d);
/* The eventfd that becomes readable when batches finish (-1 before bbd_io_start). */
int bbd_io_event_fd(struct bbd *d);
/* Add a run (fd is dup'ed here); PDCBB_ERR_NOMEM or an errno-mapped error. */
pdcbb_err_t bbd_io_add_run(bbd_io_batch_t *b, int fd, const uint8_t *src, uint64_t len,
                           uint64_t off, uint32_t region, uint64_t obj);
void bbd_io_submit(struct bbd *d, bbd_io_batch_t *b);
/* Take the finished batches (oldest first), or NULL. */
bbd_io_batch_t *bbd_io_take_done(struct bbd *d);
/* Number of batches submitted and not yet taken. */
unsigned bbd_io_in_flight(struct bbd *d);
void bbd_io_batch_free(bbd_io_batch_t *b);

#endif
