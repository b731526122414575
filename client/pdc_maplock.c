/*
 * pdc_maplock.c - PDC's map/lock API: PDCbuf_obj_map, PDCbuf_obj_unmap, PDCreg_obtain_lock,
 * PDCreg_release_lock, and the synchronous transfers they (and the analyses) use.
 *
 * A map ties an application buffer (described by a local region, as a transfer's local region)
 * to a region of an object; it lives in this process only. A lock is granted by the object's
 * home daemon (LOCK_OBTAIN) to this process's connection: overlapping write locks exclude each
 * other and read locks, in arrival order, between all processes of the job; a lock of a process
 * that dies is released by the daemon. Data moves at PDC's points:
 *   - a PDC_READ lock on a mapped region: once granted, the object region is read into the
 *     buffer (so the buffer holds it while the lock is held, and after the release as PDC says);
 *   - releasing a PDC_WRITE lock on a mapped region: the buffer is written to the object region,
 *     and only when that write is complete is the lock released.
 * Transforms registered for the mapping run on the way (DATA_OUT on write, DATA_IN on read).
 * Locks on regions that are not mapped are plain locks (no data moves), as in PDC.
 */
#include <stdlib.h>
#include <string.h>

#include "client_maplock.h"

typedef struct client_map {
    struct client_map *next;
    uint64_t obj_meta;
    pdcid_t reg_id;           /* the remote region id given to PDCbuf_obj_map */
    client_obj_t *obj;        /* a copy of the object's description (PDC holds a reference) */
    void *buf;
    pdc_var_type_t local_type;
    pdcbb_box_t local;
    uint64_t local_shape[PDCBB_REGION_NDIM_MAX];
    pdcbb_box_t remote;
} client_map_t;

typedef struct client_lock {
    struct client_lock *next;
    uint64_t obj_meta;
    char obj_name[PDCBB_NAME_MAX + 1];
    pdcid_t reg_id;
    pdc_access_t access;
    uint64_t lock;            /* the daemon's lock id; 0: a read lock of a drained job */
    unsigned server;
} client_lock_t;

static client_map_t *maps;
static client_lock_t *locks;

size_t client_obj_unit(const client_obj_t *o)
{
    return o->prop.pub.type == PDC_STRING ? 1 : get_size_by_dtype(o->prop.pub.type);
}

static void box_text(const pdcbb_box_t *b, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (uint32_t d = 0; d < b->ndim && n < len; d++)
        n += (size_t)snprintf(out + n, len - n, "%s%llu:%llu", d ? "," : "",
                              (unsigned long long)b->off[d], (unsigned long long)b->size[d]);
}

pdcbb_err_t client_transfer_box(const client_obj_t *o, pdc_access_t access, void *buf,
                                const pdcbb_box_t *local, const uint64_t *local_shape,
                                const pdcbb_box_t *remote, const char *fn)
{
    client_xfer_t x;
    uint64_t count;
    memset(&x, 0, sizeof(x));
    x.unit = client_obj_unit(o);
    if (x.unit == 0 || pdcbb_box_count(remote, &count) != PDCBB_OK)
        return client_fail(PDCBB_ERR_BAD_REGION, "%s: object '%s' has no element type", fn,
                           o->name);
    x.buf = buf;
    x.access = access;
    x.obj_meta = o->meta_id;
    snprintf(x.obj_name, sizeof(x.obj_name), "%s", o->name);
    x.ndim = remote->ndim;
    memcpy(x.dims, o->prop.pub.dims, x.ndim * sizeof(uint64_t));
    x.partition = o->prop.pub.region_partition;
    x.consistency = o->prop.pub.consistency;
    x.remote = *remote;
    x.local = *local;
    memcpy(x.local_shape, local_shape, local->ndim * sizeof(uint64_t));
    x.bytes = count * x.unit;
    x.state = CLIENT_XFER_CREATED;
    x.reported = 1;
    client_xfer_t *xs[1] = {&x};
    int failed;
    if (client_xfer_start(xs, 1, &failed) != PDCBB_OK)
        return client_fail(PDCbb_last_error(), "%s: object '%s': %s", fn, o->name,
                           PDCbb_last_error_message());
    client_xfer_wait(&x, client_g.cfg.request_timeout);
    pdcbb_err_t rc = PDCBB_OK;
    if (x.state == CLIENT_XFER_STARTED) {
        rc = client_fail(PDCBB_ERR_TIMEOUT, "%s: the transfer of object '%s' did not finish", fn,
                         o->name);
        client_xfer_wait(&x, 2.0);
    } else if (x.result != PDCBB_OK) {
        rc = client_fail(x.result, "%s: %s", fn, x.errmsg);
    }
    client_xfer_reset(&x);
    if (rc == PDCBB_OK && access == PDC_WRITE)
        client_analysis_written(o->meta_id, remote);
    return rc;
}

