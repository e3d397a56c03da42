/* worker/algo.c - the table of training algorithms built into this worker. Adding an
 * algorithm is one file with an algo_ops_t and one row here. */
#include <string.h>

#include "worker.h"

extern const algo_ops_t algo_sgd, algo_ssgd, algo_local_sgd, algo_hier_bsp, algo_hpsgd;

static const algo_ops_t *const ALGOS[] = {
    &algo_sgd, &algo_ssgd, &algo_local_sgd, &algo_hier_bsp, &algo_hpsgd,
};

const algo_ops_t *algo_find(const char *name)
{
    for (size_t i = 0; i < sizeof ALGOS / sizeof ALGOS[0]; i++)
        if (strcmp(ALGOS[i]->name, name) == 0) return ALGOS[i];
    return NULL;
}
