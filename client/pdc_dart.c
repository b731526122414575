/*
 * pdc_dart.c - metadata search: PDC_Client_query_kvtag (names and string values as patterns)
 * and PDC's DART index calls (insert, search, delete object references).
 *
 * A tag lives on its object's home daemon and a DART reference on the daemon that
 * pdcbb_dart_home names for its data, each in that daemon's LMDB index (bbd/bbd_tagidx.c). A
 * tag search asks this node's daemon, which asks the others down a tree of daemons and merges
 * their answers (TAG_SEARCH with tree); a DART search asks every daemon (DART_SEARCH) and
 * merges their sorted, distinct answers.
 * Patterns are checked here first (pdcbb_pattern.h), so a bad one fails without a message sent.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_tag.h"
#include "pdc_client_connect.h"
#include "pdcbb_pattern.h"

/* Send req (op TAG_SEARCH or DART_SEARCH) to every daemon, or to daemon only alone when
 * only < nservers (a TAG_SEARCH that reaches every daemon through the tree rooted there);
 * *ids malloc'ed, sorted, distinct. */
static pdcbb_err_t search_all(const char *fn, const char *what, unsigned op, const void *req,
                              unsigned only, uint64_t **ids, int *n)
{
    uint64_t *all = NULL;
    size_t total = 0;
    for (unsigned s = 0; s < client_g.nservers; s++) {
        if (only < client_g.nservers && s != only)
            continue;
        pdcbb_dart_search_rep_t p; /* TAG_SEARCH's reply has the same fields */
        void *keep;
        pdcbb_err_t rc = client_rpc(s, op, req, &p, &keep);
        if (rc != PDCBB_OK) {
            free(all);
            if (rc == PDCBB_ERR_UNREACHABLE || rc == PDCBB_ERR_TIMEOUT)
                return rc; /* the transport's message names the daemon */
            if (rc == PDCBB_ERR_UNSUPPORTED)
                return client_fail(rc, "%s: %s: not available here (a drained job keeps tags, "
                                       "not DART references)",
                                   fn, what);
            return client_fail(rc, "%s: %s: daemon %u: %s", fn, what, s, pdcbb_strerror(rc));
        }
        if (p.more) {
            client_rpc_release(op, &p, keep);
            free(all);
            return client_fail(PDCBB_ERR_TOO_BIG,
                               "%s: %s: daemon %u has more matches than one reply holds (%u); "
                               "use a more selective pattern",
                               fn, what, s, p.ids_count);
        }
        rc = client_ids_append(&all, &total, p.ids, p.ids_count, fn);
        client_rpc_release(op, &p, keep);
        if (rc != PDCBB_OK) {
            free(all);
            return rc;
        }
    }
    /* Daemons hold disjoint records, but a DART datum may be placed on one daemon only by
     * convention: sort and drop duplicates anyway. */
    size_t k = pdcbb_ids_sort_unique(all, total);
    if (k == 0) {
        free(all);
        all = NULL;
    }
    *ids = all;
    *n = (int)k;
    return PDCBB_OK;
}

static pdcbb_err_t check_pattern(const char *fn, const char *what, const char *s, size_t len,
                                 size_t max)
{
    pdcbb_pat_t p;
    if (s == NULL)
        return client_fail(PDCBB_ERR_INVAL, "%s: the %s is NULL", fn, what);
    if (len > max)
        return client_fail(PDCBB_ERR_TOO_BIG, "%s: the %s is %zu bytes, longer than %zu", fn,
                           what, len, max);
    if (pdcbb_pat_parse(s, len, &p) != PDCBB_OK)
        return client_fail(PDCBB_ERR_INVAL,
                           "%s: the %s '%.*s' is empty or only '*' (it would match everything)",
                           fn, what, (int)(len > 64 ? 64 : len), s);
    return PDCBB_OK;
}

/* ------------------------------------------------------------------ kvtag */

