/*
 * pdcbb_drain.h - the drained form of a job's burst buffer (docs/DRAIN-FORMAT.md): its model,
 * reading and writing its manifests, reading object data from it, verifying it, and draining a
 * node's job directory into it.
 *
 * A drain directory (one per job, "<destination>/pdcbb.<job id>") holds
 *     parts/rank-RRRRR.yaml   what daemon rank R held: written (atomically) once that rank's
 *                             data file is written, synced and verified
 *     data/rank-RRRRR.dat     rank R's data: extents one after another
 *     manifest.yaml           the whole job: every part merged (written when all parts exist)
 *     COMPLETE                the completion marker, written last (write then rename)
 * Every rank drains independently (nodes drain in parallel); whichever finishes the last part
 * writes manifest.yaml and COMPLETE. A part and the merged manifest share one schema, so the
 * same parser reads both.
 *
 * Ownership: a pdcbb_drain_t owns every string and array it points to; pdcbb_drain_free frees
 * them all. Functions taking `const pdcbb_drain_t *` only read. Not thread-safe: one thread per
 * pdcbb_drain_t. Every function filling err writes one line naming the file (and YAML line or
 * key) that was wrong.
 */
#ifndef PDCBB_DRAIN_H
#define PDCBB_DRAIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pdcbb_error.h"
#include "pdcbb_region.h"

#define PDCBB_DRAIN_FORMAT "pdcbb-drain"
#define PDCBB_DRAIN_VERSION 1
/* An extent never exceeds this many bytes (long runs are split), so a checksum error points at
 * no more than this much data and readers can work in bounded memory. */
#define PDCBB_DRAIN_EXTENT_MAX ((uint64_t)64 << 20)
/* File names inside a drain directory. */
#define PDCBB_DRAIN_MANIFEST "manifest.yaml"
#define PDCBB_DRAIN_COMPLETE "COMPLETE"
#define PDCBB_DRAIN_PARTS_DIR "parts"
#define PDCBB_DRAIN_DATA_DIR "data"
#define PDCBB_DRAIN_NS_DIR    "ns"           /* the mount's entries, per rank */
#define PDCBB_DRAIN_NS_MAGIC  "pdcbb-ns 1\n" /* their first line */
#define PDCBB_DRAIN_ERR_LEN 1024

/* A tag of a container or object (PDCobj_put_tag): type is a pdc_var_type_t value. */
typedef struct pdcbb_drain_tag {
    char *name;
    int32_t type;
    uint8_t *value;
    uint32_t len;
} pdcbb_drain_tag_t;

typedef struct pdcbb_drain_cont {
    uint64_t id;        /* its id in the drained job */
    char *name;
    uint32_t lifetime;  /* pdc_lifetime_t: 0 persistent, 1 transient */
    uint32_t rank;      /* its home daemon in the drained job */
    pdcbb_drain_tag_t *tags;
    uint32_t ntags;
    uint64_t *obj_ids;  /* object ids added with PDCcont_put_objids */
    uint32_t nobj_ids;
} pdcbb_drain_cont_t;

/* A write remembered by a REGION_LOCAL / REGION_DYNAMIC object's home daemon: the box's
 * elements are in rank's extents. Applied in increasing seq order, the newest write wins. */
typedef struct pdcbb_drain_map_entry {
    uint64_t seq;
    uint32_t rank;
    pdcbb_box_t box;
} pdcbb_drain_map_entry_t;

typedef struct pdcbb_drain_object {
    uint64_t id;            /* its id in the drained job */
    uint64_t cont_id;       /* its container's id (0: none) */
    char *name;
    char *container;        /* its container's name ("" if the container is not in the drain) */
    uint32_t rank;          /* its home daemon in the drained job */
    int32_t type;           /* pdc_var_type_t */
    uint32_t element_size;  /* bytes per element (pdcbb_type_size(type), or the stored layout) */
    uint32_t partition;     /* pdc_region_partition_t */
    uint32_t consistency;   /* pdc_consistency_t */
    uint32_t user_id;
    uint32_t time_step;
    uint32_t ndim;
    uint64_t dims[PDCBB_REGION_NDIM_MAX]; /* as created; dims[0] may be PDCBB_DIM_UNLIMITED */
    /* dims[0] unlimited only: the object's current extent (rows) as its home daemon kept it
     * (manifest current_dims: [current_rows, dims[1], ...]); has_current_dims 0 in drains
     * older than that field (the extents' reach is the extent then). */
    uint32_t has_current_dims;
    uint64_t current_rows;
    char *app_name;
    char *data_loc;
    char *tags_str;         /* the object property's tag string (PDCprop_set_obj_tags) */
    pdcbb_drain_tag_t *tags;
    uint32_t ntags;
    pdcbb_drain_map_entry_t *map; /* REGION_LOCAL / REGION_DYNAMIC only, by seq */
    uint32_t nmap;
} pdcbb_drain_object_t;

/* Bytes of an object's row-major array: the elements at [object_offset, +length) (byte
 * offsets; element-aligned) are bytes [file_offset, +length) of file, with that CRC-32C. */
