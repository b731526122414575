/*
 * client_discovery.c - how PDCinit finds the job's daemons.
 *
 * Every process of a job has PDCBB_JOB_DIR, the job directory on its own node (the Slurm
 * plugin's task_init or `pdcbb run` sets it; a forked child inherits it). That directory holds
 * the job token and the endpoint records of this node's daemons, and nothing else: node-local
 * storage is private to its node. When this node's daemons are all the job has (a one-node
 * job), that is the table. Otherwise, once the transport is open, the client asks one daemon
 * of its node for the whole table (JOB_TABLE, bbd/bbd_table.c): the daemons gathered it up and
 * down a tree of daemons when they started (bbd/bbd_table_gather.c; a request that comes
 * earlier is answered once they have), and left it in <job dir>/job.table, which later clients
 * of the node read instead. At most one message per client, whatever the step: one task on any
 * node, a subset of the nodes, plain srun without PMIx, an MPI program under srun --mpi=pmix or
 * mpirun. PMIx is not used: under Slurm 22.05 it cannot reach another step's data, and a fence
 * would make PDCinit collective and slower (docs/INTERNALS.md, Finding the daemons).
 *
 * PDCBB_DRAINED_DIR comes first: when it is set the library serves that drained job read-only
 * (client_drained.c) and looks for no daemon at all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "pdcbb_log.h"

/* If the prolog recorded a failure in dir, report it. */
static pdcbb_err_t check_prolog_error(const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX], msg[1024];
    if (pdcbb_jobdir_path(dir, "prolog.error", path, sizeof(path)) != PDCBB_OK ||
        pdcbb_read_text(path, msg, sizeof(msg)) != PDCBB_OK)
        return PDCBB_OK;
    snprintf(err, errlen, "the burst buffer of this job could not be started: %s", msg);
    return PDCBB_ERR_DISCOVERY;
}

/* Add records to the table (indexed by rank); checks consistency. */
static pdcbb_err_t table_add(pdcbb_endpoint_t *eps, size_t n, const char *dir, char *err,
                             size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        pdcbb_endpoint_t *e = &eps[i];
        if (client_g.servers == NULL) {
            client_g.nservers = e->nservers;
            client_g.job_id = e->job_id;
            client_g.servers = calloc(e->nservers, sizeof(*client_g.servers));
            if (client_g.servers == NULL)
                return PDCBB_ERR_NOMEM;
        }
        if (e->nservers != client_g.nservers || e->job_id != client_g.job_id) {
            snprintf(err, errlen,
                     "inconsistent endpoint records: daemon %u says job %llu with %u daemons, "
                     "others job %llu with %u",
                     e->rank, (unsigned long long)e->job_id, e->nservers,
                     (unsigned long long)client_g.job_id, client_g.nservers);
            return PDCBB_ERR_DISCOVERY;
        }
        client_server_t *s = &client_g.servers[e->rank];
        s->info = *e;
        if (dir)
            pdcbb_jobdir_rank_path(dir, e->rank, "endpoint", s->record_path,
                                   sizeof(s->record_path));
    }
    return PDCBB_OK;
}

static pdcbb_err_t table_check(char *err, size_t errlen)
{
    if (client_g.servers == NULL || client_g.nservers == 0) {
        snprintf(err, errlen, "no burst-buffer daemon found (no endpoint records)");
        return PDCBB_ERR_DISCOVERY;
    }
    for (unsigned r = 0; r < client_g.nservers; r++)
        if (client_g.servers[r].info.port == 0) {
            snprintf(err, errlen, "the job has %u daemons but daemon %u has no endpoint record",
                     client_g.nservers, r);
            return PDCBB_ERR_DISCOVERY;
        }
    const char *want = getenv("PDCBB_JOB_ID");
    if (want && *want && strtoull(want, NULL, 10) != client_g.job_id) {
        snprintf(err, errlen, "the daemons serve job %llu, but PDCBB_JOB_ID is %s",
                 (unsigned long long)client_g.job_id, want);
        return PDCBB_ERR_DISCOVERY;
    }
    return PDCBB_OK;
}

/* The job directory of this node, from the launcher. */
static const char *job_dir(char *err, size_t errlen)
{
    const char *dir = getenv("PDCBB_JOB_DIR");
    if (dir == NULL || *dir == '\0') {
        snprintf(err, errlen,
                 "no burst buffer for this process: PDCBB_JOB_DIR is not set (run the program "
                 "under `pdcbb run` or in a Slurm job submitted with --pdc)");
        return NULL;
    }
    return dir;
}

