/*
 * drain_write_copy.c - step 3 of draining a rank (drain_write.c): copying the planned extents
 * into the rank's data file and verifying them, with a reader and a verifier thread beside the
 * writing caller (below).
 *
 * Verification: the re-read goes through the page cache (it would after fdatasync too, unless
 * the pages were dropped first), so it checks what the file system holds for the file (short
 * or misplaced writes, a file changed under us, our own bugs), not the device's media. Since a
 * re-read before or after the sync reads the same pages, it runs behind the writer rather than
 * after the sync, which keeps the drain close to the speed of a plain copy. A failed fdatasync
 * fails the rank.
 *
 * Page cache: the writer starts writeback every DW_WRITEBACK_STEP bytes, and a range both
 * verified and one step behind the last writeback started is waited for (it is on the device
 * then) and dropped (POSIX_FADV_DONTNEED). So a drain holds a few steps of its data file in
 * memory however large the file, and the copy writes into the pages it just gave back instead
 * of taking fresh ones for every byte: fresh memory can cost more than the copy (on this VM
 * the host hands back pages the guest freed a while ago one fault at a time: a drain that took
 * 1 GiB of fresh pages copied at a third of its speed), and a drain should not evict the
 * node's other cached data either. What is left is dropped after the fdatasync.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drain_write_internal.h"
#include "pdcbb_crc32c.h"
#include "pdcbb_grow.h"

#define DW_NBUF 3 /* reader fills one while the writer writes another */
#define DW_WRITEBACK_STEP ((uint64_t)16 << 20) /* writeback started, pages dropped, per step */
/* The reader asks for this much past each read to be read ahead (the device reads on while the
 * reader checksums and waits for a buffer; on data in the page cache it costs a lookup). */
#define DW_READ_AHEAD ((uint64_t)2 * DW_BUF_SIZE)

/* ---------------------------------------------------------------------------------------- */
/* Copy and verify: three threads over one plan.                                              */
/*   reader   (thread) preads the node-local files into buffers, CRCs each extent (and each */
/*            source block, for dw_check_blocks);                                            */
/*   writer   (caller) writes the full buffers to the data file, sequentially;               */
/*   verifier (thread) re-reads each extent from the data file once it is written and        */
/*            compares its CRC.                                                              */
/* The verifier's re-read goes through the page cache, before or after fdatasync alike, so it */
/* runs behind the writer instead of after the sync; the caller syncs when all are done.     */

typedef struct dw_buf {
    uint8_t *data;
    size_t used;
    size_t pieces_done;    /* pieces the reader had finished when it handed this buffer over */
    int last;              /* the reader is done after this buffer */
} dw_buf_t;

typedef struct dw_copy {
    dw_plan_t *plan;
    dw_buf_t bufs[DW_NBUF];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* ring: the reader fills bufs[filled % N], the writer drains bufs[drained % N] */
    uint64_t filled, drained;
    int stop;              /* the writer or the verifier failed: everybody stops */
    int done;              /* the writer wrote the last buffer (or gave up) */
    /* what the verifier may check: pieces [0, pieces_known) are decided, bytes [0, written)
     * of the data file are written */
    size_t pieces_known;
    uint64_t written;
    /* results */
    pdcbb_err_t rrc, vrc;
    char rerr[512], verr[512];
    uint64_t out_bytes;    /* bytes the reader emitted (= the data file's size) */
    dw_blocksums_t *sums;  /* the blocks' checksums the reader computes, or NULL */
    uint64_t verified;     /* bytes the verifier checked (= the data file's bytes [0, verified):
                              kept pieces lie in order); changed under mu */
    int vfd;               /* the data file, opened for reading */
} dw_copy_t;

