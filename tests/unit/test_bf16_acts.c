/* tests/unit/test_bf16_acts.c - activations stored in bf16 (kernels/cpu/gemm_bf16_act.h,
 * plan.h's act_bf16).
 *
 * Storing an activation that only bf16 products read is exact by construction (each
 * product rounds that operand to bf16 as the producer does), so the checks of storing are
 * bit for bit. The rounding on each path the CPU has against a scalar table of it (ties to
 * even, NaN, overflow, and the denormals that the bf16 units' conversion takes as zero);
 * the products of a bf16 operand against gemm_bf16_on on its float32 values, across the
 * block edges, with and without a bias; the layer norm's bf16 output against its float32
 * output rounded; GELU's bf16 output against its float32 output rounded, and its backward,
 * which reads that output rounded (plan.h's saved_bf16), the same bits from either, within
 * its bound of the float64 reference; and a bf16 GPT trained a few steps with its layer
 * norms', GELUs', q/k/v projections' and fused attentions' outputs in bf16 (and mlp.c_fc's
 * rounded) against the same model with them float32
 * (PACER_BF16_ACTS=0): the same losses, gradients and weights, on every path (AVX512-BF16
 * and AMX skip by name on a CPU without them), on one thread and two, and with LoRA
 * adapters; its activation arena smaller by the half of those outputs, and by the outputs
 * that share one slot (plan.h's act_shared). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "bf16.h"
#include "cpu_isa.h"
#include "gemm_bf16.h"
#include "gemm_bf16_act.h"
#include "gpt.h"
#include "lora.h"
#include "matmul.h"
#include "plan.h"
#include "model.h"
#include "ops.h"
#include "parallel.h"
#include "rng.h"

static float *random_floats(rng_t *r, size_t n, double scale)
{
    float *x = malloc(n * sizeof(float));
    assert_non_null(x);
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * rng_normal(r));
    return x;
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Whether path isa runs here; else prints why and skips (a cmocka skip returns). */
static int have(cpu_isa_t isa)
{
    if (cpu_isa_available() >= isa) return 1;
    printf("skip: %s path: %s\n", cpu_isa_name(isa), cpu_isa_why());
    return 0;
}

/* The rounding as each path's products take an operand: portable to nearest even with
 * denormals kept; the bf16 units' also to nearest even, a denormal to the zero of its sign. */
static void test_store(void **state)
{
    static const uint32_t T[] = {
        0x3f800000u, /* 1 */
        0x3f808000u, /* a tie: to even (1) */
        0x3f818000u, /* a tie: to even (up) */
        0x3f808001u, /* above the tie: up */
        0xbf807fffu, /* below the tie: down, negative */
        0x7f7fffffu, /* the largest float: past bf16's largest, to infinity */
        0x7f800000u, /* infinity */
        0xff800001u, /* a NaN: stays a quiet NaN */
        0x00000001u, /* the smallest denormal */
        0x807fffffu, /* the largest negative denormal: rounds up to -2^-126 when kept */
        0x00400000u, /* a denormal */
        0x80000000u, /* -0 */
        0x00800000u, /* 2^-126, normal */
    };
    enum { NT = sizeof T / sizeof T[0], N = 77 }; /* 4 vectors, and a tail of the whole table */
    float src[N];
    uint16_t got[N];
    for (int i = 0; i < N; i++) src[i] = from_bits(T[i % NT] ^ (uint32_t)(i / NT) << 12); /* varied low bits */
    for (int isa = CPU_ISA_PORTABLE; isa < CPU_ISA_N; isa++) {
        if (!have((cpu_isa_t)isa)) continue;
        bf16_act_store_on((cpu_isa_t)isa, N, src, got);
        for (int i = 0; i < N; i++) {
            uint32_t u;
            memcpy(&u, &src[i], sizeof u);
            const int denormal = (u & 0x7f800000u) == 0 && (u & 0x7fffffu) != 0;
            const uint16_t want = isa != CPU_ISA_PORTABLE && denormal ? (uint16_t)((u >> 16) & 0x8000u)
                                                                      : bf16_from_float(src[i]);
            if (got[i] != want)
                fail_msg("%s: %08x stored as %04x, want %04x", cpu_isa_name((cpu_isa_t)isa), u, got[i], want);
        }
    }
    /* the table's cases, on the portable path: ties to even, infinity, a quiet NaN */
    bf16_act_store_on(CPU_ISA_PORTABLE, NT, src, got);
    assert_int_equal(got[1], 0x3f80);
    assert_int_equal(got[2], 0x3f82);
    assert_int_equal(got[3], 0x3f81);
    assert_int_equal(got[4], 0xbf80);
    assert_int_equal(got[5], 0x7f80);
    assert_true((got[7] & 0x7fc0) == 0x7fc0);
    assert_int_equal(got[9], 0x8080);
}

