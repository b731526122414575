/*
 * bbd_csum.c - block checksums of region data in the daemon: the PDCBB_T_CSUM records, the
 * start-up checks, the per-block state of this daemon's life, and serving checks (bbd_csum.h).
 */
#include "bbd_csum.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bbd.h"
#include "pdcbb_log.h"

#define B PDCBB_CSUM_BLOCK

/* What this daemon knows of a block since it started. */
enum { ST_UNCHECKED = 0, ST_GOOD, ST_BAD_SIZE, ST_BAD_CRC };

typedef struct ent {
    uint64_t obj, block;
    uint32_t writers;  /* writes of the block under way */
    uint8_t state;
    uint8_t recompute; /* changed without an update (rewritten in place, a failed write) while
                          a write was under way: checksum the file when none is left */
    uint8_t updated;   /* transient, within bbd_csum_end */
    uint8_t used;
} ent_t;

/* A daemon's checksum state (d->csum, from bbd_csum_open to bbd_csum_close). */
struct bbd_csum {
    ent_t *tab; /* open addressing on (obj, block) */
    size_t tab_cap, tab_n;
    uint8_t *scratch; /* one block, for checks (event thread only) */
    /* PDCBB_CSUM_VERIFY=always in the daemon's environment: check every block on every serve,
     * not once per daemon life (tests: every read then checks the checksums' bookkeeping). */
    int verify_always;
};

static size_t slot(const struct bbd_csum *cs, uint64_t obj, uint64_t block)
{
    uint64_t h = obj * 0x9e3779b97f4a7c15ull ^ (block + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
    return (size_t)(h ^ h >> 29) & (cs->tab_cap - 1);
}

/* What d knows of the block, NULL if nothing (create: a new entry, NULL if out of memory). */
static ent_t *find(struct bbd *d, uint64_t obj, uint64_t block, int create)
{
    struct bbd_csum *cs = d->csum;
    if (cs->tab_cap > 0)
        for (size_t i = slot(cs, obj, block);; i = (i + 1) & (cs->tab_cap - 1)) {
            if (!cs->tab[i].used)
                break;
            if (cs->tab[i].obj == obj && cs->tab[i].block == block)
                return &cs->tab[i];
        }
    if (!create)
        return NULL;
    if (2 * (cs->tab_n + 1) > cs->tab_cap) {
        size_t ocap = cs->tab_cap, ncap = ocap ? 2 * ocap : 4096;
        ent_t *old = cs->tab, *n = calloc(ncap, sizeof(*n));
        if (n == NULL)
            return NULL;
        cs->tab = n;
        cs->tab_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].used) {
                size_t j = slot(cs, old[i].obj, old[i].block);
                while (n[j].used)
                    j = (j + 1) & (ncap - 1);
                n[j] = old[i];
            }
        free(old);
    }
    size_t i = slot(cs, obj, block);
    while (cs->tab[i].used)
        i = (i + 1) & (cs->tab_cap - 1);
    cs->tab[i] = (ent_t){.obj = obj, .block = block, .used = 1};
    cs->tab_n++;
    return &cs->tab[i];
}

static pdcbb_err_t rec_get(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t obj,
                           uint64_t block, pdcbb_csum_rec_t *rec, int *exists)
{
    uint8_t key[PDCBB_CSUM_KEY_LEN];
    pdcbb_val_t v;
    pdcbb_csum_key(key, obj, block);
    pdcbb_err_t rc = ops->get(txn, PDCBB_T_CSUM, (pdcbb_val_t){key, sizeof(key)}, &v);
    *exists = rc == PDCBB_OK;
    if (rc == PDCBB_ERR_NOT_FOUND) {
        *rec = pdcbb_csum_rec_empty();
        return PDCBB_OK;
    }
    return rc == PDCBB_OK ? pdcbb_csum_rec_decode(v.data, v.len, rec) : rc;
}

static pdcbb_err_t rec_put(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn, uint64_t obj,
                           uint64_t block, const pdcbb_csum_rec_t *rec)
{
    uint8_t key[PDCBB_CSUM_KEY_LEN], val[PDCBB_CSUM_VAL_LEN];
    pdcbb_csum_key(key, obj, block);
    pdcbb_csum_rec_encode(rec, val);
    return ops->put(txn, PDCBB_T_CSUM, (pdcbb_val_t){key, sizeof(key)},
                    (pdcbb_val_t){val, sizeof(val)}, 0);
}

