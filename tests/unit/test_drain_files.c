/*
 * test_drain_files.c - the list of a drain's files/ (stager/pdcbb_drain_files.h): a list
 * formatted and parsed back entry for entry, lookups, lists the parser must refuse (each with the
 * line and what is wrong named), formatting refusing a tree with a hole, and the manifest's files
 * key written and loaded back (and refused when bad).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdcbb_crc32c.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_files.h"
#include "unit_check.h"

/* A list of a directory "d", a file in it with a space and a newline in its name, a link, and a
 * damaged file; added out of order (format sorts). */
static pdcbb_drain_files_t *sample(void)
{
    pdcbb_drain_files_t *f = calloc(1, sizeof(*f));
    const pdcbb_drain_file_t es[] = {
        {.path = "d/a b\nc",
         .type = PDCBB_DRAIN_FILE_REG,
         .mode = 0640,
         .size = 5,
         .mtime_ns = 1600000000123456789ull,
         .crc32c = 0xdeadbeef},
        {.path = "d", .type = PDCBB_DRAIN_FILE_DIR, .mode = 0755, .mtime_ns = 1},
        {.path = "link",
         .type = PDCBB_DRAIN_FILE_LINK,
         .mode = 0777,
         .size = 7,
         .mtime_ns = 2,
         .target = "d/a b\nc"},
        {.path = "zero", .type = PDCBB_DRAIN_FILE_REG, .mode = 0600, .size = 0, .damaged = 1},
    };
    for (size_t i = 0; i < sizeof(es) / sizeof(es[0]); i++)
        CHECK_ERR(pdcbb_drain_files_add(f, &es[i]), PDCBB_OK);
    return f;
}

/* The list text of sample() with line `line` (1: the magic) replaced by repl, and the crc line
 * made right again unless keep_crc. */
static char *mutate(const char *text, int line, const char *repl, int keep_crc)
{
    char *out = calloc(1, strlen(text) + strlen(repl) + 64);
    const char *p = text;
    size_t o = 0;
    for (int l = 1; *p; l++) {
        const char *nl = strchr(p, '\n');
        size_t len = (size_t)(nl - p) + 1;
        if (strncmp(p, "crc ", 4) == 0 && !keep_crc)
            break;
        if (l == line) {
            o += (size_t)sprintf(out + o, "%s\n", repl);
        } else {
            memcpy(out + o, p, len);
            o += len;
        }
        p += len;
    }
    if (!keep_crc)
        sprintf(out + o, "crc %08x\n", pdcbb_crc32c(0, out, o));
    return out;
}

