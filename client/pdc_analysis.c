/*
 * pdc_analysis.c - PDC's data iterators (PDCobj_data_iter_create,
 * PDCobj_data_block_iterator_create, PDCobj_data_getSliceCount, PDCobj_data_getNextBlock,
 * PDCiter_get_nextId) and analyses (PDCobj_analysis_register).
 *
 * An iterator walks a region of an object in blocks of contig_blocks slices of its first
 * dimension (row-major: a slice of a 2-D region is a row, of a 3-D region a plane), as PDC's
 * ROW_major iterators do. Its ids are small numbers (1, 2, ...), as PDC's, 0 being the null
 * iterator. The data it walks is a snapshot held by the iterator: during an analysis, the
 * region as stored (input) or the region to be stored (output); otherwise, at the first
 * getNextBlock, the buffer given with PDCprop_set_obj_buf when the object has one (PDC's
 * client-memory iterators), else the region as stored.
 *
 * An analysis function int f(pdcid_t iterIn, pdcid_t iterOut) is found by name
 * (client_udf_resolve) and runs in this process: once when registered, and again each time this
 * process writes a region of the input object that overlaps the input iterator's region (a
 * PDC_WRITE lock released on a mapped region, a completed PDCregion_transfer write,
 * PDCobj_put_data). Before it runs, both iterators' snapshots are read from the daemons; after
 * it returned, the output snapshot is written to the output object's region (which may in turn
 * run analyses of that object; an analysis never triggers itself). PDC runs the function on its
 * data servers; pdcbb never runs application code in a daemon shared by the whole job (see
 * pdc_transform.c), and the client already has the data it just wrote.
 */
#include <stdlib.h>
#include <string.h>

#include "client_maplock.h"
#include "pdc_analysis.h"
#include "pdcbb_log.h"

typedef struct client_dataiter {
    client_obj_t *obj;    /* a copy of the object's description */
    void *obj_buf;        /* PDCprop_set_obj_buf's buffer of the object, or NULL */
    pdcbb_box_t box;      /* the region walked */
    int blocks;           /* slices per block */
    size_t unit;
    uint8_t *data;        /* the snapshot: the region's elements packed row-major */
    uint64_t rows, per_row;
    uint64_t next_row;
} client_dataiter_t;

typedef int (*analysis_fn_t)(pdcid_t iterIn, pdcid_t iterOut);

typedef struct client_analysis {
    struct client_analysis *next;
    char *spec;
    analysis_fn_t fn;
    pdcid_t in, out;
    int running;
} client_analysis_t;

static client_dataiter_t **iters; /* iters[id - 1]; NULL: reserved by PDCiter_get_nextId */
static size_t niters, cap_iters;
static client_analysis_t *analyses;

static client_dataiter_t *iter_get(pdcid_t id, const char *fn)
{
    if (id == 0 || id > niters || iters[id - 1] == NULL) {
        client_fail(PDCBB_ERR_BAD_ID, "%s: %llu is not an iterator id of this process", fn,
                    (unsigned long long)id);
        return NULL;
    }
    return iters[id - 1];
}

static int reserve_id(void)
{
    if (niters == cap_iters) {
        size_t n = cap_iters ? cap_iters * 2 : 16;
        client_dataiter_t **p = realloc(iters, n * sizeof(*p));
        if (p == NULL)
            return -1;
        iters = p;
        cap_iters = n;
    }
    iters[niters++] = NULL;
    return (int)niters;
}

int PDCiter_get_nextId(void)
{
    CLIENT_ENTER();
    client_clear_error();
    int id = -1;
    if (client_check_init() == PDCBB_OK && (id = reserve_id()) < 0)
        client_fail(PDCBB_ERR_NOMEM, "PDCiter_get_nextId: out of memory");
    CLIENT_LEAVE();
    return id;
}

static void iter_free(client_dataiter_t *it)
{
    if (it == NULL)
        return;
    client_obj_free(it->obj);
    free(it->data);
    free(it);
}

