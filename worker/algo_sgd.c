/* worker/algo_sgd.c - "sgd": single-process minibatch SGD, the reference every distributed
 * algorithm is compared with. One step: batch, gradient, update. */
#include "step.h"
#include "worker.h"

static int sgd_grad(worker_t *w, algo_step_t *s)
{
    s->loss = worker_compute_grad(w, 1.0f);
    return 0;
}

static int sgd_apply(worker_t *w, algo_step_t *s)
{
    worker_apply_local_update(w);
    /* Each update is applied to the weights its gradient was computed on: staleness 0,
     * counted as ssgd counts it (a count of 0 would read as "nothing measured"). */
    staleness_add(&w->staleness, 0);
    return 0;
}

const algo_ops_t algo_sgd = {
    .name = "sgd",
    .step = {{PHASE_DATA, worker_batch_stage}, {PHASE_COMPUTE, sgd_grad}, {PHASE_OPTIMIZER, sgd_apply}},
};
