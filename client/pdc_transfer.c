/*
 * pdc_transfer.c - PDC's region transfer API (PDCregion_transfer_*), PDCobj_put_data /
 * PDCobj_get_data, flushes and object buffers, on the engine in client_transfer.c.
 *
 * The local region describes the user buffer like an HDF5 memory space: the buffer is a
 * row-major array of extents local_offset + local_size, of which the box (local_offset,
 * local_size) is transferred; its elements pair, in row-major order, with those of the remote
 * box of the object, so both must have the same number of elements.
 */
#include <stdlib.h>
#include <string.h>

#include "client_maplock.h"
#include "client_transfer.h"

static client_xfer_t *xfer_get(pdcid_t id, const char *fn)
{
    pdcbb_err_t e;
    client_xfer_t *x = client_handle_get(id, CLIENT_H_TRANSFER, &e);
    if (x == NULL)
        client_fail(e, "%s: %#llx is not a live transfer request id", fn,
                    (unsigned long long)id);
    return x;
}

static client_region_t *region_get(pdcid_t id, const char *fn, const char *which)
{
    pdcbb_err_t e;
    client_region_t *r = client_handle_get(id, CLIENT_H_REGION, &e);
    if (r == NULL)
        client_fail(e, "%s: %s %#llx is not a live region id", fn, which,
                    (unsigned long long)id);
    return r;
}

static void box_text(const pdcbb_box_t *b, char *out, size_t len)
{
    size_t n = 0;
    for (uint32_t d = 0; d < b->ndim && n < len; d++)
        n += (size_t)snprintf(out + n, len - n, "%s%llu:%llu", d ? "," : "",
                              (unsigned long long)b->off[d], (unsigned long long)b->size[d]);
}

/* Fill a transfer from an object and two regions; the thread's error names what is wrong. */
static pdcbb_err_t xfer_setup(client_xfer_t *x, void *buf, pdc_access_t access, pdcid_t obj_id,
                              const pdcbb_box_t *local, const pdcbb_box_t *remote,
                              const pdcbb_sel_t *sel, const char *fn)
{
    pdcbb_err_t e;
    char t1[256], t2[256];
    client_obj_t *o = client_handle_get(obj_id, CLIENT_H_OBJ, &e);
    if (o == NULL)
        return client_fail(e, "%s: %#llx is not a live object id", fn, (unsigned long long)obj_id);
    if (o->deleted)
        return client_fail(PDCBB_ERR_NOT_FOUND, "%s: object '%s' was deleted", fn, o->name);
    if (buf == NULL)
        return client_fail(PDCBB_ERR_INVAL, "%s: the buffer is NULL", fn);
    if (access != PDC_READ && access != PDC_WRITE)
        return client_fail(PDCBB_ERR_INVAL, "%s: access type %d is neither PDC_READ nor PDC_WRITE",
                           fn, (int)access);
    size_t unit = get_size_by_dtype(o->prop.pub.type);
    if (o->prop.pub.type == PDC_STRING)
        unit = 1;
    if (unit == 0)
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: object '%s' has no element type (set one with "
                           "PDCprop_set_obj_type before creating it)",
                           fn, o->name);
    if (o->prop.pub.ndim == 0)
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: object '%s' has no dimensions (PDCprop_set_obj_dims)", fn,
                           o->name);
    box_text(remote, t1, sizeof(t1));
    if (remote->ndim != o->prop.pub.ndim)
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: remote region [%s] has %u dimensions, object '%s' has %zu", fn,
                           t1, remote->ndim, o->name, o->prop.pub.ndim);
    if (pdcbb_box_check_within(remote, remote->ndim, o->prop.pub.dims) != PDCBB_OK) {
        char dims[256];
        size_t n = 0;
        for (size_t d = 0; d < o->prop.pub.ndim && n < sizeof(dims); d++)
            n += (size_t)snprintf(dims + n, sizeof(dims) - n, "%s%llu", d ? "x" : "",
                                  (unsigned long long)o->prop.pub.dims[d]);
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: %s [%s] (offset:size per dimension) is outside "
                           "object '%s' of dimensions %s",
                           fn, sel ? "the strided remote region's bounding box" : "remote region",
                           t1, o->name, dims);
    }
    uint64_t cl, cr;
    if (pdcbb_box_count(local, &cl) != PDCBB_OK || pdcbb_box_count(remote, &cr) != PDCBB_OK ||
        (sel && (cr = pdcbb_sel_count(sel)) == 0) || cr > (UINT64_MAX >> 1) / unit)
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: region of more than 2^63 bytes (its element count overflows)", fn);
    box_text(local, t2, sizeof(t2));
    if (cl != cr)
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: local region [%s] has %llu elements but remote region [%s] has "
                           "%llu",
                           fn, t2, (unsigned long long)cl, t1, (unsigned long long)cr);
    memset(x, 0, sizeof(*x));
    x->buf = buf;
    x->access = access;
    x->obj_meta = o->meta_id;
    snprintf(x->obj_name, sizeof(x->obj_name), "%s", o->name);
    x->ndim = remote->ndim;
    memcpy(x->dims, o->prop.pub.dims, x->ndim * sizeof(uint64_t));
    x->unit = unit;
    x->partition = o->prop.pub.region_partition;
    x->consistency = o->prop.pub.consistency;
    x->remote = *remote;
    x->local = *local;
    for (uint32_t d = 0; d < local->ndim; d++)
        x->local_shape[d] = local->off[d] + local->size[d];
    x->bytes = cr * unit;
    if (sel) { /* a strided selection: remote is its bounding box */
        x->strided = 1;
        x->sel = *sel;
        x->ispace.ndim = sel->ndim;
        for (uint32_t d = 0; d < sel->ndim; d++)
            x->ispace.size[d] = sel->count[d] * sel->block[d];
    }
    x->state = CLIENT_XFER_CREATED;
    x->reported = 1; /* nothing to report until it is started */
    return PDCBB_OK;
}

