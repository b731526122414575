/*
 * pdcbb_csum.c - block checksums of node-local region data: records, updates, checks (see
 * pdcbb_csum.h).
 */
#include "pdcbb_csum.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdcbb_crc32c.h"
#include "pdcbb_grow.h"

#define B PDCBB_CSUM_BLOCK

static void put_be(uint8_t *o, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        o[i] = (uint8_t)v;
}

static void put_le(uint8_t *o, uint64_t v, int n)
{
    for (int i = 0; i < n; i++, v >>= 8)
        o[i] = (uint8_t)v;
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

void pdcbb_csum_key(uint8_t out[PDCBB_CSUM_KEY_LEN], uint64_t obj, uint64_t block)
{
    put_be(out, obj);
    put_be(out + 8, block);
}

void pdcbb_csum_rec_encode(const pdcbb_csum_rec_t *rec, uint8_t out[PDCBB_CSUM_VAL_LEN])
{
    put_le(out, rec->crc, 4);
    put_le(out + 4, rec->flags, 4);
    put_le(out + 8, rec->end, 8);
}

pdcbb_err_t pdcbb_csum_rec_decode(const void *val, size_t len, pdcbb_csum_rec_t *out)
{
    const uint8_t *p = val;
    if (len != PDCBB_CSUM_VAL_LEN)
        return PDCBB_ERR_STORE;
    pdcbb_csum_rec_t r = {(uint32_t)get_le(p, 4), (uint32_t)get_le(p + 4, 4), get_le(p + 8, 8)};
    if (r.end > B)
        return PDCBB_ERR_STORE;
    *out = r;
    return PDCBB_OK;
}

pdcbb_csum_rec_t pdcbb_csum_rec_empty(void)
{
    /* crc(zeros) == ~raw(~0, zeros) == ~shift(~0, B) */
    return (pdcbb_csum_rec_t){~pdcbb_crc32c_shift(0xFFFFFFFFu, B), 0, 0};
}

void pdcbb_csum_apply(pdcbb_csum_rec_t *rec, const pdcbb_csum_upd_t *u)
{
    rec->crc = u->kind == PDCBB_CSUM_SET ? u->value : rec->crc ^ u->value;
    if (u->end > rec->end)
        rec->end = u->end;
}

pdcbb_err_t pdcbb_csum_list_add(pdcbb_csum_list_t *l, const pdcbb_csum_upd_t *u)
{
    if (l->n > 0) {
        pdcbb_csum_upd_t *last = &l->v[l->n - 1];
        if (last->obj == u->obj && last->block == u->block) {
            /* SET then XOR is a SET of the sum; anything then SET is that SET */
            if (u->kind == PDCBB_CSUM_SET)
                last->kind = PDCBB_CSUM_SET, last->value = u->value;
            else
                last->value ^= u->value;
            if (u->end > last->end)
                last->end = u->end;
            return PDCBB_OK;
        }
    }
    pdcbb_csum_upd_t *g = pdcbb_grow(l->v, l->n, &l->cap, sizeof(*g), 16);
    if (g == NULL)
        return PDCBB_ERR_NOMEM;
    l->v = g;
    l->v[l->n++] = *u;
    return PDCBB_OK;
}

void pdcbb_csum_list_free(pdcbb_csum_list_t *l)
{
    free(l->v);
    *l = (pdcbb_csum_list_t){0};
}

/* pread exactly len bytes at off (the caller keeps off + len within the file). */
static pdcbb_err_t read_full(int fd, uint8_t *buf, uint64_t len, uint64_t off, int *err)
{
    uint64_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0) /* shrunk meanwhile: the rest reads as zeros */
                memset(buf + done, 0, len - done);
            else
                *err = errno;
            return n == 0 ? PDCBB_OK : PDCBB_ERR_IO;
        }
        done += (uint64_t)n;
    }
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_csum_write_run(int fd, uint64_t *size, uint64_t obj, uint64_t off,
                                 const uint8_t *src, uint64_t len, pdcbb_csum_list_t *l,
                                 int *err)
{
    pdcbb_err_t rc = PDCBB_OK;
    uint8_t *old = NULL;
    uint64_t pos = 0;
    while (pos < len && rc == PDCBB_OK) {
        uint64_t at = off + pos, block = at / B, a = at % B;
        uint64_t n = B - a < len - pos ? B - a : len - pos, b = a + n;
        pdcbb_csum_upd_t u = {.obj = obj, .block = block, .end = b};
        if (n == B) {
            u.kind = PDCBB_CSUM_SET;
            u.value = pdcbb_crc32c(0, src + pos, n);
        } else {
            /* raw(0, old ^ new) == raw(0, old) ^ raw(0, new) over the written range (the
             * zeros before it add nothing), then moved to the block's end */
            uint32_t d = pdcbb_crc32c_raw(0, src + pos, n);
            uint64_t below = at < *size ? (*size - at < n ? *size - at : n) : 0;
            if (below > 0) {
                if (old == NULL && (old = malloc(B)) == NULL) {
                    rc = PDCBB_ERR_NOMEM;
                    break;
                }
                if ((rc = read_full(fd, old, below, at, err)) != PDCBB_OK)
                    break;
                /* old bytes past the file's end are zeros */
                d ^= pdcbb_crc32c_shift(pdcbb_crc32c_raw(0, old, below), n - below);
            }
            u.kind = PDCBB_CSUM_XOR;
            u.value = pdcbb_crc32c_shift(d, B - b);
        }
        rc = pdcbb_csum_list_add(l, &u);
        pos += n;
    }
    free(old);
    if (off + len > *size)
        *size = off + len;
    return rc;
}

