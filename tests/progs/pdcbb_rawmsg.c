/*
 * pdcbb_rawmsg - sends hand-made wire messages to a daemon, for the bats tests of the daemon's
 * input checks and its token check. Not a PDC client: it speaks the wire protocol directly.
 *
 *   pdcbb_rawmsg ENDPOINT_FILE TOKEN_FILE|none CASE [NAME]
 * Every case first does the connection handshake (HELLO, AUTH: common/pdcbb_auth.h) with the
 * token (none: zeros), then sends its message; a failed handshake prints "handshake STATUS"
 * (and "daemon proof mismatch" when the daemon's proof does not match the token used), and the
 * message is sent anyway (on a connection that did not authenticate).
 * CASE: good (a valid STATS request), notoken (the handshake with a zero token, then STATS),
 *       wrongtoken (the same with a wrong token), tokennoauth (no handshake: a STATS request
 *       carrying the right token in its header), noauthwait (no handshake: waits up to 70 s for
 *       the daemon to close the connection; prints "closed after S s" or "still open"),
 *       noauthflood (300 connections that send HELLO and never AUTH: the daemon keeps at most
 *       256 of them; prints how many were closed),
 *       badmagic, badversion,
 *       badop, truncated (payload shorter than declared), trailing, badstring (no NUL),
 *       short (fewer bytes than a header), oversized (declares a huge payload),
 *       directprobe (DATA_DIRECT PROBE), directhold (a DATA_DIRECT WRITE reserving 3 MiB of an
 *       object, then gone without DONE), directbadmode (an unknown DATA_DIRECT mode),
 *       lockbadbox (LOCK_OBTAIN whose box count does not match its ndim), lockbadmode (an
 *       unknown lock mode), locknoobj (a lock of an object that does not exist), lockrelease
 *       (LOCK_RELEASE of a lock nobody holds),
 *       dartstar (DART_SEARCH of key pattern "*"), dartlong (DART_INSERT of a 300-byte key),
 *       dartbadtype (DART_INSERT of ref_type 0), tagsearchbadmode (TAG_SEARCH value_mode 7),
 *       tagsearchstar (TAG_SEARCH of name "**"),
 *       querygood (a QUERY_EVAL count), querybadprog, querybadpiece, querytype, queryvalues
 *       (an index outside the object).
 *       KV objects (a KV_CREATE of a fresh object first, then the case's message on it):
 *       kvgood (a valid KV_SET), kvbadtype (a 3-byte key to an INT object), kvnan (a NaN key
 *       to a FLOAT object), kvnegzero (-0.0 encoded), kvlongkey (a 1025-byte string key),
 *       kvnul (a NUL inside a key), kvcount (count 5, one record), kvtrailing (bytes after the
 *       records), kvrecop (record op 9), kvvaluelen (a value longer than the message),
 *       kvmaxtag (a set at MAXTAG), kvbigtag (a get above MAXTAG), kvunknown (a get on an id
 *       that does not exist), kvtransmode (KV_TRANS mode 9), kvtranstag (transaction 0),
 *       kvlistflags (KV_LIST flags 0x80), kvshards (KV_CREATE naming daemon 99),
 *       kvtoobig (a value above max_value_len), kvpartwrap (64 KiB sent by KV_PART, then a
 *       SET_PART record of 2^64-1 bytes, on an object without max_value_len), kvpartbig (a
 *       KV_PART piece at offset 2^40).
 *       gatherself, gathergarbage, gatherforeign, gatheroutside: TABLE_GATHER as from daemon
 *       0 itself, with records that do not parse, with a record of another job, or from daemon
 *       2 with daemon 1's record (not of its subtree).
 *       FORWARD (to the daemon of ENDPOINT_FILE): fwdgood (a STATS request for daemon 1; prints
 *       the status of the reply inside too), fwdself (for the daemon itself), fwdrank (for
 *       daemon 999), fwdreply (a reply inside), fwdhello (an AUTH inside), fwdnested (a FORWARD
 *       inside), fwddaemonop (an APPEND_WRITE, which only daemons send, inside), fwdtruncated
 *       (the message inside declares 5 bytes more than it has).
 *       GATHER (to daemon 0 of a job of 2): fanoutgood (STATS for every daemon; prints each
 *       daemon's reply status), fanoutrank (daemon 999), fanoutbelow (daemon 1 in the tree rooted
 *       at daemon 1: not below daemon 0), fanouttwice (daemon 1 named twice), fanoutop (an
 *       OBJ_CREATE inside), fanouttree (tree 0), fanoutevery (every set and ranks named),
 *       fanoutcount (two ranks, one request), fanouttrailing (bytes after the requests).
 *       readhuge (a DATA_READ of 8 GiB of one object),
 *       querybig (a 20 GiB count query, resumed until done), goodtimed (good twice on one
 *       connection, printing the time to the second reply),
 *       bulknotoken (a DATA_WRITE with a 1 GiB bulk part and no token; prints the time to
 *       the reply).
 *       Placement map (MAP_PUT on a fresh object): mapgood (one region of a
 *       PDC_REGION_DYNAMIC object), mapstatic (of a PDC_OBJ_STATIC object), mapmany (65 regions).
 *       STRIDED_READ of a 10x10 object: stridedcount0, stridedblock (block >
 *       stride), stridedoutside (past the dims), stridedndim (17), stridedoverflow,
 *       stridedtruncated (a descriptor cut short); stridedwrite (STRIDED_WRITE without data).
 *       Names (NAME: the 5th argument, sent as given): namecont (CONT_CREATE), contopen
 *       (CONT_OPEN), nameobj (OBJ_CREATE), objopen (OBJ_OPEN), nametag (TAG_PUT on an object
 *       id of daemon 0), nametagget (TAG_GET), nametagsearch (TAG_SEARCH), namekv (KV_CREATE).
 * Prints "status NAME" for the reply's status, or "no reply"; for 'good' also the counters,
 * for directprobe the directory.
 * Exit status 0 if a reply arrived, 1 if not, 2 on usage errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pdcbb_auth.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_kv.h"
#include "pdcbb_proto.h"
#include "pdcbb_ucx.h"

static void *reply;
static size_t reply_len;
static int got_reply;
static int ep_failed; /* how many connections' error callbacks ran */

