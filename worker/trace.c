/* worker/trace.c - see trace.h. */
#include "trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "textbuf.h"

int trace_ring_init(trace_ring_t *r)
{
    memset(r, 0, sizeof *r);
    r->slices = calloc(TRACE_SLICES, sizeof *r->slices);
    r->inst = calloc(TRACE_INSTANTS, sizeof *r->inst);
    if (!r->slices || !r->inst) {
        trace_ring_free(r);
        return -1;
    }
    r->wall_minus_mono = clock_wall_s() - clock_mono_s();
    return 0;
}

void trace_ring_free(trace_ring_t *r)
{
    free(r->slices);
    free(r->inst);
    r->slices = NULL;
    r->inst = NULL;
}

void trace_slice(trace_ring_t *r, int64_t step, int phase, double t0, double dur)
{
    if (!(dur >= 1e-6)) return;
    if (r->nslices > 0) {
        trace_slice_t *last = &r->slices[(r->nslices - 1) % TRACE_SLICES];
        /* The same phase again, right after (or across a sub-microsecond gap): one slice. */
        if (last->phase == phase && last->step == step && t0 - (last->t0 + last->dur) < 1e-6) {
            last->dur = t0 + dur - last->t0;
            return;
        }
    }
    trace_slice_t *s = &r->slices[r->nslices % TRACE_SLICES];
    s->t0 = t0;
    s->dur = dur;
    s->step = step;
    s->phase = phase;
    r->nslices++;
}

void trace_instant(trace_ring_t *r, int64_t step, unsigned ev, double t)
{
    trace_instant_t *e = &r->inst[r->ninst % TRACE_INSTANTS];
    e->t = t;
    e->step = step;
    e->ev = ev;
    r->ninst++;
}

static uint64_t first_kept(uint64_t n, uint64_t cap) { return n > cap ? n - cap : 0; }

double trace_ring_first_wall(const trace_ring_t *r)
{
    double t = INFINITY;
    if (r->nslices > 0) t = r->slices[first_kept(r->nslices, TRACE_SLICES) % TRACE_SLICES].t0;
    if (r->ninst > 0) {
        double u = r->inst[first_kept(r->ninst, TRACE_INSTANTS) % TRACE_INSTANTS].t;
        if (u < t) t = u;
    }
    return isfinite(t) ? t + r->wall_minus_mono : t;
}


/* Microseconds since origin, rounded to the nanosecond: a slice's end and the next
 * slice's start are the same double, so they round alike and never overlap. */
static double us(double wall, double origin) { return round((wall - origin) * 1e9) / 1e3; }

static const char *event_name(unsigned ev)
{
    if ((ev & STEP_EV_PLAN) && (ev & STEP_EV_MERGE)) return "batch plan + merge";
    return ev & STEP_EV_PLAN ? "batch plan" : "merge";
}

/* label: a JSON-safe name (the caller builds it from the rank and host). */
char *trace_ring_events(const trace_ring_t *r, int tid, const char *label, double origin_wall)
{
    textbuf_t b = {0};
    textbuf_printf(&b, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"", tid);
    for (const char *c = label; *c; c++)
        if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) textbuf_printf(&b, "%c", *c);
    textbuf_printf(&b,
                   "\"}},{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
                   tid, tid);
    for (uint64_t i = first_kept(r->nslices, TRACE_SLICES); i < r->nslices; i++) {
        const trace_slice_t *s = &r->slices[i % TRACE_SLICES];
        double a = us(s->t0 + r->wall_minus_mono, origin_wall);
        double z = us(s->t0 + s->dur + r->wall_minus_mono, origin_wall);
        textbuf_printf(&b,
                       ",{\"name\":\"%s\",\"cat\":\"phase\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":%d,"
                       "\"args\":{\"step\":%lld}}",
                       PHASE_NAMES[s->phase < 0 || s->phase >= PHASE_N ? PHASE_OTHER : s->phase], a, z - a, tid,
                       (long long)s->step);
    }
    for (uint64_t i = first_kept(r->ninst, TRACE_INSTANTS); i < r->ninst; i++) {
        const trace_instant_t *e = &r->inst[i % TRACE_INSTANTS];
        textbuf_printf(&b,
                       ",{\"name\":\"%s\",\"cat\":\"event\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":1,\"tid\":%d,"
                       "\"args\":{\"step\":%lld}}",
                       event_name(e->ev), us(e->t + r->wall_minus_mono, origin_wall), tid, (long long)e->step);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

int trace_write_file(FILE *f, const char *job_name, char *const *texts, int n)
{
    fprintf(
        f,
        "{\"traceEvents\":[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"pacer job ");
    for (const char *c = job_name ? job_name : ""; *c; c++)
        if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) fputc(*c, f);
    fprintf(f, "\"}}");
    for (int i = 0; i < n; i++)
        if (texts[i] && texts[i][0]) fprintf(f, ",\n%s", texts[i]);
    fprintf(f, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"source\":\"pacer-worker --trace\"}}\n");
    return ferror(f) ? -1 : 0;
}
