/* tests/unit/test_generate.c - generation (model/generate.h): the graph run by positions
 * (model/decode.h, its outputs at earlier positions the cache) gives the training graph's
 * logits at every position, greedy tokens equal recomputing the window with the graph at
 * each step (past the window, where nanoGPT crops), the same generator with its cache off
 * gives the same tokens, a graph that cannot run by positions still generates (recomputing,
 * the layer named), a long prompt is cut to its last block tokens, sampling is
 * deterministic for a seed and follows the documented rule's distribution (top_k keeps
 * only the k largest), and bad input is refused. The comparisons with torch's greedy
 * decoding are tests/integration/generate_torch.sh (built-in) and onnx_gpt_generate.sh
 * (imported). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "generate.h"
#include "gpt.h"
#include "matmul.h"
#include "model.h"
#include "rng.h"

enum { BLOCK = 8, VOCAB = 13 };

/* A tiny GPT of width embd (2 heads) with weights large enough that its logits are far
 * apart (no greedy ties). */
static model_t *tiny_wide(int tie, int bias, int embd, float dropout, model_gpt_t *g)
{
    *g = (model_gpt_t){.layers = 2,
                       .heads = 2,
                       .embd = embd,
                       .block = BLOCK,
                       .vocab = VOCAB,
                       .bias = bias,
                       .tie = tie,
                       .dropout = dropout};
    model_t *m = NULL;
    char err[256];
    assert_int_equal(model_create_gpt("gpt", g, 1, &m, err, sizeof err), 0);
    model_gpt_init(m, g->layers, 7);
    rng_t r;
    rng_seed(&r, 11);
    for (size_t i = 0; i < m->nparams; i++) m->params[i] += 0.3f * rng_normal(&r);
    return m;
}

static model_t *tiny(int tie, int bias, model_gpt_t *g) { return tiny_wide(tie, bias, 16, 0.0f, g); }

/* A copy of m to compute the reference with: the generator's cache is m's activations. */
static model_t *copy_of(const model_t *m)
{
    model_t *c = NULL;
    char err[256];
    assert_int_equal(model_clone(m, &c, err, sizeof err), 0);
    memcpy(c->params, m->params, m->nparams * sizeof *m->params);
    if (m->nbuffers) memcpy(c->buffers, m->buffers, m->nbuffers * sizeof *m->buffers);
    return c;
}

/* The graph's logits at position len - 1 of ids[0..len) (len <= BLOCK; the tail padded:
 * a position does not see later ones). */
static const float *graph_logits(model_t *m, const uint32_t *ids, int len)
{
    float x[BLOCK] = {0};
    int32_t y[BLOCK] = {0};
    for (int i = 0; i < len; i++) x[i] = (float)ids[i];
    model_forward(m, x, y, 1, 0);
    return model_logits(m) + (size_t)(len - 1) * VOCAB;
}

static uint32_t argmax(const float *l)
{
    int b = 0;
    for (int i = 1; i < VOCAB; i++)
        if (l[i] > l[b]) b = i;
    return (uint32_t)b;
}

/* How far the cached forward's logits may be from the graph's: float32 sums in other orders
 * (1e-4, the tolerance of float32 generation), and at bf16 products one operand's rounding
 * taken the other way where the two orders straddle a rounding boundary: a relative 2^-8
 * of that operand, through the products of a block (q k, the weights' v, the projection;
 * the MLP's two) in first order, 2^-6 of the logits' scale. */
static float feed_tol = 1e-4f;

static void check_feed(int tie, int bias, int embd, float dropout)
{
    model_gpt_t g;
    model_t *m = tiny_wide(tie, bias, embd, dropout, &g), *ref = copy_of(m);
    gen_state_t *s = NULL;
    char err[256];
    const char *why = "";
    assert_int_equal(gen_open(m, &s, err, sizeof err), 0);
    assert_int_equal(gen_cached(s, &why), 1);
    assert_null(why);
    decode_plan_t *plan = NULL; /* the products that read earlier positions: two a block */
    assert_int_equal(decode_plan(m, &plan, err, sizeof err), 0);
    assert_int_equal(decode_cache_products(plan), 2 * g.layers);
    decode_plan_free(plan);
    const uint32_t ids[BLOCK] = {3, 1, 12, 0, 5, 5, 9, 2};
    for (int p = 0; p < BLOCK; p++) {
        const float *inc = NULL;
        assert_int_equal(gen_feed(s, ids[p], &inc, err, sizeof err), 0);
        const float *full = graph_logits(ref, ids, p + 1);
        for (int v = 0; v < VOCAB; v++)
            if (!(fabsf(inc[v] - full[v]) < feed_tol * (1.0f + fabsf(full[v]))))
                fail_msg("position %d logit %d: %.7g against the graph's %.7g", p, v, inc[v], full[v]);
    }
    const float *l = NULL;
    assert_int_equal(gen_feed(s, 1, &l, err, sizeof err), -1); /* the window is full */
    assert_non_null(strstr(err, "full"));
    gen_close(s);
    model_free(m);
    model_free(ref);
}

