/*
 * test_ops.c - the rows of PDCBB_OPS (common/pdcbb_proto.h) against each other, the code and
 * the documentation, and the generator of the documentation's tables of ops.
 *
 *   test_ops SRCDIR           check (ctest "ops"): the rows' values and names; the rules the
 *                             properties of one op follow (a write is refused when drained, a
 *                             forwardable op is one a client sends, a shared-memory op has no
 *                             bulk part...); in SRCDIR: each op's handler bbd_op_<name> defined
 *                             once in bbd/, each op a client sends sent from client/ (and no
 *                             other), and the generated tables of docs/PROTOCOL.md and
 *                             docs/INTERNALS.md equal to what this program writes.
 *   test_ops --print SRCDIR   print the generated tables.
 *   test_ops --write SRCDIR   write them into the documents (`make op_docs`).
 *
 * The tables sit between the lines "<!-- generated: NAME ... -->" and
 * "<!-- end of generated: NAME -->"; everything else of the documents is left alone.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdcbb_proto.h"
#include "pdcbb_stats.h"
#include "unit_check.h"

/* ------------------------------------------------------------------ the rows */

/* Each field list as text: ", KIND name" per field. */
#define DOC_F(T, kind, n) ", " #kind " " #n
static const struct {
    unsigned value;
    const char *name, *lname, *req, *rep;
} rows[] = {
#define X_ROW(OP, val, lname, RQ, RP, ...) {val, #OP, #lname, "" RQ(DOC_F, _), "" RP(DOC_F, _)},
    PDCBB_OPS(X_ROW)
#undef X_ROW
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* Field lists the documents abbreviate (and define once). */
static const struct {
    const char *abbrev, *fields;
} abbrevs[] = {
    {"PROPS", "" PDCBB_OBJ_PROPS(DOC_F, _)},
    {"ENTRY", "" PDCBB_NS_ENTRY(DOC_F, _)},
};

static int row_index(unsigned op)
{
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].value == op)
            return (int)i;
    return -1;
}

static void test_rows(void)
{
    unsigned valid = 0;
    for (unsigned op = 0; op < 65536; op++) {
        int i = row_index(op);
        const pdcbb_op_props_t *p = pdcbb_op_props(op);
        CHECK((i >= 0) == (p != NULL) && (i >= 0) == pdcbb_op_valid(op));
        valid += p != NULL;
        if (p == NULL) {
            /* what every lookup answers for a value that is no op */
            CHECK(strcmp(pdcbb_op_name(op), "UNKNOWN") == 0 &&
                  pdcbb_op_kind(op) == PDCBB_KIND_OTHER);
            CHECK(!pdcbb_op_has(op, 0) && !pdcbb_op_forwardable(op) && !pdcbb_op_gatherable(op));
            continue;
        }
        CHECK(p->value == op && strcmp(p->name, rows[i].name) == 0);
        CHECK(strcmp(p->lname, rows[i].lname) == 0);
    }
    CHECK(valid == NROWS); /* values are unique */
    for (size_t i = 0; i < NROWS; i++) {
        CHECK(rows[i].value >= 1 && rows[i].value < PDCBB_OP_VALUES_MAX);
        CHECK(i == 0 || rows[i].value > rows[i - 1].value); /* appended in order */
        char lower[64];
        size_t k = 0;
        for (; rows[i].name[k] && k + 1 < sizeof(lower); k++)
            lower[k] = (char)tolower((unsigned char)rows[i].name[k]);
        lower[k] = '\0';
        CHECK(strcmp(lower, rows[i].lname) == 0);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(rows[i].name, rows[j].name) != 0);
    }
}

/* ------------------------------------------------------------------ the rules */

#define FAIL_OP(p, why)                                                                            \
    do {                                                                                           \
        unit_failures++;                                                                           \
        fprintf(stderr, "op %s (%u): %s\n", (p)->name, (p)->value, why);                           \
    } while (0)
#define RULE(p, cond, why)                                                                         \
    do {                                                                                           \
        unit_checks++;                                                                             \
        if (!(cond))                                                                               \
            FAIL_OP(p, why);                                                                       \
    } while (0)

