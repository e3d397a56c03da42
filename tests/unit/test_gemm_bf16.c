/* tests/unit/test_gemm_bf16.c - the bf16 products (kernels/cpu/gemm_bf16.h) on each path the
 * CPU has, against the double reference on the bf16-rounded operands (kernels/ref's
 * ref_gemm_bf16), and the paths against each other.
 *
 * The bound (gemm_bf16.h): a product of two bf16 values is exact in float32, so only the
 * sums round. A float32 sum of n terms in any order is within gamma(n) = n u / (1 - n u)
 * (u = 2^-24) of the exact sum, relative to the sum of the terms' magnitudes (Higham,
 * Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5); the K products, then
 * alpha's and beta's terms, make n = K + 2. The matrix units take operands and sums below
 * 2^-126 as zero: at most 2^-126 times the magnitudes (and one) more per term. So each
 * output c obeys
 *   |c - ref| <= gamma(K + 2) mag + (K + 2) 2^-126 (mag + 1),
 *   mag = |alpha| sum_k |a_k b_k| + |beta c_in|.
 * Two paths differ by at most twice that. No tolerance here comes from a measurement.
 *
 * The test data are not bf16 values, so a path that skipped the rounding would be off by
 * about 2^-9 of mag, hundreds of times the bound at these K: test_data_needs_rounding
 * shows the cases tell the two apart. AVX512-BF16 and AMX cases skip, by name, on a CPU
 * without them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "cpu_isa.h"
#include "gemm_bf16.h"
#include "gemm_bf16_pack.h"
#include "matmul.h"
#include "ops.h"
#include "parallel.h"
#include "ref.h"

static uint64_t lcg_state = 42;
static double uniform(void)
{
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg_state >> 11) / 9007199254740992.0;
}

static float *random_floats(size_t n, double scale)
{
    float *x = malloc(n * sizeof(float));
    assert_non_null(x);
    for (size_t i = 0; i < n; i++) x[i] = (float)((2.0 * uniform() - 1.0) * scale);
    return x;
}

static double bound(int K, double mag)
{
    const double u = ldexp(1.0, -24), n = K + 2.0;
    return n * u / (1.0 - n * u) * mag + n * ldexp(1.0, -126) * (mag + 1.0);
}

typedef struct {
    int M, N, K;
} shape_t;

/* Block edges (16 rows and columns, 32 k), odd block counts, a long sum, a tall thin one;
 * then the AVX512-BF16 loop's column chunks: 19 column blocks past a chunk of 16 (an odd 3
 * left), and a sum long enough (K 4100) that a chunk is 2 blocks, 7 of them in 4 chunks. */
static const shape_t SHAPES[] = {{1, 1, 1},      {16, 16, 32},  {17, 33, 65}, {5, 70, 3},   {64, 48, 100},
                                 {33, 17, 1000}, {3, 40, 4096}, {100, 7, 31}, {9, 300, 40}, {20, 100, 4100}};
#define NSHAPES (sizeof SHAPES / sizeof SHAPES[0])

typedef struct {
    float alpha, beta;
} scale_t;
static const scale_t SCALES[] = {{1.0f, 0.0f}, {0.75f, 1.0f}, {-2.0f, 0.5f}};
#define NSCALES (sizeof SCALES / sizeof SCALES[0])

/* One case on one path: returns the largest error over the bound (<= 1 passes). With beta
 * 0, C starts as NaN: a path that read it would give NaN. */
