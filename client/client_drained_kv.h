/*
 * client_drained_kv.h - KV read ops of a drained job (client/client_drained_kv.c), called by
 * the virtual daemon of client_drained.c.
 */
#ifndef CLIENT_DRAINED_KV_H
#define CLIENT_DRAINED_KV_H

#include <stdint.h>

#include "pdcbb_error.h"

/* Answer KV_OPEN, KV_GET, KV_COUNT or KV_LIST (req/rep: that op's body structs). Memory the
 * reply points to and the caller must free after building the message goes to *owned.
 * Other ops: PDCBB_ERR_UNSUPPORTED. */
pdcbb_err_t client_drained_kv_answer(unsigned op, const void *req, void *rep, uint64_t **owned);
/* Free the loaded KV objects (when the drain is closed). */
void client_drained_kv_close(void);

#endif
