/*
 * pdc_kv.h - versioned key-value objects in the burst buffer (issue 12; the semantics of the
 * IOD KV store design, docs/KV.md).
 *
 * A KV object lives in a container, next to PDC objects. Its records are (key, tag, value):
 * the tag is a 64-bit version (a transaction id); several versions of a key are kept until they
 * are deleted explicitly. Records are spread over the job's daemons ("shards") and stored in
 * each daemon's LMDB store on node-local storage: everything a call acknowledged survives a
 * daemon kill -9.
 *
 * Keys have one type per KV object (PDC_KV_STRING, PDC_KV_INT, PDC_KV_FLOAT) and are ordered
 * as their type: strings bytewise (memcmp, a prefix before the longer key), integers as signed
 * numbers, floats as numbers (-0.0 == 0.0; NaN is refused). String keys are 1..1024 bytes.
 * Values have any size from 0 bytes up to the object's max_value_len (values larger than one
 * message are split by the library).
 *
 * Versions (seed 002 "Versioning"):
 *  - A set with tag T of (key, T) that exists overwrites that version; PDC_KV_NULLTAG (0)
 *    records are thus "updated in place". PDC_KV_MAXTAG (and anything above) cannot be set.
 *  - A get with tag T returns the newest visible version with tag <= T; PDC_KV_MAXTAG = the
 *    latest. A NULLTAG version is visible at every tag unless a newer version exists.
 *  - unlink_keys with 0 < T < MAXTAG writes a deletion marker at T (gets at >= T find nothing,
 *    gets at < T still see the older versions); with NULLTAG it deletes the NULLTAG version;
 *    with MAXTAG it deletes every version of those keys.
 *  - Transactions: PDCkv_trans_start(T) opens T on every shard; writes with tag T are then
 *    invisible to every reader until PDCkv_trans_commit(T) makes them visible together
 *    (two-phase commit over the shards: a reader never sees part of a transaction);
 *    PDCkv_trans_abort(T) removes every record written with T. Writes with a tag that is not
 *    an open transaction are visible at once.
 *
 * Non-blocking calls: the calls that take a pdc_kv_event_t *ev post their requests and return
 * at once when ev is not NULL; PDCkv_event_test / PDCkv_event_wait complete them. Output
 * pointers are filled when the event completes and must stay valid until then.
 *
 * Errors: every function records the cause of a failure (PDCbb_last_error,
 * PDCbb_last_error_message) with a message naming what was wrong, as the rest of the API.
 * Thread-safe like the rest of libpdc (calls are serialised).
 */
#ifndef PDC_KV_H
#define PDC_KV_H

#include "pdc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A version of a record (the seed's transaction id). */
typedef uint64_t pdc_kv_tag_t;
/* The unversioned tag: records set with it are updated in place; "no transaction". */
#define PDC_KV_NULLTAG ((pdc_kv_tag_t)0)
/* The seed's MAXTAG: only in gets and lists, where it means "the latest"; never set. */
#define PDC_KV_MAXTAG ((pdc_kv_tag_t)0x0FFFFFFFFFFFFFFFull)
/* Longest string key in bytes, without the NUL. */
#define PDC_KV_KEY_MAXLEN 1024

typedef enum { PDC_KV_STRING = 0, PDC_KV_INT = 1, PDC_KV_FLOAT = 2 } pdc_kv_key_type_t;

/* How the records of a KV object are spread over its shards (docs/KV.md "Sharding"):
 * HASH: a hash of the key picks the shard, listings merge the shards in key order;
 * RANGE: a fixed split of the key domain into nshards ranges (MDHIM's range servers), listings
 * walk the shards in order. DEFAULT: the measured choice (HASH; docs/KV.md). */
typedef enum {
    PDC_KV_SHARD_DEFAULT = 0,
    PDC_KV_SHARD_HASH = 1,
    PDC_KV_SHARD_RANGE = 2
} pdc_kv_shard_t;

/* A key: its type and the member of that type (str: NUL-terminated, no NUL inside,
 * 1..max_key_len bytes; i: int64_t; f: a double, NaN refused). */
