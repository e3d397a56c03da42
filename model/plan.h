/* model/plan.h - how a model's graph runs, planned from what it is: the passes over a built
 * layer list that decide the fusions (a layer folded into the next, view chains read in
 * place, a causal softmax's matrix products, a GPT's attention run in one pass),
 * where gradients are set rather than added, which layers need a backward
 * (frozen tensors, grad_needed), the tensors each layer reads, the parameters
 * weight decay skips, the activation gradients' places in their arena, the activations
 * stored in bf16 (the plan's act_bf16) and the positions a sample's output holds. model.c
 * builds the list, runs these once (and the gradient routing before each backward) and
 * runs the graph by what they marked. */
#ifndef PACER_MODEL_PLAN_H
#define PACER_MODEL_PLAN_H

#include "model.h"

/* layer_plan_t's chain */
enum { VIEW_CHAIN_NONE, VIEW_CHAIN_RUN, VIEW_CHAIN_SKIP };
/* layer_plan_t's attn */
enum { ATTN_NONE, ATTN_RUN, ATTN_SKIP };

/* How one layer runs: the marks the passes below set on it from the finished layer list.
 * What the layer is (its kind, inputs, shape and parameters) is its layer_t; a new fusion
 * adds its marks here and its step in op_table.c: layer_t does not change, nor what
 * the CUDA library reads (it runs every layer on its own and reads no plan). */
