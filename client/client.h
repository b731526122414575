/*
 * client.h - internals of libpdc, the pdcbb client library.
 *
 * Threading: every public entry point takes the library's one (recursive) lock for its whole
 * duration, so calls may come from any thread and are serialised; the UCX worker is only
 * touched under that lock. The precise cause of a failure is kept per thread (client_fail)
 * and returned by PDCbb_last_error*().
 *
 * Layout: client_handle.c (checked pdcid_t handles), client_rpc.c (UCX connections and one
 * request/reply round trip, stubs named client_op_<op> like the daemon's bbd_op_<op>),
 * client_shm.c (the shared-memory channel to this node's daemons for synchronous calls),
 * client_discovery.c (finding the job's daemons: the job directory and JOB_TABLE), client_drained.c (a
 * drained job directory served read-only in place of daemons), pdc_*.c (the PDC API).
 */
#ifndef CLIENT_H
#define CLIENT_H

#include <pthread.h>
#include <stdint.h>

#include "pdc.h"
#include "pdcbb_config.h"
#include "pdcbb_error.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_proto.h"
#include "pdcbb_ucx.h"

/* ------------------------------------------------------------------ handles */

typedef enum client_hkind {
    CLIENT_H_NONE = 0,
    CLIENT_H_PDC = 1,
    CLIENT_H_CONT_PROP = 2,
    CLIENT_H_OBJ_PROP = 3,
    CLIENT_H_CONT = 4,
    CLIENT_H_OBJ = 5,
    CLIENT_H_REGION = 6,
    CLIENT_H_TRANSFER = 7,
    CLIENT_H_KV = 8,
    CLIENT_H_KIND_MAX_
} client_hkind_t;

/*
 * A pdcid_t is kind (8 bits) | generation (24 bits) | slot index + 1 (32 bits): never 0, and a
 * closed or foreign id is detected instead of dereferenced.
 */
pdcid_t client_handle_new(client_hkind_t kind, void *ptr);
/* The object behind id if it is live and of kind; else NULL with *err BAD_ID or WRONG_TYPE. */
void *client_handle_get(pdcid_t id, client_hkind_t kind, pdcbb_err_t *err);
/* pdc_init.c: the object behind id once the library is initialised and id is a live handle of
 * kind; else NULL with the error recorded ("<fn>: <id> is not a live <what> id"). */
void *client_handle_live(pdcid_t id, client_hkind_t kind, const char *what, const char *fn);
/* Kind of a live id, CLIENT_H_NONE if stale or invalid. */
client_hkind_t client_handle_kind(pdcid_t id);
/* Invalidate id and return its object (NULL if not live / wrong kind). */
void *client_handle_remove(pdcid_t id, client_hkind_t kind);
/* Call fn for every live handle of kind (kind NONE: all); fn may remove the handle. */
void client_handle_foreach(client_hkind_t kind, void (*fn)(pdcid_t id, void *ptr, void *arg),
                           void *arg);
/* Number of live handles (tests). */
size_t client_handle_count(void);
/* Drop the whole table (PDCclose; objects must have been freed by the caller). */
void client_handle_reset(void);
const char *client_hkind_name(client_hkind_t kind);

/* ------------------------------------------------------------------ errors */

