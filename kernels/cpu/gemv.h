/* kernels/cpu/gemv.h - one row through a linear layer: out (OUT) = W (OUT, IN) x in + bias.
 * Generation (model/decode.c) runs each new token as one row: a matrix-vector product per
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

/* Partial sums per row of the own kernel: GEMV_LANES of them, one AVX-512 or two AVX2
 * registers. */
enum { GEMV_LANES = 16 };

/* The GEMV_LANES lanes' sum by halving, ((a0 + a8) + (a4 + a12)) + ...: vector adds, no
 * serial chain (written out: a loop over the halves is not unrolled). a is overwritten. */
static inline __attribute__((always_inline)) float gemv_lane_sum(float *restrict a)
{
    for (int j = 0; j < 8; j++) a[j] += a[j + 8];
    for (int j = 0; j < 4; j++) a[j] += a[j + 4];
    return (a[0] + a[2]) + (a[1] + a[3]);
}

/* s plus a[from..n) . b[from..n), added one by one in order: the terms after the lanes. */
static inline __attribute__((always_inline)) float gemv_tail_dot(int from, int n, const float *restrict a,
                                                                 const float *restrict b, float s)
{
    for (int i = from; i < n; i++) s += a[i] * b[i];
    return s;
}

/* a . b over n floats as the own kernel sums one row: lane j the terms j, j + 16, ... in
 * order, the lanes by halving, then the n % GEMV_LANES last terms in order. Inlined, so
 * that a caller's target_clones vectorise it for their ISA. */
static inline __attribute__((always_inline)) float gemv_dot(int n, const float *restrict a, const float *restrict b)
{
    const int body = n - n % GEMV_LANES;
    float acc[GEMV_LANES] = {0};
    for (int i = 0; i < body; i += GEMV_LANES)
        for (int j = 0; j < GEMV_LANES; j++) acc[j] += a[i + j] * b[i + j];
    return gemv_tail_dot(body, n, a, b, gemv_lane_sum(acc));
}

enum { GEMV_AUTO = -1, GEMV_OWN = 0, GEMV_OPENBLAS = 1 };
/* For tests: run the own kernel (GEMV_OWN) or OpenBLAS's (GEMV_OPENBLAS) from now on, or
 * go back to the choice above (GEMV_AUTO). Not while a product runs. */
void gemv_force(int which);

#endif
