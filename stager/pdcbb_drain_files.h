/*
 * pdcbb_drain_files.h - the list of a drain's files/ (DRAIN/files.manifest, docs/DRAIN-FORMAT.md
 * "Files of the mount"): every directory, file and symbolic link of the mount's tree as the
 * drain built it, each file with the CRC-32C of its bytes. pdcbb_drain_files_build
 * (pdcbb_drain.h) writes it; the manifest's files key names it with its size and CRC-32C, so the
 * list is covered as the KV dumps are. Read by pdcbb verify (pdcbb_drain_files_verify), pdcbb ls
 * and pdcbb mount (mount/mount_drain.c).
 *
 * The list is text, one entry per line, sorted by path (strcmp order, so a directory comes
 * before what it holds), names in hex (any byte but '/' and NUL may be in a name):
 *     pdcbb-files 1
 *     <type f|d|l> <mode, 4 octal digits> <size> <mtime ns> <crc32c, 8 hex, or -> <- or damaged>
 *         <path under files/ in hex> <link target in hex, or ->
 *     crc <CRC-32C of every byte before this line, 8 hex>
 *
 * Ownership: a pdcbb_drain_files_t owns its entries and their strings (pdcbb_drain_files_free).
 * Threads: a loaded list is only read; any number of threads may look up and open entries.
 */
#ifndef PDCBB_DRAIN_FILES_H
#define PDCBB_DRAIN_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_drain.h"

#define PDCBB_DRAIN_FILES_DIR   "files"           /* the tree, in the drain directory */
#define PDCBB_DRAIN_FILES_LIST  "files.manifest"  /* its list, beside it */
#define PDCBB_DRAIN_FILES_MAGIC "pdcbb-files 1\n" /* the list's first line */

/* pdcbb_drain_file_t.type */
#define PDCBB_DRAIN_FILE_REG  'f'
#define PDCBB_DRAIN_FILE_DIR  'd'
#define PDCBB_DRAIN_FILE_LINK 'l'

typedef struct pdcbb_drain_file {
    char *path;        /* under files/, "a/b.txt": no leading or doubled '/', no "." or ".." */
    const char *name;  /* its last component (inside path) */
    char type;         /* PDCBB_DRAIN_FILE_* */
    uint32_t mode;     /* permission bits as in files/ (07777; 0777 for a link) */
    uint64_t size;     /* a file's bytes, a link target's length, 0 for a directory */
    uint64_t mtime_ns; /* modification time, ns since the epoch */
    uint32_t crc32c;   /* CRC-32C of a file's bytes (0 for the others) */
    int damaged;       /* a file built from damaged extents of its object (manifest key damaged,
                        * or a checksum that failed while it was built): those bytes are not the
                        * job's */
    char *target;      /* a link's target (NULL for the others) */
    int64_t parent;    /* index of its directory in the list; -1: files/ itself */
} pdcbb_drain_file_t;

typedef struct pdcbb_drain_files {
    pdcbb_drain_file_t *e; /* sorted by path */
    uint64_t n;
    uint64_t cap;
    uint64_t nfiles; /* regular files among them */
    uint64_t bytes;  /* their bytes */
} pdcbb_drain_files_t;

/* Free a list and everything it owns; accepts NULL. */
void pdcbb_drain_files_free(pdcbb_drain_files_t *f);

/*
 * Append a copy of e (path and target are copied; name and parent are set when the list is
 * sorted) to f. PDCBB_ERR_NOMEM.
 */
pdcbb_err_t pdcbb_drain_files_add(pdcbb_drain_files_t *f, const pdcbb_drain_file_t *e);

/*
 * Sort f by path and write it as the list's text (magic line, entries, crc line) into *text
 * (malloc'ed, the caller's) and *len. PDCBB_ERR_INVAL when two entries have the same path or one
 * is not under a listed directory, PDCBB_ERR_NOMEM.
 */
pdcbb_err_t pdcbb_drain_files_format(pdcbb_drain_files_t *f, char **text, size_t *len);

