/*
 * pdc_stage_check - known data in every placement, for the drain / stage-in / restart tests
 * (tests/bats/120-stage.bats):
 *
 *   pdc_stage_check write SEED    create container "stage" and the objects below, write them
 *   pdc_stage_check check SEED    open them (in this job, a later one after stage-in, or a drain
 *                                 through PDCBB_DRAINED_DIR) and compare every element and tag
 *   pdc_stage_check expect SEED OBJECT   write the expected bytes of OBJECT to stdout (what
 *                                 `pdcbb get DRAIN OBJECT` must print)
 *   pdc_stage_check wide-write SEED / wide-check SEED
 *                                 the same for "st-wide", PDC_UINT8 [3, 70M] PDC_REGION_STATIC,
 *                                 rows of 70 MB (more than a 64 MiB slab), three small boxes
 *                                 written near its edges, everything else never written
 *
 * Objects (element values are functions of the seed and the position):
 *   st-objstatic  PDC_DOUBLE [300000]        PDC_OBJ_STATIC, written in 3 pieces
 *   st-rstatic    PDC_INT [64, 1000]         PDC_REGION_STATIC (striped over the daemons)
 *   st-dynamic    PDC_FLOAT [100, 100]       PDC_REGION_DYNAMIC: whole, then [20,60)x[10,50)
 *                                            overwritten (the newest write wins)
 *   st-local      PDC_UINT8 [100000]         PDC_REGION_LOCAL, only [1000, 51000) written
 *   st-unlimited  PDC_INT64 [unlimited, 16]  PDC_OBJ_STATIC, rows [0, 500) written
 * Tags: container "run" = int SEED; object st-objstatic "units" = string "kelvin".
 * Prints "ok ..." per check or "FAIL ..."; exit 0 if all passed, 1 otherwise, 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"
#include "prog_util.h"

#define NOBJ 5

typedef struct spec {
    const char *name;
    pdc_var_type_t type;
    size_t esize;
    int ndim;
    uint64_t dims[2];     /* created with; dims[0] 0 means unlimited */
    uint64_t shape[2];    /* what is written/read */
    int placement;
} spec_t;

static const spec_t specs[NOBJ] = {
    {"st-objstatic", PDC_DOUBLE, 8, 1, {300000}, {300000}, PDC_OBJ_STATIC},
    {"st-rstatic", PDC_INT, 4, 2, {64, 1000}, {64, 1000}, PDC_REGION_STATIC},
    {"st-dynamic", PDC_FLOAT, 4, 2, {100, 100}, {100, 100}, PDC_REGION_DYNAMIC},
    {"st-local", PDC_UINT8, 1, 1, {100000}, {100000}, PDC_REGION_LOCAL},
    {"st-unlimited", PDC_INT64, 8, 2, {0, 16}, {500, 16}, PDC_OBJ_STATIC},
};

static int failures;
static unsigned seed;

static uint64_t count_of(const spec_t *s)
{
    return s->ndim == 1 ? s->shape[0] : s->shape[0] * s->shape[1];
}

/* The final content of object k, element i (row-major). */
static void expected(int k, uint8_t *buf)
{
    const spec_t *s = &specs[k];
    uint64_t n = count_of(s);
    for (uint64_t i = 0; i < n; i++) {
        switch (k) {
        case 0: ((double *)buf)[i] = seed * 1e6 + (double)i; break;
        case 1: ((int32_t *)buf)[i] = (int32_t)(seed + i); break;
        case 2: {
            uint64_t r = i / 100, c = i % 100;
            int over = r >= 20 && r < 60 && c >= 10 && c < 50;
            ((float *)buf)[i] = (float)(over ? 2 + seed : 1 + seed) + (float)i / 1000.0f;
            break;
        }
        case 3: buf[i] = i >= 1000 && i < 51000 ? (uint8_t)((i * 7 + seed) & 0xff) : 0; break;
        case 4: ((int64_t *)buf)[i] = (int64_t)i * 3 - (int64_t)seed; break;
        }
    }
}

static void check(int ok, const char *what, const char *name)
{
    if (ok) {
        printf("ok %s %s\n", what, name);
        return;
    }
    printf("FAIL %s %s: %s %s\n", what, name, PDCbb_last_error_name(),
           PDCbb_last_error_message());
    failures++;
}

/* Pack box [off, off+size) of a row-major array of shape into out. */
static void pack(const spec_t *s, const uint8_t *all, const uint64_t *off, const uint64_t *size,
                 uint8_t *out)
{
    if (s->ndim == 1) {
        memcpy(out, all + off[0] * s->esize, size[0] * s->esize);
        return;
    }
    for (uint64_t r = 0; r < size[0]; r++)
        memcpy(out + r * size[1] * s->esize,
               all + ((off[0] + r) * s->shape[1] + off[1]) * s->esize, size[1] * s->esize);
}

