/*
 * pdcbb_kv.c - KV object storage layout and wire encodings (pdcbb_kv.h, docs/KV.md).
 */
#include "pdcbb_kv.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdcbb_checked.h"
#include "pdcbb_proto.h"

static void be64(uint8_t *o, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        o[i] = (uint8_t)v;
}
static uint64_t get_be64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | b[i];
    return v;
}
static void be32(uint8_t *o, uint32_t v)
{
    o[0] = (uint8_t)(v >> 24), o[1] = (uint8_t)(v >> 16), o[2] = (uint8_t)(v >> 8), o[3] = (uint8_t)v;
}
static uint32_t get_be32(const uint8_t *b)
{
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}
static void le16(uint8_t *o, uint32_t v) { o[0] = (uint8_t)v, o[1] = (uint8_t)(v >> 8); }
static void le64(uint8_t *o, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        o[i] = (uint8_t)v;
}
static uint64_t get_le64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | b[i];
    return v;
}

const char *pdcbb_kv_type_name(unsigned type)
{
    switch (type) {
    case PDCBB_KV_STRING: return "STRING";
    case PDCBB_KV_INT: return "INT";
    case PDCBB_KV_FLOAT: return "FLOAT";
    default: return "?";
    }
}

const char *pdcbb_kv_shard_name(unsigned s)
{
    switch (s) {
    case PDCBB_KV_SHARD_DEFAULT: return "DEFAULT";
    case PDCBB_KV_SHARD_HASH: return "HASH";
    case PDCBB_KV_SHARD_RANGE: return "RANGE";
    default: return "?";
    }
}

void pdcbb_kv_enc_int(int64_t v, uint8_t out[8]) { be64(out, (uint64_t)v ^ (1ull << 63)); }
int64_t pdcbb_kv_dec_int(const uint8_t in[8]) { return (int64_t)(get_be64(in) ^ (1ull << 63)); }

pdcbb_err_t pdcbb_kv_enc_float(double v, uint8_t out[8])
{
    if (isnan(v))
        return PDCBB_ERR_INVAL;
    if (v == 0.0)
        v = 0.0; /* -0.0 -> 0.0 */
    uint64_t b;
    memcpy(&b, &v, 8);
    b = (b >> 63) ? ~b : b | (1ull << 63);
    be64(out, b);
    return PDCBB_OK;
}

double pdcbb_kv_dec_float(const uint8_t in[8])
{
    uint64_t b = get_be64(in);
    b = (b >> 63) ? b & ~(1ull << 63) : ~b;
    double v;
    memcpy(&v, &b, 8);
    return v;
}

size_t pdcbb_kv_enc_str(const char *s, size_t len, uint8_t *out)
{
    memcpy(out, s, len);
    out[len] = 0;
    return len + 1;
}

pdcbb_err_t pdcbb_kv_key_check(unsigned type, const uint8_t *enc, size_t len,
                               uint32_t max_key_len, char *why, size_t whylen)
{
    if (max_key_len == 0 || max_key_len > PDCBB_KV_KEY_MAXLEN)
        max_key_len = PDCBB_KV_KEY_MAXLEN;
    switch (type) {
    case PDCBB_KV_INT:
    case PDCBB_KV_FLOAT:
        if (len != 8) {
            snprintf(why, whylen, "a %s key is 8 bytes, this one %zu (key type mismatch?)",
                     pdcbb_kv_type_name(type), len);
            return PDCBB_ERR_INVAL;
        }
        if (type == PDCBB_KV_FLOAT) {
            uint64_t b = get_be64(enc);
            uint64_t raw = (b >> 63) ? b & ~(1ull << 63) : ~b;
            double v;
            memcpy(&v, &raw, 8);
            if (isnan(v)) {
                snprintf(why, whylen, "a FLOAT key is NaN");
                return PDCBB_ERR_INVAL;
            }
            if (raw == (1ull << 63)) {
                snprintf(why, whylen, "a FLOAT key encodes -0.0 (must be sent as 0.0)");
                return PDCBB_ERR_INVAL;
            }
        }
        return PDCBB_OK;
    case PDCBB_KV_STRING:
        if (len < 2 || enc[len - 1] != 0) {
            snprintf(why, whylen, "%s", len < 2 ? "an empty STRING key" : "a STRING key without its terminator");
            return PDCBB_ERR_INVAL;
        }
        if (memchr(enc, 0, len - 1) != NULL) {
            snprintf(why, whylen, "a STRING key with a NUL byte inside");
            return PDCBB_ERR_INVAL;
        }
        if (len - 1 > max_key_len) {
            snprintf(why, whylen, "a STRING key of %zu bytes is longer than the limit of %u bytes",
                     len - 1, max_key_len);
            return PDCBB_ERR_TOO_BIG;
        }
        return PDCBB_OK;
    default:
        snprintf(why, whylen, "unknown key type %u", type);
        return PDCBB_ERR_INVAL;
    }
}

