/*
 * pdcbb_proto.h - the wire protocol shared by the client library, the daemon and the stager.
 *
 * A message is a fixed 64-byte header followed by a payload. The header carries magic,
 * protocol version, op code, request id, flags, status (replies), payload length and a token
 * field: the job's auth token on the shared-memory channel, zeros over UCX, where each
 * connection proves the token once instead (HELLO, AUTH: pdcbb_auth.h). Every field is encoded
 * explicitly in little-endian order; nothing is sent as a raw C struct. Each op has one request
 * and one reply body, described once below as a field list; the structs and the field tables
 * that drive encoding and decoding are generated from those lists, so the two sides cannot
 * disagree about a layout.
 *
 * Decoding is bounds-checked field by field: a truncated, oversized or corrupted message gives
 * PDCBB_ERR_TRUNCATED, PDCBB_ERR_TOO_BIG or PDCBB_ERR_PROTO, never a crash. Decoded strings and
 * blobs point into the payload buffer (valid while it lives); decoded U64 arrays are allocated
 * and released by pdcbb_body_free().
 *
 * Values of op codes are append-only, like the error codes. All functions here are pure and
 * thread-safe.
 */
#ifndef PDCBB_PROTO_H
#define PDCBB_PROTO_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>

#include "pdcbb_error.h"

#define PDCBB_PROTO_MAGIC 0x42434450u /* "PDCB" in little-endian byte order */
#define PDCBB_PROTO_VERSION 2
#define PDCBB_TOKEN_LEN 32
#define PDCBB_HDR_LEN 64
/* Largest payload of one control message; larger data is split by the sender. */
#define PDCBB_PAYLOAD_MAX (16u << 20)
/* Longest string field (names, property strings), excluding the terminating NUL. */
#define PDCBB_STR_MAX 4095
/* Longest container or object name, excluding the NUL. */
#define PDCBB_NAME_MAX 1023
/* Largest tag value. */
#define PDCBB_TAG_VALUE_MAX (1u << 20)
/* Most dimensions of an object or region. */
#define PDCBB_NDIM_MAX 16
/* UCX active-message id of control messages. */
#define PDCBB_AM_ID_MSG 1

/* Header flags. */
#define PDCBB_MSG_FLAG_REPLY 0x1u

typedef struct pdcbb_msg_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t op;
    uint64_t req_id;
    uint32_t flags;
    int32_t status; /* replies: a pdcbb_err_t; requests: 0 */
    uint32_t payload_len;
    uint8_t token[PDCBB_TOKEN_LEN];
} pdcbb_msg_hdr_t;

/*
 * Ids of containers and objects as the daemons assign them ("meta ids"): the kind in the top
 * 4 bits, the home daemon's rank in the next 16 and a per-daemon sequence number in the low 44.
 * A meta id is never 0.
 */
#define PDCBB_META_KIND_CONT 1u
#define PDCBB_META_KIND_OBJ 2u
#define PDCBB_META_KIND_NODE 3u /* a directory or symbolic link of the mount (NS_CREATE) */
#define PDCBB_SERVERS_MAX 65535u
static inline uint64_t pdcbb_meta_id_make(unsigned kind, unsigned server, uint64_t seq)
{
    return ((uint64_t)kind << 60) | ((uint64_t)(server & 0xffffu) << 44) |
           (seq & ((1ull << 44) - 1));
}
static inline unsigned pdcbb_meta_id_kind(uint64_t id) { return (unsigned)(id >> 60); }
static inline unsigned pdcbb_meta_id_server(uint64_t id) { return (unsigned)((id >> 44) & 0xffffu); }

/* FNV-1a 64 of a NUL-terminated name: the daemon owning a name is hash % nservers. */
uint64_t pdcbb_name_hash(const char *name);
static inline unsigned pdcbb_home_server(const char *name, unsigned nservers)
{
    return nservers ? (unsigned)(pdcbb_name_hash(name) % nservers) : 0;
}

/*
 * Field kinds of message bodies:
 *   U32, I32, U64  scalars
 *   STR            const char *name (NUL-terminated, at most PDCBB_STR_MAX; NULL encodes as "")
 *   BLOB           const void *name + uint32_t name_len
 *   U64S           uint64_t *name + uint32_t name_count
 */
#define PDCBB_OBJ_PROPS(F, T)                                                                     \
    F(T, I32, type)                                                                               \
    F(T, U32, partition)                                                                          \
    F(T, U32, consistency)                                                                        \
    F(T, U32, user_id)                                                                            \
    F(T, U32, time_step)                                                                          \
    F(T, U64S, dims)                                                                              \
    F(T, STR, app_name)                                                                           \
    F(T, STR, data_loc)                                                                           \
    F(T, STR, tags)

/*
 * Properties of an op (the last five columns of PDCBB_OPS; pdcbb_op_props() reads them).
 * Transactions (equal to the store's PDCBB_TXN_*: bbd_dispatch.c checks).
 */
enum { PDCBB_OPTXN_READ = 0, PDCBB_OPTXN_WRITE = 1, PDCBB_OPTXN_REMOVE = 2 };
/* What the drained mode does with a request. */
enum { PDCBB_DRAINED_ANSWER = 0, PDCBB_DRAINED_READ_ONLY = 1, PDCBB_DRAINED_UNSUPPORTED = 2 };
/* Who sends it (bits). */
#define PDCBB_BY_CLIENT        1u
#define PDCBB_BY_TOOL          2u
#define PDCBB_BY_DAEMON        4u
#define PDCBB_BY_CLIENT_DAEMON (PDCBB_BY_CLIENT | PDCBB_BY_DAEMON)
#define PDCBB_BY_TOOL_DAEMON   (PDCBB_BY_TOOL | PDCBB_BY_DAEMON)
#define PDCBB_BY_ALL           (PDCBB_BY_CLIENT | PDCBB_BY_TOOL | PDCBB_BY_DAEMON)
/* Group commit: the handler only touches the store (no data files, no bulk part, no I/O
 * thread, answers at once), so requests of a shared-memory channel may run several in one
 * transaction (bbd_op_is_batchable, bbd_dispatch_batch). */
#define PDCBB_OPF_BATCH 0x01u
/* May travel over the shared-memory channel (pdcbb_shm_op_allowed): no bulk part, nothing
 * tied to a UCX connection, an answer at once. */
#define PDCBB_OPF_SHM 0x02u
/* The request or its reply may carry a bulk part (UCX active message PDCBB_AM_ID_DATA). */
#define PDCBB_OPF_BULK 0x04u
/* Reads or changes region data: the daemon first waits until every region write it handed to
 * its I/O thread is done and answered (bbd_server.c, op_needs_drain). */
#define PDCBB_OPF_DRAIN 0x08u
/* Touches region data: keeps its place in the daemon's queue behind every earlier message;
 * other requests may overtake queued ones (bbd_server.c, op_is_data). */
#define PDCBB_OPF_DATA 0x10u
/* A client may send it through another daemon (FORWARD, pdcbb_op_forwardable). */
#define PDCBB_OPF_FWD 0x20u
/* GATHER may carry it (pdcbb_op_gatherable): a read answered at once. */
#define PDCBB_OPF_GATHER 0x40u
/* Op codes are below this (arrays indexed by op code stay small). */
#define PDCBB_OP_VALUES_MAX 256

