/*
 * pdc_append.c - PDCbb_obj_append: append one object's rows to a growing object inside the
 * burst buffer (docs/PROTOCOL.md "Append").
 *
 * 1. OBJ_RESERVE at dst's home daemon adds src's rows to dst's extent and answers the first
 *    reserved row E (atomic there: concurrent appends get disjoint ranges).
 * 2. The placement of both objects (client_xfer_plan: the pieces a read of src's rows and a
 *    write of dst's rows [E, E + rows) would have) pairs every piece of src with the pieces of
 *    dst it lands in; each pair, cut into slabs of at most APPEND_SLAB_BYTES, is one
 *    APPEND_COPY to the daemon holding the src piece, which sends the data to the daemon
 *    holding the dst piece (bbd/bbd_append.c). Only these small requests leave the client.
 * Remembered placements (REGION_DYNAMIC/LOCAL src) may overlap, the newest write winning: their
 * pieces are copied one after the other, oldest first; disjoint pieces are copied in parallel.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_transfer.h"

/* One APPEND_COPY moves at most this much (a few MiB: the daemons' memory stays bounded). */
#define APPEND_SLAB_BYTES ((uint64_t)4 << 20)
/* APPEND_COPY requests in flight at a time. */
#define APPEND_WINDOW 8

typedef struct append_ctx {
    const char *fn;
    const client_obj_t *src, *dst;
    uint64_t unit, shift;
    client_pending_t *win[APPEND_WINDOW];
    unsigned inflight;
    unsigned posted;
    pdcbb_err_t rc;
} append_ctx_t;

/* Finish the request in slot i; keeps the first failure. */
static void slot_finish(append_ctx_t *a, unsigned i)
{
    pdcbb_append_copy_rep_t rep;
    void *keep;
    client_rpc_wait(a->win[i], client_g.cfg.request_timeout);
    pdcbb_err_t rc = client_rpc_finish(a->win[i], &rep, &keep);
    a->win[i] = NULL;
    a->inflight--;
    if (rc == PDCBB_OK)
        client_rpc_release(PDCBB_OP_APPEND_COPY, &rep, keep);
    else if (a->rc == PDCBB_OK)
        a->rc = client_fail(PDCbb_last_error(), "%s: copying object '%s' to '%s': %s", a->fn,
                            a->src->name, a->dst->name, PDCbb_last_error_message());
}

static void drain_all(append_ctx_t *a)
{
    for (unsigned i = 0; i < APPEND_WINDOW; i++)
        if (a->win[i])
            slot_finish(a, i);
}

/* One APPEND_COPY of box b of src (held by daemon from) to daemon to. */
static void post_copy(append_ctx_t *a, unsigned from, unsigned to, const pdcbb_box_t *b)
{
    if (a->rc != PDCBB_OK)
        return;
    unsigned slot = 0;
    if (a->inflight == APPEND_WINDOW) {
        slot = a->posted % APPEND_WINDOW; /* the oldest */
        slot_finish(a, slot);
        if (a->rc != PDCBB_OK)
            return;
    } else {
        while (a->win[slot])
            slot++;
    }
    uint64_t box[2 * PDCBB_REGION_NDIM_MAX];
    memcpy(box, b->off, b->ndim * sizeof(uint64_t));
    memcpy(box + b->ndim, b->size, b->ndim * sizeof(uint64_t));
    pdcbb_append_copy_req_t q = {.src = a->src->meta_id,
                                 .dst = a->dst->meta_id,
                                 .dst_daemon = to,
                                 .unit = a->unit,
                                 .shift = a->shift,
                                 .src_dims = a->src->prop.pub.dims,
                                 .src_dims_count = b->ndim,
                                 .dst_dims = a->dst->prop.pub.dims,
                                 .dst_dims_count = b->ndim,
                                 .box = box,
                                 .box_count = 2 * b->ndim};
    pdcbb_err_t rc =
        client_rpc_post(from, PDCBB_OP_APPEND_COPY, &q, NULL, 0, NULL, 0, &a->win[slot]);
    if (rc != PDCBB_OK) {
        a->win[slot] = NULL;
        a->rc = client_fail(rc, "%s: copying object '%s' to '%s': %s", a->fn, a->src->name,
                            a->dst->name, PDCbb_last_error_message());
        return;
    }
    a->inflight++;
    a->posted++;
}

