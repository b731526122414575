/*
 * pdc_kv_migrate.c - PDCkv_migrate (include/pdc_kv.h): the seed's KV migration
 * (iod_obj_set_layout): drain a KV object's records with a tag below T, from every shard, to
 * the job's drain destination now, during the job. The records stay in the burst buffer.
 *
 * The migration goes to <the job's drain directory>/kv-migrate/<container>/<name>@<T>/ (names
 * with every character other than A-Z a-z 0-9 . _ - replaced by _), a drain of its own in the
 * drain format (manifest.yaml, COMPLETE, parts/, kv/): `pdcbb kv` and PDCBB_DRAINED_DIR read it.
 * KV_MIGRATE (op 80) goes to every daemon of the job at once: each writes what it holds of the
 * object (bbd/bbd_kv_migrate.c) and its part; the last part written completes the directory.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "pdc_kv.h"
#include "pdcbb_kv.h"
#include "pdcbb_log.h"

/* Append s to out (at *len, room outlen) with characters outside [A-Za-z0-9._-] as '_' and a
 * leading '.' as '_'; an empty s becomes "_". */
static void migrate_name(char *out, size_t outlen, size_t *len, const char *s)
{
    size_t n = 0;
    for (const char *c = s; *c && n < 200 && *len + 1 < outlen; c++, n++) {
        char ch = *c;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '.' || ch == '_' || ch == '-';
        out[(*len)++] = (!ok || (n == 0 && ch == '.')) ? '_' : ch;
    }
    if (n == 0 && *len + 1 < outlen)
        out[(*len)++] = '_';
    out[*len] = '\0';
}

perr_t PDCkv_migrate(pdcid_t kv_id, pdc_kv_tag_t tag)
{
    static const char fn[] = "PDCkv_migrate";
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    uint64_t id = 0, cont_id = 0;
    const char *name = NULL;
    client_pending_t **p = NULL;
    unsigned n = 0;
    if (client_check_init() != PDCBB_OK ||
        client_kv_identity(kv_id, fn, &id, &cont_id, &name) != PDCBB_OK)
        goto out;
    if (client_g.drained) {
        client_fail(PDCBB_ERR_READ_ONLY,
                    "%s: KV object '%s' is read from the drained job %s: it cannot be migrated",
                    fn, name, client_drained_dir());
        goto out;
    }
    if (tag == 0 || tag > PDC_KV_MAXTAG) {
        client_fail(PDCBB_ERR_INVAL,
                    "%s: tag %" PRIu64 " %s (a migration takes the records with a tag below it: "
                    "1 to PDC_KV_MAXTAG)",
                    fn, (uint64_t)tag, tag == 0 ? "is PDC_KV_NULLTAG" : "is above PDC_KV_MAXTAG");
        goto out;
    }
    /* the container's name, from its home daemon */
    pdcbb_cont_info_req_t cq = {.id = cont_id};
    pdcbb_cont_info_rep_t cp;
    void *keep = NULL;
    pdcbb_err_t rc = client_op_cont_info(pdcbb_meta_id_server(cont_id), &cq, &cp, &keep);
    if (rc != PDCBB_OK) {
        client_fail(rc, "%s: KV object '%s': cannot read its container: %s", fn, name,
                    PDCbb_last_error_message());
        goto out;
    }
    char subdir[1024];
    size_t len = (size_t)snprintf(subdir, sizeof(subdir), "%s/", "kv-migrate");
    migrate_name(subdir, sizeof(subdir), &len, cp.name ? cp.name : "");
    client_rpc_release(PDCBB_OP_CONT_INFO, &cp, keep);
    subdir[len++] = '/';
    subdir[len] = '\0';
    migrate_name(subdir, sizeof(subdir), &len, name);
    snprintf(subdir + len, sizeof(subdir) - len, "@%" PRIu64, (uint64_t)tag);

    /* every daemon of the job at once */
    n = client_g.nservers;
    p = calloc(n ? n : 1, sizeof(*p));
    if (p == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    pdcbb_kv_migrate_req_t q = {.id = id, .tag = tag, .subdir = subdir};
    for (unsigned d = 0; d < n; d++) {
        if ((rc = client_rpc_post(d, PDCBB_OP_KV_MIGRATE, &q, NULL, 0, NULL, 0, &p[d])) !=
            PDCBB_OK) {
            client_fail(rc, "%s: KV object '%s': cannot reach daemon %u: %s", fn, name, d,
                        PDCbb_last_error_message());
            goto out;
        }
    }
    int complete = 0;
    pdcbb_err_t failed = PDCBB_OK;
    unsigned failed_daemon = 0;
    uint64_t records = 0;
    char dir[4096] = "";
    for (unsigned d = 0; d < n; d++) {
        pdcbb_kv_migrate_rep_t mp;
        void *k = NULL;
        client_rpc_wait(p[d], client_g.cfg.request_timeout);
        rc = client_rpc_finish(p[d], &mp, &k);
        p[d] = NULL;
        if (rc != PDCBB_OK) {
            if (failed == PDCBB_OK) {
                failed = rc;
                failed_daemon = d;
            }
            continue;
        }
        records += mp.records;
        complete |= mp.complete != 0;
        if (dir[0] == '\0' && mp.dir)
            snprintf(dir, sizeof(dir), "%s", mp.dir);
        client_rpc_release(PDCBB_OP_KV_MIGRATE, &mp, k);
    }
    if (failed != PDCBB_OK) {
        const char *why = failed == PDCBB_ERR_NOT_FOUND
                              ? "no drain directory of this job (run the job with a drain "
                                "destination, --drain DEST or drain=DEST), or the KV object is "
                                "unknown there"
                          : failed == PDCBB_ERR_EXISTS
                              ? "this migration exists already (kv-migrate/.../NAME@TAG)"
                              : pdcbb_strerror(failed);
        client_fail(failed, "%s: KV object '%s', tags below %" PRIu64 ": daemon %u failed: %s (%s)",
                    fn, name, (uint64_t)tag, failed_daemon, pdcbb_errname(failed), why);
    }
    if (failed != PDCBB_OK)
        goto out;
    if (!complete) {
        client_fail(PDCBB_ERR_INTERNAL, "%s: KV object '%s': every daemon answered, but none "
                                        "completed %s",
                    fn, name, dir);
        goto out;
    }
    PDCBB_INFO("%s: KV object '%s': %" PRIu64 " records with a tag below %" PRIu64 " in %s", fn,
               name, records, (uint64_t)tag, dir);
    ret = SUCCEED;
out:
    for (unsigned d = 0; p && d < n; d++)
        if (p[d])
            client_pending_free(p[d]);
    free(p);
    CLIENT_LEAVE();
    return ret;
}
