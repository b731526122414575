/*
 * test_ns.c - the mount's namespace ops (bbd/bbd_ns.c) through bbd_harness.h: the real
 * dispatcher, handlers and LMDB store. Each op's success cases and its documented errors, with
 * the exact status the daemon answers; directory listings in pieces; the rename and rmdir rules
 * the mount relies on; and the packing of listings (common/pdcbb_ns.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbd_harness.h"
#include "pdcbb_ns.h"
#include "unit_check.h"

static bbd_harness_t *h;
static uint64_t cont;

static uint64_t new_object(const char *name)
{
    uint64_t dims[1] = {UINT64_MAX};
    pdcbb_obj_create_req_t q = {.cont_id = cont, .name = name, .dims = dims, .dims_count = 1};
    pdcbb_obj_create_rep_t p;
    memset(&p, 0, sizeof(p));
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_OBJ_CREATE, &q, NULL, 0, &p), PDCBB_OK);
    return p.id;
}

/* NS_CREATE of name in parent; the reply in *p (may be NULL). */
static int ns_create(uint64_t parent, const char *name, uint32_t kind, uint64_t ino, uint32_t flags,
                     const char *target, pdcbb_ns_create_rep_t *p)
{
    pdcbb_ns_create_req_t q = {.parent = parent,
                               .name = name,
                               .flags = flags,
                               .ino = ino,
                               .kind = kind,
                               .mode = kind == PDCBB_NS_DIR ? 0755 : 0644,
                               .uid = 1000,
                               .gid = 100,
                               .mtime_ns = 5,
                               .ctime_ns = 6,
                               .target = target};
    pdcbb_ns_create_rep_t r;
    return bbd_harness_call(h, PDCBB_OP_NS_CREATE, &q, NULL, 0, p ? p : &r);
}

static uint64_t mkdir_in(uint64_t parent, const char *name)
{
    pdcbb_ns_create_rep_t p;
    memset(&p, 0, sizeof(p));
    CHECK_ERR(ns_create(parent, name, PDCBB_NS_DIR, 0, PDCBB_NS_EXCL, NULL, &p), PDCBB_OK);
    CHECK(pdcbb_meta_id_kind(p.ino) == PDCBB_META_KIND_NODE);
    return p.ino;
}

static uint64_t file_in(uint64_t parent, const char *name)
{
    char oname[300];
    snprintf(oname, sizeof(oname), "f/%llx/%s", (unsigned long long)parent, name);
    uint64_t obj = new_object(oname);
    CHECK_ERR(ns_create(parent, name, PDCBB_NS_FILE, obj, PDCBB_NS_EXCL, NULL, NULL), PDCBB_OK);
    return obj;
}

static int lookup(uint64_t parent, const char *name, pdcbb_ns_lookup_rep_t *p)
{
    pdcbb_ns_lookup_req_t q = {.parent = parent, .name = name};
    pdcbb_ns_lookup_rep_t r;
    return bbd_harness_call(h, PDCBB_OP_NS_LOOKUP, &q, NULL, 0, p ? p : &r);
}

static int unlink_in(uint64_t parent, const char *name, uint32_t kind, uint64_t ino)
{
    pdcbb_ns_unlink_req_t q = {.parent = parent, .name = name, .kind = kind, .ino = ino};
    pdcbb_ns_unlink_rep_t p;
    return bbd_harness_call(h, PDCBB_OP_NS_UNLINK, &q, NULL, 0, &p);
}

static int rmdir_mark(uint64_t dir, uint32_t undo)
{
    pdcbb_ns_rmdir_req_t q = {.dir = dir, .undo = undo};
    return bbd_harness_call(h, PDCBB_OP_NS_RMDIR, &q, NULL, 0, NULL);
}

static int rename_in(uint64_t parent, const char *name, uint64_t np, const char *nn, uint32_t flags,
                     pdcbb_ns_rename_rep_t *p)
{
    pdcbb_ns_rename_req_t q = {
        .parent = parent, .name = name, .new_parent = np, .new_name = nn, .flags = flags};
    pdcbb_ns_rename_rep_t r;
    return bbd_harness_call(h, PDCBB_OP_NS_RENAME, &q, NULL, 0, p ? p : &r);
}

