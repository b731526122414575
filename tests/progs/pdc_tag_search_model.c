/*
 * pdc_tag_search_model - randomized model test of tag search (PDC_Client_query_kvtag with
 * patterns) and of the DART calls (insert, search, delete object references), against a
 * brute-force scan of a model kept in this process. For tests/bats/76-tag-search.bats.
 *
 *   pdc_tag_search_model --seed S [--objects N] [--ops M] [--queries Q] [--phase both|write|check]
 *                        [--inject-mismatch] [--drained]
 *
 * From the seed alone the program derives N objects ("tsm<S>_<i>" in container "tsmc<S>"),
 * and M random operations on them: put a string tag (new or overwrite; names and values over a
 * 4-letter alphabet so patterns match many, and now and then names over 240 bytes and values
 * over 240 bytes, which the daemons' index cuts), put an integer tag, delete a tag, delete an
 * object (its tags and the DART references to it go too), insert and delete DART references
 * (to objects, and to plain numbers placed by number), and every 16 operations a random query.
 * Then Q queries of every kind: exact, prefix "x*", suffix "*x", infix "*x*" on tag names, on
 * string tag values, on DART keys and on DART values, with literals cut from stored strings (so
 * they match) or random, plus integer-valued tag queries (exact bytes) and quoted DART values
 * (key="value"). Every answer is compared with the model's; the first difference prints the
 * query, the expected and the actual ids and exits 1.
 *
 * A search sees every object of the job: run one model per job (or the answers include the
 * objects of the other runs). --phase write stops after the operations; --phase check replays the
 * operations in the model only (no calls), opens the surviving objects to learn their ids, and runs
 * the queries: with a daemon restart in between, this checks that the indexes persist.
 * --inject-mismatch drops one expected id (to show the checker fails). --drained is the check phase
 * against a drained job (PDCBB_DRAINED_DIR): tag queries only (a drain has no DART references).
 * Output ends with "OK" and a summary line.
 *
 * --bad-inputs instead tries every call with bad input (NULL strings, empty patterns, patterns
 * of only '*', a query without '=', over-long keys and values, bad enum values) and prints
 * "bad CASE: ERROR_NAME: message" for each; a call that succeeds, or fails with another error
 * than expected, is reported as "WRONG" and the exit status is 1.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"
#include "pdc_client_connect.h"

#define MAXOBJ 512
#define MAXTAG 6
#define MAXREF 4096
#define ALPHA "abcd"

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static unsigned rn(unsigned n) { return n ? (unsigned)(rnd() % n) : 0; }
/* Queries draw from their own stream, so the check phase replays the same operations. */
static uint64_t qstate = 0x5eed;
#define QUERY_RNG_BEGIN                                                                           \
    uint64_t saved_rng = rng_state;                                                               \
    rng_state = qstate
#define QUERY_RNG_END                                                                             \
    qstate = rng_state;                                                                           \
    rng_state = saved_rng

typedef struct tag {
    char *name;
    char *sval; /* string value (NULL: integer tag) */
    int ival;
} tag_t;

typedef struct obj {
    char name[64];
    int live;
    uint64_t meta;
    pdcid_t id;
    tag_t tags[MAXTAG];
    int ntags;
} obj_t;

typedef struct ref {
    int type;
    char key[256], val[256];
    int obj;       /* index of the object it names, or -1 */
    uint64_t data; /* for obj -1 */
    int live;
} ref_t;

static obj_t objs[MAXOBJ];
static int nobj;
static ref_t refs[MAXREF];
static int nref;
static int calls; /* 0 in the check phase's replay */
static int inject;
static int drained; /* --drained: the check phase against a drained job (no DART, no writes) */
static long nqueries, nhits;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    exit(1);
}

static void fail_call(const char *what)
{
    die("FAIL %s: %s: %s", what, PDCbb_last_error_name(), PDCbb_last_error_message());
}

static char *rand_text(unsigned minlen, unsigned maxlen)
{
    unsigned len = minlen + rn(maxlen - minlen + 1);
    if (rn(40) == 0)
        len = 241 + rn(60); /* longer than the index keeps */
    char *s = malloc(len + 1);
    for (unsigned i = 0; i < len; i++)
        s[i] = ALPHA[rn(4)];
    s[len] = 0;
    return s;
}

