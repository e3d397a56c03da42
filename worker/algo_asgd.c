/* worker/algo_asgd.c - "asgd" (Downpour-style asynchronous SGD, ALGORITHMS.md section 2)
 * and "dbs-sgd" (section 6: asgd with performance-aware dynamic batch sizes; the PS plans
 * batches from the workers' measured speeds and scales each push by b_i / mean(b), which
 * ps.c applies for every algorithm when dynamic batching is on).
 * The update: w = w - eta * g with the PS's momentum and weight decay; t = t + 1.
 * algorithm.tau_max > 0 drops gradients staler than it. */
#include "ps.h"
#include "step.h"

static int ps_rule_asgd_apply(ps_t *ps, int m, float *g, float scale, int64_t tau)
{
    (void)m;
    int tau_max = ps->w->spec->algorithm.tau_max;
    if (tau_max > 0 && tau > tau_max) return -1;
    worker_apply_gradient(ps->w, g, scale);
    return 1;
}

static const ps_rule_t RULE_ASGD = {.name = "asgd", .apply = ps_rule_asgd_apply};

static int asgd_run(worker_t *w) { return ps_run(w, &RULE_ASGD); }

const algo_ops_t algo_asgd = {.name = "asgd", .run = asgd_run};
const algo_ops_t algo_dbs_sgd = {.name = "dbs-sgd", .run = asgd_run};