typedef struct pdcbb_drain_extent {
    uint64_t object_id;
    uint32_t rank;          /* the daemon that held them */
    uint64_t object_offset;
    uint64_t length;        /* 1..PDCBB_DRAIN_EXTENT_MAX */
    char *file;             /* relative to the drain directory, e.g. "data/rank-00000.dat" */
    uint64_t file_offset;
    uint32_t crc32c;
    /* 0, or why these bytes are not the job's (manifest key `damaged`, docs/DRAIN-FORMAT.md):
     * their node-local copy did not match the checksum taken when they were written. */
    uint32_t damaged;
} pdcbb_drain_extent_t;

/* pdcbb_drain_extent_t.damaged */
#define PDCBB_DRAIN_DAMAGED_CHECKSUM 1  /* `damaged: checksum`: drained as found on the node */
#define PDCBB_DRAIN_DAMAGED_TRUNCATED 2 /* `damaged: truncated`: lost on the node, drained as
                                         * zeros */
/* The manifest word of a damaged value ("checksum", "truncated"), NULL for 0 or unknown. */
const char *pdcbb_drain_damaged_name(uint32_t damaged);

/* A KV object (include/pdc_kv.h): what its home rank knew of it. Its records are in dumps
 * (pdcbb_drain_kvdump_t, stager/pdcbb_drain_kv.h). A part knows its container's name only
 * when the container has the same home rank ("" otherwise; the merge fills it in). */
typedef struct pdcbb_drain_kv {
    uint64_t id;            /* its id in the drained job */
    char *name;
    char *container;        /* its container's name */
    uint64_t cont_id;       /* its container's id in the drained job */
    uint32_t rank;          /* its home daemon in the drained job */
    uint32_t key_type;      /* PDCBB_KVK_* (pdc_kv_key_type_t) */
    uint32_t sharding;      /* pdc_kv_shard_t as decided */
    uint32_t nshards;
    uint32_t max_key_len;
    uint64_t max_value_len;
    uint64_t *committed;    /* tags of its committed transactions (they cannot be started
                             * again), ascending; manifest key committed_tags (optional) */
    uint32_t ncommitted;
} pdcbb_drain_kv_t;

/* The records of one KV object that one daemon rank held, in one dump file. */
typedef struct pdcbb_drain_kvdump {
    uint64_t kv;            /* the KV object's id */
    uint32_t rank;
    char *file;             /* relative to the drain directory, "kv/rank-RRRRR.N.kvd" */
    uint64_t records;
    uint64_t bytes;         /* size of file */
    uint32_t crc32c;        /* of the whole file */
} pdcbb_drain_kvdump_t;

/* Data the drain left out (manifest key dropped_objects): the extents one rank held of an
 * object that no part of the job describes. Object ids are never reused and an object's data
 * exists only after its home daemon committed its creation, so once every rank's part is in,
 * such an object was deleted (its delete reached its home daemon but not a daemon that was
 * down, or the deleting process died before the other daemons heard of it): its data is not
 * the job's any more and is not lost (docs/INTERNALS.md, "Interrupted operations"). */
typedef struct pdcbb_drain_dropped {
    uint64_t object_id;
    uint32_t rank;          /* the daemon that still held the data */
    uint64_t extents;       /* how many extents */
    uint64_t bytes;         /* their bytes (still in the rank's data file, unreferenced) */
} pdcbb_drain_dropped_t;

/* The mount's tree as files (manifest key files, optional; pdcbb_drain_files.h): files/ and the
 * list of every entry in it, checksummed. Only the merged manifest has it, and only when the job
 * used the mount. */
typedef struct pdcbb_drain_files_ref {
    char *list;       /* the list's file, relative to the drain directory ("files.manifest");
                       * NULL: the drain has no files/ */
    uint64_t entries; /* entries the list holds */
    uint64_t bytes;   /* size of the list file */
    uint32_t crc32c;  /* of the whole list file */
} pdcbb_drain_files_ref_t;

/* One drained daemon rank (one part). */
typedef struct pdcbb_drain_rank {
    uint32_t rank;
    char *node;
    char *data_file;        /* relative, "data/rank-RRRRR.dat" */
    uint64_t data_bytes;    /* size of data_file */
    double seconds;         /* how long its drain took */
} pdcbb_drain_rank_t;

typedef struct pdcbb_drain {
    char *dir;              /* the drain directory it was read from (NULL if built in memory) */
    uint64_t job_id;
    char *user;             /* the job user's name */
    char *instance;         /* random id of the job's run (NULL/"" if unknown): a job id used
                             * twice (pdcbb run) cannot mix two jobs' parts */
    uint32_t uid;
    uint32_t nservers;      /* daemon ranks of the drained job */
    uint32_t servers_per_node;
    int complete;           /* manifest.yaml and COMPLETE were read */
    pdcbb_drain_rank_t *ranks;       /* sorted by rank after open/merge */
    uint32_t nranks;
    pdcbb_drain_cont_t *conts;
    uint32_t nconts;
    pdcbb_drain_object_t *objs;
    uint32_t nobjs;
    pdcbb_drain_extent_t *extents;   /* sorted by (object_id, rank, object_offset) after open */
    uint64_t nextents;
    pdcbb_drain_kv_t *kvs;           /* KV objects (manifest key kv_objects, optional) */
    uint32_t nkvs;
    pdcbb_drain_kvdump_t *kvdumps;   /* their dumps (key kv_dumps, optional) */
    uint32_t nkvdumps;
    pdcbb_drain_dropped_t *dropped;  /* extents of deleted objects left out, by (object, rank)
                                      * (key dropped_objects, optional; drain_sweep_deleted) */
    uint32_t ndropped;
    pdcbb_drain_files_ref_t files; /* the mount's files (key files; list NULL: none) */
    char **skipped;         /* what a partial open could not read and left out: one line each
                             * ("parts/rank-00001.yaml: why"); never written to a manifest */
    uint32_t nskipped;
    void *priv;             /* private to drain_model.c / drain_read.c: interned extent file
                             * names (extents of one file share one string), open data files and
                             * a read index; NULL until needed, freed by pdcbb_drain_free */
} pdcbb_drain_t;

