/*
 * test_drain.c - the drain format library (stager/pdcbb_drain.h): a model built in memory with
 * data files in a temporary directory, written as two parts, finished, opened and compared;
 * box reads (static, unlimited, placement map newest-wins and zero fill), verification (good,
 * a flipped byte, a truncated file), reads that check every extent they serve (a flipped byte,
 * a cut or missing data file, each extent read and checked once, --partial's zeros), manifests the loader must refuse, with the key named, and
 * the job's drain directory: destination checks, creation under a fresh name, finding it by its
 * identity, the trust check and FAILED reports.
 *
 * Usage: test_drain [--keep DIR]   (--keep: build the drain in DIR and leave it there)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdcbb_crc32c.h"
#include "pdcbb_drain.h"
#include "unit_check.h"

#define JOB 77u

static char g_root[4096]; /* the destination */
static char g_dir[4096];  /* g_root/pdcbb.77 */

/* ---- building the drain ---- */

typedef struct data_file {
    int fd;
    uint64_t size;
    uint32_t rank;
    char name[64];
} data_file_t;

static data_file_t g_files[2];

static void add_data(pdcbb_drain_t *m, uint64_t obj, uint32_t rank, uint64_t obj_off,
                     const void *bytes, uint64_t len)
{
    data_file_t *f = &g_files[rank];
    pdcbb_drain_extent_t e = {.object_id = obj, .rank = rank, .object_offset = obj_off,
                              .length = len, .file = f->name, .file_offset = f->size,
                              .crc32c = pdcbb_crc32c(0, bytes, (size_t)len)};
    CHECK(pwrite(f->fd, bytes, (size_t)len, (off_t)f->size) == (ssize_t)len);
    f->size += len;
    CHECK_ERR(pdcbb_drain_add_extent(m, &e), PDCBB_OK);
}

/* Object A (id 201): float [4][6], rows 0-1 on rank 0, row 2 on rank 1, row 3 never written. */
static float a_val(int r, int c)
{
    return (r < 3) ? (float)(r * 10 + c) + 0.5f : 0.0f;
}
/* Object B (id 202): int32 [unlimited][3], 5 rows on rank 0 in two extents. */
static int32_t b_val(int r, int c)
{
    return r < 5 ? -(r * 3 + c) - 1 : 0;
}
/* Object C (id 203): uint16 [8][8], REGION_DYNAMIC: rank 0 holds all (seq 1), rank 1 holds rows
 * 2-4 of a newer write to rows 2-5 x cols 2-5 (seq 5); row 5 of that box reads zero. */
static uint16_t c_val(int r, int c)
{
    if (r >= 2 && r <= 5 && c >= 2 && c <= 5)
        return r <= 4 ? (uint16_t)(2000 + r * 8 + c) : 0;
    return (uint16_t)(1000 + r * 8 + c);
}

static void model_job(pdcbb_drain_t *m)
{
    m->job_id = JOB;
    m->user = strdup("al\"ice: o'brien \xc3\xa9");
    m->uid = 1000;
    m->nservers = 2;
    m->servers_per_node = 1;
}

static void build_parts(pdcbb_drain_t *p0, pdcbb_drain_t *p1)
{
    model_job(p0);
    model_job(p1);
    pdcbb_drain_rank_t r0 = {0, "node0", "data/rank-00000.dat", 0, 0.25};
    pdcbb_drain_rank_t r1 = {1, "node1", "data/rank-00001.dat", 0, 0.5};

    int32_t step = 42;
    const char *sval = "hello\nworld";
    pdcbb_drain_tag_t ctags[2] = {{"step", 0, (uint8_t *)&step, 4},
                                  {"note: \"x\"", 4, (uint8_t *)sval, (uint32_t)strlen(sval) + 1}};
    uint64_t ids[2] = {201, 202};
    pdcbb_drain_cont_t cont = {.id = 100, .name = "run1", .lifetime = 1, .rank = 0,
                               .tags = ctags, .ntags = 2, .obj_ids = ids, .nobj_ids = 2};
    CHECK_ERR(pdcbb_drain_add_cont(p0, &cont, NULL), PDCBB_OK);

    double dt = 0.125;
    pdcbb_drain_tag_t otags[1] = {{"dt", 2, (uint8_t *)&dt, 8}};
    pdcbb_drain_object_t a = {.id = 201, .cont_id = 100, .name = "run1/temperature",
                              .container = "run1", .rank = 1, .type = 1, .element_size = 4,
                              .partition = 1, .ndim = 2, .dims = {4, 6}, .app_name = "app",
                              .data_loc = "", .tags_str = "k=v", .tags = otags, .ntags = 1};
    pdcbb_drain_object_t b = {.id = 202, .cont_id = 100, .name = "run1/grow",
                              .container = "run1", .rank = 0, .type = 14, .element_size = 4,
                              .partition = 0, .consistency = 1, .user_id = 3, .time_step = 9,
                              .ndim = 2, .dims = {PDCBB_DIM_UNLIMITED, 3}};
    pdcbb_drain_map_entry_t map[2];
    uint64_t o1[2] = {0, 0}, s1[2] = {8, 8}, o2[2] = {2, 2}, s2[2] = {4, 4};
    map[0].seq = 5; /* out of order on purpose: sorted by seq on open */
    map[0].rank = 1;
    pdcbb_box_make(&map[0].box, 2, o2, s2);
    map[1].seq = 1;
    map[1].rank = 0;
    pdcbb_box_make(&map[1].box, 2, o1, s1);
    pdcbb_drain_object_t c = {.id = 203, .name = "dyn", .container = "", .rank = 1,
                              .type = 13, .element_size = 2, .partition = 2, .ndim = 2,
                              .dims = {8, 8}, .map = map, .nmap = 2};
    CHECK_ERR(pdcbb_drain_add_object(p0, &b, NULL), PDCBB_OK);
    /* A grown object: its extent (current_dims) beyond any data, none written. */
    pdcbb_drain_object_t g = {.id = 204, .cont_id = 100, .name = "run1/grown",
                              .container = "run1", .rank = 0, .type = 14, .element_size = 4,
                              .ndim = 2, .dims = {PDCBB_DIM_UNLIMITED, 3},
                              .has_current_dims = 1, .current_rows = 12};
    CHECK_ERR(pdcbb_drain_add_object(p0, &g, NULL), PDCBB_OK);
    CHECK_ERR(pdcbb_drain_add_object(p1, &a, NULL), PDCBB_OK);
    CHECK_ERR(pdcbb_drain_add_object(p1, &c, NULL), PDCBB_OK);

    float arow[6];
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 6; k++)
            arow[k] = a_val(r, k);
        add_data(r < 2 ? p0 : p1, 201, r < 2 ? 0 : 1, (uint64_t)r * 24, arow, 24);
    }
    int32_t bv[15];
    for (int i = 0; i < 15; i++)
        bv[i] = b_val(i / 3, i % 3);
    add_data(p0, 202, 0, 24, bv + 6, 36); /* rows 2-4 first: extents need no order */
    add_data(p0, 202, 0, 0, bv, 24);
    uint16_t cv[64];
    for (int i = 0; i < 64; i++)
        cv[i] = (uint16_t)(1000 + i);
    add_data(p0, 203, 0, 0, cv, 128);
    for (int i = 0; i < 64; i++)
        cv[i] = (uint16_t)(2000 + i);
    add_data(p1, 203, 1, 32, cv + 16, 48);

    r0.data_bytes = g_files[0].size;
    r1.data_bytes = g_files[1].size;
    CHECK_ERR(pdcbb_drain_add_rank(p0, &r0), PDCBB_OK);
    CHECK_ERR(pdcbb_drain_add_rank(p1, &r1), PDCBB_OK);
}

