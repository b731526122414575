/*
 * pdc_obj.c - objects (PDCobj_*) apart from data transfer: create, open, close, info,
 * dimensions, delete, tags, tag search, and PDCprop_update / PDCtag_get.
 *
 * Object names are global within the job; an object's metadata lives on the daemon
 * hash(name) mod nservers and its meta id encodes that daemon.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_tag.h"
#include "client_transfer.h"
#include "pdc_client_connect.h"

void client_obj_free(client_obj_t *o)
{
    if (o == NULL)
        return;
    client_obj_prop_free(&o->prop);
    PDC_free_hist(o->hist);
    free(o->name);
    free(o);
}

static int dup_or_null(char **dst, const char *src)
{
    *dst = NULL;
    if (src == NULL || *src == '\0')
        return 0;
    return (*dst = strdup(src)) ? 0 : -1;
}

pdcbb_err_t client_obj_from_reply(client_obj_t *o, const pdcbb_obj_info_rep_t *p)
{
    memset(o, 0, sizeof(*o));
    o->meta_id = p->id;
    o->cont_meta_id = p->cont_id;
    if ((o->name = strdup(p->name)) == NULL)
        return PDCBB_ERR_NOMEM;
    client_obj_prop_t *pr = &o->prop;
    pr->pub.type = (pdc_var_type_t)p->type;
    pr->pub.region_partition = (pdc_region_partition_t)p->partition;
    pr->pub.consistency = (pdc_consistency_t)p->consistency;
    pr->pub.ndim = p->dims_count;
    pr->user_id = p->user_id;
    pr->time_step = p->time_step;
    if (p->dims_count) {
        pr->pub.dims = malloc(p->dims_count * sizeof(uint64_t));
        if (pr->pub.dims == NULL)
            goto nomem;
        memcpy(pr->pub.dims, p->dims, p->dims_count * sizeof(uint64_t));
    }
    if (dup_or_null(&pr->app_name, p->app_name) || dup_or_null(&pr->data_loc, p->data_loc) ||
        dup_or_null(&pr->tags, p->tags))
        goto nomem;
    o->info.name = o->name;
    o->info.meta_id = o->meta_id;
    o->info.server_id = (int)pdcbb_meta_id_server(o->meta_id);
    o->info.metadata_server_id = pdcbb_meta_id_server(o->meta_id);
    o->info.obj_pt = &o->prop.pub;
    return PDCBB_OK;
nomem:
    client_obj_prop_free(pr);
    free(o->name);
    o->name = NULL;
    return PDCBB_ERR_NOMEM;
}

static pdcid_t obj_register(client_obj_t *o, pdcid_t cont_id, const char *fn)
{
    pdcid_t id = client_handle_new(CLIENT_H_OBJ, o);
    if (id == 0) {
        client_obj_free(o);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        return 0;
    }
    o->cont_id = cont_id;
    o->info.local_id = id;
    o->prop.pub.obj_prop_id = 0;
    return id;
}

/* OBJ_CREATE, OBJ_OPEN and OBJ_INFO replies are generated from one field list. */
_Static_assert(sizeof(pdcbb_obj_create_rep_t) == sizeof(pdcbb_obj_info_rep_t) &&
                   sizeof(pdcbb_obj_open_rep_t) == sizeof(pdcbb_obj_info_rep_t),
               "object replies share one layout");

/* An OBJ_CREATE, OBJ_OPEN or OBJ_INFO reply (rep) into a new registered handle. */
static pdcid_t obj_from_reply(const void *rep, pdcid_t cont_id, const char *fn)
{
    pdcbb_obj_info_rep_t p;
    memcpy(&p, rep, sizeof(p));
    client_obj_t *o = malloc(sizeof(*o));
    if (o == NULL || client_obj_from_reply(o, &p) != PDCBB_OK) {
        free(o);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        return 0;
    }
    return obj_register(o, cont_id, fn);
}

pdcid_t client_obj_adopt(const pdcbb_obj_info_rep_t *p, pdcid_t cont_id, const char *fn)
{
    return obj_from_reply(p, cont_id, fn);
}

