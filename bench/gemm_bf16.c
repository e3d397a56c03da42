/* bench/gemm_bf16.c - the bf16 products (kernels/cpu/gemm_bf16.h) at a GPT's shapes, one
 * thread, against OpenBLAS's float32 sgemm and, where libdnnl-dev is installed, oneDNN's
 * bf16 matmul (what PyTorch's autocast runs on the CPU: `ONEDNN_VERBOSE=1` names the kernel).
 *
 *   build/bench/gemm_bf16 [--reps 20] [--cpu] [--isa NAME] [--peak] [M,N,K[,tA,tB] ...]
 *
 * Each bf16 path the CPU has is timed, up to PACER_CPU_ISA's cap (cpu_isa.h); --isa NAME
 * times that path alone (portable, avx512_bf16, amx; the others print -), so that runs
 * taking turns between paths see the same load. --cpu times by the calling
 * thread's CPU clock instead of the wall clock, so that other processes taking the core
 * do not count (one thread only: the CPU time of OpenBLAS's or oneDNN's other threads
 * would not be seen). --peak first prints the one-thread ceilings of the two vector
 * instructions the products can run on: vfmadd231ps (16 fp32 multiply-adds) and
 * vdpbf16ps (32 bf16 products summed in pairs), GFLOP/s, each from 16 independent chains
 * of the one instruction on registers (by the thread's CPU clock); the AVX512-BF16 path
 * cannot beat the latter.
 *
 * Each shape is C (M, N) = op(A) (M, K) x op(B) (K, N). pacer's figure includes its packing
 * of both float32 operands into bf16 tiles (what a training step pays per product);
 * oneDNN's takes operands already in bf16 (its conversion is not timed), so the ratio is
 * conservative for pacer. GFLOP/s = 2 M N K over the median of REPS timed calls (after 3
 * untimed ones). ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 keeps oneDNN off AMX (its
 * vdpbf16ps kernels: the yardstick for the AVX512-BF16 path). Run with OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 for one
 * thread (bench/bf16_speed.sh does). Prints one Markdown row a shape. */
#include <cblas.h>
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bf16.h"
#include "cpu_isa.h"
#include "gemm_bf16.h"
#include "median.h"

#ifdef PACER_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec t;
    clock_gettime(clock_id, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

typedef struct {
    int M, N, K, ta, tb;
} shape_t;

typedef void (*call_fn)(const shape_t *s, void *ctx);

/* GFLOP/s of fn over reps timed calls */
static double rate(const shape_t *s, call_fn fn, void *ctx, int reps)
{
    double t[256];
    if (reps > 256) reps = 256;
    for (int i = 0; i < 3; i++) fn(s, ctx);
    for (int i = 0; i < reps; i++) {
        double t0 = now();
        fn(s, ctx);
        t[i] = now() - t0;
    }
    return 2.0 * s->M * s->N * s->K / bench_median(t, reps) / 1e9;
}

typedef struct {
    float *A, *B, *C;
    cpu_isa_t isa;
} operands_t;

static void call_sgemm(const shape_t *s, void *ctx)
{
    operands_t *o = ctx;
    cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, s->M, s->N, s->K,
                1.0f, o->A, s->ta ? s->M : s->K, o->B, s->tb ? s->K : s->N, 0.0f, o->C, s->N);
}

static void call_bf16(const shape_t *s, void *ctx)
{
    operands_t *o = ctx;
    gemm_bf16_on(o->isa, s->ta, s->tb, s->M, s->N, s->K, 1.0f, o->A, s->ta ? s->M : s->K, o->B, s->tb ? s->K : s->N,
                 0.0f, o->C, s->N);
}

#define AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define PEAK_CHAINS 16

/* GFLOP/s of n rounds of PEAK_CHAINS independent vfmadd231ps (32 flops each) */
AVX512BF16 static double peak_fma(long n)
{
    __m512 s[PEAK_CHAINS], x = _mm512_set1_ps(1.0f), y = _mm512_set1_ps(0x1p-30f);
    for (int j = 0; j < PEAK_CHAINS; j++) s[j] = _mm512_setzero_ps();
    double t0 = now();
    for (long i = 0; i < n; i++) {
#pragma GCC unroll 16
        for (int j = 0; j < PEAK_CHAINS; j++) s[j] = _mm512_fmadd_ps(x, y, s[j]);
        __asm__ volatile("" : "+v"(x), "+v"(y)); /* the operands stay unknown: no folding */
    }
    double t = now() - t0;
    volatile float sink = 0.0f;
    for (int j = 0; j < PEAK_CHAINS; j++) sink += _mm512_reduce_add_ps(s[j]);
    (void)sink;
    return 32.0 * PEAK_CHAINS * n / t / 1e9;
}

