/*
 * bbd_table_gather.c - the daemons of a job of several nodes gather the job's table of
 * daemons up and down a tree (TABLE_GATHER; docs/PROTOCOL.md, "Finding the daemons").
 *
 * The daemons form a tree by rank: the children of daemon k are k*F+1 .. k*F+F (F the config
 * key table_fanout). Each daemon publishes its own record in the rendezvous directory, waits
 * for the records of its subtree from its children, then sends them with its own to its
 * parent, which it finds by reading the parent's record alone. The request stays unanswered
 * until the root has every record; the root answers its children with the whole table, and
 * each daemon answers its own children and its waiting clients with it. A job of N daemons
 * takes about 2 log_F N rounds and N-1 requests in all; each daemon reads one record (its
 * parent's) from the shared filesystem instead of all N.
 *
 * A node whose prolog failed writes node-I.error in the rendezvous directory. A daemon that
 * waits for a child, or whose parent has not published itself, looks for that file (after a
 * grace period, then less and less often): a failed child's children report to this daemon
 * instead, and a daemon whose parent failed sends to the nearest ancestor that did not. The
 * root then knows every daemon that is missing, and the table ends incomplete with the first
 * missing node's reason, which every client of the job gets. Whatever is still missing after
 * twice ready_timeout is given up as missing.
 *
 * A restarted daemon (job.table is in its job directory) does not gather again: it takes
 * job.table with its own new record; the others learn of it when their clients ask again
 * (JOB_TABLE's refresh).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bbd.h"
#include "bbd_peer.h"
#include "pdcbb_log.h"

/* A child's or client's request answered once the table is gathered. */
typedef struct gather_wait {
    struct gather_wait *next;
    bbd_conn_t *conn;
    pdcbb_msg_hdr_t hdr;
} gather_wait_t;

enum { RANK_UNKNOWN = 0, RANK_KNOWN = 1, RANK_MISSING = 2 };
enum { PHASE_OFF = 0, PHASE_GATHER, PHASE_SEND, PHASE_DONE };

/* A daemon's gathering of the job's table (d->tgather: made by bbd_table_gather_start when
 * the job gathers one, freed by bbd_table_gather_free; NULL: PHASE_OFF). */
