/*
 * pdc_transform.c - PDC's transforms (PDCobj_transform_register, PDCbuf_map_transform_register)
 * and the lookup of user functions by name shared with the analyses (client_udf_resolve).
 *
 * Where they run, and why: in the application process, when a mapped buffer's data moves
 * (pdc_maplock.c): DATA_OUT when a PDC_WRITE lock is released (buffer -> object, the transform's
 * output is what is stored), DATA_IN when a PDC_READ lock is granted (object -> buffer). PDC
 * registers the function with its servers as well, but the data of a mapping passes through
 * the client on both ways, so the client is where the conversion belongs; and a pdcbb daemon
 * serves every process of the job, so it never runs application code (a crash in a user
 * function would take down the job's storage).
 *
 * States, as PDC: every object has a data state (0 at first, per process); a transform runs
 * only when the object's state equals its current_state, and then moves it to its next state
 * (INCR_STATE: current + 1, DECR_STATE: current - 1; PDCobj_transform_register: any other value
 * is the next state; PDCbuf_map_transform_register: the state stays, as PDC does).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_maplock.h"
#include "pdc_transform.h"
#include "pdcbb_log.h"

typedef struct client_transform {
    struct client_transform *next;
    char *spec;                   /* "function[:library]" as registered, for messages */
    client_transform_fn_t fn;
    const void *buf;              /* PDCbuf_map_transform_register: the mapped buffer; else NULL */
    uint64_t obj_meta;
    pdcbb_box_t dest;             /* PDCbuf_map_transform_register: the object region */
    int when;                     /* DATA_IN or DATA_OUT */
    int current_state;
    int next_state;
} client_transform_t;

typedef struct obj_state {
    struct obj_state *next;
    uint64_t meta;
    int state;
} obj_state_t;

static client_transform_t *transforms;
static obj_state_t *states;

/* ---------------------------------------------------------------- finding functions */

/* Directory of the running executable ("" if unknown). */
static void app_dir(char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    out[0] = '\0';
    if (n <= 0)
        return;
    exe[n] = '\0';
    snprintf(out, len, "%s", dirname(exe));
}

void *client_udf_resolve(const char *spec, const char *default_lib, const char *fn)
{
    if (spec == NULL || spec[0] == '\0') {
        client_fail(PDCBB_ERR_INVAL, "%s: the function name is NULL or empty", fn);
        return NULL;
    }
    char name[1024], lib[PATH_MAX] = "", dir[PATH_MAX], path[PATH_MAX + 1024];
    const char *colon = strrchr(spec, ':');
    size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
    if (nlen == 0 || nlen >= sizeof(name) || (colon && colon[1] == '\0')) {
        client_fail(PDCBB_ERR_INVAL, "%s: '%s' is not \"function[:library]\"", fn, spec);
        return NULL;
    }
    memcpy(name, spec, nlen);
    name[nlen] = '\0';
    if (colon)
        snprintf(lib, sizeof(lib), "%s", colon + 1);
    void *f = NULL;
    if (!colon) {
        /* In the application (exported with -rdynamic) or a library it loaded. */
        dlerror();
        if ((f = dlsym(RTLD_DEFAULT, name)) != NULL)
            return f;
    }
    app_dir(dir, sizeof(dir));
    const char *want = colon ? lib : default_lib;
    char tried[2048] = "";
    const char *cands[2] = {NULL, NULL};
    if (strchr(want, '/') == NULL && dir[0]) {
        snprintf(path, sizeof(path), "%s/%s", dir, want);
        cands[0] = path;
        cands[1] = colon ? want : NULL; /* a named library may also be found by dlopen's search */
    } else {
        cands[0] = want;
    }
    for (int i = 0; i < 2 && cands[i] && f == NULL; i++) {
        void *h = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            size_t tl = strlen(tried);
            snprintf(tried + tl, sizeof(tried) - tl, "%s%s", tl ? "; " : "", dlerror());
            continue;
        }
        /* The library stays loaded: registered functions must remain callable. */
        if ((f = dlsym(h, name)) == NULL) {
            size_t tl = strlen(tried);
            snprintf(tried + tl, sizeof(tried) - tl, "%s%s has no '%s'", tl ? "; " : "",
                     cands[i], name);
        }
    }
    if (f == NULL) {
        if (!colon)
            client_fail(PDCBB_ERR_NOT_FOUND,
                        "%s: function '%s' not found: the application does not export it (link it "
                        "with -rdynamic) and %s (%s)",
                        fn, name, default_lib, tried);
        else
            client_fail(PDCBB_ERR_NOT_FOUND, "%s: function '%s' not found in library '%s' (%s)",
                        fn, name, lib, tried);
    }
    return f;
}

