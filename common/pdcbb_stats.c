/*
 * pdcbb_stats.c - which kind of traffic each op is (pdcbb_stats.h; the kind is a column of
 * PDCBB_OPS).
 */
#include "pdcbb_stats.h"

#include "pdcbb_proto.h"

pdcbb_stat_kind_t pdcbb_op_kind(unsigned op)
{
    /* The row of PDCBB_OPS says (its stats kind column). */
    const pdcbb_op_props_t *p = pdcbb_op_props(op);
    return p ? (pdcbb_stat_kind_t)p->kind : PDCBB_KIND_OTHER;
}

const char *pdcbb_stat_kind_name(unsigned kind)
{
    static const char *const names[PDCBB_KIND_COUNT_] = {
        "metadata", "data", "drain", "broadcast", "query", "kv", "other", "append", "forward"};
    return kind < PDCBB_KIND_COUNT_ ? names[kind] : "unknown";
}
