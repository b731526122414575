/*
 * bbd.h - internals of pdc_bbd, the per-job burst-buffer daemon.
 *
 * The daemon is single-threaded: one UCX worker progressed by the event loop in bbd_server.c,
 * which also owns the connections and the queue of received requests. bbd_dispatch.c validates
 * each request (header, the connection's handshake or the shared-memory token, op, body) and runs
 * its handler inside one store transaction.
 * Handlers are named bbd_op_<op>, like the client stubs client_op_<op>, so both sides of an op
 * are one search away; each is in the file of its group of ops (bbd_meta.c containers, objects
 * and tags, bbd_data.c region data, bbd_kv.c KV objects, bbd_ns.c the mount's namespace...):
 * docs/INTERNALS.md "Which file handles each request" lists them, generated from the sources.
 * What the dispatcher does with an op (its transaction, group commit, shared memory, its place
 * in the queue) is its row of PDCBB_OPS (common/pdcbb_proto.h).
 * Everything but bbd_main.c is the static library pdcbb_bbd_core, which tests link to run the
 * real dispatcher in their own process (tests/unit/bbd_harness.h).
 */
#ifndef BBD_H
#define BBD_H

#include <limits.h>
#include <stdint.h>
#include <time.h>

#include "bbd_io.h"
#include "pdcbb_auth.h"
#include "pdcbb_config.h"
#include "pdcbb_grow.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_proto.h"
#include "pdcbb_stats.h"
#include "pdcbb_store.h"
#include "pdcbb_ucx.h"

typedef struct bbd_conn {
    struct bbd_conn *next;
    struct bbd_conn *prev;
    struct bbd *d; /* the daemon it is a connection of (for UCX's callbacks) */
    ucp_ep_h ep;
    uint64_t id;
    int dead;         /* peer error seen; ep closed */
    int refs;         /* queued requests that will reply on it */
    uint64_t direct_reserved; /* capacity held by DATA_DIRECT writes not yet DONE */
    uint64_t held_pass;       /* process_queue pass in which an earlier message of this
                                 connection was still waiting (its later ones wait too) */
    /* The handshake (common/pdcbb_auth.h): until AUTH proved the token, the daemon answers
     * only HELLO and AUTH on the connection, and closes it after cfg.auth_timeout. */
    int authenticated;
    int have_nonces;    /* a HELLO set the nonces (AUTH needs them) */
    int unauth_counted; /* counted in bbd_t.unauth_conns */
    uint8_t client_nonce[PDCBB_AUTH_NONCE_LEN];
    uint8_t daemon_nonce[PDCBB_AUTH_NONCE_LEN];
    double accepted; /* CLOCK_MONOTONIC seconds when the connection was accepted */
} bbd_conn_t;

typedef struct bbd_msg {
    struct bbd_msg *next;
    bbd_conn_t *conn;
    size_t len;
    uint8_t *data; /* malloc'ed copy of the whole control message */
    uint8_t *bulk; /* bulk part of a PDCBB_AM_ID_DATA message (malloc'ed), or NULL */
    size_t bulk_len;
    int pending;   /* bulk still arriving (rendezvous): later messages wait behind it */
    int failed;    /* the bulk never arrived: drop the message */
    void *rndv_desc; /* rendezvous data not yet being received (started in arrival order) */
} bbd_msg_t;

typedef struct bbd_stats {
    uint64_t requests;
    uint64_t auth_failures;
    uint64_t proto_errors;
    uint64_t connections;
    uint64_t shm_requests;      /* requests that came over a shared-memory channel */
    uint64_t shm_channels;      /* shared-memory channels accepted */
    uint64_t shm_channels_open; /* ... and still open */
    uint64_t batches;           /* group commits of several requests */
    uint64_t batched_requests;  /* requests in them */
    /* Per kind of op (pdcbb_stats.h): messages and bytes in and out, error replies. */
    uint64_t kinds[PDCBB_KIND_COUNT_][PDCBB_STATS_PER_KIND];
    uint64_t error_replies;     /* replies with a non-OK status */
} bbd_stats_t;

