/*
 * bbd_meta.c - handlers of the metadata ops: containers, objects, tags, listings.
 *
 * Each handler runs inside the transaction that bbd_dispatch opened (a write transaction for
 * ops that change the store) and fills the reply struct; pointers in the reply may point into
 * the store or the request and stay valid until the reply is encoded. Every id received is
 * checked for kind and home daemon before use: an id that is not ours is PDCBB_ERR_BAD_ID.
 */
#include <stdlib.h>
#include <string.h>

#include "bbd.h"
#include "pdcbb_log.h"
#include "pdcbb_name.h"

#define OPS (r->d->store_ops)

static pdcbb_val_t val_str(const char *s)
{
    return (pdcbb_val_t){s, strlen(s)};
}

pdcbb_err_t bbd_check_name(const char *kind, const char *name)
{
    char why[128];
    pdcbb_err_t rc = pdcbb_name_validate(kind, name, why, sizeof(why));
    if (rc == PDCBB_ERR_BAD_NAME)
        PDCBB_INFO("refused %s name '%s': %s", kind, pdcbb_esc(name), why);
    return rc;
}

/* An id of the given kind whose home is this daemon. */
static pdcbb_err_t check_id(bbd_req_t *r, uint64_t id, unsigned kind)
{
    if (id == 0 || pdcbb_meta_id_server(id) != r->d->rank)
        return PDCBB_ERR_BAD_ID;
    if (kind && pdcbb_meta_id_kind(id) != kind)
        return pdcbb_meta_id_kind(id) == PDCBB_META_KIND_CONT ||
                       pdcbb_meta_id_kind(id) == PDCBB_META_KIND_OBJ
                   ? PDCBB_ERR_WRONG_TYPE
                   : PDCBB_ERR_BAD_ID;
    return PDCBB_OK;
}

pdcbb_err_t bbd_meta_next_id(bbd_req_t *r, unsigned kind, uint64_t *id)
{
    static const char key[] = "next_seq";
    uint8_t buf[8];
    pdcbb_val_t v;
    uint64_t seq = 1;
    pdcbb_err_t rc = OPS->get(r->txn, PDCBB_T_STATE, val_str(key), &v);
    if (rc == PDCBB_OK && v.len == 8)
        seq = pdcbb_key_get_u64(v.data);
    else if (rc != PDCBB_ERR_NOT_FOUND && rc != PDCBB_OK)
        return rc;
    if (seq >= (1ull << 44))
        return PDCBB_ERR_NOSPC;
    pdcbb_key_u64(buf, seq + 1);
    if ((rc = OPS->put(r->txn, PDCBB_T_STATE, val_str(key), (pdcbb_val_t){buf, 8}, 0)) != PDCBB_OK)
        return rc;
    *id = pdcbb_meta_id_make(kind, r->d->rank, seq);
    return PDCBB_OK;
}

/* Encode a reply body as a store record (the same explicit encoding as the wire). */
static pdcbb_err_t record_put(bbd_req_t *r, pdcbb_table_t t, uint64_t id, unsigned op,
                              const void *body)
{
    size_t size;
    uint8_t key[8];
    pdcbb_err_t rc = pdcbb_body_size(op, 1, body, &size);
    if (rc != PDCBB_OK)
        return rc;
    uint8_t *buf = bbd_req_alloc(r, size ? size : 1);
    if (buf == NULL)
        return PDCBB_ERR_NOMEM;
    if ((rc = pdcbb_body_encode(op, 1, body, buf, size)) != PDCBB_OK)
        return rc;
    pdcbb_key_u64(key, id);
    return OPS->put(r->txn, t, (pdcbb_val_t){key, 8}, (pdcbb_val_t){buf, size}, 0);
}

/* Decode a record into body; U64S arrays go to scratch memory. */
static pdcbb_err_t record_get(bbd_req_t *r, pdcbb_table_t t, uint64_t id, unsigned op, void *body)
{
    uint8_t key[8];
    pdcbb_val_t v;
    pdcbb_key_u64(key, id);
    pdcbb_err_t rc = OPS->get(r->txn, t, (pdcbb_val_t){key, 8}, &v);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = pdcbb_body_decode(op, 1, v.data, v.len, body)) != PDCBB_OK) {
        PDCBB_ERROR("corrupt record of id %#llx in the store: %s", (unsigned long long)id,
                    pdcbb_strerror(rc));
        return PDCBB_ERR_STORE;
    }
    /* Move decoded arrays into scratch so callers never free. */
    if (op == PDCBB_OP_OBJ_INFO) {
        pdcbb_obj_info_rep_t *o = body;
        if (o->dims_count) {
            uint64_t *copy = bbd_req_alloc(r, 8 * (size_t)o->dims_count);
            if (copy == NULL) {
                pdcbb_body_free(op, 1, body);
                return PDCBB_ERR_NOMEM;
            }
            memcpy(copy, o->dims, 8 * (size_t)o->dims_count);
            free(o->dims);
            o->dims = copy;
        }
    }
    return PDCBB_OK;
}

