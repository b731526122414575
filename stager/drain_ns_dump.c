/*
 * drain_ns_dump.c - a daemon's namespace entries (the mount's tree, table ns) into the drain:
 * DRAIN/ns/rank-R.ns (pdcbb_drain_kvstore.h; read by drain_files.c, docs/DRAIN-FORMAT.md
 * "Files of the mount").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drain_internal.h"
#include "pdcbb_crc32c.h"
#include "pdcbb_drain_kvstore.h"
#include "pdcbb_proto.h"

static void hex_put(FILE *f, const char *s, size_t n)
{
    if (n == 0)
        fputc('-', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", (unsigned char)s[i]);
}

pdcbb_err_t pdcbb_drain_ns_dump(const pdcbb_store_ops_t *ops, pdcbb_txn_t *txn,
                                const char *drain_dir, uint32_t rank, uint64_t *entries, char *err,
                                size_t errlen)
{
    char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 8];
    pdcbb_cursor_t *c = NULL;
    pdcbb_val_t k, v;
    *entries = 0;
    pdcbb_err_t rc = ops->cursor_open(txn, PDCBB_T_NS, &c);
    if (rc != PDCBB_OK) {
        drain_errf(err, errlen, "rank %u: cannot read the namespace table: %s", rank,
                   pdcbb_strerror(rc));
        return rc;
    }
    rc = ops->cursor_seek(c, (pdcbb_val_t){"", 0}, &k, &v);
    if (rc == PDCBB_ERR_NOT_FOUND) { /* no mount in this job, or nothing here */
        ops->cursor_close(c);
        return PDCBB_OK;
    }
    snprintf(dir, sizeof(dir), "%s/%s", drain_dir, PDCBB_DRAIN_NS_DIR);
    snprintf(path, sizeof(path), "%s/rank-%05u.ns", dir, rank);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        drain_errf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        ops->cursor_close(c);
        return pdcbb_err_from_errno(errno);
    }
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    if (f == NULL) {
        ops->cursor_close(c);
        return PDCBB_ERR_NOMEM;
    }
    fputs(PDCBB_DRAIN_NS_MAGIC, f);
    for (; rc == PDCBB_OK; rc = ops->cursor_next(c, &k, &v)) {
        if (k.len <= 8)
            continue; /* a removed directory's mark */
        pdcbb_ns_lookup_rep_t e;
        if (pdcbb_body_decode(PDCBB_OP_NS_LOOKUP, 1, v.data, v.len, &e) != PDCBB_OK) {
            drain_errf(err, errlen, "rank %u: a namespace entry in the store does not decode",
                       rank);
            rc = PDCBB_ERR_STORE;
            break;
        }
        fprintf(f, "%016" PRIx64 " %016" PRIx64 " %u %o %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 " ",
                pdcbb_key_get_u64(k.data), e.ino, e.kind, e.mode, e.uid, e.gid, e.size, e.mtime_ns,
                e.ctime_ns);
        hex_put(f, (const char *)k.data + 8, k.len - 8);
        fputc(' ', f);
        hex_put(f, e.target ? e.target : "", e.target ? strlen(e.target) : 0);
        fputc('\n', f);
        (*entries)++;
    }
    ops->cursor_close(c);
    if (fclose(f) != 0 || buf == NULL) {
        free(buf);
        return PDCBB_ERR_NOMEM;
    }
    if (rc != PDCBB_OK && rc != PDCBB_ERR_NOT_FOUND) {
        free(buf);
        return rc;
    }
    char tail[32];
    int tl = snprintf(tail, sizeof(tail), "crc %08x\n", pdcbb_crc32c(0, buf, blen));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    int ok = fd >= 0 && write(fd, buf, blen) == (ssize_t)blen &&
             write(fd, tail, (size_t)tl) == tl && fdatasync(fd) == 0;
    int e = errno;
    free(buf);
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (!ok || rename(tmp, path) != 0) {
        e = ok ? errno : e;
        unlink(tmp);
        drain_errf(err, errlen, "cannot write %s: %s", path, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    return PDCBB_OK;
}