pdcid_t PDCobj_data_block_iterator_create(pdcid_t obj_id, pdcid_t reg_id, int contig_blocks)
{
    const char *fn = "PDCobj_data_block_iterator_create";
    pdcid_t ret = 0;
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_handle_live(obj_id, CLIENT_H_OBJ, "object", fn);
    if (o == NULL)
        goto out;
    if (contig_blocks < 1) {
        client_fail(PDCBB_ERR_INVAL, "%s: contig_blocks %d is less than 1", fn, contig_blocks);
        goto out;
    }
    size_t unit = client_obj_unit(o);
    if (unit == 0 || o->prop.pub.ndim == 0) {
        client_fail(PDCBB_ERR_BAD_REGION, "%s: object '%s' has no element type or dimensions", fn,
                    o->name);
        goto out;
    }
    pdcbb_box_t box;
    if (reg_id == PDC_REGION_ALL) {
        uint64_t zero[PDCBB_REGION_NDIM_MAX] = {0};
        if (pdcbb_box_make(&box, (uint32_t)o->prop.pub.ndim, zero, o->prop.pub.dims) !=
                PDCBB_OK ||
            o->prop.pub.dims[0] == PDC_SIZE_UNLIMITED) {
            client_fail(PDCBB_ERR_BAD_REGION, "%s: object '%s' has no finite extent", fn,
                        o->name);
            goto out;
        }
    } else {
        client_region_t *r = client_handle_get(reg_id, CLIENT_H_REGION, &e);
        if (r == NULL) {
            client_fail(e, "%s: %#llx is not a live region id", fn, (unsigned long long)reg_id);
            goto out;
        }
        box = r->box;
        if (box.ndim != o->prop.pub.ndim ||
            pdcbb_box_check_within(&box, box.ndim, o->prop.pub.dims) != PDCBB_OK) {
            client_fail(PDCBB_ERR_BAD_REGION, "%s: the region is not within object '%s'", fn,
                        o->name);
            goto out;
        }
    }
    uint64_t count;
    if (pdcbb_box_count(&box, &count) != PDCBB_OK || count > SIZE_MAX / unit) {
        client_fail(PDCBB_ERR_TOO_BIG, "%s: the region is too large to iterate in memory", fn);
        goto out;
    }
    client_dataiter_t *it = calloc(1, sizeof(*it));
    client_obj_t *copy = calloc(1, sizeof(*copy));
    if (it == NULL || copy == NULL || (copy->name = strdup(o->name)) == NULL ||
        client_obj_prop_copy(&copy->prop, &o->prop) != PDCBB_OK) {
        if (copy)
            free(copy->name);
        free(copy);
        free(it);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    copy->meta_id = o->meta_id;
    it->obj = copy;
    it->obj_buf = o->prop.buf;
    it->box = box;
    it->blocks = contig_blocks;
    it->unit = unit;
    it->rows = box.size[0];
    it->per_row = count / box.size[0];
    int id = reserve_id();
    if (id < 0) {
        iter_free(it);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    iters[id - 1] = it;
    ret = (pdcid_t)id;
out:
    CLIENT_LEAVE();
    return ret;
}

pdcid_t PDCobj_data_iter_create(pdcid_t obj_id, pdcid_t reg_id)
{
    return PDCobj_data_block_iterator_create(obj_id, reg_id, 1);
}

/* Fill an iterator's snapshot: from the daemons, or (from_buf) from the object's own buffer. */
static pdcbb_err_t iter_load(client_dataiter_t *it, int from_buf, const char *fn)
{
    size_t bytes = (size_t)(it->rows * it->per_row) * it->unit;
    if (it->data == NULL && (it->data = malloc(bytes ? bytes : 1)) == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
    it->next_row = 0;
    if (from_buf && it->obj_buf)
        return pdcbb_box_copy(&it->box, it->box.ndim, it->obj->prop.pub.dims, it->unit,
                              it->obj_buf, it->data, 1);
    return client_transfer_packed(it->obj, PDC_READ, it->data, &it->box, fn);
}

size_t PDCobj_data_getSliceCount(pdcid_t iter)
{
    size_t n = 0;
    CLIENT_ENTER();
    client_clear_error();
    client_dataiter_t *it = iter == 0 ? NULL : iter_get(iter, "PDCobj_data_getSliceCount");
    if (it)
        n = (size_t)((it->rows + (uint64_t)it->blocks - 1) / (uint64_t)it->blocks);
    CLIENT_LEAVE();
    return n;
}

size_t PDCobj_data_getNextBlock(pdcid_t iter, void **nextBlock, size_t *dims)
{
    const char *fn = "PDCobj_data_getNextBlock";
    size_t n = 0;
    CLIENT_ENTER();
    client_clear_error();
    if (nextBlock)
        *nextBlock = NULL;
    if (iter == 0) { /* the null iterator: nothing */
        if (dims)
            dims[0] = 0;
        goto out;
    }
    client_dataiter_t *it = iter_get(iter, fn);
    if (it == NULL)
        goto out;
    if (it->data == NULL && iter_load(it, 1, fn) != PDCBB_OK)
        goto out;
    uint32_t nd = it->box.ndim < 3 ? it->box.ndim : 3; /* PDC fills at most 3 entries */
    if (it->next_row >= it->rows) {
        /* The end; the next call starts again from the first block, as PDC's iterators. */
        it->next_row = 0;
        if (dims)
            for (uint32_t d = 0; d < nd; d++)
                dims[d] = 0;
        goto out;
    }
    uint64_t rows = it->rows - it->next_row;
    if (rows > (uint64_t)it->blocks)
        rows = (uint64_t)it->blocks;
    if (nextBlock)
        *nextBlock = it->data + (size_t)(it->next_row * it->per_row) * it->unit;
    if (dims) {
        dims[0] = (size_t)rows;
        for (uint32_t d = 1; d < nd; d++)
            dims[d] = (size_t)it->box.size[d];
    }
    it->next_row += rows;
    n = (size_t)(rows * it->per_row);
out:
    CLIENT_LEAVE();
    return n;
}

/* Run one analysis: load both snapshots, call it, store the output region. */
static pdcbb_err_t analysis_run(client_analysis_t *a, const char *fn)
{
    client_dataiter_t *in = a->in ? iter_get(a->in, fn) : NULL;
    client_dataiter_t *out = a->out ? iter_get(a->out, fn) : NULL;
    if ((a->in && in == NULL) || (a->out && out == NULL))
        return PDCbb_last_error();
    if ((in && iter_load(in, 0, fn) != PDCBB_OK) || (out && iter_load(out, 0, fn) != PDCBB_OK))
        return PDCbb_last_error();
    a->running = 1;
    int rc = a->fn(a->in, a->out);
    pdcbb_err_t err = PDCBB_OK;
    if (rc < 0)
        err = client_fail(PDCBB_ERR_INVAL, "%s: analysis '%s' returned %d", fn, a->spec, rc);
    else if (out) {
        out->next_row = 0;
        err = client_transfer_packed(out->obj, PDC_WRITE, out->data, &out->box, fn);
    }
    if (in)
        in->next_row = 0;
    a->running = 0;
    return err;
}

perr_t PDCobj_analysis_register(char *func, pdcid_t iterIn, pdcid_t iterOut)
{
    const char *fn = "PDCobj_analysis_register";
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK)
        goto out;
    if ((iterIn && iter_get(iterIn, fn) == NULL) || (iterOut && iter_get(iterOut, fn) == NULL))
        goto out;
    analysis_fn_t f = (analysis_fn_t)client_udf_resolve(func, "libpdcanalysis.so", fn);
    if (f == NULL)
        goto out;
    client_analysis_t *a = calloc(1, sizeof(*a));
    if (a == NULL || (a->spec = strdup(func)) == NULL) {
        free(a);
        client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
        goto out;
    }
    a->fn = f;
    a->in = iterIn;
    a->out = iterOut;
    /* Runs now; with an input iterator, again whenever this process writes its region. */
    if (analysis_run(a, fn) != PDCBB_OK) {
        free(a->spec);
        free(a);
        goto out;
    }
    if (iterIn) {
        client_analysis_t **pp = &analyses;
        while (*pp)
            pp = &(*pp)->next;
        *pp = a;
    } else {
        free(a->spec);
        free(a);
    }
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}

void client_analysis_written(uint64_t obj_meta, const pdcbb_box_t *box)
{
    if (analyses == NULL)
        return;
    /* The write succeeded: whatever the analyses do, the caller's error state stays. */
    int saved = PDCbb_last_error();
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", PDCbb_last_error_message());
    for (client_analysis_t *a = analyses; a; a = a->next) {
        pdcbb_box_t x;
        client_dataiter_t *in = a->in && a->in <= niters ? iters[a->in - 1] : NULL;
        if (a->running || in == NULL || in->obj->meta_id != obj_meta ||
            !pdcbb_box_intersect(&in->box, box, &x))
            continue;
        if (analysis_run(a, "analysis") != PDCBB_OK)
            PDCBB_WARN("analysis '%s' after a write of object '%s' failed: %s", a->spec,
                       in->obj->name, PDCbb_last_error_message());
    }
    if (saved == 0)
        client_clear_error();
    else
        client_fail(saved, "%s", msg);
}

void client_analysis_cleanup(void)
{
    while (analyses) {
        client_analysis_t *a = analyses;
        analyses = a->next;
        free(a->spec);
        free(a);
    }
    for (size_t i = 0; i < niters; i++)
        iter_free(iters[i]);
    free(iters);
    iters = NULL;
    niters = cap_iters = 0;
}