static pdcbb_err_t lookup_name(bbd_req_t *r, pdcbb_table_t t, const char *name, uint64_t *id)
{
    pdcbb_val_t v;
    pdcbb_err_t rc = OPS->get(r->txn, t, val_str(name), &v);
    if (rc == PDCBB_OK) {
        if (v.len != 8)
            return PDCBB_ERR_STORE;
        *id = pdcbb_key_get_u64(v.data);
    }
    return rc;
}

static pdcbb_err_t put_name(bbd_req_t *r, pdcbb_table_t t, const char *name, uint64_t id)
{
    uint8_t buf[8];
    pdcbb_key_u64(buf, id);
    return OPS->put(r->txn, t, val_str(name), (pdcbb_val_t){buf, 8}, PDCBB_PUT_NO_OVERWRITE);
}

/* Delete every key of table t that starts with the 8-byte prefix of id. */
static pdcbb_err_t delete_prefix(bbd_req_t *r, pdcbb_table_t t, uint64_t id)
{
    uint8_t prefix[8];
    pdcbb_key_u64(prefix, id);
    for (;;) {
        pdcbb_cursor_t *c;
        pdcbb_val_t k, v;
        pdcbb_err_t rc = OPS->cursor_open(r->txn, t, &c);
        if (rc != PDCBB_OK)
            return rc;
        rc = OPS->cursor_seek(c, (pdcbb_val_t){prefix, 8}, &k, &v);
        int match = rc == PDCBB_OK && k.len >= 8 && memcmp(k.data, prefix, 8) == 0;
        uint8_t *kcopy = NULL;
        size_t klen = k.len;
        if (match) {
            kcopy = malloc(klen);
            if (kcopy)
                memcpy(kcopy, k.data, klen);
        }
        OPS->cursor_close(c);
        if (rc == PDCBB_ERR_NOT_FOUND || (rc == PDCBB_OK && !match))
            return PDCBB_OK;
        if (rc != PDCBB_OK)
            return rc;
        if (kcopy == NULL)
            return PDCBB_ERR_NOMEM;
        rc = OPS->del(r->txn, t, (pdcbb_val_t){kcopy, klen});
        free(kcopy);
        if (rc != PDCBB_OK)
            return rc;
    }
}

/*
 * Delete a named record: its name entry, its record and its tags. name points into the store,
 * so it is copied before anything is deleted.
 */
static pdcbb_err_t delete_named(bbd_req_t *r, pdcbb_table_t names, pdcbb_table_t records,
                                uint64_t id, const char *stored_name)
{
    uint8_t key[8];
    pdcbb_err_t rc;
    char *name = bbd_req_alloc(r, strlen(stored_name) + 1);
    if (name == NULL)
        return PDCBB_ERR_NOMEM;
    strcpy(name, stored_name);
    pdcbb_key_u64(key, id);
    if ((rc = OPS->del(r->txn, names, val_str(name))) != PDCBB_OK ||
        (rc = OPS->del(r->txn, records, (pdcbb_val_t){key, 8})) != PDCBB_OK ||
        (rc = bbd_tagidx_forget(r, id)) != PDCBB_OK ||
        (rc = delete_prefix(r, PDCBB_T_TAG, id)) != PDCBB_OK)
        return rc;
    PDCBB_DEBUG("'%s' (%#llx) deleted", name, (unsigned long long)id);
    return PDCBB_OK;
}

/* End of a cursor walk that collected n ids: closes c; the walk's error (rc other than OK or
 * NOT_FOUND), else PDCBB_OK with the ids in *out, *count. */
static pdcbb_err_t ids_walk_end(bbd_req_t *r, pdcbb_cursor_t *c, pdcbb_err_t rc, uint64_t *ids,
                                uint32_t n, uint64_t **out, uint32_t *count)
{
    OPS->cursor_close(c);
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND)
        return rc;
    *out = ids;
    *count = n;
    return PDCBB_OK;
}

/* Collect up to max ids (8-byte big-endian keys or key prefixes) after 'after' into p. */
typedef int (*id_filter_fn)(bbd_req_t *r, uint64_t id, pdcbb_val_t v, const void *arg);

