/* kernels/cpu/seq.c - the language models' kernels (ops.h): an embedding table read by
 * token ids, and the causal softmax of attention scores. */
#include <math.h>
#include <string.h>

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

void causal_softmax_forward(size_t mats, int T, float scale, const float *inp, float *out)
{
    for (size_t m = 0; m < mats; m++) {
        for (int i = 0; i < T; i++) {
            const float *x = inp + (m * (size_t)T + (size_t)i) * (size_t)T;
            float *y = out + (m * (size_t)T + (size_t)i) * (size_t)T;
            /* only positions 0..i are read: the masked half is never computed */
            float mx = x[0] * scale;
            for (int j = 1; j <= i; j++) {
                const float v = x[j] * scale;
                mx = v > mx ? v : mx; /* fmaxf without its call: a NaN is skipped alike */
            }
            float sum = 0.0f;
            for (int j = 0; j <= i; j++) {
                y[j] = expf(x[j] * scale - mx);
                sum += y[j];
            }
            const float inv = 1.0f / sum;
            for (int j = 0; j <= i; j++) y[j] *= inv;
            for (int j = i + 1; j < T; j++) y[j] = 0.0f;
        }
    }
}

void causal_softmax_backward(size_t mats, int T, float scale, const float *out, const float *dout, float *dinp, int set)
{
    for (size_t m = 0; m < mats; m++) {
        for (int i = 0; i < T; i++) {
            const size_t row = (m * (size_t)T + (size_t)i) * (size_t)T;
            const float *y = out + row, *g = dout + row;
            float *d = dinp + row;
            float dot = 0.0f;
            for (int j = 0; j <= i; j++) dot += y[j] * g[j];
            if (set) {
                for (int j = 0; j <= i; j++) d[j] = scale * y[j] * (g[j] - dot);
                for (int j = i + 1; j < T; j++) d[j] = 0.0f;
            } else {
                for (int j = 0; j <= i; j++) d[j] += scale * y[j] * (g[j] - dot);
            }
        }
    }
}