typedef struct bbd {
    pdcbb_config_t cfg;
    char job_dir[PATH_MAX];
    char data_dir[PATH_MAX];
    char endpoint_path[PATH_MAX];
    char pid_path[PATH_MAX];
    unsigned rank;
    unsigned nservers;
    uint64_t job_id;
    char node[PDCBB_NODE_NAME_MAX];
    uint8_t token[PDCBB_TOKEN_LEN];
    /* Where the job's other daemons are (job.info; one-node jobs have no rendezvous). */
    pdcbb_jobinfo_t jobinfo;
    int have_jobinfo;
    char rendezvous_record[PATH_MAX]; /* our published record, removed at a clean exit */
    char *table;      /* JOB_TABLE text once every daemon was found (malloc'ed), or NULL */
    size_t table_len;

    pdcbb_ucx_t ucx;
    ucp_listener_h listener;
    char listen_ip[64];
    uint16_t port;

    const pdcbb_store_ops_t *store_ops;
    pdcbb_store_t *store;

    bbd_conn_t *conns;
    uint64_t next_conn_id;
    unsigned unauth_conns; /* live UCX connections that did not authenticate yet */
    bbd_msg_t *queue_head;
    bbd_msg_t *queue_tail;
    volatile int stopping;
    bbd_stats_t stats;
    uint64_t data_used;     /* bytes the data files occupy */
    uint64_t data_capacity; /* this daemon's share of the job's capacity */
    uint64_t data_inflight; /* bytes of writes handed to the I/O thread, not yet done */
    unsigned recv_active;   /* rendezvous receives in progress */
    struct bbd_shm *shm;    /* shared-memory channels with this node's clients (bbd_shm.c) */
    double started;         /* CLOCK_MONOTONIC seconds at bbd_server_start (uptime) */
    /* The tag index's log of changes not yet applied (bbd_tagidx.c). All 0 in a new bbd_t:
     * the log is looked at on first use. */
    int tagidx_known;         /* tagidx_next_seq and tagidx_pending are set */
    int tagidx_pending;       /* the log may hold records (cleared when found empty) */
    uint64_t tagidx_next_seq; /* key of the next record */
    uint64_t tagidx_first_seq; /* key of the first record not applied (the log's length is at
                                * most next - first) */
    uint64_t tagidx_log_max;   /* the log's bound (LOG_MAX, PDCBB_TAGIDX_LOG_MAX in tests) */
    uint64_t tagidx_seen;     /* idle detection: stats.requests when last looked at ... */
    double tagidx_quiet;      /* ... and since when (CLOCK_MONOTONIC seconds) it has not moved */
    double tagidx_retry;      /* idle passes apply nothing before this time (after an error) */
    int tagidx_idle_off;      /* PDCBB_TAGIDX_IDLE=0: only searches apply the log (tests) */

    /* Each module's own state, reached only through its functions (NULL or 0 in a new bbd_t;
     * the module's close or free function releases it), so a process may hold several. */
    struct bbd_io *io;           /* bbd_io.c: the I/O thread (bbd_io_start/stop) */
    struct bbd_staging *staging; /* bbd_staging.c: reused buffers (bbd_staging_free) */
    struct bbd_fds *fds;         /* bbd_data.c: open data files (bbd_data_open/close) */
    struct bbd_csum *csum;       /* bbd_csum.c: what is known of each block (open/close) */
    struct bbd_qobj *qobjs;      /* bbd_query.c: block statistics (bbd_query_cleanup) */
    struct bbd_peers *peers;     /* bbd_peer.c: the other daemons (bbd_peer_stop) */
    struct bbd_lock *locks_head, *locks_tail; /* bbd_lock.c: granted and waiting locks */
    uint64_t next_lock_id;                    /* (bbd_lock_free) */
    struct bbd_bcast_sess *bcast_sessions;    /* bbd_bcast.c: files arriving (bbd_bcast_stop) */
    struct bbd_tgather *tgather;  /* bbd_table_gather.c: the table being gathered (..._free) */
    unsigned strided_mapped_told; /* bbd_strided.c: the mapping path was logged */
    int pending_sends;            /* bbd_server.c: replies UCX has not completed, */
    uint64_t queue_pass;          /* passes of process_queue over waiting messages, */
    double auth_next_check;       /* when to look for connections that did not authenticate */
} bbd_t;

/* Per-request context handed to handlers: the open transaction and scratch memory. */
typedef struct bbd_scratch {
    struct bbd_scratch *next;
} bbd_scratch_t;