/* ---- the model ---- */

/* An empty model (calloc'ed); NULL when out of memory. */
pdcbb_drain_t *pdcbb_drain_new(void);
/* Free a model and everything it owns; accepts NULL. */
void pdcbb_drain_free(pdcbb_drain_t *m);
/* Append copies (strings, tags, map entries and arrays are duplicated; the caller keeps its
 * arguments). PDCBB_ERR_NOMEM on allocation failure. *out (may be NULL) gets the new element,
 * valid until the next append to the same array. */
pdcbb_err_t pdcbb_drain_add_rank(pdcbb_drain_t *m, const pdcbb_drain_rank_t *r);
pdcbb_err_t pdcbb_drain_add_cont(pdcbb_drain_t *m, const pdcbb_drain_cont_t *c,
                                 pdcbb_drain_cont_t **out);
pdcbb_err_t pdcbb_drain_add_object(pdcbb_drain_t *m, const pdcbb_drain_object_t *o,
                                   pdcbb_drain_object_t **out);
pdcbb_err_t pdcbb_drain_add_extent(pdcbb_drain_t *m, const pdcbb_drain_extent_t *e);
/* KV objects and dumps (copies). A KV object already present (same id) is not added twice
 * (the home rank and every shard rank describe it): its committed tags are merged. */
pdcbb_err_t pdcbb_drain_add_kv(pdcbb_drain_t *m, const pdcbb_drain_kv_t *kv);
pdcbb_err_t pdcbb_drain_add_kvdump(pdcbb_drain_t *m, const pdcbb_drain_kvdump_t *d);
/* The KV object (container may be NULL: the only one of that name; *ambiguous set when
 * several containers have one), NULL if absent. */
const pdcbb_drain_kv_t *pdcbb_drain_find_kv(const pdcbb_drain_t *m, const char *container,
                                            const char *name, int *ambiguous);
const pdcbb_drain_kv_t *pdcbb_drain_find_kv_id(const pdcbb_drain_t *m, uint64_t id);
pdcbb_err_t pdcbb_drain_add_dropped(pdcbb_drain_t *m, const pdcbb_drain_dropped_t *d);
/*
 * The damaged extents of m (of rank when rank >= 0): report (may be NULL) gets one line per
 * extent naming the object, rank, byte range and the damage; returns how many.
 */
uint64_t pdcbb_drain_damaged_extents(const pdcbb_drain_t *m, int rank,
                                     void (*report)(const char *line, void *arg), void *arg);
/* Totals of m->dropped: *extents and *bytes (either may be NULL). */
void pdcbb_drain_dropped_totals(const pdcbb_drain_t *m, uint64_t *extents, uint64_t *bytes);
/* Append everything of part to into (job fields are taken from part when into has none). */
pdcbb_err_t pdcbb_drain_merge(pdcbb_drain_t *into, const pdcbb_drain_t *part);

/* Lookups (linear or binary; NULL if absent). */
const pdcbb_drain_cont_t *pdcbb_drain_find_cont(const pdcbb_drain_t *m, const char *name);
const pdcbb_drain_cont_t *pdcbb_drain_find_cont_id(const pdcbb_drain_t *m, uint64_t id);
const pdcbb_drain_object_t *pdcbb_drain_find_object(const pdcbb_drain_t *m, const char *name);
const pdcbb_drain_object_t *pdcbb_drain_find_object_id(const pdcbb_drain_t *m, uint64_t id);
/* The extents of one object: *first index into m->extents and *count (0 if none). Requires the
 * sorted order pdcbb_drain_open / pdcbb_drain_sort establish. */
void pdcbb_drain_object_extents(const pdcbb_drain_t *m, uint64_t obj_id, uint64_t *first,
                                uint64_t *count);
/* Sort ranks, extents (and map entries by seq) as readers expect, and name every object's
 * container when it is in the model (a part knows it only when both share a home rank). */
void pdcbb_drain_sort(pdcbb_drain_t *m);

/*
 * The shape of an object's data: dims, with an unlimited dims[0] replaced by the number of rows
 * its extents reach (at least 1... 0 if it has no data). shape has PDCBB_REGION_NDIM_MAX room.
 * An object without dimensions (ndim 0: metadata and tags only, no data) has an empty shape.
 * PDCBB_ERR_BAD_REGION if a finite shape overflows.
 */
