/*
 * bbd_stage_in.c - load a drained job (cfg.stage_in, docs/DRAIN-FORMAT.md) into this daemon
 * before it serves anyone.
 *
 * Every daemon of the new job reads the same manifest and loads only its own share, so nodes
 * stage in independently and in parallel, whatever the node counts of the two jobs:
 *   - ids: the new ids are what the home daemons' handlers assign when each creates the
 *     containers, then the objects, homed on it (pdcbb_home_server of the name) in manifest
 *     order; every daemon computes the whole table the same way, so a data daemon knows the
 *     new id of an object homed elsewhere;
 *   - metadata (containers, objects, tags, PDCcont_put_objids lists) goes through the ordinary
 *     handlers (bbd_meta.c), in one transaction;
 *   - data is placed as clients will look for it (client_transfer.h): PDC_OBJ_STATIC on the
 *     home daemon, PDC_REGION_STATIC stripe k on daemon k, REGION_DYNAMIC / REGION_LOCAL on the
 *     home daemon with one placement map entry for the whole object. It is assembled from the
 *     drain (pdcbb_drain_read_box applies extents and maps) in slabs of at most 64 MiB and
 *     written into the object files in place; all-zero 4 KiB blocks are left as holes
 *     (never-written elements read as zero either way, and holes take no capacity).
 * Then the drained job's filesystem tree (the mount's, from its ns files) is made again, each
 * file naming its staged object (bbd_stage_in_ns.c), so the job's mount shows the files.
 * Data files are synced before the transaction that records them commits, and the transaction
 * records "stage_in_done": a daemon restarted later in the job (or after a crash during the
 * load, which commits nothing) does the right thing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bbd.h"
#include "bbd_stage_in_kv.h"
#include "bbd_stage_in_ns.h"
#include "pdcbb_checked.h"
#include "pdcbb_drain.h"
#include "pdcbb_kv.h"
#include "pdcbb_log.h"
#include "pdcbb_name.h"

#define SLAB_MAX ((uint64_t)64 << 20)
#define ZERO_BLOCK 4096u
#define DONE_KEY "stage_in_done"

typedef struct id_pair {
    uint64_t old;    /* id in the drained job */
    uint64_t new_id; /* id in this job (0: not staged) */
} id_pair_t;

typedef struct stage {
    bbd_t *d;
    bbd_req_t r;
    pdcbb_drain_t *m;
    uint64_t *cont_ids; /* new id of m->conts[i] */
    uint64_t *obj_ids;  /* new id of m->objs[i] (0: not staged) */
    id_pair_t *cont_map; /* the same, sorted by drained id */
    id_pair_t *obj_map;
    uint64_t *kv_ids;   /* new id of m->kvs[i] (0: not staged), bbd_stage_in_kv.c */
    uint64_t *kv_conts; /* its new container id */
    uint64_t *seq;      /* per daemon: the last sequence number the plan gave out there */
    uint8_t *buf;
    uint64_t bytes;     /* data bytes written */
    char *err;
    size_t errlen;
} stage_t;

/* pdc_region_partition_t values (pdc.h) */
enum { PART_REGION_STATIC = 1, PART_REGION_DYNAMIC = 2, PART_REGION_LOCAL = 3, PART_STRIPED = 4 };

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((format(printf, 3, 4))) static pdcbb_err_t stage_fail(stage_t *s, pdcbb_err_t rc,
                                                                     const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(s->err, s->errlen, "stage-in from %s: %s: %s", s->d->cfg.stage_in, msg,
             pdcbb_strerror(rc));
    return rc;
}

static int id_pair_cmp(const void *a, const void *b)
{
    uint64_t x = ((const id_pair_t *)a)->old, y = ((const id_pair_t *)b)->old;
    return x < y ? -1 : x > y;
}

static uint64_t id_lookup(const id_pair_t *p, uint32_t n, uint64_t old)
{
    id_pair_t key = {.old = old};
    const id_pair_t *hit = n ? bsearch(&key, p, n, sizeof(*p), id_pair_cmp) : NULL;
    return hit ? hit->new_id : 0;
}

