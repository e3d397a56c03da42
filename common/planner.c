/* common/planner.c - see planner.h. */
#include "planner.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define PLANNER_MAX_RANKS 1024

int planner_assign(const double *speed, const int *current, int n, int global_batch, int min_b, int max_b,
                   double hysteresis, int *out)
{
    if (n < 1 || n > PLANNER_MAX_RANKS || global_batch < n) return -1;
    if (min_b < 1) min_b = 1;
    if (max_b <= 0) max_b = global_batch;
    if (max_b < min_b || (long)min_b * n > global_batch || (long)max_b * n < global_batch) return -1;
    double total = 0;
    for (int i = 0; i < n; i++) {
        if (!(speed[i] > 0) || !isfinite(speed[i])) return -1;
        total += speed[i];
    }

    /* Water-filling with clamps: share what is left among the free ranks in proportion to
     * speed; pin the ranks above max_b first (that frees samples for the others), and only
     * when none is above, the ranks below min_b; repeat until nothing new is pinned. */
    double ideal[PLANNER_MAX_RANKS];
    char pinned[PLANNER_MAX_RANKS] = {0};
    double left = global_batch, free_speed = total;
    for (int iter = 0; iter <= 2 * n && free_speed > 0; iter++) {
        for (int i = 0; i < n; i++)
            if (!pinned[i]) ideal[i] = left * speed[i] / free_speed;
        int over = 0, under = 0;
        for (int i = 0; i < n; i++) {
            if (pinned[i]) continue;
            if (ideal[i] > max_b) over = 1;
            if (ideal[i] < min_b) under = 1;
        }
        if (!over && !under) break;
        for (int i = 0; i < n; i++) {
            if (pinned[i]) continue;
            if (over ? ideal[i] > max_b : ideal[i] < min_b) {
                ideal[i] = over ? max_b : min_b;
                pinned[i] = 1;
                left -= ideal[i];
                free_speed -= speed[i];
            }
        }
    }

    /* Largest remainder: floor everything, then give the missing units to the largest
     * fractional parts (ties to the lower rank) among ranks below max_b. */
    int sum = 0;
    for (int i = 0; i < n; i++) {
        out[i] = (int)floor(ideal[i]);
        if (out[i] < min_b) out[i] = min_b;
        if (out[i] > max_b) out[i] = max_b;
        sum += out[i];
    }
    while (sum < global_batch) {
        int best = -1;
        double best_frac = -1;
        for (int i = 0; i < n; i++) {
            if (out[i] >= max_b) continue;
            double frac = ideal[i] - out[i];
            if (frac > best_frac) {
                best_frac = frac;
                best = i;
            }
        }
        if (best < 0) return -1;
        out[best]++;
        sum++;
    }
    while (sum > global_batch) {
        int best = -1;
        double best_frac = 2;
        for (int i = 0; i < n; i++) {
            if (out[i] <= min_b) continue;
            double frac = ideal[i] - out[i];
            if (frac < best_frac) {
                best_frac = frac;
                best = i;
            }
        }
        if (best < 0) return -1;
        out[best]--;
        sum--;
    }

    int differs = 0, significant = 0;
    for (int i = 0; i < n; i++) {
        if (out[i] != current[i]) differs = 1;
        if (current[i] <= 0 || fabs((double)(out[i] - current[i])) / current[i] > hysteresis) significant = 1;
    }
    if (!differs) return 0;
    if (!significant) {
        for (int i = 0; i < n; i++) out[i] = current[i];
        return 0;
    }
    return 1;
}

double planner_speed(double prev, long samples, double compute_wall_s)
{
    if (!(compute_wall_s > 0) || samples <= 0) return prev;
    double v = (double)samples / compute_wall_s;
    return prev > 0 ? (1 - PLANNER_SPEED_WEIGHT) * prev + PLANNER_SPEED_WEIGHT * v : v;
}

double planner_imbalance(const double *speed, const int *batch, int n)
{
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < n; i++) {
        double t = batch[i] / speed[i];
        if (t < lo) lo = t;
        if (t > hi) hi = t;
    }
    return lo > 0 ? hi / lo : INFINITY;
}

void planner_bounds(const job_spec_t *s, int *min_b, int *max_b)
{
    long global = (long)s->workers * s->batch_size;
    *min_b = s->algorithm.min_batch > 0 ? s->algorithm.min_batch : 1;
    if (s->algorithm.max_batch > 0) {
        *max_b = s->algorithm.max_batch;
    } else if (s->algorithm.dynamic_batch || s->algorithm.goodput) {
        long cap = s->batch_size > PLANNER_DERIVED_MAX ? s->batch_size : PLANNER_DERIVED_MAX;
        if (s->algorithm.goodput) global = planner_max_global(s, 0);
        *max_b = (int)(global < cap ? global : cap);
    } else {
        *max_b = s->batch_size;
    }
    /* The starting plan (batch_size each) is always inside, whatever the spec says. */
    if (*min_b > s->batch_size) *min_b = s->batch_size;
    if (*max_b < s->batch_size) *max_b = s->batch_size;
}

int planner_max_global(const job_spec_t *s, long train_n)
{
    long b0 = (long)s->workers * s->batch_size;
    long most = s->algorithm.max_global_batch > 0 ? s->algorithm.max_global_batch : GOODPUT_DERIVED_FACTOR * b0;
    if (train_n > 0 && most > train_n) most = train_n;
    if (most < b0) most = b0;
    return most > INT_MAX ? INT_MAX : (int)most;
}

void planner_bounds_world(const job_spec_t *s, int n, int *min_b, int *max_b)
{
    planner_bounds(s, min_b, max_b);
    if (n < 1) return;
    long global = (long)s->workers * s->batch_size;
    long share = (global + n - 1) / n;
    if (*max_b < share) *max_b = (int)share;
}

void planner_even(int global, int n, int *out)
{
    for (int i = 0; i < n; i++) out[i] = global / n + (i < global % n ? 1 : 0);
}

int planner_replan(const double *speed, const int *current, int n, int global_batch, int min_b, int max_b, int *out)
{
    if (n < 1 || n > PLANNER_MAX_RANKS) return -1;
    for (int i = 0; i < n; i++)
        if (!(speed[i] > 0) || !isfinite(speed[i]) || current[i] < 1) return -1;
    if (planner_imbalance(speed, current, n) <= 1.0 + PLANNER_IMBALANCE) {
        for (int i = 0; i < n; i++) out[i] = current[i];
        return 0;
    }
    return planner_assign(speed, current, n, global_batch, min_b, max_b, 0.0, out);
}

int planner_check(const int *plan, int n, int global_batch, int min_b, int max_b, char *err, size_t errlen)
{
    long sum = 0;
    for (int i = 0; i < n; i++) {
        if (plan[i] < min_b || plan[i] > max_b) {
            snprintf(err, errlen, "batch %d of worker %d is outside [%d, %d] (algorithm.min_batch, max_batch)", plan[i],
                     i, min_b, max_b);
            return -1;
        }
        sum += plan[i];
    }
    if (sum != global_batch) {
        snprintf(err, errlen, "the %d batches sum to %ld, not to the global batch %d (workers x batch_size)", n, sum,
                 global_batch);
        return -1;
    }
    return 0;
}