pdcbb_err_t pdcbb_drain_object_shape(const pdcbb_drain_t *m, const pdcbb_drain_object_t *o,
                                     uint64_t *shape);
/* Total data bytes of an object's extents. */
uint64_t pdcbb_drain_object_bytes(const pdcbb_drain_t *m, const pdcbb_drain_object_t *o);

/* Names of pdc_var_type_t values ("PDC_FLOAT": common/pdcbb_types.h's table), of partitions
 * ("PDC_REGION_STATIC") and back; -1 / NULL when unknown. */
const char *pdcbb_drain_type_name(int32_t type);
int32_t pdcbb_drain_type_parse(const char *name);
const char *pdcbb_drain_partition_name(uint32_t partition);
int32_t pdcbb_drain_partition_parse(const char *name);

/* ---- manifests ---- */

/* Write m as YAML to path: path.tmp.HOST.PID, fsync, rename, fsync of the directory (the host
 * name keeps finishers on two nodes with the same pid apart on a shared filesystem). */
pdcbb_err_t pdcbb_drain_write_manifest(const pdcbb_drain_t *m, const char *path, char *err,
                                       size_t errlen);
/* Parse one manifest (a part or the merged one) into a new model. Unknown keys are errors;
 * every value is range-checked (ids, ranks < nservers, ndim, dims, sizes, extents within the
 * object and element-aligned, file names relative without "..", lengths). */
pdcbb_err_t pdcbb_drain_load_manifest(const char *path, pdcbb_drain_t **out, char *err,
                                      size_t errlen);

/* One entry of the mount's tree as a rank drained it (DRAIN/ns/rank-R.ns, drain_ns_dump.c). */
typedef struct pdcbb_drain_ns_ent {
    uint64_t parent, ino, size, mtime_ns, ctime_ns;
    uint32_t kind, mode, uid, gid; /* kind: PDCBB_NS_FILE, _DIR or _SYMLINK; mode 07777 */
    char *name;                    /* a POSIX name (pdcbb_ns_name_check) */
    char *target;                  /* a link's target; "" for the others */
    char *path;                    /* the caller's (drain_files.c: where it was built); NULL */
} pdcbb_drain_ns_ent_t;

typedef struct pdcbb_drain_ns {
    pdcbb_drain_ns_ent_t *e;
    size_t n, cap;
} pdcbb_drain_ns_t;

/*
 * Append the entries of ranks 0..nservers-1 of the drain in drain_dir (drain_ns_load.c; a rank
 * without an ns file has none) to ns, which starts zeroed. Every line is parsed and checked
 * (kind, name, target) and each file's CRC-32C compared: PDCBB_ERR_CORRUPT with err naming a
 * damaged file; PDCBB_ERR_NOMEM; errno codes. The entries are ns's: pdcbb_drain_ns_free.
 */
pdcbb_err_t pdcbb_drain_ns_load(const char *drain_dir, uint32_t nservers, pdcbb_drain_ns_t *ns,
                                char *err, size_t errlen);

/* Free ns's entries and their strings (path too) and zero it; accepts an empty one. */
void pdcbb_drain_ns_free(pdcbb_drain_ns_t *ns);

/*
 * The mount's tree (drain_files.c; docs/DRAIN-FORMAT.md "Files of the mount"): every rank's
 * entries in DRAIN/ns/rank-R.ns (pdcbb_drain_ns_dump, pdcbb_drain_kvstore.h).
 * pdcbb_drain_files_build: from every rank's ns file and the drained objects (checked as every
 * reader checks them), build DRAIN/files/ (through files.tmp.HOST.PID/): directories, files
 * and symbolic links with their permission bits and mtimes, and the list of them with each
 * file's CRC-32C, DRAIN/files.manifest (pdcbb_drain_files.h; written before files/ is renamed
 * into place). *ref gets the list's name, entry count, size and CRC-32C for the manifest's
 * files key (ref->list NULL, nothing built, when no rank drained entries); *nfiles the files'
 * count. A files/ that an earlier finish renamed into place is kept with its list (one without
 * a list, or with a damaged one, is built again). PDCBB_ERR_CORRUPT for a damaged ns file or
 * extent, errno codes for the destination; err names the file. ref->list is the caller's to
 * free.
 */
pdcbb_err_t pdcbb_drain_files_build(const char *drain_dir, uint32_t nservers,
                                    pdcbb_drain_files_ref_t *ref, uint64_t *nfiles, char *err,
                                    size_t errlen);

/* pdcbb_drain_open flags */
#define PDCBB_DRAIN_OPEN_PARTIAL 0x1 /* no COMPLETE: merge the parts present (m->complete = 0) */

/*
 * Open a drain directory: dir is the job's drain directory, or a destination holding exactly
 * one "pdcbb.*" directory (several: PDCBB_ERR_INVAL, err lists them). Reads manifest.yaml when
 * COMPLETE exists, else (PDCBB_DRAIN_OPEN_PARTIAL) the parts; without the flag an incomplete
 * drain is PDCBB_ERR_NOT_FOUND with err "incomplete drain: N of M ranks drained (finish it with
 * pdcbb drain)". The result is sorted (pdcbb_drain_sort); m->dir is the job's drain directory.
 * A partial open reads what is intact: a part it cannot read is left out and named in
 * m->skipped (its rank then counts as not drained); when every rank is in, extents of objects
 * no part describes are moved to m->dropped (drain_sweep_deleted), as the finished drain does.
 */
