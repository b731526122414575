/*
 * string_utils.h - PDC's small string helpers, for source compatibility.
 *
 * PDC ships these helpers in its commons (string_utils.h) and its test and benchmark programs
 * use them: they include this header directly, or get it through query_utils.h, which
 * pdc_client_connect.h includes. The declarations, the enum values and the color macros are
 * PDC's; libpdc defines the functions with PDC's results. pdcbb itself never calls them, so a
 * program that defines a function of the same name (equals, contains, println, ...) changes
 * only its own calls, never the library's behaviour.
 *
 * Conventions. Positions and lengths are in bytes. A function that returns char * returns a
 * new string allocated with malloc, which the caller frees with free(), or NULL (bad arguments,
 * or no memory). Where PDC would crash or read out of bounds (a NULL argument, a start beyond
 * the end of the string), these functions return the "nothing" answer instead: 0, -1 or NULL,
 * as each documents. The functions keep no state; all of them may be called from any thread at
 * any time except gen_random_strings, which draws from rand() (see there). dsprintf, println
 * and stderr_println carry no printf format attribute, as in PDC: some PDC programs pass them
 * arguments that do not match the format, and a build that succeeds with PDC's headers (even
 * with -Wall -Werror) must succeed with these.
 */
#ifndef PDC_STRING_UTILS_H
#define PDC_STRING_UTILS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The export macro of pdc.h; defined here too, so this header stands alone as PDC's does. */
#ifndef PDC_EXPORT
#if defined(__GNUC__) || defined(__clang__)
#define PDC_EXPORT __attribute__((visibility("default")))
#else
#define PDC_EXPORT
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Terminal colors for printed text: print one, the text, then ANSI_COLOR_RESET. */
#define ANSI_COLOR_RED     "\x1b[31m"
#define ANSI_COLOR_GREEN   "\x1b[32m"
#define ANSI_COLOR_YELLOW  "\x1b[33m"
#define ANSI_COLOR_BLUE    "\x1b[34m"
#define ANSI_COLOR_MAGENTA "\x1b[35m"
#define ANSI_COLOR_CYAN    "\x1b[36m"
#define ANSI_COLOR_RESET   "\x1b[0m"

/* The kinds of pattern that simple_matches knows, named by where the '*' is (PDC's values). */
typedef enum {
    PATTERN_EXACT = 2,  /* "ab": the whole string */
    PATTERN_PREFIX = 3, /* "ab*": the string starts with "ab" */
    PATTERN_SUFFIX = 4, /* "*ab": the string ends with "ab" */
    PATTERN_MIDDLE = 5  /* "*ab*": "ab" anywhere in the string */
} pattern_type_t;

/** @brief A copy of the end of a string, from byte start on.
 * @param[in] str    the string; not kept.
 * @param[in] start  the first byte to copy, 0 to strlen(str) (strlen(str) gives "").
 * @return a new string (free() it), or NULL: str NULL, start negative or past the end, no
 *         memory.
 */
PDC_EXPORT char *substr(const char *str, int start);

/** @brief A copy of the beginning of a string, the bytes before position end.
 * @param[in] str  the string; not kept.
 * @param[in] end  how many bytes to copy, 0 or more; past the end of str copies all of it.
 * @return a new string (free() it), or NULL: str NULL, end negative, no memory.
 */
PDC_EXPORT char *subrstr(const char *str, int end);

/** @brief A copy of the bytes start to end - 1 of a string.
 * @param[in] str    the string; not kept.
 * @param[in] start  the first byte, 0 to strlen(str).
 * @param[in] end    one past the last byte, start or more; an end past the end of str stops
 *                   there. end == start gives "".
 * @return a new string (free() it), or NULL: str NULL, start or end negative, end < start,
 *         start past the end of str, no memory.
 */
PDC_EXPORT char *substring(const char *str, int start, int end);

/** @brief The kind of a pattern, by a '*' at its ends.
 *
 * A '*' first and last: PATTERN_MIDDLE (also "*" alone); first only: PATTERN_SUFFIX; last
 * only: PATTERN_PREFIX; neither: PATTERN_EXACT (also "" and NULL). A '*' anywhere else is an
 * ordinary character.
 * @param[in] pattern  the pattern, or NULL.
 * @return the kind.
 */
PDC_EXPORT pattern_type_t determine_pattern_type(const char *pattern);

/** @brief Where a string first occurs in another.
 * @param[in] str  the string searched, or NULL.
 * @param[in] tok  the string looked for, or NULL ("" is found at 0).
 * @return the position of the first occurrence, or -1 (not found, or an argument NULL).
 */
PDC_EXPORT int indexOfStr(const char *str, char *tok);

/** @brief Where a character first occurs in a string.
 * @param[in] str  the string searched, or NULL.
 * @param[in] c    the character; '\0' is found at strlen(str).
 * @return its position, or -1 (not found, or str NULL).
 */
