/*
 * pdc_grow.c - objects with an unlimited first dimension and collective create/open
 * (71-grow.bats, 9x Slurm test).
 *
 * usage:
 *   mpirun -np N pdc_grow grow PREFIX ROUNDS SEED
 *       Every rank creates (collectively) one growing object per placement, PREFIX-<placement>,
 *       int64 [UNLIMITED x 4], and in each round either writes a block of rows it owns or
 *       extends the object, concurrently with the others; the actions are a function of
 *       (seed, rank, round), so every rank knows them all. Then every rank checks the extent
 *       (the largest row any rank wrote or asked for) and rank 0 reads every row up to past
 *       the extent and compares with the model (written rows, zeros elsewhere).
 *       Prints "grow PLACEMENT: extent ROWS, WRITTEN rows written, SHRINK refused shrinks ok".
 *   mpirun -np N pdc_grow coll PREFIX [fail|only]
 *       The collective create/open calls; every rank checks it has the same meta ids as rank
 *       0, then every rank extends the object through its handle (not with only: then the
 *       collective calls are the only metadata requests of the run). With fail: an open of a missing object and a create of an existing one fail on
 *       every rank with one code. Prints "coll rank R of N: ok".
 *   pdc_grow setup          creates grow-c/ext-only (int32 [UNL x 3], extended to 7, never
 *                           written) and grow-c/written (int64 [UNL x 4], rows 2..4 written, then
 *                           extended to 10); then checks as below.
 *   pdc_grow check          the extents and data of those two (live, drained or staged in).
 *   pdc_grow bad            the error cases.
 *   pdc_grow readonly       over a drain of setup: the extent reads, an extend is refused.
 * Exit status 0 when every check passed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"
#include "prog_util.h"
#include "pdcbb_error.h"

#ifdef ENABLE_MPI
#include <mpi.h>
#endif

static int failures;
static int myrank;

#define NCOLS 4

static int64_t cell(uint64_t row, uint64_t col) { return (int64_t)(row * 1000 + col + 1); }

static pdcid_t make_prop(pdcid_t pdc, pdc_var_type_t type, uint64_t ncols,
                         pdc_region_partition_t part)
{
    uint64_t dims[2] = {PDC_SIZE_UNLIMITED, ncols};
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    PDCprop_set_obj_type(prop, type);
    PDCprop_set_obj_dims(prop, 2, dims);
    PDCprop_set_obj_transfer_region_type(prop, part);
    return prop;
}

static uint64_t extent_of(pdcid_t obj)
{
    uint64_t dims[2] = {0, 0};
    if (PDCbb_obj_get_extent(obj, dims) != SUCCEED) {
        PROG_FAILF("PDCbb_obj_get_extent");
        return UINT64_MAX;
    }
    return dims[0];
}

/* ------------------------------------------------------------------ the concurrent model */

/* A small deterministic generator. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* Action of rank r in round k: *write 1 writes rows [*r0, *r0 + *n) (rows whose block of 3
 * belongs to r: (row / 3) % np == r), else extends to *r0 rows. */
static void action(uint64_t seed, int r, int np, int k, int *write, uint64_t *r0, uint64_t *n)
{
    uint64_t h = mix(seed * 1000003u + (uint64_t)r * 7919u + (uint64_t)k);
    uint64_t block = (h >> 8) % 40;          /* a block of 3 rows among the first 40 of r */
    *write = (h & 3) != 0;                   /* 3 of 4 rounds write */
    *r0 = (block * (uint64_t)np + (uint64_t)r) * 3 + (h >> 20) % 2;
    *n = 1 + (h >> 24) % 2;                  /* 1 or 2 rows, inside the block */
    if (!*write)
        *r0 = 1 + (h >> 28) % (uint64_t)(120 * np); /* extend to that many rows */
}

