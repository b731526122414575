/*
 * pdc_ns.c - the mount's calls into libpdc (pdc_ns.h): the namespace ops, each sent to the
 * daemon holding the directory, object handles by meta id, and dropping an object's data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_transfer.h"
#include "pdc_ns.h"

static void attr_from(pdcbb_ns_attr_t *a, const pdcbb_ns_lookup_rep_t *e)
{
    a->ino = e->ino;
    a->kind = e->kind;
    a->mode = e->mode;
    a->uid = e->uid;
    a->gid = e->gid;
    a->size = e->size;
    a->mtime_ns = e->mtime_ns;
    a->ctime_ns = e->ctime_ns;
    snprintf(a->target, sizeof(a->target), "%s", e->target ? e->target : "");
}

/* The entry fields of a request or reply body (they share the names of the entry's). */
#define NS_ATTR_TO(dst, a)                                                                         \
    do {                                                                                           \
        (dst)->ino = (a)->ino;                                                                     \
        (dst)->kind = (a)->kind;                                                                   \
        (dst)->mode = (a)->mode;                                                                   \
        (dst)->uid = (a)->uid;                                                                     \
        (dst)->gid = (a)->gid;                                                                     \
        (dst)->size = (a)->size;                                                                   \
        (dst)->mtime_ns = (a)->mtime_ns;                                                           \
        (dst)->ctime_ns = (a)->ctime_ns;                                                           \
        (dst)->target = (a)->target[0] ? (a)->target : NULL;                                       \
    } while (0)

_Static_assert(sizeof(pdcbb_ns_unlink_rep_t) == sizeof(pdcbb_ns_lookup_rep_t) &&
                   sizeof(pdcbb_ns_setattr_rep_t) == sizeof(pdcbb_ns_lookup_rep_t),
               "entry replies share one layout");

_Static_assert(sizeof(pdcbb_ns_rename_rep_t) == sizeof(pdcbb_ns_create_rep_t),
               "NS_CREATE and NS_RENAME replies share one layout");

/* An NS_CREATE or NS_RENAME reply: the entry into *out, what it replaced into *old_*. */
static void change_out(const pdcbb_ns_create_rep_t *p, pdcbb_ns_attr_t *out, uint64_t *old_ino,
                       uint32_t *old_kind)
{
    pdcbb_ns_lookup_rep_t e = {.ino = p->ino,
                               .kind = p->kind,
                               .mode = p->mode,
                               .uid = p->uid,
                               .gid = p->gid,
                               .size = p->size,
                               .mtime_ns = p->mtime_ns,
                               .ctime_ns = p->ctime_ns,
                               .target = p->target};
    if (out)
        attr_from(out, &e);
    if (old_ino)
        *old_ino = p->old_ino;
    if (old_kind)
        *old_kind = p->old_kind;
}

static unsigned home(uint64_t dir)
{
    return pdcbb_ns_home(dir, client_g.nservers);
}

pdcbb_err_t PDCbb_ns_lookup(uint64_t parent, const char *name, pdcbb_ns_attr_t *out)
{
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = client_check_init();
    if (rc == PDCBB_OK) {
        pdcbb_ns_lookup_req_t q = {.parent = parent, .name = name};
        pdcbb_ns_lookup_rep_t p;
        void *keep;
        if ((rc = client_op_ns_lookup(home(parent), &q, &p, &keep)) == PDCBB_OK) {
            if (out)
                attr_from(out, &p);
            client_rpc_release(PDCBB_OP_NS_LOOKUP, &p, keep);
        }
    }
    CLIENT_LEAVE();
    return rc;
}

pdcbb_err_t PDCbb_ns_create(uint64_t parent, const char *name, uint32_t flags,
                            const pdcbb_ns_attr_t *in, pdcbb_ns_attr_t *out, uint64_t *old_ino,
                            uint32_t *old_kind)
{
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = client_check_init();
    if (rc == PDCBB_OK) {
        pdcbb_ns_create_req_t q = {.parent = parent, .name = name, .flags = flags};
        NS_ATTR_TO(&q, in);
        pdcbb_ns_create_rep_t p;
        void *keep;
        if ((rc = client_op_ns_create(home(parent), &q, &p, &keep)) == PDCBB_OK) {
            change_out(&p, out, old_ino, old_kind);
            client_rpc_release(PDCBB_OP_NS_CREATE, &p, keep);
        }
    }
    CLIENT_LEAVE();
    return rc;
}

