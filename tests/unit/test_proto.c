/*
 * test_proto.c - the wire protocol: every op's request and reply round-trips; every truncation,
 * trailing byte, corrupted byte, bad header and oversized field gives an error, never a crash;
 * endpoint records and tokens parse strictly.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdcbb_jobdir.h"
#include "pdcbb_proto.h"
#include "unit_check.h"

static uint64_t sample_u64s[3] = {7, 1ull << 40, UINT64_MAX};
static const char sample_blob[5] = {1, 0, 2, 0, 3};

/* Fill every field of a body with a recognisable value. */
#define FILL_U32(b, n) (b)->n = 0xdeadbe00u + 1;
#define FILL_I32(b, n) (b)->n = -42;
#define FILL_U64(b, n) (b)->n = 0x0123456789abcdefull;
#define FILL_STR(b, n) (b)->n = "name-" #n;
#define FILL_BLOB(b, n)                                                                           \
    (b)->n = sample_blob;                                                                         \
    (b)->n##_len = sizeof(sample_blob);
#define FILL_U64S(b, n)                                                                           \
    (b)->n = sample_u64s;                                                                         \
    (b)->n##_count = 3;
#define FILL(T, kind, n) FILL_##kind(fb, n)

/* Compare a decoded body against the filled one. */
#define SAME_U32(a, b, n) ok &= (a)->n == (b)->n;
#define SAME_I32(a, b, n) ok &= (a)->n == (b)->n;
#define SAME_U64(a, b, n) ok &= (a)->n == (b)->n;
#define SAME_STR(a, b, n) ok &= (a)->n != NULL && strcmp((a)->n, (b)->n) == 0;
#define SAME_BLOB(a, b, n)                                                                        \
    ok &= (a)->n##_len == (b)->n##_len && memcmp((a)->n, (b)->n, (b)->n##_len) == 0;
