/*
 * pdc_damage - writes and reads one object for the checksum tests (tests/bats/32-checksum.bats).
 *
 *   pdc_damage write NAME MIB [PLACEMENT]            a 1-D PDC_UINT8 object of MIB MiB, filled
 *                                                    with a position-dependent pattern
 *   pdc_damage read NAME MIB [OFF_MIB LEN_MIB]       read it (or MiB [OFF, OFF + LEN)) back
 *
 * PLACEMENT is one of prog_part_names (default "local": the writer's node's daemon). A read
 * prints "read ok" when every byte is the pattern; "read failed: <error name>: <message>" and
 * exits 2 when the library refuses it; "WRONG byte at N" and exits 3 when it returns other
 * bytes (zeros of a truncated file, damaged bytes): the one outcome the tests never accept.
 * PDC_DAMAGE_TIME in the environment: the read's seconds on standard error (docs/PERFORMANCE.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pdc.h"
#include "prog_util.h"

static int failures;
static int myrank;

static uint8_t pattern(uint64_t i)
{
    return (uint8_t)(i * 131 + (i >> 12) + 1);
}

/* A read of bytes [off, off + len) into buf; the failure's name and message are kept (closing
 * the transfer would replace them). */
static int read_range(pdcid_t obj, uint8_t *buf, uint64_t off, uint64_t len, char *why,
                      size_t whylen)
{
    uint64_t zero = 0;
    pdcid_t local = PDCregion_create(1, &zero, &len), remote = PDCregion_create(1, &off, &len);
    pdcid_t x = PDCregion_transfer_create(buf, PDC_READ, obj, local, remote);
    int ok = x && PDCregion_transfer_start(x) == SUCCEED && PDCregion_transfer_wait(x) == SUCCEED;
    if (!ok)
        snprintf(why, whylen, "%s: %s", PDCbb_last_error_name(), PDCbb_last_error_message());
    if (x)
        PDCregion_transfer_close(x);
    PDCregion_close(local);
    PDCregion_close(remote);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "read") != 0)) {
        fprintf(stderr, "usage: pdc_damage write|read NAME MIB [PLACEMENT | OFF_MIB LEN_MIB]\n");
        return 64;
    }
    int write = strcmp(argv[1], "write") == 0;
    uint64_t total = strtoull(argv[3], NULL, 10) << 20, off = 0, len = total;
    pdc_region_partition_t part = PDC_REGION_LOCAL;
    if (write && argc > 4) {
        int k = 0;
        while (k < 4 && strcmp(prog_part_names[k], argv[4]) != 0)
            k++;
        if (k == 4) {
            fprintf(stderr, "unknown placement %s\n", argv[4]);
            return 64;
        }
        part = prog_parts[k];
    } else if (!write && argc > 5) {
        off = strtoull(argv[4], NULL, 10) << 20;
        len = strtoull(argv[5], NULL, 10) << 20;
    }
    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0) {
        PROG_FAILF("PDCinit");
        return 1;
    }
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t cont = PDCcont_create("damage", cprop);
    pdcid_t obj;
    if (write) {
        pdcid_t prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
        PDCprop_set_obj_type(prop, PDC_UINT8);
        PDCprop_set_obj_dims(prop, 1, &total);
        PDCprop_set_obj_transfer_region_type(prop, part);
        obj = PDCobj_create(cont, argv[2], prop);
        PDCprop_close(prop);
    } else {
        obj = PDCobj_open(argv[2], pdc);
    }
    if (cont == 0 || obj == 0) {
        PROG_FAILF("container or object %s", argv[2]);
        return 1;
    }
    uint8_t *buf = malloc(len ? len : 1);
    int rc = 0;
    if (write) {
        for (uint64_t i = 0; i < len; i++)
            buf[i] = pattern(i);
        if (!prog_transfer(obj, PDC_WRITE, buf, 1, &off, &len)) {
            PROG_FAILF("write of %s", argv[2]);
            rc = 1;
        } else {
            printf("write ok\n");
        }
    } else {
        char why[1024];
        memset(buf, 0xee, len);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int ok = read_range(obj, buf, off, len, why, sizeof(why));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (getenv("PDC_DAMAGE_TIME"))
            fprintf(stderr, "read seconds %.4f\n",
                    (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
        if (!ok) {
            printf("read failed: %s\n", why);
            rc = 2;
        } else {
            for (uint64_t i = 0; i < len && rc == 0; i++)
                if (buf[i] != pattern(off + i)) {
                    printf("WRONG byte at %llu: %u, written %u\n", (unsigned long long)(off + i),
                           buf[i], pattern(off + i));
                    rc = 3;
                }
            if (rc == 0)
                printf("read ok\n");
        }
    }
    free(buf);
    PDCobj_close(obj);
    PDCcont_close(cont);
    PDCprop_close(cprop);
    PDCclose(pdc);
    return rc;
}
