/*
 * bbd_stage_in_ns.c - the drained job's filesystem tree into this job's namespace at stage-in
 * (bbd_stage_in_ns.h; the tree as drained: docs/DRAIN-FORMAT.md "Files of the mount").
 *
 * Every daemon reads every rank's entries and plans the whole tree the same way: entries in
 * the order of their depth (parents first), then of their drained parent's ino, then name. A
 * file's new ino is its object's new id (staged by bbd_stage_in.c before); a directory's or a
 * link's is the one NS_CREATE hands out on the home daemon of its new parent, the next
 * sequence number there after the ids the stage-in planned (the same rule as
 * bbd_stage_in.c's plan_ids). Each daemon then makes, through NS_CREATE, the entries of the
 * directories homed on it, in that order, and checks each ino is the planned one. An entry
 * whose directory is not in the drain (removed while the job ran) or whose object was not
 * staged is left out, with a warning. Entries belong to the job user (this daemon's uid and
 * gid), as files it copied in would; modes, sizes and times are the drained ones.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "bbd_stage_in_ns.h"
#include "pdcbb_log.h"
#include "pdcbb_name.h"
#include "pdcbb_ns.h"

#define MAX_DEPTH 4096 /* deeper, or a cycle: left out (drain_files.c builds no deeper) */

/* An entry's place in the creation order. */
typedef struct step {
    uint32_t depth; /* below the root (1: in it); UINT32_MAX: not reachable from the root */
    const pdcbb_drain_ns_ent_t *e;
    size_t i; /* its index in the plan's entries */
} step_t;

typedef struct plan {
    pdcbb_drain_ns_t ns;
    pdcbb_drain_ns_ent_t **dirs; /* the directories, by drained ino */
    uint32_t *depth;             /* of each entry, once known (0: not yet) */
    uint64_t *new_ino;           /* of each entry, once planned; 0: left out */
    step_t *order;               /* entries in creation order */
    size_t ndirs;
} plan_t;

static int dir_cmp(const void *a, const void *b)
{
    uint64_t x = (*(pdcbb_drain_ns_ent_t *const *)a)->ino;
    uint64_t y = (*(pdcbb_drain_ns_ent_t *const *)b)->ino;
    return (x > y) - (x < y);
}

/* The index in p->ns of the directory whose drained ino is ino, or -1. */
static ssize_t dir_index(const plan_t *p, uint64_t ino)
{
    pdcbb_drain_ns_ent_t key = {.ino = ino}, *kp = &key;
    pdcbb_drain_ns_ent_t **hit =
        p->ndirs ? bsearch(&kp, p->dirs, p->ndirs, sizeof(*p->dirs), dir_cmp) : NULL;
    return hit ? *hit - p->ns.e : -1;
}

/* Depth of entry i below the root (1: in the root), memoized; UINT32_MAX if it is not
 * reachable from the root within MAX_DEPTH. */
static uint32_t depth_of(plan_t *p, size_t i, uint32_t guard)
{
    if (p->depth[i] != 0)
        return p->depth[i];
    uint64_t parent = p->ns.e[i].parent;
    uint32_t d = UINT32_MAX;
    if (parent == PDCBB_NS_ROOT) {
        d = 1;
    } else if (guard < MAX_DEPTH) {
        ssize_t up = dir_index(p, parent);
        uint32_t pd = up >= 0 && (size_t)up != i ? depth_of(p, (size_t)up, guard + 1) : UINT32_MAX;
        d = pd == UINT32_MAX ? UINT32_MAX : pd + 1;
    }
    p->depth[i] = d;
    return d;
}

static int step_cmp(const void *a, const void *b)
{
    const step_t *s = a, *t = b;
    const pdcbb_drain_ns_ent_t *x = s->e, *y = t->e;
    if (s->depth != t->depth)
        return s->depth < t->depth ? -1 : 1;
    if (x->parent != y->parent)
        return x->parent < y->parent ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : (x->ino > y->ino) - (x->ino < y->ino);
}

static void plan_free(plan_t *p)
{
    pdcbb_drain_ns_free(&p->ns);
    free(p->dirs);
    free(p->depth);
    free(p->new_ino);
    free(p->order);
}

