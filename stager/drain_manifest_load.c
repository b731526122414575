/*
 * drain_manifest_load.c - the strict manifest loader (pdcbb_drain_load_manifest): the sections
 * of docs/DRAIN-FORMAT.md (job, ranks, containers, objects, extents, kv_objects, kv_dumps,
 * dropped_objects, files) read
 * into a model, item by item as the parser streams them (drain_manifest_yaml.c), then the
 * cross-checks of the whole model (drain_check).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "drain_internal.h"
#include "drain_manifest_yaml.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"

#define DRAIN_TAG_VALUE_MAX (1u << 20) /* bytes of one tag value */

static pdcbb_err_t mf_tags(mf_ctx_t *c, const mf_node_t *v, const char *owner,
                           pdcbb_drain_tag_t **out, uint32_t *nout)
{
    static const char *const keys[] = {"name", "type", "value", NULL};
    char what[300];
    pdcbb_err_t rc = PDCBB_OK;

    if (v->kind != MF_SEQ)
        return mf_bad(c, v, owner, "tags", "expected a list");
    if (v->nkids == 0)
        return PDCBB_OK;
    pdcbb_drain_tag_t *t = calloc(v->nkids, sizeof(*t));
    if (t == NULL)
        return PDCBB_ERR_NOMEM;
    uint32_t n = 0;
    for (size_t i = 0; i < v->nkids; i++) {
        mf_node_t *f[3];
        snprintf(what, sizeof(what), "%s: tags[%zu]", owner, i);
        if ((rc = mf_fields(c, v->kids[i], what, keys, 0x7, f)) != PDCBB_OK)
            goto fail;
        n++;
        if ((rc = mf_str(c, f[0], what, "name", &t[i].name)) != PDCBB_OK)
            goto fail;
        if (f[1]->kind != MF_SCALAR || (t[i].type = pdcbb_drain_type_parse(f[1]->text)) < 0) {
            rc = mf_bad(c, f[1], what, "type", "expected a pdc_var_type_t name (PDC_INT ...)");
            goto fail;
        }
        const mf_node_t *hv = f[2];
        if (hv->kind != MF_SCALAR || hv->len % 2 != 0 || hv->len / 2 > DRAIN_TAG_VALUE_MAX) {
            rc = mf_bad(c, hv, what, "value", "expected an even number of hex digits");
            goto fail;
        }
        t[i].len = (uint32_t)(hv->len / 2);
        t[i].value = malloc(t[i].len ? t[i].len : 1);
        if (t[i].value == NULL) {
            rc = PDCBB_ERR_NOMEM;
            goto fail;
        }
        for (uint32_t k = 0; k < t[i].len; k++) {
            int hi = mf_hexval(hv->text[2 * k]), lo = mf_hexval(hv->text[2 * k + 1]);
            if (hi < 0 || lo < 0) {
                rc = mf_bad(c, hv, what, "value", "expected an even number of hex digits");
                goto fail;
            }
            t[i].value[k] = (uint8_t)(hi << 4 | lo);
        }
    }
    *out = t;
    *nout = n;
    return PDCBB_OK;
fail:
    drain_tags_free(t, (uint32_t)v->nkids);
    return rc;
}

static pdcbb_err_t mf_job(mf_ctx_t *c, const mf_node_t *v)
{
    static const char *const keys[] = {"id", "user", "uid", "nservers", "servers_per_node",
                                       "instance", NULL};
    mf_node_t *f[6];
    pdcbb_drain_t *m = c->m;
    pdcbb_err_t rc;

    if ((rc = mf_fields(c, v, "job", keys, 0x1f, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], "job", "id", 0, UINT64_MAX, &m->job_id)) != PDCBB_OK ||
        (rc = mf_str(c, f[1], "job", "user", &m->user)) != PDCBB_OK ||
        (rc = mf_u32(c, f[2], "job", "uid", UINT32_MAX, &m->uid)) != PDCBB_OK)
        return rc;
    uint64_t x;
    if ((rc = mf_u64(c, f[3], "job", "nservers", 1, DRAIN_NSERVERS_MAX, &x)) != PDCBB_OK)
        return rc;
    m->nservers = (uint32_t)x;
    if ((rc = mf_u64(c, f[4], "job", "servers_per_node", 1, m->nservers, &x)) != PDCBB_OK)
        return rc;
    m->servers_per_node = (uint32_t)x;
    if (f[5] != NULL) { /* optional: drains by launchers that gave no instance id lack it */
        if ((rc = mf_str(c, f[5], "job", "instance", &m->instance)) != PDCBB_OK)
            return rc;
        for (const char *p = m->instance; *p; p++)
            if (!isxdigit((unsigned char)*p) || p - m->instance >= 64)
                return mf_bad(c, f[5], "job", "instance", "hex digits");
    }
    return PDCBB_OK;
}

