/*
 * pdc_meta_tool - drives the PDC metadata API from the command line for the bats tests.
 *
 *   pdc_meta_tool [--no-init] 'COMMAND ARGS' ['COMMAND ARGS' ...]
 *
 * Runs PDCinit, each command in order, then PDCclose. A command prefixed with '!CODE ' must
 * fail with that pdcbb error (CODE without the PDCBB_ERR_ prefix, e.g. '!NOT_FOUND'); any other
 * outcome is a test failure. Output: one line per command, "ok ..." or "error NAME: message".
 * Exit status: 0 if every command behaved as expected, 1 otherwise, 2 on usage errors.
 * Commands: see usage() below.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pdc.h"
#include "pdc_client_connect.h"
#include "pdc_kv.h"
#include "prog_util.h"

#define MAXOPEN 256
static pdcid_t pdc;
static double first_init_ms; /* the process's first PDCinit (cold) */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static struct {
    char name[256];
    pdcid_t id;
    int is_cont;
} open_ids[MAXOPEN];
static int nopen;

static void usage(void)
{
    fprintf(stderr,
            "usage: pdc_meta_tool [--no-init] 'CMD ARGS' ...\n"
            "  cont-create C | cont-open C | cont-close C | cont-del C | cont-info C\n"
            "  cont-list                         every container of the job\n"
            "  obj-create C O [TYPE N D1..DN]    TYPE: int|float|double|char|int64|uint8\n"
            "  obj-open O | obj-close O | obj-del O | obj-info O\n"
            "  obj-list C                        objects of container C (iteration)\n"
            "  obj-set-dims O N D1..DN\n"
            "  prop-set FIELD VALUE              FIELD: app_name|data_loc|tags, on a new object\n"
            "                                    property (then closed)\n"
            "  tag-put KIND NAME TAG TYPE VALUE  KIND: obj|cont; TYPE: a PDC type name\n"
            "  tag-get KIND NAME TAG             prints type, size and value\n"
            "  tag-del KIND NAME TAG\n"
            "  tag-all-types O                   put and get back a tag of every PDC type\n"
            "  tag-search TAG VALUE              objects whose string tag TAG equals VALUE\n"
            "  tag-count TAG VALUE               how many (PDC_Client_query_kvtag alone)\n"
            "  objids-put C O... | objids-get C\n"
            "  stale-id O                        use a closed object id\n"
            "  foreign-id                        use an id this library never issued\n"
            "  wrong-kind C                      pass a container id where an object id goes\n"
            "  bad-type O                        put a tag with an invalid type\n"
            "  many-objs C PREFIX N              create N objects\n"
            "  many-del PREFIX N                 delete objects PREFIX0 .. PREFIX<N-1>\n"
            "  kv-create C NAME                  create a KV object (string keys) in C\n"
            "  obj-spread C O N                  an int object of N elements striped over every\n"
            "                                    daemon (PDC_REGION_STATIC), element i = i\n"
            "  query-count O V                   how many elements of O are > V (a data query)\n"
            "  sleep SECONDS\n");
}

static pdcid_t lookup(const char *name, int want_cont)
{
    for (int i = nopen - 1; i >= 0; i--)
        if (open_ids[i].is_cont == want_cont && strcmp(open_ids[i].name, name) == 0)
            return open_ids[i].id;
    return 0;
}

static void remember(const char *name, pdcid_t id, int is_cont)
{
    if (nopen < MAXOPEN) {
        snprintf(open_ids[nopen].name, sizeof(open_ids[nopen].name), "%s", name);
        open_ids[nopen].id = id;
        open_ids[nopen].is_cont = is_cont;
        nopen++;
    }
}

static void forget(pdcid_t id)
{
    for (int i = 0; i < nopen; i++)
        if (open_ids[i].id == id) {
            open_ids[i] = open_ids[--nopen];
            return;
        }
}

/* Open (or reuse) a container / object by name. */
static pdcid_t cont_of(const char *name)
{
    pdcid_t id = lookup(name, 1);
    if (id == 0 && (id = PDCcont_open(name, pdc)) != 0)
        remember(name, id, 1);
    return id;
}