PDC_EXPORT int indexOf(const char *str, char c);

/** @brief Whether str begins with pre.
 * @param[in] str  the string, or NULL.
 * @param[in] pre  the prefix, or NULL; every string begins with "".
 * @return 1 or 0 (also 0 when either is NULL).
 */
PDC_EXPORT int startsWith(const char *str, const char *pre);

/** @brief Whether str ends with suf.
 * @param[in] str  the string, or NULL.
 * @param[in] suf  the suffix, or NULL; every string ends with "".
 * @return 1 or 0 (also 0 when either is NULL).
 */
PDC_EXPORT int endsWith(const char *str, const char *suf);

/** @brief Whether tok occurs anywhere in str.
 * @param[in] str  the string, or NULL.
 * @param[in] tok  the string looked for, or NULL; "" occurs in every string.
 * @return 1 or 0 (also 0 when either is NULL).
 */
PDC_EXPORT int contains(const char *str, const char *tok);

/** @brief Whether two strings are the same.
 * @param[in] str  a string, or NULL.
 * @param[in] tok  the other, or NULL.
 * @return 1 or 0 (also 0 when either is NULL).
 */
PDC_EXPORT int equals(const char *str, const char *tok);

/** @brief printf into a new string of the size needed.
 * @param[in] format  a printf format, and its arguments.
 * @return a new string (free() it), or NULL: format NULL, a format error, no memory.
 */
PDC_EXPORT char *dsprintf(const char *format, ...);

/** @brief printf to stdout, then a newline, then flush stdout.
 * @param[in] format  a printf format, and its arguments; NULL prints only the newline.
 */
PDC_EXPORT void println(const char *format, ...);

/** @brief As println, on stderr.
 * @param[in] format  a printf format, and its arguments; NULL prints only the newline.
 */
PDC_EXPORT void stderr_println(const char *format, ...);

/** @brief Whether a string matches a pattern of one of the kinds of determine_pattern_type.
 *
 * "ab" matches "ab" only; "ab*" the strings that start with "ab"; "*ab" those that end with
 * "ab"; "*ab*" those that contain "ab". As in PDC, "*" alone matches nothing and "**" matches
 * everything; "" matches only "".
 * @param[in] str      the string, or NULL.
 * @param[in] pattern  the pattern, or NULL.
 * @return 1 if it matches, else 0 (also when either is NULL).
 */
PDC_EXPORT int simple_matches(const char *str, const char *pattern);

/** @brief A reversed copy of a string (byte by byte).
 * @param[in] str  the string; not modified, not kept.
 * @return a new string (free() it), or NULL: str NULL, no memory.
 */
PDC_EXPORT char *reverse_str(char *str);

/** @brief Split a string where a regular expression matches.
 *
 * delim is a POSIX basic regular expression (regcomp with no flags, as in PDC), so "," splits
 * at commas and "[,;]" at commas and semicolons. The parts are the text between matches: n
 * matches give n + 1 parts, some of them "" (a delimiter first, last, or twice in a row); a
 * string without a match gives one part, a copy of it. A delimiter that can match the empty
 * string is refused (PDC loops forever on one).
 * @param[in]  str         the string; not kept.
 * @param[in]  delim       the regular expression; not kept.
 * @param[out] result      receives the array of the parts, allocated with malloc, as each part:
 *                         the caller frees every (*result)[i] and then *result.
 * @param[out] result_len  receives the number of parts.
 * @return the number of parts, or -1 (out-parameters unchanged): an argument NULL, delim not a
 *         valid regular expression or matching the empty string, no memory.
 */
PDC_EXPORT int split_string(const char *str, const char *delim, char ***result, int *result_len);

/** @brief Random strings, drawn with rand() as PDC draws them.
 *
 * Each string draws its length first, rand() % maxlen + 1, raised to minlen if shorter, then
 * each of its characters from the first alphabet_size characters of PDC's alphabet: a-z, then
 * 0-9, then the 31 characters !@#$%^&*()-_=+[]{}|;:'",.<>?/`~, then A-Z (93 in all). So 26
 * gives [a-z], 36 [a-z0-9], 93 all of them. An alphabet_size of 0 means 26; one above 93, or
 * negative (as in PDC), means 93. The same srand() seed gives the same strings as PDC's. Not
 * thread-safe when other threads call rand().
 * @param[in] count          how many strings, 0 or more.
 * @param[in] minlen         the shortest length.
 * @param[in] maxlen         the longest length drawn, 1 or more.
 * @param[in] alphabet_size  how many characters of the alphabet to use.
 * @return an array of count new strings, allocated with malloc as each string (the caller
 *         frees every string and then the array), or NULL: count negative, maxlen below 1, no
 *         memory.
 */
PDC_EXPORT char **gen_random_strings(int count, int minlen, int maxlen, int alphabet_size);

#ifdef __cplusplus
}
#endif

#endif /* PDC_STRING_UTILS_H */
