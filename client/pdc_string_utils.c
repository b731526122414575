/*
 * pdc_string_utils.c - PDC's string helpers for applications (string_utils.h): substrings,
 * '*' patterns, searches, printing a line, splitting at a regular expression, random strings.
 *
 * The results are PDC's; where PDC's code would crash, loop or read out of bounds these return
 * 0, -1 or NULL instead. libpdc itself never calls the exported names: the helpers other
 * helpers need are the hidden client_str_ functions here (client_strutil.h), which the exported
 * ones wrap, so an application defining its own `equals` or `substring` changes nothing inside
 * the library.
 */
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_strutil.h"
#include "string_utils.h"

/* The characters of gen_random_strings, in PDC's order (a size n takes the first n): a-z,
 * 0-9, 31 punctuation characters, A-Z. The order is what makes a seed give PDC's strings. */
static const char random_alphabet[] = "abcdefghijklmnopqrstuvwxyz"
                                      "0123456789"
                                      "!@#$%^&*()-_=+[]{}|;:'\",.<>?/`~"
                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/* ------------------------------------------------------------------ hidden twins */

char *client_str_range(const char *str, int start, int end)
{
    if (str == NULL || start < 0 || end < start)
        return NULL;
    size_t len = strlen(str);
    /* PDC reads before its copy (or copies a negative length) here; nothing sensible to give. */
    if ((size_t)start > len)
        return NULL;
    size_t stop = (size_t)end < len ? (size_t)end : len;
    size_t n = stop - (size_t)start;
    char *out = malloc(n + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, str + start, n);
    out[n] = '\0';
    return out;
}

static int has_prefix(const char *str, const char *pre)
{
    return str != NULL && pre != NULL && strncmp(str, pre, strlen(pre)) == 0;
}

static int has_suffix(const char *str, const char *suf)
{
    if (str == NULL || suf == NULL)
        return 0;
    size_t ls = strlen(str), lx = strlen(suf);
    return lx <= ls && memcmp(str + ls - lx, suf, lx) == 0;
}

static pattern_type_t pattern_kind(const char *pattern)
{
    int first = has_prefix(pattern, "*"), last = has_suffix(pattern, "*");
    if (first)
        return last ? PATTERN_MIDDLE : PATTERN_SUFFIX;
    return last ? PATTERN_PREFIX : PATTERN_EXACT;
}

int client_str_matches(const char *str, const char *pattern)
{
    if (str == NULL || pattern == NULL)
        return 0;
    size_t plen = strlen(pattern), slen = strlen(str);
    switch (pattern_kind(pattern)) {
    case PATTERN_EXACT:
        return strcmp(str, pattern) == 0;
    case PATTERN_PREFIX: /* "ab*": the literal is all but the last byte */
        return strncmp(str, pattern, plen - 1) == 0;
    case PATTERN_SUFFIX: /* "*ab": all but the first */
        return plen - 1 <= slen && memcmp(str + slen - (plen - 1), pattern + 1, plen - 1) == 0;
    case PATTERN_MIDDLE:
        /* "*" alone leaves PDC no literal between the stars (its substring fails): no match.
         * "**" leaves "", which every string contains. */
        if (plen < 2)
            return 0;
        return memmem(str, slen, pattern + 1, plen - 2) != NULL;
    }
    return 0;
}

__attribute__((format(printf, 1, 0))) static char *format_alloc(const char *format, va_list ap)
{
    if (format == NULL)
        return NULL;
    va_list again;
    va_copy(again, ap);
    char *out = NULL;
    int n = vsnprintf(NULL, 0, format, ap);
    if (n >= 0 && (out = malloc((size_t)n + 1)) != NULL)
        vsnprintf(out, (size_t)n + 1, format, again);
    va_end(again);
    return out;
}

char *client_str_printf(const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    char *out = format_alloc(format, ap);
    va_end(ap);
    return out;
}

/* The line and its newline under the stream's lock, so lines of two threads do not mix. */
__attribute__((format(printf, 2, 0))) static void print_line(FILE *out, const char *format,
                                                             va_list ap)
{
    flockfile(out);
    if (format != NULL)
        vfprintf(out, format, ap);
    fputc('\n', out);
    fflush(out);
    funlockfile(out);
}

/* ------------------------------------------------------------------ string_utils.h */

/* Format-checked here only: the installed header leaves them unchecked, as PDC's does. */
char *dsprintf(const char *format, ...) __attribute__((format(printf, 1, 2)));
void println(const char *format, ...) __attribute__((format(printf, 1, 2)));
void stderr_println(const char *format, ...) __attribute__((format(printf, 1, 2)));

char *substr(const char *str, int start)
{
    return client_str_range(str, start, INT_MAX);
}