pdcbb_err_t PDCbb_ns_readdir(uint64_t dir, const char *after, uint32_t max, uint8_t **entries,
                             size_t *len, int *more)
{
    CLIENT_ENTER();
    client_clear_error();
    *entries = NULL;
    *len = 0;
    *more = 0;
    pdcbb_err_t rc = client_check_init();
    if (rc == PDCBB_OK) {
        pdcbb_ns_readdir_req_t q = {.dir = dir, .after = after, .max = max};
        pdcbb_ns_readdir_rep_t p;
        void *keep;
        if ((rc = client_op_ns_readdir(home(dir), &q, &p, &keep)) == PDCBB_OK) {
            *entries = malloc(p.entries_len ? p.entries_len : 1);
            if (*entries == NULL) {
                rc = client_fail(PDCBB_ERR_NOMEM, "PDCbb_ns_readdir: out of memory");
            } else {
                memcpy(*entries, p.entries, p.entries_len);
                *len = p.entries_len;
                *more = p.more != 0;
            }
            client_rpc_release(PDCBB_OP_NS_READDIR, &p, keep);
        }
    }
    CLIENT_LEAVE();
    return rc;
}

pdcbb_err_t PDCbb_ns_unlink(uint64_t parent, const char *name, uint32_t kind, uint64_t ino,
                            pdcbb_ns_attr_t *removed)
{
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = client_check_init();
    if (rc == PDCBB_OK) {
        pdcbb_ns_unlink_req_t q = {.parent = parent, .name = name, .kind = kind, .ino = ino};
        pdcbb_ns_unlink_rep_t p;
        void *keep;
        if ((rc = client_op_ns_unlink(home(parent), &q, &p, &keep)) == PDCBB_OK) {
            if (removed)
                attr_from(removed, (const pdcbb_ns_lookup_rep_t *)&p);
            client_rpc_release(PDCBB_OP_NS_UNLINK, &p, keep);
        }
    }
    CLIENT_LEAVE();
    return rc;
}

pdcbb_err_t PDCbb_ns_rmdir(uint64_t dir, int undo)
{
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = client_check_init();
    if (rc == PDCBB_OK) {
        pdcbb_ns_rmdir_req_t q = {.dir = dir, .undo = undo ? 1 : 0};
        pdcbb_ns_rmdir_rep_t p;
        void *keep;
        if ((rc = client_op_ns_rmdir(home(dir), &q, &p, &keep)) == PDCBB_OK)
            client_rpc_release(PDCBB_OP_NS_RMDIR, &p, keep);
    }
    CLIENT_LEAVE();
    return rc;
}

pdcbb_err_t PDCbb_ns_rename(uint64_t parent, const char *name, uint64_t new_parent,
                            const char *new_name, uint32_t flags, pdcbb_ns_attr_t *moved,
                            uint64_t *old_ino, uint32_t *old_kind)
{
    if (home(parent) != home(new_parent)) {
        /* two daemons: the new name first (keeping the ino), then the old one goes */
        pdcbb_ns_attr_t src;
        pdcbb_err_t rc = PDCbb_ns_lookup(parent, name, &src);
        if (rc != PDCBB_OK)
            return rc;
        uint32_t cflags = PDCBB_NS_MOVE | (flags & PDCBB_NS_EMPTY_CHECKED) |
                          (flags & PDCBB_NS_NOREPLACE ? PDCBB_NS_EXCL : PDCBB_NS_REPLACE);
        if ((rc = PDCbb_ns_create(new_parent, new_name, cflags, &src, moved, old_ino, old_kind)) !=
            PDCBB_OK)
            return rc;
        rc = PDCbb_ns_unlink(parent, name, 0, src.ino, NULL);
        return rc == PDCBB_ERR_NOT_FOUND ? PDCBB_OK : rc; /* gone meanwhile: moved all the same */
    }
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = client_check_init();
    if (rc == PDCBB_OK) {
        pdcbb_ns_rename_req_t q = {.parent = parent,
                                   .name = name,
                                   .new_parent = new_parent,
                                   .new_name = new_name,
                                   .flags = flags};
        pdcbb_ns_rename_rep_t p;
        void *keep;
        if ((rc = client_op_ns_rename(home(parent), &q, &p, &keep)) == PDCBB_OK) {
            change_out((const pdcbb_ns_create_rep_t *)&p, moved, old_ino, old_kind);
            client_rpc_release(PDCBB_OP_NS_RENAME, &p, keep);
        }
    }
    CLIENT_LEAVE();
    return rc;
}

