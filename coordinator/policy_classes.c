/* coordinator/policy_classes.c - the class-aware half of the policy module (policy.h,
 * "Host classes"): policy_speed's estimate and policy_plan, which places the jobs
 * policy_decide starts on host classes and, for hetero and agnostic, resizes and moves the
 * running ones. Pure like policy.c: no Redis, no I/O, no clock. A file of its own so that
 * the fifo/fair code paths in policy.c stay as they were.
 *
 * hetero, each round:
 *   1. admission: fair's rules (policy_decide(POLICY_FAIR)) on the slots counted with every
 *      elastic job at its minimum (the running ones that may change, the queued ones); when
 *      every job's remaining work is known (policy_hjob_t.work), within a priority class the
 *      highest response ratio goes first instead of the lowest share (policy_decide_keyed):
 *      (waited + its run time) / its run time, the run time on the slots it asks at its
 *      type's mean speed over the cluster. Themis's finish-time fairness ranks jobs by how far
 *      behind a fair finish they are; the response ratio is that with the share fixed at the
 *      job's ask: a short job that waits falls behind fast and goes first (shortest first,
 *      which mean completion time rewards), a long one ages and is not starved;
 *   2. the "keep" plan: running jobs keep their slots; slots lent past an ask (max_slots)
 *      come back first, then elastic ones past the minimum run time are shrunk (lowest
 *      priority, then largest surplus first) as far as the admitted jobs need; those take
 *      their slots one at a time on the free class where one of their slots is worth most;
 *      then elastic jobs grow into the slots left (grows_after's order), up to max_slots;
 *   3. the "move" plan (hetero only): the same sizes, but every job that may change placed
 *      anew, then improved by exchanging single slots between jobs (and free slots) while
 *      that raises the objective (the sum of normalised throughputs; with every work known,
 *      each job's weighed by its completion rate, slowest-class speed / work left; and
 *      every term by the job's worth, policy_hjob_t.worth, an ASHA trial's rung): a local
 *      search on the assignment (a transportation problem) that Gavel solves as an LP; the
 *      greedy exchange is exact for two classes and, for a few classes and tens of jobs, a
 *      few hundred exchanges;
 *   4. the move plan wins when it raises the objective by more than the hysteresis times the
 *      moved jobs' own terms of it (a job whose weight is small, a long one, may still move
 *      to the class it gains most on) and the gain over min_run_s pays for their restarts.
 * agnostic is hetero with every slot worth 1: steps 1, 2 and 4 alike, classes first-fit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define EPS 1e-9

static int speed_known(double v) { return v > 0 && isfinite(v); }

double policy_speed(const policy_hetero_t *h, int type, int cls)
{
    if (!h || !h->speed || type < 0 || type >= h->ntypes || cls < 0 || cls >= h->nclasses) return 1;
    const double *row = h->speed + (size_t)type * (size_t)h->nclasses;
    if (speed_known(row[cls])) return row[cls];
    int k = -1; /* the fastest class this type was measured on */
    for (int c = 0; c < h->nclasses; c++)
        if (speed_known(row[c]) && (k < 0 || row[c] > row[k])) k = c;
    if (k < 0) return 1;
    double logsum = 0;
    int n = 0;
    for (int t = 0; t < h->ntypes; t++) {
        const double *o = h->speed + (size_t)t * (size_t)h->nclasses;
        if (speed_known(o[cls]) && speed_known(o[k])) {
            logsum += log(o[cls] / o[k]);
            n++;
        }
    }
    return row[k] * (n ? exp(logsum / n) : 1);
}

double policy_grow_factor(int n, int want, double overhead)
{
    if (!(overhead >= 0 && overhead < 1) || want < 1 || n <= want) return 1;
    return 1 / (1 + overhead * (double)(n - want) / want);
}

void policy_hjob_bounds(policy_hjob_t *j, int want, int least, int most, int usable, int room)
{
    j->elastic = least < want || most > want;
    if (!j->elastic) return;
    j->min_slots = least < room ? least : room;
    j->want = want < usable ? want : usable;
    j->max_slots = most < usable ? most : usable;
}

double policy_alloc_rate(const double *speed, const int *alloc, int nc, int want, double overhead)
{
    double r = 0;
    int n = 0;
    for (int c = 0; c < nc && c < POLICY_CLASSES_MAX; c++) {
        r += alloc[c] * speed[c];
        n += alloc[c];
    }
    return r * policy_grow_factor(n, want, overhead);
}

