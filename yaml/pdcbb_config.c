/*
 * pdcbb_config.c - the configuration table (cfg_keys[]) and everything it drives: built-in
 * defaults, parsing one key from text with its bounds and scope, the YAML loader (libyaml's
 * document API), --pdc specs, PDCBB_<KEY> environment variables, cross-key validation, and
 * printing / atomically writing the resolved configuration. Also owns the size, duration and
 * placement parsers that the rest of the project shares.
 *
 * Every function that takes a config from several values (a file, a spec, the environment)
 * works on a private copy and commits it only when every value was accepted, so a failed call
 * never leaves a half-applied config behind.
 */
#include "pdcbb_config.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "pdcbb_log.h"

#ifndef PDCBB_DEFAULT_DAEMON_PATH
#define PDCBB_DEFAULT_DAEMON_PATH "/usr/local/sbin/pdc_bbd"
#endif

/* ---------------------------------------------------------------------------------------- */
/* The table                                                                                  */
/* ---------------------------------------------------------------------------------------- */

typedef enum cfg_type {
    CFG_SIZE,      /* uint64_t bytes, "16G" */
    CFG_UINT,      /* unsigned, decimal */
    CFG_SECONDS,   /* double seconds, "30", "1.5", "30s", "2m" */
    CFG_STRING,    /* char[size] */
    CFG_PATH,      /* char[size], a path */
    CFG_PATH_LIST, /* drain_roots + n_drain_roots */
    CFG_PLACEMENT, /* pdcbb_placement_t */
    CFG_LOG_LEVEL, /* int holding a pdcbb_log_level_t */
} cfg_type_t;

#define CFG_F_ABSOLUTE 0x1u /* path: must be absolute when non-empty */
#define CFG_F_REQUIRED 0x2u /* string/path: may not be empty */

/* Extra check of a string value: NULL when fine, else why not (a constant string). */
typedef const char *(*cfg_check_fn)(const char *value);

typedef struct cfg_key {
    const char *name;
    cfg_type_t type;
    size_t offset;      /* of the field in pdcbb_config_t */
    size_t size;        /* of the field (the capacity of a string, including the NUL) */
    const char *def;    /* default, as text (parsed through the same code as any value) */
    uint64_t umin, umax; /* bounds of CFG_SIZE and CFG_UINT */
    double dmin, dmax;  /* bounds of CFG_SECONDS */
    unsigned flags;     /* CFG_F_* */
    unsigned scope;     /* PDCBB_SCOPE_* allowed to set it */
    cfg_check_fn check; /* optional */
    const char *help;   /* one line, printed as a comment by pdcbb_config_print */
} cfg_key_t;

#define CFG_KIB 1024ull
#define CFG_MIB (1024ull * CFG_KIB)
#define CFG_GIB (1024ull * CFG_MIB)
#define CFG_PIB (1024ull * 1024ull * CFG_GIB)
#define CFG_DAY 86400.0

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
static const char *cfg_check_share(const char *value);