pdcbb_err_t client_transfer_packed(const client_obj_t *o, pdc_access_t access, void *packed,
                                   const pdcbb_box_t *remote, const char *fn)
{
    pdcbb_box_t local = *remote;
    memset(local.off, 0, sizeof(local.off));
    return client_transfer_box(o, access, packed, &local, remote->size, remote, fn);
}

static client_map_t *map_find(uint64_t meta, pdcid_t reg_id, client_map_t **prev)
{
    client_map_t *p = NULL;
    for (client_map_t *m = maps; m; p = m, m = m->next)
        if (m->obj_meta == meta && m->reg_id == reg_id) {
            if (prev)
                *prev = p;
            return m;
        }
    return NULL;
}

static client_lock_t *lock_find(uint64_t meta, pdcid_t reg_id, int access, client_lock_t **prev)
{
    client_lock_t *p = NULL;
    for (client_lock_t *l = locks; l; p = l, l = l->next)
        if (l->obj_meta == meta && l->reg_id == reg_id && (access < 0 || (int)l->access == access)) {
            if (prev)
                *prev = p;
            return l;
        }
    return NULL;
}

static client_obj_t *obj_get(pdcid_t id, const char *fn)
{
    pdcbb_err_t e;
    client_obj_t *o = client_handle_get(id, CLIENT_H_OBJ, &e);
    if (o == NULL)
        client_fail(e, "%s: %#llx is not a live object id", fn, (unsigned long long)id);
    else if (o->deleted) {
        client_fail(PDCBB_ERR_NOT_FOUND, "%s: object '%s' was deleted", fn, o->name);
        o = NULL;
    }
    return o;
}

static client_region_t *region_get(pdcid_t id, const char *fn, const char *which)
{
    pdcbb_err_t e;
    client_region_t *r = client_handle_get(id, CLIENT_H_REGION, &e);
    if (r == NULL)
        client_fail(e, "%s: %s %#llx is not a live region id", fn, which, (unsigned long long)id);
    return r;
}

/* The object region must fit the object; the thread's error says how it does not. */
static pdcbb_err_t check_remote(const client_obj_t *o, const pdcbb_box_t *remote, const char *fn)
{
    char t[256];
    box_text(remote, t, sizeof(t));
    if (client_obj_unit(o) == 0)
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: object '%s' has no element type (PDCprop_set_obj_type)", fn,
                           o->name);
    if (o->prop.pub.ndim == 0)
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: object '%s' has no dimensions (PDCprop_set_obj_dims)", fn, o->name);
    if (remote->ndim != o->prop.pub.ndim)
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: region [%s] has %u dimensions, object '%s' has %zu", fn, t,
                           remote->ndim, o->name, o->prop.pub.ndim);
    if (pdcbb_box_check_within(remote, remote->ndim, o->prop.pub.dims) != PDCBB_OK)
        return client_fail(PDCBB_ERR_BAD_REGION,
                           "%s: region [%s] (offset:size per dimension) is outside object '%s'",
                           fn, t, o->name);
    return PDCBB_OK;
}

