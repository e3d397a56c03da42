/* kernels/cpu/blas_core.h - which OpenBLAS kernels the CPU path runs on.
 *
 * A DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernels for the CPU when it is loaded,
 * unless OPENBLAS_CORETYPE names them. The choice moves every CPU figure: on this
 * project's development VM (AMD Zen 5) OpenBLAS picks Cooperlake (AVX-512), but the
 * environment there sets OPENBLAS_CORETYPE=Haswell (AVX2), and LeNet-5 trains 1.8x slower
 * on those (docs/PERFORMANCE.md). So a CPU rank's summary names its kernels
 * (per_rank[].device.blas), and the benchmarks print them. */
#ifndef PACER_BLAS_CORE_H
#define PACER_BLAS_CORE_H

/* The kernels OpenBLAS runs in this process ("Haswell", "Cooperlake", ...; "unknown"). */
const char *blas_core(void);
/* Whether those are AVX-512 kernels (SkylakeX, Cooperlake, SapphireRapids): the direct
 * convolution kernels follow that choice (conv_direct.h). */
int blas_core_avx512(void);
/* Whether they are AVX2 or wider (Haswell, Zen and the AVX-512 ones): gemv.c leaves the
 * matrix-vector product to OpenBLAS then, and runs its own kernel on older ones (the SSE3
 * Prescott kernels OpenBLAS 0.3.21 takes for CPUs it does not know). */
int blas_core_avx2(void);

/* The kernels this CPU's own feature flags (cpuid, and the OS's saved states) allow:
 * "SkylakeX" with AVX-512 (F, CD, BW, DQ, VL), "Haswell" with AVX2 and FMA, else NULL (no
 * better choice than OpenBLAS's). OpenBLAS 0.3.21 picks by the CPU's model number and takes
 * a model it does not know (the Xeons of family 6, model 207) for a Prescott: SSE3 kernels,
 * ten times slower at a GPT's products (docs/PERFORMANCE.md). */
const char *blas_core_by_flags(void);
/* Whether core a's kernels are narrower than b's (Prescott's SSE3 below Haswell's AVX2
 * below SkylakeX's AVX-512); 0 for a name it does not rank. */
int blas_core_narrower(const char *a, const char *b);
/* A program's first call, before anything else runs (before MPI_Init): when OpenBLAS took
 * narrower kernels than the flags allow and OPENBLAS_CORETYPE is not set (a user's choice
 * is kept), it runs the program again (execv of /proc/self/exe, the same arguments) with
 * OPENBLAS_CORETYPE set to blas_core_by_flags(), which OpenBLAS reads only when it loads.
 * Returns only when there is nothing to do or the execv failed (then with a warning on
 * stderr). PACER_BLAS_PICKED=NAME makes it take OpenBLAS's choice as NAME (the tests: a
 * CPU OpenBLAS does not know cannot be made up). */
void blas_core_choose(char **argv);
/* After blas_core_choose ran the program again: what OpenBLAS had taken ("Prescott"), else
 * NULL. */
const char *blas_core_replaced(void);

#endif