static pdcbb_err_t mf_rank_of(mf_ctx_t *c, const mf_node_t *v, const char *what, uint32_t *out)
{
    if (c->m->nservers == 0)
        return mf_bad(c, v, what, "rank", "the job section must come first");
    return mf_u32(c, v, what, "rank", c->m->nservers - 1, out);
}

static pdcbb_err_t mf_rank_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"rank", "node", "data_file", "data_bytes", "seconds",
                                       NULL};
    mf_node_t *f[5];
    char what[64];
    pdcbb_drain_rank_t r = {0};
    pdcbb_err_t rc;

    snprintf(what, sizeof(what), "ranks[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x1f, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_rank_of(c, f[0], what, &r.rank)) != PDCBB_OK ||
        (rc = mf_str(c, f[1], what, "node", &r.node)) != PDCBB_OK ||
        (rc = mf_file_name(c, f[2], what, "data_file")) != PDCBB_OK ||
        (rc = mf_str(c, f[2], what, "data_file", &r.data_file)) != PDCBB_OK ||
        (rc = mf_u64(c, f[3], what, "data_bytes", 0, INT64_MAX, &r.data_bytes)) != PDCBB_OK)
        goto done;
    char *end;
    errno = 0;
    r.seconds = f[4]->kind == MF_SCALAR ? strtod(f[4]->text, &end) : -1;
    if (f[4]->kind != MF_SCALAR || errno != 0 || *end != '\0' || f[4]->text[0] == '\0' ||
        !(r.seconds >= 0 && r.seconds < 1e12)) {
        rc = mf_bad(c, f[4], what, "seconds", "expected a number of seconds");
        goto done;
    }
    for (uint32_t i = 0; i < c->m->nranks; i++) {
        if (c->m->ranks[i].rank == r.rank) {
            rc = mf_bad(c, f[0], what, "rank", "this rank is listed twice");
            goto done;
        }
    }
    rc = pdcbb_drain_add_rank(c->m, &r);
done:
    free(r.node);
    free(r.data_file);
    return rc;
}

static pdcbb_err_t mf_cont_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"id", "name", "lifetime", "rank", "tags", "objects",
                                       NULL};
    mf_node_t *f[6];
    char what[300];
    pdcbb_drain_cont_t x = {0};
    pdcbb_err_t rc;

    snprintf(what, sizeof(what), "containers[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x3f, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], what, "id", 1, UINT64_MAX, &x.id)) != PDCBB_OK ||
        (rc = mf_str(c, f[1], what, "name", &x.name)) != PDCBB_OK)
        goto done;
    snprintf(what, sizeof(what), "container '%s'", x.name);
    if (f[2]->kind == MF_SCALAR && strcmp(f[2]->text, "persistent") == 0) {
        x.lifetime = 0;
    } else if (f[2]->kind == MF_SCALAR && strcmp(f[2]->text, "transient") == 0) {
        x.lifetime = 1;
    } else {
        rc = mf_bad(c, f[2], what, "lifetime", "expected persistent or transient");
        goto done;
    }
    if ((rc = mf_rank_of(c, f[3], what, &x.rank)) != PDCBB_OK ||
        (rc = mf_tags(c, f[4], what, &x.tags, &x.ntags)) != PDCBB_OK)
        goto done;
    if (f[5]->kind != MF_SEQ) {
        rc = mf_bad(c, f[5], what, "objects", "expected a list of object ids");
        goto done;
    }
    if (f[5]->nkids > 0) {
        x.obj_ids = calloc(f[5]->nkids, sizeof(uint64_t));
        if (x.obj_ids == NULL) {
            rc = PDCBB_ERR_NOMEM;
            goto done;
        }
        for (size_t i = 0; i < f[5]->nkids; i++)
            if ((rc = mf_u64(c, f[5]->kids[i], what, "objects", 1, UINT64_MAX, &x.obj_ids[i])) !=
                PDCBB_OK)
                goto done;
        x.nobj_ids = (uint32_t)f[5]->nkids;
    }
    rc = pdcbb_drain_add_cont(c->m, &x, NULL);
