/*
 * pdc_region_cases - targeted cases of PDC region transfers for the bats tests
 * (tests/bats/70-regions.bats), one case per sub-command:
 *
 *   pdc_region_cases CASE [ARGS]
 *
 * Runs PDCinit, the case, then PDCclose. Each check prints "ok CASE ..." or
 * "FAIL CASE (file:line): what, with the PDC error name and message"; a case expected to be
 * refused prints the error name and message it got. Exit status: 0 if every check passed,
 * 1 otherwise, 2 on usage errors. Cases: see usage() below. Object names start with the case
 * name, so several cases can run in one job.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pdc.h"
#include "prog_util.h"

static pdcid_t pdc, cont;
static const char *cur_case = "";
static const char *tag = ""; /* --tag: appended to every object name */
static int failures;

static const char *const placement_names[4] = {"obj_static", "region_static", "region_dynamic",
                                               "region_local"};

static void usage(void)
{
    fprintf(stderr,
            "usage: pdc_region_cases [--tag T] CASE [ARGS]   (T: appended to object names)\n"
            "  posix               POSIX consistency: complete when start returns\n"
            "  status              default consistency: PENDING* COMPLETE once, then NOT_FOUND\n"
            "  never-started       status/close of a request that was never started\n"
            "  close-unwaited      transfer_close and PDCobj_close wait for a started request\n"
            "  busy                start twice -> BUSY; a waited request can be started again\n"
            "  open-at-close       PDCclose with requests left open waits and releases them\n"
            "  bad-regions         every bad region is refused with PDCBB_ERR_BAD_REGION\n"
            "  local-shapes        local buffers with offsets and other shapes, exact layout\n"
            "  zero-read           never-written elements read as zero, every placement\n"
            "  deleted             transfers on a deleted object; a new object of the same name\n"
            "  set-dims            shrink and grow an object with data\n"
            "  put-get             PDCobj_put_data / PDCobj_get_data round trip\n"
            "  obj-buf             PDCprop_set_obj_buf / PDCobj_buf_retrieve\n"
            "  flush               PDCobj_flush_start / PDCobj_flush_all_start\n"
            "  close-region        PDCobj_close on a region id\n"
            "  capacity BYTES [CHUNK [PLACEMENT]]  write until PDCBB_ERR_NOSPC (BYTES: the job's\n"
            "                      capacity per node times the daemons), then the daemon keeps\n"
            "                      serving, and deleting the objects frees the space\n"
            "  overwrite BYTES [PLACEMENT [ROUNDS]]  ROUNDS (60) overlapping overwrites of an\n"
            "                      object of BYTES/2 fit in a capacity of BYTES per daemon\n"
            "  wide-row MIB        one row of MIB MiB ([1][N] bytes, OBJ_STATIC and over UCX):\n"
            "                      written and read back whole (split by the library below\n"
            "                      PDCBB_DATA_BULK_MAX per request)\n"
            "  durable-write NAME SEED  write a known pattern into 8 objects (every placement,\n"
            "                      POSIX and default) and wait\n"
            "  durable-verify NAME SEED read them back from another process and compare\n");
}

/* ---------------------------------------------------------------------------------------- */
/* Helpers.                                                                                 */

#define FAILF(...)                                                                                 \
    do {                                                                                           \
        printf("FAIL %s (%s:%d): ", cur_case, __FILE__, __LINE__);                                 \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        failures++;                                                                                \
    } while (0)

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            FAILF(__VA_ARGS__);                                                                    \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void fill(void *buf, size_t n, uint64_t seed)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = mix64(seed ^ (i * 0x100000001b3ULL));
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

/* name with the --tag appended (a few results stay valid at once). */
static const char *tagged(const char *name)
{
    static char bufs[4][256];
    static int next;
    next = (next + 1) % 4;
    snprintf(bufs[next], sizeof(bufs[next]), "%s%s", name, tag);
    return bufs[next];
}

static int is_err(const char *want)
{
    return strcmp(PDCbb_last_error_name(), want) == 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static pdcid_t mkobj(const char *name, int nd, const uint64_t *dims, pdc_var_type_t type,
                     int placement, int posix)
{
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    if (!prop)
        return 0;
    uint64_t d[16];
    memcpy(d, dims, (size_t)nd * sizeof(uint64_t));
    if (PDCprop_set_obj_dims(prop, nd, d) != SUCCEED ||
        PDCprop_set_obj_type(prop, type) != SUCCEED ||
        PDCprop_set_obj_transfer_region_type(prop, (pdc_region_partition_t)placement) != SUCCEED ||
        PDCprop_set_obj_consistency_semantics(prop, posix ? PDC_CONSISTENCY_POSIX
                                                          : PDC_CONSISTENCY_DEFAULT) != SUCCEED)
        return 0;
    pdcid_t id = PDCobj_create(cont, tagged(name), prop);
    if (!id)
        return 0; /* keep the error: closing the property would reset it */
    PDCprop_close(prop);
    return id;
}

static pdcid_t mkobj1(const char *name, uint64_t n, pdc_var_type_t type, int placement, int posix)
{
    return mkobj(name, 1, &n, type, placement, posix);
}

/* A transfer request from explicit local and remote boxes (the region ids are closed). */
static pdcid_t xfer(void *buf, pdc_access_t a, pdcid_t obj, int lnd, const uint64_t *loff,
                    const uint64_t *lsize, int rnd, const uint64_t *roff, const uint64_t *rsize)
{
    uint64_t lo[16], ls[16], ro[16], rs[16];
    memcpy(lo, loff, (size_t)lnd * 8);
    memcpy(ls, lsize, (size_t)lnd * 8);
    memcpy(ro, roff, (size_t)rnd * 8);
    memcpy(rs, rsize, (size_t)rnd * 8);
    pdcid_t l = PDCregion_create((psize_t)lnd, lo, ls);
    if (!l)
        return 0;
    pdcid_t r = PDCregion_create((psize_t)rnd, ro, rs);
    if (!r)
        return 0;
    pdcid_t req = PDCregion_transfer_create(buf, a, obj, l, r);
    if (!req)
        return 0; /* keep the error for the caller */
    PDCregion_close(l);
    PDCregion_close(r);
    return req;
}

/* 1-D transfer of n elements at element offset off, buffer of exactly n elements. */
static pdcid_t xfer1(void *buf, pdc_access_t a, pdcid_t obj, uint64_t off, uint64_t n)
{
    uint64_t zero = 0;
    return xfer(buf, a, obj, 1, &zero, &n, 1, &off, &n);
}

/* Error of the last failed xfer_now (transfer_close resets the thread's last error). */
static char xerr_name[64], xerr_msg[512];

/* Start, wait and close; 0, or -1 with the error in xerr_name / xerr_msg. */
static int xfer_now(pdcid_t req)
{
    snprintf(xerr_name, sizeof(xerr_name), "%s", PDCbb_last_error_name());
    snprintf(xerr_msg, sizeof(xerr_msg), "%s", PDCbb_last_error_message());
    if (!req)
        return -1;
    if (PDCregion_transfer_start(req) != SUCCEED || PDCregion_transfer_wait(req) != SUCCEED) {
        snprintf(xerr_name, sizeof(xerr_name), "%s", PDCbb_last_error_name());
        snprintf(xerr_msg, sizeof(xerr_msg), "%s", PDCbb_last_error_message());
        PDCregion_transfer_close(req);
        printf("  (transfer failed: %s: %s)\n", xerr_name, xerr_msg);
        return -1;
    }
    if (PDCregion_transfer_close(req) != SUCCEED) {
        snprintf(xerr_name, sizeof(xerr_name), "%s", PDCbb_last_error_name());
        snprintf(xerr_msg, sizeof(xerr_msg), "%s", PDCbb_last_error_message());
        return -1;
    }
    return 0;
}

static int read1(pdcid_t obj, void *buf, uint64_t off, uint64_t n)
{
    return xfer_now(xfer1(buf, PDC_READ, obj, off, n));
}

static int write1(pdcid_t obj, void *buf, uint64_t off, uint64_t n)
{
    return xfer_now(xfer1(buf, PDC_WRITE, obj, off, n));
}

/* Compare n bytes; report the first difference. */
static int same(const char *what, const void *want, const void *got, size_t n)
{
    const unsigned char *a = want, *b = got;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) {
            FAILF("%s: byte %zu of %zu differs: expected %02x, got %02x", what, i, n, a[i], b[i]);
            return 0;
        }
    return 1;
}

