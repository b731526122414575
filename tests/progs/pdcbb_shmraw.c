/*
 * pdcbb_shmraw - speaks the shared-memory channel (common/pdcbb_shm.h) to a daemon directly,
 * with hand-made and broken messages, for the bats tests of the daemon's checks. Not a PDC
 * client.
 *
 *   pdcbb_shmraw ENDPOINT_FILE TOKEN_FILE CASE...
 * CASE (run in order on one channel, unless said otherwise):
 *   good         a valid STATS request; prints the counters
 *   garbage      100 random bytes as a request
 *   toolong      a request length beyond the slot
 *   short        a request length of 10 (less than a header)
 *   wrongtoken   a STATS request with a wrong token
 *   dataop       a DATA_READ request (region data never goes over shared memory)
 *   scribble     a valid STATS request whose slot is overwritten with junk right after it is
 *                posted (the daemon may see either; it must answer and survive)
 *   badhello     (own channel) a hello with a wrong token: prints the daemon's refusal
 *   nofd         (own channel) a hello without the memory file
 *   unsealed     (own channel) a memory file that may still shrink (no F_SEAL_SHRINK)
 * Prints "CASE: status NAME" per case (or "CASE: no reply" / "CASE: refused NAME").
 * Exit status: 0 if every case got an answer, 1 if not, 2 on usage errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pdcbb_jobdir.h"
#include "pdcbb_proto.h"
#include "pdcbb_shm.h"

static pdcbb_endpoint_t ep;
static uint8_t token[PDCBB_TOKEN_LEN];

typedef struct chan {
    int sock;
    void *map;
    pdcbb_shm_ctl_t *ctl;
    uint64_t seq;
} chan_t;

/* Open a channel; hello_token and send_fd select the broken hellos. Returns the ack status or
 * -1 if there was none. */
static int chan_open(chan_t *c, const uint8_t *hello_token, int send_fd, int seal)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    int n = pdcbb_shm_sock_name(sa.sun_path + 1, sizeof(sa.sun_path) - 1, ep.job_id, ep.rank,
                                (long)ep.pid);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    c->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(c->sock, (struct sockaddr *)&sa, len) != 0) {
        perror("connect");
        return -1;
    }
    int mfd = memfd_create("shmraw", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (mfd < 0 || ftruncate(mfd, (off_t)PDCBB_SHM_SIZE) != 0)
        return -1;
    if (seal && fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        return -1;
    c->map = mmap(NULL, PDCBB_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (c->map == MAP_FAILED)
        return -1;
    c->ctl = c->map;
    pdcbb_shm_hello_t h = {.magic = PDCBB_SHM_MAGIC, .version = PDCBB_SHM_VERSION,
                           .size = PDCBB_SHM_SIZE, .slot_size = PDCBB_SHM_SLOT,
                           .client_pid = (uint32_t)getpid()};
    memcpy(h.token, hello_token, PDCBB_TOKEN_LEN);
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } cm;
    memset(&cm, 0, sizeof(cm));
    struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (send_fd) {
        mh.msg_control = cm.buf;
        mh.msg_controllen = sizeof(cm.buf);
        struct cmsghdr *cmh = CMSG_FIRSTHDR(&mh);
        cmh->cmsg_level = SOL_SOCKET;
        cmh->cmsg_type = SCM_RIGHTS;
        cmh->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmh), &mfd, sizeof(int));
    }
    if (sendmsg(c->sock, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(h))
        return -1;
    close(mfd);
    pdcbb_shm_ack_t a;
    struct pollfd pfd = {.fd = c->sock, .events = POLLIN};
    if (poll(&pfd, 1, 3000) != 1 || recv(c->sock, &a, sizeof(a), MSG_WAITALL) != sizeof(a))
        return -1;
    return a.status;
}

/* Post len bytes (already in the slot) with request length req_len; wait for the reply. */
static int chan_call(chan_t *c, uint64_t req_len, int scribble, pdcbb_msg_hdr_t *rh,
                     uint8_t **body)
{
    c->ctl->req_len = req_len;
    uint64_t seq = ++c->seq;
    atomic_store(&c->ctl->req_seq, seq);
    if (scribble)
        memset(pdcbb_shm_req_slot(c->map), 0xa5, 256);
    if (atomic_load(&c->ctl->daemon_sleeping))
        send(c->sock, "w", 1, MSG_NOSIGNAL);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&c->ctl->rep_seq) != seq) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 3)
            return -1;
        /* Be woken like a real client would be. */
        atomic_store(&c->ctl->client_sleeping, 1);
        uint32_t w = atomic_load(&c->ctl->rep_word);
        if (atomic_load(&c->ctl->rep_seq) == seq)
            break;
        pdcbb_shm_futex_wait(&c->ctl->rep_word, w, 50);
    }
    atomic_store(&c->ctl->client_sleeping, 0);
    uint8_t *rep = pdcbb_shm_rep_slot(c->map);
    if (pdcbb_hdr_decode(rep, c->ctl->rep_len, rh) != PDCBB_OK)
        return -2;
    *body = rep + PDCBB_HDR_LEN;
    return 0;
}