done:
    drain_cont_clear(&x);
    return rc;
}

static pdcbb_err_t mf_object_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"id",          "name",          "container",
                                       "container_id", "rank",         "type",
                                       "element_size", "dims",         "partition",
                                       "consistency",  "user_id",      "time_step",
                                       "app_name",     "data_loc",     "tags_string",
                                       "tags",         "placement_map", "current_dims",
                                       NULL};
    mf_node_t *f[18];
    char what[300];
    pdcbb_drain_object_t o;
    pdcbb_err_t rc;
    uint64_t tmp[PDCBB_REGION_NDIM_MAX];

    memset(&o, 0, sizeof(o));
    snprintf(what, sizeof(what), "objects[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x1ffff, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], what, "id", 1, UINT64_MAX, &o.id)) != PDCBB_OK ||
        (rc = mf_str(c, f[1], what, "name", &o.name)) != PDCBB_OK)
        goto done;
    snprintf(what, sizeof(what), "object '%s'", o.name);
    if ((rc = mf_str(c, f[2], what, "container", &o.container)) != PDCBB_OK ||
        (rc = mf_u64(c, f[3], what, "container_id", 0, UINT64_MAX, &o.cont_id)) != PDCBB_OK ||
        (rc = mf_rank_of(c, f[4], what, &o.rank)) != PDCBB_OK)
        goto done;
    if (f[5]->kind != MF_SCALAR || (o.type = pdcbb_drain_type_parse(f[5]->text)) < 0) {
        rc = mf_bad(c, f[5], what, "type", "expected a pdc_var_type_t name (PDC_INT ...)");
        goto done;
    }
    if ((rc = mf_u32(c, f[6], what, "element_size", UINT32_MAX, &o.element_size)) != PDCBB_OK)
        goto done;
    if (o.element_size == 0) {
        rc = mf_bad(c, f[6], what, "element_size", "must be at least 1");
        goto done;
    }
    /* An object without dimensions (PDC allows one: metadata and tags only) has no data. */
    if ((rc = mf_u64_list(c, f[7], what, "dims", 1, 1, 0, o.dims, &o.ndim)) != PDCBB_OK)
        goto done;
    if (o.ndim > 0 &&
        (pdcbb_layout_strides(o.ndim, o.dims, o.element_size, tmp) != PDCBB_OK ||
         (o.dims[0] != PDCBB_DIM_UNLIMITED &&
          pdcbb_drain_object_shape(c->m, &o, tmp) != PDCBB_OK))) {
        rc = mf_bad(c, f[7], what, "dims", "the object's size overflows");
        goto done;
    }
    if (f[17] != NULL) { /* optional: the extent of an object with an unlimited first dim */
        uint64_t cur[PDCBB_REGION_NDIM_MAX];
        uint32_t ncur = 0;
        if ((rc = mf_u64_list(c, f[17], what, "current_dims", 0, 0, 1, cur, &ncur)) != PDCBB_OK)
            goto done;
        if (o.ndim == 0 || o.dims[0] != PDCBB_DIM_UNLIMITED) {
            rc = mf_bad(c, f[17], what, "current_dims",
                        "only an object whose first dimension is unlimited has one");
            goto done;
        }
        if (ncur != o.ndim || memcmp(cur + 1, o.dims + 1, 8 * (size_t)(ncur - 1)) != 0) {
            rc = mf_bad(c, f[17], what, "current_dims",
                        "expected the rows, then the object's other dims as created");
            goto done;
        }
        o.has_current_dims = 1;
        o.current_rows = cur[0];
    }
    int32_t part = f[8]->kind == MF_SCALAR ? pdcbb_drain_partition_parse(f[8]->text) : -1;
    if (part < 0) {
        rc = mf_bad(c, f[8], what, "partition",
                    "expected PDC_OBJ_STATIC, PDC_REGION_STATIC, PDC_REGION_DYNAMIC or "
                    "PDC_REGION_LOCAL");
        goto done;
    }
    o.partition = (uint32_t)part;
    if ((rc = mf_u32(c, f[9], what, "consistency", 4, &o.consistency)) != PDCBB_OK ||
        (rc = mf_u32(c, f[10], what, "user_id", UINT32_MAX, &o.user_id)) != PDCBB_OK ||
        (rc = mf_u32(c, f[11], what, "time_step", UINT32_MAX, &o.time_step)) != PDCBB_OK ||
        (rc = mf_str(c, f[12], what, "app_name", &o.app_name)) != PDCBB_OK ||
        (rc = mf_str(c, f[13], what, "data_loc", &o.data_loc)) != PDCBB_OK ||
        (rc = mf_str(c, f[14], what, "tags_string", &o.tags_str)) != PDCBB_OK ||
        (rc = mf_tags(c, f[15], what, &o.tags, &o.ntags)) != PDCBB_OK)
        goto done;
    const mf_node_t *pm = f[16];
    if (pm->kind != MF_SEQ) {
        rc = mf_bad(c, pm, what, "placement_map", "expected a list");
        goto done;
    }
    if (pm->nkids > 0 && o.partition != 2 && o.partition != 3) {
        rc = mf_bad(c, pm, what, "placement_map",
                    "only PDC_REGION_DYNAMIC and PDC_REGION_LOCAL objects have one");
        goto done;
    }
    if (pm->nkids > 0) {
        static const char *const mkeys[] = {"seq", "rank", "offset", "size", NULL};
        o.map = calloc(pm->nkids, sizeof(*o.map));
        if (o.map == NULL) {
            rc = PDCBB_ERR_NOMEM;
            goto done;
        }
        for (size_t i = 0; i < pm->nkids; i++) {
            mf_node_t *g[4];
            char mwhat[340];
            uint64_t off[PDCBB_REGION_NDIM_MAX], size[PDCBB_REGION_NDIM_MAX];
            uint32_t noff = 0, nsize = 0;
            pdcbb_drain_map_entry_t *e = &o.map[i];
            snprintf(mwhat, sizeof(mwhat), "%s: placement_map[%zu]", what, i);
            if ((rc = mf_fields(c, pm->kids[i], mwhat, mkeys, 0xf, g)) != PDCBB_OK ||
                (rc = mf_u64(c, g[0], mwhat, "seq", 0, UINT64_MAX, &e->seq)) != PDCBB_OK ||
                (rc = mf_rank_of(c, g[1], mwhat, &e->rank)) != PDCBB_OK ||
                (rc = mf_u64_list(c, g[2], mwhat, "offset", 0, 0, 1, off, &noff)) != PDCBB_OK ||
                (rc = mf_u64_list(c, g[3], mwhat, "size", 0, 1, 1, size, &nsize)) != PDCBB_OK)
                goto done;
            if (noff != o.ndim || nsize != o.ndim) {
                rc = mf_bad(c, pm->kids[i], mwhat, noff != o.ndim ? "offset" : "size",
                            "expected one number per dimension of the object");
                goto done;
            }
            if (pdcbb_box_make(&e->box, o.ndim, off, size) != PDCBB_OK ||
                pdcbb_box_check_within(&e->box, o.ndim, o.dims) != PDCBB_OK) {
                rc = mf_bad(c, pm->kids[i], mwhat, "size", "the box lies outside the object");
                goto done;
            }
            o.nmap++;
        }
    }
    rc = pdcbb_drain_add_object(c->m, &o, NULL);
