/*
 * test_pattern.c - tag search patterns (common/pdcbb_pattern.c): parsing (PDC's rules: one '*'
 * at each end counts, others are ordinary), refusals, matching of every kind, DART query
 * splitting and the text form of tag values. Table-driven.
 */
#include <string.h>

#include "pdcbb_pattern.h"
#include "unit_check.h"

static int matches(const char *pat, const char *text)
{
    pdcbb_pat_t p;
    if (pdcbb_pat_parse(pat, strlen(pat), &p) != PDCBB_OK)
        return -1;
    return pdcbb_pat_match(&p, text, strlen(text));
}

int main(void)
{
    static const struct {
        const char *pat;
        pdcbb_pat_kind_t kind;
        const char *lit;
    } parse[] = {
        {"abc", PDCBB_PAT_EXACT, "abc"},  {"abc*", PDCBB_PAT_PREFIX, "abc"},
        {"*abc", PDCBB_PAT_SUFFIX, "abc"}, {"*abc*", PDCBB_PAT_INFIX, "abc"},
        {"a*c", PDCBB_PAT_EXACT, "a*c"},  {"**a", PDCBB_PAT_SUFFIX, "*a"},
        {"a**", PDCBB_PAT_PREFIX, "a*"},  {"*a", PDCBB_PAT_SUFFIX, "a"},
        {"x", PDCBB_PAT_EXACT, "x"},
    };
    for (size_t i = 0; i < sizeof(parse) / sizeof(parse[0]); i++) {
        pdcbb_pat_t p;
        CHECK_ERR(pdcbb_pat_parse(parse[i].pat, strlen(parse[i].pat), &p), PDCBB_OK);
        CHECK(p.kind == parse[i].kind);
        CHECK(p.len == strlen(parse[i].lit) && memcmp(p.lit, parse[i].lit, p.len) == 0);
    }
    pdcbb_pat_t p;
    CHECK_ERR(pdcbb_pat_parse(NULL, 0, &p), PDCBB_ERR_INVAL);
    CHECK_ERR(pdcbb_pat_parse("", 0, &p), PDCBB_ERR_INVAL);
    CHECK_ERR(pdcbb_pat_parse("*", 1, &p), PDCBB_ERR_INVAL);
    CHECK_ERR(pdcbb_pat_parse("***", 3, &p), PDCBB_ERR_INVAL);

    static const struct {
        const char *pat, *text;
        int want;
    } m[] = {
        {"abc", "abc", 1},     {"abc", "abcd", 0},   {"abc", "ab", 0},     {"ab*", "abc", 1},
        {"ab*", "ab", 1},      {"ab*", "a", 0},      {"ab*", "xab", 0},    {"*bc", "abc", 1},
        {"*bc", "bc", 1},      {"*bc", "bcd", 0},    {"*b*", "abc", 1},    {"*b*", "b", 1},
        {"*b*", "ac", 0},      {"*abab*", "aababab", 1}, {"*aab*", "abaab", 1},
        {"*aba*", "abba", 0},  {"a*c", "abc", 0},    {"a*c", "a*c", 1},    {"**c", "a*c", 1},
    };
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
        if (matches(m[i].pat, m[i].text) != m[i].want) {
            CHECK(!"match");
            fprintf(stderr, "  pattern '%s' text '%s' expected %d\n", m[i].pat, m[i].text,
                    m[i].want);
        }

    const char *k, *v;
    size_t kl, vl;
    CHECK_ERR(pdcbb_pat_split_query("ab*=12*", &k, &kl, &v, &vl), PDCBB_OK);
    CHECK(kl == 3 && memcmp(k, "ab*", 3) == 0 && vl == 3 && memcmp(v, "12*", 3) == 0);
    CHECK_ERR(pdcbb_pat_split_query("k=\"v*\"", &k, &kl, &v, &vl), PDCBB_OK);
    CHECK(kl == 1 && vl == 2 && memcmp(v, "v*", 2) == 0);
    CHECK_ERR(pdcbb_pat_split_query("k=a=b", &k, &kl, &v, &vl), PDCBB_OK);
    CHECK(kl == 1 && vl == 3 && memcmp(v, "a=b", 3) == 0);
    CHECK_ERR(pdcbb_pat_split_query("kv", &k, &kl, &v, &vl), PDCBB_ERR_INVAL);
    CHECK_ERR(pdcbb_pat_split_query(NULL, &k, &kl, &v, &vl), PDCBB_ERR_INVAL);

    size_t tl;
    CHECK(pdcbb_pat_text_of("abc", 4, &tl) == 1 && tl == 3);
    CHECK(pdcbb_pat_text_of("abc", 3, &tl) == 1 && tl == 3);
    CHECK(pdcbb_pat_text_of("a\0c", 3, &tl) == 0);
    CHECK(pdcbb_pat_text_of("\1\0\0\0", 4, &tl) == 0);
    UNIT_DONE("pattern");
}