/* ---------------------------------------------------------------- states */

static obj_state_t *state_of(uint64_t meta, int create)
{
    for (obj_state_t *s = states; s; s = s->next)
        if (s->meta == meta)
            return s;
    if (!create)
        return NULL;
    obj_state_t *s = calloc(1, sizeof(*s));
    if (s) {
        s->meta = meta;
        s->next = states;
        states = s;
    }
    return s;
}

static int state_get(uint64_t meta)
{
    obj_state_t *s = state_of(meta, 0);
    return s ? s->state : 0;
}

/* ---------------------------------------------------------------- registration */

static perr_t add(const char *spec, client_transform_fn_t f, const void *buf, uint64_t meta,
                  const pdcbb_box_t *dest, int when, int cur, int next, const char *fn)
{
    client_transform_t *t = calloc(1, sizeof(*t));
    if (t == NULL || (t->spec = strdup(spec)) == NULL) {
        free(t);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        return FAIL;
    }
    t->fn = f;
    t->buf = buf;
    t->obj_meta = meta;
    if (dest)
        t->dest = *dest;
    t->when = when;
    t->current_state = cur;
    t->next_state = next;
    /* Kept in registration order: the first one ready runs. */
    client_transform_t **pp = &transforms;
    while (*pp)
        pp = &(*pp)->next;
    *pp = t;
    return SUCCEED;
}

static int check_when(pdc_data_movement_t when, const char *fn)
{
    if (when == DATA_IN || when == DATA_OUT)
        return 1;
    if (when == DATA_RELOCATION)
        client_fail(PDCBB_ERR_UNSUPPORTED,
                    "%s: DATA_RELOCATION transforms do not run in pdcbb (data is never relocated "
                    "between daemons behind the application's back)",
                    fn);
    else
        client_fail(PDCBB_ERR_INVAL, "%s: when %d is neither DATA_IN nor DATA_OUT", fn, (int)when);
    return 0;
}

/* The transform function func names (in libpdctransforms.so unless it names its library), once
 * when is checked; NULL, error recorded, otherwise. */
static client_transform_fn_t resolve(char *func, pdc_data_movement_t when, const char *fn)
{
    if (!check_when(when, fn))
        return NULL;
    return (client_transform_fn_t)client_udf_resolve(func, "libpdctransforms.so", fn);
}

/* The state after a transform from current_state: one more for INCR_STATE, one less for
 * DECR_STATE, otherwise other. */
static int state_after(int current_state, int next_state, int other)
{
    return next_state == INCR_STATE   ? current_state + 1
           : next_state == DECR_STATE ? current_state - 1
                                      : other;
}

