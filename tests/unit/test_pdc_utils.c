/*
 * test_pdc_utils.c - PDC's helpers that libpdc exports for PDC programs (string_utils.h,
 * query_utils.h, timer_utils.h, PDC_get_elapsed_time_double): their declarations are PDC's,
 * and their results on edge cases are what PDC's code gives (or NULL/0/-1 where PDC's crashes).
 *
 * The helpers have generic names, so this program also defines some of them itself, as an
 * application may: equals, contains, substring, simple_matches, gen_tags, timer_us_timestamp.
 * Built with exported symbols, its definitions take over every call made through the dynamic
 * linker, so the library's own helpers must give right answers without ever calling them
 * (checked by counting). The library's versions of those six are reached with dlsym on
 * libpdc's handle. The headers are included as PDC programs include them: query_utils.h and
 * string_utils.h through pdc_client_connect.h.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pdc.h"
#include "pdc_client_connect.h"
#include "pdc_client_server_common.h"
#include "timer_utils.h"
#include "unit_check.h"

/* ---- The declarations are PDC's ---- */

#define SAME_TYPE(a, b)     __builtin_types_compatible_p(a, b)
#define CHECK_FN(fn, ftype) _Static_assert(SAME_TYPE(__typeof__(&fn), ftype), "signature of " #fn)

CHECK_FN(substr, char *(*)(const char *, int));
CHECK_FN(subrstr, char *(*)(const char *, int));
CHECK_FN(substring, char *(*)(const char *, int, int));
CHECK_FN(determine_pattern_type, pattern_type_t (*)(const char *));
CHECK_FN(indexOfStr, int (*)(const char *, char *));
CHECK_FN(indexOf, int (*)(const char *, char));
CHECK_FN(startsWith, int (*)(const char *, const char *));
CHECK_FN(endsWith, int (*)(const char *, const char *));
CHECK_FN(contains, int (*)(const char *, const char *));
CHECK_FN(equals, int (*)(const char *, const char *));
CHECK_FN(dsprintf, char *(*)(const char *, ...));
CHECK_FN(println, void (*)(const char *, ...));
CHECK_FN(stderr_println, void (*)(const char *, ...));
CHECK_FN(simple_matches, int (*)(const char *, const char *));
CHECK_FN(reverse_str, char *(*)(char *));
CHECK_FN(split_string, int (*)(const char *, const char *, char ***, int *));
CHECK_FN(gen_random_strings, char **(*)(int, int, int, int));
CHECK_FN(gen_query_key_value, void (*)(query_gen_input_t *, query_gen_output_t *));
CHECK_FN(gen_query_str, char *(*)(query_gen_output_t *));
CHECK_FN(free_query_output, void (*)(query_gen_output_t *));
CHECK_FN(gen_tags, char *(*)(int));
CHECK_FN(get_key, char *(*)(const char *, char));
CHECK_FN(get_value, char *(*)(const char *, char));
CHECK_FN(k_v_matches_p, char *(*)(const char *, const char *, const char *));
CHECK_FN(has_tag, int (*)(const char *, const char *));
CHECK_FN(has_tag_p, int (*)(const char *, const char *));
CHECK_FN(is_value_match, int (*)(const char *, const char *, const char *));
CHECK_FN(is_value_match_p, int (*)(const char *, const char *, const char *));
CHECK_FN(is_value_in_range, int (*)(const char *, const char *, int, int));
CHECK_FN(timer_us_timestamp, int64_t (*)(void));
CHECK_FN(timer_ms_timestamp, int64_t (*)(void));
CHECK_FN(timer_s_timestamp, int64_t (*)(void));
CHECK_FN(timer_start, void (*)(stopwatch_t *));
CHECK_FN(timer_pause, void (*)(stopwatch_t *));
CHECK_FN(timer_unpause, void (*)(stopwatch_t *));
CHECK_FN(timer_delta_us, double (*)(stopwatch_t *));
CHECK_FN(timer_delta_ms, double (*)(stopwatch_t *));
CHECK_FN(timer_delta_s, double (*)(stopwatch_t *));
CHECK_FN(timer_delta_m, double (*)(stopwatch_t *));
CHECK_FN(timer_delta_h, double (*)(stopwatch_t *));
CHECK_FN(PDC_get_elapsed_time_double, double (*)(struct timeval *, struct timeval *));
_Static_assert(PATTERN_EXACT == 2 && PATTERN_PREFIX == 3 && PATTERN_SUFFIX == 4 &&
                   PATTERN_MIDDLE == 5,
               "pattern_type_t values");
