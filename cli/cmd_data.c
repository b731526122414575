/*
 * cmd_data.c - the pdcbb commands that read a drain directory (docs/DRAIN-FORMAT.md):
 *   ls      the job, its containers and objects;
 *   get     one object (or a region of it) as raw bytes, row-major;
 *   export  every object as a .raw or .npy file;
 *   verify  every checksum.
 * All of them open the drain with pdcbb_drain_open (a job's drain directory, or a destination
 * holding exactly one) and refuse an incomplete drain unless --partial is given. Object data is
 * read in slabs of at most CMD_SLAB_BYTES, so memory stays bounded whatever the object's size.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_data.h"
#include "pdcbb_drain.h"

#define CLI_EXIT_USAGE 2
#define CMD_NAME_MAX 200 /* bytes of an exported file name before the extension */

/* ---------------------------------------------------------------------------------------- */
/* Shared helpers                                                                             */
/* ---------------------------------------------------------------------------------------- */

/* Same wording as cli/pdcbb.c's cli_bad_option (getopt with opterr = 0 and a leading ':'). */
static int cmd_bad_option(const char *cmd, int c, char **argv)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        fprintf(stderr, "pdcbb %s: option '%s' needs a value (see pdcbb %s --help)\n", cmd, arg,
                cmd);
    else if (optopt != 0 && strncmp(arg, "--", 2) != 0)
        fprintf(stderr, "pdcbb %s: unknown option '-%c' (see pdcbb %s --help)\n", cmd, optopt,
                cmd);
    else
        fprintf(stderr, "pdcbb %s: unknown option '%s' (see pdcbb %s --help)\n", cmd, arg, cmd);
    return CLI_EXIT_USAGE;
}

/* Open a drain for command cmd; prints the reason and returns NULL on failure. */
static pdcbb_drain_t *cmd_open(const char *cmd, const char *dir, bool partial)
{
    char err[PDCBB_DRAIN_ERR_LEN] = "";
    pdcbb_drain_t *m = NULL;
    pdcbb_err_t rc = pdcbb_drain_open(dir, partial ? PDCBB_DRAIN_OPEN_PARTIAL : 0, &m, err,
                                      sizeof(err));
    if (rc != PDCBB_OK) {
        if (strncmp(err, "incomplete drain", 16) == 0)
            fprintf(stderr, "pdcbb %s: %s: %s; --partial reads the ranks drained so far\n", cmd,
                    dir, err);
        else
            fprintf(stderr, "pdcbb %s: %s\n", cmd, err[0] ? err : pdcbb_strerror(rc));
        return NULL;
    }
    /* a drain someone else could have changed is not read (its checksums prove nothing) */
    char warn[PDCBB_DRAIN_ERR_LEN] = "";
    rc = pdcbb_drain_trust_check(m->dir, (long)m->uid, warn, sizeof(warn), err, sizeof(err));
    if (rc != PDCBB_OK) {
        fprintf(stderr, "pdcbb %s: %s\n", cmd, err);
        pdcbb_drain_free(m);
        return NULL;
    }
    if (warn[0])
        fprintf(stderr, "pdcbb %s: WARNING: %s\n", cmd, warn);
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

/* Find OBJECT by name, or by id when it is all digits and no object has that name. */
static const pdcbb_drain_object_t *cmd_find_object(const char *cmd, pdcbb_drain_t *m,
                                                   const char *name)
{
    const pdcbb_drain_object_t *o = NULL;
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->nobjs; i++) {
        if (strcmp(m->objs[i].name, name) == 0) {
            if (o == NULL)
                o = &m->objs[i];
            n++;
        }
    }
    if (n > 1) {
        fprintf(stderr, "pdcbb %s: %" PRIu32 " objects are named '%s' (ids:", cmd, n, name);
        for (uint32_t i = 0; i < m->nobjs; i++)
            if (strcmp(m->objs[i].name, name) == 0)
                fprintf(stderr, " %" PRIu64, m->objs[i].id);
        fprintf(stderr, "): give the id instead of the name\n");
        return NULL;
    }
    if (o == NULL && name[0] >= '0' && name[0] <= '9' && strspn(name, "0123456789") ==
                                                             strlen(name)) {
        o = pdcbb_drain_find_object_id(m, strtoull(name, NULL, 10));
    }
    if (o == NULL)
        fprintf(stderr, "pdcbb %s: no object '%s' in %s (see pdcbb ls %s)\n", cmd, name, m->dir,
                m->dir);
    return o;
}

/* Write all of buf to fd; 0, or -1 with errno. */
static int cmd_write_all(int fd, const void *buf, size_t len)
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

static double cmd_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cmd_progress_init(cmd_progress_t *p, const char *cmd, bool on)
{
    p->cmd = cmd;
    p->on = on;
    p->tty = isatty(STDERR_FILENO);
    p->start = p->last = cmd_now();
    p->printed = 0;
}