/* One product on path isa with operand `which` (0: A, 1: B) stored in bf16 against
 * gemm_bf16_on (gemm_bf16_bias_on) on its float32 values: the same bits. */
static void check_product(cpu_isa_t isa, int which, int t, int M, int N, int K, int with_bias, rng_t *r)
{
    const int pad = 3, ldc = N + pad;
    const int ld16 = (which ? N : K) + pad; /* the bf16 operand, row-major */
    const int rows16 = which ? K : M;
    const int ldx = (which ? (t ? M : K) : (t ? K : N)) + pad, rowsx = which ? (t ? K : M) : (t ? N : K);
    float *X16f = random_floats(r, (size_t)rows16 * ld16, 1.0), *X = random_floats(r, (size_t)rowsx * ldx, 1.0);
    float *bias = random_floats(r, (size_t)N, 2.0);
    X16f[0] = from_bits(0x807fffffu); /* a denormal: zero on the units, kept on the portable path */
    X16f[1] = from_bits(0x00000003u);
    uint16_t *A16 = malloc((size_t)rows16 * ld16 * sizeof *A16);
    float *want = malloc((size_t)M * ldc * sizeof(float)), *got = malloc((size_t)M * ldc * sizeof(float));
    assert_true(A16 && want && got);
    bf16_act_store_on(isa, (size_t)rows16 * ld16, X16f, A16);
    for (size_t i = 0; i < (size_t)M * ldc; i++) want[i] = got[i] = (float)(i % 5) - 2.0f;
    /* t 0: alpha 1 and beta 0, where AMX stores whole tiles straight into C */
    const float alpha = t ? 0.5f : 1.0f, beta = with_bias || !t ? 0.0f : 0.75f;
    if (which == 0 && with_bias) {
        gemm_bf16_bias_on(isa, 0, t, M, N, K, alpha, X16f, ld16, X, ldx, bias, want, ldc);
        gemm_bf16_a16_on(isa, t, M, N, K, alpha, A16, ld16, X, ldx, bias, 0.0f, got, ldc);
    } else if (which == 0) {
        gemm_bf16_on(isa, 0, t, M, N, K, alpha, X16f, ld16, X, ldx, beta, want, ldc);
        gemm_bf16_a16_on(isa, t, M, N, K, alpha, A16, ld16, X, ldx, NULL, beta, got, ldc);
    } else {
        gemm_bf16_on(isa, t, 0, M, N, K, alpha, X, ldx, X16f, ld16, beta, want, ldc);
        gemm_bf16_b16_on(isa, t, M, N, K, alpha, X, ldx, A16, ld16, beta, got, ldc);
    }
    if (memcmp(want, got, (size_t)M * ldc * sizeof(float)) != 0)
        fail_msg("%s: %s bf16, M %d N %d K %d trans %d bias %d: not the float32 operand's bits", cpu_isa_name(isa),
                 which ? "B" : "A", M, N, K, t, with_bias);
    free(X16f), free(X), free(bias), free(A16), free(want), free(got);
}

/* gemm_bf16_mixed_on: A (M, K) bf16 or float32 (transposed where float32 and ta), B bf16 or
 * float32, (K, N) or transposed (stored (N, K)), both bf16 included (a fused attention's q k^T
 * of q and k stored in bf16): the bits of gemm_bf16_on on the values as float32 */
static void check_mixed(cpu_isa_t isa, int a16, int b16, int ta, int tb, int M, int N, int K, rng_t *r)
{
    const int pad = 3, ldc = N + pad;
    const int ar = ta ? K : M, ac = (ta ? M : K) + pad, br = tb ? N : K, bc = (tb ? K : N) + pad;
    float *A = random_floats(r, (size_t)ar * ac, 1.0), *B = random_floats(r, (size_t)br * bc, 1.0);
    uint16_t *A16 = malloc((size_t)ar * ac * sizeof *A16), *B16 = malloc((size_t)br * bc * sizeof *B16);
    float *want = malloc((size_t)M * ldc * sizeof(float)), *got = malloc((size_t)M * ldc * sizeof(float));
    assert_true(A16 && B16 && want && got);
    A[0] = from_bits(0x807fffffu); /* a denormal: zero on the units, kept on the portable path */
    bf16_act_store_on(isa, (size_t)ar * ac, A, A16);
    bf16_act_store_on(isa, (size_t)br * bc, B, B16);
    for (size_t i = 0; i < (size_t)M * ldc; i++) want[i] = got[i] = (float)(i % 5) - 2.0f;
    const float alpha = tb ? 0.5f : 1.0f, beta = M % 2 ? 0.75f : 0.0f;
    gemm_bf16_on(isa, ta, tb, M, N, K, alpha, A, ac, B, bc, beta, want, ldc);
    gemm_bf16_mixed_on(isa, ta, tb, M, N, K, alpha, a16 ? NULL : A, a16 ? A16 : NULL, ac, b16 ? NULL : B,
                       b16 ? B16 : NULL, bc, beta, got, ldc);
    if (memcmp(want, got, (size_t)M * ldc * sizeof(float)) != 0)
        fail_msg("%s: A %s%s, B %s%s, M %d N %d K %d: not the float32 operands' bits", cpu_isa_name(isa),
                 a16 ? "bf16" : "float32", ta ? "^T" : "", b16 ? "bf16" : "float32", tb ? "^T" : "", M, N, K);
    free(A), free(B), free(A16), free(B16), free(want), free(got);
}

