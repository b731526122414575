/*
 * bbd_kv.c - KV objects in the daemon's store (ops KV_*, docs/KV.md, common/pdcbb_kv.h).
 *
 * Records live in table "kv" as kv id | key group | tag -> flags | [full key] | value, the KV
 * objects' meta records in "kvmeta", transactions (and the pieces of values larger than one
 * message, 'U' entries) in "kvtx". Each request runs in the one store transaction the
 * dispatcher opened (a write transaction for KV_CREATE/DELETE/SET/TRANS/PART) and is answered
 * after its commit. Everything received is checked: ids (kind, known here), tags, key
 * encodings against the object's key type and max_key_len, value sizes against max_value_len,
 * record counts and lengths; a batch with one bad record changes nothing.
 *
 * Visibility at tag T of a key: its newest version with tag <= T that is not a record of an
 * open transaction ('P' entry, state OPEN); a deletion marker there means "no value". A
 * version of a PREPARED transaction (being committed on every shard) that would be the newest
 * makes the request answer PDCBB_ERR_BUSY: the client retries, so a reader never sees part of
 * a transaction.
 */
#include <stdlib.h>
#include <string.h>

#include "bbd.h"
#include "pdcbb_checked.h"
#include "pdcbb_kv.h"
#include "pdcbb_log.h"

#define OPS (r->d->store_ops)

/* ------------------------------------------------------------------ helpers */

static void put_be64(uint8_t *o, uint64_t v)
{
    pdcbb_key_u64(o, v);
}

static pdcbb_err_t load_meta(bbd_req_t *r, uint64_t id, pdcbb_kv_meta_t *m)
{
    uint8_t k[9];
    pdcbb_val_t v;
    if (id == 0 || pdcbb_meta_id_kind(id) != PDCBB_META_KIND_KV)
        return PDCBB_ERR_BAD_ID;
    pdcbb_err_t rc =
        OPS->get(r->txn, PDCBB_T_KVMETA, (pdcbb_val_t){k, pdcbb_kv_meta_id_key(id, k)}, &v);
    if (rc == PDCBB_ERR_NOT_FOUND)
        return PDCBB_ERR_BAD_ID; /* unknown or deleted KV object: a stale id */
    if (rc != PDCBB_OK)
        return rc;
    return pdcbb_kv_meta_decode(v.data, v.len, m);
}

/* Open or prepared transactions of an object (sorted by tag). */
typedef struct pend {
    uint64_t tag;
    unsigned state;
} pend_t;
typedef struct pendset {
    pend_t *v;
    size_t n;
} pendset_t;

static pdcbb_err_t load_pending(bbd_req_t *r, uint64_t id, pendset_t *ps)
{
    uint8_t k[17];
    pdcbb_val_t kk, vv;
    pdcbb_cursor_t *c;
    size_t cap = 0;
    ps->v = NULL;
    ps->n = 0;
    pdcbb_kv_tx_key(id, 'P', 0, k);
    pdcbb_err_t rc = OPS->cursor_open(r->txn, PDCBB_T_KVTX, &c);
    if (rc != PDCBB_OK)
        return rc;
    for (rc = OPS->cursor_seek(c, (pdcbb_val_t){k, 17}, &kk, &vv); rc == PDCBB_OK;
         rc = OPS->cursor_next(c, &kk, &vv)) {
        if (kk.len != 17 || memcmp(kk.data, k, 9) != 0)
            break;
        pend_t *nv = pdcbb_grow(ps->v, ps->n, &cap, sizeof(*nv), 8);
        if (nv == NULL) {
            OPS->cursor_close(c);
            return PDCBB_ERR_NOMEM;
        }
        ps->v = nv;
        ps->v[ps->n].tag = pdcbb_key_get_u64((const uint8_t *)kk.data + 9);
        ps->v[ps->n].state = vv.len ? ((const uint8_t *)vv.data)[0] : PDCBB_KV_TX_OPEN;
        ps->n++;
    }
    OPS->cursor_close(c);
    return rc == PDCBB_ERR_NOT_FOUND || rc == PDCBB_OK ? PDCBB_OK : rc;
}