static uint64_t ref_data(const ref_t *r) { return r->obj >= 0 ? objs[r->obj].meta : r->data; }

/* ------------------------------------------------------------------ operations */

static void op_put_tag(void)
{
    int o = (int)rn((unsigned)nobj);
    if (!objs[o].live)
        return;
    obj_t *x = &objs[o];
    int t = x->ntags && rn(3) == 0 ? (int)rn((unsigned)x->ntags) : -1; /* overwrite */
    if (t < 0 && x->ntags == MAXTAG)
        t = (int)rn(MAXTAG);
    int is_int = rn(6) == 0;
    char *name = t >= 0 ? x->tags[t].name : rand_text(1, 6);
    if (t < 0)
        for (int i = 0; i < x->ntags; i++)
            if (strcmp(x->tags[i].name, name) == 0)
                t = i; /* same name drawn again: an overwrite too */
    char *sval = is_int ? NULL : rand_text(1, 8);
    int ival = (int)rn(5);
    if (calls) {
        perr_t rc = is_int ? PDCobj_put_tag(x->id, name, &ival, PDC_INT, sizeof(int))
                           : PDCobj_put_tag(x->id, name, sval, PDC_STRING, strlen(sval) + 1);
        if (rc != SUCCEED)
            fail_call("PDCobj_put_tag");
    }
    if (t < 0) {
        t = x->ntags++;
        x->tags[t].name = name;
    } else {
        free(x->tags[t].sval);
        if (name != x->tags[t].name)
            free(name);
    }
    x->tags[t].sval = sval;
    x->tags[t].ival = ival;
}

static void op_del_tag(void)
{
    int o = (int)rn((unsigned)nobj);
    obj_t *x = &objs[o];
    if (!x->live || x->ntags == 0)
        return;
    int t = (int)rn((unsigned)x->ntags);
    if (calls && PDCobj_del_tag(x->id, x->tags[t].name) != SUCCEED)
        fail_call("PDCobj_del_tag");
    free(x->tags[t].name);
    free(x->tags[t].sval);
    x->tags[t] = x->tags[--x->ntags];
}

static void op_del_obj(void)
{
    int o = (int)rn((unsigned)nobj);
    obj_t *x = &objs[o];
    if (!x->live)
        return;
    if (calls && PDCobj_del(x->id) != SUCCEED)
        fail_call("PDCobj_del");
    x->live = 0;
    x->ntags = 0;
    for (int i = 0; i < nref; i++)
        if (refs[i].obj == o)
            refs[i].live = 0; /* the daemon drops references to a deleted object */
}

static void op_dart_insert(void)
{
    if (nref == MAXREF)
        return;
    ref_t *r = &refs[nref];
    r->type = 1 + (int)rn(3);
    char *k = rand_text(1, 6), *v = rand_text(1, 8);
    if (strlen(k) > 240)
        k[240] = 0;
    if (strlen(v) > 240)
        v[240] = 0;
    snprintf(r->key, sizeof r->key, "%s", k);
    snprintf(r->val, sizeof r->val, "%s", v);
    free(k);
    free(v);
    r->obj = -1;
    if (rn(4) != 0) {
        int o = (int)rn((unsigned)nobj);
        if (!objs[o].live)
            return;
        r->obj = o;
    } else {
        r->data = rnd() & ((1ull << 59) - 1); /* not an object id: placed by number */
    }
    int dup = -1;
    for (int i = 0; i < nref; i++)
        if (refs[i].live && refs[i].type == r->type && strcmp(refs[i].key, r->key) == 0 &&
            strcmp(refs[i].val, r->val) == 0 && ref_data(&refs[i]) == ref_data(r))
            dup = i;
    if (calls && PDC_Client_insert_obj_ref_into_dart(DART_HASH, r->key, r->val,
                                                     (dart_object_ref_type_t)r->type,
                                                     ref_data(r)) != SUCCEED)
        fail_call("PDC_Client_insert_obj_ref_into_dart");
    if (dup < 0) {
        r->live = 1;
        nref++;
    }
}