perr_t PDCbuf_obj_map(void *buf, pdc_var_type_t local_type, pdcid_t local_reg, pdcid_t remote_obj,
                      pdcid_t remote_reg)
{
    const char *fn = "PDCbuf_obj_map";
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK)
        goto out;
    client_obj_t *o = obj_get(remote_obj, fn);
    client_region_t *l = o ? region_get(local_reg, fn, "local region") : NULL;
    client_region_t *r = l ? region_get(remote_reg, fn, "remote region") : NULL;
    if (r == NULL)
        goto out;
    if (buf == NULL) {
        client_fail(PDCBB_ERR_INVAL, "%s: the buffer is NULL", fn);
        goto out;
    }
    if ((int)local_type < 0 || (int)local_type >= PDC_TYPE_COUNT) {
        client_fail(PDCBB_ERR_INVAL, "%s: local_type %d is not a PDC type", fn, (int)local_type);
        goto out;
    }
    if (check_remote(o, &r->box, fn) != PDCBB_OK)
        goto out;
    uint64_t cl, cr;
    if (pdcbb_box_count(&l->box, &cl) != PDCBB_OK || pdcbb_box_count(&r->box, &cr) != PDCBB_OK ||
        cl != cr) {
        char t1[256], t2[256];
        box_text(&l->box, t1, sizeof(t1));
        box_text(&r->box, t2, sizeof(t2));
        client_fail(PDCBB_ERR_BAD_REGION,
                    "%s: local region [%s] and remote region [%s] of object '%s' differ in their "
                    "number of elements",
                    fn, t1, t2, o->name);
        goto out;
    }
    if (map_find(o->meta_id, remote_reg, NULL)) {
        client_fail(PDCBB_ERR_EXISTS,
                    "%s: region %#llx of object '%s' is already mapped (PDCbuf_obj_unmap it first)",
                    fn, (unsigned long long)remote_reg, o->name);
        goto out;
    }
    client_map_t *m = calloc(1, sizeof(*m));
    client_obj_t *copy = calloc(1, sizeof(*copy));
    if (m == NULL || copy == NULL || (copy->name = strdup(o->name)) == NULL ||
        client_obj_prop_copy(&copy->prop, &o->prop) != PDCBB_OK) {
        free(m);
        if (copy)
            free(copy->name);
        free(copy);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    copy->meta_id = o->meta_id;
    copy->cont_meta_id = o->cont_meta_id;
    m->obj_meta = o->meta_id;
    m->reg_id = remote_reg;
    m->obj = copy;
    m->buf = buf;
    m->local_type = local_type;
    m->local = l->box;
    for (uint32_t d = 0; d < l->box.ndim; d++)
        m->local_shape[d] = l->box.off[d] + l->box.size[d];
    m->remote = r->box;
    m->next = maps;
    maps = m;
    r->info.mapping = true;
    r->info.buf = buf;
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}

/*
 * Move a mapping's data: the object region to the buffer (PDC_READ) or the buffer to the object
 * region (PDC_WRITE), through the mapping's transform when one is ready.
 */
