/* prog_util.c - see prog_util.h. */
#include "prog_util.h"

const char *const prog_part_names[4] = {"objstatic", "rstatic", "dynamic", "local"};
const pdc_region_partition_t prog_parts[4] = {PDC_OBJ_STATIC, PDC_REGION_STATIC,
                                              PDC_REGION_DYNAMIC, PDC_REGION_LOCAL};

char prog_xfer_error[1200];

int prog_transfer(pdcid_t obj, pdc_access_t access, void *buf, int ndim, const uint64_t *off,
                  const uint64_t *size)
{
    uint64_t zero[3] = {0, 0, 0};
    pdcid_t local = PDCregion_create((psize_t)ndim, zero, (uint64_t *)size);
    pdcid_t remote = PDCregion_create((psize_t)ndim, (uint64_t *)off, (uint64_t *)size);
    pdcid_t x = local && remote ? PDCregion_transfer_create(buf, access, obj, local, remote) : 0;
    int ok = x && PDCregion_transfer_start(x) == SUCCEED && PDCregion_transfer_wait(x) == SUCCEED;
    if (ok)
        prog_xfer_error[0] = '\0';
    else
        snprintf(prog_xfer_error, sizeof(prog_xfer_error), "%s: %s", PDCbb_last_error_name(),
                 PDCbb_last_error_message());
    if (x)
        PDCregion_transfer_close(x);
    if (local)
        PDCregion_close(local);
    if (remote)
        PDCregion_close(remote);
    return ok;
}

int prog_xfer_rows(pdcid_t obj, uint64_t r0, uint64_t n, uint64_t ncols, void *buf,
                   pdc_access_t acc)
{
    uint64_t loff[2] = {0, 0}, roff[2] = {r0, 0}, size[2] = {n, ncols};
    pdcid_t lreg = PDCregion_create(2, loff, size), rreg = PDCregion_create(2, roff, size);
    pdcid_t req = PDCregion_transfer_create(buf, acc, obj, lreg, rreg);
    int ok = req && PDCregion_transfer_start(req) == SUCCEED &&
             PDCregion_transfer_wait(req) == SUCCEED;
    if (req)
        PDCregion_transfer_close(req);
    PDCregion_close(lreg);
    PDCregion_close(rreg);
    return ok;
}

uint64_t prog_fnv1a(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
