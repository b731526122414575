/*
 * pdcbb_shm.h - the shared-memory channel between a client and a daemon of the same node, for
 * small synchronous requests (docs/PROTOCOL.md, "Shared-memory channel").
 *
 * A channel is one request slot and one reply slot in a memfd the client creates and hands to
 * the daemon over a Unix stream socket (SCM_RIGHTS). The socket is in the abstract namespace,
 * named from the job, the rank and the daemon's pid (pdcbb_shm_sock_name); both sides check
 * the other's credentials on it (SO_PEERCRED: the daemon accepts only its own uid, the client
 * only the pid of the daemon's endpoint record). After the handshake the socket carries
 * one-byte wake-ups (only to a side that said it sleeps), the client's goodbye
 * (PDCBB_SHM_BYE, then close) and its end (either process died or closed); the daemon also
 * watches the client's process with a pidfd.
 *
 * One request at a time: the client writes a whole wire message (header with the job token,
 * then the body: the same encoding as over UCX) into the request slot, then req_len, then
 * increments req_seq. The daemon copies the message out (the client may scribble on the slot
 * at any time: nothing is decoded in place), handles it exactly as a UCX request (after the
 * store's commit), writes the reply into the reply slot, rep_len and rep_flags, then sets
 * rep_seq to the request's seq. A reply that does not fit the slot is answered with
 * PDCBB_SHM_REP_RETRY and no message: the client sends the request again over UCX (only read
 * ops can have such replies; a write op's reply always fits).
 *
 * Wake-ups pair a store with a load on each side (sequentially consistent): the client stores
 * req_seq and then reads daemon_sleeping; the daemon stores daemon_sleeping = 1 and then
 * reads req_seq before it sleeps (in epoll, with the socket). Either the client sees the flag
 * and writes a byte to the socket, or the daemon sees the request. Replies likewise: the daemon
 * stores rep_seq and rep_word and then reads client_sleeping; the client stores
 * client_sleeping = 1, reads rep_word, checks rep_seq and sleeps in a futex wait on rep_word
 * (which returns at once if the word changed meanwhile); the daemon wakes it with a futex wake.
 * A sleeping client looks at its socket between bounded waits to learn of a daemon's death.
 */
#ifndef PDCBB_SHM_H
#define PDCBB_SHM_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pdcbb_proto.h"

#define PDCBB_SHM_MAGIC 0x4d485342u /* "BSHM" */
#define PDCBB_SHM_VERSION 1
/* Bytes of each slot (request and reply); a request that does not fit goes over UCX. */
#define PDCBB_SHM_SLOT (2u << 20)
#define PDCBB_SHM_CTL 4096u
#define PDCBB_SHM_SIZE ((size_t)PDCBB_SHM_CTL + 2 * (size_t)PDCBB_SHM_SLOT)
/* The byte a client sends on the socket before closing its channel (any other byte: wake up). */
#define PDCBB_SHM_BYE 'q'
/* rep_flags */
#define PDCBB_SHM_REP_RETRY 0x1u

/* The control page at offset 0; the request slot follows at PDCBB_SHM_CTL, then the reply. */
typedef struct pdcbb_shm_ctl {
    uint32_t magic;
    uint32_t version;
    uint32_t slot_size;
    uint32_t reserved0;
    /* written by the client */
    _Alignas(64) _Atomic uint64_t req_seq;
    uint64_t req_len;
    _Atomic uint32_t client_sleeping;
    /* written by the daemon */
    _Alignas(64) _Atomic uint64_t rep_seq;
    uint64_t rep_len;
    uint32_t rep_flags;
    _Atomic uint32_t daemon_sleeping;
    _Atomic uint32_t rep_word; /* the low 32 bits of rep_seq, stored after it: a futex word */
} pdcbb_shm_ctl_t;

/* Sleep while *word == val, at most timeout_ms (a futex on the shared mapping); returns at once
 * when the word already differs. wake: wake the one waiter. */
static inline void pdcbb_shm_futex_wait(_Atomic uint32_t *word, uint32_t val, int timeout_ms)
{
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, val, &ts, NULL, 0);
}

static inline void pdcbb_shm_futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Sent by the client with the memfd (SCM_RIGHTS) right after connecting. */
typedef struct pdcbb_shm_hello {
    uint32_t magic;
    uint32_t version;
    uint64_t size;      /* bytes of the memfd: PDCBB_SHM_SIZE */
    uint32_t slot_size; /* PDCBB_SHM_SLOT */
    uint32_t client_pid;
    uint8_t token[PDCBB_TOKEN_LEN];
} pdcbb_shm_hello_t;

/* The daemon's answer to the hello: status PDCBB_OK or the refusal's cause. */
typedef struct pdcbb_shm_ack {
    uint32_t magic;
    int32_t status;
    uint32_t rank;
    uint32_t reserved;
} pdcbb_shm_ack_t;

/*
 * 1 if a shared-memory channel carries op: its row of PDCBB_OPS has PDCBB_OPF_SHM. Not the ops
 * with a bulk part (DATA_WRITE, DATA_READ...), not AUTH (the handshake belongs to UCX
 * connections; a channel's set-up checked the peer and the token, and its requests carry it),
 * not what the daemon answers later on the request's UCX connection (JOB_TABLE while the
 * daemons gather the table, the searches through the tree: DART_SEARCH, TAG_SEARCH), not what
 * a handler ties to the UCX connection (a reservation released when the connection ends). A
 * new op goes over UCX until it is given the flag on purpose. The daemon answers any other op
 * on a channel with UNSUPPORTED.
 */
static inline int pdcbb_shm_op_allowed(unsigned op)
{
    return pdcbb_op_has(op, PDCBB_OPF_SHM);
}

/* The abstract socket name (without the leading NUL) of daemon rank of job job_id, pid pid. */
static inline int pdcbb_shm_sock_name(char *out, size_t len, uint64_t job_id, unsigned rank,
                                      long pid)
{
    return snprintf(out, len, "pdcbb-shm.%llu.%u.%ld", (unsigned long long)job_id, rank, pid);
}

/*
 * 1 if len, the length a peer wrote for the message in a slot (req_len or rep_len, read once),
 * is one a receiver may copy out and decode: a header at least, at most the slot. The receiver
 * copies the message out of the shared memory before it looks at it (the peer may change the
 * slot at any time) and then checks it as any message over UCX.
 */
static inline int pdcbb_shm_msg_len_ok(uint64_t len)
{
    return len >= PDCBB_HDR_LEN && len <= PDCBB_SHM_SLOT;
}

static inline uint8_t *pdcbb_shm_req_slot(void *base)
{
    return (uint8_t *)base + PDCBB_SHM_CTL;
}

static inline uint8_t *pdcbb_shm_rep_slot(void *base)
{
    return (uint8_t *)base + PDCBB_SHM_CTL + PDCBB_SHM_SLOT;
}

#endif
