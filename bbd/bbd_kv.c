/*
 * bbd_kv.c - KV object ops (placeholder of the layout commit: every op answers
 * PDCBB_ERR_UNSUPPORTED until the handlers land on this branch).
 */
#include "bbd.h"

#define KV_UNSUPPORTED(lname)                                                                     \
    pdcbb_err_t bbd_op_##lname(bbd_req_t *r, const pdcbb_##lname##_req_t *q,                      \
                               pdcbb_##lname##_rep_t *p)                                          \
    {                                                                                             \
        (void)r, (void)q, (void)p;                                                                \
        return PDCBB_ERR_UNSUPPORTED;                                                             \
    }
KV_UNSUPPORTED(kv_create)
KV_UNSUPPORTED(kv_open)
KV_UNSUPPORTED(kv_delete)
KV_UNSUPPORTED(kv_set)
KV_UNSUPPORTED(kv_get)
KV_UNSUPPORTED(kv_count)
KV_UNSUPPORTED(kv_list)
KV_UNSUPPORTED(kv_trans)
KV_UNSUPPORTED(kv_part)
