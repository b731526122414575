/*
 * pdc_append.c - PDCbb_obj_append (73-append.bats).
 *
 * usage:
 *   pdc_append matrix PREFIX     every placement of dst x every placement of src: dst
 *                                (int64 [UNL x 5], rows 0..2 written) += src (fixed [37 x 5];
 *                                remembered placements written twice, overlapping: the newest
 *                                write wins) += C (unlimited, rows 0..3 written, extent 6);
 *                                extent and every row compared with the model.
 *                                Prints "matrix DST SRC: extent 46 ok".
 *   mpirun -np N pdc_append conc PREFIX K
 *                                every rank appends its own object K times to one shared dst
 *                                per placement, concurrently; rank 0 checks the extent is the
 *                                sum and every append's rows are present once, contiguous.
 *                                Prints "conc PLACEMENT: N ranks x K appends, extent E ok".
 *   pdc_append bigw PREFIX MIB   src (int64 [MIB*16 x 8192], OBJ_STATIC) written, dst created
 *   pdc_append bigapp PREFIX     dst += src (no data read or written by this process)
 *   pdc_append bigcheck PREFIX   dst's extent and every row.
 *   pdc_append example           the user guide's example (docs/USER-GUIDE.md) is separate.
 *   pdc_append bad               the error cases.
 *   pdc_append drained           over a drain of the guide's example: extent 60, data, append
 *                                refused (READ_ONLY).
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


static pdcid_t make_obj(pdcid_t pdc, pdcid_t cont, const char *name, pdc_var_type_t type,
                        uint64_t rows, uint64_t ncols, pdc_region_partition_t part)
{
    uint64_t dims[2] = {rows, ncols};
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    PDCprop_set_obj_type(prop, type);
    PDCprop_set_obj_dims(prop, 2, dims);
    PDCprop_set_obj_transfer_region_type(prop, part);
    pdcid_t obj = PDCobj_create(cont, name, prop);
    PDCprop_close(prop);
    if (obj == 0)
        PROG_FAILF("PDCobj_create %s", name);
    return obj;
}

static pdcid_t make_cont(pdcid_t pdc, const char *name)
{
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create(name, cprop);
    if (cont == 0)
        PROG_FAILF("PDCcont_create %s", name);
    return cont;
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

/* Write rows [r0, r0 + n) of obj with val(tag, row, col) and note them in model (or NULL). */
static int64_t val(int tag, uint64_t row, uint64_t col)
{
    return (int64_t)tag * 1000000 + (int64_t)row * 100 + (int64_t)col + 1;
}

static void write_rows(pdcid_t obj, const char *name, int tag, uint64_t r0, uint64_t n,
                       uint64_t ncols, int64_t *model, uint64_t model_off)
{
    int64_t *buf = malloc(n * ncols * sizeof(int64_t));
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t c = 0; c < ncols; c++) {
            buf[i * ncols + c] = val(tag, r0 + i, c);
            if (model)
                model[(model_off + r0 + i) * ncols + c] = buf[i * ncols + c];
        }
    if (!prog_xfer_rows(obj, r0, n, ncols, buf, PDC_WRITE))
        PROG_FAILF("%s: write rows %" PRIu64 "+%" PRIu64, name, r0, n);
    free(buf);
}

/* Read rows [0, rows) of obj and compare with model. */
static void compare(pdcid_t obj, const char *name, uint64_t rows, uint64_t ncols,
                    const int64_t *model)
{
    int64_t *got = calloc(rows * ncols, sizeof(int64_t));
    if (!prog_xfer_rows(obj, 0, rows, ncols, got, PDC_READ))
        PROG_FAILF("%s: read rows 0+%" PRIu64, name, rows);
    for (uint64_t i = 0; i < rows * ncols; i++)
        if (got[i] != model[i]) {
            PROG_FAILF("%s: row %" PRIu64 " col %" PRIu64 ": %" PRId64 ", expected %" PRId64, name,
                  i / ncols, i % ncols, got[i], model[i]);
            break;
        }
    free(got);
}

/* ------------------------------------------------------------------ matrix */

