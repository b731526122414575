/*
 * pdcbb_drain_kv.h - KV objects in the drain format (docs/DRAIN-FORMAT.md "KV objects"): the
 * dump files that hold a KV object's records (one per KV object and daemon rank that held a
 * shard of it), the keys' encoding in them, and an in-memory view of a drained KV object that
 * answers gets and lists at any tag with the live store's semantics (docs/KV.md).
 *
 * A dump file (".kvd") is self-describing: a header (magic "PDCBBKVD", version, key type,
 * sharding, the rank that held it, the KV object's container and name, the tag bound of a
 * migration) followed by blocks of records in (encoded key, tag) order, each block with its own
 * CRC-32C, and an end block with the record count. The whole file's CRC-32C is also in the
 * manifest. All integers little-endian.
 *
 * Not thread-safe per object; every function filling err writes one line naming the file and
 * offset that was wrong.
 */
#ifndef PDCBB_DRAIN_KV_H
#define PDCBB_DRAIN_KV_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_error.h"
#include "pdcbb_kv.h"

#define PDCBB_KVD_MAGIC "PDCBBKVD"
#define PDCBB_KVD_VERSION 1
#define PDCBB_KVD_BLOCK_MAGIC 0x3142564Bu /* "KVB1" */
#define PDCBB_KVD_END_MAGIC 0x3145564Bu   /* "KVE1" */
#define PDCBB_KVD_BLOCK_TARGET ((size_t)1 << 20) /* payload bytes after which a block is cut */
#define PDCBB_KVD_KEY_MAX PDCBB_KV_ENC_MAX     /* bytes of an encoded key (1025) */
#define PDCBB_KV_TAG_MAX 0x0FFFFFFFFFFFFFFFull    /* PDC_KV_MAXTAG */
/* Directory of the KV dumps in a drain directory, and of migrations (PDCkv_migrate). */
#define PDCBB_DRAIN_KV_DIR "kv"
#define PDCBB_DRAIN_KV_MIGRATE_DIR "kv-migrate"

/* key types (pdc_kv_key_type_t, the same values as PDCBB_KV_STRING/INT/FLOAT) */
enum { PDCBB_KVK_STRING = 0, PDCBB_KVK_INT = 1, PDCBB_KVK_FLOAT = 2 };
/* record flags (the same value as PDCBB_KV_F_DELETED) */
#define PDCBB_KVR_DELETED 0x1u /* a deletion marker: the key has no value at this tag */

/* ---- keys: encoded as in the live store (common/pdcbb_kv.h, docs/KV.md "Storage") ---- */

/* Names "STRING" / "INT" / "FLOAT" and back (-1 if unknown). */
const char *pdcbb_kvd_key_type_name(uint32_t type);
int pdcbb_kvd_key_type_parse(const char *name);
/* Names "DEFAULT" / "HASH" / "RANGE" and back (-1 if unknown). */
const char *pdcbb_kvd_shard_name(uint32_t sharding);
int pdcbb_kvd_shard_parse(const char *name);
/*
 * Parse text as a key of type into out (room for PDCBB_KVD_KEY_MAX bytes), encoded, *len its
 * length. STRING: the text itself (1..1024 bytes); INT: a decimal integer (strtoll, whole text,
 * no overflow); FLOAT: a number (strtod, whole text; NaN refused). PDCBB_ERR_INVAL with err
 * "key 'x' is not an INT ..." / "... not a FLOAT ..." / "key is empty" / "... longer than".
 */
pdcbb_err_t pdcbb_kvd_key_parse(uint32_t type, const char *text, uint8_t *out, size_t *len,
                                char *err, size_t errlen);
/* An encoded key as text: STRING its bytes (out NUL-terminated), INT "%lld", FLOAT "%.17g".
 * out needs PDCBB_KVD_KEY_MAX + 1 bytes for any string key. */
void pdcbb_kvd_key_format(uint32_t type, const void *key, size_t len, char *out, size_t outlen);

/* ---- version resolution (the live store's semantics, seed 002 "Versioning") ---- */

/*
 * Of the versions of one key, tags ascending in tags[0..n-1] with their flags, the index of the
 * one a get at tag sees: the newest with tag <= tag; -1 when there is none or it is a deletion
 * marker. (Uncommitted and aborted transactions are never in a dump.)
 */
int64_t pdcbb_kvd_resolve(const uint64_t *tags, const uint32_t *flags, uint64_t n, uint64_t tag);

/* ---- dump files ---- */

typedef struct pdcbb_kvd_header {
    uint32_t key_type;   /* PDCBB_KVK_* */
    uint32_t sharding;   /* pdc_kv_shard_t as decided */
    uint32_t nshards;
    uint32_t rank;       /* the daemon rank that held these records */
    uint64_t kv_id;      /* the KV object's id in the drained job */
    uint64_t below_tag;  /* 0: every record; else only records with tag < below_tag (migration) */
    char container[1024];
    char name[1024];
} pdcbb_kvd_header_t;

typedef struct pdcbb_kvd_stats {
    uint64_t records;
    uint64_t bytes;      /* size of the file */
    uint32_t crc32c;     /* of the whole file */
} pdcbb_kvd_stats_t;

typedef struct pdcbb_kvd_writer pdcbb_kvd_writer_t;