typedef struct pdc_kv_key {
    pdc_kv_key_type_t type;
    const char *str;
    int64_t i;
    double f;
} pdc_kv_key_t;
#define PDC_KV_KEY_STR(s) ((pdc_kv_key_t){PDC_KV_STRING, (s), 0, 0.0})
#define PDC_KV_KEY_INT(v) ((pdc_kv_key_t){PDC_KV_INT, NULL, (v), 0.0})
#define PDC_KV_KEY_FLOAT(v) ((pdc_kv_key_t){PDC_KV_FLOAT, NULL, 0, (v)})

/* One record: PDCkv_set_list takes them (tag ignored: the call's tag is used), PDCkv_get_list
 * and PDCkv_list_key return them (tag = the version's tag; list_key: value NULL, value_len 0). */
typedef struct pdc_kv {
    pdc_kv_key_t key;
    pdc_kv_tag_t tag;
    const void *value;
    uint64_t value_len;
} pdc_kv_t;

/* Creation parameters of a KV object (PDCkv_create); PDCkv_get_info returns what was decided. */
typedef struct pdc_kv_info {
    pdc_kv_key_type_t key_type;
    pdc_kv_shard_t sharding;   /* DEFAULT: the measured choice */
    uint32_t nshards;          /* 0: every daemon of the job; else 1..ndaemons */
    uint32_t max_key_len;      /* 0: PDC_KV_KEY_MAXLEN; longer string keys are refused */
    uint64_t max_value_len;    /* 0: no limit but the burst buffer's space */
} pdc_kv_info_t;

/* Completion event of a non-blocking call (the seed's iod_event_t). Declared by the caller,
 * zero-initialised or reused after PDCkv_event_wait. Fields are private. */
typedef struct pdc_kv_event {
    void *impl_;
    int state_;
    int32_t status_;
} pdc_kv_event_t;

/** @brief Has the call of ev finished?
 * @param[in]  ev    an event given to a non-blocking call.
 * @param[out] done  1 when the call has finished (its result comes from PDCkv_event_wait),
 *                   else 0. Progresses the call's requests.
 * @return SUCCEED, or FAIL (PDCBB_ERR_INVAL: ev or done NULL, or ev not in use).
 */
PDC_EXPORT perr_t PDCkv_event_test(pdc_kv_event_t *ev, int *done);

/** @brief Wait until the call of ev has finished and return its result.
 * @param[in] ev  an event given to a non-blocking call; reusable afterwards.
 * @return the call's result: SUCCEED, or FAIL with the call's error recorded.
 *         PDCBB_ERR_INVAL: ev NULL or not in use.
 */
PDC_EXPORT perr_t PDCkv_event_wait(pdc_kv_event_t *ev);

/** @brief Create a KV object named name in container cont_id and open it.
 * @param[in] cont_id  an open container.
 * @param[in] name     1..1023 bytes of UTF-8 without control characters, unique among the
 *                     container's KV objects.
 * @param[in] info     key type and layout; NULL: string keys, defaults.
 * @return the KV object's id, 0 on failure.
 * Errors: PDCBB_ERR_EXISTS (name taken in the container), PDCBB_ERR_TOO_BIG (name longer than
 * 1023 bytes), PDCBB_ERR_BAD_NAME (name not valid UTF-8 or with a control character),
 * PDCBB_ERR_INVAL (empty name, key type,
 * sharding, nshards more than the job's daemons, max_key_len > 1024), PDCBB_ERR_BAD_ID
 * (cont_id), transport errors.
 */
PDC_EXPORT pdcid_t PDCkv_create(pdcid_t cont_id, const char *name, const pdc_kv_info_t *info);

/** @brief Open the KV object named name of container cont_id.
 * @return its id, 0 on failure. Errors: PDCBB_ERR_NOT_FOUND (no such KV object),
 * PDCBB_ERR_BAD_ID, PDCBB_ERR_INVAL.
 */
