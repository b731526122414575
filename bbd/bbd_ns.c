/*
 * bbd_ns.c - the mount's namespace (NS_LOOKUP .. NS_SETATTR; common/pdcbb_proto.h,
 * docs/PROTOCOL.md "Namespace", docs/INTERNALS.md "The mount").
 *
 * A directory's entries live on the daemon pdcbb_ns_home(dir ino), in PDCBB_T_NS under the key
 * parent ino (8 bytes, big-endian) + name, so one directory is one contiguous range of keys:
 * NS_READDIR is a cursor walk. The value is the NS_LOOKUP reply body (the wire's encoding):
 * the whole inode lives in its one entry (no hard links), so a lookup, a create or a stat is
 * one request to one daemon and one transaction. A removed directory leaves the key of its ino
 * alone (8 bytes), which sorts before its entries: NS_RMDIR writes it when the directory is
 * empty, and creates in that directory are refused from then on.
 *
 * What a request names is checked here, whoever sent it: the parent's home is this daemon
 * (BAD_ID), names are POSIX names (pdcbb_ns_name_check), kinds, permission bits and a link's
 * target are in range; a file's ino must be an object id, the daemon makes the others.
 */
#include <string.h>

#include "bbd.h"
#include "pdcbb_log.h"
#include "pdcbb_ns.h"

#define OPS              (r->d->store_ops)
#define NS_READDIR_BYTES (64u << 10) /* the most entry bytes one NS_READDIR answers */

/* The fields of an entry, copied between the bodies that carry one. */
#define NS_COPY_ENTRY(dst, src)                                                                    \
    do {                                                                                           \
        (dst)->ino = (src)->ino;                                                                   \
        (dst)->kind = (src)->kind;                                                                 \
        (dst)->mode = (src)->mode;                                                                 \
        (dst)->uid = (src)->uid;                                                                   \
        (dst)->gid = (src)->gid;                                                                   \
        (dst)->size = (src)->size;                                                                 \
        (dst)->mtime_ns = (src)->mtime_ns;                                                         \
        (dst)->ctime_ns = (src)->ctime_ns;                                                         \
        (dst)->target = (src)->target;                                                             \
    } while (0)

typedef pdcbb_ns_lookup_rep_t ns_entry_t;

static pdcbb_err_t ns_home(bbd_req_t *r, uint64_t dir)
{
    return dir != 0 && pdcbb_ns_home(dir, r->d->nservers) == r->d->rank ? PDCBB_OK
                                                                        : PDCBB_ERR_BAD_ID;
}

/* Key of (dir, name) in scratch memory; name NULL: the directory's own "removed" key. */
static pdcbb_err_t ns_key(bbd_req_t *r, uint64_t dir, const char *name, pdcbb_val_t *key)
{
    size_t n = name ? strlen(name) : 0;
    uint8_t *k = bbd_req_alloc(r, 8 + n);
    if (k == NULL)
        return PDCBB_ERR_NOMEM;
    pdcbb_key_u64(k, dir);
    if (n > 0)
        memcpy(k + 8, name, n);
    *key = (pdcbb_val_t){k, 8 + n};
    return PDCBB_OK;
}

/* The entry name of dir into e (its target points into the store or scratch). */
static pdcbb_err_t ns_get(bbd_req_t *r, uint64_t dir, const char *name, ns_entry_t *e)
{
    pdcbb_val_t key, v;
    pdcbb_err_t rc = ns_key(r, dir, name, &key);
    if (rc != PDCBB_OK || (rc = OPS->get(r->txn, PDCBB_T_NS, key, &v)) != PDCBB_OK)
        return rc;
    if (pdcbb_body_decode(PDCBB_OP_NS_LOOKUP, 1, v.data, v.len, e) != PDCBB_OK) {
        PDCBB_ERROR("corrupt namespace entry in directory %#llx of the store",
                    (unsigned long long)dir);
        return PDCBB_ERR_STORE;
    }
    /* The target points into the store's page, which a later write of this transaction may
     * reuse: the reply is encoded after the handler's writes. */
    if (e->target != NULL && e->target[0] != '\0') {
        size_t n = strlen(e->target) + 1;
        char *t = bbd_req_alloc(r, n);
        if (t == NULL)
            return PDCBB_ERR_NOMEM;
        memcpy(t, e->target, n);
        e->target = t;
    }
    return PDCBB_OK;
}

