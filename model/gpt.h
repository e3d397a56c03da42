/* model/gpt.h - the built-in language model: GPT-2's architecture (nanoGPT's model.py) built
 * through the same model builder as imported graphs.
 *
 * A sample is a window of block token ids (float-coded, exact below 2^24), the output its
 * (block, vocab) logits, one row per position (model_t's positions = block): token and
 * learned position embeddings, `layers` pre-norm blocks (LayerNorm, causal self-attention of
 * `heads` heads, residual; LayerNorm, a GELU MLP 4x wide, residual), a last LayerNorm and
 * the head onto the vocabulary, which reads the token embedding's table when tie (both
 * gradients summed into it). Tensor names are nanoGPT's state_dict keys
 * ("transformer.h.0.attn.c_attn.weight"), so a torch module of the same shape loads them.
 */
#ifndef PACER_GPT_H
#define PACER_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

typedef struct {
    int layers, heads, embd; /* embd a multiple of heads */
    int block;               /* the window: positions per sample */
    int vocab;
    float dropout; /* after the embeddings, the attention weights, each residual branch */
    int bias;      /* 1: the linear layers have biases (the layer norms always do) */
    int tie;       /* 1: the head's weight is the token embedding's table */
} model_gpt_t;

/* Bounds of each field, checked by model_create_gpt (the job spec's rows repeat them). */
#define GPT_MAX_LAYERS 96
#define GPT_MAX_HEADS 128
#define GPT_MAX_EMBD 16384
#define GPT_MAX_BLOCK 8192
#define GPT_MAX_VOCAB 1048576

/* A GPT of g's shape named name, for batches of up to max_batch windows. 0, or -1 with err
 * naming the field that is out of range (or out of memory). */
int model_create_gpt(const char *name, const model_gpt_t *g, int max_batch, model_t **out, char *err, size_t errlen);

/* GPT-2's initialisation, drawn from seed: every linear weight and both embeddings
 * normal(0, 0.02), the residual projections' (attn.c_proj, mlp.c_proj) normal(0, 0.02 /
 * sqrt(2 layers)), biases 0, layer norms weight 1 and bias 0. Zeroes the optimizer state. */
void model_gpt_init(model_t *m, int layers, uint64_t seed);

#endif