pdcbb_err_t pdcbb_drain_open(const char *dir, int flags, pdcbb_drain_t **out, char *err,
                             size_t errlen);

/*
 * If every rank 0..nservers-1 has a part in drain_dir and COMPLETE is missing: merge the parts,
 * write manifest.yaml, then COMPLETE (both write-then-rename; racing finishers write the same
 * content). *complete = 1 when COMPLETE exists on return. Extents of objects that no part
 * describes (deleted objects, pdcbb_drain_dropped_t) are left out of the manifest and listed
 * under dropped_objects; *dropped_extents and *dropped_bytes (either may be NULL) get their
 * totals when this call wrote the manifest, else 0.
 */
pdcbb_err_t pdcbb_drain_finish(const char *drain_dir, uint32_t nservers, int *complete,
                               uint64_t *dropped_extents, uint64_t *dropped_bytes, char *err,
                               size_t errlen);

/* ---- data ---- */

/*
 * Read box (in o's coordinates) of object o into buf, packed row-major (box element count *
 * element_size bytes). Elements no extent holds read as zero. Objects with a placement map take
 * each map entry's box from that entry's rank's extents, oldest seq first; others take every
 * extent (their extents do not overlap). Data files are opened under m->dir and kept open until
 * pdcbb_drain_free.
 *
 * Every extent whose bytes the box needs is checked whole against its CRC-32C before any of its
 * bytes are served, even when the box needs only a few of them; each extent is checked once per
 * open drain (a data file changed after its extents were checked is not checked again). An
 * extent the box covers whole is read straight into buf and checked there; one it covers in
 * part is read whole into a buffer of the model (at most PDCBB_DRAIN_EXTENT_MAX bytes), checked,
 * and kept for the next read, so reading an object slab by slab reads every byte of its extents
 * once (pdcbb_drain_read_stats counts this).
 *
 * err always starts with "object 'NAME'" (escaped, pdcbb_esc). Errors (buf undefined):
 * PDCBB_ERR_BAD_REGION (box outside the shape), PDCBB_ERR_NOMEM; PDCBB_ERR_CORRUPT (an
 * extent is damaged: its CRC-32C does not match, its data file is missing or ends before it)
 * and PDCBB_ERR_IO (an extent cannot be read), with err naming the object, the extent (its index
 * among the object's extents, which are ordered by rank and then object offset), its bytes in
 * the object, its file, offset and length, and what is wrong:
 *   "object 'run1/t' (id 2305843009213693953), extent 3, bytes 0..4096: data/rank-00001.dat
 *    offset 8192 (+4096 bytes): CRC-32C mismatch (manifest 0x8a9136aa, data 0x1f00c3d2)";
 * other errno-based codes (a data file that cannot be opened), named the same way.
 * After pdcbb_drain_skip_damaged, damaged extents read as zero instead.
 */
pdcbb_err_t pdcbb_drain_read_box(pdcbb_drain_t *m, const pdcbb_drain_object_t *o,
                                 const pdcbb_box_t *box, void *buf, char *err, size_t errlen);

/* told one line naming a damaged extent, as pdcbb_drain_read_box's errors do */
typedef void (*pdcbb_drain_damaged_fn)(const char *line, void *arg);

/*
 * Read what is intact (--partial): from now on, pdcbb_drain_read_box reads a damaged extent
 * (PDCBB_ERR_CORRUPT or PDCBB_ERR_IO above) as zeros instead of failing, and calls fn (may be
 * NULL) with the line naming it, once per extent. PDCBB_ERR_NOMEM.
 */
pdcbb_err_t pdcbb_drain_skip_damaged(pdcbb_drain_t *m, pdcbb_drain_damaged_fn fn, void *arg);

/* What pdcbb_drain_read_box did on m so far. */
typedef struct pdcbb_drain_read_stats {
    uint64_t extents_checked; /* extents whose CRC-32C was checked (each once) */
    uint64_t bytes_checked;   /* their bytes */
    uint64_t bytes_read;      /* bytes read from data files */
    uint64_t damaged;         /* damaged extents found (read as zero after skip_damaged) */
} pdcbb_drain_read_stats_t;

void pdcbb_drain_read_stats(const pdcbb_drain_t *m, pdcbb_drain_read_stats_t *stats);

typedef struct pdcbb_drain_verify_stats {
    uint64_t extents;    /* checked */
    uint64_t bytes;      /* checked */
    uint64_t bad;        /* extents whose CRC-32C or length does not match */
    uint64_t missing;    /* extents whose file is missing or too short */
    uint64_t kv_dumps;   /* KV dumps checked */
    uint64_t kv_records; /* records in them */
    uint64_t kv_bad;     /* KV dumps that are missing or whose blocks or CRC-32C do not match */
} pdcbb_drain_verify_stats_t;

/* Where a long drain, check or read is. A drain learns each rank's totals when it starts that
 * rank, so the totals may grow; objects are counted by a drain only (total 0 otherwise): an
 * object is done when all its data is written (at once when it has none). */
