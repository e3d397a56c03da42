/* kernels/ref/elementwise.c - the reference elementwise operators (ref.h). */
#include <math.h>

#include "ref.h"

void ref_shortcut_add_forward(const shortcut_desc_t *d, int B, const double *a, const double *x, double *y)
{
    const int off = (d->OC - d->C) / 2;
    for (int b = 0; b < B; b++)
        for (int oc = 0; oc < d->OC; oc++)
            for (int oh = 0; oh < d->OH; oh++)
                for (int ow = 0; ow < d->OW; ow++) {
                    size_t o = ((size_t)(b * d->OC + oc) * d->OH + oh) * d->OW + ow;
                    int c = oc - off;
                    double s = 0.0;
                    if (c >= 0 && c < d->C)
                        s = x[((size_t)(b * d->C + c) * d->H + oh * d->stride) * d->W + ow * d->stride];
                    y[o] = a[o] + s;
                }
}

double ref_act(ref_act_t kind, double alpha, double x)
{
    switch (kind) {
    case REF_ACT_RELU: return x > 0 ? x : 0.0;
    case REF_ACT_LEAKY: return x > 0 ? x : alpha * x;
    case REF_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case REF_ACT_TANH: return tanh(x);
    }
    return NAN;
}

double ref_unary(unary_op_t op, double a, double x)
{
    switch (op) {
    case UNARY_EXP: return exp(x);
    case UNARY_NEG: return -x;
    case UNARY_SQRT: return sqrt(x);
    case UNARY_RECIPROCAL: return 1.0 / x;
    case UNARY_ABS: return fabs(x);
    case UNARY_POW: return pow(x, a);
    case UNARY_ERF: return erf(x);
    case UNARY_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    default: break; /* the activations: their references are their own functions */
    }
    return NAN;
}

void ref_binary_forward(binary_op_t op, const bcast_desc_t *d, int B, const double *a, const double *b, double *y)
{
    size_t n = (size_t)B;
    for (int ax = 1; ax < d->rank; ax++) n *= (size_t)d->dims[ax];
    for (size_t o = 0; o < n; o++) {
        size_t rest = o, ia = 0, ib = 0;
        for (int ax = d->rank - 1; ax >= 0; ax--) {
            const size_t dim = ax ? (size_t)d->dims[ax] : (size_t)B, i = rest % dim;
            rest /= dim;
            ia += i * d->sa[ax];
            ib += i * d->sb[ax];
        }
        const double u = a[ia], v = b[ib];
        y[o] = op == BINARY_ADD   ? u + v
               : op == BINARY_SUB ? u - v
               : op == BINARY_MUL ? u * v
               : op == BINARY_POW ? pow(u, v)
                                  : u / v;
    }
}

void ref_view_forward(const bcast_desc_t *d, size_t off, int B, const double *x, double *y)
{
    size_t n = (size_t)B;
    for (int ax = 1; ax < d->rank; ax++) n *= (size_t)d->dims[ax];
    for (size_t o = 0; o < n; o++) {
        size_t rest = o, ix = off;
        for (int ax = d->rank - 1; ax >= 0; ax--) {
            const size_t dim = ax ? (size_t)d->dims[ax] : (size_t)B;
            ix += (rest % dim) * d->sa[ax];
            rest /= dim;
        }
        y[o] = x[ix];
    }
}

void ref_reduce_forward(int B, int rank, const int *dims, unsigned mask, int mean, const double *x, double *y)
{
    size_t in = 1, out = 1;
    for (int d = 0; d < rank; d++) {
        in *= (size_t)dims[d];
        if (!(mask >> d & 1)) out *= (size_t)dims[d];
    }
    for (size_t o = 0; o < (size_t)B * out; o++) y[o] = 0.0;
    for (size_t i = 0; i < (size_t)B * in; i++) {
        /* the output index: the input's digits of the kept axes */
        size_t rest = i, o = 0, run = 1;
        for (int d = rank - 1; d >= 0; d--) {
            const size_t k = rest % (size_t)dims[d];
            rest /= (size_t)dims[d];
            if (!(mask >> d & 1)) {
                o += k * run;
                run *= (size_t)dims[d];
            }
        }
        y[o + rest * out] += x[i];
    }
    for (size_t o = 0; o < (size_t)B * out; o++) y[o] /= mean ? (double)(in / out) : 1.0;
}

double ref_clip(double lo, double hi, double x) { return fmin(fmax(x, lo), hi); }

double ref_hardsigmoid(double alpha, double beta, double x) { return fmax(0.0, fmin(1.0, alpha * x + beta)); }

double ref_hardswish(double x) { return x * ref_hardsigmoid(1.0 / 6.0, 0.5, x); }

void ref_mul_forward(int B, int C, int HW, int HW2, const double *a, const double *b, double *y)
{
    for (size_t p = 0; p < (size_t)B * C; p++)
        for (int j = 0; j < HW; j++) y[p * HW + j] = a[p * HW + j] * b[HW2 == HW ? p * HW + j : p];
}

void ref_concat_forward(int B, int HW, int n, const int *C, const double *const *x, double *y)
{
    int OC = 0;
    for (int i = 0; i < n; i++) OC += C[i];
    for (int b = 0; b < B; b++) {
        int off = 0;
        for (int i = 0; i < n; i++) {
            for (int c = 0; c < C[i]; c++)
                for (int j = 0; j < HW; j++)
                    y[((size_t)b * OC + off + c) * HW + j] = x[i][((size_t)b * C[i] + c) * HW + j];
            off += C[i];
        }
    }
}

void ref_stochastic_depth_forward(size_t n, size_t per, double p, uint64_t key, const double *x, double *y)
{
    const uint32_t t = dropout_threshold((float)p);
    for (size_t i = 0; i < n; i++) y[i] = t == 0 ? x[i] : dropout_keep(key, i / per, t) ? x[i] / (1.0 - p) : 0.0;
}

void ref_dropout_forward(size_t n, double p, uint64_t key, const double *x, double *y)
{
    const uint32_t t = dropout_threshold((float)p);
    for (size_t i = 0; i < n; i++) y[i] = t == 0 ? x[i] : dropout_keep(key, i, t) ? x[i] / (1.0 - p) : 0.0;
}
