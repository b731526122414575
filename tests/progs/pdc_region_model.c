/*
 * pdc_region_model - randomized model test of PDC region transfers against an in-memory
 * reference, for the bats tests (tests/bats/70-regions.bats).
 *
 *   pdc_region_model --seed S --ops N [--procs P --rank R] [--owner O]
 *                    [--placements
 * all|obj_static,region_static,region_dynamic,region_local,region_striped]
 *                    [--phase write|verify|both] [--objects K] [--min-obj-bytes B]
 *                    [--max-obj-bytes B] [--max-ndim D] [--name PREFIX] [--sequential]
 *                    [--trace] [--inject-mismatch]
 *
 * What it does. Every process of a run gets the same seed and knows its rank R of P. From the
 * seed alone each process derives the same set of objects: K objects owned by each rank, and
 * two objects shared by all ranks in which rank R only touches the rows
 * [R*d0/P, (R+1)*d0/P) of dimension 0 (its stripe). Objects have 1..4 dimensions (--max-ndim),
 * small random extents (--min-obj-bytes 2 KiB .. --max-obj-bytes 2 MiB), an element type of
 * 1, 2, 4 or 8 bytes, one of the allowed placements (every allowed placement is used when K is
 * at least their number) and POSIX or default consistency. Every object has a zero-initialised
 * reference array.
 *
 * Phase write: rank R creates its objects (and the shared ones: create, or open if another
 * rank created it first), then performs N random transfers on its objects and its stripes:
 * writes of random boxes (whole object, single elements, boxes overlapping earlier writes,
 * random boxes) from random local buffers (local offsets, other shapes and other numbers of
 * dimensions with the same element count, padding around the local box that must be neither
 * written to the object nor overwritten by a read), and reads of random boxes that are checked
 * byte for byte against the reference, padding included. Transfers are done one at a time
 * (start + wait, start + status polling, start + close without wait, POSIX status right after
 * start) or in batches of 2..64 (start_all or one by one; wait_all, polling, waits in random
 * order, or close). Within a batch, writes of one object are disjoint and reads do not overlap
 * the batch's writes, so the expected result is defined. The phase ends with a read of every
 * object (own stripe of the shared ones) compared with the reference.
 *
 * Phase verify: the reference is a deterministic function of the seed, so any process can
 * recompute it without shared memory: it replays the plans of all P ranks without moving data,
 * opens the objects of owner O (--owner, default R) and the shared objects by name, checks
 * their metadata, then reads them whole and in random boxes with random local shapes. Run it
 * in other processes after every writer finished (e.g. rank R+1 verifies owner R).
 *
 * Phase both (default): write, then verify owner R in the same process (shared objects whole
 * only when P is 1, else only R's stripe).
 *
 * --sequential: the ranks' write phases run one after another (rank 0 first) instead of at the
 * same time, and every rank reads and writes anywhere in the shared objects, so writes of
 * different processes (placed by different daemons when the processes claim different nodes
 * with PDCBB_NODE_NAME) overlap: the newest wins. Rank R replays ranks 0..R-1 to know the
 * shared objects' contents. All processes of a run must agree on --sequential.
 *
 * On the first wrong byte it prints the object, its placement, type and extents, the transfer
 * (op number, box, local shape), the element's coordinates and the expected and actual bytes,
 * and exits 1; any unexpected PDC failure prints the function, error name and message and
 * exits 1. --trace prints every transfer. --inject-mismatch corrupts one reference byte before
 * the final check (to show that the checker fails). Output ends with a summary line.
 * Exit status: 0 when everything matched, 1 on a mismatch or failure, 2 on usage errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "pdc.h"

#define MAXD         16  /* most dimensions an object or a local buffer gets */
#define MAXOBJ       512 /* objects in a run */
#define MAXBATCH     64  /* transfers in one batch */
#define NRECENT      8   /* recent writes kept per (rank, object) for overlapping boxes */
#define NSHARED      2   /* objects shared by all ranks */
#define POLL_SECONDS 120 /* a transfer pending longer than this is reported as hung */

/* ---------------------------------------------------------------------------------------- */
/* Deterministic random numbers: splitmix64.                                                */

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rng_next(rng_t *r)
{
    r->s += 0x9e3779b97f4a7c15ULL;
    return mix64(r->s);
}

static rng_t rng_make(uint64_t seed, uint64_t stream)
{
    rng_t r = {mix64(seed ^ mix64(stream + 0x632be59bd9b4e019ULL))};
    return r;
}

/* Uniform in [0, n); n > 0. */
static uint64_t rng_below(rng_t *r, uint64_t n)
{
    return n ? rng_next(r) % n : 0;
}

/* Roughly log-uniform in [1, n]: small values are as likely as large ones per octave. */
static uint64_t rng_log(rng_t *r, uint64_t n)
{
    if (n <= 1)
        return 1;
    int bits = 64 - __builtin_clzll(n);
    uint64_t hi = (uint64_t)1 << rng_below(r, (uint64_t)bits + 1);
    uint64_t v = 1 + rng_below(r, hi);
    return v > n ? 1 + rng_below(r, n) : v;
}

/* A byte stream from a seed: write data and padding. */
typedef struct {
    rng_t r;
    uint64_t cur;
    int left;
} bytes_t;

