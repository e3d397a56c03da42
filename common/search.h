/* common/search.h - the pure rules of a hyperparameter search (an experiment's "search"
 * object, docs/EXPERIMENTS.md): its parsing, the trial sets of the random and grid
 * methods for a seed, ASHA's rungs and its decision at a rung. No I/O: the coordinator's
 * experiments (coordinator/experiment.c) and the scheduler simulator reuse them, and a
 * unit test (test_search) checks them against scripted metrics.
 *
 * ASHA (Li et al., asynchronous successive halving) in the asynchronous form Ray Tune's
 * AsyncHyperBand uses: rung k is at min_epochs * rf^k epochs (every such value below the
 * spec's epochs, the maximum). When a trial's evaluation at a rung arrives, the cutoff is
 * the (1 - 1/rf) quantile (linear interpolation) of the values recorded at that rung by the
 * trials that reached it before; the trial goes on when its value is at least as good as
 * the cutoff (mode max: >=, mode min: <=), else it stops at that rung. So a trial is
 * promoted only while it is in the top 1/rf of the trials that reached the rung, and the
 * first trial at a rung always goes on (nothing to compare with yet).
 */
#ifndef PACER_SEARCH_H
#define PACER_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define SEARCH_TRIALS_MAX 256 /* trials of one experiment */
#define SEARCH_KEYS_MAX 16    /* searched fields */
#define SEARCH_CHOICES_MAX 64 /* entries of one choice list; values of one int range in a grid */
#define SEARCH_RUNGS_MAX 16   /* ASHA rungs */
#define SEARCH_KEY_MAX 96     /* a searched field's path, "optimizer.lr" */
#define SEARCH_EPOCHS_MAX 100000

typedef enum { SEARCH_RANDOM = 0, SEARCH_GRID, SEARCH_ASHA } search_method_t;
typedef enum { SEARCH_LOG_UNIFORM = 0, SEARCH_UNIFORM, SEARCH_CHOICE, SEARCH_INT } search_dist_t;

typedef struct {
    char key[SEARCH_KEY_MAX]; /* a spec field's path */
    search_dist_t dist;
    double lo, hi;   /* uniform, log_uniform (0 < lo), int (integers, lo <= hi) */
    json_t *choices; /* choice: an array of 1..SEARCH_CHOICES_MAX scalars (owned) */
} search_param_t;

typedef struct {
    search_method_t method;
    int trials;           /* random, asha: as given; grid: the number of combinations */
    int max_concurrent;   /* trials running (or queued) at once; default: all */
    char metric[32];      /* test_accuracy | test_loss | loss */
    int mode_max;         /* 1: larger is better */
    int min_epochs;       /* asha: the first rung (default 1) */
    int reduction_factor; /* asha: rf (default 3) */
    uint64_t seed;        /* random, asha: the draws (default 0) */
    int epochs;           /* the spec's: the most a trial trains */
    int nparams;          /* searched fields, sorted by key */
    search_param_t params[SEARCH_KEYS_MAX];
} search_t;

/* Parses an experiment's "search" object for a spec of epochs epochs. Errors name the
 * field: "search.space.optimizer.lr: log_uniform needs 0 < a < b", "search.method: pbt is
 * not supported (asha, random or grid)". Returns 0, or -1 with err. On success free it
 * with search_free (also safe after a failure). */
int search_parse(const json_t *o, int epochs, search_t *out, char *err, size_t errlen);
void search_free(search_t *s);
/* The search as a normalised object (defaults filled): what an experiment stores and shows. */
json_t *search_to_json(const search_t *s);

/* Every trial's parameters, in trial order: an array of s->trials objects keyed by the
 * searched fields ({"optimizer.lr": 0.0123, "batch_size": 64}). random and asha draw from
 * rng_seed(seed), trial by trial, key by key in sorted key order; uniform and log_uniform
 * values are rounded to 6 significant digits. grid enumerates every combination, the last
 * key (in sorted order) varying fastest. NULL when out of memory. */
json_t *search_trial_params(const search_t *s);

/* ASHA's rungs: the epochs min_epochs * rf^k below s->epochs, into rungs (at most max);
 * returns their count (0 for random and grid). */
int search_rungs(const search_t *s, int *rungs, int max);

/* The (1 - 1/rf) quantile of the n values (numpy's linear interpolation), the values
 * negated first for mode min (so larger is better); non-finite values are left out. Returns
 * 0 and *cutoff, or -1 when no finite value is left. */
int search_cutoff(const double *recorded, int n, int rf, int mode_max, double *cutoff);
/* ASHA's rule: 1 when value, arriving at a rung where the values recorded (earlier
 * arrivals) are given, goes on; 0 when it stops there. A non-finite value always stops. */
int search_asha_continue(const double *recorded, int n, double value, int rf, int mode_max);

/* Sets the value at a dotted path ("optimizer.lr") of a spec document, creating the
 * objects on the way; -1 when a part of the path is not an object. */
int search_apply(json_t *spec, const char *key, json_t *value);

#endif
