/*
 * client_drained_kv.c - the KV read ops of a drained job (PDCBB_DRAINED_DIR), answered by the
 * virtual daemon of client_drained.c from the job's KV dumps (docs/DRAIN-FORMAT.md "KV
 * objects") with the live daemon's semantics (bbd/bbd_kv.c): KV_OPEN, KV_GET, KV_COUNT and
 * KV_LIST. Writes (KV_CREATE, KV_DELETE, KV_SET, KV_PART, KV_TRANS, KV_MIGRATE) are refused by
 * client_drained.c with PDCBB_ERR_READ_ONLY.
 *
 * Ids: KV object k of the manifest is pdcbb_meta_id_make(PDCBB_META_KIND_KV, 0, k + 1), with
 * one shard on daemon 0 (the one virtual daemon). Its records are loaded from its dumps on
 * first use (every block's CRC-32C checked) and kept until the drain is closed. The version
 * a get sees is the one pdcbb_kv_view_get resolves (newest version with tag <= T; a deletion
 * marker hides the key; uncommitted and aborted transactions are never in a dump).
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_drained_kv.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"
#include "pdcbb_kv.h"
#include "pdcbb_log.h"

static pdcbb_kv_view_t **views; /* per KV object of the drain, loaded on first use */
static uint32_t nviews;

void client_drained_kv_close(void)
{
    for (uint32_t i = 0; i < nviews; i++)
        pdcbb_kv_view_free(views[i]);
    free(views);
    views = NULL;
    nviews = 0;
}

static uint64_t kv_meta(uint32_t index)
{
    return pdcbb_meta_id_make(PDCBB_META_KIND_KV, 0, (uint64_t)index + 1);
}

/* The manifest index of a KV meta id, or -1. */
static int64_t kv_index(uint64_t id)
{
    const pdcbb_drain_t *m = client_g.drained;
    if (pdcbb_meta_id_kind(id) != PDCBB_META_KIND_KV || pdcbb_meta_id_server(id) != 0)
        return -1;
    uint64_t seq = id & ((1ull << 44) - 1);
    return seq >= 1 && seq <= m->nkvs ? (int64_t)(seq - 1) : -1;
}

/* The loaded view of KV object index (NULL on failure, logged). */
static pdcbb_kv_view_t *kv_view(uint32_t index, pdcbb_err_t *rc)
{
    const pdcbb_drain_t *m = client_g.drained;
    if (views == NULL) {
        views = calloc(m->nkvs ? m->nkvs : 1, sizeof(*views));
        if (views == NULL) {
            *rc = PDCBB_ERR_NOMEM;
            return NULL;
        }
        nviews = m->nkvs;
    }
    if (views[index] == NULL) {
        char err[PDCBB_DRAIN_ERR_LEN + 256] = "";
        *rc = pdcbb_drain_kv_view_open(m, &m->kvs[index], &views[index], err, sizeof(err));
        if (*rc != PDCBB_OK) {
            PDCBB_ERROR("PDCBB_DRAINED_DIR=%s: KV object '%s': %s", m->dir, m->kvs[index].name,
                        err);
            return NULL;
        }
    }
    *rc = PDCBB_OK;
    return views[index];
}

static pdcbb_err_t kv_info(uint32_t index, uint64_t cont_meta_id, pdcbb_kv_open_rep_t *p,
                           uint64_t **owned)
{
    const pdcbb_drain_kv_t *k = &client_g.drained->kvs[index];
    uint64_t *shards = malloc(sizeof(uint64_t));
    if (shards == NULL)
        return PDCBB_ERR_NOMEM;
    shards[0] = 0;
    *owned = shards;
    p->id = kv_meta(index);
    p->cont_id = cont_meta_id;
    p->name = k->name;
    p->key_type = k->key_type;
    p->sharding = k->sharding;
    p->max_key_len = k->max_key_len;
    p->max_value_len = k->max_value_len;
    p->shards = shards;
    p->shards_count = 1;
    return PDCBB_OK;
}

/* The drained container of a container meta id of the virtual daemon (its index), or -1. */
static int64_t cont_index(uint64_t id)
{
    const pdcbb_drain_t *m = client_g.drained;
    if (pdcbb_meta_id_kind(id) != PDCBB_META_KIND_CONT || pdcbb_meta_id_server(id) != 0)
        return -1;
    uint64_t seq = id & ((1ull << 44) - 1);
    return seq >= 1 && seq <= m->nconts ? (int64_t)(seq - 1) : -1;
}

static pdcbb_err_t kv_open(const pdcbb_kv_open_req_t *q, pdcbb_kv_open_rep_t *p,
                           uint64_t **owned)
{
    const pdcbb_drain_t *m = client_g.drained;
    if (q->id != 0) {
        int64_t i = kv_index(q->id);
        if (i < 0)
            return PDCBB_ERR_BAD_ID;
        const pdcbb_drain_cont_t *c = pdcbb_drain_find_cont_id(m, m->kvs[i].cont_id);
        uint64_t cid = c ? pdcbb_meta_id_make(PDCBB_META_KIND_CONT, 0,
                                              (uint64_t)(c - m->conts) + 1)
                         : 0;
        return kv_info((uint32_t)i, cid, p, owned);
    }
    if (q->name == NULL || q->name[0] == '\0')
        return PDCBB_ERR_INVAL;
    int64_t ci = cont_index(q->cont_id);
    if (ci < 0)
        return PDCBB_ERR_NOT_FOUND;
    for (uint32_t i = 0; i < m->nkvs; i++)
        if (m->kvs[i].cont_id == m->conts[ci].id && strcmp(m->kvs[i].name, q->name) == 0)
            return kv_info(i, q->cont_id, p, owned);
    return PDCBB_ERR_NOT_FOUND;
}

