/* kernels/cpu/conv_transpose.c - 2-D transposed convolution (ops.h's conv_transpose2d_*):
 * ONNX ConvTranspose and PyTorch nn.ConvTranspose2d, the input gradient of the convolution
 * of the same weight, computed as a convolution's input gradient is: per image and group
 * one GEMM of the weight and the input into columns, which col2im adds into the output
 * planes. The backward is the convolution's forward and weight gradient over the same
 * columns, gathered from the output gradient by im2col. One thread; every product through
 * mm_sgemm, at the process's precision.
 */
#include <string.h>

#include "matmul.h"
#include "ops.h"

/* The output size of one axis without output padding. */
static long long base_size(int in, int k, int s, int pad0, int pad1, int dil)
{
    return (long long)s * (in - 1) + (long long)dil * (k - 1) + 1 - pad0 - pad1;
}

int conv_transpose2d_setup(conv2d_desc_t *d)
{
    if (d->C < 1 || d->H < 1 || d->W < 1 || d->OC < 1 || d->KH < 1 || d->KW < 1 || d->sH < 1 || d->sW < 1 ||
        d->dH < 1 || d->dW < 1 || d->groups < 1 || d->pad_t < 0 || d->pad_l < 0 || d->pad_b < 0 || d->pad_r < 0 ||
        d->C % d->groups != 0 || d->OC % d->groups != 0)
        return -1;
    const long long bh = base_size(d->H, d->KH, d->sH, d->pad_t, d->pad_b, d->dH);
    const long long bw = base_size(d->W, d->KW, d->sW, d->pad_l, d->pad_r, d->dW);
    if (d->OH == 0 && d->OW == 0)
        d->OH = (int)(bh > 0 && bh <= 1 << 24 ? bh : 0), d->OW = (int)(bw > 0 && bw <= 1 << 24 ? bw : 0);
    /* the output padding (OH - bh) below the stride or the dilation, as ONNX asks */
    const long long ph = d->OH - bh, pw = d->OW - bw;
    if (d->OH < 1 || d->OW < 1 || ph < 0 || pw < 0 || (ph > 0 && ph >= d->sH && ph >= d->dH) ||
        (pw > 0 && pw >= d->sW && pw >= d->dW))
        return -1;
    return 0;
}

size_t conv_transpose2d_workspace(const conv2d_desc_t *d, int B)
{
    (void)B;
    return (size_t)(d->OC / d->groups) * d->KH * d->KW * d->H * d->W;
}

/* The columns (Kg, H * W) of group g: row (oc, kh, kw), column (ih, iw) is output pixel
 * (ih * sH - pad_t + kh * dH, iw * sW - pad_l + kw * dW) of channel g * OCg + oc, where it
 * is inside the plane. from: the columns gathered from those planes (im2col; 0 outside);
 * else the columns added into the planes of to (col2im). */
static void col_walk(const conv2d_desc_t *d, int g, float *col, const float *from, float *to)
{
    const int OCg = d->OC / d->groups, N = d->H * d->W;
    for (int oc = 0; oc < OCg; oc++) {
        const size_t plane = (size_t)(g * OCg + oc) * d->OH * d->OW;
        for (int kh = 0; kh < d->KH; kh++)
            for (int kw = 0; kw < d->KW; kw++) {
                float *row = col + ((size_t)(oc * d->KH + kh) * d->KW + kw) * N;
                for (int ih = 0; ih < d->H; ih++) {
                    const int oh = ih * d->sH - d->pad_t + kh * d->dH;
                    const int in_h = oh >= 0 && oh < d->OH;
                    for (int iw = 0; iw < d->W; iw++) {
                        const int ow = iw * d->sW - d->pad_l + kw * d->dW;
                        float *c = row + (size_t)ih * d->W + iw;
                        const int in = in_h && ow >= 0 && ow < d->OW;
                        const size_t at = plane + (size_t)(in ? oh : 0) * d->OW + (in ? ow : 0);
                        if (from) *c = in ? from[at] : 0.0f;
                        else if (in) to[at] += *c;
                    }
                }
            }
    }
}

void conv_transpose2d_forward(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *bias,
                              float *out, float *ws)
{
    const int Cg = d->C / d->groups, OCg = d->OC / d->groups, N = d->H * d->W, Kg = OCg * d->KH * d->KW;
    const size_t plane = (size_t)d->OH * d->OW;
    for (int b = 0; b < B; b++) {
        float *o = out + (size_t)b * d->OC * plane;
        memset(o, 0, (size_t)d->OC * plane * sizeof(float));
        for (int g = 0; g < d->groups; g++) {
            const float *x = inp + ((size_t)b * d->C + (size_t)g * Cg) * N;
            mm_sgemm(MM_T, MM_N, Kg, N, Cg, 1.0f, weight + (size_t)g * Cg * Kg, Kg, x, N, 0.0f, ws, N);
            col_walk(d, g, ws, NULL, o);
        }
        if (bias)
            for (int c = 0; c < d->OC; c++)
                for (size_t p = 0; p < plane; p++) o[(size_t)c * plane + p] += bias[c];
    }
}

void conv_transpose2d_backward(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *dout,
                               float *dinp, float *dweight, float *dbias, float *ws, int set)
{
    const int Cg = d->C / d->groups, OCg = d->OC / d->groups, N = d->H * d->W, Kg = OCg * d->KH * d->KW;
    const size_t plane = (size_t)d->OH * d->OW;
    for (int b = 0; b < B; b++)
        for (int g = 0; g < d->groups; g++) {
            /* the columns of the output gradient: a convolution's input, im2col */
            col_walk(d, g, ws, dout + (size_t)b * d->OC * plane, NULL);
            const size_t xo = ((size_t)b * d->C + (size_t)g * Cg) * N;
            const float *wg = weight + (size_t)g * Cg * Kg;
            if (dinp) mm_sgemm(MM_N, MM_N, Cg, N, Kg, 1.0f, wg, Kg, ws, N, set ? 0.0f : 1.0f, dinp + xo, N);
            mm_sgemm(MM_N, MM_T, Cg, Kg, N, 1.0f, inp + xo, N, ws, N, b == 0 ? 0.0f : 1.0f,
                     dweight + (size_t)g * Cg * Kg, Kg);
        }
    if (dbias)
        for (int c = 0; c < d->OC; c++) {
            double s = 0.0;
            for (int b = 0; b < B; b++) {
                const float *p = dout + ((size_t)b * d->OC + c) * plane;
                for (size_t i = 0; i < plane; i++) s += p[i];
            }
            dbias[c] = (float)s;
        }
}
