/*
 * pdc_kv.c - KV objects (include/pdc_kv.h, docs/KV.md): handles (create, open, close, info,
 * delete, over every shard daemon) and the encoding of keys. The operations on records are in
 * pdc_kv_write.c, pdc_kv_get.c and pdc_kv_list.c, transactions in pdc_kv_trans.c, all built on
 * the calls of pdc_kv_call.c; pdc_kv_internal.h is what they share.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdc_kv_internal.h"

client_kv_t *kv_get(pdcid_t id, const char *fn)
{
    pdcbb_err_t e;
    client_kv_t *kv = client_handle_get(id, CLIENT_H_KV, &e);
    if (kv == NULL)
        client_fail(e, "%s: %#llx is not an open KV object id (%s)", fn, (unsigned long long)id,
                    e == PDCBB_ERR_WRONG_TYPE ? client_hkind_name(client_handle_kind(id)) : "unknown or closed");
    return kv;
}

/* Hook for client/pdc_kv_migrate.c (kvdrain): the identity of an open KV object (client
 * lock held). NULL name/cont_id allowed. */
pdcbb_err_t client_kv_identity(pdcid_t kv_id, const char *fn, uint64_t *id, uint64_t *cont_id,
                               const char **name)
{
    client_kv_t *kv = kv_get(kv_id, fn);
    if (kv == NULL)
        return PDCBB_ERR_BAD_ID;
    *id = kv->id;
    if (cont_id)
        *cont_id = kv->cont_id;
    if (name)
        *name = kv->name;
    return PDCBB_OK;
}

/* The start of every call on an open KV object (under the library lock): the last error is
 * cleared, the library is initialised, kv_id is an open KV object and ev, if given, is not in
 * use. NULL (error recorded) otherwise. */
client_kv_t *kv_call_begin(pdcid_t kv_id, const pdc_kv_event_t *ev, const char *fn)
{
    client_kv_t *kv;
    client_clear_error();
    if (client_check_init() != PDCBB_OK || (kv = kv_get(kv_id, fn)) == NULL)
        return NULL;
    if (ev && ev->state_ != 0) {
        client_fail(PDCBB_ERR_INVAL, "%s: the event is still in use (wait it first)", fn);
        return NULL;
    }
    return kv;
}

void client_kv_free(void *p)
{
    client_kv_t *kv = p;
    if (kv) {
        free(kv->name);
        free(kv->cur);
        free(kv);
    }
}

/* ------------------------------------------------------------------ keys */

/* Encode key for kv into out (PDCBB_KV_ENC_MAX bytes). Fails with a message naming the key. */
pdcbb_err_t kv_enc_key(const client_kv_t *kv, const pdc_kv_key_t *key, uint8_t *out,
                       size_t *len, const char *fn)
{
    if (key == NULL)
        return client_fail(PDCBB_ERR_INVAL, "%s: key is NULL", fn);
    if ((unsigned)key->type != kv->key_type)
        return client_fail(PDCBB_ERR_INVAL, "%s: key type %s does not match KV object '%s' (%s keys)",
                           fn, pdcbb_kv_type_name((unsigned)key->type), kv->name,
                           pdcbb_kv_type_name(kv->key_type));
    switch (key->type) {
    case PDC_KV_INT: pdcbb_kv_enc_int(key->i, out); *len = 8; return PDCBB_OK;
    case PDC_KV_FLOAT:
        if (pdcbb_kv_enc_float(key->f, out) != PDCBB_OK)
            return client_fail(PDCBB_ERR_INVAL, "%s: a FLOAT key of KV object '%s' is NaN (NaN keys are refused)", fn, kv->name);
        *len = 8;
        return PDCBB_OK;
    default: {
        if (key->str == NULL)
            return client_fail(PDCBB_ERR_INVAL, "%s: STRING key is NULL", fn);
        size_t n = strnlen(key->str, (size_t)kv->max_key_len + 1);
        if (n == 0)
            return client_fail(PDCBB_ERR_INVAL, "%s: empty STRING key (keys are 1..%u bytes)", fn, kv->max_key_len);
        if (n > kv->max_key_len)
            return client_fail(PDCBB_ERR_TOO_BIG,
                               "%s: STRING key '%.32s...' of %zu bytes is longer than KV object '%s' allows (%u bytes)",
                               fn, key->str, strlen(key->str), kv->name, kv->max_key_len);
        *len = pdcbb_kv_enc_str(key->str, n, out);
        return PDCBB_OK;
    }
    }
}

void kv_key_print(const client_kv_t *kv, const uint8_t *enc, size_t len, char *out, size_t n)
{
    pdcbb_kv_key_print(kv->key_type, enc, len, out, n);
}

/* ------------------------------------------------------------------ create / open / close */