static pdcbb_err_t ns_put(bbd_req_t *r, uint64_t dir, const char *name, const ns_entry_t *e)
{
    size_t size;
    pdcbb_val_t key;
    pdcbb_err_t rc = pdcbb_body_size(PDCBB_OP_NS_LOOKUP, 1, e, &size);
    if (rc != PDCBB_OK || (rc = ns_key(r, dir, name, &key)) != PDCBB_OK)
        return rc;
    uint8_t *buf = bbd_req_alloc(r, size ? size : 1);
    if (buf == NULL)
        return PDCBB_ERR_NOMEM;
    if ((rc = pdcbb_body_encode(PDCBB_OP_NS_LOOKUP, 1, e, buf, size)) != PDCBB_OK)
        return rc;
    return OPS->put(r->txn, PDCBB_T_NS, key, (pdcbb_val_t){buf, size}, 0);
}

static pdcbb_err_t ns_del(bbd_req_t *r, uint64_t dir, const char *name)
{
    pdcbb_val_t key;
    pdcbb_err_t rc = ns_key(r, dir, name, &key);
    return rc != PDCBB_OK ? rc : OPS->del(r->txn, PDCBB_T_NS, key);
}

/* NOT_FOUND if dir was removed (NS_RMDIR). */
static pdcbb_err_t ns_dir_alive(bbd_req_t *r, uint64_t dir)
{
    pdcbb_val_t key, v;
    pdcbb_err_t rc = ns_key(r, dir, NULL, &key);
    if (rc != PDCBB_OK)
        return rc;
    rc = OPS->get(r->txn, PDCBB_T_NS, key, &v);
    return rc == PDCBB_OK ? PDCBB_ERR_NOT_FOUND : rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
}

/* The inode fields of a new or changed entry are in range; moved: an existing entry's ino. */
static pdcbb_err_t ns_entry_check(const ns_entry_t *e, int moved)
{
    if (e->kind != PDCBB_NS_FILE && e->kind != PDCBB_NS_DIR && e->kind != PDCBB_NS_SYMLINK)
        return PDCBB_ERR_INVAL;
    if (e->mode & ~07777u)
        return PDCBB_ERR_INVAL;
    size_t tl = e->target ? strnlen(e->target, PDCBB_NS_TARGET_MAX + 1) : 0;
    if (e->kind == PDCBB_NS_SYMLINK) {
        if (tl == 0)
            return PDCBB_ERR_INVAL;
        if (tl > PDCBB_NS_TARGET_MAX)
            return PDCBB_ERR_TOO_BIG;
    } else if (tl != 0) {
        return PDCBB_ERR_INVAL;
    }
    if (e->kind == PDCBB_NS_FILE ? pdcbb_meta_id_kind(e->ino) != PDCBB_META_KIND_OBJ
        : moved                  ? pdcbb_meta_id_kind(e->ino) != PDCBB_META_KIND_NODE
                                 : e->ino != 0)
        return PDCBB_ERR_BAD_ID;
    return PDCBB_OK;
}

