/* tests/unit/test_model.c - the built-in networks: parameter counts from ALGORITHMS.md,
 * the fused layout (tensors tile the buffers exactly), a finite-difference check of the
 * whole graph (residual branches, batch norm, pooling) on a few parameters per model, and
 * the catalog's rows (common/catalog.c) against what model_create builds. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "gpt.h"
#include "matmul.h"
#include "memest.h"
#include "model.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "plan.h"
#include "rng.h"

static model_t *make(const char *name, int B)
{
    model_t *m = NULL;
    char err[256];
    assert_int_equal(model_create(name, B, &m, err, sizeof err), 0);
    model_init_params(m, 1);
    return m;
}

static void test_param_counts(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        size_t params;
    } want[] = {
        {"mlp", 235146},
        {"lenet5", 61706},
        {"cifar10_quick", 145578},
        {"resnet20", 269722}, /* "0.27M": 16/32/64 basic blocks, fc 64x10 */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        model_t *m = make(want[i].name, 2);
        if (m->nparams != want[i].params)
            fail_msg("%s: %zu parameters, want %zu", want[i].name, m->nparams, want[i].params);
        /* the tensors tile params and buffers with no gap or overlap */
        size_t p = 0, b = 0;
        for (int t = 0; t < m->ntensors; t++) {
            const tensor_info_t *ti = &m->tensors[t];
            size_t *next = ti->is_buffer ? &b : &p;
            assert_int_equal(ti->offset, *next);
            *next += ti->count;
        }
        assert_int_equal(p, m->nparams);
        assert_int_equal(b, m->nbuffers);
        model_free(m);
    }
    char err[256];
    model_t *m = NULL;
    assert_int_equal(model_create("vgg16", 2, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown model 'vgg16'"));
}

/* d(loss)/d(param) by central differences in float against the backward pass. This guards
 * the wiring of the graph (a missing residual branch, a wrong sign, a tensor whose
 * gradient is never written); precision is the per-op tests' job. Per tensor, FD_DIRS
 * directional derivatives (L(p + h v) - L(p - h v)) / 2h against <g, v> for unit v: along
 * the backward pass's own gradient, along two random +-1 directions over the WHOLE tensor
 * (every entry takes part), and along the entry where the gradient is largest.
 *
 * Criterion (combined absolute-relative): |an - fd| <= atol + rtol * |fd|. atol is the
 * noise of a float central difference: atol = FD_NOISE x max(1, |L|) / h, FD_NOISE
 * about 8 float ulps of the loss. rtol covers ReLU and max-pool kinks crossed within
 * +-h. With h = 1e-3 the worst error measured is 0.13 of the bound on the small nets and
 * 0.34 on resnet20. Unlike "absolute OR relative", this cannot pass a
 * zero or wrong-sign value where the difference stands above the noise
 * (|fd| > 2 atol / (1 - rtol)): then |an - fd| >= |fd| exceeds the bound. Every tensor
 * must have at least one such significant comparison, so a tensor whose gradient is
 * zeroed or negated always fails, and fd_check shows it on the same differences.
 * h = 1e-3 (a unit step along the direction); rtol 5e-2, 1e-1 for resnet20 (19
 * convolutions with batch norm, many units near a kink). */
#define FD_DIRS 4 /* the gradient direction, two random ones, the largest entry */
#define FD_NOISE 2e-6

/* Central difference of the loss along v (count entries of params from offset). */
static double fd_dir(model_t *m, const float *x, const int32_t *y, int B, size_t off, size_t count, const float *v,
                     float h, float *keep)
{
    float *p = m->params + off;
    memcpy(keep, p, count * sizeof(float));
    for (size_t i = 0; i < count; i++) p[i] = keep[i] + h * v[i];
    float lp = model_forward(m, x, y, B, 1);
    for (size_t i = 0; i < count; i++) p[i] = keep[i] - h * v[i];
    float lm = model_forward(m, x, y, B, 1);
    memcpy(p, keep, count * sizeof(float));
    return ((double)lp - (double)lm) / (2.0 * h);
}

/* The check, and the check of the check on the same differences: every tensor's
 * comparisons must pass with the backward pass's gradient, and every tensor must FAIL
 * with that gradient replaced by zero and by its negation (the old "relative OR
 * absolute" criterion passed both wherever the gradient was below its absolute bound). */
static void fd_check(const char *name, int C, int H, int W, float h, double rtol)
{
    const int B = 2;
    model_t *m = make(name, B);
    size_t n = (size_t)B * C * H * W;
    float x[2 * 3 * 32 * 32];
    int32_t y[2] = {3, 7};
    rng_t r;
    rng_seed(&r, 5);
    for (size_t i = 0; i < n; i++) x[i] = rng_normal(&r);
    float loss = model_forward(m, x, y, B, 1);
    model_backward(m, x, y, B, 1.0f);
    float *v = malloc(m->nparams * sizeof(float)), *keep = malloc(m->nparams * sizeof(float));
    assert_non_null(v);
    assert_non_null(keep);
    double atol = FD_NOISE * fmax(1.0, fabs(loss)) / h, worst = 0;
    int checked = 0, tensors = 0, zero_passed = 0, negated_passed = 0;
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *ti = &m->tensors[t];
        if (ti->is_buffer) continue;
        tensors++;
        const float *g = m->grads + ti->offset;
        size_t big = 0;
        for (size_t i = 1; i < ti->count; i++)
            if (fabsf(g[i]) > fabsf(g[big])) big = i;
        int significant = 0, zero_bad = 0, negated_bad = 0;
        double gnorm = 0;
        for (size_t i = 0; i < ti->count; i++) gnorm += (double)g[i] * g[i];
        gnorm = sqrt(gnorm);
        for (int d = 0; d < FD_DIRS; d++) {
            /* unit directions: d = 0 along the backward pass's own gradient, 0 < d <
             * FD_DIRS - 1 random +-1/sqrt(count), the last the largest entry alone */
            double an = 0;
            for (size_t i = 0; i < ti->count; i++) {
                if (d == 0) v[i] = gnorm > 0 ? (float)(g[i] / gnorm) : (float)(1.0 / sqrt((double)ti->count));
                else if (d < FD_DIRS - 1) v[i] = (float)((rng_next(&r) & 1 ? 1.0 : -1.0) / sqrt((double)ti->count));
                else v[i] = i == big ? 1.0f : 0.0f;
                an += (double)v[i] * g[i];
            }
            double fd = fd_dir(m, x, y, B, ti->offset, ti->count, v, h, keep);
            double bound = atol + rtol * fabs(fd);
            if (fabs(fd) > 2 * atol / (1 - rtol)) significant++;
            double e = fabs(an - fd) / bound;
            if (e > worst) worst = e;
            if (!(e <= 1.0))
                fail_msg("%s %s (%s): backward %.6g, finite difference %.6g: |difference| %.3g > %.3g "
                         "(atol %.2g + rtol %.2g x |fd|)",
                         name, ti->name,
                         d == 0            ? "along its gradient"
                         : d < FD_DIRS - 1 ? "random direction"
                                           : "largest entry",
                         an, fd, fabs(an - fd), bound, atol, rtol);
            zero_bad += !(fabs(fd) <= bound);
            negated_bad += !(fabs(-an - fd) <= bound);
            checked++;
        }
        if (!significant)
            fail_msg("%s %s: no finite difference above the noise (%.2g): the check could not tell a "
                     "zero gradient from this one",
                     name, ti->name, 2 * atol / (1 - rtol));
        zero_passed += !zero_bad;
        negated_passed += !negated_bad;
    }
    if (zero_passed || negated_passed)
        fail_msg("%s: a zero gradient passed in %d and a negated one in %d of %d tensors", name, zero_passed,
                 negated_passed, tensors);
    print_message("%s: %d directional and single-entry differences, worst |an - fd| / bound = %.2f; zero and "
                  "negated gradients fail in all %d tensors\n",
                  name, checked, worst, tensors);
    free(v);
    free(keep);
    model_free(m);
}