static unsigned pend_state(const pendset_t *ps, uint64_t tag)
{
    size_t lo = 0, hi = ps->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ps->v[mid].tag == tag)
            return ps->v[mid].state;
        if (ps->v[mid].tag < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* Room for n bytes of a record value being built in *buf (capacity *cap): request scratch
 * memory, reused by the records of one request. */
static uint8_t *vbuf_get(bbd_req_t *r, uint8_t **buf, size_t *cap, size_t n)
{
    if (n > *cap) {
        size_t c = n < 4096 ? 4096 : n;
        uint8_t *b = bbd_req_alloc(r, c);
        if (b == NULL)
            return NULL;
        *buf = b;
        *cap = c;
    }
    return *buf;
}

/* The object's write ('G') and transaction ('X') generations here; bump adds one. */
static pdcbb_err_t gen_getk(bbd_req_t *r, uint64_t id, uint8_t kind, uint64_t *gen)
{
    uint8_t k[9];
    pdcbb_val_t v;
    put_be64(k, id);
    k[8] = kind;
    pdcbb_err_t rc = OPS->get(r->txn, PDCBB_T_KVTX, (pdcbb_val_t){k, 9}, &v);
    *gen = rc == PDCBB_OK && v.len == 8 ? pdcbb_key_get_u64(v.data) : 0;
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

static pdcbb_err_t gen_get(bbd_req_t *r, uint64_t id, uint64_t *gen)
{
    return gen_getk(r, id, 'G', gen);
}

static pdcbb_err_t gen_bumpk(bbd_req_t *r, uint64_t id, uint8_t kind)
{
    uint64_t g;
    uint8_t k[9], v[8];
    pdcbb_err_t rc = gen_getk(r, id, kind, &g);
    if (rc != PDCBB_OK)
        return rc;
    put_be64(k, id);
    k[8] = kind;
    put_be64(v, g + 1);
    return OPS->put(r->txn, PDCBB_T_KVTX, (pdcbb_val_t){k, 9}, (pdcbb_val_t){v, 8}, 0);
}

static pdcbb_err_t gen_bump(bbd_req_t *r, uint64_t id)
{
    return gen_bumpk(r, id, 'G');
}

/* A transaction's state changes: both generations move. */
static pdcbb_err_t tgen_bump(bbd_req_t *r, uint64_t id)
{
    pdcbb_err_t rc = gen_bumpk(r, id, 'G');
    return rc == PDCBB_OK ? gen_bumpk(r, id, 'X') : rc;
}

/* ------------------------------------------------------------------ create / open / delete */

/* Fill a KV_CREATE / KV_OPEN reply (same fields) from a meta record. */
#define FILL_INFO(m, p, shards_out)                                                               \
    do {                                                                                          \
        (p)->id = (m)->id;                                                                        \
        (p)->cont_id = (m)->cont_id;                                                              \
        (p)->name = (m)->name;                                                                    \
        (p)->key_type = (m)->key_type;                                                            \
        (p)->sharding = (m)->sharding;                                                            \
        (p)->max_key_len = (m)->max_key_len;                                                      \
        (p)->max_value_len = (m)->max_value_len;                                                  \
        for (uint32_t i_ = 0; i_ < (m)->nshards; i_++)                                            \
            (shards_out)[i_] = (m)->shards[i_];                                                   \
        (p)->shards = (shards_out);                                                               \
        (p)->shards_count = (m)->nshards;                                                         \
    } while (0)

/* The length of a KV object's name, checked against the name rule (bbd_check_name). */
static pdcbb_err_t name_len(const char *name, size_t *nl)
{
    pdcbb_err_t rc = bbd_check_name("KV object", name);
    *nl = rc == PDCBB_OK ? strlen(name) : 0;
    return rc;
}

/* The "kvmeta" name key of name in container cont, in scratch memory (NULL when out of memory);
 * its length in *len. */
static uint8_t *name_key(bbd_req_t *r, uint64_t cont, const char *name, size_t *len)
{
    uint8_t *nk = bbd_req_alloc(r, 9 + strlen(name));
    if (nk != NULL)
        *len = pdcbb_kv_meta_name_key(cont, name, nk);
    return nk;
}

pdcbb_err_t bbd_op_kv_create(bbd_req_t *r, const pdcbb_kv_create_req_t *q, pdcbb_kv_create_rep_t *p)
{
    pdcbb_kv_meta_t *m = bbd_req_alloc(r, sizeof(*m));
    uint64_t *shards = bbd_req_alloc(r, PDCBB_KV_SHARDS_MAX * sizeof(uint64_t));
    if (m == NULL || shards == NULL)
        return PDCBB_ERR_NOMEM;
    memset(m, 0, sizeof(*m));
    size_t nl, nkl;
    pdcbb_err_t rc = name_len(q->name, &nl);
    if (rc != PDCBB_OK)
        return rc;
    if (q->cont_id == 0 || pdcbb_meta_id_kind(q->cont_id) != PDCBB_META_KIND_CONT)
        return PDCBB_ERR_BAD_ID;
    if (q->key_type > PDCBB_KV_FLOAT || q->sharding > PDCBB_KV_SHARD_RANGE ||
        q->max_key_len > PDCBB_KV_KEY_MAXLEN || q->shards_count == 0 ||
        q->shards_count > PDCBB_KV_SHARDS_MAX)
        return PDCBB_ERR_INVAL;
    for (uint32_t i = 0; i < q->shards_count; i++)
        if (q->shards[i] >= r->d->nservers)
            return PDCBB_ERR_INVAL;
    m->cont_id = q->cont_id;
    m->key_type = q->key_type;
    m->sharding = q->sharding == PDCBB_KV_SHARD_DEFAULT ? PDCBB_KV_SHARD_CHOSEN : q->sharding;
    m->max_key_len = q->max_key_len ? q->max_key_len : PDCBB_KV_KEY_MAXLEN;
    m->max_value_len = q->max_value_len;
    m->nshards = q->shards_count;
    for (uint32_t i = 0; i < m->nshards; i++)
        m->shards[i] = (uint32_t)q->shards[i];
    memcpy(m->name, q->name, nl + 1);
    uint8_t *nk = name_key(r, q->cont_id, q->name, &nkl);
    if (nk == NULL)
        return PDCBB_ERR_NOMEM;
    if (q->id == 0) {
        /* Create on the home daemon of the name. */
        if (pdcbb_home_server(q->name, r->d->nservers) != r->d->rank)
            return PDCBB_ERR_BAD_ID;
        pdcbb_val_t v;
        rc = OPS->get(r->txn, PDCBB_T_KVMETA, (pdcbb_val_t){nk, nkl}, &v);
        if (rc == PDCBB_OK)
            return PDCBB_ERR_EXISTS;
        if (rc != PDCBB_ERR_NOT_FOUND)
            return rc;
        if ((rc = bbd_meta_next_id(r, PDCBB_META_KIND_KV, &m->id)) != PDCBB_OK)
            return rc;
        uint8_t idb[8];
        put_be64(idb, m->id);
        if ((rc = OPS->put(r->txn, PDCBB_T_KVMETA, (pdcbb_val_t){nk, nkl}, (pdcbb_val_t){idb, 8},
                           PDCBB_PUT_NO_OVERWRITE)) != PDCBB_OK)
            return rc;
    } else {
        /* Register the meta of an existing object on a shard daemon. */
        if (pdcbb_meta_id_kind(q->id) != PDCBB_META_KIND_KV ||
            pdcbb_meta_id_server(q->id) >= r->d->nservers)
            return PDCBB_ERR_BAD_ID;
        m->id = q->id;
    }
    uint8_t ik[9];
    size_t ms = pdcbb_kv_meta_size(m);
    uint8_t *mb = bbd_req_alloc(r, ms);
    if (mb == NULL)
        return PDCBB_ERR_NOMEM;
    pdcbb_kv_meta_encode(m, mb);
    if ((rc = OPS->put(r->txn, PDCBB_T_KVMETA, (pdcbb_val_t){ik, pdcbb_kv_meta_id_key(m->id, ik)},
                       (pdcbb_val_t){mb, ms}, 0)) != PDCBB_OK)
        return rc;
    FILL_INFO(m, p, shards);
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_kv_open(bbd_req_t *r, const pdcbb_kv_open_req_t *q, pdcbb_kv_open_rep_t *p)
{
    pdcbb_kv_meta_t *m = bbd_req_alloc(r, sizeof(*m));
    uint64_t *shards = bbd_req_alloc(r, PDCBB_KV_SHARDS_MAX * sizeof(uint64_t));
    if (m == NULL || shards == NULL)
        return PDCBB_ERR_NOMEM;
    uint64_t id = q->id;
    pdcbb_err_t rc;
    if (id == 0) {
        size_t nl, nkl;
        uint8_t *nk;
        if ((rc = name_len(q->name, &nl)) != PDCBB_OK)
            return rc;
        if ((nk = name_key(r, q->cont_id, q->name, &nkl)) == NULL)
            return PDCBB_ERR_NOMEM;
        pdcbb_val_t v;
        rc = OPS->get(r->txn, PDCBB_T_KVMETA, (pdcbb_val_t){nk, nkl}, &v);
        if (rc != PDCBB_OK)
            return rc;
        if (v.len != 8)
            return PDCBB_ERR_STORE;
        id = pdcbb_key_get_u64(v.data);
    }
    if ((rc = load_meta(r, id, m)) != PDCBB_OK)
        return rc;
    FILL_INFO(m, p, shards);
    return PDCBB_OK;
}

/* Delete every entry of table t whose key starts with prefix (plen bytes); tag_only: only
 * record entries ("kv") whose tag is tag. */
static pdcbb_err_t delete_prefix(bbd_req_t *r, pdcbb_table_t t, const uint8_t *prefix, size_t plen,
                                 int tag_only, uint64_t tag, uint64_t *ndel)
{
    uint8_t key[PDCBB_KV_RECKEY_MAX + 32];
    pdcbb_cursor_t *c;
    pdcbb_val_t kk, vv;
    pdcbb_err_t rc;
    memcpy(key, prefix, plen);
    size_t klen = plen;
    for (;;) {
        /* Seek from the last position each time: deleting under a cursor is not part of the
         * store's interface. */
        if ((rc = OPS->cursor_open(r->txn, t, &c)) != PDCBB_OK)
            return rc;
        rc = OPS->cursor_seek(c, (pdcbb_val_t){key, klen}, &kk, &vv);
        int found = 0;
        while (rc == PDCBB_OK) {
            if (kk.len < plen || memcmp(kk.data, prefix, plen) != 0)
                break;
            if (!tag_only ||
                (kk.len >= 16 && pdcbb_key_get_u64((const uint8_t *)kk.data + kk.len - 8) == tag)) {
                if (kk.len > sizeof(key)) {
                    OPS->cursor_close(c);
                    return PDCBB_ERR_STORE;
                }
                memcpy(key, kk.data, kk.len);
                klen = kk.len;
                found = 1;
                break;
            }
            rc = OPS->cursor_next(c, &kk, &vv);
        }
        OPS->cursor_close(c);
        if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND)
            return rc;
        if (!found)
            return PDCBB_OK;
        if ((rc = OPS->del(r->txn, t, (pdcbb_val_t){key, klen})) != PDCBB_OK)
            return rc;
        if (ndel)
            (*ndel)++;
    }
}

pdcbb_err_t bbd_op_kv_delete(bbd_req_t *r, const pdcbb_kv_delete_req_t *q, pdcbb_kv_delete_rep_t *p)
{
    (void)p;
    pdcbb_kv_meta_t *m = bbd_req_alloc(r, sizeof(*m));
    if (m == NULL)
        return PDCBB_ERR_NOMEM;
    pdcbb_err_t rc = load_meta(r, q->id, m);
    if (rc != PDCBB_OK)
        return rc;
    uint8_t pre[9];
    put_be64(pre, q->id);
    if ((rc = delete_prefix(r, PDCBB_T_KV, pre, 8, 0, 0, NULL)) != PDCBB_OK ||
        (rc = delete_prefix(r, PDCBB_T_KVTX, pre, 8, 0, 0, NULL)) != PDCBB_OK)
        return rc;
    uint8_t ik[9];
    if ((rc = OPS->del(r->txn, PDCBB_T_KVMETA,
                       (pdcbb_val_t){ik, pdcbb_kv_meta_id_key(q->id, ik)})) != PDCBB_OK)
        return rc;
    if (pdcbb_meta_id_server(q->id) == r->d->rank) {
        size_t nkl;
        uint8_t *nk = name_key(r, m->cont_id, m->name, &nkl);
        if (nk == NULL)
            return PDCBB_ERR_NOMEM;
        rc = OPS->del(r->txn, PDCBB_T_KVMETA, (pdcbb_val_t){nk, nkl});
        if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND)
            return rc;
    }
    return PDCBB_OK;
}

/* ------------------------------------------------------------------ versions of one key */

/* Result of looking at the versions of one key at a tag. */
typedef struct vis {
    int found;          /* a visible, non-deleted version */
    int busy;           /* a prepared transaction's version would be the answer */
    uint64_t tag;
    const uint8_t *value;
    uint64_t vlen;
    const uint8_t *fullkey; /* the encoded key (from the value for long keys, else the group) */
    size_t fklen;
} vis_t;

/*
 * Walk the versions of the group at the cursor's position (kk, vv: the first entry of the
 * group), leaving the cursor on the first entry of the next group (*rc NOT_FOUND at the end).
 * prefix: the 8-byte id. Fills v for tag.
 */
static pdcbb_err_t walk_group(bbd_req_t *r, pdcbb_cursor_t *c, const uint8_t *idb, pdcbb_val_t *kk,
                              pdcbb_val_t *vv, uint64_t tag, const pendset_t *ps, vis_t *v,
                              pdcbb_err_t *crc)
{
    const uint8_t *g0 = (const uint8_t *)kk->data + 8;
    size_t glen = kk->len - 16;
    uint8_t gcopy[PDCBB_KV_GROUP_MAX];
    if (glen > sizeof(gcopy))
        return PDCBB_ERR_STORE;
    memcpy(gcopy, g0, glen);
    pdcbb_kv_resolve_t res; /* the shared resolution (common/pdcbb_kv.c) */
    pdcbb_kv_resolve_init(&res, tag);
    memset(v, 0, sizeof(*v));
    pdcbb_err_t rc = PDCBB_OK;
    for (;;) {
        uint64_t vt = pdcbb_key_get_u64((const uint8_t *)kk->data + kk->len - 8);
        unsigned flags;
        const uint8_t *fk, *val;
        size_t fkl;
        uint64_t vl;
        rc = pdcbb_kv_rec_val_parse(vv->data, vv->len, &flags, &fk, &fkl, &val, &vl);
        if (rc != PDCBB_OK)
            return rc;
        if (v->fullkey == NULL) {
            v->fullkey = fk ? fk : gcopy; /* gcopy is replaced below for short keys */
            v->fklen = fk ? fkl : glen;
        }
        unsigned st = vt <= tag && ps->n ? pend_state(ps, vt) : 0;
        if (pdcbb_kv_resolve_add(&res, vt, flags, st)) {
            v->tag = vt;
            v->value = val;
            v->vlen = vl;
        }
        *crc = OPS->cursor_next(c, kk, vv);
        if (*crc != PDCBB_OK)
            break;
        if (kk->len != glen + 16 || memcmp(kk->data, idb, 8) != 0 ||
            memcmp((const uint8_t *)kk->data + 8, gcopy, glen) != 0)
            break;
    }
    if (*crc != PDCBB_OK && *crc != PDCBB_ERR_NOT_FOUND)
        return *crc;
    int res_out = pdcbb_kv_resolve_result(&res);
    v->busy = res_out == PDCBB_KV_RES_BUSY;
    v->found = res_out == PDCBB_KV_RES_FOUND;
    (void)r;
    return PDCBB_OK;
}

/* Copy of a short key's group kept by the caller (walk_group's gcopy dies with it). */
static int same_id(const pdcbb_val_t *kk, const uint8_t *idb)
{
    return kk->len >= 17 && memcmp(kk->data, idb, 8) == 0;
}

/* ------------------------------------------------------------------ set */

static pdcbb_err_t check_tag_get(uint64_t tag)
{
    return tag > PDCBB_KV_MAXTAG ? PDCBB_ERR_INVAL : PDCBB_OK;
}

/* A long key's group must hold only versions of the same full key (hash collision check). */
static pdcbb_err_t long_key_check(bbd_req_t *r, uint64_t id, const uint8_t *enc, size_t len)
{
    uint8_t rk[PDCBB_KV_RECKEY_MAX];
    size_t n = pdcbb_kv_rec_key(id, enc, len, 0, rk);
    pdcbb_cursor_t *c;
    pdcbb_val_t kk, vv;
    pdcbb_err_t rc = OPS->cursor_open(r->txn, PDCBB_T_KV, &c);
    if (rc != PDCBB_OK)
        return rc;
    rc = OPS->cursor_seek(c, (pdcbb_val_t){rk, n}, &kk, &vv);
    if (rc == PDCBB_OK && kk.len == n && memcmp(kk.data, rk, n - 8) == 0) {
        unsigned flags;
        const uint8_t *fk, *val;
        size_t fkl;
        uint64_t vl;
        rc = pdcbb_kv_rec_val_parse(vv.data, vv.len, &flags, &fk, &fkl, &val, &vl);
        if (rc == PDCBB_OK && (fk == NULL || fkl != len || memcmp(fk, enc, len) != 0))
            rc = PDCBB_ERR_EXISTS; /* another key with the same 448-byte prefix and hash */
    } else if (rc == PDCBB_ERR_NOT_FOUND || rc == PDCBB_OK) {
        rc = PDCBB_OK;
    }
    OPS->cursor_close(c);
    return rc;
}

/* Assemble a value sent in KV_PART pieces (upload) of total bytes (checked against
 * PDCBB_KV_VALUE_MAX by the caller) into dst, then drop the pieces. */
static pdcbb_err_t take_upload(bbd_req_t *r, uint64_t id, uint64_t upload, uint64_t total,
                               uint8_t *dst)
{
    uint8_t k[25];
    pdcbb_val_t kk, vv;
    pdcbb_cursor_t *c;
    put_be64(k, id);
    k[8] = 'U';
    put_be64(k + 9, upload);
    put_be64(k + 17, 0);
    uint64_t have = 0;
    pdcbb_err_t rc = OPS->cursor_open(r->txn, PDCBB_T_KVTX, &c);
    if (rc != PDCBB_OK)
        return rc;
    for (rc = OPS->cursor_seek(c, (pdcbb_val_t){k, 25}, &kk, &vv); rc == PDCBB_OK;
         rc = OPS->cursor_next(c, &kk, &vv)) {
        if (kk.len != 25 || memcmp(kk.data, k, 17) != 0)
            break;
        uint64_t off = pdcbb_key_get_u64((const uint8_t *)kk.data + 17);
        if (off != have || vv.len > total - have) {
            rc = PDCBB_ERR_INVAL; /* pieces missing, overlapping or beyond the total */
            break;
        }
        memcpy(dst + have, vv.data, vv.len);
        have += vv.len;
    }
    OPS->cursor_close(c);
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND)
        return rc;
    if (have != total)
        return PDCBB_ERR_INVAL;
    return delete_prefix(r, PDCBB_T_KVTX, k, 17, 0, 0, NULL);
}

