/*
 * pdc_prop.c - container and object creation properties (PDCprop_*).
 *
 * Properties live only in this process until an object or container is created with them.
 * An object property starts with the job's default placement (--pdc placement=...), PDC's
 * default consistency and no type or dimensions.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "pdcbb_name.h"

/* The object property behind id, or NULL with the thread's error set naming fn. */
static client_obj_prop_t *obj_prop_get(pdcid_t id, const char *fn)
{
    pdcbb_err_t e;
    client_obj_prop_t *p = client_handle_get(id, CLIENT_H_OBJ_PROP, &e);
    if (p == NULL)
        client_fail(e, "%s: %#llx is not a live object property id (%s)", fn,
                    (unsigned long long)id,
                    e == PDCBB_ERR_WRONG_TYPE ? client_hkind_name(client_handle_kind(id))
                                              : "unknown or closed");
    return p;
}

void client_obj_prop_free(client_obj_prop_t *p)
{
    if (p == NULL)
        return;
    free(p->pub.dims);
    free(p->app_name);
    free(p->data_loc);
    free(p->tags);
    memset(p, 0, sizeof(*p));
}

static int dup_str(char **dst, const char *src)
{
    *dst = NULL;
    if (src == NULL)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -1;
}

pdcbb_err_t client_obj_prop_copy(client_obj_prop_t *dst, const client_obj_prop_t *src)
{
    *dst = *src;
    dst->pub.dims = NULL;
    dst->app_name = dst->data_loc = dst->tags = NULL;
    if (src->pub.ndim) {
        dst->pub.dims = malloc(src->pub.ndim * sizeof(uint64_t));
        if (dst->pub.dims == NULL)
            return PDCBB_ERR_NOMEM;
        memcpy(dst->pub.dims, src->pub.dims, src->pub.ndim * sizeof(uint64_t));
    }
    if (dup_str(&dst->app_name, src->app_name) || dup_str(&dst->data_loc, src->data_loc) ||
        dup_str(&dst->tags, src->tags)) {
        client_obj_prop_free(dst);
        return PDCBB_ERR_NOMEM;
    }
    return PDCBB_OK;
}

pdcid_t PDCprop_create(pdc_prop_type_t type, pdcid_t pdc_id)
{
    pdcid_t id = 0;
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK)
        goto out;
    if (client_handle_get(pdc_id, CLIENT_H_PDC, &e) == NULL) {
        client_fail(e, "PDCprop_create: %#llx is not the id PDCinit returned",
                    (unsigned long long)pdc_id);
        goto out;
    }
    if (type == PDC_CONT_CREATE) {
        client_cont_prop_t *p = calloc(1, sizeof(*p));
        if (p == NULL) {
            client_fail(PDCBB_ERR_NOMEM, "PDCprop_create: out of memory");
            goto out;
        }
        p->lifetime = PDC_PERSIST;
        p->pdc_id = pdc_id;
        if ((id = client_handle_new(CLIENT_H_CONT_PROP, p)) == 0)
            free(p);
    } else if (type == PDC_OBJ_CREATE) {
        client_obj_prop_t *p = calloc(1, sizeof(*p));
        if (p == NULL) {
            client_fail(PDCBB_ERR_NOMEM, "PDCprop_create: out of memory");
            goto out;
        }
        p->pub.type = PDC_UNKNOWN;
        p->pub.region_partition = (pdc_region_partition_t)client_g.cfg.placement;
        p->pub.consistency = PDC_CONSISTENCY_DEFAULT;
        if ((id = client_handle_new(CLIENT_H_OBJ_PROP, p)) == 0)
            free(p);
        else
            p->pub.obj_prop_id = id;
    } else {
        client_fail(PDCBB_ERR_INVAL,
                    "PDCprop_create: bad property type %d (use PDC_CONT_CREATE or "
                    "PDC_OBJ_CREATE)",
                    (int)type);
        goto out;
    }
    if (id == 0 && PDCbb_last_error() == PDCBB_OK)
        client_fail(PDCBB_ERR_NOMEM, "PDCprop_create: out of memory");
out:
    CLIENT_LEAVE();
    return id;
}

perr_t PDCprop_close(pdcid_t id)
{
    perr_t ret = SUCCEED;
    CLIENT_ENTER();
    client_clear_error();
    switch (client_handle_kind(id)) {
    case CLIENT_H_OBJ_PROP: {
        client_obj_prop_t *p = client_handle_remove(id, CLIENT_H_OBJ_PROP);
        client_obj_prop_free(p);
        free(p);
        break;
    }
    case CLIENT_H_CONT_PROP: free(client_handle_remove(id, CLIENT_H_CONT_PROP)); break;
    default:
        client_fail(client_handle_kind(id) ? PDCBB_ERR_WRONG_TYPE : PDCBB_ERR_BAD_ID,
                    "PDCprop_close: %#llx is not a live property id", (unsigned long long)id);
        ret = FAIL;
    }
    CLIENT_LEAVE();
    return ret;
}