static void check_products(cpu_isa_t isa)
{
    /* block edges; whole tiles of A (M 16 k, K 32 k: AMX reads A as stored up to N 1024),
     * odd and even counts of them */
    static const int SH[][3] = {{1, 1, 1},    {16, 16, 32}, {17, 33, 65}, {64, 48, 100},  {33, 17, 300}, {5, 70, 3},
                                {64, 64, 64}, {48, 50, 96}, {32, 33, 32}, {80, 100, 160}, {32, 1040, 64}};
    rng_t r;
    rng_seed(&r, 5);
    for (size_t s = 0; s < sizeof SH / sizeof SH[0]; s++)
        for (int t = 0; t < 2; t++) {
            check_product(isa, 0, t, SH[s][0], SH[s][1], SH[s][2], 0, &r);
            check_product(isa, 0, t, SH[s][0], SH[s][1], SH[s][2], 1, &r);
            check_product(isa, 1, t, SH[s][0], SH[s][1], SH[s][2], 0, &r);
            for (int v = 1; v < 4; v++) { /* A16, B16, both; B transposed or not */
                check_mixed(isa, v & 1, v >> 1, 0, t, SH[s][0], SH[s][1], SH[s][2], &r);
                if (!(v & 1)) check_mixed(isa, 0, 1, 1, t, SH[s][0], SH[s][1], SH[s][2], &r);
            }
        }
}

static void test_products_portable(void **state) { check_products(CPU_ISA_PORTABLE); }
static void test_products_avx512_bf16(void **state)
{
    if (!have(CPU_ISA_AVX512_BF16)) skip();
    check_products(CPU_ISA_AVX512_BF16);
}
static void test_products_amx(void **state)
{
    if (!have(CPU_ISA_AMX)) skip();
    check_products(CPU_ISA_AMX);
}

/* The layer norm's bf16 output: its float32 output rounded, the same statistics; rows
 * computed whole (up to 4096) and in chunks. */
static void test_layernorm(void **state)
{
    static const int DS[] = {8, 255, 768, 4096, 5000}; /* past 4096: in chunks of it */
    rng_t r;
    rng_seed(&r, 3);
    for (size_t c = 0; c < sizeof DS / sizeof DS[0]; c++) {
        const int rows = 5, D = DS[c];
        float *x = random_floats(&r, (size_t)rows * D, 3.0), *w = random_floats(&r, (size_t)D, 1.0),
              *b = random_floats(&r, (size_t)D, 1.0), *y = malloc((size_t)rows * D * sizeof(float));
        uint16_t *y16 = malloc((size_t)rows * D * sizeof *y16), *want = malloc((size_t)rows * D * sizeof *want);
        double s1[2 * 5], s2[2 * 5];
        assert_true(y && y16 && want);
        layernorm_forward_saving(rows, D, 1e-5f, x, w, b, y, s1);
        layernorm_forward_saving_bf16(rows, D, 1e-5f, x, w, b, y16, s2);
        bf16_act_store((size_t)rows * D, y, want);
        assert_memory_equal(s1, s2, sizeof s1);
        if (memcmp(y16, want, (size_t)rows * D * sizeof *want) != 0) fail_msg("D %d: not the rounded output", D);
        free(x), free(w), free(b), free(y), free(y16), free(want);
    }
}

/* GELU's output in bf16 (unary_forward_bf16): its float32 output rounded, whole and across
 * the chunks the steps take; its backward on that output read rounded (unary_backward_bf16),
 * the same bits whether stored in bf16 or float32, adding or setting. Against float64: Phi
 * = y / x from y rounded (bf16 keeps 8 significant bits: to nearest, a relative error
 * below 2^-8) moves the gradient by at most |dy| 2^-8 Phi; beyond that float32's own bound (test_ops's 1e-5,
 * relative, absolute below 1). */