typedef struct bbd_req {
    bbd_t *d;
    bbd_conn_t *conn;       /* the connection the request came on */
    pdcbb_txn_t *txn;
    bbd_scratch_t *scratch;
    const uint8_t *in_bulk; /* bulk part received with the request */
    size_t in_bulk_len;
    void *out_bulk;         /* bulk part of the reply (malloc'ed; the sender frees it) */
    size_t out_bulk_len;
    void *out_map;          /* or: out_bulk lies in this file mapping (the sender unmaps it) */
    size_t out_map_len;
    bbd_io_batch_t *io;     /* writes for the I/O thread: the reply waits for them */
    const pdcbb_msg_hdr_t *hdr; /* the request's header */
    int deferred;           /* the handler answers later itself (a lock granted later): no reply now */
    int keep_bulk;          /* the handler keeps in_bulk (staging memory it releases itself) */
} bbd_req_t;

/* A reply's bulk part and how to release it once sent. */
typedef struct bbd_bulk {
    void *ptr;
    size_t len;
    void *map;      /* non-NULL: munmap(map, map_len) instead of free(ptr) */
    size_t map_len;
} bbd_bulk_t;
void bbd_bulk_release(struct bbd *d, bbd_bulk_t *b);

/* Memory freed after the reply is built (bbd_req_scratch_free). */
void *bbd_req_alloc(bbd_req_t *r, size_t size);
void bbd_req_scratch_free(bbd_req_t *r);
/* Room for need more elements after the n of the scratch array v (capacity *cap elements of
 * elem bytes): v while they fit, else a copy in new scratch memory with *cap doubled (first
 * when 0) until they fit; NULL when out of memory (v and *cap unchanged). */
void *bbd_req_grow(bbd_req_t *r, void *v, size_t n, size_t need, size_t *cap, size_t elem,
                   size_t first);

/* bbd_server.c */
#include <signal.h>
/* Block the shutdown signals (call first thing in main); they are read from a signalfd. */
void bbd_signals_block(sigset_t *mask);
pdcbb_err_t bbd_server_start(bbd_t *d, char *err, size_t errlen);
void bbd_server_run(bbd_t *d);
void bbd_server_stop(bbd_t *d);
/*
 * Handle one request that arrived without a bulk part on another transport (a shared-memory
 * channel): as process_queue would, after every region write before it is done. *reply gets
 * the malloc'ed reply (NULL if none could be built). Ops a channel does not carry
 * (pdcbb_shm_op_allowed: those without PDCBB_OPF_SHM in their row, e.g. DATA_WRITE and
 * DATA_READ, which need a bulk part) are refused with PDCBB_ERR_UNSUPPORTED.
 */
void bbd_server_local_request(bbd_t *d, const uint8_t *msg, size_t len, void **reply,
                              size_t *reply_len);

/*
 * Replies sent later than their request (a handler that set r->deferred: locks, broadcast,
 * append, the table, searches through the tree): the handler takes a reference to the
 * connection (bbd_conn_ref) and keeps the request's header; bbd_server_answer builds the
 * reply to req (status, body) and sends it on c if c is still alive, then drops that
 * reference.
 */
void bbd_server_answer(bbd_t *d, bbd_conn_t *c, const pdcbb_msg_hdr_t *req, int status,
                       const void *body);
/* ... with a bulk part (taken, sent with the reply or released). */
void bbd_server_answer_bulk(bbd_t *d, bbd_conn_t *c, const pdcbb_msg_hdr_t *req, int status,
                            const void *body, bbd_bulk_t *bulk);
void bbd_conn_ref(bbd_conn_t *c);
/* AUTH proved the token on c: mark it so (it no longer counts against the cap of
 * unauthenticated connections nor expires). */
void bbd_conn_authenticated(bbd_t *d, bbd_conn_t *c);
void bbd_conn_unref(bbd_t *d, bbd_conn_t *c);

/*
 * bbd_lock.c: region locks of the objects whose home is this daemon (LOCK_OBTAIN,
 * LOCK_RELEASE). bbd_lock_conn_gone drops every lock and waiting request of a connection that
 * ended (its client died or closed) and grants what that unblocks; bbd_lock_free drops all
 * (shutdown).
 */
void bbd_lock_conn_gone(bbd_t *d, bbd_conn_t *c);
void bbd_lock_free(bbd_t *d);

