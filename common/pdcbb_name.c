/*
 * pdcbb_name.c - the name rule (UTF-8 without control characters, 1 to PDCBB_NAME_MAX bytes)
 * and the escaping of untrusted text for terminals and logs (pdcbb_name.h).
 */
#include "pdcbb_name.h"

#include <stdio.h>
#include <string.h>

size_t pdcbb_utf8_next(const uint8_t *s, size_t n, uint32_t *cp)
{
    uint8_t c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        if (cp != NULL)
            *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1Fu, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, v = c & 0x0Fu, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07u, min = 0x10000;
    } else {
        return 0; /* continuation byte, 0xC0/0xC1 (always overlong), 0xF5-0xFF */
    }
    if (len > n)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (s[k] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    if (cp != NULL)
        *cp = v;
    return len;
}

int pdcbb_utf8_valid(const void *s, size_t n, size_t *bad_offset)
{
    const uint8_t *p = s;
    size_t i = 0;
    while (i < n) {
        size_t l = pdcbb_utf8_next(p + i, n - i, NULL);
        if (l == 0) {
            if (bad_offset != NULL)
                *bad_offset = i;
            return 0;
        }
        i += l;
    }
    return 1;
}

static int is_control(uint32_t cp)
{
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F);
}

pdcbb_name_fault_t pdcbb_name_check(const char *name, pdcbb_name_bad_t *bad)
{
    pdcbb_name_bad_t b = {PDCBB_NAME_FAULT_NONE, 0, 0, 0};
    if (name == NULL || name[0] == '\0') {
        b.fault = PDCBB_NAME_FAULT_EMPTY;
        goto done;
    }
    b.len = strnlen(name, PDCBB_NAME_MAX + 1);
    if (b.len > PDCBB_NAME_MAX) {
        b.len = strlen(name);
        b.fault = PDCBB_NAME_FAULT_TOO_LONG;
        goto done;
    }
    const uint8_t *s = (const uint8_t *)name;
    for (size_t i = 0; i < b.len;) {
        uint32_t cp;
        size_t l = pdcbb_utf8_next(s + i, b.len - i, &cp);
        if (l == 0) {
            b.fault = PDCBB_NAME_FAULT_UTF8;
            b.offset = i;
            goto done;
        }
        if (is_control(cp)) {
            b.fault = PDCBB_NAME_FAULT_CONTROL;
            b.offset = i;
            b.cp = cp;
            goto done;
        }
        i += l;
    }
done:
    if (bad != NULL)
        *bad = b;
    return b.fault;
}

pdcbb_err_t pdcbb_name_validate(const char *kind, const char *name, char *why, size_t whylen)
{
    pdcbb_name_bad_t b;
    switch (pdcbb_name_check(name, &b)) {
    case PDCBB_NAME_FAULT_NONE:
        return PDCBB_OK;
    case PDCBB_NAME_FAULT_EMPTY:
        pdcbb_errf(why, whylen, "the %s name is NULL or empty", kind);
        return PDCBB_ERR_INVAL;
    case PDCBB_NAME_FAULT_TOO_LONG:
        pdcbb_errf(why, whylen, "%s name of %zu bytes is longer than %d", kind, b.len,
                   PDCBB_NAME_MAX);
        return PDCBB_ERR_TOO_BIG;
    case PDCBB_NAME_FAULT_UTF8:
        pdcbb_errf(why, whylen, "%s name is not valid UTF-8 at byte %zu", kind, b.offset);
        return PDCBB_ERR_BAD_NAME;
    case PDCBB_NAME_FAULT_CONTROL:
        pdcbb_errf(why, whylen, "%s name holds control character 0x%02x at byte %zu", kind,
                   (unsigned)b.cp, b.offset);
        return PDCBB_ERR_BAD_NAME;
    }
    return PDCBB_ERR_INTERNAL;
}

pdcbb_err_t pdcbb_text_validate(const char *kind, const char *text, char *why, size_t whylen)
{
    size_t bad;
    if (text == NULL || pdcbb_utf8_valid(text, strlen(text), &bad))
        return PDCBB_OK;
    pdcbb_errf(why, whylen, "%s is not valid UTF-8 at byte %zu", kind, bad);
    return PDCBB_ERR_BAD_NAME;
}

/* Bidirectional formatting characters (U+061C, U+200E-200F, U+202A-202E, U+2066-2069): they
 * reorder what a terminal shows after them, so a name could disguise what follows it. */
static int is_bidi(uint32_t cp)
{
    return cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

/* The escaped form of the character at s[0..n): into e (at least 9 bytes); its length. */
static size_t esc_one(const uint8_t *s, size_t n, char *e, size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    uint32_t cp;
    size_t l = pdcbb_utf8_next(s, n, &cp);
    if (l == 0 || is_control(cp)) {
        size_t k = l == 0 ? 1 : l, o = 0;
        const char *named = NULL;
        if (l == 1 && cp == '\n')
            named = "\\n";
        else if (l == 1 && cp == '\r')
            named = "\\r";
        else if (l == 1 && cp == '\t')
            named = "\\t";
        if (named != NULL) {
            memcpy(e, named, 2);
            o = 2;
        } else {
            for (size_t i = 0; i < k; i++) {
                e[o++] = '\\', e[o++] = 'x';
                e[o++] = hex[s[i] >> 4], e[o++] = hex[s[i] & 15];
            }
        }
        *used = k;
        return o;
    }
    if (is_bidi(cp)) {
        snprintf(e, 9, "\\u%04x", (unsigned)cp);
        *used = l;
        return 6;
    }
    if (l == 1 && (cp == '\\' || cp == '"')) {
        e[0] = '\\', e[1] = (char)cp;
        *used = 1;
        return 2;
    }
    memcpy(e, s, l);
    *used = l;
    return l;
}

char *pdcbb_escape(char *dst, size_t dstlen, const void *src, size_t n)
{
    if (dst == NULL || dstlen == 0)
        return dst;
    if (src == NULL) {
        snprintf(dst, dstlen, "(null)");
        return dst;
    }
    const uint8_t *s = src;
    char e[9];
    size_t o = 0, used, total = 0;
    for (size_t i = 0; i < n; i += used)
        total += esc_one(s + i, n - i, e, &used);
    int cut = total + 1 > dstlen;
    for (size_t i = 0; i < n; i += used) {
        size_t el = esc_one(s + i, n - i, e, &used);
        /* when cut, every piece leaves room for "..." and the NUL */
        if (o + el + (cut ? 4 : 1) > dstlen) {
            /* every piece before left room for "..." and the NUL */
            if (o + 4 <= dstlen) {
                memcpy(dst + o, "...", 3);
                o += 3;
            }
            break;
        }
        memcpy(dst + o, e, el);
        o += el;
    }
    dst[o < dstlen ? o : dstlen - 1] = '\0';
    return dst;
}

const char *pdcbb_esc(const char *s)
{
    static _Thread_local char buf[PDCBB_ESC_SLOTS][PDCBB_ESC_LEN(PDCBB_NAME_MAX) + 4];
    static _Thread_local unsigned next;
    char *b = buf[next++ % PDCBB_ESC_SLOTS];
    return pdcbb_escape(b, sizeof(buf[0]), s, s != NULL ? strlen(s) : 0);
}
