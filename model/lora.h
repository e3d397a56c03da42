/* model/lora.h - low-rank adapters (LoRA, Hu et al. 2021) as a rewrite of a model's graph.
 *
 * A job's lora names matrix products by their weights' names (globs, common/freeze.h's
 * list: the built-in GPT's nanoGPT names, an imported model's initializer names of its
 * Gemm and MatMul weights). After each such product y = x W' (a LAYER_FC or LAYER_LINEAR
 * whose weight no other layer reads: a tied head is no target) the rewrite adds a path of
 * existing layers beside it,
 *
 *     x -> Dropout(dropout) -> A (rank, IN) -> B (OUT, rank), scaled by alpha / rank -> + y
 *
 * (the Dropout only where dropout > 0, the identity at evaluation; the scale is B's
 * product's gemm alpha), so forward, backward, the GPU and checkpoints need nothing of
 * their own: A and B are ordinary parameter tensors, appended after every tensor of the
 * source model, named as PEFT names its modules' (`<W's name without .weight>.lora_A.weight`,
 * `.lora_B.weight`). The caller freezes everything else (tensor_info_t's no_update).
 *
 * Going back (exports, generation): model_lora_base replays the graph without the adapters,
 * the source model's tensors at their offsets, and with merge their weights W + (alpha /
 * rank) B A (in W's layout, over the product's own alpha), computed in double and rounded
 * once.
 */
#ifndef PACER_LORA_H
#define PACER_LORA_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

#define LORA_MAX_RANK 4096

typedef struct {
    int rank;            /* 1 .. LORA_MAX_RANK */
    float alpha;         /* > 0, finite: the adapters' output is scaled by alpha / rank */
    float dropout;       /* [0, 1): of the adapter's input, in training only */
    const char *targets; /* the globs, '\n'-separated (common/freeze.h); each must match */
} lora_opts_t;

/* One adapter: tensor indices of the product's weight W and of A and B, W's layout and
 * the product's own alpha, IN and OUT; the product's layer and the Add that sums the
 * adapter into its output (the layers between are the adapter's). */
typedef struct {
    int weight, a, b;
    gemm_layout_t layout;
    float w_alpha;
    int in, out;
    int product, add;
} lora_adapter_t;

/* model_t's lora */
typedef struct model_lora {
    int rank;
    float alpha, scale; /* scale = alpha / rank */
    /* the source model's tensors are the first base_tensors of the model's, its params
     * and buffers the first base_params and base_buffers floats */
    int base_tensors;
    size_t base_params, base_buffers;
    int n;
    lora_adapter_t *ad;
} model_lora_t;

/* The model of base's graph with an adapter after each product that o's targets name, base's
 * weights copied (A and B zero until model_lora_init), its dropout seed, step and label
 * smoothing taken. 0, or -1 with err: a glob that matches no product's weight (named, with
 * some that exist), an adapter's name too long, out of memory. */
int model_lora_apply(const model_t *base, const lora_opts_t *o, model_t **out, char *err, size_t errlen);
/* PEFT's initialisation (reset_lora_parameters): each A Kaiming-uniform with a = sqrt(5),
 * U(-1 / sqrt(IN), 1 / sqrt(IN)), drawn from seed; each B zero. */
void model_lora_init(model_t *m, uint64_t seed);
/* Whether tensor t of m is an adapter's (A or B). */
int model_lora_is_adapter(const model_t *m, int t);
/* Per tensor of m (m->ntensors flags into is_target): 1 for the weight of a matrix product
 * an adapter may take (what lora.targets may name: a LAYER_FC's or LAYER_LINEAR's weight no
 * other layer reads), else 0. pacer-worker --check-onnx lists them for the coordinator. */
void model_lora_targetable(const model_t *m, unsigned char *is_target);
/* m's source model (its graph without the adapters) for batches of up to max_batch, its
 * weights m's, merged (W + scale B A) when merge. 0, or -1 with err (out of memory). */
int model_lora_base(const model_t *m, int max_batch, int merge, model_t **out, char *err, size_t errlen);
/* base's weights from m's, merged: base is model_lora_base's (of m, any batch). */
void model_lora_merge(const model_t *m, model_t *base);
/* m's source tensors from base's (a model of the source graph: model_lora_base's), the
 * adapters left as they are. */
void model_lora_set_base(model_t *m, const model_t *base);
/* PEFT's name of adapter tensor t in a saved adapter (`base_model.model.<module>.lora_A.weight`)
 * into out; 0, or -1 when t is no adapter's or the name does not fit. */
int model_lora_peft_name(const model_t *m, int t, char *out, size_t len);
void model_lora_free(model_lora_t *l);

#endif