static int do_write(pdcid_t pdc)
{
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create("stage", cprop);
    check(cont != 0, "cont-create", "stage");
    if (!cont)
        return 1;
    int32_t v = (int32_t)seed;
    check(PDCcont_put_tag(cont, "run", &v, PDC_INT, sizeof(v)) == SUCCEED, "cont-tag", "run");
    for (int k = 0; k < NOBJ; k++) {
        const spec_t *s = &specs[k];
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        uint64_t d[2] = {s->dims[0] ? s->dims[0] : PDC_SIZE_UNLIMITED, s->dims[1]};
        PDCprop_set_obj_dims(prop, s->ndim, d);
        PDCprop_set_obj_type(prop, s->type);
        PDCprop_set_obj_transfer_region_type(prop, (pdc_region_partition_t)s->placement);
        pdcid_t obj = PDCobj_create(cont, (char *)s->name, prop);
        PDCprop_close(prop);
        check(obj != 0, "obj-create", s->name);
        if (!obj)
            continue;
        uint64_t n = count_of(s);
        uint8_t *all = malloc(n * s->esize), *piece = malloc(n * s->esize);
        expected(k, all);
        int ok = 1;
        if (k == 0) { /* three pieces */
            uint64_t cuts[4] = {0, 100000, 123457, n};
            for (int p = 0; p < 3 && ok; p++) {
                uint64_t off = cuts[p], size = cuts[p + 1] - cuts[p];
                ok = prog_transfer(obj, PDC_WRITE, all + off * s->esize, 1, &off, &size);
            }
        } else if (k == 2) { /* whole with the old values, then the overwrite */
            uint8_t *old = malloc(n * s->esize);
            for (uint64_t i = 0; i < n; i++)
                ((float *)old)[i] = (float)(1 + seed) + (float)i / 1000.0f;
            uint64_t off[2] = {0, 0}, box_off[2] = {20, 10}, box_size[2] = {40, 40};
            ok = prog_transfer(obj, PDC_WRITE, old, 2, off, s->shape);
            pack(s, all, box_off, box_size, piece);
            ok = ok && prog_transfer(obj, PDC_WRITE, piece, 2, box_off, box_size);
            free(old);
        } else if (k == 3) {
            uint64_t off = 1000, size = 50000;
            ok = prog_transfer(obj, PDC_WRITE, all + off, 1, &off, &size);
        } else {
            uint64_t off[2] = {0, 0};
            ok = prog_transfer(obj, PDC_WRITE, all, s->ndim, off, s->shape);
        }
        check(ok, "write", s->name);
        if (k == 0)
            check(PDCobj_put_tag(obj, "units", "kelvin", PDC_STRING, 7) == SUCCEED, "obj-tag",
                  s->name);
        PDCobj_close(obj);
        free(all);
        free(piece);
    }
    PDCcont_close(cont);
    PDCprop_close(cprop);
    return failures != 0;
}

static int do_check(pdcid_t pdc)
{
    pdcid_t cont = PDCcont_open("stage", pdc);
    check(cont != 0, "cont-open", "stage");
    if (cont) {
        void *val = NULL;
        pdc_var_type_t t;
        psize_t sz = 0;
        int ok = PDCcont_get_tag(cont, "run", &val, &t, &sz) == SUCCEED && t == PDC_INT &&
                 sz == 4 && *(int32_t *)val == (int32_t)seed;
        check(ok, "cont-tag", "run");
        free(val);
        PDCcont_close(cont);
    }
    for (int k = 0; k < NOBJ; k++) {
        const spec_t *s = &specs[k];
        pdcid_t obj = PDCobj_open(s->name, pdc);
        check(obj != 0, "obj-open", s->name);
        if (!obj)
            continue;
        uint64_t n = count_of(s);
        uint8_t *want = malloc(n * s->esize), *got = malloc(n * s->esize);
        expected(k, want);
        memset(got, 0xa5, n * s->esize);
        uint64_t off[2] = {0, 0};
        int ok = prog_transfer(obj, PDC_READ, got, s->ndim, off, s->shape);
        if (!ok)
            printf("read-whole %s failed: %s\n", s->name, prog_xfer_error);
        check(ok && memcmp(want, got, n * s->esize) == 0, "read-whole", s->name);
        /* a box inside, crossing stripes and the overwrite's edges */
        uint64_t boff[2] = {s->shape[0] / 5, s->ndim == 2 ? s->shape[1] / 7 : 0};
        uint64_t bsize[2] = {s->shape[0] / 2, s->ndim == 2 ? s->shape[1] / 2 : 0};
        uint8_t *wbox = malloc(n * s->esize), *gbox = malloc(n * s->esize);
        pack(s, want, boff, bsize, wbox);
        ok = prog_transfer(obj, PDC_READ, gbox, s->ndim, boff, bsize);
        if (!ok)
            printf("read-box %s failed: %s\n", s->name, prog_xfer_error);
        uint64_t bn = s->ndim == 1 ? bsize[0] : bsize[0] * bsize[1];
        check(ok && memcmp(wbox, gbox, bn * s->esize) == 0, "read-box", s->name);
        if (k == 0) {
            void *val = NULL;
            pdc_var_type_t t;
            psize_t sz = 0;
            ok = PDCobj_get_tag(obj, "units", &val, &t, &sz) == SUCCEED && t == PDC_STRING &&
                 sz == 7 && strcmp(val, "kelvin") == 0;
            check(ok, "obj-tag", s->name);
            free(val);
        }
        PDCobj_close(obj);
        free(want);
        free(got);
        free(wbox);
        free(gbox);
    }
    return failures != 0;
}