/* One job in a plan: a running one (running = 1, idx into s->running) or one started now. */
typedef struct {
    int idx, running;
    /* its weight in the objective: 1, or its completion rate per unit of v (hetero with
     * every remaining work known: policy_plan) */
    double w;
    double worth;    /* policy_hjob_t.worth, 1 when not given: multiplies w */
    int pinned;      /* running and changed less than min_run_s ago: keeps its slots */
    int lo, hi;      /* its size bounds in this round */
    int want;        /* its ask: slots beyond it are borrowed (policy_hjob_t.max_slots) */
    double overhead; /* past its ask (policy_hetero_t.grow_overhead) */
    int prio;
    double share;
    const char *id;
    int cur[POLICY_CLASSES_MAX];  /* running: what it holds */
    int a[POLICY_CLASSES_MAX];    /* the plan */
    double v[POLICY_CLASSES_MAX]; /* one slot's worth per class: speed / its slowest class's */
    const char *shrunk_for;       /* the job a shrink admitted */
} pjob_t;

typedef struct {
    int nc;
    int cap[POLICY_CLASSES_MAX];
    const char *name[POLICY_CLASSES_MAX];
} classes_t;

static int total(const int *a, int nc)
{
    int t = 0;
    for (int c = 0; c < nc; c++) t += a[c];
    return t;
}

/* j's speed on a over its speed on as many slots of its slowest class, times that size:
 * what the placement sentences show. */
static double speedup(const pjob_t *j, const int *a, int nc)
{
    return policy_alloc_rate(j->v, a, nc, j->want, j->overhead);
}

/* j's term of the objective on a. */
static double worth(const pjob_t *j, const int *a, int nc) { return j->w * speedup(j, a, nc); }

static double plan_worth(const pjob_t *j, int n, int nc)
{
    double w = 0;
    for (int i = 0; i < n; i++) w += worth(&j[i], j[i].a, nc);
    return w;
}

/* Free slots per class under the plan. */
static void free_slots(const classes_t *cl, const pjob_t *j, int n, int *fr)
{
    for (int c = 0; c < cl->nc; c++) fr[c] = cl->cap[c];
    for (int i = 0; i < n; i++)
        for (int c = 0; c < cl->nc; c++) fr[c] -= j[i].a[c];
}

/* The free class where one more slot is worth most to j (first such: first-fit when all
 * are worth the same); -1 when none is free. */
static int best_free(const pjob_t *j, const int *fr, int nc)
{
    int b = -1;
    for (int c = 0; c < nc; c++)
        if (fr[c] > 0 && (b < 0 || j->v[c] > j->v[b] + EPS)) b = c;
    return b;
}

/* Gives j up to k more slots, each on its best free class; returns how many it got. */
static int take(pjob_t *j, int *fr, int nc, int k)
{
    int got = 0;
    for (; got < k; got++) {
        int c = best_free(j, fr, nc);
        if (c < 0) break;
        j->a[c]++;
        fr[c]--;
    }
    return got;
}

/* The local search: moves one slot of a movable job to a free class, or exchanges one slot
 * between two movable jobs, while that raises the plan's worth. Bounded: each step raises
 * the worth by more than EPS, and the search stops after IMPROVE_WORK pair checks (the
 * plan is valid at every step; a huge cluster only gets a less polished one). */
#define IMPROVE_WORK 2000000L
static void improve(pjob_t *j, int n, const int *movable, int *fr, int nc)
{
    long work = 0;
    for (int changed = 1; changed && work < IMPROVE_WORK;) {
        changed = 0;
        for (int p = 0; p < n && !changed && work < IMPROVE_WORK; p++) {
            if (!movable[p]) continue;
            for (int x = 0; x < nc && !changed; x++) {
                if (!j[p].a[x]) continue;
                for (int y = 0; y < nc && !changed; y++) {
                    if (y == x) continue;
                    if (fr[y] > 0 && j[p].v[y] > j[p].v[x] + EPS) {
                        j[p].a[x]--, j[p].a[y]++, fr[x]++, fr[y]--;
                        changed = 1;
                        break;
                    }
                    work += n;
                    /* a slot's worth to a job: w x v, scaled down past its ask (its size stays) */
                    double wp = j[p].w * policy_grow_factor(total(j[p].a, nc), j[p].want, j[p].overhead);
                    for (int q = 0; q < n && !changed; q++) {
                        if (q == p || !movable[q] || !j[q].a[y]) continue;
                        double wq = j[q].w * policy_grow_factor(total(j[q].a, nc), j[q].want, j[q].overhead);
                        if (wp * (j[p].v[y] - j[p].v[x]) > wq * (j[q].v[y] - j[q].v[x]) + EPS * (wp + wq)) {
                            j[p].a[x]--, j[p].a[y]++, j[q].a[y]--, j[q].a[x]++;
                            changed = 1;
                        }
                    }
                }
            }
        }
    }
}

