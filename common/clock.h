/* common/clock.h - the one clock of pacer, for the worker and the coordinator alike.
 *
 * Two meanings of time, never mixed:
 *   clock_mono_s()  monotonic seconds since an arbitrary origin: durations, deadlines,
 *                   rates, timeouts and backoff. It never jumps when the system clock is set.
 *   clock_wall_s()  unix seconds: timestamps shown to people or compared between
 *                   processes (metrics records, Redis fields such as heartbeats, log lines).
 * A value of one kind is never compared with a value of the other.
 *
 * Every read of a clock and every sleep in pacer's programs goes through here, and all of
 * it is implemented in clock.c alone: a SimGrid SMPI build swaps that one file for one on
 * simulated time. (bench/coord_tick.c keeps its own absolute-deadline sleep and
 * per-thread CPU clock: it measures the real machine.)
 */
#ifndef PACER_CLOCK_H
#define PACER_CLOCK_H

#include <time.h>

double clock_mono_s(void);
double clock_wall_s(void);
/* The wall clock as a timespec (log lines print its milliseconds exactly). */
void clock_wall_ts(struct timespec *ts);
/* CPU time of the calling thread: it does not advance while the scheduler gives the core
 * to another process, so the worker's emulation (worker/train.c, step_cost) reads a
 * step's own cost from it on a shared core. */
double clock_thread_cpu_s(void);

/* Sleeps s seconds (s <= 0: returns at once); a signal does not cut it short. */
void clock_sleep_s(double s);

/* The absolute CLOCK_REALTIME time in_s from now, as pthread_cond_timedwait takes it
 * (condition variables here use the default clock attribute). */
void clock_wall_deadline(double in_s, struct timespec *abs);

#endif