pdcid_t PDCprop_obj_dup(pdcid_t prop_id)
{
    pdcid_t id = 0;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_prop_t *src = obj_prop_get(prop_id, "PDCprop_obj_dup"), *dst = NULL;
    if (src == NULL)
        goto out;
    if ((dst = malloc(sizeof(*dst))) == NULL || client_obj_prop_copy(dst, src) != PDCBB_OK) {
        free(dst);
        client_fail(PDCBB_ERR_NOMEM, "PDCprop_obj_dup: out of memory");
        goto out;
    }
    if ((id = client_handle_new(CLIENT_H_OBJ_PROP, dst)) == 0) {
        client_obj_prop_free(dst);
        free(dst);
        client_fail(PDCBB_ERR_NOMEM, "PDCprop_obj_dup: out of memory");
        goto out;
    }
    dst->pub.obj_prop_id = id;
out:
    CLIENT_LEAVE();
    return id;
}

struct _pdc_cont_prop *PDCcont_prop_get_info(pdcid_t prop_id)
{
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    client_cont_prop_t *p = client_handle_get(prop_id, CLIENT_H_CONT_PROP, &e);
    if (p == NULL)
        client_fail(e, "PDCcont_prop_get_info: %#llx is not a live container property id",
                    (unsigned long long)prop_id);
    CLIENT_LEAVE();
    return p;
}

struct pdc_obj_prop *PDCobj_prop_get_info(pdcid_t prop_id)
{
    CLIENT_ENTER();
    client_clear_error();
    client_obj_prop_t *p = obj_prop_get(prop_id, "PDCobj_prop_get_info");
    CLIENT_LEAVE();
    return p ? &p->pub : NULL;
}

perr_t PDCprop_set_cont_lifetime(pdcid_t cont_create_prop, pdc_lifetime_t cont_lifetime)
{
    pdcbb_err_t e;
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_cont_prop_t *p = client_handle_get(cont_create_prop, CLIENT_H_CONT_PROP, &e);
    if (p == NULL)
        client_fail(e, "PDCprop_set_cont_lifetime: %#llx is not a live container property id",
                    (unsigned long long)cont_create_prop);
    else if (cont_lifetime != PDC_PERSIST && cont_lifetime != PDC_TRANSIENT)
        client_fail(PDCBB_ERR_INVAL, "PDCprop_set_cont_lifetime: bad lifetime %d",
                    (int)cont_lifetime);
    else {
        p->lifetime = cont_lifetime;
        ret = SUCCEED;
    }
    CLIENT_LEAVE();
    return ret;
}

/* Setters of object properties share this shape. */
#define OBJ_PROP_SETTER(fn, prop_id, body)                                                        \
    perr_t ret = FAIL;                                                                            \
    CLIENT_ENTER();                                                                               \
    client_clear_error();                                                                         \
    client_obj_prop_t *p = obj_prop_get(prop_id, fn);                                             \
    if (p != NULL) {                                                                              \
        body                                                                                      \
    }                                                                                             \
    CLIENT_LEAVE();                                                                               \
    return ret;

static perr_t set_str(client_obj_prop_t *p, char **field, const char *value, const char *fn)
{
    char *copy = NULL;
    if (value && strlen(value) > PDCBB_STR_MAX) {
        client_fail(PDCBB_ERR_TOO_BIG, "%s: value longer than %d characters", fn, PDCBB_STR_MAX);
        return FAIL;
    }
    char why[128];
    pdcbb_err_t rc = pdcbb_text_validate(fn + strlen("PDCprop_set_obj_"), value, why,
                                         sizeof(why));
    if (rc != PDCBB_OK) {
        client_fail(rc, "%s: %s", fn, why);
        return FAIL;
    }
    if (value && (copy = strdup(value)) == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        return FAIL;
    }
    free(*field);
    *field = copy;
    (void)p;
    return SUCCEED;
}

perr_t PDCprop_set_obj_user_id(pdcid_t obj_prop, uint32_t user_id){
    OBJ_PROP_SETTER("PDCprop_set_obj_user_id", obj_prop,
                    {
                        p->user_id = user_id;
                        ret = SUCCEED;
                    })}