static void check_gelu(cpu_isa_t isa, rng_t *r)
{
    static const size_t NS[] = {1, 15, 16, 2047, 2048, 2049, 4113, 6000};
    cpu_isa_cap(isa);
    for (size_t c = 0; c < sizeof NS / sizeof NS[0]; c++) {
        const size_t n = NS[c];
        float *x = random_floats(r, n, 2.5), *g = random_floats(r, n, 1.0), *y = malloc(n * sizeof(float));
        float *d16 = malloc(n * sizeof(float)), *d32 = malloc(n * sizeof(float)), *dw = malloc(n * sizeof(float));
        uint16_t *y16 = malloc(n * sizeof *y16), *want = malloc(n * sizeof *want);
        assert_true(y && d16 && d32 && dw && y16 && want);
        x[0] = -30.0f; /* GELU's output a denormal, or zero */
        unary_forward(UNARY_GELU, 0.0f, n, x, y);
        unary_forward_bf16(UNARY_GELU, 0.0f, n, x, NULL, y16);
        bf16_act_store(n, y, want);
        if (memcmp(y16, want, n * sizeof *want) != 0)
            fail_msg("%s: n %zu: not the rounded output", cpu_isa_name(isa), n);
        for (int set = 0; set < 2; set++) {
            for (size_t i = 0; i < n; i++) d16[i] = d32[i] = set ? 7.0f : 0.25f;
            unary_backward_bf16(UNARY_GELU, 0.0f, n, x, NULL, NULL, y16, g, d16, set);
            unary_backward_bf16(UNARY_GELU, 0.0f, n, x, NULL, y, NULL, g, d32, set);
            if (memcmp(d16, d32, n * sizeof(float)) != 0)
                fail_msg("%s: n %zu set %d: stored in bf16 or rounded as read, not the same bits", cpu_isa_name(isa), n,
                         set);
        }
        unary_backward_set(UNARY_GELU, 0.0f, n, x, y, g, dw);
        int moved = 0;
        for (size_t i = 0; i < n; i++) {
            const double xi = x[i], Phi = 0.5 * (1.0 + erf(xi / sqrt(2.0)));
            const double ref = g[i] * (Phi + xi * exp(-0.5 * xi * xi) / sqrt(2.0 * 3.14159265358979323846));
            const double bound = fabs(g[i]) * Phi * 0x1p-8 + 1e-5 * fmax(1.0, fabs(ref));
            if (fabs(d16[i] - ref) > bound)
                fail_msg("%s: x %.9g dy %.9g: dx %.9g, float64 %.9g, beyond %.3g", cpu_isa_name(isa), x[i], g[i],
                         d16[i], ref, bound);
            moved += d16[i] != dw[i];
        }
        /* the rounding is there: the float32 output's gradient differs somewhere */
        if (n >= 16) assert_true(moved > 0);
        free(x), free(g), free(y), free(d16), free(d32), free(dw), free(y16), free(want);
    }
}

/* GELU on an input stored in bf16 (a rounded Linear's output, plan.h's rounded): the bits of
 * GELU on its values as float32, forward and backward, from either the bf16 or the float32
 * rounded input; and against float64 GELU on the input before it was rounded: a relative
 * 2^-8 at most on each input moves the output by at most |x| 2^-8 max|GELU'| (below 1.13),
 * beyond float32's own bound. */