static void test_round_trip(void)
{
    pdcbb_drain_files_t *f = sample(), *g = NULL;
    char *text = NULL, err[PDCBB_DRAIN_ERR_LEN];
    size_t len = 0;
    CHECK_ERR(pdcbb_drain_files_format(f, &text, &len), PDCBB_OK);
    CHECK(strncmp(text, PDCBB_DRAIN_FILES_MAGIC, strlen(PDCBB_DRAIN_FILES_MAGIC)) == 0);
    /* sorted, the names in hex, a directory before what it holds */
    CHECK(strstr(text, "d 0755 0 1 - - 64 -\n") != NULL);
    CHECK(strstr(text, "f 0640 5 1600000000123456789 deadbeef - 642f6120620a63 -\n") != NULL);
    CHECK(strstr(text, "l 0777 7 2 - - 6c696e6b 642f6120620a63\n") != NULL);
    CHECK(strstr(text, "f 0600 0 0 00000000 damaged 7a65726f -\n") != NULL);
    CHECK(strstr(text, "d 0755") < strstr(text, "f 0640"));
    CHECK_ERR(pdcbb_drain_files_parse(text, len, "L", &g, err, sizeof(err)), PDCBB_OK);
    CHECK(g != NULL && g->n == 4 && g->nfiles == 2 && g->bytes == 5);
    for (uint64_t i = 0; g != NULL && i < g->n; i++) {
        const pdcbb_drain_file_t *a = &f->e[i], *b = &g->e[i];
        CHECK(strcmp(a->path, b->path) == 0 && a->type == b->type && a->mode == b->mode &&
              a->size == b->size && a->mtime_ns == b->mtime_ns && a->crc32c == b->crc32c &&
              a->damaged == b->damaged && a->parent == b->parent && strcmp(a->name, b->name) == 0);
        CHECK((a->target == NULL) == (b->target == NULL));
        CHECK(a->target == NULL || strcmp(a->target, b->target) == 0);
    }
    CHECK(pdcbb_drain_files_find(g, "d") == 0);
    CHECK(pdcbb_drain_files_find(g, "d/a b\nc") == 1);
    CHECK(g->e[1].parent == 0 && strcmp(g->e[1].name, "a b\nc") == 0);
    CHECK(pdcbb_drain_files_find(g, "zero") == 3 && g->e[3].parent == -1);
    CHECK(pdcbb_drain_files_find(g, "d/a") == -1);
    CHECK(pdcbb_drain_files_find(g, "") == -1);
    CHECK(pdcbb_drain_files_find(g, "zz") == -1);

    /* what the parser refuses: line, what */
    static const struct {
        int line;
        const char *repl;
        int keep_crc;
        const char *want;
    } bad[] = {
        {1, "pdcbb-files 2", 0, "L:1: not a list of files: it does not begin"},
        {2, "x 0755 0 1 - - 64 -", 0, "L:2: not a list of files: the type is not f, d or l"},
        {2, "d 755 0 1 - - 64 -", 0, "L:2: not a list of files: the mode is not 4 octal"},
        {2, "d 0758 0 1 - - 64 -", 0, "the mode is not 4 octal digits"},
        {2, "d 0755 0 1 - - 64", 0, "L:2: not a list of files: fewer than 8 fields"},
        {2, "d 0755 0 1 - - 64 - x", 0, "more than 8 fields"},
        {2, "d 0755 5 1 - - 64 -", 0, "a directory with a size"},
        {2, "d 0755 0 1 00000000 - 64 -", 0, "a directory or link with a CRC-32C"},
        {2, "d 0755 0 1 - - 2e2e -", 0, "the path is not hex of a relative path"},
        {2, "d 0755 0 1 - - 2f64 -", 0, "the path is not hex of a relative path"},
        {2, "d 0755 0 1 - - 6400 -", 0, "the path is not hex of a relative path"},
        {2, "d 0755 0 1 - - 6G -", 0, "the path is not hex of a relative path"},
        {2, "d 0755 0 x - - 64 -", 0, "bad mtime"},
        {3, "f 0640 5 1 deadbeef broken 642f6120620a63 -", 0, "neither - nor damaged"},
        {3, "f 0640 5 1 deadbee - 642f6120620a63 -", 0, "8 hex digits"},
        {3, "f 0640 5 1 deadbeef - 652f78 -", 0,
         "L:3: not a list of files: its directory is not listed"},
        {4, "l 0777 6 2 - - 6c696e6b 642f6120620a63", 0, "a link's size is not its target"},
        {4, "l 0777 0 2 - - 6c696e6b -", 0, "a link without a target"},
        {5, "f 0600 0 0 00000000 damaged 64 -", 0,
         "L:5: not a list of files: entries out of order, or one listed twice"},
        {3, "f 0640 5 1 deadbeef - 642f6120620a64 -", 1, "L is damaged: its CRC-32C is 0x"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *t = mutate(text, bad[i].line, bad[i].repl, bad[i].keep_crc);
        pdcbb_drain_files_t *h = NULL;
        err[0] = '\0';
        CHECK_ERR(pdcbb_drain_files_parse(t, strlen(t), "L", &h, err, sizeof(err)),
                  PDCBB_ERR_CORRUPT);
        if (strstr(err, bad[i].want) == NULL)
            fprintf(stderr, "bad list %zu: error '%s', expected '%s'\n", i, err, bad[i].want);
        CHECK(strstr(err, bad[i].want) != NULL);
        CHECK(h == NULL);
        free(t);
    }
    /* nothing after the crc line, and a crc line there must be */
    char *t = malloc(len + 8);
    memcpy(t, text, len);
    memcpy(t + len, "x\n", 3);
    pdcbb_drain_files_t *h = NULL;
    CHECK_ERR(pdcbb_drain_files_parse(t, len + 2, "L", &h, err, sizeof(err)), PDCBB_ERR_CORRUPT);
    CHECK(strstr(err, "bytes after its crc line") != NULL);
    CHECK_ERR(pdcbb_drain_files_parse(text, len - 13, "L", &h, err, sizeof(err)),
              PDCBB_ERR_CORRUPT);
    CHECK(h == NULL);
    CHECK(strstr(err, "it ends without its crc line") != NULL);
    free(t);
    free(text);
    pdcbb_drain_files_free(f);
    pdcbb_drain_files_free(g);

    /* formatting a tree with a hole (a file whose directory is not listed) is refused */
    f = calloc(1, sizeof(*f));
    pdcbb_drain_file_t orphan = {.path = "nodir/x", .type = PDCBB_DRAIN_FILE_REG};
    CHECK_ERR(pdcbb_drain_files_add(f, &orphan), PDCBB_OK);
    CHECK_ERR(pdcbb_drain_files_format(f, &text, &len), PDCBB_ERR_INVAL);
    pdcbb_drain_files_free(f);
}

/* The manifest's files key: written, loaded back, refused when bad. */
static void test_manifest_key(void)
{
    char dir[] = "/tmp/test_drain_files.XXXXXX", path[64], err[PDCBB_DRAIN_ERR_LEN];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/manifest.yaml", dir);
    pdcbb_drain_t *m = pdcbb_drain_new();
    m->job_id = 5;
    m->user = strdup("u");
    m->uid = 1;
    m->nservers = 1;
    m->servers_per_node = 1;
    pdcbb_drain_rank_t r = {.rank = 0, .node = "n", .data_file = "data/rank-00000.dat"};
    CHECK_ERR(pdcbb_drain_add_rank(m, &r), PDCBB_OK);
    m->files.list = strdup(PDCBB_DRAIN_FILES_LIST);
    m->files.entries = 12;
    m->files.bytes = 345;
    m->files.crc32c = 0x0badf00d;
    CHECK_ERR(pdcbb_drain_write_manifest(m, path, err, sizeof(err)), PDCBB_OK);
    pdcbb_drain_t *back = NULL;
    CHECK_ERR(pdcbb_drain_load_manifest(path, &back, err, sizeof(err)), PDCBB_OK);
    CHECK(back != NULL && back->files.list != NULL &&
          strcmp(back->files.list, "files.manifest") == 0 && back->files.entries == 12 &&
          back->files.bytes == 345 && back->files.crc32c == 0x0badf00d);
    pdcbb_drain_free(back);
    /* a drain without files has no key */
    free(m->files.list);
    m->files.list = NULL;
    CHECK_ERR(pdcbb_drain_write_manifest(m, path, err, sizeof(err)), PDCBB_OK);
    FILE *fp = fopen(path, "r");
    char text[4096] = "";
    CHECK(fp != NULL && fread(text, 1, sizeof(text) - 1, fp) > 0);
    if (fp != NULL)
        fclose(fp);
    CHECK(strstr(text, "files:") == NULL);
    /* bad values are refused with the key named */
    static const struct {
        const char *line, *want;
    } bad[] = {
        {"files: {list: \"../x\", entries: 1, bytes: 5, crc32c: 0x00000001}\n", "list"},
        {"files: {list: \"files.manifest\", entries: 1, bytes: 0, crc32c: 0x00000001}\n", "bytes"},
        {"files: {list: \"files.manifest\", entries: 1, bytes: 5, crc32c: 12}\n", "crc32c"},
        {"files: {list: \"files.manifest\", entries: 1, bytes: 5}\n", "crc32c"},
        {"files: [1, 2]\n", "files"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fp = fopen(path, "w");
        fprintf(fp, "%s%s", text, bad[i].line);
        fclose(fp);
        back = NULL;
        err[0] = '\0';
        CHECK(pdcbb_drain_load_manifest(path, &back, err, sizeof(err)) != PDCBB_OK);
        if (strstr(err, bad[i].want) == NULL)
            fprintf(stderr, "bad key %zu: error '%s', expected '%s'\n", i, err, bad[i].want);
        CHECK(strstr(err, bad[i].want) != NULL && back == NULL);
    }
    pdcbb_drain_free(m);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    test_round_trip();
    test_manifest_key();
    UNIT_DONE("test_drain_files");
}
