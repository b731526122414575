/*
 * cmd_stats.c - `pdcbb stats`: the live counters of every daemon of a running job, once or
 * every S seconds, as tables or JSON lines (like ZeptoOS's statquery).
 *
 * The daemons are found and reached the way any program of the job reaches them: through
 * libpdc (PDCinit's discovery from the job directory: this node's daemons, and every other one
 * from the job table), then one request that this node's daemon carries down the tree of
 * daemons and back with every daemon's counters (PDCbb_server_stats_all; one STATS request per
 * daemon when that daemon cannot). Works from any node of the job: the job directory of that
 * node is enough.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "pdc.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_name.h"
#include "pdcbb_proto.h"
#include "pdcbb_stats.h"

#define STATS_EXIT_USAGE 2
#define STATS_NV         (PDCBB_KIND_COUNT_ * PDCBB_STATS_PER_KIND)

static void stats_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb stats [--interval S] [--count N] [--json] [JOB_DIR]\n"
            "\n"
            "Show the live counters of every burst-buffer daemon of a running job: per kind of\n"
            "request (metadata, data, drain, broadcast, query, kv, other, append, forward) the\n"
            "messages and bytes received and sent and the error replies, and per daemon the\n"
            "requests in flight, the capacity used and its limit, the errors and the uptime.\n"
            "Each sample starts with its UTC time (ISO 8601, milliseconds). JOB_DIR is the job\n"
            "directory on this node (default: $PDCBB_JOB_DIR, set inside a job); any node of the\n"
            "job will do.\n"
            "\n"
            "Options:\n"
            "  -i, --interval S  sample every S seconds (decimal, 0.01 to 86400) until Ctrl-C\n"
            "                    or --count samples, with rates per second since the previous\n"
            "                    sample next to the totals\n"
            "  -n, --count N     take N samples (1 s apart unless --interval) and stop\n"
            "  -j, --json        one JSON object per sample and line: timestamp, job_id, and per\n"
            "                    daemon rank, node, counters by kind, in_flight, capacity_used,\n"
            "                    capacity_limit, errors\n"
            "  -h, --help        show this help\n"
            "\n"
            "Exit status: 0 every daemon answered every sample; 1 no running job there, or a\n"
            "daemon did not answer; 2 a usage error.\n");
}

static volatile sig_atomic_t stats_stop;

static void stats_on_signal(int sig)
{
    (void)sig;
    stats_stop = 1;
}

/* One daemon's sample: the decoded counters, or why there are none. */
typedef struct stats_daemon {
    bool ok;
    char err[512];
    char node[PDCBB_NODE_NAME_MAX];
    uint64_t job_id, uptime_ms, in_flight, used, limit, errors, auth, proto, requests;
    uint64_t connections, shm_channels_open;
    uint64_t v[STATS_NV];
    double mono; /* CLOCK_MONOTONIC seconds when it was taken */
} stats_daemon_t;

/* "2026-11-25T11:40:00.123Z" */
static void stats_timestamp(char *out, size_t len)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000L);
}

/* Decode a STATS reply body into s (s->err when it is not one this tool reads). */
static void stats_decode(const void *body, size_t len, stats_daemon_t *s)
{
    pdcbb_stats_rep_t p;
    pdcbb_err_t rc = pdcbb_body_decode(PDCBB_OP_STATS, 1, body, len, &p);
    if (rc != PDCBB_OK) {
        snprintf(s->err, sizeof(s->err), "unreadable STATS reply: %s", pdcbb_strerror(rc));
        return;
    }
    if (p.kinds_count < STATS_NV) {
        snprintf(s->err, sizeof(s->err), "the daemon counts no traffic (an older pdc_bbd?)");
    } else {
        s->ok = true;
        snprintf(s->node, sizeof(s->node), "%s", p.node ? p.node : "");
        s->job_id = p.job_id;
        s->uptime_ms = p.uptime_ms;
        s->in_flight = p.in_flight;
        s->used = p.capacity_used;
        s->limit = p.capacity_limit;
        s->errors = p.errors;
        s->auth = p.auth_failures;
        s->proto = p.proto_errors;
        s->requests = p.requests;
        s->connections = p.connections;
        s->shm_channels_open = p.shm_channels_open;
        memcpy(s->v, p.kinds, sizeof(s->v));
    }
    pdcbb_body_free(PDCBB_OP_STATS, 1, &p);
}

