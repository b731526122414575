/*
 * drain_write_internal.h - the state shared by the parts of a node's drain: drain_write.c
 * (the driver: one rank after another, errors, progress), drain_write_store.c (reading a
 * rank's store), drain_write_plan.c (the extents to copy) and drain_write_copy.c (copying and
 * verifying them). Not installed, not used outside stager/drain_write*.c.
 */
#ifndef PDCBB_DRAIN_WRITE_INTERNAL_H
#define PDCBB_DRAIN_WRITE_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "pdcbb_csum.h"
#include "pdcbb_drain.h"
#include "pdcbb_error.h"

#define DW_BUF_SIZE ((size_t)16 << 20) /* one copy buffer */

/* One call of pdcbb_drain_node. */
typedef struct dw_ctx {
    const pdcbb_drain_job_t *job;
    uint32_t nservers;
    uint64_t map_size;
    char drain_dir[PATH_MAX];
    char *err;
    size_t errlen;
    pdcbb_drain_progress_fn progress;
    void *progress_arg;
    /* progress over the whole call (objects: see pdcbb_drain_progress_t) */
    uint64_t total_bytes, done_bytes;
    uint64_t total_objects, done_objects;
    double t0, last_log;
    int last_decile;
} dw_ctx_t;

/* What this rank knows about an object it holds data of. */
typedef struct dw_layout {
    uint64_t obj;
    uint64_t unit;
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX];
} dw_layout_t;

/* An object record of this rank (for the data plan). */
typedef struct dw_objinfo {
    uint64_t id;
    uint32_t partition;
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX];
} dw_objinfo_t;

/* The checksum of one block of a data file, as the daemon kept it (common/pdcbb_csum.h). */
typedef struct dw_csum {
    uint64_t obj, block;
    pdcbb_csum_rec_t rec;
} dw_csum_t;

typedef struct dw_rank {
    uint32_t rank;
    pdcbb_drain_t *m;      /* the part being built */
    dw_layout_t *layouts;
    size_t nlayouts;
    dw_objinfo_t *objs;
    size_t nobjs;
    dw_csum_t *csums;      /* sorted by (obj, block) */
    size_t ncsums;
} dw_rank_t;

/* A candidate extent: bytes [off, off+len) of a node-local data file (= of the object). */
typedef struct dw_piece {
    uint64_t obj;
    uint32_t src;          /* index into the plan's source files */
    int conditional;       /* kept only if some byte is non-zero (drain_write_plan.c) */
    uint32_t damaged;      /* PDCBB_DRAIN_DAMAGED_*: found damaged on the node (kept whatever
                            * its bytes; TRUNCATED: past the file's end, copied as zeros) */
    uint64_t off, len;
    /* filled by the reader */
    int kept;
    uint64_t file_offset;
    uint32_t crc;
} dw_piece_t;

typedef struct dw_plan {
    dw_piece_t *pieces;
    size_t npieces, cap;
    char **paths;          /* source files (the pieces of each are consecutive) */
    uint64_t *src_sizes;   /* their sizes when planned (the checksums count zeros past them) */
    size_t nsrc, capsrc;
    uint64_t bytes;        /* sum of the pieces' lengths */
    /* checksums of the source files' blocks were checked when planning (else the copy
     * computes them: dw_blocksum_t) */
    int crc_checked;
} dw_plan_t;

/* The checksum (pdcbb_csum.h: a block's PDCBB_CSUM_BLOCK bytes, zeros past the file's end) of
 * block `block` of obj's node-local data file, computed by the copy's reader from the bytes it
 * read: every byte of the block from its start, to its end or to the file's end. */
typedef struct dw_blocksum {
    uint64_t obj, block;
    uint32_t crc;
} dw_blocksum_t;

typedef struct dw_blocksums {
    dw_blocksum_t *v;
    size_t n, cap;
    int nomem; /* some could not be kept (then those blocks are read again to check them) */
} dw_blocksums_t;

/* Report a failure into the caller's error buffer (and the log), ending with where the
 * node-local data is kept; returns rc. */
pdcbb_err_t dw_fail(dw_ctx_t *c, pdcbb_err_t rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* dw_fail for a failed file system call (errno e) on the destination: "what path: why". */
pdcbb_err_t dw_fail_errno(dw_ctx_t *c, int e, const char *what, const char *path);
/* Log the progress of rank's drain (force: now) and call the caller's progress function. */
void dw_progress(dw_ctx_t *c, uint32_t rank, int force);

/* Read everything of rank r's store into r (one read transaction; drain_write_store.c). */
pdcbb_err_t dw_read_store(dw_ctx_t *c, dw_rank_t *r, const char *store_dir);

/* Free a plan's pieces and source paths (drain_write_plan.c). */
void dw_plan_free(dw_plan_t *p);
/* Plan the extents of the data file of layout l of rank r (drain_write_plan.c). The file's
 * size is checked against r's checksums (a truncated file); its bytes only when p->crc_checked
 * (else dw_check_blocks does it after the copy). */
pdcbb_err_t dw_plan_object(dw_ctx_t *c, dw_rank_t *r, dw_plan_t *p, const dw_layout_t *l,
                           const char *store_dir);
/* After a copy of a plan made without checking the blocks' bytes: check every block that has
 * a checksum against the CRC the reader computed (sums, sorted here), or by reading the block
 * when the reader did not read all of it. *damaged = 1 if some block does not match (the rank
 * is then planned and copied again with every block checked first). */
pdcbb_err_t dw_check_blocks(dw_ctx_t *c, dw_rank_t *r, dw_blocksums_t *sums, const char *store_dir,
                            int *damaged);

/* Copy the plan into fd (the data file at path) and verify it; *out_bytes gets its size; the
 * blocks' checksums the reader computed go to sums (when p->crc_checked is 0). The caller syncs
 * afterwards (drain_write_copy.c). */
pdcbb_err_t dw_copy(dw_ctx_t *c, uint32_t rank, dw_plan_t *p, int fd, const char *path,
                    uint64_t *out_bytes, dw_blocksums_t *sums);

#endif
