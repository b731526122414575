/*
 * pdc_file_view.c - one store, two views (130-mount): PDC objects that the mount shows under
 * .pdc/, and files of the mount read through the PDC API.
 *
 *   pdc_file_view put CONT     container CONT with objects "grid" (300 x 500 PDC_INT32,
 *                              element (r, c) = r * 500 + c), "wide" (2 x 2200000 PDC_INT32,
 *                              rows of 8.8 MB, element i of the row-major order = i) and
 *                              "a/b" (1000 PDC_DOUBLE, i / 4.0)
 *   pdc_file_view file PATH LOCAL
 *                              PDCbb_file_open(PATH): its size and every byte (one region
 *                              read) compared with the local file LOCAL
 *   pdc_file_view open PATH    PDCbb_file_open(PATH) only: prints the error it gives
 *
 * Prints one line per check ("... ok") and exits 0, or names what differs and exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"
#include "prog_util.h"

static int put_obj(pdcid_t pdc, pdcid_t cont, const char *name, pdc_var_type_t type, int ndim,
                   uint64_t *dims, void *buf)
{
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    PDCprop_set_obj_dims(prop, ndim, dims);
    PDCprop_set_obj_type(prop, type);
    pdcid_t obj = PDCobj_create(cont, name, prop);
    PDCprop_close(prop);
    uint64_t off[2] = {0, 0};
    if (obj == 0 || !prog_transfer(obj, PDC_WRITE, buf, ndim, off, dims)) {
        fprintf(stderr, "object %s: %s %s\n", name, PDCbb_last_error_name(),
                obj ? prog_xfer_error : PDCbb_last_error_message());
        return 1;
    }
    PDCobj_close(obj);
    printf("object %s written\n", name);
    return 0;
}

static int put(pdcid_t pdc, const char *cont_name)
{
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create(cont_name, cprop);
    PDCprop_close(cprop);
    if (cont == 0) {
        fprintf(stderr, "container %s: %s\n", cont_name, PDCbb_last_error_message());
        return 1;
    }
    uint64_t gdims[2] = {300, 500}, wdims[2] = {2, 2200000}, ddims[1] = {1000};
    int32_t *g = malloc(300 * 500 * sizeof(int32_t)), *w = malloc(2 * 2200000 * sizeof(int32_t));
    double *d = malloc(1000 * sizeof(double));
    for (int32_t i = 0; i < 300 * 500; i++)
        g[i] = i;
    for (int32_t i = 0; i < 2 * 2200000; i++)
        w[i] = i;
    for (int i = 0; i < 1000; i++)
        d[i] = i / 4.0;
    int bad = put_obj(pdc, cont, "grid", PDC_INT32, 2, gdims, g) +
              put_obj(pdc, cont, "wide", PDC_INT32, 2, wdims, w) +
              put_obj(pdc, cont, "a/b", PDC_DOUBLE, 1, ddims, d);
    free(g);
    free(w);
    free(d);
    PDCcont_close(cont);
    return bad ? 1 : 0;
}

static int file(const char *path, const char *local)
{
    FILE *f = fopen(local, "rb");
    if (f == NULL) {
        perror(local);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    uint64_t want = (uint64_t)ftell(f);
    rewind(f);
    uint8_t *exp = malloc(want ? want : 1), *got = calloc(want ? want : 1, 1);
    if (fread(exp, 1, want, f) != want) {
        perror(local);
        return 1;
    }
    fclose(f);
    uint64_t size = 0;
    pdcid_t obj = PDCbb_file_open(path, &size);
    if (obj == 0) {
        fprintf(stderr, "PDCbb_file_open %s: %s: %s\n", path, PDCbb_last_error_name(),
                PDCbb_last_error_message());
        return 1;
    }
    if (size != want) {
        fprintf(stderr, "%s: size %llu, not %llu\n", path, (unsigned long long)size,
                (unsigned long long)want);
        return 1;
    }
    uint64_t off = 0;
    if (want > 0 && !prog_transfer(obj, PDC_READ, got, 1, &off, &want)) {
        fprintf(stderr, "%s: read: %s\n", path, prog_xfer_error);
        return 1;
    }
    if (memcmp(exp, got, want) != 0) {
        fprintf(stderr, "%s: the object's bytes differ from %s\n", path, local);
        return 1;
    }
    PDCobj_close(obj);
    printf("file %s through the PDC API: %llu bytes ok\n", path, (unsigned long long)want);
    free(exp);
    free(got);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "file") == 0 && argc < 4)) {
        fprintf(stderr, "usage: pdc_file_view put CONT | file PATH LOCAL | open PATH\n");
        return 2;
    }
    pdcid_t pdc = PDCinit("pdc_file_view");
    if (pdc == 0) {
        fprintf(stderr, "PDCinit: %s\n", PDCbb_last_error_message());
        return 1;
    }
    int rc;
    if (strcmp(argv[1], "put") == 0) {
        rc = put(pdc, argv[2]);
    } else if (strcmp(argv[1], "file") == 0) {
        rc = file(argv[2], argv[3]);
    } else {
        uint64_t size;
        pdcid_t obj = PDCbb_file_open(argv[2], &size);
        printf("open %s: %s: %s\n", argv[2], obj ? "ok" : PDCbb_last_error_name(),
               obj ? "" : PDCbb_last_error_message());
        rc = obj ? 0 : 1;
    }
    PDCclose(pdc);
    return rc;
}