/* Every daemon's sample: one request through the tree of daemons (PDCbb_server_stats_all), or,
 * when this node's daemon cannot carry it, one request per daemon. */
static void stats_take_all(int n, stats_daemon_t *cur)
{
    void **bodies = calloc((size_t)n, sizeof(*bodies));
    size_t *lens = calloc((size_t)n, sizeof(*lens));
    char **errors = calloc((size_t)n, sizeof(*errors));
    double now = cli_now();
    if (bodies == NULL || lens == NULL || errors == NULL) {
        for (int r = 0; r < n; r++) {
            memset(&cur[r], 0, sizeof(cur[r]));
            snprintf(cur[r].err, sizeof(cur[r].err), "out of memory");
        }
        free(bodies);
        free(lens);
        free(errors);
        return;
    }
    int all = PDCbb_server_stats_all(n, bodies, lens, errors) == SUCCEED;
    for (int r = 0; r < n; r++) {
        stats_daemon_t *s = &cur[r];
        memset(s, 0, sizeof(*s));
        s->mono = all ? now : cli_now();
        if (!all && PDCbb_server_stats(r, &bodies[r], &lens[r]) != SUCCEED)
            snprintf(s->err, sizeof(s->err), "%s", PDCbb_last_error_message());
        else if (all && bodies[r] == NULL)
            snprintf(s->err, sizeof(s->err), "%s", errors[r] ? errors[r] : "no answer");
        else
            stats_decode(bodies[r], lens[r], s);
        free(bodies[r]);
        free(errors[r]);
    }
    free(bodies);
    free(lens);
    free(errors);
}

/* Per second since prev (a sample of the same daemon), or NAN when there is none. */
static double stats_rate(const stats_daemon_t *cur, const stats_daemon_t *prev, size_t i)
{
    if (prev == NULL || !prev->ok || cur->mono <= prev->mono || cur->v[i] < prev->v[i])
        return NAN;
    return (double)(cur->v[i] - prev->v[i]) / (cur->mono - prev->mono);
}

static void stats_json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static const char *const stats_field[PDCBB_STATS_PER_KIND] = {"msgs_recv", "bytes_recv",
                                                              "msgs_sent", "bytes_sent", "errors"};

static void stats_print_json(const char *ts, int n, const stats_daemon_t *cur,
                             const stats_daemon_t *prev)
{
    uint64_t job = 0;
    for (int r = 0; r < n; r++)
        if (cur[r].ok) {
            job = cur[r].job_id;
            break;
        }
    printf("{\"timestamp\":\"%s\",\"job_id\":%" PRIu64 ",\"daemons\":[", ts, job);
    for (int r = 0; r < n; r++) {
        const stats_daemon_t *s = &cur[r];
        printf("%s{\"rank\":%d,", r ? "," : "", r);
        if (!s->ok) {
            printf("\"error\":");
            stats_json_str(s->err);
            printf("}");
            continue;
        }
        printf("\"node\":");
        stats_json_str(s->node);
        printf(",\"uptime_ms\":%" PRIu64 ",\"requests\":%" PRIu64 ",\"in_flight\":%" PRIu64
               ",\"capacity_used\":%" PRIu64 ",\"capacity_limit\":%" PRIu64 ",\"errors\":%" PRIu64
               ",\"auth_failures\":%" PRIu64 ",\"proto_errors\":%" PRIu64
               ",\"connections\":%" PRIu64 ",\"shm_channels_open\":%" PRIu64 ",\"kinds\":{",
               s->uptime_ms, s->requests, s->in_flight, s->used, s->limit, s->errors, s->auth,
               s->proto, s->connections, s->shm_channels_open);
        for (unsigned k = 0; k < PDCBB_KIND_COUNT_; k++) {
            printf("%s\"%s\":{", k ? "," : "", pdcbb_stat_kind_name(k));
            for (unsigned f = 0; f < PDCBB_STATS_PER_KIND; f++)
                printf("%s\"%s\":%" PRIu64, f ? "," : "", stats_field[f],
                       s->v[k * PDCBB_STATS_PER_KIND + f]);
            const stats_daemon_t *pv = prev ? &prev[r] : NULL;
            for (unsigned f = 0; f < PDCBB_STATS_PER_KIND && pv && pv->ok; f++) {
                double rate = stats_rate(s, pv, k * PDCBB_STATS_PER_KIND + f);
                if (!isnan(rate))
                    printf(",\"%s_per_s\":%.3f", stats_field[f], rate);
            }
            printf("}");
        }
        printf("}}");
    }
    printf("]}\n");
}

