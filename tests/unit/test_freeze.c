/* tests/unit/test_freeze.c - frozen tensors (model.h's no_update) in the host backward and
 * the optimizer: a model with some tensors frozen computes no gradient for them (the
 * weight products skipped, counted in grads_skipped, grads_computed 0) and every other
 * gradient bit for bit as the same model with nothing frozen (the input gradients still
 * flow through the frozen layers); an optimizer step leaves the frozen tensors and their
 * optimizer state untouched. For the built-in GPT (tied embedding and head, a frozen
 * position embedding read by a broadcasting add, linear and layer-norm weights and
 * biases) and resnet20 (the first convolution, whose input gradient is not needed, a
 * convolution in the middle, batch norms, the head's bias). The all-reduce's side is
 * test_compress's test_frozen_not_sent. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"
#include "model.h"
#include "ops.h"
#include "rng.h"

/* What a frozen gradient is set to before the backward: a backward that wrote it would
 * leave something else (it is no gradient any of these models computes). */
#define SENTINEL 12345.0f

static int matches(const char *const *globs, const char *name)
{
    for (int g = 0; globs[g]; g++)
        if (fnmatch(globs[g], name, 0) == 0) return 1;
    return 0;
}

/* Marks b's tensors matching globs no_update as the worker does (worker_apply_freeze),
 * then sets their gradients to SENTINEL; returns how many tensors. */
static int freeze(model_t *b, const char *const *globs)
{
    int n = 0;
    for (int t = 0; t < b->ntensors; t++) {
        tensor_info_t *x = &b->tensors[t];
        x->no_update = !x->is_buffer && matches(globs, x->name);
        n += x->no_update;
    }
    model_zero_frozen_grads(b);
    for (int t = 0; t < b->ntensors; t++)
        if (b->tensors[t].no_update)
            for (size_t i = 0; i < b->tensors[t].count; i++) b->grads[b->tensors[t].offset + i] = SENTINEL;
    return n;
}

/* a (nothing frozen) and b (frozen) after the same forward and backward: b's frozen
 * gradients unwritten (SENTINEL, or 0 for a convolution's, written for its input's sake
 * and zeroed: conv_zeroed names them), every other one a's bits; b computed none of the
 * frozen gradients a computed and skipped exactly those. */
static void compare(const model_t *a, const model_t *b, const char *const *conv_zeroed)
{
    long long skipped = 0;
    for (int t = 0; t < b->ntensors; t++) {
        const tensor_info_t *x = &b->tensors[t];
        if (x->is_buffer) continue;
        const float *ga = a->grads + x->offset, *gb = b->grads + x->offset;
        if (!x->no_update) {
            if (memcmp(ga, gb, x->count * sizeof *ga) != 0)
                fail_msg("%s: gradient differs from the unfrozen model's", x->name);
            assert_true(a->grads_computed[t] > 0);
            assert_int_equal(b->grads_computed[t], a->grads_computed[t]);
            continue;
        }
        const int zeroed = conv_zeroed && matches(conv_zeroed, x->name);
        for (size_t i = 0; i < x->count; i++)
            if (gb[i] != (zeroed ? 0.0f : SENTINEL))
                fail_msg("%s[%zu]: frozen, but its gradient was written", x->name, i);
        if (zeroed) {
            assert_int_equal(b->grads_computed[t], a->grads_computed[t]);
            continue;
        }
        if (b->grads_computed[t] != 0)
            fail_msg("%s: frozen, gradient computed %lld times", x->name, b->grads_computed[t]);
        skipped += a->grads_computed[t];
    }
    assert_int_equal(a->grads_skipped, 0);
    assert_int_equal(b->grads_skipped, skipped);
    assert_true(skipped > 0);
    /* the frozen start's layers run no backward at all */
    assert_int_equal(a->backward_skipped, 0);
    assert_true(b->backward_skipped > 0);
}

/* An AdamW step with weight decay on b: its frozen tensors and their optimizer state
 * stay as they were (0), the others move. */
