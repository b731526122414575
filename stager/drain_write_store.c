/*
 * drain_write_store.c - step 1 of draining a rank (drain_write.c): reading a stopped daemon's
 * LMDB store in one read transaction into the rank's part: containers with their tags and
 * object ids, objects with their tags, current extent and placement map, the layouts of the
 * data files it holds (for the data plan, drain_write_plan.c) and its KV objects, dumped by
 * drain_kvstore.c.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drain_store_scan.h"
#include "drain_write_internal.h"
#include "pdcbb_grow.h"
#include "pdcbb_drain_kvstore.h"
#include "pdcbb_log.h"
#include "pdcbb_proto.h"
#include "pdcbb_store.h"

/* Tags of id (key = id + name), copied into a malloc'ed array; names malloc'ed too. */
static void dw_tags_free(pdcbb_drain_tag_t *t, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        free(t[i].name);
    free(t);
}

static pdcbb_err_t dw_read_tags(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t id,
                                pdcbb_drain_tag_t **out, uint32_t *nout)
{
    uint8_t prefix[8];
    drain_scan_t s;
    pdcbb_drain_tag_t *tags = NULL;
    size_t n = 0, cap = 0;
    pdcbb_key_u64(prefix, id);
    pdcbb_err_t rc = drain_scan_open(&s, ops, txn, PDCBB_T_TAG, prefix, 8, 9, SIZE_MAX);
    if (rc != PDCBB_OK)
        return rc;
    while (rc == PDCBB_OK && drain_scan_next(&s)) {
        pdcbb_val_t k = s.k, v = s.v;
        if (v.len >= 4) {
            pdcbb_drain_tag_t *g = pdcbb_grow(tags, n, &cap, sizeof(*tags), 16);
            if (g == NULL) {
                rc = PDCBB_ERR_NOMEM;
                break;
            }
            tags = g;
            const uint8_t *b = v.data;
            pdcbb_drain_tag_t *t = &tags[n];
            t->name = strndup((const char *)k.data + 8, k.len - 8);
            if (t->name == NULL) {
                rc = PDCBB_ERR_NOMEM;
                break;
            }
            t->type = (int32_t)(b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24);
            t->value = (uint8_t *)b + 4; /* copied by pdcbb_drain_add_* within the txn */
            t->len = (uint32_t)(v.len - 4);
            n++;
        }
    }
    rc = drain_scan_close(&s, rc);
    if (rc != PDCBB_OK) {
        dw_tags_free(tags, (uint32_t)n);
        return rc;
    }
    *out = tags;
    *nout = (uint32_t)n;
    return PDCBB_OK;
}

/* Object ids a container was given with PDCcont_put_objids (key = container id + object id). */
static pdcbb_err_t dw_read_objids(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t id,
                                  uint64_t **out, uint32_t *nout)
{
    uint8_t prefix[8];
    size_t n = 0;
    pdcbb_key_u64(prefix, id);
    pdcbb_err_t rc = drain_scan_key_u64s(ops, txn, PDCBB_T_OBJIDS, prefix, 8, out, &n);
    if (rc == PDCBB_OK)
        *nout = (uint32_t)n;
    return rc;
}

