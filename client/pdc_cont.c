/*
 * pdc_cont.c - containers (PDCcont_*): create, open, close, info, persist, delete, iteration,
 * tags and explicit object-id lists.
 *
 * A container's metadata lives on the daemon hash(name) mod nservers; its meta id encodes that
 * daemon, so every later call goes straight there.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_tag.h"

void client_cont_free(client_cont_t *c)
{
    if (c == NULL)
        return;
    free(c->name);
    free(c);
}

static client_cont_t *cont_new(uint64_t meta_id, const char *name, pdc_lifetime_t lifetime)
{
    client_cont_t *c = calloc(1, sizeof(*c));
    if (c == NULL || (c->name = strdup(name)) == NULL) {
        free(c);
        return NULL;
    }
    c->meta_id = meta_id;
    c->lifetime = lifetime;
    c->info.name = c->name;
    c->info.meta_id = meta_id;
    return c;
}

static pdcid_t cont_register(client_cont_t *c, const char *fn)
{
    pdcid_t id = c ? client_handle_new(CLIENT_H_CONT, c) : 0;
    if (id == 0) {
        client_cont_free(c);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        return 0;
    }
    c->info.local_id = id;
    return id;
}

pdcid_t client_cont_adopt(uint64_t meta_id, const char *name, pdc_lifetime_t lifetime,
                          const char *fn)
{
    return cont_register(cont_new(meta_id, name, lifetime), fn);
}

static pdcbb_err_t check_cont_name(const char *fn, const char *name)
{
    return client_check_name(fn, "container", name);
}

/* The container behind a local id, or NULL with the thread's error naming fn. */
static client_cont_t *cont_get(pdcid_t id, const char *fn)
{
    pdcbb_err_t e;
    client_cont_t *c = client_handle_get(id, CLIENT_H_CONT, &e);
    if (c == NULL) {
        if (e == PDCBB_ERR_WRONG_TYPE)
            client_fail(e, "%s: id %#llx is a %s, not a container", fn, (unsigned long long)id,
                        client_hkind_name(client_handle_kind(id)));
        else
            client_fail(e, "%s: %#llx is not a live container id (closed or never opened)", fn,
                        (unsigned long long)id);
    }
    return c;
}

static pdcid_t cont_create(const char *fn, const char *cont_name, pdcid_t cont_prop_id,
                           int open_if_exists)
{
    pdcid_t id = 0;
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK || check_cont_name(fn, cont_name) != PDCBB_OK)
        goto out;
    client_cont_prop_t *prop = client_handle_get(cont_prop_id, CLIENT_H_CONT_PROP, &e);
    if (prop == NULL) {
        client_fail(e, "%s: %#llx is not a container property id (create one with "
                       "PDCprop_create(PDC_CONT_CREATE, pdc))",
                    fn, (unsigned long long)cont_prop_id);
        goto out;
    }
    pdcbb_cont_create_req_t q = {.name = cont_name, .lifetime = (uint32_t)prop->lifetime};
    pdcbb_cont_create_rep_t p;
    void *keep;
    unsigned home = client_home_of_name(cont_name);
    e = client_op_cont_create(home, &q, &p, &keep);
    uint64_t meta = 0;
    if (e == PDCBB_OK) {
        meta = p.id;
        client_rpc_release(PDCBB_OP_CONT_CREATE, &p, keep);
    } else if (e == PDCBB_ERR_EXISTS && open_if_exists) {
        pdcbb_cont_open_req_t oq = {.name = cont_name};
        pdcbb_cont_open_rep_t op;
        if ((e = client_op_cont_open(home, &oq, &op, &keep)) == PDCBB_OK) {
            meta = op.id;
            client_rpc_release(PDCBB_OP_CONT_OPEN, &op, keep);
        }
    }
    if (e != PDCBB_OK) {
        if (e == PDCBB_ERR_EXISTS)
            client_fail(e, "%s: a container named '%s' already exists", fn, cont_name);
        else if (e != PDCBB_ERR_UNREACHABLE && e != PDCBB_ERR_TIMEOUT)
            client_fail(e, "%s: container '%s': %s", fn, cont_name, PDCbb_last_error_message());
        goto out;
    }
    id = cont_register(cont_new(meta, cont_name, prop->lifetime), fn);
out:
    CLIENT_LEAVE();
    return id;
}

