/*
 * client_shm.c - the client's side of the shared-memory channels (common/pdcbb_shm.h): small
 * synchronous requests to a daemon of this node without a UCX round trip over TCP.
 *
 * A channel is opened on the first synchronous call to a daemon whose endpoint record this
 * process read from its node's job directory (so the daemon runs on this node), and only if
 * the process behind the daemon's socket is that record's pid and runs as our uid. It is used
 * by client_rpc() when nothing of this process is outstanding on UCX to that daemon (a region
 * transfer in flight keeps later calls on UCX, behind it, so the daemon sees them in order).
 * Anything that does not fit a slot, and replies the daemon could not fit, go over UCX.
 *
 * PDCBB_SHM=0 in the environment turns the channels off (every request goes over UCX).
 * A channel belongs to the process that opened it: a forked child uses UCX. Called under the
 * library lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"
#include "pdcbb_log.h"
#include "pdcbb_shm.h"

struct client_shm {
    int sock;
    void *map;
    pdcbb_shm_ctl_t *ctl;
    pid_t owner;
    uint64_t seq;
};

/* Polling before sleeping: a metadata request takes a few microseconds in the daemon; longer
 * means it is busy with others or waiting for a CPU: then sleep (never sched_yield: on a node
 * whose cores all compute it hands the core to the application for a whole time slice). */
#define SHM_SPIN_SECONDS 30e-6

/* This process's pid, without a system call per request (getpid is one); reset in a child. */
static pid_t my_pid;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void child_after_fork(void)
{
    my_pid = 0;
}

