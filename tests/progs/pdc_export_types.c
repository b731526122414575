/*
 * pdc_export_types - writes, during a job, one object of every PDC type (1, 2 or 3 dimensions,
 * every placement, in two containers), an object with an unlimited first dimension, an object
 * without dimensions, tags of several types and a KV object, for tests/bats/112-export-hdf5.bats
 * (which drains the job and checks `pdcbb export --format hdf5` against it).
 *
 *   pdc_export_types write   create and write everything below; prints "ok write"
 *
 * Containers: xa (tags: purpose = "hdf5 export test" PDC_STRING, level = 7 PDC_INT) and xb
 * (tag: weights = {0.5, 1.5, 2.5} PDC_DOUBLE).
 * Objects: "t<T>" for every type T = 0..18 (PDC_INT .. PDC_SIZE_T) in container xa when T is
 * even, xb when odd; ndim = 1 + T % 3 with dims {37}, {5, 9}, {3, 4, 5}; placement T % 4
 * (PDC_OBJ_STATIC, REGION_STATIC, REGION_DYNAMIC, REGION_LOCAL); time step T + 1, app name
 * "app<T>"; tags: index = T (PDC_INT) and name = "t<T>" (PDC_STRING). Element i of object T is
 * a function of value(T, i) = (i * 2654435761 + T * 977) % 100003 in the type (see fill();
 * BOOLEAN: its low bit; STRING (1-byte elements): 'a' + v % 26; VOID_PTR: 8 bytes, byte b of
 * element i is (v + b) & 0xff).
 * "grow" (xa): PDC_INT64 UNLIMITED x 4, REGION_STATIC, 13 rows written (two writes: rows 0-9,
 * then 10-12), then extended to 16 rows (PDCbb_obj_extend); element (r, c) = r * 1000 + c,
 * rows 13-15 never written. Tags: i64s = {-1, 2, -3} PDC_INT64, u8 = 200
 * PDC_UINT8, flag = 1 PDC_BOOLEAN, f = 2.25 PDC_FLOAT, raw = 16 bytes i * 17 PDC_VOID_PTR,
 * pdc_id = 99 PDC_INT (a name the export must rename).
 * "a/slash" (xb): PDC_UINT16 6 x 2, PDC_OBJ_STATIC, element i = i + 100.
 * "nodims" (xb): no dimensions; tag note = "metadata only" PDC_STRING.
 * KV object "kvx" in xa with one record ("k" -> "v").
 * Exit status: 0 on success, 1 on a failed call, 2 on usage errors.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"
#include "prog_util.h"
#include "pdc_kv.h"

static int failures;

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            printf("FAILED line %d: %s: ", __LINE__, #cond);                                      \
            printf(__VA_ARGS__);                                                                  \
            printf(" [%s]\n", PDCbb_last_error_message());                                        \
            failures++;                                                                           \
        }                                                                                         \
    } while (0)

static const size_t type_size[19] = {4, 4, 8, 1, 1, 1, 2, 4, 8, 8, 2, 1, 1, 2, 4, 4, 8, 8, 8};

static uint64_t value(int t, uint64_t i)
{
    return (i * 2654435761u + (uint64_t)t * 977) % 100003;
}

static void fill(int t, void *buf, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = value(t, i);
        switch (t) {
        case PDC_INT: case PDC_INT32: ((int32_t *)buf)[i] = (int32_t)v - 50000; break;
        case PDC_FLOAT: ((float *)buf)[i] = (float)v / 3.0f; break;
        case PDC_DOUBLE: ((double *)buf)[i] = (double)v / 7.0; break;
        case PDC_CHAR: case PDC_INT8: ((int8_t *)buf)[i] = (int8_t)(v & 0xff); break;
        case PDC_BOOLEAN: ((uint8_t *)buf)[i] = (uint8_t)(v & 1); break;
        case PDC_SHORT: case PDC_INT16: ((int16_t *)buf)[i] = (int16_t)(v - 50000); break;
        case PDC_UINT: case PDC_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v * 40000u; break;
        case PDC_INT64: case PDC_LONG: ((int64_t *)buf)[i] = -((int64_t)v << 30); break;
        case PDC_UINT64: case PDC_SIZE_T: ((uint64_t *)buf)[i] = v << 40; break;
        case PDC_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
        case PDC_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
        case PDC_STRING: ((char *)buf)[i] = (char)('a' + v % 26); break;
        default: /* PDC_VOID_PTR: 8 opaque bytes */
            for (int b = 0; b < 8; b++)
                ((uint8_t *)buf)[i * 8 + (uint64_t)b] = (uint8_t)((v + (uint64_t)b) & 0xff);
            break;
        }
    }
}

