/*
 * client_strutil.h - the library's own (hidden) copies of PDC's string helpers, shared by
 * pdc_string_utils.c and pdc_query_utils.c.
 *
 * The exported helpers (substring, simple_matches, dsprintf, ...: string_utils.h) have names an
 * application may define too, and a call from inside libpdc to an exported name would then
 * reach the application's function. So the helpers that call one another call these hidden
 * functions instead, which the exported ones wrap; nothing else in libpdc uses either. They
 * keep no state and are safe from any thread.
 */
#ifndef CLIENT_STRUTIL_H
#define CLIENT_STRUTIL_H

/* substring(): bytes start to end - 1 of str (end clamped to its length), malloc'ed; NULL for
 * str NULL, negative start or end, end < start, start past the end, no memory. */
char *client_str_range(const char *str, int start, int end);

/* simple_matches(): 1 if str matches pattern ("ab", "ab*", "*ab", "*ab*"), else 0. */
int client_str_matches(const char *str, const char *pattern);

/* dsprintf(): the formatted text, malloc'ed; NULL for format NULL, a format error, no memory. */
char *client_str_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif /* CLIENT_STRUTIL_H */
