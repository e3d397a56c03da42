/* kernels/cpu/scalar_fn.h - the scalar functions of the elementwise operators, one table
 * that the CPU kernels (kernels/cpu/elementwise.c) and their CUDA twins
 * (kernels/cuda/elementwise.cu's one unary launcher and its broadcast kernels) both
 * include, so an operator's formula has one home and the two sides compute it alike.
 *
 * Rounding: on the host every operation is a plain C operator (-std=c11 contracts nothing,
 * and the kernels' AVX2 clones use no FMA); on the device UFN_ADD/SUB/MUL/DIV are
 * __fadd_rn and friends, which nvcc never fuses into an FMA. So every function below
 * rounds the same on both sides, bit for bit, except where it calls expf, tanhf or powf:
 * CUDA's are within 2 ulp, glibc's are not the same code (test_cuda_parity's TOL_ACT).
 */
#ifndef PACER_SCALAR_FN_H
#define PACER_SCALAR_FN_H

#include <math.h>

/* __host__ __device__ when nvcc compiles the includer, nothing for the C compiler */
#if defined(__CUDACC__)
#define OPS_HD __host__ __device__
#else
#define OPS_HD
#endif

#if defined(__CUDA_ARCH__)
#define UFN_ADD(x, y) __fadd_rn((x), (y))
#define UFN_SUB(x, y) __fsub_rn((x), (y))
#define UFN_MUL(x, y) __fmul_rn((x), (y))
#define UFN_DIV(x, y) __fdiv_rn((x), (y))
#else
#define UFN_ADD(x, y) ((x) + (y))
#define UFN_SUB(x, y) ((x) - (y))
#define UFN_MUL(x, y) ((x) * (y))
#define UFN_DIV(x, y) ((x) / (y))
#endif
/* 1 / sqrt(2), 2 / sqrt(pi), and their product over 2 (GELU's normal density), as floats */
#define UFN_SQRT1_2 ((float)0.70710678118654752440)
#define UFN_2_SQRTPI ((float)1.12837916709551257390)
#define UFN_GELU_PDF ((float)(0.5 * 1.12837916709551257390 * 0.70710678118654752440))

/* The functions of one input. The first six are ONNX's Exp, Neg, Sqrt, Reciprocal, Abs and
 * Pow with a constant exponent (ops.h's unary_forward); the others have entry points of
 * their own on the CPU (relu_forward, clip_forward, ...). Parameters a and b: LeakyRelu's
 * slope (a), Clip's bounds (a, b), HardSigmoid's slope and offset (a, b), Pow's exponent
 * (a); unused by the others. */
typedef enum {
    UNARY_EXP,
    UNARY_NEG,
    UNARY_SQRT,
    UNARY_RECIPROCAL,
    UNARY_ABS,
    UNARY_POW,
    UNARY_RELU,
    UNARY_LEAKY_RELU,
    UNARY_SIGMOID,
    UNARY_TANH,
    UNARY_CLIP,
    UNARY_HARDSIGMOID,
    UNARY_HARDSWISH,
    UNARY_ERF,  /* erf(x) */
    UNARY_GELU, /* the exact GELU x * (1 + erf(x / sqrt(2))) / 2 (torch's nn.GELU()) */
    UNARY_OP_COUNT
} unary_op_t;

/* out = f(x). NaN > 0 is false, so ReLU maps a NaN to 0. The sigmoid takes the exponential
 * of a non-positive argument only; HardSwish is PyTorch's x * min(max(x + 3, 0), 6) / 6. */
static inline OPS_HD float unary_fn(unary_op_t op, float x, float a, float b)
{
    switch (op) {
    case UNARY_EXP: return expf(x);
    case UNARY_NEG: return -x;
    case UNARY_SQRT: return sqrtf(x);
    case UNARY_RECIPROCAL: return UFN_DIV(1.0f, x);
    case UNARY_ABS: return fabsf(x);
    case UNARY_POW: return powf(x, a);
    case UNARY_RELU: return x > 0.0f ? x : 0.0f;
    case UNARY_LEAKY_RELU: return x > 0.0f ? x : UFN_MUL(x, a);
    case UNARY_SIGMOID: {
        if (x >= 0.0f) return UFN_DIV(1.0f, UFN_ADD(1.0f, expf(-x)));
        const float e = expf(x);
        return UFN_DIV(e, UFN_ADD(1.0f, e));
    }
    case UNARY_TANH: return tanhf(x);
    case UNARY_CLIP: return fminf(fmaxf(x, a), b);
    case UNARY_HARDSIGMOID: return fmaxf(0.0f, fminf(1.0f, UFN_ADD(UFN_MUL(a, x), b)));
    case UNARY_HARDSWISH: return UFN_DIV(UFN_MUL(x, fminf(fmaxf(UFN_ADD(x, 3.0f), 0.0f), 6.0f)), 6.0f);
    case UNARY_ERF: return erff(x);
    case UNARY_GELU: return UFN_MUL(UFN_MUL(0.5f, x), UFN_ADD(1.0f, erff(UFN_MUL(x, UFN_SQRT1_2))));
    default: return NAN;
    }
}