pdcid_t PDCcont_create(const char *cont_name, pdcid_t cont_create_prop)
{
    /* PDC programs call this on every rank with one name: an existing container is opened. */
    return cont_create("PDCcont_create", cont_name, cont_create_prop, 1);
}

/* Collective in PDC; here every caller gets the one container, whoever created it first. */
pdcid_t PDCcont_create_col(const char *cont_name, pdcid_t cont_prop_id)
{
    return cont_create("PDCcont_create_col", cont_name, cont_prop_id, 1);
}

static pdcid_t cont_open(const char *fn, const char *cont_name, pdcid_t pdc_id)
{
    pdcid_t id = 0;
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK || check_cont_name(fn, cont_name) != PDCBB_OK)
        goto out;
    if (client_handle_get(pdc_id, CLIENT_H_PDC, &e) == NULL) {
        client_fail(e, "%s: %#llx is not the id PDCinit returned", fn,
                    (unsigned long long)pdc_id);
        goto out;
    }
    unsigned home = client_home_of_name(cont_name);
    pdcbb_cont_open_req_t q = {.name = cont_name};
    pdcbb_cont_open_rep_t p;
    void *keep;
    if ((e = client_op_cont_open(home, &q, &p, &keep)) != PDCBB_OK) {
        if (e == PDCBB_ERR_NOT_FOUND)
            client_fail(e, "%s: no container named '%s'", fn, cont_name);
        goto out;
    }
    uint64_t meta = p.id;
    client_rpc_release(PDCBB_OP_CONT_OPEN, &p, keep);
    pdcbb_cont_info_req_t iq = {.id = meta};
    pdcbb_cont_info_rep_t ip;
    if ((e = client_op_cont_info(home, &iq, &ip, &keep)) != PDCBB_OK)
        goto out;
    pdc_lifetime_t lifetime = (pdc_lifetime_t)ip.lifetime;
    client_rpc_release(PDCBB_OP_CONT_INFO, &ip, keep);
    id = cont_register(cont_new(meta, cont_name, lifetime), fn);
out:
    CLIENT_LEAVE();
    return id;
}

pdcid_t PDCcont_open(const char *cont_name, pdcid_t pdc_id)
{
    return cont_open("PDCcont_open", cont_name, pdc_id);
}

pdcid_t PDCcont_open_col(const char *cont_name, pdcid_t pdc_id)
{
    return cont_open("PDCcont_open_col", cont_name, pdc_id);
}

pdcid_t PDCcont_get_id(const char *cont_name, pdcid_t pdc_id)
{
    return cont_open("PDCcont_get_id", cont_name, pdc_id);
}

perr_t PDCcont_close(pdcid_t cont_id)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (cont_get(cont_id, "PDCcont_close") != NULL) {
        client_cont_free(client_handle_remove(cont_id, CLIENT_H_CONT));
        ret = SUCCEED;
    }
    CLIENT_LEAVE();
    return ret;
}

/* ---------------------------------------------------------------- info by name */

typedef struct info_cache {
    struct info_cache *next;
    client_cont_t *cont;
} info_cache_t;
static info_cache_t *info_cache;

typedef struct name_search {
    const char *name;
    client_cont_t *found;
} name_search_t;

static void find_open_by_name(pdcid_t id, void *ptr, void *arg)
{
    name_search_t *ns = arg;
    client_cont_t *c = ptr;
    if (ns->found == NULL && strcmp(c->name, ns->name) == 0)
        ns->found = c;
    (void)id;
}

