/* worker/waitmark.h - "this rank has been waiting in collective X since t":
 * what a training step publishes when it enters a blocking MPI call, for the Redis sink's
 * thread (worker/redis_report.c) to read and report when the wait lasts far longer than
 * the rank's steps take.
 *
 * The training thread is the one writer: waitmark_enter before the call, waitmark_leave
 * after it. Each is one clock read (enter) and a few atomic stores into the rank's own
 * mark (worker_t.wait): no allocation, no lock, no formatting, no I/O on the step. The
 * sink thread reads the mark with waitmark_read, a sequence-lock read that retries while
 * a write is half done, so it never sees the operation of one wait with the start time
 * of another.
 *
 * When a wait counts as long: waitmark_limit_s, WAITMARK_FACTOR times the median of the
 * rank's recent step times (the sink keeps the last REDIS_REPORT_STEP_WINDOW), never less
 * than WAITMARK_FLOOR_S. A step's time includes its waits for peers, so a rank paced by a
 * slower peer has a median that already holds that wait; the floor keeps fast steps
 * (milliseconds) from reporting every hiccup of a loaded machine.
 */
#ifndef PACER_WAITMARK_H
#define PACER_WAITMARK_H

#include <stdatomic.h>

#define WAITMARK_FACTOR 10
#define WAITMARK_FLOOR_S 10.0

/* What a rank waits in. A collective waits on every rank of its communicator (peer -1);
 * a parameter-server worker waits on the PS (peer 0); the PS waits for any worker's push
 * (peer -1). */
typedef enum {
    WAIT_NONE,
    WAIT_BARRIER,   /* the wait for slower peers before a collective (comm_wait_peers) */
    WAIT_ALLREDUCE, /* a gradient or model allreduce (blocking, or the wait for a nonblocking one) */
    WAIT_BROADCAST, /* weights, a batch plan or an evaluation's result from rank 0 */
    WAIT_GATHER,    /* speeds to rank 0 for a batch plan */
    WAIT_PUSH,      /* a PS worker's gradient push, until the PS took it */
    WAIT_REPLY,     /* a PS worker's wait for the PS's reply */
    WAIT_PUSHES,    /* the PS's wait for the next push of any worker */
    WAIT_N
} wait_op_t;

typedef struct {
    atomic_uint seq; /* odd while the writer is between its stores */
    atomic_int op;   /* wait_op_t */
    atomic_int peer;
    atomic_llong since_ns; /* clock_mono_s() at the start of the wait, in ns */
} waitmark_t;

/* The name reports use ("allreduce", "reply from the parameter server", ...). */
const char *waitmark_name(wait_op_t op);

/* The training thread, around a blocking call: m may be NULL (nothing is published). */
void waitmark_enter(waitmark_t *m, wait_op_t op, int peer);
void waitmark_leave(waitmark_t *m);

/* The reader (another thread): 1 with what and since when (clock_mono_s) the rank waits,
 * 0 when it does not (or a write stayed half done through 1000 tries: ask again later). */
int waitmark_read(waitmark_t *m, wait_op_t *op, int *peer, double *since);

/* How long a wait may last before it is reported: WAITMARK_FACTOR x median_step_s, at
 * least WAITMARK_FLOOR_S (the floor alone when no step was measured: median <= 0 or not
 * a number). */
double waitmark_limit_s(double median_step_s);

#endif