static pdcid_t kv_from_info(const char *fn, uint64_t id, uint64_t cont_id, const char *name,
                            uint32_t key_type, uint32_t sharding, uint32_t max_key_len,
                            uint64_t max_value_len, const uint64_t *shards, uint32_t nshards)
{
    if (nshards == 0 || nshards > PDCBB_KV_SHARDS_MAX || key_type > PDCBB_KV_FLOAT) {
        client_fail(PDCBB_ERR_PROTO, "%s: bad KV object record from the daemon", fn);
        return 0;
    }
    client_kv_t *kv = calloc(1, sizeof(*kv));
    if (kv == NULL || (kv->name = strdup(name ? name : "")) == NULL) {
        free(kv);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        return 0;
    }
    kv->id = id;
    kv->cont_id = cont_id;
    kv->key_type = key_type;
    kv->sharding = sharding;
    kv->max_key_len = max_key_len ? max_key_len : PDC_KV_KEY_MAXLEN;
    kv->max_value_len = max_value_len;
    kv->nshards = nshards;
    for (uint32_t i = 0; i < nshards; i++) {
        if (shards[i] >= client_g.nservers) {
            client_kv_free(kv);
            client_fail(PDCBB_ERR_PROTO, "%s: KV object '%s' names daemon %llu, the job has %u", fn,
                        name, (unsigned long long)shards[i], client_g.nservers);
            return 0;
        }
        kv->shards[i] = (uint32_t)shards[i];
    }
    pdcid_t h = client_handle_new(CLIENT_H_KV, kv);
    if (h == 0) {
        client_kv_free(kv);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
    }
    return h;
}

static client_cont_t *cont_of(pdcid_t cont_id, const char *fn)
{
    pdcbb_err_t e;
    client_cont_t *c = client_handle_get(cont_id, CLIENT_H_CONT, &e);
    if (c == NULL)
        client_fail(e == PDCBB_ERR_WRONG_TYPE ? PDCBB_ERR_BAD_ID : e, "%s: %#llx is not an open container id", fn,
                    (unsigned long long)cont_id);
    return c;
}

static pdcbb_err_t check_kv_name(const char *name, const char *fn)
{
    return client_check_name(fn, "KV object", name);
}

static pdcid_t kv_create(pdcid_t cont_id, const char *name, const pdc_kv_info_t *info, const char *fn)
{
    if (client_check_init() != PDCBB_OK)
        return 0;
    client_cont_t *cont = cont_of(cont_id, fn);
    if (cont == NULL || check_kv_name(name, fn) != PDCBB_OK)
        return 0;
    pdc_kv_info_t in = {PDC_KV_STRING, PDC_KV_SHARD_DEFAULT, 0, 0, 0};
    if (info)
        in = *info;
    if ((unsigned)in.key_type > PDC_KV_FLOAT) {
        client_fail(PDCBB_ERR_INVAL, "%s: unknown key type %d for KV object '%s'", fn, (int)in.key_type, name);
        return 0;
    }
    if ((unsigned)in.sharding > PDC_KV_SHARD_RANGE) {
        client_fail(PDCBB_ERR_INVAL, "%s: unknown sharding %d for KV object '%s'", fn, (int)in.sharding, name);
        return 0;
    }
    if (in.nshards > client_g.nservers || in.nshards > PDCBB_KV_SHARDS_MAX) {
        client_fail(PDCBB_ERR_INVAL, "%s: nshards %u for KV object '%s' but the job has %u daemons (at most %u shards)",
                    fn, in.nshards, name, client_g.nservers, PDCBB_KV_SHARDS_MAX);
        return 0;
    }
    if (in.max_key_len > PDC_KV_KEY_MAXLEN) {
        client_fail(PDCBB_ERR_INVAL, "%s: max_key_len %u for KV object '%s' is above %u", fn,
                    in.max_key_len, name, PDC_KV_KEY_MAXLEN);
        return 0;
    }
    uint32_t ns = in.nshards ? in.nshards : client_g.nservers;
    if (ns > PDCBB_KV_SHARDS_MAX)
        ns = PDCBB_KV_SHARDS_MAX;
    unsigned home = client_home_of_name(name);
    uint64_t shards[PDCBB_KV_SHARDS_MAX];
    for (uint32_t i = 0; i < ns; i++)
        shards[i] = (home + i) % client_g.nservers;
    pdcbb_kv_create_req_t q = {.id = 0, .cont_id = cont->meta_id, .name = name,
                               .key_type = (uint32_t)in.key_type,
                               .sharding = in.sharding == PDC_KV_SHARD_DEFAULT ? PDCBB_KV_SHARD_CHOSEN : (uint32_t)in.sharding,
                               .max_key_len = in.max_key_len ? in.max_key_len : PDC_KV_KEY_MAXLEN,
                               .max_value_len = in.max_value_len, .shards = shards, .shards_count = ns};
    pdcbb_kv_create_rep_t p;
    void *keep;
    pdcbb_err_t rc = client_op_kv_create(home, &q, &p, &keep);
    if (rc != PDCBB_OK) {
        if (rc == PDCBB_ERR_EXISTS)
            client_fail(rc, "%s: a KV object named '%s' already exists in container '%s'", fn, name, cont->name);
        else
            client_fail(rc, "%s: creating KV object '%s' failed: %s", fn, name, PDCbb_last_error_message());
        return 0;
    }
    uint64_t id = p.id;
    client_rpc_release(PDCBB_OP_KV_CREATE, &p, keep);
    /* Register the object on its other shard daemons (they check ids and key types). */
    q.id = id;
    for (uint32_t i = 0; i < ns; i++) {
        if (shards[i] == home)
            continue;
        int seen = 0;
        for (uint32_t j = 0; j < i; j++)
            seen |= shards[j] == shards[i];
        if (seen)
            continue;
        if ((rc = client_op_kv_create((unsigned)shards[i], &q, &p, &keep)) != PDCBB_OK) {
            client_fail(rc, "%s: registering KV object '%s' on daemon %u failed: %s", fn, name,
                        (unsigned)shards[i], PDCbb_last_error_message());
            return 0;
        }
        client_rpc_release(PDCBB_OP_KV_CREATE, &p, keep);
    }
    return kv_from_info(fn, id, cont->meta_id, name, q.key_type, q.sharding, q.max_key_len,
                        q.max_value_len, shards, ns);
}

