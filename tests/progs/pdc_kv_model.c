/*
 * pdc_kv_model - KV objects against an in-memory reference model, under mpirun.
 *
 *   mpirun -np N pdc_kv_model [--seed S] [--steps K] [--type int|float|string]
 *                             [--sharding hash|range] [--big] [--phase model|shared]
 *   pdc_kv_model --phase ackwrite --ack FILE [--seed S]   (no MPI needed: -np 1)
 *   pdc_kv_model --phase ackverify --ack FILE [--seed S]
 *   pdc_kv_model --phase txwrite | txcommit     (a transaction across a daemon restart)
 *   mpirun -np N pdc_kv_model --phase atomic [--steps K]
 *       rank 0 commits transactions that each rewrite 30 keys on every shard while the other
 *       ranks list them: every listing must show all 30 from one transaction.
 *
 * model: every rank runs the same random sequence of steps (same seed) and so keeps the whole
 *   model; in each step the ranks write concurrently (each rank the keys it owns: key index %
 *   ranks) with random sets, set_lists (some non-blocking), unlinks at a tag, NULLTAG and
 *   MAXTAG, into random tags, NULLTAG and the open transaction; rank 0 starts, commits and
 *   aborts transactions between steps; after a barrier every rank checks random gets at random
 *   tags, get_num, get_list and list_key pages against the model. Keys include 1024-byte
 *   strings sharing long prefixes (the long-key path), prefixes of each other, ints at the
 *   extremes, floats with -0.0 and infinities; values from 0 bytes to (--big) more than one
 *   message (PDCBB_PAYLOAD_MAX). Prints "MISMATCH ..." and exits 1 on any difference, "OK"
 *   on rank 0 at the end with counts.
 * shared: every rank writes the same keys at once; afterwards every rank must read the same
 *   value for each key (one of those written) and the same listing.
 * ackwrite: set_lists of 50 new records each until a call fails (a daemon was killed), each
 *   acknowledged batch number appended to FILE after its acknowledgement; ackverify: every
 *   acknowledged record is there with its value.
 */
#include <mpi.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdc.h"
#include "pdc_client_connect.h"
#include "pdc_kv.h"

static int rank, nranks;
static uint64_t shared_rng, local_rng;

static uint64_t xrand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}
static uint64_t rnd(uint64_t n) { return n ? xrand(&shared_rng) % n : 0; }
static uint64_t lrnd(uint64_t n) { return n ? xrand(&local_rng) % n : 0; }