typedef struct setord {
    const uint8_t *key;
    size_t klen, pos;
    uint32_t idx;
} setord_t;

static int cmp_setord(const void *a, const void *b)
{
    const setord_t *x = a, *y = b;
    int c = pdcbb_kv_key_cmp(x->key, x->klen, y->key, y->klen);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

pdcbb_err_t bbd_op_kv_set(bbd_req_t *r, const pdcbb_kv_set_req_t *q, pdcbb_kv_set_rep_t *p)
{
    pdcbb_kv_meta_t m;
    pdcbb_err_t rc = load_meta(r, q->id, &m);
    char why[200];
    if (rc != PDCBB_OK)
        return rc;
    if (q->tag > PDCBB_KV_MAXTAG)
        return PDCBB_ERR_INVAL;
    /* Validate everything first: a bad batch changes nothing. */
    size_t pos = 0;
    const uint8_t *b = q->recs;
    pdcbb_kv_wrec_t w;
    for (uint32_t i = 0; i < q->count; i++) {
        if ((rc = pdcbb_kv_wset_get(b, q->recs_len, &pos, &w)) != PDCBB_OK)
            return rc;
        if ((rc = pdcbb_kv_key_check(m.key_type, w.key, w.key_len, m.max_key_len, why, sizeof(why))) != PDCBB_OK)
            return rc;
        if (w.op != PDCBB_KV_OP_UNLINK && q->tag >= PDCBB_KV_MAXTAG)
            return PDCBB_ERR_INVAL; /* MAXTAG cannot be set */
        if (w.op != PDCBB_KV_OP_UNLINK &&
            (w.value_len > PDCBB_KV_VALUE_MAX || (m.max_value_len && w.value_len > m.max_value_len)))
            return PDCBB_ERR_TOO_BIG;
        if (w.op == PDCBB_KV_OP_SET_PART && w.upload == 0)
            return PDCBB_ERR_INVAL;
    }
    if (pos != q->recs_len)
        return PDCBB_ERR_PROTO; /* bytes after the last record: count and records disagree */
    /* Apply the records in key order (the same key keeps its order in the batch), so LMDB's
     * B-tree pages are visited in order. */
    setord_t *ord = q->count > 1 ? bbd_req_alloc(r, q->count * sizeof(*ord)) : NULL; /* freed with the request */
    pos = 0;
    for (uint32_t i = 0; ord && i < q->count; i++) {
        ord[i].pos = pos;
        ord[i].idx = i;
        pdcbb_kv_wset_get(b, q->recs_len, &pos, &w);
        ord[i].key = w.key;
        ord[i].klen = w.key_len;
    }
    if (ord)
        qsort(ord, q->count, sizeof(*ord), cmp_setord);
    uint8_t rk[PDCBB_KV_RECKEY_MAX];
    uint8_t *vbuf = NULL; /* the records' values, built in turn */
    size_t vbuf_cap = 0;
    pos = 0;
    for (uint32_t i = 0; i < q->count; i++) {
        if (ord)
            pos = ord[i].pos;
        pdcbb_kv_wset_get(b, q->recs_len, &pos, &w);
        int is_long = pdcbb_kv_is_long(w.key_len);
        if (is_long && w.op != PDCBB_KV_OP_UNLINK && (rc = long_key_check(r, q->id, w.key, w.key_len)) != PDCBB_OK)
            return rc;
        size_t rkl = pdcbb_kv_rec_key(q->id, w.key, w.key_len, q->tag, rk);
        if (w.op == PDCBB_KV_OP_UNLINK) {
            if (q->tag == PDCBB_KV_NULLTAG) {
                rc = OPS->del(r->txn, PDCBB_T_KV, (pdcbb_val_t){rk, rkl});
                if (rc == PDCBB_ERR_NOT_FOUND)
                    rc = PDCBB_OK;
            } else if (q->tag == PDCBB_KV_MAXTAG) {
                rc = delete_prefix(r, PDCBB_T_KV, rk, rkl - 8, 0, 0, NULL);
            } else {
                size_t vs = pdcbb_kv_rec_val_size(w.key, w.key_len, 1, 0);
                uint8_t *vb = vbuf_get(r, &vbuf, &vbuf_cap, vs);
                if (vb == NULL)
                    return PDCBB_ERR_NOMEM;
                pdcbb_kv_rec_val_build(w.key, w.key_len, 1, NULL, 0, vb);
                rc = OPS->put(r->txn, PDCBB_T_KV, (pdcbb_val_t){rk, rkl}, (pdcbb_val_t){vb, vs}, 0);
            }
        } else {
            size_t vs = pdcbb_kv_rec_val_size(w.key, w.key_len, 0, w.value_len);
            uint8_t *vb = vbuf_get(r, &vbuf, &vbuf_cap, vs);
            if (vb == NULL)
                return PDCBB_ERR_NOMEM;
            if (w.op == PDCBB_KV_OP_SET) {
                pdcbb_kv_rec_val_build(w.key, w.key_len, 0, w.value, w.value_len, vb);
            } else {
                pdcbb_kv_rec_val_build(w.key, w.key_len, 0, NULL, 0, vb);
                if ((rc = take_upload(r, q->id, w.upload, w.value_len, vb + vs - w.value_len)) != PDCBB_OK)
                    return rc;
            }
            rc = OPS->put(r->txn, PDCBB_T_KV, (pdcbb_val_t){rk, rkl}, (pdcbb_val_t){vb, vs}, 0);
        }
        if (rc != PDCBB_OK)
            return rc;
    }
    p->applied = q->count;
    return gen_bump(r, q->id);
}

pdcbb_err_t bbd_op_kv_part(bbd_req_t *r, const pdcbb_kv_part_req_t *q, pdcbb_kv_part_rep_t *p)
{
    (void)p;
    pdcbb_kv_meta_t m;
    pdcbb_err_t rc = load_meta(r, q->id, &m);
    if (rc != PDCBB_OK)
        return rc;
    uint64_t end;
    if (q->upload == 0 || q->data_len == 0 || pdcbb_add_overflow(q->offset, q->data_len, &end))
        return PDCBB_ERR_INVAL;
    if (end > PDCBB_KV_VALUE_MAX || (m.max_value_len && end > m.max_value_len))
        return PDCBB_ERR_TOO_BIG;
    uint8_t k[25];
    put_be64(k, q->id);
    k[8] = 'U';
    put_be64(k + 9, q->upload);
    put_be64(k + 17, q->offset);
    return OPS->put(r->txn, PDCBB_T_KVTX, (pdcbb_val_t){k, 25}, (pdcbb_val_t){q->data, q->data_len},
                    0);
}

/* ------------------------------------------------------------------ get / count / list */

pdcbb_err_t bbd_op_kv_get(bbd_req_t *r, const pdcbb_kv_get_req_t *q, pdcbb_kv_get_rep_t *p)
{
    pdcbb_kv_meta_t m;
    char why[200];
    pdcbb_err_t rc = load_meta(r, q->id, &m);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = check_tag_get(q->tag)) != PDCBB_OK)
        return rc;
    if ((rc = pdcbb_kv_key_check(m.key_type, q->key, q->key_len, m.max_key_len, why, sizeof(why))) != PDCBB_OK)
        return rc;
    pendset_t ps;
    if ((rc = load_pending(r, q->id, &ps)) != PDCBB_OK)
        return rc;
    uint8_t rk[PDCBB_KV_RECKEY_MAX], idb[8];
    put_be64(idb, q->id);
    size_t rkl = pdcbb_kv_rec_key(q->id, q->key, q->key_len, 0, rk);
    pdcbb_cursor_t *c;
    pdcbb_val_t kk, vv;
    vis_t v;
    memset(&v, 0, sizeof(v));
    if ((rc = OPS->cursor_open(r->txn, PDCBB_T_KV, &c)) != PDCBB_OK) {
        free(ps.v);
        return rc;
    }
    rc = OPS->cursor_seek(c, (pdcbb_val_t){rk, rkl}, &kk, &vv);
    if (rc == PDCBB_OK && kk.len == rkl && memcmp(kk.data, rk, rkl - 8) == 0) {
        pdcbb_err_t crc;
        rc = walk_group(r, c, idb, &kk, &vv, q->tag, &ps, &v, &crc);
        if (rc == PDCBB_OK && v.fullkey && pdcbb_kv_is_long(q->key_len) &&
            (v.fklen != q->key_len || memcmp(v.fullkey, q->key, q->key_len) != 0))
            v.found = v.busy = 0; /* a different key with the same prefix and hash */
    } else if (rc == PDCBB_OK || rc == PDCBB_ERR_NOT_FOUND) {
        rc = PDCBB_OK;
    }
    OPS->cursor_close(c);
    free(ps.v);
    if (rc != PDCBB_OK)
        return rc;
    if (v.busy)
        return PDCBB_ERR_BUSY;
    if (!v.found)
        return PDCBB_ERR_NOT_FOUND;
    p->found_tag = v.tag;
    p->total_len = v.vlen;
    uint64_t off = q->value_off > v.vlen ? v.vlen : q->value_off;
    uint64_t n = v.vlen - off;
    uint64_t cap = q->max_len < PDCBB_PAYLOAD_MAX - 4096 ? q->max_len : PDCBB_PAYLOAD_MAX - 4096;
    if (n > cap)
        n = cap;
    p->value = v.value + off;
    p->value_len = (uint32_t)n;
    return PDCBB_OK;
}

