/* kernels/cpu/scalar_fn.h - the scalar functions of the elementwise operators, one table
 * that the CPU kernels (kernels/cpu/elementwise.c) and their CUDA twins
 * (kernels/cuda/elementwise.cu's one unary launcher and its broadcast kernels) both
 * include, so an operator's formula has one home and the two sides compute it alike.
 *
 * Rounding: on the host every operation is a plain C operator (-std=c11 contracts nothing,
 * and the kernels' AVX2 clones use no FMA); on the device UFN_ADD/SUB/MUL/DIV are
 * __fadd_rn and friends, which nvcc never fuses into an FMA. So every function below
 * rounds the same on both sides, bit for bit, except where it calls expf, tanhf or powf, or
 * ufn_exp and ufn_erf below: CUDA's are within 2 ulp, the host's are not the same code
 * (test_cuda_parity's TOL_ACT).
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

/* max(x, a) and min(x, b) as comparisons, which gcc vectorises without -ffast-math (fmaxf and
 * fminf are library calls in a loop: Clip's forward took 7.5 times its backward on
 * mobilenet_v2). Each gives what fmaxf/fminf give for every x but signed zeros, a NaN x
 * included (the bound). */
static inline OPS_HD float ufn_max(float x, float a) { return x > a ? x : a; }
static inline OPS_HD float ufn_min(float x, float b) { return x < b ? x : b; }

/* exp(x) as the sigmoid, erf, GELU and the softmaxes take it. On the device CUDA's expf; on the host Cephes' expf in
 * plain C operators (round x / ln 2 to n, a degree-7 polynomial on the rest, times 2^n as
 * two halves so that results down to exp(-104) are reached through the subnormals), within
 * 2 ulp of glibc's and vectorised by gcc, where a call to expf per element is not: the
 * sigmoid's forward was 16% of efficientnet_b0's step. A NaN gives a NaN, above 88.72 inf,
 * below -104 0, as expf. */
static inline OPS_HD float ufn_exp(float x)
{
#if defined(__CUDA_ARCH__)
    return expf(x);
#else
    const float xc = ufn_min(ufn_max(x, -104.0f), 89.0f); /* a NaN becomes -104, finite */
    /* round to nearest through the float's 23-bit mantissa: no call, no FMA */
    const float kf = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    /* ln 2 in two parts; kf * 0.693359375 is exact (9 and 8 significant bits) */
    const float r = (xc - kf * 0.693359375f) - kf * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const int k = (int)kf, k1 = k / 2, k2 = k - k1; /* each in [-75, 64]: normal scales */
    union {
        unsigned u;
        float f;
    } s1, s2; /* no designated initialisers: nvcc's host pass compiles this as C++ */
    s1.u = (unsigned)(k1 + 127) << 23;
    s2.u = (unsigned)(k2 + 127) << 23;
    const float y = p * s1.f * s2.f;
    return x == x ? y : x;
#endif
}

/* erf on the host, vectorisable as ufn_exp (a call to erff per element is not: GELU's
 * forward and backward were 18% of the small ViT's step). Below UFN_ERF_SPLIT,
 * x + x * P(x^2) (P of degree 6, the leading 2 / sqrt(pi) - 1 kept apart so that the last
 * addition is the only large rounding); above it 1 - erfc(|x|) with erfc(t) =
 * exp(Q(t) - t^2), Q of degree 8 on [UFN_ERF_SPLIT, 3.9195] (erf rounds to 1 beyond). The
 * coefficients are weighted least-squares (Lawson) fits in double of erf(x)/x and
 * log(erfc(t)) + t^2, rounded to float; measured over every non-negative float against
 * erf in double (erf is odd): at most 1.83 ulp (at x = 0.9176), where glibc's erff is at
 * most 0.97 ulp. A NaN gives a NaN, +-inf +-1. On the device CUDA's erff. */
#define UFN_ERF_SPLIT 0.921875f
#define UFN_ERF_ONE 3.9195f /* erf(x) rounds to 1 in float from about 3.9192 */

/* The coefficients of P and Q below, highest degree first: macros so that an initialiser
 * in device code reads them too, and kernels/cpu/gelu_simd.c's vector GELU takes the same. */
