/*
 * client_discovery.c - how PDCinit finds the job's daemons (docs/INTERNALS.md, Finding the daemons).
 *
 * The launcher (Slurm plugin or `pdcbb run`) gives every process PDCBB_JOB_DIR, the job
 * directory of its node, and the local launcher also PDCBB_SERVER_DIRS, every node's directory
 * (all on one host). Each directory holds the job token and the endpoint records of its
 * daemons.
 *
 * Without PMIx in the environment we never call PMIx (a failed PMIx_Init costs tens of ms and
 * breaks a later MPI_Init): the table is built from the records in those directories. Under a
 * PMIx launcher (mpirun, srun --mpi=pmix) local rank 0 of each host reads its host's records
 * and publishes them with PMIx_Put; after a collecting Fence over all ranks every rank fetches
 * the records of each host from the lowest rank on that host. PDCinit is therefore collective
 * over the launcher's job, as PDC applications already call it.
 *
 * PDCBB_DRAINED_DIR comes first: when it is set the library serves that drained job read-only
 * (client_drained.c) and looks for no daemon at all.
 */
#include <errno.h>
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "pdcbb_log.h"

#define DISCOVERY_KEY "pdcbb.endpoints"
#define RECORD_SEP "--\n"

/* Split a ':'-separated list of directories; returns count, fills dirs (pointers into buf). */
static int split_dirs(char *buf, char **dirs, int max)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ":", &save); t && n < max;
         t = strtok_r(NULL, ":", &save))
        if (*t)
            dirs[n++] = t;
    return n;
}

/* The directories this process may read records from. */
static pdcbb_err_t local_dirs(char **copy, char **dirs, int max, int *n, char *err, size_t errlen)
{
    const char *list = getenv("PDCBB_SERVER_DIRS");
    if (list == NULL || *list == '\0')
        list = getenv("PDCBB_JOB_DIR");
    if (list == NULL || *list == '\0') {
        snprintf(err, errlen,
                 "no burst buffer for this process: PDCBB_JOB_DIR is not set (run the program "
                 "under `pdcbb run` or in a Slurm job submitted with --pdc)");
        return PDCBB_ERR_DISCOVERY;
    }
    *copy = strdup(list);
    if (*copy == NULL)
        return PDCBB_ERR_NOMEM;
    *n = split_dirs(*copy, dirs, max);
    return PDCBB_OK;
}

/* If the prolog recorded a failure in dir, report it. */
static pdcbb_err_t check_prolog_error(const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX], msg[1024];
    if (pdcbb_jobdir_path(dir, "prolog.error", path, sizeof(path)) != PDCBB_OK)
        return PDCBB_OK;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return PDCBB_OK;
    size_t r = fread(msg, 1, sizeof(msg) - 1, f);
    fclose(f);
    msg[r] = '\0';
    while (r > 0 && (msg[r - 1] == '\n' || msg[r - 1] == '\r'))
        msg[--r] = '\0';
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

/* Read the records (with tokens) of every local directory. */
static pdcbb_err_t read_local(pdcbb_endpoint_t **out, size_t *nout, char ***dir_of, char **copy,
                              char *err, size_t errlen)
{
    char *dirs[256];
    int nd = 0;
    pdcbb_err_t rc = local_dirs(copy, dirs, 256, &nd, err, errlen);
    if (rc != PDCBB_OK)
        return rc;
    pdcbb_endpoint_t *all = NULL;
    size_t total = 0;
    char **owner = NULL;
    for (int i = 0; i < nd; i++) {
        if ((rc = check_prolog_error(dirs[i], err, errlen)) != PDCBB_OK)
            goto fail;
        pdcbb_endpoint_t *eps;
        size_t n;
        rc = pdcbb_jobdir_read_endpoints(dirs[i], &eps, &n);
        if (rc != PDCBB_OK) {
            snprintf(err, errlen, "cannot read the burst-buffer records in %s: %s", dirs[i],
                     pdcbb_strerror(rc));
            rc = PDCBB_ERR_DISCOVERY;
            goto fail;
        }
        pdcbb_endpoint_t *grown = realloc(all, (total + n + 1) * sizeof(*all));
        char **grown_owner = realloc(owner, (total + n + 1) * sizeof(*owner));
        if (grown)
            all = grown;
        if (grown_owner)
            owner = grown_owner;
        if (grown == NULL || grown_owner == NULL) {
            free(eps);
            rc = PDCBB_ERR_NOMEM;
            goto fail;
        }
        memcpy(all + total, eps, n * sizeof(*eps));
        for (size_t k = 0; k < n; k++)
            owner[total + k] = dirs[i];
        total += n;
        free(eps);
    }
    *out = all;
    *nout = total;
    *dir_of = owner;
    return PDCBB_OK;
fail:
    free(all);
    free(owner);
    return rc;
}