/* One visible key found by a scan. */
typedef struct hit {
    const uint8_t *key;
    size_t klen;
    uint64_t tag;
    const uint8_t *value;
    uint64_t vlen;
} hit_t;

typedef struct scan {
    bbd_req_t *r;
    const pdcbb_kv_meta_t *m;
    uint64_t tag;
    const pendset_t *ps;
    /* start position filter */
    const uint8_t *start;
    size_t start_len;
    int after;
    /* output */
    uint64_t skip;
    uint64_t skipped;
    uint64_t count;
    int busy;
    int (*emit)(struct scan *s, const hit_t *h); /* returns 1 to stop */
    void *arg;
} scan_t;

static int cmp_hit(const void *a, const void *b)
{
    const hit_t *x = a, *y = b;
    return pdcbb_kv_key_cmp(x->key, x->klen, y->key, y->klen);
}

/* Offer one visible key to the scan: start filter, skip, emit. Returns 1 to stop. */
static int offer(scan_t *s, const hit_t *h)
{
    if (s->start_len) {
        int c = pdcbb_kv_key_cmp(h->key, h->klen, s->start, s->start_len);
        if (c < 0 || (c == 0 && s->after))
            return 0;
    }
    if (s->skipped < s->skip) {
        s->skipped++;
        return 0;
    }
    s->count++;
    return s->emit ? s->emit(s, h) : 0;
}

