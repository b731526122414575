/*
 * cmd_ls.c - `pdcbb ls`: what a drained job holds, read from its drain directory
 * (docs/DRAIN-FORMAT.md): the job, its ranks (--long), containers and objects with their tags,
 * tag values decoded for numeric and string types, and the mount's files (files/, from their
 * list: pdcbb_drain_files.h).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cmd_data.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_files.h"

static void ls_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb ls [--partial] [--owner USER] [--job ID] [--long] [--files] DIR\n"
            "\n"
            "List what a drained job holds: one line for the job (id, user, ranks, and whether\n"
            "the drain is complete), then its containers (name, lifetime, objects, tags) and its\n"
            "objects (name, container, type, dimensions, placement, bytes stored, tags). Tag\n"
            "values are decoded for numeric and string types, shown as hex otherwise.\n"
            "A job that used the mount (--pdc mount=yes) also has its files, as files/ in the\n"
            "drain directory: a FILES section lists each directory, file and symbolic link from\n"
            "the drain's checksummed list of them (mode, size, modification time, path; a link\n"
            "with its target; \"(damaged)\" after a file built from damaged extents).\n"
            "DIR is a job's drain directory (DEST/pdcbb.JOBID) or a destination that holds\n"
            "exactly one of them.\n"
            "\n"
            "Options:\n"
            "  -p, --partial   list an incomplete drain: the ranks drained so far (objects\n"
            "                  whose home rank has not drained are missing)\n"
            "  -l, --long      also list the ranks (node, data bytes, drain time) and, per\n"
            "                  object, its id, home rank, element size, stored shape, extents,\n"
            "                  consistency, user id, time step, app name, data location, tag\n"
            "                  string and placement map; and each file's CRC-32C\n"
            "  -f, --files     list only the files (the FILES section)\n" CMD_READ_HELP
            "  -h, --help      show this help\n"
            "\n"
            "Exit status: 0 listed; 1 the drain cannot be read or is incomplete (without\n"
            "--partial), its list of files is damaged, or --files and it has no files; 2 bad\n"
            "command line.\n");
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
        /* "..." with quotes, controls and bytes that are not UTF-8 escaped */
        if (len < 3)
            return;
        out[0] = '"';
        pdcbb_escape(out + 1, len - 2, t->value, n);
        o = strlen(out);
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
        o += (size_t)snprintf(out + o, len - o, "%s%s=%s (%s)", i ? ", " : "", pdcbb_esc(t[i].name),
                              v, tn ? tn + 4 : "?");
    }
    if (n == 0)
        snprintf(out, len, "-");
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

/* Width of s as printed (escaped). */
static int ls_width(int w, const char *s)
{
    int n = (int)strlen(pdcbb_esc(s));
    return n > w ? n : w;
}

