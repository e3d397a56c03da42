/* tests/unit/test_gpt.c - the built-in language model (model/gpt.h) and its kernels: the
 * embedding and the causal softmax against their double references (kernels/ref/seq.c),
 * the causal softmax's backward against finite differences, and a tiny GPT whose every
 * parameter's gradient (the tied embedding's two paths summed) matches central differences
 * of its loss, whose logits at a position do not depend on later tokens, and whose refusals
 * name the field. The comparison with torch from the same weights is
 * tests/integration/gpt_torch.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"
#include "matmul.h"
#include "model.h"
#include "parallel.h"
#include "plan.h"
#include "ops.h"
#include "ref.h"
#include "rng.h"

static double max_rel(const float *a, const double *b, size_t n)
{
    double e = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs(b[i]));
    }
    return s > 0 ? e / s : e;
}

/* Ids with repeats and one outside the table (reads zeros, gets no gradient). */
static void test_embed_kernels(void **state)
{
    enum { V = 7, E = 5, R = 12 };
    rng_t r;
    rng_seed(&r, 3);
    float table[V * E], ids[R], out[R * E], dout[R * E], dt[V * E];
    double dtable[V * E], did[R], want[R * E], wdt[V * E];
    for (int k = 0; k < V * E; k++) dtable[k] = table[k] = rng_normal(&r);
    for (int k = 0; k < R; k++) did[k] = ids[k] = (float)(k == 4 ? V : (int)rng_below(&r, V));
    for (int k = 0; k < R * E; k++) dout[k] = rng_normal(&r);
    embed_forward(R, V, E, ids, table, out);
    ref_embed_forward(R, V, E, did, dtable, want);
    assert_true(max_rel(out, want, R * E) == 0.0);
    for (int e = 0; e < E; e++) assert_true(out[4 * E + e] == 0.0f);
    /* the gradient: each row's sum of the outputs that read it */
    memset(wdt, 0, sizeof wdt);
    for (int k = 0; k < R; k++)
        if (k != 4)
            for (int e = 0; e < E; e++) wdt[(int)ids[k] * E + e] += dout[k * E + e];
    for (int k = 0; k < V * E; k++) dt[k] = 100.0f; /* overwritten */
    embed_backward(R, V, E, ids, dout, dt, 0);
    assert_true(max_rel(dt, wdt, V * E) < 1e-6);
    /* add: onto what a tied reader wrote first */
    for (int k = 0; k < V * E; k++) dt[k] = 1.0f, wdt[k] += 1.0;
    embed_backward(R, V, E, ids, dout, dt, 1);
    assert_true(max_rel(dt, wdt, V * E) < 1e-6);
}

/* f = sum(g * ref(x)): its central differences against the backward's input gradient */
static void test_causal_softmax(void **state)
{
    enum { M = 3, T = 5, N = M * T * T };
    const double scale = 0.7;
    rng_t r;
    rng_seed(&r, 5);
    float x[N], y[N], g[N], dx[N], dxs[N];
    double xd[N], yd[N], fd[N], yp[N], ym[N];
    for (int k = 0; k < N; k++) xd[k] = x[k] = rng_normal(&r), g[k] = rng_normal(&r);
    causal_softmax_forward(M, T, (float)scale, x, y);
    ref_causal_softmax(M, T, scale, xd, yd);
    printf("  causal softmax forward max_rel %.2e (tol 1e-6)\n", max_rel(y, yd, N));
    assert_true(max_rel(y, yd, N) < 1e-6);
    for (int m = 0; m < M; m++)
        for (int i = 0; i < T; i++)
            for (int j = i + 1; j < T; j++) assert_true(y[(m * T + i) * T + j] == 0.0f);
    for (int k = 0; k < N; k++) {
        const double h = 1e-5, keep = xd[k];
        xd[k] = keep + h;
        ref_causal_softmax(M, T, scale, xd, yp);
        xd[k] = keep - h;
        ref_causal_softmax(M, T, scale, xd, ym);
        xd[k] = keep;
        double s = 0;
        for (int q = 0; q < N; q++) s += g[q] * (yp[q] - ym[q]);
        fd[k] = s / (2 * h);
    }
    for (int k = 0; k < N; k++) dx[k] = 0.5f, dxs[k] = 99.0f;
    causal_softmax_backward(M, T, (float)scale, y, g, dx, 0);
    causal_softmax_backward(M, T, (float)scale, y, g, dxs, 1);
    for (int k = 0; k < N; k++) dx[k] -= 0.5f;
    printf("  causal softmax backward against finite differences: add %.2e, set %.2e (tol 1e-5)\n", max_rel(dx, fd, N),
           max_rel(dxs, fd, N));
    assert_true(max_rel(dx, fd, N) < 1e-5);
    assert_true(max_rel(dxs, fd, N) < 1e-5);
}

/* Rows long enough for the kernels' eight lanes and their tails (T 37 and nanoGPT's 64, the
 * row i reads i + 1 positions): the forward against the double reference, the backward
 * (set and add) against its formula in double on the reference's output,
 * scale y_j (g_j - sum_k y_k g_k), with the masked half untouched by the add. */
