/*
 * pdcbb_stats.h - the kinds of traffic a daemon counts (`pdcbb stats`, the STATS reply).
 *
 * Every op of PDCBB_OPS belongs to one kind; a daemon counts, per kind, the messages and bytes
 * it received (request header and payload, plus a bulk part) and sent (reply header and
 * payload, plus a bulk part), and the replies with a non-OK status. The STATS reply carries
 * them as the U64S kinds: PDCBB_STATS_PER_KIND values per kind, kinds in the order of
 * pdcbb_stat_kind_t (a reply of a newer daemon may carry more kinds: readers stop at what they
 * know). Pure and thread-safe.
 */
#ifndef PDCBB_STATS_H
#define PDCBB_STATS_H

typedef enum pdcbb_stat_kind {
    PDCBB_KIND_METADATA = 0,  /* containers, objects, their tags */
    PDCBB_KIND_DATA = 1,      /* region data, placement maps, region locks */
    PDCBB_KIND_DRAIN = 2,     /* what prepares the drain: CONT_PERSIST, DATA_FLUSH */
    PDCBB_KIND_BROADCAST = 3, /* file broadcast (`pdcbb bcast`, ops 100-102) */
    PDCBB_KIND_QUERY = 4,     /* tag queries, data queries, tag search (DART) */
    PDCBB_KIND_KV = 5,        /* KV objects (ops 70-80) */
    PDCBB_KIND_OTHER = 6,     /* HELLO, AUTH, STATS, JOB_TABLE, TABLE_GATHER, GATHER, unknown */
    PDCBB_KIND_APPEND = 7,    /* PDCbb_obj_append between daemons (ops 93-94) */
    PDCBB_KIND_FORWARD = 8,   /* requests sent on for clients (FORWARD): the outer messages */
    PDCBB_KIND_COUNT_
} pdcbb_stat_kind_t;

/* Values per kind in the STATS reply's kinds array, in this order. */
enum {
    PDCBB_STAT_MSGS_RECV = 0,
    PDCBB_STAT_BYTES_RECV = 1,
    PDCBB_STAT_MSGS_SENT = 2,
    PDCBB_STAT_BYTES_SENT = 3,
    PDCBB_STAT_ERRORS = 4,
    PDCBB_STATS_PER_KIND = 5
};

/* The kind of op (PDCBB_KIND_OTHER for a value that is no op). */
pdcbb_stat_kind_t pdcbb_op_kind(unsigned op);
/* "metadata", "data", ...; "unknown" out of range. */
const char *pdcbb_stat_kind_name(unsigned kind);

#endif
