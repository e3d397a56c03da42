/* kernels/cpu/gelu_lanes.h - the vector GELU of gelu_simd.c, written once for any width:
 * included there once per width, after the GL_* macros name that width's type and
 * operations (GL_W lanes; GL_NAME(f) the width's function names), and gelu_lanes_undef.h
 * after. Not a header of declarations: gelu_simd.h declares what it defines. Every lane
 * computes the same operations in the same order at any width (the tail branch below is
 * taken for a whole vector, but its result is kept lane by lane), so the widths give the
 * same bits. */

/* Horner's rule with FMA over c[0..n), highest degree first */
GL_TARGET static inline GL_V GL_NAME(gl_poly)(GL_V t, const float *c, int n)
{
    GL_V p = GL_SET1(c[0]);
    for (int i = 1; i < n; i++) p = GL_FMADD(p, t, GL_SET1(c[i]));
    return p;
}

/* exp: scalar_fn.h's ufn_exp (Cephes' reduction by ln 2 in two parts, its degree-7
 * polynomial, 2^k as two halves so that results down to exp(-104) go through the
 * subnormals, the same clamps) with FMA. A NaN argument gives a finite value: neither caller
 * passes one on to its result (the forward's argument is clamped first, the backward's
 * NaN x makes y / x NaN). */