/* ---- checks of an opened drain ---- */

static void check_model(pdcbb_drain_t *m)
{
    CHECK(m->job_id == JOB && m->uid == 1000 && m->nservers == 2 && m->servers_per_node == 1);
    CHECK(m->user != NULL && strcmp(m->user, "al\"ice: o'brien \xc3\xa9") == 0);
    CHECK(m->nranks == 2 && m->ranks[0].rank == 0 && m->ranks[1].rank == 1);
    CHECK(strcmp(m->ranks[1].node, "node1") == 0 && m->ranks[1].seconds == 0.5);
    CHECK(strcmp(m->ranks[0].data_file, "data/rank-00000.dat") == 0);
    CHECK(m->ranks[0].data_bytes == g_files[0].size);
    CHECK(m->nconts == 1 && m->nobjs == 4 && m->nextents == 7);

    const pdcbb_drain_cont_t *c = pdcbb_drain_find_cont(m, "run1");
    CHECK(c != NULL && c == pdcbb_drain_find_cont_id(m, 100));
    if (c != NULL) {
        CHECK(c->lifetime == 1 && c->rank == 0 && c->ntags == 2 && c->nobj_ids == 2);
        CHECK(c->obj_ids[0] == 201 && c->obj_ids[1] == 202);
        CHECK(strcmp(c->tags[0].name, "step") == 0 && c->tags[0].type == 0 &&
              c->tags[0].len == 4 && *(int32_t *)c->tags[0].value == 42);
        CHECK(strcmp(c->tags[1].name, "note: \"x\"") == 0 && c->tags[1].type == 4 &&
              c->tags[1].len == 12 && strcmp((char *)c->tags[1].value, "hello\nworld") == 0);
    }
    const pdcbb_drain_object_t *a = pdcbb_drain_find_object(m, "run1/temperature");
    CHECK(a != NULL && a == pdcbb_drain_find_object_id(m, 201));
    if (a != NULL) {
        CHECK(a->cont_id == 100 && strcmp(a->container, "run1") == 0 && a->rank == 1);
        CHECK(a->type == 1 && a->element_size == 4 && a->partition == 1 && a->ndim == 2);
        CHECK(a->dims[0] == 4 && a->dims[1] == 6 && strcmp(a->app_name, "app") == 0);
        CHECK(strcmp(a->tags_str, "k=v") == 0 && a->ntags == 1 && a->nmap == 0);
        CHECK(a->ntags == 1 && a->tags[0].type == 2 && *(double *)a->tags[0].value == 0.125);
        CHECK(pdcbb_drain_object_bytes(m, a) == 72);
    }
    const pdcbb_drain_object_t *b = pdcbb_drain_find_object_id(m, 202);
    CHECK(b != NULL);
    if (b != NULL) {
        uint64_t shape[PDCBB_REGION_NDIM_MAX];
        CHECK(b->dims[0] == PDCBB_DIM_UNLIMITED && b->dims[1] == 3);
        CHECK(b->consistency == 1 && b->user_id == 3 && b->time_step == 9 && b->type == 14);
        CHECK_ERR(pdcbb_drain_object_shape(m, b, shape), PDCBB_OK);
        CHECK(shape[0] == 5 && shape[1] == 3);
        uint64_t first, count;
        pdcbb_drain_object_extents(m, 202, &first, &count);
        CHECK(count == 2 && m->extents[first].object_offset == 0);
    }
    const pdcbb_drain_object_t *gr = pdcbb_drain_find_object_id(m, 204);
    CHECK(gr != NULL);
    if (gr != NULL) {
        uint64_t shape[PDCBB_REGION_NDIM_MAX];
        CHECK(gr->has_current_dims == 1 && gr->current_rows == 12);
        CHECK_ERR(pdcbb_drain_object_shape(m, gr, shape), PDCBB_OK);
        CHECK(shape[0] == 12 && shape[1] == 3);
    }
    if (b != NULL)
        CHECK(b->has_current_dims == 0); /* written without: as a drain of older daemons */
    const pdcbb_drain_object_t *d = pdcbb_drain_find_object(m, "dyn");
    CHECK(d != NULL);
    if (d != NULL) {
        CHECK(d->nmap == 2 && d->map[0].seq == 1 && d->map[1].seq == 5);
        CHECK(d->map[1].rank == 1 && d->map[1].box.off[0] == 2 && d->map[1].box.size[1] == 4);
        CHECK(d->container[0] == '\0' && d->cont_id == 0 && d->partition == 2);
    }
    CHECK(pdcbb_drain_find_object(m, "nope") == NULL && pdcbb_drain_find_cont(m, "x") == NULL);
    CHECK(strcmp(pdcbb_drain_type_name(18), "PDC_SIZE_T") == 0 &&
          pdcbb_drain_type_name(19) == NULL && pdcbb_drain_type_parse("PDC_UINT16") == 13);
    CHECK(pdcbb_drain_partition_parse("PDC_REGION_LOCAL") == 3 &&
          pdcbb_drain_partition_parse("PDCBB_REGION_STRIPED") == 4 &&
          strcmp(pdcbb_drain_partition_name(4), "PDCBB_REGION_STRIPED") == 0 &&
          pdcbb_drain_partition_name(5) == NULL);
}