static void test_feed_equals_graph(void **state)
{
    check_feed(0, 1, 16, 0.0f);
    check_feed(1, 0, 16, 0.0f);
    check_feed(1, 1, 16, 0.1f); /* its Dropout layers: the identity at evaluation */
    /* heads of 20: the attention's 16 lanes and a tail of 4; linear layers of IN 40 (32 in
     * lanes, 8 in the tail) and OUT 120 or 13 (4-row blocks and a last row) */
    check_feed(1, 1, 40, 0.0f);
}

static int collect(void *ctx, uint32_t tok, int index)
{
    ((uint32_t *)ctx)[index] = tok;
    return 0;
}

/* Greedy generation of 20 tokens (past the window of 8) against the graph recomputing the
 * last BLOCK tokens at every step, as nanoGPT's generate does. */
static void test_greedy_equals_recompute(void **state)
{
    model_gpt_t g;
    model_t *m = tiny(1, 1, &g), *ref = copy_of(m);
    gen_state_t *s = NULL;
    char err[256];
    assert_int_equal(gen_open(m, &s, err, sizeof err), 0);
    enum { N = 20, P = 5 };
    uint32_t seq[P + N] = {4, 8, 1, 1, 7}, out[N], seen[N];
    const gen_opts_t o = {.max_tokens = N, .temperature = 0.0, .seed = 1};
    size_t cut = 99;
    assert_int_equal(gen_run(s, seq, P, &o, collect, seen, out, &cut, err, sizeof err), N);
    assert_int_equal(cut, 0);
    for (int i = 0; i < N; i++) {
        const int len = P + i, from = len > BLOCK ? len - BLOCK : 0;
        seq[len] = argmax(graph_logits(ref, seq + from, len - from));
        assert_int_equal(out[i], seq[len]);
        assert_int_equal(seen[i], out[i]);
    }
    /* a prompt of 12: the first 4 dropped, the same tokens as from the last 8 */
    uint32_t long_out[N], short_out[N];
    const uint32_t prompt[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    assert_int_equal(gen_run(s, prompt, 12, &o, NULL, NULL, long_out, &cut, err, sizeof err), N);
    assert_int_equal(cut, 4);
    assert_int_equal(gen_run(s, prompt + 4, 8, &o, NULL, NULL, short_out, &cut, err, sizeof err), N);
    assert_int_equal(cut, 0);
    assert_memory_equal(long_out, short_out, sizeof long_out);
    gen_close(s);
    model_free(m);
    model_free(ref);
}

/* The cache off (each token the model's own forward over the window, as a graph the plan
 * cannot run does it) decodes greedily the cached generator's 20 tokens, past the window,
 * from a prompt of 12 (4 dropped). A graph that takes no token ids is refused, naming what
 * it takes. */
static void test_uncached_equals_cached(void **state)
{
    model_gpt_t g;
    model_t *m = tiny(1, 1, &g);
    gen_state_t *s = NULL;
    char err[256];
    const char *why = NULL;
    assert_int_equal(gen_open(m, &s, err, sizeof err), 0);
    enum { N = 20 };
    const uint32_t prompt[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    const gen_opts_t o = {.max_tokens = N, .temperature = 0.0, .seed = 1};
    uint32_t a[N], b[N];
    size_t cut_a = 0, cut_b = 0;
    assert_int_equal(gen_run(s, prompt, 12, &o, NULL, NULL, a, &cut_a, err, sizeof err), N);
    gen_use_cache(s, 0);
    assert_int_equal(gen_cached(s, &why), 0);
    assert_non_null(strstr(why, "turned off"));
    assert_int_equal(gen_run(s, prompt, 12, &o, NULL, NULL, b, &cut_b, err, sizeof err), N);
    assert_int_equal(cut_b, 4);
    assert_int_equal(cut_a, cut_b);
    assert_memory_equal(a, b, sizeof a);
    const float *l = NULL;
    assert_int_equal(gen_feed(s, VOCAB, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "outside the vocabulary"));
    gen_use_cache(s, 1); /* back on: the same tokens again */
    assert_int_equal(gen_cached(s, NULL), 1);
    assert_int_equal(gen_run(s, prompt, 12, &o, NULL, NULL, b, &cut_b, err, sizeof err), N);
    assert_memory_equal(a, b, sizeof a);
    gen_close(s);
    model_free(m);
    model_t *cnn = NULL;
    assert_int_equal(model_create_classes("lenet5", 10, 1, &cnn, err, sizeof err), 0);
    assert_int_equal(gen_open(cnn, &s, err, sizeof err), -1);
    assert_null(s);
    assert_non_null(strstr(err, "is no language model"));
    model_free(cnn);
}

/* A language model whose layer norm mixes positions (over the window's axis): no position
 * can be computed alone. */
static int build_mixing(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    const int e = model_build_embed(b, -1, VOCAB, 8, "wte.weight");
    const int n = model_build_layernorm(b, e, 0, 1e-5f, "ln.weight", "ln.bias");
    model_build_linear_layout(b, n, VOCAB, GEMM_W_OUT_IN, "head.weight");
    return 0;
}

/* The plan refuses it naming the layer, and the generator recomputes the window for each
 * token instead: greedy tokens those of the graph's forward over each window. */
static void test_graph_not_by_positions(void **state)
{
    const model_shape_t in = {.rank = 1, .dims = {BLOCK}};
    model_t *m = NULL, *ref;
    char err[256];
    const char *why = NULL;
    assert_int_equal(model_create_custom_shape("mixing", &in, VOCAB, 1, build_mixing, NULL, &m, err, sizeof err), 0);
    model_init_params(m, 4);
    ref = copy_of(m);
    gen_state_t *s = NULL;
    assert_int_equal(gen_open(m, &s, err, sizeof err), 0);
    assert_int_equal(gen_cached(s, &why), 0);
    assert_non_null(strstr(why, "layer 1 (layernorm) normalises along positions"));
    enum { N = 12 };
    uint32_t seq[3 + N] = {2, 7, 1}, out[N];
    const gen_opts_t o = {.max_tokens = N};
    size_t cut;
    assert_int_equal(gen_run(s, seq, 3, &o, NULL, NULL, out, &cut, err, sizeof err), N);
    for (int i = 0; i < N; i++) {
        const int len = 3 + i, from = len > BLOCK ? len - BLOCK : 0;
        seq[len] = argmax(graph_logits(ref, seq + from, len - from));
        assert_int_equal(out[i], seq[len]);
    }
    gen_close(s);
    model_free(m);
    model_free(ref);
}

/* At bf16 products (kernels/cpu/matmul.h) the cached forward, one row at a time through
 * the kept weights' tiles, gives the bf16 graph's logits, and greedy tokens the graph's. */
static void test_bf16(void **state)
{
    mm_set_precision(MM_BF16);
    mm_keep_all_weights(1); /* as pacer-generate */
    feed_tol = 1.0f / 64;
    check_feed(1, 1, 16, 0.0f);
    check_feed(1, 1, 40, 0.0f);
    test_greedy_equals_recompute(state);
    feed_tol = 1e-4f;
    /* and it is not the float32 forward: some logit is off it by more than float32's
     * tolerance (the operands' roundings, 2^-9 relative each): a model built at fp32, whose
     * activations are all float32 (one built at bf16 keeps some in bf16, plan.h's
     * act_bf16, and its products that read them stay bf16) */
    model_gpt_t g;
    mm_set_precision(MM_FP32);
    model_t *m = tiny(1, 1, &g), *ref = copy_of(m);
    mm_set_precision(MM_BF16);
    gen_state_t *s = NULL;
    char err[256];
    assert_int_equal(gen_open(m, &s, err, sizeof err), 0);
    const uint32_t ids[4] = {3, 1, 12, 0};
    const float *inc = NULL;
    for (int p = 0; p < 4; p++) assert_int_equal(gen_feed(s, ids[p], &inc, err, sizeof err), 0);
    float bf[VOCAB];
    memcpy(bf, inc, sizeof bf);
    mm_set_precision(MM_FP32);
    const float *full = graph_logits(ref, ids, 4);
    float most = 0;
    for (int v = 0; v < VOCAB; v++) most = fmaxf(most, fabsf(bf[v] - full[v]) / (1.0f + fabsf(full[v])));
    printf("  bf16 generation against the float32 graph: %.2e of the logits' scale\n", most);
    mm_keep_all_weights(0);
    assert_true(most > 1e-4f);
    gen_close(s);
    model_free(m);
    model_free(ref);
}

/* A prompt of 90 tokens is computed in one call (each product over its 90 rows): its greedy
 * tokens, also past the window of 100 (re-fed whole), equal feeding every token one at a
 * time. */
static void test_prefill_chunks(void **state)
{
    model_gpt_t g = {.layers = 2, .heads = 2, .embd = 16, .block = 100, .vocab = VOCAB, .bias = 1, .tie = 1};
    model_t *m = NULL;
    char err[256];
    assert_int_equal(model_create_gpt("gpt", &g, 1, &m, err, sizeof err), 0);
    model_gpt_init(m, g.layers, 3);
    rng_t r;
    rng_seed(&r, 5);
    for (size_t i = 0; i < m->nparams; i++) m->params[i] += 0.3f * rng_normal(&r);
    uint32_t prompt[90], first[1];
    for (int i = 0; i < 90; i++) prompt[i] = rng_below(&r, VOCAB);
    gen_state_t *s = NULL;
    assert_int_equal(gen_open(m, &s, err, sizeof err), 0);
    const gen_opts_t o = {.max_tokens = 1};
    size_t cut;
    assert_int_equal(gen_run(s, prompt, 90, &o, NULL, NULL, first, &cut, err, sizeof err), 1);
    assert_int_equal(gen_position(s), 90);
    float chunked[VOCAB];
    const float *l = NULL;
    gen_reset(s);
    for (int i = 0; i < 90; i++) assert_int_equal(gen_feed(s, prompt[i], &l, err, sizeof err), 0);
    memcpy(chunked, l, sizeof chunked);
    assert_int_equal(argmax(chunked), first[0]);
    /* the next 30 greedy tokens too (past the window of 100: the window re-fed) */
    uint32_t a[30], seq[120];
    const gen_opts_t o30 = {.max_tokens = 30};
    assert_int_equal(gen_run(s, prompt, 90, &o30, NULL, NULL, a, &cut, err, sizeof err), 30);
    memcpy(seq, prompt, sizeof prompt);
    for (int i = 0; i < 30; i++) {
        const int len = 90 + i, from = len > 100 ? len - 100 : 0;
        gen_reset(s);
        for (int k = from; k < len; k++) assert_int_equal(gen_feed(s, seq[k], &l, err, sizeof err), 0);
        seq[len] = argmax(l);
        assert_int_equal(a[i], seq[len]);
    }
    gen_close(s);
    model_free(m);
}

static void test_sampling(void **state)
{
    model_gpt_t g;
    model_t *m = tiny(0, 1, &g);
    gen_state_t *s = NULL;
    char err[256];
    assert_int_equal(gen_open(m, &s, err, sizeof err), 0);
    enum { N = 30 };
    const uint32_t prompt[2] = {3, 4};
    uint32_t a[N], b[N], c[N];
    size_t cut;
    gen_opts_t o = {.max_tokens = N, .temperature = 1.5, .top_k = 0, .seed = 42};
    assert_int_equal(gen_run(s, prompt, 2, &o, NULL, NULL, a, &cut, err, sizeof err), N);
    assert_int_equal(gen_run(s, prompt, 2, &o, NULL, NULL, b, &cut, err, sizeof err), N);
    assert_memory_equal(a, b, sizeof a);
    o.seed = 43;
    assert_int_equal(gen_run(s, prompt, 2, &o, NULL, NULL, c, &cut, err, sizeof err), N);
    assert_memory_not_equal(a, c, sizeof a);
    /* top_k 1 is greedy */
    gen_opts_t greedy = {.max_tokens = N}, k1 = {.max_tokens = N, .temperature = 2.0, .top_k = 1, .seed = 5};
    assert_int_equal(gen_run(s, prompt, 2, &greedy, NULL, NULL, a, &cut, err, sizeof err), N);
    assert_int_equal(gen_run(s, prompt, 2, &k1, NULL, NULL, b, &cut, err, sizeof err), N);
    assert_memory_equal(a, b, sizeof a);
    /* a model larger than its tokenizer samples only the ids the tokenizer has */
    gen_opts_t lim = {.max_tokens = N, .temperature = 2.0, .seed = 9, .vocab_limit = 4};
    assert_int_equal(gen_run(s, prompt, 2, &lim, NULL, NULL, c, &cut, err, sizeof err), N);
    for (int i = 0; i < N; i++)
        if (c[i] >= 4) fail_msg("token %d is id %u, outside the first 4", i, c[i]);
    gen_close(s);
    model_free(m);
}

/* The rule's distribution: frequencies of 40000 draws within 0.01 of softmax(l / t) over
 * the top k, and no draw outside them. */
static void test_sample_distribution(void **state)
{
    const float l[6] = {1.0f, 3.0f, -2.0f, 2.5f, 0.0f, 2.5f};
    float scratch[6];
    rng_t r;
    rng_seed(&r, 9);
    const double t = 0.8;
    enum { DRAWS = 40000 };
    int count[6] = {0};
    for (int i = 0; i < DRAWS; i++) count[gen_sample(l, 6, t, 3, &r, scratch)]++;
    const double p1 = exp(3.0 / t), p3 = exp(2.5 / t), sum = p1 + 2 * p3; /* ids 1, 3, 5 */
    assert_true(fabs(count[1] / (double)DRAWS - p1 / sum) < 0.01);
    assert_true(fabs(count[3] / (double)DRAWS - p3 / sum) < 0.01);
    assert_true(fabs(count[5] / (double)DRAWS - p3 / sum) < 0.01);
    assert_int_equal(count[0] + count[2] + count[4], 0);
    /* a tie at the k-th value: the lower id is kept */
    memset(count, 0, sizeof count);
    for (int i = 0; i < 2000; i++) count[gen_sample(l, 6, t, 2, &r, scratch)]++;
    assert_int_equal(count[5], 0);
    assert_true(count[1] > 0 && count[3] > 0);
    assert_int_equal(gen_sample(l, 6, 0.0, 0, &r, scratch), 1);
}

static void test_refusals(void **state)
{
    model_gpt_t g;
    model_t *m = tiny(0, 1, &g);
    gen_state_t *s = NULL;
    char err[256];
    assert_int_equal(gen_open(m, &s, err, sizeof err), 0);
    const float *l;
    assert_int_equal(gen_feed(s, VOCAB, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "outside the vocabulary"));
    uint32_t out[GEN_MAX_TOKENS + 1];
    const uint32_t prompt[1] = {2};
    size_t cut;
    gen_opts_t o = {.max_tokens = GEN_MAX_TOKENS + 1};
    assert_int_equal(gen_run(s, prompt, 1, &o, NULL, NULL, out, &cut, err, sizeof err), -1);
    assert_non_null(strstr(err, "max_tokens"));
    o.max_tokens = 0;
    assert_int_equal(gen_run(s, prompt, 1, &o, NULL, NULL, out, &cut, err, sizeof err), -1);
    o.max_tokens = 3;
    assert_int_equal(gen_run(s, prompt, 0, &o, NULL, NULL, out, &cut, err, sizeof err), -1);
    assert_non_null(strstr(err, "no tokens"));
    const uint32_t bad[2] = {1, 400};
    assert_int_equal(gen_run(s, bad, 2, &o, NULL, NULL, out, &cut, err, sizeof err), -1);
    assert_non_null(strstr(err, "400"));
    gen_close(s);
    model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feed_equals_graph),
        cmocka_unit_test(test_greedy_equals_recompute),
        cmocka_unit_test(test_uncached_equals_cached),
        cmocka_unit_test(test_graph_not_by_positions),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_prefill_chunks),
        cmocka_unit_test(test_sampling),
        cmocka_unit_test(test_sample_distribution),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