typedef struct {
    /* LAYER_BMM under attention's causal mask (ops.h's bmm_causal_t): BMM_CAUSAL_OUT where
     * its only reader is a causal softmax (the scores: what is above the diagonal is never
     * read, nor computed), BMM_CAUSAL_LEFT where its left input is a causal softmax's
     * output (zeros above the diagonal: the sums skip them); else BMM_CAUSAL_NONE. The CPU
     * kernels skip that work; the results read are the same. */
    int causal_bmm;
    /* Fusions; each gives bit for bit the results of the layers it replaces.
     * fused_relu: LAYER_BN: the next layer is a ReLU and the only reader of this one's
     * output, so model_forward and model_backward run the pair as one fused kernel
     * (batchnorm_relu_*): this layer's output and its gradient are then never written,
     * and the ReLU layer does nothing. LAYER_ADD: the same ReLU after a residual add that
     * a batch norm's fused_add computes.
     * fused_add: LAYER_BN: the next layer is a residual add with an identity shortcut
     * that reads this one's output as its first input and is its only reader, and the
     * layer after is a ReLU, the add's only reader (a ResNet basic block's end). The
     * forward computes the ReLU's output here (batchnorm_add_relu_*); the add's backward
     * writes only its shortcut's gradient, from the ReLU's (relu_backward), and this
     * layer's backward reads the ReLU's through its mask (batchnorm_relu_backward): the
     * outputs and gradients of this layer and of the add are never written. */
    int fused_relu, fused_add;
    /* The layer whose backward sets this layer's output gradient instead of adding to it
     * (batchnorm_*backward_set, conv2d_backward_set, relu_backward_set,
     * residual_add_backward_set, gemm_backward_set, bmm_backward_set,
     * view_rows_backward_set, dropout_backward_set, stochastic_depth_backward_set,
     * softmax_axis_backward_set, layernorm_backward_set, binary_rows_backward's set
     * flags: the same bits as adding into zeros), or
     * -1: the gradient is zeroed by model_zero_dacts and every reader adds. It is the
     * reader whose backward runs first (the last in the list), where that backward writes
     * the whole gradient: a convolution, batch norm, ReLU, Gemm, Linear, Transpose,
     * Reshape, Dropout, stochastic depth, Softmax or LayerNorm reading it as its input, a
     * MatMul of two activations or a residual add reading it as either input (as the
     * shortcut, with stride 1), an Add, Sub, Mul or Div with broadcasting reading it as an
     * input that is not broadcast; the other readers then add to what it wrote. Never a
     * constant's (its one slot sums the batch). */
    int grad_setter;
    /* With no grad_setter: every reader is a Slice (step 1) of one axis and together they
     * cover it once (a fused q/k/v projection split three ways), so each sets its part
     * (view_rows_backward_set) and the gradient is not zeroed. */
    int grad_split;
    /* View chains (mark_view_chains): a run of Slices, Reshapes and Transposes, each the
     * only reader of the one before and each setting its input's gradient (a q/k/v head
     * split: Slice, Reshape, Transpose; attention's output: Transpose, Reshape). Its last
     * layer (VIEW_CHAIN_RUN) copies its output in one walk (chain_bc, chain_off, the views
     * composed) straight from chain_src's output and sets that gradient (its part of it)
     * back in one walk; the links before it (VIEW_CHAIN_SKIP) do nothing, their outputs
     * and gradients never written. The copies are the same floats, the gradients the same
     * bits (g + 0.0f). VIEW_CHAIN_NONE else. */
    int chain;
    int chain_src;
    bcast_desc_t chain_bc;
    size_t chain_off;
    /* Fused attention (mark_attention): a causal attention whose heads are view chains of
     * activations (q, k and v, each read by its product alone), two products under the
     * causal mask around a causal softmax, and a view chain merging the heads. The merge's
     * last link (ATTN_RUN) runs the whole of it, attention_causal_forward and _backward
     * (kernels/cpu/ops.h, attn_desc, the same bits), reading attn_src's outputs (q, k, v)
     * and keeping the weights in the softmax's output (layer attn_p); the q, k and v
     * chains, the products, a Mul scaling the scores (by layer attn_const's value) and the
     * softmax are ATTN_SKIP: their outputs (but the softmax's) and gradients are not
     * written. model_t's attention_unfused runs the layers one by one instead. ATTN_NONE
     * else. */
    int attn;
    int attn_src[3];
    int attn_p;
    int attn_const; /* the constant an imported graph's scores are multiplied by, or -1 */
    attn_desc_t attn_desc;
    /* 1 where this layer's output is stored in bf16, in half its floats of the activation
     * arena (layer_t's out_off; out_off, aux_off and act_floats planned so). Set by
     * model_create (model_plan_arena) when it builds at bf16 products
     * (kernels/cpu/matmul.h) for the outputs whose every reader is a matrix product, which
     * rounds that operand to bf16 anyway (kernels/cpu/gemm_bf16_act.h): a layer norm's,
     * read by Linear layers (a GPT's ln_1, ln_2 and ln_f), a GELU's, read by a Linear
     * layer (a GPT's mlp.c_fc's GELU, read by mlp.c_proj) and by its own backward, which
     * reads it rounded (saved_bf16), and a fused attention's (the heads merged, read by
     * attn.c_proj); and the outputs rounded as they are written (rounded: mlp.c_fc's,
     * read by its GELU). The same bits as float32 outputs; the products that
     * read them stay bf16 whatever the precision later. PACER_BF16_ACTS=0 in the
     * environment keeps every output float32. Copied by model_clone
     * (model_plan_act_bf16_as). */
    int act_bf16;
    /* 1 where this layer's backward reads its own output rounded to bf16, as mixed
     * precision saves an activation for the backward: a GELU whose output only products
     * read (the act_bf16 rule, whatever PACER_BF16_ACTS says), its backward's Phi = y / x
     * read from y rounded to bf16 (kernels/cpu/ops.h's unary_backward_bf16). Stored so
     * (act_bf16) or float32 and rounded as it is read: the same bits. bf16 keeps 8
     * significant bits, so Phi is off by a relative 2^-8 at most and the input gradient by
     * |dy| 2^-8 Phi (Phi <= 1) beyond float32's: what the products' rounding of each
     * operand to bf16 costs already. Set and copied with act_bf16. */
    int saved_bf16;
    /* 1 where this layer's output is rounded to bf16 as it is written, whether stored so
     * (act_bf16) or as float32 (kernels/cpu/ops.h's gemm_forward_rounded): a Linear's that
     * one GELU alone reads, a GELU of saved_bf16 (a GPT's mlp.c_fc, the GELU's input). The
     * GELU and its backward then run on the rounded input, as autocast's bf16 GELU does
     * on a bf16 Linear's output: each input is off by a relative 2^-8 at most, so the
     * output by |x| 2^-8 max|GELU'| (max|GELU'| < 1.13) beyond float32's, the size of the
     * rounding its reader, mlp.c_proj, gives the output anyway. Set and copied with
     * act_bf16; the output of at most GEMM_ROUNDED_MAX_OUT features. */
    int rounded;
    /* 1 where this layer's output shares one slot of the activation arena with the other
     * such outputs: a Linear's that only the residual add right after it reads, in its
     * forward (a Linear's backward reads its input, an Add's none), so the slot holds it
     * from its forward to the next layer's (a GPT's attn.c_proj and mlp.c_proj outputs).
     * Planned with act_bf16, in the same new layout (none under PACER_BF16_ACTS=0 or at
     * float32 products; the CUDA backend refuses those models), the same bits. */
    int act_shared;
    /* 1 on a fused attention's merge (ATTN_RUN) that keeps the weights in bf16 in its aux
     * region of the arena (layer_t's aux_off; ops.h's attn_bf16_t p: the lower triangles'
     * rows, B x H x T (T + 1) / 2 values) instead of in the softmax's output (attn_p), which
     * a step then never writes. Its backward reads the weights rounded to bf16 either way
     * (attention.c): the same bits. Planned with act_bf16 (none under PACER_BF16_ACTS=0). */
    int weights_bf16;
} layer_plan_t;