#define MC 5
static void run_matrix(pdcid_t pdc, const char *prefix)
{
    char name[256];
    snprintf(name, sizeof(name), "%s-cont", prefix);
    pdcid_t cont = make_cont(pdc, name);
    for (int d = 0; d < 4; d++)
        for (int s = 0; s < 4; s++) {
            int before = failures;
            const uint64_t e0 = 3, rs = 37, rc = 6, total = e0 + rs + rc, rows = total + 4;
            int64_t *model = calloc(rows * MC, sizeof(int64_t));
            char dn[256], sn[256], cn[256];
            snprintf(dn, sizeof(dn), "%s-dst-%s-%s", prefix, prog_part_names[d],
                     prog_part_names[s]);
            snprintf(sn, sizeof(sn), "%s-src-%s-%s", prefix, prog_part_names[d],
                     prog_part_names[s]);
            snprintf(cn, sizeof(cn), "%s-c-%s-%s", prefix, prog_part_names[d], prog_part_names[s]);
            pdcid_t dst = make_obj(pdc, cont, dn, PDC_INT64, PDC_SIZE_UNLIMITED, MC, prog_parts[d]);
            pdcid_t src = make_obj(pdc, cont, sn, PDC_INT64, rs, MC, prog_parts[s]);
            pdcid_t c = make_obj(pdc, cont, cn, PDC_INT64, PDC_SIZE_UNLIMITED, MC, prog_parts[s]);
            write_rows(dst, dn, 1, 0, e0, MC, model, 0);
            if (prog_parts[s] == PDC_REGION_DYNAMIC || prog_parts[s] == PDC_REGION_LOCAL) {
                /* Two overlapping writes: rows 10..19 come from the newer one. */
                write_rows(src, sn, 2, 0, 20, MC, model, e0);
                write_rows(src, sn, 3, 10, rs - 10, MC, model, e0);
            } else {
                write_rows(src, sn, 2, 0, rs, MC, model, e0);
            }
            write_rows(c, cn, 4, 0, 4, MC, model, e0 + rs);
            if (PDCbb_obj_extend(c, rc) != SUCCEED) /* rows 4 and 5 never written: zeros */
                PROG_FAILF("%s: extend to %" PRIu64, cn, rc);
            if (PDCbb_obj_append(dst, src) != SUCCEED)
                PROG_FAILF("append %s to %s", sn, dn);
            if (extent_of(dst) != e0 + rs)
                PROG_FAILF("%s: extent %" PRIu64 " after the first append, expected %" PRIu64, dn,
                      extent_of(dst), e0 + rs);
            if (PDCbb_obj_append(dst, c) != SUCCEED)
                PROG_FAILF("append %s to %s", cn, dn);
            uint64_t ext = extent_of(dst);
            if (ext != total)
                PROG_FAILF("%s: extent %" PRIu64 ", expected %" PRIu64, dn, ext, total);
            compare(dst, dn, rows, MC, model);
            /* The sources are unchanged. */
            compare(src, sn, rs, MC, model + e0 * MC);
            if (failures == before)
                printf("matrix %s %s: extent %" PRIu64 " ok\n", prog_part_names[d],
                       prog_part_names[s], ext);
            PDCobj_close(dst);
            PDCobj_close(src);
            PDCobj_close(c);
            free(model);
        }
    PDCcont_close(cont);
}

/* ------------------------------------------------------------------ concurrent appends */

#ifdef ENABLE_MPI
#define CC 3
/* Row i of rank r's k-th append, column c (nonzero). */
static int64_t cval(int r, int k, uint64_t i, uint64_t c)
{
    return ((int64_t)(r * 100 + k) * 1000 + (int64_t)i) * 10 + (int64_t)c + 1;
}

static uint64_t crows(int r) { return (uint64_t)r + 2; }