/* May an entry of kind `mine` take the place of `old`? (rename's and REPLACE's rules) */
static pdcbb_err_t ns_replace_ok(uint32_t mine, const ns_entry_t *old, uint32_t flags)
{
    if ((mine == PDCBB_NS_DIR) != (old->kind == PDCBB_NS_DIR))
        return PDCBB_ERR_WRONG_TYPE; /* ENOTDIR or EISDIR: the client knows which */
    if (old->kind == PDCBB_NS_DIR && !(flags & PDCBB_NS_EMPTY_CHECKED))
        return PDCBB_ERR_NOT_EMPTY;
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_ns_lookup(bbd_req_t *r, const pdcbb_ns_lookup_req_t *q, pdcbb_ns_lookup_rep_t *p)
{
    pdcbb_err_t rc = ns_home(r, q->parent);
    if (rc == PDCBB_OK)
        rc = pdcbb_ns_name_check(q->name);
    return rc != PDCBB_OK ? rc : ns_get(r, q->parent, q->name, p);
}

pdcbb_err_t bbd_op_ns_create(bbd_req_t *r, const pdcbb_ns_create_req_t *q, pdcbb_ns_create_rep_t *p)
{
    ns_entry_t e, old;
    NS_COPY_ENTRY(&e, q);
    pdcbb_err_t rc = ns_home(r, q->parent);
    if (rc == PDCBB_OK)
        rc = pdcbb_ns_name_check(q->name);
    if (rc == PDCBB_OK)
        rc = ns_entry_check(&e, (q->flags & PDCBB_NS_MOVE) != 0);
    if (rc == PDCBB_OK && (q->flags & ~(uint32_t)(PDCBB_NS_EXCL | PDCBB_NS_REPLACE |
                                                  PDCBB_NS_EMPTY_CHECKED | PDCBB_NS_MOVE)))
        rc = PDCBB_ERR_INVAL;
    if (rc == PDCBB_OK)
        rc = ns_dir_alive(r, q->parent);
    if (rc != PDCBB_OK)
        return rc;
    p->old_ino = 0;
    p->old_kind = 0;
    rc = ns_get(r, q->parent, q->name, &old);
    if (rc == PDCBB_OK) {
        if (q->flags & PDCBB_NS_EXCL)
            return PDCBB_ERR_EXISTS;
        if (!(q->flags & PDCBB_NS_REPLACE)) {
            /* open(O_CREAT) of an existing file: that file */
            if (old.kind != PDCBB_NS_FILE || e.kind != PDCBB_NS_FILE)
                return PDCBB_ERR_EXISTS;
            NS_COPY_ENTRY(p, &old);
            return PDCBB_OK;
        }
        if ((rc = ns_replace_ok(e.kind, &old, q->flags)) != PDCBB_OK)
            return rc;
        p->old_ino = old.ino;
        p->old_kind = old.kind;
    } else if (rc != PDCBB_ERR_NOT_FOUND) {
        return rc;
    }
    if (e.kind != PDCBB_NS_FILE && !(q->flags & PDCBB_NS_MOVE) &&
        (rc = bbd_meta_next_id(r, PDCBB_META_KIND_NODE, &e.ino)) != PDCBB_OK)
        return rc;
    if ((rc = ns_put(r, q->parent, q->name, &e)) != PDCBB_OK)
        return rc;
    NS_COPY_ENTRY(p, &e);
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_ns_readdir(bbd_req_t *r, const pdcbb_ns_readdir_req_t *q,
                              pdcbb_ns_readdir_rep_t *p)
{
    pdcbb_err_t rc = ns_home(r, q->dir);
    if (rc != PDCBB_OK)
        return rc;
    if (q->max == 0 || q->max > PDCBB_NS_READDIR_MAX)
        return PDCBB_ERR_INVAL;
    const char *after = q->after ? q->after : "";
    if (after[0] != '\0' && (rc = pdcbb_ns_name_check(after)) != PDCBB_OK)
        return rc;
    pdcbb_val_t key, k, v;
    uint8_t *out = bbd_req_alloc(r, NS_READDIR_BYTES);
    if (out == NULL || (rc = ns_key(r, q->dir, after, &key)) != PDCBB_OK)
        return out ? rc : PDCBB_ERR_NOMEM;
    pdcbb_cursor_t *c;
    if ((rc = OPS->cursor_open(r->txn, PDCBB_T_NS, &c)) != PDCBB_OK)
        return rc;
    size_t pos = 0;
    uint32_t n = 0;
    p->more = 0;
    for (rc = OPS->cursor_seek(c, key, &k, &v); rc == PDCBB_OK; rc = OPS->cursor_next(c, &k, &v)) {
        if (k.len < 8 || pdcbb_key_get_u64(k.data) != q->dir)
            break; /* past the directory */
        if (k.len == 8 || (k.len == key.len && memcmp(k.data, key.data, k.len) == 0))
            continue; /* the removed mark, or `after` itself */
        if (n == q->max) {
            p->more = 1;
            break;
        }
        ns_entry_t e;
        if (pdcbb_body_decode(PDCBB_OP_NS_LOOKUP, 1, v.data, v.len, &e) != PDCBB_OK) {
            rc = PDCBB_ERR_STORE;
            break;
        }
        if (pdcbb_ns_dirent_put(out, NS_READDIR_BYTES, &pos, e.ino, e.kind,
                                (const char *)k.data + 8, k.len - 8) != 0) {
            p->more = 1;
            break;
        }
        n++;
    }
    OPS->cursor_close(c);
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND)
        return rc;
    p->entries = out;
    p->entries_len = (uint32_t)pos;
    return PDCBB_OK;
}

pdcbb_err_t bbd_op_ns_unlink(bbd_req_t *r, const pdcbb_ns_unlink_req_t *q, pdcbb_ns_unlink_rep_t *p)
{
    pdcbb_err_t rc = ns_home(r, q->parent);
    if (rc == PDCBB_OK)
        rc = pdcbb_ns_name_check(q->name);
    if (rc == PDCBB_OK && q->kind > PDCBB_NS_SYMLINK)
        rc = PDCBB_ERR_INVAL;
    ns_entry_t e;
    if (rc != PDCBB_OK || (rc = ns_get(r, q->parent, q->name, &e)) != PDCBB_OK)
        return rc;
    if (q->ino != 0 && e.ino != q->ino)
        return PDCBB_ERR_NOT_FOUND; /* replaced meanwhile: not the entry asked for */
    if (q->kind != 0 && (q->kind == PDCBB_NS_DIR) != (e.kind == PDCBB_NS_DIR))
        return PDCBB_ERR_WRONG_TYPE;
    NS_COPY_ENTRY(p, &e);
    return ns_del(r, q->parent, q->name);
}

pdcbb_err_t bbd_op_ns_rmdir(bbd_req_t *r, const pdcbb_ns_rmdir_req_t *q, pdcbb_ns_rmdir_rep_t *p)
{
    (void)p;
    pdcbb_err_t rc = ns_home(r, q->dir);
    if (rc != PDCBB_OK)
        return rc;
    if (q->dir == PDCBB_NS_ROOT || q->undo > 1)
        return PDCBB_ERR_INVAL;
    if (q->undo) {
        rc = ns_del(r, q->dir, NULL);
        return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc;
    }
    pdcbb_val_t key, k, v;
    pdcbb_cursor_t *c;
    if ((rc = ns_key(r, q->dir, NULL, &key)) != PDCBB_OK ||
        (rc = OPS->cursor_open(r->txn, PDCBB_T_NS, &c)) != PDCBB_OK)
        return rc;
    for (rc = OPS->cursor_seek(c, key, &k, &v); rc == PDCBB_OK; rc = OPS->cursor_next(c, &k, &v)) {
        if (k.len < 8 || pdcbb_key_get_u64(k.data) != q->dir)
            break;
        if (k.len > 8) {
            rc = PDCBB_ERR_NOT_EMPTY;
            break;
        }
    }
    OPS->cursor_close(c);
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND)
        return rc;
    return OPS->put(r->txn, PDCBB_T_NS, key, (pdcbb_val_t){"", 0}, 0);
}

