/*
 * bbd_bcast.c - file broadcast (`pdcbb bcast`): BCAST_OPEN, BCAST_CHUNK, BCAST_CLOSE.
 *
 * The sender streams a file to one daemon; each daemon writes its own copy and forwards every
 * request to its children in the tree (docs/PROTOCOL.md, "File broadcast"), so a big file flows
 * through the tree chunk by chunk instead of being stored and then forwarded whole. A daemon
 * answers a request once its own part is done and every child answered: the sender keeps a
 * few chunks in flight, which bounds the memory of every daemon on the way (the reply to a
 * chunk means the whole subtree wrote it).
 *
 * Here a daemon is a client of other daemons: it sends to its children and gets their replies
 * through bbd_peer.c (endpoints and tokens from the job table: each node of a Slurm job has its
 * own token; replies handled in the event loop). The copy is written with the daemon's rights, which are the job user's: the daemon
 * refuses an absolute destination if it runs as root for a job that is not root's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bbd.h"
#include "bbd_peer.h"
#include "pdcbb_crc32c.h"
#include "pdcbb_log.h"

/* A session nobody touched for this long was abandoned by its sender: removed. */
#define BCAST_IDLE_SECONDS 600.0
/* Error text of a reply: the failed nodes, cut to what a STR field carries. */
#define BCAST_ERR_MAX 3000

/* One file being received here. */
typedef struct bbd_bcast_sess {
    struct bbd_bcast_sess *next;
    uint64_t id;
    int fd;
    char tmp[PATH_MAX];
    char final[PATH_MAX];
    mode_t mode;
    uint64_t size, next_off;
    uint32_t crc; /* of the bytes written so far, in order */
    unsigned nchild;
    uint64_t *sub[PDCBB_BCAST_FANOUT_MAX]; /* each child's subtree, the child first */
    uint32_t subn[PDCBB_BCAST_FANOUT_MAX];
    pdcbb_err_t err; /* this node's failure, kept until CLOSE */
    char errmsg[600];
    double last;
} bcast_sess_t;

/* The answer being gathered for one request: this node's part and its children's. */
typedef struct bcast_wait {
    bbd_conn_t *conn; /* deferred: the connection to answer on (referenced) */
    pdcbb_msg_hdr_t hdr;
    unsigned outstanding;
    int result;
    char error[BCAST_ERR_MAX + 64];
    unsigned nerrors;
    uint64_t *nodes;
    size_t nnodes, cap;
    char *paths;
    size_t paths_len;
} bcast_wait_t;

/* A buffer shared by the sends of one chunk to every child. */
typedef struct bcast_buf {
    void *ptr;
    unsigned refs;
} bcast_buf_t;

/* A request forwarded to a child: what its reply completes. */
typedef struct bcast_out {
    bcast_wait_t *w;
    unsigned rank;
    bcast_buf_t *bulk; /* held until the child answered */
} bcast_out_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void buf_unref(bcast_buf_t *b)
{
    if (b && --b->refs == 0) {
        free(b->ptr);
        free(b);
    }
}

/* ------------------------------------------------------------------ answers */