/* Every entry of dir, listed max at a time; names joined by ',' into out. */
static uint32_t list_all(uint64_t dir, uint32_t max, char *out, size_t outlen)
{
    char after[PDCBB_NS_NAME_MAX + 1] = "";
    uint32_t n = 0, calls = 0;
    out[0] = '\0';
    for (;;) {
        pdcbb_ns_readdir_req_t q = {.dir = dir, .after = after, .max = max};
        pdcbb_ns_readdir_rep_t p;
        memset(&p, 0, sizeof(p));
        CHECK_ERR(bbd_harness_call(h, PDCBB_OP_NS_READDIR, &q, NULL, 0, &p), PDCBB_OK);
        size_t pos = 0;
        pdcbb_ns_dirent_t e;
        int got;
        uint32_t here = 0;
        while ((got = pdcbb_ns_dirent_next(p.entries, p.entries_len, &pos, &e)) == 1) {
            size_t l = strlen(out);
            snprintf(out + l, outlen - l, "%s%.*s", l ? "," : "", (int)e.name_len, e.name);
            snprintf(after, sizeof(after), "%.*s", (int)e.name_len, e.name);
            here++;
        }
        CHECK(got == 0);
        CHECK(here <= max);
        n += here;
        if (!p.more || ++calls > 10000)
            break;
        CHECK(here == max);
    }
    return n;
}

static void test_create_lookup(void)
{
    pdcbb_ns_lookup_rep_t e;
    CHECK_ERR(lookup(PDCBB_NS_ROOT, "a", NULL), PDCBB_ERR_NOT_FOUND);
    uint64_t a = mkdir_in(PDCBB_NS_ROOT, "a");
    CHECK_ERR(ns_create(PDCBB_NS_ROOT, "a", PDCBB_NS_DIR, 0, PDCBB_NS_EXCL, NULL, NULL),
              PDCBB_ERR_EXISTS);
    CHECK_ERR(ns_create(PDCBB_NS_ROOT, "a", PDCBB_NS_DIR, 0, 0, NULL, NULL), PDCBB_ERR_EXISTS);
    memset(&e, 0, sizeof(e));
    CHECK_ERR(lookup(PDCBB_NS_ROOT, "a", &e), PDCBB_OK);
    CHECK(e.ino == a && e.kind == PDCBB_NS_DIR && e.mode == 0755 && e.uid == 1000 && e.gid == 100 &&
          e.mtime_ns == 5 && e.ctime_ns == 6);

    uint64_t f = file_in(a, "f");
    /* open(O_CREAT) of an existing file answers that file, whatever object the caller made */
    pdcbb_ns_create_rep_t c;
    memset(&c, 0, sizeof(c));
    uint64_t other = new_object("spare");
    CHECK_ERR(ns_create(a, "f", PDCBB_NS_FILE, other, 0, NULL, &c), PDCBB_OK);
    CHECK(c.ino == f && c.old_ino == 0);

    /* what a request names is checked */
    CHECK_ERR(ns_create(a, "g", PDCBB_NS_FILE, a, 0, NULL, NULL), PDCBB_ERR_BAD_ID);
    CHECK_ERR(ns_create(a, "g", PDCBB_NS_DIR, other, 0, NULL, NULL), PDCBB_ERR_BAD_ID);
    CHECK_ERR(ns_create(a, "g", 9, 0, 0, NULL, NULL), PDCBB_ERR_INVAL);
    CHECK_ERR(ns_create(a, "g", PDCBB_NS_FILE, other, 64, NULL, NULL), PDCBB_ERR_INVAL);
    CHECK_ERR(ns_create(a, "g", PDCBB_NS_SYMLINK, 0, 0, NULL, NULL), PDCBB_ERR_INVAL);
    CHECK_ERR(ns_create(a, "g", PDCBB_NS_FILE, other, 0, "t", NULL), PDCBB_ERR_INVAL);
    static char longname[PDCBB_NS_NAME_MAX + 2], longtarget[PDCBB_NS_TARGET_MAX + 2];
    memset(longname, 'n', sizeof(longname) - 1);
    memset(longtarget, 't', sizeof(longtarget) - 1);
    CHECK_ERR(ns_create(a, longname, PDCBB_NS_DIR, 0, 0, NULL, NULL), PDCBB_ERR_TOO_BIG);
    /* a target longer than PDCBB_NS_TARGET_MAX is longer than any wire string: not sendable */
    CHECK_ERR(ns_create(a, "l", PDCBB_NS_SYMLINK, 0, 0, longtarget, NULL), BBD_HARNESS_ENCODE);
    longtarget[PDCBB_NS_TARGET_MAX] = '\0';
    CHECK_ERR(ns_create(a, "l", PDCBB_NS_SYMLINK, 0, 0, longtarget, NULL), PDCBB_OK);
    longname[PDCBB_NS_NAME_MAX] = '\0'; /* 255 bytes: the longest name */
    CHECK_ERR(ns_create(a, longname, PDCBB_NS_DIR, 0, 0, NULL, NULL), PDCBB_OK);
    const char *bad[] = {"", ".", "..", "x/y", "/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_ERR(ns_create(a, bad[i], PDCBB_NS_DIR, 0, 0, NULL, NULL), PDCBB_ERR_BAD_NAME);
        CHECK_ERR(lookup(a, bad[i], NULL), PDCBB_ERR_BAD_NAME);
    }
    /* any other bytes are a name: the user's files' names, whatever their encoding */
    CHECK_ERR(ns_create(a, "caf\xe9 \x01", PDCBB_NS_DIR, 0, 0, NULL, NULL), PDCBB_OK);

    /* a link keeps its target */
    memset(&c, 0, sizeof(c));
    CHECK_ERR(ns_create(a, "link", PDCBB_NS_SYMLINK, 0, 0, "../a/f", &c), PDCBB_OK);
    memset(&e, 0, sizeof(e));
    CHECK_ERR(lookup(a, "link", &e), PDCBB_OK);
    CHECK(e.kind == PDCBB_NS_SYMLINK && strcmp(e.target, "../a/f") == 0 && e.ino == c.ino);

    /* a directory whose home is another daemon: this one has one rank, so none; ino 0 */
    CHECK_ERR(lookup(0, "a", NULL), PDCBB_ERR_BAD_ID);
}