/* obj's data file opened read-only with its size; fd -1 and size 0 when there is none. */
static pdcbb_err_t file_open(struct bbd *d, uint64_t obj, int *fd, uint64_t *size)
{
    char path[PATH_MAX + 64];
    struct stat st;
    bbd_data_path(d, obj, path, sizeof(path));
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    *size = 0;
    if (*fd < 0)
        return errno == ENOENT ? PDCBB_OK : pdcbb_err_from_errno(errno);
    if (fstat(*fd, &st) != 0) {
        int e = errno;
        close(*fd);
        *fd = -1;
        return pdcbb_err_from_errno(e);
    }
    *size = (uint64_t)st.st_size;
    return PDCBB_OK;
}

/* The block's CRC as the file has it now (none: zeros). */
static pdcbb_err_t file_crc(struct bbd *d, int fd, uint64_t size, uint64_t block, uint32_t *crc)
{
    int err = 0;
    if (fd < 0) {
        *crc = pdcbb_csum_rec_empty().crc;
        return PDCBB_OK;
    }
    pdcbb_err_t rc = pdcbb_csum_block_crc(fd, size, block, d->csum->scratch, crc, &err);
    return rc == PDCBB_ERR_IO ? pdcbb_err_from_errno(err) : rc;
}

/* The written part of a block, for messages: [k B, k B + end), or the whole block. */
static void bad_range(uint64_t block, uint64_t end, uint64_t size, int kind, bbd_csum_bad_t *bad)
{
    bad->start = block * B;
    bad->end = block * B + (end ? end : B);
    if (kind == PDCBB_CSUM_BAD_SIZE && size > bad->start)
        bad->start = size; /* what is missing */
    bad->kind = kind;
}

typedef struct fix {
    uint64_t obj, block;
    pdcbb_csum_rec_t rec;
} fix_t;

/* Whether obj has a layout here (its data was not dropped). */
static int has_layout(struct bbd *d, pdcbb_txn_t *txn, uint64_t obj)
{
    uint8_t key[8];
    pdcbb_val_t v;
    pdcbb_key_u64(key, obj);
    return d->store_ops->get(txn, PDCBB_T_DATA, (pdcbb_val_t){key, 8}, &v) == PDCBB_OK;
}

