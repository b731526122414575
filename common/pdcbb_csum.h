/*
 * pdcbb_csum.h - the checksums of node-local region data: one CRC-32C per fixed block of an
 * object's data file, taken when the bytes are accepted and checked before they are served
 * again after a restart and when they are drained (docs/INTERNALS.md, "Checksums").
 *
 * An object's data file (bbd_data.c) is its row-major array, sparse. Block k is the file's bytes
 * [k B, (k+1) B), B = PDCBB_CSUM_BLOCK; its record holds the CRC-32C of those B bytes, bytes past
 * the end of the file counted as zeros (a block beyond everything written has no record), and
 * `end`, how far into the block bytes were ever written: the file must reach k B + end, so a
 * truncated file is found by its size alone.
 *
 * A write never needs the bytes it does not change. A block written whole gets the CRC of the
 * new bytes (SET). A block written in part keeps its checksum by algebra (XOR): for equal
 * lengths crc(old) ^ crc(new) == raw(0, old ^ new), which is nonzero only where the write
 * landed, so the update is computed from the new bytes and the old bytes *of the written range*
 * (read just before they are overwritten; none when the range lies past the end of the file).
 * The bytes the write keeps are never re-checksummed, so damage in them is never absorbed: it
 * stays a mismatch. XOR updates commute, so concurrent writers of disjoint parts of one block
 * (the direct path) may report in any order.
 *
 * Everything here is pure or works on a file descriptor given by the caller; thread-safe.
 */
#ifndef PDCBB_CSUM_H
#define PDCBB_CSUM_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_error.h"

/* Bytes per checksum block (docs/INTERNALS.md says why this size). */
#define PDCBB_CSUM_BLOCK ((uint64_t)1 << 20)
/* Key: object id, block index (both big-endian: an object's blocks sort together, in order). */
#define PDCBB_CSUM_KEY_LEN 16
/* Value: u32 crc, u32 flags, u64 end (little-endian). */
#define PDCBB_CSUM_VAL_LEN 16

/* A write was under way when the record was last stored: its bytes may not match crc yet. */
#define PDCBB_CSUM_PENDING 1u

typedef struct pdcbb_csum_rec {
    uint32_t crc;   /* CRC-32C of the block's PDCBB_CSUM_BLOCK bytes (zeros past the file's end) */
    uint32_t flags; /* PDCBB_CSUM_PENDING */
    uint64_t end;   /* bytes [0, end) of the block were written at least once (<= BLOCK) */
} pdcbb_csum_rec_t;

enum { PDCBB_CSUM_SET = 1, PDCBB_CSUM_XOR = 2 };

/* One block's change by a write. */
typedef struct pdcbb_csum_upd {
    uint64_t obj, block;
    uint32_t kind;  /* PDCBB_CSUM_SET: crc = value; PDCBB_CSUM_XOR: crc ^= value */
    uint32_t value;
    uint64_t end;   /* the write reached this far into the block */
} pdcbb_csum_upd_t;

/* A growing list of updates; consecutive updates of one block are merged into one. */
typedef struct pdcbb_csum_list {
    pdcbb_csum_upd_t *v;
    size_t n, cap;
} pdcbb_csum_list_t;

/* What is wrong with a block (pdcbb_csum_check). */
enum { PDCBB_CSUM_BAD_CRC = 1, PDCBB_CSUM_BAD_SIZE = 2 };

void pdcbb_csum_key(uint8_t out[PDCBB_CSUM_KEY_LEN], uint64_t obj, uint64_t block);
void pdcbb_csum_rec_encode(const pdcbb_csum_rec_t *rec, uint8_t out[PDCBB_CSUM_VAL_LEN]);
/* PDCBB_ERR_STORE when len is not PDCBB_CSUM_VAL_LEN or end is past the block. */
pdcbb_err_t pdcbb_csum_rec_decode(const void *val, size_t len, pdcbb_csum_rec_t *out);

