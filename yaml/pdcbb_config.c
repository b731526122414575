/*
 * pdcbb_config.c - the configuration table (cfg_keys[]) and setting one key from text: the
 * built-in defaults, each key's type, bounds, scope and extra check, and the messages that name
 * the source, the key and what is wrong. Every way of setting keys goes through cfg_apply: the
 * YAML loader (pdcbb_config_yaml.c), --pdc specs and the environment (pdcbb_config_spec.c).
 * Validation of a whole config is pdcbb_config_check.c, printing and writing it
 * pdcbb_config_print.c, the size, duration and placement parsers pdcbb_config_values.c.
 *
 * Every function that takes a config from several values (a file, a spec, the environment)
 * works on a private copy and commits it only when every value was accepted, so a failed call
 * never leaves a half-applied config behind.
 */
#include "pdcbb_config_internal.h"

#include <arpa/inet.h>
#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <pwd.h>
#include <string.h>

#include "pdcbb_log.h"
#include "pdcbb_name.h"

#ifndef PDCBB_DEFAULT_DAEMON_PATH
#define PDCBB_DEFAULT_DAEMON_PATH "/usr/local/sbin/pdc_bbd"
#endif
#ifndef PDCBB_DEFAULT_MOUNT_PATH
#define PDCBB_DEFAULT_MOUNT_PATH "/usr/local/bin/pdcbb_mount"
#endif

/* ---------------------------------------------------------------------------------------- */
/* The table                                                                                */
/* ---------------------------------------------------------------------------------------- */

#define CFG_KIB 1024ull
#define CFG_MIB (1024ull * CFG_KIB)
#define CFG_GIB (1024ull * CFG_MIB)
#define CFG_PIB (1024ull * 1024ull * CFG_GIB)

#define CFG_AT(field)                                                                           \
    .offset = offsetof(pdcbb_config_t, field), .size = sizeof(((pdcbb_config_t *)0)->field)

/* The prolog writes every key into the job's file, so the job scope may set all of them. */
#define CFG_S_SITE (PDCBB_SCOPE_SITE | PDCBB_SCOPE_JOB)
#define CFG_S_USER (PDCBB_SCOPE_SITE | PDCBB_SCOPE_USER | PDCBB_SCOPE_JOB)
#define CFG_S_DEBUG (PDCBB_SCOPE_SITE | PDCBB_SCOPE_USER | PDCBB_SCOPE_ENV | PDCBB_SCOPE_JOB)

static const char *cfg_check_rendezvous(const char *value)
{
    if (value[0] == '/' || strncmp(value, "~/", 2) == 0)
        return NULL;
    return "must be an absolute path or start with '~/' (the job user's home directory)";
}

static const char *cfg_check_ip(const char *value);
static const char *cfg_check_ucx_list(const char *value);
static const char *cfg_check_rendezvous(const char *value);
static const char *cfg_check_owner(const char *value);

/* The values of the keys that take one of a few words. */
static const char *const cfg_share_values[] = {"none", "group", "all", NULL};
static const char *const cfg_yes_no_values[] = {"yes", "no", NULL};
static const char *const cfg_forward_values[] = {"auto", "always", "never", NULL};

