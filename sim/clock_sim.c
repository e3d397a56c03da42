/* sim/clock_sim.c - the clock of the SMPI build: simulated time for simulated ranks, real
 * time for every other thread.
 *
 * common/clock.c is the one clock of pacer. The SMPI build compiles it with the plain
 * compiler and -Dclock_gettime=sim_clock_gettime -Dnanosleep=sim_nanosleep (sim/sim.mk),
 * so every read and sleep it makes comes here. A simulated rank (a SimGrid actor) gets
 * SimGrid's clock and sleep: the worker's timing code then measures simulated time
 * unchanged, and the emulated slowdown waits in simulated time. The worker's own threads
 * (the metrics reporter and the Redis sink, worker/metrics.c and worker/redis_report.c)
 * are not actors: SimGrid's clock called from them would crash, and their heartbeats and
 * condition-variable deadlines must follow real time so that the coordinator's liveness
 * checks work. They get the C library's clock. sg_actor_self() is NULL outside an actor
 * (it reads a thread-local context), which is what tells the two apart. */
#include <time.h>

#include <simgrid/actor.h>
#include <smpi/smpi_helpers_internal.h>

int sim_clock_gettime(clockid_t id, struct timespec *ts);
int sim_nanosleep(const struct timespec *req, struct timespec *rem);

int sim_clock_gettime(clockid_t id, struct timespec *ts)
{
    return sg_actor_self() ? smpi_clock_gettime(id, ts) : clock_gettime(id, ts);
}

int sim_nanosleep(const struct timespec *req, struct timespec *rem)
{
    return sg_actor_self() ? smpi_nanosleep(req, rem) : nanosleep(req, rem);
}