static pdcbb_err_t discover_env(char *err, size_t errlen)
{
    pdcbb_endpoint_t *eps = NULL;
    size_t n = 0;
    char **owner = NULL, *copy = NULL;
    pdcbb_err_t rc = read_local(&eps, &n, &owner, &copy, err, errlen);
    for (size_t i = 0; rc == PDCBB_OK && i < n; i++)
        rc = table_add(&eps[i], 1, owner[i], err, errlen);
    if (rc == PDCBB_OK)
        rc = table_check(err, errlen);
    free(eps);
    free(owner);
    free(copy);
    if (rc == PDCBB_OK)
        snprintf(client_g.discovery, sizeof(client_g.discovery), "environment");
    return rc;
}

static int have_pmix_env(void)
{
    extern char **environ;
    if (getenv("PMIX_NAMESPACE"))
        return 1;
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "PMIX_SERVER_URI", 15) == 0)
            return 1;
    return 0;
}

static pmix_proc_t pmix_self;

static pdcbb_err_t pmix_get_u32(const pmix_proc_t *proc, const char *key, uint32_t *out)
{
    pmix_value_t *v = NULL;
    pmix_status_t st = PMIx_Get(proc, key, NULL, 0, &v);
    if (st != PMIX_SUCCESS || v == NULL)
        return PDCBB_ERR_NOT_FOUND;
    pdcbb_err_t rc = PDCBB_OK;
    switch (v->type) {
    case PMIX_UINT32: *out = v->data.uint32; break;
    case PMIX_UINT16: *out = v->data.uint16; break;
    case PMIX_INT: *out = (uint32_t)v->data.integer; break;
    case PMIX_UINT: *out = v->data.uint; break;
    case PMIX_PROC_RANK: *out = v->data.rank; break;
    default: rc = PDCBB_ERR_PROTO;
    }
    PMIX_VALUE_RELEASE(v);
    return rc;
}

/* Text of a PMIx string value, malloc'ed. */
static char *pmix_get_string(const pmix_proc_t *proc, const char *key, int timeout)
{
    pmix_value_t *v = NULL;
    pmix_info_t info[1];
    size_t ninfo = 0;
    if (timeout > 0) {
        PMIX_INFO_CONSTRUCT(&info[0]);
        PMIX_INFO_LOAD(&info[0], PMIX_TIMEOUT, &timeout, PMIX_INT);
        ninfo = 1;
    }
    pmix_status_t st = PMIx_Get(proc, key, ninfo ? info : NULL, ninfo, &v);
    if (ninfo)
        PMIX_INFO_DESTRUCT(&info[0]);
    if (st != PMIX_SUCCESS || v == NULL)
        return NULL;
    char *s = NULL;
    if (v->type == PMIX_STRING && v->data.string)
        s = strdup(v->data.string);
    PMIX_VALUE_RELEASE(v);
    return s;
}

/* Parse "record--\nrecord--\n..." as published by local rank 0. */
static pdcbb_err_t parse_published(const char *text, char *err, size_t errlen)
{
    char *copy = strdup(text);
    if (copy == NULL)
        return PDCBB_ERR_NOMEM;
    pdcbb_err_t rc = PDCBB_OK;
    char *p = copy;
    while (*p) {
        char *sep = strstr(p, RECORD_SEP);
        if (sep)
            *sep = '\0';
        pdcbb_endpoint_t e;
        if ((rc = pdcbb_endpoint_parse(p, 1, &e)) != PDCBB_OK) {
            snprintf(err, errlen, "malformed endpoint record received through PMIx: %s",
                     pdcbb_strerror(rc));
            rc = PDCBB_ERR_DISCOVERY;
            break;
        }
        if ((rc = table_add(&e, 1, NULL, err, errlen)) != PDCBB_OK)
            break;
        if (sep == NULL)
            break;
        p = sep + strlen(RECORD_SEP);
    }
    free(copy);
    return rc;
}

