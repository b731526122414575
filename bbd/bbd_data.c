/*
 * bbd_data.c - region data in the daemon: the object data files, capacity, and the placement
 * map of PDC_REGION_LOCAL / PDC_REGION_DYNAMIC objects.
 *
 * Storage (decided by measurement, see docs/PERFORMANCE.md): each object this daemon holds data
 * of has one sparse file, <data dir>/objects/<object id>.dat, laid out like the object itself
 * (row-major, element offset * element size). A region write is one pwrite per contiguous run
 * of the region, in place: the newest write of an element wins, elements never written are
 * holes and read as zero, and overwriting the same region never grows the file. The index in
 * LMDB (table PDCBB_T_DATA) maps each object to its layout (element size and dimensions, fixed at
 * its first write here) so that every later access is checked against it.
 *
 * Capacity: the bytes the data files occupy (st_blocks) are counted; a write that may not fit
 * is checked exactly (SEEK_DATA/SEEK_HOLE: only holes need new space) and refused with
 * PDCBB_ERR_NOSPC, and the daemon keeps serving.
 *
 * Checksums (bbd_csum.h): every write counts as a writer of the blocks it touches and brings
 * their updates (computed by the I/O thread, or by the client on the direct path); reads check
 * each block once per daemon life before serving it, and name a damaged range in the reply.
 *
 * Durability: pwrite goes to the page cache, which survives the daemon's death; the writes run
 * on the I/O thread (bbd_io.h) and the reply is sent after them and after the index commit.
 * DATA_FLUSH (and shutdown) fsync.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bbd.h"
#include "bbd_csum.h"
#include "pdcbb_checked.h"
#include "pdcbb_log.h"
#include "pdcbb_name.h"
#include "pdcbb_region.h"

#define OPS (r->d->store_ops)
#define FD_CACHE 256
#define PDC_DIM_UNLIMITED_VALUE UINT64_MAX

/* One region of a DATA message. */
typedef struct data_desc {
    uint64_t obj;
    uint64_t unit;
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX];
    pdcbb_box_t box;
    uint64_t bytes;
} data_desc_t;

typedef struct fd_slot {
    uint64_t obj;
    int fd;
    uint64_t alloc; /* bytes the file occupies, as last measured */
} fd_slot_t;

/* A daemon's open data files (d->fds, from bbd_data_open to bbd_data_close): one slot per
 * hash of the object id, replaced on collision. */
struct bbd_fds {
    fd_slot_t slot[FD_CACHE];
};

static fd_slot_t *slot_for(bbd_t *d, uint64_t obj)
{
    return &d->fds->slot[(obj * 0x9e3779b97f4a7c15ull) >> 56 & (FD_CACHE - 1)];
}

static void path_of(bbd_t *d, uint64_t obj, char *out, size_t len)
{
    snprintf(out, len, "%s/objects/" PDCBB_DATA_FILE_FMT, d->data_dir, obj);
}

void bbd_data_path(bbd_t *d, uint64_t obj, char *out, size_t len)
{
    path_of(d, obj, out, len);
}

static uint64_t file_alloc(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? (uint64_t)st.st_blocks * 512u : 0;
}

pdcbb_err_t bbd_data_open(bbd_t *d, char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/objects", d->data_dir);
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    if (d->fds == NULL && (d->fds = malloc(sizeof(*d->fds))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return PDCBB_ERR_NOMEM;
    }
    for (int i = 0; i < FD_CACHE; i++)
        d->fds->slot[i].fd = -1;
    /* What the job already stored here (a restart) counts against its capacity. */
    d->data_used = 0;
    DIR *dir = opendir(path);
    if (dir == NULL) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return pdcbb_err_from_errno(errno);
    }
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        struct stat st;
        if (de->d_name[0] != '.' && fstatat(dirfd(dir), de->d_name, &st, 0) == 0 &&
            S_ISREG(st.st_mode))
            d->data_used += (uint64_t)st.st_blocks * 512u;
    }
    closedir(dir);
    uint64_t cap = d->cfg.capacity / (d->cfg.servers_per_node ? d->cfg.servers_per_node : 1);
    d->data_capacity = cap;
    PDCBB_INFO("region data: %" PRIu64 " bytes stored, capacity %" PRIu64 " bytes", d->data_used,
               cap);
    return bbd_csum_open(d, err, errlen);
}

void bbd_data_close(bbd_t *d)
{
    for (int i = 0; d->fds && i < FD_CACHE; i++) {
        fd_slot_t *s = &d->fds->slot[i];
        if (s->fd >= 0) {
            if (fsync(s->fd) != 0)
                PDCBB_ERROR("fsync of the data of object %#" PRIx64 " failed: %s", s->obj,
                            strerror(errno));
            close(s->fd);
        }
    }
    free(d->fds);
    d->fds = NULL;
    bbd_query_cleanup(d);
    bbd_csum_close(d);
}

/* The data file of obj, opened (created if create) and cached; -1 with *rc on failure. */
static int obj_fd(bbd_t *d, uint64_t obj, int create, pdcbb_err_t *rc)
{
    fd_slot_t *s = slot_for(d, obj);
    if (s->fd >= 0 && s->obj == obj)
        return s->fd;
    char path[PATH_MAX + 64];
    path_of(d, obj, path, sizeof(path));
    int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
    if (fd < 0) {
        *rc = errno == ENOENT ? PDCBB_ERR_NOT_FOUND : pdcbb_err_from_errno(errno);
        return -1;
    }
    if (s->fd >= 0)
        close(s->fd);
    s->obj = obj;
    s->fd = fd;
    s->alloc = file_alloc(fd);
    return fd;
}

static fd_slot_t *slot_of(bbd_t *d, uint64_t obj)
{
    fd_slot_t *s = slot_for(d, obj);
    return s->fd >= 0 && s->obj == obj ? s : NULL;
}