typedef struct pdcbb_drain_progress {
    uint64_t done_bytes, total_bytes;
    uint64_t done_objects, total_objects;
} pdcbb_drain_progress_t;

/* progress(p, arg), called often (a drain: once per 16 MiB copied; a check or read: at most 4
 * times a second) and once at the end: the caller decides what to print when; may be NULL. */
typedef void (*pdcbb_drain_progress_fn)(const pdcbb_drain_progress_t *p, void *arg);

/*
 * Re-read every extent of m (or only those of rank when rank >= 0) and compare its CRC-32C.
 * report (may be NULL) is called once per bad or missing extent with a one-line message naming
 * the object, extent, file and offset as pdcbb_drain_read_box's errors do. Returns PDCBB_OK
 * when everything matches, PDCBB_ERR_IO if any extent is bad or missing (stats say how many),
 * or an error that stopped the check.
 */
pdcbb_err_t pdcbb_drain_verify(pdcbb_drain_t *m, int rank, pdcbb_drain_verify_stats_t *stats,
                               void (*report)(const char *line, void *arg),
                               pdcbb_drain_progress_fn progress, void *arg, char *err,
                               size_t errlen);

/* ---- draining a node (stager/drain_write.c) ---- */

typedef struct pdcbb_drain_job {
    uint64_t job_id;
    uid_t uid;                /* the job user: the drain must already run as this user */
    const char *user;         /* its name (for the manifest) */
    const char *node;         /* this node's name */
    uint32_t node_index;      /* ranks node_index*servers_per_node .. + servers_per_node - 1 */
    uint32_t nnodes;
    uint32_t servers_per_node;
    const char *job_dir;      /* the node-local job directory (bbd-R/ inside) */
    const char *destination;  /* the drain destination; the job's directory is made inside */
    const char *instance;     /* the job's instance id (pdcbb_jobinfo_t), or NULL/"" */
    const char *cluster;      /* the job's cluster name (pdcbb_jobinfo_t), or NULL/"" */
    int may_create;           /* 1: create the job's drain directory when none of this job
                               * exists (a drain by hand, `pdcbb drain`); 0: only use the one
                               * the prolog created (the epilog) */
    int share;                /* pdcbb_drain_share_t, used when creating the directory */
} pdcbb_drain_job_t;

typedef struct pdcbb_drain_node_stats {
    uint32_t ranks_drained;   /* by this call */
    uint32_t ranks_skipped;   /* already had a part (an earlier drain finished them) */
    uint64_t objects;
    uint64_t extents;
    uint64_t bytes;           /* data bytes written and verified */
    double seconds;
    int complete;             /* the whole job's drain is complete (COMPLETE written) */
    uint64_t dropped_extents; /* extents of deleted objects the finish left out (when this */
    uint64_t dropped_bytes;   /* call finished the drain; pdcbb_drain_finish) */
    char drain_dir[4096];     /* "<destination>/pdcbb.<job id>" (or the fresh name chosen
                               * when that one was taken, see pdcbb_drain_dir_create) */
} pdcbb_drain_node_stats_t;

/*
 * Drain this node's daemon ranks into the job's drain directory: the one in destination whose
 * IDENTITY names this job (pdcbb_drain_dir_find), or, when there is none and job->may_create is
 * set, a new one (pdcbb_drain_dir_create). For each rank without a part in the drain directory,
 * read its LMDB store (read-only; the daemons must be stopped) and object data files, write
 * data/rank-R.dat with large sequential writes, fdatasync it, re-read it and compare every
 * extent's CRC-32C with the CRC computed from the node-local bytes, then write
 * parts/rank-R.yaml. Finally pdcbb_drain_finish. Reports progress through log lines (pdcbb_log,
 * info level) and progress (may be NULL). Never deletes node-local data (the caller does that
 * after PDCBB_OK). On failure err says what failed and that the node-local data is kept in
 * job_dir: PDCBB_ERR_NOT_FOUND (destination missing, or no drain directory of this job and
 * may_create unset), PDCBB_ERR_PERM (not writable),
 * PDCBB_ERR_DISK_FULL (destination full), PDCBB_ERR_IO (verification mismatch, I/O error),
 * PDCBB_ERR_BUSY (a daemon still holds the store).
 */
pdcbb_err_t pdcbb_drain_node(const pdcbb_drain_job_t *job, pdcbb_drain_node_stats_t *stats,
                             pdcbb_drain_progress_fn progress, void *arg, char *err,
                             size_t errlen);


/* ---- the job's drain directory: where it is, whose it is (stager/drain_dir.c) ---- */

/*
 * Why this exists: a drain destination is often shared (mode 1777). A drain must never go into a
 * directory someone else prepared (they could change the data and its checksums afterwards), so
 * the job's drain directory is created once, by the job user, with mkdir (never an existing
 * one), private unless the job asked for sharing, and carries an IDENTITY file (job id, the
 * job's random instance id, uid). Every node finds it again by that identity and its owner.
 * Readers refuse a drain in which someone other than its owner could have changed anything.
 */
#define PDCBB_DRAIN_IDENTITY "IDENTITY"
/* "<destination>/pdcbb.<job id>.<node>.FAILED": why a node's drain failed (also in $HOME) */
#define PDCBB_DRAIN_FAILED_SUFFIX ".FAILED"