static void bytes_fill(bytes_t *b, unsigned char *dst, size_t n)
{
    while (n > 0) {
        if (b->left == 0) {
            if (n >= 8) {
                uint64_t v = rng_next(&b->r);
                memcpy(dst, &v, 8);
                dst += 8;
                n -= 8;
                continue;
            }
            b->cur = rng_next(&b->r);
            b->left = 8;
        }
        *dst++ = (unsigned char)(b->cur & 0xff);
        b->cur >>= 8;
        b->left--;
        n--;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Boxes in row-major arrays.                                                               */

typedef struct {
    int nd;
    uint64_t off[MAXD], size[MAXD];
} box_t;

static uint64_t box_count(const box_t *b)
{
    uint64_t n = 1;
    for (int d = 0; d < b->nd; d++)
        n *= b->size[d];
    return n;
}

static int box_overlap(const box_t *a, const box_t *b)
{
    for (int d = 0; d < a->nd; d++)
        if (a->off[d] >= b->off[d] + b->size[d] || b->off[d] >= a->off[d] + a->size[d])
            return 0;
    return 1;
}

static void box_print(FILE *f, const box_t *b)
{
    fprintf(f, "off=(");
    for (int d = 0; d < b->nd; d++)
        fprintf(f, "%s%" PRIu64, d ? "," : "", b->off[d]);
    fprintf(f, ") size=(");
    for (int d = 0; d < b->nd; d++)
        fprintf(f, "%s%" PRIu64, d ? "," : "", b->size[d]);
    fprintf(f, ")");
}

/* Runs of a box inside an array of extents ext: contiguous pieces along the last dimension,
 * visited in row-major order. */
typedef struct {
    int nd, done;
    uint64_t ext[MAXD], off[MAXD], size[MAXD], ctr[MAXD], stride[MAXD];
} runs_t;

static void runs_init(runs_t *it, int nd, const uint64_t *ext, const box_t *b)
{
    memset(it, 0, sizeof(*it));
    it->nd = nd;
    uint64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        it->ext[d] = ext[d];
        it->off[d] = b->off[d];
        it->size[d] = b->size[d];
        it->stride[d] = s;
        s *= ext[d];
    }
    it->done = box_count(b) == 0;
}

/* Current run: linear element index where it starts and elements left in it. */
static void runs_cur(const runs_t *it, uint64_t *start, uint64_t *len)
{
    uint64_t lin = 0;
    for (int d = 0; d < it->nd; d++)
        lin += (it->off[d] + it->ctr[d]) * it->stride[d];
    *start = lin;
    *len = it->size[it->nd - 1] - it->ctr[it->nd - 1];
}

static void runs_adv(runs_t *it, uint64_t n)
{
    int d = it->nd - 1;
    it->ctr[d] += n;
    if (it->ctr[d] < it->size[d])
        return;
    it->ctr[d] = 0;
    for (d--; d >= 0; d--) {
        if (++it->ctr[d] < it->size[d])
            return;
        it->ctr[d] = 0;
    }
    it->done = 1;
}

/* Coordinates of linear element index lin in an array of extents ext. */
static void unravel(uint64_t lin, int nd, const uint64_t *ext, uint64_t *coord)
{
    for (int d = nd - 1; d >= 0; d--) {
        coord[d] = lin % ext[d];
        lin /= ext[d];
    }
}

static void coords_print(FILE *f, int nd, const uint64_t *c)
{
    fprintf(f, "(");
    for (int d = 0; d < nd; d++)
        fprintf(f, "%s%" PRIu64, d ? "," : "", c[d]);
    fprintf(f, ")");
}

/* ---------------------------------------------------------------------------------------- */
/* Objects and transfers.                                                                   */

/* pdc_region_partition_t values 0..3 and PDCBB_REGION_STRIPED (4) */
#define NPLACEMENTS 5
static const char *const placement_names[NPLACEMENTS] = {
    "obj_static", "region_static", "region_dynamic", "region_local", "region_striped"};

typedef struct {
    char name[128];
    int owner; /* rank, or -1 for a shared object */
    int nd;
    uint64_t dims[MAXD];
    pdc_var_type_t type;
    size_t unit;
    int placement; /* pdc_region_partition_t */
    int posix;
    uint64_t nelem;
    unsigned char *ref; /* reference, NULL when this process does not track the object */
    pdcid_t id;
} obj_t;

typedef struct {
    int obj;
    int write;
    box_t remote;
    box_t local;         /* local.off/size: the box inside the buffer */
    uint64_t lext[MAXD]; /* buffer extents: local.off + local.size */
    uint64_t seed;       /* data (writes) and padding */
    int completion;      /* see run_single / run_batch */
    int close_with_obj;  /* close the region ids with PDCobj_close */
    int close_early;     /* close the region ids right after transfer_create */
    /* execution */
    unsigned char *buf;
    size_t buflen;
    pdcid_t req;
    int reported;       /* status reported COMPLETE */
    int closed;         /* request released */
    pdcid_t regions[2]; /* local and remote region ids while open */
} xfer_t;

typedef struct {
    int n;
    int start_mode; /* 0 start_all, 1 one by one in order, 2 one by one in reverse */
    int completion; /* 0 wait_all, 1 poll all, 2 wait one by one in perm order, 3 close */
    int perm[MAXBATCH];
    xfer_t x[MAXBATCH];
} batch_t;

/* Per-rank planning state. */
typedef struct {
    int rank;
    rng_t rng;
    uint64_t opno; /* transfers planned so far */
    box_t recent[MAXOBJ][NRECENT];
    int nrecent[MAXOBJ];
} plan_t;

static struct {
    uint64_t seed, ops, max_obj_bytes, min_obj_bytes;
    int procs, rank, owner, nobj_per_rank, max_ndim, trace, inject, sequential;
    int allowed[NPLACEMENTS], nallowed;
    const char *phase;
    char prefix[64];
    char cmdline[1024];
} opt;

static obj_t objs[MAXOBJ];
static int nobjs;
static pdcid_t pdc, cont;

static struct {
    uint64_t writes, reads, batches, singles, bytes_written, bytes_read, polls, closes_unwaited;
    uint64_t ops_per_placement[NPLACEMENTS], objs_per_placement[NPLACEMENTS],
        bytes_per_placement[NPLACEMENTS];
    uint64_t local_reshaped, local_offset;
} stats;

static const char *cur_what = "setup";
static uint64_t cur_op;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL [%s, op %" PRIu64 "]: ", cur_what, cur_op);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\nreproduce: %s\n", opt.cmdline);
    fflush(stdout);
    exit(1);
}

static void fail_pdc(const char *call, const xfer_t *x)
{
    printf("FAIL [%s, op %" PRIu64 "]: %s failed: %s: %s\n", cur_what, cur_op, call,
           PDCbb_last_error_name(), PDCbb_last_error_message());
    if (x) {
        const obj_t *o = &objs[x->obj];
        printf("  transfer: %s of object %s (%s, %s, %s) remote ", x->write ? "write" : "read",
               o->name, placement_names[o->placement], get_enum_name_by_dtype(o->type),
               o->posix ? "POSIX" : "default");
        box_print(stdout, &x->remote);
        printf(" local nd=%d ", x->local.nd);
        box_print(stdout, &x->local);
        printf("\n");
    }
    printf("reproduce: %s\n", opt.cmdline);
    fflush(stdout);
    exit(1);
}

/* ---------------------------------------------------------------------------------------- */
/* The objects of a run, from the seed.                                                     */

static const pdc_var_type_t types1[] = {PDC_CHAR, PDC_INT8, PDC_UINT8};
static const pdc_var_type_t types2[] = {PDC_INT16, PDC_UINT16, PDC_SHORT};
static const pdc_var_type_t types4[] = {PDC_INT, PDC_FLOAT, PDC_UINT32, PDC_INT32};
static const pdc_var_type_t types8[] = {PDC_DOUBLE, PDC_INT64, PDC_UINT64};

/* Largest v with v^k <= n. */
static uint64_t iroot(uint64_t n, int k)
{
    uint64_t v = 1;
    for (;;) {
        uint64_t p = 1, c = v + 1;
        int over = 0;
        for (int i = 0; i < k && !over; i++) {
            if (p > n / c)
                over = 1;
            p *= c;
        }
        if (over || p > n)
            return v;
        v = c;
    }
}