/* Parse one descriptor at a[*pos]; checks every field (nothing from a client is trusted). */
static pdcbb_err_t desc_parse(const uint64_t *a, uint32_t n, uint32_t *pos, data_desc_t *dd)
{
    uint32_t p = *pos;
    if (!pdcbb_range_ok(p, 3, n))
        return PDCBB_ERR_PROTO;
    dd->obj = a[p];
    dd->unit = a[p + 1];
    uint64_t ndim = a[p + 2];
    if (ndim == 0 || ndim > PDCBB_REGION_NDIM_MAX || !pdcbb_range_ok(p, 3 + 3 * ndim, n))
        return PDCBB_ERR_PROTO;
    dd->ndim = (uint32_t)ndim;
    memcpy(dd->dims, a + p + 3, ndim * 8);
    *pos = p + 3 + 3 * (uint32_t)ndim;
    if (pdcbb_meta_id_kind(dd->obj) != PDCBB_META_KIND_OBJ)
        return PDCBB_ERR_BAD_ID;
    if (dd->unit == 0 || dd->unit > 64)
        return PDCBB_ERR_BAD_REGION;
    pdcbb_err_t rc = pdcbb_box_make(&dd->box, dd->ndim, a + p + 3 + ndim, a + p + 3 + 2 * ndim);
    uint64_t count;
    if (rc == PDCBB_OK)
        rc = pdcbb_box_check_within(&dd->box, dd->ndim, dd->dims);
    if (rc == PDCBB_OK)
        rc = pdcbb_box_count(&dd->box, &count);
    if (rc == PDCBB_OK && pdcbb_mul_overflow(count, dd->unit, &dd->bytes))
        rc = PDCBB_ERR_TOO_BIG;
    if (rc == PDCBB_OK) {
        uint64_t strides[PDCBB_REGION_NDIM_MAX];
        rc = pdcbb_layout_strides(dd->ndim, dd->dims, (size_t)dd->unit, strides);
    }
    return rc == PDCBB_ERR_TOO_BIG || rc == PDCBB_ERR_PROTO ? rc : rc ? PDCBB_ERR_BAD_REGION : rc;
}

/* The layout record of an object here: element size, ndim and dims[1..] (dims[0] may grow). */
static pdcbb_err_t layout_check(bbd_req_t *r, const data_desc_t *dd, int create, int *exists)
{
    uint8_t key[8];
    uint64_t rec[2 + PDCBB_REGION_NDIM_MAX];
    pdcbb_val_t v;
    pdcbb_key_u64(key, dd->obj);
    pdcbb_err_t rc = OPS->get(r->txn, PDCBB_T_DATA, (pdcbb_val_t){key, 8}, &v);
    if (rc == PDCBB_OK) {
        *exists = 1;
        if (v.len != 8 * (2 + (size_t)dd->ndim))
            return PDCBB_ERR_BAD_REGION;
        memcpy(rec, v.data, v.len);
        if (rec[0] != dd->unit || rec[1] != dd->ndim)
            return PDCBB_ERR_BAD_REGION;
        for (uint32_t i = 1; i < dd->ndim; i++)
            if (rec[2 + i] != dd->dims[i])
                return PDCBB_ERR_BAD_REGION; /* only the first dimension may change */
        return PDCBB_OK;
    }
    *exists = 0;
    if (rc != PDCBB_ERR_NOT_FOUND || !create)
        return rc;
    rec[0] = dd->unit;
    rec[1] = dd->ndim;
    memcpy(rec + 2, dd->dims, 8 * (size_t)dd->ndim);
    return OPS->put(r->txn, PDCBB_T_DATA, (pdcbb_val_t){key, 8},
                    (pdcbb_val_t){rec, 8 * (2 + (size_t)dd->ndim)}, 0);
}

pdcbb_err_t bbd_data_layout_get(bbd_req_t *r, uint64_t obj, uint64_t *unit, uint32_t *ndim,
                                uint64_t *dims, int *exists)
{
    uint8_t key[8];
    pdcbb_val_t v;
    uint64_t rec[2 + PDCBB_REGION_NDIM_MAX];
    pdcbb_key_u64(key, obj);
    *exists = 0;
    pdcbb_err_t rc = OPS->get(r->txn, PDCBB_T_DATA, (pdcbb_val_t){key, 8}, &v);
    if (rc == PDCBB_ERR_NOT_FOUND)
        return PDCBB_OK;
    if (rc != PDCBB_OK)
        return rc;
    if (v.len < 24 || v.len > sizeof(rec) || v.len % 8 != 0)
        return PDCBB_ERR_STORE;
    memcpy(rec, v.data, v.len);
    if (rec[1] != v.len / 8 - 2)
        return PDCBB_ERR_STORE;
    *unit = rec[0];
    *ndim = (uint32_t)rec[1];
    memcpy(dims, rec + 2, 8 * (size_t)rec[1]);
    *exists = 1;
    return PDCBB_OK;
}

int bbd_data_fd(bbd_t *d, uint64_t obj, pdcbb_err_t *rc)
{
    return obj_fd(d, obj, 0, rc);
}

pdcbb_err_t bbd_data_layout_create(bbd_req_t *r, uint64_t obj, uint64_t unit, uint32_t ndim,
                                   const uint64_t *dims)
{
    data_desc_t dd = {.obj = obj, .unit = unit, .ndim = ndim};
    int exists;
    if (ndim == 0 || ndim > PDCBB_REGION_NDIM_MAX || unit == 0)
        return PDCBB_ERR_BAD_REGION;
    memcpy(dd.dims, dims, 8 * (size_t)ndim);
    return layout_check(r, &dd, 1, &exists);
}

/* Bytes of [off, off+len) of fd that are holes (need new space when written). */
static uint64_t hole_bytes(int fd, uint64_t off, uint64_t len)
{
    uint64_t holes = 0, pos = off, end = off + len;
    while (pos < end) {
        off_t data = lseek(fd, (off_t)pos, SEEK_DATA);
        if (data < 0) { /* ENXIO: no data after pos */
            holes += end - pos;
            break;
        }
        if ((uint64_t)data > pos)
            holes += ((uint64_t)data < end ? (uint64_t)data : end) - pos;
        if ((uint64_t)data >= end)
            break;
        off_t hole = lseek(fd, data, SEEK_HOLE);
        if (hole < 0)
            break;
        pos = (uint64_t)hole;
    }
    return holes;
}

typedef struct run_ctx {
    int fd;
    uint8_t *buf;
    uint64_t need; /* hole bytes (capacity check) */
    int err;
} run_ctx_t;

typedef struct io_ctx {
    bbd_io_batch_t *b;
    int fd;
    const uint8_t *src;
    uint32_t region;
    uint64_t obj;
    pdcbb_err_t rc;
} io_ctx_t;

/* A run of a write, for the I/O thread. */
static int run_queue(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    io_ctx_t *c = arg;
    c->rc = bbd_io_add_run(c->b, c->fd, c->src + packed_off, len, array_off, c->region, c->obj);
    return c->rc == PDCBB_OK ? 0 : -1;
}

