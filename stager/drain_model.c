/*
 * drain_model.c - the in-memory model of a drain directory (pdcbb_drain_t, docs/DRAIN-FORMAT.md):
 * building and merging models, lookups, sorting, object shapes, the names of types and
 * partitions, and the cross-checks of a whole model (drain_check: unique object ids, extents
 * inside their objects) that the manifest loader and pdcbb_drain_open run, and the orphan sweep
 * (drain_sweep_deleted: extents of deleted objects left out once every rank is in). It also
 * owns the model's private state (drain_internal.h) and the one error formatter of stager/drain_*.c.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drain_internal.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"
#include "pdcbb_types.h"

void drain_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------------------------------- */
/* Private state                                                                              */
/* ---------------------------------------------------------------------------------------- */

drain_priv_t *drain_priv_get(pdcbb_drain_t *m)
{
    if (m->priv == NULL) {
        drain_priv_t *p = calloc(1, sizeof(*p));
        if (p == NULL)
            return NULL;
        m->priv = p;
    }
    return m->priv;
}

void drain_priv_invalidate(pdcbb_drain_t *m)
{
    drain_priv_t *p = m->priv;
    if (p != NULL)
        drain_priv_release_read(p);
}

static void drain_priv_free(drain_priv_t *p)
{
    if (p == NULL)
        return;
    drain_priv_release_read(p);
    free(p->obj_by_name);
    free(p->obj_by_id);
    for (uint32_t i = 0; i < p->nfiles; i++)
        free(p->files[i]);
    free(p->files);
    free(p);
}

/* The interned copy of an extent's file name (extents of one file share one string). */
static char *drain_intern(pdcbb_drain_t *m, const char *file)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL)
        return NULL;
    if (p->last_file < p->nfiles && strcmp(p->files[p->last_file], file) == 0)
        return p->files[p->last_file];
    for (uint32_t i = 0; i < p->nfiles; i++) {
        if (strcmp(p->files[i], file) == 0) {
            p->last_file = i;
            return p->files[i];
        }
    }
    if (p->nfiles == p->cap_files) {
        uint32_t cap = p->cap_files ? 2 * p->cap_files : 16;
        char **v = realloc(p->files, cap * sizeof(*v));
        if (v == NULL)
            return NULL;
        p->files = v;
        p->cap_files = cap;
    }
    char *s = strdup(file);
    if (s == NULL)
        return NULL;
    p->last_file = p->nfiles;
    p->files[p->nfiles++] = s;
    return s;
}