static void obj_spec(obj_t *o, rng_t *r, int owner, int k, int min_d0)
{
    memset(o, 0, sizeof(*o));
    o->owner = owner;
    if (owner >= 0)
        snprintf(o->name, sizeof(o->name), "%s.r%d.o%d", opt.prefix, owner, k);
    else
        snprintf(o->name, sizeof(o->name), "%s.shared.o%d", opt.prefix, k);
    uint64_t t = rng_below(r, 10);
    if (t < 3)
        o->type = types1[rng_below(r, 3)];
    else if (t < 4)
        o->type = types2[rng_below(r, 3)];
    else if (t < 7)
        o->type = types4[rng_below(r, 4)];
    else
        o->type = types8[rng_below(r, 3)];
    o->unit = get_size_by_dtype(o->type);
    /* Total size roughly log-uniform in [min_obj_bytes, max_obj_bytes]. */
    uint64_t lo = opt.min_obj_bytes, hi = opt.max_obj_bytes < lo ? lo : opt.max_obj_bytes;
    uint64_t bytes = lo;
    while (bytes * 2 <= hi && rng_below(r, 8) < 6)
        bytes *= 2;
    bytes += rng_below(r, bytes); /* somewhere in the octave */
    if (bytes > hi)
        bytes = hi;
    uint64_t target = bytes / o->unit;
    if (target < 1)
        target = 1;
    o->nd = 1 + (int)rng_below(r, (uint64_t)opt.max_ndim);
    uint64_t rem = target;
    for (int d = 0; d < o->nd - 1; d++) {
        int left = o->nd - d;
        uint64_t base = iroot(rem, left), v;
        if (rng_below(r, 10) == 0)
            v = 1;
        else {
            v = base / 2 + rng_below(r, base + base / 2 + 1);
            if (v < 1)
                v = 1;
        }
        o->dims[d] = v;
        rem = rem / v ? rem / v : 1;
    }
    o->dims[o->nd - 1] = rem;
    if (o->dims[0] < (uint64_t)min_d0)
        o->dims[0] = (uint64_t)min_d0;
    o->nelem = 1;
    for (int d = 0; d < o->nd; d++)
        o->nelem *= o->dims[d];
    if (k < opt.nallowed)
        o->placement = opt.allowed[(k + (owner < 0 ? 1 : owner)) % opt.nallowed];
    else
        o->placement = opt.allowed[rng_below(r, (uint64_t)opt.nallowed)];
    o->posix = rng_below(r, 3) == 0;
}

/* Objects of every rank and the shared ones; plans[r] is left ready to plan rank r's ops. */
/* Release the in-memory references of the current objects. */
static void free_refs(void)
{
    for (int i = 0; i < nobjs; i++) {
        free(objs[i].ref);
        objs[i].ref = NULL;
    }
}

static void make_objects(plan_t *plans)
{
    free_refs();
    nobjs = 0;
    for (int r = 0; r < opt.procs; r++) {
        memset(&plans[r], 0, sizeof(plans[r]));
        plans[r].rank = r;
        plans[r].rng = rng_make(opt.seed, (uint64_t)r + 1);
        int k = opt.nobj_per_rank ? opt.nobj_per_rank
                                  : opt.nallowed + 1 + (int)rng_below(&plans[r].rng, 2);
        for (int i = 0; i < k && nobjs < MAXOBJ - NSHARED; i++)
            obj_spec(&objs[nobjs++], &plans[r].rng, r, i, 1);
    }
    rng_t sr = rng_make(opt.seed, 0xfffffULL);
    for (int i = 0; i < NSHARED; i++)
        obj_spec(&objs[nobjs++], &sr, -1, i, opt.procs);
}

/* Rows of dimension 0 that rank r may touch in object o (r < 0: a verifier, all rows). */
static void stripe_of(const obj_t *o, int r, uint64_t *lo, uint64_t *hi)
{
    if (o->owner >= 0 || r < 0 || opt.sequential) {
        *lo = 0;
        *hi = o->dims[0];
        return;
    }
    *lo = o->dims[0] * (uint64_t)r / (uint64_t)opt.procs;
    *hi = o->dims[0] * (uint64_t)(r + 1) / (uint64_t)opt.procs;
}