static void wait_fail(bcast_wait_t *w, pdcbb_err_t rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void wait_fail(bcast_wait_t *w, pdcbb_err_t rc, const char *fmt, ...)
{
    if (w->result == PDCBB_OK)
        w->result = rc;
    size_t n = strlen(w->error);
    w->nerrors++;
    if (n >= BCAST_ERR_MAX) {
        return;
    }
    if (n > 0)
        n += (size_t)snprintf(w->error + n, sizeof(w->error) - n, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error + n, BCAST_ERR_MAX - n, fmt, ap);
    va_end(ap);
}

static void wait_node(bcast_wait_t *w, uint64_t rank, uint64_t crc, const char *line, size_t len)
{
    if (w->nnodes + 2 > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        uint64_t *n = realloc(w->nodes, cap * sizeof(*n));
        if (n == NULL)
            return;
        w->nodes = n;
        w->cap = cap;
    }
    char *p = realloc(w->paths, w->paths_len + len + 1);
    if (p == NULL)
        return;
    w->nodes[w->nnodes++] = rank;
    w->nodes[w->nnodes++] = crc;
    memcpy(p + w->paths_len, line, len);
    w->paths = p;
    w->paths_len += len;
}

static void wait_free(bcast_wait_t *w)
{
    if (w == NULL)
        return;
    free(w->nodes);
    free(w->paths);
    free(w);
}

static void wait_fill(const bcast_wait_t *w, pdcbb_bcast_open_rep_t *p)
{
    p->result = w->result;
    p->error = w->error;
    p->nodes = w->nodes;
    p->nodes_count = (uint32_t)w->nnodes;
    p->paths = w->paths;
    p->paths_len = (uint32_t)w->paths_len;
}

/* Every part is in: answer the deferred request. */
static void wait_finish(bbd_t *d, bcast_wait_t *w)
{
    pdcbb_bcast_open_rep_t p;
    memset(&p, 0, sizeof(p));
    wait_fill(w, &p);
    bbd_server_answer(d, w->conn, &w->hdr, PDCBB_OK, &p);
    wait_free(w);
}

/* ------------------------------------------------------------------ forwarding */

/* A child's answer (or its failure) for out->w. */
static void forward_done(bbd_t *d, void *arg, pdcbb_err_t status, const char *why,
                         const uint8_t *msg, size_t len)
{
    bcast_out_t *o = arg;
    bcast_wait_t *w = o->w;
    buf_unref(o->bulk);
    pdcbb_bcast_open_rep_t p;
    pdcbb_msg_hdr_t h;
    if (status == PDCBB_OK && (status = pdcbb_hdr_decode(msg, len, &h)) == PDCBB_OK &&
        (status = pdcbb_body_decode(h.op, 1, msg + PDCBB_HDR_LEN, h.payload_len, &p)) ==
            PDCBB_OK) {
        if (p.result != PDCBB_OK) {
            if (w->result == PDCBB_OK)
                w->result = p.result;
            size_t n = strlen(w->error);
            if (n < BCAST_ERR_MAX)
                snprintf(w->error + n, BCAST_ERR_MAX - n, "%s%s", n ? "; " : "", p.error);
        }
        /* Per node: rank, crc, and its line of paths. */
        const char *line = p.paths;
        const char *end = line ? line + p.paths_len : NULL;
        for (uint32_t i = 0; i + 1 < p.nodes_count; i += 2) {
            const char *nl = line ? memchr(line, '\n', (size_t)(end - line)) : NULL;
            size_t ll = nl ? (size_t)(nl - line) + 1 : 0;
            wait_node(w, p.nodes[i], p.nodes[i + 1], ll ? line : "", ll);
            if (nl)
                line = nl + 1;
        }
        pdcbb_body_free(h.op, 1, &p);
    } else {
        wait_fail(w, status, "node %s (daemon %u): %s", bbd_peer_node(d, o->rank), o->rank,
                  why && *why ? why : "malformed reply");
    }
    free(o);
    if (--w->outstanding == 0)
        wait_finish(d, w);
}

/* Send request body of op (with bulk, if any) to daemon rank on behalf of w. */
static void forward(bbd_t *d, bcast_wait_t *w, unsigned rank, unsigned op, const void *body,
                    bcast_buf_t *bulk, size_t bulk_len)
{
    char why[512];
    bcast_out_t *o = calloc(1, sizeof(*o));
    if (o == NULL) {
        wait_fail(w, PDCBB_ERR_NOMEM, "node %s: out of memory forwarding to daemon %u", d->node,
                  rank);
        return;
    }
    o->w = w;
    o->rank = rank;
    o->bulk = bulk;
    pdcbb_err_t rc = bbd_peer_send(d, rank, op, body, bulk ? bulk->ptr : NULL, bulk_len,
                                   PDCBB_KIND_BROADCAST, forward_done, o, why, sizeof(why));
    if (rc != PDCBB_OK) {
        /* Still inside the handler: no reply is deferred yet. */
        free(o);
        wait_fail(w, rc, "node %s (daemon %u): %s", bbd_peer_node(d, rank), rank, why);
        return;
    }
    if (bulk)
        bulk->refs++;
    w->outstanding++;
}

/* ------------------------------------------------------------------ d->bcast_sessions */

static void sess_free(bcast_sess_t *s, int unlink_tmp)
{
    if (s->fd >= 0)
        close(s->fd);
    if (unlink_tmp && s->tmp[0])
        unlink(s->tmp);
    for (unsigned i = 0; i < s->nchild; i++)
        free(s->sub[i]);
    free(s);
}

static void sess_remove(bbd_t *d, bcast_sess_t *s)
{
    for (bcast_sess_t **pp = &d->bcast_sessions; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            return;
        }
}

static bcast_sess_t *sess_find(bbd_t *d, uint64_t id)
{
    double now = now_s();
    for (bcast_sess_t *s = d->bcast_sessions, *next; s; s = next) {
        next = s->next;
        if (now - s->last > BCAST_IDLE_SECONDS && s->id != id) {
            PDCBB_WARN("broadcast %016" PRIx64 " abandoned by its sender: removing %s", s->id,
                       s->tmp);
            sess_remove(d, s);
            sess_free(s, 1);
        }
    }
    for (bcast_sess_t *s = d->bcast_sessions; s; s = s->next)
        if (s->id == id) {
            s->last = now;
            return s;
        }
    return NULL;
}

void bbd_bcast_stop(bbd_t *d)
{
    while (d->bcast_sessions) {
        bcast_sess_t *s = d->bcast_sessions;
        d->bcast_sessions = s->next;
        sess_free(s, 1);
    }
    /* the endpoints and requests are bbd_peer.c's (bbd_peer_stop) */
}

/* Files of the burst buffer itself in the job directory: not a destination. */
static int reserved_name(const char *first, size_t len)
{
    static const char *const names[] = {"token", "config.yaml", "job.info", "prolog.error",
                                        "job.table", "user.yaml"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i]) == len && memcmp(first, names[i], len) == 0)
            return 1;
    return len >= 4 && memcmp(first, "bbd-", 4) == 0;
}