static pdcbb_err_t list_ids(bbd_req_t *r, pdcbb_table_t t, uint64_t after, uint32_t max,
                            id_filter_fn filter, const void *arg, uint64_t **ids, uint32_t *count,
                            uint32_t *more)
{
    uint8_t start[8];
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    uint32_t cap = max == 0 || max > 65536 ? 65536 : max, n = 0;
    uint64_t *out = bbd_req_alloc(r, 8 * (size_t)cap);
    if (out == NULL)
        return PDCBB_ERR_NOMEM;
    *more = 0;
    pdcbb_err_t rc = OPS->cursor_open(r->txn, t, &c);
    if (rc != PDCBB_OK)
        return rc;
    pdcbb_key_u64(start, after + 1);
    rc = after == UINT64_MAX ? PDCBB_ERR_NOT_FOUND
                             : OPS->cursor_seek(c, (pdcbb_val_t){start, 8}, &k, &v);
    while (rc == PDCBB_OK) {
        if (k.len < 8) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        uint64_t id = pdcbb_key_get_u64(k.data);
        if (filter == NULL || filter(r, id, v, arg)) {
            if (n == cap) {
                *more = 1;
                break;
            }
            out[n++] = id;
        }
        rc = OPS->cursor_next(c, &k, &v);
    }
    return ids_walk_end(r, c, rc, out, n, ids, count);
}

/* ---------------------------------------------------------------- session */