static int rank_may_use(const obj_t *o, int r)
{
    return o->owner == r || o->owner < 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Planning: every random decision is taken here, so that replaying a plan without moving data
 * (verify phase) reproduces the reference exactly.                                          */

static void gen_remote(plan_t *p, int oi, box_t *b)
{
    const obj_t *o = &objs[oi];
    uint64_t lo0, hi0;
    stripe_of(o, p->rank, &lo0, &hi0);
    b->nd = o->nd;
    uint64_t kind = rng_below(&p->rng, 100);
    uint64_t lo[MAXD], ext[MAXD];
    for (int d = 0; d < o->nd; d++) {
        lo[d] = d == 0 ? lo0 : 0;
        ext[d] = d == 0 ? hi0 - lo0 : o->dims[d];
    }
    if (kind < 5) { /* the whole object (stripe) */
        for (int d = 0; d < o->nd; d++) {
            b->off[d] = lo[d];
            b->size[d] = ext[d];
        }
    } else if (kind < 15) { /* one element */
        for (int d = 0; d < o->nd; d++) {
            b->off[d] = lo[d] + rng_below(&p->rng, ext[d]);
            b->size[d] = 1;
        }
    } else if (kind < 40 && p->nrecent[oi] > 0) { /* partly over an earlier write */
        const box_t *base = &p->recent[oi][rng_below(&p->rng, (uint64_t)p->nrecent[oi])];
        for (int d = 0; d < o->nd; d++) {
            uint64_t sz = 1 + rng_below(&p->rng, 2 * base->size[d]);
            if (sz > ext[d])
                sz = ext[d];
            /* start anywhere from sz-1 before the base box to its last element */
            uint64_t from = base->off[d] + 1 > sz ? base->off[d] + 1 - sz : 0;
            uint64_t to = base->off[d] + base->size[d] - 1;
            uint64_t off = from + rng_below(&p->rng, to - from + 1);
            if (off < lo[d])
                off = lo[d];
            if (off + sz > lo[d] + ext[d])
                off = lo[d] + ext[d] - sz;
            b->off[d] = off;
            b->size[d] = sz;
        }
    } else if (kind < 50) { /* large: at least half of every extent */
        for (int d = 0; d < o->nd; d++) {
            uint64_t sz = (ext[d] + 1) / 2 + rng_below(&p->rng, ext[d] / 2 + 1);
            if (sz > ext[d])
                sz = ext[d];
            b->size[d] = sz;
            b->off[d] = lo[d] + rng_below(&p->rng, ext[d] - sz + 1);
        }
    } else { /* random */
        for (int d = 0; d < o->nd; d++) {
            uint64_t sz = rng_log(&p->rng, ext[d]);
            if (rng_below(&p->rng, 8) == 0)
                sz = ext[d];
            b->size[d] = sz;
            b->off[d] = lo[d] + rng_below(&p->rng, ext[d] - sz + 1);
        }
    }
}

/* Factor n into nd extents (random divisors). */
static void factor(rng_t *r, uint64_t n, int nd, uint64_t *out)
{
    for (int d = 0; d < nd - 1; d++) {
        uint64_t divs[256];
        int nd_ = 0;
        for (uint64_t i = 1; i * i <= n && nd_ < 254; i++)
            if (n % i == 0) {
                divs[nd_++] = i;
                if (i != n / i)
                    divs[nd_++] = n / i;
            }
        uint64_t v = divs[rng_below(r, (uint64_t)nd_)];
        out[d] = v;
        n /= v;
    }
    out[nd - 1] = n;
}

static void gen_local(plan_t *p, const box_t *remote, xfer_t *x)
{
    uint64_t count = box_count(remote);
    box_t *l = &x->local;
    uint64_t kind = rng_below(&p->rng, 100);
    if (kind < 45) { /* same shape, offset 0 */
        *l = *remote;
        memset(l->off, 0, sizeof(l->off));
    } else if (kind < 65) { /* same shape, offsets */
        *l = *remote;
        memset(l->off, 0, sizeof(l->off));
    } else if (kind < 82) { /* 1-D */
        l->nd = 1;
        l->size[0] = count;
        l->off[0] = 0;
    } else { /* another shape of 1..4 dimensions */
        l->nd = 1 + (int)rng_below(&p->rng, 4);
        factor(&p->rng, count, l->nd, l->size);
        memset(l->off, 0, sizeof(l->off));
    }
    /* Offsets (padding in the buffer) for some of the shapes, keeping the buffer small. */
    if (kind >= 45 && kind < 65 ? 1 : rng_below(&p->rng, 3) == 0) {
        double growth = 1.0;
        for (int d = 0; d < l->nd; d++) {
            uint64_t o = rng_below(&p->rng, 4);
            double g = (double)(l->size[d] + o) / (double)l->size[d];
            if (growth * g > 4.0)
                o = 0, g = 1.0;
            growth *= g;
            l->off[d] = o;
        }
    }
    for (int d = 0; d < l->nd; d++)
        x->lext[d] = l->off[d] + l->size[d];
}

static uint64_t buf_elems(const xfer_t *x)
{
    uint64_t n = 1;
    for (int d = 0; d < x->local.nd; d++)
        n *= x->lext[d];
    return n;
}

static int pick_obj(plan_t *p)
{
    int cand[MAXOBJ], n = 0;
    for (int i = 0; i < nobjs; i++) {
        /* A writer's choice must not depend on what this process tracks (replay); a
         * verifier (rank < 0) reads the objects it tracks. */
        if (p->rank >= 0 ? !rank_may_use(&objs[i], p->rank) : objs[i].ref == NULL)
            continue;
        uint64_t lo, hi;
        stripe_of(&objs[i], p->rank, &lo, &hi);
        if (hi > lo)
            cand[n++] = i;
    }
    return n ? cand[rng_below(&p->rng, (uint64_t)n)] : -1;
}

static void remember_write(plan_t *p, const xfer_t *x)
{
    int oi = x->obj;
    if (p->nrecent[oi] < NRECENT)
        p->recent[oi][p->nrecent[oi]++] = x->remote;
    else
        p->recent[oi][rng_below(&p->rng, NRECENT)] = x->remote;
}

/* Apply a write to the reference (and fill the buffer, when there is one): element k of the
 * local box (row-major) goes to element k of the remote box. */
static void apply_write(const xfer_t *x, unsigned char *buf, int to_ref)
{
    const obj_t *o = &objs[x->obj];
    size_t u = o->unit;
    unsigned char *ref = to_ref ? o->ref : NULL;
    if (ref == NULL && buf == NULL)
        return;
    if (buf) { /* padding first */
        bytes_t pad = {rng_make(x->seed, 77), 0, 0};
        bytes_fill(&pad, buf, x->buflen);
    }
    bytes_t data = {rng_make(x->seed, 78), 0, 0};
    runs_t li, ri;
    runs_init(&li, x->local.nd, x->lext, &x->local);
    runs_init(&ri, o->nd, o->dims, &x->remote);
    unsigned char tmp[65536];
    while (!li.done && !ri.done) {
        uint64_t ls, ln, rs, rn;
        runs_cur(&li, &ls, &ln);
        runs_cur(&ri, &rs, &rn);
        uint64_t n = ln < rn ? ln : rn;
        uint64_t done = 0;
        while (done < n) {
            uint64_t chunk = n - done;
            if (chunk * u > sizeof(tmp))
                chunk = sizeof(tmp) / u;
            bytes_fill(&data, tmp, chunk * u);
            if (buf)
                memcpy(buf + (ls + done) * u, tmp, chunk * u);
            if (ref)
                memcpy(ref + (rs + done) * u, tmp, chunk * u);
            done += chunk;
        }
        runs_adv(&li, n);
        runs_adv(&ri, n);
    }
}

static void plan_xfer(plan_t *p, xfer_t *x, int oi, int write)
{
    memset(x, 0, sizeof(*x));
    x->obj = oi;
    x->write = write;
    gen_remote(p, oi, &x->remote);
    gen_local(p, &x->remote, x);
    x->seed = rng_next(&p->rng);
    x->completion = (int)rng_below(&p->rng, 4);
    x->close_with_obj = rng_below(&p->rng, 4) == 0;
    x->close_early = rng_below(&p->rng, 2) == 0;
    x->buflen = buf_elems(x) * objs[oi].unit;
}

/* Plan the next batch (n == 1: a single transfer) of rank p; updates the reference. */
static void plan_batch(plan_t *p, batch_t *b, uint64_t left)
{
    memset(b, 0, offsetof(batch_t, x));
    int oi0 = pick_obj(p);
    if (oi0 < 0) {
        b->n = 0;
        return;
    }
    int single = rng_below(&p->rng, 100) < 65 || left < 2;
    uint64_t want = single ? 1 : 2 + rng_below(&p->rng, MAXBATCH - 1);
    if (want > left)
        want = left;
    b->start_mode = (int)rng_below(&p->rng, 3);
    b->completion = (int)rng_below(&p->rng, 4);
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < want; i++) {
        int oi = i == 0 ? oi0 : pick_obj(p);
        int write = rng_below(&p->rng, 100) < 60;
        xfer_t *x = &b->x[b->n];
        int ok = 0;
        for (int tries = 0; tries < 8 && !ok; tries++) {
            plan_xfer(p, x, oi, write);
            ok = 1;
            for (int j = 0; j < b->n && ok; j++) {
                const xfer_t *y = &b->x[j];
                if (y->obj == oi && (write || y->write) && box_overlap(&y->remote, &x->remote))
                    ok = 0;
            }
        }
        if (!ok || bytes + x->buflen > (64u << 20))
            continue;
        bytes += x->buflen;
        if (write) {
            remember_write(p, x);
            apply_write(x, NULL, 1);
        }
        b->n++;
    }
    for (int i = 0; i < b->n; i++)
        b->perm[i] = i;
    for (int i = b->n - 1; i > 0; i--) {
        int j = (int)rng_below(&p->rng, (uint64_t)i + 1), t = b->perm[i];
        b->perm[i] = b->perm[j];
        b->perm[j] = t;
    }
    p->opno += (uint64_t)b->n;
}

/* ---------------------------------------------------------------------------------------- */
/* Execution.                                                                               */

static void trace_xfer(const xfer_t *x, uint64_t opno, const char *how)
{
    const obj_t *o = &objs[x->obj];
    printf("op %" PRIu64 ": %s %s [%s %s %s dims=", opno, x->write ? "write" : "read", o->name,
           placement_names[o->placement], get_enum_name_by_dtype(o->type),
           o->posix ? "posix" : "default");
    for (int d = 0; d < o->nd; d++)
        printf("%s%" PRIu64, d ? "x" : "", o->dims[d]);
    printf("] remote ");
    box_print(stdout, &x->remote);
    printf(" local nd=%d ", x->local.nd);
    box_print(stdout, &x->local);
    printf(" %s\n", how);
}

static void close_region(pdcid_t reg, int with_obj)
{
    perr_t rc = with_obj ? PDCobj_close(reg) : PDCregion_close(reg);
    if (rc != SUCCEED)
        fail_pdc(with_obj ? "PDCobj_close(region)" : "PDCregion_close", NULL);
}

