/*
 * cmd_kv.c - `pdcbb kv`: the KV objects of a drained job (or of a migration, PDCkv_migrate),
 * docs/DRAIN-FORMAT.md "KV objects":
 *   pdcbb kv ls DIR                         the KV objects
 *   pdcbb kv keys DIR KV [--tag T] [--offset N] [--count N]   keys visible at a tag
 *   pdcbb kv get DIR KV KEY [--tag T] [--hex]                  one value
 *   pdcbb kv export DIR KV [--format jsonl|csv] [-o FILE] [--tag T | --all-versions]
 * Gets and lists follow the live store's semantics (the newest version with tag <= T, deletion
 * markers hide a key); the view of a KV object is loaded from its dumps, every block's
 * CRC-32C checked. Export: JSON Lines or CSV; keys and values that are not UTF-8 text (or hold
 * a NUL byte) are written in base64, and each record says which encoding it used.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_data.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_kv.h"
#include "pdcbb_name.h"

static void kv_usage(FILE *out)
{
    fprintf(out,
            "Usage: pdcbb kv ls [--partial] [--owner USER] [--job ID] DIR\n"
            "       pdcbb kv keys [OPTIONS] DIR KV\n"
            "       pdcbb kv get [OPTIONS] DIR KV KEY\n"
            "       pdcbb kv export [OPTIONS] DIR KV\n"
            "\n"
            "The KV objects (PDCkv_*) of a drained job. DIR is a drain directory (or a\n"
            "destination holding exactly one), or a migration directory written by\n"
            "PDCkv_migrate (DRAIN/kv-migrate/...). KV is a KV object's name, or\n"
            "CONTAINER/NAME when several containers hold one of that name.\n"
            "\n"
            "  ls      list the KV objects: container, name, key type, sharding, shards,\n"
            "          records (every version) and keys visible at the latest tag, then the\n"
            "          migrations in the drain directory (migration: PATH)\n"
            "  keys    the keys visible at --tag, in key order, one per line: KEY TAB TAG\n"
            "          (the tag of the version a get would return)\n"
            "  get     the value of KEY at --tag on standard output (raw bytes, or --hex)\n"
            "  export  every key visible at --tag (or every version) as JSON Lines or CSV\n"
            "\n"
            "KEY is parsed as the object's key type: STRING the text itself, INT a decimal\n"
            "integer, FLOAT a number. A tag is an integer from 0 to 1152921504606846975\n"
            "(PDC_KV_MAXTAG) or 'max' (the default: the latest versions).\n"
            "\n"
            "Options:\n"
            "  -t, --tag T          the tag to read at (default max)\n"
            "      --offset N       keys: skip the first N visible keys\n"
            "      --count N        keys: at most N keys\n"
            "  -x, --hex            get: the value in hex (two digits a byte) and a newline\n"
            "  -f, --format FMT     export: jsonl (default) or csv\n"
            "  -o, --output FILE    export, get: write to FILE instead of standard output\n"
            "  -a, --all-versions   export: every stored version, deletion markers included\n"
            "      --progress       export: show progress on standard error (default: only\n"
            "                       on a terminal)\n"
            "  -p, --partial        read an incomplete drain\n"
            CMD_READ_HELP
            "  -h, --help           show this help\n"
            "\n"
            "Export records: key, key_encoding (utf8, base64, int or float), tag,\n"
            "value_encoding (utf8 or base64), value, and with --all-versions deleted (a\n"
            "deletion marker has an empty value). A value (or string key) is written as text\n"
            "when it is valid UTF-8 without NUL bytes, else in base64 (RFC 4648). JSON Lines:\n"
            "one object per line, INT and FLOAT keys as numbers (infinities as 1e999 and\n"
            "-1e999). CSV: RFC 4180 with a header line key,key_encoding,tag,value_encoding,value\n"
            "(,deleted).\n"
            "\n"
            "Exit status: 0 ok; 1 no such KV object or key, a bad dump, or an I/O error;\n"
            "2 bad command line (an unparseable key or tag included).\n");
}


/* "max" or 0..PDCBB_KV_TAG_MAX */
static int kv_parse_tag(const char *s, uint64_t *out)
{
    if (strcmp(s, "max") == 0 || strcmp(s, "MAX") == 0 || strcmp(s, "MAXTAG") == 0) {
        *out = PDCBB_KV_TAG_MAX;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v > PDCBB_KV_TAG_MAX) {
        fprintf(stderr, "pdcbb kv: bad tag '%s' (expected an integer from 0 to %llu, or max)\n",
                s, (unsigned long long)PDCBB_KV_TAG_MAX);
        return -1;
    }
    *out = v;
    return 0;
}