static void test_readdir(void)
{
    uint64_t d = mkdir_in(PDCBB_NS_ROOT, "many");
    char names[300][8];
    for (int i = 0; i < 300; i++) {
        snprintf(names[i], sizeof(names[i]), "e%03d", 299 - i);
        if (i % 3)
            file_in(d, names[i]);
        else
            mkdir_in(d, names[i]);
    }
    mkdir_in(mkdir_in(d, "e100x"), "inner"); /* a subdirectory's entries are not d's */
    static char all[8192], all2[8192];
    CHECK(list_all(d, 1024, all, sizeof(all)) == 301);
    CHECK(strncmp(all, "e000,e001,e002,", 15) == 0); /* byte order */
    CHECK(strstr(all, "e100,e100x,e101") != NULL);
    CHECK(strstr(all, "inner") == NULL);
    CHECK(list_all(d, 7, all2, sizeof(all2)) == 301); /* in pieces: the same, once each */
    CHECK(strcmp(all, all2) == 0);
    CHECK(list_all(mkdir_in(PDCBB_NS_ROOT, "empty"), 10, all2, sizeof(all2)) == 0);

    pdcbb_ns_readdir_req_t q = {.dir = d, .after = "", .max = 0};
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_NS_READDIR, &q, NULL, 0, NULL), PDCBB_ERR_INVAL);
    q.max = PDCBB_NS_READDIR_MAX + 1;
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_NS_READDIR, &q, NULL, 0, NULL), PDCBB_ERR_INVAL);
    q.max = 10;
    q.after = "x/y";
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_NS_READDIR, &q, NULL, 0, NULL), PDCBB_ERR_BAD_NAME);
}

static void test_setattr(void)
{
    uint64_t d = mkdir_in(PDCBB_NS_ROOT, "attrs");
    uint64_t f = file_in(d, "f");
    pdcbb_ns_setattr_req_t q = {
        .parent = d, .name = "f", .ino = f, .mask = PDCBB_NS_SET_SIZE_AT_LEAST, .size = 100};
    pdcbb_ns_setattr_rep_t p;
    memset(&p, 0, sizeof(p));
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_NS_SETATTR, &q, NULL, 0, &p), PDCBB_OK);
    CHECK(p.size == 100);
    q.size = 50; /* at least: a smaller size leaves it */
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_NS_SETATTR, &q, NULL, 0, &p), PDCBB_OK);
    CHECK(p.size == 100);
    q.mask = PDCBB_NS_SET_SIZE | PDCBB_NS_SET_MODE | PDCBB_NS_SET_MTIME;
    q.mode = 0600;
    q.mtime_ns = 77;
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_NS_SETATTR, &q, NULL, 0, &p), PDCBB_OK);
    CHECK(p.size == 50 && p.mode == 0600 && p.mtime_ns == 77 && p.uid == 1000);
    pdcbb_ns_lookup_rep_t e;
    CHECK_ERR(lookup(d, "f", &e), PDCBB_OK);
    CHECK(e.size == 50 && e.mode == 0600 && e.mtime_ns == 77);
    q.ino = f + 1; /* another file now has this name: not the one asked for */
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_NS_SETATTR, &q, NULL, 0, &p), PDCBB_ERR_NOT_FOUND);
    q.ino = f;
    q.mode = 010644;
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_NS_SETATTR, &q, NULL, 0, &p), PDCBB_ERR_INVAL);
    q.mask = 1u << 20;
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_NS_SETATTR, &q, NULL, 0, &p), PDCBB_ERR_INVAL);
    pdcbb_ns_setattr_req_t dq = {
        .parent = PDCBB_NS_ROOT, .name = "attrs", .mask = PDCBB_NS_SET_SIZE, .size = 1};
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_NS_SETATTR, &dq, NULL, 0, &p), PDCBB_ERR_WRONG_TYPE);
}

