/*
 * test_bbd_two.c - several daemons in one process (bbd_harness.h): everything a daemon keeps is
 * in its bbd_t, so two harnesses open at once are two daemons that share nothing. Each check
 * below would fail if a module kept its state in the file instead: the second daemon's
 * checksums would vouch for the first one's damaged block, its locks would block the other's,
 * closing one would stop the other's I/O thread or free its buffers, and two daemons driven
 * from two threads would mix their write batches.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bbd_harness.h"
#include "unit_check.h"

/* One 2-D object of ROWS x COLS 4-byte elements: 1 MiB, exactly one checksum block. */
#define ROWS 256
#define COLS 1024
static const uint64_t dims[2] = {ROWS, COLS};

static uint64_t cont_create(bbd_harness_t *h, const char *name)
{
    pdcbb_cont_create_req_t q = {.name = name};
    pdcbb_cont_create_rep_t p;
    memset(&p, 0, sizeof(p));
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_CONT_CREATE, &q, NULL, 0, &p), PDCBB_OK);
    return p.id;
}

static uint64_t obj_create(bbd_harness_t *h, uint64_t cont, const char *name)
{
    pdcbb_obj_create_req_t q = {.cont_id = cont,
                                .name = name,
                                .dims = (uint64_t *)dims,
                                .dims_count = 2,
                                .partition = PDCBB_PLACE_OBJ_STATIC};
    pdcbb_obj_create_rep_t p;
    memset(&p, 0, sizeof(p));
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_OBJ_CREATE, &q, NULL, 0, &p), PDCBB_OK);
    return p.id;
}

/* Write or read rows [row, row + nrows) of obj; returns the call's status, *region the
 * region's own result (a damaged read's results go on with the damaged range). A read's bytes
 * are bbd_harness_last(h)->bulk. */
static int rows_call(bbd_harness_t *h, unsigned op, uint64_t obj, uint64_t row, uint64_t nrows,
                     const void *src, uint64_t *region)
{
    uint64_t desc[9] = {obj, 4, 2, ROWS, COLS, row, 0, nrows, COLS};
    pdcbb_data_write_req_t q = {.descs = desc, .descs_count = 9};
    pdcbb_data_write_rep_t p;
    memset(&p, 0, sizeof(p));
    size_t len = op == PDCBB_OP_DATA_WRITE ? nrows * COLS * 4 : 0;
    int rc = bbd_harness_call(h, op, &q, len ? src : NULL, len, &p);
    *region = rc == PDCBB_OK && p.results_count >= 1 ? p.results[0] : (uint64_t)-1;
    return rc;
}

static void fill(int32_t *v, size_t n, int32_t seed)
{
    for (size_t i = 0; i < n; i++)
        v[i] = seed * 1000003 + (int32_t)i;
}

