/* common/goodput.c - see goodput.h. */
#include "goodput.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gns.h"
#include "planner.h"

/* ---- a node's compute model ------------------------------------------------------------ */

void goodput_fit_add(goodput_fit_t *f, int b, double t)
{
    if (b <= 0 || !(t > 0) || !isfinite(t)) return;
    const double k = GOODPUT_FIT_DECAY, x = b;
    f->s0 = k * f->s0 + 1;
    f->sb = k * f->sb + x;
    f->sbb = k * f->sbb + x * x;
    f->st = k * f->st + t;
    f->sbt = k * f->sbt + x * t;
}

int goodput_fit_get(const goodput_fit_t *f, double *a, double *c)
{
    if (!(f->s0 > 0) || !(f->sb > 0) || !(f->st > 0)) return -1;
    double mb = f->sb / f->s0, var = f->sbb / f->s0 - mb * mb;
    /* Through the origin unless the batches seen spread by 5% of their mean. */
    *a = 0;
    *c = f->sbt / f->sbb;
    if (var > (0.05 * mb) * (0.05 * mb)) {
        double den = f->s0 * f->sbb - f->sb * f->sb;
        double cc = (f->s0 * f->sbt - f->sb * f->st) / den, aa = (f->st - cc * f->sb) / f->s0;
        if (cc > 0 && aa >= 0 && isfinite(cc) && isfinite(aa)) {
            *a = aa;
            *c = cc;
        }
    }
    return *c > 0 && isfinite(*c) ? 0 : -1;
}

/* ---- the planner ----------------------------------------------------------------------- */

static int valid_input(const goodput_in_t *in)
{
    if (in->n < 1 || in->n > GOODPUT_MAX_NODES || in->b0 < 1 || in->max_global < in->b0) return 0;
    if (in->min_b < 1 || in->max_b < in->min_b || !(in->fixed_s >= 0) || !isfinite(in->fixed_s)) return 0;
    if (in->pinned >= in->n) return 0;
    for (int i = 0; i < in->n; i++)
        if (!(in->a[i] >= 0) || !isfinite(in->a[i]) || !(in->c[i] > 0) || !isfinite(in->c[i])) return 0;
    return 1;
}

int goodput_evaluate(const goodput_in_t *in, const int *batch, goodput_eval_t *ev)
{
    memset(ev, 0, sizeof *ev);
    double compute = 0;
    long global = 0;
    for (int i = 0; i < in->n; i++) {
        if (batch[i] <= 0) continue;
        double t = in->a[i] + in->c[i] * batch[i];
        if (t > compute) compute = t;
        global += batch[i];
        ev->active++;
    }
    double step = compute + in->fixed_s;
    if (ev->active == 0 || !(step > 0) || global > 1L << 30) return -1;
    ev->global = (int)global;
    ev->step_s = step;
    ev->throughput = (double)global / step;
    ev->efficiency = gns_efficiency(in->phi, in->b0, (double)global);
    ev->gain = gns_gain(in->phi, in->b0, (double)global);
    ev->goodput = ev->throughput * ev->efficiency;
    return 0;
}

/* The split of global over the nodes in active (k of them) into out (n, 0 elsewhere):
 * even with the equal model, else the b_i that end every node's compute together, a_i +
 * c_i b_i = T (bisection on T, each b_i clamped to the bounds), rounded by planner.h's
 * largest remainder with the clamped ideal as the "speed". Returns 0, or -1 when the
 * bounds cannot hold global over k nodes. */
static int split(const goodput_in_t *in, const char *active, int k, int global, int *out)
{
    if (k < 1 || (long)k * in->min_b > global || (long)k * in->max_b < global) return -1;
    int idx[GOODPUT_MAX_NODES], part[GOODPUT_MAX_NODES], zero[GOODPUT_MAX_NODES];
    double ideal[GOODPUT_MAX_NODES];
    int m = 0;
    for (int i = 0; i < in->n; i++) {
        out[i] = 0;
        if (active[i]) idx[m++] = i;
    }
    if (in->equal) {
        planner_even(global, k, part);
    } else {
        double lo = 0, hi = 0;
        for (int j = 0; j < k; j++) {
            double t = in->a[idx[j]] + in->c[idx[j]] * in->max_b;
            if (t > hi) hi = t;
        }
        for (int it = 0; it < 100; it++) {
            double mid = 0.5 * (lo + hi), sum = 0;
            for (int j = 0; j < k; j++) {
                double b = (mid - in->a[idx[j]]) / in->c[idx[j]];
                sum += b < in->min_b ? in->min_b : b > in->max_b ? in->max_b : b;
            }
            if (sum < global) lo = mid;
            else hi = mid;
        }
        for (int j = 0; j < k; j++) {
            double b = (hi - in->a[idx[j]]) / in->c[idx[j]];
            ideal[j] = b < in->min_b ? in->min_b : b > in->max_b ? in->max_b : b;
            zero[j] = 0;
        }
        if (planner_assign(ideal, zero, k, global, in->min_b, in->max_b, 0.0, part) < 0) return -1;
    }
    for (int j = 0; j < k; j++) out[idx[j]] = part[j];
    return 0;
}

/* The best global batch for the nodes in active: into out and ev. Returns 0, or -1 when
 * no batch in [b0, max_global] fits their bounds. Ties go to the smaller batch. */
