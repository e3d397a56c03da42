/* kernels/cpu/gemv.c - see gemv.h. */
#include "gemv.h"

#include <cblas.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "blas_core.h"

/* out[0..4) = bias + W[0..4) . in: four rows share each load of in and keep four rows of
 * independent lane sums, so the weights stream at memory speed without a chain of dependent
 * additions. Each output is summed in gemv_dot's order (gemv.h), then the bias added. */
static inline __attribute__((always_inline)) void four_rows(int IN, const float *restrict in, const float *restrict w,
                                                            const float *restrict bias, float *restrict out)
{
    const int body = IN - IN % GEMV_LANES;
    const float *w0 = w, *w1 = w + IN, *w2 = w1 + IN, *w3 = w2 + IN;
    float a0[GEMV_LANES] = {0}, a1[GEMV_LANES] = {0}, a2[GEMV_LANES] = {0}, a3[GEMV_LANES] = {0};
    for (int i = 0; i < body; i += GEMV_LANES)
        for (int j = 0; j < GEMV_LANES; j++) {
            const float x = in[i + j];
            a0[j] += w0[i + j] * x;
            a1[j] += w1[i + j] * x;
            a2[j] += w2[i + j] * x;
            a3[j] += w3[i + j] * x;
        }
    const float s[4] = {gemv_tail_dot(body, IN, in, w0, gemv_lane_sum(a0)),
                        gemv_tail_dot(body, IN, in, w1, gemv_lane_sum(a1)),
                        gemv_tail_dot(body, IN, in, w2, gemv_lane_sum(a2)),
                        gemv_tail_dot(body, IN, in, w3, gemv_lane_sum(a3))};
    for (int r = 0; r < 4; r++) out[r] = bias ? bias[r] + s[r] : s[r];
}

/* The own kernel, IN and OUT above 0. Its clones compute the same bits: C fixes the order of
 * every float operation (no -ffast-math, and -std=c11 contracts no a * b + c into an FMA),
 * so a vector width changes how many lanes run at once, never a result. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
own_gemv(int IN, int OUT, const float *restrict in, const float *restrict w, const float *restrict bias,
         float *restrict out)
{
    int o = 0;
    for (; o + 4 <= OUT; o += 4) four_rows(IN, in, w + (size_t)o * IN, bias ? bias + o : NULL, out + o);
    for (; o < OUT; o++) {
        const float s = gemv_dot(IN, in, w + (size_t)o * IN); /* four_rows's order of sums */
        out[o] = bias ? bias[o] + s : s;
    }
}

static atomic_int g_forced = GEMV_AUTO, g_blas = -1;

void gemv_force(int which) { atomic_store(&g_forced, which); }

static int use_blas(void)
{
    const int forced = atomic_load(&g_forced);
    if (forced != GEMV_AUTO) return forced == GEMV_OPENBLAS;
    int b = atomic_load(&g_blas);
    if (b < 0) {
        b = blas_core_avx2(); /* OpenBLAS picks its kernels once, when it is loaded */
        atomic_store(&g_blas, b);
    }
    return b;
}

void gemv_forward(int IN, int OUT, const float *in, const float *w, const float *bias, float *out)
{
    if (OUT <= 0) return;
    if (IN <= 0) {
        if (bias) memcpy(out, bias, (size_t)OUT * sizeof(float));
        else memset(out, 0, (size_t)OUT * sizeof(float));
        return;
    }
    if (!use_blas()) {
        own_gemv(IN, OUT, in, w, bias, out);
        return;
    }
    if (bias) memcpy(out, bias, (size_t)OUT * sizeof(float));
    cblas_sgemv(CblasRowMajor, CblasNoTrans, OUT, IN, 1.0f, w, IN, in, 1, bias ? 1.0f : 0.0f, out, 1);
}