/* A line at most once a second on a terminal (every 10 s otherwise). */
void cmd_progress(cmd_progress_t *p, uint64_t done, uint64_t total, bool final)
{
    if (!p->on)
        return;
    double now = cmd_now();
    if (!final && now - p->last < (p->tty ? 1.0 : 10.0))
        return;
    if (final && !p->printed)
        return;
    p->last = now;
    p->printed = 1;
    char d[32], t[32];
    cmd_human(done, d, sizeof(d));
    cmd_human(total, t, sizeof(t));
    double pct = total ? 100.0 * (double)done / (double)total : 100.0;
    double el = now - p->start;
    fprintf(stderr, "%spdcbb %s: %5.1f%% (%s of %s, %.0f MiB/s)%s", p->tty ? "\r" : "", p->cmd,
            pct, d, t, el > 0 ? (double)done / 1048576.0 / el : 0.0,
            (p->tty && !final) ? "" : "\n");
    fflush(stderr);
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
                fprintf(stderr, "pdcbb %s: object '%s': %s\n", cmd, o->name,
                        err[0] ? err : pdcbb_strerror(rc));
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

/* ---------------------------------------------------------------------------------------- */
/* pdcbb ls                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static void ls_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb ls [--partial] [--long] DIR\n"
            "\n"
            "List what a drained job holds: one line for the job (id, user, ranks, and whether\n"
            "the drain is complete), then its containers (name, lifetime, objects, tags) and its\n"
            "objects (name, container, type, dimensions, placement, bytes stored, tags). Tag\n"
            "values are decoded for numeric and string types, shown as hex otherwise.\n"
            "DIR is a job's drain directory (DEST/pdcbb.JOBID) or a destination that holds\n"
            "exactly one of them.\n"
            "\n"
            "Options:\n"
            "  -p, --partial   list an incomplete drain: the ranks drained so far (objects\n"
            "                  whose home rank has not drained are missing)\n"
            "  -l, --long      also list the ranks (node, data bytes, drain time) and, per\n"
            "                  object, its id, home rank, element size, stored shape, extents,\n"
            "                  consistency, user id, time step, app name, data location, tag\n"
            "                  string and placement map\n"
            "  -h, --help      show this help\n"
            "\n"
            "Exit status: 0 listed; 1 the drain cannot be read or is incomplete (without\n"
            "--partial); 2 bad command line.\n");
}

/* Append printable text for a tag's value to out. */
static void ls_tag_value(const pdcbb_drain_tag_t *t, char *out, size_t len)
{
    size_t es = 0;
    switch (t->type) {
    case 0: case 7: case 14: case 15: case 1: es = 4; break;         /* int, uint, float */
    case 2: case 8: case 9: case 16: case 18: es = 8; break;         /* double, 64-bit */
    case 6: case 10: case 13: es = 2; break;                         /* short, 16-bit */
    case 5: case 11: case 12: es = 1; break;                         /* bool, 8-bit */
    default: break;
    }
    size_t o = 0;
    out[0] = '\0';
    if ((t->type == 4 || t->type == 3) && t->len > 0) { /* a string (or chars) */
        uint32_t n = t->len;
        if (t->value[n - 1] == '\0')
            n--;
        o += (size_t)snprintf(out + o, len - o, "\"");
        for (uint32_t i = 0; i < n && o + 8 < len; i++) {
            unsigned char ch = t->value[i];
            if (ch == '"' || ch == '\\')
                o += (size_t)snprintf(out + o, len - o, "\\%c", ch);
            else if (ch == '\n')
                o += (size_t)snprintf(out + o, len - o, "\\n");
            else if (ch < 0x20 || ch == 0x7f)
                o += (size_t)snprintf(out + o, len - o, "\\x%02x", ch);
            else
                out[o++] = (char)ch, out[o] = '\0';
        }
        snprintf(out + o, len - o, "\"");
        return;
    }
    if (es == 0 || t->len == 0 || t->len % es != 0) {
        for (uint32_t i = 0; i < t->len && o + 3 < len; i++)
            o += (size_t)snprintf(out + o, len - o, "%02x", t->value[i]);
        if (t->len == 0)
            snprintf(out, len, "(empty)");
        return;
    }
    uint32_t n = (uint32_t)(t->len / es);
    if (n > 1)
        o += (size_t)snprintf(out + o, len - o, "[");
    for (uint32_t i = 0; i < n && o + 32 < len; i++) {
        const uint8_t *v = t->value + i * es;
        char b[40];
        union {
            int32_t i32;
            uint32_t u32;
            float f;
            double d;
            int64_t i64;
            uint64_t u64;
            int16_t i16;
            uint16_t u16;
            int8_t i8;
            uint8_t u8;
        } u;
        memcpy(&u, v, es);
        switch (t->type) {
        case 0: case 14: snprintf(b, sizeof(b), "%" PRId32, u.i32); break;
        case 7: case 15: snprintf(b, sizeof(b), "%" PRIu32, u.u32); break;
        case 1: snprintf(b, sizeof(b), "%g", (double)u.f); break;
        case 2: snprintf(b, sizeof(b), "%g", u.d); break;
        case 8: case 16: snprintf(b, sizeof(b), "%" PRId64, u.i64); break;
        case 9: case 18: snprintf(b, sizeof(b), "%" PRIu64, u.u64); break;
        case 6: case 10: snprintf(b, sizeof(b), "%" PRId16, u.i16); break;
        case 13: snprintf(b, sizeof(b), "%" PRIu16, u.u16); break;
        case 5: snprintf(b, sizeof(b), "%s", u.u8 ? "true" : "false"); break;
        case 11: snprintf(b, sizeof(b), "%" PRId8, u.i8); break;
        default: snprintf(b, sizeof(b), "%" PRIu8, u.u8); break;
        }
        o += (size_t)snprintf(out + o, len - o, "%s%s", i ? ", " : "", b);
    }
    if (n > 1)
        snprintf(out + o, len - o, "]");
}

static void ls_tags(const pdcbb_drain_tag_t *t, uint32_t n, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < n && o + 4 < len; i++) {
        char v[512];
        ls_tag_value(&t[i], v, sizeof(v));
        const char *tn = pdcbb_drain_type_name(t[i].type);
        o += (size_t)snprintf(out + o, len - o, "%s%s=%s (%s)", i ? ", " : "", t[i].name, v,
                              tn ? tn + 4 : "?");
    }
    if (n == 0)
        snprintf(out, len, "-");
}

static void ls_dims(const uint64_t *dims, uint32_t ndim, char *out, size_t len)
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

static int ls_obj_cmp(const void *a, const void *b)
{
    const pdcbb_drain_object_t *x = *(const pdcbb_drain_object_t *const *)a;
    const pdcbb_drain_object_t *y = *(const pdcbb_drain_object_t *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->id < y->id ? -1 : x->id > y->id);
}

