/*
 * pdc_iter.c - iteration over the job's containers and over a container's objects.
 *
 * PDCcont_iter_start / PDCobj_iter_start take a snapshot of the ids from every daemon; the
 * returned handles point into that snapshot, and PDCcont_iter_get_info / PDCobj_iter_get_info
 * fetch (once) and keep the entry's metadata. Snapshots belong to the library and are freed
 * at PDCclose.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"

typedef struct client_iter {
    struct client_iter *next;
    unsigned kind; /* PDCBB_META_KIND_CONT or _OBJ */
    size_t n;
    uint64_t *ids;
    struct _pdc_id_info *entries;
    client_cont_t **conts; /* fetched lazily */
    client_obj_t **objs;
} client_iter_t;

static client_iter_t *iters;

void client_iter_cleanup(void)
{
    while (iters) {
        client_iter_t *it = iters;
        iters = it->next;
        for (size_t i = 0; i < it->n; i++) {
            if (it->conts)
                client_cont_free(it->conts[i]);
            if (it->objs)
                client_obj_free(it->objs[i]);
        }
        free(it->conts);
        free(it->objs);
        free(it->entries);
        free(it->ids);
        free(it);
    }
}

pdcbb_err_t client_list_ids(unsigned kind, uint64_t cont_meta, uint64_t **out, size_t *nout)
{
    uint64_t *all = NULL;
    size_t total = 0;
    for (unsigned s = 0; s < client_g.nservers; s++) {
        uint64_t after = 0;
        for (;;) {
            pdcbb_obj_list_rep_t p;
            void *keep;
            unsigned op = kind == PDCBB_META_KIND_CONT ? PDCBB_OP_CONT_LIST : PDCBB_OP_OBJ_LIST;
            pdcbb_err_t rc;
            if (kind == PDCBB_META_KIND_CONT) {
                pdcbb_cont_list_req_t q = {.after = after, .max = 4096};
                rc = client_rpc(s, op, &q, &p, &keep);
            } else {
                pdcbb_obj_list_req_t q = {.cont_id = cont_meta, .after = after, .max = 4096};
                rc = client_rpc(s, op, &q, &p, &keep);
            }
            if (rc != PDCBB_OK) {
                free(all);
                return rc;
            }
            uint64_t *grown = realloc(all, (total + p.ids_count + 1) * sizeof(uint64_t));
            if (grown == NULL) {
                client_rpc_release(op, &p, keep);
                free(all);
                return client_fail(PDCBB_ERR_NOMEM, "out of memory listing ids");
            }
            all = grown;
            if (p.ids_count)
                memcpy(all + total, p.ids, p.ids_count * sizeof(uint64_t));
            total += p.ids_count;
            int more = p.more && p.ids_count > 0;
            if (p.ids_count)
                after = p.ids[p.ids_count - 1];
            client_rpc_release(op, &p, keep);
            if (!more)
                break;
        }
    }
    *out = all;
    *nout = total;
    return PDCBB_OK;
}

static struct _pdc_id_info *iter_start(unsigned kind, uint64_t cont_meta, const char *fn)
{
    uint64_t *ids = NULL;
    size_t n = 0;
    if (client_list_ids(kind, cont_meta, &ids, &n) != PDCBB_OK)
        return NULL;
    if (n == 0) {
        free(ids);
        return NULL; /* an empty iteration: iter_null is true at once */
    }
    client_iter_t *it = calloc(1, sizeof(*it));
    if (it == NULL || (it->entries = calloc(n, sizeof(*it->entries))) == NULL ||
        (kind == PDCBB_META_KIND_CONT ? (it->conts = calloc(n, sizeof(*it->conts))) == NULL
                                      : (it->objs = calloc(n, sizeof(*it->objs))) == NULL)) {
        if (it) {
            free(it->entries);
            free(it->conts);
            free(it->objs);
        }
        free(it);
        free(ids);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        return NULL;
    }
    it->kind = kind;
    it->n = n;
    it->ids = ids;
    for (size_t i = 0; i < n; i++) {
        it->entries[i].iter = it;
        it->entries[i].index = i;
    }
    it->next = iters;
    iters = it;
    return &it->entries[0];
}