/*
 * Every request kind (op), one row each: everything the code decides per op is here, and the
 * lists the daemon, the client and the documentation use are generated from these rows
 * (pdcbb_op_props; docs/INTERNALS.md "Adding a request kind"). A row is
 *
 *   X(OPNAME, value, lowercase name, request fields, reply fields,
 *     transaction, stats kind, drained mode, senders, flags)
 *
 * value        the op code on the wire: append-only, unique, below PDCBB_OP_VALUES_MAX.
 * fields       the request's and the reply's field lists (below).
 * transaction  the store transaction the daemon runs the handler in (bbd_dispatch.c; every
 *              handler runs in one, a read one for ops that do not touch the store): READ;
 *              WRITE, committed when the handler succeeded (refused with SHUTDOWN while the
 *              daemon stops); REMOVE, a write that only deletes (it may use the store's reserve).
 * stats kind   the kind of traffic it counts as (pdcbb_stat_kind_t without PDCBB_KIND_).
 * drained mode what libpdc's read-only drained mode (client/client_drained.c) does with it:
 *              ANSWER it from the drain; refuse it with READ_ONLY (it would change the job's
 *              data: its own store, another daemon's or the drain directory); refuse it with
 *              UNSUPPORTED (the drain has nothing to answer it with).
 * senders      who sends it: CLIENT (libpdc, for calls of its public API), TOOL (libpdc, only
 *              for pdcbb's own programs: `pdcbb bcast`, the mount), DAEMON (a daemon to
 *              another, on its own account); CLIENT_DAEMON, TOOL_DAEMON, ALL: several.
 * flags        PDCBB_OPF_* or-ed, 0 for none (above: what each means, where it is used).
 */