pdcbb_err_t client_kvtag_search(const char *fn, const pdc_kvtag_t *kvtag, uint64_t **ids, int *n)
{
    if (kvtag->name == NULL)
        return client_fail(PDCBB_ERR_INVAL, "%s: kvtag->name is NULL", fn);
    pdcbb_err_t rc = check_pattern(fn, "tag name pattern", kvtag->name, strlen(kvtag->name),
                                   PDCBB_NAME_MAX);
    if (rc != PDCBB_OK || (rc = client_check_name(fn, "tag", kvtag->name)) != PDCBB_OK)
        return rc;
    if (kvtag->value == NULL || kvtag->size == 0)
        return client_fail(PDCBB_ERR_INVAL, "%s: tag '%s': value is NULL or its size is 0", fn,
                           kvtag->name);
    if (kvtag->size > PDCBB_TAG_VALUE_MAX)
        return client_fail(PDCBB_ERR_TOO_BIG, "%s: tag '%s': value of %u bytes exceeds %u", fn,
                           kvtag->name, kvtag->size, PDCBB_TAG_VALUE_MAX);
    pdcbb_tag_search_req_t q = {.name = kvtag->name, .value_mode = PDCBB_TAGVAL_BYTES,
                                .value = kvtag->value, .value_len = kvtag->size,
                                .kind = PDCBB_META_KIND_OBJ};
    if (kvtag->type == PDCBB_TYPE_STRING) {
        /* A string value is a pattern over the text of string tag values: up to its NUL, and
         * without the double quotes of PDC's newer syntax ("\"abc*\""). */
        const char *v = kvtag->value;
        size_t len = strnlen(v, kvtag->size);
        if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
            v++;
            len -= 2;
        }
        if ((rc = check_pattern(fn, "tag value pattern", v, len, PDCBB_TAG_VALUE_MAX)) !=
            PDCBB_OK)
            return rc;
        q.value_mode = PDCBB_TAGVAL_PATTERN;
        q.value = v;
        q.value_len = (uint32_t)len;
    }
    /* One request, to this node's daemon: it asks the others down the tree of daemons rooted
     * at it (bbd/bbd_fanout.c) and answers with every match. */
    unsigned root = client_g.local_rank < client_g.nservers ? client_g.local_rank : 0;
    q.tree = root + 1;
    return search_all(fn, kvtag->name, PDCBB_OP_TAG_SEARCH, &q, root, ids, n);
}

/* ------------------------------------------------------------------ DART */

static pdcbb_err_t dart_check(const char *fn, dart_hash_algo_t hash_algo,
                              dart_object_ref_type_t ref_type)
{
    if (client_check_init() != PDCBB_OK)
        return PDCbb_last_error();
    if (hash_algo != DHT_FULL_HASH && hash_algo != DHT_INITIAL_HASH && hash_algo != DART_HASH)
        return client_fail(PDCBB_ERR_INVAL,
                           "%s: bad hash_algo %d (DHT_FULL_HASH, DHT_INITIAL_HASH or DART_HASH)",
                           fn, (int)hash_algo);
    if (ref_type != REF_PRIMARY_ID && ref_type != REF_SECONDARY_ID && ref_type != REF_SERVER_ID)
        return client_fail(PDCBB_ERR_INVAL,
                           "%s: bad ref_type %d (REF_PRIMARY_ID, REF_SECONDARY_ID or "
                           "REF_SERVER_ID)",
                           fn, (int)ref_type);
    return PDCBB_OK;
}

static pdcbb_err_t dart_text(const char *fn, const char *what, const char *s)
{
    if (s == NULL || s[0] == '\0')
        return client_fail(PDCBB_ERR_INVAL, "%s: the %s is NULL or empty", fn, what);
    size_t len = strlen(s);
    if (len > PDCBB_DART_TEXT_MAX)
        return client_fail(PDCBB_ERR_TOO_BIG, "%s: the %s is %zu bytes, longer than %d", fn, what,
                           len, PDCBB_DART_TEXT_MAX);
    return PDCBB_OK;
}

static perr_t dart_change(const char *fn, unsigned op, dart_hash_algo_t hash_algo, char *attr_key,
                          char *attr_val, dart_object_ref_type_t ref_type, uint64_t data)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (dart_check(fn, hash_algo, ref_type) != PDCBB_OK ||
        dart_text(fn, "key", attr_key) != PDCBB_OK || dart_text(fn, "value", attr_val) != PDCBB_OK)
        goto out;
    pdcbb_dart_insert_req_t q = {.ref_type = (uint32_t)ref_type, .key = attr_key,
                                 .value = attr_val, .data = data};
    pdcbb_dart_insert_rep_t p; /* DART_DELETE has the same fields */
    void *keep;
    unsigned home = pdcbb_dart_home(data, client_g.nservers);
    pdcbb_err_t rc = client_rpc(home, op, &q, &p, &keep);
    if (rc == PDCBB_OK) {
        client_rpc_release(op, &p, keep);
        ret = SUCCEED;
    } else if (rc == PDCBB_ERR_NOT_FOUND)
        client_fail(rc, "%s: no reference '%s=%s' of type %d to %#llx", fn, attr_key, attr_val,
                    (int)ref_type, (unsigned long long)data);
    else if (rc != PDCBB_ERR_UNREACHABLE && rc != PDCBB_ERR_TIMEOUT)
        client_fail(rc, "%s: reference '%s=%s' to %#llx (daemon %u): %s", fn, attr_key, attr_val,
                    (unsigned long long)data, home,
                    rc == PDCBB_ERR_READ_ONLY ? PDCbb_last_error_message() : pdcbb_strerror(rc));
