/*
 * fuzz_seeds.c - writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/)
 * with the product's own encoders and writers, so every seed is an input the product really
 * produces: every op's request and reply (zeroed and with content), shared-memory slots,
 * endpoint records, a JOB_TABLE text, job.info, a token, KV records, a drain manifest (with
 * the files key), a KV dump, a list of a drain's files and resolved configurations. Run by
 * `scripts/fuzz.sh --seeds` (which replaces the corpora); usage: fuzz_seeds CORPUS_DIR.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_target.h"
#include "pdcbb_config.h"
#include "pdcbb_drain.h"
#include "pdcbb_drain_files.h"
#include "pdcbb_drain_kv.h"
#include "pdcbb_jobdir.h"
#include "pdcbb_kv.h"
#include "pdcbb_shm.h"

static const char *seed_root;

/* <root>/<target>/<name> gets prefix (plen bytes) then data. */
static void seed_write(const char *target, const char *name, const void *prefix, size_t plen,
                       const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", seed_root, target);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/%s/%s", seed_root, target, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(prefix, 1, plen, f) != plen || fwrite(data, 1, len, f) != len ||
        fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* A file a writer of the product made, as a seed. */
static void seed_copy_file(const char *target, const char *name, const void *prefix, size_t plen,
                           const char *from)
{
    FILE *f = fopen(from, "rb");
    static uint8_t buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
    if (f == NULL) {
        perror(from);
        exit(1);
    }
    fclose(f);
    seed_write(target, name, prefix, plen, buf, n);
}

static const unsigned seed_ops[] = {
#define SEED_X_OP(OP, val, lname, RQ, RP, ...) PDCBB_OP_##OP,
    PDCBB_OPS(SEED_X_OP)
#undef SEED_X_OP
};
#define SEED_NOPS (sizeof(seed_ops) / sizeof(seed_ops[0]))

/* One body as fuzz_proto (and, a request, fuzz_dispatch) reads it (op index, flags) and the
 * whole message for fuzz_shm. */
static void seed_message(unsigned op_index, int is_reply, const void *body, const char *what)
{
    unsigned op = seed_ops[op_index];
    uint8_t token[PDCBB_TOKEN_LEN];
    memset(token, 0x5a, sizeof(token));
    pdcbb_msg_hdr_t h;
    pdcbb_request_hdr(&h, op, 42, token);
    if (is_reply) {
        h.flags = PDCBB_MSG_FLAG_REPLY;
        memset(h.token, 0, sizeof(h.token));
    }
    void *msg;
    size_t len;
    if (pdcbb_msg_build(&h, body, &msg, &len) != PDCBB_OK) {
        fprintf(stderr, "cannot encode %s\n", pdcbb_op_name(op));
        exit(1);
    }
    char name[96];
    uint8_t pre[2] = {(uint8_t)op_index, (uint8_t)is_reply};
    snprintf(name, sizeof(name), "%s-%s-%s", pdcbb_op_name(op), is_reply ? "rep" : "req", what);
    seed_write("proto", name, pre, 2, (uint8_t *)msg + PDCBB_HDR_LEN, len - PDCBB_HDR_LEN);
    if (!is_reply) /* fuzz_dispatch: the same op index, a request body, no bulk part */
        seed_write("dispatch", name, pre, 2, (uint8_t *)msg + PDCBB_HDR_LEN, len - PDCBB_HDR_LEN);
    if (strcmp(what, "content") == 0) {
        pre[1] |= 2;
        snprintf(name, sizeof(name), "msg-%s-%s", pdcbb_op_name(op), is_reply ? "rep" : "req");
        seed_write("proto", name, pre, 2, msg, len);
        uint8_t shm[9] = {(uint8_t)is_reply};
        for (int i = 0; i < 8; i++)
            shm[1 + i] = (uint8_t)((uint64_t)len >> (8 * i));
        if (is_reply || pdcbb_shm_op_allowed(op))
            seed_write("shm", name, shm, sizeof(shm), msg, len);
    }
    free(msg);
}

static void seed_proto(void)
{
    pdcbb_any_body_t body;
    for (unsigned i = 0; i < SEED_NOPS; i++) { /* every op reached (replies share bodies) */
        memset(&body, 0, sizeof(body));
        seed_message(i, 0, &body, "zero");
    }
    /* Messages with strings, arrays and blobs, for the ops that have them. */
    uint64_t dims[] = {4, 6}, descs[] = {0x2000100000000001ull, 4, 2, 4, 6, 0, 0, 2, 6};
    for (unsigned i = 0; i < SEED_NOPS; i++) {
        unsigned op = seed_ops[i];
        memset(&body, 0, sizeof(body));
        if (op == PDCBB_OP_OBJ_CREATE) {
            body.obj_create_req = (pdcbb_obj_create_req_t){.cont_id = 0x1000000000000001ull,
                                                           .name = "temperature",
                                                           .type = 1,
                                                           .dims = dims,
                                                           .dims_count = 2,
                                                           .app_name = "sim",
                                                           .tags = "a=1"};
            seed_message(i, 0, &body, "content");
            body.obj_create_rep = (pdcbb_obj_create_rep_t){.id = 0x2000000000000001ull,
                                                           .cont_id = 0x1000000000000001ull,
                                                           .name = "temperature",
                                                           .type = 1,
                                                           .dims = dims,
                                                           .dims_count = 2};
            seed_message(i, 1, &body, "content");
        } else if (op == PDCBB_OP_DATA_WRITE) {
            body.data_write_req = (pdcbb_data_write_req_t){.descs = descs, .descs_count = 9};
            seed_message(i, 0, &body, "content");
        } else if (op == PDCBB_OP_TAG_PUT) {
            body.tag_put_req = (pdcbb_tag_put_req_t){.id = 0x2000000000000001ull,
                                                     .name = "units",
                                                     .type = 4,
                                                     .value = "K",
                                                     .value_len = 2};
            seed_message(i, 0, &body, "content");
        } else if (op == PDCBB_OP_HELLO) {
            static const uint8_t nonce[32] = {1, 2, 3}, proof[32] = {4, 5, 6};
            body.hello_req = (pdcbb_hello_req_t){.client_pid = 77,
                                                 .job_id = 9,
                                                 .client_node = "node1",
                                                 .nonce = nonce,
                                                 .nonce_len = sizeof(nonce)};
            seed_message(i, 0, &body, "content");
            body.hello_rep = (pdcbb_hello_rep_t){.rank = 0,
                                                 .nservers = 2,
                                                 .job_id = 9,
                                                 .node = "node1",
                                                 .nonce = nonce,
                                                 .nonce_len = sizeof(nonce),
                                                 .proof = proof,
                                                 .proof_len = sizeof(proof)};
            seed_message(i, 1, &body, "content");
        } else if (op == PDCBB_OP_AUTH) {
            static const uint8_t proof[32] = {7, 8, 9};
            body.auth_req = (pdcbb_auth_req_t){.proof = proof, .proof_len = sizeof(proof)};
            seed_message(i, 0, &body, "content");
        }
    }
}

static void seed_kv(void)
{
    uint8_t key[16], buf[256];
    size_t klen = pdcbb_kv_enc_str("alpha", 5, key), n = 0;
    pdcbb_kv_wrec_t set = {.op = PDCBB_KV_OP_SET,
                           .key = key,
                           .key_len = klen,
                           .value = (const uint8_t *)"value",
                           .value_len = 5};
    pdcbb_kv_wrec_t unlink = {.op = PDCBB_KV_OP_UNLINK, .key = key, .key_len = klen};
    pdcbb_kv_wrec_t part = {
        .op = PDCBB_KV_OP_SET_PART, .key = key, .key_len = klen, .upload = 3, .value_len = 1 << 20};
    n += pdcbb_kv_wset_put(&set, buf + n);
    n += pdcbb_kv_wset_put(&unlink, buf + n);
    n += pdcbb_kv_wset_put(&part, buf + n);
    uint8_t pre[4] = {0, PDCBB_KV_STRING, 0, 0};
    seed_write("kv", "set-string", pre, 4, buf, n);
    pdcbb_kv_enc_int(-5, key);
    pdcbb_kv_wrec_t seti = {.op = PDCBB_KV_OP_SET,
                            .key = key,
                            .key_len = 8,
                            .value = (const uint8_t *)"v",
                            .value_len = 1};
    n = pdcbb_kv_wset_put(&seti, buf);
    pre[1] = PDCBB_KV_INT;
    seed_write("kv", "set-int", pre, 4, buf, n);
    pdcbb_kv_wrec_t list = {.key = key,
                            .key_len = 8,
                            .tag = 4,
                            .value = (const uint8_t *)"xy",
                            .value_len = 2,
                            .included = 1};
    n = pdcbb_kv_wlist_put(&list, buf);
    pre[0] = 1;
    seed_write("kv", "list-int", pre, 4, buf, n);
    pdcbb_kv_meta_t m = {.id = 0x3000000000000001ull,
                         .cont_id = 0x1000000000000001ull,
                         .key_type = PDCBB_KV_STRING,
                         .sharding = PDCBB_KV_SHARD_HASH,
                         .max_key_len = 64,
                         .nshards = 2,
                         .shards = {0, 1},
                         .name = "kv1"};
    n = pdcbb_kv_meta_encode(&m, buf);
    pre[0] = 2;
    seed_write("kv", "meta", pre, 4, buf, n);
    klen = pdcbb_kv_enc_str("beta", 4, key);
    pdcbb_kv_rec_val_build(key, klen, 0, "val", 3, buf);
    pre[0] = 3;
    seed_write("kv", "rec-value", pre, 4, buf, pdcbb_kv_rec_val_size(key, klen, 0, 3));
}

static void seed_jobdir(const char *tmp)
{
    pdcbb_endpoint_t ep = {.job_id = 9,
                           .rank = 1,
                           .nservers = 2,
                           .node = "node1",
                           .ip = "10.0.0.1",
                           .port = 4000,
                           .pid = 1234};
    memset(ep.token, 0xab, sizeof(ep.token));
    char text[2048], table[4096];
    for (uint8_t with_token = 0; with_token < 2; with_token++) {
        pdcbb_endpoint_format(&ep, with_token, text, sizeof(text));
        seed_write("jobdir", with_token ? "endpoint-token" : "endpoint", &with_token, 1, text,
                   strlen(text));
    }
    pdcbb_endpoint_format(&ep, 1, text, sizeof(text));
    snprintf(table, sizeof(table), "%s%s", text, PDCBB_JOB_TABLE_SEP);
    ep.rank = 0;
    ep.port = 4001;
    pdcbb_endpoint_format(&ep, 1, text, sizeof(text));
    strcat(table, text);
    strcat(table, PDCBB_JOB_TABLE_SEP);
    uint8_t mode = 2;
    seed_write("jobdir", "job-table", &mode, 1, table, strlen(table));
    pdcbb_jobinfo_t ji = {.job_id = 9,
                          .instance = "0123456789abcdef0123456789abcdef",
                          .cluster = "local",
                          .node = "node1",
                          .node_index = 0,
                          .nnodes = 2,
                          .servers_per_node = 1,
                          .rendezvous = "/home/u/.pdcbb/job.9.x"};
    char path[4096];
    if (pdcbb_jobinfo_write(tmp, &ji) != PDCBB_OK)
        exit(1);
    mode = 3;
    snprintf(path, sizeof(path), "%s/job.info", tmp);
    seed_copy_file("jobdir", "job-info", &mode, 1, path);
    uint8_t token[PDCBB_TOKEN_LEN];
    memset(token, 0x3c, sizeof(token));
    snprintf(path, sizeof(path), "%s/token", tmp);
    if (pdcbb_token_write(path, token) != PDCBB_OK)
        exit(1);
    mode = 4;
    seed_copy_file("jobdir", "token", &mode, 1, path);
}

static void seed_drain(const char *tmp)
{
    pdcbb_drain_t *m = pdcbb_drain_new();
    char path[4096], err[1024];
    pdcbb_drain_rank_t r = {
        .rank = 0, .node = "node1", .data_file = "data/rank-00000.dat", .data_bytes = 96};
    uint8_t tagval[] = "K";
    pdcbb_drain_tag_t tag = {.name = "units", .type = 4, .value = tagval, .len = 2};
    pdcbb_drain_cont_t c = {.id = 0x1000000000000001ull, .name = "c1", .tags = &tag, .ntags = 1};
    pdcbb_drain_object_t o = {.id = 0x2000000000000001ull,
                              .cont_id = c.id,
                              .name = "temperature",
                              .container = "c1",
                              .type = 1,
                              .element_size = 4,
                              .ndim = 2,
                              .dims = {4, 6},
                              .app_name = "sim",
                              .data_loc = "",
                              .tags_str = ""};
    pdcbb_drain_extent_t e = {.object_id = o.id,
                              .object_offset = 0,
                              .length = 48,
                              .file = "data/rank-00000.dat",
                              .crc32c = 0x12345678};
    pdcbb_drain_extent_t d = e;
    d.object_offset = 48;
    d.file_offset = 48;
    d.damaged = PDCBB_DRAIN_DAMAGED_CHECKSUM;
    pdcbb_drain_kv_t kv = {.id = 0x3000000000000001ull,
                           .name = "kv1",
                           .container = "c1",
                           .cont_id = c.id,
                           .nshards = 1,
                           .max_key_len = 64,
                           .sharding = 1};
    pdcbb_drain_kvdump_t kd = {
        .kv = kv.id, .file = "kv/rank-00000.0.kvd", .records = 2, .bytes = 100, .crc32c = 7};
    m->job_id = 9;
    m->user = "u";
    m->instance = "0123456789abcdef0123456789abcdef";
    m->files = (pdcbb_drain_files_ref_t){
        .list = PDCBB_DRAIN_FILES_LIST, .entries = 4, .bytes = 231, .crc32c = 0x1b2c3d4e};
    m->nservers = 1;
    m->servers_per_node = 1;
    if (pdcbb_drain_add_rank(m, &r) || pdcbb_drain_add_cont(m, &c, NULL) ||
        pdcbb_drain_add_object(m, &o, NULL) || pdcbb_drain_add_extent(m, &e) ||
        pdcbb_drain_add_extent(m, &d) || pdcbb_drain_add_kv(m, &kv) ||
        pdcbb_drain_add_kvdump(m, &kd))
        exit(1);
    snprintf(path, sizeof(path), "%s/manifest.yaml", tmp);
    if (pdcbb_drain_write_manifest(m, path, err, sizeof(err)) != PDCBB_OK) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    m->user = NULL; /* not the model's to free */
    m->instance = NULL;
    m->files.list = NULL;
    pdcbb_drain_free(m);

    /* A list of files: a directory, a file with a space and a newline in its name, a link to
     * it, a damaged file. */
    pdcbb_drain_files_t *fl = calloc(1, sizeof(*fl));
    const pdcbb_drain_file_t fe[] = {
        {.path = "d", .type = PDCBB_DRAIN_FILE_DIR, .mode = 0755, .mtime_ns = 1},
        {.path = "d/a b\nc",
         .type = PDCBB_DRAIN_FILE_REG,
         .mode = 0640,
         .size = 5,
         .mtime_ns = 1600000000123456789ull,
         .crc32c = 0xdeadbeef},
        {.path = "link",
         .type = PDCBB_DRAIN_FILE_LINK,
         .mode = 0777,
         .size = 7,
         .mtime_ns = 2,
         .target = "d/a b\nc"},
        {.path = "zero", .type = PDCBB_DRAIN_FILE_REG, .mode = 0600, .damaged = 1},
    };
    char *text = NULL;
    size_t tlen = 0;
    for (size_t i = 0; i < sizeof(fe) / sizeof(fe[0]); i++)
        if (fl == NULL || pdcbb_drain_files_add(fl, &fe[i]) != PDCBB_OK)
            exit(1);
    if (pdcbb_drain_files_format(fl, &text, &tlen) != PDCBB_OK)
        exit(1);
    seed_write("drain_files", "list", "", 0, text, tlen);
    free(text);
    pdcbb_drain_files_free(fl);
    for (uint8_t mode = 0; mode < 2; mode++)
        seed_copy_file("drain_manifest", mode ? "part" : "manifest", &mode, 1, path);

    /* A KV dump of two keys, one with two versions and a deletion marker. */
    pdcbb_kvd_header_t h = {.key_type = PDCBB_KVK_STRING,
                            .sharding = 1,
                            .nshards = 1,
                            .kv_id = kv.id,
                            .container = "c1",
                            .name = "kv1"};
    pdcbb_kvd_writer_t *w;
    snprintf(path, sizeof(path), "%s/dump.kvd", tmp);
    if (pdcbb_kvd_create(path, &h, &w, err, sizeof(err)) != PDCBB_OK ||
        pdcbb_kvd_add(w, "a", 2, 0, 0, "a0", 2) || pdcbb_kvd_add(w, "a", 2, 4, 1, NULL, 0) ||
        pdcbb_kvd_add(w, "b", 2, 1, 0, "b1", 2) ||
        pdcbb_kvd_close(w, NULL, err, sizeof(err)) != PDCBB_OK) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    for (uint8_t mode = 0; mode < 2; mode++) {
        uint8_t pre[2] = {mode, PDCBB_KVK_STRING};
        seed_copy_file("kv_dump", mode ? "view" : "records", pre, 2, path);
    }
}

static void seed_config(const char *tmp)
{
    pdcbb_config_t *c = malloc(sizeof(*c));
    char path[4096], err[PDCBB_CONFIG_ERR_LEN];
    pdcbb_config_init(c);
    snprintf(path, sizeof(path), "%s/config.yaml", tmp);
    if (pdcbb_config_write_file(c, path) != PDCBB_OK)
        exit(1);
    uint8_t mode = 0;
    seed_copy_file("config", "defaults", &mode, 1, path);
    static const char *const specs[] = {
        "capacity=2G,drain=/scratch/u,servers_per_node=2",
        "placement=region_dynamic",
        "log_level=debug,request_timeout=5",
        "stage_in=/scratch/u/pdcbb.7,drain_share=group",
    };
    mode = 2;
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        pdcbb_config_init(c);
        if (pdcbb_config_parse_spec(c, specs[i], err, sizeof(err)) != PDCBB_OK) {
            fprintf(stderr, "%s\n", err);
            exit(1);
        }
        snprintf(path, sizeof(path), "spec-%zu", i);
        seed_write("config", path, &mode, 1, specs[i], strlen(specs[i]));
    }
    const char user[] = "capacity: 4G\ndrain: /scratch/u\nplacement: region_static\n";
    mode = 1;
    seed_write("config", "user", &mode, 1, user, strlen(user));
    free(c);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds CORPUS_DIR\n");
        return 2;
    }
    seed_root = argv[1];
    const char *tmp = fuzz_dir();
    seed_proto();
    seed_kv();
    seed_jobdir(tmp);
    seed_drain(tmp);
    seed_config(tmp);
    return 0;
}
