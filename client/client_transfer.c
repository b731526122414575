/*
 * client_transfer.c - the transfer engine: pieces by placement, DATA messages per daemon,
 * completion. See client_transfer.h for the placement rules.
 *
 * Data moves without copies where it can: a write whose local region is the whole buffer is
 * sent straight from the user's buffer (UCX rendezvous lets the daemon pull it, single-copy
 * over cma), and a read of one piece is received straight into it. Other shapes are packed into
 * (or unpacked from) one staging buffer per transfer. Several small pieces bound for one daemon
 * travel in one message, their data concatenated.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_direct.h"
#include "client_transfer.h"
#include "pdcbb_checked.h"
#include "pdcbb_csum.h"
#include "pdcbb_log.h"

/* A piece larger than this is split into slabs along its first dimension. */
#define PIECE_MAX_BYTES ((uint64_t)64 << 20)
/* Small pieces are gathered into one message up to this much data; a piece of at least
 * PIECE_ALONE_BYTES travels alone, straight from (or into) the caller's memory. */
#define MSG_MAX_BULK ((uint64_t)8 << 20)
#define PIECE_ALONE_BYTES ((uint64_t)64 << 10)
/* The pieces bound for a daemon of this node move directly (client_direct.h) when a start call
 * gives that daemon at least this much data in one direction: below it, one UCX round trip
 * carrying the data beats two carrying none. */
#define DIRECT_MIN_BYTES ((uint64_t)256 << 10)

typedef struct xfer_msg {
    struct xfer_msg *next;
    client_pending_t *p;
    int write;
    xfer_piece_t **pieces;
    unsigned n;
    uint8_t *staging; /* concatenated write data, or NULL */
    /* DATA_DIRECT messages: */
    int direct;
    unsigned daemon;
    int done_sent;          /* a write's DONE is the pending request now */
    pdcbb_err_t *local;     /* per piece: the outcome of the client's own file I/O */
    unsigned *granted;      /* a write's pieces the daemon granted (indexes), ngranted */
    unsigned ngranted;
    char why[512];          /* the first failure of the client's own file I/O */
    pdcbb_csum_list_t csum; /* a write's checksum updates, sent with DONE */
    uint8_t *csum_wire;     /* ... encoded (DONE's bulk part) */
} xfer_msg_t;

/* Messages in flight, in the order they were posted: replies are handled in that order, so a
 * direct write's file I/O happens before that of a direct read posted after it. */
static xfer_msg_t *inflight, **inflight_tail = &inflight;

static void inflight_add(xfer_msg_t *m)
{
    m->next = NULL;
    *inflight_tail = m;
    inflight_tail = &m->next;
}

/* Unlink *pp from the list. */
static xfer_msg_t *inflight_unlink(xfer_msg_t **pp)
{
    xfer_msg_t *m = *pp;
    *pp = m->next;
    if (inflight_tail == &m->next)
        inflight_tail = pp;
    return m;
}

unsigned client_local_daemon(void)
{
    unsigned match[PDCBB_SERVERS_MAX < 64 ? PDCBB_SERVERS_MAX : 64], n = 0;
    for (unsigned i = 0; i < client_g.nservers && n < 64; i++)
        if (strcmp(client_g.servers[i].info.node, client_g.node) == 0)
            match[n++] = i;
    if (n > 0)
        return match[(unsigned)getpid() % n];
    /* No daemon names this node: the home daemon of the node name stands in. */
    return client_home_of_name(client_g.node);
}

static void piece_free_data(xfer_piece_t *pc)
{
    if (pc->own)
        free(pc->data);
    pc->data = NULL;
    pc->own = 0;
}

void client_xfer_reset(client_xfer_t *x)
{
    for (unsigned i = 0; i < x->npieces; i++)
        piece_free_data(&x->pieces[i]);
    free(x->pieces);
    x->pieces = NULL;
    x->npieces = x->left = 0;
    if (x->own_packed)
        free(x->packed_buf);
    x->packed_buf = NULL;
    x->own_packed = 0;
}

static pdcbb_err_t xfer_fail(client_xfer_t *x, pdcbb_err_t rc, const char *why)
{
    if (x->result == PDCBB_OK) {
        x->result = rc;
        snprintf(x->errmsg, sizeof(x->errmsg), "%s of object '%s': %s",
                 x->access == PDC_WRITE ? "write" : "read", x->obj_name, why);
    }
    return rc;
}

/* Where a piece's data lives in the transfer's packed buffer, if it is contiguous there. */
static int piece_slab_offset(const client_xfer_t *x, const pdcbb_box_t *b, uint64_t *off)
{
    uint64_t row = x->unit;
    for (uint32_t d = 1; d < x->ndim; d++) {
        if (b->off[d] != x->remote.off[d] || b->size[d] != x->remote.size[d])
            return 0;
        row *= b->size[d];
    }
    *off = (b->off[0] - x->remote.off[0]) * row;
    return 1;
}

/* A new zeroed piece at the end of x's pieces (not yet counted in npieces), or NULL. */
static xfer_piece_t *piece_slot(client_xfer_t *x, unsigned daemon, const pdcbb_box_t *b,
                                uint64_t bytes)
{
    xfer_piece_t *grown = realloc(x->pieces, (x->npieces + 1) * sizeof(*grown));
    if (grown == NULL)
        return NULL;
    x->pieces = grown;
    xfer_piece_t *pc = &x->pieces[x->npieces];
    memset(pc, 0, sizeof(*pc));
    pc->x = x;
    pc->daemon = daemon;
    pc->box = *b;
    pc->bytes = bytes;
    return pc;
}

