/*
 * pdcbb_log.h - level-checked logging for the daemon, the stager and the CLI.
 *
 * Messages are formatted only when their level is enabled. Output goes to stderr until
 * pdcbb_log_open() names a file. The client library keeps the level at PDCBB_LOG_NONE unless
 * the environment variable PDCBB_LOG (error|warn|info|debug) asks otherwise. Thread-safe: each
 * message is written with a single write(2).
 */
#ifndef PDCBB_LOG_H
#define PDCBB_LOG_H

#include <stdarg.h>

typedef enum pdcbb_log_level {
    PDCBB_LOG_NONE = 0,
    PDCBB_LOG_ERROR = 1,
    PDCBB_LOG_WARN = 2,
    PDCBB_LOG_INFO = 3,
    PDCBB_LOG_DEBUG = 4,
} pdcbb_log_level_t;

extern int pdcbb_log_level_current;

/* Set the level; messages above it are dropped before formatting. */
void pdcbb_log_set_level(pdcbb_log_level_t level);
/* Parse "none|error|warn|info|debug"; returns -1 for anything else. */
int pdcbb_log_level_parse(const char *s);
const char *pdcbb_log_level_name(pdcbb_log_level_t level);
/* Prefix every line with ident (for example "pdc_bbd[0]"). ident is copied. */
void pdcbb_log_set_ident(const char *ident);
/* Append to path (created 0600). Returns 0 or -errno. */
int pdcbb_log_open(const char *path);
void pdcbb_log_close(void);

void pdcbb_log_write(pdcbb_log_level_t level, const char *func, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define PDCBB_LOG(lvl, ...)                                                                       \
    do {                                                                                          \
        if ((lvl) <= pdcbb_log_level_current)                                                     \
            pdcbb_log_write((lvl), __func__, __LINE__, __VA_ARGS__);                              \
    } while (0)
#define PDCBB_ERROR(...) PDCBB_LOG(PDCBB_LOG_ERROR, __VA_ARGS__)
#define PDCBB_WARN(...) PDCBB_LOG(PDCBB_LOG_WARN, __VA_ARGS__)
#define PDCBB_INFO(...) PDCBB_LOG(PDCBB_LOG_INFO, __VA_ARGS__)
#define PDCBB_DEBUG(...) PDCBB_LOG(PDCBB_LOG_DEBUG, __VA_ARGS__)

#endif