pdcbb_err_t bbd_op_ns_rename(bbd_req_t *r, const pdcbb_ns_rename_req_t *q, pdcbb_ns_rename_rep_t *p)
{
    ns_entry_t src, dst;
    pdcbb_err_t rc = ns_home(r, q->parent);
    if (rc == PDCBB_OK)
        rc = ns_home(r, q->new_parent);
    if (rc == PDCBB_OK)
        rc = pdcbb_ns_name_check(q->name);
    if (rc == PDCBB_OK)
        rc = pdcbb_ns_name_check(q->new_name);
    if (rc == PDCBB_OK && (q->flags & ~(uint32_t)(PDCBB_NS_NOREPLACE | PDCBB_NS_EMPTY_CHECKED)))
        rc = PDCBB_ERR_INVAL;
    if (rc == PDCBB_OK)
        rc = ns_dir_alive(r, q->new_parent);
    if (rc != PDCBB_OK || (rc = ns_get(r, q->parent, q->name, &src)) != PDCBB_OK)
        return rc;
    p->old_ino = 0;
    p->old_kind = 0;
    NS_COPY_ENTRY(p, &src);
    if (q->parent == q->new_parent && strcmp(q->name, q->new_name) == 0)
        return PDCBB_OK; /* onto itself: nothing to do */
    rc = ns_get(r, q->new_parent, q->new_name, &dst);
    if (rc == PDCBB_OK) {
        if (q->flags & PDCBB_NS_NOREPLACE)
            return PDCBB_ERR_EXISTS;
        if (dst.ino != src.ino && (rc = ns_replace_ok(src.kind, &dst, q->flags)) != PDCBB_OK)
            return rc;
        p->old_ino = dst.ino == src.ino ? 0 : dst.ino;
        p->old_kind = dst.ino == src.ino ? 0 : dst.kind;
    } else if (rc != PDCBB_ERR_NOT_FOUND) {
        return rc;
    }
    if ((rc = ns_put(r, q->new_parent, q->new_name, &src)) != PDCBB_OK)
        return rc;
    return ns_del(r, q->parent, q->name);
}