perr_t PDCobj_transform_register(char *func, pdcid_t obj_id, int current_state, int next_state,
                                 pdc_obj_transform_t op_type, pdc_data_movement_t when)
{
    const char *fn = "PDCobj_transform_register";
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_handle_live(obj_id, CLIENT_H_OBJ, "object", fn);
    if (o == NULL)
        goto out;
    if (op_type != PDC_DATA_MAP) {
        client_fail(PDCBB_ERR_UNSUPPORTED,
                    "%s: op_type %d: only PDC_DATA_MAP transforms run (as in PDC, where the other "
                    "kinds are never invoked)",
                    fn, (int)op_type);
        goto out;
    }
    client_transform_fn_t f = resolve(func, when, fn);
    if (f == NULL)
        goto out;
    int next = state_after(current_state, next_state, next_state);
    ret = add(func, f, NULL, o->meta_id, NULL, (int)when, current_state, next, fn);
out:
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCbuf_map_transform_register(char *func, void *buf, pdcid_t src_region_id,
                                     pdcid_t dest_object_id, pdcid_t dest_region_id,
                                     int current_state, int next_state, pdc_data_movement_t when)
{
    const char *fn = "PDCbuf_map_transform_register";
    perr_t ret = FAIL;
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_handle_live(dest_object_id, CLIENT_H_OBJ, "object", fn);
    if (o == NULL)
        goto out;
    client_region_t *src = client_handle_get(src_region_id, CLIENT_H_REGION, &e);
    if (src == NULL) {
        client_fail(e, "%s: source region %#llx is not a live region id", fn,
                    (unsigned long long)src_region_id);
        goto out;
    }
    client_region_t *dst = client_handle_get(dest_region_id, CLIENT_H_REGION, &e);
    if (dst == NULL) {
        client_fail(e, "%s: destination region %#llx is not a live region id", fn,
                    (unsigned long long)dest_region_id);
        goto out;
    }
    if (buf == NULL) {
        client_fail(PDCBB_ERR_INVAL, "%s: the buffer is NULL", fn);
        goto out;
    }
    client_transform_fn_t f = resolve(func, when, fn);
    if (f == NULL)
        goto out;
    int next = state_after(current_state, next_state, current_state);
    ret = add(func, f, buf, o->meta_id, &dst->box, (int)when, current_state, next, fn);
out:
    CLIENT_LEAVE();
    return ret;
}

/* ---------------------------------------------------------------- running */

static int matches(const client_transform_t *t, const void *buf, uint64_t meta,
                   const pdcbb_box_t *remote, int when)
{
    if (t->obj_meta != meta || t->when != when)
        return 0;
    return t->buf == NULL || (t->buf == buf && memcmp(&t->dest, remote, sizeof(*remote)) == 0);
}

int client_transform_exists(const void *buf, uint64_t obj_meta, const pdcbb_box_t *remote, int when)
{
    for (client_transform_t *t = transforms; t; t = t->next)
        if (matches(t, buf, obj_meta, remote, when))
            return 1;
    return 0;
}

pdcbb_err_t client_transform_apply(const void *buf, const client_obj_t *o, const pdcbb_box_t *remote,
                                   int when, void *in, pdc_var_type_t in_type, void *out,
                                   size_t out_bytes, pdc_var_type_t out_type, int *ran,
                                   const char *fn)
{
    *ran = 0;
    int state = state_get(o->meta_id);
    client_transform_t *t = transforms;
    for (; t; t = t->next)
        if (matches(t, buf, o->meta_id, remote, when) && t->current_state == state)
            break;
    if (t == NULL)
        return PDCBB_OK;
    uint64_t dims[PDCBB_REGION_NDIM_MAX];
    memcpy(dims, remote->size, remote->ndim * sizeof(uint64_t));
    void *res = out;
    size_t n = t->fn(in, in_type, (int)remote->ndim, dims, &res, out_type);
    /* PDC's own examples return int through this size_t function type: look at 32 bits then. */
    int failed = n == (size_t)-1 || (int32_t)(uint32_t)n == -1 || res == NULL;
    int size_ok = n == out_bytes || (out_bytes < INT32_MAX && (uint32_t)n == (uint32_t)out_bytes);
    if (!failed && res != out && size_ok)
        memcpy(out, res, out_bytes);
    if (res != out && res != NULL && res != in)
        free(res); /* the function's own buffer */
    if (failed)
        return client_fail(PDCBB_ERR_INVAL, "%s: transform '%s' of object '%s' failed", fn,
                           t->spec, o->name);
    if (!size_ok)
        return client_fail(PDCBB_ERR_INVAL,
                           "%s: transform '%s' of object '%s' produced %zu bytes; the region "
                           "needs %zu (%s elements)",
                           fn, t->spec, o->name, n, out_bytes, get_name_by_dtype(out_type));
    obj_state_t *s = state_of(o->meta_id, 1);
    if (s)
        s->state = t->next_state;
    *ran = 1;
    PDCBB_DEBUG("transform '%s' ran on object '%s' (%s), state %d -> %d", t->spec, o->name,
                when == DATA_OUT ? "DATA_OUT" : "DATA_IN", state, t->next_state);
    return PDCBB_OK;
}

void client_transform_cleanup(void)
{
    while (transforms) {
        client_transform_t *t = transforms;
        transforms = t->next;
        free(t->spec);
        free(t);
    }
    while (states) {
        obj_state_t *s = states;
        states = s->next;
        free(s);
    }
}

perr_t PDCbuf_io_transform_register(char *func, void *buf, pdcid_t src_region_id,
                                    int current_state, int next_state, pdc_data_movement_t when)
{
    (void)buf, (void)src_region_id, (void)current_state, (void)next_state, (void)when;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() == PDCBB_OK)
        client_fail(PDCBB_ERR_UNSUPPORTED,
                    "PDCbuf_io_transform_register: I/O transforms ('%s') are not supported (PDC "
                    "does not implement them either)",
                    func ? func : "(null)");
    CLIENT_LEAVE();
    return FAIL;
}