static int ls_cont_cmp(const void *a, const void *b)
{
    const pdcbb_drain_cont_t *x = *(const pdcbb_drain_cont_t *const *)a;
    const pdcbb_drain_cont_t *y = *(const pdcbb_drain_cont_t *const *)b;
    return strcmp(x->name, y->name);
}

static int ls_width(int w, const char *s)
{
    int n = (int)strlen(s);
    return n > w ? n : w;
}

static void ls_print(pdcbb_drain_t *m, bool lng)
{
    printf("job %" PRIu64 "  user %s (uid %" PRIu32 ")  %" PRIu32 " rank%s  ", m->job_id,
           m->user ? m->user : "?", m->uid, m->nservers, m->nservers == 1 ? "" : "s");
    if (m->complete)
        printf("complete\n");
    else
        printf("INCOMPLETE: %" PRIu32 " of %" PRIu32 " ranks\n", m->nranks, m->nservers);
    printf("drain directory: %s\n", m->dir);
    if (lng) {
        printf("\nRANKS (%" PRIu32 ")\n", m->nranks);
        printf("  %-5s %-20s %-24s %16s %9s\n", "RANK", "NODE", "DATA FILE", "DATA BYTES",
               "SECONDS");
        for (uint32_t i = 0; i < m->nranks; i++)
            printf("  %-5" PRIu32 " %-20s %-24s %16" PRIu64 " %9.2f\n", m->ranks[i].rank,
                   m->ranks[i].node, m->ranks[i].data_file, m->ranks[i].data_bytes,
                   m->ranks[i].seconds);
    }

    /* containers */
    const pdcbb_drain_cont_t **cs = calloc(m->nconts + 1, sizeof(*cs));
    const pdcbb_drain_object_t **os = calloc(m->nobjs + 1, sizeof(*os));
    if (cs == NULL || os == NULL) {
        fprintf(stderr, "pdcbb ls: out of memory\n");
        free(cs);
        free(os);
        return;
    }
    for (uint32_t i = 0; i < m->nconts; i++)
        cs[i] = &m->conts[i];
    for (uint32_t i = 0; i < m->nobjs; i++)
        os[i] = &m->objs[i];
    qsort(cs, m->nconts, sizeof(*cs), ls_cont_cmp);
    qsort(os, m->nobjs, sizeof(*os), ls_obj_cmp);

    char tags[4096], dims[512], num[32];
    int wn = 4, wl = 10; /* "persistent" */
    for (uint32_t i = 0; i < m->nconts; i++)
        wn = ls_width(wn, cs[i]->name);
    printf("\nCONTAINERS (%" PRIu32 ")\n", m->nconts);
    if (m->nconts > 0)
        printf("  %-*s  %-*s  %7s  %s\n", wn, "NAME", wl, "LIFETIME", "OBJECTS", "TAGS");
    for (uint32_t i = 0; i < m->nconts; i++) {
        uint32_t inside = 0; /* objects created in it */
        for (uint32_t k = 0; k < m->nobjs; k++)
            inside += m->objs[k].cont_id == cs[i]->id;
        ls_tags(cs[i]->tags, cs[i]->ntags, tags, sizeof(tags));
        printf("  %-*s  %-*s  %7" PRIu32 "  %s\n", wn, cs[i]->name, wl,
               cs[i]->lifetime ? "transient" : "persistent", inside, tags);
    }

    /* objects */
    int wo = 4, wc = 9, wt = 4, wd = 4, wp = 9, wb = 5;
    for (uint32_t i = 0; i < m->nobjs; i++) {
        const pdcbb_drain_object_t *o = os[i];
        const char *tn = pdcbb_drain_type_name(o->type);
        wo = ls_width(wo, o->name);
        wc = ls_width(wc, o->container[0] ? o->container : "-");
        wt = ls_width(wt, tn ? tn : "?");
        ls_dims(o->dims, o->ndim, dims, sizeof(dims));
        wd = ls_width(wd, dims);
        const char *pn = pdcbb_drain_partition_name(o->partition);
        wp = ls_width(wp, pn ? pn : "?");
        snprintf(num, sizeof(num), "%" PRIu64, pdcbb_drain_object_bytes(m, o));
        wb = ls_width(wb, num);
    }
    printf("\nOBJECTS (%" PRIu32 ")\n", m->nobjs);
    if (m->nobjs > 0)
        printf("  %-*s  %-*s  %-*s  %-*s  %-*s  %*s  %s\n", wo, "NAME", wc, "CONTAINER", wt,
               "TYPE", wd, "DIMS", wp, "PARTITION", wb, "BYTES", "TAGS");
    for (uint32_t i = 0; i < m->nobjs; i++) {
        const pdcbb_drain_object_t *o = os[i];
        const char *tn = pdcbb_drain_type_name(o->type);
        const char *pn = pdcbb_drain_partition_name(o->partition);
        ls_dims(o->dims, o->ndim, dims, sizeof(dims));
        ls_tags(o->tags, o->ntags, tags, sizeof(tags));
        printf("  %-*s  %-*s  %-*s  %-*s  %-*s  %*" PRIu64 "  %s\n", wo, o->name, wc,
               o->container[0] ? o->container : "-", wt, tn ? tn : "?", wd, dims, wp,
               pn ? pn : "?", wb, pdcbb_drain_object_bytes(m, o), tags);
        if (lng) {
            uint64_t shape[PDCBB_REGION_NDIM_MAX], first, count;
            pdcbb_drain_object_extents(m, o->id, &first, &count);
            if (pdcbb_drain_object_shape(m, o, shape) == PDCBB_OK)
                ls_dims(shape, o->ndim, dims, sizeof(dims));
            else
                snprintf(dims, sizeof(dims), "(bad)");
            printf("      id %" PRIu64 "  home rank %" PRIu32 "  element size %" PRIu32
                   "  shape %s  extents %" PRIu64 "\n",
                   o->id, o->rank, o->element_size, dims, count);
            printf("      consistency %" PRIu32 "  user id %" PRIu32 "  time step %" PRIu32
                   "  app name \"%s\"  data loc \"%s\"  tag string \"%s\"\n",
                   o->consistency, o->user_id, o->time_step, o->app_name, o->data_loc,
                   o->tags_str);
            for (uint32_t k = 0; k < o->nmap; k++) {
                printf("      map seq %" PRIu64 ": rank %" PRIu32 " offset [", o->map[k].seq,
                       o->map[k].rank);
                for (uint32_t d = 0; d < o->ndim; d++)
                    printf("%s%" PRIu64, d ? ", " : "", o->map[k].box.off[d]);
                printf("] size [");
                for (uint32_t d = 0; d < o->ndim; d++)
                    printf("%s%" PRIu64, d ? ", " : "", o->map[k].box.size[d]);
                printf("]\n");
            }
        }
    }
    free(cs);
    free(os);
}

