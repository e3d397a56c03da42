/* worker/comm.h - the distributed orchestration every algorithm shares: the world check
 * at start, the weight broadcast, sync_batchnorm's reduction, batch re-planning, the
 * summary's gathering, rank 0's evaluation, the trace. It stands on the MPI floor
 * (comm_mpi.h: MPI_CHECK, waits, agreements), which knows none of this.
 *
 * A worker started without mpirun never calls MPI: the synchronous algorithms then run
 * with one worker (workers: 1) as one process, and the helpers here become what they are
 * on one rank (no broadcast, no wait, local evaluation); the algorithms skip their own
 * collectives when w->use_mpi is 0.
 */
#ifndef PACER_COMM_H
#define PACER_COMM_H

#include <jansson.h>
#include <mpi.h>
#include <stdio.h>

#include "worker.h"

/* Whether an MPI world of `world` processes is the one this run must have: expect (> 0)
 * is what the coordinator says the attempt runs as (--world), else the spec's workers
 * (+ 1 with a parameter server). A process alone in its world while a launcher variable
 * or expect says it is one of several (N singletons: srun without a working PMIx) is
 * refused with a message that says so. A world of expect processes, fewer than the spec
 * asks (an elastic restart on the hosts that remain), is accepted. Returns 0, or -1 with
 * err (exit status 2). */
int comm_check_world(const job_spec_t *s, int world, int expect, char *err, size_t errlen);

/* Rank 0's parameters and buffers to every rank of comm (identical start). */
void comm_broadcast_model(worker_t *w, MPI_Comm comm);

/* sync_batchnorm: every training step's batch norms normalise by the statistics of the
 * whole global batch, all-reduced over MPI_COMM_WORLD (each rank's share, its count
 * included: dynamic batching's shares differ); off in one process, where the batch is
 * the whole global batch already. For ssgd, whose ranks all take every step. */
void comm_bn_sync_setup(worker_t *w);

/* Dynamic batching for synchronous algorithms over comm (all workers): every
 * algorithm.replan_steps steps rank 0 gathers the EWMA speeds, runs the planner (or takes
 * the coordinator's newer assignment) and broadcasts the plan into w->batch_of; with
 * algorithm.goodput the goodput planner's re-plan instead (adaptive_replan). A no-op
 * when neither is on. Called at step boundaries only. */
void comm_replan(worker_t *w, MPI_Comm comm);
/* comm_replan over MPI_COMM_WORLD as a step's first stage (algo_ops_t.step, phase other:
 * its collectives book themselves as comm). Returns 0. */
int comm_replan_stage(worker_t *w, algo_step_t *s);

/* The per_rank summary entries of every rank, gathered at rank 0 (NULL elsewhere). */
json_t *comm_gather_ranks(worker_t *w, MPI_Comm comm);

/* Evaluation for algorithms whose ranks hold the same weights at an epoch end: rank 0
 * evaluates, the result is broadcast (so every rank takes the same early-stop decision). */
void comm_evaluate_root(worker_t *w);

/* --trace: every rank formats its trace ring (w->trace), rank 0 gathers them over
 * MPI_COMM_WORLD (when use_mpi) and writes path as one Chrome trace, one track per rank
 * (worker/trace.h). Collective. Returns 0, or -1 with err at rank 0 (a write error). */
int comm_write_trace(worker_t *w, const char *path, char *err, size_t errlen);

#endif