done:
    drain_object_clear(&o);
    return rc;
}

static pdcbb_err_t mf_kv_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"id",       "name",     "container",   "container_id",
                                       "rank",     "key_type", "sharding",    "nshards",
                                       "max_key_len", "max_value_len", "committed_tags",
                                       NULL};
    mf_node_t *f[11];
    char what[300];
    pdcbb_drain_kv_t x = {0};
    pdcbb_err_t rc;
    int t;

    snprintf(what, sizeof(what), "kv_objects[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x3ff, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], what, "id", 1, UINT64_MAX, &x.id)) != PDCBB_OK ||
        (rc = mf_str(c, f[1], what, "name", &x.name)) != PDCBB_OK ||
        (rc = mf_str(c, f[2], what, "container", &x.container)) != PDCBB_OK)
        goto done;
    snprintf(what, sizeof(what), "KV object '%s'", x.name);
    if ((rc = mf_u64(c, f[3], what, "container_id", 0, UINT64_MAX, &x.cont_id)) != PDCBB_OK ||
        (rc = mf_rank_of(c, f[4], what, &x.rank)) != PDCBB_OK)
        goto done;
    if (f[5]->kind != MF_SCALAR || (t = pdcbb_kvd_key_type_parse(f[5]->text)) < 0) {
        rc = mf_bad(c, f[5], what, "key_type", "expected STRING, INT or FLOAT");
        goto done;
    }
    x.key_type = (uint32_t)t;
    if (f[6]->kind != MF_SCALAR || (t = pdcbb_kvd_shard_parse(f[6]->text)) < 0) {
        rc = mf_bad(c, f[6], what, "sharding", "expected DEFAULT, HASH or RANGE");
        goto done;
    }
    x.sharding = (uint32_t)t;
    if ((rc = mf_u32(c, f[7], what, "nshards", DRAIN_NSERVERS_MAX, &x.nshards)) != PDCBB_OK ||
        (rc = mf_u32(c, f[8], what, "max_key_len", PDCBB_KV_KEY_MAXLEN, &x.max_key_len)) !=
            PDCBB_OK ||
        (rc = mf_u64(c, f[9], what, "max_value_len", 0, UINT64_MAX, &x.max_value_len)) !=
            PDCBB_OK)
        goto done;
    if (f[10] != NULL) {
        if (f[10]->kind != MF_SEQ) {
            rc = mf_bad(c, f[10], what, "committed_tags", "expected a list of tags");
            goto done;
        }
        if (f[10]->nkids > 0 &&
            (x.committed = calloc(f[10]->nkids, sizeof(uint64_t))) == NULL) {
            rc = PDCBB_ERR_NOMEM;
            goto done;
        }
        for (size_t i = 0; i < f[10]->nkids; i++)
            if ((rc = mf_u64(c, f[10]->kids[i], what, "committed_tags", 1, PDCBB_KV_MAXTAG - 1,
                             &x.committed[i])) != PDCBB_OK)
                goto done;
        x.ncommitted = (uint32_t)f[10]->nkids;
    }
    if (pdcbb_drain_find_kv_id(c->m, x.id) != NULL) {
        rc = mf_bad(c, f[0], what, "id", "two KV objects have this id");
        goto done;
    }
    rc = pdcbb_drain_add_kv(c->m, &x);
