/* worker/algo_sgd.c - "sgd": single-process minibatch SGD, the reference every distributed
 * algorithm is compared with. One step: batch, gradient, update. */
#include "step.h"
#include "worker.h"

static int sgd_step(worker_t *w)
{
    worker_next_batch(w);
    worker_compute_grad(w, 1.0f);
    worker_apply_local_update(w);
    /* Each update is applied to the weights its gradient was computed on: staleness 0,
     * counted as ssgd counts it (a count of 0 would read as "nothing measured"). */
    staleness_add(&w->staleness, 0);
    return 0;
}

const algo_ops_t algo_sgd = {.name = "sgd", .step = sgd_step};