pdcid_t PDCregion_transfer_create(void *buf, pdc_access_t access_type, pdcid_t obj_id,
                                  pdcid_t local_reg, pdcid_t remote_reg)
{
    const char *fn = "PDCregion_transfer_create";
    pdcid_t id = 0;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK)
        goto out;
    client_region_t *l = region_get(local_reg, fn, "local region");
    client_region_t *r = l ? region_get(remote_reg, fn, "remote region") : NULL;
    if (r == NULL)
        goto out;
    client_xfer_t *x = malloc(sizeof(*x));
    if (x == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    if (l->strided) {
        free(x);
        client_fail(PDCBB_ERR_BAD_REGION,
                    "%s: the local region is strided; a strided remote region pairs with a "
                    "plain local box (the buffer holds the selected elements packed)",
                    fn);
        goto out;
    }
    if (xfer_setup(x, buf, access_type, obj_id, &l->box, &r->box, r->strided ? &r->sel : NULL,
                   fn) != PDCBB_OK) {
        free(x);
        goto out;
    }
    if ((id = client_handle_new(CLIENT_H_TRANSFER, x)) == 0) {
        free(x);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    x->id = id;
out:
    CLIENT_LEAVE();
    return id;
}

/* Record a finished transfer's outcome as the thread's error; SUCCEED or FAIL. */
static perr_t xfer_outcome(client_xfer_t *x, const char *fn)
{
    x->reported = 1;
    x->state = CLIENT_XFER_CREATED;
    if (x->result == PDCBB_OK && x->access == PDC_WRITE)
        client_analysis_written(x->obj_meta, &x->remote); /* analyses of what was written */
    if (x->result == PDCBB_OK)
        return SUCCEED;
    client_fail(x->result, "%s: %s", fn, x->errmsg);
    return FAIL;
}

static perr_t start_many(pdcid_t *ids, int n, const char *fn)
{
    if (client_check_init() != PDCBB_OK)
        return FAIL;
    if (n < 0 || (n > 0 && ids == NULL)) {
        client_fail(PDCBB_ERR_INVAL, "%s: bad request list (size %d)", fn, n);
        return FAIL;
    }
    client_xfer_t **xs = malloc(((size_t)n + 1) * sizeof(*xs));
    if (xs == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        return FAIL;
    }
    for (int i = 0; i < n; i++) {
        if ((xs[i] = xfer_get(ids[i], fn)) == NULL) {
            free(xs);
            return FAIL;
        }
        if (xs[i]->obj_deleted) {
            client_fail(PDCBB_ERR_NOT_FOUND, "%s: object '%s' of request %#llx was deleted", fn,
                        xs[i]->obj_name, (unsigned long long)ids[i]);
            free(xs);
            return FAIL;
        }
        if (xs[i]->state == CLIENT_XFER_STARTED) {
            client_fail(PDCBB_ERR_BUSY, "%s: request %#llx is already in flight (wait for it first)",
                        fn, (unsigned long long)ids[i]);
            free(xs);
            return FAIL;
        }
    }
    int failed = -1;
    perr_t ret = SUCCEED;
    if (client_xfer_start(xs, n, &failed) != PDCBB_OK) {
        client_fail(PDCbb_last_error(), "%s: request %#llx (object '%s'): %s", fn,
                    (unsigned long long)ids[failed >= 0 ? failed : 0],
                    xs[failed >= 0 ? failed : 0]->obj_name, PDCbb_last_error_message());
        ret = FAIL;
    }
    /* PDC_CONSISTENCY_POSIX: complete when start returns. */
    for (int i = 0; i < n && i != failed; i++) {
        if (failed >= 0 && i >= failed)
            break;
        if (xs[i]->consistency == PDC_CONSISTENCY_POSIX) {
            client_xfer_wait(xs[i], client_g.cfg.request_timeout);
            if (xs[i]->result != PDCBB_OK && ret == SUCCEED) {
                client_fail(xs[i]->result, "%s: %s", fn, xs[i]->errmsg);
                ret = FAIL;
            }
        }
    }
    free(xs);
    return ret;
}

perr_t PDCregion_transfer_start(pdcid_t transfer_request_id)
{
    CLIENT_ENTER();
    client_clear_error();
    perr_t ret = start_many(&transfer_request_id, 1, "PDCregion_transfer_start");
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCregion_transfer_start_all(pdcid_t *transfer_request_id, int size)
{
    CLIENT_ENTER();
    client_clear_error();
    perr_t ret = start_many(transfer_request_id, size, "PDCregion_transfer_start_all");
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCregion_transfer_status(pdcid_t transfer_request_id, pdc_transfer_status_t *completed)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_xfer_t *x = client_check_init() == PDCBB_OK
                           ? xfer_get(transfer_request_id, "PDCregion_transfer_status")
                           : NULL;
    if (x == NULL)
        goto out;
    if (completed == NULL) {
        client_fail(PDCBB_ERR_INVAL, "PDCregion_transfer_status: completed is NULL");
        goto out;
    }
    if (x->state == CLIENT_XFER_STARTED)
        client_xfer_poll();
    if (x->state == CLIENT_XFER_STARTED) {
        *completed = PDC_TRANSFER_STATUS_PENDING;
        ret = SUCCEED;
    } else if (x->state == CLIENT_XFER_DONE && !x->reported) {
        *completed = PDC_TRANSFER_STATUS_COMPLETE;
        ret = xfer_outcome(x, "PDCregion_transfer_status");
    } else {
        *completed = PDC_TRANSFER_STATUS_NOT_FOUND;
        ret = SUCCEED;
    }
out:
    CLIENT_LEAVE();
    return ret;
}

static perr_t wait_one(client_xfer_t *x, const char *fn)
{
    if (x->state == CLIENT_XFER_STARTED)
        client_xfer_wait(x, client_g.cfg.request_timeout);
    if (x->state == CLIENT_XFER_DONE && !x->reported)
        return xfer_outcome(x, fn);
    if (x->state == CLIENT_XFER_STARTED) {
        client_fail(PDCBB_ERR_TIMEOUT, "%s: the transfer of object '%s' did not finish", fn,
                    x->obj_name);
        return FAIL;
    }
    return SUCCEED; /* already waited, or never started: nothing to wait for */
}

perr_t PDCregion_transfer_wait(pdcid_t transfer_request_id)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_xfer_t *x = client_check_init() == PDCBB_OK
                           ? xfer_get(transfer_request_id, "PDCregion_transfer_wait")
                           : NULL;
    if (x)
        ret = wait_one(x, "PDCregion_transfer_wait");
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCregion_transfer_wait_all(pdcid_t *transfer_request_id, int size)
{
    perr_t ret = SUCCEED;
    pdcbb_err_t first = PDCBB_OK;
    char msg[1024] = "";
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK) {
        ret = FAIL;
        goto out;
    }
    if (size < 0 || (size > 0 && transfer_request_id == NULL)) {
        client_fail(PDCBB_ERR_INVAL, "PDCregion_transfer_wait_all: bad request list (size %d)",
                    size);
        ret = FAIL;
        goto out;
    }
    /* Every request is waited, even after a failure; the first failure is reported. */
    for (int i = 0; i < size; i++) {
        client_xfer_t *x = xfer_get(transfer_request_id[i], "PDCregion_transfer_wait_all");
        if (x == NULL || wait_one(x, "PDCregion_transfer_wait_all") != SUCCEED) {
            if (first == PDCBB_OK) {
                first = PDCbb_last_error();
                snprintf(msg, sizeof(msg), "%s", PDCbb_last_error_message());
            }
            ret = FAIL;
        }
    }
    if (ret == FAIL)
        client_fail(first, "%s", msg);
    else
        client_clear_error();
out:
    CLIENT_LEAVE();
    return ret;
}

void client_xfer_free(client_xfer_t *x)
{
    if (x == NULL)
        return;
    if (x->state == CLIENT_XFER_STARTED)
        client_xfer_wait(x, client_g.cfg.request_timeout);
    client_xfer_reset(x);
    free(x);
}

perr_t PDCregion_transfer_close(pdcid_t transfer_request_id)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_xfer_t *x = client_check_init() == PDCBB_OK
                           ? xfer_get(transfer_request_id, "PDCregion_transfer_close")
                           : NULL;
    if (x) {
        /* A started, unwaited request is waited first. */
        ret = wait_one(x, "PDCregion_transfer_close");
        client_handle_remove(transfer_request_id, CLIENT_H_TRANSFER);
        client_xfer_free(x);
    }
    CLIENT_LEAVE();
    return ret;
}

