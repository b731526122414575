/*
 * pdc_init.c - PDCinit/PDCclose, the library lock, per-thread error reporting, the PDCbb_
 * extensions and PDC's timing helpers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "client_direct.h"
#include "client_maplock.h"
#include "client_transfer.h"
#include "pdcbb_log.h"
#include "pdcbb_name.h"

client_state_t client_g;
pthread_mutex_t client_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

static _Thread_local int last_err;
static _Thread_local char last_msg[1024];

pdcbb_err_t client_fail(pdcbb_err_t err, const char *fmt, ...)
{
    char msg[sizeof(last_msg)];
    va_list ap;
    va_start(ap, fmt);
    /* Format aside first: callers often add context to the previous message. */
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    memcpy(last_msg, msg, sizeof(msg));
    last_err = err;
    PDCBB_DEBUG("%s (%s)", last_msg, pdcbb_errname(err));
    return err;
}

pdcbb_err_t client_check_name(const char *fn, const char *kind, const char *name)
{
    char why[128];
    pdcbb_err_t rc = pdcbb_name_validate(kind, name, why, sizeof(why));
    return rc == PDCBB_OK ? rc : client_fail(rc, "%s: %s", fn, why);
}

void client_clear_error(void)
{
    last_err = PDCBB_OK;
    last_msg[0] = '\0';
}

int PDCbb_last_error(void)
{
    return last_err;
}

const char *PDCbb_last_error_name(void)
{
    return pdcbb_errname(last_err);
}

const char *PDCbb_last_error_message(void)
{
    if (last_err == PDCBB_OK)
        return "success";
    return last_msg[0] ? last_msg : pdcbb_strerror(last_err);
}

const char *PDCbb_discovery_method(void)
{
    const char *m = "none";
    CLIENT_ENTER();
    if (client_g.initialised)
        m = client_g.discovery;
    CLIENT_LEAVE();
    return m;
}

int PDCbb_nservers(void)
{
    CLIENT_ENTER();
    int n = client_g.initialised ? (int)client_g.nservers : 0;
    CLIENT_LEAVE();
    return n;
}

pdcbb_err_t client_check_init(void)
{
    if (!client_g.initialised)
        return client_fail(PDCBB_ERR_NOT_INIT, "PDC is not initialised: call PDCinit first");
    return PDCBB_OK;
}

void *client_handle_live(pdcid_t id, client_hkind_t kind, const char *what, const char *fn)
{
    pdcbb_err_t e;
    if (client_check_init() != PDCBB_OK)
        return NULL;
    void *p = client_handle_get(id, kind, &e);
    if (p == NULL)
        client_fail(e, "%s: %#llx is not a live %s id", fn, (unsigned long long)id, what);
    return p;
}

static void client_log_setup(void)
{
    const char *lvl = getenv("PDCBB_LOG");
    int l = lvl ? pdcbb_log_level_parse(lvl) : PDCBB_LOG_NONE;
    pdcbb_log_set_level(l < 0 ? PDCBB_LOG_WARN : (pdcbb_log_level_t)l);
    char ident[64];
    snprintf(ident, sizeof(ident), "libpdc[%ld]", (long)getpid());
    pdcbb_log_set_ident(ident);
}

pdcid_t PDCinit(const char *pdc_name)
{
    char err[1024] = "";
    pdcid_t id = 0;
    CLIENT_ENTER();
    client_clear_error();
    client_log_setup();
    if (client_g.initialised) {
        client_fail(PDCBB_ERR_BUSY, "PDCinit: already initialised (call PDCclose first)");
        goto out;
    }
    memset(&client_g, 0, sizeof(client_g));
    pdcbb_err_t rc = client_discover(err, sizeof(err));
    if (rc == PDCBB_OK)
        rc = client_rpc_open(err, sizeof(err));
    if (rc == PDCBB_OK && (rc = client_discover_table(err, sizeof(err))) != PDCBB_OK)
        client_rpc_close();
    if (rc != PDCBB_OK) {
        client_discovery_finalize();
        client_fail(rc, "PDCinit: %s", err);
        PDCBB_ERROR("PDCinit: %s", err);
        goto out;
    }
    client_g.initialised = 1;
    id = client_handle_new(CLIENT_H_PDC, &client_g);
    client_g.pdc_id = id;
    PDCBB_INFO("PDCinit(\"%s\"): %u daemons of job %llu via %s", pdc_name ? pdc_name : "",
               client_g.nservers, (unsigned long long)client_g.job_id, client_g.discovery);
out:
    CLIENT_LEAVE();
    return id;
}

static void free_handle(pdcid_t id, void *ptr, void *arg)
{
    client_hkind_t kind = client_handle_kind(id);
    client_handle_remove(id, kind); /* each object is freed exactly once */
    switch (kind) {
    case CLIENT_H_CONT: client_cont_free(ptr); break;
    case CLIENT_H_OBJ: client_obj_free(ptr); break;
    case CLIENT_H_OBJ_PROP: client_obj_prop_free(ptr); free(ptr); break;
    case CLIENT_H_CONT_PROP: free(ptr); break;
    case CLIENT_H_REGION: free(ptr); break;
    case CLIENT_H_TRANSFER: client_xfer_free(ptr); break;
    case CLIENT_H_KV: client_kv_free(ptr); break;
    default: break;
    }
    (void)arg;
}

perr_t PDCclose(pdcid_t pdcid)
{
    perr_t ret = FAIL;
    pdcbb_err_t err = PDCBB_OK;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK)
        goto out;
    if (client_handle_get(pdcid, CLIENT_H_PDC, &err) == NULL) {
        client_fail(err, "PDCclose: %#llx is not the id PDCinit returned",
                    (unsigned long long)pdcid);
        goto out;
    }
    /* Maps and locks hold object descriptions; analyses and transforms refer to them. */
    client_maplock_cleanup();
    client_analysis_cleanup();
    client_transform_cleanup();
    /* Transfers first: an unfinished one is waited, as PDC does at close. */
    client_handle_foreach(CLIENT_H_TRANSFER, free_handle, NULL);
    client_handle_foreach(CLIENT_H_NONE, free_handle, NULL);
    client_handle_reset();
    client_iter_cleanup();
    client_info_cache_cleanup();
    client_direct_close();
    client_rpc_close();
    client_discovery_finalize();
    client_g.initialised = 0;
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}

int PDC_timing_report(const char *prefix)
{
    CLIENT_ENTER();
    const char *p = prefix ? prefix : "";
    for (unsigned op = 0; op < PDCBB_OP_MAX_; op++) {
        if (client_g.op_count[op] == 0)
            continue;
        printf("%s%-16s %8llu calls %10.3f ms total %8.1f us/call\n", p, pdcbb_op_name(op),
               (unsigned long long)client_g.op_count[op], client_g.op_seconds[op] * 1e3,
               client_g.op_seconds[op] * 1e6 / (double)client_g.op_count[op]);
    }
    CLIENT_LEAVE();
    return 0;
}

int PDC_timing_init(void)
{
    CLIENT_ENTER();
    memset(client_g.op_count, 0, sizeof(client_g.op_count));
    memset(client_g.op_seconds, 0, sizeof(client_g.op_seconds));
    client_g.timing_stopped = 0;
    CLIENT_LEAVE();
    return 0;
}

int PDC_timing_finalize(void)
{
    CLIENT_ENTER();
    client_g.timing_stopped = 1;
    CLIENT_LEAVE();
    return 0;
}