PDC_EXPORT pdcid_t PDCkv_open(pdcid_t cont_id, const char *name);

/** @brief Close a KV object id (the records stay). Errors: PDCBB_ERR_BAD_ID. */
PDC_EXPORT perr_t PDCkv_close(pdcid_t kv_id);

/** @brief Delete a KV object: every record on every shard and its name; the id is closed.
 * Other processes' ids of it become stale (their calls fail with PDCBB_ERR_BAD_ID).
 * Errors: PDCBB_ERR_BAD_ID, transport errors.
 */
PDC_EXPORT perr_t PDCkv_delete(pdcid_t kv_id);

/** @brief The layout of a KV object as decided at creation (sharding, nshards resolved).
 * Errors: PDCBB_ERR_BAD_ID, PDCBB_ERR_INVAL (info NULL).
 */
PDC_EXPORT perr_t PDCkv_get_info(pdcid_t kv_id, pdc_kv_info_t *info);

#ifdef ENABLE_MPI
/** @brief Collective over comm: rank 0 creates the KV object (and decides the layout), every
 * rank gets an open id of it. Every rank returns 0 if rank 0 failed. */
PDC_EXPORT pdcid_t PDCkv_create_coll(pdcid_t cont_id, const char *name, const pdc_kv_info_t *info,
                                     MPI_Comm comm);
/** @brief Collective over comm: rank 0 opens the KV object, every rank gets an id of it. */
PDC_EXPORT pdcid_t PDCkv_open_coll(pdcid_t cont_id, const char *name, MPI_Comm comm);
#endif

/** @brief Set one record (key, tag) = value.
 * @param[in] kv_id      an open KV object.
 * @param[in] tag        0 (NULLTAG) .. MAXTAG-1; an open transaction's tag: invisible until commit.
 * @param[in] key        of the object's key type.
 * @param[in] value      value_len bytes (NULL allowed when value_len is 0).
 * @param[in] ev         NULL: blocking; else the completion event.
 * @return SUCCEED once the record is stored (acknowledged records survive a daemon kill -9).
 * Errors: PDCBB_ERR_INVAL (MAXTAG set, key type mismatch, NaN key, empty or over-long key,
 * NUL-less value pointer), PDCBB_ERR_TOO_BIG (value_len > max_value_len), PDCBB_ERR_BAD_ID,
 * PDCBB_ERR_NOSPC, transport errors.
 */
PDC_EXPORT perr_t PDCkv_set(pdcid_t kv_id, pdc_kv_tag_t tag, const pdc_kv_key_t *key,
                            const void *value, uint64_t value_len, pdc_kv_event_t *ev);

/** @brief Set n records with one tag (recs[i].tag is ignored). Records are batched per shard
 * (one store transaction per message). Errors: as PDCkv_set, naming the first bad record; a
 * record refused before anything was sent fails the whole call with nothing stored. */
PDC_EXPORT perr_t PDCkv_set_list(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t n, const pdc_kv_t *recs,
                                 pdc_kv_event_t *ev);

/** @brief Get the value of key visible at tag (the newest version with tag <= tag).
 * @param[in]     value      buffer of *len bytes (or NULL with *len 0 to ask the size).
 * @param[in,out] len        in: the buffer's size; out: the value's length.
 * @param[out]    found_tag  (may be NULL) the version's tag.
 * Errors: PDCBB_ERR_NOT_FOUND (no visible version; the message names the key),
 * PDCBB_ERR_TOO_BIG (buffer too small; *len set), PDCBB_ERR_INVAL, PDCBB_ERR_BAD_ID.
 */
PDC_EXPORT perr_t PDCkv_get_value(pdcid_t kv_id, pdc_kv_tag_t tag, const pdc_kv_key_t *key,
                                  void *value, uint64_t *len, pdc_kv_tag_t *found_tag,
                                  pdc_kv_event_t *ev);

/** @brief The number of keys with a visible, non-deleted version at tag (all shards). */
PDC_EXPORT perr_t PDCkv_get_num(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t *num, pdc_kv_event_t *ev);

