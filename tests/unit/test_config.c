/*
 * test_config.c - unit tests of the configuration (yaml/pdcbb_config*.c) beyond what the table
 * of keys says: the forms values are written in and printed as, sizes, the messages of bad
 * values, unknown keys and scopes, --pdc specs, YAML files, validation, the environment and
 * precedence. What holds for every key (its default, bounds, sources, the print/load round
 * trip, the documentation) is test_config_keys.c, which walks the table. Table-driven; temporary
 * files live in one mkdtemp directory under $TMPDIR that is removed at the end. Exit status 0 only
 * when every check passed.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdcbb_config.h"
#include "pdcbb_error.h"
#include "pdcbb_log.h"

static int n_checks, n_failed;
static char g_err[PDCBB_CONFIG_ERR_LEN]; /* message of the last call under test */
static pdcbb_err_t g_rc;                /* code of the last call under test */
static char g_ctx[512];                 /* which table row is running */

static void fail_report(const char *file, int line, const char *what)
{
    n_failed++;
    fprintf(stderr, "%s:%d: CHECK failed: %s\n    last error: %s  message: '%s'%s%s\n", file,
            line, what, pdcbb_errname(g_rc), g_err, g_ctx[0] ? "\n    row: " : "", g_ctx);
}

/* Boolean check: prints file:line, the expression, and the last error's name and message. */
#define CHECK(expr)                                                                               \
    do {                                                                                          \
        n_checks++;                                                                               \
        if (!(expr))                                                                              \
            fail_report(__FILE__, __LINE__, #expr);                                               \
    } while (0)

/* Call returning pdcbb_err_t: must return want. */
#define CHECK_ERR(call, want)                                                                     \
    do {                                                                                          \
        g_rc = (call);                                                                            \
        n_checks++;                                                                               \
        if (g_rc != (want)) {                                                                     \
            char what_[1024];                                                                     \
            snprintf(what_, sizeof(what_), "%s returned %s, expected %s", #call,                  \
                     pdcbb_errname(g_rc), pdcbb_errname(want));                                   \
            fail_report(__FILE__, __LINE__, what_);                                               \
        }                                                                                         \
    } while (0)

#define CHECK_STR(a, b) CHECK(strcmp((a), (b)) == 0)
#define CHECK_HAS(hay, needle) CHECK(strstr((hay), (needle)) != NULL)

static void ctx_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ctx_set(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_ctx, sizeof(g_ctx), fmt, ap);
    va_end(ap);
}

static void reset_err(void)
{
    g_err[0] = '\0';
    g_rc = PDCBB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Temporary files                                                                            */
/* ---------------------------------------------------------------------------------------- */

static char tmpdir[PATH_MAX];

static const char *tmp_write(const char *name, const char *content)
{
    static char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    fputs(content, f);
    fclose(f);
    return path;
}

static void tmp_cleanup(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    char path[PATH_MAX];

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", tmpdir, e->d_name);
        unlink(path);
    }
    closedir(d);
    if (rmdir(tmpdir) != 0)
        fprintf(stderr, "cannot remove %s: %s\n", tmpdir, strerror(errno));
}

/* The printed config, malloc'd (through a real FILE, as pdc_bbd --print-config uses it). */
static char *print_to_string(const pdcbb_config_t *c)
{
    FILE *f = tmpfile();
    char *buf;
    long len;

    if (f == NULL)
        exit(2);
    pdcbb_config_print(c, f);
    len = ftell(f);
    buf = malloc((size_t)len + 1);
    if (len < 0 || buf == NULL || fseek(f, 0, SEEK_SET) != 0 ||
        fread(buf, 1, (size_t)len, f) != (size_t)len)
        exit(2);
    buf[len] = '\0';
    fclose(f);
    return buf;
}

/* Does the printed config contain exactly this line? */
static bool printed_has_line(const pdcbb_config_t *c, const char *line)
{
    char *out = print_to_string(c);
    bool found = false;
    size_t n = strlen(line);

    for (const char *p = out; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len == n && strncmp(p, line, n) == 0)
            found = true;
        p = nl ? nl + 1 : NULL;
    }
    free(out);
    return found;
}

/* "capacity, drain, ..." for the keys the scope may set, as the messages list them. */
static const char *known_keys(unsigned scope)
{
    static char buf[1024];
    size_t nkeys, n = 0;
    const pdcbb_config_key_t *keys = pdcbb_config_keys(&nkeys);

    buf[0] = '\0';
    for (size_t i = 0; i < nkeys; i++)
        if (keys[i].scope & scope)
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? ", " : "", keys[i].name);
    return buf;
}

#define GIB (1024ull * 1024 * 1024)
#define MIB (1024ull * 1024)

/* ---------------------------------------------------------------------------------------- */
/* Defaults                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static void test_defaults(void)
{
    pdcbb_config_t c;

    /* each key's default is the table's (test_config_keys); the installed binaries' paths
     * are where the build puts them */
    ctx_set("defaults");
    pdcbb_config_init(&c);
    CHECK(c.daemon_path[0] == '/');
    CHECK(strstr(c.daemon_path, "pdc_bbd") != NULL);
    CHECK(c.mount_path[0] == '/');
    CHECK(strstr(c.mount_path, "pdcbb_mount") != NULL);
    reset_err();
    CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_OK);

    /* how print writes each kind of value */
    CHECK(printed_has_line(&c, "capacity: 1G"));
    CHECK(printed_has_line(&c, "lmdb_map_size: 16G"));
    CHECK(printed_has_line(&c, "drain_roots: []"));
    CHECK(printed_has_line(&c, "placement: obj_static"));
    CHECK(printed_has_line(&c, "log_level: info"));
    CHECK(printed_has_line(&c, "local_root: \"/tmp/pdcbb\""));
    CHECK(printed_has_line(&c, "stranded_max_age: 604800"));
    g_ctx[0] = '\0';
}

/* ---------------------------------------------------------------------------------------- */
/* Values in the forms they may be written in, and as they are printed (each key's bounds:    */
/* test_config_keys)                                                                          */
/* ---------------------------------------------------------------------------------------- */

