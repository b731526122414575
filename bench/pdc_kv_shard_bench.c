/*
 * pdc_kv_shard_bench - KV object sharding: PDC_KV_SHARD_HASH against PDC_KV_SHARD_RANGE.
 *
 *   pdcbb run --nodes D -- pdc_kv_shard_bench [N] [VALUE_BYTES] [PAGE]
 *
 * For both sharding modes and four key sets of N keys each (default 200000, VALUE_BYTES 100,
 * PAGE 1000; PDCBB_BENCH_QUICK=1: N 2000):
 *   int-uniform     random 64-bit integers
 *   int-seq         0..N-1 (small consecutive integers: skewed for a fixed range split)
 *   str-uniform     16 random lowercase letters
 *   str-prefix      "/project/climate/run-0042/output/var/" + a counter (one long common
 *                   prefix: skewed for a range split on the first bytes)
 * it measures from one client: the set rate (set_list in batches of 10000 records), the
 * listing rate (get_list pages of PAGE records from offset 0 to the end, each page asked from
 * where the previous one ended), the rate of one get_list page deep in the object (offset N/2),
 * and the records per shard (the shard function of common/pdcbb_kv.h on the same keys).
 * One line per (mode, key set): "kvshard mode=... keys=... set_rec_s=... list_rec_s=...
 * deep_page_ms=... per_shard=a/b/c... imbalance=max/mean".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pdc.h"
#include "pdc_kv.h"
#include "pdcbb_kv.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

int main(int argc, char **argv)
{
    int quick = getenv("PDCBB_BENCH_QUICK") && atoi(getenv("PDCBB_BENCH_QUICK"));
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : quick ? 2000 : 200000;
    uint64_t vbytes = argc > 2 ? strtoull(argv[2], NULL, 10) : 100;
    uint64_t page = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000;
    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0) {
        fprintf(stderr, "PDCinit: %s\n", PDCbb_last_error_message());
        return 1;
    }
    pdcid_t cont = PDCcont_create("kvbench", PDCprop_create(PDC_CONT_CREATE, pdc));
    if (cont == 0) {
        fprintf(stderr, "container: %s\n", PDCbb_last_error_message());
        return 1;
    }
    static const char *const sets[] = {"int-uniform", "int-seq", "str-uniform", "str-prefix"};
    static const char *const modes[] = {"hash", "range"};
    uint8_t *val = malloc(vbytes ? vbytes : 1);
    memset(val, 'v', vbytes);
    pdc_kv_t *recs = calloc(n, sizeof(*recs));
    char *strs = malloc(n * 64);
    int rc = 0;
    for (int si = 0; si < 4; si++) {
        int is_int = si < 2;
        rs = 88172645463325252ull + (uint64_t)si;
        for (uint64_t i = 0; i < n; i++) {
            if (si == 0)
                recs[i].key = PDC_KV_KEY_INT((int64_t)rnd());
            else if (si == 1)
                recs[i].key = PDC_KV_KEY_INT((int64_t)i);
            else {
                char *s = strs + i * 64;
                if (si == 2) {
                    for (int j = 0; j < 16; j++)
                        s[j] = (char)('a' + rnd() % 26);
                    s[16] = 0;
                } else {
                    snprintf(s, 64, "/project/climate/run-0042/output/var/%010llu", (unsigned long long)i);
                }
                recs[i].key = PDC_KV_KEY_STR(s);
            }
            recs[i].value = val;
            recs[i].value_len = vbytes;
        }
        for (int mi = 0; mi < 2; mi++) {
            char name[64];
            snprintf(name, sizeof(name), "%s-%s", sets[si], modes[mi]);
            pdc_kv_info_t info = {is_int ? PDC_KV_INT : PDC_KV_STRING,
                                  mi ? PDC_KV_SHARD_RANGE : PDC_KV_SHARD_HASH, 0, 0, 0};
            pdcid_t kv = PDCkv_create(cont, name, &info);
            pdc_kv_info_t got;
            if (kv == 0 || PDCkv_get_info(kv, &got) != SUCCEED) {
                fprintf(stderr, "create %s: %s\n", name, PDCbb_last_error_message());
                return 1;
            }
            /* records per shard, with the library's own shard function */
            uint64_t per[PDCBB_KV_SHARDS_MAX] = {0};
            for (uint64_t i = 0; i < n; i++) {
                uint8_t enc[PDCBB_KV_ENC_MAX];
                size_t el;
                if (is_int) {
                    pdcbb_kv_enc_int(recs[i].key.i, enc);
                    el = 8;
                } else {
                    el = pdcbb_kv_enc_str(recs[i].key.str, strlen(recs[i].key.str), enc);
                }
                per[pdcbb_kv_shard_of(got.sharding, got.key_type, got.nshards, enc, el)]++;
            }
            double t0 = now();
            for (uint64_t off = 0; off < n; off += 10000) {
                uint64_t m = n - off < 10000 ? n - off : 10000;
                if (PDCkv_set_list(kv, 1, m, recs + off, NULL) != SUCCEED) {
                    fprintf(stderr, "set_list: %s\n", PDCbb_last_error_message());
                    return 1;
                }
            }
            double tset = now() - t0;
            t0 = now();
            uint64_t seen = 0;
            for (;;) {
                pdc_kv_t *l = NULL;
                uint64_t got_n = 0;
                if (PDCkv_get_list(kv, PDC_KV_MAXTAG, seen, page, &l, &got_n, NULL) != SUCCEED) {
                    fprintf(stderr, "get_list: %s\n", PDCbb_last_error_message());
                    return 1;
                }
                seen += got_n;
                PDCkv_list_free(l);
                if (got_n < page)
                    break;
            }
            double tlist = now() - t0;
            if (seen != n) {
                /* int-uniform may draw a key twice: count distinct ones */
                uint64_t num = 0;
                PDCkv_get_num(kv, PDC_KV_MAXTAG, &num, NULL);
                if (num != seen) {
                    fprintf(stderr, "%s: listed %llu of %llu keys\n", name, (unsigned long long)seen,
                            (unsigned long long)num);
                    rc = 1;
                }
            }
            t0 = now();
            pdc_kv_t *l = NULL;
            uint64_t got_n = 0;
            PDCkv_get_list(kv, PDC_KV_MAXTAG, n / 2, page, &l, &got_n, NULL);
            PDCkv_list_free(l);
            double tdeep = now() - t0;
            uint64_t mx = 0;
            char pers[512] = "";
            size_t pl = 0;
            for (uint32_t s = 0; s < got.nshards; s++) {
                if (per[s] > mx)
                    mx = per[s];
                pl += (size_t)snprintf(pers + pl, sizeof(pers) - pl, "%s%llu", s ? "/" : "",
                                       (unsigned long long)per[s]);
            }
            printf("kvshard mode=%s keys=%s n=%llu shards=%u set_rec_s=%.0f list_rec_s=%.0f "
                   "deep_page_ms=%.2f per_shard=%s imbalance=%.2f\n",
                   modes[mi], sets[si], (unsigned long long)n, got.nshards, (double)n / tset,
                   (double)seen / tlist, tdeep * 1e3, pers, (double)mx * got.nshards / (double)n);
            fflush(stdout);
            PDCkv_delete(kv);
        }
    }
    free(recs);
    free(strs);
    free(val);
    PDCcont_close(cont);
    PDCclose(pdc);
    return rc;
}