/*
 * bbd_shm.c: shared-memory channels (common/pdcbb_shm.h). bbd_shm_start opens the listening
 * socket and registers it with the event loop's epoll fd (a failure only logs: clients then
 * use UCX); bbd_shm_event handles a ready fd of ours (returns 0 if fd is not ours);
 * bbd_shm_serve answers every waiting request and returns how many; bbd_shm_sleep_prepare
 * tells the clients the loop is about to sleep and returns 1 if a request arrived meanwhile
 * (then do not sleep); bbd_shm_awake takes that back. bbd_shm_stop closes everything.
 */
pdcbb_err_t bbd_shm_start(bbd_t *d, int epfd);
int bbd_shm_event(bbd_t *d, int fd);
int bbd_shm_serve(bbd_t *d);
int bbd_shm_sleep_prepare(bbd_t *d);
void bbd_shm_awake(bbd_t *d);
void bbd_shm_stop(bbd_t *d);

/*
 * bbd_dispatch.c: handle one message (control part msg, bulk part bulk) that came on conn;
 * returns the reply to send (malloc'ed) or NULL, and the reply's bulk part (malloc'ed) or NULL.
 * Returns 1 when the handler kept bulk (staging memory, r->keep_bulk: the caller must not
 * release it), else 0.
 */
int bbd_dispatch(bbd_t *d, bbd_conn_t *conn, const uint8_t *msg, size_t len, const uint8_t *bulk,
                 size_t bulk_len, void **reply, size_t *reply_len, bbd_bulk_t *reply_bulk,
                 bbd_io_batch_t **io);
/*
 * Run msg, a whole request of an op GATHER carries (pdcbb_op_gatherable), inside request r's
 * read transaction, as this daemon's own part of a GATHER (bbd_gather.c): its reply
 * (malloc'ed, its status that of the handler) and the reply's bulk part. Fails only when msg has
 * no readable header, its op is not one GATHER carries, or memory ran out.
 */
pdcbb_err_t bbd_dispatch_nested(bbd_req_t *r, const uint8_t *msg, size_t len, void **reply,
                                size_t *reply_len, bbd_bulk_t *reply_bulk);
/*
 * Group commit: handle n requests without bulk parts (each msg/len, a private copy) as if one
 * after the other, in one store transaction with one commit when they are all metadata ops of
 * bbd_op_is_batchable. Each item's reply (malloc'ed, NULL if none) is built before the commit
 * and must be sent only after this returns, i.e. after the commit. A write request that fails
 * rolls the batch back and every request then runs alone, so each gets exactly the answer and
 * effect it would have had on its own.
 */
typedef struct bbd_batch_item {
    const uint8_t *msg;
    size_t len;
    void *reply;
    size_t reply_len;
} bbd_batch_item_t;
void bbd_dispatch_batch(bbd_t *d, bbd_batch_item_t *items, size_t n);
/* 1 if op's handler only touches the store (it may be batched: PDCBB_OPF_BATCH). */
int bbd_op_is_batchable(unsigned op);
/* Build a reply to hdr with status and (when status is OK) body; NULL on failure. */
void bbd_reply_build(const pdcbb_msg_hdr_t *hdr, int status, const void *body, void **reply,
                     size_t *reply_len);
/*
 * bbd_server.c: a write batch the I/O thread finished (bbd_io_take_done): count the space its
 * files now occupy, store its checksums, build the DATA_WRITE reply with its per-region results
 * into *reply (malloc'ed; NULL if it could not be built), release its staging buffer and free
 * the batch. The caller sends the reply and drops the batch's reference on b->conn (read it
 * before the call).
 */
void bbd_io_batch_end(bbd_t *d, bbd_io_batch_t *b, void **reply, size_t *reply_len);
/* 1 if op changes the store (runs in a write transaction: bbd_op_txn_mode is not READ). */
int bbd_op_is_write(unsigned op);
/* The store transaction op runs in (the transaction column of its row of PDCBB_OPS; READ for
 * a value that is no op): PDCBB_TXN_READ, _WRITE, or _REMOVE for ops that only delete (they
 * may use the store's reserve: pdcbb_store.h). */
int bbd_op_txn_mode(unsigned op);

/* Handlers, one per op (docs/INTERNALS.md "Which file handles each request"). */
#define BBD_X_HANDLER(OP, val, lname, RQ, RP, ...)                                                 \
    pdcbb_err_t bbd_op_##lname(bbd_req_t *r, const pdcbb_##lname##_req_t *q,                       \
                               pdcbb_##lname##_rep_t *p);
PDCBB_OPS(BBD_X_HANDLER)
#undef BBD_X_HANDLER