static double check_case(cpu_isa_t isa, int ta, int tb, shape_t s, scale_t sc, int *rounding_shows)
{
    const int pad = 3; /* leading dimensions wider than the matrices */
    int lda = (ta ? s.M : s.K) + pad, ldb = (tb ? s.K : s.N) + pad, ldc = s.N + pad;
    size_t na = (size_t)(ta ? s.K : s.M) * lda, nb = (size_t)(tb ? s.N : s.K) * ldb, nc = (size_t)s.M * ldc;
    float *A = random_floats(na, 1.0), *B = random_floats(nb, 2.0), *C = random_floats(nc, 1.0);
    float *cin = malloc(nc * sizeof(float));
    double *ref = malloc((size_t)s.M * s.N * sizeof(double)), *mag = malloc((size_t)s.M * s.N * sizeof(double));
    assert_true(cin && ref && mag);
    if (sc.beta == 0.0f)
        for (size_t i = 0; i < nc; i++) C[i] = NAN;
    memcpy(cin, C, nc * sizeof(float));
    ref_gemm_bf16(ta, tb, s.M, s.N, s.K, sc.alpha, A, lda, B, ldb, sc.beta, cin, ldc, ref, mag);
    gemm_bf16_on(isa, ta, tb, s.M, s.N, s.K, sc.alpha, A, lda, B, ldb, sc.beta, C, ldc);
    double worst = 0.0;
    for (int m = 0; m < s.M; m++) {
        for (int n = 0; n < s.N; n++) {
            double got = C[(size_t)m * ldc + n], want = ref[(size_t)m * s.N + n],
                   b = bound(s.K, mag[(size_t)m * s.N + n]);
            if (!isfinite(got)) return INFINITY;
            double r = fabs(got - want) / b;
            if (r > worst) worst = r;
            /* the same product on unrounded operands, in double */
            double exact = 0.0;
            for (int k = 0; k < s.K; k++)
                exact += (double)(ta ? A[(size_t)k * lda + m] : A[(size_t)m * lda + k]) *
                         (double)(tb ? B[(size_t)n * ldb + k] : B[(size_t)k * ldb + n]);
            exact = sc.alpha * exact + (sc.beta != 0.0f ? sc.beta * (double)cin[(size_t)m * ldc + n] : 0.0);
            if (fabs(exact - want) > 4.0 * b) *rounding_shows = 1;
        }
        /* the padding between rows is never written */
        for (int n = s.N; n < ldc; n++) {
            float was = cin[(size_t)m * ldc + n], now = C[(size_t)m * ldc + n];
            if (memcmp(&was, &now, sizeof was) != 0) return INFINITY;
        }
    }
    free(A);
    free(B);
    free(C);
    free(cin);
    free(ref);
    free(mag);
    return worst;
}

static void check_path(cpu_isa_t isa)
{
    if (cpu_isa_available() < isa) {
        char why[200];
        snprintf(why, sizeof why, "skip: %s path: %s\n", cpu_isa_name(isa), cpu_isa_why());
        printf("%s", why);
        skip();
    }
    double worst = 0.0;
    int shows = 0;
    for (size_t i = 0; i < NSHAPES; i++)
        for (int t = 0; t < 4; t++)
            for (size_t j = 0; j < NSCALES; j++) {
                int dummy = 0;
                double w = check_case(isa, t & 1, t >> 1, SHAPES[i], SCALES[j], i == 4 ? &shows : &dummy);
                if (!(w <= 1.0))
                    fail_msg("%s: M %d N %d K %d transA %d transB %d alpha %g beta %g: error %.3g x the bound",
                             cpu_isa_name(isa), SHAPES[i].M, SHAPES[i].N, SHAPES[i].K, t & 1, t >> 1,
                             (double)SCALES[j].alpha, (double)SCALES[j].beta, w);
                if (w > worst) worst = w;
            }
    assert_true(shows);
    printf("%s: largest error %.3f of the bound\n", cpu_isa_name(isa), worst);
}

static void test_portable(void **state) { check_path(CPU_ISA_PORTABLE); }
static void test_avx512_bf16(void **state) { check_path(CPU_ISA_AVX512_BF16); }
static void test_amx(void **state) { check_path(CPU_ISA_AMX); }

/* Each path the CPU has against the portable one, within the sum of their two bounds. */
static void test_paths_agree(void **state)
{
    int M = 45, N = 77, K = 300, ld = 300;
    float *A = random_floats((size_t)M * ld, 1.0), *B = random_floats((size_t)N * ld, 1.0);
    float *c0 = malloc((size_t)M * N * sizeof(float)), *c1 = malloc((size_t)M * N * sizeof(float));
    double *ref = malloc((size_t)M * N * sizeof(double)), *mag = malloc((size_t)M * N * sizeof(double));
    assert_true(c0 && c1 && ref && mag);
    ref_gemm_bf16(0, 1, M, N, K, 1.0, A, ld, B, ld, 0.0, NULL, N, ref, mag);
    gemm_bf16_on(CPU_ISA_PORTABLE, 0, 1, M, N, K, 1.0f, A, ld, B, ld, 0.0f, c0, N);
    int compared = 0;
    for (int isa = CPU_ISA_AVX512_BF16; isa <= (int)cpu_isa_available(); isa++) {
        gemm_bf16_on((cpu_isa_t)isa, 0, 1, M, N, K, 1.0f, A, ld, B, ld, 0.0f, c1, N);
        for (int i = 0; i < M * N; i++)
            if (!(fabs((double)c1[i] - c0[i]) <= 2.0 * bound(K, mag[i])))
                fail_msg("%s against portable at %d: %.9g and %.9g", cpu_isa_name((cpu_isa_t)isa), i, c1[i], c0[i]);
        compared++;
    }
    printf("compared %d path(s) with the portable one\n", compared);
    free(A);
    free(B);
    free(c0);
    free(c1);
    free(ref);
    free(mag);
}

