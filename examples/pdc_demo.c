/*
 * pdc_demo - the README's demo: a plain PDC program that creates containers, objects and tags
 * in the job's burst buffer, writes each field with a region transfer, and reads them back,
 * printing what it did and which daemon holds each name. Run it in a local job:
 *     pdcbb run --nodes 2 -- pdc_demo
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"

#define CHECK_ID(id, what)                                                                        \
    do {                                                                                          \
        if ((id) == 0) {                                                                          \
            fprintf(stderr, "pdc_demo: %s failed: %s\n", what, PDCbb_last_error_message());       \
            return 1;                                                                             \
        }                                                                                         \
    } while (0)
#define CHECK_OK(call, what) CHECK_ID((call) == SUCCEED, what)

int main(void)
{
    pdcid_t pdc = PDCinit("pdc");
    CHECK_ID(pdc, "PDCinit");
    printf("connected to %d burst-buffer daemon(s), found through %s\n", PDCbb_nservers(),
           PDCbb_discovery_method());

    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    CHECK_ID(cprop, "PDCprop_create(PDC_CONT_CREATE)");
    const char *cont_names[] = {"simulation", "analysis"};
    pdcid_t conts[2];
    for (int i = 0; i < 2; i++) {
        conts[i] = PDCcont_create(cont_names[i], cprop);
        CHECK_ID(conts[i], "PDCcont_create");
        printf("container %-10s  meta id %#llx on daemon %llu\n", cont_names[i],
               (unsigned long long)PDCcont_get_info(cont_names[i])->meta_id,
               (unsigned long long)(PDCcont_get_info(cont_names[i])->meta_id >> 44 & 0xffff));
    }
    const char *run = "run-42";
    CHECK_OK(PDCcont_put_tag(conts[0], "run", (void *)run, PDC_STRING, strlen(run) + 1),
             "PDCcont_put_tag");

    pdcid_t oprop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t dims[3] = {64, 64, 32};
    CHECK_OK(PDCprop_set_obj_type(oprop, PDC_DOUBLE), "PDCprop_set_obj_type");
    CHECK_OK(PDCprop_set_obj_dims(oprop, 3, dims), "PDCprop_set_obj_dims");
    const char *vars[] = {"temperature", "pressure", "density", "velocity_x", "velocity_y",
                          "velocity_z"};
    size_t cells = (size_t)(dims[0] * dims[1] * dims[2]);
    double *field = malloc(cells * sizeof(double));
    CHECK_ID(field != NULL, "malloc");
    uint64_t origin[3] = {0, 0, 0};
    pdcid_t whole = PDCregion_create(3, origin, dims);
    CHECK_ID(whole, "PDCregion_create");
    for (int i = 0; i < 6; i++) {
        pdcid_t obj = PDCobj_create(conts[0], vars[i], oprop);
        CHECK_ID(obj, "PDCobj_create");
        double scale = 1.5 * (i + 1);
        int step = 100 + i;
        CHECK_OK(PDCobj_put_tag(obj, "scale", &scale, PDC_DOUBLE, sizeof(scale)),
                 "PDCobj_put_tag");
        CHECK_OK(PDCobj_put_tag(obj, "timestep", &step, PDC_INT, sizeof(step)),
                 "PDCobj_put_tag");
        CHECK_OK(PDCobj_put_tag(obj, "kind", "field", PDC_STRING, 6), "PDCobj_put_tag");
        for (size_t c = 0; c < cells; c++)
            field[c] = scale * (double)c;
        pdcid_t req = PDCregion_transfer_create(field, PDC_WRITE, obj, whole, whole);
        CHECK_ID(req, "PDCregion_transfer_create");
        CHECK_OK(PDCregion_transfer_start(req), "PDCregion_transfer_start");
        CHECK_OK(PDCregion_transfer_wait(req), "PDCregion_transfer_wait");
        CHECK_OK(PDCregion_transfer_close(req), "PDCregion_transfer_close");
        struct pdc_obj_info *info = PDCobj_get_info(obj);
        printf("object    %-12s 3-D double %llux%llux%llu on daemon %u, tags scale=%.1f "
               "timestep=%d kind=field\n",
               info->name, (unsigned long long)dims[0], (unsigned long long)dims[1],
               (unsigned long long)dims[2], info->metadata_server_id, scale, step);
        CHECK_OK(PDCobj_close(obj), "PDCobj_close");
    }

    /* Read everything back by name, as another process would. */
    int n = 0;
    for (obj_handle *h = PDCobj_iter_start(conts[0]); !PDCobj_iter_null(h);
         h = PDCobj_iter_next(h, conts[0])) {
        struct pdc_obj_info *info = PDCobj_iter_get_info(h);
        CHECK_ID(info != NULL, "PDCobj_iter_get_info");
        pdcid_t obj = PDCobj_open(info->name, pdc);
        CHECK_ID(obj, "PDCobj_open");
        double *scale;
        pdc_var_type_t t;
        psize_t size;
        CHECK_OK(PDCobj_get_tag(obj, "scale", (void **)&scale, &t, &size), "PDCobj_get_tag");
        pdcid_t req = PDCregion_transfer_create(field, PDC_READ, obj, whole, whole);
        CHECK_ID(req, "PDCregion_transfer_create");
        CHECK_OK(PDCregion_transfer_start(req), "PDCregion_transfer_start");
        CHECK_OK(PDCregion_transfer_wait(req), "PDCregion_transfer_wait");
        CHECK_OK(PDCregion_transfer_close(req), "PDCregion_transfer_close");
        int same = 1;
        for (size_t c = 0; c < cells && same; c++)
            same = field[c] == *scale * (double)c;
        printf("read back %-12s scale=%.1f (%s, %llu bytes), %zu values %s\n", info->name,
               *scale, get_enum_name_by_dtype(t), (unsigned long long)size, cells,
               same ? "as written" : "DIFFERENT");
        free(scale);
        if (!same)
            n = -100;
        PDCobj_close(obj);
        n++;
    }
    char *value;
    pdc_var_type_t t;
    psize_t size;
    CHECK_OK(PDCcont_get_tag(conts[0], "run", (void **)&value, &t, &size), "PDCcont_get_tag");
    printf("container simulation has %d objects, tag run=%s\n", n, value);
    free(value);

    int nres = 0;
    uint64_t *ids = NULL;
    CHECK_OK(PDCobj_get_id("kind", "field", 6, &nres, &ids), "PDCobj_get_id");
    printf("tag search kind=field: %d objects\n", nres);
    free(ids);

    PDCregion_close(whole);
    free(field);
    PDCprop_close(oprop);
    PDCprop_close(cprop);
    for (int i = 0; i < 2; i++)
        PDCcont_close(conts[i]);
    CHECK_OK(PDCclose(pdc), "PDCclose");
    printf("demo done\n");
    return n == 6 && nres == 6 ? 0 : 1;
}