/* This node's daemons, from its job directory: they are the table's first entries. */
static pdcbb_err_t discover_local(char *err, size_t errlen)
{
    const char *dir = job_dir(err, errlen);
    if (dir == NULL)
        return PDCBB_ERR_DISCOVERY;
    pdcbb_err_t rc = check_prolog_error(dir, err, errlen);
    if (rc != PDCBB_OK)
        return rc;
    pdcbb_endpoint_t *eps = NULL;
    size_t n = 0;
    rc = pdcbb_jobdir_read_endpoints(dir, &eps, &n);
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "cannot read the burst-buffer records in %s: %s", dir,
                 pdcbb_strerror(rc));
        return PDCBB_ERR_DISCOVERY;
    }
    if (n == 0) {
        free(eps);
        snprintf(err, errlen, "no burst-buffer daemon runs on this node (no endpoint record "
                              "in %s)", dir);
        return PDCBB_ERR_DISCOVERY;
    }
    client_g.local_rank = eps[0].rank;
    for (size_t i = 0; i < n; i++)
        if (eps[i].rank < client_g.local_rank)
            client_g.local_rank = eps[i].rank;
    for (size_t i = 0; rc == PDCBB_OK && i < n; i++)
        rc = table_add(&eps[i], 1, dir, err, errlen);
    free(eps);
    snprintf(client_g.discovery, sizeof(client_g.discovery), "jobdir");
    return rc;
}

/* 1 if every rank of the table has a record. */
static int table_complete(void)
{
    for (unsigned r = 0; r < client_g.nservers; r++)
        if (client_g.servers[r].info.port == 0)
            return 0;
    return 1;
}

/*
 * Take the records of a JOB_TABLE text (len bytes) into the table; only_rank < nservers: that
 * rank alone. from names the source in errors.
 */
static pdcbb_err_t table_parse(const char *text, size_t len, unsigned only_rank, const char *from,
                               char *err, size_t errlen)
{
    pdcbb_endpoint_t e;
    size_t pos = 0;
    pdcbb_err_t rc;
    while ((rc = pdcbb_job_table_next(text, len, &pos, &e)) == PDCBB_OK) {
        if (e.rank >= client_g.nservers || e.nservers != client_g.nservers ||
            e.job_id != client_g.job_id) {
            snprintf(err, errlen, "%s holds a record of another job (job %llu, rank %u of %u)",
                     from, (unsigned long long)e.job_id, e.rank, e.nservers);
            return PDCBB_ERR_DISCOVERY;
        }
        client_server_t *s = &client_g.servers[e.rank];
        /* A record of this node stays as read from the job directory (its path too). */
        if ((only_rank >= client_g.nservers || e.rank == only_rank) &&
            (s->record_path[0] == '\0' || s->info.port == 0))
            s->info = e;
    }
    if (rc != PDCBB_ERR_NOT_FOUND) {
        snprintf(err, errlen, "malformed endpoint record in %s", from);
        return PDCBB_ERR_DISCOVERY;
    }
    return PDCBB_OK;
}

/* The table a daemon of this node left in <job dir>/job.table; quietly nothing if absent. */
static void read_table_file(void)
{
    char path[PATH_MAX], err[256];
    const char *dir = getenv("PDCBB_JOB_DIR");
    if (dir == NULL || pdcbb_jobdir_path(dir, "job.table", path, sizeof(path)) != PDCBB_OK)
        return;
    size_t cap = (size_t)client_g.nservers * 400 + 2;
    char *text = malloc(cap);
    if (text == NULL || pdcbb_read_text(path, text, cap - 1) != PDCBB_OK) {
        free(text);
        return;
    }
    strcat(text, "\n"); /* the text reader took the last separator's newline */
    if (table_parse(text, strlen(text), UINT32_MAX, path, err, sizeof(err)) != PDCBB_OK)
        PDCBB_INFO("ignoring %s: %s", path, err);
    free(text);
}