/*
 * Walk the object's records from the start position in key order, offering each key visible
 * at s->tag. Long-prefix groups are collected and sorted by full key first. Returns with
 * s->busy set when a prepared transaction's version was met (the whole answer is in doubt).
 */
static pdcbb_err_t scan_run(scan_t *s, uint64_t id)
{
    bbd_req_t *r = s->r;
    uint8_t seek[8 + PDCBB_KV_PREFIX + 1], idb[8];
    size_t seekl = 8;
    put_be64(idb, id);
    memcpy(seek, idb, 8);
    if (s->start_len) {
        if (pdcbb_kv_is_long(s->start_len)) {
            memcpy(seek + 8, s->start, PDCBB_KV_PREFIX);
            seek[8 + PDCBB_KV_PREFIX] = PDCBB_KV_LONG_MARK;
            seekl = 8 + PDCBB_KV_PREFIX + 1;
        } else {
            memcpy(seek + 8, s->start, s->start_len);
            seekl = 8 + s->start_len;
        }
    }
    pdcbb_cursor_t *c;
    pdcbb_val_t kk, vv;
    pdcbb_err_t rc = OPS->cursor_open(r->txn, PDCBB_T_KV, &c), crc;
    if (rc != PDCBB_OK)
        return rc;
    hit_t *grp = NULL;
    size_t ngrp = 0, capgrp = 0;
    uint8_t gpre[PDCBB_KV_PREFIX + 1];
    int stop = 0;
    /* Short keys' groups are copied here since the cursor moves on. */
    crc = OPS->cursor_seek(c, (pdcbb_val_t){seek, seekl}, &kk, &vv);
    while (!stop && crc == PDCBB_OK && same_id(&kk, idb)) {
        const uint8_t *g = (const uint8_t *)kk.data + 8;
        size_t glen = kk.len - 16;
        int is_long = pdcbb_kv_group_is_long(g, glen);
        /* Flush a collected long-prefix group when the next key is not part of it. */
        if (ngrp && !(is_long && memcmp(g, gpre, PDCBB_KV_PREFIX + 1) == 0)) {
            qsort(grp, ngrp, sizeof(*grp), cmp_hit);
            for (size_t i = 0; i < ngrp && !stop; i++)
                stop = offer(s, &grp[i]);
            ngrp = 0;
            if (stop)
                break;
        }
        /* The group's first key bytes (short keys: the group itself) stay valid: they point
         * into the store's pages, which live until the transaction ends. */
        const uint8_t *gkey = g;
        vis_t v;
        rc = walk_group(r, c, idb, &kk, &vv, s->tag, s->ps, &v, &crc);
        if (rc != PDCBB_OK)
            break;
        if (v.busy) {
            s->busy = 1;
            break;
        }
        if (!is_long) {
            v.fullkey = gkey;
            v.fklen = glen;
        }
        if (!v.found)
            continue;
        hit_t h = {v.fullkey, v.fklen, v.tag, v.value, v.vlen};
        if (is_long) {
            if (ngrp == 0)
                memcpy(gpre, gkey, PDCBB_KV_PREFIX + 1);
            hit_t *ng = pdcbb_grow(grp, ngrp, &capgrp, sizeof(*ng), 16);
            if (ng == NULL) {
                rc = PDCBB_ERR_NOMEM;
                break;
            }
            grp = ng;
            grp[ngrp++] = h;
        } else {
            stop = offer(s, &h);
        }
    }
    if (rc == PDCBB_OK && !stop && !s->busy && ngrp) {
        qsort(grp, ngrp, sizeof(*grp), cmp_hit);
        for (size_t i = 0; i < ngrp && !stop; i++)
            stop = offer(s, &grp[i]);
    }
    free(grp);
    OPS->cursor_close(c);
    if (rc == PDCBB_OK && crc != PDCBB_OK && crc != PDCBB_ERR_NOT_FOUND)
        rc = crc;
    return rc;
}

