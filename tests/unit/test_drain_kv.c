/*
 * test_drain_kv.c - KV dumps of the drain format (stager/pdcbb_drain_kv.h): a dump written and read back record for record (a 1024-byte key, several
 * versions, a deletion marker, a 17 MiB value; keys encoded as common/pdcbb_kv.h), out-of-order
 * records refused by the writer,
 * verification against the manifest's counts, a flipped byte and a truncated file caught by
 * the reader, key parsing errors, and the view's get/list at several tags (shards merged).
 */
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"
#include "unit_check.h"

static char g_dir[4096];

static void path_of(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", g_dir, name);
}

static void test_keys(void)
{
    uint8_t k[PDCBB_KVD_KEY_MAX];
    size_t kl = 0;
    char err[256];
    CHECK_ERR(pdcbb_kvd_key_parse(PDCBB_KVK_INT, "-42", k, &kl, err, sizeof(err)), PDCBB_OK);
    CHECK(kl == 8 && pdcbb_kv_dec_int(k) == -42);
    CHECK_ERR(pdcbb_kvd_key_parse(PDCBB_KVK_INT, "4x", k, &kl, err, sizeof(err)), PDCBB_ERR_INVAL);
    CHECK(strstr(err, "'4x' is not an INT") != NULL);
    CHECK_ERR(pdcbb_kvd_key_parse(PDCBB_KVK_INT, "99999999999999999999", k, &kl, err, sizeof(err)),
              PDCBB_ERR_INVAL);
    CHECK_ERR(pdcbb_kvd_key_parse(PDCBB_KVK_FLOAT, "nan", k, &kl, err, sizeof(err)),
              PDCBB_ERR_INVAL);
    CHECK(strstr(err, "not a FLOAT") != NULL);
    CHECK_ERR(pdcbb_kvd_key_parse(PDCBB_KVK_FLOAT, "2.5e3", k, &kl, err, sizeof(err)), PDCBB_OK);
    CHECK(pdcbb_kv_dec_float(k) == 2500.0);
    CHECK_ERR(pdcbb_kvd_key_parse(PDCBB_KVK_STRING, "", k, &kl, err, sizeof(err)), PDCBB_ERR_INVAL);
    char big[1100];
    memset(big, 'x', sizeof(big));
    big[1025] = '\0';
    CHECK_ERR(pdcbb_kvd_key_parse(PDCBB_KVK_STRING, big, k, &kl, err, sizeof(err)),
              PDCBB_ERR_INVAL);
    big[1024] = '\0';
    CHECK_ERR(pdcbb_kvd_key_parse(PDCBB_KVK_STRING, big, k, &kl, err, sizeof(err)), PDCBB_OK);
    CHECK(kl == 1025 && k[1024] == 0);
    char txt[64];
    uint8_t a[8];
    pdcbb_kv_enc_float(0.1, a);
    pdcbb_kvd_key_format(PDCBB_KVK_FLOAT, a, 8, txt, sizeof(txt));
    CHECK(strtod(txt, NULL) == 0.1);

    uint64_t tags[] = {0, 3, 5, 9};
    uint32_t flags[] = {0, 0, PDCBB_KVR_DELETED, 0};
    CHECK(pdcbb_kvd_resolve(tags, flags, 4, 0) == 0);
    CHECK(pdcbb_kvd_resolve(tags, flags, 4, 4) == 1);
    CHECK(pdcbb_kvd_resolve(tags, flags, 4, 5) == -1);
    CHECK(pdcbb_kvd_resolve(tags, flags, 4, 8) == -1);
    CHECK(pdcbb_kvd_resolve(tags, flags, 4, PDCBB_KV_TAG_MAX) == 3);
    CHECK(pdcbb_kvd_resolve(tags + 1, flags + 1, 3, 2) == -1);
}

/* shard 0: "a" tags 0,4 ; "b" tag 2 then deleted at 6 ; 1024-byte key ; "big" 17 MiB value
 * shard 1: "c" tags 1,3 */
