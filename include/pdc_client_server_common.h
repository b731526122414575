/*
 * pdc_client_server_common.h - exists for source compatibility.
 *
 * PDC programs include this header beside pdc.h and pdc_client_connect.h, mostly for nothing
 * they use (in PDC it holds the client-server internals). Everything public of pdcbb is in
 * pdc.h and pdc_client_connect.h, which this header includes; it also includes <sys/time.h>,
 * which PDC's version pulled in and which programs timing themselves with gettimeofday rely on.
 * The one function it declares is PDC's helper for such timings, which PDC programs reach
 * through either header (pdc_client_connect.h includes this one, as PDC's does).
 */
#ifndef PDC_CLIENT_SERVER_COMMON_H
#define PDC_CLIENT_SERVER_COMMON_H

#include <sys/time.h>

#include "pdc.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The time from tstart to tend in seconds, to the microsecond (PDC's helper for
 * gettimeofday timings): tend - tstart, negative when tend is earlier.
 * @param[in] tstart  the start, e.g. from gettimeofday; not modified.
 * @param[in] tend    the end; not modified.
 * @return the difference in seconds, or 0.0 when either is NULL. Any thread may call it.
 */
PDC_EXPORT double PDC_get_elapsed_time_double(struct timeval *tstart, struct timeval *tend);

#ifdef __cplusplus
}
#endif

/* After the declaration above: pdc_client_connect.h includes this header in turn. */
#include "pdc_client_connect.h"

#endif /* PDC_CLIENT_SERVER_COMMON_H */