/* bbd_grow.c: set the extent (rows) of a growing object (stage-in), forget it (OBJ_DEL). */
pdcbb_err_t bbd_extent_set(bbd_req_t *r, uint64_t id, uint64_t rows);
pdcbb_err_t bbd_extent_forget(bbd_req_t *r, uint64_t id);
/* bbd_data.c: the elements of one DATA descriptor (desc, n words: object, unit, ndim, dims,
 * offsets, sizes; checked) from this daemon's data file, zeros where nothing was written, into
 * *out (malloc'ed, *bytes long). PDCBB_ERR_TOO_BIG beyond max bytes. */
pdcbb_err_t bbd_data_read_desc(bbd_req_t *r, const uint64_t *desc, uint32_t n, uint64_t max,
                               uint8_t **out, uint64_t *bytes);

/* bbd_data.c: region data files and capacity. */
pdcbb_err_t bbd_data_open(bbd_t *d, char *err, size_t errlen);
/*
 * Staging buffers for bulk parts: reused, so a message does not page-fault fresh memory in
 * (first touch runs at a tenth of memcpy speed: docs/PERFORMANCE.md). bbd_staging_put accepts NULL.
 * Inbound buffers (received writes, held until their file writes are done) count against
 * BBD_STAGING_INBOUND_MAX: a receive starts only when bbd_staging_room says it fits, or when
 * no inbound buffer is busy (a single larger message still goes through).
 */
#define BBD_STAGING_INBOUND_MAX ((size_t)256 << 20)
void *bbd_staging_get(bbd_t *d, size_t len, int inbound);
void bbd_staging_put(bbd_t *d, void *buf);
int bbd_staging_room(bbd_t *d, size_t len);
/* At the end, once nothing is in flight: free d's buffers (d->staging NULL after). */
void bbd_staging_free(bbd_t *d);
void bbd_data_close(bbd_t *d);
/* A write batch is done: count the space its files now occupy. */
void bbd_data_account(bbd_t *d, const bbd_io_batch_t *b);
/* Bytes of [off, off + len) of a data file that are holes (need new space when written). */
uint64_t bbd_data_hole_bytes(int fd, uint64_t off, uint64_t len);
/* Count the data file of obj at its size now (after a write outside the I/O thread). */
void bbd_data_recount(bbd_t *d, uint64_t obj);
/* Give back the capacity a connection's unfinished DATA_DIRECT writes reserved (it ended). */
void bbd_data_direct_release(bbd_t *d, bbd_conn_t *c);
/* The data file of an object here (it may not exist). */
void bbd_data_path(bbd_t *d, uint64_t obj, char *out, size_t len);
/* Record an object's layout here (element size, dims) unless it has one; a different existing
 * layout is PDCBB_ERR_BAD_REGION. For stage-in, which writes data files directly. */
pdcbb_err_t bbd_data_layout_create(bbd_req_t *r, uint64_t obj, uint64_t unit, uint32_t ndim,
                                   const uint64_t *dims);
/*
 * bbd_tagidx.c: the tag search index. Tag changes reach the index lazily: bbd_tagidx_tag and
 * bbd_tagidx_forget append records to a log (PDCBB_T_TAGLOG) in r's transaction, and
 * bbd_tagidx_apply moves them into the index later, in sorted batches, each in its own write
 * transaction (call it only outside any other transaction: the event loop).
 *
 * bbd_tagidx_tag: add (add=1) or remove the index entries of a tag of id (name, value bytes).
 * bbd_tagidx_forget: drop the entries of every tag of id and the DART references to id (call
 * before the tags themselves are deleted).
 * bbd_tagidx_tag_search: search the tags of this daemon (name pattern, PDCBB_TAGVAL_* value
 * predicate, kind 0 or PDCBB_META_KIND_*): ids in scratch memory, sorted and distinct, from
 * the index and what of the log is not applied yet.
 */
pdcbb_err_t bbd_tagidx_tag(bbd_req_t *r, uint64_t id, const char *name, const void *value,
                           size_t len, int add);
pdcbb_err_t bbd_tagidx_forget(bbd_req_t *r, uint64_t id);
pdcbb_err_t bbd_tagidx_tag_search(bbd_req_t *r, const char *name, uint32_t value_mode,
                                  const void *value, size_t value_len, unsigned kind,
                                  uint64_t **ids, uint32_t *count, uint32_t *more);
