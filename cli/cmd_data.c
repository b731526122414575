/*
 * cmd_data.c - helpers of the pdcbb commands that read a drain directory (docs/DRAIN-FORMAT.md):
 * opening a drain (pdcbb_drain_open on a job's drain directory, or a destination holding exactly
 * one, refusing an incomplete drain unless --partial is given, and never reading a drain someone
 * else could have changed; saying what the drain left out; with --partial, reading a damaged
 * extent as zeros and saying so), reading an object in slabs of at most CMD_SLAB_BYTES (every
 * extent checked against its CRC-32C by pdcbb_drain_read_box) so memory stays
 * bounded whatever the object's size, progress lines and sizes on standard error. The commands
 * themselves live in files of their own: cmd_ls.c, cmd_get.c, cmd_export.c (raw, npy; HDF5 in
 * export_hdf5.c) and cmd_verify.c; cmd_data.h declares what they share.
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_data.h"
#include "pdcbb_drain.h"

int cmd_read_opt(const char *cmd, int c, const char *arg, char **argv, cmd_read_t *r)
{
    if (c == CMD_OPT_OWNER) {
        long uid;
        char err[256];
        if (pdcbb_drain_reader_uid(arg, &uid, err, sizeof(err)) != PDCBB_OK) {
            fprintf(stderr, "pdcbb %s: --owner: %s\n", cmd, err);
            return CLI_EXIT_USAGE;
        }
        r->owner = arg;
        return 0;
    }
    if (c == CMD_OPT_JOB) {
        char *e;
        errno = 0;
        r->job = strtoull(arg, &e, 10);
        if (errno != 0 || *e != '\0' || r->job == 0 || arg[0] < '0' || arg[0] > '9') {
            fprintf(stderr, "pdcbb %s: --job %s: not a job id\n", cmd, arg);
            return CLI_EXIT_USAGE;
        }
        return 0;
    }
    return cli_bad_option(cmd, c, argv);
}

/* --partial: a damaged extent is read as zeros, and said so (cmd is the command's name). */
static void cmd_damaged(const char *line, void *cmd)
{
    fprintf(stderr, "pdcbb %s: WARNING: damaged extent read as zeros: %s\n", (const char *)cmd,
            line);
}

/* Open a drain for command cmd; prints the reason and returns NULL on failure. */
pdcbb_drain_t *cmd_open(const char *cmd, const char *dir, const cmd_read_t *r)
{
    char err[PDCBB_DRAIN_ERR_LEN] = "", path[PATH_MAX];
    long uid;
    if (pdcbb_drain_reader_uid(r->owner, &uid, err, sizeof(err)) != PDCBB_OK) {
        fprintf(stderr, "pdcbb %s: --owner: %s\n", cmd, err);
        return NULL;
    }
    if (r->job != 0) {
        pdcbb_err_t rc = pdcbb_drain_dir_latest(dir, r->job, uid >= 0 ? (uid_t)uid : getuid(),
                                                path, sizeof(path));
        if (rc != PDCBB_OK) {
            fprintf(stderr, "pdcbb %s: no drain of job %" PRIu64 " of %s in %s (pdcbb why --job "
                            "%" PRIu64 " %s says what is there)\n",
                    cmd, r->job, r->owner ? r->owner : "yours", dir, r->job, dir);
            return NULL;
        }
        dir = path;
    }
    pdcbb_drain_t *m = NULL;
    pdcbb_err_t rc = pdcbb_drain_open(dir, r->partial ? PDCBB_DRAIN_OPEN_PARTIAL : 0, &m, err,
                                      sizeof(err));
    if (rc != PDCBB_OK) {
        /* not (yet) a drain: say where the job's drain is, or who can tell */
        char hint[PATH_MAX + 128];
        pdcbb_drain_real_hint(dir, r->job, uid >= 0 ? (uid_t)uid : getuid(), hint,
                              sizeof(hint));
        const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
        if (hint[0] == '\0' && strncmp(base, "pdcbb.", 6) == 0 && base[6] >= '0' &&
            base[6] <= '9')
            snprintf(hint, sizeof(hint), "; pdcbb why %s says what became of the job's drain",
                     dir);
        if (strncmp(err, "incomplete drain", 16) == 0)
            fprintf(stderr, "pdcbb %s: %s: %s; --partial reads the ranks drained so far%s\n",
                    cmd, dir, err, hint);
        else
            fprintf(stderr, "pdcbb %s: %s%s\n", cmd, err[0] ? err : pdcbb_strerror(rc), hint);
        return NULL;
    }
    /* a drain someone else could have changed, or that is not the job's own, is not read (its
     * checksums prove nothing) */
    char warn[PDCBB_DRAIN_ERR_LEN] = "";
    rc = pdcbb_drain_reader_check(m, uid, "--owner ", warn, sizeof(warn), err, sizeof(err));
    if (rc != PDCBB_OK) {
        fprintf(stderr, "pdcbb %s: %s\n", cmd, err);
        pdcbb_drain_free(m);
        return NULL;
    }
    if (warn[0])
        fprintf(stderr, "pdcbb %s: WARNING: %s\n", cmd, warn);
    /* what the drain left out: not the job's data (deleted objects), or not readable */
    uint64_t nd = 0, bd = 0;
    pdcbb_drain_dropped_totals(m, &nd, &bd);
    if (nd > 0)
        fprintf(stderr, "pdcbb %s: dropped %" PRIu64 " extents of deleted objects (%" PRIu64
                        " bytes a daemon still held of %" PRIu32 " (object, rank) pairs; not "
                        "data of the job)\n",
                cmd, nd, bd, m->ndropped);
    for (uint32_t i = 0; i < m->nskipped; i++)
        fprintf(stderr, "pdcbb %s: WARNING: skipped what cannot be read: %s\n", cmd,
                m->skipped[i]);
    if (r->partial && pdcbb_drain_skip_damaged(m, cmd_damaged, (void *)cmd) != PDCBB_OK) {
        fprintf(stderr, "pdcbb %s: out of memory\n", cmd);
        pdcbb_drain_free(m);
        return NULL;
    }
    return m;
}