#define BIG ((size_t)17 << 20)

static int write_dumps(pdcbb_kvd_stats_t *s0, pdcbb_kvd_stats_t *s1)
{
    char p[4200], err[1024] = "";
    pdcbb_kvd_header_t h = {.key_type = PDCBB_KVK_STRING, .sharding = 1, .nshards = 2};
    snprintf(h.container, sizeof(h.container), "cont");
    snprintf(h.name, sizeof(h.name), "kv1");
    pdcbb_kvd_writer_t *w = NULL;
    path_of(p, sizeof(p), "s0.kvd");
    CHECK_ERR(pdcbb_kvd_create(p, &h, &w, err, sizeof(err)), PDCBB_OK);
    if (w == NULL)
        return -1;
    char longkey[1025];
    memset(longkey, 'L', 1024);
    longkey[1024] = '\0';
    uint8_t *big = malloc(BIG);
    for (size_t i = 0; i < BIG; i++)
        big[i] = (uint8_t)(i * 7 + 1);
    CHECK_ERR(pdcbb_kvd_add(w, "L", 2, 0, 0, "x", 1), PDCBB_OK); /* "L" < "LLL..." < "a" */
    CHECK_ERR(pdcbb_kvd_add(w, longkey, 1025, 7, 0, "long", 4), PDCBB_OK);
    CHECK_ERR(pdcbb_kvd_add(w, "a", 2, 0, 0, "a0", 2), PDCBB_OK);
    CHECK_ERR(pdcbb_kvd_add(w, "a", 2, 4, 0, "a4", 2), PDCBB_OK);
    CHECK_ERR(pdcbb_kvd_add(w, "a", 2, 4, 0, "dup", 3), PDCBB_ERR_INVAL); /* same tag */
    CHECK_ERR(pdcbb_kvd_add(w, "b", 2, 2, 0, "", 0), PDCBB_OK);              /* empty value */
    CHECK_ERR(pdcbb_kvd_add(w, "b", 2, 6, PDCBB_KVR_DELETED, NULL, 0), PDCBB_OK);
    CHECK_ERR(pdcbb_kvd_add(w, "big", 4, 1, 0, big, BIG), PDCBB_OK);
    CHECK_ERR(pdcbb_kvd_add(w, "a", 2, 9, 0, "late", 4), PDCBB_ERR_INVAL); /* out of order */
    CHECK_ERR(pdcbb_kvd_close(w, s0, err, sizeof(err)), PDCBB_OK);
    free(big);
    CHECK(s0->records == 7);
    h.rank = 1;
    path_of(p, sizeof(p), "s1.kvd");
    CHECK_ERR(pdcbb_kvd_create(p, &h, &w, err, sizeof(err)), PDCBB_OK);
    CHECK_ERR(pdcbb_kvd_add(w, "c", 2, 1, 0, "c1", 2), PDCBB_OK);
    CHECK_ERR(pdcbb_kvd_add(w, "c", 2, 3, 0, "c3", 2), PDCBB_OK);
    CHECK_ERR(pdcbb_kvd_close(w, s1, err, sizeof(err)), PDCBB_OK);
    return 0;
}

typedef struct collect {
    char keys[8][8];
    int n;
} collect_t;

static int collect_fn(const pdcbb_kvd_rec_t *r, void *arg)
{
    collect_t *c = arg;
    snprintf(c->keys[c->n++], 8, "%.*s", r->klen > 4 ? 3 : (int)r->klen - 1, (const char *)r->key);
    return 0;
}

