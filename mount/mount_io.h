/*
 * mount_io.h - one region transfer of an object, from start to wait: how the mount's files
 * (pdcbb_mount.c) and the .pdc view (mount_pdc_view.c) move bytes.
 */
#ifndef MOUNT_IO_H
#define MOUNT_IO_H

#include <stdint.h>

#include "pdc.h"
#include "pdcbb_error.h"
#include "pdcbb_region.h"

/* Move the box (off, size; ndim dimensions) of obj to or from buf, packed; PDCBB_OK or the
 * library's error (the thread's last error says more). */
static inline pdcbb_err_t mount_transfer(pdcid_t obj, pdc_access_t access, void *buf, uint32_t ndim,
                                         const uint64_t *off, const uint64_t *size)
{
    uint64_t zero[PDCBB_REGION_NDIM_MAX] = {0};
    pdcid_t local = PDCregion_create(ndim, zero, (uint64_t *)size);
    pdcid_t remote = PDCregion_create(ndim, (uint64_t *)off, (uint64_t *)size);
    pdcid_t x = local && remote ? PDCregion_transfer_create(buf, access, obj, local, remote) : 0;
    int ok = x && PDCregion_transfer_start(x) == SUCCEED && PDCregion_transfer_wait(x) == SUCCEED;
    pdcbb_err_t rc = ok ? PDCBB_OK : (pdcbb_err_t)PDCbb_last_error();
    if (!ok && rc == PDCBB_OK)
        rc = PDCBB_ERR_IO;
    if (x)
        PDCregion_transfer_close(x);
    if (local)
        PDCregion_close(local);
    if (remote)
        PDCregion_close(remote);
    return rc;
}

#endif
