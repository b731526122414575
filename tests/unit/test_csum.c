/*
 * test_csum.c - the CRC-32C register arithmetic and the block checksums of node-local data
 * (common/pdcbb_crc32c.h, common/pdcbb_csum.h): a random sequence of writes to a real file,
 * each checksummed the way the daemon and the direct path do, must leave records that match
 * the file; damage (a flipped byte, a truncation) must be found, and stay found after later
 * partial overwrites of the same block.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdcbb_crc32c.h"
#include "pdcbb_csum.h"
#include "unit_check.h"

#define B PDCBB_CSUM_BLOCK
#define NBLOCKS 12
#define FILE_MAX (NBLOCKS * B)

/* Bit-at-a-time CRC-32C: the reference. */
static uint32_t crc_ref(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_register(void)
{
    static uint8_t buf[200000];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)next();
    /* the three-stream path (long buffers) and odd lengths and alignments against the reference */
    size_t lens[] = {0, 1, 7, 8, 9, 4095, 12288, 12289, 100003, sizeof(buf) - 1};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        CHECK(pdcbb_crc32c(0, buf + 1, lens[i]) == crc_ref(buf + 1, lens[i]));
    /* combine and shift */
    for (int i = 0; i < 20; i++) {
        size_t a = next() % 50000, b = next() % 50000;
        uint32_t ca = pdcbb_crc32c(0, buf, a), cb = pdcbb_crc32c(0, buf + a, b);
        CHECK(pdcbb_crc32c_combine(ca, cb, b) == pdcbb_crc32c(0, buf, a + b));
    }
    static uint8_t zeros[70000];
    CHECK(~pdcbb_crc32c_shift(0xFFFFFFFFu, sizeof(zeros)) == crc_ref(zeros, sizeof(zeros)));
    CHECK(pdcbb_crc32c_raw(0, zeros, 1000) == 0);
    CHECK(pdcbb_csum_rec_empty().crc == (pdcbb_crc32c_shift(0xFFFFFFFFu, B) ^ 0xFFFFFFFFu));
}

typedef struct model {
    int fd;
    uint64_t size;
    pdcbb_csum_rec_t rec[NBLOCKS];
    int have[NBLOCKS];
} model_t;

/* One write, checksummed one of three ways: the updates of the whole run then its pwrite;
 * pdcbb_csum_pwrite block by block (the daemon's I/O thread); pdcbb_csum_pwrite with a helper
 * thread for the whole blocks (the client's direct path). */
static void model_write(model_t *m, uint64_t off, const uint8_t *src, uint64_t len, int how)
{
    pdcbb_csum_list_t l = {0};
    int err = 0;
    uint64_t size = m->size;
    if (how == 0) {
        CHECK_ERR(pdcbb_csum_write_run(m->fd, &size, 7, off, src, len, &l, &err), PDCBB_OK);
        CHECK(pwrite(m->fd, src, len, (off_t)off) == (ssize_t)len);
    } else {
        CHECK_ERR(pdcbb_csum_pwrite(m->fd, &size, 7, off, src, len, &l, &err, how == 2),
                  PDCBB_OK);
    }
    CHECK(size == (off + len > m->size ? off + len : m->size));
    m->size = size;
    for (size_t i = 0; i < l.n; i++) {
        CHECK(l.v[i].obj == 7 && l.v[i].block < NBLOCKS);
        /* consecutive updates of one block were merged */
        CHECK(i == 0 || l.v[i].block != l.v[i - 1].block);
        uint64_t k = l.v[i].block;
        if (!m->have[k])
            m->rec[k] = pdcbb_csum_rec_empty(), m->have[k] = 1;
        pdcbb_csum_apply(&m->rec[k], &l.v[i]);
    }
    pdcbb_csum_list_free(&l);
}

static int model_check(model_t *m, int *bad_kind, uint64_t *bad_block)
{
    for (uint64_t k = 0; k < NBLOCKS; k++) {
        if (!m->have[k])
            continue;
        int kind = 0, err = 0;
        pdcbb_err_t rc = pdcbb_csum_check(m->fd, m->size, k, &m->rec[k], NULL, &kind, &err);
        if (rc != PDCBB_OK) {
            *bad_kind = kind;
            *bad_block = k;
            return rc;
        }
    }
    return PDCBB_OK;
}