static pdcbb_err_t add_piece(client_xfer_t *x, unsigned daemon, const pdcbb_box_t *b,
                             int need_own)
{
    uint64_t count;
    if (pdcbb_box_count(b, &count) != PDCBB_OK)
        return PDCBB_ERR_TOO_BIG;
    /* Large pieces become slabs along the first dimension with more than one element (a slab
     * still too large is split again along the next one), so that no request carries more
     * than the daemon takes (PDCBB_DATA_BULK_MAX). */
    uint64_t bytes = count * x->unit;
    if (bytes > PIECE_MAX_BYTES && !need_own) {
        for (uint32_t d = 0; d < b->ndim; d++) {
            if (b->size[d] < 2)
                continue;
            uint64_t per = bytes / b->size[d]; /* bytes per index of dimension d */
            uint64_t step = per >= PIECE_MAX_BYTES ? 1 : PIECE_MAX_BYTES / per;
            for (uint64_t s = 0; s < b->size[d]; s += step) {
                pdcbb_box_t slab = *b;
                slab.off[d] = b->off[d] + s;
                slab.size[d] = b->size[d] - s < step ? b->size[d] - s : step;
                pdcbb_err_t rc = add_piece(x, daemon, &slab, 0);
                if (rc != PDCBB_OK)
                    return rc;
            }
            return PDCBB_OK;
        }
    }
    xfer_piece_t *pc = piece_slot(x, daemon, b, bytes);
    if (pc == NULL)
        return PDCBB_ERR_NOMEM;
    uint64_t off;
    if (x->plan_only) {
        /* no data */
    } else if (!need_own && piece_slab_offset(x, b, &off)) {
        pc->data = x->packed_buf + off;
    } else {
        pc->data = malloc(bytes ? bytes : 1);
        if (pc->data == NULL)
            return PDCBB_ERR_NOMEM;
        pc->own = 1;
        if (x->access == PDC_WRITE) {
            pdcbb_box_t rel = *b;
            for (uint32_t d = 0; d < b->ndim; d++)
                rel.off[d] -= x->remote.off[d];
            pdcbb_err_t rc = pdcbb_box_copy(&rel, x->ndim, x->remote.size, x->unit, x->packed_buf,
                                            pc->data, 1);
            if (rc != PDCBB_OK) {
                free(pc->data);
                return rc;
            }
        }
    }
    x->npieces++;
    return PDCBB_OK;
}

/* A piece of a strided transfer: clip (object coordinates) holding ibox of the index space. */
static pdcbb_err_t add_strided_piece(client_xfer_t *x, unsigned daemon, const pdcbb_box_t *clip,
                                     const pdcbb_box_t *ibox, uint64_t bytes, int need_own)
{
    xfer_piece_t *pc = piece_slot(x, daemon, clip, bytes);
    if (pc == NULL)
        return PDCBB_ERR_NOMEM;
    pc->strided = 1;
    pc->ibox = *ibox;
    uint64_t row = x->unit, off = 0;
    int slab = !need_own;
    for (uint32_t d = 1; d < x->ndim && slab; d++) {
        slab = ibox->off[d] == 0 && ibox->size[d] == x->ispace.size[d];
        row *= ibox->size[d];
    }
    if (slab) {
        off = ibox->off[0] * row;
        pc->data = x->packed_buf + off;
    } else {
        if ((pc->data = malloc(bytes ? bytes : 1)) == NULL)
            return PDCBB_ERR_NOMEM;
        pc->own = 1;
        pdcbb_err_t rc;
        if (x->access == PDC_WRITE &&
            (rc = pdcbb_box_copy(ibox, x->ndim, x->ispace.size, x->unit, x->packed_buf, pc->data,
                                 1)) != PDCBB_OK) {
            free(pc->data);
            return rc;
        }
    }
    x->npieces++;
    return PDCBB_OK;
}

uint64_t client_stripe_rows(size_t unit, uint32_t ndim, const uint64_t *dims)
{
    uint64_t row = unit;
    for (uint32_t d = 1; d < ndim; d++)
        if (pdcbb_mul_overflow(row, dims[d], &row))
            return 0;
    return pdcbb_stripe_rows(row);
}

/* The dimension REGION_STATIC stripes along, or -1 (then the home daemon holds everything). */
static int static_split_dim(const client_xfer_t *x)
{
    for (uint32_t d = 0; d < x->ndim; d++)
        if (x->dims[d] != PDC_SIZE_UNLIMITED && x->dims[d] >= client_g.nservers)
            return (int)d;
    return -1;
}

static void box_to_u64(const pdcbb_box_t *b, uint64_t *out)
{
    memcpy(out, b->off, b->ndim * sizeof(uint64_t));
    memcpy(out + b->ndim, b->size, b->ndim * sizeof(uint64_t));
}

/* Remembered placements: register a write's box with the object's home daemon. */
static pdcbb_err_t map_put(client_xfer_t *x, unsigned *daemon)
{
    uint64_t entry[3 + 2 * PDCBB_REGION_NDIM_MAX];
    entry[0] = x->partition == PDC_REGION_LOCAL ? client_local_daemon() : UINT32_MAX;
    entry[1] = x->bytes;
    entry[2] = x->ndim;
    box_to_u64(&x->remote, entry + 3);
    pdcbb_map_put_req_t q = {.id = x->obj_meta, .entries = entry,
                             .entries_count = 3 + 2 * x->ndim};
    pdcbb_map_put_rep_t p;
    void *keep;
    pdcbb_err_t rc = client_op_map_put(pdcbb_meta_id_server(x->obj_meta), &q, &p, &keep);
    if (rc != PDCBB_OK)
        return rc;
    if (p.daemons_count != 1 || p.daemons[0] >= client_g.nservers)
        rc = client_fail(PDCBB_ERR_PROTO, "bad MAP_PUT reply");
    else
        *daemon = (unsigned)p.daemons[0];
    client_rpc_release(PDCBB_OP_MAP_PUT, &p, keep);
    return rc;
}

/* Remembered placements: the pieces a read must apply, oldest first. */
static pdcbb_err_t map_get_pieces(client_xfer_t *x)
{
    uint64_t box[1 + 2 * PDCBB_REGION_NDIM_MAX];
    box[0] = x->ndim;
    box_to_u64(&x->remote, box + 1);
    pdcbb_map_get_req_t q = {.id = x->obj_meta, .box = box, .box_count = 1 + 2 * x->ndim};
    pdcbb_map_get_rep_t p;
    void *keep;
    pdcbb_err_t rc = client_op_map_get(pdcbb_meta_id_server(x->obj_meta), &q, &p, &keep);
    if (rc != PDCBB_OK)
        return rc;
    uint32_t pos = 0;
    while (rc == PDCBB_OK && pos < p.entries_count) {
        /* seq, daemon, ndim, offsets, sizes */
        const uint64_t *e = p.entries + pos;
        pdcbb_box_t eb, xb;
        if (!pdcbb_range_ok(pos, 3, p.entries_count) || e[2] != x->ndim ||
            e[1] >= client_g.nservers || !pdcbb_range_ok(pos, 3 + 2 * e[2], p.entries_count) ||
            pdcbb_box_make(&eb, x->ndim, e + 3, e + 3 + x->ndim) != PDCBB_OK) {
            rc = client_fail(PDCBB_ERR_PROTO, "bad MAP_GET reply");
            break;
        }
        pos += 3 + 2 * x->ndim;
        if (pdcbb_box_intersect(&eb, &x->remote, &xb))
            rc = x->strided ? client_strided_pieces(x, (unsigned)e[1], &xb, 1, add_strided_piece)
                            : add_piece(x, (unsigned)e[1], &xb, 1);
    }
    client_rpc_release(PDCBB_OP_MAP_GET, &p, keep);
    return rc;
}