pdcbb_err_t bbd_op_kv_count(bbd_req_t *r, const pdcbb_kv_count_req_t *q, pdcbb_kv_count_rep_t *p)
{
    pdcbb_kv_meta_t m;
    pdcbb_err_t rc = load_meta(r, q->id, &m);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = check_tag_get(q->tag)) != PDCBB_OK)
        return rc;
    pendset_t ps;
    if ((rc = load_pending(r, q->id, &ps)) != PDCBB_OK)
        return rc;
    scan_t s = {.r = r, .m = &m, .tag = q->tag, .ps = &ps};
    rc = scan_run(&s, q->id);
    free(ps.v);
    if (rc != PDCBB_OK)
        return rc;
    if (s.busy)
        return PDCBB_ERR_BUSY;
    p->count = s.count;
    pdcbb_err_t grc = gen_get(r, q->id, &p->gen);
    return grc == PDCBB_OK ? gen_getk(r, q->id, 'X', &p->tgen) : grc;
}

static int list_emit(scan_t *s, const hit_t *h)
{
    return pdcbb_kv_page_add(s->arg, h->key, h->klen, h->tag, h->value, h->vlen);
}

pdcbb_err_t bbd_op_kv_list(bbd_req_t *r, const pdcbb_kv_list_req_t *q, pdcbb_kv_list_rep_t *p)
{
    pdcbb_kv_meta_t m;
    char why[200];
    pdcbb_err_t rc = load_meta(r, q->id, &m);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = check_tag_get(q->tag)) != PDCBB_OK)
        return rc;
    if (q->flags & ~(uint32_t)(PDCBB_KV_LIST_AFTER | PDCBB_KV_LIST_VALUES))
        return PDCBB_ERR_INVAL;
    if (q->start_len && (rc = pdcbb_kv_key_check(m.key_type, q->start, q->start_len, 0, why, sizeof(why))) != PDCBB_OK)
        return rc;
    if (q->max == 0)
        return PDCBB_ERR_INVAL;
    pendset_t ps;
    if ((rc = load_pending(r, q->id, &ps)) != PDCBB_OK)
        return rc;
    pdcbb_kv_page_t o;
    pdcbb_kv_page_init(&o, q->max, (q->flags & PDCBB_KV_LIST_VALUES) != 0, q->max_bytes);
    scan_t s = {.r = r, .m = &m, .tag = q->tag, .ps = &ps, .start = q->start,
                .start_len = q->start_len, .after = (q->flags & PDCBB_KV_LIST_AFTER) != 0,
                .skip = q->skip, .emit = list_emit, .arg = &o};
    rc = scan_run(&s, q->id);
    free(ps.v);
    if (rc == PDCBB_OK && o.nomem)
        rc = PDCBB_ERR_NOMEM;
    if (rc == PDCBB_OK && s.busy)
        rc = PDCBB_ERR_BUSY;
    if (rc != PDCBB_OK) {
        free(o.buf);
        return rc;
    }
    uint8_t *out = bbd_req_alloc(r, o.len ? o.len : 1);
    if (out == NULL) {
        free(o.buf);
        return PDCBB_ERR_NOMEM;
    }
    if (o.len)
        memcpy(out, o.buf, o.len);
    free(o.buf);
    p->count = o.n;
    p->more = o.more;
    p->skipped = s.skipped;
    p->recs = out;
    p->recs_len = (uint32_t)o.len;
    pdcbb_err_t grc = gen_get(r, q->id, &p->gen);
    return grc == PDCBB_OK ? gen_getk(r, q->id, 'X', &p->tgen) : grc;
}