static void die(const char *what)
{
    printf("MISMATCH rank %d: %s [last error %s: %s]\n", rank, what, PDCbb_last_error_name(),
           PDCbb_last_error_message());
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* ------------------------------------------------------------------ the model */

typedef struct ver {
    uint64_t tag;
    int deleted;
    uint8_t *val;
    uint64_t len;
} ver_t;

typedef struct mkey {
    pdc_kv_key_t k;
    char *str;
    ver_t *v; /* sorted by tag */
    size_t nv, cap;
} mkey_t;

#define NKEYS 120
static mkey_t keys[NKEYS];
static int key_type;
static uint64_t open_tx;       /* 0: none */
static uint64_t committed[4096];
static size_t ncommitted;

static int key_cmp(const mkey_t *a, const mkey_t *b)
{
    if (key_type == PDC_KV_INT)
        return (a->k.i > b->k.i) - (a->k.i < b->k.i);
    if (key_type == PDC_KV_FLOAT)
        return (a->k.f > b->k.f) - (a->k.f < b->k.f);
    return strcmp(a->str, b->str); /* strcmp compares as unsigned char */
}

static int cmp_idx(const void *a, const void *b)
{
    return key_cmp(&keys[*(const int *)a], &keys[*(const int *)b]);
}

static void make_keys(void)
{
    for (int i = 0; i < NKEYS; i++) {
        mkey_t *m = &keys[i];
        if (key_type == PDC_KV_INT) {
            static const int64_t special[] = {INT64_MIN, INT64_MAX, -1, 0, 1, 255, 256, -256};
            m->k = PDC_KV_KEY_INT(i < 8 ? special[i] : i < 60 ? (int64_t)(i - 30) : (int64_t)(rnd(1ull << 62)) - (1ll << 61));
        } else if (key_type == PDC_KV_FLOAT) {
            static const double special[] = {-INFINITY, INFINITY, 0.0, -1e-300, 1e-300, 1.0, -1.0, 1e300};
            m->k = PDC_KV_KEY_FLOAT(i < 8 ? special[i] : (double)((int64_t)rnd(2000000) - 1000000) / 1000.0 + (double)i / 1e9);
        } else {
            size_t len;
            char *s;
            if (i < 10) {
                /* long keys sharing a 600-byte prefix, differing at the end */
                len = 1024 - (size_t)(i % 3) * 100;
                s = malloc(len + 1);
                memset(s, 'p', 600);
                for (size_t j = 600; j < len; j++)
                    s[j] = (char)('a' + (j * 7 + (size_t)i) % 26);
            } else if (i < 14) {
                /* the boundary of the long-key form: 447..450 bytes, all 'q' (prefixes) */
                len = 447 + (size_t)(i - 10);
                s = malloc(len + 1);
                memset(s, 'q', len);
            } else if (i < 20) {
                /* prefixes of each other */
                len = (size_t)(i - 13);
                s = malloc(len + 1);
                memset(s, 'm', len);
            } else {
                len = 1 + rnd(24);
                s = malloc(len + 1);
                for (size_t j = 0; j < len; j++)
                    s[j] = (char)(j == 0 ? 'a' + rnd(26) : 0x21 + rnd(0x7e - 0x21));
            }
            s[len] = 0;
            m->str = s;
            m->k = PDC_KV_KEY_STR(s);
        }
    }
    /* distinct keys (-0.0 and 0.0 are the same key: not both in the set) */
    for (int i = 0; i < NKEYS; i++)
        for (int j = 0; j < i; j++)
            if (key_cmp(&keys[i], &keys[j]) == 0) {
                if (key_type == PDC_KV_STRING) {
                    size_t l = strlen(keys[i].str);
                    if (l < 1024) {
                        keys[i].str = realloc(keys[i].str, l + 2);
                        keys[i].str[l] = 'z', keys[i].str[l + 1] = 0;
                        keys[i].k.str = keys[i].str;
                    }
                } else if (key_type == PDC_KV_INT) {
                    keys[i].k.i ^= 0x5555;
                } else {
                    keys[i].k.f += 0.5;
                }
                j = -1;
            }
}

static int is_committed(uint64_t t)
{
    for (size_t i = 0; i < ncommitted; i++)
        if (committed[i] == t)
            return 1;
    return 0;
}

static ver_t *find_ver(mkey_t *m, uint64_t tag)
{
    for (size_t i = 0; i < m->nv; i++)
        if (m->v[i].tag == tag)
            return &m->v[i];
    return NULL;
}

static void put_ver(mkey_t *m, uint64_t tag, int deleted, const uint8_t *val, uint64_t len)
{
    ver_t *v = find_ver(m, tag);
    if (v == NULL) {
        if (m->nv == m->cap) {
            m->cap = m->cap ? 2 * m->cap : 4;
            m->v = realloc(m->v, m->cap * sizeof(*m->v));
        }
        size_t pos = m->nv;
        while (pos > 0 && m->v[pos - 1].tag > tag) {
            m->v[pos] = m->v[pos - 1];
            pos--;
        }
        v = &m->v[pos];
        m->nv++;
        v->val = NULL;
    }
    free(v->val);
    v->tag = tag;
    v->deleted = deleted;
    v->len = deleted ? 0 : len;
    v->val = NULL;
    if (!deleted) {
        v->val = malloc(len ? len : 1);
        memcpy(v->val, val, len);
    }
}

static void del_ver(mkey_t *m, size_t i)
{
    free(m->v[i].val);
    memmove(&m->v[i], &m->v[i + 1], (m->nv - i - 1) * sizeof(ver_t));
    m->nv--;
}

/* The visible version of m at tag, or NULL. */
static const ver_t *visible(const mkey_t *m, uint64_t tag)
{
    const ver_t *best = NULL;
    for (size_t i = 0; i < m->nv; i++) {
        const ver_t *v = &m->v[i];
        if (v->tag > tag || (open_tx && v->tag == open_tx))
            continue;
        best = v;
    }
    return best && !best->deleted ? best : NULL;
}

/* ------------------------------------------------------------------ values */

static uint8_t *gen_value(uint64_t seed, uint64_t len)
{
    uint8_t *b = malloc(len ? len : 1);
    uint64_t s = seed * 2654435761u + 1;
    for (uint64_t i = 0; i < len; i++) {
        if (i % 8 == 0)
            xrand(&s);
        b[i] = (uint8_t)(s >> (8 * (i % 8)));
    }
    return b;
}

static uint64_t rand_len(int big_ok)
{
    uint64_t r = rnd(100);
    if (big_ok)
        return (16u << 20) + 4096 + rnd(100000); /* more than one message */
    if (r < 10)
        return 0;
    if (r < 80)
        return 1 + rnd(100);
    if (r < 98)
        return 100 + rnd(5000);
    return 5000 + rnd(100000);
}

/* ------------------------------------------------------------------ checks */

static pdcid_t kv;
static uint64_t n_get, n_list, n_num, n_set, n_unlink, n_commit, n_abort, n_big;

static void check_get(int ki, uint64_t tag)
{
    mkey_t *m = &keys[ki];
    const ver_t *v = visible(m, tag);
    uint64_t len = v ? v->len : 16;
    uint8_t *buf = malloc(len ? len : 1);
    pdc_kv_tag_t ft = 12345;
    char what[256];
    perr_t r;
    pdc_kv_event_t ev = {0};
    if (lrnd(4) == 0) {
        r = PDCkv_get_value(kv, tag, &m->k, buf, &len, &ft, &ev);
        if (r == SUCCEED)
            r = PDCkv_event_wait(&ev);
    } else {
        r = PDCkv_get_value(kv, tag, &m->k, buf, &len, &ft, NULL);
    }
    n_get++;
    if (v == NULL) {
        if (r == SUCCEED || strcmp(PDCbb_last_error_name(), "PDCBB_ERR_NOT_FOUND") != 0) {
            snprintf(what, sizeof(what), "get key #%d at tag %llu: expected nothing, got %s (tag %llu, %llu bytes)",
                     ki, (unsigned long long)tag, r == SUCCEED ? "a value" : PDCbb_last_error_name(),
                     (unsigned long long)ft, (unsigned long long)len);
            die(what);
        }
    } else if (r != SUCCEED || ft != v->tag || len != v->len || (len && memcmp(buf, v->val, len) != 0)) {
        snprintf(what, sizeof(what), "get key #%d at tag %llu: expected tag %llu %llu bytes, got %s tag %llu %llu bytes%s",
                 ki, (unsigned long long)tag, (unsigned long long)v->tag, (unsigned long long)v->len,
                 r == SUCCEED ? "ok" : PDCbb_last_error_name(), (unsigned long long)ft,
                 (unsigned long long)len, r == SUCCEED && len == v->len ? " (different bytes)" : "");
        die(what);
    }
    free(buf);
}

static size_t model_list(uint64_t tag, int *out)
{
    size_t n = 0;
    for (int i = 0; i < NKEYS; i++)
        if (visible(&keys[i], tag))
            out[n++] = i;
    qsort(out, n, sizeof(int), cmp_idx);
    return n;
}

static void check_num(uint64_t tag)
{
    int idx[NKEYS];
    size_t n = model_list(tag, idx);
    uint64_t num = 0;
    n_num++;
    if (PDCkv_get_num(kv, tag, &num, NULL) != SUCCEED || num != n) {
        char what[160];
        snprintf(what, sizeof(what), "get_num at %llu: expected %zu, got %llu", (unsigned long long)tag, n,
                 (unsigned long long)num);
        die(what);
    }
}

static int same_key(const pdc_kv_key_t *a, const mkey_t *m)
{
    if (a->type != (pdc_kv_key_type_t)key_type)
        return 0;
    if (key_type == PDC_KV_INT)
        return a->i == m->k.i;
    if (key_type == PDC_KV_FLOAT)
        return a->f == m->k.f;
    return a->str && strcmp(a->str, m->str) == 0;
}

static void check_list(uint64_t tag, uint64_t off, uint64_t cnt, int values)
{
    int idx[NKEYS];
    size_t n = model_list(tag, idx);
    pdc_kv_t *l = NULL;
    uint64_t got = 0;
    char what[256];
    pdc_kv_event_t ev = {0};
    perr_t r;
    int nb = lrnd(3) == 0;
    if (values)
        r = PDCkv_get_list(kv, tag, off, cnt, &l, &got, nb ? &ev : NULL);
    else
        r = PDCkv_list_key(kv, tag, off, cnt, &l, &got, nb ? &ev : NULL);
    if (r == SUCCEED && nb)
        r = PDCkv_event_wait(&ev);
    n_list++;
    size_t exp = off >= n ? 0 : (n - off < cnt ? n - off : cnt);
    if (r != SUCCEED || got != exp) {
        snprintf(what, sizeof(what), "%s at tag %llu offset %llu count %llu: expected %zu records, got %llu (%s)",
                 values ? "get_list" : "list_key", (unsigned long long)tag, (unsigned long long)off,
                 (unsigned long long)cnt, exp, (unsigned long long)got, r == SUCCEED ? "ok" : "failed");
        die(what);
    }
    for (uint64_t i = 0; i < got; i++) {
        mkey_t *m = &keys[idx[off + i]];
        const ver_t *v = visible(m, tag);
        int ok = same_key(&l[i].key, m) && l[i].tag == v->tag;
        if (values)
            ok = ok && l[i].value_len == v->len && (v->len == 0 || memcmp(l[i].value, v->val, v->len) == 0);
        else
            ok = ok && l[i].value == NULL && l[i].value_len == 0;
        if (!ok) {
            snprintf(what, sizeof(what), "%s at tag %llu offset %llu: record %llu is not key #%d tag %llu (got tag %llu, %llu bytes)",
                     values ? "get_list" : "list_key", (unsigned long long)tag, (unsigned long long)off,
                     (unsigned long long)i, idx[off + i], (unsigned long long)v->tag,
                     (unsigned long long)l[i].tag, (unsigned long long)l[i].value_len);
            die(what);
        }
    }
    PDCkv_list_free(l);
}

static uint64_t rand_read_tag(void)
{
    uint64_t r = lrnd(10);
    if (r < 3)
        return PDC_KV_MAXTAG;
    if (r < 4)
        return 0;
    if (r < 8)
        return lrnd(45);
    return 1000 + lrnd(60);
}

/* ------------------------------------------------------------------ the model phase */

static void write_step(int big)
{
    /* One write op from the shared sequence; executed by the owner of its key(s). */
    uint64_t kind = rnd(100);
    if (big)
        kind = 0; /* one set of a value larger than one message */
    uint64_t tag;
    uint64_t tr = rnd(10);
    if (tr < 2)
        tag = 0;
    else if (open_tx && tr < 5)
        tag = open_tx;
    else
        tag = 1 + rnd(40);
    int owner = (int)rnd((uint64_t)nranks);
    /* keys of that owner */
    int ks[8], nk = kind < 50 ? 1 : kind < 80 ? 2 + (int)rnd(6) : 1 + (int)rnd(3);
    for (int i = 0; i < nk; i++) {
        int k = (int)rnd(NKEYS / nranks) * nranks + owner;
        if (k >= NKEYS)
            k = owner;
        ks[i] = k;
        for (int j = 0; j < i; j++)
            if (ks[j] == k)
                ks[i] = -1;
    }
    int mine = owner == rank;
    if (kind < 80) {
        /* set / set_list */
        pdc_kv_t recs[8];
        uint8_t *vals[8];
        int n = 0;
        for (int i = 0; i < nk; i++) {
            if (ks[i] < 0)
                continue;
            uint64_t len = rand_len(big && n == 0);
            if (len > (16u << 20))
                n_big++;
            uint64_t vseed = xrand(&shared_rng);
            vals[n] = gen_value(vseed, len);
            put_ver(&keys[ks[i]], tag, 0, vals[n], len);
            recs[n] = (pdc_kv_t){keys[ks[i]].k, 0, vals[n], len};
            n++;
        }
        if (mine) {
            perr_t r;
            pdc_kv_event_t ev = {0};
            int nb = lrnd(3) == 0;
            if (n == 1 && lrnd(2))
                r = PDCkv_set(kv, tag, &recs[0].key, recs[0].value, recs[0].value_len, nb ? &ev : NULL);
            else
                r = PDCkv_set_list(kv, tag, (uint64_t)n, recs, nb ? &ev : NULL);
            if (r == SUCCEED && nb) {
                int done = 0;
                while (PDCkv_event_test(&ev, &done) == SUCCEED && !done)
                    ;
                r = PDCkv_event_wait(&ev);
            }
            if (r != SUCCEED)
                die("set");
            n_set += (uint64_t)n;
        }
        for (int i = 0; i < n; i++)
            free(vals[i]);
    } else {
        /* unlink at a tag, NULLTAG or MAXTAG */
        uint64_t ur = rnd(10);
        uint64_t utag = ur < 2 ? PDC_KV_NULLTAG : ur < 4 ? PDC_KV_MAXTAG : tag ? tag : 1 + rnd(40);
        pdc_kv_key_t kk[8];
        int n = 0;
        for (int i = 0; i < nk; i++) {
            if (ks[i] < 0)
                continue;
            mkey_t *m = &keys[ks[i]];
            kk[n++] = m->k;
            if (utag == PDC_KV_MAXTAG) {
                while (m->nv)
                    del_ver(m, 0);
            } else if (utag == PDC_KV_NULLTAG) {
                for (size_t j = 0; j < m->nv; j++)
                    if (m->v[j].tag == 0) {
                        del_ver(m, j);
                        break;
                    }
            } else {
                put_ver(m, utag, 1, NULL, 0);
            }
        }
        if (mine) {
            if (PDCkv_unlink_keys(kv, utag, (uint64_t)n, kk, NULL) != SUCCEED)
                die("unlink");
            n_unlink += (uint64_t)n;
        }
    }
}

/* A paged listing continued across steps (the library resumes it from where the previous
 * page ended unless a shard changed meanwhile). */
static uint64_t page_tag, page_off, page_len;
static int page_on;

static void reads(int nget)
{
    for (int i = 0; i < nget; i++)
        check_get((int)lrnd(NKEYS), rand_read_tag());
    check_num(rand_read_tag());
    /* First the page after the last one (before any other listing): the writes since then
     * must make the library list again from the offset. */
    if (page_on && page_off <= NKEYS) {
        check_list(page_tag, page_off, page_len, (int)lrnd(2));
        page_off += page_len;
    }
    check_list(rand_read_tag(), lrnd(3) ? lrnd(20) : lrnd(NKEYS), 1 + lrnd(40), 1);
    check_list(rand_read_tag(), lrnd(NKEYS), 1 + lrnd(NKEYS), 0);
    if (!page_on || lrnd(4) == 0) {
        page_on = 1;
        page_tag = rand_read_tag();
        page_off = 0;
        page_len = 1 + lrnd(12);
    }
    /* two pages now (the second resumes), the next one after the following writes */
    check_list(page_tag, page_off, page_len, (int)lrnd(2));
    page_off += page_len;
    check_list(page_tag, page_off, page_len, (int)lrnd(2));
    page_off += page_len;
    if (page_off > NKEYS)
        page_on = 0;
}

static void run_model(int steps, int big)
{
    uint64_t next_tx = 1000;
    make_keys();
    for (int s = 0; s < steps; s++) {
        /* transactions: rank 0 opens one now and then */
        if (!open_tx && rnd(100) < 25) {
            open_tx = next_tx + rnd(3);
            next_tx = open_tx + 1;
            if (rank == 0 && PDCkv_trans_start(kv, open_tx) != SUCCEED)
                die("trans_start");
        }
        MPI_Barrier(MPI_COMM_WORLD);
        int nw = 4 + (int)rnd(12);
        for (int w = 0; w < nw; w++)
            write_step(big && s == steps / 2 && w == 0);
        MPI_Barrier(MPI_COMM_WORLD);
        reads(6);
        MPI_Barrier(MPI_COMM_WORLD);
        if (open_tx && rnd(100) < 40) {
            int commit = rnd(3) != 0;
            uint64_t t = open_tx;
            if (rank == 0) {
                if ((commit ? PDCkv_trans_commit(kv, t) : PDCkv_trans_abort(kv, t)) != SUCCEED)
                    die(commit ? "trans_commit" : "trans_abort");
            }
            open_tx = 0;
            if (commit) {
                committed[ncommitted++ % 4096] = t;
                n_commit++;
            } else {
                /* abort: every record with the tag goes */
                for (int i = 0; i < NKEYS; i++)
                    for (size_t j = 0; j < keys[i].nv; j++)
                        if (keys[i].v[j].tag == t) {
                            del_ver(&keys[i], j);
                            break;
                        }
                n_abort++;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            reads(3);
            if (rank == 0 && commit) {
                /* a committed tag cannot start again */
                if (PDCkv_trans_start(kv, t) == SUCCEED || strcmp(PDCbb_last_error_name(), "PDCBB_ERR_EXISTS"))
                    die("restart of a committed transaction was not refused");
            }
        }
    }
    /* a whole listing in pages must give every visible key once, in order */
    int idx[NKEYS];
    size_t n = model_list(PDC_KV_MAXTAG, idx);
    for (uint64_t off = 0; off <= n; off += 17)
        check_list(PDC_KV_MAXTAG, off, 17, off % 2 == 0);
    (void)is_committed;
}

/* ------------------------------------------------------------------ shared keys */

static void run_shared(int steps)
{
    char key[32], val[64];
    for (int s = 0; s < steps; s++) {
        for (int k = 0; k < 20; k++) {
            snprintf(key, sizeof(key), "shared-%02d", k);
            snprintf(val, sizeof(val), "rank %d step %d key %d", rank, s, k);
            pdc_kv_key_t kk = PDC_KV_KEY_STR(key);
            if (PDCkv_set(kv, (uint64_t)(k % 3), &kk, val, strlen(val), NULL) != SUCCEED)
                die("shared set");
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* everyone must read the same values, each one written by some rank in this step */
        uint64_t h = 1469598103934665603ull;
        for (int k = 0; k < 20; k++) {
            snprintf(key, sizeof(key), "shared-%02d", k);
            char buf[64] = {0};
            uint64_t len = sizeof(buf) - 1;
            pdc_kv_key_t kk = PDC_KV_KEY_STR(key);
            if (PDCkv_get_value(kv, PDC_KV_MAXTAG, &kk, buf, &len, NULL, NULL) != SUCCEED)
                die("shared get");
            int r = -1, st = -1, kx = -1;
            if (sscanf(buf, "rank %d step %d key %d", &r, &st, &kx) != 3 || r < 0 || r >= nranks ||
                st != s || kx != k)
                die("shared value is not one written in this step");
            for (uint64_t i = 0; i < len; i++)
                h = (h ^ (uint8_t)buf[i]) * 1099511628211ull;
        }
        pdc_kv_t *l = NULL;
        uint64_t n = 0;
        if (PDCkv_get_list(kv, PDC_KV_MAXTAG, 0, 100, &l, &n, NULL) != SUCCEED || n != 20)
            die("shared list");
        for (uint64_t i = 0; i < n; i++)
            for (uint64_t j = 0; j < l[i].value_len; j++)
                h = (h ^ ((const uint8_t *)l[i].value)[j]) * 1099511628211ull;
        PDCkv_list_free(l);
        uint64_t h0 = h;
        MPI_Bcast(&h0, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        if (h0 != h)
            die("ranks read different values of the shared keys");
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* ------------------------------------------------------------------ atomic commits */

static void run_atomic(int steps)
{
    enum { NK = 30 };
    pdc_kv_t recs[NK];
    char keysb[NK][16];
    uint64_t vals[NK];
    for (int i = 0; i < NK; i++) {
        snprintf(keysb[i], sizeof(keysb[i]), "atom-%02d", i);
        vals[i] = 0;
        recs[i] = (pdc_kv_t){PDC_KV_KEY_STR(keysb[i]), 0, &vals[i], 8};
    }
    if (rank == 0 && PDCkv_set_list(kv, PDC_KV_NULLTAG, NK, recs, NULL) != SUCCEED)
        die("atomic: initial set");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Request done;
    uint64_t commits = 0, lists = 0, mixed = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    if (rank == 0) {
        int flag = 0;
        for (uint64_t t = 1; !flag; t++) {
            if (PDCkv_trans_start(kv, t) != SUCCEED)
                die("atomic: trans_start");
            for (int i = 0; i < NK; i++)
                vals[i] = t;
            if (PDCkv_set_list(kv, t, NK, recs, NULL) != SUCCEED || PDCkv_trans_commit(kv, t) != SUCCEED)
                die("atomic: write or commit");
            commits++;
            MPI_Test(&done, &flag, MPI_STATUS_IGNORE);
        }
    } else {
        for (int it = 0; it < steps * 10; it++) {
            pdc_kv_t *l = NULL;
            uint64_t n = 0, v0 = 0;
            if (PDCkv_get_list(kv, PDC_KV_MAXTAG, 0, 100, &l, &n, NULL) != SUCCEED || n != NK)
                die("atomic: get_list");
            for (uint64_t i = 0; i < n; i++) {
                uint64_t v;
                memcpy(&v, l[i].value, 8);
                if (i == 0)
                    v0 = v;
                else if (v != v0)
                    mixed++;
            }
            if (mixed) {
                char what[160];
                snprintf(what, sizeof(what), "atomic: a listing mixed transactions (%llu and others)",
                         (unsigned long long)v0);
                die(what);
            }
            PDCkv_list_free(l);
            uint64_t num = 0;
            if (PDCkv_get_num(kv, PDC_KV_MAXTAG, &num, NULL) != SUCCEED || num != NK)
                die("atomic: get_num");
            lists++;
        }
        MPI_Wait(&done, MPI_STATUS_IGNORE);
    }
    uint64_t c[2] = {commits, lists}, t[2];
    MPI_Reduce(c, t, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("atomic: %llu transactions committed while %llu listings read, none mixed\n",
               (unsigned long long)t[0], (unsigned long long)t[1]);
}

/* ------------------------------------------------------------------ kill -9 */

static void ack_record(uint64_t batch, int i, char *key, size_t klen, uint8_t **val, uint64_t *len)
{
    snprintf(key, klen, "ack-%08llu-%02d", (unsigned long long)batch, i);
    *len = (batch * 7 + (uint64_t)i) % 300;
    *val = gen_value(batch * 100 + (uint64_t)i, *len);
}

static int run_ackwrite(const char *file)
{
    FILE *f = fopen(file, "a");
    if (f == NULL)
        return 1;
    for (uint64_t b = 0;; b++) {
        pdc_kv_t recs[50];
        char keysb[50][40];
        uint8_t *vals[50];
        for (int i = 0; i < 50; i++) {
            uint64_t len;
            ack_record(b, i, keysb[i], sizeof(keysb[i]), &vals[i], &len);
            recs[i] = (pdc_kv_t){PDC_KV_KEY_STR(keysb[i]), 0, vals[i], len};
        }
        perr_t r = PDCkv_set_list(kv, 1 + b % 5, 50, recs, NULL);
        for (int i = 0; i < 50; i++)
            free(vals[i]);
        if (r != SUCCEED) {
            printf("ackwrite: batch %llu failed (%s): stopping\n", (unsigned long long)b, PDCbb_last_error_name());
            break;
        }
        fprintf(f, "%llu\n", (unsigned long long)b);
        fflush(f);
    }
    fclose(f);
    return 0;
}

static int run_ackverify(const char *file)
{
    FILE *f = fopen(file, "r");
    unsigned long long b;
    uint64_t nb = 0;
    if (f == NULL)
        return 1;
    while (fscanf(f, "%llu", &b) == 1) {
        for (int i = 0; i < 50; i++) {
            char key[40], buf[400];
            uint8_t *val;
            uint64_t len, glen = sizeof(buf);
            pdc_kv_tag_t ft;
            ack_record(b, i, key, sizeof(key), &val, &len);
            pdc_kv_key_t k = PDC_KV_KEY_STR(key);
            if (PDCkv_get_value(kv, PDC_KV_MAXTAG, &k, buf, &glen, &ft, NULL) != SUCCEED || glen != len ||
                memcmp(buf, val, len) != 0 || ft != 1 + b % 5) {
                printf("MISMATCH acknowledged record %s lost or wrong\n", key);
                return 1;
            }
            free(val);
        }
        nb++;
    }
    fclose(f);
    uint64_t num = 0;
    if (PDCkv_get_num(kv, PDC_KV_MAXTAG, &num, NULL) != SUCCEED || num < nb * 50) {
        printf("MISMATCH get_num %llu < %llu acknowledged\n", (unsigned long long)num, (unsigned long long)(nb * 50));
        return 1;
    }
    printf("ackverify: %llu acknowledged batches (%llu records) all present (%llu keys stored)\n",
           (unsigned long long)nb, (unsigned long long)(nb * 50), (unsigned long long)num);
    return nb > 0 ? 0 : 1;
}

/* txwrite: an open transaction with writes on every shard, invisible; txcommit (after the
 * daemons were killed and restarted): still invisible, then committed: visible together. */
static int run_tx(int commit)
{
    char key[32], buf[32];
    for (int k = 0; k < 40; k++) {
        snprintf(key, sizeof(key), "tx-%02d", k);
        pdc_kv_key_t kk = PDC_KV_KEY_STR(key);
        uint64_t len = sizeof(buf);
        pdc_kv_tag_t ft = 0;
        if (!commit) {
            if (PDCkv_set(kv, PDC_KV_NULLTAG, &kk, "old", 3, NULL) != SUCCEED)
                die("tx set old");
            continue;
        }
        if (PDCkv_get_value(kv, PDC_KV_MAXTAG, &kk, buf, &len, &ft, NULL) != SUCCEED || len != 3 ||
            memcmp(buf, "old", 3) != 0)
            die("an open transaction's write became visible after the restart");
    }
    if (!commit) {
        if (PDCkv_trans_start(kv, 50) != SUCCEED)
            die("trans_start");
        for (int k = 0; k < 40; k++) {
            snprintf(key, sizeof(key), "tx-%02d", k);
            pdc_kv_key_t kk = PDC_KV_KEY_STR(key);
            if (PDCkv_set(kv, 50, &kk, "new", 3, NULL) != SUCCEED)
                die("tx set new");
        }
        printf("txwrite: transaction 50 open with 40 writes\n");
        return 0;
    }
    if (PDCkv_trans_commit(kv, 50) != SUCCEED)
        die("trans_commit after restart");
    for (int k = 0; k < 40; k++) {
        snprintf(key, sizeof(key), "tx-%02d", k);
        pdc_kv_key_t kk = PDC_KV_KEY_STR(key);
        uint64_t len = sizeof(buf);
        pdc_kv_tag_t ft = 0;
        if (PDCkv_get_value(kv, PDC_KV_MAXTAG, &kk, buf, &len, &ft, NULL) != SUCCEED || len != 3 ||
            memcmp(buf, "new", 3) != 0 || ft != 50)
            die("a committed write is not visible");
        len = sizeof(buf);
        if (PDCkv_get_value(kv, 49, &kk, buf, &len, &ft, NULL) != SUCCEED || memcmp(buf, "old", 3) != 0)
            die("a reader at an older tag does not see the old state");
    }
    printf("txcommit: invisible after the restart, all 40 visible after the commit\n");
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t seed = 1;
    int steps = 30, big = 0;
    const char *type = "string", *sharding = "hash", *phase = "model", *ack = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--type") && i + 1 < argc)
            type = argv[++i];
        else if (!strcmp(argv[i], "--sharding") && i + 1 < argc)
            sharding = argv[++i];
        else if (!strcmp(argv[i], "--phase") && i + 1 < argc)
            phase = argv[++i];
        else if (!strcmp(argv[i], "--ack") && i + 1 < argc)
            ack = argv[++i];
        else if (!strcmp(argv[i], "--big"))
            big = 1;
        else {
            fprintf(stderr, "usage: see the comment at the top of pdc_kv_model.c\n");
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    shared_rng = seed * 0x9E3779B97F4A7C15ull + 1;
    local_rng = (seed + 1000 * (uint64_t)(rank + 1)) * 0x9E3779B97F4A7C15ull + 7;
    key_type = !strcmp(type, "int") ? PDC_KV_INT : !strcmp(type, "float") ? PDC_KV_FLOAT : PDC_KV_STRING;

    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0)
        die("PDCinit");
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    char name[128];
    snprintf(name, sizeof(name), "kvmodel-%s-%llu", phase, (unsigned long long)seed);
    int durable = !strncmp(phase, "ack", 3) || !strncmp(phase, "tx", 2);
    pdcid_t cont = durable ? (phase[2] == 'w' || phase[3] == 'w' ? PDCcont_create(durable && phase[0] == 't' ? "kvtx" : "kvack", cprop)
                                                                  : PDCcont_open(phase[0] == 't' ? "kvtx" : "kvack", pdc))
                           : PDCcont_create_col(name, cprop);
    if (cont == 0)
        die("container");
    pdc_kv_info_t info = {(pdc_kv_key_type_t)key_type,
                          !strcmp(sharding, "range") ? PDC_KV_SHARD_RANGE : PDC_KV_SHARD_HASH, 0, 0, 0};
    int rc = 0;
    if (!strcmp(phase, "txwrite") || !strcmp(phase, "txcommit")) {
        kv = phase[2] == 'w' ? PDCkv_create(cont, "tx", &info) : PDCkv_open(cont, "tx");
        if (kv == 0)
            die("create/open tx");
        rc = run_tx(phase[2] == 'c');
    } else if (!strcmp(phase, "ackwrite") || !strcmp(phase, "ackverify")) {
        info.key_type = PDC_KV_STRING;
        kv = !strcmp(phase, "ackwrite") ? PDCkv_create(cont, "acked", &info) : PDCkv_open(cont, "acked");
        if (kv == 0)
            die("create/open acked");
        rc = !strcmp(phase, "ackwrite") ? run_ackwrite(ack) : run_ackverify(ack);
    } else {
        kv = PDCkv_create_coll(cont, phase, &info, MPI_COMM_WORLD);
        if (kv == 0)
            die("PDCkv_create_coll");
        pdc_kv_info_t got;
        PDCkv_get_info(kv, &got);
        if (!strcmp(phase, "shared"))
            run_shared(steps);
        else if (!strcmp(phase, "atomic"))
            run_atomic(steps);
        else
            run_model(steps, big);
        MPI_Barrier(MPI_COMM_WORLD);
        uint64_t c[7] = {n_get, n_list, n_num, n_set, n_unlink, n_commit, n_abort}, t[7];
        MPI_Reduce(c, t, 7, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("kv model %s type=%s sharding=%s nshards=%u ranks=%d: gets=%llu lists=%llu nums=%llu "
                   "sets=%llu unlinks=%llu commits=%llu aborts=%llu big_values=%llu\n",
                   phase, type, sharding, got.nshards, nranks, (unsigned long long)t[0],
                   (unsigned long long)t[1], (unsigned long long)t[2], (unsigned long long)t[3],
                   (unsigned long long)t[4], (unsigned long long)c[5], (unsigned long long)c[6], (unsigned long long)n_big);
            printf("OK\n");
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0 && PDCkv_delete(kv) != SUCCEED)
            die("delete");
        if (rank != 0)
            PDCkv_close(kv);
    }
    PDCcont_close(cont);
    PDCclose(pdc);
    MPI_Finalize();
    return rc;
}
