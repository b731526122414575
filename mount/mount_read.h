/*
 * mount_read.h - how the mount answers reads of its files (pdcbb_mount.c): from a read-ahead
 * window of one file, which is either the daemon's data file of this node (spliced from, no
 * copy in the mount) or bytes fetched with a transfer.
 */
#ifndef MOUNT_READ_H
#define MOUNT_READ_H

#define FUSE_USE_VERSION 34
#include <fuse3/fuse_lowlevel.h>
#include <stdint.h>

#include "pdc.h"
#include "pdcbb_error.h"

/* Start and stop the thread that answers reads from the data files (before the first read;
 * before the session goes). */
void mount_read_start(void);
void mount_read_stop(void);

/* Forget what the window holds of file ino (it was written, cut, opened or removed here). */
void mount_read_drop(uint64_t ino);

/* Answer req, a read of [from, from + size) of file ino (object obj, end bytes long, size > 0
 * and from + size <= end): from the window, filled first if it does not hold them, with more
 * than asked when the read is sequential (goes on where the last one ended). PDCBB_OK once
 * answered; else the error, and req is not answered. */
pdcbb_err_t mount_read_reply(fuse_req_t req, pdcid_t obj, uint64_t ino, uint64_t from, size_t size,
                             uint64_t end, int sequential);

#endif