/* Records: file sizes against what was written, PENDING blocks checksummed again. */
static pdcbb_err_t check_records(struct bbd *d, pdcbb_txn_t *txn, fix_t **fixes, size_t *nfix,
                                 size_t *fcap, uint64_t *nrec)
{
    const pdcbb_store_ops_t *ops = d->store_ops;
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    pdcbb_err_t rc = ops->cursor_open(txn, PDCBB_T_CSUM, &c);
    if (rc != PDCBB_OK)
        return rc;
    uint64_t cur = 0, size = 0, reach = 0, bad = 0;
    int fd = -1, have = 0, skip = 0;
    for (rc = ops->cursor_seek(c, (pdcbb_val_t){NULL, 0}, &k, &v); rc == PDCBB_OK || have;
         rc = ops->cursor_next(c, &k, &v)) {
        int more = rc == PDCBB_OK;
        uint64_t obj = more && k.len == PDCBB_CSUM_KEY_LEN ? pdcbb_key_get_u64(k.data) : 0;
        if (have && (!more || obj != cur)) {
            if (bad)
                PDCBB_ERROR("object %#" PRIx64 ": its data file is %" PRIu64 " bytes but data was"
                            " written up to byte %" PRIu64 ": truncated; %" PRIu64
                            " checksum blocks are damaged and will not be served",
                            cur, size, reach, bad);
            if (fd >= 0)
                close(fd);
            fd = -1;
            have = 0;
        }
        if (!more)
            break;
        if (k.len != PDCBB_CSUM_KEY_LEN) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        uint64_t block = pdcbb_key_get_u64((const uint8_t *)k.data + 8);
        pdcbb_csum_rec_t rec;
        if ((rc = pdcbb_csum_rec_decode(v.data, v.len, &rec)) != PDCBB_OK)
            break;
        if (!have) {
            cur = obj;
            reach = bad = 0;
            have = 1;
            skip = !has_layout(d, txn, obj);
            if (!skip && (rc = file_open(d, obj, &fd, &size)) != PDCBB_OK)
                break;
        }
        if (skip)
            continue; /* a dropped object a late direct write reported on: nothing to check */
        (*nrec)++;
        if (block * B + rec.end > reach)
            reach = block * B + rec.end;
        if (size < block * B + rec.end) {
            ent_t *e = find(d, obj, block, 1);
            if (e == NULL) {
                rc = PDCBB_ERR_NOMEM;
                break;
            }
            e->state = ST_BAD_SIZE;
            bad++;
        } else if (rec.flags & PDCBB_CSUM_PENDING) {
            /* its write was never acknowledged: what the file holds is the block now */
            fix_t *g = pdcbb_grow(*fixes, *nfix, fcap, sizeof(*g), 64);
            if (g == NULL) {
                rc = PDCBB_ERR_NOMEM;
                break;
            }
            *fixes = g;
            rec.flags &= ~PDCBB_CSUM_PENDING;
            if ((rc = file_crc(d, fd, size, block, &rec.crc)) != PDCBB_OK)
                break;
            uint64_t in = size > block * B ? size - block * B : 0;
            if (in > B)
                in = B;
            if (in > rec.end)
                rec.end = in;
            g[(*nfix)++] = (fix_t){obj, block, rec};
        }
    }
    if (fd >= 0)
        close(fd);
    ops->cursor_close(c);
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

/* Data files without any record (staged in, or written by a daemon without checksums). */
static pdcbb_err_t adopt(struct bbd *d, pdcbb_txn_t *txn, fix_t **fixes, size_t *nfix,
                         size_t *fcap, uint64_t *bytes)
{
    const pdcbb_store_ops_t *ops = d->store_ops;
    pdcbb_cursor_t *c, *cs;
    pdcbb_val_t k, v;
    pdcbb_err_t rc = ops->cursor_open(txn, PDCBB_T_DATA, &c);
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = ops->cursor_open(txn, PDCBB_T_CSUM, &cs)) != PDCBB_OK) {
        ops->cursor_close(c);
        return rc;
    }
    for (rc = ops->cursor_seek(c, (pdcbb_val_t){NULL, 0}, &k, &v); rc == PDCBB_OK;
         rc = ops->cursor_next(c, &k, &v)) {
        if (k.len != 8)
            continue;
        uint64_t obj = pdcbb_key_get_u64(k.data), size;
        uint8_t key[PDCBB_CSUM_KEY_LEN];
        pdcbb_val_t ck, cv;
        pdcbb_csum_key(key, obj, 0);
        pdcbb_err_t f = ops->cursor_seek(cs, (pdcbb_val_t){key, 8}, &ck, &cv);
        if (f == PDCBB_OK && ck.len >= 8 && pdcbb_key_get_u64(ck.data) == obj)
            continue; /* checksummed */
        int fd;
        if ((rc = file_open(d, obj, &fd, &size)) != PDCBB_OK)
            break;
        for (uint64_t block = 0; fd >= 0 && block * B < size && rc == PDCBB_OK; block++) {
            off_t at = lseek(fd, (off_t)(block * B), SEEK_DATA);
            if (at < 0 || (uint64_t)at >= (block + 1) * B)
                continue; /* a hole: never written */
            fix_t *g = pdcbb_grow(*fixes, *nfix, fcap, sizeof(*g), 64);
            if (g == NULL) {
                rc = PDCBB_ERR_NOMEM;
                break;
            }
            *fixes = g;
            pdcbb_csum_rec_t rec = {.end = size - block * B < B ? size - block * B : B};
            rc = file_crc(d, fd, size, block, &rec.crc);
            g[(*nfix)++] = (fix_t){obj, block, rec};
            *bytes += rec.end;
        }
        if (fd >= 0)
            close(fd);
        if (rc != PDCBB_OK)
            break;
    }
    ops->cursor_close(cs);
    ops->cursor_close(c);
    return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