static void test_rules(void)
{
    const unsigned known_flags = PDCBB_OPF_BATCH | PDCBB_OPF_SHM | PDCBB_OPF_BULK |
                                 PDCBB_OPF_DRAIN | PDCBB_OPF_DATA | PDCBB_OPF_FWD |
                                 PDCBB_OPF_GATHER;
    for (size_t i = 0; i < NROWS; i++) {
        const pdcbb_op_props_t *p = pdcbb_op_props(rows[i].value);
        unsigned f = p->flags, by = p->senders, op = p->value;
        int handshake = op == PDCBB_OP_HELLO || op == PDCBB_OP_AUTH;
        int envelope = op == PDCBB_OP_FORWARD || op == PDCBB_OP_GATHER;
        /* every column has one of its values */
        RULE(p, p->txn <= PDCBB_OPTXN_REMOVE, "transaction is READ, WRITE or REMOVE");
        RULE(p, p->kind < PDCBB_KIND_COUNT_, "a stats kind");
        RULE(p, p->drained <= PDCBB_DRAINED_UNSUPPORTED, "a drained mode");
        RULE(p, by != 0 && (by & ~PDCBB_BY_ALL) == 0, "someone sends it");
        RULE(p, (f & ~known_flags) == 0, "only PDCBB_OPF_* flags");
        /* the transaction */
        RULE(p, p->txn == PDCBB_OPTXN_READ || p->drained != PDCBB_DRAINED_ANSWER,
             "a write is refused when drained");
        /* the drained mode serves what libpdc's API sends */
        RULE(p, p->drained != PDCBB_DRAINED_ANSWER || (by & PDCBB_BY_CLIENT),
             "answered when drained, but no client sends it");
        RULE(p, !handshake || p->drained == PDCBB_DRAINED_ANSWER,
             "the handshake is answered when drained");
        /* forwarding: a client's request, on its way to another daemon */
        RULE(p, !(f & PDCBB_OPF_FWD) || (by & (PDCBB_BY_CLIENT | PDCBB_BY_TOOL)),
             "forwardable, but no client sends it");
        RULE(p, !(f & PDCBB_OPF_FWD) || (!handshake && !envelope),
             "the handshake, FORWARD and GATHER are not forwarded");
        /* GATHER carries reads answered at once */
        RULE(p, !(f & PDCBB_OPF_GATHER) || p->txn == PDCBB_OPTXN_READ, "gatherable, but a write");
        RULE(p, !(f & PDCBB_OPF_GATHER) || ((by & PDCBB_BY_CLIENT) && !envelope && !handshake),
             "gatherable: a client's request");
        /* the shared-memory channel: no bulk part, no handshake */
        RULE(p, !(f & PDCBB_OPF_SHM) || !(f & PDCBB_OPF_BULK),
             "on shared memory, but has a bulk part (UCX rendezvous)");
        RULE(p, !(f & PDCBB_OPF_SHM) || (op != PDCBB_OP_AUTH && !envelope),
             "AUTH, FORWARD and GATHER are UCX only");
        /* group commit: handlers that only touch the store, on shared-memory channels */
        RULE(p, !(f & PDCBB_OPF_BATCH) || (f & PDCBB_OPF_SHM), "batched, but not on shared memory");
        RULE(p,
             !(f & PDCBB_OPF_BATCH) ||
                 !(f & (PDCBB_OPF_BULK | PDCBB_OPF_DRAIN | PDCBB_OPF_DATA | PDCBB_OPF_GATHER)),
             "batched, but touches region data or a bulk part");
        /* region data traffic is counted as such */
        RULE(p,
             !(f & PDCBB_OPF_DATA) || p->kind == PDCBB_KIND_DATA || p->kind == PDCBB_KIND_DRAIN ||
                 p->kind == PDCBB_KIND_APPEND,
             "ordered as region data, but counted as another kind");
        RULE(p, (p->kind == PDCBB_KIND_FORWARD) == (op == PDCBB_OP_FORWARD),
             "the forward kind is FORWARD's");
        /* what only daemons send */
        if (by == PDCBB_BY_DAEMON)
            RULE(p,
                 !(f & (PDCBB_OPF_FWD | PDCBB_OPF_SHM | PDCBB_OPF_BATCH)) &&
                     p->drained != PDCBB_DRAINED_ANSWER,
                 "only daemons send it: not forwarded, not on shared memory, not drained");
    }
}

/* ------------------------------------------------------------------ the sources */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

typedef struct src_file {
    char name[256]; /* "bbd/bbd_meta.c" */
    char *text;
} src_file_t;