static pdcbb_err_t pwrite_full(int fd, const uint8_t *src, uint64_t len, uint64_t off, int *err)
{
    for (uint64_t w = 0; w < len;) {
        ssize_t k = pwrite(fd, src + w, len - w, (off_t)(off + w));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            *err = k < 0 ? errno : EIO;
            return PDCBB_ERR_IO;
        }
        w += (uint64_t)k;
    }
    return PDCBB_OK;
}

/* Block by block: each block's update, then its bytes. */
static pdcbb_err_t pwrite_blocks(int fd, uint64_t *size, uint64_t obj, uint64_t off,
                                 const uint8_t *src, uint64_t len, pdcbb_csum_list_t *l, int *err)
{
    uint64_t done = 0;
    while (done < len) {
        uint64_t at = off + done, n = B - at % B;
        if (n > len - done)
            n = len - done;
        pdcbb_err_t rc = pdcbb_csum_write_run(fd, size, obj, at, src + done, n, l, err);
        if (rc == PDCBB_OK)
            rc = pwrite_full(fd, src + done, n, at, err);
        if (rc != PDCBB_OK)
            return rc;
        done += n;
    }
    return PDCBB_OK;
}

/* The helper of a parallel write: the CRC of each whole block. */
typedef struct crc_job {
    const uint8_t *src;
    uint64_t nblocks;
    uint32_t *crc;
} crc_job_t;

static void *crc_blocks(void *arg)
{
    crc_job_t *j = arg;
    for (uint64_t i = 0; i < j->nblocks; i++)
        j->crc[i] = pdcbb_crc32c(0, j->src + i * B, B);
    return NULL;
}

#define PARALLEL_MIN_BLOCKS 4 /* below this a thread costs more than it saves */