#define UFN_ERF_P                                                                                          \
    {                                                                                                      \
        8.370100113097578e-05f, -8.142704609781504e-04f, 5.201032385230064e-03f, -2.6859398931264877e-02f, \
            1.1283695697784424e-01f, -3.7612634897232056e-01f, 1.28379225730896e-01f                       \
    }
#define UFN_ERFC_Q                                                                                            \
    {                                                                                                         \
        1.6327176126651466e-06f, -4.593300400301814e-05f, 5.954320076853037e-04f, -4.751646891236305e-03f,    \
            2.6394212618470192e-02f, -1.1002501100301743e-01f, 3.6810725927352905e-01f, -1.1301896572113037f, \
            3.081591858062893e-04f                                                                            \
    }

/* c[0] t^(n-1) + c[1] t^(n-2) + ... + c[n-1] in Horner's order, no FMA (gcc unrolls the
 * loop of a constant n) */
static inline OPS_HD float ufn_poly(float t, const float *c, int n)
{
    float p = c[0];
    for (int i = 1; i < n; i++) p = p * t + c[i];
    return p;
}

/* erfc(|x|) for |x| >= UFN_ERF_SPLIT (any x: |x| is clamped where erf is 1 in float) */
static inline OPS_HD float ufn_erfc_tail(float x)
{
    const float Q[9] = UFN_ERFC_Q;
    const float t = ufn_min(fabsf(x), UFN_ERF_ONE);
    return ufn_exp(ufn_poly(t, Q, 9) - t * t);
}

/* erf(x) for |x| < UFN_ERF_SPLIT */
static inline OPS_HD float ufn_erf_small(float x)
{
    const float P[7] = UFN_ERF_P;
    return x + x * ufn_poly(x * x, P, 7);
}

static inline OPS_HD float ufn_erf(float x)
{
#if defined(__CUDA_ARCH__)
    return erff(x);
#else
    /* both branches computed and one selected: the loop stays branch-free */
    const float e = ufn_erfc_tail(x);
    const float y = fabsf(x) < UFN_ERF_SPLIT ? ufn_erf_small(x) : x < 0.0f ? e - 1.0f : 1.0f - e;
    return x == x ? y : x;
#endif
}

/* 1 + erf(x), GELU's 2 Phi: below -UFN_ERF_SPLIT erfc(-x) itself, not 1 - (1 - erfc(-x)),
 * whose rounding loses the small tail that GELU multiplies by x; below -UFN_ERF_ONE
 * (erfc < 5e-8, beyond Q's interval) 0, which 1 + erff(x) gave there too. */
static inline OPS_HD float ufn_erf1p(float x)
{
#if defined(__CUDA_ARCH__)
    return UFN_ADD(1.0f, erff(x));
#else
    const float e = ufn_erfc_tail(x);
    const float y = fabsf(x) < UFN_ERF_SPLIT ? 1.0f + ufn_erf_small(x)
                    : x < -UFN_ERF_ONE       ? 0.0f
                    : x < 0.0f               ? e
                                             : 2.0f - e;
    return x == x ? y : x;
#endif
}

/* GELU's x / 2 * (1 + erf(x / sqrt(2))) where |x / sqrt(2)| < UFN_ERF_SPLIT only: what
 * unary_fn's UNARY_GELU gives there, bit for bit (the same operations in the same order),
 * without the erfc tail. The host's unary_forward takes it for the blocks of inputs that
 * are all small (ufn_erf_is_small), most of them in a network. */
static inline OPS_HD int ufn_erf_is_small(float x) { return fabsf(x) < UFN_ERF_SPLIT; }
static inline OPS_HD float ufn_gelu_small(float x)
{
    return UFN_MUL(UFN_MUL(0.5f, x), UFN_ADD(1.0f, ufn_erf_small(UFN_MUL(x, UFN_SQRT1_2))));
}

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
        /* 1 / (1 + e^-x) or e^x / (1 + e^x): the numerator selected, one division, so
         * the loop vectorises */
        const float e = ufn_exp(-fabsf(x));
        return UFN_DIV(x >= 0.0f ? 1.0f : e, UFN_ADD(1.0f, e));
    }
    case UNARY_TANH: return tanhf(x);
    case UNARY_CLIP: return ufn_min(ufn_max(x, a), b);
    case UNARY_HARDSIGMOID: return ufn_max(ufn_min(UFN_ADD(UFN_MUL(a, x), b), 1.0f), 0.0f);
    case UNARY_HARDSWISH: return UFN_DIV(UFN_MUL(x, ufn_min(ufn_max(UFN_ADD(x, 3.0f), 0.0f), 6.0f)), 6.0f);
    case UNARY_ERF: return ufn_erf(x);
    case UNARY_GELU: return UFN_MUL(UFN_MUL(0.5f, x), ufn_erf1p(UFN_MUL(x, UFN_SQRT1_2)));
    default: return NAN;
    }
}

