/*
 * mount_kernel.h - what the mount and the kernel agree on beyond what libfuse 3.14 (Debian 12's)
 * knows: FUSE_DIRECT_IO_ALLOW_MMAP (Linux 6.6 and later), which lets a file opened with
 * direct_io be mapped shared. With it, files opened read-only are read past the kernel's page
 * cache too (pdcbb_mount.c open_reply); without it (older kernels), only write-only ones.
 */
#ifndef MOUNT_KERNEL_H
#define MOUNT_KERNEL_H

#include <stdint.h>

struct fuse_session;
struct fuse_buf;

/* Watch se's replies (fuse_session_custom_io on its /dev/fuse descriptor), after
 * fuse_session_mount: 0, or -1 with a message on stderr. */
int mount_kernel_attach(struct fuse_session *se);

/* Every request the loop reads, before libfuse processes it (the INIT request says what the
 * kernel offers). */
void mount_kernel_saw(const struct fuse_buf *fb);

/* 1 if INIT agreed that direct_io files may be mapped shared. */
int mount_kernel_direct_mmap(void);

#endif
