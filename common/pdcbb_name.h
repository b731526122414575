/*
 * pdcbb_name.h - the one rule for names, and the one way to print untrusted text.
 *
 * A name (of a container, an object, a tag or a KV object) is non-empty, at most
 * PDCBB_NAME_MAX bytes, valid UTF-8 (no overlong forms, no surrogates U+D800-U+DFFF, nothing
 * above U+10FFFF, no truncated sequence) and holds no control character (C0 U+0000-U+001F,
 * DEL U+007F, C1 U+0080-U+009F). The client library checks it before sending anything and the
 * daemon checks it again for every name it receives, so the drain (YAML, which cannot hold
 * invalid UTF-8) and every terminal that shows a name get text.
 *
 * Everything that prints a user-supplied name or another untrusted string (names read from a
 * drain someone else could have written, a FAILED report, a message from a daemon) prints it
 * through pdcbb_escape()/pdcbb_esc(): control characters, backslashes, double quotes and bytes that
 * are not valid UTF-8 become C-style escapes, so nothing reaches a terminal raw.
 *
 * All functions are pure except pdcbb_esc(), which uses thread-local buffers; all are safe
 * from any thread.
 */
#ifndef PDCBB_NAME_H
#define PDCBB_NAME_H

#include <stddef.h>
#include <stdint.h>

#include "pdcbb_error.h"
#include "pdcbb_proto.h" /* PDCBB_NAME_MAX */

/* Which part of the rule a name breaks. */
typedef enum pdcbb_name_fault {
    PDCBB_NAME_FAULT_NONE = 0,     /* a valid name */
    PDCBB_NAME_FAULT_EMPTY = 1,    /* NULL or "" */
    PDCBB_NAME_FAULT_TOO_LONG = 2, /* more than PDCBB_NAME_MAX bytes */
    PDCBB_NAME_FAULT_UTF8 = 3,     /* not valid UTF-8 at the offset */
    PDCBB_NAME_FAULT_CONTROL = 4   /* a control character (code point cp) at the offset */
} pdcbb_name_fault_t;

/* Where and how a name breaks the rule. */
typedef struct pdcbb_name_bad {
    pdcbb_name_fault_t fault;
    size_t offset; /* byte offset of the first bad byte (UTF8, CONTROL) */
    uint32_t cp;   /* the control character's code point (CONTROL) */
    size_t len;    /* the name's length in bytes (TOO_LONG: how long it is) */
} pdcbb_name_bad_t;

/*
 * Length in bytes of the valid UTF-8 sequence at s[0..n), 0 if the bytes there are not one
 * (a stray continuation byte, a lead byte 0xC0, 0xC1 or 0xF5-0xFF, an overlong form, a
 * surrogate, a code point above U+10FFFF, or a sequence cut short by n). *cp [out, may be
 * NULL] receives the code point when the length is not 0. n must be at least 1.
 */
size_t pdcbb_utf8_next(const uint8_t *s, size_t n, uint32_t *cp);

/*
 * Whether s[0..n) is valid UTF-8 (NUL bytes allowed). 1 if it is; 0 if not, with
 * *bad_offset [out, may be NULL] the offset of the first byte that does not start a valid
 * sequence.
 */
int pdcbb_utf8_valid(const void *s, size_t n, size_t *bad_offset);

/*
 * Check name (NUL-terminated, may be NULL) against the rule. Returns the fault
 * (PDCBB_NAME_FAULT_NONE for a valid name); bad [out, may be NULL] is filled in any case.
 * Only the first PDCBB_NAME_MAX + 1 bytes are looked at, so a long name costs no more.
 */
pdcbb_name_fault_t pdcbb_name_check(const char *name, pdcbb_name_bad_t *bad);

/*
 * Check name and say what is wrong: kind names the kind of name ("container", "object",
 * "tag", "KV object"). Returns
 *   PDCBB_OK              a valid name (why untouched);
 *   PDCBB_ERR_INVAL       NULL or empty: "the container name is NULL or empty";
 *   PDCBB_ERR_TOO_BIG     longer than PDCBB_NAME_MAX: "object name of 2000 bytes is longer
 *                         than 1023";
 *   PDCBB_ERR_BAD_NAME    "object name is not valid UTF-8 at byte 1", "container name holds
 *                         control character 0x1b at byte 3".
 * why [out, may be NULL]: the sentence, whylen bytes, NUL-terminated.
 */
pdcbb_err_t pdcbb_name_validate(const char *kind, const char *name, char *why, size_t whylen);

/*
 * Check a free-text property kept with an object and written to the drain (app_name, data_loc,
 * the tag string): it may hold anything but bytes that are not UTF-8, which the drain's YAML
 * cannot hold. kind names it ("app_name"). PDCBB_OK (NULL is fine), or PDCBB_ERR_BAD_NAME with
 * why: "app_name is not valid UTF-8 at byte 3".
 */
pdcbb_err_t pdcbb_text_validate(const char *kind, const char *text, char *why, size_t whylen);

/*
 * Escape n bytes of s for a terminal or a log line: printable ASCII and valid UTF-8 of code
 * points above U+009F are copied; a backslash and a double quote become "\\" and "\"", \n \r
 * \t become "\n" "\r" "\t",
 * every other C0 control, DEL and each byte of a C1 control or of invalid UTF-8 becomes
 * "\xHH"; a bidirectional formatting character (U+061C, U+200E-200F, U+202A-202E,
 * U+2066-2069) becomes "\uHHHH". The result (NUL-terminated) goes to dst of dstlen bytes; when it
 * does not fit it is cut at a character boundary and ends with "...". Returns dst. A NULL s prints
 * "(null)". PDCBB_ESC_LEN(n) bytes always suffice for n bytes of input.
 */
#define PDCBB_ESC_LEN(n) (4 * (size_t)(n) + 1)
char *pdcbb_escape(char *dst, size_t dstlen, const void *s, size_t n);

/*
 * pdcbb_escape() of the NUL-terminated s into one of PDCBB_ESC_SLOTS thread-local buffers used
 * in turn, for use as a printf argument: at most PDCBB_ESC_SLOTS calls per statement. Text
 * longer than a name (escaped to more than PDCBB_ESC_LEN(PDCBB_NAME_MAX) bytes) is cut with
 * "...". The pointer stays valid until PDCBB_ESC_SLOTS later calls in the same thread.
 */
#define PDCBB_ESC_SLOTS 4
const char *pdcbb_esc(const char *s);

#endif
