/*
 * client_strided.c - strided regions (PDCbb_region_create_strided) and the strided parts of the
 * transfer engine: pieces of a selection clipped by placement boxes, and the bounding-box
 * read-modify-write of remembered placements (PDC_REGION_DYNAMIC, PDC_REGION_LOCAL), whose
 * placement map records boxes.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_strided.h"
#include "client_transfer.h"

/* A piece larger than this is split along the first dimension (as client_transfer.c does). */
#define STRIDED_PIECE_MAX ((uint64_t)64 << 20)

pdcid_t PDCbb_region_create_strided(psize_t ndims, uint64_t *start, uint64_t *stride,
                                    uint64_t *count, uint64_t *block)
{
    static const char fn[] = "PDCbb_region_create_strided";
    pdcid_t id = 0;
    pdcbb_sel_t sel;
    char why[256];
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK)
        goto out;
    if (ndims < 1 || ndims > PDCBB_REGION_NDIM_MAX) {
        client_fail(PDCBB_ERR_BAD_REGION, "%s: ndims %llu out of range 1..%d", fn,
                    (unsigned long long)ndims, PDCBB_REGION_NDIM_MAX);
        goto out;
    }
    pdcbb_err_t rc = pdcbb_sel_make(&sel, (uint32_t)ndims, start, stride, count, block, why,
                                    sizeof(why));
    if (rc != PDCBB_OK) {
        client_fail(rc, "%s: %s", fn, why);
        goto out;
    }
    client_region_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    r->strided = 1;
    r->sel = sel;
    pdcbb_sel_bbox(&sel, &r->box);
    memcpy(r->offset, r->box.off, ndims * sizeof(uint64_t));
    memcpy(r->size, r->box.size, ndims * sizeof(uint64_t));
    r->info.ndim = (size_t)ndims;
    r->info.offset = r->offset;
    r->info.size = r->size;
    if ((id = client_handle_new(CLIENT_H_REGION, r)) == 0) {
        free(r);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    r->info.local_id = id;
out:
    CLIENT_LEAVE();
    return id;
}

pdcbb_err_t client_strided_pieces(client_xfer_t *x, unsigned daemon, const pdcbb_box_t *clip,
                                  int need_own, client_piece_add_fn add)
{
    pdcbb_box_t ib;
    uint64_t cnt;
    if (!pdcbb_sel_index_box(&x->sel, clip, &ib))
        return PDCBB_OK; /* nothing selected in this part */
    if (pdcbb_box_count(&ib, &cnt) != PDCBB_OK)
        return PDCBB_ERR_TOO_BIG;
    uint64_t bytes = cnt * x->unit;
    if (bytes <= STRIDED_PIECE_MAX || ib.size[0] < 2)
        return add(x, daemon, clip, &ib, bytes, need_own);
    /* Slabs of the index space along the first dimension, each clipped to its coordinates. */
    uint64_t per = bytes / ib.size[0];
    uint64_t step = per >= STRIDED_PIECE_MAX ? 1 : STRIDED_PIECE_MAX / per;
    for (uint64_t k = ib.off[0]; k < ib.off[0] + ib.size[0]; k += step) {
        uint64_t k1 = k + step < ib.off[0] + ib.size[0] ? k + step : ib.off[0] + ib.size[0];
        pdcbb_box_t sub = *clip, sib;
        sub.off[0] = pdcbb_sel_coord(&x->sel, 0, k);
        sub.size[0] = pdcbb_sel_coord(&x->sel, 0, k1 - 1) + 1 - sub.off[0];
        if (!pdcbb_box_intersect(&sub, clip, &sub) || !pdcbb_sel_index_box(&x->sel, &sub, &sib))
            continue;
        pdcbb_box_count(&sib, &cnt);
        pdcbb_err_t rc = add(x, daemon, &sub, &sib, cnt * x->unit, need_own);
        if (rc != PDCBB_OK)
            return rc;
    }
    return PDCBB_OK;
}

int client_strided_needs_rmw(const client_xfer_t *x)
{
    return x->partition == PDC_REGION_DYNAMIC || x->partition == PDC_REGION_LOCAL;
}

