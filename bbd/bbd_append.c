/*
 * bbd_append.c - APPEND_COPY: one piece of an append (PDCbb_obj_append, docs/PROTOCOL.md
 * "Append") moves from the daemon that holds it to the daemon that holds its rows of the
 * destination, without passing through the client.
 *
 * The client reserved the destination's rows (OBJ_RESERVE, bbd_grow.c) and split the copy into
 * pieces of at most a few MiB, each a box of src held by this daemon and bound for one daemon
 * of dst. This daemon reads the box from its data file and sends it to that daemon as a
 * APPEND_WRITE, a DATA_WRITE counted apart (bbd_peer.c; to itself too, through the same path), then answers the client
 * once the write is acknowledged: the reply means the data is in the destination's file.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bbd.h"
#include "bbd_peer.h"
#include "pdcbb_checked.h"
#include "pdcbb_log.h"
#include "pdcbb_region.h"

/* The largest piece one APPEND_COPY moves (clients send a few MiB). */
#define APPEND_COPY_MAX ((uint64_t)64 << 20)

/* A copy waiting for the destination daemon's answer. */
typedef struct copy_wait {
    bbd_conn_t *conn; /* the client's connection (referenced) */
    pdcbb_msg_hdr_t hdr;
    uint8_t *data;
    uint64_t bytes;
    uint64_t src, dst;
    unsigned dst_daemon;
} copy_wait_t;

/* The DATA_WRITE reply's status of its one region. */
static pdcbb_err_t write_result(const uint8_t *msg, size_t len)
{
    pdcbb_msg_hdr_t h;
    pdcbb_append_write_rep_t p;
    if (pdcbb_hdr_decode(msg, len, &h) != PDCBB_OK ||
        pdcbb_body_decode(PDCBB_OP_APPEND_WRITE, 1, msg + PDCBB_HDR_LEN, h.payload_len, &p) !=
            PDCBB_OK)
        return PDCBB_ERR_PROTO;
    pdcbb_err_t rc =
        p.results_count >= 1 ? (pdcbb_err_t)(int32_t)(uint32_t)p.results[0] : PDCBB_ERR_PROTO;
    pdcbb_body_free(PDCBB_OP_APPEND_WRITE, 1, &p);
    return rc;
}

static void copy_done(bbd_t *d, void *arg, pdcbb_err_t status, const char *why,
                      const uint8_t *msg, size_t len)
{
    copy_wait_t *w = arg;
    pdcbb_err_t rc = status == PDCBB_OK ? write_result(msg, len) : status;
    if (rc != PDCBB_OK)
        PDCBB_WARN("append of object %#" PRIx64 " to %#" PRIx64 ": the write to daemon %u (%s) "
                   "failed: %s%s%s",
                   w->src, w->dst, w->dst_daemon, bbd_peer_node(d, w->dst_daemon),
                   pdcbb_strerror(rc), why && *why ? ": " : "", why ? why : "");
    pdcbb_append_copy_rep_t p = {.bytes = rc == PDCBB_OK ? w->bytes : 0};
    bbd_server_answer(d, w->conn, &w->hdr, rc, rc == PDCBB_OK ? &p : NULL);
    free(w->data);
    free(w);
}

/* A DATA descriptor: object, unit, ndim, dims, offsets (the first shifted), sizes. */
static pdcbb_err_t desc_make(uint64_t *desc, uint64_t obj, uint64_t unit, uint32_t ndim,
                             const uint64_t *dims, const uint64_t *box, uint64_t shift)
{
    desc[0] = obj;
    desc[1] = unit;
    desc[2] = ndim;
    memcpy(desc + 3, dims, 8 * (size_t)ndim);
    memcpy(desc + 3 + ndim, box, 16 * (size_t)ndim);
    if (pdcbb_add_overflow(desc[3 + ndim], shift, &desc[3 + ndim]))
        return PDCBB_ERR_BAD_REGION;
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_append_copy(bbd_req_t *r, const pdcbb_append_copy_req_t *q,
                               pdcbb_append_copy_rep_t *p)
{
    bbd_t *d = r->d;
    uint32_t ndim = q->src_dims_count;
    (void)p;
    if (ndim == 0 || ndim > PDCBB_REGION_NDIM_MAX || q->dst_dims_count != ndim ||
        q->box_count != 2 * ndim)
        return PDCBB_ERR_PROTO;
    if (q->dst_daemon >= d->nservers)
        return PDCBB_ERR_INVAL;
    if (pdcbb_meta_id_kind(q->src) != PDCBB_META_KIND_OBJ ||
        pdcbb_meta_id_kind(q->dst) != PDCBB_META_KIND_OBJ)
        return PDCBB_ERR_BAD_ID;
    if (q->src == q->dst)
        return PDCBB_ERR_INVAL;
    uint64_t rdesc[3 + 3 * PDCBB_REGION_NDIM_MAX], wdesc[3 + 3 * PDCBB_REGION_NDIM_MAX];
    uint32_t n = 3 + 3 * ndim;
    pdcbb_err_t rc = desc_make(rdesc, q->src, q->unit, ndim, q->src_dims, q->box, 0);
    if (rc == PDCBB_OK)
        rc = desc_make(wdesc, q->dst, q->unit, ndim, q->dst_dims, q->box, q->shift);
    if (rc != PDCBB_OK)
        return rc;
    copy_wait_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return PDCBB_ERR_NOMEM;
    rc = bbd_data_read_desc(r, rdesc, n, APPEND_COPY_MAX, &w->data, &w->bytes);
    if (rc != PDCBB_OK) {
        free(w);
        return rc;
    }
    w->src = q->src;
    w->dst = q->dst;
    w->dst_daemon = q->dst_daemon;
    w->hdr = *r->hdr;
    w->conn = r->conn;
    char why[512];
    pdcbb_append_write_req_t wq = {.descs = wdesc, .descs_count = n};
    rc = bbd_peer_send(d, q->dst_daemon, PDCBB_OP_APPEND_WRITE, &wq, w->data, w->bytes,
                       PDCBB_KIND_APPEND, copy_done, w, why, sizeof(why));
    if (rc != PDCBB_OK) {
        PDCBB_WARN("append of object %#" PRIx64 " to %#" PRIx64 ": cannot send to daemon %u: %s",
                   q->src, q->dst, q->dst_daemon, why);
        free(w->data);
        free(w);
        return rc;
    }
    bbd_conn_ref(r->conn); /* until copy_done answers */
    r->deferred = 1;
    return PDCBB_OK;
}

/* APPEND_WRITE: a DATA_WRITE from another daemon's APPEND_COPY (same fields, same code). */
pdcbb_err_t bbd_op_append_write(bbd_req_t *r, const pdcbb_append_write_req_t *q,
                                pdcbb_append_write_rep_t *p)
{
    pdcbb_data_write_req_t wq = {.descs = q->descs, .descs_count = q->descs_count};
    pdcbb_data_write_rep_t wp;
    memset(&wp, 0, sizeof(wp));
    pdcbb_err_t rc = bbd_op_data_write(r, &wq, &wp);
    p->results = wp.results;
    p->results_count = wp.results_count;
    return rc;
}
