/* mount_listing.c - see mount_listing.h. */
#include "mount_listing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pdc_ns.h"

mount_listing_t *mount_listing_new(void)
{
    return calloc(1, sizeof(mount_listing_t));
}

int mount_listing_add(mount_listing_t *l, uint64_t ino, mode_t type, const char *name, size_t len)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct mount_dirent *g = realloc(l->e, cap * sizeof(*g));
        if (g == NULL)
            return ENOMEM;
        l->e = g;
        l->cap = cap;
    }
    char *copy = strndup(name, len);
    if (copy == NULL)
        return ENOMEM;
    l->e[l->n++] = (struct mount_dirent){ino, type, copy};
    return 0;
}

void mount_listing_free(mount_listing_t *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->e[i].name);
    free(l->e);
    free(l);
}

pdcbb_err_t mount_listing_read_ns(uint64_t dir, mount_listing_t **out)
{
    mount_listing_t *l = mount_listing_new();
    char after[PDCBB_NS_NAME_MAX + 1] = "";
    pdcbb_err_t rc = l ? PDCBB_OK : PDCBB_ERR_NOMEM;
    int more = 1;
    while (rc == PDCBB_OK && more) {
        uint8_t *buf;
        size_t len, pos = 0;
        if ((rc = PDCbb_ns_readdir(dir, after, PDCBB_NS_READDIR_MAX, &buf, &len, &more)) !=
            PDCBB_OK)
            break;
        pdcbb_ns_dirent_t d;
        int got;
        while (rc == PDCBB_OK && (got = pdcbb_ns_dirent_next(buf, len, &pos, &d)) == 1) {
            mode_t type = d.kind == PDCBB_NS_DIR       ? S_IFDIR
                          : d.kind == PDCBB_NS_SYMLINK ? S_IFLNK
                                                       : S_IFREG;
            if (mount_listing_add(l, d.ino, type, d.name, d.name_len) != 0)
                rc = PDCBB_ERR_NOMEM;
            else
                snprintf(after, sizeof(after), "%s", l->e[l->n - 1].name);
        }
        if (rc == PDCBB_OK && got < 0)
            rc = PDCBB_ERR_PROTO;
        free(buf);
    }
    if (rc != PDCBB_OK) {
        mount_listing_free(l);
        return rc;
    }
    *out = l;
    return PDCBB_OK;
}

void mount_listing_reply(fuse_req_t req, uint64_t ino, const mount_listing_t *l, size_t size,
                         off_t off)
{
    char *buf = malloc(size);
    if (buf == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    size_t used = 0;
    /* offsets: 0 ".", 1 "..", 2 + i the listing's entry i */
    for (off_t i = off; i < (off_t)l->n + 2; i++) {
        struct stat st;
        memset(&st, 0, sizeof(st));
        const char *name = i == 0 ? "." : i == 1 ? ".." : l->e[i - 2].name;
        st.st_ino = i < 2 ? ino : l->e[i - 2].ino;
        st.st_mode = i < 2 ? S_IFDIR : l->e[i - 2].type;
        size_t want = fuse_add_direntry(req, buf + used, size - used, name, &st, i + 1);
        if (want > size - used)
            break;
        used += want;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}
