/*
 * client_drained.c - a drained job served read-only through the PDC API (PDCBB_DRAINED_DIR).
 *
 * After a job its burst-buffer data lives in a drain directory (docs/DRAIN-FORMAT.md). With
 * PDCBB_DRAINED_DIR set, PDCinit opens that directory instead of looking for daemons, and this
 * file plays the one daemon of the library (rank 0): client_rpc_post hands every request here
 * and the reply is built as a real daemon's would be (header with status, encoded body), then
 * decoded by the same code as replies that crossed the network, so the PDC API code in pdc_*.c
 * is unchanged.
 *
 * Ids: the client routes a request by the daemon in a meta id, so the drained containers and
 * objects get new meta ids of daemon 0: pdcbb_meta_id_make(kind, 0, index + 1) with index their
 * position in the manifest. Ids in the drain (an object's container, a container's object list)
 * are translated on the way out. Objects keep their placement; with one daemon every read is
 * one piece for daemon 0 (a REGION_DYNAMIC / REGION_LOCAL read first asks MAP_GET, answered
 * "all on daemon 0"), served by pdcbb_drain_read_box, which applies the drained placement.
 *
 * What is answered, refused with PDCBB_ERR_READ_ONLY (a request that would change something;
 * client_rpc.c names the drained directory in the error message) or with
 * PDCBB_ERR_UNSUPPORTED is the drained mode column of each op's row of PDCBB_OPS.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_drained_kv.h"
#include "pdcbb_checked.h"
#include "pdcbb_drain.h"
#include "pdcbb_log.h"
#include "pdcbb_pattern.h"
#include "pdcbb_query.h"

static uint64_t served; /* requests answered (STATS) */
static char last_why[PDCBB_DRAIN_ERR_LEN]; /* client_drained_why */

static pdcbb_drain_t *model(void)
{
    return client_g.drained;
}

/* ------------------------------------------------------------------ ids */

static uint64_t cont_meta(uint32_t index)
{
    return pdcbb_meta_id_make(PDCBB_META_KIND_CONT, 0, (uint64_t)index + 1);
}

static uint64_t obj_meta(uint32_t index)
{
    return pdcbb_meta_id_make(PDCBB_META_KIND_OBJ, 0, (uint64_t)index + 1);
}

/* The index of a meta id of kind, or -1 if it names nothing here. */
static int64_t meta_index(uint64_t id, unsigned kind)
{
    if (pdcbb_meta_id_kind(id) != kind || pdcbb_meta_id_server(id) != 0)
        return -1;
    uint64_t seq = id & ((1ull << 44) - 1);
    uint32_t n = kind == PDCBB_META_KIND_CONT ? model()->nconts : model()->nobjs;
    return seq >= 1 && seq <= n ? (int64_t)(seq - 1) : -1;
}

static const pdcbb_drain_cont_t *cont_of(uint64_t id)
{
    int64_t i = meta_index(id, PDCBB_META_KIND_CONT);
    return i < 0 ? NULL : &model()->conts[i];
}

static const pdcbb_drain_object_t *obj_of(uint64_t id)
{
    int64_t i = meta_index(id, PDCBB_META_KIND_OBJ);
    return i < 0 ? NULL : &model()->objs[i];
}

/* New ids of ids of the drained job (0 when it is not in the drain). */
static uint64_t cont_meta_of_drained(uint64_t drained_id)
{
    const pdcbb_drain_cont_t *c =
        drained_id ? pdcbb_drain_find_cont_id(model(), drained_id) : NULL;
    return c ? cont_meta((uint32_t)(c - model()->conts)) : 0;
}

static uint64_t obj_meta_of_drained(uint64_t drained_id)
{
    const pdcbb_drain_object_t *o =
        drained_id ? pdcbb_drain_find_object_id(model(), drained_id) : NULL;
    return o ? obj_meta((uint32_t)(o - model()->objs)) : 0;
}

/* ------------------------------------------------------------------ open / close */

pdcbb_err_t client_drained_open(const char *dir, char *err, size_t errlen)
{
    pdcbb_drain_t *m = NULL;
    char why[PDCBB_DRAIN_ERR_LEN] = "";
    long expect_uid;
    const char *owner = getenv("PDCBB_DRAINED_OWNER");
    pdcbb_err_t rc = pdcbb_drain_reader_uid(owner, &expect_uid, why, sizeof(why));
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "PDCBB_DRAINED_OWNER=%s: %s", owner, why);
        return rc;
    }
    rc = pdcbb_drain_open(dir, 0, &m, why, sizeof(why));
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "PDCBB_DRAINED_DIR=%s: cannot open the drained job: %s", dir,
                 why[0] ? why : pdcbb_strerror(rc));
        return rc;
    }
    /* refuse a drain that someone other than its owner could have changed, or that is not
     * the expected user's or not the job it claims to be */
    char warn[PDCBB_DRAIN_ERR_LEN] = "";
    rc = pdcbb_drain_reader_check(m, expect_uid, "PDCBB_DRAINED_OWNER=", warn, sizeof(warn), why,
                                  sizeof(why));
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "PDCBB_DRAINED_DIR=%s: %s", dir, why);
        pdcbb_drain_free(m);
        return rc;
    }
    if (warn[0])
        PDCBB_WARN("PDCBB_DRAINED_DIR=%s: %s", dir, warn);
    client_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        pdcbb_drain_free(m);
        snprintf(err, errlen, "out of memory");
        return PDCBB_ERR_NOMEM;
    }
    /* The virtual daemon is on this node: PDC_REGION_LOCAL would pick it. */
    s->info.rank = 0;
    snprintf(s->info.node, sizeof(s->info.node), "%s", client_g.node);
    snprintf(s->info.ip, sizeof(s->info.ip), "%s", "drained");
    client_g.servers = s;
    client_g.nservers = 1;
    client_g.job_id = m->job_id;
    client_g.drained = m;
    served = 0;
    snprintf(client_g.discovery, sizeof(client_g.discovery), "drained");
    PDCBB_INFO("serving drained job %llu read-only from %s: %u containers, %u objects",
               (unsigned long long)m->job_id, m->dir ? m->dir : dir, m->nconts, m->nobjs);
    return PDCBB_OK;
}

