/*
 * cmd_export.c - `pdcbb export`: the table of formats (export.h; --format, its errors and --help
 * come from it) and the writing of per-object formats: every object of a drained job as a file
 * of its own, raw bytes (.raw) or NumPy's .npy (export_npy.c's header first); a whole-drain
 * format (hdf5: export_hdf5.c) is handed the drain. Every name is checked before anything is
 * written; each file is written under a temporary name, synced and renamed (a damaged extent
 * leaves no file of its object); data is read in slabs (cmd_read_slabs, which checks every
 * extent's CRC-32C), progress shown over 1 GiB.
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
#include <unistd.h>

#include "cli.h"
#include "cmd_data.h"
#include "export.h"
#include "pdcbb_drain.h"

#define CMD_NAME_MAX 200 /* bytes of an exported file name before the extension */

/* The formats: --format NAME, the extension of their files, their writers (export.h). */
static const export_format_t export_formats[] = {
    {"raw", ".raw", NULL, NULL,
     "the object's elements in row-major order, native byte order, no header\n"
     "(what `pdcbb get` writes);"},
    {"npy", ".npy", export_npy_header, NULL,
     "NumPy's .npy format (version 1.0): numpy.load(FILE) gives an array of the\n"
     "object's shape and type (PDC_FLOAT -> <f4, PDC_INT64 -> <i8, ...).\n"
     "PDC_STRING and PDC_VOID_PTR objects, and objects whose element size does\n"
     "not match their type, have no NumPy type: they are written as raw\n"
     "void elements ('|V<element size>') of the same shape."},
    {"hdf5", ".h5", NULL, export_hdf5,
     "one HDF5 file: OUT when it ends in .h5 or .hdf5, else OUT/<drain directory\n"
     "name>.h5 (pdcbb.1234.h5). A group per container, a dataset per object in\n"
     "its container's group (in the root group when its container is not in the\n"
     "drain). Types: PDC_INT, PDC_INT32 -> H5T_NATIVE_INT32, PDC_FLOAT ->\n"
     "H5T_NATIVE_FLOAT, PDC_LONG -> H5T_NATIVE_INT64, ... (see man pdcbb);\n"
     "PDC_BOOLEAN -> an int8 enum FALSE/TRUE (h5py: bool); PDC_STRING -> 1-byte\n"
     "strings; PDC_VOID_PTR and mismatched element sizes -> opaque. An\n"
     "unlimited first dimension is chunked with maxdims H5S_UNLIMITED and has\n"
     "as many rows as were written; an object without dimensions is a dataset\n"
     "with a null dataspace. Metadata are attributes pdc_id, pdc_type,\n"
     "pdc_partition, pdc_time_step, pdc_app_name, ...; tags are attributes of\n"
     "their name and type. KV objects are skipped (pdcbb kv export writes\n"
     "them)."},
};
#define EXPORT_NFORMATS (sizeof(export_formats) / sizeof(export_formats[0]))
#define EXPORT_DEFAULT  "npy"

static const export_format_t *export_format_find(const char *name)
{
    for (size_t i = 0; i < EXPORT_NFORMATS; i++)
        if (strcmp(export_formats[i].name, name) == 0)
            return &export_formats[i];
    return NULL;
}

/* The formats' names joined by sep, the last two by last ("raw, npy or hdf5"). */
static const char *export_format_names(const char *sep, const char *last, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < EXPORT_NFORMATS && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s%s",
                              i == 0                    ? ""
                              : i + 1 < EXPORT_NFORMATS ? sep
                                                        : last,
                              export_formats[i].name);
    return out;
}