static void test_rename(void)
{
    uint64_t d = mkdir_in(PDCBB_NS_ROOT, "ren"), e = mkdir_in(PDCBB_NS_ROOT, "ren2");
    uint64_t f = file_in(d, "f"), g = file_in(d, "g");
    pdcbb_ns_rename_rep_t p;
    memset(&p, 0, sizeof(p));
    CHECK_ERR(rename_in(d, "f", e, "f2", 0, &p), PDCBB_OK);
    CHECK(p.ino == f && p.old_ino == 0);
    CHECK_ERR(lookup(d, "f", NULL), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(lookup(e, "f2", NULL), PDCBB_OK);
    /* over an existing file: replaced, and the reply names it (its object is the caller's to
     * delete) */
    CHECK_ERR(rename_in(d, "g", e, "f2", PDCBB_NS_NOREPLACE, NULL), PDCBB_ERR_EXISTS);
    memset(&p, 0, sizeof(p));
    CHECK_ERR(rename_in(d, "g", e, "f2", 0, &p), PDCBB_OK);
    CHECK(p.ino == g && p.old_ino == f && p.old_kind == PDCBB_NS_FILE);
    CHECK_ERR(rename_in(e, "f2", e, "f2", 0, &p), PDCBB_OK); /* onto itself */
    CHECK(p.ino == g && p.old_ino == 0);
    CHECK_ERR(rename_in(d, "nothing", e, "x", 0, NULL), PDCBB_ERR_NOT_FOUND);
    /* kinds: a file over a directory and back are refused; a directory over a directory only
     * once the caller checked it is empty (NS_RMDIR on its home) */
    uint64_t sub = mkdir_in(e, "sub");
    CHECK_ERR(rename_in(e, "f2", e, "sub", 0, NULL), PDCBB_ERR_WRONG_TYPE);
    CHECK_ERR(rename_in(e, "sub", e, "f2", 0, NULL), PDCBB_ERR_WRONG_TYPE);
    uint64_t sub2 = mkdir_in(e, "sub2");
    CHECK_ERR(rename_in(e, "sub", e, "sub2", 0, NULL), PDCBB_ERR_NOT_EMPTY);
    memset(&p, 0, sizeof(p));
    CHECK_ERR(rename_in(e, "sub", e, "sub2", PDCBB_NS_EMPTY_CHECKED, &p), PDCBB_OK);
    CHECK(p.ino == sub && p.old_ino == sub2 && p.old_kind == PDCBB_NS_DIR);
    CHECK_ERR(rename_in(e, "sub2", e, "x", 99, NULL), PDCBB_ERR_INVAL);
    /* between two daemons a rename is a create that keeps the ino (MOVE), then an unlink */
    pdcbb_ns_create_rep_t c;
    memset(&c, 0, sizeof(c));
    CHECK_ERR(ns_create(d, "moved", PDCBB_NS_DIR, sub, PDCBB_NS_MOVE | PDCBB_NS_EXCL, NULL, &c),
              PDCBB_OK);
    CHECK(c.ino == sub);
    CHECK_ERR(ns_create(d, "moved2", PDCBB_NS_DIR, 0, PDCBB_NS_MOVE, NULL, NULL), PDCBB_ERR_BAD_ID);
    CHECK_ERR(ns_create(d, "moved2", PDCBB_NS_DIR, g, PDCBB_NS_MOVE, NULL, NULL), PDCBB_ERR_BAD_ID);
}

static void test_remove(void)
{
    uint64_t d = mkdir_in(PDCBB_NS_ROOT, "rm");
    uint64_t f = file_in(d, "f");
    uint64_t sub = mkdir_in(d, "sub");
    CHECK_ERR(rmdir_mark(d, 0), PDCBB_ERR_NOT_EMPTY);
    CHECK_ERR(unlink_in(d, "f", PDCBB_NS_DIR, 0), PDCBB_ERR_WRONG_TYPE);
    CHECK_ERR(unlink_in(d, "sub", PDCBB_NS_FILE, 0), PDCBB_ERR_WRONG_TYPE);
    CHECK_ERR(unlink_in(d, "f", PDCBB_NS_FILE, f + 1), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(unlink_in(d, "f", PDCBB_NS_FILE, f), PDCBB_OK);
    CHECK_ERR(unlink_in(d, "f", 0, 0), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(rmdir_mark(sub, 0), PDCBB_OK);
    CHECK_ERR(unlink_in(d, "sub", PDCBB_NS_DIR, sub), PDCBB_OK);
    CHECK_ERR(rmdir_mark(d, 0), PDCBB_OK);
    /* a removed directory takes no new entries; undone, it does again */
    CHECK_ERR(ns_create(d, "late", PDCBB_NS_DIR, 0, 0, NULL, NULL), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(rename_in(PDCBB_NS_ROOT, "rm", d, "x", 0, NULL), PDCBB_ERR_NOT_FOUND);
    CHECK_ERR(rmdir_mark(d, 1), PDCBB_OK);
    CHECK_ERR(ns_create(d, "late", PDCBB_NS_DIR, 0, 0, NULL, NULL), PDCBB_OK);
    char all[64];
    CHECK(list_all(d, 10, all, sizeof(all)) == 1 && strcmp(all, "late") == 0);
    CHECK_ERR(rmdir_mark(PDCBB_NS_ROOT, 0), PDCBB_ERR_INVAL);
    CHECK_ERR(rmdir_mark(d, 2), PDCBB_ERR_INVAL);
}

static void test_dirent_packing(void)
{
    uint8_t buf[64];
    size_t pos = 0;
    CHECK(pdcbb_ns_dirent_put(buf, sizeof(buf), &pos, 7, PDCBB_NS_FILE, "abc", 3) == 0);
    CHECK(pos == 17);
    CHECK(pdcbb_ns_dirent_put(buf, sizeof(buf), &pos, 8, PDCBB_NS_DIR,
                              "0123456789abcdefghijklmnopqrstuvwxyz0123456789", 46) == -1);
    CHECK(pos == 17);
    CHECK(pdcbb_ns_dirent_put(buf, sizeof(buf), &pos, 1, PDCBB_NS_FILE, "", 0) == -1);
    pdcbb_ns_dirent_t e;
    size_t rd = 0;
    CHECK(pdcbb_ns_dirent_next(buf, pos, &rd, &e) == 1 && e.ino == 7 && e.name_len == 3 &&
          memcmp(e.name, "abc", 3) == 0);
    CHECK(pdcbb_ns_dirent_next(buf, pos, &rd, &e) == 0);
    rd = 0; /* cut short, a '/' in a name, a length past the end */
    CHECK(pdcbb_ns_dirent_next(buf, 16, &rd, &e) == -1);
    buf[15] = '/';
    rd = 0;
    CHECK(pdcbb_ns_dirent_next(buf, pos, &rd, &e) == -1);
    buf[12] = 200;
    rd = 0;
    CHECK(pdcbb_ns_dirent_next(buf, pos, &rd, &e) == -1);
    CHECK_ERR(pdcbb_ns_name_check("ok"), PDCBB_OK);
    CHECK_ERR(pdcbb_ns_name_check(NULL), PDCBB_ERR_BAD_NAME);
}

int main(void)
{
    CHECK_ERR(bbd_harness_open(NULL, &h), PDCBB_OK);
    if (h == NULL)
        UNIT_DONE("ns");
    pdcbb_cont_create_req_t cq = {.name = "files"};
    pdcbb_cont_create_rep_t cp;
    memset(&cp, 0, sizeof(cp));
    CHECK_ERR(bbd_harness_call(h, PDCBB_OP_CONT_CREATE, &cq, NULL, 0, &cp), PDCBB_OK);
    cont = cp.id;
    test_create_lookup();
    test_readdir();
    test_setattr();
    test_rename();
    test_remove();
    test_dirent_packing();
    bbd_harness_close(h);
    UNIT_DONE("ns");
}