pdcbb_err_t bbd_csum_open(struct bbd *d, char *err, size_t errlen)
{
    const pdcbb_store_ops_t *ops = d->store_ops;
    pdcbb_txn_t *txn;
    fix_t *fixes = NULL;
    size_t nfix = 0, fcap = 0, pending;
    uint64_t nrec = 0, adopted = 0;
    const char *v = getenv("PDCBB_CSUM_VERIFY");
    if (d->csum == NULL && (d->csum = calloc(1, sizeof(*d->csum))) == NULL)
        return PDCBB_ERR_NOMEM;
    d->csum->verify_always = v != NULL && strcmp(v, "always") == 0;
    if (d->csum->scratch == NULL && (d->csum->scratch = malloc(B)) == NULL)
        return PDCBB_ERR_NOMEM;
    pdcbb_err_t rc = ops->txn_begin(d->store, PDCBB_TXN_WRITE, &txn);
    if (rc != PDCBB_OK) {
        pdcbb_errf(err, errlen, "checksums: cannot begin a transaction: %s", pdcbb_strerror(rc));
        return rc;
    }
    rc = check_records(d, txn, &fixes, &nfix, &fcap, &nrec);
    pending = nfix;
    if (rc == PDCBB_OK)
        rc = adopt(d, txn, &fixes, &nfix, &fcap, &adopted);
    for (size_t i = 0; i < nfix && rc == PDCBB_OK; i++)
        rc = rec_put(ops, txn, fixes[i].obj, fixes[i].block, &fixes[i].rec);
    free(fixes);
    if (rc == PDCBB_OK) {
        rc = ops->txn_commit(txn);
    } else {
        ops->txn_abort(txn);
    }
    if (rc != PDCBB_OK) {
        pdcbb_errf(err, errlen, "checksums of the region data: %s", pdcbb_strerror(rc));
        return rc;
    }
    PDCBB_INFO("checksums: %" PRIu64 " blocks of %" PRIu64 " bytes recorded, file sizes checked; "
               "%zu blocks of unacknowledged writes checksummed again from their files; %" PRIu64
               " bytes without checksums (stage-in) checksummed",
               nrec, (uint64_t)B, pending, adopted);
    return PDCBB_OK;
}

void bbd_csum_close(struct bbd *d)
{
    if (d->csum == NULL)
        return;
    free(d->csum->tab);
    free(d->csum->scratch);
    free(d->csum);
    d->csum = NULL;
}

static int touch_run(uint64_t array_off, uint64_t len, uint64_t packed_off, void *arg)
{
    uint64_t *a = arg; /* [0] object, [1] touch list */
    (void)packed_off;
    return bbd_csum_touch_range((bbd_csum_touch_t *)(uintptr_t)a[1], a[0], array_off, len) ==
                   PDCBB_OK
               ? 0
               : -1;
}

pdcbb_err_t bbd_csum_touch_range(bbd_csum_touch_t *t, uint64_t obj, uint64_t off, uint64_t len)
{
    if (len == 0)
        return PDCBB_OK;
    uint64_t first = off / B, last = (off + len - 1) / B;
    if (t->n > t->sealed) {
        uint64_t *p = t->v + 3 * (t->n - 1);
        if (p[0] == obj && first <= p[2] + 1 && last + 1 >= p[1]) {
            p[1] = first < p[1] ? first : p[1];
            p[2] = last > p[2] ? last : p[2];
            return PDCBB_OK;
        }
    }
    uint64_t *g = pdcbb_grow(t->v, 3 * (size_t)t->n, &t->cap, sizeof(*g), 48);
    if (g == NULL)
        return PDCBB_ERR_NOMEM;
    /* pdcbb_grow makes room for one more word: three are needed */
    while (t->cap < 3 * (size_t)t->n + 3) {
        uint64_t *h = realloc(g, 2 * t->cap * sizeof(*g));
        if (h == NULL) {
            t->v = g;
            return PDCBB_ERR_NOMEM;
        }
        g = h;
        t->cap *= 2;
    }
    t->v = g;
    g[3 * t->n] = obj;
    g[3 * t->n + 1] = first;
    g[3 * t->n + 2] = last;
    t->n++;
    return PDCBB_OK;
}

pdcbb_err_t bbd_csum_touch_box(bbd_csum_touch_t *t, uint64_t obj, const pdcbb_box_t *box,
                               uint32_t ndim, const uint64_t *dims, uint64_t unit)
{
    uint64_t a[2] = {obj, (uint64_t)(uintptr_t)t};
    t->sealed = t->n;
    return pdcbb_box_runs(box, ndim, dims, (size_t)unit, touch_run, a) == 0 ? PDCBB_OK
                                                                         : PDCBB_ERR_NOMEM;
}

