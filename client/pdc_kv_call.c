/*
 * pdc_kv_call.c - the calls every KV operation is made of (pdc_kv_internal.h), and the events
 * of non-blocking calls (PDCkv_event_test, PDCkv_event_wait).
 *
 * Every call is a kv_call_t: a set of posted requests (client_rpc_post) and a finish function
 * that collects their replies and fills the caller's outputs, possibly with more round trips
 * (the rest of a value larger than one reply, the next pages of a listing, retries of an answer
 * "in doubt" while a transaction is being committed). A blocking call posts and finishes at
 * once; a call with an event posts and returns, PDCkv_event_test finishes it once its requests
 * are answered, PDCkv_event_wait finishes it and returns its result.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pdc_kv_internal.h"

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
pdcbb_err_t kv_post(const kv_call_t *c, unsigned server, unsigned op, const void *req,
                    client_pending_t **p)
{
    if (c->sync && client_shm_call(server, op, req, p))
        return PDCBB_OK;
    return client_rpc_post(server, op, req, NULL, 0, NULL, 0, p);
}

pdcbb_err_t kv_call_post(kv_call_t *c, unsigned server, unsigned op, const void *req)
{
    client_pending_t *p;
    pdcbb_err_t rc = kv_post(c, server, op, req, &p);
    if (rc != PDCBB_OK)
        return rc;
    return call_add(c, p);
}

void kv_call_free(kv_call_t *c)
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
pdcbb_err_t kv_call_complete(kv_call_t *c)
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
perr_t kv_call_run(kv_call_t *c, pdcbb_err_t post_rc, pdc_kv_event_t *ev)
{
    if (post_rc != PDCBB_OK) {
        kv_call_free(c);
        return FAIL;
    }
    if (ev == NULL) {
        pdcbb_err_t rc = kv_call_complete(c);
        kv_call_free(c);
        return rc == PDCBB_OK ? SUCCEED : FAIL;
    }
    ev->impl_ = c;
    ev->state_ = 1;
    ev->status_ = 0;
    return SUCCEED;
}

kv_call_t *kv_call_new(const client_kv_t *kv, const char *fn, const pdc_kv_event_t *ev,
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
        if (kv_call_complete(c) != PDCBB_OK) {
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
    pdcbb_err_t rc = kv_call_complete(c);
    if (rc != PDCBB_OK && was_finished)
        client_fail(rc, "%s", c->msg ? c->msg : pdcbb_strerror(rc));
    ev->status_ = rc;
    ev->state_ = 0;
    ev->impl_ = NULL;
    kv_call_free(c);
    ret = rc == PDCBB_OK ? SUCCEED : FAIL;
out:
    CLIENT_LEAVE();
    return ret;
}

/* Describe a daemon's refusal of a request on kv. */
pdcbb_err_t kv_refused(const kv_call_t *c, pdcbb_err_t rc, unsigned daemon, const char *what)
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
pdcbb_err_t kv_take(kv_call_t *c, size_t i, void *rep, void **keep, const char *what)
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
void kv_busy_pause(double *deadline)
{
    if (*deadline == 0)
        *deadline = client_now() + client_g.cfg.request_timeout;
    struct timespec ts = {0, 500000};
    CLIENT_LEAVE();
    nanosleep(&ts, NULL);
    CLIENT_ENTER();
}

/* One blocking round trip inside a finish. */
pdcbb_err_t kv_rt(kv_call_t *c, unsigned server, unsigned op, const void *req, void *rep,
                  void **keep, const char *what)
{
    pdcbb_err_t rc = kv_call_post(c, server, op, req);
    if (rc != PDCBB_OK)
        return rc;
    size_t i = c->np - 1;
    client_rpc_wait(c->p[i], client_g.cfg.request_timeout);
    rc = kv_take(c, i, rep, keep, what);
    c->np--;
    return rc;
}

/*
 * A read of several shards is consistent only if no transaction was prepared or committed on
 * one of them while it read (it could have read one shard before a commit and another after):
 * ask each daemon read for its transaction generation again. Returns PDCBB_ERR_BUSY if one
 * changed (read again), PDCBB_OK if none did.
 */
pdcbb_err_t kv_tgen_check(kv_call_t *c, uint64_t tag, uint32_t n, const unsigned *daemons,
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