static uint64_t new_cont_id(stage_t *s, uint64_t old)
{
    return id_lookup(s->cont_map, s->m->nconts, old);
}

static uint64_t new_obj_id(stage_t *s, uint64_t old)
{
    return id_lookup(s->obj_map, s->m->nobjs, old);
}

static uint64_t new_obj_id_of(void *arg, uint64_t old)
{
    return new_obj_id(arg, old);
}

/* The ids the home daemons' bbd_meta_next_id will hand out, in creation order. */
static pdcbb_err_t plan_ids(stage_t *s)
{
    unsigned n = s->d->nservers;
    uint32_t nc = s->m->nconts, no = s->m->nobjs;
    uint64_t *seq = s->seq = calloc(n, sizeof(*seq));
    s->cont_ids = calloc(nc + 1, sizeof(uint64_t));
    s->obj_ids = calloc(no + 1, sizeof(uint64_t));
    s->cont_map = malloc((nc + 1) * sizeof(id_pair_t));
    s->obj_map = malloc((no + 1) * sizeof(id_pair_t));
    if (seq == NULL || s->cont_ids == NULL || s->obj_ids == NULL || s->cont_map == NULL ||
        s->obj_map == NULL)
        return PDCBB_ERR_NOMEM;
    for (uint32_t i = 0; i < nc; i++) {
        unsigned home = pdcbb_home_server(s->m->conts[i].name, n);
        s->cont_ids[i] = pdcbb_meta_id_make(PDCBB_META_KIND_CONT, home, ++seq[home]);
        s->cont_map[i] = (id_pair_t){s->m->conts[i].id, s->cont_ids[i]};
    }
    qsort(s->cont_map, nc, sizeof(id_pair_t), id_pair_cmp);
    for (uint32_t i = 0; i < no; i++) {
        const pdcbb_drain_object_t *o = &s->m->objs[i];
        unsigned home = pdcbb_home_server(o->name, n);
        if (new_cont_id(s, o->cont_id) == 0) {
            if (home == s->d->rank)
                PDCBB_WARN("stage-in: object '%s' is not staged: its container (id %" PRIu64
                           ") is not in the drain",
                           pdcbb_esc(o->name), o->cont_id);
        } else {
            s->obj_ids[i] = pdcbb_meta_id_make(PDCBB_META_KIND_OBJ, home, ++seq[home]);
        }
        s->obj_map[i] = (id_pair_t){o->id, s->obj_ids[i]};
    }
    qsort(s->obj_map, no, sizeof(id_pair_t), id_pair_cmp);
    /* KV objects: created on their home daemons after the objects (bbd_stage_in_kv.c) */
    s->kv_ids = calloc(s->m->nkvs + 1, sizeof(uint64_t));
    s->kv_conts = calloc(s->m->nkvs + 1, sizeof(uint64_t));
    if (s->kv_ids == NULL || s->kv_conts == NULL)
        return PDCBB_ERR_NOMEM;
    for (uint32_t i = 0; i < s->m->nkvs; i++) {
        const pdcbb_drain_kv_t *k = &s->m->kvs[i];
        unsigned home = pdcbb_home_server(k->name, n);
        s->kv_conts[i] = new_cont_id(s, k->cont_id);
        if (s->kv_conts[i] == 0) {
            if (home == s->d->rank)
                PDCBB_WARN("stage-in: KV object '%s' is not staged: its container (id %" PRIu64
                           ") is not in the drain",
                           pdcbb_esc(k->name), k->cont_id);
            continue;
        }
        s->kv_ids[i] = pdcbb_meta_id_make(PDCBB_META_KIND_KV, home, ++seq[home]);
    }
    return PDCBB_OK; /* seq goes on for the filesystem's tree (bbd_stage_in_ns.c) */
}