static void test_writes(const char *path)
{
    model_t m = {.fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600)};
    CHECK(m.fd >= 0);
    uint8_t *src = malloc(FILE_MAX);
    for (int step = 0; step < 300; step++) {
        /* whole blocks, pieces of blocks, runs across boundaries, past the end, overwrites */
        uint64_t off, len;
        switch (next() % 4) {
        case 0: off = (next() % NBLOCKS) * B; len = B * (1 + next() % 6); break;
        case 1: off = next() % FILE_MAX; len = 1 + next() % 64; break;
        case 2: off = next() % FILE_MAX; len = 1 + next() % (2 * B); break;
        default: off = next() % (FILE_MAX / 2); len = B / 2 + next() % B; break;
        }
        if (off + len > FILE_MAX)
            len = FILE_MAX - off;
        for (uint64_t i = 0; i < len; i++)
            src[i] = (uint8_t)next();
        model_write(&m, off, src, len, step % 3);
        int kind = 0;
        uint64_t block = 0;
        CHECK_ERR(model_check(&m, &kind, &block), PDCBB_OK);
    }
    /* a long write with ragged ends, through the helper thread (at least 4 whole blocks) */
    for (uint64_t i = 0; i < 6 * B + 1000; i++)
        src[i] = (uint8_t)next();
    model_write(&m, B / 3, src, 6 * B + 1000, 2);
    {
        int kind = 0;
        uint64_t block = 0;
        CHECK_ERR(model_check(&m, &kind, &block), PDCBB_OK);
    }
    /* a flipped byte is found ... */
    uint64_t at = 2 * B + 12345;
    CHECK(m.have[2] && m.size > at);
    uint8_t c;
    CHECK(pread(m.fd, &c, 1, (off_t)at) == 1);
    c ^= 0x5a;
    CHECK(pwrite(m.fd, &c, 1, (off_t)at) == 1);
    int kind = 0;
    uint64_t block = 0;
    CHECK_ERR(model_check(&m, &kind, &block), PDCBB_ERR_CORRUPT);
    CHECK(kind == PDCBB_CSUM_BAD_CRC && block == 2);
    /* ... and is not absorbed by a later write of another part of the same block */
    memset(src, 0xab, 4096);
    model_write(&m, 2 * B + 500000, src, 4096, 1);
    CHECK_ERR(model_check(&m, &kind, &block), PDCBB_ERR_CORRUPT);
    CHECK(kind == PDCBB_CSUM_BAD_CRC && block == 2);
    /* a write of the whole block replaces the damaged bytes: good again */
    model_write(&m, 2 * B, src, B, 2);
    CHECK_ERR(model_check(&m, &kind, &block), PDCBB_OK);
    /* a truncated file is found from its size */
    CHECK(m.have[NBLOCKS - 1] && m.rec[NBLOCKS - 1].end > 0);
    uint64_t half = m.size / 2;
    CHECK(ftruncate(m.fd, (off_t)half) == 0);
    m.size = half;
    CHECK_ERR(model_check(&m, &kind, &block), PDCBB_ERR_CORRUPT);
    CHECK(kind == PDCBB_CSUM_BAD_SIZE && block * B + m.rec[block].end > half);
    free(src);
    close(m.fd);
    unlink(path);
}

static void test_records(void)
{
    pdcbb_csum_rec_t r = {0xdeadbeef, PDCBB_CSUM_PENDING, B}, back;
    uint8_t v[PDCBB_CSUM_VAL_LEN], k[PDCBB_CSUM_KEY_LEN], k2[PDCBB_CSUM_KEY_LEN];
    pdcbb_csum_rec_encode(&r, v);
    CHECK_ERR(pdcbb_csum_rec_decode(v, sizeof(v), &back), PDCBB_OK);
    CHECK(back.crc == r.crc && back.flags == r.flags && back.end == r.end);
    CHECK_ERR(pdcbb_csum_rec_decode(v, sizeof(v) - 1, &back), PDCBB_ERR_STORE);
    r.end = B + 1;
    pdcbb_csum_rec_encode(&r, v);
    CHECK_ERR(pdcbb_csum_rec_decode(v, sizeof(v), &back), PDCBB_ERR_STORE);
    /* keys sort by object, then block */
    pdcbb_csum_key(k, 1, 300);
    pdcbb_csum_key(k2, 2, 1);
    CHECK(memcmp(k, k2, sizeof(k)) < 0);
    pdcbb_csum_key(k2, 1, 301);
    CHECK(memcmp(k, k2, sizeof(k)) < 0);
    /* merging: XOR then XOR sums, SET then XOR is a SET, anything then SET is that SET */
    pdcbb_csum_list_t l = {0};
    pdcbb_csum_upd_t a = {1, 5, PDCBB_CSUM_XOR, 0x0f, 10}, b = {1, 5, PDCBB_CSUM_XOR, 0xf0, 4};
    pdcbb_csum_upd_t s = {1, 5, PDCBB_CSUM_SET, 0x1234, B}, other = {1, 6, PDCBB_CSUM_XOR, 1, 1};
    pdcbb_csum_list_add(&l, &a);
    pdcbb_csum_list_add(&l, &b);
    CHECK(l.n == 1 && l.v[0].kind == PDCBB_CSUM_XOR && l.v[0].value == 0xff && l.v[0].end == 10);
    pdcbb_csum_list_add(&l, &s);
    pdcbb_csum_list_add(&l, &a);
    CHECK(l.n == 1 && l.v[0].kind == PDCBB_CSUM_SET && l.v[0].value == (0x1234 ^ 0x0f) &&
          l.v[0].end == B);
    pdcbb_csum_list_add(&l, &other);
    CHECK(l.n == 2);
    pdcbb_csum_list_free(&l);
    CHECK(strstr(pdcbb_csum_kind_str(PDCBB_CSUM_BAD_SIZE), "truncated") != NULL);
    CHECK(strcmp(pdcbb_errname(PDCBB_ERR_CORRUPT), "PDCBB_ERR_CORRUPT") == 0 &&
          PDCBB_ERR_CORRUPT == 31);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/test_csum.%d", tmp && *tmp ? tmp : ".", (int)getpid());
    test_register();
    test_records();
    test_writes(path);
    UNIT_DONE("csum");
}