/* Split a created transfer into pieces; packs write data. */
static pdcbb_err_t prepare(client_xfer_t *x)
{
    pdcbb_err_t rc = PDCBB_OK;
    x->result = PDCBB_OK;
    x->errmsg[0] = '\0';
    if (client_g.drained && x->access == PDC_WRITE)
        return client_fail(PDCBB_ERR_READ_ONLY,
                           "%s; %s is a drained job directory, opened read-only "
                           "(PDCBB_DRAINED_DIR)",
                           pdcbb_strerror(PDCBB_ERR_READ_ONLY), client_drained_dir());
    x->packed = 1;
    for (uint32_t d = 0; d < x->local.ndim; d++)
        if (x->local.off[d] != 0)
            x->packed = 0;
    if (x->packed) {
        x->packed_buf = x->buf;
    } else {
        if ((x->packed_buf = malloc(x->bytes)) == NULL)
            return PDCBB_ERR_NOMEM;
        x->own_packed = 1;
        if (x->access == PDC_WRITE &&
            (rc = pdcbb_box_copy(&x->local, x->local.ndim, x->local_shape, x->unit, x->buf,
                                 x->packed_buf, 1)) != PDCBB_OK)
            return rc;
    }
    unsigned home = pdcbb_meta_id_server(x->obj_meta);
    if (x->strided && client_g.drained) /* the drained files answer box reads only */
        return client_strided_rmw(x, NULL);
    if (x->strided && x->access == PDC_WRITE && client_strided_needs_rmw(x)) {
        /* Remembered placements record boxes: write the whole bounding box (docs/PROTOCOL.md). */
        uint8_t *whole;
        unsigned daemon;
        if ((rc = client_strided_rmw(x, &whole)) != PDCBB_OK)
            return rc;
        uint64_t cnt = 1;
        for (uint32_t d = 0; d < x->ndim; d++)
            cnt *= x->remote.size[d];
        xfer_piece_t *pc = NULL;
        if ((rc = map_put(x, &daemon)) != PDCBB_OK ||
            (pc = piece_slot(x, daemon, &x->remote, cnt * x->unit)) == NULL) {
            free(whole);
            return rc != PDCBB_OK ? rc : PDCBB_ERR_NOMEM;
        }
        x->npieces++;
        pc->data = whole;
        pc->own = 1;
        return PDCBB_OK;
    }
#define ADD_PIECE(daemon, box)                                                                    \
    (x->strided ? client_strided_pieces(x, (daemon), (box), 0, add_strided_piece)                \
                : add_piece(x, (daemon), (box), 0))
    switch ((int)x->partition) {
    case PDC_REGION_STATIC: {
        int dim = static_split_dim(x);
        if (dim < 0 || client_g.nservers == 1)
            return ADD_PIECE(home, &x->remote);
        pdcbb_box_t *parts = malloc(client_g.nservers * sizeof(*parts));
        unsigned *stripe = malloc(client_g.nservers * sizeof(*stripe));
        int n = parts && stripe ? pdcbb_box_split_stripes(&x->remote, (uint32_t)dim, x->dims[dim],
                                                          client_g.nservers, parts, stripe)
                                : 0;
        if (n <= 0)
            rc = parts && stripe ? PDCBB_ERR_BAD_REGION : PDCBB_ERR_NOMEM;
        for (int i = 0; i < n && rc == PDCBB_OK; i++)
            rc = ADD_PIECE(stripe[i] % client_g.nservers, &parts[i]);
        free(parts);
        free(stripe);
        return rc;
    }
    case (int)PDCBB_REGION_STRIPED: {
        /* stripe k of the first dimension on daemon home + k: one piece per stripe touched */
        uint64_t rows = client_stripe_rows(x->unit, x->ndim, x->dims), first;
        uint64_t n = pdcbb_box_stripe_span(&x->remote, rows, &first);
        if (n == 0)
            return PDCBB_ERR_BAD_REGION;
        for (uint64_t k = first; k < first + n && rc == PDCBB_OK; k++) {
            pdcbb_box_t part;
            if (pdcbb_box_stripe_part(&x->remote, rows, k, &part))
                rc = ADD_PIECE(pdcbb_stripe_daemon(k, home, client_g.nservers), &part);
        }
        return rc;
    }
    case PDC_REGION_LOCAL:
    case PDC_REGION_DYNAMIC:
        if (x->access == PDC_WRITE) {
            unsigned daemon;
            if ((rc = map_put(x, &daemon)) != PDCBB_OK)
                return rc;
            return add_piece(x, daemon, &x->remote, 0);
        }
        if (!x->plan_only)
            memset(x->packed_buf, 0, x->bytes); /* elements no write placed read as zero */
        return map_get_pieces(x);
    case PDC_OBJ_STATIC:
    default: return ADD_PIECE(home, &x->remote);
    }
#undef ADD_PIECE
}

pdcbb_err_t client_xfer_plan(client_xfer_t *x)
{
    x->plan_only = 1;
    x->buf = NULL;
    x->local.ndim = 0;
    pdcbb_err_t rc = prepare(x);
    x->packed_buf = NULL;
    x->own_packed = 0;
    return rc;
}

