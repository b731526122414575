/*
 * pdcbb_ns.h - what the daemons and the mount share about the mount's namespace (the NS_* ops,
 * common/pdcbb_proto.h; docs/INTERNALS.md "The mount"): which daemon holds a directory's
 * entries, which names are valid, and the packing of NS_READDIR's entries.
 *
 * Threads: pure functions, callable from any thread.
 */
#ifndef PDCBB_NS_H
#define PDCBB_NS_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_error.h"

/* The daemon holding the entries of directory dir: a mix of the ino's bits, so the directories
 * one daemon creates (consecutive sequence numbers) spread over all of them. */
static inline unsigned pdcbb_ns_home(uint64_t dir, unsigned nservers)
{
    uint64_t z = dir + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return nservers ? (unsigned)(z % nservers) : 0;
}

/* A name of one directory entry, as POSIX has it: 1 to PDCBB_NS_NAME_MAX bytes, no '/', not
 * "." or "..". PDCBB_ERR_TOO_BIG if longer (ENAMETOOLONG), PDCBB_ERR_BAD_NAME otherwise. Any
 * other byte is allowed: names are the user's files' names, whatever their encoding. */
pdcbb_err_t pdcbb_ns_name_check(const char *name);

/* One entry of an NS_READDIR reply. name points into the reply (not NUL-terminated). */
typedef struct pdcbb_ns_dirent {
    uint64_t ino;
    uint32_t kind;
    const char *name;
    size_t name_len;
} pdcbb_ns_dirent_t;

/* Bytes one entry takes in a reply: 8 ino, 4 kind, 2 name length (all little-endian), name. */
static inline size_t pdcbb_ns_dirent_size(size_t name_len)
{
    return 14 + name_len;
}

/* Append an entry at out[*pos], cap bytes in all. 0 and *pos advanced, or -1 if it does not
 * fit (nothing written). */
int pdcbb_ns_dirent_put(uint8_t *out, size_t cap, size_t *pos, uint64_t ino, uint32_t kind,
                        const char *name, size_t name_len);

/* The entry at buf[*pos] (len bytes in all): 1 and *pos advanced, 0 at the end, -1 if the
 * bytes are not an entry (cut short, empty name, a name with '/' or NUL). */
int pdcbb_ns_dirent_next(const uint8_t *buf, size_t len, size_t *pos, pdcbb_ns_dirent_t *e);

#endif
