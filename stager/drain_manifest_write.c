/*
 * drain_manifest_write.c - writing a manifest (a rank's part or the merged manifest.yaml,
 * docs/DRAIN-FORMAT.md) with libyaml's emitter into memory, then to its file atomically:
 * write to a temporary name, fsync, rename, fsync the directory (drain_write_atomic, also
 * used for the COMPLETE marker).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "drain_internal.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"
#include "pdcbb_name.h"

typedef struct drain_buf {
    char *p;
    size_t len, cap;
} drain_buf_t;

static int drain_buf_write(void *data, unsigned char *buffer, size_t size)
{
    drain_buf_t *b = data;
    if (b->len + size > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + size)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, buffer, size);
    b->len += size;
    return 1;
}

static int mw_scalar(yaml_emitter_t *e, const char *s, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
                                      style))
        return 0;
    return yaml_emitter_emit(e, &ev);
}

static int mw_plain(yaml_emitter_t *e, const char *s)
{
    return mw_scalar(e, s, YAML_PLAIN_SCALAR_STYLE);
}

static int mw_str(yaml_emitter_t *e, const char *s)
{
    return mw_scalar(e, s != NULL ? s : "", YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

static int mw_u64(yaml_emitter_t *e, uint64_t v)
{
    char b[32];
    snprintf(b, sizeof(b), "%" PRIu64, v);
    return mw_plain(e, b);
}

static int mw_kv_u64(yaml_emitter_t *e, const char *k, uint64_t v)
{
    return mw_plain(e, k) && mw_u64(e, v);
}

static int mw_kv_str(yaml_emitter_t *e, const char *k, const char *v)
{
    return mw_plain(e, k) && mw_str(e, v);
}

static int mw_kv_plain(yaml_emitter_t *e, const char *k, const char *v)
{
    return mw_plain(e, k) && mw_plain(e, v);
}

static int mw_map_start(yaml_emitter_t *e, int flow)
{
    yaml_event_t ev;
    if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                             flow ? YAML_FLOW_MAPPING_STYLE
                                                  : YAML_BLOCK_MAPPING_STYLE))
        return 0;
    return yaml_emitter_emit(e, &ev);
}

static int mw_map_end(yaml_emitter_t *e)
{
    yaml_event_t ev;
    return yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
}

static int mw_seq_start(yaml_emitter_t *e, int flow)
{
    yaml_event_t ev;
    if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                              flow ? YAML_FLOW_SEQUENCE_STYLE
                                                   : YAML_BLOCK_SEQUENCE_STYLE))
        return 0;
    return yaml_emitter_emit(e, &ev);
}

static int mw_seq_end(yaml_emitter_t *e)
{
    yaml_event_t ev;
    return yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
}

static int mw_u64_list(yaml_emitter_t *e, const uint64_t *v, uint32_t n, int unlimited_first)
{
    if (!mw_seq_start(e, 1))
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        int ok = (i == 0 && unlimited_first && v[i] == PDCBB_DIM_UNLIMITED)
                     ? mw_plain(e, "unlimited")
                     : mw_u64(e, v[i]);
        if (!ok)
            return 0;
    }
    return mw_seq_end(e);
}

/* "tags: [...]"; *bad names a tag whose type has no name. */
static int mw_tags(yaml_emitter_t *e, const pdcbb_drain_tag_t *t, uint32_t n, const char **bad)
{
    if (!mw_plain(e, "tags") || !mw_seq_start(e, n == 0))
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *tn = pdcbb_drain_type_name(t[i].type);
        if (tn == NULL) {
            *bad = t[i].name;
            return 0;
        }
        char *hex = malloc(2 * (size_t)t[i].len + 1);
        if (hex == NULL)
            return 0;
        for (uint32_t k = 0; k < t[i].len; k++)
            snprintf(hex + 2 * k, 3, "%02x", t[i].value[k]);
        hex[2 * (size_t)t[i].len] = '\0';
        int ok = mw_map_start(e, 0) && mw_kv_str(e, "name", t[i].name) &&
                 mw_kv_plain(e, "type", tn) && mw_kv_str(e, "value", hex) && mw_map_end(e);
        free(hex);
        if (!ok)
            return 0;
    }
    return mw_seq_end(e);
}