/* A model's execution plan (model_t's plan): one entry per layer, in the layers' order.
 * Built by model_plan_fusions from the finished layer list; model_free frees it. */
struct model_plan {
    layer_plan_t *layers; /* (nlayers) */
    /* The activation gradients' own arena (model_t's dacts), planned by liveness: layer i's
     * output gradient is live from the backward of its last reader (which runs first) down
     * to its own backward, and gradients never live at once share memory (dact_off[i],
     * first fit over the backward order); a fused kernel that reads a later layer's
     * gradient (fused_relu: its ReLU's; fused_add: the ReLU's after its add) keeps that one
     * live down to its own backward. A
     * backward zeroes a gradient its readers add into when its life begins (dact_first[i],
     * the step of its last reader), not all at the start. The CUDA library keeps its own. */
    size_t dact_floats; /* floats in dacts (<= act_floats) */
    size_t *dact_off;   /* per layer: its output gradient's offset in dacts */
    int *dact_first;    /* per layer: the backward step at which that gradient's life begins */
    /* Per layer, 2 entries: the index in model_t's tensors of the parameter tensor its
     * weight (w_off) and its bias (b_off) are, -1 where it has none. A backward looks a
     * tensor's no_update up through it and skips that gradient: a frozen tensor's weight
     * product is never computed, its part of grads never written (it stays 0:
     * model_zero_frozen_grads). */
    int *layer_tensor;
    /* Per layer, set by each model_backward where some tensor is frozen: whether the layer
     * or one before it (an input, an input's input, ...) has a parameter that takes an
     * update (every layer 1 where none is frozen). A layer without runs no backward at all
     * (its parameters are frozen and no gradient of an input is needed: the frozen first
     * blocks of a fine-tuned network), counted in model_t's backward_skipped, and the
     * layers with parameters compute no gradient into such an input. */
    unsigned char *grad_needed;
    /* The layers whose act_bf16 is 1; 0: every output float32, the arena as the builder
     * laid it (the CUDA backend refuses a model with any: its arena is float32). */
    int act_bf16_outputs;
    /* The arena's first floats, where the outputs a training step writes lie (with their
     * statistics, weights and the shared slot: model_plan_arena); the rest only generation,
     * an unfused attention or the CUDA library writes. act_floats where the arena keeps the
     * builder's layout. */
    size_t act_written_floats;
};

/* Layer i's entry of m's plan. */
static inline const layer_plan_t *model_layer_plan(const model_t *m, int i) { return &m->plan->layers[i]; }

/* m's plan (model_t's plan, allocated here the first time): the fusions and gradient
 * routing of the built layer list, in their order (each reads the marks of those before
 * it): fused layers, set gradients, view chains, causal products, fused attention. 0, or -1 (out of memory). */
int model_plan_fusions(model_t *m);
/* Frees m's plan (NULL: nothing). */
void model_plan_free(model_plan_t *p);
/* model_t's positions: the last layer's elements per sample over the classes; 0, or -1
 * when they do not divide or the last axis is not the classes'. */
int model_plan_positions(model_t *m);
/* tensor_info_t's no_decay for every 1-D parameter; 0, or -1 (out of memory). */
int model_plan_no_decay(model_t *m);
/* The plan's layer_tensor (and model_t's grads_computed): each layer's weight and bias
 * tensor; 0, or -1 (out of memory). */
int model_plan_tensors(model_t *m);
/* The plan's grad_needed from the tensors' no_update (which may change between backwards). */
void model_plan_grads(model_t *m);
/* The activation arena's plan: the act_bf16 marks and act_bf16_outputs (none unless the
 * products are bf16 and some output qualifies), then every output's place (layer_t's
 * out_off, aux_off; act_floats): those a training step writes first, those it never writes
 * (the heads' copies and products a fused attention runs for its layers, the outputs of
 * the batch norms and adds a fused kernel skips) after them, and,
 * where it marks any, those of act_bf16 in half the floats and those of act_shared in one
 * slot. Every output keeps a place of its own but act_shared's. After model_plan_fusions,
 * before the arena is allocated. */
void model_plan_arena(model_t *m);
/* The floats of the arena layer i's weights in bf16 take (its weights_bf16: half the
 * triangles' values, after its output at aux_off); 0 where it keeps none. */
size_t model_plan_weights_floats(const model_t *m, int i);
/* A copy's marks (model_clone): src's, whose arena plan its layers were copied with. */
void model_plan_act_bf16_as(model_t *m, const model_t *src);
/* The activation gradients' offsets in their arena (the plan's dact_off, dact_floats); 0, or
 * -1 (out of memory). */
int model_plan_dacts(model_t *m);

#endif