void client_drained_close(void)
{
    client_drained_kv_close();
    pdcbb_drain_free(client_g.drained);
    client_g.drained = NULL;
}

const char *client_drained_why(void)
{
    return last_why;
}

const char *client_drained_dir(void)
{
    return client_g.drained && client_g.drained->dir ? client_g.drained->dir : "";
}

/* ------------------------------------------------------------------ metadata ops */

static void obj_info_fill(uint32_t index, pdcbb_obj_info_rep_t *p)
{
    const pdcbb_drain_object_t *o = &model()->objs[index];
    p->id = obj_meta(index);
    p->cont_id = cont_meta_of_drained(o->cont_id);
    p->name = o->name;
    p->type = o->type;
    p->partition = o->partition; /* with one virtual daemon, every placement reads from it */
    p->consistency = o->consistency;
    p->user_id = o->user_id;
    p->time_step = o->time_step;
    p->dims = (uint64_t *)o->dims; /* only read by the encoder */
    p->dims_count = o->ndim;
    p->app_name = o->app_name;
    p->data_loc = o->data_loc;
    p->tags = o->tags_str;
}

/* Ids after 'after' (ascending), at most max (0: the daemon's cap). */
static pdcbb_err_t list_ids(unsigned kind, uint64_t after, uint32_t max, uint64_t cont_filter,
                            uint64_t **ids, uint32_t *count, uint32_t *more)
{
    uint32_t n = kind == PDCBB_META_KIND_CONT ? model()->nconts : model()->nobjs;
    uint32_t cap = max == 0 || max > 65536 ? 65536 : max, k = 0;
    uint64_t *out = malloc(8 * (size_t)(n ? n : 1));
    if (out == NULL)
        return PDCBB_ERR_NOMEM;
    *more = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t id = kind == PDCBB_META_KIND_CONT ? cont_meta(i) : obj_meta(i);
        if (id <= after)
            continue;
        if (cont_filter && cont_meta_of_drained(model()->objs[i].cont_id) != cont_filter)
            continue;
        if (k == cap) {
            *more = 1;
            break;
        }
        out[k++] = id;
    }
    *ids = out;
    *count = k;
    return PDCBB_OK;
}

static const pdcbb_drain_tag_t *tag_find(const pdcbb_drain_tag_t *tags, uint32_t n,
                                         const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(tags[i].name, name) == 0)
            return &tags[i];
    return NULL;
}

static int tag_matches(const pdcbb_drain_tag_t *t, const pdcbb_tag_query_req_t *q)
{
    if (t == NULL)
        return 0;
    return !q->match_value ||
           (t->len == q->value_len && (t->len == 0 || memcmp(t->value, q->value, t->len) == 0));
}

/* The ids of the containers and objects (kind 0: both) whose tags satisfy match(tags, n,
 * arg), in the daemon's order: by id, so containers before objects. *out malloc'ed. */
static pdcbb_err_t tags_scan(unsigned kind,
                             int (*match)(const pdcbb_drain_tag_t *tags, uint32_t n,
                                          const void *arg),
                             const void *arg, uint64_t **out, uint32_t *count)
{
    const pdcbb_drain_t *m = model();
    uint64_t *ids = malloc(8 * ((size_t)m->nconts + m->nobjs + 1));
    if (ids == NULL)
        return PDCBB_ERR_NOMEM;
    uint32_t n = 0;
    if (kind == 0 || kind == PDCBB_META_KIND_CONT)
        for (uint32_t i = 0; i < m->nconts; i++)
            if (match(m->conts[i].tags, m->conts[i].ntags, arg))
                ids[n++] = cont_meta(i);
    if (kind == 0 || kind == PDCBB_META_KIND_OBJ)
        for (uint32_t i = 0; i < m->nobjs; i++)
            if (match(m->objs[i].tags, m->objs[i].ntags, arg))
                ids[n++] = obj_meta(i);
    *out = ids;
    *count = n;
    return PDCBB_OK;
}