/* "4 fast + 2 half" into out. */
static void alloc_text(const classes_t *cl, const int *a, char *out, size_t len)
{
    size_t o = 0;
    out[0] = 0;
    for (int c = 0; c < cl->nc && o < len; c++)
        if (a[c]) o += (size_t)snprintf(out + o, len - o, "%s%d %s", o ? " + " : "", a[c], cl->name[c]);
    if (!out[0]) snprintf(out, len, "no slots");
}

/* The order of grows: 1 when a comes after b. Priority first, then the larger weight (with
 * the works known, the job that finishes soonest grows first; else every weight is 1), then
 * fair's share. */
static int grows_after(const pjob_t *a, const pjob_t *b)
{
    if (a->prio != b->prio) return a->prio < b->prio;
    if (a->w != b->w) return a->w < b->w;
    return a->share > b->share + EPS;
}

/* The keep plan (step 2): shrinks for the admitted jobs, their placement, then grows. */
static void plan_keep(const classes_t *cl, const policy_hetero_t *h, pjob_t *j, int n)
{
    int nc = cl->nc, fr[POLICY_CLASSES_MAX], need = 0, avail = 0;
    free_slots(cl, j, n, fr);
    for (int c = 0; c < nc; c++) avail += fr[c] > 0 ? fr[c] : 0;
    const char *first_new = NULL;
    for (int i = 0; i < n; i++)
        if (!j[i].running) {
            need += j[i].lo;
            if (!first_new) first_new = j[i].id;
        }
    /* Shrinks: the victim is a job grown past its ask (pinned or not: those slots were lent
     * while idle), the one of the smallest weight first (it finishes last: the objective
     * loses least); then the unpinned elastic job of the lowest priority, then the largest
     * surplus; it gives up its least valuable slot. */
    while (avail < need) {
        int v = -1;
        for (int i = 0; i < n; i++) {
            int size = total(j[i].a, nc), lent = size - j[i].want;
            if (!j[i].running || size <= j[i].lo || (j[i].pinned && lent <= 0)) continue;
            int vlent = v < 0 ? 0 : total(j[v].a, nc) - j[v].want;
            if (v < 0 || (lent > 0 && (vlent <= 0 || j[i].w < j[v].w - EPS * j[v].w)) ||
                (vlent <= 0 && lent <= 0 &&
                 (j[i].prio < j[v].prio || (j[i].prio == j[v].prio && size - j[i].lo > total(j[v].a, nc) - j[v].lo))))
                v = i;
        }
        if (v < 0) break; /* admission counted only what shrinks free: not reached */
        int w = -1;
        for (int c = 0; c < nc; c++)
            if (j[v].a[c] && (w < 0 || j[v].v[c] < j[v].v[w] - EPS)) w = c;
        j[v].a[w]--;
        fr[w]++;
        avail++;
        j[v].shrunk_for = first_new;
    }
    for (int i = 0; i < n; i++)
        if (!j[i].running) take(&j[i], fr, nc, j[i].lo);
    /* Grows, in grows_after's order (a selection over the few jobs): new jobs take what is free up
     * to their ask; a running one only a step of at least the hysteresis (and one slot)
     * whose gain over min_run_s pays for its restart. */
    int *done = calloc((size_t)n + 1, sizeof *done);
    for (int round = 0; done && round < n; round++) {
        int g = -1;
        for (int i = 0; i < n; i++)
            if (!done[i] && (g < 0 || grows_after(&j[g], &j[i]))) g = i;
        if (g < 0) break;
        done[g] = 1;
        pjob_t *p = &j[g];
        int size = total(p->a, nc), room = p->hi - size;
        if (room <= 0 || (p->running && p->pinned) || (p->running && p->shrunk_for)) continue;
        if (!p->running) {
            take(p, fr, nc, room);
            continue;
        }
        int nfree = 0;
        for (int c = 0; c < nc; c++) nfree += fr[c];
        int step = room < nfree ? room : nfree;
        int least = (int)ceil(h->hysteresis * size);
        if (step < 1 || step < least) continue;
        int before[POLICY_CLASSES_MAX], fr0[POLICY_CLASSES_MAX];
        memcpy(before, p->a, sizeof before);
        memcpy(fr0, fr, sizeof fr0);
        take(p, fr, nc, step);
        double gain = worth(p, p->a, nc) - worth(p, before, nc);
        if (gain * h->min_run_s <= h->resize_cost_s * worth(p, before, nc)) {
            memcpy(p->a, before, sizeof before);
            memcpy(fr, fr0, sizeof fr0);
        }
    }
    /* The new jobs' slots exchanged among them (free of cost: none has started). */
    for (int i = 0; done && i < n; i++) done[i] = !j[i].running;
    if (done) improve(j, n, done, fr, nc);
    free(done);
}

