/*
 * pdc_maplock - PDC buffer maps, region locks, transforms and analyses against real daemons,
 * for tests/bats/77-map-lock.bats. One sub-command per run:
 *
 *   pdc_maplock example PLACEMENT     PDC example style: map, write lock, fill, release, read back
 *   pdc_maplock drained-read PLACEMENT   in a drained job: read lock on what example wrote
 *                                     brings it into the mapped buffer; write lock READ_ONLY
 *   pdc_maplock errors                map/unmap/lock errors, each with its error name and message
 *   pdc_maplock contend ROLE ID ROUNDS PLACEMENT DIR WRITERS
 *                                     ROLE writer: ROUNDS times, write lock on one of two
 *                                     overlapping regions, fill it with ID (through the mapped
 *                                     buffer, or in 4 separate transfers with pauses between
 *                                     them), release, then leave a done file in DIR; ROLE
 *                                     reader: at least ROUNDS times and until WRITERS writers
 *                                     are done, read lock on their overlap, check it holds one
 *                                     id only. Both check
 *                                     exclusion with a marker file in DIR. nolock-writer /
 *                                     nolock-reader: the same without locks (the control that
 *                                     shows the check can fail). Writers go on past ROUNDS until
 *                                     a reader saw what the test looks for (the data of several
 *                                     writers; in the control, a torn read), for up to 120 s, so
 *                                     neither rests on how the processes are scheduled.
 *   pdc_maplock hold NAME OFF SIZE DIR   write lock [OFF, OFF+SIZE) of object NAME (1-D, 1000
 *                                     ints, created if needed), touch DIR/held, wait for DIR/go
 *                                     (or forever), release
 *   pdc_maplock probe NAME            NOBLOCK locks around a lock held by another process on
 *                                     [0, 100): disjoint granted, overlapping BUSY
 *   pdc_maplock wait NAME OFF SIZE    blocking write lock; prints the seconds it waited
 *   pdc_maplock transform             float buffer -> double object through a DATA_OUT
 *                                     transform, double -> float back through DATA_IN, states
 *   pdc_maplock analysis              a running sum and row sums, re-run on every write
 *
 * Each check prints "ok ..." or "FAIL (line): ..." with the PDC error name and message.
 * Exit status 0 when every check passed. The transform and analysis functions below are
 * found by name: this program is linked with -rdynamic (ENABLE_EXPORTS).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pdc.h"
#include "prog_util.h"
#include "pdc_analysis.h"
#include "pdc_transform.h"

static pdcid_t pdc, cont;
static int failures;

#define FAILF(...)                                                                                 \
    do {                                                                                           \
        printf("FAIL (line %d): ", __LINE__);                                                      \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        failures++;                                                                                \
    } while (0)

/* expr must fail with error code name; print what the library said. */
#define REFUSED(expr, name)                                                                        \
    do {                                                                                           \
        if ((expr)) {                                                                              \
            FAILF("%s succeeded, expected %s", #expr, name);                                       \
        } else if (strcmp(PDCbb_last_error_name(), name) != 0) {                                   \
            FAILF("%s: got %s (%s), expected %s", #expr, PDCbb_last_error_name(),                  \
                  PDCbb_last_error_message(), name);                                               \
        } else {                                                                                   \
            printf("ok refused %s: %s: %s\n", #expr, PDCbb_last_error_name(),                      \
                   PDCbb_last_error_message());                                                    \
        }                                                                                          \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int placement_of(const char *s)
{
    if (!strcmp(s, "obj_static"))
        return PDC_OBJ_STATIC;
    if (!strcmp(s, "region_static"))
        return PDC_REGION_STATIC;
    if (!strcmp(s, "region_dynamic"))
        return PDC_REGION_DYNAMIC;
    if (!strcmp(s, "region_local"))
        return PDC_REGION_LOCAL;
    return -1;
}

/* Create (or, if another process was first, open) an object. */
static pdcid_t object(const char *name, pdc_var_type_t type, int ndim, uint64_t *dims,
                      int placement)
{
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    PDCprop_set_obj_type(prop, type);
    PDCprop_set_obj_dims(prop, ndim, dims);
    PDCprop_set_obj_transfer_region_type(prop, (pdc_region_partition_t)placement);
    pdcid_t o = PDCobj_create(cont, name, prop);
    if (o == 0 && strcmp(PDCbb_last_error_name(), "PDCBB_ERR_EXISTS") == 0)
        o = PDCobj_open(name, pdc);
    if (o == 0)
        FAILF("object %s: %s: %s", name, PDCbb_last_error_name(), PDCbb_last_error_message());
    PDCprop_close(prop);
    return o;
}

static pdcid_t region1(uint64_t off, uint64_t size)
{
    return PDCregion_create(1, &off, &size);
}

/* Read box [off, off+n) of a 1-D object into buf with a plain transfer. */
static int read_plain(pdcid_t obj, uint64_t off, uint64_t n, void *buf)
{
    pdcid_t l = region1(0, n), r = region1(off, n);
    pdcid_t t = PDCregion_transfer_create(buf, PDC_READ, obj, l, r);
    int ok = t && PDCregion_transfer_start(t) == SUCCEED && PDCregion_transfer_wait(t) == SUCCEED;
    if (!ok)
        FAILF("read: %s: %s", PDCbb_last_error_name(), PDCbb_last_error_message());
    if (t)
        PDCregion_transfer_close(t);
    PDCregion_close(l);
    PDCregion_close(r);
    return ok ? 0 : -1;
}

static int write_plain(pdcid_t obj, uint64_t off, uint64_t n, void *buf)
{
    pdcid_t l = region1(0, n), r = region1(off, n);
    pdcid_t t = PDCregion_transfer_create(buf, PDC_WRITE, obj, l, r);
    int ok = t && PDCregion_transfer_start(t) == SUCCEED && PDCregion_transfer_wait(t) == SUCCEED;
    if (!ok)
        FAILF("write: %s: %s", PDCbb_last_error_name(), PDCbb_last_error_message());
    if (t)
        PDCregion_transfer_close(t);
    PDCregion_close(l);
    PDCregion_close(r);
    return ok ? 0 : -1;
}

/* ---------------------------------------------------------------------------------------- */

/* PDC's map/lock example: a 2-D object, a buffer larger than the mapped region. */
static int case_example(const char *placement_name)
{
    int pl = placement_of(placement_name);
    if (pl < 0) {
        FAILF("unknown placement %s", placement_name);
        return -1;
    }
    char name[64];
    snprintf(name, sizeof(name), "example_%s", placement_name);
    uint64_t dims[2] = {40, 30};
    pdcid_t obj = object(name, PDC_INT, 2, dims, pl);
    if (obj == 0)
        return -1;
    /* The buffer is 12 x 9 (local offset + size, as a transfer's local region); its box
     * [2..12) x [1..9) maps to the object's [5..15) x [20..28). */
    int buf[12][9], back[12][9];
    uint64_t loff[2] = {2, 1}, lsz[2] = {10, 8}, roff[2] = {5, 20};
    pdcid_t lreg = PDCregion_create(2, loff, lsz), rreg = PDCregion_create(2, roff, lsz);
    memset(buf, 0xff, sizeof(buf));
    CALL(PDCbuf_obj_map(buf, PDC_INT, lreg, obj, rreg) == SUCCEED);
    struct pdc_region_info *ri = PDCregion_get_info(rreg);
    if (!ri || !ri->mapping || ri->buf != (void *)buf)
        FAILF("PDCregion_get_info does not show the mapping");
    CALL(PDCreg_obtain_lock(obj, rreg, PDC_WRITE, PDC_BLOCK) == SUCCEED);
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 9; j++)
            buf[i][j] = 1000 * i + j;
    CALL(PDCreg_release_lock(obj, rreg, PDC_WRITE) == SUCCEED);
    CALL(PDCbuf_obj_unmap(obj, rreg) == SUCCEED);

    /* Read back with a plain transfer of the whole object. */
    int *all = calloc(40 * 30, sizeof(int));
    uint64_t zero[2] = {0, 0};
    pdcid_t wl = PDCregion_create(2, zero, dims), wr = PDCregion_create(2, zero, dims);
    pdcid_t t = PDCregion_transfer_create(all, PDC_READ, obj, wl, wr);
    CALL(t && PDCregion_transfer_start(t) == SUCCEED && PDCregion_transfer_wait(t) == SUCCEED);
    PDCregion_transfer_close(t);
    int bad = 0;
    for (int i = 0; i < 40; i++)
        for (int j = 0; j < 30; j++) {
            int in = i >= 5 && i < 15 && j >= 20 && j < 28;
            int want = in ? 1000 * (i - 5 + 2) + (j - 20 + 1) : 0;
            if (all[i * 30 + j] != want && bad++ < 5)
                FAILF("element [%d][%d] = %d, want %d", i, j, all[i * 30 + j], want);
        }
    if (!bad)
        printf("ok example %s: the released write lock published the mapped box\n",
               placement_name);

    /* And through a read lock on a new mapping of another buffer. */
    memset(back, 0, sizeof(back));
    CALL(PDCbuf_obj_map(back, PDC_INT, lreg, obj, rreg) == SUCCEED);
    CALL(PDCreg_obtain_lock(obj, rreg, PDC_READ, PDC_BLOCK) == SUCCEED);
    bad = 0;
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 9; j++) {
            int in = i >= 2 && j >= 1;
            int want = in ? 1000 * i + j : 0;
            if (back[i][j] != want && bad++ < 5)
                FAILF("read-locked buffer [%d][%d] = %d, want %d", i, j, back[i][j], want);
        }
    CALL(PDCreg_release_lock(obj, rreg, PDC_READ) == SUCCEED);
    CALL(PDCbuf_obj_unmap(obj, rreg) == SUCCEED);
    if (!bad)
        printf("ok example %s: a read lock brought the region into the mapped buffer\n",
               placement_name);
    free(all);
    PDCregion_close(wl);
    PDCregion_close(wr);
    PDCregion_close(lreg);
    PDCregion_close(rreg);
    PDCobj_close(obj);
    return 0;
}