static void put_hdr(chan_t *c, unsigned op, const uint8_t *tok, size_t *len)
{
    pdcbb_msg_hdr_t h = {.magic = PDCBB_PROTO_MAGIC, .version = PDCBB_PROTO_VERSION,
                         .op = (uint16_t)op, .req_id = 42};
    memcpy(h.token, tok, PDCBB_TOKEN_LEN);
    pdcbb_hdr_encode(&h, pdcbb_shm_req_slot(c->map));
    *len = PDCBB_HDR_LEN;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: pdcbb_shmraw ENDPOINT_FILE TOKEN_FILE CASE...\n");
        return 2;
    }
    if (pdcbb_endpoint_read(argv[1], &ep) != PDCBB_OK || pdcbb_token_read(argv[2], token)) {
        fprintf(stderr, "cannot read %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    chan_t c = {.sock = -1};
    int failures = 0;
    for (int i = 3; i < argc; i++) {
        const char *k = argv[i];
        if (strcmp(k, "badhello") == 0 || strcmp(k, "nofd") == 0 || strcmp(k, "unsealed") == 0) {
            chan_t b = {.sock = -1};
            uint8_t bad[PDCBB_TOKEN_LEN];
            memcpy(bad, token, sizeof(bad));
            if (strcmp(k, "badhello") == 0)
                bad[3] ^= 0x11;
            int st = chan_open(&b, bad, strcmp(k, "nofd") != 0, strcmp(k, "unsealed") != 0);
            if (st < 0) {
                printf("%s: no reply\n", k);
                failures++;
            } else {
                printf("%s: refused %s\n", k, pdcbb_errname((pdcbb_err_t)st));
            }
            close(b.sock);
            continue;
        }
        if (c.sock < 0) {
            int st = chan_open(&c, token, 1, 1);
            if (st != PDCBB_OK) {
                printf("open: %s\n", st < 0 ? "no reply" : pdcbb_errname((pdcbb_err_t)st));
                return 1;
            }
        }
        size_t len = 0;
        uint64_t req_len;
        int scribble = 0;
        if (strcmp(k, "good") == 0 || strcmp(k, "scribble") == 0) {
            put_hdr(&c, PDCBB_OP_STATS, token, &len);
            scribble = strcmp(k, "scribble") == 0;
            req_len = len;
        } else if (strcmp(k, "garbage") == 0) {
            uint8_t *s = pdcbb_shm_req_slot(c.map);
            srand(7);
            for (int j = 0; j < 100; j++)
                s[j] = (uint8_t)rand();
            req_len = 100;
        } else if (strcmp(k, "toolong") == 0) {
            put_hdr(&c, PDCBB_OP_STATS, token, &len);
            req_len = (uint64_t)PDCBB_SHM_SLOT + 1;
        } else if (strcmp(k, "short") == 0) {
            put_hdr(&c, PDCBB_OP_STATS, token, &len);
            req_len = 10;
        } else if (strcmp(k, "wrongtoken") == 0) {
            uint8_t bad[PDCBB_TOKEN_LEN];
            memcpy(bad, token, sizeof(bad));
            bad[0] ^= 0xff;
            put_hdr(&c, PDCBB_OP_STATS, bad, &len);
            req_len = len;
        } else if (strcmp(k, "dataop") == 0) {
            put_hdr(&c, PDCBB_OP_DATA_READ, token, &len);
            req_len = len;
        } else {
            fprintf(stderr, "unknown case '%s'\n", k);
            return 2;
        }
        pdcbb_msg_hdr_t rh;
        uint8_t *body;
        int rc = chan_call(&c, req_len, scribble, &rh, &body);
        if (rc == -1) {
            printf("%s: no reply\n", k);
            failures++;
            continue;
        }
        if (rc == -2) {
            printf("%s: bad reply\n", k);
            failures++;
            continue;
        }
        printf("%s: status %s\n", k, pdcbb_errname((pdcbb_err_t)rh.status));
        if (rh.status == PDCBB_OK && rh.op == PDCBB_OP_STATS) {
            pdcbb_stats_rep_t s;
            if (pdcbb_body_decode(PDCBB_OP_STATS, 1, body, rh.payload_len, &s) == PDCBB_OK) {
                printf("requests %llu auth_failures %llu proto_errors %llu shm_requests %llu "
                       "shm_channels %llu shm_open %llu\n",
                       (unsigned long long)s.requests, (unsigned long long)s.auth_failures,
                       (unsigned long long)s.proto_errors, (unsigned long long)s.shm_requests,
                       (unsigned long long)s.shm_channels,
                       (unsigned long long)s.shm_channels_open);
                pdcbb_body_free(PDCBB_OP_STATS, 1, &s); /* the per-kind counters array */
            }
        }
    }
    if (c.sock >= 0)
        close(c.sock);
    return failures ? 1 : 0;
}