int cli_cmd_ls(int argc, char **argv)
{
    static const struct option opts[] = {
        {"partial", no_argument, NULL, 'p'},
        {"long", no_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool partial = false, lng = false;
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":plh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': partial = true; break;
        case 'l': lng = true; break;
        case 'h': ls_usage(stdout); return 0;
        default: return cmd_bad_option("ls", c, argv);
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "pdcbb ls: %s (see pdcbb ls --help)\n",
                optind >= argc ? "missing the drain directory DIR" : "too many arguments");
        return CLI_EXIT_USAGE;
    }
    pdcbb_drain_t *m = cmd_open("ls", argv[optind], partial);
    if (m == NULL)
        return 1;
    ls_print(m, lng);
    pdcbb_drain_free(m);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------------------------------- */
/* pdcbb get                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static void get_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb get [--partial] [-o FILE] DIR OBJECT [REGION]\n"
            "\n"
            "Write the data of OBJECT of a drained job as raw bytes: its elements in row-major\n"
            "(C) order, each as stored (native byte order), with no header. Elements that were\n"
            "never written read as zero. Without REGION the whole object is written; an object\n"
            "with an unlimited first dimension has as many rows as were written.\n"
            "\n"
            "OBJECT is an object's name (as `pdcbb ls` shows it), or its numeric id.\n"
            "REGION is OFF:COUNT for each dimension, separated by commas, in elements:\n"
            "  pdcbb get DIR run1/temperature 100:50,0:2048 -o part.bin\n"
            "writes rows 100 to 149 of all 2048 columns. COUNT is a number of elements, not\n"
            "an end index; it must be at least 1, and the region must lie inside the object's\n"
            "dimensions (rows past the last one written read as zero).\n"
            "\n"
            "The data goes to standard output, which must not be a terminal, or to FILE.\n"
            "It is read in slabs of at most 64 MiB, so objects of any size work in bounded\n"
            "memory.\n"
            "\n"
            "Options:\n"
            "  -o, --output FILE  write to FILE (created or truncated; '-' is standard output)\n"
            "  -p, --partial      read an incomplete drain (data held by ranks that have not\n"
            "                     drained is missing and reads as zero)\n"
            "  -h, --help         show this help\n"
            "\n"
            "Exit status: 0 written; 1 the drain, the object or its data cannot be read, or\n"
            "the output cannot be written; 2 bad command line (including a bad REGION and\n"
            "standard output being a terminal).\n");
}

/* Parse "OFF:COUNT,..." for o; prints the error and returns -1 if bad. */
static int get_parse_region(const char *text, const pdcbb_drain_object_t *o,
                            const uint64_t *shape, pdcbb_box_t *box)
{
    uint64_t off[PDCBB_REGION_NDIM_MAX], size[PDCBB_REGION_NDIM_MAX];
    uint32_t n = 0;
    const char *p = text;
    char dims[512];

    for (;;) {
        char *end;
        if (n == PDCBB_REGION_NDIM_MAX || *p < '0' || *p > '9')
            goto bad;
        errno = 0;
        off[n] = strtoull(p, &end, 10);
        if (errno != 0 || *end != ':' || end[1] < '0' || end[1] > '9')
            goto bad;
        p = end + 1;
        size[n] = strtoull(p, &end, 10);
        if (errno != 0 || size[n] == 0)
            goto bad;
        n++;
        p = end;
        if (*p == '\0')
            break;
        if (*p != ',')
            goto bad;
        p++;
    }
    if (n != o->ndim) {
        fprintf(stderr, "pdcbb get: region '%s' has %" PRIu32 " dimension%s, object '%s' has %"
                        PRIu32 "\n",
                text, n, n == 1 ? "" : "s", o->name, o->ndim);
        return -1;
    }
    if (pdcbb_box_make(box, n, off, size) != PDCBB_OK ||
        pdcbb_box_check_within(box, o->ndim, o->dims) != PDCBB_OK) {
        ls_dims(o->dims, o->ndim, dims, sizeof(dims));
        fprintf(stderr, "pdcbb get: region '%s' lies outside object '%s' (dimensions %s)\n",
                text, o->name, dims);
        return -1;
    }
    (void)shape;
    return 0;
bad:
    fprintf(stderr, "pdcbb get: bad region '%s' (expected OFF:COUNT per dimension, comma-"
                    "separated, e.g. 0:10,5:20; COUNT at least 1)\n",
            text);
    return -1;
}

typedef struct get_out {
    int fd;
    const char *name;
} get_out_t;

static int get_write(const void *data, size_t len, const pdcbb_box_t *slab, void *arg)
{
    (void)slab;
    get_out_t *g = arg;
    if (cmd_write_all(g->fd, data, len) != 0) {
        fprintf(stderr, "pdcbb get: cannot write %s: %s\n", g->name, strerror(errno));
        return -1;
    }
    return 0;
}

int cli_cmd_get(int argc, char **argv)
{
    static const struct option opts[] = {
        {"partial", no_argument, NULL, 'p'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool partial = false;
    const char *output = NULL;
    int c, status = 1;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":po:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': partial = true; break;
        case 'o': output = optarg; break;
        case 'h': get_usage(stdout); return 0;
        default: return cmd_bad_option("get", c, argv);
        }
    }
    int nargs = argc - optind;
    if (nargs < 2 || nargs > 3) {
        fprintf(stderr, "pdcbb get: %s (see pdcbb get --help)\n",
                nargs < 2 ? "expected DIR and OBJECT" : "too many arguments");
        return CLI_EXIT_USAGE;
    }
    bool to_stdout = output == NULL || strcmp(output, "-") == 0;
    if (to_stdout && isatty(STDOUT_FILENO)) {
        fprintf(stderr, "pdcbb get: standard output is a terminal: redirect it or use -o FILE "
                        "(the data is binary)\n");
        return CLI_EXIT_USAGE;
    }
    const char *dir = argv[optind], *name = argv[optind + 1];
    const char *region = nargs == 3 ? argv[optind + 2] : NULL;
    pdcbb_drain_t *m = cmd_open("get", dir, partial);
    if (m == NULL)
        return 1;
    get_out_t out = {STDOUT_FILENO, "standard output"};
    pdcbb_box_t box;
    uint64_t shape[PDCBB_REGION_NDIM_MAX], zero[PDCBB_REGION_NDIM_MAX] = {0};
    const pdcbb_drain_object_t *o = cmd_find_object("get", m, name);
    if (o == NULL)
        goto done;
    if (pdcbb_drain_object_shape(m, o, shape) != PDCBB_OK) {
        fprintf(stderr, "pdcbb get: object '%s': its size overflows\n", o->name);
        goto done;
    }
    if (o->ndim == 0) {
        fprintf(stderr, "pdcbb get: object '%s' has no dimensions: it holds no data\n",
                o->name);
        status = 0;
        goto done;
    }
    if (region != NULL) {
        if (get_parse_region(region, o, shape, &box) != 0) {
            status = CLI_EXIT_USAGE;
            goto done;
        }
    } else {
        bool empty = false;
        for (uint32_t d = 0; d < o->ndim; d++)
            empty |= shape[d] == 0;
        if (!empty && pdcbb_box_make(&box, o->ndim, zero, shape) != PDCBB_OK) {
            fprintf(stderr, "pdcbb get: object '%s': bad dimensions\n", o->name);
            goto done;
        }
        if (empty) {
            /* an unlimited object with no rows: nothing to write */
            if (!to_stdout) {
                int fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
                if (fd < 0 || close(fd) != 0) {
                    fprintf(stderr, "pdcbb get: cannot create %s: %s\n", output,
                            strerror(errno));
                    goto done;
                }
            }
            status = 0;
            goto done;
        }
    }
    if (!to_stdout) {
        out.fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        out.name = output;
        if (out.fd < 0) {
            fprintf(stderr, "pdcbb get: cannot create %s: %s\n", output, strerror(errno));
            goto done;
        }
    }
    uint64_t done_bytes = 0;
    status = cmd_read_slabs("get", m, o, &box, get_write, &out, NULL, &done_bytes, 0);
    if (!to_stdout) {
        if (close(out.fd) != 0 && status == 0) {
            fprintf(stderr, "pdcbb get: cannot write %s: %s\n", output, strerror(errno));
            status = 1;
        }
        if (status != 0)
            unlink(output);
    }
done:
    pdcbb_drain_free(m);
    return status;
}

/* ---------------------------------------------------------------------------------------- */
/* pdcbb export                                                                               */
/* ---------------------------------------------------------------------------------------- */

static void export_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb export [--partial] [--format raw|npy|hdf5] [-o OUT] [--force] DIR\n"
            "\n"
            "Write every object of a drained job to a file of its own in OUTDIR (raw, npy), or\n"
            "the whole job to one HDF5 file (hdf5).\n"
            "\n"
            "  raw   the object's elements in row-major order, native byte order, no header\n"
            "        (what `pdcbb get` writes);\n"
            "  npy   NumPy's .npy format (version 1.0): numpy.load(FILE) gives an array of the\n"
            "        object's shape and type (PDC_FLOAT -> <f4, PDC_INT64 -> <i8, ...).\n"
            "        PDC_STRING and PDC_VOID_PTR objects, and objects whose element size does\n"
            "        not match their type, have no NumPy type: they are written as raw\n"
            "        void elements ('|V<element size>') of the same shape.\n"
            "  hdf5  one HDF5 file: OUT when it ends in .h5 or .hdf5, else OUT/<drain directory\n"
            "        name>.h5 (pdcbb.1234.h5). A group per container, a dataset per object in\n"
            "        its container's group (in the root group when its container is not in the\n"
            "        drain). Types: PDC_INT, PDC_INT32 -> H5T_NATIVE_INT32, PDC_FLOAT ->\n"
            "        H5T_NATIVE_FLOAT, PDC_LONG -> H5T_NATIVE_INT64, ... (see man pdcbb);\n"
            "        PDC_BOOLEAN -> an int8 enum FALSE/TRUE (h5py: bool); PDC_STRING -> 1-byte\n"
            "        strings; PDC_VOID_PTR and mismatched element sizes -> opaque. An\n"
            "        unlimited first dimension is chunked with maxdims H5S_UNLIMITED and has\n"
            "        as many rows as were written; an object without dimensions is a dataset\n"
            "        with a null dataspace. Metadata are attributes pdc_id, pdc_type,\n"
            "        pdc_partition, pdc_time_step, pdc_app_name, ...; tags are attributes of\n"
            "        their name and type. Every CRC-32C is checked before anything is written.\n"
            "        KV objects are skipped (pdcbb kv export writes them).\n"
            "\n"
            "File names (raw, npy): the object's name with every character other than A-Z a-z\n"
            "0-9 . _ - replaced by '_' ('run1/temperature' -> run1_temperature.npy), a leading\n"
            "'.' replaced by '_', cut to 200 bytes, and an empty name written as '_'. When two\n"
            "objects would get the same name, each of them gets '-<object id>' appended\n"
            "(run1_t-2305843009213693953.npy); HDF5 names replace only '/' and collide the same\n"
            "way within a group. Each file written is printed on standard output.\n"
            "An object with an unlimited first dimension has as many rows as were written.\n"
            "Elements that were never written are zero.\n"
            "\n"
            "Existing files are never overwritten without --force: every name is checked before\n"
            "anything is written. A file is written under a temporary name and renamed when\n"
            "complete. Progress is shown on standard error for exports over 1 GiB.\n"
            "\n"
            "Options:\n"
            "  -f, --format FMT   raw, npy or hdf5 (default npy)\n"
            "  -o, --output OUT   directory for the files (default: the current directory;\n"
            "                     created if missing); hdf5: a file name ending in .h5 or\n"
            "                     .hdf5 is the file itself\n"
            "      --force        overwrite existing files\n"
            "  -p, --partial      export an incomplete drain (only the objects of the ranks\n"
            "                     drained so far, with their data from those ranks)\n"
            "  -q, --quiet        no progress and no list of files\n"
            "  -h, --help         show this help\n"
            "\n"
            "Exit status: 0 every object exported; 1 the drain cannot be read, is incomplete,\n"
            "a file exists (without --force) or cannot be written, or (hdf5) a checksum does\n"
            "not match; 2 bad command line.\n");
}