client_obj_t *client_obj_get(pdcid_t id, const char *fn)
{
    pdcbb_err_t e;
    client_obj_t *o = client_handle_get(id, CLIENT_H_OBJ, &e);
    if (o == NULL) {
        if (e == PDCBB_ERR_WRONG_TYPE)
            client_fail(e, "%s: id %#llx is a %s, not an object", fn, (unsigned long long)id,
                        client_hkind_name(client_handle_kind(id)));
        else
            client_fail(e, "%s: %#llx is not a live object id (closed or never opened)", fn,
                        (unsigned long long)id);
    }
    return o;
}

static pdcbb_err_t check_obj_name(const char *fn, const char *name)
{
    return client_check_name(fn, "object", name);
}

static pdcbb_err_t obj_open_rpc(const char *fn, const char *name, pdcbb_obj_open_rep_t *p,
                                void **keep)
{
    pdcbb_obj_open_req_t q = {.name = name};
    pdcbb_err_t e = client_op_obj_open(client_home_of_name(name), &q, p, keep);
    if (e == PDCBB_ERR_NOT_FOUND)
        client_fail(e, "%s: no object named '%s'", fn, name);
    return e;
}

static pdcid_t obj_create(const char *fn, pdcid_t cont_id, const char *obj_name,
                          pdcid_t obj_create_prop)
{
    pdcid_t id = 0;
    pdcbb_err_t e;
    client_cont_t *c;
    client_obj_prop_t *pr;
    if (client_check_init() != PDCBB_OK || check_obj_name(fn, obj_name) != PDCBB_OK)
        return 0;
    if ((c = client_handle_get(cont_id, CLIENT_H_CONT, &e)) == NULL) {
        client_fail(e, "%s: %#llx is not a live container id%s", fn, (unsigned long long)cont_id,
                    e == PDCBB_ERR_WRONG_TYPE ? " (wrong kind of id)" : "");
        return 0;
    }
    if ((pr = client_handle_get(obj_create_prop, CLIENT_H_OBJ_PROP, &e)) == NULL) {
        client_fail(e, "%s: %#llx is not an object property id (create one with "
                       "PDCprop_create(PDC_OBJ_CREATE, pdc))",
                    fn, (unsigned long long)obj_create_prop);
        return 0;
    }
    pdcbb_obj_create_req_t q = {
        .cont_id = c->meta_id,
        .name = obj_name,
        .type = (int32_t)pr->pub.type,
        .partition = (uint32_t)pr->pub.region_partition,
        .consistency = (uint32_t)pr->pub.consistency,
        .user_id = pr->user_id,
        .time_step = pr->time_step,
        .dims = pr->pub.dims,
        .dims_count = (uint32_t)pr->pub.ndim,
        .app_name = pr->app_name,
        .data_loc = pr->data_loc,
        .tags = pr->tags,
    };
    pdcbb_obj_create_rep_t p;
    void *keep;
    e = client_op_obj_create(client_home_of_name(obj_name), &q, &p, &keep);
    if (e != PDCBB_OK) {
        if (e == PDCBB_ERR_EXISTS)
            client_fail(e, "%s: an object named '%s' already exists", fn, obj_name);
        else if (e == PDCBB_ERR_INVAL)
            client_fail(e, "%s: object '%s': invalid properties (type, dims, placement or "
                           "consistency)", fn, obj_name);
        return 0;
    }
    id = obj_from_reply(&p, cont_id, fn);
    client_rpc_release(PDCBB_OP_OBJ_CREATE, &p, keep);
    if (id) {
        /* Keep the application's buffer (PDCprop_set_obj_buf) with the object. */
        client_obj_t *o = client_handle_get(id, CLIENT_H_OBJ, NULL);
        o->prop.buf = pr->buf;
    }
    return id;
}

pdcid_t PDCobj_create(pdcid_t cont_id, const char *obj_name, pdcid_t obj_create_prop)
{
    CLIENT_ENTER();
    client_clear_error();
    pdcid_t id = obj_create("PDCobj_create", cont_id, obj_name, obj_create_prop);
    CLIENT_LEAVE();
    return id;
}

static pdcid_t obj_open(const char *fn, const char *obj_name, pdcid_t pdc_id)
{
    pdcid_t id = 0;
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK || check_obj_name(fn, obj_name) != PDCBB_OK)
        goto out;
    if (client_handle_get(pdc_id, CLIENT_H_PDC, &e) == NULL) {
        client_fail(e, "%s: %#llx is not the id PDCinit returned", fn,
                    (unsigned long long)pdc_id);
        goto out;
    }
    pdcbb_obj_open_rep_t p;
    void *keep;
    if (obj_open_rpc(fn, obj_name, &p, &keep) != PDCBB_OK)
        goto out;
    id = obj_from_reply(&p, 0, fn);
    client_rpc_release(PDCBB_OP_OBJ_OPEN, &p, keep);