#define WIDE_COLS 70000000ull

/* The written boxes of st-wide: row, first column, count. */
static const uint64_t wide_boxes[3][3] = {
    {0, 0, 1000}, {1, WIDE_COLS - 1000, 1000}, {2, 33554000, 2000}};

static uint8_t wide_value(uint64_t row, uint64_t col)
{
    return (uint8_t)(1 + (row * 31 + col * 7 + seed) % 255);
}

static int do_wide(pdcid_t pdc, int write)
{
    pdcid_t obj;
    if (write) {
        pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
        pdcid_t cont = PDCcont_create("stage-wide", cprop);
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        uint64_t d[2] = {3, WIDE_COLS};
        PDCprop_set_obj_dims(prop, 2, d);
        PDCprop_set_obj_type(prop, PDC_UINT8);
        PDCprop_set_obj_transfer_region_type(prop, PDC_REGION_STATIC);
        obj = cont ? PDCobj_create(cont, "st-wide", prop) : 0;
        PDCprop_close(prop);
        check(obj != 0, "obj-create", "st-wide");
    } else {
        obj = PDCobj_open("st-wide", pdc);
        check(obj != 0, "obj-open", "st-wide");
    }
    if (!obj)
        return 1;
    uint8_t buf[4000], want[4000];
    for (int b = 0; b < 3; b++) {
        uint64_t off[2] = {wide_boxes[b][0], wide_boxes[b][1]}, size[2] = {1, wide_boxes[b][2]};
        for (uint64_t c = 0; c < size[1]; c++)
            want[c] = wide_value(off[0], off[1] + c);
        if (write) {
            check(prog_transfer(obj, PDC_WRITE, want, 2, off, size), "write", "st-wide");
            continue;
        }
        memset(buf, 0xa5, sizeof(buf));
        int ok = prog_transfer(obj, PDC_READ, buf, 2, off, size);
        check(ok && memcmp(buf, want, size[1]) == 0, "read-box", "st-wide");
        /* never written: zero */
        uint64_t zoff[2] = {off[0], off[1] >= 3000 ? off[1] - 2500 : off[1] + 2000};
        uint64_t zsize[2] = {1, 500};
        memset(buf, 0xa5, sizeof(buf));
        ok = prog_transfer(obj, PDC_READ, buf, 2, zoff, zsize);
        int zero = 1;
        for (uint64_t c = 0; c < zsize[1]; c++)
            zero = zero && buf[c] == 0;
        check(ok && zero, "read-zero", "st-wide");
    }
    PDCobj_close(obj);
    return failures != 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "expect") == 0 && argc < 4)) {
        fprintf(stderr, "usage: pdc_stage_check write|check SEED | expect SEED OBJECT\n");
        return 2;
    }
    seed = (unsigned)strtoul(argv[2], NULL, 10);
    if (strcmp(argv[1], "expect") == 0) {
        for (int k = 0; k < NOBJ; k++)
            if (strcmp(specs[k].name, argv[3]) == 0) {
                uint64_t bytes = count_of(&specs[k]) * specs[k].esize;
                uint8_t *buf = malloc(bytes);
                expected(k, buf);
                fwrite(buf, 1, bytes, stdout);
                free(buf);
                return 0;
            }
        fprintf(stderr, "pdc_stage_check: no object %s\n", argv[3]);
        return 2;
    }
    int wide = strncmp(argv[1], "wide-", 5) == 0;
    const char *verb = wide ? argv[1] + 5 : argv[1];
    int write = strcmp(verb, "write") == 0;
    if (!write && strcmp(verb, "check") != 0) {
        fprintf(stderr, "pdc_stage_check: unknown command %s\n", argv[1]);
        return 2;
    }
    pdcid_t pdc = PDCinit("pdc");
    if (!pdc) {
        check(0, "init", "pdc");
        return 1;
    }
    int rc = wide ? do_wide(pdc, write) : write ? do_write(pdc) : do_check(pdc);
    PDCclose(pdc);
    printf("%s %s: %d failure%s\n", rc ? "FAIL" : "ok", argv[1], failures,
           failures == 1 ? "" : "s");
    return rc;
}
