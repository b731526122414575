/*
 * pdc_query_utils.c - PDC's helpers for tag lists and generated tag queries (query_utils.h):
 * "k1=v1,k2=v2" lists searched with '*' patterns, KEY=VALUE pairs taken apart, the tag lists
 * and queries PDC's benchmarks generate.
 *
 * The results are PDC's, with its crashes and leaks turned into NULL or 0 and no messages
 * printed. Like pdc_string_utils.c, this file calls only the hidden client_str_ helpers, never
 * an exported name an application could define too; libpdc calls none of these functions.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_strutil.h"
#include "query_utils.h"

/* ------------------------------------------------------------------ tag lists */

/* Copy of the text before (value 0) or after (value 1) the first delim of kv, or NULL. */
static char *pair_part(const char *kv, char delim, int value)
{
    const char *at = kv != NULL ? strchr(kv, delim) : NULL;
    if (at == NULL)
        return NULL;
    int pos = (int)(at - kv);
    return value ? client_str_range(kv, pos + 1, INT_MAX) : client_str_range(kv, 0, pos);
}

char *get_key(const char *kv_pair, char delim)
{
    return pair_part(kv_pair, delim, 0);
}

char *get_value(const char *kv_pair, char delim)
{
    /* '\0' is "found" at the terminator: a key of all the text, and no value after it. */
    if (delim == '\0')
        return NULL;
    return pair_part(kv_pair, delim, 1);
}

/* Whether the pair (one element of a tags list, with a '=') matches the patterns. */
static int pair_matches(const char *pair, const char *key_pattern, const char *value_pattern)
{
    const char *eq = strchr(pair, '=');
    char *key = client_str_range(pair, 0, (int)(eq - pair));
    int ok = key != NULL && client_str_matches(key, key_pattern) &&
             (value_pattern == NULL || client_str_matches(eq + 1, value_pattern));
    free(key);
    return ok;
}

/* The first pair of tagslist (separated by any character of TAG_DELIMITER, empty ones skipped)
 * that has a '=' and matches the patterns: a malloc'ed copy, or NULL (none, or no memory). */
static char *find_pair(const char *tagslist, const char *key_pattern, const char *value_pattern)
{
    if (tagslist == NULL || key_pattern == NULL)
        return NULL;
    char *list = strdup(tagslist);
    if (list == NULL)
        return NULL;
    char *found = NULL, *save = NULL;
    /* strtok_r, not PDC's strtok: a caller's own strtok loop is left alone */
    for (char *pair = strtok_r(list, TAG_DELIMITER, &save); pair != NULL;
         pair = strtok_r(NULL, TAG_DELIMITER, &save)) {
        if (strchr(pair, '=') != NULL && pair_matches(pair, key_pattern, value_pattern)) {
            found = strdup(pair);
            break;
        }
    }
    free(list);
    return found;
}

char *k_v_matches_p(const char *tagslist, const char *key_pattern, const char *value_pattern)
{
    return find_pair(tagslist, key_pattern, value_pattern);
}

/* Whether some pair of tagslist matches. */
static int any_pair(const char *tagslist, const char *key_pattern, const char *value_pattern)
{
    char *found = find_pair(tagslist, key_pattern, value_pattern);
    int hit = found != NULL;
    free(found);
    return hit;
}

int has_tag(const char *tagslist, const char *tagname)
{
    return any_pair(tagslist, tagname, NULL);
}

int has_tag_p(const char *tagslist, const char *pattern)
{
    return any_pair(tagslist, pattern, NULL);
}

int is_value_match(const char *tagslist, const char *tagname, const char *val)
{
    return any_pair(tagslist, tagname, val);
}

int is_value_match_p(const char *tagslist, const char *tagname, const char *pattern)
{
    return any_pair(tagslist, tagname, pattern);
}

int is_value_in_range(const char *tagslist, const char *tagname, int from, int to)
{
    char *found = find_pair(tagslist, tagname, NULL);
    if (found == NULL)
        return 0;
    int v = atoi(strchr(found, '=') + 1);
    free(found);
    return v >= from && v <= to;
}

/* ------------------------------------------------------------------ generated tags */