static const cfg_key_t cfg_keys[] = {
    /* site keys */
    {.name = "local_root", .type = CFG_PATH, CFG_AT(local_root), .def = "/tmp/pdcbb",
     .flags = CFG_F_ABSOLUTE | CFG_F_REQUIRED, .scope = CFG_S_SITE,
     .help = "node-local root under which each job gets its directory"},
    {.name = "max_capacity", .type = CFG_SIZE, CFG_AT(max_capacity), .def = "0", .umin = 0,
     .umax = UINT64_MAX, .scope = CFG_S_SITE,
     .help = "largest capacity a job may ask for per node (0: limited by free space only)"},
    {.name = "drain_roots", .type = CFG_PATH_LIST, CFG_AT(drain_roots), .def = "",
     .flags = CFG_F_ABSOLUTE, .scope = CFG_S_SITE,
     .help = "directories under which drain and stage_in must lie (empty: anywhere)"},
    {.name = "daemon_path", .type = CFG_PATH, CFG_AT(daemon_path),
     .def = PDCBB_DEFAULT_DAEMON_PATH, .flags = CFG_F_ABSOLUTE | CFG_F_REQUIRED,
     .scope = CFG_S_SITE, .help = "the pdc_bbd binary the prolog starts"},
    {.name = "ready_timeout", .type = CFG_SECONDS, CFG_AT(ready_timeout), .def = "30",
     .dmin = 0.1, .dmax = CFG_DAY, .scope = CFG_S_SITE,
     .help = "seconds the prolog waits for each daemon to report ready"},
    {.name = "stage_in_timeout", .type = CFG_SECONDS, CFG_AT(stage_in_timeout), .def = "3600",
     .dmin = 0.1, .dmax = CFG_DAY, .scope = CFG_S_SITE,
     .help = "seconds the prolog waits for daemons that load a stage_in directory"},
    {.name = "stop_timeout", .type = CFG_SECONDS, CFG_AT(stop_timeout), .def = "10",
     .dmin = 0.1, .dmax = CFG_DAY, .scope = CFG_S_SITE,
     .help = "seconds the epilog waits after SIGTERM before SIGKILL"},
    {.name = "script_timeout", .type = CFG_SECONDS, CFG_AT(script_timeout), .def = "300",
     .dmin = 1, .dmax = CFG_DAY, .scope = CFG_S_SITE,
     .help = "seconds a user script may run before its process group is killed"},
    {.name = "stranded_max_age", .type = CFG_SECONDS, CFG_AT(stranded_max_age), .def = "7d",
     .dmin = 0, .dmax = 3650 * CFG_DAY, .scope = CFG_S_SITE,
     .help = "age after which `pdcbb admin stranded --drain/--remove` acts on a job directory "
             "left on a node (0: any age)"},
    {.name = "ucx_tls", .type = CFG_STRING, CFG_AT(ucx_tls), .def = "cma,tcp",
     .scope = CFG_S_SITE, .check = cfg_check_ucx_list,
     .help = "UCX transports (UCX_TLS) for daemons and clients"},
    {.name = "ucx_net_devices", .type = CFG_STRING, CFG_AT(ucx_net_devices), .def = "",
     .scope = CFG_S_SITE, .check = cfg_check_ucx_list,
     .help = "UCX network devices (UCX_NET_DEVICES; empty: UCX's choice)"},
    {.name = "listen_address", .type = CFG_STRING, CFG_AT(listen_address), .def = "",
     .scope = CFG_S_SITE, .check = cfg_check_ip,
     .help = "numeric IP address the daemons listen on (empty: the node's own address)"},
    {.name = "lmdb_map_size", .type = CFG_SIZE, CFG_AT(lmdb_map_size), .def = "16G",
     .umin = CFG_MIB, .umax = CFG_PIB, .scope = CFG_S_SITE,
     .help = "LMDB map size of each daemon's metadata store"},
    {.name = "rendezvous_dir", .type = CFG_PATH, CFG_AT(rendezvous_dir), .def = "~/.pdcbb",
     .flags = CFG_F_REQUIRED, .scope = CFG_S_SITE, .check = cfg_check_rendezvous,
     .help = "shared directory where a multi-node job's daemons learn each other ('~/': the "
             "job user's home)"},
    /* user keys */
    {.name = "capacity", .type = CFG_SIZE, CFG_AT(capacity), .def = "1G", .umin = CFG_MIB,
     .umax = UINT64_MAX, .scope = CFG_S_USER,
     .help = "burst-buffer capacity per node"},
    {.name = "drain", .type = CFG_PATH, CFG_AT(drain), .def = "", .flags = CFG_F_ABSOLUTE,
     .scope = CFG_S_USER,
     .help = "directory to drain the burst buffer to at the end (empty: none)"},
    {.name = "drain_share", .type = CFG_STRING, CFG_AT(drain_share), .def = "none",
     .scope = CFG_S_USER, .check = cfg_check_share,
     .help = "who else may read the drained job: none (mode 0700), group (0750) or all (0755)"},
    {.name = "stage_in", .type = CFG_PATH, CFG_AT(stage_in), .def = "",
     .flags = CFG_F_ABSOLUTE, .scope = CFG_S_USER,
     .help = "drained directory to load into the burst buffer at the start (empty: none)"},
    {.name = "script", .type = CFG_PATH, CFG_AT(script), .def = "", .flags = CFG_F_ABSOLUTE,
     .scope = CFG_S_USER,
     .help = "executable run as the job user on every node at the start and the end of the "
             "job (empty: none)"},
    {.name = "servers_per_node", .type = CFG_UINT, CFG_AT(servers_per_node), .def = "1",
     .umin = 1, .umax = 64, .scope = CFG_S_USER, .help = "daemons per node"},
    {.name = "placement", .type = CFG_PLACEMENT, CFG_AT(placement), .def = "obj_static",
     .scope = CFG_S_USER,
     .help = "default region placement: obj_static, region_static, region_dynamic, region_local"},
    /* debugging knobs */
    {.name = "log_level", .type = CFG_LOG_LEVEL, CFG_AT(log_level), .def = "info",
     .scope = CFG_S_DEBUG, .help = "log level: none, error, warn, info or debug"},
    {.name = "request_timeout", .type = CFG_SECONDS, CFG_AT(request_timeout), .def = "60",
     .dmin = 0.1, .dmax = CFG_DAY, .scope = CFG_S_DEBUG,
     .help = "seconds a client waits for a reply"},
    {.name = "connect_timeout", .type = CFG_SECONDS, CFG_AT(connect_timeout), .def = "5",
     .dmin = 0.1, .dmax = CFG_DAY, .scope = CFG_S_DEBUG,
     .help = "seconds a client waits to connect to a daemon"},
};

#define CFG_NKEYS (sizeof(cfg_keys) / sizeof(cfg_keys[0]))

/* Longest "SOURCE: key 'NAME'" prefix: a file name plus a line number and a key. */
#define CFG_WHERE_LEN (PATH_MAX + 128)

static const char *const cfg_placement_names[] = {"obj_static", "region_static",
                                                  "region_dynamic", "region_local"};

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                              */
/* ---------------------------------------------------------------------------------------- */

static const cfg_key_t *cfg_key_find(const char *name)
{
    for (size_t i = 0; i < CFG_NKEYS; i++)
        if (strcmp(cfg_keys[i].name, name) == 0)
            return &cfg_keys[i];
    return NULL;
}

static void *cfg_field(pdcbb_config_t *c, const cfg_key_t *k)
{
    return (char *)c + k->offset;
}

static const void *cfg_field_const(const pdcbb_config_t *c, const cfg_key_t *k)
{
    return (const char *)c + k->offset;
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
static void cfg_scope_text(const cfg_key_t *k, char *buf, size_t len)
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
        size_t j = 0;
        off = (size_t)snprintf(env, sizeof(env), "the environment (PDCBB_");
        for (; k->name[j] != '\0' && off + 2 < sizeof(env); j++)
            env[off++] = (char)((k->name[j] >= 'a' && k->name[j] <= 'z') ? k->name[j] - 32
                                                                          : k->name[j]);
        env[off++] = ')';
        env[off] = '\0';
        parts[n++] = env;
    }
    off = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && off < len; i++) {
        const char *sep = i == 0 ? "" : (i == n - 1 ? " or " : ", ");
        off += (size_t)snprintf(buf + off, len - off, "%s%s", sep, parts[i]);
    }
}

