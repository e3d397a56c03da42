/* worker/algo.h - the table of training algorithms built into this worker (algo.c): each
 * is one file with an algo_ops_t (worker.h) and one row of the table. */
#ifndef PACER_ALGO_H
#define PACER_ALGO_H

#include "worker.h"

/* The algorithm of that name (the spec's algorithm.name), or NULL. */
const algo_ops_t *algo_find(const char *name);

#endif
