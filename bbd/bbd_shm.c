/*
 * bbd_shm.c - the daemon's side of the shared-memory channels (common/pdcbb_shm.h) with
 * clients of its own node.
 *
 * Owns the abstract Unix listening socket, one channel per client process (the client's memfd
 * mapped here, its socket and a pidfd of its process) and the polling of the channels' request
 * slots. A channel is accepted only from a process of the daemon's own uid (SO_PEERCRED) whose
 * hello carries the job's token; every request on it is then checked by bbd_dispatch like one
 * from UCX (header, token, op, body), after being copied out of the shared slot, so a client
 * scribbling on its slot can only garble its own request. A client that exits (pidfd readable)
 * or closes its socket loses its channel at once: a request of it in progress is finished (its
 * changes are committed like those of a UCX request whose client died) and nothing else is held.
 *
 * Replies leave only after bbd_dispatch returned, i.e. after the store's commit: what a client
 * is told is stored is in LMDB's file (page cache), whichever transport carried the request.
 * Everything here runs on the event-loop thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "bbd.h"
#include "pdcbb_log.h"
#include "pdcbb_shm.h"

/* At most this many requests in one group commit (more wait for the next pass). */
#define BBD_SHM_BATCH_MAX 64

typedef struct bbd_chan {
    struct bbd_chan *next;
    uint64_t id;
    int sock;
    int pidfd;
    pid_t pid;
    int ready;            /* handshake done: the mapping is valid */
    void *map;
    pdcbb_shm_ctl_t *ctl;
    uint64_t done_seq;    /* the last request answered */
    int bye;              /* the client said goodbye (PDCclose): its EOF is a normal close */
    uint8_t *copy;        /* a private copy of the request being handled */
    size_t copy_cap;
} bbd_chan_t;

struct bbd_shm {
    int listen_fd;
    int epfd;
    bbd_chan_t *chans;
    uint64_t next_id;
    /* Requests handled together in one pass (group commit). */
    bbd_batch_item_t batch[BBD_SHM_BATCH_MAX];
    bbd_chan_t *batch_chan[BBD_SHM_BATCH_MAX];
    uint64_t batch_seq[BBD_SHM_BATCH_MAX];
    size_t batch_cap;
};

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static void epoll_add(int epfd, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.fd = fd;
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

pdcbb_err_t bbd_shm_start(bbd_t *d, int epfd)
{
    struct bbd_shm *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return PDCBB_ERR_NOMEM;
    s->epfd = epfd;
    s->listen_fd = -1;
    s->batch_cap = BBD_SHM_BATCH_MAX;
    d->shm = s;
    const char *env = getenv("PDCBB_SHM");
    if (env && strcmp(env, "0") == 0) {
        PDCBB_INFO("shared-memory channels are off (PDCBB_SHM=0)");
        return PDCBB_OK;
    }
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    /* Abstract name: no file to leave behind; peers are checked with SO_PEERCRED instead. */
    int n = pdcbb_shm_sock_name(sa.sun_path + 1, sizeof(sa.sun_path) - 1, d->job_id, d->rank,
                                (long)getpid());
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) != 0 || listen(fd, 64) != 0) {
        PDCBB_WARN("no shared-memory channels (clients use UCX only): socket %s: %s",
                   sa.sun_path + 1, strerror(errno));
        if (fd >= 0)
            close(fd);
        return PDCBB_OK;
    }
    s->listen_fd = fd;
    epoll_add(epfd, fd);
    PDCBB_INFO("shared-memory channels on abstract socket @%s", sa.sun_path + 1);
    return PDCBB_OK;
}

static void chan_close(bbd_t *d, bbd_chan_t *c, const char *why)
{
    struct bbd_shm *s = d->shm;
    for (bbd_chan_t **pp = &s->chans; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    if (why)
        PDCBB_INFO("shared-memory channel %llu of pid %ld closed: %s", (unsigned long long)c->id,
                   (long)c->pid, why);
    if (c->sock >= 0) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->sock, NULL);
        close(c->sock);
    }
    if (c->pidfd >= 0) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->pidfd, NULL);
        close(c->pidfd);
    }
    if (c->map)
        munmap(c->map, PDCBB_SHM_SIZE);
    free(c->copy);
    if (c->ready && d->stats.shm_channels_open > 0)
        d->stats.shm_channels_open--;
    free(c);
}