pdcbb_err_t bbd_op_ns_setattr(bbd_req_t *r, const pdcbb_ns_setattr_req_t *q,
                              pdcbb_ns_setattr_rep_t *p)
{
    const uint32_t known = PDCBB_NS_SET_MODE | PDCBB_NS_SET_UID | PDCBB_NS_SET_GID |
                           PDCBB_NS_SET_SIZE | PDCBB_NS_SET_SIZE_AT_LEAST | PDCBB_NS_SET_MTIME |
                           PDCBB_NS_SET_CTIME;
    pdcbb_err_t rc = ns_home(r, q->parent);
    if (rc == PDCBB_OK)
        rc = pdcbb_ns_name_check(q->name);
    if (rc == PDCBB_OK &&
        ((q->mask & ~known) || ((q->mask & PDCBB_NS_SET_MODE) && (q->mode & ~07777u))))
        rc = PDCBB_ERR_INVAL;
    ns_entry_t e;
    if (rc != PDCBB_OK || (rc = ns_get(r, q->parent, q->name, &e)) != PDCBB_OK)
        return rc;
    if (q->ino != 0 && e.ino != q->ino)
        return PDCBB_ERR_NOT_FOUND;
    if ((q->mask & (PDCBB_NS_SET_SIZE | PDCBB_NS_SET_SIZE_AT_LEAST)) && e.kind != PDCBB_NS_FILE)
        return PDCBB_ERR_WRONG_TYPE;
    if (q->mask & PDCBB_NS_SET_MODE)
        e.mode = q->mode;
    if (q->mask & PDCBB_NS_SET_UID)
        e.uid = q->uid;
    if (q->mask & PDCBB_NS_SET_GID)
        e.gid = q->gid;
    if (q->mask & PDCBB_NS_SET_SIZE)
        e.size = q->size;
    if ((q->mask & PDCBB_NS_SET_SIZE_AT_LEAST) && q->size > e.size)
        e.size = q->size;
    if (q->mask & PDCBB_NS_SET_MTIME)
        e.mtime_ns = q->mtime_ns;
    if (q->mask & PDCBB_NS_SET_CTIME)
        e.ctime_ns = q->ctime_ns;
    NS_COPY_ENTRY(p, &e);
    return ns_put(r, q->parent, q->name, &e);
}
