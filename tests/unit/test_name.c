/*
 * test_name.c - the name rule and the escaping of untrusted text (common/pdcbb_name.c):
 * every way a name can break the rule with the byte offset reported, valid names in several
 * scripts, the messages, UTF-8 validation of arbitrary bytes and escaping. Table-driven.
 */
#include <string.h>

#include "pdcbb_name.h"
#include "unit_check.h"

int main(void)
{
    static const struct {
        const char *name;
        pdcbb_name_fault_t fault;
        size_t offset;
        uint32_t cp;
    } rule[] = {
        /* valid: ASCII, Latin, CJK, emoji, the ends of each sequence length */
        {"plain", PDCBB_NAME_FAULT_NONE, 0, 0},
        {"caf\xc3\xa9", PDCBB_NAME_FAULT_NONE, 0, 0},             /* café */
        {"\xe6\x95\xb0\xe6\x8d\xae", PDCBB_NAME_FAULT_NONE, 0, 0}, /* 数据 */
        {"run-\xf0\x9f\x9a\x80", PDCBB_NAME_FAULT_NONE, 0, 0},     /* emoji U+1F680 */
        {"\xc2\xa0nbsp", PDCBB_NAME_FAULT_NONE, 0, 0},             /* U+00A0: first after C1 */
        {"\xed\x9f\xbf", PDCBB_NAME_FAULT_NONE, 0, 0},             /* U+D7FF */
        {"\xee\x80\x80", PDCBB_NAME_FAULT_NONE, 0, 0},             /* U+E000 */
        {"\xf4\x8f\xbf\xbf", PDCBB_NAME_FAULT_NONE, 0, 0},         /* U+10FFFF */
        {"a b*c/d\\e~", PDCBB_NAME_FAULT_NONE, 0, 0},
        /* empty */
        {NULL, PDCBB_NAME_FAULT_EMPTY, 0, 0},
        {"", PDCBB_NAME_FAULT_EMPTY, 0, 0},
        /* invalid UTF-8 */
        {"c\xff\xfe", PDCBB_NAME_FAULT_UTF8, 1, 0},
        {"o\xc3", PDCBB_NAME_FAULT_UTF8, 1, 0},               /* truncated */
        {"o\xc0\x80x", PDCBB_NAME_FAULT_UTF8, 1, 0},          /* overlong NUL */
        {"o\xe0\x80\xaf", PDCBB_NAME_FAULT_UTF8, 1, 0},       /* overlong '/' */
        {"o\xf0\x82\x82\xac", PDCBB_NAME_FAULT_UTF8, 1, 0},   /* overlong euro sign */
        {"o\xed\xa0\x80", PDCBB_NAME_FAULT_UTF8, 1, 0},       /* surrogate U+D800 */
        {"o\xed\xbf\xbf", PDCBB_NAME_FAULT_UTF8, 1, 0},       /* surrogate U+DFFF */
        {"t\x80", PDCBB_NAME_FAULT_UTF8, 1, 0},               /* stray continuation byte */
        {"ab\xf4\x90\x80\x80", PDCBB_NAME_FAULT_UTF8, 2, 0},  /* U+110000 */
        {"ab\xf5\x80\x80\x80", PDCBB_NAME_FAULT_UTF8, 2, 0},  /* lead byte 0xF5 */
        {"\xe6\x95\xb0\xe6\x8d", PDCBB_NAME_FAULT_UTF8, 3, 0}, /* 数 then a cut 据 */
        {"x\xe6\x95y", PDCBB_NAME_FAULT_UTF8, 1, 0},          /* cut by an ASCII byte */
        /* control characters */
        {"ab\x1b[31m", PDCBB_NAME_FAULT_CONTROL, 2, 0x1b},
        {"bell\x07", PDCBB_NAME_FAULT_CONTROL, 4, 0x07},
        {"cr\rx", PDCBB_NAME_FAULT_CONTROL, 2, 0x0d},
        {"\nx", PDCBB_NAME_FAULT_CONTROL, 0, 0x0a},
        {"tab\t", PDCBB_NAME_FAULT_CONTROL, 3, 0x09},
        {"del\x7f", PDCBB_NAME_FAULT_CONTROL, 3, 0x7f},
        {"c1\xc2\x80", PDCBB_NAME_FAULT_CONTROL, 2, 0x80},
        {"c1\xc2\x9b[", PDCBB_NAME_FAULT_CONTROL, 2, 0x9b},   /* CSI */
        {"caf\xc3\xa9\x1b", PDCBB_NAME_FAULT_CONTROL, 5, 0x1b},
    };
    for (size_t i = 0; i < sizeof(rule) / sizeof(rule[0]); i++) {
        pdcbb_name_bad_t b;
        pdcbb_name_fault_t f = pdcbb_name_check(rule[i].name, &b);
        if (f != rule[i].fault || b.fault != f ||
            (f >= PDCBB_NAME_FAULT_UTF8 && b.offset != rule[i].offset) ||
            (f == PDCBB_NAME_FAULT_CONTROL && b.cp != rule[i].cp)) {
            CHECK(!"name rule");
            fprintf(stderr, "  case %zu: fault %d offset %zu cp %#x, expected %d %zu %#x\n", i,
                    (int)f, b.offset, (unsigned)b.cp, (int)rule[i].fault, rule[i].offset,
                    (unsigned)rule[i].cp);
        } else {
            CHECK(1);
        }
    }

    /* Length: PDCBB_NAME_MAX bytes are fine (multi-byte too), one more is not. */
    static char longname[PDCBB_NAME_MAX + 2];
    memset(longname, 'a', PDCBB_NAME_MAX);
    CHECK(pdcbb_name_check(longname, NULL) == PDCBB_NAME_FAULT_NONE);
    longname[PDCBB_NAME_MAX] = 'a';
    pdcbb_name_bad_t b;
    CHECK(pdcbb_name_check(longname, &b) == PDCBB_NAME_FAULT_TOO_LONG &&
          b.len == PDCBB_NAME_MAX + 1);
    memset(longname, 0, sizeof(longname));
    for (size_t i = 0; i + 3 <= PDCBB_NAME_MAX; i += 3)
        memcpy(longname + i, "\xe6\x95\xb0", 3); /* 341 times 数: 1023 bytes */
    CHECK(strlen(longname) == PDCBB_NAME_MAX && pdcbb_name_check(longname, NULL) == 0);

    /* The messages name the kind, the rule and the offset; the codes are the documented ones. */
    static const struct {
        const char *kind, *name;
        pdcbb_err_t rc;
        const char *why;
    } msg[] = {
        {"object", "o\xc3", PDCBB_ERR_BAD_NAME, "object name is not valid UTF-8 at byte 1"},
        {"container", "abc\x1b[0m", PDCBB_ERR_BAD_NAME,
         "container name holds control character 0x1b at byte 3"},
        {"tag", "t\xc2\x85", PDCBB_ERR_BAD_NAME, "tag name holds control character 0x85 at byte 1"},
        {"KV object", "", PDCBB_ERR_INVAL, "the KV object name is NULL or empty"},
        {"object", longname, PDCBB_OK, "untouched"},
    };
    for (size_t i = 0; i < sizeof(msg) / sizeof(msg[0]); i++) {
        char why[200] = "untouched";
        CHECK_ERR(pdcbb_name_validate(msg[i].kind, msg[i].name, why, sizeof(why)), msg[i].rc);
        if (strcmp(why, msg[i].why) != 0) {
            CHECK(!"message");
            fprintf(stderr, "  case %zu: '%s', expected '%s'\n", i, why, msg[i].why);
        }
    }
    longname[0] = 'a', longname[PDCBB_NAME_MAX] = 'b';
    char why[200];
    CHECK_ERR(pdcbb_name_validate("object", longname, why, sizeof(why)), PDCBB_ERR_TOO_BIG);
    CHECK(strcmp(why, "object name of 1024 bytes is longer than 1023") == 0);
    CHECK(strcmp(pdcbb_errname(PDCBB_ERR_BAD_NAME), "PDCBB_ERR_BAD_NAME") == 0 &&
          PDCBB_ERR_BAD_NAME == 30);

    /* UTF-8 validation of bytes (KV keys and values: NUL and controls allowed). */
    size_t off = 99;
    CHECK(pdcbb_utf8_valid("a\0b\x1b", 4, &off) == 1 && off == 99);
    CHECK(pdcbb_utf8_valid("ab\xc3", 3, &off) == 0 && off == 2);
    CHECK(pdcbb_utf8_valid("", 0, &off) == 1);

    /* Escaping: controls, backslash, invalid bytes, C1, bidi escaped; other UTF-8 kept. */
    static const struct {
        const char *in;
        size_t n;
        const char *out;
    } esc[] = {
        {"plain", 5, "plain"},
        {"caf\xc3\xa9 \xe6\x95\xb0", 9, "caf\xc3\xa9 \xe6\x95\xb0"},
        {"\x1b[31mred", 8, "\\x1b[31mred"},
        {"a\rb\nc\td", 7, "a\\rb\\nc\\td"},
        {"bell\x07", 5, "bell\\x07"},
        {"c\xff\xfe", 3, "c\\xff\\xfe"},
        {"o\xc0\x80x", 4, "o\\xc0\\x80x"},
        {"o\xed\xa0\x80", 4, "o\\xed\\xa0\\x80"},
        {"c1\xc2\x9b", 4, "c1\\xc2\\x9b"},
        {"back\\slash", 10, "back\\\\slash"},
        {"say \"hi\"", 8, "say \\\"hi\\\""},
        {"nul\0x", 5, "nul\\x00x"},
        {"del\x7f", 4, "del\\x7f"},
        {"\xf0\x9f\x9a\x80", 4, "\xf0\x9f\x9a\x80"},
        /* bidirectional overrides and isolates (a "Trojan Source" name) */
        {"a\xe2\x80\xae" "b", 5, "a\\u202eb"},
        {"\xe2\x81\xa6" "x\xe2\x81\xa9", 7, "\\u2066x\\u2069"},
        {"\xe2\x80\x8f", 3, "\\u200f"},
        {"\xd8\x9c", 2, "\\u061c"},
        {"\xe2\x80\x94", 3, "\xe2\x80\x94"}, /* an em dash stays */
    };
    for (size_t i = 0; i < sizeof(esc) / sizeof(esc[0]); i++) {
        char out[64];
        pdcbb_escape(out, sizeof(out), esc[i].in, esc[i].n);
        if (strcmp(out, esc[i].out) != 0) {
            CHECK(!"escape");
            fprintf(stderr, "  case %zu: '%s', expected '%s'\n", i, out, esc[i].out);
        } else {
            CHECK(1);
        }
    }
    /* Cut at a character boundary with "...", never past dstlen; NULL prints "(null)". */
    char small[10];
    CHECK(strcmp(pdcbb_escape(small, sizeof(small), "\x1b\x1b\x1b", 3), "\\x1b...") == 0);
    CHECK(strcmp(pdcbb_escape(small, sizeof(small), "abcdefghi", 9), "abcdefghi") == 0);
    CHECK(strcmp(pdcbb_escape(small, sizeof(small), "abcdefghij", 10), "abcdef...") == 0);
    CHECK(strcmp(pdcbb_escape(small, 2, "\x1b", 1), "") == 0);
    CHECK(strcmp(pdcbb_escape(small, sizeof(small), NULL, 3), "(null)") == 0);
    /* The worst case fits PDCBB_ESC_LEN. */
    static char worst[PDCBB_ESC_LEN(PDCBB_NAME_MAX)];
    memset(longname, 0xff, PDCBB_NAME_MAX);
    longname[PDCBB_NAME_MAX] = 0;
    pdcbb_escape(worst, sizeof(worst), longname, PDCBB_NAME_MAX);
    CHECK(strlen(worst) == 4 * PDCBB_NAME_MAX && strstr(worst, "...") == NULL);
    /* pdcbb_esc: several in one statement stay distinct. */
    const char *e1 = pdcbb_esc("a\x07"), *e2 = pdcbb_esc("b\r"), *e3 = pdcbb_esc(NULL);
    CHECK(strcmp(e1, "a\\x07") == 0 && strcmp(e2, "b\\r") == 0 && strcmp(e3, "(null)") == 0);
    /* Free text kept with an object (app_name, data_loc, tags): UTF-8, control characters
     * allowed (the drain's YAML escapes them). */
    char twhy[128] = "";
    CHECK(pdcbb_text_validate("app_name", "sim\tv2 \x1b", twhy, sizeof(twhy)) == PDCBB_OK);
    CHECK(pdcbb_text_validate("app_name", NULL, twhy, sizeof(twhy)) == PDCBB_OK);
    CHECK(pdcbb_text_validate("data_loc", "/d/caf\xc3\xa9", twhy, sizeof(twhy)) == PDCBB_OK);
    CHECK(pdcbb_text_validate("app_name", "abc\xff", twhy, sizeof(twhy)) == PDCBB_ERR_BAD_NAME);
    CHECK(strcmp(twhy, "app_name is not valid UTF-8 at byte 3") == 0);
    CHECK(pdcbb_text_validate("tags", "t=\xed\xa0\x80", NULL, 0) == PDCBB_ERR_BAD_NAME);
    UNIT_DONE("name");
}
