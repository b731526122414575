/*
 * pdc_kv.c - KV objects (include/pdc_kv.h, docs/KV.md): handles, routing of keys to shards,
 * batching, values larger than one message, ordered listings over shards, non-blocking calls
 * and the two-phase commit of transactions.
 *
 * Every call is a kv_call_t: a set of posted requests (client_rpc_post) and a finish function
 * that collects their replies and fills the caller's outputs, possibly with more round trips
 * (the rest of a value larger than one reply, the next pages of a listing, retries of an answer
 * "in doubt" while a transaction is being committed). A blocking call posts and finishes at
 * once; a call with an event posts and returns, PDCkv_event_test finishes it once its requests
 * are answered, PDCkv_event_wait finishes it and returns its result.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "pdc_kv.h"
#include "pdcbb_kv.h"

/* One SET message carries about this many bytes of records (pipelined over shards). */
#define KV_MSG_BYTES ((size_t)4 << 20)
/* Values above this go in KV_PART pieces of this size, then a SET_PART record. */
#define KV_BIG_VALUE ((uint64_t)8 << 20)
#define KV_PIECE ((size_t)8 << 20)
/* Largest value slice asked for in one KV_GET. */
#define KV_GET_CHUNK ((uint64_t)8 << 20)
/* Records asked for in one KV_LIST. */
#define KV_LIST_PAGE 4096u
#define KV_LIST_BYTES ((uint64_t)8 << 20)

typedef struct client_kv {
    uint64_t id;
    uint64_t cont_id;
    char *name;
    uint32_t key_type, sharding, max_key_len, nshards;
    uint64_t max_value_len;
    uint32_t shards[PDCBB_KV_SHARDS_MAX];
    struct kv_cursor *cur; /* where the last listing ended (owned by the handle, not by copies) */
} client_kv_t;

/* Where a paged listing ended, per shard: the next page at offset next_off and the same tag
 * resumes from there when no shard's write generation changed (docs/KV.md "Sharding"). */
typedef struct kv_shard_pos {
    int started, done, gen_known;
    uint64_t gen;
    size_t poslen; /* 0: nothing consumed */
    uint8_t pos[PDCBB_KV_ENC_MAX];
} kv_shard_pos_t;
typedef struct kv_cursor {
    uint64_t tag, next_off;
    uint32_t ns;
    kv_shard_pos_t sh[];
} kv_cursor_t;

static client_kv_t *kv_get(pdcid_t id, const char *fn)
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

/* The start of every call on an open KV object: the library is initialised, kv_id is an open
 * KV object and ev, if given, is not in use. NULL (error recorded) otherwise. */