static void xfer_create(xfer_t *x)
{
    obj_t *o = &objs[x->obj];
    x->buf = malloc(x->buflen ? x->buflen : 1);
    if (!x->buf)
        fail("out of memory (%zu bytes)", x->buflen);
    if (x->write)
        apply_write(x, x->buf, 0); /* the reference was updated when planning */
    else {
        bytes_t pad = {rng_make(x->seed, 77), 0, 0};
        bytes_fill(&pad, x->buf, x->buflen);
    }
    pdcid_t lreg = PDCregion_create((psize_t)x->local.nd, x->local.off, x->local.size);
    if (!lreg)
        fail_pdc("PDCregion_create(local)", x);
    pdcid_t rreg = PDCregion_create((psize_t)x->remote.nd, x->remote.off, x->remote.size);
    if (!rreg)
        fail_pdc("PDCregion_create(remote)", x);
    x->req = PDCregion_transfer_create(x->buf, x->write ? PDC_WRITE : PDC_READ, o->id, lreg, rreg);
    if (!x->req)
        fail_pdc("PDCregion_transfer_create", x);
    /* The request keeps its own copy of the regions: close them now or after completion. */
    if (x->close_early) {
        close_region(lreg, x->close_with_obj);
        close_region(rreg, !x->close_with_obj);
    } else {
        x->regions[0] = lreg;
        x->regions[1] = rreg;
    }
    uint64_t bytes = box_count(&x->remote) * o->unit;
    if (x->write) {
        stats.writes++;
        stats.bytes_written += bytes;
    } else {
        stats.reads++;
        stats.bytes_read += bytes;
    }
    stats.ops_per_placement[o->placement]++;
    stats.bytes_per_placement[o->placement] += bytes;
    if (x->local.nd != x->remote.nd)
        stats.local_reshaped++;
    for (int d = 0; d < x->local.nd; d++)
        if (x->local.off[d]) {
            stats.local_offset++;
            break;
        }
}

/* Compare a completed read with the reference, padding included. */
static void check_read(const xfer_t *x, uint64_t opno)
{
    const obj_t *o = &objs[x->obj];
    size_t u = o->unit;
    if (o->ref == NULL)
        fail("internal: read of untracked object %s", o->name);
    unsigned char *want = malloc(x->buflen ? x->buflen : 1);
    if (!want)
        fail("out of memory");
    bytes_t pad = {rng_make(x->seed, 77), 0, 0};
    bytes_fill(&pad, want, x->buflen);
    runs_t li, ri;
    runs_init(&li, x->local.nd, x->lext, &x->local);
    runs_init(&ri, o->nd, o->dims, &x->remote);
    while (!li.done && !ri.done) {
        uint64_t ls, ln, rs, rn;
        runs_cur(&li, &ls, &ln);
        runs_cur(&ri, &rs, &rn);
        uint64_t n = ln < rn ? ln : rn;
        memcpy(want + ls * u, o->ref + rs * u, n * u);
        runs_adv(&li, n);
        runs_adv(&ri, n);
    }
    if (memcmp(want, x->buf, x->buflen) == 0) {
        free(want);
        return;
    }
    size_t i = 0;
    while (want[i] == x->buf[i])
        i++;
    uint64_t elem = i / u, lc[MAXD], rc[MAXD];
    unravel(elem, x->local.nd, x->lext, lc);
    int inside = 1;
    uint64_t k = 0;
    for (int d = 0; d < x->local.nd; d++) {
        if (lc[d] < x->local.off[d] || lc[d] >= x->local.off[d] + x->local.size[d])
            inside = 0;
        else
            k = k * x->local.size[d] + (lc[d] - x->local.off[d]);
    }
    uint64_t nbad = 0;
    for (size_t j = 0; j < x->buflen; j += u)
        nbad += memcmp(want + j, x->buf + j, u) != 0;
    printf("MISMATCH [%s] op %" PRIu64 ": read of object %s (%s, %s, %s, owner %d, dims=", cur_what,
           opno, o->name, placement_names[o->placement], get_enum_name_by_dtype(o->type),
           o->posix ? "POSIX" : "default", o->owner);
    for (int d = 0; d < o->nd; d++)
        printf("%s%" PRIu64, d ? "x" : "", o->dims[d]);
    printf(")\n  remote ");
    box_print(stdout, &x->remote);
    printf(", local buffer extents=");
    coords_print(stdout, x->local.nd, x->lext);
    printf(" box ");
    box_print(stdout, &x->local);
    printf("\n");
    if (inside) {
        unravel(k, x->remote.nd, x->remote.size, rc);
        for (int d = 0; d < o->nd; d++)
            rc[d] += x->remote.off[d];
        printf("  first wrong element: object coordinates ");
        coords_print(stdout, o->nd, rc);
        printf(" (element %" PRIu64 " of the box, buffer coordinates ", k);
        coords_print(stdout, x->local.nd, lc);
        printf(")\n");
    } else {
        printf("  the library wrote outside the local box: buffer coordinates ");
        coords_print(stdout, x->local.nd, lc);
        printf(" is padding\n");
    }
    printf("  expected ");
    for (size_t j = 0; j < u; j++)
        printf("%02x", want[elem * u + j]);
    printf(" actual ");
    for (size_t j = 0; j < u; j++)
        printf("%02x", x->buf[elem * u + j]);
    int zero = 1;
    for (size_t j = 0; j < u; j++)
        zero &= x->buf[elem * u + j] == 0;
    printf("%s; %" PRIu64 " of %zu buffer elements differ\n", zero ? " (zero: never written?)" : "",
           nbad, x->buflen / u);
    printf("reproduce: %s\n", opt.cmdline);
    fflush(stdout);
    exit(1);
}

