/*
 * pdcbb_mount - the job's burst buffer as a filesystem on one node (FUSE), for programs that do
 * not use PDC (docs/USER-GUIDE.md "Files", docs/INTERNALS.md "The mount").
 *
 *   pdcbb_mount [--ready-fd N] [--attr-timeout S] [--debug] MOUNTPOINT
 *
 * A PDC client of the job (PDCinit: it finds the daemons as any task does, from PDCBB_JOB_DIR),
 * started by the prolog or `pdcbb run` as the job user, one per node; every node's mount shows
 * the same tree. Directories and their entries are the daemons' namespace (NS_* ops, bbd_ns.c):
 * an entry holds the whole inode, on the daemon pdcbb_ns_home(parent). A file's bytes are an
 * object of the job in container "pdcbb.files" (one-dimensional, bytes, PDCBB_REGION_STRIPED:
 * 1 MiB stripes round robin from the object's home daemon, so a small file lives on one daemon
 * and a large one on all of them); its ino is the object's id, so a PDC program can open a
 * file's data with PDCbb_obj_open_id(ino) (`stat -c %i`).
 *
 * Consistency (what is promised): close-to-open, as NFS. A file's size and mtime reach its
 * entry when it is flushed (every close), fsync'ed or released; another node that opens the
 * file after that close, and whose cached attributes are older than --attr-timeout (1 s by
 * default), sees all of it. Data is written through to the daemons at every write (no write
 * cache here: a write is answered before its bytes reach the daemon, but they do before this
 * process serves any request but another write); the kernel caches reads until the next open,
 * and so does the read-ahead window here.
 *
 * One request at a time, in order (mount_loop, mount_write.c), and a writer thread that stores
 * the writes answered meanwhile. The process exits when the filesystem is unmounted
 * (fusermount3 -u, umount) or on SIGTERM/SIGINT.
 */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fuse3/fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "mount_io.h"
#include "mount_kernel.h"
#include "mount_listing.h"
#include "mount_pdc_view.h"
#include "mount_read.h"
#include "mount_write.h"
#include "pdc.h"
#include "pdc_ns.h"

#define PROG "pdcbb_mount"
/* A file's object: bytes, one dimension this long (sparse: only what is written takes room). */
#define FILE_DIMS ((uint64_t)1 << 50)
#define FILE_CONT "pdcbb.files"

static double attr_timeout = 1.0;
static int debug;
static pdcid_t pdc, cont;
static struct fuse_session *se;
static uint64_t object_seq;
static char object_prefix[96];

/* ------------------------------------------------------------------ errors */

static int errno_of(pdcbb_err_t rc)
{
    switch (rc) {
    case PDCBB_OK:
        return 0;
    case PDCBB_ERR_NOT_FOUND:
        return ENOENT;
    case PDCBB_ERR_EXISTS:
        return EEXIST;
    case PDCBB_ERR_NOT_EMPTY:
        return ENOTEMPTY;
    case PDCBB_ERR_NOSPC:
    case PDCBB_ERR_DISK_FULL:
    case PDCBB_ERR_META_FULL:
        return ENOSPC;
    case PDCBB_ERR_TOO_BIG:
        return ENAMETOOLONG;
    case PDCBB_ERR_BAD_NAME:
    case PDCBB_ERR_INVAL:
        return EINVAL;
    case PDCBB_ERR_PERM:
    case PDCBB_ERR_AUTH:
        return EACCES;
    case PDCBB_ERR_NOMEM:
        return ENOMEM;
    case PDCBB_ERR_READ_ONLY:
        return EROFS;
    case PDCBB_ERR_UNSUPPORTED:
        return EOPNOTSUPP;
    case PDCBB_ERR_TIMEOUT:
        return ETIMEDOUT;
    default:
        return EIO;
    }
}

/* Log a failure that becomes EIO (the application only sees the errno); msg says more. */
static int fail_msg(const char *what, pdcbb_err_t rc, const char *msg)
{
    int e = errno_of(rc);
    if (e == EIO || debug)
        fprintf(stderr, PROG ": %s: %s: %s\n", what, pdcbb_strerror(rc), msg);
    return e;
}

/* The same for the calling thread's last failed library call. */
static int fail(const char *what, pdcbb_err_t rc)
{
    return fail_msg(what, rc, PDCbb_last_error_message());
}

/* The .pdc view (mount_pdc_view.c) is read-only and its name is taken in the root: a change
 * there is refused (EROFS; root_err for the name ".pdc" itself). */
static bool view_refused(fuse_req_t req, uint64_t parent, const char *name, int root_err)
{
    if (!view_name(parent, name))
        return false;
    fuse_reply_err(req, parent == PDCBB_NS_ROOT ? root_err : EROFS);
    return true;
}

/* ------------------------------------------------------------------ the inodes the kernel knows */

/* An inode the kernel holds a reference to (lookup count), with where its entry is. */
typedef struct node {
    uint64_t ino;
    uint64_t parent;
    char *name;
    uint32_t kind;
    uint64_t nlookup;
    uint64_t size;    /* last known size (files) */
    pdcid_t obj;      /* the file's object handle, opened on first use */
    unsigned opens;   /* open files of it */
    uint64_t written; /* end of what was written here since the last flush, 0 if nothing */
    int unlinked;     /* its entry was removed while it was open here */
    int write_errno;  /* a write answered before it failed: told to the next write, flush or
                         fsync */
    uint64_t read_next;      /* where the last read of it here ended: a read from there goes on */
    uint32_t mode, uid, gid; /* last known attributes (what an unlinked open file shows) */
    uint64_t mtime_ns, ctime_ns;
    uint64_t fresh_until; /* a file's: until then (mono_ns) getattr answers them (node_attr) */
    struct node *next;
} node_t;