static int kv_parse_count(const char *opt, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0) {
        fprintf(stderr, "pdcbb kv: bad value for %s: '%s' (expected a non-negative integer)\n",
                opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* KV is NAME or CONTAINER/NAME (the longest container prefix that names one). */
static const pdcbb_drain_kv_t *kv_find(const pdcbb_drain_t *m, const char *spec)
{
    int amb = 0;
    const pdcbb_drain_kv_t *k = pdcbb_drain_find_kv(m, NULL, spec, &amb);
    if (k != NULL)
        return k;
    if (!amb) {
        for (const char *p = strrchr(spec, '/'); p != NULL && p > spec;) {
            char cont[1024];
            snprintf(cont, sizeof(cont), "%.*s", (int)(p - spec), spec);
            if ((k = pdcbb_drain_find_kv(m, cont, p + 1, NULL)) != NULL)
                return k;
            const char *q = p - 1;
            while (q > spec && *q != '/')
                q--;
            p = *q == '/' ? q : NULL;
        }
    }
    if (amb) {
        fprintf(stderr, "pdcbb kv: several containers hold a KV object '%s':", pdcbb_esc(spec));
        for (uint32_t i = 0; i < m->nkvs; i++)
            if (strcmp(m->kvs[i].name, spec) == 0)
                fprintf(stderr, " %s/%s", m->kvs[i].container, spec);
        fprintf(stderr, " (give CONTAINER/NAME)\n");
    } else {
        fprintf(stderr, "pdcbb kv: unknown KV object '%s' in %s (%" PRIu32
                        " KV objects; see pdcbb kv ls %s)\n",
                spec, m->dir, m->nkvs, m->dir);
    }
    return NULL;
}

static pdcbb_kv_view_t *kv_load(const pdcbb_drain_t *m, const pdcbb_drain_kv_t *k)
{
    char err[PDCBB_DRAIN_ERR_LEN + 256] = "";
    pdcbb_kv_view_t *v = NULL;
    pdcbb_err_t rc = pdcbb_drain_kv_view_open(m, k, &v, err, sizeof(err));
    if (rc != PDCBB_OK) {
        fprintf(stderr, "pdcbb kv: KV object '%s': %s\n", pdcbb_esc(k->name),
                err[0] ? err : pdcbb_strerror(rc));
        return NULL;
    }
    return v;
}

/* ---- output ---- */

typedef struct kv_out {
    FILE *f;
    const char *path;     /* NULL: stdout */
    char tmp[4200];
    int failed;
} kv_out_t;

static int kv_out_open(kv_out_t *o, const char *path)
{
    memset(o, 0, sizeof(*o));
    if (path == NULL || strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    o->path = path;
    snprintf(o->tmp, sizeof(o->tmp), "%s.tmp.%ld", path, (long)getpid());
    o->f = fopen(o->tmp, "wbe");
    if (o->f == NULL) {
        fprintf(stderr, "pdcbb kv: cannot create %s: %s\n", o->tmp, strerror(errno));
        return -1;
    }
    return 0;
}

/* Finish: flush, and rename into place (or remove on failure). 0 ok. */
static int kv_out_close(kv_out_t *o, int ok)
{
    int bad = ferror(o->f) || fflush(o->f) != 0;
    if (o->path == NULL) {
        if (bad)
            fprintf(stderr, "pdcbb kv: cannot write standard output: %s\n", strerror(errno));
        return bad || !ok ? 1 : 0;
    }
    if (!bad && ok)
        bad = fsync(fileno(o->f)) != 0;
    if (fclose(o->f) != 0)
        bad = 1;
    if (bad || !ok) {
        if (bad)
            fprintf(stderr, "pdcbb kv: cannot write %s: %s\n", o->tmp, strerror(errno));
        unlink(o->tmp);
        return 1;
    }
    if (rename(o->tmp, o->path) != 0) {
        fprintf(stderr, "pdcbb kv: cannot rename %s to %s: %s\n", o->tmp, o->path,
                strerror(errno));
        unlink(o->tmp);
        return 1;
    }
    return 0;
}

/* Valid UTF-8 (common/pdcbb_name.h: no overlongs, no surrogates, <= U+10FFFF) without NUL
 * bytes. */
static bool kv_is_text(const uint8_t *s, uint64_t n)
{
    if (n == 0)
        return true;
    return (size_t)n == n && memchr(s, 0, (size_t)n) == NULL &&
           pdcbb_utf8_valid(s, (size_t)n, NULL);
}

static void kv_base64(FILE *f, const uint8_t *s, uint64_t n)
{
    static const char tb[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char buf[4096];
    size_t used = 0;
    for (uint64_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        buf[used++] = tb[v >> 18];
        buf[used++] = tb[(v >> 12) & 63];
        buf[used++] = i + 1 < n ? tb[(v >> 6) & 63] : '=';
        buf[used++] = i + 2 < n ? tb[v & 63] : '=';
        if (used > sizeof(buf) - 4) {
            fwrite(buf, 1, used, f);
            used = 0;
        }
    }
    fwrite(buf, 1, used, f);
}

/* A JSON string body (without quotes) of UTF-8 text. */
static void kv_json_text(FILE *f, const uint8_t *s, uint64_t n)
{
    uint64_t run = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        fwrite(s + run, 1, (size_t)(i - run), f);
        run = i + 1;
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default: fprintf(f, "\\u%04x", c); break;
        }
    }
    fwrite(s + run, 1, (size_t)(n - run), f);
}

/* A CSV field of text: quoted when it holds a comma, quote, CR or LF (quotes doubled). */
static void kv_csv_text(FILE *f, const uint8_t *s, uint64_t n)
{
    bool quote = n > 0 && (s[0] == ' ' || s[n - 1] == ' ');
    for (uint64_t i = 0; i < n && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
    if (!quote) {
        fwrite(s, 1, (size_t)n, f);
        return;
    }
    fputc('"', f);
    uint64_t run = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (s[i] == '"') {
            fwrite(s + run, 1, (size_t)(i + 1 - run), f);
            fputc('"', f);
            run = i + 1;
        }
    }
    fwrite(s + run, 1, (size_t)(n - run), f);
    fputc('"', f);
}

static void kv_number_key(FILE *f, uint32_t type, const uint8_t *key, bool json)
{
    if (type == PDCBB_KVK_INT) {
        fprintf(f, "%" PRId64, pdcbb_kv_dec_int(key));
        return;
    }
    double d = pdcbb_kv_dec_float(key);
    if (d > 1.7976931348623157e308)
        fputs(json ? "1e999" : "inf", f);
    else if (d < -1.7976931348623157e308)
        fputs(json ? "-1e999" : "-inf", f);
    else
        fprintf(f, "%.17g", d);
}

typedef struct kv_export {
    FILE *f;
    uint32_t key_type;
    bool csv, versions;
    uint64_t done, total, bytes;
    bool progress, tty;
    double start, last;
} kv_export_t;

static void kv_export_progress(kv_export_t *x, bool final)
{
    if (!x->progress)
        return;
    double now = cli_now();
    if (!final && now - x->last < (x->tty ? 1.0 : 10.0))
        return;
    x->last = now;
    fprintf(stderr, "%spdcbb kv export: %5.1f%% (%" PRIu64 " of %" PRIu64 " records, %.1f MiB)%s",
            x->tty ? "\r" : "", x->total ? 100.0 * (double)x->done / (double)x->total : 100.0,
            x->done, x->total, (double)x->bytes / 1048576.0, (x->tty && !final) ? "" : "\n");
    fflush(stderr);
}

static int kv_export_rec(const pdcbb_kvd_rec_t *r, void *arg)
{
    kv_export_t *x = arg;
    FILE *f = x->f;
    bool deleted = (r->flags & PDCBB_KVR_DELETED) != 0;
    bool num = x->key_type != PDCBB_KVK_STRING;
    const uint8_t *ks = r->key;
    uint64_t kn = num ? 8 : r->klen - 1; /* without the terminator */
    bool ktext = num || kv_is_text(ks, kn);
    bool vtext = kv_is_text(r->value, r->vlen);
    const char *kenc = x->key_type == PDCBB_KVK_INT     ? "int"
                       : x->key_type == PDCBB_KVK_FLOAT ? "float"
                       : ktext                          ? "utf8"
                                                        : "base64";
    if (x->csv) {
        if (num)
            kv_number_key(f, x->key_type, ks, false);
        else if (ktext)
            kv_csv_text(f, ks, kn);
        else
            kv_base64(f, ks, kn);
        fprintf(f, ",%s,%" PRIu64 ",%s,", kenc, r->tag, vtext ? "utf8" : "base64");
        if (vtext)
            kv_csv_text(f, r->value, r->vlen);
        else
            kv_base64(f, r->value, r->vlen);
        if (x->versions)
            fputs(deleted ? ",true" : ",false", f);
        fputs("\r\n", f);
    } else {
        fputs("{\"key\":", f);
        if (num) {
            kv_number_key(f, x->key_type, ks, true);
        } else {
            fputc('"', f);
            if (ktext)
                kv_json_text(f, ks, kn);
            else
                kv_base64(f, ks, kn);
            fputc('"', f);
        }
        fprintf(f, ",\"key_encoding\":\"%s\",\"tag\":%" PRIu64 ",\"value_encoding\":\"%s\",\"value\":\"",
                kenc, r->tag, vtext ? "utf8" : "base64");
        if (vtext)
            kv_json_text(f, r->value, r->vlen);
        else
            kv_base64(f, r->value, r->vlen);
        fputc('"', f);
        if (x->versions)
            fputs(deleted ? ",\"deleted\":true" : ",\"deleted\":false", f);
        fputs("}\n", f);
    }
    x->done++;
    x->bytes += r->vlen;
    kv_export_progress(x, false);
    return ferror(f) ? 1 : 0;
}

typedef struct kv_keys {
    uint32_t key_type;
    char *buf;
} kv_keys_t;

static int kv_keys_rec(const pdcbb_kvd_rec_t *r, void *arg)
{
    kv_keys_t *k = arg;
    pdcbb_kvd_key_format(k->key_type, r->key, r->klen, k->buf, PDCBB_KVD_KEY_MAX + 64);
    printf("%s\t%" PRIu64 "\n", k->buf, r->tag);
    return ferror(stdout) ? 1 : 0;
}

/* The migrations of a drain (kv-migrate/CONTAINER/NAME@T/ with COMPLETE), sorted. */
static int kv_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void kv_ls_migrations(const pdcbb_drain_t *m)
{
    char base[4200];
    snprintf(base, sizeof(base), "%s/%s", m->dir, PDCBB_DRAIN_KV_MIGRATE_DIR);
    DIR *d = opendir(base);
    if (d == NULL)
        return;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[8600];
        snprintf(sub, sizeof(sub), "%s/%s", base, e->d_name);
        DIR *c = opendir(sub);
        if (c == NULL)
            continue;
        struct dirent *f;
        while ((f = readdir(c)) != NULL) {
            char done[17000];
            if (f->d_name[0] == '.')
                continue;
            snprintf(done, sizeof(done), "%s/%s/%s", sub, f->d_name, PDCBB_DRAIN_COMPLETE);
            if (access(done, F_OK) != 0)
                continue;
            char **g = realloc(names, (n + 1) * sizeof(*g));
            if (g == NULL)
                break;
            names = g;
            size_t len = strlen(e->d_name) + strlen(f->d_name) + 64;
            if ((names[n] = malloc(len)) == NULL)
                break;
            snprintf(names[n++], len, "%s/%s/%s", PDCBB_DRAIN_KV_MIGRATE_DIR, e->d_name,
                     f->d_name);
        }
        closedir(c);
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), kv_name_cmp);
    for (size_t i = 0; i < n; i++) {
        printf("migration: %s/%s\n", m->dir, names[i]);
        free(names[i]);
    }
    free(names);
}

