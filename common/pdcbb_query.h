/*
 * pdcbb_query.h - evaluation of PDC data queries, shared by the daemon (bbd/bbd_query.c), the
 * drained read-only API (client/client_drained.c) and the client library (client/pdc_query*.c).
 *
 * A query over one object travels as a program: its predicate tree in postfix order, three
 * 64-bit words per node (docs/PROTOCOL.md, QUERY_EVAL). Leaves compare an element with a
 * constant (>, <, >=, <=, ==, and optionally a second comparison for a range); inner nodes are
 * AND and OR. Constants travel in the element type's class: int64 for signed types, uint64 for
 * unsigned ones (bool, size_t), double for float and double, so 64-bit integers compare
 * exactly.
 *
 * The scan walks boxes of an object (its "pieces" on one daemon) run by run and block by block
 * (PDCBB_QBLOCK elements of the object's row-major index space): a block whose min/max (kept by
 * the caller through the source's stats callbacks) shows that no element can match is skipped
 * without reading it. Hits are row-major linear element indices of the object.
 *
 * Threads: every function is pure apart from the callbacks it is given.
 */
#ifndef PDCBB_QUERY_H
#define PDCBB_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_error.h"
#include "pdcbb_region.h"

/* Elements per statistics block (the unit of skipping). */
#define PDCBB_QBLOCK 65536u
/* Most nodes of one program. */
#define PDCBB_QPROG_MAX 1024u
/* Words per program node. */
#define PDCBB_QNODE_WORDS 3u
/* Largest histogram. */
#define PDCBB_QHIST_MAX 4096u

enum { PDCBB_QNODE_LEAF = 1, PDCBB_QNODE_AND = 2, PDCBB_QNODE_OR = 3 };
/* Comparison operators: the values of PDC's pdc_query_op_t. */
enum { PDCBB_QOP_GT = 1, PDCBB_QOP_LT = 2, PDCBB_QOP_GTE = 3, PDCBB_QOP_LTE = 4, PDCBB_QOP_EQ = 5 };
/* Scan modes (QUERY_EVAL mode field). */
enum {
    PDCBB_QMODE_HITS = 0,  /* the linear indices of matching elements */
    PDCBB_QMODE_COUNT = 1, /* only their number */
    PDCBB_QMODE_STATS = 2, /* min and max of the elements (no predicate) */
    PDCBB_QMODE_HIST = 3   /* histogram of the elements (no predicate) */
};
/* Value classes. */
enum { PDCBB_QCLASS_NONE = 0, PDCBB_QCLASS_INT = 1, PDCBB_QCLASS_UINT = 2, PDCBB_QCLASS_FLOAT = 3 };

/* A value in its class (the wire carries the 64 bits). */
typedef union pdcbb_qval {
    int64_t i;
    uint64_t u;
    double f;
    uint64_t bits;
} pdcbb_qval_t;

typedef struct pdcbb_qnode {
    uint8_t kind, op, is_range, op2;
    pdcbb_qval_t v, v2;
} pdcbb_qnode_t;

typedef struct pdcbb_qprog {
    int type;     /* pdc_var_type_t of the object */
    int cls;      /* PDCBB_QCLASS_* */
    uint32_t n;   /* nodes */
    uint32_t depth; /* largest stack depth */
    pdcbb_qnode_t node[PDCBB_QPROG_MAX];
} pdcbb_qprog_t;

/* Min and max of some elements (has == 0: none that is not NaN). */
typedef struct pdcbb_qstats {
    pdcbb_qval_t mn, mx;
    int has;
} pdcbb_qstats_t;

/* Class of a pdc_var_type_t, PDCBB_QCLASS_NONE for types without comparable values (string,
 * void pointer, unknown). */
int pdcbb_query_class(int type);
/* Convert the element *raw of type (pdcbb_type_size bytes) to its class value. */
pdcbb_qval_t pdcbb_query_value(int type, const void *raw);
/* Format v of type's class into buf. */
void pdcbb_query_value_str(int type, pdcbb_qval_t v, char *buf, size_t len);

/*
 * Decode and check a program of count words for objects of type (PDCBB_ERR_PROTO: malformed,
 * too long, a bad operator or stack shape; PDCBB_ERR_WRONG_TYPE: type has no values). count 0
 * is an empty program (only for the STATS and HIST modes).
 */
pdcbb_err_t pdcbb_qprog_decode(const uint64_t *w, uint32_t count, int type, pdcbb_qprog_t *p);
/* Encode node into 3 words. */
void pdcbb_qnode_encode(const pdcbb_qnode_t *node, uint64_t *w);

/* Evaluate p on n elements at vals (packed, of p->type) into mask (0/1 per element). scratch:
 * room for p->depth * n bytes. */
void pdcbb_qprog_eval(const pdcbb_qprog_t *p, const void *vals, size_t n, uint8_t *mask,
                      uint8_t *scratch);