static ucs_status_t on_reply(void *arg, const void *h, size_t hl, void *data, size_t len,
                             const ucp_am_recv_param_t *param)
{
    (void)arg, (void)h, (void)hl, (void)param;
    reply = malloc(len);
    memcpy(reply, data, len);
    reply_len = len;
    got_reply = 1;
    return UCS_OK;
}

static void on_error(void *arg, ucp_ep_h ep, ucs_status_t st)
{
    (void)arg, (void)ep;
    ep_failed++;
    fprintf(stderr, "connection error: %s\n", ucs_status_string(st));
}

/* Send msg and wait up to 3 s for the reply (in reply / reply_len). */
static int roundtrip(ucp_worker_h w, ucp_ep_h uep, void *msg, size_t len)
{
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags = UCP_AM_SEND_FLAG_REPLY};
    got_reply = 0;
    pdcbb_ucx_wait(w, ucp_am_send_nbx(uep, PDCBB_AM_ID_MSG, NULL, 0, msg, len, &prm));
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        ucp_worker_progress(w);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (!got_reply && (t.tv_sec - t0.tv_sec) < 3);
    return got_reply;
}

/* The status of the reply in reply (-1 when there is none or it is malformed); the reply is
 * kept when keep, else dropped. */
static int reply_status(int keep)
{
    pdcbb_msg_hdr_t rh;
    int st = -1;
    if (got_reply && pdcbb_hdr_decode(reply, reply_len, &rh) == PDCBB_OK)
        st = rh.status;
    if (!keep) {
        free(reply);
        reply = NULL;
        got_reply = 0;
    }
    return st;
}

/*
 * The connection handshake with token (the job's, or a wrong one): HELLO with a fresh nonce,
 * the daemon's proof checked against token, AUTH with the proof made from token. Returns the
 * AUTH reply's status (HELLO's when it failed), -1 without a reply.
 */
static int handshake(ucp_worker_h w, ucp_ep_h uep, const uint8_t *token)
{
    uint8_t cn[PDCBB_AUTH_NONCE_LEN], dn[PDCBB_AUTH_NONCE_LEN], expected[PDCBB_AUTH_PROOF_LEN];
    uint8_t proof[PDCBB_AUTH_PROOF_LEN];
    if (pdcbb_auth_nonce(cn) != PDCBB_OK)
        return -1;
    pdcbb_msg_hdr_t h;
    pdcbb_request_hdr(&h, PDCBB_OP_HELLO, 1001, NULL);
    pdcbb_hello_req_t q = {
        .client_pid = 1, .client_node = "rawmsg", .nonce = cn, .nonce_len = sizeof(cn)};
    void *msg;
    size_t len;
    if (pdcbb_msg_build(&h, &q, &msg, &len) != PDCBB_OK)
        return -1;
    int ok = roundtrip(w, uep, msg, len);
    free(msg);
    int st = ok ? reply_status(1) : -1;
    if (st != PDCBB_OK) {
        reply_status(0);
        return st;
    }
    pdcbb_msg_hdr_t rh;
    pdcbb_hello_rep_t rep;
    int proved = 0, have = 0;
    if (pdcbb_hdr_decode(reply, reply_len, &rh) == PDCBB_OK &&
        pdcbb_body_decode(PDCBB_OP_HELLO, 1, (uint8_t *)reply + PDCBB_HDR_LEN, rh.payload_len,
                          &rep) == PDCBB_OK) {
        if (rep.nonce_len == sizeof(dn)) {
            memcpy(dn, rep.nonce, sizeof(dn));
            pdcbb_auth_daemon_proof(token, cn, dn, expected);
            proved = pdcbb_auth_proof_ok(expected, rep.proof, rep.proof_len);
            have = 1;
        }
        pdcbb_body_free(PDCBB_OP_HELLO, 1, &rep);
    }
    reply_status(0);
    if (!have)
        return PDCBB_ERR_PROTO;
    if (!proved)
        printf("daemon proof mismatch\n");
    pdcbb_auth_client_proof(token, cn, dn, proof);
    pdcbb_request_hdr(&h, PDCBB_OP_AUTH, 1002, NULL);
    pdcbb_auth_req_t aq = {.proof = proof, .proof_len = sizeof(proof)};
    if (pdcbb_msg_build(&h, &aq, &msg, &len) != PDCBB_OK)
        return -1;
    ok = roundtrip(w, uep, msg, len);
    free(msg);
    return ok ? reply_status(0) : -1;
}

/* noauthwait: a connection that never proves the token; 0 when the daemon closed it. */
static int wait_closed(ucp_worker_h w)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double s;
    do {
        ucp_worker_progress(w);
        clock_gettime(CLOCK_MONOTONIC, &t);
        s = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9;
        if (!ep_failed) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    } while (!ep_failed && s < 70);
    if (ep_failed)
        printf("closed after %.1f s\n", s);
    else
        printf("still open after %.0f s\n", s);
    return ep_failed ? 0 : 1;
}

/*
 * noauthflood: FLOOD_CONNS connections that each send a HELLO and never AUTH; the daemon keeps
 * at most 256 waiting, closing the oldest for each new one. Prints "closed N of M" after the
 * connections that were closed had 5 s to notice; 0 if at least M - 256 were.
 */
#define FLOOD_CONNS 300
static int flood(ucp_worker_h w, const ucp_ep_params_t *epp)
{
    static ucp_ep_h eps[FLOOD_CONNS];
    int answered = 0;
    for (int i = 0; i < FLOOD_CONNS; i++) {
        if (ucp_ep_create(w, epp, &eps[i]) != UCS_OK) {
            printf("cannot connect %d\n", i);
            return 1;
        }
        pdcbb_msg_hdr_t h;
        pdcbb_request_hdr(&h, PDCBB_OP_HELLO, 2000 + (uint64_t)i, NULL);
        uint8_t cn[PDCBB_AUTH_NONCE_LEN] = {(uint8_t)i};
        pdcbb_hello_req_t q = {
            .client_pid = 1, .client_node = "flood", .nonce = cn, .nonce_len = sizeof(cn)};
        void *msg;
        size_t len;
        if (pdcbb_msg_build(&h, &q, &msg, &len) != PDCBB_OK)
            return 1;
        answered += roundtrip(w, eps[i], msg, len) && reply_status(0) == PDCBB_OK;
        free(msg);
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        ucp_worker_progress(w);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < 5);
    printf("answered %d of %d, closed %d of %d\n", answered, FLOOD_CONNS, ep_failed, FLOOD_CONNS);
    return ep_failed >= FLOOD_CONNS - 256 ? 0 : 1;
}