/* Make room for one more element of an array of n elements whose capacity is *cap. */
int drain_grow(void **arr, uint64_t n, uint64_t *cap, size_t elem)
{
    if (n < *cap)
        return 0;
    uint64_t ncap = n < 8 ? 8 : 2 * n;
    if (ncap > SIZE_MAX / elem)
        return -1;
    void *v = realloc(*arr, (size_t)(ncap * elem));
    if (v == NULL)
        return -1;
    *arr = v;
    *cap = ncap;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The model                                                                                  */
/* ---------------------------------------------------------------------------------------- */

pdcbb_drain_t *pdcbb_drain_new(void)
{
    return calloc(1, sizeof(pdcbb_drain_t));
}

void drain_tags_free(pdcbb_drain_tag_t *t, uint32_t n)
{
    for (uint32_t i = 0; t != NULL && i < n; i++) {
        free(t[i].name);
        free(t[i].value);
    }
    free(t);
}

void drain_cont_clear(pdcbb_drain_cont_t *c)
{
    free(c->name);
    drain_tags_free(c->tags, c->ntags);
    free(c->obj_ids);
}

void drain_object_clear(pdcbb_drain_object_t *o)
{
    free(o->name);
    free(o->container);
    free(o->app_name);
    free(o->data_loc);
    free(o->tags_str);
    drain_tags_free(o->tags, o->ntags);
    free(o->map);
}

void pdcbb_drain_free(pdcbb_drain_t *m)
{
    if (m == NULL)
        return;
    free(m->dir);
    free(m->user);
    free(m->instance);
    for (uint32_t i = 0; i < m->nranks; i++) {
        free(m->ranks[i].node);
        free(m->ranks[i].data_file);
    }
    free(m->ranks);
    for (uint32_t i = 0; i < m->nconts; i++)
        drain_cont_clear(&m->conts[i]);
    free(m->conts);
    for (uint32_t i = 0; i < m->nobjs; i++)
        drain_object_clear(&m->objs[i]);
    free(m->objs);
    /* extent file names are interned: the table in priv owns them */
    free(m->extents);
    for (uint32_t i = 0; i < m->nkvs; i++) {
        free(m->kvs[i].name);
        free(m->kvs[i].container);
        free(m->kvs[i].committed);
    }
    free(m->kvs);
    for (uint32_t i = 0; i < m->nkvdumps; i++)
        free(m->kvdumps[i].file);
    free(m->kvdumps);
    free(m->dropped);
    free(m->files.list);
    for (uint32_t i = 0; i < m->nskipped; i++)
        free(m->skipped[i]);
    free(m->skipped);
    drain_priv_free(m->priv);
    free(m);
}

static char *drain_strdup0(const char *s)
{
    return strdup(s != NULL ? s : "");
}

static pdcbb_err_t drain_tags_dup(const pdcbb_drain_tag_t *src, uint32_t n,
                                  pdcbb_drain_tag_t **out)
{
    *out = NULL;
    if (n == 0)
        return PDCBB_OK;
    pdcbb_drain_tag_t *t = calloc(n, sizeof(*t));
    if (t == NULL)
        return PDCBB_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        t[i].type = src[i].type;
        t[i].len = src[i].len;
        t[i].name = drain_strdup0(src[i].name);
        t[i].value = malloc(src[i].len ? src[i].len : 1);
        if (t[i].name == NULL || t[i].value == NULL) {
            drain_tags_free(t, i + 1);
            return PDCBB_ERR_NOMEM;
        }
        if (src[i].len)
            memcpy(t[i].value, src[i].value, src[i].len);
    }
    *out = t;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_add_rank(pdcbb_drain_t *m, const pdcbb_drain_rank_t *r)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL || drain_grow((void **)&m->ranks, m->nranks, &p->cap_ranks, sizeof(*r)))
        return PDCBB_ERR_NOMEM;
    pdcbb_drain_rank_t x = *r;
    x.node = drain_strdup0(r->node);
    x.data_file = drain_strdup0(r->data_file);
    if (x.node == NULL || x.data_file == NULL) {
        free(x.node);
        free(x.data_file);
        return PDCBB_ERR_NOMEM;
    }
    m->ranks[m->nranks++] = x;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_add_cont(pdcbb_drain_t *m, const pdcbb_drain_cont_t *c,
                                 pdcbb_drain_cont_t **out)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL || drain_grow((void **)&m->conts, m->nconts, &p->cap_conts, sizeof(*c)))
        return PDCBB_ERR_NOMEM;
    pdcbb_drain_cont_t x = *c;
    x.name = drain_strdup0(c->name);
    x.tags = NULL;
    x.obj_ids = NULL;
    if (x.name == NULL || drain_tags_dup(c->tags, c->ntags, &x.tags) != PDCBB_OK)
        goto nomem;
    if (c->nobj_ids) {
        x.obj_ids = malloc(c->nobj_ids * sizeof(uint64_t));
        if (x.obj_ids == NULL)
            goto nomem;
        memcpy(x.obj_ids, c->obj_ids, c->nobj_ids * sizeof(uint64_t));
    }
    m->conts[m->nconts] = x;
    if (out != NULL)
        *out = &m->conts[m->nconts];
    m->nconts++;
    return PDCBB_OK;
nomem:
    drain_cont_clear(&x);
    return PDCBB_ERR_NOMEM;
}

pdcbb_err_t pdcbb_drain_add_object(pdcbb_drain_t *m, const pdcbb_drain_object_t *o,
                                   pdcbb_drain_object_t **out)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL || drain_grow((void **)&m->objs, m->nobjs, &p->cap_objs, sizeof(*o)))
        return PDCBB_ERR_NOMEM;
    pdcbb_drain_object_t x = *o;
    x.name = drain_strdup0(o->name);
    x.container = drain_strdup0(o->container);
    x.app_name = drain_strdup0(o->app_name);
    x.data_loc = drain_strdup0(o->data_loc);
    x.tags_str = drain_strdup0(o->tags_str);
    x.tags = NULL;
    x.map = NULL;
    if (x.name == NULL || x.container == NULL || x.app_name == NULL || x.data_loc == NULL ||
        x.tags_str == NULL || drain_tags_dup(o->tags, o->ntags, &x.tags) != PDCBB_OK)
        goto nomem;
    if (o->nmap) {
        x.map = malloc(o->nmap * sizeof(*x.map));
        if (x.map == NULL)
            goto nomem;
        memcpy(x.map, o->map, o->nmap * sizeof(*x.map));
    }
    m->objs[m->nobjs] = x;
    if (out != NULL)
        *out = &m->objs[m->nobjs];
    m->nobjs++;
    return PDCBB_OK;
