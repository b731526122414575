/*
 * bbd_kv_migrate.c - KV_MIGRATE (op 80): this daemon's share of PDCkv_migrate(kv, T), the seed's
 * KV migration (iod_obj_set_layout): the records of one KV object with a tag below T are
 * drained now, during the job, to the job's drain destination; they stay in the burst buffer.
 *
 * The client sends the request to every daemon of the job. Each one, in the read transaction
 * of the request and as the job user (the daemons run as the job user):
 *   1. finds the job's drain directory (pdcbb_drain_dir_find: the one the job's prolog made,
 *      recognised by its IDENTITY and owner) and makes DRAIN/<subdir>/{kv,parts};
 *   2. writes one KV dump of the object's records it holds with tag < T (none when it holds no
 *      shard of the object), verified by re-reading (stager/drain_kvstore.c);
 *   3. writes its part, parts/rank-RRRRR.yaml (the job, this rank, the KV object and its dump:
 *      the drain format's schema), then pdcbb_drain_finish: whoever writes the last part merges
 *      them into manifest.yaml and writes COMPLETE.
 * The migration directory is then a drain of its own, readable by `pdcbb kv` and by
 * PDCBB_DRAINED_DIR. A directory that is already complete is not written again
 * (PDCBB_ERR_EXISTS). The daemon serves nothing else while it writes its dump.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bbd.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kvstore.h"
#include "pdcbb_kv.h"
#include "pdcbb_log.h"

/* "kv-migrate/" followed by components of [A-Za-z0-9._@-], none empty, "." or "..". */
static int migrate_subdir_ok(const char *s)
{
    size_t pre = strlen(PDCBB_DRAIN_KV_MIGRATE_DIR);
    if (strncmp(s, PDCBB_DRAIN_KV_MIGRATE_DIR, pre) != 0 || s[pre] != '/' || strlen(s) > 1024)
        return 0;
    const char *c = s + pre + 1;
    while (*c) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        for (size_t i = 0; i < n; i++) {
            char ch = c[i];
            if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '.' || ch == '_' || ch == '@' || ch == '-'))
                return 0;
        }
        c += n;
        if (*c == '/')
            c++;
    }
    return 1;
}

/* mkdir -p below base (base exists); errno on failure. */
static int migrate_mkdirs(const char *base, const char *rel)
{
    char path[PATH_MAX];
    size_t bl = strlen(base);
    if (bl + 1 + strlen(rel) >= sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    for (char *p = path + bl + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char save = *p;
            *p = '\0';
            if (mkdir(path, 0755) != 0 && errno != EEXIST)
                return -1;
            struct stat st;
            if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
                errno = ENOTDIR;
                return -1;
            }
            *p = save;
            if (save == '\0')
                break;
        }
    }
    return 0;
}