/* The bias epilogue (a linear layer's forward at bf16): on each path the CPU has, the bits of
 * beta = 1 on C whose rows hold the bias, without reading C (NaN there). */
static void test_bias_epilogue(void **state)
{
    static const shape_t BIAS_SHAPES[] = {{64, 64, 96}, {33, 47, 40}, {16, 100, 7}, {9, 300, 40}};
    for (int isa = CPU_ISA_PORTABLE; isa <= (int)cpu_isa_available(); isa++)
        for (size_t i = 0; i < sizeof BIAS_SHAPES / sizeof BIAS_SHAPES[0]; i++)
            for (int t = 0; t < 4; t++) {
                const shape_t sh = BIAS_SHAPES[i];
                const int ta = t & 1, tb = t >> 1, ldc = sh.N + 2;
                const int lda = ta ? sh.M : sh.K, ldb = tb ? sh.K : sh.N;
                float *A = random_floats((size_t)(ta ? sh.K : sh.M) * lda, 1.0);
                float *B = random_floats((size_t)(tb ? sh.N : sh.K) * ldb, 1.0);
                float *bias = random_floats((size_t)sh.N, 3.0);
                float *want = malloc((size_t)sh.M * ldc * sizeof(float)),
                      *got = malloc((size_t)sh.M * ldc * sizeof(float));
                assert_true(want && got);
                for (int m = 0; m < sh.M; m++)
                    for (int n = 0; n < ldc; n++) {
                        want[(size_t)m * ldc + n] = n < sh.N ? bias[n] : 7.0f;
                        got[(size_t)m * ldc + n] = n < sh.N ? NAN : 7.0f;
                    }
                const float alpha = t == 3 ? 0.5f : 1.0f;
                gemm_bf16_on((cpu_isa_t)isa, ta, tb, sh.M, sh.N, sh.K, alpha, A, lda, B, ldb, 1.0f, want, ldc);
                gemm_bf16_bias_on((cpu_isa_t)isa, ta, tb, sh.M, sh.N, sh.K, alpha, A, lda, B, ldb, bias, got, ldc);
                if (memcmp(want, got, (size_t)sh.M * ldc * sizeof(float)) != 0)
                    fail_msg("%s: M %d N %d K %d transA %d transB %d: the bias epilogue differs from beta 1 on the bias",
                             cpu_isa_name((cpu_isa_t)isa), sh.M, sh.N, sh.K, ta, tb);
                free(A);
                free(B);
                free(bias);
                free(want);
                free(got);
            }
}

/* Round to nearest, ties to even; NaN stays NaN; overflow to infinity; signs kept. */
static void test_rounding(void **state)
{
    struct {
        uint32_t in;
        uint16_t out;
    } rows[] = {
        {0x3f800000u, 0x3f80}, /* 1 */
        {0x3f808000u, 0x3f80}, /* 1 + 2^-8: a tie, to the even 1 */
        {0x3f818000u, 0x3f82}, /* 1 + 3 * 2^-8: a tie, to the even 1 + 2^-6 */
        {0x3f808001u, 0x3f81}, /* just above the tie: up */
        {0x3f807fffu, 0x3f80}, /* just below: down */
        {0xbf808001u, 0xbf81}, /* the same negative */
        {0x7f7fffffu, 0x7f80}, /* float's largest: past bf16's, to infinity */
        {0x7f800000u, 0x7f80}, /* infinity */
        {0xff800000u, 0xff80}, /* -infinity */
        {0x80000000u, 0x8000}, /* -0 */
        {0x00000001u, 0x0000}, /* the smallest denormal: to 0 */
        {0x00018000u, 0x0002}, /* a denormal tie: to even */
        {0x7fc00000u, 0x7fc0}, /* quiet NaN */
        {0x7f800001u, 0x7fc0}, /* a signalling NaN whose payload is below bf16's bits: still NaN */
        {0xffff0000u, 0xffff}, /* a negative NaN keeps its sign and payload */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        float f;
        memcpy(&f, &rows[i].in, sizeof f);
        uint16_t got = bf16_from_float(f);
        if (got != rows[i].out) fail_msg("bf16 of 0x%08x: 0x%04x, want 0x%04x", rows[i].in, got, rows[i].out);
    }
    assert_int_equal(bf16_to_float(0x3f80), 1.0f);
}

