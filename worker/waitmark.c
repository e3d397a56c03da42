/* worker/waitmark.c - see waitmark.h. */
#include "waitmark.h"

#include <math.h>

#include "clock.h"

static const char *const NAMES[WAIT_N] = {
    [WAIT_NONE] = "",
    [WAIT_BARRIER] = "barrier",
    [WAIT_ALLREDUCE] = "allreduce",
    [WAIT_BROADCAST] = "broadcast",
    [WAIT_GATHER] = "gather",
    [WAIT_PUSH] = "push",
    [WAIT_REPLY] = "reply",
    [WAIT_PUSHES] = "pushes",
};

const char *waitmark_name(wait_op_t op) { return op > WAIT_NONE && op < WAIT_N ? NAMES[op] : ""; }

/* One writer: the sequence goes odd, the fields change, it goes even again; the release
 * fence orders the odd count before the fields, the release store the fields before the
 * even count. */
static void publish(waitmark_t *m, int op, int peer, long long since_ns)
{
    unsigned s = atomic_load_explicit(&m->seq, memory_order_relaxed);
    atomic_store_explicit(&m->seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&m->op, op, memory_order_relaxed);
    atomic_store_explicit(&m->peer, peer, memory_order_relaxed);
    atomic_store_explicit(&m->since_ns, since_ns, memory_order_relaxed);
    atomic_store_explicit(&m->seq, s + 2, memory_order_release);
}

void waitmark_enter(waitmark_t *m, wait_op_t op, int peer)
{
    if (m) publish(m, (int)op, peer, (long long)(clock_mono_s() * 1e9));
}

void waitmark_leave(waitmark_t *m)
{
    if (m) publish(m, WAIT_NONE, -1, 0);
}

int waitmark_read(waitmark_t *m, wait_op_t *op, int *peer, double *since)
{
    int o = WAIT_NONE, p = -1, tries;
    long long t = 0;
    /* A writer the scheduler stopped between its stores would keep the count odd: a
     * bounded number of tries, then "not waiting" until the next read. */
    for (tries = 0; tries < 1000; tries++) {
        unsigned s1 = atomic_load_explicit(&m->seq, memory_order_acquire);
        o = atomic_load_explicit(&m->op, memory_order_relaxed);
        p = atomic_load_explicit(&m->peer, memory_order_relaxed);
        t = atomic_load_explicit(&m->since_ns, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        unsigned s2 = atomic_load_explicit(&m->seq, memory_order_relaxed);
        if (s1 == s2 && !(s1 & 1)) break;
    }
    if (tries == 1000 || o <= WAIT_NONE || o >= WAIT_N) return 0;
    *op = (wait_op_t)o;
    *peer = p;
    *since = (double)t / 1e9;
    return 1;
}

double waitmark_limit_s(double median_step_s)
{
    double k = isfinite(median_step_s) && median_step_s > 0 ? WAITMARK_FACTOR * median_step_s : 0;
    return k > WAITMARK_FLOOR_S ? k : WAITMARK_FLOOR_S;
}