static void causal_long_case(int M, int T)
{
    const size_t N = (size_t)M * T * T;
    const double scale = 0.17677669529663687; /* 1 / sqrt(32): nanoGPT's heads */
    rng_t r;
    rng_seed(&r, 7 + (uint64_t)T);
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *g = malloc(N * sizeof *g);
    float *dx = malloc(N * sizeof *dx), *dxs = malloc(N * sizeof *dxs);
    double *xd = malloc(N * sizeof *xd), *yd = malloc(N * sizeof *yd), *dd = malloc(N * sizeof *dd);
    assert_non_null(x), assert_non_null(y), assert_non_null(g), assert_non_null(dx), assert_non_null(dxs);
    assert_non_null(xd), assert_non_null(yd), assert_non_null(dd);
    for (size_t k = 0; k < N; k++) xd[k] = x[k] = 4.0f * rng_normal(&r), g[k] = rng_normal(&r);
    causal_softmax_forward((size_t)M, T, (float)scale, x, y);
    ref_causal_softmax((size_t)M, T, scale, xd, yd);
    printf("  causal softmax forward, T %d: max_rel %.2e (tol 1e-6)\n", T, max_rel(y, yd, N));
    assert_true(max_rel(y, yd, N) < 1e-6);
    for (int m = 0; m < M; m++)
        for (int i = 0; i < T; i++) {
            const size_t row = ((size_t)m * T + i) * T;
            double dot = 0;
            for (int j = 0; j <= i; j++) dot += yd[row + j] * g[row + j];
            for (int j = 0; j < T; j++) dd[row + j] = j <= i ? scale * yd[row + j] * (g[row + j] - dot) : 0.0;
        }
    for (size_t k = 0; k < N; k++) dx[k] = 0.5f, dxs[k] = 99.0f;
    causal_softmax_backward((size_t)M, T, (float)scale, y, g, dx, 0);
    causal_softmax_backward((size_t)M, T, (float)scale, y, g, dxs, 1);
    for (size_t k = 0; k < N; k++) dx[k] -= 0.5f;
    printf("  causal softmax backward, T %d: add %.2e, set %.2e (tol 1e-5)\n", T, max_rel(dx, dd, N),
           max_rel(dxs, dd, N));
    assert_true(max_rel(dx, dd, N) < 1e-5);
    assert_true(max_rel(dxs, dd, N) < 1e-5);
    free(x), free(y), free(g), free(dx), free(dxs), free(xd), free(yd), free(dd);
}

/* causal_softmax_forward (explicit AVX-512 or AVX2 where the CPU has them), and each of the
 * two paths the CPU has, against the lanes that gcc vectorises, bit for bit: rows of every
 * length mod 16 and mod 8, scores that overflow and underflow
 * the exponential, an infinity and a NaN, and last 24 matrices of scores of a trained
 * GPT's spread, whose sums take many terms each, so that another order of the sums shows
 * (the first cases alone passed one that folded the lanes pairwise). causal_softmax_rows
 * (generation's new positions) gives the rows it is asked for with the same bits, in
 * pieces of 1 to 5 rows, and writes no other row. */
static void test_causal_softmax_lanes(void **state)
{
    (void)state;
    static const int Ts[] = {1, 5, 8, 13, 16, 24, 37, 64, 64};
    for (size_t t = 0; t < sizeof Ts / sizeof Ts[0]; t++) {
        const int T = Ts[t], M = t + 1 < sizeof Ts / sizeof Ts[0] ? 3 : 24;
        const size_t N = (size_t)M * T * T;
        rng_t r;
        rng_seed(&r, 11 + (uint64_t)T + t);
        float *x = malloc(N * sizeof *x), *y1 = malloc(N * sizeof *y1), *y2 = malloc(N * sizeof *y2);
        assert_true(x && y1 && y2);
        for (size_t k = 0; k < N; k++) x[k] = (M == 24 ? 4.0f : k % 7 == 3 ? 300.0f : 8.0f) * rng_normal(&r);
        x[N / 2] = INFINITY;
        x[N - 1] = NAN;
        for (size_t k = 0; k < N; k++) y1[k] = NAN, y2[k] = -1.0f;
        causal_softmax_forward_width(0, (size_t)M, T, 0.17677669529663687f, x, y1);
        for (int lanes = 8; lanes <= 16; lanes += 8) {
            for (size_t k = 0; k < N; k++) y2[k] = -1.0f;
            causal_softmax_forward_width(lanes, (size_t)M, T, 0.17677669529663687f, x, y2);
            assert_memory_equal(y1, y2, N * sizeof *y1);
        }
        for (size_t k = 0; k < N; k++) y2[k] = -1.0f;
        causal_softmax_forward((size_t)M, T, 0.17677669529663687f, x, y2);
        assert_memory_equal(y1, y2, N * sizeof *y1);
        const size_t last = (size_t)(M - 1) * T * T; /* the last matrix, row by row pieces */
        for (size_t k = 0; k < N; k++) y2[k] = -1.0f;
        for (int r0 = 0, piece = 1; r0 < T; r0 += piece, piece = piece % 5 + 1) {
            const int r1 = r0 + piece < T ? r0 + piece : T;
            causal_softmax_rows(T, r0, r1, 0.17677669529663687f, x + last, y2 + last);
            assert_memory_equal(y1 + last, y2 + last, (size_t)r1 * T * sizeof *y1);
            for (size_t k = last + (size_t)r1 * T; k < N; k++) assert_true(y2[k] == -1.0f);
        }
        free(x), free(y1), free(y2);
    }
}

static void test_causal_softmax_long(void **state)
{
    causal_long_case(3, 37);
    causal_long_case(2, 64);
}

/* Whether a and b hold the same bits at the n floats from each */
static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

