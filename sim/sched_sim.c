/* sim/sched_sim.c - pacer-sched-sim: the scheduling policies (coordinator/policy.h, the
 * daemon's own code) over a job trace in virtual time (docs/ARCHITECTURE.md "Scheduler
 * simulator").
 *
 *   pacer-sched-sim --cluster CLUSTER.json --trace TRACE.jsonl|--experiment EXP.json
 *                   --policy fifo|agnostic|fair|hetero
 *                   [--seed N] [--jobs-out FILE] [--round-s R] [--min-run-s S]
 *                   [--restart-cost-s C] [--hysteresis H] [--max-decisions N]
 *                   [--grow-past-ask F] [--grow-overhead O] [--trial-worth rung|none]
 *
 * --experiment: the jobs are one search's trials (sched_exp.h), released max_concurrent at
 * a time; a trial that reaches an ASHA rung stops there or goes on, and counts rf^rung to
 * hetero's objective (policy_hjob_t.worth; --trial-worth none: 1), so promoted trials are
 * the ones it moves onto the fast slots; a PBT trial that exploits at a point goes back to
 * the queue as the daemon's new job does. The summary adds the search's outcome.
 *
 * Event-driven: the clock jumps to the next arrival, completion or round (every R virtual
 * seconds); at each the policy decides (policy_plan, and policy_preempt under fair) on a
 * snapshot built as the daemon's tick builds one, and its decisions apply at once. A running
 * job progresses at the sum of its slots' speeds (the cluster file's, unknown ones estimated
 * by policy_speed; past its ask scaled by policy_grow_factor, --grow-overhead O), after C seconds of no progress at each start, resize or move. Prints
 * one JSON object of summary metrics; --jobs-out writes one JSON line per job with its
 * start, end and slots per class over time. Deterministic: nothing is drawn at random
 * (--seed is recorded in the output; the trace generator takes the seed).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numarg.h"
#include "policy.h"
#include "sched_exp.h"
#include "sched_input.h"

#define PCM POLICY_CLASSES_MAX
#define FAIR_HALF_LIFE_S 3600 /* the daemon's default (coordinator/daemon.c, fair_half_life_s) */

typedef struct {
    double round_s, min_run_s, restart_cost_s, hysteresis;
    double grow_past_ask, grow_overhead; /* --grow-past-ask F, --grow-overhead O */
    long seed, max_decisions;
    policy_kind_t kind;
    int no_worth; /* --trial-worth none: an experiment's trials all worth 1 to the policy */
} opts_t;

typedef struct {
    double t;
    int alloc[PCM];
} seg_t;

typedef struct {
    const sched_job_t *in;
    int state; /* 0 not arrived, 1 queued, 2 running, 3 done */
    int user;
    double remaining, changed, attempt, stall_until;
    double start, end;  /* first start and completion; -1 until then */
    double area0, nbar; /* jobs present: the integral at its arrival, and the mean over its life */
    int alloc[PCM];
    seg_t *seg;
    int nseg, capseg;
} sjob_t;

typedef struct {
    const sched_cluster_t *c;
    policy_hetero_t h;
    policy_class_t cls[PCM];
    double *speed; /* [type * nclasses + class] */
    int slots;
    sjob_t *j;
    int n;
    char (*users)[SCHED_NAME_MAX];
    double *usage;
    int nusers;
    long resizes, preemptions, decisions;
    /* --experiment: the search whose trials the jobs are (NULL: a trace), and the jobs'
     * array, whose later trials arrive as earlier ones end */
    sched_exp_t *exp;
    sched_job_t *in;
} sim_t;