done:
    free(x.name);
    free(x.container);
    free(x.committed);
    return rc;
}

static pdcbb_err_t mf_kvdump_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"kv", "rank", "file", "records", "bytes", "crc32c", NULL};
    mf_node_t *f[6];
    char what[300];
    pdcbb_drain_kvdump_t x = {0};
    pdcbb_err_t rc;

    snprintf(what, sizeof(what), "kv_dumps[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x3f, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], what, "kv", 1, UINT64_MAX, &x.kv)) != PDCBB_OK ||
        (rc = mf_rank_of(c, f[1], what, &x.rank)) != PDCBB_OK ||
        (rc = mf_file_name(c, f[2], what, "file")) != PDCBB_OK ||
        (rc = mf_u64(c, f[3], what, "records", 0, UINT64_MAX, &x.records)) != PDCBB_OK ||
        (rc = mf_u64(c, f[4], what, "bytes", 1, (uint64_t)INT64_MAX, &x.bytes)) != PDCBB_OK ||
        (rc = mf_crc(c, f[5], what, &x.crc32c)) != PDCBB_OK)
        return rc;
    x.file = f[2]->text;
    return pdcbb_drain_add_kvdump(c->m, &x);
}

static pdcbb_err_t mf_dropped_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"object", "rank", "extents", "bytes", NULL};
    mf_node_t *f[4];
    char what[64];
    pdcbb_drain_dropped_t x = {0};
    pdcbb_err_t rc;

    snprintf(what, sizeof(what), "dropped_objects[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0xf, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], what, "object", 1, UINT64_MAX, &x.object_id)) != PDCBB_OK ||
        (rc = mf_rank_of(c, f[1], what, &x.rank)) != PDCBB_OK ||
        (rc = mf_u64(c, f[2], what, "extents", 1, UINT64_MAX, &x.extents)) != PDCBB_OK ||
        (rc = mf_u64(c, f[3], what, "bytes", 1, UINT64_MAX, &x.bytes)) != PDCBB_OK)
        return rc;
    return pdcbb_drain_add_dropped(c->m, &x);
}