static pdcbb_err_t put_tags(stage_t *s, uint64_t id, const pdcbb_drain_tag_t *tags, uint32_t n)
{
    for (uint32_t t = 0; t < n; t++) {
        pdcbb_tag_put_req_t q = {.id = id, .name = tags[t].name, .type = tags[t].type,
                                 .value = tags[t].value, .value_len = tags[t].len};
        pdcbb_tag_put_rep_t p;
        pdcbb_err_t rc = bbd_op_tag_put(&s->r, &q, &p);
        bbd_req_scratch_free(&s->r);
        if (rc != PDCBB_OK)
            return stage_fail(s, rc, "tag '%s'", pdcbb_esc(tags[t].name));
    }
    return PDCBB_OK;
}

static pdcbb_err_t stage_conts(stage_t *s)
{
    pdcbb_err_t rc;
    for (uint32_t i = 0; i < s->m->nconts; i++) {
        const pdcbb_drain_cont_t *c = &s->m->conts[i];
        if (pdcbb_meta_id_server(s->cont_ids[i]) != s->d->rank)
            continue;
        pdcbb_cont_create_req_t q = {.name = c->name, .lifetime = c->lifetime};
        pdcbb_cont_create_rep_t p;
        rc = bbd_op_cont_create(&s->r, &q, &p);
        bbd_req_scratch_free(&s->r);
        if (rc != PDCBB_OK)
            return stage_fail(s, rc, "container '%s'", pdcbb_esc(c->name));
        if (p.id != s->cont_ids[i])
            return stage_fail(s, PDCBB_ERR_INTERNAL, "container '%s' got an unexpected id",
                              pdcbb_esc(c->name));
        if ((rc = put_tags(s, p.id, c->tags, c->ntags)) != PDCBB_OK)
            return rc;
    }
    return PDCBB_OK;
}

/* Object lists of containers (PDCcont_put_objids), after the objects exist everywhere. */
static pdcbb_err_t stage_objids(stage_t *s)
{
    for (uint32_t i = 0; i < s->m->nconts; i++) {
        const pdcbb_drain_cont_t *c = &s->m->conts[i];
        if (pdcbb_meta_id_server(s->cont_ids[i]) != s->d->rank || c->nobj_ids == 0)
            continue;
        uint64_t *ids = malloc(c->nobj_ids * sizeof(uint64_t));
        uint32_t n = 0;
        if (ids == NULL)
            return PDCBB_ERR_NOMEM;
        for (uint32_t k = 0; k < c->nobj_ids; k++) {
            uint64_t id = new_obj_id(s, c->obj_ids[k]);
            if (id != 0)
                ids[n++] = id;
        }
        pdcbb_cont_objids_put_req_t q = {.id = s->cont_ids[i], .ids = ids, .ids_count = n};
        pdcbb_cont_objids_put_rep_t p;
        pdcbb_err_t rc = n ? bbd_op_cont_objids_put(&s->r, &q, &p) : PDCBB_OK;
        bbd_req_scratch_free(&s->r);
        free(ids);
        if (rc != PDCBB_OK)
            return stage_fail(s, rc, "object list of container '%s'", pdcbb_esc(c->name));
    }
    return PDCBB_OK;
}

static pdcbb_err_t stage_obj_meta(stage_t *s, uint32_t i)
{
    const pdcbb_drain_object_t *o = &s->m->objs[i];
    pdcbb_obj_create_req_t q = {
        .cont_id = new_cont_id(s, o->cont_id), .name = o->name, .type = o->type,
        .partition = o->partition, .consistency = o->consistency, .user_id = o->user_id,
        .time_step = o->time_step, .dims = (uint64_t *)o->dims, .dims_count = o->ndim,
        .app_name = o->app_name, .data_loc = o->data_loc, .tags = o->tags_str};
    pdcbb_obj_create_rep_t p;
    pdcbb_err_t rc = bbd_op_obj_create(&s->r, &q, &p);
    uint64_t got = p.id;
    bbd_req_scratch_free(&s->r);
    if (rc != PDCBB_OK)
        return stage_fail(s, rc, "object '%s'", pdcbb_esc(o->name));
    if (got != s->obj_ids[i])
        return stage_fail(s, PDCBB_ERR_INTERNAL, "object '%s' got an unexpected id",
                          pdcbb_esc(o->name));
    if (o->ndim > 0 && o->dims[0] == PDCBB_DIM_UNLIMITED) {
        /* The drained extent (current_dims, else the data's reach) goes on growing here. */
        uint64_t shape[PDCBB_REGION_NDIM_MAX];
        if ((rc = pdcbb_drain_object_shape(s->m, o, shape)) != PDCBB_OK ||
            (shape[0] > 0 && (rc = bbd_extent_set(&s->r, got, shape[0])) != PDCBB_OK))
            return stage_fail(s, rc, "object '%s': extent", pdcbb_esc(o->name));
    }
    return put_tags(s, got, o->tags, o->ntags);
}