typedef enum pdcbb_drain_share {
    PDCBB_DRAIN_SHARE_NONE = 0,  /* directory 0700: only the job user */
    PDCBB_DRAIN_SHARE_GROUP = 1, /* 0750: the user's group may read */
    PDCBB_DRAIN_SHARE_ALL = 2,   /* 0755: everyone may read */
} pdcbb_drain_share_t;

/* "none" / "group" / "all" (the drain_share key; NULL or "" is none); -1 if unknown. */
int pdcbb_drain_share_parse(const char *s);

/*
 * Check a drain destination with the caller's credentials (run it as the job user, never as
 * root for someone else): an absolute path to an existing directory the caller may write and
 * search (faccessat with the effective ids), not a system directory (/, /etc, /usr, /bin, /sbin,
 * /lib*, /boot, /dev, /proc, /sys, /run, /var/lib, /var/log, /var/spool, and what is under them,
 * after resolving links). Used at submission (the SPANK plugin), by `pdcbb run` before the
 * command starts, and by every node's prolog. err (one line) names the path and what is wrong:
 * PDCBB_ERR_INVAL (not absolute, not a directory), PDCBB_ERR_NOT_FOUND ("drain destination D
 * does not exist"), PDCBB_ERR_PERM ("... is not writable by you ..." or a system directory).
 */
pdcbb_err_t pdcbb_drain_dest_check(const char *dest, char *err, size_t errlen);

/*
 * Create the job's drain directory in dest, as the caller (the job user): mkdir of
 * "pdcbb.<job id>" with the share's mode, then IDENTITY (job id, instance, cluster name or NULL,
 * uid). If that name exists and is not this
 * job's (pdcbb_drain_dir_find's test), a fresh name is used: "pdcbb.<job id>.<first 8 hex
 * digits of instance>", then random suffixes; note (may be NULL) then says why the name was not
 * taken and which was used ("D/pdcbb.7 belongs to bob (uid 1002): draining into D/pdcbb.7.1a2b3c4d
 * instead"). An existing directory of this very job is reused (a restarted
 * prolog, a second `pdcbb drain`). out gets the directory's path.
 * Errors: PDCBB_ERR_PERM ("... not writable"), PDCBB_ERR_EXISTS (every name taken), errno codes.
 */
pdcbb_err_t pdcbb_drain_dir_create(const char *dest, uint64_t job_id, const char *instance,
                                   const char *cluster, int share, char *out, size_t outlen,
                                   char *note, size_t notelen, char *err, size_t errlen);

/*
 * Find the job's drain directory in dest: "pdcbb.<job id>" or "pdcbb.<job id>.*" that is a real
 * directory (not a link) owned by uid, not writable by group or others, holding an IDENTITY
 * (owned by uid) with this job id and instance. out gets its path. PDCBB_ERR_NOT_FOUND when
 * there is none (err says what the candidates were and why they were not taken).
 */
pdcbb_err_t pdcbb_drain_dir_find(const char *dest, uint64_t job_id, const char *instance,
                                 uid_t uid, char *out, size_t outlen, char *err, size_t errlen);

/* What a drain directory's IDENTITY says (pdcbb_drain_identity_read). */
typedef struct pdcbb_drain_identity {
    uint64_t job_id;
    char instance[PDCBB_DRAIN_ERR_LEN]; /* the job's random instance id; "" if it had none */
    char cluster[64];                   /* the job's cluster name; "" if not recorded */
    long uid;                           /* the job user */
    time_t created;                     /* when IDENTITY was written (its mtime) */
} pdcbb_drain_identity_t;

/*
 * Read the identity of drain directory path, trusting it only as uid's: path must be a real
 * directory (not a link) owned by uid and writable by nobody else, holding an IDENTITY file
 * with the same properties that names uid. PDCBB_OK: id filled. Otherwise why (may be NULL)
 * says in one line what was wrong, never quoting the file: PDCBB_ERR_NOT_FOUND (no such
 * directory, or no IDENTITY: not a pdcbb job's), PDCBB_ERR_INVAL (not a directory),
 * PDCBB_ERR_PERM (someone else's, writable by others, or not an identity of uid).
 */
pdcbb_err_t pdcbb_drain_identity_read(const char *path, uid_t uid, pdcbb_drain_identity_t *id,
                                      char *why, size_t whylen);

/* How many ranks' parts (parts/rank-R.yaml) drain_dir holds so far; 0 when it has none or
 * cannot be read. */
unsigned pdcbb_drain_parts_count(const char *drain_dir);

/*
 * Trust check of a drain before reading it: drain_dir itself and everything in it must be real
 * directories and regular files (no links), all owned by the owner of drain_dir, none writable
 * by group or others. Refusal: PDCBB_ERR_PERM with err naming the first offending file, its
 * owner and mode. On success warn (may be NULL) is "" or a note worth showing: the drain
 * belongs to someone other than the caller, or its manifest names another uid than its owner
 * (manifest_uid; pass -1 when unknown).
 */
pdcbb_err_t pdcbb_drain_trust_check(const char *drain_dir, long manifest_uid, char *warn,
                                    size_t warnlen, char *err, size_t errlen);

