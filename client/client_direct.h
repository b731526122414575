/*
 * client_direct.h - region bytes moved by the client itself, for daemons of its own node
 * (DATA_DIRECT, docs/PROTOCOL.md).
 *
 * Through UCX a write costs two copies on the node (the daemon pulls the bytes into its memory,
 * then writes them into the object's data file) where a plain write(2) costs one. A client on
 * the daemon's node can instead write the data file itself: the daemon checks the regions and
 * reserves the capacity first, the client pwrite()s, then tells the daemon it is done. Reads
 * are one pread() after the daemon checked them. The client uses a daemon's directory only
 * when the directory it opens by the daemon's path is the very one the daemon has (same st_dev
 * and st_ino), and each file only with the identity the daemon answered, so a daemon of
 * another node (or another mount namespace) is always reached through UCX.
 *
 * PDCBB_DIRECT=0 in the environment turns the path off (every transfer goes through UCX).
 * Everything runs under the library lock.
 */
#ifndef CLIENT_DIRECT_H
#define CLIENT_DIRECT_H

#include <stdint.h>

#include "pdcbb_csum.h"
#include "pdcbb_error.h"
#include "pdcbb_region.h"

/* Non-zero when region bytes for daemon can move directly (asks the daemon once). */
int client_direct_usable(unsigned daemon);
/*
 * Move the elements of box (in the coordinates of an object of ndim dims, elements of unit
 * bytes) between data (packed row-major) and the data file of obj on daemon, which must have
 * the identity dev/ino: write if csum is not NULL, else read (elements past the end of the file
 * read as zero). A write adds the checksum updates of the blocks it writes to csum
 * (pdcbb_csum_pwrite: the bytes are checksummed here, when they are accepted), for DONE. The
 * error names the cause.
 */
pdcbb_err_t client_direct_io(unsigned daemon, uint64_t obj, uint64_t dev, uint64_t ino,
                             pdcbb_csum_list_t *csum, const pdcbb_box_t *box, uint32_t ndim,
                             const uint64_t *dims, size_t unit, uint8_t *data);
/* A new descriptor (read-write if write, else read-only) of the data file of obj on daemon
 * (client_direct_usable), checked to have the identity dev/ino the daemon answered; -1 with
 * *rc (the error names the cause). */
int client_direct_open(unsigned daemon, uint64_t obj, uint64_t dev, uint64_t ino, int write,
                       pdcbb_err_t *rc);
/*
 * Close the data files opened since the last call. Called after each message's I/O: an open
 * descriptor would keep a deleted object's file, its disk blocks and its page cache alive
 * after the daemon removed it.
 */
void client_direct_files_close(void);
/* Close every descriptor and forget what the daemons answered (PDCclose). */
void client_direct_close(void);

#endif