/* A rate with one decimal, or "-" when there is none yet (the first sample). */
static const char *stats_rate_txt(double rate, char *buf, size_t len)
{
    if (isnan(rate))
        return "-";
    snprintf(buf, len, "%.1f", rate);
    return buf;
}

/* A table per sample; with rates (repeated samples), a rate column after each total. */
static void stats_print_table(const char *ts, int n, const stats_daemon_t *cur,
                              const stats_daemon_t *prev, bool rates)
{
    uint64_t job = 0;
    for (int r = 0; r < n; r++)
        if (cur[r].ok) {
            job = cur[r].job_id;
            break;
        }
    printf("%s  job %" PRIu64 ", %d daemon%s\n", ts, job, n, n == 1 ? "" : "s");
    if (rates)
        printf("%-4s %-12s %-9s %10s %9s %14s %12s %10s %9s %14s %12s %7s\n", "RANK", "NODE",
               "KIND", "MSGS_IN", "MSGS_IN/s", "BYTES_IN", "BYTES_IN/s", "MSGS_OUT", "MSGS_OUT/s",
               "BYTES_OUT", "BYTES_OUT/s", "ERRORS");
    else
        printf("%-4s %-12s %-9s %10s %14s %10s %14s %7s\n", "RANK", "NODE", "KIND", "MSGS_IN",
               "BYTES_IN", "MSGS_OUT", "BYTES_OUT", "ERRORS");
    for (int r = 0; r < n; r++) {
        const stats_daemon_t *s = &cur[r];
        if (!s->ok) {
            printf("%-4d error: %s\n", r, pdcbb_esc(s->err));
            continue;
        }
        for (unsigned k = 0; k < PDCBB_KIND_COUNT_; k++) {
            const uint64_t *v = &s->v[k * PDCBB_STATS_PER_KIND];
            if (rates) {
                char rb[4][32];
                const char *rt[4];
                for (unsigned f = 0; f < 4; f++)
                    rt[f] = stats_rate_txt(
                        stats_rate(s, prev ? &prev[r] : NULL, k * PDCBB_STATS_PER_KIND + f), rb[f],
                        sizeof(rb[f]));
                printf("%-4d %-12s %-9s %10" PRIu64 " %9s %14" PRIu64 " %12s %10" PRIu64
                       " %9s %14" PRIu64 " %12s %7" PRIu64 "\n",
                       r, pdcbb_esc(s->node), pdcbb_stat_kind_name(k), v[0], rt[0], v[1], rt[1],
                       v[2], rt[2], v[3], rt[3], v[4]);
            } else {
                printf("%-4d %-12s %-9s %10" PRIu64 " %14" PRIu64 " %10" PRIu64 " %14" PRIu64
                       " %7" PRIu64 "\n",
                       r, pdcbb_esc(s->node), pdcbb_stat_kind_name(k), v[0], v[1], v[2], v[3],
                       v[4]);
            }
        }
        printf("%-4d %-12s up %.1f s, %" PRIu64 " requests, %" PRIu64
               " in flight, capacity %" PRIu64 " of %" PRIu64 " bytes used, %" PRIu64
               " errors (%" PRIu64 " auth, %" PRIu64 " protocol)\n",
               r, pdcbb_esc(s->node), (double)s->uptime_ms / 1000.0, s->requests, s->in_flight,
               s->used, s->limit, s->errors, s->auth, s->proto);
    }
    printf("\n");
}