static int dw_all_zero(const uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i < n && ((uintptr_t)(p + i) & 7); i++)
        if (p[i])
            return 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w)
            return 0;
    }
    for (; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* The reader's block checksum in progress: block `block` of source src (object obj), its
 * bytes [block B, next) read so far (B = PDCBB_CSUM_BLOCK). */
typedef struct dw_bcur {
    int on;
    uint32_t src;
    uint64_t obj, block, next;
    uint32_t crc;
} dw_bcur_t;

static void dw_bsum_push(dw_blocksums_t *s, uint64_t obj, uint64_t block, uint32_t crc)
{
    dw_blocksum_t *g = pdcbb_grow(s->v, s->n, &s->cap, sizeof(*g), 256);
    if (g == NULL) {
        s->nomem = 1; /* that block is read again to check it */
        return;
    }
    s->v = g;
    s->v[s->n++] = (dw_blocksum_t){obj, block, crc};
}

/* End the block in progress: its checksum counts when it was read to its end, or to the end
 * of the file (the bytes past it count as zeros). */
static void dw_bcur_end(dw_copy_t *cp, dw_bcur_t *b)
{
    if (!b->on)
        return;
    b->on = 0;
    uint64_t end = (b->block + 1) * PDCBB_CSUM_BLOCK, size = cp->plan->src_sizes[b->src];
    if (b->next == end)
        dw_bsum_push(cp->sums, b->obj, b->block, b->crc);
    else if (b->next == size && size < end)
        dw_bsum_push(cp->sums, b->obj, b->block, ~pdcbb_crc32c_shift(~b->crc, end - size));
}

/*
 * n bytes of source src (object obj) at offset off, read into data: returns crc extended by
 * them (as pdcbb_crc32c(crc, data, n)), and, when the blocks' checksums are wanted, adds them to
 * the blocks in progress (one CRC pass: each piece of a block is checksummed once and combined).
 */
static uint32_t dw_feed(dw_copy_t *cp, dw_bcur_t *b, uint32_t crc, uint32_t src, uint64_t obj,
                        uint64_t off, const uint8_t *data, uint64_t n)
{
    if (cp->sums == NULL)
        return pdcbb_crc32c(crc, data, (size_t)n);
    if (b->on && (b->src != src || b->next != off))
        dw_bcur_end(cp, b); /* a gap, or another file: that block was not read whole */
    while (n > 0) {
        uint64_t block = off / PDCBB_CSUM_BLOCK, end = (block + 1) * PDCBB_CSUM_BLOCK;
        uint64_t len = n < end - off ? n : end - off;
        uint32_t c = pdcbb_crc32c(0, data, (size_t)len);
        crc = pdcbb_crc32c_combine(crc, c, len);
        if (!b->on && off % PDCBB_CSUM_BLOCK == 0)
            *b = (dw_bcur_t){1, src, obj, block, off, 0};
        if (b->on && b->block == block) {
            b->crc = pdcbb_crc32c_combine(b->crc, c, len);
            b->next = off + len;
            if (b->next == end)
                dw_bcur_end(cp, b);
        }
        off += len;
        data += len;
        n -= len;
    }
    return crc;
}

static int dw_pread_full(int fd, uint8_t *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, buf + done, len - done, (off_t)(off + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = EIO; /* shorter than it was when planned */
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/* Wait for an empty buffer; NULL when told to stop. */
static dw_buf_t *dw_reader_get(dw_copy_t *cp)
{
    pthread_mutex_lock(&cp->mu);
    while (!cp->stop && cp->filled - cp->drained >= DW_NBUF)
        pthread_cond_wait(&cp->cv, &cp->mu);
    dw_buf_t *b = cp->stop ? NULL : &cp->bufs[cp->filled % DW_NBUF];
    pthread_mutex_unlock(&cp->mu);
    if (b) {
        b->used = 0;
        b->last = 0;
    }
    return b;
}

static void dw_reader_put(dw_copy_t *cp, dw_buf_t *b, size_t pieces_done)
{
    b->pieces_done = pieces_done;
    pthread_mutex_lock(&cp->mu);
    cp->filled++;
    pthread_cond_broadcast(&cp->cv);
    pthread_mutex_unlock(&cp->mu);
}

static void *dw_reader(void *arg)
{
    dw_copy_t *cp = arg;
    dw_plan_t *p = cp->plan;
    uint64_t out = 0;
    int fd = -1;
    uint32_t fd_src = UINT32_MAX;
    size_t i = 0;
    dw_bcur_t bc = {0};
    dw_buf_t *b = dw_reader_get(cp);
    for (; b != NULL && i < p->npieces; i++) {
        dw_piece_t *pc = &p->pieces[i];
        if (pc->src != fd_src) {
            if (fd >= 0)
                close(fd);
            fd_src = pc->src;
            fd = open(p->paths[fd_src], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            if (fd < 0 && !(errno == ENOENT && pc->damaged == PDCBB_DRAIN_DAMAGED_TRUNCATED))
                goto read_failed; /* (a lost file has only missing bytes: zeros) */
            if (fd >= 0)
                posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        }
        if (pc->conditional) {
            /* whole in one buffer (planned at most DW_BUF_SIZE), kept only if non-zero */
            if (DW_BUF_SIZE - b->used < pc->len) {
                dw_reader_put(cp, b, i);
                if ((b = dw_reader_get(cp)) == NULL)
                    break;
            }
            if (dw_pread_full(fd, b->data + b->used, (size_t)pc->len, pc->off) != 0)
                goto read_failed;
            uint32_t crc =
                dw_feed(cp, &bc, 0, pc->src, pc->obj, pc->off, b->data + b->used, pc->len);
            if (dw_all_zero(b->data + b->used, (size_t)pc->len))
                continue;
            pc->kept = 1;
            pc->file_offset = out;
            pc->crc = crc;
            b->used += (size_t)pc->len;
            out += pc->len;
            continue;
        }
        pc->kept = 1;
        pc->file_offset = out;
        pc->crc = 0;
        uint64_t done = 0;
        while (done < pc->len) {
            if (b->used == DW_BUF_SIZE) {
                dw_reader_put(cp, b, i);
                if ((b = dw_reader_get(cp)) == NULL)
                    break;
            }
            size_t n = DW_BUF_SIZE - b->used;
            if (n > pc->len - done)
                n = (size_t)(pc->len - done);
            if (pc->damaged == PDCBB_DRAIN_DAMAGED_TRUNCATED) { /* past the file's end: lost */
                memset(b->data + b->used, 0, n);
                pc->crc = pdcbb_crc32c(pc->crc, b->data + b->used, n);
            } else if ((posix_fadvise(fd, (off_t)(pc->off + done + n), (off_t)DW_READ_AHEAD,
                                      POSIX_FADV_WILLNEED),
                        dw_pread_full(fd, b->data + b->used, n, pc->off + done) != 0)) {
                goto read_failed;
            } else {
                pc->crc = dw_feed(cp, &bc, pc->crc, pc->src, pc->obj, pc->off + done,
                                  b->data + b->used, n);
            }
            b->used += n;
            done += n;
            out += n;
        }
        continue;
    read_failed: {
        int e = errno;
        snprintf(cp->rerr, sizeof(cp->rerr), "cannot read %s at offset %" PRIu64 ": %s",
                 p->paths[pc->src], pc->off, strerror(e));
        pthread_mutex_lock(&cp->mu);
        cp->rrc = e == EIO ? PDCBB_ERR_IO : pdcbb_err_from_errno(e);
        pthread_cond_broadcast(&cp->cv);
        pthread_mutex_unlock(&cp->mu);
        b = NULL; /* the writer stops at the error, not at a last buffer */
        break;
    }
    }
    if (fd >= 0)
        close(fd);
    if (cp->sums)
        dw_bcur_end(cp, &bc);
    cp->out_bytes = out;
    if (b != NULL) { /* NULL: stopped by the writer or the verifier, or by a read error */
        b->last = 1;
        dw_reader_put(cp, b, p->npieces);
    }
    return NULL;
}

static void *dw_verifier(void *arg)
{
    dw_copy_t *cp = arg;
    const dw_plan_t *p = cp->plan;
    size_t bufsz = (size_t)4 << 20;
    uint8_t *buf = malloc(bufsz);
    pdcbb_err_t rc = buf ? PDCBB_OK : PDCBB_ERR_NOMEM;
    char msg[512] = "out of memory";
    for (size_t i = 0; rc == PDCBB_OK && i < p->npieces; i++) {
        const dw_piece_t *pc = &p->pieces[i];
        int go = 0;
        pthread_mutex_lock(&cp->mu);
        for (;;) {
            if (cp->stop || cp->rrc != PDCBB_OK)
                break;
            if (cp->pieces_known > i && (!pc->kept || cp->written >= pc->file_offset + pc->len)) {
                go = 1;
                break;
            }
            if (cp->done)
                break;
            pthread_cond_wait(&cp->cv, &cp->mu);
        }
        pthread_mutex_unlock(&cp->mu);
        if (!go)
            break;
        if (!pc->kept)
            continue;
        uint32_t crc = 0;
        uint64_t done = 0;
        while (done < pc->len) {
            size_t n = pc->len - done < bufsz ? (size_t)(pc->len - done) : bufsz;
            if (dw_pread_full(cp->vfd, buf, n, pc->file_offset + done) != 0) {
                rc = PDCBB_ERR_IO;
                snprintf(msg, sizeof(msg), "re-reading offset %" PRIu64 ": %s",
                         pc->file_offset + done, strerror(errno));
                break;
            }
            crc = pdcbb_crc32c(crc, buf, n);
            done += n;
        }
        if (rc == PDCBB_OK && crc != pc->crc) {
            rc = PDCBB_ERR_IO;
            snprintf(msg, sizeof(msg),
                     "checksum mismatch at offset %" PRIu64 " (%" PRIu64 " bytes of object %#" PRIx64
                     "): crc32c %08x of the node-local bytes, %08x read back",
                     pc->file_offset, pc->len, pc->obj, pc->crc, crc);
        }
        if (rc == PDCBB_OK) {
            pthread_mutex_lock(&cp->mu);
            cp->verified += pc->len;
            pthread_mutex_unlock(&cp->mu);
        }
    }
    free(buf);
    if (rc != PDCBB_OK) {
        pthread_mutex_lock(&cp->mu);
        snprintf(cp->verr, sizeof(cp->verr), "%s", msg);
        cp->vrc = rc;
        cp->stop = 1;
        pthread_cond_broadcast(&cp->cv);
        pthread_mutex_unlock(&cp->mu);
    }
    return NULL;
}

static int dw_write_full(int fd, const uint8_t *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = ENOSPC;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/*
 * Copy the plan into fd (the data file at path) and verify it; *out_bytes gets its size, sums
 * the blocks' checksums (unless the plan checked them). The caller syncs afterwards.
 */
pdcbb_err_t dw_copy(dw_ctx_t *c, uint32_t rank, dw_plan_t *p, int fd, const char *path,
                    uint64_t *out_bytes, dw_blocksums_t *sums)
{
    dw_copy_t cp;
    memset(&cp, 0, sizeof(cp));
    cp.plan = p;
    cp.sums = p->crc_checked ? NULL : sums;
    pthread_mutex_init(&cp.mu, NULL);
    pthread_cond_init(&cp.cv, NULL);
    pdcbb_err_t rc = PDCBB_OK;
    int started = 0;
    pthread_t rth, vth;
    if ((cp.vfd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        int e = errno;
        pthread_mutex_destroy(&cp.mu);
        pthread_cond_destroy(&cp.cv);
        return dw_fail_errno(c, e, "cannot re-read", path);
    }
    for (int i = 0; i < DW_NBUF; i++)
        if ((cp.bufs[i].data = malloc(DW_BUF_SIZE)) == NULL)
            rc = PDCBB_ERR_NOMEM;
    if (rc == PDCBB_OK && pthread_create(&rth, NULL, dw_reader, &cp) == 0)
        started |= 1;
    if (rc == PDCBB_OK && (started & 1) && pthread_create(&vth, NULL, dw_verifier, &cp) == 0)
        started |= 2;
    if (started != 3) {
        pthread_mutex_lock(&cp.mu);
        cp.stop = 1;
        pthread_cond_broadcast(&cp.cv);
        pthread_mutex_unlock(&cp.mu);
        rc = PDCBB_ERR_NOMEM;
    }
    int werr = 0;
    uint64_t pos = 0, synced = 0, dropped = 0;
    size_t counted = 0; /* pieces whose objects the progress has counted */
    while (rc == PDCBB_OK) {
        pthread_mutex_lock(&cp.mu);
        while (cp.filled == cp.drained && cp.rrc == PDCBB_OK && !cp.stop)
            pthread_cond_wait(&cp.cv, &cp.mu);
        int have = cp.filled > cp.drained && !cp.stop;
        pthread_mutex_unlock(&cp.mu);
        if (!have)
            break; /* the reader or the verifier failed */
        dw_buf_t *b = &cp.bufs[cp.drained % DW_NBUF];
        if (b->used > 0 && dw_write_full(fd, b->data, b->used) != 0) {
            werr = errno;
            break;
        }
        pos += b->used;
        /* start writeback behind the writer, so that the final sync finds little to do */
        if (pos - synced >= DW_WRITEBACK_STEP) {
            sync_file_range(fd, (off_t)synced, (off_t)(pos - synced), SYNC_FILE_RANGE_WRITE);
            synced = pos;
        }
        c->done_bytes += b->used;
        /* an object is done once its last piece (its pieces are consecutive) is */
        for (; counted < b->pieces_done; counted++)
            if (counted + 1 == p->npieces || p->pieces[counted + 1].obj != p->pieces[counted].obj)
                c->done_objects++;
        int last = b->last;
        pthread_mutex_lock(&cp.mu);
        cp.drained++;
        cp.written = pos;
        cp.pieces_known = b->pieces_done;
        uint64_t upto = cp.verified;
        pthread_cond_broadcast(&cp.cv);
        pthread_mutex_unlock(&cp.mu);
        /* give back the pages of what is verified and a step behind the writeback started:
         * wait until it is on the device (mostly done by then), then drop it */
        uint64_t behind = synced > DW_WRITEBACK_STEP ? synced - DW_WRITEBACK_STEP : 0;
        if (upto > behind)
            upto = behind;
        if (upto >= dropped + DW_WRITEBACK_STEP) {
            if (sync_file_range(fd, (off_t)dropped, (off_t)(upto - dropped),
                                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                    SYNC_FILE_RANGE_WAIT_AFTER) == 0)
                posix_fadvise(fd, (off_t)dropped, (off_t)(upto - dropped), POSIX_FADV_DONTNEED);
            dropped = upto;
        }
        dw_progress(c, rank, 0);
        if (last)
            break;
    }
    pthread_mutex_lock(&cp.mu);
    cp.done = 1;
    if (werr || rc != PDCBB_OK)
        cp.stop = 1;
    pthread_cond_broadcast(&cp.cv);
    pthread_mutex_unlock(&cp.mu);
    if (started & 1)
        pthread_join(rth, NULL);
    if (started & 2)
        pthread_join(vth, NULL);
    for (int i = 0; i < DW_NBUF; i++)
        free(cp.bufs[i].data);
    pthread_mutex_destroy(&cp.mu);
    pthread_cond_destroy(&cp.cv);
    /* verified: its pages need not stay in the node's page cache (dropped once synced) */
    int vfd = cp.vfd;
    if (rc != PDCBB_OK) {
        close(vfd);
        return dw_fail(c, rc, "out of memory for the copy of rank %u", rank);
    }
    if (werr) {
        close(vfd);
        return dw_fail_errno(c, werr, "cannot write", path);
    }
    close(vfd);
    if (cp.rrc != PDCBB_OK)
        return dw_fail(c, cp.rrc, "%s", cp.rerr);
    if (cp.vrc != PDCBB_OK)
        return dw_fail(c, cp.vrc, "verification of %s failed: %s", path, cp.verr);
    if (cp.verified != cp.out_bytes || pos != cp.out_bytes)
        return dw_fail(c, PDCBB_ERR_INTERNAL,
                       "%s: %" PRIu64 " bytes emitted, %" PRIu64 " written, %" PRIu64 " verified",
                       path, cp.out_bytes, pos, cp.verified);
    *out_bytes = cp.out_bytes;
    return PDCBB_OK;
}
