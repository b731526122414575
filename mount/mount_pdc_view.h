/*
 * mount_pdc_view.h - the job's PDC containers and objects, read-only, under the mount's
 * `.pdc/` (mount_pdc_view.c; docs/USER-GUIDE.md "Files through the mount").
 *
 *   $PDCBB_MOUNT/.pdc/<container>/<object>   the object's elements, row-major, as bytes
 *
 * `.pdc` is not listed in the root (so `cp -r`, `du` and `tar` of the mount do not copy every
 * object twice) but can be entered by name, as NFS filers keep `.snapshot`. The job's own files
 * (container pdcbb.files) are not shown again. Names are the PDC names with '%' and '/' (and a
 * leading '.' of "." or "..") written as %25, %2F and %2E. Entries are made at lookup and
 * readdir time from the daemons (every node sees the same), and have inos of their own
 * (PDCBB_VIEW_INO_KIND in the top 4 bits), so they never meet the namespace's.
 *
 * Every function returns false when the inode or name is not the view's (the caller goes on),
 * true when it answered the request itself.
 */
#ifndef MOUNT_PDC_VIEW_H
#define MOUNT_PDC_VIEW_H

#define FUSE_USE_VERSION 34
#include <fuse3/fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

#include "pdc.h"

#define PDCBB_VIEW_NAME ".pdc"

/* Set up: the PDC instance, the owner shown, the kernel's attribute timeout. */
void view_init(pdcid_t pdc, uid_t uid, gid_t gid, double attr_timeout);
/* Is ino the view's (its directory or an entry in it)? */
bool view_owns(uint64_t ino);
/* Is (parent, name) the view's place ("/.pdc", or under it)? */
bool view_name(uint64_t parent, const char *name);

bool view_lookup(fuse_req_t req, uint64_t parent, const char *name);
bool view_getattr(fuse_req_t req, uint64_t ino);
bool view_opendir(fuse_req_t req, uint64_t ino, struct fuse_file_info *fi);
bool view_readdir(fuse_req_t req, uint64_t ino, size_t size, off_t off, struct fuse_file_info *fi);
bool view_releasedir(fuse_req_t req, uint64_t ino, struct fuse_file_info *fi);
bool view_open(fuse_req_t req, uint64_t ino, struct fuse_file_info *fi);
bool view_read(fuse_req_t req, uint64_t ino, size_t size, off_t off, struct fuse_file_info *fi);
bool view_release(fuse_req_t req, uint64_t ino, struct fuse_file_info *fi);

#endif
