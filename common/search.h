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
 *
 * PBT (Jaderberg et al., population-based training, as Ray Tune's PopulationBasedTraining
 * decides): its perturbation points are the epochs interval * k below the spec's epochs
 * (kept in the rungs). When a trial's evaluation at a point arrives, it is ranked among the
 * values the other trials recorded there (ties: the trial arriving ranks after them); when
 * it is in the bottom ceil(quantile * m) of those m values (at most m / 2), it exploits a
 * trial drawn from the top as many that did strictly better (search_pbt_exploit) and
 * explores: each searched value of that trial multiplied by 0.8 or 1.2, or a choice moved to
 * a neighbour (or, one time in four, drawn again) (search_pbt_explore). Both draws come
 * from the seed, the trial and the point: the same arrivals give the same decisions.
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
#define SEARCH_PBT_RESAMPLE 0.25 /* pbt: how often a choice is drawn again instead of moved */

typedef enum { SEARCH_RANDOM = 0, SEARCH_GRID, SEARCH_ASHA, SEARCH_PBT } search_method_t;
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
    uint64_t seed;        /* random, asha, pbt: the draws (default 0) */
    int interval;         /* pbt: epochs between perturbation points (default 1) */
    double quantile;      /* pbt: the bottom (and top) fraction, (0, 0.5] (default 0.25) */
    int epochs;           /* the spec's: the most a trial trains */
    int nparams;          /* searched fields, sorted by key */
    search_param_t params[SEARCH_KEYS_MAX];
} search_t;

/* Parses an experiment's "search" object for a spec of epochs epochs. Errors name the
 * field: "search.space.optimizer.lr: log_uniform needs 0 < a < b". A pbt search searches
 * only optimizer fields but optimizer.kind (a trial goes on from another's checkpoint,
 * which must fit its model and batches) and needs a perturbation point before the last
 * epoch, at most SEARCH_RUNGS_MAX of them. Returns 0, or -1 with err. On success free it
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

/* ASHA's rungs: the epochs min_epochs * rf^k below s->epochs; PBT's perturbation points:
 * interval * k below s->epochs; into rungs (at most max); returns their count (0 for
 * random and grid). */
int search_rungs(const search_t *s, int *rungs, int max);

/* The (1 - 1/rf) quantile of the n values (numpy's linear interpolation), the values
 * negated first for mode min (so larger is better); non-finite values are left out. Returns
 * 0 and *cutoff, or -1 when no finite value is left. */
int search_cutoff(const double *recorded, int n, int rf, int mode_max, double *cutoff);
/* ASHA's rule: 1 when value, arriving at a rung where the values recorded (earlier
 * arrivals) are given, goes on; 0 when it stops there. A non-finite value always stops. */
int search_asha_continue(const double *recorded, int n, double value, int rf, int mode_max);

/* PBT's exploit: trial `self`'s value arrives at perturbation point `point` where the
 * other trials recorded values[k] (trial index trials[k], n of them; non-finite ones are
 * left out). Returns the trial it continues from, or -1 when it goes on as it is (not in
 * the bottom quantile, fewer than 2 values to rank, or nobody strictly better). A
 * non-finite value ranks below every finite one. */
int search_pbt_exploit(const search_t *s, const double *values, const int *trials, int n, int self, double value,
                       int point);
/* PBT's explore: the params of the donor (an object keyed by the searched fields) perturbed
 * for trial `self` at point `point`: uniform, log_uniform and int values times 0.8 or 1.2
 * (int rounded), clipped to the space's bounds, reals rounded to 6 significant digits;
 * a choice moves to the neighbour below or above (clipped at the ends) or, with
 * probability SEARCH_PBT_RESAMPLE, is drawn again. NULL when out of memory. */
json_t *search_pbt_explore(const search_t *s, const json_t *donor, int self, int point);

/* Sets the value at a dotted path ("optimizer.lr") of a spec document, creating the
 * objects on the way; -1 when a part of the path is not an object. */
int search_apply(json_t *spec, const char *key, json_t *value);

#endif
