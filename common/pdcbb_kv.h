/*
 * pdcbb_kv.h - the storage layout and wire encodings of KV objects (include/pdc_kv.h,
 * docs/KV.md "Storage"), shared by the client, the daemon, the drain and the stager.
 *
 * Encoded keys (order-preserving: memcmp of two encodings of one type orders them as the type):
 *   STRING  the key's bytes (1..1024, no NUL inside) followed by one 0x00 terminator. As no key
 *           holds a NUL, a key that is a prefix of another sorts first ("ab\0" < "abc\0").
 *   INT     8 bytes: the int64 with its sign bit flipped, big-endian.
 *   FLOAT   8 bytes: the IEEE-754 bits, big-endian, after the total-order trick (sign bit set:
 *           all bits inverted; else the sign bit set); -0.0 is stored as 0.0; NaN is refused.
 *
 * LMDB tables of the daemon's store (store/pdcbb_store.h):
 *   "kv"      one entry per record version.
 *             key   = kv id BE(8) | G | tag BE(8), where the group G of a key is
 *                     - short key (encoded length <= PDCBB_KV_PREFIX + 1, i.e. INT/FLOAT keys
 *                       and strings of at most 448 bytes): the encoded key itself;
 *                     - long key (strings of 449..1024 bytes): the first PDCBB_KV_PREFIX (448)
 *                       bytes of the string, the marker byte 0x01, then FNV-1a-64 of the whole
 *                       encoded key, BE(8) (457 bytes).
 *                     LMDB keys are therefore at most 8 + 457 + 8 = 473 bytes (< 511, LMDB's
 *                     mdb_env_get_maxkeysize). A cursor walks keys in key order and each key's
 *                     versions in ascending tag order, with one exception: long keys sharing
 *                     their first 448 bytes form a "long-prefix group" (same 449-byte prefix
 *                     ending in 0x01) ordered by hash, which scans sort in memory by the full
 *                     key kept in the value. A short key orders before every long key it is a
 *                     prefix of (its 0x00 terminator < any byte of the longer key, and a
 *                     448-byte key's terminator 0x00 < the marker 0x01). Two different long
 *                     keys with the same prefix and hash are refused (PDCBB_ERR_EXISTS).
 *             value = flags(1) [| full encoded key length BE(2) | full encoded key, when
 *                     PDCBB_KV_F_LONGKEY] | value bytes.
 *                     flags: PDCBB_KV_F_DELETED (a deletion marker: no value bytes),
 *                     PDCBB_KV_F_LONGKEY (the full key follows).
 *   "kvmeta"  KV objects: 'N' | container id BE(8) | name bytes  -> kv id BE(8) (home daemon
 *             only), and 'I' | kv id BE(8) -> the meta record (pdcbb_kv_meta_encode), on the
 *             home daemon and on every shard daemon (a shard validates ids and key types).
 *   "kvtx"    transactions: kv id BE(8) | 'P' | tag BE(8) -> state byte (PDCBB_KV_TX_OPEN or
 *             PDCBB_KV_TX_PREPARED): a transaction not yet committed, whose records readers
 *             skip (OPEN) or answer PDCBB_ERR_BUSY for ("in doubt, retry": PREPARED);
 *             kv id BE(8) | 'C' | tag BE(8) -> "" : a committed transaction (its tag cannot
 *             be started again). An aborted transaction leaves no entry and no record.
 *             kv id BE(8) | 'G' -> u64 BE: the object's write generation here (bumped by
 *             every KV_SET message, prepare, commit and abort; listings resume only when
 *             unchanged); kv id BE(8) | 'X' -> u64 BE: its transaction generation (bumped by
 *             every prepare and commit; multi-shard reads check it did not change meanwhile).
 *             kv id BE(8) | 'U' | upload BE(8) | offset BE(8) -> bytes: a piece of a value
 *             larger than one message, until the SET_PART record that takes it.
 *
 * KV ids are meta ids (common/pdcbb_proto.h) of kind PDCBB_META_KIND_KV, allocated by the
 * object's home daemon (hash of the name % ndaemons) from its sequence.
 *
 * Pure functions, thread-safe.
 */
#ifndef PDCBB_KV_H
#define PDCBB_KV_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_error.h"

#define PDCBB_META_KIND_KV 3u