nomem:
    drain_object_clear(&x);
    return PDCBB_ERR_NOMEM;
}

pdcbb_err_t pdcbb_drain_add_extent(pdcbb_drain_t *m, const pdcbb_drain_extent_t *e)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL || drain_grow((void **)&m->extents, m->nextents, &p->cap_extents, sizeof(*e)))
        return PDCBB_ERR_NOMEM;
    pdcbb_drain_extent_t x = *e;
    x.file = drain_intern(m, e->file != NULL ? e->file : "");
    if (x.file == NULL)
        return PDCBB_ERR_NOMEM;
    m->extents[m->nextents++] = x;
    p->order_valid = 0;
    return PDCBB_OK;
}

const char *pdcbb_drain_damaged_name(uint32_t damaged)
{
    return damaged == PDCBB_DRAIN_DAMAGED_CHECKSUM    ? "checksum"
           : damaged == PDCBB_DRAIN_DAMAGED_TRUNCATED ? "truncated"
                                                      : NULL;
}

uint64_t pdcbb_drain_damaged_extents(const pdcbb_drain_t *m, int rank,
                                     void (*report)(const char *line, void *arg), void *arg)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < m->nextents; i++) {
        const pdcbb_drain_extent_t *x = &m->extents[i];
        if (x->damaged == 0 || (rank >= 0 && x->rank != (uint32_t)rank))
            continue;
        n++;
        if (report == NULL)
            continue;
        const char *name = "?";
        for (uint32_t j = 0; j < m->nobjs; j++)
            if (m->objs[j].id == x->object_id)
                name = m->objs[j].name;
        char line[1024];
        snprintf(line, sizeof(line),
                 "damaged extent: object '%s' (id %" PRIu64 ") rank %" PRIu32 " bytes %" PRIu64
                 "-%" PRIu64 " (%s at %" PRIu64 "): %s",
                 name, x->object_id, x->rank, x->object_offset,
                 x->object_offset + x->length - 1, x->file, x->file_offset,
                 x->damaged == PDCBB_DRAIN_DAMAGED_TRUNCATED
                     ? "lost on the node (its data file was truncated), drained as zeros"
                     : "its node-local bytes did not match the checksum taken when they were "
                       "written; drained as found");
        report(line, arg);
    }
    return n;
}

const pdcbb_drain_kv_t *pdcbb_drain_find_kv(const pdcbb_drain_t *m, const char *container,
                                            const char *name, int *ambiguous)
{
    const pdcbb_drain_kv_t *hit = NULL;
    if (ambiguous != NULL)
        *ambiguous = 0;
    for (uint32_t i = 0; i < m->nkvs; i++) {
        const pdcbb_drain_kv_t *k = &m->kvs[i];
        if (strcmp(k->name, name) != 0 || (container != NULL && strcmp(k->container, container)))
            continue;
        if (hit != NULL) {
            if (ambiguous != NULL)
                *ambiguous = 1;
            return NULL;
        }
        hit = k;
    }
    return hit;
}

const pdcbb_drain_kv_t *pdcbb_drain_find_kv_id(const pdcbb_drain_t *m, uint64_t id)
{
    for (uint32_t i = 0; i < m->nkvs; i++)
        if (m->kvs[i].id == id)
            return &m->kvs[i];
    return NULL;
}

