/* model/onnx/import_internal.h - the importer's state shared by the files of model/onnx/
 * (imp_t, value_t, view_t, the batch's placeholder values), and model/onnx/values.c: the importer's values (what a node input names) and the helpers every translation uses: attributes, inputs, initializer data, the error message. */
#ifndef PACER_MODEL_ONNX_IMPORT_INTERNAL_H
#define PACER_MODEL_ONNX_IMPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "onnx.pb-c.h"


/* Largest dimension of any tensor or shape the importer accepts (a bound, not a limit
 * real networks meet). */
#define DIM_MAX ((int64_t)1 << 24)

typedef enum { V_LAYER, V_TENSOR, V_PADDED, V_INTS, V_ARRAY } vkind_t;

/* V_INTS: a small int64 vector computed while importing (the exporter's shape arithmetic for
 * x.view(x.size(0), -1): Shape, Gather, Unsqueeze, Concat); BATCH stands for the batch
 * size, which the file does not fix. */
#define INTS_MAX 8
/* embeddings of a language model's token ids (token, and a rare second table) */
#define LM_MAX_EMBEDS 4
#define BATCH INT64_MIN
/* A multiple k N of the batch (the exporter's N * heads, L * N: torch's
 * nn.MultiheadAttention) is BATCH + k - 1, for 1 <= k <= DIM_MAX. */
static inline int is_batch(int64_t v) { return v >= BATCH && v < BATCH + DIM_MAX; }
static inline int64_t batch_k(int64_t v) { return v - BATCH + 1; }
static inline int64_t batch_times(int64_t k) { return BATCH + k - 1; }
/* An affine k N + c of the batch, c != 0 (torch.chunk's bounds: (2 N + 1) / 2), is
 * AFFINE + (k - 1) (2 DIM_MAX + 1) + c + DIM_MAX, for 1 <= k <= DIM_MAX and |c| <= DIM_MAX:
 * a range of its own above the multiples, which the shape arithmetic (fold_sym_arith) and the
 * folders that carry shape values pass on, and every other reader refuses (imp_input_ints
 * reads none: no size, bound or index may be one). */
#define AFFINE (BATCH + DIM_MAX)
#define AFFINE_SPAN (2 * DIM_MAX + 1)
static inline int is_affine(int64_t v) { return v >= AFFINE && v < AFFINE + DIM_MAX * AFFINE_SPAN; }
/* the batch in any form: k N or k N + c */
static inline int is_symbolic(int64_t v) { return is_batch(v) || is_affine(v); }
/* v as k N + c (k 0 for a constant) */
static inline void sym_parts(int64_t v, int64_t *k, int64_t *c)
{
    if (is_batch(v)) *k = batch_k(v), *c = 0;
    else if (is_affine(v)) *k = (v - AFFINE) / AFFINE_SPAN + 1, *c = (v - AFFINE) % AFFINE_SPAN - DIM_MAX;
    else *k = 0, *c = v;
}
/* k N + c as a value: a constant for k 0, INT64_MAX outside the bounds above */
static inline int64_t sym_value(int64_t k, int64_t c)
{
    if (k == 0) return c;
    if (k < 1 || k > DIM_MAX || c < -DIM_MAX || c > DIM_MAX) return INT64_MAX;
    return c == 0 ? batch_times(k) : AFFINE + (k - 1) * AFFINE_SPAN + c + DIM_MAX;
}

/* A view (value_t's, V_LAYER): the graph's tensor is its layer's batch-first output (N, d1,
 * .., dk: the physical axes, 0 the batch) read another way, after a Transpose that moved
 * the batch axis or a Reshape that merged it with others (torch 1.13's
 * nn.MultiheadAttention works on (L, N, E) and (N * heads, L, E / heads)). The graph's axes,
 * in order, are groups of physical axes: group j is gn[j] axes of ax, outer first. Such a
 * Transpose or Reshape makes no layer (view_node); the nodes that can work on the physical
 * axes read a view as it is, every other node reads it plain (view_plain), the batch moved
 * first by a LAYER_TRANSPOSE. A Concat along the batch's axis is a view of a layer that
 * joins its inputs along a new physical axis, outermost in the batch's group (view.c's
 * concat_along_batch).
 * The one exception, Swin's (value_t's lead and defer): a Reshape of a value that is not a
 * view to (N * k, ...), the batch times k > 1 first (Swin's windows), is do_reshape's lead
 * value (k the sample's axis 0), which the lead_reader operators read with their own
 * broadcasting of constants (the relative position bias, the attention mask); a Transpose
 * that moves a lead value's batch axis is deferred to the Gathers on axis 0 that read it
 * (gather_deferred). view_node leaves every node that reads a lead or deferred value to
 * those handlers and refuses one that mixes it with a view; every other move or merge of
 * the batch axis is a view. (A lead value is the view whose first group is the batch and
 * the sample's axis 0; the views' readers do not yet broadcast Swin's constants over such
 * a group, hence the two.) */