/* A NaN or infinity in an operand reaches the outputs that read it, on every path. */
static void test_nan_propagates(void **state)
{
    enum { M = 20, N = 20, K = 40 };
    for (int isa = 0; isa <= (int)cpu_isa_available(); isa++) {
        float *A = random_floats(M * K, 1.0), *B = random_floats(K * N, 1.0), C[M * N];
        A[3 * K + 7] = NAN;
        B[5 * N + 2] = INFINITY;
        gemm_bf16_on((cpu_isa_t)isa, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
        for (int n = 0; n < N; n++)
            if (!isnan(C[3 * N + n]))
                fail_msg("%s: row 3 (a NaN in A) col %d: %g", cpu_isa_name((cpu_isa_t)isa), n, C[3 * N + n]);
        for (int m = 0; m < M; m++)
            if (m != 3 && !isinf(C[m * N + 2]))
                fail_msg("%s: col 2 (an infinity in B) row %d: %g", cpu_isa_name((cpu_isa_t)isa), m, C[m * N + 2]);
        free(A);
        free(B);
    }
}

/* ---- the layers' products at MM_BF16 (matmul.h): each against ref_gemm_bf16 ------------ */

/* got (rows x cols, row stride ldg) against want + add (add: NULL or a term summed exactly
 * in float beside the product, a bias or the += gradient's prefill), within the bound. */
static void check_layer(const char *what, const float *got, int ldg, const double *want, const double *mag,
                        const float *add, int rows, int cols, int K)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            double a = add ? add[(size_t)r * cols + c] : 0.0, w = want[(size_t)r * cols + c] + a;
            double b = bound(K, mag[(size_t)r * cols + c] + fabs(a));
            double g = got[(size_t)r * ldg + c];
            if (!(fabs(g - w) <= b)) fail_msg("%s [%d, %d]: %.9g, want %.9g within %.3g", what, r, c, g, w, b);
        }
}

/* A fully connected layer's forward and both gradients (split over 3 threads: each packs
 * its own rows, the weight packed once for all of them), a batched product and a
 * convolution (at bf16 on conv_amx.h's tiles on the AMX path, else im2col and the GEMM), on each
 * path the CPU has. */
