/*
 * pdc_drained_read - writes a known data set during a job and reads it back, live or from the
 * job's drain (PDCBB_DRAINED_DIR), for tests/bats/110-drained-api.bats.
 *
 *   pdc_drained_read write CONT     create container CONT and the objects below, write known
 *                                   data and tags, then print the report
 *   pdc_drained_read read CONT      open CONT and its objects, print the report
 *   pdc_drained_read readonly CONT  every modifying call must fail with PDCBB_ERR_READ_ONLY;
 *                                   prints one line per call with the error message
 *
 * Objects (names CONT.NAME): ints (int 40x33, PDC_OBJ_STATIC), dbl (double 5000,
 * PDC_REGION_STATIC), flt3 (float 6x7x8, PDC_REGION_DYNAMIC, two overlapping writes: the
 * newer wins), grow (int64 UNLIMITEDx4, PDC_REGION_STATIC, 10 rows written), chars (char 100,
 * never written: reads as zeros).
 * The report is the same whether the data is read live or from a drain: per object its dims,
 * the FNV-1a 64 of the whole object and of a sub-box (read with PDCregion_transfer_*), the
 * same through PDCregion_transfer_start_all / wait_all, and its tags; the container's tag,
 * the container's objects by iteration, and a tag query.
 * Exit status: 0 on success, 1 on a failed check, 2 on usage errors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"
#include "prog_util.h"
#include "pdc_client_connect.h"

#define NOBJ 5

typedef struct spec {
    const char *suffix;
    pdc_var_type_t type;
    size_t unit;
    pdc_region_partition_t part;
    int ndim;
    uint64_t dims[3];
    uint64_t rows; /* rows with data when dims[0] is unlimited */
} spec_t;

static const spec_t specs[NOBJ] = {
    {"ints", PDC_INT, 4, PDC_OBJ_STATIC, 2, {40, 33, 0}, 0},
    {"dbl", PDC_DOUBLE, 8, PDC_REGION_STATIC, 1, {5000, 0, 0}, 0},
    {"flt3", PDC_FLOAT, 4, PDC_REGION_DYNAMIC, 3, {6, 7, 8}, 0},
    {"grow", PDC_INT64, 8, PDC_REGION_STATIC, 2, {PDC_SIZE_UNLIMITED, 4, 0}, 10},
    {"chars", PDC_CHAR, 1, PDC_OBJ_STATIC, 1, {100, 0, 0}, 0},
};

static int failures;

/* The extent of an object the tests read: unlimited dims become the rows written. */
static void shape_of(const spec_t *s, uint64_t *shape, uint64_t *count)
{
    *count = 1;
    for (int d = 0; d < s->ndim; d++) {
        shape[d] = s->dims[d] == PDC_SIZE_UNLIMITED ? s->rows : s->dims[d];
        *count *= shape[d];
    }
}

/* Element i of object k's known data (gen: which of the overlapping writes). */
static void fill(const spec_t *s, int k, int gen, void *buf, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = (i * 2654435761u + (uint64_t)k * 977 + (uint64_t)gen * 131) % 100003;
        switch (s->type) {
        case PDC_INT: ((int32_t *)buf)[i] = (int32_t)v - 50000; break;
        case PDC_DOUBLE: ((double *)buf)[i] = (double)v / 7.0; break;
        case PDC_FLOAT: ((float *)buf)[i] = (float)v / 3.0f; break;
        case PDC_INT64: ((int64_t *)buf)[i] = (int64_t)v << 20; break;
        default: ((uint8_t *)buf)[i] = (uint8_t)v; break;
        }
    }
}

static pdcid_t pdc;