#define VIEW_AXES (1 + MODEL_MAX_RANK)
typedef struct {
    int np;            /* physical axes, the batch's included */
    int pd[VIEW_AXES]; /* their sizes (pd[0], the batch's, is 1: a placeholder) */
    int ng;            /* the graph's axes */
    int gn[VIEW_AXES]; /* physical axes in each */
    int ax[VIEW_AXES]; /* the physical axes, group after group */
} view_t;

typedef struct {
    const char *name;
    char *owned_name; /* name when the importer made it (a constant no node names), freed with the values */
    vkind_t kind;
    int layer;                       /* V_LAYER, V_PADDED: producing layer, -1 the model input */
    int flat;                        /* V_LAYER: seen as (N, C*H*W) (Flatten, Reshape) */
    const Onnx__TensorProto *tensor; /* V_TENSOR: initializer or Constant */
    int pads[4];                     /* V_PADDED: zero padding top, left, bottom, right */
    int cpads[2];                    /* V_PADDED: zero channels before, after (Add only) */
    int64_t ints[INTS_MAX];          /* V_INTS */
    int nints, scalar;               /* V_INTS: count; a 0-D value (one int) */
    int matmul;                      /* V_LAYER: a MatMul's output, its layer without bias */
    int constant_node;               /* V_TENSOR: a Constant node's (frozen), not an initializer */
    int const_layer;                 /* V_TENSOR, V_ARRAY: 1 + its LAYER_CONST once a binary operator read it */
    /* V_LAYER: the graph's axis 0 is the batch times the sample's axis 0 (a Reshape to (N *
     * k, ...): Swin's windows moved into the batch); the graph's axis a >= 1 is then the
     * sample's a, not a - 1. Only lead_reader's operators read such a value. */
    int lead;
    /* V_LAYER: the graph's value is the layer's transposed by perm (of the graph's axes),
     * which moves the batch axis: only a Gather on axis 0 reads it (q, k, v = qkv[0], ...) */
    int defer, perm[1 + MODEL_MAX_RANK];
    /* V_ARRAY: a constant folded at import (fold_array; arr owned, freed with the values):
     * arank dims, acount doubles, afloat its type; table: a parameter's name whose flat
     * indices it holds (a relative position bias), or NULL */
    double *arr;
    int arank, afloat;
    int64_t adims[8];
    size_t acount;
    const char *table;
    /* V_TENSOR: a Transpose (perm 1, 0) of a 2-D initializer, which only MatMul reads (as an
     * (OUT, IN) weight: torch's Linear on a 3-D input) */
    int transposed;
    const char *weight; /* V_TENSOR, transposed: the name of the tensor transposed (its name as a weight) */
    int viewed;         /* V_LAYER: view describes it (else it is the layer's output as it is) */
    int causal;         /* V_LAYER: scores under the causal mask, read only by Softmax (model/onnx/lm.c) */
    view_t view;        /* V_LAYER, viewed */
} value_t;