static void test_layers(void **state)
{
    enum { B = 64, IN = 70, OUT = 21 }; /* B IN OUT over parallel.h's one-thread bound */
    cpu_isa_t was = cpu_isa();
    mm_set_precision(MM_BF16);
    assert_int_equal(par_set_threads(3), 0);
    for (int isa = 0; isa <= (int)cpu_isa_available(); isa++) {
        cpu_isa_cap((cpu_isa_t)isa);
        float *x = random_floats(B * IN, 1.0), *w = random_floats(OUT * IN, 1.0), *bias = random_floats(OUT, 1.0);
        float *g = random_floats(B * OUT, 1.0), *d0 = random_floats(B * IN, 1.0);
        float y[B * OUT], dx[B * IN], dw[OUT * IN], db[OUT];
        double want[B * IN > OUT * IN ? B * IN : OUT * IN], mag[B * IN > OUT * IN ? B * IN : OUT * IN];
        fc_forward(B, IN, OUT, x, w, bias, y);
        ref_gemm_bf16(0, 1, B, OUT, IN, 1.0, x, IN, w, IN, 0.0, NULL, 0, want, mag);
        float bias_rows[B * OUT];
        for (int i = 0; i < B * OUT; i++) bias_rows[i] = bias[i % OUT];
        check_layer("fc forward", y, OUT, want, mag, bias_rows, B, OUT, IN);
        memcpy(dx, d0, sizeof dx);
        fc_backward(B, IN, OUT, x, w, g, dx, dw, db);
        ref_gemm_bf16(0, 0, B, IN, OUT, 1.0, g, OUT, w, IN, 0.0, NULL, 0, want, mag);
        check_layer("fc input gradient (+=)", dx, IN, want, mag, d0, B, IN, OUT);
        ref_gemm_bf16(1, 0, OUT, IN, B, 1.0, g, OUT, x, IN, 0.0, NULL, 0, want, mag);
        check_layer("fc weight gradient", dw, IN, want, mag, NULL, OUT, IN, B);
        /* two products of (12 x 40) x (40 x 24), as attention's */
        float *a = random_floats(2 * 12 * 40, 1.0), *bm = random_floats(2 * 40 * 24, 1.0), out[2 * 12 * 24];
        bmm_forward(2, 12, 40, 24, a, bm, out);
        for (int k = 0; k < 2; k++) {
            ref_gemm_bf16(0, 0, 12, 24, 40, 1.0, a + k * 480, 40, bm + k * 960, 24, 0.0, NULL, 0, want, mag);
            check_layer("bmm", out + k * 288, 24, want, mag, NULL, 12, 24, 40);
        }
        /* a 3x3 convolution of 16 channels: rows of im2col are (C, KH, KW) */
        conv2d_desc_t d;
        assert_int_equal(conv2d_init(&d, 16, 6, 6, 8, 3, 3, 1, 1), 0);
        float *cx = random_floats(16 * 36, 1.0), *cw = random_floats(8 * 16 * 9, 1.0), cy[8 * 36];
        float *ws = calloc(conv2d_workspace(&d, 1) + 1, sizeof(float));
        assert_non_null(ws);
        conv2d_forward(&d, 1, cx, cw, NULL, cy, ws);
        /* the reference: the same sums as a product of the weights (8 x 144) and the
         * input's patches (144 x 36), zero padding included */
        float patches[144 * 36];
        for (int c = 0; c < 16; c++)
            for (int i = 0; i < 9; i++)
                for (int p = 0; p < 36; p++) {
                    int yy = p / 6 + i / 3 - 1, xx = p % 6 + i % 3 - 1;
                    patches[(c * 9 + i) * 36 + p] = yy < 0 || yy >= 6 || xx < 0 || xx >= 6 ? 0.0f
                                                                                           : cx[c * 36 + yy * 6 + xx];
                }
        ref_gemm_bf16(0, 0, 8, 36, 144, 1.0, cw, 144, patches, 36, 0.0, NULL, 0, want, mag);
        check_layer("conv 3x3", cy, 36, want, mag, NULL, 8, 36, 144);
        mm_weights_changed(); /* the layers kept w packed: it is freed */
        free(x), free(w), free(bias), free(g), free(d0), free(a), free(bm), free(cx), free(cw), free(ws);
    }
    par_set_threads(1);
    mm_set_precision(MM_FP32);
    cpu_isa_cap(was);
}

/* ---- the fused attention at bf16 (attention.c) ------------------------------------------- */

/* One head (B 1, H 1) of T positions and width D at bf16, its weights P float32 or kept in
 * bf16 triangles (the same bits: P's rows rounded): Y = round(P) round(V) and
 * dV = round(P)^T round(dY) against double sums over the kernel's own P (its float32
 * softmax output) within gamma(T + 2) of the terms; P against the causal softmax, in
 * double, of the exact scores round(Q) round(K)^T: to first order a score off by e moves
 * P_c by at most 2 scale max|e| P_c (softmax's derivative), e at most gamma(D) of the
 * scores' terms, beside the float32 softmax's own 1e-6 (test_gpt's causal softmax). */