void bbd_shm_stop(bbd_t *d)
{
    struct bbd_shm *s = d->shm;
    if (s == NULL)
        return;
    while (s->chans)
        chan_close(d, s->chans, NULL);
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    free(s);
    d->shm = NULL;
}

static void accept_all(bbd_t *d)
{
    struct bbd_shm *s = d->shm;
    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        struct ucred cr;
        socklen_t crlen = sizeof(cr);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0 || cr.uid != geteuid()) {
            /* The abstract namespace is open to every user of the node: only the job user's
             * own processes get a channel. */
            d->stats.auth_failures++;
            PDCBB_WARN("refused a shared-memory channel from pid %ld uid %ld: not the job user",
                       (long)cr.pid, (long)cr.uid);
            close(fd);
            continue;
        }
        bbd_chan_t *c = calloc(1, sizeof(*c));
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->id = ++s->next_id;
        c->sock = fd;
        c->pidfd = -1;
        c->pid = cr.pid;
        c->next = s->chans;
        s->chans = c;
        epoll_add(s->epfd, fd);
    }
}

static void send_ack(int fd, pdcbb_err_t status, unsigned rank)
{
    pdcbb_shm_ack_t a = {.magic = PDCBB_SHM_MAGIC, .status = status, .rank = rank};
    ssize_t n = send(fd, &a, sizeof(a), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
}

/* The hello and the memfd arrived on c's socket: map it, watch the process. */
static void handshake(bbd_t *d, bbd_chan_t *c)
{
    pdcbb_shm_hello_t h;
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } cm;
    struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
                        .msg_controllen = sizeof(cm.buf)};
    ssize_t n = recvmsg(c->sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    int mfd = -1;
    for (struct cmsghdr *cmh = CMSG_FIRSTHDR(&mh); cmh; cmh = CMSG_NXTHDR(&mh, cmh))
        if (cmh->cmsg_level == SOL_SOCKET && cmh->cmsg_type == SCM_RIGHTS &&
            cmh->cmsg_len == CMSG_LEN(sizeof(int))) {
            if (mfd >= 0)
                close(mfd);
            memcpy(&mfd, CMSG_DATA(cmh), sizeof(int));
        }
    const char *why = NULL;
    pdcbb_err_t st = PDCBB_ERR_PROTO;
    struct stat sb;
    int seals;
    if (n == 0) {
        why = "closed before its hello";
    } else if (n != (ssize_t)sizeof(h) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
               h.magic != PDCBB_SHM_MAGIC) {
        why = "malformed hello";
    } else if (h.version != PDCBB_SHM_VERSION) {
        why = "unknown channel version";
        st = PDCBB_ERR_VERSION;
    } else if (!pdcbb_token_equal(h.token, d->token)) {
        why = "wrong job token";
        st = PDCBB_ERR_AUTH;
        d->stats.auth_failures++;
    } else if (mfd < 0 || fstat(mfd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
               (uint64_t)sb.st_size < PDCBB_SHM_SIZE || h.size != PDCBB_SHM_SIZE ||
               h.slot_size != PDCBB_SHM_SLOT) {
        why = "no memory file of the expected size";
    } else if ((seals = fcntl(mfd, F_GET_SEALS)) < 0 || (seals & F_SEAL_SHRINK) == 0) {
        /* A file that can shrink under our mapping would be a SIGBUS here. */
        why = "the memory file is not sealed against shrinking";
    } else if ((c->map = mmap(NULL, PDCBB_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd,
                              0)) == MAP_FAILED) {
        c->map = NULL;
        why = "cannot map the memory file";
        st = PDCBB_ERR_NOMEM;
    } else if ((c->pidfd = pidfd_open_(c->pid)) < 0) {
        why = "cannot watch the process (pidfd_open)";
        st = pdcbb_err_from_errno(errno);
    }
    if (mfd >= 0)
        close(mfd);
    if (why) {
        if (st == PDCBB_ERR_PROTO)
            d->stats.proto_errors++;
        PDCBB_WARN("refused a shared-memory channel from pid %ld: %s", (long)c->pid, why);
        send_ack(c->sock, st, d->rank);
        chan_close(d, c, NULL);
        return;
    }
    c->ctl = c->map;
    /* Requests before this point are not ours to answer: start from what is there. */
    c->done_seq = atomic_load(&c->ctl->req_seq);
    atomic_store(&c->ctl->rep_seq, c->done_seq);
    atomic_store(&c->ctl->rep_word, (uint32_t)c->done_seq);
    epoll_add(d->shm->epfd, c->pidfd);
    c->ready = 1;
    d->stats.shm_channels++;
    d->stats.shm_channels_open++;
    send_ack(c->sock, PDCBB_OK, d->rank);
    PDCBB_DEBUG("shared-memory channel %llu from pid %ld", (unsigned long long)c->id,
                (long)c->pid);
}

int bbd_shm_event(bbd_t *d, int fd)
{
    struct bbd_shm *s = d->shm;
    if (s == NULL)
        return 0;
    if (fd == s->listen_fd) {
        accept_all(d);
        return 1;
    }
    for (bbd_chan_t *c = s->chans; c; c = c->next) {
        if (fd == c->pidfd) {
            /* The client's process exited (killed, or ended without PDCclose). */
            chan_close(d, c, "the process exited");
            return 1;
        }
        if (fd != c->sock)
            continue;
        if (!c->ready) {
            handshake(d, c);
            return 1;
        }
        char junk[256];
        ssize_t n;
        while ((n = recv(c->sock, junk, sizeof(junk), MSG_DONTWAIT)) > 0)
            if (memchr(junk, PDCBB_SHM_BYE, (size_t)n))
                c->bye = 1; /* the rest are wake-ups: the slots are polled anyway */
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            if (c->bye) {
                chan_close(d, c, NULL);
                return 1;
            }
            /* No goodbye: the process died (the kernel closes its socket a moment before
             * its pidfd reports the exit) or closed the socket by hand. */
            struct pollfd pfd = {.fd = c->pidfd, .events = POLLIN};
            int exited = poll(&pfd, 1, 20) == 1;
            chan_close(d, c, exited ? "the process exited"
                                    : "the socket closed without a goodbye");
        }
        return 1;
    }
    return 0;
}

