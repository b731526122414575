/*
 * pdc_logger.c - PDC's logging helpers for applications (setLogFile, setLogLevel, log_message;
 * the LOG_ macros in pdc.h call log_message). Not used for the library's own diagnostics.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "pdc.h"

#define LEVELS 4

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_dest[LEVELS]; /* NULL: stdout */
static PDC_LogLevel log_level = LOG_LEVEL_INFO;

static int level_ok(PDC_LogLevel level)
{
    return (int)level >= 0 && (int)level < LEVELS;
}

static void close_dest(FILE *f)
{
    if (f && f != stdout && f != stderr)
        fclose(f);
}

void setLogFile(PDC_LogLevel level, const char *fileName)
{
    if (!level_ok(level)) {
        fprintf(stderr, "setLogFile: bad level %d (LOG_LEVEL_ERROR..LOG_LEVEL_DEBUG)\n",
                (int)level);
        return;
    }
    FILE *f = stdout;
    if (fileName && strcmp(fileName, "stderr") == 0)
        f = stderr;
    else if (fileName && strcmp(fileName, "stdout") != 0 &&
             (f = fopen(fileName, "ae")) == NULL) {
        fprintf(stderr, "setLogFile: cannot open '%s' for appending: %s\n", fileName,
                strerror(errno));
        return;
    }
    pthread_mutex_lock(&log_lock);
    close_dest(log_dest[level]);
    log_dest[level] = f;
    pthread_mutex_unlock(&log_lock);
}

void setLogLevel(PDC_LogLevel level)
{
    if (!level_ok(level)) {
        fprintf(stderr, "setLogLevel: bad level %d (LOG_LEVEL_ERROR..LOG_LEVEL_DEBUG)\n",
                (int)level);
        return;
    }
    pthread_mutex_lock(&log_lock);
    log_level = level;
    pthread_mutex_unlock(&log_lock);
}

void log_message(bool just_print, PDC_LogLevel level, const char *file, const char *func,
                 int line_number, const char *format, ...)
{
    static const char *const names[LEVELS] = {"ERROR", "WARNING", "INFO", "DEBUG"};
    if (!level_ok(level) || format == NULL)
        return;
    pthread_mutex_lock(&log_lock);
    if (level <= log_level) {
        FILE *out = log_dest[level] ? log_dest[level] : stdout;
        if (!just_print) {
            struct timeval tv;
            struct tm tm;
            char when[32];
            gettimeofday(&tv, NULL);
            localtime_r(&tv.tv_sec, &tm);
            strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
            const char *base = file ? strrchr(file, '/') : NULL;
            fprintf(out, "[%s.%06ld] [%s] [%s:%s:%d] ", when, (long)tv.tv_usec, names[level],
                    base ? base + 1 : file ? file : "?", func ? func : "?", line_number);
        }
        va_list ap;
        va_start(ap, format);
        vfprintf(out, format, ap);
        va_end(ap);
        fflush(out);
    }
    pthread_mutex_unlock(&log_lock);
}
