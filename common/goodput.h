/* common/goodput.h - the goodput planner: which global batch, which split over the nodes,
 * and which nodes take part, from measured node speeds and the gradient noise scale.
 *
 * Beside the dynamic-batching rule of planner.h (the default, which keeps the spec's
 * global batch), algorithm.goodput picks the global batch B in [B0, max_global_batch]
 * (B0 = workers x batch_size) that maximises goodput (Pollux, OSDI 2021):
 *     goodput(B) = throughput(B) x E(B),   E(B) = (phi + B0) / (phi + B)   (gns.h)
 * throughput(B) = B / step(B), the step predicted from a model of every node, not of an
 * average replica (AdaptDL's model, kept as the `equal` variant for comparison):
 *     step = max over taking-part nodes i of (a_i + c_i b_i)  +  fixed_s
 * with a_i + c_i b the node's compute time for a local batch b (goodput_fit_*, fitted
 * from its own steps) and fixed_s the rest of the step, measured (the collective, the
 * optimizer update). The split gives each node the b_i that makes every node's compute
 * end together (water-filling on the compute time, clamped to [min_b, max_b], then
 * rounded by largest remainder). A node is left out (batch 0) when the best plan without
 * it has a higher goodput than the best plan with it: candidates are the node set minus
 * its slowest 0, 1, ... nodes (slowest per sample first), `pinned` (rank 0, which
 * evaluates, checkpoints and decides the time budget) always taking part.
 *
 * The collective's time is taken as the same with fewer nodes: a left-out rank still
 * joins the step's allreduce (with an empty contribution, worker/goodput.c), so leaving
 * a node out saves its compute, never its link.
 *
 * Pure functions of their input: the worker (rank 0 at each re-plan point) and pacer-sim's
 * what-if share them, and tests/unit/test_goodput.c drives them with scripted models.
 */
#ifndef PACER_GOODPUT_H
#define PACER_GOODPUT_H

#include <stddef.h>

#define GOODPUT_MAX_NODES 1024
/* Candidate global batches per node set: a geometric grid between the bounds (both ends
 * included), as AdaptDL samples 50. */
#define GOODPUT_GRID 64
/* Hysteresis: a new plan replaces the one in force only when its predicted goodput is
 * more than this much (relative) above the current plan's, under the same models, so
 * measurement noise and a drifting noise-scale estimate do not make the batch flap. */
#define GOODPUT_HYSTERESIS 0.05
/* Weight kept per observation by a node's compute fit: about 50 steps of memory, so the
 * batches before and after a re-plan are both in it. */
#define GOODPUT_FIT_DECAY 0.98

/* ---- a node's compute model ------------------------------------------------------------ */

typedef struct {
    double s0, sb, sbb, st, sbt; /* decayed sums of 1, b, b^2, t, b t */
} goodput_fit_t;

/* One step's compute: b samples took t seconds (ignored unless b > 0 and t > 0). */
void goodput_fit_add(goodput_fit_t *f, int b, double t);
/* The fitted a (>= 0) and c (> 0): least squares over the observations; when they span
 * too narrow a range of batches to separate the two (under 5%), or the fit's a is
 * negative, a line through the origin (a = 0: no per-step cost is promised that was not
 * measured, so a larger batch is never predicted to be cheaper per sample on a guess).
 * Returns 0, or -1 when there is no observation. */
int goodput_fit_get(const goodput_fit_t *f, double *a, double *c);

/* ---- the planner ----------------------------------------------------------------------- */

typedef struct {
    int n;               /* nodes (workers) */
    const double *a, *c; /* (n) compute model per node: a >= 0, c > 0 */
    double fixed_s;      /* per-step time outside compute (>= 0) */
    double phi;          /* noise scale; NAN: not measured yet (E(B) = B0 / B above B0) */
    int b0;              /* the spec's global batch */
    int max_global;      /* algorithm.max_global_batch (>= b0) */
    int min_b, max_b;    /* a taking-part node's batch bounds (1 <= min_b <= max_b) */
    int pinned;          /* a node that always takes part; -1: none */
    int equal;           /* AdaptDL's model: every node takes part, split evenly */
} goodput_in_t;

typedef struct {
    int global;        /* sum of the batches */
    int active;        /* nodes taking part */
    double step_s;     /* predicted step time */
    double throughput; /* samples per second */
    double efficiency; /* E(B) */
    double gain;       /* AdaScale's r = (B / B0) E(B) */
    double goodput;    /* throughput x efficiency */
} goodput_eval_t;

/* The predicted figures of a plan (batch (n), 0 = left out; the equal model's step is
 * the slowest node's, which an even split makes the truth). Returns 0, or -1 when no
 * node takes part or a figure cannot be computed. */
int goodput_evaluate(const goodput_in_t *in, const int *batch, goodput_eval_t *ev);

/* The best plan into out (n): returns 0, or -1 on invalid input (n out of range, a model
 * that is not finite and positive, bounds that cannot hold B0 even with every node). */
int goodput_plan(const goodput_in_t *in, int *out, goodput_eval_t *ev);

/* At a re-plan point: the best plan replaces current (n) when its goodput beats
 * current's by more than GOODPUT_HYSTERESIS, or current is not a valid plan (returns 1);
 * else out = current (returns 0). ev: the figures of what out holds. -1 on invalid input. */
int goodput_replan(const goodput_in_t *in, const int *current, int *out, goodput_eval_t *ev);

/* Why node i is left out of plan (batch[i] == 0): one line with its speed and the best
 * goodput with it against the plan's. Returns 0, or -1 when it takes part. */
int goodput_reason(const goodput_in_t *in, const int *batch, int i, char *buf, size_t len);

#endif
