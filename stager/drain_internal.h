/*
 * drain_internal.h - private state of a pdcbb_drain_t (its priv field), shared by
 * drain_model.c (which owns it: array capacities, interned extent file names) and
 * drain_read.c (open data files, the offset-ordered extent index of the last object read, which
 * extents were checked against their CRC-32C and the last one read whole),
 * and the model's helpers that the manifest writer and loader and drain_open.c share.
 * Not installed, not used outside stager/drain_*.c.
 */
#ifndef PDCBB_DRAIN_INTERNAL_H
#define PDCBB_DRAIN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_drain.h"

#define DRAIN_FD_CACHE 32
#define DRAIN_NSERVERS_MAX 65535u /* PDCBB_SERVERS_MAX of the wire protocol */

typedef struct drain_fd {
    const char *file; /* an interned name (owned by the intern table) */
    int fd;
    uint64_t used;    /* tick of the last use, for eviction */
} drain_fd_t;

typedef struct drain_priv {
    /* capacities of the model's arrays (0: unknown, the array is exactly its count long) */
    uint64_t cap_ranks, cap_conts, cap_objs, cap_extents;
    /* interned extent file names */
    char **files;
    uint32_t nfiles, cap_files, last_file;
    /* open data files */
    drain_fd_t fds[DRAIN_FD_CACHE];
    uint32_t nfds;
    uint64_t tick;
    /* the extents of order_obj sorted by object_offset (indices into m->extents) */
    int order_valid;
    uint64_t order_obj;
    uint64_t *order;
    uint64_t norder;
    /* per extent of m->extents (nchecked of them; NULL: none checked yet): DRAIN_X_* */
    uint8_t *checked;
    uint64_t nchecked;
    /* the last extent read whole to be checked (xbuf_ext: its index, UINT64_MAX none), kept
     * for the reads of its other parts */
    uint8_t *xbuf;
    uint64_t xbuf_cap, xbuf_ext;
    /* m->objs by name and by id (indices sorted by strcmp of the names and by id; built by
     * pdcbb_drain_sort, used while nobj_index == m->nobjs): pdcbb_drain_find_object and
     * pdcbb_drain_find_object_id in O(log n) */
    uint32_t *obj_by_name, *obj_by_id;
    uint32_t nobj_index;
    /* --partial: damaged extents read as zero, each told to on_damaged once */
    int skip_damaged;
    pdcbb_drain_damaged_fn on_damaged;
    void *on_damaged_arg;
    pdcbb_drain_read_stats_t stats;
} drain_priv_t;

/* drain_priv_t.checked values */
#define DRAIN_X_UNCHECKED 0
#define DRAIN_X_GOOD 1
#define DRAIN_X_DAMAGED 2 /* only after pdcbb_drain_skip_damaged */

/* One line into err (accepts NULL/0): every error message of stager/drain_*.c goes through it. */
void drain_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* m's private state, created on first use; NULL when out of memory. */
drain_priv_t *drain_priv_get(pdcbb_drain_t *m);
/* Close the cached data files, forget the read index and which extents were checked, free the
 * extent buffer (drain_read.c). */
void drain_priv_release_read(drain_priv_t *p);
/* Forget the read index and which extents were checked after m->extents changed. */
void drain_priv_invalidate(pdcbb_drain_t *m);

/* Make room for one more element of an array of n elements whose capacity is *cap (-1: no
 * memory). */
int drain_grow(void **arr, uint64_t n, uint64_t *cap, size_t elem);
/* Free n tags (their names and values) and the array; accepts NULL. */
void drain_tags_free(pdcbb_drain_tag_t *t, uint32_t n);
/* Free what a container of a model owns (not the container itself). */
void drain_cont_clear(pdcbb_drain_cont_t *c);
/* Free what an object of a model owns (not the object itself). */
void drain_object_clear(pdcbb_drain_object_t *o);
/* Cross-checks of a model (unique object ids, extents inside their objects; drain_model.c). */
pdcbb_err_t drain_check(const pdcbb_drain_t *m, const char *path, const uint32_t *lines,
                        int require_objects, char *err, size_t errlen);
/*
 * The orphan sweep: when m lists every rank, move the extents of objects that m does not
 * describe into m->dropped, one entry per (object, rank) (m sorted: pdcbb_drain_sort). Such an
 * object was deleted (pdcbb_drain_dropped_t says why no other case exists). A no-op when ranks
 * are missing: their parts may still describe the objects. PDCBB_ERR_NOMEM.
 */
pdcbb_err_t drain_sweep_deleted(pdcbb_drain_t *m);
/* Note in m->skipped one thing a partial open left out (a copy of line). PDCBB_ERR_NOMEM. */
pdcbb_err_t drain_skipped_add(pdcbb_drain_t *m, const char *line);
/* Load one manifest without requiring every extent's object: the parts of a drain are
 * cross-checked after they are merged and swept (drain_open.c). */
pdcbb_err_t drain_load_manifest_part(const char *path, pdcbb_drain_t **out, char *err,
                                     size_t errlen);
/* Write len bytes to path atomically: temporary name, fsync, rename, fsync the directory
 * (drain_manifest_write.c). */
pdcbb_err_t drain_write_atomic(const char *path, const void *data, size_t len, char *err,
                               size_t errlen);

/* Read the list of files at path (drain_files_list.c): *out parsed (pdcbb_drain_files_parse),
 * *ref its name (PDCBB_DRAIN_FILES_LIST, malloc'ed), entries, size and CRC-32C.
 * PDCBB_ERR_NOT_FOUND when there is none, PDCBB_ERR_CORRUPT when it does not parse. */
struct pdcbb_drain_files;
pdcbb_err_t drain_files_list_read(const char *path, struct pdcbb_drain_files **out,
                                  pdcbb_drain_files_ref_t *ref, char *err, size_t errlen);

#endif