const pdcbb_config_key_t cfg_keys[] = {
    /* site keys */
    {.name = "local_root",
     .type = PDCBB_CFG_PATH,
     CFG_AT(local_root),
     .def = "/tmp/pdcbb",
     .flags = PDCBB_CFG_F_ABSOLUTE | PDCBB_CFG_F_REQUIRED,
     .scope = CFG_S_SITE,
     .help = "node-local root under which each job gets its directory"},
    {.name = "max_capacity",
     .type = PDCBB_CFG_SIZE,
     CFG_AT(max_capacity),
     .def = "0",
     .umin = 0,
     .umax = UINT64_MAX,
     .scope = CFG_S_SITE,
     .help = "largest capacity a job may ask for per node (0: limited by free space only)"},
    {.name = "drain_roots",
     .type = PDCBB_CFG_PATH_LIST,
     CFG_AT(drain_roots),
     .def = "",
     .flags = PDCBB_CFG_F_ABSOLUTE,
     .scope = CFG_S_SITE,
     .help = "directories under which drain and stage_in must lie (empty: anywhere)"},
    {.name = "daemon_path",
     .type = PDCBB_CFG_PATH,
     CFG_AT(daemon_path),
     .def = PDCBB_DEFAULT_DAEMON_PATH,
     .flags = PDCBB_CFG_F_ABSOLUTE | PDCBB_CFG_F_REQUIRED,
     .scope = CFG_S_SITE,
     .help = "the pdc_bbd binary the prolog starts"},
    {.name = "mount_path",
     .type = PDCBB_CFG_PATH,
     CFG_AT(mount_path),
     .def = PDCBB_DEFAULT_MOUNT_PATH,
     .flags = PDCBB_CFG_F_ABSOLUTE | PDCBB_CFG_F_REQUIRED,
     .scope = CFG_S_SITE,
     .help = "the pdcbb_mount binary the prolog starts for jobs with mount=yes"},
    {.name = "ready_timeout",
     .type = PDCBB_CFG_SECONDS,
     CFG_AT(ready_timeout),
     .def = "30",
     .dmin = 0.1,
     .dmax = CFG_DAY,
     .scope = CFG_S_SITE,
     .help = "seconds the prolog waits for each daemon to report ready"},
    {.name = "stage_in_timeout",
     .type = PDCBB_CFG_SECONDS,
     CFG_AT(stage_in_timeout),
     .def = "3600",
     .dmin = 0.1,
     .dmax = CFG_DAY,
     .scope = CFG_S_SITE,
     .help = "seconds the prolog waits for daemons that load a stage_in directory"},
    {.name = "stop_timeout",
     .type = PDCBB_CFG_SECONDS,
     CFG_AT(stop_timeout),
     .def = "10",
     .dmin = 0.1,
     .dmax = CFG_DAY,
     .scope = CFG_S_SITE,
     .help = "seconds the epilog waits after SIGTERM before SIGKILL"},
    {.name = "script_timeout",
     .type = PDCBB_CFG_SECONDS,
     CFG_AT(script_timeout),
     .def = "300",
     .dmin = 1,
     .dmax = CFG_DAY,
     .scope = CFG_S_SITE,
     .help = "seconds a user script may run before its process group is killed"},
    {.name = "stranded_max_age",
     .type = PDCBB_CFG_SECONDS,
     CFG_AT(stranded_max_age),
     .def = "7d",
     .dmin = 0,
     .dmax = 3650 * CFG_DAY,
     .scope = CFG_S_SITE,
     .help = "age after which `pdcbb admin stranded --drain/--remove` acts on a job directory "
             "left on a node (0: any age)"},
    {.name = "ucx_tls",
     .type = PDCBB_CFG_STRING,
     CFG_AT(ucx_tls),
     .def = "cma,tcp",
     .scope = CFG_S_SITE,
     .check = cfg_check_ucx_list,
     .help = "UCX transports (UCX_TLS) for daemons and clients"},
    {.name = "ucx_net_devices",
     .type = PDCBB_CFG_STRING,
     CFG_AT(ucx_net_devices),
     .def = "",
     .scope = CFG_S_SITE,
     .check = cfg_check_ucx_list,
     .help = "UCX network devices (UCX_NET_DEVICES; empty: UCX's choice)"},
    {.name = "listen_address",
     .type = PDCBB_CFG_STRING,
     CFG_AT(listen_address),
     .def = "",
     .scope = CFG_S_SITE,
     .check = cfg_check_ip,
     .help = "numeric IP address the daemons listen on (empty: the node's own address)"},
    {.name = "lmdb_map_size",
     .type = PDCBB_CFG_SIZE,
     CFG_AT(lmdb_map_size),
     .def = "16G",
     .umin = CFG_MIB,
     .umax = CFG_PIB,
     .scope = CFG_S_SITE,
     .help = "LMDB map size of each daemon's metadata store"},
    {.name = "rendezvous_dir",
     .type = PDCBB_CFG_PATH,
     CFG_AT(rendezvous_dir),
     .def = "~/.pdcbb",
     .flags = PDCBB_CFG_F_REQUIRED,
     .scope = CFG_S_SITE,
     .check = cfg_check_rendezvous,
     .help = "shared directory where a multi-node job's daemons learn each other ('~/': the "
             "job user's home)"},
    /* user keys */
    {.name = "capacity",
     .type = PDCBB_CFG_SIZE,
     CFG_AT(capacity),
     .def = "1G",
     .umin = CFG_MIB,
     .umax = UINT64_MAX,
     .scope = CFG_S_USER,
     .help = "burst-buffer capacity per node"},
    {.name = "drain",
     .type = PDCBB_CFG_PATH,
     CFG_AT(drain),
     .def = "",
     .flags = PDCBB_CFG_F_ABSOLUTE,
     .scope = CFG_S_USER,
     .help = "directory to drain the burst buffer to at the end (empty: none)"},
    {.name = "drain_share",
     .type = PDCBB_CFG_STRING,
     CFG_AT(drain_share),
     .def = "none",
     .scope = CFG_S_USER,
     .values = cfg_share_values,
     .help = "who else may read the drained job: none (mode 0700), group (0750) or all (0755)"},
    {.name = "stage_in",
     .type = PDCBB_CFG_PATH,
     CFG_AT(stage_in),
     .def = "",
     .flags = PDCBB_CFG_F_ABSOLUTE,
     .scope = CFG_S_USER,
     .help = "drained directory to load into the burst buffer at the start (empty: none)"},
    {.name = "stage_in_owner",
     .type = PDCBB_CFG_STRING,
     CFG_AT(stage_in_owner),
     .def = "",
     .scope = CFG_S_USER,
     .check = cfg_check_owner,
     .help = "whose drain stage_in may load: a user name or uid (empty: the job user's own)"},
    {.name = "script",
     .type = PDCBB_CFG_PATH,
     CFG_AT(script),
     .def = "",
     .flags = PDCBB_CFG_F_ABSOLUTE,
     .scope = CFG_S_USER,
     .help = "executable run as the job user on every node at the start and the end of the "
             "job (empty: none)"},
    {.name = "mount",
     .type = PDCBB_CFG_STRING,
     CFG_AT(mount),
     .def = "no",
     .flags = PDCBB_CFG_F_SWITCH,
     .scope = CFG_S_USER,
     .values = cfg_yes_no_values,
     .help = "yes: the burst buffer is also a filesystem on every node, at $PDCBB_MOUNT"},
    {.name = "stage_in_files",
     .type = PDCBB_CFG_PATH,
     CFG_AT(stage_in_files),
     .def = "",
     .flags = PDCBB_CFG_F_ABSOLUTE,
     .scope = CFG_S_USER,
     .help = "directory tree copied into the job's filesystem at the start (needs mount=yes; "
             "empty: none)"},
    {.name = "servers_per_node",
     .type = PDCBB_CFG_UINT,
     CFG_AT(servers_per_node),
     .def = "1",
     .umin = 1,
     .umax = 64,
     .scope = CFG_S_USER,
     .help = "daemons per node"},
    {.name = "placement",
     .type = PDCBB_CFG_PLACEMENT,
     CFG_AT(placement),
     .def = "obj_static",
     .scope = CFG_S_USER,
     .help = "default region placement: obj_static, region_static, region_dynamic, region_local"},
    /* debugging knobs */
    {.name = "log_level",
     .type = PDCBB_CFG_LOG_LEVEL,
     CFG_AT(log_level),
     .def = "info",
     .scope = CFG_S_DEBUG,
     .help = "log level: none, error, warn, info or debug"},
    {.name = "request_timeout",
     .type = PDCBB_CFG_SECONDS,
     CFG_AT(request_timeout),
     .def = "60",
     .dmin = 0.1,
     .dmax = CFG_DAY,
     .scope = CFG_S_DEBUG,
     .help = "seconds a client waits for a reply"},
    {.name = "connect_timeout",
     .type = PDCBB_CFG_SECONDS,
     CFG_AT(connect_timeout),
     .def = "5",
     .dmin = 0.1,
     .dmax = CFG_DAY,
     .scope = CFG_S_DEBUG,
     .help = "seconds a client waits to connect to a daemon"},
    {.name = "auth_timeout",
     .type = PDCBB_CFG_SECONDS,
     CFG_AT(auth_timeout),
     .def = "1",
     .dmin = 0.1,
     .dmax = 60,
     .scope = CFG_S_DEBUG,
     .help = "seconds a daemon gives a new connection to prove the job token before closing it"},
    {.name = "table_fanout",
     .type = PDCBB_CFG_UINT,
     CFG_AT(table_fanout),
     .def = "16",
     .umin = 2,
     .umax = 64,
     .scope = CFG_S_DEBUG,
     .help = "children of a daemon in the tree through which the daemons gather the job's table"},
    {.name = "forward",
     .type = PDCBB_CFG_STRING,
     CFG_AT(forward),
     .def = "auto",
     .scope = CFG_S_DEBUG,
     .values = cfg_forward_values,
     .help = "clients reach other nodes' daemons through their own node's daemon: auto (in "
             "jobs of more than 32 daemons), always or never"},
};