void cmd_human(uint64_t b, char *out, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(out, len, "%" PRIu64 " B", b);
    else
        snprintf(out, len, "%.1f %s", v, units[u]);
}

void cmd_dims(const uint64_t *dims, uint32_t ndim, char *out, size_t len)
{
    size_t o = 0;
    snprintf(out, len, "%s", ndim == 0 ? "-" : ""); /* no dimensions (no data) */
    for (uint32_t d = 0; d < ndim && o + 24 < len; d++) {
        if (dims[d] == PDCBB_DIM_UNLIMITED)
            o += (size_t)snprintf(out + o, len - o, "%sunlimited", d ? "x" : "");
        else
            o += (size_t)snprintf(out + o, len - o, "%s%" PRIu64, d ? "x" : "", dims[d]);
    }
}

/* Write all of buf to fd; 0, or -1 with errno. */
int cmd_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* ---- progress on stderr ---- */

void cmd_progress_init(cmd_progress_t *p, const char *cmd, bool on)
{
    p->cmd = cmd;
    p->on = on;
    p->tty = isatty(STDERR_FILENO);
    p->start = p->last = cli_now();
    p->printed = 0;
    p->done_objects = p->total_objects = 0;
    p->interval = p->tty ? 1.0 : 10.0;
    const char *env = getenv("PDCBB_PROGRESS_INTERVAL");
    char *end;
    double v = env && *env ? strtod(env, &end) : -1;
    if (env && *env && *end == '\0' && v >= 0 && v <= 86400)
        p->interval = v;
}

/* "1h02m", "3m05s", "42s" */
static void cmd_duration(double s, char *out, size_t len)
{
    unsigned long t = s < 0 ? 0 : (unsigned long)(s + 0.5);
    if (t >= 3600)
        snprintf(out, len, "%luh%02lum", t / 3600, t % 3600 / 60);
    else if (t >= 60)
        snprintf(out, len, "%lum%02lus", t / 60, t % 60);
    else
        snprintf(out, len, "%lus", t);
}