static void op_dart_delete(void)
{
    if (nref == 0)
        return;
    ref_t *r = &refs[rn((unsigned)nref)];
    /* The reference as the daemon knows it: live if any live record is the same. */
    ref_t *live = NULL;
    for (int i = 0; i < nref && live == NULL; i++)
        if (refs[i].live && refs[i].type == r->type && strcmp(refs[i].key, r->key) == 0 &&
            strcmp(refs[i].val, r->val) == 0 && ref_data(&refs[i]) == ref_data(r))
            live = &refs[i];
    if (calls) {
        perr_t rc = PDC_Client_delete_obj_ref_from_dart(DART_HASH, r->key, r->val,
                                                        (dart_object_ref_type_t)r->type,
                                                        ref_data(r));
        if (live && rc != SUCCEED)
            fail_call("PDC_Client_delete_obj_ref_from_dart");
        if (!live && (rc == SUCCEED || PDCbb_last_error() != 4 /* NOT_FOUND */))
            die("FAIL deleting a reference that is gone: expected PDCBB_ERR_NOT_FOUND, got %s",
                rc == SUCCEED ? "SUCCEED" : PDCbb_last_error_name());
    }
    if (live)
        live->live = 0;
}

/* ------------------------------------------------------------------ queries */

/* A pattern of kind k (0 exact, 1 prefix, 2 suffix, 3 infix) from src (or random). */
static void make_pattern(char *out, size_t cap, int k, const char *src)
{
    char lit[300];
    size_t n = src ? strlen(src) : 0;
    if (src == NULL || rn(8) == 0) {
        char *r = rand_text(1, 3);
        snprintf(lit, sizeof lit, "%.240s", r);
        free(r);
    } else if (k == 0) {
        snprintf(lit, sizeof lit, "%s", src);
    } else {
        size_t i = k == 1 ? 0 : rn((unsigned)n);
        size_t j = k == 2 ? n : i + 1 + rn((unsigned)(n - i));
        if (k == 3 && rn(3) == 0 && n > 20) { /* long infix: beyond what suffix entries keep */
            i = rn((unsigned)(n - 20));
            j = i + 18 + rn(3);
        }
        snprintf(lit, sizeof lit, "%.*s", (int)(j - i), src + i);
    }
    snprintf(out, cap, "%s%s%s", k >= 2 ? "*" : "", lit, k == 1 || k == 3 ? "*" : "");
}