out:
    CLIENT_LEAVE();
    return id;
}

pdcid_t PDCobj_open(const char *obj_name, pdcid_t pdc_id)
{
    return obj_open("PDCobj_open", obj_name, pdc_id);
}

pdcid_t PDCobj_open_col(const char *obj_name, pdcid_t pdc_id)
{
    return obj_open("PDCobj_open_col", obj_name, pdc_id);
}

/* PDCobj_create_mpi: pdc_grow.c (the collective create of one rank). */

perr_t PDCobj_close(pdcid_t obj_id)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (client_handle_kind(obj_id) == CLIENT_H_REGION) {
        /* PDC applications close region ids with PDCobj_close too. */
        ret = PDCregion_close(obj_id);
    } else if (client_obj_get(obj_id, "PDCobj_close") != NULL) {
        /* As PDC: transfers of the object still in flight finish first. */
        client_obj_t *o = client_handle_get(obj_id, CLIENT_H_OBJ, NULL);
        client_xfer_wait_object(o->meta_id);
        client_obj_free(client_handle_remove(obj_id, CLIENT_H_OBJ));
        ret = SUCCEED;
    }
    CLIENT_LEAVE();
    return ret;
}

struct pdc_obj_info *PDCobj_get_info(pdcid_t obj_id)
{
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_obj_get(obj_id, "PDCobj_get_info");
    CLIENT_LEAVE();
    return o ? &o->info : NULL;
}

/* Refresh an open object's properties from its daemon (dims may have changed elsewhere). */
static pdcbb_err_t obj_refresh(client_obj_t *o, const char *fn)
{
    pdcbb_obj_info_req_t q = {.id = o->meta_id};
    pdcbb_obj_info_rep_t p;
    void *keep;
    pdcbb_err_t e = client_op_obj_info(pdcbb_meta_id_server(o->meta_id), &q, &p, &keep);
    if (e != PDCBB_OK) {
        if (e == PDCBB_ERR_NOT_FOUND)
            client_fail(e, "%s: object '%s' no longer exists", fn, o->name);
        return e;
    }
    uint64_t *dims = NULL;
    if (p.dims_count && (dims = malloc(p.dims_count * sizeof(uint64_t))) == NULL) {
        client_rpc_release(PDCBB_OP_OBJ_INFO, &p, keep);
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
    }
    if (p.dims_count)
        memcpy(dims, p.dims, p.dims_count * sizeof(uint64_t));
    free(o->prop.pub.dims);
    o->prop.pub.dims = dims;
    o->prop.pub.ndim = p.dims_count;
    client_rpc_release(PDCBB_OP_OBJ_INFO, &p, keep);
    return PDCBB_OK;
}

