/*
 * mount_kernel.c - FUSE_DIRECT_IO_ALLOW_MMAP in the INIT reply (mount_kernel.h).
 *
 * libfuse 3.14 answers INIT with the flags it knows. The kernel tells in INIT's flags2 (with
 * FUSE_INIT_EXT) whether it offers FUSE_DIRECT_IO_ALLOW_MMAP (bit 36 of the flags, bit 4 of
 * flags2); when it does, the reply libfuse writes is given the bit on its way to /dev/fuse (a
 * custom writev). The kernel takes it only if it offered it, and only in the INIT reply.
 */
#define FUSE_USE_VERSION 34
#include "mount_kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse3/fuse_lowlevel.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define ALLOW_MMAP_FLAGS2 (1u << (36 - 32)) /* FUSE_DIRECT_IO_ALLOW_MMAP */

static uint64_t init_unique; /* the INIT request, while its reply is due */
static int kernel_offers;    /* INIT's flags2 had the bit */
static int agreed;           /* the reply carried it */

void mount_kernel_saw(const struct fuse_buf *fb)
{
    const struct fuse_in_header *h = fb->mem;
    if (fb->size < sizeof(*h) + offsetof(struct fuse_init_in, flags2) + sizeof(uint32_t) ||
        h->opcode != FUSE_INIT)
        return;
    const struct fuse_init_in *in = (const void *)(h + 1);
    init_unique = h->unique;
    kernel_offers = (in->flags & FUSE_INIT_EXT) && (in->flags2 & ALLOW_MMAP_FLAGS2);
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
    (void)userdata;
    const struct fuse_out_header *out = iov[0].iov_base;
    if (init_unique != 0 && iov[0].iov_len >= sizeof(*out) && out->unique == init_unique) {
        init_unique = 0;
        struct fuse_init_out reply;
        if (kernel_offers && out->error == 0 && count == 2 && iov[1].iov_len <= sizeof(reply) &&
            iov[1].iov_len >= offsetof(struct fuse_init_out, flags2) + sizeof(uint32_t)) {
            memcpy(&reply, iov[1].iov_base, iov[1].iov_len);
            if (reply.flags & FUSE_INIT_EXT) {
                reply.flags2 |= ALLOW_MMAP_FLAGS2;
                struct iovec v[2] = {iov[0], {&reply, iov[1].iov_len}};
                ssize_t res = writev(fd, v, 2);
                agreed = res >= 0;
                return res;
            }
        }
    }
    return writev(fd, iov, count);
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
    (void)userdata;
    return read(fd, buf, len);
}

static ssize_t io_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                         unsigned int flags, void *userdata)
{
    (void)userdata;
    return splice(fdin, offin, fdout, offout, len, flags);
}

int mount_kernel_attach(struct fuse_session *se)
{
    static const struct fuse_custom_io io = {.writev = io_writev,
                                             .read = io_read,
                                             .splice_receive = io_splice,
                                             .splice_send = io_splice};
    int rc = fuse_session_custom_io(se, &io, fuse_session_fd(se));
    if (rc != 0)
        fprintf(stderr, "pdcbb_mount: cannot watch the FUSE device: %s\n", strerror(-rc));
    return rc == 0 ? 0 : -1;
}

int mount_kernel_direct_mmap(void)
{
    return agreed;
}