/* One status call, checking the sequence PENDING* COMPLETE NOT_FOUND. Returns 1 once complete. */
static int poll_once(xfer_t *x, int first)
{
    pdc_transfer_status_t st;
    if (PDCregion_transfer_status(x->req, &st) != SUCCEED)
        fail_pdc("PDCregion_transfer_status", x);
    stats.polls++;
    if (st == PDC_TRANSFER_STATUS_COMPLETE) {
        x->reported = 1;
        /* Completion is reported once: the next call says NOT_FOUND. */
        if (PDCregion_transfer_status(x->req, &st) != SUCCEED)
            fail_pdc("PDCregion_transfer_status (after COMPLETE)", x);
        if (st != PDC_TRANSFER_STATUS_NOT_FOUND)
            fail("status after COMPLETE was %d, expected PDC_TRANSFER_STATUS_NOT_FOUND (%d)",
                 (int)st, (int)PDC_TRANSFER_STATUS_NOT_FOUND);
        return 1;
    }
    if (st == PDC_TRANSFER_STATUS_NOT_FOUND)
        fail("status of a started, unreported transfer was NOT_FOUND (expected PENDING or "
             "COMPLETE) for %s of %s",
             x->write ? "write" : "read", objs[x->obj].name);
    if (st != PDC_TRANSFER_STATUS_PENDING)
        fail("status returned unknown value %d", (int)st);
    if (first && objs[x->obj].posix)
        fail("POSIX-consistency %s of %s is PENDING right after start returned",
             x->write ? "write" : "read", objs[x->obj].name);
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void poll_all(xfer_t **xs, int n)
{
    double t0 = now();
    int left = n, round = 0;
    while (left > 0) {
        for (int i = 0; i < n; i++)
            if (!xs[i]->reported && poll_once(xs[i], round == 0))
                left--;
        if (left == 0)
            break;
        if (++round > 50) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        if (now() - t0 > POLL_SECONDS)
            fail("%d transfer(s) still PENDING after %d s of polling", left, POLL_SECONDS);
    }
}

static void release(xfer_t *x)
{
    if (!x->closed) {
        if (PDCregion_transfer_close(x->req) != SUCCEED)
            fail_pdc("PDCregion_transfer_close", x);
        x->closed = 1;
    }
    if (x->regions[0]) {
        close_region(x->regions[0], !x->close_with_obj);
        close_region(x->regions[1], x->close_with_obj);
        x->regions[0] = x->regions[1] = 0;
    }
}

/* After a POSIX write's start returned, the transfer is complete: the buffer is ours again.
 * Scribble over it so that a library still reading it would store wrong bytes. */
static void scribble_posix(xfer_t *x)
{
    if (x->write && objs[x->obj].posix)
        memset(x->buf, 0xEE, x->buflen);
}

static void exec_single(xfer_t *x, uint64_t opno)
{
    const obj_t *o = &objs[x->obj];
    static const char *const how_default[4] = {"start+wait", "start+poll", "start+close",
                                               "start+wait+status"};
    static const char *const how_posix[4] = {"start+status", "start+status", "start+close",
                                             "start+wait"};
    int c = x->completion;
    alarm(POLL_SECONDS);
    if (opt.trace)
        trace_xfer(x, opno, o->posix ? how_posix[c] : how_default[c]);
    stats.singles++;
    xfer_create(x);
    if (PDCregion_transfer_start(x->req) != SUCCEED)
        fail_pdc("PDCregion_transfer_start", x);
    if (o->posix) {
        if (!x->write && c != 2)
            check_read(x, opno); /* complete when start returned */
        scribble_posix(x);
        if (c == 0 || c == 1) {
            if (!poll_once(x, 1))
                fail("POSIX transfer not COMPLETE right after start");
        } else if (c == 2) {
            if (PDCregion_transfer_close(x->req) != SUCCEED)
                fail_pdc("PDCregion_transfer_close (unwaited)", x);
            x->closed = 1;
            stats.closes_unwaited++;
        } else if (PDCregion_transfer_wait(x->req) != SUCCEED)
            fail_pdc("PDCregion_transfer_wait", x);
    } else {
        if (c == 0 || c == 3) {
            if (PDCregion_transfer_wait(x->req) != SUCCEED)
                fail_pdc("PDCregion_transfer_wait", x);
            if (c == 3) {
                pdc_transfer_status_t st;
                if (PDCregion_transfer_status(x->req, &st) != SUCCEED)
                    fail_pdc("PDCregion_transfer_status (after wait)", x);
                if (st != PDC_TRANSFER_STATUS_NOT_FOUND)
                    fail("status after wait was %d, expected PDC_TRANSFER_STATUS_NOT_FOUND",
                         (int)st);
            }
        } else if (c == 1) {
            xfer_t *xs[1] = {x};
            poll_all(xs, 1);
        } else {
            if (PDCregion_transfer_close(x->req) != SUCCEED)
                fail_pdc("PDCregion_transfer_close (unwaited)", x);
            x->closed = 1;
            stats.closes_unwaited++;
        }
    }
    release(x);
    if (!x->write)
        check_read(x, opno);
    free(x->buf);
    x->buf = NULL;
}

static void exec_batch(batch_t *b, uint64_t first)
{
    if (b->n == 1) {
        exec_single(&b->x[0], first);
        return;
    }
    static const char *const starts[3] = {"start_all", "start in order", "start in reverse"};
    static const char *const comps[4] = {"wait_all", "poll", "wait in random order",
                                         "close unwaited"};
    stats.batches++;
    alarm(POLL_SECONDS);
    pdcid_t ids[MAXBATCH];
    xfer_t *xs[MAXBATCH];
    for (int i = 0; i < b->n; i++) {
        char how[96];
        snprintf(how, sizeof(how), "batch %d/%d: %s, %s", i + 1, b->n, starts[b->start_mode],
                 comps[b->completion]);
        if (opt.trace)
            trace_xfer(&b->x[i], first + (uint64_t)i, how);
        xfer_create(&b->x[i]);
        ids[i] = b->x[i].req;
        xs[i] = &b->x[i];
    }
    if (b->start_mode == 0) {
        if (PDCregion_transfer_start_all(ids, b->n) != SUCCEED)
            fail_pdc("PDCregion_transfer_start_all", NULL);
    } else {
        for (int k = 0; k < b->n; k++) {
            int i = b->start_mode == 1 ? k : b->n - 1 - k;
            cur_op = first + (uint64_t)i;
            if (PDCregion_transfer_start(ids[i]) != SUCCEED)
                fail_pdc("PDCregion_transfer_start", &b->x[i]);
        }
    }
    for (int i = 0; i < b->n; i++)
        scribble_posix(&b->x[i]);
    switch (b->completion) {
    case 0:
        if (PDCregion_transfer_wait_all(ids, b->n) != SUCCEED)
            fail_pdc("PDCregion_transfer_wait_all", NULL);
        break;
    case 1:
        poll_all(xs, b->n);
        break;
    case 2:
        for (int k = 0; k < b->n; k++) {
            int i = b->perm[k];
            cur_op = first + (uint64_t)i;
            if (PDCregion_transfer_wait(ids[i]) != SUCCEED)
                fail_pdc("PDCregion_transfer_wait", &b->x[i]);
        }
        break;
    default:
        for (int k = 0; k < b->n; k++) {
            int i = b->perm[k];
            cur_op = first + (uint64_t)i;
            if (PDCregion_transfer_close(ids[i]) != SUCCEED)
                fail_pdc("PDCregion_transfer_close (unwaited)", &b->x[i]);
            b->x[i].closed = 1;
            stats.closes_unwaited++;
        }
    }
    for (int i = 0; i < b->n; i++)
        release(&b->x[i]);
    for (int i = 0; i < b->n; i++) {
        if (!b->x[i].write)
            check_read(&b->x[i], first + (uint64_t)i);
        free(b->x[i].buf);
        b->x[i].buf = NULL;
    }
}

/* Read box of object oi (whole, or rank's stripe) into a plain buffer and check it. */
static void check_whole(int oi, int rank, uint64_t opno)
{
    obj_t *o = &objs[oi];
    xfer_t x;
    memset(&x, 0, sizeof(x));
    x.obj = oi;
    x.remote.nd = o->nd;
    uint64_t lo, hi;
    stripe_of(o, rank, &lo, &hi);
    if (hi <= lo)
        return;
    for (int d = 0; d < o->nd; d++) {
        x.remote.off[d] = d == 0 ? lo : 0;
        x.remote.size[d] = d == 0 ? hi - lo : o->dims[d];
    }
    x.local = x.remote;
    memset(x.local.off, 0, sizeof(x.local.off));
    for (int d = 0; d < o->nd; d++)
        x.lext[d] = x.local.size[d];
    x.seed = mix64(opt.seed ^ (uint64_t)oi);
    x.buflen = box_count(&x.remote) * o->unit;
    x.completion = 0;
    exec_single(&x, opno);
}

static void create_objects(int rank)
{
    char cname[128];
    snprintf(cname, sizeof(cname), "%s.cont", opt.prefix);
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    if (!cprop)
        fail_pdc("PDCprop_create(cont)", NULL);
    cont = PDCcont_create(cname, cprop);
    if (!cont)
        fail_pdc("PDCcont_create", NULL);
    PDCprop_close(cprop);
    for (int i = 0; i < nobjs; i++) {
        obj_t *o = &objs[i];
        if (!rank_may_use(o, rank))
            continue;
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        if (!prop)
            fail_pdc("PDCprop_create(obj)", NULL);
        if (PDCprop_set_obj_dims(prop, o->nd, o->dims) != SUCCEED)
            fail_pdc("PDCprop_set_obj_dims", NULL);
        if (PDCprop_set_obj_type(prop, o->type) != SUCCEED)
            fail_pdc("PDCprop_set_obj_type", NULL);
        if (PDCprop_set_obj_transfer_region_type(prop, (pdc_region_partition_t)o->placement) !=
            SUCCEED)
            fail_pdc("PDCprop_set_obj_transfer_region_type", NULL);
        if (PDCprop_set_obj_consistency_semantics(
                prop, o->posix ? PDC_CONSISTENCY_POSIX : PDC_CONSISTENCY_DEFAULT) != SUCCEED)
            fail_pdc("PDCprop_set_obj_consistency_semantics", NULL);
        o->id = PDCobj_create(cont, o->name, prop);
        if (!o->id && o->owner < 0 && PDCbb_last_error() != 0 &&
            strcmp(PDCbb_last_error_name(), "PDCBB_ERR_EXISTS") == 0)
            o->id = PDCobj_open(o->name, pdc); /* another rank created it first */
        if (!o->id)
            fail_pdc(o->owner < 0 ? "PDCobj_create/PDCobj_open (shared)" : "PDCobj_create", NULL);
        PDCprop_close(prop);
        o->ref = calloc(o->nelem, o->unit);
        if (!o->ref)
            fail("out of memory for the reference of %s", o->name);
        stats.objs_per_placement[o->placement]++;
        if (opt.trace) {
            printf("object %s: %s %s %s nd=%d dims=", o->name, placement_names[o->placement],
                   get_enum_name_by_dtype(o->type), o->posix ? "posix" : "default", o->nd);
            for (int d = 0; d < o->nd; d++)
                printf("%s%" PRIu64, d ? "x" : "", o->dims[d]);
            printf("\n");
        }
    }
}

static void open_and_check(obj_t *o)
{
    o->id = PDCobj_open(o->name, pdc);
    if (!o->id)
        fail_pdc("PDCobj_open", NULL);
    struct pdc_obj_info *info = PDCobj_get_info(o->id);
    if (!info || !info->obj_pt)
        fail_pdc("PDCobj_get_info", NULL);
    int ok = info->obj_pt->ndim == (size_t)o->nd && info->obj_pt->type == o->type &&
             (int)info->obj_pt->region_partition == o->placement;
    for (int d = 0; ok && d < o->nd; d++)
        ok = info->obj_pt->dims[d] == o->dims[d];
    if (!ok)
        fail("object %s opened with ndim=%zu type=%s placement=%d; created with ndim=%d type=%s "
             "placement=%d",
             o->name, info->obj_pt->ndim, get_enum_name_by_dtype(info->obj_pt->type),
             (int)info->obj_pt->region_partition, o->nd, get_enum_name_by_dtype(o->type),
             o->placement);
    stats.objs_per_placement[o->placement]++;
}

static batch_t batch;

static void phase_write(plan_t *plans)
{
    int r = opt.rank;
    cur_what = "write: create";
    create_objects(r);
    if (opt.sequential) {
        /* Ranks 0..r-1 ran before this one and wrote anywhere in the shared objects: replay
         * their plans into the shared references (their own objects are not tracked here). */
        cur_what = "write: replay of earlier ranks";
        for (int q = 0; q < r; q++)
            while (plans[q].opno < opt.ops) {
                plan_batch(&plans[q], &batch, opt.ops - plans[q].opno);
                if (batch.n == 0)
                    break;
            }
    }
    cur_what = "write";
    plan_t *p = &plans[r];
    while (p->opno < opt.ops) {
        uint64_t first = p->opno;
        cur_op = first;
        plan_batch(p, &batch, opt.ops - p->opno);
        if (batch.n == 0)
            break;
        exec_batch(&batch, first);
    }
    cur_what = "write: final check";
    for (int i = 0; i < nobjs; i++)
        if (objs[i].ref) {
            cur_op = opt.ops + (uint64_t)i;
            check_whole(i, r, cur_op);
        }
    for (int i = 0; i < nobjs; i++)
        if (objs[i].id) {
            if (PDCobj_close(objs[i].id) != SUCCEED)
                fail_pdc("PDCobj_close", NULL);
            objs[i].id = 0;
        }
}

/* Recompute the reference of owner's objects and the shared ones from the plans of ranks
 * 0..nranks-1, then read them back. whole_shared: check every stripe of the shared objects (all
 * writers done). */
static void phase_verify(plan_t *plans, int owner, int whole_shared, int nranks)
{
    cur_what = "verify: replay";
    for (int i = 0; i < nobjs; i++) {
        free(objs[i].ref);
        objs[i].ref = NULL;
        if (objs[i].owner == owner || objs[i].owner < 0) {
            objs[i].ref = calloc(objs[i].nelem, objs[i].unit);
            if (!objs[i].ref)
                fail("out of memory");
        }
    }
    for (int r = 0; r < nranks; r++) {
        plan_t *p = &plans[r];
        while (p->opno < opt.ops) {
            plan_batch(p, &batch, opt.ops - p->opno);
            if (batch.n == 0)
                break;
        }
    }
    cur_what = "verify: open";
    for (int i = 0; i < nobjs; i++)
        if (objs[i].ref)
            open_and_check(&objs[i]);
    rng_t vr = rng_make(opt.seed, 0x7e41f00ULL + (uint64_t)owner);
    if (opt.inject) {
        for (int i = 0; i < nobjs; i++)
            if (objs[i].ref) {
                uint64_t at = rng_below(&vr, objs[i].nelem * objs[i].unit);
                objs[i].ref[at] ^= 0x5a;
                printf("inject: flipped reference byte %" PRIu64 " of %s\n", at, objs[i].name);
                break;
            }
    }
    int vrank = whole_shared ? -1 : owner;
    cur_what = "verify: whole objects";
    uint64_t opno = 0;
    for (int i = 0; i < nobjs; i++)
        if (objs[i].ref)
            check_whole(i, vrank, opno++);
    cur_what = "verify: random reads";
    plan_t vp;
    memset(&vp, 0, sizeof(vp));
    vp.rank = vrank;
    vp.rng = vr;
    uint64_t nreads = 0, want = 0;
    for (int i = 0; i < nobjs; i++)
        want += objs[i].ref ? 12 : 0;
    while (nreads < want) {
        batch_t *b = &batch;
        memset(b, 0, offsetof(batch_t, x));
        int n = rng_below(&vp.rng, 2) ? 1 : 2 + (int)rng_below(&vp.rng, 31);
        b->start_mode = (int)rng_below(&vp.rng, 3);
        b->completion = (int)rng_below(&vp.rng, 4);
        for (int k = 0; k < n; k++) {
            int oi = pick_obj(&vp);
            if (oi < 0)
                break;
            plan_xfer(&vp, &b->x[b->n++], oi, 0);
        }
        for (int i = 0; i < b->n; i++)
            b->perm[i] = b->n - 1 - i;
        if (b->n == 0)
            break;
        cur_op = opno;
        exec_batch(b, opno);
        opno += (uint64_t)b->n;
        nreads += (uint64_t)b->n;
    }
    for (int i = 0; i < nobjs; i++)
        if (objs[i].id) {
            if (PDCobj_close(objs[i].id) != SUCCEED)
                fail_pdc("PDCobj_close", NULL);
            objs[i].id = 0;
        }
}

static void usage(void)
{
    fprintf(stderr, "usage: pdc_region_model --seed S --ops N [--procs P --rank R] [--owner O]\n"
                    "         [--placements "
                    "all|obj_static,region_static,region_dynamic,region_local,region_striped]\n"
                    "         [--phase write|verify|both] [--objects K] [--min-obj-bytes B]\n"
                    "         [--max-obj-bytes B]\n"
                    "         [--max-ndim D] [--name PREFIX] [--sequential] [--trace]\n"
                    "         [--inject-mismatch]\n");
    exit(2);
}

static int parse_placements(const char *s)
{
    opt.nallowed = 0;
    if (strcmp(s, "all") == 0) {
        for (int i = 0; i < NPLACEMENTS; i++)
            opt.allowed[opt.nallowed++] = i;
        return 0;
    }
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", s);
    char *save = NULL;
    for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int i = 0; i < NPLACEMENTS; i++)
            if (strcasecmp(w, placement_names[i]) == 0 ||
                (strncasecmp(w, "PDC_", 4) == 0 && strcasecmp(w + 4, placement_names[i]) == 0))
                found = i;
        if (found < 0 || opt.nallowed >= NPLACEMENTS)
            return -1;
        opt.allowed[opt.nallowed++] = found;
    }
    return opt.nallowed ? 0 : -1;
}

