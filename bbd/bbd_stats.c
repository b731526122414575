/*
 * bbd_stats.c - the daemon's live counters (`pdcbb stats`, the STATS op).
 *
 * Per kind of op (common/pdcbb_stats.h): messages and bytes received and sent, and replies with
 * a non-OK status. Requests are counted where they enter the dispatcher (bbd_dispatch.c,
 * whichever transport carried them; the few refused before it count here too), replies where
 * they leave (send_reply in bbd_server.c for UCX, publish_reply in bbd_shm.c for the
 * shared-memory channels). Everything runs on the event-loop thread: plain increments.
 */
#include <string.h>
#include <time.h>

#include "bbd.h"

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The op of a raw message (its header's bytes 6-7), or 0 when there is no header. */
static unsigned raw_op(const uint8_t *msg, size_t len)
{
    return msg != NULL && len >= 8 ? (unsigned)(msg[6] | msg[7] << 8) : 0;
}

void bbd_stats_start(bbd_t *d)
{
    d->started = mono_now();
}

void bbd_stats_recv(bbd_t *d, const uint8_t *msg, size_t len)
{
    uint64_t *k = d->stats.kinds[pdcbb_op_kind(raw_op(msg, len))];
    k[PDCBB_STAT_MSGS_RECV]++;
    k[PDCBB_STAT_BYTES_RECV] += len;
}

void bbd_stats_recv_bulk(bbd_t *d, const uint8_t *msg, size_t len, size_t bulk_len)
{
    d->stats.kinds[pdcbb_op_kind(raw_op(msg, len))][PDCBB_STAT_BYTES_RECV] += bulk_len;
}

void bbd_stats_sent(bbd_t *d, const uint8_t *reply, size_t len, size_t bulk_len)
{
    /* Only the header's first 24 bytes are read (op and status). */
    uint64_t *k = d->stats.kinds[pdcbb_op_kind(raw_op(reply, len))];
    k[PDCBB_STAT_MSGS_SENT]++;
    k[PDCBB_STAT_BYTES_SENT] += len + bulk_len;
    int32_t status = 0;
    if (reply != NULL && len >= 24)
        memcpy(&status, reply + 20, 4); /* little-endian on every supported host */
    if (status != 0) {
        k[PDCBB_STAT_ERRORS]++;
        d->stats.error_replies++;
    }
}

pdcbb_err_t bbd_stats_fill(bbd_req_t *r, pdcbb_stats_rep_t *p)
{
    bbd_t *d = r->d;
    uint64_t *kinds = bbd_req_alloc(r, sizeof(d->stats.kinds));
    if (kinds == NULL)
        return PDCBB_ERR_NOMEM;
    memcpy(kinds, d->stats.kinds, sizeof(d->stats.kinds));
    p->kinds = kinds;
    p->kinds_count = PDCBB_KIND_COUNT_ * PDCBB_STATS_PER_KIND;
    p->node = d->node;
    p->job_id = d->job_id;
    double up = mono_now() - d->started;
    p->uptime_ms = up > 0 ? (uint64_t)(up * 1000.0) : 0;
    p->in_flight = bbd_server_queued(d) + bbd_io_in_flight(d) + bbd_lock_waiting(d);
    p->capacity_used = d->data_used;
    p->capacity_limit = d->data_capacity;
    p->errors = d->stats.error_replies;
    return PDCBB_OK;
}