out:
    CLIENT_LEAVE();
    return ret;
}

perr_t PDC_Client_insert_obj_ref_into_dart(dart_hash_algo_t hash_algo, char *attr_key,
                                           char *attr_val, dart_object_ref_type_t ref_type,
                                           uint64_t data)
{
    return dart_change("PDC_Client_insert_obj_ref_into_dart", PDCBB_OP_DART_INSERT, hash_algo,
                       attr_key, attr_val, ref_type, data);
}

perr_t PDC_Client_delete_obj_ref_from_dart(dart_hash_algo_t hash_algo, char *attr_key,
                                           char *attr_val, dart_object_ref_type_t ref_type,
                                           uint64_t data)
{
    return dart_change("PDC_Client_delete_obj_ref_from_dart", PDCBB_OP_DART_DELETE, hash_algo,
                       attr_key, attr_val, ref_type, data);
}

static pdcbb_err_t dart_search(const char *fn, dart_hash_algo_t hash_algo, char *query_string,
                               dart_object_ref_type_t ref_type, int *n_res, uint64_t **out)
{
    const char *k, *v;
    size_t kl, vl;
    pdcbb_err_t rc = dart_check(fn, hash_algo, ref_type);
    if (rc != PDCBB_OK)
        return rc;
    if (query_string == NULL || n_res == NULL || out == NULL)
        return client_fail(PDCBB_ERR_INVAL, "%s: query_string, n_res or out is NULL", fn);
    if (pdcbb_pat_split_query(query_string, &k, &kl, &v, &vl) != PDCBB_OK)
        return client_fail(PDCBB_ERR_INVAL, "%s: query '%.64s' is not KEY=VALUE", fn,
                           query_string);
    /* A pattern is a literal of at most PDCBB_DART_TEXT_MAX bytes and its two '*'. */
    if ((rc = check_pattern(fn, "key pattern", k, kl, PDCBB_DART_TEXT_MAX + 2)) != PDCBB_OK ||
        (rc = check_pattern(fn, "value pattern", v, vl, PDCBB_DART_TEXT_MAX + 2)) != PDCBB_OK)
        return rc;
    char key[PDCBB_DART_TEXT_MAX + 3], val[PDCBB_DART_TEXT_MAX + 3];
    memcpy(key, k, kl);
    key[kl] = '\0';
    memcpy(val, v, vl);
    val[vl] = '\0';
    pdcbb_dart_search_req_t q = {.ref_type = (uint32_t)ref_type, .key = key, .value = val};
    /* One request, to this node's daemon, which asks the others down the tree (as tags). A
     * drained job has no DART references: its one virtual daemon answers UNSUPPORTED. */
    unsigned root = client_g.local_rank < client_g.nservers ? client_g.local_rank : 0;
    q.tree = client_g.drained ? 0 : root + 1;
    return search_all(fn, query_string, PDCBB_OP_DART_SEARCH, &q, root, out, n_res);
}

perr_t PDC_Client_search_obj_ref_through_dart(dart_hash_algo_t hash_algo, char *query_string,
                                              dart_object_ref_type_t ref_type, int *n_res,
                                              uint64_t **out)
{
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = dart_search("PDC_Client_search_obj_ref_through_dart", hash_algo,
                                 query_string, ref_type, n_res, out);
    CLIENT_LEAVE();
    return rc == PDCBB_OK ? SUCCEED : FAIL;
}

#ifdef ENABLE_MPI
perr_t PDC_Client_search_obj_ref_through_dart_mpi(dart_hash_algo_t hash_algo, char *query_string,
                                                  dart_object_ref_type_t ref_type, int *n_res,
                                                  uint64_t **out, MPI_Comm comm)
{
    /* Every daemon answers for the whole job, so rank 0 asks and broadcasts. */
    int rank = 0, nres = 0;
    int32_t status = PDCBB_OK;
    uint64_t *ids = NULL;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        status = PDC_Client_search_obj_ref_through_dart(hash_algo, query_string, ref_type, &nres,
                                                        &ids) == SUCCEED
                     ? PDCBB_OK
                     : PDCbb_last_error();
    return client_bcast_ids(comm, "PDC_Client_search_obj_ref_through_dart_mpi", status, nres,
                            ids, n_res, out) == PDCBB_OK
               ? SUCCEED
               : FAIL;
}
#endif