/* ---------------------------------------------------------------- whole-object helpers */

/* One synchronous transfer of box remote of obj_id from/to a packed buffer. */
static perr_t transfer_now(pdcid_t obj_id, pdc_access_t access, void *buf,
                           const pdcbb_box_t *remote, const char *fn)
{
    client_xfer_t x;
    pdcbb_box_t local = *remote;
    memset(local.off, 0, sizeof(local.off));
    if (xfer_setup(&x, buf, access, obj_id, &local, remote, NULL, fn) != PDCBB_OK)
        return FAIL;
    client_xfer_t *xs[1] = {&x};
    int failed;
    if (client_xfer_start(xs, 1, &failed) != PDCBB_OK)
        return FAIL;
    client_xfer_wait(&x, client_g.cfg.request_timeout);
    perr_t ret = x.state == CLIENT_XFER_DONE ? xfer_outcome(&x, fn) : FAIL;
    if (x.state == CLIENT_XFER_STARTED) {
        client_fail(PDCBB_ERR_TIMEOUT, "%s: the transfer did not finish", fn);
        client_xfer_wait(&x, 2.0);
    }
    client_xfer_reset(&x);
    return ret;
}

pdcid_t PDCobj_put_data(const char *obj_name, void *data, uint64_t size, pdcid_t cont_id)
{
    const char *fn = "PDCobj_put_data";
    pdcid_t id = 0;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK)
        goto out;
    if (data == NULL || size == 0) {
        client_fail(PDCBB_ERR_INVAL, "%s: data is NULL or size is 0", fn);
        goto out;
    }
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, client_g.pdc_id);
    if (prop == 0 || PDCprop_set_obj_type(prop, PDC_CHAR) != SUCCEED ||
        PDCprop_set_obj_dims(prop, 1, &size) != SUCCEED)
        goto out;
    id = PDCobj_create(cont_id, obj_name, prop);
    pdcbb_err_t e = PDCbb_last_error();
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", PDCbb_last_error_message());
    PDCprop_close(prop);
    if (id == 0) {
        client_fail(e, "%s: %s", fn, msg);
        goto out;
    }
    pdcbb_box_t box;
    uint64_t zero = 0;
    pdcbb_box_make(&box, 1, &zero, &size);
    if (transfer_now(id, PDC_WRITE, data, &box, fn) != SUCCEED) {
        e = PDCbb_last_error();
        snprintf(msg, sizeof(msg), "%s", PDCbb_last_error_message());
        PDCobj_close(id);
        client_fail(e, "%s", msg);
        id = 0;
    }