static void on_alarm(int sig)
{
    (void)sig;
    char msg[256];
    int n = snprintf(msg, sizeof(msg),
                     "HANG [%s, op %" PRIu64 "]: no progress for %d s (a PDC call blocks)\n",
                     cur_what, cur_op, POLL_SECONDS);
    if (write(1, msg, (size_t)n) < 0) {
    }
    _exit(3);
}

int main(int argc, char **argv)
{
    opt.procs = 1;
    opt.owner = -1;
    opt.max_ndim = 4;
    opt.max_obj_bytes = 2u << 20;
    opt.min_obj_bytes = 2048;
    opt.phase = "both";
    int have_seed = 0, have_ops = 0;
    parse_placements("all");
    size_t used = 0;
    for (int i = 0; i < argc && used < sizeof(opt.cmdline) - 1; i++)
        used += (size_t)snprintf(opt.cmdline + used, sizeof(opt.cmdline) - used, "%s%s",
                                 i ? " " : "", argv[i]);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && v && (i++, 1))
        if (ARG("--seed"))
            opt.seed = strtoull(v, NULL, 0), have_seed = 1;
        else if (ARG("--ops"))
            opt.ops = strtoull(v, NULL, 0), have_ops = 1;
        else if (ARG("--procs"))
            opt.procs = atoi(v);
        else if (ARG("--rank"))
            opt.rank = atoi(v);
        else if (ARG("--owner"))
            opt.owner = atoi(v);
        else if (ARG("--placements")) {
            if (parse_placements(v) != 0) {
                fprintf(stderr, "bad --placements '%s'\n", v);
                usage();
            }
        } else if (ARG("--phase"))
            opt.phase = v;
        else if (ARG("--objects"))
            opt.nobj_per_rank = atoi(v);
        else if (ARG("--max-obj-bytes"))
            opt.max_obj_bytes = strtoull(v, NULL, 0);
        else if (ARG("--min-obj-bytes"))
            opt.min_obj_bytes = strtoull(v, NULL, 0);
        else if (ARG("--max-ndim"))
            opt.max_ndim = atoi(v);
        else if (ARG("--name"))
            snprintf(opt.prefix, sizeof(opt.prefix), "%s", v);
        else if (strcmp(a, "--trace") == 0)
            opt.trace = 1;
        else if (strcmp(a, "--inject-mismatch") == 0)
            opt.inject = 1;
        else if (strcmp(a, "--sequential") == 0)
            opt.sequential = 1;
        else {
            fprintf(stderr, "unknown or incomplete argument '%s'\n", a);
            usage();
        }