/* GFLOP/s of n rounds of PEAK_CHAINS independent vdpbf16ps (64 flops each) */
AVX512BF16 static double peak_dpbf16(long n)
{
    __m512 s[PEAK_CHAINS];
    __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80), y = (__m512bh)_mm512_set1_epi32(0x30803080);
    for (int j = 0; j < PEAK_CHAINS; j++) s[j] = _mm512_setzero_ps();
    double t0 = now();
    for (long i = 0; i < n; i++) {
#pragma GCC unroll 16
        for (int j = 0; j < PEAK_CHAINS; j++) s[j] = _mm512_dpbf16_ps(s[j], x, y);
        __asm__ volatile("" : "+v"(x), "+v"(y));
    }
    double t = now() - t0;
    volatile float sink = 0.0f;
    for (int j = 0; j < PEAK_CHAINS; j++) sink += _mm512_reduce_add_ps(s[j]);
    (void)sink;
    return 64.0 * PEAK_CHAINS * n / t / 1e9;
}

/* The ceilings, by the thread's CPU clock whatever --cpu says (the loops touch no memory:
 * another process taking the core stops them, it does not slow them), best of 5 tries of
 * about 0.1 s each */
static void print_peaks(void)
{
    const clockid_t was = clock_id;
    clock_id = CLOCK_THREAD_CPUTIME_ID;
    if (cpu_isa_available() < CPU_ISA_AVX512_BF16) {
        printf("peak: this CPU has no AVX512-BF16 (%s)\n", cpu_isa_why());
        return;
    }
    double fma = 0.0, dp = 0.0;
    for (int i = 0; i < 5; i++) {
        double f = peak_fma(1000000), d = peak_dpbf16(1000000);
        fma = f > fma ? f : fma;
        dp = d > dp ? d : dp;
    }
    printf("peak, one thread: vfmadd231ps %.0f GFLOP/s, vdpbf16ps %.0f GFLOP/s (%.2fx)\n", fma, dp, dp / fma);
    clock_id = was;
}

#ifdef PACER_WITH_DNNL
typedef struct {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
} onednn_t;

/* oneDNN's matmul of bf16 operands (A, B in the shape's transpositions as strides) into f32 */
static int onednn_setup(onednn_t *d, const shape_t *s, const operands_t *o, uint16_t *a16, uint16_t *b16)
{
    dnnl_memory_desc_t amd, bmd, cmd;
    dnnl_dims_t ad = {s->M, s->K}, bd = {s->K, s->N}, cd = {s->M, s->N};
    dnnl_dims_t as = {s->ta ? 1 : s->K, s->ta ? s->M : 1}, bs = {s->tb ? 1 : s->N, s->tb ? s->K : 1};
    if (dnnl_engine_create(&d->eng, dnnl_cpu, 0) != dnnl_success) return -1;
    dnnl_memory_desc_init_by_strides(&amd, 2, ad, dnnl_bf16, as);
    dnnl_memory_desc_init_by_strides(&bmd, 2, bd, dnnl_bf16, bs);
    dnnl_memory_desc_init_by_tag(&cmd, 2, cd, dnnl_f32, dnnl_ab);
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd;
    if (dnnl_matmul_desc_init(&md, &amd, &bmd, NULL, &cmd) != dnnl_success) return -1;
    if (dnnl_primitive_desc_create(&pd, &md, NULL, d->eng, NULL) != dnnl_success) return -1;
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    fprintf(stderr, "oneDNN %dx%dx%d: %s\n", s->M, s->N, s->K, impl ? impl : "?");
    if (dnnl_primitive_create(&d->prim, pd) != dnnl_success) return -1;
    dnnl_primitive_desc_destroy(pd);
    dnnl_memory_create(&d->a, &amd, d->eng, a16);
    dnnl_memory_create(&d->b, &bmd, d->eng, b16);
    dnnl_memory_create(&d->c, &cmd, d->eng, o->C);
    dnnl_stream_create(&d->stream, d->eng, dnnl_stream_default_flags);
    return 0;
}

static void call_onednn(const shape_t *s, void *ctx)
{
    onednn_t *d = ctx;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, d->a}, {DNNL_ARG_WEIGHTS, d->b}, {DNNL_ARG_DST, d->c}};
    dnnl_primitive_execute(d->prim, d->stream, 3, args);
    dnnl_stream_wait(d->stream);
}

