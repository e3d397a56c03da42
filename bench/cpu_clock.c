/* bench/cpu_clock.c - the clock one core actually runs at, measured, for machines where
 * perf cannot count cycles (virtual machines without a PMU: this project's development
 * VM reports cycles:u "not supported"). bench/lenet_vs_pytorch.sh turns a process's CPU
 * time into cycles with it, to say what share of one core's peak pacer reaches.
 *
 * How: a chain of N dependent 64-bit integer adds takes N cycles on every x86-64 core of
 * the last decade (an add's latency is one cycle and each waits for the one before), so
 * N / elapsed is the clock, turbo included, with no nominal figure from /proc/cpuinfo.
 * The chain is inline assembly so the compiler can neither fold nor vectorise it. Each
 * measurement is the thread's CPU time (time the scheduler gave to others does not
 * count), and the result is the median of ROUNDS rounds, printed in Hz.
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

int main(int argc, char **argv)
{
#if defined(__x86_64__)
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    if (rounds < 1 || rounds > 101) {
        fprintf(stderr, "cpu_clock: ROUNDS must be between 1 and 101\n");
        return 2;
    }
    double hz[101];
    for (int r = 0; r < rounds; r++) {
        uint64_t x = 0, n = CHAIN / 8;
        double t0 = thread_cpu_s();
        /* 8 dependent adds per iteration; the loop's own counter and branch run on other
         * ports in parallel with the chain, so the chain alone sets the pace. */
        __asm__ volatile("1:\n\t"
                         "add $1, %0\n\t"
                         "add $1, %0\n\t"
                         "add $1, %0\n\t"
                         "add $1, %0\n\t"
                         "add $1, %0\n\t"
                         "add $1, %0\n\t"
                         "add $1, %0\n\t"
                         "add $1, %0\n\t"
                         "dec %1\n\t"
                         "jnz 1b\n\t"
                         : "+r"(x), "+r"(n)
                         :
                         : "cc");
        double t = thread_cpu_s() - t0;
        if (x != CHAIN / 8 * 8 || !(t > 0)) {
            fprintf(stderr, "cpu_clock: the chain did not run as written\n");
            return 1;
        }
        hz[r] = (double)CHAIN / t;
    }
    printf("%.0f\n", bench_median(hz, rounds));
    return 0;
#else
    (void)argc;
    (void)argv;
    fprintf(stderr, "cpu_clock: only x86-64 is supported\n");
    return 2;
#endif
}
