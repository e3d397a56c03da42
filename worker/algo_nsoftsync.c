/* worker/algo_nsoftsync.c - "nsoftsync" (Zhang et al. 2016, ALGORITHMS.md section 3).
 * With lambda workers and split n, the PS applies an update once it holds
 * c = floor(lambda / n) gradients: w = w - (1/c) * sum_l alpha(tau_l) * g_l with
 * alpha(tau) = alpha0 / max(tau, 1) (alpha0 = the learning rate in force; momentum and
 * weight decay as the PS's optimizer). Versions count aggregated updates, so tau does.
 * As in the paper, learners never wait for each other: a learner whose gradient is held
 * for the aggregate gets the current weights at once and computes its next gradient, so
 * with equal speeds each learner's gradient is about n aggregated updates stale (between
 * its read and its next push the other learners push lambda - 1 gradients, about n
 * aggregates). n = 1 is hard sync instead (the paper's 1-softsync learners wait for the
 * aggregate): the PS holds their replies until it is applied, staleness is 0, and it
 * equals ssgd. n = lambda is asgd with the staleness-scaled rate. */
#include <stdlib.h>
#include <string.h>

#include "ps.h"
#include "step.h"

typedef struct {
    int c;      /* gradients per update */
    int held;   /* gradients in acc */
    float *acc; /* (np) sum of alpha(tau)/alpha0 * scale * g */
} softsync_t;

static int ns_init(ps_t *ps)
{
    softsync_t *st = calloc(1, sizeof *st);
    if (!st) return -1;
    st->c = ps->n / ps->w->spec->algorithm.n;
    if (st->c < 1) st->c = 1;
    if (!(st->acc = calloc(ps->np, sizeof(float)))) {
        free(st);
        return -1;
    }
    ps->rule_state = st;
    ps->group = st->c;
    ps->hold_replies = ps->w->spec->algorithm.n <= 1;
    return 0;
}

static int ns_apply(ps_t *ps, int m, float *g, float scale, int64_t tau)
{
    (void)m;
    softsync_t *st = ps->rule_state;
    int tau_max = ps->w->spec->algorithm.tau_max;
    if (tau_max > 0 && tau > tau_max) return -1;
    /* alpha(tau) / alpha0 folded into the accumulation; alpha0 is applied by the update. */
    float a = scale * ps_softsync_alpha(1.0f, tau);
    for (size_t i = 0; i < ps->np; i++) st->acc[i] += a * g[i];
    if (++st->held < st->c) return 0;
    worker_apply_gradient(ps->w, st->acc, 1.0f / (float)st->c);
    memset(st->acc, 0, ps->np * sizeof(float));
    st->held = 0;
    return 1;
}

static int ns_flush(ps_t *ps)
{
    softsync_t *st = ps->rule_state;
    if (st->held == 0) return 0;
    worker_apply_gradient(ps->w, st->acc, 1.0f / (float)st->held);
    memset(st->acc, 0, ps->np * sizeof(float));
    st->held = 0;
    return 1;
}

static void ns_fini(ps_t *ps)
{
    softsync_t *st = ps->rule_state;
    if (st) free(st->acc);
    free(st);
    ps->rule_state = NULL;
}

static const ps_rule_t RULE = {
    .name = "nsoftsync",
    .init = ns_init,
    .apply = ns_apply,
    .flush = ns_flush,
    .fini = ns_fini,
};

static int ns_run(worker_t *w) { return ps_run(w, &RULE); }

const algo_ops_t algo_nsoftsync = {.name = "nsoftsync", .run = ns_run};