static void test_value_forms(void)
{
    static const struct {
        const char *key, *value, *printed;
    } rows[] = {
        {"local_root", "/scratch/local", "local_root: \"/scratch/local\""},
        {"max_capacity", "100G", "max_capacity: 100G"},
        {"drain_roots", "/scratch, /project", "drain_roots: [\"/scratch\", \"/project\"]"},
        {"drain_roots", "/scratch", "drain_roots: [\"/scratch\"]"},
        {"daemon_path", "/opt/pdcbb/sbin/pdc_bbd", "daemon_path: \"/opt/pdcbb/sbin/pdc_bbd\""},
        {"ready_timeout", "1.5", "ready_timeout: 1.5"},
        {"ready_timeout", "2m", "ready_timeout: 120"},
        {"ready_timeout", "30s", "ready_timeout: 30"},
        {"ready_timeout", "1h", "ready_timeout: 3600"},
        {"drain_share", "group", "drain_share: \"group\""},
        {"drain_share", "all", "drain_share: \"all\""},
        {"ucx_tls", "rc_x,sm,self", "ucx_tls: \"rc_x,sm,self\""},
        {"ucx_tls", "^ib", "ucx_tls: \"^ib\""},
        {"ucx_net_devices", "mlx5_0:1", "ucx_net_devices: \"mlx5_0:1\""},
        {"listen_address", "10.0.0.1", "listen_address: \"10.0.0.1\""},
        {"listen_address", "fe80::1", "listen_address: \"fe80::1\""},
        {"lmdb_map_size", "1T", "lmdb_map_size: 1T"},
        {"capacity", "1536M", "capacity: 1536M"},
        {"capacity", "1.5G", "capacity: 1536M"},
        {"capacity", "20GiB", "capacity: 20G"},
        {"drain", "/scratch/me/out", "drain: \"/scratch/me/out\""},
        {"stage_in", "/scratch/me/in", "stage_in: \"/scratch/me/in\""},
        {"placement", "region_dynamic", "placement: region_dynamic"},
        {"placement", "PDC_REGION_LOCAL", "placement: region_local"},
        {"placement", "pdc_region_static", "placement: region_static"},
        {"placement", "Obj_Static", "placement: obj_static"},
        {"log_level", "debug", "log_level: debug"},
        {"log_level", "NONE", "log_level: none"},
        {"log_level", "warn", "log_level: warn"},
        {"request_timeout", "1d", "request_timeout: 86400"},
        {"connect_timeout", "0.25", "connect_timeout: 0.25"},
    };
    pdcbb_config_t c;

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        ctx_set("set %s=%s", rows[i].key, rows[i].value);
        pdcbb_config_init(&c);
        reset_err();
        CHECK_ERR(pdcbb_config_set(&c, rows[i].key, rows[i].value, PDCBB_SCOPE_SITE, "test",
                                   g_err, sizeof(g_err)),
                  PDCBB_OK);
        CHECK(printed_has_line(&c, rows[i].printed));
    }

    /* a few fields looked at directly */
    ctx_set("direct fields");
    pdcbb_config_init(&c);
    CHECK_ERR(pdcbb_config_set(&c, "ready_timeout", "2m", PDCBB_SCOPE_SITE, "t", g_err,
                               sizeof(g_err)),
              PDCBB_OK);
    CHECK(c.ready_timeout == 120.0);
    CHECK_ERR(pdcbb_config_set(&c, "drain_roots", " /a ,/b/c,/d ", PDCBB_SCOPE_SITE, "t",
                               g_err, sizeof(g_err)),
              PDCBB_OK);
    CHECK(c.n_drain_roots == 3);
    CHECK_STR(c.drain_roots[0], "/a");
    CHECK_STR(c.drain_roots[1], "/b/c");
    CHECK_STR(c.drain_roots[2], "/d");
    CHECK_ERR(pdcbb_config_set(&c, "capacity", "1.5G", PDCBB_SCOPE_USER, "t", g_err,
                               sizeof(g_err)),
              PDCBB_OK);
    CHECK(c.capacity == 1536 * MIB);
    CHECK_ERR(pdcbb_config_set(&c, "placement", "PDC_REGION_DYNAMIC", PDCBB_SCOPE_USER, "t",
                               g_err, sizeof(g_err)),
              PDCBB_OK);
    CHECK(c.placement == PDCBB_PLACE_REGION_DYNAMIC);
    CHECK_ERR(pdcbb_config_set(&c, "log_level", "debug", PDCBB_SCOPE_ENV, "t", g_err,
                               sizeof(g_err)),
              PDCBB_OK);
    CHECK(c.log_level == PDCBB_LOG_DEBUG);
    CHECK_ERR(pdcbb_config_set(&c, "servers_per_node", "007", PDCBB_SCOPE_USER, "t", g_err,
                               sizeof(g_err)),
              PDCBB_OK);
    CHECK(c.servers_per_node == 7);
    /* set(NULL...) is refused, err may be NULL */
    CHECK_ERR(pdcbb_config_set(&c, NULL, "1", PDCBB_SCOPE_SITE, "t", NULL, 0), PDCBB_ERR_INVAL);
    CHECK_ERR(pdcbb_config_set(&c, "capacity", "bad", PDCBB_SCOPE_SITE, "t", NULL, 0),
              PDCBB_ERR_CONFIG);
    g_ctx[0] = '\0';
}

/* ---------------------------------------------------------------------------------------- */
/* Sizes                                                                                      */
/* ---------------------------------------------------------------------------------------- */

static void test_sizes(void)
{
    static const struct {
        const char *text;
        bool ok;
        uint64_t value;
    } rows[] = {
        {"0", true, 0},
        {"1", true, 1},
        {"1000", true, 1000},
        {"007", true, 7},
        {"1B", true, 1},
        {"1b", true, 1},
        {"1K", true, 1024},
        {"1k", true, 1024},
        {"1KB", true, 1024},
        {"1kb", true, 1024},
        {"1KiB", true, 1024},
        {"1kib", true, 1024},
        {"2M", true, 2 * MIB},
        {"20G", true, 20 * GIB},
        {"20gib", true, 20 * GIB},
        {"3T", true, 3 * 1024 * GIB},
        {"1P", true, 1024 * 1024 * GIB},
        {"1.5G", true, 1536 * MIB},
        {"1.50G", true, 1536 * MIB},
        {"0.5K", true, 512},
        {"1.0", true, 1},
        {"1.0009765625K", true, 1025},
        {"16383P", true, 16383ull * 1024 * 1024 * GIB},
        {"18446744073709551615", true, UINT64_MAX},
        {"", false, 0},
        {"-1", false, 0},
        {"+1", false, 0},
        {"10X", false, 0},
        {"1e9", false, 0},
        {" 1G", false, 0},
        {"1 G", false, 0},
        {"1G ", false, 0},
        {"1\tG", false, 0},
        {"1.", false, 0},
        {".5K", false, 0},
        {"1.3K", false, 0},  /* 1331.2 bytes */
        {"0.5", false, 0},   /* half a byte */
        {"1..5G", false, 0},
        {"1GiBB", false, 0},
        {"1iB", false, 0},
        {"1Ki", false, 0},
        {"0x10", false, 0},
        {"G", false, 0},
        {"1E", false, 0},
        {"16384P", false, 0},               /* 2^64 */
        {"18446744073709551616", false, 0}, /* UINT64_MAX + 1 */
        {"99999999999999999999999", false, 0},
        {"17592186044416T", false, 0},      /* 2^64 */
    };
    static const struct {
        uint64_t bytes;
        const char *text;
    } fmt[] = {
        {0, "0"},
        {1, "1"},
        {1000, "1000"},
        {1023, "1023"},
        {1024, "1K"},
        {1025, "1025"},
        {1536 * MIB, "1536M"},
        {20 * GIB, "20G"},
        {16 * GIB, "16G"},
        {1024 * GIB, "1T"},
        {1024 * 1024 * GIB, "1P"},
        {3 * 1024 * 1024 * GIB, "3P"},
        {UINT64_MAX, "18446744073709551615"},
    };
    char buf[32];

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        uint64_t v = 12345;
        pdcbb_err_t rc;
        ctx_set("parse_size '%s'", rows[i].text);
        reset_err();
        rc = pdcbb_parse_size(rows[i].text, &v);
        g_rc = rc;
        if (rows[i].ok) {
            CHECK(rc == PDCBB_OK);
            CHECK(v == rows[i].value);
        } else {
            CHECK(rc == PDCBB_ERR_INVAL);
            CHECK(v == 12345); /* out-parameter untouched on failure */
        }
    }
    ctx_set("parse_size NULL");
    {
        uint64_t v;
        CHECK_ERR(pdcbb_parse_size(NULL, &v), PDCBB_ERR_INVAL);
        CHECK_ERR(pdcbb_parse_size("1", NULL), PDCBB_ERR_INVAL);
    }
    for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
        uint64_t back = 0;
        ctx_set("format_size %llu", (unsigned long long)fmt[i].bytes);
        CHECK_STR(pdcbb_format_size(fmt[i].bytes, buf, sizeof(buf)), fmt[i].text);
        CHECK_ERR(pdcbb_parse_size(buf, &back), PDCBB_OK);
        CHECK(back == fmt[i].bytes);
    }
    ctx_set("format_size small buffer");
    CHECK_STR(pdcbb_format_size(20 * GIB, buf, 2), "2");
    g_ctx[0] = '\0';
}