struct bbd_tgather {
    int phase;
    unsigned me, n, fanout;
    pdcbb_endpoint_t *rec; /* by rank: the records gathered */
    uint8_t *state;        /* by rank: RANK_* */
    unsigned settled;      /* ranks of this daemon's subtree known or missing */
    unsigned subtree;      /* ranks of this daemon's subtree */
    gather_wait_t *waits;
    double start, deadline, next_check, check_interval, next_try, try_interval;
    unsigned target;    /* the ancestor this daemon sends to */
    int in_flight;      /* a TABLE_GATHER to target awaits its answer */
    char problem[2048]; /* why the table is incomplete (PHASE_DONE without a table) */
    unsigned record_reads, error_checks, sends;
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned parent_of(const struct bbd_tgather *g, unsigned k)
{
    return (k - 1) / g->fanout;
}

/* 1 if rank is in the subtree of k (k included). */
static int in_subtree(const struct bbd_tgather *g, unsigned rank, unsigned k)
{
    while (rank > k)
        rank = parent_of(g, rank);
    return rank == k;
}

/* Call fn for every rank of the subtree of k, level by level (the ranks of a level are one
 * range in this numbering). */
static void for_subtree(const struct bbd_tgather *g, unsigned k,
                        void (*fn)(unsigned rank, void *arg), void *arg)
{
    uint64_t lo = k, hi = k;
    while (lo < g->n) {
        for (uint64_t r = lo; r <= hi && r < g->n; r++)
            fn((unsigned)r, arg);
        lo = lo * g->fanout + 1;
        hi = hi * g->fanout + g->fanout;
    }
}

static void count_rank(unsigned rank, void *arg)
{
    (void)rank;
    (*(unsigned *)arg)++;
}

static void settle(struct bbd_tgather *g, unsigned rank, int state)
{
    if (g->state[rank] != RANK_UNKNOWN)
        return;
    g->state[rank] = (uint8_t)state;
    g->settled++;
}

/* The node of rank has an error file: its prolog failed (one file read). */
static int node_failed(bbd_t *d, unsigned rank)
{
    struct bbd_tgather *g = d->tgather;
    char path[PATH_MAX];
    unsigned spn = d->jobinfo.servers_per_node ? d->jobinfo.servers_per_node : 1;
    g->error_checks++;
    return pdcbb_rendezvous_error_path(d->jobinfo.rendezvous, rank / spn, path, sizeof(path)) ==
               PDCBB_OK &&
           access(path, F_OK) == 0;
}

/* 1 if the JOB_TABLE text (len bytes) holds every daemon of this job once, in rank order. */
static int table_whole(const bbd_t *d, const char *text, size_t len)
{
    size_t pos = 0;
    unsigned seen = 0;
    pdcbb_endpoint_t e;
    pdcbb_err_t rc;
    while ((rc = pdcbb_job_table_next(text, len, &pos, &e)) == PDCBB_OK && e.rank == seen &&
           e.job_id == d->job_id && e.nservers == d->nservers)
        seen++;
    return seen == d->nservers && rc == PDCBB_ERR_NOT_FOUND;
}

/* ------------------------------------------------------------------ answers */

static void answer_waits(bbd_t *d)
{
    struct bbd_tgather *g = d->tgather;
    pdcbb_job_table_rep_t p = {.complete = d->table != NULL,
                               .records = d->table ? d->table : "",
                               .records_len = d->table ? (uint32_t)d->table_len : 0,
                               .problem = d->table ? "" : g->problem};
    while (g->waits) {
        gather_wait_t *w = g->waits;
        g->waits = w->next;
        bbd_server_answer(d, w->conn, &w->hdr, PDCBB_OK, &p);
        free(w);
    }
}

static void finish(bbd_t *d)
{
    struct bbd_tgather *g = d->tgather;
    g->phase = PHASE_DONE;
    if (d->table)
        PDCBB_INFO("every daemon of the job found: table in %s/job.table (gathered in %.3f s; "
                   "%u record reads, %u error-file checks, %u requests sent)",
                   d->job_dir, now_seconds() - g->start, g->record_reads, g->error_checks,
                   g->sends);
    else
        PDCBB_WARN("the job's table is incomplete: %s", g->problem);
    answer_waits(d);
    free(g->rec);
    free(g->state);
    g->rec = NULL;
    g->state = NULL;
}

/* The root has its subtree, which is the job: the table, or the first missing node. */
static void root_finish(bbd_t *d)
{
    struct bbd_tgather *g = d->tgather;
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (unsigned k = 0; k < g->n; k++) {
        if (g->state[k] != RANK_KNOWN) {
            bbd_table_missing_reason(d, k, g->problem, sizeof(g->problem));
            free(text);
            finish(d);
            return;
        }
        if (bbd_table_append(&text, &len, &cap, &g->rec[k]) != PDCBB_OK) {
            snprintf(g->problem, sizeof(g->problem),
                     "daemon %u: out of memory building the job's "
                     "table",
                     d->rank);
            free(text);
            finish(d);
            return;
        }
    }
    bbd_table_set(d, text, len);
    finish(d);
}

/* ------------------------------------------------------------------ sending up */

static void send_done(bbd_t *d, void *arg, pdcbb_err_t status, const char *why, const uint8_t *msg,
                      size_t len)
{
    struct bbd_tgather *g = d->tgather;
    (void)arg;
    g->in_flight = 0;
    if (g->phase != PHASE_SEND)
        return;
    pdcbb_msg_hdr_t h;
    pdcbb_job_table_rep_t p;
    if (status == PDCBB_OK && (status = pdcbb_hdr_decode(msg, len, &h)) == PDCBB_OK &&
        (status = pdcbb_body_decode(h.op, 1, msg + PDCBB_HDR_LEN, h.payload_len, &p)) == PDCBB_OK) {
        if (p.complete) {
            /* Check it before keeping it: every rank once, of this job. */
            char *text =
                table_whole(d, p.records, p.records_len) ? malloc(p.records_len + 1) : NULL;
            if (text) {
                memcpy(text, p.records, p.records_len);
                text[p.records_len] = '\0';
                bbd_table_set(d, text, p.records_len);
            } else {
                snprintf(g->problem, sizeof(g->problem),
                         "daemon %u sent a job table that does not hold the job's %u daemons "
                         "in order",
                         g->target, g->n);
            }
        } else {
            snprintf(g->problem, sizeof(g->problem), "%s",
                     p.problem && *p.problem ? p.problem : "the job's table is incomplete");
        }
        pdcbb_body_free(h.op, 1, &p);
        finish(d);
        return;
    }
    /* Not answered (the ancestor stopped, or is restarting): try again until the deadline. */
    PDCBB_INFO("sending this daemon's part of the job's table to daemon %u: %s (trying again)",
               g->target, why && *why ? why : pdcbb_strerror(status));
    g->next_try = now_seconds() + g->try_interval;
}

/* Send the subtree's records to the nearest ancestor that did not fail, if it is there. */
static void try_send(bbd_t *d, double now)
{
    struct bbd_tgather *g = d->tgather;
    pdcbb_endpoint_t e;
    for (;;) {
        g->record_reads++;
        if (pdcbb_rendezvous_read(d->jobinfo.rendezvous, g->target, &e) == PDCBB_OK &&
            e.job_id == d->job_id && e.nservers == d->nservers)
            break;
        if (now - g->start < 1.0 || !node_failed(d, g->target)) {
            g->next_try = now + g->try_interval;
            g->try_interval = g->try_interval * 2 > 1.0 ? 1.0 : g->try_interval * 2;
            return;
        }
        if (g->target == 0) {
            bbd_table_missing_reason(d, 0, g->problem, sizeof(g->problem));
            finish(d);
            return;
        }
        PDCBB_INFO("daemon %u's node failed to start: sending to daemon %u instead", g->target,
                   parent_of(g, g->target));
        g->target = parent_of(g, g->target);
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    uint64_t *missing = malloc(sizeof(uint64_t) * (g->n ? g->n : 1));
    uint32_t nmissing = 0;
    pdcbb_err_t rc = missing ? PDCBB_OK : PDCBB_ERR_NOMEM;
    for (unsigned k = g->me; rc == PDCBB_OK && k < g->n; k++) {
        if (g->state[k] == RANK_KNOWN && in_subtree(g, k, g->me))
            rc = bbd_table_append(&text, &len, &cap, &g->rec[k]);
        else if (g->state[k] == RANK_MISSING)
            missing[nmissing++] = k;
    }
    char why[512] = "";
    if (rc == PDCBB_OK) {
        pdcbb_table_gather_req_t q = {.from = g->me,
                                      .records = text,
                                      .records_len = (uint32_t)len,
                                      .missing = missing,
                                      .missing_count = nmissing};
        rc = bbd_peer_send(d, g->target, PDCBB_OP_TABLE_GATHER, &q, NULL, 0, PDCBB_KIND_OTHER,
                           send_done, NULL, why, sizeof(why));
    }
    free(text);
    free(missing);
    if (rc == PDCBB_OK) {
        g->in_flight = 1;
        g->sends++;
        return;
    }
    PDCBB_INFO("cannot send this daemon's part of the job's table to daemon %u: %s", g->target,
               why[0] ? why : pdcbb_strerror(rc));
    g->next_try = now + g->try_interval;
    g->try_interval = g->try_interval * 2 > 1.0 ? 1.0 : g->try_interval * 2;
}

/* ------------------------------------------------------------------ gathering */

typedef struct {
    bbd_t *d;
    double now;
} check_arg_t;

/* A rank this daemon waits for directly (a child, or a child of a failed daemon): missing if
 * its node failed. */
static void check_rank(unsigned rank, void *argp)
{
    check_arg_t *a = argp;
    struct bbd_tgather *g = a->d->tgather;
    if (rank == g->me || g->state[rank] != RANK_UNKNOWN)
        return;
    unsigned p = parent_of(g, rank);
    if (p != g->me && g->state[p] != RANK_MISSING)
        return;
    if (node_failed(a->d, rank))
        settle(g, rank, RANK_MISSING);
}

static void give_up_rank(unsigned rank, void *arg)
{
    struct bbd_tgather *g = arg;
    settle(g, rank, RANK_MISSING);
}

static void subtree_done(bbd_t *d, double now)
{
    struct bbd_tgather *g = d->tgather;
    if (g->me == 0) {
        root_finish(d);
        return;
    }
    g->phase = PHASE_SEND;
    g->target = parent_of(g, g->me);
    g->try_interval = 0.01;
    try_send(d, now);
}

void bbd_table_gather_start(bbd_t *d, const pdcbb_endpoint_t *self)
{
    if (d->tgather != NULL || !d->have_jobinfo || d->jobinfo.nnodes <= 1 ||
        d->jobinfo.rendezvous[0] == '\0' || d->nservers < 2)
        return;
    struct bbd_tgather *g = d->tgather = calloc(1, sizeof(*g));
    if (g == NULL) {
        PDCBB_ERROR("daemon %u: out of memory to gather the job's table", d->rank);
        return;
    }
    g->me = d->rank;
    g->n = d->nservers;
    g->fanout = bbd_tree_fanout(d);
    g->start = now_seconds();
    g->deadline = g->start + 2 * d->cfg.ready_timeout;
    g->next_check = g->start + 1.0; /* failed nodes are looked for after this grace period */
    g->check_interval = 0.25;
    g->phase = PHASE_GATHER;

    /* A restarted daemon: its node's job.table, with its own new record. */
    char path[PATH_MAX];
    size_t cap = (size_t)g->n * 512 + 2, tlen = 0;
    char *text = malloc(cap);
    if (text && pdcbb_jobdir_path(d->job_dir, "job.table", path, sizeof(path)) == PDCBB_OK &&
        pdcbb_read_text(path, text, cap - 1) == PDCBB_OK) {
        strcat(text, "\n"); /* the text reader took the last separator's newline */
        tlen = strlen(text);
        if (table_whole(d, text, tlen)) {
            d->table = text;
            d->table_len = tlen;
            text = NULL;
            bbd_table_replace(d, self);
            PDCBB_INFO("restarted: the job's table from %s, with this daemon's new record", path);
            g->phase = PHASE_DONE;
        }
    }
    free(text);
    if (g->phase == PHASE_DONE)
        return;

    g->rec = calloc(g->n, sizeof(*g->rec));
    g->state = calloc(g->n, 1);
    if (g->rec == NULL || g->state == NULL) {
        snprintf(g->problem, sizeof(g->problem), "daemon %u: out of memory", d->rank);
        finish(d);
        return;
    }
    for_subtree(g, g->me, count_rank, &g->subtree);
    g->rec[g->me] = *self;
    settle(g, g->me, RANK_KNOWN);
    if (g->settled == g->subtree)
        subtree_done(d, g->start);
}

int bbd_table_poll(bbd_t *d)
{
    struct bbd_tgather *g = d->tgather;
    if (g == NULL)
        return -1;
    double now = now_seconds();
    if (g->phase == PHASE_GATHER) {
        if (g->settled < g->subtree && now >= g->next_check) {
            check_arg_t a = {d, now};
            for_subtree(g, g->me, check_rank, &a);
            g->check_interval = g->check_interval * 2 > 4.0 ? 4.0 : g->check_interval * 2;
            g->next_check = now + g->check_interval;
        }
        if (g->settled < g->subtree && now > g->deadline) {
            PDCBB_WARN("daemons of this daemon's subtree did not report within %.0f s: given "
                       "up as missing",
                       2 * d->cfg.ready_timeout);
            for_subtree(g, g->me, give_up_rank, g);
        }
        if (g->settled == g->subtree)
            subtree_done(d, now);
    }
    if (g->phase == PHASE_SEND && !g->in_flight) {
        if (now > g->deadline) {
            bbd_table_missing_reason(d, g->target, g->problem, sizeof(g->problem));
            finish(d);
        } else if (now >= g->next_try) {
            try_send(d, now);
        }
    }
    if (g->phase == PHASE_GATHER) {
        double next = g->next_check < g->deadline ? g->next_check : g->deadline;
        return (int)((next - now) * 1000) + 1;
    }
    if (g->phase == PHASE_SEND && !g->in_flight)
        return (int)((g->next_try - now) * 1000) + 1;
    return -1;
}

int bbd_table_gather_defer(bbd_req_t *r)
{
    struct bbd_tgather *g = r->d->tgather;
    if (g == NULL || (g->phase != PHASE_GATHER && g->phase != PHASE_SEND))
        return 0;
    if (r->conn == NULL || r->hdr == NULL)
        return 0; /* no connection to answer on later (the test harness) */
    gather_wait_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return 0;
    w->conn = r->conn;
    w->hdr = *r->hdr;
    bbd_conn_ref(r->conn);
    w->next = g->waits;
    g->waits = w;
    r->deferred = 1;
    return 1;
}

int bbd_table_gather_problem(bbd_t *d, char *problem, size_t plen)
{
    const struct bbd_tgather *g = d->tgather;
    if (g == NULL)
        return 0;
    if (g->phase == PHASE_GATHER || g->phase == PHASE_SEND) {
        snprintf(problem, plen, "the daemons are still gathering the job's table");
        return 1;
    }
    if (g->phase == PHASE_DONE && g->problem[0]) {
        snprintf(problem, plen, "%s", g->problem);
        return 1;
    }
    return 0;
}

pdcbb_err_t bbd_table_gather_record(bbd_t *d, unsigned rank, pdcbb_endpoint_t *out)
{
    const struct bbd_tgather *g = d->tgather;
    if (g == NULL || g->state == NULL || rank >= g->n || g->state[rank] != RANK_KNOWN)
        return PDCBB_ERR_NOT_FOUND;
    *out = g->rec[rank];
    return PDCBB_OK;
}

void bbd_table_gather_free(bbd_t *d)
{
    struct bbd_tgather *g = d->tgather;
    if (g == NULL)
        return;
    while (g->waits) {
        gather_wait_t *w = g->waits;
        g->waits = w->next;
        bbd_conn_unref(d, w->conn);
        free(w);
    }
    free(g->rec);
    free(g->state);
    free(g);
    d->tgather = NULL;
}

/* ------------------------------------------------------------------ TABLE_GATHER */

pdcbb_err_t bbd_op_table_gather(bbd_req_t *r, const pdcbb_table_gather_req_t *q,
                                pdcbb_table_gather_rep_t *p)
{
    bbd_t *d = r->d;
    struct bbd_tgather *g = d->tgather;
    if (g == NULL || g->phase == PHASE_OFF) {
        PDCBB_WARN("TABLE_GATHER from daemon %u: this job gathers no table (one node, or no "
                   "rendezvous directory)",
                   q->from);
        return PDCBB_ERR_INVAL;
    }
    if (q->from >= d->nservers || q->from == d->rank || !in_subtree(g, q->from, d->rank)) {
        PDCBB_WARN("TABLE_GATHER from daemon %u: not of this daemon's subtree", q->from);
        return PDCBB_ERR_INVAL;
    }
    /* Check everything before taking anything: every record and missing rank of the
     * subtree, records of this job. */
    size_t pos = 0;
    pdcbb_endpoint_t e;
    pdcbb_err_t rc;
    unsigned nrec = 0;
    while ((rc = pdcbb_job_table_next(q->records, q->records_len, &pos, &e)) == PDCBB_OK) {
        if (e.job_id != d->job_id || e.nservers != d->nservers || e.rank >= d->nservers ||
            e.rank == d->rank || !in_subtree(g, e.rank, q->from)) {
            PDCBB_WARN("TABLE_GATHER from daemon %u: a record of daemon %u of job %" PRIu64
                       " that is not of its subtree",
                       q->from, e.rank, e.job_id);
            return PDCBB_ERR_INVAL;
        }
        nrec++;
    }
    if (rc != PDCBB_ERR_NOT_FOUND || nrec == 0) {
        PDCBB_WARN("TABLE_GATHER from daemon %u: %s", q->from,
                   rc != PDCBB_ERR_NOT_FOUND ? "a malformed record"
                                             : "no record (its own at least)");
        return PDCBB_ERR_INVAL;
    }
    for (uint32_t i = 0; i < q->missing_count; i++)
        if (q->missing[i] >= d->nservers || !in_subtree(g, (unsigned)q->missing[i], d->rank) ||
            q->missing[i] == d->rank) {
            PDCBB_WARN("TABLE_GATHER from daemon %u: missing daemon %" PRIu64
                       " is not of this daemon's subtree",
                       q->from, q->missing[i]);
            return PDCBB_ERR_INVAL;
        }
    if (g->phase == PHASE_DONE) {
        /* Late (a restarted daemon): the table as it is, with the sender's record. */
        pos = 0;
        while (pdcbb_job_table_next(q->records, q->records_len, &pos, &e) == PDCBB_OK)
            if (e.rank == q->from && d->table)
                bbd_table_replace(d, &e);
        p->complete = d->table != NULL;
        p->records = d->table ? d->table : "";
        p->records_len = d->table ? (uint32_t)d->table_len : 0;
        p->problem = d->table ? "" : g->problem;
        return PDCBB_OK;
    }
    if (g->phase == PHASE_GATHER) {
        pos = 0;
        while (pdcbb_job_table_next(q->records, q->records_len, &pos, &e) == PDCBB_OK) {
            if (g->state[e.rank] == RANK_UNKNOWN)
                g->rec[e.rank] = e;
            settle(g, e.rank, RANK_KNOWN);
        }
        for (uint32_t i = 0; i < q->missing_count; i++)
            settle(g, (unsigned)q->missing[i], RANK_MISSING);
    }
    /* Answered with the whole table (after this daemon's ancestors answered). */
    if (!bbd_table_gather_defer(r))
        return PDCBB_ERR_UNSUPPORTED;
    /* The subtree may be complete now: the event loop's next bbd_table_poll sends it on. */
    return PDCBB_OK;
}