static int all_zero(const uint8_t *p, size_t n)
{
    static const uint8_t zero[ZERO_BLOCK];
    while (n >= ZERO_BLOCK) {
        if (memcmp(p, zero, ZERO_BLOCK) != 0)
            return 0;
        p += ZERO_BLOCK;
        n -= ZERO_BLOCK;
    }
    return n == 0 || memcmp(p, zero, n) == 0;
}

typedef struct write_ctx {
    int fd;
    const uint8_t *src;
    int err;
} write_ctx_t;

/* One contiguous run of a slab: write its non-zero blocks (file-aligned) in place. */
static int write_run(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    write_ctx_t *w = arg;
    uint64_t pos = 0;
    while (pos < len) {
        /* up to the next ZERO_BLOCK boundary of the file, so holes stay block-aligned */
        uint64_t here = array_off + pos;
        uint64_t n = ZERO_BLOCK - here % ZERO_BLOCK;
        uint64_t start = pos;
        if (n > len - pos)
            n = len - pos;
        int zero = all_zero(w->src + packed_off + pos, n);
        pos += n;
        /* extend a non-zero stretch as far as it goes, for one large pwrite */
        while (!zero && pos < len) {
            uint64_t m = len - pos < ZERO_BLOCK ? len - pos : ZERO_BLOCK;
            if (all_zero(w->src + packed_off + pos, m))
                break;
            pos += m;
        }
        if (zero)
            continue;
        const uint8_t *p = w->src + packed_off + start;
        uint64_t left = pos - start, off = array_off + start;
        while (left > 0) {
            ssize_t k = pwrite(w->fd, p, left, (off_t)off);
            if (k < 0) {
                if (errno == EINTR)
                    continue;
                w->err = errno;
                return -1;
            }
            p += k;
            off += (uint64_t)k;
            left -= (uint64_t)k;
        }
    }
    return 0;
}

/* Write box of object o (new id id) into this daemon's data file, slab by slab. */
/* Read one slab of o from the drain and write it into fd. */
static pdcbb_err_t stage_slab(stage_t *s, const pdcbb_drain_object_t *o, int fd,
                              const char *path, const pdcbb_box_t *slab, const uint64_t *shape)
{
    char err[PDCBB_DRAIN_ERR_LEN];
    uint64_t count = 0;
    pdcbb_err_t rc = pdcbb_drain_read_box(s->m, o, slab, s->buf, err, sizeof(err));
    if (rc != PDCBB_OK)
        return stage_fail(s, rc, "%s", err);
    write_ctx_t w = {.fd = fd, .src = s->buf};
    if (pdcbb_box_runs(slab, o->ndim, shape, o->element_size, write_run, &w) != 0) {
        rc = w.err ? pdcbb_err_from_errno(w.err) : PDCBB_ERR_BAD_REGION;
        return stage_fail(s, rc, "writing %s", path);
    }
    pdcbb_box_count(slab, &count);
    s->bytes += count * o->element_size;
    return PDCBB_OK;
}

/*
 * Write box of object o (new id id) into this daemon's data file in slabs of at most SLAB_MAX
 * bytes: whole rows along dimension 0 when a row fits, else single positions of the leading
 * dimensions and chunks of the first dimension whose trailing slice fits.
 */
