/* worker/train.h - a rank's run around the loop (train.c): set-up and teardown, resuming from
 * a checkpoint, the batch plan of the test hook, worker_train itself, and the job's summary.
 * The step is step.h's (step.c), the loop's policies and records loop.h's (loop.c). */
#ifndef PACER_TRAIN_H
#define PACER_TRAIN_H

#include <stddef.h>

#include <jansson.h>

#include "worker.h"

/* Loads the data, builds and initialises the model, sizes the buffers. rank/world are the
 * MPI position (0, 1 standalone). Returns 0 or a negative code with err set; a data error
 * returns the DATA_* code so main can exit with status 2. */
int worker_setup(worker_t *w, const job_spec_t *spec, int rank, int world, char *err, size_t errlen);
/* worker_setup for a run with nworkers gradient ranks, which may be fewer than the spec's
 * workers (an elastic restart on the hosts that remain, --world): the global batch stays
 * workers x batch_size, split evenly over the nworkers (the first ranks take the
 * remainder), and the batch buffers grow to hold the largest share. */
/* Which ranks a sharded job (algorithm.shard) put on this host, for worker_check_memory:
 * this process's rank, the world ranks on its host (ids, host_ranks of them) and, for
 * split "memory", every rank's available bytes (mem; NULL otherwise), what the split
 * will be made of. */
typedef struct {
    int rank;
    const int *ids;
    const double *mem;
} worker_host_ranks_t;
/* Whether this process and host can hold one rank of spec (common/memest.h's estimate
 * for nworkers gradient ranks): against the address space RLIMIT_AS leaves (the limit
 * less what the process maps already) when a limit is set, and host_ranks x the
 * estimate against MemAvailable. A sharded job's ranks differ: with known (NULL
 * otherwise) this rank and this host's ranks are checked for the ranges the split gives
 * them, without it for the job's largest. Returns 0, or -1 with err naming the figures.
 * Called before worker_setup_world allocates (worker/main.c). */
int worker_check_memory(const job_spec_t *spec, int nworkers, int host_ranks, const worker_host_ranks_t *known,
                        char *err, size_t errlen);
int worker_setup_world(worker_t *w, const job_spec_t *spec, int rank, int world, int nworkers, char *err, size_t errlen);
void worker_teardown(worker_t *w);

/* Restores weights, optimizer state and position from a checkpoint. A checkpoint written
 * by another number of workers (an elastic restart) resumes too: the batch plan is made
 * again for this run's workers over the same global batch, with one line on stderr that
 * says so; the parameter server's per-worker state (DC/DDC weight backups, staleness) is
 * not in a checkpoint and starts again at each worker's first pull. */
int worker_resume(worker_t *w, const char *path, char *err, size_t errlen);
/* --resume: the latest checkpoint (DIR/NAME.ckpt), or when it cannot be used (corrupt,
 * truncated) the next older one the job kept (common/ckptdir.h), each refusal one line on
 * stderr. Returns 1 with the path used, 0 when there is none, -1 with err naming the
 * latest's problem when none can be used. */
int worker_resume_latest(worker_t *w, char *path, size_t len, char *err, size_t errlen);
/* --resume-before: the newest checkpoint the job kept (common/ckptdir.h) written before
 * global step before, or when it cannot be used the next older one, each refusal one
 * line on stderr. Returns 1 with the path used, 0 when none could be used (the run starts
 * afresh), -1 with err when the directory cannot be listed. */
int worker_resume_before(worker_t *w, long before, char *path, size_t len, char *err, size_t errlen);

/* Applies opts->batch_plan to w->batch_of; returns 0 or -1 with err naming the problem. */
int worker_apply_batch_plan(worker_t *w, const char *plan, char *err, size_t errlen);

/* Runs epochs until the spec's count, target accuracy, or the test hook. */
int worker_train(worker_t *w, const train_opts_t *o, char *err, size_t errlen);

/* Training samples of a job: the sum over the per_rank entries of role "worker" (each
 * sample is computed by exactly one worker; the PS reports updates, not samples). */
long worker_train_samples(json_t *per_rank);
/* Writes the job summary (rank 0) with the per_rank array (borrowed). */
int worker_write_summary(const worker_t *w, const char *path, json_t *per_rank, int exit_status, char *err,
                         size_t errlen);

#endif
