/*
 * pdcbb_ns.c - names and directory listings of the mount's namespace (pdcbb_ns.h).
 */
#include <string.h>

#include "pdcbb_checked.h"
#include "pdcbb_ns.h"
#include "pdcbb_proto.h"

pdcbb_err_t pdcbb_ns_name_check(const char *name)
{
    if (name == NULL || name[0] == '\0')
        return PDCBB_ERR_BAD_NAME;
    size_t n = strnlen(name, PDCBB_NS_NAME_MAX + 1);
    if (n > PDCBB_NS_NAME_MAX)
        return PDCBB_ERR_TOO_BIG;
    if (strchr(name, '/') != NULL || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return PDCBB_ERR_BAD_NAME;
    return PDCBB_OK;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

int pdcbb_ns_dirent_put(uint8_t *out, size_t cap, size_t *pos, uint64_t ino, uint32_t kind,
                        const char *name, size_t name_len)
{
    if (name_len == 0 || name_len > PDCBB_NS_NAME_MAX || *pos > cap ||
        !pdcbb_range_ok(*pos, pdcbb_ns_dirent_size(name_len), cap))
        return -1;
    uint8_t *p = out + *pos;
    put_le(p, ino, 8);
    put_le(p + 8, kind, 4);
    put_le(p + 12, name_len, 2);
    memcpy(p + 14, name, name_len);
    *pos += pdcbb_ns_dirent_size(name_len);
    return 0;
}

int pdcbb_ns_dirent_next(const uint8_t *buf, size_t len, size_t *pos, pdcbb_ns_dirent_t *e)
{
    if (*pos == len)
        return 0;
    if (*pos > len || !pdcbb_range_ok(*pos, 14, len))
        return -1;
    const uint8_t *p = buf + *pos;
    size_t n = (size_t)get_le(p + 12, 2);
    if (n == 0 || n > PDCBB_NS_NAME_MAX || !pdcbb_range_ok(*pos + 14, n, len) ||
        memchr(p + 14, '/', n) != NULL || memchr(p + 14, '\0', n) != NULL)
        return -1;
    e->ino = get_le(p, 8);
    e->kind = (uint32_t)get_le(p + 8, 4);
    e->name = (const char *)p + 14;
    e->name_len = n;
    *pos += 14 + n;
    return 1;
}
