/*
 * bbd_lock.c - region locks (PDCreg_obtain_lock / PDCreg_release_lock), granted by the home
 * daemon of an object to client connections.
 *
 * A lock is (object, box, read or write, connection). Two locks conflict when their boxes of the
 * same object overlap and at least one is a write lock. Requests are served in arrival order: a
 * request is granted when it conflicts neither with a granted lock nor with an earlier request
 * still waiting (so a stream of readers cannot starve a writer). A blocking request that cannot
 * be granted waits here; its reply is sent when it is granted (bbd_server_answer), so the event
 * loop never blocks. A non-blocking one is answered PDCBB_ERR_BUSY at once, and so is a request
 * that conflicts with a lock of its own connection (it would wait for itself forever).
 *
 * Locks live in memory only: they belong to connections, and a connection that ends (the client
 * closed it or died: UCX reports the peer failure, reap_dead calls bbd_lock_conn_gone) loses its
 * locks and waiting requests; what they blocked is granted then. A daemon restart ends every
 * connection, so nothing would survive it anyway.
 *
 * The locks are one list in arrival order; each operation walks it (fine for the hundreds of
 * locks an application holds at once, not for millions).
 */
#include <stdlib.h>
#include <string.h>

#include "bbd.h"
#include "pdcbb_log.h"
#include "pdcbb_region.h"

typedef struct bbd_lock {
    struct bbd_lock *next;
    uint64_t id;
    uint64_t obj;
    bbd_conn_t *conn;
    uint32_t access; /* PDCBB_LOCK_READ or PDCBB_LOCK_WRITE */
    int granted;
    pdcbb_box_t box;
    pdcbb_msg_hdr_t hdr; /* a waiting request's header, for its reply */
} bbd_lock_t;

enum { LOCK_READ = 1, LOCK_WRITE = 2 };
enum { LOCK_BLOCK = 0, LOCK_NOBLOCK = 1 };

static int conflict(const bbd_lock_t *a, uint64_t obj, uint32_t access, const pdcbb_box_t *box)
{
    pdcbb_box_t x;
    if (a->obj != obj || (a->access == LOCK_READ && access == LOCK_READ))
        return 0;
    return pdcbb_box_intersect(&a->box, box, &x);
}

static void lock_append(bbd_t *d, bbd_lock_t *l)
{
    l->next = NULL;
    if (d->locks_tail)
        d->locks_tail->next = l;
    else
        d->locks_head = l;
    d->locks_tail = l;
}

static void lock_unlink(bbd_t *d, bbd_lock_t *prev, bbd_lock_t *l)
{
    if (prev)
        prev->next = l->next;
    else
        d->locks_head = l->next;
    if (d->locks_tail == l)
        d->locks_tail = prev;
}

/* Grant every waiting request that no longer conflicts, in arrival order, and answer it. */
static void regrant(bbd_t *d)
{
    for (bbd_lock_t *w = d->locks_head; w; w = w->next) {
        if (w->granted)
            continue;
        /* Blocked by a granted lock anywhere, or by a request that waits since before w. */
        int blocked = 0, past = 0;
        for (bbd_lock_t *o = d->locks_head; o && !blocked; o = o->next) {
            if (o == w) {
                past = 1;
                continue;
            }
            if (!o->granted && past)
                continue;
            blocked = conflict(o, w->obj, w->access, &w->box);
        }
        if (blocked)
            continue;
        w->granted = 1;
        pdcbb_lock_obtain_rep_t rep = {.lock = w->id};
        PDCBB_DEBUG("lock %llu of object %#llx granted to connection %llu after waiting",
                    (unsigned long long)w->id, (unsigned long long)w->obj,
                    (unsigned long long)w->conn->id);
        /* drops the waiting request's reference */
        bbd_server_answer(d, w->conn, &w->hdr, PDCBB_OK, &rep);
    }
}