/* Both daemons answer, each from its own store: the same names give the same ids. */
static void test_two_stores(bbd_harness_t *a, bbd_harness_t *b, uint64_t *obj)
{
    CHECK(strcmp(bbd_harness_dir(a), bbd_harness_dir(b)) != 0);
    uint64_t ca = cont_create(a, "two"), cb = cont_create(b, "two");
    obj[0] = obj_create(a, ca, "two-o");
    obj[1] = obj_create(b, cb, "two-o");
    /* the cross-talk checks below rely on it: a shared table would mix the two objects */
    CHECK(obj[0] != 0 && obj[0] == obj[1]);
    pdcbb_cont_create_req_t q = {.name = "only-in-a"};
    CHECK_ERR(bbd_harness_call(a, PDCBB_OP_CONT_CREATE, &q, NULL, 0, NULL), PDCBB_OK);
    pdcbb_cont_open_req_t o = {.name = "only-in-a"};
    CHECK_ERR(bbd_harness_call(b, PDCBB_OP_CONT_OPEN, &o, NULL, 0, NULL), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(bbd_harness_call(a, PDCBB_OP_CONT_OPEN, &o, NULL, 0, NULL), PDCBB_OK);
}

/*
 * Checksums: b writes the whole block (so b knows it good without reading it); a writes one
 * row of its own object (the same id), its data file is then damaged. a must find the damage:
 * what b knows says nothing of a's files.
 */
static void test_checksums_apart(bbd_harness_t *a, bbd_harness_t *b, const uint64_t *obj)
{
    static int32_t whole[ROWS * COLS];
    int32_t row[COLS];
    uint64_t res;
    fill(whole, ROWS * COLS, 7);
    fill(row, COLS, 9);
    CHECK_ERR(rows_call(b, PDCBB_OP_DATA_WRITE, obj[1], 0, ROWS, whole, &res), PDCBB_OK);
    CHECK(res == PDCBB_OK);
    CHECK_ERR(rows_call(a, PDCBB_OP_DATA_WRITE, obj[0], 0, 1, row, &res), PDCBB_OK);
    CHECK(res == PDCBB_OK);

    char path[4096];
    bbd_data_path(bbd_harness_daemon(a), obj[0], path, sizeof(path));
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    uint8_t byte = 0;
    CHECK(pread(fd, &byte, 1, 0) == 1);
    byte ^= 0x40;
    CHECK(pwrite(fd, &byte, 1, 0) == 1);
    close(fd);

    CHECK_ERR(rows_call(a, PDCBB_OP_DATA_READ, obj[0], 0, 1, NULL, &res), PDCBB_OK);
    CHECK_ERR((pdcbb_err_t)(uint32_t)res, PDCBB_ERR_CORRUPT);
    /* b's object is intact and reads back whole */
    CHECK_ERR(rows_call(b, PDCBB_OP_DATA_READ, obj[1], 0, ROWS, NULL, &res), PDCBB_OK);
    CHECK(res == PDCBB_OK && bbd_harness_last(b)->bulk_len == sizeof(whole) &&
          memcmp(bbd_harness_last(b)->bulk, whole, sizeof(whole)) == 0);
}

/* Locks: a write lock held on a's object does not block the same object id on b. */
static void test_locks_apart(bbd_harness_t *a, bbd_harness_t *b, const uint64_t *obj)
{
    uint64_t box[5] = {2, 0, 0, ROWS, COLS};
    pdcbb_lock_obtain_req_t q = {.id = obj[0], .access = 2, .mode = 1, .box = box, .box_count = 5};
    pdcbb_lock_obtain_rep_t pa, pb;
    memset(&pa, 0, sizeof(pa));
    memset(&pb, 0, sizeof(pb));
    CHECK_ERR(bbd_harness_call(a, PDCBB_OP_LOCK_OBTAIN, &q, NULL, 0, &pa), PDCBB_OK);
    q.id = obj[1];
    CHECK_ERR(bbd_harness_call(b, PDCBB_OP_LOCK_OBTAIN, &q, NULL, 0, &pb), PDCBB_OK);
    CHECK(pa.lock != 0 && pb.lock != 0);
    /* each daemon's own rule still holds: a second write lock on a waits, refused NOBLOCK */
    q.id = obj[0];
    CHECK_ERR(bbd_harness_call(a, PDCBB_OP_LOCK_OBTAIN, &q, NULL, 0, NULL), PDCBB_ERR_BUSY);
    pdcbb_lock_release_req_t r = {.id = obj[0], .lock = pa.lock};
    CHECK_ERR(bbd_harness_call(a, PDCBB_OP_LOCK_RELEASE, &r, NULL, 0, NULL), PDCBB_OK);
    r = (pdcbb_lock_release_req_t){.id = obj[1], .lock = pb.lock};
    CHECK_ERR(bbd_harness_call(b, PDCBB_OP_LOCK_RELEASE, &r, NULL, 0, NULL), PDCBB_OK);
    /* a's lock id means nothing on b any more */
    CHECK_ERR(bbd_harness_call(b, PDCBB_OP_LOCK_RELEASE, &r, NULL, 0, NULL), PDCBB_ERR_NOT_FOUND);
}

/* Closing one daemon leaves the other whole: its I/O thread, buffers and descriptors. */
static void test_close_one(bbd_harness_t *b, const uint64_t *obj)
{
    static int32_t v[ROWS * COLS];
    uint64_t res;
    fill(v, ROWS * COLS, 11);
    CHECK_ERR(rows_call(b, PDCBB_OP_DATA_WRITE, obj[1], 0, ROWS, v, &res), PDCBB_OK);
    CHECK(res == PDCBB_OK);
    CHECK_ERR(rows_call(b, PDCBB_OP_DATA_READ, obj[1], 0, ROWS, NULL, &res), PDCBB_OK);
    CHECK(res == PDCBB_OK && bbd_harness_last(b)->bulk_len == sizeof(v) &&
          memcmp(bbd_harness_last(b)->bulk, v, sizeof(v)) == 0);
    CHECK(bbd_harness_daemon(b)->data_inflight == 0);
}

/* Two daemons driven at once from two threads: each reads back exactly what it wrote. */
typedef struct {
    int seed;
    int failures;
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = arg;
    bbd_harness_t *h = NULL;
    static int32_t bufs[2][ROWS * COLS];
    int32_t *v = bufs[w->seed & 1];
    if (bbd_harness_open(NULL, &h) != PDCBB_OK) {
        w->failures = 1;
        return NULL;
    }
    char name[32];
    snprintf(name, sizeof(name), "t%d", w->seed);
    pdcbb_cont_create_req_t cq = {.name = name};
    pdcbb_cont_create_rep_t cp = {0};
    pdcbb_obj_create_rep_t op = {0};
    if (bbd_harness_call(h, PDCBB_OP_CONT_CREATE, &cq, NULL, 0, &cp) != PDCBB_OK)
        w->failures++;
    pdcbb_obj_create_req_t oq = {.cont_id = cp.id,
                                 .name = name,
                                 .dims = (uint64_t *)dims,
                                 .dims_count = 2,
                                 .partition = PDCBB_PLACE_OBJ_STATIC};
    if (bbd_harness_call(h, PDCBB_OP_OBJ_CREATE, &oq, NULL, 0, &op) != PDCBB_OK)
        w->failures++;
    for (int round = 0; round < 20 && w->failures == 0; round++) {
        uint64_t res;
        fill(v, ROWS * COLS, w->seed * 100 + round);
        uint64_t first = (uint64_t)(round * 13) % (ROWS / 2), n = ROWS / 2;
        if (rows_call(h, PDCBB_OP_DATA_WRITE, op.id, first, n, v, &res) != PDCBB_OK ||
            res != PDCBB_OK)
            w->failures++;
        if (rows_call(h, PDCBB_OP_DATA_READ, op.id, first, n, NULL, &res) != PDCBB_OK ||
            res != PDCBB_OK || bbd_harness_last(h)->bulk_len != n * COLS * 4 ||
            memcmp(bbd_harness_last(h)->bulk, v, n * COLS * 4) != 0)
            w->failures++;
    }
    bbd_harness_close(h);
    return NULL;
}

static void test_two_threads(void)
{
    pthread_t t[2];
    worker_t w[2] = {{1, 0}, {2, 0}};
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, worker, &w[i]) == 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].failures == 0);
    }
}