static client_kv_t *kv_call_begin(pdcid_t kv_id, const pdc_kv_event_t *ev, const char *fn)
{
    client_kv_t *kv;
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
static pdcbb_err_t enc_key(const client_kv_t *kv, const pdc_kv_key_t *key, uint8_t *out,
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

static void key_print(const client_kv_t *kv, const uint8_t *enc, size_t len, char *out, size_t n)
{
    pdcbb_kv_key_print(kv->key_type, enc, len, out, n);
}

/* ------------------------------------------------------------------ calls and events */

typedef struct kv_call kv_call_t;
struct kv_call {
    client_pending_t **p;
    size_t np, capp;
    pdcbb_err_t (*finish)(kv_call_t *c);
    void (*cleanup)(kv_call_t *c);
    int (*ready)(kv_call_t *c); /* requests kept elsewhere all answered (listings), or NULL */
    const char *fn;
    client_kv_t kv; /* a copy: the id may be closed before the event is waited (kv.cur unused) */
    pdcid_t hid;    /* the handle, for the listing cursor */
    pdcbb_err_t status;
    int finished;
    char *msg;      /* the error message of a failed call finished by event_test */
    int sync;       /* blocking call: requests to this node's daemons may take the shm channel */
    void *ctx;
};

static pdcbb_err_t call_add(kv_call_t *c, client_pending_t *p)
{
    if (c->np == c->capp) {
        size_t cap = c->capp ? 2 * c->capp : 8;
        client_pending_t **n = realloc(c->p, cap * sizeof(*n));
        if (n == NULL) {
            client_pending_free(p);
            return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
        }
        c->p = n;
        c->capp = cap;
    }
    c->p[c->np++] = p;
    return PDCBB_OK;
}

/*
 * Send one request of c. A blocking call's request to a daemon of this node goes over the
 * shared-memory channel when it can (client_shm_call: answered before this returns, *p done),
 * as synchronous metadata calls do; else, and for every request of a non-blocking call, over
 * UCX (answered later).
 */
static pdcbb_err_t kv_post(const kv_call_t *c, unsigned server, unsigned op, const void *req,
                           client_pending_t **p)
{
    if (c->sync && client_shm_call(server, op, req, p))
        return PDCBB_OK;
    return client_rpc_post(server, op, req, NULL, 0, NULL, 0, p);
}

static pdcbb_err_t call_post(kv_call_t *c, unsigned server, unsigned op, const void *req)
{
    client_pending_t *p;
    pdcbb_err_t rc = kv_post(c, server, op, req, &p);
    if (rc != PDCBB_OK)
        return rc;
    return call_add(c, p);
}

static void call_free(kv_call_t *c)
{
    for (size_t i = 0; i < c->np; i++)
        if (c->p[i])
            client_pending_free(c->p[i]);
    if (c->cleanup)
        c->cleanup(c);
    free(c->p);
    free(c->msg);
    free(c);
}

/* Wait for every posted request, then finish. */
static pdcbb_err_t call_complete(kv_call_t *c)
{
    if (!c->finished) {
        for (size_t i = 0; i < c->np; i++)
            if (c->p[i] && !c->p[i]->done)
                client_rpc_wait(c->p[i], client_g.cfg.request_timeout);
        c->status = c->finish(c);
        c->finished = 1;
    }
    return c->status;
}

/* Run a posted call: blocking without ev, else hand it to the event. */
static perr_t call_run(kv_call_t *c, pdcbb_err_t post_rc, pdc_kv_event_t *ev)
{
    if (post_rc != PDCBB_OK) {
        call_free(c);
        return FAIL;
    }
    if (ev == NULL) {
        pdcbb_err_t rc = call_complete(c);
        call_free(c);
        return rc == PDCBB_OK ? SUCCEED : FAIL;
    }
    ev->impl_ = c;
    ev->state_ = 1;
    ev->status_ = 0;
    return SUCCEED;
}

static kv_call_t *call_new(const client_kv_t *kv, const char *fn, const pdc_kv_event_t *ev,
                           pdcbb_err_t (*finish)(kv_call_t *), size_t ctx_size)
{
    kv_call_t *c = calloc(1, sizeof(*c) + ctx_size);
    if (c == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        return NULL;
    }
    c->fn = fn;
    c->sync = ev == NULL;
    c->finish = finish;
    if (kv)
        c->kv = *kv;
    c->ctx = c + 1;
    return c;
}

perr_t PDCkv_event_test(pdc_kv_event_t *ev, int *done)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (ev == NULL || done == NULL || ev->state_ == 0) {
        client_fail(PDCBB_ERR_INVAL, "PDCkv_event_test: %s", ev == NULL || done == NULL ? "ev or done is NULL" : "the event is not in use");
        goto out;
    }
    if (ev->state_ == 2) {
        *done = 1;
        ret = SUCCEED;
        goto out;
    }
    kv_call_t *c = ev->impl_;
    for (int i = 0; i < 16 && client_rpc_progress(); i++)
        ;
    int all = 1;
    for (size_t i = 0; i < c->np; i++)
        if (c->p[i] && !c->p[i]->done)
            all = 0;
    if (all && c->ready && !c->ready(c))
        all = 0;
    if (all) {
        if (call_complete(c) != PDCBB_OK) {
            const char *m = PDCbb_last_error_message();
            c->msg = strdup(m ? m : "");
        }
        ev->state_ = 2;
    }
    *done = all;
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCkv_event_wait(pdc_kv_event_t *ev)
{
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (ev == NULL || ev->state_ == 0) {
        client_fail(PDCBB_ERR_INVAL, "PDCkv_event_wait: %s", ev == NULL ? "ev is NULL" : "the event is not in use");
        goto out;
    }
    kv_call_t *c = ev->impl_;
    int was_finished = c->finished;
    pdcbb_err_t rc = call_complete(c);
    if (rc != PDCBB_OK && was_finished)
        client_fail(rc, "%s", c->msg ? c->msg : pdcbb_strerror(rc));
    ev->status_ = rc;
    ev->state_ = 0;
    ev->impl_ = NULL;
    call_free(c);
    ret = rc == PDCBB_OK ? SUCCEED : FAIL;
out:
    CLIENT_LEAVE();
    return ret;
}

/* Describe a daemon's refusal of a request on kv. */
static pdcbb_err_t kv_refused(const kv_call_t *c, pdcbb_err_t rc, unsigned daemon, const char *what)
{
    const char *why;
    switch (rc) {
    case PDCBB_ERR_BAD_ID: why = "the KV object does not exist there (deleted, or a stale id)"; break;
    case PDCBB_ERR_INVAL: why = "a malformed key, a key of the wrong type, or a bad tag"; break;
    case PDCBB_ERR_TOO_BIG: why = "a key or value larger than the KV object allows"; break;
    case PDCBB_ERR_EXISTS: why = "another long key has the same first 448 bytes and hash"; break;
    default: why = pdcbb_strerror(rc); break;
    }
    return client_fail(rc, "%s: daemon %u refused %s on KV object '%s': %s (%s)", c->fn, daemon,
                       what, c->kv.name, pdcbb_errname(rc), why);
}

/* Finish one pending request into rep; on a daemon refusal describe it. */
static pdcbb_err_t take(kv_call_t *c, size_t i, void *rep, void **keep, const char *what)
{
    client_pending_t *p = c->p[i];
    unsigned daemon = p->server;
    c->p[i] = NULL;
    pdcbb_err_t rc = client_rpc_finish(p, rep, keep);
    if (rc != PDCBB_OK && rc != PDCBB_ERR_TRANSPORT && rc != PDCBB_ERR_TIMEOUT &&
        rc != PDCBB_ERR_UNREACHABLE && rc != PDCBB_ERR_NOT_FOUND && rc != PDCBB_ERR_BUSY &&
        !client_g.drained)
        return kv_refused(c, rc, daemon, what);
    return rc;
}

/* Sleep a little before retrying an answer in doubt. */
static void busy_pause(double *deadline)
{
    if (*deadline == 0)
        *deadline = client_now() + client_g.cfg.request_timeout;
    struct timespec ts = {0, 500000};
    CLIENT_LEAVE();
    nanosleep(&ts, NULL);
    CLIENT_ENTER();
}

/* One blocking round trip inside a finish. */
static pdcbb_err_t rt(kv_call_t *c, unsigned server, unsigned op, const void *req, void *rep,
                      void **keep, const char *what)
{
    pdcbb_err_t rc = call_post(c, server, op, req);
    if (rc != PDCBB_OK)
        return rc;
    size_t i = c->np - 1;
    client_rpc_wait(c->p[i], client_g.cfg.request_timeout);
    rc = take(c, i, rep, keep, what);
    c->np--;
    return rc;
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
    if (name == NULL || name[0] == 0)
        return client_fail(PDCBB_ERR_INVAL, "%s: the KV object name is NULL or empty", fn);
    if (strlen(name) > PDCBB_NAME_MAX)
        return client_fail(PDCBB_ERR_INVAL, "%s: KV object name of %zu bytes is longer than %u", fn,
                           strlen(name), PDCBB_NAME_MAX);
    return PDCBB_OK;
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
static uint32_t kv_daemons(const client_kv_t *kv, unsigned *out)
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

/* ------------------------------------------------------------------ set / unlink */

typedef struct shardbuf {
    uint8_t *buf;
    size_t len, cap;
    uint32_t count;
} shardbuf_t;

typedef struct set_ctx {
    uint64_t upload_seq;
} set_ctx_t;

static pdcbb_err_t set_finish(kv_call_t *c)
{
    pdcbb_err_t first = PDCBB_OK;
    for (size_t i = 0; i < c->np; i++) {
        if (c->p[i] == NULL)
            continue;
        pdcbb_kv_set_rep_t p;
        void *keep;
        pdcbb_err_t rc = take(c, i, &p, &keep, "a batch of records");
        if (rc == PDCBB_OK)
            client_rpc_release(PDCBB_OP_KV_SET, &p, keep);
        else if (first == PDCBB_OK)
            first = rc;
    }
    return first;
}

static pdcbb_err_t flush_shard(kv_call_t *c, unsigned daemon, uint64_t tag, shardbuf_t *sb)
{
    if (sb->count == 0)
        return PDCBB_OK;
    pdcbb_kv_set_req_t q = {.id = c->kv.id, .tag = tag, .count = sb->count, .recs = sb->buf,
                            .recs_len = (uint32_t)sb->len};
    pdcbb_err_t rc = call_post(c, daemon, PDCBB_OP_KV_SET, &q);
    sb->len = 0;
    sb->count = 0;
    return rc;
}

/* Send a big value in KV_PART pieces (acknowledged before the SET_PART record goes out). */
static pdcbb_err_t upload(kv_call_t *c, unsigned daemon, const void *value, uint64_t len,
                          uint64_t *id)
{
    static uint64_t seq;
    *id = ((uint64_t)getpid() << 32) ^ ((uint64_t)time(NULL) << 12) ^ ++seq;
    if (*id == 0)
        *id = 1;
    for (uint64_t off = 0; off < len; off += KV_PIECE) {
        size_t n = len - off < KV_PIECE ? (size_t)(len - off) : KV_PIECE;
        pdcbb_kv_part_req_t q = {.id = c->kv.id, .upload = *id, .offset = off,
                                 .data = (const uint8_t *)value + off, .data_len = (uint32_t)n};
        pdcbb_kv_part_rep_t p;
        void *keep;
        pdcbb_err_t rc = rt(c, daemon, PDCBB_OP_KV_PART, &q, &p, &keep, "a piece of a large value");
        if (rc != PDCBB_OK)
            return rc;
        client_rpc_release(PDCBB_OP_KV_PART, &p, keep);
    }
    return PDCBB_OK;
}

/* Common part of set, set_list and unlink_keys: n records (keys from recs or keys). */
static perr_t kv_write(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t n, const pdc_kv_t *recs,
                       const pdc_kv_key_t *keys, int unlink, pdc_kv_event_t *ev, const char *fn)
{
    client_kv_t *kv;
    perr_t ret = FAIL;
    shardbuf_t *sb = NULL;
    uint32_t nsb = 0;
    kv_call_t *c = NULL;
    CLIENT_ENTER();
    client_clear_error();
    if ((kv = kv_call_begin(kv_id, ev, fn)) == NULL)
        goto out;
    if (tag > PDC_KV_MAXTAG || (!unlink && tag == PDC_KV_MAXTAG)) {
        client_fail(PDCBB_ERR_INVAL, "%s: tag %#llx on KV object '%s': MAXTAG cannot be set%s", fn,
                    (unsigned long long)tag, kv->name, tag > PDC_KV_MAXTAG ? " (and is the largest tag)" : "");
        goto out;
    }
    if (n > 0 && ((unlink && keys == NULL) || (!unlink && recs == NULL))) {
        client_fail(PDCBB_ERR_INVAL, "%s: %s is NULL", fn, unlink ? "keys" : "recs");
        goto out;
    }
    /* Check every record before anything is sent. */
    uint8_t enc[PDCBB_KV_ENC_MAX];
    size_t elen;
    for (uint64_t i = 0; i < n; i++) {
        const pdc_kv_key_t *k = unlink ? &keys[i] : &recs[i].key;
        if (enc_key(kv, k, enc, &elen, fn) != PDCBB_OK)
            goto out;
        if (!unlink) {
            if (recs[i].value == NULL && recs[i].value_len) {
                client_fail(PDCBB_ERR_INVAL, "%s: record %llu has a NULL value of %llu bytes", fn,
                            (unsigned long long)i, (unsigned long long)recs[i].value_len);
                goto out;
            }
            if (kv->max_value_len && recs[i].value_len > kv->max_value_len) {
                char kp[96];
                key_print(kv, enc, elen, kp, sizeof(kp));
                client_fail(PDCBB_ERR_TOO_BIG, "%s: value of key %s is %llu bytes, KV object '%s' allows %llu",
                            fn, kp, (unsigned long long)recs[i].value_len, kv->name,
                            (unsigned long long)kv->max_value_len);
                goto out;
            }
        }
    }
    c = call_new(kv, fn, ev, set_finish, 0);
    sb = calloc(kv->nshards, sizeof(*sb));
    nsb = sb ? kv->nshards : 0;
    if (c == NULL || sb == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    pdcbb_err_t rc = PDCBB_OK;
    for (uint64_t i = 0; i < n && rc == PDCBB_OK; i++) {
        const pdc_kv_key_t *k = unlink ? &keys[i] : &recs[i].key;
        enc_key(kv, k, enc, &elen, fn);
        uint32_t s = pdcbb_kv_shard_of(kv->sharding, kv->key_type, kv->nshards, enc, elen);
        unsigned daemon = kv->shards[s];
        pdcbb_kv_wrec_t w = {.op = unlink ? PDCBB_KV_OP_UNLINK : PDCBB_KV_OP_SET, .key = enc, .key_len = elen};
        if (!unlink) {
            w.value = recs[i].value;
            w.value_len = recs[i].value_len;
            if (w.value_len > KV_BIG_VALUE) {
                /* Earlier records of this shard go first (they may set the same key). */
                if ((rc = flush_shard(c, daemon, tag, &sb[s])) != PDCBB_OK ||
                    (rc = upload(c, daemon, w.value, w.value_len, &w.upload)) != PDCBB_OK)
                    break;
                w.op = PDCBB_KV_OP_SET_PART;
                w.value = NULL;
            }
        }
        size_t need = pdcbb_kv_wset_size(&w);
        if (sb[s].count && (sb[s].len + need > KV_MSG_BYTES || sb[s].count == UINT32_MAX)) {
            if ((rc = flush_shard(c, daemon, tag, &sb[s])) != PDCBB_OK)
                break;
        }
        if (sb[s].len + need > sb[s].cap) {
            size_t cap = sb[s].cap ? sb[s].cap : 65536;
            while (cap < sb[s].len + need)
                cap *= 2;
            uint8_t *nb = realloc(sb[s].buf, cap);
            if (nb == NULL) {
                rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
                break;
            }
            sb[s].buf = nb;
            sb[s].cap = cap;
        }
        sb[s].len += pdcbb_kv_wset_put(&w, sb[s].buf + sb[s].len);
        sb[s].count++;
    }
    for (uint32_t s = 0; s < kv->nshards && rc == PDCBB_OK; s++)
        rc = flush_shard(c, kv->shards[s], tag, &sb[s]);
    if (rc != PDCBB_OK && c->np) {
        /* Some batches went out: collect their answers before failing. */
        char *m = strdup(PDCbb_last_error_message());
        call_complete(c);
        client_fail(rc, "%s", m ? m : pdcbb_strerror(rc));
        free(m);
    }
    ret = call_run(c, rc, ev);
    c = NULL;
out:
    if (sb)
        for (uint32_t s = 0; s < nsb; s++)
            free(sb[s].buf);
    free(sb);
    if (c)
        call_free(c);
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCkv_set(pdcid_t kv_id, pdc_kv_tag_t tag, const pdc_kv_key_t *key, const void *value,
                 uint64_t value_len, pdc_kv_event_t *ev)
{
    pdc_kv_t r = {.value = value, .value_len = value_len};
    if (key)
        r.key = *key;
    else
        r.key.type = (pdc_kv_key_type_t)-1;
    if (key == NULL) {
        CLIENT_ENTER();
        client_fail(PDCBB_ERR_INVAL, "PDCkv_set: key is NULL");
        CLIENT_LEAVE();
        return FAIL;
    }
    return kv_write(kv_id, tag, 1, &r, NULL, 0, ev, "PDCkv_set");
}

perr_t PDCkv_set_list(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t n, const pdc_kv_t *recs,
                      pdc_kv_event_t *ev)
{
    return kv_write(kv_id, tag, n, recs, NULL, 0, ev, "PDCkv_set_list");
}

perr_t PDCkv_unlink_keys(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t n, const pdc_kv_key_t *keys,
                         pdc_kv_event_t *ev)
{
    return kv_write(kv_id, tag, n, NULL, keys, 1, ev, "PDCkv_unlink_keys");
}

/* ------------------------------------------------------------------ get_value */

typedef struct get_ctx {
    uint64_t tag;
    uint8_t key[PDCBB_KV_ENC_MAX];
    size_t klen;
    unsigned daemon;
    void *value;
    uint64_t *len;
    uint64_t cap;
    pdc_kv_tag_t *found_tag;
} get_ctx_t;

static pdcbb_err_t get_post(kv_call_t *c)
{
    get_ctx_t *g = c->ctx;
    pdcbb_kv_get_req_t q = {.id = c->kv.id, .tag = g->tag, .key = g->key, .key_len = (uint32_t)g->klen,
                            .value_off = 0, .max_len = g->cap < KV_GET_CHUNK ? g->cap : KV_GET_CHUNK};
    return call_post(c, g->daemon, PDCBB_OP_KV_GET, &q);
}

static pdcbb_err_t get_finish(kv_call_t *c)
{
    get_ctx_t *g = c->ctx;
    double deadline = 0;
    for (;;) {
        pdcbb_kv_get_rep_t p;
        void *keep;
        pdcbb_err_t rc = take(c, c->np - 1, &p, &keep, "a get");
        c->np--;
        if (rc == PDCBB_ERR_BUSY) {
            busy_pause(&deadline);
            if (client_now() > deadline)
                return client_fail(rc, "%s: KV object '%s': a transaction stayed in doubt (being committed) for %.0f s",
                                   c->fn, c->kv.name, client_g.cfg.request_timeout);
            if ((rc = get_post(c)) != PDCBB_OK)
                return rc;
            client_rpc_wait(c->p[c->np - 1], client_g.cfg.request_timeout);
            continue;
        }
        if (rc == PDCBB_ERR_NOT_FOUND) {
            char kp[96];
            key_print(&c->kv, g->key, g->klen, kp, sizeof(kp));
            return client_fail(rc, "%s: key %s of KV object '%s' has no visible version at tag %#llx",
                               c->fn, kp, c->kv.name, (unsigned long long)g->tag);
        }
        if (rc != PDCBB_OK)
            return rc;
        uint64_t total = p.total_len, ftag = p.found_tag;
        *g->len = total;
        if (g->found_tag)
            *g->found_tag = ftag;
        if (g->value == NULL && g->cap == 0) {
            client_rpc_release(PDCBB_OP_KV_GET, &p, keep);
            return PDCBB_OK; /* the size was asked */
        }
        if (total > g->cap) {
            client_rpc_release(PDCBB_OP_KV_GET, &p, keep);
            char kp[96];
            key_print(&c->kv, g->key, g->klen, kp, sizeof(kp));
            return client_fail(PDCBB_ERR_TOO_BIG, "%s: the value of key %s is %llu bytes, the buffer %llu",
                               c->fn, kp, (unsigned long long)total, (unsigned long long)g->cap);
        }
        if (p.value_len)
            memcpy(g->value, p.value, p.value_len);
        uint64_t have = p.value_len;
        client_rpc_release(PDCBB_OP_KV_GET, &p, keep);
        int changed = 0;
        while (have < total && !changed) {
            pdcbb_kv_get_req_t q = {.id = c->kv.id, .tag = g->tag, .key = g->key,
                                    .key_len = (uint32_t)g->klen, .value_off = have,
                                    .max_len = KV_GET_CHUNK};
            if ((rc = rt(c, g->daemon, PDCBB_OP_KV_GET, &q, &p, &keep, "a get")) != PDCBB_OK) {
                if (rc != PDCBB_ERR_NOT_FOUND && rc != PDCBB_ERR_BUSY)
                    return rc;
                changed = 1;
                break;
            }
            if (p.total_len != total || p.found_tag != ftag || p.value_len == 0)
                changed = 1;
            else {
                memcpy((uint8_t *)g->value + have, p.value, p.value_len);
                have += p.value_len;
            }
            client_rpc_release(PDCBB_OP_KV_GET, &p, keep);
        }
        if (!changed)
            return PDCBB_OK;
        /* The version changed between pieces: read it again from the start. */
        if ((rc = get_post(c)) != PDCBB_OK)
            return rc;
        client_rpc_wait(c->p[c->np - 1], client_g.cfg.request_timeout);
    }
}

perr_t PDCkv_get_value(pdcid_t kv_id, pdc_kv_tag_t tag, const pdc_kv_key_t *key, void *value,
                       uint64_t *len, pdc_kv_tag_t *found_tag, pdc_kv_event_t *ev)
{
    static const char fn[] = "PDCkv_get_value";
    perr_t ret = FAIL;
    client_kv_t *kv;
    CLIENT_ENTER();
    client_clear_error();
    if ((kv = kv_call_begin(kv_id, ev, fn)) == NULL)
        goto out;
    if (len == NULL || (value == NULL && *len != 0)) {
        client_fail(PDCBB_ERR_INVAL, "%s: %s", fn, len == NULL ? "len is NULL" : "value is NULL but *len is not 0");
        goto out;
    }
    if (tag > PDC_KV_MAXTAG) {
        client_fail(PDCBB_ERR_INVAL, "%s: tag %#llx is above MAXTAG", fn, (unsigned long long)tag);
        goto out;
    }
    kv_call_t *c = call_new(kv, fn, ev, get_finish, sizeof(get_ctx_t));
    if (c == NULL)
        goto out;
    get_ctx_t *g = c->ctx;
    if (enc_key(kv, key, g->key, &g->klen, fn) != PDCBB_OK) {
        call_free(c);
        goto out;
    }
    g->tag = tag;
    g->daemon = kv->shards[pdcbb_kv_shard_of(kv->sharding, kv->key_type, kv->nshards, g->key, g->klen)];
    g->value = value;
    g->len = len;
    g->cap = *len;
    g->found_tag = found_tag;
    ret = call_run(c, get_post(c), ev);
out:
    CLIENT_LEAVE();
    return ret;
}

/* ------------------------------------------------------------------ get_num */

static pdcbb_err_t tgen_check(kv_call_t *c, uint64_t tag, uint32_t n, const unsigned *daemons,
                              const uint64_t *tgen0);

typedef struct num_ctx {
    uint64_t tag;
    uint64_t *num;
    unsigned d[PDCBB_KV_SHARDS_MAX + 1];
    uint64_t tgen[PDCBB_KV_SHARDS_MAX + 1];
    uint32_t nd;
} num_ctx_t;

static pdcbb_err_t num_post(kv_call_t *c)
{
    num_ctx_t *g = c->ctx;
    g->nd = kv_daemons(&c->kv, g->d);
    for (uint32_t i = 0; i < g->nd; i++) {
        pdcbb_kv_count_req_t q = {.id = c->kv.id, .tag = g->tag};
        pdcbb_err_t rc = call_post(c, g->d[i], PDCBB_OP_KV_COUNT, &q);
        if (rc != PDCBB_OK)
            return rc;
    }
    return PDCBB_OK;
}

static pdcbb_err_t num_finish(kv_call_t *c)
{
    num_ctx_t *g = c->ctx;
    double deadline = 0;
    for (;;) {
        uint64_t sum = 0;
        pdcbb_err_t first = PDCBB_OK;
        for (size_t i = 0; i < c->np; i++) {
            if (c->p[i] == NULL)
                continue;
            if (!c->p[i]->done)
                client_rpc_wait(c->p[i], client_g.cfg.request_timeout);
            pdcbb_kv_count_rep_t p;
            void *keep;
            pdcbb_err_t rc = take(c, i, &p, &keep, "a count");
            if (rc == PDCBB_OK) {
                sum += p.count;
                if (i < g->nd)
                    g->tgen[i] = p.tgen;
                client_rpc_release(PDCBB_OP_KV_COUNT, &p, keep);
            } else if (first == PDCBB_OK || first == PDCBB_ERR_BUSY) {
                first = rc;
            }
        }
        c->np = 0;
        if (first == PDCBB_OK && g->nd > 1)
            first = tgen_check(c, g->tag, g->nd, g->d, g->tgen);
        if (first == PDCBB_ERR_BUSY) {
            busy_pause(&deadline);
            if (client_now() > deadline)
                return client_fail(first, "%s: KV object '%s': a transaction stayed in doubt", c->fn, c->kv.name);
            if ((first = num_post(c)) != PDCBB_OK)
                return first;
            continue;
        }
        if (first != PDCBB_OK)
            return first;
        *g->num = sum;
        return PDCBB_OK;
    }
}

perr_t PDCkv_get_num(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t *num, pdc_kv_event_t *ev)
{
    static const char fn[] = "PDCkv_get_num";
    perr_t ret = FAIL;
    client_kv_t *kv;
    CLIENT_ENTER();
    client_clear_error();
    if ((kv = kv_call_begin(kv_id, ev, fn)) == NULL)
        goto out;
    if (num == NULL || tag > PDC_KV_MAXTAG) {
        client_fail(PDCBB_ERR_INVAL, "%s: %s", fn, num == NULL ? "num is NULL" : "tag above MAXTAG");
        goto out;
    }
    kv_call_t *c = call_new(kv, fn, ev, num_finish, sizeof(num_ctx_t));
    if (c == NULL)
        goto out;
    num_ctx_t *g = c->ctx;
    g->tag = tag;
    g->num = num;
    ret = call_run(c, num_post(c), ev);
out:
    CLIENT_LEAVE();
    return ret;
}

/* ------------------------------------------------------------------ get_list / list_key */

/* A record of a listing, owned. */
typedef struct lrec {
    uint8_t *key;
    size_t klen;
    uint64_t tag;
    uint8_t *value; /* NULL when not fetched yet (or list_key) */
    uint64_t vlen;
} lrec_t;

/* A stream of one shard's records, fetched page by page in key order. */
typedef struct stream {
    unsigned daemon;
    lrec_t *r;          /* the current page; [pos, n) not consumed yet */
    size_t n, pos;
    int more;           /* the daemon has records after the page */
    int started;
    int done_before;    /* finished in an earlier page (resumed listing) */
    uint8_t *last;      /* key of the last record received: the next page starts after it */
    size_t lastlen;
    uint64_t skip;      /* records to skip on the daemon (RANGE offset) */
    client_pending_t *p;
    uint64_t gen, vgen; /* generation of the last reply; the one to validate against */
    int gen_known, check_gen;
    uint8_t cons[PDCBB_KV_ENC_MAX]; /* key of the last record consumed */
    size_t conslen;
    uint64_t tgen0;     /* transaction generation at the first reply of this listing */
    int has_tgen;
} stream_t;

typedef struct list_ctx {
    uint64_t tag, offset, count;
    int values;
    pdc_kv_t **out;
    uint64_t *nout;
    uint32_t ns;
    stream_t *st;
    lrec_t *res;
    size_t nres, capres;
    uint64_t consumed; /* records passed over by the merge (HASH offset) */
    int resume;        /* continue from the handle's cursor */
    int stale;         /* a shard changed since the cursor: list again from the offset */
    kv_cursor_t *cur;  /* copy of the cursor to resume from */
} list_ctx_t;

static void lrecs_free(lrec_t *r, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++) {
        free(r[i].key);
        free(r[i].value);
    }
}

static void streams_free(list_ctx_t *g)
{
    if (g->st == NULL)
        return;
    for (uint32_t s = 0; s < g->ns; s++) {
        if (g->st[s].p)
            client_pending_free(g->st[s].p);
        lrecs_free(g->st[s].r, g->st[s].pos, g->st[s].n);
        free(g->st[s].r);
        free(g->st[s].last);
    }
    free(g->st);
    g->st = NULL;
}

static void list_cleanup(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    streams_free(g);
    lrecs_free(g->res, 0, g->nres);
    free(g->res);
    g->res = NULL;
    g->nres = g->capres = 0;
}

static void list_cleanup_all(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    list_cleanup(c);
    free(g->cur);
    g->cur = NULL;
}

/* Every stream's posted page has arrived (PDCkv_event_test). */
static int list_ready(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    for (uint32_t i = 0; g->st && i < g->ns; i++)
        if (g->st[i].p && !g->st[i].p->done)
            return 0;
    return 1;
}

static pdcbb_err_t stream_post(kv_call_t *c, stream_t *s, uint64_t want)
{
    list_ctx_t *g = c->ctx;
    pdcbb_kv_list_req_t q = {.id = c->kv.id, .tag = g->tag, .skip = s->skip,
                             .max = want > KV_LIST_PAGE ? KV_LIST_PAGE : (want ? (uint32_t)want : 1),
                             .max_bytes = KV_LIST_BYTES,
                             .flags = g->values ? PDCBB_KV_LIST_VALUES : 0};
    if (s->last) {
        q.start = s->last;
        q.start_len = (uint32_t)s->lastlen;
        q.flags |= PDCBB_KV_LIST_AFTER;
    }
    s->started = 1;
    return kv_post(c, s->daemon, PDCBB_OP_KV_LIST, &q, &s->p);
}

/* Receive a stream's page (the previous one must be consumed). */
static pdcbb_err_t stream_take(kv_call_t *c, stream_t *s)
{
    list_ctx_t *g = c->ctx;
    client_pending_t *p = s->p;
    s->p = NULL;
    if (!p->done)
        client_rpc_wait(p, client_g.cfg.request_timeout);
    unsigned daemon = p->server;
    pdcbb_kv_list_rep_t rep;
    void *keep;
    pdcbb_err_t rc = client_rpc_finish(p, &rep, &keep);
    if (rc != PDCBB_OK)
        return rc == PDCBB_ERR_BUSY || client_g.drained ? rc : kv_refused(c, rc, daemon, "a listing");
    lrecs_free(s->r, s->pos, s->n);
    free(s->r);
    s->r = calloc(rep.count ? rep.count : 1, sizeof(*s->r));
    s->n = s->pos = 0;
    if (s->r == NULL) {
        client_rpc_release(PDCBB_OP_KV_LIST, &rep, keep);
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
    }
    size_t pos = 0;
    char why[128];
    for (uint32_t i = 0; i < rep.count; i++) {
        pdcbb_kv_wrec_t w;
        if (pdcbb_kv_wlist_get(rep.recs, rep.recs_len, &pos, &w) != PDCBB_OK ||
            pdcbb_kv_key_check(c->kv.key_type, w.key, w.key_len, 0, why, sizeof(why)) != PDCBB_OK) {
            rc = client_fail(PDCBB_ERR_PROTO, "%s: malformed listing from daemon %u", c->fn, daemon);
            break;
        }
        lrec_t *r = &s->r[s->n];
        r->klen = w.key_len;
        r->tag = w.tag;
        r->vlen = w.value_len;
        if ((r->key = malloc(w.key_len)) == NULL ||
            (w.included && g->values && (r->value = malloc(w.value_len ? w.value_len : 1)) == NULL)) {
            free(r->key);
            rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
            break;
        }
        memcpy(r->key, w.key, w.key_len);
        if (r->value && w.value_len)
            memcpy(r->value, w.value, w.value_len);
        s->n++;
    }
    if (rc == PDCBB_OK && s->n) {
        free(s->last);
        if ((s->last = malloc(s->r[s->n - 1].klen)) == NULL)
            rc = client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
        else {
            memcpy(s->last, s->r[s->n - 1].key, s->r[s->n - 1].klen);
            s->lastlen = s->r[s->n - 1].klen;
        }
    }
    s->more = rep.more != 0;
    s->skip = rep.skipped <= s->skip ? s->skip - rep.skipped : 0;
    s->gen = rep.gen;
    s->gen_known = 1;
    if (!s->has_tgen) {
        s->tgen0 = rep.tgen;
        s->has_tgen = 1;
    }
    if (s->check_gen && rep.gen != s->vgen && rc == PDCBB_OK) {
        g->stale = 1;
        rc = PDCBB_ERR_BUSY;
    }
    client_rpc_release(PDCBB_OP_KV_LIST, &rep, keep);
    return rc;
}

/* Move a stream's current record into the result (or drop it while skipping). */
static pdcbb_err_t consume(kv_call_t *c, stream_t *s, int keep_it)
{
    list_ctx_t *g = c->ctx;
    lrec_t *r = &s->r[s->pos++];
    memcpy(s->cons, r->key, r->klen);
    s->conslen = r->klen;
    if (!keep_it) {
        free(r->key);
        free(r->value);
        return PDCBB_OK;
    }
    if (g->nres == g->capres) {
        size_t cap = g->capres ? 2 * g->capres : 64;
        lrec_t *n = realloc(g->res, cap * sizeof(*n));
        if (n == NULL) {
            free(r->key);
            free(r->value);
            return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
        }
        g->res = n;
        g->capres = cap;
    }
    g->res[g->nres] = *r;
    g->res[g->nres].value = r->value;
    g->nres++;
    return PDCBB_OK;
}

/* Shards hold consecutive key ranges (RANGE, or a single shard): a listing walks them in order
 * and lets each daemon skip the offset; else (HASH) it merges them. */
static int walk_in_order(const client_kv_t *kv)
{
    return kv->sharding == PDCBB_KV_SHARD_RANGE || kv->nshards == 1;
}

static pdcbb_err_t streams_init(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    g->ns = c->kv.nshards;
    g->st = calloc(g->ns, sizeof(*g->st));
    if (g->st == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
    for (uint32_t s = 0; s < g->ns; s++)
        g->st[s].daemon = c->kv.shards[s];
    g->consumed = 0;
    if (g->count == 0 || g->resume)
        return PDCBB_OK; /* a resumed listing validates the cursor first (list_finish) */
    if (walk_in_order(&c->kv)) {
        /* Shards in key order: the first one skips the offset itself. */
        g->st[0].skip = g->offset;
        return stream_post(c, &g->st[0], g->count);
    }
    for (uint32_t s = 0; s < g->ns; s++) {
        pdcbb_err_t rc = stream_post(c, &g->st[s], g->offset + g->count);
        if (rc != PDCBB_OK)
            return rc;
    }
    return PDCBB_OK;
}

static pdcbb_err_t list_range(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    uint64_t skip_left = g->resume ? 0 : g->offset;
    for (uint32_t i = 0; i < g->ns && g->nres < g->count; i++) {
        stream_t *s = &g->st[i];
        pdcbb_err_t rc;
        if (s->done_before)
            continue;
        if (!s->started) {
            s->skip = skip_left;
            if ((rc = stream_post(c, s, g->count - g->nres)) != PDCBB_OK)
                return rc;
        }
        for (;;) {
            if (s->p) {
                if ((rc = stream_take(c, s)) != PDCBB_OK)
                    return rc;
                skip_left = s->skip;
            }
            while (s->pos < s->n && g->nres < g->count)
                if ((rc = consume(c, s, 1)) != PDCBB_OK)
                    return rc;
            if (g->nres >= g->count || !s->more)
                break;
            if ((rc = stream_post(c, s, g->count - g->nres)) != PDCBB_OK)
                return rc;
        }
    }
    return PDCBB_OK;
}

static pdcbb_err_t list_hash(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    pdcbb_err_t rc;
    if (g->count == 0)
        return PDCBB_OK;
    /* The first pages were posted; receive them. */
    for (uint32_t i = 0; i < g->ns; i++)
        if (g->st[i].p && (rc = stream_take(c, &g->st[i])) != PDCBB_OK)
            return rc;
    while (g->nres < g->count) {
        /* Refill the streams that ran dry and have more, together. */
        uint64_t want = g->offset > g->consumed ? g->offset - g->consumed : 0; /* (resumed: 0) */
        want += g->count - g->nres;
        int posted = 0;
        for (uint32_t i = 0; i < g->ns; i++) {
            stream_t *s = &g->st[i];
            if (s->pos == s->n && s->more) {
                if ((rc = stream_post(c, s, want)) != PDCBB_OK)
                    return rc;
                posted = 1;
            }
        }
        if (posted)
            for (uint32_t i = 0; i < g->ns; i++)
                if (g->st[i].p && (rc = stream_take(c, &g->st[i])) != PDCBB_OK)
                    return rc;
        /* The smallest current key over the streams. */
        stream_t *best = NULL;
        for (uint32_t i = 0; i < g->ns; i++) {
            stream_t *s = &g->st[i];
            if (s->pos == s->n)
                continue;
            if (best == NULL || pdcbb_kv_key_cmp(s->r[s->pos].key, s->r[s->pos].klen,
                                                 best->r[best->pos].key, best->r[best->pos].klen) < 0)
                best = s;
        }
        if (best == NULL)
            break;
        /* Take from it while it stays the smallest (every other stream's head is larger or
         * that stream must be refilled first). */
        int keep_it = g->consumed >= g->offset;
        g->consumed++;
        if ((rc = consume(c, best, keep_it)) != PDCBB_OK)
            return rc;
    }
    return PDCBB_OK;
}

/* Fetch a whole value (listings whose value did not fit in a reply). */
static pdcbb_err_t fetch_value(kv_call_t *c, unsigned daemon, lrec_t *r, uint64_t tag)
{
    uint64_t have = 0, total = r->vlen;
    uint8_t *buf = malloc(total ? total : 1);
    if (buf == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory for a value of %llu bytes", c->fn,
                           (unsigned long long)total);
    while (have < total) {
        pdcbb_kv_get_req_t q = {.id = c->kv.id, .tag = tag, .key = r->key, .key_len = (uint32_t)r->klen,
                                .value_off = have, .max_len = KV_GET_CHUNK};
        pdcbb_kv_get_rep_t p;
        void *keep;
        pdcbb_err_t rc = rt(c, daemon, PDCBB_OP_KV_GET, &q, &p, &keep, "a get");
        if (rc != PDCBB_OK) {
            free(buf);
            return rc;
        }
        int bad = p.total_len != total || p.found_tag != r->tag || p.value_len == 0;
        if (!bad)
            memcpy(buf + have, p.value, p.value_len);
        have += p.value_len;
        client_rpc_release(PDCBB_OP_KV_GET, &p, keep);
        if (bad) {
            free(buf);
            return PDCBB_ERR_BUSY; /* changed meanwhile: list again */
        }
    }
    r->value = buf;
    return PDCBB_OK;
}

/*
 * Resume from the cursor: every shard that was read validates its generation (a one-record
 * listing after its position), then the streams continue from their positions. Returns
 * PDCBB_ERR_BUSY with g->stale set when a shard changed.
 */
static pdcbb_err_t resume_init(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    kv_cursor_t *cu = g->cur;
    pdcbb_err_t rc;
    for (uint32_t i = 0; i < g->ns; i++) {
        stream_t *s = &g->st[i];
        kv_shard_pos_t *sp = &cu->sh[i];
        if (sp->poslen) {
            if ((s->last = malloc(sp->poslen)) == NULL)
                return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", c->fn);
            memcpy(s->last, sp->pos, sp->poslen);
            s->lastlen = sp->poslen;
            memcpy(s->cons, sp->pos, sp->poslen);
            s->conslen = sp->poslen;
        }
        if (!sp->started)
            continue;
        if (!sp->gen_known) {
            g->stale = 1;
            return PDCBB_ERR_BUSY;
        }
        s->check_gen = 1;
        s->vgen = sp->gen;
        s->started = 1;
        if (sp->done) {
            /* nothing after its position: a one-record probe checks that with the generation */
            s->done_before = 1;
        }
        if ((rc = stream_post(c, s, sp->done ? 1 : g->count)) != PDCBB_OK)
            return rc;
    }
    for (uint32_t i = 0; i < g->ns; i++) {
        stream_t *s = &g->st[i];
        if (s->p == NULL)
            continue;
        /* a changed generation makes stream_take answer BUSY with g->stale set */
        if ((rc = stream_take(c, s)) != PDCBB_OK)
            return rc;
        if (s->done_before) {
            /* unchanged and finished: its probe's records were already passed */
            lrecs_free(s->r, s->pos, s->n);
            s->n = s->pos = 0;
            s->more = 0;
        }
    }
    if (!walk_in_order(&c->kv))
        g->consumed = g->offset; /* HASH: the offset is behind the positions */
    return PDCBB_OK;
}

/*
 * A read of several shards is consistent only if no transaction was prepared or committed on
 * one of them while it read (it could have read one shard before a commit and another after):
 * ask each daemon read for its transaction generation again. Returns PDCBB_ERR_BUSY if one
 * changed (read again), PDCBB_OK if none did.
 */
static pdcbb_err_t tgen_check(kv_call_t *c, uint64_t tag, uint32_t n, const unsigned *daemons,
                              const uint64_t *tgen0)
{
    client_pending_t *p[PDCBB_KV_SHARDS_MAX + 1];
    pdcbb_err_t rc = PDCBB_OK, first = PDCBB_OK;
    uint32_t np = 0;
    for (uint32_t i = 0; i < n; i++) {
        pdcbb_kv_list_req_t q = {.id = c->kv.id, .tag = tag, .max = 1, .max_bytes = 4096};
        if ((rc = kv_post(c, daemons[i], PDCBB_OP_KV_LIST, &q, &p[np])) != PDCBB_OK)
            break;
        np++;
    }
    for (uint32_t i = 0; i < np; i++) {
        client_rpc_wait(p[i], client_g.cfg.request_timeout);
        pdcbb_kv_list_rep_t rep;
        void *keep;
        pdcbb_err_t r2 = client_rpc_finish(p[i], &rep, &keep);
        if (r2 == PDCBB_OK) {
            if (rep.tgen != tgen0[i] && first == PDCBB_OK)
                first = PDCBB_ERR_BUSY;
            client_rpc_release(PDCBB_OP_KV_LIST, &rep, keep);
        } else if (first == PDCBB_OK || first == PDCBB_ERR_BUSY) {
            first = r2;
        }
    }
    return rc != PDCBB_OK ? rc : first;
}

static pdcbb_err_t list_tgen_check(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    unsigned d[PDCBB_KV_SHARDS_MAX];
    uint64_t t0[PDCBB_KV_SHARDS_MAX];
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->ns; i++)
        if (g->st[i].has_tgen) {
            d[n] = g->st[i].daemon;
            t0[n++] = g->st[i].tgen0;
        }
    return n > 1 ? tgen_check(c, g->tag, n, d, t0) : PDCBB_OK;
}

/* Remember where this listing ended on the handle (if it is still open). */
static void cursor_save(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    client_kv_t *kv = client_handle_get(c->hid, CLIENT_H_KV, NULL);
    if (kv == NULL || kv->id != c->kv.id)
        return;
    free(kv->cur);
    kv->cur = NULL;
    kv_cursor_t *cu = calloc(1, sizeof(*cu) + g->ns * sizeof(kv_shard_pos_t));
    if (cu == NULL)
        return;
    cu->tag = g->tag;
    cu->next_off = g->offset + g->nres;
    cu->ns = g->ns;
    for (uint32_t i = 0; i < g->ns; i++) {
        stream_t *s = &g->st[i];
        kv_shard_pos_t *sp = &cu->sh[i];
        sp->started = s->started || s->done_before;
        sp->done = s->done_before || (s->started && s->p == NULL && s->pos == s->n && !s->more);
        sp->gen = s->gen_known ? s->gen : s->vgen;
        sp->gen_known = s->gen_known || s->check_gen;
        sp->poslen = s->conslen;
        memcpy(sp->pos, s->cons, s->conslen);
        /* a RANGE shard read only through its daemon-side skip has no position to resume at */
        if (sp->started && !sp->done && sp->poslen == 0 && walk_in_order(&c->kv)) {
            free(cu);
            return;
        }
        if (s->p != NULL) { /* a page still in flight: its records were not seen */
            free(cu);
            return;
        }
    }
    kv->cur = cu;
}

static pdcbb_err_t list_finish(kv_call_t *c)
{
    list_ctx_t *g = c->ctx;
    double deadline = 0;
    pdcbb_err_t rc;
    for (;;) {
        rc = g->resume && g->count ? resume_init(c) : PDCBB_OK;
        if (rc == PDCBB_OK)
            rc = walk_in_order(&c->kv) ? list_range(c) : list_hash(c);
        for (size_t i = 0; rc == PDCBB_OK && g->values && i < g->nres; i++)
            if (g->res[i].value == NULL) {
                uint32_t sh = pdcbb_kv_shard_of(c->kv.sharding, c->kv.key_type, c->kv.nshards,
                                                g->res[i].key, g->res[i].klen);
                rc = fetch_value(c, c->kv.shards[sh], &g->res[i], g->tag);
            }
        if (rc == PDCBB_OK)
            rc = list_tgen_check(c);
        if (rc != PDCBB_ERR_BUSY && rc != PDCBB_ERR_NOT_FOUND)
            break;
        list_cleanup(c);
        if (g->stale) {
            /* The object changed since the cursor: list from the offset. */
            g->stale = 0;
            g->resume = 0;
            if ((rc = streams_init(c)) != PDCBB_OK)
                return rc;
            continue;
        }
        /* A transaction was being committed (or a value changed under the listing): again. */
        busy_pause(&deadline);
        if (client_now() > deadline)
            return client_fail(PDCBB_ERR_BUSY, "%s: KV object '%s': a transaction stayed in doubt", c->fn, c->kv.name);
        if ((rc = streams_init(c)) != PDCBB_OK)
            return rc;
    }
    if (rc != PDCBB_OK)
        return rc;
    /* One block: the records, then keys and values. */
    size_t total = g->nres * sizeof(pdc_kv_t);
    for (size_t i = 0; i < g->nres; i++)
        total += g->res[i].klen + (g->values ? g->res[i].vlen : 0) + 8;
    pdc_kv_t *out = malloc(total ? total : 1);
    if (out == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory for %zu records", c->fn, g->nres);
    uint8_t *heap = (uint8_t *)(out + g->nres);
    for (size_t i = 0; i < g->nres; i++) {
        lrec_t *r = &g->res[i];
        pdc_kv_t *o = &out[i];
        memset(o, 0, sizeof(*o));
        o->key.type = (pdc_kv_key_type_t)c->kv.key_type;
        if (c->kv.key_type == PDCBB_KV_INT)
            o->key.i = pdcbb_kv_dec_int(r->key);
        else if (c->kv.key_type == PDCBB_KV_FLOAT)
            o->key.f = pdcbb_kv_dec_float(r->key);
        else {
            memcpy(heap, r->key, r->klen); /* NUL-terminated encoding */
            o->key.str = (const char *)heap;
            heap += r->klen;
        }
        o->tag = r->tag;
        if (g->values) {
            if (r->vlen)
                memcpy(heap, r->value, r->vlen);
            o->value = heap;
            o->value_len = r->vlen;
            heap += r->vlen;
        }
    }
    *g->out = out;
    *g->nout = g->nres;
    cursor_save(c);
    return PDCBB_OK;
}

static perr_t kv_list(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t offset, uint64_t count,
                      pdc_kv_t **recs, uint64_t *n, pdc_kv_event_t *ev, int values, const char *fn)
{
    perr_t ret = FAIL;
    client_kv_t *kv;
    CLIENT_ENTER();
    client_clear_error();
    if ((kv = kv_call_begin(kv_id, ev, fn)) == NULL)
        goto out;
    if (recs == NULL || n == NULL || tag > PDC_KV_MAXTAG) {
        client_fail(PDCBB_ERR_INVAL, "%s: %s", fn,
                    recs == NULL || n == NULL ? "recs or n is NULL" : "tag above MAXTAG");
        goto out;
    }
    kv_call_t *c = call_new(kv, fn, ev, list_finish, sizeof(list_ctx_t));
    if (c == NULL)
        goto out;
    c->cleanup = list_cleanup_all;
    c->ready = list_ready;
    c->hid = kv_id;
    list_ctx_t *g = c->ctx;
    if (kv->cur && kv->cur->tag == tag && kv->cur->next_off == offset && offset > 0 &&
        kv->cur->ns == kv->nshards) {
        size_t sz = sizeof(kv_cursor_t) + kv->cur->ns * sizeof(kv_shard_pos_t);
        if ((g->cur = malloc(sz)) != NULL) {
            memcpy(g->cur, kv->cur, sz);
            g->resume = 1;
        }
    }
    g->tag = tag;
    g->offset = offset;
    g->count = count;
    g->values = values;
    g->out = recs;
    g->nout = n;
    ret = call_run(c, streams_init(c), ev);
out:
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCkv_get_list(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t offset, uint64_t count,
                      pdc_kv_t **recs, uint64_t *n, pdc_kv_event_t *ev)
{
    return kv_list(kv_id, tag, offset, count, recs, n, ev, 1, "PDCkv_get_list");
}

perr_t PDCkv_list_key(pdcid_t kv_id, pdc_kv_tag_t tag, uint64_t offset, uint64_t count,
                      pdc_kv_t **recs, uint64_t *n, pdc_kv_event_t *ev)
{
    return kv_list(kv_id, tag, offset, count, recs, n, ev, 0, "PDCkv_list_key");
}

void PDCkv_list_free(pdc_kv_t *recs) { free(recs); }

/* ------------------------------------------------------------------ transactions */

static pdcbb_err_t trans_all(kv_call_t *c, uint64_t tag, uint32_t mode, int *nok, int *nnf,
                             pdcbb_err_t *other)
{
    unsigned d[PDCBB_KV_SHARDS_MAX + 1];
    uint32_t nd = kv_daemons(&c->kv, d);
    *nok = *nnf = 0;
    *other = PDCBB_OK;
    for (uint32_t i = 0; i < nd; i++) {
        pdcbb_kv_trans_req_t q = {.id = c->kv.id, .tag = tag, .mode = mode};
        pdcbb_err_t rc = call_post(c, d[i], PDCBB_OP_KV_TRANS, &q);
        if (rc != PDCBB_OK)
            return rc;
    }
    for (size_t i = 0; i < c->np; i++) {
        client_rpc_wait(c->p[i], client_g.cfg.request_timeout);
        pdcbb_kv_trans_rep_t p;
        void *keep;
        pdcbb_err_t rc = take(c, i, &p, &keep, "a transaction step");
        if (rc == PDCBB_OK) {
            (*nok)++;
            client_rpc_release(PDCBB_OP_KV_TRANS, &p, keep);
        } else if (rc == PDCBB_ERR_NOT_FOUND || rc == PDCBB_ERR_EXISTS) {
            (*nnf)++;
            if (*other == PDCBB_OK)
                *other = rc;
        } else if (*other == PDCBB_OK || *other == PDCBB_ERR_NOT_FOUND || *other == PDCBB_ERR_EXISTS) {
            *other = rc;
        }
    }
    c->np = 0;
    return PDCBB_OK;
}

static pdcbb_err_t no_finish(kv_call_t *c)
{
    (void)c;
    return PDCBB_OK;
}

static perr_t kv_trans(pdcid_t kv_id, pdc_kv_tag_t tag, int what, const char *fn)
{
    perr_t ret = FAIL;
    client_kv_t *kv;
    kv_call_t *c = NULL;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK || (kv = kv_get(kv_id, fn)) == NULL)
        goto out;
    if (tag == PDC_KV_NULLTAG || tag >= PDC_KV_MAXTAG) {
        client_fail(PDCBB_ERR_INVAL, "%s: tag %#llx cannot be a transaction of KV object '%s' (0 < tag < MAXTAG)",
                    fn, (unsigned long long)tag, kv->name);
        goto out;
    }
    if ((c = call_new(kv, fn, NULL, no_finish, 0)) == NULL)
        goto out;
    int nok, nnf;
    pdcbb_err_t other, rc;
    if (what == PDCBB_KV_TRANS_START) {
        if ((rc = trans_all(c, tag, PDCBB_KV_TRANS_START, &nok, &nnf, &other)) != PDCBB_OK)
            goto out;
        if (other != PDCBB_OK) {
            /* Undo the shards that opened it, then report. */
            char *m = strdup(PDCbb_last_error_message());
            if (nok) {
                int a, b;
                pdcbb_err_t o;
                trans_all(c, tag, PDCBB_KV_TRANS_ABORT, &a, &b, &o);
            }
            if (other == PDCBB_ERR_EXISTS)
                client_fail(other, "%s: transaction %#llx of KV object '%s' is already open or committed",
                            fn, (unsigned long long)tag, kv->name);
            else
                client_fail(other, "%s", m ? m : pdcbb_strerror(other));
            free(m);
            goto out;
        }
    } else if (what == PDCBB_KV_TRANS_COMMIT) {
        /* Phase 1: every shard prepares (readers of its records then wait for the outcome). */
        if ((rc = trans_all(c, tag, PDCBB_KV_TRANS_PREPARE, &nok, &nnf, &other)) != PDCBB_OK)
            goto out;
        if (other != PDCBB_OK) {
            if (other == PDCBB_ERR_NOT_FOUND)
                client_fail(other, "%s: transaction %#llx of KV object '%s' is not open%s", fn,
                            (unsigned long long)tag, kv->name, nok ? " on every shard" : "");
            goto out;
        }
        /* Phase 2: every shard commits. */
        if ((rc = trans_all(c, tag, PDCBB_KV_TRANS_COMMIT, &nok, &nnf, &other)) != PDCBB_OK || other != PDCBB_OK)
            goto out;
    } else {
        if ((rc = trans_all(c, tag, PDCBB_KV_TRANS_ABORT, &nok, &nnf, &other)) != PDCBB_OK)
            goto out;
        if (other != PDCBB_OK && other != PDCBB_ERR_NOT_FOUND)
            goto out;
        if (nok == 0) {
            client_fail(PDCBB_ERR_NOT_FOUND, "%s: transaction %#llx of KV object '%s' is not open", fn,
                        (unsigned long long)tag, kv->name);
            goto out;
        }
    }
    ret = SUCCEED;
out:
    if (c)
        call_free(c);
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCkv_trans_start(pdcid_t kv_id, pdc_kv_tag_t tag)
{
    return kv_trans(kv_id, tag, PDCBB_KV_TRANS_START, "PDCkv_trans_start");
}

perr_t PDCkv_trans_commit(pdcid_t kv_id, pdc_kv_tag_t tag)
{
    return kv_trans(kv_id, tag, PDCBB_KV_TRANS_COMMIT, "PDCkv_trans_commit");
}

perr_t PDCkv_trans_abort(pdcid_t kv_id, pdc_kv_tag_t tag)
{
    return kv_trans(kv_id, tag, PDCBB_KV_TRANS_ABORT, "PDCkv_trans_abort");
}
