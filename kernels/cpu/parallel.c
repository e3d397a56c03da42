/* kernels/cpu/parallel.c - see parallel.h. One process-wide set of threads: a CPU rank
 * trains one model, and its kernels run one after another, so one par_run at a time is
 * all there is (a par_run from inside an fn runs on its own thread).
 *
 * Waiting: a step calls par_run a few dozen times with short serial work between (a
 * pooling, a ReLU), and waking a thread asleep in the kernel costs tens of microseconds
 * on a VM (an inter-processor interrupt into a halted virtual CPU): LeNet-5 scaled 1.22x
 * on two threads with a condition variable alone. So both sides first spin for up to
 * SPIN_NS on the atomic counters, and only then sleep on the condition variables; a rank
 * between steps (data, allreduce) therefore costs its idle threads SPIN_NS of CPU time
 * and nothing after. */
#include "parallel.h"

#include <cblas.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#ifndef SPIN_NS
#define SPIN_NS 100000L
#endif

static struct {
    pthread_mutex_t mu;
    pthread_cond_t go;   /* a new generation to run, or quit (to sleepers) */
    pthread_cond_t done; /* pending reached 0 (to a sleeping caller) */
    pthread_t tid[PAR_MAX_THREADS];
    int n;              /* threads par_run uses, the caller included */
    atomic_ulong gen;   /* one per par_run; fn and ctx are published before it */
    unsigned long born; /* gen when the threads started: a par_run right after
                                  par_set_threads is theirs even before they first look */
    atomic_int pending; /* threads 1..n-1 that have not finished this generation */
    atomic_int quit;
    int sleepers;      /* threads asleep on go (under mu) */
    int caller_asleep; /* the caller asleep on done (under mu) */
    par_fn fn;
    void *ctx;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER, .n = 1};

/* Set on the pool's threads, and on the caller while it runs its share. */
static _Thread_local int inside;

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Spins until done(arg) or SPIN_NS have passed; returns done(arg). */
static int spin_until(int (*done)(unsigned long), unsigned long arg)
{
    long until = 0;
    for (unsigned i = 0;; i++) {
        if (done(arg)) return 1;
        if ((i & 255) == 0) {
            long t = now_ns();
            if (!until) until = t + SPIN_NS;
            else if (t >= until) return done(arg);
        }
        relax();
    }
}

static int new_gen_or_quit(unsigned long seen)
{
    return atomic_load_explicit(&P.gen, memory_order_acquire) != seen || atomic_load(&P.quit);
}

static int all_done(unsigned long unused)
{
    (void)unused;
    return atomic_load_explicit(&P.pending, memory_order_acquire) == 0;
}

static void *thread_main(void *arg)
{
    const int t = (int)(intptr_t)arg;
    inside = 1;
    unsigned long seen = P.born;
    for (;;) {
        if (!spin_until(new_gen_or_quit, seen)) {
            pthread_mutex_lock(&P.mu);
            P.sleepers++;
            while (!new_gen_or_quit(seen)) pthread_cond_wait(&P.go, &P.mu);
            P.sleepers--;
            pthread_mutex_unlock(&P.mu);
        }
        if (atomic_load(&P.quit)) break;
        seen = atomic_load_explicit(&P.gen, memory_order_acquire);
        P.fn(P.ctx, t, P.n);
        if (atomic_fetch_sub_explicit(&P.pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&P.mu);
            if (P.caller_asleep) pthread_cond_signal(&P.done);
            pthread_mutex_unlock(&P.mu);
        }
    }
    return NULL;
}

/* Stops threads 1..n-1 (started ones only). */
static void stop(int n)
{
    pthread_mutex_lock(&P.mu);
    atomic_store(&P.quit, 1);
    pthread_cond_broadcast(&P.go);
    pthread_mutex_unlock(&P.mu);
    for (int t = 1; t < n; t++) pthread_join(P.tid[t], NULL);
    atomic_store(&P.quit, 0);
}

/* OpenBLAS's own thread pool: its pthread build starts a thread per further core when it
 * loads, and each spins on sched_yield for 2^28 cycles (about 0.1 s) before it first sleeps.
 * Every rank here sets OpenBLAS to one thread, so that pool never gets work: stopped at the
 * first par_set_threads, its spin no longer costs 0.1-0.2 s of CPU a process (2-4% of an
 * 80-step GPT run at nanoGPT's CPU shape, as system time). blas_thread_shutdown_ is
 * OpenBLAS's own (its fork handler's); weak, so that a BLAS without it still links and the
 * call is skipped. */
extern int blas_thread_shutdown_(void) __attribute__((weak));

int par_set_threads(int n)
{
    static int pool_stopped;
    if (n < 1 || n > PAR_MAX_THREADS) return -1;
    openblas_set_num_threads(1); /* each of these threads calls it: see parallel.h */
    if (!pool_stopped && blas_thread_shutdown_) blas_thread_shutdown_();
    pool_stopped = 1;
    if (n == P.n) return 0;
    if (P.n > 1) stop(P.n);
    P.n = 1;
    /* The threads take no signals: the process's handlers run on its own threads, as
     * they did before these existed. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    P.born = atomic_load(&P.gen);
    P.n = n; /* read by the threads only once a generation is published */
    int started = 1;
    while (started < n && pthread_create(&P.tid[started], NULL, thread_main, (void *)(intptr_t)started) == 0) started++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started < n) {
        stop(started);
        P.n = 1;
        return -1;
    }
    return 0;
}

int par_threads(void) { return P.n; }

void par_run(par_fn fn, void *ctx)
{
    if (P.n == 1 || inside) {
        fn(ctx, 0, 1);
        return;
    }
    P.fn = fn;
    P.ctx = ctx;
    atomic_store_explicit(&P.pending, P.n - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&P.gen, 1, memory_order_release);
    pthread_mutex_lock(&P.mu);
    if (P.sleepers) pthread_cond_broadcast(&P.go);
    pthread_mutex_unlock(&P.mu);
    inside = 1;
    fn(ctx, 0, P.n);
    inside = 0;
    if (spin_until(all_done, 0)) return;
    pthread_mutex_lock(&P.mu);
    P.caller_asleep = 1;
    while (!all_done(0)) pthread_cond_wait(&P.done, &P.mu);
    P.caller_asleep = 0;
    pthread_mutex_unlock(&P.mu);
}