/** @brief The records visible at tag, ascending in key order, from offset (0-based), at most
 * count. *recs is one malloc'ed block holding the records, keys and values (free it with
 * PDCkv_list_free), *n how many. Errors: PDCBB_ERR_INVAL, PDCBB_ERR_BAD_ID, PDCBB_ERR_NOMEM. */
PDC_EXPORT perr_t PDCkv_get_list(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t offset, uint64_t count,
                                 pdc_kv_t **recs, uint64_t *n, pdc_kv_event_t *ev);

/** @brief As PDCkv_get_list without the values (value NULL, value_len 0). */
PDC_EXPORT perr_t PDCkv_list_key(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t offset, uint64_t count,
                                 pdc_kv_t **recs, uint64_t *n, pdc_kv_event_t *ev);

/** @brief Free what PDCkv_get_list / PDCkv_list_key returned (accepts NULL). */
PDC_EXPORT void PDCkv_list_free(pdc_kv_t *recs);

/** @brief Unlink n keys at tag: 0 < tag < MAXTAG writes a deletion marker at tag; NULLTAG
 * deletes the NULLTAG versions; MAXTAG deletes every version of the keys. Keys without such a
 * version are not an error. Errors: PDCBB_ERR_INVAL (key type, tag > MAXTAG), PDCBB_ERR_BAD_ID.
 */
PDC_EXPORT perr_t PDCkv_unlink_keys(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t n,
                                    const pdc_kv_key_t *keys, pdc_kv_event_t *ev);

/** @brief Open transaction tag (0 < tag < MAXTAG) on every shard of the KV object.
 * Errors: PDCBB_ERR_INVAL (tag 0 or >= MAXTAG), PDCBB_ERR_EXISTS (tag already open or
 * committed), PDCBB_ERR_BAD_ID. */
PDC_EXPORT perr_t PDCkv_trans_start(pdcid_t kv_id, pdc_kv_tag_t tag);

/** @brief Commit transaction tag: its writes on every shard become visible together
 * (prepare on every shard, then commit on every shard).
 * Errors: PDCBB_ERR_NOT_FOUND (tag is not an open transaction), PDCBB_ERR_INVAL. */
PDC_EXPORT perr_t PDCkv_trans_commit(pdcid_t kv_id, pdc_kv_tag_t tag);

/** @brief Abort transaction tag: every record written with tag is removed on every shard.
 * Errors: PDCBB_ERR_NOT_FOUND (tag is not an open transaction), PDCBB_ERR_INVAL. */
PDC_EXPORT perr_t PDCkv_trans_abort(pdcid_t kv_id, pdc_kv_tag_t tag);

/** @brief The seed's migration (iod_obj_set_layout): drain this KV object's records with
 * tag < tag (all shards) to the job's drain destination now (a partial drain, same format);
 * the records stay readable in the burst buffer. They go to
 * DEST/pdcbb.<job id>/kv-migrate/<container>/<name>@<tag>/ (characters other than
 * A-Z a-z 0-9 . _ - in the names become _), a directory `pdcbb kv` and PDCBB_DRAINED_DIR read
 * (docs/DRAIN-FORMAT.md "KV objects"). Blocking; every daemon of the job takes part.
 * @param kv_id an open KV object
 * @param tag 1..PDC_KV_MAXTAG: the records with a smaller tag are migrated
 * @return SUCCEED when the migration directory is complete, else FAIL.
 * Errors: PDCBB_ERR_INVAL (tag 0 or above PDC_KV_MAXTAG), PDCBB_ERR_NOT_FOUND (the job has no
 * drain destination), PDCBB_ERR_EXISTS (this object was already migrated at this tag),
 * PDCBB_ERR_READ_ONLY (a drained job), errors writing the destination (PDCBB_ERR_NOSPC, ...). */
PDC_EXPORT perr_t PDCkv_migrate(pdcid_t kv_id, pdc_kv_tag_t tag);

#ifdef __cplusplus
}
#endif

#endif /* PDC_KV_H */
