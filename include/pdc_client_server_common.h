/*
 * pdc_client_server_common.h - exists for source compatibility.
 *
 * PDC programs include this header beside pdc.h and pdc_client_connect.h, mostly for nothing
 * they use (in PDC it holds the client-server internals). Everything public of pdcbb is in
 * pdc.h and pdc_client_connect.h, which this header includes; it also includes <sys/time.h>,
 * which PDC's version pulled in and which programs timing themselves with gettimeofday rely on.
 */
#ifndef PDC_CLIENT_SERVER_COMMON_H
#define PDC_CLIENT_SERVER_COMMON_H

#include <sys/time.h>

#include "pdc.h"
#include "pdc_client_connect.h"

#endif /* PDC_CLIENT_SERVER_COMMON_H */