/* Look at the log at startup (logs how many records a previous run left). */
pdcbb_err_t bbd_tagidx_open(bbd_t *d);
/* Apply up to max records of the log (0: all of it, in batches). *more (may be NULL): records
 * are left. Errors: the store's (PDCBB_ERR_META_FULL when the index cannot grow). */
pdcbb_err_t bbd_tagidx_apply(bbd_t *d, size_t max, int *more);
/* Before a request of op runs (outside its transaction): when op searches tags, apply a
 * bounded batch of the log (an error is logged; the search reads the rest of the log). */
void bbd_tagidx_before(bbd_t *d, unsigned op);
/* One pass of the event loop with nothing else to do: apply a bounded batch of the log once
 * no request came for a while. Returns 1 when it did work (the loop should not sleep), and the
 * most milliseconds the loop may sleep while records wait (-1: no limit). */
int bbd_tagidx_idle(bbd_t *d, double now, int *wait_ms);
/* The fanout F of the job's tree of daemons (key table_fanout; 16 when unset): TABLE_GATHER,
 * TAG_SEARCH/DART_SEARCH and GATHER all use it. */
static inline unsigned bbd_tree_fanout(const bbd_t *d)
{
    return d->cfg.table_fanout >= 2 ? d->cfg.table_fanout : 16;
}
/*
 * bbd_fanout.c: a search every daemon answers, down a tree rooted at the daemon asked. With
 * tree = 1 + R (R the root's rank), forward r's request (body q of op, whose reply is a list
 * of ids) to this daemon's children and answer r once they did, with this daemon's answer
 * (*ids, *count, *more) merged with theirs (r is then deferred); tree 0 or a leaf: nothing to
 * do, the answer stays as it is.
 */
pdcbb_err_t bbd_fanout_ids(bbd_req_t *r, unsigned op, const void *q, uint32_t tree, uint64_t **ids,
                           uint32_t *count, uint32_t *more);
/* Drop an object's placement map entries (OBJ_DEL). */
pdcbb_err_t bbd_map_forget(bbd_req_t *r, uint64_t obj);

/* The layout record of an object here (element size, ndim, dims); *exists 0 when this daemon
 * holds no data of it. For queries. */
pdcbb_err_t bbd_data_layout_get(bbd_req_t *r, uint64_t obj, uint64_t *unit, uint32_t *ndim,
                                uint64_t *dims, int *exists);
/* The cached descriptor of an object's data file here (not to be closed), or -1 with *rc
 * (PDCBB_ERR_NOT_FOUND: no file). */
int bbd_data_fd(bbd_t *d, uint64_t obj, pdcbb_err_t *rc);
/* bbd_query.c: per-block min/max of the data files, for skipping in queries. Every change of a
 * data file marks what it touched (a box of an object of shape dims) as unknown; DATA_DROP and
 * DATA_RESIZE forget the object. */
void bbd_query_dirty_box(bbd_t *d, uint64_t obj, uint32_t ndim, const uint64_t *dims,
                         const void *box);
void bbd_query_forget(bbd_t *d, uint64_t obj);
void bbd_query_cleanup(bbd_t *d);
/* bbd_stage_in.c: load cfg.stage_in (a drain directory) into a fresh store and data files:
 * this daemon's share under the job's placement. Call before bbd_data_open. */
pdcbb_err_t bbd_stage_in(bbd_t *d, char *err, size_t errlen);

/* bbd_table.c: learn where the job's other daemons are. bbd_table_publish puts this daemon's
 * record into the job's rendezvous directory (multi-node jobs; call once listening) and starts
 * gathering the table; bbd_table_unpublish removes it; bbd_table_free drops the cache. */
pdcbb_err_t bbd_table_publish(bbd_t *d, const pdcbb_endpoint_t *ep, char *err, size_t errlen);
void bbd_table_unpublish(bbd_t *d);
void bbd_table_free(bbd_t *d);
/* The table as it is now: PDCBB_ERR_DISCOVERY with problem filled while it is being gathered
 * or when some daemon is missing. */
pdcbb_err_t bbd_table_current(bbd_t *d, char *problem, size_t plen);
/* Daemon rank's record: from the table, or, while it is being gathered, from what was
 * gathered or the rendezvous directory (one file). */
pdcbb_err_t bbd_table_record(bbd_t *d, unsigned rank, pdcbb_endpoint_t *out, char *problem,
                             size_t plen);
/* Read daemon rank's record from the rendezvous directory again and put it into the table if
 * it changed (the daemon was restarted). */
