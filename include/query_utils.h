/*
 * query_utils.h - PDC's helpers for tag lists and generated tag queries, for source
 * compatibility.
 *
 * PDC's pdc_client_connect.h includes this header (and it includes string_utils.h), so PDC's
 * test and benchmark programs use these names without including it themselves; pdcbb's
 * pdc_client_connect.h includes it in the same way. The declarations and structs are PDC's;
 * libpdc defines the functions with PDC's results and never calls them itself.
 *
 * Tag lists. A tags list is text such as "tag0=10,tag1=11": pairs KEY=VALUE separated by
 * TAG_DELIMITER (each character of it separates; empty pairs are skipped), split at the first
 * '=' of a pair; a pair without '=' is ignored. Keys and values are matched with
 * simple_matches (string_utils.h): exact, "ab*", "*ab" or "*ab*".
 *
 * Conventions. A char * returned belongs to the caller, who frees it with free(). Where PDC
 * would crash on a NULL argument these functions return NULL or 0 instead. Unlike PDC's they
 * print nothing on bad input (see each function), use no static state (PDC's use strtok) and
 * may be called from any thread.
 */
#ifndef PDC_QUERY_UTILS_H
#define PDC_QUERY_UTILS_H

#include "pdc.h"
#include "string_utils.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What separates the KEY=VALUE pairs of a tags list. */
#define TAG_DELIMITER ","

/* What gen_query_key_value makes a query from. The query types are numbers:
 *   key_query_type, and value_query_type for a PDC_STRING tag:
 *     0 the whole text, 1 its first affix_len bytes and '*' ("hel*"), 2 '*' and its last
 *     affix_len bytes ("*llo"), 3 '*', its last affix_len bytes and '*' ("*llo*");
 *   value_query_type for a PDC_INT tag:
 *     4 the value in decimal ("234"), 5 the range "range_lo~range_hi" ("224~244"). */
typedef struct query_gen_input {
    pdc_kvtag_t *base_tag; /* the tag: name, and value (a string, or an int for PDC_INT) */
    int key_query_type;    /* 0 to 3 */
    int value_query_type;  /* 0 to 3 for PDC_STRING, 4 or 5 for PDC_INT */
    int affix_len;         /* bytes kept by types 1 to 3 (at most the whole text) */
    int range_lo;          /* the range of type 5 */
    int range_hi;
} query_gen_input_t;

/* What gen_query_key_value makes: two strings allocated with malloc (free_query_output frees
 * them) and their lengths. */
typedef struct query_gen_output {
    char *key_query;
    size_t key_query_len;
    char *value_query;
    size_t value_query_len;
} query_gen_output_t;

/** @brief Make the key and the value query of a tag (see query_gen_input_t for the types).
 *
 * As in PDC, a tag name shorter than 3 bytes is first replaced by its first byte three times
 * ("ab" -> "aaa"), and so is a PDC_STRING value shorter than 3 bytes; either replacement also
 * sets input->affix_len to 1. The new strings, allocated with malloc, are written into
 * input->base_tag (name or value) and belong to the caller, who may free() them; the strings
 * they replace are not freed. The replacements are made first, even when no query is made.
 * @param[in,out] input   the tag and the query types.
 * @param[out]    output  receives the two queries; the caller frees them with
 *                        free_query_output. Unchanged when nothing is made.
 * Nothing is made (and, unlike PDC, nothing printed) when an argument or the tag's name is
 * NULL, a PDC_STRING tag's value is NULL, a query type is not one listed above (for the key:
 * 0 to 3), the tag's type is neither PDC_STRING nor PDC_INT, the key query would be empty (an
 * empty name with type 0), the value query would be empty, or memory runs out.
 */
PDC_EXPORT void gen_query_key_value(query_gen_input_t *input, query_gen_output_t *output);

/** @brief Join the two queries of gen_query_key_value: "KEY=VALUE".
 * @param[in] query_gen_output  the queries (a NULL query counts as "").
 * @return a new string (free() it), or NULL: query_gen_output NULL, no memory.
 */
PDC_EXPORT char *gen_query_str(query_gen_output_t *query_gen_output);

/** @brief Free the two queries of an output of gen_query_key_value (not the struct itself)
 * and set them to NULL.
 * @param[in,out] output  the output, or NULL.
 */
PDC_EXPORT void free_query_output(query_gen_output_t *output);