static int do_write(const char *cont_name)
{
    char name[256];
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create(cont_name, cprop);
    PROG_CHECK(cont != 0, "PDCcont_create %s", cont_name);
    if (cont == 0)
        return 1;
    char ctag[] = "drained-api test";
    PROG_CHECK(PDCcont_put_tag(cont, "purpose", ctag, PDC_STRING, sizeof(ctag)) == SUCCEED,
               "cont tag");
    pdcid_t objs[NOBJ];
    for (int k = 0; k < NOBJ; k++) {
        const spec_t *s = &specs[k];
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        PDCprop_set_obj_type(prop, s->type);
        PDCprop_set_obj_dims(prop, s->ndim, (uint64_t *)s->dims);
        PDCprop_set_obj_transfer_region_type(prop, s->part);
        PDCprop_set_obj_time_step(prop, (uint32_t)k + 1);
        snprintf(name, sizeof(name), "%s.%s", cont_name, s->suffix);
        objs[k] = PDCobj_create(cont, name, prop);
        PROG_CHECK(objs[k] != 0, "PDCobj_create %s", name);
        PDCprop_close(prop);
        if (objs[k] == 0)
            return 1;
        int idx = k;
        PROG_CHECK(PDCobj_put_tag(objs[k], "index", &idx, PDC_INT, sizeof(idx)) == SUCCEED, "tag");
        char kind[] = "known";
        if (k % 2 == 0) {
            PROG_CHECK(PDCobj_put_tag(objs[k], "kind", kind, PDC_STRING, sizeof(kind)) == SUCCEED,
                  "tag kind");
            struct pdc_obj_info *oi = PDCobj_get_info(objs[k]);
            PROG_CHECK(oi != NULL && PDC_Client_insert_obj_ref_into_dart(DART_HASH, "kind", kind,
                                                                   REF_PRIMARY_ID,
                                                                   oi->meta_id) == SUCCEED,
                  "DART insert kind");
        }
        if (strcmp(s->suffix, "chars") == 0)
            continue; /* never written */
        uint64_t shape[3], n, off[3] = {0, 0, 0};
        shape_of(s, shape, &n);
        void *buf = malloc(n * s->unit);
        fill(s, k, 0, buf, n);
        PROG_CHECK(prog_transfer(objs[k], PDC_WRITE, buf, s->ndim, off, shape), "write %s", name);
        if (s->part == PDC_REGION_DYNAMIC) {
            /* A second, overlapping write of a sub-box: the newer data wins. */
            uint64_t o2[3] = {1, 2, 3}, sz2[3] = {4, 4, 4}, n2 = 64;
            void *b2 = malloc(n2 * s->unit);
            fill(s, k, 1, b2, n2);
            PROG_CHECK(prog_transfer(objs[k], PDC_WRITE, b2, s->ndim, o2, sz2), "overwrite %s",
                       name);
            free(b2);
        }
        free(buf);
    }
    for (int k = 0; k < NOBJ; k++)
        PDCobj_close(objs[k]);
    PDCcont_close(cont);
    PDCprop_close(cprop);
    return 0;
}

static void print_tag(const char *what, const char *tag, void *v, pdc_var_type_t t, psize_t n)
{
    if (t == PDC_STRING)
        printf("%s tag %s = \"%s\" (%llu bytes)\n", what, tag, (char *)v, (unsigned long long)n);
    else if (t == PDC_INT && n == sizeof(int))
        printf("%s tag %s = %d\n", what, tag, *(int *)v);
    else
        printf("%s tag %s: type %d, %llu bytes, fnv %016" PRIx64 "\n", what, tag, (int)t,
               (unsigned long long)n, prog_fnv1a(v, n));
}