#define CFG_NKEYS (sizeof(cfg_keys) / sizeof(cfg_keys[0]))

const size_t cfg_nkeys = CFG_NKEYS;
_Static_assert(CFG_NKEYS <= CFG_NKEYS_MAX, "raise CFG_NKEYS_MAX in pdcbb_config_internal.h");

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                            */
/* ---------------------------------------------------------------------------------------- */

static void *cfg_field(pdcbb_config_t *c, const pdcbb_config_key_t *k)
{
    return (char *)c + k->offset;
}

/* "capacity, drain, ..." for the keys the scope may set, plus extra (may be NULL). */
static void cfg_known_keys(unsigned scope, const char *extra, char *buf, size_t len)
{
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < CFG_NKEYS && n < len; i++) {
        if ((cfg_keys[i].scope & scope) == 0)
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", cfg_keys[i].name);
    }
    if (extra != NULL && n < len)
        snprintf(buf + n, len - n, "%s%s", n ? ", " : "", extra);
}

/* "the site configuration", ... : where a key may be set, for scope errors. */
static void cfg_scope_text(const pdcbb_config_key_t *k, char *buf, size_t len)
{
    const char *parts[4];
    int n = 0;
    char env[96];
    size_t off = 0;

    if (k->scope & PDCBB_SCOPE_SITE)
        parts[n++] = "the site configuration";
    if (k->scope & PDCBB_SCOPE_USER) {
        parts[n++] = "the user's YAML file";
        parts[n++] = "--pdc";
    }
    if (k->scope & PDCBB_SCOPE_ENV) {
        char var[80];
        snprintf(env, sizeof(env), "the environment (%s)",
                 pdcbb_config_env_name(k, var, sizeof(var)));
        parts[n++] = env;
    }
    off = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && off < len; i++) {
        const char *sep = i == 0 ? "" : (i == n - 1 ? " or " : ", ");
        off += (size_t)snprintf(buf + off, len - off, "%s%s", sep, parts[i]);
    }
}

