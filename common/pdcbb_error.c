/* pdcbb_error.c - messages and names for the project's error enum, and the errno converter. */
#include "pdcbb_error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

const char *pdcbb_strerror(int err)
{
    switch (err) {
#define PDCBB_X_MSG(sym, val, msg)                                                                \
    case val:                                                                                     \
        return msg;
        PDCBB_ERROR_LIST(PDCBB_X_MSG)
#undef PDCBB_X_MSG
    }
    return "unknown error";
}

const char *pdcbb_errname(int err)
{
    switch (err) {
#define PDCBB_X_NAME(sym, val, msg)                                                               \
    case val:                                                                                     \
        return #sym;
        PDCBB_ERROR_LIST(PDCBB_X_NAME)
#undef PDCBB_X_NAME
    }
    return "PDCBB_ERR_UNKNOWN";
}

pdcbb_err_t pdcbb_err_from_errno(int errnum)
{
    switch (errnum) {
    case 0: return PDCBB_OK;
    case ENOMEM: return PDCBB_ERR_NOMEM;
    case ENOSPC:
    case EDQUOT:
        return PDCBB_ERR_DISK_FULL;
    case ENOENT: return PDCBB_ERR_NOT_FOUND;
    case EEXIST: return PDCBB_ERR_EXISTS;
    case EACCES:
    case EPERM: return PDCBB_ERR_PERM;
    case EINVAL: return PDCBB_ERR_INVAL;
    case ETIMEDOUT: return PDCBB_ERR_TIMEOUT;
    case E2BIG:
    case EFBIG: return PDCBB_ERR_TOO_BIG;
    case EBUSY: return PDCBB_ERR_BUSY;
    case ECONNREFUSED:
    case ECONNRESET:
    case EHOSTUNREACH: return PDCBB_ERR_UNREACHABLE;
    default: return PDCBB_ERR_IO;
    }
}

void pdcbb_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