static void test_dumps(void)
{
    pdcbb_kvd_stats_t s0, s1, got;
    char p0[4200], p1[4200], err[1024] = "";
    if (write_dumps(&s0, &s1) != 0)
        return;
    path_of(p0, sizeof(p0), "s0.kvd");
    path_of(p1, sizeof(p1), "s1.kvd");
    struct stat st;
    CHECK(stat(p0, &st) == 0 && (uint64_t)st.st_size == s0.bytes);

    /* read back */
    pdcbb_kvd_header_t h;
    pdcbb_kvd_reader_t *r = NULL;
    CHECK_ERR(pdcbb_kvd_open(p0, &h, &r, err, sizeof(err)), PDCBB_OK);
    CHECK(h.key_type == PDCBB_KVK_STRING && strcmp(h.name, "kv1") == 0 &&
          strcmp(h.container, "cont") == 0 && h.nshards == 2);
    pdcbb_kvd_rec_t rec;
    int n = 0, big_ok = 0, del_ok = 0;
    while (pdcbb_kvd_next(r, &rec, err, sizeof(err)) == PDCBB_OK) {
        n++;
        if (rec.klen == 4 && memcmp(rec.key, "big", 4) == 0) {
            big_ok = rec.vlen == BIG;
            for (size_t i = 0; big_ok && i < BIG; i += 4099)
                big_ok = rec.value[i] == (uint8_t)(i * 7 + 1);
        }
        if (rec.klen == 2 && rec.key[0] == 'b' && rec.tag == 6)
            del_ok = rec.flags == PDCBB_KVR_DELETED && rec.vlen == 0;
    }
    CHECK(n == 7 && big_ok && del_ok);
    pdcbb_kvd_close_reader(r);

    CHECK_ERR(pdcbb_kvd_verify(p0, &s0, &got, err, sizeof(err)), PDCBB_OK);
    pdcbb_kvd_stats_t wrong = s0;
    wrong.records++;
    CHECK_ERR(pdcbb_kvd_verify(p0, &wrong, &got, err, sizeof(err)), PDCBB_ERR_IO);
    CHECK(strstr(err, "the manifest says") != NULL);

    /* the view: both shards */
    pdcbb_kv_view_t *v = pdcbb_kv_view_new(PDCBB_KVK_STRING);
    CHECK_ERR(pdcbb_kv_view_load(v, p1, err, sizeof(err)), PDCBB_OK);
    CHECK_ERR(pdcbb_kv_view_load(v, p0, err, sizeof(err)), PDCBB_OK);
    CHECK_ERR(pdcbb_kv_view_sort(v, err, sizeof(err)), PDCBB_OK);
    CHECK(v->nrecs == 9);
    const pdcbb_kvd_rec_t *g = pdcbb_kv_view_get(v, "a", 2, 3);
    CHECK(g != NULL && g->vlen == 2 && memcmp(g->value, "a0", 2) == 0);
    g = pdcbb_kv_view_get(v, "a", 2, PDCBB_KV_TAG_MAX);
    CHECK(g != NULL && memcmp(g->value, "a4", 2) == 0);
    CHECK(pdcbb_kv_view_get(v, "b", 2, 6) == NULL);
    g = pdcbb_kv_view_get(v, "b", 2, 5);
    CHECK(g != NULL && g->vlen == 0 && g->tag == 2);
    CHECK(pdcbb_kv_view_get(v, "c", 2, 0) == NULL);
    CHECK(pdcbb_kv_view_get(v, "zz", 3, 100) == NULL);
    collect_t c = {0};
    uint64_t total = 0;
    pdcbb_kv_view_list(v, PDCBB_KV_TAG_MAX, 0, 0, collect_fn, &c, &total);
    /* visible at MAXTAG: L, LLL.., a, big, c (b deleted) */
    CHECK(total == 5 && c.n == 5);
    CHECK(strcmp(c.keys[0], "L") == 0 && strcmp(c.keys[1], "LLL") == 0 &&
          strcmp(c.keys[2], "a") == 0 && strcmp(c.keys[3], "big") == 0 &&
          strcmp(c.keys[4], "c") == 0);
    memset(&c, 0, sizeof(c));
    pdcbb_kv_view_list(v, 2, 1, 2, collect_fn, &c, &total);
    /* visible at 2: L(0), a(0), b(2), big(1), c(1) -> offset 1 count 2: a, b */
    CHECK(total == 5 && c.n == 2 && strcmp(c.keys[0], "a") == 0 && strcmp(c.keys[1], "b") == 0);
    pdcbb_kv_view_free(v);

    /* the same dump twice: a record in two dumps is an error */
    v = pdcbb_kv_view_new(PDCBB_KVK_STRING);
    CHECK_ERR(pdcbb_kv_view_load(v, p1, err, sizeof(err)), PDCBB_OK);
    CHECK_ERR(pdcbb_kv_view_load(v, p1, err, sizeof(err)), PDCBB_OK);
    CHECK_ERR(pdcbb_kv_view_sort(v, err, sizeof(err)), PDCBB_ERR_IO);
    pdcbb_kv_view_free(v);
    /* a key type that differs from the manifest's */
    v = pdcbb_kv_view_new(PDCBB_KVK_INT);
    CHECK_ERR(pdcbb_kv_view_load(v, p1, err, sizeof(err)), PDCBB_ERR_IO);
    pdcbb_kv_view_free(v);

    /* a flipped byte inside the big value: the block's CRC catches it */
    int fd = open(p0, O_RDWR);
    uint8_t b;
    off_t at = (off_t)(s0.bytes / 2);
    CHECK(pread(fd, &b, 1, at) == 1);
    b ^= 0x10;
    CHECK(pwrite(fd, &b, 1, at) == 1);
    CHECK_ERR(pdcbb_kvd_verify(p0, &s0, &got, err, sizeof(err)), PDCBB_ERR_IO);
    CHECK(strstr(err, "checksum mismatch") != NULL);
    v = pdcbb_kv_view_new(PDCBB_KVK_STRING);
    CHECK_ERR(pdcbb_kv_view_load(v, p0, err, sizeof(err)), PDCBB_ERR_IO);
    pdcbb_kv_view_free(v);
    b ^= 0x10;
    CHECK(pwrite(fd, &b, 1, at) == 1);
    CHECK_ERR(pdcbb_kvd_verify(p0, &s0, &got, err, sizeof(err)), PDCBB_OK);
    /* a flipped byte in the header */
    CHECK(pread(fd, &b, 1, 50) == 1);
    b ^= 1;
    CHECK(pwrite(fd, &b, 1, 50) == 1);
    CHECK_ERR(pdcbb_kvd_verify(p0, NULL, &got, err, sizeof(err)), PDCBB_ERR_IO);
    b ^= 1;
    CHECK(pwrite(fd, &b, 1, 50) == 1);
    /* truncated: the end block is missing */
    CHECK(ftruncate(fd, (off_t)s0.bytes - 10) == 0);
    CHECK_ERR(pdcbb_kvd_verify(p0, NULL, &got, err, sizeof(err)), PDCBB_ERR_IO);
    CHECK(strstr(err, "truncated") != NULL);
    close(fd);
    unlink(p0);
    unlink(p1);
}