struct pdc_cont_info *PDCcont_get_info(const char *cont_name)
{
    struct pdc_cont_info *info = NULL;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK ||
        check_cont_name("PDCcont_get_info", cont_name) != PDCBB_OK)
        goto out;
    /* A container this process has open answers from memory. */
    name_search_t ns = {.name = cont_name, .found = NULL};
    client_handle_foreach(CLIENT_H_CONT, find_open_by_name, &ns);
    if (ns.found) {
        info = &ns.found->info;
        goto out;
    }
    for (info_cache_t *ic = info_cache; ic; ic = ic->next)
        if (strcmp(ic->cont->name, cont_name) == 0) {
            info = &ic->cont->info;
            goto out;
        }
    pdcbb_cont_open_req_t q = {.name = cont_name};
    pdcbb_cont_open_rep_t p;
    void *keep;
    pdcbb_err_t e = client_op_cont_open(client_home_of_name(cont_name), &q, &p, &keep);
    if (e != PDCBB_OK) {
        if (e == PDCBB_ERR_NOT_FOUND)
            client_fail(e, "PDCcont_get_info: no container named '%s'", cont_name);
        goto out;
    }
    info_cache_t *ic = calloc(1, sizeof(*ic));
    if (ic == NULL || (ic->cont = cont_new(p.id, cont_name, PDC_PERSIST)) == NULL) {
        free(ic);
        client_rpc_release(PDCBB_OP_CONT_OPEN, &p, keep);
        client_fail(PDCBB_ERR_NOMEM, "PDCcont_get_info: out of memory");
        goto out;
    }
    client_rpc_release(PDCBB_OP_CONT_OPEN, &p, keep);
    ic->next = info_cache;
    info_cache = ic;
    info = &ic->cont->info;
out:
    CLIENT_LEAVE();
    return info;
}

void client_info_cache_cleanup(void)
{
    while (info_cache) {
        info_cache_t *n = info_cache->next;
        client_cont_free(info_cache->cont);
        free(info_cache);
        info_cache = n;
    }
}

/* Ask the home daemon of open container cont_id (*cp, NULL when it is not one) for op:
 * CONT_PERSIST or CONT_DEL (an id, an empty reply). */
static pdcbb_err_t cont_id_op(pdcid_t cont_id, unsigned op, const char *fn, client_cont_t **cp)
{
    client_cont_t *c = *cp = cont_get(cont_id, fn);
    if (c == NULL)
        return PDCBB_ERR_BAD_ID;
    pdcbb_cont_del_req_t q = {.id = c->meta_id}; /* CONT_PERSIST has the same request */
    pdcbb_cont_del_rep_t p;
    void *keep;
    pdcbb_err_t e = client_rpc(pdcbb_meta_id_server(c->meta_id), op, &q, &p, &keep);
    if (e == PDCBB_OK)
        client_rpc_release(op, &p, keep);
    return e;
}

perr_t PDCcont_persist(pdcid_t cont_id)
{
    perr_t ret = FAIL;
    client_cont_t *c;
    CLIENT_ENTER();
    client_clear_error();
    if (cont_id_op(cont_id, PDCBB_OP_CONT_PERSIST, "PDCcont_persist", &c) == PDCBB_OK) {
        c->lifetime = PDC_PERSIST;
        ret = SUCCEED;
    }
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCcont_del(pdcid_t cont_id)
{
    perr_t ret = FAIL;
    client_cont_t *c;
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t e = cont_id_op(cont_id, PDCBB_OP_CONT_DEL, "PDCcont_del", &c);
    if (e == PDCBB_OK)
        ret = SUCCEED;
    else if (c != NULL && e == PDCBB_ERR_NOT_FOUND)
        client_fail(e, "PDCcont_del: container '%s' no longer exists", c->name);
    CLIENT_LEAVE();
    return ret;
}

/* ---------------------------------------------------------------- tags */

perr_t PDCcont_put_tag(pdcid_t cont_id, char *tag_name, void *tag_value,
                       pdc_var_type_t value_type, psize_t value_size)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_cont_t *c = cont_get(cont_id, "PDCcont_put_tag");
    if (c && client_tag_put("PDCcont_put_tag", c->meta_id, "container", c->name, tag_name,
                            tag_value, value_type, value_size) == PDCBB_OK)
        ret = SUCCEED;
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCcont_get_tag(pdcid_t cont_id, char *tag_name, void **tag_value,
                       pdc_var_type_t *value_type, psize_t *value_size)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_cont_t *c = cont_get(cont_id, "PDCcont_get_tag");
    if (c && client_tag_get("PDCcont_get_tag", c->meta_id, "container", c->name, tag_name,
                            tag_value, value_type, value_size) == PDCBB_OK)
        ret = SUCCEED;
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCcont_del_tag(pdcid_t cont_id, char *tag_name)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_cont_t *c = cont_get(cont_id, "PDCcont_del_tag");
    if (c && client_tag_del("PDCcont_del_tag", c->meta_id, "container", c->name, tag_name) ==
                 PDCBB_OK)
        ret = SUCCEED;
    CLIENT_LEAVE();
    return ret;
}

