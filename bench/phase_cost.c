/* bench/phase_cost.c - what recording the time breakdown costs a step (issue 15): a
 * synthetic step of fixed work (a dot-product loop over a buffer, ~STEP_US microseconds)
 * run bare, with the step timer's marks (as many as a synchronous step makes), and with
 * the marks plus the --trace ring. Blocks of steps alternate between the three so they
 * see the same machine; prints the median step time of each and the overheads.
 * Usage: phase_cost [STEP_US (default 1000)] [ROUNDS (default 15)] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "median.h"
#include "phase.h"
#include "trace.h"

#define MARKS 12  /* more than any algorithm's step makes (ssgd: 8, a PS worker: 9) */
#define STEPS 200 /* per block */
#define N 4096

static float buf[N];
static volatile float sink;

static void work(long reps)
{
    float acc = 0;
    for (long r = 0; r < reps; r++)
        for (int i = 0; i < N; i++) acc += buf[i] * buf[(i + r) % N];
    sink = acc;
}

static double block(int mode, long reps, step_phases_t *p);

/* One block of STEPS steps; mode 0 bare, 1 marks, 2 marks + ring. Mean seconds a step. */
static double block(int mode, long reps, step_phases_t *p)
{
    double t0 = clock_mono_s();
    for (int s = 0; s < STEPS; s++) {
        if (mode) phase_begin(p, s);
        for (int m = 0; m < MARKS; m++) {
            work(reps / MARKS);
            if (mode) phase_mark(p, (phase_t)(m % PHASE_N));
        }
        if (mode) phase_end(p);
    }
    return (clock_mono_s() - t0) / STEPS;
}

int main(int argc, char **argv)
{
    double step_us = argc > 1 ? atof(argv[1]) : 1000;
    int rounds = argc > 2 ? atoi(argv[2]) : 15;
    if (!(step_us > 0) || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "usage: phase_cost [STEP_US > 0] [ROUNDS 1..1000]\n");
        return 2;
    }
    for (int i = 0; i < N; i++) buf[i] = (float)(i % 17) * 0.01f;
    /* Calibrate reps to ~step_us. */
    long reps = MARKS;
    for (;;) {
        double t0 = clock_mono_s();
        work(reps);
        double dt = clock_mono_s() - t0;
        if (dt > step_us * 1e-6 * 0.5 || reps > (1L << 30)) {
            reps = (long)(reps * step_us * 1e-6 / (dt > 0 ? dt : 1e-9));
            break;
        }
        reps *= 2;
    }
    /* Refine against whole steps (warm caches, the block's own loop shape). */
    for (int k = 0; k < 3; k++) {
        double dt = block(0, reps, NULL);
        if (dt > 0) reps = (long)(reps * step_us * 1e-6 / dt);
        if (reps < MARKS) reps = MARKS;
    }
    trace_ring_t ring;
    if (trace_ring_init(&ring) != 0) return 1;
    step_phases_t plain, traced;
    memset(&plain, 0, sizeof plain);
    memset(&traced, 0, sizeof traced);
    traced.ring = &ring;
    double *t[3];
    for (int k = 0; k < 3; k++) t[k] = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; r < rounds; r++) {
        t[0][r] = block(0, reps, NULL);
        t[1][r] = block(1, reps, &plain);
        t[2][r] = block(2, reps, &traced);
    }
    double med[3];
    for (int k = 0; k < 3; k++) med[k] = bench_median(t[k], rounds);
    printf("step_us %.1f marks_per_step %d rounds %d\n", med[0] * 1e6, MARKS, rounds);
    printf("bare_us %.2f marks_us %.2f marks_trace_us %.2f\n", med[0] * 1e6, med[1] * 1e6, med[2] * 1e6);
    printf("overhead_marks_pct %.3f overhead_trace_pct %.3f\n", 100 * (med[1] - med[0]) / med[0],
           100 * (med[2] - med[0]) / med[0]);
    for (int k = 0; k < 3; k++) free(t[k]);
    trace_ring_free(&ring);
    return 0;
}
