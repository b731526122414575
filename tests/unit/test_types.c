/*
 * test_types.c - the table of PDC's element types (common/pdcbb_types.h) walked for every
 * pdc_var_type_t value of the public header (include/pdc.h.in): a row of that value with PDC's
 * name and size (get_enum_name_by_dtype, get_size_by_dtype; PDC_STRING is 1 byte a character
 * here), and what each user derives from it: the protocol's and the drain's names and sizes,
 * the class a query compares in, `pdcbb export`'s NumPy descr (npy). The HDF5 types of every
 * PDC type are checked through h5py by tests/bats/112-export-hdf5.bats.
 */
#include <stdio.h>
#include <string.h>

#include "pdc.h"
#include "pdcbb_drain.h"
#include "pdcbb_proto.h"
#include "pdcbb_query.h"
#include "pdcbb_types.h"
#include "unit_check.h"

/* What each type is expected to give, written out (a new type needs its row here too). */
static const struct {
    const char *descr; /* NumPy's, on a little-endian host */
    int qclass;        /* PDCBB_QCLASS_* */
} want[PDC_TYPE_COUNT] = {
    [PDC_INT] = {"<i4", PDCBB_QCLASS_INT},      [PDC_FLOAT] = {"<f4", PDCBB_QCLASS_FLOAT},
    [PDC_DOUBLE] = {"<f8", PDCBB_QCLASS_FLOAT}, [PDC_CHAR] = {"|i1", PDCBB_QCLASS_INT},
    [PDC_STRING] = {"|V1", PDCBB_QCLASS_NONE},  [PDC_BOOLEAN] = {"|b1", PDCBB_QCLASS_UINT},
    [PDC_SHORT] = {"<i2", PDCBB_QCLASS_INT},    [PDC_UINT] = {"<u4", PDCBB_QCLASS_UINT},
    [PDC_INT64] = {"<i8", PDCBB_QCLASS_INT},    [PDC_UINT64] = {"<u8", PDCBB_QCLASS_UINT},
    [PDC_INT16] = {"<i2", PDCBB_QCLASS_INT},    [PDC_INT8] = {"|i1", PDCBB_QCLASS_INT},
    [PDC_UINT8] = {"|u1", PDCBB_QCLASS_UINT},   [PDC_UINT16] = {"<u2", PDCBB_QCLASS_UINT},
    [PDC_INT32] = {"<i4", PDCBB_QCLASS_INT},    [PDC_UINT32] = {"<u4", PDCBB_QCLASS_UINT},
    [PDC_LONG] = {"<i8", PDCBB_QCLASS_INT},     [PDC_VOID_PTR] = {"|V8", PDCBB_QCLASS_NONE},
    [PDC_SIZE_T] = {"<u8", PDCBB_QCLASS_UINT},
};

/* descr with '<' as this host's byte order. */
static const char *host_order(const char *descr, char *buf, size_t len)
{
    snprintf(buf, len, "%s", descr);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    if (buf[0] == '<')
        buf[0] = '>';
#endif
    return buf;
}

#define CHECK_T(t, expr)                                                                           \
    do {                                                                                           \
        int before_ = unit_failures;                                                               \
        CHECK(expr);                                                                               \
        if (unit_failures != before_)                                                              \
            fprintf(stderr, "    type %d (%s)\n", (int)(t), get_enum_name_by_dtype(t));            \
    } while (0)

int main(void)
{
    char d[32], w[32];

    CHECK(PDCBB_TYPES_N == PDC_TYPE_COUNT && PDCBB_TYPE_COUNT == PDC_TYPE_COUNT);
    for (int t = 0; t < PDC_TYPE_COUNT; t++) {
        const pdcbb_type_info_t *r = pdcbb_type_info(t);
        pdc_var_type_t pt = (pdc_var_type_t)t;
        CHECK_T(pt, r != NULL && r->type == t && r->name != NULL);
        if (r == NULL || r->type != t || r->name == NULL)
            continue;
        /* PDC's name and size */
        CHECK_T(pt, strcmp(r->name, get_enum_name_by_dtype(pt)) == 0);
        CHECK_T(pt, r->size == (t == PDC_STRING ? 1 : get_size_by_dtype(pt)));
        CHECK_T(pt, (r->kind == PDCBB_KIND_CHARS) == (t == PDC_STRING));
        CHECK_T(pt, pdcbb_type_parse(r->name) == t);
        /* the protocol's and the drain's names and sizes are the table's */
        CHECK_T(pt, pdcbb_type_size(t) == r->size && strcmp(pdcbb_type_name(t), r->name) == 0);
        CHECK_T(pt, strcmp(pdcbb_drain_type_name(t), r->name) == 0 &&
                        pdcbb_drain_type_parse(r->name) == t);
        /* what a query compares it as */
        CHECK_T(pt, pdcbb_query_class(t) == want[t].qclass);
        /* npy: its descr, and raw void elements when the element size is not the type's */
        CHECK_T(pt, want[t].descr != NULL);
        if (want[t].descr == NULL)
            continue;
        CHECK_T(pt, pdcbb_type_numpy_descr(t, r->size, d, sizeof(d)) == (d[1] != 'V'));
        CHECK_T(pt, strcmp(d, host_order(want[t].descr, w, sizeof(w))) == 0);
        CHECK_T(pt, pdcbb_type_numpy_descr(t, r->size + 1, d, sizeof(d)) == 0);
        snprintf(w, sizeof(w), "|V%u", r->size + 1);
        CHECK_T(pt, strcmp(d, w) == 0);
    }
    /* values outside the enum have no row */
    static const int outside[] = {PDC_UNKNOWN, PDC_TYPE_COUNT, 1000, -1000};
    for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
        int t = outside[i];
        CHECK_T(t, pdcbb_type_info(t) == NULL);
        CHECK_T(t, pdcbb_type_size(t) == 0 && strcmp(pdcbb_type_name(t), "PDC_UNKNOWN") == 0);
        CHECK_T(t, pdcbb_drain_type_name(t) == NULL);
        CHECK_T(t, pdcbb_query_class(t) == PDCBB_QCLASS_NONE);
        CHECK_T(t, pdcbb_type_numpy_descr(t, 4, d, sizeof(d)) == 0 && strcmp(d, "|V4") == 0);
    }
    CHECK(pdcbb_type_parse("PDC_UNKNOWN") == -1 && pdcbb_type_parse(NULL) == -1 &&
          pdcbb_type_parse("pdc_int") == -1);
    UNIT_DONE("test_types");
}