static void ls_print(pdcbb_drain_t *m, bool lng)
{
    printf("job %" PRIu64 "  user %s (uid %" PRIu32 ")  %" PRIu32 " rank%s  ", m->job_id,
           m->user ? pdcbb_esc(m->user) : "?", m->uid, m->nservers, m->nservers == 1 ? "" : "s");
    if (m->complete)
        printf("complete\n");
    else
        printf("INCOMPLETE: %" PRIu32 " of %" PRIu32 " ranks\n", m->nranks, m->nservers);
    printf("drain directory: %s\n", pdcbb_esc(m->dir));
    if (lng) {
        printf("\nRANKS (%" PRIu32 ")\n", m->nranks);
        printf("  %-5s %-20s %-24s %16s %9s\n", "RANK", "NODE", "DATA FILE", "DATA BYTES",
               "SECONDS");
        for (uint32_t i = 0; i < m->nranks; i++)
            printf("  %-5" PRIu32 " %-20s %-24s %16" PRIu64 " %9.2f\n", m->ranks[i].rank,
                   pdcbb_esc(m->ranks[i].node), pdcbb_esc(m->ranks[i].data_file),
                   m->ranks[i].data_bytes, m->ranks[i].seconds);
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
        printf("  %-*s  %-*s  %7" PRIu32 "  %s\n", wn, pdcbb_esc(cs[i]->name), wl,
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
        cmd_dims(o->dims, o->ndim, dims, sizeof(dims));
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
        cmd_dims(o->dims, o->ndim, dims, sizeof(dims));
        ls_tags(o->tags, o->ntags, tags, sizeof(tags));
        printf("  %-*s  %-*s  %-*s  %-*s  %-*s  %*" PRIu64 "  %s\n", wo, pdcbb_esc(o->name), wc,
               o->container[0] ? pdcbb_esc(o->container) : "-", wt, tn ? tn : "?", wd, dims, wp,
               pn ? pn : "?", wb, pdcbb_drain_object_bytes(m, o), tags);
        if (lng) {
            uint64_t shape[PDCBB_REGION_NDIM_MAX], first, count;
            pdcbb_drain_object_extents(m, o->id, &first, &count);
            if (pdcbb_drain_object_shape(m, o, shape) == PDCBB_OK)
                cmd_dims(shape, o->ndim, dims, sizeof(dims));
            else
                snprintf(dims, sizeof(dims), "(bad)");
            printf("      id %" PRIu64 "  home rank %" PRIu32 "  element size %" PRIu32
                   "  shape %s  extents %" PRIu64 "\n",
                   o->id, o->rank, o->element_size, dims, count);
            printf("      consistency %" PRIu32 "  user id %" PRIu32 "  time step %" PRIu32
                   "  app name \"%s\"  data loc \"%s\"  tag string \"%s\"\n",
                   o->consistency, o->user_id, o->time_step, pdcbb_esc(o->app_name),
                   pdcbb_esc(o->data_loc), pdcbb_esc(o->tags_str));
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

/* "drwxr-x---" of a list entry. */
static void ls_mode(const pdcbb_drain_file_t *e, char out[11])
{
    static const char rwx[] = "rwxrwxrwx";
    out[0] = e->type == PDCBB_DRAIN_FILE_REG ? '-' : e->type;
    for (int i = 0; i < 9; i++)
        out[1 + i] = (e->mode & (0400u >> i)) ? rwx[i] : '-';
    if (e->mode & 04000)
        out[3] = (e->mode & 0100) ? 's' : 'S';
    if (e->mode & 02000)
        out[6] = (e->mode & 0010) ? 's' : 'S';
    if (e->mode & 01000)
        out[9] = (e->mode & 0001) ? 't' : 'T';
    out[10] = '\0';
}

/* The FILES section; returns 0, or 1 after saying why on standard error. only: --files. */
static int ls_files(const pdcbb_drain_t *m, bool lng, bool only)
{
    if (m->files.list == NULL) {
        if (!only)
            return 0; /* no mount in this job (or not complete yet): no section */
        if (m->complete)
            fprintf(stderr,
                    "pdcbb ls: %s has no files: the job did not use the mount (--pdc "
                    "mount=yes)\n",
                    pdcbb_esc(m->dir));
        else
            printf("FILES: none listed yet (they are listed when the drain completes)\n");
        return m->complete ? 1 : 0;
    }
    pdcbb_drain_files_t *f = NULL;
    char err[PDCBB_DRAIN_ERR_LEN];
    if (pdcbb_drain_files_load(m, &f, err, sizeof(err)) != PDCBB_OK) {
        fprintf(stderr, "pdcbb ls: %s\n", pdcbb_esc(err));
        return 1;
    }
    printf("%sFILES (%" PRIu64 " entries, %" PRIu64 " files, %" PRIu64 " bytes, in %s/%s)\n",
           only ? "" : "\n", f->n, f->nfiles, f->bytes, pdcbb_esc(m->dir), PDCBB_DRAIN_FILES_DIR);
    int ws = 4;
    for (uint64_t i = 0; i < f->n; i++) {
        char num[32];
        snprintf(num, sizeof(num), "%" PRIu64, f->e[i].size);
        ws = ls_width(ws, num);
    }
    if (f->n > 0)
        printf("  %-10s  %*s  %-19s  %s%s\n", "MODE", ws, "SIZE", "MODIFIED",
               lng ? "CRC-32C   " : "", "PATH");
    for (uint64_t i = 0; i < f->n; i++) {
        const pdcbb_drain_file_t *e = &f->e[i];
        char mode[11], when[32], crc[16] = "";
        ls_mode(e, mode);
        time_t t = (time_t)(e->mtime_ns / 1000000000u);
        struct tm tm;
        if (localtime_r(&t, &tm) == NULL ||
            strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) == 0)
            snprintf(when, sizeof(when), "%" PRIu64, e->mtime_ns / 1000000000u);
        if (lng && e->type == PDCBB_DRAIN_FILE_REG)
            snprintf(crc, sizeof(crc), "%08" PRIx32 "  ", e->crc32c);
        else if (lng)
            snprintf(crc, sizeof(crc), "%-10s", "-");
        printf("  %-10s  %*" PRIu64 "  %-19s  %s%s", mode, ws, e->size, when, crc,
               pdcbb_esc(e->path));
        if (e->type == PDCBB_DRAIN_FILE_LINK)
            printf(" -> %s", pdcbb_esc(e->target));
        printf("%s\n", e->damaged ? "  (damaged)" : "");
    }
    pdcbb_drain_files_free(f);
    return 0;
}

int cli_cmd_ls(int argc, char **argv)
{
    static const struct option opts[] = {
        {"partial", no_argument, NULL, 'p'}, CMD_READ_LONGOPTS,
        {"long", no_argument, NULL, 'l'},    {"files", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},    {NULL, 0, NULL, 0},
    };
    cmd_read_t rd = {0};
    int bad;
    bool lng = false, only_files = false;
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":plfh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': rd.partial = true; break;
        case 'l': lng = true; break;
        case 'f':
            only_files = true;
            break;
        case 'h': ls_usage(stdout); return 0;
        default:
            if ((bad = cmd_read_opt("ls", c, optarg, argv, &rd)) != 0)
                return bad;
            break;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "pdcbb ls: %s (see pdcbb ls --help)\n",
                optind >= argc ? "missing the drain directory DIR" : "too many arguments");
        return CLI_EXIT_USAGE;
    }
    pdcbb_drain_t *m = cmd_open("ls", argv[optind], &rd);
    if (m == NULL)
        return 1;
    if (!only_files)
        ls_print(m, lng);
    int status = ls_files(m, lng, only_files);
    pdcbb_drain_free(m);
    return fflush(stdout) == 0 ? status : 1;
}