static int cmp_src(const void *a, const void *b)
{
    return strcmp(((const src_file_t *)a)->name, ((const src_file_t *)b)->name);
}

/* The *.c files of srcdir/dir, sorted by name; NULL if there are none. */
static src_file_t *load_dir(const char *srcdir, const char *dir, size_t *n)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", srcdir, dir);
    DIR *d = opendir(path);
    src_file_t *v = NULL;
    *n = 0;
    if (d == NULL)
        return NULL;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        if (l < 3 || strcmp(e->d_name + l - 2, ".c") != 0)
            continue;
        src_file_t *g = realloc(v, (*n + 1) * sizeof(*v));
        if (g == NULL)
            break;
        v = g;
        snprintf(v[*n].name, sizeof(v[*n].name), "%s/%s", dir, e->d_name);
        snprintf(path, sizeof(path), "%s/%s", srcdir, v[*n].name);
        v[*n].text = slurp(path);
        if (v[*n].text)
            (*n)++;
    }
    closedir(d);
    qsort(v, *n, sizeof(*v), cmp_src);
    return v;
}

static void free_dir(src_file_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].text);
    free(v);
}

/* 1 if text holds word where the next character does not continue an identifier. */
static int has_word(const char *text, const char *word)
{
    size_t l = strlen(word);
    for (const char *s = strstr(text, word); s; s = strstr(s + 1, word)) {
        char c = s[l];
        if (!(isalnum((unsigned char)c) || c == '_') &&
            (s == text || !(isalnum((unsigned char)s[-1]) || s[-1] == '_')))
            return 1;
    }
    return 0;
}

/* 1 if text defines the handler: a line "pdcbb_err_t bbd_op_<lname>(". */
static int defines_handler(const char *text, const char *lname)
{
    char want[128];
    snprintf(want, sizeof(want), "\npdcbb_err_t bbd_op_%s(", lname);
    return strstr(text, want) != NULL;
}

static src_file_t *bbd_files, *client_files;
static size_t n_bbd, n_client;
/* The file of bbd/ defining each row's handler (index of bbd_files), -1 if none. */
static int handler_file[NROWS];

static void load_sources(const char *srcdir)
{
    bbd_files = load_dir(srcdir, "bbd", &n_bbd);
    client_files = load_dir(srcdir, "client", &n_client);
    if (n_bbd == 0 || n_client == 0) {
        fprintf(stderr, "no bbd/*.c or client/*.c under %s\n", srcdir);
        exit(2);
    }
    for (size_t i = 0; i < NROWS; i++) {
        handler_file[i] = -1;
        for (size_t k = 0; k < n_bbd; k++)
            if (defines_handler(bbd_files[k].text, rows[i].lname)) {
                if (handler_file[i] >= 0)
                    fprintf(stderr, "bbd_op_%s is defined in %s and in %s\n", rows[i].lname,
                            bbd_files[handler_file[i]].name, bbd_files[k].name);
                CHECK(handler_file[i] < 0);
                handler_file[i] = (int)k;
            }
    }
}

static void test_sources(void)
{
    for (size_t i = 0; i < NROWS; i++) {
        const pdcbb_op_props_t *p = pdcbb_op_props(rows[i].value);
        RULE(p, handler_file[i] >= 0, "no bbd/*.c defines its handler bbd_op_<name>");
        /* Sent by libpdc: the op or its stub named in client/ (the drained mode answers
         * requests, it sends none). */
        char op_word[64], stub[64];
        snprintf(op_word, sizeof(op_word), "PDCBB_OP_%s", p->name);
        snprintf(stub, sizeof(stub), "client_op_%s", p->lname);
        const char *where = NULL;
        for (size_t k = 0; k < n_client && where == NULL; k++)
            if (strncmp(client_files[k].name, "client/client_drained", 21) != 0 &&
                (has_word(client_files[k].text, op_word) || has_word(client_files[k].text, stub)))
                where = client_files[k].name;
        int by_client = (p->senders & (PDCBB_BY_CLIENT | PDCBB_BY_TOOL)) != 0;
        RULE(p, !by_client || where != NULL, "a client or tool sends it, but client/ never does");
        if (!by_client && where != NULL)
            fprintf(stderr, "op %s: %s sends it, but its row says only daemons do\n", p->name,
                    where);
        RULE(p, by_client || where == NULL, "only daemons send it, but client/ names it");
    }
    /* every handler defined is an op's */
    for (size_t k = 0; k < n_bbd; k++)
        for (const char *s = strstr(bbd_files[k].text, "\npdcbb_err_t bbd_op_"); s;
             s = strstr(s + 1, "\npdcbb_err_t bbd_op_")) {
            char name[64];
            size_t l = 0;
            for (const char *t = s + 20;
                 (isalnum((unsigned char)*t) || *t == '_') && l + 1 < sizeof(name); t++)
                name[l++] = *t;
            name[l] = '\0';
            int found = 0;
            for (size_t i = 0; i < NROWS; i++)
                found |= strcmp(rows[i].lname, name) == 0;
            unit_checks++;
            if (!found) {
                unit_failures++;
                fprintf(stderr, "%s defines bbd_op_%s, the handler of no op\n", bbd_files[k].name,
                        name);
            }
        }
}