/* TAG_QUERY's test of one container's or object's tags (arg: the request). */
static int tag_query_match(const pdcbb_drain_tag_t *tags, uint32_t n, const void *arg)
{
    const pdcbb_tag_query_req_t *q = arg;
    return tag_matches(tag_find(tags, n, q->name), q);
}

static pdcbb_err_t tag_query(const pdcbb_tag_query_req_t *q, pdcbb_tag_query_rep_t *p)
{
    if (q->name == NULL || q->name[0] == '\0')
        return PDCBB_ERR_INVAL;
    return tags_scan(q->kind, tag_query_match, q, &p->ids, &p->ids_count);
}

/* TAG_SEARCH over the drained tags: the daemon's semantics (bbd/bbd_tagidx.c) by a scan. */
static int tag_search_match(const pdcbb_drain_tag_t *tags, uint32_t n, const pdcbb_pat_t *name,
                            const pdcbb_tag_search_req_t *q, const pdcbb_pat_t *value)
{
    for (uint32_t i = 0; i < n; i++) {
        size_t tl;
        if (!pdcbb_pat_match(name, tags[i].name, strlen(tags[i].name)))
            continue;
        if (q->value_mode == PDCBB_TAGVAL_ANY)
            return 1;
        if (q->value_mode == PDCBB_TAGVAL_BYTES) {
            if (tags[i].len == q->value_len && memcmp(tags[i].value, q->value, q->value_len) == 0)
                return 1;
        } else if (pdcbb_pat_text_of(tags[i].value, tags[i].len, &tl) &&
                   pdcbb_pat_match(value, tags[i].value, tl)) {
            return 1;
        }
    }
    return 0;
}

/* The parsed TAG_SEARCH request, for tags_scan. */
typedef struct tag_search_arg {
    const pdcbb_pat_t *name, *value;
    const pdcbb_tag_search_req_t *q;
} tag_search_arg_t;

static int tag_search_scan(const pdcbb_drain_tag_t *tags, uint32_t n, const void *arg)
{
    const tag_search_arg_t *a = arg;
    return tag_search_match(tags, n, a->name, a->q, a->value);
}

static pdcbb_err_t tag_search(const pdcbb_tag_search_req_t *q, pdcbb_tag_search_rep_t *p)
{
    pdcbb_pat_t name, value;
    size_t tl;
    if (q->name == NULL || pdcbb_pat_parse(q->name, strlen(q->name), &name) != PDCBB_OK)
        return PDCBB_ERR_INVAL;
    if (q->value_mode > PDCBB_TAGVAL_PATTERN ||
        (q->value_mode == PDCBB_TAGVAL_BYTES && q->value_len == 0))
        return PDCBB_ERR_INVAL;
    if (q->value_mode == PDCBB_TAGVAL_PATTERN &&
        (!pdcbb_pat_text_of(q->value, q->value_len, &tl) ||
         pdcbb_pat_parse(q->value, tl, &value) != PDCBB_OK))
        return PDCBB_ERR_INVAL;
    tag_search_arg_t a = {.name = &name, .value = &value, .q = q};
    return tags_scan(q->kind, tag_search_scan, &a, &p->ids, &p->ids_count);
}

static pdcbb_err_t tag_get(const pdcbb_tag_get_req_t *q, pdcbb_tag_get_rep_t *p)
{
    const pdcbb_drain_tag_t *t = NULL;
    unsigned kind = pdcbb_meta_id_kind(q->id);
    if (kind != PDCBB_META_KIND_CONT && kind != PDCBB_META_KIND_OBJ)
        return PDCBB_ERR_BAD_ID;
    if (q->name == NULL || q->name[0] == '\0')
        return PDCBB_ERR_INVAL;
    if (kind == PDCBB_META_KIND_CONT) {
        const pdcbb_drain_cont_t *c = cont_of(q->id);
        if (c == NULL)
            return PDCBB_ERR_NOT_FOUND;
        t = tag_find(c->tags, c->ntags, q->name);
    } else {
        const pdcbb_drain_object_t *o = obj_of(q->id);
        if (o == NULL)
            return PDCBB_ERR_NOT_FOUND;
        t = tag_find(o->tags, o->ntags, q->name);
    }
    if (t == NULL)
        return PDCBB_ERR_NOT_FOUND;
    p->type = t->type;
    p->value = t->value;
    p->value_len = t->len;
    return PDCBB_OK;
}

static pdcbb_err_t cont_objids(uint64_t id, pdcbb_cont_objids_get_rep_t *p)
{
    const pdcbb_drain_cont_t *c = cont_of(id);
    if (c == NULL)
        return pdcbb_meta_id_kind(id) == PDCBB_META_KIND_CONT ? PDCBB_ERR_NOT_FOUND
                                                               : PDCBB_ERR_BAD_ID;
    uint64_t *ids = malloc(8 * ((size_t)c->nobj_ids + 1));
    if (ids == NULL)
        return PDCBB_ERR_NOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->nobj_ids; i++) {
        uint64_t mid = obj_meta_of_drained(c->obj_ids[i]);
        if (mid) /* an object not in the drain was deleted before the drain */
            ids[n++] = mid;
    }
    p->ids = ids;
    p->ids_count = n;
    return PDCBB_OK;
}

/* ------------------------------------------------------------------ data */