static void atfork_register(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

static pid_t self_pid(void)
{
    if (my_pid == 0) {
        pthread_once(&atfork_once, atfork_register);
        my_pid = getpid();
    }
    return my_pid;
}

static int shm_wanted(void)
{
    static int wanted = -1;
    if (wanted < 0) {
        const char *e = getenv("PDCBB_SHM");
        wanted = !(e && strcmp(e, "0") == 0);
    }
    return wanted;
}

static void shm_free(struct client_shm *c)
{
    if (c == NULL)
        return;
    if (c->map)
        munmap(c->map, PDCBB_SHM_SIZE);
    if (c->sock >= 0)
        close(c->sock);
    free(c);
}

void client_shm_close(unsigned server)
{
    client_server_t *s = &client_g.servers[server];
    if (s->shm && s->shm->owner == self_pid()) {
        char bye = PDCBB_SHM_BYE;
        ssize_t n = send(s->shm->sock, &bye, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)n;
    }
    shm_free(s->shm);
    s->shm = NULL;
}

/* Open a channel to server; NULL (and UCX is used) if it cannot be. */
static struct client_shm *shm_open_channel(unsigned server)
{
    client_server_t *s = &client_g.servers[server];
    struct client_shm *c = calloc(1, sizeof(*c));
    int mfd = -1;
    const char *why = "out of memory";
    if (c == NULL)
        return NULL;
    c->sock = -1;
    c->owner = self_pid();
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    int n = pdcbb_shm_sock_name(sa.sun_path + 1, sizeof(sa.sun_path) - 1, client_g.job_id,
                                server, (long)s->info.pid);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    struct ucred cr;
    socklen_t crlen = sizeof(cr);
    why = "no channel socket";
    if ((c->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        connect(c->sock, (struct sockaddr *)&sa, len) != 0)
        goto fail;
    /* Anyone may bind an abstract name: talk only to the daemon of the record, as our user. */
    why = "the socket is not the daemon's";
    if (getsockopt(c->sock, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0 ||
        cr.pid != s->info.pid || cr.uid != geteuid())
        goto fail;
    why = "cannot create the shared memory";
    /* Sealed against shrinking: the daemon must never touch a page that vanished (SIGBUS). */
    if ((mfd = memfd_create("pdcbb-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0 ||
        ftruncate(mfd, (off_t)PDCBB_SHM_SIZE) != 0 ||
        fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        goto fail;
    c->map = mmap(NULL, PDCBB_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (c->map == MAP_FAILED) {
        c->map = NULL;
        goto fail;
    }
    c->ctl = c->map;
    c->ctl->magic = PDCBB_SHM_MAGIC;
    c->ctl->version = PDCBB_SHM_VERSION;
    c->ctl->slot_size = PDCBB_SHM_SLOT;

    pdcbb_shm_hello_t h = {.magic = PDCBB_SHM_MAGIC, .version = PDCBB_SHM_VERSION,
                           .size = PDCBB_SHM_SIZE, .slot_size = PDCBB_SHM_SLOT,
                           .client_pid = (uint32_t)getpid()};
    memcpy(h.token, s->info.token, PDCBB_TOKEN_LEN);
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } cm;
    memset(&cm, 0, sizeof(cm));
    struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
                        .msg_controllen = sizeof(cm.buf)};
    struct cmsghdr *cmh = CMSG_FIRSTHDR(&mh);
    cmh->cmsg_level = SOL_SOCKET;
    cmh->cmsg_type = SCM_RIGHTS;
    cmh->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmh), &mfd, sizeof(int));
    why = "cannot send the hello";
    if (sendmsg(c->sock, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(h))
        goto fail;
    close(mfd);
    mfd = -1;
    pdcbb_shm_ack_t a;
    struct pollfd pfd = {.fd = c->sock, .events = POLLIN};
    why = "no answer to the hello";
    int ms = (int)(client_g.cfg.connect_timeout * 1000);
    if (poll(&pfd, 1, ms < 100 ? 100 : ms) != 1 ||
        recv(c->sock, &a, sizeof(a), MSG_WAITALL) != (ssize_t)sizeof(a) ||
        a.magic != PDCBB_SHM_MAGIC)
        goto fail;
    if (a.status != PDCBB_OK || a.rank != server) {
        PDCBB_INFO("daemon %u refused a shared-memory channel: %s", server,
                   pdcbb_strerror((pdcbb_err_t)a.status));
        why = NULL;
        goto fail;
    }
    PDCBB_DEBUG("shared-memory channel to daemon %u open", server);
    return c;
fail:
    if (why)
        PDCBB_DEBUG("no shared-memory channel to daemon %u (%s: %s): using UCX", server, why,
                    strerror(errno));
    if (mfd >= 0)
        close(mfd);
    shm_free(c);
    return NULL;
}

/* 1 if server's requests may go over its channel now (opening it if needed). */
static int shm_usable(unsigned server)
{
    client_server_t *s = &client_g.servers[server];
    if (!shm_wanted() || s->record_path[0] == '\0' || s->info.pid <= 0)
        return 0;
    if (s->shm && s->shm->owner != self_pid()) {
        /* A forked child: the channel is the parent's. Forget it without touching it. */
        s->shm = NULL;
        s->shm_pid_tried = s->info.pid;
        return 0;
    }
    if (s->shm == NULL) {
        if (s->shm_pid_tried == s->info.pid)
            return 0; /* tried with this daemon already */
        s->shm_pid_tried = s->info.pid;
        if ((s->shm = shm_open_channel(server)) == NULL)
            return 0;
    }
    /* Keep order with UCX: a request of ours still outstanding there goes first. */
    for (client_pending_t *p = client_g.pending; p; p = p->next)
        if (p->server == server)
            return 0;
    return 1;
}

/* 1 if the daemon's end of the socket is gone (it died or closed the channel). */
static int daemon_gone(struct client_shm *c)
{
    struct pollfd pfd = {.fd = c->sock, .events = POLLIN};
    if (poll(&pfd, 1, 0) != 1)
        return 0;
    char junk[64];
    ssize_t n;
    while ((n = recv(c->sock, junk, sizeof(junk), MSG_DONTWAIT)) > 0)
        ;
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

/* Wait for the reply to seq; PDCBB_OK, UNREACHABLE (the daemon is gone) or TIMEOUT. */
static pdcbb_err_t shm_wait(struct client_shm *c, uint64_t seq, double timeout)
{
    pdcbb_shm_ctl_t *ctl = c->ctl;
    double t0 = client_now();
    unsigned spins = 0;
    /*
     * Spin first: a metadata request takes the daemon a few microseconds. After
     * SHM_SPIN_SECONDS sleep on the reply word: the daemon may be waiting for this very CPU
     * (more runnable processes than cores), and a sleeper woken by the daemon's futex wake is
     * run again at once, where a sched_yield would wait behind the application's time slice.
     */
    for (;;) {
        if (atomic_load_explicit(&ctl->rep_seq, memory_order_acquire) == seq)
            return PDCBB_OK;
        if ((++spins & 31) != 0) {
            __builtin_ia32_pause();
            continue;
        }
        if (client_now() - t0 >= SHM_SPIN_SECONDS)
            break;
    }
    double deadline = t0 + timeout;
    for (;;) {
        atomic_store(&ctl->client_sleeping, 1);
        uint32_t w = atomic_load(&ctl->rep_word);
        /* Pairs with the daemon's store of rep_seq before its load of client_sleeping. */
        if (atomic_load(&ctl->rep_seq) == seq)
            break;
        double left = deadline - client_now();
        if (left <= 0) {
            atomic_store(&ctl->client_sleeping, 0);
            return PDCBB_ERR_TIMEOUT;
        }
        pdcbb_shm_futex_wait(&ctl->rep_word, w, left > 0.02 ? 20 : (int)(left * 1000) + 1);
        if (atomic_load(&ctl->rep_seq) == seq)
            break;
        if (atomic_load(&ctl->rep_word) == w && daemon_gone(c)) {
            atomic_store(&ctl->client_sleeping, 0);
            /* The daemon may have answered just before it went. */
            return atomic_load(&ctl->rep_seq) == seq ? PDCBB_OK : PDCBB_ERR_UNREACHABLE;
        }
    }
    atomic_store(&ctl->client_sleeping, 0);
    return PDCBB_OK;
}

int client_shm_call(unsigned server, unsigned op, const void *req, client_pending_t **out)
{
    if (client_g.drained || !pdcbb_shm_op_allowed(op) || !shm_usable(server))
        return 0;
    client_server_t *s = &client_g.servers[server];
    struct client_shm *c = s->shm;
    size_t size;
    if (pdcbb_body_size(op, 0, req, &size) != PDCBB_OK || size > PDCBB_SHM_SLOT - PDCBB_HDR_LEN)
        return 0; /* UCX reports the error, or carries the big request */
    client_pending_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return 0;
    pdcbb_msg_hdr_t h;
    client_request_hdr(server, op, &h);
    h.payload_len = (uint32_t)size;
    uint8_t *slot = pdcbb_shm_req_slot(c->map);
    pdcbb_hdr_encode(&h, slot);
    if (pdcbb_body_encode(op, 0, req, slot + PDCBB_HDR_LEN, size) != PDCBB_OK) {
        free(p);
        return 0;
    }
    p->req_id = h.req_id;
    p->server = server;
    p->op = op;
    p->done = 1;
    c->ctl->req_len = PDCBB_HDR_LEN + size;
    uint64_t seq = ++c->seq;
    atomic_store(&c->ctl->req_seq, seq);
    /* Pairs with the daemon's store of daemon_sleeping before its load of req_seq. */
    if (atomic_load(&c->ctl->daemon_sleeping)) {
        ssize_t n = send(c->sock, "w", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)n; /* a full socket already holds wake-ups; a dead daemon shows in the wait */
    }
    pdcbb_err_t rc = shm_wait(c, seq, client_g.cfg.request_timeout);
    if (rc != PDCBB_OK) {
        /* The channel's state is unknown now: later calls use UCX (or a new channel to a
         * restarted daemon). */
        client_shm_close(server);
        if (rc == PDCBB_ERR_UNREACHABLE) {
            /* The daemon died: the next call reconnects over UCX after re-reading its
             * endpoint record (as after a UCX peer error), and a restarted daemon (a new
             * pid) gets a new channel. */
            s->shm_pid_tried = s->info.pid;
            s->failed = 1;
            s->fail_status = UCS_ERR_CONNECTION_RESET;
        }
        p->status = rc;
        *out = p;
        return 1;
    }
    if (c->ctl->rep_flags & PDCBB_SHM_REP_RETRY) {
        free(p);
        return 0; /* a reply too big for the slot: the op reads only, ask again over UCX */
    }
    uint64_t len = c->ctl->rep_len;
    if (!pdcbb_shm_msg_len_ok(len) || (p->buf = malloc(len)) == NULL) {
        p->status = !pdcbb_shm_msg_len_ok(len) ? PDCBB_ERR_PROTO : PDCBB_ERR_NOMEM;
        *out = p;
        return 1;
    }
    memcpy(p->buf, pdcbb_shm_rep_slot(c->map), len);
    p->len = len;
    p->status = PDCBB_OK;
    s->shm_calls++;
    *out = p;
    return 1;
}