/*
 * Parse a list's text (len bytes; name is the file, for messages) into a new list (*out). Every
 * line is checked: its fields, the order, that every entry's directory is listed before it, and
 * the CRC-32C of the whole text. PDCBB_ERR_CORRUPT, err naming the file, line and what is wrong;
 * PDCBB_ERR_NOMEM.
 */
pdcbb_err_t pdcbb_drain_files_parse(const char *text, size_t len, const char *name,
                                    pdcbb_drain_files_t **out, char *err, size_t errlen);

/*
 * Load the list the manifest of m names (m->files): read without following a link, its size and
 * CRC-32C compared with the manifest's, then parsed (pdcbb_drain_files_parse) and its count
 * compared. PDCBB_ERR_NOT_FOUND when m has no files (err says so: the job did not use the
 * mount, or the drain is not complete), PDCBB_ERR_CORRUPT when the list does not match,
 * errno codes when it cannot be read; err names the file.
 */
pdcbb_err_t pdcbb_drain_files_load(const pdcbb_drain_t *m, pdcbb_drain_files_t **out, char *err,
                                   size_t errlen);

/* The index of the entry at path ("a/b.txt", no leading '/'), or -1. */
int64_t pdcbb_drain_files_find(const pdcbb_drain_files_t *f, const char *path);

/*
 * Open path under the directory files_fd (files/) component by component, following no
 * symbolic link (each directory with O_NOFOLLOW | O_DIRECTORY, the last with flags |
 * O_NOFOLLOW). Returns a file descriptor, or -1 with errno (ELOOP: a component is a link).
 */
int pdcbb_drain_files_open(int files_fd, const char *path, int flags);

/*
 * Check the bytes of regular file fd against entry e: a regular file, e->size bytes long, whose
 * CRC-32C is e->crc32c (read whole from offset 0 with pread). *done (may be NULL) is advanced
 * by the bytes read. PDCBB_OK; PDCBB_ERR_CORRUPT with why saying what differs ("12 bytes, the
 * list says 10", "CRC-32C 0x..., the list says 0x..."); errno codes when it cannot be read.
 */
pdcbb_err_t pdcbb_drain_file_check(int fd, const pdcbb_drain_file_t *e, uint64_t *done, char *why,
                                   size_t whylen);

/* What pdcbb_drain_files_verify found. */
typedef struct pdcbb_drain_files_stats {
    uint64_t entries; /* listed */
    uint64_t files;   /* regular files whose bytes were checked */
    uint64_t bytes;   /* their bytes */
    uint64_t missing; /* listed entries that are not in files/ (each, also under a missing
                       * directory) */
    uint64_t extra;   /* entries of files/ that are not listed (a directory counts once) */
    uint64_t changed; /* entries of another type, or with other bytes, size, mode, mtime or
                       * link target than listed */
    uint64_t damaged; /* files the list marks damaged */
} pdcbb_drain_files_stats_t;

/* told one problem: tag is "MISSING", "EXTRA", "CHANGED" or "DAMAGED", line begins with the
 * entry's path ("files/a/b.txt: ...", not escaped) */
typedef void (*pdcbb_drain_files_report_fn)(const char *tag, const char *line, void *arg);

/*
 * Check files/ of drain m against its list: every listed entry is there with its type, mode
 * (files and directories), mtime (to the second), size, link target and, for a file, the
 * CRC-32C of all its bytes; nothing else is there. A drain without a list passes when it has no
 * files/ (stats all 0) and reports files/ as EXTRA otherwise. report (may be NULL) gets one line
 * per problem: an entry missing (a directory once, with the count under it), extra (a directory
 * once), changed (every difference on one line), or damaged; progress (may be NULL) the bytes
 * read. Returns PDCBB_OK when all matches, PDCBB_ERR_IO when something was reported (stats say
 * what), or the error that stopped the check (the list cannot be loaded: err says why).
 */
pdcbb_err_t pdcbb_drain_files_verify(const pdcbb_drain_t *m, pdcbb_drain_files_stats_t *stats,
                                     pdcbb_drain_files_report_fn report,
                                     pdcbb_drain_progress_fn progress, void *arg, char *err,
                                     size_t errlen);

#endif
