/*
 * pdcbb_proto.c - encoding and decoding of the wire protocol (see pdcbb_proto.h).
 *
 * Each message body is described by a table of fields generated from the field lists in the
 * header; one generic encoder and one generic, bounds-checked decoder walk those tables.
 */
#include "pdcbb_proto.h"

#include <stdlib.h>
#include <string.h>

#include "pdcbb_checked.h"
#include "pdcbb_stats.h"
#include "pdcbb_types.h"

enum field_kind { FK_END = 0, FK_U32, FK_I32, FK_U64, FK_STR, FK_BLOB, FK_U64S };

typedef struct field_desc {
    uint8_t kind;
    const char *name;
    size_t off;  /* the value, pointer or array */
    size_t off2; /* BLOB length or U64S count */
} field_desc_t;

#define OFF2_U32(T, n) 0
#define OFF2_I32(T, n) 0
#define OFF2_U64(T, n) 0
#define OFF2_STR(T, n) 0
#define OFF2_BLOB(T, n) offsetof(T, n##_len)
#define OFF2_U64S(T, n) offsetof(T, n##_count)
#define FDESC(T, kind, n) {FK_##kind, #n, offsetof(T, n), OFF2_##kind(T, n)},

#define X_TABLES(OP, val, lname, RQ, RP, ...)                                                      \
    static const field_desc_t lname##_req_fields[] = {RQ(FDESC, pdcbb_##lname##_req_t){FK_END}};   \
    static const field_desc_t lname##_rep_fields[] = {RP(FDESC, pdcbb_##lname##_rep_t){FK_END}};
PDCBB_OPS(X_TABLES)
#undef X_TABLES

typedef struct op_desc {
    pdcbb_op_props_t props;
    const field_desc_t *req;
    size_t req_size;
    const field_desc_t *rep;
    size_t rep_size;
} op_desc_t;

/* Every column of a row is named here: a row without one does not compile, nor does a value
 * that is not one of its column's (READ, METADATA, ANSWER, CLIENT...). */
