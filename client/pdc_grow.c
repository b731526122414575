/*
 * pdc_grow.c - objects that grow (an unlimited first dimension) and collective create/open
 * (pdcbb extensions: PDCbb_obj_extend, PDCbb_obj_get_extent, PDCbb_*_coll).
 *
 * Growth: the home daemon of such an object keeps its current extent (rows; OBJ_EXTEND,
 * OBJ_EXTENT in bbd/bbd_grow.c). A write that reaches past the extent this process last heard
 * of raises it before its data leaves (client_grow_written, called by client_xfer_start), so
 * the extent covers every write that was started; PDCbb_obj_extend raises it explicitly. The
 * daemon keeps the max of every request: nothing is lost between concurrent writers. An
 * extend to fewer rows than this process itself asked for before (its extends and writes) is
 * a mistake (INVAL); one to fewer rows than another process made meanwhile succeeds.
 *
 * Collective calls: one rank does the metadata request(s) of the single-process call, then the
 * outcome (status, message, and what a handle needs) is broadcast; every rank registers a
 * handle of the same container or object without asking a daemon.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"

/* ------------------------------------------------------------------ extents */

/* Extents this process knows (a lower bound: extents never shrink). */
typedef struct grow_known {
    uint64_t meta;
    uint64_t rows;  /* the largest extent a daemon answered */
    uint64_t asked; /* the largest extent this process asked for (extends, writes) */
} grow_known_t;
static grow_known_t *known;
static size_t nknown, capknown;

static grow_known_t *known_find(uint64_t meta)
{
    for (size_t i = 0; i < nknown; i++)
        if (known[i].meta == meta)
            return &known[i];
    return NULL;
}

static void known_note(uint64_t meta, uint64_t rows, uint64_t asked)
{
    grow_known_t *k = known_find(meta);
    if (k == NULL) {
        if (nknown == capknown) {
            size_t cap = capknown ? 2 * capknown : 16;
            grow_known_t *bigger = realloc(known, cap * sizeof(*known));
            if (bigger == NULL)
                return; /* only a cache: the next write asks the daemon again */
            known = bigger;
            capknown = cap;
        }
        k = &known[nknown++];
        k->meta = meta;
        k->rows = k->asked = 0;
    }
    if (rows > k->rows)
        k->rows = rows;
    if (asked > k->asked)
        k->asked = asked;
}

/* OBJ_EXTEND of meta to rows (0: only read it with OBJ_EXTENT); dims gets the current dims. */
static pdcbb_err_t extent_rpc(uint64_t meta, uint64_t rows, uint64_t *dims, uint32_t *ndim)
{
    unsigned home = pdcbb_meta_id_server(meta);
    void *keep;
    pdcbb_err_t e;
    pdcbb_obj_extent_rep_t p;
    if (rows > 0) {
        pdcbb_obj_extend_req_t q = {.id = meta, .rows = rows};
        pdcbb_obj_extend_rep_t ep;
        e = client_op_obj_extend(home, &q, &ep, &keep);
        if (e == PDCBB_OK) {
            p.dims = ep.dims;
            p.dims_count = ep.dims_count;
        }
    } else {
        pdcbb_obj_extent_req_t q = {.id = meta};
        e = client_op_obj_extent(home, &q, &p, &keep);
    }
    if (e != PDCBB_OK)
        return e;
    if (p.dims_count == 0 || p.dims_count > PDCBB_NDIM_MAX) {
        client_rpc_release(rows > 0 ? PDCBB_OP_OBJ_EXTEND : PDCBB_OP_OBJ_EXTENT, &p, keep);
        return client_fail(PDCBB_ERR_PROTO, "the daemon answered %u dims", p.dims_count);
    }
    memcpy(dims, p.dims, p.dims_count * sizeof(uint64_t));
    *ndim = p.dims_count;
    client_rpc_release(rows > 0 ? PDCBB_OP_OBJ_EXTEND : PDCBB_OP_OBJ_EXTENT, &p, keep);
    known_note(meta, dims[0], rows);
    return PDCBB_OK;
}

pdcbb_err_t client_grow_written(uint64_t obj_meta, uint64_t end)
{
    grow_known_t *k = known_find(obj_meta);
    uint64_t dims[PDCBB_NDIM_MAX];
    uint32_t ndim;
    if (end == 0 || (k != NULL && k->rows >= end))
        return PDCBB_OK;
    return extent_rpc(obj_meta, end, dims, &ndim);
}