static void export_usage(FILE *out)
{
    char bar[128], list[128];
    export_format_names("|", "|", bar, sizeof(bar));
    export_format_names(", ", " or ", list, sizeof(list));
    fprintf(out,
            "Usage: pdcbb export [--partial] [--owner USER] [--job ID] [--format %s] [-o OUT] "
            "[--force] DIR\n"
            "\n"
            "Write every object of a drained job to a file of its own in OUTDIR (raw, npy), or\n"
            "the whole job to one HDF5 file (hdf5).\n"
            "\n",
            bar);
    /* each format's paragraph: its name, then its help with the lines after the first indented */
    for (size_t i = 0; i < EXPORT_NFORMATS; i++) {
        fprintf(out, "  %-4s  ", export_formats[i].name);
        for (const char *p = export_formats[i].help; *p != '\0'; p++) {
            if (*p == '\n')
                fputs("\n        ", out);
            else
                fputc(*p, out);
        }
        fputc('\n', out);
    }
    fprintf(out,
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
            "Every extent's CRC-32C is checked as its data is read. A damaged extent (checksum\n"
            "mismatch, data file missing or cut short) stops the export with an error naming\n"
            "the object, the extent and its bytes; the object's file is not written (nor the\n"
            "HDF5 file), and the files already listed are complete and checked. With --partial,\n"
            "a damaged extent reads as zeros instead, named in a warning on standard error.\n"
            "\n"
            "Options:\n"
            "  -f, --format FMT   %s (default %s)\n"
            "  -o, --output OUT   directory for the files (default: the current directory;\n"
            "                     created if missing); hdf5: a file name ending in .h5 or\n"
            "                     .hdf5 is the file itself\n"
            "      --force        overwrite existing files\n"
            "  -p, --partial      export what is intact: an incomplete drain (only the objects\n"
            "                     of the ranks drained so far, with their data from those\n"
            "                     ranks), damaged extents as zeros (each named on stderr)\n"
            "  -q, --quiet        no progress and no list of files\n" CMD_READ_HELP
            "  -h, --help         show this help\n"
            "\n"
            "Exit status: 0 every object exported; 1 the drain cannot be read, is incomplete,\n"
            "a file exists (without --force) or cannot be written, or an extent is damaged\n"
            "(without --partial); 2 bad command line.\n",
            list, EXPORT_DEFAULT);
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

void cmd_export_report(const pdcbb_drain_t *m, uint32_t written, uint64_t bytes,
                       const char *where)
{
    char h[32], damaged[96] = "";
    pdcbb_drain_read_stats_t st;
    cmd_human(bytes, h, sizeof(h));
    pdcbb_drain_read_stats(m, &st);
    if (st.damaged > 0)
        snprintf(damaged, sizeof(damaged),
                 " (--partial: %" PRIu64 " damaged extent%s read as zeros)", st.damaged,
                 st.damaged == 1 ? "" : "s");
    fprintf(stderr, "pdcbb export: %" PRIu32 " object%s (%s) written to %s%s%s\n", written,
            written == 1 ? "" : "s", h, where,
            m->complete ? "" : " (incomplete drain: only the ranks drained so far)", damaged);
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

/*
 * Object o (of shape shape) as format f into path: f's header, then its elements, read slab by
 * slab, under a temporary name that is synced and renamed. 0, or -1 after printing why; no
 * file is left behind then.
 */
static int export_object(const export_format_t *f, pdcbb_drain_t *m, const pdcbb_drain_object_t *o,
                         const uint64_t *shape, const char *path, bool quiet, cmd_progress_t *prog,
                         uint64_t *done_bytes, uint64_t total)
{
    uint64_t zero[PDCBB_REGION_NDIM_MAX] = {0};
    char tmp[PATH_MAX + 32], hdr[2048];
    size_t hl = 0;
    bool empty = false;

    /* before the file exists: the header's warning comes first */
    if (f->header != NULL && f->header(o, shape, quiet, hdr, sizeof(hdr), &hl) != 0)
        return -1;
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    export_sink_t sink = {open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666), tmp};
    if (sink.fd < 0) {
        fprintf(stderr, "pdcbb export: cannot create %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    int rc = hl > 0 ? export_write(hdr, hl, NULL, &sink) : 0;
    for (uint32_t d = 0; d < o->ndim; d++)
        empty |= shape[d] == 0;
    if (rc == 0 && !empty) {
        pdcbb_box_t box;
        if (pdcbb_box_make(&box, o->ndim, zero, shape) != PDCBB_OK)
            rc = -1;
        else
            rc = cmd_read_slabs("export", m, o, &box, export_write, &sink, prog, done_bytes, total);
    }
    if (rc == 0 && fsync(sink.fd) != 0 && errno != EINVAL) {
        fprintf(stderr, "pdcbb export: cannot write %s: %s\n", tmp, strerror(errno));
        rc = -1;
    }
    if (close(sink.fd) != 0 && rc == 0) {
        fprintf(stderr, "pdcbb export: cannot write %s: %s\n", tmp, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        fprintf(stderr, "pdcbb export: cannot rename %s to %s: %s\n", tmp, path, strerror(errno));
        rc = -1;
    }
    if (rc != 0)
        unlink(tmp);
    return rc;
}

int cli_cmd_export(int argc, char **argv)
{
    enum { OPT_FORCE = 1000 };
    static const struct option opts[] = {
        {"partial", no_argument, NULL, 'p'},
        CMD_READ_LONGOPTS,
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, OPT_FORCE},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cmd_read_t rd = {0};
    int bad;
    bool force = false, quiet = false;
    const export_format_t *f = export_format_find(EXPORT_DEFAULT);
    const char *outdir = ".", *output = NULL;
    int c, status = 1;
    export_item_t *items = NULL;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":pf:o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': rd.partial = true; break;
        case 'f':
            if ((f = export_format_find(optarg)) == NULL) {
                char list[128];
                fprintf(stderr, "pdcbb export: bad value for --format: '%s' (expected %s)\n",
                        optarg, export_format_names(", ", " or ", list, sizeof(list)));
                return CLI_EXIT_USAGE;
            }
            break;
        case 'o': outdir = output = optarg; break;
        case OPT_FORCE: force = true; break;
        case 'q': quiet = true; break;
        case 'h': export_usage(stdout); return 0;
        default:
            if ((bad = cmd_read_opt("export", c, optarg, argv, &rd)) != 0)
                return bad;
            break;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "pdcbb export: %s (see pdcbb export --help)\n",
                optind >= argc ? "missing the drain directory DIR" : "too many arguments");
        return CLI_EXIT_USAGE;
    }
    pdcbb_drain_t *m = cmd_open("export", argv[optind], &rd);
    if (m == NULL)
        return 1;
    if (f->drain != NULL) {
        status = f->drain(f, m, output, force, quiet);
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
    const char *ext = f->ext;
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
        uint64_t shape[PDCBB_REGION_NDIM_MAX];
        if (pdcbb_drain_object_shape(m, o, shape) != PDCBB_OK) {
            fprintf(stderr, "pdcbb export: object '%s': its size overflows\n", pdcbb_esc(o->name));
            goto done;
        }
        if (o->ndim == 0) {
            if (!quiet)
                fprintf(stderr,
                        "pdcbb export: object '%s' has no dimensions and no data: "
                        "nothing to write\n",
                        pdcbb_esc(o->name));
            continue;
        }
        if (export_object(f, m, o, shape, items[i].path, quiet, &prog, &done_bytes, total) != 0) {
            if (written > 0)
                fprintf(stderr, "pdcbb export: object '%s' not written; the %" PRIu32
                                " file%s listed before %s complete and checked\n",
                        pdcbb_esc(o->name), written, written == 1 ? "" : "s",
                        written == 1 ? "is" : "are");
            goto done;
        }
        written++;
        if (!quiet)
            printf("%s\n", items[i].path);
    }
    cmd_progress(&prog, done_bytes, total, true);
    if (!quiet)
        cmd_export_report(m, written, done_bytes, outdir);
    status = fflush(stdout) == 0 ? 0 : 1;
done:
    free(items);
    pdcbb_drain_free(m);
    return status;
}
