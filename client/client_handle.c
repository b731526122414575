/*
 * client_handle.c - the table behind every pdcid_t the library hands out.
 *
 * Slots are reused, but each reuse bumps the slot's generation, so an id kept after its close
 * no longer matches and is refused as "bad or stale id" instead of reaching freed memory. The
 * kind in the id's top byte turns "a container id passed where an object id is expected" into
 * PDCBB_ERR_WRONG_TYPE. Callers hold the library lock.
 */
#include <stdlib.h>

#include "client.h"

typedef struct slot {
    void *ptr;
    uint32_t gen;   /* 24 bits used, never 0 */
    uint8_t kind;   /* CLIENT_H_NONE when free */
    uint32_t next_free;
} slot_t;

static slot_t *slots;
static uint32_t nslots, cap_slots, free_head; /* free_head: index + 1, 0 = none */
static size_t live;
/* Live handles per kind: client_handle_foreach of a kind with none returns at once (PDCobj_close
 * looks for transfers of the object: a scan of every slot made closing n objects O(n^2)). */
static size_t live_kind[CLIENT_H_KIND_MAX_];

#define ID_KIND(id) ((unsigned)((id) >> 56))
#define ID_GEN(id) ((uint32_t)(((id) >> 32) & 0xffffffu))
#define ID_INDEX(id) ((uint32_t)((id)&0xffffffffu))

static const char *const kind_names[CLIENT_H_KIND_MAX_] = {
    "none", "PDC instance", "container property", "object property",
    "container", "object", "region", "transfer request", "KV object",
};

const char *client_hkind_name(client_hkind_t kind)
{
    return (unsigned)kind < CLIENT_H_KIND_MAX_ ? kind_names[kind] : "unknown";
}

pdcid_t client_handle_new(client_hkind_t kind, void *ptr)
{
    uint32_t idx;
    if (kind <= CLIENT_H_NONE || kind >= CLIENT_H_KIND_MAX_)
        return 0;
    if (free_head) {
        idx = free_head - 1;
        free_head = slots[idx].next_free;
    } else {
        if (nslots == cap_slots) {
            uint32_t ncap = cap_slots ? 2 * cap_slots : 64;
            if (ncap > UINT32_MAX / 2)
                return 0;
            slot_t *ns = realloc(slots, (size_t)ncap * sizeof(*ns));
            if (ns == NULL)
                return 0;
            slots = ns;
            cap_slots = ncap;
        }
        idx = nslots++;
        slots[idx].gen = 0;
    }
    slot_t *s = &slots[idx];
    s->gen = (s->gen + 1) & 0xffffffu;
    if (s->gen == 0)
        s->gen = 1;
    s->kind = (uint8_t)kind;
    s->ptr = ptr;
    live++;
    live_kind[kind]++;
    return ((pdcid_t)kind << 56) | ((pdcid_t)s->gen << 32) | (pdcid_t)(idx + 1);
}

static slot_t *lookup(pdcid_t id)
{
    uint32_t idx = ID_INDEX(id);
    if (idx == 0 || idx > nslots)
        return NULL;
    slot_t *s = &slots[idx - 1];
    if (s->kind == CLIENT_H_NONE || s->gen != ID_GEN(id) || s->kind != ID_KIND(id))
        return NULL;
    return s;
}

void *client_handle_get(pdcid_t id, client_hkind_t kind, pdcbb_err_t *err)
{
    slot_t *s = lookup(id);
    if (s == NULL) {
        if (err)
            *err = PDCBB_ERR_BAD_ID;
        return NULL;
    }
    if (s->kind != kind) {
        if (err)
            *err = PDCBB_ERR_WRONG_TYPE;
        return NULL;
    }
    return s->ptr;
}

client_hkind_t client_handle_kind(pdcid_t id)
{
    slot_t *s = lookup(id);
    return s ? (client_hkind_t)s->kind : CLIENT_H_NONE;
}

void *client_handle_remove(pdcid_t id, client_hkind_t kind)
{
    slot_t *s = lookup(id);
    if (s == NULL || s->kind != kind)
        return NULL;
    void *ptr = s->ptr;
    live_kind[s->kind]--;
    s->kind = CLIENT_H_NONE;
    s->ptr = NULL;
    s->next_free = free_head;
    free_head = (uint32_t)(s - slots) + 1;
    live--;
    return ptr;
}

void client_handle_foreach(client_hkind_t kind, void (*fn)(pdcid_t id, void *ptr, void *arg),
                           void *arg)
{
    if (kind != CLIENT_H_NONE && ((unsigned)kind >= CLIENT_H_KIND_MAX_ || live_kind[kind] == 0))
        return;
    for (uint32_t i = 0; i < nslots; i++) {
        slot_t *s = &slots[i];
        if (s->kind == CLIENT_H_NONE || (kind != CLIENT_H_NONE && s->kind != kind))
            continue;
        pdcid_t id = ((pdcid_t)s->kind << 56) | ((pdcid_t)s->gen << 32) | (pdcid_t)(i + 1);
        fn(id, s->ptr, arg);
    }
}

size_t client_handle_count(void)
{
    return live;
}

void client_handle_reset(void)
{
    /* Keep generations so ids from before a PDCclose stay invalid after a new PDCinit. */
    free_head = 0;
    for (uint32_t i = nslots; i > 0; i--) {
        slots[i - 1].kind = CLIENT_H_NONE;
        slots[i - 1].ptr = NULL;
        slots[i - 1].next_free = free_head;
        free_head = i;
    }
    live = 0;
    for (int k = 0; k < CLIENT_H_KIND_MAX_; k++)
        live_kind[k] = 0;
}