pdcbb_err_t client_xfer_plan_rows(client_xfer_t *x, const client_obj_t *o, pdc_access_t access,
                                  uint64_t unit, uint64_t first, uint64_t rows)
{
    memset(x, 0, sizeof(*x));
    x->access = access;
    x->obj_meta = o->meta_id;
    snprintf(x->obj_name, sizeof(x->obj_name), "%s", o->name);
    x->ndim = (uint32_t)o->prop.pub.ndim;
    memcpy(x->dims, o->prop.pub.dims, x->ndim * sizeof(uint64_t));
    x->unit = unit;
    x->partition = o->prop.pub.region_partition;
    x->consistency = o->prop.pub.consistency;
    x->remote.ndim = x->ndim;
    x->remote.off[0] = first;
    x->remote.size[0] = rows;
    x->bytes = rows * unit; /* what a remembered placement accounts to the daemon (MAP_PUT) */
    for (uint32_t d = 1; d < x->ndim; d++) {
        x->remote.size[d] = x->dims[d];
        x->bytes *= x->dims[d];
    }
    return client_xfer_plan(x);
}

static void finish_xfer(client_xfer_t *x)
{
    if (x->access == PDC_READ && x->result == PDCBB_OK) {
        /* Pieces with their own buffers are applied in order: oldest write first. */
        for (unsigned i = 0; i < x->npieces; i++)
            if (x->pieces[i].own &&
                pdcbb_box_copy_overlap(x->pieces[i].strided ? &x->pieces[i].ibox
                                                            : &x->pieces[i].box,
                                       x->pieces[i].data,
                                       x->pieces[i].strided ? &x->ispace : &x->remote,
                                       x->packed_buf, x->unit) < 0)
                xfer_fail(x, PDCBB_ERR_INTERNAL, "cannot assemble the pieces");
        if (!x->packed && x->result == PDCBB_OK &&
            pdcbb_box_copy(&x->local, x->local.ndim, x->local_shape, x->unit, x->buf,
                           x->packed_buf, 0) != PDCBB_OK)
            xfer_fail(x, PDCBB_ERR_INTERNAL, "cannot unpack into the buffer");
    }
    client_xfer_reset(x);
    x->state = CLIENT_XFER_DONE;
}

/* "1.0 GiB", "200.0 MiB", "512 bytes". */
static const char *xfer_size(uint64_t b, char *buf, size_t len)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (b < 1024) {
        snprintf(buf, len, "%llu bytes", (unsigned long long)b);
        return buf;
    }
    double v = (double)b / 1024.0;
    unsigned u = 0;
    while (v >= 1024.0 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}

static void piece_done(xfer_piece_t *pc, pdcbb_err_t rc, const char *why)
{
    client_xfer_t *x = pc->x;
    pc->result = rc;
    if (rc != PDCBB_OK) {
        char msg[512], who[32];
        /* named once: a reason from the request's reply may already begin with it */
        snprintf(who, sizeof(who), "daemon %u: ", pc->daemon);
        snprintf(msg, sizeof(msg), "%s%s", why && strncmp(why, who, strlen(who)) == 0 ? "" : who,
                 why ? why : pdcbb_strerror(rc));
        xfer_fail(x, rc, msg);
    }
    if (x->left > 0 && --x->left == 0)
        finish_xfer(x);
}

static void msg_free(xfer_msg_t *m)
{
    free(m->staging);
    free(m->pieces);
    free(m->local);
    free(m->granted);
    pdcbb_csum_list_free(&m->csum);
    free(m->csum_wire);
    free(m);
}

/* The reason of a read the daemon refused because the stored bytes are damaged: the first
 * damaged range's bytes and the kind of damage (docs/PROTOCOL.md). */
static void corrupt_why(const uint64_t *v, const xfer_piece_t *pc, char *why, size_t len)
{
    uint64_t unit = pc->x->unit ? pc->x->unit : 1;
    snprintf(why, len,
             "%s: stored bytes %llu-%llu of the object (elements %llu-%llu, checksum block %llu "
             "of %llu bytes) are damaged: %s",
             pdcbb_errname(PDCBB_ERR_CORRUPT), (unsigned long long)v[0],
             (unsigned long long)(v[1] - 1), (unsigned long long)(v[0] / unit),
             (unsigned long long)((v[1] - 1) / unit),
             (unsigned long long)(v[0] / PDCBB_CSUM_BLOCK), (unsigned long long)PDCBB_CSUM_BLOCK,
             pdcbb_csum_kind_str((int)v[2]));
}

/* The reason of a region refused for space, from the capacity, used and needed bytes. */
static void space_why(const uint64_t *v, char *why, size_t len)
{
    char cap[32], used[32], need[32];
    snprintf(why, len,
             "no space: this daemon's share of the job capacity is %s, %s used, the write "
             "needs %s more (ask for a larger --pdc=capacity)",
             xfer_size(v[0], cap, sizeof(cap)), xfer_size(v[1], used, sizeof(used)),
             xfer_size(v[2], need, sizeof(need)));
}

static void complete_msg(xfer_msg_t *m)
{
    client_pending_t *p = m->p;
    uint64_t expected = 0;
    for (unsigned i = 0; i < m->n; i++)
        expected += m->pieces[i]->bytes;
    uint64_t got = p->bulk ? p->bulk_len : 0;
    /* Read data first: finishing frees a received bulk part that is not the caller's. */
    if (!m->write && p->status == PDCBB_OK && p->buf && got == expected &&
        (m->n > 1 || p->bulk != m->pieces[0]->data)) {
        uint64_t off = 0;
        for (unsigned i = 0; i < m->n; i++) {
            memcpy(m->pieces[i]->data, (uint8_t *)p->bulk + off, m->pieces[i]->bytes);
            off += m->pieces[i]->bytes;
        }
    }
    pdcbb_data_write_rep_t rep;
    void *keep;
    /* a drained job says why a region failed (a damaged extent); a daemon only how */
    char drained_why[512] = "";
    if (p->why != NULL)
        snprintf(drained_why, sizeof(drained_why), "%s", p->why);
    pdcbb_err_t rc = client_rpc_finish(p, &rep, &keep);
    /* A write may carry, after the per-region statuses, the capacity, used and needed bytes of
     * a region the daemon refused for space (docs/PROTOCOL.md). */
    int space = m->write && rc == PDCBB_OK && rep.results_count == m->n + 3;
    int corrupt = !m->write && rc == PDCBB_OK && rep.results_count == m->n + 3;
    if (rc == PDCBB_OK && ((rep.results_count != m->n && !space && !corrupt) ||
                           (!m->write && got != expected))) {
        client_rpc_release(PDCBB_OP_DATA_WRITE, &rep, keep);
        rc = client_fail(PDCBB_ERR_PROTO,
                         "malformed data reply: %u results and %llu bytes for %u regions of "
                         "%llu bytes",
                         rep.results_count, (unsigned long long)got, m->n,
                         (unsigned long long)expected);
    }
    char why[512];
    snprintf(why, sizeof(why), "%s", PDCbb_last_error_message());
    if (space)
        space_why(rep.results + m->n, why, sizeof(why));
    for (unsigned i = 0; i < m->n; i++) {
        pdcbb_err_t one = rc == PDCBB_OK ? (pdcbb_err_t)(int32_t)rep.results[i] : rc;
        if (corrupt && one == PDCBB_ERR_CORRUPT)
            corrupt_why(rep.results + m->n, m->pieces[i], why, sizeof(why));
        piece_done(m->pieces[i], one,
                   rc != PDCBB_OK || (space && one == PDCBB_ERR_NOSPC) ||
                           (corrupt && one == PDCBB_ERR_CORRUPT)
                       ? why
                   : drained_why[0] != '\0' ? drained_why
                                            : NULL);
    }
    if (rc == PDCBB_OK)
        client_rpc_release(PDCBB_OP_DATA_WRITE, &rep, keep);
    msg_free(m);
}