#define PDCBB_KV_NULLTAG 0ull
#define PDCBB_KV_MAXTAG 0x0FFFFFFFFFFFFFFFull
#define PDCBB_KV_KEY_MAXLEN 1024
/* The largest value a record holds, whatever the object's max_value_len (0: this limit): the
 * daemon assembles a value sent in KV_PART pieces in memory. */
#define PDCBB_KV_VALUE_MAX ((uint64_t)1 << 30)
/* Longest encoded key (a 1024-byte string and its terminator). */
#define PDCBB_KV_ENC_MAX (PDCBB_KV_KEY_MAXLEN + 1)
/* Bytes of a long string key kept in the LMDB key. */
#define PDCBB_KV_PREFIX 448
#define PDCBB_KV_LONG_MARK 0x01
/* Longest group part and LMDB key of a record. */
#define PDCBB_KV_GROUP_MAX (PDCBB_KV_PREFIX + 1 + 8)
#define PDCBB_KV_RECKEY_MAX (8 + PDCBB_KV_GROUP_MAX + 8)

enum { PDCBB_KV_STRING = 0, PDCBB_KV_INT = 1, PDCBB_KV_FLOAT = 2 };
enum { PDCBB_KV_SHARD_DEFAULT = 0, PDCBB_KV_SHARD_HASH = 1, PDCBB_KV_SHARD_RANGE = 2 };
/* The measured choice of PDC_KV_SHARD_DEFAULT (docs/KV.md "Sharding"). */
#define PDCBB_KV_SHARD_CHOSEN PDCBB_KV_SHARD_HASH

/* Record value flags. */
#define PDCBB_KV_F_DELETED 0x01u
#define PDCBB_KV_F_LONGKEY 0x02u

/* Transaction states ("kvtx" 'P' entries) and KV_TRANS modes. */
#define PDCBB_KV_TX_OPEN 1u
#define PDCBB_KV_TX_PREPARED 2u
enum { PDCBB_KV_TRANS_START = 0, PDCBB_KV_TRANS_PREPARE = 1, PDCBB_KV_TRANS_COMMIT = 2,
       PDCBB_KV_TRANS_ABORT = 3 };

/* "INT", "FLOAT", "STRING" ("?" otherwise). */
const char *pdcbb_kv_type_name(unsigned type);
const char *pdcbb_kv_shard_name(unsigned sharding);

/* ---------------------------------------------------------------- key encoding */
void pdcbb_kv_enc_int(int64_t v, uint8_t out[8]);
int64_t pdcbb_kv_dec_int(const uint8_t in[8]);
/* PDCBB_ERR_INVAL for NaN. */
pdcbb_err_t pdcbb_kv_enc_float(double v, uint8_t out[8]);
double pdcbb_kv_dec_float(const uint8_t in[8]);
/* out gets len + 1 bytes. */
size_t pdcbb_kv_enc_str(const char *s, size_t len, uint8_t *out);
/*
 * Check an encoded key of len bytes against a KV object's key type and max_key_len (0: 1024).
 * Errors (why gets a message naming the problem): PDCBB_ERR_INVAL (wrong length for INT/FLOAT,
 * a FLOAT NaN or -0.0 encoding, an empty string, a NUL inside, no terminator),
 * PDCBB_ERR_TOO_BIG (string longer than max_key_len).
 */
pdcbb_err_t pdcbb_kv_key_check(unsigned type, const uint8_t *enc, size_t len,
                               uint32_t max_key_len, char *why, size_t whylen);
/* Print an encoded key for messages ("'abc'", "42", "1.5"; long strings cut). */
void pdcbb_kv_key_print(unsigned type, const uint8_t *enc, size_t len, char *out, size_t outlen);
/* Compare two encoded keys (memcmp, shorter first on a common prefix). */
int pdcbb_kv_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);
/* FNV-1a 64 of bytes. */
uint64_t pdcbb_kv_hash(const void *p, size_t len);

/* ---------------------------------------------------------------- records in LMDB */
/* 1 if the encoded key needs the long-key form. */
static inline int pdcbb_kv_is_long(size_t enclen) { return enclen > PDCBB_KV_PREFIX + 1; }
/* The group part G of an encoded key into out (PDCBB_KV_GROUP_MAX bytes); returns its length. */
size_t pdcbb_kv_group(const uint8_t *enc, size_t len, uint8_t *out);
/* The LMDB key kv id | G | tag into out (PDCBB_KV_RECKEY_MAX bytes); returns its length. */
size_t pdcbb_kv_rec_key(uint64_t kvid, const uint8_t *enc, size_t len, uint64_t tag, uint8_t *out);
/* Parts of an LMDB key: 0 if rk is not a record key (too short). */
int pdcbb_kv_rec_key_parse(const uint8_t *rk, size_t len, uint64_t *kvid, const uint8_t **group,
                           size_t *glen, uint64_t *tag);
