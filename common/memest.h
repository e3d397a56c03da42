/* common/memest.h - how much memory one rank of a job needs: the one estimate the
 * coordinator admits jobs by (422 at submission when a host cannot hold its ranks) and
 * the worker checks before it allocates (a clear refusal instead of an OOM kill).
 *
 * A rank holds (worker/train.c, model/model.c):
 *   model    parameters, gradients and momentum (3 x nparams floats, + MODEL_GRAD_EXTRA),
 *            batch-norm buffers, the saved statistics and the conv workspace (which do not
 *            grow with the batch);
 *   batch    for the largest batch it may be planned (planner_bounds): both activation
 *            arenas (output and its gradient), maxpool argmax, softmax probabilities, the
 *            batch's inputs and labels and the worker's per-batch tables;
 *   data     the training and test sets after train_subset/test_subset (pixels as
 *            stored, one byte each, and int32 labels), and the epoch permutation.
 * Loading reads every sample of both files before the subsets are cut, and the model is
 * made after that, so a rank's peak is max(data as loaded, model + batch + data kept).
 *
 * The per-model figures are constants here (common/ may not see model/); the unit test
 * test_memest_matches_models (tests/unit/test_model.c) builds every model and fails when
 * they drift from what model_create allocates. The process's own overhead (the C and MPI
 * runtimes, OpenBLAS's buffers) is not counted: the worker's check measures it instead
 * (RLIMIT_AS less what the process already maps).
 */
#ifndef PACER_MEMEST_H
#define PACER_MEMEST_H

#include <stddef.h>

#include "spec.h"

/* One model's figures, in elements (floats unless named). */
typedef struct {
    const char *name;
    long params;            /* trainable parameters */
    long buffers;           /* non-trained buffers (batch-norm running statistics) */
    long fixed;             /* floats that do not grow with the batch: bn saved statistics +
                             the largest conv workspace (its column budget caps it) */
    long acts_per_sample;   /* one activation arena, per sample of the batch */
    long argmax_per_sample; /* int32, maxpool argmax, per sample */
    long input_per_sample;  /* C x H x W */
    int classes;
} memest_model_t;

/* The figures of a model by name, or NULL. */
const memest_model_t *memest_model(const char *name);

/* A known data set's sample counts (train and test files, before subsets) and bytes per
 * image. Returns 0, or -1 for a name spec.c does not know. */
int memest_dataset(const char *name, long *train_n, long *test_n, long *image_bytes);

typedef struct {
    int max_batch;      /* the largest batch the rank may be planned (planner_bounds_world) */
    double model_bytes; /* parameters, gradients, optimizer state, fixed buffers */
    double batch_bytes; /* what grows with max_batch */
    double data_bytes;  /* data sets as kept (after subsets) + the permutation */
    double load_bytes;  /* data sets as loaded (every sample of both files) */
    double rank_bytes;  /* the peak: max(load_bytes, model + batch + data) */
} memest_t;

/* The estimate for one rank of s when it runs with nworkers gradient workers (fewer
 * than s->workers after an elastic restart: each holds a larger share of the global
 * batch). Returns 0, or -1 when the model or data set is unknown, or the data set is a
 * user's (dataset.format imagefolder or npz: its size is known only by reading it; the
 * decoded cache is mapped, shared by the ranks of a host, so it is not per-rank memory
 * anyway). */
int memest_rank(const job_spec_t *s, int nworkers, memest_t *out);

/* Writes "N MiB" (or "N GiB" from 10 GiB on) into out; returns out. */
const char *memest_fmt(double bytes, char *out, size_t len);

/* The check both sides make: ranks x e->rank_bytes against avail_bytes (what `where`
 * says it is, e.g. "host h1 (--host-memory-mb)"). Returns 0 when it fits, else -1 with
 * err naming every figure: ranks, per rank (model, batch at max_batch, data), the total
 * and what there is. */
int memest_check(const memest_t *e, int ranks, double avail_bytes, const char *where, char *err, size_t errlen);

/* MemTotal or MemAvailable ("MemTotal", "MemAvailable") of /proc/meminfo, in bytes;
 * -1 when it cannot be read. */
double memest_meminfo(const char *field);

#endif