static pdcbb_err_t stage_box(stage_t *s, const pdcbb_drain_object_t *o, uint64_t id,
                             const pdcbb_box_t *box, const uint64_t *shape)
{
    char path[PATH_MAX + 64];
    uint32_t k = 0; /* the dimension slabs are cut along */
    uint64_t slice = o->element_size; /* bytes of one index of dimension k */
    for (uint32_t j = box->ndim; j-- > 0;) {
        k = j;
        if (j == 0 || slice * box->size[j] > SLAB_MAX)
            break;
        slice *= box->size[j];
    }
    uint64_t per_slab = slice >= SLAB_MAX ? 1 : SLAB_MAX / slice;
    bbd_data_path(s->d, id, path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return stage_fail(s, pdcbb_err_from_errno(errno), "%s", path);
    pdcbb_err_t rc = PDCBB_OK;
    uint64_t pos[PDCBB_REGION_NDIM_MAX] = {0}; /* position in the dimensions before k */
    for (int more = 1; more && rc == PDCBB_OK;) {
        for (uint64_t c = 0; c < box->size[k] && rc == PDCBB_OK; c += per_slab) {
            pdcbb_box_t slab = *box;
            for (uint32_t j = 0; j < k; j++) {
                slab.off[j] = box->off[j] + pos[j];
                slab.size[j] = 1;
            }
            slab.off[k] = box->off[k] + c;
            slab.size[k] = box->size[k] - c < per_slab ? box->size[k] - c : per_slab;
            rc = stage_slab(s, o, fd, path, &slab, shape);
        }
        more = 0; /* next position of the leading dimensions (an odometer) */
        for (uint32_t j = k; j-- > 0;) {
            if (++pos[j] < box->size[j]) {
                more = 1;
                break;
            }
            pos[j] = 0;
        }
    }
    if (rc == PDCBB_OK && fdatasync(fd) != 0)
        rc = stage_fail(s, pdcbb_err_from_errno(errno), "syncing %s", path);
    close(fd);
    return rc;
}

static int stage_k_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* PDCBB_REGION_STRIPED: this daemon's stripes (k with (home + k) mod n == rank, as the client
 * places them) among those the drained extents touch (a file's object is 2^50 bytes: its
 * stripes are not walked one by one). */
static pdcbb_err_t stage_striped(stage_t *s, const pdcbb_drain_object_t *o, uint64_t id,
                                 const pdcbb_box_t *whole, const uint64_t *shape)
{
    unsigned n = s->d->nservers, home = pdcbb_meta_id_server(id);
    uint64_t row = o->element_size, first, count;
    for (uint32_t d = 1; d < o->ndim; d++)
        if (pdcbb_mul_overflow(row, shape[d], &row))
            row = 0;
    uint64_t rows = pdcbb_stripe_rows(row), stripe_bytes = rows * row;
    pdcbb_drain_object_extents(s->m, o->id, &first, &count);
    if (rows == 0)
        return stage_fail(s, PDCBB_ERR_INVAL, "object '%s': rows too large to stripe",
                          pdcbb_esc(o->name));
    uint64_t *ks = NULL;
    size_t nk = 0, cap = 0;
    for (uint64_t e = first; e < first + count; e++) {
        const pdcbb_drain_extent_t *x = &s->m->extents[e];
        for (uint64_t k = x->object_offset / stripe_bytes;
             k <= (x->object_offset + x->length - 1) / stripe_bytes; k++) {
            if (pdcbb_stripe_daemon(k, home, n) != s->d->rank)
                continue;
            if (nk == cap) {
                uint64_t *g = realloc(ks, (cap = cap ? 2 * cap : 64) * sizeof(*ks));
                if (g == NULL) {
                    free(ks);
                    return stage_fail(s, PDCBB_ERR_NOMEM, "object '%s': stripes",
                                      pdcbb_esc(o->name));
                }
                ks = g;
            }
            ks[nk++] = k;
        }
    }
    qsort(ks, nk, sizeof(*ks), stage_k_cmp);
    pdcbb_err_t rc = PDCBB_OK;
    int wrote = 0;
    for (size_t i = 0; i < nk && rc == PDCBB_OK; i++) {
        pdcbb_box_t part;
        if ((i > 0 && ks[i] == ks[i - 1]) || !pdcbb_box_stripe_part(whole, rows, ks[i], &part))
            continue;
        if (!wrote) {
            rc = bbd_data_layout_create(&s->r, id, o->element_size, o->ndim, o->dims);
            bbd_req_scratch_free(&s->r);
            if (rc != PDCBB_OK) {
                rc = stage_fail(s, rc, "object '%s': layout", pdcbb_esc(o->name));
                break;
            }
            wrote = 1;
        }
        rc = stage_box(s, o, id, &part, shape);
    }
    free(ks);
    return rc;
}