/* The part of src piece s that lands in dst piece t, as slabs of src rows. */
static void copy_pair(append_ctx_t *a, const xfer_piece_t *s, const xfer_piece_t *t)
{
    pdcbb_box_t moved = s->box, in;
    moved.off[0] += a->shift;
    if (!pdcbb_box_intersect(&moved, &t->box, &in))
        return;
    in.off[0] -= a->shift; /* back in src coordinates */
    uint64_t row = a->unit;
    for (uint32_t d = 1; d < in.ndim; d++)
        row *= in.size[d];
    uint64_t step = row >= APPEND_SLAB_BYTES ? 1 : APPEND_SLAB_BYTES / row;
    for (uint64_t r = 0; r < in.size[0] && a->rc == PDCBB_OK; r += step) {
        pdcbb_box_t slab = in;
        slab.off[0] = in.off[0] + r;
        slab.size[0] = in.size[0] - r < step ? in.size[0] - r : step;
        post_copy(a, s->daemon, t->daemon, &slab);
    }
}

/* The element size of o, or 0. */
static uint64_t obj_unit(const client_obj_t *o)
{
    return o->prop.pub.type == PDC_STRING ? 1 : get_size_by_dtype(o->prop.pub.type);
}

/* The rows of src to append: its dims[0], or its extent. */
static pdcbb_err_t src_rows(const client_obj_t *src, uint64_t *rows)
{
    if (src->prop.pub.dims[0] != PDC_SIZE_UNLIMITED) {
        *rows = src->prop.pub.dims[0];
        return PDCBB_OK;
    }
    pdcbb_obj_extent_req_t q = {.id = src->meta_id};
    pdcbb_obj_extent_rep_t p;
    void *keep;
    pdcbb_err_t rc = client_op_obj_extent(pdcbb_meta_id_server(src->meta_id), &q, &p, &keep);
    if (rc != PDCBB_OK)
        return rc;
    if (p.dims_count != src->prop.pub.ndim)
        rc = client_fail(PDCBB_ERR_PROTO, "the daemon answered %u dims", p.dims_count);
    else
        *rows = p.dims[0];
    client_rpc_release(PDCBB_OP_OBJ_EXTENT, &p, keep);
    return rc;
}

/* Every check of the arguments; the message names what is wrong. */
static pdcbb_err_t append_check(const char *fn, const client_obj_t *dst, const client_obj_t *src,
                                uint64_t *unit)
{
    const client_obj_t *both[2] = {dst, src};
    for (int i = 0; i < 2; i++)
        if (both[i]->deleted)
            return client_fail(PDCBB_ERR_NOT_FOUND, "%s: object '%s' was deleted", fn,
                               both[i]->name);
    if (dst->meta_id == src->meta_id)
        return client_fail(PDCBB_ERR_INVAL, "%s: cannot append object '%s' to itself", fn,
                           dst->name);
    if (client_g.drained)
        return client_fail(PDCBB_ERR_READ_ONLY,
                           "%s: %s; %s is a drained job directory, opened read-only "
                           "(PDCBB_DRAINED_DIR)",
                           fn, pdcbb_strerror(PDCBB_ERR_READ_ONLY), client_drained_dir());
    if (dst->prop.pub.ndim == 0 || dst->prop.pub.dims[0] != PDC_SIZE_UNLIMITED)
        return client_fail(PDCBB_ERR_UNSUPPORTED,
                           "%s: object '%s' cannot be appended to: its first dimension is not "
                           "PDC_SIZE_UNLIMITED",
                           fn, dst->name);
    uint64_t du = obj_unit(dst), su = obj_unit(src);
    if (du == 0 || su == 0)
        return client_fail(PDCBB_ERR_BAD_REGION, "%s: object '%s' has no element type", fn,
                           du == 0 ? dst->name : src->name);
    if (dst->prop.pub.type != src->prop.pub.type || du != su)
        return client_fail(PDCBB_ERR_WRONG_TYPE,
                           "%s: object '%s' has element type %d (%llu bytes), object '%s' has "
                           "%d (%llu bytes): they must be the same",
                           fn, dst->name, (int)dst->prop.pub.type, (unsigned long long)du,
                           src->name, (int)src->prop.pub.type, (unsigned long long)su);
    if (src->prop.pub.ndim != dst->prop.pub.ndim)
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: object '%s' has %zu dimensions, object '%s' has %zu", fn,
                           dst->name, dst->prop.pub.ndim, src->name, src->prop.pub.ndim);
    for (size_t d = 1; d < dst->prop.pub.ndim; d++)
        if (src->prop.pub.dims[d] != dst->prop.pub.dims[d])
            return client_fail(PDCBB_ERR_BAD_REGION,
                               "%s: dimension %zu of object '%s' is %llu, of object '%s' %llu: "
                               "every dimension but the first must be the same",
                               fn, d, dst->name, (unsigned long long)dst->prop.pub.dims[d],
                               src->name, (unsigned long long)src->prop.pub.dims[d]);
    *unit = du;
    return PDCBB_OK;
}