typedef struct {
    const Onnx__GraphProto *g;
    const char *input, *output; /* the graph's image input and logits output */
    int batch_dim;              /* the input's batch size when the file fixes it, else 0 */
    int max_batch;              /* the batch the model is built for (its buffers' size) */
    int any_output;             /* onnx_import_case: the output may be (N, C, H, W) too */
    int int_input;              /* the input is integer token ids (int64 or int32) */
    /* model/onnx/lm.c's embeddings of the token ids (a tied projection finds its table
     * here) and the smallest vocabulary among them */
    struct {
        const char *name;
        int layer;
    } embeds[LM_MAX_EMBEDS];
    int nembeds, min_vocab;
    value_t *vals;
    size_t nvals, cap;
    char *err;
    size_t errlen;
    int64_t opset; /* the ai.onnx opset the file imports (11 to 17) */
    /* Nodes a matched pattern (match_gelu) stands for, still to come: do_node passes over
     * each once. Bounded: a pattern that finds no room is left unmatched. */
    const Onnx__NodeProto *fused[16];
    int nfused;
    size_t folded; /* elements of the constants fold_array made (bounded) */
    /* imp_input_ints refused an affine value of the batch (k N + c) and said so: that
     * message stands for the node (imp_fail keeps it), cleared before each node */
    int sym_refused;
} imp_t;

/* bytes for a message: "12 MiB", or "4095 bytes" below one MiB */
typedef struct {
    char s[32];
} size_text_t;

/* ---- model/onnx/values.c ---- */
int imp_fail(imp_t *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_text_t imp_size_text(size_t bytes);
value_t *imp_find_value(imp_t *im, const char *name);
value_t *imp_add_value(imp_t *im, const char *name, vkind_t kind);
int64_t imp_tensor_count(const Onnx__TensorProto *t);
int imp_tensor_floats(imp_t *im, const Onnx__TensorProto *t, float *dst, size_t n);
const char *imp_node_name(const Onnx__NodeProto *n);
const Onnx__AttributeProto *imp_attr(const Onnx__NodeProto *n, const char *name);
int imp_check_attrs(imp_t *im, const Onnx__NodeProto *n, const char *const *known);
int64_t imp_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt);
float imp_attr_float(const Onnx__NodeProto *n, const char *name, float dflt);
int imp_input_layer(imp_t *im, const Onnx__NodeProto *n, size_t i, const value_t **vout);
const Onnx__TensorProto *imp_input_tensor(imp_t *im, const Onnx__NodeProto *n, size_t i);
int imp_weight_name_ok(imp_t *im, const Onnx__NodeProto *n, size_t i);
/* Whether Gemm's C, a constant, is the OUT values of a bias vector: (OUT), (1, OUT), ... */
int imp_bias_vector(const Onnx__TensorProto *c, int64_t OUT);
/* A Gemm of alpha and beta 1 by an initializer B of IN inputs ((IN, OUT), or (OUT, IN) with
 * transB) and a C that is a vector of the outputs or none: what a view of the batch and a
 * lead value read as a linear layer along their last axis. Its outputs in *out, B's layout
 * in *layout, C's name or NULL in *bias; 0, 1 when n is no such Gemm (the caller says why),
 * or -1 with the reason (a weight's name). */
int imp_gemm_linear(imp_t *im, const Onnx__NodeProto *n, int IN, int *out, gemm_layout_t *layout, const char **bias);
int binary_operand(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, size_t i, int act_rank, int *li);
const char *imp_batch_text(const model_shape_t *s, char *buf, size_t len);
int imp_input_ints(imp_t *im, const Onnx__NodeProto *n, size_t i, int64_t *out, int *count, int *scalar);
/* imp_input_ints with affine values of the batch (k N + c) read too: for the folders that
 * carry shape values on (Gather, Concat, Cast, ... of shape vectors) and the shape
 * arithmetic; every other reader takes imp_input_ints, to which such a vector is none. */
int imp_input_sym(imp_t *im, const Onnx__NodeProto *n, size_t i, int64_t *out, int *count, int *scalar);
int imp_define_ints(imp_t *im, const Onnx__NodeProto *n, const int64_t *ints, int count, int scalar);
int imp_readers(const imp_t *im, const char *name, const Onnx__NodeProto **r, int max);
int imp_tensor_ints(const Onnx__TensorProto *t, int64_t *dst, int max);

/* ---- model/onnx/import.c (internal) ---- */
int imp_is_initializer(const Onnx__GraphProto *g, const char *name);
int import_model(const Onnx__ModelProto *mp, const char *name, int max_batch, int any_output, model_t **out, char *err,
                 size_t errlen);

#endif