/* 1 if a group part is a long key's. */
static inline int pdcbb_kv_group_is_long(const uint8_t *g, size_t glen)
{
    return glen == PDCBB_KV_GROUP_MAX && g[PDCBB_KV_PREFIX] == PDCBB_KV_LONG_MARK;
}
/* Size of a record value; build it into out (that many bytes). enc/len are needed only for
 * long keys (flags gets PDCBB_KV_F_LONGKEY then). value may be NULL (then only the header is
 * written and the caller copies the value bytes at out + size - vlen). */
size_t pdcbb_kv_rec_val_size(const uint8_t *enc, size_t len, int deleted, uint64_t vlen);
/* (vlen must be at most PDCBB_KV_VALUE_MAX: the size then cannot wrap.) */
void pdcbb_kv_rec_val_build(const uint8_t *enc, size_t len, int deleted, const void *value,
                            uint64_t vlen, uint8_t *out);
/* Parse a record value: flags, the full key of a long key (*fk NULL otherwise), the value.
 * PDCBB_ERR_STORE if malformed. */
pdcbb_err_t pdcbb_kv_rec_val_parse(const void *v, size_t len, unsigned *flags, const uint8_t **fk,
                                   size_t *fklen, const uint8_t **value, uint64_t *vlen);

/* ---------------------------------------------------------------- version resolution */
/*
 * Which version of one key a read at tag sees (seed 002 "Versioning", docs/KV.md): feed the
 * key's versions in ascending tag order with their flags and transaction state (0: plain or
 * committed; PDCBB_KV_TX_OPEN: invisible; PDCBB_KV_TX_PREPARED: in doubt). The newest version
 * with tag <= the read's tag of a visible transaction wins; a deletion marker there means no
 * value; a prepared version newer than it (or without one) makes the answer in doubt. Shared
 * by the daemon (bbd/bbd_kv.c) and the readers of drained KV dumps (stager/drain_kv.c).
 */
typedef struct pdcbb_kv_resolve {
    uint64_t tag;      /* the read's tag */
    int have_cand, cand_deleted, have_prepared;
    uint64_t cand_tag, prepared_tag;
} pdcbb_kv_resolve_t;
enum { PDCBB_KV_RES_NONE = 0, PDCBB_KV_RES_FOUND = 1, PDCBB_KV_RES_BUSY = 2 };
void pdcbb_kv_resolve_init(pdcbb_kv_resolve_t *r, uint64_t tag);
/* One version; returns 1 when it becomes the candidate (the caller keeps its value). */
int pdcbb_kv_resolve_add(pdcbb_kv_resolve_t *r, uint64_t vtag, unsigned flags, unsigned state);
/* PDCBB_KV_RES_BUSY, _FOUND (the candidate, cand_tag) or _NONE (no version or deleted). */
int pdcbb_kv_resolve_result(const pdcbb_kv_resolve_t *r);

/* ---------------------------------------------------------------- KV object metadata */
typedef struct pdcbb_kv_meta {
    uint64_t id;
    uint64_t cont_id;
    uint32_t key_type;
    uint32_t sharding;      /* HASH or RANGE, never DEFAULT once decided */
    uint32_t max_key_len;   /* 1..1024 */
    uint64_t max_value_len; /* 0: unlimited */
    uint32_t nshards;
    uint32_t shards[256];   /* shard -> daemon rank */
    char name[1024];
} pdcbb_kv_meta_t;
#define PDCBB_KV_SHARDS_MAX 256
/* 'I' record: u8 version(1) u8 key_type u8 sharding u8 0, u32 max_key_len, u64 max_value_len,
 * u64 cont_id, u64 id, u32 nshards, u32 shards[nshards], u16 name length, name; all BE.
 * encode returns the size (out: at least pdcbb_kv_meta_size bytes). */