/* The move plan (step 3) from the keep plan's sizes; returns 1 when it should replace it. */
static int plan_move(const classes_t *cl, const policy_hetero_t *h, const pjob_t *keep, pjob_t *j, int n)
{
    int nc = cl->nc, fr[POLICY_CLASSES_MAX];
    int *mov = calloc((size_t)n, sizeof *mov);
    if (!mov) return 0;
    memcpy(j, keep, (size_t)n * sizeof *j);
    for (int i = 0; i < n; i++) {
        mov[i] = !j[i].pinned && !j[i].shrunk_for;
        if (mov[i]) memset(j[i].a, 0, sizeof j[i].a);
    }
    free_slots(cl, j, n, fr);
    for (int i = 0; i < n; i++)
        if (mov[i]) take(&j[i], fr, nc, total(keep[i].a, nc));
    improve(j, n, mov, fr, nc);
    free(mov);
    /* base: the moved jobs' terms in the keep plan, the yardstick of the hysteresis */
    double wk = plan_worth(keep, n, nc), wm = plan_worth(j, n, nc), cost = 0, base = 0;
    for (int i = 0; i < n; i++)
        if (memcmp(j[i].a, keep[i].a, sizeof j[i].a) != 0) {
            base += worth(&keep[i], keep[i].a, nc);
            if (j[i].running) cost += h->resize_cost_s * worth(&keep[i], keep[i].a, nc);
        }
    return wm - wk > (h->hysteresis + EPS) * base && (wm - wk) * h->min_run_s > cost;
}

/* A type's mean speed per slot over the cluster's slots; 0 when it has none. */
static double mean_speed(const classes_t *cl, const policy_hetero_t *h, int type)
{
    double sum = 0;
    int n = 0;
    for (int c = 0; c < cl->nc; c++) {
        sum += cl->cap[c] * policy_speed(h, type, c);
        n += cl->cap[c];
    }
    return n > 0 ? sum / n : 0;
}

static int work_known(const policy_hjob_t *j) { return j->work > 0 && isfinite(j->work); }

/* The admission key (step 1) of every queued job into key: its response ratio, (now -
 * submitted + run) / run, run its work on the slots it asks at its type's mean speed.
 * Returns 0, or -1 when some job's work, submission or speed is unknown (then fair's
 * order, by share, for all). */
static int response_ratios(const classes_t *cl, const policy_state_t *s, double *key)
{
    const policy_hetero_t *h = s->hetero;
    for (int i = 0; i < s->nqueued; i++) {
        const policy_hjob_t *j = &h->queued[i];
        double run = work_known(j) && j->submitted > 0 && isfinite(j->submitted) && j->want > 0
                         ? j->work / (j->want * mean_speed(cl, h, j->type))
                         : NAN;
        if (!(run > 0) || !isfinite(run)) return -1;
        double waited = s->now > j->submitted ? s->now - j->submitted : 0;
        key[i] = (waited + run) / run;
    }
    return 0;
}