static void test_attention(void **state)
{
    enum { T = 37, D = 24 };
    if (!attention_fits(T, D)) {
        printf("skip: the fused attention needs AVX2 and FMA\n");
        skip();
    }
    float *q = random_floats(T * D, 1.0), *k = random_floats(T * D, 1.0), *v = random_floats(T * D, 1.0);
    float *dy = random_floats(T * D, 1.0), p[T * T] = {0}, y[T * D], dq[T * D], dk[T * D], dv[T * D];
    const float scale = 0.3f;
    attn_operand_t o = {.off = 0, .ss = T * D, .hs = T * D, .rs = D};
    attn_desc_t a = {.H = 1, .T = T, .D = D, .scale = scale, .pre_scale = 1.0f, .q = o, .k = o, .v = o, .y = o};
    mm_set_precision(MM_BF16);
    attention_causal_forward(&a, 1, q, k, v, p, y);
    attention_causal_backward(&a, 1, q, k, v, p, dy, dq, dk, dv);
    mm_set_precision(MM_FP32);
    double s[T * T], pr[T * T], want[T * D], mag[T * D], smag[T * T];
    for (int i = 0; i < T; i++)
        for (int c = 0; c < T; c++) {
            double acc = 0, m = 0;
            for (int d = 0; d < D; d++) {
                double t = (double)bf16_round(q[i * D + d]) * bf16_round(k[c * D + d]);
                acc += t, m += fabs(t);
            }
            s[i * T + c] = acc, smag[i * T + c] = m;
        }
    ref_causal_softmax(1, T, scale, s, pr);
    for (int i = 0; i < T; i++) {
        double e = 0;
        for (int c = 0; c <= i; c++) e = fmax(e, bound(D, smag[i * T + c]));
        for (int c = 0; c < T; c++) {
            double b = 2.0 * scale * e * pr[i * T + c] * 1.01 + 1e-6;
            if (!(fabs(p[i * T + c] - pr[i * T + c]) <= b))
                fail_msg("attention P [%d, %d]: %.9g, want %.9g within %.3g", i, c, p[i * T + c], pr[i * T + c], b);
        }
    }
    /* Y = round(P) round(V): P lower-triangular, zeros above */
    ref_gemm_bf16(0, 0, T, D, T, 1.0, p, T, v, D, 0.0, NULL, 0, want, mag);
    check_layer("attention Y", y, D, want, mag, NULL, T, D, T);
    ref_gemm_bf16(1, 0, T, D, T, 1.0, p, T, dy, D, 0.0, NULL, 0, want, mag);
    check_layer("attention dV", dv, D, want, mag, NULL, T, D, T);
    for (int i = 0; i < T * D; i++)
        if (!isfinite(dq[i]) || !isfinite(dk[i])) fail_msg("attention dQ or dK not finite at %d", i);
    /* the weights kept in bf16 triangles (attn_bf16_t's p): P's rows rounded, the same
     * output, and the same gradients (the backward reads P rounded either way) */
    uint16_t tri[T * (T + 1) / 2];
    float y2[T * D], dq2[T * D], dk2[T * D], dv2[T * D];
    const attn_bf16_t s16 = {.p = tri};
    mm_set_precision(MM_BF16);
    attention_causal_forward_bf16(&a, 1, q, k, v, &s16, NULL, y2);
    attention_causal_backward_bf16(&a, 1, q, k, v, &s16, NULL, dy, dq2, dk2, dv2);
    mm_set_precision(MM_FP32);
    for (int i = 0, t = 0; i < T; i++)
        for (int c = 0; c <= i; c++, t++)
            if (tri[t] != bf16_from_float(p[i * T + c])) fail_msg("attention P [%d, %d] kept as %#x", i, c, tri[t]);
    if (memcmp(y, y2, sizeof y) || memcmp(dq, dq2, sizeof dq) || memcmp(dk, dk2, sizeof dk) ||
        memcmp(dv, dv2, sizeof dv))
        fail_msg("attention with its weights in bf16: not the same bits");
    free(q), free(k), free(v), free(dy);
}

/* On one thread a product packs its B a chunk of column blocks at a time as it runs, into
 * scratch of one chunk; a kept B (gemm_bf16_keep_b: several threads, or generation) is
 * packed whole, once. The same blocks either way, so the same bits; and the scratch stays
 * well under the whole packed B (K 4100 takes chunks of 2 of the 19 column blocks on the
 * AVX512-BF16 path, 16 on AMX's). */
typedef struct {
    shape_t sh;
    int tb;
    const float *A, *B;
    float *C;
    size_t held; /* the thread's scratch for B after the product */
} chunked_job_t;

static void *chunked_product(void *arg)
{
    chunked_job_t *j = arg;
    const int ldb = j->tb ? j->sh.K : j->sh.N;
    gemm_bf16(0, j->tb, j->sh.M, j->sh.N, j->sh.K, 1.0f, j->A, j->sh.K, j->B, ldb, 0.0f, j->C, j->sh.N);
    j->held = gemm_bf16_scratch_held(1);
    return NULL;
}

