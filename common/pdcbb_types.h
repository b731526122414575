/*
 * pdcbb_types.h - PDC's element types (pdc_var_type_t: PDC_INT = 0 .. PDC_SIZE_T = 18) in one
 * table, one row per type: its name, its element size on this host and what kind of value it
 * holds. Everything that maps a PDC type to something else derives it from the row: the wire
 * protocol's sizes and names (pdcbb_type_size, pdcbb_type_name), the drain's type names, the
 * classes data queries compare in, and every `pdcbb export` format: NumPy's descr for npy
 * (pdcbb_type_numpy_descr, here) and the HDF5 type for hdf5 (cli/export_hdf5.c, from the kind
 * and size). A new type is a new row; tests/unit/test_types.c walks the table.
 *
 * Pure functions on static data: callable from any thread.
 */
#ifndef PDCBB_TYPES_H
#define PDCBB_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* What a type's elements are. */
typedef enum pdcbb_type_kind {
    PDCBB_KIND_INT,    /* signed integer (PDC_CHAR too: char is signed on every supported host) */
    PDCBB_KIND_UINT,   /* unsigned integer */
    PDCBB_KIND_FLOAT,  /* IEEE 754 binary floating point */
    PDCBB_KIND_BOOL,   /* C bool: 0 or 1 in one byte */
    PDCBB_KIND_CHARS,  /* characters of a string, one byte each (PDC_STRING) */
    PDCBB_KIND_OPAQUE, /* bytes with no value pdcbb can read (PDC_VOID_PTR: addresses) */
} pdcbb_type_kind_t;

typedef struct pdcbb_type_info {
    int32_t type;     /* the pdc_var_type_t value (the row's index) */
    const char *name; /* PDC's enumerator name, "PDC_INT" */
    uint32_t size;    /* element size on this host: PDC's get_size_by_dtype, but
                       * PDC_STRING's is 1 (a character; PDC says sizeof(char *)) */
    pdcbb_type_kind_t kind;
} pdcbb_type_info_t;

/* Number of rows: pdc_var_type_t values 0 .. PDCBB_TYPES_N - 1 (PDC_TYPE_COUNT). */
#define PDCBB_TYPES_N 19

/* The row of a pdc_var_type_t value, or NULL for any other value (PDC_UNKNOWN = -1 too). */
const pdcbb_type_info_t *pdcbb_type_info(int32_t type);
/* The type named name ("PDC_INT"), or -1. */
int32_t pdcbb_type_parse(const char *name);

/*
 * NumPy's descr of elements of type type and element_size bytes, into out (len bytes): the
 * byte order ('<' or '>' as this host's; '|' for one byte), the kind (i, u, f, b) and the
 * size: "<f4", "<i8", "|b1". Types NumPy has no kind for (PDC_STRING, PDC_VOID_PTR, values
 * outside the table) and element sizes other than the type's are "|V<element_size>", raw
 * void elements. Returns 1 when the type has a NumPy kind, 0 for "|V...".
 */
int pdcbb_type_numpy_descr(int32_t type, uint32_t element_size, char *out, size_t len);

#endif