pdcid_t PDCkv_create(pdcid_t cont_id, const char *name, const pdc_kv_info_t *info)
{
    CLIENT_ENTER();
    client_clear_error();
    pdcid_t id = kv_create(cont_id, name, info, "PDCkv_create");
    CLIENT_LEAVE();
    return id;
}

/*
 * A KV object is usable once its creator has registered it on every shard daemon (kv_create:
 * the home daemon first, then each shard). An open racing with a create can find the name on
 * the home daemon before that: a shard then answers BAD_ID. Wait for every shard to know the
 * object (up to 5 s: a creator that died half-way leaves an object that never becomes usable).
 */
static pdcbb_err_t kv_wait_registered(const pdcbb_kv_open_rep_t *p, unsigned home, const char *fn)
{
    for (uint32_t i = 0; i < p->shards_count; i++) {
        unsigned s = (unsigned)p->shards[i];
        if (s == home)
            continue;
        for (int attempt = 0;; attempt++) {
            pdcbb_kv_open_req_t q = {.id = p->id};
            pdcbb_kv_open_rep_t sp;
            void *keep;
            pdcbb_err_t rc = client_op_kv_open(s, &q, &sp, &keep);
            if (rc == PDCBB_OK) {
                client_rpc_release(PDCBB_OP_KV_OPEN, &sp, keep);
                break;
            }
            if (rc != PDCBB_ERR_BAD_ID || attempt == 500)
                return client_fail(rc,
                                   "%s: KV object '%s' is not known to its shard daemon %u "
                                   "(its creation has not finished): %s",
                                   fn, p->name, s, pdcbb_strerror(rc));
            usleep(10000);
        }
    }
    return PDCBB_OK;
}

static pdcid_t kv_open(pdcid_t cont_id, const char *name, const char *fn)
{
    if (client_check_init() != PDCBB_OK)
        return 0;
    client_cont_t *cont = cont_of(cont_id, fn);
    if (cont == NULL || check_kv_name(name, fn) != PDCBB_OK)
        return 0;
    pdcbb_kv_open_req_t q = {.id = 0, .cont_id = cont->meta_id, .name = name};
    pdcbb_kv_open_rep_t p;
    void *keep;
    pdcbb_err_t rc = client_op_kv_open(client_home_of_name(name), &q, &p, &keep);
    if (rc != PDCBB_OK) {
        if (rc == PDCBB_ERR_NOT_FOUND || rc == PDCBB_ERR_BAD_ID)
            client_fail(PDCBB_ERR_NOT_FOUND, "%s: no KV object named '%s' in container '%s'", fn, name, cont->name);
        return 0;
    }
    if ((rc = kv_wait_registered(&p, client_home_of_name(name), fn)) != PDCBB_OK) {
        client_rpc_release(PDCBB_OP_KV_OPEN, &p, keep);
        return 0;
    }
    pdcid_t id = kv_from_info(fn, p.id, p.cont_id, p.name, p.key_type, p.sharding, p.max_key_len,
                              p.max_value_len, p.shards, p.shards_count);
    client_rpc_release(PDCBB_OP_KV_OPEN, &p, keep);
    return id;
}