static pdcbb_err_t map_move(client_map_t *m, pdc_access_t access, const char *fn)
{
    const client_obj_t *o = m->obj;
    size_t obj_unit = client_obj_unit(o);
    size_t buf_unit = get_size_by_dtype(m->local_type);
    int when = access == PDC_WRITE ? DATA_OUT : DATA_IN;
    uint64_t count;
    pdcbb_box_count(&m->remote, &count);
    if (!client_transform_exists(m->buf, o->meta_id, &m->remote, when)) {
        if (buf_unit != obj_unit)
            return client_fail(PDCBB_ERR_BAD_REGION,
                               "%s: the buffer's type %s (%zu bytes) and object '%s''s type %s "
                               "(%zu bytes) differ, and no transform converts them "
                               "(PDCbuf_map_transform_register)",
                               fn, get_name_by_dtype(m->local_type), buf_unit, o->name,
                               get_name_by_dtype(o->prop.pub.type), obj_unit);
        return client_transfer_box(o, access, m->buf, &m->local, m->local_shape, &m->remote, fn);
    }
    /* Through a transform: the buffer's elements packed, converted, then moved (or back). */
    uint8_t *bpk = malloc(count * buf_unit + 1);
    uint8_t *opk = malloc(count * obj_unit + 1);
    pdcbb_err_t rc = PDCBB_OK;
    int ran = 0;
    if (bpk == NULL || opk == NULL) {
        rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
    } else if (access == PDC_WRITE) {
        rc = pdcbb_box_copy(&m->local, m->local.ndim, m->local_shape, buf_unit, m->buf, bpk, 1);
        if (rc == PDCBB_OK)
            rc = client_transform_apply(m->buf, o, &m->remote, when, bpk, m->local_type, opk,
                                        count * obj_unit, o->prop.pub.type, &ran, fn);
        if (rc == PDCBB_OK && !ran && buf_unit == obj_unit)
            memcpy(opk, bpk, count * obj_unit);
        else if (rc == PDCBB_OK && !ran)
            rc = client_fail(PDCBB_ERR_BAD_REGION,
                             "%s: the transform of this mapping is not ready in object '%s''s "
                             "current state, and the types %s and %s differ in size",
                             fn, o->name, get_name_by_dtype(m->local_type),
                             get_name_by_dtype(o->prop.pub.type));
        if (rc == PDCBB_OK)
            rc = client_transfer_packed(o, PDC_WRITE, opk, &m->remote, fn);
    } else {
        rc = client_transfer_packed(o, PDC_READ, opk, &m->remote, fn);
        if (rc == PDCBB_OK)
            rc = client_transform_apply(m->buf, o, &m->remote, when, opk, o->prop.pub.type, bpk,
                                        count * buf_unit, m->local_type, &ran, fn);
        if (rc == PDCBB_OK && !ran && buf_unit == obj_unit)
            memcpy(bpk, opk, count * obj_unit);
        else if (rc == PDCBB_OK && !ran)
            rc = client_fail(PDCBB_ERR_BAD_REGION,
                             "%s: the transform of this mapping is not ready in object '%s''s "
                             "current state, and the types %s and %s differ in size",
                             fn, o->name, get_name_by_dtype(o->prop.pub.type),
                             get_name_by_dtype(m->local_type));
        if (rc == PDCBB_OK)
            rc = pdcbb_box_copy(&m->local, m->local.ndim, m->local_shape, buf_unit, m->buf, bpk,
                                0);
    }
    free(bpk);
    free(opk);
    return rc;
}

/* Tell the daemon the lock is released (a drained job's read locks are local). */
static pdcbb_err_t lock_send_release(const client_lock_t *l, const char *fn)
{
    if (l->lock == 0)
        return PDCBB_OK;
    pdcbb_lock_release_req_t q = {.id = l->obj_meta, .lock = l->lock};
    pdcbb_lock_release_rep_t p;
    void *keep;
    if (client_op_lock_release(l->server, &q, &p, &keep) != PDCBB_OK)
        return client_fail(PDCbb_last_error(), "%s: releasing the lock of object '%s': %s", fn,
                           l->obj_name, PDCbb_last_error_message());
    client_rpc_release(PDCBB_OP_LOCK_RELEASE, &p, keep);
    return PDCBB_OK;
}

/* Release a held lock: publish a mapped buffer first (write locks), then free it. */
static pdcbb_err_t lock_release(client_lock_t *l, client_lock_t *prev, const char *fn)
{
    pdcbb_err_t rc = PDCBB_OK;
    char msg[1024] = "";
    client_map_t *m = map_find(l->obj_meta, l->reg_id, NULL);
    if (m && l->access == PDC_WRITE) {
        rc = map_move(m, PDC_WRITE, fn);
        if (rc != PDCBB_OK)
            snprintf(msg, sizeof(msg), "%s", PDCbb_last_error_message());
    }
    /* Released even when the write failed: others must not wait for a lock nobody uses. */
    pdcbb_err_t rrc = lock_send_release(l, fn);
    if (prev)
        prev->next = l->next;
    else
        locks = l->next;
    free(l);
    if (rc != PDCBB_OK)
        return client_fail(rc, "%s", msg);
    return rrc;
}

