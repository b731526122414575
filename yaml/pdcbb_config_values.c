/*
 * pdcbb_config_values.c - the value parsers of the configuration that the rest of the project
 * shares (pdcbb_config.h): sizes ("16G", exact or refused), durations ("30", "1.5", "2m") and
 * placements ("obj_static", PDC's "PDC_OBJ_STATIC"), each with its formatter, so that a printed
 * config reads back to exactly the same values.
 */
#include "pdcbb_config_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const cfg_placement_names[] = {"obj_static", "region_static",
                                                  "region_dynamic", "region_local"};

/*
 * DIGITS [. DIGITS] [K|M|G|T|P] [B|iB], case-insensitive. A fraction must come out as whole
 * bytes: with 10^n = 2^n 5^n and a multiplier of 2^(10e), f/10^n * 2^(10e) is whole iff 5^n
 * divides f and what is left is divisible by 2^(n-10e), which needs no wider integers.
 */
cfg_size_status_t cfg_size_parse(const char *s, uint64_t *out)
{
    const char *p = s;
    uint64_t whole = 0, frac = 0, total;
    unsigned fdigits = 0, shift = 0;

    if (s == NULL || !cfg_isdigit(*p))
        return CFG_SIZE_SYNTAX;
    for (; cfg_isdigit(*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - d) / 10)
            return CFG_SIZE_OVERFLOW;
        whole = whole * 10 + d;
    }
    if (*p == '.') {
        const char *fstart = ++p, *fend;
        if (!cfg_isdigit(*p))
            return CFG_SIZE_SYNTAX;
        while (cfg_isdigit(*p))
            p++;
        fend = p;
        while (fend > fstart && fend[-1] == '0') /* 1.50G == 1.5G */
            fend--;
        if (fend - fstart > 15) /* more digits than any power of 1024 up to P can absorb */
            return CFG_SIZE_INEXACT;
        for (const char *q = fstart; q < fend; q++)
            frac = frac * 10 + (uint64_t)(*q - '0');
        fdigits = (unsigned)(fend - fstart);
    }
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    case 't': case 'T': shift = 40; p++; break;
    case 'p': case 'P': shift = 50; p++; break;
    default: break;
    }
    if (shift != 0 && (*p == 'i' || *p == 'I') && (p[1] == 'b' || p[1] == 'B'))
        p += 2;
    else if (*p == 'b' || *p == 'B')
        p++;
    if (*p != '\0')
        return CFG_SIZE_SYNTAX;

    if (fdigits > 0) {
        uint64_t pow5 = 1;
        for (unsigned i = 0; i < fdigits; i++)
            pow5 *= 5;
        if (frac % pow5 != 0)
            return CFG_SIZE_INEXACT;
        frac /= pow5;
        if (fdigits <= shift) {
            frac <<= shift - fdigits; /* < 2^shift: frac/10^n < 1 */
        } else {
            uint64_t mask = (1ull << (fdigits - shift)) - 1;
            if ((frac & mask) != 0)
                return CFG_SIZE_INEXACT;
            frac >>= fdigits - shift;
        }
    }
    if (shift != 0 && whole > (UINT64_MAX >> shift))
        return CFG_SIZE_OVERFLOW;
    total = whole << shift;
    if (total > UINT64_MAX - frac)
        return CFG_SIZE_OVERFLOW;
    *out = total + frac;
    return CFG_SIZE_OK;
}

pdcbb_err_t pdcbb_parse_size(const char *s, uint64_t *out)
{
    uint64_t v = 0;

    if (out == NULL || cfg_size_parse(s, &v) != CFG_SIZE_OK)
        return PDCBB_ERR_INVAL;
    *out = v;
    return PDCBB_OK;
}

const char *pdcbb_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "KMGTP";

    if (buf == NULL || len == 0)
        return "";
    for (int e = 5; e >= 1; e--) {
        unsigned shift = 10u * (unsigned)e;
        if (bytes != 0 && (bytes & ((1ull << shift) - 1)) == 0) {
            snprintf(buf, len, "%llu%c", (unsigned long long)(bytes >> shift), units[e - 1]);
            return buf;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)bytes);
    return buf;
}

/* SECONDS[.FRACTION][s|m|h|d]: no sign, no exponent, no inf/nan. */
bool cfg_seconds_parse(const char *s, double *out)
{
    char num[64];
    size_t n = 0;
    double mult = 1.0, v;
    char *end = NULL;

    if (s == NULL || !cfg_isdigit(s[0]))
        return false;
    while (cfg_isdigit(s[n]) || s[n] == '.')
        n++;
    if (n >= sizeof(num))
        return false;
    memcpy(num, s, n);
    num[n] = '\0';
    if (strchr(num, '.') != strrchr(num, '.') || num[n - 1] == '.')
        return false;
    switch (s[n]) {
    case '\0': break;
    case 's': case 'S': mult = 1.0; n++; break;
    case 'm': case 'M': mult = 60.0; n++; break;
    case 'h': case 'H': mult = 3600.0; n++; break;
    case 'd': case 'D': mult = CFG_DAY; n++; break;
    default: return false;
    }
    if (s[n] != '\0')
        return false;
    errno = 0;
    v = strtod(num, &end);
    if (errno != 0 || end == NULL || *end != '\0')
        return false;
    *out = v * mult;
    return true;
}

/* The shortest "%g" text that reads back to exactly d (bounded values never need exponents). */
void cfg_format_seconds(double d, char *buf, size_t len)
{
    for (int prec = 6; prec <= 17; prec++) {
        double back;
        snprintf(buf, len, "%.*g", prec, d);
        if (cfg_seconds_parse(buf, &back) && back == d)
            return;
    }
    snprintf(buf, len, "%.17g", d);
}

const char *pdcbb_placement_name(pdcbb_placement_t p)
{
    if ((int)p < 0 || (size_t)p >= sizeof(cfg_placement_names) / sizeof(cfg_placement_names[0]))
        return "unknown";
    return cfg_placement_names[p];
}

int pdcbb_placement_parse(const char *s)
{
    if (s == NULL)
        return -1;
    if (strncasecmp(s, "PDC_", 4) == 0) /* PDC's own names: PDC_OBJ_STATIC, ... */
        s += 4;
    for (size_t i = 0; i < sizeof(cfg_placement_names) / sizeof(cfg_placement_names[0]); i++)
        if (strcasecmp(s, cfg_placement_names[i]) == 0)
            return (int)i;
    return -1;
}
