/* kernels/cpu/seq.c - the language models' kernels (ops.h): an embedding table read by
 * token ids, and the causal softmax of attention scores. */
#include <math.h>
#include <string.h>

/* softmax.c's reason: with trapping math gcc keeps the selects of ufn_max and ufn_exp as
 * branches and the loops scalar; nothing here reads the floating-point flags */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "ops.h"

/* The row of table an id names, or NULL for one outside [0, V) (a float-coded id that is
 * not whole is truncated, as a cast does). */
static const float *embed_row(const float *table, int V, int E, float id)
{
    if (!(id >= 0.0f && id < (float)V)) return NULL;
    return table + (size_t)id * (size_t)E;
}

void embed_forward(size_t rows, int V, int E, const float *ids, const float *table, float *out)
{
    for (size_t r = 0; r < rows; r++) {
        const float *src = embed_row(table, V, E, ids[r]);
        float *dst = out + r * (size_t)E;
        if (src) memcpy(dst, src, (size_t)E * sizeof *dst);
        else memset(dst, 0, (size_t)E * sizeof *dst);
    }
}

void embed_backward(size_t rows, int V, int E, const float *ids, const float *dout, float *dtable, int add)
{
    if (!add) memset(dtable, 0, (size_t)V * (size_t)E * sizeof *dtable);
    for (size_t r = 0; r < rows; r++) {
        const float id = ids[r];
        if (!(id >= 0.0f && id < (float)V)) continue;
        float *dst = dtable + (size_t)id * (size_t)E;
        const float *g = dout + r * (size_t)E;
        for (int e = 0; e < E; e++) dst[e] += g[e];
    }
}

/* The causal softmax's rows, through eight lanes as softmax.c's lines: the running maxima
 * and sums of positions j = 8q + k kept in lane k, the lanes folded in order at the end, so
 * gcc vectorises the loops and every build (the AVX2 clone or not, without FMA in either)
 * gives the same bits; the exponentials are scalar_fn.h's ufn_exp, which vectorises, where
 * a call to expf per position did not (the softmax with its expf was 4-5% of the GPT's step
 * at nanoGPT's CPU shape). */
#define CAUSAL_LANES 8

static inline float causal_fold_sum(const float *l)
{
    float s = 0.0f;
    for (int k = 0; k < CAUSAL_LANES; k++) s += l[k];
    return s;
}

/* y[0..n) = softmax(scale * x[0..n)); n >= 1 */
static inline void causal_row_fwd(int n, float scale, const float *x, float *y)
{
    float lm[CAUSAL_LANES], ls[CAUSAL_LANES] = {0};
    int j = 0;
    for (int k = 0; k < CAUSAL_LANES; k++) lm[k] = x[0] * scale;
    for (; j + CAUSAL_LANES <= n; j += CAUSAL_LANES)
        for (int k = 0; k < CAUSAL_LANES; k++) lm[k] = ufn_max(x[j + k] * scale, lm[k]);
    float mx = lm[0];
    for (int k = 1; k < CAUSAL_LANES; k++) mx = ufn_max(lm[k], mx);
    for (; j < n; j++) mx = ufn_max(x[j] * scale, mx);
    for (j = 0; j + CAUSAL_LANES <= n; j += CAUSAL_LANES)
        for (int k = 0; k < CAUSAL_LANES; k++) {
            y[j + k] = ufn_exp(x[j + k] * scale - mx);
            ls[k] += y[j + k];
        }
    float sum = causal_fold_sum(ls);
    for (; j < n; j++) {
        y[j] = ufn_exp(x[j] * scale - mx);
        sum += y[j];
    }
    const float inv = 1.0f / sum;
    for (j = 0; j < n; j++) y[j] *= inv;
}

/* sum over j < n of y[j] * g[j], by lanes */
static inline float causal_row_dot(int n, const float *y, const float *g)
{
    float l[CAUSAL_LANES] = {0};
    int j = 0;
    for (; j + CAUSAL_LANES <= n; j += CAUSAL_LANES)
        for (int k = 0; k < CAUSAL_LANES; k++) l[k] += y[j + k] * g[j + k];
    float dot = causal_fold_sum(l);
    for (; j < n; j++) dot += y[j] * g[j];
    return dot;
}

__attribute__((target_clones("avx2", "default"))) void causal_softmax_forward(size_t mats, int T, float scale,
                                                                              const float *inp, float *out)
{
    for (size_t m = 0; m < mats; m++) {
        for (int i = 0; i < T; i++) {
            const float *x = inp + (m * (size_t)T + (size_t)i) * (size_t)T;
            float *y = out + (m * (size_t)T + (size_t)i) * (size_t)T;
            /* only positions 0..i are read: the masked half is never computed */
            causal_row_fwd(i + 1, scale, x, y);
            for (int j = i + 1; j < T; j++) y[j] = 0.0f;
        }
    }
}

__attribute__((target_clones("avx2", "default"))) void
causal_softmax_backward(size_t mats, int T, float scale, const float *out, const float *dout, float *dinp, int set)
{
    for (size_t m = 0; m < mats; m++) {
        for (int i = 0; i < T; i++) {
            const size_t row = (m * (size_t)T + (size_t)i) * (size_t)T;
            const float *y = out + row, *g = dout + row;
            float *d = dinp + row;
            const float dot = causal_row_dot(i + 1, y, g);
            if (set) {
                for (int j = 0; j <= i; j++) d[j] = scale * y[j] * (g[j] - dot);
                for (int j = i + 1; j < T; j++) d[j] = 0.0f;
            } else {
                for (int j = 0; j <= i; j++) d[j] += scale * y[j] * (g[j] - dot);
            }
        }
    }
}