static int do_read(const char *cont_name)
{
    char name[256];
    pdcid_t cont = PDCcont_open(cont_name, pdc);
    PROG_CHECK(cont != 0, "PDCcont_open %s", cont_name);
    if (cont == 0)
        return 1;
    void *v = NULL;
    pdc_var_type_t t;
    psize_t n;
    if (PDCcont_get_tag(cont, "purpose", &v, &t, &n) == SUCCEED) {
        print_tag("container", "purpose", v, t, n);
        free(v);
    } else {
        PROG_CHECK(0, "PDCcont_get_tag purpose");
    }
    pdcid_t objs[NOBJ];
    uint64_t meta[NOBJ];
    for (int k = 0; k < NOBJ; k++) {
        const spec_t *s = &specs[k];
        snprintf(name, sizeof(name), "%s.%s", cont_name, s->suffix);
        objs[k] = PDCobj_open(name, pdc);
        PROG_CHECK(objs[k] != 0, "PDCobj_open %s", name);
        if (objs[k] == 0)
            return 1;
        struct pdc_obj_info *info = PDCobj_get_info(objs[k]);
        PROG_CHECK(info != NULL, "PDCobj_get_info %s", name);
        meta[k] = info ? info->meta_id : 0;
        int ndim = 0;
        uint64_t *dims = NULL;
        PROG_CHECK(PDCobj_get_dims(objs[k], &ndim, &dims) == SUCCEED, "PDCobj_get_dims %s", name);
        printf("object %s type %d consistency %d ndim %d dims", name,
               info ? (int)info->obj_pt->type : -1, info ? (int)info->obj_pt->consistency : -1,
               ndim);
        for (int d = 0; d < ndim && dims; d++) {
            if (dims[d] == PDC_SIZE_UNLIMITED)
                printf(" UNLIMITED");
            else
                printf(" %llu", (unsigned long long)dims[d]);
        }
        printf("\n");
        free(dims);
        uint64_t shape[3], cnt, off[3] = {0, 0, 0};
        shape_of(s, shape, &cnt);
        uint8_t *buf = calloc(cnt, s->unit);
        PROG_CHECK(prog_transfer(objs[k], PDC_READ, buf, s->ndim, off, shape), "read %s", name);
        printf("object %s whole %llu bytes fnv %016" PRIx64 "\n", name,
               (unsigned long long)(cnt * s->unit), prog_fnv1a(buf, cnt * s->unit));
        /* The expected data, computed here: the report says whether it matches. */
        uint8_t *want = calloc(cnt, s->unit);
        if (strcmp(s->suffix, "chars") != 0)
            fill(s, k, 0, want, cnt);
        if (s->part == PDC_REGION_DYNAMIC) {
            uint8_t b2[64 * 8];
            fill(s, k, 1, b2, 64);
            for (uint64_t i = 0; i < 4; i++)
                for (uint64_t j = 0; j < 4; j++)
                    memcpy(want + (((1 + i) * 7 + 2 + j) * 8 + 3) * s->unit,
                           b2 + ((i * 4 + j) * 4) * s->unit, 4 * s->unit);
        }
        printf("object %s matches the known data: %s\n", name,
               memcmp(buf, want, cnt * s->unit) == 0 ? "yes" : "NO");
        free(want);
        /* A sub-box: the second half of each dimension. */
        uint64_t so[3], ss[3], sc = 1;
        for (int d = 0; d < s->ndim; d++) {
            so[d] = shape[d] / 2;
            ss[d] = shape[d] - so[d];
            sc *= ss[d];
        }
        uint8_t *sub = calloc(sc, s->unit);
        PROG_CHECK(prog_transfer(objs[k], PDC_READ, sub, s->ndim, so, ss), "read sub-box of %s",
                   name);
        printf("object %s sub-box %llu bytes fnv %016" PRIx64 "\n", name,
               (unsigned long long)(sc * s->unit), prog_fnv1a(sub, sc * s->unit));
        free(sub);
        free(buf);
        if (PDCobj_get_tag(objs[k], "index", &v, &t, &n) == SUCCEED) {
            print_tag(name, "index", v, t, n);
            free(v);
        } else {
            PROG_CHECK(0, "PDCobj_get_tag index of %s", name);
        }
        if (PDCobj_get_tag(objs[k], "kind", &v, &t, &n) == SUCCEED) {
            print_tag(name, "kind", v, t, n);
            free(v);
        } else {
            printf("%s tag kind: %s\n", name, PDCbb_last_error_name());
        }
    }

    /* Every object at once: start_all / wait_all, each read whole. */
    pdcid_t xs[NOBJ], regs[2 * NOBJ];
    uint8_t *bufs[NOBJ];
    for (int k = 0; k < NOBJ; k++) {
        uint64_t shape[3], cnt, off[3] = {0, 0, 0};
        shape_of(&specs[k], shape, &cnt);
        bufs[k] = calloc(cnt, specs[k].unit);
        regs[2 * k] = PDCregion_create((psize_t)specs[k].ndim, off, shape);
        regs[2 * k + 1] = PDCregion_create((psize_t)specs[k].ndim, off, shape);
        xs[k] = PDCregion_transfer_create(bufs[k], PDC_READ, objs[k], regs[2 * k],
                                          regs[2 * k + 1]);
        PROG_CHECK(xs[k] != 0, "transfer_create %d", k);
    }
    PROG_CHECK(PDCregion_transfer_start_all(xs, NOBJ) == SUCCEED, "start_all");
    PROG_CHECK(PDCregion_transfer_wait_all(xs, NOBJ) == SUCCEED, "wait_all");
    uint64_t all = 0xcbf29ce484222325ull;
    for (int k = 0; k < NOBJ; k++) {
        uint64_t shape[3], cnt;
        shape_of(&specs[k], shape, &cnt);
        all ^= prog_fnv1a(bufs[k], cnt * specs[k].unit) + (uint64_t)k;
        PDCregion_transfer_close(xs[k]);
        PDCregion_close(regs[2 * k]);
        PDCregion_close(regs[2 * k + 1]);
        free(bufs[k]);
    }
    printf("start_all fnv %016" PRIx64 "\n", all);

    /* PDCobj_get_data: the first bytes of ints. */
    int32_t head[50];
    PROG_CHECK(PDCobj_get_data(objs[0], head, sizeof(head)) == SUCCEED, "PDCobj_get_data");
    printf("get_data fnv %016" PRIx64 "\n", prog_fnv1a(head, sizeof(head)));

    /* Iteration over the container's objects (names only: ids differ after a drain). */
    int seen = 0;
    obj_handle *h = PDCobj_iter_start(cont);
    while (!PDCobj_iter_null(h)) {
        struct pdc_obj_info *oi = PDCobj_iter_get_info(h);
        if (oi)
            printf("iter object %s\n", oi->name);
        seen++;
        h = PDCobj_iter_next(h, cont);
    }
    printf("iter objects %d\n", seen);

    /* Tag query: the objects whose "kind" is "known". */
    char known[] = "known";
    pdc_kvtag_t q = {.name = "kind", .size = sizeof(known), .type = PDC_STRING, .value = known};
    int nres = 0;
    uint64_t *ids = NULL;
    PROG_CHECK(PDC_Client_query_kvtag(&q, &nres, &ids) == SUCCEED, "query_kvtag");
    for (int k = 0; k < NOBJ; k++)
        for (int i = 0; i < nres; i++)
            if (ids[i] == meta[k])
                printf("query kind=known: %s.%s\n", cont_name, specs[k].suffix);
    printf("query kind=known: %d objects\n", nres);
    free(ids);

    /* Tag search with patterns (names and string values; an int value as exact bytes): the
     * daemons answer from their index, a drained job by a scan; the answers must agree. */
    static const char *const pats[][2] = {{"ki*", "kno*"}, {"*nd", "*own"}, {"*in*", "*now*"},
                                          {"kind", "*w*"},  {"k*", "unknown*"}};
    for (size_t p = 0; p < sizeof(pats) / sizeof(pats[0]); p++) {
        pdc_kvtag_t pq = {.name = (char *)pats[p][0], .type = PDC_STRING,
                          .value = (char *)pats[p][1], .size = strlen(pats[p][1]) + 1};
        PROG_CHECK(PDC_Client_query_kvtag(&pq, &nres, &ids) == SUCCEED, "query_kvtag %s",
                   pats[p][0]);
        for (int k = 0; k < NOBJ; k++)
            for (int i = 0; i < nres; i++)
                if (ids[i] == meta[k])
                    printf("query pattern %s=%s: %s.%s\n", pats[p][0], pats[p][1], cont_name,
                           specs[k].suffix);
        printf("query pattern %s=%s: %d objects\n", pats[p][0], pats[p][1], nres);
        free(ids);
    }
    int one = 1;
    pdc_kvtag_t iq = {.name = "ind*", .type = PDC_INT, .value = &one, .size = sizeof(one)};
    PROG_CHECK(PDC_Client_query_kvtag(&iq, &nres, &ids) == SUCCEED, "query_kvtag ind*");
    for (int k = 0; k < NOBJ; k++)
        if (nres == 1 && ids[0] == meta[k])
            printf("query pattern ind*=int 1: %s.%s\n", cont_name, specs[k].suffix);
    printf("query pattern ind*=int 1: %d objects\n", nres);
    free(ids);
    /* DART references are not drained: live, the search finds them; drained, it is refused. */
    if (PDC_Client_search_obj_ref_through_dart(DART_HASH, "kin*=*nown", REF_PRIMARY_ID, &nres,
                                               &ids) == SUCCEED) {
        printf("dart kin*=*nown: %d objects\n", nres);
        free(ids);
    } else {
        printf("dart kin*=*nown: %s: %s\n", PDCbb_last_error_name(), PDCbb_last_error_message());
    }

    for (int k = 0; k < NOBJ; k++)
        PDCobj_close(objs[k]);
    PDCcont_close(cont);
    return 0;
}