/* The id in the reply to an OBJ_CREATE or KV_CREATE (0 if it failed); the reply is dropped. */
static uint64_t created_id(unsigned op)
{
    pdcbb_msg_hdr_t rh;
    pdcbb_any_body_t rep;
    uint64_t id = 0;
    if (reply != NULL && pdcbb_hdr_decode(reply, reply_len, &rh) == PDCBB_OK &&
        rh.status == PDCBB_OK &&
        pdcbb_body_decode(op, 1, (uint8_t *)reply + PDCBB_HDR_LEN, rh.payload_len, &rep) ==
            PDCBB_OK) {
        id = op == PDCBB_OP_OBJ_CREATE ? rep.obj_create_rep.id : rep.kv_create_rep.id;
        pdcbb_body_free(op, 1, &rep);
    }
    free(reply);
    reply = NULL;
    got_reply = 0;
    return id;
}

/*
 * querybig: a count query of 20,000 pieces, each the whole of a 1 MiB int object (20 GiB to
 * evaluate), resumed for as long as the daemon answers "more" (at most 120 s). Prints the
 * steps and the time; 0 if every step was answered.
 */
static int query_big(ucp_worker_h w, ucp_ep_h uep, pdcbb_msg_hdr_t *h)
{
    enum { PIECES = 20000 };
    static uint64_t pieces[3 * PIECES];
    uint64_t dims[1] = {1u << 18}, prog[3] = {1 | 1u << 8, 5, 0};
    for (int i = 0; i < PIECES; i++)
        pieces[3 * i] = 0, pieces[3 * i + 1] = 0, pieces[3 * i + 2] = dims[0];
    pdcbb_query_eval_req_t qe = {.id = pdcbb_meta_id_make(PDCBB_META_KIND_OBJ, 0, 987654),
                                 .type = 0,
                                 .mode = 1,
                                 .dims = dims,
                                 .dims_count = 1,
                                 .prog = prog,
                                 .prog_count = 3,
                                 .pieces = pieces,
                                 .pieces_count = 3 * PIECES,
                                 .max_hits = 1};
    /* the object's 1 MiB of data first (values 0..2^18-1), so every piece is really read */
    static int32_t vals[1u << 18];
    for (uint32_t i = 0; i < (1u << 18); i++)
        vals[i] = (int32_t)i;
    uint64_t wd[6] = {qe.id, 4, 1, dims[0], 0, dims[0]};
    pdcbb_data_write_req_t wq = {.descs = wd, .descs_count = 6};
    pdcbb_msg_hdr_t wh = *h;
    wh.op = PDCBB_OP_DATA_WRITE;
    void *wm;
    size_t wl;
    pdcbb_msg_build(&wh, &wq, &wm, &wl);
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags = UCP_AM_SEND_FLAG_REPLY};
    got_reply = 0;
    pdcbb_ucx_wait(w, ucp_am_send_nbx(uep, PDCBB_AM_ID_DATA, wm, wl, vals, sizeof(vals), &prm));
    free(wm);
    for (int i = 0; i < 3000000 && !got_reply; i++)
        ucp_worker_progress(w);
    pdcbb_msg_hdr_t wr;
    if (!got_reply || pdcbb_hdr_decode(reply, reply_len, &wr) != PDCBB_OK ||
        wr.status != PDCBB_OK) {
        printf("querybig: the object's data was not written\n");
        return 1;
    }
    free(reply);
    reply = NULL;
    got_reply = 0;
    h->op = PDCBB_OP_QUERY_EVAL;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned steps = 0;
    uint32_t more = 1;
    while (more) {
        void *msg;
        size_t ml;
        pdcbb_msg_build(h, &qe, &msg, &ml);
        int ok = roundtrip(w, uep, msg, ml);
        free(msg);
        pdcbb_msg_hdr_t rh;
        pdcbb_query_eval_rep_t rep;
        if (!ok || pdcbb_hdr_decode(reply, reply_len, &rh) != PDCBB_OK || rh.status != PDCBB_OK ||
            pdcbb_body_decode(PDCBB_OP_QUERY_EVAL, 1, (uint8_t *)reply + PDCBB_HDR_LEN,
                              rh.payload_len, &rep) != PDCBB_OK) {
            printf("querybig: step %u: %s\n", steps + 1, ok ? "bad reply" : "no reply within 3 s");
            return 1;
        }
        steps++;
        more = rep.more;
        qe.resume_piece = rep.next_piece;
        qe.resume_elem = rep.next_elem;
        pdcbb_body_free(PDCBB_OP_QUERY_EVAL, 1, &rep);
        free(reply);
        reply = NULL;
        got_reply = 0;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 120)
            break;
    }
    printf("querybig: %u steps in %.1f s, %s\n", steps,
           (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9,
           more ? "stopped" : "done");
    return 0;
}

/* The placement map cases: create a fresh object (mapstatic: PDC_OBJ_STATIC, else
 * PDC_REGION_DYNAMIC) of 1000 bytes, then a MAP_PUT of one region of it (mapgood, mapstatic),
 * or of 65 (mapmany: more than PDCBB_MAP_PUT_REGIONS_MAX). */
static uint8_t *map_case(ucp_worker_h w, ucp_ep_h uep, pdcbb_msg_hdr_t *h, const char *c,
                         size_t *len)
{
    char name[64];
    uint64_t dims[1] = {1000};
    snprintf(name, sizeof(name), "raw-%s-%ld", c, (long)time(NULL));
    pdcbb_obj_create_req_t oq = {.cont_id = pdcbb_meta_id_make(PDCBB_META_KIND_CONT, 0, 1),
                                 .name = name,
                                 .type = 0,
                                 .dims = dims,
                                 .dims_count = 1,
                                 .partition = strcmp(c, "mapstatic") == 0 ? 0 : 2};
    pdcbb_msg_hdr_t ch = *h;
    ch.op = PDCBB_OP_OBJ_CREATE;
    void *msg;
    size_t ml;
    pdcbb_msg_build(&ch, &oq, &msg, &ml);
    int ok = roundtrip(w, uep, msg, ml);
    free(msg);
    uint64_t id = ok ? created_id(PDCBB_OP_OBJ_CREATE) : 0;
    if (id == 0) {
        printf("OBJ_CREATE failed\n");
        return NULL;
    }
    static uint64_t e[65 * 5];
    uint32_t n = strcmp(c, "mapmany") == 0 ? 65 : 1;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t *x = e + 5 * i;
        x[0] = UINT32_MAX, x[1] = 10, x[2] = 1, x[3] = 10 * i, x[4] = 10;
    }
    pdcbb_map_put_req_t mq = {.id = id, .entries = e, .entries_count = 5 * n};
    h->op = PDCBB_OP_MAP_PUT;
    pdcbb_msg_build(h, &mq, &msg, &ml);
    *len = ml;
    return msg;
}