/* clang-format off */
#define PDCBB_OPS(X)                                                                               \
    X(HELLO, 1, hello, PDCBB_HELLO_REQ, PDCBB_HELLO_REP,                                           \
      READ, OTHER, ANSWER, ALL, PDCBB_OPF_SHM)                                                     \
    X(CONT_CREATE, 2, cont_create, PDCBB_CONT_CREATE_REQ, PDCBB_CONT_ID_REP,                       \
      WRITE, METADATA, READ_ONLY, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)         \
    X(CONT_OPEN, 3, cont_open, PDCBB_NAME_REQ, PDCBB_CONT_ID_REP,                                  \
      READ, METADATA, ANSWER, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)             \
    X(CONT_INFO, 4, cont_info, PDCBB_ID_REQ, PDCBB_CONT_INFO_REP,                                  \
      READ, METADATA, ANSWER, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)             \
    X(CONT_DEL, 5, cont_del, PDCBB_ID_REQ, PDCBB_EMPTY,                                            \
      REMOVE, METADATA, READ_ONLY, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                          \
    X(CONT_LIST, 6, cont_list, PDCBB_LIST_REQ, PDCBB_IDS_REP,                                      \
      READ, METADATA, ANSWER, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                               \
    X(CONT_OBJIDS_PUT, 7, cont_objids_put, PDCBB_ID_IDS_REQ, PDCBB_EMPTY,                          \
      WRITE, METADATA, READ_ONLY, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)         \
    X(CONT_OBJIDS_GET, 8, cont_objids_get, PDCBB_ID_REQ, PDCBB_IDS_REP,                            \
      READ, METADATA, ANSWER, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)             \
    X(CONT_OBJIDS_DEL, 9, cont_objids_del, PDCBB_ID_IDS_REQ, PDCBB_EMPTY,                          \
      REMOVE, METADATA, READ_ONLY, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)        \
    X(TAG_PUT, 10, tag_put, PDCBB_TAG_PUT_REQ, PDCBB_EMPTY,                                        \
      WRITE, METADATA, READ_ONLY, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)         \
    X(TAG_GET, 11, tag_get, PDCBB_TAG_NAME_REQ, PDCBB_TAG_GET_REP,                                 \
      READ, METADATA, ANSWER, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)             \
    X(TAG_DEL, 12, tag_del, PDCBB_TAG_NAME_REQ, PDCBB_EMPTY,                                       \
      REMOVE, METADATA, READ_ONLY, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)        \
    X(TAG_QUERY, 13, tag_query, PDCBB_TAG_QUERY_REQ, PDCBB_IDS_REP,                                \
      READ, QUERY, ANSWER, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                                  \
    X(OBJ_CREATE, 14, obj_create, PDCBB_OBJ_CREATE_REQ, PDCBB_OBJ_INFO_REP,                        \
      WRITE, METADATA, READ_ONLY, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)         \
    X(OBJ_OPEN, 15, obj_open, PDCBB_NAME_REQ, PDCBB_OBJ_INFO_REP,                                  \
      READ, METADATA, ANSWER, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)             \
    X(OBJ_INFO, 16, obj_info, PDCBB_ID_REQ, PDCBB_OBJ_INFO_REP,                                    \
      READ, METADATA, ANSWER, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)             \
    X(OBJ_DEL, 17, obj_del, PDCBB_ID_REQ, PDCBB_EMPTY,                                             \
      REMOVE, METADATA, READ_ONLY, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                          \
    X(OBJ_SET_DIMS, 18, obj_set_dims, PDCBB_ID_IDS_REQ, PDCBB_EMPTY,                               \
      WRITE, METADATA, READ_ONLY, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                           \
    X(OBJ_LIST, 19, obj_list, PDCBB_OBJ_LIST_REQ, PDCBB_IDS_REP,                                   \
      READ, METADATA, ANSWER, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                               \
    X(STATS, 20, stats, PDCBB_EMPTY, PDCBB_STATS_REP,                                              \
      READ, OTHER, ANSWER, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD | PDCBB_OPF_GATHER)               \
    X(CONT_PERSIST, 21, cont_persist, PDCBB_ID_REQ, PDCBB_EMPTY,                                   \
      WRITE, DRAIN, READ_ONLY, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                              \
    X(DATA_WRITE, 22, data_write, PDCBB_DATA_REQ, PDCBB_DATA_REP,                                  \
      WRITE, DATA, READ_ONLY, CLIENT, PDCBB_OPF_BULK | PDCBB_OPF_DATA | PDCBB_OPF_FWD)             \
    X(DATA_READ, 23, data_read, PDCBB_DATA_REQ, PDCBB_DATA_REP,                                    \
      READ, DATA, ANSWER, CLIENT,                                                                  \
      PDCBB_OPF_BULK | PDCBB_OPF_DRAIN | PDCBB_OPF_DATA | PDCBB_OPF_FWD)                           \
    X(DATA_FLUSH, 24, data_flush, PDCBB_ID_REQ, PDCBB_EMPTY,                                       \
      READ, DRAIN, ANSWER, CLIENT,                                                                 \
      PDCBB_OPF_SHM | PDCBB_OPF_DRAIN | PDCBB_OPF_DATA | PDCBB_OPF_FWD)                            \
    X(DATA_DROP, 25, data_drop, PDCBB_ID_REQ, PDCBB_EMPTY,                                         \
      REMOVE, DATA, READ_ONLY, CLIENT,                                                             \
      PDCBB_OPF_SHM | PDCBB_OPF_DRAIN | PDCBB_OPF_DATA | PDCBB_OPF_FWD)                            \
    X(MAP_PUT, 26, map_put, PDCBB_MAP_PUT_REQ, PDCBB_MAP_PUT_REP,                                  \
      WRITE, DATA, READ_ONLY, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_DATA | PDCBB_OPF_FWD)              \
    X(MAP_GET, 27, map_get, PDCBB_MAP_GET_REQ, PDCBB_MAP_GET_REP,                                  \
      READ, DATA, ANSWER, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_DATA | PDCBB_OPF_FWD)                  \
    X(DATA_RESIZE, 28, data_resize, PDCBB_ID_IDS_REQ, PDCBB_EMPTY,                                 \
      WRITE, DATA, READ_ONLY, CLIENT,                                                              \
      PDCBB_OPF_SHM | PDCBB_OPF_DRAIN | PDCBB_OPF_DATA | PDCBB_OPF_FWD)                            \
    X(JOB_TABLE, 29, job_table, PDCBB_JOB_TABLE_REQ, PDCBB_JOB_TABLE_REP,                          \
      READ, OTHER, UNSUPPORTED, CLIENT, 0)                                                         \
    X(DATA_DIRECT, 30, data_direct, PDCBB_DATA_DIRECT_REQ, PDCBB_DATA_DIRECT_REP,                  \
      WRITE, DATA, UNSUPPORTED, CLIENT, PDCBB_OPF_BULK | PDCBB_OPF_DRAIN | PDCBB_OPF_DATA)         \
    X(TABLE_GATHER, 31, table_gather, PDCBB_TABLE_GATHER_REQ, PDCBB_JOB_TABLE_REP,                 \
      READ, OTHER, UNSUPPORTED, DAEMON, 0)                                                         \
    X(FORWARD, 32, forward, PDCBB_FORWARD_REQ, PDCBB_FORWARD_REP,                                  \
      READ, FORWARD, UNSUPPORTED, CLIENT, PDCBB_OPF_BULK)                                          \
    X(GATHER, 33, gather, PDCBB_GATHER_REQ, PDCBB_GATHER_REP,                                      \
      READ, OTHER, UNSUPPORTED, CLIENT_DAEMON, PDCBB_OPF_BULK | PDCBB_OPF_DRAIN)                   \
    X(QUERY_EVAL, 40, query_eval, PDCBB_QUERY_EVAL_REQ, PDCBB_QUERY_EVAL_REP,                      \
      READ, QUERY, ANSWER, CLIENT,                                                                 \
      PDCBB_OPF_BULK | PDCBB_OPF_DRAIN | PDCBB_OPF_FWD | PDCBB_OPF_GATHER)                         \
    X(QUERY_VALUES, 41, query_values, PDCBB_QUERY_VALUES_REQ, PDCBB_QUERY_VALUES_REP,              \
      READ, QUERY, ANSWER, CLIENT, PDCBB_OPF_BULK | PDCBB_OPF_DRAIN | PDCBB_OPF_FWD)               \
    X(DART_INSERT, 50, dart_insert, PDCBB_DART_REF_REQ, PDCBB_EMPTY,                               \
      WRITE, QUERY, READ_ONLY, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)            \
    X(DART_DELETE, 51, dart_delete, PDCBB_DART_REF_REQ, PDCBB_EMPTY,                               \
      REMOVE, QUERY, READ_ONLY, CLIENT, PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_FWD)           \
    X(DART_SEARCH, 52, dart_search, PDCBB_DART_SEARCH_REQ, PDCBB_IDS_REP,                          \
      READ, QUERY, UNSUPPORTED, CLIENT_DAEMON, PDCBB_OPF_FWD)                                      \
    X(TAG_SEARCH, 53, tag_search, PDCBB_TAG_SEARCH_REQ, PDCBB_IDS_REP,                             \
      READ, QUERY, ANSWER, CLIENT_DAEMON, PDCBB_OPF_FWD)                                           \
    X(LOCK_OBTAIN, 60, lock_obtain, PDCBB_LOCK_OBTAIN_REQ, PDCBB_LOCK_OBTAIN_REP,                  \
      READ, DATA, UNSUPPORTED, CLIENT, 0)                                                          \
    X(LOCK_RELEASE, 61, lock_release, PDCBB_LOCK_RELEASE_REQ, PDCBB_EMPTY,                         \
      READ, DATA, UNSUPPORTED, CLIENT, 0)                                                          \
    X(KV_CREATE, 70, kv_create, PDCBB_KV_CREATE_REQ, PDCBB_KV_INFO_REP,                            \
      WRITE, KV, READ_ONLY, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                                 \
    X(KV_OPEN, 71, kv_open, PDCBB_KV_OPEN_REQ, PDCBB_KV_INFO_REP,                                  \
      READ, KV, ANSWER, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                                     \
    X(KV_DELETE, 72, kv_delete, PDCBB_KV_DELETE_REQ, PDCBB_EMPTY,                                  \
      REMOVE, KV, READ_ONLY, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                                \
    X(KV_SET, 73, kv_set, PDCBB_KV_SET_REQ, PDCBB_KV_SET_REP,                                      \
      WRITE, KV, READ_ONLY, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                                 \
    X(KV_GET, 74, kv_get, PDCBB_KV_GET_REQ, PDCBB_KV_GET_REP,                                      \
      READ, KV, ANSWER, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                                     \
    X(KV_COUNT, 75, kv_count, PDCBB_KV_COUNT_REQ, PDCBB_KV_COUNT_REP,                              \
      READ, KV, ANSWER, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                                     \
    X(KV_LIST, 76, kv_list, PDCBB_KV_LIST_REQ, PDCBB_KV_LIST_REP,                                  \
      READ, KV, ANSWER, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                                     \
    X(KV_TRANS, 77, kv_trans, PDCBB_KV_TRANS_REQ, PDCBB_EMPTY,                                     \
      WRITE, KV, READ_ONLY, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                                 \
    X(KV_PART, 78, kv_part, PDCBB_KV_PART_REQ, PDCBB_EMPTY,                                        \
      WRITE, KV, READ_ONLY, CLIENT, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                                 \
    X(KV_MIGRATE, 80, kv_migrate, PDCBB_KV_MIGRATE_REQ, PDCBB_KV_MIGRATE_REP,                      \
      READ, KV, READ_ONLY, CLIENT, PDCBB_OPF_FWD)                                                  \
    X(OBJ_EXTEND, 90, obj_extend, PDCBB_OBJ_EXTEND_REQ, PDCBB_OBJ_EXTENT_REP,                      \
      WRITE, METADATA, READ_ONLY, CLIENT, PDCBB_OPF_FWD)                                           \
    X(OBJ_EXTENT, 91, obj_extent, PDCBB_ID_REQ, PDCBB_OBJ_EXTENT_REP,                              \
      READ, METADATA, ANSWER, CLIENT, PDCBB_OPF_FWD)                                               \
    X(OBJ_RESERVE, 92, obj_reserve, PDCBB_OBJ_EXTEND_REQ, PDCBB_OBJ_RESERVE_REP,                   \
      WRITE, METADATA, READ_ONLY, CLIENT, PDCBB_OPF_FWD)                                           \
    X(APPEND_COPY, 93, append_copy, PDCBB_APPEND_COPY_REQ, PDCBB_APPEND_COPY_REP,                  \
      READ, APPEND, READ_ONLY, CLIENT, PDCBB_OPF_DRAIN | PDCBB_OPF_DATA | PDCBB_OPF_FWD)           \
    X(APPEND_WRITE, 94, append_write, PDCBB_DATA_REQ, PDCBB_DATA_REP,                              \
      WRITE, APPEND, READ_ONLY, DAEMON, PDCBB_OPF_BULK | PDCBB_OPF_DATA)                           \
    X(STRIDED_WRITE, 95, strided_write, PDCBB_DATA_REQ, PDCBB_DATA_REP,                            \
      WRITE, DATA, READ_ONLY, CLIENT,                                                              \
      PDCBB_OPF_BULK | PDCBB_OPF_DRAIN | PDCBB_OPF_DATA | PDCBB_OPF_FWD)                           \
    X(STRIDED_READ, 96, strided_read, PDCBB_DATA_REQ, PDCBB_DATA_REP,                              \
      READ, DATA, UNSUPPORTED, CLIENT,                                                             \
      PDCBB_OPF_BULK | PDCBB_OPF_DRAIN | PDCBB_OPF_DATA | PDCBB_OPF_FWD)                           \
    X(BCAST_OPEN, 100, bcast_open, PDCBB_BCAST_OPEN_REQ, PDCBB_BCAST_REP,                          \
      READ, BROADCAST, UNSUPPORTED, TOOL_DAEMON, 0)                                                \
    X(BCAST_CHUNK, 101, bcast_chunk, PDCBB_BCAST_CHUNK_REQ, PDCBB_BCAST_REP,                       \
      READ, BROADCAST, UNSUPPORTED, TOOL_DAEMON, PDCBB_OPF_BULK)                                   \
    X(BCAST_CLOSE, 102, bcast_close, PDCBB_BCAST_CLOSE_REQ, PDCBB_BCAST_REP,                       \
      READ, BROADCAST, UNSUPPORTED, TOOL_DAEMON, 0)                                                \
    X(AUTH, 103, auth, PDCBB_AUTH_REQ, PDCBB_EMPTY,                                                \
      READ, OTHER, ANSWER, ALL, 0)                                                                 \
    X(NS_LOOKUP, 110, ns_lookup, PDCBB_NS_NAME_REQ, PDCBB_NS_ENTRY_REP,                            \
      READ, METADATA, UNSUPPORTED, TOOL, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                            \
    X(NS_CREATE, 111, ns_create, PDCBB_NS_CREATE_REQ, PDCBB_NS_CHANGE_REP,                         \
      WRITE, METADATA, READ_ONLY, TOOL, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                             \
    X(NS_READDIR, 112, ns_readdir, PDCBB_NS_READDIR_REQ, PDCBB_NS_READDIR_REP,                     \
      READ, METADATA, UNSUPPORTED, TOOL, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                            \
    X(NS_UNLINK, 113, ns_unlink, PDCBB_NS_UNLINK_REQ, PDCBB_NS_ENTRY_REP,                          \
      REMOVE, METADATA, READ_ONLY, TOOL, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                            \
    X(NS_RMDIR, 114, ns_rmdir, PDCBB_NS_RMDIR_REQ, PDCBB_EMPTY,                                    \
      WRITE, METADATA, READ_ONLY, TOOL, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                             \
    X(NS_RENAME, 115, ns_rename, PDCBB_NS_RENAME_REQ, PDCBB_NS_CHANGE_REP,                         \
      WRITE, METADATA, READ_ONLY, TOOL, PDCBB_OPF_SHM | PDCBB_OPF_FWD)                             \
    X(NS_SETATTR, 116, ns_setattr, PDCBB_NS_SETATTR_REQ, PDCBB_NS_ENTRY_REP,                       \
      WRITE, METADATA, READ_ONLY, TOOL, PDCBB_OPF_SHM | PDCBB_OPF_FWD)
/* clang-format on */

#define PDCBB_EMPTY(F, T)
/* The connection handshake (common/pdcbb_auth.h): HELLO's nonce is the client's, its reply's
 * nonce the daemon's and proof the daemon's proof of the token; AUTH carries the client's. */
#define PDCBB_HELLO_REQ(F, T)                                                                     \
    F(T, U32, client_pid) F(T, U64, job_id) F(T, STR, client_node) F(T, BLOB, nonce)
#define PDCBB_HELLO_REP(F, T)                                                                     \
    F(T, U32, rank) F(T, U32, nservers) F(T, U64, job_id) F(T, STR, node) F(T, BLOB, nonce)      \
    F(T, BLOB, proof)
#define PDCBB_AUTH_REQ(F, T) F(T, BLOB, proof)
#define PDCBB_NAME_REQ(F, T) F(T, STR, name)
#define PDCBB_ID_REQ(F, T) F(T, U64, id)
#define PDCBB_ID_IDS_REQ(F, T) F(T, U64, id) F(T, U64S, ids)
#define PDCBB_IDS_REP(F, T) F(T, U64S, ids) F(T, U32, more)
#define PDCBB_LIST_REQ(F, T) F(T, U64, after) F(T, U32, max)
#define PDCBB_OBJ_LIST_REQ(F, T) F(T, U64, cont_id) F(T, U64, after) F(T, U32, max)
#define PDCBB_CONT_CREATE_REQ(F, T) F(T, STR, name) F(T, U32, lifetime)
#define PDCBB_CONT_ID_REP(F, T) F(T, U64, id)
#define PDCBB_CONT_INFO_REP(F, T) F(T, U64, id) F(T, STR, name) F(T, U32, lifetime)
#define PDCBB_TAG_PUT_REQ(F, T)                                                                   \
    F(T, U64, id) F(T, STR, name) F(T, I32, type) F(T, BLOB, value)
#define PDCBB_TAG_NAME_REQ(F, T) F(T, U64, id) F(T, STR, name)
#define PDCBB_TAG_GET_REP(F, T) F(T, I32, type) F(T, BLOB, value)
/* match_value 0: every object that has the tag; 1: only those whose value equals value. */
#define PDCBB_TAG_QUERY_REQ(F, T)                                                                 \
    F(T, STR, name) F(T, U32, match_value) F(T, BLOB, value) F(T, U32, kind)
#define PDCBB_OBJ_CREATE_REQ(F, T) F(T, U64, cont_id) F(T, STR, name) PDCBB_OBJ_PROPS(F, T)
#define PDCBB_OBJ_INFO_REP(F, T)                                                                  \
    F(T, U64, id) F(T, U64, cont_id) F(T, STR, name) PDCBB_OBJ_PROPS(F, T)
#define PDCBB_STATS_REP(F, T)                                                                     \
    F(T, U32, rank) F(T, U64, requests) F(T, U64, auth_failures) F(T, U64, proto_errors)          \
    F(T, U64, containers) F(T, U64, objects) F(T, U64, connections) F(T, U64, shm_requests)     \
    F(T, U64, shm_channels) F(T, U64, shm_channels_open)                                        \
    PDCBB_STATS_LIVE(F, T)
/* Live counters (`pdcbb stats`, common/pdcbb_stats.h): the daemon's node and job, uptime in
 * ms, requests queued or being processed (besides this one), region data bytes stored and the
 * daemon's capacity, replies with a non-OK status, and per kind of op (pdcbb_stat_kind_t)
 * PDCBB_STATS_PER_KIND values: messages and bytes received, messages and bytes sent, errors. */
#define PDCBB_STATS_LIVE(F, T)                                                                    \
    F(T, STR, node) F(T, U64, job_id) F(T, U64, uptime_ms) F(T, U64, in_flight)                 \
    F(T, U64, capacity_used) F(T, U64, capacity_limit) F(T, U64, errors) F(T, U64S, kinds)

/*
 * Region data. A DATA_WRITE or DATA_READ carries a batch of region descriptors, flattened into
 * descs as, per region: object id, element size, ndim, the object's dims (ndim values),
 * offsets (ndim), sizes (ndim). Write data is the message's bulk part: the regions' elements
 * packed row-major, one region after the other. results holds one status per region; a read
 * reply's bulk part holds every region's elements (zeros for a failed region).
 * DATA_FLUSH / DATA_DROP: id is an object id (0 for DATA_FLUSH: every object).
 * DATA_RESIZE: the object's new dims (ids); data beyond the new first extent is discarded.
 * MAP_PUT / MAP_GET run on an object's home daemon for the placements whose data location is
 * remembered (PDC_REGION_LOCAL, PDC_REGION_DYNAMIC): entries are, per region, data daemon
 * (UINT32_MAX in MAP_PUT: let the home daemon choose the one with the fewest bytes), bytes,
 * ndim, offsets, sizes. MAP_PUT answers the data daemon of each entry; MAP_GET answers the
 * entries overlapping a box, oldest first, each prefixed by its sequence number. A MAP_PUT
 * carries at most PDCBB_MAP_PUT_REGIONS_MAX regions (TOO_BIG), of an object whose placement
 * uses the map (else INVAL).
 */
#define PDCBB_MAP_PUT_REGIONS_MAX 64
/* The most bytes one DATA_WRITE, DATA_READ or STRIDED_READ moves (TOO_BIG above it); the
 * client library splits larger transfers (client_transfer.c). */
#define PDCBB_DATA_BULK_MAX     ((uint64_t)256 << 20)
#define PDCBB_DATA_REQ(F, T) F(T, U64S, descs)
#define PDCBB_DATA_REP(F, T) F(T, U64S, results)
#define PDCBB_MAP_PUT_REQ(F, T) F(T, U64, id) F(T, U64S, entries)
#define PDCBB_MAP_PUT_REP(F, T) F(T, U64S, daemons)
#define PDCBB_MAP_GET_REQ(F, T) F(T, U64, id) F(T, U64S, box)
#define PDCBB_MAP_GET_REP(F, T) F(T, U64S, entries)
/*
 * JOB_TABLE: the endpoint records (with tokens) of every daemon of the job, as a daemon knows
 * them (gathered up and down the tree of daemons, TABLE_GATHER below): records is the text of
 * pdcbb_endpoint_format(with_token) per daemon, separated by "--\n". complete is 1 when every
 * rank is there; otherwise problem says which daemons are missing and why (a node whose prolog
 * failed names its reason). refresh R+1 first re-reads the record of daemon R from the
 * rendezvous directory (R was restarted at a new address); 0 re-reads nothing.
 */
#define PDCBB_JOB_TABLE_REQ(F, T) F(T, U32, refresh)
#define PDCBB_JOB_TABLE_REP(F, T) F(T, U32, complete) F(T, BLOB, records) F(T, STR, problem)
#define PDCBB_JOB_TABLE_SEP "--\n"
/*
 * TABLE_GATHER, from a daemon to its parent in the job's tree of daemons (docs/PROTOCOL.md,
 * "Finding the daemons"): the records (JOB_TABLE text) of every daemon of the sender's subtree
 * that started, and the ranks of the subtree known to be missing. The reply, once the root
 * has every record, is the JOB_TABLE reply: the whole table.
 */
#define PDCBB_TABLE_GATHER_REQ(F, T) F(T, U32, from) F(T, BLOB, records) F(T, U64S, missing)
/*
 * FORWARD (bbd/bbd_forward.c, docs/PROTOCOL.md "Forwarding"): a client's request for another
 * daemon of the job, sent to a daemon of the client's own node, which sends it on over its one
 * connection to that daemon, so that a daemon holds connections to its node's clients and to
 * the other daemons, not to every client of the job. rank is the daemon the request is for,
 * msg the whole request (header and body; the header's request id and token are replaced on the
 * way). A bulk part of the request is FORWARD's bulk part. The reply's msg is that daemon's
 * whole reply (its status included) and its bulk part FORWARD's; FORWARD's own status is not
 * OK only when the request did not reach that daemon or no reply came back (the connection
 * failed). pdcbb_op_forwardable says which ops may be forwarded.
 */
#define PDCBB_FORWARD_REQ(F, T) F(T, U32, rank) F(T, BLOB, msg)
#define PDCBB_FORWARD_REP(F, T) F(T, BLOB, msg)
/*
 * GATHER (bbd/bbd_gather.c, docs/PROTOCOL.md "Fan-out"): requests for many daemons of the job
 * (a query over a spread object, everyone's live counters) sent as one message down the tree of
 * daemons rooted at daemon tree - 1, with every daemon's reply carried back up in one message.
 * msgs holds whole requests (header and body, one after the other): with every = 0 one per
 * entry of ranks, for that daemon; with every = 1 a single one, for every daemon of the
 * receiver's subtree (ranks empty). The reply lists each daemon's whole reply (its status
 * included: a daemon that could not be reached answers with its error) in msgs, the daemon in
 * ranks, and the length of its bulk part in bulk_lens; the bulk parts, in the same order, are
 * GATHER's. pdcbb_op_gatherable says which ops may be carried.
 */
#define PDCBB_GATHER_REQ(F, T) F(T, U32, tree) F(T, U32, every) F(T, U64S, ranks) F(T, BLOB, msgs)
#define PDCBB_GATHER_REP(F, T) F(T, U64S, ranks) F(T, U64S, bulk_lens) F(T, BLOB, msgs)
/* The bytes FORWARD adds to the control part of a request: its header and fields. */
#define PDCBB_FORWARD_OVERHEAD (PDCBB_HDR_LEN + 16)
/*
 * DATA_DIRECT: a client on the daemon's node reads and writes the object data files itself
 * (one copy, like a plain write(2)); the daemon checks, reserves and accounts. descs as for
 * DATA_WRITE. mode:
 *   PROBE   no descs; dir is the daemon's object directory, results its st_dev and st_ino (the
 *           client uses the path only if it opens the very same directory).
 *   WRITE   check each region and reserve its bytes against the capacity (held by the
 *           connection until DONE or until the connection ends);
 *   READ    check each region;
 *           both answer per region: status, st_dev, st_ino of the object's data file (0, 0
 *           for a read of an object with no data here: zeros). A WRITE refused for space adds
 *           capacity, used and needed bytes, as DATA_WRITE.
 *   DONE    the client wrote the WRITE regions listed: release their reservation and count the
 *           files' new size; results: one status per region.
 * The data file of an object is PDCBB_DATA_FILE_FMT in dir.
 */
enum { PDCBB_DIRECT_PROBE = 0, PDCBB_DIRECT_WRITE = 1, PDCBB_DIRECT_READ = 2,
       PDCBB_DIRECT_DONE = 3 };
#define PDCBB_DATA_FILE_FMT "%016" PRIx64 ".dat"
#define PDCBB_DATA_DIRECT_REQ(F, T) F(T, U32, mode) F(T, U64S, descs)
#define PDCBB_DATA_DIRECT_REP(F, T) F(T, U64S, results) F(T, STR, dir)
/*
 * Region locks (bbd/bbd_lock.c), granted by an object's home daemon to a client connection.
 * LOCK_OBTAIN: id is the object, access PDC_READ (1) or PDC_WRITE (2), mode PDC_BLOCK (0: the
 * reply is sent when the lock is granted) or PDC_NOBLOCK (1: PDCBB_ERR_BUSY at once if it cannot
 * be), box = ndim, offsets, sizes. Overlapping locks exclude each other unless both are reads;
 * requests are granted in arrival order. A conflict with a lock of the same connection is
 * PDCBB_ERR_BUSY at once (it would wait for itself). The reply's lock identifies the lock.
 * LOCK_RELEASE: id is the object, lock a lock of this connection. Every lock and waiting
 * request of a connection that ends is dropped.
 */
#define PDCBB_LOCK_OBTAIN_REQ(F, T)                                                               \
    F(T, U64, id) F(T, U32, access) F(T, U32, mode) F(T, U64S, box)
#define PDCBB_LOCK_OBTAIN_REP(F, T) F(T, U64, lock)
#define PDCBB_LOCK_RELEASE_REQ(F, T) F(T, U64, id) F(T, U64, lock)
/*
 * Tag search (bbd/bbd_tagidx.c). DART_INSERT / DART_DELETE add or remove the object reference
 * (ref_type, key, value, data) on the daemon that owns data (pdcbb_dart_home); DART_SEARCH asks
 * one daemon for the data of its references whose key matches the pattern key and whose value
 * matches the pattern value (pdcbb_pattern.h; data is ignored). TAG_SEARCH: ids of the
 * containers/objects (kind 0: both) of one daemon with a tag whose name matches the pattern
 * name and whose value is anything (value_mode 0), exactly the bytes value (1), or whose text
 * matches the pattern value (2). Results are sorted by id and distinct.
 */
enum { PDCBB_TAGVAL_ANY = 0, PDCBB_TAGVAL_BYTES = 1, PDCBB_TAGVAL_PATTERN = 2 };
#define PDCBB_DART_REF_REQ(F, T) F(T, U32, ref_type) F(T, STR, key) F(T, STR, value) F(T, U64, data)
/* tree as TAG_SEARCH's (below): 0 this daemon's references, 1 + R every daemon's. */
#define PDCBB_DART_SEARCH_REQ(F, T) PDCBB_DART_REF_REQ(F, T) F(T, U32, tree)
/* tree 0: this daemon's matches; 1 + R: every daemon's, through the tree rooted at daemon R
 * (bbd/bbd_fanout.c), R being the daemon asked. */
#define PDCBB_TAG_SEARCH_REQ(F, T)                                                                 \
    F(T, STR, name) F(T, U32, value_mode) F(T, BLOB, value) F(T, U32, kind) F(T, U32, tree)
/* The daemon that holds the DART references of data: an object id's home daemon, else
 * data mod nservers. */
static inline unsigned pdcbb_dart_home(uint64_t data, unsigned nservers)
{
    if (nservers == 0)
        return 0;
    if (data >> 60 == 2u && ((data >> 44) & 0xffffu) < nservers)
        return (unsigned)((data >> 44) & 0xffffu);
    return (unsigned)(data % nservers);
}
/*
 * Data queries (common/pdcbb_query.h, docs/PROTOCOL.md "Queries"), evaluated by each data daemon
 * over its own pieces of an object. QUERY_EVAL: type is the object's pdc_var_type_t, dims its
 * shape, prog the predicate program (3 words per node, postfix), pieces the boxes this daemon
 * owns (per piece: nexcl, offsets, sizes, then nexcl boxes of elements another daemon holds
 * newer values of), mode a PDCBB_QMODE_*, resume_piece/resume_elem where to continue, max_hits
 * the room for hits, hist (HIST mode) lo and incr as double bits and nbin. Reply: count (hits
 * in this reply, or elements seen), more with next_piece/next_elem, blocks scanned and skipped,
 * stats (STATS: min and max bits, has), bins (HIST); in HITS mode the bulk part holds count
 * little-endian uint64 linear element indices. QUERY_VALUES: the values of an object at
 * linear indices idx (bulk part of the reply: count elements, zeros where nothing was written).
 */
#define PDCBB_QUERY_EVAL_REQ(F, T)                                                                \
    F(T, U64, id) F(T, I32, type) F(T, U32, mode) F(T, U64S, dims) F(T, U64S, prog)             \
    F(T, U64S, pieces) F(T, U64, resume_piece) F(T, U64, resume_elem) F(T, U64, max_hits)       \
    F(T, U64S, hist)
#define PDCBB_QUERY_EVAL_REP(F, T)                                                                \
    F(T, U64, count) F(T, U32, more) F(T, U64, next_piece) F(T, U64, next_elem)                 \
    F(T, U64, scanned) F(T, U64, skipped) F(T, U64S, stats) F(T, U64S, bins)
#define PDCBB_QUERY_VALUES_REQ(F, T) F(T, U64, id) F(T, I32, type) F(T, U64S, dims) F(T, U64S, idx)
#define PDCBB_QUERY_VALUES_REP(F, T) F(T, U64, count)
/*
 * KV objects (bbd/bbd_kv.c, common/pdcbb_kv.h, docs/KV.md). Keys travel encoded (pdcbb_kv.h).
 * KV_CREATE: id 0 on the home daemon: create (cont_id, name) with that layout and allocate the
 * id; id != 0: register the meta record of id on a shard daemon. KV_OPEN: by (cont_id, name)
 * on the home daemon when id is 0, else by id on any daemon holding its meta. KV_DELETE: every
 * record, transaction and the meta of id on this daemon (and the name on the home daemon).
 * KV_SET: count records recs (pdcbb_kv_wset_*) with tag, one store transaction; replies how
 * many were applied. KV_GET: the version of key visible at tag: value bytes from value_off, at
 * most max_len; total_len is the whole length. KV_COUNT: keys visible at tag here. KV_LIST:
 * from key start (empty: the first key; flags PDCBB_KV_LIST_AFTER: strictly after it), skip
 * visible keys, then at most max records and about max_bytes of reply (flags
 * PDCBB_KV_LIST_VALUES: with values), records recs (pdcbb_kv_wlist_*), more 1 if keys remain.
 * KV_COUNT and KV_LIST also answer gen, the object's write generation on this daemon (changed by
 * every KV_SET and every prepare, commit or abort): a client resumes a paged listing from where
 * the previous page ended only if no shard's generation changed; and tgen, its transaction
 * generation (changed by every prepare and commit): a reader of several shards whose tgen
 * changed on one of them while it read reads again (it could have seen part of a commit).
 * KV_TRANS: mode PDCBB_KV_TRANS_* of transaction tag. KV_PART: a piece of a value larger than
 * one message (upload id, offset), kept until a SET_PART record takes it.
 */
enum { PDCBB_KV_LIST_AFTER = 1, PDCBB_KV_LIST_VALUES = 2 };
#define PDCBB_KV_CREATE_REQ(F, T)                                                                 \
    F(T, U64, id) F(T, U64, cont_id) F(T, STR, name) F(T, U32, key_type) F(T, U32, sharding)     \
    F(T, U32, max_key_len) F(T, U64, max_value_len) F(T, U64S, shards)
#define PDCBB_KV_INFO_REP(F, T)                                                                   \
    F(T, U64, id) F(T, U64, cont_id) F(T, STR, name) F(T, U32, key_type) F(T, U32, sharding)     \
    F(T, U32, max_key_len) F(T, U64, max_value_len) F(T, U64S, shards)
#define PDCBB_KV_OPEN_REQ(F, T) F(T, U64, id) F(T, U64, cont_id) F(T, STR, name)
#define PDCBB_KV_DELETE_REQ(F, T) F(T, U64, id) F(T, U32, home)
#define PDCBB_KV_SET_REQ(F, T) F(T, U64, id) F(T, U64, tag) F(T, U32, count) F(T, BLOB, recs)
#define PDCBB_KV_SET_REP(F, T) F(T, U32, applied)
#define PDCBB_KV_GET_REQ(F, T)                                                                    \
    F(T, U64, id) F(T, U64, tag) F(T, BLOB, key) F(T, U64, value_off) F(T, U64, max_len)
#define PDCBB_KV_GET_REP(F, T) F(T, U64, found_tag) F(T, U64, total_len) F(T, BLOB, value)
#define PDCBB_KV_COUNT_REQ(F, T) F(T, U64, id) F(T, U64, tag)
#define PDCBB_KV_COUNT_REP(F, T) F(T, U64, count) F(T, U64, gen) F(T, U64, tgen)
#define PDCBB_KV_LIST_REQ(F, T)                                                                   \
    F(T, U64, id) F(T, U64, tag) F(T, BLOB, start) F(T, U32, flags) F(T, U64, skip)              \
    F(T, U32, max) F(T, U64, max_bytes)
#define PDCBB_KV_LIST_REP(F, T)                                                                   \
    F(T, U32, count) F(T, U32, more) F(T, U64, skipped) F(T, BLOB, recs) F(T, U64, gen)        \
    F(T, U64, tgen)
#define PDCBB_KV_TRANS_REQ(F, T) F(T, U64, id) F(T, U64, tag) F(T, U32, mode)
#define PDCBB_KV_PART_REQ(F, T) F(T, U64, id) F(T, U64, upload) F(T, U64, offset) F(T, BLOB, data)
/*
 * KV_MIGRATE (bbd/bbd_kv_migrate.c, PDCkv_migrate): sent to every daemon of the job. Each writes
 * the records of KV object id with tag < tag it holds (a KV dump, docs/DRAIN-FORMAT.md) and its
 * part into <the job's drain directory>/subdir (subdir: "kv-migrate/..." as the client names
 * it), then finishes the migration's manifest when every part exists. Reply: the directory
 * (absolute), records written, complete 1 when that daemon wrote manifest.yaml and COMPLETE.
 */
#define PDCBB_KV_MIGRATE_REQ(F, T) F(T, U64, id) F(T, U64, tag) F(T, STR, subdir)
#define PDCBB_KV_MIGRATE_REP(F, T) F(T, STR, dir) F(T, U64, records) F(T, U32, complete)
/*
 * Growing objects (bbd/bbd_grow.c, docs/PROTOCOL.md "Growing objects"). An object whose first
 * dimension is unlimited has a current extent (rows) kept by its home daemon: OBJ_EXTEND
 * raises it to rows when rows is larger (never lowers it: the result is the max of every
 * request, whatever their order); OBJ_EXTENT reads it. Both answer the object's current dims
 * (rows, then its other dims as created).
 */
#define PDCBB_OBJ_EXTEND_REQ(F, T) F(T, U64, id) F(T, U64, rows)
#define PDCBB_OBJ_EXTENT_REP(F, T) F(T, U64S, dims)
/*
 * Append (bbd/bbd_append.c, client/pdc_append.c, docs/PROTOCOL.md "Append"). OBJ_RESERVE (to
 * dst's home daemon): add rows to a growing object's extent in one transaction and answer the
 * extent before (start: the first reserved row) and the dims after; concurrent reservations get
 * disjoint row ranges. APPEND_COPY (to a daemon holding a piece of src): read the box of src
 * (box: ndim offsets then ndim sizes, src_dims its dims) from this daemon's data and write it to
 * daemon dst_daemon as rows shifted by shift of dst (dst_dims); the reply (bytes) comes after
 * dst_daemon wrote it. APPEND_WRITE (daemon to daemon only): what APPEND_COPY sends, a
 * DATA_WRITE of one region counted apart (the "append" kind of STATS).
 */
#define PDCBB_OBJ_RESERVE_REP(F, T) F(T, U64, start) F(T, U64S, dims)
#define PDCBB_APPEND_COPY_REQ(F, T)                                                               \
    F(T, U64, src) F(T, U64, dst) F(T, U32, dst_daemon) F(T, U64, unit) F(T, U64, shift)          \
        F(T, U64S, src_dims) F(T, U64S, dst_dims) F(T, U64S, box)
#define PDCBB_APPEND_COPY_REP(F, T) F(T, U64, bytes)
/*
 * File broadcast (bbd/bbd_bcast.c, client/pdc_bcast.c, `pdcbb bcast`, docs/PROTOCOL.md). The
 * sender (the CLI through libpdc) picks an id and a tree: ranks lists the daemons of a subtree,
 * its root (the daemon asked) first; the root forwards each request to its children, which are
 * the first ranks of the fanout groups the rest is split into, each with its group. BCAST_OPEN:
 * create a temporary file for dest (relative to the job directory, or absolute; %n node, %r
 * rank, %% percent), name the source's base name (used when dest is a directory), mode its
 * permission bits, size its length. BCAST_CHUNK: the bulk part is the file's bytes at offset
 * (in order). BCAST_CLOSE: size and crc (CRC-32C) of the whole file: each daemon checks its copy
 * read back from its file and renames it into place; abort 1 removes the temporary files
 * instead. Each daemon answers once its own part and its children's replies are in: result is
 * the first failure in the subtree (PDCBB_OK if none), error names every failed node; a CLOSE
 * reply lists per node of the subtree rank and CRC in nodes and "rank node path" lines in paths.
 */
#define PDCBB_BCAST_OPEN_REQ(F, T)                                                                \
    F(T, U64, id) F(T, STR, dest) F(T, STR, name) F(T, U32, mode) F(T, U64, size)               \
    F(T, U32, fanout) F(T, U64S, ranks)
#define PDCBB_BCAST_CHUNK_REQ(F, T) F(T, U64, id) F(T, U64, offset)
#define PDCBB_BCAST_CLOSE_REQ(F, T) F(T, U64, id) F(T, U64, size) F(T, U32, crc) F(T, U32, abort)
#define PDCBB_BCAST_REP(F, T) F(T, I32, result) F(T, STR, error) F(T, U64S, nodes) F(T, BLOB, paths)
#define PDCBB_BCAST_FANOUT_MAX 64
/*
 * The mount's namespace (bbd/bbd_ns.c, mount/, docs/PROTOCOL.md "Namespace"). A directory's
 * entries live on the daemon pdcbb_ns_home(its ino); each entry, keyed by (parent ino, name),
 * holds the whole inode: ino, kind, permission bits, owner, size, times (ns since the epoch)
 * and a symbolic link's target. A file's ino is the id of the object holding its bytes; a
 * directory's or a link's an id of kind PDCBB_META_KIND_NODE made by the daemon that created
 * it; the root is PDCBB_NS_ROOT.
 * NS_LOOKUP: the entry of name in parent. NS_CREATE: a new entry (ino 0 for a directory or a
 * link: the daemon makes one; with MOVE the ino given is kept); flags EXCL (EXISTS if name is
 * taken), REPLACE (replace an entry of a compatible kind: the reply's old_ino/old_kind name it, 0
 * if none; a directory only with EMPTY_CHECKED). Without either, an existing file is answered as it
 * is (open O_CREAT). NS_READDIR: up to max entries of dir after the name `after` (in byte order),
 * packed as pdcbb_ns_dirent_* writes them; more 1 if there are others. NS_UNLINK: remove name (kind
 * 0: any, else it must be of that kind: WRONG_TYPE; ino non-zero: only if it is that ino, NOT_FOUND
 * if not). NS_RMDIR: on dir's home, NOT_EMPTY if dir has entries, else mark it removed (creates in
 * it are NOT_FOUND); undo 1 clears the mark. NS_RENAME: move an entry between two directories whose
 * entries both live on this daemon, in one transaction; flags NOREPLACE, EMPTY_CHECKED. NS_SETATTR:
 * change what mask names of the entry (ino must match).
 */
#define PDCBB_NS_ROOT        1u
#define PDCBB_NS_NAME_MAX    255u
#define PDCBB_NS_TARGET_MAX  4095u
#define PDCBB_NS_READDIR_MAX 1024u
enum { PDCBB_NS_FILE = 1, PDCBB_NS_DIR = 2, PDCBB_NS_SYMLINK = 3 };
enum {
    PDCBB_NS_EXCL = 1,
    PDCBB_NS_REPLACE = 2,
    PDCBB_NS_EMPTY_CHECKED = 4,
    PDCBB_NS_NOREPLACE = 8,
    PDCBB_NS_MOVE = 16, /* NS_CREATE keeps the given ino (a rename between two daemons) */
};
enum {
    PDCBB_NS_SET_MODE = 1,
    PDCBB_NS_SET_UID = 2,
    PDCBB_NS_SET_GID = 4,
    PDCBB_NS_SET_SIZE = 8,
    PDCBB_NS_SET_SIZE_AT_LEAST = 16,
    PDCBB_NS_SET_MTIME = 32,
    PDCBB_NS_SET_CTIME = 64,
};
#define PDCBB_NS_ENTRY(F, T)                                                                       \
    F(T, U64, ino)                                                                                 \
    F(T, U32, kind) F(T, U32, mode) F(T, U32, uid) F(T, U32, gid) F(T, U64, size)                  \
        F(T, U64, mtime_ns) F(T, U64, ctime_ns) F(T, STR, target)
#define PDCBB_NS_NAME_REQ(F, T)  F(T, U64, parent) F(T, STR, name)
#define PDCBB_NS_ENTRY_REP(F, T) PDCBB_NS_ENTRY(F, T)
#define PDCBB_NS_CREATE_REQ(F, T)                                                                  \
    F(T, U64, parent) F(T, STR, name) F(T, U32, flags) PDCBB_NS_ENTRY(F, T)
#define PDCBB_NS_CHANGE_REP(F, T)  PDCBB_NS_ENTRY(F, T) F(T, U64, old_ino) F(T, U32, old_kind)
#define PDCBB_NS_READDIR_REQ(F, T) F(T, U64, dir) F(T, STR, after) F(T, U32, max)
#define PDCBB_NS_READDIR_REP(F, T) F(T, BLOB, entries) F(T, U32, more)
#define PDCBB_NS_UNLINK_REQ(F, T)  F(T, U64, parent) F(T, STR, name) F(T, U32, kind) F(T, U64, ino)
#define PDCBB_NS_RMDIR_REQ(F, T)   F(T, U64, dir) F(T, U32, undo)
#define PDCBB_NS_RENAME_REQ(F, T)                                                                  \
    F(T, U64, parent) F(T, STR, name) F(T, U64, new_parent) F(T, STR, new_name) F(T, U32, flags)
#define PDCBB_NS_SETATTR_REQ(F, T)                                                                 \
    F(T, U64, parent)                                                                              \
    F(T, STR, name) F(T, U64, ino) F(T, U32, mask) F(T, U32, mode) F(T, U32, uid) F(T, U32, gid)   \
        F(T, U64, size) F(T, U64, mtime_ns) F(T, U64, ctime_ns)

/* UCX active-message id of messages with a bulk part: the control message travels as the AM
 * header (at most the worker's max_am_header bytes), the bulk as the AM data. */
#define PDCBB_AM_ID_DATA 2

typedef enum pdcbb_op {
#define PDCBB_X_OPENUM(OP, val, lname, RQ, RP, ...) PDCBB_OP_##OP = val,
    PDCBB_OPS(PDCBB_X_OPENUM)
#undef PDCBB_X_OPENUM
    PDCBB_OP_MAX_
} pdcbb_op_t;
_Static_assert(PDCBB_OP_MAX_ <= PDCBB_OP_VALUES_MAX, "op codes are below PDCBB_OP_VALUES_MAX");

/* Struct declarations generated from the field lists. */
#define PDCBB_FDECL_U32(n) uint32_t n;
#define PDCBB_FDECL_I32(n) int32_t n;
#define PDCBB_FDECL_U64(n) uint64_t n;
#define PDCBB_FDECL_STR(n) const char *n;
#define PDCBB_FDECL_BLOB(n)                                                                       \
    const void *n;                                                                                \
    uint32_t n##_len;
#define PDCBB_FDECL_U64S(n)                                                                       \
    uint64_t *n;                                                                                  \
    uint32_t n##_count;
#define PDCBB_FDECL(T, kind, n) PDCBB_FDECL_##kind(n)

#define PDCBB_X_STRUCTS(OP, val, lname, RQ, RP, ...)                                               \
    typedef struct pdcbb_##lname##_req {                                                           \
        uint8_t unused_;                                                                           \
        RQ(PDCBB_FDECL, _)                                                                         \
    } pdcbb_##lname##_req_t;                                                                       \
    typedef struct pdcbb_##lname##_rep {                                                           \
        uint8_t unused_;                                                                           \
        RP(PDCBB_FDECL, _)                                                                         \
    } pdcbb_##lname##_rep_t;
PDCBB_OPS(PDCBB_X_STRUCTS)
#undef PDCBB_X_STRUCTS

/* Room for the body of any op, request or reply: what pdcbb_body_decode fills when the op is
 * known only from a message's header. */
typedef union pdcbb_any_body {
#define PDCBB_X_ANY_BODY(OP, val, lname, RQ, RP, ...)                                              \
    pdcbb_##lname##_req_t lname##_req;                                                             \
    pdcbb_##lname##_rep_t lname##_rep;
    PDCBB_OPS(PDCBB_X_ANY_BODY)
#undef PDCBB_X_ANY_BODY
} pdcbb_any_body_t;

/* An op's row of PDCBB_OPS but its field lists. */
typedef struct pdcbb_op_props {
    unsigned value;
    const char *name; /* "CONT_CREATE" */
    const char
        *lname;       /* "cont_create": the handler is bbd_op_<lname>, the stub client_op_<lname> */
    unsigned txn;     /* PDCBB_OPTXN_* */
    unsigned kind;    /* pdcbb_stat_kind_t (common/pdcbb_stats.h) */
    unsigned drained; /* PDCBB_DRAINED_* */
    unsigned senders; /* PDCBB_BY_* bits */
    unsigned flags;   /* PDCBB_OPF_* bits */
} pdcbb_op_props_t;
/* The properties of op, or NULL when op is no op code. */
const pdcbb_op_props_t *pdcbb_op_props(unsigned op);
/* 1 if op is an op code with every flag of flags (PDCBB_OPF_*), else 0. */
int pdcbb_op_has(unsigned op, unsigned flags);
/* Name of an op ("CONT_CREATE"), or "UNKNOWN". */
const char *pdcbb_op_name(unsigned op);
/* 1 if op is a known op code. */
int pdcbb_op_valid(unsigned op);
/*
 * 1 if a client may send op to a daemon through another daemon (FORWARD; PDCBB_OPF_FWD): not
 * the handshake (HELLO, AUTH), FORWARD and GATHER themselves, what only daemons send
 * (TABLE_GATHER, APPEND_WRITE), ops a client sends to its own node's daemon (JOB_TABLE,
 * DATA_DIRECT, the broadcast), nor the region locks, which a daemon holds per connection and
 * drops when the connection ends.
 */
int pdcbb_op_forwardable(unsigned op);
/* 1 if GATHER may carry op (PDCBB_OPF_GATHER): read-only requests their handler answers at
 * once (STATS, QUERY_EVAL). */
int pdcbb_op_gatherable(unsigned op);

/* A request's header for op: magic, version, op, req_id and the token (PDCBB_TOKEN_LEN bytes)
 * of the daemon it goes to, or zeros when token is NULL (UCX connections prove the token once,
 * in the handshake: common/pdcbb_auth.h; only the shared-memory channel's requests carry it);
 * flags, status and payload_len 0 (pdcbb_msg_build sets the length). */
void pdcbb_request_hdr(pdcbb_msg_hdr_t *h, unsigned op, uint64_t req_id, const uint8_t *token);
/* Encode hdr into exactly PDCBB_HDR_LEN bytes at out. */
void pdcbb_hdr_encode(const pdcbb_msg_hdr_t *hdr, uint8_t *out);
/*
 * Decode and validate the header of a message of len bytes: magic (PDCBB_ERR_PROTO), version
 * (PDCBB_ERR_VERSION), payload length against len (PDCBB_ERR_TRUNCATED) and against
 * PDCBB_PAYLOAD_MAX (PDCBB_ERR_TOO_BIG). The op code is not checked here: the receiver
 * answers an unknown op with PDCBB_ERR_BAD_OP.
 */
pdcbb_err_t pdcbb_hdr_decode(const void *msg, size_t len, pdcbb_msg_hdr_t *hdr);
/* The header of the first whole message of the messages one after the other at buf (avail
 * bytes; GATHER's msgs), and that message's length. */
pdcbb_err_t pdcbb_hdr_decode_next(const void *buf, size_t avail, pdcbb_msg_hdr_t *hdr,
                                  size_t *msg_len);

/* Encoded size of the body of op (request if !is_reply); 0 with *err set on failure. */
pdcbb_err_t pdcbb_body_size(unsigned op, int is_reply, const void *body, size_t *size);
/* Encode the body into out (size bytes from pdcbb_body_size). */
pdcbb_err_t pdcbb_body_encode(unsigned op, int is_reply, const void *body, uint8_t *out,
                              size_t size);
/*
 * Decode a payload of len bytes into body (the op's generated struct, zeroed first). Errors:
 * PDCBB_ERR_BAD_OP, PDCBB_ERR_TRUNCATED (a field runs past the end), PDCBB_ERR_TOO_BIG (a
 * string or array longer than its limit), PDCBB_ERR_PROTO (a string without its NUL, bytes
 * left over). On error nothing needs freeing.
 */
pdcbb_err_t pdcbb_body_decode(unsigned op, int is_reply, const void *payload, size_t len,
                              void *body);
/* Free what pdcbb_body_decode allocated in body (accepts a zeroed body). */
void pdcbb_body_free(unsigned op, int is_reply, void *body);

/*
 * Build a whole message (header + encoded body) in one malloc'ed buffer; *out belongs to the
 * caller (free()). hdr->payload_len is computed here. body may be NULL for a header-only
 * message (error replies).
 */
pdcbb_err_t pdcbb_msg_build(const pdcbb_msg_hdr_t *hdr, const void *body, void **out,
                            size_t *out_len);

/*
 * Element size of a PDC variable type (pdc_var_type_t values 0..18), as PDC's
 * get_size_by_dtype; PDC_STRING counts 1 byte per character. 0 for an unknown type.
 */
size_t pdcbb_type_size(int type);
/* PDC name of a type ("PDC_INT"), "PDC_UNKNOWN" if out of range. */
const char *pdcbb_type_name(int type);
#define PDCBB_TYPE_STRING 4
#define PDCBB_TYPE_COUNT 19

/* Sort the n ids of a list (an IDS reply's, or several merged) and drop repeats: returns how
 * many are left, in place. */
size_t pdcbb_ids_sort_unique(uint64_t *ids, size_t n);

/* Constant-time comparison of two tokens: 1 if equal. */
int pdcbb_token_equal(const uint8_t *a, const uint8_t *b);

#endif
