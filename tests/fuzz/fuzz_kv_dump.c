/*
 * fuzz_kv_dump.c - the reader of a drained KV object's dump files (stager/drain_kv.c, docs/
 * DRAIN-FORMAT.md "KV objects"), which the drain's owner can change and readers of the drain
 * load: pdcbb_kvd_open and pdcbb_kvd_next record by record (pdcbb kv, verify), and a view
 * (pdcbb_kv_view_load, _sort, _get, _list: the read-only API and stage-in).
 *
 * Input: byte 0 the mode (0 records one by one, 1 a view of key type byte 1 modulo 3); the rest
 * is the dump file, written into a directory of this process. Properties: records have their
 * key and value inside what was read; a view's listing visits at most as many keys as it holds
 * and each key it lists is found by a get at the same tag.
 */
#include <string.h>

#include "fuzz_target.h"
#include "pdcbb_drain_kv.h"

static void fuzz_records(const char *path)
{
    char err[1024];
    pdcbb_kvd_header_t h;
    pdcbb_kvd_reader_t *r = NULL;
    if (pdcbb_kvd_open(path, &h, &r, err, sizeof(err)) != PDCBB_OK)
        return;
    FUZZ_REQUIRE(memchr(h.container, '\0', sizeof(h.container)) &&
                 memchr(h.name, '\0', sizeof(h.name)));
    pdcbb_kvd_rec_t rec;
    pdcbb_err_t rc;
    while ((rc = pdcbb_kvd_next(r, &rec, err, sizeof(err))) == PDCBB_OK)
        FUZZ_REQUIRE(rec.key != NULL || rec.klen == 0);
    pdcbb_kvd_stats_t st;
    pdcbb_kvd_read_stats(r, &st);
    pdcbb_kvd_close_reader(r);
}

typedef struct fuzz_list_state {
    const pdcbb_kv_view_t *view;
    uint64_t tag, listed;
} fuzz_list_state_t;

static int fuzz_listed(const pdcbb_kvd_rec_t *rec, void *arg)
{
    fuzz_list_state_t *s = arg;
    s->listed++;
    FUZZ_REQUIRE(pdcbb_kv_view_get(s->view, rec->key, rec->klen, s->tag) != NULL);
    return 0;
}

static void fuzz_view(const char *path, uint32_t key_type)
{
    char err[1024];
    pdcbb_kv_view_t *v = pdcbb_kv_view_new(key_type);
    FUZZ_REQUIRE(v != NULL);
    if (pdcbb_kv_view_load(v, path, err, sizeof(err)) == PDCBB_OK &&
        pdcbb_kv_view_sort(v, err, sizeof(err)) == PDCBB_OK) {
        for (uint64_t tag = 0; tag < 3; tag++) {
            fuzz_list_state_t s = {.view = v, .tag = tag == 2 ? UINT64_MAX : tag};
            uint64_t total = 0;
            pdcbb_kv_view_list(v, s.tag, 0, 0, fuzz_listed, &s, &total);
            FUZZ_REQUIRE(s.listed == total && total <= v->nrecs);
        }
    }
    pdcbb_kv_view_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    char path[4096];
    fuzz_write_file("rank-00000.0.kvd", data + 2, size - 2, path, sizeof(path));
    if (data[0] % 2 == 0)
        fuzz_records(path);
    else
        fuzz_view(path, data[1] % 3);
    return 0;
}