#undef ARG
    }
    int ph_write = strcmp(opt.phase, "write") == 0 || strcmp(opt.phase, "both") == 0;
    int ph_verify = strcmp(opt.phase, "verify") == 0 || strcmp(opt.phase, "both") == 0;
    if (!have_seed || !have_ops || opt.min_obj_bytes < 1 || opt.procs < 1 || opt.procs > 64 ||
        opt.rank < 0 || opt.rank >= opt.procs || opt.owner >= opt.procs || opt.max_ndim < 1 ||
        opt.max_ndim > MAXD || opt.nobj_per_rank < 0 ||
        opt.nobj_per_rank * opt.procs > MAXOBJ - NSHARED || (!ph_write && !ph_verify))
        usage();
    if (opt.owner < 0)
        opt.owner = opt.rank;
    if (opt.prefix[0] == '\0')
        snprintf(opt.prefix, sizeof(opt.prefix), "m%" PRIu64, opt.seed);
    setvbuf(stdout, NULL, _IOLBF, 0);

    static plan_t plans[64];
    make_objects(plans);

    signal(SIGALRM, on_alarm);
    alarm(POLL_SECONDS);
    pdc = PDCinit("pdc");
    if (!pdc)
        fail_pdc("PDCinit", NULL);
    double t0 = now();
    if (ph_write)
        phase_write(plans);
    if (ph_verify) {
        /* Replay from the start: fresh plans. */
        make_objects(plans);
        int after_write = strcmp(opt.phase, "both") == 0;
        /* Right after this rank's write phase, later ranks of a sequential run have not
         * written yet. */
        phase_verify(plans, opt.owner, !after_write || opt.procs == 1,
                     after_write && opt.sequential ? opt.rank + 1 : opt.procs);
    }
    if (PDCclose(pdc) != SUCCEED)
        fail_pdc("PDCclose", NULL);
    free_refs();
    printf("summary seed=%" PRIu64 " phase=%s rank=%d/%d owner=%d ops=%" PRIu64 " writes=%" PRIu64
           " reads=%" PRIu64 " singles=%" PRIu64 " batches=%" PRIu64 " polls=%" PRIu64
           " unwaited_closes=%" PRIu64 " reshaped=%" PRIu64 " local_offsets=%" PRIu64
           " bytes_written=%" PRIu64 " bytes_read=%" PRIu64 " seconds=%.2f\n",
           opt.seed, opt.phase, opt.rank, opt.procs, opt.owner, opt.ops, stats.writes, stats.reads,
           stats.singles, stats.batches, stats.polls, stats.closes_unwaited, stats.local_reshaped,
           stats.local_offset, stats.bytes_written, stats.bytes_read, now() - t0);
    for (int i = 0; i < NPLACEMENTS; i++)
        printf("placement %s objects=%" PRIu64 " transfers=%" PRIu64 " bytes=%" PRIu64 "\n",
               placement_names[i], stats.objs_per_placement[i], stats.ops_per_placement[i],
               stats.bytes_per_placement[i]);
    printf("OK\n");
    return 0;
}