static void check_gelu_input(cpu_isa_t isa, rng_t *r)
{
    static const size_t NS[] = {1, 17, 2048, 2049, 6000};
    cpu_isa_cap(isa);
    for (size_t c = 0; c < sizeof NS / sizeof NS[0]; c++) {
        const size_t n = NS[c];
        float *x = random_floats(r, n, 2.5), *g = random_floats(r, n, 1.0), *xw = malloc(n * sizeof(float));
        float *y = malloc(n * sizeof(float)), *d16 = malloc(n * sizeof(float)), *d32 = malloc(n * sizeof(float));
        uint16_t *x16 = malloc(n * sizeof *x16), *y16 = malloc(n * sizeof *y16), *yw = malloc(n * sizeof *yw);
        assert_true(xw && y && d16 && d32 && x16 && y16 && yw);
        x[0] = 1e-40f; /* a denormal input: zero on the bf16 units' paths */
        bf16_act_store(n, x, x16);
        for (size_t i = 0; i < n; i++) xw[i] = bf16_to_float(x16[i]);
        unary_forward_bf16(UNARY_GELU, 0.0f, n, NULL, x16, y16);
        unary_forward_bf16(UNARY_GELU, 0.0f, n, xw, NULL, yw);
        if (memcmp(y16, yw, n * sizeof *yw) != 0)
            fail_msg("%s: n %zu: GELU of the bf16 input is not GELU of its values", cpu_isa_name(isa), n);
        for (int set = 0; set < 2; set++) {
            for (size_t i = 0; i < n; i++) d16[i] = d32[i] = set ? 7.0f : 0.25f;
            unary_backward_bf16(UNARY_GELU, 0.0f, n, NULL, x16, NULL, y16, g, d16, set);
            unary_backward_bf16(UNARY_GELU, 0.0f, n, xw, NULL, NULL, y16, g, d32, set);
            if (memcmp(d16, d32, n * sizeof(float)) != 0)
                fail_msg("%s: n %zu set %d: the backward on the bf16 input differs", cpu_isa_name(isa), n, set);
        }
        unary_forward(UNARY_GELU, 0.0f, n, xw, y);
        int moved = 0;
        for (size_t i = 0; i < n; i++) {
            const double xi = x[i], ref = 0.5 * xi * (1.0 + erf(xi / sqrt(2.0)));
            const double bound = 1.13 * fabs(xi) * 0x1p-8 + 1e-5 * fmax(1.0, fabs(ref));
            if (fabs(y[i] - ref) > bound)
                fail_msg("%s: x %.9g: GELU of it rounded %.9g, float64 %.9g, beyond %.3g", cpu_isa_name(isa), x[i],
                         y[i], ref, bound);
            moved += xw[i] != x[i];
        }
        assert_true(moved > 0); /* the rounding is there */
        free(x), free(g), free(xw), free(y), free(d16), free(d32), free(x16), free(y16), free(yw);
    }
}

/* gemm_forward_rounded: each output the bits of gemm_forward at bf16 products
 * (gemm_forward_a16 on a bf16 input) rounded as bf16_act_store rounds it, stored in bf16 or
 * as floats; the product rounds as it writes on the bf16 units' paths, the portable path
 * rounds float32 rows in blocks: across 64 rows' edges and B's column chunks (OUT 300: two
 * of 256 columns), with and without a bias, of either layout. */
static void check_rounded_linear(cpu_isa_t isa, rng_t *r)
{
    static const int BS[] = {1, 63, 64, 65, 130}, OUTS[] = {16, 100, 300};
    cpu_isa_cap(isa);
    mm_set_precision(MM_BF16);
    for (size_t bi = 0; bi < sizeof BS / sizeof BS[0]; bi++)
        for (size_t oi = 0; oi < sizeof OUTS / sizeof OUTS[0]; oi++)
            for (int v = 0; v < 8; v++) {
                const int B = BS[bi], OUT = OUTS[oi], IN = v & 1 ? 64 : 70, bias = v >> 1 & 1, in16 = v >> 2 & 1;
                const gemm_desc_t d = {.IN = IN,
                                       .OUT = OUT,
                                       .layout = in16 ? GEMM_W_OUT_IN : (gemm_layout_t)(v & 1),
                                       .alpha = 1.0f,
                                       .beta = 1.0f};
                const size_t no = (size_t)B * OUT;
                float *x = random_floats(r, (size_t)B * IN, 1.0), *w = random_floats(r, (size_t)IN * OUT, 0.2);
                float *b = random_floats(r, OUT, 1.0), *ref = malloc(no * sizeof(float));
                float *got = malloc(no * sizeof(float));
                uint16_t *x16 = malloc((size_t)B * IN * sizeof *x16), *want = malloc(no * sizeof *want);
                uint16_t *got16 = malloc(no * sizeof *got16);
                assert_true(ref && got && x16 && want && got16);
                bf16_act_store((size_t)B * IN, x, x16);
                if (in16) gemm_forward_a16(&d, B, x16, w, bias ? b : NULL, ref);
                else gemm_forward(&d, B, x, w, bias ? b : NULL, ref);
                bf16_act_store(no, ref, want);
                gemm_forward_rounded(&d, B, in16 ? NULL : x, in16 ? x16 : NULL, w, bias ? b : NULL, NULL, got16);
                gemm_forward_rounded(&d, B, in16 ? NULL : x, in16 ? x16 : NULL, w, bias ? b : NULL, got, NULL);
                mm_weights_changed();
                for (size_t i = 0; i < no; i++)
                    if (got16[i] != want[i] || got[i] != bf16_to_float(want[i]))
                        fail_msg("%s: B %d OUT %d IN %d bias %d in16 %d: output %zu not the product rounded",
                                 cpu_isa_name(isa), B, OUT, IN, bias, in16, i);
                free(x), free(w), free(b), free(ref), free(got), free(x16), free(want), free(got16);
            }
    mm_set_precision(MM_FP32);
}