static pdcid_t obj_of(const char *name)
{
    pdcid_t id = lookup(name, 0);
    if (id == 0 && (id = PDCobj_open(name, pdc)) != 0)
        remember(name, id, 0);
    return id;
}

static int type_of(const char *s)
{
    for (int t = 0; t < PDC_TYPE_COUNT; t++) {
        const char *n = get_enum_name_by_dtype((pdc_var_type_t)t);
        if (strcasecmp(s, n) == 0 || strcasecmp(s, n + 4) == 0)
            return t;
    }
    return -2;
}

/* Encode a textual value as type t; returns its size. */
static size_t encode_value(int t, const char *text, void *out)
{
    switch (t) {
    case PDC_INT: *(int *)out = atoi(text); return sizeof(int);
    case PDC_FLOAT: *(float *)out = strtof(text, NULL); return sizeof(float);
    case PDC_DOUBLE: *(double *)out = strtod(text, NULL); return sizeof(double);
    case PDC_INT64: *(int64_t *)out = strtoll(text, NULL, 10); return 8;
    case PDC_UINT64: *(uint64_t *)out = strtoull(text, NULL, 10); return 8;
    case PDC_STRING:
    case PDC_CHAR: strcpy(out, text); return strlen(text) + 1;
    default: *(int *)out = atoi(text); return sizeof(int);
    }
}

static void print_value(int t, const void *v, psize_t size)
{
    switch (t) {
    case PDC_INT: printf("%d", *(const int *)v); break;
    case PDC_FLOAT: printf("%g", *(const float *)v); break;
    case PDC_DOUBLE: printf("%.17g", *(const double *)v); break;
    case PDC_INT64: printf("%lld", (long long)*(const int64_t *)v); break;
    case PDC_UINT64: printf("%llu", (unsigned long long)*(const uint64_t *)v); break;
    case PDC_STRING:
    case PDC_CHAR: printf("%.*s", (int)size, (const char *)v); break;
    default:
        for (psize_t i = 0; i < size; i++)
            printf("%02x", ((const unsigned char *)v)[i]);
    }
}

static void print_obj(pdcid_t id)
{
    struct pdc_obj_info *info = PDCobj_get_info(id);
    if (info == NULL)
        return;
    printf(" name=%s type=%s ndim=%zu dims=", info->name,
           get_enum_name_by_dtype(info->obj_pt->type), info->obj_pt->ndim);
    for (size_t i = 0; i < info->obj_pt->ndim; i++)
        printf("%s%llu", i ? "x" : "", (unsigned long long)info->obj_pt->dims[i]);
    printf(" server=%u", info->metadata_server_id);
}

/* Put and read back a tag of every PDC type. */
static int all_types(pdcid_t obj)
{
    unsigned char value[64], *got;
    for (int t = 0; t < PDC_TYPE_COUNT; t++) {
        size_t size = get_size_by_dtype((pdc_var_type_t)t);
        if (t == PDC_STRING)
            size = 12;
        size *= (t % 3) + 1; /* arrays of 1..3 elements */
        for (size_t i = 0; i < size; i++)
            value[i] = (unsigned char)(t * 31 + i * 7 + 1);
        char tag[32];
        snprintf(tag, sizeof(tag), "tag_%s", get_enum_name_by_dtype((pdc_var_type_t)t));
        if (PDCobj_put_tag(obj, tag, value, (pdc_var_type_t)t, size) != SUCCEED)
            return -1;
        pdc_var_type_t gt;
        psize_t gs;
        if (PDCobj_get_tag(obj, tag, (void **)&got, &gt, &gs) != SUCCEED)
            return -1;
        int same = gt == (pdc_var_type_t)t && gs == size && memcmp(got, value, size) == 0;
        free(got);
        if (!same) {
            printf("mismatch for %s\n", tag);
            return -2;
        }
        printf(" %s", get_enum_name_by_dtype((pdc_var_type_t)t));
    }
    return 0;
}