/* Placement map of obj (key = object id + seq; value daemon, ndim, offsets, sizes, bytes). */
static pdcbb_err_t dw_read_map(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t id,
                               uint32_t nservers, pdcbb_drain_map_entry_t **out, uint32_t *nout)
{
    uint8_t prefix[8];
    drain_scan_t s;
    pdcbb_drain_map_entry_t *es = NULL;
    size_t n = 0, cap = 0;
    pdcbb_key_u64(prefix, id);
    pdcbb_err_t rc = drain_scan_open(&s, ops, txn, PDCBB_T_MAP, prefix, 8, 16, 16);
    if (rc != PDCBB_OK)
        return rc;
    while (rc == PDCBB_OK && drain_scan_next(&s)) {
        pdcbb_val_t k = s.k, v = s.v;
        uint64_t vals[3 + 2 * PDCBB_REGION_NDIM_MAX];
        if (v.len % 8 != 0 || v.len > sizeof(vals) || v.len < 8 * 3) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        memcpy(vals, v.data, v.len);
        size_t nv = v.len / 8;
        pdcbb_box_t b;
        if (vals[1] == 0 || vals[1] > PDCBB_REGION_NDIM_MAX || nv != 3 + 2 * vals[1] ||
            vals[0] >= nservers ||
            pdcbb_box_make(&b, (uint32_t)vals[1], vals + 2, vals + 2 + vals[1]) != PDCBB_OK) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        pdcbb_drain_map_entry_t *g = pdcbb_grow(es, n, &cap, sizeof(*es), 16);
        if (g == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        es = g;
        es[n].seq = pdcbb_key_get_u64((const uint8_t *)k.data + 8);
        es[n].rank = (uint32_t)vals[0];
        es[n].box = b;
        n++;
    }
    rc = drain_scan_close(&s, rc);
    if (rc != PDCBB_OK) {
        free(es);
        return rc;
    }
    *out = es;
    *nout = (uint32_t)n;
    return PDCBB_OK;
}

static pdcbb_err_t dw_read_conts(dw_ctx_t *c, dw_rank_t *r, const pdcbb_store_ops_t *ops,
                                 pdcbb_txn_t *txn)
{
    drain_scan_t s;
    pdcbb_err_t rc = drain_scan_open(&s, ops, txn, PDCBB_T_CONT, NULL, 0, 0, SIZE_MAX);
    if (rc != PDCBB_OK)
        return rc;
    while (rc == PDCBB_OK && drain_scan_next(&s)) {
        pdcbb_val_t k = s.k, v = s.v;
        pdcbb_cont_info_rep_t rec;
        pdcbb_err_t d = pdcbb_body_decode(PDCBB_OP_CONT_INFO, 1, v.data, v.len, &rec);
        if (d != PDCBB_OK || k.len != 8) {
            rc = d != PDCBB_OK ? d : PDCBB_ERR_STORE;
            break;
        }
        pdcbb_drain_cont_t dc = {.id = rec.id, .name = (char *)rec.name,
                                 .lifetime = rec.lifetime, .rank = r->rank};
        rc = dw_read_tags(ops, txn, rec.id, &dc.tags, &dc.ntags);
        if (rc == PDCBB_OK) {
            rc = dw_read_objids(ops, txn, rec.id, &dc.obj_ids, &dc.nobj_ids);
            if (rc == PDCBB_OK)
                rc = pdcbb_drain_add_cont(r->m, &dc, NULL);
            free(dc.obj_ids);
            dw_tags_free(dc.tags, dc.ntags);
        }
        pdcbb_body_free(PDCBB_OP_CONT_INFO, 1, &rec);
        if (rc != PDCBB_OK)
            break;
    }
    rc = drain_scan_close(&s, rc);
    (void)c;
    return rc;
}

/* The name of container id if this rank holds its record ("" otherwise), malloc'ed. */
static char *dw_cont_name(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t id)
{
    uint8_t key[8];
    pdcbb_val_t v;
    char *name = NULL;
    pdcbb_key_u64(key, id);
    if (id != 0 && ops->get(txn, PDCBB_T_CONT, (pdcbb_val_t){key, 8}, &v) == PDCBB_OK) {
        pdcbb_cont_info_rep_t rec;
        if (pdcbb_body_decode(PDCBB_OP_CONT_INFO, 1, v.data, v.len, &rec) == PDCBB_OK) {
            name = strdup(rec.name ? rec.name : "");
            pdcbb_body_free(PDCBB_OP_CONT_INFO, 1, &rec);
            return name;
        }
    }
    return strdup("");
}

static const dw_layout_t *dw_find_layout(const dw_rank_t *r, uint64_t obj)
{
    for (size_t i = 0; i < r->nlayouts; i++)
        if (r->layouts[i].obj == obj)
            return &r->layouts[i];
    return NULL;
}

static pdcbb_err_t dw_read_objs(dw_ctx_t *c, dw_rank_t *r, const pdcbb_store_ops_t *ops,
                                pdcbb_txn_t *txn)
{
    drain_scan_t s;
    size_t cap = 0;
    pdcbb_err_t rc = drain_scan_open(&s, ops, txn, PDCBB_T_OBJ, NULL, 0, 0, SIZE_MAX);
    if (rc != PDCBB_OK)
        return rc;
    while (rc == PDCBB_OK && drain_scan_next(&s)) {
        pdcbb_val_t k = s.k, v = s.v;
        pdcbb_obj_info_rep_t rec;
        pdcbb_err_t d = pdcbb_body_decode(PDCBB_OP_OBJ_INFO, 1, v.data, v.len, &rec);
        if (d != PDCBB_OK || k.len != 8) {
            rc = d != PDCBB_OK ? d : PDCBB_ERR_STORE;
            break;
        }
        if (rec.dims_count > PDCBB_REGION_NDIM_MAX) {
            pdcbb_body_free(PDCBB_OP_OBJ_INFO, 1, &rec);
            rc = PDCBB_ERR_STORE;
            break;
        }
        pdcbb_drain_object_t o;
        memset(&o, 0, sizeof(o));
        o.id = rec.id;
        o.cont_id = rec.cont_id;
        o.name = (char *)(rec.name ? rec.name : "");
        o.container = dw_cont_name(ops, txn, rec.cont_id);
        o.rank = r->rank;
        o.type = rec.type;
        const dw_layout_t *lay = dw_find_layout(r, rec.id);
        size_t tsize = pdcbb_type_size(rec.type);
        o.element_size = (uint32_t)(lay ? lay->unit : tsize ? tsize : 1);
        o.partition = rec.partition;
        o.consistency = rec.consistency;
        o.user_id = rec.user_id;
        o.time_step = rec.time_step;
        o.ndim = rec.dims_count;
        if (rec.dims_count)
            memcpy(o.dims, rec.dims, 8 * (size_t)rec.dims_count);
        o.app_name = (char *)(rec.app_name ? rec.app_name : "");
        o.data_loc = (char *)(rec.data_loc ? rec.data_loc : "");
        o.tags_str = (char *)(rec.tags ? rec.tags : "");
        rc = o.container ? PDCBB_OK : PDCBB_ERR_NOMEM;
        if (rc == PDCBB_OK && o.ndim > 0 && o.dims[0] == PDCBB_DIM_UNLIMITED) {
            /* The extent its home daemon kept (0 rows when never extended nor written). */
            rc = pdcbb_extent_read(ops, txn, rec.id, &o.current_rows);
            o.has_current_dims = 1;
        }
        if (rc == PDCBB_OK)
            rc = dw_read_tags(ops, txn, rec.id, &o.tags, &o.ntags);
        if (rc == PDCBB_OK && (rec.partition == 2 || rec.partition == 3))
            rc = dw_read_map(ops, txn, rec.id, c->nservers, &o.map, &o.nmap);
        if (rc == PDCBB_OK)
            rc = pdcbb_drain_add_object(r->m, &o, NULL);
        if (rc == PDCBB_OK) {
            dw_objinfo_t *g = pdcbb_grow(r->objs, r->nobjs, &cap, sizeof(*g), 16);
            if (g == NULL) {
                rc = PDCBB_ERR_NOMEM;
            } else {
                r->objs = g;
                dw_objinfo_t *oi = &r->objs[r->nobjs++];
                oi->id = o.id;
                oi->partition = o.partition;
                oi->ndim = o.ndim;
                memcpy(oi->dims, o.dims, sizeof(oi->dims));
            }
        }
        free(o.container);
        free(o.map);
        dw_tags_free(o.tags, o.ntags);
        pdcbb_body_free(PDCBB_OP_OBJ_INFO, 1, &rec);
        if (rc != PDCBB_OK)
            break;
    }
    rc = drain_scan_close(&s, rc);
    return rc;
}

static pdcbb_err_t dw_read_layouts(dw_rank_t *r, const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn)
{
    drain_scan_t s;
    size_t cap = 0;
    pdcbb_err_t rc = drain_scan_open(&s, ops, txn, PDCBB_T_DATA, NULL, 0, 0, SIZE_MAX);
    if (rc != PDCBB_OK)
        return rc;
    while (rc == PDCBB_OK && drain_scan_next(&s)) {
        pdcbb_val_t k = s.k, v = s.v;
        uint64_t rec[2 + PDCBB_REGION_NDIM_MAX];
        if (k.len != 8 || v.len % 8 != 0 || v.len < 24 || v.len > sizeof(rec)) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        memcpy(rec, v.data, v.len);
        if (rec[0] == 0 || rec[0] > 64 || rec[1] == 0 || rec[1] > PDCBB_REGION_NDIM_MAX ||
            v.len != 8 * (2 + rec[1])) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        dw_layout_t *g = pdcbb_grow(r->layouts, r->nlayouts, &cap, sizeof(*g), 16);
        if (g == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        r->layouts = g;
        dw_layout_t *l = &r->layouts[r->nlayouts++];
        memset(l, 0, sizeof(*l));
        l->obj = pdcbb_key_get_u64(k.data);
        l->unit = rec[0];
        l->ndim = (uint32_t)rec[1];
        memcpy(l->dims, rec + 2, 8 * (size_t)l->ndim);
    }
    rc = drain_scan_close(&s, rc);
    return rc;
}

/* The block checksums of the rank's data files (sorted by object and block, as stored). */
static pdcbb_err_t dw_read_csums(dw_rank_t *r, const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn)
{
    drain_scan_t s;
    size_t cap = 0;
    pdcbb_err_t rc = drain_scan_open(&s, ops, txn, PDCBB_T_CSUM, NULL, 0, 0, SIZE_MAX);
    if (rc != PDCBB_OK)
        return rc;
    while (rc == PDCBB_OK && drain_scan_next(&s)) {
        dw_csum_t x;
        if (s.k.len != PDCBB_CSUM_KEY_LEN ||
            pdcbb_csum_rec_decode(s.v.data, s.v.len, &x.rec) != PDCBB_OK) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        x.obj = pdcbb_key_get_u64(s.k.data);
        x.block = pdcbb_key_get_u64((const uint8_t *)s.k.data + 8);
        dw_csum_t *g = pdcbb_grow(r->csums, r->ncsums, &cap, sizeof(*g), 64);
        if (g == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        r->csums = g;
        r->csums[r->ncsums++] = x;
    }
    return drain_scan_close(&s, rc);
}

/* Read everything of rank r's store into r (one read transaction). */
pdcbb_err_t dw_read_store(dw_ctx_t *c, dw_rank_t *r, const char *store_dir)
{
    const pdcbb_store_ops_t *ops = &pdcbb_store_lmdb;
    pdcbb_store_t *st = NULL;
    pdcbb_txn_t *txn = NULL;
    char serr[512] = "";
    pdcbb_err_t rc = ops->open(store_dir, c->map_size, &st, serr, sizeof(serr));
    if (rc != PDCBB_OK)
        return dw_fail(c, rc, "cannot open the store of rank %u: %s", r->rank,
                       serr[0] ? serr : pdcbb_strerror(rc));
    if ((rc = ops->txn_begin(st, PDCBB_TXN_READ, &txn)) == PDCBB_OK) {
        /* layouts first: objects take their element size from them */
        rc = dw_read_layouts(r, ops, txn);
        if (rc == PDCBB_OK)
            rc = dw_read_csums(r, ops, txn);
        if (rc == PDCBB_OK)
            rc = dw_read_conts(c, r, ops, txn);
        if (rc == PDCBB_OK)
            rc = dw_read_objs(c, r, ops, txn);
        if (rc == PDCBB_OK) {
            /* KV objects: one dump per KV object this rank holds records or meta of */
            char rel[64];
            snprintf(rel, sizeof(rel), "%s/rank-%05u", PDCBB_DRAIN_KV_DIR, r->rank);
            pdcbb_drain_kvstore_stats_t ks = {0};
            pdcbb_drain_kvstore_req_t kq = {.rank = r->rank, .dir = c->drain_dir,
                                            .rel_prefix = rel, .stats = &ks};
            char kerr[PDCBB_DRAIN_ERR_LEN] = "";
            rc = pdcbb_drain_kv_from_store(ops, txn, &kq, r->m, kerr, sizeof(kerr));
            if (rc != PDCBB_OK) {
                ops->txn_abort(txn);
                ops->close(st);
                return dw_fail(c, rc, "cannot drain the KV objects of rank %u: %s", r->rank,
                               kerr);
            }
            if (ks.objects > 0)
                PDCBB_INFO("rank %u: %" PRIu64 " KV dumps, %" PRIu64 " records, %" PRIu64
                           " bytes, verified",
                           r->rank, ks.objects, ks.records, ks.bytes);
        }
        if (rc == PDCBB_OK) {
            /* the mount's entries this rank holds (drain_files.c) */
            uint64_t nent = 0;
            char nerr[PDCBB_DRAIN_ERR_LEN] = "";
            rc = pdcbb_drain_ns_dump(ops, txn, c->drain_dir, r->rank, &nent, nerr, sizeof(nerr));
            if (rc != PDCBB_OK) {
                ops->txn_abort(txn);
                ops->close(st);
                return dw_fail(c, rc, "cannot drain the mount's entries of rank %u: %s", r->rank,
                               nerr);
            }
            if (nent > 0)
                PDCBB_INFO("rank %u: %" PRIu64 " entries of the mount", r->rank, nent);
        }
        ops->txn_abort(txn);
    }
    ops->close(st);
    if (rc != PDCBB_OK)
        return dw_fail(c, rc, "cannot read the store of rank %u in %s: %s", r->rank, store_dir,
                       pdcbb_strerror(rc));
    return PDCBB_OK;
}