#define NODE_BUCKETS 65536
static node_t *nodes[NODE_BUCKETS];
static node_t root = {.ino = PDCBB_NS_ROOT, .kind = PDCBB_NS_DIR, .nlookup = 1};
static pdcbb_ns_attr_t root_attr;

static node_t **node_slot(uint64_t ino)
{
    uint64_t h = ino * 0x9e3779b97f4a7c15ull;
    return &nodes[(h >> 40) % NODE_BUCKETS];
}

static node_t *node_get(uint64_t ino)
{
    if (ino == PDCBB_NS_ROOT)
        return &root;
    for (node_t *n = *node_slot(ino); n; n = n->next)
        if (n->ino == ino)
            return n;
    return NULL;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The attributes the daemons just gave for n: what an unlinked open file goes on showing, and
 * what a getattr of a file answers for attr_timeout (node_attr). */
static void node_remember(node_t *n, const pdcbb_ns_attr_t *a)
{
    n->mode = a->mode, n->uid = a->uid, n->gid = a->gid;
    n->mtime_ns = a->mtime_ns, n->ctime_ns = a->ctime_ns;
    n->fresh_until = a->kind == PDCBB_NS_FILE ? mono_ns() + (uint64_t)(attr_timeout * 1e9) : 0;
}

/* Remember where ino's entry is (parent, name), one more kernel reference. */
static node_t *node_ref(const pdcbb_ns_attr_t *a, uint64_t parent, const char *name)
{
    node_t *n = node_get(a->ino);
    if (n == NULL) {
        n = calloc(1, sizeof(*n));
        if (n == NULL)
            return NULL;
        n->ino = a->ino;
        node_t **s = node_slot(a->ino);
        n->next = *s;
        *s = n;
    }
    if (n != &root && (n->name == NULL || n->parent != parent || strcmp(n->name, name) != 0)) {
        char *copy = strdup(name);
        if (copy == NULL)
            return NULL;
        free(n->name);
        n->name = copy;
        n->parent = parent;
    }
    n->kind = a->kind;
    node_remember(n, a);
    if (n->written == 0 || a->size > n->size)
        n->size = a->size;
    n->nlookup++;
    return n;
}

static void node_forget(uint64_t ino, uint64_t count)
{
    node_t *n = node_get(ino);
    if (n == NULL || n == &root)
        return;
    n->nlookup = n->nlookup > count ? n->nlookup - count : 0;
    if (n->nlookup > 0 || n->opens > 0)
        return;
    for (node_t **p = node_slot(ino); *p; p = &(*p)->next)
        if (*p == n) {
            *p = n->next;
            break;
        }
    if (n->obj)
        PDCobj_close(n->obj);
    free(n->name);
    free(n);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void attr_to_stat(const pdcbb_ns_attr_t *a, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = a->ino;
    st->st_mode = a->mode | (a->kind == PDCBB_NS_DIR       ? S_IFDIR
                             : a->kind == PDCBB_NS_SYMLINK ? S_IFLNK
                                                           : S_IFREG);
    st->st_nlink = a->kind == PDCBB_NS_DIR ? 2 : 1;
    st->st_uid = a->uid;
    st->st_gid = a->gid;
    st->st_size = a->kind == PDCBB_NS_SYMLINK ? (off_t)strlen(a->target)
                  : a->kind == PDCBB_NS_DIR   ? 4096
                                              : (off_t)a->size;
    st->st_blksize = 1 << 20;
    st->st_blocks = (st->st_size + 511) / 512;
    st->st_mtim.tv_sec = (time_t)(a->mtime_ns / 1000000000ull);
    st->st_mtim.tv_nsec = (long)(a->mtime_ns % 1000000000ull);
    st->st_ctim.tv_sec = (time_t)(a->ctime_ns / 1000000000ull);
    st->st_ctim.tv_nsec = (long)(a->ctime_ns % 1000000000ull);
    st->st_atim = st->st_mtim;
}

/* The current entry of a node (the root's is made up: it has no parent). */
static pdcbb_err_t node_attr(node_t *n, pdcbb_ns_attr_t *a, bool cached_ok)
{
    if (n == &root) {
        *a = root_attr;
        return PDCBB_OK;
    }
    /* No entry any more: what it was, as long as it is open. A getattr (cached_ok) of a file
     * whose attributes the daemons gave less than attr_timeout ago: those, with what was
     * written here since (the kernel forgets a file's size at every write and asks again; it
     * keeps attributes as long itself, so close-to-open is unchanged). */
    if (n->unlinked || (cached_ok && n->kind == PDCBB_NS_FILE && mono_ns() < n->fresh_until)) {
        *a = (pdcbb_ns_attr_t){.ino = n->ino,
                               .kind = n->kind,
                               .mode = n->mode,
                               .uid = n->uid,
                               .gid = n->gid,
                               .size = n->size > n->written ? n->size : n->written,
                               .mtime_ns = n->mtime_ns,
                               .ctime_ns = n->ctime_ns};
        return PDCBB_OK;
    }
    pdcbb_err_t rc = PDCbb_ns_lookup(n->parent, n->name, a);
    if (rc == PDCBB_OK && a->ino != n->ino)
        rc = PDCBB_ERR_NOT_FOUND; /* the name was given to another file meanwhile */
    if (rc == PDCBB_OK && a->kind == PDCBB_NS_FILE) {
        if (n->written > a->size)
            a->size = n->written; /* written here, not flushed yet */
        n->size = a->size;
    }
    if (rc == PDCBB_OK)
        node_remember(n, a);
    return rc;
}

/* The kernel's view of an entry: its attributes, kept attr_timeout. */
static struct fuse_entry_param entry_param(const pdcbb_ns_attr_t *a)
{
    struct fuse_entry_param e;
    memset(&e, 0, sizeof(e));
    e.ino = a->ino;
    e.attr_timeout = attr_timeout;
    e.entry_timeout = attr_timeout;
    attr_to_stat(a, &e.attr);
    return e;
}

static void reply_entry(fuse_req_t req, const pdcbb_ns_attr_t *a, uint64_t parent, const char *name)
{
    if (node_ref(a, parent, name) == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    struct fuse_entry_param e = entry_param(a);
    fuse_reply_entry(req, &e);
}

/* A new entry's fields: kind, permission bits, the caller's uid and gid, now. */
static pdcbb_ns_attr_t new_attr(fuse_req_t req, uint32_t kind, mode_t mode)
{
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    pdcbb_ns_attr_t a;
    memset(&a, 0, sizeof(a));
    a.kind = kind;
    a.mode = (uint32_t)(mode & 07777 & ~ctx->umask);
    a.uid = (uint32_t)ctx->uid;
    a.gid = (uint32_t)ctx->gid;
    a.mtime_ns = a.ctime_ns = now_ns();
    return a;
}

/* ------------------------------------------------------------------ file objects */

static pdcid_t new_file_object(void)
{
    char name[160];
    snprintf(name, sizeof(name), "%s%" PRIu64, object_prefix, ++object_seq);
    pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t dims[1] = {FILE_DIMS};
    PDCprop_set_obj_dims(prop, 1, dims);
    PDCprop_set_obj_type(prop, PDC_UINT8);
    PDCprop_set_obj_transfer_region_type(prop, PDCBB_REGION_STRIPED);
    pdcid_t obj = PDCobj_create(cont, name, prop);
    PDCprop_close(prop);
    return obj;
}

/* Delete a file's object (its entry is gone): best effort, the drain lists it as unnamed
 * otherwise. */
static void drop_file_object(uint64_t ino)
{
    mount_read_drop(ino);
    node_t *n = node_get(ino);
    pdcid_t obj = n && n->obj ? n->obj : PDCbb_obj_open_id(ino);
    if (obj == 0)
        return;
    if (PDCobj_del(obj) != SUCCEED && debug)
        fprintf(stderr, PROG ": deleting the object of file %#" PRIx64 ": %s\n", ino,
                PDCbb_last_error_message());
    if (n && n->obj) {
        PDCobj_close(n->obj);
        n->obj = 0;
    } else {
        PDCobj_close(obj);
    }
}

static pdcbb_err_t node_object(node_t *n)
{
    if (n->obj == 0 && (n->obj = PDCbb_obj_open_id(n->ino)) == 0)
        return PDCbb_last_error();
    return PDCBB_OK;
}

/* Move the bytes of [off, off + len) of a file's object to or from buf. */
static pdcbb_err_t transfer(pdcid_t obj, pdc_access_t access, void *buf, uint64_t off, uint64_t len)
{
    return mount_transfer(obj, access, buf, 1, &off, &len);
}

/* Publish what was written here: the entry's size (at least the end written) and mtime. */
static pdcbb_err_t node_publish(node_t *n)
{
    if (n->written == 0 || n->unlinked)
        return PDCBB_OK;
    pdcbb_ns_attr_t in = {.size = n->written, .mtime_ns = now_ns()}, out;
    pdcbb_err_t rc = PDCbb_ns_setattr(n->parent, n->name, n->ino,
                                      PDCBB_NS_SET_SIZE_AT_LEAST | PDCBB_NS_SET_MTIME, &in, &out);
    if (rc == PDCBB_OK) {
        n->written = 0;
        if (out.size > n->size)
            n->size = out.size;
        node_remember(n, &out);
    } else if (rc == PDCBB_ERR_NOT_FOUND) {
        rc = PDCBB_OK; /* removed or renamed elsewhere: nothing to publish to */
        n->written = 0;
        n->fresh_until = 0;
    }
    return rc;
}

/* ------------------------------------------------------------------ operations */

/*
 * What the kernel is asked for (docs/INTERNALS.md "The mount"):
 * - max_write 1 MiB: the most libfuse 3.14 takes (its request buffer is 256 pages; it derives
 *   max_pages from max_write), so a write(2) of 1 MiB is one request.
 * - max_readahead: the kernel keeps the smaller of this and its own read-ahead for the mount
 *   (128 KiB unless root raises the bdi's read_ahead_kb): the read-ahead window above makes up
 *   for it.
 * - No splice: the bytes go to or come from libpdc's transfers, which take memory; a pipe in
 *   between would save no copy (and mount_write.c keeps a write's bytes in its request buffer).
 * - direct_io for files opened write-only (open_reply): a write(2) goes from the writer's
 *   buffer to the request's, not through the page cache first (one copy fewer); such a file
 *   cannot be mmap'ed anyway. Files opened for reading keep the page cache (and mmap).
 * - No writeback cache: with it the kernel keeps its own size and mtime of a cached file and
 *   ignores the daemons' (fuse_get_cache_mask), so a file grown on another node would keep its
 *   old size here: close-to-open across nodes would not hold.
 * - Asynchronous reads (libfuse's default): the kernel queues its read-ahead requests while
 *   the reader copies what it got.
 */
static void op_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    conn->max_write = 1 << 20;
    conn->max_readahead = 1 << 20;
    conn->max_read = 512 << 10;
    conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_MOVE);
    if (conn->capable & FUSE_CAP_SPLICE_WRITE)
        conn->want |= FUSE_CAP_SPLICE_WRITE;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    if (view_lookup(req, parent, name))
        return;
    pdcbb_ns_attr_t a;
    pdcbb_err_t rc = PDCbb_ns_lookup(parent, name, &a);
    if (rc != PDCBB_OK) {
        fuse_reply_err(req, fail("lookup", rc));
        return;
    }
    node_t *n = node_get(a.ino);
    if (n && a.kind == PDCBB_NS_FILE && n->written > a.size)
        a.size = n->written;
    reply_entry(req, &a, parent, name);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    node_forget(ino, nlookup);
    fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
    for (size_t i = 0; i < count; i++)
        node_forget(f[i].ino, f[i].nlookup);
    fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (view_getattr(req, ino))
        return;
    (void)fi;
    node_t *n = node_get(ino);
    pdcbb_ns_attr_t a;
    pdcbb_err_t rc = n ? node_attr(n, &a, true) : PDCBB_ERR_NOT_FOUND;
    if (rc != PDCBB_OK) {
        fuse_reply_err(req, fail("getattr", rc));
        return;
    }
    struct stat st;
    attr_to_stat(&a, &st);
    fuse_reply_attr(req, &st, attr_timeout);
}

/* Cut a file to size: bytes past it must read as zeros if it grows again. */
static pdcbb_err_t truncate_data(node_t *n, uint64_t old_size, uint64_t size)
{
    mount_read_drop(n->ino);
    pdcbb_err_t rc = node_object(n);
    if (rc != PDCBB_OK || size >= old_size)
        return rc;
    if (size == 0)
        return PDCbb_obj_drop_data(n->obj);
    static uint8_t zeros[1 << 20];
    for (uint64_t off = size; off < old_size && rc == PDCBB_OK;) {
        uint64_t len = old_size - off < sizeof(zeros) ? old_size - off : sizeof(zeros);
        rc = transfer(n->obj, PDC_WRITE, zeros, off, len);
        off += len;
    }
    return rc;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    if (view_owns(ino)) {
        fuse_reply_err(req, EROFS);
        return;
    }
    (void)fi;
    node_t *n = node_get(ino);
    pdcbb_ns_attr_t cur, in, out;
    pdcbb_err_t rc = n ? node_attr(n, &cur, false) : PDCBB_ERR_NOT_FOUND;
    if (rc == PDCBB_OK && n == &root) {
        /* The mount point has no entry in the daemons: its mode and times are this node's
         * own (what `cp -a DIR/. $PDCBB_MOUNT` sets); only its owner may enter it anyway (no
         * allow_other). A chown or a size is refused as for any directory. */
        if ((to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID | FUSE_SET_ATTR_SIZE))) {
            fuse_reply_err(req, to_set & FUSE_SET_ATTR_SIZE ? EISDIR : EPERM);
            return;
        }
        if (to_set & FUSE_SET_ATTR_MODE)
            root_attr.mode = attr->st_mode & 07777;
        if (to_set & FUSE_SET_ATTR_MTIME_NOW)
            root_attr.mtime_ns = now_ns();
        else if (to_set & FUSE_SET_ATTR_MTIME)
            root_attr.mtime_ns =
                (uint64_t)attr->st_mtim.tv_sec * 1000000000ull + (uint64_t)attr->st_mtim.tv_nsec;
        root_attr.ctime_ns = now_ns();
        struct stat st;
        attr_to_stat(&root_attr, &st);
        fuse_reply_attr(req, &st, attr_timeout);
        return;
    }
    uint32_t mask = 0;
    memset(&in, 0, sizeof(in));
    if (rc == PDCBB_OK && (to_set & FUSE_SET_ATTR_MODE)) {
        mask |= PDCBB_NS_SET_MODE;
        in.mode = attr->st_mode & 07777;
    }
    if (rc == PDCBB_OK && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
        /* one user's mount: a chown to anyone else is refused, as for a user without
         * CAP_CHOWN */
        if (((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != cur.uid) ||
            ((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != cur.gid)) {
            fuse_reply_err(req, EPERM);
            return;
        }
    }
    if (rc == PDCBB_OK && (to_set & FUSE_SET_ATTR_SIZE)) {
        if (cur.kind != PDCBB_NS_FILE) {
            fuse_reply_err(req, cur.kind == PDCBB_NS_DIR ? EISDIR : EINVAL);
            return;
        }
        if ((rc = node_publish(n)) == PDCBB_OK &&
            (rc = truncate_data(n, cur.size > n->size ? cur.size : n->size,
                                (uint64_t)attr->st_size)) == PDCBB_OK) {
            mask |= PDCBB_NS_SET_SIZE | PDCBB_NS_SET_MTIME;
            in.size = (uint64_t)attr->st_size;
            in.mtime_ns = now_ns();
        }
    }
    if (rc == PDCBB_OK && (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))) {
        /* writes not yet published would stamp their own time over this one at close
         * (cp --preserve sets the time before it closes) */
        rc = node_publish(n);
        mask |= PDCBB_NS_SET_MTIME;
        in.mtime_ns =
            (to_set & FUSE_SET_ATTR_MTIME_NOW)
                ? now_ns()
                : (uint64_t)attr->st_mtim.tv_sec * 1000000000ull + (uint64_t)attr->st_mtim.tv_nsec;
    }
    if (rc == PDCBB_OK) {
        mask |= PDCBB_NS_SET_CTIME;
        in.ctime_ns = now_ns();
        rc = PDCbb_ns_setattr(n->parent, n->name, n->ino, mask, &in, &out);
    }
    if (rc != PDCBB_OK) {
        fuse_reply_err(req, fail("setattr", rc));
        return;
    }
    if (out.kind == PDCBB_NS_FILE) {
        n->size = out.size;
        if (n->written > out.size && (to_set & FUSE_SET_ATTR_SIZE))
            n->written = 0;
    }
    node_remember(n, &out);
    struct stat st;
    attr_to_stat(&out, &st);
    fuse_reply_attr(req, &st, attr_timeout);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
    node_t *n = node_get(ino);
    pdcbb_ns_attr_t a;
    pdcbb_err_t rc = n ? node_attr(n, &a, false) : PDCBB_ERR_NOT_FOUND;
    if (rc != PDCBB_OK)
        fuse_reply_err(req, fail("readlink", rc));
    else if (a.kind != PDCBB_NS_SYMLINK)
        fuse_reply_err(req, EINVAL);
    else
        fuse_reply_readlink(req, a.target);
}

static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name, pdcbb_ns_attr_t *a)
{
    pdcbb_ns_attr_t out;
    pdcbb_err_t rc = PDCbb_ns_create(parent, name, PDCBB_NS_EXCL, a, &out, NULL, NULL);
    if (rc != PDCBB_OK) {
        fuse_reply_err(req, fail("create", rc));
        return;
    }
    reply_entry(req, &out, parent, name);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    if (view_refused(req, parent, name, EEXIST))
        return;
    pdcbb_ns_attr_t a = new_attr(req, PDCBB_NS_DIR, mode);
    make_entry(req, parent, name, &a);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    if (view_refused(req, parent, name, EEXIST))
        return;
    if (strlen(link) > PDCBB_NS_TARGET_MAX) {
        fuse_reply_err(req, ENAMETOOLONG);
        return;
    }
    pdcbb_ns_attr_t a = new_attr(req, PDCBB_NS_SYMLINK, 0777);
    a.mode = 0777;
    snprintf(a.target, sizeof(a.target), "%s", link);
    make_entry(req, parent, name, &a);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    if (view_refused(req, parent, name, EROFS))
        return;
    pdcbb_ns_attr_t gone;
    pdcbb_err_t rc = PDCbb_ns_unlink(parent, name, PDCBB_NS_FILE, 0, &gone);
    if (rc == PDCBB_ERR_WRONG_TYPE) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    if (rc != PDCBB_OK) {
        fuse_reply_err(req, fail("unlink", rc));
        return;
    }
    /* An open file keeps its bytes until its last close (as POSIX): the object goes then. */
    node_t *n = node_get(gone.ino);
    if (gone.kind == PDCBB_NS_FILE && (n == NULL || n->opens == 0))
        drop_file_object(gone.ino);
    else if (n)
        n->unlinked = 1; /* unlinked while open: dropped at its last release */
    fuse_reply_err(req, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    if (view_refused(req, parent, name, EROFS))
        return;
    pdcbb_ns_attr_t a;
    pdcbb_err_t rc = PDCbb_ns_lookup(parent, name, &a);
    if (rc == PDCBB_OK && a.kind != PDCBB_NS_DIR) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    if (rc == PDCBB_OK && (rc = PDCbb_ns_rmdir(a.ino, 0)) == PDCBB_OK) {
        rc = PDCbb_ns_unlink(parent, name, PDCBB_NS_DIR, a.ino, NULL);
        if (rc != PDCBB_OK)
            PDCbb_ns_rmdir(a.ino, 1); /* still there: it takes entries again */
    }
    fuse_reply_err(req, rc == PDCBB_OK ? 0 : fail("rmdir", rc));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
    if (view_refused(req, parent, name, EROFS) || view_refused(req, newparent, newname, EEXIST))
        return;
    if (flags & ~(unsigned)RENAME_NOREPLACE) {
        fuse_reply_err(req, EINVAL); /* RENAME_EXCHANGE, RENAME_WHITEOUT */
        return;
    }
    pdcbb_ns_attr_t src, dst;
    pdcbb_err_t rc = PDCbb_ns_lookup(parent, name, &src);
    uint32_t nsflags = (flags & RENAME_NOREPLACE) ? PDCBB_NS_NOREPLACE : 0;
    if (rc == PDCBB_OK && !(flags & RENAME_NOREPLACE) &&
        PDCbb_ns_lookup(newparent, newname, &dst) == PDCBB_OK && dst.ino != src.ino) {
        if ((src.kind == PDCBB_NS_DIR) != (dst.kind == PDCBB_NS_DIR)) {
            fuse_reply_err(req, src.kind == PDCBB_NS_DIR ? ENOTDIR : EISDIR);
            return;
        }
        if (dst.kind == PDCBB_NS_DIR) { /* replaced only if empty: mark it removed first */
            if ((rc = PDCbb_ns_rmdir(dst.ino, 0)) != PDCBB_OK) {
                fuse_reply_err(req, fail("rename", rc));
                return;
            }
            nsflags |= PDCBB_NS_EMPTY_CHECKED;
        }
    }
    uint64_t old_ino = 0;
    uint32_t old_kind = 0;
    pdcbb_ns_attr_t moved;
    if (rc == PDCBB_OK)
        rc =
            PDCbb_ns_rename(parent, name, newparent, newname, nsflags, &moved, &old_ino, &old_kind);
    if (rc != PDCBB_OK) {
        if (nsflags & PDCBB_NS_EMPTY_CHECKED)
            PDCbb_ns_rmdir(dst.ino, 1);
        fuse_reply_err(req, fail("rename", rc));
        return;
    }
    node_t *n = node_get(moved.ino);
    if (n) {
        char *copy = strdup(newname);
        if (copy) {
            free(n->name);
            n->name = copy;
            n->parent = newparent;
        }
    }
    if (old_ino && old_kind == PDCBB_NS_FILE) {
        node_t *o = node_get(old_ino);
        if (o == NULL || o->opens == 0)
            drop_file_object(old_ino);
        else
            o->unlinked = 1;
    }
    fuse_reply_err(req, 0);
}

static void open_reply(fuse_req_t req, node_t *n, struct fuse_file_info *fi, int created,
                       const pdcbb_ns_attr_t *a)
{
    n->opens++;
    fi->fh = n->ino;
    fi->keep_cache = 0; /* close-to-open: what another node wrote is read afresh */
    int acc = fi->flags & O_ACCMODE;
    fi->direct_io = acc == O_WRONLY || (acc == O_RDONLY && mount_kernel_direct_mmap());
    mount_read_drop(n->ino);
    n->read_next = 0;
    if (created) {
        struct fuse_entry_param e = entry_param(a);
        fuse_reply_create(req, &e, fi);
    } else {
        fuse_reply_open(req, fi);
    }
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    if (view_refused(req, parent, name, EEXIST))
        return;
    pdcid_t obj = new_file_object();
    if (obj == 0) {
        fuse_reply_err(req, fail("create", PDCbb_last_error()));
        return;
    }
    pdcbb_ns_attr_t a = new_attr(req, PDCBB_NS_FILE, mode), out;
    a.ino = PDCbb_obj_meta_id(obj);
    uint32_t flags = (fi->flags & O_EXCL) ? PDCBB_NS_EXCL : 0;
    pdcbb_err_t rc = PDCbb_ns_create(parent, name, flags, &a, &out, NULL, NULL);
    if (rc != PDCBB_OK || out.ino != a.ino) {
        PDCobj_del(obj); /* not used: the name was taken (or the create failed) */
        PDCobj_close(obj);
        obj = 0;
    }
    if (rc != PDCBB_OK) {
        fuse_reply_err(req, rc == PDCBB_ERR_EXISTS && out.ino == 0 ? EEXIST : fail("create", rc));
        return;
    }
    node_t *n = node_ref(&out, parent, name);
    if (n == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    if (obj && n->obj == 0)
        n->obj = obj;
    else if (obj)
        PDCobj_close(obj);
    if (out.ino != a.ino && (fi->flags & O_TRUNC) && out.size > 0) {
        /* an existing file opened O_CREAT|O_TRUNC */
        rc = truncate_data(n, out.size, 0);
        pdcbb_ns_attr_t in = {.size = 0, .mtime_ns = now_ns()};
        if (rc == PDCBB_OK)
            rc = PDCbb_ns_setattr(parent, name, out.ino, PDCBB_NS_SET_SIZE | PDCBB_NS_SET_MTIME,
                                  &in, &out);
        if (rc != PDCBB_OK) {
            node_forget(out.ino, 1);
            fuse_reply_err(req, fail("create", rc));
            return;
        }
        n->size = 0, n->written = 0;
        node_remember(n, &out);
    }
    open_reply(req, n, fi, 1, &out);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (view_open(req, ino, fi))
        return;
    node_t *n = node_get(ino);
    pdcbb_ns_attr_t a;
    pdcbb_err_t rc = n ? node_attr(n, &a, false) : PDCBB_ERR_NOT_FOUND;
    if (rc == PDCBB_OK && a.kind != PDCBB_NS_FILE) {
        fuse_reply_err(req, a.kind == PDCBB_NS_DIR ? EISDIR : ELOOP);
        return;
    }
    if (rc == PDCBB_OK)
        rc = node_object(n);
    if (rc == PDCBB_OK && (fi->flags & O_TRUNC) && a.size > 0) {
        pdcbb_ns_attr_t in = {.size = 0, .mtime_ns = now_ns()};
        if ((rc = truncate_data(n, a.size, 0)) == PDCBB_OK)
            rc = PDCbb_ns_setattr(n->parent, n->name, n->ino,
                                  PDCBB_NS_SET_SIZE | PDCBB_NS_SET_MTIME, &in, &a);
        if (rc == PDCBB_OK)
            n->size = 0, n->written = 0, n->fresh_until = 0;
    }
    if (rc != PDCBB_OK) {
        fuse_reply_err(req, fail("open", rc));
        return;
    }
    open_reply(req, n, fi, 0, &a);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    if (view_read(req, ino, size, off, fi))
        return;
    (void)fi;
    node_t *n = node_get(ino);
    pdcbb_err_t rc = n ? node_object(n) : PDCBB_ERR_NOT_FOUND;
    if (rc != PDCBB_OK) {
        fuse_reply_err(req, fail("read", rc));
        return;
    }
    uint64_t end = n->size > n->written ? n->size : n->written;
    if ((uint64_t)off >= end || size == 0) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    if ((uint64_t)off + size > end)
        size = (size_t)(end - (uint64_t)off);
    uint64_t from = (uint64_t)off;
    if ((rc = mount_read_reply(req, n->obj, n->ino, from, size, end, from == n->read_next)) !=
        PDCBB_OK) {
        fuse_reply_err(req, fail("read", rc));
        return;
    }
    n->read_next = from + size;
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    node_t *n = node_get(ino);
    pdcbb_err_t rc = n ? node_object(n) : PDCBB_ERR_NOT_FOUND;
    if (rc == PDCBB_OK && (fi->flags & O_APPEND)) {
        /* the kernel gives the offset it knows; O_APPEND on several nodes at once has no
         * order anyway (as NFS) */
        mount_write_wait();
        off = (off_t)(n->size > n->written ? n->size : n->written);
    }
    if (rc == PDCBB_OK && (uint64_t)off + size > FILE_DIMS)
        rc = PDCBB_ERR_TOO_BIG;
    if (rc != PDCBB_OK) {
        fuse_reply_err(req, rc == PDCBB_ERR_TOO_BIG ? EFBIG : fail("write", rc));
        return;
    }
    mount_write_reap();
    if (n->write_errno) { /* an earlier write failed after it was answered: told once, for
                           * every write queued until now (as the kernel's write-back errors) */
        mount_write_wait();
        fuse_reply_err(req, n->write_errno);
        n->write_errno = 0;
        return;
    }
    mount_read_drop(n->ino);
    /* Answer first, then the writer thread stores the bytes (mount_write.c) while the loop
     * reads the next request; every later request of this node but a write (a read, stat,
     * flush, fsync or close of any file) waits until they are stored, so it sees them. A
     * failure is told to the file's next write, flush or fsync (write_done), as the kernel
     * does after write-back; O_SYNC and O_DSYNC writes are answered after their bytes arrived. */
    int sync = (fi->flags & (O_SYNC | O_DSYNC)) != 0;
    if (!sync)
        fuse_reply_write(req, size);
    if (size > 0)
        mount_write_queue(n->obj, n->ino, buf, (uint64_t)off, size);
    if (sync) {
        mount_write_wait();
        if (n->write_errno) {
            fuse_reply_err(req, n->write_errno);
            n->write_errno = 0;
        } else {
            fuse_reply_write(req, size);
        }
    }
}

/* What became of a write the writer thread stored (mount_write.h). */
static void write_done(uint64_t ino, uint64_t off, uint64_t len, pdcbb_err_t rc, const char *msg)
{
    node_t *n = node_get(ino);
    if (rc != PDCBB_OK) {
        int e = fail_msg("write", rc, msg);
        if (n)
            n->write_errno = e;
        return;
    }
    if (n == NULL)
        return;
    uint64_t end = off + len;
    if (end > n->written)
        n->written = end;
    if (end > n->size)
        n->size = end;
    /* A write-only open writes past the page cache (direct_io): another open file of it here
     * may hold pages of these bytes, which must go. */
    if (n->opens > 1)
        fuse_lowlevel_notify_inval_inode(se, ino, (off_t)off, (off_t)len);
}

/* Publish what was written and answer, with the error of a write that failed after it was
 * answered if there is one (once, as the kernel tells a write-back error). */
static void reply_published(fuse_req_t req, fuse_ino_t ino, const char *what)
{
    node_t *n = node_get(ino);
    pdcbb_err_t rc = n ? node_publish(n) : PDCBB_OK;
    int e = rc == PDCBB_OK ? 0 : fail(what, rc);
    if (n && n->write_errno) {
        e = n->write_errno;
        n->write_errno = 0;
    }
    fuse_reply_err(req, e);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    reply_published(req, ino, "flush");
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)datasync, (void)fi;
    reply_published(req, ino, "fsync");
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (view_release(req, ino, fi))
        return;
    (void)fi;
    node_t *n = node_get(ino);
    if (n) {
        node_publish(n);
        if (n->opens)
            n->opens--;
        if (n->opens == 0 && n->unlinked)
            drop_file_object(n->ino); /* unlinked while open: its last close */
    }
    fuse_reply_err(req, 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (view_opendir(req, ino, fi))
        return;
    mount_listing_t *l;
    pdcbb_err_t rc = mount_listing_read_ns(ino, &l);
    if (rc != PDCBB_OK) {
        fuse_reply_err(req, fail("opendir", rc));
        return;
    }
    fi->fh = (uint64_t)(uintptr_t)l;
    fuse_reply_open(req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    mount_listing_reply(req, ino, (mount_listing_t *)(uintptr_t)fi->fh, size, off);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    mount_listing_free((mount_listing_t *)(uintptr_t)fi->fh);
    fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
    (void)ino;
    uint64_t used = 0, limit = 0;
    int n = PDCbb_nservers();
    for (int s = 0; s < n; s++) {
        void *body;
        size_t len;
        if (PDCbb_server_stats(s, &body, &len) != SUCCEED)
            continue;
        pdcbb_stats_rep_t p;
        if (pdcbb_body_decode(PDCBB_OP_STATS, 1, body, len, &p) == PDCBB_OK) {
            used += p.capacity_used;
            limit += p.capacity_limit;
            pdcbb_body_free(PDCBB_OP_STATS, 1, &p);
        }
        free(body);
    }
    struct statvfs sv;
    memset(&sv, 0, sizeof(sv));
    sv.f_bsize = sv.f_frsize = 4096;
    sv.f_blocks = limit / 4096;
    sv.f_bfree = sv.f_bavail = limit > used ? (limit - used) / 4096 : 0;
    sv.f_files = sv.f_ffree = sv.f_favail = 1u << 30;
    sv.f_namemax = PDCBB_NS_NAME_MAX;
    fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops ops = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
    .mkdir = op_mkdir,
    .symlink = op_symlink,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .rename = op_rename,
    .create = op_create,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .flush = op_flush,
    .fsync = op_fsync,
    .release = op_release,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
    .statfs = op_statfs,
};

/* ------------------------------------------------------------------ start */

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: " PROG " [--ready-fd N] [--attr-timeout S] [--debug] MOUNTPOINT\n"
            "\n"
            "Mount the job's burst buffer at MOUNTPOINT (an empty directory of yours) and serve\n"
            "it until it is unmounted (fusermount3 -u MOUNTPOINT) or this process gets SIGTERM.\n"
            "Run by the prolog or `pdcbb run --pdc mount`, inside the job: the daemons are found\n"
            "as any task finds them ($PDCBB_JOB_DIR).\n"
            "\n"
            "Options:\n"
            "  --ready-fd N       write \"ready\\n\" to file descriptor N once mounted\n"
            "  --attr-timeout S   seconds the kernel may keep an entry's attributes (default 1)\n"
            "  --debug            log every failed call, not only I/O errors\n"
            "  -h, --help         this text\n");
}

/* --ready-fd: told once the kernel's INIT is answered (before, a program could write into the
 * directory under the mount point). */
static int ready_fd = -1;

static void tell_ready(void)
{
    if (ready_fd < 0)
        return;
    if (write(ready_fd, "ready\n", 6) != 6)
        fprintf(stderr, PROG ": cannot write to --ready-fd %d\n", ready_fd);
    close(ready_fd);
    ready_fd = -1;
}

int main(int argc, char **argv)
{
    const char *mnt = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--debug") == 0) {
            debug = 1;
        } else if (strcmp(argv[i], "--ready-fd") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > INT_MAX) {
                fprintf(stderr, PROG ": --ready-fd wants a file descriptor, not '%s'\n", argv[i]);
                return 2;
            }
            ready_fd = (int)v;
        } else if (strcmp(argv[i], "--attr-timeout") == 0 && i + 1 < argc) {
            char *end;
            attr_timeout = strtod(argv[++i], &end);
            if (*end || !(attr_timeout >= 0 && attr_timeout <= 3600)) {
                fprintf(stderr, PROG ": --attr-timeout wants seconds from 0 to 3600, not '%s'\n",
                        argv[i]);
                return 2;
            }
        } else if (argv[i][0] == '-' || mnt != NULL) {
            fprintf(stderr, PROG ": unknown or extra argument '%s' (see --help)\n", argv[i]);
            return 2;
        } else {
            mnt = argv[i];
        }
    }
    if (mnt == NULL) {
        usage(stderr);
        return 2;
    }
    pdc = PDCinit("pdcbb-mount");
    if (pdc == 0) {
        fprintf(stderr, PROG ": cannot reach the job's burst buffer: %s\n",
                PDCbb_last_error_message());
        return 1;
    }
    view_init(pdc, getuid(), getgid(), attr_timeout);
    /* the files' container: the first node's mount creates it, the others open it */
    for (int tries = 0; cont == 0 && tries < 100; tries++) {
        pdcid_t prop = PDCprop_create(PDC_CONT_CREATE, pdc);
        cont = PDCcont_create(FILE_CONT, prop);
        PDCprop_close(prop);
        if (cont == 0)
            cont = PDCcont_open(FILE_CONT, pdc);
        if (cont == 0)
            usleep(20000);
    }
    if (cont == 0) {
        fprintf(stderr, PROG ": cannot create or open container '%s': %s\n", FILE_CONT,
                PDCbb_last_error_message());
        return 1;
    }
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    /* host, pid and start time: unique in the job, and against the objects of files staged in
     * from an earlier job's drain (whose mount may have had this host and pid) */
    snprintf(object_prefix, sizeof(object_prefix), "pdcbb.files/%.40s.%ld.%llx.", host,
             (long)getpid(), (unsigned long long)now_ns());
    root_attr = (pdcbb_ns_attr_t){.ino = PDCBB_NS_ROOT,
                                  .kind = PDCBB_NS_DIR,
                                  .mode = 0700,
                                  .uid = (uint32_t)getuid(),
                                  .gid = (uint32_t)getgid(),
                                  .mtime_ns = now_ns(),
                                  .ctime_ns = now_ns()};

    char *fargv[] = {(char *)PROG, (char *)"-o",
                     (char *)"fsname=pdcbb,subtype=pdcbb,"
                             "default_permissions,max_read=524288",
                     NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
    se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
    if (se == NULL) {
        fprintf(stderr, PROG ": cannot start a FUSE session\n");
        return 1;
    }
    if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, mnt) != 0) {
        fprintf(stderr,
                PROG ": cannot mount on %s (needed: an empty directory of yours, "
                     "fusermount3 installed, /dev/fuse readable and writable by you)\n",
                mnt);
        fuse_session_destroy(se);
        return 1;
    }
    if (mount_kernel_attach(se) != 0) {
        fuse_session_unmount(se);
        fuse_session_destroy(se);
        return 1;
    }
    mount_read_start();
    int rc = mount_loop(se, write_done, tell_ready);
    mount_read_stop();
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    PDCcont_close(cont);
    PDCclose(pdc);
    return rc == 0 ? 0 : 1;
}
