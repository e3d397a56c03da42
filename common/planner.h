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

/* speed (n) > 0, current (n) the plan in force (sum = global_batch), min_b >= 1,
 * max_b >= min_b (0 = no upper bound). Writes out (n). Returns 1 when out differs from
 * current, 0 when the current plan is kept (out = current), -1 on invalid input (n < 1,
 * a speed that is not positive and finite, or bounds that cannot hold global_batch). */
int planner_assign(const double *speed, const int *current, int n, int global_batch,
                   int min_b, int max_b, double hysteresis, int *out);

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

#endif
