/*
 * bbd_table.c - the job's table of daemons, as this daemon knows it (JOB_TABLE).
 *
 * Node-local storage is private to its node, so a client reads only its own node's endpoint
 * records. It asks one daemon of its node for the rest: that daemon reads its own node's
 * records from the job directory and every other daemon's record from the job's rendezvous
 * directory, a directory on a filesystem all nodes see, where each daemon published its record
 * (with its node's token) when it started listening. The prolog creates the rendezvous
 * directory, private to the job user, and writes node-I.error there when node I's daemons
 * could not be started, so a client on another node learns that node's reason.
 *
 * The table is cached once complete, in memory and as <job dir>/job.table, which clients of
 * this node read instead of sending a message. The daemon builds it on its own as soon as
 * every daemon has published itself (bbd_table_poll: one readdir of the rendezvous directory
 * per attempt, backing off from 10 ms to 1 s, for at most twice ready_timeout), so normally it
 * exists before the job's first task starts. A client that finds a daemon gone
 * asks again with refresh set (a restarted daemon published a new record). A one-node job
 * needs no rendezvous.
 */
#include <dirent.h>
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

/* Append "<record>--\n" to the growing text. */
static pdcbb_err_t table_append(char **text, size_t *len, size_t *cap, const pdcbb_endpoint_t *e)
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

/* Why the daemons of node index ni are missing: node-I.error, or a plain statement. */
static void missing_reason(const bbd_t *d, unsigned ni, unsigned first, unsigned last,
                           char *out, size_t len)
{
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

/* mtime of the rendezvous directory ({0, 0} if none). */
static struct timespec rendezvous_mtime(const bbd_t *d)
{
    struct timespec mtime = {0, 0};
    struct stat st;
    if (d->have_jobinfo && d->jobinfo.rendezvous[0] && stat(d->jobinfo.rendezvous, &st) == 0)
        mtime = st.st_mtim;
    return mtime;
}

/*
 * Build the table from the job directory and the rendezvous directory. Complete: cache it in
 * d and in <job dir>/job.table, *complete = 1. Else *complete = 0 and problem (plen bytes)
 * names the first node with missing daemons.
 */
static pdcbb_err_t table_build(bbd_t *d, int *complete, char *problem, size_t plen)
{
    struct timespec mtime = rendezvous_mtime(d);
    /* This node's records come from the job directory, with the local token. */
    pdcbb_endpoint_t *local = NULL;
    size_t nlocal = 0;
    pdcbb_err_t rc = pdcbb_jobdir_read_endpoints(d->job_dir, &local, &nlocal);
    if (rc != PDCBB_OK)
        return rc;
    pdcbb_endpoint_t **by_rank = calloc(d->nservers, sizeof(*by_rank));
    pdcbb_endpoint_t *remote = calloc(d->nservers, sizeof(*remote));
    char *text = NULL;
    size_t len = 0, cap = 0;
    if (by_rank == NULL || remote == NULL) {
        rc = PDCBB_ERR_NOMEM;
        goto out;
    }
    problem[0] = '\0';
    for (size_t i = 0; i < nlocal; i++)
        if (local[i].rank < d->nservers && local[i].job_id == d->job_id &&
            local[i].nservers == d->nservers)
            by_rank[local[i].rank] = &local[i];
    unsigned spn = d->have_jobinfo && d->jobinfo.servers_per_node ? d->jobinfo.servers_per_node
                                                                  : d->nservers;
    for (unsigned k = 0; k < d->nservers; k++) {
        if (by_rank[k] != NULL || !d->have_jobinfo || d->jobinfo.rendezvous[0] == '\0')
            continue;
        pdcbb_endpoint_t e;
        if (pdcbb_rendezvous_read(d->jobinfo.rendezvous, k, &e) == PDCBB_OK &&
            e.job_id == d->job_id && e.nservers == d->nservers) {
            remote[k] = e;
            by_rank[k] = &remote[k];
        }
    }
    *complete = 1;
    for (unsigned k = 0; k < d->nservers; k++) {
        if (by_rank[k] != NULL) {
            if ((rc = table_append(&text, &len, &cap, by_rank[k])) != PDCBB_OK)
                goto out;
            continue;
        }
        if (*complete) { /* name the first node with missing daemons */
            unsigned ni = k / spn, first = ni * spn, last = first + spn - 1;
            missing_reason(d, ni, first, last < d->nservers ? last : d->nservers - 1, problem,
                           plen);
        }
        *complete = 0;
    }
    if (*complete) {
        bbd_table_free(d);
        d->table = text;
        d->table_len = len;
        d->table_mtime = mtime;
        text = NULL;
        /* Later clients of this node read it from here: PDCinit then sends no message. */
        char path[PATH_MAX];
        if (pdcbb_jobdir_path(d->job_dir, "job.table", path, sizeof(path)) == PDCBB_OK &&
            pdcbb_write_file_atomic(path, d->table, d->table_len, 0600) != PDCBB_OK)
            PDCBB_WARN("cannot write %s: %s", path, strerror(errno));
    }
    rc = PDCBB_OK;
out:
    free(text);
    free(remote);
    free(by_rank);
    free(local);
    return rc;
}

pdcbb_err_t bbd_op_job_table(bbd_req_t *r, const pdcbb_job_table_req_t *q,
                             pdcbb_job_table_rep_t *p)
{
    bbd_t *d = r->d;
    if (!d->have_jobinfo && pdcbb_jobinfo_read(d->job_dir, &d->jobinfo) == PDCBB_OK)
        d->have_jobinfo = 1;
    /* A restarted daemon renames a new record into the rendezvous directory, which changes
     * the directory's mtime: one stat keeps the cache honest. */
    struct timespec mtime = rendezvous_mtime(d);
    int complete = d->table != NULL && !q->refresh && mtime.tv_sec == d->table_mtime.tv_sec &&
                   mtime.tv_nsec == d->table_mtime.tv_nsec;
    char *problem = bbd_req_alloc(r, 2048);
    if (problem == NULL)
        return PDCBB_ERR_NOMEM;
    problem[0] = '\0';
    if (!complete) {
        pdcbb_err_t rc = table_build(d, &complete, problem, 2048);
        if (rc != PDCBB_OK)
            return rc;
    }
    p->complete = complete ? 1u : 0u;
    p->problem = problem;
    if (complete) {
        p->records = d->table;
        p->records_len = (uint32_t)d->table_len;
    } else {
        PDCBB_WARN("JOB_TABLE: %s", problem);
        p->records = "";
        p->records_len = 0;
    }
    return PDCBB_OK;
}

pdcbb_err_t bbd_table_current(bbd_t *d, char *problem, size_t plen)
{
    if (!d->have_jobinfo && pdcbb_jobinfo_read(d->job_dir, &d->jobinfo) == PDCBB_OK)
        d->have_jobinfo = 1;
    struct timespec mtime = rendezvous_mtime(d);
    if (d->table != NULL && mtime.tv_sec == d->table_mtime.tv_sec &&
        mtime.tv_nsec == d->table_mtime.tv_nsec)
        return PDCBB_OK;
    int complete = 0;
    problem[0] = '\0';
    pdcbb_err_t rc = table_build(d, &complete, problem, plen);
    if (rc != PDCBB_OK)
        return rc;
    return complete ? PDCBB_OK : PDCBB_ERR_DISCOVERY;
}

static double table_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Records published in the rendezvous directory so far (one readdir). */
static unsigned published_count(const char *rdv)
{
    DIR *dir = opendir(rdv);
    if (dir == NULL)
        return 0;
    unsigned n = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, "bbd-", 4) == 0 && l > 11 && strcmp(e->d_name + l - 7, ".record") == 0)
            n++;
    }
    closedir(dir);
    return n;
}