pdcbb_err_t bbd_op_kv_migrate(bbd_req_t *r, const pdcbb_kv_migrate_req_t *q,
                              pdcbb_kv_migrate_rep_t *p)
{
    bbd_t *d = r->d;
    if (pdcbb_meta_id_kind(q->id) != PDCBB_META_KIND_KV ||
        pdcbb_meta_id_server(q->id) >= d->nservers)
        return PDCBB_ERR_BAD_ID;
    if (q->tag == 0 || q->tag > PDCBB_KV_MAXTAG)
        return PDCBB_ERR_INVAL;
    if (q->subdir == NULL || !migrate_subdir_ok(q->subdir))
        return PDCBB_ERR_INVAL;
    if (d->cfg.drain[0] == '\0') {
        PDCBB_WARN("KV_MIGRATE: the job has no drain destination");
        return PDCBB_ERR_NOT_FOUND;
    }
    /* the home daemon knows every KV object: an unknown id is refused there */
    uint8_t ik[9];
    pdcbb_val_t v;
    size_t iklen = pdcbb_kv_meta_id_key(q->id, ik);
    int have_meta =
        d->store_ops->get(r->txn, PDCBB_T_KVMETA, (pdcbb_val_t){ik, iklen}, &v) == PDCBB_OK;
    if (!have_meta && pdcbb_meta_id_server(q->id) == d->rank)
        return PDCBB_ERR_NOT_FOUND;

    char drain_dir[PATH_MAX], err[PDCBB_DRAIN_ERR_LEN] = "";
    pdcbb_err_t rc = pdcbb_drain_dir_find(d->cfg.drain, d->job_id,
                                          d->have_jobinfo ? d->jobinfo.instance : "", geteuid(),
                                          drain_dir, sizeof(drain_dir), err, sizeof(err));
    if (rc != PDCBB_OK) {
        PDCBB_WARN("KV_MIGRATE: %s", err);
        return rc;
    }
    char dir[PATH_MAX], sub[PATH_MAX], part_path[PATH_MAX + 64];
    if (snprintf(dir, sizeof(dir), "%s/%s", drain_dir, q->subdir) >= (int)sizeof(dir))
        return PDCBB_ERR_TOO_BIG;
    snprintf(sub, sizeof(sub), "%s/%s", dir, PDCBB_DRAIN_COMPLETE);
    if (access(sub, F_OK) == 0) {
        PDCBB_WARN("KV_MIGRATE: %s is already complete", dir);
        return PDCBB_ERR_EXISTS;
    }
    snprintf(sub, sizeof(sub), "%s/%s", q->subdir, PDCBB_DRAIN_KV_DIR);
    if (migrate_mkdirs(drain_dir, sub) != 0) {
        int e = errno;
        PDCBB_WARN("KV_MIGRATE: cannot create %s/%s: %s", drain_dir, sub, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    snprintf(sub, sizeof(sub), "%s/%s", q->subdir, PDCBB_DRAIN_PARTS_DIR);
    if (migrate_mkdirs(drain_dir, sub) != 0) {
        int e = errno;
        PDCBB_WARN("KV_MIGRATE: cannot create %s/%s: %s", drain_dir, sub, strerror(e));
        return pdcbb_err_from_errno(e);
    }

    /* the part: the job, this rank (no data file), the KV object and its dump */
    pdcbb_drain_t *part = pdcbb_drain_new();
    if (part == NULL)
        return PDCBB_ERR_NOMEM;
    struct passwd *pw = getpwuid(geteuid());
    part->job_id = d->job_id;
    part->uid = (uint32_t)geteuid();
    part->nservers = d->nservers;
    part->servers_per_node = d->cfg.servers_per_node ? d->cfg.servers_per_node : 1;
    part->user = strdup(pw && pw->pw_name ? pw->pw_name : "");
    part->instance = strdup(d->have_jobinfo ? d->jobinfo.instance : "");
    char rel[64], datarel[64];
    snprintf(rel, sizeof(rel), "%s/rank-%05u", PDCBB_DRAIN_KV_DIR, d->rank);
    snprintf(datarel, sizeof(datarel), "%s/rank-%05u.dat", PDCBB_DRAIN_DATA_DIR, d->rank);
    pdcbb_drain_rank_t dr = {.rank = d->rank, .node = d->node, .data_file = datarel};
    pdcbb_drain_kvstore_stats_t ks = {0};
    pdcbb_drain_kvstore_req_t kq = {.rank = d->rank, .dir = dir, .rel_prefix = rel,
                                    .only_kv = q->id, .below_tag = q->tag, .stats = &ks};
    if (part->user == NULL || part->instance == NULL ||
        pdcbb_drain_add_rank(part, &dr) != PDCBB_OK) {
        rc = PDCBB_ERR_NOMEM;
        goto out;
    }
    if (have_meta &&
        (rc = pdcbb_drain_kv_from_store(d->store_ops, r->txn, &kq, part, err, sizeof(err))) !=
            PDCBB_OK) {
        PDCBB_WARN("KV_MIGRATE: %s", err);
        goto out;
    }
    /* the KV object's container, from the daemon that holds its record: the drained API
     * opens KV objects through their container */
    if (have_meta) {
        pdcbb_kv_meta_t *meta = bbd_req_alloc(r, sizeof(*meta));
        uint8_t ck[8];
        pdcbb_val_t cv;
        if (meta != NULL &&
            d->store_ops->get(r->txn, PDCBB_T_KVMETA, (pdcbb_val_t){ik, iklen}, &v) == PDCBB_OK &&
            pdcbb_kv_meta_decode(v.data, v.len, meta) == PDCBB_OK &&
            (pdcbb_key_u64(ck, meta->cont_id),
             d->store_ops->get(r->txn, PDCBB_T_CONT, (pdcbb_val_t){ck, 8}, &cv)) == PDCBB_OK) {
            pdcbb_cont_info_rep_t rec;
            if (pdcbb_body_decode(PDCBB_OP_CONT_INFO, 1, cv.data, cv.len, &rec) == PDCBB_OK) {
                pdcbb_drain_cont_t dc = {.id = rec.id, .name = (char *)rec.name,
                                         .lifetime = rec.lifetime, .rank = d->rank};
                rc = pdcbb_drain_add_cont(part, &dc, NULL);
                pdcbb_body_free(PDCBB_OP_CONT_INFO, 1, &rec);
                if (rc != PDCBB_OK)
                    goto out;
            }
        }
    }
    snprintf(part_path, sizeof(part_path), "%s/%s/rank-%05u.yaml", dir, PDCBB_DRAIN_PARTS_DIR,
             d->rank);
    if ((rc = pdcbb_drain_write_manifest(part, part_path, err, sizeof(err))) != PDCBB_OK) {
        PDCBB_WARN("KV_MIGRATE: %s", err);
        goto out;
    }
    int complete = 0;
    if ((rc = pdcbb_drain_finish(dir, d->nservers, &complete, NULL, NULL, err,
                                 sizeof(err))) != PDCBB_OK) {
        PDCBB_WARN("KV_MIGRATE: %s", err);
        goto out;
    }
    char *out = bbd_req_alloc(r, strlen(dir) + 1);
    if (out == NULL) {
        rc = PDCBB_ERR_NOMEM;
        goto out;
    }
    memcpy(out, dir, strlen(dir) + 1);
    p->dir = out;
    p->records = ks.records;
    p->complete = (uint32_t)complete;
    PDCBB_INFO("KV_MIGRATE: KV object %" PRIu64 ", tags below %" PRIu64 ": %" PRIu64
               " records in %s%s",
               q->id, q->tag, ks.records, dir, complete ? " (migration complete)" : "");
out:
    pdcbb_drain_free(part);
    return rc;
}