/* ---------------------------------------------------------------------------------------- */
/* Bad values, unknown keys, scopes                                                           */
/* ---------------------------------------------------------------------------------------- */

static char long_path[PATH_MAX + 100];

static void test_bad_values(void)
{
    static const struct {
        const char *key, *value, *msg;
    } rows[] = {
        {"max_capacity", "12Q",
         "test: key 'max_capacity': bad size '12Q' (use a number with an optional K, M, G, T "
         "or P suffix)"},
        {"capacity", "", "test: key 'capacity': bad size ''"},
        {"capacity", "-1", "bad size '-1'"},
        {"capacity", "1e9", "bad size '1e9'"},
        {"capacity", "512K", "test: key 'capacity': 512K is below the minimum 1M"},
        {"capacity", "1048575", "below the minimum 1M"},
        {"capacity", "1.3K", "bad size '1.3K' (not a whole number of bytes)"},
        {"capacity", "99999999999P", "bad size '99999999999P' (too large)"},
        {"lmdb_map_size", "2P", "test: key 'lmdb_map_size': 2P is above the maximum 1P"},
        {"lmdb_map_size", "512K", "below the minimum 1M"},
        {"servers_per_node", "0",
         "test: key 'servers_per_node': out of range '0' (use a whole number from 1 to 64)"},
        {"servers_per_node", "65", "out of range '65'"},
        {"mount", "on", "test: key 'mount': bad value 'on' (use yes or no)"},
        {"drain_share", "world",
         "test: key 'drain_share': bad value 'world' (use none, group or all)"},
        {"servers_per_node", "abc", "bad number 'abc' (use a whole number from 1 to 64)"},
        {"servers_per_node", "-1", "bad number '-1'"},
        {"servers_per_node", "1.5", "bad number '1.5'"},
        {"servers_per_node", "", "bad number ''"},
        {"servers_per_node", "99999999999999999999999", "bad number"},
        {"ready_timeout", "0.05",
         "test: key 'ready_timeout': out of range '0.05' (use 0.1 to "
         "86400 seconds)"},
        {"ready_timeout", "2d", "out of range '2d'"},
        {"ready_timeout", "0", "out of range '0'"},
        {"ready_timeout", "abc", "test: key 'ready_timeout': bad duration 'abc'"},
        {"ready_timeout", "-1", "bad duration '-1'"},
        {"ready_timeout", "1e3", "bad duration '1e3'"},
        {"ready_timeout", "inf", "bad duration 'inf'"},
        {"ready_timeout", "nan", "bad duration 'nan'"},
        {"stop_timeout", "30x", "bad duration '30x'"},
        {"stop_timeout", "1.2.3", "bad duration '1.2.3'"},
        {"stop_timeout", "1.", "bad duration '1.'"},
        {"request_timeout", "", "bad duration ''"},
        {"connect_timeout", "5 s", "bad duration '5 s'"},
        {"local_root", "relative/path",
         "test: key 'local_root': path 'relative/path' must be absolute"},
        {"local_root", "", "test: key 'local_root': may not be empty"},
        {"local_root", long_path, "path too long"},
        {"daemon_path", "", "key 'daemon_path': may not be empty"},
        {"daemon_path", "pdc_bbd", "path 'pdc_bbd' must be absolute"},
        {"mount_path", "pdcbb_mount", "path 'pdcbb_mount' must be absolute"},
        {"drain", "out", "test: key 'drain': path 'out' must be absolute"},
        {"stage_in", "./in", "key 'stage_in': path './in' must be absolute"},
        {"drain", "/scratch/with\nnewline", "path contains a control character"},
        {"stage_in", "/scratch/u\xcb\xcb", "key 'stage_in': path is not valid UTF-8 at byte 10"},
        {"stage_in", "/scratch/\xc2\x8bu", "path contains a control character at byte 9"},
        {"drain", "/scratch/\xe2\x80\xa8u", "path contains a control character at byte 9"},
        {"drain", long_path, "key 'drain': path too long"},
        {"ucx_tls", "cma tcp", "test: key 'ucx_tls': bad value 'cma tcp'"},
        {"ucx_tls", "cma,tcp;rm -rf", "bad value"},
        {"ucx_tls",
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         "value too long (131 bytes, at most 127)"},
        {"listen_address", "eth0", "test: key 'listen_address': bad value 'eth0' (not a numeric"},
        {"listen_address", "10.0.0.256", "bad value '10.0.0.256'"},
        {"drain_roots", "/a,relative", "test: key 'drain_roots': path 'relative' must be absolute"},
        {"drain_roots", "/a,,/b", "entry 2 is empty"},
        {"drain_roots", "/a,", "entry 2 is empty"},
        {"drain_roots", "/1,/2,/3,/4,/5,/6,/7,/8,/9,/10,/11,/12,/13,/14,/15,/16,/17",
         "too many entries"},
        {"placement", "random",
         "test: key 'placement': bad placement 'random' (use obj_static, region_static, "
         "region_dynamic or region_local)"},
        {"placement", "PDC_", "bad placement"},
        {"placement", "", "bad placement ''"},
        {"log_level", "loud",
         "test: key 'log_level': bad log level 'loud' (use none, error, warn, info or debug)"},
        {"log_level", "", "bad log level ''"},
    };
    pdcbb_config_t c, before;

    memset(long_path, 'x', sizeof(long_path) - 1);
    long_path[0] = '/';
    long_path[sizeof(long_path) - 1] = '\0';

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        ctx_set("bad %s='%.40s'", rows[i].key, rows[i].value);
        pdcbb_config_init(&c);
        /* something non-default in place, so "unchanged" means something */
        pdcbb_config_set(&c, "drain_roots", "/keep", PDCBB_SCOPE_SITE, "setup", NULL, 0);
        pdcbb_config_set(&c, "drain", "/keep/me", PDCBB_SCOPE_SITE, "setup", NULL, 0);
        memcpy(&before, &c, sizeof(c));
        reset_err();
        CHECK_ERR(pdcbb_config_set(&c, rows[i].key, rows[i].value, PDCBB_SCOPE_SITE, "test",
                                   g_err, sizeof(g_err)),
                  PDCBB_ERR_CONFIG);
        CHECK_HAS(g_err, rows[i].msg);
        CHECK(memcmp(&c, &before, sizeof(c)) == 0);
    }
    g_ctx[0] = '\0';
}

