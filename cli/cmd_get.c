/*
 * cmd_get.c - `pdcbb get`: one object of a drained job (or a region of it) as raw bytes,
 * row-major, to standard output or a file. The object is named by its name or id; the data is
 * read in slabs (cmd_read_slabs, every extent checked against its CRC-32C), so objects of any
 * size work in bounded memory; a failed read removes the output file.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_data.h"
#include "pdcbb_drain.h"

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
        fprintf(stderr, "pdcbb %s: %" PRIu32 " objects are named '%s' (ids:", cmd, n,
                pdcbb_esc(name));
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
        fprintf(stderr, "pdcbb %s: no object '%s' in %s (see pdcbb ls %s)\n", cmd, pdcbb_esc(name),
                m->dir, m->dir);
    return o;
}

static void get_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb get [--partial] [--owner USER] [--job ID] [-o FILE] DIR OBJECT [REGION]\n"
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
            "memory. Every extent the data needs is checked whole against its CRC-32C before\n"
            "any of its bytes are written: a damaged one (checksum mismatch, data file missing\n"
            "or cut short) fails the command with an error naming the object, the extent and\n"
            "its bytes, and FILE is removed (what went to standard output before stays there).\n"
            "\n"
            "Options:\n"
            "  -o, --output FILE  write to FILE (created or truncated; '-' is standard output)\n"
            "  -p, --partial      read what is intact: an incomplete drain (data held by ranks\n"
            "                     that have not drained reads as zero), and damaged extents\n"
            "                     as zeros, each named in a warning on standard error\n"
            CMD_READ_HELP
            "  -h, --help         show this help\n"
            "\n"
            "Exit status: 0 written; 1 the drain, the object or its data cannot be read or is\n"
            "damaged, or the output cannot be written; 2 bad command line (including a bad\n"
            "REGION and standard output being a terminal).\n");
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
        fprintf(stderr,
                "pdcbb get: region '%s' has %" PRIu32 " dimension%s, object '%s' has %" PRIu32 "\n",
                text, n, n == 1 ? "" : "s", pdcbb_esc(o->name), o->ndim);
        return -1;
    }
    if (pdcbb_box_make(box, n, off, size) != PDCBB_OK ||
        pdcbb_box_check_within(box, o->ndim, o->dims) != PDCBB_OK) {
        cmd_dims(o->dims, o->ndim, dims, sizeof(dims));
        fprintf(stderr, "pdcbb get: region '%s' lies outside object '%s' (dimensions %s)\n", text,
                pdcbb_esc(o->name), dims);
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
        CMD_READ_LONGOPTS,
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cmd_read_t rd = {0};
    int bad;
    const char *output = NULL;
    int c, status = 1;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":po:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': rd.partial = true; break;
        case 'o': output = optarg; break;
        case 'h': get_usage(stdout); return 0;
        default:
            if ((bad = cmd_read_opt("get", c, optarg, argv, &rd)) != 0)
                return bad;
            break;
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
    pdcbb_drain_t *m = cmd_open("get", dir, &rd);
    if (m == NULL)
        return 1;
    get_out_t out = {STDOUT_FILENO, "standard output"};
    pdcbb_box_t box;
    uint64_t shape[PDCBB_REGION_NDIM_MAX], zero[PDCBB_REGION_NDIM_MAX] = {0};
    const pdcbb_drain_object_t *o = cmd_find_object("get", m, name);
    if (o == NULL)
        goto done;
    if (pdcbb_drain_object_shape(m, o, shape) != PDCBB_OK) {
        fprintf(stderr, "pdcbb get: object '%s': its size overflows\n", pdcbb_esc(o->name));
        goto done;
    }
    if (o->ndim == 0) {
        fprintf(stderr, "pdcbb get: object '%s' has no dimensions: it holds no data\n",
                pdcbb_esc(o->name));
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
            fprintf(stderr, "pdcbb get: object '%s': bad dimensions\n", pdcbb_esc(o->name));
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