/* The NumPy descr of o ("<f4"), or "|V<n>" when NumPy has no type for it. */
static void export_descr(const pdcbb_drain_object_t *o, char *out, size_t len)
{
    static const struct {
        char kind;
        uint32_t size;
    } t[19] = {
        {'i', 4}, {'f', 4}, {'f', 8}, {'i', 1}, {0, 0},   {'b', 1}, {'i', 2},
        {'u', 4}, {'i', 8}, {'u', 8}, {'i', 2}, {'i', 1}, {'u', 1}, {'u', 2},
        {'i', 4}, {'u', 4}, {'i', 8}, {0, 0},   {'u', 8},
    };
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    const char order = '>';
#else
    const char order = '<';
#endif
    if (o->type >= 0 && o->type < 19 && t[o->type].kind != 0 &&
        t[o->type].size == o->element_size)
        snprintf(out, len, "%c%c%" PRIu32, o->element_size == 1 ? '|' : order, t[o->type].kind,
                 o->element_size);
    else
        snprintf(out, len, "|V%" PRIu32, o->element_size);
}

/* The .npy header (magic, version 1.0, length, dict, padding to 64 bytes). */
static size_t export_npy_header(const char *descr, const uint64_t *shape, uint32_t ndim,
                                char *out, size_t len)
{
    char dict[1024];
    size_t n = (size_t)snprintf(dict, sizeof(dict),
                                "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (uint32_t d = 0; d < ndim; d++)
        n += (size_t)snprintf(dict + n, sizeof(dict) - n, "%" PRIu64 ",%s", shape[d],
                              d + 1 < ndim ? " " : "");
    if (ndim > 1)
        n--; /* (3, 4) rather than (3, 4,) */
    n += (size_t)snprintf(dict + n, sizeof(dict) - n, "), }");
    size_t total = 10 + n + 1; /* magic 6 + version 2 + length 2 + dict + '\n' */
    size_t padded = (total + 63) / 64 * 64;
    if (padded > len)
        return 0;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    uint16_t hl = (uint16_t)(padded - 10);
    out[8] = (char)(hl & 0xff);
    out[9] = (char)(hl >> 8);
    memcpy(out + 10, dict, n);
    memset(out + 10 + n, ' ', padded - 10 - n - 1);
    out[padded - 1] = '\n';
    return padded;
}

static void export_file_name(const pdcbb_drain_object_t *o, char *out, size_t len)
{
    size_t n = 0;
    for (const char *p = o->name; *p != '\0' && n < CMD_NAME_MAX && n + 1 < len; p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
        out[n++] = ok ? ch : '_';
    }
    out[n] = '\0';
    if (n == 0)
        snprintf(out, len, "_");
    else if (out[0] == '.')
        out[0] = '_';
}

typedef struct export_item {
    const pdcbb_drain_object_t *o;
    char path[PATH_MAX];
} export_item_t;

static int export_name_cmp(const void *a, const void *b)
{
    const export_item_t *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    return c ? c : (x->o->id < y->o->id ? -1 : x->o->id > y->o->id);
}

typedef struct export_sink {
    int fd;
    const char *path;
} export_sink_t;

static int export_write(const void *data, size_t len, const pdcbb_box_t *slab, void *arg)
{
    (void)slab;
    export_sink_t *s = arg;
    if (cmd_write_all(s->fd, data, len) != 0) {
        fprintf(stderr, "pdcbb export: cannot write %s: %s\n", s->path, strerror(errno));
        return -1;
    }
    return 0;
}

int cli_cmd_export(int argc, char **argv)
{
    enum { OPT_FORCE = 1000 };
    static const struct option opts[] = {
        {"partial", no_argument, NULL, 'p'},
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, OPT_FORCE},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool partial = false, force = false, quiet = false, npy = true, hdf5 = false;
    const char *outdir = ".", *output = NULL;
    int c, status = 1;
    export_item_t *items = NULL;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":pf:o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': partial = true; break;
        case 'f':
            if (strcmp(optarg, "npy") == 0) {
                npy = true, hdf5 = false;
            } else if (strcmp(optarg, "raw") == 0) {
                npy = false, hdf5 = false;
            } else if (strcmp(optarg, "hdf5") == 0) {
                npy = false, hdf5 = true;
            } else {
                fprintf(stderr, "pdcbb export: bad value for --format: '%s' (expected raw, "
                                "npy or hdf5)\n",
                        optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'o': outdir = output = optarg; break;
        case OPT_FORCE: force = true; break;
        case 'q': quiet = true; break;
        case 'h': export_usage(stdout); return 0;
        default: return cmd_bad_option("export", c, argv);
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "pdcbb export: %s (see pdcbb export --help)\n",
                optind >= argc ? "missing the drain directory DIR" : "too many arguments");
        return CLI_EXIT_USAGE;
    }
    pdcbb_drain_t *m = cmd_open("export", argv[optind], partial);
    if (m == NULL)
        return 1;
    if (hdf5) {
        status = cli_export_hdf5(m, output, force, quiet);
        goto done;
    }
    if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "pdcbb export: cannot create %s: %s\n", outdir, strerror(errno));
        goto done;
    }
    struct stat st;
    if (stat(outdir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "pdcbb export: %s is not a directory\n", outdir);
        goto done;
    }
    const char *ext = npy ? ".npy" : ".raw";
    items = calloc(m->nobjs + 1, sizeof(*items));
    if (items == NULL) {
        fprintf(stderr, "pdcbb export: out of memory\n");
        goto done;
    }
    /* names, with -ID appended to the ones that collide */
    for (uint32_t i = 0; i < m->nobjs; i++) {
        items[i].o = &m->objs[i];
        export_file_name(&m->objs[i], items[i].path, sizeof(items[i].path));
    }
    qsort(items, m->nobjs, sizeof(*items), export_name_cmp);
    bool *dup = calloc(m->nobjs + 1, sizeof(bool));
    if (dup == NULL) {
        fprintf(stderr, "pdcbb export: out of memory\n");
        goto done;
    }
    for (uint32_t i = 1; i < m->nobjs; i++)
        if (strcmp(items[i].path, items[i - 1].path) == 0)
            dup[i] = dup[i - 1] = true;
    uint64_t total = 0;
    for (uint32_t i = 0; i < m->nobjs; i++) {
        char base[PATH_MAX];
        snprintf(base, sizeof(base), "%s", items[i].path);
        int n;
        if (dup[i])
            n = snprintf(items[i].path, sizeof(items[i].path), "%s/%s-%" PRIu64 "%s", outdir,
                         base, items[i].o->id, ext);
        else
            n = snprintf(items[i].path, sizeof(items[i].path), "%s/%s%s", outdir, base, ext);
        if (n >= (int)sizeof(items[i].path)) {
            fprintf(stderr, "pdcbb export: %s: path too long\n", outdir);
            free(dup);
            goto done;
        }
        if (!force && access(items[i].path, F_OK) == 0) {
            fprintf(stderr, "pdcbb export: %s exists (use --force to overwrite); nothing "
                            "written\n",
                    items[i].path);
            free(dup);
            goto done;
        }
        uint64_t shape[PDCBB_REGION_NDIM_MAX], b = items[i].o->ndim ? items[i].o->element_size : 0;
        if (pdcbb_drain_object_shape(m, items[i].o, shape) == PDCBB_OK)
            for (uint32_t d = 0; d < items[i].o->ndim; d++)
                b *= shape[d];
        total += b;
    }
    free(dup);

    cmd_progress_t prog;
    cmd_progress_init(&prog, "export", !quiet && total > ((uint64_t)1 << 30));
    uint64_t done_bytes = 0;
    uint32_t written = 0;
    for (uint32_t i = 0; i < m->nobjs; i++) {
        const pdcbb_drain_object_t *o = items[i].o;
        uint64_t shape[PDCBB_REGION_NDIM_MAX], zero[PDCBB_REGION_NDIM_MAX] = {0};
        char tmp[PATH_MAX + 32], descr[32], hdr[2048];
        if (pdcbb_drain_object_shape(m, o, shape) != PDCBB_OK) {
            fprintf(stderr, "pdcbb export: object '%s': its size overflows\n", o->name);
            goto done;
        }
        if (o->ndim == 0) {
            if (!quiet)
                fprintf(stderr, "pdcbb export: object '%s' has no dimensions and no data: "
                                "nothing to write\n",
                        o->name);
            continue;
        }
        export_descr(o, descr, sizeof(descr));
        if (npy && descr[1] == 'V' && !quiet)
            fprintf(stderr, "pdcbb export: warning: object '%s' (%s) has no NumPy type: "
                            "written as '%s' elements\n",
                    o->name, pdcbb_drain_type_name(o->type), descr);
        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", items[i].path, (long)getpid());
        export_sink_t sink = {open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666), tmp};
        if (sink.fd < 0) {
            fprintf(stderr, "pdcbb export: cannot create %s: %s\n", tmp, strerror(errno));
            goto done;
        }
        int rc = 0;
        if (npy) {
            size_t hl = export_npy_header(descr, shape, o->ndim, hdr, sizeof(hdr));
            rc = hl == 0 ? -1 : export_write(hdr, hl, NULL, &sink);
        }
        bool empty = false;
        for (uint32_t d = 0; d < o->ndim; d++)
            empty |= shape[d] == 0;
        if (rc == 0 && !empty) {
            pdcbb_box_t box;
            if (pdcbb_box_make(&box, o->ndim, zero, shape) != PDCBB_OK)
                rc = -1;
            else
                rc = cmd_read_slabs("export", m, o, &box, export_write, &sink, &prog,
                                    &done_bytes, total);
        }
        if (rc == 0 && fsync(sink.fd) != 0 && errno != EINVAL) {
            fprintf(stderr, "pdcbb export: cannot write %s: %s\n", tmp, strerror(errno));
            rc = -1;
        }
        if (close(sink.fd) != 0 && rc == 0) {
            fprintf(stderr, "pdcbb export: cannot write %s: %s\n", tmp, strerror(errno));
            rc = -1;
        }
        if (rc == 0 && rename(tmp, items[i].path) != 0) {
            fprintf(stderr, "pdcbb export: cannot rename %s to %s: %s\n", tmp, items[i].path,
                    strerror(errno));
            rc = -1;
        }
        if (rc != 0) {
            unlink(tmp);
            goto done;
        }
        written++;
        if (!quiet)
            printf("%s\n", items[i].path);
    }
    cmd_progress(&prog, done_bytes, total, true);
    if (!quiet) {
        char h[32];
        cmd_human(done_bytes, h, sizeof(h));
        fprintf(stderr, "pdcbb export: %" PRIu32 " object%s (%s) written to %s%s\n", written,
                written == 1 ? "" : "s", h, outdir,
                m->complete ? "" : " (incomplete drain: only the ranks drained so far)");
    }
    status = fflush(stdout) == 0 ? 0 : 1;