static pdcbb_err_t mf_extent_item(mf_ctx_t *c, const mf_node_t *v, size_t idx)
{
    static const char *const keys[] = {"object", "rank", "object_offset", "length", "file",
                                       "file_offset", "crc32c", "damaged", NULL};
    mf_node_t *f[8];
    char what[64];
    pdcbb_drain_extent_t x = {0};
    pdcbb_err_t rc;

    snprintf(what, sizeof(what), "extents[%zu]", idx);
    if ((rc = mf_fields(c, v, what, keys, 0x7f, f)) != PDCBB_OK)
        return rc;
    if ((rc = mf_u64(c, f[0], what, "object", 1, UINT64_MAX, &x.object_id)) != PDCBB_OK ||
        (rc = mf_rank_of(c, f[1], what, &x.rank)) != PDCBB_OK ||
        (rc = mf_u64(c, f[2], what, "object_offset", 0, PDCBB_REGION_OFFSET_MAX - 1,
                     &x.object_offset)) != PDCBB_OK ||
        (rc = mf_u64(c, f[3], what, "length", 1, PDCBB_DRAIN_EXTENT_MAX, &x.length)) !=
            PDCBB_OK ||
        (rc = mf_file_name(c, f[4], what, "file")) != PDCBB_OK ||
        (rc = mf_u64(c, f[5], what, "file_offset", 0, (uint64_t)INT64_MAX - x.length,
                     &x.file_offset)) != PDCBB_OK)
        return rc;
    if ((rc = mf_crc(c, f[6], what, &x.crc32c)) != PDCBB_OK)
        return rc;
    if (f[7] != NULL) { /* optional: bytes that were damaged on the node */
        const char *t = f[7]->text ? f[7]->text : "";
        for (uint32_t k = 1; k <= PDCBB_DRAIN_DAMAGED_TRUNCATED; k++)
            if (strcmp(t, pdcbb_drain_damaged_name(k)) == 0)
                x.damaged = k;
        if (x.damaged == 0)
            return mf_bad(c, f[7], what, "damaged", "must be checksum or truncated");
    }
    if (x.object_offset > PDCBB_REGION_OFFSET_MAX - x.length)
        return mf_bad(c, f[3], what, "length", "the extent ends past 2^63");
    x.file = f[4]->text;
    if ((rc = pdcbb_drain_add_extent(c->m, &x)) != PDCBB_OK)
        return rc;
    if (drain_grow((void **)&c->ext_lines, c->m->nextents - 1, &c->cap_lines,
                   sizeof(*c->ext_lines)) != 0)
        return PDCBB_ERR_NOMEM;
    c->ext_lines[c->m->nextents - 1] = (uint32_t)v->line;
    return PDCBB_OK;
}

/* files: the mount's files and their list (one mapping; only the merged manifest has it). */
static pdcbb_err_t mf_files(mf_ctx_t *c, const mf_node_t *v)
{
    static const char *const keys[] = {"list", "entries", "bytes", "crc32c", NULL};
    mf_node_t *f[4];
    pdcbb_drain_files_ref_t x = {0};
    pdcbb_err_t rc;

    if ((rc = mf_fields(c, v, "files", keys, 0xf, f)) != PDCBB_OK ||
        (rc = mf_file_name(c, f[0], "files", "list")) != PDCBB_OK ||
        (rc = mf_u64(c, f[1], "files", "entries", 0, UINT64_MAX, &x.entries)) != PDCBB_OK ||
        (rc = mf_u64(c, f[2], "files", "bytes", 1, (uint64_t)INT64_MAX, &x.bytes)) != PDCBB_OK ||
        (rc = mf_crc(c, f[3], "files", &x.crc32c)) != PDCBB_OK)
        return rc;
    if ((x.list = strdup(f[0]->text)) == NULL)
        return PDCBB_ERR_NOMEM;
    free(c->m->files.list);
    c->m->files = x;
    return PDCBB_OK;
}

