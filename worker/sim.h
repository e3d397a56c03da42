/* worker/sim.h - the few points where a simulated pacer-worker differs from a real one.
 *
 * The worker owns this seam and sim/ implements it (sim/sim_worker.c, linked only into
 * the SMPI build), so the arrow points from sim/ down to worker/, never the other way.
 *
 * `make smpi` compiles the worker with smpicc and -DPACER_SIM into build-smpi/, and
 * build/pacer-sim runs it under SimGrid's smpirun (docs/ARCHITECTURE.md "Simulation").
 * Everything else is the same code: the worker's clock (common/clock.c) reads and sleeps
 * in simulated time when a simulated rank calls it (sim/clock_sim.c), every MPI call is
 * simulated, and each rank's computation runs on the real CPU and is charged in simulated time at its host's speed.
 * What cannot stay the same is here, owned by sim/sim_worker.c:
 *   - deterministic mode charges compute by a cost model instead of timing it;
 *   - ranks share one read-only copy of the data set (SMPI gives every rank its own
 *     copy of the program's globals, and 128 copies of a data set do not fit);
 *   - a rank's host name is its simulated host;
 *   - the summary says it was simulated; the process's memory is not a rank's.
 * In a normal build every function below is an inline no-op (or the plain call), so a
 * real worker pays nothing and cannot take a simulation path by accident. */
#ifndef PACER_SIM_H
#define PACER_SIM_H

#include <stddef.h>

#include <jansson.h>

#include "data.h"
#include "worker.h"

#ifdef PACER_SIM

/* 1: this worker runs inside SimGrid (it is always started by smpirun). */
static inline int sim_active(void) { return 1; }
/* Deterministic mode: charge the forward and backward pass of `batch` samples, the
 * optimizer step over every parameter, and the forward pass of `batch` evaluation
 * samples, as simulated computation at this host's speed (a training step's scaled by
 * simulate.jitter's factor). No-ops otherwise (the real computation is timed). */
void sim_charge_train(const worker_t *w, int batch);
void sim_charge_update(const worker_t *w);
void sim_charge_eval(const worker_t *w, int batch);
/* Deterministic mode: charge the compression compute of the step (or round) numbered
 * step when it is compressed (compress_step_flops, worker/compress.h); a no-op without
 * w->compress. The sizes of the messages need no model: the worker's own compressor
 * sizes them and SMPI times them. */
void sim_charge_compress(const worker_t *w, long step);
/* simulate.skip_compute: 1 when this rank charges its compute without running it (the
 * forward and backward passes and evaluation are skipped; gradients stay zero). The
 * simulated timeline is the same as with the computation, since in deterministic mode
 * time depends only on the cost model and message sizes, never on values
 * (tests/integration/sim_skip_compute.sh). sim_model_batch is the batch the model's
 * activation arena is sized for: 1 when nothing runs through it (a 128-rank ResNet-20
 * what-if would otherwise hold 128 arenas of 170 MB). */
int sim_skip_compute(const worker_t *w);
int sim_model_batch(const worker_t *w);
/* The simulated host's name into out; returns 0. */
int sim_host_name(char *out, size_t len);
/* dataset_load, but every rank of the simulation shares the first rank's copy (read-only;
 * truncation only changes this rank's count). sim_dataset_free drops this rank's share. */
int sim_dataset_load(const char *name, const char *dir, int train, dataset_t *out, char *err, size_t errlen);
void sim_dataset_free(dataset_t *d);
/* Adds "simulated": true, "simulated_wall_s" and "simulation" {platform, deterministic, skip_compute, jitter}
 * to the job summary. */
void sim_summary(const worker_t *w, json_t *root);

#else

static inline int sim_active(void) { return 0; }
static inline void sim_charge_train(const worker_t *w, int batch)
{
    (void)w;
    (void)batch;
}
static inline void sim_charge_update(const worker_t *w) { (void)w; }
static inline void sim_charge_compress(const worker_t *w, long step)
{
    (void)w;
    (void)step;
}
static inline void sim_charge_eval(const worker_t *w, int batch)
{
    (void)w;
    (void)batch;
}
static inline int sim_skip_compute(const worker_t *w)
{
    (void)w;
    return 0;
}
static inline int sim_model_batch(const worker_t *w) { return w->max_batch; }
static inline int sim_host_name(char *out, size_t len)
{
    (void)out;
    (void)len;
    return -1;
}
#define sim_dataset_load dataset_load
#define sim_dataset_free dataset_free
static inline void sim_summary(const worker_t *w, json_t *root)
{
    (void)w;
    (void)root;
}

#endif

#endif
