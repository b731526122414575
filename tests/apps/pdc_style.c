/*
 * pdc_style.c - a program written the way PDC's own examples are, built by
 * tests/bats/60-install.bats against the installed tree with plain `cc` and pkg-config: the
 * header names PDC programs include beside pdc.h, PDC's logging macros, PDCcont_iter_start
 * called with an argument (PDC declares it without a prototype), a deleted tag read back as
 * PDC answers it (SUCCEED, value NULL, size 0), PDC's timing helpers, and the commons helpers
 * PDC's test programs use: println and gen_random_strings (string_utils.h, reached through
 * pdc_client_connect.h), the stopwatch of timer_utils.h and PDC_get_elapsed_time_double.
 *
 *   pdc_style LOGFILE     (inside a job: pdcbb run -- pdc_style LOGFILE)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "pdc.h"
#include "pdc_client_connect.h"
#include "pdc_client_server_common.h"
#include "pdc_logger.h"
#include "pdc_query.h"
#include "pdc_timing.h"
#include "timer_utils.h"

void print_usage()
{
    LOG_JUST_PRINT("Usage: pdc_style LOGFILE\n");
}

int main(int argc, char **argv)
{
    pdcid_t pdc, cont_prop, cont, obj_prop, obj;
    struct timeval start, end;
    void *value = &start;
    psize_t size = 99;
    pdc_var_type_t type;
    int answer = 42, n = 0;
    stopwatch_t watch;

    if (argc < 2) {
        print_usage();
        return 1;
    }
    gettimeofday(&start, 0);
    timer_start(&watch);
    pdc = PDCinit("pdc");
    cont_prop = PDCprop_create(PDC_CONT_CREATE, pdc);
    cont = PDCcont_create("c_style", cont_prop);
    obj_prop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    obj = PDCobj_create(cont, "o_style", obj_prop);
    if (pdc <= 0 || cont <= 0 || obj <= 0) {
        LOG_ERROR("could not create the container and the object\n");
        return 1;
    }
    if (PDCobj_put_tag(obj, "answer", &answer, PDC_INT, sizeof(answer)) != SUCCEED ||
        PDCobj_del_tag(obj, "answer") != SUCCEED) {
        LOG_ERROR("put or delete of a tag failed\n");
        return 1;
    }
    if (PDCobj_get_tag(obj, "answer", &value, &type, &size) != SUCCEED || value != NULL ||
        size != 0) {
        LOG_ERROR("a deleted tag did not read back as value NULL, size 0\n");
        return 1;
    }
    LOG_JUST_PRINT("deleted tag: value NULL size 0\n");

    cont_handle *ch = PDCcont_iter_start(cont);
    while (!PDCcont_iter_null(ch)) {
        n++;
        ch = PDCcont_iter_next(ch);
    }
    LOG_JUST_PRINT("containers: %d\n", n);

    setLogFile(LOG_LEVEL_INFO, argv[1]);
    LOG_INFO("to the file: %s\n", "info");
    setLogLevel(LOG_LEVEL_WARNING);
    LOG_INFO("dropped\n");
    LOG_WARNING("a warning on stdout\n");
    setLogLevel(LOG_LEVEL_INFO);
    setLogFile(LOG_LEVEL_INFO, "stdout");

    PDC_timing_init();
    if (PDCobj_close(obj) != SUCCEED || (obj = PDCobj_open("o_style", pdc)) <= 0) {
        LOG_ERROR("close and reopen failed\n");
        return 1;
    }
    PDC_timing_finalize();
    PDCobj_close(obj);
    PDC_timing_report("style ");

    srand(42);
    char **names = gen_random_strings(8, 5, 12, 26);
    int good = names != NULL;
    for (int i = 0; i < 8 && good; i++) {
        size_t len = strlen(names[i]);
        good = len >= 5 && len <= 12 && strspn(names[i], "abcdefghijklmnopqrstuvwxyz") == len;
    }
    println("random strings: %d of 5 to 12 letters a-z: %s", 8, good ? "yes" : "no");
    for (int i = 0; names && i < 8; i++)
        free(names[i]);
    free(names);

    PDCprop_close(obj_prop);
    PDCcont_close(cont);
    PDCprop_close(cont_prop);
    PDCclose(pdc);
    gettimeofday(&end, 0);
    timer_pause(&watch);
    double elapsed = PDC_get_elapsed_time_double(&start, &end);
    /* both measure the same stretch, the stopwatch starting and stopping a little later */
    double apart = timer_delta_ms(&watch) - elapsed * 1000.0;
    println("stopwatch agrees: %s",
            elapsed > 0 && apart > -1000.0 && apart < 1000.0 ? "yes" : "no");
    LOG_JUST_PRINT("done in %.3f s\n", elapsed);
    return 0;
}