/* Skips, by name, where the CPU has no bf16 unit (the portable path has no packing) */
static void need_units(void)
{
    if (cpu_isa_available() >= CPU_ISA_AVX512_BF16) return;
    printf("skip: the bf16 units' paths: %s\n", cpu_isa_why());
    skip();
}

static void test_chunks_and_kept(void **state)
{
    need_units();
    static const shape_t S[] = {{20, 300, 4100}, {9, 300, 40}, {33, 17, 1000}};
    const int threads = par_threads();
    par_set_threads(1);
    for (int isa = CPU_ISA_AVX512_BF16; isa <= (int)cpu_isa_available(); isa++)
        for (size_t i = 0; i < sizeof S / sizeof S[0]; i++)
            for (int tb = 0; tb < 2; tb++) {
                const shape_t sh = S[i];
                const int ldb = tb ? sh.K : sh.N;
                float *A = random_floats((size_t)sh.M * sh.K, 1.0), *B = random_floats((size_t)sh.K * sh.N, 1.0);
                float *kept = malloc((size_t)sh.M * sh.N * sizeof(float));
                float *chunked = malloc((size_t)sh.M * sh.N * sizeof(float));
                assert_true(kept && chunked);
                cpu_isa_t was = cpu_isa_cap((cpu_isa_t)isa);
                gemm_bf16_keep_all(1);
                assert_int_equal(gemm_bf16_keep_b(tb, sh.K, sh.N, B, ldb), 0);
                gemm_bf16(0, tb, sh.M, sh.N, sh.K, 1.0f, A, sh.K, B, ldb, 0.0f, kept, sh.N);
                gemm_bf16_keep_all(0); /* forgets; one thread keeps nothing */
                assert_int_equal(gemm_bf16_keep_b(tb, sh.K, sh.N, B, ldb), 0);
                /* on a thread of its own: scratch of its own, which nothing else grew */
                chunked_job_t job = {.sh = sh, .tb = tb, .A = A, .B = B, .C = chunked};
                pthread_t th;
                assert_int_equal(pthread_create(&th, NULL, chunked_product, &job), 0);
                pthread_join(th, NULL);
                cpu_isa_cap(was);
                if (memcmp(kept, chunked, (size_t)sh.M * sh.N * sizeof(float)) != 0)
                    fail_msg("%s: M %d N %d K %d transB %d: B packed by chunks differs from B kept",
                             cpu_isa_name((cpu_isa_t)isa), sh.M, sh.N, sh.K, tb);
                const size_t whole = (size_t)((sh.N + 15) / 16) * ((sh.K + 31) / 32) * 512 * 2;
                if (sh.K == 4100 && !(job.held > 0 && job.held < whole / 4))
                    fail_msg("%s: B's scratch %zu bytes, the whole packed B %zu", cpu_isa_name((cpu_isa_t)isa),
                             job.held, whole);
                free(A), free(B), free(kept), free(chunked);
            }
    par_set_threads(threads);
}

/* A product whose packed A would pass 4 MiB runs in pieces (gemm_bf16.c's UNITS_A_MAX).
 * By rows (8208 x 256 x 40, A as stored and transposed: two pieces, 8192 rows and 16):
 * each row the bits of the same row computed alone (a 16-row product, one piece). By k
 * (16 x 140000 x 40, B too large to pack again: two pieces), with alpha, beta and a bias:
 * within the bound of K products and K / 32 partial sums, gamma(K + K / 32 + 2), of the
 * double reference. On each unit path the CPU has. */
