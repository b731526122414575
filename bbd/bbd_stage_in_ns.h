/*
 * bbd_stage_in_ns.h - the mount's tree at stage-in (bbd/bbd_stage_in_ns.c), called by
 * bbd_stage_in.c.
 */
#ifndef BBD_STAGE_IN_NS_H
#define BBD_STAGE_IN_NS_H

#include <stddef.h>
#include <stdint.h>

#include "bbd.h"
#include "pdcbb_drain.h"

/* The id in this job of object old of the drained job (0: not staged). */
typedef uint64_t (*bbd_stage_obj_id_fn)(void *arg, uint64_t old);

/*
 * In the stage-in's transaction r->txn: the drained job's filesystem tree (m's ns files) into
 * this job's namespace, the entries of the directories homed on this daemon. seq[k] is the last
 * sequence number daemon k has handed out (bbd_stage_in's plan); the directories and links made
 * advance it. *entries gets how many entries this daemon made. err names what failed.
 */
pdcbb_err_t bbd_stage_in_ns(bbd_req_t *r, const pdcbb_drain_t *m, bbd_stage_obj_id_fn new_obj,
                            void *arg, uint64_t *seq, uint64_t *entries, char *err, size_t errlen);

#endif