/*
 * Why s cannot be a value, or NULL: the resolved configuration is written as YAML (the job's
 * config.yaml), which holds only UTF-8 and no control characters (C0, DEL and C1: libyaml
 * refuses them) and reads U+2028 and U+2029 as line breaks, so such a value would stop every
 * daemon of the job from reading its configuration, or come back changed. *bad gets the
 * offset of the first byte that is not allowed.
 */
static const char *cfg_text_fault(const char *s, size_t len, size_t *bad)
{
    const uint8_t *p = (const uint8_t *)s;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = pdcbb_utf8_next(p + i, len - i, &cp);
        *bad = i;
        if (n == 0)
            return "is not valid UTF-8";
        if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029)
            return "contains a control character";
        i += n;
    }
    return NULL;
}

/* Is value one of values? Else why ("use a, b or c") into why. */
static bool cfg_value_listed(const char *const *values, const char *value, char *why, size_t whylen)
{
    size_t n = 0, off;

    for (; values[n] != NULL; n++)
        if (strcmp(values[n], value) == 0)
            return true;
    off = (size_t)snprintf(why, whylen, "use %s", values[0]);
    for (size_t i = 1; i < n && off < whylen; i++)
        off +=
            (size_t)snprintf(why + off, whylen - off, "%s%s", i + 1 < n ? ", " : " or ", values[i]);
    return false;
}

static const char *cfg_check_owner(const char *value)
{
    if (value[0] == '\0' || getpwnam(value) != NULL)
        return NULL;
    for (const char *c = value; *c; c++)
        if (*c < '0' || *c > '9')
            return "not a user name or uid on this machine";
    return strlen(value) <= 10 ? NULL : "not a user name or uid on this machine";
}

static const char *cfg_check_ip(const char *value)
{
    unsigned char addr[sizeof(struct in6_addr)];

    if (value[0] == '\0' || inet_pton(AF_INET, value, addr) == 1 ||
        inet_pton(AF_INET6, value, addr) == 1)
        return NULL;
    return "not a numeric IPv4 or IPv6 address";
}