static void test_gelu(void **state)
{
    const cpu_isa_t was = cpu_isa();
    rng_t r;
    rng_seed(&r, 9);
    for (int isa = CPU_ISA_PORTABLE; isa < CPU_ISA_N; isa++)
        if (have((cpu_isa_t)isa)) {
            check_gelu((cpu_isa_t)isa, &r);
            check_gelu_input((cpu_isa_t)isa, &r);
            check_rounded_linear((cpu_isa_t)isa, &r);
        }
    cpu_isa_cap(was);
}

/* ---- a GPT ---------------------------------------------------------------------------- */

static const model_gpt_t G = {
    .layers = 2, .heads = 2, .embd = 64, .block = 16, .vocab = 50, .dropout = 0.0f, .bias = 1, .tie = 1};
enum { B = 3, STEPS = 3 };

/* A bf16 GPT, its layer norms' and GELUs' outputs in bf16 (acts 1) or float32 (0) */
static model_t *gpt(int acts, const model_gpt_t *g)
{
    char err[256];
    model_t *m = NULL;
    setenv("PACER_BF16_ACTS", acts ? "1" : "0", 1);
    mm_set_precision(MM_BF16);
    const int rc = model_create_gpt("gpt", g, B, &m, err, sizeof err);
    mm_set_precision(MM_FP32);
    unsetenv("PACER_BF16_ACTS");
    if (rc != 0) fail_msg("%s", err);
    model_gpt_init(m, g->layers, 11);
    assert_int_equal(model_alloc_moment2(m), 0);
    return m;
}

/* STEPS AdamW steps of both models on the same batches: each step's loss, gradient and
 * weights the same bits. */
