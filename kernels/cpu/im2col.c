/* kernels/cpu/im2col.c - see im2col.h. */
#include "im2col.h"

#include "prefetch.h"

/* The rows im2col copies are short (10..32 floats at LeNet and CIFAR sizes); gcc would
 * turn the copy and zero loops into memcpy/memset calls, whose call overhead is most of
 * the cost at that length (LeNet forward 10% slower measured). */
#if defined(__GNUC__) && !defined(__clang__)
#define KEEP_LOOPS_INLINE __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define KEEP_LOOPS_INLINE
#endif

/* Valid output-column range [*lo, *hi) for a kernel tap at offset off (kw * dilation):
 * the ow whose input column ow*stride - pad + off lies in [0, W). Computing it once per
 * row keeps the copy loops free of bounds tests. */
static void valid_range(int off, int pad, int stride, int W, int OW, int *lo, int *hi)
{
    int first = pad - off; /* ow*stride >= pad - off */
    int l = first > 0 ? (first + stride - 1) / stride : 0;
    int last = W - 1 + pad - off; /* ow*stride <= W - 1 + pad - off */
    int h = last < 0 ? 0 : last / stride + 1;
    if (h > OW) h = OW;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

__attribute__((target_clones("avx2", "default"))) KEEP_LOOPS_INLINE void
im2col_chunk(const conv2d_desc_t *d, int nb, const float *restrict inp, /* (nb, C, H, W) */
             float *restrict col,                                       /* (C*KH*KW, nb*OH*OW), rows ld apart */
             size_t ld)
{
    const int C = d->C, H = d->H, W = d->W, KH = d->KH, KW = d->KW;
    const int OH = d->OH, OW = d->OW, sh = d->sH, s = d->sW, pt = d->pad_t, pl = d->pad_l;
    const size_t P = (size_t)OH * OW;

    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < KH; kh++)
            for (int kw = 0; kw < KW; kw++) {
                float *row = col + ((size_t)(c * KH + kh) * KW + kw) * ld;
                int lo, hi;
                valid_range(kw * d->dW, pl, s, W, OW, &lo, &hi);
                const int n = hi - lo, iw0 = lo * s - pl + kw * d->dW;
                for (int b = 0; b < nb; b++) {
                    const float *plane = inp + ((size_t)b * C + c) * H * W;
                    for (int oh = 0; oh < OH; oh++) {
                        float *dst = row + (size_t)b * P + (size_t)oh * OW;
                        const int ih = oh * sh - pt + kh * d->dH;
                        if (ih < 0 || ih >= H || n <= 0) {
                            for (int ow = 0; ow < OW; ow++) dst[ow] = 0.0f;
                            continue;
                        }
                        for (int ow = 0; ow < lo; ow++) dst[ow] = 0.0f;
                        const float *src = plane + (size_t)ih * W + iw0;
                        float *dv = dst + lo;
                        /* a constant stride lets gcc vectorise the strided access */
                        if (s == 1)
                            for (int j = 0; j < n; j++) dv[j] = src[j];
                        else if (s == 2)
                            for (int j = 0; j < n; j++) dv[j] = src[2 * j];
                        else
                            for (int j = 0; j < n; j++) dv[j] = src[j * s];
                        for (int ow = hi; ow < OW; ow++) dst[ow] = 0.0f;
                    }
                }
            }
}

__attribute__((target_clones("avx2", "default"))) void
col2im_chunk_add(const conv2d_desc_t *d, int nb, const float *restrict col, /* (C*KH*KW, nb*OH*OW), rows ld apart */
                 size_t ld, float *restrict dinp)                           /* (nb, C, H, W) += */
{
    const int C = d->C, H = d->H, W = d->W, KH = d->KH, KW = d->KW;
    const int OH = d->OH, OW = d->OW, sh = d->sH, s = d->sW, pt = d->pad_t, pl = d->pad_l;
    const size_t P = (size_t)OH * OW;

    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < KH; kh++)
            for (int kw = 0; kw < KW; kw++) {
                const float *row = col + ((size_t)(c * KH + kh) * KW + kw) * ld;
                int lo, hi;
                valid_range(kw * d->dW, pl, s, W, OW, &lo, &hi);
                const int n = hi - lo, iw0 = lo * s - pl + kw * d->dW;
                if (n <= 0) continue;
                for (int b = 0; b < nb; b++) {
                    float *plane = dinp + ((size_t)b * C + c) * H * W;
                    for (int oh = 0; oh < OH; oh++) {
                        const int ih = oh * sh - pt + kh * d->dH;
                        if (ih < 0 || ih >= H) continue;
                        const float *src = row + (size_t)b * P + (size_t)oh * OW + lo;
                        float *dst = plane + (size_t)ih * W + iw0;
                        if (s == 1)
                            for (int j = 0; j < n; j++) dst[j] += src[j];
                        else if (s == 2)
                            for (int j = 0; j < n; j++) dst[2 * j] += src[j];
                        else
                            for (int j = 0; j < n; j++) dst[j * s] += src[j];
                    }
                }
            }
}

/* The valid part of an output grid (M rows ldy apart, each `rows` grid rows of PW) into M
 * planes of rows x cols: out = grid + bias (bias may be NULL), or out += grid (accumulate). */
void conv_grid_to_planes(int M, int rows, int cols, int PW, const float *restrict y, size_t ldy, const float *bias,
                         int accumulate, float *restrict out)
{
    const size_t P = (size_t)rows * cols;
    for (int m = 0; m < M; m++) {
        const float *r = y + (size_t)m * ldy;
        float *o = out + (size_t)m * P;
        prefetch_next_share(out, (size_t)M * P * sizeof(float), (size_t)m, (size_t)M);
        if (accumulate) {
            for (int h = 0; h < rows; h++)
                for (int w = 0; w < cols; w++) o[h * cols + w] += r[(size_t)h * PW + w];
            continue;
        }
        const float bv = bias ? bias[m] : 0.0f;
        for (int h = 0; h < rows; h++)
            for (int w = 0; w < cols; w++) o[h * cols + w] = r[(size_t)h * PW + w] + bv;
    }
}

/* The inverse: M planes of rows x cols onto a grid of rows x PW (M rows ldy apart), zeros
 * in the columns past cols and from rows*PW up to n. */
void conv_planes_to_grid(int M, int rows, int cols, int PW, const float *restrict src, float *restrict y, size_t ldy,
                         size_t n)
{
    for (int m = 0; m < M; m++) {
        const float *s = src + (size_t)m * rows * cols;
        float *r = y + (size_t)m * ldy;
        for (int h = 0; h < rows; h++) {
            for (int w = 0; w < cols; w++) r[(size_t)h * PW + w] = s[h * cols + w];
            for (int w = cols; w < PW; w++) r[(size_t)h * PW + w] = 0.0f;
        }
        for (size_t i = (size_t)rows * PW; i < n; i++) r[i] = 0.0f;
    }
}
