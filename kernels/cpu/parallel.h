/* kernels/cpu/parallel.h - the CPU kernels' own threads (a job's `threads`).
 *
 * A CPU rank with threads: T splits the work of its convolutions, batch norms, ReLUs,
 * residual adds and fully connected layers over T threads: images (or channels, elements
 * or rows) in T contiguous ranges, one per thread, each thread calling a one-threaded
 * OpenBLAS on its own range with its own part of the layer's workspace. OpenBLAS's own
 * threads split each small GEMM of a training step and lose more to their
 * synchronisation than they gain (threads: 2 ran at 0.41-0.90x of one thread:
 * docs/PERFORMANCE.md), so a rank that uses these threads sets OpenBLAS to one thread.
 *
 * The split is static: for a given T every run computes the same sums in the same order
 * (the weight gradients of T threads are added in thread order), so results are
 * reproducible; they differ from T = 1's in rounding only. Convolution forwards, batch
 * norms, ReLUs and residual adds give bit for bit the results of one thread.
 *
 * par_set_threads is called once, before a model is built (a convolution's workspace is
 * sized for the threads there are then), and never inside a training step. par_run
 * allocates nothing: between calls the threads spin briefly, then sleep on a condition
 * variable (parallel.c). */
#ifndef PACER_PARALLEL_H
#define PACER_PARALLEL_H

#include <stddef.h>

#define PAR_MAX_THREADS 256 /* the spec's bound on threads */

/* Memory-bound passes (ReLU, residual add, pooling, zeroing) of fewer floats than this
 * stay on the calling thread: waking the others costs more than they would save. */
#define PAR_MIN_FLOATS 32768

/* Starts or stops threads so that par_run uses n (1..PAR_MAX_THREADS; 1 = the caller
 * alone, no thread), and sets OpenBLAS to one thread. Returns 0, or -1 when n is out of
 * range or a thread cannot start (then 1 is used). Not while a par_run is under way. */
int par_set_threads(int n);
/* The threads par_run uses (1 until par_set_threads). */
int par_threads(void);

/* fn(ctx, t, T) on every thread t in [0, T), the caller being thread 0; returns when all
 * have returned. Called from inside an fn, it runs fn(ctx, 0, 1) on the calling thread. */
typedef void (*par_fn)(void *ctx, int t, int T);
void par_run(par_fn fn, void *ctx);

/* par_run for a memory-bound pass over n floats: below PAR_MIN_FLOATS, fn(ctx, 0, 1) on
 * the calling thread alone. */
static inline void par_run_min(par_fn fn, void *ctx, size_t n)
{
    if (n < PAR_MIN_FLOATS) fn(ctx, 0, 1);
    else par_run(fn, ctx);
}

/* Thread t's share [*lo, *hi) of n items split into T contiguous ranges. */
static inline void par_range(long n, int t, int T, long *lo, long *hi)
{
    *lo = n * t / T;
    *hi = n * (t + 1) / T;
}

#endif