static perr_t set_dims(const char *fn, client_obj_t *o, int ndim, const uint64_t *dims)
{
    if (ndim < 1 || ndim > PDCBB_NDIM_MAX || dims == NULL) {
        client_fail(PDCBB_ERR_INVAL, "%s: object '%s': ndim %d out of range 1..%d or dims NULL",
                    fn, o->name, ndim, PDCBB_NDIM_MAX);
        return FAIL;
    }
    for (int i = 0; i < ndim; i++)
        if (dims[i] == 0) {
            client_fail(PDCBB_ERR_INVAL, "%s: object '%s': dims[%d] is 0", fn, o->name, i);
            return FAIL;
        }
    if ((size_t)ndim != o->prop.pub.ndim && o->prop.pub.ndim != 0) {
        client_fail(PDCBB_ERR_INVAL, "%s: object '%s' has %zu dimensions, not %d", fn, o->name,
                    o->prop.pub.ndim, ndim);
        return FAIL;
    }
    /* Data first: every daemon drops what lies beyond the new extent (or refuses a change of
     * a dimension its stored data depends on); only then does the metadata change. */
    for (unsigned s = 0; s < client_g.nservers; s++) {
        pdcbb_data_resize_req_t rq = {.id = o->meta_id, .ids = (uint64_t *)dims,
                                      .ids_count = (uint32_t)ndim};
        pdcbb_data_resize_rep_t rp;
        void *rkeep;
        pdcbb_err_t re = client_op_data_resize(s, &rq, &rp, &rkeep);
        if (re == PDCBB_ERR_BAD_REGION) {
            client_fail(re, "%s: object '%s' holds data: only its first dimension can change",
                        fn, o->name);
            return FAIL;
        }
        if (re != PDCBB_OK)
            return FAIL;
        client_rpc_release(PDCBB_OP_DATA_RESIZE, &rp, rkeep);
    }
    pdcbb_obj_set_dims_req_t q = {.id = o->meta_id, .ids = (uint64_t *)dims,
                                  .ids_count = (uint32_t)ndim};
    pdcbb_obj_set_dims_rep_t p;
    void *keep;
    pdcbb_err_t e = client_op_obj_set_dims(pdcbb_meta_id_server(o->meta_id), &q, &p, &keep);
    if (e != PDCBB_OK) {
        if (e == PDCBB_ERR_INVAL)
            client_fail(e, "%s: object '%s' has %zu dimensions, not %d", fn, o->name,
                        o->prop.pub.ndim, ndim);
        return FAIL;
    }
    client_rpc_release(PDCBB_OP_OBJ_SET_DIMS, &p, keep);
    return obj_refresh(o, fn) == PDCBB_OK ? SUCCEED : FAIL;
}

perr_t PDCobj_set_dims(pdcid_t obj_id, int ndim, uint64_t *dims)
{
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_obj_get(obj_id, "PDCobj_set_dims");
    perr_t ret = o ? set_dims("PDCobj_set_dims", o, ndim, dims) : FAIL;
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCobj_get_dims(pdcid_t obj_id, int *ndim, uint64_t **dims)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_obj_get(obj_id, "PDCobj_get_dims");
    if (o == NULL)
        goto out;
    if (ndim == NULL || dims == NULL) {
        client_fail(PDCBB_ERR_INVAL, "PDCobj_get_dims: ndim or dims is NULL");
        goto out;
    }
    if (obj_refresh(o, "PDCobj_get_dims") != PDCBB_OK)
        goto out;
    uint64_t *copy = malloc((o->prop.pub.ndim + 1) * sizeof(uint64_t));
    if (copy == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "PDCobj_get_dims: out of memory");
        goto out;
    }
    if (o->prop.pub.ndim)
        memcpy(copy, o->prop.pub.dims, o->prop.pub.ndim * sizeof(uint64_t));
    *ndim = (int)o->prop.pub.ndim;
    *dims = copy;
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCprop_update(pdcid_t obj_id, pdcid_t prop_id)
{
    perr_t ret = FAIL;
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_obj_get(obj_id, "PDCprop_update");
    client_obj_prop_t *pr = o ? client_handle_get(prop_id, CLIENT_H_OBJ_PROP, &e) : NULL;
    if (o == NULL)
        goto out;
    if (pr == NULL) {
        client_fail(e, "PDCprop_update: %#llx is not an object property id",
                    (unsigned long long)prop_id);
        goto out;
    }
    /* What can change after creation: the dimensions (unlimited dimensions grow) and the
     * application buffer. */
    if (pr->pub.ndim && set_dims("PDCprop_update", o, (int)pr->pub.ndim, pr->pub.dims) != SUCCEED)
        goto out;
    if (pr->buf)
        o->prop.buf = pr->buf;
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCobj_del(pdcid_t obj_id)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_obj_get(obj_id, "PDCobj_del");
    if (o != NULL) {
        pdcbb_obj_del_req_t q = {.id = o->meta_id};
        pdcbb_obj_del_rep_t p;
        void *keep;
        pdcbb_err_t e = client_op_obj_del(pdcbb_meta_id_server(o->meta_id), &q, &p, &keep);
        if (e == PDCBB_OK) {
            client_rpc_release(PDCBB_OP_OBJ_DEL, &p, keep);
            ret = SUCCEED;
            o->deleted = 1;
            client_xfer_object_deleted(o->meta_id);
            /* Its region data, wherever placements put it, frees capacity everywhere. */
            for (unsigned s = 0; s < client_g.nservers; s++) {
                pdcbb_data_drop_req_t dq = {.id = o->meta_id};
                pdcbb_data_drop_rep_t dp;
                if (client_op_data_drop(s, &dq, &dp, &keep) != PDCBB_OK) {
                    client_fail(PDCbb_last_error(), "PDCobj_del: object '%s' is deleted, but "
                                "its data on daemon %u could not be removed: %s",
                                o->name, s, PDCbb_last_error_message());
                    ret = FAIL;
                    continue;
                }
                client_rpc_release(PDCBB_OP_DATA_DROP, &dp, keep);
            }
        } else if (e == PDCBB_ERR_NOT_FOUND) {
            client_fail(e, "PDCobj_del: object '%s' no longer exists", o->name);
        }
    }
    CLIENT_LEAVE();
    return ret;
}

