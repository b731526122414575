/*
 * drain_write.c - draining a stopped node's job directory into the drain format
 * (pdcbb_drain_node, docs/DRAIN-FORMAT.md).
 *
 * For every daemon rank of this node that has no part in the drain directory yet:
 *   1. read its LMDB store in one read transaction: containers with their tags and object ids,
 *      objects with their tags and placement map, and the layouts of the data files it holds;
 *   2. plan the extents: the written byte ranges of each data file (SEEK_DATA/SEEK_HOLE),
 *      widened to whole elements and clipped to what this rank owns (drain_write_plan.c), cut
 *      at PDCBB_DRAIN_EXTENT_MAX; each file's size checked against the daemon's checksums;
 *   3. copy them into data/rank-R.dat: a reader thread preads the node-local files into large
 *      buffers and computes each extent's and each source block's CRC-32C while the calling
 *      thread writes the full buffers sequentially (multiple buffering, so reading,
 *      checksumming and writing overlap), and a verifier thread re-reads every extent once it
 *      is written and compares its CRC; then every source block is compared with the daemon's
 *      checksum (dw_check_blocks), and on a mismatch steps 2-3 run again with every block
 *      checked before the copy (so the damaged bytes become extents of their own);
 *   4. fdatasync (writeback was started behind the writer with sync_file_range, and the
 *      verified part given back from the page cache as the copy goes);
 *   5. write parts/rank-R.yaml (write, fsync, rename): from then on the rank counts as drained.
 * Then pdcbb_drain_finish merges the parts when every rank of the job has one.
 *
 * This file drives it (one rank after another, errors, progress); step 1 is
 * drain_write_store.c, step 2 drain_write_plan.c, step 3 drain_write_copy.c (shared types in
 * drain_write_internal.h).
 *
 * Threads: pdcbb_drain_node starts and joins its own threads (a reader and a verifier per rank
 * being copied); it is not reentrant for the same drain directory and rank, and two drains of
 * the same job directory exclude each other with a lock file (drain.lock in the job
 * directory).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drain_write_internal.h"
#include "pdcbb_config.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_log.h"
#include "pdcbb_proto.h"

#define DW_PROGRESS_SECONDS 5.0

static double dw_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------------------------------- */
/* Errors: every message ends with where the node-local data is kept.                        */

pdcbb_err_t dw_fail(dw_ctx_t *c, pdcbb_err_t rc, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
        size_t used = n < 0 ? 0 : (size_t)n < c->errlen ? (size_t)n : c->errlen - 1;
        snprintf(c->err + used, c->errlen - used, "; node-local data kept in %s",
                 c->job->job_dir);
    }
    PDCBB_ERROR("%s", c->err ? c->err : pdcbb_strerror(rc));
    return rc;
}

/* The error code of a failed file system call on the destination. */
static pdcbb_err_t dw_errno_code(int e)
{
    switch (e) {
    case ENOSPC:
    case EDQUOT:
        return PDCBB_ERR_DISK_FULL;
    case EACCES:
    case EPERM:
    case EROFS: return PDCBB_ERR_PERM;
    case ENOENT: return PDCBB_ERR_NOT_FOUND;
    case EIO: return PDCBB_ERR_IO;
    default: return pdcbb_err_from_errno(e);
    }
}

/* "cannot write X: No space left on device (destination full)" */
pdcbb_err_t dw_fail_errno(dw_ctx_t *c, int e, const char *what, const char *path)
{
    pdcbb_err_t rc = dw_errno_code(e);
    const char *why = rc == PDCBB_ERR_DISK_FULL ? " (destination full)"
                      : rc == PDCBB_ERR_PERM    ? " (destination not writable)"
                                                : "";
    return dw_fail(c, rc, "%s %s: %s%s", what, path, strerror(e), why);
}

/* ---------------------------------------------------------------------------------------- */
/* Progress                                                                                   */

