/*
 * mount_listing.h - a directory listing of the mount, read whole at opendir (readdir's offsets
 * are indexes into it), and the readdir reply built from it: one place for both the job's tree
 * (pdcbb_mount.c) and the .pdc view (mount_pdc_view.c).
 */
#ifndef MOUNT_LISTING_H
#define MOUNT_LISTING_H

#define FUSE_USE_VERSION 34
#include <fuse3/fuse_lowlevel.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pdcbb_error.h"

typedef struct mount_listing {
    struct mount_dirent {
        uint64_t ino;
        mode_t type; /* S_IFDIR, S_IFREG or S_IFLNK */
        char *name;
    } * e;
    size_t n, cap;
} mount_listing_t;

/* A new, empty listing (NULL: out of memory). */
mount_listing_t *mount_listing_new(void);
/* Add an entry (name of len bytes, copied): 0, or ENOMEM. */
int mount_listing_add(mount_listing_t *l, uint64_t ino, mode_t type, const char *name, size_t len);
void mount_listing_free(mount_listing_t *l);
/* Directory dir of the job's tree, from its daemon (NS_READDIR, in pages), into *out. */
pdcbb_err_t mount_listing_read_ns(uint64_t dir, mount_listing_t **out);
/* Answer a readdir of directory ino from l: ".", "..", then the entries, from offset off. */
void mount_listing_reply(fuse_req_t req, uint64_t ino, const mount_listing_t *l, size_t size,
                         off_t off);

#endif
