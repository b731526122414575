/*
 * pdc_ns.h - what the mount (mount/pdcbb_mount.c) asks libpdc beyond the PDC API: the job's
 * namespace (the NS_* ops, common/pdcbb_proto.h), each call one request to the daemon holding
 * the directory named (pdcbb_ns_home), and object handles by meta id. Not a public API: it is
 * exported from libpdc for pdcbb's own programs and may change with it.
 *
 * Every function returns PDCBB_OK or a pdcbb error code; on failure the thread's last error
 * (PDCbb_last_error_message) names the call, the daemon and the cause. PDCinit first.
 */
#ifndef PDC_NS_H
#define PDC_NS_H

#include <stddef.h>
#include <stdint.h>

#include "pdc.h"
#include "pdcbb_error.h"
#include "pdcbb_ns.h"
#include "pdcbb_proto.h"

/* An entry's inode, owned by the caller (target copied). */
typedef struct pdcbb_ns_attr {
    uint64_t ino;
    uint32_t kind, mode, uid, gid;
    uint64_t size, mtime_ns, ctime_ns;
    char target[PDCBB_NS_TARGET_MAX + 1]; /* a link's, "" otherwise */
} pdcbb_ns_attr_t;

PDC_EXPORT pdcbb_err_t PDCbb_ns_lookup(uint64_t parent, const char *name, pdcbb_ns_attr_t *out);
/* NS_CREATE; old_ino/old_kind (may be NULL) get what REPLACE replaced (0 if nothing). */
PDC_EXPORT pdcbb_err_t PDCbb_ns_create(uint64_t parent, const char *name, uint32_t flags,
                                       const pdcbb_ns_attr_t *in, pdcbb_ns_attr_t *out,
                                       uint64_t *old_ino, uint32_t *old_kind);
/* Up to max entries of dir after `after` ("" from the start): *entries (malloc'ed, free it)
 * holds *len bytes to walk with pdcbb_ns_dirent_next; *more 1 if there are others. */
PDC_EXPORT pdcbb_err_t PDCbb_ns_readdir(uint64_t dir, const char *after, uint32_t max,
                                        uint8_t **entries, size_t *len, int *more);
/* removed (may be NULL) gets the entry removed. */
PDC_EXPORT pdcbb_err_t PDCbb_ns_unlink(uint64_t parent, const char *name, uint32_t kind,
                                       uint64_t ino, pdcbb_ns_attr_t *removed);
PDC_EXPORT pdcbb_err_t PDCbb_ns_rmdir(uint64_t dir, int undo);
/*
 * Rename; flags PDCBB_NS_NOREPLACE, PDCBB_NS_EMPTY_CHECKED. When both directories' entries
 * live on one daemon, one request and one transaction; otherwise a create that keeps the ino
 * on the new parent's daemon (replacing what is there, as rename does), then the unlink of the
 * old name: between the two both names exist. moved, old_ino, old_kind may be NULL.
 */
PDC_EXPORT pdcbb_err_t PDCbb_ns_rename(uint64_t parent, const char *name, uint64_t new_parent,
                                       const char *new_name, uint32_t flags, pdcbb_ns_attr_t *moved,
                                       uint64_t *old_ino, uint32_t *old_kind);
/* NS_SETATTR of what mask names (PDCBB_NS_SET_*), values from in; out may be NULL. */
PDC_EXPORT pdcbb_err_t PDCbb_ns_setattr(uint64_t parent, const char *name, uint64_t ino,
                                        uint32_t mask, const pdcbb_ns_attr_t *in,
                                        pdcbb_ns_attr_t *out);

/* The job's containers (kind PDCBB_META_KIND_CONT) or the objects of container cont (kind
 * PDCBB_META_KIND_OBJ), from every daemon: *ids (malloc'ed, free it), *n of them. */
PDC_EXPORT pdcbb_err_t PDCbb_list_ids(unsigned kind, uint64_t cont, uint64_t **ids, size_t *n);
/* The name of container id into name (len bytes). */
PDC_EXPORT pdcbb_err_t PDCbb_cont_name(uint64_t id, char *name, size_t len);
/* A handle (close with PDCobj_close) of the object whose meta id is id; 0 on failure. */
PDC_EXPORT pdcid_t PDCbb_obj_open_id(uint64_t id);
/* The meta id of an open object handle (the ino of a file of the mount); 0 if not one. */
PDC_EXPORT uint64_t PDCbb_obj_meta_id(pdcid_t obj);
/* Bytes [off, off + len) of a one-dimensional object of bytes (a file of the mount), read in
 * place: when all of them are on one daemon of this node, that daemon checks them as for a read
 * (a damaged range fails with PDCBB_ERR_CORRUPT), then *fd is a new read-only descriptor of the
 * object's data file there (close it), which holds them at the same offsets, the first *valid
 * of them (the rest are zeros); *fd -1 and *valid 0 when it holds none. PDCBB_ERR_UNSUPPORTED
 * when they are on another node or on several daemons: read them with a transfer. */
PDC_EXPORT pdcbb_err_t PDCbb_obj_local_read(pdcid_t obj, uint64_t off, uint64_t len, int *fd,
                                            uint64_t *valid);
/* Remove every byte of an object's data on every daemon (its metadata stays): a file
 * truncated to 0. */
PDC_EXPORT pdcbb_err_t PDCbb_obj_drop_data(pdcid_t obj);

#endif