/* A whole file of at most max bytes, NUL-terminated; NULL with err when unreadable or too big. */
static char *slurp(const char *path, long max, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot be read", path);
        return NULL;
    }
    char *buf = malloc((size_t)max + 1);
    size_t n = buf ? fread(buf, 1, (size_t)max + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad || n > (size_t)max) {
        snprintf(err, errlen, "%s: %s", path, !buf ? "out of memory" : bad ? "read error" : "larger than 64 MiB");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* The job's samples/s: its slots' speeds, past its ask scaled by --grow-overhead. */
static double rate(const sim_t *s, const sjob_t *j)
{
    int nc = s->c->nclasses;
    return policy_alloc_rate(s->speed + j->in->type * nc, j->alloc, nc, j->in->workers, s->h.grow_overhead);
}

/* The most an elastic job may grow to: its trace's max_workers, else --grow-past-ask x its
 * workers (rounded down), at most every slot. */
static int max_slots(const sim_t *s, const opts_t *o, const sched_job_t *in)
{
    if (!in->elastic) return in->workers;
    double m = in->max_workers > 0 ? in->max_workers : floor(o->grow_past_ask * in->workers);
    return m > s->slots ? s->slots : m < in->workers ? in->workers : (int)m;
}

static int slots_of(const int *a)
{
    int n = 0;
    for (int c = 0; c < PCM; c++) n += a[c];
    return n;
}

static int record(sjob_t *j, double t)
{
    if (j->nseg == j->capseg) {
        int cap = j->capseg ? 2 * j->capseg : 4;
        seg_t *g = realloc(j->seg, (size_t)cap * sizeof *g);
        if (!g) return -1;
        j->seg = g;
        j->capseg = cap;
    }
    j->seg[j->nseg].t = t;
    memcpy(j->seg[j->nseg].alloc, j->alloc, sizeof j->alloc);
    j->nseg++;
    return 0;
}

/* The job's new allocation from time t: its restart costs restart_cost_s of no progress. */
static int reallocate(sjob_t *j, const int *alloc, double t, const opts_t *o)
{
    memcpy(j->alloc, alloc, sizeof j->alloc);
    j->changed = t;
    j->stall_until = t + o->restart_cost_s;
    return record(j, t);
}

/* The time the running job j completes at its current rate. */
static double finish_time(const sim_t *s, const sjob_t *j, double t)
{
    double r = rate(s, j);
    if (r <= 0) return INFINITY;
    return (j->stall_until > t ? j->stall_until : t) + j->remaining / r;
}

/* One decision at time t: the snapshot, the policy, its decisions applied. Returns 0, or
 * -1 when out of memory. */
static int decide(sim_t *s, const opts_t *o, double t)
{
    int nr = 0, nq = 0, rc = -1;
    policy_running_t *run = calloc((size_t)s->n, sizeof *run);
    policy_queued_t *q = calloc((size_t)s->n, sizeof *q);
    policy_hjob_t *hr = calloc((size_t)s->n, sizeof *hr), *hq = calloc((size_t)s->n, sizeof *hq);
    int *ri = calloc((size_t)s->n, sizeof *ri), *qi = calloc((size_t)s->n, sizeof *qi);
    policy_decision_t *d = calloc((size_t)s->n, sizeof *d);
    policy_resize_t *rz = calloc((size_t)s->n, sizeof *rz);
    if (!run || !q || !hr || !hq || !ri || !qi || !d || !rz) goto out;
    for (int i = 0; i < s->n; i++) {
        sjob_t *j = &s->j[i];
        const sched_job_t *in = j->in;
        policy_hjob_t hj = {.type = in->type,
                            .min_slots = in->workers,
                            .want = in->workers,
                            .max_slots = max_slots(s, o, in),
                            .changed = j->changed,
                            .work = s->exp ? sched_exp_work_left(s->exp, i, j->remaining) : j->remaining,
                            .submitted = in->arrival_s,
                            .worth = s->exp && !o->no_worth ? sched_exp_worth(s->exp, i) : 0};
        /* the daemon's rule (run.c): "elastic": true is a spec's min_workers 1 and its
         * max_workers up to max_slots; false, min_workers = max_workers = workers */
        policy_hjob_bounds(&hj, in->workers, in->elastic ? 1 : in->workers, hj.max_slots, s->slots, s->slots);
        if (j->state == 2) {
            memcpy(hj.alloc, j->alloc, sizeof hj.alloc);
            ri[nr] = i;
            hr[nr] = hj;
            run[nr++] = (policy_running_t){in->id,       slots_of(j->alloc), 0, finish_time(s, j, t),
                                           in->priority, j->attempt};
        } else if (j->state == 1) {
            qi[nq] = i;
            hq[nq] = hj;
            q[nq++] = (policy_queued_t){in->id, in->workers,  hj.min_slots,      0,
                                        0,      in->priority, s->users[j->user], policy_share(s->usage[j->user], 1)};
        }
    }
    s->h.running = hr;
    s->h.queued = hq;
    policy_state_t st = {.now = t,
                         .slots_total = s->slots,
                         .slots_usable = s->slots,
                         .running = run,
                         .nrunning = nr,
                         .queued = q,
                         .nqueued = nq,
                         .preempt_min_run_s = o->min_run_s,
                         .hetero = &s->h};
    int nrz = 0;
    s->decisions++;
    if (policy_plan(o->kind, &st, d, rz, &nrz) < 0) goto out;
    for (int r = 0; r < nrz; r++) {
        if (reallocate(&s->j[ri[rz[r].running]], rz[r].alloc, t, o) != 0) goto out;
        s->resizes++;
    }
    for (int i = 0; i < nq; i++) {
        sjob_t *j = &s->j[qi[i]];
        if (!d[i].start) continue;
        j->state = 2;
        j->attempt = t;
        if (j->start < 0) j->start = t;
        if (reallocate(j, d[i].alloc, t, o) != 0) goto out;
    }
    /* fair's preemption, as the daemon's tick: the victims go back to the queue (their
     * progress kept, as from a checkpoint) */
    int victims[8], who;
    int nv = policy_preempt(o->kind, &st, d, victims, 8, &who);
    for (int v = 0; v < nv; v++) {
        sjob_t *j = &s->j[ri[victims[v]]];
        static const int none[PCM];
        j->state = 1;
        if (reallocate(j, none, t, o) != 0) goto out;
        s->preemptions++;
    }
    rc = nv > 0 ? 1 : 0;
out:
    free(run);
    free(q);
    free(hr);
    free(hq);
    free(ri);
    free(qi);
    free(d);
    free(rz);
    return rc;
}

static int user_index(sim_t *s, const char *name)
{
    for (int u = 0; u < s->nusers; u++)
        if (strcmp(s->users[u], name) == 0) return u;
    snprintf(s->users[s->nusers], SCHED_NAME_MAX, "%s", name);
    return s->nusers++;
}

/* Runs the trace to its end. Returns 0, -1 (out of memory, or no progress possible) or -2
 * (more than max_decisions decisions: each costs about jobs^2, so a long trace of many jobs
 * with short rounds is stopped with a message instead of running for hours). A round
 * without an event changes nothing under fifo (no usage, no minimum run time): skipped. */
static int simulate(sim_t *s, const opts_t *o)
{
    double t = s->j[0].in->arrival_s, area = 0, next_round = t;
    int done = 0, next_arrival = 0, changed = 0;
    while (done < s->n) {
        for (; next_arrival < s->n && s->j[next_arrival].in->arrival_s <= t; next_arrival++) {
            s->j[next_arrival].state = 1;
            s->j[next_arrival].area0 = area;
            changed = 1;
        }
        if (changed || (t >= next_round && o->kind != POLICY_FIFO)) {
            int rc = 0;
            if (s->decisions >= o->max_decisions) return -2;
            changed = 0;
            /* a preemption frees slots: decide again at once (at most a few times) */
            for (int k = 0; k < 8 && (rc = decide(s, o, t)) == 1; k++)
                ;
            if (rc < 0) return -1;
            int busy = 0;
            for (int i = 0; i < s->n && !busy; i++) busy = s->j[i].state == 2;
            /* nothing runs, nothing will come */
            if (!busy && (next_arrival == s->n || !isfinite(s->j[next_arrival].in->arrival_s))) return -1;
        }
        while (next_round <= t) next_round += o->round_s;
        /* the next event */
        double tn = o->kind == POLICY_FIFO ? INFINITY : next_round;
        int finisher = -1;
        if (next_arrival < s->n && s->j[next_arrival].in->arrival_s < tn) tn = s->j[next_arrival].in->arrival_s;
        for (int i = 0; i < s->n; i++)
            if (s->j[i].state == 2) {
                double f = finish_time(s, &s->j[i], t);
                if (f <= tn) {
                    tn = f;
                    finisher = i;
                }
            }
        /* advance: progress, the jobs present, the users' usage */
        int present = 0;
        for (int i = 0; i < s->n; i++) {
            sjob_t *j = &s->j[i];
            if (j->state == 1 || j->state == 2) present++;
            if (j->state != 2) continue;
            double from = j->stall_until > t ? j->stall_until : t;
            if (tn > from) j->remaining -= rate(s, j) * (tn - from);
        }
        area += present * (tn - t);
        for (int u = 0; u < s->nusers; u++) {
            int held = 0;
            for (int i = 0; i < s->n; i++)
                if (s->j[i].state == 2 && s->j[i].user == u) held += slots_of(s->j[i].alloc);
            s->usage[u] = policy_usage_decay(s->usage[u], tn - t, FAIR_HALF_LIFE_S, held);
        }
        t = tn;
        for (int i = 0; i < s->n; i++) {
            sjob_t *j = &s->j[i];
            if (j->state != 2 || (i != finisher && j->remaining > 1e-9 * j->in->samples)) continue;
            changed = 1; /* a completion frees slots, a promotion changes a trial's worth: decide now */
            static const int none[PCM];
            /* an experiment's trial at the end of a segment: a rung, where ASHA may stop it,
             * or a point, where PBT may move it onto a better trial's weights as a new job
             * (back to the queue: placed again, its restart cost paid again) */
            if (s->exp && (j->remaining = sched_exp_reached(s->exp, s->in, i, t)) > 0) {
                if (sched_exp_requeue(s->exp, i)) {
                    j->state = 1;
                    if (reallocate(j, none, t, o) != 0) return -1;
                }
                continue;
            }
            j->state = 3;
            j->end = t;
            j->nbar = t > j->in->arrival_s ? (area - j->area0) / (t - j->in->arrival_s) : 1;
            memcpy(j->alloc, none, sizeof none);
            if (record(j, t) != 0) return -1;
            done++;
        }
        if (!isfinite(t)) return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A job's finish-time fairness (Themis's rho): its completion time over the time it would
 * take alone on an equal 1/N share of the cluster, N the mean number of jobs present
 * (queued or running, itself included) over its life; the share is capped at the slots it
 * asks for, and runs at the type's mean speed over all the cluster's slots. */
static double rho(const sim_t *s, const sjob_t *j)
{
    double mean = 0;
    for (int c = 0; c < s->c->nclasses; c++) mean += s->cls[c].slots * s->speed[j->in->type * s->c->nclasses + c];
    mean /= s->slots;
    double n = j->nbar < 1 ? 1 : j->nbar, share = s->slots / n;
    if (share > j->in->workers) share = j->in->workers;
    double alone = j->in->samples / (share * mean);
    return (j->end - j->in->arrival_s) / alone;
}

/* --experiment: the search's outcome, and one trial's time on every epoch alone on each
 * class: the yardstick of the search's cost (its makespan over one full trial's). */
static json_t *exp_summary(const sim_t *s)
{
    json_t *o = sched_exp_summary(s->exp), *one = json_object();
    const sched_exp_t *e = s->exp;
    for (int c = 0; c < s->c->nclasses; c++)
        json_object_set_new(one, s->cls[c].name,
                            json_real(e->search.epochs * e->epoch_samples /
                                      (e->workers * s->speed[e->type * s->c->nclasses + c])));
    if (o) json_object_set_new(o, "one_trial_s", one);
    else json_decref(one);
    return o;
}

static json_t *summary(const sim_t *s, const opts_t *o)
{
    double jct = 0, first = INFINITY, last = 0;
    double *wait = malloc((size_t)s->n * sizeof *wait), *ur = calloc((size_t)s->nusers, sizeof *ur);
    int *un = calloc((size_t)s->nusers, sizeof *un);
    json_t *out = NULL;
    if (!wait || !ur || !un) goto done;
    for (int i = 0; i < s->n; i++) {
        const sjob_t *j = &s->j[i];
        jct += j->end - j->in->arrival_s;
        if (j->in->arrival_s < first) first = j->in->arrival_s;
        if (j->end > last) last = j->end;
        wait[i] = j->start - j->in->arrival_s;
        ur[j->user] += rho(s, j);
        un[j->user]++;
    }
    qsort(wait, (size_t)s->n, sizeof *wait, cmp_double);
    int p95 = (int)ceil(0.95 * s->n) - 1;
    json_t *by = json_object();
    double worst = 0;
    for (int u = 0; u < s->nusers; u++) {
        double m = ur[u] / un[u];
        if (m > worst) worst = m;
        json_object_set_new(by, s->users[u], json_real(m));
    }
    out = json_pack("{s:s, s:I, s:i, s:f, s:f, s:f, s:f, s:o, s:I, s:I, s:I}", "policy", policy_name(o->kind), "seed",
                    (json_int_t)o->seed, "jobs", s->n, "avg_jct_s", jct / s->n, "makespan_s", last - first,
                    "p95_wait_s", wait[p95 < 0 ? 0 : p95], "max_ftf_rho", worst, "ftf_rho_by_user", by, "resizes",
                    (json_int_t)s->resizes, "preemptions", (json_int_t)s->preemptions, "decisions",
                    (json_int_t)s->decisions);
    if (out && s->exp) json_object_set_new(out, "experiment", exp_summary(s));
done:
    free(wait);
    free(ur);
    free(un);
    return out;
}

static int jobs_out(const sim_t *s, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int rc = 0;
    for (int i = 0; i < s->n && rc == 0; i++) {
        const sjob_t *j = &s->j[i];
        json_t *segs = json_array();
        for (int k = 0; k < j->nseg; k++) {
            json_t *a = json_object();
            for (int c = 0; c < s->c->nclasses; c++)
                if (j->seg[k].alloc[c]) json_object_set_new(a, s->cls[c].name, json_integer(j->seg[k].alloc[c]));
            json_array_append_new(segs, json_pack("{s:f, s:o}", "t", j->seg[k].t, "slots", a));
        }
        json_t *o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:o}", "id", j->in->id, "user", j->in->user, "type",
                              s->c->types[j->in->type], "arrival_s", j->in->arrival_s, "start_s", j->start, "end_s",
                              j->end, "rho", rho(s, j), "allocations", segs);
        char *txt = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12)) : NULL;
        if (!txt || fprintf(f, "%s\n", txt) < 0) rc = -1;
        free(txt);
        json_decref(o);
    }
    if (fclose(f) != 0) rc = -1;
    return rc;
}