pdcbb_err_t bbd_op_hello(bbd_req_t *r, const pdcbb_hello_req_t *q, pdcbb_hello_rep_t *p)
{
    if (q->job_id != 0 && q->job_id != r->d->job_id) {
        PDCBB_WARN("client pid %u on %s expected job %llu, this daemon serves job %llu",
                   q->client_pid, q->client_node, (unsigned long long)q->job_id,
                   (unsigned long long)r->d->job_id);
        return PDCBB_ERR_AUTH;
    }
    bbd_conn_t *c = r->conn;
    if (q->nonce_len != PDCBB_AUTH_NONCE_LEN && (c != NULL || q->nonce_len != 0)) {
        /* A UCX client must start the handshake; a shared-memory one proved the token when
         * its channel was set up and may leave the nonce out. */
        PDCBB_WARN("refused HELLO from pid %u on %s: a %u-byte nonce (expected %d)", q->client_pid,
                   q->client_node, q->nonce_len, PDCBB_AUTH_NONCE_LEN);
        return PDCBB_ERR_PROTO;
    }
    p->rank = r->d->rank;
    p->nservers = r->d->nservers;
    p->job_id = r->d->job_id;
    p->node = r->d->node;
    if (q->nonce_len == PDCBB_AUTH_NONCE_LEN) {
        uint8_t *out = bbd_req_alloc(r, PDCBB_AUTH_NONCE_LEN + PDCBB_AUTH_PROOF_LEN);
        if (out == NULL)
            return PDCBB_ERR_NOMEM;
        pdcbb_err_t rc = pdcbb_auth_nonce(out);
        if (rc != PDCBB_OK) {
            PDCBB_ERROR("cannot make a nonce: the kernel's random source failed");
            return rc;
        }
        pdcbb_auth_daemon_proof(r->d->token, q->nonce, out, out + PDCBB_AUTH_NONCE_LEN);
        if (c != NULL) {
            /* A new HELLO starts a new handshake; an authenticated connection stays so. */
            memcpy(c->client_nonce, q->nonce, PDCBB_AUTH_NONCE_LEN);
            memcpy(c->daemon_nonce, out, PDCBB_AUTH_NONCE_LEN);
            c->have_nonces = 1;
        }
        p->nonce = out;
        p->nonce_len = PDCBB_AUTH_NONCE_LEN;
        p->proof = out + PDCBB_AUTH_NONCE_LEN;
        p->proof_len = PDCBB_AUTH_PROOF_LEN;
    }
    PDCBB_DEBUG("hello from pid %u on %s", q->client_pid, q->client_node);
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_auth(bbd_req_t *r, const pdcbb_auth_req_t *q, pdcbb_auth_rep_t *p)
{
    bbd_conn_t *c = r->conn;
    (void)p;
    if (c == NULL)
        return PDCBB_ERR_UNSUPPORTED; /* a shared-memory channel proved the token already */
    uint8_t expected[PDCBB_AUTH_PROOF_LEN];
    int ok = 0;
    if (c->have_nonces) {
        pdcbb_auth_client_proof(r->d->token, c->client_nonce, c->daemon_nonce, expected);
        ok = pdcbb_auth_proof_ok(expected, q->proof, q->proof_len);
    }
    /* One proof per HELLO: a wrong one needs a new HELLO (new nonces) to try again. */
    c->have_nonces = 0;
    if (!ok) {
        r->d->stats.auth_failures++;
        PDCBB_WARN("refused AUTH on connection %llu: wrong proof of the job token, or no HELLO "
                   "before it (%llu refused so far)",
                   (unsigned long long)c->id, (unsigned long long)r->d->stats.auth_failures);
        return PDCBB_ERR_AUTH;
    }
    bbd_conn_authenticated(r->d, c);
    PDCBB_DEBUG("connection %llu proved the job token", (unsigned long long)c->id);
    return PDCBB_OK;
}

pdcbb_err_t bbd_meta_counts(bbd_req_t *r, uint64_t *conts, uint64_t *objs)
{
    pdcbb_err_t rc = OPS->count(r->txn, PDCBB_T_CONT, conts);
    return rc == PDCBB_OK ? OPS->count(r->txn, PDCBB_T_OBJ, objs) : rc;
}

pdcbb_err_t bbd_op_stats(bbd_req_t *r, const pdcbb_stats_req_t *q, pdcbb_stats_rep_t *p)
{
    p->rank = r->d->rank;
    p->requests = r->d->stats.requests;
    p->auth_failures = r->d->stats.auth_failures;
    p->proto_errors = r->d->stats.proto_errors;
    p->connections = r->d->stats.connections;
    p->shm_requests = r->d->stats.shm_requests;
    p->shm_channels = r->d->stats.shm_channels;
    p->shm_channels_open = r->d->stats.shm_channels_open;
    pdcbb_err_t rc = bbd_stats_fill(r, p);
    return rc == PDCBB_OK ? bbd_meta_counts(r, &p->containers, &p->objects) : rc;
}

/* ---------------------------------------------------------------- containers */

pdcbb_err_t bbd_op_cont_create(bbd_req_t *r, const pdcbb_cont_create_req_t *q,
                               pdcbb_cont_create_rep_t *p)
{
    pdcbb_err_t rc;
    uint64_t id;
    if ((rc = bbd_check_name("container", q->name)) != PDCBB_OK)
        return rc;
    if (pdcbb_home_server(q->name, r->d->nservers) != r->d->rank)
        return PDCBB_ERR_BAD_ID;
    if (q->lifetime > 1)
        return PDCBB_ERR_INVAL;
    /* A name taken: put_name says EXISTS, and the transaction (the id taken) is rolled back. */
    if ((rc = bbd_meta_next_id(r, PDCBB_META_KIND_CONT, &id)) != PDCBB_OK)
        return rc;
    if ((rc = put_name(r, PDCBB_T_CONT_NAME, q->name, id)) != PDCBB_OK)
        return rc;
    pdcbb_cont_info_rep_t rec = {.id = id, .name = q->name, .lifetime = q->lifetime};
    if ((rc = record_put(r, PDCBB_T_CONT, id, PDCBB_OP_CONT_INFO, &rec)) != PDCBB_OK)
        return rc;
    p->id = id;
    PDCBB_DEBUG("container '%s' created, id %#llx", q->name, (unsigned long long)id);
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_cont_open(bbd_req_t *r, const pdcbb_cont_open_req_t *q,
                             pdcbb_cont_open_rep_t *p)
{
    pdcbb_err_t rc = bbd_check_name("container", q->name);
    return rc != PDCBB_OK ? rc : lookup_name(r, PDCBB_T_CONT_NAME, q->name, &p->id);
}

pdcbb_err_t bbd_op_cont_info(bbd_req_t *r, const pdcbb_cont_info_req_t *q,
                             pdcbb_cont_info_rep_t *p)
{
    pdcbb_err_t rc = check_id(r, q->id, PDCBB_META_KIND_CONT);
    return rc != PDCBB_OK ? rc : record_get(r, PDCBB_T_CONT, q->id, PDCBB_OP_CONT_INFO, p);
}

pdcbb_err_t bbd_op_cont_persist(bbd_req_t *r, const pdcbb_cont_persist_req_t *q,
                                pdcbb_cont_persist_rep_t *p)
{
    pdcbb_cont_info_rep_t rec;
    pdcbb_err_t rc = check_id(r, q->id, PDCBB_META_KIND_CONT);
    if (rc == PDCBB_OK)
        rc = record_get(r, PDCBB_T_CONT, q->id, PDCBB_OP_CONT_INFO, &rec);
    if (rc != PDCBB_OK)
        return rc;
    rec.lifetime = 0; /* PDC_PERSIST */
    return record_put(r, PDCBB_T_CONT, q->id, PDCBB_OP_CONT_INFO, &rec);
}

pdcbb_err_t bbd_op_cont_del(bbd_req_t *r, const pdcbb_cont_del_req_t *q, pdcbb_cont_del_rep_t *p)
{
    pdcbb_cont_info_rep_t rec;
    pdcbb_err_t rc = check_id(r, q->id, PDCBB_META_KIND_CONT);
    if (rc == PDCBB_OK)
        rc = record_get(r, PDCBB_T_CONT, q->id, PDCBB_OP_CONT_INFO, &rec);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = delete_named(r, PDCBB_T_CONT_NAME, PDCBB_T_CONT, q->id, rec.name)) != PDCBB_OK)
        return rc;
    return delete_prefix(r, PDCBB_T_OBJIDS, q->id);
}

