/*
 * bbd_stage_in_kv.h - KV objects at stage-in (bbd/bbd_stage_in_kv.c), called by bbd_stage_in.c.
 */
#ifndef BBD_STAGE_IN_KV_H
#define BBD_STAGE_IN_KV_H

#include <stddef.h>
#include <stdint.h>

#include "bbd.h"
#include "pdcbb_drain.h"

/* Shards of a drained KV object in a job of n daemons: as many as before when it did not use
 * every daemon of its job (at most n), else n. */
uint32_t bbd_stage_kv_nshards(const pdcbb_drain_t *m, const pdcbb_drain_kv_t *k, unsigned n);

/*
 * In the stage-in's transaction r->txn: create the KV objects of m this daemon is home or
 * shard of (new ids kv_ids[i], 0: not staged; containers kv_conts[i]) and store the record
 * versions that shard to this daemon. *records gets how many. err names the KV object or dump.
 */
pdcbb_err_t bbd_stage_in_kv(bbd_req_t *r, const pdcbb_drain_t *m, const uint64_t *kv_ids,
                            const uint64_t *kv_conts, uint64_t *records, char *err,
                            size_t errlen);

#endif