perr_t PDCprop_set_obj_data_loc(pdcid_t obj_prop, char *app_name){
    OBJ_PROP_SETTER("PDCprop_set_obj_data_loc", obj_prop,
                    { ret = set_str(p, &p->data_loc, app_name, "PDCprop_set_obj_data_loc"); })}

perr_t PDCprop_set_obj_app_name(pdcid_t obj_prop, char *app_name){
    OBJ_PROP_SETTER("PDCprop_set_obj_app_name", obj_prop,
                    { ret = set_str(p, &p->app_name, app_name, "PDCprop_set_obj_app_name"); })}

perr_t PDCprop_set_obj_time_step(pdcid_t obj_prop, uint32_t time_step){
    OBJ_PROP_SETTER("PDCprop_set_obj_time_step", obj_prop,
                    {
                        p->time_step = time_step;
                        ret = SUCCEED;
                    })}

perr_t PDCprop_set_obj_tags(pdcid_t obj_prop, char *tags){
    OBJ_PROP_SETTER("PDCprop_set_obj_tags", obj_prop,
                    { ret = set_str(p, &p->tags, tags, "PDCprop_set_obj_tags"); })}

perr_t PDCprop_set_obj_dims(pdcid_t obj_prop, PDC_int_t ndim, uint64_t *dims){OBJ_PROP_SETTER(
    "PDCprop_set_obj_dims", obj_prop,
    {
        if (ndim < 1 || ndim > PDCBB_NDIM_MAX) {
            client_fail(PDCBB_ERR_INVAL, "PDCprop_set_obj_dims: ndim %d out of range 1..%d",
                        ndim, PDCBB_NDIM_MAX);
        } else if (dims == NULL) {
            client_fail(PDCBB_ERR_INVAL, "PDCprop_set_obj_dims: dims is NULL");
        } else {
            int bad = -1;
            for (int i = 0; i < ndim; i++)
                if (dims[i] == 0)
                    bad = i;
            uint64_t *copy = bad < 0 ? malloc((size_t)ndim * sizeof(uint64_t)) : NULL;
            if (bad >= 0) {
                client_fail(PDCBB_ERR_INVAL, "PDCprop_set_obj_dims: dims[%d] is 0", bad);
            } else if (copy == NULL) {
                client_fail(PDCBB_ERR_NOMEM, "PDCprop_set_obj_dims: out of memory");
            } else {
                memcpy(copy, dims, (size_t)ndim * sizeof(uint64_t));
                free(p->pub.dims);
                p->pub.dims = copy;
                p->pub.ndim = (size_t)ndim;
                ret = SUCCEED;
            }
        }
    })}

perr_t PDCprop_set_obj_type(pdcid_t obj_prop, pdc_var_type_t type){
    OBJ_PROP_SETTER("PDCprop_set_obj_type", obj_prop,
                    {
                        if ((int)type < 0 || (int)type >= PDC_TYPE_COUNT)
                            client_fail(PDCBB_ERR_INVAL,
                                        "PDCprop_set_obj_type: bad type %d (0..%d)", (int)type,
                                        PDC_TYPE_COUNT - 1);
                        else {
                            p->pub.type = type;
                            ret = SUCCEED;
                        }
                    })}

perr_t PDCprop_set_obj_transfer_region_type(pdcid_t obj_prop,
                                            pdc_region_partition_t region_partition){
    OBJ_PROP_SETTER("PDCprop_set_obj_transfer_region_type", obj_prop,
                    {
                        if ((int)region_partition < PDC_OBJ_STATIC ||
                            (int)region_partition > (int)PDCBB_REGION_STRIPED)
                            client_fail(PDCBB_ERR_INVAL,
                                        "PDCprop_set_obj_transfer_region_type: bad partition %d",
                                        (int)region_partition);
                        else {
                            p->pub.region_partition = region_partition;
                            ret = SUCCEED;
                        }
                    })}

perr_t PDCprop_set_obj_consistency_semantics(pdcid_t obj_prop, pdc_consistency_t consistency)
{
    OBJ_PROP_SETTER("PDCprop_set_obj_consistency_semantics", obj_prop, {
        if ((int)consistency < PDC_CONSISTENCY_DEFAULT ||
            (int)consistency > PDC_CONSISTENCY_EVENTUAL)
            client_fail(PDCBB_ERR_INVAL,
                        "PDCprop_set_obj_consistency_semantics: bad consistency %d",
                        (int)consistency);
        else {
            p->pub.consistency = consistency;
            ret = SUCCEED;
        }
    })
}