/* ---------------------------------------------------------------- tags */

perr_t PDCobj_put_tag(pdcid_t obj_id, char *tag_name, void *tag_value, pdc_var_type_t value_type,
                      psize_t value_size)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_obj_get(obj_id, "PDCobj_put_tag");
    if (o && client_tag_put("PDCobj_put_tag", o->meta_id, "object", o->name, tag_name, tag_value,
                            value_type, value_size) == PDCBB_OK)
        ret = SUCCEED;
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCobj_get_tag(pdcid_t obj_id, char *tag_name, void **tag_value,
                      pdc_var_type_t *value_type, psize_t *value_size)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_obj_get(obj_id, "PDCobj_get_tag");
    if (o && client_tag_get("PDCobj_get_tag", o->meta_id, "object", o->name, tag_name, tag_value,
                            value_type, value_size) == PDCBB_OK)
        ret = SUCCEED;
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCobj_del_tag(pdcid_t obj_id, char *tag_name)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_obj_get(obj_id, "PDCobj_del_tag");
    if (o && client_tag_del("PDCobj_del_tag", o->meta_id, "object", o->name, tag_name) ==
                 PDCBB_OK)
        ret = SUCCEED;
    CLIENT_LEAVE();
    return ret;
}

/* PDC's oldest tag call: copies the value into the caller's buffer, which must be big enough
 * (PDC gives no size); use PDCobj_get_tag in new code. */
perr_t PDCtag_get(pdcid_t obj_id, char *tag_name, void *tag_value)
{
    perr_t ret = FAIL;
    void *value = NULL;
    psize_t size = 0;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_obj_get(obj_id, "PDCtag_get");
    if (o && tag_value == NULL)
        client_fail(PDCBB_ERR_INVAL, "PDCtag_get: tag_value is NULL");
    else if (o && client_tag_get("PDCtag_get", o->meta_id, "object", o->name, tag_name, &value,
                                 NULL, &size) == PDCBB_OK) {
        memcpy(tag_value, value, size);
        free(value);
        ret = SUCCEED;
    }
    CLIENT_LEAVE();
    return ret;
}

static perr_t query_ids(const char *fn, const char *tag_name, const void *value, long size,
                        int *n_res, uint64_t **ids)
{
    if (client_check_init() != PDCBB_OK)
        return FAIL;
    if (n_res == NULL || ids == NULL || value == NULL || size <= 0) {
        client_fail(PDCBB_ERR_INVAL, "%s: NULL argument or value size %ld", fn, size);
        return FAIL;
    }
    uint64_t *found = NULL;
    int n = 0;
    if (client_tag_query(fn, tag_name, value, (size_t)size, 1, PDCBB_META_KIND_OBJ, &found,
                         &n) != PDCBB_OK)
        return FAIL;
    if (n == 0) {
        free(found);
        found = NULL;
    }
    *n_res = n;
    *ids = found;
    return SUCCEED;
}