/* The KV cases: create a fresh KV object, then build the case's message on it. */
static uint8_t *kv_case(ucp_worker_h w, ucp_ep_h uep, pdcbb_msg_hdr_t *h, const char *c,
                        size_t *len)
{
    uint64_t shards[1] = {0};
    char name[64];
    snprintf(name, sizeof(name), "raw-%s-%ld", c, (long)time(NULL));
    pdcbb_kv_create_req_t cq = {.cont_id = pdcbb_meta_id_make(PDCBB_META_KIND_CONT, 0, 1),
                                .name = name, .key_type = PDCBB_KV_STRING,
                                .sharding = PDCBB_KV_SHARD_HASH, .max_key_len = 1024,
                                .max_value_len = 100, .shards = shards, .shards_count = 1};
    if (strcmp(c, "kvbadtype") == 0)
        cq.key_type = PDCBB_KV_INT;
    if (strcmp(c, "kvnan") == 0 || strcmp(c, "kvnegzero") == 0)
        cq.key_type = PDCBB_KV_FLOAT;
    if (strcmp(c, "kvshards") == 0)
        shards[0] = 99;
    if (strncmp(c, "kvpart", 6) == 0)
        cq.max_value_len = 0; /* no limit of its own: PDCBB_KV_VALUE_MAX */
    pdcbb_msg_hdr_t ch = *h;
    ch.op = PDCBB_OP_KV_CREATE;
    void *msg;
    size_t ml;
    pdcbb_msg_build(&ch, &cq, &msg, &ml);
    int ok = roundtrip(w, uep, msg, ml);
    free(msg);
    if (!ok) {
        printf("no reply to KV_CREATE\n");
        return NULL;
    }
    uint64_t id = created_id(PDCBB_OP_KV_CREATE);
    if (strcmp(c, "kvshards") == 0) {
        /* the create itself is the case: send it again as the case's message */
        if (id != 0) {
            printf("KV_CREATE accepted a shard on daemon 99\n");
            return NULL;
        }
        printf("create ");
        pdcbb_msg_build(&ch, &cq, &msg, &ml);
        *len = ml;
        return msg;
    }
    if (id == 0) {
        printf("KV_CREATE failed\n");
        return NULL;
    }
    /* a value in pieces: 64 KiB uploaded, then (kvpartwrap) a SET_PART record claiming 2^64-1
     * bytes, or (kvpartbig) a piece far beyond the largest value */
    static uint8_t piece[64 << 10];
    pdcbb_kv_part_req_t pq = {.id = id, .upload = 1, .offset = 0, .data = piece,
                              .data_len = sizeof(piece)};
    if (strcmp(c, "kvpartbig") == 0) {
        pq.offset = (uint64_t)1 << 40;
        h->op = PDCBB_OP_KV_PART;
        pdcbb_msg_build(h, &pq, &msg, &ml);
        *len = ml;
        return msg;
    }
    if (strcmp(c, "kvpartwrap") == 0) {
        pdcbb_msg_hdr_t ph = *h;
        ph.op = PDCBB_OP_KV_PART;
        pdcbb_msg_build(&ph, &pq, &msg, &ml);
        ok = roundtrip(w, uep, msg, ml);
        free(msg);
        free(reply);
        reply = NULL;
        got_reply = 0;
        if (!ok) {
            printf("no reply to KV_PART\n");
            return NULL;
        }
    }
    /* records */
    uint8_t recs[2048], key[1100];
    size_t rl = 0, kl;
    pdcbb_kv_wrec_t wr = {.op = PDCBB_KV_OP_SET, .value = (const uint8_t *)"val", .value_len = 3};
    kl = pdcbb_kv_enc_str("key", 3, key);
    if (strcmp(c, "kvbadtype") == 0)
        kl = pdcbb_kv_enc_str("ab", 2, key); /* 3 bytes, not 8 */
    if (strcmp(c, "kvnan") == 0 || strcmp(c, "kvnegzero") == 0) {
        uint64_t bits = c[2] == 'n' && c[3] == 'a' ? 0x7ff8000000000001ull : 0x8000000000000000ull;
        bits = (bits >> 63) ? ~bits : bits | (1ull << 63); /* as pdcbb_kv_enc_float would */
        for (int i = 0; i < 8; i++)
            key[i] = (uint8_t)(bits >> (56 - 8 * i));
        kl = 8;
    }
    if (strcmp(c, "kvlongkey") == 0) {
        memset(key, 'k', 1025);
        key[1025] = 0;
        kl = 1026;
    }
    if (strcmp(c, "kvnul") == 0) {
        memcpy(key, "a\0b", 4);
        kl = 4;
    }
    if (strcmp(c, "kvtoobig") == 0) {
        static uint8_t big[200];
        wr.value = big;
        wr.value_len = 200;
    }
    if (strcmp(c, "kvpartwrap") == 0) {
        wr.op = PDCBB_KV_OP_SET_PART;
        wr.upload = 1;
        wr.value_len = UINT64_MAX;
    }
    wr.key = key;
    wr.key_len = kl;
    rl = pdcbb_kv_wset_put(&wr, recs);
    if (strcmp(c, "kvrecop") == 0)
        recs[0] = 9;
    if (strcmp(c, "kvvaluelen") == 0)
        recs[3 + kl] = 0xff; /* low byte of the value length */
    if (strcmp(c, "kvtrailing") == 0)
        recs[rl++] = 0;
    pdcbb_kv_set_req_t sq = {.id = id, .tag = 5, .count = 1, .recs = recs, .recs_len = (uint32_t)rl};
    if (strcmp(c, "kvcount") == 0)
        sq.count = 5;
    if (strcmp(c, "kvmaxtag") == 0)
        sq.tag = PDCBB_KV_MAXTAG;
    pdcbb_kv_get_req_t gq = {.id = id, .tag = PDCBB_KV_MAXTAG + 1, .key = key, .key_len = (uint32_t)kl,
                             .max_len = 10};
    pdcbb_kv_trans_req_t tq = {.id = id, .tag = 9, .mode = 9};
    pdcbb_kv_list_req_t lq = {.id = id, .tag = 1, .flags = 0x80, .max = 10};
    const void *body = &sq;
    h->op = PDCBB_OP_KV_SET;
    if (strcmp(c, "kvbigtag") == 0 || strcmp(c, "kvunknown") == 0) {
        h->op = PDCBB_OP_KV_GET;
        body = &gq;
        if (c[2] == 'u') {
            gq.tag = 1;
            gq.id = pdcbb_meta_id_make(PDCBB_META_KIND_KV, 0, 999999);
        }
    }
    if (strncmp(c, "kvtrans", 7) == 0) {
        h->op = PDCBB_OP_KV_TRANS;
        body = &tq;
        if (c[7] == 't')
            tq.tag = 0, tq.mode = PDCBB_KV_TRANS_START;
    }
    if (strcmp(c, "kvlistflags") == 0) {
        h->op = PDCBB_OP_KV_LIST;
        body = &lq;
    }
    pdcbb_msg_build(h, body, &msg, &ml);
    *len = ml;
    return msg;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: pdcbb_rawmsg ENDPOINT_FILE TOKEN_FILE|none CASE [NAME]\n");
        return 2;
    }
    pdcbb_endpoint_t ep;
    if (pdcbb_endpoint_read(argv[1], &ep) != PDCBB_OK) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    uint8_t token[PDCBB_TOKEN_LEN] = {0};
    if (strcmp(argv[2], "none") != 0 && pdcbb_token_read(argv[2], token) != PDCBB_OK) {
        fprintf(stderr, "cannot read token %s\n", argv[2]);
        return 2;
    }
    const char *c = argv[3];
    if (strcmp(c, "wrongtoken") == 0)
        token[0] ^= 0xff;
    if (strcmp(c, "notoken") == 0)
        memset(token, 0, sizeof(token));

    pdcbb_msg_hdr_t h = {.magic = PDCBB_PROTO_MAGIC, .version = PDCBB_PROTO_VERSION,
                         .op = PDCBB_OP_STATS, .req_id = 7};
    memcpy(h.token, token, sizeof(token));
    pdcbb_cont_open_req_t q = {.name = "x"};
    const void *body = NULL;
    if (strcmp(c, "badop") == 0)
        h.op = 999;
    /* one region of 3 MiB at the start of a 4 MiB one-dimensional object of bytes */
    uint64_t descs[6] = {pdcbb_meta_id_make(PDCBB_META_KIND_OBJ, 0, 987654), 1, 1, 4u << 20, 0,
                         3u << 20};
    pdcbb_data_direct_req_t dq = {.mode = PDCBB_DIRECT_PROBE};
    if (strcmp(c, "readhuge") == 0) {
        h.op = PDCBB_OP_DATA_READ;
        static uint64_t rdesc[6];
        memcpy(rdesc, descs, sizeof(rdesc));
        rdesc[3] = rdesc[5] = (uint64_t)8 << 30;
        static pdcbb_data_read_req_t rq;
        rq.descs = rdesc;
        rq.descs_count = 6;
        body = &rq;
    }
    if (strcmp(c, "bulknotoken") == 0) {
        h.op = PDCBB_OP_DATA_WRITE;
        memset(h.token, 0, sizeof(h.token));
        static uint64_t wdesc[6];
        memcpy(wdesc, descs, sizeof(wdesc));
        wdesc[3] = wdesc[5] = (uint64_t)1 << 30;
        static pdcbb_data_write_req_t wq;
        wq.descs = wdesc;
        wq.descs_count = 6;
        body = &wq;
    }
    if (strncmp(c, "direct", 6) == 0) {
        h.op = PDCBB_OP_DATA_DIRECT;
        body = &dq;
    }
    if (strcmp(c, "directhold") == 0) {
        dq.mode = PDCBB_DIRECT_WRITE;
        dq.descs = descs;
        dq.descs_count = 6;
    }
    if (strcmp(c, "directbadmode") == 0)
        dq.mode = 9;
    /* Region locks: a box whose count does not match its ndim, a bad mode, an object that does
     * not exist, the release of a lock nobody holds. */
    uint64_t lbox[4] = {1, 0, 10, 99};
    pdcbb_lock_obtain_req_t lq = {.id = pdcbb_meta_id_make(PDCBB_META_KIND_OBJ, 0, 987654),
                                  .access = 2, .mode = 1, .box = lbox, .box_count = 3};
    pdcbb_lock_release_req_t lr = {.id = lq.id, .lock = 12345};
    if (strncmp(c, "lock", 4) == 0) {
        h.op = PDCBB_OP_LOCK_OBTAIN;
        body = &lq;
    }
    if (strcmp(c, "lockbadbox") == 0)
        lq.box_count = 4;
    if (strcmp(c, "lockbadmode") == 0)
        lq.mode = 5;
    if (strcmp(c, "lockrelease") == 0) {
        h.op = PDCBB_OP_LOCK_RELEASE;
        body = &lr;
    }
    char longkey[301];
    memset(longkey, 'k', 300);
    longkey[300] = 0;
    pdcbb_dart_insert_req_t drq = {.ref_type = 1, .key = "k", .value = "v", .data = 1};
    pdcbb_tag_search_req_t tsq = {.name = "n", .value_mode = 0};
    pdcbb_dart_search_req_t dsq = {.ref_type = 1, .key = "*", .value = "v"};
    if (strcmp(c, "dartstar") == 0) {
        h.op = PDCBB_OP_DART_SEARCH;
        body = &dsq;
    }
    if (strcmp(c, "dartlong") == 0 || strcmp(c, "dartbadtype") == 0) {
        h.op = PDCBB_OP_DART_INSERT;
        if (c[4] == 'l')
            drq.key = longkey;
        else
            drq.ref_type = 0;
        body = &drq;
    }
    if (strncmp(c, "tagsearch", 9) == 0) {
        h.op = PDCBB_OP_TAG_SEARCH;
        if (strcmp(c, "tagsearchbadmode") == 0)
            tsq.value_mode = 7;
        else
            tsq.name = "**";
        body = &tsq;
    }
    /* TABLE_GATHER (to daemon 0 of the job) that its checks refuse: as from itself, records
     * that do not parse, a record of another job, a record outside the sender's subtree. */
    char tgtext[2048] = "version=1\nrank=x\n--\n";
    pdcbb_table_gather_req_t tg = {.from = 1, .records = tgtext, .records_len = 20};
    if (strncmp(c, "gather", 6) == 0) {
        h.op = PDCBB_OP_TABLE_GATHER;
        body = &tg;
        pdcbb_endpoint_t te = ep;
        te.rank = 1;
        if (strcmp(c, "gatherself") == 0)
            tg.from = 0;
        if (strcmp(c, "gatherforeign") == 0)
            te.job_id = ep.job_id + 1;
        if (strcmp(c, "gatheroutside") == 0) {
            tg.from = 2; /* daemon 2 sending daemon 1's record */
        }
        if (strcmp(c, "gatherforeign") == 0 || strcmp(c, "gatheroutside") == 0) {
            pdcbb_endpoint_format(&te, 1, tgtext, sizeof(tgtext) - 4);
            strcat(tgtext, PDCBB_JOB_TABLE_SEP);
            tg.records_len = (uint32_t)strlen(tgtext);
        }
    }
    /* Queries (QUERY_EVAL, QUERY_VALUES) on a 100-element int object: a malformed program,
     * a piece outside the object, a type without values, an index outside the object. */
    uint64_t qdims[1] = {100}, qprog[3] = {1 | 1u << 8, 5, 0}, qpiece[3] = {0, 0, 100};
    uint64_t qidx[1] = {100};
    pdcbb_query_eval_req_t qe = {.id = descs[0], .type = 0, .mode = 1, .dims = qdims,
                                 .dims_count = 1, .prog = qprog, .prog_count = 3,
                                 .pieces = qpiece, .pieces_count = 3, .max_hits = 1};
    pdcbb_query_values_req_t qv = {.id = descs[0], .type = 0, .dims = qdims, .dims_count = 1,
                                   .idx = qidx, .idx_count = 1};
    if (strncmp(c, "query", 5) == 0) {
        h.op = PDCBB_OP_QUERY_EVAL;
        body = &qe;
    }
    if (strcmp(c, "querybadprog") == 0)
        qprog[0] = 1 | 9u << 8; /* operator 9 */
    if (strcmp(c, "querybadpiece") == 0)
        qpiece[1] = 50; /* elements 50..149 of 100 */
    if (strcmp(c, "querytype") == 0)
        qe.type = 4; /* PDC_STRING */
    if (strcmp(c, "queryvalues") == 0) {
        h.op = PDCBB_OP_QUERY_VALUES;
        body = &qv;
    }
    /* STRIDED_READ of a 10x10 int object: every other row and column, then one field spoilt. */
    uint64_t sd[3 + 7 * 2] = {descs[0], 4, 2, 10, 10, 0, 0, 2, 2, 5, 5, 1, 1, 0, 0, 10, 10};
    pdcbb_strided_read_req_t srq = {.descs = sd, .descs_count = 17};
    if (strncmp(c, "strided", 7) == 0) {
        h.op = PDCBB_OP_STRIDED_READ;
        body = &srq;
    }
    if (strcmp(c, "stridedcount0") == 0)
        sd[9] = 0;
    if (strcmp(c, "stridedblock") == 0)
        sd[11] = 3; /* block 3 > stride 2 */
    if (strcmp(c, "stridedoutside") == 0)
        sd[5] = 2; /* rows 2, 4, .., 10 of 10 */
    if (strcmp(c, "stridedndim") == 0)
        sd[2] = 17;
    if (strcmp(c, "stridedoverflow") == 0)
        sd[7] = UINT64_MAX / 2;
    if (strcmp(c, "stridedtruncated") == 0)
        srq.descs_count = 16;
    if (strcmp(c, "stridedwrite") == 0) /* declares 25 elements, sends none */
        h.op = PDCBB_OP_STRIDED_WRITE;
    /* A name as given on the command line, in each op that carries one. */
    const char *bad = argc > 4 ? argv[4] : "";
    uint64_t objid = pdcbb_meta_id_make(PDCBB_META_KIND_OBJ, 0, 1), kvshard[1] = {0};
    pdcbb_cont_create_req_t ncc = {.name = bad};
    pdcbb_cont_open_req_t nco = {.name = bad};
    pdcbb_obj_create_req_t noc = {.cont_id = pdcbb_meta_id_make(PDCBB_META_KIND_CONT, 0, 1),
                                  .name = bad, .type = 0};
    pdcbb_obj_open_req_t noo = {.name = bad};
    pdcbb_tag_put_req_t ntp = {.id = objid, .name = bad, .type = 0, .value = "abcd",
                               .value_len = 4};
    pdcbb_tag_get_req_t ntg = {.id = objid, .name = bad};
    pdcbb_tag_search_req_t nts = {.name = bad, .value_mode = 0};
    pdcbb_kv_create_req_t nkv = {.cont_id = noc.cont_id, .name = bad,
                                 .key_type = PDCBB_KV_STRING, .sharding = PDCBB_KV_SHARD_HASH,
                                 .max_key_len = 1024, .max_value_len = 100, .shards = kvshard,
                                 .shards_count = 1};
    static const struct {
        const char *c;
        unsigned op;
    } names[] = {{"namecont", PDCBB_OP_CONT_CREATE}, {"contopen", PDCBB_OP_CONT_OPEN},
                 {"nameobj", PDCBB_OP_OBJ_CREATE},   {"objopen", PDCBB_OP_OBJ_OPEN},
                 {"nametag", PDCBB_OP_TAG_PUT},      {"nametagget", PDCBB_OP_TAG_GET},
                 {"nametagsearch", PDCBB_OP_TAG_SEARCH}, {"namekv", PDCBB_OP_KV_CREATE}};
    const void *nbody[] = {&ncc, &nco, &noc, &noo, &ntp, &ntg, &nts, &nkv};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(c, names[i].c) == 0) {
            h.op = (uint16_t)names[i].op;
            body = nbody[i];
        }
    if (strcmp(c, "truncated") == 0 || strcmp(c, "trailing") == 0 ||
        strcmp(c, "badstring") == 0) {
        h.op = PDCBB_OP_CONT_OPEN;
        body = &q;
    }
    /* FORWARD: a STATS request for daemon 1, or what the daemon must refuse. */
    pdcbb_forward_req_t fq = {.rank = 1}, fq2 = {.rank = 1, .msg = "x", .msg_len = 1};
    pdcbb_auth_req_t fa = {.proof = NULL, .proof_len = 0};
    pdcbb_append_write_req_t faw = {.descs = NULL, .descs_count = 0};
    void *inner = NULL;
    size_t inner_len = 0;
    if (strncmp(c, "fwd", 3) == 0) {
        pdcbb_msg_hdr_t ih = h;
        const void *ib = NULL;
        ih.op = PDCBB_OP_STATS;
        if (strcmp(c, "fwdhello") == 0) {
            ih.op = PDCBB_OP_AUTH;
            ib = &fa;
        }
        if (strcmp(c, "fwdnested") == 0) {
            ih.op = PDCBB_OP_FORWARD;
            ib = &fq2;
        }
        if (strcmp(c, "fwddaemonop") == 0) {
            ih.op = PDCBB_OP_APPEND_WRITE;
            ib = &faw;
        }
        if (strcmp(c, "fwdreply") == 0)
            ih.flags = PDCBB_MSG_FLAG_REPLY;
        pdcbb_msg_build(&ih, ib, &inner, &inner_len);
        if (strcmp(c, "fwdtruncated") == 0)
            ((uint8_t *)inner)[24] += 5; /* payload_len */
        if (strcmp(c, "fwdself") == 0)
            fq.rank = 0;
        if (strcmp(c, "fwdrank") == 0)
            fq.rank = 999;
        fq.msg = inner;
        fq.msg_len = (uint32_t)inner_len;
        h.op = PDCBB_OP_FORWARD;
        body = &fq;
    }
    /* GATHER: STATS for every daemon, or what the daemon must refuse. */
    uint64_t granks[2] = {1, 1};
    pdcbb_gather_req_t gq = {.tree = 1, .every = 1};
    void *gmsgs = NULL;
    if (strncmp(c, "fanout", 6) == 0) {
        pdcbb_msg_hdr_t ih = h;
        pdcbb_obj_create_req_t oc = {.name = "x"};
        size_t one_len = 0;
        ih.op = strcmp(c, "fanoutop") == 0 ? PDCBB_OP_OBJ_CREATE : PDCBB_OP_STATS;
        pdcbb_msg_build(&ih, ih.op == PDCBB_OP_OBJ_CREATE ? (const void *)&oc : NULL, &inner,
                        &one_len);
        gmsgs = calloc(1, 2 * one_len + 8);
        memcpy(gmsgs, inner, one_len);
        memcpy((uint8_t *)gmsgs + one_len, inner, one_len);
        gq.msgs = gmsgs;
        gq.msgs_len = (uint32_t)one_len;
        if (strcmp(c, "fanoutgood") != 0 && strcmp(c, "fanoutop") != 0 &&
            strcmp(c, "fanouttree") != 0 && strcmp(c, "fanouttrailing") != 0) {
            gq.every = strcmp(c, "fanoutevery") == 0;
            gq.ranks = granks;
            gq.ranks_count = 1;
        }
        if (strcmp(c, "fanoutrank") == 0)
            granks[0] = 999;
        if (strcmp(c, "fanoutbelow") == 0)
            gq.tree = 2;
        if (strcmp(c, "fanouttwice") == 0) {
            gq.ranks_count = 2;
            gq.msgs_len = (uint32_t)(2 * one_len);
        }
        if (strcmp(c, "fanoutcount") == 0)
            gq.ranks_count = 2;
        if (strcmp(c, "fanouttree") == 0)
            gq.tree = 0;
        if (strcmp(c, "fanouttrailing") == 0)
            gq.msgs_len += 3;
        h.op = PDCBB_OP_GATHER;
        body = &gq;
    }
    void *msg;
    size_t len;
    if (h.op < PDCBB_OP_MAX_)
        pdcbb_msg_build(&h, body, &msg, &len);
    else {
        msg = calloc(1, PDCBB_HDR_LEN);
        pdcbb_hdr_encode(&h, msg);
        len = PDCBB_HDR_LEN;
    }
    free(inner);
    free(gmsgs);
    uint8_t *m = realloc(msg, len + 16);
    if (strcmp(c, "badmagic") == 0)
        m[0] ^= 0x55;
    if (strcmp(c, "badversion") == 0)
        m[4] = 77;
    if (strcmp(c, "truncated") == 0)
        len -= 1, m[24] -= 0; /* declared length stays, one byte fewer sent */
    if (strcmp(c, "trailing") == 0) {
        m[len] = 0;
        m[24] += 1; /* declare and send one byte more than the body has */
        len += 1;
    }
    if (strcmp(c, "badstring") == 0)
        m[len - 1] = 'x'; /* the name loses its NUL */
    if (strcmp(c, "short") == 0)
        len = 10;
    if (strcmp(c, "oversized") == 0)
        m[27] = 0x7f;

    pdcbb_ucx_t u;
    char err[512];
    const char *tls = getenv("PDCBB_UCX_TLS");
    if (pdcbb_ucx_open(&u, tls ? tls : "cma,tcp", "lo", err, sizeof(err)) != PDCBB_OK) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    ucp_am_handler_param_t hp = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                                               UCP_AM_HANDLER_PARAM_FIELD_CB |
                                               UCP_AM_HANDLER_PARAM_FIELD_FLAGS,
                                 .id = PDCBB_AM_ID_MSG,
                                 .cb = on_reply,
                                 .flags = UCP_AM_FLAG_WHOLE_MSG};
    ucp_worker_set_am_recv_handler(u.worker, &hp);
    struct sockaddr_storage ss;
    socklen_t sl;
    pdcbb_sockaddr_make(ep.ip, ep.port, &ss, &sl);
    ucp_ep_params_t epp = {.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                                         UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                         UCP_EP_PARAM_FIELD_ERR_HANDLER,
                           .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
                           .sockaddr = {(const struct sockaddr *)&ss, sl},
                           .err_mode = UCP_ERR_HANDLING_MODE_PEER,
                           .err_handler = {on_error, NULL}};
    ucp_ep_h uep;
    if (ucp_ep_create(u.worker, &epp, &uep) != UCS_OK) {
        fprintf(stderr, "cannot connect\n");
        return 1;
    }
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags = UCP_AM_SEND_FLAG_REPLY};
    /* these return early: the message is not sent (a leak report at exit would also lose the
     * output still buffered: LeakSanitizer ends the process without flushing stdio) */
    if (strcmp(c, "noauthwait") == 0 || strcmp(c, "noauthflood") == 0) {
        free(m);
        int r = c[6] == 'w' ? wait_closed(u.worker) : flood(u.worker, &epp);
        fflush(stdout);
        return r;
    }
    /* Strangers (no handshake): the token alone must open nothing, a big message nothing. */
    if (strcmp(c, "tokennoauth") != 0 && strcmp(c, "bulknotoken") != 0) {
        int hs = handshake(u.worker, uep, token);
        if (hs != PDCBB_OK)
            printf("handshake %s\n", hs < 0 ? "no reply" : pdcbb_errname(hs));
    }
    if (strncmp(c, "kv", 2) == 0 || strncmp(c, "map", 3) == 0) {
        free(m);
        m = c[0] == 'k' ? kv_case(u.worker, uep, &h, c, &len)
                        : map_case(u.worker, uep, &h, c, &len);
        if (m == NULL)
            return 1;
    }
    if (strcmp(c, "querybig") == 0)
        return query_big(u.worker, uep, &h);
    if (strcmp(c, "goodtimed") == 0) {
        /* the connection first (its set-up is not the daemon's answer time), then the timed one */
        if (!roundtrip(u.worker, uep, m, len)) {
            printf("no reply to the first STATS\n");
            return 1;
        }
        free(reply);
        reply = NULL;
        got_reply = 0;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int wait_s = 3;
    if (strncmp(c, "bulk", 4) == 0) {
        /* a DATA_WRITE whose bulk part is 1 GiB (never waited for: the reply comes first) */
        size_t big = (size_t)1 << 30;
        void *data = malloc(big);
        if (data == NULL)
            return 2;
        memset(data, 7, big);
        wait_s = 30;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ucp_am_send_nbx(uep, PDCBB_AM_ID_DATA, m, len, data, big, &prm);
    } else {
        pdcbb_ucx_wait(u.worker, ucp_am_send_nbx(uep, PDCBB_AM_ID_MSG, NULL, 0, m, len, &prm));
    }
    do {
        ucp_worker_progress(u.worker);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (!got_reply && (t.tv_sec - t0.tv_sec) < wait_s);
    if (strncmp(c, "bulk", 4) == 0 || strcmp(c, "goodtimed") == 0)
        printf("reply after %.0f ms: ",
               (double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6);
    int rc = 1;
    if (got_reply) {
        pdcbb_msg_hdr_t rh;
        pdcbb_err_t e = pdcbb_hdr_decode(reply, reply_len, &rh);
        if (e != PDCBB_OK) {
            printf("bad reply: %s\n", pdcbb_errname(e));
        } else {
            printf("status %s\n", pdcbb_errname(rh.status));
            pdcbb_data_direct_rep_t dr;
            if (rh.status == PDCBB_OK && rh.op == PDCBB_OP_DATA_DIRECT &&
                pdcbb_body_decode(PDCBB_OP_DATA_DIRECT, 1, (uint8_t *)reply + PDCBB_HDR_LEN,
                                  rh.payload_len, &dr) == PDCBB_OK) {
                printf("dir '%s' results", dr.dir ? dr.dir : "");
                for (uint32_t i = 0; i < dr.results_count; i++)
                    printf(" %llu", (unsigned long long)dr.results[i]);
                printf("\n");
                pdcbb_body_free(PDCBB_OP_DATA_DIRECT, 1, &dr);
            }
            pdcbb_forward_rep_t fr;
            pdcbb_msg_hdr_t ih;
            if (rh.status == PDCBB_OK && rh.op == PDCBB_OP_FORWARD &&
                pdcbb_body_decode(PDCBB_OP_FORWARD, 1, (uint8_t *)reply + PDCBB_HDR_LEN,
                                  rh.payload_len, &fr) == PDCBB_OK) {
                if (pdcbb_hdr_decode(fr.msg, fr.msg_len, &ih) == PDCBB_OK)
                    printf("inner status %s op %s\n", pdcbb_errname(ih.status),
                           pdcbb_op_name(ih.op));
                else
                    printf("inner message malformed\n");
                pdcbb_body_free(PDCBB_OP_FORWARD, 1, &fr);
            }
            pdcbb_gather_rep_t gr;
            if (rh.status == PDCBB_OK && rh.op == PDCBB_OP_GATHER &&
                pdcbb_body_decode(PDCBB_OP_GATHER, 1, (uint8_t *)reply + PDCBB_HDR_LEN,
                                  rh.payload_len, &gr) == PDCBB_OK) {
                size_t off = 0, l;
                for (uint32_t i = 0; i < gr.ranks_count; i++, off += l)
                    if (pdcbb_hdr_decode_next(gr.msgs + off, gr.msgs_len - off, &ih, &l) ==
                        PDCBB_OK)
                        printf("daemon %llu status %s op %s\n", (unsigned long long)gr.ranks[i],
                               pdcbb_errname(ih.status), pdcbb_op_name(ih.op));
                    else
                        printf("daemon %llu: reply malformed\n", (unsigned long long)gr.ranks[i]);
                pdcbb_body_free(PDCBB_OP_GATHER, 1, &gr);
            }
            if (rh.status == PDCBB_OK && rh.op == PDCBB_OP_STATS) {
                pdcbb_stats_rep_t s;
                if (pdcbb_body_decode(PDCBB_OP_STATS, 1, (uint8_t *)reply + PDCBB_HDR_LEN,
                                      rh.payload_len, &s) == PDCBB_OK) {
                    printf("requests %llu auth_failures %llu proto_errors %llu objects %llu "
                           "shm_requests %llu shm_channels %llu shm_open %llu\n",
                           (unsigned long long)s.requests, (unsigned long long)s.auth_failures,
                           (unsigned long long)s.proto_errors, (unsigned long long)s.objects,
                           (unsigned long long)s.shm_requests,
                           (unsigned long long)s.shm_channels,
                           (unsigned long long)s.shm_channels_open);
                    pdcbb_body_free(PDCBB_OP_STATS, 1, &s); /* the per-kind counters array */
                }
            }
            rc = 0;
        }
    } else {
        printf("no reply\n");
    }
    ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                              .flags = UCP_EP_CLOSE_FLAG_FORCE};
    pdcbb_ucx_wait(u.worker, ucp_ep_close_nbx(uep, &cp));
    pdcbb_ucx_close(&u);
    free(m);
    free(reply);
    return rc;
}