_Static_assert(SAME_TYPE(__typeof__(((query_gen_input_t *)0)->base_tag), pdc_kvtag_t *),
               "query_gen_input_t.base_tag");
_Static_assert(SAME_TYPE(__typeof__(((query_gen_output_t *)0)->value_query_len), size_t),
               "query_gen_output_t.value_query_len");
_Static_assert(SAME_TYPE(__typeof__(((stopwatch_t *)0)->start_mark), int64_t),
               "stopwatch_t.start_mark");

/* ---- An application's own definitions of six of the names ---- */

static int app_calls;

int equals(const char *str, const char *tok)
{
    app_calls++;
    return 0;
}

int contains(const char *str, const char *tok)
{
    app_calls++;
    return 0;
}

char *substring(const char *str, int start, int end)
{
    app_calls++;
    return NULL;
}

int simple_matches(const char *str, const char *pattern)
{
    app_calls++;
    return 0;
}

char *gen_tags(int obj_id)
{
    app_calls++;
    return NULL;
}

int64_t timer_us_timestamp(void)
{
    app_calls++;
    return 0;
}

/* libpdc's versions of the six. */
static int (*lib_equals)(const char *, const char *);
static int (*lib_contains)(const char *, const char *);
static char *(*lib_substring)(const char *, int, int);
static int (*lib_simple_matches)(const char *, const char *);
static char *(*lib_gen_tags)(int);
static int64_t (*lib_timer_us_timestamp)(void);

static int find_library_versions(void)
{
    void *lib = dlopen("libpdc.so.0", RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL) {
        fprintf(stderr, "libpdc.so.0 is not loaded: %s\n", dlerror());
        return -1;
    }
    *(void **)&lib_equals = dlsym(lib, "equals");
    *(void **)&lib_contains = dlsym(lib, "contains");
    *(void **)&lib_substring = dlsym(lib, "substring");
    *(void **)&lib_simple_matches = dlsym(lib, "simple_matches");
    *(void **)&lib_gen_tags = dlsym(lib, "gen_tags");
    *(void **)&lib_timer_us_timestamp = dlsym(lib, "timer_us_timestamp");
    if (!lib_equals || !lib_contains || !lib_substring || !lib_simple_matches || !lib_gen_tags ||
        !lib_timer_us_timestamp || (void *)lib_equals == (void *)equals) {
        fprintf(stderr, "libpdc's own helpers not found\n");
        return -1;
    }
    return 0;
}

/* got equals want (both NULL counts); frees got. */
static int str_is(char *got, const char *want)
{
    int ok = got == NULL ? want == NULL : want != NULL && strcmp(got, want) == 0;
    if (!ok)
        fprintf(stderr, "  got %s%s%s, expected %s%s%s\n", got ? "'" : "", got ? got : "NULL",
                got ? "'" : "", want ? "'" : "", want ? want : "NULL", want ? "'" : "");
    free(got);
    return ok;
}

/* Run fn(arg) with stdout going to a file; the output, malloc'ed. */
static char *capture_stdout(void (*fn)(void *), void *arg)
{
    FILE *tmp = tmpfile();
    if (tmp == NULL)
        return NULL;
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    dup2(fileno(tmp), STDOUT_FILENO);
    fn(arg);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    /* the writes went through the descriptor: tmp's stream has not seen them */
    fseek(tmp, 0, SEEK_END);
    long n = ftell(tmp);
    n = n < 0 ? 0 : n;
    char *text = calloc((size_t)n + 1, 1);
    rewind(tmp);
    if (text != NULL && fread(text, 1, (size_t)n, tmp) != (size_t)n)
        text[0] = '\0';
    fclose(tmp);
    return text;
}