perr_t PDCbuf_obj_unmap(pdcid_t remote_obj_id, pdcid_t remote_reg_id)
{
    const char *fn = "PDCbuf_obj_unmap";
    perr_t ret = FAIL;
    client_map_t *m, *prev = NULL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_handle_live(remote_obj_id, CLIENT_H_OBJ, "object", fn);
    if (o == NULL)
        goto out;
    if ((m = map_find(o->meta_id, remote_reg_id, &prev)) == NULL) {
        if (client_handle_kind(remote_reg_id) != CLIENT_H_REGION)
            client_fail(PDCBB_ERR_BAD_ID, "%s: %#llx is not a live region id", fn,
                        (unsigned long long)remote_reg_id);
        else
            client_fail(PDCBB_ERR_NOT_FOUND,
                        "%s: region %#llx of object '%s' is not mapped (PDCbuf_obj_map first)", fn,
                        (unsigned long long)remote_reg_id, o->name);
        goto out;
    }
    /* A lock still held on it is released first (a write lock publishes the buffer). */
    ret = SUCCEED;
    client_lock_t *l, *lprev = NULL;
    while ((l = lock_find(m->obj_meta, m->reg_id, -1, &lprev)) != NULL)
        if (lock_release(l, lprev, fn) != PDCBB_OK)
            ret = FAIL;
    if (prev)
        prev->next = m->next;
    else
        maps = m->next;
    client_region_t *r = client_handle_get(remote_reg_id, CLIENT_H_REGION, NULL);
    if (r) {
        r->info.mapping = false;
        r->info.buf = NULL;
    }
    client_obj_free(m->obj);
    free(m);
out:
    CLIENT_LEAVE();
    return ret;
}

/* Wait for a blocking lock request: as long as it takes (PDC_BLOCK), unless the daemon goes. */
static pdcbb_err_t obtain_blocking(unsigned server, const pdcbb_lock_obtain_req_t *q,
                                   pdcbb_lock_obtain_rep_t *p, void **keep)
{
    client_pending_t *pend;
    pdcbb_err_t rc = client_rpc_post(server, PDCBB_OP_LOCK_OBTAIN, q, NULL, 0, NULL, 0, &pend);
    if (rc != PDCBB_OK)
        return rc;
    client_rpc_wait(pend, 1e9);
    return client_rpc_finish(pend, p, keep);
}

perr_t PDCreg_obtain_lock(pdcid_t obj_id, pdcid_t reg_id, pdc_access_t access_type,
                          pdc_lock_mode_t lock_mode)
{
    const char *fn = "PDCreg_obtain_lock";
    perr_t ret = FAIL;
    char t[256];
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK)
        goto out;
    client_obj_t *o = obj_get(obj_id, fn);
    client_region_t *r = o ? region_get(reg_id, fn, "region") : NULL;
    if (r == NULL)
        goto out;
    if (access_type != PDC_READ && access_type != PDC_WRITE) {
        client_fail(PDCBB_ERR_INVAL, "%s: access type %d is neither PDC_READ nor PDC_WRITE", fn,
                    (int)access_type);
        goto out;
    }
    if (lock_mode != PDC_BLOCK && lock_mode != PDC_NOBLOCK) {
        client_fail(PDCBB_ERR_INVAL, "%s: lock mode %d is neither PDC_BLOCK nor PDC_NOBLOCK", fn,
                    (int)lock_mode);
        goto out;
    }
    if (check_remote(o, &r->box, fn) != PDCBB_OK)
        goto out;
    const char *aname = access_type == PDC_WRITE ? "PDC_WRITE" : "PDC_READ";
    box_text(&r->box, t, sizeof(t));
    if (lock_find(o->meta_id, reg_id, -1, NULL)) {
        client_fail(PDCBB_ERR_BUSY,
                    "%s: this process already holds a lock on region %#llx [%s] of object '%s' "
                    "(release it first)",
                    fn, (unsigned long long)reg_id, t, o->name);
        goto out;
    }
    client_lock_t *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    l->obj_meta = o->meta_id;
    snprintf(l->obj_name, sizeof(l->obj_name), "%s", o->name);
    l->reg_id = reg_id;
    l->access = access_type;
    l->server = pdcbb_meta_id_server(o->meta_id);
    if (client_g.drained) {
        /* A drained job is read-only: nobody writes, a read lock needs no daemon. */
        if (access_type == PDC_WRITE) {
            client_fail(PDCBB_ERR_READ_ONLY, "%s: the drained job %s is read-only", fn,
                        client_drained_dir());
            free(l);
            goto out;
        }
    } else {
        uint64_t box[1 + 2 * PDCBB_REGION_NDIM_MAX];
        box[0] = r->box.ndim;
        memcpy(box + 1, r->box.off, r->box.ndim * sizeof(uint64_t));
        memcpy(box + 1 + r->box.ndim, r->box.size, r->box.ndim * sizeof(uint64_t));
        pdcbb_lock_obtain_req_t q = {.id = o->meta_id,
                                     .access = (uint32_t)access_type,
                                     .mode = (uint32_t)lock_mode,
                                     .box = box,
                                     .box_count = 1 + 2 * r->box.ndim};
        pdcbb_lock_obtain_rep_t p;
        void *keep = NULL;
        pdcbb_err_t rc = lock_mode == PDC_BLOCK ? obtain_blocking(l->server, &q, &p, &keep)
                                                : client_op_lock_obtain(l->server, &q, &p, &keep);
        if (rc != PDCBB_OK) {
            if (rc == PDCBB_ERR_BUSY && lock_mode == PDC_NOBLOCK)
                client_fail(rc,
                            "%s: region [%s] of object '%s' is locked by another process or "
                            "another process waits for it (PDC_NOBLOCK: not waiting)",
                            fn, t, o->name);
            else if (rc == PDCBB_ERR_BUSY)
                client_fail(rc,
                            "%s: this process holds a lock on a region of object '%s' that "
                            "overlaps [%s]; waiting would wait for itself (release it first)",
                            fn, o->name, t);
            else
                client_fail(rc, "%s: %s lock on region [%s] of object '%s': %s", fn, aname, t,
                            o->name, PDCbb_last_error_message());
            free(l);
            goto out;
        }
        l->lock = p.lock;
        client_rpc_release(PDCBB_OP_LOCK_OBTAIN, &p, keep);
    }
    l->next = locks;
    locks = l;
    ret = SUCCEED;
    /* A read lock on a mapped region brings the object's data into the buffer. */
    client_map_t *m = map_find(o->meta_id, reg_id, NULL);
    if (m && access_type == PDC_READ && map_move(m, PDC_READ, fn) != PDCBB_OK) {
        pdcbb_err_t e = PDCbb_last_error();
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s", PDCbb_last_error_message());
        client_lock_t *prev = NULL;
        lock_find(o->meta_id, reg_id, PDC_READ, &prev);
        if (prev)
            prev->next = l->next;
        else
            locks = l->next;
        lock_send_release(l, fn);
        free(l);
        client_fail(e, "%s (the lock was released)", msg);
        ret = FAIL;
    }