/* Run one command; returns 0 on success, -1 on a PDC failure, -2 on a test-logic failure. */
static int run(int argc, char **argv)
{
    const char *cmd = argv[0];
#define NEED(n)                                                                                   \
    do {                                                                                          \
        if (argc < (n) + 1) {                                                                     \
            fprintf(stderr, "%s needs %d arguments\n", cmd, n);                                   \
            return -2;                                                                            \
        }                                                                                         \
    } while (0)
    if (strcmp(cmd, "cont-create") == 0) {
        NEED(1);
        pdcid_t prop = PDCprop_create(PDC_CONT_CREATE, pdc);
        pdcid_t id = PDCcont_create(argv[1], prop);
        if (!id)
            return -1; /* the property is reclaimed at PDCclose; closing it now would reset the
                          thread's last error */
        PDCprop_close(prop);
        remember(argv[1], id, 1);
        printf("ok cont-create %s\n", argv[1]);
    } else if (strcmp(cmd, "cont-open") == 0) {
        NEED(1);
        pdcid_t id = PDCcont_open(argv[1], pdc);
        if (!id)
            return -1;
        remember(argv[1], id, 1);
        printf("ok cont-open %s\n", argv[1]);
    } else if (strcmp(cmd, "cont-close") == 0) {
        NEED(1);
        pdcid_t id = cont_of(argv[1]);
        if (PDCcont_close(id) != SUCCEED)
            return -1;
        forget(id);
        printf("ok cont-close %s\n", argv[1]);
    } else if (strcmp(cmd, "cont-del") == 0) {
        NEED(1);
        pdcid_t id = cont_of(argv[1]);
        if (!id || PDCcont_del(id) != SUCCEED)
            return -1;
        printf("ok cont-del %s\n", argv[1]);
    } else if (strcmp(cmd, "cont-info") == 0) {
        NEED(1);
        struct pdc_cont_info *ci = PDCcont_get_info(argv[1]);
        if (ci == NULL)
            return -1;
        printf("ok cont-info name=%s meta_id=%#llx\n", ci->name,
               (unsigned long long)ci->meta_id);
    } else if (strcmp(cmd, "cont-list") == 0) {
        printf("ok cont-list");
        for (cont_handle *h = PDCcont_iter_start(); !PDCcont_iter_null(h);
             h = PDCcont_iter_next(h)) {
            struct pdc_cont_info *ci = PDCcont_iter_get_info(h);
            if (ci == NULL)
                return -1;
            printf(" %s", ci->name);
        }
        printf("\n");
    } else if (strcmp(cmd, "obj-create") == 0) {
        NEED(2);
        pdcid_t cont = cont_of(argv[1]);
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        if (argc >= 4) {
            int t = type_of(argv[3]);
            if (PDCprop_set_obj_type(prop, (pdc_var_type_t)t) != SUCCEED)
                return -1;
            int nd = argc >= 5 ? atoi(argv[4]) : 0;
            uint64_t dims[16];
            for (int i = 0; i < nd && i < 16 && 5 + i < argc; i++)
                dims[i] = strtoull(argv[5 + i], NULL, 10);
            if (nd && PDCprop_set_obj_dims(prop, nd, dims) != SUCCEED)
                return -1;
        }
        PDCprop_set_obj_app_name(prop, "pdc_meta_tool");
        pdcid_t id = PDCobj_create(cont, argv[2], prop);
        if (!id)
            return -1;
        PDCprop_close(prop);
        remember(argv[2], id, 0);
        printf("ok obj-create");
        print_obj(id);
        printf("\n");
    } else if (strcmp(cmd, "prop-set") == 0) {
        NEED(2);
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        perr_t r = strcmp(argv[1], "app_name") == 0   ? PDCprop_set_obj_app_name(prop, argv[2])
                   : strcmp(argv[1], "data_loc") == 0 ? PDCprop_set_obj_data_loc(prop, argv[2])
                   : strcmp(argv[1], "tags") == 0     ? PDCprop_set_obj_tags(prop, argv[2])
                                                      : FAIL;
        if (r != SUCCEED) /* before the close, which would set the last error anew */
            return -1;
        PDCprop_close(prop);
        printf("ok prop-set %s\n", argv[1]);
    } else if (strcmp(cmd, "kv-create") == 0) {
        NEED(2);
        pdcid_t kv = PDCkv_create(cont_of(argv[1]), argv[2], NULL);
        if (!kv)
            return -1;
        printf("ok kv-create %s\n", argv[2]);
        if (PDCkv_close(kv) != SUCCEED)
            return -1;
    } else if (strcmp(cmd, "obj-open") == 0 || strcmp(cmd, "obj-info") == 0) {
        NEED(1);
        pdcid_t id = strcmp(cmd, "obj-open") == 0 ? PDCobj_open(argv[1], pdc) : obj_of(argv[1]);
        if (!id)
            return -1;
        if (strcmp(cmd, "obj-open") == 0)
            remember(argv[1], id, 0);
        printf("ok %s", cmd);
        print_obj(id);
        printf("\n");
    } else if (strcmp(cmd, "obj-close") == 0) {
        NEED(1);
        pdcid_t id = obj_of(argv[1]);
        if (PDCobj_close(id) != SUCCEED)
            return -1;
        forget(id);
        printf("ok obj-close %s\n", argv[1]);
    } else if (strcmp(cmd, "obj-del") == 0) {
        NEED(1);
        pdcid_t id = obj_of(argv[1]);
        if (!id || PDCobj_del(id) != SUCCEED)
            return -1;
        printf("ok obj-del %s\n", argv[1]);
    } else if (strcmp(cmd, "obj-list") == 0) {
        NEED(1);
        pdcid_t cont = cont_of(argv[1]);
        if (!cont)
            return -1;
        printf("ok obj-list");
        for (obj_handle *h = PDCobj_iter_start(cont); !PDCobj_iter_null(h);
             h = PDCobj_iter_next(h, cont)) {
            struct pdc_obj_info *oi = PDCobj_iter_get_info(h);
            if (oi == NULL)
                return -1;
            printf(" %s", oi->name);
        }
        printf("\n");
    } else if (strcmp(cmd, "obj-set-dims") == 0) {
        NEED(2);
        pdcid_t id = obj_of(argv[1]);
        int nd = atoi(argv[2]);
        uint64_t dims[16] = {0};
        for (int i = 0; i < nd && i < 16 && 3 + i < argc; i++)
            dims[i] = strtoull(argv[3 + i], NULL, 10);
        if (!id || PDCobj_set_dims(id, nd, dims) != SUCCEED)
            return -1;
        int gnd;
        uint64_t *gd;
        if (PDCobj_get_dims(id, &gnd, &gd) != SUCCEED)
            return -1;
        printf("ok obj-set-dims ndim=%d dims=", gnd);
        for (int i = 0; i < gnd; i++)
            printf("%s%llu", i ? "x" : "", (unsigned long long)gd[i]);
        printf("\n");
        free(gd);
    } else if (strcmp(cmd, "tag-put") == 0) {
        NEED(5);
        int is_cont = strcmp(argv[1], "cont") == 0;
        pdcid_t id = is_cont ? cont_of(argv[2]) : obj_of(argv[2]);
        int t = type_of(argv[4]);
        char value[4096];
        size_t size = encode_value(t, argv[5], value);
        perr_t r = is_cont ? PDCcont_put_tag(id, argv[3], value, (pdc_var_type_t)t, size)
                           : PDCobj_put_tag(id, argv[3], value, (pdc_var_type_t)t, size);
        if (r != SUCCEED)
            return -1;
        printf("ok tag-put %s %s %s\n", argv[2], argv[3], argv[5]);
    } else if (strcmp(cmd, "tag-get") == 0) {
        NEED(3);
        int is_cont = strcmp(argv[1], "cont") == 0;
        pdcid_t id = is_cont ? cont_of(argv[2]) : obj_of(argv[2]);
        void *v;
        pdc_var_type_t t;
        psize_t size;
        perr_t r = is_cont ? PDCcont_get_tag(id, argv[3], &v, &t, &size)
                           : PDCobj_get_tag(id, argv[3], &v, &t, &size);
        if (r != SUCCEED)
            return -1;
        if (v == NULL && size == 0) {
            /* PDC's answer for a tag that does not exist; the cause is kept. */
            printf("ok tag-get %s absent (%s: %s)\n", argv[3], PDCbb_last_error_name(),
                   PDCbb_last_error_message());
            return 0;
        }
        printf("ok tag-get %s type=%s size=%llu value=", argv[3], get_enum_name_by_dtype(t),
               (unsigned long long)size);
        print_value(t, v, size);
        printf("\n");
        free(v);
    } else if (strcmp(cmd, "prop-query") == 0) {
        /* prop-query CONT FIELD VALUE: FIELD obj_name, cont_name, app_name, user_id or a
         * number (passed as is, to check the error for unknown fields) */
        NEED(3);
        pdcid_t cont = cont_of(argv[1]);
        enum pdc_prop_name_t field = strcmp(argv[2], "obj_name") == 0    ? PDC_OBJ_NAME
                                     : strcmp(argv[2], "cont_name") == 0 ? PDC_CONT_NAME
                                     : strcmp(argv[2], "app_name") == 0  ? PDC_APP_NAME
                                     : strcmp(argv[2], "user_id") == 0
                                         ? PDC_USER_ID
                                         : (enum pdc_prop_name_t)atoi(argv[2]);
        uint32_t uid = (uint32_t)strtoul(argv[3], NULL, 10);
        void *value = field == PDC_USER_ID ? (void *)&uid : (void *)argv[3];
        pdcid_t *ids = NULL;
        size_t n = 0;
        if (PDCobj_prop_query(cont, field, value, &ids, &n) != SUCCEED)
            return -1;
        printf("ok prop-query n=%zu%s\n", n, (n == 0) == (ids == NULL) ? "" : " BAD-IDS");
        free(ids);
    } else if (strcmp(cmd, "tag-del") == 0) {
        NEED(3);
        int is_cont = strcmp(argv[1], "cont") == 0;
        pdcid_t id = is_cont ? cont_of(argv[2]) : obj_of(argv[2]);
        perr_t r = is_cont ? PDCcont_del_tag(id, argv[3]) : PDCobj_del_tag(id, argv[3]);
        if (r != SUCCEED)
            return -1;
        printf("ok tag-del %s\n", argv[3]);
    } else if (strcmp(cmd, "tag-all-types") == 0) {
        NEED(1);
        pdcid_t id = obj_of(argv[1]);
        if (!id)
            return -1;
        printf("ok tag-all-types");
        int r = all_types(id);
        printf("\n");
        return r;
    } else if (strcmp(cmd, "tag-count") == 0) {
        NEED(2);
        int n = 0;
        uint64_t *ids = NULL;
        pdc_kvtag_t kv = {.name = argv[1],
                          .size = (uint32_t)strlen(argv[2]) + 1,
                          .type = PDC_STRING,
                          .value = argv[2]};
        if (PDC_Client_query_kvtag(&kv, &n, &ids) != SUCCEED)
            return -1;
        printf("ok tag-count n=%d\n", n);
        free(ids);
    } else if (strcmp(cmd, "tag-search") == 0) {
        NEED(2);
        int n = 0;
        uint64_t *ids = NULL;
        pdc_kvtag_t kv = {.name = argv[1], .size = (uint32_t)strlen(argv[2]) + 1,
                          .type = PDC_STRING, .value = argv[2]};
        if (PDC_Client_query_kvtag(&kv, &n, &ids) != SUCCEED)
            return -1;
        char *names = NULL;
        int n2 = 0;
        if (PDCobj_get_name(argv[1], argv[2], (int)strlen(argv[2]) + 1, &n2, &names) != SUCCEED)
            return -1;
        printf("ok tag-search n=%d names=", n);
        const char *p = names;
        for (int i = 0; i < n2; i++, p += strlen(p) + 1)
            printf("%s%s", i ? "," : "", p);
        printf("\n");
        free(ids);
        free(names);
        if (n != n2)
            return -2;
    } else if (strcmp(cmd, "objids-put") == 0) {
        NEED(2);
        pdcid_t cont = cont_of(argv[1]);
        pdcid_t ids[64];
        int n = 0;
        for (int i = 2; i < argc && n < 64; i++)
            if ((ids[n++] = obj_of(argv[i])) == 0)
                return -1;
        if (PDCcont_put_objids(cont, n, ids) != SUCCEED)
            return -1;
        printf("ok objids-put %d\n", n);
    } else if (strcmp(cmd, "objids-get") == 0) {
        NEED(1);
        pdcid_t cont = cont_of(argv[1]);
        int n;
        pdcid_t *ids;
        if (PDCcont_get_objids(cont, &n, &ids) != SUCCEED)
            return -1;
        printf("ok objids-get n=%d\n", n);
        free(ids);
    } else if (strcmp(cmd, "stale-id") == 0) {
        NEED(1);
        pdcid_t id = PDCobj_open(argv[1], pdc);
        if (!id)
            return -1;
        PDCobj_close(id);
        if (PDCobj_get_info(id) != NULL)
            return -2;
        printf("note get_info on a closed id: %s\n", PDCbb_last_error_message());
        int dummy = 1;
        if (PDCobj_put_tag(id, "t", &dummy, PDC_INT, sizeof(int)) == SUCCEED)
            return -2;
        return -1;
    } else if (strcmp(cmd, "foreign-id") == 0) {
        int dummy = 1;
        if (PDCobj_put_tag((pdcid_t)0x0505050505050505ull, "t", &dummy, PDC_INT, sizeof(int)) ==
            SUCCEED)
            return -2;
        return -1;
    } else if (strcmp(cmd, "wrong-kind") == 0) {
        NEED(1);
        pdcid_t cont = cont_of(argv[1]);
        int dummy = 1;
        if (!cont)
            return -2;
        if (PDCobj_put_tag(cont, "t", &dummy, PDC_INT, sizeof(int)) == SUCCEED)
            return -2;
        return -1;
    } else if (strcmp(cmd, "bad-type") == 0) {
        NEED(1);
        pdcid_t id = obj_of(argv[1]);
        int dummy = 1;
        if (!id)
            return -2;
        if (PDCobj_put_tag(id, "t", &dummy, (pdc_var_type_t)77, sizeof(int)) == SUCCEED)
            return -2;
        return -1;
    } else if (strcmp(cmd, "many-objs") == 0) {
        NEED(3);
        pdcid_t cont = cont_of(argv[1]);
        int n = atoi(argv[3]);
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        PDCprop_set_obj_type(prop, PDC_DOUBLE);
        int per_server[64] = {0};
        for (int i = 0; i < n; i++) {
            char name[256];
            snprintf(name, sizeof(name), "%s%d", argv[2], i);
            pdcid_t id = PDCobj_create(cont, name, prop);
            if (!id)
                return -1;
            per_server[PDCobj_get_info(id)->metadata_server_id % 64]++;
            PDCobj_close(id);
        }
        PDCprop_close(prop);
        printf("ok many-objs per-server:");
        for (int s = 0; s < PDCbb_nservers() && s < 64; s++)
            printf(" %d", per_server[s]);
        printf("\n");
    } else if (strcmp(cmd, "many-del") == 0) {
        NEED(2);
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++) {
            char name[256];
            snprintf(name, sizeof(name), "%s%d", argv[1], i);
            pdcid_t id = PDCobj_open(name, pdc);
            if (!id || PDCobj_del(id) != SUCCEED)
                return -1;
            PDCobj_close(id);
        }
        printf("ok many-del %d\n", n);
    } else if (strcmp(cmd, "obj-spread") == 0) {
        NEED(3);
        uint64_t n = strtoull(argv[3], NULL, 10), off = 0;
        int *v = malloc((n ? n : 1) * sizeof(*v));
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        if (v == NULL || n == 0 || prop == 0) {
            free(v);
            return -1;
        }
        for (uint64_t i = 0; i < n; i++)
            v[i] = (int)i;
        PDCprop_set_obj_type(prop, PDC_INT);
        PDCprop_set_obj_dims(prop, 1, &n);
        PDCprop_set_obj_transfer_region_type(prop, PDC_REGION_STATIC);
        pdcid_t id = PDCobj_create(cont_of(argv[1]), argv[2], prop);
        PDCprop_close(prop);
        int ok = id != 0 && prog_transfer(id, PDC_WRITE, v, 1, &off, &n);
        free(v);
        if (!ok)
            return -1;
        remember(argv[2], id, 0);
        printf("ok obj-spread %s n=%llu\n", argv[2], (unsigned long long)n);
    } else if (strcmp(cmd, "query-count") == 0) {
        NEED(2);
        pdcid_t id = obj_of(argv[1]);
        int v = atoi(argv[2]);
        pdc_query_t *q = id ? PDCquery_create(id, PDC_GT, PDC_INT, &v) : NULL;
        uint64_t n = 0;
        double t0 = now_ms();
        if (q == NULL || PDCquery_get_nhits(q, &n) != SUCCEED) {
            if (q)
                PDCquery_free(q);
            return -1;
        }
        printf("ok query-count n=%llu ms=%.3f\n", (unsigned long long)n, now_ms() - t0);
        PDCquery_free(q);
    } else if (strcmp(cmd, "sleep") == 0) {
        NEED(1);
        sleep((unsigned)atoi(argv[1]));
        printf("ok sleep\n");
    } else if (strcmp(cmd, "init-time") == 0) {
        /* PDCclose + PDCinit N times (use alone: ids of earlier commands die with PDCclose) */
        NEED(1);
        int n = atoi(argv[1]);
        if (n < 1 || n > 1000)
            n = 10;
        double ms[1000];
        for (int k = 0; k < n; k++) {
            if (PDCclose(pdc) != SUCCEED)
                return -1;
            double t0 = now_ms();
            if ((pdc = PDCinit("pdc")) == 0)
                return -1;
            ms[k] = now_ms() - t0;
        }
        qsort(ms, (size_t)n, sizeof(ms[0]), cmp_double);
        printf("ok init-time first=%.2f median=%.2f max=%.2f ms nservers=%d discovery=%s\n",
               first_init_ms, ms[n / 2], ms[n - 1], PDCbb_nservers(), PDCbb_discovery_method());
    } else if (strcmp(cmd, "info") == 0) {
        printf("ok info discovery=%s nservers=%d\n", PDCbb_discovery_method(), PDCbb_nservers());
    } else {
        fprintf(stderr, "unknown command '%s'\n", cmd);
        usage();
        exit(2);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int first = 1, failures = 0, init = 1;
    if (argc > 1 && strcmp(argv[1], "--no-init") == 0) {
        init = 0;
        first = 2;
    }
    if (argc <= first) {
        usage();
        return 2;
    }
    double t0 = now_ms();
    if (init && (pdc = PDCinit("pdc")) == 0) {
        printf("error %s: %s\n", PDCbb_last_error_name(), PDCbb_last_error_message());
        return 1;
    }
    first_init_ms = now_ms() - t0;
    for (int i = first; i < argc; i++) {
        char line[4096], *words[64], *save = NULL, *expect = NULL;
        int n = 0;
        snprintf(line, sizeof(line), "%s", argv[i]);
        for (char *w = strtok_r(line, " ", &save); w && n < 64; w = strtok_r(NULL, " ", &save))
            words[n++] = w;
        if (n == 0)
            continue;
        char **cmdv = words;
        if (words[0][0] == '!') {
            expect = words[0] + 1;
            cmdv++;
            n--;
        }
        if (n == 0)
            continue;
        int r = run(n, cmdv);
        if (r == -1)
            printf("error %s: %s\n", PDCbb_last_error_name(), PDCbb_last_error_message());
        fflush(stdout);
        if (expect) {
            char want[64];
            snprintf(want, sizeof(want), "PDCBB_ERR_%s", expect);
            if (r != -1 || strcmp(want, PDCbb_last_error_name()) != 0) {
                printf("UNEXPECTED: '%s' should have failed with %s\n", argv[i], want);
                failures++;
            }
        } else if (r != 0) {
            printf("FAILED: '%s'\n", argv[i]);
            failures++;
        }
    }
    if (init && PDCclose(pdc) != SUCCEED) {
        printf("error PDCclose: %s\n", PDCbb_last_error_message());
        failures++;
    }
    return failures ? 1 : 0;
}
