/*
 * mount_io.h - region transfers of objects, from start to wait: how the mount's files
 * (pdcbb_mount.c, mount_read.c, the writer thread of mount_write.c) and the .pdc view
 * (mount_pdc_view.c) move bytes.
 */
#ifndef MOUNT_IO_H
#define MOUNT_IO_H

#include <stdint.h>

#include "pdc.h"
#include "pdcbb_error.h"
#include "pdcbb_region.h"

/* One transfer: the box (off, size; ndim dimensions) of obj, to or from buf, packed. */
typedef struct mount_xfer {
    pdcid_t obj;
    void *buf;
    uint32_t ndim;
    const uint64_t *off, *size;
} mount_xfer_t;

#define MOUNT_XFER_MAX 8

/* Move t[0..n) (n <= MOUNT_XFER_MAX), started together (PDCregion_transfer_start_all: one
 * message per daemon, the pieces in this order); PDCBB_OK or the library's error (the thread's
 * last error says more). */
static inline pdcbb_err_t mount_transfers(pdc_access_t access, unsigned n, const mount_xfer_t *t)
{
    static const uint64_t zero[PDCBB_REGION_NDIM_MAX] = {0};
    pdcid_t x[MOUNT_XFER_MAX] = {0}, local[MOUNT_XFER_MAX] = {0}, remote[MOUNT_XFER_MAX] = {0};
    int ok = n >= 1 && n <= MOUNT_XFER_MAX;
    for (unsigned i = 0; i < n && ok; i++) {
        local[i] = PDCregion_create(t[i].ndim, (uint64_t *)zero, (uint64_t *)t[i].size);
        remote[i] = PDCregion_create(t[i].ndim, (uint64_t *)t[i].off, (uint64_t *)t[i].size);
        x[i] = local[i] && remote[i]
                   ? PDCregion_transfer_create(t[i].buf, access, t[i].obj, local[i], remote[i])
                   : 0;
        ok = x[i] != 0;
    }
    ok = ok && PDCregion_transfer_start_all(x, (int)n) == SUCCEED &&
         PDCregion_transfer_wait_all(x, (int)n) == SUCCEED;
    pdcbb_err_t rc = ok ? PDCBB_OK : (pdcbb_err_t)PDCbb_last_error();
    if (!ok && rc == PDCBB_OK)
        rc = PDCBB_ERR_IO;
    for (unsigned i = 0; i < n && i < MOUNT_XFER_MAX; i++) {
        if (x[i])
            PDCregion_transfer_close(x[i]);
        if (local[i])
            PDCregion_close(local[i]);
        if (remote[i])
            PDCregion_close(remote[i]);
    }
    return rc;
}

/* One transfer (mount_transfers). */
static inline pdcbb_err_t mount_transfer(pdcid_t obj, pdc_access_t access, void *buf, uint32_t ndim,
                                         const uint64_t *off, const uint64_t *size)
{
    mount_xfer_t t = {obj, buf, ndim, off, size};
    return mount_transfers(access, 1, &t);
}

#endif