char *subrstr(const char *str, int end)
{
    return client_str_range(str, 0, end);
}

char *substring(const char *str, int start, int end)
{
    return client_str_range(str, start, end);
}

pattern_type_t determine_pattern_type(const char *pattern)
{
    return pattern_kind(pattern);
}

int indexOfStr(const char *str, char *tok)
{
    const char *at = str != NULL && tok != NULL ? strstr(str, tok) : NULL;
    return at != NULL ? (int)(at - str) : -1;
}

int indexOf(const char *str, char c)
{
    const char *at = str != NULL ? strchr(str, c) : NULL;
    return at != NULL ? (int)(at - str) : -1;
}

int startsWith(const char *str, const char *pre)
{
    return has_prefix(str, pre);
}

int endsWith(const char *str, const char *suf)
{
    return has_suffix(str, suf);
}

int contains(const char *str, const char *tok)
{
    return str != NULL && tok != NULL && strstr(str, tok) != NULL;
}

int equals(const char *str, const char *tok)
{
    return str != NULL && tok != NULL && strcmp(str, tok) == 0;
}

char *dsprintf(const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    char *out = format_alloc(format, ap);
    va_end(ap);
    return out;
}

void println(const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    print_line(stdout, format, ap);
    va_end(ap);
}

void stderr_println(const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    print_line(stderr, format, ap);
    va_end(ap);
}

int simple_matches(const char *str, const char *pattern)
{
    return client_str_matches(str, pattern);
}

char *reverse_str(char *str)
{
    if (str == NULL)
        return NULL;
    size_t len = strlen(str);
    char *out = malloc(len + 1);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++)
        out[i] = str[len - 1 - i];
    out[len] = '\0';
    return out;
}

static void free_parts(char **parts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(parts[i]);
    free(parts);
}

/* Append a copy of the n bytes at text to *parts (*count entries, grown as needed). */
static int add_part(char ***parts, size_t *count, size_t *cap, const char *text, size_t n)
{
    if (*count == *cap) {
        size_t ncap = *cap ? 2 * *cap : 8;
        char **grown = realloc(*parts, ncap * sizeof(*grown));
        if (grown == NULL)
            return -1;
        *parts = grown;
        *cap = ncap;
    }
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return -1;
    memcpy(copy, text, n);
    copy[n] = '\0';
    (*parts)[(*count)++] = copy;
    return 0;
}

int split_string(const char *str, const char *delim, char ***result, int *result_len)
{
    if (str == NULL || delim == NULL || result == NULL || result_len == NULL)
        return -1;
    regex_t re;
    if (regcomp(&re, delim, 0) != 0)
        return -1;
    char **parts = NULL;
    size_t count = 0, cap = 0;
    int ret = -1;
    const char *rest = str;
    regmatch_t m;
    /* As in PDC, each search starts afresh at the text after the last match (so '^' matches
     * there too). */
    while (regexec(&re, rest, 1, &m, 0) == 0) {
        /* An empty match would never move on: PDC loops forever. Refuse the delimiter. */
        if (m.rm_eo == m.rm_so)
            goto out;
        if (add_part(&parts, &count, &cap, rest, (size_t)m.rm_so) != 0)
            goto out;
        rest += m.rm_eo;
    }
    if (count >= INT_MAX || add_part(&parts, &count, &cap, rest, strlen(rest)) != 0)
        goto out;
    *result = parts;
    *result_len = (int)count;
    ret = (int)count;
    parts = NULL;
out:
    if (parts != NULL)
        free_parts(parts, count);
    regfree(&re);
    return ret;
}

char **gen_random_strings(int count, int minlen, int maxlen, int alphabet_size)
{
    if (count < 0 || maxlen < 1)
        return NULL;
    const size_t full = sizeof(random_alphabet) - 1;
    /* PDC compares the int with the alphabet's size_t length, so a negative size counts as
     * huge and takes the whole alphabet; 0 means a-z. */
    size_t abc = alphabet_size < 0 || (size_t)alphabet_size > full ? full
                 : alphabet_size == 0                              ? 26
                                                                   : (size_t)alphabet_size;
    char **out = calloc(count > 0 ? (size_t)count : 1, sizeof(*out));
    if (out == NULL)
        return NULL;
    for (int c = 0; c < count; c++) {
        /* The same rand() calls in the same order as PDC: the length, then each character. */
        int len = rand() % maxlen + 1;
        if (len < minlen)
            len = minlen;
        char *s = malloc((size_t)len + 1);
        if (s == NULL) {
            free_parts(out, (size_t)c);
            return NULL;
        }
        for (int i = 0; i < len; i++)
            s[i] = random_alphabet[(size_t)rand() % abc];
        s[len] = '\0';
        out[c] = s;
    }
    return out;
}
