/*
 * pdc_tag.c - key-value tags of containers and objects, and tag search (with the merging of
 * id lists from every daemon that pdc_dart.c shares, client_ids_append).
 *
 * A tag lives with its container or object on that one's home daemon (the id says which).
 * Values are typed: the type travels with the value and comes back from get; the size must be
 * a whole number of elements of the type (strings: any length, NUL included by convention).
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_tag.h"

static pdcbb_err_t check_tag_args(const char *fn, const char *tag_name)
{
    return client_check_name(fn, "tag", tag_name);
}

/* Add the names involved to a failure the daemon reported. */
static pdcbb_err_t tag_fail(pdcbb_err_t rc, const char *fn, const char *what, const char *owner,
                            const char *tag_name)
{
    if (rc == PDCBB_ERR_NOT_FOUND)
        return client_fail(rc, "%s: %s '%s' has no tag '%s'", fn, what, owner, tag_name);
    if (rc == PDCBB_ERR_UNREACHABLE || rc == PDCBB_ERR_TIMEOUT)
        return rc; /* the transport's message already names the daemon */
    return client_fail(rc, "%s: tag '%s' of %s '%s': %s", fn, tag_name, what, owner,
                       PDCbb_last_error_message());
}

pdcbb_err_t client_tag_put(const char *fn, uint64_t meta_id, const char *what, const char *owner,
                           const char *tag_name, const void *value, pdc_var_type_t type,
                           psize_t size)
{
    pdcbb_err_t rc = check_tag_args(fn, tag_name);
    if (rc != PDCBB_OK)
        return rc;
    size_t esize = pdcbb_type_size((int)type);
    if (esize == 0)
        return client_fail(PDCBB_ERR_INVAL, "%s: bad tag value type %d (use a pdc_var_type_t "
                                            "from PDC_INT to PDC_SIZE_T)",
                           fn, (int)type);
    if (value == NULL || size == 0)
        return client_fail(PDCBB_ERR_INVAL, "%s: tag '%s': value is NULL or its size is 0", fn,
                           tag_name);
    if (size > PDCBB_TAG_VALUE_MAX)
        return client_fail(PDCBB_ERR_TOO_BIG, "%s: tag '%s': value of %llu bytes exceeds %u",
                           fn, tag_name, (unsigned long long)size, PDCBB_TAG_VALUE_MAX);
    if (size % esize != 0)
        return client_fail(PDCBB_ERR_INVAL,
                           "%s: tag '%s': size %llu is not a multiple of the %zu-byte %s", fn,
                           tag_name, (unsigned long long)size, esize, pdcbb_type_name((int)type));
    pdcbb_tag_put_req_t q = {.id = meta_id, .name = tag_name, .type = (int32_t)type,
                             .value = value, .value_len = (uint32_t)size};
    pdcbb_tag_put_rep_t p;
    void *keep;
    rc = client_op_tag_put(pdcbb_meta_id_server(meta_id), &q, &p, &keep);
    if (rc != PDCBB_OK)
        return tag_fail(rc, fn, what, owner, tag_name);
    client_rpc_release(PDCBB_OP_TAG_PUT, &p, keep);
    return PDCBB_OK;
}

/* PDCBB_OK if the container or object meta_id still exists (one INFO request). */
static pdcbb_err_t owner_exists(uint64_t meta_id)
{
    void *keep;
    pdcbb_err_t rc;
    if (pdcbb_meta_id_kind(meta_id) == PDCBB_META_KIND_CONT) {
        pdcbb_cont_info_req_t q = {.id = meta_id};
        pdcbb_cont_info_rep_t p;
        if ((rc = client_op_cont_info(pdcbb_meta_id_server(meta_id), &q, &p, &keep)) == PDCBB_OK)
            client_rpc_release(PDCBB_OP_CONT_INFO, &p, keep);
    } else {
        pdcbb_obj_info_req_t q = {.id = meta_id};
        pdcbb_obj_info_rep_t p;
        if ((rc = client_op_obj_info(pdcbb_meta_id_server(meta_id), &q, &p, &keep)) == PDCBB_OK)
            client_rpc_release(PDCBB_OP_OBJ_INFO, &p, keep);
    }
    return rc;
}