/* Give c's client the reply (malloc'ed, freed here; NULL: an INTERNAL error) to request seq. */
static void publish_reply(bbd_t *d, bbd_chan_t *c, uint64_t seq, const uint8_t *req,
                          uint64_t len, void *reply, size_t reply_len)
{
    pdcbb_shm_ctl_t *ctl = c->ctl;
    uint32_t flags = 0;
    if (reply == NULL) {
        /* Unanswerable (e.g. out of memory): a header-only error, so the client is not stuck. */
        pdcbb_msg_hdr_t h = {.magic = PDCBB_PROTO_MAGIC, .version = PDCBB_PROTO_VERSION,
                             .flags = PDCBB_MSG_FLAG_REPLY, .status = PDCBB_ERR_INTERNAL};
        if (req && len >= PDCBB_HDR_LEN) {
            memcpy(&h.req_id, req + 8, 8);
            memcpy(&h.op, req + 6, 2);
        }
        uint8_t hb[PDCBB_HDR_LEN];
        pdcbb_hdr_encode(&h, hb);
        memcpy(pdcbb_shm_rep_slot(c->map), hb, sizeof(hb));
        ctl->rep_len = sizeof(hb);
        bbd_stats_sent(d, hb, sizeof(hb), 0);
    } else if (reply_len > PDCBB_SHM_SLOT) {
        flags = PDCBB_SHM_REP_RETRY; /* only read replies get this big */
        ctl->rep_len = 0;
        bbd_stats_sent(d, reply, PDCBB_HDR_LEN, 0); /* only the news: ask again over UCX */
    } else {
        memcpy(pdcbb_shm_rep_slot(c->map), reply, reply_len);
        ctl->rep_len = reply_len;
        bbd_stats_sent(d, reply, reply_len, 0);
    }
    free(reply);
    ctl->rep_flags = flags;
    c->done_seq = seq;
    atomic_store(&ctl->rep_seq, seq);
    atomic_store(&ctl->rep_word, (uint32_t)seq);
    if (atomic_load(&ctl->client_sleeping))
        pdcbb_shm_futex_wake(&ctl->rep_word);
}

/* Copy the request of c out of the shared slot (the client may change the slot while we decode);
 * 0 if its length is impossible. */
