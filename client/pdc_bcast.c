/*
 * pdc_bcast.c - PDCbb_bcast: the sending side of a file broadcast (`pdcbb bcast`).
 *
 * The file is read once, here, as the calling user, and streamed in chunks to one daemon (this
 * node's, so the first hop is local), the root of a tree over one daemon per node; the daemons
 * forward and write (bbd/bbd_bcast.c). A few chunks are in flight at a time: the reply to a
 * chunk means every node below the root wrote it, so the file streams through the tree with
 * bounded memory everywhere. Any failure aborts the broadcast on every node (their temporary
 * files are removed) and names the nodes that failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"
#include "pdcbb_crc32c.h"

#define BCAST_WINDOW 4
#define BCAST_CHUNK_DEFAULT ((uint64_t)4 << 20)
#define BCAST_CHUNK_MIN ((uint64_t)4 << 10)
#define BCAST_CHUNK_MAX ((uint64_t)256 << 20)

/* Wait for p and decode its reply; the daemons' result and error go to *result / client_fail. */
static pdcbb_err_t bcast_finish(client_pending_t *p, unsigned op, pdcbb_bcast_open_rep_t *rep,
                                void **keep)
{
    client_rpc_wait(p, client_g.cfg.request_timeout);
    pdcbb_err_t rc = client_rpc_finish(p, rep, keep);
    if (rc != PDCBB_OK)
        return rc;
    if (rep->result != PDCBB_OK) {
        rc = client_fail(rep->result, "%s", rep->error && rep->error[0] ? rep->error
                                                                        : pdcbb_strerror(rep->result));
        client_rpc_release(op, rep, *keep);
        *keep = NULL;
        return rc;
    }
    return PDCBB_OK;
}

static pdcbb_err_t bcast_call(unsigned root, unsigned op, const void *q, const void *bulk,
                              size_t bulk_len, pdcbb_bcast_open_rep_t *rep, void **keep)
{
    client_pending_t *p;
    pdcbb_err_t rc = client_rpc_post(root, op, q, bulk, bulk_len, NULL, 0, &p);
    if (rc != PDCBB_OK)
        return rc;
    return bcast_finish(p, op, rep, keep);
}

/* Tell every node to drop its temporary file; keeps the first error's message. */
static void bcast_abort(unsigned root, uint64_t id)
{
    char msg[4096];
    int err = PDCbb_last_error();
    snprintf(msg, sizeof(msg), "%s", PDCbb_last_error_message());
    pdcbb_bcast_close_req_t q = {.id = id, .abort = 1};
    pdcbb_bcast_open_rep_t rep;
    void *keep = NULL;
    if (bcast_call(root, PDCBB_OP_BCAST_CLOSE, &q, NULL, 0, &rep, &keep) == PDCBB_OK)
        client_rpc_release(PDCBB_OP_BCAST_CLOSE, &rep, keep);
    client_fail((pdcbb_err_t)err, "%s", msg);
}

