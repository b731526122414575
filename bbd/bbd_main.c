/*
 * bbd_main.c - pdc_bbd start-up and shutdown: options, configuration, job directory files,
 * store, listener, ready report, and the clean exit on SIGTERM.
 *
 * Start-up order matters for the prolog and for restarts: the pid file is written first (so
 * the epilog can always find and stop us), then the store is opened (a restart on the same
 * job directory serves everything acknowledged before), then the listener, then the endpoint
 * record, and only then "ready" goes to the prolog's pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ucs/config/global_opts.h>

#include "bbd.h"
#include "pdcbb_log.h"

#define BBD_ERR_LEN (PATH_MAX + 512)

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: pdc_bbd --job-dir DIR --rank R --nservers N --job-id ID --node NAME\n"
            "               [--config FILE] [--ready-fd FD] [--foreground] [--print-config]\n"
            "\n"
            "The pdcbb burst-buffer daemon: serves one job's PDC containers, objects and tags\n"
            "from node-local storage. Normally started by the Slurm prolog or `pdcbb run`.\n"
            "\n"
            "  --job-dir DIR    the node-local job directory (token, config, data, log)\n"
            "  --rank R         this daemon's rank, 0 <= R < N\n"
            "  --nservers N     number of daemons of the job\n"
            "  --job-id ID      the job id clients must present\n"
            "  --node NAME      this node's name as the launcher names it\n"
            "  --config FILE    resolved job configuration (default DIR/config.yaml)\n"
            "  --ready-fd FD    write \"ready R PORT\" (or \"error MESSAGE\") to FD, then close it\n"
            "  --foreground     log to stderr instead of DIR/bbd-R.log\n"
            "  --print-config   print the resolved configuration and exit\n"
            "  --help           this text\n"
            "\n"
            "SIGTERM or SIGINT: finish in-flight requests, close the store, exit 0.\n");
}

static int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

static void report(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(int fd, const char *fmt, ...)
{
    char buf[BBD_ERR_LEN + 64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    if (fd >= 0) {
        ssize_t w = write(fd, buf, (size_t)n);
        (void)w;
    }
}

static pdcbb_err_t write_pid_file(bbd_t *d)
{
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof(tmp), "%s.tmp", d->pid_path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return pdcbb_err_from_errno(errno);
    ssize_t w = write(fd, buf, (size_t)n);
    close(fd);
    if (w != n || rename(tmp, d->pid_path) != 0)
        return pdcbb_err_from_errno(errno);
    return PDCBB_OK;
}

/*
 * Open files: every connection to the daemon's port is a descriptor, and UCX holds one for a
 * TCP connection that never says anything. With the usual soft limit of 1024, about a thousand
 * idle connections from anyone who can reach the port locked every client out; the hard limit
 * (often 2^20 under Slurm) is the daemon's to use. UCX's asynchronous thread, which watches
 * those connections, takes at most UCX_ASYNC_MAX_EVENTS of them (1024 by default, read when
 * the library loads): unless the environment sets it, it is raised to the same limit before
 * the worker (and its thread) is created.
 */
