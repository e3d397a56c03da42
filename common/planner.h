/* common/planner.h - dynamic batch sizing: one pure function, shared by the coordinator
 * (which normally assigns batches through Redis) and the workers (which plan for
 * themselves when they run without a coordinator).
 *
 * From measured per-rank speeds (EWMA samples per second of compute) it gives each rank a
 * batch proportional to its speed, so every rank's iteration takes about the same time,
 * while the global batch stays fixed (the learning-rate schedule does not change):
 *   ideal_i = B * v_i / sum(v);  b_i = largest-remainder rounding of ideal, sum(b) = B;
 *   clamped to [min_b, max_b] with the excess or deficit redistributed.
 * Hysteresis: when every rank's new batch is within `hysteresis` (relative) of its current
 * one, the current plan is kept, so measurement noise does not make the plan flap.
 */
#ifndef PACER_PLANNER_H
#define PACER_PLANNER_H

#include <stddef.h>

#include "spec.h"

/* speed (n) > 0, current (n) the plan in force (sum = global_batch), min_b >= 1,
 * max_b >= min_b (0 = no upper bound). Writes out (n). Returns 1 when out differs from
 * current, 0 when the current plan is kept (out = current), -1 on invalid input (n < 1,
 * a speed that is not positive and finite, or bounds that cannot hold global_batch). */
int planner_assign(const double *speed, const int *current, int n, int global_batch, int min_b, int max_b,
                   double hysteresis, int *out);

/* Node speed, the one figure the worker's planner, the coordinator's plans and profiles
 * (through the node hash's samples_per_s) and the dashboard all use: samples per
 * wall-clock second of the step's compute (forward, backward, on a GPU the device
 * synchronisation that ends the step, and an emulated slowdown's wait), as an EWMA over
 * steps with weight PLANNER_SPEED_WEIGHT for the newest. Wall clock, not CPU time: a rank
 * whose core is shared, or a host thread waiting for its GPU, is as slow as the wall
 * clock says. prev <= 0 starts the average. Returns prev when the step took no time. */
#define PLANNER_SPEED_WEIGHT 0.3
double planner_speed(double prev, long samples, double compute_wall_s);

/* Predicted imbalance of a plan: max over ranks of b_i / v_i divided by the min. */
double planner_imbalance(const double *speed, const int *batch, int n);

/* ---- the dynamic-batching rule (ALGORITHMS.md sections 6 and 7) -----------------------
 * One rule, used by the worker (worker_replan: ranks and the parameter server planning
 * for themselves) and by the coordinator (coordinator/dynbatch.c), so the two never
 * disagree about bounds or about when a plan is worth changing. */

/* The job's batch bounds, "0 = derived": min = algorithm.min_batch, or 1; max =
 * algorithm.max_batch, or with dynamic batching the global batch (one rank may take
 * it all) capped at max(batch_size, PLANNER_DERIVED_MAX), else batch_size. The spec
 * validator keeps min <= batch_size <= max, so the starting plan is inside. The worker
 * sizes its batch buffers for max, so no accepted plan can overrun them. */
#define PLANNER_DERIVED_MAX 4096
void planner_bounds(const job_spec_t *s, int *min_b, int *max_b);
/* The largest global batch the goodput planner may choose: algorithm.max_global_batch, or
 * GOODPUT_DERIVED_FACTOR x workers x batch_size; at most train_n (the training samples,
 * when known: > 0), never below workers x batch_size. With algorithm.goodput, planner_bounds'
 * derived per-worker max is derived from it as dynamic batching's is from the global batch. */
#define GOODPUT_DERIVED_FACTOR 8
int planner_max_global(const job_spec_t *s, long train_n);
/* planner_bounds for a run of n workers, which may be fewer than the spec's (an elastic
 * restart on the hosts that remain): the global batch stays workers x batch_size, so
 * max grows to ceil(global / n) where it is smaller (each worker holds its share of the
 * even split). n = s->workers gives planner_bounds. */
void planner_bounds_world(const job_spec_t *s, int n, int *min_b, int *max_b);
/* The even split of global over n into out[n]: global / n each, the first global % n one
 * more. The plan of a run that has no other (a start, an elastic restart). */
void planner_even(int global, int n, int *out);

/* Re-plan trigger and hysteresis: the plan in force is kept while its predicted
 * imbalance (planner_imbalance) is at most 1 + PLANNER_IMBALANCE; beyond that the
 * planner's plan (no further hysteresis) replaces it. The 5% band is the hysteresis:
 * measurement noise inside it never moves a plan. */
#define PLANNER_IMBALANCE 0.05
/* Applies the rule at a re-plan point: returns 1 with out (n) the new plan, 0 when the
 * current plan stays (out = current), -1 on invalid input (as planner_assign). */
int planner_replan(const double *speed, const int *current, int n, int global_batch, int min_b, int max_b, int *out);

/* Whether a plan from outside (the coordinator's assignment, --batch-plan) may be used:
 * n entries, each in [min_b, max_b], summing to global_batch. Returns 0, or -1 with err
 * saying which condition fails. (A checkpoint's plan is held to the same bounds by
 * checkpoint_validate, whose messages name the file's fields.) */
int planner_check(const int *plan, int n, int global_batch, int min_b, int max_b, char *err, size_t errlen);

#endif
