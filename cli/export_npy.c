/*
 * export_npy.c - `pdcbb export --format npy`: the header of NumPy's .npy format (version 1.0)
 * before each object's elements. The descr is the PDC type's (pdcbb_type_numpy_descr:
 * PDC_FLOAT -> <f4, PDC_INT64 -> <i8, ...); a type NumPy has none for is raw void elements.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "pdcbb_name.h"
#include "pdcbb_types.h"

/* The .npy header (magic, version 1.0, length, dict, padding to 64 bytes). */
int export_npy_header(const pdcbb_drain_object_t *o, const uint64_t *shape, bool quiet, char *out,
                      size_t len, size_t *hlen)
{
    char descr[32], dict[1024];

    if (!pdcbb_type_numpy_descr(o->type, o->element_size, descr, sizeof(descr)) && !quiet)
        fprintf(stderr,
                "pdcbb export: warning: object '%s' (%s) has no NumPy type: "
                "written as '%s' elements\n",
                pdcbb_esc(o->name), pdcbb_drain_type_name(o->type), descr);
    size_t n = (size_t)snprintf(dict, sizeof(dict),
                                "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (uint32_t d = 0; d < o->ndim; d++)
        n += (size_t)snprintf(dict + n, sizeof(dict) - n, "%" PRIu64 ",%s", shape[d],
                              d + 1 < o->ndim ? " " : "");
    if (o->ndim > 1)
        n--; /* (3, 4) rather than (3, 4,) */
    n += (size_t)snprintf(dict + n, sizeof(dict) - n, "), }");
    size_t total = 10 + n + 1; /* magic 6 + version 2 + length 2 + dict + '\n' */
    size_t padded = (total + 63) / 64 * 64;
    if (padded > len) {
        fprintf(stderr, "pdcbb export: object '%s': its .npy header is too long\n",
                pdcbb_esc(o->name));
        return -1;
    }
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    uint16_t hl = (uint16_t)(padded - 10);
    out[8] = (char)(hl & 0xff);
    out[9] = (char)(hl >> 8);
    memcpy(out + 10, dict, n);
    memset(out + 10 + n, ' ', padded - 10 - n - 1);
    out[padded - 1] = '\n';
    *hlen = padded;
    return 0;
}
