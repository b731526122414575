/*
 * client_transfer.h - region ids and the transfer engine of libpdc (client_transfer.c).
 *
 * A transfer request moves the elements of a box of the user buffer (the local region) to or
 * from a box of an object (the remote region). Starting it splits the remote box into pieces,
 * one per data daemon, by the object's placement:
 *   PDC_OBJ_STATIC      the whole object on its home daemon;
 *   PDC_REGION_STATIC   the object split into equal stripes along its first dimension with at
 *                       least as many elements as there are daemons: stripe k on daemon k;
 *   PDCBB_REGION_STRIPED the first dimension cut into stripes of about 1 MiB
 *                       (client_stripe_rows), stripe k on daemon (home + k) mod N;
 *   PDC_REGION_LOCAL    written to a daemon of the writer's node,
 *   PDC_REGION_DYNAMIC  written to the daemon the home daemon picks (fewest bytes so far);
 *                       for these two the home daemon remembers which daemon holds each
 *                       written box (MAP_PUT) and a read asks it (MAP_GET), then applies the
 *                       pieces oldest first, so the newest write of every element wins.
 * Pieces bound for one daemon are packed into as few DATA messages as the control-part limit
 * allows (start_all aggregation). Everything runs under the library lock.
 */
#ifndef CLIENT_TRANSFER_H
#define CLIENT_TRANSFER_H

#include "client.h"
#include "pdcbb_region.h"
#include "pdcbb_select.h"

typedef struct client_region {
    struct pdc_region_info info; /* what PDCregion_get_info returns */
    uint64_t offset[PDCBB_REGION_NDIM_MAX];
    uint64_t size[PDCBB_REGION_NDIM_MAX];
    pdcbb_box_t box;     /* a strided region: its bounding box */
    int strided;         /* PDCbb_region_create_strided: sel is the selection */
    pdcbb_sel_t sel;
} client_region_t;

enum client_xfer_state {
    CLIENT_XFER_CREATED = 0, /* not started (or finished and reported) */
    CLIENT_XFER_STARTED,     /* pieces in flight */
    CLIENT_XFER_DONE,        /* finished, not yet reported by status/wait */
};

typedef struct xfer_piece {
    struct client_xfer *x;
    unsigned daemon;
    pdcbb_box_t box;  /* in object coordinates */
    uint64_t bytes;
    uint8_t *data;    /* the box's elements, packed row-major */
    int own;          /* data is malloc'ed for this piece */
    pdcbb_err_t result;
    int strided;      /* the transfer's selection clipped by box (STRIDED_WRITE/READ) */
    pdcbb_box_t ibox; /* strided: the piece's elements as a box of the index space */
} xfer_piece_t;

typedef struct client_xfer {
    pdcid_t id;
    void *buf;
    pdc_access_t access;
    uint64_t obj_meta;
    char obj_name[PDCBB_NAME_MAX + 1];
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX];
    size_t unit;
    pdc_region_partition_t partition;
    pdc_consistency_t consistency;
    pdcbb_box_t remote;
    pdcbb_box_t local;
    uint64_t local_shape[PDCBB_REGION_NDIM_MAX]; /* the buffer: local offset + size */
    int packed;          /* buf already holds the elements packed in row-major order */
    uint64_t bytes;
    int state;
    int obj_deleted;     /* its object was deleted by this process */
    int reported;        /* completion reported once (status/wait) */
    pdcbb_err_t result;
    char errmsg[768];
    uint8_t *packed_buf; /* buf when packed, else a gather/scatter buffer */
    int own_packed;
    xfer_piece_t *pieces;
    unsigned npieces;
    unsigned left;       /* pieces not finished */
    int strided;         /* remote is a strided selection (sel); remote is its bounding box */
    pdcbb_sel_t sel;
    pdcbb_box_t ispace;  /* strided: the index space, [0, count * block) per dimension */
    int plan_only;       /* client_xfer_plan: pieces (daemon, box) without data */
} client_xfer_t;

/* Start a set of created transfers (one DATA message per daemon and direction where possible).
 * On failure the transfers that could not start are left CREATED; *failed names the first. */
pdcbb_err_t client_xfer_start(client_xfer_t **xs, int n, int *failed);
/* Progress and complete finished messages; block until x is done or timeout seconds pass. */
pdcbb_err_t client_xfer_wait(client_xfer_t *x, double timeout);
/* Non-blocking progress. */
void client_xfer_poll(void);
/* The pieces of a created, unstarted transfer x by its placement, without data (no buffer
 * needed): a write registers its box with the home daemon as a start would (remembered
 * placements). Released by client_xfer_reset. Used by PDCbb_obj_append (pdc_append.c). */
pdcbb_err_t client_xfer_plan(client_xfer_t *x);
/* A plan (client_xfer_plan) of rows [first, first + rows) of o, whole in its other dimensions,
 * elements of unit bytes (pdc_append.c, PDCbb_obj_local_read). */
pdcbb_err_t client_xfer_plan_rows(client_xfer_t *x, const client_obj_t *o, pdc_access_t access,
                                  uint64_t unit, uint64_t first, uint64_t rows);
/* For planned read x of a one-dimensional byte object: when its one piece is on a daemon of
 * this node, that daemon checks it (DATA_DIRECT READ: a damaged range is refused as any read
 * is), then *fd is a new descriptor of the object's data file there, which holds the bytes at
 * the same offsets, the first *valid of them (the rest are zeros); *fd -1 when it holds none.
 * PDCBB_ERR_UNSUPPORTED when the bytes are elsewhere or on several daemons. */
pdcbb_err_t client_xfer_local_file(client_xfer_t *x, int *fd, uint64_t *valid);
/* Release what a finished or created transfer holds (not the struct). */
void client_xfer_reset(client_xfer_t *x);
/* Wait for every started transfer of an object (PDCobj_close). */
void client_xfer_wait_object(uint64_t obj_meta);
/* Mark the transfers of a deleted object: they can no longer start. */
void client_xfer_object_deleted(uint64_t obj_meta);
/* Wait for (if started) and free a transfer. */
void client_xfer_free(client_xfer_t *x);
/* client_strided.c: the pieces of a strided transfer x clipped by box clip for daemon, added
 * with add (client_transfer.c's piece constructor: need_own as there). */
typedef pdcbb_err_t (*client_piece_add_fn)(client_xfer_t *x, unsigned daemon,
                                           const pdcbb_box_t *clip, const pdcbb_box_t *ibox,
                                           uint64_t bytes, int need_own);
pdcbb_err_t client_strided_pieces(client_xfer_t *x, unsigned daemon, const pdcbb_box_t *clip,
                                  int need_own, client_piece_add_fn add);
/* A strided write of a remembered-placement object: read the bounding box, scatter the
 * selection into it; *out (malloc'ed, bounding box packed) is then written as a plain box. */
pdcbb_err_t client_strided_rmw(client_xfer_t *x, uint8_t **out);
/* 1 if x must be written by client_strided_rmw. */
int client_strided_needs_rmw(const client_xfer_t *x);
/* Rows per stripe of a PDCBB_REGION_STRIPED object of element size unit and dims (0: the rows
 * are too large to stripe: callers refuse the transfer). */
uint64_t client_stripe_rows(size_t unit, uint32_t ndim, const uint64_t *dims);
/* The daemon of this process's node for PDC_REGION_LOCAL. */
unsigned client_local_daemon(void);

#endif