int main(void)
{
    bbd_harness_t *a = NULL, *b = NULL;
    uint64_t obj[2] = {0, 0};
    CHECK_ERR(bbd_harness_open(NULL, &a), PDCBB_OK);
    CHECK_ERR(bbd_harness_open(NULL, &b), PDCBB_OK);
    if (a == NULL || b == NULL)
        UNIT_DONE("bbd_two");
    test_two_stores(a, b, obj);
    test_checksums_apart(a, b, obj);
    test_locks_apart(a, b, obj);
    bbd_harness_close(a);
    test_close_one(b, obj);
    /* another one while b is still open: a fresh store */
    CHECK_ERR(bbd_harness_open(NULL, &a), PDCBB_OK);
    if (a != NULL) {
        pdcbb_cont_open_req_t o = {.name = "two"};
        CHECK_ERR(bbd_harness_call(a, PDCBB_OP_CONT_OPEN, &o, NULL, 0, NULL), PDCBB_ERR_NOT_FOUND);
        CHECK_ERR(bbd_harness_call(b, PDCBB_OP_CONT_OPEN, &o, NULL, 0, NULL), PDCBB_OK);
        bbd_harness_close(a);
    }
    bbd_harness_close(b);
    test_two_threads();
    UNIT_DONE("bbd_two");
}
