/*
 * pdc_fill - fill a job's burst buffer with N objects of SIZE bytes each (PDC_DOUBLE, 1-D,
 * written in 64 MiB regions), for the drain benchmark (bench/drain.sh). Prints the bytes
 * written and the write throughput.
 *
 *   pdcbb run --keep -- pdc_fill [--objects N] [--size SIZE]
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pdc.h"

#define CHUNK ((uint64_t)64 << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t mul = 1;
    switch (*end) {
    case 'K': mul = 1ull << 10; end++; break;
    case 'M': mul = 1ull << 20; end++; break;
    case 'G': mul = 1ull << 30; end++; break;
    default: break;
    }
    if (end == s || *end != '\0' || v == 0)
        return -1;
    *out = (uint64_t)v * mul;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"objects", required_argument, NULL, 'n'},
                                         {"size", required_argument, NULL, 's'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    uint64_t nobj = 4, size = 512ull << 20;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'n' && parse_size(optarg, &nobj) == 0)
            continue;
        if (c == 's' && parse_size(optarg, &size) == 0 && size % 8 == 0)
            continue;
        fprintf(stderr, "usage: pdc_fill [--objects N] [--size SIZE (K/M/G, multiple of 8)]\n");
        return c == 'h' ? 0 : 2;
    }
    pdcid_t pdc = PDCinit("pdc");
    pdcid_t cprop = pdc ? PDCprop_create(PDC_CONT_CREATE, pdc) : 0;
    pdcid_t cont = cprop ? PDCcont_create("fill", cprop) : 0;
    uint64_t *buf = malloc(CHUNK);
    if (!cont || buf == NULL) {
        fprintf(stderr, "pdc_fill: %s\n", PDCbb_last_error_message());
        return 1;
    }
    double t0 = now();
    for (uint64_t k = 0; k < nobj; k++) {
        char name[64];
        snprintf(name, sizeof(name), "fill-%" PRIu64, k);
        uint64_t n = size / 8;
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        PDCprop_set_obj_dims(prop, 1, &n);
        PDCprop_set_obj_type(prop, PDC_DOUBLE);
        pdcid_t obj = PDCobj_create(cont, name, prop);
        PDCprop_close(prop);
        if (!obj) {
            fprintf(stderr, "pdc_fill: %s: %s\n", name, PDCbb_last_error_message());
            return 1;
        }
        for (uint64_t off = 0; off < n; off += CHUNK / 8) {
            uint64_t cnt = n - off < CHUNK / 8 ? n - off : CHUNK / 8, zero = 0;
            for (uint64_t i = 0; i < cnt; i++)
                buf[i] = (k << 40) ^ ((off + i) * 0x9E3779B97F4A7C15ull);
            pdcid_t l = PDCregion_create(1, &zero, &cnt), r = PDCregion_create(1, &off, &cnt);
            pdcid_t req = PDCregion_transfer_create(buf, PDC_WRITE, obj, l, r);
            if (!req || PDCregion_transfer_start(req) != SUCCEED ||
                PDCregion_transfer_wait(req) != SUCCEED) {
                fprintf(stderr, "pdc_fill: writing %s: %s\n", name, PDCbb_last_error_message());
                return 1;
            }
            PDCregion_transfer_close(req);
            PDCregion_close(l);
            PDCregion_close(r);
        }
        PDCobj_close(obj);
    }
    double dt = now() - t0;
    printf("pdc_fill: %" PRIu64 " objects, %" PRIu64 " bytes in %.2f s (%.0f MB/s)\n", nobj,
           nobj * size, dt, (double)(nobj * size) / dt / 1e6);
    free(buf);
    PDCcont_close(cont);
    PDCprop_close(cprop);
    PDCclose(pdc);
    return 0;
}