size_t pdcbb_kv_meta_size(const pdcbb_kv_meta_t *m);
size_t pdcbb_kv_meta_encode(const pdcbb_kv_meta_t *m, uint8_t *out);
pdcbb_err_t pdcbb_kv_meta_decode(const void *in, size_t len, pdcbb_kv_meta_t *m);
/* "kvmeta" keys: 'N' | cont | name (out: 9 + strlen(name) bytes), 'I' | id (9 bytes). */
size_t pdcbb_kv_meta_name_key(uint64_t cont_id, const char *name, uint8_t *out);
size_t pdcbb_kv_meta_id_key(uint64_t id, uint8_t *out);
/* "kvtx" key: id | kind ('P' or 'C') | tag (17 bytes). */
size_t pdcbb_kv_tx_key(uint64_t id, uint8_t kind, uint64_t tag, uint8_t *out);

/* ---------------------------------------------------------------- sharding */
/* Shard (0..nshards-1) of an encoded key. HASH: pdcbb_kv_hash(enc) % nshards. RANGE: a fixed
 * split of the key domain into nshards equal ranges, monotone in key order: INT and FLOAT split
 * the 64-bit encoding; STRING splits the first three bytes read as base-95 digits of the
 * printable range 0x20..0x7e (bytes below count as 0x20, above as 0x7e). */
uint32_t pdcbb_kv_shard_of(uint32_t sharding, uint32_t key_type, uint32_t nshards,
                           const uint8_t *enc, size_t len);

/* ---------------------------------------------------------------- wire records */
/*
 * KV_SET recs: per record, little-endian:
 *   u8 op (PDCBB_KV_OP_*), u16 key length, the encoded key, then
 *     SET:      u64 value length, the value bytes
 *     UNLINK:   nothing
 *     SET_PART: u64 upload id, u64 total length (the value was sent by KV_PART pieces)
 * KV_LIST recs (reply): per record: u16 key length, key, u64 tag, u64 value length (total),
 *   u8 included (1: the value bytes follow; 0: not sent, e.g. too big for the reply).
 */
enum { PDCBB_KV_OP_SET = 0, PDCBB_KV_OP_UNLINK = 1, PDCBB_KV_OP_SET_PART = 2 };
typedef struct pdcbb_kv_wrec {
    unsigned op;
    const uint8_t *key;
    size_t key_len;
    const uint8_t *value;  /* SET */
    uint64_t value_len;    /* SET: bytes; SET_PART: total */
    uint64_t upload;       /* SET_PART */
    uint64_t tag;          /* list records */
    int included;          /* list records */
} pdcbb_kv_wrec_t;
/* Encoded size of a set record / list record. */
size_t pdcbb_kv_wset_size(const pdcbb_kv_wrec_t *r);
size_t pdcbb_kv_wset_put(const pdcbb_kv_wrec_t *r, uint8_t *out);
size_t pdcbb_kv_wlist_size(size_t key_len, uint64_t value_bytes_included);
size_t pdcbb_kv_wlist_put(const pdcbb_kv_wrec_t *r, uint8_t *out);
/* Read the record at *pos of buf (len bytes), advancing *pos. PDCBB_ERR_TRUNCATED past the end,
 * PDCBB_ERR_PROTO for a bad op. Pointers point into buf. */
pdcbb_err_t pdcbb_kv_wset_get(const uint8_t *buf, size_t len, size_t *pos, pdcbb_kv_wrec_t *r);
pdcbb_err_t pdcbb_kv_wlist_get(const uint8_t *buf, size_t len, size_t *pos, pdcbb_kv_wrec_t *r);

/*
 * The records of one KV_LIST reply being built (by the daemon and by the reader of a drained
 * job): at most max records, and while values are included at most max_bytes bytes, except that
 * a first record too big on its own goes without its value (the client fetches it by KV_GET).
 */
typedef struct pdcbb_kv_page {
    uint8_t *buf;       /* malloc'ed records, len bytes */
    size_t len, cap;
    uint32_t n, max;
    uint64_t max_bytes;
    int values;         /* include the values */
    int more;           /* the page filled up: records remain */
    int nomem;          /* out of memory: the page is incomplete */
} pdcbb_kv_page_t;
/* An empty page for a request of at most max records, values or not, max_bytes (0: the most
 * one reply carries). */
void pdcbb_kv_page_init(pdcbb_kv_page_t *pg, uint32_t max, int values, uint64_t max_bytes);
/* Add one visible version; 0 if it was added, 1 if the page is full (more) or memory ran out
 * (nomem): the scan stops. */
int pdcbb_kv_page_add(pdcbb_kv_page_t *pg, const uint8_t *key, size_t klen, uint64_t tag,
                      const uint8_t *value, uint64_t vlen);

#endif
