/*
 * pdcbb_error.h - the project's one error enum.
 *
 * Every internal function of pdcbb returns a pdcbb_err_t. The values cross the wire in every
 * reply, so the list below is append-only: never renumber, never reuse a value.
 * pdcbb_strerror() and pdcbb_errname() never return NULL and are safe from any thread.
 */
#ifndef PDCBB_ERROR_H
#define PDCBB_ERROR_H

#include <stddef.h>
#include <stdint.h>

/* X(symbol, value, message) */
#define PDCBB_ERROR_LIST(X)                                                                        \
    X(PDCBB_OK, 0, "success")                                                                      \
    X(PDCBB_ERR_INTERNAL, 1, "internal error")                                                     \
    X(PDCBB_ERR_NOMEM, 2, "out of memory")                                                         \
    X(PDCBB_ERR_INVAL, 3, "invalid argument")                                                      \
    X(PDCBB_ERR_NOT_FOUND, 4, "not found")                                                         \
    X(PDCBB_ERR_EXISTS, 5, "already exists")                                                       \
    X(PDCBB_ERR_BAD_ID, 6, "bad or stale id")                                                      \
    X(PDCBB_ERR_WRONG_TYPE, 7, "id refers to an object of the wrong kind")                         \
    X(PDCBB_ERR_NOSPC, 8, "no space left in the burst buffer")                                     \
    X(PDCBB_ERR_IO, 9, "I/O error")                                                                \
    X(PDCBB_ERR_PROTO, 10, "malformed message")                                                    \
    X(PDCBB_ERR_VERSION, 11, "unsupported protocol version")                                       \
    X(PDCBB_ERR_BAD_OP, 12, "unknown operation")                                                   \
    X(PDCBB_ERR_TRUNCATED, 13, "message truncated")                                                \
    X(PDCBB_ERR_TOO_BIG, 14, "message or value too large")                                         \
    X(PDCBB_ERR_AUTH, 15, "authentication failed: the job's token was not proved")                 \
    X(PDCBB_ERR_TRANSPORT, 16, "transport error")                                                  \
    X(PDCBB_ERR_TIMEOUT, 17, "timed out")                                                          \
    X(PDCBB_ERR_UNREACHABLE, 18, "burst-buffer daemon unreachable")                                \
    X(PDCBB_ERR_NOT_INIT, 19, "PDC not initialised (call PDCinit first)")                          \
    X(PDCBB_ERR_CONFIG, 20, "configuration error")                                                 \
    X(PDCBB_ERR_DISCOVERY, 21, "cannot find the job's burst-buffer daemons")                       \
    X(PDCBB_ERR_BAD_REGION, 22, "bad region")                                                      \
    X(PDCBB_ERR_NOT_EMPTY, 23, "container is not empty")                                           \
    X(PDCBB_ERR_PERM, 24, "permission denied")                                                     \
    X(PDCBB_ERR_SHUTDOWN, 25, "daemon is shutting down")                                           \
    X(PDCBB_ERR_STORE, 26, "metadata store error")                                                 \
    X(PDCBB_ERR_UNSUPPORTED, 27, "operation not supported")                                        \
    X(PDCBB_ERR_BUSY, 28, "resource busy")                                                         \
    X(PDCBB_ERR_READ_ONLY, 29, "read-only: a drained job's data cannot be changed")                \
    X(PDCBB_ERR_BAD_NAME, 30, "name is not valid UTF-8 or holds a control character")              \
    X(PDCBB_ERR_CORRUPT, 31, "data is damaged: its checksum does not match, or it is cut short")   \
    X(PDCBB_ERR_META_FULL, 32, "metadata store full (site key lmdb_map_size); deletes still work") \
    X(PDCBB_ERR_DISK_FULL, 33, "disk full: its filesystem has no space left (ENOSPC)")

typedef enum pdcbb_err {
#define PDCBB_X_ENUM(sym, val, msg) sym = val,
    PDCBB_ERROR_LIST(PDCBB_X_ENUM)
#undef PDCBB_X_ENUM
} pdcbb_err_t;

/* Human-readable message for err; "unknown error" for values not in the list. */
const char *pdcbb_strerror(int err);
/* Symbolic name ("PDCBB_ERR_NOT_FOUND"); "PDCBB_ERR_UNKNOWN" for values not in the list. */
const char *pdcbb_errname(int err);
/* Map an errno value to the closest pdcbb code (ENOSPC -> NOSPC, ENOENT -> NOT_FOUND, ...). */
pdcbb_err_t pdcbb_err_from_errno(int errnum);

/* Format a message into err (errlen bytes), the "char *err, size_t errlen" out-parameter of
 * pdcbb's libraries; does nothing when err is NULL or errlen 0. */
void pdcbb_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