static void test_fd_mlp(void **state)
{
    (void)state;
    fd_check("mlp", 1, 28, 28, 1e-3f, 5e-2);
}
static void test_fd_lenet5(void **state)
{
    (void)state;
    fd_check("lenet5", 1, 28, 28, 1e-3f, 5e-2);
}
static void test_fd_cifar10_quick(void **state)
{
    (void)state;
    fd_check("cifar10_quick", 3, 32, 32, 1e-3f, 5e-2);
}
static void test_fd_resnet20(void **state)
{
    (void)state;
    fd_check("resnet20", 3, 32, 32, 1e-3f, 1e-1);
}

/* The catalog keeps each built-in model's figures (common/catalog.c: the coordinator may
 * not see model/), generated at build time from model_describe at one batch and 10 classes
 * (tools/catalog_rows.c): they must be what model_create allocates at every batch, and
 * catalog_model_for_classes's arithmetic what it allocates for other class counts (the
 * gradients' arena, planned by liveness, at most that: the logits' gradient grows by the
 * classes, the rest may fit around it), or
 * admission (422 at submission), the worker's check before it allocates, the API's figures
 * and the simulator's FLOPs would drift. model_describe is how an imported model's figures
 * are made, so it is checked against the allocation too. */
static void test_catalog_matches_models(void **state)
{
    (void)state;
    static const int BATCHES[] = {1, 5, 32};
    /* 0: the row as it is (10 classes); the others through catalog_model_for_classes,
     * against the network built for that many (a built-in's head takes the data set's) */
    static const int CLASSES[] = {0, 4, 2, 1, 100};
    catalog_model_t row;
    int builtins = 0;
    for (size_t i = 0; catalog_model_at(i, &row) == 0; i++) {
        if (row.source != CATALOG_BUILTIN) continue;
        builtins++;
        for (size_t k = 0; k < sizeof BATCHES / sizeof BATCHES[0] * (sizeof CLASSES / sizeof CLASSES[0]); k++) {
            const int B = BATCHES[k % 3], classes = CLASSES[k / 3];
            model_t *m = NULL;
            char err[256];
            catalog_model_t e = row;
            if (classes && catalog_model_for_classes(&row, classes, &e, err, sizeof err) != 0)
                fail_msg("catalog model %s, %d classes: %s", row.name, classes, err);
            assert_int_equal(e.classes, classes ? classes : 10);
            if (model_create_classes(e.name, classes, B, &m, err, sizeof err) != 0)
                fail_msg("catalog model %s: %s", e.name, err);
            /* the head: the last layer, fully connected, head_in wide, one output a class */
            const layer_t *head = &m->layers[m->nlayers - 1];
            if (head->kind != LAYER_FC || head->OC != e.classes || head->C * head->H * head->W != e.head_in)
                fail_msg("%s's head: kind %d, %d outputs (want %d), %d inputs (catalog head_in %d)", e.name,
                         (int)head->kind, head->OC, e.classes, head->C * head->H * head->W, e.head_in);
            catalog_model_t d;
            model_describe(m, &d);
            size_t argmax = 0, aux = 0;
            for (int l = 0; l < m->nlayers; l++) {
                const layer_t *L = &m->layers[l];
                if (L->kind == LAYER_MAXPOOL) argmax += (size_t)B * L->OC * L->OH * L->OW;
                if (L->kind == LAYER_BN) aux += 2 * (size_t)L->C;
            }
            if (strcmp(d.name, e.name) != 0 || d.C != e.C || d.H != e.H || d.W != e.W || d.classes != e.classes ||
                d.layers != e.layers || d.params != e.params || d.buffers != e.buffers || d.fixed != e.fixed ||
                d.acts_per_sample != e.acts_per_sample || d.argmax_per_sample != e.argmax_per_sample ||
                d.flops_per_sample != e.flops_per_sample || d.dacts_per_sample > e.dacts_per_sample ||
                (classes == 0 && d.dacts_per_sample != e.dacts_per_sample))
                fail_msg(
                    "catalog row of %s at batch %d, %d classes: shape %dx%dx%d/%dx%dx%d classes %d/%d layers %d/%d params "
                    "%ld/%ld buffers %ld/%ld fixed %ld/%ld acts %ld/%ld dacts %ld/%ld argmax %ld/%ld flops %.0f/%.0f "
                    "(common/catalog.c's generated row against model_describe)",
                    e.name, B, e.classes, e.C, e.H, e.W, d.C, d.H, d.W, e.classes, d.classes, e.layers, d.layers,
                    e.params, d.params, e.buffers, d.buffers, e.fixed, d.fixed, e.acts_per_sample, d.acts_per_sample,
                    e.dacts_per_sample, d.dacts_per_sample, e.argmax_per_sample, d.argmax_per_sample,
                    e.flops_per_sample, d.flops_per_sample);
            /* ... and model_describe against the allocation: the same sizes, and never
             * less than what does not grow with the batch */
            if ((size_t)d.params != m->nparams || (size_t)d.buffers != m->nbuffers ||
                aux + m->ws_floats > (size_t)d.fixed || aux != m->aux_floats ||
                (size_t)d.acts_per_sample * B != m->act_floats || (size_t)d.argmax_per_sample * B != argmax ||
                (size_t)d.dacts_per_sample * B != m->plan->dact_floats || argmax != m->argmax_ints ||
                d.classes != m->num_classes || d.layers != m->nlayers)
                fail_msg("model_describe of %s at batch %d: params %ld/%zu buffers %ld/%zu fixed %ld < %zu acts "
                         "%ld/%zu argmax %ld/%zu",
                         e.name, B, d.params, m->nparams, d.buffers, m->nbuffers, d.fixed, aux + m->ws_floats,
                         d.acts_per_sample * B, m->act_floats, d.argmax_per_sample * B, argmax);
            /* a built-in is trained on a data set it fits, of any class count */
            catalog_dataset_t ds;
            assert_int_equal(catalog_dataset_get(e.dataset, &ds), 0);
            assert_int_equal(catalog_pair_check(&e, &ds, err, sizeof err), 0);
            ds.classes = 7;
            assert_int_equal(catalog_pair_check(&e, &ds, err, sizeof err), 0);
            model_free(m);
        }
    }
    assert_int_equal(builtins, 4);
    assert_int_equal(catalog_model_get("vgg", &row), -1);
}

