/*
 * bbd_table.c - the job's table of daemons, as this daemon knows it (JOB_TABLE).
 *
 * Node-local storage is private to its node, so a client reads only its own node's endpoint
 * records and asks a daemon of its node for the rest. In a job of one node that daemon reads
 * them from the job directory. In a job of several nodes the daemons gather the table when they
 * start, up and down a tree of daemons (bbd_table_gather.c): no daemon reads the records of
 * the others from the shared filesystem, and a JOB_TABLE that comes before the table is
 * gathered is answered once it is.
 *
 * The table is cached in memory and as <job dir>/job.table, which clients of this node read
 * instead of sending a message. A client that finds a daemon gone asks again naming it
 * (refresh): this daemon re-reads that one record from the rendezvous directory, where a
 * restarted daemon published its new address. A restarted daemon starts from its node's
 * job.table.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bbd.h"
#include "pdcbb_log.h"

pdcbb_err_t bbd_table_publish(bbd_t *d, const pdcbb_endpoint_t *ep, char *err, size_t errlen)
{
    if (pdcbb_jobinfo_read(d->job_dir, &d->jobinfo) == PDCBB_OK)
        d->have_jobinfo = 1;
    if (!d->have_jobinfo || d->jobinfo.nnodes <= 1 || d->jobinfo.rendezvous[0] == '\0')
        return PDCBB_OK;
    pdcbb_endpoint_t e = *ep;
    memcpy(e.token, d->token, PDCBB_TOKEN_LEN);
    pdcbb_err_t rc = pdcbb_rendezvous_publish(d->jobinfo.rendezvous, &e);
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "cannot publish this daemon in the job's rendezvous directory %s: %s",
                 d->jobinfo.rendezvous, pdcbb_strerror(rc));
        return rc;
    }
    pdcbb_rendezvous_record_path(d->jobinfo.rendezvous, d->rank, d->rendezvous_record,
                                 sizeof(d->rendezvous_record));
    PDCBB_INFO("published in %s", d->rendezvous_record);
    bbd_table_gather_start(d, &e);
    return PDCBB_OK;
}

void bbd_table_unpublish(bbd_t *d)
{
    if (d->rendezvous_record[0])
        unlink(d->rendezvous_record);
    d->rendezvous_record[0] = '\0';
}

void bbd_table_free(bbd_t *d)
{
    free(d->table);
    d->table = NULL;
    d->table_len = 0;
}

pdcbb_err_t bbd_table_append(char **text, size_t *len, size_t *cap, const pdcbb_endpoint_t *e)
{
    char rec[1024];
    pdcbb_err_t rc = pdcbb_endpoint_format(e, 1, rec, sizeof(rec));
    if (rc != PDCBB_OK)
        return rc;
    size_t add = strlen(rec) + strlen(PDCBB_JOB_TABLE_SEP);
    if (*len + add + 1 > *cap) {
        size_t ncap = (*cap ? *cap * 2 : 4096) + add;
        char *grown = realloc(*text, ncap);
        if (grown == NULL)
            return PDCBB_ERR_NOMEM;
        *text = grown;
        *cap = ncap;
    }
    memcpy(*text + *len, rec, strlen(rec));
    *len += strlen(rec);
    memcpy(*text + *len, PDCBB_JOB_TABLE_SEP, strlen(PDCBB_JOB_TABLE_SEP));
    *len += strlen(PDCBB_JOB_TABLE_SEP);
    (*text)[*len] = '\0';
    return PDCBB_OK;
}

void bbd_table_missing_reason(const bbd_t *d, unsigned rank, char *out, size_t len)
{
    unsigned spn =
        d->have_jobinfo && d->jobinfo.servers_per_node ? d->jobinfo.servers_per_node : d->nservers;
    unsigned ni = rank / spn, first = ni * spn, last = first + spn - 1;
    if (last >= d->nservers)
        last = d->nservers - 1;
    char path[PATH_MAX], why[1024] = "";
    if (d->jobinfo.rendezvous[0] &&
        pdcbb_rendezvous_error_path(d->jobinfo.rendezvous, ni, path, sizeof(path)) ==
            PDCBB_OK &&
        pdcbb_read_text(path, why, sizeof(why)) == PDCBB_OK && why[0]) {
        snprintf(out, len, "node index %u (daemons %u-%u) has no burst buffer: %s", ni, first,
                 last, why);
        return;
    }
    if (d->jobinfo.rendezvous[0])
        snprintf(out, len,
                 "node index %u (daemons %u-%u) has published no endpoint record in %s (its "
                 "prolog did not start them, or they stopped)",
                 ni, first, last, d->jobinfo.rendezvous);
    else
        snprintf(out, len,
                 "daemons %u-%u are not on this node and the job has no rendezvous directory "
                 "(site key rendezvous_dir)",
                 first, last);
}

void bbd_table_set(bbd_t *d, char *text, size_t len)
{
    bbd_table_free(d);
    d->table = text;
    d->table_len = len;
    /* Later clients of this node read it from here: PDCinit then sends no message. */
    char path[PATH_MAX];
    if (pdcbb_jobdir_path(d->job_dir, "job.table", path, sizeof(path)) == PDCBB_OK &&
        pdcbb_write_file_atomic(path, d->table, d->table_len, 0600) != PDCBB_OK)
        PDCBB_WARN("cannot write %s: %s", path, strerror(errno));
}

