/*
 * bbd_grow.c - the current extent of objects whose first dimension is unlimited (OBJ_EXTEND,
 * OBJ_EXTENT; docs/PROTOCOL.md "Growing objects").
 *
 * The home daemon of such an object keeps its extent (rows) in the store (pdcbb_extent_key in
 * pdcbb_store.h). OBJ_EXTEND raises it inside the request's write transaction and never lowers
 * it: requests are applied one at a time, so concurrent extenders and writers from any number
 * of clients end with the largest row count any of them asked for. The drain writes the extent
 * as the manifest's current_dims; a stage-in restores it (bbd_extent_set).
 */
#include <string.h>

#include "bbd.h"
#include "pdcbb_checked.h"
#include "pdcbb_log.h"

#define OPS (r->d->store_ops)

/* The object record of id (ours, an object, with an unlimited first dim); dims into scratch. */
static pdcbb_err_t grow_object(bbd_req_t *r, uint64_t id, uint64_t **dims, uint32_t *ndim)
{
    uint8_t key[8];
    pdcbb_val_t v;
    pdcbb_obj_info_rep_t rec;
    if (id == 0 || pdcbb_meta_id_server(id) != r->d->rank)
        return PDCBB_ERR_BAD_ID;
    if (pdcbb_meta_id_kind(id) != PDCBB_META_KIND_OBJ)
        return pdcbb_meta_id_kind(id) == PDCBB_META_KIND_CONT ? PDCBB_ERR_WRONG_TYPE
                                                               : PDCBB_ERR_BAD_ID;
    pdcbb_key_u64(key, id);
    pdcbb_err_t rc = OPS->get(r->txn, PDCBB_T_OBJ, (pdcbb_val_t){key, 8}, &v);
    if (rc != PDCBB_OK)
        return rc;
    if (pdcbb_body_decode(PDCBB_OP_OBJ_INFO, 1, v.data, v.len, &rec) != PDCBB_OK)
        return PDCBB_ERR_STORE;
    if (rec.dims_count == 0 || rec.dims[0] != UINT64_MAX) {
        pdcbb_body_free(PDCBB_OP_OBJ_INFO, 1, &rec);
        return PDCBB_ERR_UNSUPPORTED; /* not a growing object */
    }
    uint64_t *copy = bbd_req_alloc(r, 8 * (size_t)rec.dims_count);
    if (copy != NULL)
        memcpy(copy, rec.dims, 8 * (size_t)rec.dims_count);
    *ndim = rec.dims_count;
    pdcbb_body_free(PDCBB_OP_OBJ_INFO, 1, &rec);
    if (copy == NULL)
        return PDCBB_ERR_NOMEM;
    *dims = copy;
    return PDCBB_OK;
}

pdcbb_err_t bbd_extent_set(bbd_req_t *r, uint64_t id, uint64_t rows)
{
    uint8_t key[PDCBB_EXTENT_KEY_LEN], val[8];
    pdcbb_key_u64(val, rows);
    return OPS->put(r->txn, PDCBB_T_STATE, pdcbb_extent_key(key, id), (pdcbb_val_t){val, 8}, 0);
}

pdcbb_err_t bbd_extent_forget(bbd_req_t *r, uint64_t id)
{
    uint8_t key[PDCBB_EXTENT_KEY_LEN];
    pdcbb_err_t rc = OPS->del(r->txn, PDCBB_T_STATE, pdcbb_extent_key(key, id));
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

/* The object's dims with its extent first, after raising the extent to rows (0: read only). */
static pdcbb_err_t grow_answer(bbd_req_t *r, uint64_t id, uint64_t rows, uint64_t **dims,
                               uint32_t *ndim)
{
    uint64_t cur;
    pdcbb_err_t rc = grow_object(r, id, dims, ndim);
    if (rc == PDCBB_OK)
        rc = pdcbb_extent_read(OPS, r->txn, id, &cur);
    if (rc != PDCBB_OK)
        return rc;
    if (rows == UINT64_MAX)
        return PDCBB_ERR_INVAL; /* the unlimited marker is no row count */
    if (rows > cur) {
        if ((rc = bbd_extent_set(r, id, rows)) != PDCBB_OK)
            return rc;
        PDCBB_DEBUG("object %#llx grows from %llu to %llu rows", (unsigned long long)id,
                    (unsigned long long)cur, (unsigned long long)rows);
        cur = rows;
    }
    (*dims)[0] = cur;
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_obj_extend(bbd_req_t *r, const pdcbb_obj_extend_req_t *q,
                              pdcbb_obj_extend_rep_t *p)
{
    return grow_answer(r, q->id, q->rows, &p->dims, &p->dims_count);
}

pdcbb_err_t bbd_op_obj_extent(bbd_req_t *r, const pdcbb_obj_extent_req_t *q,
                              pdcbb_obj_extent_rep_t *p)
{
    return grow_answer(r, q->id, 0, &p->dims, &p->dims_count);
}

/* OBJ_RESERVE: rows more at the end, in this request's transaction (docs/PROTOCOL.md "Append"):
 * requests are applied one at a time, so concurrent reservations get disjoint row ranges. */
pdcbb_err_t bbd_op_obj_reserve(bbd_req_t *r, const pdcbb_obj_reserve_req_t *q,
                               pdcbb_obj_reserve_rep_t *p)
{
    uint64_t cur, end;
    pdcbb_err_t rc = grow_object(r, q->id, &p->dims, &p->dims_count);
    if (rc == PDCBB_OK)
        rc = pdcbb_extent_read(OPS, r->txn, q->id, &cur);
    if (rc != PDCBB_OK)
        return rc;
    if (q->rows == 0 || pdcbb_add_overflow(cur, q->rows, &end) || end == UINT64_MAX)
        return PDCBB_ERR_INVAL;
    if ((rc = bbd_extent_set(r, q->id, end)) != PDCBB_OK)
        return rc;
    PDCBB_DEBUG("object %#llx: rows [%llu, %llu) reserved", (unsigned long long)q->id,
                (unsigned long long)cur, (unsigned long long)end);
    p->start = cur;
    p->dims[0] = end;
    return PDCBB_OK;
}
