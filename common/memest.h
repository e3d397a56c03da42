/* common/memest.h - how much memory one rank of a job needs: the one estimate the
 * coordinator admits jobs by (422 at submission when a host cannot hold its ranks) and
 * the worker checks before it allocates (a clear refusal instead of an OOM kill).
 *
 * A rank holds (worker/train.c, model/model.c):
 *   model    parameters, gradients and momentum (3 x nparams floats, + MODEL_GRAD_EXTRA),
 *            batch-norm buffers, the saved statistics and the conv workspace (which do not
 *            grow with the batch), and algorithm.compression's buffers (an upper bound:
 *            common/compress_mem.h);
 *   batch    for the largest batch it may be planned (planner_bounds): both activation
 *            arenas (the outputs, and their gradients planned by liveness: the catalog's
 *            dacts_per_sample, exact for a model built here), maxpool argmax, softmax
 *            probabilities, the
 *            batch's inputs and labels and the worker's per-batch tables;
 *   data     the training and test sets after train_subset/test_subset (pixels as
 *            stored, one byte each, and int32 labels), and the epoch permutation; text
 *            tokenized in memory (a tokenizer other than bytes): 2 bytes a byte of text
 *            kept, and while loading the encoder's 4-byte ids beside them.
 * Loading reads every sample of both files before the subsets are cut, and the model is
 * made after that, so a rank's peak is max(data as loaded, model + batch + data kept).
 *
 * The per-model figures and the data sets' sample counts are the catalog's
 * (common/catalog.h), so a model added at run time (an imported one) is estimated like a
 * built-in: every model's figures are model_describe's (model/model.c: the operator
 * table's workspaces and the allocation's sizes), generated at build time for a built-in
 * row (tools/catalog_rows.c), made at import for any other graph (test_sim's
 * test_imported_figures); a built-in's for the job's data set's classes
 * (catalog_model_for_classes: the catalog's count for a built-in or listed set, the
 * probe's for a user's path). The process's
 * own overhead (the C and MPI runtimes, OpenBLAS's buffers) is not counted: the worker's
 * check measures it instead (RLIMIT_AS less what the process already maps).
 *
 * The job's precision is not a term: the figures are float32's, an upper bound at bf16,
 * where the activations only products (or a GELU) read are stored in bf16 in half their
 * floats (model/plan.h's act_bf16: a peak RSS of 1,414 against 1,503 MiB at GPT-2 124M's
 * width) and their gradients stay float32. The bf16 products' scratch (gemm_bf16.h: a
 * calling thread's packed A, at most 4 MiB, and one chunk of packed B; with several
 * threads, one packed weight) is left out with OpenBLAS's buffers (test_sim's test_memest_bf16_is_fp32s;
 * test_model's test_bf16_allocates_as_fp32: the sizes a model allocates at either).
 */
#ifndef PACER_MEMEST_H
#define PACER_MEMEST_H

#include <stddef.h>

#include "catalog.h"
#include "spec.h"

/* The built-in GPT's figures (the catalog's fields) from the spec's model.gpt and data set:
 * counted from its layer list, since this room cannot build it; about, and above, what
 * model_describe gives for the model the worker builds. */
void memest_gpt_figures(const job_spec_t *s, catalog_model_t *m);

/* A model's part of a rank's memory: what does not depend on the batch (parameters,
 * gradients, optimizer state, fixed buffers) and what each sample of the batch adds
 * (activations and their gradients, argmax, probabilities, the sample's input and label,
 * the worker's per-slot tables). The API lists both per model (GET /api/v1/models). */
void memest_model(const catalog_model_t *m, double *model_bytes, double *bytes_per_sample);

typedef struct {
    int max_batch;      /* the largest batch the rank may be planned (planner_bounds_world) */
    double model_bytes; /* parameters, gradients, optimizer state, fixed buffers */
    double batch_bytes; /* what grows with max_batch */
    double data_bytes;  /* data sets as kept (after subsets) + the permutation */
    double load_bytes;  /* data sets as loaded (every sample of both files) */
    double rank_bytes;  /* the peak: max(load_bytes, model + batch + data) */
    double params;      /* the model's trainable parameters (what a sharded job splits) */
} memest_t;

/* The estimate for one rank of s when it runs with nworkers gradient workers (fewer
 * than s->workers after an elastic restart: each holds a larger share of the global
 * batch). Returns 0, or -1 with err saying so when the catalog has no such model or data
 * set (one removed since the spec was parsed): a caller must refuse the job then, never
 * let it through unchecked. A user's data set (dataset.format imagefolder or npz) is not
 * looked up: its decoded cache is a read-only mapping shared by the ranks of a host (page
 * cache, not a rank's own memory), so its data_bytes and load_bytes are 0. */
int memest_rank(const job_spec_t *s, int nworkers, memest_t *out, char *err, size_t errlen);

/* The estimate for rank `rank` of nworkers when s shards its optimizer state
 * (algorithm.shard, common/shard_plan.h): memest_rank's, less the state outside the rank's
 * range (rank 0 with checkpoints keeps all of it: it writes them). mem: the ranks' available
 * bytes for split "memory" (NULL: even). The gradient is counted whole at stage 1; at
 * stage 2, for the built-in GPT, less what lies outside the range beyond the buckets the
 * backward pass may hold before they are reduced. Without sharding, memest_rank's
 * estimate. */
int memest_rank_of(const job_spec_t *s, int nworkers, int rank, const double *mem, memest_t *out, char *err,
                   size_t errlen);
/* For a check of `ranks` ranks on one host (memest_check): memest_rank's estimate, or for
 * a sharded job the mean of its `ranks` largest per-rank estimates, so that ranks x
 * rank_bytes bounds what any `ranks` of its ranks need together. */
int memest_host_rank(const job_spec_t *s, int nworkers, int ranks, memest_t *out, char *err, size_t errlen);
/* For a check of a host whose ranks are known (the worker's: the world ranks on its host,
 * and for split "memory" every rank's available bytes in mem, NULL otherwise): the mean
 * of those k ranks' estimates (memest_rank_of) and the largest one's breakdown, so that
 * k x rank_bytes is what they need together. A split by weights or by memory gives the
 * ranks unequal ranges: a host whose ranks hold small ones is checked for those, not for
 * the job's largest (memest_host_rank, which admission uses before the hosts are known). */
int memest_ranks(const job_spec_t *s, int nworkers, const int *ranks, int k, const double *mem, memest_t *out,
                 char *err, size_t errlen);

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