static void train_both(model_t *a, model_t *b, const char *what)
{
    const model_gpt_t *g = &G;
    rng_t r;
    rng_seed(&r, 23);
    const int n = B * g->block;
    float x[B * 16];
    int32_t y[B * 16];
    optim_step_t o = {.adamw = 1, .groups = 1, .grad_scale = 1.0f, .clip_norm = 1.0f};
    o.h = (adamw_hparams_t){.lr = 0.01, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
    mm_set_precision(MM_BF16);
    for (int s = 0; s < STEPS; s++) {
        for (int k = 0; k < n; k++) x[k] = (float)rng_below(&r, (uint32_t)g->vocab), y[k] = (int32_t)rng_below(&r, 50);
        const float la = model_forward(a, x, y, B, 1), lb = model_forward(b, x, y, B, 1);
        if (memcmp(&la, &lb, sizeof la) != 0)
            fail_msg("%s: step %d: loss %.9g with bf16 activations, %.9g without", what, s, la, lb);
        model_backward(a, x, y, B, 1.0f);
        model_backward(b, x, y, B, 1.0f);
        for (size_t k = 0; k < a->nparams; k++)
            if (memcmp(&a->grads[k], &b->grads[k], sizeof(float)) != 0)
                fail_msg("%s: step %d: gradient %zu is %.9g with bf16 activations, %.9g without", what, s, k,
                         a->grads[k], b->grads[k]);
        o.step = s + 1;
        model_apply_optimizer(a, a->grads, &o);
        model_apply_optimizer(b, b->grads, &o);
    }
    mm_set_precision(MM_FP32);
    if (memcmp(a->params, b->params, a->nparams * sizeof(float)) != 0) fail_msg("%s: the weights differ", what);
}

/* The planned outputs (the layer norms, each read by Linear layers only, and the GELUs, read
 * by mlp.c_proj and their own backward) and the arena they save: half of each, give or
 * take the statistics' alignment; and the outputs in the shared slot (the Linear layers
 * attn.c_proj and mlp.c_proj, each read by the residual add after it alone), all but the
 * largest one's floats; the fused attentions' weights in bf16 triangles beside (the
 * softmax's output then unwritten: test_gpt's arena test). The GELUs' backwards read their
 * outputs rounded either way, the attentions' backwards their weights. */
static void check_plan(const model_t *on, const model_t *off)
{
    assert_true(on->plan->act_bf16_outputs > 0);
    assert_int_equal(off->plan->act_bf16_outputs, 0);
    size_t half = 0, shared = 0, slot = 0, tri = 0;
    int marked = 0, in_slot = 0;
    for (int i = 0; i < on->nlayers; i++) {
        const layer_t *l = &on->layers[i];
        const size_t n = (size_t)on->max_batch * l->OC * l->OH * l->OW;
        assert_int_equal(model_layer_plan(on, i)->act_bf16,
                         l->kind == LAYER_LAYERNORM || l->kind == LAYER_GELU ||
                             model_layer_plan(on, i)->attn == ATTN_RUN || model_layer_plan(on, i)->rounded ||
                             (l->kind == LAYER_LINEAR && l->shape.dims[l->shape.rank - 1] == 3 * G.embd));
        /* mlp.c_fc: read by its GELU alone, rounded whether stored in bf16 or not */
        assert_int_equal(model_layer_plan(on, i)->rounded,
                         l->kind == LAYER_LINEAR && on->layers[i + 1].kind == LAYER_GELU);
        assert_int_equal(model_layer_plan(off, i)->rounded, model_layer_plan(on, i)->rounded);
        assert_int_equal(model_layer_plan(on, i)->saved_bf16, l->kind == LAYER_GELU);
        assert_int_equal(model_layer_plan(off, i)->saved_bf16, l->kind == LAYER_GELU);
        assert_int_equal(model_layer_plan(off, i)->act_shared, 0);
        if (model_layer_plan(on, i)->act_shared) {
            assert_int_equal(l->kind, LAYER_LINEAR);
            assert_int_equal(on->layers[i + 1].kind, LAYER_ADD);
            assert_int_equal(l->out_off, 0);
            in_slot++;
            shared += n;
            slot = n > slot ? n : slot;
        }
        /* a fused attention's merge keeps the weights in bf16 triangles after its output */
        assert_int_equal(model_layer_plan(on, i)->weights_bf16, model_layer_plan(on, i)->attn == ATTN_RUN);
        assert_int_equal(model_layer_plan(off, i)->weights_bf16, 0);
        if (model_layer_plan(on, i)->weights_bf16) {
            const attn_desc_t *a = &model_layer_plan(on, i)->attn_desc;
            tri += model_plan_weights_floats(on, i);
            assert_int_equal(model_plan_weights_floats(on, i), ((size_t)B * a->H * a->T * (a->T + 1) / 2 + 1) / 2);
            assert_true(l->aux_off >= l->out_off + (n + 1) / 2 && l->aux_off <= on->act_floats);
        }
        if (!model_layer_plan(on, i)->act_bf16) continue;
        marked++;
        half += n / 2;
    }
    /* ln_1, attn.c_attn (q, k and v), the fused attention's merge, ln_2, mlp.c_fc and the
     * GELU each block, ln_f */
    assert_int_equal(marked, 6 * G.layers + 1);
    assert_int_equal(in_slot, 2 * G.layers); /* attn.c_proj and mlp.c_proj each block */
    assert_int_equal(tri > 0, 1);
    const size_t saved = half + shared - slot;
    assert_true(on->act_floats + saved >= off->act_floats + tri &&
                on->act_floats + saved <= off->act_floats + tri + (size_t)marked);
}

static void check_path(cpu_isa_t isa)
{
    const cpu_isa_t was = cpu_isa();
    cpu_isa_cap(isa);
    model_t *on = gpt(1, &G), *off = gpt(0, &G);
    check_plan(on, off);
    train_both(on, off, cpu_isa_name(isa));
    /* two threads: each product split by rows as before */
    assert_int_equal(par_set_threads(2), 0);
    train_both(on, off, "two threads");
    assert_int_equal(par_set_threads(1), 0);
    /* a copy runs its source's plan */
    model_t *c = NULL;
    char err[256];
    assert_int_equal(model_clone(on, &c, err, sizeof err), 0);
    assert_int_equal(c->plan->act_bf16_outputs, on->plan->act_bf16_outputs);
    assert_int_equal(c->plan->act_written_floats, on->plan->act_written_floats);
    for (int i = 0; i < on->nlayers; i++) {
        assert_int_equal(model_layer_plan(c, i)->act_bf16, model_layer_plan(on, i)->act_bf16);
        assert_int_equal(model_layer_plan(c, i)->saved_bf16, model_layer_plan(on, i)->saved_bf16);
    }
    memcpy(c->params, off->params, off->nparams * sizeof(float));
    memcpy(c->momentum, off->momentum, off->nparams * sizeof(float));
    assert_int_equal(model_alloc_moment2(c), 0);
    memcpy(c->moment2, off->moment2, off->nparams * sizeof(float));
    train_both(c, off, "a copy");
    model_free(c);
    model_free(on);
    model_free(off);
    cpu_isa_cap(was);
}

static void test_gpt_portable(void **state) { check_path(CPU_ISA_PORTABLE); }
static void test_gpt_avx512_bf16(void **state)
{
    if (!have(CPU_ISA_AVX512_BF16)) skip();
    check_path(CPU_ISA_AVX512_BF16);
}
static void test_gpt_amx(void **state)
{
    if (!have(CPU_ISA_AMX)) skip();
    check_path(CPU_ISA_AMX);
}

/* base with low-rank adapters on every block's qkv and fc products (their weights B
 * nudged off zero), at bf16 products, its layer norms' and GELUs' outputs in bf16 (acts 1) or not */
static model_t *adapted(const model_t *base, int acts, float dropout)
{
    const lora_opts_t o = {.rank = 4,
                           .alpha = 8.0f,
                           .dropout = dropout,
                           .targets = "transformer.h.*.attn.c_attn.weight\ntransformer.h.*.mlp.c_fc.weight"};
    char err[256];
    model_t *m = NULL;
    setenv("PACER_BF16_ACTS", acts ? "1" : "0", 1);
    mm_set_precision(MM_BF16);
    const int rc = model_lora_apply(base, &o, &m, err, sizeof err);
    mm_set_precision(MM_FP32);
    unsetenv("PACER_BF16_ACTS");
    if (rc != 0) fail_msg("%s", err);
    model_lora_init(m, 5);
    for (int t = 0; t < m->ntensors; t++)
        if (model_lora_is_adapter(m, t))
            for (size_t k = 0; k < m->tensors[t].count; k++)
                m->params[m->tensors[t].offset + k] += 0.01f * (float)(k % 7);
    assert_int_equal(model_alloc_moment2(m), 0);
    return m;
}

/* A LoRA-adapted GPT: an adapter's A is one more Linear reading the layer norm's output,
 * which stays bf16 and gives the same bits; with the adapters' dropout a Dropout reads
 * ln_1's and ln_2's outputs, which stay float32 (ln_f's, read by the head alone, and the
 * GELUs' and attention merges', read by the untargeted c_proj layers, not). */
static void test_lora(void **state)
{
    model_t *base = gpt(0, &G);
    model_t *on = adapted(base, 1, 0.0f), *off = adapted(base, 0, 0.0f);
    int marked = 0;
    for (int i = 0; i < on->nlayers; i++) marked += model_layer_plan(on, i)->act_bf16;
    assert_int_equal(marked, 4 * G.layers + 1);
    assert_int_equal(on->plan->act_bf16_outputs, marked);
    train_both(on, off, "lora");
    model_free(on);
    model_free(off);
    model_t *drop = adapted(base, 1, 0.1f);
    marked = 0;
    for (int i = 0; i < drop->nlayers; i++) {
        marked += model_layer_plan(drop, i)->act_bf16;
        assert_true(!model_layer_plan(drop, i)->act_bf16 || drop->layers[i].kind == LAYER_LAYERNORM ||
                    drop->layers[i].kind == LAYER_GELU || model_layer_plan(drop, i)->attn == ATTN_RUN);
    }
    assert_int_equal(marked, 1 + 2 * G.layers);
    assert_int_equal(drop->plan->act_bf16_outputs, 1 + 2 * G.layers);
    model_free(drop);
    model_free(base);
}

/* What keeps float32 outputs: a model built at fp32 products, an untied head (the same
 * plan), and the CUDA backend, which refuses a model with bf16 outputs by name. */
static void test_where_not(void **state)
{
    char err[256];
    model_t *m = NULL;
    mm_set_precision(MM_FP32);
    assert_int_equal(model_create_gpt("gpt", &G, B, &m, err, sizeof err), 0);
    assert_int_equal(m->plan->act_bf16_outputs, 0);
    model_free(m);
    model_gpt_t untied = G;
    untied.tie = 0;
    m = gpt(1, &untied);
    assert_true(m->plan->act_bf16_outputs > 0);
    assert_null(cuda_model_create(m, 0, err, sizeof err));
    assert_non_null(strstr(err, "activations stored in bf16"));
    model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store),
        cmocka_unit_test(test_products_portable),
        cmocka_unit_test(test_products_avx512_bf16),
        cmocka_unit_test(test_products_amx),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_gelu),
        cmocka_unit_test(test_gpt_portable),
        cmocka_unit_test(test_gpt_avx512_bf16),
        cmocka_unit_test(test_gpt_amx),
        cmocka_unit_test(test_lora),
        cmocka_unit_test(test_where_not),
    };
    printf("bf16 activations: this CPU's best path %s (%s)\n", cpu_isa_name(cpu_isa_available()), cpu_isa_why());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