/* ------------------------------------------------------------------ the documents */

/* A field list as the documents print it: "U64 id, STR name", abbreviated, or "(empty)". */
static void put_fields(FILE *out, const char *list)
{
    if (list[0] == '\0') {
        fputs("(empty)", out);
        return;
    }
    char buf[2048];
    snprintf(buf, sizeof(buf), "%s", list);
    for (size_t a = 0; a < sizeof(abbrevs) / sizeof(abbrevs[0]); a++) {
        char *at = strstr(buf, abbrevs[a].fields);
        if (at == NULL)
            continue;
        char rest[2048];
        snprintf(rest, sizeof(rest), "%s", at + strlen(abbrevs[a].fields));
        snprintf(at, sizeof(buf) - (size_t)(at - buf), ", %s%s", abbrevs[a].abbrev, rest);
    }
    fputs(buf + 2, out); /* without the first ", " */
}

static const char *txn_name(unsigned t)
{
    return t == PDCBB_OPTXN_WRITE ? "write" : t == PDCBB_OPTXN_REMOVE ? "remove" : "read";
}

static const char *drained_name(unsigned d)
{
    return d == PDCBB_DRAINED_ANSWER      ? "answered"
           : d == PDCBB_DRAINED_READ_ONLY ? "READ_ONLY"
                                          : "UNSUPPORTED";
}

static void gen_fields(FILE *out)
{
    fputs("| op | name | request | reply |\n|---|---|---|---|\n", out);
    for (size_t i = 0; i < NROWS; i++) {
        fprintf(out, "| %u | %s | ", rows[i].value, rows[i].name);
        put_fields(out, rows[i].req);
        fputs(" | ", out);
        put_fields(out, rows[i].rep);
        fputs(" |\n", out);
    }
}

static void gen_props(FILE *out)
{
    static const struct {
        unsigned flag;
        const char *title;
    } cols[] = {{PDCBB_OPF_BATCH, "batch"},  {PDCBB_OPF_SHM, "shm"},   {PDCBB_OPF_BULK, "bulk"},
                {PDCBB_OPF_DRAIN, "drain"},  {PDCBB_OPF_DATA, "data"}, {PDCBB_OPF_FWD, "fwd"},
                {PDCBB_OPF_GATHER, "gather"}};
    const size_t ncols = sizeof(cols) / sizeof(cols[0]);
    fputs("| op | name | transaction | stats kind | drained | sent by |", out);
    for (size_t c = 0; c < ncols; c++)
        fprintf(out, " %s |", cols[c].title);
    fputs("\n|---|---|---|---|---|---|", out);
    for (size_t c = 0; c < ncols; c++)
        fputs("---|", out);
    fputc('\n', out);
    for (size_t i = 0; i < NROWS; i++) {
        const pdcbb_op_props_t *p = pdcbb_op_props(rows[i].value);
        fprintf(out, "| %u | %s | %s | %s | %s | ", p->value, p->name, txn_name(p->txn),
                pdcbb_stat_kind_name(p->kind), drained_name(p->drained));
        const char *sep = "";
        static const char *const who[] = {"client", "tool", "daemon"};
        for (unsigned b = 0; b < 3; b++)
            if (p->senders & (1u << b)) {
                fprintf(out, "%s%s", sep, who[b]);
                sep = ", ";
            }
        fputs(" |", out);
        for (size_t c = 0; c < ncols; c++)
            fputs(p->flags & cols[c].flag ? " x |" : " |", out);
        fputc('\n', out);
    }
}

/* The request-to-file index: each file of bbd/ with the requests whose handler it defines,
 * files in the order of their first op. */