void bbd_csum_touch_free(bbd_csum_touch_t *t)
{
    free(t->v);
    *t = (bbd_csum_touch_t){0};
}

#define FOR_BLOCKS(t, from, obj, block)                                                           \
    for (uint32_t i_ = (from); i_ < (t)->n; i_++)                                                 \
        for (uint64_t obj = (t)->v[3 * i_], block = (t)->v[3 * i_ + 1];                           \
             block <= (t)->v[3 * i_ + 2]; block++)

pdcbb_err_t bbd_csum_begin(struct bbd *d, pdcbb_txn_t *txn, const bbd_csum_touch_t *t,
                           uint32_t from)
{
    const pdcbb_store_ops_t *ops = d->store_ops;
    /* The store first (the caller aborts the transaction on failure), then the counts. */
    FOR_BLOCKS(t, from, obj, block) {
        pdcbb_csum_rec_t rec;
        int exists;
        pdcbb_err_t rc = rec_get(ops, txn, obj, block, &rec, &exists);
        if (rc == PDCBB_OK && !(exists && (rec.flags & PDCBB_CSUM_PENDING))) {
            rec.flags |= PDCBB_CSUM_PENDING;
            rc = rec_put(ops, txn, obj, block, &rec);
        }
        if (rc == PDCBB_OK && find(d, obj, block, 1) == NULL)
            rc = PDCBB_ERR_NOMEM;
        if (rc != PDCBB_OK)
            return rc;
    }
    FOR_BLOCKS(t, from, obj, block)
    find(d, obj, block, 0)->writers++;
    return PDCBB_OK;
}

void bbd_csum_abandon(struct bbd *d, const bbd_csum_touch_t *t)
{
    FOR_BLOCKS(t, 0, obj, block) {
        ent_t *e = find(d, obj, block, 0);
        if (e && e->writers > 0)
            e->writers--;
    }
}

pdcbb_err_t bbd_csum_end(struct bbd *d, pdcbb_txn_t *txn, const bbd_csum_touch_t *t,
                         const pdcbb_csum_upd_t *u, size_t nu)
{
    const pdcbb_store_ops_t *ops = d->store_ops;
    pdcbb_err_t rc = PDCBB_OK;
    for (size_t i = 0; i < nu; i++) {
        ent_t *e = find(d, u[i].obj, u[i].block, 0);
        if (e == NULL || e->writers == 0) {
            PDCBB_ERROR("checksum update of object %#" PRIx64 " block %" PRIu64
                        " that no write of it announced",
                        u[i].obj, u[i].block);
            return PDCBB_ERR_PROTO;
        }
    }
    for (size_t i = 0; i < nu && rc == PDCBB_OK; i++) {
        pdcbb_csum_rec_t rec;
        int exists;
        rc = rec_get(ops, txn, u[i].obj, u[i].block, &rec, &exists);
        if (rc != PDCBB_OK)
            break;
        pdcbb_csum_apply(&rec, &u[i]);
        ent_t *e = find(d, u[i].obj, u[i].block, 0);
        if (u[i].kind == PDCBB_CSUM_SET)
            e->state = ST_GOOD; /* every byte is new */
        e->updated = 1;
        rc = rec_put(ops, txn, u[i].obj, u[i].block, &rec);
    }
    FOR_BLOCKS(t, 0, obj, block) {
        ent_t *e = find(d, obj, block, 0);
        if (e == NULL || e->writers == 0)
            continue;
        if (!e->updated)
            e->recompute = 1; /* its write failed (or was cut short): the file decides */
        if (--e->writers > 0 || rc != PDCBB_OK)
            continue;
        pdcbb_csum_rec_t rec;
        int exists;
        rc = rec_get(ops, txn, obj, block, &rec, &exists);
        if (rc == PDCBB_OK && e->recompute) {
            /* rewritten in place meanwhile: the file is the truth (checked before) */
            int fd;
            uint64_t size;
            rc = file_open(d, obj, &fd, &size);
            if (rc == PDCBB_OK)
                rc = file_crc(d, fd, size, block, &rec.crc);
            if (fd >= 0)
                close(fd);
            e->recompute = 0;
        }
        rec.flags &= ~PDCBB_CSUM_PENDING;
        if (rc == PDCBB_OK)
            rc = rec_put(ops, txn, obj, block, &rec);
    }
    for (size_t i = 0; i < nu; i++)
        find(d, u[i].obj, u[i].block, 0)->updated = 0;
    return rc;
}