typedef struct read_desc {
    const pdcbb_drain_object_t *o;
    uint64_t unit;
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX];
    pdcbb_box_t box;
    uint64_t bytes;
} read_desc_t;

/* One region descriptor of a DATA_READ (the daemon's desc_parse): errors end the message. */
static pdcbb_err_t desc_parse(const uint64_t *a, uint32_t n, uint32_t *pos, read_desc_t *dd)
{
    uint32_t p = *pos;
    if (!pdcbb_range_ok(p, 3, n))
        return PDCBB_ERR_PROTO;
    uint64_t ndim = a[p + 2];
    if (ndim == 0 || ndim > PDCBB_REGION_NDIM_MAX || !pdcbb_range_ok(p, 3 + 3 * ndim, n))
        return PDCBB_ERR_PROTO;
    memset(dd, 0, sizeof(*dd));
    dd->o = obj_of(a[p]);
    dd->unit = a[p + 1];
    dd->ndim = (uint32_t)ndim;
    memcpy(dd->dims, a + p + 3, ndim * 8);
    *pos = p + 3 + 3 * (uint32_t)ndim;
    if (pdcbb_meta_id_kind(a[p]) != PDCBB_META_KIND_OBJ)
        return PDCBB_ERR_BAD_ID;
    if (dd->unit == 0 || dd->unit > 64)
        return PDCBB_ERR_BAD_REGION;
    uint64_t count;
    pdcbb_err_t rc = pdcbb_box_make(&dd->box, dd->ndim, a + p + 3 + ndim, a + p + 3 + 2 * ndim);
    if (rc == PDCBB_OK)
        rc = pdcbb_box_check_within(&dd->box, dd->ndim, dd->dims);
    if (rc == PDCBB_OK)
        rc = pdcbb_box_count(&dd->box, &count);
    if (rc == PDCBB_OK && pdcbb_mul_overflow(count, dd->unit, &dd->bytes))
        rc = PDCBB_ERR_TOO_BIG;
    return rc == PDCBB_ERR_TOO_BIG || rc == PDCBB_ERR_PROTO ? rc : rc ? PDCBB_ERR_BAD_REGION : rc;
}

/*
 * Read one region into out (dd->bytes, zeroed first). The part of the box beyond the data an
 * object holds (an unlimited first dimension, rows never written) reads as zeros, as it does
 * from a daemon.
 */
static pdcbb_err_t read_region(const read_desc_t *dd, uint8_t *out)
{
    char why[PDCBB_DRAIN_ERR_LEN] = "";
    const pdcbb_drain_object_t *o = dd->o;
    memset(out, 0, dd->bytes);
    if (o == NULL)
        return PDCBB_ERR_NOT_FOUND;
    if (dd->ndim != o->ndim || dd->unit != o->element_size)
        return PDCBB_ERR_BAD_REGION;
    uint64_t shape[PDCBB_REGION_NDIM_MAX], zero[PDCBB_REGION_NDIM_MAX] = {0};
    pdcbb_err_t rc = pdcbb_drain_object_shape(model(), o, shape);
    if (rc != PDCBB_OK)
        return rc;
    for (uint32_t d = 0; d < o->ndim; d++)
        if (shape[d] == 0)
            return PDCBB_OK; /* no data at all */
    pdcbb_box_t whole, part;
    if (pdcbb_box_make(&whole, o->ndim, zero, shape) != PDCBB_OK)
        return PDCBB_ERR_BAD_REGION;
    if (!pdcbb_box_intersect(&whole, &dd->box, &part))
        return PDCBB_OK;
    if (memcmp(&part, &dd->box, sizeof(part)) == 0) {
        rc = pdcbb_drain_read_box(model(), o, &part, out, why, sizeof(why));
    } else {
        uint64_t count;
        void *tmp = NULL;
        if (pdcbb_box_count(&part, &count) == PDCBB_OK)
            tmp = malloc(count * dd->unit);
        if (tmp == NULL)
            return PDCBB_ERR_NOMEM;
        rc = pdcbb_drain_read_box(model(), o, &part, tmp, why, sizeof(why));
        if (rc == PDCBB_OK && pdcbb_box_copy_overlap(&part, tmp, &dd->box, out, dd->unit) < 0)
            rc = PDCBB_ERR_INTERNAL;
        free(tmp);
    }
    if (rc != PDCBB_OK) {
        memset(out, 0, dd->bytes);
        PDCBB_ERROR("reading object '%s' from the drain %s: %s", o->name, client_drained_dir(),
                    why[0] ? why : pdcbb_strerror(rc));
        if (last_why[0] == '\0')
            snprintf(last_why, sizeof(last_why), "%s", why[0] ? why : pdcbb_strerror(rc));
    }
    return rc;
}

