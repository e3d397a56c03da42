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

#endif