static int kv_ls(pdcbb_drain_t *m)
{
    printf("job %" PRIu64 ": %" PRIu32 " KV object%s in %s%s\n", m->job_id, m->nkvs,
           m->nkvs == 1 ? "" : "s", m->dir,
           m->complete ? "" : " (INCOMPLETE drain)");
    if (m->nkvs == 0) {
        kv_ls_migrations(m);
        return 0;
    }
    printf("%-16s %-20s %-6s %-7s %6s %10s %10s\n", "CONTAINER", "NAME", "KEYS", "SHARDS", "N",
           "RECORDS", "VISIBLE");
    int status = 0;
    for (uint32_t i = 0; i < m->nkvs; i++) {
        const pdcbb_drain_kv_t *k = &m->kvs[i];
        pdcbb_kv_view_t *v = kv_load(m, k);
        uint64_t visible = 0;
        if (v == NULL)
            status = 1;
        else
            pdcbb_kv_view_list(v, PDCBB_KV_TAG_MAX, 0, 0, NULL, NULL, &visible);
        printf("%-16s %-20s %-6s %-7s %6" PRIu32 " %10" PRIu64 " %10" PRIu64 "\n",
               k->container[0] ? pdcbb_esc(k->container) : "-", pdcbb_esc(k->name),
               pdcbb_kvd_key_type_name(k->key_type), pdcbb_kvd_shard_name(k->sharding),
               k->nshards, v ? v->nrecs : 0, visible);
        pdcbb_kv_view_free(v);
    }
    kv_ls_migrations(m);
    return status;
}