static int run_read(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    run_ctx_t *c = arg;
    uint64_t done = 0;
    while (done < len) {
        ssize_t n = pread(c->fd, c->buf + packed_off + done, len - done,
                          (off_t)(array_off + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            c->err = errno;
            return -1;
        }
        if (n == 0) { /* past the end of the file: never written */
            memset(c->buf + packed_off + done, 0, len - done);
            break;
        }
        done += (uint64_t)n;
    }
    return 0;
}

static int run_holes(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    run_ctx_t *c = arg;
    c->need += hole_bytes(c->fd, array_off, len);
    (void)packed_off;
    return 0;
}

/* The capacity check of one region about to be written (bytes more may be in flight). */
static pdcbb_err_t capacity_check(bbd_t *d, const data_desc_t *dd, int fd, uint64_t nospc[3])
{
    uint64_t used = d->data_used + d->data_inflight;
    if (used + dd->bytes <= d->data_capacity)
        return PDCBB_OK;
    /* May not fit: count exactly what is new. */
    run_ctx_t c = {.fd = fd};
    pdcbb_box_runs(&dd->box, dd->ndim, dd->dims, (size_t)dd->unit, run_holes, &c);
    if (used + c.need <= d->data_capacity)
        return PDCBB_OK;
    PDCBB_INFO("write of %" PRIu64 " bytes to object %#" PRIx64 " refused: %" PRIu64
               " new bytes do not fit (%" PRIu64 " of %" PRIu64 " used)",
               dd->bytes, dd->obj, c.need, used, d->data_capacity);
    nospc[0] = d->data_capacity;
    nospc[1] = used;
    nospc[2] = c.need;
    return PDCBB_ERR_NOSPC;
}

/*
 * A malformed descriptor fails the whole message (its bulk bytes could not be located); errors
 * of one region at run time (no space, I/O, a layout that does not match the object's) are
 * reported in that region's result and the other regions proceed.
 */
pdcbb_err_t bbd_op_data_write(bbd_req_t *r, const pdcbb_data_write_req_t *q,
                              pdcbb_data_write_rep_t *p)
{
    bbd_t *d = r->d;
    /* One status per region (a region takes at least 6 descriptor words), then, when a region
     * was refused for space, its capacity, used and needed bytes (docs/PROTOCOL.md). */
    uint64_t *results = bbd_req_alloc(r, 8 * ((size_t)q->descs_count / 6 + 4));
    if (results == NULL)
        return PDCBB_ERR_NOMEM;
    uint32_t pos = 0, n = 0;
    uint64_t data_off = 0, nospc[3] = {0, 0, 0};
    int refused = 0;
    while (pos < q->descs_count) {
        data_desc_t dd;
        pdcbb_err_t one = desc_parse(q->descs, q->descs_count, &pos, &dd);
        if (one != PDCBB_OK)
            return one;
        if (!pdcbb_range_ok(data_off, dd.bytes, r->in_bulk_len))
            return PDCBB_ERR_TRUNCATED; /* the bulk part is shorter than the regions */
        int exists = 0, fd = -1;
        one = layout_check(r, &dd, 1, &exists);
        if (one == PDCBB_OK && (fd = obj_fd(d, dd.obj, 1, &one)) < 0)
            PDCBB_ERROR("cannot open the data file of object %#" PRIx64 ": %s", dd.obj,
                        pdcbb_strerror(one));
        const uint8_t *src = (const uint8_t *)r->in_bulk + data_off;
        if (one == PDCBB_OK) {
            one = capacity_check(d, &dd, fd, refused ? (uint64_t[3]){0} : nospc);
            if (one == PDCBB_ERR_NOSPC)
                refused = 1;
        }
        if (one == PDCBB_OK) {
            bbd_query_dirty_box(r->d, dd.obj, dd.ndim, dd.dims, &dd.box);
            /* The file writes go to the I/O thread; the reply waits for them. */
            if (r->io == NULL && (r->io = calloc(1, sizeof(*r->io))) == NULL)
                return PDCBB_ERR_NOMEM;
            io_ctx_t ic = {.b = r->io, .fd = fd, .src = src, .region = n, .obj = dd.obj};
            uint32_t from = r->io->touch.n;
            one = bbd_csum_touch_box(&r->io->touch, dd.obj, &dd.box, dd.ndim, dd.dims, dd.unit);
            if (one == PDCBB_OK)
                one = bbd_csum_begin(r->d, r->txn, &r->io->touch, from);
            if (one != PDCBB_OK) {
                r->io->touch.n = from;
            } else if (pdcbb_box_runs(&dd.box, dd.ndim, dd.dims, (size_t)dd.unit, run_queue,
                                      &ic) != 0) {
                one = ic.rc ? ic.rc : PDCBB_ERR_IO;
            } else {
                r->io->bytes += dd.bytes;
                d->data_inflight += dd.bytes;
            }
        }
        results[n++] = (uint64_t)(uint32_t)one;
        data_off += dd.bytes;
    }
    if (data_off != r->in_bulk_len)
        return PDCBB_ERR_PROTO; /* more bulk bytes than regions */
    if (refused) {
        memcpy(results + n, nospc, sizeof(nospc));
        n += 3;
    }
    if (r->io) {
        if ((r->io->results = malloc(8 * ((size_t)n + 1))) == NULL)
            return PDCBB_ERR_NOMEM;
        memcpy(r->io->results, results, 8 * (size_t)n);
        r->io->nresults = n;
    }
    p->results = results;
    p->results_count = n;
    return PDCBB_OK;
}

void bbd_data_account(bbd_t *d, const bbd_io_batch_t *b)
{
    d->data_inflight -= b->bytes < d->data_inflight ? b->bytes : d->data_inflight;
    uint64_t last = 0;
    for (uint32_t i = 0; i < b->nruns; i++) {
        if (b->runs[i].obj == last)
            continue;
        last = b->runs[i].obj;
        fd_slot_t *s = slot_of(d, last);
        if (s) {
            uint64_t now = file_alloc(s->fd);
            d->data_used = d->data_used + now - s->alloc;
            s->alloc = now;
        }
    }
}

typedef struct one_run {
    uint64_t off, len;
    int count;
} one_run_t;

static int run_count(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    one_run_t *o = arg;
    o->off = array_off;
    o->len = len;
    (void)packed_off;
    return ++o->count > 1 ? 1 : 0;
}

/*
 * A read of one contiguous run that lies within the file: reply straight from a mapping of the
 * file (the page cache), so the client's rendezvous pull is the only copy. Anything else (holes
 * past the end of the file, several runs) goes through pread.
 */
static pdcbb_err_t read_mapped(bbd_req_t *r, const pdcbb_data_read_req_t *q, uint64_t *results)
{
    data_desc_t dd;
    uint32_t pos = 0;
    int exists = 0;
    one_run_t run = {0};
    pdcbb_err_t rc = desc_parse(q->descs, q->descs_count, &pos, &dd);
    if (rc != PDCBB_OK || dd.bytes < (64u << 10) || layout_check(r, &dd, 0, &exists) != PDCBB_OK ||
        !exists)
        return PDCBB_ERR_UNSUPPORTED;
    if (pdcbb_box_runs(&dd.box, dd.ndim, dd.dims, (size_t)dd.unit, run_count, &run) != 0 ||
        run.count != 1)
        return PDCBB_ERR_UNSUPPORTED;
    int fd = obj_fd(r->d, dd.obj, 0, &rc);
    struct stat st;
    bbd_csum_bad_t bad;
    if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_size < run.off + run.len ||
        bbd_csum_serve_box(r, fd, dd.obj, &dd.box, dd.ndim, dd.dims, dd.unit, &bad) != PDCBB_OK)
        return PDCBB_ERR_UNSUPPORTED; /* the general path reports what is wrong */
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t base = run.off & ~(page - 1), delta = run.off - base;
    void *map = mmap(NULL, run.len + delta, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, (off_t)base);
    if (map == MAP_FAILED)
        return PDCBB_ERR_UNSUPPORTED;
    r->out_map = map;
    r->out_map_len = run.len + delta;
    r->out_bulk = (uint8_t *)map + delta;
    r->out_bulk_len = run.len;
    results[0] = PDCBB_OK;
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_data_read(bbd_req_t *r, const pdcbb_data_read_req_t *q,
                             pdcbb_data_read_rep_t *p)
{
    bbd_t *d = r->d;
    uint32_t pos = 0, n = 0;
    uint64_t total = 0;
    /* First pass: check every descriptor and size the reply's bulk part. */
    while (pos < q->descs_count) {
        data_desc_t dd;
        pdcbb_err_t one = desc_parse(q->descs, q->descs_count, &pos, &dd);
        if (one != PDCBB_OK)
            return one;
        if (pdcbb_add_overflow(total, dd.bytes, &total) || total > PDCBB_DATA_BULK_MAX)
            return PDCBB_ERR_TOO_BIG; /* clients split reads below this */
        n++;
    }
    uint64_t *results = bbd_req_alloc(r, 8 * ((size_t)n + 3));
    if (results == NULL)
        return PDCBB_ERR_NOMEM;
    if (n == 1 && read_mapped(r, q, results) == PDCBB_OK) {
        p->results = results;
        p->results_count = 1;
        return PDCBB_OK;
    }
    uint8_t *out = bbd_staging_get(d, total ? total : 1, 0);
    if (out == NULL)
        return PDCBB_ERR_NOMEM;
    pos = 0;
    n = 0;
    uint64_t off = 0;
    bbd_csum_bad_t bad = {0}, first = {0};
    while (pos < q->descs_count) {
        data_desc_t dd;
        desc_parse(q->descs, q->descs_count, &pos, &dd);
        int exists = 0;
        pdcbb_err_t one = layout_check(r, &dd, 0, &exists);
        if (one == PDCBB_ERR_NOT_FOUND || (one == PDCBB_OK && !exists)) {
            one = PDCBB_OK;
            memset(out + off, 0, dd.bytes); /* nothing of this object here: zeros */
        } else if (one == PDCBB_OK) {
            int fd = obj_fd(d, dd.obj, 1, &one);
            run_ctx_t c = {.fd = fd, .buf = out + off};
            if (fd >= 0)
                one = bbd_csum_serve_box(r, fd, dd.obj, &dd.box, dd.ndim, dd.dims, dd.unit, &bad);
            if (one == PDCBB_ERR_CORRUPT && first.kind == 0)
                first = bad;
            if (fd >= 0 && one == PDCBB_OK &&
                pdcbb_box_runs(&dd.box, dd.ndim, dd.dims, (size_t)dd.unit, run_read, &c) != 0)
                one = c.err ? pdcbb_err_from_errno(c.err) : PDCBB_ERR_IO;
        }
        if (one != PDCBB_OK)
            memset(out + off, 0, dd.bytes);
        off += dd.bytes;
        results[n++] = (uint64_t)(uint32_t)one;
    }
    if (first.kind != 0) { /* the first damaged range (docs/PROTOCOL.md) */
        results[n++] = first.start;
        results[n++] = first.end;
        results[n++] = (uint64_t)first.kind;
    }
    r->out_bulk = out;
    r->out_bulk_len = total;
    p->results = results;
    p->results_count = n;
    return PDCBB_OK;
}

pdcbb_err_t bbd_data_read_desc(bbd_req_t *r, const uint64_t *desc, uint32_t n, uint64_t max,
                               uint8_t **out, uint64_t *bytes)
{
    data_desc_t dd;
    uint32_t pos = 0;
    int exists = 0;
    pdcbb_err_t rc = desc_parse(desc, n, &pos, &dd);
    if (rc != PDCBB_OK)
        return rc;
    if (pos != n)
        return PDCBB_ERR_PROTO;
    if (dd.bytes > max)
        return PDCBB_ERR_TOO_BIG;
    uint8_t *buf = calloc(1, dd.bytes ? dd.bytes : 1);
    if (buf == NULL)
        return PDCBB_ERR_NOMEM;
    rc = layout_check(r, &dd, 0, &exists);
    if (rc == PDCBB_ERR_NOT_FOUND || (rc == PDCBB_OK && !exists)) {
        rc = PDCBB_OK; /* nothing of this object here: zeros */
    } else if (rc == PDCBB_OK) {
        int fd = obj_fd(r->d, dd.obj, 1, &rc);
        run_ctx_t c = {.fd = fd, .buf = buf};
        bbd_csum_bad_t bad;
        if (fd >= 0)
            rc = bbd_csum_serve_box(r, fd, dd.obj, &dd.box, dd.ndim, dd.dims, dd.unit, &bad);
        if (fd >= 0 && rc == PDCBB_OK &&
            pdcbb_box_runs(&dd.box, dd.ndim, dd.dims, (size_t)dd.unit, run_read, &c) != 0)
            rc = c.err ? pdcbb_err_from_errno(c.err) : PDCBB_ERR_IO;
    }
    if (rc != PDCBB_OK) {
        free(buf);
        return rc;
    }
    *out = buf;
    *bytes = dd.bytes;
    return PDCBB_OK;
}

void bbd_data_direct_release(bbd_t *d, bbd_conn_t *c)
{
    uint64_t b = c->direct_reserved < d->data_inflight ? c->direct_reserved : d->data_inflight;
    d->data_inflight -= b;
    c->direct_reserved = 0;
}

/* Count the file of obj at its new size. */
static void direct_account(bbd_t *d, uint64_t obj)
{
    fd_slot_t *s = slot_of(d, obj);
    if (s) {
        uint64_t now = file_alloc(s->fd);
        d->data_used = d->data_used + now - s->alloc;
        s->alloc = now;
    }
}

uint64_t bbd_data_hole_bytes(int fd, uint64_t off, uint64_t len)
{
    return hole_bytes(fd, off, len);
}

void bbd_data_recount(bbd_t *d, uint64_t obj)
{
    direct_account(d, obj);
}

/* DONE of a direct write: the checksum updates the client computed (its bulk part). */
static pdcbb_err_t direct_done(bbd_req_t *r, const bbd_csum_touch_t *touch)
{
    if (r->in_bulk_len % PDCBB_CSUM_WIRE_LEN != 0)
        return PDCBB_ERR_PROTO;
    size_t nu = r->in_bulk_len / PDCBB_CSUM_WIRE_LEN;
    pdcbb_csum_upd_t *u = bbd_req_alloc(r, (nu ? nu : 1) * sizeof(*u));
    if (u == NULL)
        return PDCBB_ERR_NOMEM;
    for (size_t i = 0; i < nu; i++)
        if (pdcbb_csum_upd_decode(r->in_bulk + i * PDCBB_CSUM_WIRE_LEN, &u[i]) != PDCBB_OK)
            return PDCBB_ERR_PROTO;
    return bbd_csum_end(r->d, r->txn, touch, u, nu);
}

/*
 * DATA_DIRECT (docs/PROTOCOL.md): the client moves the bytes; this checks the regions exactly
 * as DATA_WRITE / DATA_READ do, holds the capacity a write needs until the client says DONE (or
 * its connection ends), and tells the client which file to use by its identity.
 */
pdcbb_err_t bbd_op_data_direct(bbd_req_t *r, const pdcbb_data_direct_req_t *q,
                               pdcbb_data_direct_rep_t *p)
{
    bbd_t *d = r->d;
    struct stat st;
    if (q->mode == PDCBB_DIRECT_PROBE) {
        char *dir = bbd_req_alloc(r, PATH_MAX + 16);
        uint64_t *res = bbd_req_alloc(r, 16);
        if (dir == NULL || res == NULL)
            return PDCBB_ERR_NOMEM;
        snprintf(dir, PATH_MAX + 16, "%s/objects", d->data_dir);
        if (stat(dir, &st) != 0)
            return pdcbb_err_from_errno(errno);
        res[0] = (uint64_t)st.st_dev;
        res[1] = (uint64_t)st.st_ino;
        p->dir = dir;
        p->results = res;
        p->results_count = 2;
        return PDCBB_OK;
    }
    if (q->mode != PDCBB_DIRECT_WRITE && q->mode != PDCBB_DIRECT_READ &&
        q->mode != PDCBB_DIRECT_DONE)
        return PDCBB_ERR_PROTO;
    if (r->conn == NULL)
        return PDCBB_ERR_UNSUPPORTED;
    uint64_t *results = bbd_req_alloc(r, 8 * (3 * ((size_t)q->descs_count / 6 + 1) + 3));
    if (results == NULL)
        return PDCBB_ERR_NOMEM;
    uint32_t pos = 0, n = 0;
    uint64_t nospc[3] = {0, 0, 0};
    int refused = 0;
    bbd_csum_touch_t touch = {0};
    bbd_csum_bad_t bad = {0}, first = {0};
    pdcbb_err_t rc = PDCBB_OK;
    while (pos < q->descs_count && rc == PDCBB_OK) {
        data_desc_t dd;
        pdcbb_err_t one = desc_parse(q->descs, q->descs_count, &pos, &dd);
        if (one != PDCBB_OK) {
            rc = one;
            break;
        }
        if (q->mode != PDCBB_DIRECT_READ) /* the client writes the file itself */
            bbd_query_dirty_box(r->d, dd.obj, dd.ndim, dd.dims, &dd.box);
        if (q->mode == PDCBB_DIRECT_DONE) {
            uint64_t b = dd.bytes < r->conn->direct_reserved ? dd.bytes : r->conn->direct_reserved;
            r->conn->direct_reserved -= b;
            d->data_inflight -= b < d->data_inflight ? b : d->data_inflight;
            direct_account(d, dd.obj);
            rc = bbd_csum_touch_box(&touch, dd.obj, &dd.box, dd.ndim, dd.dims, dd.unit);
            results[n++] = PDCBB_OK;
            continue;
        }
        int exists = 0, fd = -1;
        one = layout_check(r, &dd, q->mode == PDCBB_DIRECT_WRITE, &exists);
        if (q->mode == PDCBB_DIRECT_READ && (one == PDCBB_ERR_NOT_FOUND || (one == PDCBB_OK &&
                                                                            !exists))) {
            results[n++] = PDCBB_OK; /* nothing of this object here: zeros */
            results[n++] = 0;
            results[n++] = 0;
            continue;
        }
        if (one == PDCBB_OK && (fd = obj_fd(d, dd.obj, 1, &one)) < 0)
            PDCBB_ERROR("cannot open the data file of object %#" PRIx64 ": %s", dd.obj,
                        pdcbb_strerror(one));
        if (one == PDCBB_OK && fstat(fd, &st) != 0)
            one = pdcbb_err_from_errno(errno);
        if (one == PDCBB_OK && q->mode == PDCBB_DIRECT_READ) {
            one = bbd_csum_serve_box(r, fd, dd.obj, &dd.box, dd.ndim, dd.dims, dd.unit, &bad);
            if (one == PDCBB_ERR_CORRUPT && first.kind == 0)
                first = bad;
        }
        if (one == PDCBB_OK && q->mode == PDCBB_DIRECT_WRITE) {
            one = capacity_check(d, &dd, fd, refused ? (uint64_t[3]){0} : nospc);
            if (one == PDCBB_ERR_NOSPC)
                refused = 1;
        }
        if (one == PDCBB_OK && q->mode == PDCBB_DIRECT_WRITE) {
            /* the blocks are being written until DONE (or the next start) */
            uint32_t from = touch.n;
            one = bbd_csum_touch_box(&touch, dd.obj, &dd.box, dd.ndim, dd.dims, dd.unit);
            if (one == PDCBB_OK)
                one = bbd_csum_begin(r->d, r->txn, &touch, from);
            touch.n = from;
        }
        if (one == PDCBB_OK && q->mode == PDCBB_DIRECT_WRITE) {
            r->conn->direct_reserved += dd.bytes;
            d->data_inflight += dd.bytes;
        }
        results[n++] = (uint64_t)(uint32_t)one;
        results[n++] = one == PDCBB_OK ? (uint64_t)st.st_dev : 0;
        results[n++] = one == PDCBB_OK ? (uint64_t)st.st_ino : 0;
    }
    if (rc == PDCBB_OK && q->mode == PDCBB_DIRECT_DONE)
        rc = direct_done(r, &touch);
    bbd_csum_touch_free(&touch);
    if (rc != PDCBB_OK)
        return rc;
    if (refused) {
        memcpy(results + n, nospc, sizeof(nospc));
        n += 3;
    } else if (first.kind != 0) { /* a read of a damaged range (docs/PROTOCOL.md) */
        results[n++] = first.start;
        results[n++] = first.end;
        results[n++] = (uint64_t)first.kind;
    }
    p->results = results;
    p->results_count = n;
    p->dir = "";
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_data_flush(bbd_req_t *r, const pdcbb_data_flush_req_t *q,
                              pdcbb_data_flush_rep_t *p)
{
    pdcbb_err_t rc = PDCBB_OK;
    for (int i = 0; i < FD_CACHE; i++) {
        const fd_slot_t *s = &r->d->fds->slot[i];
        if (s->fd >= 0 && (q->id == 0 || s->obj == q->id) && fdatasync(s->fd) != 0)
            rc = pdcbb_err_from_errno(errno);
    }
    if (rc == PDCBB_OK)
        rc = OPS->sync(r->d->store);
    return rc;
}

pdcbb_err_t bbd_op_data_drop(bbd_req_t *r, const pdcbb_data_drop_req_t *q,
                             pdcbb_data_drop_rep_t *p)
{
    bbd_t *d = r->d;
    uint8_t key[8];
    char path[PATH_MAX + 64];
    struct stat st;
    if (pdcbb_meta_id_kind(q->id) != PDCBB_META_KIND_OBJ)
        return PDCBB_ERR_BAD_ID;
    bbd_query_forget(r->d, q->id);
    pdcbb_err_t crc = bbd_csum_drop(r, q->id);
    if (crc != PDCBB_OK)
        return crc;
    fd_slot_t *s = slot_of(d, q->id);
    if (s) {
        close(s->fd);
        s->fd = -1;
    }
    path_of(d, q->id, path, sizeof(path));
    if (stat(path, &st) == 0) {
        uint64_t alloc = (uint64_t)st.st_blocks * 512u;
        if (unlink(path) != 0)
            return pdcbb_err_from_errno(errno);
        d->data_used = d->data_used > alloc ? d->data_used - alloc : 0;
    }
    pdcbb_key_u64(key, q->id);
    pdcbb_err_t rc = OPS->del(r->txn, PDCBB_T_DATA, (pdcbb_val_t){key, 8});
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

/*
 * New dims of an object: data beyond the new first extent is discarded (a later growth shows
 * zeros there). The other extents are part of the file's layout: they can only change while
 * this daemon holds no data of the object.
 */
pdcbb_err_t bbd_op_data_resize(bbd_req_t *r, const pdcbb_data_resize_req_t *q,
                               pdcbb_data_resize_rep_t *p)
{
    uint8_t key[8];
    pdcbb_val_t v;
    uint64_t rec[2 + PDCBB_REGION_NDIM_MAX];
    if (pdcbb_meta_id_kind(q->id) != PDCBB_META_KIND_OBJ)
        return PDCBB_ERR_BAD_ID;
    if (q->ids_count == 0 || q->ids_count > PDCBB_REGION_NDIM_MAX)
        return PDCBB_ERR_BAD_REGION;
    bbd_query_forget(r->d, q->id);
    pdcbb_key_u64(key, q->id);
    pdcbb_err_t rc = OPS->get(r->txn, PDCBB_T_DATA, (pdcbb_val_t){key, 8}, &v);
    if (rc == PDCBB_ERR_NOT_FOUND)
        return PDCBB_OK; /* no data here */
    if (rc != PDCBB_OK)
        return rc;
    if (v.len != 8 * (2 + (size_t)q->ids_count))
        return PDCBB_ERR_BAD_REGION;
    memcpy(rec, v.data, v.len);
    uint64_t row = rec[0];
    for (uint32_t i = 1; i < q->ids_count; i++) {
        if (rec[2 + i] != q->ids[i])
            return PDCBB_ERR_BAD_REGION;
        row *= q->ids[i];
    }
    if (q->ids[0] != PDC_DIM_UNLIMITED_VALUE) {
        pdcbb_err_t e = PDCBB_OK;
        int fd = obj_fd(r->d, q->id, 0, &e);
        struct stat st;
        uint64_t end;
        if (fd >= 0 && fstat(fd, &st) == 0 && !pdcbb_mul_overflow(q->ids[0], row, &end) &&
            (uint64_t)st.st_size > end) {
            /* the block cut in two keeps a checksum only if it was good before the cut */
            bbd_csum_touch_t t = {0};
            bbd_csum_bad_t bad;
            int good = end % PDCBB_CSUM_BLOCK == 0 ||
                       (bbd_csum_touch_range(&t, q->id, end - 1, 1) == PDCBB_OK &&
                        bbd_csum_serve(r, fd, &t, 0, &bad) == PDCBB_OK);
            bbd_csum_touch_free(&t);
            if (ftruncate(fd, (off_t)end) != 0)
                return pdcbb_err_from_errno(errno);
            pdcbb_err_t crc = bbd_csum_truncate(r, fd, q->id, end, good);
            if (crc != PDCBB_OK)
                return crc;
            fd_slot_t *s = slot_of(r->d, q->id);
            if (s) {
                uint64_t now = file_alloc(fd);
                r->d->data_used = r->d->data_used + now - s->alloc;
                s->alloc = now;
            }
        }
    }
    return PDCBB_OK;
}

/* ---------------------------------------------------------------- placement map */

/* Map entries: key = object id + sequence (both big-endian), value = u64 daemon, u64 ndim,
 * offsets, sizes. The home daemon of the object keeps them. */

static pdcbb_err_t map_next_seq(bbd_req_t *r, uint64_t *seq)
{
    static const char key[] = "map_seq";
    uint8_t buf[8];
    pdcbb_val_t v;
    uint64_t s = 1;
    pdcbb_err_t rc = OPS->get(r->txn, PDCBB_T_STATE, (pdcbb_val_t){key, sizeof(key) - 1}, &v);
    if (rc == PDCBB_OK && v.len == 8)
        s = pdcbb_key_get_u64(v.data);
    else if (rc != PDCBB_ERR_NOT_FOUND && rc != PDCBB_OK)
        return rc;
    pdcbb_key_u64(buf, s + 1);
    *seq = s;
    return OPS->put(r->txn, PDCBB_T_STATE, (pdcbb_val_t){key, sizeof(key) - 1},
                    (pdcbb_val_t){buf, 8}, 0);
}

/* Bytes assigned so far to each daemon by this home daemon (REGION_DYNAMIC's choice). */
static pdcbb_err_t assigned_get(bbd_req_t *r, uint64_t *assigned)
{
    static const char key[] = "map_assigned";
    pdcbb_val_t v;
    memset(assigned, 0, 8 * (size_t)r->d->nservers);
    pdcbb_err_t rc = OPS->get(r->txn, PDCBB_T_STATE, (pdcbb_val_t){key, sizeof(key) - 1}, &v);
    if (rc == PDCBB_OK && v.len == 8 * (size_t)r->d->nservers)
        memcpy(assigned, v.data, v.len);
    return rc == PDCBB_ERR_NOT_FOUND || rc == PDCBB_OK ? PDCBB_OK : rc;
}

static pdcbb_err_t assigned_put(bbd_req_t *r, const uint64_t *assigned)
{
    static const char key[] = "map_assigned";
    return OPS->put(r->txn, PDCBB_T_STATE, (pdcbb_val_t){key, sizeof(key) - 1},
                    (pdcbb_val_t){assigned, 8 * (size_t)r->d->nservers}, 0);
}

/* Map values: u64 daemon, ndim, offsets, sizes, bytes. */
static pdcbb_err_t entry_box(const uint64_t *v, size_t len, pdcbb_box_t *b)
{
    if (len < 2 || v[1] == 0 || v[1] > PDCBB_REGION_NDIM_MAX || len != 3 + 2 * v[1])
        return PDCBB_ERR_STORE;
    return pdcbb_box_make(b, (uint32_t)v[1], v + 2, v + 2 + v[1]);
}

/* If a and b are adjacent along one dimension and equal in the others, their union. */
static int box_union_adjacent(const pdcbb_box_t *a, const pdcbb_box_t *b, pdcbb_box_t *out)
{
    int along = -1;
    for (uint32_t d = 0; d < a->ndim; d++) {
        if (a->off[d] == b->off[d] && a->size[d] == b->size[d])
            continue;
        if (along >= 0)
            return 0;
        if (a->off[d] + a->size[d] != b->off[d] && b->off[d] + b->size[d] != a->off[d])
            return 0;
        along = (int)d;
    }
    if (along < 0)
        return 0;
    *out = *a;
    out->off[along] = a->off[along] < b->off[along] ? a->off[along] : b->off[along];
    out->size[along] = a->size[along] + b->size[along];
    return 1;
}

typedef struct map_entry {
    uint8_t key[16];
    uint64_t daemon;
    uint64_t bytes;
    pdcbb_box_t box;
} map_entry_t;

/* The object's entries, oldest first (malloc'ed array). */
static pdcbb_err_t map_entries(bbd_req_t *r, uint64_t obj, map_entry_t **out, size_t *n)
{
    uint8_t prefix[8];
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    map_entry_t *es = NULL;
    size_t cnt = 0, cap = 0;
    pdcbb_key_u64(prefix, obj);
    pdcbb_err_t rc = OPS->cursor_open(r->txn, PDCBB_T_MAP, &c);
    if (rc != PDCBB_OK)
        return rc;
    rc = OPS->cursor_seek(c, (pdcbb_val_t){prefix, 8}, &k, &v);
    while (rc == PDCBB_OK && k.len == 16 && memcmp(k.data, prefix, 8) == 0) {
        uint64_t vals[3 + 2 * PDCBB_REGION_NDIM_MAX];
        if (v.len <= sizeof(vals) && v.len % 8 == 0) {
            memcpy(vals, v.data, v.len);
            pdcbb_box_t b;
            if (entry_box(vals, v.len / 8, &b) == PDCBB_OK) {
                map_entry_t *g = pdcbb_grow(es, cnt, &cap, sizeof(*es), 16);
                if (g == NULL) {
                    rc = PDCBB_ERR_NOMEM;
                    break;
                }
                es = g;
                memcpy(es[cnt].key, k.data, 16);
                es[cnt].daemon = vals[0];
                es[cnt].bytes = vals[v.len / 8 - 1];
                es[cnt].box = b;
                cnt++;
            }
        }
        rc = OPS->cursor_next(c, &k, &v);
    }
    OPS->cursor_close(c);
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND) {
        free(es);
        return rc;
    }
    *out = es;
    *n = cnt;
    return PDCBB_OK;
}

static pdcbb_err_t map_insert(bbd_req_t *r, uint64_t obj, uint64_t daemon, uint64_t bytes,
                              const pdcbb_box_t *b)
{
    uint64_t seq;
    pdcbb_err_t rc = map_next_seq(r, &seq);
    if (rc != PDCBB_OK)
        return rc;
    uint8_t key[16];
    uint64_t val[3 + 2 * PDCBB_REGION_NDIM_MAX];
    pdcbb_key_u64(key, obj);
    pdcbb_key_u64(key + 8, seq);
    val[0] = daemon;
    val[1] = b->ndim;
    memcpy(val + 2, b->off, 8 * (size_t)b->ndim);
    memcpy(val + 2 + b->ndim, b->size, 8 * (size_t)b->ndim);
    val[2 + 2 * b->ndim] = bytes;
    return OPS->put(r->txn, PDCBB_T_MAP, (pdcbb_val_t){key, 16},
                    (pdcbb_val_t){val, 8 * (3 + 2 * (size_t)b->ndim)}, 0);
}

/*
 * Register one write. An overwrite of a box some entry already holds goes to that entry's
 * daemon (its bytes are there: no new space). Entries the new box covers are dropped, and a
 * write that continues the newest entry on the same daemon extends it, so repeated and
 * sequential writes keep the map short.
 */
static pdcbb_err_t map_put_one(bbd_req_t *r, uint64_t obj, uint64_t daemon, uint64_t bytes,
                               const pdcbb_box_t *nb, uint64_t *assigned, uint64_t *chosen)
{
    bbd_t *d = r->d;
    map_entry_t *es;
    size_t n;
    pdcbb_err_t rc = map_entries(r, obj, &es, &n);
    if (rc != PDCBB_OK)
        return rc;
    long holder = -1; /* newest entry containing the new box */
    for (size_t i = 0; i < n; i++)
        if (pdcbb_box_contains(&es[i].box, nb))
            holder = (long)i;
    if (daemon == UINT32_MAX) {
        if (holder >= 0) {
            daemon = es[holder].daemon;
        } else { /* the daemon with the fewest bytes so far */
            daemon = 0;
            for (unsigned i = 1; i < d->nservers; i++)
                if (assigned[i] < assigned[daemon])
                    daemon = i;
        }
    } else if (daemon >= d->nservers) {
        free(es);
        return PDCBB_ERR_BAD_ID;
    }
    if (!(holder >= 0 && es[holder].daemon == daemon))
        assigned[daemon] += bytes;
    pdcbb_box_t merged = *nb;
    uint64_t merged_bytes = bytes;
    for (size_t i = 0; i < n && rc == PDCBB_OK; i++) {
        int last = i + 1 == n;
        pdcbb_box_t u;
        if (pdcbb_box_contains(nb, &es[i].box))
            rc = OPS->del(r->txn, PDCBB_T_MAP, (pdcbb_val_t){es[i].key, 16});
        else if (last && es[i].daemon == daemon && !pdcbb_box_intersect(&es[i].box, nb, &u) &&
                 box_union_adjacent(&es[i].box, nb, &u)) {
            merged = u;
            merged_bytes += es[i].bytes;
            rc = OPS->del(r->txn, PDCBB_T_MAP, (pdcbb_val_t){es[i].key, 16});
        }
    }
    free(es);
    if (rc == PDCBB_OK)
        rc = map_insert(r, obj, daemon, merged_bytes, &merged);
    *chosen = daemon;
    return rc;
}

pdcbb_err_t bbd_op_map_put(bbd_req_t *r, const pdcbb_map_put_req_t *q, pdcbb_map_put_rep_t *p)
{
    bbd_t *d = r->d;
    if (pdcbb_meta_id_kind(q->id) != PDCBB_META_KIND_OBJ ||
        pdcbb_meta_id_server(q->id) != d->rank)
        return PDCBB_ERR_BAD_ID;
    /* only the placements that remember where regions went use the map */
    pdcbb_obj_info_req_t iq = {.id = q->id};
    pdcbb_obj_info_rep_t obj;
    pdcbb_err_t rc = bbd_op_obj_info(r, &iq, &obj);
    if (rc != PDCBB_OK)
        return rc;
    if (obj.partition != PDCBB_PLACE_REGION_DYNAMIC && obj.partition != PDCBB_PLACE_REGION_LOCAL) {
        PDCBB_WARN("MAP_PUT for object %s refused: its placement (%u) keeps no map",
                   pdcbb_esc(obj.name), (unsigned)obj.partition);
        return PDCBB_ERR_INVAL;
    }
    uint64_t *assigned = bbd_req_alloc(r, 8 * (size_t)d->nservers);
    uint64_t *daemons = bbd_req_alloc(r, 8 * ((size_t)q->entries_count / 4 + 1));
    if (assigned == NULL || daemons == NULL)
        return PDCBB_ERR_NOMEM;
    rc = assigned_get(r, assigned);
    uint32_t pos = 0, n = 0;
    while (rc == PDCBB_OK && pos < q->entries_count) {
        const uint64_t *e = q->entries + pos;
        if (n == PDCBB_MAP_PUT_REGIONS_MAX)
            return PDCBB_ERR_TOO_BIG;
        if (!pdcbb_range_ok(pos, 3, q->entries_count) || e[2] == 0 ||
            e[2] > PDCBB_REGION_NDIM_MAX || !pdcbb_range_ok(pos, 3 + 2 * e[2], q->entries_count))
            return PDCBB_ERR_PROTO;
        pdcbb_box_t nb;
        if (pdcbb_box_make(&nb, (uint32_t)e[2], e + 3, e + 3 + e[2]) != PDCBB_OK)
            return PDCBB_ERR_BAD_REGION;
        pos += 3 + 2 * (uint32_t)e[2];
        rc = map_put_one(r, q->id, e[0], e[1], &nb, assigned, &daemons[n]);
        n++;
    }
    if (rc == PDCBB_OK)
        rc = assigned_put(r, assigned);
    p->daemons = daemons;
    p->daemons_count = n;
    return rc;
}

/* Forget an object's entries (it was deleted): their bytes no longer count for the choice. */
pdcbb_err_t bbd_map_forget(bbd_req_t *r, uint64_t obj)
{
    map_entry_t *es;
    size_t n;
    uint64_t *assigned = bbd_req_alloc(r, 8 * (size_t)r->d->nservers);
    if (assigned == NULL)
        return PDCBB_ERR_NOMEM;
    pdcbb_err_t rc = assigned_get(r, assigned);
    if (rc == PDCBB_OK)
        rc = map_entries(r, obj, &es, &n);
    if (rc != PDCBB_OK)
        return rc;
    for (size_t i = 0; i < n && rc == PDCBB_OK; i++) {
        if (es[i].daemon < r->d->nservers)
            assigned[es[i].daemon] -= es[i].bytes < assigned[es[i].daemon]
                                          ? es[i].bytes
                                          : assigned[es[i].daemon];
        rc = OPS->del(r->txn, PDCBB_T_MAP, (pdcbb_val_t){es[i].key, 16});
    }
    free(es);
    return rc == PDCBB_OK && n ? assigned_put(r, assigned) : rc;
}

pdcbb_err_t bbd_op_map_get(bbd_req_t *r, const pdcbb_map_get_req_t *q, pdcbb_map_get_rep_t *p)
{
    pdcbb_box_t want;
    if (pdcbb_meta_id_kind(q->id) != PDCBB_META_KIND_OBJ ||
        pdcbb_meta_id_server(q->id) != r->d->rank)
        return PDCBB_ERR_BAD_ID;
    if (q->box_count < 3 || q->box[0] == 0 || q->box[0] > PDCBB_REGION_NDIM_MAX ||
        q->box_count != 1 + 2 * q->box[0] ||
        pdcbb_box_make(&want, (uint32_t)q->box[0], q->box + 1, q->box + 1 + q->box[0]) != PDCBB_OK)
        return PDCBB_ERR_BAD_REGION;
    uint8_t prefix[8];
    pdcbb_key_u64(prefix, q->id);
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    pdcbb_err_t rc = OPS->cursor_open(r->txn, PDCBB_T_MAP, &c);
    if (rc != PDCBB_OK)
        return rc;
    uint64_t *out = NULL;
    size_t n = 0, cap = 0;
    rc = OPS->cursor_seek(c, (pdcbb_val_t){prefix, 8}, &k, &v);
    while (rc == PDCBB_OK && k.len == 16 && memcmp(k.data, prefix, 8) == 0) {
        uint64_t vals[3 + 2 * PDCBB_REGION_NDIM_MAX];
        pdcbb_box_t eb, x;
        if (v.len <= sizeof(vals) && v.len % 8 == 0) {
            memcpy(vals, v.data, v.len);
            if (entry_box(vals, v.len / 8, &eb) == PDCBB_OK && pdcbb_box_intersect(&eb, &want, &x)) {
                size_t words = 2 + 2 * (size_t)vals[1]; /* daemon, ndim, offsets, sizes */
                size_t need = 1 + words;
                uint64_t *g = bbd_req_grow(r, out, n, need, &cap, 8, 64);
                if (g == NULL) {
                    rc = PDCBB_ERR_NOMEM;
                    break;
                }
                out = g;
                out[n++] = pdcbb_key_get_u64((const uint8_t *)k.data + 8);
                memcpy(out + n, vals, 8 * words);
                n += words;
            }
        }
        rc = OPS->cursor_next(c, &k, &v);
    }
    OPS->cursor_close(c);
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND)
        return rc;
    p->entries = out;
    p->entries_count = (uint32_t)n;
    return PDCBB_OK;
}
