/* worker/comm.h - the MPI side of a worker: start-up checks, helpers every distributed
 * algorithm uses (weight broadcast, batch re-planning, summary gathering) and MPI_CHECK.
 *
 * A worker started without mpirun never calls MPI: the synchronous algorithms then run
 * with one worker (workers: 1) as one process, and the helpers here become what they are
 * on one rank (no broadcast, no wait, local evaluation); the algorithms skip their own
 * collectives when w->use_mpi is 0. MPI errors are fatal for the job (MPI_ERRORS_ARE_FATAL): a rank that
 * dies makes mpirun tear the job down, so no rank waits forever on a dead peer.
 */
#ifndef PACER_COMM_H
#define PACER_COMM_H

#include <jansson.h>
#include <mpi.h>
#include <stdio.h>

#include "worker.h"

#define MPI_CHECK(call)                                                                 \
    do {                                                                                \
        int rc_ = (call);                                                               \
        if (rc_ != MPI_SUCCESS) {                                                       \
            char msg_[MPI_MAX_ERROR_STRING];                                            \
            int len_ = 0;                                                               \
            MPI_Error_string(rc_, msg_, &len_);                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, msg_); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                               \
        }                                                                               \
    } while (0)

/* Whether this process was started by mpirun (Open MPI or a PMI launcher). */
int comm_launched_by_mpirun(void);

/* The number of processes the launcher that started this one says it started (0 when no
 * launcher variable is set), and the variable that says so (OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE, SLURM_STEP_NUM_TASKS). */
int comm_launcher_world(char *var, size_t varlen);

/* Collective over MPI_COMM_WORLD: *out holds the ranks of this rank's machine, those that
 * share its cores and memory (comm.c says how a machine is told apart). Free it with
 * MPI_Comm_free. */
void comm_split_machine(int rank, MPI_Comm *out);
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

/* The per_rank summary entries of every rank, gathered at rank 0 (NULL elsewhere). */
json_t *comm_gather_ranks(worker_t *w, MPI_Comm comm);


/* Evaluation for algorithms whose ranks hold the same weights at an epoch end: rank 0
 * evaluates, the result is broadcast (so every rank takes the same early-stop decision). */
void comm_evaluate_root(worker_t *w);

/* Waits at a barrier and books the time as idle: what a rank spends waiting for slower
 * peers, kept apart from the collective that follows so comm_s is transfer time. */
void comm_wait_peers(worker_t *w, MPI_Comm comm);

/* Batch-weighted model average over comm (params and batch-norm buffers), weight = this
 * rank's samples since the last average; buf holds nparams + nbuffers + 1 floats.
 * With algorithm.compression (w->compress, kind other than none) the average goes
 * through lavg (local_compress_init; NULL without compression). Implemented in
 * algo_local_sgd.c, shared with hier-bsp. */
typedef struct {
    float *base;  /* (nparams) the model of the last average, the same on every rank */
    float *delta; /* (nparams + MODEL_GRAD_EXTRA) weight x (params - base), compressed */
} local_compress_t;
int local_compress_init(worker_t *w, local_compress_t **out);
void local_compress_free(local_compress_t *lc);
/* At an epoch end, after its average: rank 0 gathers the ranks' error feedback again for
 * the epoch end's checkpoint (collective over MPI_COMM_WORLD; nothing without PowerSGD
 * or checkpoints). */
void local_gather_errors(worker_t *w);
void local_average(worker_t *w, MPI_Comm comm, float *buf, float weight, local_compress_t *lc);

/* MPI_Wait / MPI_Waitany, except on an oversubscribed host (w->polite_wait, see
 * emulate.h): there they test and sleep ~0.1 ms between tests, so a waiting rank leaves
 * the core to the ranks that compute instead of spinning in Open MPI's progress loop.
 * comm_wait_any returns the index that completed (MPI_UNDEFINED when none is active). */
void comm_wait(worker_t *w, MPI_Request *req);
int comm_wait_any(worker_t *w, int n, MPI_Request *reqs);

/* Waits until a message from source with tag can be received (MPI_Probe), politely
 * like comm_wait: the parameter-server worker's wait for the PS, kept apart from the
 * transfer that follows. */
void comm_probe(worker_t *w, int source, int tag, MPI_Comm comm);

/* --trace: every rank formats its trace ring (w->trace), rank 0 gathers them over
 * MPI_COMM_WORLD (when use_mpi) and writes path as one Chrome trace, one track per rank
 * (worker/trace.h). Collective. Returns 0, or -1 with err at rank 0 (a write error). */
int comm_write_trace(worker_t *w, const char *path, char *err, size_t errlen);

/* Rank 0's flag on every rank of MPI_COMM_WORLD (for worker_t.agree). */
int comm_agree(worker_t *w, int flag);
#endif
