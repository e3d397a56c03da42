/* worker/algo.c - the table of training algorithms built into this worker, and the loop
 * of one step's stages. Adding an algorithm is one file with an algo_ops_t and one row
 * here. */
#include "algo.h"

#include <math.h>
#include <string.h>

#include "phase.h"

extern const algo_ops_t algo_sgd, algo_ssgd, algo_local_sgd, algo_hier_bsp, algo_hpsgd;
extern const algo_ops_t algo_asgd, algo_dbs_sgd, algo_nsoftsync, algo_dc_asgd, algo_ddc_asgd;

static const algo_ops_t *const ALGOS[] = {
    &algo_sgd,  &algo_ssgd,    &algo_local_sgd, &algo_hier_bsp, &algo_hpsgd,
    &algo_asgd, &algo_dbs_sgd, &algo_nsoftsync, &algo_dc_asgd,  &algo_ddc_asgd,
};

const algo_ops_t *algo_find(const char *name)
{
    for (size_t i = 0; i < sizeof ALGOS / sizeof ALGOS[0]; i++)
        if (strcmp(ALGOS[i]->name, name) == 0) return ALGOS[i];
    return NULL;
}

int algo_step(worker_t *w)
{
    step_phases_t *p = &w->phases;
    algo_step_t s = {.loss = NAN, .scale = 1.0f, .sumsq = 0.0};
    int rc = 0;
    for (const algo_stage_t *st = w->algo->step; st < w->algo->step + ALGO_STAGES && st->run; st++) {
        if (rc & ALGO_SKIP) phase_relabel(p, st->phase);
        else if (st->phase != p->cur) phase_switch(p, st->phase);
        if ((rc = st->run(w, &s)) < 0) return rc;
        if (rc & ALGO_MERGED) phase_event(p, STEP_EV_MERGE);
        if (rc & ALGO_END) break;
    }
    /* what the loop does after the step (its counters, the record) is bookkeeping */
    if (rc & ALGO_SKIP) phase_relabel(p, PHASE_OTHER);
    else phase_switch(p, PHASE_OTHER);
    return 0;
}