perr_t PDCbb_obj_append(pdcid_t dst_obj, pdcid_t src_obj)
{
    const char *fn = "PDCbb_obj_append";
    perr_t ret = FAIL;
    client_xfer_t *sx = NULL, *dx = NULL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *dst = client_check_init() == PDCBB_OK ? client_obj_get(dst_obj, fn) : NULL;
    client_obj_t *src = dst ? client_obj_get(src_obj, fn) : NULL;
    uint64_t unit = 0, rows = 0;
    if (src == NULL || append_check(fn, dst, src, &unit) != PDCBB_OK)
        goto out;
    if (src_rows(src, &rows) != PDCBB_OK) {
        client_fail(PDCbb_last_error(), "%s: the extent of object '%s': %s", fn, src->name,
                    PDCbb_last_error_message());
        goto out;
    }
    if (rows == 0) {
        ret = SUCCEED; /* nothing to append */
        goto out;
    }
    /* 1. Reserve the rows. */
    pdcbb_obj_reserve_req_t rq = {.id = dst->meta_id, .rows = rows};
    pdcbb_obj_reserve_rep_t rp;
    void *keep;
    if (client_op_obj_reserve(pdcbb_meta_id_server(dst->meta_id), &rq, &rp, &keep) !=
        PDCBB_OK) {
        client_fail(PDCbb_last_error(), "%s: reserving %llu rows of object '%s': %s", fn,
                    (unsigned long long)rows, dst->name, PDCbb_last_error_message());
        goto out;
    }
    uint64_t start = rp.start;
    client_rpc_release(PDCBB_OP_OBJ_RESERVE, &rp, keep);
    /* 2. Where the rows are and go. */
    sx = calloc(1, sizeof(*sx));
    dx = calloc(1, sizeof(*dx));
    if (sx == NULL || dx == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    if (client_xfer_plan_rows(sx, src, PDC_READ, unit, 0, rows) != PDCBB_OK ||
        client_xfer_plan_rows(dx, dst, PDC_WRITE, unit, start, rows) != PDCBB_OK) {
        client_fail(PDCbb_last_error(), "%s: the placement of objects '%s' and '%s': %s", fn,
                    src->name, dst->name, PDCbb_last_error_message());
        goto out;
    }
    /* 3. The copies. */
    append_ctx_t a = {.fn = fn, .src = src, .dst = dst, .unit = unit, .shift = start};
    int ordered = src->prop.pub.region_partition == PDC_REGION_DYNAMIC ||
                  src->prop.pub.region_partition == PDC_REGION_LOCAL;
    for (unsigned i = 0; i < sx->npieces && a.rc == PDCBB_OK; i++) {
        for (unsigned j = 0; j < dx->npieces; j++)
            copy_pair(&a, &sx->pieces[i], &dx->pieces[j]);
        if (ordered)
            drain_all(&a); /* a newer piece may overwrite this one's rows */
    }
    drain_all(&a);
    if (a.rc == PDCBB_OK)
        ret = SUCCEED;
out:
    if (sx) {
        client_xfer_reset(sx);
        free(sx);
    }
    if (dx) {
        client_xfer_reset(dx);
        free(dx);
    }
    CLIENT_LEAVE();
    return ret;
}