static int best_for_set(const goodput_in_t *in, const char *active, int *out, goodput_eval_t *ev)
{
    int k = 0;
    for (int i = 0; i < in->n; i++) k += active[i] != 0;
    long lo = in->b0 > (long)k * in->min_b ? in->b0 : (long)k * in->min_b;
    long hi = in->max_global < (long)k * in->max_b ? in->max_global : (long)k * in->max_b;
    if (k < 1 || lo > hi) return -1;
    int plan[GOODPUT_MAX_NODES];
    int found = 0, prev = 0;
    for (int g = 0; g <= GOODPUT_GRID; g++) {
        /* lo * (hi / lo)^(g / GRID): both ends exactly, integers in between, each once */
        int b = g == GOODPUT_GRID ? (int)hi
                                  : (int)lround((double)lo * pow((double)hi / (double)lo, (double)g / GOODPUT_GRID));
        if (b < lo) b = (int)lo;
        if (b > hi) b = (int)hi;
        if (found && b <= prev) continue;
        prev = b;
        goodput_eval_t e;
        if (split(in, active, k, b, plan) != 0 || goodput_evaluate(in, plan, &e) != 0) continue;
        if (!found || e.goodput > ev->goodput * (1 + 1e-12)) {
            *ev = e;
            memcpy(out, plan, sizeof *out * (size_t)in->n);
            found = 1;
        }
    }
    return found ? 0 : -1;
}

/* Non-pinned nodes, slowest per sample first (then the larger a, then the higher index):
 * the order in which the planner considers leaving them out. */
static int slowest_first(const goodput_in_t *in, int *order)
{
    int m = 0;
    for (int i = 0; i < in->n; i++)
        if (i != in->pinned) order[m++] = i;
    for (int x = 1; x < m; x++) {
        int v = order[x], y = x - 1;
        while (y >= 0) {
            int u = order[y];
            int after = in->c[u] < in->c[v] ||
                        (in->c[u] == in->c[v] && (in->a[u] < in->a[v] || (in->a[u] == in->a[v] && u < v)));
            if (!after) break;
            order[y + 1] = u;
            y--;
        }
        order[y + 1] = v;
    }
    return m;
}

int goodput_plan(const goodput_in_t *in, int *out, goodput_eval_t *ev)
{
    if (!valid_input(in)) return -1;
    char active[GOODPUT_MAX_NODES];
    int order[GOODPUT_MAX_NODES], plan[GOODPUT_MAX_NODES];
    memset(active, 1, (size_t)in->n);
    int m = in->equal ? 0 : slowest_first(in, order);
    int found = 0;
    /* Leave out the j slowest, j = 0 .. while a node is left; more nodes win ties. */
    for (int j = 0; j <= m; j++) {
        if (j > 0) active[order[j - 1]] = 0;
        if (j == in->n) break;
        goodput_eval_t e;
        if (best_for_set(in, active, plan, &e) != 0) continue;
        if (!found || e.goodput > ev->goodput * (1 + 1e-9)) {
            *ev = e;
            memcpy(out, plan, sizeof *out * (size_t)in->n);
            found = 1;
        }
    }
    return found ? 0 : -1;
}

int goodput_replan(const goodput_in_t *in, const int *current, int *out, goodput_eval_t *ev)
{
    goodput_eval_t best, cur;
    if (goodput_plan(in, out, &best) != 0) return -1;
    /* The plan in force is kept unless it breaks the bounds or is clearly beaten. */
    long sum = 0;
    int ok = 1;
    for (int i = 0; i < in->n; i++) {
        if (current[i] < 0 || (current[i] > 0 && (current[i] < in->min_b || current[i] > in->max_b))) ok = 0;
        if (in->equal && current[i] == 0) ok = 0;
        sum += current[i];
    }
    if (in->pinned >= 0 && current[in->pinned] == 0) ok = 0;
    if (sum < in->b0 || sum > in->max_global) ok = 0;
    if (ok && goodput_evaluate(in, current, &cur) == 0 && best.goodput <= cur.goodput * (1 + GOODPUT_HYSTERESIS)) {
        memcpy(out, current, sizeof *out * (size_t)in->n);
        *ev = cur;
        return 0;
    }
    *ev = best;
    for (int i = 0; i < in->n; i++)
        if (out[i] != current[i]) return 1;
    return 0;
}

int goodput_reason(const goodput_in_t *in, const int *batch, int i, char *buf, size_t len)
{
    if (i < 0 || i >= in->n || batch[i] != 0 || !valid_input(in)) return -1;
    char active[GOODPUT_MAX_NODES];
    int plan[GOODPUT_MAX_NODES];
    double fastest = 0;
    for (int j = 0; j < in->n; j++) {
        active[j] = batch[j] > 0 || j == i;
        if (1 / in->c[j] > fastest) fastest = 1 / in->c[j];
    }
    goodput_eval_t now, with;
    if (goodput_evaluate(in, batch, &now) != 0) return -1;
    int feasible = best_for_set(in, active, plan, &with) == 0;
    char per[64] = "";
    if (in->a[i] > 0) snprintf(per, sizeof per, " and %.3g s per step", in->a[i]);
    if (feasible)
        snprintf(buf, len,
                 "computes %.0f samples/s%s (the fastest node %.0f): with it the best goodput is %.0f samples/s, "
                 "without it %.0f",
                 1 / in->c[i], per, fastest, with.goodput, now.goodput);
    else
        snprintf(buf, len, "computes %.0f samples/s%s (the fastest node %.0f): no batch within the bounds fits with it",
                 1 / in->c[i], per, fastest);
    return 0;
}