/* kv_objects / kv_dumps written into a manifest and read back; a dump of an unknown KV object
 * is refused in a complete manifest. */
static void test_manifest(void)
{
    char path[4200], err[1024] = "";
    pdcbb_drain_t *m = pdcbb_drain_new();
    m->job_id = 5;
    m->uid = 1000;
    m->nservers = 1;
    m->servers_per_node = 1;
    m->user = strdup("u");
    m->instance = strdup("");
    pdcbb_drain_rank_t r = {.rank = 0, .node = "n0", .data_file = "data/rank-00000.dat"};
    CHECK_ERR(pdcbb_drain_add_rank(m, &r), PDCBB_OK);
    pdcbb_drain_kv_t k = {.id = 77, .name = "params", .container = "run1", .cont_id = 9,
                          .rank = 0, .key_type = PDCBB_KVK_FLOAT, .sharding = 2, .nshards = 1,
                          .max_key_len = 1024, .max_value_len = 5000};
    uint64_t c1[] = {30, 10}, c2[] = {30, 42};
    k.committed = c1;
    k.ncommitted = 2;
    CHECK_ERR(pdcbb_drain_add_kv(m, &k), PDCBB_OK);
    k.committed = c2;
    CHECK_ERR(pdcbb_drain_add_kv(m, &k), PDCBB_OK); /* the same id: kept once, tags merged */
    CHECK(m->nkvs == 1);
    CHECK(m->kvs[0].ncommitted == 3 && m->kvs[0].committed[0] == 10 &&
          m->kvs[0].committed[1] == 30 && m->kvs[0].committed[2] == 42);
    pdcbb_drain_kvdump_t d = {.kv = 77, .rank = 0, .file = "kv/rank-00000.0.kvd",
                              .records = 12, .bytes = 345, .crc32c = 0xdeadbeef};
    CHECK_ERR(pdcbb_drain_add_kvdump(m, &d), PDCBB_OK);
    path_of(path, sizeof(path), "manifest.yaml");
    CHECK_ERR(pdcbb_drain_write_manifest(m, path, err, sizeof(err)), PDCBB_OK);
    pdcbb_drain_t *b = NULL;
    CHECK_ERR(pdcbb_drain_load_manifest(path, &b, err, sizeof(err)), PDCBB_OK);
    if (b != NULL) {
        CHECK(b->nkvs == 1 && b->kvs[0].id == 77 && strcmp(b->kvs[0].name, "params") == 0 &&
              strcmp(b->kvs[0].container, "run1") == 0 && b->kvs[0].key_type == PDCBB_KVK_FLOAT &&
              b->kvs[0].sharding == 2 && b->kvs[0].max_value_len == 5000);
        CHECK(b->kvs[0].ncommitted == 3 && b->kvs[0].committed[2] == 42);
        CHECK(b->nkvdumps == 1 && b->kvdumps[0].kv == 77 && b->kvdumps[0].records == 12 &&
              b->kvdumps[0].bytes == 345 && b->kvdumps[0].crc32c == 0xdeadbeef &&
              strcmp(b->kvdumps[0].file, "kv/rank-00000.0.kvd") == 0);
        const pdcbb_drain_kv_t *f = pdcbb_drain_find_kv(b, NULL, "params", NULL);
        CHECK(f != NULL && f->id == 77);
        pdcbb_drain_free(b);
    }
    /* a dump of an unknown KV object */
    m->kvdumps[0].kv = 78;
    CHECK_ERR(pdcbb_drain_write_manifest(m, path, err, sizeof(err)), PDCBB_OK);
    b = NULL;
    CHECK_ERR(pdcbb_drain_load_manifest(path, &b, err, sizeof(err)), PDCBB_ERR_CONFIG);
    CHECK(strstr(err, "no KV object has id 78") != NULL);
    pdcbb_drain_free(b);
    /* a bad key type is named */
    FILE *fh = fopen(path, "r");
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, fh);
    fclose(fh);
    buf[n] = 0;
    char *t = strstr(buf, "key_type: FLOAT");
    CHECK(t != NULL);
    if (t) {
        memcpy(t + 10, "FLOAX", 5);
        fh = fopen(path, "w");
        fwrite(buf, 1, n, fh);
        fclose(fh);
        b = NULL;
        CHECK_ERR(pdcbb_drain_load_manifest(path, &b, err, sizeof(err)), PDCBB_ERR_CONFIG);
        CHECK(strstr(err, "key 'key_type'") != NULL);
        pdcbb_drain_free(b);
    }
    unlink(path);
    pdcbb_drain_free(m);
}

int main(void)
{
    snprintf(g_dir, sizeof(g_dir), "/tmp/test_drain_kv.XXXXXX");
    if (mkdtemp(g_dir) == NULL)
        return 1;
    test_keys();
    test_dumps();
    test_manifest();
    rmdir(g_dir);
    UNIT_DONE("drain_kv");
}
