/*
 * test_config_keys.c - the configuration table tested by walking it (pdcbb_config_keys()), so a
 * key added to the table is tested without touching this file. For every key:
 *   - its default: what pdcbb_config_init gives, and what docs/CONFIG.md says;
 *   - its bounds, from its type: values just inside are accepted, values just outside refused
 *     by every source that may set the key, with a message that names the key, leaving the
 *     config unchanged;
 *   - every accepted value through every source that may set the key (pdcbb_config_set, a YAML
 *     file, --pdc, PDCBB_<KEY>) gives the same field, and so does printing the config and
 *     loading it again; sources that may not set the key refuse it (--pdc) or ignore it (the
 *     environment);
 *   - all keys away from their defaults at once (with values that need quoting) written as a
 *     job's file and loaded again;
 *   - docs/CONFIG.md has a row for it with its default and scope, and docs/ADMIN.md's site file
 *     sets it to its default (or to a site's own example, for the few keys listed below).
 * The special cases of each source (YAML forms, spec syntax, cross-key checks) are
 * test_config.c's. Temporary files live in one mkdtemp directory under $TMPDIR, removed at the
 * end. Exit status 0 only when every check passed.
 */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdcbb_config.h"
#include "pdcbb_error.h"
#include "pdcbb_log.h"
#include "unit_check.h"

#ifndef PDCBB_SOURCE_DIR
#error "PDCBB_SOURCE_DIR: the top of the source tree (tests/CMakeLists.txt defines it)"
#endif

static const pdcbb_config_key_t *keys;
static size_t nkeys;
static char tmpdir[PATH_MAX];
static char err[PDCBB_CONFIG_ERR_LEN];
static char ctx[PATH_MAX]; /* what is being checked, printed with a failure */

/* CHECK, and on failure the key and value being checked and the last error message. */
#define KCHECK(expr)                                                                               \
    do {                                                                                           \
        int before_ = unit_failures;                                                               \
        CHECK(expr);                                                                               \
        if (unit_failures != before_)                                                              \
            fprintf(stderr, "    while checking %s\n    last message: '%s'\n", ctx, err);          \
    } while (0)

static void ctx_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ctx_set(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof(ctx), fmt, ap);
    va_end(ap);
    err[0] = '\0';
}

/* ---------------------------------------------------------------------------------------- */
/* Fields, files, printed configs                                                             */
/* ---------------------------------------------------------------------------------------- */

static const void *field(const pdcbb_config_t *c, const pdcbb_config_key_t *k)
{
    return (const char *)c + k->offset;
}

/* Do a and b hold the same value of key k? */
static bool field_equal(const pdcbb_config_key_t *k, const pdcbb_config_t *a,
                        const pdcbb_config_t *b)
{
    const void *x = field(a, k), *y = field(b, k);

    switch (k->type) {
    case PDCBB_CFG_SIZE:
        return *(const uint64_t *)x == *(const uint64_t *)y;
    case PDCBB_CFG_UINT:
        return *(const unsigned *)x == *(const unsigned *)y;
    case PDCBB_CFG_SECONDS:
        return *(const double *)x == *(const double *)y;
    case PDCBB_CFG_STRING:
    case PDCBB_CFG_PATH:
        return strcmp(x, y) == 0;
    case PDCBB_CFG_PATH_LIST:
        if (a->n_drain_roots != b->n_drain_roots)
            return false;
        for (int i = 0; i < a->n_drain_roots; i++)
            if (strcmp(a->drain_roots[i], b->drain_roots[i]) != 0)
                return false;
        return true;
    case PDCBB_CFG_PLACEMENT:
        return *(const pdcbb_placement_t *)x == *(const pdcbb_placement_t *)y;
    case PDCBB_CFG_LOG_LEVEL:
        return *(const int *)x == *(const int *)y;
    }
    return false;
}