static int pat_match(const char *pat, const char *text)
{
    size_t pl = strlen(pat), tl = strlen(text);
    int lead = pat[0] == '*', trail = pl > 1 && pat[pl - 1] == '*';
    const char *lit = pat + lead;
    size_t ll = pl - (size_t)lead - (size_t)trail;
    if (lead && trail) {
        for (size_t i = 0; i + ll <= tl; i++)
            if (strncmp(text + i, lit, ll) == 0)
                return 1;
        return 0;
    }
    if (lead)
        return tl >= ll && strncmp(text + tl - ll, lit, ll) == 0;
    if (trail)
        return tl >= ll && strncmp(text, lit, ll) == 0;
    return tl == ll && strncmp(text, lit, ll) == 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void compare(const char *what, uint64_t *exp, int ne, const uint64_t *got, int ng)
{
    qsort(exp, (size_t)ne, 8, cmp_u64);
    int k = 0;
    for (int i = 0; i < ne; i++)
        if (k == 0 || exp[k - 1] != exp[i])
            exp[k++] = exp[i];
    ne = k;
    if (inject && ne > 0) {
        ne--;
        inject = 0;
    }
    nqueries++;
    nhits += ne;
    int same = ne == ng;
    for (int i = 0; same && i < ne; i++)
        same = exp[i] == got[i];
    if (!same) {
        printf("MISMATCH %s: expected %d ids, got %d\n  expected:", what, ne, ng);
        for (int i = 0; i < ne && i < 20; i++)
            printf(" %#" PRIx64, exp[i]);
        printf("\n  got:     ");
        for (int i = 0; i < ng && i < 20; i++)
            printf(" %#" PRIx64, got[i]);
        printf("\n");
        /* What the model holds for the objects in either list. */
        for (int o = 0; o < nobj; o++) {
            int listed = 0;
            for (int i = 0; i < ng; i++)
                listed |= got[i] == objs[o].meta;
            for (int i = 0; i < ne; i++)
                listed |= exp[i] == objs[o].meta;
            if (!listed)
                continue;
            printf("  model %s %#" PRIx64 " live=%d:", objs[o].name, objs[o].meta, objs[o].live);
            for (int t = 0; t < objs[o].ntags; t++)
                if (objs[o].tags[t].sval)
                    printf(" %.40s='%.40s'", objs[o].tags[t].name, objs[o].tags[t].sval);
                else
                    printf(" %.40s=int %d", objs[o].tags[t].name, objs[o].tags[t].ival);
            printf("\n");
        }
        die("");
    }
}

static const char *some_name(void)
{
    for (int tries = 0; tries < 8; tries++) {
        obj_t *x = &objs[rn((unsigned)nobj)];
        if (x->live && x->ntags)
            return x->tags[rn((unsigned)x->ntags)].name;
    }
    return NULL;
}

static const char *some_sval(void)
{
    for (int tries = 0; tries < 16; tries++) {
        obj_t *x = &objs[rn((unsigned)nobj)];
        if (x->live && x->ntags) {
            tag_t *t = &x->tags[rn((unsigned)x->ntags)];
            if (t->sval)
                return t->sval;
        }
    }
    return NULL;
}

static void query_kvtag(int nk, int vk, int int_value)
{
    char np[300], vp[300], what[700];
    make_pattern(np, sizeof np, nk, some_name());
    make_pattern(vp, sizeof vp, vk, some_sval());
    int iv = (int)rn(5);
    uint64_t exp[MAXOBJ];
    int ne = 0;
    for (int o = 0; o < nobj; o++) {
        obj_t *x = &objs[o];
        if (!x->live)
            continue;
        for (int t = 0; t < x->ntags; t++) {
            tag_t *g = &x->tags[t];
            if (!pat_match(np, g->name))
                continue;
            if (int_value ? (g->sval == NULL && g->ival == iv)
                          : (g->sval != NULL && pat_match(vp, g->sval))) {
                exp[ne++] = x->meta;
                break;
            }
        }
    }
    pdc_kvtag_t q = {.name = np};
    char quoted[310];
    if (int_value) {
        q.type = PDC_INT;
        q.value = &iv;
        q.size = sizeof iv;
        snprintf(what, sizeof what, "kvtag name '%s' int value %d", np, iv);
    } else {
        q.type = PDC_STRING;
        if (rn(4) == 0) { /* PDC's newer syntax: the value in double quotes */
            snprintf(quoted, sizeof quoted, "\"%s\"", vp);
            q.value = quoted;
        } else {
            q.value = vp;
        }
        q.size = (uint32_t)strlen(q.value) + 1;
        snprintf(what, sizeof what, "kvtag name '%s' value '%s'", np, (char *)q.value);
    }
    int n = -1;
    uint64_t *ids = NULL;
    if (PDC_Client_query_kvtag(&q, &n, &ids) != SUCCEED)
        fail_call(what);
    compare(what, exp, ne, ids, n);
    free(ids);
}

static void query_dart(int kk, int vk)
{
    const char *ks = NULL, *vs = NULL;
    int type = 1 + (int)rn(3);
    if (nref) {
        ref_t *r = &refs[rn((unsigned)nref)];
        ks = r->key;
        r = &refs[rn((unsigned)nref)];
        vs = r->val;
        type = rn(4) ? r->type : type;
    }
    char kp[300], vp[300], query[700];
    make_pattern(kp, sizeof kp, kk, ks);
    make_pattern(vp, sizeof vp, vk, vs);
    snprintf(query, sizeof query, rn(4) == 0 ? "%s=\"%s\"" : "%s=%s", kp, vp);
    uint64_t *exp = malloc((size_t)(nref + 1) * 8);
    int ne = 0;
    for (int i = 0; i < nref; i++)
        if (refs[i].live && refs[i].type == type && pat_match(kp, refs[i].key) &&
            pat_match(vp, refs[i].val))
            exp[ne++] = ref_data(&refs[i]);
    char what[800];
    snprintf(what, sizeof what, "DART type %d query '%s'", type, query);
    int n = -1;
    uint64_t *ids = NULL;
    if (PDC_Client_search_obj_ref_through_dart(DART_HASH, query, (dart_object_ref_type_t)type, &n,
                                               &ids) != SUCCEED)
        fail_call(what);
    compare(what, exp, ne, ids, n);
    free(ids);
    free(exp);
}

static void query_random(void)
{
    QUERY_RNG_BEGIN;
    switch (rn(3)) {
    case 0: query_kvtag((int)rn(4), (int)rn(4), 0); break;
    case 1: query_kvtag((int)rn(4), 0, 1); break;
    default: query_dart((int)rn(4), (int)rn(4)); break;
    }
    QUERY_RNG_END;
}

/* ------------------------------------------------------------------ bad input */

static int bad_wrong;

static void expect_fail(const char *what, perr_t rc, const char *err)
{
    if (rc == SUCCEED || strcmp(PDCbb_last_error_name(), err) != 0) {
        printf("WRONG %s: expected %s, got %s\n", what, err,
               rc == SUCCEED ? "SUCCEED" : PDCbb_last_error_name());
        bad_wrong = 1;
        return;
    }
    printf("bad %s: %s: %s\n", what, PDCbb_last_error_name(), PDCbb_last_error_message());
}

static int bad_inputs(void)
{
    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0)
        fail_call("PDCinit");
    char longk[300], k241[242];
    memset(longk, 'k', sizeof longk - 1);
    longk[sizeof longk - 1] = 0;
    memset(k241, 'k', 241);
    k241[241] = 0;
    char q243[600];
    snprintf(q243, sizeof q243, "%sxx=v", k241); /* a literal of 243 bytes cannot be a key */
    char qlong[600];
    snprintf(qlong, sizeof qlong, "k=%s*", longk);
    int n;
    uint64_t *ids = NULL;
    const dart_hash_algo_t H = DART_HASH;
    const dart_object_ref_type_t R = REF_PRIMARY_ID;
    expect_fail("insert NULL key", PDC_Client_insert_obj_ref_into_dart(H, NULL, "v", R, 1),
                "PDCBB_ERR_INVAL");
    expect_fail("insert NULL value", PDC_Client_insert_obj_ref_into_dart(H, "k", NULL, R, 1),
                "PDCBB_ERR_INVAL");
    expect_fail("insert empty key", PDC_Client_insert_obj_ref_into_dart(H, "", "v", R, 1),
                "PDCBB_ERR_INVAL");
    expect_fail("insert key of 241 bytes",
                PDC_Client_insert_obj_ref_into_dart(H, k241, "v", R, 1), "PDCBB_ERR_TOO_BIG");
    expect_fail("insert value of 299 bytes",
                PDC_Client_insert_obj_ref_into_dart(H, "k", longk, R, 1), "PDCBB_ERR_TOO_BIG");
    expect_fail("insert bad hash_algo",
                PDC_Client_insert_obj_ref_into_dart((dart_hash_algo_t)7, "k", "v", R, 1),
                "PDCBB_ERR_INVAL");
    expect_fail("insert bad ref_type",
                PDC_Client_insert_obj_ref_into_dart(H, "k", "v", (dart_object_ref_type_t)0, 1),
                "PDCBB_ERR_INVAL");
    expect_fail("delete a reference never inserted",
                PDC_Client_delete_obj_ref_from_dart(H, "never", "there", R, 12345),
                "PDCBB_ERR_NOT_FOUND");
    expect_fail("delete NULL key", PDC_Client_delete_obj_ref_from_dart(H, NULL, "v", R, 1),
                "PDCBB_ERR_INVAL");
    expect_fail("search NULL query", PDC_Client_search_obj_ref_through_dart(H, NULL, R, &n, &ids),
                "PDCBB_ERR_INVAL");
    expect_fail("search NULL n_res", PDC_Client_search_obj_ref_through_dart(H, "k=v", R, NULL,
                                                                            &ids),
                "PDCBB_ERR_INVAL");
    expect_fail("search without '='",
                PDC_Client_search_obj_ref_through_dart(H, "kv", R, &n, &ids), "PDCBB_ERR_INVAL");
    expect_fail("search empty query", PDC_Client_search_obj_ref_through_dart(H, "", R, &n, &ids),
                "PDCBB_ERR_INVAL");
    expect_fail("search empty key pattern",
                PDC_Client_search_obj_ref_through_dart(H, "=v", R, &n, &ids), "PDCBB_ERR_INVAL");
    expect_fail("search empty value pattern",
                PDC_Client_search_obj_ref_through_dart(H, "k=", R, &n, &ids), "PDCBB_ERR_INVAL");
    expect_fail("search empty quoted value",
                PDC_Client_search_obj_ref_through_dart(H, "k=\"\"", R, &n, &ids),
                "PDCBB_ERR_INVAL");
    expect_fail("search key pattern '*'",
                PDC_Client_search_obj_ref_through_dart(H, "*=v", R, &n, &ids), "PDCBB_ERR_INVAL");
    expect_fail("search value pattern '**'",
                PDC_Client_search_obj_ref_through_dart(H, "k=**", R, &n, &ids), "PDCBB_ERR_INVAL");
    expect_fail("search '*=*'", PDC_Client_search_obj_ref_through_dart(H, "*=*", R, &n, &ids),
                "PDCBB_ERR_INVAL");
    expect_fail("search over-long key", PDC_Client_search_obj_ref_through_dart(H, q243, R, &n,
                                                                               &ids),
                "PDCBB_ERR_TOO_BIG");
    expect_fail("search over-long value pattern",
                PDC_Client_search_obj_ref_through_dart(H, qlong, R, &n, &ids),
                "PDCBB_ERR_TOO_BIG");
    expect_fail("search bad ref_type",
                PDC_Client_search_obj_ref_through_dart(H, "k=v", (dart_object_ref_type_t)9, &n,
                                                       &ids),
                "PDCBB_ERR_INVAL");
    int iv = 1;
    pdc_kvtag_t kv = {.name = NULL, .type = PDC_INT, .value = &iv, .size = sizeof iv};
    expect_fail("kvtag NULL", PDC_Client_query_kvtag(NULL, &n, &ids), "PDCBB_ERR_INVAL");
    expect_fail("kvtag NULL name", PDC_Client_query_kvtag(&kv, &n, &ids), "PDCBB_ERR_INVAL");
    kv.name = "";
    expect_fail("kvtag empty name", PDC_Client_query_kvtag(&kv, &n, &ids), "PDCBB_ERR_INVAL");
    kv.name = "*";
    expect_fail("kvtag name '*'", PDC_Client_query_kvtag(&kv, &n, &ids), "PDCBB_ERR_INVAL");
    kv.name = "n";
    kv.value = NULL;
    expect_fail("kvtag NULL value", PDC_Client_query_kvtag(&kv, &n, &ids), "PDCBB_ERR_INVAL");
    kv.type = PDC_STRING;
    kv.value = "**";
    kv.size = 3;
    expect_fail("kvtag value pattern '**'", PDC_Client_query_kvtag(&kv, &n, &ids),
                "PDCBB_ERR_INVAL");
    kv.value = "";
    kv.size = 1;
    expect_fail("kvtag empty string value", PDC_Client_query_kvtag(&kv, &n, &ids),
                "PDCBB_ERR_INVAL");
    char bigname[1100];
    memset(bigname, 'n', sizeof bigname - 1);
    bigname[sizeof bigname - 1] = 0;
    kv.name = bigname;
    kv.value = "v";
    kv.size = 2;
    expect_fail("kvtag name of 1099 bytes", PDC_Client_query_kvtag(&kv, &n, &ids),
                "PDCBB_ERR_TOO_BIG");
    /* The calls still work after all that. */
    if (PDC_Client_insert_obj_ref_into_dart(H, "after", "bad", R, 99) != SUCCEED ||
        PDC_Client_search_obj_ref_through_dart(H, "aft*=*ad", R, &n, &ids) != SUCCEED || n != 1 ||
        ids[0] != 99)
        fail_call("insert and search after bad input");
    free(ids);
    printf(bad_wrong ? "SOME WRONG\n" : "OK\n");
    PDCclose(pdc);
    return bad_wrong;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    uint64_t seed = 1;
    int nops = 1000, nq = 200;
    const char *phase = "both";
    nobj = 48;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--objects") && i + 1 < argc)
            nobj = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            nops = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--queries") && i + 1 < argc)
            nq = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--phase") && i + 1 < argc)
            phase = argv[++i];
        else if (!strcmp(argv[i], "--inject-mismatch"))
            inject = 1;
        else if (!strcmp(argv[i], "--drained"))
            drained = 1;
        else if (!strcmp(argv[i], "--bad-inputs"))
            return bad_inputs();
        else {
            fprintf(stderr,
                    "usage: %s --seed S [--objects N] [--ops M] [--queries Q] "
                    "[--phase both|write|check] [--inject-mismatch] [--drained]\n",
                    argv[0]);
            return 2;
        }
    }
    if (nobj < 1 || nobj > MAXOBJ || nops < 0 || nq < 0) {
        fprintf(stderr, "bad --objects (1..%d), --ops or --queries\n", MAXOBJ);
        return 2;
    }
    if (drained)
        phase = "check";
    int check_only = !strcmp(phase, "check"), write_only = !strcmp(phase, "write");
    rng_state = seed;
    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0)
        fail_call("PDCinit");
    char cname[64];
    snprintf(cname, sizeof cname, "tsmc%" PRIu64, seed);
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = drained ? PDCcont_open(cname, pdc) : PDCcont_create(cname, cprop);
    pdcid_t oprop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    if (cont == 0 || oprop == 0)
        fail_call("PDCcont_create");
    /* A type and dimensions: a drain writes only objects that have them. */
    uint64_t dims[1] = {1};
    if (PDCprop_set_obj_type(oprop, PDC_INT) != SUCCEED ||
        PDCprop_set_obj_dims(oprop, 1, dims) != SUCCEED)
        fail_call("PDCprop_set_obj_type");
    unsigned homes[8] = {0};
    for (int o = 0; o < nobj; o++) {
        snprintf(objs[o].name, sizeof objs[o].name, "tsm%" PRIu64 "_%d", seed, o);
        objs[o].live = 1;
        if (!check_only) {
            objs[o].id = PDCobj_create(cont, objs[o].name, oprop);
            if (objs[o].id == 0)
                fail_call("PDCobj_create");
            struct pdc_obj_info *info = PDCobj_get_info(objs[o].id);
            if (info == NULL)
                fail_call("PDCobj_get_info");
            objs[o].meta = info->meta_id;
            homes[(objs[o].meta >> 44) & 7]++;
        }
    }
    calls = !check_only;
    for (int i = 0; i < nops; i++) {
        unsigned r = rn(100);
        if (r < 45)
            op_put_tag();
        else if (r < 55)
            op_del_tag();
        else if (r < 58)
            op_del_obj();
        else if (r < 85)
            op_dart_insert();
        else
            op_dart_delete();
        if (calls && i % 16 == 15)
            query_random();
    }
    if (check_only) {
        /* The replay made the model; the objects that survived give their ids. */
        for (int o = 0; o < nobj; o++) {
            if (!objs[o].live)
                continue;
            objs[o].id = PDCobj_open(objs[o].name, pdc);
            struct pdc_obj_info *info = objs[o].id ? PDCobj_get_info(objs[o].id) : NULL;
            if (info == NULL)
                fail_call("PDCobj_open");
            objs[o].meta = info->meta_id;
            homes[(objs[o].meta >> 44) & 7]++;
        }
        calls = 1;
    }
    if (!write_only) {
        QUERY_RNG_BEGIN;
        for (int i = 0; i < nq; i++) {
            int k1 = i % 4, k2 = (i / 4) % 4;
            query_kvtag(k1, k2, 0);
            if (!drained)
                query_dart(k1, k2);
            if (i % 4 == 0)
                query_kvtag(k1, 0, 1);
        }
        QUERY_RNG_END;
    }
    int live = 0, lref = 0;
    for (int o = 0; o < nobj; o++)
        live += objs[o].live;
    for (int i = 0; i < nref; i++)
        lref += refs[i].live;
    printf("OK\nsummary seed=%" PRIu64 " objects=%d live=%d refs=%d queries=%ld hits=%ld homes=",
           seed, nobj, live, lref, nqueries, nhits);
    for (int s = 0; s < 8; s++)
        if (homes[s])
            printf("%s%d:%u", s ? "," : "", s, homes[s]);
    printf("\n");
    PDCclose(pdc);
    return 0;
}