/* fifo and fair: the started jobs first-fit over the classes in order. */
static void place_first_fit(policy_kind_t k, const classes_t *cl, const policy_state_t *s, policy_decision_t *out)
{
    const policy_hetero_t *h = s->hetero;
    int fr[POLICY_CLASSES_MAX];
    for (int c = 0; c < cl->nc; c++) fr[c] = cl->cap[c];
    for (int i = 0; i < s->nrunning; i++)
        for (int c = 0; c < cl->nc; c++) fr[c] -= h->running[i].alloc[c];
    for (int i = 0; i < s->nqueued; i++) {
        policy_decision_t *d = &out[i];
        if (!d->start || s->queued[i].bad || s->queued[i].simulated) continue;
        int left = d->world;
        for (int c = 0; c < cl->nc && left > 0; c++) {
            int t = fr[c] < left ? (fr[c] > 0 ? fr[c] : 0) : left;
            d->alloc[c] += t;
            fr[c] -= t;
            left -= t;
        }
        d->alloc[0] += left; /* oversubscribed: the rest share the first class */
        char a[128];
        alloc_text(cl, d->alloc, a, sizeof a);
        snprintf(d->placement, sizeof d->placement, "placed on %s slots: first fit, every slot alike (%s)", a,
                 policy_name(k));
    }
}

/* The plan's outcome into the decisions and the resizes. */
static void plan_out(policy_kind_t k, const classes_t *cl, const pjob_t *j, int n, policy_decision_t *out,
                     policy_resize_t *rz, int *nrz)
{
    int nc = cl->nc;
    for (int i = 0; i < n; i++) {
        const pjob_t *p = &j[i];
        char a[128], b[128];
        alloc_text(cl, p->a, a, sizeof a);
        /* v is 1 on the job's slowest class: its worth over its size is its speed-up */
        int size = total(p->a, nc);
        double mine = speedup(p, p->a, nc);
        if (!p->running) {
            policy_decision_t *d = &out[p->idx];
            memcpy(d->alloc, p->a, sizeof d->alloc);
            d->world = size;
            snprintf(d->placement, sizeof d->placement,
                     "placed on %s slots: %.2fx its speed on %d slot%s of its slowest class (%s)", a,
                     size > 0 ? mine / size : 0, size, size == 1 ? "" : "s", policy_name(k));
            continue;
        }
        if (memcmp(p->a, p->cur, sizeof p->a) == 0) continue;
        policy_resize_t *r = &rz[(*nrz)++];
        r->running = p->idx;
        memcpy(r->alloc, p->a, sizeof r->alloc);
        alloc_text(cl, p->cur, b, sizeof b);
        int was = total(p->cur, nc);
        if (size < was)
            snprintf(r->reason, sizeof r->reason, "shrunk from %s to %s slots to admit %s (%s)", b, a,
                     p->shrunk_for ? p->shrunk_for : "a job", policy_name(k));
        else if (size > p->want)
            snprintf(r->reason, sizeof r->reason, "grown from %s to %s slots onto idle hosts (past its ask of %d) (%s)",
                     b, a, p->want, policy_name(k));
        else if (size > was)
            snprintf(r->reason, sizeof r->reason, "grown from %s to %s slots: slots free (%s)", b, a, policy_name(k));
        else
            snprintf(r->reason, sizeof r->reason,
                     "moved from %s to %s slots: %.2fx its speed on %d slot%s of its slowest class, was %.2fx (%s)", b,
                     a, mine / size, size, size == 1 ? "" : "s", speedup(p, p->cur, nc) / size, policy_name(k));
    }
}