pdcbb_err_t bbd_op_lock_obtain(bbd_req_t *r, const pdcbb_lock_obtain_req_t *q,
                               pdcbb_lock_obtain_rep_t *p)
{
    bbd_t *d = r->d;
    pdcbb_box_t box;
    pdcbb_obj_info_rep_t rec;
    pdcbb_obj_info_req_t oq = {.id = q->id};
    if (r->conn == NULL || r->hdr == NULL)
        return PDCBB_ERR_UNSUPPORTED; /* locks belong to UCX connections */
    if (r->conn->dead)
        return PDCBB_ERR_UNREACHABLE; /* its client is gone: nobody to hold the lock */
    if ((q->access != LOCK_READ && q->access != LOCK_WRITE) ||
        (q->mode != LOCK_BLOCK && q->mode != LOCK_NOBLOCK))
        return PDCBB_ERR_INVAL;
    if (q->box_count < 3 || q->box[0] < 1 || q->box[0] > PDCBB_REGION_NDIM_MAX ||
        q->box_count != 1 + 2 * q->box[0])
        return PDCBB_ERR_INVAL;
    uint32_t ndim = (uint32_t)q->box[0];
    if (pdcbb_box_make(&box, ndim, q->box + 1, q->box + 1 + ndim) != PDCBB_OK)
        return PDCBB_ERR_BAD_REGION;
    /* The object must exist here, and the box lie within it. */
    pdcbb_err_t rc = bbd_op_obj_info(r, &oq, &rec);
    if (rc != PDCBB_OK)
        return rc;
    if (rec.dims_count != ndim || pdcbb_box_check_within(&box, ndim, rec.dims) != PDCBB_OK)
        return PDCBB_ERR_BAD_REGION;

    int blocked = 0;
    for (bbd_lock_t *o = d->locks_head; o; o = o->next) {
        if (!conflict(o, q->id, q->access, &box))
            continue;
        if (o->granted && o->conn == r->conn)
            return PDCBB_ERR_BUSY; /* would wait for itself */
        blocked = 1;
    }
    if (blocked && q->mode == LOCK_NOBLOCK)
        return PDCBB_ERR_BUSY;
    bbd_lock_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return PDCBB_ERR_NOMEM;
    l->id = ++d->next_lock_id;
    l->obj = q->id;
    l->conn = r->conn;
    l->access = q->access;
    l->box = box;
    l->granted = !blocked;
    lock_append(d, l);
    if (blocked) {
        l->hdr = *r->hdr;
        bbd_conn_ref(r->conn); /* until the reply is sent */
        r->deferred = 1;
        PDCBB_DEBUG("lock request of object %#llx from connection %llu waits",
                    (unsigned long long)q->id, (unsigned long long)r->conn->id);
    }
    p->lock = l->id;
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_lock_release(bbd_req_t *r, const pdcbb_lock_release_req_t *q,
                                pdcbb_lock_release_rep_t *p)
{
    bbd_t *d = r->d;
    (void)p;
    if (r->conn == NULL)
        return PDCBB_ERR_UNSUPPORTED;
    bbd_lock_t *prev = NULL;
    for (bbd_lock_t *l = d->locks_head; l; prev = l, l = l->next) {
        if (l->id != q->lock)
            continue;
        /* Only the holder releases its own granted lock. */
        if (!l->granted || l->conn != r->conn || l->obj != q->id)
            return PDCBB_ERR_NOT_FOUND;
        lock_unlink(d, prev, l);
        free(l);
        regrant(r->d);
        return PDCBB_OK;
    }
    return PDCBB_ERR_NOT_FOUND;
}

void bbd_lock_conn_gone(bbd_t *d, bbd_conn_t *c)
{
    bbd_lock_t *prev = NULL, *l = d->locks_head;
    unsigned dropped = 0;
    while (l) {
        bbd_lock_t *next = l->next;
        if (l->conn == c) {
            lock_unlink(d, prev, l);
            if (!l->granted)
                bbd_conn_unref(d, c);
            free(l);
            dropped++;
        } else {
            prev = l;
        }
        l = next;
    }
    if (dropped) {
        PDCBB_INFO("connection %llu ended holding or waiting for %u region locks: released",
                   (unsigned long long)c->id, dropped);
        regrant(d);
    }
}

unsigned bbd_lock_waiting(bbd_t *d)
{
    unsigned waiting = 0;
    for (bbd_lock_t *l = d->locks_head; l; l = l->next)
        waiting += !l->granted;
    return waiting;
}

void bbd_lock_free(bbd_t *d)
{
    unsigned held = 0, waiting = 0;
    for (bbd_lock_t *l = d->locks_head; l; l = l->next) {
        if (l->granted)
            held++;
        else
            waiting++;
    }
    if (held || waiting)
        PDCBB_INFO("stopping with %u region locks held and %u requests waiting", held, waiting);
    while (d->locks_head) {
        bbd_lock_t *l = d->locks_head;
        d->locks_head = l->next;
        if (!l->granted)
            bbd_conn_unref(d, l->conn);
        free(l);
    }
    d->locks_tail = NULL;
}