int cli_cmd_kv(int argc, char **argv)
{
    static const struct option opts[] = {
        {"tag", required_argument, NULL, 't'},   {"offset", required_argument, NULL, 'O'},
        {"count", required_argument, NULL, 'c'}, {"hex", no_argument, NULL, 'x'},
        {"format", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
        {"all-versions", no_argument, NULL, 'a'}, {"progress", no_argument, NULL, 'P'},
        {"partial", no_argument, NULL, 'p'},     {"help", no_argument, NULL, 'h'},
        CMD_READ_LONGOPTS,                       {NULL, 0, NULL, 0},
    };
    uint64_t tag = PDCBB_KV_TAG_MAX, offset = 0, count = 0;
    bool hex = false, csv = false, versions = false, progress = false;
    cmd_read_t rd = {0};
    int bad;
    bool tag_given = false;
    const char *out_path = NULL;
    int c;

    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        kv_usage(stdout);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "pdcbb kv: missing the action: ls, keys, get or export (see pdcbb kv "
                        "--help)\n");
        return CLI_EXIT_USAGE;
    }
    const char *action = argv[1];
    int nargs = strcmp(action, "ls") == 0       ? 1
                : strcmp(action, "keys") == 0   ? 2
                : strcmp(action, "get") == 0    ? 3
                : strcmp(action, "export") == 0 ? 2
                                                : -1;
    if (nargs < 0) {
        fprintf(stderr, "pdcbb kv: unknown action '%s' (expected ls, keys, get or export; see "
                        "pdcbb kv --help)\n",
                action);
        return CLI_EXIT_USAGE;
    }
    argc--;
    argv++;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":t:xf:o:aph", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (kv_parse_tag(optarg, &tag) != 0)
                return CLI_EXIT_USAGE;
            tag_given = true;
            break;
        case 'O':
            if (kv_parse_count("--offset", optarg, &offset) != 0)
                return CLI_EXIT_USAGE;
            break;
        case 'c':
            if (kv_parse_count("--count", optarg, &count) != 0)
                return CLI_EXIT_USAGE;
            break;
        case 'x': hex = true; break;
        case 'f':
            if (strcmp(optarg, "csv") == 0) {
                csv = true;
            } else if (strcmp(optarg, "jsonl") == 0) {
                csv = false;
            } else {
                fprintf(stderr, "pdcbb kv: bad value for --format: '%s' (expected jsonl or "
                                "csv)\n",
                        optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'o': out_path = optarg; break;
        case 'a': versions = true; break;
        case 'P': progress = true; break;
        case 'p': rd.partial = true; break;
        case 'h': kv_usage(stdout); return 0;
        default:
            if ((bad = cmd_read_opt("kv", c, optarg, argv, &rd)) != 0)
                return bad;
            break;
        }
    }
    if (argc - optind != nargs) {
        fprintf(stderr, "pdcbb kv %s: expected %s (see pdcbb kv --help)\n", action,
                nargs == 1 ? "DIR" : nargs == 2 ? "DIR KV" : "DIR KV KEY");
        return CLI_EXIT_USAGE;
    }
    if (versions && tag_given) {
        fprintf(stderr, "pdcbb kv export: --all-versions and --tag exclude each other\n");
        return CLI_EXIT_USAGE;
    }
    pdcbb_drain_t *m = cmd_open("kv", argv[optind], &rd);
    if (m == NULL)
        return 1;
    int status = 0;
    if (nargs == 1) {
        status = kv_ls(m);
        pdcbb_drain_free(m);
        return status;
    }
    const pdcbb_drain_kv_t *k = kv_find(m, argv[optind + 1]);
    if (k == NULL) {
        pdcbb_drain_free(m);
        return 1;
    }
    uint8_t key[PDCBB_KVD_KEY_MAX];
    size_t klen = 0;
    if (nargs == 3) {
        char err[256];
        if (pdcbb_kvd_key_parse(k->key_type, argv[optind + 2], key, &klen, err, sizeof(err)) !=
            PDCBB_OK) {
            fprintf(stderr, "pdcbb kv get: %s (KV object '%s' has %s keys)\n", err,
                    pdcbb_esc(k->name), pdcbb_kvd_key_type_name(k->key_type));
            pdcbb_drain_free(m);
            return CLI_EXIT_USAGE;
        }
    }
    pdcbb_kv_view_t *v = kv_load(m, k);
    if (v == NULL) {
        pdcbb_drain_free(m);
        return 1;
    }
    if (strcmp(action, "keys") == 0) {
        kv_keys_t kk = {k->key_type, malloc(PDCBB_KVD_KEY_MAX + 64)};
        if (kk.buf == NULL || pdcbb_kv_view_list(v, tag, offset, count, kv_keys_rec, &kk, NULL))
            status = 1;
        free(kk.buf);
        if (fflush(stdout) != 0)
            status = 1;
    } else if (strcmp(action, "get") == 0) {
        const pdcbb_kvd_rec_t *r = pdcbb_kv_view_get(v, key, klen, tag);
        if (r == NULL) {
            char t[32];
            snprintf(t, sizeof(t), "%" PRIu64, tag);
            fprintf(stderr, "pdcbb kv get: KV object '%s' has no key '%s' at tag %s\n",
                    pdcbb_esc(k->name), argv[optind + 2], tag == PDCBB_KV_TAG_MAX ? "max" : t);
            status = 1;
        } else if (!hex && out_path == NULL && isatty(STDOUT_FILENO) &&
                   !kv_is_text(r->value, r->vlen)) {
            fprintf(stderr, "pdcbb kv get: the value is binary (%" PRIu64
                            " bytes): use --hex, -o FILE or redirect standard output\n",
                    r->vlen);
            status = 1;
        } else {
            kv_out_t o;
            if (kv_out_open(&o, out_path) != 0) {
                status = 1;
            } else {
                if (hex) {
                    for (uint64_t i = 0; i < r->vlen; i++)
                        fprintf(o.f, "%02x", r->value[i]);
                    fputc('\n', o.f);
                } else if (r->vlen > 0) {
                    fwrite(r->value, 1, (size_t)r->vlen, o.f);
                }
                status = kv_out_close(&o, 1);
            }
        }
    } else {
        kv_out_t o;
        if (kv_out_open(&o, out_path) != 0) {
            status = 1;
        } else {
            kv_export_t x = {.f = o.f, .key_type = k->key_type, .csv = csv,
                             .versions = versions, .tty = isatty(STDERR_FILENO)};
            x.progress = progress || x.tty;
            x.start = x.last = cli_now();
            if (csv)
                fprintf(o.f, "key,key_encoding,tag,value_encoding,value%s\r\n",
                        versions ? ",deleted" : "");
            int stop = 0;
            if (versions) {
                x.total = v->nrecs;
                for (uint64_t i = 0; i < v->nrecs && !stop; i++)
                    stop = kv_export_rec(&v->recs[i], &x);
            } else {
                pdcbb_kv_view_list(v, tag, 0, 0, NULL, NULL, &x.total);
                stop = pdcbb_kv_view_list(v, tag, 0, 0, kv_export_rec, &x, NULL);
            }
            if (x.progress && x.done > 0)
                kv_export_progress(&x, true);
            status = kv_out_close(&o, !stop);
        }
    }
    pdcbb_kv_view_free(v);
    pdcbb_drain_free(m);
    return status;
}