/* A call that must fail with the read-only error; prints its message. */
#define MUST_REFUSE(what, call)                                                                   \
    do {                                                                                          \
        int ok_ = (call);                                                                         \
        printf("refused %s: %s %s: %s\n", what, ok_ ? "UNEXPECTED-SUCCESS" : "yes",               \
               PDCbb_last_error_name(), PDCbb_last_error_message());                              \
        PROG_CHECK(!ok_ && strcmp(PDCbb_last_error_name(), "PDCBB_ERR_READ_ONLY") == 0, "%s",     \
                   what);                                                                         \
    } while (0)

static int do_readonly(const char *cont_name)
{
    char name[256];
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t oprop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t d1 = 10;
    PDCprop_set_obj_type(oprop, PDC_INT);
    PDCprop_set_obj_dims(oprop, 1, &d1);
    pdcid_t c2 = 0;
    MUST_REFUSE("PDCcont_create", (c2 = PDCcont_create("another-container", cprop)) != 0);
    pdcid_t cont = PDCcont_open(cont_name, pdc);
    PROG_CHECK(cont != 0, "PDCcont_open %s", cont_name);
    if (cont == 0)
        return 1;
    MUST_REFUSE("PDCobj_create", PDCobj_create(cont, "new-object", oprop) != 0);
    char v[] = "x";
    MUST_REFUSE("PDCcont_put_tag",
                PDCcont_put_tag(cont, "t", v, PDC_STRING, sizeof(v)) == SUCCEED);
    snprintf(name, sizeof(name), "%s.%s", cont_name, specs[0].suffix);
    pdcid_t obj = PDCobj_open(name, pdc);
    PROG_CHECK(obj != 0, "PDCobj_open %s", name);
    if (obj == 0)
        return 1;
    MUST_REFUSE("PDCobj_put_tag", PDCobj_put_tag(obj, "t", v, PDC_STRING, sizeof(v)) == SUCCEED);
    MUST_REFUSE("PDCobj_del_tag", PDCobj_del_tag(obj, "index") == SUCCEED);
    MUST_REFUSE("PDC_Client_insert_obj_ref_into_dart",
                PDC_Client_insert_obj_ref_into_dart(DART_HASH, "k", "v", REF_PRIMARY_ID, 1) ==
                    SUCCEED);
    uint64_t nd[2] = {80, 33};
    MUST_REFUSE("PDCobj_set_dims", PDCobj_set_dims(obj, 2, nd) == SUCCEED);
    int32_t data[4] = {1, 2, 3, 4};
    uint64_t off[2] = {0, 0}, sz[2] = {2, 2};
    pdcid_t local = PDCregion_create(2, off, sz), remote = PDCregion_create(2, off, sz);
    pdcid_t x = PDCregion_transfer_create(data, PDC_WRITE, obj, local, remote);
    PROG_CHECK(x != 0, "transfer_create (write)");
    MUST_REFUSE("PDCregion_transfer_start-write", PDCregion_transfer_start(x) == SUCCEED);
    PDCregion_transfer_close(x);
    PDCregion_close(local);
    PDCregion_close(remote);
    MUST_REFUSE("PDCobj_put_data",
                PDCobj_put_data("put-data-object", data, sizeof(data), cont) != 0);
    MUST_REFUSE("PDCobj_del", PDCobj_del(obj) == SUCCEED);
    MUST_REFUSE("PDCcont_del", PDCcont_del(cont) == SUCCEED);
    /* Still readable after all that. */
    int32_t first[4];
    PROG_CHECK(PDCobj_get_data(obj, first, sizeof(first)) == SUCCEED, "read after refusals");
    PDCobj_close(obj);
    PDCcont_close(cont);
    PDCprop_close(oprop);
    PDCprop_close(cprop);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pdc_drained_read write|read|readonly CONTAINER\n");
        return 2;
    }
    pdc = PDCinit("pdc_drained_read");
    if (pdc == 0) {
        printf("PDCinit failed: %s: %s\n", PDCbb_last_error_name(), PDCbb_last_error_message());
        return 1;
    }
    printf("discovery %s, %d daemons\n", PDCbb_discovery_method(), PDCbb_nservers());
    int rc;
    if (strcmp(argv[1], "write") == 0)
        rc = do_write(argv[2]) || do_read(argv[2]);
    else if (strcmp(argv[1], "read") == 0)
        rc = do_read(argv[2]);
    else if (strcmp(argv[1], "readonly") == 0)
        rc = do_readonly(argv[2]);
    else {
        fprintf(stderr, "unknown mode '%s'\n", argv[1]);
        PDCclose(pdc);
        return 2;
    }
    PDC_timing_report("timing ");
    PROG_CHECK(PDCclose(pdc) == SUCCEED, "PDCclose");
    return rc || failures ? 1 : 0;
}