static pdcid_t make_obj(pdcid_t pdc, pdcid_t cont, const char *name, pdc_var_type_t type,
                        int ndim, const uint64_t *dims, pdc_region_partition_t part, int t)
{
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    PDCprop_set_obj_type(prop, type);
    if (ndim > 0)
        PDCprop_set_obj_dims(prop, ndim, (uint64_t *)dims);
    PDCprop_set_obj_transfer_region_type(prop, part);
    PDCprop_set_obj_time_step(prop, (uint32_t)t + 1);
    char app[32];
    snprintf(app, sizeof(app), "app%d", t);
    PDCprop_set_obj_app_name(prop, app);
    pdcid_t o = PDCobj_create(cont, name, prop);
    CHECK(o != 0, "PDCobj_create %s", name);
    PDCprop_close(prop);
    return o;
}

static int do_write(void)
{
    pdcid_t pdc = PDCinit("pdc");
    CHECK(pdc != 0, "PDCinit");
    if (pdc == 0)
        return 1;
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t xa = PDCcont_create("xa", cprop), xb = PDCcont_create("xb", cprop);
    CHECK(xa != 0 && xb != 0, "PDCcont_create");
    if (xa == 0 || xb == 0)
        return 1;
    char purpose[] = "hdf5 export test";
    int level = 7;
    double weights[3] = {0.5, 1.5, 2.5};
    CHECK(PDCcont_put_tag(xa, "purpose", purpose, PDC_STRING, sizeof(purpose)) == SUCCEED, "tag");
    CHECK(PDCcont_put_tag(xa, "level", &level, PDC_INT, sizeof(level)) == SUCCEED, "tag");
    CHECK(PDCcont_put_tag(xb, "weights", weights, PDC_DOUBLE, sizeof(weights)) == SUCCEED,
          "tag");

    static const uint64_t dims[3][3] = {{37, 0, 0}, {5, 9, 0}, {3, 4, 5}};
    for (int t = 0; t < 19; t++) {
        char name[32];
        snprintf(name, sizeof(name), "t%d", t);
        int ndim = 1 + t % 3;
        pdcid_t o = make_obj(pdc, t % 2 ? xb : xa, name, (pdc_var_type_t)t, ndim, dims[ndim - 1],
                             (pdc_region_partition_t)(t % 4), t);
        if (o == 0)
            return 1;
        CHECK(PDCobj_put_tag(o, "index", &t, PDC_INT, sizeof(t)) == SUCCEED, "tag index");
        CHECK(PDCobj_put_tag(o, "name", name, PDC_STRING, strlen(name) + 1) == SUCCEED,
              "tag name");
        uint64_t n = 1, off[3] = {0, 0, 0};
        for (int d = 0; d < ndim; d++)
            n *= dims[ndim - 1][d];
        void *buf = calloc(n, type_size[t]);
        fill(t, buf, n);
        CHECK(prog_transfer(o, PDC_WRITE, buf, ndim, off, dims[ndim - 1]), "write %s", name);
        free(buf);
        PDCobj_close(o);
    }

    /* unlimited: two writes */
    uint64_t gdims[2] = {PDC_SIZE_UNLIMITED, 4};
    pdcid_t g = make_obj(pdc, xa, "grow", PDC_INT64, 2, gdims, PDC_REGION_STATIC, 30);
    if (g == 0)
        return 1;
    int64_t rows[13 * 4];
    for (int r = 0; r < 13; r++)
        for (int c = 0; c < 4; c++)
            rows[r * 4 + c] = r * 1000 + c;
    uint64_t o0[2] = {0, 0}, s0[2] = {10, 4}, o1[2] = {10, 0}, s1[2] = {3, 4};
    CHECK(prog_transfer(g, PDC_WRITE, rows, 2, o0, s0), "write grow rows 0-9");
    CHECK(prog_transfer(g, PDC_WRITE, rows + 40, 2, o1, s1), "write grow rows 10-12");
    CHECK(PDCbb_obj_extend(g, 16) == SUCCEED, "extend grow to 16 rows");
    int64_t i64s[3] = {-1, 2, -3};
    uint8_t u8 = 200, flag = 1, raw[16];
    for (int i = 0; i < 16; i++)
        raw[i] = (uint8_t)(i * 17);
    float f = 2.25f;
    int pid = 99;
    CHECK(PDCobj_put_tag(g, "i64s", i64s, PDC_INT64, sizeof(i64s)) == SUCCEED, "tag i64s");
    CHECK(PDCobj_put_tag(g, "u8", &u8, PDC_UINT8, 1) == SUCCEED, "tag u8");
    CHECK(PDCobj_put_tag(g, "flag", &flag, PDC_BOOLEAN, 1) == SUCCEED, "tag flag");
    CHECK(PDCobj_put_tag(g, "f", &f, PDC_FLOAT, sizeof(f)) == SUCCEED, "tag f");
    CHECK(PDCobj_put_tag(g, "raw", raw, PDC_VOID_PTR, sizeof(raw)) == SUCCEED, "tag raw");
    CHECK(PDCobj_put_tag(g, "pdc_id", &pid, PDC_INT, sizeof(pid)) == SUCCEED, "tag pdc_id");
    PDCobj_close(g);

    uint64_t sdims[2] = {6, 2};
    pdcid_t sl = make_obj(pdc, xb, "a/slash", PDC_UINT16, 2, sdims, PDC_OBJ_STATIC, 40);
    if (sl == 0)
        return 1;
    uint16_t sv[12];
    for (int i = 0; i < 12; i++)
        sv[i] = (uint16_t)(i + 100);
    CHECK(prog_transfer(sl, PDC_WRITE, sv, 2, o0, sdims), "write a/slash");
    PDCobj_close(sl);

    pdcid_t nd = make_obj(pdc, xb, "nodims", PDC_DOUBLE, 0, NULL, PDC_OBJ_STATIC, 50);
    if (nd == 0)
        return 1;
    char note[] = "metadata only";
    CHECK(PDCobj_put_tag(nd, "note", note, PDC_STRING, sizeof(note)) == SUCCEED, "tag note");
    PDCobj_close(nd);

    pdcid_t kv = PDCkv_create(xa, "kvx", NULL);
    CHECK(kv != 0, "PDCkv_create kvx");
    if (kv != 0) {
        pdc_kv_key_t k = PDC_KV_KEY_STR("k");
        CHECK(PDCkv_set(kv, 1, &k, "v", 2, NULL) == SUCCEED, "PDCkv_set");
        PDCkv_close(kv);
    }
    PDCcont_close(xa);
    PDCcont_close(xb);
    PDCprop_close(cprop);
    PDCclose(pdc);
    if (failures == 0)
        printf("ok write\n");
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 || strcmp(argv[1], "write") != 0) {
        fprintf(stderr, "usage: pdc_export_types write\n");
        return 2;
    }
    return do_write();
}