/* In a drained job (PDCBB_DRAINED_DIR): a read lock on a mapped region of what case_example
 * wrote brings the data; a write lock is refused. */
static int case_drained_read(const char *placement_name)
{
    char name[64];
    snprintf(name, sizeof(name), "example_%s", placement_name);
    pdcid_t obj = PDCobj_open(name, pdc);
    CALL(obj != 0);
    int buf[12][9];
    uint64_t loff[2] = {2, 1}, lsz[2] = {10, 8}, roff[2] = {5, 20};
    pdcid_t lreg = PDCregion_create(2, loff, lsz), rreg = PDCregion_create(2, roff, lsz);
    memset(buf, 0, sizeof(buf));
    CALL(PDCbuf_obj_map(buf, PDC_INT, lreg, obj, rreg) == SUCCEED);
    CALL(PDCreg_obtain_lock(obj, rreg, PDC_READ, PDC_BLOCK) == SUCCEED);
    int bad = 0;
    for (int i = 2; i < 12; i++)
        for (int j = 1; j < 9; j++)
            if (buf[i][j] != 1000 * i + j && bad++ < 3)
                FAILF("drained read-locked buffer [%d][%d] = %d, want %d", i, j, buf[i][j],
                      1000 * i + j);
    CALL(PDCreg_release_lock(obj, rreg, PDC_READ) == SUCCEED);
    if (!bad)
        printf("ok drained %s: a read lock brought the drained region into the buffer\n",
               placement_name);
    REFUSED(PDCreg_obtain_lock(obj, rreg, PDC_WRITE, PDC_BLOCK) == SUCCEED, "PDCBB_ERR_READ_ONLY");
    CALL(PDCbuf_obj_unmap(obj, rreg) == SUCCEED);
    PDCobj_close(obj);
    return 0;
}

