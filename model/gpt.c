/* model/gpt.c - see gpt.h. */
#include "gpt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rng.h"

typedef struct {
    const model_gpt_t *g;
} gpt_ctx_t;

/* "transformer.h.<i>.<part>" into out (the builder fails on a cut name) */
static const char *block_name(char *out, size_t len, int i, const char *part)
{
    snprintf(out, len, "transformer.h.%d.%s", i, part);
    return out;
}

/* A linear layer over the last axis of in: torch's nn.Linear (weight (OUT, IN)), its bias
 * when the model has them. */
static int linear(model_builder_t *b, const model_gpt_t *g, int in, int OUT, int i, const char *part)
{
    char w[MODEL_TENSOR_NAME_MAX], bn[MODEL_TENSOR_NAME_MAX], p[64];
    snprintf(p, sizeof p, "%s.weight", part);
    int li = model_build_linear_layout(b, in, OUT, GEMM_W_OUT_IN, block_name(w, sizeof w, i, p));
    if (g->bias) {
        snprintf(p, sizeof p, "%s.bias", part);
        li = model_build_fc_bias(b, li, block_name(bn, sizeof bn, i, p));
    }
    return li;
}

static int layernorm(model_builder_t *b, int in, int i, const char *part)
{
    char w[MODEL_TENSOR_NAME_MAX], bn[MODEL_TENSOR_NAME_MAX], p[64];
    snprintf(p, sizeof p, "%s.weight", part);
    block_name(w, sizeof w, i, p);
    snprintf(p, sizeof p, "%s.bias", part);
    block_name(bn, sizeof bn, i, p);
    return model_build_layernorm(b, in, 1, 1e-5f, w, bn);
}

static int dropout(model_builder_t *b, const model_gpt_t *g, int in)
{
    return g->dropout > 0.0f ? model_build_elementwise(b, LAYER_DROPOUT, in, g->dropout) : in;
}

/* One head split of (T, E): (T, H, D) moved to perm's order */
static int heads_of(model_builder_t *b, const model_gpt_t *g, int in, const int perm[3])
{
    const int T = g->block, H = g->heads, D = g->embd / g->heads;
    const model_shape_t s = {.rank = 3, .dims = {T, H, D}};
    return model_build_transpose(b, model_build_reshape(b, in, &s), perm);
}

/* Causal self-attention of x (T, E): q, k, v from one projection, split by three slices. */
static int attention(model_builder_t *b, const model_gpt_t *g, int x, int i)
{
    const int E = g->embd, T = g->block;
    static const int HTD[3] = {1, 0, 2}, HDT[3] = {1, 2, 0};
    const int qkv = linear(b, g, x, 3 * E, i, "attn.c_attn");
    const int q = heads_of(b, g, model_build_slice(b, qkv, 1, 0, E, 1), HTD);
    const int k = heads_of(b, g, model_build_slice(b, qkv, 1, E, 2 * E, 1), HDT);
    const int v = heads_of(b, g, model_build_slice(b, qkv, 1, 2 * E, 3 * E, 1), HTD);
    int att = model_build_causal_softmax(b, model_build_bmm(b, q, k), 1.0f / sqrtf((float)(E / g->heads)));
    att = dropout(b, g, att);
    const int y = model_build_transpose(b, model_build_bmm(b, att, v), HTD); /* (T, H, D) */
    const model_shape_t te = {.rank = 2, .dims = {T, E}};
    return dropout(b, g, linear(b, g, model_build_reshape(b, y, &te), E, i, "attn.c_proj"));
}

static int mlp(model_builder_t *b, const model_gpt_t *g, int x, int i)
{
    const int h = model_build_unary(b, LAYER_GELU, linear(b, g, x, 4 * g->embd, i, "mlp.c_fc"), 0.0f);
    return dropout(b, g, linear(b, g, h, g->embd, i, "mlp.c_proj"));
}

static int build_gpt(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    const model_gpt_t *g = ((const gpt_ctx_t *)ctx)->g;
    const int wte = model_build_embed(b, -1, g->vocab, g->embd, "transformer.wte.weight");
    const model_shape_t pos = {.rank = 2, .dims = {g->block, g->embd}};
    int x = model_build_binary(b, LAYER_BADD, wte, model_build_const(b, &pos, "transformer.wpe.weight", 0));
    x = dropout(b, g, x);
    for (int i = 0; i < g->layers; i++) {
        x = model_build_add(b, x, attention(b, g, layernorm(b, x, i, "ln_1"), i));
        x = model_build_add(b, x, mlp(b, g, layernorm(b, x, i, "ln_2"), i));
    }
    x = model_build_layernorm(b, x, 1, 1e-5f, "transformer.ln_f.weight", "transformer.ln_f.bias");
    if (g->tie) model_build_linear_tied(b, x, wte);
    else model_build_linear_layout(b, x, g->vocab, GEMM_W_OUT_IN, "lm_head.weight");
    return 0;
}

/* The field out of range, or NULL. */
static const char *gpt_bad_field(const model_gpt_t *g)
{
    if (g->layers < 1 || g->layers > GPT_MAX_LAYERS) return "layers";
    if (g->heads < 1 || g->heads > GPT_MAX_HEADS) return "heads";
    if (g->embd < 1 || g->embd > GPT_MAX_EMBD || g->embd % g->heads != 0) return "embd";
    if (g->block < 1 || g->block > GPT_MAX_BLOCK) return "block_size";
    if (g->vocab < 1 || g->vocab > GPT_MAX_VOCAB) return "vocab_size";
    if (!(g->dropout >= 0.0f && g->dropout < 1.0f)) return "dropout";
    return NULL;
}

int model_create_gpt(const char *name, const model_gpt_t *g, int max_batch, model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *bad = gpt_bad_field(g);
    if (bad) {
        snprintf(err, errlen,
                 "model.gpt.%s: out of range (layers 1..%d, heads 1..%d, embd 1..%d and a multiple of heads, "
                 "block_size 1..%d, vocab_size 1..%d, dropout in [0, 1))",
                 bad, GPT_MAX_LAYERS, GPT_MAX_HEADS, GPT_MAX_EMBD, GPT_MAX_BLOCK, GPT_MAX_VOCAB);
        return -1;
    }
    gpt_ctx_t ctx = {.g = g};
    const model_shape_t in = {.rank = 1, .dims = {g->block}};
    return model_create_custom_shape(name, &in, g->vocab, max_batch, build_gpt, &ctx, out, err, errlen);
}

static int ends_with(const char *s, const char *tail)
{
    const size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

void model_gpt_init(model_t *m, int layers, uint64_t seed)
{
    rng_t r;
    rng_seed(&r, seed);
    const float proj_std = 0.02f / sqrtf(2.0f * (float)(layers > 0 ? layers : 1));
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *ti = &m->tensors[t];
        if (ti->is_buffer) continue;
        float *w = m->params + ti->offset;
        const int norm = strstr(ti->name, ".ln_") != NULL || strstr(ti->name, "ln_f.") != NULL;
        if (ends_with(ti->name, ".bias")) memset(w, 0, ti->count * sizeof *w);
        else if (norm)
            for (size_t k = 0; k < ti->count; k++) w[k] = 1.0f;
        else {
            const float sd = ends_with(ti->name, "c_proj.weight") ? proj_std : 0.02f;
            for (size_t k = 0; k < ti->count; k++) w[k] = sd * rng_normal(&r);
        }
    }
    model_zero_state(m);
}
