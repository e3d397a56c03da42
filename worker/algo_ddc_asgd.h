/* worker/algo_ddc_asgd.h - DDC-ASGD's update (algo_ddc_asgd.c): the parameter server's
 * rule for "ddc-asgd", its whole update for one push exposed for the unit tests. */
#ifndef PACER_ALGO_DDC_ASGD_H
#define PACER_ALGO_DDC_ASGD_H

#include <stddef.h>
#include <stdint.h>

#include "spec.h"

/* DDC-ASGD's whole update for one push (exposed for the unit tests); mu is the momentum in
 * force (worker_t.momentum: optimizer.momentum, or its compensated value). */
void ddc_step(const job_spec_t *s, size_t np, float *w, float *u, const float *w_bak, float *v, double *tau_avg,
              const float *g, float scale, int64_t tau, float eta, float mu, float *scratch);

#endif