/* ---------------------------------------------------------------- object id lists */

/* Object ids given by applications may be local handles or meta ids (from get_objids). */
static pdcbb_err_t to_meta_ids(const char *fn, int nobj, const pdcid_t *obj_ids, uint64_t **out)
{
    if (nobj < 0 || (nobj > 0 && obj_ids == NULL))
        return client_fail(PDCBB_ERR_INVAL, "%s: bad object list (nobj %d)", fn, nobj);
    if ((size_t)nobj > PDCBB_PAYLOAD_MAX / 8 - 64)
        return client_fail(PDCBB_ERR_TOO_BIG, "%s: too many object ids (%d)", fn, nobj);
    uint64_t *m = malloc(((size_t)nobj + 1) * sizeof(uint64_t));
    if (m == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
    for (int i = 0; i < nobj; i++) {
        client_obj_t *o = client_handle_get(obj_ids[i], CLIENT_H_OBJ, NULL);
        if (o)
            m[i] = o->meta_id;
        else if (pdcbb_meta_id_kind(obj_ids[i]) == PDCBB_META_KIND_OBJ &&
                 pdcbb_meta_id_server(obj_ids[i]) < client_g.nservers)
            m[i] = obj_ids[i];
        else {
            free(m);
            return client_fail(PDCBB_ERR_BAD_ID, "%s: obj_ids[%d] = %#llx is not an object id",
                               fn, i, (unsigned long long)obj_ids[i]);
        }
    }
    *out = m;
    return PDCBB_OK;
}

static perr_t objids_change(const char *fn, unsigned op, pdcid_t cont_id, int nobj,
                            pdcid_t *obj_ids)
{
    perr_t ret = FAIL;
    uint64_t *m = NULL;
    CLIENT_ENTER();
    client_clear_error();
    client_cont_t *c = cont_get(cont_id, fn);
    if (c == NULL || to_meta_ids(fn, nobj, obj_ids, &m) != PDCBB_OK)
        goto out;
    pdcbb_cont_objids_put_req_t q = {.id = c->meta_id, .ids = m, .ids_count = (uint32_t)nobj};
    pdcbb_cont_objids_put_rep_t p;
    void *keep;
    if (client_rpc(pdcbb_meta_id_server(c->meta_id), op, &q, &p, &keep) == PDCBB_OK) {
        client_rpc_release(op, &p, keep);
        ret = SUCCEED;
    }
out:
    free(m);
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCcont_put_objids(pdcid_t cont_id, int nobj, pdcid_t *obj_ids)
{
    return objids_change("PDCcont_put_objids", PDCBB_OP_CONT_OBJIDS_PUT, cont_id, nobj, obj_ids);
}

perr_t PDCcont_del_objids(pdcid_t cont_id, int nobj, pdcid_t *obj_ids)
{
    return objids_change("PDCcont_del_objids", PDCBB_OP_CONT_OBJIDS_DEL, cont_id, nobj, obj_ids);
}

perr_t PDCcont_get_objids(pdcid_t cont_id, int *nobj, pdcid_t **obj_ids)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_cont_t *c = cont_get(cont_id, "PDCcont_get_objids");
    if (c == NULL)
        goto out;
    if (nobj == NULL || obj_ids == NULL) {
        client_fail(PDCBB_ERR_INVAL, "PDCcont_get_objids: nobj or obj_ids is NULL");
        goto out;
    }
    pdcbb_cont_objids_get_req_t q = {.id = c->meta_id};
    pdcbb_cont_objids_get_rep_t p;
    void *keep;
    if (client_op_cont_objids_get(pdcbb_meta_id_server(c->meta_id), &q, &p, &keep) != PDCBB_OK)
        goto out;
    pdcid_t *ids = malloc(((size_t)p.ids_count + 1) * sizeof(pdcid_t));
    if (ids == NULL) {
        client_rpc_release(PDCBB_OP_CONT_OBJIDS_GET, &p, keep);
        client_fail(PDCBB_ERR_NOMEM, "PDCcont_get_objids: out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < p.ids_count; i++)
        ids[i] = p.ids[i];
    *nobj = (int)p.ids_count;
    *obj_ids = ids;
    client_rpc_release(PDCBB_OP_CONT_OBJIDS_GET, &p, keep);
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}
