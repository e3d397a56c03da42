/* kernels/cpu/layernorm.c - layer normalisation over the last axes (ops.h's
 * layernorm_forward): each row of D elements normalised alone by its own mean and biased
 * variance, then scaled and shifted per element. The model's layers keep each row's
 * statistics from the forward for the backward (layernorm_forward_saving: 16 bytes a row
 * in the activation arena), which otherwise recomputes them, two of its five passes over
 * the row in double: the same doubles either way, so the same bits.
 *
 * Sums and each element's normalisation in double, as before these loops were vectorised:
 * float sums of a row's terms (the backward's sum(g w xhat) cancels) moved a ConvNeXt's
 * AdamW weights off torch's by more than onnx_vit.sh allows. The sums go in dlanes.h's DLANES
 * explicit lanes, which gcc vectorises without reassociating (a row is 32-768 elements in
 * the networks here); the reference in double is kernels/ref's, and test_op_table and
 * test_ops hold these to it. Each loop has an AVX-512 clone beside the AVX2 one, the same
 * operations in the same order (no FMA: ISO C forbids contracting them), so the same bits:
 * on a Zen 5 the GPT at nanoGPT's CPU shape took 0.48 -> 0.41 ms a step in its layer
 * norms' forward and 0.65 -> 0.47 in their backward. */
#include <math.h>
#include <string.h>

/* elementwise.c's reason: nothing here reads the floating-point flags, and with trapping
 * math gcc keeps some of these loops scalar */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "dlanes.h"
#include "gemm_bf16_act.h"
#include "ops.h"
#include "prefetch.h"

typedef float ln_v4f __attribute__((vector_size(16)));

/* mean and 1 / sqrt(var + eps) of one row: the mean, then the variance about it (two
 * passes: no cancellation) */
__attribute__((always_inline)) static inline void row_stats(const float *x, int D, float eps, double *mean,
                                                            double *invstd)
{
    dlanes_v4d q0 = {0}, q1 = {0};
    const int D8 = D / DLANES * DLANES;
    const double m = dlanes_sum(x, D) / D;
    for (int j = 0; j < D8; j += DLANES) {
        const dlanes_v4d d0 = DLANES_LOAD4(x + j) - m, d1 = DLANES_LOAD4(x + j + 4) - m;
        q0 += d0 * d0;
        q1 += d1 * d1;
    }
    double v = dlanes_fold(&q0, &q1);
    for (int j = D8; j < D; j++) v += ((double)x[j] - m) * ((double)x[j] - m);
    *mean = m;
    *invstd = 1.0 / sqrt(v / D + (double)eps);
}

/* stats, where not NULL: each row's mean and 1 / std, for the backward */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
ln_forward(int rows, int D, float eps, const float *inp, const float *w, const float *b, float *out, double *stats)
{
    for (int r = 0; r < rows; r++) {
        const float *x = inp + (size_t)r * D;
        float *y = out + (size_t)r * D;
        double mean, invstd;
        row_stats(x, D, eps, &mean, &invstd);
        if (stats) stats[2 * (size_t)r] = mean, stats[2 * (size_t)r + 1] = invstd;
        for (int j = 0; j < D; j++) y[j] = (float)(((double)x[j] - mean) * invstd) * w[j] + b[j];
    }
}

/* The longest row the bf16 forward computes whole on the stack (16 KB), ln_forward's own
 * loop; a longer one goes in chunks of it, the same expression. */
#define LN_ROW 4096

/* ln_forward's rows of more than LN_ROW elements into bf16, LN_ROW at a time */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
ln_forward_bf16_long(int rows, int D, float eps, const float *inp, const float *w, const float *b, uint16_t *out,
                     double *stats)
{
    float y[LN_ROW];
    for (int r = 0; r < rows; r++) {
        const float *x = inp + (size_t)r * D;
        double mean, invstd;
        row_stats(x, D, eps, &mean, &invstd);
        if (stats) stats[2 * (size_t)r] = mean, stats[2 * (size_t)r + 1] = invstd;
        for (int j0 = 0; j0 < D; j0 += LN_ROW) {
            const int n = D - j0 < LN_ROW ? D - j0 : LN_ROW;
            for (int j = 0; j < n; j++) y[j] = (float)(((double)x[j0 + j] - mean) * invstd) * w[j0 + j] + b[j0 + j];
            bf16_act_store((size_t)n, y, out + (size_t)r * D + j0);
        }
    }
}

/* ln_forward with its output stored in bf16 (bf16_act_store's rounding): each row by
 * ln_forward itself into a row on the stack (the same floats), then rounded. */