pdcbb_err_t bbd_stage_in_ns(bbd_req_t *r, const pdcbb_drain_t *m, bbd_stage_obj_id_fn new_obj,
                            void *arg, uint64_t *seq, uint64_t *entries, char *err, size_t errlen)
{
    bbd_t *d = r->d;
    plan_t p = {0};
    *entries = 0;
    pdcbb_err_t rc = pdcbb_drain_ns_load(m->dir, m->nservers, &p.ns, err, errlen);
    if (rc != PDCBB_OK || p.ns.n == 0) {
        plan_free(&p);
        return rc;
    }
    size_t n = p.ns.n;
    p.dirs = malloc(n * sizeof(*p.dirs));
    p.depth = calloc(n, sizeof(*p.depth));
    p.new_ino = calloc(n, sizeof(*p.new_ino));
    p.order = malloc(n * sizeof(*p.order));
    if (p.dirs == NULL || p.depth == NULL || p.new_ino == NULL || p.order == NULL) {
        plan_free(&p);
        snprintf(err, errlen, "the filesystem's %zu entries: out of memory", n);
        return PDCBB_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (p.ns.e[i].kind == PDCBB_NS_DIR)
            p.dirs[p.ndirs++] = &p.ns.e[i];
    }
    qsort(p.dirs, p.ndirs, sizeof(*p.dirs), dir_cmp);
    size_t unreachable = 0, unstaged = 0;
    for (size_t i = 0; i < n; i++) {
        p.order[i] = (step_t){depth_of(&p, i, 0), &p.ns.e[i], i};
        unreachable += p.order[i].depth == UINT32_MAX;
    }
    qsort(p.order, n, sizeof(*p.order), step_cmp);
    uint32_t uid = (uint32_t)geteuid(), gid = (uint32_t)getegid();
    for (size_t k = 0; k < n && rc == PDCBB_OK; k++) {
        size_t i = p.order[k].i;
        const pdcbb_drain_ns_ent_t *e = p.order[k].e;
        if (p.order[k].depth == UINT32_MAX)
            continue;
        ssize_t up = e->parent == PDCBB_NS_ROOT ? -1 : dir_index(&p, e->parent);
        uint64_t parent = up < 0 ? PDCBB_NS_ROOT : p.new_ino[up];
        if (parent == 0)
            continue; /* its directory was left out */
        unsigned home = pdcbb_ns_home(parent, d->nservers);
        uint64_t ino;
        if (e->kind == PDCBB_NS_FILE) {
            if ((ino = new_obj(arg, e->ino)) == 0) {
                unstaged++;
                continue;
            }
        } else {
            ino = pdcbb_meta_id_make(PDCBB_META_KIND_NODE, home, ++seq[home]);
        }
        p.new_ino[i] = ino;
        if (home != d->rank)
            continue;
        pdcbb_ns_create_req_t q = {.parent = parent,
                                   .name = e->name,
                                   .flags = PDCBB_NS_EXCL,
                                   .ino = e->kind == PDCBB_NS_FILE ? ino : 0,
                                   .kind = e->kind,
                                   .mode = e->mode,
                                   .uid = uid,
                                   .gid = gid,
                                   .size = e->kind == PDCBB_NS_FILE ? e->size : 0,
                                   .mtime_ns = e->mtime_ns,
                                   .ctime_ns = e->ctime_ns,
                                   .target = e->target};
        pdcbb_ns_create_rep_t rep = {0};
        rc = bbd_op_ns_create(r, &q, &rep);
        uint64_t got = rep.ino;
        bbd_req_scratch_free(r);
        if (rc != PDCBB_OK)
            snprintf(err, errlen, "the filesystem's entry '%s' (drained ino %#" PRIx64 "): %s",
                     pdcbb_esc(e->name), e->ino, pdcbb_strerror(rc));
        else if (got != ino)
            snprintf(err, errlen, "the filesystem's entry '%s' got ino %#" PRIx64 ", not %#" PRIx64,
                     pdcbb_esc(e->name), got, ino);
        if (rc == PDCBB_OK && got != ino)
            rc = PDCBB_ERR_INTERNAL;
        if (rc == PDCBB_OK)
            (*entries)++;
    }
    if (d->rank == 0 && (unreachable > 0 || unstaged > 0))
        PDCBB_WARN("stage-in: %zu entries of the drained filesystem are left out: %zu not under "
                   "its root (their directory was removed while the job ran) and %zu of its "
                   "files whose object is not staged",
                   unreachable + unstaged, unreachable, unstaged);
    plan_free(&p);
    return rc;
}