pdcbb_err_t bbd_op_cont_list(bbd_req_t *r, const pdcbb_cont_list_req_t *q,
                             pdcbb_cont_list_rep_t *p)
{
    return list_ids(r, PDCBB_T_CONT, q->after, q->max, NULL, NULL, &p->ids, &p->ids_count,
                    &p->more);
}

static pdcbb_err_t objids_change(bbd_req_t *r, uint64_t cont, const uint64_t *ids, uint32_t n,
                                 int add)
{
    uint8_t key[16];
    pdcbb_val_t v;
    pdcbb_err_t rc = check_id(r, cont, PDCBB_META_KIND_CONT);
    pdcbb_key_u64(key, cont);
    if (rc == PDCBB_OK)
        rc = OPS->get(r->txn, PDCBB_T_CONT, (pdcbb_val_t){key, 8}, &v);
    if (rc != PDCBB_OK)
        return rc;
    for (uint32_t i = 0; i < n; i++) {
        if (pdcbb_meta_id_kind(ids[i]) != PDCBB_META_KIND_OBJ)
            return PDCBB_ERR_WRONG_TYPE;
        pdcbb_key_u64(key + 8, ids[i]);
        if (add)
            rc = OPS->put(r->txn, PDCBB_T_OBJIDS, (pdcbb_val_t){key, 16}, (pdcbb_val_t){"", 0}, 0);
        else
            rc = OPS->del(r->txn, PDCBB_T_OBJIDS, (pdcbb_val_t){key, 16});
        if (rc != PDCBB_OK)
            return rc;
    }
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_cont_objids_put(bbd_req_t *r, const pdcbb_cont_objids_put_req_t *q,
                                   pdcbb_cont_objids_put_rep_t *p)
{
    return objids_change(r, q->id, q->ids, q->ids_count, 1);
}

pdcbb_err_t bbd_op_cont_objids_del(bbd_req_t *r, const pdcbb_cont_objids_del_req_t *q,
                                   pdcbb_cont_objids_del_rep_t *p)
{
    return objids_change(r, q->id, q->ids, q->ids_count, 0);
}

pdcbb_err_t bbd_op_cont_objids_get(bbd_req_t *r, const pdcbb_cont_objids_get_req_t *q,
                                   pdcbb_cont_objids_get_rep_t *p)
{
    uint8_t key[8];
    pdcbb_val_t k, v;
    pdcbb_cursor_t *c;
    pdcbb_err_t rc = check_id(r, q->id, PDCBB_META_KIND_CONT);
    pdcbb_key_u64(key, q->id);
    if (rc == PDCBB_OK)
        rc = OPS->get(r->txn, PDCBB_T_CONT, (pdcbb_val_t){key, 8}, &v);
    if (rc != PDCBB_OK || (rc = OPS->cursor_open(r->txn, PDCBB_T_OBJIDS, &c)) != PDCBB_OK)
        return rc;
    uint32_t n = 0;
    size_t cap = 0;
    uint64_t *ids = NULL;
    rc = OPS->cursor_seek(c, (pdcbb_val_t){key, 8}, &k, &v);
    while (rc == PDCBB_OK && k.len == 16 && memcmp(k.data, key, 8) == 0) {
        if ((ids = bbd_req_grow(r, ids, n, 1, &cap, 8, 64)) == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        ids[n++] = pdcbb_key_get_u64((const uint8_t *)k.data + 8);
        if (n >= PDCBB_PAYLOAD_MAX / 8 - 16) {
            p->more = 1;
            break;
        }
        rc = OPS->cursor_next(c, &k, &v);
    }
    return ids_walk_end(r, c, rc, ids, n, &p->ids, &p->ids_count);
}

/* ---------------------------------------------------------------- objects */

static pdcbb_err_t check_obj_props(const pdcbb_obj_create_req_t *q)
{
    if (q->type < -1 || q->type >= PDCBB_TYPE_COUNT)
        return PDCBB_ERR_INVAL;
    if (q->partition > 4 /* PDCBB_REGION_STRIPED */ || q->consistency > 4)
        return PDCBB_ERR_INVAL;
    if (q->dims_count > PDCBB_NDIM_MAX)
        return PDCBB_ERR_INVAL;
    for (uint32_t i = 0; i < q->dims_count; i++)
        if (q->dims[i] == 0)
            return PDCBB_ERR_INVAL;
    /* free text is drained too: it must be UTF-8 (pdcbb_text_validate) */
    if (pdcbb_text_validate("app_name", q->app_name, NULL, 0) != PDCBB_OK ||
        pdcbb_text_validate("data_loc", q->data_loc, NULL, 0) != PDCBB_OK ||
        pdcbb_text_validate("tags", q->tags, NULL, 0) != PDCBB_OK)
        return PDCBB_ERR_BAD_NAME;
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_obj_create(bbd_req_t *r, const pdcbb_obj_create_req_t *q,
                              pdcbb_obj_create_rep_t *p)
{
    pdcbb_err_t rc;
    uint64_t id;
    if ((rc = bbd_check_name("object", q->name)) != PDCBB_OK ||
        (rc = check_obj_props(q)) != PDCBB_OK)
        return rc;
    if (pdcbb_home_server(q->name, r->d->nservers) != r->d->rank)
        return PDCBB_ERR_BAD_ID;
    if (q->cont_id == 0 || pdcbb_meta_id_kind(q->cont_id) != PDCBB_META_KIND_CONT)
        return PDCBB_ERR_WRONG_TYPE;
    /* A name taken: put_name says EXISTS, and the transaction (the id taken) is rolled back. */
    if ((rc = bbd_meta_next_id(r, PDCBB_META_KIND_OBJ, &id)) != PDCBB_OK ||
        (rc = put_name(r, PDCBB_T_OBJ_NAME, q->name, id)) != PDCBB_OK)
        return rc;
    p->id = id;
    p->cont_id = q->cont_id;
    p->name = q->name;
    p->type = q->type;
    p->partition = q->partition;
    p->consistency = q->consistency;
    p->user_id = q->user_id;
    p->time_step = q->time_step;
    p->dims = q->dims;
    p->dims_count = q->dims_count;
    p->app_name = q->app_name;
    p->data_loc = q->data_loc;
    p->tags = q->tags;
    if ((rc = record_put(r, PDCBB_T_OBJ, id, PDCBB_OP_OBJ_INFO, p)) != PDCBB_OK)
        return rc;
    PDCBB_DEBUG("object '%s' created in container %#llx, id %#llx", q->name,
                (unsigned long long)q->cont_id, (unsigned long long)id);
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_obj_open(bbd_req_t *r, const pdcbb_obj_open_req_t *q, pdcbb_obj_open_rep_t *p)
{
    uint64_t id;
    pdcbb_err_t rc = bbd_check_name("object", q->name);
    if (rc == PDCBB_OK)
        rc = lookup_name(r, PDCBB_T_OBJ_NAME, q->name, &id);
    return rc != PDCBB_OK ? rc : record_get(r, PDCBB_T_OBJ, id, PDCBB_OP_OBJ_INFO, p);
}

pdcbb_err_t bbd_op_obj_info(bbd_req_t *r, const pdcbb_obj_info_req_t *q, pdcbb_obj_info_rep_t *p)
{
    pdcbb_err_t rc = check_id(r, q->id, PDCBB_META_KIND_OBJ);
    return rc != PDCBB_OK ? rc : record_get(r, PDCBB_T_OBJ, q->id, PDCBB_OP_OBJ_INFO, p);
}

pdcbb_err_t bbd_op_obj_del(bbd_req_t *r, const pdcbb_obj_del_req_t *q, pdcbb_obj_del_rep_t *p)
{
    pdcbb_obj_info_rep_t rec;
    pdcbb_err_t rc = check_id(r, q->id, PDCBB_META_KIND_OBJ);
    if (rc == PDCBB_OK)
        rc = record_get(r, PDCBB_T_OBJ, q->id, PDCBB_OP_OBJ_INFO, &rec);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = delete_named(r, PDCBB_T_OBJ_NAME, PDCBB_T_OBJ, q->id, rec.name)) != PDCBB_OK ||
        (rc = bbd_extent_forget(r, q->id)) != PDCBB_OK)
        return rc;
    return bbd_map_forget(r, q->id); /* where its regions were placed */
}

pdcbb_err_t bbd_op_obj_set_dims(bbd_req_t *r, const pdcbb_obj_set_dims_req_t *q,
                                pdcbb_obj_set_dims_rep_t *p)
{
    pdcbb_obj_info_rep_t rec;
    pdcbb_err_t rc = check_id(r, q->id, PDCBB_META_KIND_OBJ);
    if (rc == PDCBB_OK)
        rc = record_get(r, PDCBB_T_OBJ, q->id, PDCBB_OP_OBJ_INFO, &rec);
    if (rc != PDCBB_OK)
        return rc;
    if (q->ids_count == 0 || q->ids_count > PDCBB_NDIM_MAX)
        return PDCBB_ERR_INVAL;
    if (rec.dims_count != 0 && rec.dims_count != q->ids_count)
        return PDCBB_ERR_INVAL; /* the number of dimensions is fixed once set */
    for (uint32_t i = 0; i < q->ids_count; i++)
        if (q->ids[i] == 0)
            return PDCBB_ERR_INVAL;
    rec.dims = q->ids;
    rec.dims_count = q->ids_count;
    return record_put(r, PDCBB_T_OBJ, q->id, PDCBB_OP_OBJ_INFO, &rec);
}

static int obj_in_cont(bbd_req_t *r, uint64_t id, pdcbb_val_t v, const void *arg)
{
    uint64_t cont = *(const uint64_t *)arg;
    pdcbb_obj_info_rep_t rec;
    if (cont == 0)
        return 1;
    if (pdcbb_body_decode(PDCBB_OP_OBJ_INFO, 1, v.data, v.len, &rec) != PDCBB_OK)
        return 0;
    int match = rec.cont_id == cont;
    pdcbb_body_free(PDCBB_OP_OBJ_INFO, 1, &rec);
    return match;
}

pdcbb_err_t bbd_op_obj_list(bbd_req_t *r, const pdcbb_obj_list_req_t *q, pdcbb_obj_list_rep_t *p)
{
    if (q->cont_id != 0 && pdcbb_meta_id_kind(q->cont_id) != PDCBB_META_KIND_CONT)
        return PDCBB_ERR_WRONG_TYPE;
    return list_ids(r, PDCBB_T_OBJ, q->after, q->max, obj_in_cont, &q->cont_id, &p->ids,
                    &p->ids_count, &p->more);
}

/* ---------------------------------------------------------------- tags */

/* Key of a tag: the target id (8 bytes) then the tag name. */
static pdcbb_err_t tag_key(bbd_req_t *r, uint64_t id, const char *name, pdcbb_val_t *key)
{
    size_t l = strlen(name);
    uint8_t *k = bbd_req_alloc(r, 8 + l);
    if (k == NULL)
        return PDCBB_ERR_NOMEM;
    pdcbb_key_u64(k, id);
    memcpy(k + 8, name, l);
    *key = (pdcbb_val_t){k, 8 + l};
    return PDCBB_OK;
}

/* The target of a tag op must be a live container or object of this daemon. */
static pdcbb_err_t tag_target(bbd_req_t *r, uint64_t id, const char *name)
{
    uint8_t key[8];
    pdcbb_val_t v;
    pdcbb_err_t rc = bbd_check_name("tag", name);
    if (rc != PDCBB_OK || (rc = check_id(r, id, 0)) != PDCBB_OK)
        return rc;
    unsigned kind = pdcbb_meta_id_kind(id);
    if (kind != PDCBB_META_KIND_CONT && kind != PDCBB_META_KIND_OBJ)
        return PDCBB_ERR_BAD_ID;
    pdcbb_key_u64(key, id);
    return OPS->get(r->txn, kind == PDCBB_META_KIND_CONT ? PDCBB_T_CONT : PDCBB_T_OBJ,
                    (pdcbb_val_t){key, 8}, &v);
}

/* Remove the search index entries of a tag's current value, if it has one (put, delete). */
/* The tag's value v (as stored) leaves the index. */
static pdcbb_err_t tag_unindex_value(bbd_req_t *r, uint64_t id, const char *name, pdcbb_val_t v)
{
    if (v.len < 4)
        return PDCBB_ERR_STORE;
    /* The value lives in the store: copy it before the index changes the store. */
    uint8_t *old = bbd_req_alloc(r, v.len);
    if (old == NULL)
        return PDCBB_ERR_NOMEM;
    memcpy(old, v.data, v.len);
    return bbd_tagidx_tag(r, id, name, old + 4, v.len - 4, 0);
}

/* The tag of key, if there is one, leaves the index. */
static pdcbb_err_t tag_unindex(bbd_req_t *r, uint64_t id, const char *name, pdcbb_val_t key)
{
    pdcbb_val_t v;
    pdcbb_err_t rc = OPS->get(r->txn, PDCBB_T_TAG, key, &v);
    if (rc == PDCBB_ERR_NOT_FOUND)
        return PDCBB_OK;
    return rc != PDCBB_OK ? rc : tag_unindex_value(r, id, name, v);
}

pdcbb_err_t bbd_op_tag_put(bbd_req_t *r, const pdcbb_tag_put_req_t *q, pdcbb_tag_put_rep_t *p)
{
    pdcbb_val_t key;
    pdcbb_err_t rc = tag_target(r, q->id, q->name);
    if (rc != PDCBB_OK)
        return rc;
    size_t esize = pdcbb_type_size(q->type);
    if (esize == 0 || q->value_len == 0 || q->value_len % esize != 0)
        return PDCBB_ERR_INVAL;
    if (q->value_len > PDCBB_TAG_VALUE_MAX)
        return PDCBB_ERR_TOO_BIG;
    uint8_t *val = bbd_req_alloc(r, 4 + (size_t)q->value_len);
    if (val == NULL || (rc = tag_key(r, q->id, q->name, &key)) != PDCBB_OK)
        return val ? rc : PDCBB_ERR_NOMEM;
    uint32_t t = (uint32_t)q->type;
    for (int i = 0; i < 4; i++)
        val[i] = (uint8_t)(t >> (8 * i));
    memcpy(val + 4, q->value, q->value_len);
    /* A new tag (the usual case): one search. A tag put again: its old value leaves the index,
     * then the new one replaces it. */
    pdcbb_val_t nv = {val, 4 + (size_t)q->value_len}, old;
    rc = OPS->put_new(r->txn, PDCBB_T_TAG, key, nv, &old);
    if (rc == PDCBB_ERR_EXISTS && (rc = tag_unindex_value(r, q->id, q->name, old)) == PDCBB_OK)
        rc = OPS->put(r->txn, PDCBB_T_TAG, key, nv, 0);
    if (rc != PDCBB_OK)
        return rc;
    return bbd_tagidx_tag(r, q->id, q->name, q->value, q->value_len, 1);
}

pdcbb_err_t bbd_op_tag_get(bbd_req_t *r, const pdcbb_tag_get_req_t *q, pdcbb_tag_get_rep_t *p)
{
    pdcbb_val_t key, v;
    pdcbb_err_t rc = tag_target(r, q->id, q->name);
    if (rc != PDCBB_OK || (rc = tag_key(r, q->id, q->name, &key)) != PDCBB_OK ||
        (rc = OPS->get(r->txn, PDCBB_T_TAG, key, &v)) != PDCBB_OK)
        return rc;
    if (v.len < 4)
        return PDCBB_ERR_STORE;
    const uint8_t *b = v.data;
    p->type = (int32_t)(b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24);
    p->value = b + 4;
    p->value_len = (uint32_t)(v.len - 4);
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_tag_del(bbd_req_t *r, const pdcbb_tag_del_req_t *q, pdcbb_tag_del_rep_t *p)
{
    pdcbb_val_t key, v;
    pdcbb_err_t rc = tag_target(r, q->id, q->name);
    if (rc != PDCBB_OK || (rc = tag_key(r, q->id, q->name, &key)) != PDCBB_OK)
        return rc;
    /* As PDC: deleting a tag that does not exist (never put, or deleted already, maybe by
     * another rank) succeeds; the owner must exist (tag_target). */
    rc = OPS->get(r->txn, PDCBB_T_TAG, key, &v);
    if (rc == PDCBB_ERR_NOT_FOUND)
        return PDCBB_OK;
    if (rc != PDCBB_OK || (rc = tag_unindex(r, q->id, q->name, key)) != PDCBB_OK)
        return rc;
    return OPS->del(r->txn, PDCBB_T_TAG, key);
}

/* TAG_QUERY of a name with a literal '*': the whole tag table (rare; PDC reads '*' as a
 * wildcard, TAG_SEARCH does that). */
static pdcbb_err_t tag_query_scan(bbd_req_t *r, const pdcbb_tag_query_req_t *q,
                                  pdcbb_tag_query_rep_t *p)
{
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    pdcbb_err_t rc = bbd_check_name("tag", q->name);
    if (rc != PDCBB_OK || (rc = OPS->cursor_open(r->txn, PDCBB_T_TAG, &c)) != PDCBB_OK)
        return rc;
    size_t nl = strlen(q->name);
    uint32_t n = 0;
    size_t cap = 0;
    uint64_t *ids = NULL;
    rc = OPS->cursor_seek(c, (pdcbb_val_t){NULL, 0}, &k, &v);
    while (rc == PDCBB_OK) {
        if (k.len == 8 + nl && memcmp((const uint8_t *)k.data + 8, q->name, nl) == 0 &&
            v.len >= 4) {
            uint64_t id = pdcbb_key_get_u64(k.data);
            int match = q->kind == 0 || pdcbb_meta_id_kind(id) == q->kind;
            if (match && q->match_value)
                match = v.len - 4 == q->value_len &&
                        memcmp((const uint8_t *)v.data + 4, q->value, q->value_len) == 0;
            if (match) {
                if ((ids = bbd_req_grow(r, ids, n, 1, &cap, 8, 64)) == NULL) {
                    rc = PDCBB_ERR_NOMEM;
                    break;
                }
                ids[n++] = id;
            }
        }
        rc = OPS->cursor_next(c, &k, &v);
    }
    return ids_walk_end(r, c, rc, ids, n, &p->ids, &p->ids_count);
}

pdcbb_err_t bbd_op_tag_query(bbd_req_t *r, const pdcbb_tag_query_req_t *q,
                             pdcbb_tag_query_rep_t *p)
{
    /* An exact name (and value): a range of the tag search index (bbd_tagidx.c). A name with
     * '*' in it is taken literally here, as before; TAG_SEARCH takes patterns. */
    pdcbb_err_t rc = bbd_check_name("tag", q->name);
    if (rc != PDCBB_OK)
        return rc;
    if (strchr(q->name, '*') != NULL)
        return tag_query_scan(r, q, p);
    return bbd_tagidx_tag_search(r, q->name,
                                 q->match_value ? PDCBB_TAGVAL_BYTES : PDCBB_TAGVAL_ANY, q->value,
                                 q->value_len, q->kind, &p->ids, &p->ids_count, &p->more);
}