/*
 * The newest drain directory of job job_id in dest that is uid's (pdcbb_drain_identity_read: by
 * its IDENTITY, whatever its name), into out. PDCBB_ERR_NOT_FOUND when there is none.
 */
pdcbb_err_t pdcbb_drain_dir_latest(const char *dest, uint64_t job_id, uid_t uid, char *out,
                                   size_t outlen);

/*
 * "; your job J's drain in this destination is D" (or "that user's" when uid is not the
 * caller) into out when uid has a drain of job J beside dir (pdcbb_drain_dir_latest) other than
 * dir itself; "" otherwise. job_id 0: the one dir's name claims (pdcbb.<J>[.<suffix>]).
 */
void pdcbb_drain_real_hint(const char *dir, uint64_t job_id, uid_t uid, char *out, size_t len);

/*
 * The user a reader expects a drain to belong to: owner (a user name or a uid; from `--owner`,
 * PDCBB_DRAINED_OWNER or the stage_in_owner key) when given, else the caller; -1 (anyone's)
 * for root without owner. PDCBB_ERR_INVAL (err says so) when owner is neither.
 */
pdcbb_err_t pdcbb_drain_reader_uid(const char *owner, long *uid, char *err, size_t errlen);

/*
 * Everything a reader (pdcbb ls/get/export/verify/kv, the read-only API, stage-in) checks after
 * pdcbb_drain_open before it serves a byte: pdcbb_drain_trust_check, and that the drain is the
 * job's own and the job it claims to be. PDCBB_ERR_PERM, err saying why and, when the expected
 * user has a drain of the same job id beside it, naming that one, when
 *   - expect_uid >= 0 (pdcbb_drain_reader_uid) and the directory belongs to someone else; how
 *     is the way to read it on purpose, followed by the owner's name ("--owner ");
 *   - the directory is named pdcbb.<N>[.<suffix>] but its manifest is another job's;
 *   - its IDENTITY is not its owner's, or names another job or run (instance) than the manifest.
 * A drain without IDENTITY (older drains, copies) passes on its manifest alone. warn as in
 * pdcbb_drain_trust_check.
 */
pdcbb_err_t pdcbb_drain_reader_check(const pdcbb_drain_t *m, long expect_uid, const char *how,
                                     char *warn, size_t warnlen, char *err, size_t errlen);

/* What a node's failed drain leaves for the user (pdcbb_drain_report_write). */
typedef struct pdcbb_drain_report {
    uint64_t job_id;
    const char *node;        /* the node that failed */
    const char *user;        /* the job user's name */
    const char *destination; /* the drain destination */
    const char *drain_dir;   /* the job's drain directory, or NULL/"" if there is none */
    const char *job_dir;     /* the node-local job directory, where the data is kept */
    const char *reason;      /* one line */
    const char *instance;    /* the job's instance id, or NULL/"" */
} pdcbb_drain_report_t;

/*
 * As the job user: write "<destination>/pdcbb.<job id>.<node>.FAILED" (write to a temporary
 * name, then rename; never through a link), or, when the destination cannot take it, the same
 * name in the user's home ($HOME when the caller is the job user, else the passwd entry). The
 * report holds "key: value" lines: job, node, user, uid, instance, time, reason, data (node and
 * directory), job_dir, destination, drain_directory, recover (the command that finishes the
 * drain, for a reader of the file; `pdcbb why` makes its own from the fields). where gets the path written.
 * PDCBB_ERR_IO (or errno code) when neither place could be written.
 */
pdcbb_err_t pdcbb_drain_report_write(const pdcbb_drain_report_t *r, char *where,
                                     size_t wherelen);

/* Remove a node's stale reports (both places) after its drain completed: only regular files
 * owned by the caller are removed. */
void pdcbb_drain_report_remove(const char *destination, uint64_t job_id, const char *node);

/* A FAILED report as read back (pdcbb_drain_report_read): its fields, not yet escaped. */
typedef struct pdcbb_drain_report_info {
    uint64_t job_id;
    long uid;              /* the report's uid line; -1 in reports older than that line */
    char node[256];
    char user[256];
    char instance[PDCBB_DRAIN_ERR_LEN];
    char time[64];
    char reason[PDCBB_DRAIN_ERR_LEN * 2];
    char job_dir[4096];     /* where the node's data is kept */
    char destination[4096];
    char drain_dir[4096];
} pdcbb_drain_report_info_t;

/*
 * Read the FAILED report at path as one of job job_id written by uid: it must be a regular file
 * (not a link) owned by uid, writable by nobody else, start with the report's first line and
 * name job job_id (and uid, when it has a uid line). PDCBB_OK: info filled. Otherwise why (may
 * be NULL) says in one line why it is not trusted, naming the file's owner and never quoting
 * its contents: PDCBB_ERR_PERM (someone else's or writable by others), PDCBB_ERR_INVAL (not a
 * report, or another job's), PDCBB_ERR_NOT_FOUND (gone).
 */
pdcbb_err_t pdcbb_drain_report_read(const char *path, uint64_t job_id, uid_t uid,
                                    pdcbb_drain_report_info_t *info, char *why, size_t whylen);

#endif
