/* kernels/cpu/gemv.h - one row through a linear layer: out (OUT) = W (OUT, IN) x in + bias.
 * Generation (model/generate.c) runs each new token as one row: a matrix-vector product per
 * weight, bound by reading the weights from memory (43 MB a token for a 6 x 384 GPT).
 *
 * Which kernel: OpenBLAS's sgemv where OpenBLAS runs AVX2 or wider kernels (blas_core_avx2:
 * Haswell, Zen, SkylakeX, ...), as fast as this file's in pacer-generate and about 8% faster
 * alone over a GPT's weights; this file's own kernel elsewhere, in particular where OpenBLAS
 * 0.3.21 does not know the CPU and runs its SSE3 Prescott kernels (this project's Xeon VMs,
 * family 6 model 207, without OPENBLAS_CORETYPE): their sgemv gave pacer-generate 1.8x fewer
 * tokens a second (docs/PERFORMANCE.md). Not bit for bit gemm_forward's: training never calls it. */
#ifndef PACER_GEMV_H
#define PACER_GEMV_H

/* w (OUT, IN) row-major (torch's Linear), bias (OUT) or NULL. IN or OUT 0 (or below) is
 * allowed: out = bias (or zeros) for IN 0, nothing written for OUT 0. No allocation. */
void gemv_forward(int IN, int OUT, const float *in, const float *w, const float *bias, float *out);

enum { GEMV_AUTO = -1, GEMV_OWN = 0, GEMV_OPENBLAS = 1 };
/* For tests: run the own kernel (GEMV_OWN) or OpenBLAS's (GEMV_OPENBLAS) from now on, or
 * go back to the choice above (GEMV_AUTO). Not while a product runs. */
void gemv_force(int which);

#endif