/* Emit the whole manifest into b; 0 on failure (*what says about what, if known). */
static int mw_manifest(yaml_emitter_t *e, const pdcbb_drain_t *m, const char **what,
                       char *whatbuf, size_t whatlen)
{
    yaml_event_t ev;
    char num[64];
    const char *bad = NULL;

    if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) ||
        !yaml_emitter_emit(e, &ev))
        return 0;
    if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) ||
        !yaml_emitter_emit(e, &ev))
        return 0;
    if (!mw_map_start(e, 0) || !mw_kv_plain(e, "format", PDCBB_DRAIN_FORMAT) ||
        !mw_kv_u64(e, "version", PDCBB_DRAIN_VERSION))
        return 0;
    if (!mw_plain(e, "job") || !mw_map_start(e, 0) || !mw_kv_u64(e, "id", m->job_id) ||
        !mw_kv_str(e, "user", m->user) || !mw_kv_u64(e, "uid", m->uid) ||
        !mw_kv_u64(e, "nservers", m->nservers) ||
        !mw_kv_u64(e, "servers_per_node", m->servers_per_node) ||
        (m->instance && m->instance[0] && !mw_kv_str(e, "instance", m->instance)) ||
        !mw_map_end(e))
        return 0;

    if (!mw_plain(e, "ranks") || !mw_seq_start(e, m->nranks == 0))
        return 0;
    for (uint32_t i = 0; i < m->nranks; i++) {
        const pdcbb_drain_rank_t *r = &m->ranks[i];
        snprintf(num, sizeof(num), "%.3f", r->seconds);
        if (!mw_map_start(e, 0) || !mw_kv_u64(e, "rank", r->rank) ||
            !mw_kv_str(e, "node", r->node) || !mw_kv_str(e, "data_file", r->data_file) ||
            !mw_kv_u64(e, "data_bytes", r->data_bytes) || !mw_kv_plain(e, "seconds", num) ||
            !mw_map_end(e))
            return 0;
    }
    if (!mw_seq_end(e))
        return 0;

    if (!mw_plain(e, "containers") || !mw_seq_start(e, m->nconts == 0))
        return 0;
    for (uint32_t i = 0; i < m->nconts; i++) {
        const pdcbb_drain_cont_t *c = &m->conts[i];
        snprintf(whatbuf, whatlen, "container '%s'", pdcbb_esc(c->name));
        *what = whatbuf;
        if (!mw_map_start(e, 0) || !mw_kv_u64(e, "id", c->id) || !mw_kv_str(e, "name", c->name) ||
            !mw_kv_plain(e, "lifetime", c->lifetime ? "transient" : "persistent") ||
            !mw_kv_u64(e, "rank", c->rank) || !mw_tags(e, c->tags, c->ntags, &bad) ||
            !mw_plain(e, "objects") || !mw_u64_list(e, c->obj_ids, c->nobj_ids, 0) ||
            !mw_map_end(e))
            goto fail;
    }
    if (!mw_seq_end(e))
        return 0;

    if (!mw_plain(e, "objects") || !mw_seq_start(e, m->nobjs == 0))
        return 0;
    for (uint32_t i = 0; i < m->nobjs; i++) {
        const pdcbb_drain_object_t *o = &m->objs[i];
        const char *tn = pdcbb_drain_type_name(o->type);
        const char *pn = pdcbb_drain_partition_name(o->partition);
        snprintf(whatbuf, whatlen, "object '%s'", pdcbb_esc(o->name));
        *what = whatbuf;
        if (tn == NULL || pn == NULL) {
            snprintf(whatbuf, whatlen, "object '%s': unknown %s %d", pdcbb_esc(o->name),
                     tn == NULL ? "type" : "partition",
                     tn == NULL ? (int)o->type : (int)o->partition);
            return 0;
        }
        if (!mw_map_start(e, 0) || !mw_kv_u64(e, "id", o->id) || !mw_kv_str(e, "name", o->name) ||
            !mw_kv_str(e, "container", o->container) ||
            !mw_kv_u64(e, "container_id", o->cont_id) || !mw_kv_u64(e, "rank", o->rank) ||
            !mw_kv_plain(e, "type", tn) || !mw_kv_u64(e, "element_size", o->element_size) ||
            !mw_plain(e, "dims") || !mw_u64_list(e, o->dims, o->ndim, 1) ||
            !mw_kv_plain(e, "partition", pn) || !mw_kv_u64(e, "consistency", o->consistency) ||
            !mw_kv_u64(e, "user_id", o->user_id) || !mw_kv_u64(e, "time_step", o->time_step) ||
            !mw_kv_str(e, "app_name", o->app_name) || !mw_kv_str(e, "data_loc", o->data_loc) ||
            !mw_kv_str(e, "tags_string", o->tags_str) || !mw_tags(e, o->tags, o->ntags, &bad))
            goto fail;
        if (o->ndim > 0 && o->dims[0] == PDCBB_DIM_UNLIMITED && o->has_current_dims) {
            uint64_t cur[PDCBB_REGION_NDIM_MAX];
            memcpy(cur, o->dims, sizeof(cur));
            cur[0] = o->current_rows;
            if (!mw_plain(e, "current_dims") || !mw_u64_list(e, cur, o->ndim, 0))
                return 0;
        }
        if (!mw_plain(e, "placement_map") || !mw_seq_start(e, o->nmap == 0))
            return 0;
        for (uint32_t k = 0; k < o->nmap; k++) {
            const pdcbb_drain_map_entry_t *p = &o->map[k];
            if (!mw_map_start(e, 1) || !mw_kv_u64(e, "seq", p->seq) ||
                !mw_kv_u64(e, "rank", p->rank) || !mw_plain(e, "offset") ||
                !mw_u64_list(e, p->box.off, p->box.ndim, 0) || !mw_plain(e, "size") ||
                !mw_u64_list(e, p->box.size, p->box.ndim, 0) || !mw_map_end(e))
                return 0;
        }
        if (!mw_seq_end(e) || !mw_map_end(e))
            return 0;
    }
    if (!mw_seq_end(e))
        return 0;
    *what = NULL;

    if (!mw_plain(e, "extents") || !mw_seq_start(e, m->nextents == 0))
        return 0;
    for (uint64_t i = 0; i < m->nextents; i++) {
        const pdcbb_drain_extent_t *x = &m->extents[i];
        snprintf(num, sizeof(num), "0x%08" PRIx32, x->crc32c);
        if (!mw_map_start(e, 1) || !mw_kv_u64(e, "object", x->object_id) ||
            !mw_kv_u64(e, "rank", x->rank) || !mw_kv_u64(e, "object_offset", x->object_offset) ||
            !mw_kv_u64(e, "length", x->length) || !mw_kv_str(e, "file", x->file) ||
            !mw_kv_u64(e, "file_offset", x->file_offset) || !mw_kv_plain(e, "crc32c", num) ||
            (x->damaged && !mw_kv_plain(e, "damaged", pdcbb_drain_damaged_name(x->damaged))) ||
            !mw_map_end(e))
            return 0;
    }
    if (!mw_seq_end(e))
        return 0;

    /* KV objects and their dumps: only when there are any (older readers know neither key) */
    if (m->nkvs > 0 || m->nkvdumps > 0) {
        if (!mw_plain(e, "kv_objects") || !mw_seq_start(e, m->nkvs == 0))
            return 0;
        for (uint32_t i = 0; i < m->nkvs; i++) {
            const pdcbb_drain_kv_t *k = &m->kvs[i];
            const char *kt = pdcbb_kvd_key_type_name(k->key_type);
            const char *sh = pdcbb_kvd_shard_name(k->sharding);
            if (kt == NULL || sh == NULL) {
                snprintf(whatbuf, whatlen, "KV object '%s': unknown %s", pdcbb_esc(k->name),
                         kt == NULL ? "key type" : "sharding");
                *what = whatbuf;
                return 0;
            }
            if (!mw_map_start(e, 0) || !mw_kv_u64(e, "id", k->id) ||
                !mw_kv_str(e, "name", k->name) ||
                !mw_kv_str(e, "container", k->container) ||
                !mw_kv_u64(e, "container_id", k->cont_id) || !mw_kv_u64(e, "rank", k->rank) ||
                !mw_kv_plain(e, "key_type", kt) || !mw_kv_plain(e, "sharding", sh) ||
                !mw_kv_u64(e, "nshards", k->nshards) ||
                !mw_kv_u64(e, "max_key_len", k->max_key_len) ||
                !mw_kv_u64(e, "max_value_len", k->max_value_len) ||
                (k->ncommitted > 0 && (!mw_plain(e, "committed_tags") ||
                                       !mw_u64_list(e, k->committed, k->ncommitted, 0))) ||
                !mw_map_end(e))
                return 0;
        }
        if (!mw_seq_end(e))
            return 0;
        if (!mw_plain(e, "kv_dumps") || !mw_seq_start(e, m->nkvdumps == 0))
            return 0;
        for (uint32_t i = 0; i < m->nkvdumps; i++) {
            const pdcbb_drain_kvdump_t *d = &m->kvdumps[i];
            snprintf(num, sizeof(num), "0x%08" PRIx32, d->crc32c);
            if (!mw_map_start(e, 1) || !mw_kv_u64(e, "kv", d->kv) ||
                !mw_kv_u64(e, "rank", d->rank) ||
                !mw_kv_str(e, "file", d->file) || !mw_kv_u64(e, "records", d->records) ||
                !mw_kv_u64(e, "bytes", d->bytes) || !mw_kv_plain(e, "crc32c", num) ||
                !mw_map_end(e))
                return 0;
        }
        if (!mw_seq_end(e))
            return 0;
    }
    /* The mount's files and their list: only when the job had them */
    if (m->files.list != NULL) {
        snprintf(num, sizeof(num), "0x%08" PRIx32, m->files.crc32c);
        if (!mw_plain(e, "files") || !mw_map_start(e, 1) || !mw_kv_str(e, "list", m->files.list) ||
            !mw_kv_u64(e, "entries", m->files.entries) || !mw_kv_u64(e, "bytes", m->files.bytes) ||
            !mw_kv_plain(e, "crc32c", num) || !mw_map_end(e))
            return 0;
    }
    /* Extents of deleted objects the merge left out: only when there are any */
    if (m->ndropped > 0) {
        if (!mw_plain(e, "dropped_objects") || !mw_seq_start(e, 0))
            return 0;
        for (uint32_t i = 0; i < m->ndropped; i++) {
            const pdcbb_drain_dropped_t *d = &m->dropped[i];
            if (!mw_map_start(e, 1) || !mw_kv_u64(e, "object", d->object_id) ||
                !mw_kv_u64(e, "rank", d->rank) || !mw_kv_u64(e, "extents", d->extents) ||
                !mw_kv_u64(e, "bytes", d->bytes) || !mw_map_end(e))
                return 0;
        }
        if (!mw_seq_end(e))
            return 0;
    }
    if (!mw_map_end(e))
        return 0;
    if (!yaml_document_end_event_initialize(&ev, 1) || !yaml_emitter_emit(e, &ev))
        return 0;
    if (!yaml_stream_end_event_initialize(&ev) || !yaml_emitter_emit(e, &ev))
        return 0;
    return yaml_emitter_flush(e);
