/* common/phases.h - the phases a training step's wall time is split into, named
 * once for the worker that measures them (worker/phase.h), the metrics record and its JSON
 * ("phases" object), the Redis node hash (phase_<name>_s), the Prometheus counters and the
 * coordinator's Chrome trace (coordinator/trace.c).
 *
 *   data       gathering this rank's batch into the preallocated buffers (augmentation,
 *              a GPU rank's per-batch-size preparation)
 *   compute    forward + backward; on a GPU rank the step's device synchronisation
 *   comm       moving bytes: allreduce, broadcast, model average (packing included), a
 *              parameter-server push and pull, a PS's replies
 *   compress   algorithm.compression's own compute between and around its collectives
 *              (worker/compress.h: rounding to bf16, PowerSGD's products and
 *              orthogonalisation, error feedback); 0 without compression
 *   wait       waiting for peers: the barrier before a collective, a worker's wait for the
 *              parameter server's reply to start arriving, the PS's wait for a push
 *   optimizer  the update (clip + SGD, on host or device), hpsgd's merge, the PS's rule
 *   emulated   the emulated slowdown's sleep (emulate.slowdown)
 *   other      what lies between the marks (bookkeeping, a re-plan's planner run): kept
 *              as its own bucket, so the others are never padded; tests check it is small
 * The phases partition the step: they add up to its wall time (worker/phase.c).
 */
#ifndef PACER_PHASES_H
#define PACER_PHASES_H

typedef enum {
    PHASE_DATA = 0,
    PHASE_COMPUTE,
    PHASE_COMM,
    PHASE_COMPRESS,
    PHASE_WAIT,
    PHASE_OPTIMIZER,
    PHASE_EMULATED,
    PHASE_OTHER,
    PHASE_N
} phase_t;

static const char *const PHASE_NAMES[PHASE_N] = {
    "data", "compute", "comm", "compress", "wait", "optimizer", "emulated", "other",
};

/* Step events (metrics_record_t.events, trace instant events). */
#define STEP_EV_PLAN 1u  /* a new batch plan took effect at this step */
#define STEP_EV_MERGE 2u /* models were merged or averaged at this step (hpsgd, local-sgd, hier-bsp) */

#endif
