/*
 * pdcbb_pattern.c - parsing and matching of tag search patterns (see pdcbb_pattern.h).
 */
#include <string.h>

#include "pdcbb_pattern.h"

pdcbb_err_t pdcbb_pat_parse(const char *s, size_t len, pdcbb_pat_t *p)
{
    if (s == NULL || len == 0)
        return PDCBB_ERR_INVAL;
    size_t stars = 0;
    while (stars < len && s[stars] == '*')
        stars++;
    if (stars == len)
        return PDCBB_ERR_INVAL; /* "*", "**": would match everything */
    int lead = s[0] == '*', trail = s[len - 1] == '*';
    p->kind = lead && trail ? PDCBB_PAT_INFIX
              : lead        ? PDCBB_PAT_SUFFIX
              : trail       ? PDCBB_PAT_PREFIX
                            : PDCBB_PAT_EXACT;
    p->lit = s + lead;
    p->len = len - (size_t)lead - (size_t)trail;
    return PDCBB_OK;
}

static int contains(const char *t, size_t tl, const char *lit, size_t ll)
{
    if (ll > tl)
        return 0;
    for (size_t i = 0; i + ll <= tl; i++) {
        const char *c = memchr(t + i, lit[0], tl - ll - i + 1);
        if (c == NULL)
            return 0;
        i = (size_t)(c - t);
        if (memcmp(c, lit, ll) == 0)
            return 1;
    }
    return 0;
}

int pdcbb_pat_match(const pdcbb_pat_t *p, const void *text, size_t len)
{
    const char *t = text;
    switch (p->kind) {
    case PDCBB_PAT_EXACT: return len == p->len && memcmp(t, p->lit, len) == 0;
    case PDCBB_PAT_PREFIX: return len >= p->len && memcmp(t, p->lit, p->len) == 0;
    case PDCBB_PAT_SUFFIX: return len >= p->len && memcmp(t + len - p->len, p->lit, p->len) == 0;
    case PDCBB_PAT_INFIX: return contains(t, len, p->lit, p->len);
    }
    return 0;
}

const char *pdcbb_pat_kind_name(pdcbb_pat_kind_t k)
{
    static const char *const names[] = {"EXACT", "PREFIX", "SUFFIX", "INFIX"};
    return (unsigned)k < 4 ? names[k] : "UNKNOWN";
}

pdcbb_err_t pdcbb_pat_split_query(const char *q, const char **key, size_t *klen, const char **val,
                                  size_t *vlen)
{
    const char *eq = q ? strchr(q, '=') : NULL;
    if (eq == NULL)
        return PDCBB_ERR_INVAL;
    *key = q;
    *klen = (size_t)(eq - q);
    *val = eq + 1;
    *vlen = strlen(eq + 1);
    if (*vlen >= 2 && (*val)[0] == '"' && (*val)[*vlen - 1] == '"') {
        (*val)++;
        *vlen -= 2;
    }
    return PDCBB_OK;
}

int pdcbb_pat_text_of(const void *value, size_t size, size_t *len)
{
    const char *v = value;
    if (size > 0 && v[size - 1] == '\0')
        size--;
    if (size > 0 && memchr(v, '\0', size) != NULL)
        return 0;
    *len = size;
    return 1;
}