static pdcbb_err_t mkdirs(char *path, char *err, size_t errlen)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(path, 0700);
        int e = errno;
        *p = '/';
        if (rc != 0 && e != EEXIST) {
            *p = '\0';
            snprintf(err, errlen, "cannot create directory %s: %s", path, strerror(e));
            *p = '/';
            return pdcbb_err_from_errno(e);
        }
    }
    return PDCBB_OK;
}

/*
 * The final path of dest on this node: %n, %r and %% expanded; relative to the job directory
 * (no "..", not one of the burst buffer's own files, parent directories created) or absolute;
 * an existing directory or a trailing '/' gets name appended.
 */
static pdcbb_err_t dest_resolve(bbd_t *d, const char *dest, const char *name, char *out,
                                size_t outlen, char *err, size_t errlen)
{
    char x[PATH_MAX];
    size_t n = 0;
    for (const char *s = dest; *s; s++) {
        char add[PDCBB_NODE_NAME_MAX + 16];
        if (*s != '%') {
            add[0] = *s;
            add[1] = '\0';
        } else if (s[1] == 'n') {
            snprintf(add, sizeof(add), "%s", d->node);
            s++;
        } else if (s[1] == 'r') {
            snprintf(add, sizeof(add), "%u", d->rank);
            s++;
        } else if (s[1] == '%') {
            snprintf(add, sizeof(add), "%%");
            s++;
        } else {
            snprintf(err, errlen, "DEST '%s': unknown pattern '%%%c' (%%n node, %%r rank, %%%% %%)",
                     dest, s[1] ? s[1] : ' ');
            return PDCBB_ERR_INVAL;
        }
        size_t al = strlen(add);
        if (n + al + 1 >= sizeof(x)) {
            snprintf(err, errlen, "DEST '%s' is too long", dest);
            return PDCBB_ERR_TOO_BIG;
        }
        memcpy(x + n, add, al + 1);
        n += al;
    }
    if (n == 0) {
        snprintf(err, errlen, "DEST is empty");
        return PDCBB_ERR_INVAL;
    }
    if (name == NULL || name[0] == '\0' || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0) {
        snprintf(err, errlen, "bad source name '%s'", name ? name : "");
        return PDCBB_ERR_INVAL;
    }
    int rel = x[0] != '/';
    if (rel) {
        for (const char *c = x; *c;) {
            size_t cl = strcspn(c, "/");
            if (cl == 2 && c[0] == '.' && c[1] == '.') {
                snprintf(err, errlen,
                         "DEST '%s' leaves the job directory ('..'): give an absolute path "
                         "for a place outside it",
                         dest);
                return PDCBB_ERR_PERM;
            }
            if (c == x && reserved_name(c, cl)) {
                snprintf(err, errlen, "DEST '%s' would replace the burst buffer's own file %.*s",
                         dest, (int)cl, c);
                return PDCBB_ERR_PERM;
            }
            c += cl;
            while (*c == '/')
                c++;
        }
    } else if (geteuid() == 0) {
        /* Never write where the client says with more rights than the job's user has. */
        struct stat st;
        if (stat(d->job_dir, &st) != 0 || st.st_uid != 0) {
            snprintf(err, errlen,
                     "this daemon runs as root for a job of user %u: it writes no absolute "
                     "DEST; give a path relative to the job directory",
                     (unsigned)st.st_uid);
            return PDCBB_ERR_PERM;
        }
    }
    int slash = x[n - 1] == '/';
    int r = rel ? snprintf(out, outlen, "%s/%s", d->job_dir, x) : snprintf(out, outlen, "%s", x);
    if (r < 0 || (size_t)r >= outlen) {
        snprintf(err, errlen, "DEST '%s' is too long", dest);
        return PDCBB_ERR_TOO_BIG;
    }
    if (rel) {
        pdcbb_err_t rc = mkdirs(out, err, errlen);
        if (rc != PDCBB_OK)
            return rc;
    }
    struct stat st;
    if (slash || (stat(out, &st) == 0 && S_ISDIR(st.st_mode))) {
        size_t l = strlen(out);
        r = snprintf(out + l, outlen - l, "%s%s", out[l - 1] == '/' ? "" : "/", name);
        if (r < 0 || (size_t)r >= outlen - l) {
            snprintf(err, errlen, "DEST '%s' is too long", dest);
            return PDCBB_ERR_TOO_BIG;
        }
    }
    return PDCBB_OK;
}

