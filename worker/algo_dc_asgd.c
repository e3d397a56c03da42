/* worker/algo_dc_asgd.c - "dc-asgd" (Zheng et al. 2017, ALGORITHMS.md section 4).
 * The PS keeps w_bak[m] = the weights worker m last read; a push g from m is compensated
 *   g_dc = g + lambda_t * g*g*(w - w_bak[m])
 * with lambda_t = lambda0 (variant "c") or lambda0 / sqrt(MS_m + eps) where
 * MS_m = m*MS_m + (1-m)*g*g is kept per worker (variant "a", as Multiverso does; not
 * MXNet's one-w_prev-per-parameter shortcut, which only compensates the last step). Then
 * the usual update with the PS's momentum and weight decay. Memory: (M+1)|w| at the PS
 * (2M+1 with variant a). */
#include <stdlib.h>

#include "ps.h"
#include "step.h"

typedef struct {
    float **ms;
} dc_t; /* (n)(np) variant a */

static int dc_init(ps_t *ps)
{
    dc_t *st = calloc(1, sizeof *st);
    if (!st) return -1;
    ps->rule_state = st;
    if (ps->w->spec->algorithm.dc_variant[0] == 'a') {
        if (!(st->ms = calloc((size_t)ps->n, sizeof *st->ms))) return -1;
        for (int m = 0; m < ps->n; m++)
            if (!(st->ms[m] = calloc(ps->np, sizeof(float)))) return -1;
    }
    return 0;
}

static int dc_apply(ps_t *ps, int m, float *g, float scale, int64_t tau)
{
    dc_t *st = ps->rule_state;
    const job_spec_t *s = ps->w->spec;
    if (s->algorithm.tau_max > 0 && tau > s->algorithm.tau_max) return -1;
    const float *w = ps->w->model->params;
    if (st->ms)
        dc_compensate_adaptive(ps->np, g, w, ps->w_bak[m], st->ms[m], (float)s->algorithm.dc_m,
                               (float)s->algorithm.lambda0, (float)s->algorithm.eps, ps->scratch);
    else dc_compensate(ps->np, g, w, ps->w_bak[m], (float)s->algorithm.lambda0, ps->scratch);
    worker_apply_gradient(ps->w, ps->scratch, scale);
    return 1;
}

static void dc_fini(ps_t *ps)
{
    dc_t *st = ps->rule_state;
    if (st && st->ms) {
        for (int m = 0; m < ps->n; m++) free(st->ms[m]);
        free(st->ms);
    }
    free(st);
    ps->rule_state = NULL;
}

static const ps_rule_t RULE = {
    .name = "dc-asgd",
    .init = dc_init,
    .apply = dc_apply,
    .fini = dc_fini,
    .needs_backup = 1,
};

static int dc_run(worker_t *w) { return ps_run(w, &RULE); }

const algo_ops_t algo_dc_asgd = {.name = "dc-asgd", .run = dc_run};
