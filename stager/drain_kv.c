/*
 * drain_kv.c - KV dump files of the drain format and the in-memory view of a drained KV
 * object (pdcbb_drain_kv.h, docs/DRAIN-FORMAT.md "KV objects").
 *
 * File layout (little-endian):
 *   header  "PDCBBKVD" u32 version, u32 key_type, u32 sharding, u32 nshards, u32 rank,
 *           u32 reserved (0), u64 below_tag, u64 kv id, u32 container_len, u32 name_len,
 *           container bytes,
 *           name bytes, u32 CRC-32C of every header byte before it
 *   blocks  u32 "KVB1", u32 records, u64 payload bytes, u32 CRC-32C of the payload,
 *           u32 CRC-32C of these 20 header bytes; payload = records, each
 *           u32 key_len, u32 flags, u64 tag, u64 value_len, key bytes, value bytes
 *   end     u32 "KVE1", u32 0, u64 total records, u32 0, u32 CRC-32C of these 20 bytes
 * A block is cut once its payload reaches PDCBB_KVD_BLOCK_TARGET (a record is never split, so
 * a block holding one large value is as large as that record).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdcbb_crc32c.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"

#define KVD_BLOCK_HDR 24
#define KVD_REC_HDR 24
#define KVD_HDR_FIXED 56

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* ------------------------------------------------------------------ names and keys */

static const char *const key_type_names[] = {"STRING", "INT", "FLOAT"};
static const char *const shard_names[] = {"DEFAULT", "HASH", "RANGE"};

const char *pdcbb_kvd_key_type_name(uint32_t type)
{
    return type < 3 ? key_type_names[type] : NULL;
}
int pdcbb_kvd_key_type_parse(const char *name)
{
    for (int i = 0; name && i < 3; i++)
        if (strcmp(name, key_type_names[i]) == 0)
            return i;
    return -1;
}
const char *pdcbb_kvd_shard_name(uint32_t sharding)
{
    return sharding < 3 ? shard_names[sharding] : NULL;
}
int pdcbb_kvd_shard_parse(const char *name)
{
    for (int i = 0; name && i < 3; i++)
        if (strcmp(name, shard_names[i]) == 0)
            return i;
    return -1;
}

pdcbb_err_t pdcbb_kvd_key_parse(uint32_t type, const char *text, uint8_t *out, size_t *len,
                                char *err, size_t errlen)
{
    size_t n = text ? strlen(text) : 0;
    if (n == 0) {
        pdcbb_errf(err, errlen, "key is empty");
        return PDCBB_ERR_INVAL;
    }
    if (type == PDCBB_KVK_STRING) {
        if (n > PDCBB_KV_KEY_MAXLEN) {
            pdcbb_errf(err, errlen, "key of %zu bytes is longer than %u bytes", n,
                    (unsigned)PDCBB_KV_KEY_MAXLEN);
            return PDCBB_ERR_INVAL;
        }
        *len = pdcbb_kv_enc_str(text, n, out);
        return PDCBB_OK;
    }
    char *end = NULL;
    errno = 0;
    if (type == PDCBB_KVK_INT) {
        long long v = strtoll(text, &end, 10);
        if (*end != '\0' || errno != 0 || end == text || text[0] == ' ') {
            pdcbb_errf(err, errlen, "key '%.64s' is not an INT (a decimal integer in 64 bits)",
                    text);
            return PDCBB_ERR_INVAL;
        }
        pdcbb_kv_enc_int((int64_t)v, out);
        *len = 8;
        return PDCBB_OK;
    }
    if (type == PDCBB_KVK_FLOAT) {
        double v = strtod(text, &end);
        if (*end != '\0' || end == text || text[0] == ' ' || isnan(v) ||
            (errno == ERANGE && isinf(v)) || pdcbb_kv_enc_float(v, out) != PDCBB_OK) {
            pdcbb_errf(err, errlen, "key '%.64s' is not a FLOAT (a number, NaN refused)", text);
            return PDCBB_ERR_INVAL;
        }
        *len = 8;
        return PDCBB_OK;
    }
    pdcbb_errf(err, errlen, "unknown key type %u", type);
    return PDCBB_ERR_INVAL;
}

void pdcbb_kvd_key_format(uint32_t type, const void *key, size_t len, char *out, size_t outlen)
{
    if (type == PDCBB_KVK_INT && len == 8)
        snprintf(out, outlen, "%" PRId64, pdcbb_kv_dec_int(key));
    else if (type == PDCBB_KVK_FLOAT && len == 8)
        snprintf(out, outlen, "%.17g", pdcbb_kv_dec_float(key));
    else
        snprintf(out, outlen, "%.*s", (int)(len > 0 ? len - 1 : 0), (const char *)key);
}