/* Create this node's temporary file for s (s->final set). */
static pdcbb_err_t sess_create_tmp(bbd_t *d, bcast_sess_t *s, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", s->final);
    char *base = strrchr(dir, '/');
    *base++ = '\0';
    int r = snprintf(s->tmp, sizeof(s->tmp), "%s/.%s.bcast-%016" PRIx64 "-%u", dir[0] ? dir : "",
                     base, s->id, d->rank);
    if (r < 0 || (size_t)r >= sizeof(s->tmp)) {
        s->tmp[0] = '\0';
        snprintf(err, errlen, "%s: path too long", s->final);
        return PDCBB_ERR_TOO_BIG;
    }
    s->fd = open(s->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (s->fd < 0) {
        int e = errno;
        s->tmp[0] = '\0';
        snprintf(err, errlen, "cannot create %s: %s", s->final, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    if (s->size > 0 && fallocate(s->fd, 0, 0, (off_t)s->size) != 0 && errno != EOPNOTSUPP) {
        int e = errno;
        snprintf(err, errlen, "cannot allocate %" PRIu64 " bytes for %s: %s", s->size, s->final,
                 strerror(e));
        return pdcbb_err_from_errno(e);
    }
    return PDCBB_OK;
}

/* Set up the reply of a request: answered now (filled into p) or when the children answer. */
static pdcbb_err_t answer(bbd_req_t *r, bcast_wait_t *w, pdcbb_bcast_open_rep_t *p)
{
    if (w->outstanding > 0) {
        w->hdr = *r->hdr;
        w->conn = r->conn;
        bbd_conn_ref(r->conn);
        r->deferred = 1;
        return PDCBB_OK;
    }
    /* Copy into scratch memory: the reply is built after this returns. */
    wait_fill(w, p);
    size_t el = strlen(w->error) + 1;
    char *e = bbd_req_alloc(r, el);
    uint64_t *nodes = bbd_req_alloc(r, w->nnodes * sizeof(uint64_t) + 1);
    char *paths = bbd_req_alloc(r, w->paths_len + 1);
    if (e == NULL || nodes == NULL || paths == NULL) {
        wait_free(w);
        return PDCBB_ERR_NOMEM;
    }
    memcpy(e, w->error, el);
    if (w->nnodes)
        memcpy(nodes, w->nodes, w->nnodes * sizeof(uint64_t));
    if (w->paths_len)
        memcpy(paths, w->paths, w->paths_len);
    p->error = e;
    p->nodes = nodes;
    p->paths = paths;
    wait_free(w);
    return PDCBB_OK;
}

static bcast_wait_t *wait_new(void)
{
    return calloc(1, sizeof(bcast_wait_t));
}

/* ------------------------------------------------------------------ handlers */

/* The session of a CHUNK or CLOSE request and a fresh answer for it. */
static pdcbb_err_t sess_begin(bbd_req_t *r, uint64_t id, bcast_sess_t **s, bcast_wait_t **w)
{
    if (r->conn == NULL)
        return PDCBB_ERR_UNSUPPORTED;
    if ((*s = sess_find(r->d, id)) == NULL)
        return PDCBB_ERR_NOT_FOUND;
    return (*w = wait_new()) == NULL ? PDCBB_ERR_NOMEM : PDCBB_OK;
}

pdcbb_err_t bbd_op_bcast_open(bbd_req_t *r, const pdcbb_bcast_open_req_t *q,
                              pdcbb_bcast_open_rep_t *p)
{
    bbd_t *d = r->d;
    if (r->conn == NULL)
        return PDCBB_ERR_UNSUPPORTED;
    if (q->ranks_count < 1 || q->ranks_count > d->nservers || q->ranks[0] != d->rank ||
        q->fanout < 1 || q->fanout > PDCBB_BCAST_FANOUT_MAX || q->id == 0)
        return PDCBB_ERR_INVAL;
    for (uint32_t i = 0; i < q->ranks_count; i++) {
        if (q->ranks[i] >= d->nservers)
            return PDCBB_ERR_INVAL;
        for (uint32_t j = 0; j < i; j++)
            if (q->ranks[j] == q->ranks[i])
                return PDCBB_ERR_INVAL;
    }
    if (sess_find(r->d, q->id))
        return PDCBB_ERR_EXISTS;
    bcast_sess_t *s = calloc(1, sizeof(*s));
    bcast_wait_t *w = wait_new();
    if (s == NULL || w == NULL) {
        free(s);
        free(w);
        return PDCBB_ERR_NOMEM;
    }
    s->id = q->id;
    s->fd = -1;
    s->mode = (mode_t)(q->mode & 0777);
    s->size = q->size;
    s->last = now_s();
    /* The children: the first rank of each of the fanout groups the rest is split into. */
    uint32_t rest = q->ranks_count - 1, k = rest < q->fanout ? rest : q->fanout, at = 1;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t len = rest / k + (i < rest % k);
        s->sub[i] = malloc(len * sizeof(uint64_t));
        if (s->sub[i] == NULL) {
            sess_free(s, 0);
            free(w);
            return PDCBB_ERR_NOMEM;
        }
        memcpy(s->sub[i], q->ranks + at, len * sizeof(uint64_t));
        s->subn[i] = len;
        s->nchild = i + 1;
        at += len;
    }
    s->next = d->bcast_sessions;
    d->bcast_sessions = s;

    /* Every node is asked even if this one fails: the sender learns every bad node at once. */
    for (unsigned i = 0; i < s->nchild; i++) {
        pdcbb_bcast_open_req_t c = *q;
        c.ranks = s->sub[i];
        c.ranks_count = s->subn[i];
        forward(d, w, (unsigned)s->sub[i][0], PDCBB_OP_BCAST_OPEN, &c, NULL, 0);
    }
    char err[PATH_MAX + 200] = "";
    pdcbb_err_t rc = dest_resolve(d, q->dest, q->name, s->final, sizeof(s->final), err,
                                  sizeof(err));
    if (rc == PDCBB_OK)
        rc = sess_create_tmp(d, s, err, sizeof(err));
    if (rc != PDCBB_OK) {
        s->err = rc;
        snprintf(s->errmsg, sizeof(s->errmsg), "node %s (daemon %u): %s", d->node, d->rank, err);
        wait_fail(w, rc, "%s", s->errmsg);
        PDCBB_INFO("broadcast %016" PRIx64 ": %s", s->id, err);
    }
    return answer(r, w, p);
}

pdcbb_err_t bbd_op_bcast_chunk(bbd_req_t *r, const pdcbb_bcast_chunk_req_t *q,
                               pdcbb_bcast_chunk_rep_t *p)
{
    bbd_t *d = r->d;
    bcast_sess_t *s;
    bcast_wait_t *w;
    size_t len = r->in_bulk_len;
    pdcbb_err_t rc = sess_begin(r, q->id, &s, &w);
    if (rc != PDCBB_OK)
        return rc;
    if (q->offset != s->next_off || len > s->size - s->next_off) {
        wait_free(w);
        return PDCBB_ERR_INVAL; /* out of order or past the announced size */
    }
    if (s->nchild > 0 && len > 0) {
        /* One copy for every child's send; the received buffer goes back to staging. */
        bcast_buf_t *b = calloc(1, sizeof(*b));
        if (b && (b->ptr = malloc(len)) != NULL) {
            memcpy(b->ptr, r->in_bulk, len);
            b->refs = 1;
            for (unsigned i = 0; i < s->nchild; i++)
                forward(d, w, (unsigned)s->sub[i][0], PDCBB_OP_BCAST_CHUNK, q, b, len);
            buf_unref(b);
        } else {
            free(b);
            wait_fail(w, PDCBB_ERR_NOMEM, "node %s: out of memory forwarding", d->node);
        }
    } else if (s->nchild > 0) {
        for (unsigned i = 0; i < s->nchild; i++)
            forward(d, w, (unsigned)s->sub[i][0], PDCBB_OP_BCAST_CHUNK, q, NULL, 0);
    }
    if (s->err == PDCBB_OK && len > 0) {
        size_t done = 0;
        while (done < len) {
            ssize_t n = pwrite(s->fd, r->in_bulk + done, len - done,
                               (off_t)(q->offset + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                int e = n < 0 ? errno : EIO;
                s->err = pdcbb_err_from_errno(e);
                snprintf(s->errmsg, sizeof(s->errmsg), "node %s (daemon %u): writing %s: %s",
                         d->node, d->rank, s->final, strerror(e));
                PDCBB_INFO("broadcast %016" PRIx64 ": %s", s->id, s->errmsg);
                break;
            }
            done += (size_t)n;
        }
    }
    s->next_off += len;
    if (s->err != PDCBB_OK)
        wait_fail(w, s->err, "%s", s->errmsg);
    return answer(r, w, (pdcbb_bcast_open_rep_t *)p);
}

/* CRC-32C of this node's copy, read back from its file. */
static pdcbb_err_t crc_of_file(int fd, uint64_t size, uint32_t *crc)
{
    size_t bl = 4u << 20;
    uint8_t *buf = malloc(bl);
    if (buf == NULL)
        return PDCBB_ERR_NOMEM;
    uint32_t c = 0;
    uint64_t off = 0;
    pdcbb_err_t rc = PDCBB_OK;
    while (off < size) {
        size_t want = size - off < bl ? (size_t)(size - off) : bl;
        ssize_t n = pread(fd, buf, want, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? pdcbb_err_from_errno(errno) : PDCBB_ERR_IO;
            break;
        }
        c = pdcbb_crc32c(c, buf, (size_t)n);
        off += (uint64_t)n;
    }
    free(buf);
    *crc = c;
    return rc;
}

pdcbb_err_t bbd_op_bcast_close(bbd_req_t *r, const pdcbb_bcast_close_req_t *q,
                               pdcbb_bcast_close_rep_t *p)
{
    bbd_t *d = r->d;
    bcast_sess_t *s;
    bcast_wait_t *w;
    pdcbb_err_t rc = sess_begin(r, q->id, &s, &w);
    if (rc != PDCBB_OK)
        return rc;
    for (unsigned i = 0; i < s->nchild; i++)
        forward(d, w, (unsigned)s->sub[i][0], PDCBB_OP_BCAST_CLOSE, q, NULL, 0);
    sess_remove(r->d, s);
    if (q->abort) {
        sess_free(s, 1);
        return answer(r, w, (pdcbb_bcast_open_rep_t *)p);
    }
    rc = s->err;
    char err[PATH_MAX + 200] = "";
    uint32_t crc = 0;
    if (rc == PDCBB_OK && (q->size != s->size || s->next_off != s->size)) {
        rc = PDCBB_ERR_INVAL;
        snprintf(err, sizeof(err), "%s: got %" PRIu64 " of %" PRIu64 " bytes", s->final,
                 s->next_off, s->size);
    }
    if (rc == PDCBB_OK && (rc = crc_of_file(s->fd, s->size, &crc)) != PDCBB_OK)
        snprintf(err, sizeof(err), "reading back %s: %s", s->final, pdcbb_strerror(rc));
    if (rc == PDCBB_OK && crc != q->crc) {
        rc = PDCBB_ERR_IO;
        snprintf(err, sizeof(err), "%s: CRC-32C %08x of the copy, the source's is %08x",
                 s->final, crc, q->crc);
    }
    if (rc == PDCBB_OK && fchmod(s->fd, s->mode) != 0) {
        rc = pdcbb_err_from_errno(errno);
        snprintf(err, sizeof(err), "chmod %s: %s", s->final, strerror(errno));
    }
    if (rc == PDCBB_OK && close(s->fd) != 0) {
        rc = pdcbb_err_from_errno(errno);
        snprintf(err, sizeof(err), "closing %s: %s", s->final, strerror(errno));
    }
    if (rc == PDCBB_OK)
        s->fd = -1;
    if (rc == PDCBB_OK && rename(s->tmp, s->final) != 0) {
        rc = pdcbb_err_from_errno(errno);
        snprintf(err, sizeof(err), "rename into %s: %s", s->final, strerror(errno));
    }
    if (rc == PDCBB_OK) {
        s->tmp[0] = '\0';
        char line[PATH_MAX + PDCBB_NODE_NAME_MAX + 32];
        int n = snprintf(line, sizeof(line), "%u %s %s\n", d->rank, d->node, s->final);
        wait_node(w, d->rank, crc, line, n > 0 && (size_t)n < sizeof(line) ? (size_t)n : 0);
        PDCBB_INFO("broadcast %016" PRIx64 ": %s complete (%" PRIu64 " bytes)", s->id, s->final,
                   s->size);
    } else if (s->err == PDCBB_OK) {
        wait_fail(w, rc, "node %s (daemon %u): %s", d->node, d->rank, err);
    } else {
        wait_fail(w, rc, "%s", s->errmsg);
    }
    sess_free(s, 1);
    return answer(r, w, (pdcbb_bcast_open_rep_t *)p);
}