void pdcbb_kv_key_print(unsigned type, const uint8_t *enc, size_t len, char *out, size_t outlen)
{
    if (outlen == 0)
        return;
    if (type == PDCBB_KV_INT && len == 8)
        snprintf(out, outlen, "%" PRId64, pdcbb_kv_dec_int(enc));
    else if (type == PDCBB_KV_FLOAT && len == 8)
        snprintf(out, outlen, "%.17g", pdcbb_kv_dec_float(enc));
    else {
        size_t n = len && enc[len - 1] == 0 ? len - 1 : len;
        if (n > 40)
            snprintf(out, outlen, "'%.32s...' (%zu bytes)", (const char *)enc, n);
        else
            snprintf(out, outlen, "'%.*s'", (int)n, (const char *)enc);
    }
}

int pdcbb_kv_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = memcmp(a, b, n);
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen;
}

uint64_t pdcbb_kv_hash(const void *p, size_t len)
{
    const uint8_t *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

size_t pdcbb_kv_group(const uint8_t *enc, size_t len, uint8_t *out)
{
    if (!pdcbb_kv_is_long(len)) {
        memcpy(out, enc, len);
        return len;
    }
    memcpy(out, enc, PDCBB_KV_PREFIX);
    out[PDCBB_KV_PREFIX] = PDCBB_KV_LONG_MARK;
    be64(out + PDCBB_KV_PREFIX + 1, pdcbb_kv_hash(enc, len));
    return PDCBB_KV_GROUP_MAX;
}

size_t pdcbb_kv_rec_key(uint64_t kvid, const uint8_t *enc, size_t len, uint64_t tag, uint8_t *out)
{
    be64(out, kvid);
    size_t g = pdcbb_kv_group(enc, len, out + 8);
    be64(out + 8 + g, tag);
    return 16 + g;
}

int pdcbb_kv_rec_key_parse(const uint8_t *rk, size_t len, uint64_t *kvid, const uint8_t **group,
                           size_t *glen, uint64_t *tag)
{
    if (len < 17)
        return 0;
    *kvid = get_be64(rk);
    *group = rk + 8;
    *glen = len - 16;
    *tag = get_be64(rk + len - 8);
    return 1;
}

size_t pdcbb_kv_rec_val_size(const uint8_t *enc, size_t len, int deleted, uint64_t vlen)
{
    (void)enc;
    return 1 + (pdcbb_kv_is_long(len) ? 2 + len : 0) + (deleted ? 0 : vlen);
}

void pdcbb_kv_rec_val_build(const uint8_t *enc, size_t len, int deleted, const void *value,
                            uint64_t vlen, uint8_t *out)
{
    unsigned flags = (deleted ? PDCBB_KV_F_DELETED : 0) | (pdcbb_kv_is_long(len) ? PDCBB_KV_F_LONGKEY : 0);
    size_t p = 1;
    out[0] = (uint8_t)flags;
    if (flags & PDCBB_KV_F_LONGKEY) {
        out[1] = (uint8_t)(len >> 8), out[2] = (uint8_t)len;
        memcpy(out + 3, enc, len);
        p = 3 + len;
    }
    if (!deleted && value && vlen)
        memcpy(out + p, value, vlen);
}

pdcbb_err_t pdcbb_kv_rec_val_parse(const void *v, size_t len, unsigned *flags, const uint8_t **fk,
                                   size_t *fklen, const uint8_t **value, uint64_t *vlen)
{
    const uint8_t *b = v;
    size_t p = 1;
    if (len < 1)
        return PDCBB_ERR_STORE;
    *flags = b[0];
    *fk = NULL;
    *fklen = 0;
    if (b[0] & PDCBB_KV_F_LONGKEY) {
        if (len < 3)
            return PDCBB_ERR_STORE;
        size_t kl = ((size_t)b[1] << 8) | b[2];
        if (!pdcbb_range_ok(3, kl, len) || kl > PDCBB_KV_ENC_MAX)
            return PDCBB_ERR_STORE;
        *fk = b + 3;
        *fklen = kl;
        p = 3 + kl;
    }
    *value = b + p;
    *vlen = len - p;
    return PDCBB_OK;
}

size_t pdcbb_kv_meta_size(const pdcbb_kv_meta_t *m)
{
    return 4 + 4 + 8 + 8 + 8 + 4 + 4 * (size_t)m->nshards + 2 + strlen(m->name);
}

size_t pdcbb_kv_meta_encode(const pdcbb_kv_meta_t *m, uint8_t *o)
{
    size_t p = 0, nl = strlen(m->name);
    o[0] = 1, o[1] = (uint8_t)m->key_type, o[2] = (uint8_t)m->sharding, o[3] = 0;
    p = 4;
    be32(o + p, m->max_key_len), p += 4;
    be64(o + p, m->max_value_len), p += 8;
    be64(o + p, m->cont_id), p += 8;
    be64(o + p, m->id), p += 8;
    be32(o + p, m->nshards), p += 4;
    for (uint32_t i = 0; i < m->nshards; i++)
        be32(o + p, m->shards[i]), p += 4;
    o[p] = (uint8_t)(nl >> 8), o[p + 1] = (uint8_t)nl, p += 2;
    memcpy(o + p, m->name, nl);
    return p + nl;
}

pdcbb_err_t pdcbb_kv_meta_decode(const void *in, size_t len, pdcbb_kv_meta_t *m)
{
    const uint8_t *b = in;
    size_t p = 0;
    memset(m, 0, sizeof(*m));
    if (len < 38 || b[0] != 1)
        return PDCBB_ERR_STORE;
    m->key_type = b[1], m->sharding = b[2];
    p = 4;
    m->max_key_len = get_be32(b + p), p += 4;
    m->max_value_len = get_be64(b + p), p += 8;
    m->cont_id = get_be64(b + p), p += 8;
    m->id = get_be64(b + p), p += 8;
    m->nshards = get_be32(b + p), p += 4;
    if (m->nshards == 0 || m->nshards > PDCBB_KV_SHARDS_MAX ||
        !pdcbb_range_ok(p, 4 * (uint64_t)m->nshards + 2, len))
        return PDCBB_ERR_STORE;
    for (uint32_t i = 0; i < m->nshards; i++)
        m->shards[i] = get_be32(b + p), p += 4;
    size_t nl = ((size_t)b[p] << 8) | b[p + 1];
    p += 2;
    if (len != p + nl || nl >= sizeof(m->name) || memchr(b + p, 0, nl) != NULL)
        return PDCBB_ERR_STORE; /* a name holds no NUL: it came as a protocol string */
    memcpy(m->name, b + p, nl);
    m->name[nl] = 0;
    return PDCBB_OK;
}

size_t pdcbb_kv_meta_name_key(uint64_t cont_id, const char *name, uint8_t *out)
{
    size_t nl = strlen(name);
    out[0] = 'N';
    be64(out + 1, cont_id);
    memcpy(out + 9, name, nl);
    return 9 + nl;
}

size_t pdcbb_kv_meta_id_key(uint64_t id, uint8_t *out)
{
    out[0] = 'I';
    be64(out + 1, id);
    return 9;
}

size_t pdcbb_kv_tx_key(uint64_t id, uint8_t kind, uint64_t tag, uint8_t *out)
{
    be64(out, id);
    out[8] = kind;
    be64(out + 9, tag);
    return 17;
}

uint32_t pdcbb_kv_shard_of(uint32_t sharding, uint32_t key_type, uint32_t nshards,
                           const uint8_t *enc, size_t len)
{
    if (nshards <= 1)
        return 0;
    if (sharding != PDCBB_KV_SHARD_RANGE)
        return (uint32_t)(pdcbb_kv_hash(enc, len) % nshards);
    uint64_t x, span;
    if (key_type == PDCBB_KV_INT || key_type == PDCBB_KV_FLOAT) {
        x = len >= 8 ? get_be64(enc) : 0;
        return (uint32_t)(((unsigned __int128)x * nshards) >> 64);
    }
    x = 0;
    for (size_t i = 0; i < 3; i++) {
        unsigned c = i < len ? enc[i] : 0;
        /* The terminator and bytes below the printable range count as digit 0. */
        unsigned d = c <= 0x20 ? 0 : c >= 0x7e ? 94 : c - 0x20;
        x = x * 95 + d;
    }
    span = 95ull * 95 * 95;
    return (uint32_t)(x * nshards / span);
}

size_t pdcbb_kv_wset_size(const pdcbb_kv_wrec_t *r)
{
    size_t n = 1 + 2 + r->key_len;
    if (r->op == PDCBB_KV_OP_SET)
        n += 8 + r->value_len;
    else if (r->op == PDCBB_KV_OP_SET_PART)
        n += 16;
    return n;
}

size_t pdcbb_kv_wset_put(const pdcbb_kv_wrec_t *r, uint8_t *o)
{
    size_t p = 0;
    o[p++] = (uint8_t)r->op;
    le16(o + p, (uint32_t)r->key_len), p += 2;
    memcpy(o + p, r->key, r->key_len), p += r->key_len;
    if (r->op == PDCBB_KV_OP_SET) {
        le64(o + p, r->value_len), p += 8;
        if (r->value_len)
            memcpy(o + p, r->value, r->value_len);
        p += r->value_len;
    } else if (r->op == PDCBB_KV_OP_SET_PART) {
        le64(o + p, r->upload), p += 8;
        le64(o + p, r->value_len), p += 8;
    }
    return p;
}

pdcbb_err_t pdcbb_kv_wset_get(const uint8_t *b, size_t len, size_t *pos, pdcbb_kv_wrec_t *r)
{
    size_t p = *pos;
    memset(r, 0, sizeof(*r));
    if (!pdcbb_range_ok(p, 3, len))
        return PDCBB_ERR_TRUNCATED;
    r->op = b[p];
    if (r->op > PDCBB_KV_OP_SET_PART)
        return PDCBB_ERR_PROTO;
    r->key_len = (size_t)b[p + 1] | ((size_t)b[p + 2] << 8);
    p += 3;
    if (!pdcbb_range_ok(p, r->key_len, len))
        return PDCBB_ERR_TRUNCATED;
    r->key = b + p;
    p += r->key_len;
    if (r->op == PDCBB_KV_OP_SET) {
        if (!pdcbb_range_ok(p, 8, len))
            return PDCBB_ERR_TRUNCATED;
        r->value_len = get_le64(b + p);
        p += 8;
        if (!pdcbb_range_ok(p, r->value_len, len))
            return PDCBB_ERR_TRUNCATED;
        r->value = b + p;
        p += r->value_len;
    } else if (r->op == PDCBB_KV_OP_SET_PART) {
        if (!pdcbb_range_ok(p, 16, len))
            return PDCBB_ERR_TRUNCATED;
        r->upload = get_le64(b + p);
        r->value_len = get_le64(b + p + 8);
        p += 16;
    }
    *pos = p;
    return PDCBB_OK;
}

size_t pdcbb_kv_wlist_size(size_t key_len, uint64_t value_bytes_included)
{
    return 2 + key_len + 8 + 8 + 1 + value_bytes_included;
}

size_t pdcbb_kv_wlist_put(const pdcbb_kv_wrec_t *r, uint8_t *o)
{
    size_t p = 0;
    le16(o, (uint32_t)r->key_len), p = 2;
    memcpy(o + p, r->key, r->key_len), p += r->key_len;
    le64(o + p, r->tag), p += 8;
    le64(o + p, r->value_len), p += 8;
    o[p++] = (uint8_t)(r->included ? 1 : 0);
    if (r->included && r->value_len) {
        memcpy(o + p, r->value, r->value_len);
        p += r->value_len;
    }
    return p;
}

pdcbb_err_t pdcbb_kv_wlist_get(const uint8_t *b, size_t len, size_t *pos, pdcbb_kv_wrec_t *r)
{
    size_t p = *pos;
    memset(r, 0, sizeof(*r));
    if (!pdcbb_range_ok(p, 2, len))
        return PDCBB_ERR_TRUNCATED;
    r->key_len = (size_t)b[p] | ((size_t)b[p + 1] << 8);
    p += 2;
    if (!pdcbb_range_ok(p, r->key_len + 17, len))
        return PDCBB_ERR_TRUNCATED;
    r->key = b + p;
    p += r->key_len;
    r->tag = get_le64(b + p), p += 8;
    r->value_len = get_le64(b + p), p += 8;
    r->included = b[p++];
    if (r->included) {
        if (!pdcbb_range_ok(p, r->value_len, len))
            return PDCBB_ERR_TRUNCATED;
        r->value = b + p;
        p += r->value_len;
    }
    *pos = p;
    return PDCBB_OK;
}

/* ---------------------------------------------------------------- version resolution */

void pdcbb_kv_resolve_init(pdcbb_kv_resolve_t *r, uint64_t tag)
{
    memset(r, 0, sizeof(*r));
    r->tag = tag;
}

int pdcbb_kv_resolve_add(pdcbb_kv_resolve_t *r, uint64_t vtag, unsigned flags, unsigned state)
{
    if (vtag > r->tag)
        return 0;
    if (state == PDCBB_KV_TX_PREPARED) {
        r->have_prepared = 1;
        r->prepared_tag = vtag;
        return 0;
    }
    if (state != 0)
        return 0; /* an open transaction: invisible */
    r->have_cand = 1;
    r->cand_deleted = (flags & PDCBB_KV_F_DELETED) != 0;
    r->cand_tag = vtag;
    return 1;
}

int pdcbb_kv_resolve_result(const pdcbb_kv_resolve_t *r)
{
    if (r->have_prepared && (!r->have_cand || r->prepared_tag > r->cand_tag))
        return PDCBB_KV_RES_BUSY;
    return r->have_cand && !r->cand_deleted ? PDCBB_KV_RES_FOUND : PDCBB_KV_RES_NONE;
}

/* ------------------------------------------------------------------ list pages */

void pdcbb_kv_page_init(pdcbb_kv_page_t *pg, uint32_t max, int values, uint64_t max_bytes)
{
    memset(pg, 0, sizeof(*pg));
    pg->max = max;
    pg->values = values;
    pg->max_bytes = max_bytes == 0 || max_bytes > PDCBB_PAYLOAD_MAX - 65536
                        ? PDCBB_PAYLOAD_MAX - 65536
                        : max_bytes;
}

int pdcbb_kv_page_add(pdcbb_kv_page_t *pg, const uint8_t *key, size_t klen, uint64_t tag,
                      const uint8_t *value, uint64_t vlen)
{
    if (pg->n >= pg->max) {
        pg->more = 1;
        return 1;
    }
    int incl = pg->values;
    size_t need = pdcbb_kv_wlist_size(klen, incl ? vlen : 0);
    if (incl && pg->len + need > pg->max_bytes) {
        if (pg->n > 0) {
            pg->more = 1;
            return 1;
        }
        /* The first record alone is too big for the reply: its value is fetched by KV_GET. */
        incl = 0;
        need = pdcbb_kv_wlist_size(klen, 0);
    }
    if (!incl && pg->len + need > pg->max_bytes && pg->n > 0) {
        pg->more = 1;
        return 1;
    }
    if (pg->len + need > pg->cap) {
        size_t cap = pg->cap ? pg->cap : 65536;
        while (cap < pg->len + need)
            cap *= 2;
        uint8_t *nb = realloc(pg->buf, cap);
        if (nb == NULL) {
            pg->nomem = 1;
            return 1;
        }
        pg->buf = nb;
        pg->cap = cap;
    }
    pdcbb_kv_wrec_t w = {.key = key, .key_len = klen, .tag = tag, .value = value,
                         .value_len = vlen, .included = incl};
    pg->len += pdcbb_kv_wlist_put(&w, pg->buf + pg->len);
    pg->n++;
    return 0;
}