static int status_of(pdcid_t req, pdc_transfer_status_t *st)
{
    *st = (pdc_transfer_status_t)-1;
    return PDCregion_transfer_status(req, st) == SUCCEED ? 0 : -1;
}

static const char *st_name(pdc_transfer_status_t st)
{
    switch (st) {
    case PDC_TRANSFER_STATUS_COMPLETE:
        return "COMPLETE";
    case PDC_TRANSFER_STATUS_PENDING:
        return "PENDING";
    case PDC_TRANSFER_STATUS_NOT_FOUND:
        return "NOT_FOUND";
    default:
        return "?";
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Consistency and status.                                                                  */

static int case_posix(void)
{
    const uint64_t n = 4u << 20;
    unsigned char *buf = malloc(n), *want = malloc(n), *got = malloc(n);
    CHECK(buf && want && got, "out of memory");
    for (int pl = 0; pl < 4; pl++) {
        char name[64];
        snprintf(name, sizeof(name), "posix-%s", placement_names[pl]);
        pdcid_t obj;
        CALL(obj = mkobj1(name, n, PDC_UINT8, pl, 1));
        fill(want, n, 1000 + (uint64_t)pl);
        memcpy(buf, want, n);
        pdcid_t req;
        CALL(req = xfer1(buf, PDC_WRITE, obj, 0, n));
        CALL(PDCregion_transfer_start(req) == SUCCEED);
        /* Complete when start returned: the buffer is ours again. */
        memset(buf, 0xEE, n);
        pdc_transfer_status_t st;
        CALL(status_of(req, &st) == 0);
        CHECK(st == PDC_TRANSFER_STATUS_COMPLETE,
              "%s: status right after start of a POSIX write is %s, expected COMPLETE", name,
              st_name(st));
        CALL(status_of(req, &st) == 0);
        CHECK(st == PDC_TRANSFER_STATUS_NOT_FOUND,
              "%s: second status after COMPLETE is %s, expected NOT_FOUND", name, st_name(st));
        CALL(PDCregion_transfer_close(req) == SUCCEED);
        /* A POSIX read: the data is in the buffer when start returns. */
        memset(got, 0x11, n);
        CALL(req = xfer1(got, PDC_READ, obj, 0, n));
        CALL(PDCregion_transfer_start(req) == SUCCEED);
        if (!same(name, want, got, n))
            return -1;
        CALL(status_of(req, &st) == 0);
        CHECK(st == PDC_TRANSFER_STATUS_COMPLETE,
              "%s: status right after start of a POSIX read is %s, expected COMPLETE", name,
              st_name(st));
        CALL(PDCregion_transfer_close(req) == SUCCEED);
        CALL(PDCobj_close(obj) == SUCCEED);
        printf("ok posix placement=%s: COMPLETE right after start, then NOT_FOUND; buffer reusable "
               "at once\n",
               placement_names[pl]);
    }
    free(buf);
    free(want);
    free(got);
    return 0;
}

static int case_status(void)
{
    const uint64_t n = 8u << 20;
    unsigned char *buf = malloc(n), *got = malloc(n);
    CHECK(buf && got, "out of memory");
    for (int pl = 0; pl < 4; pl++) {
        char name[64];
        snprintf(name, sizeof(name), "status-%s", placement_names[pl]);
        pdcid_t obj;
        CALL(obj = mkobj1(name, n, PDC_UINT8, pl, 0));
        fill(buf, n, 2000 + (uint64_t)pl);
        pdcid_t req;
        CALL(req = xfer1(buf, PDC_WRITE, obj, 0, n));
        pdc_transfer_status_t st;
        double t0 = now();
        CALL(PDCregion_transfer_start(req) == SUCCEED);
        double t_start = now() - t0;
        long pending = 0;
        for (;;) {
            CALL(status_of(req, &st) == 0);
            if (st == PDC_TRANSFER_STATUS_COMPLETE)
                break;
            CHECK(st == PDC_TRANSFER_STATUS_PENDING,
                  "%s: status before completion is %s, expected PENDING", name, st_name(st));
            pending++;
            CHECK(now() - t0 < 120, "%s: still PENDING after 120 s", name);
        }
        double t_done = now() - t0;
        for (int k = 0; k < 2; k++) {
            CALL(status_of(req, &st) == 0);
            CHECK(st == PDC_TRANSFER_STATUS_NOT_FOUND,
                  "%s: status call %d after COMPLETE is %s, expected NOT_FOUND", name, k + 1,
                  st_name(st));
        }
        CALL(PDCregion_transfer_close(req) == SUCCEED);
        /* After a wait, status reports NOT_FOUND. */
        CALL(req = xfer1(got, PDC_READ, obj, 0, n));
        CALL(PDCregion_transfer_start(req) == SUCCEED);
        CALL(PDCregion_transfer_wait(req) == SUCCEED);
        CALL(status_of(req, &st) == 0);
        CHECK(st == PDC_TRANSFER_STATUS_NOT_FOUND,
              "%s: status after wait is %s, expected NOT_FOUND", name, st_name(st));
        CALL(PDCregion_transfer_close(req) == SUCCEED);
        if (!same(name, buf, got, n))
            return -1;
        CALL(PDCobj_close(obj) == SUCCEED);
        printf(
            "ok status placement=%s: PENDING x%ld, COMPLETE once, then NOT_FOUND (start %.1f ms, "
            "complete %.1f ms); NOT_FOUND after wait\n",
            placement_names[pl], pending, t_start * 1e3, t_done * 1e3);
    }
    free(buf);
    free(got);
    return 0;
}

static int case_never_started(void)
{
    unsigned char buf[64];
    pdcid_t obj, req;
    CALL(obj = mkobj1("never-started", 64, PDC_UINT8, PDC_OBJ_STATIC, 0));
    for (int a = 0; a < 2; a++) {
        CALL(req = xfer1(buf, a ? PDC_READ : PDC_WRITE, obj, 0, 64));
        pdc_transfer_status_t st;
        CALL(status_of(req, &st) == 0);
        CHECK(st == PDC_TRANSFER_STATUS_NOT_FOUND,
              "status of a never-started %s is %s, expected NOT_FOUND", a ? "read" : "write",
              st_name(st));
        CHECK(PDCregion_transfer_status(req, NULL) == FAIL && is_err("PDCBB_ERR_INVAL"),
              "status with NULL out-parameter: expected PDCBB_ERR_INVAL, got %s",
              PDCbb_last_error_name());
        CALL(PDCregion_transfer_close(req) == SUCCEED);
        CHECK(PDCregion_transfer_status(req, &st) == FAIL && is_err("PDCBB_ERR_BAD_ID"),
              "status of a closed request: expected PDCBB_ERR_BAD_ID, got %s",
              PDCbb_last_error_name());
        printf("ok never-started %s: status NOT_FOUND, close succeeds, closed id: %s: %s\n",
               a ? "read" : "write", PDCbb_last_error_name(), PDCbb_last_error_message());
    }
    CALL(PDCobj_close(obj) == SUCCEED);
    return 0;
}

static int case_close_unwaited(void)
{
    const uint64_t n = 4u << 20;
    unsigned char *buf = malloc(n), *want = malloc(n), *got = malloc(n);
    CHECK(buf && want && got, "out of memory");
    for (int pl = 0; pl < 4; pl++) {
        char name[64];
        snprintf(name, sizeof(name), "close-unwaited-%s", placement_names[pl]);
        pdcid_t obj, req;
        CALL(obj = mkobj1(name, n, PDC_UINT8, pl, 0));
        fill(want, n, 3000 + (uint64_t)pl);
        memcpy(buf, want, n);
        CALL(req = xfer1(buf, PDC_WRITE, obj, 0, n));
        CALL(PDCregion_transfer_start(req) == SUCCEED);
        CALL(PDCregion_transfer_close(req) == SUCCEED); /* waits */
        memset(buf, 0xEE, n);
        memset(got, 0x11, n);
        CALL(req = xfer1(got, PDC_READ, obj, 0, n));
        CALL(PDCregion_transfer_start(req) == SUCCEED);
        CALL(PDCregion_transfer_close(req) == SUCCEED); /* waits: got is filled */
        if (!same("read after unwaited close of write and read", want, got, n))
            return -1;
        /* PDCobj_close waits for the object's started transfers. */
        pdcid_t obj2;
        CALL(obj2 = PDCobj_open(tagged(name), pdc));
        fill(want, n, 3100 + (uint64_t)pl);
        memcpy(buf, want, n);
        CALL(req = xfer1(buf, PDC_WRITE, obj2, 0, n));
        CALL(PDCregion_transfer_start(req) == SUCCEED);
        CALL(PDCobj_close(obj2) == SUCCEED);
        memset(buf, 0xEE, n);
        perr_t rc = PDCregion_transfer_close(req);
        printf("  transfer_close after PDCobj_close: %s\n",
               rc == SUCCEED ? "SUCCEED" : PDCbb_last_error_name());
        CALL(read1(obj, got, 0, n) == 0);
        if (!same("read after PDCobj_close of an object with a started write", want, got, n))
            return -1;
        CALL(PDCobj_close(obj) == SUCCEED);
        printf("ok close-unwaited placement=%s: transfer_close and PDCobj_close waited\n",
               placement_names[pl]);
    }
    free(buf);
    free(want);
    free(got);
    return 0;
}

static int case_busy(void)
{
    const uint64_t n = 1u << 20;
    unsigned char *buf = malloc(n), *got = malloc(n);
    CHECK(buf && got, "out of memory");
    pdcid_t obj, req;
    CALL(obj = mkobj1("busy", n, PDC_UINT8, PDC_OBJ_STATIC, 0));
    fill(buf, n, 4000);
    CALL(req = xfer1(buf, PDC_WRITE, obj, 0, n));
    CALL(PDCregion_transfer_start(req) == SUCCEED);
    CHECK(PDCregion_transfer_start(req) == FAIL && is_err("PDCBB_ERR_BUSY"),
          "second start of an unwaited request: expected PDCBB_ERR_BUSY, got %s (%s)",
          PDCbb_last_error_name(), PDCbb_last_error_message());
    printf("ok busy: second start: %s: %s\n", PDCbb_last_error_name(), PDCbb_last_error_message());
    CALL(PDCregion_transfer_wait(req) == SUCCEED);
    /* Waited: it may be started again, with new contents of the buffer. */
    fill(buf, n, 4001);
    CALL(PDCregion_transfer_start(req) == SUCCEED);
    CALL(PDCregion_transfer_wait(req) == SUCCEED);
    CALL(PDCregion_transfer_close(req) == SUCCEED);
    CALL(read1(obj, got, 0, n) == 0);
    if (!same("read after restarting a waited request", buf, got, n))
        return -1;
    CALL(PDCobj_close(obj) == SUCCEED);
    printf("ok busy: a waited request was started again and wrote the new buffer\n");
    free(buf);
    free(got);
    return 0;
}

/* PDCclose with requests still open: a waited read, an unwaited write, a never-started one.
 * PDCclose waits for the write and releases everything; a new PDCinit sees the data. */
static int case_open_at_close(void)
{
    const uint64_t n = 4u << 20, half = n / 2;
    unsigned char *old = malloc(n), *neu = malloc(half), *got = malloc(n);
    CHECK(old && neu && got, "out of memory");
    for (int pl = 0; pl < 4; pl++) {
        char name[64];
        snprintf(name, sizeof(name), "open-at-close-%s", placement_names[pl]);
        pdcid_t obj;
        CALL(obj = mkobj1(name, n, PDC_UINT8, pl, 0));
        fill(old, n, 9500 + (uint64_t)pl);
        CALL(write1(obj, old, 0, n) == 0);
        pdcid_t rd, wr, never;
        CALL(rd = xfer1(got, PDC_READ, obj, 0, n));
        CALL(PDCregion_transfer_start(rd) == SUCCEED);
        CALL(PDCregion_transfer_wait(rd) == SUCCEED);
        CALL(never = xfer1(got, PDC_READ, obj, 0, n));
        (void)never;
        CALL(wr = xfer1(neu, PDC_WRITE, obj, 0, half));
        fill(neu, half, 9600 + (uint64_t)pl); /* before start: the request reads it later */
        CALL(PDCregion_transfer_start(wr) == SUCCEED);
        /* obj, rd, wr and never stay open */
    }
    CHECK(PDCclose(pdc) == SUCCEED, "PDCclose with open requests failed: %s: %s",
          PDCbb_last_error_name(), PDCbb_last_error_message());
    printf("ok open-at-close: PDCclose with open requests (waited read, unwaited write, "
           "never started) succeeded\n");
    CALL(pdc = PDCinit("pdc"));
    pdcid_t cprop;
    CALL(cprop = PDCprop_create(PDC_CONT_CREATE, pdc));
    CALL(cont = PDCcont_create("region-cases", cprop));
    PDCprop_close(cprop);
    for (int pl = 0; pl < 4; pl++) {
        char name[64];
        snprintf(name, sizeof(name), "open-at-close-%s", placement_names[pl]);
        pdcid_t obj;
        CALL(obj = PDCobj_open(tagged(name), pdc));
        fill(old, n, 9500 + (uint64_t)pl);
        fill(old, half, 9600 + (uint64_t)pl);
        memset(got, 0, n);
        CALL(read1(obj, got, 0, n) == 0);
        if (!same("data after PDCclose waited the unwaited write", old, got, n))
            return -1;
        CALL(PDCobj_close(obj) == SUCCEED);
        printf("ok open-at-close placement=%s: the write left open was completed by PDCclose\n",
               placement_names[pl]);
    }
    free(old);
    free(neu);
    free(got);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Bad regions.                                                                             */

typedef struct {
    const char *name;
    int write_only;
    int lnd;
    uint64_t loff[4], lsize[4];
    int rnd;
    uint64_t roff[4], rsize[4];
} bad_t;

#define U64MAX UINT64_MAX
static const bad_t bad_cases[] = {
    /* object: 3-D 4x5x6 int */
    {"offset-outside", 0, 3, {0, 0, 0}, {1, 1, 1}, 3, {4, 0, 0}, {1, 1, 1}},
    {"size-too-big", 0, 3, {0, 0, 0}, {5, 5, 6}, 3, {0, 0, 0}, {5, 5, 6}},
    {"box-crosses-end", 0, 3, {0, 0, 0}, {1, 1, 2}, 3, {3, 4, 5}, {1, 1, 2}},
    {"last-dim-outside", 0, 1, {0}, {1}, 3, {0, 0, 6}, {1, 1, 1}},
    {"zero-size-remote", 0, 1, {0}, {0}, 3, {0, 0, 0}, {0, 5, 6}},
    {"zero-size-both", 0, 3, {0, 0, 0}, {4, 0, 6}, 3, {0, 0, 0}, {4, 0, 6}},
    {"zero-size-local", 0, 1, {0}, {0}, 3, {0, 0, 0}, {1, 1, 1}},
    {"remote-ndim-less", 0, 1, {0}, {20}, 2, {0, 0}, {4, 5}},
    {"remote-ndim-more", 0, 1, {0}, {24}, 4, {0, 0, 0, 0}, {1, 4, 3, 2}},
    {"count-mismatch", 0, 1, {0}, {7}, 3, {0, 0, 0}, {2, 2, 2}},
    {"count-mismatch-same-shape", 0, 3, {0, 0, 0}, {2, 2, 3}, 3, {0, 0, 0}, {2, 2, 2}},
    {"offset-overflow", 0, 3, {0, 0, 0}, {4, 1, 1}, 3, {U64MAX - 1, 0, 0}, {4, 1, 1}},
    {"size-overflow", 0, 3, {0, 0, 0}, {1, 1, 1}, 3, {1, 0, 0}, {U64MAX, 1, 1}},
    /* local count (2^63+60)*2 wraps to 120, the remote count */
    {"local-count-overflow", 0, 2, {0, 0}, {(1ULL << 63) + 60, 2}, 3, {0, 0, 0}, {4, 5, 6}},
    /* remote count 2^64+120 wraps to 120 (and is outside the object) */
    {"remote-count-overflow", 0, 1, {0}, {120}, 3, {0, 0, 0}, {(1ULL << 63) + 60, 2, 1}},
};

/* Expect the request to be refused with code at create or at start. */
static int expect_refused(const char *what, const char *code, void *buf, pdc_access_t a,
                          pdcid_t obj, int lnd, const uint64_t *lo, const uint64_t *ls, int rnd,
                          const uint64_t *ro, const uint64_t *rs)
{
    const char *where = "transfer_create";
    pdcid_t req = xfer(buf, a, obj, lnd, lo, ls, rnd, ro, rs);
    if (req) {
        where = "transfer_start";
        if (PDCregion_transfer_start(req) == SUCCEED) {
            PDCregion_transfer_wait(req);
            PDCregion_transfer_close(req);
            FAILF("%s (%s) was accepted: transfer_create and transfer_start succeeded, expected %s",
                  what, a == PDC_WRITE ? "write" : "read", code);
            return -1;
        }
    }
    char name[64], msg[512];
    snprintf(name, sizeof(name), "%s", PDCbb_last_error_name());
    snprintf(msg, sizeof(msg), "%s", PDCbb_last_error_message());
    if (req)
        PDCregion_transfer_close(req);
    if (strcmp(name, code) != 0) {
        FAILF("%s (%s) refused at %s with %s (%s), expected %s", what,
              a == PDC_WRITE ? "write" : "read", where, name, msg, code);
        return -1;
    }
    if (msg[0] == '\0' || strcmp(msg, "success") == 0) {
        FAILF("%s: refused with %s but without a message", what, name);
        return -1;
    }
    printf("ok bad-region %s (%s): refused at %s: %s: %s\n", what,
           a == PDC_WRITE ? "write" : "read", where, name, msg);
    return 0;
}

static int case_bad_regions(void)
{
    uint64_t dims[3] = {4, 5, 6};
    pdcid_t obj;
    CALL(obj = mkobj("bad-regions", 3, dims, PDC_INT, PDC_OBJ_STATIC, 0));
    /* Big enough for every local box that is not absurd; never touched for refused ones. */
    static int buf[1024];
    int bad = 0;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const bad_t *c = &bad_cases[i];
        for (int a = 0; a < 2; a++)
            if (expect_refused(c->name, "PDCBB_ERR_BAD_REGION", buf, a ? PDC_READ : PDC_WRITE, obj,
                               c->lnd, c->loff, c->lsize, c->rnd, c->roff, c->rsize) != 0)
                bad++;
    }
    uint64_t z3[3] = {0, 0, 0}, one3[3] = {1, 1, 1};
    if (expect_refused("NULL buffer", "PDCBB_ERR_INVAL", NULL, PDC_WRITE, obj, 3, z3, one3, 3, z3,
                       one3) != 0)
        bad++;
    if (expect_refused("access PDC_NA", "PDCBB_ERR_INVAL", buf, PDC_NA, obj, 3, z3, one3, 3, z3,
                       one3) != 0)
        bad++;
    /* Closed region and wrong kind of id. */
    pdcid_t reg, reg2;
    CALL(reg = PDCregion_create(3, z3, one3));
    CALL(reg2 = PDCregion_create(3, z3, one3));
    CALL(PDCregion_close(reg) == SUCCEED);
    if (PDCregion_transfer_create(buf, PDC_WRITE, obj, reg, reg2) != 0 ||
        !is_err("PDCBB_ERR_BAD_ID")) {
        FAILF("transfer_create with a closed local region: expected PDCBB_ERR_BAD_ID, got %s",
              PDCbb_last_error_name());
        bad++;
    } else
        printf("ok bad-id closed region: %s: %s\n", PDCbb_last_error_name(),
               PDCbb_last_error_message());
    if (PDCregion_transfer_create(buf, PDC_WRITE, reg2, reg2, reg2) != 0 ||
        !(is_err("PDCBB_ERR_BAD_ID") || is_err("PDCBB_ERR_WRONG_TYPE"))) {
        FAILF("transfer_create with a region id as object: expected PDCBB_ERR_BAD_ID or "
              "WRONG_TYPE, got %s",
              PDCbb_last_error_name());
        bad++;
    } else
        printf("ok bad-id region as object: %s: %s\n", PDCbb_last_error_name(),
               PDCbb_last_error_message());
    CALL(PDCregion_close(reg2) == SUCCEED);
    /* The daemon keeps serving: a good transfer right after, on the edges of the object. */
    int w[120], r[120];
    for (int i = 0; i < 120; i++)
        w[i] = 7000 + i;
    uint64_t n120 = 120, full[3] = {4, 5, 6};
    CALL(xfer_now(xfer(w, PDC_WRITE, obj, 1, z3, &n120, 3, z3, full)) == 0);
    uint64_t lastoff[3] = {3, 4, 5};
    CALL(xfer_now(xfer(r, PDC_READ, obj, 3, z3, one3, 3, lastoff, one3)) == 0);
    CHECK(r[0] == 7119, "last element reads %d, expected 7119", r[0]);
    CALL(xfer_now(xfer(r, PDC_READ, obj, 3, z3, full, 3, z3, full)) == 0);
    if (!same("whole object after the refused requests", w, r, sizeof(w)))
        return -1;
    CALL(PDCobj_close(obj) == SUCCEED);
    if (bad)
        return -1;
    printf("ok bad-regions: all refused; good transfers still work\n");
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Layout of local buffers.                                                                 */

static int case_local_shapes(void)
{
    uint64_t dims[2] = {4, 6};
    pdcid_t obj;
    CALL(obj = mkobj("local-shapes", 2, dims, PDC_INT32, PDC_OBJ_STATIC, 0));
    /* Write from a 1-D buffer of 12 elements whose box is [2, 10): elements 2..9 go, in
     * row-major order, to the 2x4 box at (1,1) of the object. */
    int32_t src[12];
    for (int i = 0; i < 12; i++)
        src[i] = 100 + i;
    uint64_t lo = 2, ls = 8, ro[2] = {1, 1}, rs[2] = {2, 4}, z[3] = {0, 0, 0};
    CALL(xfer_now(xfer(src, PDC_WRITE, obj, 1, &lo, &ls, 2, ro, rs)) == 0);
    int32_t all[24], want[24] = {0};
    for (int k = 0; k < 8; k++)
        want[(1 + k / 4) * 6 + 1 + k % 4] = 102 + k;
    CALL(xfer_now(xfer(all, PDC_READ, obj, 2, z, dims, 2, z, dims)) == 0);
    if (!same("2-D object written from a 1-D buffer with offset", want, all, sizeof(all))) {
        for (int i = 0; i < 24; i++)
            printf("%s%d", i % 6 ? " " : "\n  ", all[i]);
        printf("\n");
        return -1;
    }
    printf("ok local-shapes: 1-D buffer box [2,10) -> object box (1,1)+(2,4)\n");
    /* Read that box into a 3-D buffer of extents 2x3x5 whose box is (1,1,1)+(1,2,4): the rest
     * of the buffer must stay untouched. */
    int32_t b3[30];
    for (int i = 0; i < 30; i++)
        b3[i] = -1;
    uint64_t l3o[3] = {1, 1, 1}, l3s[3] = {1, 2, 4};
    CALL(xfer_now(xfer(b3, PDC_READ, obj, 3, l3o, l3s, 2, ro, rs)) == 0);
    int32_t w3[30];
    for (int i = 0; i < 30; i++)
        w3[i] = -1;
    for (int k = 0; k < 8; k++) /* buffer index of (1, 1 + k/4, 1 + k%4) in 2x3x5 */
        w3[1 * 15 + (1 + k / 4) * 5 + 1 + k % 4] = 102 + k;
    if (!same("object box read into a 3-D buffer box", w3, b3, sizeof(b3)))
        return -1;
    printf("ok local-shapes: object box (1,1)+(2,4) -> 3-D buffer box (1,1,1)+(1,2,4), padding "
           "untouched\n");
    /* Write a column (4x1 box) from a 2-D buffer 2x2 with offset (0,0), then read a row of the
     * object into a 2-D buffer 3x2 at offset (0,0) size (3,2). */
    int32_t col[4] = {-5, -6, -7, -8};
    uint64_t c2o[2] = {0, 0}, c2s[2] = {2, 2}, cro[2] = {0, 5}, crs[2] = {4, 1};
    CALL(xfer_now(xfer(col, PDC_WRITE, obj, 2, c2o, c2s, 2, cro, crs)) == 0);
    for (int k = 0; k < 4; k++)
        want[k * 6 + 5] = -5 - k;
    int32_t row[6];
    uint64_t r2s[2] = {3, 2}, rro[2] = {2, 0}, rrs[2] = {1, 6};
    CALL(xfer_now(xfer(row, PDC_READ, obj, 2, c2o, r2s, 2, rro, rrs)) == 0);
    if (!same("row 2 read into a 3x2 buffer", want + 12, row, sizeof(row)))
        return -1;
    CALL(xfer_now(xfer(all, PDC_READ, obj, 1, z, (uint64_t[]){24}, 2, z, dims)) == 0);
    if (!same("whole object read into a 1-D buffer", want, all, sizeof(all)))
        return -1;
    CALL(PDCobj_close(obj) == SUCCEED);
    printf("ok local-shapes: column from a 2x2 buffer, row into a 3x2 buffer, whole into 1-D\n");
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Zeros, deletion, dimensions.                                                             */

static int case_zero_read(void)
{
    for (int pl = 0; pl < 4; pl++) {
        char name[64];
        snprintf(name, sizeof(name), "zero-read-%s", placement_names[pl]);
        uint64_t dims[3] = {16, 32, 64}, z[3] = {0, 0, 0}, n = 16 * 32 * 64;
        pdcid_t obj;
        CALL(obj = mkobj(name, 3, dims, PDC_DOUBLE, pl, 0));
        double *buf = malloc(n * sizeof(double)), *want = calloc(n, sizeof(double));
        CHECK(buf && want, "out of memory");
        memset(buf, 0x77, n * sizeof(double));
        CALL(xfer_now(xfer(buf, PDC_READ, obj, 3, z, dims, 3, z, dims)) == 0);
        if (!same("never-written object", want, buf, n * sizeof(double)))
            return -1;
        double box[2 * 3 * 4];
        for (int i = 0; i < 24; i++)
            box[i] = 1.5 + i;
        uint64_t bo[3] = {7, 10, 30}, bs[3] = {2, 3, 4};
        CALL(xfer_now(xfer(box, PDC_WRITE, obj, 3, z, bs, 3, bo, bs)) == 0);
        for (int i = 0; i < 24; i++)
            want[((7 + i / 12) * 32 + 10 + (i / 4) % 3) * 64 + 30 + i % 4] = 1.5 + i;
        memset(buf, 0x77, n * sizeof(double));
        CALL(xfer_now(xfer(buf, PDC_READ, obj, 3, z, dims, 3, z, dims)) == 0);
        if (!same("object with one small box written", want, buf, n * sizeof(double)))
            return -1;
        free(buf);
        free(want);
        CALL(PDCobj_close(obj) == SUCCEED);
        printf("ok zero-read placement=%s\n", placement_names[pl]);
    }
    return 0;
}

static int case_deleted(void)
{
    const uint64_t n = 100000;
    unsigned char *buf = malloc(n), *got = malloc(n), *zero = calloc(1, n);
    CHECK(buf && got && zero, "out of memory");
    for (int pl = 0; pl < 4; pl++) {
        char name[64];
        snprintf(name, sizeof(name), "deleted-%s", placement_names[pl]);
        pdcid_t obj;
        CALL(obj = mkobj1(name, n, PDC_UINT8, pl, 0));
        fill(buf, n, 5000 + (uint64_t)pl);
        CALL(write1(obj, buf, 0, n) == 0);
        CALL(PDCobj_del(obj) == SUCCEED);
        /* Reads and writes through the still-open id are refused with NOT_FOUND: at create, at
         * start, or (default consistency: start only sends) at wait. */
        for (int a = 0; a < 2; a++) {
            const char *what = a ? "write" : "read";
            memset(got, 0x55, n);
            pdcid_t req = a ? xfer1(buf, PDC_WRITE, obj, 0, n) : xfer1(got, PDC_READ, obj, 0, n);
            const char *where = "transfer_create";
            int accepted = 0;
            if (req) {
                where = "transfer_start";
                if (PDCregion_transfer_start(req) == SUCCEED) {
                    where = "transfer_wait";
                    accepted = PDCregion_transfer_wait(req) == SUCCEED;
                }
            }
            char ename[64], emsg[512];
            snprintf(ename, sizeof(ename), "%s", PDCbb_last_error_name());
            snprintf(emsg, sizeof(emsg), "%s", PDCbb_last_error_message());
            if (req)
                PDCregion_transfer_close(req);
            if (accepted) {
                int z = memcmp(got, zero, n) == 0, old = memcmp(got, buf, n) == 0;
                FAILF("%s: %s of a deleted object succeeded (create, start and wait)%s", name, what,
                      a     ? ""
                      : old ? " and returned its old data"
                      : z   ? " and returned zeros"
                            : "");
            } else if (strcmp(ename, "PDCBB_ERR_NOT_FOUND") != 0)
                FAILF("%s: %s of a deleted object refused at %s with %s (%s), expected NOT_FOUND",
                      name, what, where, ename, emsg);
            else
                printf("ok deleted placement=%s: %s refused at %s: %s: %s\n", placement_names[pl],
                       what, where, ename, emsg);
        }
        CALL(PDCobj_close(obj) == SUCCEED);
        /* A new object of the same name starts empty. */
        CALL(obj = mkobj1(name, n, PDC_UINT8, pl, 0));
        memset(got, 0x55, n);
        CALL(read1(obj, got, 0, n) == 0);
        if (!same("new object with the name of a deleted one", zero, got, n))
            return -1;
        CALL(PDCobj_close(obj) == SUCCEED);
        printf("ok deleted placement=%s: a new object of the same name reads zeros\n",
               placement_names[pl]);
    }
    free(buf);
    free(got);
    free(zero);
    return 0;
}

static int case_set_dims(void)
{
    int32_t v[100], got[100], zero[50] = {0};
    for (int i = 0; i < 100; i++)
        v[i] = i + 1;
    pdcid_t obj;
    CALL(obj = mkobj1("set-dims", 100, PDC_INT32, PDC_OBJ_STATIC, 0));
    CALL(write1(obj, v, 0, 100) == 0);
    uint64_t d50 = 50, d100 = 100;
    CALL(PDCobj_set_dims(obj, 1, &d50) == SUCCEED);
    CALL(read1(obj, got, 0, 50) == 0);
    if (!same("first 50 after shrinking", v, got, 50 * 4))
        return -1;
    uint64_t z = 0, off = 50;
    if (expect_refused("read beyond the shrunk extent", "PDCBB_ERR_BAD_REGION", got, PDC_READ, obj,
                       1, &z, &d50, 1, &off, &d50) != 0)
        return -1;
    CALL(PDCobj_set_dims(obj, 1, &d100) == SUCCEED);
    memset(got, 0x55, sizeof(got));
    CALL(read1(obj, got, 0, 100) == 0);
    if (!same("first 50 after growing again", v, got, 50 * 4) ||
        !same("elements 50..99 after shrink and grow (must be zero)", zero, got + 50, 50 * 4))
        return -1;
    CALL(PDCobj_close(obj) == SUCCEED);
    printf("ok set-dims: shrink hides data, grow shows zeros\n");
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Whole-object calls, object buffers, flush, region ids.                                   */

static int case_put_get(void)
{
    const uint64_t n = 300001;
    unsigned char *data = malloc(n), *got = malloc(n + 8);
    CHECK(data && got, "out of memory");
    fill(data, n, 6000);
    pdcid_t obj;
    CALL(obj = PDCobj_put_data(tagged("put-get"), data, n, cont));
    struct pdc_obj_info *info;
    CALL(info = PDCobj_get_info(obj));
    CHECK(info->obj_pt && info->obj_pt->ndim == 1 && info->obj_pt->dims[0] == n &&
              info->obj_pt->type == PDC_CHAR,
          "put_data object: ndim=%zu dims[0]=%" PRIu64 " type=%s, expected 1, %" PRIu64
          ", PDC_CHAR",
          info->obj_pt ? info->obj_pt->ndim : 0,
          info->obj_pt && info->obj_pt->ndim ? info->obj_pt->dims[0] : 0,
          info->obj_pt ? get_enum_name_by_dtype(info->obj_pt->type) : "?", n);
    memset(got, 0, n);
    CALL(PDCobj_get_data(obj, got, n) == SUCCEED);
    if (!same("get_data after put_data", data, got, n))
        return -1;
    pdcid_t obj2;
    CALL(obj2 = PDCobj_open(tagged("put-get"), pdc));
    memset(got, 0, n);
    CALL(PDCobj_get_data(obj2, got, 1000) == SUCCEED);
    if (!same("get_data of the first 1000 bytes through another id", data, got, 1000))
        return -1;
    /* The same bytes through a region transfer. */
    CALL(read1(obj2, got, 1000, 5000) == 0);
    if (!same("region read of put_data bytes", data + 1000, got, 5000))
        return -1;
    /* Documented: PDCBB_ERR_INVAL (size larger than the object). Checked without returning so
     * that the rest of the case runs. */
    if (PDCobj_get_data(obj2, got, n + 1) != FAIL || !is_err("PDCBB_ERR_INVAL"))
        FAILF("get_data of more bytes than the object: expected PDCBB_ERR_INVAL, got %s (%s)",
              PDCbb_last_error_name(), PDCbb_last_error_message());
    else
        printf("ok put-get: get_data of too many bytes: %s: %s\n", PDCbb_last_error_name(),
               PDCbb_last_error_message());
    if (PDCobj_put_data(tagged("put-get-null"), NULL, 10, cont) != 0 || !is_err("PDCBB_ERR_INVAL"))
        FAILF("put_data of NULL: expected PDCBB_ERR_INVAL, got %s", PDCbb_last_error_name());
    CALL(PDCobj_close(obj2) == SUCCEED);
    CALL(PDCobj_close(obj) == SUCCEED);
    free(data);
    free(got);
    printf("ok put-get: %" PRIu64 " bytes round trip, partial get, region read\n", n);
    return 0;
}

static int case_obj_buf(void)
{
    static double mine[64];
    pdcid_t prop;
    CALL(prop = PDCprop_create(PDC_OBJ_CREATE, pdc));
    uint64_t d = 64;
    CALL(PDCprop_set_obj_dims(prop, 1, &d) == SUCCEED);
    CALL(PDCprop_set_obj_type(prop, PDC_DOUBLE) == SUCCEED);
    CALL(PDCprop_set_obj_buf(prop, mine) == SUCCEED);
    pdcid_t obj;
    CALL(obj = PDCobj_create(cont, tagged("obj-buf"), prop));
    void **slot;
    CALL(slot = PDCobj_buf_retrieve(obj));
    CHECK(*slot == (void *)mine, "PDCobj_buf_retrieve gives %p, expected %p", *slot, (void *)mine);
    pdcid_t plain;
    CALL(plain = mkobj1("obj-buf-none", 8, PDC_INT, PDC_OBJ_STATIC, 0));
    CALL(slot = PDCobj_buf_retrieve(plain));
    CHECK(*slot == NULL, "object without a buffer: PDCobj_buf_retrieve slot holds %p", *slot);
    CALL(PDCobj_close(plain) == SUCCEED);
    CALL(PDCobj_close(obj) == SUCCEED);
    CALL(PDCprop_close(prop) == SUCCEED);
    printf("ok obj-buf: PDCobj_buf_retrieve returns the property's buffer\n");
    return 0;
}

static int case_flush(void)
{
    const uint64_t n = 1u << 20;
    unsigned char *buf = malloc(n), *got = malloc(n);
    CHECK(buf && got, "out of memory");
    pdcid_t obj;
    CALL(obj = mkobj1("flush", n, PDC_UINT8, PDC_REGION_STATIC, 0));
    fill(buf, n, 7000);
    CALL(write1(obj, buf, 0, n) == 0);
    CALL(PDCobj_flush_start(obj) == SUCCEED);
    CALL(PDCobj_flush_all_start() == SUCCEED);
    CALL(read1(obj, got, 0, n) == 0);
    if (!same("read after flush", buf, got, n))
        return -1;
    CALL(PDCobj_close(obj) == SUCCEED);
    free(buf);
    free(got);
    printf("ok flush: PDCobj_flush_start and PDCobj_flush_all_start succeed, data intact\n");
    return 0;
}

static int case_close_region(void)
{
    uint64_t off[2] = {1, 2}, size[2] = {3, 4};
    pdcid_t reg;
    CALL(reg = PDCregion_create(2, off, size));
    struct pdc_region_info *ri;
    CALL(ri = PDCregion_get_info(reg));
    CHECK(ri->ndim == 2 && ri->offset[0] == 1 && ri->offset[1] == 2 && ri->size[0] == 3 &&
              ri->size[1] == 4,
          "PDCregion_get_info: ndim=%zu offset=(%" PRIu64 ",%" PRIu64 ") size=(%" PRIu64 ",%" PRIu64
          ")",
          ri->ndim, ri->offset[0], ri->offset[1], ri->size[0], ri->size[1]);
    CHECK(PDCobj_close(reg) == SUCCEED, "PDCobj_close on a region id failed: %s: %s",
          PDCbb_last_error_name(), PDCbb_last_error_message());
    CHECK(PDCregion_close(reg) == FAIL && is_err("PDCBB_ERR_BAD_ID"),
          "PDCregion_close after PDCobj_close: expected PDCBB_ERR_BAD_ID, got %s",
          PDCbb_last_error_name());
    CHECK(PDCregion_get_info(reg) == NULL && is_err("PDCBB_ERR_BAD_ID"),
          "PDCregion_get_info of a closed region: expected PDCBB_ERR_BAD_ID, got %s",
          PDCbb_last_error_name());
    /* A region used by a request may be closed with PDCobj_close too; the request keeps it. */
    uint64_t z = 0, n = 16;
    pdcid_t obj, l, r, req;
    CALL(obj = mkobj1("close-region", 16, PDC_INT, PDC_OBJ_STATIC, 0));
    int w[16], g[16];
    for (int i = 0; i < 16; i++)
        w[i] = 40 + i;
    CALL(l = PDCregion_create(1, &z, &n));
    CALL(r = PDCregion_create(1, &z, &n));
    CALL(req = PDCregion_transfer_create(w, PDC_WRITE, obj, l, r));
    CALL(PDCobj_close(l) == SUCCEED);
    CALL(PDCobj_close(r) == SUCCEED);
    CALL(xfer_now(req) == 0);
    CALL(read1(obj, g, 0, 16) == 0);
    if (!same("write whose regions were closed with PDCobj_close", w, g, sizeof(w)))
        return -1;
    CALL(PDCobj_close(obj) == SUCCEED);
    printf("ok close-region: PDCobj_close accepts region ids; the request kept its copy\n");
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Capacity.                                                                                */

static int case_capacity(uint64_t capacity, uint64_t chunk, int pl)
{
    uint64_t limit = 4 * capacity, nchunks = limit / chunk;
    unsigned char *buf = malloc(chunk), *got = malloc(chunk);
    CHECK(buf && got, "out of memory");
    pdcid_t obj;
    CALL(obj = mkobj1("capacity-big", limit, PDC_UINT8, pl, 0));
    uint64_t ok = 0, i;
    char msg[512] = "", name[64] = "";
    for (i = 0; i < nchunks; i++) {
        fill(buf, chunk, 8000 + i);
        pdcid_t req;
        CALL(req = xfer1(buf, PDC_WRITE, obj, i * chunk, chunk));
        int failed =
            PDCregion_transfer_start(req) != SUCCEED || PDCregion_transfer_wait(req) != SUCCEED;
        if (failed) {
            snprintf(name, sizeof(name), "%s", PDCbb_last_error_name());
            snprintf(msg, sizeof(msg), "%s", PDCbb_last_error_message());
        }
        PDCregion_transfer_close(req);
        if (failed)
            break;
        ok += chunk;
    }
    CHECK(i < nchunks, "wrote %" PRIu64 " bytes with a capacity of %" PRIu64 " without NOSPC", ok,
          capacity);
    CHECK(strcmp(name, "PDCBB_ERR_NOSPC") == 0,
          "write of chunk %" PRIu64 " failed with %s (%s), expected PDCBB_ERR_NOSPC", i, name, msg);
    CHECK(ok <= capacity, "%" PRIu64 " bytes were accepted, more than the capacity %" PRIu64, ok,
          capacity);
    printf("ok capacity placement=%s: NOSPC after %" PRIu64 " bytes (%" PRIu64 " chunks of %" PRIu64
           ", capacity %" PRIu64 "): %s: %s\n",
           placement_names[pl], ok, i, chunk, capacity, name, msg);
    /* A POSIX write that does not fit fails at start. */
    pdcid_t pobj;
    CALL(pobj = mkobj1("capacity-posix", chunk, PDC_UINT8, pl, 1));
    pdcid_t req;
    CALL(req = xfer1(buf, PDC_WRITE, pobj, 0, chunk));
    if (PDCregion_transfer_start(req) == SUCCEED) {
        /* With several daemons the new object may live on one that has room. */
        CHECK(PDCbb_nservers() > 1,
              "POSIX write when full: start succeeded, expected PDCBB_ERR_NOSPC");
        printf("ok capacity: POSIX write of a new object fitted on another daemon\n");
    } else {
        CHECK(is_err("PDCBB_ERR_NOSPC"),
              "POSIX write when full: start gave %s (%s), expected PDCBB_ERR_NOSPC",
              PDCbb_last_error_name(), PDCbb_last_error_message());
        printf("ok capacity: POSIX write when full refused at start: %s: %s\n",
               PDCbb_last_error_name(), PDCbb_last_error_message());
    }
    /* After a failed start the header leaves open whether close reports the error again. */
    if (PDCregion_transfer_close(req) != SUCCEED)
        printf("  transfer_close after the failed start: %s\n", PDCbb_last_error_name());
    /* Everything accepted is still there; the daemon keeps serving. */
    for (uint64_t k = 0; k * chunk < ok; k++) {
        fill(buf, chunk, 8000 + k);
        CALL(read1(obj, got, k * chunk, chunk) == 0);
        if (!same("chunk written before NOSPC", buf, got, chunk))
            return -1;
    }
    /* Overwriting bytes that are already stored needs no new space. Checked without returning,
     * so that the rest of the case runs. */
    int over_ok = 1;
    for (int round = 0; round < 3 && over_ok; round++) {
        fill(buf, 4096, 8500 + (uint64_t)round);
        if (write1(obj, buf, 4096, 4096) != 0) {
            FAILF("overwrite of 4 KiB of existing data when full (round %d) failed: %s: %s", round,
                  xerr_name, xerr_msg);
            over_ok = 0;
        }
    }
    if (over_ok) {
        CALL(read1(obj, got, 4096, 4096) == 0);
        if (!same("overwritten data", buf, got, 4096))
            return -1;
        printf("ok capacity placement=%s: after NOSPC, reads of all %" PRIu64
               " bytes and overwrites work\n",
               placement_names[pl], ok);
    }
    /* Deleting the object frees its space. */
    CALL(PDCobj_del(obj) == SUCCEED);
    CALL(PDCobj_close(obj) == SUCCEED);
    /* All but one chunk of what was accepted fits again (the POSIX object may hold one). */
    pdcid_t again;
    uint64_t half = ok > chunk ? ok - chunk : chunk;
    CALL(again = mkobj1("capacity-again", half, PDC_UINT8, pl, 0));
    for (uint64_t off = 0; off < half; off += chunk) {
        fill(buf, chunk, 9000 + off);
        CHECK(write1(again, buf, off, chunk) == 0,
              "write at %" PRIu64 " of %" PRIu64 " bytes after deleting the full object failed: "
              "%s: %s",
              off, half, xerr_name, xerr_msg);
    }
    for (uint64_t off = 0; off < half; off += chunk) {
        fill(buf, chunk, 9000 + off);
        CALL(read1(again, got, off, chunk) == 0);
        if (!same("data written after the delete", buf, got, chunk))
            return -1;
    }
    /* Leave the space free for a following case. */
    CALL(PDCobj_del(again) == SUCCEED);
    CALL(PDCobj_del(pobj) == SUCCEED);
    CALL(PDCobj_close(again) == SUCCEED);
    CALL(PDCobj_close(pobj) == SUCCEED);
    printf("ok capacity placement=%s: after deleting the object, %" PRIu64
           " bytes were written again\n",
           placement_names[pl], half);
    free(buf);
    free(got);
    return 0;
}

/* Repeated, overlapping overwrites of an object of half the capacity never run out of space
 * (stored bytes do not grow with overwrites), and the last write wins. */
static int case_overwrite(uint64_t capacity, int pl, int rounds)
{
    const uint64_t n = capacity / 2;
    unsigned char *ref = calloc(1, n), *buf = malloc(n), *got = malloc(n);
    CHECK(ref && buf && got, "out of memory");
    pdcid_t obj;
    CALL(obj = mkobj1("overwrite", n, PDC_UINT8, pl, 0));
    uint64_t total = 0, s = 12345;
    for (int round = 0; round < rounds; round++) {
        uint64_t a, b;
        if (round % 10 == 0)
            a = 0, b = n;
        else {
            s = mix64(s);
            a = s % n;
            s = mix64(s);
            b = a + 1 + s % (n - a);
        }
        fill(buf, b - a, 11000 + (uint64_t)round);
        CHECK(write1(obj, buf, a, b - a) == 0,
              "overwrite round %d of [%" PRIu64 ",%" PRIu64 ") (object %" PRIu64 " bytes, capacity "
              "%" PRIu64 ", %" PRIu64 " bytes written so far) failed: %s: %s",
              round, a, b, n, capacity, total, xerr_name, xerr_msg);
        memcpy(ref + a, buf, b - a);
        total += b - a;
    }
    CALL(read1(obj, got, 0, n) == 0);
    if (!same("object after overlapping overwrites", ref, got, n))
        return -1;
    CALL(PDCobj_del(obj) == SUCCEED); /* give the space back for the next case */
    CALL(PDCobj_close(obj) == SUCCEED);
    printf("ok overwrite placement=%s: %" PRIu64 " bytes written over a %" PRIu64 "-byte object "
           "with capacity %" PRIu64 ", no NOSPC, last write wins\n",
           placement_names[pl], total, n, capacity);
    free(ref);
    free(buf);
    free(got);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Durability helpers: write in one process, verify in another (after a daemon restart).     */

#define DUR_ROWS 64
#define DUR_COLS 1000

static uint32_t dur_value(uint64_t seed, int k, uint64_t elem, int pass)
{
    return (uint32_t)mix64(seed * 1000003ULL + (uint64_t)k * 7919ULL + elem * 31ULL +
                           (uint64_t)pass);
}

static int case_durable(const char *name, uint64_t seed, int verify)
{
    const uint64_t n = DUR_ROWS * DUR_COLS;
    uint64_t dims[2] = {DUR_ROWS, DUR_COLS}, z[2] = {0, 0};
    uint32_t *buf = malloc(n * 4), *want = malloc(n * 4);
    CHECK(buf && want, "out of memory");
    for (int k = 0; k < 8; k++) {
        int pl = k % 4, posix = k / 4;
        char oname[128];
        snprintf(oname, sizeof(oname), "%s-%s-%s", name, placement_names[pl],
                 posix ? "posix" : "default");
        /* Expected: pass 0 writes 4 row stripes; pass 1 overwrites the box (10,100)+(40,500). */
        for (uint64_t e = 0; e < n; e++) {
            uint64_t row = e / DUR_COLS, col = e % DUR_COLS;
            int in = row >= 10 && row < 50 && col >= 100 && col < 600;
            want[e] = dur_value(seed, k, e, in);
        }
        pdcid_t obj;
        if (!verify) {
            CALL(obj = mkobj(oname, 2, dims, PDC_UINT32, pl, posix));
            pdcid_t reqs[5];
            uint32_t *stripes = malloc(n * 4), *box = malloc(40 * 500 * 4);
            CHECK(stripes && box, "out of memory");
            for (uint64_t e = 0; e < n; e++)
                stripes[e] = dur_value(seed, k, e, 0);
            for (int s = 0; s < 4; s++) {
                uint64_t off[2] = {(uint64_t)s * 16, 0}, size[2] = {16, DUR_COLS};
                CALL(reqs[s] = xfer(stripes + (uint64_t)s * 16 * DUR_COLS, PDC_WRITE, obj, 2, z,
                                    size, 2, off, size));
            }
            CALL(PDCregion_transfer_start_all(reqs, 4) == SUCCEED);
            CALL(PDCregion_transfer_wait_all(reqs, 4) == SUCCEED);
            for (uint64_t r = 0; r < 40; r++)
                for (uint64_t c = 0; c < 500; c++)
                    box[r * 500 + c] = dur_value(seed, k, (10 + r) * DUR_COLS + 100 + c, 1);
            uint64_t bo[2] = {10, 100}, bs[2] = {40, 500}, b1 = 40 * 500;
            CALL(reqs[4] = xfer(box, PDC_WRITE, obj, 1, z, &b1, 2, bo, bs));
            CALL(PDCregion_transfer_start(reqs[4]) == SUCCEED);
            if (!posix) /* POSIX: durable when start returned; close without wait */
                CALL(PDCregion_transfer_wait(reqs[4]) == SUCCEED);
            for (int s = 0; s < 5; s++)
                CALL(PDCregion_transfer_close(reqs[s]) == SUCCEED);
            free(stripes);
            free(box);
        } else
            CALL(obj = PDCobj_open(tagged(oname), pdc));
        memset(buf, 0, n * 4);
        CALL(xfer_now(xfer(buf, PDC_READ, obj, 2, z, dims, 2, z, dims)) == 0);
        for (uint64_t e = 0; e < n; e++)
            if (buf[e] != want[e]) {
                FAILF("%s: element (%" PRIu64 ",%" PRIu64 ") is %08x, expected %08x%s", oname,
                      e / DUR_COLS, e % DUR_COLS, buf[e], want[e],
                      buf[e] == 0 ? " (zero: lost?)" : "");
                return -1;
            }
        CALL(PDCobj_close(obj) == SUCCEED);
        printf("ok durable-%s %s: %" PRIu64 " elements match\n", verify ? "verify" : "write", oname,
               n);
    }
    free(buf);
    free(want);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

static int placement_of(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, placement_names[i]) == 0)
            return i;
    fprintf(stderr, "unknown placement '%s'\n", s);
    usage();
    exit(2);
}

/* One row of mib MiB: an object [1][N] whose first dimension cannot be split. */
static int case_wide_row(uint64_t mib)
{
    cur_case = "wide-row";
    uint64_t n = mib << 20, dims[2] = {1, n}, zero[2] = {0, 0};
    uint8_t *w = malloc(n), *r = malloc(n);
    if (w == NULL || r == NULL) {
        FAILF("out of memory");
        free(w);
        free(r);
        return 1;
    }
    for (uint64_t i = 0; i < n; i++)
        w[i] = (uint8_t)(i * 7 + 3);
    memset(r, 0, n);
    pdcid_t obj = mkobj("wide-row", 2, dims, PDC_UINT8, PDC_OBJ_STATIC, 1);
    if (!obj) {
        FAILF("create: %s: %s", PDCbb_last_error_name(), PDCbb_last_error_message());
    } else if (xfer_now(xfer(w, PDC_WRITE, obj, 2, zero, dims, 2, zero, dims)) != 0) {
        FAILF("write of %" PRIu64 " MiB: %s: %s", mib, xerr_name, xerr_msg);
    } else if (xfer_now(xfer(r, PDC_READ, obj, 2, zero, dims, 2, zero, dims)) != 0) {
        FAILF("read of %" PRIu64 " MiB: %s: %s", mib, xerr_name, xerr_msg);
    } else if (memcmp(w, r, n) != 0) {
        FAILF("read back differs");
    } else {
        printf("ok wide-row %" PRIu64 " MiB written and read back\n", mib);
    }
    if (obj)
        PDCobj_close(obj);
    free(w);
    free(r);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--tag") == 0) {
        tag = argv[2];
        argv += 2;
        argc -= 2;
    }
    if (argc < 2) {
        usage();
        return 2;
    }
    const char *c = argv[1];
    cur_case = c;
    setvbuf(stdout, NULL, _IOLBF, 0);
    pdc = PDCinit("pdc");
    if (!pdc) {
        printf("FAIL PDCinit: %s: %s\n", PDCbb_last_error_name(), PDCbb_last_error_message());
        return 1;
    }
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    cont = cprop ? PDCcont_create("region-cases", cprop) : 0;
    if (!cont) {
        printf("FAIL PDCcont_create: %s: %s\n", PDCbb_last_error_name(),
               PDCbb_last_error_message());
        return 1;
    }
    PDCprop_close(cprop);
    int rc;
    if (strcmp(c, "posix") == 0)
        rc = case_posix();
    else if (strcmp(c, "status") == 0)
        rc = case_status();
    else if (strcmp(c, "never-started") == 0)
        rc = case_never_started();
    else if (strcmp(c, "close-unwaited") == 0)
        rc = case_close_unwaited();
    else if (strcmp(c, "busy") == 0)
        rc = case_busy();
    else if (strcmp(c, "open-at-close") == 0)
        rc = case_open_at_close();
    else if (strcmp(c, "bad-regions") == 0)
        rc = case_bad_regions();
    else if (strcmp(c, "local-shapes") == 0)
        rc = case_local_shapes();
    else if (strcmp(c, "zero-read") == 0)
        rc = case_zero_read();
    else if (strcmp(c, "deleted") == 0)
        rc = case_deleted();
    else if (strcmp(c, "set-dims") == 0)
        rc = case_set_dims();
    else if (strcmp(c, "put-get") == 0)
        rc = case_put_get();
    else if (strcmp(c, "obj-buf") == 0)
        rc = case_obj_buf();
    else if (strcmp(c, "flush") == 0)
        rc = case_flush();
    else if (strcmp(c, "close-region") == 0)
        rc = case_close_region();
    else if (strcmp(c, "capacity") == 0 && argc >= 3)
        rc = case_capacity(strtoull(argv[2], NULL, 0),
                           argc >= 4 ? strtoull(argv[3], NULL, 0) : 256 * 1024,
                           argc >= 5 ? placement_of(argv[4]) : PDC_OBJ_STATIC);
    else if (strcmp(c, "overwrite") == 0 && argc >= 3)
        rc = case_overwrite(strtoull(argv[2], NULL, 0),
                            argc >= 4 ? placement_of(argv[3]) : PDC_OBJ_STATIC,
                            argc >= 5 ? atoi(argv[4]) : 60);
    else if (strcmp(c, "wide-row") == 0 && argc >= 3)
        rc = case_wide_row(strtoull(argv[2], NULL, 0));
    else if ((strcmp(c, "durable-write") == 0 || strcmp(c, "durable-verify") == 0) && argc >= 4)
        rc = case_durable(argv[2], strtoull(argv[3], NULL, 0), c[8] == 'v');
    else {
        fprintf(stderr, "unknown case or missing arguments: '%s'\n", c);
        usage();
        return 2;
    }
    if (rc != 0 && failures == 0)
        failures++;
    if (PDCclose(pdc) != SUCCEED) {
        printf("FAIL PDCclose: %s: %s\n", PDCbb_last_error_name(), PDCbb_last_error_message());
        failures++;
    }
    return failures ? 1 : 0;
}