#ifdef ENABLE_MPI
static int run_grow(pdcid_t pdc, const char *prefix, int rounds, uint64_t seed)
{
    int np;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    char name[256];
    snprintf(name, sizeof(name), "%s-cont", prefix);
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCbb_cont_create_coll(name, cprop, MPI_COMM_WORLD);
    if (cont == 0) {
        PROG_FAILF("PDCbb_cont_create_coll %s", name);
        return 1;
    }
    for (int p = 0; p < 4; p++) {
        snprintf(name, sizeof(name), "%s-%s", prefix, prog_part_names[p]);
        pdcid_t prop = make_prop(pdc, PDC_INT64, NCOLS, prog_parts[p]);
        pdcid_t obj = PDCbb_obj_create_coll(cont, name, prop, MPI_COMM_WORLD);
        if (obj == 0) {
            PROG_FAILF("PDCbb_obj_create_coll %s", name);
            return 1;
        }
        uint64_t want = 0, shrinks = 0;
        int64_t buf[2 * NCOLS];
        for (int k = 0; k < rounds; k++) {
            int w;
            uint64_t r0, n;
            action(seed + (uint64_t)p, myrank, np, k, &w, &r0, &n);
            if (w) {
                for (uint64_t i = 0; i < n; i++)
                    for (uint64_t c = 0; c < NCOLS; c++)
                        buf[i * NCOLS + c] = cell(r0 + i, c);
                if (!prog_xfer_rows(obj, r0, n, NCOLS, buf, PDC_WRITE))
                    PROG_FAILF("%s: write rows %" PRIu64 "+%" PRIu64, name, r0, n);
                if (r0 + n > want)
                    want = r0 + n;
            } else if (PDCbb_obj_extend(obj, r0) != SUCCEED) {
                /* Only refused when another writer or extender went further already. */
                int code = PDCbb_last_error();
                uint64_t now = extent_of(obj);
                if (code != PDCBB_ERR_INVAL || now <= r0)
                    PROG_FAILF("%s: extend to %" PRIu64 " refused with extent %" PRIu64, name, r0,
                               now);
                shrinks++;
                if (r0 > want)
                    want = r0;
            } else if (r0 > want) {
                want = r0;
            }
        }
        uint64_t all = 0;
        MPI_Allreduce(&want, &all, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        uint64_t ext = extent_of(obj);
        if (ext != all)
            PROG_FAILF("%s: extent %" PRIu64 ", the largest row asked is %" PRIu64, name, ext, all);
        uint64_t written = 0;
        if (myrank == 0) {
            /* The model: what every rank wrote (rows are owned by one rank each). */
            uint64_t rows = all + 5;
            int64_t *model = calloc(rows * NCOLS, sizeof(int64_t));
            int64_t *got = calloc(rows * NCOLS, sizeof(int64_t));
            for (int r = 0; r < np; r++)
                for (int k = 0; k < rounds; k++) {
                    int w;
                    uint64_t r0, n;
                    action(seed + (uint64_t)p, r, np, k, &w, &r0, &n);
                    for (uint64_t i = 0; w && i < n; i++)
                        for (uint64_t c = 0; c < NCOLS; c++)
                            model[(r0 + i) * NCOLS + c] = cell(r0 + i, c);
                }
            if (!prog_xfer_rows(obj, 0, rows, NCOLS, got, PDC_READ))
                PROG_FAILF("%s: read rows 0+%" PRIu64 " (5 past the extent)", name, rows);
            for (uint64_t i = 0; i < rows; i++) {
                written += model[i * NCOLS] != 0;
                for (uint64_t c = 0; c < NCOLS; c++)
                    if (got[i * NCOLS + c] != model[i * NCOLS + c]) {
                        PROG_FAILF("%s: row %" PRIu64 " col %" PRIu64 ": %" PRId64
                                   ", expected %" PRId64,
                                   name, i, c, got[i * NCOLS + c], model[i * NCOLS + c]);
                        i = rows;
                        break;
                    }
            }
            free(model);
            free(got);
        }
        uint64_t total_shrinks = 0;
        MPI_Reduce(&shrinks, &total_shrinks, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        if (myrank == 0 && failures == 0)
            printf("grow %s: extent %" PRIu64 ", %" PRIu64 " rows written, %" PRIu64
                   " refused shrinks ok\n",
                   prog_part_names[p], ext, written, total_shrinks);
        PDCobj_close(obj);
        PDCprop_close(prop);
    }
    PDCcont_close(cont);
    return 0;
}

/* Every rank has the meta id rank 0 has. */
static void same_everywhere(const char *what, uint64_t meta)
{
    uint64_t root = meta;
    MPI_Bcast(&root, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (meta == 0 || meta != root)
        PROG_FAILF("%s: meta id %#" PRIx64 ", rank 0 has %#" PRIx64, what, meta, root);
}

static void run_coll(pdcid_t pdc, const char *prefix, int with_failures, int only)
{
    int np;
    char cname[256], oname[256];
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    snprintf(cname, sizeof(cname), "%s-cont", prefix);
    snprintf(oname, sizeof(oname), "%s-obj", prefix);
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t oprop = make_prop(pdc, PDC_FLOAT, 16, PDC_OBJ_STATIC);
    pdcid_t c1 = PDCbb_cont_create_coll(cname, cprop, MPI_COMM_WORLD);
    struct pdc_cont_info *ci = c1 ? PDCcont_get_info(cname) : NULL;
    same_everywhere("PDCbb_cont_create_coll", ci ? ci->meta_id : 0);
    pdcid_t o1 = PDCbb_obj_create_coll(c1, oname, oprop, MPI_COMM_WORLD);
    struct pdc_obj_info *oi = o1 ? PDCobj_get_info(o1) : NULL;
    same_everywhere("PDCbb_obj_create_coll", oi ? oi->meta_id : 0);
    if (oi && (oi->obj_pt->ndim != 2 || oi->obj_pt->dims[0] != PDC_SIZE_UNLIMITED ||
               oi->obj_pt->dims[1] != 16 || oi->obj_pt->type != PDC_FLOAT ||
               strcmp(oi->name, oname) != 0))
        PROG_FAILF("PDCbb_obj_create_coll: the handle's info differs from the property");
    pdcid_t o2 = PDCbb_obj_open_coll(oname, pdc, MPI_COMM_WORLD);
    oi = o2 ? PDCobj_get_info(o2) : NULL;
    same_everywhere("PDCbb_obj_open_coll", oi ? oi->meta_id : 0);
    pdcid_t c2 = PDCbb_cont_open_coll(cname, pdc, MPI_COMM_WORLD);
    ci = c2 ? PDCcont_get_info(cname) : NULL;
    same_everywhere("PDCbb_cont_open_coll", ci ? ci->meta_id : 0);
    /* The handles work on every rank: each extends the object; the extent is the max. */
    if (!only && o2 && PDCbb_obj_extend(o2, (uint64_t)(10 + myrank)) != SUCCEED &&
        PDCbb_last_error() != PDCBB_ERR_INVAL)
        PROG_FAILF("PDCbb_obj_extend through a collective handle");
    MPI_Barrier(MPI_COMM_WORLD);
    if (!only && o1 && extent_of(o1) != (uint64_t)(10 + np - 1))
        PROG_FAILF("extent after every rank extended: %" PRIu64, extent_of(o1));
    if (with_failures) {
        char missing[300];
        snprintf(missing, sizeof(missing), "%s-missing", prefix);
        pdcid_t bad = PDCbb_obj_open_coll(missing, pdc, MPI_COMM_WORLD);
        if (bad != 0 || PDCbb_last_error() != PDCBB_ERR_NOT_FOUND ||
            strstr(PDCbb_last_error_message(), missing) == NULL ||
            (myrank != 0 && strstr(PDCbb_last_error_message(), "rank 0 failed") == NULL))
            PROG_FAILF("PDCbb_obj_open_coll of a missing object");
        bad = PDCbb_obj_create_coll(c1, oname, oprop, MPI_COMM_WORLD);
        if (bad != 0 || PDCbb_last_error() != PDCBB_ERR_EXISTS)
            PROG_FAILF("PDCbb_obj_create_coll of an existing object");
        bad = PDCbb_cont_open_coll(missing, pdc, MPI_COMM_WORLD);
        if (bad != 0 || PDCbb_last_error() != PDCBB_ERR_NOT_FOUND)
            PROG_FAILF("PDCbb_cont_open_coll of a missing container");
    }
    PDCobj_close(o1);
    PDCobj_close(o2);
    PDCcont_close(c1);
    PDCcont_close(c2);
    PDCprop_close(oprop);
    PDCprop_close(cprop);
}
#endif

/* ------------------------------------------------------------------ drain round trip */

static pdcid_t open_cont(pdcid_t pdc, const char *name)
{
    pdcid_t c = PDCcont_open(name, pdc);
    if (c == 0) {
        pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
        c = PDCcont_create(name, cprop);
    }
    return c;
}

static void run_check(pdcid_t pdc)
{
    pdcid_t a = PDCobj_open("ext-only", pdc), b = PDCobj_open("written", pdc);
    uint64_t dims[2] = {0, 0};
    if (a == 0 || PDCbb_obj_get_extent(a, dims) != SUCCEED || dims[0] != 7 || dims[1] != 3)
        PROG_FAILF("ext-only: extent %" PRIu64 "x%" PRIu64 ", expected 7x3", dims[0], dims[1]);
    if (b == 0 || PDCbb_obj_get_extent(b, dims) != SUCCEED || dims[0] != 10 || dims[1] != 4)
        PROG_FAILF("written: extent %" PRIu64 "x%" PRIu64 ", expected 10x4", dims[0], dims[1]);
    int64_t got[12 * 4];
    memset(got, 0x55, sizeof(got));
    if (b == 0 || !prog_xfer_rows(b, 0, 12, 4, got, PDC_READ))
        PROG_FAILF("written: read 12 rows");
    for (uint64_t i = 0; i < 12; i++)
        for (uint64_t c = 0; c < 4; c++) {
            int64_t want = i >= 2 && i <= 4 ? cell(i, c) : 0;
            if (got[i * 4 + c] != want) {
                PROG_FAILF("written: row %" PRIu64 " col %" PRIu64 ": %" PRId64
                           ", expected %" PRId64,
                           i, c, got[i * 4 + c], want);
                i = 12;
                break;
            }
        }
    if (failures == 0)
        printf("check: ext-only 7x3, written 10x4 (rows 2..4 written) ok\n");
    PDCobj_close(a);
    PDCobj_close(b);
}

static void run_setup(pdcid_t pdc)
{
    pdcid_t cont = open_cont(pdc, "grow-c");
    pdcid_t pa = make_prop(pdc, PDC_INT32, 3, PDC_OBJ_STATIC);
    pdcid_t pb = make_prop(pdc, PDC_INT64, 4, PDC_REGION_STATIC);
    pdcid_t a = PDCobj_create(cont, "ext-only", pa), b = PDCobj_create(cont, "written", pb);
    if (a == 0 || b == 0) {
        PROG_FAILF("create");
        return;
    }
    if (extent_of(a) != 0)
        PROG_FAILF("a new object's extent is not 0");
    if (PDCbb_obj_extend(a, 7) != SUCCEED)
        PROG_FAILF("extend ext-only to 7");
    int64_t buf[3 * 4];
    for (uint64_t i = 0; i < 3; i++)
        for (uint64_t c = 0; c < 4; c++)
            buf[i * 4 + c] = cell(2 + i, c);
    if (!prog_xfer_rows(b, 2, 3, 4, buf, PDC_WRITE))
        PROG_FAILF("write rows 2..4");
    if (extent_of(b) != 5)
        PROG_FAILF("written: extent after writing rows 2..4 is %" PRIu64 ", not 5", extent_of(b));
    if (PDCbb_obj_extend(b, 10) != SUCCEED)
        PROG_FAILF("extend written to 10");
    PDCobj_close(a);
    PDCobj_close(b);
    PDCcont_close(cont);
    run_check(pdc);
}

/* ------------------------------------------------------------------ errors */

static void expect_fail(perr_t ret, int code, const char *needle, const char *what)
{
    if (ret != FAIL || PDCbb_last_error() != code ||
        (needle && strstr(PDCbb_last_error_message(), needle) == NULL))
        PROG_FAILF("%s: expected %d with '%s'", what, code, needle ? needle : "");
    else
        printf("bad: %s: %s: %s\n", what, PDCbb_last_error_name(), PDCbb_last_error_message());
}

static void run_bad(pdcid_t pdc)
{
    pdcid_t cont = open_cont(pdc, "grow-bad");
    pdcid_t pg = make_prop(pdc, PDC_INT32, 3, PDC_OBJ_STATIC);
    uint64_t fixed[2] = {8, 3};
    pdcid_t pf = PDCprop_create(PDC_OBJ_CREATE, pdc);
    PDCprop_set_obj_type(pf, PDC_INT32);
    PDCprop_set_obj_dims(pf, 2, fixed);
    pdcid_t g = PDCobj_create(cont, "bad-grow", pg), f = PDCobj_create(cont, "bad-fixed", pf);
    if (g == 0 || f == 0 || PDCbb_obj_extend(g, 20) != SUCCEED) {
        PROG_FAILF("setup");
        return;
    }
    expect_fail(PDCbb_obj_extend(g, 5), PDCBB_ERR_INVAL, "already has 20 rows", "shrink");
    if (extent_of(g) != 20)
        PROG_FAILF("the refused shrink changed the extent");
    expect_fail(PDCbb_obj_extend(g, 0), PDCBB_ERR_INVAL, "0 rows", "zero rows");
    expect_fail(PDCbb_obj_extend(g, PDC_SIZE_UNLIMITED), PDCBB_ERR_INVAL, "PDC_SIZE_UNLIMITED",
                "unlimited rows");
    expect_fail(PDCbb_obj_extend(f, 50), PDCBB_ERR_UNSUPPORTED, "bad-fixed", "fixed object");
    expect_fail(PDCbb_obj_extend(cont, 50), PDCBB_ERR_WRONG_TYPE, NULL, "container id");
    expect_fail(PDCbb_obj_extend((pdcid_t)0x7fff1234, 50), PDCBB_ERR_BAD_ID, NULL, "bad id");
    expect_fail(PDCbb_obj_get_extent(g, NULL), PDCBB_ERR_INVAL, "NULL", "NULL dims");
    expect_fail(PDCbb_obj_get_extent((pdcid_t)0x7fff1234, fixed), PDCBB_ERR_BAD_ID, NULL,
                "get of a bad id");
    uint64_t dims[2];
    if (PDCbb_obj_get_extent(f, dims) != SUCCEED || dims[0] != 8 || dims[1] != 3)
        PROG_FAILF("a fixed object's extent is its dims");
    /* Equal to the extent is fine; an extend after a delete is refused by the daemon. */
    if (PDCbb_obj_extend(g, 20) != SUCCEED)
        PROG_FAILF("extend to the current extent");
    pdcid_t g2 = PDCobj_open("bad-grow", pdc);
    if (g2 == 0 || PDCobj_del(g2) != SUCCEED)
        PROG_FAILF("delete");
    expect_fail(PDCbb_obj_extend(g, 30), PDCBB_ERR_NOT_FOUND, "bad-grow", "deleted object");
    PDCobj_close(g);
    PDCobj_close(g2);
    PDCobj_close(f);
}

/* Over a drain: the extent reads, extending is refused. */
static void run_readonly(pdcid_t pdc)
{
    pdcid_t b = PDCobj_open("written", pdc);
    if (b == 0 || extent_of(b) != 10)
        PROG_FAILF("written: open or extent");
    expect_fail(PDCbb_obj_extend(b, 50), PDCBB_ERR_READ_ONLY, "written",
                "extend a drained object");
    PDCobj_close(b);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pdc_grow grow|coll|setup|check|bad ...\n");
        return 2;
    }
    const char *mode = argv[1];
    int mpi = strcmp(mode, "grow") == 0 || strcmp(mode, "coll") == 0;
#ifdef ENABLE_MPI
    if (mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &myrank);
    }
#else
    if (mpi) {
        fprintf(stderr, "pdc_grow: built without MPI\n");
        return 2;
    }
#endif
    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0) {
        PROG_FAILF("PDCinit");
        return 1;
    }
    if (strcmp(mode, "setup") == 0)
        run_setup(pdc);
    else if (strcmp(mode, "check") == 0)
        run_check(pdc);
    else if (strcmp(mode, "bad") == 0)
        run_bad(pdc);
    else if (strcmp(mode, "readonly") == 0)
        run_readonly(pdc);
#ifdef ENABLE_MPI
    else if (strcmp(mode, "grow") == 0 && argc == 5)
        run_grow(pdc, argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10));
    else if (strcmp(mode, "coll") == 0 && argc >= 3)
        run_coll(pdc, argv[2], argc > 3 && strcmp(argv[3], "fail") == 0,
                 argc > 3 && strcmp(argv[3], "only") == 0);
#endif
    else {
        fprintf(stderr, "pdc_grow: bad arguments\n");
        failures++;
    }
    PDCclose(pdc);
#ifdef ENABLE_MPI
    if (mpi) {
        int all = 0;
        MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (failures == 0 && strcmp(mode, "coll") == 0)
            printf("coll rank %d: ok\n", myrank);
        MPI_Finalize();
        return all ? 1 : 0;
    }
#endif
    return failures ? 1 : 0;
}