/* The data of object i this daemon holds under the new job's placement. */
static pdcbb_err_t stage_obj_data(stage_t *s, uint32_t i)
{
    const pdcbb_drain_object_t *o = &s->m->objs[i];
    uint64_t id = s->obj_ids[i], shape[PDCBB_REGION_NDIM_MAX], zero[PDCBB_REGION_NDIM_MAX] = {0};
    unsigned n = s->d->nservers, home = pdcbb_meta_id_server(id);
    pdcbb_err_t rc = pdcbb_drain_object_shape(s->m, o, shape);
    if (rc != PDCBB_OK)
        return stage_fail(s, rc, "object '%s': shape", pdcbb_esc(o->name));
    if (pdcbb_drain_object_bytes(s->m, o) == 0 || shape[0] == 0)
        return PDCBB_OK;
    pdcbb_box_t whole;
    if ((rc = pdcbb_box_make(&whole, o->ndim, zero, shape)) != PDCBB_OK)
        return stage_fail(s, rc, "object '%s': shape", pdcbb_esc(o->name));

    pdcbb_box_t mine[1];
    pdcbb_box_t *parts = NULL;
    unsigned *stripe = NULL;
    int nparts = 0;
    if (o->partition == PART_REGION_STATIC && n > 1) {
        int dim = -1;
        for (uint32_t k = 0; k < o->ndim && dim < 0; k++)
            if (o->dims[k] != PDCBB_DIM_UNLIMITED && o->dims[k] >= n)
                dim = (int)k;
        if (dim >= 0) {
            parts = malloc(n * sizeof(*parts));
            stripe = malloc(n * sizeof(*stripe));
            nparts = parts && stripe ? pdcbb_box_split_stripes(&whole, (uint32_t)dim,
                                                               o->dims[dim], n, parts, stripe)
                                     : -1;
            if (nparts < 0) {
                free(parts);
                free(stripe);
                return stage_fail(s, PDCBB_ERR_NOMEM, "object '%s': stripes", pdcbb_esc(o->name));
            }
        }
    }
    if (o->partition == PART_STRIPED && n > 1)
        return stage_striped(s, o, id, &whole, shape);
    if (parts == NULL) { /* everything on the home daemon */
        if (home != s->d->rank)
            return PDCBB_OK;
        mine[0] = whole;
        parts = mine;
        nparts = 1;
    }
    int wrote = 0;
    for (int k = 0; k < nparts && rc == PDCBB_OK; k++) {
        if (parts != mine && stripe[k] % n != s->d->rank)
            continue;
        if (!wrote) {
            rc = bbd_data_layout_create(&s->r, id, o->element_size, o->ndim, o->dims);
            bbd_req_scratch_free(&s->r);
            if (rc != PDCBB_OK) {
                stage_fail(s, rc, "object '%s': layout", pdcbb_esc(o->name));
                break;
            }
            wrote = 1;
        }
        rc = stage_box(s, o, id, &parts[k], shape);
    }
    if (parts != mine) {
        free(parts);
        free(stripe);
    }
    /* Remembered placements: one entry, the whole object, here. */
    if (rc == PDCBB_OK && wrote && (o->partition == PART_REGION_DYNAMIC || o->partition == PART_REGION_LOCAL)) {
        uint64_t e[3 + 2 * PDCBB_REGION_NDIM_MAX];
        e[0] = s->d->rank;
        e[1] = pdcbb_drain_object_bytes(s->m, o);
        e[2] = o->ndim;
        memcpy(e + 3, whole.off, 8 * (size_t)o->ndim);
        memcpy(e + 3 + o->ndim, whole.size, 8 * (size_t)o->ndim);
        pdcbb_map_put_req_t q = {.id = id, .entries = e, .entries_count = 3 + 2 * o->ndim};
        pdcbb_map_put_rep_t p;
        rc = bbd_op_map_put(&s->r, &q, &p);
        bbd_req_scratch_free(&s->r);
        if (rc != PDCBB_OK)
            stage_fail(s, rc, "object '%s': placement map", pdcbb_esc(o->name));
    }
    return rc;
}