static pdcbb_err_t data_read(const pdcbb_data_read_req_t *q, pdcbb_data_read_rep_t *p,
                             void *dest, size_t dest_len, void **bulk, size_t *bulk_len)
{
    uint32_t pos = 0, n = 0;
    uint64_t total = 0;
    read_desc_t dd;
    while (pos < q->descs_count) {
        pdcbb_err_t one = desc_parse(q->descs, q->descs_count, &pos, &dd);
        if (one != PDCBB_OK)
            return one;
        if (pdcbb_add_overflow(total, dd.bytes, &total) || total > ((uint64_t)1 << 36) ||
            total > SIZE_MAX)
            return PDCBB_ERR_TOO_BIG;
        n++;
    }
    uint64_t *results = malloc(8 * ((size_t)n + 1));
    uint8_t *out = dest && total <= dest_len ? dest : malloc(total ? total : 1);
    if (results == NULL || out == NULL) {
        free(results);
        if (out != dest)
            free(out);
        return PDCBB_ERR_NOMEM;
    }
    pos = 0;
    n = 0;
    uint64_t off = 0;
    while (pos < q->descs_count) {
        desc_parse(q->descs, q->descs_count, &pos, &dd);
        results[n++] = (uint64_t)(uint32_t)read_region(&dd, out + off);
        off += dd.bytes;
    }
    p->results = results;
    p->results_count = n;
    *bulk = out;
    *bulk_len = (size_t)total;
    return PDCBB_OK;
}

/* ------------------------------------------------------------------ queries */

/* The drain as a query source: one piece at a time, read whole (read_region), then scanned. */
typedef struct drained_src {
    const uint8_t *packed; /* the piece's elements, row-major */
    size_t unit;
} drained_src_t;

static const void *drained_src_read(void *arg, uint64_t lin, uint64_t pk, uint64_t n, void *buf,
                                    pdcbb_err_t *rc)
{
    drained_src_t *s = arg;
    (void)lin;
    (void)n;
    (void)buf;
    (void)rc;
    return s->packed + pk * s->unit;
}

/* Check a query's object against the drain; fills a read descriptor for boxes of it. */
static pdcbb_err_t query_desc(uint64_t id, int type, const uint64_t *dims, uint32_t ndim,
                              read_desc_t *dd)
{
    memset(dd, 0, sizeof(*dd));
    if (pdcbb_meta_id_kind(id) != PDCBB_META_KIND_OBJ)
        return PDCBB_ERR_BAD_ID;
    if ((dd->o = obj_of(id)) == NULL)
        return PDCBB_ERR_NOT_FOUND;
    if (pdcbb_query_class(type) == PDCBB_QCLASS_NONE)
        return PDCBB_ERR_WRONG_TYPE;
    if (ndim == 0 || ndim > PDCBB_REGION_NDIM_MAX)
        return PDCBB_ERR_BAD_REGION;
    dd->unit = pdcbb_type_size(type);
    dd->ndim = ndim;
    memcpy(dd->dims, dims, 8 * (size_t)ndim);
    return PDCBB_OK;
}

