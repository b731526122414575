/* bench_common.c - see bench_common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench_common.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

/* ---- CPU accounting: this process and the job's daemons (diagnostic) ------------------ */

#define MAX_DAEMONS 64
static pid_t daemon_pids[MAX_DAEMONS];
static int ndaemon_pids;

/* The daemons' pids from bbd-R.pid in every job directory of PDCBB_SERVER_DIRS (or
 * PDCBB_JOB_DIR); only daemons on this machine can be measured. */
void bench_find_daemons(void)
{
    const char *dirs = getenv("PDCBB_SERVER_DIRS");
    if (!dirs || !*dirs)
        dirs = getenv("PDCBB_JOB_DIR");
    if (!dirs)
        return;
    char *copy = strdup(dirs), *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        DIR *dir = opendir(d);
        if (!dir)
            continue;
        struct dirent *e;
        while ((e = readdir(dir)) && ndaemon_pids < MAX_DAEMONS) {
            size_t len = strlen(e->d_name);
            if (strncmp(e->d_name, "bbd-", 4) != 0 || len < 5 || strcmp(e->d_name + len - 4, ".pid"))
                continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", d, e->d_name);
            FILE *f = fopen(path, "r");
            long pid = 0;
            if (f && fscanf(f, "%ld", &pid) == 1 && pid > 0)
                daemon_pids[ndaemon_pids++] = (pid_t)pid;
            if (f)
                fclose(f);
        }
        closedir(dir);
    }
    free(copy);
}

int bench_ndaemons(void)
{
    return ndaemon_pids;
}

/* CPU seconds (user + system) used so far by the daemons; -1 if none can be read. */
double bench_daemons_cpu(void)
{
    double sum = 0;
    int ok = 0;
    long hz = sysconf(_SC_CLK_TCK);
    for (int i = 0; i < ndaemon_pids; i++) {
        char path[64], line[1024];
        snprintf(path, sizeof(path), "/proc/%ld/stat", (long)daemon_pids[i]);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(line, 1, sizeof(line) - 1, f);
        fclose(f);
        line[n] = '\0';
        char *p = strrchr(line, ')'); /* the command name may contain spaces */
        unsigned long long ut, st;
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                        &st) == 2) {
            sum += (double)(ut + st) / (double)hz;
            ok = 1;
        }
    }
    return ok ? sum : -1;
}

/* Peak resident set (VmHWM, bytes) of the largest daemon on this machine; 0 if none. */
uint64_t bench_daemons_peak_rss(void)
{
    uint64_t peak = 0;
    for (int i = 0; i < ndaemon_pids; i++) {
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%ld/status", (long)daemon_pids[i]);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        unsigned long long kb;
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "VmHWM: %llu kB", &kb) == 1 && kb * 1024 > peak)
                peak = kb * 1024;
        fclose(f);
    }
    return peak;
}

/* Reset the daemons' VmHWM (Linux >= 4.0, "5" to clear_refs) so that the next bench_daemons_peak_rss
 * tells one phase's peak; 0 if any reset failed (then peaks are the job's so far). */
int bench_daemons_rss_reset(void)
{
    int ok = ndaemon_pids > 0;
    for (int i = 0; i < ndaemon_pids; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%ld/clear_refs", (long)daemon_pids[i]);
        FILE *f = fopen(path, "w");
        if (!f || fputs("5", f) < 0)
            ok = 0;
        if (f && fclose(f) != 0)
            ok = 0;
    }
    return ok;
}

double bench_self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* ---- options --------------------------------------------------------------------------- */

uint64_t bench_parse_size(const char *s, int bytes)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return 0;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (bytes && *end == 'i' && end[1] == 'B')
        end += 2;
    else if (bytes && *end == 'B')
        end++;
    return *end ? 0 : (uint64_t)v;
}

/* ---- statistics ------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(const double *v, int n)
{
    double tmp[BENCH_MAX_REPEAT];
    memcpy(tmp, v, sizeof(double) * (size_t)n);
    qsort(tmp, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

/* ---- placements and errors ------------------------------------------------------------- */

static const char *const placement_names[] = {"obj_static", "region_static", "region_dynamic",
                                               "region_local"};

int bench_parse_placement(const char *prog, const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, placement_names[i]) == 0)
            return i;
    fprintf(stderr, "%s: bad --placement '%s' (obj_static, region_static, region_dynamic or "
                    "region_local)\n", prog, s);
    return -1;
}

const char *bench_placement_name(int p)
{
    return p >= 0 && p < 4 ? placement_names[p] : "?";
}

void bench_pdc_report(const char *prog, int rank, const char *what)
{
    const char *name = PDCbb_last_error_name();
    if (rank >= 0)
        fprintf(stderr, "%s[%d]: error: %s failed: %s: %s\n", prog, rank, what, name,
                PDCbb_last_error_message());
    else
        fprintf(stderr, "%s: error: %s failed: %s: %s\n", prog, what, name,
                PDCbb_last_error_message());
    if (strcmp(name, "PDCBB_ERR_NOSPC") == 0)
        fprintf(stderr, "%s: hint: give the job more capacity, e.g. "
                        "pdcbb run --pdc capacity=8G -- ...\n", prog);
}