static const char *tmp_write(const char *name, const char *content)
{
    static char path[PATH_MAX + 64];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    if (f == NULL || fputs(content, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
    return path;
}

/* A whole file, malloc'd and NUL-terminated; exits when it cannot be read. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    long len;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0 || (buf = malloc((size_t)len + 1)) == NULL ||
        fread(buf, 1, (size_t)len, f) != (size_t)len) {
        perror(path);
        exit(2);
    }
    buf[len] = '\0';
    fclose(f);
    return buf;
}

/* The printed config (pdcbb_config_print through a real FILE), malloc'd. */
static char *print_to_string(const pdcbb_config_t *c)
{
    char path[PATH_MAX + 64];
    FILE *f;

    snprintf(path, sizeof(path), "%s/printed.yaml", tmpdir);
    f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    pdcbb_config_print(c, f);
    fclose(f);
    return slurp(path);
}

/* How many lines of text start with "NAME:" (a key's line in YAML). */
static int key_lines(const char *text, const char *name)
{
    size_t n = strlen(name);
    int count = 0;

    for (const char *p = text; p != NULL && *p != '\0';) {
        if (strncmp(p, name, n) == 0 && p[n] == ':')
            count++;
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return count;
}

/* A YAML scalar for text: double-quoted, with escapes; a path list as a flow sequence. */
static void yaml_value(const pdcbb_config_key_t *k, const char *text, char *out, size_t len)
{
    size_t n = 0;
    bool list = k->type == PDCBB_CFG_PATH_LIST;

    if (list)
        out[n++] = '[';
    if (!list || text[0] != '\0')
        out[n++] = '"';
    for (const char *p = text; *p != '\0' && n + 8 < len; p++) {
        unsigned char ch = (unsigned char)*p;
        if (list && ch == ',')
            n += (size_t)snprintf(out + n, len - n, "\", \"");
        else if (ch == '"' || ch == '\\')
            n += (size_t)snprintf(out + n, len - n, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            n += (size_t)snprintf(out + n, len - n, "\\x%02X", ch);
        else
            out[n++] = (char)ch;
    }
    if (!list || text[0] != '\0')
        out[n++] = '"';
    if (list)
        out[n++] = ']';
    out[n] = '\0';
}

/* The scope a site file of this key is loaded with: the site's, or the user's for a key only
 * a user may set (none so far). */
static unsigned file_scope(const pdcbb_config_key_t *k)
{
    return (k->scope & PDCBB_SCOPE_SITE) ? PDCBB_SCOPE_SITE : PDCBB_SCOPE_USER;
}

/* ---------------------------------------------------------------------------------------- */
/* Values just inside and just outside each key's bounds                                      */
/* ---------------------------------------------------------------------------------------- */

typedef struct sample {
    char text[2 * PATH_MAX + PDCBB_CONFIG_LIST_MAX * 8];
    bool ok;
    const char *why; /* refused: a part of the message after "key 'NAME': " */
} sample_t;

#define SAMPLES_MAX 32

static sample_t *add(sample_t *s, size_t *n, bool ok, const char *why, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static sample_t *add(sample_t *s, size_t *n, bool ok, const char *why, const char *fmt, ...)
{
    va_list ap;
    sample_t *x = &s[*n];

    if (*n == SAMPLES_MAX) {
        fprintf(stderr, "SAMPLES_MAX too small\n");
        exit(2);
    }
    va_start(ap, fmt);
    vsnprintf(x->text, sizeof(x->text), fmt, ap);
    va_end(ap);
    x->ok = ok;
    x->why = why;
    (*n)++;
    return x;
}

/* Seconds as text that reads back to exactly d (no exponent for any bound a key may have). */
static void seconds_text(double d, char *out, size_t len)
{
    snprintf(out, len, "%.17g", d);
}

/* A text of len bytes: "/" and 'a's for a path, 'a's for a string. */
static void filler(char *out, size_t len, bool path)
{
    memset(out, 'a', len);
    if (path && len > 0)
        out[0] = '/';
    out[len] = '\0';
}

/*
 * A key with a check function of its own (an IP address, a user, ...) accepts values no type
 * can make up: one it accepts, other than its default, and one it refuses. Every such key
 * needs a row (test_every_key fails without one).
 */
static const struct {
    const char *key, *good, *bad;
} check_samples[] = {
    {"ucx_tls", "rc_x,sm,self", "cma tcp"},
    {"ucx_net_devices", "mlx5_0:1", "mlx5_0 1"},
    {"listen_address", "fe80::1", "eth0"},
    {"rendezvous_dir", "~/.pdcbb-elsewhere", "relative/dir"},
    {"stage_in_owner", "0", "no such user"},
};

/* The values to try on key k, each accepted or refused, from its type and bounds. */
static size_t key_samples(const pdcbb_config_key_t *k, sample_t *s)
{
    size_t n = 0;
    char a[64];

    switch (k->type) {
    case PDCBB_CFG_SIZE:
        add(s, &n, true, NULL, "%s", pdcbb_format_size(k->umin, a, sizeof(a)));
        if (k->umin > 0)
            add(s, &n, false, "is below the minimum", "%llu", (unsigned long long)k->umin - 1);
        else
            add(s, &n, false, "bad size '-1'", "-1");
        add(s, &n, true, NULL, "%s", pdcbb_format_size(k->umax, a, sizeof(a)));
        if (k->umax < UINT64_MAX)
            add(s, &n, false, "is above the maximum", "%llu", (unsigned long long)k->umax + 1);
        else
            add(s, &n, false, "(too large)", "18446744073709551616");
        add(s, &n, false, "bad size '12Q'", "12Q");
        break;
    case PDCBB_CFG_UINT:
        add(s, &n, true, NULL, "%llu", (unsigned long long)k->umin);
        if (k->umin > 0)
            add(s, &n, false, "out of range", "%llu", (unsigned long long)k->umin - 1);
        else
            add(s, &n, false, "bad number '-1'", "-1");
        add(s, &n, true, NULL, "%llu", (unsigned long long)k->umax);
        add(s, &n, false, "out of range", "%llu", (unsigned long long)k->umax + 1);
        add(s, &n, false, "bad number 'x'", "x");
        break;
    case PDCBB_CFG_SECONDS:
        seconds_text(k->dmin, a, sizeof(a));
        add(s, &n, true, NULL, "%s", a);
        if (k->dmin > 0) {
            seconds_text(nextafter(k->dmin, 0), a, sizeof(a));
            add(s, &n, false, "out of range", "%s", a);
        } else {
            add(s, &n, false, "bad duration '-1'", "-1");
        }
        seconds_text(k->dmax, a, sizeof(a));
        add(s, &n, true, NULL, "%s", a);
        seconds_text(nextafter(k->dmax, INFINITY), a, sizeof(a));
        add(s, &n, false, "out of range", "%s", a);
        add(s, &n, false, "bad duration 'soon'", "soon");
        break;
    case PDCBB_CFG_STRING:
    case PDCBB_CFG_PATH: {
        bool path = k->type == PDCBB_CFG_PATH;
        sample_t *x;
        for (size_t i = 0; k->values != NULL && k->values[i] != NULL; i++)
            add(s, &n, true, NULL, "%s", k->values[i]);
        for (size_t i = 0; i < sizeof(check_samples) / sizeof(check_samples[0]); i++) {
            if (strcmp(check_samples[i].key, k->name) != 0)
                continue;
            add(s, &n, true, NULL, "%s", check_samples[i].good);
            add(s, &n, false, "bad value '", "%s", check_samples[i].bad);
        }
        if (k->values != NULL) /* the message lists the values (check_refused) */
            add(s, &n, false, "(use ", "x");
        /* the longest value the field holds, when nothing else refuses it */
        x = add(s, &n, true, NULL, "%s", "");
        filler(x->text, k->size - 1, path);
        if (k->values != NULL || (k->check != NULL && k->check(x->text) != NULL))
            n--;
        x = add(s, &n, false, "too long", "%s", "");
        filler(x->text, k->size, path);
        add(s, &n, !(k->flags & PDCBB_CFG_F_REQUIRED), "may not be empty", "%s", "");
        if (k->flags & PDCBB_CFG_F_ABSOLUTE)
            add(s, &n, false, "must be absolute", "relative/x");
        add(s, &n, false, "contains a control character", "%s\x01", path ? "/" : "a");
        break;
    }
    case PDCBB_CFG_PATH_LIST: {
        sample_t *x = add(s, &n, true, NULL, "%s", "");
        for (int i = 0; i < PDCBB_CONFIG_LIST_MAX; i++)
            snprintf(x->text + strlen(x->text), sizeof(x->text) - strlen(x->text), "%s/r%d",
                     i ? "," : "", i);
        add(s, &n, false, "too many entries", "%s,/one-more", x->text);
        add(s, &n, true, NULL, "%s", "");
        x = add(s, &n, true, NULL, "%s", "");
        filler(x->text, PATH_MAX - 1, true);
        x = add(s, &n, false, "too long", "%s", "");
        filler(x->text, PATH_MAX, true);
        if (k->flags & PDCBB_CFG_F_ABSOLUTE)
            add(s, &n, false, "must be absolute", "/a,relative");
        add(s, &n, false, "entry 2 is empty", "/a,,/b");
        break;
    }
    case PDCBB_CFG_PLACEMENT:
        for (int p = 0; strcmp(pdcbb_placement_name((pdcbb_placement_t)p), "unknown") != 0; p++)
            add(s, &n, true, NULL, "%s", pdcbb_placement_name((pdcbb_placement_t)p));
        add(s, &n, false, "bad placement 'nowhere'", "nowhere");
        break;
    case PDCBB_CFG_LOG_LEVEL:
        for (int l = PDCBB_LOG_NONE; l <= PDCBB_LOG_DEBUG; l++)
            add(s, &n, true, NULL, "%s", pdcbb_log_level_name((pdcbb_log_level_t)l));
        add(s, &n, false, "bad log level 'loud'", "loud");
        break;
    }
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* One value through every source                                                             */
/* ---------------------------------------------------------------------------------------- */

static pdcbb_config_t c_init, c_set, c_other, c_before;

/* Load "NAME: VALUE" as a YAML file into c (from the defaults). */
static pdcbb_err_t load_yaml(const pdcbb_config_key_t *k, const char *text, unsigned scope,
                             pdcbb_config_t *c, const char **path)
{
    static char yaml[sizeof(((sample_t *)0)->text) * 3];
    size_t n = (size_t)snprintf(yaml, sizeof(yaml), "%s: ", k->name);

    yaml_value(k, text, yaml + n, sizeof(yaml) - n - 2);
    strcat(yaml, "\n");
    *path = tmp_write("one-key.yaml", yaml);
    pdcbb_config_init(c);
    return pdcbb_config_load_file(c, *path, scope, err, sizeof(err));
}

/* A spec can carry the value: not empty, no comma (the item separator). */
static bool spec_can_carry(const char *text)
{
    return text[0] != '\0' && strchr(text, ',') == NULL;
}

static pdcbb_err_t apply_spec(const pdcbb_config_key_t *k, const char *text, pdcbb_config_t *c)
{
    static char spec[sizeof(((sample_t *)0)->text) + 128];

    snprintf(spec, sizeof(spec), "%s=%s", k->name, text);
    pdcbb_config_init(c);
    return pdcbb_config_parse_spec(c, spec, err, sizeof(err));
}

static pdcbb_err_t apply_env(const pdcbb_config_key_t *k, const char *text, pdcbb_config_t *c)
{
    char var[96];
    pdcbb_err_t rc;

    pdcbb_config_env_name(k, var, sizeof(var));
    setenv(var, text, 1);
    pdcbb_config_init(c);
    rc = pdcbb_config_apply_env(c, err, sizeof(err));
    unsetenv(var);
    return rc;
}

/* An accepted value: the same field from every source that may set the key, and back. */
static void check_accepted(const pdcbb_config_key_t *k, const char *text)
{
    const char *path;
    char *printed;

    pdcbb_config_init(&c_set);
    KCHECK(pdcbb_config_set(&c_set, k->name, text, PDCBB_SCOPE_JOB, "test", err, sizeof(err)) ==
           PDCBB_OK);

    KCHECK(load_yaml(k, text, file_scope(k), &c_other, &path) == PDCBB_OK);
    KCHECK(field_equal(k, &c_set, &c_other));

    if (spec_can_carry(text)) {
        pdcbb_err_t rc = apply_spec(k, text, &c_other);
        if (k->scope & PDCBB_SCOPE_USER) {
            KCHECK(rc == PDCBB_OK);
            KCHECK(field_equal(k, &c_set, &c_other));
        } else {
            KCHECK(rc == PDCBB_ERR_CONFIG);
            KCHECK(strstr(err, "may only be set in") != NULL && strstr(err, k->name) != NULL);
        }
        if ((k->flags & PDCBB_CFG_F_SWITCH) && strcmp(text, "yes") == 0) {
            pdcbb_config_init(&c_other);
            KCHECK(pdcbb_config_parse_spec(&c_other, k->name, err, sizeof(err)) == PDCBB_OK);
            KCHECK(field_equal(k, &c_set, &c_other));
        }
    }
    if (text[0] != '\0') { /* an empty variable counts as unset */
        KCHECK(apply_env(k, text, &c_other) == PDCBB_OK);
        if (k->scope & PDCBB_SCOPE_ENV)
            KCHECK(field_equal(k, &c_set, &c_other));
        else
            KCHECK(memcmp(&c_other, &c_init, sizeof(c_init)) == 0); /* ignored */
    }

    /* printed once, and loaded back to the same value */
    printed = print_to_string(&c_set);
    KCHECK(key_lines(printed, k->name) == 1);
    path = tmp_write("printed-back.yaml", printed);
    free(printed);
    pdcbb_config_init(&c_other);
    KCHECK(pdcbb_config_load_file(&c_other, path, PDCBB_SCOPE_JOB, err, sizeof(err)) == PDCBB_OK);
    KCHECK(field_equal(k, &c_set, &c_other));
}

/* A refused value: refused by every source that may carry it, naming the key, changing nothing. */
static void check_refused(const pdcbb_config_key_t *k, const sample_t *x)
{
    char want[256], var[96];
    const char *path;

    snprintf(want, sizeof(want), "test: key '%s': ", k->name);
    pdcbb_config_init(&c_set);
    memcpy(&c_before, &c_set, sizeof(c_set));
    KCHECK(pdcbb_config_set(&c_set, k->name, x->text, PDCBB_SCOPE_JOB, "test", err, sizeof(err)) ==
           PDCBB_ERR_CONFIG);
    KCHECK(strncmp(err, want, strlen(want)) == 0);
    KCHECK(strstr(err, x->why) != NULL);
    for (size_t i = 0; x->why[0] == '(' && k->values != NULL && k->values[i] != NULL; i++)
        KCHECK(strstr(err, k->values[i]) != NULL);
    KCHECK(memcmp(&c_set, &c_before, sizeof(c_set)) == 0);

    /* a file: "FILE:1: key 'NAME': ..." */
    KCHECK(load_yaml(k, x->text, file_scope(k), &c_other, &path) == PDCBB_ERR_CONFIG);
    snprintf(want, sizeof(want), "%s:1: key '%s': ", path, k->name);
    KCHECK(strncmp(err, want, strlen(want)) == 0);
    KCHECK(memcmp(&c_other, &c_init, sizeof(c_init)) == 0);

    if ((k->scope & PDCBB_SCOPE_USER) && spec_can_carry(x->text)) {
        KCHECK(apply_spec(k, x->text, &c_other) == PDCBB_ERR_CONFIG);
        snprintf(want, sizeof(want), "--pdc: key '%s': ", k->name);
        KCHECK(strncmp(err, want, strlen(want)) == 0);
        KCHECK(memcmp(&c_other, &c_init, sizeof(c_init)) == 0);
    }
    if ((k->scope & PDCBB_SCOPE_ENV) && x->text[0] != '\0') {
        KCHECK(apply_env(k, x->text, &c_other) == PDCBB_ERR_CONFIG);
        pdcbb_config_env_name(k, var, sizeof(var));
        snprintf(want, sizeof(want), "environment: %s: ", var);
        KCHECK(strncmp(err, want, strlen(want)) == 0);
        KCHECK(memcmp(&c_other, &c_init, sizeof(c_init)) == 0);
    }
}

static void test_every_key(void)
{
    static sample_t s[SAMPLES_MAX];
    char *printed;

    pdcbb_config_init(&c_init);
    ctx_set("the defaults");
    KCHECK(pdcbb_config_validate(&c_init, err, sizeof(err)) == PDCBB_OK);
    printed = print_to_string(&c_init);
    for (size_t i = 0; i < nkeys; i++) {
        const pdcbb_config_key_t *k = &keys[i];
        size_t n = key_samples(k, s);
        bool differs = false; /* some accepted value is not the default */

        ctx_set("key %s: printed once", k->name);
        KCHECK(key_lines(printed, k->name) == 1);
        if (k->check != NULL) {
            bool row = false;
            for (size_t j = 0; j < sizeof(check_samples) / sizeof(check_samples[0]); j++)
                row |= strcmp(check_samples[j].key, k->name) == 0;
            ctx_set("key %s has a check function: check_samples has a row of it", k->name);
            KCHECK(row);
        }
        for (size_t j = 0; j < n; j++) {
            ctx_set("key %s = '%.60s'%s (%s)", k->name, s[j].text,
                    strlen(s[j].text) > 60 ? "..." : "", s[j].ok ? "accepted" : "refused");
            if (!s[j].ok) {
                check_refused(k, &s[j]);
                continue;
            }
            check_accepted(k, s[j].text);
            /* the default comes back when given again after this value */
            ctx_set("key %s: its default '%s' after '%.40s'", k->name, k->def, s[j].text);
            differs |= !field_equal(k, &c_set, &c_init);
            KCHECK(pdcbb_config_set(&c_set, k->name, k->def, PDCBB_SCOPE_JOB, "test", err,
                                    sizeof(err)) == PDCBB_OK);
            KCHECK(field_equal(k, &c_set, &c_init));
        }
        ctx_set("key %s: a value other than the default is accepted", k->name);
        KCHECK(differs);
    }
    free(printed);
}

static bool all_equal(const pdcbb_config_t *a, const pdcbb_config_t *b)
{
    bool same = true;
    for (size_t i = 0; i < nkeys; i++)
        same &= field_equal(&keys[i], a, b);
    return same;
}

/*
 * Every key away from its default at once (the last accepted sample that differs), and values
 * that need quoting in YAML or exact printing, written as the job's file (pdcbb_config_write_file)
 * and loaded again.
 */
static void test_whole_config(void)
{
    static sample_t s[SAMPLES_MAX];
    static pdcbb_config_t all, back;
    char path[PATH_MAX + 64];
    struct stat st;
    DIR *d;
    struct dirent *e;
    int leftovers = 0;

    pdcbb_config_init(&all);
    for (size_t i = 0; i < nkeys; i++) {
        size_t n = key_samples(&keys[i], s);
        for (size_t j = n; j-- > 0;) {
            if (!s[j].ok)
                continue;
            pdcbb_config_set(&all, keys[i].name, s[j].text, PDCBB_SCOPE_JOB, "t", NULL, 0);
            if (!field_equal(&keys[i], &all, &c_init))
                break;
        }
    }
    snprintf(all.local_root, sizeof(all.local_root), "/tmp/x y/#not a comment: 'q'");
    all.n_drain_roots = 3;
    snprintf(all.drain_roots[0], PATH_MAX, "/scratch");
    snprintf(all.drain_roots[1], PATH_MAX, "/with, comma");
    snprintf(all.drain_roots[2], PATH_MAX, "/quote\"and\\backslash");
    snprintf(all.drain, sizeof(all.drain), "/scratch/run: [1] {a} & *b ! %% @ `c` 'd' \"e\"");
    snprintf(all.stage_in, sizeof(all.stage_in), "/scratch/\xc3\xa9t\xc3\xa9");
    all.max_capacity = 100 * (1ull << 30) + 512;
    all.lmdb_map_size = 3 * (1ull << 20) + 4096;
    all.stop_timeout = 1.0 / 3.0;
    all.connect_timeout = 2.75;

    snprintf(path, sizeof(path), "%s/job-config.yaml", tmpdir);
    ctx_set("every key away from its default, written and loaded again");
    KCHECK(pdcbb_config_write_file(&all, path) == PDCBB_OK);
    KCHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    pdcbb_config_init(&back);
    KCHECK(pdcbb_config_load_file(&back, path, PDCBB_SCOPE_JOB, err, sizeof(err)) == PDCBB_OK);
    for (size_t i = 0; i < nkeys; i++) {
        ctx_set("key %s in the whole config", keys[i].name);
        KCHECK(!field_equal(&keys[i], &all, &c_init));
        KCHECK(field_equal(&keys[i], &all, &back));
    }
    ctx_set("the whole config read as a site file (every key is a site key), not a user file");
    pdcbb_config_init(&back);
    KCHECK(pdcbb_config_load_file(&back, path, PDCBB_SCOPE_SITE, err, sizeof(err)) == PDCBB_OK);
    KCHECK(all_equal(&all, &back));
    KCHECK(pdcbb_config_load_file(&back, path, PDCBB_SCOPE_USER, err, sizeof(err)) ==
           PDCBB_ERR_CONFIG);

    ctx_set("the defaults written over it and loaded");
    KCHECK(pdcbb_config_write_file(&c_init, path) == PDCBB_OK);
    KCHECK(pdcbb_config_load_file(&all, path, PDCBB_SCOPE_JOB, err, sizeof(err)) == PDCBB_OK);
    KCHECK(all_equal(&all, &c_init));

    ctx_set("no temporary files left");
    d = opendir(tmpdir);
    while (d != NULL && (e = readdir(d)) != NULL)
        leftovers += strstr(e->d_name, ".tmp.") != NULL;
    if (d != NULL)
        closedir(d);
    KCHECK(d != NULL && leftovers == 0);

    ctx_set("writing into a missing directory, to no name, no config");
    KCHECK(pdcbb_config_write_file(&all, "/nonexistent/pdcbb/config.yaml") == PDCBB_ERR_NOT_FOUND);
    KCHECK(pdcbb_config_write_file(&all, "") == PDCBB_ERR_INVAL);
    KCHECK(pdcbb_config_write_file(NULL, path) == PDCBB_ERR_INVAL);
}

/* ---------------------------------------------------------------------------------------- */
/* The documentation                                                                          */
/* ---------------------------------------------------------------------------------------- */

/* The text between the line "## TITLE" and the next "## " heading (cut in place). */
static char *section(char *doc, const char *title)
{
    char head[128], *p, *end;

    snprintf(head, sizeof(head), "\n## %s\n", title);
    p = strstr(doc, head);
    if (p == NULL)
        return NULL;
    p += strlen(head);
    end = strstr(p, "\n## ");
    if (end != NULL)
        end[1] = '\0';
    return p;
}

/* Cell i (0: the first) of a table row "| a | b | ...", trimmed, into out. */
static bool cell(const char *row, int i, char *out, size_t len)
{
    const char *p = row, *end;

    for (int j = 0; j <= i; j++) {
        p = strchr(p, '|');
        if (p == NULL)
            return false;
        p++;
    }
    end = strchr(p, '|');
    if (end == NULL)
        return false;
    while (*p == ' ')
        p++;
    while (end > p && end[-1] == ' ')
        end--;
    snprintf(out, len, "%.*s", (int)(end - p), p);
    return true;
}

/* The scope column of docs/CONFIG.md: "site", "site, user", "site, user, env `PDCBB_X`". */
static void scope_text(const pdcbb_config_key_t *k, char *out, size_t len)
{
    char var[96];
    size_t n = (size_t)snprintf(out, len, "site");

    if (k->scope & PDCBB_SCOPE_USER)
        n += (size_t)snprintf(out + n, len - n, ", user");
    if (k->scope & PDCBB_SCOPE_ENV) {
        pdcbb_config_env_name(k, var, sizeof(var));
        snprintf(out + n, len - n, ", env `%s`", var);
    }
}

/* docs/CONFIG.md's default column: `VALUE` (the same value as the default), "empty" (the
 * default is ""), or words naming the default's last path component (a path fixed when pdcbb
 * is built). */
static void check_doc_default(const pdcbb_config_key_t *k, const char *doc)
{
    size_t len = strlen(doc);
    static pdcbb_config_t c;

    if (strcmp(doc, "empty") == 0) {
        KCHECK(k->def[0] == '\0');
    } else if (len >= 2 && doc[0] == '`' && strchr(doc + 1, '`') == doc + len - 1) {
        char value[256];
        snprintf(value, sizeof(value), "%.*s", (int)(len - 2), doc + 1);
        pdcbb_config_init(&c);
        KCHECK(pdcbb_config_set(&c, k->name, value, PDCBB_SCOPE_JOB, "docs/CONFIG.md", err,
                                sizeof(err)) == PDCBB_OK);
        KCHECK(field_equal(k, &c, &c_init));
    } else {
        const char *base = strrchr(k->def, '/');
        char want[128];
        snprintf(want, sizeof(want), "`%s`", base ? base + 1 : k->def);
        KCHECK(base != NULL && strstr(doc, want) != NULL);
    }
}

/* docs/CONFIG.md, "## Keys": a row per key, no row of another name, with the default and scope
 * of the table. */
static void test_config_md(void)
{
    char *doc = slurp(PDCBB_SOURCE_DIR "/docs/CONFIG.md");
    char *sec = section(doc, "Keys");
    int rows[64] = {0};
    char name[128], text[1024], want[256];

    ctx_set("docs/CONFIG.md has a section 'Keys'");
    KCHECK(sec != NULL && nkeys <= sizeof(rows) / sizeof(rows[0]));
    for (char *line = sec; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        if (nl != NULL)
            *nl = '\0';
        if (strncmp(line, "| `", 3) == 0 && cell(line, 0, name, sizeof(name))) {
            const pdcbb_config_key_t *k;
            memmove(name, name + 1, strlen(name)); /* `name` -> name */
            name[strcspn(name, "`")] = '\0';
            ctx_set("docs/CONFIG.md's row of '%s'", name);
            k = pdcbb_config_key_find(name);
            KCHECK(k != NULL); /* no row of a key the table does not have */
            if (k != NULL) {
                rows[k - keys]++;
                KCHECK(cell(line, 2, text, sizeof(text)));
                check_doc_default(k, text);
                scope_text(k, want, sizeof(want));
                KCHECK(cell(line, 4, text, sizeof(text)) && strcmp(text, want) == 0);
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    for (size_t i = 0; i < nkeys; i++) {
        ctx_set("docs/CONFIG.md has one row of key %s", keys[i].name);
        KCHECK(rows[i] == 1);
    }
    free(doc);
}

/* docs/ADMIN.md, "## The site file": its YAML block sets every key once, to its default, but
 * for these, where it shows a site's own values. */
static const char *const admin_examples[] = {"local_root", "max_capacity", "drain_roots",
                                             "daemon_path", "mount_path"};

static void test_admin_md(void)
{
    char *doc = slurp(PDCBB_SOURCE_DIR "/docs/ADMIN.md");
    char *sec = section(doc, "The site file");
    char *yaml = sec ? strstr(sec, "```yaml\n") : NULL;
    char *end = yaml ? strstr(yaml + 8, "\n```") : NULL;
    static pdcbb_config_t site;

    ctx_set("docs/ADMIN.md's site file: a ```yaml block in 'The site file'");
    KCHECK(end != NULL);
    if (end == NULL) {
        free(doc);
        return;
    }
    yaml += 8;
    end[1] = '\0';
    ctx_set("docs/ADMIN.md's site file loads");
    pdcbb_config_init(&site);
    KCHECK(pdcbb_config_load_file(&site, tmp_write("admin-site.yaml", yaml), PDCBB_SCOPE_SITE, err,
                                  sizeof(err)) == PDCBB_OK);
    for (size_t i = 0; i < nkeys; i++) {
        bool example = false;
        for (size_t j = 0; j < sizeof(admin_examples) / sizeof(admin_examples[0]); j++)
            example |= strcmp(admin_examples[j], keys[i].name) == 0;
        ctx_set("docs/ADMIN.md's site file sets key %s once%s", keys[i].name,
                example ? "" : ", to its default");
        KCHECK(key_lines(yaml, keys[i].name) == 1);
        if (!example)
            KCHECK(field_equal(&keys[i], &site, &c_init));
    }
    free(doc);
}

/* ---------------------------------------------------------------------------------------- */

static void tmp_cleanup(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    char path[PATH_MAX + 300];

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", tmpdir, e->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    rmdir(tmpdir);
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    char var[96];

    snprintf(tmpdir, sizeof(tmpdir), "%s/pdcbb-test-config-keys.XXXXXX", t && t[0] ? t : "/tmp");
    if (mkdtemp(tmpdir) == NULL) {
        perror(tmpdir);
        return 2;
    }
    keys = pdcbb_config_keys(&nkeys);
    CHECK(keys != NULL && nkeys > 0);
    for (size_t i = 0; i < nkeys; i++) { /* whatever the caller's environment sets */
        pdcbb_config_env_name(&keys[i], var, sizeof(var));
        unsetenv(var);
    }

    test_every_key();
    test_whole_config();
    test_config_md();
    test_admin_md();

    tmp_cleanup();
    UNIT_DONE("test_config_keys");
}
