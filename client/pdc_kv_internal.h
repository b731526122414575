/*
 * pdc_kv_internal.h - what the parts of the KV client (pdc_kv*.c, include/pdc_kv.h) share: the
 * handle of an open KV object, the non-blocking call (kv_call_t) every operation is built on,
 * and the helpers of both. Internal to libpdc; everything runs under the library lock.
 *
 *   pdc_kv.c        handles: create, open, close, info, delete; key encoding
 *   pdc_kv_call.c   calls and events: posting, finishing, PDCkv_event_test/_wait
 *   pdc_kv_write.c  PDCkv_set, PDCkv_set_list, PDCkv_unlink_keys (batches, large values)
 *   pdc_kv_get.c    PDCkv_get_value, PDCkv_get_num
 *   pdc_kv_list.c   PDCkv_get_list, PDCkv_list_key (ordered listings over shards, cursors)
 *   pdc_kv_trans.c  PDCkv_trans_start/_commit/_abort (two-phase commit)
 */
#ifndef PDC_KV_INTERNAL_H
#define PDC_KV_INTERNAL_H

#include "client.h"
#include "pdc_kv.h"
#include "pdcbb_kv.h"

/* Largest value slice asked for in one KV_GET. */
#define KV_GET_CHUNK ((uint64_t)8 << 20)

/* An open KV object: the state behind a KV handle (CLIENT_H_KV). */
typedef struct client_kv {
    uint64_t id;
    uint64_t cont_id;
    char *name;
    uint32_t key_type, sharding, max_key_len, nshards;
    uint64_t max_value_len;
    uint32_t shards[PDCBB_KV_SHARDS_MAX];
    struct kv_cursor *cur; /* where the last listing ended (owned by the handle, not by copies) */
} client_kv_t;

/* ------------------------------------------------------------------ calls and events */

/* One KV operation: its posted requests and the function that finishes it (pdc_kv_call.c). */
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

/* pdc_kv.c: the open KV object id (NULL, error recorded, when it is not one). */
client_kv_t *kv_get(pdcid_t id, const char *fn);
/* pdc_kv.c: start a call on an open KV object (clears the last error, checks kv_id and ev). */
client_kv_t *kv_call_begin(pdcid_t kv_id, const pdc_kv_event_t *ev, const char *fn);
/* pdc_kv.c: encode key for kv into out (PDCBB_KV_ENC_MAX bytes), *len its length. */
pdcbb_err_t kv_enc_key(const client_kv_t *kv, const pdc_kv_key_t *key, uint8_t *out,
                       size_t *len, const char *fn);
/* pdc_kv.c: an encoded key of kv, printable, into out (n bytes). */
void kv_key_print(const client_kv_t *kv, const uint8_t *enc, size_t len, char *out, size_t n);
/* pdc_kv.c: the distinct daemons of kv into out, its home daemon last; returns how many. */
uint32_t kv_daemons(const client_kv_t *kv, unsigned *out);

/* pdc_kv_call.c: send one request of c (over shm when c is blocking and it can), into *p. */
pdcbb_err_t kv_post(const kv_call_t *c, unsigned server, unsigned op, const void *req,
                    client_pending_t **p);
/* pdc_kv_call.c: send one request of c and keep it among c's pending requests. */
pdcbb_err_t kv_call_post(kv_call_t *c, unsigned server, unsigned op, const void *req);
/* pdc_kv_call.c: free c with its pending requests (after its cleanup function). */
void kv_call_free(kv_call_t *c);
/* pdc_kv_call.c: wait for every posted request of c, then finish it (once); its status. */
pdcbb_err_t kv_call_complete(kv_call_t *c);
/* pdc_kv_call.c: run a posted call: blocking without ev (freed), else handed to ev. */
perr_t kv_call_run(kv_call_t *c, pdcbb_err_t post_rc, pdc_kv_event_t *ev);
/* pdc_kv_call.c: a new call on kv (copied) with ctx_size bytes of zeroed context at c->ctx. */
kv_call_t *kv_call_new(const client_kv_t *kv, const char *fn, const pdc_kv_event_t *ev,
                       pdcbb_err_t (*finish)(kv_call_t *), size_t ctx_size);
/* pdc_kv_call.c: record a daemon's refusal of a request (what) on c's KV object. */
pdcbb_err_t kv_refused(const kv_call_t *c, pdcbb_err_t rc, unsigned daemon, const char *what);
/* pdc_kv_call.c: finish pending request i of c into rep; a daemon's refusal is described. */
pdcbb_err_t kv_take(kv_call_t *c, size_t i, void *rep, void **keep, const char *what);
/* pdc_kv_call.c: sleep a little before retrying an answer in doubt (sets *deadline once). */
void kv_busy_pause(double *deadline);
/* pdc_kv_call.c: one blocking round trip inside a finish function. */
pdcbb_err_t kv_rt(kv_call_t *c, unsigned server, unsigned op, const void *req, void *rep,
                  void **keep, const char *what);
/* pdc_kv_call.c: PDCBB_ERR_BUSY if a transaction generation of the n daemons read changed. */
pdcbb_err_t kv_tgen_check(kv_call_t *c, uint64_t tag, uint32_t n, const unsigned *daemons,
                          const uint64_t *tgen0);

#endif
