/*
 * fuzz_jobdir.c - the text files of a job directory and the rendezvous directory
 * (common/pdcbb_jobdir.c), which the job user (and anyone who can write there) controls: an
 * endpoint record (pdcbb_endpoint_parse, with and without its token; bbd-R.endpoint and
 * bbd-R.record), the JOB_TABLE text (pdcbb_job_table_next: the JOB_TABLE reply's records and
 * job.table), job.info (pdcbb_jobinfo_read) and the token file (pdcbb_token_read).
 *
 * Input: byte 0 the mode (0 endpoint record, 1 endpoint record with token, 2 JOB_TABLE text,
 * 3 job.info, 4 token file); the rest is the text. Properties: a parsed record is in range
 * (rank < nservers, port and pid non-zero, node and ip NUL-terminated) and formats to a text
 * that parses back to the same record; a table walk moves forward and ends; a job.info read
 * back after writing what was read gives the same fields.
 */
#include <string.h>

#include "fuzz_target.h"
#include "pdcbb_jobdir.h"

static void fuzz_require_same_endpoint(const pdcbb_endpoint_t *a, const pdcbb_endpoint_t *b)
{
    FUZZ_REQUIRE(a->job_id == b->job_id && a->rank == b->rank && a->nservers == b->nservers);
    FUZZ_REQUIRE(strcmp(a->node, b->node) == 0 && strcmp(a->ip, b->ip) == 0);
    FUZZ_REQUIRE(a->port == b->port && a->pid == b->pid);
}

static void fuzz_endpoint(const char *text, int with_token)
{
    pdcbb_endpoint_t ep, again;
    if (pdcbb_endpoint_parse(text, with_token, &ep) != PDCBB_OK)
        return;
    FUZZ_REQUIRE(ep.rank < ep.nservers && ep.port != 0 && ep.pid > 0);
    FUZZ_REQUIRE(memchr(ep.node, '\0', sizeof(ep.node)) && memchr(ep.ip, '\0', sizeof(ep.ip)));
    char formatted[2048];
    FUZZ_REQUIRE(pdcbb_endpoint_format(&ep, with_token, formatted, sizeof(formatted)) == PDCBB_OK);
    /* A node or ip holding a newline cannot come back: it ends the line it is on. */
    if (pdcbb_endpoint_parse(formatted, with_token, &again) == PDCBB_OK) {
        fuzz_require_same_endpoint(&ep, &again);
        FUZZ_REQUIRE(!with_token || memcmp(ep.token, again.token, PDCBB_TOKEN_LEN) == 0);
    }
}

static void fuzz_job_table(const uint8_t *text, size_t len)
{
    size_t pos = 0, before;
    pdcbb_endpoint_t ep;
    do {
        before = pos;
        if (pdcbb_job_table_next((const char *)text, len, &pos, &ep) != PDCBB_OK) {
            FUZZ_REQUIRE(pos == before);
            return;
        }
        FUZZ_REQUIRE(pos > before && pos <= len && ep.rank < ep.nservers);
    } while (pos < len);
}

static void fuzz_jobinfo(const uint8_t *data, size_t size)
{
    char path[4096];
    pdcbb_jobinfo_t ji, again;
    fuzz_write_file("job.info", data, size, path, sizeof(path));
    if (pdcbb_jobinfo_read(fuzz_dir(), &ji) != PDCBB_OK)
        return;
    FUZZ_REQUIRE(ji.node_index < ji.nnodes && ji.servers_per_node > 0);
    if (pdcbb_jobinfo_write(fuzz_dir(), &ji) != PDCBB_OK)
        return; /* what a reader accepts is not always what a prolog writes */
    FUZZ_REQUIRE(pdcbb_jobinfo_read(fuzz_dir(), &again) == PDCBB_OK);
    FUZZ_REQUIRE(again.job_id == ji.job_id && again.node_index == ji.node_index &&
                 again.nnodes == ji.nnodes && again.servers_per_node == ji.servers_per_node);
    FUZZ_REQUIRE(strcmp(again.instance, ji.instance) == 0 &&
                 strcmp(again.cluster, ji.cluster) == 0 && strcmp(again.node, ji.node) == 0 &&
                 strcmp(again.rendezvous, ji.rendezvous) == 0);
}

static void fuzz_token(const uint8_t *data, size_t size)
{
    char path[4096];
    uint8_t token[PDCBB_TOKEN_LEN];
    fuzz_write_file("token", data, size, path, sizeof(path));
    (void)pdcbb_token_read(path, token);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *b = data + 1;
    size_t len = size - 1;
    char *text;
    switch (data[0] % 5) {
    case 0:
    case 1:
        text = fuzz_strndup(b, len);
        fuzz_endpoint(text, data[0] % 5);
        free(text);
        break;
    case 2:
        fuzz_job_table(b, len);
        break;
    case 3:
        fuzz_jobinfo(b, len);
        break;
    default:
        fuzz_token(b, len);
        break;
    }
    return 0;
}