static const op_desc_t op_table[PDCBB_OP_MAX_] = {
#define X_OPS(OP, val, lname, RQ, RP, txn, kind, drained, senders, flags)                          \
    [val] = {{val, #OP, #lname, PDCBB_OPTXN_##txn, PDCBB_KIND_##kind, PDCBB_DRAINED_##drained,     \
              PDCBB_BY_##senders, flags},                                                          \
             lname##_req_fields,                                                                   \
             sizeof(pdcbb_##lname##_req_t),                                                        \
             lname##_rep_fields,                                                                   \
             sizeof(pdcbb_##lname##_rep_t)},
    PDCBB_OPS(X_OPS)
#undef X_OPS
};

uint64_t pdcbb_name_hash(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)name; p && *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h;
}

int pdcbb_op_valid(unsigned op)
{
    return op < PDCBB_OP_MAX_ && op_table[op].props.name != NULL;
}

const pdcbb_op_props_t *pdcbb_op_props(unsigned op)
{
    return pdcbb_op_valid(op) ? &op_table[op].props : NULL;
}

int pdcbb_op_has(unsigned op, unsigned flags)
{
    return pdcbb_op_valid(op) && (op_table[op].props.flags & flags) == flags;
}

int pdcbb_op_forwardable(unsigned op)
{
    return pdcbb_op_has(op, PDCBB_OPF_FWD);
}

int pdcbb_op_gatherable(unsigned op)
{
    return pdcbb_op_has(op, PDCBB_OPF_GATHER);
}

const char *pdcbb_op_name(unsigned op)
{
    return pdcbb_op_valid(op) ? op_table[op].props.name : "UNKNOWN";
}

static const field_desc_t *fields_of(unsigned op, int is_reply, size_t *struct_size)
{
    if (!pdcbb_op_valid(op))
        return NULL;
    if (struct_size)
        *struct_size = is_reply ? op_table[op].rep_size : op_table[op].req_size;
    return is_reply ? op_table[op].rep : op_table[op].req;
}

/* Little-endian primitives. */
static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

void pdcbb_request_hdr(pdcbb_msg_hdr_t *h, unsigned op, uint64_t req_id, const uint8_t *token)
{
    memset(h, 0, sizeof(*h));
    h->magic = PDCBB_PROTO_MAGIC;
    h->version = PDCBB_PROTO_VERSION;
    h->op = (uint16_t)op;
    h->req_id = req_id;
    if (token != NULL)
        memcpy(h->token, token, PDCBB_TOKEN_LEN);
}

void pdcbb_hdr_encode(const pdcbb_msg_hdr_t *hdr, uint8_t *out)
{
    memset(out, 0, PDCBB_HDR_LEN);
    put_u32(out + 0, hdr->magic);
    put_u16(out + 4, hdr->version);
    put_u16(out + 6, hdr->op);
    put_u64(out + 8, hdr->req_id);
    put_u32(out + 16, hdr->flags);
    put_u32(out + 20, (uint32_t)hdr->status);
    put_u32(out + 24, hdr->payload_len);
    /* bytes 28..31 reserved, zero */
    memcpy(out + 32, hdr->token, PDCBB_TOKEN_LEN);
}

pdcbb_err_t pdcbb_hdr_decode(const void *msg, size_t len, pdcbb_msg_hdr_t *hdr)
{
    const uint8_t *p = msg;
    if (msg == NULL || len < PDCBB_HDR_LEN)
        return PDCBB_ERR_TRUNCATED;
    pdcbb_msg_hdr_t h;
    h.magic = get_u32(p);
    h.version = get_u16(p + 4);
    h.op = get_u16(p + 6);
    h.req_id = get_u64(p + 8);
    h.flags = get_u32(p + 16);
    h.status = (int32_t)get_u32(p + 20);
    h.payload_len = get_u32(p + 24);
    memcpy(h.token, p + 32, PDCBB_TOKEN_LEN);
    if (h.magic != PDCBB_PROTO_MAGIC)
        return PDCBB_ERR_PROTO;
    if (h.version != PDCBB_PROTO_VERSION)
        return PDCBB_ERR_VERSION;
    if (h.payload_len > PDCBB_PAYLOAD_MAX)
        return PDCBB_ERR_TOO_BIG;
    if (!pdcbb_range_ok(PDCBB_HDR_LEN, h.payload_len, len))
        return PDCBB_ERR_TRUNCATED;
    if ((size_t)h.payload_len < len - PDCBB_HDR_LEN)
        return PDCBB_ERR_PROTO;
    *hdr = h;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_hdr_decode_next(const void *buf, size_t avail, pdcbb_msg_hdr_t *hdr,
                                  size_t *msg_len)
{
    if (buf == NULL || avail < PDCBB_HDR_LEN)
        return PDCBB_ERR_TRUNCATED;
    uint32_t payload = get_u32((const uint8_t *)buf + 24);
    if (payload > avail - PDCBB_HDR_LEN)
        return PDCBB_ERR_TRUNCATED;
    *msg_len = PDCBB_HDR_LEN + (size_t)payload;
    return pdcbb_hdr_decode(buf, *msg_len, hdr);
}

#define FIELD(body, f, type) (*(type *)((char *)(body) + (f)->off))
#define FIELD2(body, f) (*(uint32_t *)((char *)(body) + (f)->off2))

pdcbb_err_t pdcbb_body_size(unsigned op, int is_reply, const void *body, size_t *size)
{
    const field_desc_t *f = fields_of(op, is_reply, NULL);
    if (f == NULL)
        return PDCBB_ERR_BAD_OP;
    size_t n = 0;
    for (; f->kind != FK_END; f++) {
        switch (f->kind) {
        case FK_U32:
        case FK_I32: n += 4; break;
        case FK_U64: n += 8; break;
        case FK_STR: {
            const char *s = FIELD(body, f, const char *);
            size_t l = s ? strlen(s) : 0;
            if (l > PDCBB_STR_MAX)
                return PDCBB_ERR_TOO_BIG;
            n += 4 + l + 1;
            break;
        }
        case FK_BLOB: n += 4 + (size_t)FIELD2(body, f); break;
        case FK_U64S: n += 4 + 8 * (size_t)FIELD2(body, f); break;
        }
    }
    if (n > PDCBB_PAYLOAD_MAX)
        return PDCBB_ERR_TOO_BIG;
    *size = n;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_body_encode(unsigned op, int is_reply, const void *body, uint8_t *out,
                              size_t size)
{
    const field_desc_t *f = fields_of(op, is_reply, NULL);
    if (f == NULL)
        return PDCBB_ERR_BAD_OP;
    uint8_t *p = out, *end = out + size;
    for (; f->kind != FK_END; f++) {
        switch (f->kind) {
        case FK_U32:
        case FK_I32:
            if (end - p < 4)
                return PDCBB_ERR_TRUNCATED;
            put_u32(p, FIELD(body, f, uint32_t));
            p += 4;
            break;
        case FK_U64:
            if (end - p < 8)
                return PDCBB_ERR_TRUNCATED;
            put_u64(p, FIELD(body, f, uint64_t));
            p += 8;
            break;
        case FK_STR: {
            const char *s = FIELD(body, f, const char *);
            size_t l = s ? strlen(s) : 0;
            if ((size_t)(end - p) < 4 + l + 1)
                return PDCBB_ERR_TRUNCATED;
            put_u32(p, (uint32_t)(l + 1));
            if (l)
                memcpy(p + 4, s, l);
            p[4 + l] = 0;
            p += 4 + l + 1;
            break;
        }
        case FK_BLOB: {
            uint32_t l = FIELD2(body, f);
            if ((size_t)(end - p) < 4 + (size_t)l)
                return PDCBB_ERR_TRUNCATED;
            put_u32(p, l);
            if (l)
                memcpy(p + 4, FIELD(body, f, const void *), l);
            p += 4 + l;
            break;
        }
        case FK_U64S: {
            uint32_t c = FIELD2(body, f);
            const uint64_t *a = FIELD(body, f, const uint64_t *);
            if ((size_t)(end - p) < 4 + 8 * (size_t)c)
                return PDCBB_ERR_TRUNCATED;
            put_u32(p, c);
            p += 4;
            for (uint32_t i = 0; i < c; i++, p += 8)
                put_u64(p, a[i]);
            break;
        }
        }
    }
    return p == end ? PDCBB_OK : PDCBB_ERR_INTERNAL;
}

void pdcbb_body_free(unsigned op, int is_reply, void *body)
{
    const field_desc_t *f = fields_of(op, is_reply, NULL);
    if (f == NULL || body == NULL)
        return;
    for (; f->kind != FK_END; f++) {
        if (f->kind == FK_U64S) {
            free(FIELD(body, f, uint64_t *));
            FIELD(body, f, uint64_t *) = NULL;
            FIELD2(body, f) = 0;
        }
    }
}

pdcbb_err_t pdcbb_body_decode(unsigned op, int is_reply, const void *payload, size_t len,
                              void *body)
{
    size_t struct_size = 0;
    const field_desc_t *f = fields_of(op, is_reply, &struct_size);
    if (f == NULL)
        return PDCBB_ERR_BAD_OP;
    memset(body, 0, struct_size);
    if (len > PDCBB_PAYLOAD_MAX)
        return PDCBB_ERR_TOO_BIG;
    const uint8_t *p = payload, *end = p + len;
    pdcbb_err_t rc = PDCBB_OK;
    for (; f->kind != FK_END; f++) {
        size_t avail = (size_t)(end - p);
        switch (f->kind) {
        case FK_U32:
        case FK_I32:
            if (avail < 4)
                goto truncated;
            FIELD(body, f, uint32_t) = get_u32(p);
            p += 4;
            break;
        case FK_U64:
            if (avail < 8)
                goto truncated;
            FIELD(body, f, uint64_t) = get_u64(p);
            p += 8;
            break;
        case FK_STR: {
            if (avail < 4)
                goto truncated;
            uint32_t l = get_u32(p);
            if (l == 0 || l > PDCBB_STR_MAX + 1) {
                rc = l == 0 ? PDCBB_ERR_PROTO : PDCBB_ERR_TOO_BIG;
                goto fail;
            }
            if (!pdcbb_range_ok(4, l, avail))
                goto truncated;
            const char *s = (const char *)p + 4;
            if (s[l - 1] != '\0' || memchr(s, '\0', l - 1) != NULL) {
                rc = PDCBB_ERR_PROTO; /* missing or embedded NUL */
                goto fail;
            }
            FIELD(body, f, const char *) = s;
            p += 4 + l;
            break;
        }
        case FK_BLOB: {
            if (avail < 4)
                goto truncated;
            uint32_t l = get_u32(p);
            if (l > PDCBB_PAYLOAD_MAX) {
                rc = PDCBB_ERR_TOO_BIG;
                goto fail;
            }
            if (!pdcbb_range_ok(4, l, avail))
                goto truncated;
            FIELD(body, f, const void *) = l ? p + 4 : NULL;
            FIELD2(body, f) = l;
            p += 4 + l;
            break;
        }
        case FK_U64S: {
            if (avail < 4)
                goto truncated;
            uint32_t c = get_u32(p);
            if (c > PDCBB_PAYLOAD_MAX / 8) {
                rc = PDCBB_ERR_TOO_BIG;
                goto fail;
            }
            if (!pdcbb_array_fits(c, 8, avail - 4))
                goto truncated;
            p += 4;
            uint64_t *a = NULL;
            if (c) {
                a = malloc(8 * (size_t)c);
                if (a == NULL) {
                    rc = PDCBB_ERR_NOMEM;
                    goto fail;
                }
                for (uint32_t i = 0; i < c; i++, p += 8)
                    a[i] = get_u64(p);
            }
            FIELD(body, f, uint64_t *) = a;
            FIELD2(body, f) = c;
            break;
        }
        }
    }
    if (p != end) {
        rc = PDCBB_ERR_PROTO; /* trailing bytes */
        goto fail;
    }
    return PDCBB_OK;
truncated:
    rc = PDCBB_ERR_TRUNCATED;
fail:
    pdcbb_body_free(op, is_reply, body);
    return rc;
}

pdcbb_err_t pdcbb_msg_build(const pdcbb_msg_hdr_t *hdr, const void *body, void **out,
                            size_t *out_len)
{
    size_t size = 0;
    pdcbb_err_t rc;
    if (body != NULL && (rc = pdcbb_body_size(hdr->op, hdr->flags & PDCBB_MSG_FLAG_REPLY, body,
                                              &size)) != PDCBB_OK)
        return rc;
    uint8_t *buf = malloc(PDCBB_HDR_LEN + size);
    if (buf == NULL)
        return PDCBB_ERR_NOMEM;
    pdcbb_msg_hdr_t h = *hdr;
    h.payload_len = (uint32_t)size;
    pdcbb_hdr_encode(&h, buf);
    if (body != NULL &&
        (rc = pdcbb_body_encode(h.op, h.flags & PDCBB_MSG_FLAG_REPLY, body, buf + PDCBB_HDR_LEN,
                                size)) != PDCBB_OK) {
        free(buf);
        return rc;
    }
    *out = buf;
    *out_len = PDCBB_HDR_LEN + size;
    return PDCBB_OK;
}

int pdcbb_token_equal(const uint8_t *a, const uint8_t *b)
{
    uint8_t d = 0;
    for (int i = 0; i < PDCBB_TOKEN_LEN; i++)
        d |= (uint8_t)(a[i] ^ b[i]);
    return d == 0;
}

/* The table of types is pdcbb_types.c's. */
_Static_assert(PDCBB_TYPE_COUNT == PDCBB_TYPES_N, "one row per pdc_var_type_t value");

size_t pdcbb_type_size(int type)
{
    const pdcbb_type_info_t *t = pdcbb_type_info(type);
    return t ? t->size : 0;
}

const char *pdcbb_type_name(int type)
{
    const pdcbb_type_info_t *t = pdcbb_type_info(type);
    return t ? t->name : "PDC_UNKNOWN";
}

static int cmp_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t pdcbb_ids_sort_unique(uint64_t *ids, size_t n)
{
    if (n > 1)
        qsort(ids, n, sizeof(*ids), cmp_id);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || ids[k - 1] != ids[i])
            ids[k++] = ids[i];
    return k;
}
