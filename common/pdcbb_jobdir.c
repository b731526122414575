/* pdcbb_jobdir.c - job directory layout, token and endpoint record files (pdcbb_jobdir.h). */
#include "pdcbb_jobdir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdcbb_grow.h"

pdcbb_err_t pdcbb_jobdir_path(const char *dir, const char *name, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/%s", dir, name);
    return (n < 0 || (size_t)n >= len) ? PDCBB_ERR_TOO_BIG : PDCBB_OK;
}

pdcbb_err_t pdcbb_jobdir_rank_path(const char *dir, unsigned rank, const char *kind, char *out,
                                   size_t len)
{
    int n = (kind && *kind) ? snprintf(out, len, "%s/bbd-%u.%s", dir, rank, kind)
                            : snprintf(out, len, "%s/bbd-%u", dir, rank);
    return (n < 0 || (size_t)n >= len) ? PDCBB_ERR_TOO_BIG : PDCBB_OK;
}

pdcbb_err_t pdcbb_token_generate(uint8_t *token)
{
    size_t got = 0;
    while (got < PDCBB_TOKEN_LEN) {
        ssize_t r = getrandom(token + got, PDCBB_TOKEN_LEN - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return pdcbb_err_from_errno(errno);
        }
        got += (size_t)r;
    }
    return PDCBB_OK;
}

/* Write len bytes to path through a temporary file (fsync'ed if sync) and rename. */
static pdcbb_err_t write_atomic_sync(const char *path, const char *data, size_t len, mode_t mode,
                                     int sync)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return PDCBB_ERR_TOO_BIG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return pdcbb_err_from_errno(errno);
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return pdcbb_err_from_errno(e);
        }
        off += (size_t)w;
    }
    if ((sync && fsync(fd) != 0) || close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return pdcbb_err_from_errno(e);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return pdcbb_err_from_errno(e);
    }
    return PDCBB_OK;
}

static pdcbb_err_t write_atomic(const char *path, const char *data, size_t len, mode_t mode)
{
    return write_atomic_sync(path, data, len, mode, 1);
}