pdcbb_err_t bbd_stage_in(bbd_t *d, char *err, size_t errlen)
{
    if (d->cfg.stage_in[0] == '\0')
        return PDCBB_OK;
    stage_t s = {.d = d, .err = err, .errlen = errlen, .r = {.d = d}};
    const pdcbb_store_ops_t *ops = d->store_ops;
    pdcbb_val_t key = {DONE_KEY, strlen(DONE_KEY)}, v;
    pdcbb_err_t rc = ops->txn_begin(d->store, PDCBB_TXN_WRITE, &s.r.txn);
    if (rc != PDCBB_OK) {
        snprintf(err, errlen, "stage-in: cannot open the store: %s", pdcbb_strerror(rc));
        return rc;
    }
    if (ops->get(s.r.txn, PDCBB_T_STATE, key, &v) == PDCBB_OK) {
        PDCBB_INFO("stage-in from %s was done before this start (restart): not repeated",
                   d->cfg.stage_in);
        ops->txn_abort(s.r.txn);
        return PDCBB_OK;
    }
    uint64_t conts = 0, objs = 0;
    if ((rc = bbd_meta_counts(&s.r, &conts, &objs)) != PDCBB_OK || conts + objs != 0) {
        ops->txn_abort(s.r.txn);
        snprintf(err, errlen,
                 "stage-in from %s: the store of rank %u already holds %llu containers and %llu "
                 "objects",
                 d->cfg.stage_in, d->rank, (unsigned long long)conts, (unsigned long long)objs);
        return rc != PDCBB_OK ? rc : PDCBB_ERR_EXISTS;
    }
    double t0 = now_seconds();
    char derr[PDCBB_DRAIN_ERR_LEN];
    if ((rc = pdcbb_drain_open(d->cfg.stage_in, 0, &s.m, derr, sizeof(derr))) != PDCBB_OK) {
        ops->txn_abort(s.r.txn);
        snprintf(err, errlen, "stage-in from %s: %s", d->cfg.stage_in, derr);
        return rc;
    }
    /* never load a drain someone other than its owner could have changed, nor one that is
     * not the job user's own (or stage_in_owner's) or not the job it claims to be */
    char warn[PDCBB_DRAIN_ERR_LEN] = "";
    long expect_uid = -1;
    if ((rc = pdcbb_drain_reader_uid(d->cfg.stage_in_owner, &expect_uid, derr, sizeof(derr))) !=
            PDCBB_OK ||
        (rc = pdcbb_drain_reader_check(s.m, expect_uid, "--pdc=stage_in_owner=", warn,
                                       sizeof(warn), derr, sizeof(derr))) != PDCBB_OK) {
        ops->txn_abort(s.r.txn);
        snprintf(err, errlen, "stage-in from %s: %s", d->cfg.stage_in, derr);
        pdcbb_drain_free(s.m);
        s.m = NULL;
        return rc;
    }
    if (warn[0])
        PDCBB_WARN("stage-in from %s: %s", d->cfg.stage_in, warn);
    PDCBB_INFO("stage-in from %s: job %" PRIu64 ", %u containers, %u objects, %" PRIu64
               " extents; loading this daemon's share",
               s.m->dir, s.m->job_id, s.m->nconts, s.m->nobjs, s.m->nextents);
    char objdir[PATH_MAX + 16];
    snprintf(objdir, sizeof(objdir), "%s/objects", d->data_dir);
    if (mkdir(objdir, 0700) != 0 && errno != EEXIST)
        rc = stage_fail(&s, pdcbb_err_from_errno(errno), "%s", objdir);
    else if ((s.buf = malloc(SLAB_MAX)) == NULL)
        rc = stage_fail(&s, PDCBB_ERR_NOMEM, "%s", "staging buffer");
    if (rc == PDCBB_OK)
        rc = plan_ids(&s);
    if (rc == PDCBB_OK)
        rc = stage_conts(&s);
    for (uint32_t i = 0; rc == PDCBB_OK && i < s.m->nobjs; i++)
        if (s.obj_ids[i] != 0 && pdcbb_meta_id_server(s.obj_ids[i]) == d->rank)
            rc = stage_obj_meta(&s, i);
    if (rc == PDCBB_OK)
        rc = stage_objids(&s);
    for (uint32_t i = 0; rc == PDCBB_OK && i < s.m->nobjs; i++)
        if (s.obj_ids[i] != 0)
            rc = stage_obj_data(&s, i);
    if (rc == PDCBB_OK && s.m->nkvs > 0) {
        char kerr[PDCBB_DRAIN_ERR_LEN + 256] = "";
        uint64_t kvrecs = 0;
        rc = bbd_stage_in_kv(&s.r, s.m, s.kv_ids, s.kv_conts, &kvrecs, kerr, sizeof(kerr));
        if (rc != PDCBB_OK)
            stage_fail(&s, rc, "%s", kerr);
        else
            PDCBB_INFO("stage-in: %" PRIu64 " KV record versions loaded here", kvrecs);
    }
    if (rc == PDCBB_OK) {
        char nerr[PDCBB_DRAIN_ERR_LEN + 256] = "";
        uint64_t entries = 0;
        rc = bbd_stage_in_ns(&s.r, s.m, new_obj_id_of, &s, s.seq, &entries, nerr, sizeof(nerr));
        if (rc != PDCBB_OK)
            stage_fail(&s, rc, "%s", nerr);
        else if (entries > 0)
            PDCBB_INFO("stage-in: %" PRIu64 " entries of the filesystem's tree made here", entries);
    }
    if (rc == PDCBB_OK) {
        rc = ops->put(s.r.txn, PDCBB_T_STATE, key,
                      (pdcbb_val_t){d->cfg.stage_in, strlen(d->cfg.stage_in)}, 0);
        if (rc != PDCBB_OK)
            stage_fail(&s, rc, "%s", "recording it");
    }
    if (rc == PDCBB_OK) {
        rc = ops->txn_commit(s.r.txn);
        if (rc == PDCBB_OK)
            rc = ops->sync(d->store);
        if (rc != PDCBB_OK)
            stage_fail(&s, rc, "%s", "committing the store");
    } else {
        ops->txn_abort(s.r.txn);
    }
    bbd_req_scratch_free(&s.r);
    if (rc == PDCBB_OK) {
        double dt = now_seconds() - t0;
        PDCBB_INFO("stage-in from %s done: %.1f MiB of region data in %.2f s (%.0f MB/s)",
                   s.m->dir, (double)s.bytes / 1048576.0, dt,
                   dt > 0 ? (double)s.bytes / dt / 1e6 : 0.0);
    }
    free(s.buf);
    free(s.cont_ids);
    free(s.obj_ids);
    free(s.cont_map);
    free(s.obj_map);
    free(s.kv_ids);
    free(s.kv_conts);
    free(s.seq);
    pdcbb_drain_free(s.m);
    return rc;
}