pdcbb_err_t client_tag_get(const char *fn, uint64_t meta_id, const char *what, const char *owner,
                           const char *tag_name, void **value, pdc_var_type_t *type,
                           psize_t *size)
{
    pdcbb_err_t rc = check_tag_args(fn, tag_name);
    if (rc != PDCBB_OK)
        return rc;
    if (value == NULL)
        return client_fail(PDCBB_ERR_INVAL, "%s: tag_value is NULL", fn);
    pdcbb_tag_get_req_t q = {.id = meta_id, .name = tag_name};
    pdcbb_tag_get_rep_t p;
    void *keep;
    rc = client_op_tag_get(pdcbb_meta_id_server(meta_id), &q, &p, &keep);
    if (rc == PDCBB_ERR_NOT_FOUND && owner_exists(meta_id) == PDCBB_OK) {
        /* PDC's answer for a tag that does not exist (or was deleted): success with no value.
         * Programs check exactly that; the cause stays in PDCbb_last_error(_message). */
        tag_fail(rc, fn, what, owner, tag_name);
        *value = NULL;
        if (size)
            *size = 0;
        return PDCBB_OK;
    }
    if (rc != PDCBB_OK)
        return tag_fail(rc, fn, what, owner, tag_name);
    void *copy = malloc(p.value_len ? p.value_len : 1);
    if (copy == NULL) {
        client_rpc_release(PDCBB_OP_TAG_GET, &p, keep);
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
    }
    memcpy(copy, p.value, p.value_len);
    *value = copy;
    if (type)
        *type = (pdc_var_type_t)p.type;
    if (size)
        *size = p.value_len;
    client_rpc_release(PDCBB_OP_TAG_GET, &p, keep);
    return PDCBB_OK;
}

pdcbb_err_t client_tag_del(const char *fn, uint64_t meta_id, const char *what, const char *owner,
                           const char *tag_name)
{
    pdcbb_err_t rc = check_tag_args(fn, tag_name);
    if (rc != PDCBB_OK)
        return rc;
    pdcbb_tag_del_req_t q = {.id = meta_id, .name = tag_name};
    pdcbb_tag_del_rep_t p;
    void *keep;
    rc = client_op_tag_del(pdcbb_meta_id_server(meta_id), &q, &p, &keep);
    if (rc != PDCBB_OK)
        return tag_fail(rc, fn, what, owner, tag_name);
    client_rpc_release(PDCBB_OP_TAG_DEL, &p, keep);
    return PDCBB_OK;
}

pdcbb_err_t client_ids_append(uint64_t **all, size_t *total, const uint64_t *ids, uint32_t n,
                              const char *fn)
{
    uint64_t *grown = realloc(*all, (*total + n + 1) * sizeof(uint64_t));
    if (grown == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
    *all = grown;
    if (n)
        memcpy(grown + *total, ids, n * sizeof(uint64_t));
    *total += n;
    return PDCBB_OK;
}

pdcbb_err_t client_tag_query(const char *fn, const char *tag_name, const void *value,
                             size_t value_len, int match_value, unsigned kind, uint64_t **ids,
                             int *n)
{
    pdcbb_err_t rc = check_tag_args(fn, tag_name);
    if (rc != PDCBB_OK)
        return rc;
    if (match_value && (value == NULL || value_len == 0 || value_len > PDCBB_TAG_VALUE_MAX))
        return client_fail(PDCBB_ERR_INVAL, "%s: bad tag value or size %zu", fn, value_len);
    uint64_t *all = NULL;
    size_t total = 0;
    for (unsigned s = 0; s < client_g.nservers; s++) {
        pdcbb_tag_query_req_t q = {.name = tag_name, .match_value = (uint32_t)!!match_value,
                                   .value = match_value ? value : NULL,
                                   .value_len = match_value ? (uint32_t)value_len : 0,
                                   .kind = kind};
        pdcbb_tag_query_rep_t p;
        void *keep;
        if ((rc = client_op_tag_query(s, &q, &p, &keep)) != PDCBB_OK) {
            free(all);
            return rc;
        }
        rc = client_ids_append(&all, &total, p.ids, p.ids_count, fn);
        client_rpc_release(PDCBB_OP_TAG_QUERY, &p, keep);
        if (rc != PDCBB_OK) {
            free(all);
            return rc;
        }
    }
    *ids = all;
    *n = (int)total;
    return PDCBB_OK;
}