static void hex_encode(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static int hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static pdcbb_err_t hex_decode(const char *in, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hex_digit((unsigned char)in[2 * i]);
        int lo = hi < 0 ? -1 : hex_digit((unsigned char)in[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return PDCBB_ERR_PROTO;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_token_write(const char *path, const uint8_t *token)
{
    char hex[2 * PDCBB_TOKEN_LEN + 2];
    hex_encode(token, PDCBB_TOKEN_LEN, hex);
    strcat(hex, "\n");
    return write_atomic(path, hex, strlen(hex), 0600);
}

pdcbb_err_t pdcbb_token_read(const char *path, uint8_t *token)
{
    char buf[2 * PDCBB_TOKEN_LEN + 8];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pdcbb_err_from_errno(errno);
    ssize_t r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r < 2 * PDCBB_TOKEN_LEN)
        return PDCBB_ERR_PROTO;
    buf[r] = '\0';
    if (r > 2 * PDCBB_TOKEN_LEN && buf[2 * PDCBB_TOKEN_LEN] != '\n')
        return PDCBB_ERR_PROTO;
    return hex_decode(buf, token, PDCBB_TOKEN_LEN);
}

pdcbb_err_t pdcbb_endpoint_format(const pdcbb_endpoint_t *ep, int with_token, char *out,
                                  size_t len)
{
    char hex[2 * PDCBB_TOKEN_LEN + 1] = "";
    if (with_token)
        hex_encode(ep->token, PDCBB_TOKEN_LEN, hex);
    int n = snprintf(out, len,
                     "version=%d\njob_id=%" PRIu64 "\nrank=%u\nnservers=%u\nnode=%s\nip=%s\n"
                     "port=%u\npid=%ld\n%s%s%s",
                     PDCBB_ENDPOINT_VERSION, ep->job_id, ep->rank, ep->nservers, ep->node, ep->ip,
                     ep->port, (long)ep->pid, with_token ? "token=" : "", hex,
                     with_token ? "\n" : "");
    return (n < 0 || (size_t)n >= len) ? PDCBB_ERR_TOO_BIG : PDCBB_OK;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

pdcbb_err_t pdcbb_endpoint_parse(const char *text, int with_token, pdcbb_endpoint_t *ep)
{
    pdcbb_endpoint_t e;
    memset(&e, 0, sizeof(e));
    unsigned seen = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        char line[512];
        if (l >= sizeof(line))
            return PDCBB_ERR_PROTO;
        memcpy(line, p, l);
        line[l] = '\0';
        p += l + (nl ? 1 : 0);
        if (l == 0)
            continue;
        char *eq = strchr(line, '=');
        if (eq == NULL)
            return PDCBB_ERR_PROTO;
        *eq = '\0';
        const char *k = line, *v = eq + 1;
        uint64_t u;
        if (strcmp(k, "version") == 0) {
            if (parse_u64(v, 1000, &u) || u != PDCBB_ENDPOINT_VERSION)
                return PDCBB_ERR_VERSION;
            seen |= 1;
        } else if (strcmp(k, "job_id") == 0) {
            if (parse_u64(v, UINT64_MAX, &u))
                return PDCBB_ERR_PROTO;
            e.job_id = u;
            seen |= 2;
        } else if (strcmp(k, "rank") == 0) {
            if (parse_u64(v, PDCBB_SERVERS_MAX - 1, &u))
                return PDCBB_ERR_PROTO;
            e.rank = (uint32_t)u;
            seen |= 4;
        } else if (strcmp(k, "nservers") == 0) {
            if (parse_u64(v, PDCBB_SERVERS_MAX, &u) || u == 0)
                return PDCBB_ERR_PROTO;
            e.nservers = (uint32_t)u;
            seen |= 8;
        } else if (strcmp(k, "node") == 0) {
            if (strlen(v) >= sizeof(e.node) || *v == '\0')
                return PDCBB_ERR_PROTO;
            strcpy(e.node, v);
            seen |= 16;
        } else if (strcmp(k, "ip") == 0) {
            if (strlen(v) >= sizeof(e.ip) || *v == '\0')
                return PDCBB_ERR_PROTO;
            strcpy(e.ip, v);
            seen |= 32;
        } else if (strcmp(k, "port") == 0) {
            if (parse_u64(v, 65535, &u) || u == 0)
                return PDCBB_ERR_PROTO;
            e.port = (uint16_t)u;
            seen |= 64;
        } else if (strcmp(k, "pid") == 0) {
            if (parse_u64(v, INT32_MAX, &u) || u == 0)
                return PDCBB_ERR_PROTO;
            e.pid = (pid_t)u;
            seen |= 128;
        } else if (strcmp(k, "token") == 0) {
            if (strlen(v) != 2 * PDCBB_TOKEN_LEN || hex_decode(v, e.token, PDCBB_TOKEN_LEN))
                return PDCBB_ERR_PROTO;
            seen |= 256;
        } /* unknown keys are ignored: later versions may add some */
    }
    if ((seen & 255) != 255 || (with_token && !(seen & 256)))
        return PDCBB_ERR_PROTO;
    if (e.rank >= e.nservers)
        return PDCBB_ERR_PROTO;
    *ep = e;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_job_table_next(const char *text, size_t len, size_t *pos, pdcbb_endpoint_t *ep)
{
    static const char sep[] = PDCBB_JOB_TABLE_SEP;
    const size_t seplen = sizeof(sep) - 1;
    size_t start = *pos;
    if (start >= len)
        return PDCBB_ERR_NOT_FOUND;
    size_t end = start;
    while (end < len && !(len - end >= seplen && memcmp(text + end, sep, seplen) == 0))
        end++;
    char rec[2048]; /* a formatted record is at most 1024 bytes with its token */
    if (end - start >= sizeof(rec) || memchr(text + start, '\0', end - start) != NULL)
        return PDCBB_ERR_PROTO;
    memcpy(rec, text + start, end - start);
    rec[end - start] = '\0';
    pdcbb_endpoint_t e;
    if (pdcbb_endpoint_parse(rec, 1, &e) != PDCBB_OK)
        return PDCBB_ERR_PROTO; /* never NOT_FOUND, which means the end of the text */
    *ep = e;
    *pos = end < len ? end + seplen : end;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_endpoint_write(const char *path, const pdcbb_endpoint_t *ep)
{
    char buf[1024];
    pdcbb_err_t rc = pdcbb_endpoint_format(ep, 0, buf, sizeof(buf));
    if (rc != PDCBB_OK)
        return rc;
    return write_atomic(path, buf, strlen(buf), 0600);
}

/* The first len-1 bytes of a small text file, NUL-terminated. */
static pdcbb_err_t read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pdcbb_err_from_errno(errno);
    ssize_t r = read(fd, buf, len - 1);
    int e = errno;
    close(fd);
    if (r < 0)
        return pdcbb_err_from_errno(e);
    buf[r] = '\0';
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
    return write_atomic_sync(path, data, len, mode, 0);
}

pdcbb_err_t pdcbb_read_text(const char *path, char *buf, size_t len)
{
    pdcbb_err_t rc = read_small(path, buf, len);
    if (rc != PDCBB_OK)
        return rc;
    size_t l = strlen(buf);
    while (l > 0 && (buf[l - 1] == '\n' || buf[l - 1] == '\r'))
        buf[--l] = '\0';
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_rendezvous_record_path(const char *rdv, unsigned rank, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/bbd-%u.record", rdv, rank);
    return (n < 0 || (size_t)n >= len) ? PDCBB_ERR_TOO_BIG : PDCBB_OK;
}

pdcbb_err_t pdcbb_rendezvous_error_path(const char *rdv, unsigned node_index, char *out,
                                        size_t len)
{
    int n = snprintf(out, len, "%s/node-%u.error", rdv, node_index);
    return (n < 0 || (size_t)n >= len) ? PDCBB_ERR_TOO_BIG : PDCBB_OK;
}

pdcbb_err_t pdcbb_rendezvous_publish(const char *rdv, const pdcbb_endpoint_t *ep)
{
    char path[4096], buf[1024];
    pdcbb_err_t rc = pdcbb_rendezvous_record_path(rdv, ep->rank, path, sizeof(path));
    if (rc == PDCBB_OK)
        rc = pdcbb_endpoint_format(ep, 1, buf, sizeof(buf));
    return rc != PDCBB_OK ? rc : write_atomic(path, buf, strlen(buf), 0600);
}

pdcbb_err_t pdcbb_rendezvous_read(const char *rdv, unsigned rank, pdcbb_endpoint_t *ep)
{
    char path[4096], buf[1024];
    pdcbb_err_t rc = pdcbb_rendezvous_record_path(rdv, rank, path, sizeof(path));
    if (rc == PDCBB_OK)
        rc = read_small(path, buf, sizeof(buf));
    if (rc != PDCBB_OK)
        return rc;
    pdcbb_endpoint_t e;
    if ((rc = pdcbb_endpoint_parse(buf, 1, &e)) != PDCBB_OK)
        return rc;
    if (e.rank != rank)
        return PDCBB_ERR_PROTO;
    *ep = e;
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_jobinfo_write(const char *dir, const pdcbb_jobinfo_t *ji)
{
    char path[4096], buf[1024];
    pdcbb_err_t rc = pdcbb_jobdir_path(dir, "job.info", path, sizeof(path));
    if (rc != PDCBB_OK)
        return rc;
    for (const char *c = ji->instance; *c; c++)
        if (!isxdigit((unsigned char)*c))
            return PDCBB_ERR_INVAL;
    if (strpbrk(ji->node, " \n") != NULL || ji->node[0] == '\0' || ji->nnodes == 0 ||
        ji->node_index >= ji->nnodes || ji->servers_per_node == 0)
        return PDCBB_ERR_INVAL;
    if (strchr(ji->rendezvous, '\n') != NULL ||
        (ji->cluster[0] && !pdcbb_cluster_name_ok(ji->cluster)))
        return PDCBB_ERR_INVAL;
    char buf2[sizeof(buf) + sizeof(ji->rendezvous)];
    int n = snprintf(buf2, sizeof(buf2),
                     "job_id %" PRIu64 "\ninstance %s\ncluster %s\nnode %s\nnode_index %" PRIu32
                     "\nnnodes %" PRIu32 "\nservers_per_node %" PRIu32 "\nrendezvous %s\n",
                     ji->job_id, ji->instance[0] ? ji->instance : "-",
                     ji->cluster[0] ? ji->cluster : "-", ji->node, ji->node_index, ji->nnodes,
                     ji->servers_per_node, ji->rendezvous[0] ? ji->rendezvous : "-");
    if (n < 0 || (size_t)n >= sizeof(buf2))
        return PDCBB_ERR_TOO_BIG;
    return write_atomic(path, buf2, (size_t)n, 0644);
}

pdcbb_err_t pdcbb_jobinfo_read(const char *dir, pdcbb_jobinfo_t *ji)
{
    char path[4096], buf[8192];
    pdcbb_err_t rc = pdcbb_jobdir_path(dir, "job.info", path, sizeof(path));
    if (rc != PDCBB_OK)
        return rc;
    if ((rc = read_small(path, buf, sizeof(buf))) != PDCBB_OK)
        return rc;
    pdcbb_jobinfo_t x;
    memset(&x, 0, sizeof(x));
    unsigned seen = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char key[32], val[PDCBB_NODE_NAME_MAX];
        /* A path may be long and hold spaces: the rest of the line. */
        if (strncmp(line, "rendezvous ", 11) == 0) {
            const char *v = line + 11;
            if (strlen(v) >= sizeof(x.rendezvous))
                return PDCBB_ERR_PROTO;
            snprintf(x.rendezvous, sizeof(x.rendezvous), "%s", strcmp(v, "-") ? v : "");
            continue;
        }
        if (sscanf(line, "%31s %255s", key, val) != 2)
            return PDCBB_ERR_PROTO;
        char *end;
        unsigned long long v = strtoull(val, &end, 10);
        int num = *end == '\0' && val[0] != '-';
        if (strcmp(key, "job_id") == 0 && num && v > 0) {
            x.job_id = v;
            seen |= 1;
        } else if (strcmp(key, "instance") == 0 && strlen(val) <= PDCBB_INSTANCE_LEN) {
            snprintf(x.instance, sizeof(x.instance), "%s", strcmp(val, "-") ? val : "");
            seen |= 2;
        } else if (strcmp(key, "cluster") == 0 &&
                   (strcmp(val, "-") == 0 || pdcbb_cluster_name_ok(val))) {
            snprintf(x.cluster, sizeof(x.cluster), "%s", strcmp(val, "-") ? val : "");
        } else if (strcmp(key, "node") == 0) {
            snprintf(x.node, sizeof(x.node), "%s", val);
            seen |= 4;
        } else if (strcmp(key, "node_index") == 0 && num && v < UINT32_MAX) {
            x.node_index = (uint32_t)v;
            seen |= 8;
        } else if (strcmp(key, "nnodes") == 0 && num && v > 0 && v < UINT32_MAX) {
            x.nnodes = (uint32_t)v;
            seen |= 16;
        } else if (strcmp(key, "servers_per_node") == 0 && num && v > 0 && v < UINT32_MAX) {
            x.servers_per_node = (uint32_t)v;
            seen |= 32;
        } else {
            return PDCBB_ERR_PROTO;
        }
    }
    if (seen != 63 || x.node_index >= x.nnodes)
        return PDCBB_ERR_PROTO;
    *ji = x;
    return PDCBB_OK;
}

int pdcbb_cluster_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n > 0 && n < PDCBB_CLUSTER_NAME_MAX && isalnum((unsigned char)name[0]) &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

pdcbb_err_t pdcbb_instance_generate(char *out)
{
    uint8_t raw[PDCBB_INSTANCE_LEN / 2];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return pdcbb_err_from_errno(errno ? errno : EIO);
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_endpoint_read(const char *path, pdcbb_endpoint_t *ep)
{
    char buf[2048];
    pdcbb_err_t rc = read_small(path, buf, sizeof(buf));
    return rc != PDCBB_OK ? rc : pdcbb_endpoint_parse(buf, 0, ep);
}

pdcbb_err_t pdcbb_jobdir_read_endpoints(const char *dir, pdcbb_endpoint_t **eps, size_t *n)
{
    char path[4096];
    uint8_t token[PDCBB_TOKEN_LEN];
    pdcbb_err_t rc = pdcbb_jobdir_path(dir, "token", path, sizeof(path));
    if (rc == PDCBB_OK)
        rc = pdcbb_token_read(path, token);
    if (rc != PDCBB_OK)
        return rc;
    DIR *d = opendir(dir);
    if (d == NULL)
        return pdcbb_err_from_errno(errno);
    pdcbb_endpoint_t *list = NULL;
    size_t count = 0, cap = 0;
    struct dirent *de;
    rc = PDCBB_OK;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (strncmp(de->d_name, "bbd-", 4) != 0 || l < 13 ||
            strcmp(de->d_name + l - 9, ".endpoint") != 0)
            continue;
        pdcbb_endpoint_t *nl = pdcbb_grow(list, count, &cap, sizeof(*list), 8);
        if (nl == NULL) {
            rc = PDCBB_ERR_NOMEM;
            break;
        }
        list = nl;
        if ((rc = pdcbb_jobdir_path(dir, de->d_name, path, sizeof(path))) != PDCBB_OK ||
            (rc = pdcbb_endpoint_read(path, &list[count])) != PDCBB_OK)
            break;
        memcpy(list[count].token, token, PDCBB_TOKEN_LEN);
        count++;
    }
    closedir(d);
    if (rc != PDCBB_OK) {
        free(list);
        return rc;
    }
    *eps = list;
    *n = count;
    return PDCBB_OK;
}

int pdcbb_pid_alive(pid_t pid)
{
    if (pid <= 0)
        return 0;
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : 1;
    ssize_t r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 0)
        return 0;
    buf[r] = '\0';
    const char *rp = strrchr(buf, ')');
    if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
        return 0;
    return 1;
}