static void check_reads(pdcbb_drain_t *m)
{
    char err[PDCBB_DRAIN_ERR_LEN];
    const pdcbb_drain_object_t *a = pdcbb_drain_find_object_id(m, 201);
    const pdcbb_drain_object_t *b = pdcbb_drain_find_object_id(m, 202);
    const pdcbb_drain_object_t *c = pdcbb_drain_find_object_id(m, 203);
    if (a == NULL || b == NULL || c == NULL)
        return;
    pdcbb_box_t box;
    float fa[24];
    uint64_t off[2] = {0, 0}, size[2] = {4, 6};
    pdcbb_box_make(&box, 2, off, size);
    memset(fa, 0xff, sizeof(fa));
    CHECK_ERR(pdcbb_drain_read_box(m, a, &box, fa, err, sizeof(err)), PDCBB_OK);
    int bad = 0;
    for (int i = 0; i < 24; i++)
        bad += fa[i] != a_val(i / 6, i % 6);
    CHECK(bad == 0);

    off[0] = 1, off[1] = 2, size[0] = 3, size[1] = 3; /* rows 1-3 (3 is zero), cols 2-4 */
    pdcbb_box_make(&box, 2, off, size);
    CHECK_ERR(pdcbb_drain_read_box(m, a, &box, fa, err, sizeof(err)), PDCBB_OK);
    bad = 0;
    for (int i = 0; i < 9; i++)
        bad += fa[i] != a_val(1 + i / 3, 2 + i % 3);
    CHECK(bad == 0);

    off[0] = 4, size[0] = 1; /* outside the dims */
    pdcbb_box_make(&box, 2, off, size);
    CHECK_ERR(pdcbb_drain_read_box(m, a, &box, fa, err, sizeof(err)), PDCBB_ERR_BAD_REGION);

    int32_t ib[21];
    off[0] = 0, off[1] = 0, size[0] = 7, size[1] = 3; /* past the 5 rows written: zeros */
    pdcbb_box_make(&box, 2, off, size);
    CHECK_ERR(pdcbb_drain_read_box(m, b, &box, ib, err, sizeof(err)), PDCBB_OK);
    bad = 0;
    for (int i = 0; i < 21; i++)
        bad += ib[i] != b_val(i / 3, i % 3);
    CHECK(bad == 0);

    uint16_t us[64];
    off[0] = 0, off[1] = 0, size[0] = 8, size[1] = 8;
    pdcbb_box_make(&box, 2, off, size);
    CHECK_ERR(pdcbb_drain_read_box(m, c, &box, us, err, sizeof(err)), PDCBB_OK);
    bad = 0;
    for (int i = 0; i < 64; i++)
        bad += us[i] != c_val(i / 8, i % 8);
    CHECK(bad == 0);
    off[0] = 4, off[1] = 1, size[0] = 3, size[1] = 5; /* crosses the newer box's edge */
    pdcbb_box_make(&box, 2, off, size);
    CHECK_ERR(pdcbb_drain_read_box(m, c, &box, us, err, sizeof(err)), PDCBB_OK);
    bad = 0;
    for (int i = 0; i < 15; i++)
        bad += us[i] != c_val(4 + i / 5, 1 + i % 5);
    CHECK(bad == 0);
}

static int g_reports;
static char g_last_report[1024];

static void on_report(const char *line, void *arg)
{
    (void)arg;
    g_reports++;
    snprintf(g_last_report, sizeof(g_last_report), "%s", line);
}

static void check_verify(pdcbb_drain_t *m)
{
    char err[PDCBB_DRAIN_ERR_LEN], path[4200];
    pdcbb_drain_verify_stats_t st;

    g_reports = 0;
    CHECK_ERR(pdcbb_drain_verify(m, -1, &st, on_report, NULL, NULL, err, sizeof(err)), PDCBB_OK);
    CHECK(st.extents == 7 && st.bytes == g_files[0].size + g_files[1].size && st.bad == 0 &&
          st.missing == 0 && g_reports == 0);
    CHECK_ERR(pdcbb_drain_verify(m, 1, &st, on_report, NULL, NULL, err, sizeof(err)), PDCBB_OK);
    CHECK(st.extents == 2 && st.bytes == g_files[1].size);

    /* flip a byte of rank 1's first extent (object A, row 2) */
    snprintf(path, sizeof(path), "%s/data/rank-00001.dat", g_dir);
    int fd = open(path, O_RDWR);
    uint8_t byte;
    CHECK(fd >= 0 && pread(fd, &byte, 1, 5) == 1);
    byte ^= 0x10;
    CHECK(pwrite(fd, &byte, 1, 5) == 1);
    CHECK_ERR(pdcbb_drain_verify(m, -1, &st, on_report, NULL, NULL, err, sizeof(err)),
              PDCBB_ERR_IO);
    CHECK(st.bad == 1 && st.missing == 0 && g_reports == 1);
    CHECK(strstr(g_last_report, "object 'run1/temperature' (id 201), extent 2, bytes 48..72: "
                                "data/rank-00001.dat offset 0 (+24 bytes): CRC-32C mismatch") !=
          NULL);
    byte ^= 0x10;
    CHECK(pwrite(fd, &byte, 1, 5) == 1);
    /* cut the file inside its second extent */
    CHECK(ftruncate(fd, 30) == 0);
    g_reports = 0;
    CHECK_ERR(pdcbb_drain_verify(m, -1, &st, on_report, NULL, NULL, err, sizeof(err)),
              PDCBB_ERR_IO);
    CHECK(st.bad == 0 && st.missing == 1 && g_reports == 1);
    CHECK(strstr(g_last_report, "object 'dyn' (id 203), extent 1, bytes 32..80: "
                                "data/rank-00001.dat offset 24 (+48 bytes): missing") != NULL);
    CHECK(ftruncate(fd, (off_t)g_files[1].size) == 0);
    /* restore the data (ftruncate zero-filled it) */
    uint16_t cv[24];
    for (int i = 0; i < 24; i++)
        cv[i] = (uint16_t)(2000 + 16 + i);
    CHECK(pwrite(fd, cv, 48, 24) == 48);
    close(fd);
    CHECK_ERR(pdcbb_drain_verify(m, -1, &st, NULL, NULL, NULL, err, sizeof(err)), PDCBB_OK);
}

/* ---- readers check every extent they serve ---- */

static int g_damaged;
static char g_damaged_line[1024];

static void on_damaged(const char *line, void *arg)
{
    (void)arg;
    g_damaged++;
    snprintf(g_damaged_line, sizeof(g_damaged_line), "%s", line);
}

/* A fresh model of the drain (nothing checked yet). */
static pdcbb_drain_t *reopen(void)
{
    char err[PDCBB_DRAIN_ERR_LEN];
    pdcbb_drain_t *m = NULL;
    CHECK_ERR(pdcbb_drain_open(g_dir, 0, &m, err, sizeof(err)), PDCBB_OK);
    return m;
}