/* extent_rpc of open object o, a failure told as fn's: "fn: object 'name': why". */
static pdcbb_err_t obj_extent_rpc(const client_obj_t *o, uint64_t rows, uint64_t *dims,
                                  uint32_t *ndim, const char *fn)
{
    if (extent_rpc(o->meta_id, rows, dims, ndim) == PDCBB_OK)
        return PDCBB_OK;
    return client_fail(PDCbb_last_error(), "%s: object '%s': %s", fn, o->name,
                       PDCbb_last_error_message());
}

/* The open object obj_id whose first dim is unlimited, or NULL with the thread's error. */
static client_obj_t *growing_obj(pdcid_t obj_id, const char *fn)
{
    client_obj_t *o = client_check_init() == PDCBB_OK ? client_obj_get(obj_id, fn) : NULL;
    if (o == NULL)
        return NULL;
    if (o->deleted) {
        client_fail(PDCBB_ERR_NOT_FOUND, "%s: object '%s' was deleted", fn, o->name);
        return NULL;
    }
    if (o->prop.pub.ndim == 0 || o->prop.pub.dims[0] != PDC_SIZE_UNLIMITED) {
        client_fail(PDCBB_ERR_UNSUPPORTED,
                    "%s: object '%s' does not grow: its first dimension is not "
                    "PDC_SIZE_UNLIMITED",
                    fn, o->name);
        return NULL;
    }
    return o;
}

perr_t PDCbb_obj_extend(pdcid_t obj_id, uint64_t new_rows)
{
    const char *fn = "PDCbb_obj_extend";
    perr_t ret = FAIL;
    uint64_t dims[PDCBB_NDIM_MAX];
    uint32_t ndim;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = growing_obj(obj_id, fn);
    if (o == NULL)
        goto out;
    if (new_rows == 0 || new_rows == PDC_SIZE_UNLIMITED) {
        client_fail(PDCBB_ERR_INVAL, "%s: object '%s': %s rows is no extent", fn, o->name,
                    new_rows ? "PDC_SIZE_UNLIMITED" : "0");
        goto out;
    }
    grow_known_t *k = known_find(o->meta_id);
    if (k != NULL && k->asked > new_rows) {
        /* This process itself made it larger (an extend or a write): a mistake. */
        client_fail(PDCBB_ERR_INVAL,
                    "%s: object '%s' already has %llu rows: an extent never shrinks (asked %llu; "
                    "nothing changed)",
                    fn, o->name, (unsigned long long)k->asked, (unsigned long long)new_rows);
        goto out;
    }
    /* Another process may have gone further meanwhile: the daemon keeps the max, and the
     * object has at least new_rows rows either way. */
    if (obj_extent_rpc(o, new_rows, dims, &ndim, fn) != PDCBB_OK)
        goto out;
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}

perr_t PDCbb_obj_get_extent(pdcid_t obj_id, uint64_t *dims)
{
    const char *fn = "PDCbb_obj_get_extent";
    perr_t ret = FAIL;
    uint64_t cur[PDCBB_NDIM_MAX];
    uint32_t ndim;
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_check_init() == PDCBB_OK ? client_obj_get(obj_id, fn) : NULL;
    if (o == NULL)
        goto out;
    if (dims == NULL) {
        client_fail(PDCBB_ERR_INVAL, "%s: dims is NULL", fn);
        goto out;
    }
    if (o->prop.pub.ndim == 0 || o->prop.pub.dims[0] != PDC_SIZE_UNLIMITED) {
        /* A fixed object's extent is its dims. */
        if (o->prop.pub.ndim)
            memcpy(dims, o->prop.pub.dims, o->prop.pub.ndim * sizeof(uint64_t));
        ret = SUCCEED;
        goto out;
    }
    if (obj_extent_rpc(o, 0, cur, &ndim, fn) != PDCBB_OK)
        goto out;
    if (ndim != o->prop.pub.ndim) {
        client_fail(PDCBB_ERR_PROTO, "%s: object '%s': the daemon answered %u dims, not %zu", fn,
                    o->name, ndim, o->prop.pub.ndim);
        goto out;
    }
    memcpy(dims, cur, ndim * sizeof(uint64_t));
    ret = SUCCEED;
out:
    CLIENT_LEAVE();
    return ret;
}

/* ------------------------------------------------------------------ collective calls */

#ifdef ENABLE_MPI

/*
 * Broadcast the outcome of root's call over comm: status, root's error message and blob
 * (blob_len bytes; root's is taken, the others get a malloc'ed copy in *blob). Returns the
 * status; ranks other than root record root's failure as their own error.
 */