/* Record err as the calling thread's last error with a formatted message; returns err. */
pdcbb_err_t client_fail(pdcbb_err_t err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void client_clear_error(void);
/* Check a name the application gave (kind: "container", "object", "tag", "KV object") against
 * the name rule (common/pdcbb_name.h), before anything is sent. PDCBB_OK, or the thread's error
 * set to PDCBB_ERR_INVAL (NULL or empty), PDCBB_ERR_TOO_BIG or PDCBB_ERR_BAD_NAME with a
 * message naming fn, the kind, the rule and the byte offset ("PDCobj_create: object name is not
 * valid UTF-8 at byte 1"). */
pdcbb_err_t client_check_name(const char *fn, const char *kind, const char *name);

/* ------------------------------------------------------------------ state */

typedef struct client_server {
    pdcbb_endpoint_t info;   /* address, rank and token */
    char record_path[PATH_MAX]; /* endpoint record file, if this process can read it */
    ucp_ep_h ep;
    int connected;
    int failed;              /* the connection failed; reconnect on next use */
    ucs_status_t fail_status;
    struct client_shm *shm;  /* shared-memory channel to a daemon of this node, or NULL */
    pid_t shm_pid_tried;     /* daemon pid a channel was last tried with (no retry per call) */
    uint64_t shm_calls;      /* requests answered over the channel */
} client_server_t;

typedef struct client_pending {
    struct client_pending *next;
    uint64_t req_id;
    unsigned server;
    unsigned via; /* the daemon it was sent to: server, or this node's (FORWARD) */
    unsigned op;
    int done;
    pdcbb_err_t status;      /* transport-level outcome */
    void *msg;               /* the request as sent (must live until the send completes) */
    size_t msg_len;
    void *sreq;              /* UCX send request, or NULL */
    void *buf;               /* the reply's control part, malloc'ed */
    size_t len;
    void *dest;              /* where a reply's bulk part goes (caller's), or NULL */
    size_t dest_len;
    void *bulk;              /* the bulk part as received: dest, or bulk_own */
    size_t bulk_len;
    void *bulk_own;          /* malloc'ed when dest was not given or too small */
    int receiving;           /* a rendezvous receive into bulk is in progress */
    int forward_failed;      /* forwarded, and this node's daemon could not deliver it */
    void *owner;             /* the transfer batch waiting for it (client_transfer.c) */
    char *why;               /* a drained job: why a region or the request failed, as the drain
                              * said it (a damaged extent, named), malloc'ed; else NULL */
} client_pending_t;

struct pdcbb_drain;

typedef struct client_state {
    int initialised;
    struct pdcbb_drain *drained; /* PDCBB_DRAINED_DIR: the drain served read-only, else NULL */
    pdcid_t pdc_id;
    pdcbb_config_t cfg;
    pdcbb_ucx_t ucx;
    client_server_t *servers;
    unsigned nservers;
    uint64_t job_id;
    uint64_t next_req_id;
    client_pending_t *pending;
    char discovery[16];
    size_t max_am_header;     /* largest control part of a message with a bulk part */
    char node[PDCBB_NODE_NAME_MAX];
    unsigned local_rank;     /* a daemon of this node: asked for the job's table */
    int forward;             /* requests for other nodes' daemons go through local_rank
                              * (FORWARD; configuration key forward, client_discover_table) */
    /* statistics for PDC_timing_report */
    uint64_t op_count[PDCBB_OP_MAX_];
    double op_seconds[PDCBB_OP_MAX_];
    int timing_stopped; /* PDC_timing_finalize until the next PDC_timing_init */
} client_state_t;

extern client_state_t client_g;
extern pthread_mutex_t client_lock;

#define CLIENT_ENTER() pthread_mutex_lock(&client_lock)
#define CLIENT_LEAVE() pthread_mutex_unlock(&client_lock)

/* Fail with NOT_INIT unless PDCinit succeeded. */
pdcbb_err_t client_check_init(void);

/* ------------------------------------------------------------------ discovery */

/*
 * Discovery in two steps around client_rpc_open: client_discover fills client_g.cfg and the
 * records of this node's daemons (client_g.servers / nservers / job_id / local_rank);
 * client_discover_table then completes the table from a daemon of this node (JOB_TABLE) if the
 * job has daemons elsewhere. err gets the reason on failure. client_discovery_refresh asks again
 * for the record of one daemon of another node (it may have been restarted on a new port).
 */
pdcbb_err_t client_discover(char *err, size_t errlen);
pdcbb_err_t client_discover_table(char *err, size_t errlen);
pdcbb_err_t client_discovery_refresh(unsigned rank);
void client_discovery_finalize(void);

/* ------------------------------------------------------------------ drained data */

/*
 * Read-only access to a drained job (PDCBB_DRAINED_DIR, docs/DRAIN-FORMAT.md). The library then
 * talks to no daemon: client_drained.c answers every request in-process, as one virtual daemon
 * (rank 0), from the drain's manifest and data files. Containers and objects get new meta ids
 * of daemon 0 (kind, 0, index + 1 in the manifest), every object is presented as
 * PDC_OBJ_STATIC (so a read is one piece for daemon 0) and every request that would change
 * something is answered with PDCBB_ERR_READ_ONLY. Called under the library lock.
 */

/*
 * Open the drain directory dir (pdcbb_drain_open) and set client_g up for it: one server, the
 * drained job's id, discovery "drained". Errors: those of pdcbb_drain_open (err says which file
 * was wrong, or that the drain is incomplete), PDCBB_ERR_NOMEM.
 */
pdcbb_err_t client_drained_open(const char *dir, char *err, size_t errlen);
/* Release the drain (PDCclose, failed PDCinit); accepts a library without one. */
void client_drained_close(void);
/* The drained job directory being served ("" when none). */
const char *client_drained_dir(void);
/* Why the last request client_drained_serve answered failed (or one of its regions), as the
 * drain said it: "object 'NAME' (id ID), extent K, bytes A..B: ...: CRC-32C mismatch ..."
 * (pdcbb_drain_read_box); "" when nothing failed. Valid until the next call. */
const char *client_drained_why(void);
/*
 * Answer request req (op's request struct) of id req_id as the virtual daemon would: *ctrl gets
 * the whole reply message (header with status, then the encoded reply body; malloc'ed, the
 * caller frees). A read's data goes to dest when it fits in dest_len bytes, else to a malloc'ed
 * buffer; *bulk (NULL when none) and *bulk_len say where, and *bulk != dest means the caller
 * frees it. Returns PDCBB_OK whenever a reply was built (the reply's status carries the op's
 * outcome), PDCBB_ERR_NOMEM / an encoding error otherwise.
 */
pdcbb_err_t client_drained_serve(unsigned op, uint64_t req_id, const void *req, void *dest,
                                 size_t dest_len, void **ctrl, size_t *ctrl_len, void **bulk,
                                 size_t *bulk_len);

/* ------------------------------------------------------------------ rpc */

pdcbb_err_t client_rpc_open(char *err, size_t errlen);
void client_rpc_close(void);

/*
 * One round trip: send request body req of op to server, wait for the reply and decode it into
 * rep (the op's reply struct). Strings and blobs in rep point into *keep, which the caller
 * releases with client_rpc_release(op, rep, *keep). On failure the thread's last error is set
 * with the op, the server and the cause (the daemon's status or the transport's).
 */
pdcbb_err_t client_rpc(unsigned server, unsigned op, const void *req, void *rep, void **keep);
void client_rpc_release(unsigned op, void *rep, void *keep);

/*
 * Asynchronous requests. client_rpc_post connects if needed and sends req (and bulk, as a
 * PDCBB_AM_ID_DATA message, which must stay valid until the request is finished); a reply's
 * bulk part is received into dest when it fits in dest_len bytes, else into a malloc'ed buffer
 * (p->bulk either way). client_rpc_wait progresses until p is done or timeout seconds pass.
 * client_rpc_finish decodes the reply into rep and frees p (the bulk part too: copy it first).
 */
pdcbb_err_t client_rpc_post(unsigned server, unsigned op, const void *req, const void *bulk,
                            size_t bulk_len, void *dest, size_t dest_len, client_pending_t **out);
void client_rpc_wait(client_pending_t *p, double timeout);
pdcbb_err_t client_rpc_finish(client_pending_t *p, void *rep, void **keep);
void client_pending_free(client_pending_t *p);
/*
 * Requests for many daemons in one GATHER (client_gather.c): reqs[i] (op's request body) for
 * daemon ranks[i], n of them, or with ranks NULL reqs[0] for every daemon of the job, sent to
 * this node's daemon, which carries them down the tree. fn is then called once per daemon asked
 * with its status and, on PDCBB_OK, its decoded reply and bulk part (valid during the call).
 * Returns an error (client_fail'ed, prefixed with what) only when the GATHER itself failed.
 */
typedef void (*client_gather_fn)(void *arg, unsigned rank, pdcbb_err_t status, const void *rep,
                                 const void *bulk, size_t bulk_len);
pdcbb_err_t client_gather(const char *what, unsigned op, const unsigned *ranks,
                          const void *const *reqs, size_t n, client_gather_fn fn, void *arg);
/* One non-blocking progress step; non-zero if something happened. */
int client_rpc_progress(void);
/* Sleep until the worker has an event or max_seconds pass (after progress found nothing). */
void client_rpc_idle(double max_seconds);
double client_now(void);

/*
 * client_shm.c: one synchronous request over the shared-memory channel to server (a daemon of
 * this node), when there is one and nothing of ours is outstanding on UCX to it. Returns 0 if
 * the request was not sent that way (use UCX), else 1 with *out a finished request for
 * client_rpc_finish (its status says whether the daemon answered). client_shm_close drops
 * server's channel (PDCclose; accepts a server without one).
 */
int client_shm_call(unsigned server, unsigned op, const void *req, client_pending_t **out);
void client_shm_close(unsigned server);

/* A request header for op to server: magic, version, a new request id, the server's token. */
void client_request_hdr(unsigned server, unsigned op, pdcbb_msg_hdr_t *h);

#ifdef ENABLE_MPI
/* Collective over comm: rank 0's outcome (status) and its n ids (malloc'ed, taken) reach every
 * rank. On success *out is malloc'ed (NULL when *n_res is 0); on failure every rank returns
 * the error, and ranks other than 0 record "fn: rank 0 failed". (PDC's *_mpi searches.) */
pdcbb_err_t client_bcast_ids(MPI_Comm comm, const char *fn, int32_t status, int32_t n,
                             uint64_t *ids, int *n_res, uint64_t **out);
#endif

/* Typed stubs, one per op: client_op_<op>(server, req, rep, keep). */
#define CLIENT_X_STUB(OP, val, lname, RQ, RP, ...)                                                 \
    static inline pdcbb_err_t client_op_##lname(unsigned server, const pdcbb_##lname##_req_t *q,   \
                                                pdcbb_##lname##_rep_t *p, void **keep)             \
    {                                                                                              \
        return client_rpc(server, PDCBB_OP_##OP, q, p, keep);                                      \
    }
PDCBB_OPS(CLIENT_X_STUB)
#undef CLIENT_X_STUB

/* Home daemon of a name. */
static inline unsigned client_home_of_name(const char *name)
{
    return pdcbb_home_server(name, client_g.nservers);
}

/* All ids of kind (PDCBB_META_KIND_CONT, or _OBJ of container cont_meta, 0 = all) from every
 * daemon, in *out (malloc'ed, *nout of them); pdc_iter.c. Under the library lock. */
pdcbb_err_t client_list_ids(unsigned kind, uint64_t cont_meta, uint64_t **out, size_t *nout);

/* ------------------------------------------------------------------ objects of the API */

/* PDC's opaque container property (PDCcont_prop_get_info returns it). */
struct _pdc_cont_prop {
    pdc_lifetime_t lifetime;
    pdcid_t pdc_id;
};
typedef struct _pdc_cont_prop client_cont_prop_t;

/* PDC's opaque iterator handle (cont_handle, obj_handle): one entry of a snapshot. */
struct client_iter;
struct _pdc_id_info {
    struct client_iter *iter;
    size_t index;
};

typedef struct client_obj_prop {
    struct pdc_obj_prop pub;       /* what PDCobj_prop_get_info returns; pub.dims owned here */
    uint32_t user_id;
    uint32_t time_step;
    char *app_name;
    char *data_loc;
    char *tags;
    void *buf;                     /* PDCprop_set_obj_buf */
} client_obj_prop_t;

typedef struct client_cont {
    uint64_t meta_id;
    char *name;
    pdc_lifetime_t lifetime;
    struct pdc_cont_info info;     /* what PDCcont_get_info returns */
} client_cont_t;

typedef struct client_obj {
    uint64_t meta_id;
    int deleted;                   /* PDCobj_del succeeded: transfers are refused */
    uint64_t cont_meta_id;
    pdcid_t cont_id;               /* local id of the container, 0 if opened by name */
    char *name;
    client_obj_prop_t prop;
    struct pdc_obj_info info;      /* what PDCobj_get_info returns */
    pdc_histogram_t *hist;         /* PDCquery_get_histogram's result, or NULL */
} client_obj_t;

/* A new handle of a container / an object another process opened (pdc_grow.c's collective
 * calls): meta id, name and lifetime; an OBJ_INFO reply body and the local container id (0:
 * none). 0 with the thread's error (NOMEM) on failure. */
pdcid_t client_cont_adopt(uint64_t meta_id, const char *name, pdc_lifetime_t lifetime,
                          const char *fn);
pdcid_t client_obj_adopt(const pdcbb_obj_info_rep_t *p, pdcid_t cont_id, const char *fn);
/* The open object behind a local id, or NULL with the thread's error naming fn (a closed id,
 * or the kind of handle it is). */
client_obj_t *client_obj_get(pdcid_t id, const char *fn);
/* pdc_grow.c: a write transfer of an object whose first dim is unlimited reaches row end
 * (exclusive): raise the object's extent on its home daemon unless it is known to be there. */
pdcbb_err_t client_grow_written(uint64_t obj_meta, uint64_t end);

/* Fill o (name, props, info) from an OBJ_INFO reply. */
pdcbb_err_t client_obj_from_reply(client_obj_t *o, const pdcbb_obj_info_rep_t *p);
void client_obj_free(client_obj_t *o);
void client_cont_free(client_cont_t *c);
void client_obj_prop_free(client_obj_prop_t *p);
pdcbb_err_t client_obj_prop_copy(client_obj_prop_t *dst, const client_obj_prop_t *src);
/* Release iteration snapshots and cached info structs (PDCclose). */
void client_iter_cleanup(void);
void client_info_cache_cleanup(void);
/* pdc_kv.c: free a KV object handle's state. */
void client_kv_free(void *kv);
/* pdc_kv.c hook for pdc_kv_migrate.c: id, container id and name of an open KV object. */
pdcbb_err_t client_kv_identity(pdcid_t kv_id, const char *fn, uint64_t *id, uint64_t *cont_id,
                               const char **name);

#endif