/* A float's copy of n doubles */
static float *floats_of(const double *d, size_t n)
{
    float *f = malloc(n * sizeof *f);
    assert_non_null(f);
    for (size_t k = 0; k < n; k++) f[k] = (float)d[k];
    return f;
}

/* Attention's products under the causal mask (ops.h's bmm_causal_t), G matrices of T x T
 * and T x D. The scores Q K^T (BMM_CAUSAL_OUT): the lower triangle the whole product's
 * bits (the rest unread), the backward from a gradient zero above the diagonal (what the
 * causal softmax's backward writes) the whole backward's bits, set and added. The weights'
 * product P V (BMM_CAUSAL_LEFT, P zero above the diagonal): the forward and dV the whole
 * product's bits, dP's lower triangle too. The whole products against the double
 * reference (ref_bmm_forward) within 1e-5 of the largest output. */
static void causal_bmm_case(int G, int T, int D)
{
    const size_t nq = (size_t)G * T * D, ns = (size_t)G * T * T;
    rng_t r;
    rng_seed(&r, 100 + (uint64_t)T);
    double *qd = malloc(nq * sizeof *qd), *kd = malloc(nq * sizeof *kd), *pd = malloc(ns * sizeof *pd);
    double *gs = malloc(ns * sizeof *gs), *gy = malloc(nq * sizeof *gy), *want = malloc(ns * sizeof *want);
    assert_non_null(qd), assert_non_null(kd), assert_non_null(pd), assert_non_null(gs), assert_non_null(gy);
    assert_non_null(want);
    for (size_t k = 0; k < nq; k++) qd[k] = rng_normal(&r), kd[k] = rng_normal(&r), gy[k] = rng_normal(&r);
    for (int g = 0; g < G; g++)
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                const size_t e = ((size_t)g * T + i) * T + j;
                pd[e] = j <= i ? fabs(rng_normal(&r)) / (i + 1) : 0.0; /* lower triangular, like weights */
                gs[e] = j <= i ? rng_normal(&r) : 0.0;                 /* the causal softmax's dS */
            }
    float *q = floats_of(qd, nq), *k = floats_of(kd, nq), *p = floats_of(pd, ns), *ds = floats_of(gs, ns);
    float *dy = floats_of(gy, nq);
    float *full = malloc(ns * sizeof *full), *part = malloc(ns * sizeof *part);
    float *fa = malloc(ns * sizeof *fa), *fb = malloc(ns * sizeof *fb), *ca = malloc(ns * sizeof *ca),
          *cb = malloc(ns * sizeof *cb);
    assert_non_null(full), assert_non_null(part), assert_non_null(fa), assert_non_null(fb), assert_non_null(ca);
    assert_non_null(cb);
    /* the scores: k stands for K^T (G, D, T) */
    ref_bmm_forward(G, T, D, T, qd, kd, want);
    bmm_forward(G, T, D, T, q, k, full);
    for (size_t e = 0; e < ns; e++) part[e] = NAN;
    bmm_forward_causal(BMM_CAUSAL_OUT, G, T, D, T, q, k, part);
    printf("  causal bmm %d x %dx%d scores: whole product max_rel %.2e (tol 1e-5)\n", G, T, D, max_rel(full, want, ns));
    assert_true(max_rel(full, want, ns) < 1e-5);
    for (int g = 0; g < G; g++)
        for (int i = 0; i < T; i++) {
            const size_t row = ((size_t)g * T + i) * T;
            assert_true(same_bits(full + row, part + row, (size_t)i + 1));
        }
    for (int set = 1; set >= 0; set--) {
        for (size_t e = 0; e < nq; e++) fa[e] = ca[e] = set ? NAN : 0.25f, fb[e] = cb[e] = set ? NAN : -0.5f;
        bmm_backward_set(G, T, D, T, q, k, ds, fa, set, fb, set);
        bmm_backward_causal(BMM_CAUSAL_OUT, G, T, D, T, q, k, ds, ca, set, cb, set);
        assert_true(same_bits(fa, ca, nq));
        assert_true(same_bits(fb, cb, nq));
    }
    /* the weights' product: P (G, T, T) by V (G, T, D); k stands for V */
    ref_bmm_forward(G, T, T, D, pd, kd, want);
    bmm_forward(G, T, T, D, p, k, full);
    bmm_forward_causal(BMM_CAUSAL_LEFT, G, T, T, D, p, k, part);
    printf("  causal bmm %d x %dx%d weights: whole product max_rel %.2e (tol 1e-5)\n", G, T, D, max_rel(full, want, nq));
    assert_true(max_rel(full, want, nq) < 1e-5);
    assert_true(same_bits(full, part, nq));
    for (int set = 1; set >= 0; set--) {
        for (size_t e = 0; e < ns; e++) fa[e] = ca[e] = set ? NAN : 0.25f;
        for (size_t e = 0; e < nq; e++) fb[e] = cb[e] = set ? NAN : -0.5f;
        bmm_backward_set(G, T, T, D, p, k, dy, fa, set, fb, set);
        bmm_backward_causal(BMM_CAUSAL_LEFT, G, T, T, D, p, k, dy, ca, set, cb, set);
        for (int g = 0; g < G; g++)
            for (int i = 0; i < T; i++) {
                const size_t row = ((size_t)g * T + i) * T;
                assert_true(same_bits(fa + row, ca + row, (size_t)i + 1));
            }
        assert_true(same_bits(fb, cb, nq));
    }
    free(qd), free(kd), free(pd), free(gs), free(gy), free(want), free(q), free(k), free(p), free(ds), free(dy);
    free(full), free(part), free(fa), free(fb), free(ca), free(cb);
}