static int case_errors(void)
{
    uint64_t dims[1] = {100};
    pdcid_t obj = object("errors_obj", PDC_INT, 1, dims, PDC_OBJ_STATIC);
    pdcid_t dobj = object("errors_dbl", PDC_DOUBLE, 1, dims, PDC_OBJ_STATIC);
    if (!obj || !dobj)
        return -1;
    int buf[100];
    pdcid_t r10 = region1(0, 10), r10b = region1(5, 10), r20 = region1(0, 20);
    pdcid_t out = region1(95, 10);
    /* unmap of a region never mapped; bad ids */
    REFUSED(PDCbuf_obj_unmap(obj, r10) == SUCCEED, "PDCBB_ERR_NOT_FOUND");
    REFUSED(PDCbuf_obj_unmap(12345, r10) == SUCCEED, "PDCBB_ERR_BAD_ID");
    REFUSED(PDCbuf_obj_unmap(obj, 777) == SUCCEED, "PDCBB_ERR_BAD_ID");
    REFUSED(PDCbuf_obj_map(buf, PDC_INT, 999, obj, r10) == SUCCEED, "PDCBB_ERR_BAD_ID");
    REFUSED(PDCbuf_obj_map(buf, PDC_INT, r10, 4242, r10) == SUCCEED, "PDCBB_ERR_BAD_ID");
    REFUSED(PDCbuf_obj_map(buf, PDC_INT, r10, obj, r10 + 7) == SUCCEED, "PDCBB_ERR_BAD_ID");
    REFUSED(PDCbuf_obj_map(NULL, PDC_INT, r10, obj, r10) == SUCCEED, "PDCBB_ERR_INVAL");
    REFUSED(PDCbuf_obj_map(buf, (pdc_var_type_t)77, r10, obj, r10) == SUCCEED, "PDCBB_ERR_INVAL");
    REFUSED(PDCbuf_obj_map(buf, PDC_INT, r20, obj, r10) == SUCCEED, "PDCBB_ERR_BAD_REGION");
    REFUSED(PDCbuf_obj_map(buf, PDC_INT, r10, obj, out) == SUCCEED, "PDCBB_ERR_BAD_REGION");
    CALL(PDCbuf_obj_map(buf, PDC_INT, r10, obj, r10) == SUCCEED);
    REFUSED(PDCbuf_obj_map(buf, PDC_INT, r10, obj, r10) == SUCCEED, "PDCBB_ERR_EXISTS");
    /* locks */
    REFUSED(PDCreg_release_lock(obj, r10, PDC_WRITE) == SUCCEED, "PDCBB_ERR_NOT_FOUND");
    REFUSED(PDCreg_obtain_lock(obj, r10, (pdc_access_t)7, PDC_BLOCK) == SUCCEED, "PDCBB_ERR_INVAL");
    REFUSED(PDCreg_obtain_lock(obj, r10, PDC_WRITE, (pdc_lock_mode_t)9) == SUCCEED,
            "PDCBB_ERR_INVAL");
    REFUSED(PDCreg_obtain_lock(obj, out, PDC_WRITE, PDC_BLOCK) == SUCCEED, "PDCBB_ERR_BAD_REGION");
    REFUSED(PDCreg_obtain_lock(99, r10, PDC_WRITE, PDC_BLOCK) == SUCCEED, "PDCBB_ERR_BAD_ID");
    CALL(PDCreg_obtain_lock(obj, r10, PDC_WRITE, PDC_BLOCK) == SUCCEED);
    /* the same region again, and an overlapping one: this process would wait for itself */
    REFUSED(PDCreg_obtain_lock(obj, r10, PDC_WRITE, PDC_BLOCK) == SUCCEED, "PDCBB_ERR_BUSY");
    REFUSED(PDCreg_obtain_lock(obj, r10b, PDC_READ, PDC_BLOCK) == SUCCEED, "PDCBB_ERR_BUSY");
    /* a disjoint one is granted to the same process */
    pdcid_t r50 = region1(50, 10);
    CALL(PDCreg_obtain_lock(obj, r50, PDC_WRITE, PDC_NOBLOCK) == SUCCEED);
    CALL(PDCreg_release_lock(obj, r50, PDC_WRITE) == SUCCEED);
    REFUSED(PDCreg_release_lock(obj, r10, PDC_READ) == SUCCEED, "PDCBB_ERR_NOT_FOUND");
    for (int i = 0; i < 10; i++)
        buf[i] = 70 + i;
    /* unmap with the lock held: released first, publishing the buffer */
    CALL(PDCbuf_obj_unmap(obj, r10) == SUCCEED);
    REFUSED(PDCreg_release_lock(obj, r10, PDC_WRITE) == SUCCEED, "PDCBB_ERR_NOT_FOUND");
    int back[10];
    if (read_plain(obj, 0, 10, back) == 0) {
        if (back[0] != 70 || back[9] != 79)
            FAILF("unmap with a write lock held did not publish: %d %d", back[0], back[9]);
        else
            printf("ok unmap released the held write lock and published the buffer\n");
    }
    REFUSED(PDCbuf_obj_unmap(obj, r10) == SUCCEED, "PDCBB_ERR_NOT_FOUND");
    /* an int buffer mapped to a double object: no transform converts, the release says so */
    CALL(PDCbuf_obj_map(buf, PDC_INT, r10, dobj, r10) == SUCCEED);
    CALL(PDCreg_obtain_lock(dobj, r10, PDC_WRITE, PDC_BLOCK) == SUCCEED);
    REFUSED(PDCreg_release_lock(dobj, r10, PDC_WRITE) == SUCCEED, "PDCBB_ERR_BAD_REGION");
    /* ... and the lock is free again all the same */
    CALL(PDCreg_obtain_lock(dobj, r10, PDC_WRITE, PDC_NOBLOCK) == SUCCEED);
    CALL(PDCreg_release_lock(dobj, r10, PDC_READ) != SUCCEED); /* wrong access: not released */
    CALL(PDCbuf_obj_unmap(dobj, r10) != SUCCEED);              /* still fails to publish */
    REFUSED(PDCreg_release_lock(dobj, r10, PDC_WRITE) == SUCCEED, "PDCBB_ERR_NOT_FOUND");
    /* functions not found */
    REFUSED(PDCbuf_map_transform_register("no_such_function_xyz", buf, r10, obj, r10, 0,
                                          INCR_STATE, DATA_OUT) == SUCCEED,
            "PDCBB_ERR_NOT_FOUND");
    REFUSED(PDCobj_transform_register("float_to_double:libnothere.so", obj, 0, INCR_STATE,
                                      PDC_DATA_MAP, DATA_OUT) == SUCCEED,
            "PDCBB_ERR_NOT_FOUND");
    REFUSED(PDCobj_transform_register("float_to_double", obj, 0, INCR_STATE, PDC_FILE_IO,
                                      DATA_OUT) == SUCCEED,
            "PDCBB_ERR_UNSUPPORTED");
    REFUSED(PDCobj_analysis_register("no_such_analysis", 0, 0) == SUCCEED, "PDCBB_ERR_NOT_FOUND");
    REFUSED(PDCobj_analysis_register("running_sum", 4242, 0) == SUCCEED, "PDCBB_ERR_BAD_ID");
    REFUSED(PDCview_iter_start(1) != NULL, "PDCBB_ERR_UNSUPPORTED");
    PDCregion_close(r10);
    PDCregion_close(r10b);
    PDCregion_close(r20);
    PDCregion_close(r50);
    PDCregion_close(out);
    PDCobj_close(obj);
    PDCobj_close(dobj);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Contention. Object of 4096 ints; writers lock A = [0, 3000) or B = [1000, 4096); readers lock
 * and check C = [1000, 3000), which both cover. */

#define CN 4096
#define C_OFF 1000
#define C_LEN 2000

static char marker[4096];

/* Exclusion seen by the processes themselves: a writer creates DIR/writer exclusively while it
 * holds its lock; a reader checks it does not exist while it holds its lock. */
static int marker_enter_writer(void)
{
    int fd = open(marker, O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd < 0) {
        FAILF("two writers hold overlapping write locks at once (%s exists)", marker);
        return -1;
    }
    close(fd);
    return 0;
}

/* The writers that have finished, each of which left DIR/<prefix>.<id>. */
static int writers_done(const char *prefix, int writers)
{
    int done = 0;
    char path[4200];
    for (int w = 0; w < 32 && done < writers; w++) {
        snprintf(path, sizeof(path), "%s.%d", prefix, w);
        done += access(path, F_OK) == 0;
    }
    return done;
}

static int case_contend(const char *role, int id, int rounds, const char *placement_name,
                        const char *dir, int writers)
{
    int pl = placement_of(placement_name);
    int locked = strncmp(role, "nolock-", 7) != 0;
    int writer = strstr(role, "writer") != NULL;
    if (pl < 0) {
        FAILF("unknown placement %s", placement_name);
        return -1;
    }
    snprintf(marker, sizeof(marker), "%s/writer.marker", dir);
    /* Readers read until the writers are done, so that they read while the writers write
     * however the processes are scheduled; the bound only ends a run whose writers died. */
    char done_prefix[4096];
    snprintf(done_prefix, sizeof(done_prefix), "%s/%s-done-%s", dir, locked ? "lock" : "nolock",
             placement_name);
    /* A reader leaves this once it saw what the test looks for: the data of several writers
     * (with locks) or a torn read (the control); the writers write until then. */
    char enough[4200];
    snprintf(enough, sizeof(enough), "%s/%s-seen-%s", dir, locked ? "lock" : "nolock",
             placement_name);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char name[64];
    snprintf(name, sizeof(name), "contend_%s", placement_name);
    uint64_t dims[1] = {CN};
    pdcid_t obj = object(name, PDC_INT, 1, dims, pl);
    if (obj == 0)
        return -1;
    int *buf = calloc(CN, sizeof(int));
    pdcid_t ra = region1(0, 3000), rb = region1(C_OFF, CN - C_OFF), rc = region1(C_OFF, C_LEN);
    pdcid_t la = region1(0, 3000), lb = region1(0, CN - C_OFF), lc = region1(0, C_LEN);
    unsigned seed = (unsigned)id * 7919u;
    int torn = 0, reads = 0, mapped_rounds = 0, chunked_rounds = 0, fd, told = 0;
    unsigned seen = 0;
    int round = 0;
    for (;; round++) {
        if (round >= rounds) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (writer && (access(enough, F_OK) == 0 || t.tv_sec - t0.tv_sec > 120))
                break;
            if (!writer && writers_done(done_prefix, writers) >= writers)
                break;
            if (t.tv_sec - t0.tv_sec > 300) {
                FAILF("%d of %d writers done after 300 s", writers_done(done_prefix, writers),
                      writers);
                break;
            }
        }
        if (writer) {
            int useb = rand_r(&seed) & 1;
            pdcid_t r = useb ? rb : ra, l = useb ? lb : la;
            uint64_t off = useb ? C_OFF : 0, len = useb ? CN - C_OFF : 3000;
            int viamap = round & 1;
            if (viamap && locked)
                CALL(PDCbuf_obj_map(buf, PDC_INT, l, obj, r) == SUCCEED);
            if (locked) {
                CALL(PDCreg_obtain_lock(obj, r, PDC_WRITE, PDC_BLOCK) == SUCCEED);
                if (marker_enter_writer() != 0)
                    return -1;
            }
            for (uint64_t i = 0; i < len; i++)
                buf[i] = id * 100000 + round;
            if (!viamap || !locked) {
                /* Four separate transfers with pauses: only the lock keeps readers out. */
                uint64_t q = len / 4;
                for (int k = 0; k < 4; k++) {
                    uint64_t o = k * q, n = k == 3 ? len - o : q;
                    if (write_plain(obj, off + o, n, buf + o) != 0)
                        return -1;
                    usleep(300);
                }
                chunked_rounds++;
            } else {
                mapped_rounds++;
            }
            if (locked) {
                unlink(marker);
                CALL(PDCreg_release_lock(obj, r, PDC_WRITE) == SUCCEED);
            }
            if (viamap && locked)
                CALL(PDCbuf_obj_unmap(obj, r) == SUCCEED);
        } else {
            int viamap = round & 1;
            memset(buf, 0, C_LEN * sizeof(int));
            if (viamap && locked)
                CALL(PDCbuf_obj_map(buf, PDC_INT, lc, obj, rc) == SUCCEED);
            if (locked) {
                CALL(PDCreg_obtain_lock(obj, rc, PDC_READ, PDC_BLOCK) == SUCCEED);
                if (access(marker, F_OK) == 0)
                    FAILF("a reader holds a read lock while a writer holds an overlapping "
                          "write lock");
            }
            if (!viamap || !locked) {
                if (read_plain(obj, C_OFF, C_LEN, buf) != 0)
                    return -1;
                chunked_rounds++;
            } else {
                mapped_rounds++;
            }
            if (locked)
                CALL(PDCreg_release_lock(obj, rc, PDC_READ) == SUCCEED);
            if (viamap && locked)
                CALL(PDCbuf_obj_unmap(obj, rc) == SUCCEED);
            reads++;
            if (buf[0] > 0 && buf[0] / 100000 < 32)
                seen |= 1u << (buf[0] / 100000); /* which writers' data this reader saw */
            if (locked && !told && __builtin_popcount(seen) >= 2) {
                told = 1;
                if ((fd = open(enough, O_CREAT | O_WRONLY, 0600)) >= 0)
                    close(fd);
            }
            for (int i = 1; i < C_LEN; i++)
                if (buf[i] != buf[0]) {
                    if (torn++ < 3)
                        printf("%s: torn read in round %d: element %d = %d, element 0 = %d\n",
                               locked ? "FAIL" : "torn", round, i, buf[i], buf[0]);
                    if (locked)
                        failures++;
                    else if (torn == 1 && (fd = open(enough, O_CREAT | O_WRONLY, 0600)) >= 0)
                        close(fd);
                    break;
                }
            usleep(100);
        }
    }
    if (writer) {
        char path[4200];
        snprintf(path, sizeof(path), "%s.%d", done_prefix, id);
        fd = open(path, O_CREAT | O_WRONLY, 0600);
        if (fd >= 0)
            close(fd);
    }
    printf("%s %s %d: %d rounds (%d through maps, %d through transfers), %d reads, %d torn, "
           "data of %d writers seen\n",
           failures ? "FAIL" : "ok", role, id, round, mapped_rounds, chunked_rounds, reads, torn,
           __builtin_popcount(seen));
    free(buf);
    PDCobj_close(obj);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

static int case_hold(const char *name, uint64_t off, uint64_t size, const char *dir)
{
    uint64_t dims[1] = {1000};
    pdcid_t obj = object(name, PDC_INT, 1, dims, PDC_OBJ_STATIC);
    if (obj == 0)
        return -1;
    pdcid_t r = region1(off, size);
    CALL(PDCreg_obtain_lock(obj, r, PDC_WRITE, PDC_BLOCK) == SUCCEED);
    char path[4096];
    snprintf(path, sizeof(path), "%s/held", dir);
    close(open(path, O_CREAT | O_WRONLY, 0600));
    printf("ok holding the write lock on [%llu, %llu) of %s\n", (unsigned long long)off,
           (unsigned long long)(off + size), name);
    fflush(stdout);
    snprintf(path, sizeof(path), "%s/go", dir);
    while (access(path, F_OK) != 0)
        usleep(20000);
    CALL(PDCreg_release_lock(obj, r, PDC_WRITE) == SUCCEED);
    printf("ok released\n");
    PDCobj_close(obj);
    return 0;
}

static int case_probe(const char *name)
{
    pdcid_t obj = PDCobj_open(name, pdc);
    CALL(obj != 0);
    pdcid_t disjoint = region1(200, 100), overlap = region1(50, 100), inside = region1(10, 5);
    CALL(PDCreg_obtain_lock(obj, disjoint, PDC_WRITE, PDC_NOBLOCK) == SUCCEED);
    printf("ok a write lock on a disjoint region is granted while another process holds one\n");
    CALL(PDCreg_release_lock(obj, disjoint, PDC_WRITE) == SUCCEED);
    REFUSED(PDCreg_obtain_lock(obj, overlap, PDC_WRITE, PDC_NOBLOCK) == SUCCEED, "PDCBB_ERR_BUSY");
    REFUSED(PDCreg_obtain_lock(obj, inside, PDC_READ, PDC_NOBLOCK) == SUCCEED, "PDCBB_ERR_BUSY");
    PDCobj_close(obj);
    return 0;
}

static int case_wait(const char *name, uint64_t off, uint64_t size)
{
    pdcid_t obj = PDCobj_open(name, pdc);
    CALL(obj != 0);
    pdcid_t r = region1(off, size);
    printf("waiting for the write lock\n"); /* the test times the holder from here */
    fflush(stdout);
    double t0 = now();
    CALL(PDCreg_obtain_lock(obj, r, PDC_WRITE, PDC_BLOCK) == SUCCEED);
    printf("ok got the write lock after %.2f s\n", now() - t0);
    CALL(PDCreg_release_lock(obj, r, PDC_WRITE) == SUCCEED);
    PDCobj_close(obj);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Transforms, found by name (exported). */

size_t float_to_double(void *in, pdc_var_type_t st, int ndim, uint64_t *dims, void **out,
                       pdc_var_type_t dt)
{
    if (st != PDC_FLOAT || dt != PDC_DOUBLE)
        return (size_t)-1;
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= dims[d];
    double *o = *out; /* the library's buffer */
    for (size_t i = 0; i < n; i++)
        o[i] = (double)((float *)in)[i];
    return n * sizeof(double);
}

size_t double_to_float(void *in, pdc_var_type_t st, int ndim, uint64_t *dims, void **out,
                       pdc_var_type_t dt)
{
    if (st != PDC_DOUBLE || dt != PDC_FLOAT)
        return (size_t)-1;
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= dims[d];
    float *o = malloc(n * sizeof(float)); /* its own buffer: the library frees it */
    for (size_t i = 0; i < n; i++)
        o[i] = (float)((double *)in)[i] + 0.5f; /* visibly this function's output */
    *out = o;
    return n * sizeof(float);
}

static int case_transform(void)
{
    uint64_t dims[1] = {64};
    pdcid_t obj = object("transform_obj", PDC_DOUBLE, 1, dims, PDC_REGION_STATIC);
    if (!obj)
        return -1;
    float fbuf[64];
    double d[64];
    pdcid_t l = region1(0, 64), r = region1(0, 64);
    CALL(PDCbuf_map_transform_register("float_to_double", fbuf, l, obj, r, 0, _STATIC_STATE,
                                       DATA_OUT) == SUCCEED);
    CALL(PDCbuf_map_transform_register("double_to_float", fbuf, l, obj, r, 0, _STATIC_STATE,
                                       DATA_IN) == SUCCEED);
    CALL(PDCbuf_obj_map(fbuf, PDC_FLOAT, l, obj, r) == SUCCEED);
    for (int round = 0; round < 2; round++) {
        CALL(PDCreg_obtain_lock(obj, r, PDC_WRITE, PDC_BLOCK) == SUCCEED);
        for (int i = 0; i < 64; i++)
            fbuf[i] = 1.25f * (float)i + (float)round * 1000.0f;
        CALL(PDCreg_release_lock(obj, r, PDC_WRITE) == SUCCEED);
        if (read_plain(obj, 0, 64, d) != 0)
            return -1;
        int bad = 0;
        for (int i = 0; i < 64; i++)
            if (d[i] != (double)(1.25f * (float)i + (float)round * 1000.0f) && bad++ < 3)
                FAILF("round %d: object element %d = %g, want %g", round, i, d[i],
                      (double)(1.25f * (float)i + (float)round * 1000.0f));
        if (!bad)
            printf("ok round %d: 64 floats stored as doubles through the DATA_OUT transform\n",
                   round);
    }
    /* DATA_IN: the read lock brings the doubles back as floats (+0.5 by the function). */
    memset(fbuf, 0, sizeof(fbuf));
    CALL(PDCreg_obtain_lock(obj, r, PDC_READ, PDC_BLOCK) == SUCCEED);
    int bad = 0;
    for (int i = 0; i < 64; i++)
        if (fbuf[i] != 1.25f * (float)i + 1000.0f + 0.5f && bad++ < 3)
            FAILF("buffer element %d = %g after the read lock", i, (double)fbuf[i]);
    CALL(PDCreg_release_lock(obj, r, PDC_READ) == SUCCEED);
    if (!bad)
        printf("ok the DATA_IN transform converted the object's doubles into the float buffer\n");
    CALL(PDCbuf_obj_unmap(obj, r) == SUCCEED);

    /* States: an object transform that runs once (state 0 -> 1); the second release finds no
     * transform ready, and float and double differ in size. */
    uint64_t d2[1] = {16};
    pdcid_t obj2 = object("transform_state", PDC_DOUBLE, 1, d2, PDC_OBJ_STATIC);
    pdcid_t l2 = region1(0, 16), r2 = region1(0, 16);
    CALL(PDCobj_transform_register("float_to_double", obj2, 0, INCR_STATE, PDC_DATA_MAP,
                                   DATA_OUT) == SUCCEED);
    CALL(PDCbuf_obj_map(fbuf, PDC_FLOAT, l2, obj2, r2) == SUCCEED);
    CALL(PDCreg_obtain_lock(obj2, r2, PDC_WRITE, PDC_BLOCK) == SUCCEED);
    for (int i = 0; i < 16; i++)
        fbuf[i] = (float)i / 4.0f;
    CALL(PDCreg_release_lock(obj2, r2, PDC_WRITE) == SUCCEED);
    if (read_plain(obj2, 0, 16, d) == 0 && d[5] == 1.25 && d[15] == 3.75)
        printf("ok the object transform ran in state 0\n");
    else
        FAILF("object transform: element 5 = %g, 15 = %g", d[5], d[15]);
    CALL(PDCreg_obtain_lock(obj2, r2, PDC_WRITE, PDC_BLOCK) == SUCCEED);
    REFUSED(PDCreg_release_lock(obj2, r2, PDC_WRITE) == SUCCEED, "PDCBB_ERR_BAD_REGION");
    CALL(PDCbuf_obj_unmap(obj2, r2) == SUCCEED);
    PDCobj_close(obj);
    PDCobj_close(obj2);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Analyses, found by name (exported). */

int analysis_runs;

/* out[i] = in[0] + ... + in[i], both the whole object in one block. */
int running_sum(pdcid_t iterIn, pdcid_t iterOut)
{
    int *in = NULL, *out = NULL;
    size_t dims[3];
    size_t n = PDCobj_data_getNextBlock(iterIn, (void **)&in, dims);
    size_t m = PDCobj_data_getNextBlock(iterOut, (void **)&out, NULL);
    if (n == 0 || m != n || dims[0] != n)
        return -1;
    long long s = 0;
    for (size_t i = 0; i < n; i++)
        out[i] = (int)(s += in[i]);
    analysis_runs++;
    return 0;
}

/* PDC's demo_sum, fixed: one output element per input row. */
int row_sum(pdcid_t iterIn, pdcid_t iterOut)
{
    int *in = NULL, *out = NULL;
    size_t dims[3], rows = PDCobj_data_getSliceCount(iterIn);
    if (PDCobj_data_getNextBlock(iterOut, (void **)&out, NULL) < rows)
        return -1;
    size_t n, k = 0;
    while ((n = PDCobj_data_getNextBlock(iterIn, (void **)&in, dims)) > 0) {
        if (dims[0] != 1 || dims[1] != n)
            return -1;
        int s = 0;
        for (size_t i = 0; i < n; i++)
            s += in[i];
        out[k++] = s;
    }
    return k == rows ? 0 : -1;
}

static int check_prefix(pdcid_t out, const int *in, int n, const char *what)
{
    int got[256];
    if (read_plain(out, 0, (uint64_t)n, got) != 0)
        return -1;
    long long s = 0;
    for (int i = 0; i < n; i++) {
        s += in[i];
        if (got[i] != (int)s) {
            FAILF("%s: running sum element %d = %d, want %lld", what, i, got[i], s);
            return -1;
        }
    }
    printf("ok %s: the output object holds the running sum of the input\n", what);
    return 0;
}

static int case_analysis(void)
{
    enum { N = 200 };
    uint64_t dims[1] = {N};
    pdcid_t in = object("analysis_in", PDC_INT, 1, dims, PDC_REGION_STATIC);
    pdcid_t out = object("analysis_out", PDC_INT, 1, dims, PDC_OBJ_STATIC);
    if (!in || !out)
        return -1;
    int data[N], junk[N];
    for (int i = 0; i < N; i++)
        junk[i] = -7;
    if (write_plain(out, 0, N, junk) != 0)
        return -1;
    pdcid_t rin = region1(0, N), rout = region1(0, N);
    pdcid_t itin = PDCobj_data_block_iterator_create(in, rin, N);
    pdcid_t itout = PDCobj_data_block_iterator_create(out, rout, N);
    CALL(itin > 0 && itout > 0 && itin != itout);
    if (PDCobj_data_getSliceCount(itin) != 1)
        FAILF("slice count %zu, want 1", PDCobj_data_getSliceCount(itin));
    int next = PDCiter_get_nextId();
    if (next != (int)itout + 1)
        FAILF("PDCiter_get_nextId %d after iterators %llu, %llu", next, (unsigned long long)itin,
              (unsigned long long)itout);
    /* Registration runs it once: the input is all zeros, so is the sum (the junk is gone). */
    CALL(PDCobj_analysis_register("running_sum", itin, itout) == SUCCEED);
    memset(data, 0, sizeof(data));
    check_prefix(out, data, N, "at registration");
    /* A write through a mapped buffer and a write lock runs it again. */
    pdcid_t l = region1(0, N);
    CALL(PDCbuf_obj_map(data, PDC_INT, l, in, rin) == SUCCEED);
    CALL(PDCreg_obtain_lock(in, rin, PDC_WRITE, PDC_BLOCK) == SUCCEED);
    for (int i = 0; i < N; i++)
        data[i] = i % 13 - 3;
    CALL(PDCreg_release_lock(in, rin, PDC_WRITE) == SUCCEED);
    CALL(PDCbuf_obj_unmap(in, rin) == SUCCEED);
    check_prefix(out, data, N, "after a write-lock release");
    /* So does a plain transfer of part of the input. */
    int part[50];
    for (int i = 0; i < 50; i++)
        part[i] = data[100 + i] = 1000 + i;
    if (write_plain(in, 100, 50, part) == 0)
        check_prefix(out, data, N, "after a region transfer");
    int before = analysis_runs;
    /* A write of another object does not. */
    if (write_plain(out, 0, 50, part) == 0 && analysis_runs != before)
        FAILF("writing the output object ran the analysis");
    if (analysis_runs != 3)
        FAILF("the analysis ran %d times, want 3", analysis_runs);

    /* Row sums of a 2-D object, one row per block, into a 1-D object. */
    uint64_t d2[2] = {6, 9}, d1[1] = {6};
    pdcid_t m = object("analysis_matrix", PDC_INT, 2, d2, PDC_OBJ_STATIC);
    pdcid_t sums = object("analysis_rowsums", PDC_INT, 1, d1, PDC_REGION_STATIC);
    int mat[6][9];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 9; j++)
            mat[i][j] = i * 10 + j;
    uint64_t z2[2] = {0, 0};
    pdcid_t mr = PDCregion_create(2, z2, d2);
    pdcid_t it1 = PDCobj_data_iter_create(m, mr);
    pdcid_t it2 = PDCobj_data_block_iterator_create(sums, PDC_REGION_ALL, 6);
    CALL(it1 > 0 && it2 > 0);
    if (PDCobj_data_getSliceCount(it1) != 6)
        FAILF("row iterator: %zu slices, want 6", PDCobj_data_getSliceCount(it1));
    CALL(PDCobj_analysis_register("row_sum", it1, it2) == SUCCEED);
    pdcid_t ml = PDCregion_create(2, z2, d2);
    pdcid_t t = PDCregion_transfer_create(mat, PDC_WRITE, m, ml, mr);
    CALL(t && PDCregion_transfer_start(t) == SUCCEED && PDCregion_transfer_wait(t) == SUCCEED);
    PDCregion_transfer_close(t);
    int got[6];
    if (read_plain(sums, 0, 6, got) == 0) {
        int bad = 0;
        for (int i = 0; i < 6; i++)
            if (got[i] != 90 * i + 36 && bad++ < 3)
                FAILF("row sum %d = %d, want %d", i, got[i], 90 * i + 36);
        if (!bad)
            printf("ok row sums of a 6x9 object, one row per block\n");
    }
    PDCobj_close(in);
    PDCobj_close(out);
    PDCobj_close(m);
    PDCobj_close(sums);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: see the comment at the top of tests/progs/pdc_maplock.c\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    pdc = PDCinit("pdc");
    if (pdc == 0) {
        printf("FAIL PDCinit: %s: %s\n", PDCbb_last_error_name(), PDCbb_last_error_message());
        return 1;
    }
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    cont = getenv("PDCBB_DRAINED_DIR") ? PDCcont_open("maplock", pdc)
                                       : PDCcont_create("maplock", cprop);
    if (cont == 0) {
        printf("FAIL container: %s\n", PDCbb_last_error_message());
        return 1;
    }
    const char *c = argv[1];
    int rc = 0;
    if (!strcmp(c, "example") && argc == 3)
        rc = case_example(argv[2]);
    else if (!strcmp(c, "drained-read") && argc == 3)
        rc = case_drained_read(argv[2]);
    else if (!strcmp(c, "errors"))
        rc = case_errors();
    else if (!strcmp(c, "contend") && argc == 8)
        rc = case_contend(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5], argv[6], atoi(argv[7]));
    else if (!strcmp(c, "hold") && argc == 6)
        rc = case_hold(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10),
                       argv[5]);
    else if (!strcmp(c, "probe") && argc == 3)
        rc = case_probe(argv[2]);
    else if (!strcmp(c, "wait") && argc == 5)
        rc = case_wait(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
    else if (!strcmp(c, "transform"))
        rc = case_transform();
    else if (!strcmp(c, "analysis"))
        rc = case_analysis();
    else {
        fprintf(stderr, "pdc_maplock: unknown command or arguments: %s\n", c);
        return 2;
    }
    if (PDCcont_close(cont) != SUCCEED || PDCprop_close(cprop) != SUCCEED ||
        PDCclose(pdc) != SUCCEED)
        FAILF("close: %s", PDCbb_last_error_message());
    return rc != 0 || failures ? 1 : 0;
}