pdcbb_err_t bbd_csum_serve(struct bbd_req *r, int fd, const bbd_csum_touch_t *t, uint32_t from,
                           bbd_csum_bad_t *bad)
{
    struct bbd *d = r->d;
    const pdcbb_store_ops_t *ops = r->d->store_ops;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return pdcbb_err_from_errno(errno);
    uint64_t size = (uint64_t)st.st_size;
    FOR_BLOCKS(t, from, obj, block) {
        ent_t *e = find(d, obj, block, 0);
        if (e && e->state == ST_GOOD && !d->csum->verify_always)
            continue;
        pdcbb_csum_rec_t rec;
        int exists, kind = 0, err = 0;
        pdcbb_err_t rc = rec_get(ops, r->txn, obj, block, &rec, &exists);
        if (rc != PDCBB_OK)
            return rc;
        if (e && (e->state == ST_BAD_SIZE || e->state == ST_BAD_CRC)) {
            kind = e->state == ST_BAD_SIZE ? PDCBB_CSUM_BAD_SIZE : PDCBB_CSUM_BAD_CRC;
            rc = PDCBB_ERR_CORRUPT;
        } else if (!exists || (rec.flags & PDCBB_CSUM_PENDING)) {
            continue; /* never written (zeros), or being written: nothing to hold it to */
        } else {
            rc = pdcbb_csum_check(fd, size, block, &rec, d->csum->scratch, &kind, &err);
            if (rc == PDCBB_ERR_IO)
                return pdcbb_err_from_errno(err);
        }
        if (rc == PDCBB_OK) {
            if ((e = find(d, obj, block, 1)) != NULL)
                e->state = ST_GOOD;
            continue;
        }
        if (rc != PDCBB_ERR_CORRUPT)
            return rc;
        bad_range(block, rec.end, size, kind, bad);
        uint8_t st_bad = kind == PDCBB_CSUM_BAD_SIZE ? ST_BAD_SIZE : ST_BAD_CRC;
        if ((e = find(d, obj, block, 1)) != NULL && e->state != st_bad) { /* logged once */
            e->state = st_bad;
            PDCBB_ERROR("object %#" PRIx64 ": bytes %" PRIu64 "-%" PRIu64 " of its data (checksum"
                        " block %" PRIu64 ", file %" PRIu64 " bytes) are damaged: %s; they will"
                        " not be served",
                        obj, bad->start, bad->end - 1, block, size, pdcbb_csum_kind_str(kind));
        }
        return PDCBB_ERR_CORRUPT;
    }
    return PDCBB_OK;
}

pdcbb_err_t bbd_csum_serve_box(struct bbd_req *r, int fd, uint64_t obj, const pdcbb_box_t *box,
                               uint32_t ndim, const uint64_t *dims, uint64_t unit,
                               bbd_csum_bad_t *bad)
{
    bbd_csum_touch_t t = {0};
    pdcbb_err_t rc = bbd_csum_touch_box(&t, obj, box, ndim, dims, unit);
    if (rc == PDCBB_OK)
        rc = bbd_csum_serve(r, fd, &t, 0, bad);
    bbd_csum_touch_free(&t);
    return rc;
}

pdcbb_err_t bbd_csum_rewrite(struct bbd_req *r, int fd, const bbd_csum_touch_t *t)
{
    struct bbd *d = r->d;
    const pdcbb_store_ops_t *ops = r->d->store_ops;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return pdcbb_err_from_errno(errno);
    uint64_t size = (uint64_t)st.st_size;
    FOR_BLOCKS(t, 0, obj, block) {
        pdcbb_csum_rec_t rec;
        int exists;
        pdcbb_err_t rc = rec_get(ops, r->txn, obj, block, &rec, &exists);
        ent_t *e = find(d, obj, block, 1);
        if (rc == PDCBB_OK && e == NULL)
            rc = PDCBB_ERR_NOMEM;
        if (rc == PDCBB_OK)
            rc = file_crc(d, fd, size, block, &rec.crc);
        if (rc != PDCBB_OK)
            return rc;
        uint64_t in = size > block * B ? size - block * B : 0;
        if (in > B)
            in = B;
        if (in > rec.end)
            rec.end = in;
        if (e->writers > 0)
            e->recompute = 1; /* a direct write's updates would miss these bytes */
        else
            e->state = ST_GOOD;
        if ((rc = rec_put(ops, r->txn, obj, block, &rec)) != PDCBB_OK)
            return rc;
    }
    return PDCBB_OK;
}