/* gen_tags, which gen_tags_in_loop calls without going through the exported name. */
static char *make_tags(int obj_id)
{
    /* C's remainder keeps the sign: a negative id with a remainder gives no tag at all. */
    int last = obj_id % 20;
    char *list = strdup("");
    for (int j = 0; list != NULL && j <= last; j++) {
        char *longer =
            client_str_printf("%s%stag%d=%d%d", list, j ? TAG_DELIMITER : "", j, obj_id, j);
        free(list);
        list = longer;
    }
    return list;
}

char *gen_tags(int obj_id)
{
    return make_tags(obj_id);
}

void gen_tags_in_loop(void)
{
    for (int i = 0; i < 1000; i++) {
        char *tags = make_tags(i % 20);
        flockfile(stdout);
        printf("helloworld, %s\n", tags ? tags : "(null)");
        fflush(stdout);
        funlockfile(stdout);
        free(tags);
    }
}

/* ------------------------------------------------------------------ generated queries */

/* The query of type kind (0 exact, 1 prefix, 2 suffix, 3 infix: query_gen_input_t) for text,
 * keeping at most affix bytes of it for kinds 1 to 3; malloc'ed, NULL for another kind or no
 * memory. The suffix and infix queries keep the end of the text, as PDC's do. */
static char *affix_query(const char *text, int kind, size_t affix)
{
    size_t len = strlen(text);
    if (affix > len)
        affix = len;
    int keep = (int)affix, tail = (int)(len - affix);
    switch (kind) {
    case 0:
        return client_str_printf("%s", text);
    case 1:
        return client_str_printf("%.*s*", keep, text);
    case 2:
        return client_str_printf("*%.*s", keep, text + tail);
    case 3:
        return client_str_printf("*%.*s*", keep, text + tail);
    default:
        return NULL;
    }
}

/* PDC's stand-in for a name or string value under 3 bytes: its first byte three times (""
 * stays ""), malloc'ed. */
static char *tripled(const char *text)
{
    char *out = calloc(4, 1);
    if (out != NULL)
        memset(out, text[0], 3);
    return out;
}

void gen_query_key_value(query_gen_input_t *input, query_gen_output_t *output)
{
    if (input == NULL || output == NULL || input->base_tag == NULL || input->base_tag->name == NULL)
        return;
    pdc_kvtag_t *tag = input->base_tag;
    int is_string = tag->type == PDC_STRING;
    if (strlen(tag->name) < 3) {
        char *name = tripled(tag->name);
        if (name == NULL)
            return;
        tag->name = name;
        input->affix_len = 1;
    }
    if (is_string && tag->value != NULL && strlen((const char *)tag->value) < 3) {
        char *text = tripled((const char *)tag->value);
        if (text == NULL)
            return;
        tag->value = text;
        input->affix_len = 1;
    }
    /* PDC takes the int as a size_t: a negative length keeps the whole text. */
    size_t affix = (size_t)input->affix_len;

    char *key = affix_query(tag->name, input->key_query_type, affix);
    char *val = NULL;
    if (key == NULL || key[0] == '\0')
        goto fail;
    if (is_string) {
        if (tag->value == NULL)
            goto fail;
        val = affix_query((const char *)tag->value, input->value_query_type, affix);
        if (val == NULL || val[0] == '\0')
            goto fail;
    } else if (tag->type == PDC_INT && tag->value != NULL && input->value_query_type == 4) {
        val = client_str_printf("%d", *(const int *)tag->value);
    } else if (tag->type == PDC_INT && input->value_query_type == 5) {
        val = client_str_printf("%d~%d", input->range_lo, input->range_hi);
    }
    if (val == NULL)
        goto fail;
    output->key_query = key;
    output->key_query_len = strlen(key);
    output->value_query = val;
    output->value_query_len = strlen(val);
    return;
fail:
    free(key);
    free(val);
}

char *gen_query_str(query_gen_output_t *query_gen_output)
{
    if (query_gen_output == NULL)
        return NULL;
    const char *key = query_gen_output->key_query, *val = query_gen_output->value_query;
    return client_str_printf("%s=%s", key ? key : "", val ? val : "");
}

void free_query_output(query_gen_output_t *output)
{
    if (output == NULL)
        return;
    free(output->key_query);
    free(output->value_query);
    output->key_query = NULL;
    output->value_query = NULL;
}