/* The descriptors of pieces (as DATA messages carry them) into descs, which has room. */
static size_t descs_fill(xfer_piece_t *const *ps, unsigned n, uint64_t *descs)
{
    size_t w = 0;
    for (unsigned k = 0; k < n; k++) {
        const client_xfer_t *x = ps[k]->x;
        descs[w++] = x->obj_meta;
        descs[w++] = x->unit;
        descs[w++] = x->ndim;
        memcpy(descs + w, x->dims, x->ndim * sizeof(uint64_t));
        w += x->ndim;
        if (ps[k]->strided) { /* STRIDED_WRITE / STRIDED_READ: the selection, then the clip */
            const uint64_t *v[4] = {x->sel.start, x->sel.stride, x->sel.count, x->sel.block};
            for (int j = 0; j < 4; j++) {
                memcpy(descs + w, v[j], x->ndim * sizeof(uint64_t));
                w += x->ndim;
            }
        }
        box_to_u64(&ps[k]->box, descs + w);
        w += 2 * (size_t)x->ndim;
    }
    return w;
}

static size_t descs_words(const xfer_piece_t *pc)
{
    return 3 + (pc->strided ? 7 : 3) * (size_t)pc->x->ndim;
}

/* Descriptor words that fit in one message's control part. */
static size_t descs_budget(void)
{
    return (client_g.max_am_header - PDCBB_HDR_LEN - 64) / 8;
}

/* Post a DATA_DIRECT request of mode for pieces ps[0..n) of m's daemon as m->p; DONE carries
 * m's checksum updates. */
static pdcbb_err_t direct_post(xfer_msg_t *m, unsigned mode, xfer_piece_t *const *ps, unsigned n)
{
    size_t wire = 0;
    if (mode == PDCBB_DIRECT_DONE && m->csum.n > 0) {
        wire = m->csum.n * (size_t)PDCBB_CSUM_WIRE_LEN;
        if ((m->csum_wire = malloc(wire)) == NULL)
            return client_fail(PDCBB_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < m->csum.n; i++)
            pdcbb_csum_upd_encode(&m->csum.v[i], m->csum_wire + i * PDCBB_CSUM_WIRE_LEN);
    }
    size_t words = 0;
    for (unsigned k = 0; k < n; k++)
        words += descs_words(ps[k]);
    uint64_t *descs = malloc((words ? words : 1) * sizeof(uint64_t));
    if (descs == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "out of memory");
    descs_fill(ps, n, descs);
    pdcbb_data_direct_req_t q = {.mode = mode, .descs = descs, .descs_count = (uint32_t)words};
    pdcbb_err_t rc = client_rpc_post(m->daemon, PDCBB_OP_DATA_DIRECT, &q, m->csum_wire, wire,
                                     NULL, 0, &m->p);
    free(descs);
    if (rc == PDCBB_OK)
        m->p->owner = m;
    return rc;
}

/*
 * A DATA_DIRECT reply arrived for m: the daemon checked (and for a write reserved) its pieces;
 * move their bytes through the data files, then (writes) tell the daemon with DONE. Returns 1
 * when m is finished (every piece done; the caller frees m), 0 while DONE is outstanding.
 */