pdcbb_err_t pdcbb_csum_pwrite(int fd, uint64_t *size, uint64_t obj, uint64_t off,
                              const uint8_t *src, uint64_t len, pdcbb_csum_list_t *l, int *err,
                              int parallel)
{
    uint64_t head = (B - off % B) % B;
    if (head > len)
        head = len;
    uint64_t nwhole = (len - head) / B;
    crc_job_t j = {src + head, nwhole, NULL};
    pthread_t t;
    if (!parallel || nwhole < PARALLEL_MIN_BLOCKS || (j.crc = malloc(nwhole * 4)) == NULL)
        return pwrite_blocks(fd, size, obj, off, src, len, l, err);
    if (pthread_create(&t, NULL, crc_blocks, &j) != 0) {
        free(j.crc);
        return pwrite_blocks(fd, size, obj, off, src, len, l, err);
    }
    /* the partial head block, then the whole blocks while the helper checksums them */
    pdcbb_err_t rc = pwrite_blocks(fd, size, obj, off, src, head, l, err);
    if (rc == PDCBB_OK)
        rc = pwrite_full(fd, src + head, nwhole * B, off + head, err);
    pthread_join(t, NULL);
    uint64_t first = (off + head) / B;
    for (uint64_t i = 0; i < nwhole && rc == PDCBB_OK; i++) {
        pdcbb_csum_upd_t u = {obj, first + i, PDCBB_CSUM_SET, j.crc[i], B};
        rc = pdcbb_csum_list_add(l, &u);
    }
    free(j.crc);
    if (rc != PDCBB_OK)
        return rc;
    if (off + head + nwhole * B > *size)
        *size = off + head + nwhole * B;
    uint64_t tail = head + nwhole * B;
    return pwrite_blocks(fd, size, obj, off + tail, src + tail, len - tail, l, err);
}

void pdcbb_csum_upd_encode(const pdcbb_csum_upd_t *u, uint8_t out[PDCBB_CSUM_WIRE_LEN])
{
    put_le(out, u->obj, 8);
    put_le(out + 8, u->block, 8);
    put_le(out + 16, u->kind, 4);
    put_le(out + 20, u->value, 4);
    put_le(out + 24, u->end, 8);
}

pdcbb_err_t pdcbb_csum_upd_decode(const uint8_t in[PDCBB_CSUM_WIRE_LEN], pdcbb_csum_upd_t *u)
{
    pdcbb_csum_upd_t v = {get_le(in, 8), get_le(in + 8, 8), (uint32_t)get_le(in + 16, 4),
                          (uint32_t)get_le(in + 20, 4), get_le(in + 24, 8)};
    if ((v.kind != PDCBB_CSUM_SET && v.kind != PDCBB_CSUM_XOR) || v.end > B ||
        v.block > UINT64_MAX / B)
        return PDCBB_ERR_PROTO;
    *u = v;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_csum_block_crc(int fd, uint64_t size, uint64_t block, uint8_t *scratch,
                                 uint32_t *crc, int *err)
{
    uint64_t at = block * B;
    uint64_t have = size > at ? (size - at < B ? size - at : B) : 0;
    uint8_t *buf = scratch;
    if (buf == NULL && have > 0 && (buf = malloc(B)) == NULL)
        return PDCBB_ERR_NOMEM;
    pdcbb_err_t rc = have > 0 ? read_full(fd, buf, have, at, err) : PDCBB_OK;
    if (rc == PDCBB_OK) {
        uint32_t s = have > 0 ? pdcbb_crc32c_raw(0xFFFFFFFFu, buf, have) : 0xFFFFFFFFu;
        *crc = ~pdcbb_crc32c_shift(s, B - have);
    }
    if (buf != scratch)
        free(buf);
    return rc;
}

pdcbb_err_t pdcbb_csum_check(int fd, uint64_t size, uint64_t block, const pdcbb_csum_rec_t *rec,
                             uint8_t *scratch, int *kind, int *err)
{
    if (size < block * B + rec->end) {
        *kind = PDCBB_CSUM_BAD_SIZE;
        return PDCBB_ERR_CORRUPT;
    }
    uint32_t crc;
    pdcbb_err_t rc = pdcbb_csum_block_crc(fd, size, block, scratch, &crc, err);
    if (rc == PDCBB_OK && crc != rec->crc) {
        *kind = PDCBB_CSUM_BAD_CRC;
        rc = PDCBB_ERR_CORRUPT;
    }
    return rc;
}

const char *pdcbb_csum_kind_str(int kind)
{
    switch (kind) {
    case PDCBB_CSUM_BAD_SIZE:
        return "the node-local data file is shorter than the data written to it (truncated)";
    case PDCBB_CSUM_BAD_CRC:
        return "the bytes do not match the checksum taken when they were written";
    default:
        return "damaged";
    }
}