/** @brief Print 1000 lines "helloworld, " followed by gen_tags(i % 20) for i from 0 to 999,
 * with println (PDC's self-test of gen_tags).
 */
PDC_EXPORT void gen_tags_in_loop(void);

/** @brief A tags list made from a number, for simulations.
 *
 * For obj_id % 20 = n it has n + 1 pairs "tagJ=<obj_id><J>" for J from 0 to n, e.g. gen_tags(2)
 * is "tag0=20,tag1=21,tag2=22". A negative obj_id with a non-zero remainder gives "".
 * @param[in] obj_id  the number.
 * @return a new string (free() it), or NULL (no memory).
 */
PDC_EXPORT char *gen_tags(int obj_id);

/** @brief The key of a KEY<delim>VALUE pair: the text before the first delim.
 * @param[in] kv_pair  the pair, or NULL.
 * @param[in] delim    the separator; '\0' gives all of kv_pair.
 * @return a new string (free() it), or NULL: kv_pair NULL or without delim, no memory.
 */
PDC_EXPORT char *get_key(const char *kv_pair, char delim);

/** @brief The value of a KEY<delim>VALUE pair: the text after the first delim.
 * @param[in] kv_pair  the pair, or NULL.
 * @param[in] delim    the separator ('\0' gives NULL).
 * @return a new string (free() it), or NULL: kv_pair NULL or without delim, no memory.
 */
PDC_EXPORT char *get_value(const char *kv_pair, char delim);

/** @brief The first pair of a tags list whose key matches a pattern and, if one is given,
 * whose value matches another.
 * @param[in] tagslist       the tags list, or NULL.
 * @param[in] key_pattern    the pattern for the key, or NULL.
 * @param[in] value_pattern  the pattern for the value, or NULL: any value.
 * @return a copy of that pair, "KEY=VALUE", allocated with malloc: the caller frees it with
 *         free(). (PDC returns a pointer into a copy of the list that it never frees.) NULL
 *         when no pair matches, tagslist or key_pattern is NULL, or memory runs out.
 */
PDC_EXPORT char *k_v_matches_p(const char *tagslist, const char *key_pattern,
                               const char *value_pattern);

/** @brief Whether a tags list has a tag whose name matches tagname (a pattern, as PDC does).
 * @param[in] tagslist  the tags list, or NULL.
 * @param[in] tagname   the name or pattern, or NULL.
 * @return 1 or 0 (also 0 when either is NULL).
 */
PDC_EXPORT int has_tag(const char *tagslist, const char *tagname);

/** @brief Whether a tags list has a tag whose name matches a pattern (same as has_tag).
 * @param[in] tagslist  the tags list, or NULL.
 * @param[in] pattern   the pattern, or NULL.
 * @return 1 or 0 (also 0 when either is NULL).
 */
PDC_EXPORT int has_tag_p(const char *tagslist, const char *pattern);

/** @brief Whether a tags list has a tag whose name matches tagname and whose value matches val
 * (both patterns, as in PDC).
 * @param[in] tagslist  the tags list, or NULL.
 * @param[in] tagname   the name or pattern, or NULL.
 * @param[in] val       the value or pattern, or NULL: any value (as has_tag).
 * @return 1 or 0 (also 0 when tagslist or tagname is NULL).
 */
PDC_EXPORT int is_value_match(const char *tagslist, const char *tagname, const char *val);

/** @brief Whether a tags list has a tag whose name and value match two patterns (same as
 * is_value_match).
 * @param[in] tagslist  the tags list, or NULL.
 * @param[in] tagname   the pattern for the name, or NULL.
 * @param[in] pattern   the pattern for the value, or NULL: any value (as has_tag_p).
 * @return 1 or 0 (also 0 when tagslist or tagname is NULL).
 */
PDC_EXPORT int is_value_match_p(const char *tagslist, const char *tagname, const char *pattern);

/** @brief Whether the first tag of a list whose name matches tagname has a value from `from`
 * to `to` (both included), the value read as an int with atoi ("12ab" is 12, "ab" 0).
 * @param[in] tagslist  the tags list, or NULL.
 * @param[in] tagname   the name or pattern, or NULL.
 * @param[in] from, to  the range.
 * @return 1 or 0 (also 0 when no tag matches; PDC crashes then).
 */
PDC_EXPORT int is_value_in_range(const char *tagslist, const char *tagname, int from, int to);

#ifdef __cplusplus
}
#endif

#endif /* PDC_QUERY_UTILS_H */
