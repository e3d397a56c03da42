/* worker/algo_ddc_asgd.c - "ddc-asgd": dynamic delay-compensated ASGD with momentum, the
 * rule pacer implements for the idea of the 2021 thesis (ALGORITHMS.md section 5, [P]):
 *   on pull from m:  w_bak[m] = w
 *   on push (m, g):  tau_avg = 0.95*tau_avg + 0.05*tau;  v = 0.95*v + 0.05*g*g
 *                    c = lambda0/sqrt(v+eps) * g*g*(w - w_bak[m])
 *                    s = min(1, kappa*|g|/(|c|+eps));  g_hat = g + s*c
 *                    eta_tau = eta * min(1, (tau_avg+1)/(tau+1))
 *                    mu_tau  = mu * gamma^max(0, tau - tau_avg)
 *                    u = mu_tau*u - eta_tau*g_hat;  w = w + u
 * (weight decay, when set, is added to g_hat; optimizer.clip_norm clips scale * g_hat,
 * as worker_apply_gradient clips the gradient of the other rules; optimizer.nesterov is
 * refused by the spec validator). tau = 0 gives momentum SGD; lambda0 = 0
 * gives staleness-aware momentum ASGD. The pure pieces live in kernels/cpu/async_ops.c
 * and ddc_step below, which the unit tests call directly. */
#include "algo_ddc_asgd.h"

#include <math.h>
#include <stdlib.h>

#include "ps.h"

typedef struct {
    float *v; /* (np) EWMA of g*g, shared by all workers */
    double tau_avg;
} ddc_t;

void ddc_step(const job_spec_t *s, size_t np, float *w, float *u, const float *w_bak, float *v, double *tau_avg,
              const float *g, float scale, int64_t tau, float eta, float mu, float *scratch)
{
    *tau_avg = 0.95 * *tau_avg + 0.05 * (double)tau;
    ddc_compensate(np, g, w, w_bak, v, (float)s->algorithm.lambda0, (float)s->algorithm.kappa, (float)s->algorithm.eps,
                   scratch);
    if (s->optimizer.clip_norm > 0) {
        float norm = scale * (float)sqrt(sum_squares(np, scratch));
        if (norm > (float)s->optimizer.clip_norm) scale *= (float)s->optimizer.clip_norm / norm;
    }
    double damp = (*tau_avg + 1.0) / ((double)tau + 1.0);
    float eta_tau = eta * (float)(damp < 1.0 ? damp : 1.0);
    double excess = (double)tau - *tau_avg;
    float mu_tau = (float)(mu * pow(s->algorithm.gamma, excess > 0 ? excess : 0));
    momentum_step(np, w, u, scratch, scale, eta_tau, mu_tau, (float)s->optimizer.weight_decay);
}

static int ddc_init(ps_t *ps)
{
    ddc_t *st = calloc(1, sizeof *st);
    if (!st || !(st->v = calloc(ps->np, sizeof(float)))) {
        free(st);
        return -1;
    }
    ps->rule_state = st;
    return 0;
}

static int ddc_apply(ps_t *ps, int m, float *g, float scale, int64_t tau)
{
    ddc_t *st = ps->rule_state;
    const job_spec_t *s = ps->w->spec;
    if (s->algorithm.tau_max > 0 && tau > s->algorithm.tau_max) return -1;
    model_t *mod = ps->w->model;
    /* DDC keeps its momentum in the negative-step form u = mu*u - eta*g in the same
     * momentum buffer the other algorithms use. */
    ddc_step(s, ps->np, mod->params, mod->momentum, ps->w_bak[m], st->v, &st->tau_avg, g, scale, tau, ps->w->lr,
             ps->w->momentum, ps->scratch);
    return 1;
}

static void ddc_fini(ps_t *ps)
{
    ddc_t *st = ps->rule_state;
    if (st) free(st->v);
    free(st);
    ps->rule_state = NULL;
}

static const ps_rule_t RULE = {
    .name = "ddc-asgd",
    .init = ddc_init,
    .apply = ddc_apply,
    .fini = ddc_fini,
    .needs_backup = 1,
};

static int ddc_run(worker_t *w) { return ps_run(w, &RULE); }

const algo_ops_t algo_ddc_asgd = {.name = "ddc-asgd", .run = ddc_run};
