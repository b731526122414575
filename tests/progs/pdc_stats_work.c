/*
 * pdc_stats_work.c - known work for `pdcbb stats` to count (66-stats.bats).
 *
 * usage: pdc_stats_work NOBJS BYTES NKV
 * Creates a container and NOBJS objects (each created on the home daemon of its name), tags
 * every object, opens a container that does not exist once (a NOT_FOUND reply on that name's
 * home daemon), writes BYTES bytes of region data into one object and reads them back, marks
 * the container persistent (a drain op), asks one tag query, creates a KV object and sets NKV
 * keys one call each. Prints what at least each daemon must have counted, one fact per line:
 *   metadata RANK N   N metadata requests sent to daemon RANK (object creates)
 *   error RANK N      N of them answered with an error
 *   drain RANK N      drain requests
 *   data_bytes N      region bytes written (the sum over daemons; and as many read back)
 *   query N           query requests (the sum over daemons)
 *   kv N              KV requests (the sum over daemons)
 * Exit status 0 when every call behaved as expected, 1 otherwise (the failing call on stderr).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"
#include "pdc_kv.h"
#include "pdcbb_proto.h"

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "pdc_stats_work: %s failed: %s\n", what, PDCbb_last_error_message());  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: pdc_stats_work NOBJS BYTES NKV\n");
        return 2;
    }
    unsigned nobjs = (unsigned)strtoul(argv[1], NULL, 10);
    uint64_t bytes = strtoull(argv[2], NULL, 10);
    unsigned nkv = (unsigned)strtoul(argv[3], NULL, 10);
    pdcid_t pdc = PDCinit("pdc");
    CHECK(pdc != 0, "PDCinit");
    unsigned n = (unsigned)PDCbb_nservers();
    unsigned *meta = calloc(n, sizeof(*meta));
    CHECK(meta != NULL, "calloc");

    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create("stats-cont", cprop);
    CHECK(cont != 0, "PDCcont_create");
    pdcid_t oprop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t dims[1] = {bytes ? bytes : 1};
    CHECK(PDCprop_set_obj_type(oprop, PDC_CHAR) == SUCCEED, "PDCprop_set_obj_type");
    CHECK(PDCprop_set_obj_dims(oprop, 1, dims) == SUCCEED, "PDCprop_set_obj_dims");
    pdcid_t first = 0;
    for (unsigned i = 0; i < nobjs; i++) {
        char name[64];
        snprintf(name, sizeof(name), "stats-obj-%u", i);
        pdcid_t o = PDCobj_create(cont, name, oprop);
        CHECK(o != 0, "PDCobj_create");
        meta[pdcbb_home_server(name, n)]++;
        CHECK(PDCobj_put_tag(o, "kind", "stats", PDC_STRING, 6) == SUCCEED, "PDCobj_put_tag");
        if (i == 0)
            first = o;
        else
            PDCobj_close(o);
    }
    /* A failure the daemons count as an error reply. */
    const char *missing = "stats-no-such-container";
    CHECK(PDCcont_open(missing, pdc) == 0, "PDCcont_open of a missing container");

    if (bytes > 0 && first != 0) {
        char *buf = malloc(bytes), *back = malloc(bytes);
        CHECK(buf != NULL && back != NULL, "malloc");
        for (uint64_t i = 0; i < bytes; i++)
            buf[i] = (char)(i * 7 + 1);
        uint64_t off[1] = {0}, len[1] = {bytes};
        pdcid_t reg = PDCregion_create(1, off, len);
        pdcid_t w = PDCregion_transfer_create(buf, PDC_WRITE, first, reg, reg);
        CHECK(w != 0 && PDCregion_transfer_start(w) == SUCCEED &&
                  PDCregion_transfer_wait(w) == SUCCEED,
              "region write");
        PDCregion_transfer_close(w);
        pdcid_t r = PDCregion_transfer_create(back, PDC_READ, first, reg, reg);
        CHECK(r != 0 && PDCregion_transfer_start(r) == SUCCEED &&
                  PDCregion_transfer_wait(r) == SUCCEED,
              "region read");
        PDCregion_transfer_close(r);
        CHECK(memcmp(buf, back, bytes) == 0, "reading back what was written");
        PDCregion_close(reg);
        free(buf);
        free(back);
    }
    if (first != 0)
        PDCobj_close(first);

    CHECK(PDCcont_persist(cont) == SUCCEED, "PDCcont_persist");
    int nres = 0;
    uint64_t *ids = NULL;
    CHECK(PDCobj_get_id("kind", "stats", 6, &nres, &ids) == SUCCEED, "PDCobj_get_id");
    CHECK(nres == (int)nobjs, "PDCobj_get_id finding every object");
    free(ids);

    pdc_kv_info_t ki = {.key_type = PDC_KV_STRING, .sharding = PDC_KV_SHARD_HASH};
    pdcid_t kv = PDCkv_create(cont, "stats-kv", &ki);
    CHECK(kv != 0, "PDCkv_create");
    for (unsigned i = 0; i < nkv; i++) {
        char key[32], val[32];
        snprintf(key, sizeof(key), "key-%u", i);
        snprintf(val, sizeof(val), "value-%u", i);
        pdc_kv_key_t k = PDC_KV_KEY_STR(key);
        CHECK(PDCkv_set(kv, 1, &k, val, strlen(val) + 1, NULL) == SUCCEED, "PDCkv_set");
    }
    PDCkv_close(kv);

    for (unsigned r = 0; r < n; r++)
        printf("metadata %u %u\n", r, meta[r]);
    printf("error %u 1\n", pdcbb_home_server(missing, n));
    printf("drain %u 1\n", pdcbb_home_server("stats-cont", n));
    printf("data_bytes %" PRIu64 "\n", bytes);
    printf("query 1\n");
    printf("kv %u\n", nkv);
    free(meta);
    PDCcont_close(cont);
    PDCprop_close(oprop);
    PDCprop_close(cprop);
    CHECK(PDCclose(pdc) == SUCCEED, "PDCclose");
    return 0;
}
