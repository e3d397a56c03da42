/* worker/algo.c - the table of training algorithms built into this worker. Adding an
 * algorithm is one file with an algo_ops_t and one row here. */
#include "algo.h"

#include <string.h>

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