pdcid_t PDCkv_open(pdcid_t cont_id, const char *name)
{
    CLIENT_ENTER();
    client_clear_error();
    pdcid_t id = kv_open(cont_id, name, "PDCkv_open");
    CLIENT_LEAVE();
    return id;
}

#ifdef ENABLE_MPI
static pdcid_t kv_coll(pdcid_t cont_id, const char *name, const pdc_kv_info_t *info, MPI_Comm comm,
                       int create, const char *fn)
{
    int rank = 0;
    pdcid_t id = 0;
    CLIENT_ENTER();
    client_clear_error();
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS) {
        client_fail(PDCBB_ERR_INVAL, "%s: bad communicator", fn);
        CLIENT_LEAVE();
        return 0;
    }
    int32_t status = PDCBB_OK;
    if (rank == 0) {
        id = create ? kv_create(cont_id, name, info, fn) : kv_open(cont_id, name, fn);
        status = id ? PDCBB_OK : PDCbb_last_error();
    }
    CLIENT_LEAVE();
    MPI_Bcast(&status, 1, MPI_INT32_T, 0, comm);
    CLIENT_ENTER();
    if (rank != 0) {
        if (status != PDCBB_OK)
            client_fail(status, "%s: rank 0 failed to %s KV object '%s': %s", fn,
                        create ? "create" : "open", name ? name : "(null)", pdcbb_strerror(status));
        else
            id = kv_open(cont_id, name, fn);
    }
    CLIENT_LEAVE();
    return id;
}

pdcid_t PDCkv_create_coll(pdcid_t cont_id, const char *name, const pdc_kv_info_t *info, MPI_Comm comm)
{
    return kv_coll(cont_id, name, info, comm, 1, "PDCkv_create_coll");
}

pdcid_t PDCkv_open_coll(pdcid_t cont_id, const char *name, MPI_Comm comm)
{
    return kv_coll(cont_id, name, NULL, comm, 0, "PDCkv_open_coll");
}
#endif

perr_t PDCkv_close(pdcid_t kv_id)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() == PDCBB_OK && kv_get(kv_id, "PDCkv_close") != NULL) {
        client_kv_free(client_handle_remove(kv_id, CLIENT_H_KV));
        ret = SUCCEED;
    }
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCkv_get_info(pdcid_t kv_id, pdc_kv_info_t *info)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_kv_t *kv;
    if (client_check_init() == PDCBB_OK && (kv = kv_get(kv_id, "PDCkv_get_info")) != NULL) {
        if (info == NULL) {
            client_fail(PDCBB_ERR_INVAL, "PDCkv_get_info: info is NULL");
        } else {
            info->key_type = (pdc_kv_key_type_t)kv->key_type;
            info->sharding = (pdc_kv_shard_t)kv->sharding;
            info->nshards = kv->nshards;
            info->max_key_len = kv->max_key_len;
            info->max_value_len = kv->max_value_len;
            ret = SUCCEED;
        }
    }
    CLIENT_LEAVE();
    return ret;
}

/* Distinct daemons of kv, home (the id's daemon) last. */
uint32_t kv_daemons(const client_kv_t *kv, unsigned *out)
{
    uint32_t n = 0;
    unsigned home = pdcbb_meta_id_server(kv->id);
    for (uint32_t i = 0; i < kv->nshards; i++) {
        int seen = kv->shards[i] == home;
        for (uint32_t j = 0; j < n; j++)
            seen |= out[j] == kv->shards[i];
        if (!seen)
            out[n++] = kv->shards[i];
    }
    out[n++] = home;
    return n;
}

perr_t PDCkv_delete(pdcid_t kv_id)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_kv_t *kv;
    if (client_check_init() != PDCBB_OK || (kv = kv_get(kv_id, "PDCkv_delete")) == NULL)
        goto out;
    unsigned d[PDCBB_KV_SHARDS_MAX + 1];
    uint32_t nd = kv_daemons(kv, d);
    pdcbb_err_t rc = PDCBB_OK;
    for (uint32_t i = 0; i < nd && rc == PDCBB_OK; i++) {
        pdcbb_kv_delete_req_t q = {.id = kv->id, .home = i == nd - 1};
        pdcbb_kv_delete_rep_t p;
        void *keep;
        rc = client_op_kv_delete(d[i], &q, &p, &keep);
        if (rc == PDCBB_OK)
            client_rpc_release(PDCBB_OP_KV_DELETE, &p, keep);
        else if (rc == PDCBB_ERR_BAD_ID)
            client_fail(rc, "PDCkv_delete: KV object '%s' does not exist on daemon %u (already deleted?)", kv->name, d[i]);
    }
    if (rc == PDCBB_OK) {
        client_kv_free(client_handle_remove(kv_id, CLIENT_H_KV));
        ret = SUCCEED;
    }
out:
    CLIENT_LEAVE();
    return ret;
}
