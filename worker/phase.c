/* worker/phase.c - see phase.h. */
#include "phase.h"

#include <string.h>

#include "clock.h"
#include "trace.h"

void phase_begin(step_phases_t *p, int64_t step)
{
    memset(p->s, 0, sizeof p->s);
    p->events = 0;
    p->wall = 0;
    p->step = step;
    p->cur = PHASE_OTHER;
    p->depth = 0;
    p->begin = p->mark = clock_mono_s();
    p->active = 1;
}

void phase_mark(step_phases_t *p, phase_t ph)
{
    if (!p->active) return;
    double now = clock_mono_s();
    double dt = now - p->mark;
    p->s[ph] += dt;
    if (p->ring) trace_slice(p->ring, p->step, ph, p->mark, dt);
    p->mark = now;
}

void phase_switch(step_phases_t *p, phase_t ph)
{
    if (!p->active) return;
    phase_mark(p, p->cur);
    p->cur = ph;
}

void phase_relabel(step_phases_t *p, phase_t ph)
{
    if (p->active) p->cur = ph;
}

void phase_enter(step_phases_t *p, phase_t ph)
{
    if (!p->active) return;
    if (p->depth < PHASE_DEPTH) {
        phase_mark(p, p->cur);
        p->outer[p->depth] = p->cur;
        p->cur = ph;
    }
    p->depth++;
}

void phase_leave(step_phases_t *p)
{
    if (!p->active || p->depth == 0) return;
    if (--p->depth < PHASE_DEPTH) {
        phase_mark(p, p->cur);
        p->cur = p->outer[p->depth];
    }
}

void phase_end(step_phases_t *p)
{
    if (!p->active) return;
    phase_mark(p, PHASE_OTHER);
    p->cur = PHASE_OTHER;
    p->depth = 0;
    p->wall = p->mark - p->begin;
    p->active = 0;
    for (int i = 0; i < PHASE_N; i++) p->total[i] += p->s[i];
    p->total_wall += p->wall;
    p->steps++;
}

void phase_abort(step_phases_t *p) { p->active = 0; }

void phase_event(step_phases_t *p, unsigned ev)
{
    if (!p->active) return;
    p->events |= ev;
    if (p->ring) trace_instant(p->ring, p->step, ev, clock_mono_s());
}

double phase_sum(const step_phases_t *p)
{
    double t = 0;
    for (int i = 0; i < PHASE_N; i++) t += p->s[i];
    return t;
}