static bool cfg_has_ctrl(const char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

static const char *cfg_check_share(const char *value)
{
    if (strcmp(value, "none") == 0 || strcmp(value, "group") == 0 || strcmp(value, "all") == 0)
        return NULL;
    return "use none, group or all";
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

/* ---------------------------------------------------------------------------------------- */
/* Sizes, durations, placements                                                               */
/* ---------------------------------------------------------------------------------------- */

typedef enum cfg_size_status {
    CFG_SIZE_OK,
    CFG_SIZE_SYNTAX,
    CFG_SIZE_INEXACT,
    CFG_SIZE_OVERFLOW,
} cfg_size_status_t;

static bool cfg_isdigit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/*
 * DIGITS [. DIGITS] [K|M|G|T|P] [B|iB], case-insensitive. A fraction must come out as whole
 * bytes: with 10^n = 2^n 5^n and a multiplier of 2^(10e), f/10^n * 2^(10e) is whole iff 5^n
 * divides f and what is left is divisible by 2^(n-10e), which needs no wider integers.
 */
static cfg_size_status_t cfg_size_parse(const char *s, uint64_t *out)
{
    const char *p = s;
    uint64_t whole = 0, frac = 0, total;
    unsigned fdigits = 0, shift = 0;

    if (s == NULL || !cfg_isdigit(*p))
        return CFG_SIZE_SYNTAX;
    for (; cfg_isdigit(*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - d) / 10)
            return CFG_SIZE_OVERFLOW;
        whole = whole * 10 + d;
    }
    if (*p == '.') {
        const char *fstart = ++p, *fend;
        if (!cfg_isdigit(*p))
            return CFG_SIZE_SYNTAX;
        while (cfg_isdigit(*p))
            p++;
        fend = p;
        while (fend > fstart && fend[-1] == '0') /* 1.50G == 1.5G */
            fend--;
        if (fend - fstart > 15) /* more digits than any power of 1024 up to P can absorb */
            return CFG_SIZE_INEXACT;
        for (const char *q = fstart; q < fend; q++)
            frac = frac * 10 + (uint64_t)(*q - '0');
        fdigits = (unsigned)(fend - fstart);
    }
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    case 't': case 'T': shift = 40; p++; break;
    case 'p': case 'P': shift = 50; p++; break;
    default: break;
    }
    if (shift != 0 && (*p == 'i' || *p == 'I') && (p[1] == 'b' || p[1] == 'B'))
        p += 2;
    else if (*p == 'b' || *p == 'B')
        p++;
    if (*p != '\0')
        return CFG_SIZE_SYNTAX;

    if (fdigits > 0) {
        uint64_t pow5 = 1;
        for (unsigned i = 0; i < fdigits; i++)
            pow5 *= 5;
        if (frac % pow5 != 0)
            return CFG_SIZE_INEXACT;
        frac /= pow5;
        if (fdigits <= shift) {
            frac <<= shift - fdigits; /* < 2^shift: frac/10^n < 1 */
        } else {
            uint64_t mask = (1ull << (fdigits - shift)) - 1;
            if ((frac & mask) != 0)
                return CFG_SIZE_INEXACT;
            frac >>= fdigits - shift;
        }
    }
    if (shift != 0 && whole > (UINT64_MAX >> shift))
        return CFG_SIZE_OVERFLOW;
    total = whole << shift;
    if (total > UINT64_MAX - frac)
        return CFG_SIZE_OVERFLOW;
    *out = total + frac;
    return CFG_SIZE_OK;
}

pdcbb_err_t pdcbb_parse_size(const char *s, uint64_t *out)
{
    uint64_t v = 0;

    if (out == NULL || cfg_size_parse(s, &v) != CFG_SIZE_OK)
        return PDCBB_ERR_INVAL;
    *out = v;
    return PDCBB_OK;
}

const char *pdcbb_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "KMGTP";

    if (buf == NULL || len == 0)
        return "";
    for (int e = 5; e >= 1; e--) {
        unsigned shift = 10u * (unsigned)e;
        if (bytes != 0 && (bytes & ((1ull << shift) - 1)) == 0) {
            snprintf(buf, len, "%llu%c", (unsigned long long)(bytes >> shift), units[e - 1]);
            return buf;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)bytes);
    return buf;
}

/* SECONDS[.FRACTION][s|m|h|d]: no sign, no exponent, no inf/nan. */
static bool cfg_seconds_parse(const char *s, double *out)
{
    char num[64];
    size_t n = 0;
    double mult = 1.0, v;
    char *end = NULL;

    if (s == NULL || !cfg_isdigit(s[0]))
        return false;
    while (cfg_isdigit(s[n]) || s[n] == '.')
        n++;
    if (n >= sizeof(num))
        return false;
    memcpy(num, s, n);
    num[n] = '\0';
    if (strchr(num, '.') != strrchr(num, '.') || num[n - 1] == '.')
        return false;
    switch (s[n]) {
    case '\0': break;
    case 's': case 'S': mult = 1.0; n++; break;
    case 'm': case 'M': mult = 60.0; n++; break;
    case 'h': case 'H': mult = 3600.0; n++; break;
    case 'd': case 'D': mult = CFG_DAY; n++; break;
    default: return false;
    }
    if (s[n] != '\0')
        return false;
    errno = 0;
    v = strtod(num, &end);
    if (errno != 0 || end == NULL || *end != '\0')
        return false;
    *out = v * mult;
    return true;
}

/* The shortest "%g" text that reads back to exactly d (bounded values never need exponents). */
static void cfg_format_seconds(double d, char *buf, size_t len)
{
    for (int prec = 6; prec <= 17; prec++) {
        double back;
        snprintf(buf, len, "%.*g", prec, d);
        if (cfg_seconds_parse(buf, &back) && back == d)
            return;
    }
    snprintf(buf, len, "%.17g", d);
}

const char *pdcbb_placement_name(pdcbb_placement_t p)
{
    if ((int)p < 0 || (size_t)p >= sizeof(cfg_placement_names) / sizeof(cfg_placement_names[0]))
        return "unknown";
    return cfg_placement_names[p];
}