pdcbb_err_t bbd_table_reread(bbd_t *d, unsigned rank);
/* Put record e into the table in place of its rank's (and into job.table) if it differs. */
pdcbb_err_t bbd_table_replace(bbd_t *d, const pdcbb_endpoint_t *e);
/* Cache text (malloc'ed, len bytes; taken) as the table, in memory and as job.table. */
void bbd_table_set(bbd_t *d, char *text, size_t len);
/* Append "<record>--\n" to a growing JOB_TABLE text. */
pdcbb_err_t bbd_table_append(char **text, size_t *len, size_t *cap, const pdcbb_endpoint_t *e);
/* Why daemon rank cannot be found: its node's error file, or a plain statement. */
void bbd_table_missing_reason(const bbd_t *d, unsigned rank, char *out, size_t len);

/* bbd_table_gather.c: the daemons of a job of several nodes gather the table up and down a
 * tree of daemons (TABLE_GATHER). bbd_table_gather_start begins (bbd_table_publish calls it);
 * bbd_table_poll drives it from the event loop and returns the milliseconds until it wants to
 * run again, or -1 when it has nothing more to do. */
void bbd_table_gather_start(bbd_t *d, const pdcbb_endpoint_t *self);
int bbd_table_poll(bbd_t *d);
/* While the table is being gathered: keep request r to answer it with the table (1), or 0. */
int bbd_table_gather_defer(bbd_req_t *r);
/* 1 with problem filled when the gathering ended without every daemon. */
int bbd_table_gather_problem(bbd_t *d, char *problem, size_t plen);
/* Rank's record if the gathering has it. */
pdcbb_err_t bbd_table_gather_record(bbd_t *d, unsigned rank, pdcbb_endpoint_t *out);
/* Drop the gathering's state and the requests it kept (shutdown). */
void bbd_table_gather_free(bbd_t *d);

/*
 * bbd_stats.c: live counters (docs/PROTOCOL.md, STATS). bbd_stats_start notes the start time;
 * bbd_stats_recv counts a received request (raw message, op read from its header; msg NULL:
 * one that could not be read), bbd_stats_recv_bulk the bulk part received with it,
 * bbd_stats_sent a reply handed to a transport (its header gives op and status; a non-OK
 * status counts as an error) with its bulk part; bbd_stats_fill puts the counters into a STATS
 * reply (kinds in r's scratch memory). bbd_server_queued: requests queued in the event loop;
 * bbd_lock_waiting: lock requests waiting to be granted.
 */
void bbd_stats_start(bbd_t *d);
void bbd_stats_recv(bbd_t *d, const uint8_t *msg, size_t len);
void bbd_stats_recv_bulk(bbd_t *d, const uint8_t *msg, size_t len, size_t bulk_len);
void bbd_stats_sent(bbd_t *d, const uint8_t *reply, size_t len, size_t bulk_len);
pdcbb_err_t bbd_stats_fill(bbd_req_t *r, pdcbb_stats_rep_t *p);
unsigned bbd_server_queued(bbd_t *d);
unsigned bbd_lock_waiting(bbd_t *d);

/*
 * bbd_bcast.c: file broadcast (BCAST_OPEN, BCAST_CHUNK, BCAST_CLOSE), where this daemon also
 * sends requests to other daemons (its children in the broadcast tree, through bbd_peer.h).
 * bbd_bcast_stop removes unfinished copies (shutdown).
 */
void bbd_bcast_stop(bbd_t *d);

/* Stats for STATS replies and the log. */
pdcbb_err_t bbd_meta_counts(bbd_req_t *r, uint64_t *conts, uint64_t *objs);
/* bbd_meta.c: a new id of the given kind from the daemon's one id sequence (containers,
 * objects, KV objects), in the request's write transaction. */
pdcbb_err_t bbd_meta_next_id(bbd_req_t *r, unsigned kind, uint64_t *id);
/* bbd_meta.c: check a name received from the wire (kind: "container", "object", "tag", "KV
 * object") against the name rule (common/pdcbb_name.h): PDCBB_OK, PDCBB_ERR_INVAL (missing or
 * empty), PDCBB_ERR_TOO_BIG or PDCBB_ERR_BAD_NAME (not UTF-8, or a control character: logged
 * with the name escaped). A name that fails is never stored. */
pdcbb_err_t bbd_check_name(const char *kind, const char *name);

#endif
