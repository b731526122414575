/*
 * pdc_region.c - region ids (PDCregion_create/close/get_info) and the region helpers PDC
 * exports (check_overlap, PDC_region_overlap_detect, memcpy_subregion, ...), all on the shared
 * box arithmetic of common/pdcbb_region.c.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_transfer.h"

pdcid_t PDCregion_create(psize_t ndims, uint64_t *offset, uint64_t *size)
{
    pdcid_t id = 0;
    pdcbb_box_t box;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK)
        goto out;
    if (ndims < 1 || ndims > PDCBB_REGION_NDIM_MAX || offset == NULL || size == NULL) {
        client_fail(PDCBB_ERR_INVAL,
                    "PDCregion_create: ndims %llu out of range 1..%d, or offset/size NULL",
                    (unsigned long long)ndims, PDCBB_REGION_NDIM_MAX);
        goto out;
    }
    if (pdcbb_box_make(&box, (uint32_t)ndims, offset, size) != PDCBB_OK) {
        for (psize_t d = 0; d < ndims; d++)
            if (size[d] == 0) {
                client_fail(PDCBB_ERR_BAD_REGION, "PDCregion_create: size[%llu] is 0",
                            (unsigned long long)d);
                goto out;
            }
        client_fail(PDCBB_ERR_BAD_REGION, "PDCregion_create: offset + size overflows");
        goto out;
    }
    client_region_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "PDCregion_create: out of memory");
        goto out;
    }
    r->box = box;
    memcpy(r->offset, offset, ndims * sizeof(uint64_t));
    memcpy(r->size, size, ndims * sizeof(uint64_t));
    r->info.ndim = (size_t)ndims;
    r->info.offset = r->offset;
    r->info.size = r->size;
    if ((id = client_handle_new(CLIENT_H_REGION, r)) == 0) {
        free(r);
        client_fail(PDCBB_ERR_NOMEM, "PDCregion_create: out of memory");
        goto out;
    }
    r->info.local_id = id;
out:
    CLIENT_LEAVE();
    return id;
}

perr_t PDCregion_close(pdcid_t region_id)
{
    pdcbb_err_t e;
    perr_t ret = FAIL;
    CLIENT_ENTER();
    client_clear_error();
    if (client_handle_get(region_id, CLIENT_H_REGION, &e) == NULL)
        client_fail(e, "PDCregion_close: %#llx is not a live region id",
                    (unsigned long long)region_id);
    else {
        free(client_handle_remove(region_id, CLIENT_H_REGION));
        ret = SUCCEED;
    }
    CLIENT_LEAVE();
    return ret;
}

void PDCregion_free(struct pdc_region_info *region)
{
    if (region == NULL)
        return;
    free(region->offset);
    free(region->size);
    free(region);
}

struct pdc_region_info *PDCregion_get_info(pdcid_t reg_id)
{
    pdcbb_err_t e;
    CLIENT_ENTER();
    client_clear_error();
    client_region_t *r = client_handle_get(reg_id, CLIENT_H_REGION, &e);
    if (r == NULL)
        client_fail(e, "PDCregion_get_info: %#llx is not a live region id",
                    (unsigned long long)reg_id);
    CLIENT_LEAVE();
    return r ? &r->info : NULL;
}

/* ---------------------------------------------------------------- PDC's exported helpers */

static int make2(int ndim, const uint64_t *o1, const uint64_t *s1, const uint64_t *o2,
                 const uint64_t *s2, pdcbb_box_t *a, pdcbb_box_t *b)
{
    return ndim >= 1 && ndim <= PDCBB_REGION_NDIM_MAX &&
           pdcbb_box_make(a, (uint32_t)ndim, o1, s1) == PDCBB_OK &&
           pdcbb_box_make(b, (uint32_t)ndim, o2, s2) == PDCBB_OK;
}

int check_overlap(int ndim, uint64_t *offset1, uint64_t *size1, uint64_t *offset2,
                  uint64_t *size2)
{
    pdcbb_box_t a, b, x;
    return make2(ndim, offset1, size1, offset2, size2, &a, &b) && pdcbb_box_intersect(&a, &b, &x);
}

int PDC_region_overlap_detect(int ndim, uint64_t *offset1, uint64_t *size1, uint64_t *offset2,
                              uint64_t *size2, uint64_t **output_offset, uint64_t **output_size)
{
    pdcbb_box_t a, b, x;
    *output_offset = NULL;
    *output_size = NULL;
    if (!make2(ndim, offset1, size1, offset2, size2, &a, &b) || !pdcbb_box_intersect(&a, &b, &x))
        return 0;
    uint64_t *both = malloc(2 * (size_t)ndim * sizeof(uint64_t));
    if (both == NULL)
        return 0;
    memcpy(both, x.off, (size_t)ndim * sizeof(uint64_t));
    memcpy(both + ndim, x.size, (size_t)ndim * sizeof(uint64_t));
    *output_offset = both;
    *output_size = both + ndim;
    return 0;
}

int memcpy_subregion(int ndim, uint64_t unit, pdc_access_t access_type, char *buf,
                     uint64_t *size, char *sub_buf, uint64_t *sub_offset, uint64_t *sub_size)
{
    pdcbb_box_t sub;
    if (ndim < 1 || ndim > PDCBB_REGION_NDIM_MAX ||
        pdcbb_box_make(&sub, (uint32_t)ndim, sub_offset, sub_size) != PDCBB_OK)
        return -1;
    return pdcbb_box_copy(&sub, (uint32_t)ndim, size, (size_t)unit, buf, sub_buf,
                          access_type == PDC_WRITE) == PDCBB_OK
               ? 0
               : -1;
}

int memcpy_overlap_subregion(int ndim, uint64_t unit, char *buf, uint64_t *offset,
                             uint64_t *size, char *buf2, uint64_t *offset2, uint64_t *size2,
                             uint64_t *overlap_offset, uint64_t *overlap_size)
{
    pdcbb_box_t a, b;
    (void)overlap_offset; /* the overlap follows from the two boxes */
    (void)overlap_size;
    if (!make2(ndim, offset, size, offset2, size2, &a, &b))
        return -1;
    return pdcbb_box_copy_overlap(&a, buf, &b, buf2, (size_t)unit) < 0 ? -1 : 0;
}

int detect_region_contained(uint64_t *offset, uint64_t *size, uint64_t *offset2,
                            uint64_t *size2, int ndim)
{
    pdcbb_box_t a, b;
    return make2(ndim, offset, size, offset2, size2, &a, &b) && pdcbb_box_contains(&b, &a);
}
