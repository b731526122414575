/* pdcbb_log.c - the logger behind pdcbb_log.h: one line per message, one write(2) per line. */
#include "pdcbb_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int pdcbb_log_level_current = PDCBB_LOG_WARN;
static int log_fd = 2;
static char log_ident[64] = "pdcbb";

static const char *const level_names[] = {"none", "error", "warn", "info", "debug"};

void pdcbb_log_set_level(pdcbb_log_level_t level)
{
    pdcbb_log_level_current = level;
}

int pdcbb_log_level_parse(const char *s)
{
    if (s == NULL)
        return -1;
    for (int i = 0; i <= PDCBB_LOG_DEBUG; i++)
        if (strcasecmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

const char *pdcbb_log_level_name(pdcbb_log_level_t level)
{
    if ((int)level < 0 || level > PDCBB_LOG_DEBUG)
        return "unknown";
    return level_names[level];
}

void pdcbb_log_set_ident(const char *ident)
{
    snprintf(log_ident, sizeof(log_ident), "%s", ident ? ident : "pdcbb");
}

int pdcbb_log_open(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    if (log_fd > 2)
        close(log_fd);
    log_fd = fd;
    return 0;
}

void pdcbb_log_close(void)
{
    if (log_fd > 2)
        close(log_fd);
    log_fd = 2;
}

void pdcbb_log_write(pdcbb_log_level_t level, const char *func, int line, const char *fmt, ...)
{
    char buf[2048];
    struct timeval tv;
    struct tm tm;
    int saved = errno;

    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    int n = snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%03d %s %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (int)(tv.tv_usec / 1000), log_ident, pdcbb_log_level_name(level));
    if (pdcbb_log_level_current >= PDCBB_LOG_DEBUG && n < (int)sizeof(buf))
        n += snprintf(buf + n, sizeof(buf) - n, "[%s:%d] ", func, line);
    if (n < (int)sizeof(buf)) {
        va_list ap;
        va_start(ap, fmt);
        n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
        va_end(ap);
    }
    if (n >= (int)sizeof(buf) - 1)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    ssize_t w = write(log_fd, buf, (size_t)n);
    (void)w;
    errno = saved;
}
