/*
 * export.h - the formats of `pdcbb export`. Each is one row of export_formats[] (cmd_export.c),
 * which `--format`, its error message and `--help` are made from, and, unless it needs no code
 * of its own (raw), one file: export_npy.c, export_hdf5.c. A format either writes a file per
 * object (cmd_export.c names, writes, syncs and renames the files, putting what the format's
 * header function gives before each object's elements) or writes the whole drain itself.
 * Element types come from the one table of PDC types (common/pdcbb_types.h).
 */
#ifndef PDCBB_EXPORT_H
#define PDCBB_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pdcbb_drain.h"

typedef struct export_format export_format_t;

/*
 * A per-object format's header: the bytes that go before the elements of object o (of shape
 * shape: pdcbb_drain_object_shape) into buf (len bytes), their number into *hlen. May print a
 * warning ("pdcbb export: warning: ...") unless quiet. 0, or -1 after printing why.
 */
typedef int (*export_header_fn)(const pdcbb_drain_object_t *o, const uint64_t *shape, bool quiet,
                                char *buf, size_t len, size_t *hlen);
/*
 * A whole-drain format: the export of the open drain m as format fmt (fmt->ext: the extension
 * of its file). output is -o (NULL: none). Never overwrites a file without force; leaves no file
 * behind on failure. Returns the exit status (0 ok, 1 failure, printed as "pdcbb export: ...").
 */
typedef int (*export_drain_fn)(const export_format_t *fmt, pdcbb_drain_t *m, const char *output,
                               bool force, bool quiet);

struct export_format {
    const char *name;        /* --format NAME */
    const char *ext;         /* of each object's file, or of the whole drain's (".npy") */
    export_header_fn header; /* a per-object format's header; NULL: none (raw) */
    export_drain_fn drain;   /* a whole-drain format's writer; NULL: a per-object format */
    const char *help;        /* its paragraph of --help, lines without indentation */
};

/* export_npy.c: NumPy's .npy, version 1.0 (dict with descr, fortran_order, shape). */
int export_npy_header(const pdcbb_drain_object_t *o, const uint64_t *shape, bool quiet, char *buf,
                      size_t len, size_t *hlen);

/* export_hdf5.c: one HDF5 file. output ending in .h5 or .hdf5 is the file itself, anything else
 * a directory (created if missing) that gets <drain directory name><fmt->ext>. Every extent's
 * CRC-32C is checked as it is read (cmd_read_slabs); writes a temporary name and renames it. */
int export_hdf5(const export_format_t *fmt, pdcbb_drain_t *m, const char *output, bool force,
                bool quiet);

/* cmd_export.c: the last line of an export on standard error, "pdcbb export: N objects (SIZE)
 * written to WHERE", saying when m is an incomplete drain. bytes: the data written. */
void cmd_export_report(const pdcbb_drain_t *m, uint32_t written, uint64_t bytes, const char *where);

#endif