static int direct_step(xfer_msg_t *m)
{
    pdcbb_data_direct_rep_t rep;
    void *keep;
    pdcbb_err_t rc = client_rpc_finish(m->p, &rep, &keep);
    m->p = NULL;
    char why[512];
    snprintf(why, sizeof(why), "%s", rc != PDCBB_OK ? PDCbb_last_error_message() : "");
    if (m->done_sent) {
        /* DONE answered: the granted pieces are stored (or failed in the client's I/O). */
        if (rc == PDCBB_OK && rep.results_count != m->ngranted)
            rc = client_fail(PDCBB_ERR_PROTO, "malformed direct reply: %u results for %u regions",
                             rep.results_count, m->ngranted);
        if (rc == PDCBB_OK)
            client_rpc_release(PDCBB_OP_DATA_DIRECT, &rep, keep);
        snprintf(why, sizeof(why), "%s", rc != PDCBB_OK ? PDCbb_last_error_message() : "");
        for (unsigned k = 0; k < m->ngranted; k++) {
            unsigned i = m->granted[k];
            pdcbb_err_t one = m->local[i] != PDCBB_OK ? m->local[i] : rc;
            piece_done(m->pieces[i], one,
                       m->local[i] != PDCBB_OK ? m->why : rc != PDCBB_OK ? why : NULL);
        }
        return 1;
    }
    int space = m->write && rc == PDCBB_OK && rep.results_count == 3 * m->n + 3;
    int corrupt = !m->write && rc == PDCBB_OK && rep.results_count == 3 * m->n + 3;
    if (rc == PDCBB_OK && rep.results_count != 3 * m->n && !space && !corrupt) {
        client_rpc_release(PDCBB_OP_DATA_DIRECT, &rep, keep);
        rc = client_fail(PDCBB_ERR_PROTO, "malformed direct reply: %u results for %u regions",
                         rep.results_count, m->n);
        snprintf(why, sizeof(why), "%s", PDCbb_last_error_message());
    }
    char nospc[512] = "";
    if (space)
        space_why(rep.results + 3 * m->n, nospc, sizeof(nospc));
    for (unsigned i = 0; i < m->n; i++) {
        xfer_piece_t *pc = m->pieces[i];
        pdcbb_err_t one = rc == PDCBB_OK ? (pdcbb_err_t)(int32_t)rep.results[3 * i] : rc;
        if (one != PDCBB_OK) {
            if (corrupt && one == PDCBB_ERR_CORRUPT)
                corrupt_why(rep.results + 3 * m->n, pc, nospc, sizeof(nospc));
            piece_done(pc, one,
                       rc != PDCBB_OK                                            ? why
                       : one == PDCBB_ERR_NOSPC || (corrupt && one == PDCBB_ERR_CORRUPT) ? nospc
                                                                                 : NULL);
            continue;
        }
        uint64_t dev = rep.results[3 * i + 1], ino = rep.results[3 * i + 2];
        if (!m->write && dev == 0 && ino == 0) {
            memset(pc->data, 0, pc->bytes); /* nothing of the object on this daemon */
            piece_done(pc, PDCBB_OK, NULL);
            continue;
        }
        const client_xfer_t *x = pc->x;
        pdcbb_err_t io = client_direct_io(m->daemon, x->obj_meta, dev, ino,
                                          m->write ? &m->csum : NULL, &pc->box, x->ndim, x->dims,
                                          x->unit, pc->data);
        if (io != PDCBB_OK && m->why[0] == '\0')
            snprintf(m->why, sizeof(m->why), "%s", PDCbb_last_error_message());
        if (!m->write) {
            piece_done(pc, io, io != PDCBB_OK ? m->why : NULL);
            continue;
        }
        m->local[i] = io;
        m->granted[m->ngranted++] = i;
    }
    client_direct_files_close();
    if (rc == PDCBB_OK)
        client_rpc_release(PDCBB_OP_DATA_DIRECT, &rep, keep);
    if (m->ngranted == 0)
        return 1;
    for (unsigned k = 0; k < m->ngranted; k++)
        if (m->local[m->granted[k]] != PDCBB_OK) {
            /* a failed write may have changed part of what it checksummed: send no updates,
             * the daemon then checksums the blocks from the file */
            m->csum.n = 0;
            break;
        }
    /* The reservation is given back by DONE even when the client's own write failed. */
    xfer_piece_t **granted = malloc(m->ngranted * sizeof(*granted));
    pdcbb_err_t prc = granted ? PDCBB_OK : client_fail(PDCBB_ERR_NOMEM, "out of memory");
    for (unsigned k = 0; granted && k < m->ngranted; k++)
        granted[k] = m->pieces[m->granted[k]];
    if (prc == PDCBB_OK)
        prc = direct_post(m, PDCBB_DIRECT_DONE, granted, m->ngranted);
    free(granted);
    if (prc != PDCBB_OK) {
        snprintf(why, sizeof(why), "%s", PDCbb_last_error_message());
        for (unsigned k = 0; k < m->ngranted; k++)
            piece_done(m->pieces[m->granted[k]], prc, why);
        return 1;
    }
    m->done_sent = 1;
    return 0;
}

/* Post the pieces in ps (one daemon of this node, one direction) as DATA_DIRECT requests. */
static void post_direct(xfer_piece_t **ps, unsigned n, unsigned daemon, int write)
{
    size_t budget = descs_budget();
    unsigned i = 0;
    while (i < n) {
        unsigned j = i;
        size_t words = 0;
        while (j < n && (j == i || words + descs_words(ps[j]) <= budget))
            words += descs_words(ps[j++]);
        xfer_msg_t *m = calloc(1, sizeof(*m));
        unsigned cnt = j - i;
        pdcbb_err_t rc = PDCBB_ERR_NOMEM;
        if (m && (m->pieces = malloc(cnt * sizeof(*m->pieces))) &&
            (m->local = calloc(cnt, sizeof(*m->local))) &&
            (m->granted = malloc(cnt * sizeof(*m->granted)))) {
            m->direct = 1;
            m->daemon = daemon;
            m->write = write;
            m->n = cnt;
            memcpy(m->pieces, ps + i, cnt * sizeof(*m->pieces));
            rc = direct_post(m, write ? PDCBB_DIRECT_WRITE : PDCBB_DIRECT_READ, ps + i, cnt);
        } else {
            client_fail(rc, "out of memory");
        }
        if (rc != PDCBB_OK) {
            char why[512];
            snprintf(why, sizeof(why), "%s", PDCbb_last_error_message());
            for (unsigned k = i; k < j; k++)
                piece_done(ps[k], rc, why);
            if (m)
                msg_free(m);
        } else {
            inflight_add(m);
        }
        i = j;
    }
}

/* Returns the number of progress steps that did something. */
static int poll_once(void)
{
    int busy = 0;
    for (int i = 0; i < 8 && client_rpc_progress(); i++)
        busy++;
    xfer_msg_t **pp = &inflight;
    while (*pp) {
        xfer_msg_t *m = *pp;
        if (!m->p->done || m->p->receiving) {
            pp = &m->next;
        } else if (m->direct) {
            busy++;
            if (direct_step(m)) {
                inflight_unlink(pp);
                msg_free(m);
            } else {
                pp = &m->next;
            }
        } else {
            inflight_unlink(pp);
            complete_msg(m);
        }
    }
    return busy;
}

void client_xfer_poll(void)
{
    poll_once();
}

/* Post the pieces in ps (one daemon, one direction) as few messages as possible; a piece that
 * cannot be posted is completed with its error at once. */
