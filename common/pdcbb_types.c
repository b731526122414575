/*
 * pdcbb_types.c - the table of PDC's element types (see pdcbb_types.h) and what is derived from
 * a row without a library: names, NumPy descrs.
 */
#include "pdcbb_types.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* In pdc_var_type_t order (include/pdc.h.in); sizes as PDC's get_size_by_dtype. */
static const pdcbb_type_info_t types[PDCBB_TYPES_N] = {
    {0, "PDC_INT", sizeof(int), PDCBB_KIND_INT},
    {1, "PDC_FLOAT", sizeof(float), PDCBB_KIND_FLOAT},
    {2, "PDC_DOUBLE", sizeof(double), PDCBB_KIND_FLOAT},
    {3, "PDC_CHAR", sizeof(char), PDCBB_KIND_INT},
    {4, "PDC_STRING", 1, PDCBB_KIND_CHARS},
    {5, "PDC_BOOLEAN", sizeof(bool), PDCBB_KIND_BOOL},
    {6, "PDC_SHORT", sizeof(short), PDCBB_KIND_INT},
    {7, "PDC_UINT", sizeof(unsigned), PDCBB_KIND_UINT},
    {8, "PDC_INT64", sizeof(int64_t), PDCBB_KIND_INT},
    {9, "PDC_UINT64", sizeof(uint64_t), PDCBB_KIND_UINT},
    {10, "PDC_INT16", sizeof(int16_t), PDCBB_KIND_INT},
    {11, "PDC_INT8", sizeof(int8_t), PDCBB_KIND_INT},
    {12, "PDC_UINT8", sizeof(uint8_t), PDCBB_KIND_UINT},
    {13, "PDC_UINT16", sizeof(uint16_t), PDCBB_KIND_UINT},
    {14, "PDC_INT32", sizeof(int32_t), PDCBB_KIND_INT},
    {15, "PDC_UINT32", sizeof(uint32_t), PDCBB_KIND_UINT},
    {16, "PDC_LONG", sizeof(long), PDCBB_KIND_INT},
    {17, "PDC_VOID_PTR", sizeof(void *), PDCBB_KIND_OPAQUE},
    {18, "PDC_SIZE_T", sizeof(size_t), PDCBB_KIND_UINT},
};

_Static_assert((char)-1 < 0, "PDC_CHAR is a signed integer here: char must be signed");

const pdcbb_type_info_t *pdcbb_type_info(int32_t type)
{
    return type >= 0 && type < PDCBB_TYPES_N ? &types[type] : NULL;
}

int32_t pdcbb_type_parse(const char *name)
{
    for (int32_t i = 0; name != NULL && i < PDCBB_TYPES_N; i++)
        if (strcmp(types[i].name, name) == 0)
            return i;
    return -1;
}

int pdcbb_type_numpy_descr(int32_t type, uint32_t element_size, char *out, size_t len)
{
    static const char kinds[] = {
        [PDCBB_KIND_INT] = 'i',  [PDCBB_KIND_UINT] = 'u', [PDCBB_KIND_FLOAT] = 'f',
        [PDCBB_KIND_BOOL] = 'b', [PDCBB_KIND_CHARS] = 0,  [PDCBB_KIND_OPAQUE] = 0,
    };
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    const char order = '>';
#else
    const char order = '<';
#endif
    const pdcbb_type_info_t *t = pdcbb_type_info(type);

    if (t == NULL || kinds[t->kind] == 0 || t->size != element_size) {
        snprintf(out, len, "|V%" PRIu32, element_size);
        return 0;
    }
    snprintf(out, len, "%c%c%" PRIu32, element_size == 1 ? '|' : order, kinds[t->kind],
             element_size);
    return 1;
}