/* The top level: streams the four lists item by item. */
static pdcbb_err_t mf_document(mf_ctx_t *c)
{
    static const char *const keys[] = {"format",     "version",         "job",     "ranks",
                                       "containers", "objects",         "extents", "kv_objects",
                                       "kv_dumps",   "dropped_objects", "files",   NULL};
    yaml_event_t ev;
    pdcbb_err_t rc;
    size_t seen[11] = {0};
    size_t root_line = 1;

    if ((rc = mf_next(c, &ev)) != PDCBB_OK)
        return rc;
    yaml_event_delete(&ev); /* stream start */
    if ((rc = mf_next(c, &ev)) != PDCBB_OK)
        return rc;
    if (ev.type != YAML_DOCUMENT_START_EVENT) {
        yaml_event_delete(&ev);
        drain_errf(c->err, c->errlen, "%s: empty file (not a manifest)", c->path);
        return PDCBB_ERR_CONFIG;
    }
    yaml_event_delete(&ev);
    if ((rc = mf_next(c, &ev)) != PDCBB_OK)
        return rc;
    root_line = ev.start_mark.line + 1;
    if (ev.type != YAML_MAPPING_START_EVENT) {
        yaml_event_delete(&ev);
        drain_errf(c->err, c->errlen, "%s:%zu: the top level must be a mapping", c->path,
                   root_line);
        return PDCBB_ERR_CONFIG;
    }
    yaml_event_delete(&ev);
    for (;;) {
        mf_node_t *kn = NULL, *vn = NULL;
        size_t j;
        if ((rc = mf_next(c, &ev)) != PDCBB_OK)
            return rc;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if ((rc = mf_build(c, &ev, 1, &kn)) != PDCBB_OK)
            return rc;
        if (kn->kind != MF_SCALAR) {
            drain_errf(c->err, c->errlen, "%s:%zu: a key must be a name, found %s", c->path,
                       kn->line, mf_kind(kn));
            mf_free(kn);
            return PDCBB_ERR_CONFIG;
        }
        for (j = 0; keys[j] != NULL; j++)
            if (strcmp(keys[j], kn->text) == 0)
                break;
        if (keys[j] == NULL) {
            drain_errf(c->err, c->errlen, "%s:%zu: unknown key '%s'", c->path, kn->line,
                       kn->text);
            mf_free(kn);
            return PDCBB_ERR_CONFIG;
        }
        if (seen[j]) {
            drain_errf(c->err, c->errlen, "%s:%zu: duplicate key '%s' (first on line %zu)",
                       c->path, kn->line, kn->text, seen[j]);
            mf_free(kn);
            return PDCBB_ERR_CONFIG;
        }
        seen[j] = kn->line;
        mf_free(kn);
        if (j >= 2 && c->m->nservers == 0 && j != 2) {
            drain_errf(c->err, c->errlen, "%s:%zu: key '%s' before key 'job'", c->path,
                       seen[j], keys[j]);
            return PDCBB_ERR_CONFIG;
        }
        if ((rc = mf_next(c, &ev)) != PDCBB_OK)
            return rc;
        if (j >= 3 && j != 10 && ev.type == YAML_SEQUENCE_START_EVENT) {
            yaml_event_delete(&ev);
            for (size_t idx = 0;; idx++) {
                if ((rc = mf_next(c, &ev)) != PDCBB_OK)
                    return rc;
                if (ev.type == YAML_SEQUENCE_END_EVENT) {
                    yaml_event_delete(&ev);
                    break;
                }
                if ((rc = mf_build(c, &ev, 2, &vn)) != PDCBB_OK)
                    return rc;
                rc = j == 3   ? mf_rank_item(c, vn, idx)
                     : j == 4 ? mf_cont_item(c, vn, idx)
                     : j == 5 ? mf_object_item(c, vn, idx)
                     : j == 6 ? mf_extent_item(c, vn, idx)
                     : j == 7 ? mf_kv_item(c, vn, idx)
                     : j == 8 ? mf_kvdump_item(c, vn, idx)
                              : mf_dropped_item(c, vn, idx);
                mf_free(vn);
                if (rc == PDCBB_ERR_NOMEM && c->err != NULL && c->err[0] == '\0')
                    drain_errf(c->err, c->errlen, "%s: out of memory", c->path);
                if (rc != PDCBB_OK)
                    return rc;
            }
            continue;
        }
        if ((rc = mf_build(c, &ev, 1, &vn)) != PDCBB_OK)
            return rc;
        if (j == 0) {
            if (vn->kind != MF_SCALAR || strcmp(vn->text, PDCBB_DRAIN_FORMAT) != 0)
                rc = mf_bad(c, vn, "top level", "format", "expected pdcbb-drain");
        } else if (j == 1) {
            uint64_t ver = 0;
            rc = mf_u64(c, vn, "top level", "version", 1, UINT32_MAX, &ver);
            if (rc == PDCBB_OK && ver != PDCBB_DRAIN_VERSION) {
                drain_errf(c->err, c->errlen,
                           "%s:%zu: key 'version': drain format version %" PRIu64
                           " is not supported (this pdcbb reads version %d)",
                           c->path, vn->line, ver, PDCBB_DRAIN_VERSION);
                rc = PDCBB_ERR_VERSION;
            }
        } else if (j == 2) {
            rc = mf_job(c, vn);
        } else if (j == 10) {
            rc = mf_files(c, vn);
        } else {
            rc = mf_bad(c, vn, "top level", keys[j], "expected a list");
        }
        mf_free(vn);
        if (rc != PDCBB_OK)
            return rc;
    }
    for (size_t j = 0; keys[j] != NULL && j < 7; j++) { /* kv_*, dropped_objects, files:
                                                         * optional */
        if (!seen[j]) {
            drain_errf(c->err, c->errlen, "%s:%zu: missing key '%s'", c->path, root_line,
                       keys[j]);
            return PDCBB_ERR_CONFIG;
        }
    }
    if ((rc = mf_next(c, &ev)) != PDCBB_OK)
        return rc;
    yaml_event_delete(&ev); /* document end */
    if ((rc = mf_next(c, &ev)) != PDCBB_OK)
        return rc;
    if (ev.type != YAML_STREAM_END_EVENT) {
        drain_errf(c->err, c->errlen, "%s:%zu: only one YAML document is allowed", c->path,
                   (size_t)ev.start_mark.line + 1);
        yaml_event_delete(&ev);
        return PDCBB_ERR_CONFIG;
    }
    yaml_event_delete(&ev);
    return PDCBB_OK;
}