static void post_group(xfer_piece_t **ps, unsigned n, unsigned daemon, int write)
{
    size_t budget = descs_budget();
    unsigned i = 0;
    while (i < n) {
        unsigned j = i;
        size_t words = 0;
        uint64_t bulk = 0;
        while (j < n) {
            size_t w = descs_words(ps[j]);
            if (j > i && (words + w > budget || bulk + ps[j]->bytes > MSG_MAX_BULK ||
                          ps[j]->strided != ps[i]->strided ||
                          ps[j]->bytes >= PIECE_ALONE_BYTES || ps[i]->bytes >= PIECE_ALONE_BYTES))
                break;
            words += w;
            bulk += ps[j]->bytes;
            j++;
        }
        xfer_msg_t *m = calloc(1, sizeof(*m));
        uint64_t *descs = malloc(words * sizeof(uint64_t));
        if (m == NULL || descs == NULL || (m->pieces = malloc((j - i) * sizeof(*m->pieces))) ==
                                              NULL) {
            if (m)
                free(m->pieces);
            free(m);
            free(descs);
            for (unsigned k = i; k < j; k++)
                piece_done(ps[k], PDCBB_ERR_NOMEM, "out of memory");
            i = j;
            continue;
        }
        m->write = write;
        m->n = j - i;
        memcpy(m->pieces, ps + i, m->n * sizeof(*m->pieces));
        descs_fill(ps + i, m->n, descs);
        const void *bulk_ptr = NULL;
        if (write) {
            if (m->n == 1) {
                bulk_ptr = ps[i]->data;
            } else {
                if ((m->staging = malloc(bulk)) == NULL) {
                    free(descs);
                    free(m->pieces);
                    free(m);
                    for (unsigned k = i; k < j; k++)
                        piece_done(ps[k], PDCBB_ERR_NOMEM, "out of memory");
                    i = j;
                    continue;
                }
                uint64_t off = 0;
                for (unsigned k = i; k < j; k++) {
                    memcpy(m->staging + off, ps[k]->data, ps[k]->bytes);
                    off += ps[k]->bytes;
                }
                bulk_ptr = m->staging;
            }
        }
        pdcbb_data_write_req_t q = {.descs = descs, .descs_count = (uint32_t)words};
        unsigned op = ps[i]->strided ? (write ? PDCBB_OP_STRIDED_WRITE : PDCBB_OP_STRIDED_READ)
                                     : (write ? PDCBB_OP_DATA_WRITE : PDCBB_OP_DATA_READ);
        pdcbb_err_t rc = client_rpc_post(daemon, op,
                                         &q, bulk_ptr, write ? bulk : 0,
                                         !write && m->n == 1 ? ps[i]->data : NULL,
                                         !write && m->n == 1 ? ps[i]->bytes : 0, &m->p);
        free(descs);
        if (rc != PDCBB_OK) {
            char why[512];
            snprintf(why, sizeof(why), "%s", PDCbb_last_error_message());
            for (unsigned k = 0; k < m->n; k++)
                piece_done(m->pieces[k], rc, why);
            free(m->staging);
            free(m->pieces);
            free(m);
        } else {
            m->p->owner = m;
            inflight_add(m);
        }
        i = j;
    }
}

typedef struct piece_ref {
    xfer_piece_t *p;
    size_t order; /* position in the start call: overlapping writes keep their order */
} piece_ref_t;

static int cmp_piece(const void *a, const void *b)
{
    const piece_ref_t *x = a, *y = b;
    int wx = x->p->x->access == PDC_WRITE, wy = y->p->x->access == PDC_WRITE;
    if (x->p->daemon != y->p->daemon)
        return x->p->daemon < y->p->daemon ? -1 : 1;
    if (wx != wy)
        return wy - wx; /* writes first */
    return x->order < y->order ? -1 : x->order > y->order;
}

pdcbb_err_t client_xfer_start(client_xfer_t **xs, int n, int *failed)
{
    size_t total = 0;
    *failed = -1;
    /* A strided write that reads its bounding box first (client_strided_rmw) must see the
     * writes started before it: start and finish those first. */
    for (int k = 1; k < n; k++)
        if (xs[k]->strided && xs[k]->access == PDC_WRITE && client_strided_needs_rmw(xs[k])) {
            pdcbb_err_t rc = client_xfer_start(xs, k, failed);
            if (rc != PDCBB_OK)
                return rc;
            for (int i = 0; i < k; i++)
                client_xfer_wait(xs[i], client_g.cfg.request_timeout);
            rc = client_xfer_start(xs + k, n - k, failed);
            if (*failed >= 0)
                *failed += k;
            return rc;
        }
    for (int i = 0; i < n; i++) {
        client_xfer_t *x = xs[i];
        pdcbb_err_t rc = PDCBB_OK;
        if (x->access == PDC_WRITE && x->ndim > 0 && x->dims[0] == PDC_SIZE_UNLIMITED)
            rc = client_grow_written(x->obj_meta, x->remote.off[0] + x->remote.size[0]);
        if (rc == PDCBB_OK)
            rc = prepare(x);
        if (rc != PDCBB_OK) {
            client_xfer_reset(x);
            if (PDCbb_last_error() != (int)rc)
                client_fail(rc, "%s", pdcbb_strerror(rc));
            *failed = i;
            /* Start the ones prepared so far, so none is left half-done. */
            n = i;
            break;
        }
        x->left = x->npieces;
        x->state = CLIENT_XFER_STARTED;
        x->reported = 0;
        total += x->npieces;
    }
    piece_ref_t *refs = malloc((total + 1) * sizeof(*refs));
    xfer_piece_t **all = malloc((total + 1) * sizeof(*all));
    if (refs == NULL || all == NULL) {
        free(refs);
        free(all);
        for (int i = 0; i < n; i++) {
            client_xfer_reset(xs[i]);
            xs[i]->state = CLIENT_XFER_CREATED;
        }
        *failed = 0;
        return client_fail(PDCBB_ERR_NOMEM, "out of memory starting transfers");
    }
    size_t k = 0;
    for (int i = 0; i < n; i++)
        for (unsigned j = 0; j < xs[i]->npieces; j++) {
            refs[k].p = &xs[i]->pieces[j];
            refs[k].order = k;
            k++;
        }
    /* Zero pieces (a read of a region nothing was written to): done at once. */
    for (int i = 0; i < n; i++)
        if (xs[i]->npieces == 0)
            finish_xfer(xs[i]);
    qsort(refs, k, sizeof(*refs), cmp_piece);
    for (size_t i = 0; i < k; i++)
        all[i] = refs[i].p;
    free(refs);
    size_t g = 0;
    while (g < k) {
        size_t h = g;
        while (h < k && all[h]->daemon == all[g]->daemon &&
               (all[h]->x->access == PDC_WRITE) == (all[g]->x->access == PDC_WRITE))
            h++;
        uint64_t bytes = 0;
        for (size_t i = g; i < h; i++)
            bytes += all[i]->bytes;
        int write = all[g]->x->access == PDC_WRITE;
        int any_strided = 0;
        for (size_t i = g; i < h; i++)
            any_strided |= all[i]->strided;
        if (!any_strided && bytes >= DIRECT_MIN_BYTES && client_direct_usable(all[g]->daemon))
            post_direct(all + g, (unsigned)(h - g), all[g]->daemon, write);
        else
            post_group(all + g, (unsigned)(h - g), all[g]->daemon, write);
        g = h;
    }
    free(all);
    return *failed >= 0 ? PDCbb_last_error() : PDCBB_OK;
}