out:
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCreg_release_lock(pdcid_t obj_id, pdcid_t reg_id, pdc_access_t access_type)
{
    const char *fn = "PDCreg_release_lock";
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_handle_live(obj_id, CLIENT_H_OBJ, "object", fn);
    if (o == NULL)
        goto out;
    if (access_type != PDC_READ && access_type != PDC_WRITE) {
        client_fail(PDCBB_ERR_INVAL, "%s: access type %d is neither PDC_READ nor PDC_WRITE", fn,
                    (int)access_type);
        goto out;
    }
    client_lock_t *prev = NULL, *l = lock_find(o->meta_id, reg_id, access_type, &prev);
    if (l == NULL) {
        client_fail(PDCBB_ERR_NOT_FOUND,
                    "%s: this process holds no %s lock on region %#llx of object '%s' "
                    "(PDCreg_obtain_lock first)",
                    fn, access_type == PDC_WRITE ? "PDC_WRITE" : "PDC_READ",
                    (unsigned long long)reg_id, o->name);
        goto out;
    }
    ret = lock_release(l, prev, fn) == PDCBB_OK ? SUCCEED : FAIL;
out:
    CLIENT_LEAVE();
    return ret;
}

obj_handle *PDCview_iter_start(pdcid_t view_id)
{
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() == PDCBB_OK)
        client_fail(PDCBB_ERR_UNSUPPORTED,
                    "PDCview_iter_start: pdcbb has no views (view %#llx); PDC declares this "
                    "function without implementing it",
                    (unsigned long long)view_id);
    CLIENT_LEAVE();
    return NULL;
}

void client_maplock_cleanup(void)
{
    /* Locks are released without moving data: PDCclose is no place to publish a buffer the
     * application did not release. The daemon would free them with the connection anyway. */
    while (locks) {
        client_lock_t *l = locks;
        locks = l->next;
        if (!client_g.drained)
            lock_send_release(l, "PDCclose");
        free(l);
    }
    while (maps) {
        client_map_t *m = maps;
        maps = m->next;
        client_obj_free(m->obj);
        free(m);
    }
}