static pdcbb_err_t query_eval(const pdcbb_query_eval_req_t *q, pdcbb_query_eval_rep_t *p,
                              uint64_t **owned, void **bulk, size_t *bulk_len)
{
    static uint64_t stats[3];
    read_desc_t dd;
    pdcbb_qprog_t *prog = malloc(sizeof(*prog));
    pdcbb_box_t *excl = malloc((q->pieces_count / 2 + 1) * sizeof(*excl));
    pdcbb_qscan_t s;
    memset(&s, 0, sizeof(s));
    pdcbb_err_t rc = prog && excl ? PDCBB_OK : PDCBB_ERR_NOMEM;
    if (rc == PDCBB_OK && q->mode > PDCBB_QMODE_HIST)
        rc = PDCBB_ERR_PROTO;
    if (rc == PDCBB_OK)
        rc = pdcbb_qprog_decode(q->prog, q->prog_count, q->type, prog);
    if (rc == PDCBB_OK && prog->n == 0 &&
        (q->mode == PDCBB_QMODE_HITS || q->mode == PDCBB_QMODE_COUNT))
        rc = PDCBB_ERR_PROTO;
    if (rc == PDCBB_OK)
        rc = query_desc(q->id, q->type, q->dims, q->dims_count, &dd);
    s.prog = prog;
    s.mode = q->mode;
    s.ndim = q->dims_count;
    if (rc == PDCBB_OK)
        memcpy(s.dims, q->dims, 8 * (size_t)q->dims_count);
    if (rc == PDCBB_OK && q->mode == PDCBB_QMODE_HIST) {
        double lo, incr;
        if (q->hist_count != 3 || q->hist[2] == 0 || q->hist[2] > PDCBB_QHIST_MAX) {
            rc = PDCBB_ERR_PROTO;
        } else {
            memcpy(&lo, &q->hist[0], 8);
            memcpy(&incr, &q->hist[1], 8);
            s.hist_lo = lo;
            s.hist_incr = incr;
            s.nbin = (uint32_t)q->hist[2];
            if (!(incr > 0) || lo != lo)
                rc = PDCBB_ERR_PROTO;
            else if ((s.bins = calloc(s.nbin, 8)) == NULL)
                rc = PDCBB_ERR_NOMEM;
        }
    }
    if (rc == PDCBB_OK && q->mode == PDCBB_QMODE_HITS)
        s.max_hits = q->max_hits < PDCBB_QBLOCK ? PDCBB_QBLOCK
                     : q->max_hits > (1u << 21) ? (1u << 21) : q->max_hits;
    if (rc == PDCBB_OK)
        rc = pdcbb_qscan_init(&s);
    uint32_t pos = 0;
    for (uint64_t k = 0; rc == PDCBB_OK && pos < q->pieces_count; k++) {
        uint32_t nexcl;
        rc = pdcbb_qpiece_parse(q->pieces, q->pieces_count, &pos, s.ndim, s.dims, &dd.box, excl,
                                q->pieces_count / 2 + 1, &nexcl);
        if (rc != PDCBB_OK || k < q->resume_piece)
            continue;
        uint64_t count, stop = 0;
        if (pdcbb_box_count(&dd.box, &count) != PDCBB_OK ||
            pdcbb_mul_overflow(count, dd.unit, &dd.bytes) || dd.bytes > ((uint64_t)1 << 36)) {
            rc = PDCBB_ERR_TOO_BIG;
            break;
        }
        uint8_t *buf = malloc(dd.bytes ? dd.bytes : 1);
        if (buf == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        rc = read_region(&dd, buf);
        drained_src_t ds = {.packed = buf, .unit = dd.unit};
        pdcbb_qsrc_t src = {.read = drained_src_read, .arg = &ds};
        int x = rc == PDCBB_OK ? pdcbb_qscan_piece(&s, &src, &dd.box, excl, nexcl,
                                                   k == q->resume_piece ? q->resume_elem : 0,
                                                   &stop)
                               : 0;
        free(buf);
        if (x == 1) {
            p->more = 1;
            p->next_piece = k;
            p->next_elem = stop;
            break;
        }
        if (x < 0)
            rc = (pdcbb_err_t)-x;
    }
    pdcbb_qscan_free(&s);
    free(prog);
    free(excl);
    if (rc != PDCBB_OK) {
        free(s.hits);
        free(s.bins);
        return rc;
    }
    p->count = s.nhits;
    p->scanned = s.blocks_scanned;
    p->skipped = s.blocks_skipped;
    if (q->mode == PDCBB_QMODE_STATS) {
        stats[0] = s.st.mn.bits;
        stats[1] = s.st.mx.bits;
        stats[2] = (uint64_t)s.st.has;
        p->stats = stats;
        p->stats_count = 3;
    }
    if (q->mode == PDCBB_QMODE_HIST) {
        p->bins = s.bins;
        p->bins_count = s.nbin;
        *owned = s.bins;
    }
    if (s.hits && s.nhits) {
        *bulk = s.hits;
        *bulk_len = 8 * (size_t)s.nhits;
    } else {
        free(s.hits);
    }
    return PDCBB_OK;
}

/* QUERY_VALUES: element by element from the drain. */
static pdcbb_err_t query_values(const pdcbb_query_values_req_t *q, pdcbb_query_values_rep_t *p,
                                void **bulk, size_t *bulk_len)
{
    read_desc_t dd;
    uint64_t total = 1, strides[PDCBB_REGION_NDIM_MAX];
    pdcbb_err_t rc = query_desc(q->id, q->type, q->dims, q->dims_count, &dd);
    if (rc != PDCBB_OK)
        return rc;
    for (uint32_t d = 0; d < dd.ndim; d++)
        if (dd.dims[d] == 0 || pdcbb_mul_overflow(total, dd.dims[d], &total))
            return PDCBB_ERR_BAD_REGION;
    if (pdcbb_layout_strides(dd.ndim, dd.dims, 1, strides) != PDCBB_OK)
        return PDCBB_ERR_BAD_REGION;
    uint8_t *out = malloc((size_t)q->idx_count * dd.unit + 1);
    if (out == NULL)
        return PDCBB_ERR_NOMEM;
    dd.bytes = dd.unit;
    for (uint32_t i = 0; i < q->idx_count && rc == PDCBB_OK; i++) {
        uint64_t l = q->idx[i], one[PDCBB_REGION_NDIM_MAX];
        if (l >= total) {
            rc = PDCBB_ERR_BAD_REGION;
            break;
        }
        for (uint32_t d = 0; d < dd.ndim; d++) {
            dd.box.off[d] = l / strides[d];
            l %= strides[d];
            one[d] = 1;
        }
        memcpy(dd.box.size, one, 8 * (size_t)dd.ndim);
        dd.box.ndim = dd.ndim;
        rc = read_region(&dd, out + (size_t)i * dd.unit);
    }
    if (rc != PDCBB_OK) {
        free(out);
        return rc;
    }
    p->count = q->idx_count;
    *bulk = out;
    *bulk_len = (size_t)q->idx_count * dd.unit;
    return PDCBB_OK;
}

/* ------------------------------------------------------------------ dispatch */

/* Every reply body the virtual daemon can build (the largest is enough for each op). */
typedef union drained_rep {
#define CLIENT_X_REP(OP, val, lname, RQ, RP, ...) pdcbb_##lname##_rep_t lname;
    PDCBB_OPS(CLIENT_X_REP)
#undef CLIENT_X_REP
} drained_rep_t;

/* Fill rep for op; arrays it allocates are listed in *owned (freed by the caller). */
static pdcbb_err_t answer(unsigned op, const void *req, drained_rep_t *rep, uint64_t **owned,
                          void *dest, size_t dest_len, void **bulk, size_t *bulk_len)
{
    const pdcbb_drain_t *m = model();
    const pdcbb_op_props_t *props = pdcbb_op_props(op);
    pdcbb_err_t rc;
    /* The drained mode column of op's row: refused, or answered below. */
    if (props == NULL)
        return PDCBB_ERR_BAD_OP;
    if (props->drained == PDCBB_DRAINED_READ_ONLY)
        return PDCBB_ERR_READ_ONLY;
    if (props->drained != PDCBB_DRAINED_ANSWER)
        return PDCBB_ERR_UNSUPPORTED;
    switch (op) {
    case PDCBB_OP_HELLO:
        rep->hello.rank = 0;
        rep->hello.nservers = 1;
        rep->hello.job_id = m->job_id;
        rep->hello.node = client_g.node;
        /* No daemon and no token: nothing to prove (an empty nonce and proof), and AUTH
         * below is answered OK, as an in-process connection is always authenticated. */
        return PDCBB_OK;
    case PDCBB_OP_AUTH:
        return PDCBB_OK;
    case PDCBB_OP_STATS:
        rep->stats.rank = 0;
        rep->stats.requests = served;
        rep->stats.containers = m->nconts;
        rep->stats.objects = m->nobjs;
        return PDCBB_OK;
    case PDCBB_OP_CONT_OPEN: {
        const pdcbb_cont_open_req_t *q = req;
        const pdcbb_drain_cont_t *c = q->name ? pdcbb_drain_find_cont(m, q->name) : NULL;
        if (c == NULL)
            return q->name && q->name[0] ? PDCBB_ERR_NOT_FOUND : PDCBB_ERR_INVAL;
        rep->cont_open.id = cont_meta((uint32_t)(c - m->conts));
        return PDCBB_OK;
    }
    case PDCBB_OP_CONT_INFO: {
        const pdcbb_cont_info_req_t *q = req;
        const pdcbb_drain_cont_t *c = cont_of(q->id);
        if (c == NULL)
            return pdcbb_meta_id_kind(q->id) == PDCBB_META_KIND_CONT ? PDCBB_ERR_NOT_FOUND
                                                                      : PDCBB_ERR_BAD_ID;
        rep->cont_info.id = q->id;
        rep->cont_info.name = c->name;
        rep->cont_info.lifetime = c->lifetime;
        return PDCBB_OK;
    }
    case PDCBB_OP_CONT_LIST: {
        const pdcbb_cont_list_req_t *q = req;
        rc = list_ids(PDCBB_META_KIND_CONT, q->after, q->max, 0, &rep->cont_list.ids,
                      &rep->cont_list.ids_count, &rep->cont_list.more);
        *owned = rep->cont_list.ids;
        return rc;
    }
    case PDCBB_OP_OBJ_LIST: {
        const pdcbb_obj_list_req_t *q = req;
        if (q->cont_id != 0 && pdcbb_meta_id_kind(q->cont_id) != PDCBB_META_KIND_CONT)
            return PDCBB_ERR_WRONG_TYPE;
        rc = list_ids(PDCBB_META_KIND_OBJ, q->after, q->max, q->cont_id, &rep->obj_list.ids,
                      &rep->obj_list.ids_count, &rep->obj_list.more);
        *owned = rep->obj_list.ids;
        return rc;
    }
    case PDCBB_OP_CONT_OBJIDS_GET: {
        const pdcbb_cont_objids_get_req_t *q = req;
        rc = cont_objids(q->id, &rep->cont_objids_get);
        *owned = rep->cont_objids_get.ids;
        return rc;
    }
    case PDCBB_OP_TAG_GET: return tag_get(req, &rep->tag_get);
    case PDCBB_OP_TAG_QUERY:
        rc = tag_query(req, &rep->tag_query);
        *owned = rep->tag_query.ids;
        return rc;
    case PDCBB_OP_TAG_SEARCH:
        rc = tag_search(req, &rep->tag_search);
        *owned = rep->tag_search.ids;
        return rc;
    case PDCBB_OP_OBJ_OPEN: {
        const pdcbb_obj_open_req_t *q = req;
        const pdcbb_drain_object_t *o = q->name ? pdcbb_drain_find_object(m, q->name) : NULL;
        if (o == NULL)
            return q->name && q->name[0] ? PDCBB_ERR_NOT_FOUND : PDCBB_ERR_INVAL;
        /* The two reply structs share one field list: the union's common initial sequence. */
        obj_info_fill((uint32_t)(o - m->objs), &rep->obj_info);
        return PDCBB_OK;
    }
    case PDCBB_OP_OBJ_INFO: {
        const pdcbb_obj_info_req_t *q = req;
        int64_t i = meta_index(q->id, PDCBB_META_KIND_OBJ);
        if (i < 0)
            return pdcbb_meta_id_kind(q->id) == PDCBB_META_KIND_OBJ ? PDCBB_ERR_NOT_FOUND
                                                                     : PDCBB_ERR_BAD_ID;
        obj_info_fill((uint32_t)i, &rep->obj_info);
        return PDCBB_OK;
    }
    case PDCBB_OP_OBJ_EXTENT: {
        /* The extent the drain kept (current_dims), as pdcbb_drain_object_shape gives it. */
        const pdcbb_obj_extent_req_t *q = req;
        const pdcbb_drain_object_t *o = obj_of(q->id);
        if (o == NULL)
            return pdcbb_meta_id_kind(q->id) == PDCBB_META_KIND_OBJ ? PDCBB_ERR_NOT_FOUND
                                                                     : PDCBB_ERR_BAD_ID;
        if (o->ndim == 0 || o->dims[0] != PDCBB_DIM_UNLIMITED)
            return PDCBB_ERR_UNSUPPORTED;
        uint64_t *dims = malloc(PDCBB_REGION_NDIM_MAX * sizeof(uint64_t));
        if (dims == NULL)
            return PDCBB_ERR_NOMEM;
        *owned = dims;
        if ((rc = pdcbb_drain_object_shape(m, o, dims)) != PDCBB_OK)
            return rc;
        rep->obj_extent.dims = dims;
        rep->obj_extent.dims_count = o->ndim;
        return PDCBB_OK;
    }
    case PDCBB_OP_DATA_READ:
        rc = data_read(req, &rep->data_read, dest, dest_len, bulk, bulk_len);
        *owned = rep->data_read.results;
        return rc;
    case PDCBB_OP_DATA_FLUSH:
        return PDCBB_OK; /* nothing was written, nothing to flush */
    case PDCBB_OP_QUERY_EVAL:
        return query_eval(req, &rep->query_eval, owned, bulk, bulk_len);
    case PDCBB_OP_QUERY_VALUES:
        return query_values(req, &rep->query_values, bulk, bulk_len);
    case PDCBB_OP_MAP_GET: {
        /* REGION_DYNAMIC / REGION_LOCAL reads ask where the box was written: all of it is on
         * the one virtual daemon (which applies the drained placement map itself). */
        const pdcbb_map_get_req_t *q = req;
        if (meta_index(q->id, PDCBB_META_KIND_OBJ) < 0)
            return pdcbb_meta_id_kind(q->id) == PDCBB_META_KIND_OBJ ? PDCBB_ERR_NOT_FOUND
                                                                     : PDCBB_ERR_BAD_ID;
        if (q->box_count < 3 || q->box[0] == 0 || q->box[0] > PDCBB_REGION_NDIM_MAX ||
            q->box_count != 1 + 2 * q->box[0])
            return PDCBB_ERR_PROTO;
        uint64_t *e = malloc((2 + (size_t)q->box_count) * sizeof(uint64_t));
        if (e == NULL)
            return PDCBB_ERR_NOMEM;
        e[0] = 1; /* seq */
        e[1] = 0; /* daemon */
        memcpy(e + 2, q->box, (size_t)q->box_count * sizeof(uint64_t)); /* ndim, off, size */
        rep->map_get.entries = e;
        rep->map_get.entries_count = 2 + q->box_count;
        *owned = e;
        return PDCBB_OK;
    }
    case PDCBB_OP_KV_OPEN:
    case PDCBB_OP_KV_GET:
    case PDCBB_OP_KV_COUNT:
    case PDCBB_OP_KV_LIST:
        /* KV objects: client_drained_kv.c, from the drain's KV dumps */
        return client_drained_kv_answer(op, req, rep, owned);
    default:
        /* A row says ANSWER and no case answers it (tests/unit/test_drained_ops.c). */
        PDCBB_ERROR("drained mode: %s is marked answered but has no answer", props->name);
        return PDCBB_ERR_INTERNAL;
    }
}

pdcbb_err_t client_drained_serve(unsigned op, uint64_t req_id, const void *req, void *dest,
                                 size_t dest_len, void **ctrl, size_t *ctrl_len, void **bulk,
                                 size_t *bulk_len)
{
    drained_rep_t rep;
    uint64_t *owned = NULL;
    void *data = NULL;
    size_t data_len = 0;
    memset(&rep, 0, sizeof(rep));
    *ctrl = *bulk = NULL;
    *ctrl_len = *bulk_len = 0;
    served++;
    last_why[0] = '\0';
    pdcbb_err_t status = answer(op, req, &rep, &owned, dest, dest_len, &data, &data_len);
    if (status != PDCBB_OK && data) {
        if (data != dest)
            free(data);
        data = NULL;
        data_len = 0;
    }
    pdcbb_msg_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.magic = PDCBB_PROTO_MAGIC;
    h.version = PDCBB_PROTO_VERSION;
    h.op = (uint16_t)op;
    h.req_id = req_id;
    h.flags = PDCBB_MSG_FLAG_REPLY;
    h.status = (int32_t)status;
    /* An error reply is a header only, as the daemons send it. */
    pdcbb_err_t rc = pdcbb_msg_build(&h, status == PDCBB_OK ? &rep : NULL, ctrl, ctrl_len);
    free(owned);
    if (rc != PDCBB_OK) {
        if (data && data != dest)
            free(data);
        *ctrl = NULL;
        return rc;
    }
    *bulk = data;
    *bulk_len = data_len;
    return PDCBB_OK;
}