fail:
    if (bad != NULL) {
        char tmp[256];
        snprintf(tmp, sizeof(tmp), "%s", whatbuf);
        snprintf(whatbuf, whatlen, "%s: tag '%s' has an unknown type", tmp, pdcbb_esc(bad));
    }
    return 0;
}

static pdcbb_err_t drain_fsync_dir_of(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return pdcbb_err_from_errno(errno);
    int r = fsync(fd);
    int e = errno;
    close(fd);
    /* some filesystems refuse fsync on a directory: that is not a failure of ours */
    return (r == 0 || e == EINVAL || e == EROFS) ? PDCBB_OK : pdcbb_err_from_errno(e);
}

/* Write len bytes to path via path.tmp.HOST.PID: fsync, rename, fsync the directory. */
pdcbb_err_t drain_write_atomic(const char *path, const void *data, size_t len, char *err,
                               size_t errlen)
{
    char tmp[PATH_MAX], host[256] = "";
    pdcbb_err_t rc;
    int fd;

    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "host");
    host[strcspn(host, "/")] = '\0';
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%s.%ld", path, host, (long)getpid()) >=
        (int)sizeof(tmp)) {
        drain_errf(err, errlen, "%s: path too long", path);
        return PDCBB_ERR_INVAL;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        drain_errf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            drain_errf(err, errlen, "%s: cannot write: %s", tmp, strerror(e));
            rc = pdcbb_err_from_errno(e);
            goto fail;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0) {
        drain_errf(err, errlen, "%s: fsync: %s", tmp, strerror(errno));
        rc = pdcbb_err_from_errno(errno);
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        drain_errf(err, errlen, "%s: close: %s", tmp, strerror(errno));
        rc = pdcbb_err_from_errno(errno);
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        drain_errf(err, errlen, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
        rc = pdcbb_err_from_errno(errno);
        goto fail;
    }
    if ((rc = drain_fsync_dir_of(path)) != PDCBB_OK) {
        drain_errf(err, errlen, "%s: fsync of its directory: %s", path, pdcbb_strerror(rc));
        return rc;
    }
    return PDCBB_OK;
fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return rc;
}

