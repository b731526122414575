/* Unit test of the KV storage layout (common/pdcbb_kv.h): order-preserving key encodings,
 * LMDB record keys (short and long keys), record values, meta records, wire records, shards. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdcbb_kv.h"

static int fails;
#define CHECK(c)                                                                                  \
    do {                                                                                          \
        if (!(c)) {                                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);                 \
            fails++;                                                                              \
        }                                                                                         \
    } while (0)

static int sgn(int v) { return (v > 0) - (v < 0); }

static int cmp_rk(uint64_t id, const char *a, const char *b, uint64_t ta, uint64_t tb)
{
    uint8_t ea[1100], eb[1100], ka[PDCBB_KV_RECKEY_MAX], kb[PDCBB_KV_RECKEY_MAX];
    size_t la = pdcbb_kv_enc_str(a, strlen(a), ea), lb = pdcbb_kv_enc_str(b, strlen(b), eb);
    size_t na = pdcbb_kv_rec_key(id, ea, la, ta, ka), nb = pdcbb_kv_rec_key(id, eb, lb, tb, kb);
    CHECK(na <= 511 && nb <= 511);
    return sgn(pdcbb_kv_key_cmp(ka, na, kb, nb));
}

int main(void)
{
    /* integers: order of encodings = numeric order */
    int64_t iv[] = {INT64_MIN, -1000000, -2, -1, 0, 1, 2, 255, 256, 1000000, INT64_MAX};
    size_t ni = sizeof(iv) / sizeof(iv[0]);
    for (size_t i = 0; i < ni; i++)
        for (size_t j = 0; j < ni; j++) {
            uint8_t a[8], b[8];
            pdcbb_kv_enc_int(iv[i], a), pdcbb_kv_enc_int(iv[j], b);
            CHECK(sgn(memcmp(a, b, 8)) == (iv[i] > iv[j]) - (iv[i] < iv[j]));
            CHECK(pdcbb_kv_dec_int(a) == iv[i]);
        }
    /* floats */
    double fv[] = {-INFINITY, -1e300, -2.5, -1.0, -1e-310, 0.0, 1e-310, 1.0, 2.5, 1e300, INFINITY};
    size_t nf = sizeof(fv) / sizeof(fv[0]);
    for (size_t i = 0; i < nf; i++)
        for (size_t j = 0; j < nf; j++) {
            uint8_t a[8], b[8];
            CHECK(pdcbb_kv_enc_float(fv[i], a) == PDCBB_OK);
            CHECK(pdcbb_kv_enc_float(fv[j], b) == PDCBB_OK);
            CHECK(sgn(memcmp(a, b, 8)) == (fv[i] > fv[j]) - (fv[i] < fv[j]));
            CHECK(pdcbb_kv_dec_float(a) == fv[i]);
        }
    uint8_t z1[8], z2[8];
    char why[256];
    CHECK(pdcbb_kv_enc_float(-0.0, z1) == PDCBB_OK && pdcbb_kv_enc_float(0.0, z2) == PDCBB_OK);
    CHECK(memcmp(z1, z2, 8) == 0);
    CHECK(pdcbb_kv_enc_float(NAN, z1) == PDCBB_ERR_INVAL);
    CHECK(pdcbb_kv_key_check(PDCBB_KV_FLOAT, z2, 8, 0, why, sizeof(why)) == PDCBB_OK);
    /* strings: prefix first, bytewise */
    CHECK(cmp_rk(7, "ab", "abc", 5, 1) < 0);
    CHECK(cmp_rk(7, "abc", "abd", 9, 1) < 0);
    CHECK(cmp_rk(7, "b", "abzzz", 0, 0) > 0);
    CHECK(cmp_rk(7, "ab", "ab", 1, 2) < 0); /* versions by tag */
    /* long keys: short key that is a prefix of a long key sorts first; all keys < 511 bytes */
    char *l1 = malloc(1025), *l2 = malloc(1025), *s448 = malloc(449);
    memset(l1, 'x', 1024), l1[1024] = 0;
    memset(l2, 'x', 1024), l2[1023] = 'y', l2[1024] = 0;
    memset(s448, 'x', 448), s448[448] = 0;
    CHECK(cmp_rk(7, s448, l1, PDCBB_KV_MAXTAG, 0) < 0);
    CHECK(cmp_rk(7, "xxx", l1, PDCBB_KV_MAXTAG, 0) < 0);
    CHECK(cmp_rk(7, l1, "xxy", 0, 0) < 0);
    CHECK(cmp_rk(7, l1, l2, 0, 0) != 0); /* same group prefix, different hash */
    uint8_t e1[1100], g[PDCBB_KV_GROUP_MAX];
    size_t el = pdcbb_kv_enc_str(l1, 1024, e1);
    CHECK(pdcbb_kv_is_long(el));
    CHECK(pdcbb_kv_group(e1, el, g) == PDCBB_KV_GROUP_MAX && pdcbb_kv_group_is_long(g, PDCBB_KV_GROUP_MAX));
    CHECK(!pdcbb_kv_is_long(449));
    /* record values keep the full long key */
    uint8_t val[2000];
    size_t vs = pdcbb_kv_rec_val_size(e1, el, 0, 5);
    pdcbb_kv_rec_val_build(e1, el, 0, "hello", 5, val);
    unsigned flags;
    const uint8_t *fk, *v;
    size_t fkl;
    uint64_t vl;
    CHECK(pdcbb_kv_rec_val_parse(val, vs, &flags, &fk, &fkl, &v, &vl) == PDCBB_OK);
    CHECK(flags == PDCBB_KV_F_LONGKEY && fkl == el && memcmp(fk, e1, el) == 0 && vl == 5 && memcmp(v, "hello", 5) == 0);
    vs = pdcbb_kv_rec_val_size((const uint8_t *)"a", 2, 1, 0);
    pdcbb_kv_rec_val_build((const uint8_t *)"a", 2, 1, NULL, 0, val);
    CHECK(pdcbb_kv_rec_val_parse(val, vs, &flags, &fk, &fkl, &v, &vl) == PDCBB_OK && flags == PDCBB_KV_F_DELETED && vl == 0);
    /* key checks */
    CHECK(pdcbb_kv_key_check(PDCBB_KV_STRING, e1, el, 0, why, sizeof(why)) == PDCBB_OK);
    CHECK(pdcbb_kv_key_check(PDCBB_KV_STRING, e1, el, 100, why, sizeof(why)) == PDCBB_ERR_TOO_BIG);
    CHECK(strstr(why, "1024 bytes") != NULL);
    CHECK(pdcbb_kv_key_check(PDCBB_KV_STRING, (const uint8_t *)"", 1, 0, why, sizeof(why)) == PDCBB_ERR_INVAL);
    CHECK(pdcbb_kv_key_check(PDCBB_KV_INT, (const uint8_t *)"abc", 4, 0, why, sizeof(why)) == PDCBB_ERR_INVAL);
    CHECK(pdcbb_kv_key_check(PDCBB_KV_STRING, (const uint8_t *)"a\0b", 4, 0, why, sizeof(why)) == PDCBB_ERR_INVAL);
    /* meta round trip */
    pdcbb_kv_meta_t m = {.id = 42, .cont_id = 9, .key_type = 1, .sharding = 2, .max_key_len = 1024,
                         .max_value_len = 77, .nshards = 3, .shards = {2, 0, 1}}, m2;
    strcpy(m.name, "kvobj");
    uint8_t mb[2000];
    size_t ms = pdcbb_kv_meta_encode(&m, mb);
    CHECK(ms == pdcbb_kv_meta_size(&m));
    CHECK(pdcbb_kv_meta_decode(mb, ms, &m2) == PDCBB_OK);
    CHECK(memcmp(&m, &m2, sizeof(m)) == 0);
    CHECK(pdcbb_kv_meta_decode(mb, ms - 1, &m2) == PDCBB_ERR_STORE);
    /* wire records */
    pdcbb_kv_wrec_t w = {.op = PDCBB_KV_OP_SET, .key = e1, .key_len = el, .value = (const uint8_t *)"xyz", .value_len = 3}, r;
    uint8_t wb[2000];
    size_t ws = pdcbb_kv_wset_put(&w, wb), pos = 0;
    CHECK(ws == pdcbb_kv_wset_size(&w));
    CHECK(pdcbb_kv_wset_get(wb, ws, &pos, &r) == PDCBB_OK && pos == ws && r.key_len == el && r.value_len == 3);
    pos = 0;
    CHECK(pdcbb_kv_wset_get(wb, ws - 1, &pos, &r) == PDCBB_ERR_TRUNCATED);
    /* range shards are monotone in key order, hash shards in range */
    uint32_t last = 0;
    for (int64_t k = -5000; k <= 5000; k += 7) {
        uint8_t e[8];
        pdcbb_kv_enc_int(k * (INT64_MAX / 5000), e);
        uint32_t s = pdcbb_kv_shard_of(PDCBB_KV_SHARD_RANGE, PDCBB_KV_INT, 4, e, 8);
        CHECK(s >= last && s < 4);
        last = s;
    }
    CHECK(last == 3);
    const char *words[] = {" ", "0", "A", "Zebra", "a", "apple", "m", "zz", "~~~"};
    last = 0;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        uint8_t e[32];
        size_t n = pdcbb_kv_enc_str(words[i], strlen(words[i]), e);
        uint32_t s = pdcbb_kv_shard_of(PDCBB_KV_SHARD_RANGE, PDCBB_KV_STRING, 3, e, n);
        CHECK(s >= last && s < 3);
        last = s;
        CHECK(pdcbb_kv_shard_of(PDCBB_KV_SHARD_HASH, PDCBB_KV_STRING, 3, e, n) < 3);
    }
    CHECK(last == 2);
    free(l1), free(l2), free(s448);
    if (fails)
        fprintf(stderr, "%d checks failed\n", fails);
    else
        printf("kv layout: all checks passed\n");
    return fails != 0;
}
