/*
 * pdc_timer_utils.c - PDC's timing helpers for applications: the stopwatch of timer_utils.h
 * and PDC_get_elapsed_time_double (pdc_client_server_common.h).
 *
 * Times are gettimeofday() microseconds, as in PDC. The exported functions do not call one
 * another (an application may define the same names): they share the static helpers below.
 * libpdc itself uses none of them.
 */
#include <stddef.h>
#include <sys/time.h>

#include "pdc_client_server_common.h"
#include "timer_utils.h"

static int64_t now_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + (int64_t)tv.tv_usec;
}

/* The count of a stopwatch in microseconds (timer_delta_us). */
static double count_us(const stopwatch_t *t)
{
    if (t == NULL)
        return 0.0;
    if (t->running)
        return (double)(now_us() - t->start_mark);
    if (t->paused)
        return (double)t->pause_mark;
    /* Neither running nor paused: only a stopwatch never started (PDC reads the marks). */
    return (double)(t->pause_mark - t->start_mark);
}

int64_t timer_us_timestamp(void)
{
    return now_us();
}

int64_t timer_ms_timestamp(void)
{
    return now_us() / 1000;
}

int64_t timer_s_timestamp(void)
{
    /* PDC divides the milliseconds again, truncating twice: the same as one division here. */
    return now_us() / 1000 / 1000;
}

void timer_start(stopwatch_t *t)
{
    if (t == NULL)
        return;
    t->start_mark = now_us();
    t->pause_mark = 0;
    t->running = true;
    t->paused = false;
}

void timer_pause(stopwatch_t *t)
{
    if (t == NULL || !t->running || t->paused)
        return;
    t->pause_mark = now_us() - t->start_mark;
    t->running = false;
    t->paused = true;
}

void timer_unpause(stopwatch_t *t)
{
    if (t == NULL || t->running || !t->paused)
        return;
    /* Back-date the start by the count already reached, which goes on from there. */
    t->start_mark = now_us() - t->pause_mark;
    t->running = true;
    t->paused = false;
}

double timer_delta_us(stopwatch_t *t)
{
    return count_us(t);
}

double timer_delta_ms(stopwatch_t *t)
{
    return count_us(t) / 1000.0;
}

double timer_delta_s(stopwatch_t *t)
{
    return count_us(t) / 1000.0 / 1000.0;
}

double timer_delta_m(stopwatch_t *t)
{
    return count_us(t) / 1000.0 / 1000.0 / 60.0;
}

double timer_delta_h(stopwatch_t *t)
{
    return count_us(t) / 1000.0 / 1000.0 / 60.0 / 60.0;
}

double PDC_get_elapsed_time_double(struct timeval *tstart, struct timeval *tend)
{
    if (tstart == NULL || tend == NULL)
        return 0.0;
    /* Whole microseconds first, in 64 bits, then seconds: PDC's rounding. */
    long long us = ((long long)tend->tv_sec - (long long)tstart->tv_sec) * 1000000LL +
                   ((long long)tend->tv_usec - (long long)tstart->tv_usec);
    return (double)us / 1000000.0;
}
