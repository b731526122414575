/*
 * bbd_csum.h - the daemon's side of the block checksums of region data (common/pdcbb_csum.h,
 * docs/INTERNALS.md "Checksums"): the records in the store (PDCBB_T_CSUM), the checks when the
 * daemon starts on existing files and before it serves bytes it has not checked since it
 * started, and the bookkeeping of writes under way.
 *
 * A write marks the blocks it touches PENDING in the transaction that accepts it (so a daemon
 * that dies before the write is done knows those blocks' bytes may not match), counts itself
 * as a writer of each in memory, and, when its bytes are in the file, applies its updates and
 * clears PENDING once no other write of the block is under way. At start, PENDING blocks are
 * checksummed again from the file (their write was never acknowledged), every file's size is
 * checked against what was written (truncation), and files that arrived without checksums
 * (stage-in) are checksummed. Serving checks each block once per daemon life.
 *
 * Threads: the event thread only (the I/O thread computes updates into its batch).
 */
#ifndef BBD_CSUM_H
#define BBD_CSUM_H

#include <stdint.h>

#include "pdcbb_csum.h"
#include "pdcbb_error.h"
#include "pdcbb_region.h"
#include "pdcbb_store.h"

struct bbd;
struct bbd_req;

/* The blocks a write touches: (object, first block, last block) triples. */
typedef struct bbd_csum_touch {
    uint64_t *v;
    uint32_t n;      /* triples */
    uint32_t sealed; /* triples before this one are another region's: never merged into */
    size_t cap;      /* words */
} bbd_csum_touch_t;

/* A damaged range found while serving (for the reply: docs/PROTOCOL.md). */
typedef struct bbd_csum_bad {
    uint64_t start, end; /* bytes [start, end) of the object's data (row-major) */
    int kind;            /* PDCBB_CSUM_BAD_CRC or PDCBB_CSUM_BAD_SIZE */
} bbd_csum_bad_t;

/* At start, after stage-in: the checks above, in one write transaction. */
pdcbb_err_t bbd_csum_open(struct bbd *d, char *err, size_t errlen);
/* Forget what d knows of its blocks (d->csum freed; NULL after). */
void bbd_csum_close(struct bbd *d);

/* The blocks of the runs of box (an object of ndim dims, unit bytes an element) into t, as new
 * triples (bbd_csum_begin(.., from = t->n before the call) counts exactly these). */
pdcbb_err_t bbd_csum_touch_box(bbd_csum_touch_t *t, uint64_t obj, const pdcbb_box_t *box,
                               uint32_t ndim, const uint64_t *dims, uint64_t unit);
/* The blocks of bytes [off, off + len) of obj into t. */
pdcbb_err_t bbd_csum_touch_range(bbd_csum_touch_t *t, uint64_t obj, uint64_t off, uint64_t len);
void bbd_csum_touch_free(bbd_csum_touch_t *t);

/* A write of the blocks of t[from..] begins: PENDING in txn, one more writer each. */
pdcbb_err_t bbd_csum_begin(struct bbd *d, pdcbb_txn_t *txn, const bbd_csum_touch_t *t,
                           uint32_t from);
/*
 * The write of t ended: apply its updates u[0..nu) (each must be a block of t: else
 * PDCBB_ERR_PROTO and nothing is applied), one writer less per block, PENDING cleared where
 * none is left. Blocks without an update (a failed write) stay PENDING: they are checksummed
 * again from the file when the daemon next starts.
 */
pdcbb_err_t bbd_csum_end(struct bbd *d, pdcbb_txn_t *txn, const bbd_csum_touch_t *t,
                         const pdcbb_csum_upd_t *u, size_t nu);
/* Forget the writers of t (a write that was accepted but will never run). */
void bbd_csum_abandon(struct bbd *d, const bbd_csum_touch_t *t);

/*
 * Before serving the blocks of t[from..] from fd (obj's file): check each block not checked
 * since this daemon started against its record. PDCBB_ERR_CORRUPT with *bad naming the first
 * damaged block (logged with the object); I/O and store errors as such.
 */
pdcbb_err_t bbd_csum_serve(struct bbd_req *r, int fd, const bbd_csum_touch_t *t, uint32_t from,
                           bbd_csum_bad_t *bad);
/* The same for the runs of one region (a convenience over touch_box + serve). */
pdcbb_err_t bbd_csum_serve_box(struct bbd_req *r, int fd, uint64_t obj, const pdcbb_box_t *box,
                               uint32_t ndim, const uint64_t *dims, uint64_t unit,
                               bbd_csum_bad_t *bad);

/* The blocks of t were rewritten by this daemon in place (strided writes) after serve checked
 * them: checksum them again from fd. */
pdcbb_err_t bbd_csum_rewrite(struct bbd_req *r, int fd, const bbd_csum_touch_t *t);
/* obj's data file is now `size` bytes (resize): drop the records past it and, when
 * last_good (serve found the last block good before the cut), checksum the last block again
 * (else it keeps its record and stays a mismatch). */
pdcbb_err_t bbd_csum_truncate(struct bbd_req *r, int fd, uint64_t obj, uint64_t size,
                              int last_good);
/* A finished write batch of the I/O thread (bbd_io.h): its updates, in one transaction. */
struct bbd_io_batch;
void bbd_csum_batch_end(struct bbd *d, struct bbd_io_batch *b);
/* obj's data is gone here: drop its records. */
pdcbb_err_t bbd_csum_drop(struct bbd_req *r, uint64_t obj);

#endif
