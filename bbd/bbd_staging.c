/*
 * bbd_staging.c - the daemon's reused buffers for received bulk parts and read replies
 * (bbd_staging_get/put in bbd.h): fresh memory costs a page fault per 4 KiB, so buffers are
 * kept for reuse, and the bytes received but not yet written stay within
 * BBD_STAGING_INBOUND_MAX.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bbd.h"
#include "pdcbb_log.h"

#define STAGING_SLOTS 64
#define STAGING_HUGE ((size_t)2 << 20) /* huge page size on x86-64 */
#define STAGING_KEEP ((size_t)512 << 20) /* at most this much kept for reuse */

typedef struct staging {
    void *buf;
    size_t cap;
    int busy;
    int inbound; /* counted against BBD_STAGING_INBOUND_MAX while busy */
} staging_t;

/* A daemon's buffers (d->staging: made by the first bbd_staging_get, freed by bbd_staging_free). */
struct bbd_staging {
    staging_t slot[STAGING_SLOTS]; /* kept for reuse */
    size_t kept;                   /* their bytes */
    /* Buffers handed out but not kept for reuse (freed by bbd_staging_put): few at any time. */
    staging_t *loose;
    size_t loose_count, loose_cap;
    size_t inbound_busy; /* bytes of busy inbound buffers */
};

int bbd_staging_room(bbd_t *d, size_t len)
{
    size_t busy = d->staging ? d->staging->inbound_busy : 0;
    return busy == 0 || busy + len <= BBD_STAGING_INBOUND_MAX;
}

static void *staging_new(size_t len, size_t *capp)
{
    /* A new buffer, touched once now so later messages do not fault it in. Large ones are
     * backed by transparent huge pages where the kernel allows it (THP "madvise" mode, the
     * Debian default): a 2 MiB page is one fault instead of 512, which is most of the cost
     * of a job's first large transfer (measured: the receive's page faults were a fifth of
     * the daemon's time over a cold and six warm 256 MiB writes). */
    size_t cap = len < (64u << 10) ? (64u << 10) : len;
    void *buf = NULL;
    if (cap >= STAGING_HUGE) {
        cap = (cap + STAGING_HUGE - 1) & ~(STAGING_HUGE - 1);
        if (posix_memalign(&buf, STAGING_HUGE, cap) != 0)
            buf = NULL;
        else
            madvise(buf, cap, MADV_HUGEPAGE); /* advice only: ignored where THP is off */
    } else {
        buf = malloc(cap);
    }
    if (buf)
        memset(buf, 0, cap);
    *capp = cap;
    return buf;
}

void *bbd_staging_get(bbd_t *d, size_t len, int inbound)
{
    struct bbd_staging *st = d->staging;
    if (st == NULL && (st = d->staging = calloc(1, sizeof(*st))) == NULL)
        return NULL;
    staging_t *best = NULL;
    for (int i = 0; i < STAGING_SLOTS; i++)
        if (st->slot[i].buf && !st->slot[i].busy && st->slot[i].cap >= len &&
            (best == NULL || st->slot[i].cap < best->cap))
            best = &st->slot[i];
    if (best == NULL) {
        size_t cap;
        void *buf = staging_new(len, &cap);
        if (buf == NULL)
            return NULL;
        for (int i = 0; i < STAGING_SLOTS && best == NULL; i++)
            if (st->slot[i].buf == NULL && st->kept + cap <= STAGING_KEEP) {
                st->slot[i] = (staging_t){buf, cap, 0, 0};
                st->kept += cap;
                best = &st->slot[i];
            }
        if (best == NULL) {
            staging_t *g = pdcbb_grow(st->loose, st->loose_count, &st->loose_cap, sizeof(*g), 8);
            if (g == NULL) {
                free(buf);
                return NULL;
            }
            st->loose = g;
            best = &st->loose[st->loose_count++];
            *best = (staging_t){buf, cap, 0, 0};
        }
    }
    best->busy = 1;
    best->inbound = inbound;
    if (inbound)
        st->inbound_busy += best->cap;
    return best->buf;
}

void bbd_staging_put(bbd_t *d, void *buf)
{
    struct bbd_staging *st = d->staging;
    if (buf == NULL)
        return;
    for (int i = 0; st && i < STAGING_SLOTS; i++)
        if (st->slot[i].buf == buf) {
            if (st->slot[i].inbound)
                st->inbound_busy -= st->slot[i].cap;
            st->slot[i].busy = st->slot[i].inbound = 0;
            return;
        }
    for (size_t i = 0; st && i < st->loose_count; i++)
        if (st->loose[i].buf == buf) {
            if (st->loose[i].inbound)
                st->inbound_busy -= st->loose[i].cap;
            free(buf);
            st->loose[i] = st->loose[--st->loose_count];
            return;
        }
    PDCBB_ERROR("bbd_staging_put: %p is not a staging buffer", buf);
}

void bbd_staging_free(bbd_t *d)
{
    struct bbd_staging *st = d->staging;
    if (st == NULL)
        return;
    for (int i = 0; i < STAGING_SLOTS; i++)
        free(st->slot[i].buf);
    for (size_t i = 0; i < st->loose_count; i++)
        free(st->loose[i].buf);
    free(st->loose);
    free(st);
    d->staging = NULL;
}