static void test_large_products(void **state)
{
    need_units();
    for (int isa = CPU_ISA_AVX512_BF16; isa <= (int)cpu_isa_available(); isa++)
        for (int ta = 0; ta < 2; ta++) {
            const int M = 8208, N = 40, K = 256, lda = ta ? M : K;
            float *A = random_floats((size_t)M * K, 1.0), *B = random_floats((size_t)K * N, 1.0);
            float *C = malloc((size_t)M * N * sizeof(float)), *c16 = malloc((size_t)16 * N * sizeof(float));
            assert_true(C && c16);
            gemm_bf16_on((cpu_isa_t)isa, ta, 0, M, N, K, 1.0f, A, lda, B, N, 0.0f, C, N);
            static const int AT[] = {0, 4096, 8192};
            for (size_t i = 0; i < 3; i++) {
                const float *a = ta ? A + AT[i] : A + (size_t)AT[i] * K;
                gemm_bf16_on((cpu_isa_t)isa, ta, 0, 16, N, K, 1.0f, a, lda, B, N, 0.0f, c16, N);
                if (memcmp(c16, C + (size_t)AT[i] * N, (size_t)16 * N * sizeof(float)) != 0)
                    fail_msg("%s: transA %d: rows %d.. of a product by pieces differ from the rows alone",
                             cpu_isa_name((cpu_isa_t)isa), ta, AT[i]);
            }
            free(A), free(B), free(C), free(c16);
        }
    for (int isa = CPU_ISA_AVX512_BF16; isa <= (int)cpu_isa_available(); isa++)
        for (int bias = 0; bias < 2; bias++) {
            const int M = 16, N = 40, K = 140000;
            float *A = random_floats((size_t)M * K, 1.0), *B = random_floats((size_t)K * N, 1.0);
            float *b = random_floats(N, 3.0), *C = random_floats((size_t)M * N, 1.0);
            double *ref = malloc((size_t)M * N * sizeof(double)), *mag = malloc((size_t)M * N * sizeof(double));
            assert_true(ref && mag);
            const float alpha = 0.75f, beta = bias ? 1.0f : 0.5f;
            if (bias)
                for (int m = 0; m < M; m++) memcpy(C + (size_t)m * N, b, (size_t)N * sizeof(float));
            ref_gemm_bf16(0, 0, M, N, K, alpha, A, K, B, N, beta, C, N, ref, mag);
            if (bias) gemm_bf16_bias_on((cpu_isa_t)isa, 0, 0, M, N, K, alpha, A, K, B, N, b, C, N);
            else gemm_bf16_on((cpu_isa_t)isa, 0, 0, M, N, K, alpha, A, K, B, N, beta, C, N);
            for (int i = 0; i < M * N; i++)
                if (!(fabs((double)C[i] - ref[i]) <= bound(K + K / 32, mag[i])))
                    fail_msg("%s: bias %d: output %d %.9g, reference %.9g: beyond the bound",
                             cpu_isa_name((cpu_isa_t)isa), bias, i, C[i], ref[i]);
            free(A), free(B), free(b), free(C), free(ref), free(mag);
        }
}

/* PACER_CPU_ISA's spellings, and the cap: a cap at or below what the CPU has is what runs. */
static void test_cap(void **state)
{
    cpu_isa_t isa;
    assert_int_equal(cpu_isa_parse("portable", &isa), 0);
    assert_int_equal(isa, CPU_ISA_PORTABLE);
    assert_int_equal(cpu_isa_parse("avx512_bf16", &isa), 0);
    assert_int_equal(isa, CPU_ISA_AVX512_BF16);
    assert_int_equal(cpu_isa_parse("amx", &isa), 0);
    assert_int_equal(isa, CPU_ISA_AMX);
    assert_int_equal(cpu_isa_parse("AMX", &isa), -1);
    assert_int_equal(cpu_isa_parse("", &isa), -1);
    cpu_isa_t was = cpu_isa();
    assert_int_equal(cpu_isa_cap(CPU_ISA_PORTABLE), CPU_ISA_PORTABLE);
    assert_int_equal(cpu_isa(), CPU_ISA_PORTABLE);
    assert_non_null(strstr(cpu_isa_why(), "PACER_CPU_ISA caps it at portable"));
    assert_int_equal(cpu_isa_cap(CPU_ISA_AMX), cpu_isa_available());
    cpu_isa_cap(was);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding),
        cmocka_unit_test(test_portable),
        cmocka_unit_test(test_avx512_bf16),
        cmocka_unit_test(test_amx),
        cmocka_unit_test(test_paths_agree),
        cmocka_unit_test(test_nan_propagates),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_bias_epilogue),
        cmocka_unit_test(test_chunks_and_kept),
        cmocka_unit_test(test_large_products),
    };
    printf("bf16 products: this CPU's best path %s (%s)\n", cpu_isa_name(cpu_isa_available()), cpu_isa_why());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