static pdcbb_err_t mf_load(const char *path, int lenient, pdcbb_drain_t **out, char *err,
                           size_t errlen)
{
    mf_ctx_t c;
    pdcbb_err_t rc;
    FILE *f;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (path == NULL || out == NULL) {
        drain_errf(err, errlen, "pdcbb_drain_load_manifest: no path");
        return PDCBB_ERR_INVAL;
    }
    f = fopen(path, "rbe");
    if (f == NULL) {
        int e = errno;
        drain_errf(err, errlen, "%s: cannot open: %s", path, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    memset(&c, 0, sizeof(c));
    c.path = path;
    c.err = err;
    c.errlen = errlen;
    c.m = pdcbb_drain_new();
    if (c.m == NULL || !yaml_parser_initialize(&c.parser)) {
        drain_errf(err, errlen, "%s: out of memory", path);
        pdcbb_drain_free(c.m);
        fclose(f);
        return PDCBB_ERR_NOMEM;
    }
    yaml_parser_set_input_file(&c.parser, f);
    rc = mf_document(&c);
    if (rc == PDCBB_OK) {
        /* a manifest listing every rank (the merged one) must describe every extent's object
         * (the merge moved those of deleted objects to dropped_objects) */
        rc = drain_check(c.m, path, c.ext_lines, !lenient && c.m->nranks == c.m->nservers, err,
                         errlen);
    }
    yaml_parser_delete(&c.parser);
    fclose(f);
    free(c.ext_lines);
    if (rc != PDCBB_OK) {
        if (err != NULL && errlen > 0 && err[0] == '\0')
            drain_errf(err, errlen, "%s: %s", path, pdcbb_strerror(rc));
        pdcbb_drain_free(c.m);
        return rc;
    }
    *out = c.m;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_load_manifest(const char *path, pdcbb_drain_t **out, char *err,
                                      size_t errlen)
{
    return mf_load(path, 0, out, err, errlen);
}

pdcbb_err_t drain_load_manifest_part(const char *path, pdcbb_drain_t **out, char *err,
                                     size_t errlen)
{
    return mf_load(path, 1, out, err, errlen);
}
