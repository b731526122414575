/*
 * timer_utils.h - PDC's stopwatch, for source compatibility.
 *
 * PDC's DART test and benchmark programs include this header from PDC's commons to time their
 * phases; pdcbb installs it with the same declarations and libpdc defines the functions with
 * PDC's results. Time is read from gettimeofday() in microseconds, so it follows changes of the
 * system clock, as PDC's does. A stopwatch_t is the caller's: the functions keep no other state
 * and may be called from any thread, each stopwatch used by one thread at a time.
 *
 * A stopwatch starts with timer_start, counts while running, holds its count while paused
 * (timer_pause) and goes on from there after timer_unpause. The timer_delta_ functions read
 * the count in different units without stopping it.
 */
#ifndef TIMER_UTILS_H_DEFINED
#define TIMER_UTILS_H_DEFINED

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/time.h>

/* The export macro of pdc.h; defined here too, so this header stands alone as PDC's does. */
#ifndef PDC_EXPORT
#if defined(__GNUC__) || defined(__clang__)
#define PDC_EXPORT __attribute__((visibility("default")))
#else
#define PDC_EXPORT
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A stopwatch (PDC's fields; set by the functions below, read them only through those). */
typedef struct stopwatch_t {
    int64_t start_mark; /* running: when it started, moved on by the time spent paused (us) */
    int64_t pause_mark; /* paused: the count when it was paused (us) */
    bool running;       /* counting */
    bool paused;        /* holding its count */
} stopwatch_t;

/** @brief The current time in microseconds since the Epoch (gettimeofday). */
PDC_EXPORT int64_t timer_us_timestamp(void);

/** @brief The current time in milliseconds since the Epoch (timer_us_timestamp() / 1000). */
PDC_EXPORT int64_t timer_ms_timestamp(void);

/** @brief The current time in seconds since the Epoch (timer_ms_timestamp() / 1000). */
PDC_EXPORT int64_t timer_s_timestamp(void);

/** @brief Start a stopwatch from 0; a stopwatch already started starts again.
 * @param[out] t  the stopwatch; NULL is ignored.
 */
PDC_EXPORT void timer_start(stopwatch_t *t);

/** @brief Pause a running stopwatch: it keeps its count until timer_unpause. Does nothing to a
 * stopwatch that is not running.
 * @param[in,out] t  the stopwatch; NULL is ignored.
 */
PDC_EXPORT void timer_pause(stopwatch_t *t);

/** @brief Let a paused stopwatch count again from where it was paused. Does nothing to a
 * stopwatch that is not paused.
 * @param[in,out] t  the stopwatch; NULL is ignored.
 */
PDC_EXPORT void timer_unpause(stopwatch_t *t);

/** @brief A stopwatch's count in microseconds: running, the time since it started less the
 * time spent paused; paused, the count when it was paused; never started (zeroed), 0.
 * @param[in] t  the stopwatch; NULL gives 0.
 */
PDC_EXPORT double timer_delta_us(stopwatch_t *t);

/** @brief The count of timer_delta_us in milliseconds (divided by 1000). */
PDC_EXPORT double timer_delta_ms(stopwatch_t *t);

/** @brief The count of timer_delta_us in seconds. */
PDC_EXPORT double timer_delta_s(stopwatch_t *t);

/** @brief The count of timer_delta_us in minutes. */
PDC_EXPORT double timer_delta_m(stopwatch_t *t);

/** @brief The count of timer_delta_us in hours. */
PDC_EXPORT double timer_delta_h(stopwatch_t *t);

#ifdef __cplusplus
}
#endif

#endif /* TIMER_UTILS_H_DEFINED */