int64_t pdcbb_kvd_resolve(const uint64_t *tags, const uint32_t *flags, uint64_t n, uint64_t tag)
{
    /* the daemon's resolution (common/pdcbb_kv.c); a dump holds no uncommitted versions */
    pdcbb_kv_resolve_t r;
    int64_t cand = -1;
    pdcbb_kv_resolve_init(&r, tag);
    for (uint64_t i = 0; i < n && tags[i] <= tag; i++)
        if (pdcbb_kv_resolve_add(&r, tags[i],
                                 (flags[i] & PDCBB_KVR_DELETED) ? PDCBB_KV_F_DELETED : 0, 0))
            cand = (int64_t)i;
    return pdcbb_kv_resolve_result(&r) == PDCBB_KV_RES_FOUND ? cand : -1;
}

/* ------------------------------------------------------------------ writer */

struct pdcbb_kvd_writer {
    int fd;
    char path[PATH_MAX];
    char tmp[PATH_MAX + 16];
    uint8_t *buf; /* the current block: header room + payload */
    size_t used, cap;
    uint32_t nrec_block;
    uint64_t records, bytes;
    uint32_t crc;
    uint8_t last_key[PDCBB_KVD_KEY_MAX];
    size_t last_klen;
    uint64_t last_tag;
    int have_last, failed;
    int werr;
};