/* Read rows [row, row + rows) of all columns of object id into buf. */
static pdcbb_err_t read_rows(pdcbb_drain_t *m, uint64_t id, uint64_t row, uint64_t rows,
                             void *buf, char *err, size_t errlen)
{
    const pdcbb_drain_object_t *o = pdcbb_drain_find_object_id(m, id);
    uint64_t off[2] = {row, 0}, size[2] = {rows, o ? o->dims[1] : 0};
    pdcbb_box_t box;
    if (o == NULL || pdcbb_box_make(&box, 2, off, size) != PDCBB_OK)
        return PDCBB_ERR_NOT_FOUND;
    return pdcbb_drain_read_box(m, o, &box, buf, err, errlen);
}

/* Change byte at of data file rank (x: XOR mask; the same call again undoes it). */
static void flip_byte(uint32_t rank, off_t at, uint8_t x)
{
    char path[4200];
    uint8_t byte;
    snprintf(path, sizeof(path), "%s/%s", g_dir, g_files[rank].name);
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0 && pread(fd, &byte, 1, at) == 1);
    byte ^= x;
    CHECK(fd >= 0 && pwrite(fd, &byte, 1, at) == 1);
    if (fd >= 0)
        close(fd);
}

static void check_read_damage(void)
{
    char err[PDCBB_DRAIN_ERR_LEN] = "", path[4200], moved[4300];
    float fa[24];
    int32_t ib[15];
    uint16_t us[64];
    pdcbb_drain_read_stats_t st;
    int bad = 0;

    /* Object A's row 2 (rank 1's first extent) with its last column's byte flipped: a box
     * that needs only its first two columns fails all the same, naming the extent. */
    flip_byte(1, 20, 0x10);
    pdcbb_drain_t *m = reopen();
    if (m == NULL)
        return;
    const pdcbb_drain_object_t *a = pdcbb_drain_find_object_id(m, 201);
    uint64_t off[2] = {2, 0}, size[2] = {1, 2};
    pdcbb_box_t box;
    pdcbb_box_make(&box, 2, off, size);
    CHECK_ERR(pdcbb_drain_read_box(m, a, &box, fa, err, sizeof(err)), PDCBB_ERR_CORRUPT);
    CHECK(strstr(err, "object 'run1/temperature' (id 201), extent 2, bytes 48..72: "
                      "data/rank-00001.dat offset 0 (+24 bytes): CRC-32C mismatch (manifest "
                      "0x") == err);
    CHECK_ERR(read_rows(m, 201, 0, 4, fa, err, sizeof(err)), PDCBB_ERR_CORRUPT);
    /* its other extents, and another object, are intact */
    CHECK_ERR(read_rows(m, 201, 0, 2, fa, err, sizeof(err)), PDCBB_OK);
    for (int i = 0; i < 12; i++)
        bad += fa[i] != a_val(i / 6, i % 6);
    CHECK_ERR(read_rows(m, 202, 0, 5, ib, err, sizeof(err)), PDCBB_OK);
    for (int i = 0; i < 15; i++)
        bad += ib[i] != b_val(i / 3, i % 3);
    CHECK(bad == 0);
    /* skipping damaged extents (--partial): zeros in its place, told once */
    g_damaged = 0;
    CHECK_ERR(pdcbb_drain_skip_damaged(m, on_damaged, NULL), PDCBB_OK);
    for (int k = 0; k < 2; k++) {
        memset(fa, 0xff, sizeof(fa));
        CHECK_ERR(read_rows(m, 201, 0, 4, fa, err, sizeof(err)), PDCBB_OK);
        for (int i = 0; i < 24; i++)
            bad += fa[i] != (i < 12 ? a_val(i / 6, i % 6) : 0.0f);
    }
    CHECK(bad == 0 && g_damaged == 1);
    CHECK(strstr(g_damaged_line, "extent 2, bytes 48..72: data/rank-00001.dat offset 0 (+24 "
                                 "bytes): CRC-32C mismatch") != NULL);
    pdcbb_drain_read_stats(m, &st);
    CHECK(st.damaged == 1);
    pdcbb_drain_free(m);
    flip_byte(1, 20, 0x10);

    /* Slab by slab, every extent is read from its file and checked once: object B row by row
     * (each extent is needed in parts), then again whole (already checked). */
    m = reopen();
    if (m == NULL)
        return;
    memset(ib, 0, sizeof(ib));
    for (uint64_t r = 0; r < 5; r++)
        CHECK_ERR(read_rows(m, 202, r, 1, ib + 3 * r, err, sizeof(err)), PDCBB_OK);
    for (int i = 0; i < 15; i++)
        bad += ib[i] != b_val(i / 3, i % 3);
    CHECK(bad == 0);
    pdcbb_drain_read_stats(m, &st);
    CHECK(st.extents_checked == 2 && st.bytes_checked == 60 && st.bytes_read == 60 &&
          st.damaged == 0);
    CHECK_ERR(read_rows(m, 202, 0, 5, ib, err, sizeof(err)), PDCBB_OK);
    pdcbb_drain_read_stats(m, &st);
    CHECK(st.extents_checked == 2 && st.bytes_read <= 60 + 60);
    /* an extent needed whole is checked in the caller's buffer: read once */
    CHECK_ERR(read_rows(m, 201, 0, 4, fa, err, sizeof(err)), PDCBB_OK);
    pdcbb_drain_read_stats(m, &st);
    CHECK(st.extents_checked == 5 && st.bytes_checked == 60 + 72);
    pdcbb_drain_free(m);

    /* rank 1's file cut inside object C's extent: C fails naming it, A (before the cut) reads */
    snprintf(path, sizeof(path), "%s/%s", g_dir, g_files[1].name);
    CHECK(truncate(path, 30) == 0);
    m = reopen();
    if (m == NULL)
        return;
    CHECK_ERR(read_rows(m, 203, 0, 8, us, err, sizeof(err)), PDCBB_ERR_CORRUPT);
    CHECK(strstr(err, "object 'dyn' (id 203), extent 1, bytes 32..80: data/rank-00001.dat "
                      "offset 24 (+48 bytes): missing: the file ends at offset 30") == err);
    CHECK_ERR(read_rows(m, 201, 0, 4, fa, err, sizeof(err)), PDCBB_OK);
    pdcbb_drain_free(m);
    int fd = open(path, O_WRONLY);
    for (int i = 0; i < 24; i++)
        us[i] = (uint16_t)(2000 + 16 + i);
    CHECK(fd >= 0 && pwrite(fd, us, 48, 24) == 48);
    if (fd >= 0)
        close(fd);

    /* rank 1's file missing */
    snprintf(moved, sizeof(moved), "%s.moved", path);
    CHECK(rename(path, moved) == 0);
    m = reopen();
    if (m == NULL)
        return;
    CHECK_ERR(read_rows(m, 201, 0, 4, fa, err, sizeof(err)), PDCBB_ERR_CORRUPT);
    CHECK(strstr(err, "object 'run1/temperature' (id 201), extent 2, bytes 48..72: "
                      "data/rank-00001.dat offset 0 (+24 bytes): missing: ") == err &&
          strstr(err, "No such file") != NULL);
    pdcbb_drain_free(m);
    CHECK(rename(moved, path) == 0);
}