pdcbb_err_t pdcbb_drain_write_manifest(const pdcbb_drain_t *m, const char *path, char *err,
                                       size_t errlen)
{
    yaml_emitter_t e;
    drain_buf_t b = {0};
    const char *what = NULL;
    char whatbuf[512] = "";
    pdcbb_err_t rc;

    if (m == NULL || path == NULL) {
        drain_errf(err, errlen, "pdcbb_drain_write_manifest: no model or no path");
        return PDCBB_ERR_INVAL;
    }
    if (!yaml_emitter_initialize(&e)) {
        drain_errf(err, errlen, "%s: out of memory", path);
        return PDCBB_ERR_NOMEM;
    }
    yaml_emitter_set_output(&e, drain_buf_write, &b);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_width(&e, -1); /* one extent per line */
    yaml_emitter_set_indent(&e, 2);
    if (!mw_manifest(&e, m, &what, whatbuf, sizeof(whatbuf))) {
        if (e.error == YAML_MEMORY_ERROR || (e.error == YAML_WRITER_ERROR)) {
            drain_errf(err, errlen, "%s: out of memory", path);
            rc = PDCBB_ERR_NOMEM;
        } else {
            drain_errf(err, errlen, "%s: cannot write %s: %s", path,
                       what != NULL ? what : (whatbuf[0] ? whatbuf : "the manifest"),
                       e.problem != NULL ? e.problem : "bad value");
            rc = PDCBB_ERR_INVAL;
        }
        goto done;
    }
    rc = drain_write_atomic(path, b.p, b.len, err, errlen);
done:
    yaml_emitter_delete(&e);
    free(b.p);
    return rc;
}