/* Whether the derivative reads the function's input x (else its output y, or neither for
 * Neg): a backward given only one of them passes 0 for the other. */
static inline OPS_HD int unary_grad_reads_input(unary_op_t op)
{
    return op == UNARY_ABS || op == UNARY_POW || op == UNARY_HARDSWISH || op == UNARY_ERF || op == UNARY_GELU;
}

/* The term the backward adds to the input's gradient at one element: g * f'(x), from x or
 * y = f(x) (unary_grad_reads_input), g the output's gradient, in PyTorch's order of
 * products. Neg and Reciprocal give the negated term (dinp - t is dinp + -t, bit for bit).
 * Abs's derivative is 0 at 0 (PyTorch's sign); Sqrt's and Reciprocal's are infinite at 0;
 * ReLU's term is (y > 0 ? g : 0) + 0, relu_grad.h's expression, so a -0 sums as on the CPU.
 * Clip passes g strictly inside (a, b); HardSigmoid g * a strictly inside (0, 1). */
static inline OPS_HD float unary_grad(unary_op_t op, float x, float y, float g, float a, float b)
{
    switch (op) {
    case UNARY_EXP: return UFN_MUL(g, y);
    case UNARY_NEG: return -g;
    case UNARY_SQRT: return UFN_DIV(UFN_MUL(g, 0.5f), y);
    case UNARY_RECIPROCAL: return -UFN_MUL(UFN_MUL(g, y), y);
    case UNARY_ABS: return x > 0.0f ? g : x < 0.0f ? -g : 0.0f;
    case UNARY_POW: return UFN_MUL(UFN_MUL(g, a), powf(x, UFN_SUB(a, 1.0f)));
    case UNARY_RELU: return UFN_ADD(y > 0.0f ? g : 0.0f, 0.0f);
    case UNARY_LEAKY_RELU: return y > 0.0f ? g : UFN_MUL(g, a);
    case UNARY_SIGMOID: return UFN_MUL(UFN_MUL(g, UFN_SUB(1.0f, y)), y);
    case UNARY_TANH: return UFN_MUL(g, UFN_SUB(1.0f, UFN_MUL(y, y)));
    case UNARY_CLIP: return y > a && y < b ? g : 0.0f;
    case UNARY_HARDSIGMOID: return y > 0.0f && y < 1.0f ? UFN_MUL(g, a) : 0.0f;
    case UNARY_HARDSWISH: return x < -3.0f ? 0.0f : x <= 3.0f ? UFN_MUL(g, UFN_ADD(UFN_DIV(x, 3.0f), 0.5f)) : g;
    /* 2 / sqrt(pi) * exp(-x^2) */
    case UNARY_ERF: return UFN_MUL(UFN_MUL(g, UFN_2_SQRTPI), expf(UFN_MUL(-x, x)));
    case UNARY_GELU: { /* Phi(x) + x * phi(x), phi the standard normal density */
        const float cdf = UFN_MUL(0.5f, UFN_ADD(1.0f, erff(UFN_MUL(x, UFN_SQRT1_2))));
        return UFN_MUL(g, UFN_ADD(cdf, UFN_MUL(UFN_MUL(x, UFN_GELU_PDF), expf(UFN_MUL(UFN_MUL(-0.5f, x), x)))));
    }
    default: return NAN;
    }
}

/* Binary operators with NumPy broadcasting (ops.h's binary_forward). */
typedef enum { BINARY_ADD, BINARY_SUB, BINARY_MUL, BINARY_DIV } binary_op_t;

static inline OPS_HD float binary_fn(binary_op_t op, float x, float y)
{
    return op == BINARY_ADD   ? UFN_ADD(x, y)
           : op == BINARY_SUB ? UFN_SUB(x, y)
           : op == BINARY_MUL ? UFN_MUL(x, y)
                              : UFN_DIV(x, y);
}

/* The terms the backward adds to x's and to y's gradient at one output element of
 * gradient g: d(x op y)/dx * g and d(x op y)/dy * g (Div's: -g * x / (y * y)). */
static inline OPS_HD float binary_grad_x(binary_op_t op, float g, float y)
{
    return op == BINARY_MUL ? UFN_MUL(g, y) : op == BINARY_DIV ? UFN_DIV(g, y) : g;
}

static inline OPS_HD float binary_grad_y(binary_op_t op, float g, float x, float y)
{
    return op == BINARY_ADD   ? g
           : op == BINARY_SUB ? -g
           : op == BINARY_MUL ? UFN_MUL(g, x)
                              : UFN_DIV(UFN_MUL(-g, x), UFN_MUL(y, y));
}

#endif