/* ---- malformed manifests ---- */

static const char *base_manifest =
    "format: pdcbb-drain\n"
    "version: 1\n"
    "job: {id: 5, user: \"u\", uid: 1, nservers: 1, servers_per_node: 1}\n"
    "ranks:\n"
    "  - {rank: 0, node: \"n\", data_file: \"data/rank-00000.dat\", data_bytes: 8, "
    "seconds: 0.1}\n"
    "containers: []\n"
    "objects:\n"
    "  - id: 9\n"
    "    name: \"o\"\n"
    "    container: \"\"\n"
    "    container_id: 0\n"
    "    rank: 0\n"
    "    type: PDC_INT\n"
    "    element_size: 4\n"
    "    dims: [2]\n"
    "    partition: PDC_OBJ_STATIC\n"
    "    consistency: 0\n"
    "    user_id: 0\n"
    "    time_step: 0\n"
    "    app_name: \"\"\n"
    "    data_loc: \"\"\n"
    "    tags_string: \"\"\n"
    "    tags: []\n"
    "    placement_map: []\n"
    "extents:\n"
    "  - {object: 9, rank: 0, object_offset: 0, length: 8, file: \"data/rank-00000.dat\", "
    "file_offset: 0, crc32c: 0x01234567}\n";

/* Load base_manifest with 'from' replaced by 'to'; returns the code, err the message. */
static int load_variant(const char *from, const char *to, char *err, size_t errlen)
{
    char path[4200], text[4096];
    const char *at = from ? strstr(base_manifest, from) : NULL;
    if (from != NULL && at == NULL) {
        fprintf(stderr, "test bug: '%s' not in the base manifest\n", from);
        return -1;
    }
    if (at == NULL)
        snprintf(text, sizeof(text), "%s", base_manifest);
    else
        snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - base_manifest), base_manifest, to,
                 at + strlen(from));
    snprintf(path, sizeof(path), "%s/variant.yaml", g_root);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fputs(text, f);
    fclose(f);
    pdcbb_drain_t *m = NULL;
    err[0] = '\0';
    int rc = pdcbb_drain_load_manifest(path, &m, err, errlen);
    pdcbb_drain_free(m);
    return rc;
}

static void check_malformed(void)
{
    char err[PDCBB_DRAIN_ERR_LEN];
    static const struct {
        const char *from, *to, *want1, *want2;
    } cases[] = {
        {"    tags: []\n", "    tags: []\n    colour: red\n", "unknown key 'colour'", ":24:"},
        {"length: 8", "length: 12", "key 'length'", "outside object 'o'"},
        {"object_offset: 0", "object_offset: 2", "key 'object_offset'", "element size"},
        {"file: \"data/rank-00000.dat\", file_offset", "file: \"../r.dat\", file_offset", "key 'file'",
         "'..'"},
        {"0x01234567", "0xZZ", "key 'crc32c'", ":26:"},
        {"0x01234567", "0x123456789", "key 'crc32c'", "8 hex"},
        {"    element_size: 4\n", "", "missing key 'element_size'", "objects[0]"},
        {"rank: 0, node", "rank: 1, node", "key 'rank'", "ranks[0]"},
        {"dims: [2]", "dims: [2, 0]", "key 'dims'", ":15:"},
        {"dims: [2]", "dims: [1, unlimited]", "key 'dims'", "integer"},
        {"type: PDC_INT", "type: PDC_QUAD", "key 'type'", "object 'o'"},
        {"version: 1", "version: 2", "key 'version'", "not supported"},
        {"format: pdcbb-drain", "format: other", "key 'format'", ":1:"},
        {"object: 9,", "object: 8,", "no object has id 8", "key 'object'"},
        {"placement_map: []", "placement_map: [{seq: 1, rank: 0, offset: [0], size: [1]}]",
         "key 'placement_map'", "PDC_REGION_DYNAMIC"},
        {"length: 8", "length: 0", "key 'length'", "from 1"},
        {"extents:\n", "extents: 3\n", "key 'extents'", "expected a list"},
        {"placement_map: []\n", "placement_map: []\n    current_dims: [2]\n",
         "key 'current_dims'", "unlimited"},
    };
    CHECK_ERR(load_variant(NULL, NULL, err, sizeof(err)), PDCBB_OK);
    if (err[0])
        fprintf(stderr, "base manifest: %s\n", err);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = load_variant(cases[i].from, cases[i].to, err, sizeof(err));
        unit_checks++;
        if (rc == PDCBB_OK || strstr(err, cases[i].want1) == NULL ||
            strstr(err, cases[i].want2) == NULL || strstr(err, "variant.yaml") == NULL) {
            unit_failures++;
            fprintf(stderr, "malformed case %zu (%s -> %s): rc %s, err '%s'\n", i, cases[i].from,
                    cases[i].to, pdcbb_errname(rc), err);
        }
    }
}

/* ---- main ---- */

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* ---- the job's drain directory (stager/drain_dir.c) ---- */