/*
 * A job without a gathered table (one node, or no rendezvous directory): the table from the
 * job directory. Complete: cached in d and job.table, *complete = 1. Else *complete = 0 and
 * problem (plen bytes) names the first node with missing daemons.
 */
static pdcbb_err_t table_build_local(bbd_t *d, int *complete, char *problem, size_t plen)
{
    pdcbb_endpoint_t *local = NULL;
    size_t nlocal = 0;
    pdcbb_err_t rc = pdcbb_jobdir_read_endpoints(d->job_dir, &local, &nlocal);
    if (rc != PDCBB_OK)
        return rc;
    pdcbb_endpoint_t **by_rank = calloc(d->nservers, sizeof(*by_rank));
    char *text = NULL;
    size_t len = 0, cap = 0;
    if (by_rank == NULL) {
        rc = PDCBB_ERR_NOMEM;
        goto out;
    }
    problem[0] = '\0';
    for (size_t i = 0; i < nlocal; i++)
        if (local[i].rank < d->nservers && local[i].job_id == d->job_id &&
            local[i].nservers == d->nservers)
            by_rank[local[i].rank] = &local[i];
    *complete = 1;
    for (unsigned k = 0; k < d->nservers; k++) {
        if (by_rank[k] != NULL) {
            if ((rc = bbd_table_append(&text, &len, &cap, by_rank[k])) != PDCBB_OK)
                goto out;
            continue;
        }
        if (*complete) /* name the first node with missing daemons */
            bbd_table_missing_reason(d, k, problem, plen);
        *complete = 0;
    }
    if (*complete) {
        bbd_table_set(d, text, len);
        text = NULL;
    }
    rc = PDCBB_OK;
out:
    free(text);
    free(by_rank);
    free(local);
    return rc;
}

static void jobinfo_load(bbd_t *d)
{
    if (!d->have_jobinfo && pdcbb_jobinfo_read(d->job_dir, &d->jobinfo) == PDCBB_OK)
        d->have_jobinfo = 1;
}

/* The record of rank in the cached table (PDCBB_ERR_NOT_FOUND if none). */
static pdcbb_err_t table_find(const bbd_t *d, unsigned rank, pdcbb_endpoint_t *out)
{
    size_t pos = 0;
    pdcbb_err_t rc;
    if (d->table == NULL)
        return PDCBB_ERR_NOT_FOUND;
    while ((rc = pdcbb_job_table_next(d->table, d->table_len, &pos, out)) == PDCBB_OK)
        if (out->rank == rank)
            return PDCBB_OK;
    return PDCBB_ERR_NOT_FOUND;
}

pdcbb_err_t bbd_table_replace(bbd_t *d, const pdcbb_endpoint_t *e)
{
    pdcbb_endpoint_t old;
    if (d->table == NULL || table_find(d, e->rank, &old) != PDCBB_OK)
        return PDCBB_ERR_NOT_FOUND;
    if (strcmp(old.ip, e->ip) == 0 && old.port == e->port && old.pid == e->pid &&
        memcmp(old.token, e->token, PDCBB_TOKEN_LEN) == 0)
        return PDCBB_OK;
    char *text = NULL;
    size_t len = 0, cap = 0, pos = 0;
    pdcbb_endpoint_t rec;
    pdcbb_err_t rc;
    while ((rc = pdcbb_job_table_next(d->table, d->table_len, &pos, &rec)) == PDCBB_OK)
        if ((rc = bbd_table_append(&text, &len, &cap, rec.rank == e->rank ? e : &rec)) != PDCBB_OK)
            break;
    if (rc != PDCBB_ERR_NOT_FOUND) {
        free(text);
        return rc;
    }
    PDCBB_INFO("daemon %u is now at %s:%u (pid %ld)", e->rank, e->ip, e->port, (long)e->pid);
    bbd_table_set(d, text, len);
    return PDCBB_OK;
}