static void test_causal_bmm(void **state)
{
    causal_bmm_case(3, 37, 8);
    causal_bmm_case(2, 64, 32); /* nanoGPT's heads */
    causal_bmm_case(2, 5, 3);   /* one tile */
}

static const model_gpt_t TINY = {
    .layers = 2, .heads = 2, .embd = 8, .block = 6, .vocab = 13, .dropout = 0.0f, .bias = 1, .tie = 1};

static model_t *tiny(const model_gpt_t *g, int B)
{
    char err[256];
    model_t *m = NULL;
    if (model_create_gpt("gpt", g, B, &m, err, sizeof err) != 0) fail_msg("%s", err);
    model_gpt_init(m, g->layers, 11);
    return m;
}

static void random_tokens(rng_t *r, int n, int V, float *x, int32_t *y)
{
    for (int k = 0; k < n; k++) {
        x[k] = (float)rng_below(r, (uint32_t)V);
        y[k] = (int32_t)rng_below(r, (uint32_t)V);
    }
}

/* Every parameter tensor's gradient (four elements of each) against central differences
 * of the mean loss over every position. At h = 1e-3 a float loss near log(13) (about 3e-7
 * of rounding) gives quotients within 1.5e-4 of rounding, and the truncation, O(h^2), was
 * measured below 1e-4 (it falls 10x from h = 3e-3 to 1e-3, as it must): 1e-3 + 2% of the
 * quotient bounds both with room. */
static void check_grads(const model_gpt_t *g)
{
    enum { B = 2 };
    model_t *m = tiny(g, B);
    assert_int_equal(m->positions, g->block);
    rng_t r;
    rng_seed(&r, 17);
    float x[B * 64];
    int32_t y[B * 64];
    random_tokens(&r, B * g->block, g->vocab, x, y);
    model_forward(m, x, y, B, 1);
    /* every forward below draws the dropout masks of this one (the step counter set back) */
    const uint64_t step = m->dropout_step;
    model_backward(m, x, y, B, 1.0f);
    float *grads = malloc(m->nparams * sizeof *grads);
    assert_non_null(grads);
    memcpy(grads, m->grads, m->nparams * sizeof *grads);
    double worst = 0;
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *ti = &m->tensors[t];
        for (size_t q = 0; q < 4 && q < ti->count; q++) {
            const size_t k = ti->offset + (q * 7919) % ti->count;
            const float keep = m->params[k], h = 1e-3f;
            m->params[k] = keep + h;
            m->dropout_step = step - 1;
            const double lp = model_forward(m, x, y, B, 1);
            m->params[k] = keep - h;
            m->dropout_step = step - 1;
            const double lm = model_forward(m, x, y, B, 1);
            m->params[k] = keep;
            const double fd = (lp - lm) / (2.0 * h), err = fabs(fd - grads[k]);
            if (err > 1e-3 + 0.02 * fabs(fd))
                fail_msg("%s[%zu]: gradient %.6g, finite differences %.6g", ti->name, k - ti->offset, grads[k], fd);
            worst = fmax(worst, err);
        }
    }
    printf("  gpt %dx%d (tie %d, bias %d, dropout %.1f): %d tensors, largest gradient error %.2e\n", g->layers, g->embd,
           g->tie, g->bias, g->dropout, m->ntensors, worst);
    free(grads);
    model_free(m);
}

static void test_gpt_gradients(void **state)
{
    check_grads(&TINY);
    model_gpt_t untied = TINY;
    untied.tie = 0;
    untied.bias = 0;
    check_grads(&untied);
    /* dropout after the embeddings, on the attention weights and on each branch: the
     * backward through the forward's masks */
    model_gpt_t dropped = TINY;
    dropped.dropout = 0.1f;
    check_grads(&dropped);
}

/* The tied model has no head tensor of its own; the untied one has lm_head.weight. */
static void test_gpt_tied(void **state)
{
    model_t *a = tiny(&TINY, 1);
    model_gpt_t u = TINY;
    u.tie = 0;
    model_t *b = tiny(&u, 1);
    assert_int_equal(b->nparams - a->nparams, (size_t)TINY.vocab * TINY.embd);
    int head = 0;
    for (int t = 0; t < b->ntensors; t++) head += strcmp(b->tensors[t].name, "lm_head.weight") == 0;
    assert_int_equal(head, 1);
    model_free(a);
    model_free(b);
}

/* Causality: a changed token at position t changes no logit before t, and changes t's. */
static void test_gpt_causal(void **state)
{
    model_t *m = tiny(&TINY, 1);
    const int T = TINY.block, V = TINY.vocab;
    float x[8];
    int32_t y[8] = {0};
    for (int k = 0; k < T; k++) x[k] = (float)(k % V);
    model_forward(m, x, y, 1, 0);
    float *before = malloc((size_t)T * V * sizeof *before);
    memcpy(before, model_logits(m), (size_t)T * V * sizeof *before);
    const int t = 3;
    x[t] = (float)((int)x[t] + 5);
    model_forward(m, x, y, 1, 0);
    const float *after = model_logits(m);
    for (int k = 0; k < t * V; k++) assert_true(after[k] == before[k]);
    int changed = 0;
    for (int k = t * V; k < (t + 1) * V; k++) changed += after[k] != before[k];
    assert_true(changed > 0);
    free(before);
    model_free(m);
}

