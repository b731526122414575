/*
 * fuzz_drain_manifest.c - the readers of a drain directory's text files (stager/), which the
 * drain's owner can change and other users' commands read (pdcbb ls/get/verify/why, the
 * read-only API, stage-in): a manifest (pdcbb_drain_load_manifest, and the lenient reader of a
 * rank's part, drain_load_manifest_part, both on drain_manifest_yaml.c), a drain's IDENTITY
 * (pdcbb_drain_identity_read) and a failed drain's report (pdcbb_drain_report_read).
 *
 * Input: byte 0 the mode (0 manifest, 1 part, 2 IDENTITY, 3 FAILED report); the rest is the
 * file, written into a directory of this process. Properties: a manifest that loads is walked
 * as the readers walk it (sorted, every object's shape, extents and bytes, the damaged extents
 * and dropped totals), and one written again by the drain's writer loads again with the same
 * counts.
 */
#include <string.h>
#include <unistd.h>

#include "drain_internal.h"
#include "fuzz_target.h"
#include "pdcbb_drain.h"

static void fuzz_damaged_line(const char *line, void *arg)
{
    (void)line;
    ++*(uint64_t *)arg;
}

/* What pdcbb ls and the readers do with a loaded model. */
static void fuzz_walk(pdcbb_drain_t *m)
{
    pdcbb_drain_sort(m);
    for (uint32_t i = 0; i < m->nobjs; i++) {
        uint64_t shape[PDCBB_REGION_NDIM_MAX], first, count;
        (void)pdcbb_drain_object_shape(m, &m->objs[i], shape);
        (void)pdcbb_drain_object_bytes(m, &m->objs[i]);
        pdcbb_drain_object_extents(m, m->objs[i].id, &first, &count);
        FUZZ_REQUIRE(count == 0 || first + count <= m->nextents);
        FUZZ_REQUIRE(pdcbb_drain_find_object_id(m, m->objs[i].id) != NULL);
    }
    uint64_t lines = 0, extents, bytes;
    uint64_t damaged = pdcbb_drain_damaged_extents(m, -1, fuzz_damaged_line, &lines);
    FUZZ_REQUIRE(damaged == lines);
    pdcbb_drain_dropped_totals(m, &extents, &bytes);
}

static void fuzz_manifest(const uint8_t *data, size_t size, int part)
{
    char path[4096], again_path[4096], err[1024];
    pdcbb_drain_t *m = NULL, *again = NULL;
    fuzz_write_file("manifest.yaml", data, size, path, sizeof(path));
    pdcbb_err_t rc = part ? drain_load_manifest_part(path, &m, err, sizeof(err))
                          : pdcbb_drain_load_manifest(path, &m, err, sizeof(err));
    if (rc != PDCBB_OK) {
        FUZZ_REQUIRE(m == NULL && err[0] != '\0');
        return;
    }
    snprintf(again_path, sizeof(again_path), "%s/again.yaml", fuzz_dir());
    FUZZ_REQUIRE(pdcbb_drain_write_manifest(m, again_path, err, sizeof(err)) == PDCBB_OK);
    rc = part ? drain_load_manifest_part(again_path, &again, err, sizeof(err))
              : pdcbb_drain_load_manifest(again_path, &again, err, sizeof(err));
    if (rc != PDCBB_OK)
        fprintf(stderr, "written manifest does not load again: %s\n", err);
    FUZZ_REQUIRE(rc == PDCBB_OK);
    FUZZ_REQUIRE(again->nranks == m->nranks && again->nconts == m->nconts &&
                 again->nobjs == m->nobjs && again->nextents == m->nextents &&
                 again->nkvs == m->nkvs && again->nkvdumps == m->nkvdumps &&
                 again->ndropped == m->ndropped && again->job_id == m->job_id);
    fuzz_walk(m);
    pdcbb_drain_free(again);
    pdcbb_drain_free(m);
}

static void fuzz_identity(const uint8_t *data, size_t size)
{
    char path[4096], why[512];
    pdcbb_drain_identity_t id;
    fuzz_write_file(PDCBB_DRAIN_IDENTITY, data, size, path, sizeof(path));
    (void)pdcbb_drain_identity_read(fuzz_dir(), getuid(), &id, why, sizeof(why));
}

static void fuzz_report(const uint8_t *data, size_t size)
{
    char path[4096], why[512];
    static pdcbb_drain_report_info_t info; /* large: not on the stack */
    fuzz_write_file("pdcbb.7.node.FAILED", data, size, path, sizeof(path));
    if (pdcbb_drain_report_read(path, 7, getuid(), &info, why, sizeof(why)) == PDCBB_OK)
        FUZZ_REQUIRE(info.job_id == 7);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 4) {
    case 0:
        fuzz_manifest(data + 1, size - 1, 0);
        break;
    case 1:
        fuzz_manifest(data + 1, size - 1, 1);
        break;
    case 2:
        fuzz_identity(data + 1, size - 1);
        break;
    default:
        fuzz_report(data + 1, size - 1);
        break;
    }
    return 0;
}