int pdcbb_placement_parse(const char *s)
{
    if (s == NULL)
        return -1;
    if (strncasecmp(s, "PDC_", 4) == 0) /* PDC's own names: PDC_OBJ_STATIC, ... */
        s += 4;
    for (size_t i = 0; i < sizeof(cfg_placement_names) / sizeof(cfg_placement_names[0]); i++)
        if (strcasecmp(s, cfg_placement_names[i]) == 0)
            return (int)i;
    return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* Paths                                                                                      */
/* ---------------------------------------------------------------------------------------- */

/* Lexically normalise an absolute path: no "//", "." or ".."; ".." at the root stays there. */
static void cfg_path_normalise(const char *in, char *out, size_t len)
{
    size_t n = 0;
    const char *p = in;

    while (*p != '\0') {
        const char *start, *end;
        size_t clen;

        while (*p == '/')
            p++;
        start = p;
        while (*p != '\0' && *p != '/')
            p++;
        end = p;
        clen = (size_t)(end - start);
        if (clen == 0 || (clen == 1 && start[0] == '.'))
            continue;
        if (clen == 2 && start[0] == '.' && start[1] == '.') {
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--; /* the '/' before the dropped component */
            continue;
        }
        if (n + 1 + clen >= len) /* cannot happen: the result is never longer than in */
            break;
        out[n++] = '/';
        memcpy(out + n, start, clen);
        n += clen;
    }
    if (n == 0)
        out[n++] = '/';
    out[n] = '\0';
}

/* Is normalised path equal to or below normalised root? */
static bool cfg_path_under(const char *path, const char *root)
{
    size_t rl = strlen(root);

    if (strcmp(root, "/") == 0)
        return true;
    return strncmp(path, root, rl) == 0 && (path[rl] == '\0' || path[rl] == '/');
}

/* Checks shared by every string-like value: true when fine, else false and the reason in why. */
static bool cfg_text_ok(const cfg_key_t *k, const char *value, size_t cap, bool is_path,
                        char *why, size_t whylen)
{
    size_t len = strlen(value);

    if (len >= cap) {
        snprintf(why, whylen, "%s too long (%zu bytes, at most %zu)", is_path ? "path" : "value",
                 len, cap - 1);
        return false;
    }
    if (cfg_has_ctrl(value)) {
        snprintf(why, whylen, "%s contains a control character", is_path ? "path" : "value");
        return false;
    }
    if ((k->flags & CFG_F_REQUIRED) && len == 0) {
        snprintf(why, whylen, "may not be empty");
        return false;
    }
    if (is_path && (k->flags & CFG_F_ABSOLUTE) && len > 0 && value[0] != '/') {
        snprintf(why, whylen, "path '%s' must be absolute (start with '/')", value);
        return false;
    }
    if (k->check != NULL && len > 0) {
        const char *reason = k->check(value);
        if (reason != NULL) {
            snprintf(why, whylen, "bad value '%s' (%s)", value, reason);
            return false;
        }
    }
    return true;
}

/* ---------------------------------------------------------------------------------------- */
/* Setting one key                                                                            */
/* ---------------------------------------------------------------------------------------- */

/*
 * Parse items (one path each) into k's list field. where is "SOURCE: key 'NAME'". c is
 * written only when every item is good.
 */
static pdcbb_err_t cfg_apply_list(pdcbb_config_t *c, const cfg_key_t *k,
                                  const char *const *items, size_t n, const char *where,
                                  char *err, size_t errlen)
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
static pdcbb_err_t cfg_apply_list_text(pdcbb_config_t *c, const cfg_key_t *k, const char *value,
                                       const char *where, char *err, size_t errlen)
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
static pdcbb_err_t cfg_apply(pdcbb_config_t *c, const cfg_key_t *k, const char *value,
                             const char *where, char *err, size_t errlen)
{
    char why[PATH_MAX + 128];
    char lo[32], hi[32];

    switch (k->type) {
    case CFG_SIZE: {
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
    case CFG_UINT: {
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
    case CFG_SECONDS: {
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
    case CFG_STRING:
    case CFG_PATH:
        if (!cfg_text_ok(k, value, k->size, k->type == CFG_PATH, why, sizeof(why))) {
            pdcbb_errf(err, errlen, "%s: %s", where, why);
            return PDCBB_ERR_CONFIG;
        }
        memcpy(cfg_field(c, k), value, strlen(value) + 1);
        return PDCBB_OK;
    case CFG_PATH_LIST:
        return cfg_apply_list_text(c, k, value, where, err, errlen);
    case CFG_PLACEMENT: {
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
    case CFG_LOG_LEVEL: {
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
static pdcbb_err_t cfg_lookup(const char *key, unsigned scope, const char *source,
                              const char *extra_known, const cfg_key_t **out, char *err,
                              size_t errlen)
{
    const cfg_key_t *k = cfg_key_find(key);
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

static pdcbb_err_t cfg_set(pdcbb_config_t *c, const char *key, const char *value,
                           unsigned scope, const char *source, const char *extra_known,
                           char *err, size_t errlen)
{
    const cfg_key_t *k = NULL;
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

/* ---------------------------------------------------------------------------------------- */
/* YAML files                                                                                 */
/* ---------------------------------------------------------------------------------------- */

static const char *cfg_node_kind(const yaml_node_t *node)
{
    switch (node->type) {
    case YAML_SCALAR_NODE: return "a single value";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

/*
 * The text of a scalar node. A plain "~" or "null" (YAML's null) is the empty string, so
 * "drain: ~" clears drain as "drain:" does. NULL if the value holds a NUL byte.
 */
static const char *cfg_scalar_text(const yaml_node_t *node)
{
    const char *v = (const char *)node->data.scalar.value;

    if (strlen(v) != node->data.scalar.length)
        return NULL;
    if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
         strcmp(v, "NULL") == 0))
        return "";
    return v;
}

/* libyaml's reader (bad encoding) reports a byte offset only: count the lines up to it. */
static size_t cfg_line_of_offset(FILE *f, size_t offset)
{
    size_t line = 1;

    if (fseek(f, 0, SEEK_SET) != 0)
        return 0;
    for (size_t i = 0; i < offset; i++) {
        int ch = getc(f);
        if (ch == EOF)
            break;
        if (ch == '\n')
            line++;
    }
    return line;
}

static void cfg_yaml_syntax_error(const yaml_parser_t *parser, FILE *f, const char *path,
                                  char *err, size_t errlen)
{
    const char *problem = parser->problem ? parser->problem : "unknown problem";

    switch (parser->error) {
    case YAML_MEMORY_ERROR:
        pdcbb_errf(err, errlen, "%s: out of memory while reading YAML", path);
        break;
    case YAML_READER_ERROR:
        pdcbb_errf(err, errlen, "%s:%zu: cannot read YAML: %s (byte offset %zu)", path,
                 cfg_line_of_offset(f, parser->problem_offset), problem,
                 parser->problem_offset);
        break;
    default:
        if (parser->context != NULL)
            pdcbb_errf(err, errlen, "%s:%zu: YAML syntax error: %s, column %zu (%s at line %zu)",
                     path, parser->problem_mark.line + 1, problem,
                     parser->problem_mark.column + 1, parser->context,
                     parser->context_mark.line + 1);
        else
            pdcbb_errf(err, errlen, "%s:%zu: YAML syntax error: %s, column %zu", path,
                     parser->problem_mark.line + 1, problem, parser->problem_mark.column + 1);
        break;
    }
}

/* Apply a root mapping node of doc to c; messages are "PATH:LINE: ...". */
static pdcbb_err_t cfg_load_mapping(pdcbb_config_t *c, yaml_document_t *doc, yaml_node_t *root,
                                    const char *path, unsigned scope, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    size_t first_line[CFG_NKEYS] = {0}; /* 1-based line of each key seen so far */
    char source[CFG_WHERE_LEN], where[CFG_WHERE_LEN + 96];
    const char **items = NULL;

    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top; pair++) {
        yaml_node_t *kn = yaml_document_get_node(doc, pair->key);
        yaml_node_t *vn = yaml_document_get_node(doc, pair->value);
        const cfg_key_t *k = NULL;
        const char *key, *value;
        size_t line, idx;

        if (kn == NULL || vn == NULL) {
            pdcbb_errf(err, errlen, "%s: malformed YAML document", path);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        line = kn->start_mark.line + 1;
        snprintf(source, sizeof(source), "%s:%zu", path, line);
        if (kn->type != YAML_SCALAR_NODE || (key = cfg_scalar_text(kn)) == NULL) {
            pdcbb_errf(err, errlen, "%s: a key must be a plain name, found %s", source,
                     cfg_node_kind(kn));
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        rc = cfg_lookup(key, scope, source, NULL, &k, err, errlen);
        if (rc != PDCBB_OK)
            goto done;
        idx = (size_t)(k - cfg_keys);
        if (first_line[idx] != 0) {
            pdcbb_errf(err, errlen, "%s: duplicate key '%s' (first set on line %zu)", source,
                     k->name, first_line[idx]);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        first_line[idx] = line;
        /* a value's own line is more helpful than its key's when they differ */
        snprintf(source, sizeof(source), "%s:%zu", path, vn->start_mark.line + 1);
        snprintf(where, sizeof(where), "%s: key '%s'", source, k->name);

        if (vn->type == YAML_SEQUENCE_NODE && k->type == CFG_PATH_LIST) {
            size_t n = (size_t)(vn->data.sequence.items.top - vn->data.sequence.items.start);
            free(items);
            items = calloc(n + 1, sizeof(*items));
            if (items == NULL) {
                pdcbb_errf(err, errlen, "%s: out of memory", where);
                rc = PDCBB_ERR_NOMEM;
                goto done;
            }
            for (size_t i = 0; i < n; i++) {
                yaml_node_t *in = yaml_document_get_node(doc, vn->data.sequence.items.start[i]);
                if (in == NULL || in->type != YAML_SCALAR_NODE ||
                    (items[i] = cfg_scalar_text(in)) == NULL) {
                    pdcbb_errf(err, errlen, "%s:%zu: key '%s': list entries must be single paths",
                             path, (in ? in->start_mark.line : vn->start_mark.line) + 1,
                             k->name);
                    rc = PDCBB_ERR_CONFIG;
                    goto done;
                }
            }
            rc = cfg_apply_list(c, k, items, n, where, err, errlen);
            if (rc != PDCBB_OK)
                goto done;
            continue;
        }
        if (vn->type != YAML_SCALAR_NODE) {
            pdcbb_errf(err, errlen, "%s: expected %s, found %s", where,
                     k->type == CFG_PATH_LIST ? "a path or a list of paths" : "a single value",
                     cfg_node_kind(vn));
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        value = cfg_scalar_text(vn);
        if (value == NULL) {
            pdcbb_errf(err, errlen, "%s: value contains a NUL character", where);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        /* a single YAML scalar is one path, even with a comma in it */
        if (k->type == CFG_PATH_LIST)
            rc = cfg_apply_list(c, k, &value, value[0] ? 1 : 0, where, err, errlen);
        else
            rc = cfg_apply(c, k, value, where, err, errlen);
        if (rc != PDCBB_OK)
            goto done;
    }
done:
    free(items);
    return rc;
}

pdcbb_err_t pdcbb_config_load_file(pdcbb_config_t *c, const char *path, unsigned scope,
                                   char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    FILE *f = NULL;
    yaml_parser_t parser;
    bool parser_ready = false;
    yaml_document_t doc, extra;
    bool doc_loaded = false, extra_loaded = false;
    yaml_node_t *root;
    pdcbb_config_t *work = NULL;
    struct stat st;

    if (c == NULL || path == NULL) {
        pdcbb_errf(err, errlen, "pdcbb_config_load_file: no config or no path");
        rc = PDCBB_ERR_INVAL;
        goto done;
    }
    f = fopen(path, "rbe");
    if (f == NULL) {
        pdcbb_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        rc = PDCBB_ERR_NOT_FOUND;
        goto done;
    }
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        pdcbb_errf(err, errlen, "%s: cannot open: %s", path, strerror(EISDIR));
        rc = PDCBB_ERR_NOT_FOUND;
        goto done;
    }
    if (!yaml_parser_initialize(&parser)) {
        pdcbb_errf(err, errlen, "%s: out of memory", path);
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    parser_ready = true;
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        cfg_yaml_syntax_error(&parser, f, path, err, errlen);
        rc = parser.error == YAML_MEMORY_ERROR ? PDCBB_ERR_NOMEM : PDCBB_ERR_CONFIG;
        goto done;
    }
    doc_loaded = true;
    root = yaml_document_get_root_node(&doc);
    if (root == NULL)
        goto done; /* an empty file (or only comments) sets nothing */
    if (root->type == YAML_SCALAR_NODE && cfg_scalar_text(root) != NULL &&
        cfg_scalar_text(root)[0] == '\0')
        goto done; /* "---" alone */
    if (root->type != YAML_MAPPING_NODE) {
        pdcbb_errf(err, errlen, "%s:%zu: the top level must be a mapping of 'key: value' lines, "
                 "found %s", path, root->start_mark.line + 1, cfg_node_kind(root));
        rc = PDCBB_ERR_CONFIG;
        goto done;
    }
    /* a second document would be silently ignored: refuse it (and syntax errors after it) */
    if (!yaml_parser_load(&parser, &extra)) {
        cfg_yaml_syntax_error(&parser, f, path, err, errlen);
        rc = parser.error == YAML_MEMORY_ERROR ? PDCBB_ERR_NOMEM : PDCBB_ERR_CONFIG;
        goto done;
    }
    extra_loaded = true;
    if (yaml_document_get_root_node(&extra) != NULL) {
        pdcbb_errf(err, errlen, "%s:%zu: only one YAML document is allowed", path,
                 yaml_document_get_root_node(&extra)->start_mark.line + 1);
        rc = PDCBB_ERR_CONFIG;
        goto done;
    }
    work = malloc(sizeof(*work));
    if (work == NULL) {
        pdcbb_errf(err, errlen, "%s: out of memory", path);
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    memcpy(work, c, sizeof(*work));
    rc = cfg_load_mapping(work, &doc, root, path, scope, err, errlen);
    if (rc == PDCBB_OK)
        memcpy(c, work, sizeof(*c));
done:
    free(work);
    if (extra_loaded)
        yaml_document_delete(&extra);
    if (doc_loaded)
        yaml_document_delete(&doc);
    if (parser_ready)
        yaml_parser_delete(&parser);
    if (f != NULL)
        fclose(f);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* --pdc specs and the environment                                                            */
/* ---------------------------------------------------------------------------------------- */

static char *cfg_trim(char *s)
{
    char *end;

    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
        *--end = '\0';
    return s;
}

pdcbb_err_t pdcbb_config_parse_spec(pdcbb_config_t *c, const char *spec, char *err,
                                    size_t errlen)
{
    static const char source[] = "--pdc";
    pdcbb_err_t rc = PDCBB_OK;
    char *copy = NULL;
    pdcbb_config_t *work = NULL;
    unsigned item_no = 0;

    if (c == NULL) {
        pdcbb_errf(err, errlen, "pdcbb_config_parse_spec: no config");
        rc = PDCBB_ERR_INVAL;
        goto done;
    }
    if (spec == NULL)
        goto done;
    copy = strdup(spec);
    work = malloc(sizeof(*work));
    if (copy == NULL || work == NULL) {
        pdcbb_errf(err, errlen, "%s: out of memory", source);
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    if (cfg_trim(copy)[0] == '\0')
        goto done; /* "--pdc" alone, or blanks */
    memcpy(work, c, sizeof(*work));
    for (char *p = copy;;) {
        char *comma = strchr(p, ',');
        char *item, *eq, *key, *value;

        if (comma != NULL)
            *comma = '\0';
        item_no++;
        item = cfg_trim(p);
        if (item[0] == '\0') {
            pdcbb_errf(err, errlen, "%s: item %u is empty (use key=value,key=value)", source,
                     item_no);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        eq = strchr(item, '=');
        if (eq == NULL) {
            pdcbb_errf(err, errlen, "%s: item '%s' has no '=' (use key=value)", source, item);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        *eq = '\0';
        key = cfg_trim(item);
        value = cfg_trim(eq + 1);
        if (key[0] == '\0') {
            pdcbb_errf(err, errlen, "%s: item '=%s' has no key (use key=value)", source, value);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        if (value[0] == '\0') {
            pdcbb_errf(err, errlen, "%s: item '%s=' has an empty value", source, key);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        if (strcmp(key, "config") == 0 || strcmp(key, "yaml") == 0) {
            rc = pdcbb_config_load_file(work, value, PDCBB_SCOPE_USER, err, errlen);
            if (rc == PDCBB_ERR_NOT_FOUND && err != NULL && errlen > 0) {
                char inner[PDCBB_CONFIG_ERR_LEN];
                snprintf(inner, sizeof(inner), "%s", err);
                pdcbb_errf(err, errlen, "%s: %s=%s", source, key, inner);
            }
        } else {
            rc = cfg_set(work, key, value, PDCBB_SCOPE_USER, source, "config", err, errlen);
        }
        if (rc != PDCBB_OK)
            goto done;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    memcpy(c, work, sizeof(*c));
done:
    free(work);
    free(copy);
    return rc;
}

pdcbb_err_t pdcbb_config_apply_env(pdcbb_config_t *c, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    pdcbb_config_t *work = NULL;

    if (c == NULL) {
        pdcbb_errf(err, errlen, "pdcbb_config_apply_env: no config");
        rc = PDCBB_ERR_INVAL;
        goto done;
    }
    work = malloc(sizeof(*work));
    if (work == NULL) {
        pdcbb_errf(err, errlen, "environment: out of memory");
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    memcpy(work, c, sizeof(*work));
    for (size_t i = 0; i < CFG_NKEYS; i++) {
        const cfg_key_t *k = &cfg_keys[i];
        char var[80], where[96];
        const char *value;
        size_t n;

        if ((k->scope & PDCBB_SCOPE_ENV) == 0)
            continue;
        n = (size_t)snprintf(var, sizeof(var), "PDCBB_");
        for (size_t j = 0; k->name[j] != '\0' && n + 1 < sizeof(var); j++)
            var[n++] = (char)((k->name[j] >= 'a' && k->name[j] <= 'z') ? k->name[j] - 32
                                                                        : k->name[j]);
        var[n] = '\0';
        value = getenv(var);
        if (value == NULL || value[0] == '\0') /* set but empty counts as unset */
            continue;
        snprintf(where, sizeof(where), "environment: %s", var);
        rc = cfg_apply(work, k, value, where, err, errlen);
        if (rc != PDCBB_OK)
            goto done;
    }
    memcpy(c, work, sizeof(*c));
done:
    free(work);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Validation                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* A value placed in the struct by code rather than by cfg_apply still has to respect bounds. */
static pdcbb_err_t cfg_check_stored(const pdcbb_config_t *c, const cfg_key_t *k, char *err,
                                    size_t errlen)
{
    const void *f = cfg_field_const(c, k);
    char why[PATH_MAX + 128], a[32], b[32];

    switch (k->type) {
    case CFG_SIZE: {
        uint64_t v = *(const uint64_t *)f;
        if (v < k->umin || v > k->umax) {
            pdcbb_errf(err, errlen, "key '%s': %s is out of range (%s to %s)", k->name,
                     pdcbb_format_size(v, why, sizeof(why)),
                     pdcbb_format_size(k->umin, a, sizeof(a)),
                     pdcbb_format_size(k->umax, b, sizeof(b)));
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    }
    case CFG_UINT: {
        unsigned v = *(const unsigned *)f;
        if (v < k->umin || v > k->umax) {
            pdcbb_errf(err, errlen, "key '%s': %u is out of range (%llu to %llu)", k->name, v,
                     (unsigned long long)k->umin, (unsigned long long)k->umax);
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    }
    case CFG_SECONDS: {
        double v = *(const double *)f;
        if (!(v >= k->dmin && v <= k->dmax)) { /* also refuses NaN */
            cfg_format_seconds(k->dmin, a, sizeof(a));
            cfg_format_seconds(k->dmax, b, sizeof(b));
            pdcbb_errf(err, errlen, "key '%s': %g is out of range (%s to %s seconds)", k->name,
                     v, a, b);
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    }
    case CFG_STRING:
    case CFG_PATH: {
        const char *s = f;
        if (memchr(s, '\0', k->size) == NULL) {
            pdcbb_errf(err, errlen, "key '%s': value is not terminated", k->name);
            return PDCBB_ERR_CONFIG;
        }
        if (!cfg_text_ok(k, s, k->size, k->type == CFG_PATH, why, sizeof(why))) {
            pdcbb_errf(err, errlen, "key '%s': %s", k->name, why);
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    }
    case CFG_PATH_LIST:
        if (c->n_drain_roots < 0 || c->n_drain_roots > PDCBB_CONFIG_LIST_MAX) {
            pdcbb_errf(err, errlen, "key '%s': bad number of entries %d", k->name,
                     c->n_drain_roots);
            return PDCBB_ERR_CONFIG;
        }
        for (int i = 0; i < c->n_drain_roots; i++) {
            const char *s = c->drain_roots[i];
            if (memchr(s, '\0', PATH_MAX) == NULL || s[0] == '\0' ||
                !cfg_text_ok(k, s, PATH_MAX, true, why, sizeof(why))) {
                pdcbb_errf(err, errlen, "key '%s': entry %d: %s", k->name, i + 1,
                         s[0] == '\0' ? "empty" : why);
                return PDCBB_ERR_CONFIG;
            }
        }
        return PDCBB_OK;
    case CFG_PLACEMENT:
        if ((int)*(const pdcbb_placement_t *)f < PDCBB_PLACE_OBJ_STATIC ||
            *(const pdcbb_placement_t *)f > PDCBB_PLACE_REGION_LOCAL) {
            pdcbb_errf(err, errlen, "key '%s': bad placement %d", k->name,
                     (int)*(const pdcbb_placement_t *)f);
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    case CFG_LOG_LEVEL: {
        int l = *(const int *)f;
        if (l < PDCBB_LOG_NONE || l > PDCBB_LOG_DEBUG) {
            pdcbb_errf(err, errlen, "key '%s': bad log level %d", k->name, l);
            return PDCBB_ERR_CONFIG;
        }
        return PDCBB_OK;
    }
    }
    return PDCBB_OK;
}

/* drain or stage_in: absolute, and under a drain root when there are any. */
static pdcbb_err_t cfg_check_under_roots(const pdcbb_config_t *c, const char *key,
                                         const char *path, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    char *norm = NULL, *root = NULL, *list = NULL;
    size_t n = 0, cap = 1024;

    if (path[0] == '\0')
        goto done;
    if (path[0] != '/') {
        pdcbb_errf(err, errlen, "key '%s': path '%s' must be absolute (start with '/')", key, path);
        rc = PDCBB_ERR_CONFIG;
        goto done;
    }
    if (c->n_drain_roots <= 0)
        goto done;
    norm = malloc(PATH_MAX);
    root = malloc(PATH_MAX);
    list = malloc(cap);
    if (norm == NULL || root == NULL || list == NULL) {
        pdcbb_errf(err, errlen, "key '%s': out of memory", key);
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    cfg_path_normalise(path, norm, PATH_MAX);
    list[0] = '\0';
    for (int i = 0; i < c->n_drain_roots; i++) {
        cfg_path_normalise(c->drain_roots[i], root, PATH_MAX);
        if (cfg_path_under(norm, root))
            goto done;
        if (n < cap)
            n += (size_t)snprintf(list + n, cap - n, "%s%s", i ? ", " : "", c->drain_roots[i]);
    }
    if (strcmp(norm, path) != 0)
        pdcbb_errf(err, errlen, "key '%s': '%s' (that is, %s) is not under an allowed drain root "
                 "(%s)", key, path, norm, list);
    else
        pdcbb_errf(err, errlen, "key '%s': '%s' is not under an allowed drain root (%s)", key,
                 path, list);
    rc = PDCBB_ERR_CONFIG;
done:
    free(list);
    free(root);
    free(norm);
    return rc;
}

pdcbb_err_t pdcbb_config_validate(const pdcbb_config_t *c, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    char a[32], b[32];

    if (c == NULL) {
        pdcbb_errf(err, errlen, "pdcbb_config_validate: no config");
        rc = PDCBB_ERR_INVAL;
        goto done;
    }
    for (size_t i = 0; i < CFG_NKEYS; i++) {
        rc = cfg_check_stored(c, &cfg_keys[i], err, errlen);
        if (rc != PDCBB_OK)
            goto done;
    }
    if (c->max_capacity != 0 && c->capacity > c->max_capacity) {
        pdcbb_errf(err, errlen, "key 'capacity': %s is larger than the site's max_capacity %s",
                 pdcbb_format_size(c->capacity, a, sizeof(a)),
                 pdcbb_format_size(c->max_capacity, b, sizeof(b)));
        rc = PDCBB_ERR_CONFIG;
        goto done;
    }
    rc = cfg_check_under_roots(c, "drain", c->drain, err, errlen);
    if (rc != PDCBB_OK)
        goto done;
    rc = cfg_check_under_roots(c, "stage_in", c->stage_in, err, errlen);
done:
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Printing and writing                                                                       */
/* ---------------------------------------------------------------------------------------- */

/* A YAML double-quoted scalar: safe for any byte string load_file accepts. */
static void cfg_print_quoted(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(out, "\\x%02X", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

static void cfg_print_scope(FILE *out, const cfg_key_t *k)
{
    const char *sep = "";

    fputs(" (", out);
    if (k->scope & PDCBB_SCOPE_SITE) {
        fputs("site", out);
        sep = ", ";
    }
    if (k->scope & PDCBB_SCOPE_USER) {
        fprintf(out, "%suser", sep);
        sep = ", ";
    }
    if (k->scope & PDCBB_SCOPE_ENV) {
        fprintf(out, "%senv PDCBB_", sep);
        for (const char *p = k->name; *p != '\0'; p++)
            fputc((*p >= 'a' && *p <= 'z') ? *p - 32 : *p, out);
    }
    fputs(")", out);
}

void pdcbb_config_print(const pdcbb_config_t *c, FILE *out)
{
    char buf[64];

    if (c == NULL || out == NULL)
        return;
    for (size_t i = 0; i < CFG_NKEYS; i++) {
        const cfg_key_t *k = &cfg_keys[i];
        const void *f = cfg_field_const(c, k);

        fprintf(out, "# %s", k->help);
        cfg_print_scope(out, k);
        fprintf(out, "\n%s: ", k->name);
        switch (k->type) {
        case CFG_SIZE:
            fputs(pdcbb_format_size(*(const uint64_t *)f, buf, sizeof(buf)), out);
            break;
        case CFG_UINT:
            fprintf(out, "%u", *(const unsigned *)f);
            break;
        case CFG_SECONDS:
            cfg_format_seconds(*(const double *)f, buf, sizeof(buf));
            fputs(buf, out);
            break;
        case CFG_STRING:
        case CFG_PATH:
            cfg_print_quoted(out, f);
            break;
        case CFG_PATH_LIST:
            fputc('[', out);
            for (int j = 0; j < c->n_drain_roots && j < PDCBB_CONFIG_LIST_MAX; j++) {
                if (j > 0)
                    fputs(", ", out);
                cfg_print_quoted(out, c->drain_roots[j]);
            }
            fputc(']', out);
            break;
        case CFG_PLACEMENT:
            fputs(pdcbb_placement_name(*(const pdcbb_placement_t *)f), out);
            break;
        case CFG_LOG_LEVEL:
            fputs(pdcbb_log_level_name((pdcbb_log_level_t)(*(const int *)f)), out);
            break;
        }
        fputc('\n', out);
    }
}

pdcbb_err_t pdcbb_config_write_file(const pdcbb_config_t *c, const char *path)
{
    pdcbb_err_t rc = PDCBB_OK;
    char tmp[PATH_MAX], dir[PATH_MAX];
    int fd = -1, dfd = -1;
    FILE *f = NULL;
    bool tmp_exists = false;

    if (c == NULL || path == NULL || path[0] == '\0') {
        rc = PDCBB_ERR_INVAL;
        goto done;
    }
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= sizeof(tmp)) {
        rc = PDCBB_ERR_TOO_BIG;
        goto done;
    }
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        rc = pdcbb_err_from_errno(errno);
        goto done;
    }
    tmp_exists = true;
    if (fchmod(fd, 0600) != 0) {
        rc = pdcbb_err_from_errno(errno);
        goto done;
    }
    f = fdopen(fd, "w");
    if (f == NULL) {
        rc = pdcbb_err_from_errno(errno);
        goto done;
    }
    fd = -1; /* owned by f now */
    errno = 0;
    pdcbb_config_print(c, f);
    if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
        rc = pdcbb_err_from_errno(errno ? errno : EIO);
        goto done;
    }
    if (fclose(f) != 0) {
        f = NULL;
        rc = pdcbb_err_from_errno(errno);
        goto done;
    }
    f = NULL;
    if (rename(tmp, path) != 0) {
        rc = pdcbb_err_from_errno(errno);
        goto done;
    }
    tmp_exists = false;
    /* make the rename itself durable; failing to sync the directory is not fatal */
    snprintf(dir, sizeof(dir), "%s", path);
    dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0)
        (void)fsync(dfd);
done:
    if (dfd >= 0)
        close(dfd);
    if (f != NULL)
        fclose(f);
    if (fd >= 0)
        close(fd);
    if (tmp_exists)
        unlink(tmp);
    return rc;
}