#define SAME_U64S(a, b, n)                                                                        \
    ok &= (a)->n##_count == (b)->n##_count &&                                                     \
          memcmp((a)->n, (b)->n, 8 * (size_t)(b)->n##_count) == 0;
#define SAME(T, kind, n) SAME_##kind(a, b, n)

/* Encode body, decode it back, compare; then truncate, extend and corrupt the encoding. */
static void exercise(unsigned op, int is_reply, const void *body, void *decoded,
                     int (*same)(const void *, const void *))
{
    size_t size = 0;
    CHECK_ERR(pdcbb_body_size(op, is_reply, body, &size), PDCBB_OK);
    uint8_t *buf = malloc(size + 1);
    CHECK_ERR(pdcbb_body_encode(op, is_reply, body, buf, size), PDCBB_OK);
    CHECK_ERR(pdcbb_body_decode(op, is_reply, buf, size, decoded), PDCBB_OK);
    if (!same(body, decoded))
        fprintf(stderr, "round trip of %s %s differs\n", pdcbb_op_name(op),
                is_reply ? "reply" : "request");
    CHECK(same(body, decoded));
    pdcbb_body_free(op, is_reply, decoded);

    /* Every strict prefix is refused (an empty body is only valid for empty structs). */
    for (size_t cut = 0; cut < size; cut++) {
        pdcbb_err_t rc = pdcbb_body_decode(op, is_reply, buf, cut, decoded);
        CHECK(rc == PDCBB_ERR_TRUNCATED || rc == PDCBB_ERR_PROTO || rc == PDCBB_ERR_TOO_BIG);
    }
    /* A trailing byte is refused. */
    buf[size] = 0x5a;
    CHECK_ERR(pdcbb_body_decode(op, is_reply, buf, size + 1, decoded), PDCBB_ERR_PROTO);

    /* Corrupted bytes: decoding may succeed or fail, but must stay in bounds. */
    uint8_t *bad = malloc(size + 1);
    unsigned seed = op * 7919u + (unsigned)is_reply;
    for (int round = 0; round < 300 && size > 0; round++) {
        memcpy(bad, buf, size);
        for (int k = 0; k < 3; k++) {
            seed = seed * 1103515245u + 12345u;
            bad[(seed >> 8) % size] ^= (uint8_t)(1u << ((seed >> 4) & 7));
        }
        if (pdcbb_body_decode(op, is_reply, bad, size, decoded) == PDCBB_OK)
            pdcbb_body_free(op, is_reply, decoded);
    }
    free(bad);
    free(buf);
}

#define X_TEST(OP, val, lname, RQ, RP, ...)                                                        \
    static int same_##lname##_req(const void *bp, const void *ap)                                  \
    {                                                                                              \
        const pdcbb_##lname##_req_t *b = bp, *a = ap;                                              \
        int ok = 1;                                                                                \
        RQ(SAME, _)                                                                                \
        (void)a;                                                                                   \
        (void)b;                                                                                   \
        return ok;                                                                                 \
    }                                                                                              \
    static int same_##lname##_rep(const void *bp, const void *ap)                                  \
    {                                                                                              \
        const pdcbb_##lname##_rep_t *b = bp, *a = ap;                                              \
        int ok = 1;                                                                                \
        RP(SAME, _)                                                                                \
        (void)a;                                                                                   \
        (void)b;                                                                                   \
        return ok;                                                                                 \
    }                                                                                              \
    static void test_##lname(void)                                                                 \
    {                                                                                              \
        pdcbb_##lname##_req_t rq, rq2;                                                             \
        pdcbb_##lname##_rep_t rp, rp2;                                                             \
        memset(&rq, 0, sizeof(rq));                                                                \
        memset(&rp, 0, sizeof(rp));                                                                \
        {                                                                                          \
            pdcbb_##lname##_req_t *fb = &rq;                                                       \
            RQ(FILL, _)                                                                            \
            (void)fb;                                                                              \
        }                                                                                          \
        {                                                                                          \
            pdcbb_##lname##_rep_t *fb = &rp;                                                       \
            RP(FILL, _)                                                                            \
            (void)fb;                                                                              \
        }                                                                                          \
        exercise(PDCBB_OP_##OP, 0, &rq, &rq2, same_##lname##_req);                                 \
        exercise(PDCBB_OP_##OP, 1, &rp, &rp2, same_##lname##_rep);                                 \
    }
PDCBB_OPS(X_TEST)
#undef X_TEST

static void test_header(void)
{
    pdcbb_msg_hdr_t h = {.magic = PDCBB_PROTO_MAGIC, .version = PDCBB_PROTO_VERSION,
                         .op = PDCBB_OP_CONT_OPEN, .req_id = 99};
    memset(h.token, 0xab, sizeof(h.token));
    pdcbb_cont_open_req_t q = {.name = "c1"};
    void *msg;
    size_t len;
    CHECK_ERR(pdcbb_msg_build(&h, &q, &msg, &len), PDCBB_OK);
    pdcbb_msg_hdr_t d;
    CHECK_ERR(pdcbb_hdr_decode(msg, len, &d), PDCBB_OK);
    CHECK(d.req_id == 99 && d.op == PDCBB_OP_CONT_OPEN && d.token[5] == 0xab);
    CHECK(d.payload_len == len - PDCBB_HDR_LEN);
    uint8_t *m = msg;
    for (size_t cut = 0; cut < len; cut++)
        CHECK(pdcbb_hdr_decode(m, cut, &d) != PDCBB_OK);
    CHECK_ERR(pdcbb_hdr_decode(NULL, 0, &d), PDCBB_ERR_TRUNCATED);
    m[0] ^= 1;
    CHECK_ERR(pdcbb_hdr_decode(m, len, &d), PDCBB_ERR_PROTO);
    m[0] ^= 1;
    m[4] = 9; /* version */
    CHECK_ERR(pdcbb_hdr_decode(m, len, &d), PDCBB_ERR_VERSION);
    m[4] = PDCBB_PROTO_VERSION;
    m[27] = 0x7f; /* payload length far beyond the limit */
    CHECK_ERR(pdcbb_hdr_decode(m, len, &d), PDCBB_ERR_TOO_BIG);
    m[27] = 0;
    m[24] += 1; /* one byte more than present */
    CHECK_ERR(pdcbb_hdr_decode(m, len, &d), PDCBB_ERR_TRUNCATED);
    m[24] -= 2; /* one byte less than present */
    CHECK_ERR(pdcbb_hdr_decode(m, len, &d), PDCBB_ERR_PROTO);
    free(msg);

    /* Unknown ops. */
    uint8_t empty[8] = {0};
    pdcbb_hello_req_t any;
    CHECK_ERR(pdcbb_body_decode(0, 0, empty, 0, &any), PDCBB_ERR_BAD_OP);
    CHECK_ERR(pdcbb_body_decode(PDCBB_OP_MAX_, 0, empty, 0, &any), PDCBB_ERR_BAD_OP);
    CHECK_ERR(pdcbb_body_decode(60000, 1, empty, 0, &any), PDCBB_ERR_BAD_OP);
    CHECK(!pdcbb_op_valid(0) && !pdcbb_op_valid(PDCBB_OP_MAX_) && pdcbb_op_valid(1));
    CHECK(strcmp(pdcbb_op_name(12345), "UNKNOWN") == 0);
}

static void test_bad_fields(void)
{
    pdcbb_cont_open_req_t q;
    /* String length 0 (no room for the NUL). */
    uint8_t zero_len[4] = {0, 0, 0, 0};
    CHECK_ERR(pdcbb_body_decode(PDCBB_OP_CONT_OPEN, 0, zero_len, 4, &q), PDCBB_ERR_PROTO);
    /* String without its terminating NUL. */
    uint8_t no_nul[7] = {3, 0, 0, 0, 'a', 'b', 'c'};
    CHECK_ERR(pdcbb_body_decode(PDCBB_OP_CONT_OPEN, 0, no_nul, 7, &q), PDCBB_ERR_PROTO);
    /* Embedded NUL. */
    uint8_t embedded[8] = {4, 0, 0, 0, 'a', 0, 'c', 0};
    CHECK_ERR(pdcbb_body_decode(PDCBB_OP_CONT_OPEN, 0, embedded, 8, &q), PDCBB_ERR_PROTO);
    /* String longer than the limit. */
    uint8_t huge[4] = {0, 0, 0, 1};
    CHECK_ERR(pdcbb_body_decode(PDCBB_OP_CONT_OPEN, 0, huge, 4, &q), PDCBB_ERR_TOO_BIG);
    /* Declared length past the end. */
    uint8_t past[6] = {9, 0, 0, 0, 'a', 0};
    CHECK_ERR(pdcbb_body_decode(PDCBB_OP_CONT_OPEN, 0, past, 6, &q), PDCBB_ERR_TRUNCATED);
    /* An array count that would overflow a multiplication. */
    pdcbb_cont_objids_put_req_t oq;
    uint8_t big_count[12] = {1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
    CHECK_ERR(pdcbb_body_decode(PDCBB_OP_CONT_OBJIDS_PUT, 0, big_count, 12, &oq),
              PDCBB_ERR_TOO_BIG);
    uint8_t short_arr[20] = {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1};
    CHECK_ERR(pdcbb_body_decode(PDCBB_OP_CONT_OBJIDS_PUT, 0, short_arr, 20, &oq),
              PDCBB_ERR_TRUNCATED);
    /* Blob longer than the limit. */
    pdcbb_tag_get_rep_t tg;
    uint8_t big_blob[8] = {0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f};
    CHECK_ERR(pdcbb_body_decode(PDCBB_OP_TAG_GET, 1, big_blob, 8, &tg), PDCBB_ERR_TOO_BIG);

    /* Encoding refuses strings over the limit. */
    char *long_name = malloc(PDCBB_STR_MAX + 2);
    memset(long_name, 'x', PDCBB_STR_MAX + 1);
    long_name[PDCBB_STR_MAX + 1] = '\0';
    pdcbb_cont_open_req_t lq = {.name = long_name};
    size_t size;
    CHECK_ERR(pdcbb_body_size(PDCBB_OP_CONT_OPEN, 0, &lq, &size), PDCBB_ERR_TOO_BIG);
    long_name[PDCBB_STR_MAX] = '\0';
    CHECK_ERR(pdcbb_body_size(PDCBB_OP_CONT_OPEN, 0, &lq, &size), PDCBB_OK);
    free(long_name);
    /* NULL strings encode as "". */
    pdcbb_cont_open_req_t nq = {.name = NULL};
    uint8_t buf[16];
    CHECK_ERR(pdcbb_body_size(PDCBB_OP_CONT_OPEN, 0, &nq, &size), PDCBB_OK);
    CHECK_ERR(pdcbb_body_encode(PDCBB_OP_CONT_OPEN, 0, &nq, buf, size), PDCBB_OK);
    CHECK_ERR(pdcbb_body_decode(PDCBB_OP_CONT_OPEN, 0, buf, size, &q), PDCBB_OK);
    CHECK(q.name && q.name[0] == '\0');
}

static void test_ids_and_types(void)
{
    uint64_t id = pdcbb_meta_id_make(PDCBB_META_KIND_OBJ, 513, 12345);
    CHECK(pdcbb_meta_id_kind(id) == PDCBB_META_KIND_OBJ);
    CHECK(pdcbb_meta_id_server(id) == 513);
    CHECK((id & ((1ull << 44) - 1)) == 12345);
    CHECK(pdcbb_home_server("abc", 1) == 0);
    unsigned hit[4] = {0};
    char name[32];
    for (int i = 0; i < 400; i++) {
        snprintf(name, sizeof(name), "obj-%d", i);
        hit[pdcbb_home_server(name, 4)]++;
    }
    for (int i = 0; i < 4; i++)
        CHECK(hit[i] > 50); /* names spread over all daemons */
    CHECK(pdcbb_type_size(0) == sizeof(int) && pdcbb_type_size(2) == sizeof(double));
    CHECK(pdcbb_type_size(-1) == 0 && pdcbb_type_size(PDCBB_TYPE_COUNT) == 0);
    CHECK(strcmp(pdcbb_type_name(8), "PDC_INT64") == 0);
    CHECK(strcmp(pdcbb_errname(PDCBB_ERR_NOT_FOUND), "PDCBB_ERR_NOT_FOUND") == 0);
    CHECK(strcmp(pdcbb_errname(9999), "PDCBB_ERR_UNKNOWN") == 0);
    CHECK(pdcbb_strerror(9999) != NULL && pdcbb_strerror(-5) != NULL);
}

static void test_endpoint_records(void)
{
    pdcbb_endpoint_t e = {.job_id = 77, .rank = 1, .nservers = 2, .port = 4242, .pid = 123};
    snprintf(e.node, sizeof(e.node), "n1");
    snprintf(e.ip, sizeof(e.ip), "10.0.0.1");
    memset(e.token, 0x3c, sizeof(e.token));
    char text[1024];
    CHECK_ERR(pdcbb_endpoint_format(&e, 1, text, sizeof(text)), PDCBB_OK);
    pdcbb_endpoint_t d;
    CHECK_ERR(pdcbb_endpoint_parse(text, 1, &d), PDCBB_OK);
    CHECK(d.job_id == 77 && d.rank == 1 && d.nservers == 2 && d.port == 4242 && d.pid == 123);
    CHECK(strcmp(d.ip, "10.0.0.1") == 0 && memcmp(d.token, e.token, sizeof(e.token)) == 0);
    CHECK_ERR(pdcbb_endpoint_format(&e, 0, text, sizeof(text)), PDCBB_OK);
    CHECK_ERR(pdcbb_endpoint_parse(text, 1, &d), PDCBB_ERR_PROTO); /* token required */
    CHECK_ERR(pdcbb_endpoint_parse(text, 0, &d), PDCBB_OK);
    static const char *const bad[] = {
        "",
        "version=1\njob_id=1\nrank=2\nnservers=2\nnode=n\nip=1.2.3.4\nport=1\npid=1\n",
        "version=1\njob_id=1\nrank=0\nnservers=2\nnode=n\nip=1.2.3.4\nport=0\npid=1\n",
        "version=1\njob_id=1\nrank=0\nnservers=2\nnode=n\nip=1.2.3.4\nport=70000\npid=1\n",
        "version=1\njob_id=x\nrank=0\nnservers=2\nnode=n\nip=1.2.3.4\nport=1\npid=1\n",
        "version=1\njob_id=1\nrank=-1\nnservers=2\nnode=n\nip=1.2.3.4\nport=1\npid=1\n",
        "version=1\njob_id=1\nrank=0\nnservers=2\nnode=\nip=1.2.3.4\nport=1\npid=1\n",
        "version=1\njob_id=1\nrank=0\nnservers=2\nnode=n\nport=1\npid=1\n",
        "garbage without equals\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(pdcbb_endpoint_parse(bad[i], 0, &d) != PDCBB_OK);
    CHECK_ERR(pdcbb_endpoint_parse(
                  "version=2\njob_id=1\nrank=0\nnservers=2\nnode=n\nip=1.2.3.4\nport=1\npid=1\n",
                  0, &d),
              PDCBB_ERR_VERSION);
}

static void test_token_files(void)
{
    char dir[] = "/tmp/pdcbb-test-token.XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/token", dir);
    uint8_t t[PDCBB_TOKEN_LEN], u[PDCBB_TOKEN_LEN];
    CHECK_ERR(pdcbb_token_generate(t), PDCBB_OK);
    CHECK_ERR(pdcbb_token_write(path, t), PDCBB_OK);
    CHECK_ERR(pdcbb_token_read(path, u), PDCBB_OK);
    CHECK(memcmp(t, u, sizeof(t)) == 0 && pdcbb_token_equal(t, u));
    u[3] ^= 1;
    CHECK(!pdcbb_token_equal(t, u));
    FILE *f = fopen(path, "w");
    fputs("not-hex-at-all-not-hex-at-all-not-hex-at-all-not-hex-at-all-0000\n", f);
    fclose(f);
    CHECK_ERR(pdcbb_token_read(path, u), PDCBB_ERR_PROTO);
    f = fopen(path, "w");
    fputs("abcd\n", f);
    fclose(f);
    CHECK_ERR(pdcbb_token_read(path, u), PDCBB_ERR_PROTO);
    unlink(path);
    CHECK_ERR(pdcbb_token_read(path, u), PDCBB_ERR_NOT_FOUND);
    rmdir(dir);
}

int main(void)
{
#define X_RUN(OP, val, lname, RQ, RP, ...) test_##lname();
    PDCBB_OPS(X_RUN)
#undef X_RUN
    test_header();
    test_bad_fields();
    test_ids_and_types();
    test_endpoint_records();
    test_token_files();
    UNIT_DONE("test_proto");
}