/* The memory estimate's figures for the built-in GPT (common/memest.c, counted from the
 * spec's fields) against model_describe of the model the worker builds, over shapes that
 * move each term (dropout's masks, no biases, an untied head, a vocabulary larger than the
 * blocks): the activations and their gradients' arena (planned by liveness) bounded from
 * above, and not by more than twice; the parameters exact. And the arena is exactly
 * max_batch times describe's figure (plan.c lays it out per sample). */
static void test_gpt_estimate(void **state)
{
    (void)state;
    static const model_gpt_t G[] = {
        {.layers = 4, .heads = 4, .embd = 128, .block = 64, .vocab = 256, .bias = 1, .tie = 1},
        {.layers = 2, .heads = 2, .embd = 64, .block = 16, .vocab = 50, .bias = 1, .tie = 0},
        {.layers = 1, .heads = 8, .embd = 64, .block = 128, .vocab = 256, .bias = 1, .tie = 1},
        {.layers = 3, .heads = 2, .embd = 256, .block = 32, .vocab = 1000, .bias = 0, .tie = 1},
        {.layers = 2, .heads = 6, .embd = 192, .block = 256, .vocab = 300, .bias = 1, .tie = 1},
        {.layers = 2, .heads = 1, .embd = 32, .block = 8, .vocab = 5000, .bias = 1, .tie = 0},
        {.layers = 4, .heads = 4, .embd = 128, .block = 64, .vocab = 256, .dropout = 0.1f, .bias = 1, .tie = 1},
        {.layers = 2, .heads = 6, .embd = 192, .block = 256, .vocab = 300, .dropout = 0.2f, .bias = 1, .tie = 1},
        {.layers = 3, .heads = 2, .embd = 40, .block = 24, .vocab = 77, .bias = 1, .tie = 1},
    };
    for (size_t i = 0; i < sizeof G / sizeof G[0]; i++) {
        const model_gpt_t *g = &G[i];
        model_t *m = NULL;
        char err[256];
        if (model_create_gpt("gpt", g, 3, &m, err, sizeof err) != 0) fail_msg("%s", err);
        catalog_model_t d, e;
        model_describe(m, &d);
        assert_true((size_t)d.dacts_per_sample * 3 == m->plan->dact_floats);
        model_free(m);
        static job_spec_t s;
        memset(&s, 0, sizeof s);
        s.gpt.layers = g->layers, s.gpt.heads = g->heads, s.gpt.embd = g->embd, s.gpt.block_size = g->block;
        s.gpt.vocab_size = g->vocab, s.gpt.bias = g->bias, s.gpt.tie_embeddings = g->tie, s.gpt.dropout = g->dropout;
        memest_gpt_figures(&s, &e);
        printf("gpt %d x %d heads x %d, block %d, vocab %d: activations %ld (built %ld), their gradients %ld (%ld)\n",
               g->layers, g->heads, g->embd, g->block, g->vocab, e.acts_per_sample, d.acts_per_sample,
               e.dacts_per_sample, d.dacts_per_sample);
        if (!(e.acts_per_sample >= d.acts_per_sample && e.acts_per_sample <= 2 * d.acts_per_sample &&
              e.dacts_per_sample >= d.dacts_per_sample && e.dacts_per_sample <= 2 * d.dacts_per_sample))
            fail_msg("gpt %zu: the estimate's figures are not within [1, 2] x the built model's", i);
        if (e.params != d.params) fail_msg("gpt %zu: parameters %ld, built %ld", i, e.params, d.params);
    }
}

/* A model allocates the same at either precision but for the outputs it stores in bf16
 * (plan.h's act_bf16): parameters, buffers, the activation gradients, the saved
 * statistics, argmax and the workspace do not depend on the products' precision (bf16
 * rounds their operands), and the activation arena is smaller by half each such output
 * (give or take a float each for the alignment of the layer norms' statistics) and by the
 * outputs that share one slot (act_shared) but the largest: none in the built-in CNNs,
 * the GPT's layer norms and GELUs, and its attn.c_proj and mlp.c_proj in the slot. So
 * the memory estimate, the same at either precision (test_sim's
 * test_memest_bf16_is_fp32s), bounds a bf16 model's from above.
 * Built-ins and a GPT, created at MM_FP32 and at MM_BF16. */
static void test_bf16_allocates_as_fp32(void **state)
{
    (void)state;
    static const char *const NAMES[] = {"mlp", "lenet5", "cifar10_quick", "resnet20", "gpt"};
    const model_gpt_t g = {.layers = 2, .heads = 2, .embd = 32, .block = 16, .vocab = 256, .bias = 1, .tie = 1};
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        size_t f[2][7], half = 0, shared = 0, slot = 0, tri = 0;
        int marked = 0;
        for (int p = 0; p < 2; p++) {
            model_t *m = NULL;
            char err[256];
            mm_set_precision(p ? MM_BF16 : MM_FP32);
            int rc = strcmp(NAMES[i], "gpt") == 0 ? model_create_gpt("gpt", &g, 8, &m, err, sizeof err)
                                                  : model_create(NAMES[i], 8, &m, err, sizeof err);
            mm_set_precision(MM_FP32);
            if (rc != 0) fail_msg("%s: %s", NAMES[i], err);
            const size_t v[7] = {m->nparams,     m->nbuffers,  m->act_floats,       m->aux_floats,
                                 m->argmax_ints, m->ws_floats, m->plan->dact_floats};
            memcpy(f[p], v, sizeof v);
            for (int k = 0; p && k < m->nlayers; k++) {
                const layer_t *l = &m->layers[k];
                const size_t n = (size_t)m->max_batch * l->OC * l->OH * l->OW;
                if (model_layer_plan(m, k)->act_shared) shared += n, slot = n > slot ? n : slot;
                if (model_layer_plan(m, k)->act_bf16) half += n / 2, marked++;
                tri += model_plan_weights_floats(m, k); /* a fused attention's weights */
            }
            model_free(m);
        }
        /* a GPT's ln_1, attn.c_attn, attention's merge, ln_2, mlp.c_fc and GELU a block and
         * ln_f in bf16, attn.c_proj and mlp.c_proj in one slot, the attention's weights in
         * bf16 triangles beside */
        assert_int_equal(marked, strcmp(NAMES[i], "gpt") == 0 ? 6 * g.layers + 1 : 0);
        const size_t saved = half + shared - slot;
        if (f[1][2] + saved >= f[0][2] + tri && f[1][2] + saved <= f[0][2] + tri + (size_t)marked) f[1][2] = f[0][2];
        if (memcmp(f[0], f[1], sizeof f[0]) != 0)
            fail_msg("%s allocates differently at bf16: activations %zu floats (fp32 %zu), workspace %zu (%zu)",
                     NAMES[i], f[1][2], f[0][2], f[1][5], f[0][5]);
    }
}

/* A built-in network's head is sized to the data set's classes (torchvision's num_classes):
 * it trains, its figures follow, and a class count out of bounds is refused by number. An
 * imported model keeps its own width: another count is refused, naming both. */