pdcbb_err_t PDCbb_ns_setattr(uint64_t parent, const char *name, uint64_t ino, uint32_t mask,
                             const pdcbb_ns_attr_t *in, pdcbb_ns_attr_t *out)
{
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = client_check_init();
    if (rc == PDCBB_OK) {
        pdcbb_ns_setattr_req_t q = {.parent = parent,
                                    .name = name,
                                    .ino = ino,
                                    .mask = mask,
                                    .mode = in->mode,
                                    .uid = in->uid,
                                    .gid = in->gid,
                                    .size = in->size,
                                    .mtime_ns = in->mtime_ns,
                                    .ctime_ns = in->ctime_ns};
        pdcbb_ns_setattr_rep_t p;
        void *keep;
        if ((rc = client_op_ns_setattr(home(parent), &q, &p, &keep)) == PDCBB_OK) {
            if (out)
                attr_from(out, (const pdcbb_ns_lookup_rep_t *)&p);
            client_rpc_release(PDCBB_OP_NS_SETATTR, &p, keep);
        }
    }
    CLIENT_LEAVE();
    return rc;
}

pdcbb_err_t PDCbb_list_ids(unsigned kind, uint64_t cont, uint64_t **ids, size_t *n)
{
    CLIENT_ENTER();
    client_clear_error();
    *ids = NULL;
    *n = 0;
    pdcbb_err_t rc = client_check_init();
    if (rc == PDCBB_OK)
        rc = client_list_ids(kind, cont, ids, n);
    CLIENT_LEAVE();
    return rc;
}

pdcbb_err_t PDCbb_cont_name(uint64_t id, char *name, size_t len)
{
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = client_check_init();
    if (rc == PDCBB_OK && pdcbb_meta_id_kind(id) != PDCBB_META_KIND_CONT)
        rc = client_fail(PDCBB_ERR_BAD_ID, "PDCbb_cont_name: %#llx is not a container id",
                         (unsigned long long)id);
    if (rc == PDCBB_OK) {
        pdcbb_cont_info_req_t q = {.id = id};
        pdcbb_cont_info_rep_t p;
        void *keep;
        if ((rc = client_op_cont_info(pdcbb_meta_id_server(id), &q, &p, &keep)) == PDCBB_OK) {
            snprintf(name, len, "%s", p.name);
            client_rpc_release(PDCBB_OP_CONT_INFO, &p, keep);
        }
    }
    CLIENT_LEAVE();
    return rc;
}

pdcid_t PDCbb_obj_open_id(uint64_t id)
{
    pdcid_t h = 0;
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() == PDCBB_OK) {
        if (pdcbb_meta_id_kind(id) != PDCBB_META_KIND_OBJ) {
            client_fail(PDCBB_ERR_BAD_ID, "PDCbb_obj_open_id: %#llx is not an object id",
                        (unsigned long long)id);
        } else {
            pdcbb_obj_info_req_t q = {.id = id};
            pdcbb_obj_info_rep_t p;
            void *keep;
            if (client_op_obj_info(pdcbb_meta_id_server(id), &q, &p, &keep) == PDCBB_OK) {
                h = client_obj_adopt(&p, 0, "PDCbb_obj_open_id");
                client_rpc_release(PDCBB_OP_OBJ_INFO, &p, keep);
            }
        }
    }
    CLIENT_LEAVE();
    return h;
}

pdcbb_err_t PDCbb_obj_local_read(pdcid_t obj, uint64_t off, uint64_t len, int *fd, uint64_t *valid)
{
    static const char fn[] = "PDCbb_obj_local_read";
    *fd = -1;
    *valid = 0;
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = client_check_init();
    client_obj_t *o = rc == PDCBB_OK ? client_obj_get(obj, fn) : NULL;
    if (rc == PDCBB_OK && o == NULL)
        rc = PDCbb_last_error();
    else if (o && (o->prop.pub.ndim != 1 || get_size_by_dtype(o->prop.pub.type) != 1))
        rc = client_fail(PDCBB_ERR_UNSUPPORTED, "%s: object %s is not one-dimensional bytes", fn,
                         o->name);
    else if (o && (len == 0 || off > o->prop.pub.dims[0] || len > o->prop.pub.dims[0] - off))
        rc = client_fail(PDCBB_ERR_BAD_REGION, "%s: bytes %llu+%llu are not in object %s", fn,
                         (unsigned long long)off, (unsigned long long)len, o->name);
    if (rc == PDCBB_OK) {
        client_xfer_t x;
        if ((rc = client_xfer_plan_rows(&x, o, PDC_READ, 1, off, len)) == PDCBB_OK)
            rc = client_xfer_local_file(&x, fd, valid);
        client_xfer_reset(&x);
    }
    CLIENT_LEAVE();
    return rc;
}