GL_TARGET static inline GL_V GL_NAME(gl_exp)(GL_V x)
{
    const GL_V xc = GL_MIN(GL_MAX(x, GL_SET1(-104.0f)), GL_SET1(89.0f));
    const GL_V kf = GL_RINT(GL_MUL(xc, GL_SET1(1.44269504088896341f)));
    GL_V r = GL_FNMADD(kf, GL_SET1(0.693359375f), xc);
    r = GL_FNMADD(kf, GL_SET1(-2.12194440e-4f), r);
    static const float C[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                               4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
    const GL_V p = GL_NAME(gl_poly)(r, C, 6);
    const GL_V e = GL_ADD(GL_FMADD(p, GL_MUL(r, r), r), GL_SET1(1.0f));
    const GL_VI k = GL_CVTI(kf);
    const GL_VI k1 = GL_SRAI1(k), k2 = GL_SUBI(k, k1); /* each in [-75, 65] */
    const GL_V s1 = GL_SHL23(GL_ADDI(k1, GL_SET1I(127))), s2 = GL_SHL23(GL_ADDI(k2, GL_SET1I(127)));
    return GL_MUL(GL_MUL(e, s1), s2);
}

/* GELU: 1 + erf(x / sqrt(2)) by the small branch, and where any lane is at or above the
 * split (or NaN) the tail for all of them, selected lane by lane as ufn_erf1p does:
 * erfc(-z) below -UFN_ERF_SPLIT (0 below -UFN_ERF_ONE), 2 - erfc(z) above the split. A
 * NaN x gives NaN through the last product, +inf inf, -inf NaN (-inf * 0), as unary_fn. */
GL_TARGET static inline GL_V GL_NAME(gl_gelu)(GL_V x)
{
    static const float P[7] = UFN_ERF_P, Q[9] = UFN_ERFC_Q;
    const GL_V z = GL_MUL(x, GL_SET1(UFN_SQRT1_2));
    const GL_V az = GL_ABS(z);
    const GL_M small = GL_LT(az, GL_SET1(UFN_ERF_SPLIT));
    const GL_V erf = GL_FMADD(z, GL_NAME(gl_poly)(GL_MUL(z, z), P, 7), z);
    GL_V onep = GL_ADD(GL_SET1(1.0f), erf);
    if (!GL_ALL(small)) {
        const GL_V t = GL_MIN(az, GL_SET1(UFN_ERF_ONE)); /* a NaN: UFN_ERF_ONE */
        const GL_V ec = GL_NAME(gl_exp)(GL_FNMADD(t, t, GL_NAME(gl_poly)(t, Q, 9)));
        const GL_M neg = GL_LT(z, GL_ZERO());
        const GL_M gone = GL_LT(z, GL_SET1(-UFN_ERF_ONE));
        GL_V tail = GL_SELECT(neg, ec, GL_SUB(GL_SET1(2.0f), ec));
        tail = GL_ZERO_WHERE(gone, tail);
        onep = GL_SELECT(small, onep, tail);
    }
    return GL_MUL(GL_MUL(GL_SET1(0.5f), x), onep);
}

GL_TARGET void GL_NAME(gelu_forward)(size_t n, const float *x, float *y)
{
    size_t i = 0;
    for (; i + GL_W <= n; i += GL_W) GL_STORE(y + i, GL_NAME(gl_gelu)(GL_LOAD(x + i)));
    if (i < n) GL_STOREN(y + i, n - i, GL_NAME(gl_gelu)(GL_LOADN(x + i, n - i)));
}

/* GL_W bf16 values from p widened (exact), or the first n of them and zeros */
GL_TARGET static inline GL_V GL_NAME(gl_loadh)(const uint16_t *p) { return GL_WIDEN(GL_LOADH(p)); }
GL_TARGET static inline GL_V GL_NAME(gl_loadhn)(const uint16_t *p, size_t n)
{
    uint16_t t[GL_W] = {0};
    memcpy(t, p, n * sizeof *t);
    return GL_WIDEN(GL_LOADH(t));
}

GL_TARGET void GL_NAME(gelu_forward_h)(size_t n, const uint16_t *x, float *y)
{
    size_t i = 0;
    for (; i + GL_W <= n; i += GL_W) GL_STORE(y + i, GL_NAME(gl_gelu)(GL_NAME(gl_loadh)(x + i)));
    if (i < n) GL_STOREN(y + i, n - i, GL_NAME(gl_gelu)(GL_NAME(gl_loadhn)(x + i, n - i)));
}

/* g's factor, Phi(x) + x phi(x): Phi as ufn_gelu_cdf reads it back (y / x, or 1/2 + x pdf
 * below 2^-20 in magnitude, x = 0 included) */
GL_TARGET static inline GL_V GL_NAME(gl_grad)(GL_V x, GL_V y)
{
    const GL_V pdf = GL_SET1(UFN_GELU_PDF);
    const GL_M tiny = GL_LT(GL_ABS(x), GL_SET1(0x1p-20f));
    const GL_V cdf = GL_SELECT(tiny, GL_FMADD(x, pdf, GL_SET1(0.5f)), GL_DIV(y, x));
    const GL_V e = GL_NAME(gl_exp)(GL_MUL(GL_MUL(GL_SET1(-0.5f), x), x));
    return GL_FMADD(GL_MUL(x, pdf), e, cdf);
}

/* d = g * grad + d, or + 0 with set: the FMA into zeros rounds g * grad once and turns a
 * -0 into +0, the bits of += into zeros (what unary_backward_set promises). x and y are
 * read by LOAD and LOADN (float32 or bf16 loads); an element is a float's bytes shifted right
 * by SH (0, or 1 for bf16: a prefetch a line at a time, 4 KiB ahead either way). */
#define GL_BACKWARD_LOOP(LOAD, LOADN, SH)                                                              \
    do {                                                                                               \
        size_t i = 0;                                                                                  \
        for (; i + GL_W <= n; i += GL_W) {                                                             \
            prefetch_ahead((const float *)(const void *)x, i >> (SH), 0); /* cold since the forward */ \
            prefetch_ahead((const float *)(const void *)y, i >> (SH), 0);                              \
            const GL_V acc = set ? GL_ZERO() : GL_LOAD(d + i);                                         \
            const GL_V t = GL_NAME(gl_grad)(LOAD(x + i), LOAD(y + i));                                 \
            GL_STORE(d + i, GL_FMADD(GL_LOAD(g + i), t, acc));                                         \
        }                                                                                              \
        if (i < n) {                                                                                   \
            const size_t r = n - i;                                                                    \
            const GL_V acc = set ? GL_ZERO() : GL_LOADN(d + i, r);                                     \
            /* the lanes past n hold x = y = 0: 1/2 + 0, finite */                                     \
            const GL_V t = GL_NAME(gl_grad)(LOADN(x + i, r), LOADN(y + i, r));                         \
            GL_STOREN(d + i, r, GL_FMADD(GL_LOADN(g + i, r), t, acc));                                 \
        }                                                                                              \
    } while (0)

GL_TARGET void GL_NAME(gelu_backward)(size_t n, const float *x, const float *y, const float *g, float *d, int set)
{
    GL_BACKWARD_LOOP(GL_LOAD, GL_LOADN, 0);
}

GL_TARGET void GL_NAME(gelu_backward_h)(size_t n, const uint16_t *x, const uint16_t *y, const float *g, float *d,
                                        int set)
{
    GL_BACKWARD_LOOP(GL_NAME(gl_loadh), GL_NAME(gl_loadhn), 1);
}
#undef GL_BACKWARD_LOOP