static void test_unknown_and_scope(void)
{
    static const struct {
        const char *key, *value;
        unsigned scope;
        const char *source;
        pdcbb_err_t rc;
        const char *msg;
    } rows[] = {
        {"capasity", "1G", PDCBB_SCOPE_USER, "--pdc", PDCBB_ERR_CONFIG,
         "--pdc: unknown key 'capasity' (known keys: capacity, drain, "},
        {"capasity", "1G", PDCBB_SCOPE_SITE, "site.yaml:3", PDCBB_ERR_CONFIG,
         "site.yaml:3: unknown key 'capasity' (known keys: local_root, max_capacity, "},
        {"Capacity", "1G", PDCBB_SCOPE_USER, "--pdc", PDCBB_ERR_CONFIG, "unknown key 'Capacity'"},
        {"", "1G", PDCBB_SCOPE_USER, "--pdc", PDCBB_ERR_CONFIG, "unknown key ''"},
        {"local_root", "/x", PDCBB_SCOPE_USER, "--pdc", PDCBB_ERR_CONFIG,
         "--pdc: key 'local_root' may only be set in the site configuration"},
        {"max_capacity", "1G", PDCBB_SCOPE_USER, "--pdc", PDCBB_ERR_CONFIG,
         "--pdc: key 'max_capacity' may only be set in the site configuration"},
        {"drain_roots", "/x", PDCBB_SCOPE_USER, "u.yaml:1", PDCBB_ERR_CONFIG,
         "u.yaml:1: key 'drain_roots' may only be set in the site configuration"},
        {"capacity", "2G", PDCBB_SCOPE_ENV, "environment", PDCBB_ERR_CONFIG,
         "environment: key 'capacity' may only be set in the site configuration, the user's "
         "YAML file or --pdc"},
        {"local_root", "/x", PDCBB_SCOPE_ENV, "environment", PDCBB_ERR_CONFIG,
         "site configuration"},
        {"capacity", "2G", 0, "nowhere", PDCBB_ERR_CONFIG, "may only be set in"},
        /* allowed (each key in each of its scopes: test_config_keys) */
        {"capacity", "2G", PDCBB_SCOPE_USER, "--pdc", PDCBB_OK, ""},
        {"log_level", "debug", PDCBB_SCOPE_ENV, "environment", PDCBB_OK, ""},
        {"local_root", "/x", PDCBB_SCOPE_JOB, "job", PDCBB_OK, ""},
        {"local_root", "/x", PDCBB_SCOPE_USER | PDCBB_SCOPE_SITE, "both", PDCBB_OK, ""},
    };
    pdcbb_config_t c, before;

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        ctx_set("scope row %zu: %s=%s scope %#x", i, rows[i].key, rows[i].value, rows[i].scope);
        pdcbb_config_init(&c);
        memcpy(&before, &c, sizeof(c));
        reset_err();
        CHECK_ERR(pdcbb_config_set(&c, rows[i].key, rows[i].value, rows[i].scope,
                                   rows[i].source, g_err, sizeof(g_err)),
                  rows[i].rc);
        if (rows[i].rc != PDCBB_OK) {
            CHECK_HAS(g_err, rows[i].msg);
            CHECK(memcmp(&c, &before, sizeof(c)) == 0);
        }
    }
    /* the known keys are the ones the scope may set, in the table's order; the full list of
     * the site's fits the message */
    static const unsigned scopes[] = {PDCBB_SCOPE_SITE, PDCBB_SCOPE_USER, PDCBB_SCOPE_ENV};
    for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
        char want[PDCBB_CONFIG_ERR_LEN + 64];
        ctx_set("known-keys list of scope %#x", scopes[i]);
        pdcbb_config_init(&c);
        reset_err();
        CHECK_ERR(pdcbb_config_set(&c, "nope", "1", scopes[i], "s", g_err, sizeof(g_err)),
                  PDCBB_ERR_CONFIG);
        snprintf(want, sizeof(want), "s: unknown key 'nope' (known keys: %s)",
                 known_keys(scopes[i]));
        CHECK_STR(g_err, want);
    }
    g_ctx[0] = '\0';
}

/* ---------------------------------------------------------------------------------------- */
/* Placement names                                                                            */
/* ---------------------------------------------------------------------------------------- */

static void test_placement(void)
{
    static const struct {
        const char *text;
        int value;
    } rows[] = {
        {"obj_static", PDCBB_PLACE_OBJ_STATIC},
        {"region_static", PDCBB_PLACE_REGION_STATIC},
        {"region_dynamic", PDCBB_PLACE_REGION_DYNAMIC},
        {"region_local", PDCBB_PLACE_REGION_LOCAL},
        {"PDC_OBJ_STATIC", PDCBB_PLACE_OBJ_STATIC},
        {"PDC_REGION_STATIC", PDCBB_PLACE_REGION_STATIC},
        {"PDC_REGION_DYNAMIC", PDCBB_PLACE_REGION_DYNAMIC},
        {"pdc_region_local", PDCBB_PLACE_REGION_LOCAL},
        {"REGION_LOCAL", PDCBB_PLACE_REGION_LOCAL},
        {"", -1},
        {"PDC_", -1},
        {"obj", -1},
        {"obj_static ", -1},
        {"PDC_PDC_OBJ_STATIC", -1},
        {NULL, -1},
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        ctx_set("placement '%s'", rows[i].text ? rows[i].text : "(null)");
        CHECK(pdcbb_placement_parse(rows[i].text) == rows[i].value);
    }
    ctx_set("placement names");
    CHECK_STR(pdcbb_placement_name(PDCBB_PLACE_OBJ_STATIC), "obj_static");
    CHECK_STR(pdcbb_placement_name(PDCBB_PLACE_REGION_LOCAL), "region_local");
    CHECK_STR(pdcbb_placement_name((pdcbb_placement_t)17), "unknown");
    for (int p = 0; p <= PDCBB_PLACE_REGION_LOCAL; p++)
        CHECK(pdcbb_placement_parse(pdcbb_placement_name((pdcbb_placement_t)p)) == p);
    g_ctx[0] = '\0';
}

/* ---------------------------------------------------------------------------------------- */
/* --pdc specs                                                                                */
/* ---------------------------------------------------------------------------------------- */

