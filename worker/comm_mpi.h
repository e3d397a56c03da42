/* worker/comm_mpi.h - the MPI floor every distributed part of the worker stands on:
 * MPI_CHECK, how this process was launched, the machine a rank is on, and the waits
 * (polite on an oversubscribed host), probes, barriers and agreements their collectives
 * use. Nothing here knows an algorithm, a plan or a summary: that orchestration is
 * comm.h's, above this file, and this file includes nothing of it.
 *
 * MPI errors are fatal for the job (MPI_ERRORS_ARE_FATAL): a rank that dies makes mpirun
 * tear the job down, so no rank waits forever on a dead peer. */
#ifndef PACER_COMM_MPI_H
#define PACER_COMM_MPI_H

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

/* Waits at a barrier and books the time as idle: what a rank spends waiting for slower
 * peers, kept apart from the collective that follows so comm_s is transfer time. A scope
 * of phase wait on the step timer (phase.h) inside the caller's stage; nothing for one
 * process. */
void comm_wait_peers(worker_t *w, MPI_Comm comm);
/* The same barrier as a step's own stage of phase wait (algo_ops_t.step): comm_barrier
 * books nothing on the step timer (the stage does); comm_wait_stage waits on
 * MPI_COMM_WORLD and returns ALGO_SKIP for one process, else 0. */
void comm_barrier(worker_t *w, MPI_Comm comm);
int comm_wait_stage(worker_t *w, algo_step_t *s);

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

/* Rank 0's flag on every rank of MPI_COMM_WORLD (for worker_t.agree). */
int comm_agree(worker_t *w, int flag);

#endif