/* Whether the derivative reads the function's input x, and whether its output y (Neg
 * neither, GELU both): a backward passes 0 for what is not read. */
static inline OPS_HD int unary_grad_reads_input(unary_op_t op)
{
    return op == UNARY_ABS || op == UNARY_POW || op == UNARY_HARDSWISH || op == UNARY_ERF || op == UNARY_GELU;
}

static inline OPS_HD int unary_grad_reads_output(unary_op_t op)
{
    return op == UNARY_GELU || (!unary_grad_reads_input(op) && op != UNARY_NEG);
}

/* GELU's Phi(x) for its derivative, read back from the forward's output y = x Phi(x) (as
 * x / 2 times 1 + erf: x / 2 is exact) as y / x, within about an ulp of the forward's own
 * Phi, instead of a second erf (the ViT's and ConvNeXt's GELU backward was 1.3 times the
 * forward); where |x| < 2^-20 (x = 0 included) 1/2 + x / sqrt(2 pi), Phi there to float. */
static inline OPS_HD float ufn_gelu_cdf(float x, float y)
{
    return fabsf(x) < 0x1p-20f ? UFN_ADD(0.5f, UFN_MUL(x, UFN_GELU_PDF)) : UFN_DIV(y, x);
}

/* The term the backward adds to the input's gradient at one element: g * f'(x), from x or
 * y = f(x) or both (unary_grad_reads_*), g the output's gradient, in PyTorch's order of
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
    case UNARY_ERF: return UFN_MUL(UFN_MUL(g, UFN_2_SQRTPI), ufn_exp(UFN_MUL(-x, x)));
    case UNARY_GELU: /* Phi(x) + x * phi(x), phi the standard normal density */
        return UFN_MUL(g, UFN_ADD(ufn_gelu_cdf(x, y),
                                  UFN_MUL(UFN_MUL(x, UFN_GELU_PDF), ufn_exp(UFN_MUL(UFN_MUL(-0.5f, x), x)))));
    default: return NAN;
    }
}

/* Binary operators with NumPy broadcasting (ops.h's binary_forward). */
/* BINARY_POW (x ^ y, powf) runs through binary_forward and binary_backward only: the
 * row kernels (binary_rows_*) take the other four. */
typedef enum { BINARY_ADD, BINARY_SUB, BINARY_MUL, BINARY_DIV, BINARY_POW } binary_op_t;

static inline OPS_HD float binary_fn(binary_op_t op, float x, float y)
{
    return op == BINARY_ADD   ? UFN_ADD(x, y)
           : op == BINARY_SUB ? UFN_SUB(x, y)
           : op == BINARY_MUL ? UFN_MUL(x, y)
           : op == BINARY_POW ? powf(x, y)
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
    /* Pow's: g * x^y * ln x, and 0 where x is 0 and y not negative (PyTorch's rule: the
     * limit, where ln 0 would give NaN) */
    if (op == BINARY_POW) return x == 0.0f && y >= 0.0f ? 0.0f : UFN_MUL(UFN_MUL(g, powf(x, y)), logf(x));
    return op == BINARY_ADD   ? g
           : op == BINARY_SUB ? -g
           : op == BINARY_MUL ? UFN_MUL(g, x)
                              : UFN_DIV(UFN_MUL(-g, x), UFN_MUL(y, y));
}

/* binary_grad_x with x's own value too, which Pow's term reads: g * y * x^(y - 1) (0 where
 * y is 0, as PyTorch's). */
static inline OPS_HD float binary_grad_xy(binary_op_t op, float g, float x, float y)
{
    if (op == BINARY_POW) return y == 0.0f ? 0.0f : UFN_MUL(UFN_MUL(g, y), powf(x, UFN_SUB(y, 1.0f)));
    return binary_grad_x(op, g, y);
}

#endif