static void optimizer_step(model_t *b)
{
    float *before = malloc(b->nparams * sizeof *before);
    assert_non_null(before);
    memcpy(before, b->params, b->nparams * sizeof *before);
    assert_int_equal(model_alloc_moment2(b), 0);
    for (int t = 0; t < b->ntensors; t++)
        if (b->tensors[t].no_update) memset(b->grads + b->tensors[t].offset, 0, b->tensors[t].count * sizeof(float));
    optim_step_t o = {.adamw = 1, .groups = 1, .grad_scale = 1.0f, .clip_norm = 1.0f, .step = 1};
    o.h.lr = 0.01;
    o.h.beta1 = 0.9;
    o.h.beta2 = 0.999;
    o.h.eps = 1e-8;
    o.h.weight_decay = 0.1;
    model_apply_optimizer(b, b->grads, &o);
    for (int t = 0; t < b->ntensors; t++) {
        const tensor_info_t *x = &b->tensors[t];
        if (x->is_buffer) continue;
        const int same = memcmp(before + x->offset, b->params + x->offset, x->count * sizeof(float)) == 0;
        if (x->no_update && !same) fail_msg("%s: frozen, but the optimizer moved it", x->name);
        if (!x->no_update && same && !x->no_decay) fail_msg("%s: trainable, but the optimizer left it", x->name);
        for (size_t i = 0; x->no_update && i < x->count; i++)
            if (b->momentum[x->offset + i] != 0.0f || b->moment2[x->offset + i] != 0.0f)
                fail_msg("%s: frozen, but it has optimizer state", x->name);
    }
    free(before);
}

static const model_gpt_t GPT = {
    .layers = 2, .heads = 2, .embd = 8, .block = 6, .vocab = 13, .dropout = 0.0f, .bias = 1, .tie = 1};

static void test_gpt_frozen(void **state)
{
    enum { B = 2 };
    char err[256];
    model_t *a = NULL, *b = NULL;
    if (model_create_gpt("gpt", &GPT, B, &a, err, sizeof err) != 0 ||
        model_create_gpt("gpt", &GPT, B, &b, err, sizeof err) != 0)
        fail_msg("%s", err);
    model_gpt_init(a, GPT.layers, 11);
    model_gpt_init(b, GPT.layers, 11);
    /* the tied table (the head's weight too), the position embedding (a constant read by a
     * broadcasting add), the first block whole, the last layer norm's bias */
    static const char *const globs[] = {"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.*",
                                        "transformer.ln_f.bias", NULL};
    assert_true(freeze(b, globs) >= 4);
    rng_t r;
    rng_seed(&r, 5);
    float x[B * 6];
    int32_t y[B * 6];
    for (int k = 0; k < B * GPT.block; k++) {
        x[k] = (float)rng_below(&r, GPT.vocab);
        y[k] = (int32_t)rng_below(&r, GPT.vocab);
    }
    for (int step = 0; step < 2; step++) { /* the counts grow per backward */
        const float la = model_forward(a, x, y, B, 1), lb = model_forward(b, x, y, B, 1);
        assert_true(la == lb);
        model_backward(a, x, y, B, 1.0f);
        model_backward(b, x, y, B, 1.0f);
    }
    compare(a, b, NULL);
    printf("  gpt: %lld frozen gradients and %lld layers' backwards skipped over 2 backwards, the rest bit for bit\n",
           b->grads_skipped, b->backward_skipped);
    optimizer_step(b);
    model_free(a);
    model_free(b);
}

static void test_resnet_frozen(void **state)
{
    enum { B = 2 };
    char err[256];
    model_t *a = NULL, *b = NULL;
    if (model_create("resnet20", B, &a, err, sizeof err) != 0 || model_create("resnet20", B, &b, err, sizeof err) != 0)
        fail_msg("%s", err);
    model_init_params(a, 3);
    model_init_params(b, 3);
    static const char *const globs[] = {"conv1.weight",   "bn1.*",   "layer1.0.conv2.weight",
                                        "layer2.*.bn2.*", "fc.bias", NULL};
    static const char *const zeroed[] = {"layer1.0.conv2.weight", NULL};
    assert_int_equal(freeze(b, globs), 1 + 2 + 1 + 6 + 1);
    const size_t in = (size_t)B * a->C * a->H * a->W;
    float *x = malloc(in * sizeof *x);
    assert_non_null(x);
    rng_t r;
    rng_seed(&r, 9);
    for (size_t k = 0; k < in; k++) x[k] = rng_normal(&r);
    int32_t y[B] = {3, 7};
    assert_true(model_forward(a, x, y, B, 1) == model_forward(b, x, y, B, 1));
    model_backward(a, x, y, B, 1.0f);
    model_backward(b, x, y, B, 1.0f);
    compare(a, b, zeroed);
    printf("  resnet20: %lld frozen gradients and %lld layers' backwards skipped, the rest bit for bit\n",
           b->grads_skipped, b->backward_skipped);
    optimizer_step(b);
    free(x);
    model_free(a);
    model_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt_frozen),
        cmocka_unit_test(test_resnet_frozen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