static void raise_open_files(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t was = rl.rlim_cur;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            PDCBB_INFO("open files limit raised from %llu to %llu", (unsigned long long)was,
                       (unsigned long long)rl.rlim_max);
        else
            PDCBB_WARN("cannot raise the open files limit from %llu: %s", (unsigned long long)was,
                       strerror(errno));
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (getenv("UCX_ASYNC_MAX_EVENTS") == NULL && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur > ucs_global_opts.async_max_events)
        ucs_global_opts.async_max_events =
            rl.rlim_cur > UINT_MAX ? UINT_MAX : (unsigned)rl.rlim_cur;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"job-dir", required_argument, 0, 'd'},  {"rank", required_argument, 0, 'r'},
        {"nservers", required_argument, 0, 'n'}, {"job-id", required_argument, 0, 'j'},
        {"node", required_argument, 0, 'N'},     {"config", required_argument, 0, 'c'},
        {"ready-fd", required_argument, 0, 'R'}, {"foreground", no_argument, 0, 'f'},
        {"print-config", no_argument, 0, 'P'},   {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    static bbd_t daemon_state;
    bbd_t *d = &daemon_state;
    const char *job_dir = NULL, *config = NULL, *node = NULL;
    uint64_t rank = UINT64_MAX, nservers = 0, job_id = 0, u;
    int ready_fd = -1, foreground = 0, print_config = 0, opt, have_job = 0;
    char err[BBD_ERR_LEN] = "", path[PATH_MAX];
    pdcbb_err_t rc;
    sigset_t shutdown_signals;

    bbd_signals_block(&shutdown_signals);
    /* Staging buffers for region data are large and reused: keep freed memory in the process
     * instead of returning it, so buffers are not page-faulted in again for every message. */
    mallopt(M_MMAP_THRESHOLD, 512 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'd': job_dir = optarg; break;
        case 'c': config = optarg; break;
        case 'N': node = optarg; break;
        case 'f': foreground = 1; break;
        case 'P': print_config = 1; break;
        case 'h': usage(stdout); return 0;
        case 'r':
            if (parse_uint(optarg, PDCBB_SERVERS_MAX - 1, &rank)) {
                fprintf(stderr, "pdc_bbd: bad --rank '%s' (expected 0..%u)\n", optarg,
                        PDCBB_SERVERS_MAX - 1);
                return 2;
            }
            break;
        case 'n':
            if (parse_uint(optarg, PDCBB_SERVERS_MAX, &nservers) || nservers == 0) {
                fprintf(stderr, "pdc_bbd: bad --nservers '%s' (expected 1..%u)\n", optarg,
                        PDCBB_SERVERS_MAX);
                return 2;
            }
            break;
        case 'j':
            if (parse_uint(optarg, UINT64_MAX, &job_id)) {
                fprintf(stderr, "pdc_bbd: bad --job-id '%s' (expected a number)\n", optarg);
                return 2;
            }
            have_job = 1;
            break;
        case 'R':
            if (parse_uint(optarg, INT32_MAX, &u) || u < 3) {
                fprintf(stderr, "pdc_bbd: bad --ready-fd '%s' (expected a descriptor >= 3)\n",
                        optarg);
                return 2;
            }
            ready_fd = (int)u;
            break;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "pdc_bbd: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }

    pdcbb_config_init(&d->cfg);
    if (config == NULL && job_dir) {
        static char default_config[PATH_MAX];
        if (pdcbb_jobdir_path(job_dir, "config.yaml", default_config, sizeof(default_config)) ==
                PDCBB_OK &&
            access(default_config, F_OK) == 0)
            config = default_config;
    }
    if (config && (rc = pdcbb_config_load_file(&d->cfg, config, PDCBB_SCOPE_ALL, err,
                                               sizeof(err))) != PDCBB_OK) {
        report(ready_fd, "error %s", err);
        fprintf(stderr, "pdc_bbd: %s\n", err);
        return 1;
    }
    if ((rc = pdcbb_config_apply_env(&d->cfg, err, sizeof(err))) != PDCBB_OK) {
        report(ready_fd, "error %s", err);
        fprintf(stderr, "pdc_bbd: %s\n", err);
        return 1;
    }
    if (print_config) {
        pdcbb_config_print(&d->cfg, stdout);
        return 0;
    }

    const char *missing = job_dir == NULL                  ? "--job-dir"
                          : rank == UINT64_MAX             ? "--rank"
                          : nservers == 0                  ? "--nservers"
                          : !have_job                      ? "--job-id"
                          : node == NULL || *node == '\0' ? "--node"
                                                           : NULL;
    if (missing) {
        fprintf(stderr, "pdc_bbd: missing required option %s (see --help)\n", missing);
        report(ready_fd, "error missing required option %s", missing);
        return 2;
    }
    if (rank >= nservers) {
        fprintf(stderr, "pdc_bbd: --rank %" PRIu64 " is not below --nservers %" PRIu64 "\n",
                rank, nservers);
        report(ready_fd, "error --rank %" PRIu64 " is not below --nservers %" PRIu64, rank,
               nservers);
        return 2;
    }
    if (strlen(node) >= sizeof(d->node) || realpath(job_dir, d->job_dir) == NULL) {
        fprintf(stderr, "pdc_bbd: job directory '%s': %s\n", job_dir, strerror(errno));
        report(ready_fd, "error job directory '%s': %s", job_dir, strerror(errno));
        return 1;
    }
    d->rank = (unsigned)rank;
    d->nservers = (unsigned)nservers;
    d->job_id = job_id;
    snprintf(d->node, sizeof(d->node), "%s", node);
    umask(077);

    char ident[64];
    snprintf(ident, sizeof(ident), "pdc_bbd[%u]", d->rank);
    pdcbb_log_set_ident(ident);
    pdcbb_log_set_level(d->cfg.log_level);
    if (!foreground) {
        if (pdcbb_jobdir_rank_path(d->job_dir, d->rank, "log", path, sizeof(path)) != PDCBB_OK ||
            pdcbb_log_open(path) != 0) {
            report(ready_fd, "error cannot open log file %s: %s", path, strerror(errno));
            return 1;
        }
    }

    pdcbb_jobdir_rank_path(d->job_dir, d->rank, "pid", d->pid_path, sizeof(d->pid_path));
    pdcbb_jobdir_rank_path(d->job_dir, d->rank, "endpoint", d->endpoint_path,
                           sizeof(d->endpoint_path));
    pdcbb_jobdir_rank_path(d->job_dir, d->rank, "", d->data_dir, sizeof(d->data_dir));
    PDCBB_INFO("starting: job %" PRIu64 ", rank %u of %u, node %s, pid %ld, job dir %s",
               d->job_id, d->rank, d->nservers, d->node, (long)getpid(), d->job_dir);

    raise_open_files();
    int status = 1;
    if ((rc = write_pid_file(d)) != PDCBB_OK) {
        snprintf(err, sizeof(err), "cannot write %s: %s", d->pid_path, pdcbb_strerror(rc));
        goto fail;
    }
    if (pdcbb_jobdir_path(d->job_dir, "token", path, sizeof(path)) != PDCBB_OK ||
        (rc = pdcbb_token_read(path, d->token)) != PDCBB_OK) {
        snprintf(err, sizeof(err), "cannot read the job token %s: %s", path,
                 pdcbb_strerror(rc));
        goto fail;
    }
    if (mkdir(d->data_dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, sizeof(err), "cannot create %s: %s", d->data_dir, strerror(errno));
        goto fail;
    }
    d->store_ops = &pdcbb_store_lmdb;
    if ((rc = d->store_ops->open(d->data_dir, d->cfg.lmdb_map_size, &d->store, err,
                                 sizeof(err))) != PDCBB_OK)
        goto fail;
    if ((rc = bbd_tagidx_open(d)) != PDCBB_OK) {
        snprintf(err, sizeof(err), "cannot read the tag index's log: %s", pdcbb_strerror(rc));
        goto fail;
    }
    if ((rc = bbd_stage_in(d, err, sizeof(err))) != PDCBB_OK)
        goto fail;
    if ((rc = bbd_data_open(d, err, sizeof(err))) != PDCBB_OK)
        goto fail;
    if ((rc = bbd_io_start(d)) != PDCBB_OK) {
        snprintf(err, sizeof(err), "cannot start the I/O thread: %s", pdcbb_strerror(rc));
        goto fail;
    }
    if ((rc = bbd_server_start(d, err, sizeof(err))) != PDCBB_OK)
        goto fail;

    pdcbb_endpoint_t ep;
    memset(&ep, 0, sizeof(ep));
    ep.job_id = d->job_id;
    ep.rank = d->rank;
    ep.nservers = d->nservers;
    snprintf(ep.node, sizeof(ep.node), "%s", d->node);
    snprintf(ep.ip, sizeof(ep.ip), "%s", d->listen_ip);
    ep.port = d->port;
    ep.pid = getpid();
    if ((rc = pdcbb_endpoint_write(d->endpoint_path, &ep)) != PDCBB_OK) {
        snprintf(err, sizeof(err), "cannot write %s: %s", d->endpoint_path, pdcbb_strerror(rc));
        goto fail;
    }
    if ((rc = bbd_table_publish(d, &ep, err, sizeof(err))) != PDCBB_OK)
        goto fail;
    PDCBB_INFO("ready: %s:%u", d->listen_ip, d->port);
    report(ready_fd, "ready %u %u", d->rank, d->port);
    if (ready_fd >= 0)
        close(ready_fd);
    ready_fd = -1;

    bbd_server_run(d);

    bbd_table_unpublish(d);
    bbd_table_gather_free(d);
    bbd_table_free(d);
    unlink(d->endpoint_path);
    bbd_server_stop(d);
    bbd_io_stop(d);
    bbd_data_close(d);
    bbd_staging_free(d);
    if ((rc = d->store_ops->sync(d->store)) != PDCBB_OK)
        PDCBB_ERROR("final sync of the store failed: %s", pdcbb_strerror(rc));
    d->store_ops->close(d->store);
    d->store = NULL;
    unlink(d->pid_path);
    PDCBB_INFO("stopped cleanly after %llu requests (%llu refused without token)",
               (unsigned long long)d->stats.requests,
               (unsigned long long)d->stats.auth_failures);
    return 0;

fail:
    PDCBB_ERROR("start-up failed: %s", err);
    report(ready_fd, "error %s", err);
    bbd_table_unpublish(d);
    unlink(d->endpoint_path);
    bbd_server_stop(d);
    bbd_io_stop(d);
    if (d->store)
        d->store_ops->close(d->store);
    unlink(d->pid_path);
    return status;
}