typedef struct copy_ctx {
    uint8_t *whole;
    uint8_t *packed;
    int to_packed;
} copy_ctx_t;

static int run_copy(uint64_t aoff, uint64_t len, uint64_t poff, void *arg)
{
    copy_ctx_t *c = arg;
    if (c->to_packed)
        memcpy(c->packed + poff, c->whole + aoff, len);
    else
        memcpy(c->whole + aoff, c->packed + poff, len);
    return 0;
}

pdcbb_err_t client_strided_rmw(client_xfer_t *x, uint8_t **out)
{
    uint64_t cnt;
    if (pdcbb_box_count(&x->remote, &cnt) != PDCBB_OK || cnt > (UINT64_MAX >> 1) / x->unit)
        return client_fail(PDCBB_ERR_TOO_BIG, "the strided selection's bounding box is too large");
    uint8_t *whole = malloc(cnt > 0 ? cnt * x->unit : 1);
    if (whole == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "out of memory for the bounding box of a strided "
                                            "selection (%llu bytes)",
                           (unsigned long long)(cnt * x->unit));
    /* Read the bounding box as a plain transfer. */
    client_xfer_t t;
    memset(&t, 0, sizeof(t));
    t.buf = whole;
    t.access = PDC_READ;
    t.obj_meta = x->obj_meta;
    memcpy(t.obj_name, x->obj_name, sizeof(t.obj_name));
    t.ndim = x->ndim;
    memcpy(t.dims, x->dims, sizeof(t.dims));
    t.unit = x->unit;
    t.partition = x->partition;
    t.consistency = x->consistency;
    t.remote = x->remote;
    t.local = x->remote;
    memset(t.local.off, 0, sizeof(t.local.off));
    memcpy(t.local_shape, x->remote.size, sizeof(t.local_shape));
    t.bytes = cnt * x->unit;
    t.state = CLIENT_XFER_CREATED;
    t.reported = 1;
    client_xfer_t *ts[1] = {&t};
    int failed;
    pdcbb_err_t rc = client_xfer_start(ts, 1, &failed);
    if (rc == PDCBB_OK) {
        client_xfer_wait(&t, client_g.cfg.request_timeout);
        if (t.state == CLIENT_XFER_STARTED) {
            rc = client_fail(PDCBB_ERR_TIMEOUT, "reading the bounding box did not finish");
            client_xfer_wait(&t, 2.0);
        } else if (t.result != PDCBB_OK) {
            rc = client_fail(t.result, "reading the bounding box: %s", t.errmsg);
        }
    }
    client_xfer_reset(&t);
    if (rc == PDCBB_OK) {
        /* The selection relative to its bounding box, within an array of the box's shape. */
        pdcbb_sel_t rel = x->sel;
        for (uint32_t d = 0; d < x->ndim; d++)
            rel.start[d] -= x->remote.off[d];
        pdcbb_box_t rb = x->remote;
        memset(rb.off, 0, sizeof(rb.off));
        copy_ctx_t c = {whole, x->packed_buf, out == NULL};
        if (pdcbb_sel_runs(&rel, &rb, x->ndim, x->remote.size, x->unit, run_copy, &c) != 0)
            rc = client_fail(PDCBB_ERR_INTERNAL, "cannot copy the strided selection");
    }
    if (rc != PDCBB_OK || out == NULL)
        free(whole);
    else
        *out = whole;
    return rc;
}

int client_strided_region_of(const struct pdc_region_info *info, pdcbb_sel_t *sel)
{
    pdcbb_err_t e;
    client_region_t *r = client_handle_get(info->local_id, CLIENT_H_REGION, &e);
    if (r == NULL || !r->strided || &r->info != info)
        return 0;
    *sel = r->sel;
    return 1;
}

uint64_t client_strided_filter(uint64_t *lin, uint64_t n, const pdcbb_sel_t *sel,
                               const uint64_t *strides)
{
    uint64_t kept = 0, c[PDCBB_REGION_NDIM_MAX];
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = lin[i];
        for (uint32_t d = 0; d < sel->ndim; d++) {
            c[d] = v / strides[d];
            v %= strides[d];
        }
        if (pdcbb_sel_contains(sel, c))
            lin[kept++] = lin[i];
    }
    return kept;
}