/* ------------------------------------------------------------------ transactions */

pdcbb_err_t bbd_op_kv_trans(bbd_req_t *r, const pdcbb_kv_trans_req_t *q, pdcbb_kv_trans_rep_t *p)
{
    (void)p;
    pdcbb_kv_meta_t m;
    pdcbb_err_t rc = load_meta(r, q->id, &m);
    if (rc != PDCBB_OK)
        return rc;
    if (q->tag == PDCBB_KV_NULLTAG || q->tag >= PDCBB_KV_MAXTAG || q->mode > PDCBB_KV_TRANS_ABORT)
        return PDCBB_ERR_INVAL;
    uint8_t pk[17], ck[17];
    pdcbb_val_t v;
    pdcbb_kv_tx_key(q->id, 'P', q->tag, pk);
    pdcbb_kv_tx_key(q->id, 'C', q->tag, ck);
    pdcbb_err_t prc = OPS->get(r->txn, PDCBB_T_KVTX, (pdcbb_val_t){pk, 17}, &v);
    if (prc != PDCBB_OK && prc != PDCBB_ERR_NOT_FOUND)
        return prc;
    pdcbb_err_t crc = OPS->get(r->txn, PDCBB_T_KVTX, (pdcbb_val_t){ck, 17}, &v);
    if (crc != PDCBB_OK && crc != PDCBB_ERR_NOT_FOUND)
        return crc;
    uint8_t st;
    switch (q->mode) {
    case PDCBB_KV_TRANS_START:
        if (prc == PDCBB_OK || crc == PDCBB_OK)
            return PDCBB_ERR_EXISTS;
        st = PDCBB_KV_TX_OPEN;
        return OPS->put(r->txn, PDCBB_T_KVTX, (pdcbb_val_t){pk, 17}, (pdcbb_val_t){&st, 1}, 0);
    case PDCBB_KV_TRANS_PREPARE:
        if (prc != PDCBB_OK)
            return PDCBB_ERR_NOT_FOUND;
        st = PDCBB_KV_TX_PREPARED;
        if ((rc = tgen_bump(r, q->id)) != PDCBB_OK)
            return rc;
        return OPS->put(r->txn, PDCBB_T_KVTX, (pdcbb_val_t){pk, 17}, (pdcbb_val_t){&st, 1}, 0);
    case PDCBB_KV_TRANS_COMMIT:
        if (prc != PDCBB_OK)
            return crc == PDCBB_OK ? PDCBB_OK : PDCBB_ERR_NOT_FOUND; /* a retried commit */
        if ((rc = OPS->del(r->txn, PDCBB_T_KVTX, (pdcbb_val_t){pk, 17})) != PDCBB_OK ||
            (rc = tgen_bump(r, q->id)) != PDCBB_OK)
            return rc;
        return OPS->put(r->txn, PDCBB_T_KVTX, (pdcbb_val_t){ck, 17}, (pdcbb_val_t){"", 0}, 0);
    default: { /* ABORT */
        if (prc != PDCBB_OK)
            return PDCBB_ERR_NOT_FOUND;
        uint8_t idb[8];
        put_be64(idb, q->id);
        uint64_t n = 0;
        if ((rc = delete_prefix(r, PDCBB_T_KV, idb, 8, 1, q->tag, &n)) != PDCBB_OK ||
            (rc = gen_bump(r, q->id)) != PDCBB_OK)
            return rc;
        return OPS->del(r->txn, PDCBB_T_KVTX, (pdcbb_val_t){pk, 17});
    }
    }
}