static void test_spec(void)
{
    static const struct {
        const char *spec;
        pdcbb_err_t rc;
        const char *msg;
        uint64_t capacity;     /* expected afterwards (unchanged default on failure) */
        unsigned spn;
    } rows[] = {
        {NULL, PDCBB_OK, "", GIB, 1},
        {"", PDCBB_OK, "", GIB, 1},
        {"   ", PDCBB_OK, "", GIB, 1},
        {"capacity=2G", PDCBB_OK, "", 2 * GIB, 1},
        {"capacity=2G,servers_per_node=4", PDCBB_OK, "", 2 * GIB, 4},
        {" capacity = 2G , servers_per_node=4 ", PDCBB_OK, "", 2 * GIB, 4},
        {"capacity=2G,capacity=3G", PDCBB_OK, "", 3 * GIB, 1},
        {"drain=/scratch/out,stage_in=/scratch/in,placement=PDC_REGION_DYNAMIC,log_level=debug,"
         "request_timeout=2m,connect_timeout=1.5",
         PDCBB_OK, "", GIB, 1},
        {"capacity", PDCBB_ERR_CONFIG, "--pdc: item 'capacity' has no '=' (use key=value)", GIB, 1},
        {"capacity=2G,servers_per_node", PDCBB_ERR_CONFIG,
         "--pdc: item 'servers_per_node' has no '='", GIB, 1},
        {"capacity=", PDCBB_ERR_CONFIG, "--pdc: item 'capacity=' has an empty value", GIB, 1},
        {"capacity=  ", PDCBB_ERR_CONFIG, "--pdc: item 'capacity=' has an empty value", GIB, 1},
        {"=5", PDCBB_ERR_CONFIG, "--pdc: item '=5' has no key", GIB, 1},
        {"capacity=2G,,servers_per_node=2", PDCBB_ERR_CONFIG, "--pdc: item 2 is empty", GIB, 1},
        {"capacity=2G,", PDCBB_ERR_CONFIG, "--pdc: item 2 is empty", GIB, 1},
        {",capacity=2G", PDCBB_ERR_CONFIG, "--pdc: item 1 is empty", GIB, 1},
        {"capasity=2G", PDCBB_ERR_CONFIG, "--pdc: unknown key 'capasity' (known keys: capacity, ",
         GIB, 1},
        {"local_root=/x", PDCBB_ERR_CONFIG,
         "--pdc: key 'local_root' may only be set in the site configuration", GIB, 1},
        {"capacity=12Q", PDCBB_ERR_CONFIG,
         "--pdc: key 'capacity': bad size '12Q' (use a number with an optional K, M, G, T or P "
         "suffix)",
         GIB, 1},
        /* all or nothing: the good first item is not applied either */
        {"capacity=2G,servers_per_node=100", PDCBB_ERR_CONFIG,
         "--pdc: key 'servers_per_node': out of range '100'", GIB, 1},
        {"drain=relative", PDCBB_ERR_CONFIG, "--pdc: key 'drain': path 'relative' must be absolute",
         GIB, 1},
        {"config=/nonexistent/pdcbb-test.yaml", PDCBB_ERR_NOT_FOUND,
         "--pdc: config=/nonexistent/pdcbb-test.yaml: cannot open", GIB, 1},
    };
    pdcbb_config_t c;
    const char *path;
    char spec[PATH_MAX + 128];

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        ctx_set("spec '%s'", rows[i].spec ? rows[i].spec : "(null)");
        pdcbb_config_init(&c);
        reset_err();
        CHECK_ERR(pdcbb_config_parse_spec(&c, rows[i].spec, g_err, sizeof(g_err)), rows[i].rc);
        if (rows[i].rc != PDCBB_OK)
            CHECK_HAS(g_err, rows[i].msg);
        CHECK(c.capacity == rows[i].capacity);
        CHECK(c.servers_per_node == rows[i].spn);
    }

    /* --pdc knows the user's keys and config */
    ctx_set("spec's known keys");
    pdcbb_config_init(&c);
    CHECK_ERR(pdcbb_config_parse_spec(&c, "capasity=2G", g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    snprintf(spec, sizeof(spec), "--pdc: unknown key 'capasity' (known keys: %s, config)",
             known_keys(PDCBB_SCOPE_USER));
    CHECK_STR(g_err, spec);

    /* a yes/no key alone means yes; any other key alone is still an error (rows above) */
    ctx_set("switch key alone");
    pdcbb_config_init(&c);
    CHECK_STR(c.mount, "no");
    CHECK_ERR(pdcbb_config_parse_spec(&c, "capacity=2G, mount ", g_err, sizeof(g_err)), PDCBB_OK);
    CHECK_STR(c.mount, "yes");
    CHECK(c.capacity == 2 * GIB);
    CHECK_ERR(pdcbb_config_parse_spec(&c, "mount=no", g_err, sizeof(g_err)), PDCBB_OK);
    CHECK_STR(c.mount, "no");
    reset_err();
    CHECK_ERR(pdcbb_config_parse_spec(&c, "mounts", g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "--pdc: item 'mounts' has no '=' (use key=value)");

    /* stage_in_files fills the job's filesystem: without mount=yes it is refused by name */
    ctx_set("stage_in_files without mount");
    pdcbb_config_init(&c);
    CHECK_ERR(pdcbb_config_parse_spec(&c, "stage_in_files=/scratch/in", g_err, sizeof(g_err)),
              PDCBB_OK);
    reset_err();
    CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "key 'stage_in_files': the files are copied into the job's filesystem: "
                     "add mount=yes");
    CHECK_ERR(pdcbb_config_parse_spec(&c, "mount", g_err, sizeof(g_err)), PDCBB_OK);
    CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_OK);
    CHECK_STR(c.stage_in_files, "/scratch/in");

    ctx_set("spec with every user key");
    pdcbb_config_init(&c);
    CHECK_ERR(pdcbb_config_parse_spec(&c, rows[7].spec, g_err, sizeof(g_err)), PDCBB_OK);
    CHECK_STR(c.drain, "/scratch/out");
    CHECK_STR(c.stage_in, "/scratch/in");
    CHECK(c.placement == PDCBB_PLACE_REGION_DYNAMIC);
    CHECK(c.log_level == PDCBB_LOG_DEBUG);
    CHECK(c.request_timeout == 120.0);
    CHECK(c.connect_timeout == 1.5);

    /* config=FILE is applied at its position among the items */
    path = tmp_write("user.yaml", "capacity: 4G\nplacement: region_local\n");
    ctx_set("config=FILE in the middle");
    pdcbb_config_init(&c);
    snprintf(spec, sizeof(spec), "capacity=2G, config=%s ,servers_per_node=2", path);
    CHECK_ERR(pdcbb_config_parse_spec(&c, spec, g_err, sizeof(g_err)), PDCBB_OK);
    CHECK(c.capacity == 4 * GIB);
    CHECK(c.placement == PDCBB_PLACE_REGION_LOCAL);
    CHECK(c.servers_per_node == 2);

    ctx_set("yaml=FILE then override");
    pdcbb_config_init(&c);
    snprintf(spec, sizeof(spec), "yaml=%s,capacity=8G", path);
    CHECK_ERR(pdcbb_config_parse_spec(&c, spec, g_err, sizeof(g_err)), PDCBB_OK);
    CHECK(c.capacity == 8 * GIB);
    CHECK(c.placement == PDCBB_PLACE_REGION_LOCAL);

    /* a user file may not set site keys: the error names the file and the line */
    path = tmp_write("user-bad.yaml", "capacity: 4G\nlocal_root: /elsewhere\n");
    ctx_set("config=FILE with a site key");
    pdcbb_config_init(&c);
    snprintf(spec, sizeof(spec), "config=%s", path);
    reset_err();
    CHECK_ERR(pdcbb_config_parse_spec(&c, spec, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    {
        char want[PATH_MAX + 128];
        snprintf(want, sizeof(want),
                 "%s:2: key 'local_root' may only be set in the site configuration", path);
        CHECK_STR(g_err, want);
    }
    CHECK(c.capacity == GIB);
    CHECK_STR(c.local_root, "/tmp/pdcbb");
    g_ctx[0] = '\0';
}

/* ---------------------------------------------------------------------------------------- */
/* YAML files                                                                                 */
/* ---------------------------------------------------------------------------------------- */

static void test_yaml(void)
{
    static const struct {
        const char *content;
        unsigned scope;
        pdcbb_err_t rc;
        int line;           /* when > 0 the message must start with "PATH:LINE: " */
        const char *msg;
    } rows[] = {
        {"", PDCBB_SCOPE_SITE, PDCBB_OK, 0, ""},
        {"# only a comment\n\n", PDCBB_SCOPE_SITE, PDCBB_OK, 0, ""},
        {"---\n", PDCBB_SCOPE_SITE, PDCBB_OK, 0, ""},
        {"---\n...\n", PDCBB_SCOPE_SITE, PDCBB_OK, 0, ""},
        {"{}\n", PDCBB_SCOPE_SITE, PDCBB_OK, 0, ""},
        {"capacity: 1G\ncapacity: 2G\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 2,
         "duplicate key 'capacity' (first set on line 1)"},
        {"capacity: 2G\nlog_level: debug\n  drain: /x\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 3,
         "YAML syntax error: mapping values are not allowed"},
        {"capacity: 2G\nplacement: [obj_static\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 0,
         "YAML syntax error"},
        {"capacity: \"2G\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 0, "YAML syntax error"},
        {"capacity: 1G\n\tdrain: /x\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 0,
         "YAML syntax error"},
        {"capacity: *nope\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 1, "YAML syntax error"},
        {"capacity:\n  size: 2G\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 2,
         "key 'capacity': expected a single value, found a mapping"},
        {"capacity: [1G, 2G]\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 1,
         "key 'capacity': expected a single value, found a list"},
        {"drain_roots: {a: b}\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 1,
         "key 'drain_roots': expected a path or a list of paths, found a mapping"},
        {"drain_roots:\n  - /a\n  - {b: c}\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 3,
         "key 'drain_roots': list entries must be single paths"},
        {"drain_roots:\n  - /a\n  - rel\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 2,
         "key 'drain_roots': path 'rel' must be absolute"},
        {"- capacity\n- drain\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 1,
         "the top level must be a mapping of 'key: value' lines, found a list"},
        {"hello\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 1,
         "the top level must be a mapping of 'key: value' lines, found a single value"},
        {"? [a, b]\n: c\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 1,
         "a key must be a plain name, found a list"},
        {"capacity: 1G\n\nfoo: 1\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 3,
         "unknown key 'foo' (known keys: local_root,"},
        {"capacity: 1G\nlocal_root: /x\n", PDCBB_SCOPE_USER, PDCBB_ERR_CONFIG, 2,
         "key 'local_root' may only be set in the site configuration"},
        {"# site\n\nmax_capacity: 12Q\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 3,
         "key 'max_capacity': bad size '12Q' (use a number with an optional K, M, G, T or P "
         "suffix)"},
        {"capacity: 1G\n---\ncapacity: 2G\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 3,
         "only one YAML document is allowed"},
        {"capacity: 2G\nservers_per_node: 99\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 2,
         "key 'servers_per_node': out of range '99'"},
        {"drain: \"/a\\0b\"\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 1,
         "value contains a NUL character"},
        {"drain: \"/a\\nb\"\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 1,
         "path contains a control character"},
        {"capacity: 1G\ndrain: /\xff\n", PDCBB_SCOPE_SITE, PDCBB_ERR_CONFIG, 2,
         "cannot read YAML"},
        /* accepted forms */
        {"\"capacity\": '3G'\n", PDCBB_SCOPE_USER, PDCBB_OK, 0, ""},
        {"drain: ~\nstage_in:\n", PDCBB_SCOPE_USER, PDCBB_OK, 0, ""},
        {"drain_roots: /one, with comma\n", PDCBB_SCOPE_SITE, PDCBB_OK, 0, ""},
        {"drain_roots: [/a, \"/b\"]\n", PDCBB_SCOPE_SITE, PDCBB_OK, 0, ""},
        {"drain_roots: []\n", PDCBB_SCOPE_SITE, PDCBB_OK, 0, ""},
        {"servers_per_node: 4 # four daemons\n", PDCBB_SCOPE_USER, PDCBB_OK, 0, ""},
    };
    pdcbb_config_t c, before;
    char name[32], prefix[PATH_MAX + 32];

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *path;
        ctx_set("yaml row %zu: '%.60s'", i, rows[i].content);
        snprintf(name, sizeof(name), "row%02zu.yaml", i);
        path = tmp_write(name, rows[i].content);
        pdcbb_config_init(&c);
        pdcbb_config_set(&c, "drain", "/keep", PDCBB_SCOPE_USER, "setup", NULL, 0);
        memcpy(&before, &c, sizeof(c));
        reset_err();
        CHECK_ERR(pdcbb_config_load_file(&c, path, rows[i].scope, g_err, sizeof(g_err)),
                  rows[i].rc);
        if (rows[i].rc == PDCBB_OK)
            continue;
        CHECK(memcmp(&c, &before, sizeof(c)) == 0);
        CHECK_HAS(g_err, rows[i].msg);
        if (rows[i].line > 0) {
            snprintf(prefix, sizeof(prefix), "%s:%d: ", path, rows[i].line);
            CHECK(strncmp(g_err, prefix, strlen(prefix)) == 0);
        } else {
            snprintf(prefix, sizeof(prefix), "%s:", path);
            CHECK(strncmp(g_err, prefix, strlen(prefix)) == 0);
        }
    }

    /* a good site file, every kind of value */
    {
        const char *path = tmp_write("site.yaml",
                                     "# pdcbb site configuration\n"
                                     "local_root: /local/pdcbb\n"
                                     "max_capacity: 100G\n"
                                     "drain_roots:\n"
                                     "  - /scratch\n"
                                     "  - \"/project/\"\n"
                                     "daemon_path: \"/opt/pdcbb/sbin/pdc_bbd\"\n"
                                     "ready_timeout: 45s\n"
                                     "stop_timeout: 2.5\n"
                                     "ucx_tls: rc,sm\n"
                                     "ucx_net_devices: 'mlx5_0:1'\n"
                                     "listen_address: 10.1.2.3\n"
                                     "lmdb_map_size: 64G\n"
                                     "capacity: 2G\n"
                                     "servers_per_node: 2\n"
                                     "placement: PDC_REGION_STATIC\n"
                                     "log_level: debug\n"
                                     "request_timeout: 1m\n"
                                     "connect_timeout: 3\n");
        ctx_set("good site file");
        pdcbb_config_init(&c);
        reset_err();
        CHECK_ERR(pdcbb_config_load_file(&c, path, PDCBB_SCOPE_SITE, g_err, sizeof(g_err)),
                  PDCBB_OK);
        CHECK_STR(c.local_root, "/local/pdcbb");
        CHECK(c.max_capacity == 100 * GIB);
        CHECK(c.n_drain_roots == 2);
        CHECK_STR(c.drain_roots[0], "/scratch");
        CHECK_STR(c.drain_roots[1], "/project/");
        CHECK_STR(c.daemon_path, "/opt/pdcbb/sbin/pdc_bbd");
        CHECK(c.ready_timeout == 45.0);
        CHECK(c.stop_timeout == 2.5);
        CHECK_STR(c.ucx_tls, "rc,sm");
        CHECK_STR(c.ucx_net_devices, "mlx5_0:1");
        CHECK_STR(c.listen_address, "10.1.2.3");
        CHECK(c.lmdb_map_size == 64 * GIB);
        CHECK(c.capacity == 2 * GIB);
        CHECK(c.servers_per_node == 2);
        CHECK(c.placement == PDCBB_PLACE_REGION_STATIC);
        CHECK(c.log_level == PDCBB_LOG_DEBUG);
        CHECK(c.request_timeout == 60.0);
        CHECK(c.connect_timeout == 3.0);
        CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_OK);
    }

    /* forms of drain_roots */
    ctx_set("drain_roots forms");
    pdcbb_config_init(&c);
    CHECK_ERR(pdcbb_config_load_file(&c, tmp_write("r1.yaml", "drain_roots: [/a, \"/b\"]\n"),
                                     PDCBB_SCOPE_SITE, g_err, sizeof(g_err)),
              PDCBB_OK);
    CHECK(c.n_drain_roots == 2 && strcmp(c.drain_roots[1], "/b") == 0);
    CHECK_ERR(pdcbb_config_load_file(&c, tmp_write("r2.yaml", "drain_roots: /one, two\n"),
                                     PDCBB_SCOPE_SITE, g_err, sizeof(g_err)),
              PDCBB_OK);
    CHECK(c.n_drain_roots == 1 && strcmp(c.drain_roots[0], "/one, two") == 0);
    CHECK_ERR(pdcbb_config_load_file(&c, tmp_write("r3.yaml", "drain_roots: []\n"),
                                     PDCBB_SCOPE_SITE, g_err, sizeof(g_err)),
              PDCBB_OK);
    CHECK(c.n_drain_roots == 0);

    ctx_set("null values clear strings");
    pdcbb_config_init(&c);
    pdcbb_config_set(&c, "drain", "/x", PDCBB_SCOPE_USER, "setup", NULL, 0);
    CHECK_ERR(pdcbb_config_load_file(&c, tmp_write("null.yaml", "drain: ~\n"), PDCBB_SCOPE_USER,
                                     g_err, sizeof(g_err)),
              PDCBB_OK);
    CHECK_STR(c.drain, "");

    /* files that cannot be opened */
    ctx_set("missing file");
    pdcbb_config_init(&c);
    reset_err();
    CHECK_ERR(pdcbb_config_load_file(&c, "/nonexistent/pdcbb/site.yaml", PDCBB_SCOPE_SITE,
                                     g_err, sizeof(g_err)),
              PDCBB_ERR_NOT_FOUND);
    CHECK_HAS(g_err, "/nonexistent/pdcbb/site.yaml: cannot open: No such file or directory");
    ctx_set("directory as file");
    reset_err();
    CHECK_ERR(pdcbb_config_load_file(&c, tmpdir, PDCBB_SCOPE_SITE, g_err, sizeof(g_err)),
              PDCBB_ERR_NOT_FOUND);
    CHECK_HAS(g_err, "cannot open");
    ctx_set("NULL arguments");
    CHECK_ERR(pdcbb_config_load_file(&c, NULL, PDCBB_SCOPE_SITE, NULL, 0), PDCBB_ERR_INVAL);
    g_ctx[0] = '\0';
}

/* ---------------------------------------------------------------------------------------- */
/* Validation                                                                                 */
/* ---------------------------------------------------------------------------------------- */

static void test_validate(void)
{
    static const struct {
        const char *set[4]; /* "key=value", applied with job scope */
        pdcbb_err_t rc;
        const char *msg;
    } rows[] = {
        {{"capacity=32G", "max_capacity=16G"}, PDCBB_ERR_CONFIG,
         "key 'capacity': 32G is larger than the site's max_capacity 16G"},
        {{"capacity=16G", "max_capacity=16G"}, PDCBB_OK, ""},
        {{"capacity=1T", "max_capacity=0"}, PDCBB_OK, ""},
        {{"drain_roots=/scratch", "drain=/scratch/me/run1"}, PDCBB_OK, ""},
        {{"drain_roots=/scratch", "drain=/scratch"}, PDCBB_OK, ""},
        {{"drain_roots=/scratch", "drain=/scratch/"}, PDCBB_OK, ""},
        {{"drain_roots=/scratch", "drain=/scratch//me/./x"}, PDCBB_OK, ""},
        {{"drain_roots=/scratch", "drain=/scratch/a/../b"}, PDCBB_OK, ""},
        {{"drain_roots=/scratch", "drain=/etc/x"}, PDCBB_ERR_CONFIG,
         "key 'drain': '/etc/x' is not under an allowed drain root (/scratch)"},
        {{"drain_roots=/scratch", "drain=/scratchy/x"}, PDCBB_ERR_CONFIG,
         "key 'drain': '/scratchy/x' is not under an allowed drain root"},
        {{"drain_roots=/scratch", "drain=/scratch/../etc"}, PDCBB_ERR_CONFIG,
         "key 'drain': '/scratch/../etc' (that is, /etc) is not under an allowed drain root "
         "(/scratch)"},
        {{"drain_roots=/scratch", "drain=/scratch/a/../../etc"}, PDCBB_ERR_CONFIG,
         "(that is, /etc)"},
        {{"drain_roots=/scratch", "drain=/scratch/.."}, PDCBB_ERR_CONFIG, "(that is, /)"},
        {{"drain_roots=/scratch", "drain=/../scratch/x"}, PDCBB_OK, ""},
        {{"drain_roots=/scratch/,/project/./x", "drain=/project/x/y"}, PDCBB_OK, ""},
        {{"drain_roots=/scratch/,/project/./x", "drain=/project/y"}, PDCBB_ERR_CONFIG,
         "not under an allowed drain root (/scratch/, /project/./x)"},
        {{"drain_roots=/scratch/a/..", "drain=/scratch/b"}, PDCBB_OK, ""},
        {{"drain_roots=/scratch", "drain=/scratch/x", "stage_in=/etc/passwd"}, PDCBB_ERR_CONFIG,
         "key 'stage_in': '/etc/passwd' is not under an allowed drain root"},
        {{"drain_roots=/scratch", "stage_in=/scratch/old/job42"}, PDCBB_OK, ""},
        {{"drain_roots=/", "drain=/anything/at/all"}, PDCBB_OK, ""},
        {{"drain=/anywhere", "stage_in=/elsewhere"}, PDCBB_OK, ""},
    };
    pdcbb_config_t c;

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        ctx_set("validate row %zu (%s, %s, %s)", i, rows[i].set[0],
                rows[i].set[1] ? rows[i].set[1] : "", rows[i].set[2] ? rows[i].set[2] : "");
        pdcbb_config_init(&c);
        for (int j = 0; j < 4 && rows[i].set[j] != NULL; j++) {
            char kv[256], *eq;
            snprintf(kv, sizeof(kv), "%s", rows[i].set[j]);
            eq = strchr(kv, '=');
            *eq = '\0';
            CHECK_ERR(pdcbb_config_set(&c, kv, eq + 1, PDCBB_SCOPE_JOB, "setup", g_err,
                                       sizeof(g_err)),
                      PDCBB_OK);
        }
        reset_err();
        CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), rows[i].rc);
        if (rows[i].rc != PDCBB_OK)
            CHECK_HAS(g_err, rows[i].msg);
    }

    /* values placed by code, bypassing set() */
    ctx_set("validate relative drain");
    pdcbb_config_init(&c);
    snprintf(c.drain, sizeof(c.drain), "rel/x");
    reset_err();
    CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "key 'drain': path 'rel/x' must be absolute");

    ctx_set("validate relative stage_in");
    pdcbb_config_init(&c);
    snprintf(c.stage_in, sizeof(c.stage_in), "in");
    CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "key 'stage_in'");

    ctx_set("validate servers_per_node 0");
    pdcbb_config_init(&c);
    c.servers_per_node = 0;
    CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "key 'servers_per_node'");

    ctx_set("validate request_timeout 0");
    pdcbb_config_init(&c);
    c.request_timeout = 0;
    CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "key 'request_timeout'");

    ctx_set("validate empty local_root");
    pdcbb_config_init(&c);
    c.local_root[0] = '\0';
    CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "key 'local_root'");

    ctx_set("validate bad placement and log level");
    pdcbb_config_init(&c);
    c.placement = (pdcbb_placement_t)9;
    CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "key 'placement'");
    pdcbb_config_init(&c);
    c.log_level = 7;
    CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "key 'log_level'");
    pdcbb_config_init(&c);
    c.n_drain_roots = PDCBB_CONFIG_LIST_MAX + 1;
    CHECK_ERR(pdcbb_config_validate(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "key 'drain_roots'");
    g_ctx[0] = '\0';
}