out:
    CLIENT_LEAVE();
    return id;
}

perr_t PDCobj_get_data(pdcid_t obj_id, void *data, uint64_t size)
{
    const char *fn = "PDCobj_get_data";
    perr_t ret = FAIL;
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_check_init() == PDCBB_OK ? client_handle_get(obj_id, CLIENT_H_OBJ, &e)
                                                      : NULL;
    if (o == NULL) {
        if (client_g.initialised)
            client_fail(e, "%s: %#llx is not a live object id", fn, (unsigned long long)obj_id);
        goto out;
    }
    size_t unit = o->prop.pub.type == PDC_STRING ? 1 : get_size_by_dtype(o->prop.pub.type);
    if (data == NULL || size == 0 || unit == 0 || o->prop.pub.ndim == 0) {
        client_fail(PDCBB_ERR_INVAL, "%s: data NULL, size 0, or object '%s' without type/dims",
                    fn, o->name);
        goto out;
    }
    /* The first size bytes in row-major order: whole slabs of the first dimension, trimmed. */
    uint64_t row = unit, total;
    for (size_t d = 1; d < o->prop.pub.ndim; d++)
        row *= o->prop.pub.dims[d];
    uint64_t rows = (size + row - 1) / row;
    total = o->prop.pub.dims[0] == PDC_SIZE_UNLIMITED ? UINT64_MAX : o->prop.pub.dims[0] * row;
    if (size > total) {
        client_fail(PDCBB_ERR_INVAL,
                    "%s: buffer of %llu bytes is larger than object '%s' (%llu bytes)", fn,
                    (unsigned long long)size, o->name, (unsigned long long)total);
        goto out;
    }
    pdcbb_box_t box;
    uint64_t off[PDCBB_REGION_NDIM_MAX] = {0}, sz[PDCBB_REGION_NDIM_MAX];
    memcpy(sz, o->prop.pub.dims, o->prop.pub.ndim * sizeof(uint64_t));
    sz[0] = rows;
    pdcbb_box_make(&box, (uint32_t)o->prop.pub.ndim, off, sz);
    void *tmp = rows * row == size ? data : malloc(rows * row);
    if (tmp == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    ret = transfer_now(obj_id, PDC_READ, tmp, &box, fn);
    if (tmp != data) {
        if (ret == SUCCEED)
            memcpy(data, tmp, size);
        free(tmp);
    }
out:
    CLIENT_LEAVE();
    return ret;
}

static perr_t flush(uint64_t meta, const char *fn)
{
    perr_t ret = SUCCEED;
    for (unsigned s = 0; s < client_g.nservers; s++) {
        pdcbb_data_flush_req_t q = {.id = meta};
        pdcbb_data_flush_rep_t p;
        void *keep;
        if (client_op_data_flush(s, &q, &p, &keep) != PDCBB_OK) {
            client_fail(PDCbb_last_error(), "%s: %s", fn, PDCbb_last_error_message());
            ret = FAIL;
            continue;
        }
        client_rpc_release(PDCBB_OP_DATA_FLUSH, &p, keep);
    }
    return ret;
}

perr_t PDCobj_flush_start(pdcid_t obj_id)
{
    pdcbb_err_t e;
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_check_init() == PDCBB_OK ? client_handle_get(obj_id, CLIENT_H_OBJ, &e)
                                                      : NULL;
    if (o)
        ret = flush(o->meta_id, "PDCobj_flush_start");
    else if (client_g.initialised)
        client_fail(e, "PDCobj_flush_start: %#llx is not a live object id",
                    (unsigned long long)obj_id);
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCobj_flush_all_start(void)
{
    CLIENT_ENTER();
    client_clear_error();
    perr_t ret = client_check_init() == PDCBB_OK ? flush(0, "PDCobj_flush_all_start") : FAIL;
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCprop_set_obj_buf(pdcid_t obj_prop, void *buf)
{
    pdcbb_err_t e;
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_prop_t *p = client_handle_get(obj_prop, CLIENT_H_OBJ_PROP, &e);
    if (p == NULL)
        client_fail(e, "PDCprop_set_obj_buf: %#llx is not a live object property id",
                    (unsigned long long)obj_prop);
    else {
        p->buf = buf;
        ret = SUCCEED;
    }
    CLIENT_LEAVE();
    return ret;
}

void **PDCobj_buf_retrieve(pdcid_t obj_id)
{
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_handle_get(obj_id, CLIENT_H_OBJ, &e);
    if (o == NULL)
        client_fail(e, "PDCobj_buf_retrieve: %#llx is not a live object id",
                    (unsigned long long)obj_id);
    CLIENT_LEAVE();
    return o ? &o->prop.buf : NULL;
}

typedef struct obj_match {
    uint64_t meta;
    int wait;
} obj_match_t;

static void xfer_of_object(pdcid_t id, void *ptr, void *arg)
{
    client_xfer_t *x = ptr;
    obj_match_t *m = arg;
    (void)id;
    if (x->obj_meta != m->meta)
        return;
    if (m->wait) {
        if (x->state == CLIENT_XFER_STARTED)
            client_xfer_wait(x, client_g.cfg.request_timeout);
    } else {
        x->obj_deleted = 1;
    }
}

void client_xfer_wait_object(uint64_t obj_meta)
{
    obj_match_t m = {obj_meta, 1};
    client_handle_foreach(CLIENT_H_TRANSFER, xfer_of_object, &m);
}

void client_xfer_object_deleted(uint64_t obj_meta)
{
    obj_match_t m = {obj_meta, 0};
    client_handle_foreach(CLIENT_H_TRANSFER, xfer_of_object, &m);
}