static void test_builtin_head_takes_classes(void **state)
{
    (void)state;
    enum { B = 6, K = 4 };
    char err[256];
    model_t *m = NULL;
    if (model_create_classes("cifar10_quick", K, B, &m, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(m->num_classes, K);
    const tensor_info_t *w = &m->tensors[m->ntensors - 2], *b = &m->tensors[m->ntensors - 1];
    assert_string_equal(w->name, "fc2.weight");
    assert_int_equal(w->count, K * 64);
    assert_string_equal(b->name, "fc2.bias");
    assert_int_equal(b->count, K);
    model_init_params(m, 3);
    static float x[B * 3 * 32 * 32];
    int32_t y[B] = {0, 1, 2, 3, 3, 1};
    rng_t r;
    rng_seed(&r, 9);
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = rng_normal(&r);
    /* a loss near log(K): the softmax spans K classes, not 10 */
    float loss = model_forward(m, x, y, B, 1);
    assert_true(isfinite(loss) && loss > 0.5f * logf(K) && loss < 2.0f * logf(K));
    model_backward(m, x, y, B, 1.0f);
    model_free(m);

    /* bounds, and the catalog's own count for 0 */
    assert_int_equal(model_create_classes("resnet20", -1, B, &m, err, sizeof err), -1);
    assert_null(m);
    assert_string_equal(err, "model: resnet20 cannot be sized to -1 classes (1 to 65536)");
    assert_int_equal(model_create_classes("resnet20", 65537, B, &m, err, sizeof err), -1);
    assert_string_equal(err, "model: resnet20 cannot be sized to 65537 classes (1 to 65536)");
    if (model_create_classes("resnet20", 0, B, &m, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(m->num_classes, 10);
    model_free(m);

    /* an imported model's width is its own */
    catalog_model_t e;
    assert_int_equal(catalog_model_get("lenet5", &e), 0);
    snprintf(e.name, sizeof e.name, "net.onnx");
    e.source = CATALOG_ONNX;
    assert_int_equal(catalog_model_add(&e, err, sizeof err), -1);
    assert_string_equal(err, "model net.onnx: only a built-in network's head takes the data set's classes (head_in 84)");
    e.head_in = 0;
    e.classes = 100;
    assert_int_equal(catalog_model_add(&e, err, sizeof err), 0);
    catalog_model_t got;
    assert_int_equal(catalog_model_for_classes(&e, 4, &got, err, sizeof err), -1);
    assert_string_equal(err, "model: net.onnx has 100 outputs (classes), the data set has 4 classes: an imported "
                             "model keeps its own width");
    assert_int_equal(catalog_model_for_classes(&e, 100, &got, err, sizeof err), 0);
    assert_memory_equal(&got, &e, sizeof e);
    catalog_dataset_t ds;
    assert_int_equal(catalog_dataset_get("fashion-mnist", &ds), 0);
    assert_int_equal(catalog_pair_check(&e, &ds, err, sizeof err), -1);
    assert_string_equal(err, "model: net.onnx has 100 outputs (classes), dataset.name fashion-mnist has 10 classes");
    assert_int_equal(catalog_model_remove("net.onnx"), 0);
}

/* An entry added to the catalog without a builder in model/ (an imported graph, before
 * its importer builds it) is refused by name, with what is missing. */
static void test_catalog_entry_without_builder(void **state)
{
    (void)state;
    catalog_model_t e;
    assert_int_equal(catalog_model_get("lenet5", &e), 0);
    snprintf(e.name, sizeof e.name, "imported-net");
    e.source = CATALOG_ONNX;
    e.head_in = 0; /* an imported model has its own width */
    char err[256];
    assert_int_equal(catalog_model_add(&e, err, sizeof err), 0);
    model_t *m = NULL;
    assert_int_equal(model_create("imported-net", 4, &m, err, sizeof err), -1);
    assert_null(m);
    assert_non_null(strstr(err, "model imported-net: no builder for this onnx model"));
    assert_int_equal(catalog_model_remove("imported-net"), 0);
    assert_int_equal(model_create("imported-net", 4, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown model 'imported-net' (known: mlp, lenet5, cifar10_quick, resnet20)"));
}

/* model_clone: the same layer list, tensors and sizes in memory of its own, computing the
 * same logits from the same weights (the stand-in device of tests/fakecuda builds its
 * model so, never by name). */
static void test_model_clone(void **state)
{
    (void)state;
    enum { B = 3 };
    model_t *a = make("resnet20", B), *b = NULL;
    char err[256];
    assert_int_equal(model_clone(a, &b, err, sizeof err), 0);
    assert_int_equal(b->nlayers, a->nlayers);
    assert_int_equal(b->ntensors, a->ntensors);
    assert_true(b->layers != a->layers && b->tensors != a->tensors && b->params != a->params);
    assert_memory_equal(b->layers, a->layers, (size_t)a->nlayers * sizeof *a->layers);
    assert_memory_equal(b->tensors, a->tensors, (size_t)a->ntensors * sizeof *a->tensors);
    assert_int_equal(b->nparams, a->nparams);
    assert_int_equal(b->act_floats, a->act_floats);
    memcpy(b->params, a->params, a->nparams * sizeof(float));
    memcpy(b->buffers, a->buffers, a->nbuffers * sizeof(float));
    float x[B * 3 * 32 * 32];
    int32_t y[B] = {1, 2, 3};
    rng_t r;
    rng_seed(&r, 5);
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = rng_normal(&r);
    float la = model_forward(a, x, y, B, 0), lb = model_forward(b, x, y, B, 0);
    assert_true(la == lb);
    assert_memory_equal(model_logits(a), model_logits(b), B * 10 * sizeof(float));
    model_free(a);
    model_free(b);
}

/* The marks of how each layer runs (model_t's plan) are the model's own, apart from its
 * layers: a clone plans its copy of the list anew into a plan of its own (the same marks:
 * fused batch norms, set gradients; a GPT's view chains, causal products and fused
 * attention), and a change to one plan leaves the other model's as it was. */
/* The outputs a fused batch norm skips (its own, and a fused add's: the ReLU's output is
 * written instead) lie after every output a training step writes (the plan's
 * act_written_floats), and a step leaves them untouched, at either precision: the step's
 * pages hold none of them, and layer_profile's "activations a step writes" counts none. */
static void test_fused_outputs_apart(void **state)
{
    (void)state;
    enum { B = 2 };
    for (int k = 0; k < 2; k++) {
        mm_set_precision(k ? MM_BF16 : MM_FP32);
        model_t *m = make("resnet20", B);
        const size_t mark = m->plan->act_written_floats;
        int skipped = 0;
        for (int i = 0; i < m->nlayers; i++) {
            const layer_t *l = &m->layers[i];
            const layer_plan_t *p = model_layer_plan(m, i);
            const size_t n = (size_t)B * l->OC * l->OH * l->OW;
            if (p->fused_relu || p->fused_add) {
                skipped++;
                if (l->out_off < mark) fail_msg("layer %d's skipped output at %zu, before %zu", i, l->out_off, mark);
            } else if (l->out_off + n > mark)
                fail_msg("layer %d's written output ends at %zu, after %zu", i, l->out_off + n, mark);
        }
        assert_true(skipped >= 19 && mark < m->act_floats); /* 19 batch norms, 9 adds */
        float x[B * 3 * 32 * 32];
        int32_t y[B] = {3, 7};
        rng_t r;
        rng_seed(&r, 11);
        for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = rng_normal(&r);
        (void)model_forward(m, x, y, B, 1);
        model_backward(m, x, y, B, 1.0f);
        (void)model_forward(m, x, y, B, 0);
        for (size_t f = mark; f < m->act_floats; f++)
            if (m->acts[f] != 0.0f) fail_msg("float %zu of the skipped outputs was written", f);
        model_free(m);
    }
    mm_set_precision(MM_FP32);
}

static void test_plan_apart(void **state)
{
    (void)state;
    const model_gpt_t g = {.layers = 2, .heads = 2, .embd = 32, .block = 16, .vocab = 64, .bias = 1, .tie = 1};
    char err[256];
    for (int k = 0; k < 2; k++) {
        model_t *a = NULL, *b = NULL;
        if (k == 0) a = make("resnet20", 2);
        else assert_int_equal(model_create_gpt("gpt", &g, 2, &a, err, sizeof err), 0);
        assert_non_null(a->plan);
        assert_int_equal(model_clone(a, &b, err, sizeof err), 0);
        assert_true(b->plan != a->plan && b->plan->layers != a->plan->layers);
        int marks = 0;
        for (int i = 0; i < a->nlayers; i++) {
            const layer_plan_t *p = model_layer_plan(a, i), *q = model_layer_plan(b, i);
            assert_int_equal(p->fused_relu, q->fused_relu);
            assert_int_equal(p->fused_add, q->fused_add);
            assert_int_equal(p->grad_setter, q->grad_setter);
            assert_int_equal(p->grad_split, q->grad_split);
            assert_int_equal(p->chain, q->chain);
            assert_int_equal(p->chain_src, q->chain_src);
            assert_int_equal(p->causal_bmm, q->causal_bmm);
            assert_int_equal(p->attn, q->attn);
            marks += p->fused_relu + p->fused_add + (p->chain != VIEW_CHAIN_NONE) + (p->causal_bmm != 0);
        }
        assert_true(marks > 0);
        for (int i = 0; i < b->nlayers; i++) b->plan->layers[i].grad_setter = -2;
        for (int i = 0; i < a->nlayers; i++) assert_true(model_layer_plan(a, i)->grad_setter >= -1);
        model_free(b);
        model_free(a);
    }
}

/* Parameter groups (issue 44): resnet20's and lenet5's 1-D parameters (every bias, batch
 * norm's gamma "*.bn*.weight" and beta) are marked no_decay and nothing else is;
 * model_decay_run covers params exactly once in runs of one group (one run without
 * groups); and an AdamW or SGD step with weight decay and a zero gradient shrinks only
 * the decayed tensors. */
static void test_no_decay_groups(void **state)
{
    (void)state;
    static const char *const NAMES[] = {"resnet20", "lenet5"};
    for (size_t k = 0; k < sizeof NAMES / sizeof NAMES[0]; k++) {
        model_t *m = make(NAMES[k], 2);
        size_t exempt = 0;
        for (int t = 0; t < m->ntensors; t++) {
            const tensor_info_t *ti = &m->tensors[t];
            if (ti->is_buffer) {
                assert_int_equal(ti->no_decay, 0);
                continue;
            }
            const size_t len = strlen(ti->name);
            const int bias = len > 5 && strcmp(ti->name + len - 5, ".bias") == 0;
            const int gamma = strstr(ti->name, "bn") && len > 7 && strcmp(ti->name + len - 7, ".weight") == 0;
            if (ti->no_decay != (bias || gamma)) fail_msg("%s: %s no_decay %d", NAMES[k], ti->name, ti->no_decay);
            if (ti->no_decay) exempt += ti->count;
        }
        assert_true(exempt > 0 && exempt < m->nparams);
        for (int groups = 0; groups <= 1; groups++) {
            int ti = 0, nd, runs = 0, last = -1;
            size_t off, n, next = 0, seen_exempt = 0;
            while (model_decay_run(m, groups, &ti, &off, &n, &nd)) {
                assert_int_equal(off, next);
                assert_true(n > 0 && nd != last);
                next = off + n, last = nd, runs++;
                if (nd) seen_exempt += n;
            }
            assert_int_equal(next, m->nparams);
            assert_int_equal(seen_exempt, groups ? exempt : 0);
            if (!groups) assert_int_equal(runs, 1);
        }
        assert_int_equal(model_alloc_moment2(m), 0);
        float *before = malloc(m->nparams * sizeof *before), *g = calloc(m->nparams, sizeof *g);
        assert_true(before && g);
        memcpy(before, m->params, m->nparams * sizeof *before);
        /* AdamW: w * (1 - lr wd); sgd (no_decay "auto" with sgd): w - lr (wd w) */
        for (int adamw = 1; adamw >= 0; adamw--) {
            memcpy(m->params, before, m->nparams * sizeof *before);
            const optim_step_t o = {.adamw = adamw,
                                    .groups = 1,
                                    .h = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.5},
                                    .step = 1,
                                    .grad_scale = 1.0f};
            model_apply_optimizer(m, g, &o);
            for (int t = 0; t < m->ntensors; t++) {
                const tensor_info_t *ti = &m->tensors[t];
                if (ti->is_buffer) continue;
                for (size_t i = ti->offset; i < ti->offset + ti->count; i++) {
                    const float decayed = adamw ? before[i] * (float)(1.0 - 0.1 * 0.5)
                                                : before[i] - 0.1f * (0.0f + 0.5f * before[i]);
                    const float want = ti->no_decay ? before[i] : decayed;
                    if (m->params[i] != want)
                        fail_msg("%s (%s): %s[%zu] = %g after a zero-gradient step, want %g", NAMES[k],
                                 adamw ? "adamw" : "sgd", ti->name, i - ti->offset, m->params[i], want);
                }
            }
        }
        free(before);
        free(g);
        model_free(m);
    }
}

/* A second training step on the same batch gives the same gradients bit for bit, with
 * every activation gradient poisoned (NaN) in between: each one the backward reads is
 * zeroed by model_zero_dacts or written whole before it is read (grad_setter: the reader
 * whose backward runs first sets the gradient, the others add, and it is not zeroed). A
 * third step with no fusions (the plan's fused_relu, fused_add: every layer on its own
 * kernels) gives the same loss, logits and gradients, and a fourth with no setters either
 * (every gradient zeroed, every reader adding) the same bits again: setting is
 * value + 0.0f, what adding into zeros gives. */
static void check_overwrites(model_t *m, int B)
{
    size_t nx = (size_t)B;
    for (int d = 0; d < m->in_shape.rank; d++) nx *= (size_t)m->in_shape.dims[d];
    float *x = malloc(nx * sizeof(float)), *g1 = malloc(m->nparams * sizeof(float));
    float *logits = malloc((size_t)B * m->num_classes * sizeof(float));
    assert_true(x && g1 && logits && B <= 2);
    int32_t y[2] = {3 % m->num_classes, 7 % m->num_classes};
    rng_t r;
    rng_seed(&r, 9);
    for (size_t i = 0; i < nx; i++) x[i] = rng_normal(&r);
    const float loss = model_forward(m, x, y, B, 1);
    memcpy(logits, model_logits(m), (size_t)B * m->num_classes * sizeof(float));
    model_backward(m, x, y, B, 1.0f);
    memcpy(g1, m->grads, m->nparams * sizeof(float));
    for (size_t i = 0; i < m->plan->dact_floats; i++) m->dacts[i] = NAN;
    model_forward(m, x, y, B, 1);
    model_backward(m, x, y, B, 1.0f);
    assert_memory_equal(g1, m->grads, m->nparams * sizeof(float));
    /* the fused kernels give the bits of the layers they stand for */
    for (int i = 0; i < m->nlayers; i++) m->plan->layers[i].fused_relu = m->plan->layers[i].fused_add = 0;
    for (size_t i = 0; i < m->plan->dact_floats; i++) m->dacts[i] = NAN;
    assert_true(model_forward(m, x, y, B, 1) == loss);
    assert_memory_equal(logits, model_logits(m), (size_t)B * m->num_classes * sizeof(float));
    model_backward(m, x, y, B, 1.0f);
    assert_memory_equal(g1, m->grads, m->nparams * sizeof(float));
    for (int i = 0; i < m->nlayers; i++) {
        m->plan->layers[i].grad_setter = -1;
        m->plan->layers[i].grad_split = 0;
    }
    for (size_t i = 0; i < m->plan->dact_floats; i++) m->dacts[i] = NAN;
    model_forward(m, x, y, B, 1);
    model_backward(m, x, y, B, 1.0f);
    assert_memory_equal(g1, m->grads, m->nparams * sizeof(float));
    free(x);
    free(g1);
    free(logits);
}

/* Layer j's gradient's life in backward steps, [*lo, dact_first[j]]: from its last reader's
 * backward down to its own, or to a fused kernel's that reads it there (a batch norm or
 * residual add of fused_relu reads its ReLU's, a batch norm of fused_add the ReLU's after
 * its add) */
static int dact_lo(const model_t *m, int j)
{
    int lo = j;
    for (int k = 0; k < j; k++) {
        const layer_plan_t *kp = model_layer_plan(m, k);
        if ((kp->fused_relu && !kp->fused_add && k + 1 == j) || (kp->fused_add && k + 2 == j)) lo = k < lo ? k : lo;
    }
    return lo;
}

/* The activation gradients' arena of models with fused kernels, planned by liveness: smaller
 * than one slot per layer, no two gradients sharing a float while both live, and the
 * gradients of one private slot per layer (the forward's offsets) bit for bit, its floats
 * NaN until written. */
static void test_dact_plan_fused(void **state)
{
    (void)state;
    enum { B = 2 };
    static const char *const names[] = {"resnet20", "cifar10_quick"};
    for (size_t t = 0; t < sizeof names / sizeof names[0]; t++) {
        model_t *m = make(names[t], B);
        const int n = m->nlayers;
        int fused = 0, shared = 0;
        for (int i = 0; i < n; i++) fused += m->plan->layers[i].fused_relu || m->plan->layers[i].fused_add;
        assert_true(fused > 0 || t > 0);
        printf("  %s: gradient arena %zu floats, one slot per layer %zu\n", names[t], m->plan->dact_floats,
               m->act_floats);
        for (int i = 0; i < n; i++) {
            const size_t ni = (size_t)B * m->layers[i].OC * m->layers[i].OH * m->layers[i].OW;
            for (int j = i + 1; j < n; j++) {
                const size_t nj = (size_t)B * m->layers[j].OC * m->layers[j].OH * m->layers[j].OW;
                if (!ni || !nj || m->plan->dact_off[i] + ni <= m->plan->dact_off[j] ||
                    m->plan->dact_off[j] + nj <= m->plan->dact_off[i])
                    continue;
                shared++;
                if (!(m->plan->dact_first[i] < dact_lo(m, j) || m->plan->dact_first[j] < dact_lo(m, i)))
                    fail_msg("%s: layers %d and %d share gradient memory while both live", names[t], i, j);
            }
        }
        assert_true(shared > 0);
        assert_true(m->plan->dact_floats < m->act_floats);
        size_t nx = B;
        for (int d = 0; d < m->in_shape.rank; d++) nx *= (size_t)m->in_shape.dims[d];
        float *x = malloc(nx * sizeof(float)), *g1 = malloc(m->nparams * sizeof(float));
        float *own = malloc(m->act_floats * sizeof(float));
        size_t *offs = malloc((size_t)n * sizeof *offs);
        assert_true(x && g1 && own && offs);
        int32_t y[B] = {3, 7};
        rng_t r;
        rng_seed(&r, 11);
        for (size_t i = 0; i < nx; i++) x[i] = rng_normal(&r);
        for (size_t i = 0; i < m->plan->dact_floats; i++) m->dacts[i] = NAN;
        model_forward(m, x, y, B, 1);
        model_backward(m, x, y, B, 1.0f);
        memcpy(g1, m->grads, m->nparams * sizeof(float));
        float *planned = m->dacts;
        memcpy(offs, m->plan->dact_off, (size_t)n * sizeof *offs);
        for (int i = 0; i < n; i++) m->plan->dact_off[i] = m->layers[i].out_off;
        for (size_t k = 0; k < m->act_floats; k++) own[k] = NAN;
        m->dacts = own;
        model_forward(m, x, y, B, 1);
        model_backward(m, x, y, B, 1.0f);
        if (memcmp(g1, m->grads, m->nparams * sizeof(float)) != 0)
            fail_msg("%s: the planned gradient arena gives other gradients than one slot per layer", names[t]);
        m->dacts = planned;
        memcpy(m->plan->dact_off, offs, (size_t)n * sizeof *offs);
        free(x), free(g1), free(own), free(offs);
        model_free(m);
    }
}

/* One attention block as the ViT importer lays it out: a fused q, k, v projection sliced
 * three ways, each reshaped to (T, heads, D) and transposed to (heads, T, D) (k to (heads,
 * D, T)), Q K^T, softmax, times V, transposed and reshaped back, a projection and a
 * residual add; a ReLU in front gives the input a gradient. T 5, 2 heads of 6. */
static int build_attention(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    const model_shape_t heads = {.rank = 3, .dims = {5, 2, 6}}, flat = {.rank = 2, .dims = {5, 12}};
    static const int thd[3] = {1, 0, 2}, tdh[3] = {1, 2, 0};
    const int x = model_build_relu(b, -1);
    const int qkv = model_build_linear(b, x, 36, "qkv.weight");
    int part[3];
    for (int i = 0; i < 3; i++)
        part[i] = model_build_reshape(b, model_build_slice(b, qkv, 1, 12 * i, 12 * (i + 1), 1), &heads);
    const int q = model_build_transpose(b, part[0], thd), k = model_build_transpose(b, part[1], tdh);
    const int v = model_build_transpose(b, part[2], thd);
    const int a = model_build_softmax(b, LAYER_SOFTMAX, model_build_bmm(b, q, k), 2);
    const int o = model_build_reshape(b, model_build_transpose(b, model_build_bmm(b, a, v), thd), &flat);
    const int y = model_build_add(b, model_build_linear(b, o, 12, "proj.weight"), x);
    model_build_fc(b, y, 10, "head.weight", "head.bias");
    return 0;
}

/* The broadcasting rows as issue 44's networks use them: attention's q / sqrt(D) (a frozen
 * scalar constant), a positional embedding (a batch-less parameter), ConvNeXt's layer scale
 * (a parameter of (T, 1) times the activation) and a Sub of two activations, the input ReLU
 * read twice. T 5, width 12. */
static int build_binary_rows(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    const model_shape_t one = {.rank = 0}, pos = {.rank = 2, .dims = {5, 12}}, col = {.rank = 2, .dims = {5, 1}};
    const int x = model_build_relu(b, -1);
    const int scale = model_build_const(b, &one, "scale", 1);
    const int q = model_build_binary(b, LAYER_DIV, x, scale);
    const int p = model_build_binary(b, LAYER_BADD, q, model_build_const(b, &pos, "pos", 0));
    const int gamma = model_build_const(b, &col, "gamma", 0);
    const int d = model_build_binary(b, LAYER_SUB, model_build_binary(b, LAYER_BMUL, gamma, p), x);
    model_build_fc(b, d, 10, "head.weight", "head.bias");
    return 0;
}

/* A Linear's (5, 12) output read by Slices of its last axis, the ranges ctx's (start, end)
 * pairs ending at a negative start, their outputs concatenated back (order kept) for the
 * classifier: grad_split when they cover the axis once. */
static int build_split(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    const int *r = ctx;
    const int x = model_build_linear(b, model_build_relu(b, -1), 12, "proj.weight");
    int y = model_build_slice(b, x, 1, r[0], r[1], 1);
    for (int k = 2; r[k] >= 0; k += 2)
        y = model_build_concat_axis(b, y, model_build_slice(b, x, 1, r[k], r[k + 1], 1), 1);
    model_build_fc(b, y, 10, "head.weight", "head.bias");
    return 0;
}

static void test_backward_overwrites_gradients(void **state)
{
    (void)state;
    enum { B = 2 };
    static const char *const names[] = {"resnet20", "lenet5", "cifar10_quick"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        model_t *m = make(names[k], B);
        int set = 0;
        for (int i = 0; i < m->nlayers; i++) set += m->plan->layers[i].grad_setter >= 0;
        /* ResNet-20: its 19 convolutions (each feeds a batch norm), its 19 batch norms
         * (a ReLU or a residual add reads each), 9 residual adds (each feeds a ReLU), the
         * 9 ReLUs inside the blocks (each feeds a convolution), 7 of the 10 ReLUs that
         * end the stem and the blocks: not the two a stride-2 shortcut reads, nor the last
         * (global average pooling reads it), and the pooling (the classifier reads it) */
        if (k == 0) assert_int_equal(set, 64);
        /* and it runs 7 batch norm + residual add + ReLU triples fused (the 9 block ends
         * but the two with a stride-2 shortcut, which run unfused) and 10 batch norm + ReLU
         * pairs (the stem's and the blocks' first) */
        int fused_add = 0, fused_relu = 0;
        for (int i = 0; i < m->nlayers; i++) {
            fused_add += m->plan->layers[i].fused_add;
            fused_relu += m->layers[i].kind == LAYER_BN && m->plan->layers[i].fused_relu;
        }
        if (k == 0) {
            assert_int_equal(fused_add, 7);
            assert_int_equal(fused_relu, 10);
        }
        check_overwrites(m, B);
        model_free(m);
    }
    /* the attention block: every gradient but the fused projection's (three Slices write a
     * third of it each: grad_split) is set: the 3 Slices' (by Reshapes), the 3 Reshapes' and the softmax's (by
     * Transposes and a MatMul), the 3 Transposes' and the (heads, T, D) product's (by
     * MatMuls and a Transpose), the scores' (by the softmax: 17 since it writes its input
     * gradient, 16 before), the last Transpose's (by a Reshape), the Reshape's (by the
     * projection), the projection's and the input ReLU's (by the residual add) and the
     * add's (by the classifier) */
    const model_shape_t in = {.rank = 2, .dims = {5, 12}};
    model_t *m = NULL;
    char err[256];
    assert_int_equal(model_create_custom_shape("attn", &in, 10, B, build_attention, NULL, &m, err, sizeof err), 0);
    model_init_params(m, 5);
    int set = 0;
    for (int i = 0; i < m->nlayers; i++) set += m->plan->layers[i].grad_setter >= 0;
    assert_int_equal(set, 17);
    int split = 0;
    for (int i = 0; i < m->nlayers; i++)
        if (m->plan->layers[i].grad_split) split = split ? -1 : m->layers[i].kind == LAYER_LINEAR;
    assert_int_equal(split, 1);
    check_overwrites(m, B);
    model_free(m);
    /* the broadcasting rows: the input ReLU's gradient set by the Sub (its last reader; the
     * Div adds), the Div's, the positional add's and the layer scale's by their one reader,
     * the Sub's by the classifier; the constants' never (summed over the batch) */
    assert_int_equal(model_create_custom_shape("rows", &in, 10, B, build_binary_rows, NULL, &m, err, sizeof err), 0);
    model_init_params(m, 6);
    for (int i = 0; i < m->nlayers; i++)
        if (m->layers[i].kind == LAYER_CONST && m->layers[i].op.cnst.frozen) m->buffers[m->layers[i].w_off] = 4.0f;
    set = 0;
    for (int i = 0; i < m->nlayers; i++) set += m->plan->layers[i].grad_setter >= 0;
    assert_int_equal(set, 5);
    check_overwrites(m, B);
    model_free(m);
    /* Slices that cover the axis once, out of order, split the Linear's gradient; a gap, an
     * overlap or a part twice do not (it is zeroed and each adds) */
    static const int ranges[][8] = {
        {4, 12, 0, 4, -1}, {0, 3, 3, 7, 7, 12, -1}, {0, 4, 5, 12, -1}, {0, 6, 4, 12, -1}, {0, 6, 0, 6, 6, 12, -1}};
    for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++) {
        assert_int_equal(model_create_custom_shape("split", &in, 10, B, build_split, (void *)ranges[k], &m, err,
                                                   sizeof err),
                         0);
        model_init_params(m, 7);
        assert_int_equal(m->plan->layers[1].grad_split, k < 2);
        check_overwrites(m, B);
        model_free(m);
    }
}

/* ---- N-D shapes (issue 43) ---- */

/* input (2, 3, 2, 2, 2) -> ReLU -> batch norm -> concat with the ReLU -> head (3 classes) */
static int build_nd(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    static const char *const names[4] = {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"};
    int x = model_build_relu(b, -1);
    int y = model_build_bn(b, x, names);
    y = model_build_concat(b, y, x);
    model_build_fc(b, y, 3, "fc.weight", "fc.bias");
    return 0;
}

/* a convolution reading a rank-4 sample (a volume): refused, not folded into an image */
static int build_nd_conv(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    const conv2d_desc_t g = {.OC = 2, .KH = 1, .KW = 1, .sH = 1, .sW = 1, .dH = 1, .dW = 1, .groups = 1};
    model_build_fc(b, model_build_conv(b, -1, &g, 0, "c.weight", NULL), 3, "fc.weight", "fc.bias");
    return 0;
}

/* two inputs of different ranks (the same element count) are neither concatenated nor added */
static int build_nd_mismatch(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    const int concat = *(const int *)ctx == 0;
    int x = model_build_relu(b, -1);
    int f = model_build_fc(b, x, 24, "f.weight", "f.bias"); /* rank 1: (24) */
    int y = concat ? model_build_concat(b, x, f) : model_build_add(b, x, f);
    model_build_fc(b, y, 3, "fc.weight", "fc.bias");
    return 0;
}

static void test_nd_shapes(void **state)
{
    (void)state;
    char err[256], t[64];
    const model_shape_t in = {.rank = 5, .dims = {2, 3, 2, 2, 2}};
    model_t *m = NULL;
    assert_int_equal(model_create_custom_shape("nd", &in, 3, 4, build_nd, NULL, &m, err, sizeof err), 0);
    /* the input's folding: channels, then H, then the rest */
    assert_int_equal(m->C, 2);
    assert_int_equal(m->H, 3);
    assert_int_equal(m->W, 8);
    assert_string_equal(model_shape_text(&m->layers[0].shape, t, sizeof t), "(2, 3, 2, 2, 2)");
    /* batch norm: channels are dim 0, its statistics per channel over the rest */
    assert_int_equal(m->layers[1].C, 2);
    assert_int_equal(m->tensors[0].count, 2);
    assert_string_equal(model_shape_text(&m->layers[2].shape, t, sizeof t), "(4, 3, 2, 2, 2)");
    assert_int_equal(m->layers[2].OC * m->layers[2].OH * m->layers[2].OW, 96);
    assert_string_equal(model_shape_text(&m->layers[3].shape, t, sizeof t), "(3)");
    /* the batch norm against its definition on a training batch, channel by channel */
    model_init_params(m, 7);
    float x[4 * 48];
    int32_t y[4] = {0, 1, 2, 0};
    for (int i = 0; i < 4 * 48; i++) x[i] = (float)((i * 37) % 11) - 5.0f;
    model_forward(m, x, y, 4, 1);
    const float *bn = m->acts + m->layers[1].out_off;
    for (int c = 0; c < 2; c++) {
        double mean = 0, var = 0;
        for (int n = 0; n < 4; n++)
            for (int k = 0; k < 24; k++) mean += x[n * 48 + c * 24 + k] > 0 ? x[n * 48 + c * 24 + k] : 0;
        mean /= 96;
        for (int n = 0; n < 4; n++)
            for (int k = 0; k < 24; k++) {
                const double v = (x[n * 48 + c * 24 + k] > 0 ? x[n * 48 + c * 24 + k] : 0) - mean;
                var += v * v;
            }
        var /= 96;
        for (int n = 0; n < 4; n++)
            for (int k = 0; k < 24; k++) {
                const double v = x[n * 48 + c * 24 + k] > 0 ? x[n * 48 + c * 24 + k] : 0;
                assert_true(fabs(bn[n * 48 + c * 24 + k] - (v - mean) / sqrt(var + BN_EPS)) < 1e-4);
            }
    }
    /* exported with its N-D input and imported again: the same logits bit for bit */
    uint8_t *onnx = NULL;
    size_t len = 0;
    assert_int_equal(onnx_export_layers(m, &onnx, &len, err, sizeof err), 0);
    model_t *back = NULL;
    assert_int_equal(onnx_import_buffer(onnx, len, "nd-back", 4, &back, err, sizeof err), 0);
    assert_true(model_shape_equal(&back->in_shape, &in));
    memcpy(back->params, m->params, m->nparams * sizeof(float));
    memcpy(back->buffers, m->buffers, m->nbuffers * sizeof(float));
    model_forward(m, x, y, 4, 0);
    model_forward(back, x, y, 4, 0);
    assert_memory_equal(model_logits(m), model_logits(back), 4 * 3 * sizeof(float));
    free(onnx);
    model_free(back);
    model_free(m);

    /* rank 0: a scalar per sample */
    const model_shape_t scalar = {.rank = 0};
    assert_int_equal(model_create_custom_shape("nd0", &scalar, 3, 2, build_nd, NULL, &m, err, sizeof err), -1);
    /* (concat needs an axis: a rank-0 sample has none) */
    const model_shape_t vec = {.rank = 1, .dims = {5}};
    assert_int_equal(model_create_custom_shape("nd1", &vec, 3, 2, build_nd, NULL, &m, err, sizeof err), 0);
    assert_string_equal(model_shape_text(&m->layers[2].shape, t, sizeof t), "(10)");
    model_free(m);

    /* refusals: a convolution on a volume, rank 6, a dimension of 0, mismatched ranks */
    const model_shape_t vol = {.rank = 4, .dims = {3, 4, 5, 5}};
    assert_int_equal(model_create_custom_shape("ndc", &vol, 3, 2, build_nd_conv, NULL, &m, err, sizeof err), -1);
    assert_string_equal(err, "model ndc: layer 0 (conv) cannot take its input (3, 4, 5, 5) (its geometry refused)");
    const model_shape_t r6 = {.rank = 6}, zero = {.rank = 2, .dims = {3, 0}};
    assert_int_equal(model_create_custom_shape("nd6", &r6, 3, 2, build_nd, NULL, &m, err, sizeof err), -1);
    assert_string_equal(err, "model nd6: input shape (rank 0 to 5) and classes must not be negative");
    /* an empty input computes nothing: its layers are empty up to the first that would read
     * it into a non-empty output, which is refused */
    assert_int_equal(model_create_custom_shape("ndz", &zero, 3, 2, build_nd, NULL, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "reads an empty tensor (a dimension of 0) into (3): not supported"));
    const model_shape_t r2 = {.rank = 2, .dims = {4, 6}};
    for (int k = 0; k < 2; k++)
        assert_int_equal(model_create_custom_shape("ndm", &r2, 3, 2, build_nd_mismatch, &k, &m, err, sizeof err), -1);
    assert_null(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts),
        cmocka_unit_test(test_builtin_head_takes_classes),
        cmocka_unit_test(test_backward_overwrites_gradients),
        cmocka_unit_test(test_dact_plan_fused),
        cmocka_unit_test(test_fd_mlp),
        cmocka_unit_test(test_fd_lenet5),
        cmocka_unit_test(test_fd_cifar10_quick),
        cmocka_unit_test(test_fd_resnet20),
        cmocka_unit_test(test_catalog_matches_models),
        cmocka_unit_test(test_bf16_allocates_as_fp32),
        cmocka_unit_test(test_gpt_estimate),
        cmocka_unit_test(test_catalog_entry_without_builder),
        cmocka_unit_test(test_model_clone),
        cmocka_unit_test(test_plan_apart),
        cmocka_unit_test(test_fused_outputs_apart),
        cmocka_unit_test(test_no_decay_groups),
        cmocka_unit_test(test_nd_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