static int usage(const char *why)
{
    fprintf(stderr,
            "pacer-sched-sim: %s\nusage: pacer-sched-sim --cluster CLUSTER.json --trace TRACE.jsonl|--experiment EXP.json "
            "--policy "
            "fifo|agnostic|fair|hetero [--seed N] [--jobs-out FILE] [--round-s R] [--min-run-s S] "
            "[--restart-cost-s C] [--hysteresis H] [--max-decisions N] [--grow-past-ask F] "
            "[--grow-overhead O] [--trial-worth rung|none]\n",
            why);
    return 2;
}

/* The files a run reads and writes (main's options besides opts_t). */
typedef struct {
    const char *cluster, *trace, *experiment, *jobsout, *policy;
} files_t;

/* The command line into o and f. Returns 0, or usage's exit status (2) after saying why. */
static int parse_options(int argc, char **argv, opts_t *o, files_t *f)
{
    char err[512];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage("an option without its value, or an unknown argument");
        i++;
        if (strcmp(a, "--cluster") == 0) f->cluster = v;
        else if (strcmp(a, "--trace") == 0) f->trace = v;
        else if (strcmp(a, "--experiment") == 0) f->experiment = v;
        else if (strcmp(a, "--jobs-out") == 0) f->jobsout = v;
        else if (strcmp(a, "--policy") == 0) f->policy = v;
        else if (strcmp(a, "--seed") == 0) {
            if (numarg_long(v, 0, 1L << 40, &o->seed) != 0) return usage("--seed: must be an integer >= 0");
        } else if (strcmp(a, "--round-s") == 0) {
            if (numarg_double(v, 1, 1e6, &o->round_s) != 0) return usage("--round-s: must be a number in [1, 1e6]");
        } else if (strcmp(a, "--min-run-s") == 0) {
            if (numarg_double(v, 0, 1e7, &o->min_run_s) != 0) return usage("--min-run-s: must be a number in [0, 1e7]");
        } else if (strcmp(a, "--restart-cost-s") == 0) {
            if (numarg_double(v, 0, 1e5, &o->restart_cost_s) != 0)
                return usage("--restart-cost-s: must be a number in [0, 1e5]");
        } else if (strcmp(a, "--max-decisions") == 0) {
            if (numarg_long(v, 1, 1000000000L, &o->max_decisions) != 0)
                return usage("--max-decisions: must be an integer in [1, 1e9]");
        } else if (strcmp(a, "--hysteresis") == 0) {
            if (numarg_double(v, 0, 10, &o->hysteresis) != 0) return usage("--hysteresis: must be a number in [0, 10]");
        } else if (strcmp(a, "--grow-past-ask") == 0) {
            if (numarg_double(v, 1, 64, &o->grow_past_ask) != 0)
                return usage("--grow-past-ask: must be a number in [1, 64]");
        } else if (strcmp(a, "--trial-worth") == 0) {
            if (strcmp(v, "rung") != 0 && strcmp(v, "none") != 0) return usage("--trial-worth: must be rung or none");
            o->no_worth = strcmp(v, "none") == 0;
        } else if (strcmp(a, "--grow-overhead") == 0) {
            if (numarg_double(v, 0, 0.99, &o->grow_overhead) != 0)
                return usage("--grow-overhead: must be a number in [0, 0.99]");
        } else {
            snprintf(err, sizeof err, "unknown option '%.60s'", a);
            return usage(err);
        }
    }
    if (!f->cluster || !f->trace == !f->experiment || !f->policy)
        return usage("--cluster, --policy and one of --trace and --experiment are required");
    if (policy_parse_any(f->policy, &o->kind, err, sizeof err) != 0) return usage(err);
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o = {.round_s = 360,
                .min_run_s = 600,
                .restart_cost_s = 30,
                .hysteresis = 0.05,
                .grow_past_ask = 1,
                .grow_overhead = 0.2,
                .max_decisions = 200000,
                .kind = POLICY_FIFO};
    files_t fl = {0};
    int bad = parse_options(argc, argv, &o, &fl);
    if (bad) return bad;
    const char *cluster = fl.cluster, *trace = fl.trace, *jobsout = fl.jobsout;
    char err[512];

    static sched_cluster_t c;
    static sched_exp_t exp;
    sched_job_t *in = NULL;
    sim_t s = {.c = &c};
    size_t len;
    int n = 0, rc = 1;
    char *text = slurp(cluster, SCHED_FILE_MAX, &len, err, sizeof err);
    if (!text || sched_cluster_parse(text, len, cluster, &c, err, sizeof err) != 0) goto fail;
    free(text);
    const char *jobsfile = fl.experiment ? fl.experiment : trace;
    text = slurp(jobsfile, SCHED_FILE_MAX, &len, err, sizeof err);
    if (!text) goto fail;
    if (fl.experiment ? sched_exp_parse(text, len, jobsfile, &c, &exp, &in, &n, err, sizeof err)
                      : sched_trace_parse(text, len, jobsfile, &c, &in, &n, err, sizeof err))
        goto fail;
    s.exp = fl.experiment ? &exp : NULL;
    s.in = in;
    s.n = n;
    s.speed = calloc((size_t)(c.ntypes * c.nclasses), sizeof *s.speed);
    s.j = calloc((size_t)n, sizeof *s.j);
    s.users = calloc((size_t)n, sizeof *s.users);
    s.usage = calloc((size_t)n, sizeof *s.usage);
    snprintf(err, sizeof err, "out of memory");
    if (!s.speed || !s.j || !s.users || !s.usage) goto fail;
    for (int k = 0; k < c.nclasses; k++) {
        s.cls[k] = (policy_class_t){c.classes[k].name, c.classes[k].hosts * c.classes[k].slots};
        s.slots += s.cls[k].slots;
    }
    /* the measured speeds, then the unknown ones estimated from them (policy_speed) */
    for (int t = 0; t < c.ntypes; t++)
        for (int k = 0; k < c.nclasses; k++) s.speed[t * c.nclasses + k] = c.speed[t * PCM + k];
    s.h = (policy_hetero_t){.classes = s.cls,
                            .nclasses = c.nclasses,
                            .ntypes = c.ntypes,
                            .speed = s.speed,
                            .min_run_s = o.min_run_s,
                            .resize_cost_s = o.restart_cost_s,
                            .hysteresis = o.hysteresis,
                            .grow_overhead = o.grow_overhead};
    double *est = calloc((size_t)(c.ntypes * c.nclasses), sizeof *est);
    if (!est) goto fail;
    for (int t = 0; t < c.ntypes; t++)
        for (int k = 0; k < c.nclasses; k++) est[t * c.nclasses + k] = policy_speed(&s.h, t, k);
    free(s.speed);
    s.speed = est;
    s.h.speed = est;
    for (int i = 0; i < n; i++)
        s.j[i] = (sjob_t){.in = &in[i],
                          .user = user_index(&s, in[i].user),
                          .remaining = s.exp ? sched_exp_first(s.exp, i) : in[i].samples,
                          .start = -1,
                          .end = -1,
                          .changed = -INFINITY};
    int sr = simulate(&s, &o);
    if (sr == -2)
        snprintf(
            err, sizeof err,
            "the simulation stopped after %ld decisions (--max-decisions): a longer run needs a larger --max-decisions or --round-s",
            o.max_decisions);
    else snprintf(err, sizeof err, "the simulation stopped: out of memory, or queued jobs that nothing will start");
    if (sr != 0) goto fail;
    json_t *sum = summary(&s, &o);
    char *txt = sum ? json_dumps(sum, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(sum);
    if (!txt) goto fail;
    printf("%s\n", txt);
    free(txt);
    snprintf(err, sizeof err, "%s: cannot be written", jobsout ? jobsout : "");
    if (jobsout && jobs_out(&s, jobsout) != 0) goto fail;
    rc = 0;
fail:
    if (rc) fprintf(stderr, "pacer-sched-sim: %s\n", err);
    free(text);
    for (int i = 0; s.j && i < n; i++) free(s.j[i].seg);
    free(s.j);
    free(s.speed);
    free(s.users);
    free(s.usage);
    free(in);
    sched_exp_free(&exp);
    return rc;
}