/* UCX lists end up in UCX_* environment variables: no blanks, no quoting games. */
static const char *cfg_check_ucx_list(const char *value)
{
    for (const char *p = value; *p != '\0'; p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || strchr("_.:,^-", ch) != NULL;
        if (!ok)
            return "use names made of letters, digits and _ . : ^ - separated by commas";
    }
    return NULL;
}

/* Checks shared by every string-like value: true when fine, else false and the reason in why. */
bool cfg_text_ok(const pdcbb_config_key_t *k, const char *value, size_t cap, bool is_path,
                 char *why, size_t whylen)
{
    size_t len = strlen(value);

    if (len >= cap) {
        snprintf(why, whylen, "%s too long (%zu bytes, at most %zu)", is_path ? "path" : "value",
                 len, cap - 1);
        return false;
    }
    size_t bad;
    const char *fault = cfg_text_fault(value, len, &bad);
    if (fault != NULL) {
        snprintf(why, whylen, "%s %s at byte %zu", is_path ? "path" : "value", fault, bad);
        return false;
    }
    if ((k->flags & PDCBB_CFG_F_REQUIRED) && len == 0) {
        snprintf(why, whylen, "may not be empty");
        return false;
    }
    if (is_path && (k->flags & PDCBB_CFG_F_ABSOLUTE) && len > 0 && value[0] != '/') {
        snprintf(why, whylen, "path '%s' must be absolute (start with '/')", value);
        return false;
    }
    char listed[256];
    const char *reason = NULL;
    if (len > 0 && k->values != NULL && !cfg_value_listed(k->values, value, listed, sizeof(listed)))
        reason = listed;
    else if (len > 0 && k->check != NULL)
        reason = k->check(value);
    if (reason != NULL) {
        snprintf(why, whylen, "bad value '%s' (%s)", value, reason);
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------------------------------- */
/* Setting one key                                                                          */
/* ---------------------------------------------------------------------------------------- */

/*
 * Parse items (one path each) into k's list field. where is "SOURCE: key 'NAME'". c is
 * written only when every item is good.
 */
pdcbb_err_t cfg_apply_list(pdcbb_config_t *c, const pdcbb_config_key_t *k, const char *const *items,
                           size_t n, const char *where, char *err, size_t errlen)
{
    char why[PATH_MAX + 128];

    if (n > PDCBB_CONFIG_LIST_MAX) {
        pdcbb_errf(err, errlen, "%s: too many entries (%zu, at most %d)", where, n,
                 PDCBB_CONFIG_LIST_MAX);
        return PDCBB_ERR_CONFIG;
    }
    for (size_t i = 0; i < n; i++) {
        if (items[i][0] == '\0') {
            pdcbb_errf(err, errlen, "%s: entry %zu is empty", where, i + 1);
            return PDCBB_ERR_CONFIG;
        }
        if (!cfg_text_ok(k, items[i], PATH_MAX, true, why, sizeof(why))) {
            pdcbb_errf(err, errlen, "%s: %s", where, why);
            return PDCBB_ERR_CONFIG;
        }
    }
    /* drain_roots is the only list; the table keeps its offset for printing and lookup */
    char(*list)[PATH_MAX] = cfg_field(c, k);
    for (size_t i = 0; i < n; i++)
        snprintf(list[i], PATH_MAX, "%s", items[i]);
    for (size_t i = n; i < PDCBB_CONFIG_LIST_MAX; i++)
        list[i][0] = '\0';
    c->n_drain_roots = (int)n;
    return PDCBB_OK;
}

/* A list given as one text: comma-separated paths ("" = empty list). */
static pdcbb_err_t cfg_apply_list_text(pdcbb_config_t *c, const pdcbb_config_key_t *k,
                                       const char *value, const char *where, char *err,
                                       size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    char *copy = NULL;
    const char *items[PDCBB_CONFIG_LIST_MAX + 1] = {NULL};
    size_t n = 0;

    if (value[0] == '\0') {
        rc = cfg_apply_list(c, k, items, 0, where, err, errlen);
        goto done;
    }
    copy = strdup(value);
    if (copy == NULL) {
        pdcbb_errf(err, errlen, "%s: out of memory", where);
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    for (char *p = copy;;) {
        char *comma = strchr(p, ',');
        char *end;
        if (comma != NULL)
            *comma = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        end = p + strlen(p);
        while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (n == PDCBB_CONFIG_LIST_MAX) {
            pdcbb_errf(err, errlen, "%s: too many entries (more than %d)", where,
                     PDCBB_CONFIG_LIST_MAX);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        items[n++] = p;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    rc = cfg_apply_list(c, k, items, n, where, err, errlen);
done:
    free(copy);
    return rc;
}

/*
 * Parse value for key k and store it in c. where prefixes every message ("SOURCE: key 'NAME'"
 * or "environment: PDCBB_NAME"). Scope is checked by the caller. c is written only on success.
 */
pdcbb_err_t cfg_apply(pdcbb_config_t *c, const pdcbb_config_key_t *k, const char *value,
                      const char *where, char *err, size_t errlen)
{
    char why[PATH_MAX + 128];
    char lo[32], hi[32];

    switch (k->type) {
    case PDCBB_CFG_SIZE: {
        uint64_t v = 0;
        switch (cfg_size_parse(value, &v)) {
        case CFG_SIZE_OK:
            break;
        case CFG_SIZE_SYNTAX:
            pdcbb_errf(err, errlen,
                     "%s: bad size '%s' (use a number with an optional K, M, G, T or P suffix)",
                     where, value);
            return PDCBB_ERR_CONFIG;
        case CFG_SIZE_INEXACT:
            pdcbb_errf(err, errlen, "%s: bad size '%s' (not a whole number of bytes)", where,
                     value);
            return PDCBB_ERR_CONFIG;
        case CFG_SIZE_OVERFLOW:
            pdcbb_errf(err, errlen, "%s: bad size '%s' (too large)", where, value);
            return PDCBB_ERR_CONFIG;
        }
        if (v < k->umin) {
            pdcbb_errf(err, errlen, "%s: %s is below the minimum %s", where, value,
                     pdcbb_format_size(k->umin, lo, sizeof(lo)));
            return PDCBB_ERR_CONFIG;
        }
        if (v > k->umax) {
            pdcbb_errf(err, errlen, "%s: %s is above the maximum %s", where, value,
                     pdcbb_format_size(k->umax, hi, sizeof(hi)));
            return PDCBB_ERR_CONFIG;
        }
        *(uint64_t *)cfg_field(c, k) = v;
        return PDCBB_OK;
    }
    case PDCBB_CFG_UINT: {
        unsigned long long v = 0;
        const char *p = value;
        bool ok = cfg_isdigit(*p);
        for (; ok && *p != '\0'; p++) {
            if (!cfg_isdigit(*p) || v > (ULLONG_MAX - 9) / 10)
                ok = false;
            else
                v = v * 10 + (unsigned long long)(*p - '0');
        }
        if (!ok || v < k->umin || v > k->umax) {
            pdcbb_errf(err, errlen, "%s: %s '%s' (use a whole number from %llu to %llu)", where,
                     ok ? "out of range" : "bad number", value, (unsigned long long)k->umin,
                     (unsigned long long)k->umax);
            return PDCBB_ERR_CONFIG;
        }
        *(unsigned *)cfg_field(c, k) = (unsigned)v;
        return PDCBB_OK;
    }
    case PDCBB_CFG_SECONDS: {
        double v = 0;
        if (!cfg_seconds_parse(value, &v)) {
            pdcbb_errf(err, errlen,
                     "%s: bad duration '%s' (use seconds such as 30 or 1.5, or a number with "
                     "an s, m, h or d suffix)",
                     where, value);
            return PDCBB_ERR_CONFIG;
        }
        if (v < k->dmin || v > k->dmax) {
            cfg_format_seconds(k->dmin, lo, sizeof(lo));
            cfg_format_seconds(k->dmax, hi, sizeof(hi));
            pdcbb_errf(err, errlen, "%s: out of range '%s' (use %s to %s seconds)", where, value,
                     lo, hi);
            return PDCBB_ERR_CONFIG;
        }
        *(double *)cfg_field(c, k) = v;
        return PDCBB_OK;
    }
    case PDCBB_CFG_STRING:
    case PDCBB_CFG_PATH:
        if (!cfg_text_ok(k, value, k->size, k->type == PDCBB_CFG_PATH, why, sizeof(why))) {
            pdcbb_errf(err, errlen, "%s: %s", where, why);
            return PDCBB_ERR_CONFIG;
        }
        memcpy(cfg_field(c, k), value, strlen(value) + 1);
        return PDCBB_OK;
    case PDCBB_CFG_PATH_LIST:
        return cfg_apply_list_text(c, k, value, where, err, errlen);
    case PDCBB_CFG_PLACEMENT: {
        int p = pdcbb_placement_parse(value);
        if (p < 0) {
            pdcbb_errf(err, errlen,
                     "%s: bad placement '%s' (use obj_static, region_static, region_dynamic "
                     "or region_local)",
                     where, value);
            return PDCBB_ERR_CONFIG;
        }
        *(pdcbb_placement_t *)cfg_field(c, k) = (pdcbb_placement_t)p;
        return PDCBB_OK;
    }
    case PDCBB_CFG_LOG_LEVEL: {
        int l = pdcbb_log_level_parse(value);
        if (l < 0) {
            pdcbb_errf(err, errlen,
                     "%s: bad log level '%s' (use none, error, warn, info or debug)", where,
                     value);
            return PDCBB_ERR_CONFIG;
        }
        *(int *)cfg_field(c, k) = l;
        return PDCBB_OK;
    }
    }
    pdcbb_errf(err, errlen, "%s: internal error: unknown key type", where);
    return PDCBB_ERR_INTERNAL;
}

/* Find key and check scope; messages name source. extra_known is appended to the key list. */
pdcbb_err_t cfg_lookup(const char *key, unsigned scope, const char *source, const char *extra_known,
                       const pdcbb_config_key_t **out, char *err, size_t errlen)
{
    const pdcbb_config_key_t *k = pdcbb_config_key_find(key);
    char text[512];

    if (k == NULL) {
        cfg_known_keys(scope, extra_known, text, sizeof(text));
        pdcbb_errf(err, errlen, "%s: unknown key '%s' (known keys: %s)", source, key, text);
        return PDCBB_ERR_CONFIG;
    }
    if ((k->scope & scope) == 0) {
        cfg_scope_text(k, text, sizeof(text));
        pdcbb_errf(err, errlen, "%s: key '%s' may only be set in %s", source, key, text);
        return PDCBB_ERR_CONFIG;
    }
    *out = k;
    return PDCBB_OK;
}

pdcbb_err_t cfg_set(pdcbb_config_t *c, const char *key, const char *value, unsigned scope,
                    const char *source, const char *extra_known, char *err, size_t errlen)
{
    const pdcbb_config_key_t *k = NULL;
    char where[CFG_WHERE_LEN];
    pdcbb_err_t rc;

    if (key == NULL || value == NULL) {
        pdcbb_errf(err, errlen, "%s: missing key or value", source);
        return PDCBB_ERR_INVAL;
    }
    rc = cfg_lookup(key, scope, source, extra_known, &k, err, errlen);
    if (rc != PDCBB_OK)
        return rc;
    snprintf(where, sizeof(where), "%s: key '%s'", source, k->name);
    return cfg_apply(c, k, value, where, err, errlen);
}

const pdcbb_config_key_t *pdcbb_config_keys(size_t *n)
{
    if (n != NULL)
        *n = CFG_NKEYS;
    return cfg_keys;
}

const pdcbb_config_key_t *pdcbb_config_key_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < CFG_NKEYS; i++)
        if (strcmp(cfg_keys[i].name, name) == 0)
            return &cfg_keys[i];
    return NULL;
}

const char *pdcbb_config_env_name(const pdcbb_config_key_t *k, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "PDCBB_");

    for (const char *p = k->name; *p != '\0' && n + 1 < len; p++)
        buf[n++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    if (n < len)
        buf[n] = '\0';
    return buf;
}

void pdcbb_config_init(pdcbb_config_t *c)
{
    char err[PDCBB_CONFIG_ERR_LEN];

    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < CFG_NKEYS; i++) {
        pdcbb_err_t rc = cfg_apply(c, &cfg_keys[i], cfg_keys[i].def, "built-in default", err,
                                   sizeof(err));
        assert(rc == PDCBB_OK && "a built-in default does not parse");
        (void)rc;
    }
}

pdcbb_err_t pdcbb_config_set(pdcbb_config_t *c, const char *key, const char *value,
                             unsigned scope, const char *source, char *err, size_t errlen)
{
    if (c == NULL) {
        pdcbb_errf(err, errlen, "pdcbb_config_set: no config");
        return PDCBB_ERR_INVAL;
    }
    return cfg_set(c, key, value, scope, source ? source : "config", NULL, err, errlen);
}