/* The view and key type of a request's KV id. */
static pdcbb_kv_view_t *req_view(uint64_t id, uint64_t tag, uint32_t *key_type,
                                 uint32_t *max_key_len, pdcbb_err_t *rc)
{
    int64_t i = kv_index(id);
    if (i < 0) {
        *rc = PDCBB_ERR_BAD_ID;
        return NULL;
    }
    if (tag > PDCBB_KV_MAXTAG) {
        *rc = PDCBB_ERR_INVAL;
        return NULL;
    }
    *key_type = client_g.drained->kvs[i].key_type;
    *max_key_len = client_g.drained->kvs[i].max_key_len;
    return kv_view((uint32_t)i, rc);
}

static pdcbb_err_t kv_get(const pdcbb_kv_get_req_t *q, pdcbb_kv_get_rep_t *p)
{
    uint32_t kt, mkl;
    pdcbb_err_t rc;
    pdcbb_kv_view_t *v = req_view(q->id, q->tag, &kt, &mkl, &rc);
    if (v == NULL)
        return rc;
    if ((rc = pdcbb_kv_key_check(kt, q->key, q->key_len, mkl, NULL, 0)) != PDCBB_OK)
        return rc;
    const pdcbb_kvd_rec_t *r = pdcbb_kv_view_get(v, q->key, q->key_len, q->tag);
    if (r == NULL)
        return PDCBB_ERR_NOT_FOUND;
    p->found_tag = r->tag;
    p->total_len = r->vlen;
    uint64_t off = q->value_off > r->vlen ? r->vlen : q->value_off;
    uint64_t n = r->vlen - off;
    uint64_t cap = q->max_len < PDCBB_PAYLOAD_MAX - 4096 ? q->max_len : PDCBB_PAYLOAD_MAX - 4096;
    if (n > cap)
        n = cap;
    p->value = r->value + off;
    p->value_len = (uint32_t)n;
    return PDCBB_OK;
}

/* KV_LIST: the scan of bbd_kv.c over the view. */
typedef struct list_out {
    const pdcbb_kv_list_req_t *q;
    uint64_t skipped;
    pdcbb_kv_page_t page;
} list_out_t;

static int list_emit(const pdcbb_kvd_rec_t *h, void *arg)
{
    list_out_t *o = arg;
    const pdcbb_kv_list_req_t *q = o->q;
    if (q->start_len) {
        int c = pdcbb_kv_key_cmp(h->key, h->klen, q->start, q->start_len);
        if (c < 0 || (c == 0 && (q->flags & PDCBB_KV_LIST_AFTER)))
            return 0;
    }
    if (o->skipped < q->skip) {
        o->skipped++;
        return 0;
    }
    return pdcbb_kv_page_add(&o->page, h->key, h->klen, h->tag, h->value, h->vlen);
}

static pdcbb_err_t kv_list(const pdcbb_kv_list_req_t *q, pdcbb_kv_list_rep_t *p,
                           uint64_t **owned)
{
    uint32_t kt, mkl;
    pdcbb_err_t rc;
    pdcbb_kv_view_t *v = req_view(q->id, q->tag, &kt, &mkl, &rc);
    if (v == NULL)
        return rc;
    if (q->flags & ~(uint32_t)(PDCBB_KV_LIST_AFTER | PDCBB_KV_LIST_VALUES))
        return PDCBB_ERR_INVAL;
    if (q->start_len && (rc = pdcbb_kv_key_check(kt, q->start, q->start_len, 0, NULL, 0)) !=
                            PDCBB_OK)
        return rc;
    if (q->max == 0)
        return PDCBB_ERR_INVAL;
    list_out_t o = {.q = q};
    pdcbb_kv_page_init(&o.page, q->max, (q->flags & PDCBB_KV_LIST_VALUES) != 0, q->max_bytes);
    pdcbb_kv_view_list(v, q->tag, 0, 0, list_emit, &o, NULL);
    pdcbb_kv_page_t *pg = &o.page;
    if (pg->nomem) {
        free(pg->buf);
        return PDCBB_ERR_NOMEM;
    }
    if (pg->buf == NULL && (pg->buf = malloc(1)) == NULL)
        return PDCBB_ERR_NOMEM;
    *owned = (uint64_t *)(void *)pg->buf;
    p->count = pg->n;
    p->more = pg->more;
    p->skipped = o.skipped;
    p->recs = pg->buf;
    p->recs_len = (uint32_t)pg->len;
    return PDCBB_OK;
}

pdcbb_err_t client_drained_kv_answer(unsigned op, const void *req, void *rep, uint64_t **owned)
{
    pdcbb_err_t rc;
    switch (op) {
    case PDCBB_OP_KV_OPEN: return kv_open(req, rep, owned);
    case PDCBB_OP_KV_GET: return kv_get(req, rep);
    case PDCBB_OP_KV_COUNT: {
        const pdcbb_kv_count_req_t *q = req;
        pdcbb_kv_count_rep_t *p = rep;
        uint32_t kt, mkl;
        pdcbb_kv_view_t *v = req_view(q->id, q->tag, &kt, &mkl, &rc);
        if (v == NULL)
            return rc;
        pdcbb_kv_view_list(v, q->tag, 0, 0, NULL, NULL, &p->count);
        return PDCBB_OK;
    }
    case PDCBB_OP_KV_LIST: return kv_list(req, rep, owned);
    default: return PDCBB_ERR_UNSUPPORTED;
    }
}