static int32_t coll_bcast(MPI_Comm comm, int root, const char *fn, int32_t status, void **blob,
                          uint32_t *blob_len)
{
    int rank = 0;
    char msg[512] = "";
    MPI_Comm_rank(comm, &rank);
    if (rank == root && status != PDCBB_OK)
        snprintf(msg, sizeof(msg), "%s", PDCbb_last_error_message());
    uint32_t head[2] = {(uint32_t)status, rank == root && status == PDCBB_OK ? *blob_len : 0};
    MPI_Bcast(head, 2, MPI_UINT32_T, root, comm);
    status = (int32_t)head[0];
    if (status != PDCBB_OK) {
        MPI_Bcast(msg, sizeof(msg), MPI_CHAR, root, comm);
        msg[sizeof(msg) - 1] = '\0';
        if (rank != root)
            client_fail(status, "%s: rank %d failed: %s", fn, root, msg);
        return status;
    }
    if (rank != root) {
        *blob_len = head[1];
        if ((*blob = malloc(head[1] ? head[1] : 1)) == NULL) {
            /* Still take part in the broadcast; fail locally. */
            char *sink = malloc(head[1] ? head[1] : 1);
            MPI_Bcast(sink, (int)head[1], MPI_BYTE, root, comm);
            free(sink);
            client_fail(PDCBB_ERR_NOMEM, "%s: out of memory", fn);
            return PDCBB_ERR_NOMEM;
        }
    }
    MPI_Bcast(*blob, (int)head[1], MPI_BYTE, root, comm);
    return PDCBB_OK;
}

/* Containers travel as 8 bytes of meta id and 4 of lifetime (little-endian). */
static pdcid_t cont_coll(const char *fn, const char *name, pdcid_t arg, MPI_Comm comm, int create)
{
    int rank = 0;
    uint8_t buf[12];
    void *blob = buf;
    uint32_t len = sizeof(buf);
    int32_t status = PDCBB_OK;
    pdcid_t id = 0;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS) {
        client_fail(PDCBB_ERR_INVAL, "%s: bad communicator", fn);
        return 0;
    }
    if (rank == 0) {
        id = create ? PDCcont_create(name, arg) : PDCcont_open(name, arg);
        CLIENT_ENTER();
        client_cont_t *c = id ? client_handle_get(id, CLIENT_H_CONT, NULL) : NULL;
        if (c == NULL) {
            status = PDCbb_last_error() ? PDCbb_last_error() : PDCBB_ERR_INTERNAL;
        } else {
            for (int i = 0; i < 8; i++)
                buf[i] = (uint8_t)(c->meta_id >> (8 * i));
            for (int i = 0; i < 4; i++)
                buf[8 + i] = (uint8_t)((uint32_t)c->lifetime >> (8 * i));
        }
        CLIENT_LEAVE();
        if (status != PDCBB_OK)
            client_fail(status, "%s: %s", fn, PDCbb_last_error_message());
    }
    status = coll_bcast(comm, 0, fn, status, &blob, &len);
    if (rank == 0 || status != PDCBB_OK)
        return rank == 0 && status == PDCBB_OK ? id : 0;
    CLIENT_ENTER();
    client_clear_error();
    uint8_t *b = blob;
    uint64_t meta = 0;
    uint32_t lifetime = 0;
    if (len == sizeof(buf)) {
        for (int i = 7; i >= 0; i--)
            meta = meta << 8 | b[i];
        for (int i = 3; i >= 0; i--)
            lifetime = lifetime << 8 | b[8 + i];
        id = client_cont_adopt(meta, name, (pdc_lifetime_t)lifetime, fn);
    } else {
        client_fail(PDCBB_ERR_PROTO, "%s: rank 0 sent %u bytes", fn, len);
    }
    CLIENT_LEAVE();
    free(blob);
    return id;
}

pdcid_t PDCbb_cont_create_coll(const char *cont_name, pdcid_t cont_create_prop, MPI_Comm comm)
{
    return cont_coll("PDCbb_cont_create_coll", cont_name, cont_create_prop, comm, 1);
}

pdcid_t PDCbb_cont_open_coll(const char *cont_name, pdcid_t pdc_id, MPI_Comm comm)
{
    return cont_coll("PDCbb_cont_open_coll", cont_name, pdc_id, comm, 0);
}