int bbd_table_poll(bbd_t *d)
{
    if (d->poll_done)
        return -1;
    double now = table_now();
    if (d->poll_deadline == 0) {
        if (!d->have_jobinfo || d->jobinfo.nnodes <= 1 || d->jobinfo.rendezvous[0] == '\0') {
            d->poll_done = 1;
            return -1;
        }
        d->poll_deadline = now + 2 * d->cfg.ready_timeout;
        d->poll_interval = 0.01;
        d->poll_next = now;
    }
    if (d->table != NULL) {
        d->poll_done = 1; /* a client asked first */
        return -1;
    }
    if (now < d->poll_next)
        return (int)((d->poll_next - now) * 1000) + 1;
    if (published_count(d->jobinfo.rendezvous) >= d->nservers) {
        char problem[2048];
        int complete = 0;
        if (table_build(d, &complete, problem, sizeof(problem)) == PDCBB_OK && complete) {
            PDCBB_INFO("every daemon of the job found: table in %s/job.table", d->job_dir);
            d->poll_done = 1;
            return -1;
        }
    }
    if (now > d->poll_deadline) {
        PDCBB_INFO("not every daemon of the job published itself within %.0f s: clients will "
                   "ask",
                   2 * d->cfg.ready_timeout);
        d->poll_done = 1;
        return -1;
    }
    /* Back off: the other nodes' prologs normally finish within a fraction of a second. */
    d->poll_interval = d->poll_interval * 2 > 1.0 ? 1.0 : d->poll_interval * 2;
    d->poll_next = now + d->poll_interval;
    return (int)(d->poll_interval * 1000) + 1;
}