void bbd_csum_batch_end(struct bbd *d, struct bbd_io_batch *b)
{
    const pdcbb_store_ops_t *ops = d->store_ops;
    pdcbb_txn_t *txn;
    if (b->touch.n == 0)
        return;
    pdcbb_err_t rc = ops->txn_begin(d->store, PDCBB_TXN_WRITE, &txn);
    if (rc == PDCBB_OK) {
        rc = bbd_csum_end(d, txn, &b->touch, b->csum.v, b->csum.n);
        if (rc == PDCBB_OK)
            rc = ops->txn_commit(txn);
        else
            ops->txn_abort(txn);
    }
    if (rc != PDCBB_OK) {
        /* the blocks stay PENDING: checksummed again from their files at the next start */
        bbd_csum_abandon(d, &b->touch);
        PDCBB_ERROR("checksums of a finished write could not be stored: %s", pdcbb_errname(rc));
    }
}

/* Delete obj's records from block `from` on; forget what is known of those blocks. */
static pdcbb_err_t drop_from(bbd_req_t *r, uint64_t obj, uint64_t from)
{
    struct bbd *d = r->d;
    const pdcbb_store_ops_t *ops = r->d->store_ops;
    pdcbb_cursor_t *c;
    pdcbb_val_t k, v;
    uint8_t key[PDCBB_CSUM_KEY_LEN];
    uint64_t *blocks = NULL;
    size_t n = 0, cap = 0;
    pdcbb_err_t rc = ops->cursor_open(r->txn, PDCBB_T_CSUM, &c);
    if (rc != PDCBB_OK)
        return rc;
    pdcbb_csum_key(key, obj, from);
    for (rc = ops->cursor_seek(c, (pdcbb_val_t){key, sizeof(key)}, &k, &v); rc == PDCBB_OK;
         rc = ops->cursor_next(c, &k, &v)) {
        if (k.len != PDCBB_CSUM_KEY_LEN || pdcbb_key_get_u64(k.data) != obj)
            break;
        uint64_t *g = pdcbb_grow(blocks, n, &cap, sizeof(*g), 64);
        if (g == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        blocks = g;
        blocks[n++] = pdcbb_key_get_u64((const uint8_t *)k.data + 8);
    }
    ops->cursor_close(c);
    if (rc == PDCBB_ERR_NOT_FOUND || rc == PDCBB_OK)
        rc = PDCBB_OK;
    for (size_t i = 0; i < n && rc == PDCBB_OK; i++) {
        pdcbb_csum_key(key, obj, blocks[i]);
        rc = ops->del(r->txn, PDCBB_T_CSUM, (pdcbb_val_t){key, sizeof(key)});
        ent_t *e = find(d, obj, blocks[i], 0);
        if (e)
            e->state = ST_UNCHECKED;
    }
    free(blocks);
    return rc;
}

pdcbb_err_t bbd_csum_truncate(struct bbd_req *r, int fd, uint64_t obj, uint64_t size,
                              int last_good)
{
    struct bbd *d = r->d;
    pdcbb_err_t rc = drop_from(r, obj, (size + B - 1) / B);
    if (rc != PDCBB_OK || size % B == 0 || !last_good)
        return rc;
    uint64_t block = size / B;
    pdcbb_csum_rec_t rec;
    int exists;
    rc = rec_get(r->d->store_ops, r->txn, obj, block, &rec, &exists);
    if (rc != PDCBB_OK || !exists)
        return rc;
    if ((rc = file_crc(d, fd, size, block, &rec.crc)) != PDCBB_OK)
        return rc;
    if (rec.end > size % B)
        rec.end = size % B;
    return rec_put(r->d->store_ops, r->txn, obj, block, &rec);
}

pdcbb_err_t bbd_csum_drop(struct bbd_req *r, uint64_t obj)
{
    return drop_from(r, obj, 0);
}