/* Ask this node's daemon for every record; only_rank < nservers: update that rank alone. */
static pdcbb_err_t fetch_table(int refresh, unsigned only_rank, char *err, size_t errlen)
{
    /* refresh: the daemon re-reads only_rank's record (restarted at a new address) */
    pdcbb_job_table_req_t q = {.refresh =
                                   refresh && only_rank < client_g.nservers ? only_rank + 1 : 0u};
    pdcbb_job_table_rep_t p;
    void *keep = NULL;
    pdcbb_err_t rc = client_rpc(client_g.local_rank, PDCBB_OP_JOB_TABLE, &q, &p, &keep);
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "cannot get the job's table of daemons from daemon %u on this "
                              "node: %s",
                 client_g.local_rank, PDCbb_last_error_message());
        return PDCBB_ERR_DISCOVERY;
    }
    if (!p.complete) {
        snprintf(err, errlen, "the job has %u daemons but not all can be found: %s",
                 client_g.nservers, p.problem && *p.problem ? p.problem : "(no reason given)");
        client_rpc_release(PDCBB_OP_JOB_TABLE, &p, keep);
        return PDCBB_ERR_DISCOVERY;
    }
    char from[64];
    snprintf(from, sizeof(from), "the table from daemon %u", client_g.local_rank);
    rc = table_parse(p.records, p.records_len, only_rank, from, err, errlen);
    client_rpc_release(PDCBB_OP_JOB_TABLE, &p, keep);
    return rc;
}

pdcbb_err_t client_discover_table(char *err, size_t errlen)
{
    if (client_g.drained != NULL)
        return PDCBB_OK;
    if (!table_complete()) {
        read_table_file();
        if (table_complete())
            snprintf(client_g.discovery, sizeof(client_g.discovery), "jobtable");
    }
    if (!table_complete()) {
        pdcbb_err_t rc = fetch_table(0, UINT32_MAX, err, errlen);
        if (rc != PDCBB_OK)
            return rc;
        snprintf(client_g.discovery, sizeof(client_g.discovery), "daemon");
    }
    pdcbb_err_t rc = table_check(err, errlen);
    if (rc != PDCBB_OK)
        return rc;
    /* Forwarding bounds every daemon's connections to its node's clients and the other
     * daemons (docs/SCALE.md, "Connections"); small jobs connect straight (one hop less). */
    const char *fw = client_g.cfg.forward;
    client_g.forward = strcmp(fw, "always") == 0 ||
                       (strcmp(fw, "never") != 0 && client_g.nservers > PDCBB_FORWARD_AUTO_DAEMONS);
    PDCBB_INFO("found %u daemons of job %llu through %s%s", client_g.nservers,
               (unsigned long long)client_g.job_id, client_g.discovery,
               client_g.forward ? "; other nodes' through this node's" : "");
    return PDCBB_OK;
}

pdcbb_err_t client_discovery_refresh(unsigned rank)
{
    char err[1024];
    if (client_g.drained != NULL || rank == client_g.local_rank ||
        rank >= client_g.nservers || client_g.servers[rank].record_path[0])
        return PDCBB_OK;
    pdcbb_err_t rc = fetch_table(1, rank, err, sizeof(err));
    if (rc != PDCBB_OK)
        PDCBB_INFO("refreshing the record of daemon %u: %s", rank, err);
    return rc;
}

/* The job's configuration: transport settings must match the daemons'. */
static pdcbb_err_t load_job_config(char *err, size_t errlen)
{
    pdcbb_config_init(&client_g.cfg);
    const char *dir = getenv("PDCBB_JOB_DIR");
    if (dir && *dir) {
        char path[PATH_MAX];
        if (pdcbb_jobdir_path(dir, "config.yaml", path, sizeof(path)) == PDCBB_OK &&
            access(path, F_OK) == 0) {
            pdcbb_err_t rc =
                pdcbb_config_load_file(&client_g.cfg, path, PDCBB_SCOPE_ALL, err, errlen);
            if (rc != PDCBB_OK)
                return rc;
        }
    }
    return pdcbb_config_apply_env(&client_g.cfg, err, errlen);
}

pdcbb_err_t client_discover(char *err, size_t errlen)
{
    pdcbb_err_t rc;
    const char *node = getenv("PDCBB_NODE_NAME");
    if (node && *node)
        snprintf(client_g.node, sizeof(client_g.node), "%s", node);
    else if (gethostname(client_g.node, sizeof(client_g.node)) != 0)
        snprintf(client_g.node, sizeof(client_g.node), "unknown");
    /* A drained job is read in-process: no daemons, no job directory. */
    const char *drained = getenv("PDCBB_DRAINED_DIR");
    if (drained && *drained) {
        pdcbb_config_init(&client_g.cfg);
        if ((rc = pdcbb_config_apply_env(&client_g.cfg, err, errlen)) != PDCBB_OK)
            return rc;
        return client_drained_open(drained, err, errlen);
    }
    if ((rc = load_job_config(err, errlen)) != PDCBB_OK)
        return rc;
    return discover_local(err, errlen);
}

void client_discovery_finalize(void)
{
    client_drained_close();
    free(client_g.servers);
    client_g.servers = NULL;
    client_g.nservers = 0;
}
