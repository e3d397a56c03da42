/* bench/cpu_clock.c - the clock one core actually runs at, measured, for machines where
 * perf cannot count cycles (virtual machines without a PMU: this project's development
 * VM reports cycles:u "not supported"). bench/lenet_vs_pytorch.sh turns a process's CPU
 * time into cycles with it, to say what share of one core's peak pacer reaches.
 *
 * How: a chain of N dependent 64-bit adds of a register takes N cycles on every x86-64
 * core of the last decade (an add's latency is one cycle and each waits for the one
 * before), so N / elapsed is the clock, turbo included, with no nominal figure from
 * /proc/cpuinfo. The addend is a register, not an immediate: Intel's cores since Golden
 * Cove fold chains of immediate adds in the renamer (on a Sapphire Rapids-class VM such a
 * chain "measured" 21.5 GHz). A second chain of 64-bit multiplies (3 cycles each, on
 * Intel since Nehalem and AMD since Zen) must agree within 15%, else nothing is printed
 * and the exit status is 1: a clock no longer measured is not quoted. The chains are
 * inline assembly so the compiler can neither fold nor vectorise them. Each measurement
 * is the thread's CPU time (time the scheduler gave to others does not count), and the
 * result is the median of ROUNDS rounds of the add chain, printed in Hz.
 *
 * Limits, said where the figure is quoted: a core may clock lower under wide vector
 * (AVX2) load than under this scalar chain, which makes cycles derived from it an upper
 * bound (and the share of peak a lower bound); a virtual CPU's stolen time is not
 * visible to the guest.
 *
 * usage: cpu_clock [ROUNDS]     (default 7; prints one number, Hz, to stdout) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "median.h"

#define CHAIN 200000000ull /* adds per round: ~0.05-0.1 s at 2-4 GHz */

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#if defined(__x86_64__)
/* One round of a chain: mul 0, CHAIN register adds (1 cycle each); mul 1, CHAIN / 3
 * multiplies (3 cycles each). Hz, or 0 if the chain's result is not what it computes. */
static double chain_hz(int mul)
{
    uint64_t x = mul ? 1 : 0, n = mul ? CHAIN / 24 : CHAIN / 8, one = 1;
    const uint64_t steps = n * 8;
    const double t0 = thread_cpu_s();
    /* 8 dependent operations per iteration; the loop's own counter and branch run on
     * other ports in parallel with the chain, so the chain alone sets the pace. */
    if (mul)
        __asm__ volatile("1:\n\t"
                         "imul %2, %0\n\t"
                         "imul %2, %0\n\t"
                         "imul %2, %0\n\t"
                         "imul %2, %0\n\t"
                         "imul %2, %0\n\t"
                         "imul %2, %0\n\t"
                         "imul %2, %0\n\t"
                         "imul %2, %0\n\t"
                         "dec %1\n\t"
                         "jnz 1b\n\t"
                         : "+r"(x), "+r"(n)
                         : "r"(one)
                         : "cc");
    else
        __asm__ volatile("1:\n\t"
                         "add %2, %0\n\t"
                         "add %2, %0\n\t"
                         "add %2, %0\n\t"
                         "add %2, %0\n\t"
                         "add %2, %0\n\t"
                         "add %2, %0\n\t"
                         "add %2, %0\n\t"
                         "add %2, %0\n\t"
                         "dec %1\n\t"
                         "jnz 1b\n\t"
                         : "+r"(x), "+r"(n)
                         : "r"(one)
                         : "cc");
    const double t = thread_cpu_s() - t0;
    if (x != (mul ? 1 : steps) || !(t > 0)) return 0;
    return (double)steps * (mul ? 3 : 1) / t;
}
#endif

int main(int argc, char **argv)
{
#if defined(__x86_64__)
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    if (rounds < 1 || rounds > 101) {
        fprintf(stderr, "cpu_clock: ROUNDS must be between 1 and 101\n");
        return 2;
    }
    double hz[101], mul[101];
    for (int r = 0; r < rounds; r++) {
        hz[r] = chain_hz(0);
        mul[r] = chain_hz(1);
        if (!(hz[r] > 0) || !(mul[r] > 0)) {
            fprintf(stderr, "cpu_clock: the chain did not run as written\n");
            return 1;
        }
    }
    const double add_hz = bench_median(hz, rounds), mul_hz = bench_median(mul, rounds);
    if (add_hz > 1.15 * mul_hz || mul_hz > 1.15 * add_hz) {
        fprintf(stderr, "cpu_clock: the add chain says %.2f GHz, the multiply chain %.2f GHz: not a clock\n",
                add_hz / 1e9, mul_hz / 1e9);
        return 1;
    }
    printf("%.0f\n", add_hz);
    return 0;
#else
    (void)argc;
    (void)argv;
    fprintf(stderr, "cpu_clock: only x86-64 is supported\n");
    return 2;
#endif
}