/* The record of a block never written: the CRC of BLOCK zero bytes, end 0. */
pdcbb_csum_rec_t pdcbb_csum_rec_empty(void);
/* Apply u to *rec (a block without a record starts as pdcbb_csum_rec_empty()). */
void pdcbb_csum_apply(pdcbb_csum_rec_t *rec, const pdcbb_csum_upd_t *u);
/* Add u to l, merged with the last entry when it is the same block; PDCBB_ERR_NOMEM. */
pdcbb_err_t pdcbb_csum_list_add(pdcbb_csum_list_t *l, const pdcbb_csum_upd_t *u);
void pdcbb_csum_list_free(pdcbb_csum_list_t *l);

/*
 * The updates for writing len bytes of src at byte off of obj's data file fd, added to l. Call
 * it right before the bytes are written: it reads (pread) the old bytes of the ranges that
 * cover only part of a block and lie below *size, the file's size; *size then becomes the size
 * after the write. *err gets errno on an I/O error (PDCBB_ERR_IO then); PDCBB_ERR_NOMEM.
 */
pdcbb_err_t pdcbb_csum_write_run(int fd, uint64_t *size, uint64_t obj, uint64_t off,
                                 const uint8_t *src, uint64_t len, pdcbb_csum_list_t *l,
                                 int *err);

/*
 * Write len bytes of src at byte off of obj's data file fd (pwrite, complete), with the updates
 * of every block written (pdcbb_csum_write_run) added to l, each taken just before the block's
 * bytes are written. parallel: the blocks written whole are checksummed by a helper thread
 * while this one writes them (src must not change meanwhile; worth it where a core is idle, as
 * on the client's direct path); else block by block, while the bytes are in the cache. *size:
 * the file's size, updated. PDCBB_ERR_IO with *err = errno (a short write with ENOSPC, EIO ...):
 * l may then hold updates of bytes that were not written, and must be dropped.
 */
pdcbb_err_t pdcbb_csum_pwrite(int fd, uint64_t *size, uint64_t obj, uint64_t off,
                              const uint8_t *src, uint64_t len, pdcbb_csum_list_t *l, int *err,
                              int parallel);

/* Updates on the wire (DATA_DIRECT DONE's bulk part, docs/PROTOCOL.md): PDCBB_CSUM_WIRE_LEN
 * bytes each, little-endian: u64 object, u64 block, u32 kind, u32 value, u64 end. */
#define PDCBB_CSUM_WIRE_LEN 32
void pdcbb_csum_upd_encode(const pdcbb_csum_upd_t *u, uint8_t out[PDCBB_CSUM_WIRE_LEN]);
/* PDCBB_ERR_PROTO for an unknown kind or an end past the block. */
pdcbb_err_t pdcbb_csum_upd_decode(const uint8_t in[PDCBB_CSUM_WIRE_LEN], pdcbb_csum_upd_t *u);

/*
 * The CRC of block `block` of fd as it is now (size: the file's size; bytes past it are zeros),
 * into *crc. scratch: PDCBB_CSUM_BLOCK bytes or NULL (then allocated). PDCBB_ERR_IO (*err =
 * errno), PDCBB_ERR_NOMEM.
 */
pdcbb_err_t pdcbb_csum_block_crc(int fd, uint64_t size, uint64_t block, uint8_t *scratch,
                                 uint32_t *crc, int *err);
/*
 * Check block `block` of fd (size: the file's size) against rec: PDCBB_OK, or
 * PDCBB_ERR_CORRUPT with *kind PDCBB_CSUM_BAD_SIZE (the file does not reach what was written
 * into the block: truncated; not read) or PDCBB_CSUM_BAD_CRC. Other errors as
 * pdcbb_csum_block_crc.
 */
pdcbb_err_t pdcbb_csum_check(int fd, uint64_t size, uint64_t block, const pdcbb_csum_rec_t *rec,
                             uint8_t *scratch, int *kind, int *err);
/* What kind means, for messages ("its bytes do not match ..."). */
const char *pdcbb_csum_kind_str(int kind);

#endif