perr_t PDCobj_get_id(const char *tag_name, void *tag_value, int value_size, int *n_res,
                     uint64_t **pdc_ids)
{
    CLIENT_ENTER();
    client_clear_error();
    perr_t ret = query_ids("PDCobj_get_id", tag_name, tag_value, value_size, n_res, pdc_ids);
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCobj_get_name(const char *tag_name, void *tag_value, int value_size, int *n_res,
                       char **obj_names)
{
    perr_t ret = FAIL;
    uint64_t *ids = NULL;
    int n = 0;
    CLIENT_ENTER();
    client_clear_error();
    if (obj_names == NULL) {
        client_fail(PDCBB_ERR_INVAL, "PDCobj_get_name: obj_names is NULL");
        goto out;
    }
    if (query_ids("PDCobj_get_name", tag_name, tag_value, value_size, &n, &ids) != SUCCEED)
        goto out;
    char *names = NULL;
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        pdcbb_obj_info_req_t q = {.id = ids[i]};
        pdcbb_obj_info_rep_t p;
        void *keep;
        if (client_op_obj_info(pdcbb_meta_id_server(ids[i]), &q, &p, &keep) != PDCBB_OK) {
            free(names);
            goto out;
        }
        size_t l = strlen(p.name) + 1;
        char *grown = realloc(names, used + l);
        if (grown == NULL) {
            client_rpc_release(PDCBB_OP_OBJ_INFO, &p, keep);
            free(names);
            client_fail(PDCBB_ERR_NOMEM, "PDCobj_get_name: out of memory");
            goto out;
        }
        names = grown;
        memcpy(names + used, p.name, l);
        used += l;
        client_rpc_release(PDCBB_OP_OBJ_INFO, &p, keep);
    }
    *obj_names = names;
    if (n_res)
        *n_res = n;
    ret = SUCCEED;
out:
    free(ids);
    CLIENT_LEAVE();
    return ret;
}

perr_t PDC_Client_query_kvtag(const pdc_kvtag_t *kvtag, int *n_res, uint64_t **pdc_ids)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    uint64_t *ids = NULL;
    int n = 0;
    if (client_check_init() != PDCBB_OK)
        ;
    else if (kvtag == NULL || kvtag->name == NULL || n_res == NULL || pdc_ids == NULL)
        client_fail(PDCBB_ERR_INVAL,
                    "PDC_Client_query_kvtag: kvtag, its name, n_res or pdc_ids is NULL");
    else if (client_kvtag_search("PDC_Client_query_kvtag", kvtag, &ids, &n) == PDCBB_OK) {
        /* Names and string values are patterns (pdc_dart.c). */
        *n_res = n;
        *pdc_ids = ids;
        ret = SUCCEED;
    }
    CLIENT_LEAVE();
    return ret;
}

#ifdef ENABLE_MPI
pdcbb_err_t client_bcast_ids(MPI_Comm comm, const char *fn, int32_t status, int32_t n,
                             uint64_t *ids, int *n_res, uint64_t **out)
{
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Bcast(&status, 1, MPI_INT32_T, 0, comm);
    if (status != PDCBB_OK) {
        if (rank != 0) {
            CLIENT_ENTER();
            client_fail(status, "%s: rank 0 failed: %s", fn, pdcbb_strerror(status));
            CLIENT_LEAVE();
        }
        return status;
    }
    MPI_Bcast(&n, 1, MPI_INT32_T, 0, comm);
    if (rank != 0 && n > 0 && (ids = malloc((size_t)n * sizeof(uint64_t))) == NULL)
        status = PDCBB_ERR_NOMEM; /* still take part in the broadcast below */
    if (n > 0) {
        uint64_t *buf = ids ? ids : calloc((size_t)n, sizeof(uint64_t));
        MPI_Bcast(buf, n, MPI_UINT64_T, 0, comm);
        if (ids == NULL)
            free(buf);
    }
    if (status == PDCBB_OK && (n_res == NULL || out == NULL))
        status = PDCBB_ERR_INVAL;
    if (status != PDCBB_OK) {
        free(ids);
        return status;
    }
    *n_res = n;
    *out = n ? ids : NULL;
    if (n == 0)
        free(ids);
    return PDCBB_OK;
}

perr_t PDC_Client_query_kvtag_mpi(const pdc_kvtag_t *kvtag, int *n_res, uint64_t **pdc_ids,
                                  MPI_Comm comm)
{
    /* Every daemon answers for the whole job, so rank 0 asks and broadcasts. */
    int rank = 0, nres = 0;
    int32_t status = PDCBB_OK;
    uint64_t *ids = NULL;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        status = PDC_Client_query_kvtag(kvtag, &nres, &ids) == SUCCEED ? PDCBB_OK
                                                                       : PDCbb_last_error();
    return client_bcast_ids(comm, "PDC_Client_query_kvtag_mpi", status, nres, ids, n_res,
                            pdc_ids) == PDCBB_OK
               ? SUCCEED
               : FAIL;
}
#endif