static double onednn_rate(const shape_t *s, const operands_t *o, int reps)
{
    size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N;
    uint16_t *a16 = malloc(na * 2), *b16 = malloc(nb * 2);
    for (size_t i = 0; i < na; i++) a16[i] = bf16_from_float(o->A[i]);
    for (size_t i = 0; i < nb; i++) b16[i] = bf16_from_float(o->B[i]);
    onednn_t d;
    double r = onednn_setup(&d, s, o, a16, b16) == 0 ? rate(s, call_onednn, &d, reps) : 0.0;
    free(a16);
    free(b16);
    return r;
}
#endif

int main(int argc, char **argv)
{
    int reps = 20, n = 0, only = -1, peak = 0;
    shape_t shapes[32];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--cpu") == 0) clock_id = CLOCK_THREAD_CPUTIME_ID;
        else if (strcmp(argv[i], "--peak") == 0) peak = 1;
        else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
            cpu_isa_t isa;
            if (cpu_isa_parse(argv[++i], &isa) != 0) {
                fprintf(stderr, "gemm_bf16: --isa is portable, avx512_bf16 or amx, not %s\n", argv[i]);
                return 2;
            }
            if (isa > cpu_isa()) {
                fprintf(stderr, "gemm_bf16: --isa %s: %s\n", argv[i], cpu_isa_why());
                return 2;
            }
            only = (int)isa;
        } else if (n < 32) {
            shape_t s = {0};
            if (sscanf(argv[i], "%d,%d,%d,%d,%d", &s.M, &s.N, &s.K, &s.ta, &s.tb) < 3 || s.M < 1 || s.N < 1 || s.K < 1) {
                fprintf(stderr, "gemm_bf16: a shape is M,N,K[,transA,transB]: %s\n", argv[i]);
                return 2;
            }
            shapes[n++] = s;
        }
    }
    if (n == 0) {
        /* nanoGPT's CPU shape (768 rows: 12 x 64 tokens, width 128): the MLP's forward, its
         * input and weight gradients; GPT-2 124M's width 768 at 4 x 64 tokens */
        const shape_t def[] = {{768, 512, 128, 0, 1},  {768, 128, 512, 0, 0},  {512, 128, 768, 1, 0},
                               {256, 3072, 768, 0, 1}, {256, 768, 3072, 0, 0}, {3072, 768, 256, 1, 0},
                               {2048, 384, 128, 0, 1}, {2048, 3072, 768, 0, 1}};
        n = (int)(sizeof def / sizeof def[0]);
        memcpy(shapes, def, sizeof def);
    }
    if (reps < 1) reps = 1;
    if (peak) print_peaks();
    printf(
        "| M x N x K (tA, tB) | OpenBLAS fp32 | portable bf16 | avx512_bf16 | amx | oneDNN bf16 | pacer best / oneDNN |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        const shape_t *s = &shapes[i];
        size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N;
        operands_t o = {malloc(na * 4), malloc(nb * 4), malloc((size_t)s->M * s->N * 4), CPU_ISA_PORTABLE};
        for (size_t k = 0; k < na; k++) o.A[k] = (float)((k * 7919 % 1000) / 500.0 - 1.0);
        for (size_t k = 0; k < nb; k++) o.B[k] = (float)((k * 104729 % 1000) / 500.0 - 1.0);
        double fp32 = rate(s, call_sgemm, &o, reps), best = 0.0, path[CPU_ISA_N] = {0};
        for (int isa = 0; isa <= (int)cpu_isa(); isa++) {
            if (only >= 0 && isa != only) continue;
            o.isa = (cpu_isa_t)isa;
            path[isa] = rate(s, call_bf16, &o, reps);
            if (path[isa] > best) best = path[isa];
        }
        double dnnl = 0.0;
#ifdef PACER_WITH_DNNL
        dnnl = onednn_rate(s, &o, reps);
#endif
        char cells[CPU_ISA_N][32], dcell[32], rcell[32];
        for (int isa = 0; isa < CPU_ISA_N; isa++)
            snprintf(cells[isa], sizeof cells[isa], path[isa] > 0 ? "%.0f" : "-", path[isa]);
        snprintf(dcell, sizeof dcell, dnnl > 0 ? "%.0f" : "not built", dnnl);
        snprintf(rcell, sizeof rcell, dnnl > 0 ? "%.2f" : "-", best / dnnl);
        printf("| %d x %d x %d (%d, %d) | %.0f | %s | %s | %s | %s | %s |\n", s->M, s->N, s->K, s->ta, s->tb, fp32,
               cells[0], cells[1], cells[2], dcell, rcell);
        free(o.A);
        free(o.B);
        free(o.C);
    }
    printf("GFLOP/s, median of %d calls each (%s clock), one thread; pacer's include packing its float32 operands\n",
           reps, clock_id == CLOCK_MONOTONIC ? "wall" : "the thread's CPU");
    return 0;
}