/* Sleep until t (CLOCK_MONOTONIC seconds) or a signal. */
static void stats_sleep_until(double t)
{
    while (!stats_stop) {
        double left = t - cli_now();
        if (left <= 0)
            return;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        if (nanosleep(&ts, NULL) == 0)
            return;
    }
}

int cli_cmd_stats(int argc, char **argv)
{
    static const struct option opts[] = {
        {"interval", required_argument, NULL, 'i'},
        {"count", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    double interval = 0;
    unsigned long long count = 0;
    bool json = false, have_interval = false;
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":i:n:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'i': {
            char *end;
            errno = 0;
            interval = strtod(optarg, &end);
            if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno != 0 ||
                !(interval >= 0.01 && interval <= 86400)) {
                fprintf(stderr,
                        "pdcbb stats: bad value for --interval: '%s' (expected seconds "
                        "from 0.01 to 86400)\n",
                        optarg);
                return STATS_EXIT_USAGE;
            }
            have_interval = true;
            break;
        }
        case 'n': {
            uint64_t v;
            if (cli_parse_u64("stats", "--count", optarg, 1, 1000000000, &v) != 0)
                return STATS_EXIT_USAGE;
            count = v;
            break;
        }
        case 'j':
            json = true;
            break;
        case 'h':
            stats_usage(stdout);
            return 0;
        default:
            return cli_bad_option("stats", c, argv);
        }
    }
    if (argc - optind > 1) {
        fprintf(stderr, "pdcbb stats: unexpected argument '%s' (see pdcbb stats --help)\n",
                argv[optind + 1]);
        return STATS_EXIT_USAGE;
    }
    if (optind < argc) {
        struct stat st;
        if (stat(argv[optind], &st) != 0) {
            fprintf(stderr, "pdcbb stats: no running job at %s: %s\n", argv[optind],
                    strerror(errno));
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            fprintf(stderr, "pdcbb stats: %s is not a job directory (not a directory)\n",
                    argv[optind]);
            return 1;
        }
        setenv("PDCBB_JOB_DIR", argv[optind], 1);
    } else {
        const char *jd = getenv("PDCBB_JOB_DIR");
        if (jd == NULL || jd[0] == '\0') {
            fprintf(stderr, "pdcbb stats: no running job: give its job directory (JOB_DIR) or "
                            "run inside the job ($PDCBB_JOB_DIR)\n");
            return 1;
        }
    }
    /* The counters live in the daemons: a drained job (PDCBB_DRAINED_DIR) has none. */
    unsetenv("PDCBB_DRAINED_DIR");
    if (count == 0)
        count = have_interval ? 0 : 1; /* 0: until Ctrl-C */
    if (!have_interval)
        interval = 1;

    pdcid_t pdc = PDCinit("pdcbb-stats");
    if (pdc == 0) {
        fprintf(stderr, "pdcbb stats: no running job at %s: %s\n", getenv("PDCBB_JOB_DIR"),
                PDCbb_last_error_message());
        return 1;
    }
    int n = PDCbb_nservers();
    stats_daemon_t *cur = calloc((size_t)n, sizeof(*cur));
    stats_daemon_t *prev = calloc((size_t)n, sizeof(*prev));
    if (cur == NULL || prev == NULL) {
        fprintf(stderr, "pdcbb stats: out of memory\n");
        free(cur);
        free(prev);
        PDCclose(pdc);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = stats_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int status = 0;
    bool have_prev = false;
    double next = cli_now();
    for (unsigned long long i = 0; !stats_stop && (count == 0 || i < count); i++) {
        if (i > 0) {
            next += interval;
            stats_sleep_until(next);
            if (stats_stop)
                break;
        }
        char ts[40];
        stats_timestamp(ts, sizeof(ts));
        stats_take_all(n, cur);
        for (int r = 0; r < n; r++)
            if (!cur[r].ok)
                status = 1;
        if (json)
            stats_print_json(ts, n, cur, have_prev ? prev : NULL);
        else
            stats_print_table(ts, n, cur, have_prev ? prev : NULL, count != 1);
        fflush(stdout);
        stats_daemon_t *t = prev;
        prev = cur;
        cur = t;
        have_prev = true;
    }
    free(cur);
    free(prev);
    PDCclose(pdc);
    return status;
}
