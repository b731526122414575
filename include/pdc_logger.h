/*
 * pdc_logger.h - exists for source compatibility: PDC programs may include it for the logging
 * macros (LOG_JUST_PRINT, LOG_INFO, ...) and setLogFile/setLogLevel, which pdcbb declares in
 * pdc.h (as PDC's pdc.h includes its pdc_logger.h).
 */
#ifndef PDC_LOGGER_H
#define PDC_LOGGER_H

#include "pdc.h"

#endif /* PDC_LOGGER_H */