/* ---- string_utils.h ---- */

static void test_substrings(void)
{
    static const struct {
        const char *str;
        int start, end;
        const char *want;
    } cases[] = {
        {"hello", 1, 3, "el"},     {"hello", 0, 0, ""},    {"hello", 0, 5, "hello"},
        {"hello", 0, 99, "hello"}, {"hello", 5, 5, ""},    {"hello", 5, 9, ""},
        {"hello", 4, 9, "o"},      {"hello", 6, 9, NULL},  {"hello", 3, 2, NULL},
        {"hello", -1, 2, NULL},    {"hello", 0, -1, NULL}, {"", 0, 0, ""},
        {NULL, 0, 1, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (!str_is(lib_substring(cases[i].str, cases[i].start, cases[i].end), cases[i].want)) {
            CHECK(!"substring");
            fprintf(stderr, "  substring(%s, %d, %d)\n", cases[i].str ? cases[i].str : "NULL",
                    cases[i].start, cases[i].end);
        }
    CHECK(str_is(substr("hello", 2), "llo"));
    CHECK(str_is(substr("hello", 0), "hello"));
    CHECK(str_is(substr("hello", 5), ""));
    CHECK(str_is(substr("hello", 6), NULL));
    CHECK(str_is(substr("hello", -1), NULL));
    CHECK(str_is(substr(NULL, 0), NULL));
    CHECK(str_is(subrstr("hello", 2), "he"));
    CHECK(str_is(subrstr("hello", 0), ""));
    CHECK(str_is(subrstr("hello", 10), "hello"));
    CHECK(str_is(subrstr("hello", -1), NULL));
}

static void test_patterns(void)
{
    CHECK(determine_pattern_type("ab") == PATTERN_EXACT);
    CHECK(determine_pattern_type("ab*") == PATTERN_PREFIX);
    CHECK(determine_pattern_type("*ab") == PATTERN_SUFFIX);
    CHECK(determine_pattern_type("*ab*") == PATTERN_MIDDLE);
    CHECK(determine_pattern_type("*") == PATTERN_MIDDLE);
    CHECK(determine_pattern_type("a*b") == PATTERN_EXACT);
    CHECK(determine_pattern_type("") == PATTERN_EXACT);
    CHECK(determine_pattern_type(NULL) == PATTERN_EXACT);

    static const struct {
        const char *str, *pattern;
        int want;
    } m[] = {
        {"ab", "ab", 1},   {"abc", "ab", 0},    {"a", "ab", 0},     {"abx", "ab*", 1},
        {"ab", "ab*", 1},  {"xab", "ab*", 0},   {"a", "ab*", 0},    {"xab", "*ab", 1},
        {"ab", "*ab", 1},  {"abx", "*ab", 0},   {"b", "*ab", 0},    {"xaby", "*ab*", 1},
        {"ab", "*ab*", 1}, {"ba", "*ab*", 0},   {"a", "*ab*", 0},   {"x", "*", 0},
        {"", "*", 0},      {"x", "**", 1},      {"", "**", 1},      {"", "", 1},
        {"a", "", 0},      {"a*b", "a*b", 1},   {"axb", "a*b", 0},  {"x*b", "**b", 1},
        {"xb", "**b", 0},  {"ab*x", "ab**", 1}, {"abx", "ab**", 0}, {"", "a*", 0},
        {NULL, "ab", 0},   {"ab", NULL, 0},
    };
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
        if (lib_simple_matches(m[i].str, m[i].pattern) != m[i].want) {
            CHECK(!"simple_matches");
            fprintf(stderr, "  simple_matches(%s, %s) expected %d\n", m[i].str ? m[i].str : "NULL",
                    m[i].pattern ? m[i].pattern : "NULL", m[i].want);
        }
}

static void test_searches(void)
{
    CHECK(indexOf("hello", 'l') == 2);
    CHECK(indexOf("hello", 'z') == -1);
    CHECK(indexOf("hello", '\0') == 5);
    CHECK(indexOf(NULL, 'a') == -1);
    CHECK(indexOfStr("hello", "llo") == 2);
    CHECK(indexOfStr("hello", "") == 0);
    CHECK(indexOfStr("hello", "xyz") == -1);
    CHECK(indexOfStr(NULL, "a") == -1 && indexOfStr("a", NULL) == -1);

    CHECK(startsWith("hello", "he") == 1 && startsWith("hello", "") == 1);
    CHECK(startsWith("he", "hello") == 0 && startsWith("hello", "el") == 0);
    CHECK(startsWith(NULL, "a") == 0 && startsWith("a", NULL) == 0);
    CHECK(endsWith("hello", "llo") == 1 && endsWith("hello", "") == 1);
    CHECK(endsWith("lo", "hello") == 0 && endsWith("hello", "ll") == 0);
    CHECK(endsWith(NULL, "a") == 0 && endsWith("a", NULL) == 0);
    CHECK(lib_contains("hello", "ell") == 1 && lib_contains("hello", "") == 1);
    CHECK(lib_contains("hello", "elo") == 0 && lib_contains("", "a") == 0);
    CHECK(lib_contains(NULL, "a") == 0 && lib_contains("a", NULL) == 0);
    CHECK(lib_equals("abc", "abc") == 1 && lib_equals("", "") == 1);
    CHECK(lib_equals("abc", "abcd") == 0 && lib_equals("abc", "ab") == 0);
    CHECK(lib_equals(NULL, "a") == 0 && lib_equals("a", NULL) == 0);

    CHECK(str_is(reverse_str("abc"), "cba"));
    CHECK(str_is(reverse_str("ab"), "ba"));
    CHECK(str_is(reverse_str(""), ""));
    CHECK(str_is(reverse_str(NULL), NULL));
}

static void print_lines(void *arg)
{
    println("x=%d %s", 5, (const char *)arg);
    println("%s", "");
}

static void test_printing(void)
{
    CHECK(str_is(dsprintf("%d-%s-%.2f", 42, "x", 1.5), "42-x-1.50"));
    CHECK(str_is(dsprintf("%s", ""), ""));
    char big[5000];
    memset(big, 'q', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    char *s = dsprintf("<%s>", big);
    CHECK(s != NULL && strlen(s) == sizeof(big) + 1 && s[0] == '<' && s[sizeof(big)] == '>');
    free(s);
    CHECK(str_is(capture_stdout(print_lines, "y"), "x=5 y\n\n"));
}

/* parts equals the n strings of want; frees parts. */
static int parts_are(char **parts, int n, const char *const *want, int nwant)
{
    int ok = n == nwant;
    for (int i = 0; i < n; i++) {
        ok = ok && i < nwant && strcmp(parts[i], want[i]) == 0;
        free(parts[i]);
    }
    free(parts);
    return ok;
}

static void test_split(void)
{
    static const struct {
        const char *str, *delim;
        int n;
        const char *parts[5];
    } cases[] = {
        {"a,b,c", ",", 3, {"a", "b", "c"}},
        {"a,,b,", ",", 4, {"a", "", "b", ""}},
        {",a", ",", 2, {"", "a"}},
        {"", ",", 1, {""}},
        {"abc", ",", 1, {"abc"}},
        {"a1b22c", "[0-9][0-9]*", 3, {"a", "b", "c"}},
        {"k=v; k2=v2", "; *", 2, {"k=v", "k2=v2"}},
        /* a basic regular expression: '+' is an ordinary character */
        {"a+b", "+", 2, {"a", "b"}},
        /* each search starts afresh after the last match, so '^' matches there again */
        {"aab", "^a", 3, {"", "", "b"}},
        {"XaXb", "^a", 1, {"XaXb"}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char **parts = NULL;
        int n = -2;
        int ret = split_string(cases[i].str, cases[i].delim, &parts, &n);
        if (ret != cases[i].n || !parts_are(parts, n, cases[i].parts, cases[i].n)) {
            CHECK(!"split_string");
            fprintf(stderr, "  split_string('%s', '%s') gave %d\n", cases[i].str, cases[i].delim,
                    ret);
        }
    }
    /* Refused, out-parameters unchanged: a delimiter matching "", a bad regular expression,
     * NULL arguments. */
    char *marker[1];
    char **parts = marker;
    int n = 77;
    CHECK(split_string("abc", "x*", &parts, &n) == -1);
    CHECK(split_string("abc", "$", &parts, &n) == -1);
    CHECK(split_string("abc", "[", &parts, &n) == -1);
    CHECK(split_string(NULL, ",", &parts, &n) == -1);
    CHECK(split_string("a", NULL, &parts, &n) == -1);
    CHECK(split_string("a", ",", NULL, &n) == -1);
    CHECK(split_string("a", ",", &parts, NULL) == -1);
    CHECK(parts == marker && n == 77);
}

static const char pdc_alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789"
                                   "!@#$%^&*()-_=+[]{}|;:'\",.<>?/`~ABCDEFGHIJKLMNOPQRSTUVWXYZ";

static void free_strings(char **s, int n)
{
    for (int i = 0; s != NULL && i < n; i++)
        free(s[i]);
    free(s);
}

/* Every string of s has a length in [lo, hi] and only the first abc characters of PDC's
 * alphabet; *seen gets how many of the abc were used. */
static int strings_ok(char **s, int n, int lo, int hi, size_t abc, size_t *seen)
{
    char used[128] = {0};
    if (s == NULL)
        return 0;
    for (int i = 0; i < n; i++) {
        int len = s[i] ? (int)strlen(s[i]) : -1;
        if (len < lo || len > hi)
            return 0;
        for (int j = 0; j < len; j++) {
            const char *at = memchr(pdc_alphabet, s[i][j], abc);
            if (at == NULL)
                return 0;
            used[at - pdc_alphabet] = 1;
        }
    }
    *seen = 0;
    for (size_t k = 0; k < abc; k++)
        *seen += used[k];
    return 1;
}

static void test_random_strings(void)
{
    CHECK(strlen(pdc_alphabet) == 93);
    static const struct {
        int minlen, maxlen, alphabet_size, lo, hi;
        size_t abc;
    } cases[] = {
        {3, 10, 26, 3, 10, 26},  {1, 4, 36, 1, 4, 36},   {0, 5, 67, 1, 5, 67}, {2, 6, 93, 2, 6, 93},
        {2, 6, 0, 2, 6, 26},     {2, 6, 1000, 2, 6, 93}, {2, 6, -1, 2, 6, 93}, {1, 3, 5, 1, 3, 5},
        {12, 5, 26, 12, 12, 26}, {1, 1, 26, 1, 1, 26},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        srand(7 + (unsigned)i);
        size_t seen = 0;
        char **s =
            gen_random_strings(400, cases[i].minlen, cases[i].maxlen, cases[i].alphabet_size);
        /* 400 strings of at least one character: every character of a small alphabet shows */
        int ok = strings_ok(s, 400, cases[i].lo, cases[i].hi, cases[i].abc, &seen) &&
                 (cases[i].abc > 36 || seen == cases[i].abc);
        if (!ok) {
            CHECK(!"gen_random_strings");
            fprintf(stderr, "  gen_random_strings(400, %d, %d, %d)\n", cases[i].minlen,
                    cases[i].maxlen, cases[i].alphabet_size);
        }
        free_strings(s, 400);
    }
    /* PDC's draws: for each string rand() % maxlen + 1 (at least minlen), then one rand() per
     * character, taken modulo the alphabet size. */
    srand(11);
    char **s = gen_random_strings(20, 3, 8, 40);
    srand(11);
    int same = s != NULL;
    for (int i = 0; same && i < 20; i++) {
        int len = rand() % 8 + 1;
        len = len < 3 ? 3 : len;
        same = (int)strlen(s[i]) == len;
        for (int j = 0; same && j < len; j++)
            same = s[i][j] == pdc_alphabet[rand() % 40];
    }
    CHECK(same);
    free_strings(s, 20);
    s = gen_random_strings(0, 1, 5, 26);
    CHECK(s != NULL);
    free(s);
    CHECK(gen_random_strings(-1, 1, 5, 26) == NULL);
    CHECK(gen_random_strings(3, 1, 0, 26) == NULL);
}

/* ---- timer_utils.h and PDC_get_elapsed_time_double ---- */

static int64_t wall_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static void test_timers(void)
{
    int64_t us = lib_timer_us_timestamp(), ms = timer_ms_timestamp(), sec = timer_s_timestamp();
    time_t now = time(NULL);
    CHECK(ms - us / 1000 >= 0 && ms - us / 1000 < 1000);
    CHECK(sec - (int64_t)now >= -1 && sec - (int64_t)now <= 1);

    stopwatch_t t;
    memset(&t, 0, sizeof(t));
    CHECK(timer_delta_us(&t) == 0.0); /* never started */
    CHECK(timer_delta_us(NULL) == 0.0);
    timer_pause(&t); /* not running: nothing */
    CHECK(!t.paused && !t.running);

    int64_t w0 = wall_us();
    timer_start(&t);
    CHECK(t.running && !t.paused);
    usleep(20000);
    double run_ms = timer_delta_ms(&t);
    CHECK(run_ms >= 20.0);
    timer_pause(&t);
    double held_wall = (double)(wall_us() - w0);
    CHECK(t.paused && !t.running);
    double held = timer_delta_us(&t);
    CHECK(held >= 20000.0 && held <= held_wall);
    usleep(20000);
    timer_pause(&t); /* again: nothing */
    CHECK(timer_delta_us(&t) == held);
    /* the units of one held count */
    CHECK(timer_delta_ms(&t) == held / 1000.0);
    CHECK(timer_delta_s(&t) == held / 1000.0 / 1000.0);
    CHECK(timer_delta_m(&t) == timer_delta_s(&t) / 60.0);
    CHECK(timer_delta_h(&t) == timer_delta_m(&t) / 60.0);

    int64_t w1 = wall_us();
    timer_unpause(&t);
    CHECK(t.running && !t.paused);
    timer_unpause(&t); /* not paused: nothing */
    usleep(10000);
    double after = timer_delta_us(&t);
    double run_wall = (double)(wall_us() - w1);
    /* counts on from the held count: the 20 ms paused are not in it */
    CHECK(after - held >= 10000.0 && after - held <= run_wall);
    timer_start(&t); /* again: from 0 */
    CHECK(timer_delta_us(&t) < held);

    static const struct {
        struct timeval a, b;
        double want;
    } e[] = {
        {{1, 500000}, {3, 250000}, 1.75},       {{3, 250000}, {1, 500000}, -1.75},
        {{1, 900000}, {2, 100000}, 0.2},        {{5, 5}, {5, 5}, 0.0},
        {{0, 0}, {1000000, 1}, 1000000.000001},
    };
    for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
        struct timeval a = e[i].a, b = e[i].b;
        double got = PDC_get_elapsed_time_double(&a, &b);
        CHECK(got - e[i].want < 1e-9 && e[i].want - got < 1e-9);
    }
    struct timeval tv = {1, 0};
    CHECK(PDC_get_elapsed_time_double(NULL, &tv) == 0.0);
    CHECK(PDC_get_elapsed_time_double(&tv, NULL) == 0.0);
}

/* ---- query_utils.h ---- */

static void test_tag_lists(void)
{
    CHECK(str_is(get_key("a=b=c", '='), "a"));
    CHECK(str_is(get_value("a=b=c", '='), "b=c"));
    CHECK(str_is(get_key("=x", '='), ""));
    CHECK(str_is(get_value("=x", '='), "x"));
    CHECK(str_is(get_value("k=", '='), ""));
    CHECK(str_is(get_key("abc", '='), NULL));
    CHECK(str_is(get_value("abc", '='), NULL));
    CHECK(str_is(get_key(NULL, '='), NULL));
    CHECK(str_is(get_value(NULL, '='), NULL));
    CHECK(str_is(get_key("abc", '\0'), "abc"));
    CHECK(str_is(get_value("abc", '\0'), NULL));

    const char *list = "tag0=10,tag1=11,tag2=22";
    CHECK(str_is(k_v_matches_p(list, "tag1", NULL), "tag1=11"));
    CHECK(str_is(k_v_matches_p(list, "tag*", "2*"), "tag2=22"));
    CHECK(str_is(k_v_matches_p(list, "*1", "11"), "tag1=11"));
    CHECK(str_is(k_v_matches_p(list, "tag*", NULL), "tag0=10"));
    CHECK(str_is(k_v_matches_p(list, "tag1", "12"), NULL));
    CHECK(str_is(k_v_matches_p(list, "tag3", NULL), NULL));
    CHECK(str_is(k_v_matches_p("bad,k=v=w", "bad", NULL), NULL)); /* no '=': not a pair */
    CHECK(str_is(k_v_matches_p(",,k=v=w,,", "k", "v=w"), "k=v=w"));
    CHECK(str_is(k_v_matches_p(NULL, "k", NULL), NULL));
    CHECK(str_is(k_v_matches_p(list, NULL, NULL), NULL));

    CHECK(has_tag(list, "tag2") == 1 && has_tag(list, "tag3") == 0);
    CHECK(has_tag(list, "tag*") == 1 && has_tag(list, "*2") == 1);
    CHECK(has_tag(list, "*") == 0 && has_tag(list, "**") == 1); /* PDC's '*' quirk */
    CHECK(has_tag_p(list, "*ag*") == 1 && has_tag_p(list, "x*") == 0);
    CHECK(has_tag(NULL, "tag1") == 0 && has_tag(list, NULL) == 0);
    CHECK(is_value_match(list, "tag1", "11") == 1 && is_value_match(list, "tag1", "12") == 0);
    CHECK(is_value_match(list, "tag1", NULL) == 1); /* no value pattern: the key alone */
    CHECK(is_value_match_p(list, "tag*", "*2") == 1 && is_value_match_p(list, "tag0", "*2") == 0);
    CHECK(is_value_in_range(list, "tag1", 10, 11) == 1);
    CHECK(is_value_in_range(list, "tag1", 11, 11) == 1);
    CHECK(is_value_in_range(list, "tag1", 12, 20) == 0);
    CHECK(is_value_in_range(list, "tag*", 10, 10) == 1); /* the first tag that matches */
    CHECK(is_value_in_range(list, "tagX", 0, 100) == 0);
    CHECK(is_value_in_range("n=12ab", "n", 12, 12) == 1); /* atoi */
    CHECK(is_value_in_range(NULL, "n", 0, 0) == 0);
}

static void loop_tags(void *arg)
{
    gen_tags_in_loop();
}

static void test_gen_tags(void)
{
    CHECK(str_is(lib_gen_tags(0), "tag0=00"));
    CHECK(str_is(lib_gen_tags(2), "tag0=20,tag1=21,tag2=22"));
    CHECK(str_is(lib_gen_tags(21), "tag0=210,tag1=211"));
    CHECK(str_is(lib_gen_tags(-20), "tag0=-200"));
    CHECK(str_is(lib_gen_tags(-3), ""));
    char *all = lib_gen_tags(19);
    int pairs = 0;
    for (char *p = all; p && *p; p++)
        pairs += *p == '=';
    CHECK(pairs == 20 && has_tag(all, "tag19") && is_value_match(all, "tag7", "197"));
    free(all);

    char *out = capture_stdout(loop_tags, NULL);
    int lines = 0;
    for (char *p = out; p && *p; p++)
        lines += *p == '\n';
    CHECK(lines == 1000);
    CHECK(out && strncmp(out, "helloworld, tag0=00\nhelloworld, tag0=10,tag1=11\n", 48) == 0);
    CHECK(out && strstr(out, "\nhelloworld, tag0=20,tag1=21,tag2=22\n") != NULL);
    free(out);
}

/* gen_query_key_value on a fresh tag name/value; checks the two queries and the joined one. */
static int query_is(const char *name, int type, void *value, int kt, int vt, int affix,
                    const char *want_key, const char *want_value)
{
    pdc_kvtag_t tag = {.name = (char *)name, .type = (int8_t)type, .value = value};
    query_gen_input_t in = {.base_tag = &tag,
                            .key_query_type = kt,
                            .value_query_type = vt,
                            .affix_len = affix,
                            .range_lo = 224,
                            .range_hi = 244};
    char sentinel[] = "untouched";
    query_gen_output_t out = {sentinel, 1, sentinel, 2};
    gen_query_key_value(&in, &out);
    int ok;
    if (want_key == NULL) {
        ok = out.key_query == sentinel && out.value_query == sentinel;
    } else {
        ok = out.key_query != sentinel && out.value_query != sentinel &&
             strcmp(out.key_query, want_key) == 0 && strcmp(out.value_query, want_value) == 0 &&
             out.key_query_len == strlen(want_key) && out.value_query_len == strlen(want_value);
        char *joined = ok ? dsprintf("%s=%s", want_key, want_value) : NULL;
        ok = ok && str_is(gen_query_str(&out), joined);
        free(joined);
        free_query_output(&out);
        ok = ok && out.key_query == NULL && out.value_query == NULL;
    }
    if (tag.name != name)
        free(tag.name);
    if (tag.value != value)
        free(tag.value);
    if (!ok)
        fprintf(stderr, "  gen_query_key_value(%s, key type %d, value type %d, affix %d)\n", name,
                kt, vt, affix);
    return ok;
}

static void test_gen_queries(void)
{
    char *v = "testvalue";
    CHECK(query_is("testname", PDC_STRING, v, 0, 0, 3, "testname", "testvalue"));
    CHECK(query_is("testname", PDC_STRING, v, 1, 1, 3, "tes*", "tes*"));
    CHECK(query_is("testname", PDC_STRING, v, 2, 2, 3, "*ame", "*lue"));
    CHECK(query_is("testname", PDC_STRING, v, 3, 3, 3, "*ame*", "*lue*"));
    CHECK(query_is("testname", PDC_STRING, v, 1, 2, 0, "*", "*"));
    CHECK(query_is("testname", PDC_STRING, v, 3, 1, 99, "*testname*", "testvalue*"));
    CHECK(query_is("testname", PDC_STRING, v, 2, 0, -1, "*testname", "testvalue"));
    /* a name or a value under 3 bytes becomes its first byte three times, affix 1 */
    CHECK(query_is("ab", PDC_STRING, v, 0, 1, 5, "aaa", "t*"));
    CHECK(query_is("name", PDC_STRING, "xy", 0, 3, 5, "name", "*x*"));
    int n = 234;
    CHECK(query_is("testname", PDC_INT, &n, 0, 4, 3, "testname", "234"));
    CHECK(query_is("testname", PDC_INT, &n, 1, 5, 2, "te*", "224~244"));
    n = -7;
    CHECK(query_is("testname", PDC_INT, &n, 0, 4, 3, "testname", "-7"));
    /* nothing made */
    CHECK(query_is("testname", PDC_STRING, v, 4, 0, 3, NULL, NULL));
    CHECK(query_is("testname", PDC_STRING, v, -1, 0, 3, NULL, NULL));
    CHECK(query_is("testname", PDC_STRING, v, 0, 4, 3, NULL, NULL));
    CHECK(query_is("testname", PDC_INT, &n, 0, 3, 3, NULL, NULL));
    CHECK(query_is("testname", PDC_DOUBLE, &n, 0, 4, 3, NULL, NULL));
    CHECK(query_is("", PDC_STRING, v, 0, 0, 3, NULL, NULL));
    CHECK(query_is("name", PDC_STRING, "", 0, 0, 3, NULL, NULL));
    CHECK(query_is("name", PDC_STRING, NULL, 0, 0, 3, NULL, NULL));
    gen_query_key_value(NULL, NULL); /* no crash */
    free_query_output(NULL);
    query_gen_output_t half = {NULL, 0, NULL, 0};
    CHECK(str_is(gen_query_str(&half), "="));
    CHECK(gen_query_str(NULL) == NULL);
}

int main(void)
{
    if (find_library_versions() != 0)
        return 1;
    test_substrings();
    test_patterns();
    test_searches();
    test_printing();
    test_split();
    test_random_strings();
    test_timers();
    test_tag_lists();
    test_gen_tags();
    test_gen_queries();
    /* Every answer above came from libpdc without calling this program's definitions. */
    CHECK(app_calls == 0);
    UNIT_DONE("pdc_utils");
}