/* ---------------------------------------------------------------------------------------- */
/* Environment and precedence                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* Unset PDCBB_<KEY> of every key (the ones tests set, and whatever the caller's environment
 * had). */
static void env_clear(void)
{
    size_t nkeys;
    const pdcbb_config_key_t *keys = pdcbb_config_keys(&nkeys);

    for (size_t i = 0; i < nkeys; i++) {
        char var[96];
        unsetenv(pdcbb_config_env_name(&keys[i], var, sizeof(var)));
    }
}

static void test_env(void)
{
    pdcbb_config_t c, before;

    env_clear();
    ctx_set("env: nothing set");
    pdcbb_config_init(&c);
    memcpy(&before, &c, sizeof(c));
    CHECK_ERR(pdcbb_config_apply_env(&c, g_err, sizeof(g_err)), PDCBB_OK);
    CHECK(memcmp(&c, &before, sizeof(c)) == 0);

    ctx_set("env: overrides");
    setenv("PDCBB_LOG_LEVEL", "debug", 1);
    setenv("PDCBB_REQUEST_TIMEOUT", "2m", 1);
    setenv("PDCBB_CONNECT_TIMEOUT", "1.5", 1);
    setenv("PDCBB_CAPACITY", "5G", 1);       /* not an environment key: ignored */
    setenv("PDCBB_LOCAL_ROOT", "/evil", 1);  /* not an environment key: ignored */
    pdcbb_config_init(&c);
    CHECK_ERR(pdcbb_config_apply_env(&c, g_err, sizeof(g_err)), PDCBB_OK);
    CHECK(c.log_level == PDCBB_LOG_DEBUG);
    CHECK(c.request_timeout == 120.0);
    CHECK(c.connect_timeout == 1.5);
    CHECK(c.capacity == GIB);
    CHECK_STR(c.local_root, "/tmp/pdcbb");

    ctx_set("env: empty value counts as unset");
    env_clear();
    setenv("PDCBB_LOG_LEVEL", "", 1);
    pdcbb_config_init(&c);
    CHECK_ERR(pdcbb_config_apply_env(&c, g_err, sizeof(g_err)), PDCBB_OK);
    CHECK(c.log_level == PDCBB_LOG_INFO);

    ctx_set("env: bad log level");
    env_clear();
    setenv("PDCBB_LOG_LEVEL", "loud", 1);
    pdcbb_config_init(&c);
    memcpy(&before, &c, sizeof(c));
    reset_err();
    CHECK_ERR(pdcbb_config_apply_env(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_STR(g_err, "environment: PDCBB_LOG_LEVEL: bad log level 'loud' (use none, error, "
                     "warn, info or debug)");
    CHECK(memcmp(&c, &before, sizeof(c)) == 0);

    ctx_set("env: all or nothing");
    env_clear();
    setenv("PDCBB_LOG_LEVEL", "error", 1);
    setenv("PDCBB_CONNECT_TIMEOUT", "forever", 1);
    pdcbb_config_init(&c);
    memcpy(&before, &c, sizeof(c));
    reset_err();
    CHECK_ERR(pdcbb_config_apply_env(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "environment: PDCBB_CONNECT_TIMEOUT: bad duration 'forever'");
    CHECK(memcmp(&c, &before, sizeof(c)) == 0);

    ctx_set("env: out of range");
    env_clear();
    setenv("PDCBB_REQUEST_TIMEOUT", "0.01", 1);
    pdcbb_config_init(&c);
    CHECK_ERR(pdcbb_config_apply_env(&c, g_err, sizeof(g_err)), PDCBB_ERR_CONFIG);
    CHECK_HAS(g_err, "environment: PDCBB_REQUEST_TIMEOUT: out of range '0.01'");
    env_clear();

    /* defaults < site file < user file < --pdc < environment */
    {
        char site[PATH_MAX], user[PATH_MAX]; /* tmp_write reuses its buffer */
        snprintf(site, sizeof(site), "%s",
                 tmp_write("prec-site.yaml", "capacity: 2G\nlog_level: warn\n"
                                             "servers_per_node: 2\n"
                                             "placement: region_static\n"
                                             "request_timeout: 10\n"));
        snprintf(user, sizeof(user), "%s", tmp_write("prec-user.yaml", "capacity: 3G\n"
                                                                      "servers_per_node: 3\n"));
        ctx_set("precedence");
        reset_err();
        pdcbb_config_init(&c);
        CHECK_ERR(pdcbb_config_load_file(&c, site, PDCBB_SCOPE_SITE, g_err, sizeof(g_err)),
                  PDCBB_OK);
        CHECK_ERR(pdcbb_config_load_file(&c, user, PDCBB_SCOPE_USER, g_err, sizeof(g_err)),
                  PDCBB_OK);
        CHECK_ERR(pdcbb_config_parse_spec(&c, "capacity=4G,log_level=error", g_err,
                                          sizeof(g_err)),
                  PDCBB_OK);
        setenv("PDCBB_LOG_LEVEL", "debug", 1);
        CHECK_ERR(pdcbb_config_apply_env(&c, g_err, sizeof(g_err)), PDCBB_OK);
        env_clear();
        CHECK(c.capacity == 4 * GIB);                       /* --pdc */
        CHECK(c.servers_per_node == 3);                     /* user file */
        CHECK(c.placement == PDCBB_PLACE_REGION_STATIC);    /* site file */
        CHECK(c.request_timeout == 10.0);                   /* site file */
        CHECK(c.log_level == PDCBB_LOG_DEBUG);              /* environment */
        CHECK(c.connect_timeout == 5.0);                    /* default */
    }
    g_ctx[0] = '\0';
}

int main(void)
{
    const char *t = getenv("TMPDIR");

    snprintf(tmpdir, sizeof(tmpdir), "%s/pdcbb-test-config.XXXXXX", t && t[0] ? t : "/tmp");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    env_clear();

    test_defaults();
    test_value_forms();
    test_sizes();
    test_bad_values();
    test_unknown_and_scope();
    test_placement();
    test_spec();
    test_yaml();
    test_validate();
    test_env();

    tmp_cleanup();
    printf("test_config: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed == 0 ? 0 : 1;
}