static void test_gpt_refusals(void **state)
{
    static const struct {
        model_gpt_t g;
        const char *field;
    } bad[] = {
        {{.layers = 0, .heads = 2, .embd = 8, .block = 4, .vocab = 5}, "model.gpt.layers"},
        {{.layers = 1, .heads = 3, .embd = 8, .block = 4, .vocab = 5}, "model.gpt.embd"},
        {{.layers = 1, .heads = 2, .embd = 8, .block = 0, .vocab = 5}, "model.gpt.block_size"},
        {{.layers = 1, .heads = 2, .embd = 8, .block = 4, .vocab = 0}, "model.gpt.vocab_size"},
        {{.layers = 1, .heads = 2, .embd = 8, .block = 4, .vocab = 5, .dropout = 1.0f}, "model.gpt.dropout"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[512] = "";
        model_t *m = (model_t *)1;
        assert_int_equal(model_create_gpt("gpt", &bad[i].g, 2, &m, err, sizeof err), -1);
        assert_null(m);
        if (!strstr(err, bad[i].field)) fail_msg("refusal '%s' does not name %s", err, bad[i].field);
    }
}

/* model_create marks each block's scores (BMM_CAUSAL_OUT) and weights' product
 * (BMM_CAUSAL_LEFT; with dropout on the weights its left input is the dropout's, so not
 * marked), and the loss and every gradient are those of the whole products bit for bit
 * (the marks cleared), at 37 positions (several tiles of the kernels). */
static void causal_model_case(float dropout)
{
    enum { B = 2 };
    const model_gpt_t g = {
        .layers = 2, .heads = 2, .embd = 16, .block = 37, .vocab = 13, .dropout = dropout, .bias = 1, .tie = 1};
    model_t *m = tiny(&g, B);
    int outs = 0, lefts = 0;
    for (int j = 0; j < m->nlayers; j++) {
        outs += m->plan->layers[j].causal_bmm == BMM_CAUSAL_OUT;
        lefts += m->plan->layers[j].causal_bmm == BMM_CAUSAL_LEFT;
    }
    assert_int_equal(outs, g.layers);
    assert_int_equal(lefts, dropout > 0.0f ? 0 : g.layers);
    rng_t r;
    rng_seed(&r, 23);
    float x[B * 37];
    int32_t y[B * 37];
    random_tokens(&r, B * g.block, g.vocab, x, y);
    const uint64_t step = m->dropout_step;
    const float loss = model_forward(m, x, y, B, 1);
    model_backward(m, x, y, B, 1.0f);
    float *grads = malloc(m->nparams * sizeof *grads);
    assert_non_null(grads);
    memcpy(grads, m->grads, m->nparams * sizeof *grads);
    for (int j = 0; j < m->nlayers; j++) m->plan->layers[j].causal_bmm = BMM_CAUSAL_NONE;
    m->dropout_step = step;
    const float whole = model_forward(m, x, y, B, 1);
    model_backward(m, x, y, B, 1.0f);
    assert_true(memcmp(&loss, &whole, sizeof loss) == 0);
    assert_true(same_bits(grads, m->grads, m->nparams));
    free(grads);
    model_free(m);
}

static void test_gpt_causal_bmm(void **state)
{
    causal_model_case(0.0f);
    causal_model_case(0.1f);
}

/* The activation gradients' arena planned by liveness (the plan's dact_off): smaller than
 * one slot per layer for a GPT, no two gradients sharing a float while both live (from
 * their last reader's backward down to their own), and the same gradients bit for bit as
 * one private slot per layer (the forward's offsets), the dropout included. */
static void test_gpt_dact_plan(void **state)
{
    (void)state;
    enum { B = 2 };
    model_gpt_t g = TINY;
    g.dropout = 0.1f;
    model_t *m = tiny(&g, B);
    const int n = m->nlayers;
    printf("  gradient arena %zu floats, one slot per layer %zu\n", m->plan->dact_floats, m->act_floats);
    assert_true(m->plan->dact_floats < m->act_floats);
    int shared = 0;
    for (int i = 0; i < n; i++) {
        const size_t ni = (size_t)B * m->layers[i].OC * m->layers[i].OH * m->layers[i].OW;
        assert_true(m->plan->dact_off[i] + ni <= m->plan->dact_floats);
        for (int j = i + 1; j < n; j++) {
            const size_t nj = (size_t)B * m->layers[j].OC * m->layers[j].OH * m->layers[j].OW;
            if (m->plan->dact_off[i] + ni <= m->plan->dact_off[j] || m->plan->dact_off[j] + nj <= m->plan->dact_off[i])
                continue;
            shared++;
            /* j > i: i's life [i, first_i] must end after j's [j, first_j] begins below it */
            if (!(m->plan->dact_first[i] < j)) fail_msg("layers %d and %d share gradient memory while both live", i, j);
        }
    }
    assert_true(shared > 0);

    rng_t r;
    rng_seed(&r, 5);
    float x[B * 6];
    int32_t y[B * 6];
    random_tokens(&r, B * g.block, g.vocab, x, y);
    const uint64_t step = m->dropout_step;
    const float loss = model_forward(m, x, y, B, 1);
    model_backward(m, x, y, B, 1.0f);
    float *g1 = malloc(m->nparams * sizeof(float)), *own = malloc(m->act_floats * sizeof(float));
    assert_true(g1 && own);
    memcpy(g1, m->grads, m->nparams * sizeof(float));
    /* the same step (the same dropout masks) with one slot per layer */
    float *planned = m->dacts;
    size_t *offs = malloc((size_t)n * sizeof *offs);
    assert_non_null(offs);
    memcpy(offs, m->plan->dact_off, (size_t)n * sizeof *offs);
    for (int i = 0; i < n; i++) m->plan->dact_off[i] = m->layers[i].out_off;
    for (size_t k = 0; k < m->act_floats; k++) own[k] = NAN;
    m->dacts = own;
    m->dropout_step = step;
    assert_true(model_forward(m, x, y, B, 1) == loss);
    model_backward(m, x, y, B, 1.0f);
    assert_memory_equal(g1, m->grads, m->nparams * sizeof(float));
    m->dacts = planned;
    memcpy(m->plan->dact_off, offs, (size_t)n * sizeof *offs);
    free(offs);
    free(own);
    free(g1);
    model_free(m);
}

/* One training step's loss, logits and parameter gradients of m, its view chains as marked or
 * (plain) every layer run by itself; the same dropout masks either way. */
static float chain_step(model_t *m, int plain, const float *x, const int32_t *y, int B, float *logits, float *grads)
{
    int saved[512];
    assert_true(m->nlayers <= 512);
    for (int i = 0; i < m->nlayers; i++) {
        saved[i] = m->plan->layers[i].chain;
        if (plain) m->plan->layers[i].chain = VIEW_CHAIN_NONE;
    }
    /* a fused attention reads its heads through the chains' walks: plain runs its layers */
    m->attention_unfused = plain;
    const uint64_t step = m->dropout_step;
    const float loss = model_forward(m, x, y, B, 1);
    model_backward(m, x, y, B, 1.0f);
    m->dropout_step = step;
    memcpy(logits, model_logits(m), (size_t)B * m->positions * m->num_classes * sizeof(float));
    memcpy(grads, m->grads, m->nparams * sizeof(float));
    for (int i = 0; i < m->nlayers; i++) m->plan->layers[i].chain = saved[i];
    m->attention_unfused = 0;
    return loss;
}

/* The view chains (the plan's chain): each block's q, k and v head splits (Slice, Reshape,
 * Transpose) and its attention output (Transpose, Reshape) copy in one walk from the
 * projection or the product, and the step gives the loss, the logits and the parameter
 * gradients of every layer run by itself, bit for bit (copies, and gradients set as g + 0). */
static void test_gpt_view_chains(void **state)
{
    (void)state;
    enum { B = 3 };
    model_gpt_t g = TINY;
    g.dropout = 0.1f;
    model_t *m = tiny(&g, B);
    int run = 0, skip = 0;
    for (int i = 0; i < m->nlayers; i++) {
        run += m->plan->layers[i].chain == VIEW_CHAIN_RUN;
        skip += m->plan->layers[i].chain == VIEW_CHAIN_SKIP;
    }
    assert_int_equal(run, 4 * g.layers);  /* q, k, v and the output per block */
    assert_int_equal(skip, 7 * g.layers); /* two links before each split, one before the output */
    rng_t r;
    rng_seed(&r, 9);
    float x[B * 6];
    int32_t y[B * 6];
    assert_true(g.block <= 6);
    random_tokens(&r, B * g.block, g.vocab, x, y);
    const size_t nl = (size_t)B * m->positions * m->num_classes;
    float *l1 = malloc(nl * sizeof(float)), *l2 = malloc(nl * sizeof(float));
    float *g1 = malloc(m->nparams * sizeof(float)), *g2 = malloc(m->nparams * sizeof(float));
    assert_true(l1 && l2 && g1 && g2);
    const float loss1 = chain_step(m, 0, x, y, B, l1, g1), loss2 = chain_step(m, 1, x, y, B, l2, g2);
    assert_true(loss1 == loss2);
    assert_memory_equal(l1, l2, nl * sizeof(float));
    assert_memory_equal(g1, g2, m->nparams * sizeof(float));
    free(l1), free(l2), free(g1), free(g2);
    model_free(m);
}

/* One training step of m fused (its logits into l, its gradients into g) and again with its
 * layers run one by one (model_t's attention_unfused), from the same dropout masks: the
 * same loss, logits and gradients, bit for bit. Returns the loss. */
static float fused_against_layers(model_t *m, const float *x, const int32_t *y, int B, float *l, float *g)
{
    const size_t nl = (size_t)B * m->positions * m->num_classes;
    const uint64_t masks = m->dropout_step;
    m->attention_unfused = 0;
    const float loss = model_forward(m, x, y, B, 1);
    model_backward(m, x, y, B, 1.0f);
    memcpy(l, model_logits(m), nl * sizeof(float));
    memcpy(g, m->grads, m->nparams * sizeof(float));
    m->attention_unfused = 1;
    m->dropout_step = masks;
    assert_true(model_forward(m, x, y, B, 1) == loss);
    model_backward(m, x, y, B, 1.0f);
    m->attention_unfused = 0;
    assert_memory_equal(l, model_logits(m), nl * sizeof(float));
    assert_memory_equal(g, m->grads, m->nparams * sizeof(float));
    return loss;
}

/* The fused attention (the plan's attn) of one GPT shape: marked in every block where the
 * kernel takes the shape (attention_fits), none else; a training step gives the loss, the
 * logits and every parameter gradient of the layers run one by one, bit for bit. */
static void attention_case(model_gpt_t g, int B, uint32_t seed)
{
    model_t *m = tiny(&g, B);
    const int fits = attention_fits(g.block, g.embd / g.heads);
    int run = 0, skip = 0;
    for (int i = 0; i < m->nlayers; i++) {
        run += m->plan->layers[i].attn == ATTN_RUN;
        skip += m->plan->layers[i].attn == ATTN_SKIP;
    }
    printf("  gpt %d x %d, %d heads, block %d: %d fused attentions%s\n", g.layers, g.embd, g.heads, g.block, run,
           fits ? "" : " (this CPU or shape takes the layers: compared with themselves)");
    /* q, k and v's chains, the two products and the softmax: 6 skipped a block */
    assert_int_equal(run, fits && g.dropout == 0.0f ? g.layers : 0);
    assert_int_equal(skip, 6 * run);
    rng_t r;
    rng_seed(&r, seed);
    const size_t nt = (size_t)B * g.block, nl = nt * (size_t)m->num_classes;
    float *x = malloc(nt * sizeof *x), *l1 = malloc(nl * sizeof(float)), *l2 = malloc(nl * sizeof(float));
    int32_t *y = malloc(nt * sizeof *y);
    float *g1 = malloc(m->nparams * sizeof(float)), *g2 = malloc(m->nparams * sizeof(float));
    assert_true(x && y && l1 && l2 && g1 && g2);
    random_tokens(&r, (int)nt, g.vocab, x, y);
    for (int step = 0; step < 2; step++) { /* the second from the first's weights moved by hand */
        fused_against_layers(m, x, y, B, l1, g1);
        /* the (sample, head) pairs split over 3 threads: the layers' results on 3 threads
         * (which may differ from one thread's by rounding: parallel.h) */
        assert_int_equal(par_set_threads(3), 0);
        fused_against_layers(m, x, y, B, l2, g2);
        assert_int_equal(par_set_threads(1), 0);
        for (size_t k = 0; k < m->nparams; k++) m->params[k] -= 0.5f * g1[k];
    }
    free(x), free(y), free(l1), free(l2), free(g1), free(g2);
    model_free(m);
}

/* torch's attention as its ONNX export imports: the scores multiplied by a constant (q @
 * k^T * (1 / sqrt(D))) before the causal softmax (scale 1); one block, no norms */
typedef struct {
    int H, T, E, V;
} mul_attn_t;

static int build_mul_attention(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    const mul_attn_t *g = ctx;
    const int D = g->E / g->H;
    static const int HTD[3] = {1, 0, 2}, HDT[3] = {1, 2, 0};
    const model_shape_t thd = {.rank = 3, .dims = {g->T, g->H, D}}, te = {.rank = 2, .dims = {g->T, g->E}};
    const model_shape_t one = {.rank = 1, .dims = {1}};
    const int x = model_build_embed(b, -1, g->V, g->E, "wte");
    const int qkv = model_build_linear(b, x, 3 * g->E, "c_attn");
    int h[3];
    for (int k = 0; k < 3; k++) {
        const int sl = model_build_slice(b, qkv, 1, k * g->E, (k + 1) * g->E, 1);
        h[k] = model_build_transpose(b, model_build_reshape(b, sl, &thd), k == 1 ? HDT : HTD);
    }
    const int sc = model_build_binary(b, LAYER_BMUL, model_build_bmm(b, h[0], h[1]),
                                      model_build_const(b, &one, "scale", 1));
    const int y = model_build_transpose(b, model_build_bmm(b, model_build_causal_softmax(b, sc, 1.0f), h[2]), HTD);
    model_build_linear(b, model_build_reshape(b, y, &te), g->V, "head");
    return 0;
}

/* The fused attention of that graph: marked (the Mul with the products and the softmax),
 * the constant read as the buffers hold it, and a step giving the layers' bits. */
static void test_gpt_attention_mul(void **state)
{
    (void)state;
    enum { B = 2 };
    const mul_attn_t g = {.H = 3, .T = 37, .E = 36, .V = 11};
    const model_shape_t in = {.rank = 1, .dims = {g.T}};
    char err[256];
    model_t *m = NULL;
    if (model_create_custom_shape("mul-attention", &in, g.V, B, build_mul_attention, (void *)&g, &m, err, sizeof err))
        fail_msg("%s", err);
    rng_t r;
    rng_seed(&r, 25);
    for (size_t k = 0; k < m->nparams; k++) m->params[k] = 2.0f * (rng_uniform(&r) - 0.5f); /* logits far apart */
    int run = 0, skip = 0;
    for (int i = 0; i < m->nlayers; i++) {
        run += m->plan->layers[i].attn == ATTN_RUN;
        skip += m->plan->layers[i].attn == ATTN_SKIP;
        if (m->layers[i].kind == LAYER_CONST) m->buffers[m->layers[i].w_off] = 1.0f / sqrtf(12.0f);
    }
    const int fits = attention_fits(g.T, g.E / g.H);
    assert_int_equal(run, fits);
    assert_int_equal(skip, 7 * run);
    float x[B * 37], *l1 = malloc(B * 37 * 11 * sizeof(float)), *g1 = malloc(m->nparams * sizeof(float));
    int32_t y[B * 37];
    assert_true(l1 && g1);
    random_tokens(&r, B * g.T, g.V, x, y);
    const float loss = fused_against_layers(m, x, y, B, l1, g1);
    assert_true(fabsf(loss - logf(11.0f)) > 0.05f); /* not uniform: the attention matters */
    free(l1), free(g1);
    model_free(m);
}

/* Layer i's output is one a training step never writes: a link of a view chain or fused
 * attention that another layer runs, but for the attention's weights (attn_p) where the
 * attention keeps them there and not in bf16 (weights_bf16). */
static int unwritten(const model_t *m, int i)
{
    const layer_plan_t *p = model_layer_plan(m, i);
    if (p->chain != VIEW_CHAIN_SKIP && p->attn != ATTN_SKIP) return 0;
    for (int k = i + 1; k < m->nlayers; k++)
        if (model_layer_plan(m, k)->attn == ATTN_RUN && model_layer_plan(m, k)->attn_p == i)
            return model_layer_plan(m, k)->weights_bf16;
    return 1;
}

/* g's arena at products of precision p: every output its own place (but those of one
 * shared slot, act_shared), the outputs a step never writes after all the others (so
 * that the step's huge pages hold none of them), and, after a step, those untouched. */
static void arena_case(const model_gpt_t *g, mm_precision_t p, int seed)
{
    enum { B = 2 };
    mm_set_precision(p);
    model_t *m = tiny(g, B);
    size_t written_end = 0, first_unwritten = m->act_floats;
    int n_unwritten = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        const layer_plan_t *lp = model_layer_plan(m, i);
        const size_t n = (size_t)B * l->OC * l->OH * l->OW, end = l->out_off + (lp->act_bf16 ? (n + 1) / 2 : n);
        assert_true(end <= m->act_floats);
        if (lp->act_shared) continue;
        for (int j = 0; j < i; j++) {
            const layer_t *o = &m->layers[j];
            const size_t nj = (size_t)B * o->OC * o->OH * o->OW;
            const size_t ej = o->out_off + (model_layer_plan(m, j)->act_bf16 ? (nj + 1) / 2 : nj);
            if (!model_layer_plan(m, j)->act_shared && n && nj && l->out_off < ej && o->out_off < end)
                fail_msg("layers %d and %d share arena floats", j, i);
        }
        if (unwritten(m, i)) {
            n_unwritten++;
            if (l->out_off < first_unwritten) first_unwritten = l->out_off;
        } else {
            /* a layer norm's statistics, or an attention's weights in bf16, after its output */
            const size_t stats = l->kind == LAYER_LAYERNORM || lp->weights_bf16 ? l->aux_off + 1 : 0;
            written_end = end > written_end ? end : written_end;
            written_end = stats > written_end ? stats : written_end;
        }
    }
    assert_true(n_unwritten > 0);
    /* the plan's count of the floats a step writes: all the written, none of the others */
    assert_true(written_end <= m->plan->act_written_floats && m->plan->act_written_floats <= first_unwritten);
    if (written_end > first_unwritten)
        fail_msg("a written output ends at float %zu, after the first unwritten one's start %zu", written_end,
                 first_unwritten);
    rng_t r;
    rng_seed(&r, (uint64_t)seed);
    float x[B * 64];
    int32_t y[B * 64];
    assert_true(g->block <= 64);
    random_tokens(&r, B * g->block, g->vocab, x, y);
    (void)model_forward(m, x, y, B, 1);
    model_backward(m, x, y, B, 1.0f);
    for (size_t k = first_unwritten; k < m->act_floats; k++)
        if (m->acts[k] != 0.0f) fail_msg("float %zu of the unwritten outputs was written", k);
    mm_set_precision(MM_FP32);
    model_free(m);
}