pdcbb_err_t client_xfer_wait(client_xfer_t *x, double timeout)
{
    double deadline = client_now() + timeout;
    int idle = 0;
    while (x->state == CLIENT_XFER_STARTED) {
        /* Spin briefly, then sleep on the worker's event fd: the daemon needs the CPU. */
        idle = poll_once() ? 0 : idle + 1;
        if (x->state != CLIENT_XFER_STARTED)
            break;
        if (idle > 200)
            client_rpc_idle(0.002);
        if (client_now() > deadline) {
            /* Give up on its messages: they fail (with any other transfer sharing them). */
            xfer_msg_t **pp = &inflight;
            while (*pp) {
                xfer_msg_t *m = *pp;
                int mine = 0;
                for (unsigned i = 0; i < m->n; i++)
                    mine |= m->pieces[i]->x == x;
                if (mine && !m->p->receiving) {
                    inflight_unlink(pp);
                    if (!m->p->done) {
                        m->p->done = 1;
                        m->p->status = PDCBB_ERR_TIMEOUT;
                    }
                    if (m->direct) {
                        while (!direct_step(m)) /* a failed DONE post ends it too */
                            if (!m->p->done) {
                                m->p->done = 1;
                                m->p->status = PDCBB_ERR_TIMEOUT;
                            }
                        msg_free(m);
                    } else {
                        complete_msg(m);
                    }
                } else {
                    pp = &m->next;
                }
            }
            if (x->state == CLIENT_XFER_STARTED)
                deadline = client_now() + 2.0; /* a receive in progress: let it end */
        }
    }
    return x->result;
}

pdcbb_err_t client_xfer_local_file(client_xfer_t *x, int *fd, uint64_t *valid)
{
    *fd = -1;
    *valid = 0;
    unsigned n = x->npieces;
    int local = n > 0 && n <= 64 && x->ndim == 1 && x->unit == 1 && !x->strided &&
                client_direct_usable(x->pieces[0].daemon);
    for (unsigned i = 1; i < n && local; i++)
        local = x->pieces[i].daemon == x->pieces[0].daemon;
    if (!local)
        return client_fail(PDCBB_ERR_UNSUPPORTED,
                           "object %s: the bytes are not all on one daemon of this node",
                           x->obj_name);
    unsigned daemon = x->pieces[0].daemon;
    xfer_piece_t *ps[64];
    size_t words = 0;
    for (unsigned i = 0; i < n; i++) {
        ps[i] = &x->pieces[i];
        words += descs_words(ps[i]);
    }
    uint64_t *descs = malloc(words * sizeof(uint64_t));
    if (descs == NULL)
        return client_fail(PDCBB_ERR_NOMEM, "out of memory");
    descs_fill(ps, n, descs);
    pdcbb_data_direct_req_t q = {
        .mode = PDCBB_DIRECT_READ, .descs = descs, .descs_count = (uint32_t)words};
    pdcbb_data_direct_rep_t p;
    void *keep;
    pdcbb_err_t rc = client_op_data_direct(daemon, &q, &p, &keep);
    free(descs);
    if (rc != PDCBB_OK)
        return rc;
    /* per piece: status, st_dev, st_ino (0, 0: none of the object here); then, for a damaged
     * range, where and what (corrupt_why) */
    int damage = p.results_count == 3 * n + 3;
    uint64_t dev = 0, ino = 0;
    char why[512];
    if (p.results_count != 3 * n && !damage)
        rc = client_fail(PDCBB_ERR_PROTO, "malformed direct reply: %u results for %u regions",
                         p.results_count, n);
    for (unsigned i = 0; i < n && rc == PDCBB_OK; i++) {
        pdcbb_err_t one = (pdcbb_err_t)(int32_t)p.results[3 * i];
        uint64_t d = p.results[3 * i + 1], o = p.results[3 * i + 2];
        if (one == PDCBB_ERR_CORRUPT && damage) {
            corrupt_why(p.results + 3 * n, ps[i], why, sizeof(why));
            rc = client_fail(one, "object %s: %s", x->obj_name, why);
        } else if (one != PDCBB_OK) {
            rc = client_fail(one, "object %s: daemon %u refused the read: %s", x->obj_name, daemon,
                             pdcbb_strerror(one));
        } else if ((d || o) && (dev || ino) && (d != dev || o != ino)) {
            rc = client_fail(PDCBB_ERR_PROTO, "object %s: daemon %u named two data files",
                             x->obj_name, daemon);
        } else if (d || o) {
            dev = d, ino = o;
        }
    }
    if (rc == PDCBB_OK && (dev || ino)) {
        /* the bytes are at the same offsets in the file; past its end, zeros */
        struct stat st;
        int f = client_direct_open(daemon, x->obj_meta, dev, ino, 0, &rc);
        uint64_t off = x->remote.off[0], len = x->remote.size[0];
        if (f >= 0 && fstat(f, &st) == 0) {
            uint64_t size = (uint64_t)st.st_size;
            *valid = size <= off ? 0 : size - off < len ? size - off : len;
            *fd = f;
        } else if (f >= 0) {
            rc = client_fail(pdcbb_err_from_errno(errno), "object %s: its data file: %s",
                             x->obj_name, strerror(errno));
            close(f);
        }
    }
    client_rpc_release(PDCBB_OP_DATA_DIRECT, &p, keep);
    return rc;
}
