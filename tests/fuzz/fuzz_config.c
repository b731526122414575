/*
 * fuzz_config.c - the configuration readers (yaml/): a YAML file (pdcbb_config_load_file: the
 * site file an admin writes, the user's file, the job's config.yaml in a directory the job user
 * owns) and a --pdc spec string (pdcbb_config_parse_spec, what any user types at submission).
 *
 * Input: byte 0 the mode (0 site file, 1 user file, 2 --pdc spec); the rest is the file or the
 * spec. A spec may name a file (config=FILE) only within this process's directory (a spec with
 * config or yaml and a '/' is skipped: a fuzzed path could name a FIFO and block). Properties:
 * what loads passes or fails the cross-key checks without harm, and its resolved form, written
 * as the prolog writes config.yaml, loads again as the daemon loads it, to the same print.
 */
#include <string.h>
#include <unistd.h>

#include "fuzz_target.h"
#include "pdcbb_config.h"

/* The resolved configuration as text (pdcbb_config_print). */
static char *fuzz_printed(const pdcbb_config_t *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    FUZZ_REQUIRE(f != NULL);
    pdcbb_config_print(c, f);
    fclose(f);
    return text;
}

static void fuzz_resolved(const pdcbb_config_t *c)
{
    char err[PDCBB_CONFIG_ERR_LEN], path[4096];
    (void)pdcbb_config_validate(c, err, sizeof(err));
    snprintf(path, sizeof(path), "%s/config.yaml", fuzz_dir());
    FUZZ_REQUIRE(pdcbb_config_write_file(c, path) == PDCBB_OK);
    static pdcbb_config_t again; /* large (paths): not on the stack */
    pdcbb_config_init(&again);
    pdcbb_err_t rc = pdcbb_config_load_file(&again, path, PDCBB_SCOPE_ALL, err, sizeof(err));
    if (rc != PDCBB_OK)
        fprintf(stderr, "the job's config.yaml does not load again: %s\n", err);
    FUZZ_REQUIRE(rc == PDCBB_OK);
    char *a = fuzz_printed(c), *b = fuzz_printed(&again);
    if (strcmp(a, b) != 0)
        fprintf(stderr, "resolved:\n%s\nread back:\n%s\n", a, b);
    FUZZ_REQUIRE(strcmp(a, b) == 0);
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static pdcbb_config_t c;
    char err[PDCBB_CONFIG_ERR_LEN], path[4096];
    pdcbb_err_t rc;
    pdcbb_config_init(&c);
    unsigned mode = data[0] % 3;
    if (mode < 2) {
        fuzz_write_file("site.yaml", data + 1, size - 1, path, sizeof(path));
        rc = pdcbb_config_load_file(
            &c, path, mode == 0 ? PDCBB_SCOPE_SITE : PDCBB_SCOPE_USER | PDCBB_SCOPE_ENV, err,
            sizeof(err));
    } else {
        char *spec = fuzz_strndup(data + 1, size - 1);
        if ((strstr(spec, "config") || strstr(spec, "yaml")) && strchr(spec, '/')) {
            free(spec);
            return 0;
        }
        /* config=site.yaml names the file of an earlier input, relative to the directory */
        char cwd[4096];
        FUZZ_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL && chdir(fuzz_dir()) == 0);
        rc = pdcbb_config_parse_spec(&c, spec, err, sizeof(err));
        FUZZ_REQUIRE(chdir(cwd) == 0);
        free(spec);
    }
    if (rc == PDCBB_OK)
        fuzz_resolved(&c);
    return 0;
}