static pdcbb_err_t discover_pmix(char *err, size_t errlen)
{
    pmix_status_t st = PMIx_Init(&pmix_self, NULL, 0);
    if (st != PMIX_SUCCESS) {
        PMIx_Finalize(NULL, 0); /* else a later MPI_Init hangs (docs/INTERNALS.md) */
        PDCBB_INFO("PMIx_Init failed (%s): using the environment", PMIx_Error_string(st));
        return discover_env(err, errlen);
    }
    client_g.pmix_initialised = 1;

    pmix_proc_t wild;
    PMIX_PROC_CONSTRUCT(&wild);
    PMIX_LOAD_NSPACE(wild.nspace, pmix_self.nspace);
    wild.rank = PMIX_RANK_WILDCARD;
    uint32_t size = 0, local_rank = 0;
    if (pmix_get_u32(&wild, PMIX_JOB_SIZE, &size) != PDCBB_OK || size == 0 ||
        pmix_get_u32(&pmix_self, PMIX_LOCAL_RANK, &local_rank) != PDCBB_OK) {
        snprintf(err, errlen, "PMIx does not provide PMIX_JOB_SIZE / PMIX_LOCAL_RANK");
        return PDCBB_ERR_DISCOVERY;
    }

    pdcbb_err_t rc = PDCBB_OK;
    if (local_rank == 0) {
        pdcbb_endpoint_t *eps = NULL;
        size_t n = 0;
        char **owner = NULL, *copy = NULL;
        rc = read_local(&eps, &n, &owner, &copy, err, errlen);
        size_t cap = n * 1200 + 1;
        char *text = rc == PDCBB_OK ? calloc(1, cap) : NULL;
        if (rc == PDCBB_OK && text == NULL)
            rc = PDCBB_ERR_NOMEM;
        for (size_t i = 0; rc == PDCBB_OK && i < n; i++) {
            size_t used = strlen(text);
            rc = pdcbb_endpoint_format(&eps[i], 1, text + used, cap - used);
            if (rc == PDCBB_OK && i + 1 < n)
                strncat(text, RECORD_SEP, cap - strlen(text) - 1);
        }
        free(eps);
        free(owner);
        free(copy);
        /* Publish even after a failure (an empty value) so no rank waits for us in vain. */
        pmix_value_t v;
        PMIX_VALUE_CONSTRUCT(&v);
        v.type = PMIX_STRING;
        v.data.string = rc == PDCBB_OK ? text : (char *)"";
        st = PMIx_Put(PMIX_GLOBAL, DISCOVERY_KEY, &v);
        v.data.string = NULL;
        free(text);
        if (st != PMIX_SUCCESS && rc == PDCBB_OK) {
            snprintf(err, errlen, "PMIx_Put failed: %s", PMIx_Error_string(st));
            rc = PDCBB_ERR_DISCOVERY;
        }
    }
    /* Every rank takes part in the fence, whatever happened above, or the others hang. */
    PMIx_Commit();
    pmix_info_t info;
    bool collect = true;
    PMIX_INFO_CONSTRUCT(&info);
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    st = PMIx_Fence(&wild, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PDCBB_OK)
        return rc;
    if (st != PMIX_SUCCESS) {
        snprintf(err, errlen, "PMIx_Fence failed: %s", PMIx_Error_string(st));
        return PDCBB_ERR_DISCOVERY;
    }

    /* Host of every rank; the lowest rank of each host holds that host's records. */
    char **hosts = calloc(size, sizeof(char *));
    if (hosts == NULL)
        return PDCBB_ERR_NOMEM;
    for (uint32_t r = 0; r < size && rc == PDCBB_OK; r++) {
        pmix_proc_t peer;
        PMIX_PROC_CONSTRUCT(&peer);
        PMIX_LOAD_NSPACE(peer.nspace, pmix_self.nspace);
        peer.rank = r;
        hosts[r] = pmix_get_string(&peer, PMIX_HOSTNAME, 10);
        if (hosts[r] == NULL) {
            snprintf(err, errlen, "PMIx has no PMIX_HOSTNAME for rank %u", r);
            rc = PDCBB_ERR_DISCOVERY;
        }
    }
    for (uint32_t r = 0; r < size && rc == PDCBB_OK; r++) {
        int first = 1;
        for (uint32_t k = 0; k < r; k++)
            if (strcmp(hosts[k], hosts[r]) == 0)
                first = 0;
        if (!first)
            continue;
        /* Try the ranks of this host in order: normally the first is local rank 0. */
        char *text = NULL;
        for (uint32_t k = r; k < size && text == NULL; k++) {
            if (strcmp(hosts[k], hosts[r]) != 0)
                continue;
            pmix_proc_t peer;
            PMIX_PROC_CONSTRUCT(&peer);
            PMIX_LOAD_NSPACE(peer.nspace, pmix_self.nspace);
            peer.rank = k;
            text = pmix_get_string(&peer, DISCOVERY_KEY, 10);
        }
        if (text == NULL) {
            snprintf(err, errlen, "no endpoint records published for host %s", hosts[r]);
            rc = PDCBB_ERR_DISCOVERY;
        } else if (*text == '\0') {
            snprintf(err, errlen, "local rank 0 on host %s could not read its burst-buffer "
                                  "records (see its error)", hosts[r]);
            rc = PDCBB_ERR_DISCOVERY;
        } else {
            rc = parse_published(text, err, errlen);
        }
        free(text);
    }
    for (uint32_t r = 0; r < size; r++)
        free(hosts[r]);
    free(hosts);
    if (rc == PDCBB_OK)
        rc = table_check(err, errlen);
    if (rc == PDCBB_OK) {
        snprintf(client_g.discovery, sizeof(client_g.discovery), "pmix");
        /* Keep record paths for reconnects when this process can read them. */
        const char *dir = getenv("PDCBB_SERVER_DIRS") ? NULL : getenv("PDCBB_JOB_DIR");
        for (unsigned i = 0; dir && i < client_g.nservers; i++) {
            char path[PATH_MAX];
            if (pdcbb_jobdir_rank_path(dir, i, "endpoint", path, sizeof(path)) == PDCBB_OK &&
                access(path, R_OK) == 0)
                snprintf(client_g.servers[i].record_path, PATH_MAX, "%s", path);
        }
    }
    return rc;
}