uint64_t PDCbb_obj_meta_id(pdcid_t obj)
{
    CLIENT_ENTER();
    client_clear_error();
    client_obj_t *o = client_obj_get(obj, "PDCbb_obj_meta_id");
    uint64_t id = o ? o->meta_id : 0;
    CLIENT_LEAVE();
    return id;
}

pdcbb_err_t PDCbb_obj_drop_data(pdcid_t obj)
{
    CLIENT_ENTER();
    client_clear_error();
    pdcbb_err_t rc = client_check_init();
    client_obj_t *o = rc == PDCBB_OK ? client_obj_get(obj, "PDCbb_obj_drop_data") : NULL;
    if (o == NULL && rc == PDCBB_OK)
        rc = PDCbb_last_error();
    if (o != NULL) {
        client_xfer_wait_object(o->meta_id);
        for (unsigned s = 0; s < client_g.nservers && rc == PDCBB_OK; s++) {
            pdcbb_data_drop_req_t dq = {.id = o->meta_id};
            pdcbb_data_drop_rep_t dp;
            void *keep;
            if ((rc = client_op_data_drop(s, &dq, &dp, &keep)) == PDCBB_OK)
                client_rpc_release(PDCBB_OP_DATA_DROP, &dp, keep);
        }
    }
    CLIENT_LEAVE();
    return rc;
}

pdcid_t PDCbb_file_open(const char *path, uint64_t *size)
{
    if (size != NULL)
        *size = 0;
    if (path == NULL) {
        CLIENT_ENTER();
        client_fail(PDCBB_ERR_INVAL, "PDCbb_file_open: no path");
        CLIENT_LEAVE();
        return 0;
    }
    /* an absolute path must be under this node's mount; the rest is the same on every node */
    const char *rel = path, *mnt = getenv("PDCBB_MOUNT");
    if (path[0] == '/') {
        size_t ml = mnt ? strlen(mnt) : 0;
        while (ml > 1 && mnt[ml - 1] == '/')
            ml--;
        if (ml == 0 || strncmp(path, mnt, ml) != 0 || (path[ml] != '/' && path[ml] != '\0')) {
            CLIENT_ENTER();
            client_fail(PDCBB_ERR_INVAL,
                        "PDCbb_file_open: %s is not under the job's filesystem ($PDCBB_MOUNT %s)",
                        path, mnt ? mnt : "is not set");
            CLIENT_LEAVE();
            return 0;
        }
        rel = path + ml;
    }
    pdcbb_ns_attr_t a = {.ino = PDCBB_NS_ROOT, .kind = PDCBB_NS_DIR};
    char comp[PDCBB_NS_NAME_MAX + 1];
    for (const char *p = rel; *p;) {
        size_t l = strcspn(p, "/");
        if (l > PDCBB_NS_NAME_MAX) {
            CLIENT_ENTER();
            client_fail(PDCBB_ERR_TOO_BIG, "PDCbb_file_open: %s: a name longer than %d bytes", path,
                        PDCBB_NS_NAME_MAX);
            CLIENT_LEAVE();
            return 0;
        }
        memcpy(comp, p, l);
        comp[l] = '\0';
        p += l + (p[l] == '/');
        if (l == 0 || strcmp(comp, ".") == 0)
            continue;
        if (a.kind != PDCBB_NS_DIR) {
            CLIENT_ENTER();
            client_fail(PDCBB_ERR_NOT_FOUND, "PDCbb_file_open: %s: not a directory before '%s'",
                        path, comp);
            CLIENT_LEAVE();
            return 0;
        }
        pdcbb_err_t rc = PDCbb_ns_lookup(a.ino, comp, &a);
        if (rc != PDCBB_OK) {
            CLIENT_ENTER();
            if (rc == PDCBB_ERR_NOT_FOUND)
                client_fail(rc, "PDCbb_file_open: %s: no entry '%s'", path, comp);
            CLIENT_LEAVE();
            return 0; /* other errors: the lookup's own message */
        }
    }
    if (a.kind != PDCBB_NS_FILE) {
        CLIENT_ENTER();
        client_fail(PDCBB_ERR_WRONG_TYPE, "PDCbb_file_open: %s is not a regular file", path);
        CLIENT_LEAVE();
        return 0;
    }
    pdcid_t h = PDCbb_obj_open_id(a.ino);
    if (h != 0 && size != NULL)
        *size = a.size;
    return h;
}