static int kvd_write(pdcbb_kvd_writer_t *w, const void *p, size_t n)
{
    const uint8_t *b = p;
    w->crc = pdcbb_crc32c(w->crc, p, n);
    w->bytes += n;
    while (n > 0) {
        ssize_t k = write(w->fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            w->werr = errno;
            return -1;
        }
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

static int kvd_flush_block(pdcbb_kvd_writer_t *w)
{
    if (w->nrec_block == 0)
        return 0;
    uint8_t *h = w->buf;
    uint64_t plen = w->used - KVD_BLOCK_HDR;
    put32(h, PDCBB_KVD_BLOCK_MAGIC);
    put32(h + 4, w->nrec_block);
    put64(h + 8, plen);
    put32(h + 16, pdcbb_crc32c(0, w->buf + KVD_BLOCK_HDR, (size_t)plen));
    put32(h + 20, pdcbb_crc32c(0, h, 20));
    if (kvd_write(w, w->buf, w->used) != 0)
        return -1;
    w->used = KVD_BLOCK_HDR;
    w->nrec_block = 0;
    return 0;
}

pdcbb_err_t pdcbb_kvd_create(const char *path, const pdcbb_kvd_header_t *h,
                             pdcbb_kvd_writer_t **out, char *err, size_t errlen)
{
    size_t cl = strnlen(h->container, sizeof(h->container));
    size_t nl = strnlen(h->name, sizeof(h->name));
    if (cl >= sizeof(h->container) || nl >= sizeof(h->name) || h->key_type > 2) {
        pdcbb_errf(err, errlen, "%s: bad dump header (key type %u)", path, h->key_type);
        return PDCBB_ERR_INVAL;
    }
    pdcbb_kvd_writer_t *w = calloc(1, sizeof(*w));
    if (w == NULL || (w->buf = malloc(PDCBB_KVD_BLOCK_TARGET + KVD_BLOCK_HDR)) == NULL) {
        free(w);
        pdcbb_errf(err, errlen, "%s: out of memory", path);
        return PDCBB_ERR_NOMEM;
    }
    w->cap = PDCBB_KVD_BLOCK_TARGET + KVD_BLOCK_HDR;
    w->used = KVD_BLOCK_HDR;
    snprintf(w->path, sizeof(w->path), "%s", path);
    snprintf(w->tmp, sizeof(w->tmp), "%s.tmp", path);
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (w->fd < 0) {
        int e = errno;
        pdcbb_errf(err, errlen, "cannot create %s: %s", w->tmp, strerror(e));
        free(w->buf);
        free(w);
        return pdcbb_err_from_errno(e);
    }
    uint8_t hdr[KVD_HDR_FIXED + 2 * 1024 + 4];
    memcpy(hdr, PDCBB_KVD_MAGIC, 8);
    put32(hdr + 8, PDCBB_KVD_VERSION);
    put32(hdr + 12, h->key_type);
    put32(hdr + 16, h->sharding);
    put32(hdr + 20, h->nshards);
    put32(hdr + 24, h->rank);
    put32(hdr + 28, 0);
    put64(hdr + 32, h->below_tag);
    put64(hdr + 40, h->kv_id);
    put32(hdr + 48, (uint32_t)cl);
    put32(hdr + 52, (uint32_t)nl);
    memcpy(hdr + KVD_HDR_FIXED, h->container, cl);
    memcpy(hdr + KVD_HDR_FIXED + cl, h->name, nl);
    size_t hl = KVD_HDR_FIXED + cl + nl;
    put32(hdr + hl, pdcbb_crc32c(0, hdr, hl));
    if (kvd_write(w, hdr, hl + 4) != 0) {
        int e = w->werr;
        pdcbb_errf(err, errlen, "cannot write %s: %s", w->tmp, strerror(e));
        pdcbb_kvd_abort(w);
        return pdcbb_err_from_errno(e);
    }
    *out = w;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_kvd_add(pdcbb_kvd_writer_t *w, const void *key, size_t klen, uint64_t tag,
                          uint32_t flags, const void *value, uint64_t vlen)
{
    if (w->failed)
        return PDCBB_ERR_IO;
    if (klen == 0 || klen > PDCBB_KVD_KEY_MAX || (vlen > 0 && value == NULL))
        return PDCBB_ERR_INVAL;
    if ((flags & PDCBB_KVR_DELETED) && vlen != 0)
        return PDCBB_ERR_INVAL;
    if (w->have_last) {
        int c = pdcbb_kv_key_cmp(w->last_key, w->last_klen, key, klen);
        if (c > 0 || (c == 0 && w->last_tag >= tag))
            return PDCBB_ERR_INVAL; /* out of order */
    }
    memcpy(w->last_key, key, klen);
    w->last_klen = klen;
    w->last_tag = tag;
    w->have_last = 1;
    uint64_t need = KVD_REC_HDR + klen + vlen;
    if (w->nrec_block > 0 && w->used + need > w->cap && kvd_flush_block(w) != 0) {
        w->failed = 1;
        return pdcbb_err_from_errno(w->werr);
    }
    if (w->used + need > w->cap) {
        if (need > SIZE_MAX / 2) {
            w->failed = 1;
            return PDCBB_ERR_TOO_BIG;
        }
        uint8_t *g = realloc(w->buf, (size_t)(w->used + need));
        if (g == NULL) {
            w->failed = 1;
            return PDCBB_ERR_NOMEM;
        }
        w->buf = g;
        w->cap = (size_t)(w->used + need);
    }
    uint8_t *p = w->buf + w->used;
    put32(p, (uint32_t)klen);
    put32(p + 4, flags);
    put64(p + 8, tag);
    put64(p + 16, vlen);
    memcpy(p + KVD_REC_HDR, key, klen);
    if (vlen)
        memcpy(p + KVD_REC_HDR + klen, value, (size_t)vlen);
    w->used += (size_t)need;
    w->nrec_block++;
    w->records++;
    if (w->used - KVD_BLOCK_HDR >= PDCBB_KVD_BLOCK_TARGET && kvd_flush_block(w) != 0) {
        w->failed = 1;
        return pdcbb_err_from_errno(w->werr);
    }
    /* a block that grew for one large record goes back to its usual size */
    if (w->cap > PDCBB_KVD_BLOCK_TARGET + KVD_BLOCK_HDR && w->used == KVD_BLOCK_HDR) {
        uint8_t *g = realloc(w->buf, PDCBB_KVD_BLOCK_TARGET + KVD_BLOCK_HDR);
        if (g != NULL) {
            w->buf = g;
            w->cap = PDCBB_KVD_BLOCK_TARGET + KVD_BLOCK_HDR;
        }
    }
    return PDCBB_OK;
}

void pdcbb_kvd_abort(pdcbb_kvd_writer_t *w)
{
    if (w == NULL)
        return;
    if (w->fd >= 0)
        close(w->fd);
    unlink(w->tmp);
    free(w->buf);
    free(w);
}

pdcbb_err_t pdcbb_kvd_close(pdcbb_kvd_writer_t *w, pdcbb_kvd_stats_t *stats, char *err,
                            size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    if (w->failed) {
        pdcbb_errf(err, errlen, "cannot write %s: %s", w->tmp,
                w->werr ? strerror(w->werr) : "an earlier record failed");
        pdcbb_kvd_abort(w);
        return PDCBB_ERR_IO;
    }
    uint8_t end[KVD_BLOCK_HDR];
    put32(end, PDCBB_KVD_END_MAGIC);
    put32(end + 4, 0);
    put64(end + 8, w->records);
    put32(end + 16, 0);
    put32(end + 20, pdcbb_crc32c(0, end, 20));
    if (kvd_flush_block(w) != 0 || kvd_write(w, end, sizeof(end)) != 0 || fdatasync(w->fd) != 0) {
        int e = w->werr ? w->werr : errno;
        pdcbb_errf(err, errlen, "cannot write %s: %s", w->tmp, strerror(e));
        pdcbb_kvd_abort(w);
        return pdcbb_err_from_errno(e);
    }
    if (close(w->fd) != 0 || rename(w->tmp, w->path) != 0) {
        int e = errno;
        w->fd = -1;
        pdcbb_errf(err, errlen, "cannot write %s: %s", w->path, strerror(e));
        pdcbb_kvd_abort(w);
        return pdcbb_err_from_errno(e);
    }
    if (stats != NULL) {
        stats->records = w->records;
        stats->bytes = w->bytes;
        stats->crc32c = w->crc;
    }
    free(w->buf);
    free(w);
    return rc;
}

/* ------------------------------------------------------------------ reader */

struct pdcbb_kvd_reader {
    FILE *f;
    char path[PATH_MAX];
    uint64_t off;       /* bytes consumed */
    uint32_t crc;       /* of the bytes consumed */
    uint8_t *block;     /* payload of the current block */
    size_t block_cap;
    uint64_t block_len, pos;
    uint32_t block_left;
    uint64_t records;
    int ended;
    uint32_t key_type;
    uint8_t last_key[PDCBB_KVD_KEY_MAX];
    size_t last_klen;
    uint64_t last_tag;
    int have_last;
    int keep;           /* the view keeps blocks: allocate a new one each time */
};

static int kvd_read(pdcbb_kvd_reader_t *r, void *p, size_t n)
{
    if (n > 0 && fread(p, 1, n, r->f) != n)
        return -1;
    r->crc = pdcbb_crc32c(r->crc, p, n);
    r->off += n;
    return 0;
}

pdcbb_err_t pdcbb_kvd_open(const char *path, pdcbb_kvd_header_t *h, pdcbb_kvd_reader_t **out,
                           char *err, size_t errlen)
{
    pdcbb_kvd_reader_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        pdcbb_errf(err, errlen, "%s: out of memory", path);
        return PDCBB_ERR_NOMEM;
    }
    snprintf(r->path, sizeof(r->path), "%s", path);
    r->f = fopen(path, "rbe");
    if (r->f == NULL) {
        int e = errno;
        pdcbb_errf(err, errlen, "KV dump %s: cannot open: %s", path, strerror(e));
        free(r);
        return pdcbb_err_from_errno(e);
    }
    uint8_t hdr[KVD_HDR_FIXED + 2 * 1024 + 4];
    memset(h, 0, sizeof(*h));
    if (kvd_read(r, hdr, KVD_HDR_FIXED) != 0 || memcmp(hdr, PDCBB_KVD_MAGIC, 8) != 0) {
        pdcbb_errf(err, errlen, "KV dump %s: not a KV dump (no %s header)", path, PDCBB_KVD_MAGIC);
        pdcbb_kvd_close_reader(r);
        return PDCBB_ERR_IO;
    }
    uint32_t ver = get32(hdr + 8), cl = get32(hdr + 48), nl = get32(hdr + 52);
    if (ver != PDCBB_KVD_VERSION) {
        pdcbb_errf(err, errlen, "KV dump %s: version %u is not supported (this pdcbb reads %d)",
                path, ver, PDCBB_KVD_VERSION);
        pdcbb_kvd_close_reader(r);
        return PDCBB_ERR_VERSION;
    }
    if (cl > 1023 || nl > 1023 || kvd_read(r, hdr + KVD_HDR_FIXED, cl + nl) != 0) {
        pdcbb_errf(err, errlen, "KV dump %s: bad header (names of %u and %u bytes)", path, cl, nl);
        pdcbb_kvd_close_reader(r);
        return PDCBB_ERR_IO;
    }
    uint32_t want = r->crc, got;
    uint8_t c4[4];
    if (kvd_read(r, c4, 4) != 0 || (got = get32(c4)) != want) {
        pdcbb_errf(err, errlen, "KV dump %s: header checksum mismatch (offset 0)", path);
        pdcbb_kvd_close_reader(r);
        return PDCBB_ERR_IO;
    }
    h->key_type = get32(hdr + 12);
    h->sharding = get32(hdr + 16);
    h->nshards = get32(hdr + 20);
    h->rank = get32(hdr + 24);
    h->below_tag = get64(hdr + 32);
    h->kv_id = get64(hdr + 40);
    memcpy(h->container, hdr + KVD_HDR_FIXED, cl);
    memcpy(h->name, hdr + KVD_HDR_FIXED + cl, nl);
    if (h->key_type > 2) {
        pdcbb_errf(err, errlen, "KV dump %s: unknown key type %u", path, h->key_type);
        pdcbb_kvd_close_reader(r);
        return PDCBB_ERR_IO;
    }
    r->key_type = h->key_type;
    *out = r;
    return PDCBB_OK;
}

/* Read the next block header (and payload); 1 = a block, 0 = the end, -1 error. */
static int kvd_next_block(pdcbb_kvd_reader_t *r, char *err, size_t errlen)
{
    uint8_t h[KVD_BLOCK_HDR];
    uint64_t at = r->off;
    if (kvd_read(r, h, sizeof(h)) != 0) {
        pdcbb_errf(err, errlen, "KV dump %s: truncated at offset %" PRIu64 " (no end block)",
                r->path, at);
        return -1;
    }
    if (get32(h + 20) != pdcbb_crc32c(0, h, 20)) {
        pdcbb_errf(err, errlen, "KV dump %s: block header at offset %" PRIu64
                             ": checksum mismatch",
                r->path, at);
        return -1;
    }
    uint32_t magic = get32(h);
    if (magic == PDCBB_KVD_END_MAGIC) {
        if (get64(h + 8) != r->records) {
            pdcbb_errf(err, errlen, "KV dump %s: the end block counts %" PRIu64
                                 " records, %" PRIu64 " were read",
                    r->path, get64(h + 8), r->records);
            return -1;
        }
        int ch = fgetc(r->f);
        if (ch != EOF) {
            pdcbb_errf(err, errlen, "KV dump %s: bytes after the end block at offset %" PRIu64,
                    r->path, r->off);
            return -1;
        }
        return 0;
    }
    uint64_t plen = get64(h + 8);
    uint32_t nrec = get32(h + 4);
    if (magic != PDCBB_KVD_BLOCK_MAGIC || nrec == 0 || plen < (uint64_t)nrec * KVD_REC_HDR ||
        plen > ((uint64_t)1 << 40)) {
        pdcbb_errf(err, errlen, "KV dump %s: bad block at offset %" PRIu64, r->path, at);
        return -1;
    }
    struct stat st;
    if (fstat(fileno(r->f), &st) == 0 && plen > (uint64_t)st.st_size) {
        pdcbb_errf(err, errlen, "KV dump %s: block at offset %" PRIu64 " of %" PRIu64
                             " bytes is past the end of the file",
                r->path, at, plen);
        return -1;
    }
    if (r->keep || plen > r->block_cap) {
        uint8_t *b = r->keep ? malloc(plen ? (size_t)plen : 1)
                             : realloc(r->block, (size_t)plen);
        if (b == NULL) {
            pdcbb_errf(err, errlen, "KV dump %s: out of memory for a block of %" PRIu64 " bytes",
                    r->path, plen);
            return -1;
        }
        r->block = b;
        r->block_cap = (size_t)plen;
    }
    if (kvd_read(r, r->block, (size_t)plen) != 0) {
        pdcbb_errf(err, errlen, "KV dump %s: truncated block at offset %" PRIu64, r->path, at);
        return -1;
    }
    if (pdcbb_crc32c(0, r->block, (size_t)plen) != get32(h + 16)) {
        pdcbb_errf(err, errlen, "KV dump %s: block at offset %" PRIu64
                             ": checksum mismatch (CRC-32C)",
                r->path, at);
        return -1;
    }
    r->block_len = plen;
    r->pos = 0;
    r->block_left = nrec;
    return 1;
}

pdcbb_err_t pdcbb_kvd_next(pdcbb_kvd_reader_t *r, pdcbb_kvd_rec_t *rec, char *err,
                           size_t errlen)
{
    if (r->ended)
        return PDCBB_ERR_NOT_FOUND;
    if (r->block_left == 0) {
        if (r->block_len != r->pos) {
            pdcbb_errf(err, errlen, "KV dump %s: block before offset %" PRIu64
                                 " has bytes after its records",
                    r->path, r->off);
            return PDCBB_ERR_IO;
        }
        int b = kvd_next_block(r, err, errlen);
        if (b < 0)
            return PDCBB_ERR_IO;
        if (b == 0) {
            r->ended = 1;
            return PDCBB_ERR_NOT_FOUND;
        }
    }
    const uint8_t *p = r->block + r->pos;
    uint64_t left = r->block_len - r->pos;
    if (left < KVD_REC_HDR) {
        pdcbb_errf(err, errlen, "KV dump %s: record cut short before offset %" PRIu64, r->path,
                r->off);
        return PDCBB_ERR_IO;
    }
    rec->klen = get32(p);
    rec->flags = get32(p + 4);
    rec->tag = get64(p + 8);
    rec->vlen = get64(p + 16);
    if (rec->klen == 0 || rec->klen > PDCBB_KVD_KEY_MAX ||
        (r->key_type != PDCBB_KVK_STRING && rec->klen != 8) ||
        rec->vlen > left - KVD_REC_HDR || rec->klen > left - KVD_REC_HDR - rec->vlen ||
        (rec->flags & ~PDCBB_KVR_DELETED) != 0 ||
        ((rec->flags & PDCBB_KVR_DELETED) && rec->vlen != 0) ||
        pdcbb_kv_key_check(r->key_type, p + KVD_REC_HDR, rec->klen, 0, NULL, 0) != PDCBB_OK) {
        pdcbb_errf(err, errlen, "KV dump %s: bad record (key of %u bytes, value of %" PRIu64
                             " bytes) in the block before offset %" PRIu64,
                r->path, rec->klen, rec->vlen, r->off);
        return PDCBB_ERR_IO;
    }
    rec->key = p + KVD_REC_HDR;
    rec->value = p + KVD_REC_HDR + rec->klen;
    if (r->have_last) {
        int c = pdcbb_kv_key_cmp(r->last_key, r->last_klen, rec->key, rec->klen);
        if (c > 0 || (c == 0 && r->last_tag >= rec->tag)) {
            pdcbb_errf(err, errlen, "KV dump %s: records out of key order before offset %" PRIu64,
                    r->path, r->off);
            return PDCBB_ERR_IO;
        }
    }
    memcpy(r->last_key, rec->key, rec->klen);
    r->last_klen = rec->klen;
    r->last_tag = rec->tag;
    r->have_last = 1;
    r->pos += KVD_REC_HDR + rec->klen + rec->vlen;
    r->block_left--;
    r->records++;
    return PDCBB_OK;
}

void pdcbb_kvd_read_stats(const pdcbb_kvd_reader_t *r, pdcbb_kvd_stats_t *stats)
{
    stats->records = r->records;
    stats->bytes = r->off;
    stats->crc32c = r->crc;
}

void pdcbb_kvd_close_reader(pdcbb_kvd_reader_t *r)
{
    if (r == NULL)
        return;
    if (r->f)
        fclose(r->f);
    if (!r->keep)
        free(r->block);
    free(r);
}

pdcbb_err_t pdcbb_kvd_verify(const char *path, const pdcbb_kvd_stats_t *want,
                             pdcbb_kvd_stats_t *got, char *err, size_t errlen)
{
    pdcbb_kvd_header_t h;
    pdcbb_kvd_reader_t *r = NULL;
    pdcbb_kvd_stats_t st = {0};
    pdcbb_err_t rc = pdcbb_kvd_open(path, &h, &r, err, errlen);
    if (rc != PDCBB_OK)
        return rc == PDCBB_ERR_NOMEM ? rc : PDCBB_ERR_IO;
    pdcbb_kvd_rec_t rec;
    while ((rc = pdcbb_kvd_next(r, &rec, err, errlen)) == PDCBB_OK)
        ;
    pdcbb_kvd_read_stats(r, &st);
    pdcbb_kvd_close_reader(r);
    if (got != NULL)
        *got = st;
    if (rc != PDCBB_ERR_NOT_FOUND)
        return PDCBB_ERR_IO;
    if (want != NULL && (want->crc32c != st.crc32c || want->bytes != st.bytes ||
                         want->records != st.records)) {
        pdcbb_errf(err, errlen,
                "KV dump %s: %" PRIu64 " records, %" PRIu64 " bytes, crc32c 0x%08" PRIx32
                "; the manifest says %" PRIu64 " records, %" PRIu64 " bytes, crc32c 0x%08" PRIx32,
                path, st.records, st.bytes, st.crc32c, want->records, want->bytes,
                want->crc32c);
        return PDCBB_ERR_IO;
    }
    return PDCBB_OK;
}

/* ------------------------------------------------------------------ view */

pdcbb_kv_view_t *pdcbb_kv_view_new(uint32_t key_type)
{
    pdcbb_kv_view_t *v = calloc(1, sizeof(*v));
    if (v != NULL)
        v->hdr.key_type = key_type;
    return v;
}

void pdcbb_kv_view_free(pdcbb_kv_view_t *v)
{
    if (v == NULL)
        return;
    for (uint64_t i = 0; i < v->nblocks; i++)
        free(v->blocks[i]);
    free(v->blocks);
    free(v->recs);
    free(v);
}

pdcbb_err_t pdcbb_kv_view_load(pdcbb_kv_view_t *v, const char *path, char *err, size_t errlen)
{
    pdcbb_kvd_header_t h;
    pdcbb_kvd_reader_t *r = NULL;
    pdcbb_err_t rc = pdcbb_kvd_open(path, &h, &r, err, errlen);
    if (rc != PDCBB_OK)
        return rc;
    if (h.key_type != v->hdr.key_type) {
        pdcbb_errf(err, errlen, "KV dump %s: %s keys, the manifest says %s", path,
                pdcbb_kvd_key_type_name(h.key_type), pdcbb_kvd_key_type_name(v->hdr.key_type));
        pdcbb_kvd_close_reader(r);
        return PDCBB_ERR_IO;
    }
    if (v->nrecs == 0 && v->nblocks == 0)
        v->hdr = h;
    r->keep = 1;
    pdcbb_kvd_rec_t rec;
    void *cur_block = NULL;
    while ((rc = pdcbb_kvd_next(r, &rec, err, errlen)) == PDCBB_OK) {
        if (r->block != cur_block) {
            if (v->nblocks == v->cap_blocks) {
                uint64_t nc = v->cap_blocks ? 2 * v->cap_blocks : 16;
                void **g = realloc(v->blocks, nc * sizeof(*g));
                if (g == NULL) {
                    rc = PDCBB_ERR_NOMEM;
                    break;
                }
                v->blocks = g;
                v->cap_blocks = nc;
            }
            v->blocks[v->nblocks++] = r->block;
            cur_block = r->block;
        }
        if (v->nrecs == v->cap_recs) {
            uint64_t nc = v->cap_recs ? 2 * v->cap_recs : 256;
            pdcbb_kvd_rec_t *g = realloc(v->recs, nc * sizeof(*g));
            if (g == NULL) {
                rc = PDCBB_ERR_NOMEM;
                break;
            }
            v->recs = g;
            v->cap_recs = nc;
        }
        v->recs[v->nrecs++] = rec;
    }
    /* a block allocated for the end or an error, not yet owned by the view */
    if (r->block != NULL && r->block != cur_block)
        free(r->block);
    pdcbb_kvd_close_reader(r);
    if (rc == PDCBB_ERR_NOMEM)
        pdcbb_errf(err, errlen, "KV dump %s: out of memory", path);
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

static int view_rec_cmp(const void *a, const void *b)
{
    const pdcbb_kvd_rec_t *x = a, *y = b;
    int c = pdcbb_kv_key_cmp(x->key, x->klen, y->key, y->klen);
    if (c != 0)
        return c;
    return x->tag < y->tag ? -1 : x->tag > y->tag;
}

pdcbb_err_t pdcbb_kv_view_sort(pdcbb_kv_view_t *v, char *err, size_t errlen)
{
    if (v->nrecs > 1)
        qsort(v->recs, (size_t)v->nrecs, sizeof(*v->recs), view_rec_cmp);
    for (uint64_t i = 1; i < v->nrecs; i++) {
        if (view_rec_cmp(&v->recs[i - 1], &v->recs[i]) == 0) {
            char k[PDCBB_KVD_KEY_MAX + 1];
            pdcbb_kvd_key_format(v->hdr.key_type, v->recs[i].key, v->recs[i].klen, k, sizeof(k));
            pdcbb_errf(err, errlen, "KV object '%s': key '%.100s' tag %" PRIu64
                                 " is in two dumps",
                    v->hdr.name, k, v->recs[i].tag);
            return PDCBB_ERR_IO;
        }
    }
    return PDCBB_OK;
}

/* The first record index of key (or where it would be). */
static uint64_t view_lower(const pdcbb_kv_view_t *v, const void *key, size_t klen)
{
    uint64_t lo = 0, hi = v->nrecs;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (pdcbb_kv_key_cmp(v->recs[mid].key, v->recs[mid].klen, key, klen) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The record of the key run [first, end) visible at tag, or NULL. */
static const pdcbb_kvd_rec_t *view_resolve(const pdcbb_kv_view_t *v, uint64_t first,
                                           uint64_t end, uint64_t tag)
{
    /* small runs: the shared resolution over tags/flags arrays */
    uint64_t n = end - first;
    uint64_t tags_s[16] = {0};
    uint32_t flags_s[16] = {0};
    uint64_t *tags = n <= 16 ? tags_s : malloc(n * sizeof(uint64_t));
    uint32_t *flags = n <= 16 ? flags_s : malloc(n * sizeof(uint32_t));
    const pdcbb_kvd_rec_t *out = NULL;
    if (tags != NULL && flags != NULL) {
        for (uint64_t i = 0; i < n; i++) {
            tags[i] = v->recs[first + i].tag;
            flags[i] = v->recs[first + i].flags;
        }
        int64_t k = pdcbb_kvd_resolve(tags, flags, n, tag);
        out = k < 0 ? NULL : &v->recs[first + (uint64_t)k];
    }
    if (n > 16) {
        free(tags);
        free(flags);
    }
    return out;
}

const pdcbb_kvd_rec_t *pdcbb_kv_view_get(const pdcbb_kv_view_t *v, const void *key, size_t klen,
                                         uint64_t tag)
{
    uint64_t first = view_lower(v, key, klen), end = first;
    while (end < v->nrecs &&
           pdcbb_kv_key_cmp(v->recs[end].key, v->recs[end].klen, key, klen) == 0)
        end++;
    return end > first ? view_resolve(v, first, end, tag) : NULL;
}

int pdcbb_kv_view_list(const pdcbb_kv_view_t *v, uint64_t tag, uint64_t offset, uint64_t count,
                       int (*fn)(const pdcbb_kvd_rec_t *rec, void *arg), void *arg,
                       uint64_t *total)
{
    uint64_t seen = 0, given = 0;
    int stop = 0;
    for (uint64_t i = 0; i < v->nrecs;) {
        uint64_t end = i + 1;
        while (end < v->nrecs && pdcbb_kv_key_cmp(v->recs[end].key, v->recs[end].klen,
                                                  v->recs[i].key, v->recs[i].klen) == 0)
            end++;
        const pdcbb_kvd_rec_t *r = view_resolve(v, i, end, tag);
        if (r != NULL) {
            if (!stop && seen >= offset && (count == 0 || given < count) && fn != NULL) {
                stop = fn(r, arg);
                given++;
            }
            seen++;
            if (stop && total == NULL)
                break;
        }
        i = end;
    }
    if (total != NULL)
        *total = seen;
    return stop;
}

pdcbb_err_t pdcbb_drain_kv_view_open(const pdcbb_drain_t *m, const pdcbb_drain_kv_t *kv,
                                     pdcbb_kv_view_t **out, char *err, size_t errlen)
{
    pdcbb_kv_view_t *v = pdcbb_kv_view_new(kv->key_type);
    pdcbb_err_t rc = PDCBB_OK;
    if (v == NULL) {
        pdcbb_errf(err, errlen, "out of memory");
        return PDCBB_ERR_NOMEM;
    }
    snprintf(v->hdr.name, sizeof(v->hdr.name), "%s", kv->name);
    snprintf(v->hdr.container, sizeof(v->hdr.container), "%s", kv->container);
    for (uint32_t i = 0; i < m->nkvdumps && rc == PDCBB_OK; i++) {
        const pdcbb_drain_kvdump_t *d = &m->kvdumps[i];
        if (d->kv != kv->id)
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", m->dir ? m->dir : ".", d->file);
        uint64_t before = v->nrecs;
        rc = pdcbb_kv_view_load(v, path, err, errlen);
        if (rc == PDCBB_OK && v->nrecs - before != d->records) {
            pdcbb_errf(err, errlen, "KV dump %s: %" PRIu64 " records, the manifest says %" PRIu64,
                    path, v->nrecs - before, d->records);
            rc = PDCBB_ERR_IO;
        }
    }
    if (rc == PDCBB_OK)
        rc = pdcbb_kv_view_sort(v, err, errlen);
    if (rc != PDCBB_OK) {
        pdcbb_kv_view_free(v);
        return rc;
    }
    v->hdr.key_type = kv->key_type;
    snprintf(v->hdr.name, sizeof(v->hdr.name), "%s", kv->name);
    *out = v;
    return PDCBB_OK;
}