void layernorm_forward_saving_bf16(int rows, int D, float eps, const float *inp, const float *w, const float *b,
                                   uint16_t *out, double *stats)
{
    if (D > LN_ROW) {
        ln_forward_bf16_long(rows, D, eps, inp, w, b, out, stats);
        return;
    }
    float y[LN_ROW];
    for (int r = 0; r < rows; r++) {
        ln_forward(1, D, eps, inp + (size_t)r * D, w, b, y, stats ? stats + 2 * (size_t)r : NULL);
        bf16_act_store((size_t)D, y, out + (size_t)r * D);
    }
}

void layernorm_forward(int rows, int D, float eps, const float *inp, const float *w, const float *b, float *out)
{
    ln_forward(rows, D, eps, inp, w, b, out, NULL);
}

void layernorm_forward_saving(int rows, int D, float eps, const float *inp, const float *w, const float *b, float *out,
                              double *stats)
{
    ln_forward(rows, D, eps, inp, w, b, out, stats);
}

/* dinp += invstd (g w - mean(g w) - xhat mean(g w xhat)), or with set dinp = that + 0.0f
 * (the bits of adding into zeros, dinp not read); dw += g xhat, db += g, in the pass that
 * writes dinp. (dw and db in the sums' pass was slower: the float updates kept that loop
 * from vectorising as well.) */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
layernorm_bwd(int rows, int D, float eps, const float *inp, const float *w, const double *stats, const float *dout,
              float *dinp, int set, float *dw, float *db)
{
    /* dw and db NULL: a frozen weight and bias (model.h's no_update), not computed */
    if (dw) memset(dw, 0, (size_t)D * sizeof *dw);
    if (db) memset(db, 0, (size_t)D * sizeof *db);
    const int D8 = D / DLANES * DLANES;
    for (int r = 0; r < rows; r++) {
        const float *x = inp + (size_t)r * D, *g = dout + (size_t)r * D;
        double mean, invstd;
        dlanes_v4d lg0 = {0}, lg1 = {0}, lgx0 = {0}, lgx1 = {0};
        if (stats) mean = stats[2 * (size_t)r], invstd = stats[2 * (size_t)r + 1];
        else row_stats(x, D, eps, &mean, &invstd);
        /* the rows ahead: the input is cold since the forward */
        for (int j = 0; j < D; j += 16) prefetch_ahead(x, (size_t)j, 0), prefetch_ahead(g, (size_t)j, 0);
        for (int j = 0; j < D8; j += DLANES) {
            const dlanes_v4d xh0 = (DLANES_LOAD4(x + j) - mean) * invstd,
                             xh1 = (DLANES_LOAD4(x + j + 4) - mean) * invstd;
            const dlanes_v4d gw0 = DLANES_LOAD4(g + j) * DLANES_LOAD4(w + j),
                             gw1 = DLANES_LOAD4(g + j + 4) * DLANES_LOAD4(w + j + 4);
            lg0 += gw0;
            lg1 += gw1;
            lgx0 += gw0 * xh0;
            lgx1 += gw1 * xh1;
        }
        double sg = dlanes_fold(&lg0, &lg1), sgx = dlanes_fold(&lgx0, &lgx1);
        for (int j = D8; j < D; j++) {
            const double xh = ((double)x[j] - mean) * invstd, gw = (double)g[j] * w[j];
            sg += gw;
            sgx += gw * xh;
        }
        /* the means of g w and g w xhat: one division a row, not one an element */
        const double mg = sg / D, mgx = sgx / D;
        if (dw)
            for (int j = 0; j < D; j++) dw[j] += (float)(g[j] * (((double)x[j] - mean) * invstd));
        if (db)
            for (int j = 0; j < D; j++) db[j] += g[j];
        if (!dinp) continue;
        float *d = dinp + (size_t)r * D;
        if (set)
            for (int j = 0; j < D; j++) {
                const double xh = ((double)x[j] - mean) * invstd;
                d[j] = (float)(invstd * ((double)g[j] * w[j] - mg - xh * mgx)) + 0.0f;
            }
        else
            for (int j = 0; j < D; j++) {
                const double xh = ((double)x[j] - mean) * invstd;
                d[j] += (float)(invstd * ((double)g[j] * w[j] - mg - xh * mgx));
            }
    }
}

void layernorm_backward(int rows, int D, float eps, const float *inp, const float *w, const float *dout, float *dinp,
                        float *dw, float *db)
{
    layernorm_bwd(rows, D, eps, inp, w, NULL, dout, dinp, 0, dw, db);
}

void layernorm_backward_set(int rows, int D, float eps, const float *inp, const float *w, const float *dout,
                            float *dinp, float *dw, float *db)
{
    layernorm_bwd(rows, D, eps, inp, w, NULL, dout, dinp, 1, dw, db);
}

void layernorm_backward_saved(int rows, int D, float eps, const float *inp, const float *w, const double *stats,
                              const float *dout, float *dinp, int set, float *dw, float *db)
{
    layernorm_bwd(rows, D, eps, inp, w, stats, dout, dinp, set, dw, db);
}