/* At float32 and at bf16 products (bf16 outputs planned), with the attention fused and, at
 * attention dropout (no fusion: the softmax has another reader), the view chains alone. */
static void test_gpt_arena(void **state)
{
    (void)state;
    model_gpt_t g = {.layers = 2, .heads = 4, .embd = 128, .block = 64, .vocab = 29, .bias = 1, .tie = 1};
    arena_case(&TINY, MM_FP32, 31);
    arena_case(&g, MM_FP32, 32);
    arena_case(&g, MM_BF16, 33);
    g.dropout = 0.1f;
    arena_case(&g, MM_FP32, 34);
    arena_case(&g, MM_BF16, 35);
}

/* The tiny shape (one tile of the products), nanoGPT's CPU shape's heads (32 wide, block 64:
 * the causal skips over several tiles), an odd block and head size (the products' masked
 * columns), and attention dropout (no fusion: the softmax has another reader). */
static void test_gpt_attention_fused(void **state)
{
    (void)state;
    attention_case(TINY, 3, 21);
    model_gpt_t g = {.layers = 2, .heads = 4, .embd = 128, .block = 64, .vocab = 29, .bias = 1, .tie = 1};
    attention_case(g, 2, 22);
    g = (model_gpt_t){.layers = 1, .heads = 3, .embd = 36, .block = 37, .vocab = 17, .bias = 0, .tie = 0};
    attention_case(g, 2, 23);
    g.dropout = 0.1f;
    attention_case(g, 2, 24);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embed_kernels),       cmocka_unit_test(test_causal_softmax),
        cmocka_unit_test(test_causal_softmax_long), cmocka_unit_test(test_causal_softmax_lanes),
        cmocka_unit_test(test_causal_bmm),          cmocka_unit_test(test_gpt_causal_bmm),
        cmocka_unit_test(test_gpt_gradients),       cmocka_unit_test(test_gpt_tied),
        cmocka_unit_test(test_gpt_causal),          cmocka_unit_test(test_gpt_refusals),
        cmocka_unit_test(test_gpt_dact_plan),       cmocka_unit_test(test_gpt_view_chains),
        cmocka_unit_test(test_gpt_attention_fused), cmocka_unit_test(test_gpt_attention_mul),
        cmocka_unit_test(test_gpt_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