static void check_drain_dir(void)
{
    char err[PDCBB_DRAIN_ERR_LEN], note[PDCBB_DRAIN_ERR_LEN], dd[4200], p[4400], a[4400],
        b[4400];
    struct stat st;
    const char *ia = "0123456789abcdef0123456789abcdef", *ib = "fedcba9876543210fedcba9876543210";
    snprintf(dd, sizeof(dd), "%s/dd", g_root);
    CHECK(mkdir(dd, 0755) == 0);

    /* destinations */
    static const struct {
        const char *path; /* "@" = dd, "@x" = dd/x */
        pdcbb_err_t rc;
        const char *msg;
    } dests[] = {
        {"@", PDCBB_OK, ""},
        {"", PDCBB_ERR_INVAL, "is not an absolute path"},
        {"relative/dir", PDCBB_ERR_INVAL, "'relative/dir' is not an absolute path"},
        {"@/missing", PDCBB_ERR_NOT_FOUND, "/dd/missing does not exist (create it first)"},
        {"@/afile", PDCBB_ERR_INVAL, "/dd/afile is not a directory"},
        {"/etc", PDCBB_ERR_PERM, "drain destination /etc is a system directory"},
        {"/usr/lib", PDCBB_ERR_PERM, "/usr/lib is a system directory"},
        {"/", PDCBB_ERR_PERM, "drain destination / is a system directory"},
        {"@/etc-link", PDCBB_ERR_PERM, "(that is, /etc) is a system directory"},
    };
    snprintf(p, sizeof(p), "%s/afile", dd);
    CHECK(write_file(p, "x") == 0);
    snprintf(p, sizeof(p), "%s/etc-link", dd);
    CHECK(symlink("/etc", p) == 0);
    for (size_t i = 0; i < sizeof(dests) / sizeof(dests[0]); i++) {
        char path[4400];
        if (dests[i].path[0] == '@')
            snprintf(path, sizeof(path), "%s%s", dd, dests[i].path + 1);
        else
            snprintf(path, sizeof(path), "%s", dests[i].path);
        CHECK_ERR(pdcbb_drain_dest_check(path, err, sizeof(err)), dests[i].rc);
        CHECK(strstr(err, dests[i].msg) != NULL);
        if (strstr(err, dests[i].msg) == NULL)
            fprintf(stderr, "    row '%s': message '%s'\n", path, err);
    }
    snprintf(p, sizeof(p), "%s/afile", dd);
    unlink(p);
    snprintf(p, sizeof(p), "%s/etc-link", dd);
    unlink(p);

    /* creation, a second run of the same job, another job with the same id */
    CHECK_ERR(pdcbb_drain_dir_create(dd, 9, ia, "lab-1", PDCBB_DRAIN_SHARE_NONE, a, sizeof(a), note,
                                     sizeof(note), err, sizeof(err)),
              PDCBB_OK);
    snprintf(p, sizeof(p), "%s/pdcbb.9", dd);
    CHECK(strcmp(a, p) == 0 && note[0] == '\0');
    CHECK(stat(a, &st) == 0 && (st.st_mode & 07777) == 0700);
    snprintf(p, sizeof(p), "%s/pdcbb.9/IDENTITY", dd);
    CHECK(stat(p, &st) == 0 && (st.st_mode & 022) == 0);
    CHECK_ERR(pdcbb_drain_dir_create(dd, 9, ia, "lab-1", PDCBB_DRAIN_SHARE_NONE, b, sizeof(b), note,
                                     sizeof(note), err, sizeof(err)),
              PDCBB_OK);
    CHECK(strcmp(a, b) == 0 && note[0] == '\0'); /* reused */
    CHECK_ERR(pdcbb_drain_dir_create(dd, 9, ib, "bad name\n", PDCBB_DRAIN_SHARE_GROUP, b, sizeof(b),
                                     note, sizeof(note), err, sizeof(err)),
              PDCBB_OK);
    snprintf(p, sizeof(p), "%s/pdcbb.9.fedcba98", dd);
    CHECK(strcmp(b, p) == 0);
    CHECK(strstr(note, "pdcbb.9 belongs to another job") != NULL);
    CHECK(strstr(note, "draining into") != NULL && strstr(note, "pdcbb.9.fedcba98 instead"));
    CHECK(stat(b, &st) == 0 && (st.st_mode & 07777) == 0750);
    /* the identity names the cluster; a name it cannot hold is left out, never written */
    pdcbb_drain_identity_t ident;
    CHECK_ERR(pdcbb_drain_identity_read(a, geteuid(), &ident, err, sizeof(err)), PDCBB_OK);
    CHECK(ident.job_id == 9 && strcmp(ident.instance, ia) == 0);
    CHECK(strcmp(ident.cluster, "lab-1") == 0);
    CHECK_ERR(pdcbb_drain_identity_read(b, geteuid(), &ident, err, sizeof(err)), PDCBB_OK);
    CHECK(ident.cluster[0] == '\0');
    /* every node finds its own */
    char f[4400];
    CHECK_ERR(pdcbb_drain_dir_find(dd, 9, ia, geteuid(), f, sizeof(f), err, sizeof(err)),
              PDCBB_OK);
    CHECK(strcmp(f, a) == 0);
    CHECK_ERR(pdcbb_drain_dir_find(dd, 9, ib, geteuid(), f, sizeof(f), err, sizeof(err)),
              PDCBB_OK);
    CHECK(strcmp(f, b) == 0);
    CHECK_ERR(pdcbb_drain_dir_find(dd, 9, "00000000000000000000000000000000", geteuid(), f,
                                   sizeof(f), err, sizeof(err)),
              PDCBB_ERR_NOT_FOUND);
    CHECK(strstr(err, "no drain directory of job 9 in") != NULL);
    CHECK_ERR(pdcbb_drain_dir_find(dd, 9, ia, geteuid() + 1, f, sizeof(f), err, sizeof(err)),
              PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(pdcbb_drain_dir_find(dd, 10, ia, geteuid(), f, sizeof(f), err, sizeof(err)),
              PDCBB_ERR_NOT_FOUND);
    /* a directory others may write is never the job's */
    CHECK(chmod(a, 0770) == 0);
    CHECK_ERR(pdcbb_drain_dir_find(dd, 9, ia, geteuid(), f, sizeof(f), err, sizeof(err)),
              PDCBB_ERR_NOT_FOUND);
    CHECK(strstr(err, "is writable by others (mode 0770)") != NULL);
    CHECK(chmod(a, 0700) == 0);
    /* a link named like the job's directory is not followed */
    snprintf(p, sizeof(p), "%s/pdcbb.11", dd);
    CHECK(symlink(a, p) == 0);
    CHECK_ERR(pdcbb_drain_dir_find(dd, 11, ia, geteuid(), f, sizeof(f), err, sizeof(err)),
              PDCBB_ERR_NOT_FOUND);
    unlink(p);

    /* trust: the test's drain is fine; group-writable files and links are refused */
    char warn[PDCBB_DRAIN_ERR_LEN];
    CHECK_ERR(pdcbb_drain_trust_check(g_dir, (long)geteuid(), warn, sizeof(warn), err,
                                      sizeof(err)),
              PDCBB_OK);
    CHECK(warn[0] == '\0');
    CHECK_ERR(pdcbb_drain_trust_check(g_dir, (long)geteuid() + 1, warn, sizeof(warn), err,
                                      sizeof(err)),
              PDCBB_OK);
    CHECK(strstr(warn, "its manifest says the job ran as") != NULL);
    snprintf(p, sizeof(p), "%s/data/rank-00001.dat", g_dir);
    CHECK(chmod(p, 0664) == 0);
    CHECK_ERR(pdcbb_drain_trust_check(g_dir, -1, warn, sizeof(warn), err, sizeof(err)),
              PDCBB_ERR_PERM);
    CHECK(strstr(err, "untrusted drain: ") && strstr(err, "rank-00001.dat is writable by its "
                                                         "group (mode 0664)"));
    CHECK(chmod(p, 0644) == 0);
    snprintf(p, sizeof(p), "%s/parts/link.yaml", g_dir);
    CHECK(symlink("/etc/passwd", p) == 0);
    CHECK_ERR(pdcbb_drain_trust_check(g_dir, -1, warn, sizeof(warn), err, sizeof(err)),
              PDCBB_ERR_PERM);
    CHECK(strstr(err, "link.yaml is a symbolic link") != NULL);
    unlink(p);
    CHECK(chmod(g_dir, 0757) == 0);
    CHECK_ERR(pdcbb_drain_trust_check(g_dir, -1, warn, sizeof(warn), err, sizeof(err)),
              PDCBB_ERR_PERM);
    CHECK(strstr(err, "is writable by everyone (mode 0757)") != NULL);
    CHECK(chmod(g_dir, 0755) == 0);
    CHECK_ERR(pdcbb_drain_trust_check(g_dir, -1, warn, sizeof(warn), err, sizeof(err)),
              PDCBB_OK);

    /* FAILED reports: beside the destination, else in $HOME; removed after a good drain */
    pdcbb_drain_report_t r = {.job_id = 9, .node = "n2", .user = "u", .destination = dd,
                              .drain_dir = a, .job_dir = "/local/pdcbb.9",
                              .reason = "it broke"};
    char where[4400], text[4096] = "";
    CHECK_ERR(pdcbb_drain_report_write(&r, where, sizeof(where)), PDCBB_OK);
    snprintf(p, sizeof(p), "%s/pdcbb.9.n2.FAILED", dd);
    CHECK(strcmp(where, p) == 0);
    FILE *fp = fopen(p, "r");
    size_t n = fp ? fread(text, 1, sizeof(text) - 1, fp) : 0;
    text[n] = '\0';
    if (fp)
        fclose(fp);
    CHECK(strstr(text, "pdcbb drain FAILED\njob: 9\nnode: n2\n") == text);
    CHECK(strstr(text, "\nreason: it broke\n") != NULL);
    CHECK(strstr(text, "\ndata: kept on node n2 in /local/pdcbb.9\n") != NULL);
    CHECK(strstr(text, "\nrecover: on node n2, as u: pdcbb drain --to ") != NULL);
    char home[4400], missing[4400];
    snprintf(home, sizeof(home), "%s/home", dd);
    CHECK(mkdir(home, 0700) == 0);
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", home, 1);
    snprintf(missing, sizeof(missing), "%s/gone", dd);
    r.destination = missing;
    CHECK_ERR(pdcbb_drain_report_write(&r, where, sizeof(where)), PDCBB_OK);
    snprintf(p, sizeof(p), "%s/pdcbb.9.n2.FAILED", home);
    CHECK(strcmp(where, p) == 0);
    pdcbb_drain_report_remove(dd, 9, "n2");
    CHECK(access(p, F_OK) != 0);
    snprintf(p, sizeof(p), "%s/pdcbb.9.n2.FAILED", dd);
    CHECK(access(p, F_OK) != 0);
    if (old_home) {
        setenv("HOME", old_home, 1);
        free(old_home);
    }
}

/* ---- the orphan sweep, and partial reads of what is intact (drain_open.c) ---- */

/* Rank 1 still held data of object 999, deleted while it was down: the finish leaves it out
 * and lists it; a partial open with a part that cannot be read reads the others. */
static void check_sweep(const pdcbb_drain_t *p0, pdcbb_drain_t *p1)
{
    char err[PDCBB_DRAIN_ERR_LEN], dir[4200], path[4400];
    pdcbb_drain_t *m = NULL;
    int complete = -1;
    uint64_t n = 0, b = 0, nextents = p0->nextents + p1->nextents;
    pdcbb_drain_extent_t orphan = {.object_id = 999, .rank = 1, .object_offset = 0,
                                   .length = 8, .file = "data/rank-00001.dat", .file_offset = 0};

    snprintf(dir, sizeof(dir), "%s/sweep", g_root);
    snprintf(path, sizeof(path), "%s/parts", dir);
    CHECK(mkdir(dir, 0755) == 0 && mkdir(path, 0755) == 0);
    CHECK_ERR(pdcbb_drain_add_extent(p1, &orphan), PDCBB_OK);
    snprintf(path, sizeof(path), "%s/parts/rank-00000.yaml", dir);
    CHECK_ERR(pdcbb_drain_write_manifest(p0, path, err, sizeof(err)), PDCBB_OK);
    snprintf(path, sizeof(path), "%s/parts/rank-00001.yaml", dir);
    CHECK_ERR(pdcbb_drain_write_manifest(p1, path, err, sizeof(err)), PDCBB_OK);
    /* the same parts, not finished: a partial open sweeps them as the finish will */
    CHECK_ERR(pdcbb_drain_open(dir, PDCBB_DRAIN_OPEN_PARTIAL, &m, err, sizeof(err)), PDCBB_OK);
    if (m != NULL) {
        CHECK(m->nextents == nextents && m->ndropped == 1 && m->dropped[0].object_id == 999);
        pdcbb_drain_free(m);
        m = NULL;
    }
    CHECK_ERR(pdcbb_drain_finish(dir, 2, &complete, &n, &b, err, sizeof(err)), PDCBB_OK);
    CHECK(complete == 1 && n == 1 && b == 8);
    CHECK_ERR(pdcbb_drain_open(dir, 0, &m, err, sizeof(err)), PDCBB_OK);
    if (m != NULL) {
        CHECK(m->complete == 1 && m->nextents == nextents && m->ndropped == 1);
        CHECK(m->dropped[0].object_id == 999 && m->dropped[0].rank == 1 &&
              m->dropped[0].extents == 1 && m->dropped[0].bytes == 8);
        CHECK(pdcbb_drain_find_object_id(m, 999) == NULL);
        pdcbb_drain_free(m);
        m = NULL;
    }
    /* a part that cannot be read: the finish refuses, a partial open reads the other one */
    snprintf(path, sizeof(path), "%s/COMPLETE", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/manifest.yaml", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/parts/rank-00001.yaml", dir);
    CHECK(write_file(path, "format: [unclosed\n") == 0);
    CHECK_ERR(pdcbb_drain_finish(dir, 2, &complete, &n, &b, err, sizeof(err)), PDCBB_ERR_CONFIG);
    CHECK(complete == 0 && strstr(err, "rank-00001.yaml") != NULL);
    CHECK_ERR(pdcbb_drain_open(dir, PDCBB_DRAIN_OPEN_PARTIAL, &m, err, sizeof(err)), PDCBB_OK);
    if (m != NULL) {
        CHECK(m->nranks == 1 && m->nextents == p0->nextents && m->ndropped == 0);
        CHECK(m->nskipped == 1 && strstr(m->skipped[0], "rank-00001.yaml") != NULL);
        pdcbb_drain_free(m);
    }
}

int main(int argc, char **argv)
{
    char err[PDCBB_DRAIN_ERR_LEN], path[4300];
    int keep = argc == 3 && strcmp(argv[1], "--keep") == 0;

    CHECK(pdcbb_crc32c(0, "123456789", 9) == 0xE3069283u);
    CHECK(pdcbb_crc32c(pdcbb_crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u);

    if (keep) {
        snprintf(g_root, sizeof(g_root), "%s", argv[2]);
        mkdir(g_root, 0755);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(g_root, sizeof(g_root), "%s/test_drain.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(g_root) == NULL) {
            perror("mkdtemp");
            return 1;
        }
    }
    snprintf(g_dir, sizeof(g_dir), "%s/pdcbb.%u", g_root, JOB);
    snprintf(path, sizeof(path), "%s/parts", g_dir);
    CHECK(mkdir(g_dir, 0755) == 0 && mkdir(path, 0755) == 0);
    snprintf(path, sizeof(path), "%s/data", g_dir);
    CHECK(mkdir(path, 0755) == 0);
    for (uint32_t r = 0; r < 2; r++) {
        g_files[r].rank = r;
        snprintf(g_files[r].name, sizeof(g_files[r].name), "data/rank-%05u.dat", r);
        snprintf(path, sizeof(path), "%s/%s", g_dir, g_files[r].name);
        g_files[r].fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        CHECK(g_files[r].fd >= 0);
    }

    pdcbb_drain_t *p0 = pdcbb_drain_new(), *p1 = pdcbb_drain_new(), *m = NULL;
    CHECK(p0 != NULL && p1 != NULL);
    build_parts(p0, p1);
    for (int r = 0; r < 2; r++)
        close(g_files[r].fd);

    /* part 0 only: incomplete */
    int complete = -1;
    snprintf(path, sizeof(path), "%s/parts/rank-00000.yaml", g_dir);
    CHECK_ERR(pdcbb_drain_write_manifest(p0, path, err, sizeof(err)), PDCBB_OK);
    CHECK_ERR(pdcbb_drain_finish(g_dir, 2, &complete, NULL, NULL, err, sizeof(err)), PDCBB_OK);
    CHECK(complete == 0);
    CHECK_ERR(pdcbb_drain_open(g_dir, 0, &m, err, sizeof(err)), PDCBB_ERR_NOT_FOUND);
    CHECK(strstr(err, "incomplete drain: 1 of 2 ranks drained (finish it with pdcbb drain)"));
    CHECK_ERR(pdcbb_drain_open(g_dir, PDCBB_DRAIN_OPEN_PARTIAL, &m, err, sizeof(err)), PDCBB_OK);
    if (m != NULL) {
        CHECK(m->complete == 0 && m->nranks == 1 && m->nobjs == 2 && m->nextents == 5);
        pdcbb_drain_free(m);
        m = NULL;
    }

    /* both parts: finish writes manifest.yaml and COMPLETE */
    snprintf(path, sizeof(path), "%s/parts/rank-00001.yaml", g_dir);
    CHECK_ERR(pdcbb_drain_write_manifest(p1, path, err, sizeof(err)), PDCBB_OK);
    CHECK_ERR(pdcbb_drain_finish(g_dir, 2, &complete, NULL, NULL, err, sizeof(err)), PDCBB_OK);
    CHECK(complete == 1);
    snprintf(path, sizeof(path), "%s/COMPLETE", g_dir);
    FILE *f = fopen(path, "r");
    char line[256] = "";
    CHECK(f != NULL && fgets(line, sizeof(line), f) != NULL);
    if (f != NULL)
        fclose(f);
    CHECK(strncmp(line, "pdcbb-drain 1 job 77 ranks 2 20", 31) == 0 &&
          line[strlen(line) - 2] == 'Z');

    /* open through the destination (it holds one pdcbb.* directory) */
    CHECK_ERR(pdcbb_drain_open(g_root, 0, &m, err, sizeof(err)), PDCBB_OK);
    if (m != NULL) {
        CHECK(m->complete == 1 && strcmp(m->dir, g_dir) == 0);
        check_model(m);
        check_reads(m);
        check_verify(m);
        check_read_damage();
        /* write it again and read it back: the same model */
        pdcbb_drain_t *m2 = NULL;
        snprintf(path, sizeof(path), "%s/again.yaml", g_root);
        CHECK_ERR(pdcbb_drain_write_manifest(m, path, err, sizeof(err)), PDCBB_OK);
        CHECK_ERR(pdcbb_drain_load_manifest(path, &m2, err, sizeof(err)), PDCBB_OK);
        if (m2 != NULL) {
            pdcbb_drain_sort(m2);
            m2->dir = strdup(g_dir);
            check_model(m2);
            pdcbb_drain_free(m2);
        }
        unlink(path);
        pdcbb_drain_free(m);
        m = NULL;
    }

    check_malformed();
    check_drain_dir();

    /* two drained jobs in one destination: the error lists them */
    snprintf(path, sizeof(path), "%s/pdcbb.78", g_root);
    CHECK(mkdir(path, 0755) == 0);
    CHECK_ERR(pdcbb_drain_open(g_root, 0, &m, err, sizeof(err)), PDCBB_ERR_INVAL);
    CHECK(strstr(err, "pdcbb.77") != NULL && strstr(err, "pdcbb.78") != NULL);
    rmdir(path);
    /* COMPLETE without manifest.yaml, and a manifest that is not YAML */
    snprintf(path, sizeof(path), "%s/notyaml.yaml", g_root);
    CHECK(write_file(path, "format: [unclosed\n") == 0);
    CHECK_ERR(pdcbb_drain_load_manifest(path, &m, err, sizeof(err)), PDCBB_ERR_CONFIG);
    CHECK(strstr(err, "notyaml.yaml:") != NULL);
    unlink(path);
    snprintf(path, sizeof(path), "%s/variant.yaml", g_root);
    unlink(path);

    check_sweep(p0, p1);

    pdcbb_drain_free(p0);
    pdcbb_drain_free(p1);
    if (!keep && unit_failures == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_root);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", g_root);
    } else {
        printf("drain kept in %s\n", g_dir);
    }
    UNIT_DONE("drain");
}