static void gen_files(FILE *out)
{
    fputs("| file | handlers of |\n|---|---|\n", out);
    int done[NROWS] = {0};
    for (size_t i = 0; i < NROWS; i++) {
        int k = handler_file[i];
        if (k < 0 || done[i])
            continue;
        fprintf(out, "| `%s` | ", bbd_files[k].name);
        const char *sep = "";
        for (size_t j = i; j < NROWS; j++)
            if (handler_file[j] == k) {
                fprintf(out, "%s%s", sep, rows[j].name);
                sep = ", ";
                done[j] = 1;
            }
        fputs(" |\n", out);
    }
}

static const struct {
    const char *doc, *name;
    void (*gen)(FILE *out);
} sections[] = {
    {"docs/PROTOCOL.md", "op fields", gen_fields},
    {"docs/PROTOCOL.md", "op properties", gen_props},
    {"docs/INTERNALS.md", "op handlers", gen_files},
};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

static char *section_text(size_t s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (out == NULL)
        exit(2);
    sections[s].gen(out);
    fclose(out);
    return buf;
}

/* Find section s's generated lines in doc: *from at its first line, *to at its end marker. */
static int section_find(char *doc, size_t s, char **from, char **to)
{
    char begin[128], end[128];
    snprintf(begin, sizeof(begin), "<!-- generated: %s ", sections[s].name);
    snprintf(end, sizeof(end), "\n<!-- end of generated: %s -->", sections[s].name);
    char *b = strstr(doc, begin);
    char *e = b ? strstr(b, end) : NULL;
    char *nl = b ? strchr(b, '\n') : NULL;
    if (b == NULL || e == NULL || nl == NULL || nl > e)
        return -1;
    *from = nl + 1;
    *to = e + 1;
    return 0;
}

/* Check (write 0) or rewrite (write 1) every generated section of the documents. */
static int docs_sync(const char *srcdir, int write)
{
    int bad = 0;
    for (size_t s = 0; s < NSECTIONS; s++) {
        char path[1024], *from, *to;
        snprintf(path, sizeof(path), "%s/%s", srcdir, sections[s].doc);
        char *doc = slurp(path);
        char *want = section_text(s);
        unit_checks++;
        if (doc == NULL || section_find(doc, s, &from, &to) != 0) {
            fprintf(stderr,
                    "%s: no lines \"<!-- generated: %s ...\" to \"<!-- end of generated: "
                    "%s -->\"\n",
                    path, sections[s].name, sections[s].name);
            unit_failures++;
            bad = 1;
        } else if ((size_t)(to - from) != strlen(want) || memcmp(from, want, strlen(want)) != 0) {
            if (write) {
                FILE *f = fopen(path, "w");
                if (f == NULL || fprintf(f, "%.*s%s%s", (int)(from - doc), doc, want, to) < 0 ||
                    fclose(f) != 0) {
                    perror(path);
                    bad = 1;
                } else {
                    printf("%s: wrote the table \"%s\"\n", path, sections[s].name);
                }
            } else {
                fprintf(stderr,
                        "%s: the table \"%s\" is not what the rows of PDCBB_OPS give; "
                        "run `make op_docs` in the build directory and commit it\n",
                        path, sections[s].name);
                unit_failures++;
                bad = 1;
            }
        }
        free(want);
        free(doc);
    }
    return bad;
}

int main(int argc, char **argv)
{
    const char *mode = argc == 3 ? argv[1] : "";
    const char *srcdir = argv[argc - 1];
    if (argc < 2 || argc > 3 ||
        (argc == 3 && strcmp(mode, "--print") != 0 && strcmp(mode, "--write") != 0)) {
        fprintf(stderr, "usage: test_ops [--print | --write] SRCDIR\n");
        return 2;
    }
    load_sources(srcdir);
    if (strcmp(mode, "--print") == 0) {
        for (size_t s = 0; s < NSECTIONS; s++) {
            char *t = section_text(s);
            printf("%s, \"%s\":\n%s\n", sections[s].doc, sections[s].name, t);
            free(t);
        }
        return 0;
    }
    if (strcmp(mode, "--write") == 0)
        return docs_sync(srcdir, 1);
    test_rows();
    test_rules();
    test_sources();
    docs_sync(srcdir, 0);
    free_dir(bbd_files, n_bbd);
    free_dir(client_files, n_client);
    UNIT_DONE("ops");
}