/* The job's configuration: transport settings must match the daemons'. */
static pdcbb_err_t load_job_config(char *err, size_t errlen)
{
    pdcbb_config_init(&client_g.cfg);
    const char *dir = getenv("PDCBB_JOB_DIR");
    char first[PATH_MAX];
    if (dir == NULL || *dir == '\0') {
        const char *list = getenv("PDCBB_SERVER_DIRS");
        if (list && *list) {
            snprintf(first, sizeof(first), "%s", list);
            char *colon = strchr(first, ':');
            if (colon)
                *colon = '\0';
            dir = first;
        }
    }
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
    /* A drained job is read in-process: no daemons, no job directory, no PMIx. */
    const char *drained = getenv("PDCBB_DRAINED_DIR");
    if (drained && *drained) {
        pdcbb_config_init(&client_g.cfg);
        if ((rc = pdcbb_config_apply_env(&client_g.cfg, err, errlen)) != PDCBB_OK)
            return rc;
        return client_drained_open(drained, err, errlen);
    }
    if ((rc = load_job_config(err, errlen)) != PDCBB_OK)
        return rc;
    rc = have_pmix_env() ? discover_pmix(err, errlen) : discover_env(err, errlen);
    if (rc == PDCBB_OK)
        PDCBB_INFO("found %u daemons of job %llu through %s", client_g.nservers,
                   (unsigned long long)client_g.job_id, client_g.discovery);
    return rc;
}

void client_discovery_finalize(void)
{
    client_drained_close();
    if (client_g.pmix_initialised)
        PMIx_Finalize(NULL, 0);
    client_g.pmix_initialised = 0;
    free(client_g.servers);
    client_g.servers = NULL;
    client_g.nservers = 0;
}