static void run_conc(pdcid_t pdc, const char *prefix, int K)
{
    int np;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    char name[256];
    snprintf(name, sizeof(name), "%s-cont", prefix);
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCbb_cont_create_coll(name, cprop, MPI_COMM_WORLD);
    if (cont == 0) {
        PROG_FAILF("PDCbb_cont_create_coll %s", name);
        return;
    }
    for (int p = 0; p < 4; p++) {
        int before = failures;
        snprintf(name, sizeof(name), "%s-%s", prefix, prog_part_names[p]);
        uint64_t dims[2] = {PDC_SIZE_UNLIMITED, CC};
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        PDCprop_set_obj_type(prop, PDC_INT64);
        PDCprop_set_obj_dims(prop, 2, dims);
        PDCprop_set_obj_transfer_region_type(prop, prog_parts[p]);
        pdcid_t dst = PDCbb_obj_create_coll(cont, name, prop, MPI_COMM_WORLD);
        if (dst == 0) {
            PROG_FAILF("PDCbb_obj_create_coll %s", name);
            return;
        }
        char sn[300];
        snprintf(sn, sizeof(sn), "%s-src%d", name, myrank);
        pdcid_t src = make_obj(pdc, cont, sn, PDC_INT64, crows(myrank), CC, prog_parts[p]);
        int64_t buf[64 * CC];
        for (int k = 0; k < K; k++) {
            for (uint64_t i = 0; i < crows(myrank); i++)
                for (uint64_t c = 0; c < CC; c++)
                    buf[i * CC + c] = cval(myrank, k, i, c);
            if (!prog_xfer_rows(src, 0, crows(myrank), CC, buf, PDC_WRITE))
                PROG_FAILF("%s: write", sn);
            if (PDCbb_obj_append(dst, src) != SUCCEED)
                PROG_FAILF("append %s to %s (round %d)", sn, name, k);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        uint64_t want = 0;
        for (int r = 0; r < np; r++)
            want += (uint64_t)K * crows(r);
        uint64_t ext = extent_of(dst);
        if (ext != want)
            PROG_FAILF("%s: extent %" PRIu64 ", expected the sum %" PRIu64, name, ext, want);
        if (myrank == 0 && ext == want) {
            int64_t *got = calloc(want * CC, sizeof(int64_t));
            char *seen = calloc((size_t)np * (size_t)K, 1);
            if (!prog_xfer_rows(dst, 0, want, CC, got, PDC_READ))
                PROG_FAILF("%s: read", name);
            /* Walk the rows: each append is its rows 0..n-1, contiguous, once. */
            for (uint64_t row = 0; row < want;) {
                int64_t v = got[row * CC];
                int r = (int)(v / 10 / 1000 / 100), k = (int)(v / 10 / 1000 % 100);
                if (v <= 0 || r >= np || k >= K || (v / 10) % 1000 != 0 || seen[r * K + k]) {
                    PROG_FAILF("%s: row %" PRIu64 " (%" PRId64 ") starts no new append", name, row,
                               v);
                    break;
                }
                seen[r * K + k] = 1;
                for (uint64_t i = 0; i < crows(r); i++)
                    for (uint64_t c = 0; c < CC; c++)
                        if (row + i >= want || got[(row + i) * CC + c] != cval(r, k, i, c)) {
                            PROG_FAILF("%s: row %" PRIu64 " of rank %d's append %d is wrong", name,
                                  row + i, r, k);
                            row = want;
                            i = crows(r);
                            break;
                        }
                row += crows(r);
            }
            free(got);
            free(seen);
        }
        int f = failures - before, all = 0;
        MPI_Allreduce(&f, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (myrank == 0 && all == 0)
            printf("conc %s: %d ranks x %d appends, extent %" PRIu64 " ok\n", prog_part_names[p],
                   np, K, ext);
        PDCobj_close(src);
        PDCobj_close(dst);
    }
}
#endif

/* ------------------------------------------------------------------ big (the stats test) */

#define BC 8192
static void run_big(pdcid_t pdc, const char *step, const char *prefix, uint64_t mib)
{
    char cn[256], sn[256], dn[256];
    snprintf(cn, sizeof(cn), "%s-cont", prefix);
    snprintf(sn, sizeof(sn), "%s-src", prefix);
    snprintf(dn, sizeof(dn), "%s-dst", prefix);
    if (strcmp(step, "bigw") == 0) {
        pdcid_t cont = make_cont(pdc, cn);
        pdcid_t src = make_obj(pdc, cont, sn, PDC_INT64, mib * 16, BC, PDC_OBJ_STATIC);
        pdcid_t dst = make_obj(pdc, cont, dn, PDC_INT64, PDC_SIZE_UNLIMITED, BC, PDC_OBJ_STATIC);
        for (uint64_t r = 0; r < mib * 16; r += 16)
            write_rows(src, sn, 5, r, 16, BC, NULL, 0);
        PDCobj_close(src);
        PDCobj_close(dst);
        if (failures == 0)
            printf("bigw: %" PRIu64 " MiB written\n", mib);
        return;
    }
    pdcid_t src = PDCobj_open(sn, pdc), dst = PDCobj_open(dn, pdc);
    if (src == 0 || dst == 0) {
        PROG_FAILF("PDCobj_open %s / %s", sn, dn);
        return;
    }
    if (strcmp(step, "bigapp") == 0) {
        if (PDCbb_obj_append(dst, src) != SUCCEED)
            PROG_FAILF("append %s to %s", sn, dn);
        else
            printf("bigapp: appended\n");
    } else {
        uint64_t rows = extent_of(dst);
        int64_t *got = malloc(16 * BC * sizeof(int64_t));
        for (uint64_t r = 0; r < rows && failures == 0; r += 16) {
            if (!prog_xfer_rows(dst, r, 16, BC, got, PDC_READ))
                PROG_FAILF("%s: read rows %" PRIu64, dn, r);
            for (uint64_t i = 0; i < 16 * BC; i++)
                if (got[i] != val(5, r + i / BC, i % BC)) {
                    PROG_FAILF("%s: row %" PRIu64 " col %" PRIu64 " is %" PRId64, dn, r + i / BC,
                          (uint64_t)(i % BC), got[i]);
                    break;
                }
        }
        free(got);
        if (failures == 0)
            printf("bigcheck: extent %" PRIu64 " rows, %" PRIu64 " MiB ok\n", rows,
                   rows * BC * 8 >> 20);
    }
}

/* ------------------------------------------------------------------ errors */

static void expect_fail(perr_t rc, int code, const char *what, const char *needle)
{
    if (rc != FAIL)
        PROG_FAILF("%s succeeded", what);
    else if (PDCbb_last_error() != code)
        PROG_FAILF("%s: %s, expected %s", what, PDCbb_last_error_name(), pdcbb_errname(code));
    else if (needle && strstr(PDCbb_last_error_message(), needle) == NULL)
        PROG_FAILF("%s: message lacks '%s'", what, needle);
    else
        printf("bad: %s: %s ok\n", what, PDCbb_last_error_name());
}

static void run_bad(pdcid_t pdc)
{
    pdcid_t cont = make_cont(pdc, "bad-cont");
    pdcid_t dst = make_obj(pdc, cont, "bad-dst", PDC_INT64, PDC_SIZE_UNLIMITED, 4, PDC_OBJ_STATIC);
    pdcid_t fixed = make_obj(pdc, cont, "bad-fixed", PDC_INT64, 5, 4, PDC_OBJ_STATIC);
    pdcid_t i32 = make_obj(pdc, cont, "bad-int32", PDC_INT32, 5, 4, PDC_OBJ_STATIC);
    pdcid_t wide = make_obj(pdc, cont, "bad-wide", PDC_INT64, 5, 6, PDC_OBJ_STATIC);
    uint64_t d3[3] = {5, 4, 2};
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    PDCprop_set_obj_type(prop, PDC_INT64);
    PDCprop_set_obj_dims(prop, 3, d3);
    pdcid_t three = PDCobj_create(cont, "bad-3d", prop);
    expect_fail(PDCbb_obj_append(dst, i32), PDCBB_ERR_WRONG_TYPE, "int32 onto int64", "bad-int32");
    expect_fail(PDCbb_obj_append(dst, wide), PDCBB_ERR_BAD_REGION, "6 columns onto 4",
                "dimension 1");
    expect_fail(PDCbb_obj_append(dst, three), PDCBB_ERR_BAD_REGION, "3 dims onto 2",
                "dimensions");
    expect_fail(PDCbb_obj_append(fixed, dst), PDCBB_ERR_UNSUPPORTED, "onto a fixed object",
                "PDC_SIZE_UNLIMITED");
    expect_fail(PDCbb_obj_append(dst, dst), PDCBB_ERR_INVAL, "onto itself", "itself");
    expect_fail(PDCbb_obj_append(dst, 0), PDCBB_ERR_BAD_ID, "src id 0", NULL);
    expect_fail(PDCbb_obj_append(987654321, fixed), PDCBB_ERR_BAD_ID, "dst id 987654321", NULL);
    expect_fail(PDCbb_obj_append(dst, cont), PDCBB_ERR_WRONG_TYPE, "a container as src", "container");
    /* Nothing changed by the failures. */
    if (extent_of(dst) != 0)
        PROG_FAILF("bad-dst grew to %" PRIu64 " rows after failed appends", extent_of(dst));
    /* A deleted source. */
    if (PDCobj_del(fixed) != SUCCEED)
        PROG_FAILF("PDCobj_del bad-fixed");
    expect_fail(PDCbb_obj_append(dst, fixed), PDCBB_ERR_NOT_FOUND, "a deleted src", "deleted");
    if (failures == 0)
        printf("bad: ok\n");
}

/* ------------------------------------------------------------------ the drained job */

static void run_drained(pdcid_t pdc)
{
    pdcid_t a = PDCobj_open("arrayA", pdc), b = PDCobj_open("arrayB", pdc);
    if (a == 0 || b == 0) {
        PROG_FAILF("PDCobj_open arrayA / arrayB");
        return;
    }
    uint64_t ext = extent_of(b);
    if (ext != 60)
        PROG_FAILF("arrayB: extent %" PRIu64 ", expected 60", ext);
    float *got = calloc(60 * 1024, sizeof(float));
    uint64_t off[2] = {0, 0}, size[2] = {60, 1024};
    pdcid_t reg = PDCregion_create(2, off, size);
    pdcid_t req = PDCregion_transfer_create(got, PDC_READ, b, reg, reg);
    if (!req || PDCregion_transfer_start(req) != SUCCEED || PDCregion_transfer_wait(req) != SUCCEED)
        PROG_FAILF("arrayB: read");
    for (uint64_t i = 0; i < 60 * 1024; i++) {
        uint64_t r = i / 1024, c = i % 1024;
        float want = r < 10 ? (float)(r * 1024 + c) : (float)(1000000 + (r - 10) * 1024 + c);
        if (got[i] != want) {
            PROG_FAILF("arrayB row %" PRIu64 " col %" PRIu64 ": %g, expected %g", r, c, got[i],
                       want);
            break;
        }
    }
    free(got);
    expect_fail(PDCbb_obj_append(b, a), PDCBB_ERR_READ_ONLY, "append over a drain", "read-only");
    if (failures == 0)
        printf("drained: arrayB 60x1024 ok\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pdc_append matrix|conc|bigw|bigapp|bigcheck|bad|drained ...\n");
        return 2;
    }
    const char *mode = argv[1];
    int mpi = strcmp(mode, "conc") == 0;
#ifdef ENABLE_MPI
    if (mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &myrank);
    }
#else
    if (mpi) {
        fprintf(stderr, "pdc_append: built without MPI\n");
        return 2;
    }
#endif
    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0) {
        PROG_FAILF("PDCinit");
        return 1;
    }
    if (strcmp(mode, "matrix") == 0 && argc == 3)
        run_matrix(pdc, argv[2]);
    else if ((strcmp(mode, "bigw") == 0 && argc == 4) ||
             ((strcmp(mode, "bigapp") == 0 || strcmp(mode, "bigcheck") == 0) && argc == 3))
        run_big(pdc, mode, argv[2], argc == 4 ? strtoull(argv[3], NULL, 10) : 0);
    else if (strcmp(mode, "bad") == 0)
        run_bad(pdc);
    else if (strcmp(mode, "drained") == 0)
        run_drained(pdc);
#ifdef ENABLE_MPI
    else if (strcmp(mode, "conc") == 0 && argc == 4)
        run_conc(pdc, argv[2], atoi(argv[3]));
#endif
    else {
        fprintf(stderr, "pdc_append: bad arguments\n");
        failures++;
    }
    PDCclose(pdc);
#ifdef ENABLE_MPI
    if (mpi)
        MPI_Finalize();
#endif
    return failures ? 1 : 0;
}