/* Daemon rank's record as published in the rendezvous directory now (one file read). */
static pdcbb_err_t rendezvous_record(const bbd_t *d, unsigned rank, pdcbb_endpoint_t *out)
{
    if (!d->have_jobinfo || d->jobinfo.rendezvous[0] == '\0')
        return PDCBB_ERR_NOT_FOUND;
    pdcbb_endpoint_t e;
    pdcbb_err_t rc = pdcbb_rendezvous_read(d->jobinfo.rendezvous, rank, &e);
    if (rc != PDCBB_OK)
        return rc;
    if (e.job_id != d->job_id || e.nservers != d->nservers)
        return PDCBB_ERR_PROTO;
    *out = e;
    return PDCBB_OK;
}

pdcbb_err_t bbd_table_record(bbd_t *d, unsigned rank, pdcbb_endpoint_t *out, char *problem,
                             size_t plen)
{
    jobinfo_load(d);
    if (table_find(d, rank, out) == PDCBB_OK || bbd_table_gather_record(d, rank, out) == PDCBB_OK)
        return PDCBB_OK;
    if (d->have_jobinfo && d->jobinfo.nnodes > 1 && d->jobinfo.rendezvous[0]) {
        /* Not gathered yet (a peer this daemon sends to while gathering): its record alone. */
        if (rendezvous_record(d, rank, out) == PDCBB_OK)
            return PDCBB_OK;
        bbd_table_missing_reason(d, rank, problem, plen);
        return PDCBB_ERR_DISCOVERY;
    }
    pdcbb_err_t rc = bbd_table_current(d, problem, plen);
    if (rc != PDCBB_OK)
        return rc;
    if (table_find(d, rank, out) == PDCBB_OK)
        return PDCBB_OK;
    snprintf(problem, plen, "not in the job table");
    return PDCBB_ERR_NOT_FOUND;
}

pdcbb_err_t bbd_table_reread(bbd_t *d, unsigned rank)
{
    jobinfo_load(d);
    pdcbb_endpoint_t e;
    pdcbb_err_t rc = rendezvous_record(d, rank, &e);
    if (rc != PDCBB_OK)
        return rc;
    return bbd_table_replace(d, &e);
}

pdcbb_err_t bbd_op_job_table(bbd_req_t *r, const pdcbb_job_table_req_t *q,
                             pdcbb_job_table_rep_t *p)
{
    bbd_t *d = r->d;
    jobinfo_load(d);
    if (q->refresh > d->nservers) {
        PDCBB_WARN("JOB_TABLE: refresh %u names no daemon (the job has %u)", q->refresh,
                   d->nservers);
        return PDCBB_ERR_INVAL;
    }
    if (q->refresh > 0 && d->table != NULL)
        bbd_table_reread(d, q->refresh - 1); /* quietly as it was if not published anew */
    if (d->table == NULL && bbd_table_gather_defer(r))
        return PDCBB_OK; /* answered once the daemons have gathered the table */
    char *problem = bbd_req_alloc(r, 2048);
    if (problem == NULL)
        return PDCBB_ERR_NOMEM;
    problem[0] = '\0';
    if (d->table == NULL) {
        pdcbb_err_t rc = bbd_table_current(d, problem, 2048);
        if (rc != PDCBB_OK && rc != PDCBB_ERR_DISCOVERY)
            return rc;
    }
    p->problem = problem;
    if (d->table != NULL) {
        p->complete = 1;
        p->records = d->table;
        p->records_len = (uint32_t)d->table_len;
    } else {
        PDCBB_WARN("JOB_TABLE: %s", problem);
        p->complete = 0;
        p->records = "";
        p->records_len = 0;
    }
    return PDCBB_OK;
}

pdcbb_err_t bbd_table_current(bbd_t *d, char *problem, size_t plen)
{
    jobinfo_load(d);
    if (d->table != NULL)
        return PDCBB_OK;
    problem[0] = '\0';
    if (bbd_table_gather_problem(d, problem, plen))
        return PDCBB_ERR_DISCOVERY;
    int complete = 0;
    pdcbb_err_t rc = table_build_local(d, &complete, problem, plen);
    if (rc != PDCBB_OK)
        return rc;
    return complete ? PDCBB_OK : PDCBB_ERR_DISCOVERY;
}
