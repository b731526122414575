/*
 * mount_write.h - the mount's request loop and its writer thread (docs/INTERNALS.md "The
 * mount"): libfuse reads each request into one of a few buffers of ours; a write hands its
 * buffer, bytes in place, to the writer thread, which stores the queued writes with one batch
 * of region transfers while the loop reads the next requests. Any request other than a write
 * (or a forget) first waits until every queued write is stored, so it sees them.
 */
#ifndef MOUNT_WRITE_H
#define MOUNT_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "pdc.h"
#include "pdcbb_error.h"

struct fuse_session;

/* What became of one queued write: rc PDCBB_OK, or the library's error and its message. Called
 * on the loop's thread (mount_write_wait, mount_write_reap), in no particular order. */
typedef void (*mount_write_done_fn)(uint64_t ino, uint64_t off, uint64_t len, pdcbb_err_t rc,
                                    const char *msg);

/* Run se until it is unmounted or told to exit (as fuse_session_loop), every write stored
 * before it returns; done is told what became of each queued write, on_init (may be NULL) is
 * called once the kernel's INIT was answered (the filesystem serves from then on). 0, or -1
 * with a message on stderr (no memory, no thread). */
int mount_loop(struct fuse_session *se, mount_write_done_fn done, void (*on_init)(void));

/* From a write request being processed: store len bytes at data (inside the request's buffer)
 * at off of obj (file ino) after the reply. The buffer is the writer thread's until then. */
void mount_write_queue(pdcid_t obj, uint64_t ino, const void *data, uint64_t off, uint64_t len);

/* Wait until every queued write is stored (done called for each). */
void mount_write_wait(void);

/* done for the writes stored so far, without waiting. */
void mount_write_reap(void);

#endif