/* 1 if some value within [st->mn, st->mx] may satisfy p (0 when st->has is 0). */
int pdcbb_qprog_may_match(const pdcbb_qprog_t *p, const pdcbb_qstats_t *st);
/* Fold n elements of type into st. */
void pdcbb_qstats_add(int type, const void *vals, size_t n, pdcbb_qstats_t *st);
/* Fold st2 into st. */
void pdcbb_qstats_merge(int cls, pdcbb_qstats_t *st, const pdcbb_qstats_t *st2);
/* The class value as a double. */
double pdcbb_qval_double(int cls, pdcbb_qval_t v);

/* Where the scan reads elements from. */
typedef struct pdcbb_qsrc {
    /* The n elements from linear index lin (packed index pk within the piece): a pointer to
     * them where they already lie in memory (a file mapping), else copied into buf (room for
     * PDCBB_QBLOCK elements) and buf returned. NULL with *rc on an error. */
    const void *(*read)(void *arg, uint64_t lin, uint64_t pk, uint64_t n, void *buf,
                        pdcbb_err_t *rc);
    /* Block statistics (both NULL: none). get returns 1 with *st when known. */
    int (*stats_get)(void *arg, uint64_t blk, pdcbb_qstats_t *st);
    void (*stats_put)(void *arg, uint64_t blk, const pdcbb_qstats_t *st);
    void *arg;
} pdcbb_qsrc_t;

/* One scan (several pieces of one object). Set the inputs, call pdcbb_qscan_init, then
 * pdcbb_qscan_piece per piece, then pdcbb_qscan_free. */
typedef struct pdcbb_qscan {
    /* in */
    const pdcbb_qprog_t *prog;
    uint32_t mode;
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX];
    uint64_t max_hits;        /* HITS mode: most hits to collect */
    uint64_t *hits;           /* HITS mode: the caller's array of hits_cap entries; when
                                 hits_cap < max_hits it is grown with realloc (start with NULL,
                                 0 and free() it after; pdcbb_qscan_free does not) */
    uint64_t hits_cap;
    double hist_lo, hist_incr; /* HIST mode */
    uint32_t nbin;
    uint64_t *bins;           /* HIST mode: caller's nbin counters */
    uint64_t step_elems;      /* stop (pdcbb_qscan_piece returns 1) before reading more once
                                 this many elements were read (0: no limit) */
    uint64_t step_blocks;     /* ... or once this many blocks were visited, read or skipped */
    /* out */
    uint64_t nhits;           /* HITS: stored; COUNT: counted; STATS/HIST: elements seen */
    pdcbb_qstats_t st;        /* STATS */
    uint64_t blocks_scanned, blocks_skipped;
    uint64_t elems_read, blocks_seen; /* toward step_elems / step_blocks */
    /* private */
    size_t unit;
    uint64_t strides[PDCBB_REGION_NDIM_MAX];
    uint64_t total;
    uint64_t last_blk;
    int last_skip;
    uint8_t *buf, *mask, *scratch;
} pdcbb_qscan_t;

/* Check the shape (dims must be finite) and allocate the buffers. Errors: PDCBB_ERR_BAD_REGION,
 * PDCBB_ERR_TOO_BIG, PDCBB_ERR_NOMEM. */
pdcbb_err_t pdcbb_qscan_init(pdcbb_qscan_t *s);
void pdcbb_qscan_free(pdcbb_qscan_t *s);
/*
 * Scan box (within dims) from packed element start, skipping elements inside any of the nexcl
 * boxes excl. Returns PDCBB_OK when the piece is done; PDCBB_ERR_AGAIN-like 1 is not an error
 * code, so: returns 0 done, 1 stopped because hits is full (*stop = packed index to resume
 * from), or a negative -(pdcbb_err_t) on a read error.
 */
int pdcbb_qscan_piece(pdcbb_qscan_t *s, const pdcbb_qsrc_t *src, const pdcbb_box_t *box,
                      const pdcbb_box_t *excl, uint32_t nexcl, uint64_t start, uint64_t *stop);

/*
 * Pieces on the wire (QUERY_EVAL pieces): per piece nexcl, box offsets and sizes (ndim each),
 * then nexcl boxes (offsets, sizes). Parse the piece at w[*pos]; boxes are checked against
 * ndim/dims. excl receives at most max boxes.
 */
pdcbb_err_t pdcbb_qpiece_parse(const uint64_t *w, uint32_t count, uint32_t *pos, uint32_t ndim,
                               const uint64_t *dims, pdcbb_box_t *box, pdcbb_box_t *excl,
                               uint32_t max, uint32_t *nexcl);

/* Bin of value v (class cls) in a histogram of nbin bins from lo by incr (clamped). */
uint32_t pdcbb_qhist_bin(int cls, pdcbb_qval_t v, double lo, double incr, uint32_t nbin);

#endif