done:
    free(items);
    pdcbb_drain_free(m);
    return status;
}

/* ---------------------------------------------------------------------------------------- */
/* pdcbb verify                                                                               */
/* ---------------------------------------------------------------------------------------- */

static void verify_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb verify [--partial] [--rank R] [-q] DIR\n"
            "\n"
            "Re-read every extent of a drained job's data files and compare its CRC-32C with\n"
            "the manifest, and every KV dump (each block's CRC-32C, the file's CRC-32C, size\n"
            "and record count). Each bad extent or KV dump is printed on standard output,\n"
            "an extent with its object,\n"
            "data file and offset, followed by a summary:\n"
            "  verified N extents, X bytes: OK\n"
            "  verified N extents, X bytes: K bad, M missing\n"
            "An extent is bad when its checksum differs or it cannot be read, and missing\n"
            "when its data file is missing or too short. Data files are read sequentially in\n"
            "8 MiB requests; progress is shown on standard error when it is a terminal.\n"
            "\n"
            "Options:\n"
            "  -p, --partial   verify an incomplete drain: the ranks drained so far\n"
            "  -r, --rank R    only the extents daemon rank R held\n"
            "  -q, --quiet     print only bad extents and the summary (no progress)\n"
            "  -h, --help      show this help\n"
            "\n"
            "Exit status: 0 every checksum matches (and the drain is complete, or --partial\n"
            "is given); 1 an extent is bad or missing, the drain is incomplete, or it cannot\n"
            "be read; 2 bad command line.\n");
}

