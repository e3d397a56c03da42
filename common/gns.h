/* common/gns.h - the gradient noise scale, estimated from gradients a step computes anyway.
 *
 * The noise scale (McCandlish, Kaplan, Amodei et al. 2018, "An Empirical Model of
 * Large-Batch Training", B_simple) is phi = tr(Sigma) / |G|^2: Sigma the covariance of one
 * sample's gradient, G the true gradient. A batch much smaller than phi is dominated by
 * noise (doubling it nearly halves the steps needed); one much larger wastes samples.
 *
 * The estimator (their appendix A, generalised as AdaptDL does to several replicas, and
 * here to unequal batches): worker i computes the mean gradient g_i of its b_i samples,
 * so E|g_i|^2 = |G|^2 + tr(Sigma) / b_i; the batch-weighted average g = sum(b_i g_i) / B,
 * B = sum(b_i), has E|g|^2 = |G|^2 + tr(Sigma) / B. With the local figures weighted by
 * their batches, L = sum(b_i |g_i|^2) / B has E[L] = |G|^2 + tr(Sigma) n / B (n workers
 * with b_i > 0), and with T = |g|^2:
 *     tr(Sigma)^ = B (L - T) / (n - 1),      |G|^2^ = T - tr(Sigma)^ / B,
 * both unbiased for any split of B (with equal batches, AdaptDL's estimator). Each needs
 * only sum(b_i |g_i|^2), B and n beside the reduced gradient: ssgd adds them to the
 * spare floats of its fused allreduce (no extra collective). The parameter server, which
 * never holds two gradients of the same weights, pairs consecutive pushes (n = 2): their
 * weights differ by one update, so that estimate is biased by the change in between, as
 * AdaptDL's differenced estimator for one replica is.
 *
 * One step's estimate is very noisy (|G|^2^ is often negative), so the two are smoothed
 * separately (an exponential moving average, GNS_DECAY per base batch of samples: a
 * step of B samples counts B / B0 base batches, so the estimates' mean age is
 * GNS_DECAY / (1 - GNS_DECAY) = 49 base batches whatever the batch; with Adam's bias
 * correction, so the first steps are not pulled toward 0), and phi is the ratio of the
 * averages (a ratio of the two means, not a mean of noisy ratios, which would be biased).
 *
 * The window is a trade (docs/RESULTS.md, bench/gns_check.sh). |G|^2 falls
 * about 20x in LeNet-5's first 200 steps; 0.99 (mean age 99) kept enough of those early
 * values in its tail to report 0.53-0.70 of the direct noise scale of the last 100 steps
 * at step 300, where 0.98 reports 0.83-0.98. A shorter average is noisier: one step's
 * |G|^2^ has a standard deviation about 1.5 x |G|^2 there, so 0.98's ~100 effective
 * estimates leave ~15% (one sd) of noise in phi. The noise scale at one step is no
 * steadier a target: the direct figure moves 2-4x between checkpoints 25 steps apart.
 */
#ifndef PACER_GNS_H
#define PACER_GNS_H

/* Weight kept by the average per base batch of samples (see above). */
#define GNS_DECAY 0.98
/* Samples before phi is reported: fewer estimates than this are mostly noise. */
#define GNS_MIN_SAMPLES 50
/* phi's ceiling when the averaged |G|^2 is not positive (noise dominates entirely): the
 * efficiency of any batch is then ~1, which is what the data say. */
#define GNS_PHI_MAX 1e7

typedef struct {
    double g2;    /* |G|^2 */
    double trace; /* tr(Sigma) */
} gns_sample_t;

/* One step's unbiased estimate from n >= 2 gradients of the same weights: local_sum =
 * sum(b_i |g_i|^2) (g_i the mean gradient of b_i samples), total_sqr = |g|^2 of their
 * batch-weighted mean, batch = B = sum(b_i). Returns 0, or -1 (out untouched) when n < 2,
 * batch <= n - 1 or a figure is not finite. */
int gns_sample(double local_sum, double total_sqr, double batch, int n, gns_sample_t *out);

typedef struct {
    double g2, trace; /* bias-uncorrected averages */
    double weight;    /* 1 - product of the decays so far (Adam's correction) */
    long samples;
} gns_t;

void gns_reset(gns_t *e);
/* Folds one estimate in; batch_ratio = B / B0 (> 0) sets its weight. */
void gns_update(gns_t *e, const gns_sample_t *s, double batch_ratio);
/* The smoothed |G|^2 and tr(Sigma) (bias-corrected); 0 when nothing was folded in. */
double gns_g2(const gns_t *e);
double gns_trace(const gns_t *e);
/* phi = tr(Sigma) / |G|^2 of the averages, in samples; NAN until GNS_MIN_SAMPLES estimates
 * were folded in or when the averaged trace is not positive; GNS_PHI_MAX when |G|^2 is
 * not positive. */
double gns_noise_scale(const gns_t *e);
/* phi as every report shows it (metrics records, Redis, the summary, the API, Prometheus,
 * the dashboard): NAN (null, "not measured") unless it is a measurement. GNS_PHI_MAX is
 * the estimator's stand-in for "|G|^2 not positive", which the planner needs (efficiency
 * ~1 at any batch), not a value: plotted as one it flattens every real value to 0 (issue
 * 42). gns_beyond says when phi is that ceiling, for a report that says "beyond N". */
double gns_reported(double phi);
int gns_beyond(double phi);

/* Statistical efficiency of a batch B against the base batch B0 (Pollux, OSDI 2021):
 * E(B) = (phi + B0) / (phi + B), the progress per sample at B relative to B0; 1 when phi
 * is unknown (NAN) and B = B0. With an unknown phi, B > B0 gets E = B0 / B (no gain
 * assumed: the planner never grows the batch on a guess). */
double gns_efficiency(double phi, double b0, double b);

/* AdaScale's gain for B (Johnson, Agarwal, Wan 2020): r = (B / B0) E(B), in [1, B / B0]:
 * the base-batch steps one step at B is worth, by which the learning rate is scaled and
 * progress counted. */
double gns_gain(double phi, double b0, double b);

#endif
