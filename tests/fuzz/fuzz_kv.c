/*
 * fuzz_kv.c - the KV encodings of common/pdcbb_kv.c that come from a message or a store:
 * KV_SET records as the daemon checks a batch (pdcbb_kv_wset_get, pdcbb_kv_key_check, then the
 * record key and value it would store for each), KV_LIST records as the client reads a reply
 * (pdcbb_kv_wlist_get, pdcbb_kv_key_check, pdcbb_kv_key_print), KV meta records
 * (pdcbb_kv_meta_decode) and record values (pdcbb_kv_rec_val_parse) as the daemon and the drain
 * read them from LMDB.
 *
 * Input: byte 0 the mode (0 set records, 1 list records, 2 meta record, 3 record value), byte 1
 * the key type (modulo 3), bytes 2-3 the object's max_key_len (little-endian), the rest the
 * bytes decoded. Properties: records stay inside the buffer and never go backwards; what a key
 * check accepts gives a record key and value that parse back to the same parts; a decoded meta
 * record encodes back to the same bytes.
 */
#include <string.h>

#include "fuzz_target.h"
#include "pdcbb_kv.h"

/* What the daemon stores for an accepted key: the LMDB key and value must parse back. */
static void fuzz_stored_record(const pdcbb_kv_wrec_t *w, unsigned key_type)
{
    uint8_t rk[PDCBB_KV_RECKEY_MAX];
    size_t rkl = pdcbb_kv_rec_key(0x3000000000000001ull, w->key, w->key_len, 7, rk);
    uint64_t kvid, tag;
    const uint8_t *group;
    size_t glen;
    FUZZ_REQUIRE(rkl <= sizeof(rk));
    FUZZ_REQUIRE(pdcbb_kv_rec_key_parse(rk, rkl, &kvid, &group, &glen, &tag) == 1 || rkl < 17);
    int deleted = w->op == PDCBB_KV_OP_UNLINK;
    uint64_t vlen = w->op == PDCBB_KV_OP_SET ? w->value_len : 0;
    size_t size = pdcbb_kv_rec_val_size(w->key, w->key_len, deleted, vlen);
    uint8_t *val = malloc(size);
    FUZZ_REQUIRE(val != NULL);
    pdcbb_kv_rec_val_build(w->key, w->key_len, deleted, w->value, vlen, val);
    unsigned flags;
    const uint8_t *fk, *value;
    size_t fklen;
    uint64_t got_len;
    FUZZ_REQUIRE(pdcbb_kv_rec_val_parse(val, size, &flags, &fk, &fklen, &value, &got_len) ==
                 PDCBB_OK);
    FUZZ_REQUIRE(got_len == (deleted ? 0 : vlen));
    FUZZ_REQUIRE(fk == NULL || (fklen == w->key_len && memcmp(fk, w->key, fklen) == 0));
    free(val);
    (void)pdcbb_kv_shard_of(PDCBB_KV_SHARD_RANGE, key_type, 7, w->key, w->key_len);
    (void)pdcbb_kv_shard_of(PDCBB_KV_SHARD_HASH, key_type, 7, w->key, w->key_len);
}

static void fuzz_set_records(const uint8_t *b, size_t len, unsigned key_type, uint32_t max_key)
{
    size_t pos = 0;
    pdcbb_kv_wrec_t w;
    char why[200];
    while (pos < len) {
        size_t before = pos;
        if (pdcbb_kv_wset_get(b, len, &pos, &w) != PDCBB_OK)
            return;
        FUZZ_REQUIRE(pos > before && pos <= len);
        if (pdcbb_kv_key_check(key_type, w.key, w.key_len, max_key, why, sizeof(why)) == PDCBB_OK)
            fuzz_stored_record(&w, key_type);
    }
}

static void fuzz_list_records(const uint8_t *b, size_t len, unsigned key_type)
{
    size_t pos = 0;
    pdcbb_kv_wrec_t w;
    char why[200], printed[128];
    while (pos < len) {
        size_t before = pos;
        if (pdcbb_kv_wlist_get(b, len, &pos, &w) != PDCBB_OK)
            return;
        FUZZ_REQUIRE(pos > before && pos <= len);
        if (pdcbb_kv_key_check(key_type, w.key, w.key_len, 0, why, sizeof(why)) == PDCBB_OK)
            pdcbb_kv_key_print(key_type, w.key, w.key_len, printed, sizeof(printed));
    }
}

static void fuzz_meta(const uint8_t *b, size_t len)
{
    pdcbb_kv_meta_t m;
    if (pdcbb_kv_meta_decode(b, len, &m) != PDCBB_OK)
        return;
    size_t size = pdcbb_kv_meta_size(&m);
    FUZZ_REQUIRE(size == len);
    uint8_t *again = malloc(size);
    FUZZ_REQUIRE(again != NULL);
    FUZZ_REQUIRE(pdcbb_kv_meta_encode(&m, again) == size);
    /* byte 3 is reserved: the decoder does not look at it */
    FUZZ_REQUIRE(memcmp(again, b, 3) == 0 && memcmp(again + 4, b + 4, size - 4) == 0);
    free(again);
}

static void fuzz_rec_value(const uint8_t *b, size_t len)
{
    unsigned flags;
    const uint8_t *fk, *value;
    size_t fklen;
    uint64_t vlen;
    if (pdcbb_kv_rec_val_parse(b, len, &flags, &fk, &fklen, &value, &vlen) != PDCBB_OK)
        return;
    FUZZ_REQUIRE(value >= b && value + vlen == b + len);
    FUZZ_REQUIRE(fk == NULL || (fk >= b && fk + fklen <= value));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    unsigned key_type = data[1] % 3;
    uint32_t max_key = (uint32_t)data[2] | (uint32_t)data[3] << 8;
    const uint8_t *b = data + 4;
    size_t len = size - 4;
    switch (data[0] % 4) {
    case 0:
        fuzz_set_records(b, len, key_type, max_key);
        break;
    case 1:
        fuzz_list_records(b, len, key_type);
        break;
    case 2:
        fuzz_meta(b, len);
        break;
    default:
        fuzz_rec_value(b, len);
        break;
    }
    return 0;
}