static void verify_report(const char *line, void *arg)
{
    cmd_progress_t *p = arg;
    if (p->on && p->tty && p->printed)
        fprintf(stderr, "\r%60s\r", "");
    printf("BAD %s\n", line);
    fflush(stdout);
}

static void verify_progress(uint64_t done, uint64_t total, void *arg)
{
    cmd_progress(arg, done, total, false);
}

int cli_cmd_verify(int argc, char **argv)
{
    static const struct option opts[] = {
        {"partial", no_argument, NULL, 'p'},
        {"rank", required_argument, NULL, 'r'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool partial = false, quiet = false;
    long rank = -1;
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":pr:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': partial = true; break;
        case 'r': {
            char *end;
            errno = 0;
            unsigned long v = strtoul(optarg, &end, 10);
            if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno != 0 ||
                v > 65534) {
                fprintf(stderr, "pdcbb verify: bad value for --rank: '%s' (expected an integer "
                                "from 0 to 65534)\n",
                        optarg);
                return CLI_EXIT_USAGE;
            }
            rank = (long)v;
            break;
        }
        case 'q': quiet = true; break;
        case 'h': verify_usage(stdout); return 0;
        default: return cmd_bad_option("verify", c, argv);
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "pdcbb verify: %s (see pdcbb verify --help)\n",
                optind >= argc ? "missing the drain directory DIR" : "too many arguments");
        return CLI_EXIT_USAGE;
    }
    pdcbb_drain_t *m = cmd_open("verify", argv[optind], partial);
    if (m == NULL)
        return 1;
    if (rank >= 0 && (uint32_t)rank >= m->nservers) {
        fprintf(stderr, "pdcbb verify: --rank %ld: the job has ranks 0 to %" PRIu32 "\n", rank,
                m->nservers - 1);
        pdcbb_drain_free(m);
        return CLI_EXIT_USAGE;
    }
    cmd_progress_t prog;
    cmd_progress_init(&prog, "verify", !quiet && isatty(STDERR_FILENO));
    pdcbb_drain_verify_stats_t st;
    char err[PDCBB_DRAIN_ERR_LEN] = "";
    pdcbb_err_t rc = pdcbb_drain_verify(m, (int)rank, &st, verify_report, verify_progress,
                                        &prog, err, sizeof(err));
    cmd_progress(&prog, st.bytes, st.bytes, true);
    int status = 0;
    if (rc != PDCBB_OK && rc != PDCBB_ERR_IO) {
        fprintf(stderr, "pdcbb verify: %s\n", err[0] ? err : pdcbb_strerror(rc));
        status = 1;
    } else {
        printf("verified %" PRIu64 " extents, %" PRIu64 " bytes", st.extents, st.bytes);
        if (st.kv_dumps > 0)
            printf(", %" PRIu64 " KV dumps (%" PRIu64 " records)", st.kv_dumps, st.kv_records);
        if (st.bad == 0 && st.missing == 0 && st.kv_bad == 0)
            printf(": OK");
        else if (st.kv_dumps > 0)
            printf(": %" PRIu64 " bad, %" PRIu64 " missing, %" PRIu64 " bad KV dumps", st.bad,
                   st.missing, st.kv_bad);
        else
            printf(": %" PRIu64 " bad, %" PRIu64 " missing", st.bad, st.missing);
        if (!m->complete)
            printf(" (INCOMPLETE drain: %" PRIu32 " of %" PRIu32 " ranks)", m->nranks,
                   m->nservers);
        printf("\n");
        status = (st.bad || st.missing || st.kv_bad) ? 1 : 0;
    }
    pdcbb_drain_free(m);
    if (fflush(stdout) != 0)
        status = 1;
    return status;
}
