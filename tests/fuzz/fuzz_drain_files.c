/*
 * fuzz_drain_files.c - the parser of a drain's list of files (DRAIN/files.manifest,
 * stager/drain_files_list.c, docs/DRAIN-FORMAT.md "Files of the mount"), which the drain's owner
 * can change and pdcbb verify, pdcbb ls and pdcbb mount read: pdcbb_drain_files_parse, then the
 * lookups pdcbb mount makes.
 *
 * Input: the list's text. Properties: a list that parses formats back to the same bytes; each
 * entry is found at its own index; an entry's directory is a listed directory whose path is the
 * entry's up to its last '/'; the counts add up.
 */
#include <string.h>

#include "fuzz_target.h"
#include "pdcbb_drain_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    pdcbb_drain_files_t *f = NULL;
    if (pdcbb_drain_files_parse((const char *)data, size, "fuzz", &f, err, sizeof(err)) != PDCBB_OK)
        return 0;
    uint64_t files = 0, bytes = 0;
    for (uint64_t i = 0; i < f->n; i++) {
        const pdcbb_drain_file_t *e = &f->e[i];
        FUZZ_REQUIRE(pdcbb_drain_files_find(f, e->path) == (int64_t)i);
        const char *slash = strrchr(e->path, '/');
        FUZZ_REQUIRE(e->name == (slash ? slash + 1 : e->path));
        if (e->parent >= 0) {
            const pdcbb_drain_file_t *p = &f->e[e->parent];
            FUZZ_REQUIRE(p->type == PDCBB_DRAIN_FILE_DIR && slash != NULL &&
                         strlen(p->path) == (size_t)(slash - e->path) &&
                         strncmp(p->path, e->path, strlen(p->path)) == 0);
        } else {
            FUZZ_REQUIRE(slash == NULL);
        }
        FUZZ_REQUIRE((e->target != NULL) == (e->type == PDCBB_DRAIN_FILE_LINK));
        if (e->type == PDCBB_DRAIN_FILE_REG) {
            files++;
            bytes += e->size;
        }
    }
    FUZZ_REQUIRE(files == f->nfiles && bytes == f->bytes);
    char *text = NULL;
    size_t len = 0;
    FUZZ_REQUIRE(pdcbb_drain_files_format(f, &text, &len) == PDCBB_OK);
    FUZZ_REQUIRE(len == size && memcmp(text, data, size) == 0);
    free(text);
    pdcbb_drain_files_free(f);
    return 0;
}