void dw_progress(dw_ctx_t *c, uint32_t rank, int force)
{
    double now = dw_now();
    int decile = c->total_bytes ? (int)(c->done_bytes * 10 / c->total_bytes) : 10;
    if (c->progress) { /* once per copy buffer (16 MiB): the caller throttles its output */
        pdcbb_drain_progress_t p = {.done_bytes = c->done_bytes,
                                    .total_bytes = c->total_bytes,
                                    .done_objects = c->done_objects,
                                    .total_objects = c->total_objects};
        c->progress(&p, c->progress_arg);
    }
    if (force || now - c->last_log >= DW_PROGRESS_SECONDS || decile > c->last_decile) {
        double el = now - c->t0;
        PDCBB_INFO("rank %u: %.1f of %.1f GiB (%d%%), %.0f MB/s", rank,
                   (double)c->done_bytes / (1 << 30), (double)c->total_bytes / (1 << 30),
                   c->total_bytes ? (int)(c->done_bytes * 100 / c->total_bytes) : 100,
                   el > 0 ? (double)c->done_bytes / 1e6 / el : 0.0);
        c->last_log = now;
        c->last_decile = decile;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* One rank                                                                                   */

static pdcbb_err_t dw_rank_drain(dw_ctx_t *c, uint32_t rank, const char *part_path,
                                 pdcbb_drain_node_stats_t *stats)
{
    const pdcbb_drain_job_t *job = c->job;
    double t0 = dw_now();
    char store_dir[PATH_MAX], pidpath[PATH_MAX], rel[64], data_path[PATH_MAX];
    pdcbb_err_t rc;
    if ((rc = pdcbb_jobdir_rank_path(job->job_dir, rank, "", store_dir, sizeof(store_dir))) !=
            PDCBB_OK ||
        (rc = pdcbb_jobdir_rank_path(job->job_dir, rank, "pid", pidpath, sizeof(pidpath))) !=
            PDCBB_OK)
        return dw_fail(c, rc, "job directory path %s too long", job->job_dir);
    snprintf(rel, sizeof(rel), "%s/rank-%05u.dat", PDCBB_DRAIN_DATA_DIR, rank);
    if (snprintf(data_path, sizeof(data_path), "%s/%s", c->drain_dir, rel) >=
        (int)sizeof(data_path))
        return dw_fail(c, PDCBB_ERR_TOO_BIG, "drain directory path %s too long", c->drain_dir);

    /* the daemon must be stopped: its store and files may still change */
    FILE *pf = fopen(pidpath, "re");
    if (pf != NULL) {
        long pid = 0;
        int got = fscanf(pf, "%ld", &pid);
        fclose(pf);
        if (got == 1 && pid > 0 && pdcbb_pid_alive((pid_t)pid))
            return dw_fail(c, PDCBB_ERR_BUSY,
                           "daemon rank %u (pid %ld) is still running; stop the job's daemons "
                           "before draining",
                           rank, pid);
    }
    struct stat st;
    if (stat(store_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return dw_fail(c, PDCBB_ERR_NOT_FOUND, "no store of rank %u: %s is missing", rank,
                       store_dir);

    dw_rank_t r;
    memset(&r, 0, sizeof(r));
    r.rank = rank;
    dw_plan_t plan;
    memset(&plan, 0, sizeof(plan));
    dw_blocksums_t sums = {0};
    int fd = -1;
    if ((r.m = pdcbb_drain_new()) == NULL ||
        (r.m->user = strdup(job->user ? job->user : "")) == NULL ||
        (r.m->instance = strdup(job->instance ? job->instance : "")) == NULL) {
        rc = dw_fail(c, PDCBB_ERR_NOMEM, "out of memory");
        goto out;
    }
    r.m->job_id = job->job_id;
    r.m->uid = (uint32_t)job->uid;
    r.m->nservers = c->nservers;
    r.m->servers_per_node = job->servers_per_node;
    if ((rc = dw_read_store(c, &r, store_dir)) != PDCBB_OK)
        goto out;
    /* The blocks' bytes are checked against their checksums from the copy's own read (one read
     * of the node-local data); if one does not match, everything is planned again with every
     * block checked first, and copied again (PDCBB_DRAIN_CHECK_FIRST=1: always so; tests). */
    const char *first_env = getenv("PDCBB_DRAIN_CHECK_FIRST");
    plan.crc_checked = first_env != NULL && strcmp(first_env, "1") == 0;
    uint64_t total_before = c->total_bytes, done_before = c->done_bytes;
    uint64_t objects_before = c->done_objects, total_objects_before = c->total_objects;
    uint64_t size = 0;
    double t_copy;
    for (;;) {
        for (size_t i = 0; i < r.nlayouts; i++)
            if ((rc = dw_plan_object(c, &r, &plan, &r.layouts[i], store_dir)) != PDCBB_OK)
                goto out;
        c->total_bytes += plan.bytes;
        /* objects: those without data are done now, the others as the copy finishes them */
        uint64_t with_data = 0;
        for (size_t i = 0; i < plan.npieces; i++)
            with_data += i == 0 || plan.pieces[i].obj != plan.pieces[i - 1].obj;
        c->total_objects += r.m->nobjs;
        c->done_objects += r.m->nobjs > with_data ? r.m->nobjs - with_data : 0;
        PDCBB_INFO("rank %u: %u containers, %u objects, %zu data files, %.1f MiB to drain", rank,
                   r.m->nconts, r.m->nobjs, plan.nsrc, (double)plan.bytes / (1 << 20));

        fd = open(data_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
            rc = dw_fail_errno(c, errno, "cannot create", data_path);
            goto out;
        }
        t_copy = dw_now();
        if ((rc = dw_copy(c, rank, &plan, fd, data_path, &size, &sums)) != PDCBB_OK)
            goto out;
        int damaged = 0;
        if (!plan.crc_checked &&
            (rc = dw_check_blocks(c, &r, &sums, store_dir, &damaged)) != PDCBB_OK)
            goto out;
        if (!damaged)
            break;
        PDCBB_WARN("rank %u: node-local data does not match its checksums: planning again with "
                   "every block checked first, and copying again",
                   rank);
        close(fd);
        fd = -1;
        dw_plan_free(&plan);
        plan.crc_checked = 1;
        c->total_bytes = total_before;
        c->done_bytes = done_before;
        c->done_objects = objects_before;
        c->total_objects = total_objects_before;
    }
    c->total_bytes -= plan.bytes - size; /* all-zero runs that were dropped */
    c->done_objects = objects_before + r.m->nobjs;
    double t_sync = dw_now();
    struct stat dst;
    if (fdatasync(fd) != 0) {
        rc = dw_fail_errno(c, errno, "cannot sync", data_path);
        goto out;
    }
    if (fstat(fd, &dst) != 0 || (uint64_t)dst.st_size != size) {
        rc = dw_fail(c, PDCBB_ERR_IO, "%s holds %lld bytes after the sync, %" PRIu64
                                      " were written",
                     data_path, (long long)dst.st_size, size);
        goto out;
    }
    /* written, verified and synced: its pages need not stay in the node's page cache */
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (close(fd) != 0) {
        fd = -1;
        rc = dw_fail_errno(c, errno, "cannot close", data_path);
        goto out;
    }
    fd = -1;
    PDCBB_DEBUG("rank %u: read store %.3f s, copy and verify %.3f s, sync %.3f s", rank,
                t_copy - t0, t_sync - t_copy, dw_now() - t_sync);

    /* the part: extents, the rank, then written atomically */
    uint64_t nextents = 0, ndamaged = 0;
    for (size_t i = 0; i < plan.npieces && rc == PDCBB_OK; i++) {
        const dw_piece_t *pc = &plan.pieces[i];
        if (!pc->kept)
            continue;
        pdcbb_drain_extent_t e = {.object_id = pc->obj, .rank = rank, .object_offset = pc->off,
                                  .length = pc->len, .file = rel, .file_offset = pc->file_offset,
                                  .crc32c = pc->crc, .damaged = pc->damaged};
        rc = pdcbb_drain_add_extent(r.m, &e);
        nextents++;
        ndamaged += pc->damaged != 0;
    }
    if (ndamaged > 0)
        PDCBB_ERROR("rank %u: %" PRIu64 " extents were damaged on the node (see the daemon's log):"
                    " drained, and marked damaged in the manifest (pdcbb verify lists them)",
                    rank, ndamaged);
    double secs = dw_now() - t0;
    pdcbb_drain_rank_t dr = {.rank = rank, .node = (char *)(job->node ? job->node : ""),
                             .data_file = rel, .data_bytes = size, .seconds = secs};
    if (rc == PDCBB_OK)
        rc = pdcbb_drain_add_rank(r.m, &dr);
    if (rc != PDCBB_OK) {
        rc = dw_fail(c, rc, "cannot build the part of rank %u: %s", rank, pdcbb_strerror(rc));
        goto out;
    }
    char merr[PDCBB_DRAIN_ERR_LEN] = "";
    if ((rc = pdcbb_drain_write_manifest(r.m, part_path, merr, sizeof(merr))) != PDCBB_OK) {
        rc = dw_fail(c, rc, "cannot write %s: %s", part_path,
                     merr[0] ? merr : pdcbb_strerror(rc));
        goto out;
    }
    stats->ranks_drained++;
    stats->objects += r.m->nobjs;
    stats->extents += nextents;
    stats->bytes += size;
    PDCBB_INFO("rank %u: drained %" PRIu64 " bytes in %" PRIu64 " extents, %u objects in %.2f s "
               "(%.0f MB/s), verified",
               rank, size, nextents, r.m->nobjs, secs, secs > 0 ? (double)size / 1e6 / secs : 0.0);
out:
    if (fd >= 0)
        close(fd);
    if (rc != PDCBB_OK && access(part_path, F_OK) != 0)
        unlink(data_path); /* not part of any drain: give the space back */
    dw_plan_free(&plan);
    free(sums.v);
    free(r.layouts);
    free(r.objs);
    free(r.csums);
    pdcbb_drain_free(r.m);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */

/* mkdir that accepts an existing directory (never writable by group or others: the job's
 * drain directory's own mode decides who may read); errno on failure. */
static int dw_mkdir(const char *path)
{
    if (mkdir(path, 0755) == 0)
        return 0;
    if (errno != EEXIST)
        return -1;
    struct stat st;
    if (lstat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

pdcbb_err_t pdcbb_drain_node(const pdcbb_drain_job_t *job, pdcbb_drain_node_stats_t *stats,
                             pdcbb_drain_progress_fn progress, void *arg, char *err,
                             size_t errlen)
{
    dw_ctx_t c;
    memset(&c, 0, sizeof(c));
    pdcbb_drain_node_stats_t local;
    if (stats == NULL)
        stats = &local;
    memset(stats, 0, sizeof(*stats));
    if (err && errlen)
        err[0] = '\0';
    static const pdcbb_drain_job_t empty = {.job_dir = "(none)"};
    c.job = job && job->job_dir ? job : &empty;
    c.err = err;
    c.errlen = errlen;
    c.progress = progress;
    c.progress_arg = arg;
    c.t0 = c.last_log = dw_now();
    if (job == NULL || job->job_dir == NULL || job->destination == NULL || job->job_id == 0 ||
        job->servers_per_node == 0 || job->nnodes == 0 || job->node_index >= job->nnodes ||
        (uint64_t)job->nnodes * job->servers_per_node > PDCBB_SERVERS_MAX)
        return dw_fail(&c, PDCBB_ERR_INVAL, "bad drain request (job id, nodes or servers per "
                                            "node missing)");
    c.nservers = job->nnodes * job->servers_per_node;

    /* the destination and the job's drain directory: one this job's prolog (or an earlier
     * `pdcbb drain`) made, recognised by its IDENTITY and owner; never one someone else made */
    char derr[PDCBB_DRAIN_ERR_LEN];
    pdcbb_err_t drc = pdcbb_drain_dest_check(job->destination, derr, sizeof(derr));
    if (drc != PDCBB_OK)
        return dw_fail(&c, drc, "%s", derr);
    drc = pdcbb_drain_dir_find(job->destination, job->job_id, job->instance, geteuid(),
                               c.drain_dir, sizeof(c.drain_dir), derr, sizeof(derr));
    if (drc == PDCBB_ERR_NOT_FOUND && job->may_create) {
        char note[PDCBB_DRAIN_ERR_LEN];
        drc = pdcbb_drain_dir_create(job->destination, job->job_id, job->instance, job->cluster,
                                     job->share, c.drain_dir, sizeof(c.drain_dir), note,
                                     sizeof(note), derr, sizeof(derr));
        if (drc == PDCBB_OK && note[0])
            PDCBB_WARN("%s", note);
    }
    if (drc != PDCBB_OK)
        return dw_fail(&c, drc, "%s", derr);
    snprintf(stats->drain_dir, sizeof(stats->drain_dir), "%s", c.drain_dir);
    char parts[PATH_MAX], data[PATH_MAX];
    snprintf(parts, sizeof(parts), "%s/%s", c.drain_dir, PDCBB_DRAIN_PARTS_DIR);
    snprintf(data, sizeof(data), "%s/%s", c.drain_dir, PDCBB_DRAIN_DATA_DIR);
    if (dw_mkdir(parts) != 0)
        return dw_fail_errno(&c, errno, "cannot create", parts);
    if (dw_mkdir(data) != 0)
        return dw_fail_errno(&c, errno, "cannot create", data);
    char kvdir[PATH_MAX];
    snprintf(kvdir, sizeof(kvdir), "%s/%s", c.drain_dir, PDCBB_DRAIN_KV_DIR);
    if (dw_mkdir(kvdir) != 0)
        return dw_fail_errno(&c, errno, "cannot create", kvdir);

    /* one drain of this job directory at a time */
    char lockpath[PATH_MAX];
    int lockfd = -1;
    if (pdcbb_jobdir_path(job->job_dir, "drain.lock", lockpath, sizeof(lockpath)) == PDCBB_OK &&
        (lockfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) >= 0 &&
        flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
        close(lockfd);
        return dw_fail(&c, PDCBB_ERR_BUSY, "another drain of %s is running", job->job_dir);
    }

    /* the job's LMDB map size (a smaller one than the store's would fail to open it) */
    pdcbb_config_t *cfg = malloc(sizeof(*cfg));
    char cpath[PATH_MAX];
    c.map_size = (uint64_t)16 << 30;
    if (cfg != NULL) {
        char cerr[PDCBB_CONFIG_ERR_LEN];
        pdcbb_config_init(cfg);
        if (pdcbb_jobdir_path(job->job_dir, "config.yaml", cpath, sizeof(cpath)) == PDCBB_OK &&
            pdcbb_config_load_file(cfg, cpath, PDCBB_SCOPE_ALL, cerr, sizeof(cerr)) == PDCBB_OK &&
            cfg->lmdb_map_size > 0)
            c.map_size = cfg->lmdb_map_size;
        free(cfg);
    }

    pdcbb_err_t rc = PDCBB_OK;
    uint32_t first = job->node_index * job->servers_per_node;
    PDCBB_INFO("draining ranks %u..%u of job %" PRIu64 " from %s to %s", first,
               first + job->servers_per_node - 1, job->job_id, job->job_dir, c.drain_dir);
    for (uint32_t k = 0; k < job->servers_per_node && rc == PDCBB_OK; k++) {
        uint32_t rank = first + k;
        char part[PATH_MAX];
        snprintf(part, sizeof(part), "%s/rank-%05u.yaml", parts, rank);
        if (access(part, F_OK) == 0) {
            /* resume only our own job's drain: a job id can be used twice (pdcbb run) */
            pdcbb_drain_t *old = NULL;
            char lerr[PDCBB_DRAIN_ERR_LEN] = "";
            rc = pdcbb_drain_load_manifest(part, &old, lerr, sizeof(lerr));
            if (rc != PDCBB_OK) {
                rc = dw_fail(&c, rc, "cannot read the existing part %s: %s", part, lerr);
                break;
            }
            const char *mine = job->instance ? job->instance : "";
            const char *theirs = old->instance ? old->instance : "";
            if (old->job_id != job->job_id || strcmp(mine, theirs) != 0) {
                rc = dw_fail(&c, PDCBB_ERR_EXISTS,
                             "%s already holds a drain of another job with id %" PRIu64
                             " (instance %s; this job's is %s): move it away or drain to "
                             "another destination",
                             c.drain_dir, old->job_id, theirs[0] ? theirs : "unknown",
                             mine[0] ? mine : "unknown");
                pdcbb_drain_free(old);
                break;
            }
            pdcbb_drain_free(old);
            PDCBB_INFO("rank %u: already drained (%s exists)", rank, part);
            stats->ranks_skipped++;
            continue;
        }
        rc = dw_rank_drain(&c, rank, part, stats);
    }
    if (rc == PDCBB_OK) {
        dw_progress(&c, first, 1);
        char ferr[PDCBB_DRAIN_ERR_LEN] = "";
        int complete = 0;
        rc = pdcbb_drain_finish(c.drain_dir, c.nservers, &complete, &stats->dropped_extents,
                                &stats->dropped_bytes, ferr, sizeof(ferr));
        if (rc != PDCBB_OK)
            rc = dw_fail(&c, rc, "cannot finish the drain in %s: %s", c.drain_dir,
                         ferr[0] ? ferr : pdcbb_strerror(rc));
        stats->complete = complete;
        if (stats->dropped_extents > 0)
            PDCBB_INFO("dropped %" PRIu64 " extents of deleted objects (%" PRIu64 " bytes a "
                       "daemon still held; listed under dropped_objects in the manifest)",
                       stats->dropped_extents, stats->dropped_bytes);
    }
    stats->seconds = dw_now() - c.t0;
    if (rc == PDCBB_OK) /* the one line that sums up this node's drain */
        PDCBB_INFO("drained ranks %u..%u of job %" PRIu64 ": %" PRIu64 " bytes, %" PRIu64
                   " objects, %" PRIu64 " extents in %.2f s (%.0f MB/s), verified, to %s%s",
                   first, first + job->servers_per_node - 1, job->job_id, stats->bytes,
                   stats->objects, stats->extents, stats->seconds,
                   stats->seconds > 0 ? (double)stats->bytes / 1e6 / stats->seconds : 0.0,
                   c.drain_dir, stats->complete ? " (the job's drain is complete)" : "");
    if (lockfd >= 0)
        close(lockfd); /* releases the lock */
    return rc;
}