/* The entry after h, NULL at the end (under the library lock). */
static struct _pdc_id_info *iter_next(struct _pdc_id_info *h)
{
    struct _pdc_id_info *next = NULL;
    CLIENT_ENTER();
    if (h != NULL && h->iter != NULL && h->index + 1 < h->iter->n)
        next = &h->iter->entries[h->index + 1];
    CLIENT_LEAVE();
    return next;
}

/* Container entry i of it: its metadata fetched once (from its home daemon). */
static pdcbb_err_t fetch_cont(client_iter_t *it, size_t i, const char *fn)
{
    if (it->conts[i] == NULL) {
        pdcbb_cont_info_req_t q = {.id = it->ids[i]};
        pdcbb_cont_info_rep_t p;
        void *keep;
        pdcbb_err_t rc = client_op_cont_info(pdcbb_meta_id_server(it->ids[i]), &q, &p, &keep);
        if (rc != PDCBB_OK)
            return rc;
        client_cont_t *c = calloc(1, sizeof(*c));
        if (c == NULL || (c->name = strdup(p.name)) == NULL) {
            free(c);
            client_rpc_release(PDCBB_OP_CONT_INFO, &p, keep);
            return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        }
        c->meta_id = p.id;
        c->lifetime = (pdc_lifetime_t)p.lifetime;
        c->info.name = c->name;
        c->info.meta_id = p.id;
        client_rpc_release(PDCBB_OP_CONT_INFO, &p, keep);
        it->conts[i] = c;
    }
    return PDCBB_OK;
}

/* Object entry i of it: its metadata fetched once (from its home daemon). */
static pdcbb_err_t fetch_obj(client_iter_t *it, size_t i, const char *fn)
{
    if (it->objs[i] == NULL) {
        pdcbb_obj_info_req_t q = {.id = it->ids[i]};
        pdcbb_obj_info_rep_t p;
        void *keep;
        pdcbb_err_t rc = client_op_obj_info(pdcbb_meta_id_server(it->ids[i]), &q, &p, &keep);
        if (rc != PDCBB_OK)
            return rc;
        client_obj_t *o = malloc(sizeof(*o));
        if (o == NULL || client_obj_from_reply(o, &p) != PDCBB_OK) {
            free(o);
            client_rpc_release(PDCBB_OP_OBJ_INFO, &p, keep);
            return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        }
        client_rpc_release(PDCBB_OP_OBJ_INFO, &p, keep);
        it->objs[i] = o;
    }
    return PDCBB_OK;
}

/* PDCcont_iter_get_info / PDCobj_iter_get_info: the info of entry h of an iterator of kind
 * (a struct pdc_cont_info or pdc_obj_info kept by the snapshot), NULL on error. */
static void *iter_get_info(struct _pdc_id_info *h, unsigned kind, const char *fn)
{
    void *info = NULL;
    CLIENT_ENTER();
    client_clear_error();
    if (h == NULL || h->iter == NULL || h->iter->kind != kind)
        client_fail(PDCBB_ERR_INVAL, "%s: not %s iterator", fn,
                    kind == PDCBB_META_KIND_CONT ? "a container" : "an object");
    else if (kind == PDCBB_META_KIND_CONT && fetch_cont(h->iter, h->index, fn) == PDCBB_OK)
        info = &h->iter->conts[h->index]->info;
    else if (kind == PDCBB_META_KIND_OBJ && fetch_obj(h->iter, h->index, fn) == PDCBB_OK)
        info = &h->iter->objs[h->index]->info;
    CLIENT_LEAVE();
    return info;
}

cont_handle *PDCcont_iter_start(void)
{
    cont_handle *h = NULL;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() == PDCBB_OK)
        h = iter_start(PDCBB_META_KIND_CONT, 0, "PDCcont_iter_start");
    CLIENT_LEAVE();
    return h;
}

pbool_t PDCcont_iter_null(cont_handle *chandle)
{
    return chandle == NULL;
}

cont_handle *PDCcont_iter_next(cont_handle *chandle)
{
    return iter_next(chandle);
}