/* Objects travel as an encoded OBJ_INFO reply body. */
static int32_t obj_encode(pdcid_t id, void **blob, uint32_t *len)
{
    client_obj_t *o = client_handle_get(id, CLIENT_H_OBJ, NULL);
    if (o == NULL)
        return PDCBB_ERR_INTERNAL;
    const client_obj_prop_t *pr = &o->prop;
    pdcbb_obj_info_rep_t p = {
        .id = o->meta_id, .cont_id = o->cont_meta_id, .name = o->name,
        .type = (int32_t)pr->pub.type, .partition = (uint32_t)pr->pub.region_partition,
        .consistency = (uint32_t)pr->pub.consistency, .user_id = pr->user_id,
        .time_step = pr->time_step, .dims = pr->pub.dims, .dims_count = (uint32_t)pr->pub.ndim,
        .app_name = pr->app_name, .data_loc = pr->data_loc, .tags = pr->tags};
    size_t size;
    pdcbb_err_t rc = pdcbb_body_size(PDCBB_OP_OBJ_INFO, 1, &p, &size);
    if (rc != PDCBB_OK)
        return rc;
    if ((*blob = malloc(size ? size : 1)) == NULL)
        return PDCBB_ERR_NOMEM;
    if ((rc = pdcbb_body_encode(PDCBB_OP_OBJ_INFO, 1, &p, *blob, size)) != PDCBB_OK) {
        free(*blob);
        *blob = NULL;
        return rc;
    }
    *len = (uint32_t)size;
    return PDCBB_OK;
}

/* The object of an OBJ_INFO body from root: a handle in container cont_id (0: none). */
static pdcid_t obj_adopt_blob(const char *fn, const void *blob, uint32_t len, pdcid_t cont_id,
                              pdcid_t prop_id)
{
    pdcbb_obj_info_rep_t p;
    pdcbb_err_t rc = pdcbb_body_decode(PDCBB_OP_OBJ_INFO, 1, blob, len, &p);
    if (rc != PDCBB_OK) {
        client_fail(rc, "%s: the root rank's object could not be decoded", fn);
        return 0;
    }
    pdcid_t id = client_obj_adopt(&p, cont_id, fn);
    pdcbb_body_free(PDCBB_OP_OBJ_INFO, 1, &p);
    client_obj_prop_t *pr = prop_id ? client_handle_get(prop_id, CLIENT_H_OBJ_PROP, NULL) : NULL;
    client_obj_t *o = id ? client_handle_get(id, CLIENT_H_OBJ, NULL) : NULL;
    if (o != NULL && pr != NULL)
        o->prop.buf = pr->buf; /* this rank's PDCprop_set_obj_buf */
    return id;
}

/* The collective object create (open: create 0) of root over comm. */
static pdcid_t obj_coll(const char *fn, pdcid_t cont_id, const char *name, pdcid_t arg, int root,
                        MPI_Comm comm, int create)
{
    int rank = 0, size = 0;
    void *blob = NULL;
    uint32_t len = 0;
    int32_t status = PDCBB_OK;
    pdcid_t id = 0;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS ||
        root < 0 || root >= size) {
        client_fail(PDCBB_ERR_INVAL, "%s: bad communicator or root rank %d", fn, root);
        return 0;
    }
    if (rank == root) {
        id = create ? PDCobj_create(cont_id, name, arg) : PDCobj_open(name, arg);
        CLIENT_ENTER();
        status = id ? obj_encode(id, &blob, &len)
                    : (PDCbb_last_error() ? PDCbb_last_error() : PDCBB_ERR_INTERNAL);
        CLIENT_LEAVE();
        if (status != PDCBB_OK && id == 0)
            client_fail(status, "%s: %s", fn, PDCbb_last_error_message());
    }
    status = coll_bcast(comm, root, fn, status, &blob, &len);
    if (rank != root && status == PDCBB_OK) {
        CLIENT_ENTER();
        client_clear_error();
        id = obj_adopt_blob(fn, blob, len, create ? cont_id : 0, create ? arg : 0);
        CLIENT_LEAVE();
    }
    free(blob);
    return status == PDCBB_OK ? id : 0;
}

pdcid_t PDCbb_obj_create_coll(pdcid_t cont_id, const char *obj_name, pdcid_t obj_create_prop,
                              MPI_Comm comm)
{
    return obj_coll("PDCbb_obj_create_coll", cont_id, obj_name, obj_create_prop, 0, comm, 1);
}

pdcid_t PDCbb_obj_open_coll(const char *obj_name, pdcid_t pdc_id, MPI_Comm comm)
{
    return obj_coll("PDCbb_obj_open_coll", 0, obj_name, pdc_id, 0, comm, 0);
}

pdcid_t PDCobj_create_mpi(pdcid_t cont_id, const char *obj_name, pdcid_t obj_create_prop,
                          int rank_id, MPI_Comm comm)
{
    return obj_coll("PDCobj_create_mpi", cont_id, obj_name, obj_create_prop, rank_id, comm, 1);
}

#endif