perr_t PDCbb_bcast(const char *src, const char *dest, uint64_t chunk_size, unsigned fanout,
                   PDCbb_bcast_progress_t progress, void *arg, uint32_t *crc_out, char **report)
{
    perr_t ret = FAIL;
    int fd = -1;
    uint64_t *ranks = NULL;
    uint8_t *bufs = NULL;
    client_pending_t *win[BCAST_WINDOW] = {0};
    CLIENT_ENTER();
    client_clear_error();
    if (client_check_init() != PDCBB_OK)
        goto out;
    if (src == NULL || dest == NULL || dest[0] == '\0') {
        client_fail(PDCBB_ERR_INVAL, "PDCbb_bcast: give a source file and a destination");
        goto out;
    }
    if (client_g.drained != NULL) {
        client_fail(PDCBB_ERR_UNSUPPORTED, "PDCbb_bcast: %s is a drained job: it has no nodes "
                                           "to broadcast to", client_drained_dir());
        goto out;
    }
    if (chunk_size == 0)
        chunk_size = BCAST_CHUNK_DEFAULT;
    if (fanout == 0)
        fanout = 2;
    if (chunk_size < BCAST_CHUNK_MIN || chunk_size > BCAST_CHUNK_MAX ||
        fanout > PDCBB_BCAST_FANOUT_MAX) {
        client_fail(PDCBB_ERR_INVAL, "PDCbb_bcast: chunk size %llu (4 KiB to 256 MiB) or fanout "
                                     "%u (1 to %u) out of range",
                    (unsigned long long)chunk_size, fanout, PDCBB_BCAST_FANOUT_MAX);
        goto out;
    }
    fd = open(src, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        client_fail(pdcbb_err_from_errno(errno), "cannot read %s: %s", src, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        client_fail(PDCBB_ERR_INVAL, "%s is not a regular file (a directory? pdcbb bcast sends "
                                     "single files)", src);
        goto out;
    }
    const char *name = strrchr(src, '/');
    name = name ? name + 1 : src;

    /* One daemon per node, this node's first: the root of the tree. */
    ranks = calloc(client_g.nservers, sizeof(*ranks));
    bufs = malloc((size_t)chunk_size * BCAST_WINDOW);
    if (ranks == NULL || bufs == NULL) {
        client_fail(PDCBB_ERR_NOMEM, "out of memory");
        goto out;
    }
    unsigned root = client_g.local_rank < client_g.nservers ? client_g.local_rank : 0;
    uint32_t n = 0;
    ranks[n++] = root;
    for (unsigned i = 0; i < client_g.nservers; i++) {
        int seen = 0;
        for (uint32_t j = 0; j < n && !seen; j++)
            seen = strcmp(client_g.servers[ranks[j]].info.node, client_g.servers[i].info.node) == 0;
        if (!seen)
            ranks[n++] = i;
    }
    uint64_t id = 0;
    while (id == 0)
        if (getrandom(&id, sizeof(id), 0) != sizeof(id)) {
            client_fail(PDCBB_ERR_INTERNAL, "getrandom: %s", strerror(errno));
            goto out;
        }

    pdcbb_bcast_open_rep_t rep;
    void *keep = NULL;
    pdcbb_bcast_open_req_t oq = {.id = id, .dest = dest, .name = name,
                                 .mode = (uint32_t)(st.st_mode & 0777), .size = (uint64_t)st.st_size,
                                 .fanout = fanout, .ranks = ranks, .ranks_count = n};
    pdcbb_err_t rc = bcast_call(root, PDCBB_OP_BCAST_OPEN, &oq, NULL, 0, &rep, &keep);
    if (rc != PDCBB_OK) {
        if (PDCbb_last_error() != PDCBB_ERR_UNREACHABLE && PDCbb_last_error() != PDCBB_ERR_TIMEOUT)
            bcast_abort(root, id);
        goto out;
    }
    client_rpc_release(PDCBB_OP_BCAST_OPEN, &rep, keep);

    /* Stream: read the next chunk while up to BCAST_WINDOW earlier ones are on their way. */
    uint64_t size = (uint64_t)st.st_size, sent = 0, acked = 0;
    uint64_t win_len[BCAST_WINDOW] = {0};
    uint32_t crc = 0;
    unsigned head = 0, inflight = 0;
    while (acked < size) {
        if (sent < size && inflight < BCAST_WINDOW) {
            unsigned slot = (head + inflight) % BCAST_WINDOW;
            uint8_t *b = bufs + (size_t)slot * chunk_size;
            size_t want = size - sent < chunk_size ? (size_t)(size - sent) : (size_t)chunk_size;
            size_t got = 0;
            while (got < want) {
                ssize_t r = pread(fd, b + got, want - got, (off_t)(sent + got));
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0) {
                    client_fail(r < 0 ? pdcbb_err_from_errno(errno) : PDCBB_ERR_IO,
                                "reading %s at byte %llu: %s", src,
                                (unsigned long long)(sent + got),
                                r < 0 ? strerror(errno) : "the file shrank");
                    goto abort;
                }
                got += (size_t)r;
            }
            crc = pdcbb_crc32c(crc, b, want);
            pdcbb_bcast_chunk_req_t cq = {.id = id, .offset = sent};
            if (client_rpc_post(root, PDCBB_OP_BCAST_CHUNK, &cq, b, want, NULL, 0, &win[slot]) !=
                PDCBB_OK)
                goto abort;
            win_len[slot] = want;
            sent += want;
            inflight++;
            continue;
        }
        client_pending_t *p = win[head];
        win[head] = NULL;
        rc = bcast_finish(p, PDCBB_OP_BCAST_CHUNK, &rep, &keep);
        if (rc != PDCBB_OK)
            goto abort;
        client_rpc_release(PDCBB_OP_BCAST_CHUNK, &rep, keep);
        acked += win_len[head];
        head = (head + 1) % BCAST_WINDOW;
        inflight--;
        if (progress)
            progress(acked, size, arg);
    }

    pdcbb_bcast_close_req_t cq = {.id = id, .size = size, .crc = crc};
    if (bcast_call(root, PDCBB_OP_BCAST_CLOSE, &cq, NULL, 0, &rep, &keep) != PDCBB_OK) {
        bcast_abort(root, id); /* the nodes that did not fail still hold a temporary file */
        goto out;
    }
    int bad = rep.nodes_count != 2 * n;
    for (uint32_t i = 1; i < rep.nodes_count && !bad; i += 2)
        bad = rep.nodes[i] != crc;
    if (bad) {
        client_fail(PDCBB_ERR_IO, "%u of %u nodes confirmed a copy with CRC-32C %08x",
                    rep.nodes_count / 2, n, crc);
    } else {
        if (crc_out)
            *crc_out = crc;
        if (report) {
            *report = malloc(rep.paths_len + 1);
            if (*report) {
                memcpy(*report, rep.paths, rep.paths_len);
                (*report)[rep.paths_len] = '\0';
            }
        }
        ret = SUCCEED;
    }
    client_rpc_release(PDCBB_OP_BCAST_CLOSE, &rep, keep);
    goto out;

abort:
    for (unsigned i = 0; i < BCAST_WINDOW; i++)
        if (win[i]) {
            client_rpc_wait(win[i], client_g.cfg.request_timeout);
            client_pending_free(win[i]);
            win[i] = NULL;
        }
    bcast_abort(root, id);
out:
    for (unsigned i = 0; i < BCAST_WINDOW; i++)
        client_pending_free(win[i]);
    if (fd >= 0)
        close(fd);
    free(ranks);
    free(bufs);
    CLIENT_LEAVE();
    return ret;
}