void cmd_progress(cmd_progress_t *p, uint64_t done, uint64_t total, bool final)
{
    if (!p->on)
        return;
    double now = cli_now();
    if (!final && now - p->last < p->interval)
        return;
    if (final && !p->printed)
        return;
    if (final && p->last_done == done && p->last_total == total) {
        if (p->tty) /* the last line said it all: end it */
            fputc('\n', stderr);
        return;
    }
    p->last = now;
    p->printed = 1;
    p->last_done = done;
    p->last_total = total;
    char d[32], t[32], objs[64] = "", left[48] = "";
    cmd_human(done, d, sizeof(d));
    cmd_human(total, t, sizeof(t));
    if (p->total_objects > 0)
        snprintf(objs, sizeof(objs), ", %" PRIu64 " of %" PRIu64 " objects", p->done_objects,
                 p->total_objects);
    double pct = total ? 100.0 * (double)done / (double)total : 100.0;
    double el = now - p->start, rate = el > 0 ? (double)done / el : 0.0;
    if (!final && done < total && rate > 0) {
        char dur[24];
        cmd_duration((double)(total - done) / rate, dur, sizeof(dur));
        snprintf(left, sizeof(left), ", %s left", dur);
    }
    /* on a terminal the line is rewritten in place; the spaces clear a longer earlier one */
    fprintf(stderr, "%spdcbb %s: %5.1f%% (%s of %s%s, %.0f MiB/s%s)%s", p->tty ? "\r" : "", p->cmd,
            pct, d, t, objs, rate / 1048576.0, left, (p->tty && !final) ? "   " : "\n");
    fflush(stderr);
}

void cmd_drain_progress(const pdcbb_drain_progress_t *d, void *arg)
{
    cmd_progress_t *p = arg;
    p->done_objects = d->done_objects;
    p->total_objects = d->total_objects;
    cmd_progress(p, d->done_bytes, d->total_bytes, false);
}

void cmd_drain_progress_end(cmd_progress_t *p, bool ok, uint64_t bytes, uint64_t objects)
{
    if (!p->on || !p->printed)
        return;
    if (ok) {
        p->done_objects = p->total_objects = objects;
        cmd_progress(p, bytes, bytes, true);
    } else if (p->tty) {
        fputc('\n', stderr);
    }
}

int cmd_read_slabs(const char *cmd, pdcbb_drain_t *m, const pdcbb_drain_object_t *o,
                          const pdcbb_box_t *box, cmd_slab_fn fn, void *arg,
                          cmd_progress_t *prog, uint64_t *done, uint64_t total)
{
    char err[PDCBB_DRAIN_ERR_LEN] = "";
    uint32_t nd = box->ndim, split;
    uint64_t inner = o->element_size; /* bytes of dims split+1.. of the box */
    int status = 0;

    /* the outermost dimension whose inner block fits a slab: split along it */
    for (split = nd - 1; split > 0; split--) {
        if (inner > CMD_SLAB_BYTES / box->size[split])
            break;
        inner *= box->size[split];
    }
    uint64_t step = CMD_SLAB_BYTES / inner;
    if (step == 0)
        step = 1;
    if (step > box->size[split])
        step = box->size[split];
    void *buf = malloc((size_t)(step * inner));
    if (buf == NULL) {
        fprintf(stderr, "pdcbb %s: out of memory (%" PRIu64 " bytes)\n", cmd, step * inner);
        return 1;
    }
    pdcbb_box_t slab = *box;
    uint64_t idx[PDCBB_REGION_NDIM_MAX] = {0}; /* odometer over dims 0..split-1 */
    for (uint32_t d = 0; d < split; d++)
        slab.size[d] = 1;
    for (;;) {
        for (uint32_t d = 0; d < split; d++)
            slab.off[d] = box->off[d] + idx[d];
        for (uint64_t k = 0; k < box->size[split]; k += step) {
            uint64_t n = box->size[split] - k < step ? box->size[split] - k : step;
            slab.off[split] = box->off[split] + k;
            slab.size[split] = n;
            pdcbb_err_t rc = pdcbb_drain_read_box(m, o, &slab, buf, err, sizeof(err));
            if (rc != PDCBB_OK) {
                /* err names the object (and a damaged extent, its bytes and why) */
                if (err[0])
                    fprintf(stderr, "pdcbb %s: %s\n", cmd, err);
                else
                    fprintf(stderr, "pdcbb %s: object '%s': %s\n", cmd, pdcbb_esc(o->name),
                            pdcbb_strerror(rc));
                status = 1;
                goto done;
            }
            if (fn(buf, (size_t)(n * inner), &slab, arg) != 0) {
                status = 1;
                goto done;
            }
            *done += n * inner;
            if (prog != NULL)
                cmd_progress(prog, *done, total, false);
        }
        int d = (int)split - 1;
        while (d >= 0 && ++idx[d] == box->size[d])
            idx[d--] = 0;
        if (d < 0)
            break;
    }
done:
    free(buf);
    return status;
}