static int drain_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Merge tags (n of them) into k's committed tags: sorted, without duplicates. */
static pdcbb_err_t drain_kv_merge_committed(pdcbb_drain_kv_t *k, const uint64_t *tags, uint32_t n)
{
    if (n == 0)
        return PDCBB_OK;
    uint64_t *all = realloc(k->committed, ((size_t)k->ncommitted + n) * sizeof(uint64_t));
    if (all == NULL)
        return PDCBB_ERR_NOMEM;
    memcpy(all + k->ncommitted, tags, (size_t)n * sizeof(uint64_t));
    uint32_t total = k->ncommitted + n, out = 0;
    qsort(all, total, sizeof(uint64_t), drain_u64_cmp);
    for (uint32_t i = 0; i < total; i++)
        if (out == 0 || all[out - 1] != all[i])
            all[out++] = all[i];
    k->committed = all;
    k->ncommitted = out;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_add_kv(pdcbb_drain_t *m, const pdcbb_drain_kv_t *kv)
{
    pdcbb_drain_kv_t *old = (pdcbb_drain_kv_t *)pdcbb_drain_find_kv_id(m, kv->id);
    if (old != NULL) {
        /* a shard's copy may not know the container's name: keep the one that does */
        if (old->container[0] == '\0' && kv->container && kv->container[0]) {
            char *c = strdup(kv->container);
            if (c == NULL)
                return PDCBB_ERR_NOMEM;
            free(old->container);
            old->container = c;
        }
        return drain_kv_merge_committed(old, kv->committed, kv->ncommitted);
    }
    pdcbb_drain_kv_t *g = realloc(m->kvs, ((size_t)m->nkvs + 1) * sizeof(*g));
    if (g == NULL)
        return PDCBB_ERR_NOMEM;
    m->kvs = g;
    pdcbb_drain_kv_t x = *kv;
    x.name = drain_strdup0(kv->name);
    x.container = drain_strdup0(kv->container);
    x.committed = NULL;
    x.ncommitted = 0;
    if (x.name == NULL || x.container == NULL ||
        drain_kv_merge_committed(&x, kv->committed, kv->ncommitted) != PDCBB_OK) {
        free(x.name);
        free(x.container);
        free(x.committed);
        return PDCBB_ERR_NOMEM;
    }
    m->kvs[m->nkvs++] = x;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_add_kvdump(pdcbb_drain_t *m, const pdcbb_drain_kvdump_t *d)
{
    pdcbb_drain_kvdump_t *g = realloc(m->kvdumps, ((size_t)m->nkvdumps + 1) * sizeof(*g));
    if (g == NULL)
        return PDCBB_ERR_NOMEM;
    m->kvdumps = g;
    pdcbb_drain_kvdump_t x = *d;
    x.file = drain_strdup0(d->file);
    if (x.file == NULL)
        return PDCBB_ERR_NOMEM;
    m->kvdumps[m->nkvdumps++] = x;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_drain_add_dropped(pdcbb_drain_t *m, const pdcbb_drain_dropped_t *d)
{
    pdcbb_drain_dropped_t *g = realloc(m->dropped, ((size_t)m->ndropped + 1) * sizeof(*g));
    if (g == NULL)
        return PDCBB_ERR_NOMEM;
    m->dropped = g;
    m->dropped[m->ndropped++] = *d;
    return PDCBB_OK;
}

void pdcbb_drain_dropped_totals(const pdcbb_drain_t *m, uint64_t *extents, uint64_t *bytes)
{
    uint64_t n = 0, b = 0;
    for (uint32_t i = 0; i < m->ndropped; i++) {
        n += m->dropped[i].extents;
        b += m->dropped[i].bytes;
    }
    if (extents != NULL)
        *extents = n;
    if (bytes != NULL)
        *bytes = b;
}

pdcbb_err_t drain_skipped_add(pdcbb_drain_t *m, const char *line)
{
    char **g = realloc(m->skipped, ((size_t)m->nskipped + 1) * sizeof(*g));
    if (g == NULL)
        return PDCBB_ERR_NOMEM;
    m->skipped = g;
    if ((m->skipped[m->nskipped] = strdup(line)) == NULL)
        return PDCBB_ERR_NOMEM;
    m->nskipped++;
    return PDCBB_OK;
}

static int drain_obj_id_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

pdcbb_err_t drain_sweep_deleted(pdcbb_drain_t *m)
{
    pdcbb_err_t rc = PDCBB_OK;
    uint64_t *ids = NULL, kept = 0;

    if (m->nranks != m->nservers || m->nextents == 0)
        return PDCBB_OK;
    if (m->nobjs > 0) {
        if ((ids = malloc(m->nobjs * sizeof(*ids))) == NULL)
            return PDCBB_ERR_NOMEM;
        for (uint32_t i = 0; i < m->nobjs; i++)
            ids[i] = m->objs[i].id;
        qsort(ids, m->nobjs, sizeof(*ids), drain_obj_id_cmp);
    }
    for (uint64_t i = 0; i < m->nextents; i++) {
        const pdcbb_drain_extent_t *x = &m->extents[i];
        if (m->nobjs > 0 && bsearch(&x->object_id, ids, m->nobjs, sizeof(*ids),
                                    drain_obj_id_cmp) != NULL) {
            m->extents[kept++] = *x;
            continue;
        }
        pdcbb_drain_dropped_t *last = m->ndropped ? &m->dropped[m->ndropped - 1] : NULL;
        if (last != NULL && last->object_id == x->object_id && last->rank == x->rank) {
            last->extents++;
            last->bytes += x->length;
            continue;
        }
        pdcbb_drain_dropped_t d = {x->object_id, x->rank, 1, x->length};
        if ((rc = pdcbb_drain_add_dropped(m, &d)) != PDCBB_OK)
            break;
    }
    if (rc == PDCBB_OK && kept != m->nextents) {
        m->nextents = kept; /* the dropped ones' file names stay interned: the table owns them */
        drain_priv_invalidate(m);
    }
    free(ids);
    return rc;
}

pdcbb_err_t pdcbb_drain_merge(pdcbb_drain_t *into, const pdcbb_drain_t *part)
{
    pdcbb_err_t rc;

    if (into == NULL || part == NULL)
        return PDCBB_ERR_INVAL;
    if (into->nservers == 0 && into->job_id == 0) {
        into->job_id = part->job_id;
        into->uid = part->uid;
        into->nservers = part->nservers;
        into->servers_per_node = part->servers_per_node;
        free(into->user);
        into->user = drain_strdup0(part->user);
        free(into->instance);
        into->instance = drain_strdup0(part->instance);
        if (into->user == NULL || into->instance == NULL)
            return PDCBB_ERR_NOMEM;
    } else if (into->job_id != part->job_id || into->nservers != part->nservers ||
               strcmp(into->instance ? into->instance : "",
                      part->instance ? part->instance : "") != 0) {
        return PDCBB_ERR_INVAL; /* parts of two different jobs */
    }
    for (uint32_t i = 0; i < part->nranks; i++)
        if ((rc = pdcbb_drain_add_rank(into, &part->ranks[i])) != PDCBB_OK)
            return rc;
    for (uint32_t i = 0; i < part->nconts; i++)
        if ((rc = pdcbb_drain_add_cont(into, &part->conts[i], NULL)) != PDCBB_OK)
            return rc;
    for (uint32_t i = 0; i < part->nobjs; i++)
        if ((rc = pdcbb_drain_add_object(into, &part->objs[i], NULL)) != PDCBB_OK)
            return rc;
    for (uint64_t i = 0; i < part->nextents; i++)
        if ((rc = pdcbb_drain_add_extent(into, &part->extents[i])) != PDCBB_OK)
            return rc;
    for (uint32_t i = 0; i < part->nkvs; i++)
        if ((rc = pdcbb_drain_add_kv(into, &part->kvs[i])) != PDCBB_OK)
            return rc;
    for (uint32_t i = 0; i < part->nkvdumps; i++)
        if ((rc = pdcbb_drain_add_kvdump(into, &part->kvdumps[i])) != PDCBB_OK)
            return rc;
    for (uint32_t i = 0; i < part->ndropped; i++)
        if ((rc = pdcbb_drain_add_dropped(into, &part->dropped[i])) != PDCBB_OK)
            return rc;
    return PDCBB_OK;
}

const pdcbb_drain_cont_t *pdcbb_drain_find_cont(const pdcbb_drain_t *m, const char *name)
{
    for (uint32_t i = 0; m != NULL && name != NULL && i < m->nconts; i++)
        if (strcmp(m->conts[i].name, name) == 0)
            return &m->conts[i];
    return NULL;
}

const pdcbb_drain_cont_t *pdcbb_drain_find_cont_id(const pdcbb_drain_t *m, uint64_t id)
{
    for (uint32_t i = 0; m != NULL && i < m->nconts; i++)
        if (m->conts[i].id == id)
            return &m->conts[i];
    return NULL;
}

const pdcbb_drain_object_t *pdcbb_drain_find_object(const pdcbb_drain_t *m, const char *name)
{
    const drain_priv_t *p = m != NULL ? m->priv : NULL;
    if (name != NULL && p != NULL && p->obj_by_name != NULL && p->nobj_index == m->nobjs) {
        uint32_t lo = 0, hi = m->nobjs;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            int c = strcmp(m->objs[p->obj_by_name[mid]].name, name);
            if (c == 0)
                return &m->objs[p->obj_by_name[mid]];
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        return NULL;
    }
    for (uint32_t i = 0; m != NULL && name != NULL && i < m->nobjs; i++)
        if (strcmp(m->objs[i].name, name) == 0)
            return &m->objs[i];
    return NULL;
}

const pdcbb_drain_object_t *pdcbb_drain_find_object_id(const pdcbb_drain_t *m, uint64_t id)
{
    const drain_priv_t *p = m != NULL ? m->priv : NULL;
    if (p != NULL && p->obj_by_id != NULL && p->nobj_index == m->nobjs) {
        uint32_t lo = 0, hi = m->nobjs;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            uint64_t x = m->objs[p->obj_by_id[mid]].id;
            if (x == id)
                return &m->objs[p->obj_by_id[mid]];
            if (x < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        return NULL;
    }
    for (uint32_t i = 0; m != NULL && i < m->nobjs; i++)
        if (m->objs[i].id == id)
            return &m->objs[i];
    return NULL;
}

void pdcbb_drain_object_extents(const pdcbb_drain_t *m, uint64_t obj_id, uint64_t *first,
                                uint64_t *count)
{
    uint64_t lo = 0, hi = m->nextents;

    while (lo < hi) { /* first extent with object_id >= obj_id */
        uint64_t mid = lo + (hi - lo) / 2;
        if (m->extents[mid].object_id < obj_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t end = lo;
    hi = m->nextents;
    while (end < hi) { /* first extent with object_id > obj_id */
        uint64_t mid = end + (hi - end) / 2;
        if (m->extents[mid].object_id <= obj_id)
            end = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    *count = end - lo;
}

static int drain_rank_cmp(const void *a, const void *b)
{
    const pdcbb_drain_rank_t *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int drain_extent_cmp(const void *a, const void *b)
{
    const pdcbb_drain_extent_t *x = a, *y = b;
    if (x->object_id != y->object_id)
        return x->object_id < y->object_id ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->object_offset != y->object_offset)
        return x->object_offset < y->object_offset ? -1 : 1;
    return 0;
}

static int drain_map_cmp(const void *a, const void *b)
{
    const pdcbb_drain_map_entry_t *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The indexes of m->objs by name and by id (drain_priv_t); without memory, lookups stay linear. */
static int drain_name_cmp(const void *a, const void *b, void *arg)
{
    const pdcbb_drain_t *m = arg;
    return strcmp(m->objs[*(const uint32_t *)a].name, m->objs[*(const uint32_t *)b].name);
}

static int drain_id_cmp(const void *a, const void *b, void *arg)
{
    const pdcbb_drain_t *m = arg;
    uint64_t x = m->objs[*(const uint32_t *)a].id, y = m->objs[*(const uint32_t *)b].id;
    return (x > y) - (x < y);
}

static void drain_index_objects(pdcbb_drain_t *m)
{
    drain_priv_t *p = drain_priv_get(m);
    if (p == NULL)
        return;
    free(p->obj_by_name);
    free(p->obj_by_id);
    p->obj_by_name = p->obj_by_id = NULL;
    p->nobj_index = 0;
    if (m->nobjs == 0)
        return;
    p->obj_by_name = malloc(m->nobjs * sizeof(uint32_t));
    p->obj_by_id = malloc(m->nobjs * sizeof(uint32_t));
    int named = 1;
    for (uint32_t i = 0; i < m->nobjs; i++)
        named &= m->objs[i].name != NULL;
    if (p->obj_by_name == NULL || p->obj_by_id == NULL || !named) {
        free(p->obj_by_name); /* keep the linear searches */
        free(p->obj_by_id);
        p->obj_by_name = p->obj_by_id = NULL;
        return;
    }
    for (uint32_t i = 0; i < m->nobjs; i++)
        p->obj_by_name[i] = p->obj_by_id[i] = i;
    qsort_r(p->obj_by_name, m->nobjs, sizeof(uint32_t), drain_name_cmp, m);
    qsort_r(p->obj_by_id, m->nobjs, sizeof(uint32_t), drain_id_cmp, m);
    p->nobj_index = m->nobjs;
}

void pdcbb_drain_sort(pdcbb_drain_t *m)
{
    if (m->nranks > 1)
        qsort(m->ranks, m->nranks, sizeof(*m->ranks), drain_rank_cmp);
    if (m->nextents > 1)
        qsort(m->extents, (size_t)m->nextents, sizeof(*m->extents), drain_extent_cmp);
    for (uint32_t i = 0; i < m->nobjs; i++)
        if (m->objs[i].nmap > 1)
            qsort(m->objs[i].map, m->objs[i].nmap, sizeof(*m->objs[i].map), drain_map_cmp);
    /* An object's part names its container only when both have the same home rank. */
    for (uint32_t i = 0; i < m->nobjs; i++) {
        pdcbb_drain_object_t *o = &m->objs[i];
        const pdcbb_drain_cont_t *c;
        if ((o->container == NULL || o->container[0] == '\0') &&
            (c = pdcbb_drain_find_cont_id(m, o->cont_id)) != NULL) {
            char *name = strdup(c->name);
            if (name != NULL) {
                free(o->container);
                o->container = name;
            }
        }
    }
    for (uint32_t i = 0; i < m->nkvs; i++) {
        pdcbb_drain_kv_t *k = &m->kvs[i];
        const pdcbb_drain_cont_t *c;
        if (k->container[0] == '\0' && (c = pdcbb_drain_find_cont_id(m, k->cont_id)) != NULL) {
            char *name = strdup(c->name);
            if (name != NULL) {
                free(k->container);
                k->container = name;
            }
        }
    }
    drain_priv_invalidate(m);
    drain_index_objects(m);
}

/* Bytes of one row (dims[1..] elements) of o; 0 when it overflows or a dim is bad. */
static uint64_t drain_row_bytes(const pdcbb_drain_object_t *o)
{
    uint64_t row = o->element_size;
    for (uint32_t d = 1; d < o->ndim; d++) {
        if (o->dims[d] == 0 || o->dims[d] == PDCBB_DIM_UNLIMITED ||
            row > PDCBB_REGION_STRIDE_MAX / o->dims[d])
            return 0;
        row *= o->dims[d];
    }
    return row <= PDCBB_REGION_STRIDE_MAX ? row : 0;
}

pdcbb_err_t pdcbb_drain_object_shape(const pdcbb_drain_t *m, const pdcbb_drain_object_t *o,
                                     uint64_t *shape)
{
    uint64_t first, count;

    if (o->ndim > PDCBB_REGION_NDIM_MAX || o->element_size == 0)
        return PDCBB_ERR_BAD_REGION;
    if (o->ndim == 0)
        return PDCBB_OK; /* no dimensions, no data */
    uint64_t row = drain_row_bytes(o);
    if (row == 0)
        return PDCBB_ERR_BAD_REGION;
    uint64_t tmp[PDCBB_REGION_NDIM_MAX];
    memcpy(tmp, o->dims, sizeof(tmp));
    if (o->dims[0] == PDCBB_DIM_UNLIMITED) {
        uint64_t end = 0, rows = 0;
        pdcbb_drain_object_extents(m, o->id, &first, &count);
        for (uint64_t i = first; i < first + count; i++)
            if (m->extents[i].object_offset + m->extents[i].length > end)
                end = m->extents[i].object_offset + m->extents[i].length;
        rows = end / row + (end % row != 0);
        for (uint32_t k = 0; k < o->nmap; k++)
            if (o->map[k].box.off[0] + o->map[k].box.size[0] > rows)
                rows = o->map[k].box.off[0] + o->map[k].box.size[0];
        /* The extent the home daemon kept covers every write; never less than the data. */
        if (o->has_current_dims && o->current_rows > rows)
            rows = o->current_rows;
        tmp[0] = rows;
    } else if (o->dims[0] == 0 || o->dims[0] > UINT64_MAX / row) {
        return PDCBB_ERR_BAD_REGION;
    }
    memcpy(shape, tmp, sizeof(tmp));
    return PDCBB_OK;
}

uint64_t pdcbb_drain_object_bytes(const pdcbb_drain_t *m, const pdcbb_drain_object_t *o)
{
    uint64_t first, count, sum = 0;
    pdcbb_drain_object_extents(m, o->id, &first, &count);
    for (uint64_t i = first; i < first + count; i++)
        sum += m->extents[i].length;
    return sum;
}

static const char *const drain_partition_names[] = {"PDC_OBJ_STATIC", "PDC_REGION_STATIC",
                                                    "PDC_REGION_DYNAMIC", "PDC_REGION_LOCAL",
                                                    "PDCBB_REGION_STRIPED"};
#define DRAIN_NPARTITIONS 5u

const char *pdcbb_drain_type_name(int32_t type)
{
    const pdcbb_type_info_t *t = pdcbb_type_info(type);
    return t ? t->name : NULL;
}

int32_t pdcbb_drain_type_parse(const char *name)
{
    return pdcbb_type_parse(name);
}

const char *pdcbb_drain_partition_name(uint32_t partition)
{
    return partition < DRAIN_NPARTITIONS ? drain_partition_names[partition] : NULL;
}

int32_t pdcbb_drain_partition_parse(const char *name)
{
    for (uint32_t i = 0; name != NULL && i < DRAIN_NPARTITIONS; i++)
        if (strcmp(drain_partition_names[i], name) == 0)
            return (int32_t)i;
    return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* Cross-checks of a whole model                                                              */
/* ---------------------------------------------------------------------------------------- */

typedef struct drain_obj_ix {
    uint64_t id;
    uint32_t idx;
} drain_obj_ix_t;

static int drain_obj_ix_cmp(const void *a, const void *b)
{
    const drain_obj_ix_t *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Cross-checks of a model: unique object ids, and every extent within its object's shape and
 * aligned to its element size. Extents of objects not in the model are accepted unless
 * require_objects (a part lists the extents its rank held, also of objects homed elsewhere).
 * lines (may be NULL) gives each extent's YAML line.
 */
pdcbb_err_t drain_check(const pdcbb_drain_t *m, const char *path, const uint32_t *lines,
                        int require_objects, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    drain_obj_ix_t *ix = NULL;
    char where[PATH_MAX + 64];

    if (m->nobjs > 0) {
        ix = malloc(m->nobjs * sizeof(*ix));
        if (ix == NULL) {
            drain_errf(err, errlen, "%s: out of memory", path);
            return PDCBB_ERR_NOMEM;
        }
        for (uint32_t i = 0; i < m->nobjs; i++) {
            ix[i].id = m->objs[i].id;
            ix[i].idx = i;
        }
        qsort(ix, m->nobjs, sizeof(*ix), drain_obj_ix_cmp);
        for (uint32_t i = 1; i < m->nobjs; i++) {
            if (ix[i].id == ix[i - 1].id) {
                drain_errf(err, errlen, "%s: objects '%s' and '%s' have the same id %" PRIu64,
                           path, m->objs[ix[i - 1].idx].name, m->objs[ix[i].idx].name,
                           ix[i].id);
                rc = PDCBB_ERR_CONFIG;
                goto done;
            }
        }
    }
    for (uint64_t i = 0; i < m->nextents; i++) {
        const pdcbb_drain_extent_t *x = &m->extents[i];
        if (lines != NULL)
            snprintf(where, sizeof(where), "%s:%" PRIu32 ": extents[%" PRIu64 "]", path,
                     lines[i], i);
        else
            snprintf(where, sizeof(where), "%s: extent %" PRIu64 " of object %" PRIu64, path, i,
                     x->object_id);
        drain_obj_ix_t key = {x->object_id, 0};
        drain_obj_ix_t *hit =
            m->nobjs ? bsearch(&key, ix, m->nobjs, sizeof(*ix), drain_obj_ix_cmp) : NULL;
        if (hit == NULL) {
            if (!require_objects)
                continue;
            drain_errf(err, errlen, "%s: key 'object': no object has id %" PRIu64, where,
                       x->object_id);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        const pdcbb_drain_object_t *o = &m->objs[hit->idx];
        if (x->object_offset % o->element_size != 0 || x->length % o->element_size != 0) {
            drain_errf(err, errlen,
                       "%s: key '%s': not a multiple of object '%s''s element size %" PRIu32,
                       where, x->object_offset % o->element_size ? "object_offset" : "length",
                       o->name, o->element_size);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        if (o->dims[0] != PDCBB_DIM_UNLIMITED) {
            uint64_t total = drain_row_bytes(o) * o->dims[0]; /* checked at load */
            if (x->object_offset + x->length > total) {
                drain_errf(err, errlen,
                           "%s: key 'length': bytes %" PRIu64 "..%" PRIu64
                           " lie outside object '%s' (%" PRIu64 " bytes)",
                           where, x->object_offset, x->object_offset + x->length, o->name, total);
                rc = PDCBB_ERR_CONFIG;
                goto done;
            }
        }
    }
    /* a KV dump belongs to a KV object of the manifest (a part may list dumps of KV objects
     * homed elsewhere only when it does not hold their meta: never, but stay lenient there) */
    for (uint32_t i = 0; require_objects && i < m->nkvdumps; i++) {
        if (pdcbb_drain_find_kv_id(m, m->kvdumps[i].kv) == NULL) {
            drain_errf(err, errlen, "%s: kv_dumps[%" PRIu32 "]: key 'kv': no KV object has id %" PRIu64,
                       path, i, m->kvdumps[i].kv);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
    }
done:
    free(ix);
    return rc;
}
