/*
 * pdcbb_stats.c - which kind of traffic each op is (pdcbb_stats.h).
 */
#include "pdcbb_stats.h"

#include "pdcbb_proto.h"

pdcbb_stat_kind_t pdcbb_op_kind(unsigned op)
{
    /* No default: a new op that is not listed here breaks the build (-Wswitch). */
    switch ((pdcbb_op_t)op) {
    case PDCBB_OP_CONT_CREATE:
    case PDCBB_OP_CONT_OPEN:
    case PDCBB_OP_CONT_INFO:
    case PDCBB_OP_CONT_DEL:
    case PDCBB_OP_CONT_LIST:
    case PDCBB_OP_CONT_OBJIDS_PUT:
    case PDCBB_OP_CONT_OBJIDS_GET:
    case PDCBB_OP_CONT_OBJIDS_DEL:
    case PDCBB_OP_TAG_PUT:
    case PDCBB_OP_TAG_GET:
    case PDCBB_OP_TAG_DEL:
    case PDCBB_OP_OBJ_CREATE:
    case PDCBB_OP_OBJ_OPEN:
    case PDCBB_OP_OBJ_INFO:
    case PDCBB_OP_OBJ_DEL:
    case PDCBB_OP_OBJ_SET_DIMS:
    case PDCBB_OP_OBJ_LIST:
    case PDCBB_OP_OBJ_EXTEND:
    case PDCBB_OP_OBJ_EXTENT:
    case PDCBB_OP_OBJ_RESERVE:
    case PDCBB_OP_NS_LOOKUP:
    case PDCBB_OP_NS_CREATE:
    case PDCBB_OP_NS_READDIR:
    case PDCBB_OP_NS_UNLINK:
    case PDCBB_OP_NS_RMDIR:
    case PDCBB_OP_NS_RENAME:
    case PDCBB_OP_NS_SETATTR:
        return PDCBB_KIND_METADATA;
    case PDCBB_OP_DATA_WRITE:
    case PDCBB_OP_DATA_READ:
    case PDCBB_OP_STRIDED_WRITE:
    case PDCBB_OP_STRIDED_READ:
    case PDCBB_OP_DATA_DROP:
    case PDCBB_OP_DATA_RESIZE:
    case PDCBB_OP_DATA_DIRECT:
    case PDCBB_OP_MAP_PUT:
    case PDCBB_OP_MAP_GET:
    case PDCBB_OP_LOCK_OBTAIN:
    case PDCBB_OP_LOCK_RELEASE:
        return PDCBB_KIND_DATA;
    case PDCBB_OP_CONT_PERSIST:
    case PDCBB_OP_DATA_FLUSH:
        return PDCBB_KIND_DRAIN;
    case PDCBB_OP_TAG_QUERY:
    case PDCBB_OP_QUERY_EVAL:
    case PDCBB_OP_QUERY_VALUES:
    case PDCBB_OP_DART_INSERT:
    case PDCBB_OP_DART_DELETE:
    case PDCBB_OP_DART_SEARCH:
    case PDCBB_OP_TAG_SEARCH:
        return PDCBB_KIND_QUERY;
    case PDCBB_OP_KV_CREATE:
    case PDCBB_OP_KV_OPEN:
    case PDCBB_OP_KV_DELETE:
    case PDCBB_OP_KV_SET:
    case PDCBB_OP_KV_GET:
    case PDCBB_OP_KV_COUNT:
    case PDCBB_OP_KV_LIST:
    case PDCBB_OP_KV_TRANS:
    case PDCBB_OP_KV_PART:
    case PDCBB_OP_KV_MIGRATE:
        return PDCBB_KIND_KV;
    case PDCBB_OP_APPEND_COPY:
    case PDCBB_OP_APPEND_WRITE:
        return PDCBB_KIND_APPEND;
    case PDCBB_OP_BCAST_OPEN:
    case PDCBB_OP_BCAST_CHUNK:
    case PDCBB_OP_BCAST_CLOSE:
        return PDCBB_KIND_BROADCAST;
    case PDCBB_OP_FORWARD:
        return PDCBB_KIND_FORWARD;
    case PDCBB_OP_HELLO:
    case PDCBB_OP_AUTH:
    case PDCBB_OP_STATS:
    case PDCBB_OP_JOB_TABLE:
    case PDCBB_OP_TABLE_GATHER:
    case PDCBB_OP_GATHER:
    case PDCBB_OP_MAX_:
        return PDCBB_KIND_OTHER;
    }
    return PDCBB_KIND_OTHER;
}

const char *pdcbb_stat_kind_name(unsigned kind)
{
    static const char *const names[PDCBB_KIND_COUNT_] = {
        "metadata", "data", "drain", "broadcast", "query", "kv", "other", "append", "forward"};
    return kind < PDCBB_KIND_COUNT_ ? names[kind] : "unknown";
}
