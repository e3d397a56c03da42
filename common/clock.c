/* common/clock.c - see clock.h. The only file that reads a clock or sleeps; a simulated
 * build (SimGrid SMPI) replaces it. */
#include "clock.h"

#include <errno.h>

static double seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double clock_mono_s(void) { return seconds(CLOCK_MONOTONIC); }

double clock_wall_s(void) { return seconds(CLOCK_REALTIME); }

void clock_wall_ts(struct timespec *ts) { clock_gettime(CLOCK_REALTIME, ts); }

double clock_thread_cpu_s(void) { return seconds(CLOCK_THREAD_CPUTIME_ID); }

void clock_sleep_s(double s)
{
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

void clock_wall_deadline(double in_s, struct timespec *abs)
{
    clock_gettime(CLOCK_REALTIME, abs);
    long ns = abs->tv_nsec + (long)(in_s * 1e9);
    abs->tv_sec += ns / 1000000000L;
    abs->tv_nsec = ns % 1000000000L;
}