static int copy_request(bbd_chan_t *c, uint64_t *lenp)
{
    uint64_t len = *(volatile uint64_t *)&c->ctl->req_len;
    *lenp = len;
    if (!pdcbb_shm_msg_len_ok(len))
        return 0;
    if (len > c->copy_cap) {
        size_t cap = len < 4096 ? 4096 : (size_t)len;
        uint8_t *b = realloc(c->copy, cap);
        if (b == NULL)
            return -1;
        c->copy = b;
        c->copy_cap = cap;
    }
    memcpy(c->copy, pdcbb_shm_req_slot(c->map), (size_t)len);
    return 1;
}

/* Handle the request waiting in c's slot on its own. */
static void serve_one(bbd_t *d, bbd_chan_t *c, uint64_t seq)
{
    void *reply = NULL;
    size_t reply_len = 0;
    uint64_t len;
    int ok = copy_request(c, &len);
    if (ok < 0) {
        PDCBB_ERROR("out of memory for a shared-memory request");
        return; /* retried on the next pass */
    }
    d->stats.shm_requests++;
    if (!ok) {
        /* Nothing to decode. */
        d->stats.requests++;
        bbd_stats_recv(d, NULL, 0);
        d->stats.proto_errors++;
        PDCBB_WARN("refused a shared-memory request of pid %ld: length %llu outside 64..%u",
                   (long)c->pid, (unsigned long long)len, PDCBB_SHM_SLOT);
        pdcbb_msg_hdr_t h = {.magic = PDCBB_PROTO_MAGIC, .version = PDCBB_PROTO_VERSION,
                             .flags = PDCBB_MSG_FLAG_REPLY, .status = PDCBB_ERR_PROTO};
        pdcbb_msg_build(&h, NULL, &reply, &reply_len);
        publish_reply(d, c, seq, NULL, 0, reply, reply_len);
        return;
    }
    bbd_server_local_request(d, c->copy, (size_t)len, &reply, &reply_len);
    publish_reply(d, c, seq, c->copy, len, reply, reply_len);
}

int bbd_shm_serve(bbd_t *d)
{
    struct bbd_shm *s = d->shm;
    int served = 0;
    size_t n = 0;
    if (s == NULL)
        return 0;
    /*
     * Metadata requests waiting on several channels are handled together, in one store
     * transaction with one commit (group commit, bbd_dispatch_batch); their replies go out
     * after that commit. Anything else is handled on its own first.
     */
    for (bbd_chan_t *c = s->chans; c; c = c->next) {
        if (!c->ready)
            continue;
        uint64_t seq = atomic_load_explicit(&c->ctl->req_seq, memory_order_acquire);
        if (seq == c->done_seq)
            continue;
        served++;
        uint64_t len;
        uint8_t *slot = pdcbb_shm_req_slot(c->map);
        unsigned op = (unsigned)(slot[6] | slot[7] << 8);
        if (!bbd_op_is_batchable(op) || n == s->batch_cap || copy_request(c, &len) != 1) {
            serve_one(d, c, seq);
            continue;
        }
        d->stats.shm_requests++;
        s->batch[n] = (bbd_batch_item_t){.msg = c->copy, .len = (size_t)len};
        s->batch_chan[n] = c;
        s->batch_seq[n] = seq;
        n++;
    }
    if (n > 0) {
        bbd_dispatch_batch(d, s->batch, n);
        for (size_t i = 0; i < n; i++)
            publish_reply(d, s->batch_chan[i], s->batch_seq[i], s->batch[i].msg, s->batch[i].len,
                          s->batch[i].reply, s->batch[i].reply_len);
    }
    return served;
}

int bbd_shm_sleep_prepare(bbd_t *d)
{
    struct bbd_shm *s = d->shm;
    if (s == NULL)
        return 0;
    for (bbd_chan_t *c = s->chans; c; c = c->next)
        if (c->ready)
            atomic_store(&c->ctl->daemon_sleeping, 1);
    /* Pairs with the client's store of req_seq before its load of daemon_sleeping. */
    for (bbd_chan_t *c = s->chans; c; c = c->next)
        if (c->ready && atomic_load(&c->ctl->req_seq) != c->done_seq)
            return 1;
    return 0;
}

void bbd_shm_awake(bbd_t *d)
{
    struct bbd_shm *s = d->shm;
    if (s == NULL)
        return;
    for (bbd_chan_t *c = s->chans; c; c = c->next)
        if (c->ready)
            atomic_store_explicit(&c->ctl->daemon_sleeping, 0, memory_order_relaxed);
}