/* Create path (O_EXCL through path.tmp, renamed at close) and write the header. */
pdcbb_err_t pdcbb_kvd_create(const char *path, const pdcbb_kvd_header_t *h,
                             pdcbb_kvd_writer_t **out, char *err, size_t errlen);
/* Append one record; keys (then tags) must come in ascending order: PDCBB_ERR_INVAL otherwise. */
pdcbb_err_t pdcbb_kvd_add(pdcbb_kvd_writer_t *w, const void *key, size_t klen, uint64_t tag,
                          uint32_t flags, const void *value, uint64_t vlen);
/* Write the end block, fdatasync, rename into place; stats (may be NULL) gets the counts.
 * w is freed either way. */
pdcbb_err_t pdcbb_kvd_close(pdcbb_kvd_writer_t *w, pdcbb_kvd_stats_t *stats, char *err,
                            size_t errlen);
/* Give up: the temporary file is removed, w freed. Accepts NULL. */
void pdcbb_kvd_abort(pdcbb_kvd_writer_t *w);

/* One record read back. key and value point into the reader's block (valid until the next
 * call of pdcbb_kvd_next), or into the view (valid while the view lives). */
typedef struct pdcbb_kvd_rec {
    const uint8_t *key;
    uint32_t klen;
    uint32_t flags;
    uint64_t tag;
    const uint8_t *value;
    uint64_t vlen;
} pdcbb_kvd_rec_t;

typedef struct pdcbb_kvd_reader pdcbb_kvd_reader_t;

/* Open a dump and read its header (checked: magic, version, CRC). */
pdcbb_err_t pdcbb_kvd_open(const char *path, pdcbb_kvd_header_t *h, pdcbb_kvd_reader_t **out,
                           char *err, size_t errlen);
/* The next record: PDCBB_OK with *rec, PDCBB_ERR_NOT_FOUND after the last one (the end block
 * checked: record count, nothing after it). A block whose CRC-32C does not match, records out
 * of order or a truncated file: PDCBB_ERR_IO, err naming the file and offset. */
pdcbb_err_t pdcbb_kvd_next(pdcbb_kvd_reader_t *r, pdcbb_kvd_rec_t *rec, char *err,
                           size_t errlen);
/* The CRC-32C and size of everything read so far (the whole file after NOT_FOUND). */
void pdcbb_kvd_read_stats(const pdcbb_kvd_reader_t *r, pdcbb_kvd_stats_t *stats);
void pdcbb_kvd_close_reader(pdcbb_kvd_reader_t *r);

/*
 * Read a whole dump and compare with what the manifest says (records, bytes, crc32c; pass
 * want NULL to check only the blocks). PDCBB_ERR_IO with err naming the file when anything
 * differs, or the reader's error.
 */
pdcbb_err_t pdcbb_kvd_verify(const char *path, const pdcbb_kvd_stats_t *want,
                             pdcbb_kvd_stats_t *got, char *err, size_t errlen);

/* ---- a drained KV object in memory ---- */

typedef struct pdcbb_kv_view {
    pdcbb_kvd_header_t hdr;      /* of the first dump (key type, names) */
    pdcbb_kvd_rec_t *recs;       /* every record, sorted by (key, tag) */
    uint64_t nrecs;
    void **blocks;               /* the memory the records point into */
    uint64_t nblocks, cap_blocks;
    uint64_t cap_recs;
} pdcbb_kv_view_t;

/* Empty view of key_type. NULL when out of memory. */
pdcbb_kv_view_t *pdcbb_kv_view_new(uint32_t key_type);
/* Add every record of one dump (checked as by pdcbb_kvd_next; its key type must match). */
pdcbb_err_t pdcbb_kv_view_load(pdcbb_kv_view_t *v, const char *path, char *err, size_t errlen);
/* Sort after the last load (several dumps: shards). Two records with the same key and tag:
 * PDCBB_ERR_IO (err says which key). */
pdcbb_err_t pdcbb_kv_view_sort(pdcbb_kv_view_t *v, char *err, size_t errlen);
void pdcbb_kv_view_free(pdcbb_kv_view_t *v);
/* The record a get of key at tag sees, or NULL (no version, or deleted). */
const pdcbb_kvd_rec_t *pdcbb_kv_view_get(const pdcbb_kv_view_t *v, const void *key, size_t klen,
                                         uint64_t tag);
/* Visible keys at tag in key order: calls fn for the ones from offset on, at most count of
 * them (count 0: all); *total (may be NULL) gets how many keys are visible at tag. fn returning
 * non-zero stops the walk (that value is returned). */
int pdcbb_kv_view_list(const pdcbb_kv_view_t *v, uint64_t tag, uint64_t offset, uint64_t count,
                       int (*fn)(const pdcbb_kvd_rec_t *rec, void *arg), void *arg,
                       uint64_t *total);

/* Load a drained KV object: every dump of kv listed in m (files under m->dir), each checked
 * block by block and its record count against the manifest. An object without dumps is empty.
 * err names the dump that was wrong. */
struct pdcbb_drain;
struct pdcbb_drain_kv;
pdcbb_err_t pdcbb_drain_kv_view_open(const struct pdcbb_drain *m, const struct pdcbb_drain_kv *kv,
                                     pdcbb_kv_view_t **out, char *err, size_t errlen);

#endif
