/* kernels/cpu/parallel.c - see parallel.h. One process-wide set of threads: a CPU rank
 * trains one model, and its kernels run one after another, so one par_run at a time is
 * all there is (a par_run from inside an fn runs on its own thread). */
#include "parallel.h"

#include <cblas.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

static struct {
    pthread_mutex_t mu;
    pthread_cond_t go;   /* a new generation to run, or quit */
    pthread_cond_t done; /* pending reached 0 */
    pthread_t tid[PAR_MAX_THREADS];
    int n;             /* threads par_run uses, the caller included */
    unsigned long gen;  /* one per par_run */
    unsigned long born; /* gen when the threads started: a par_run right after
                           par_set_threads is theirs even before they first wait */
    int pending;       /* threads 1..n-1 that have not finished this generation */
    int quit;
    par_fn fn;
    void *ctx;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER, .n = 1};

/* Set on the pool's threads, and on the caller while it runs its share. */
static _Thread_local int inside;

static void *thread_main(void *arg)
{
    const int t = (int)(intptr_t)arg;
    inside = 1;
    pthread_mutex_lock(&P.mu);
    unsigned long seen = P.born;
    for (;;) {
        while (P.gen == seen && !P.quit) pthread_cond_wait(&P.go, &P.mu);
        if (P.quit) break;
        seen = P.gen;
        const par_fn fn = P.fn;
        void *ctx = P.ctx;
        const int T = P.n;
        pthread_mutex_unlock(&P.mu);
        fn(ctx, t, T);
        pthread_mutex_lock(&P.mu);
        if (--P.pending == 0) pthread_cond_signal(&P.done);
    }
    pthread_mutex_unlock(&P.mu);
    return NULL;
}

/* Stops threads 1..n-1 (started ones only). */
static void stop(int n)
{
    pthread_mutex_lock(&P.mu);
    P.quit = 1;
    pthread_cond_broadcast(&P.go);
    pthread_mutex_unlock(&P.mu);
    for (int t = 1; t < n; t++) pthread_join(P.tid[t], NULL);
    P.quit = 0;
}

int par_set_threads(int n)
{
    if (n < 1 || n > PAR_MAX_THREADS) return -1;
    openblas_set_num_threads(1); /* each of these threads calls it: see parallel.h */
    if (n == P.n) return 0;
    if (P.n > 1) stop(P.n);
    P.n = 1;
    /* The threads take no signals: the process's handlers run on its own threads, as
     * they did before these existed. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    P.born = P.gen;
    int started = 1;
    while (started < n && pthread_create(&P.tid[started], NULL, thread_main, (void *)(intptr_t)started) == 0) started++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started < n) {
        stop(started);
        return -1;
    }
    P.n = n;
    return 0;
}

int par_threads(void) { return P.n; }

void par_run(par_fn fn, void *ctx)
{
    if (P.n == 1 || inside) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&P.mu);
    P.fn = fn;
    P.ctx = ctx;
    P.pending = P.n - 1;
    P.gen++;
    pthread_cond_broadcast(&P.go);
    pthread_mutex_unlock(&P.mu);
    inside = 1;
    fn(ctx, 0, P.n);
    inside = 0;
    pthread_mutex_lock(&P.mu);
    while (P.pending > 0) pthread_cond_wait(&P.done, &P.mu);
    pthread_mutex_unlock(&P.mu);
}