int policy_plan(policy_kind_t k, const policy_state_t *s, policy_decision_t *out, policy_resize_t *rz, int *nrz)
{
    const policy_hetero_t *h = s->hetero;
    *nrz = 0;
    if (!h || h->nclasses < 1 || h->nclasses > POLICY_CLASSES_MAX || !h->classes) return -1;
    if ((s->nrunning > 0 && !h->running) || (s->nqueued > 0 && !h->queued)) return -1;
    classes_t cl = {.nc = h->nclasses};
    int slots = 0;
    for (int c = 0; c < cl.nc; c++) {
        cl.cap[c] = h->classes[c].slots > 0 ? h->classes[c].slots : 0;
        cl.name[c] = h->classes[c].name ? h->classes[c].name : "?";
        slots += cl.cap[c];
    }
    if (k == POLICY_FIFO || k == POLICY_FAIR) {
        int started = policy_decide(k, s, out);
        place_first_fit(k, &cl, s, out);
        return started;
    }
    /* 1. admission: fair on the slots with the elastic jobs that may change at their minimum */
    policy_running_t *run = calloc((size_t)s->nrunning + 1, sizeof *run);
    policy_queued_t *q = calloc((size_t)s->nqueued + 1, sizeof *q);
    pjob_t *j = calloc((size_t)(s->nrunning + s->nqueued) + 1, sizeof *j);
    pjob_t *m = calloc((size_t)(s->nrunning + s->nqueued) + 1, sizeof *m);
    int started = -1, n = 0, weighed = 1;
    if (!run || !q || !j || !m) goto out;
    for (int i = 0; i < s->nrunning; i++) {
        const policy_hjob_t *hj = &h->running[i];
        run[i] = s->running[i];
        int pinned = s->now - hj->changed < h->min_run_s;
        int held = total(hj->alloc, cl.nc);
        /* slots lent past its ask count as free: a waiting job takes them back first */
        if (hj->elastic && pinned && held > hj->want) held = hj->want;
        if (!run[i].simulated) run[i].slots = hj->elastic && !pinned ? hj->min_slots : held;
    }
    for (int i = 0; i < s->nqueued; i++) {
        q[i] = s->queued[i];
        if (h->queued[i].elastic && !q[i].simulated) q[i].world = q[i].min_world = h->queued[i].min_slots;
    }
    policy_state_t st = *s;
    st.running = run;
    st.queued = q;
    st.slots_total = st.slots_usable = slots;
    double *key = calloc((size_t)s->nqueued + 1, sizeof *key);
    if (!key) goto out;
    if (response_ratios(&cl, s, key) == 0)
        started = policy_decide_keyed(&st, key, "response ratio", policy_name(k), out);
    else started = policy_decide(POLICY_FAIR, &st, out);
    free(key);
    if (started < 0) goto out;
    /* the jobs in the plan */
    for (int i = 0; i < s->nrunning + s->nqueued; i++) {
        int r = i < s->nrunning, x = r ? i : i - s->nrunning;
        if (r ? s->running[x].simulated : (!out[x].start || s->queued[x].bad || s->queued[x].simulated)) continue;
        const policy_hjob_t *hj = r ? &h->running[x] : &h->queued[x];
        pjob_t *p = &j[n++];
        p->idx = x;
        p->running = r;
        p->id = r ? s->running[x].id : s->queued[x].id;
        p->prio = r ? s->running[x].priority : s->queued[x].priority;
        p->share = r ? 0 : s->queued[x].share;
        if (r) {
            memcpy(p->cur, hj->alloc, sizeof p->cur);
            memcpy(p->a, hj->alloc, sizeof p->a);
            p->pinned = s->now - hj->changed < h->min_run_s;
        }
        int size = r ? total(hj->alloc, cl.nc) : out[x].world;
        int most = hj->elastic && hj->max_slots > hj->want ? hj->max_slots : hj->want;
        p->want = hj->want;
        p->overhead = h->grow_overhead;
        p->lo = p->hi = size;
        if (hj->elastic && !p->pinned) {
            p->lo = hj->min_slots;
            p->hi = most > size ? most : size;
        } else if (hj->elastic && size > hj->want) p->lo = hj->want; /* pinned: only what it borrowed */
        double slow = 0;
        for (int c = 0; c < cl.nc; c++) {
            double v = policy_speed(h, hj->type, c);
            if (cl.cap[c] > 0 && (slow <= 0 || v < slow)) slow = v;
        }
        for (int c = 0; c < cl.nc; c++)
            p->v[c] = k == POLICY_AGNOSTIC || slow <= 0 ? 1 : policy_speed(h, hj->type, c) / slow;
        /* hetero's weight: the completion rate one unit of v gives, slow / work (1/s) */
        p->w = k == POLICY_HETERO && slow > 0 && work_known(hj) ? slow / hj->work : -1;
        if (p->w < 0) weighed = 0;
        p->worth = k == POLICY_HETERO && hj->worth > 0 && isfinite(hj->worth) ? hj->worth : 1;
    }
    /* Mean completion time rewards the jobs that finish soonest (shortest remaining first on
     * the fastest slots, weighed by what each type gains there): the objective is the sum of
     * the jobs' completion rates, samples/s over remaining samples, when every job's work
     * is known; else the sum of normalised throughputs (every weight 1). */
    for (int i = 0; i < n; i++) j[i].w = (weighed ? j[i].w : 1) * j[i].worth;
    plan_keep(&cl, h, j, n);
    int moved = k == POLICY_HETERO && plan_move(&cl, h, j, m, n);
    plan_out(k, &cl, moved ? m : j, n, out, rz, nrz);
out:
    free(run);
    free(q);
    free(j);
    free(m);
    return started;
}