struct pdc_cont_info *PDCcont_iter_get_info(cont_handle *chandle)
{
    return iter_get_info(chandle, PDCBB_META_KIND_CONT, "PDCcont_iter_get_info");
}

obj_handle *PDCobj_iter_start(pdcid_t cont_id)
{
    obj_handle *h = NULL;
    CLIENT_ENTER();
    client_clear_error();
    client_cont_t *c =
        client_handle_live(cont_id, CLIENT_H_CONT, "container", "PDCobj_iter_start");
    if (c != NULL)
        h = iter_start(PDCBB_META_KIND_OBJ, c->meta_id, "PDCobj_iter_start");
    CLIENT_LEAVE();
    return h;
}

pbool_t PDCobj_iter_null(obj_handle *ohandle)
{
    return ohandle == NULL;
}

obj_handle *PDCobj_iter_next(obj_handle *ohandle, pdcid_t cont_id)
{
    (void)cont_id; /* the snapshot already belongs to one container */
    return iter_next(ohandle);
}

struct pdc_obj_info *PDCobj_iter_get_info(obj_handle *ohandle)
{
    return iter_get_info(ohandle, PDCBB_META_KIND_OBJ, "PDCobj_iter_get_info");
}

/* Whether object info p matches field = value (PDCobj_prop_query). */
static int prop_matches(const pdcbb_obj_info_rep_t *p, const client_cont_t *c,
                        enum pdc_prop_name_t field, const void *value)
{
    switch (field) {
    case PDC_OBJ_NAME: return strcmp(p->name, (const char *)value) == 0;
    case PDC_CONT_NAME: return strcmp(c->name, (const char *)value) == 0;
    case PDC_APP_NAME: return strcmp(p->app_name, (const char *)value) == 0;
    case PDC_USER_ID: return p->user_id == *(const uint32_t *)value;
    }
    return 0;
}

perr_t PDCobj_prop_query(pdcid_t cont_id, enum pdc_prop_name_t prop_name, void *prop_value,
                         pdcid_t **out_ids, size_t *n_out)
{
    static const char *const fn = "PDCobj_prop_query";
    perr_t ret = FAIL;
    uint64_t *ids = NULL;
    size_t n = 0, hits = 0;
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    client_cont_t *c = client_handle_live(cont_id, CLIENT_H_CONT, "container", fn);
    if (c == NULL)
        goto out;
    if (prop_value == NULL || out_ids == NULL || n_out == NULL) {
        client_fail(PDCBB_ERR_INVAL, "%s: prop_value, out_ids or n_out is NULL", fn);
        goto out;
    }
    if (prop_name != PDC_OBJ_NAME && prop_name != PDC_CONT_NAME && prop_name != PDC_APP_NAME &&
        prop_name != PDC_USER_ID) {
        client_fail(PDCBB_ERR_INVAL,
                    "%s: unknown field %d (PDC_OBJ_NAME, PDC_CONT_NAME, PDC_APP_NAME or "
                    "PDC_USER_ID)",
                    fn, (int)prop_name);
        goto out;
    }
    /* The container's objects from every daemon, then each one's metadata from its home. */
    if (client_list_ids(PDCBB_META_KIND_OBJ, c->meta_id, &ids, &n) != PDCBB_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        pdcbb_obj_info_req_t q = {.id = ids[i]};
        pdcbb_obj_info_rep_t p;
        void *keep;
        e = client_op_obj_info(pdcbb_meta_id_server(ids[i]), &q, &p, &keep);
        if (e == PDCBB_ERR_NOT_FOUND)
            continue; /* deleted since it was listed */
        if (e != PDCBB_OK)
            goto out;
        if (prop_matches(&p, c, prop_name, prop_value))
            ids[hits++] = ids[i]; /* in place: hits <= i */
        client_rpc_release(PDCBB_OP_OBJ_INFO, &p, keep);
    }
    *n_out = hits;
    if (hits == 0) {
        *out_ids = NULL;
        free(ids);
    } else {
        *out_ids = (pdcid_t *)ids; /* pdcid_t is uint64_t */
    }
    ids = NULL;
    ret = SUCCEED;
out:
    free(ids);
    CLIENT_LEAVE();
    return ret;
}
