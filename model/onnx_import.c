/* model/onnx_import.c - see onnx_import.h.
 *
 * The ModelProto is decoded by protobuf-c (code generated at build time from python3-onnx's
 * onnx.proto, Makefile). The graph's nodes are visited once, in file order (ONNX requires
 * topological order), and each node becomes zero or more layers through model.h's builder:
 *   Conv -> LAYER_CONV (any stride, pads incl. auto_pad, dilation, groups);
 *   MaxPool / AveragePool -> LAYER_MAXPOOL / LAYER_AVGPOOL (ceil_mode, pads, dilations,
 *     count_include_pad); a zero Pad in front of an AveragePool (torch's export of
 *     AvgPool2d(padding=p, count_include_pad=True)) merges into it; a zero Pad of channels
 *     read by an Add is LAYER_ADD's option-A shortcut (pacer's export of resnet20);
 *   GlobalAveragePool and ReduceMean over an image's plane -> LAYER_GAP, other ReduceMean
 *     and ReduceSum of non-batch axes -> LAYER_REDUCE_MEAN, LAYER_REDUCE_SUM; Relu, LeakyRelu, Sigmoid, Tanh, Clip (bounds as
 *     attributes or constant inputs), HardSigmoid, HardSwish -> their layers; Mul of two
 *     activations (equal shapes, or (C, 1, 1) times (C, H, W)) -> LAYER_MUL; Add of
 *     two activations -> LAYER_ADD; Add, Sub, Mul, Div of other shapes, or with a constant
 *     operand, broadcast (LAYER_BADD, LAYER_SUB, LAYER_BMUL, LAYER_DIV), the constant a
 *     LAYER_CONST (an initializer: a parameter; a Constant node: a buffer); Exp, Neg,
 *     Sqrt, Reciprocal, Abs, Pow (constant exponent) -> their unary layers; the model
 *     input may be a batch of any rank up to 1 + MODEL_MAX_RANK (Conv and the pools: images
 *     only); Reshape (other than to (batch, -1)), Squeeze, Unsqueeze -> LAYER_RESHAPE,
 *     Transpose (the batch axis first) -> LAYER_TRANSPOSE, Slice and Split of non-batch
 *     axes -> LAYER_SLICE; Cast and integer Add, Sub, Mul, Div of shape vectors are folded
 *     like Shape's (below); Concat of activations (axis 1) -> a chain of
 *     LAYER_CONCAT; Dropout -> LAYER_DROPOUT (the mask output unused); pacer's own
 *     ai.pacer:StochasticDepth (p, mode "row") -> LAYER_STOCHASTIC_DEPTH; either with p 0
 *     is the identity (no layer);
 *   issue 44's: Softmax, LogSoftmax (one non-batch axis) -> LAYER_SOFTMAX, LAYER_LOG_SOFTMAX;
 *     Erf -> LAYER_ERF; MatMul of two activations -> LAYER_BMM; LayerNormalization and
 *     torch 1.13's nn.LayerNorm nodes (match_layernorm) -> LAYER_LAYERNORM; torch 1.13's
 *     nn.GELU nodes (match_gelu) -> LAYER_GELU; Gather of an activation by one constant
 *     index -> LAYER_SLICE (and LAYER_RESHAPE for a scalar index);
 *   Swin's: nodes whose inputs are all constants are folded into N-D tensors (fold_array:
 *     the shifted-window mask, a frozen LAYER_CONST where an activation reads it); a
 *     parameter gathered by constant indices and moved -> LAYER_GATHER_PARAM (the relative
 *     position bias); a zero Pad of any rank -> no layer; a Reshape of a plain value to
 *     (N * k, ...) keeps k as the sample's axis 0 (value_t's lead) and a Transpose that
 *     moves a lead value's batch axis is left to the Gathers on axis 0 that read it
 *     (gather_deferred; view_t's comment says when lead applies and when a view does);
 *   issue 44's ViT: Expand to the batch -> LAYER_EXPAND (of a LAYER_CONST: the class token);
 *     Concat of a parameter of one sample's shape with activations -> its LAYER_EXPAND
 *     concatenated; MatMul by a Transpose of a weight (torch's Linear, Swin's too) ->
 *     LAYER_LINEAR (OUT, IN); a Transpose that moves the batch axis or a Reshape that
 *     merges it -> no layer, a view (view_t: nn.MultiheadAttention's), read in place by the
 *     nodes view_node lists (Swin's qkv[0] of one window: view_gather);
 *   BatchNormalization (any epsilon and momentum; inference form, or the training
 *     form whose extra outputs are unused) -> LAYER_BN;
 *   Gemm (transB 0 or 1, alpha, beta, C optional) and MatMul with an initializer (plus an
 *     Add of a bias right after it) -> LAYER_FC with its gemm_desc_t; MatMul of an input of
 *     rank > 2 by an initializer over its last axis -> LAYER_LINEAR;
 *   Flatten (axis 1), Reshape to (batch, -1) and Identity -> no layer (the value is an
 *     alias: LAYER_FC reads its input flat anyway); Constant -> a value; Shape, Gather,
 *     Unsqueeze and Concat on small int vectors -> values (the shape x.view(x.size(0), -1)
 *     computes when the batch is a dynamic axis).
 * A value is what a node input names: the graph input, a layer's output, an initializer or
 * a constant. Everything else is refused with the node's name and operator, and so is any
 * attribute not listed for its operator.
 */
#include "onnx_import.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errmsg.h"
#include "onnx.pb-c.h"
#include "op_table.h"
#include "sha256.h"

/* The operators the importer takes that are no layer of their own (folded into constants,
 * aliases of their input, or the padding of the layer after them); the layers' own come
 * from the operator table (model/op_table.c). */
static const char GRAPH_OPS[] = "Flatten, Reshape, Identity, Constant, Pad (before Conv or AveragePool; of channels "
                                "before Add), Shape, Gather, Unsqueeze, Concat, Cast, Add, Sub, Mul, Div, Equal, "
                                "Mod, Not, Where, Squeeze, Slice, Range, ScatterND, ConstantOfShape (of constant "
                                "shapes: folded)";

size_t onnx_supported_ops(char *buf, size_t len) { return model_op_onnx_names(buf, len, GRAPH_OPS); }

void onnx_print_supported_ops(FILE *f)
{
    fprintf(f, "| ONNX operators | pacer layer |\n| --- | --- |\n");
    /* a row with no ONNX operator (built in only: the language models') imports nothing */
    for (int k = 0; k < LAYER_KIND_COUNT; k++)
        if (*MODEL_OPS[k].onnx_import) fprintf(f, "| %s | %s |\n", MODEL_OPS[k].onnx_import, MODEL_OPS[k].name);
    fprintf(f,
            "| %s | none: folded into constants, aliases of their input, or the padding of the layer after them "
            "|\n",
            GRAPH_OPS);
}

/* Largest dimension of any tensor or shape the importer accepts (a bound, not a limit
 * real networks meet). */
#define DIM_MAX ((int64_t)1 << 24)

typedef enum { V_LAYER, V_TENSOR, V_PADDED, V_INTS, V_ARRAY } vkind_t;

/* V_INTS: a small int64 vector computed while importing (the exporter's shape arithmetic for
 * x.view(x.size(0), -1): Shape, Gather, Unsqueeze, Concat); BATCH stands for the batch
 * size, which the file does not fix. */
#define INTS_MAX 8
#define BATCH INT64_MIN
/* A multiple k N of the batch (the exporter's N * heads, L * N: torch's
 * nn.MultiheadAttention) is BATCH + k - 1, for 1 <= k <= DIM_MAX. */
static int is_batch(int64_t v) { return v >= BATCH && v < BATCH + DIM_MAX; }
static int64_t batch_k(int64_t v) { return v - BATCH + 1; }
static int64_t batch_times(int64_t k) { return BATCH + k - 1; }

/* A view (value_t's, V_LAYER): the graph's tensor is its layer's batch-first output (N, d1,
 * .., dk: the physical axes, 0 the batch) read another way, after a Transpose that moved
 * the batch axis or a Reshape that merged it with others (torch 1.13's
 * nn.MultiheadAttention works on (L, N, E) and (N * heads, L, E / heads)). The graph's axes,
 * in order, are groups of physical axes: group j is gn[j] axes of ax, outer first. Such a
 * Transpose or Reshape makes no layer (view_node); the nodes that can work on the physical
 * axes read a view as it is, every other node reads it plain (view_plain), the batch moved
 * first by a LAYER_TRANSPOSE.
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
    view_t view;        /* V_LAYER, viewed */
} value_t;

typedef struct {
    const Onnx__GraphProto *g;
    const char *input, *output; /* the graph's image input and logits output */
    int batch_dim;              /* the input's batch size when the file fixes it, else 0 */
    int max_batch;              /* the batch the model is built for (its buffers' size) */
    int any_output;             /* onnx_import_case: the output may be (N, C, H, W) too */
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
} imp_t;

static int fail(imp_t *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(imp_t *im, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int rc = errmsg_v(im->err, im->errlen, -1, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- the memory bound ------------------------------------------------------------------ */

/* Set once by the program before it imports (pacer-worker's main); 0 = physical memory. */
static size_t g_memory_bound;

void onnx_import_set_memory_bound(size_t bytes) { g_memory_bound = bytes; }

size_t onnx_import_memory_bound(void)
{
    if (g_memory_bound) return g_memory_bound;
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || size <= 0) return (size_t)1 << 34; /* unknown: 16 GiB */
    return (size_t)pages * (size_t)size;
}

/* bytes for a message: "12 MiB", or "4095 bytes" below one MiB */
typedef struct {
    char s[32];
} size_text_t;
static size_text_t size_text(size_t bytes)
{
    size_text_t t;
    if (bytes < (1 << 20)) snprintf(t.s, sizeof t.s, "%zu bytes", bytes);
    else snprintf(t.s, sizeof t.s, "%.0f MiB", (double)bytes / (1 << 20));
    return t;
}

/* ---- values --------------------------------------------------------------------------- */

static value_t *find_value(imp_t *im, const char *name)
{
    /* the latest definition wins (names are unique in a valid graph) */
    for (size_t i = im->nvals; i-- > 0;)
        if (strcmp(im->vals[i].name, name) == 0) return &im->vals[i];
    return NULL;
}

/* Frees the values and the arrays they own. */
static void free_values(imp_t *im)
{
    for (size_t i = 0; i < im->nvals; i++) free(im->vals[i].arr);
    free(im->vals);
    im->vals = NULL;
}

static value_t *add_value(imp_t *im, const char *name, vkind_t kind)
{
    if (im->nvals == im->cap) {
        size_t c = im->cap ? 2 * im->cap : 64;
        value_t *v = realloc(im->vals, c * sizeof *v);
        if (!v) return NULL;
        im->vals = v;
        im->cap = c;
    }
    value_t *v = &im->vals[im->nvals++];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->kind = kind;
    return v;
}

/* Elements of t (product of its dims), or -1 when a dimension is negative or too large. */
static int64_t tensor_count(const Onnx__TensorProto *t)
{
    int64_t n = 1;
    if (t->n_dims > 8) return -1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || t->dims[i] > DIM_MAX) return -1;
        n *= t->dims[i];
        if (n > ((int64_t)1 << 31)) return -1;
    }
    return n;
}

/* Copies a FLOAT tensor of exactly n elements into dst; 0, or -1 with the reason. */
static int tensor_floats(imp_t *im, const Onnx__TensorProto *t, float *dst, size_t n)
{
    if (!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return fail(im, "initializer '%s': data type %d, only float (1) is supported", t->name ? t->name : "",
                    (int)t->data_type);
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return fail(im, "initializer '%s': external data is not supported (save the model with its weights inside)",
                    t->name ? t->name : "");
    if (tensor_count(t) != (int64_t)n)
        return fail(im, "initializer '%s': %lld elements, the layer needs %zu", t->name ? t->name : "",
                    (long long)tensor_count(t), n);
    if (t->has_raw_data) {
        if (t->raw_data.len != n * sizeof(float))
            return fail(im, "initializer '%s': %zu bytes of raw data for %zu floats", t->name ? t->name : "",
                        t->raw_data.len, n);
        /* little-endian IEEE 754, as ONNX stores it and as the hosts pacer runs on are */
        memcpy(dst, t->raw_data.data, n * sizeof(float));
        return 0;
    }
    if (t->n_float_data != n)
        return fail(im, "initializer '%s': %zu float values for %zu elements", t->name ? t->name : "", t->n_float_data,
                    n);
    memcpy(dst, t->float_data, n * sizeof(float));
    return 0;
}

/* The int64 values of a small INT64 tensor (a shape, pads); their count, or -1. */
static int tensor_ints(const Onnx__TensorProto *t, int64_t *dst, int max)
{
    if (!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64) return -1;
    int64_t n = tensor_count(t);
    if (n < 0 || n > max) return -1;
    /* an empty tensor (a shape with no axes) may have no data at all */
    if (t->has_raw_data) {
        if (t->raw_data.len != (size_t)n * 8) return -1;
        if (n) memcpy(dst, t->raw_data.data, (size_t)n * 8);
    } else {
        if (t->n_int64_data != (size_t)n) return -1;
        if (n) memcpy(dst, t->int64_data, (size_t)n * 8);
    }
    return (int)n;
}

/* ---- nodes ---------------------------------------------------------------------------- */

static int input_ints(imp_t *im, const Onnx__NodeProto *n, size_t i, int64_t *out, int *count, int *scalar);

static const char *node_name(const Onnx__NodeProto *n)
{
    if (n->name && n->name[0]) return n->name;
    return n->n_output > 0 && n->output[0] ? n->output[0] : "(unnamed)";
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
    return NULL;
}

/* Refuses an attribute of n not in the NULL-terminated list known. */
static int check_attrs(imp_t *im, const Onnx__NodeProto *n, const char *const *known)
{
    for (size_t i = 0; i < n->n_attribute; i++) {
        const char *a = n->attribute[i]->name ? n->attribute[i]->name : "";
        int ok = 0;
        for (const char *const *k = known; *k; k++) ok |= strcmp(*k, a) == 0;
        if (!ok) return fail(im, "node '%s' (%s): attribute '%s' is not supported", node_name(n), n->op_type, a);
    }
    return 0;
}

static int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_i ? a->i : dflt;
}

static float attr_float(const Onnx__NodeProto *n, const char *name, float dflt)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_f ? a->f : dflt;
}

/* A list of exactly count ints (default dflt when absent); 0, or -1 with the reason. */
static int attr_ints(imp_t *im, const Onnx__NodeProto *n, const char *name, int count, int dflt, int *out)
{
    const Onnx__AttributeProto *a = attr(n, name);
    for (int i = 0; i < count; i++) out[i] = dflt;
    if (!a) return 0;
    if ((int)a->n_ints != count)
        return fail(im, "node '%s' (%s): attribute %s has %zu values, want %d (one or two per spatial axis)",
                    node_name(n), n->op_type, name, a->n_ints, count);
    for (int i = 0; i < count; i++) {
        if (a->ints[i] < 0 || a->ints[i] > DIM_MAX)
            return fail(im, "node '%s' (%s): attribute %s[%d] = %lld is out of range", node_name(n), n->op_type, name,
                        i, (long long)a->ints[i]);
        out[i] = (int)a->ints[i];
    }
    return 0;
}

/* "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER": 0..3, or -1. */
static int auto_pad(const Onnx__NodeProto *n)
{
    const Onnx__AttributeProto *a = attr(n, "auto_pad");
    if (!a || !a->has_s) return 0;
    static const char *const modes[] = {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"};
    for (int i = 0; i < 4; i++)
        if (a->s.len == strlen(modes[i]) && memcmp(a->s.data, modes[i], a->s.len) == 0) return i;
    return -1;
}

/* Pads of one dimension for auto_pad mode (ONNX's rule): SAME gives ceil(in / stride)
 * outputs. Kernel sizes, strides and dilations are each up to DIM_MAX, so the padding is
 * computed in 64 bits and refused (-1) beyond DIM_MAX on a side, like a pads attribute. */
static int same_pads(int mode, int in, int k, int s, int d, int *begin, int *end)
{
    *begin = *end = 0;
    if (mode == 1) return 0;
    const int64_t out = ((int64_t)in + s - 1) / s;
    int64_t total = (out - 1) * s + ((int64_t)k - 1) * d + 1 - in; /* each term below 2^49 */
    if (total < 0) total = 0;
    if (total > 2 * DIM_MAX) return -1;
    *begin = (int)(mode == 2 ? total / 2 : total - total / 2);
    *end = (int)(total - *begin);
    return 0;
}

/* auto_pad's pads of node n on an H x W input (pd: top, left, bottom, right); 0, or -1
 * with the reason. */
static int auto_pads(imp_t *im, const Onnx__NodeProto *n, int mode, int H, int W, const int *ks, const int *st,
                     const int *dl, int *pd)
{
    if (same_pads(mode, H, ks[0], st[0] ? st[0] : 1, dl[0] ? dl[0] : 1, &pd[0], &pd[2]) == 0 &&
        same_pads(mode, W, ks[1], st[1] ? st[1] : 1, dl[1] ? dl[1] : 1, &pd[1], &pd[3]) == 0)
        return 0;
    return fail(im,
                "node '%s' (%s): auto_pad's padding of a %dx%d kernel (strides %d, %d, dilations %d, %d) is too "
                "large (more than %lld on a side)",
                node_name(n), n->op_type, ks[0], ks[1], st[0], st[1], dl[0], dl[1], (long long)DIM_MAX);
}

/* The activation a node reads as input i: the graph input or a layer's output. */
static int input_layer(imp_t *im, const Onnx__NodeProto *n, size_t i, const value_t **vout)
{
    if (i >= n->n_input || !n->input[i] || !n->input[i][0])
        return fail(im, "node '%s' (%s): input %zu is missing", node_name(n), n->op_type, i);
    const value_t *v = find_value(im, n->input[i]);
    if (!v)
        return fail(im,
                    "node '%s' (%s): input '%s' is produced by no earlier node (unsupported output or "
                    "unsorted graph)",
                    node_name(n), n->op_type, n->input[i]);
    if (v->transposed)
        return fail(im, "node '%s' (%s): input '%s' is a Transpose of an initializer, which only MatMul reads",
                    node_name(n), n->op_type, n->input[i]);
    if (v->kind == V_TENSOR || v->kind == V_ARRAY || v->kind == V_INTS)
        return fail(im, "node '%s' (%s): input '%s' is a constant where an activation is expected", node_name(n),
                    n->op_type, n->input[i]);
    const int cpad = v->kind == V_PADDED && (v->cpads[0] || v->cpads[1]);
    if (v->kind == V_PADDED && !cpad && strcmp(n->op_type, "AveragePool") != 0 && strcmp(n->op_type, "Conv") != 0)
        return fail(im, "node '%s' (%s): reads the output of a Pad; only Conv and AveragePool may", node_name(n),
                    n->op_type);
    if (cpad && strcmp(n->op_type, "Add") != 0)
        return fail(im, "node '%s' (%s): reads a Pad of channels; only Add may (a residual's shortcut)", node_name(n),
                    n->op_type);
    if (v->defer && strcmp(n->op_type, "Gather") != 0)
        return fail(im,
                    "node '%s' (%s): reads '%s', a Transpose that moves the batch axis; only a Gather on axis 0 "
                    "may",
                    node_name(n), n->op_type, n->input[i]);
    static const char *const lead_reader[] = {"Reshape", "Transpose", "MatMul",   "Add",   "Sub",    "Mul", "Div",
                                              "Softmax", "Dropout",   "Identity", "Shape", "Gather", NULL};
    int ok = !v->lead;
    for (const char *const *r = lead_reader; !ok && *r; r++) ok = strcmp(*r, n->op_type) == 0;
    if (!ok)
        return fail(im,
                    "node '%s' (%s): reads '%s', whose batch axis holds several of the sample's elements (a "
                    "Reshape to (N * k, ...)); only Reshape, Transpose, MatMul, Add, Sub, Mul, Div, Softmax, "
                    "Dropout, Identity, Shape and Gather read such a value",
                    node_name(n), n->op_type, n->input[i]);
    if (vout) *vout = v;
    return 0;
}

/* Whether input i of n is a constant operand: a tensor or a folded array. */
static int const_input(imp_t *im, const Onnx__NodeProto *n, size_t i)
{
    const value_t *v = i < n->n_input && n->input[i][0] ? find_value(im, n->input[i]) : NULL;
    return v && (v->kind == V_TENSOR || v->kind == V_ARRAY);
}

static const Onnx__TensorProto *input_tensor(imp_t *im, const Onnx__NodeProto *n, size_t i)
{
    if (i >= n->n_input || !n->input[i] || !n->input[i][0]) return NULL;
    const value_t *v = find_value(im, n->input[i]);
    if (v && v->transposed && strcmp(n->op_type, "MatMul") != 0) return NULL;
    return v && v->kind == V_TENSOR ? v->tensor : NULL;
}

/* Defines the node's first output as layer li (flat as given); refuses further outputs that
 * are named (BatchNormalization's training outputs and MaxPool's Indices are not values
 * any later node may read, so they are simply not defined). */
static int define_output(imp_t *im, const Onnx__NodeProto *n, int li, int flat)
{
    if (n->n_output < 1 || !n->output[0] || !n->output[0][0])
        return fail(im, "node '%s' (%s): no output", node_name(n), n->op_type);
    int lead = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const value_t *x = n->input[i][0] ? find_value(im, n->input[i]) : NULL;
        lead |= x && x->kind == V_LAYER && x->lead;
    }
    value_t *v = add_value(im, n->output[0], V_LAYER);
    if (!v) return fail(im, "out of memory");
    v->layer = li;
    v->flat = flat;
    v->lead = lead && !flat; /* the elementwise and axis-keeping readers' (lead_reader) */
    return 0;
}

/* A weight's tensor is named by the value the node reads (an initializer's name, or the
 * name the exporter gave a deduplicated copy through Identity), and loaded from that
 * value's data. */
static int weight_name_ok(imp_t *im, const Onnx__NodeProto *n, size_t i)
{
    const char *name = n->input[i];
    if (!name[0] || strlen(name) >= MODEL_TENSOR_NAME_MAX)
        return fail(im, "node '%s' (%s): weight name '%.64s' is empty or longer than %d bytes", node_name(n),
                    n->op_type, name, MODEL_TENSOR_NAME_MAX - 1);
    return 0;
}

/* The batch shape of per-sample shape s, "(N, 4, 5)" or "(N)", into buf; returns buf. */
static const char *batch_text(const model_shape_t *s, char *buf, size_t len)
{
    char t[80];
    model_shape_text(s, t, sizeof t);
    snprintf(buf, len, "(N%s%s", s->rank ? ", " : ")", s->rank ? t + 1 : "");
    return buf;
}

/* Refuses an input x that is not an image batch (N, C, H, W): what the global average pool
 * takes (the operator table's rows refuse another rank too). */
static int image_input(imp_t *im, const model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    model_shape_t s;
    char t[96];
    model_build_shape_nd(b, x->layer, &s);
    if (!x->flat && s.rank == 3) return 0;
    return fail(im, "node '%s' (%s): input '%s' is %s%s: %s takes images (N, C, H, W) only", node_name(n), n->op_type,
                n->input[0], batch_text(&s, t, sizeof t), x->flat ? " flattened" : "", n->op_type);
}

/* The spatial axes of Conv's and the pools' input x: 2 for images (N, C, H, W), 1 for
 * sequences (N, C, L), which run as images of width 1 (the layer keeps their rank);
 * another rank is refused (0). */
static int spatial_axes(imp_t *im, const model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    model_shape_t s;
    char t[96];
    model_build_shape_nd(b, x->layer, &s);
    if (!x->flat && (s.rank == 3 || s.rank == 2)) return s.rank - 1;
    fail(im, "node '%s' (%s): input '%s' is %s%s: %s takes images (N, C, H, W) and sequences (N, C, L) only",
         node_name(n), n->op_type, n->input[0], batch_text(&s, t, sizeof t), x->flat ? " flattened" : "", n->op_type);
    return 0;
}

/* kernel_shape, strides, dilations and pads for sp spatial axes as the 2-D ones (top,
 * left, bottom, right): a sequence's are the height's, its width 1 and unpadded. */
static int window_attrs(imp_t *im, const Onnx__NodeProto *n, int sp, int *ks, int *st, int *dl, int *pd)
{
    if (sp == 2)
        return attr_ints(im, n, "kernel_shape", 2, -1, ks) || attr_ints(im, n, "strides", 2, 1, st) ||
                       attr_ints(im, n, "dilations", 2, 1, dl) || attr_ints(im, n, "pads", 4, 0, pd)
                   ? -1
                   : 0;
    int p2[2];
    if (attr_ints(im, n, "kernel_shape", 1, -1, ks) || attr_ints(im, n, "strides", 1, 1, st) ||
        attr_ints(im, n, "dilations", 1, 1, dl) || attr_ints(im, n, "pads", 2, 0, p2))
        return -1;
    ks[1] = st[1] = dl[1] = 1;
    pd[0] = p2[0], pd[2] = p2[1], pd[1] = pd[3] = 0;
    return 0;
}

static int do_conv(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad", NULL};
    const value_t *x;
    int sp;
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x) || !(sp = spatial_axes(im, b, n, x))) return -1;
    const Onnx__TensorProto *w = input_tensor(im, n, 1), *bias = input_tensor(im, n, 2);
    if (!w || w->n_dims != (size_t)sp + 2 || tensor_count(w) <= 0)
        return fail(im, "node '%s' (Conv): the weight must be a %d-D initializer (OC, C/group, %s)", node_name(n),
                    sp + 2, sp == 2 ? "KH, KW" : "K");
    if (n->n_input > 2 && n->input[2][0] && !bias)
        return fail(im, "node '%s' (Conv): the bias must be an initializer", node_name(n));
    if (n->n_input > 3) return fail(im, "node '%s' (Conv): more than 3 inputs", node_name(n));
    if (weight_name_ok(im, n, 1) || (bias && weight_name_ok(im, n, 2))) return -1;
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    int ks[2], st[2], dl[2], pd[4];
    /* bounded before it becomes an int (a group of 2^32 + 1 is not a group of 1) */
    const int64_t group64 = attr_int(n, "group", 1);
    const int group = group64 >= 1 && group64 <= DIM_MAX ? (int)group64 : 0;
    if (window_attrs(im, n, sp, ks, st, dl, pd)) return -1;
    const int KH = (int)w->dims[2], KW = sp == 2 ? (int)w->dims[3] : 1, OC = (int)w->dims[0];
    if ((ks[0] != -1 && ks[0] != KH) || (ks[1] != -1 && ks[1] != KW))
        return fail(im, "node '%s' (Conv): kernel_shape %dx%d differs from the weight's %dx%d", node_name(n), ks[0],
                    ks[1], KH, KW);
    if (group < 1 || group > C || (int64_t)w->dims[1] * group != C || OC % group != 0)
        return fail(im, "node '%s' (Conv): weight (%d, %lld, %d, %d) with group %lld does not fit %d input channels",
                    node_name(n), OC, (long long)w->dims[1], KH, KW, (long long)group64, C);
    if (bias && (bias->n_dims != 1 || bias->dims[0] != OC))
        return fail(im, "node '%s' (Conv): the bias must have %d elements", node_name(n), OC);
    const int ap = auto_pad(n);
    if (ap < 0) return fail(im, "node '%s' (Conv): unknown auto_pad", node_name(n));
    const int kw[2] = {KH, KW};
    if (ap > 0 && auto_pads(im, n, ap, H, W, kw, st, dl, pd)) return -1;
    if (x->kind == V_PADDED)
        for (int i = 0; i < 4; i++) pd[i] += x->pads[i];
    const conv2d_desc_t g = {.OC = OC,
                             .KH = KH,
                             .KW = KW,
                             .sH = st[0],
                             .sW = st[1],
                             .pad_t = pd[0],
                             .pad_l = pd[1],
                             .pad_b = pd[2],
                             .pad_r = pd[3],
                             .dH = dl[0],
                             .dW = dl[1],
                             .groups = group};
    int li = model_build_conv(b, x->layer, &g, bias != NULL, n->input[1], bias ? n->input[2] : NULL);
    if (model_build_failed(b))
        return fail(im, "node '%s' (Conv): geometry gives no output on a %dx%dx%d input", node_name(n), C, H, W);
    return define_output(im, n, li, 0);
}

static int do_pool(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int is_max)
{
    static const char *const kmax[] = {"kernel_shape", "strides",       "pads",     "dilations",
                                       "ceil_mode",    "storage_order", "auto_pad", NULL};
    static const char *const kavg[] = {"kernel_shape",      "strides",  "pads", "ceil_mode",
                                       "count_include_pad", "auto_pad", NULL};
    const value_t *x;
    int sp;
    if (check_attrs(im, n, is_max ? kmax : kavg) || input_layer(im, n, 0, &x) || !(sp = spatial_axes(im, b, n, x)))
        return -1;
    if (is_max && attr_int(n, "storage_order", 0) != 0)
        return fail(im, "node '%s' (MaxPool): storage_order 1 is not supported", node_name(n));
    if (n->n_output > 1 && n->output[1] && n->output[1][0])
        return fail(im, "node '%s' (MaxPool): the Indices output is not supported", node_name(n));
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    int ks[2], st[2], dl[2], pd[4];
    if (window_attrs(im, n, sp, ks, st, dl, pd)) return -1;
    if (ks[0] < 1 || ks[1] < 1) return fail(im, "node '%s' (%s): kernel_shape is required", node_name(n), n->op_type);
    const int ap = auto_pad(n);
    if (ap < 0) return fail(im, "node '%s' (%s): unknown auto_pad", node_name(n), n->op_type);
    if (ap > 0 && auto_pads(im, n, ap, H, W, ks, st, dl, pd)) return -1;
    int cip = attr_int(n, "count_include_pad", 0) != 0;
    if (x->kind == V_PADDED) {
        /* zero Pad + AveragePool: the zeros are elements the average counts, which is
         * count_include_pad over the pool's own pads (ops.h); the pool's pads must be 0 */
        if (pd[0] || pd[1] || pd[2] || pd[3] || ap > 0)
            return fail(im, "node '%s' (AveragePool): padded twice (a Pad and its own pads)", node_name(n));
        for (int i = 0; i < 4; i++) pd[i] = x->pads[i];
        cip = 1;
    }
    const pool2d_desc_t g = {.KH = ks[0],
                             .KW = ks[1],
                             .sH = st[0],
                             .sW = st[1],
                             .pad_t = pd[0],
                             .pad_l = pd[1],
                             .pad_b = pd[2],
                             .pad_r = pd[3],
                             .dH = dl[0],
                             .dW = dl[1],
                             .ceil_mode = attr_int(n, "ceil_mode", 0) != 0,
                             .count_include_pad = cip};
    int li = model_build_pool(b, is_max ? LAYER_MAXPOOL : LAYER_AVGPOOL, x->layer, &g);
    if (model_build_failed(b))
        return fail(im, "node '%s' (%s): geometry gives no output (or a window of padding only) on a %dx%dx%d input",
                    node_name(n), n->op_type, C, H, W);
    return define_output(im, n, li, 0);
}

/* Pad: constant zeros on the two spatial dimensions only, read by the next Conv or
 * AveragePool (no layer of its own). */
static int do_pad(imp_t *im, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"mode", NULL};
    const value_t *x;
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    const Onnx__AttributeProto *mode = attr(n, "mode");
    if (mode && mode->has_s && !(mode->s.len == 8 && memcmp(mode->s.data, "constant", 8) == 0))
        return fail(im, "node '%s' (Pad): only mode 'constant' is supported", node_name(n));
    const Onnx__TensorProto *val = input_tensor(im, n, 2);
    int64_t p[8];
    int np = 0, sc, zero = 1;
    /* pads folded from shapes (F.pad's of Swin's windows) read like a constant's */
    if (input_ints(im, n, 1, p, &np, &sc) != 0 || sc)
        return fail(im, "node '%s' (Pad): pads must be a constant of at most 8 int64 values", node_name(n));
    for (int i = 0; i < np; i++) zero &= p[i] == 0;
    if (zero && n->n_input > 1 && (n->n_input < 3 || !n->input[2][0] || val) && x->kind == V_LAYER)
        return define_output(im, n, x->layer, x->flat); /* no padding: the identity */
    if (np != 8) return fail(im, "node '%s' (Pad): pads must be a constant of 8 int64 values", node_name(n));
    if (val) {
        float z;
        if (tensor_count(val) != 1 || tensor_floats(im, val, &z, 1) || z != 0.0f)
            return fail(im, "node '%s' (Pad): only zero padding is supported", node_name(n));
    }
    /* (N, C, H, W): begins p[0..3], ends p[4..7]. Channels are padded only on their own,
     * for an Add to read (the option-A shortcut of a CIFAR ResNet, as pacer exports
     * resnet20: model.h's LAYER_ADD) */
    const int chan = p[1] || p[5];
    if (p[0] || p[4] || (chan && (p[2] || p[3] || p[6] || p[7])))
        return fail(
            im, "node '%s' (Pad): padding of the batch dimension, or of channels and pixels at once, is not supported",
            node_name(n));
    for (int i = 0; i < 8; i++)
        if (p[i] < 0 || p[i] > DIM_MAX) return fail(im, "node '%s' (Pad): negative or huge pads", node_name(n));
    if (x->kind == V_PADDED) return fail(im, "node '%s' (Pad): two Pads in a row are not supported", node_name(n));
    value_t *v = add_value(im, n->output[0], V_PADDED);
    if (!v) return fail(im, "out of memory");
    v->layer = x->layer;
    v->pads[0] = (int)p[2], v->pads[1] = (int)p[3], v->pads[2] = (int)p[6], v->pads[3] = (int)p[7];
    v->cpads[0] = (int)p[1], v->cpads[1] = (int)p[5];
    return 0;
}

static int do_bn(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"epsilon", "momentum", "training_mode", "spatial", NULL};
    const value_t *x;
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    if (attr_int(n, "spatial", 1) != 1)
        return fail(im, "node '%s' (BatchNormalization): spatial = 0 is not supported", node_name(n));
    /* any epsilon and momentum; ONNX's momentum weighs the old running statistics, PyTorch's
     * (layer_t's) the batch's: 1 - it. The exporters' 0.9 is PyTorch's default 0.1 itself
     * (MODEL_BN_MOMENTUM, the same bits as the built-in networks'), not 1 - 0.9f. */
    const float eps = attr_float(n, "epsilon", 1e-5f), mom = attr_float(n, "momentum", 0.9f);
    if (!(eps > 0.0f) || !(eps < 1.0f))
        return fail(im, "node '%s' (BatchNormalization): epsilon %g is out of range (0, 1)", node_name(n), eps);
    if (!(mom >= 0.0f && mom <= 1.0f))
        return fail(im, "node '%s' (BatchNormalization): momentum %g is out of range [0, 1]", node_name(n), mom);
    const float torch_mom = fabsf(mom - (1.0f - MODEL_BN_MOMENTUM)) <= 1e-7f ? MODEL_BN_MOMENTUM
                                                                             : (float)(1.0 - (double)mom);
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    const char *names[4];
    for (int i = 0; i < 4; i++) {
        const Onnx__TensorProto *t = input_tensor(im, n, (size_t)i + 1);
        if (!t || t->n_dims != 1 || t->dims[0] != C)
            return fail(im, "node '%s' (BatchNormalization): input %d must be an initializer of %d values",
                        node_name(n), i + 1, C);
        if (weight_name_ok(im, n, (size_t)i + 1)) return -1;
        names[i] = n->input[i + 1];
    }
    int li = model_build_bn_momentum(b, x->layer, names, eps, torch_mom);
    return define_output(im, n, li, 0);
}

static int do_gemm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"alpha", "beta", "transA", "transB", NULL};
    const value_t *x;
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    if (attr_int(n, "transA", 0) != 0)
        return fail(im, "node '%s' (Gemm): transA = 1 is not supported (A is the activation)", node_name(n));
    const int64_t tb = attr_int(n, "transB", 0);
    if (tb != 0 && tb != 1) return fail(im, "node '%s' (Gemm): transB must be 0 or 1", node_name(n));
    const int transB = (int)tb;
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    if (!x->flat && (H != 1 || W != 1))
        return fail(im, "node '%s' (Gemm): input is not 2-D (Flatten or Reshape it first)", node_name(n));
    const Onnx__TensorProto *w = input_tensor(im, n, 1), *c = input_tensor(im, n, 2);
    const int64_t IN = (int64_t)C * H * W;
    /* B is (OUT, IN) with transB = 1 (PyTorch's Linear), (IN, OUT) with transB = 0 */
    if (!w || w->n_dims != 2 || w->dims[transB ? 1 : 0] != IN || w->dims[transB ? 0 : 1] < 1)
        return fail(im, "node '%s' (Gemm): B must be an initializer %s", node_name(n),
                    transB ? "(OUT, IN) for transB = 1" : "(IN, OUT) for transB = 0");
    const int64_t OUT = w->dims[transB ? 0 : 1];
    if (n->n_input > 2 && n->input[2][0] && (!c || c->n_dims != 1 || c->dims[0] != OUT))
        return fail(im, "node '%s' (Gemm): C must be an initializer of %lld values (no other broadcast)", node_name(n),
                    (long long)OUT);
    if (weight_name_ok(im, n, 1) || (c && weight_name_ok(im, n, 2))) return -1;
    const gemm_desc_t g = {.layout = transB ? GEMM_W_OUT_IN : GEMM_W_IN_OUT,
                           .alpha = attr_float(n, "alpha", 1.0f),
                           .beta = attr_float(n, "beta", 1.0f)};
    if (!isfinite(g.alpha) || !isfinite(g.beta))
        return fail(im, "node '%s' (Gemm): alpha and beta must be finite", node_name(n));
    int li = model_build_gemm(b, x->layer, (int)OUT, &g, n->input[1], c ? n->input[2] : NULL);
    return define_output(im, n, li, 0);
}

/* MatMul of a 2-D activation and an (IN, OUT) initializer: a Gemm layer (transB 0)
 * without bias; of an activation of rank > 2 (sample rank > 1) whose last axis is IN
 * (torch.nn.Linear on (B, T, C)): a LAYER_LINEAR over that axis. An Add of a 1-D
 * initializer right after either becomes its bias. */
static int do_matmul(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    if (check_attrs(im, n, none) || input_layer(im, n, 0, &x)) return -1;
    int C, H, W;
    model_shape_t s;
    model_build_shape(b, x->layer, &C, &H, &W);
    model_build_shape_nd(b, x->layer, &s);
    const Onnx__TensorProto *w = input_tensor(im, n, 1);
    /* an (OUT, IN) weight through a Transpose (torch's Linear on a 3-D input) */
    const value_t *wv = n->n_input > 1 ? find_value(im, n->input[1]) : NULL;
    const int tr = wv && wv->transposed, two = w && w->n_dims == 2;
    const int64_t win = two ? w->dims[tr ? 1 : 0] : 0, wout = two ? w->dims[tr ? 0 : 1] : 0;
    const int flat = x->flat || (H == 1 && W == 1), last = s.rank >= 2 && !x->flat ? s.dims[s.rank - 1] : -1;
    /* the flattening FC where the weight takes the whole sample (what it always did), else
     * the last axis */
    const int fc = flat && two && win == (int64_t)C * H * W;
    const int64_t IN = fc ? (int64_t)C * H * W : last;
    if (!two || IN < 1 || win != IN || wout < 1 || wout > DIM_MAX) {
        char sh[96];
        return fail(im,
                    "node '%s' (MatMul): the second input must be an initializer (IN, OUT), IN the input's last "
                    "axis or, of a 2-D input, its features: input %s",
                    node_name(n), batch_text(&s, sh, sizeof sh));
    }
    if (weight_name_ok(im, n, 1)) return -1;
    const gemm_desc_t g = {.layout = tr ? GEMM_W_OUT_IN : GEMM_W_IN_OUT, .alpha = 1.0f, .beta = 1.0f};
    const int OUT = (int)wout;
    const char *wname = tr ? wv->weight : n->input[1];
    int li = fc ? model_build_gemm(b, x->layer, OUT, &g, wname, NULL)
                : model_build_linear_layout(b, x->layer, OUT, g.layout, wname);
    if (define_output(im, n, li, 0)) return -1;
    im->vals[im->nvals - 1].matmul = 1;
    return 0;
}

/* How many nodes read value name, plus 1 when it is the graph's output. */
static int uses(const imp_t *im, const char *name)
{
    int k = strcmp(im->output, name) == 0;
    for (size_t i = 0; i < im->g->n_node; i++)
        for (size_t j = 0; j < im->g->node[i]->n_input; j++) k += strcmp(im->g->node[i]->input[j], name) == 0;
    return k;
}

/* The shape sh of Reshape n as text, "[N * 2, 3, -1]" (the batch symbol by name). */
static const char *ints_text(const int64_t *sh, int nsh, char *buf, size_t len)
{
    size_t o = 0;
    for (int i = 0; i < nsh && o < len; i++) {
        const int w = is_batch(sh[i])
                          ? snprintf(buf + o, len - o, "%sN * %lld", i ? ", " : "[", (long long)batch_k(sh[i]))
                          : snprintf(buf + o, len - o, "%s%lld", i ? ", " : "[", (long long)sh[i]);
        if (w < 0) break;
        o += (size_t)w;
    }
    if (o < len) snprintf(buf + o, len - o, nsh ? "]" : "[]");
    return buf;
}

static int reshape_overflows(imp_t *im, const Onnx__NodeProto *n, const int64_t *sh, int nsh)
{
    char t[200];
    return fail(im, "node '%s' (Reshape): the shape %s overflows (its product is beyond 2^62)", node_name(n),
                ints_text(sh, nsh, t, sizeof t));
}

/* Reshape to (batch, -1): a constant shape [0 or -1 or the batch, -1 or C*H*W]. */
static int do_reshape(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"allowzero", NULL};
    const value_t *x;
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    if (attr_int(n, "allowzero", 0) != 0)
        return fail(im, "node '%s' (Reshape): allowzero = 1 is not supported", node_name(n));
    int64_t sh[INTS_MAX];
    int nsh = 0, ssh;
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    const int64_t flat = (int64_t)C * H * W;
    const int batch0 = input_ints(im, n, 1, sh, &nsh, &ssh) == 0 && nsh >= 1 && nsh <= 1 + MODEL_MAX_RANK &&
                       (is_batch(sh[0]) || sh[0] == 0 || sh[0] == -1 || (im->batch_dim > 0 && sh[0] == im->batch_dim));
    if (!batch0 && im->batch_dim > 0 && nsh >= 1)
        /* torch folded the example input's batch into the shape (Swin's B * windows) */
        return fail(im,
                    "node '%s' (Reshape): the shape's first value %lld is a constant that is not the batch: the "
                    "file fixes the batch to %d, so the shape no longer says which axis holds it; export with a "
                    "dynamic batch (torch.onnx.export(..., dynamic_axes={'%.64s': {0: 'N'}}))",
                    node_name(n), (long long)sh[0], im->batch_dim, im->input ? im->input : "input");
    if (!batch0)
        return fail(im,
                    "node '%s' (Reshape): the shape must be a constant of 1 to %d values whose first is the batch "
                    "(the batch, 0 or -1)",
                    node_name(n), 1 + MODEL_MAX_RANK);
    model_shape_t in, to = {0};
    model_build_shape_nd(b, x->layer, &in);
    /* k: how many of the sample's leading elements the graph's batch axis holds (1: none;
     * Swin's B * num_windows); -1: inferred from the rest */
    int64_t k = is_batch(sh[0]) ? batch_k(sh[0]) : sh[0] == 0 && x->lead ? in.dims[0] : sh[0] == -1 ? -1 : 1;
    /* (batch, -1) and (batch, C*H*W): the flat view, no layer (what Gemm reads) */
    if (k != -1 && k != 1 ? 0 : nsh == 2 && ((sh[1] == -1 && sh[0] != -1) || sh[1] == flat))
        return define_output(im, n, x->layer, 1);
    /* else a LAYER_RESHAPE: 0 copies the input's axis, one -1 takes what is left */
    const int L = x->lead ? 0 : 1; /* the graph's axis q is the sample's q - L */
    int infer = -1, rest = nsh - 1;
    int64_t prod = 1, dims[MODEL_MAX_RANK + 1];
    for (int d = 0; d < rest; d++) {
        int64_t v = sh[d + 1];
        if (v == 0 && !x->flat && d + 1 - L < in.rank) v = in.dims[d + 1 - L];
        if (v == -1 && infer < 0 && k != -1) infer = d;
        else if (v < 1 || v > DIM_MAX)
            return fail(im,
                        "node '%s' (Reshape): dimension %d of the shape is %lld (at most one -1, 0 only where the "
                        "input has that axis, and no -1 with a -1 batch)",
                        node_name(n), d + 1, (long long)sh[d + 1]);
        else if (model_dim_mul(prod, v, &prod) != 0) return reshape_overflows(im, n, sh, nsh);
        else dims[d] = v;
        if (prod > flat) break;
    }
    if (k == -1 && prod <= flat && flat % prod == 0) k = flat / prod, prod = flat;
    else if (k >= 1 && prod <= flat) {
        if (model_dim_mul(prod, k, &prod) != 0) return reshape_overflows(im, n, sh, nsh);
        if (infer >= 0 && prod <= flat && flat % prod == 0) dims[infer] = flat / prod, prod = flat;
    }
    if (prod != flat)
        return fail(im, "node '%s' (Reshape): the shape does not hold the input's %lld elements per sample",
                    node_name(n), (long long)flat);
    to.rank = rest + (k > 1);
    if (to.rank > MODEL_MAX_RANK)
        return fail(im,
                    "node '%s' (Reshape): a sample of rank %d (the batch axis holding %lld of its elements; at "
                    "most %d)",
                    node_name(n), to.rank, (long long)k, MODEL_MAX_RANK);
    if (k > 1) to.dims[0] = (int)k;
    for (int d = 0; d < rest; d++) to.dims[d + (k > 1)] = (int)dims[d];
    if (define_output(im, n, model_build_reshape(b, x->layer, &to), 0)) return -1;
    im->vals[im->nvals - 1].lead = k > 1;
    return 0;
}

/* Input i of n as a small int vector (a constant INT64 tensor or a V_INTS); 0, or -1. */
static int input_ints(imp_t *im, const Onnx__NodeProto *n, size_t i, int64_t *out, int *count, int *scalar)
{
    if (i >= n->n_input || !n->input[i][0]) return -1;
    const value_t *v = find_value(im, n->input[i]);
    if (!v) return -1;
    if (v->kind == V_INTS) {
        memcpy(out, v->ints, (size_t)v->nints * sizeof *out);
        *count = v->nints;
        *scalar = v->scalar;
        return 0;
    }
    if (v->kind == V_ARRAY) {
        if (v->table || v->arank > 1 || v->acount > INTS_MAX) return -1;
        for (size_t k = 0; k < v->acount; k++) {
            if (!(fabs(v->arr[k]) <= (double)DIM_MAX * DIM_MAX) || v->arr[k] != floor(v->arr[k])) return -1;
            out[k] = (int64_t)v->arr[k];
        }
        *count = (int)v->acount;
        *scalar = v->arank == 0;
        return 0;
    }
    if (v->kind != V_TENSOR) return -1;
    int c = tensor_ints(v->tensor, out, INTS_MAX);
    if (c < 0 || v->tensor->n_dims > 1) return -1;
    *count = c;
    *scalar = v->tensor->n_dims == 0;
    return 0;
}

static int define_ints(imp_t *im, const Onnx__NodeProto *n, const int64_t *ints, int count, int scalar)
{
    value_t *v = add_value(im, n->output[0], V_INTS);
    if (!v) return fail(im, "out of memory");
    memcpy(v->ints, ints, (size_t)count * sizeof *ints);
    v->nints = count;
    v->scalar = scalar;
    return 0;
}

/* ONNX's clamping of a Slice bound v on an axis of dim elements, for steps of either sign
 * (a negative step walks from start down to end + 1; end -1 is before the first) */
static int64_t slice_bound_step(int64_t v, int64_t dim, int64_t step)
{
    if (v < 0) v += dim;
    if (step > 0) return v < 0 ? 0 : v > dim ? dim : v;
    return v < -1 ? -1 : v > dim - 1 ? dim - 1 : v;
}

/* Squeeze, Slice, Not, Where, Range and ConstantOfShape of int vectors (the rest of the
 * exporter's shape arithmetic: sizes computed from x.shape); 1 when n's inputs are no int
 * vectors (a layer's operator then). The batch, a symbol, may pass through Squeeze, Slice
 * and Where's branches, and enter nothing else. */
static int fold_ints(imp_t *im, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL}, *const axes[] = {"axes", NULL}, *const value[] = {"value", NULL},
                             *const slice_attrs[] = {"starts", "ends", "axes", NULL};
    const char *op = n->op_type;
    int64_t a[INTS_MAX], r[INTS_MAX], v[4][INTS_MAX];
    int na = 0, sa = 0, cnt[4] = {0, 0, 0, 0}, sc, nr = 0;
    if (strcmp(op, "ConstantOfShape") == 0) {
        /* a vector of shape a (one dimension) or a scalar (a empty), of the int64 value */
        const Onnx__AttributeProto *at = attr(n, "value");
        int64_t fill = 0;
        if (input_ints(im, n, 0, a, &na, &sa) != 0) return 1;
        if (!at || !at->t || tensor_ints(at->t, &fill, 1) != 1) return 1; /* a float tensor: not shapes */
        if (check_attrs(im, n, value) || sa || na > 1 || (na == 1 && (a[0] < 0 || a[0] > INTS_MAX)))
            return fail(im, "node '%s' (ConstantOfShape): only a vector of at most %d ints is folded", node_name(n),
                        INTS_MAX);
        nr = na ? (int)a[0] : 1;
        for (int i = 0; i < nr; i++) r[i] = fill;
        return define_ints(im, n, r, nr, na == 0);
    }
    if (strcmp(op, "Range") == 0) {
        int64_t lim, d;
        int s1, s2, c1, c2;
        if (input_ints(im, n, 0, a, &na, &sa) != 0 || input_ints(im, n, 1, &lim, &c1, &s1) != 0 ||
            input_ints(im, n, 2, &d, &c2, &s2) != 0)
            return 1;
        if (check_attrs(im, n, none) || na != 1 || c1 != 1 || c2 != 1 || is_batch(a[0]) || is_batch(lim) ||
            is_batch(d) || d == 0)
            return fail(im, "node '%s' (Range): start, limit and delta must be constant scalars, delta not 0",
                        node_name(n));
        /* max(ceil((limit - start) / delta), 0) elements; a step past INT64's range ends it */
        for (int64_t x = a[0]; d > 0 ? x < lim : x > lim;) {
            if (nr == INTS_MAX)
                return fail(im, "node '%s' (Range): more than %d values are not folded", node_name(n), INTS_MAX);
            r[nr++] = x;
            if (__builtin_add_overflow(x, d, &x)) break;
        }
        return define_ints(im, n, r, nr, 0);
    }
    if (input_ints(im, n, 0, a, &na, &sa) != 0) return 1;
    if (strcmp(op, "Not") == 0) {
        if (check_attrs(im, n, none)) return -1;
        for (int i = 0; i < na; i++) {
            if (is_batch(a[i])) return fail(im, "node '%s' (Not): of the batch size", node_name(n));
            r[i] = !a[i];
        }
        return define_ints(im, n, r, na, sa);
    }
    if (strcmp(op, "Where") == 0) {
        int64_t *x = v[0], *y = v[1];
        int nx, ny, sx, sy;
        if (input_ints(im, n, 1, x, &nx, &sx) != 0 || input_ints(im, n, 2, y, &ny, &sy) != 0) return 1;
        nr = na > nx ? na : nx;
        nr = nr > ny ? nr : ny;
        if (check_attrs(im, n, none) || (na != nr && na != 1) || (nx != nr && nx != 1) || (ny != nr && ny != 1))
            return fail(im, "node '%s' (Where): shape vectors of %d, %d and %d values", node_name(n), na, nx, ny);
        for (int i = 0; i < nr; i++) {
            const int64_t c = a[na == 1 ? 0 : i];
            if (is_batch(c)) return fail(im, "node '%s' (Where): a condition of the batch size", node_name(n));
            r[i] = c ? x[nx == 1 ? 0 : i] : y[ny == 1 ? 0 : i];
        }
        return define_ints(im, n, r, nr, sa && sx && sy);
    }
    if (strcmp(op, "Squeeze") == 0) {
        /* a 1-element vector to a scalar (axes none, 0 or -1) */
        int64_t ax[INTS_MAX];
        int nx = 0, sx;
        const Onnx__AttributeProto *at = attr(n, "axes");
        if (at && at->n_ints <= INTS_MAX)
            for (size_t i = 0; i < at->n_ints; i++) ax[nx++] = at->ints[i];
        else if (!at && input_ints(im, n, 1, ax, &nx, &sx) != 0) nx = 0;
        if (check_attrs(im, n, axes) || sa || na != 1 || nx > 1 || (nx == 1 && ax[0] != 0 && ax[0] != -1))
            return fail(im, "node '%s' (Squeeze): only a 1-element shape vector to a scalar is folded", node_name(n));
        return define_ints(im, n, a, 1, 1);
    }
    /* Slice of a shape vector (axis 0): bounds as inputs (opset 10) or attributes (before) */
    static const char *const what[3] = {"starts", "ends", "axes"};
    for (int i = 0; i < 4; i++) {
        const Onnx__AttributeProto *at = i < 3 ? attr(n, what[i]) : NULL;
        if (at && at->n_ints <= INTS_MAX)
            for (size_t j = 0; j < at->n_ints; j++) v[i][cnt[i]++] = at->ints[j];
        else if ((size_t)i + 1 < n->n_input && n->input[i + 1][0] &&
                 input_ints(im, n, (size_t)i + 1, v[i], &cnt[i], &sc) != 0)
            return fail(im, "node '%s' (Slice): starts, ends, axes and steps must be constants", node_name(n));
    }
    /* a step beyond the vector's length takes one element: clamped, so that no index overflows */
    const int64_t step = !cnt[3]               ? 1
                         : v[3][0] > INTS_MAX  ? INTS_MAX + 1
                         : v[3][0] < -INTS_MAX ? -INTS_MAX - 1
                                               : v[3][0];
    if (check_attrs(im, n, slice_attrs) || sa || cnt[0] != 1 || cnt[1] != 1 || (cnt[2] && cnt[2] != 1) ||
        (cnt[3] && cnt[3] != 1) || (cnt[2] && v[2][0] != 0 && v[2][0] != -1) || step == 0)
        return fail(im, "node '%s' (Slice): of a shape vector: one axis (0), a step not 0", node_name(n));
    for (int64_t i = slice_bound_step(v[0][0], na, step), e = slice_bound_step(v[1][0], na, step);
         step > 0 ? i < e : i > e; i += step)
        r[nr++] = a[i];
    return define_ints(im, n, r, nr, 0);
}

/* op (Add, Sub, Mul, Div, Equal, Mod) of u and v, one of them a multiple k N of the batch:
 * k N times a positive constant c (or c times it) is (k c) N, k N divided by c that divides
 * k is (k / c) N, k N equals a constant below 1 never (a size is at least 1) and j N equals
 * k N where j = k; anything else (N * N, N + 1) INT64_MAX. */
static int64_t batch_arith(const char *op, int64_t u, int64_t v)
{
    const int bu = is_batch(u), bv = is_batch(v);
    if (op[0] == 'E') {
        if (bu && bv) return u == v;
        return (bu ? v : u) < 1 ? 0 : INT64_MAX;
    }
    if (bu && bv) return INT64_MAX;
    const int64_t k = batch_k(bu ? u : v), c = bu ? v : u;
    if (strcmp(op, "Mul") == 0 && c >= 1 && c <= DIM_MAX && k * c <= DIM_MAX) return batch_times(k * c);
    if (strcmp(op, "Div") == 0 && bu && c >= 1 && k % c == 0) return batch_times(k / c);
    return INT64_MAX;
}

/* op (Add, Sub, Mul, Div, Equal, Mod) of two shape values read from the file (neither the
 * batch symbol, v not 0 for Div and Mod) into *r: 0, or -1 when the result leaves
 * +-MODEL_DIM_ARITH_MAX (784 * (2^60 + 1) must not wrap to 784). ONNX's integer Div
 * truncates; its Mod takes the divisor's sign (Python's %) unless fmod = 1 (C's). */
static int shape_arith(const char *op, int64_t u, int64_t v, int fmod, int64_t *r)
{
    if (op[0] == 'A') return model_dim_add(u, v, r);
    if (op[0] == 'S') return model_dim_sub(u, v, r);
    if (op[0] == 'E') return *r = u == v, 0;
    if (op[0] == 'M' && op[1] == 'u') return model_dim_mul(u, v, r);
    /* INT64_MIN / -1 is the one quotient that overflows: a value that large is refused */
    if (u < -MODEL_DIM_ARITH_MAX || u > MODEL_DIM_ARITH_MAX) return -1;
    if (op[0] == 'D') return *r = u / v, 0;
    const int64_t q = u % v;
    *r = !fmod && q != 0 && (q < 0) != (v < 0) ? q + v : q;
    return 0;
}

/* Add, Sub, Mul, Div, Equal and Mod of shape vectors (the exporter's c // g), elementwise
 * with a scalar broadcast; the batch, a symbol, may not enter it (batch_arith's
 * exceptions); 1 when n's inputs are no int vectors. */
static int fold_shape_arith(imp_t *im, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL}, *const fmod_attr[] = {"fmod", NULL};
    const char *op = n->op_type;
    int64_t a[INTS_MAX], c[INTS_MAX], r[INTS_MAX];
    int na, sa, nc, scl;
    if (input_ints(im, n, 0, a, &na, &sa) != 0 || input_ints(im, n, 1, c, &nc, &scl) != 0) return 1;
    const int fmod = attr_int(n, "fmod", 0) != 0;
    if (check_attrs(im, n, op[0] == 'M' && op[1] == 'o' ? fmod_attr : none) || (na != nc && na != 1 && nc != 1))
        return fail(im, "node '%s' (%s): shape vectors of %d and %d values", node_name(n), op, na, nc);
    const int nr = na > nc ? na : nc;
    for (int i = 0; i < nr; i++) {
        const int64_t u = a[na == 1 ? 0 : i], v = c[nc == 1 ? 0 : i];
        const int mod = op[0] == 'M' && op[1] == 'o';
        if (is_batch(u) || is_batch(v)) {
            if ((r[i] = batch_arith(op, u, v)) == INT64_MAX)
                return fail(im,
                            "node '%s' (%s): the batch size enters shape arithmetic (only multiples of it, "
                            "k * N, times or by a positive constant, compared with a constant below 1, "
                            "pass)",
                            node_name(n), op);
            continue;
        }
        if ((op[0] == 'D' || mod) && v == 0)
            return fail(im, "node '%s' (%s): an integer division by 0", node_name(n), op);
        if (shape_arith(op, u, v, fmod, &r[i]) != 0)
            return fail(im, "node '%s' (%s): shape arithmetic %lld %s %lld overflows (beyond 2^62)", node_name(n), op,
                        (long long)u,
                        op[0] == 'A'   ? "+"
                        : op[0] == 'S' ? "-"
                        : mod          ? "%"
                        : op[0] == 'M' ? "*"
                                       : "/",
                        (long long)v);
    }
    return define_ints(im, n, r, nr, sa && scl);
}

/* Shape, Gather, Unsqueeze and Concat on small int vectors (the exporter's shape arithmetic);
 * 1 when n is not such a node. */
static int do_shape_op(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL}, *const axis[] = {"axis", NULL}, *const axes[] = {"axes", NULL};
    const char *op = n->op_type;
    int64_t a[INTS_MAX], r[INTS_MAX];
    int na, sa;
    if (strcmp(op, "Shape") == 0) {
        const value_t *x = n->n_input == 1 ? find_value(im, n->input[0]) : NULL;
        if (x && x->kind == V_INTS) {
            /* of a shape vector: its length (torch's expand(n, -1, -1)) */
            const int64_t len = x->nints;
            return check_attrs(im, n, none) ? -1 : define_ints(im, n, &len, x->scalar ? 0 : 1, 0);
        }
        if (check_attrs(im, n, none) || input_layer(im, n, 0, &x)) return -1;
        int C, H, W;
        model_shape_t s;
        model_build_shape(b, x->layer, &C, &H, &W);
        model_build_shape_nd(b, x->layer, &s);
        int64_t sh[1 + MODEL_MAX_RANK] = {BATCH, (int64_t)C * H * W};
        if (x->flat) return define_ints(im, n, sh, 2, 0);
        if (x->defer) return fail(im, "node '%s' (Shape): of a Transpose that moves the batch axis", node_name(n));
        for (int d = 0; d < s.rank; d++) sh[1 + d] = s.dims[d];
        if (x->lead) sh[1] = batch_times(s.dims[0]); /* (N * k, ...) */
        return define_ints(im, n, sh + x->lead, 1 + s.rank - x->lead, 0);
    }
    if (strcmp(op, "Gather") == 0) {
        int64_t idx[INTS_MAX];
        int ni, si;
        if (check_attrs(im, n, axis) || attr_int(n, "axis", 0) != 0 || input_ints(im, n, 0, a, &na, &sa) ||
            input_ints(im, n, 1, idx, &ni, &si) || sa)
            return fail(im, "node '%s' (Gather): only gathering from a constant or a Shape is supported", node_name(n));
        for (int i = 0; i < ni; i++) {
            int64_t k = idx[i] < 0 ? idx[i] + na : idx[i];
            if (k < 0 || k >= na)
                return fail(im, "node '%s' (Gather): index %lld out of range", node_name(n), (long long)idx[i]);
            r[i] = a[k];
        }
        return define_ints(im, n, r, ni, si);
    }
    if (strcmp(op, "Unsqueeze") == 0) {
        /* axes: an attribute up to opset 12, an input from 13 */
        int64_t ax[INTS_MAX];
        int nx = 0, sx;
        const Onnx__AttributeProto *at = attr(n, "axes");
        if (check_attrs(im, n, axes) || input_ints(im, n, 0, a, &na, &sa)) return 1;
        if (at && at->n_ints == 1) ax[0] = at->ints[0], nx = 1;
        else if (!at && input_ints(im, n, 1, ax, &nx, &sx) != 0) nx = 0;
        if (!sa || nx != 1 || ax[0] != 0)
            return fail(im, "node '%s' (Unsqueeze): only a scalar to a 1-element vector is supported", node_name(n));
        return define_ints(im, n, a, 1, 0);
    }
    if (strcmp(op, "Reshape") == 0) {
        /* of a shape vector to one axis ([-1] or its length; torch's x.expand(n, -1, -1)
         * writes one) or of a 1-element one to a scalar: the same values */
        static const char *const known[] = {"allowzero", NULL};
        int64_t t[INTS_MAX];
        int nt, st;
        if (input_ints(im, n, 0, a, &na, &sa) != 0) return 1;
        if (check_attrs(im, n, known) || input_ints(im, n, 1, t, &nt, &st) != 0 || nt > 1 ||
            (nt == 1 && t[0] != -1 && t[0] != na) || (nt == 0 && na != 1))
            return fail(im, "node '%s' (Reshape): of a shape vector: only to one axis ([-1] or its length) is folded",
                        node_name(n));
        return define_ints(im, n, a, na, nt == 0);
    }
    if (strcmp(op, "Cast") == 0) {
        /* of ints (the exporter's shape arithmetic casts them to int64): the same values */
        static const char *const to[] = {"to", NULL};
        if (check_attrs(im, n, to) || input_ints(im, n, 0, a, &na, &sa) != 0) return 1;
        return define_ints(im, n, a, na, sa);
    }
    if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0 ||
        strcmp(op, "Equal") == 0 || strcmp(op, "Mod") == 0)
        return fold_shape_arith(im, n);
    if (strcmp(op, "Squeeze") == 0 || strcmp(op, "Slice") == 0 || strcmp(op, "Not") == 0 || strcmp(op, "Where") == 0 ||
        strcmp(op, "Range") == 0 || strcmp(op, "ConstantOfShape") == 0)
        return fold_ints(im, n);
    if (strcmp(op, "Concat") == 0) {
        int total = 0;
        for (size_t i = 0; i < n->n_input; i++) {
            if (input_ints(im, n, i, a, &na, &sa) != 0) return 1; /* not int vectors: not this kind of Concat */
            if (sa || total + na > INTS_MAX)
                return fail(im, "node '%s' (Concat): a shape of more than %d values", node_name(n), INTS_MAX);
            memcpy(r + total, a, (size_t)na * sizeof *a);
            total += na;
        }
        if (check_attrs(im, n, axis) || attr_int(n, "axis", 0) != 0)
            return fail(im, "node '%s' (Concat): shape vectors join along axis 0", node_name(n));
        return define_ints(im, n, r, total, 0);
    }
    return 1;
}

/* ---- constant tensors (Swin's masks and indices) ---------------------------------------- */

/* A constant tensor computed at import from constants alone (ARR_* bounds): Swin's
 * shifted-window attention mask (new_zeros, slice assignment = ScatterND, Sub, Equal,
 * Where), its pads and index grids (Range, Expand, Concat), and a parameter's movement before
 * an activation reads it (a relative position bias: Gather of the table by constant
 * indices, Reshape, Transpose, Unsqueeze). Values are doubles (ints exact below 2^53); a
 * tagged array (table set) holds flat indices into that float initializer, which any
 * movement keeps and arithmetic refuses. Owned by the value (freed with the importer's). */
#define ARR_RANK 8
#define ARR_MAX ((size_t)1 << 22)       /* elements of one folded tensor */
#define ARR_TOTAL_MAX ((size_t)1 << 25) /* elements folded in one import */
#define ARR_INT_MAX 9007199254740992.0  /* 2^53: an int beyond it is not exact */

typedef struct {
    int rank;
    int64_t dims[ARR_RANK];
    size_t count;
    double *v;
    int is_float;
    const char *table; /* a tagged array's float initializer, else NULL */
} arr_t;

static void arr_free(arr_t *a)
{
    free(a->v);
    a->v = NULL;
}

/* Sets a's count from its dims and allocates v; 0, or -1 with the reason (n: the node). */
static int arr_alloc(imp_t *im, const Onnx__NodeProto *n, arr_t *a)
{
    size_t c = 1;
    if (a->rank < 0 || a->rank > ARR_RANK)
        return fail(im, "node '%s' (%s): a folded constant of rank %d (at most %d)", node_name(n), n->op_type, a->rank,
                    ARR_RANK);
    for (int d = 0; d < a->rank; d++) {
        if (a->dims[d] < 0 || a->dims[d] > DIM_MAX)
            return fail(im, "node '%s' (%s): a folded constant's dimension %lld is out of range", node_name(n),
                        n->op_type, (long long)a->dims[d]);
        c *= (size_t)a->dims[d];
        if (c > ARR_MAX) break;
    }
    if (c > ARR_MAX || im->folded + c > ARR_TOTAL_MAX)
        return fail(im, "node '%s' (%s): a folded constant of more than %zu elements (or %zu in all) is not supported",
                    node_name(n), n->op_type, ARR_MAX, ARR_TOTAL_MAX);
    im->folded += c;
    a->count = c;
    a->v = malloc((c ? c : 1) * sizeof *a->v);
    return a->v ? 0 : fail(im, "out of memory");
}

/* The raw values of tensor t (float, double, int64, int32, bool, uint8, int8) into a. */
static int arr_of_tensor(imp_t *im, const Onnx__NodeProto *n, const Onnx__TensorProto *t, arr_t *a)
{
    const int type = t->has_data_type ? t->data_type : 0;
    static const int size_of[] = {[1] = 4, [2] = 1, [3] = 1, [6] = 4, [7] = 8, [9] = 1, [11] = 8};
    const int sz = type > 0 && type < (int)(sizeof size_of / sizeof size_of[0]) ? size_of[type] : 0;
    if (!sz || (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return fail(im, "node '%s' (%s): constant '%s' of data type %d is not folded (float, double, int and bool only)",
                    node_name(n), n->op_type, t->name ? t->name : "", type);
    a->rank = (int)t->n_dims;
    for (int d = 0; d < a->rank && d < ARR_RANK; d++) a->dims[d] = t->dims[d];
    a->is_float = type == 1 || type == 11;
    if (arr_alloc(im, n, a)) return -1;
    const size_t c = a->count;
    const uint8_t *raw = t->has_raw_data ? t->raw_data.data : NULL;
    const size_t have = raw          ? t->raw_data.len / (size_t)sz
                        : type == 1  ? t->n_float_data
                        : type == 11 ? t->n_double_data
                        : type == 7  ? t->n_int64_data
                                     : t->n_int32_data; /* int32, bool, uint8, int8 */
    if (have != c || (raw && t->raw_data.len != c * (size_t)sz))
        return arr_free(a), fail(im, "node '%s' (%s): constant '%s' holds %zu values for %zu elements", node_name(n),
                                 n->op_type, t->name ? t->name : "", have, c);
    for (size_t i = 0; i < c; i++) {
        double v;
        if (raw) {
            const uint8_t *p = raw + i * (size_t)sz;
            float f;
            double g;
            int64_t l;
            int32_t k;
            switch (type) {
            case 1: memcpy(&f, p, 4), v = f; break;
            case 11: memcpy(&g, p, 8), v = g; break;
            case 7: memcpy(&l, p, 8), v = (double)l; break;
            case 6: memcpy(&k, p, 4), v = k; break;
            case 3: v = (int8_t)p[0]; break;
            default: v = p[0]; break;
            }
        } else
            v = type == 1    ? t->float_data[i]
                : type == 11 ? t->double_data[i]
                : type == 7  ? (double)t->int64_data[i]
                             : t->int32_data[i];
        a->v[i] = v;
    }
    return 0;
}

/* Whether value v is a constant the folding reads: a tensor, a folded array, or an int
 * vector without the batch symbol. */
static int is_constant(const value_t *v)
{
    if (!v) return 0;
    if (v->kind == V_TENSOR || v->kind == V_ARRAY) return !v->transposed;
    if (v->kind != V_INTS) return 0;
    for (int i = 0; i < v->nints; i++)
        if (is_batch(v->ints[i])) return 0;
    return 1;
}

/* Input i of n as an array (a copy, freed by the caller): a float initializer read where
 * tag allows it (the data of a movement) becomes a tagged array of its flat indices. */
static int arr_in(imp_t *im, const Onnx__NodeProto *n, size_t i, arr_t *a, int tag)
{
    memset(a, 0, sizeof *a);
    const value_t *v = i < n->n_input && n->input[i][0] ? find_value(im, n->input[i]) : NULL;
    if (!is_constant(v)) return fail(im, "node '%s' (%s): input %zu is not a constant", node_name(n), n->op_type, i);
    if (v->kind == V_INTS) {
        a->rank = v->scalar ? 0 : 1;
        a->dims[0] = v->nints;
        if (arr_alloc(im, n, a)) return -1;
        for (int k = 0; k < v->nints; k++) a->v[k] = (double)v->ints[k];
        return 0;
    }
    if (v->kind == V_ARRAY) {
        a->rank = v->arank;
        memcpy(a->dims, v->adims, sizeof a->dims);
        a->is_float = v->afloat;
        a->table = v->table;
        if (arr_alloc(im, n, a)) return -1;
        memcpy(a->v, v->arr, a->count * sizeof *a->v);
        return 0;
    }
    const Onnx__TensorProto *t = v->tensor;
    if (tag && !v->constant_node && t->has_data_type && t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        a->rank = (int)t->n_dims;
        for (int d = 0; d < a->rank && d < ARR_RANK; d++) a->dims[d] = t->dims[d];
        if (a->rank > MODEL_MAX_RANK || tensor_count(t) < 1 || tensor_count(t) >= ((int64_t)1 << 24))
            return fail(im,
                        "node '%s' (%s): parameter '%s' gathered or moved must have 1 to 2^24 elements and at "
                        "most %d axes",
                        node_name(n), n->op_type, n->input[i], MODEL_MAX_RANK);
        if (arr_alloc(im, n, a)) return -1;
        for (size_t k = 0; k < a->count; k++) a->v[k] = (double)k;
        a->table = n->input[i];
        a->is_float = 1;
        return 0;
    }
    return arr_of_tensor(im, n, t, a);
}

/* Defines n's output o as array a (ownership moves to the value). */
static int define_array(imp_t *im, const Onnx__NodeProto *n, size_t o, arr_t *a)
{
    value_t *v = o < n->n_output && n->output[o][0] ? add_value(im, n->output[o], V_ARRAY) : NULL;
    if (!v) return arr_free(a), fail(im, "node '%s' (%s): no output", node_name(n), n->op_type);
    v->arr = a->v;
    v->arank = a->rank;
    memcpy(v->adims, a->dims, sizeof v->adims);
    v->acount = a->count;
    v->afloat = a->is_float;
    v->table = a->table;
    a->v = NULL;
    return 0;
}

/* an int of a (index i) within [lo, hi], else -1 with the reason */
static int arr_int(imp_t *im, const Onnx__NodeProto *n, const arr_t *a, size_t i, int64_t lo, int64_t hi, int64_t *out)
{
    const double v = a->v[i];
    if (!(v >= (double)lo && v <= (double)hi) || v != floor(v))
        return fail(im, "node '%s' (%s): value %g is not an integer in [%lld, %lld]", node_name(n), n->op_type, v,
                    (long long)lo, (long long)hi);
    *out = (int64_t)v;
    return 0;
}

/* Contiguous strides of a's dims right-aligned to rank r, 0 along axes a broadcasts. */
static void arr_strides(const arr_t *a, int r, size_t *st)
{
    size_t run = 1;
    for (int ax = r - 1; ax >= 0; ax--) {
        const int d = ax - (r - a->rank);
        st[ax] = d >= 0 && a->dims[d] > 1 ? run : 0;
        if (d >= 0) run *= (size_t)a->dims[d];
    }
}

/* the flat index, at strides st, of output element o of dims (rank r) */
static size_t arr_at(size_t o, const int64_t *dims, int r, const size_t *st)
{
    size_t idx = 0;
    for (int ax = r - 1; ax >= 0; ax--) {
        idx += o % (size_t)dims[ax] * st[ax];
        o /= (size_t)dims[ax];
    }
    return idx;
}

/* NumPy's broadcast of the k arrays' shapes into out (dims only); 0, or -1. */
static int arr_bcast(imp_t *im, const Onnx__NodeProto *n, const arr_t *in, int k, arr_t *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < k; i++) out->rank = in[i].rank > out->rank ? in[i].rank : out->rank;
    for (int ax = 0; ax < out->rank; ax++) {
        int64_t d = 1;
        for (int i = 0; i < k; i++) {
            const int a = ax - (out->rank - in[i].rank);
            const int64_t e = a >= 0 ? in[i].dims[a] : 1;
            if (e != 1 && d != 1 && e != d)
                return fail(im, "node '%s' (%s): folded constants of shapes that do not broadcast", node_name(n),
                            n->op_type);
            if (e != 1) d = e;
        }
        out->dims[ax] = d;
    }
    return arr_alloc(im, n, out);
}

/* Elementwise operators of constants (broadcast): Add, Sub, Mul, Div, Mod, Pow, Equal, Not,
 * Where, Cast, Neg, Sqrt. Ints stay exact (a result beyond 2^53 is refused). */
static int fold_elementwise(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out)
{
    static const char *const cast_attrs[] = {"to", NULL}, *const mod_attrs[] = {"fmod", NULL}, *const none[] = {NULL};
    const char *op = n->op_type;
    /* an attribute is refused, not ignored: opset 6's broadcast and axis of Add, Sub, Mul,
     * Div and Pow align the second operand otherwise than NumPy's rule */
    if (check_attrs(im, n, strcmp(op, "Cast") == 0 ? cast_attrs : strcmp(op, "Mod") == 0 ? mod_attrs : none)) return -1;
    for (int i = 0; i < k; i++)
        if (in[i].table)
            return fail(im,
                        "node '%s' (%s): arithmetic on parameter '%s' before an activation reads it is not supported",
                        node_name(n), op, in[i].table);
    if (arr_bcast(im, n, in, k, out)) return -1;
    size_t st[3][ARR_RANK];
    for (int i = 0; i < k; i++) arr_strides(&in[i], out->rank, st[i]);
    const int is_int = !in[0].is_float && (k < 2 || !in[1].is_float);
    const int64_t to = strcmp(op, "Cast") == 0 ? attr_int(n, "to", 1) : 0;
    out->is_float = strcmp(op, "Where") == 0                             ? in[1].is_float || in[2].is_float
                    : strcmp(op, "Cast") == 0                            ? to == 1 || to == 11 || to == 10 || to == 16
                    : strcmp(op, "Equal") == 0 || strcmp(op, "Not") == 0 ? 0
                                                                         : !is_int || strcmp(op, "Sqrt") == 0;
    for (size_t o = 0; o < out->count; o++) {
        const double a = in[0].v[arr_at(o, out->dims, out->rank, st[0])];
        const double b = k > 1 ? in[1].v[arr_at(o, out->dims, out->rank, st[1])] : 0.0;
        double r;
        if (op[0] == 'A') r = a + b;
        else if (strcmp(op, "Sub") == 0) r = a - b;
        else if (strcmp(op, "Mul") == 0) r = a * b;
        else if (strcmp(op, "Equal") == 0) r = a == b;
        else if (strcmp(op, "Not") == 0) r = a == 0.0;
        else if (strcmp(op, "Neg") == 0) r = -a;
        else if (strcmp(op, "Sqrt") == 0) r = sqrt(a);
        else if (strcmp(op, "Pow") == 0) r = pow(a, b);
        else if (strcmp(op, "Where") == 0) r = a != 0.0 ? b : in[2].v[arr_at(o, out->dims, out->rank, st[2])];
        else if (strcmp(op, "Cast") == 0)
            r = out->is_float ? (to == 1 ? (double)(float)a : a) : to == 9 ? a != 0.0 : trunc(a);
        else if (is_int && b == 0.0) return fail(im, "node '%s' (%s): an integer division by 0", node_name(n), op);
        else if (op[0] == 'D') r = is_int ? trunc(a / b) : a / b;
        else {
            /* Mod: the divisor's sign (Python's %) unless fmod = 1 (C's) */
            r = fmod(a, b);
            if (!attr_int(n, "fmod", 0) && r != 0.0 && (r < 0) != (b < 0)) r += b;
        }
        if (!out->is_float && !(fabs(r) <= ARR_INT_MAX))
            return fail(im, "node '%s' (%s): an integer result beyond 2^53 is not folded", node_name(n), op);
        out->v[o] = r;
    }
    return 0;
}

/* The axes of n (attribute, or the input at index ai) normalised to rank r; count or -1. */
static int fold_axes(imp_t *im, const Onnx__NodeProto *n, size_t ai, int r, int *axes)
{
    int64_t ax[INTS_MAX];
    int na = 0, sc;
    const Onnx__AttributeProto *at = attr(n, "axes");
    if (at && at->n_ints <= INTS_MAX)
        for (size_t i = 0; i < at->n_ints; i++) ax[na++] = at->ints[i];
    else if (at || (ai < n->n_input && n->input[ai][0] && input_ints(im, n, ai, ax, &na, &sc) != 0))
        return fail(im, "node '%s' (%s): axes must be a constant of at most %d values", node_name(n), n->op_type,
                    INTS_MAX);
    for (int i = 0; i < na; i++) {
        const int64_t a = ax[i] < 0 ? ax[i] + r : ax[i];
        if (a < 0 || a >= r)
            return fail(im, "node '%s' (%s): axis %lld is out of range", node_name(n), n->op_type, (long long)ax[i]);
        axes[i] = (int)a;
    }
    return na;
}

/* Flatten of a folded constant: out's two dims, the products of a's before and from the
 * axis; 0, or -1 with the reason. An array with a 0 axis holds nothing, so its other axes
 * may multiply past any bound: checked. */
static int flatten_dims(imp_t *im, const Onnx__NodeProto *n, const arr_t *a, arr_t *out)
{
    int64_t ax = attr_int(n, "axis", 1), d0 = 1, d1 = 1;
    if (ax < 0) ax += a->rank;
    for (int d = 0; d < a->rank; d++)
        if (model_dim_mul(d < ax ? d0 : d1, a->dims[d], d < ax ? &d0 : &d1) != 0)
            return fail(im, "node '%s' (Flatten): the folded constant's flattened shape overflows", node_name(n));
    out->rank = 2, out->dims[0] = d0, out->dims[1] = d1;
    return 0;
}

/* Movement of constants: Reshape, Transpose, Unsqueeze, Squeeze, Gather, Slice, Expand,
 * Concat, Identity (a tagged array stays tagged), and ConstantOfShape, Range, ScatterND, Shape. */
static int fold_movement(imp_t *im, const Onnx__NodeProto *n, arr_t *in, int k, arr_t *out)
{
    const char *op = n->op_type;
    memset(out, 0, sizeof *out);
    out->is_float = in[0].is_float;
    out->table = in[0].table;
    size_t ist[ARR_RANK];
    {
        size_t run = 1;
        for (int d = in[0].rank - 1; d >= 0; d--) ist[d] = run, run *= (size_t)in[0].dims[d];
    }
    if (strcmp(op, "Identity") == 0 || strcmp(op, "Reshape") == 0 || strcmp(op, "Unsqueeze") == 0 ||
        strcmp(op, "Squeeze") == 0 || strcmp(op, "Flatten") == 0) {
        if (op[0] == 'R') {
            int64_t sh[INTS_MAX];
            int ns = 0, sc, infer = -1;
            if (input_ints(im, n, 1, sh, &ns, &sc) != 0 || sc)
                return fail(im, "node '%s' (Reshape): the shape must be a constant of at most %d values", node_name(n),
                            INTS_MAX);
            out->rank = ns;
            size_t prod = 1;
            for (int d = 0; d < ns; d++) {
                const int64_t v = sh[d] == 0 && d < in[0].rank ? in[0].dims[d] : sh[d];
                if (v == -1 && infer < 0) infer = d;
                else if (v < 0 || v > DIM_MAX)
                    return fail(im, "node '%s' (Reshape): dimension %lld of a folded constant's shape", node_name(n),
                                (long long)sh[d]);
                out->dims[d] = v;
                if (v >= 0) prod *= (size_t)v;
                if (prod > ARR_MAX) break;
            }
            if (infer >= 0) out->dims[infer] = prod && in[0].count % prod == 0 ? (int64_t)(in[0].count / prod) : -1;
        } else if (op[0] == 'U' || op[0] == 'S') {
            int axes[INTS_MAX];
            const int unsq = op[0] == 'U';
            int64_t raw[INTS_MAX];
            int nraw = 0, sc;
            if (attr(n, "axes")) nraw = (int)attr(n, "axes")->n_ints;
            else if (n->n_input > 1 && input_ints(im, n, 1, raw, &nraw, &sc) != 0) nraw = 0;
            const int na = fold_axes(im, n, 1, unsq ? in[0].rank + nraw : in[0].rank, axes);
            if (na < 0) return -1;
            unsigned mask = 0;
            for (int i = 0; i < na; i++) mask |= 1u << axes[i];
            if (unsq) {
                out->rank = in[0].rank + na;
                for (int d = 0, j = 0; d < out->rank && d < ARR_RANK; d++)
                    out->dims[d] = (mask >> d) & 1 ? 1 : in[0].dims[j++];
            } else
                for (int d = 0; d < in[0].rank; d++)
                    if (!(na ? (mask >> d) & 1 : in[0].dims[d] == 1)) out->dims[out->rank++] = in[0].dims[d];
        } else if (op[0] == 'F') {
            if (flatten_dims(im, n, &in[0], out) != 0) return -1;
        } else {
            out->rank = in[0].rank;
            memcpy(out->dims, in[0].dims, sizeof out->dims);
        }
        if (arr_alloc(im, n, out)) return -1;
        if (out->count != in[0].count)
            return fail(im, "node '%s' (%s): the folded constant's %zu elements do not fill the shape", node_name(n),
                        op, in[0].count);
        memcpy(out->v, in[0].v, out->count * sizeof *out->v);
        return 0;
    }
    if (strcmp(op, "Transpose") == 0) {
        const Onnx__AttributeProto *a = attr(n, "perm");
        int perm[ARR_RANK];
        unsigned seen = 0;
        out->rank = in[0].rank;
        for (int d = 0; d < out->rank; d++) {
            perm[d] = a ? (a->n_ints == (size_t)out->rank && a->ints[d] >= 0 && a->ints[d] < out->rank ? (int)a->ints[d]
                                                                                                       : 0)
                        : out->rank - 1 - d;
            if (a &&
                (a->n_ints != (size_t)out->rank || a->ints[d] < 0 || a->ints[d] >= out->rank || (seen >> perm[d]) & 1))
                return fail(im, "node '%s' (Transpose): perm is not a permutation of the folded constant's axes",
                            node_name(n));
            seen |= 1u << perm[d];
            out->dims[d] = in[0].dims[perm[d]];
        }
        if (arr_alloc(im, n, out)) return -1;
        size_t st[ARR_RANK];
        for (int d = 0; d < out->rank; d++) st[d] = ist[perm[d]];
        for (size_t o = 0; o < out->count; o++) out->v[o] = in[0].v[arr_at(o, out->dims, out->rank, st)];
        return 0;
    }
    if (strcmp(op, "Gather") == 0) {
        /* data[..., idx, ...] along axis: the index's shape takes the axis's place */
        int64_t ax = attr_int(n, "axis", 0);
        if (ax < 0) ax += in[0].rank;
        if (ax < 0 || ax >= in[0].rank || in[1].table || in[1].is_float || in[0].rank + in[1].rank - 1 > ARR_RANK)
            return fail(im, "node '%s' (Gather): axis %lld of a folded constant of rank %d by integer indices",
                        node_name(n), (long long)attr_int(n, "axis", 0), in[0].rank);
        out->rank = in[0].rank + in[1].rank - 1;
        for (int d = 0, j = 0; d < in[0].rank; d++) {
            if (d != ax) out->dims[j++] = in[0].dims[d];
            else
                for (int e = 0; e < in[1].rank; e++) out->dims[j++] = in[1].dims[e];
        }
        if (arr_alloc(im, n, out)) return -1;
        const size_t inner = ist[ax], dim = (size_t)in[0].dims[ax],
                     outer = inner * dim > 0 ? in[0].count / (inner * dim) : 0;
        size_t o = 0;
        for (size_t a = 0; a < outer; a++)
            for (size_t i = 0; i < in[1].count; i++) {
                int64_t k2 = 0;
                if (arr_int(im, n, &in[1], i, -(int64_t)dim, (int64_t)dim - 1, &k2)) return -1;
                if (k2 < 0) k2 += (int64_t)dim;
                for (size_t r = 0; r < inner; r++) out->v[o++] = in[0].v[(a * dim + (size_t)k2) * inner + r];
            }
        return 0;
    }
    if (strcmp(op, "Slice") == 0) {
        int64_t v[4][INTS_MAX];
        int cnt[4] = {0, 0, 0, 0}, sc;
        for (int i = 0; i < 4; i++)
            if ((size_t)i + 1 < n->n_input && n->input[i + 1][0] &&
                input_ints(im, n, (size_t)i + 1, v[i], &cnt[i], &sc) != 0)
                return fail(im, "node '%s' (Slice): starts, ends, axes and steps must be constants", node_name(n));
        out->rank = in[0].rank;
        memcpy(out->dims, in[0].dims, sizeof out->dims);
        int64_t start[ARR_RANK] = {0}, step[ARR_RANK];
        for (int d = 0; d < ARR_RANK; d++) step[d] = 1;
        if (cnt[1] != cnt[0] || (cnt[2] && cnt[2] != cnt[0]) || (cnt[3] && cnt[3] != cnt[0]))
            return fail(im, "node '%s' (Slice): starts, ends, axes and steps of one length are required", node_name(n));
        for (int i = 0; i < cnt[0]; i++) {
            int64_t ax = cnt[2] ? v[2][i] : i, s = cnt[3] ? v[3][i] : 1;
            if (ax < 0) ax += in[0].rank;
            if (ax < 0 || ax >= in[0].rank || s == 0 || s > DIM_MAX || s < -DIM_MAX)
                return fail(im, "node '%s' (Slice): axis %lld step %lld of a folded constant", node_name(n),
                            (long long)ax, (long long)s);
            const int64_t dim = in[0].dims[ax], b = slice_bound_step(v[0][i], dim, s),
                          e = slice_bound_step(v[1][i], dim, s);
            const int64_t len = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (b > e ? (b - e - s - 1) / -s : 0);
            start[ax] = b, step[ax] = s, out->dims[ax] = len;
        }
        if (arr_alloc(im, n, out)) return -1;
        for (size_t o = 0; o < out->count; o++) {
            size_t rem = o, idx = 0;
            for (int d = out->rank - 1; d >= 0; d--) {
                const int64_t c = (int64_t)(rem % (size_t)out->dims[d]);
                rem /= (size_t)out->dims[d];
                idx += (size_t)(start[d] + c * step[d]) * ist[d];
            }
            out->v[o] = in[0].v[idx];
        }
        return 0;
    }
    if (strcmp(op, "Expand") == 0) {
        int64_t s[INTS_MAX];
        int ns = 0, sc;
        if (input_ints(im, n, 1, s, &ns, &sc) != 0 || ns > ARR_RANK)
            return fail(im, "node '%s' (Expand): the shape must be a constant of at most %d values", node_name(n),
                        INTS_MAX);
        arr_t two[2] = {in[0], {.rank = ns}};
        for (int d = 0; d < ns; d++) {
            if (s[d] < 0 || s[d] > DIM_MAX)
                return fail(im, "node '%s' (Expand): dimension %lld", node_name(n), (long long)s[d]);
            two[1].dims[d] = s[d];
        }
        if (arr_bcast(im, n, two, 2, out)) return -1;
        out->is_float = in[0].is_float;
        out->table = in[0].table;
        size_t st[ARR_RANK];
        arr_strides(&in[0], out->rank, st);
        for (size_t o = 0; o < out->count; o++) out->v[o] = in[0].v[arr_at(o, out->dims, out->rank, st)];
        return 0;
    }
    if (strcmp(op, "Concat") == 0) {
        int64_t ax = attr_int(n, "axis", 0);
        if (ax < 0) ax += in[0].rank;
        out->rank = in[0].rank;
        memcpy(out->dims, in[0].dims, sizeof out->dims);
        if (ax < 0 || ax >= out->rank)
            return fail(im, "node '%s' (Concat): axis %lld of folded constants", node_name(n),
                        (long long)attr_int(n, "axis", 0));
        out->dims[ax] = 0;
        for (int i = 0; i < k; i++) {
            int same = in[i].rank == out->rank &&
                       (in[i].table == in[0].table ||
                        (in[i].table && in[0].table && strcmp(in[i].table, in[0].table) == 0));
            for (int d = 0; same && d < out->rank; d++) same = d == ax || in[i].dims[d] == in[0].dims[d];
            if (!same)
                return fail(im, "node '%s' (Concat): folded constants of other shapes (or parameters)", node_name(n));
            out->dims[ax] += in[i].dims[ax];
            out->is_float |= in[i].is_float;
        }
        if (arr_alloc(im, n, out)) return -1;
        size_t outer = 1, o = 0;
        for (int d = 0; d < ax; d++) outer *= (size_t)out->dims[d];
        for (size_t a = 0; a < outer; a++)
            for (int i = 0; i < k; i++) {
                const size_t run = outer ? in[i].count / outer : 0;
                memcpy(out->v + o, in[i].v + a * run, run * sizeof *out->v);
                o += run;
            }
        return 0;
    }
    if (in[0].table)
        return fail(im, "node '%s' (%s): of parameter '%s' is not supported", node_name(n), op, in[0].table);
    if (strcmp(op, "ScatterND") == 0) {
        /* data with updates written at the indices (the last axis of indices: a prefix of
         * data's axes), in order */
        if (attr(n, "reduction"))
            return fail(im, "node '%s' (ScatterND): attribute 'reduction' is not supported", node_name(n));
        const int q = in[1].rank, kk = q ? (int)in[1].dims[q - 1] : 0;
        int ok = q >= 1 && kk >= 1 && kk <= in[0].rank && in[2].rank == q - 1 + in[0].rank - kk;
        for (int d = 0; ok && d < q - 1; d++) ok = in[2].dims[d] == in[1].dims[d];
        for (int d = kk; ok && d < in[0].rank; d++) ok = in[2].dims[q - 1 + d - kk] == in[0].dims[d];
        if (!ok)
            return fail(im, "node '%s' (ScatterND): indices and updates do not fit the data's shape", node_name(n));
        out->rank = in[0].rank;
        memcpy(out->dims, in[0].dims, sizeof out->dims);
        if (arr_alloc(im, n, out)) return -1;
        memcpy(out->v, in[0].v, out->count * sizeof *out->v);
        const size_t slice = kk < in[0].rank ? ist[kk - 1] : 1, nidx = in[1].count / (size_t)kk;
        for (size_t i = 0; i < nidx; i++) {
            size_t off = 0;
            for (int d = 0; d < kk; d++) {
                int64_t e = 0;
                if (arr_int(im, n, &in[1], i * (size_t)kk + (size_t)d, -in[0].dims[d], in[0].dims[d] - 1, &e))
                    return -1;
                off += (size_t)(e < 0 ? e + in[0].dims[d] : e) * ist[d];
            }
            memcpy(out->v + off, in[2].v + i * slice, slice * sizeof *out->v);
        }
        return 0;
    }
    if (strcmp(op, "ConstantOfShape") == 0) {
        if (in[0].rank > 1 || in[0].count > ARR_RANK)
            return fail(im, "node '%s' (ConstantOfShape): a shape of at most %d values", node_name(n), ARR_RANK);
        out->rank = (int)in[0].count;
        for (int d = 0; d < out->rank; d++)
            if (arr_int(im, n, &in[0], (size_t)d, 0, DIM_MAX, &out->dims[d])) return -1;
        arr_t val = {0};
        const Onnx__AttributeProto *at = attr(n, "value");
        if (at && at->t && (arr_of_tensor(im, n, at->t, &val) || val.count != 1))
            return arr_free(&val),
                   val.count != 1 ? fail(im, "node '%s' (ConstantOfShape): value must hold one element", node_name(n))
                                  : -1;
        out->is_float = at && at->t ? val.is_float : 1;
        const double fill = val.v ? val.v[0] : 0.0;
        arr_free(&val);
        if (arr_alloc(im, n, out)) return -1;
        for (size_t o = 0; o < out->count; o++) out->v[o] = fill;
        out->table = NULL;
        return 0;
    }
    if (strcmp(op, "Range") == 0) {
        if (in[0].count != 1 || in[1].count != 1 || in[2].count != 1 || in[2].v[0] == 0.0 || !isfinite(in[0].v[0]) ||
            !isfinite(in[1].v[0]) || !isfinite(in[2].v[0]))
            return fail(im, "node '%s' (Range): start, limit and delta must be finite scalars, delta not 0",
                        node_name(n));
        const double c = ceil((in[1].v[0] - in[0].v[0]) / in[2].v[0]);
        out->rank = 1;
        out->dims[0] = c > 0 ? (c > (double)DIM_MAX ? DIM_MAX + 1 : (int64_t)c) : 0;
        out->is_float = in[0].is_float || in[1].is_float || in[2].is_float;
        if (arr_alloc(im, n, out)) return -1;
        for (size_t o = 0; o < out->count; o++) out->v[o] = in[0].v[0] + (double)o * in[2].v[0];
        return 0;
    }
    /* Shape of a folded constant */
    out->rank = 1;
    out->dims[0] = in[0].rank;
    out->is_float = 0;
    if (arr_alloc(im, n, out)) return -1;
    for (int d = 0; d < in[0].rank; d++) out->v[d] = (double)in[0].dims[d];
    return 0;
}

/* Folds n when every input is a constant (is_constant) and its operator is one of the
 * above; 1 when not (the node is something else's). */
static int fold_array(imp_t *im, const Onnx__NodeProto *n)
{
    static const char *const elementwise[] = {"Add", "Sub",   "Mul",  "Div", "Mod",  "Pow", "Equal",
                                              "Not", "Where", "Cast", "Neg", "Sqrt", NULL};
    static const char *const movement[] = {"Identity",  "Reshape",         "Unsqueeze", "Squeeze", "Flatten",
                                           "Transpose", "Gather",          "Slice",     "Expand",  "Concat",
                                           "ScatterND", "ConstantOfShape", "Range",     "Shape",   NULL};
    int kind = 0;
    for (const char *const *o = elementwise; *o; o++) kind |= strcmp(n->op_type, *o) == 0;
    for (const char *const *o = movement; *o; o++) kind |= (strcmp(n->op_type, *o) == 0) << 1;
    if (!kind || n->n_input < 1 || n->n_output < 1) return 1;
    /* the data inputs: the shape-like ones (Reshape's shape, Slice's bounds, Unsqueeze's
     * axes ...) are read by input_ints */
    const int data = kind == 1                           ? (int)n->n_input
                     : strcmp(n->op_type, "Concat") == 0 ? (int)n->n_input
                     : strcmp(n->op_type, "Gather") == 0 || strcmp(n->op_type, "Range") == 0 ||
                             strcmp(n->op_type, "ScatterND") == 0
                         ? (int)n->n_input
                         : 1;
    for (size_t i = 0; i < n->n_input; i++)
        if (n->input[i][0] && !is_constant(find_value(im, n->input[i]))) return 1;
    /* Identity of an initializer stays its alias (a weight used under another name), and a
     * Transpose of a 2-D one is do_transpose's (a transposed weight for MatMul) */
    const value_t *v0 = find_value(im, n->input[0]);
    if (v0 && strcmp(n->op_type, "Identity") == 0 && v0->kind == V_TENSOR) return 1;
    if (v0 && strcmp(n->op_type, "Transpose") == 0 && v0->kind == V_TENSOR && v0->tensor->n_dims == 2 &&
        !v0->constant_node && v0->tensor->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return 1;
    if (data > 3 && kind == 1) return fail(im, "node '%s' (%s): %zu inputs", node_name(n), n->op_type, n->n_input);
    arr_t in[ARR_RANK] = {{0}}, out = {0};
    const int nin = data > ARR_RANK ? -1 : data;
    if (nin < 0)
        return fail(im, "node '%s' (%s): more than %d inputs are not folded", node_name(n), n->op_type, ARR_RANK);
    int rc = 0, got = 0;
    /* the bound counts what the values keep, not the inputs' working copies */
    const size_t kept = im->folded;
    /* a float initializer moved (not computed on) is a parameter: tagged */
    const int tag = kind == 2 && strcmp(n->op_type, "Shape") != 0;
    for (; got < nin && rc == 0; got++)
        rc = arr_in(im, n, (size_t)got, &in[got], tag && (got == 0 || strcmp(n->op_type, "Concat") == 0));
    if (rc == 0) rc = kind == 1 ? fold_elementwise(im, n, in, nin, &out) : fold_movement(im, n, in, nin, &out);
    for (int i = 0; i < got; i++) arr_free(&in[i]);
    if (rc == 0) {
        im->folded = kept + out.count;
        rc = define_array(im, n, 0, &out);
    }
    arr_free(&out);
    return rc;
}

/* pacer's own domain, ai.pacer: StochasticDepth(p, mode) as the Python client writes
 * torchvision.ops.StochasticDepth (clients/python/pacer/client.py): mode "row" (one draw
 * per sample, EfficientNet's and ConvNeXt's), p in [0, 1). */
static int do_pacer_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const char *op = n->op_type;
    const value_t *x;
    if (strcmp(op, "StochasticDepth") != 0)
        return fail(im, "node '%s': operator ai.pacer:%s is not supported (ai.pacer has StochasticDepth only)",
                    node_name(n), op);
    static const char *const known[] = {"p", "mode", NULL};
    if (n->n_input != 1) return fail(im, "node '%s' (StochasticDepth): want one input", node_name(n));
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    const Onnx__AttributeProto *mode = attr(n, "mode");
    if (mode && !(mode->has_s && mode->s.len == 3 && memcmp(mode->s.data, "row", 3) == 0))
        return fail(im, "node '%s' (StochasticDepth): mode '%.*s' is not supported (\"row\" only: one draw per sample)",
                    node_name(n), mode->has_s ? (int)(mode->s.len > 32 ? 32 : mode->s.len) : 0,
                    mode->has_s ? (const char *)mode->s.data : "");
    const Onnx__AttributeProto *pa = attr(n, "p");
    if (!pa || !pa->has_f) return fail(im, "node '%s' (StochasticDepth): no float attribute p", node_name(n));
    const float p = pa->f;
    if (!(p >= 0.0f && p < 1.0f))
        return fail(im, "node '%s' (StochasticDepth): p %g is not in [0, 1)", node_name(n), p);
    if (p == 0.0f) return define_output(im, n, x->layer, x->flat); /* the identity, as Dropout's ratio 0 */
    return define_output(im, n, model_build_elementwise(b, LAYER_STOCHASTIC_DEPTH, x->layer, p), x->flat);
}

/* The axes of n (an attribute up to opset 12, input 1 from 13) as non-batch axes of a
 * sample of rank r (ONNX's axis a of the batch tensor is the sample's a - 1; negative ones
 * count from the end of rank r + 1); sorted flags in *mask. 0, or -1 with the reason. */
static int sample_axes(imp_t *im, const Onnx__NodeProto *n, int r, unsigned *mask)
{
    int64_t ax[INTS_MAX];
    int na = 0, sa;
    const Onnx__AttributeProto *at = attr(n, "axes");
    *mask = 0;
    if (at) {
        if (at->n_ints > INTS_MAX) return fail(im, "node '%s' (%s): too many axes", node_name(n), n->op_type);
        for (size_t i = 0; i < at->n_ints; i++) ax[na++] = at->ints[i];
    } else if (n->n_input > 1 && n->input[1][0] && input_ints(im, n, 1, ax, &na, &sa) != 0)
        return fail(im, "node '%s' (%s): axes must be a constant", node_name(n), n->op_type);
    for (int i = 0; i < na; i++) {
        const int64_t a = ax[i] < 0 ? ax[i] + r + 1 : ax[i];
        if (a == 0) return fail(im, "node '%s' (%s): axis 0 is the batch axis", node_name(n), n->op_type);
        if (a < 1 || a > r || (*mask & (1u << (a - 1))))
            return fail(im, "node '%s' (%s): axis %lld is out of range or repeated", node_name(n), n->op_type,
                        (long long)ax[i]);
        *mask |= 1u << (a - 1);
    }
    return 0;
}

/* Squeeze and Unsqueeze of an activation's non-batch axes: a LAYER_RESHAPE. */
static int do_squeeze(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int unsqueeze)
{
    static const char *const known[] = {"axes", NULL};
    const value_t *x;
    model_shape_t in, to = {0};
    unsigned mask;
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &in);
    if (x->flat) {
        int C, H, W;
        model_build_shape(b, x->layer, &C, &H, &W);
        in = (model_shape_t){.rank = 1, .dims = {C * H * W}};
    }
    if (unsqueeze) {
        /* the axes count in the output's rank */
        const Onnx__AttributeProto *at = attr(n, "axes");
        int64_t ax[INTS_MAX];
        int na = 0, sa;
        if (at) na = (int)at->n_ints;
        else if (input_ints(im, n, 1, ax, &na, &sa) != 0) na = 0;
        if (sample_axes(im, n, in.rank + na, &mask)) return -1;
        to.rank = in.rank + na;
        if (na < 1 || to.rank > MODEL_MAX_RANK)
            return fail(im, "node '%s' (Unsqueeze): %d axes on a sample of rank %d (at most %d)", node_name(n), na,
                        in.rank, MODEL_MAX_RANK);
        for (int d = 0, k = 0; d < to.rank; d++) to.dims[d] = (mask & (1u << d)) ? 1 : in.dims[k++];
    } else {
        if (sample_axes(im, n, in.rank, &mask)) return -1;
        for (int d = 0; d < in.rank; d++) {
            const int drop = mask ? (mask >> d) & 1 : in.dims[d] == 1;
            if (drop && in.dims[d] != 1)
                return fail(im, "node '%s' (Squeeze): axis %d has %d elements, not 1", node_name(n), d + 1, in.dims[d]);
            if (!drop) to.dims[to.rank++] = in.dims[d];
        }
    }
    return define_output(im, n, model_build_reshape(b, x->layer, &to), 0);
}

/* Transpose of the non-batch axes (perm[0] = 0). */
static int do_transpose(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"perm", NULL};
    const value_t *x;
    model_shape_t in;
    const Onnx__AttributeProto *a = attr(n, "perm");
    const Onnx__TensorProto *t = input_tensor(im, n, 0);
    if (t && t->n_dims == 2 && check_attrs(im, n, known) == 0) {
        /* of a 2-D initializer: an (OUT, IN) weight for the MatMul that reads it */
        if (a && (a->n_ints != 2 || a->ints[0] != 1 || a->ints[1] != 0))
            return fail(im, "node '%s' (Transpose): of an initializer: only a 2-D one's perm (1, 0)", node_name(n));
        if (weight_name_ok(im, n, 0)) return -1; /* the name the MatMul's layer gives the weight */
        value_t *v = add_value(im, n->output[0], V_TENSOR);
        if (!v) return fail(im, "out of memory");
        v->tensor = t;
        v->transposed = 1;
        v->weight = n->input[0];
        return 0;
    }
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &in);
    const int L = x->lead ? 0 : 1, R = in.rank + L; /* the graph's rank; its axis q is the sample's q - L */
    if (a && (int)a->n_ints == R && x->lead && !x->flat && !x->defer && a->ints[0] != 0) {
        /* qkv.permute(2, 0, 3, 1, 4) of a lead value: moves the batch axis; left to the
         * Gathers on axis 0 that read it (do_gather), each of which takes one index of axis
         * perm[0] (any other such Transpose is a view: view_node) */
        unsigned seen = 0;
        for (int d = 0; d < R; d++) {
            if (a->ints[d] < 0 || a->ints[d] >= R || (seen >> a->ints[d]) & 1)
                return fail(im, "node '%s' (Transpose): perm is not a permutation", node_name(n));
            seen |= 1u << a->ints[d];
        }
        if (define_output(im, n, x->layer, 0)) return -1;
        value_t *v = &im->vals[im->nvals - 1];
        v->lead = x->lead;
        v->defer = 1;
        for (int d = 0; d < R; d++) v->perm[d] = (int)a->ints[d];
        return 0;
    }
    if (!a || (int)a->n_ints != R || x->flat || a->ints[0] != 0)
        return fail(im,
                    "node '%s' (Transpose): perm must name the %d axes with the batch axis first (a perm that "
                    "moves the batch axis of an input not flattened is read as a view)",
                    node_name(n), R);
    int perm[MODEL_MAX_RANK];
    for (int d = 0; d < in.rank; d++)
        perm[d] = a->ints[d + L] >= L && a->ints[d + L] < R ? (int)a->ints[d + L] - L : -1;
    const int li = model_build_transpose(b, x->layer, perm);
    if (model_build_failed(b)) return fail(im, "node '%s' (Transpose): perm is not a permutation", node_name(n));
    return define_output(im, n, li, 0);
}

/* Slice with constant starts, ends, axes and steps (not 0; a negative one walks down) of
 * non-batch axes: one LAYER_SLICE per axis. */
static int do_slice(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    int64_t v[4][INTS_MAX];
    int cnt[4] = {0, 0, 0, 0}, sc;
    model_shape_t s;
    if (check_attrs(im, n, none) || input_layer(im, n, 0, &x)) return -1;
    for (int i = 0; i < 4; i++)
        if ((size_t)i + 1 < n->n_input && n->input[i + 1][0] &&
            input_ints(im, n, (size_t)i + 1, v[i], &cnt[i], &sc) != 0)
            return fail(im, "node '%s' (Slice): starts, ends, axes and steps must be constants", node_name(n));
    if (cnt[0] < 1 || cnt[1] != cnt[0] || (cnt[2] && cnt[2] != cnt[0]) || (cnt[3] && cnt[3] != cnt[0]) || x->flat)
        return fail(im, "node '%s' (Slice): starts, ends, axes and steps of one length are required", node_name(n));
    int li = x->layer;
    for (int k = 0; k < cnt[0]; k++) {
        model_build_shape_nd(b, li, &s);
        const int64_t ax = cnt[2] ? (v[2][k] < 0 ? v[2][k] + s.rank + 1 : v[2][k]) : k, step = cnt[3] ? v[3][k] : 1;
        if (ax < 1 || ax > s.rank || step == 0)
            return fail(im, "node '%s' (Slice): axis %lld step %lld: only non-batch axes and steps not 0 are supported",
                        node_name(n), (long long)ax, (long long)step);
        const int dim = s.dims[ax - 1];
        const int64_t st = slice_bound_step(v[0][k], dim, step), en = slice_bound_step(v[1][k], dim, step);
        if ((step > 0 ? st >= en : st <= en) || step > DIM_MAX || step < -DIM_MAX)
            return fail(im, "node '%s' (Slice): an empty slice is not supported", node_name(n));
        li = model_build_slice(b, li, (int)ax - 1, (int)st, (int)en, (int)step);
    }
    return define_output(im, n, li, 0);
}

/* Split of a non-batch axis: sizes from the input (opset 13) or the attribute, or equal;
 * output i a LAYER_SLICE. */
static int do_split(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", "split", NULL};
    const value_t *x;
    model_shape_t s;
    int64_t sz[INTS_MAX];
    int ns = 0, sc;
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &s);
    int64_t ax = attr_int(n, "axis", 0);
    if (ax < 0) ax += s.rank + 1;
    if (ax < 1 || ax > s.rank || x->flat || n->n_output < 1 || n->n_output > INTS_MAX)
        return fail(im, "node '%s' (Split): axis %lld: only a non-batch axis into 1 to %d outputs is supported",
                    node_name(n), (long long)attr_int(n, "axis", 0), INTS_MAX);
    const int dim = s.dims[ax - 1];
    const Onnx__AttributeProto *a = attr(n, "split");
    if (a && a->n_ints <= INTS_MAX)
        for (size_t i = 0; i < a->n_ints; i++) sz[ns++] = a->ints[i];
    else if (n->n_input > 1 && n->input[1][0] && input_ints(im, n, 1, sz, &ns, &sc) != 0)
        return fail(im, "node '%s' (Split): split must be a constant", node_name(n));
    if (!ns) {
        ns = (int)n->n_output;
        for (int i = 0; i < ns; i++) sz[i] = dim / ns;
    }
    /* each size in [1, dim] before any is summed: sizes of 2^63 - 1 must not wrap to dim */
    int64_t total = 0;
    for (int i = 0; i < ns; i++)
        if (sz[i] < 1 || sz[i] > dim)
            return fail(im, "node '%s' (Split): size %d is %lld, not in [1, %d] (the axis)", node_name(n), i,
                        (long long)sz[i], dim);
        else total += sz[i];
    if (ns != (int)n->n_output || total != dim)
        return fail(im, "node '%s' (Split): %d sizes for %zu outputs do not split the axis of %d", node_name(n), ns,
                    n->n_output, dim);
    int off = 0;
    for (int i = 0; i < ns; i++) {
        const int li = model_build_slice(b, x->layer, (int)ax - 1, off, off + (int)sz[i], 1);
        off += (int)sz[i];
        if (!n->output[i][0]) continue;
        value_t *v = add_value(im, n->output[i], V_LAYER);
        if (!v) return fail(im, "out of memory");
        v->layer = li;
    }
    return 0;
}

/* ReduceMean and ReduceSum over non-batch axes (attribute axes, or input 1 from opset 13
 * for ReduceSum and 18 for ReduceMean) -> LAYER_REDUCE_*; the mean over an image's plane
 * (axes 2 and 3, or -2 and -1: torch's x.mean([2, 3]), as MNASNet ends) stays a global
 * average pool, keepdims 0 leaving (N, C) flat. */
static int do_reduce(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axes", "keepdims", "noop_with_empty_axes", NULL};
    const int mean = n->op_type[6] == 'M';
    const value_t *x;
    model_shape_t in;
    unsigned mask;
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &in);
    if (x->flat && in.rank != 1)
        return fail(im, "node '%s' (%s): of a flattened input (Flatten, Reshape to (N, -1)): not supported",
                    node_name(n), n->op_type);
    if (sample_axes(im, n, in.rank, &mask)) return -1;
    const int keep = attr_int(n, "keepdims", 1) != 0;
    if (!mask && attr_int(n, "noop_with_empty_axes", 0)) return define_output(im, n, x->layer, x->flat);
    if (!mask)
        return fail(im, "node '%s' (%s): no axes: the reduction over every axis, the batch axis too, is not supported",
                    node_name(n), n->op_type);
    if (mean && in.rank == 3 && !x->flat && mask == 6u)
        return define_output(im, n, model_build_gap(b, x->layer), !keep);
    return define_output(im, n,
                         model_build_reduce(b, mean ? LAYER_REDUCE_MEAN : LAYER_REDUCE_SUM, x->layer, mask, keep), 0);
}

/* Operand i of a binary operator as a layer: an activation (not flattened, unless it has
 * one axis), or a constant (an initializer: a parameter; a Constant node: a buffer) as a
 * LAYER_CONST, made once per value, whose shape loses a leading 1 that stands for the batch
 * (act_rank: the other operand's per-sample rank, -1 when both are constants). */
static int binary_operand(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, size_t i, int act_rank, int *li)
{
    value_t *v = i < n->n_input && n->input[i][0] ? find_value(im, n->input[i]) : NULL;
    if (v && v->transposed)
        return fail(im, "node '%s' (%s): input '%s' is a Transpose of an initializer, which only MatMul reads",
                    node_name(n), n->op_type, n->input[i]);
    if (v && (v->kind == V_TENSOR || v->kind == V_ARRAY)) {
        if (v->const_layer) return *li = v->const_layer - 1, 0;
        const Onnx__TensorProto *t = v->kind == V_TENSOR ? v->tensor : NULL;
        model_shape_t s = {.rank = t ? (int)t->n_dims : v->arank};
        const int64_t count = t ? tensor_count(t) : (int64_t)v->acount;
        int ok = count > 0 && s.rank <= MODEL_MAX_RANK + 1;
        for (int d = 0; ok && d < s.rank; d++) s.dims[d] = (int)(t ? t->dims[d] : v->adims[d]);
        if (ok && act_rank >= 0 && s.rank == act_rank + 1 && s.dims[0] == 1) {
            s.rank--;
            memmove(s.dims, s.dims + 1, (size_t)s.rank * sizeof *s.dims);
        }
        if (!ok || s.rank > MODEL_MAX_RANK || (act_rank >= 0 && s.rank > act_rank)) {
            char ts[96];
            return fail(im,
                        "node '%s' (%s): constant '%s' is %s: a constant operand has elements and at most the %d "
                        "axes of the activation's samples (and a leading 1 for the batch)",
                        node_name(n), n->op_type, n->input[i], ok ? model_shape_text(&s, ts, sizeof ts) : "empty",
                        act_rank);
        }
        if (weight_name_ok(im, n, i)) return -1;
        if (v->kind == V_ARRAY && v->table) {
            /* a gathered parameter (a relative position bias): the table and its indices */
            const value_t *tv = find_value(im, v->table);
            model_shape_t ts = {.rank = tv && tv->kind == V_TENSOR ? (int)tv->tensor->n_dims : 0};
            for (int d = 0; d < ts.rank && d < MODEL_MAX_RANK; d++) ts.dims[d] = (int)tv->tensor->dims[d];
            if (strlen(v->table) >= MODEL_TENSOR_NAME_MAX)
                return fail(im, "node '%s' (%s): parameter name '%.64s' is longer than %d bytes", node_name(n),
                            n->op_type, v->table, MODEL_TENSOR_NAME_MAX - 1);
            *li = model_build_gather_param(b, &s, &ts, v->table, n->input[i]);
            if (model_build_failed(b))
                return fail(im,
                            "node '%s' (%s): parameter '%s' gathered into %lld elements: at most 2^24 of a table "
                            "below 2^24",
                            node_name(n), n->op_type, v->table, (long long)count);
        } else *li = model_build_const(b, &s, n->input[i], v->constant_node || v->kind == V_ARRAY);
        v->const_layer = *li + 1;
        return 0;
    }
    const value_t *x;
    model_shape_t s;
    if (input_layer(im, n, i, &x)) return -1;
    model_build_shape_nd(b, x->layer, &s);
    if (x->flat && s.rank > 1)
        return fail(im, "node '%s' (%s): input '%s' is flattened: broadcasting reads N-D activations only",
                    node_name(n), n->op_type, n->input[i]);
    *li = x->layer;
    return 0;
}

/* Add, Sub, Mul, Div with NumPy broadcasting (kind LAYER_BADD .. LAYER_DIV): two
 * activations, or an activation and a constant. */
static int do_binary(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind)
{
    static const char *const none[] = {NULL};
    if (check_attrs(im, n, none)) return -1;
    if (n->n_input != 2) return fail(im, "node '%s' (%s): %zu inputs, want 2", node_name(n), n->op_type, n->n_input);
    const int t0 = const_input(im, n, 0), t1 = const_input(im, n, 1);
    if (t0 && t1)
        return fail(im, "node '%s' (%s): both operands are constants (export with constant folding)", node_name(n),
                    n->op_type);
    /* the activation first: its rank bounds the constant's */
    const size_t ia = t0 ? 1 : 0;
    int la, lc;
    model_shape_t sa, sc;
    char ta[96], tc[96];
    if (binary_operand(im, b, n, ia, -1, &la)) return -1;
    model_build_shape_nd(b, la, &sa);
    if (binary_operand(im, b, n, 1 - ia, sa.rank, &lc)) return -1;
    model_build_shape_nd(b, lc, &sc);
    const int li = ia == 0 ? model_build_binary(b, kind, la, lc) : model_build_binary(b, kind, lc, la);
    const int c_const = t0 || t1; /* the second operand read, lc, is the constant */
    if (model_build_failed(b))
        return fail(im, "node '%s' (%s): shapes %s and %s%s do not broadcast", node_name(n), n->op_type,
                    batch_text(&sa, ta, sizeof ta), c_const ? "the constant " : "",
                    c_const ? model_shape_text(&sc, tc, sizeof tc) : batch_text(&sc, tc, sizeof tc));
    return define_output(im, n, li, 0);
}

/* Whether n is a node a matched pattern stands for (then forgotten: each is seen once). */
static int fused_away(imp_t *im, const Onnx__NodeProto *n)
{
    for (int k = 0; k < im->nfused; k++)
        if (im->fused[k] == n) {
            im->fused[k] = im->fused[--im->nfused];
            return 1;
        }
    return 0;
}

/* Whether n is a node of operator op (a node of the graph may have none: do_node refuses it
 * when it gets there, a pattern probe only passes it by). */
static int op_is(const Onnx__NodeProto *n, const char *op) { return n && n->op_type && strcmp(n->op_type, op) == 0; }

/* The nodes that read value name into r[0..max), in graph order; returns how many there are
 * (max + 1 for more than max; the graph's output counts as a reader that is no node). */
static int readers(const imp_t *im, const char *name, const Onnx__NodeProto **r, int max)
{
    int k = strcmp(im->output, name) == 0 ? max + 1 : 0;
    for (size_t i = 0; i < im->g->n_node && k <= max; i++)
        for (size_t j = 0; j < im->g->node[i]->n_input && k <= max; j++)
            if (strcmp(im->g->node[i]->input[j], name) == 0) {
                if (k < max) r[k] = im->g->node[i];
                k++;
                break; /* a node reading it twice is one reader */
            }
    return k;
}

/* The node that alone reads value name (the graph's output is read by the caller too), or
 * NULL. */
static const Onnx__NodeProto *sole_reader(const imp_t *im, const char *name)
{
    const Onnx__NodeProto *r[1];
    return readers(im, name, r, 1) == 1 ? r[0] : NULL;
}

/* Whether value name is a float scalar (then in *f): an initializer or Constant seen
 * already, or a Constant node later in the graph (torch writes a pattern's constants where
 * it uses them). */
static int scalar_value(imp_t *im, const char *name, float *f)
{
    const value_t *val = find_value(im, name);
    const Onnx__TensorProto *t = val && val->kind == V_TENSOR ? val->tensor : NULL;
    for (size_t i = 0; !val && i < im->g->n_node; i++) {
        const Onnx__NodeProto *c = im->g->node[i];
        const Onnx__AttributeProto *a = op_is(c, "Constant") && c->n_output == 1 && strcmp(c->output[0], name) == 0
                                            ? attr(c, "value")
                                            : NULL;
        if (a && a->t) t = a->t;
    }
    const size_t keep = im->errlen; /* a probe: tensor_floats' refusal is not this node's (not written) */
    im->errlen = 0;
    const int ok = t && tensor_count(t) == 1 && tensor_floats(im, t, f, 1) == 0;
    im->errlen = keep;
    return ok;
}

static int is_scalar(imp_t *im, const char *name, float v, float tol)
{
    float f;
    return scalar_value(im, name, &f) && fabsf(f - v) <= tol;
}

/* n's operator is op with two inputs, a and a scalar equal to v (either order); a NULL:
 * any activation first, the scalar second. */
static int is_op_scalar(imp_t *im, const Onnx__NodeProto *n, const char *op, const char *a, float v)
{
    if (!op_is(n, op) || n->n_input != 2 || n->n_output != 1 || n->n_attribute) return 0;
    if (!a) return is_scalar(im, n->input[1], v, 1e-6f);
    for (int k = 0; k < 2; k++)
        if (strcmp(n->input[k], a) == 0 && is_scalar(im, n->input[1 - k], v, 1e-6f)) return 1;
    return 0;
}

/* torch 1.13's nn.GELU(): Div(x, sqrt(2)), Erf, Add 1, Mul by x, Mul by 0.5, each value
 * but the last read by the next node alone. At the Div: builds one LAYER_GELU for the five
 * and defines the last Mul's output; 1 where n does not start the pattern (the Div is then
 * an ordinary one). */
static int match_gelu(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x = find_value(im, n->input[0]);
    if (!x || x->kind != V_LAYER || !is_op_scalar(im, n, "Div", NULL, (float)M_SQRT2) ||
        im->nfused + 4 > (int)(sizeof im->fused / sizeof im->fused[0]))
        return 1;
    const Onnx__NodeProto *e = sole_reader(im, n->output[0]);
    if (!op_is(e, "Erf") || e->n_output != 1) return 1;
    const Onnx__NodeProto *a = sole_reader(im, e->output[0]);
    if (!is_op_scalar(im, a, "Add", e->output[0], 1.0f)) return 1;
    const Onnx__NodeProto *m1 = sole_reader(im, a->output[0]);
    if (!op_is(m1, "Mul") || m1->n_input != 2 || m1->n_output != 1 ||
        !((strcmp(m1->input[0], n->input[0]) == 0 && strcmp(m1->input[1], a->output[0]) == 0) ||
          (strcmp(m1->input[1], n->input[0]) == 0 && strcmp(m1->input[0], a->output[0]) == 0)))
        return 1;
    const Onnx__NodeProto *m2 = sole_reader(im, m1->output[0]);
    if (!is_op_scalar(im, m2, "Mul", m1->output[0], 0.5f)) return 1;
    const Onnx__NodeProto *const later[4] = {e, a, m1, m2};
    for (int k = 0; k < 4; k++) im->fused[im->nfused++] = later[k];
    return define_output(im, m2, model_build_unary(b, LAYER_GELU, x->layer, 0.0f), x->flat);
}

/* MatMul of two activations (attention's Q K^T, A V): one rank >= 3 with the batch, the
 * leading axes equal; a MatMul by a weight is do_matmul's. */
static int do_bmm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x, *y;
    if (check_attrs(im, n, none) || input_layer(im, n, 0, &x) || input_layer(im, n, 1, &y)) return -1;
    model_shape_t sa, sb;
    char ta[96], tb[96];
    model_build_shape_nd(b, x->layer, &sa);
    model_build_shape_nd(b, y->layer, &sb);
    const int li = model_build_bmm(b, x->layer, y->layer);
    if (x->flat || y->flat || model_build_failed(b))
        return fail(im,
                    "node '%s' (MatMul): %s times %s: two activations multiply as (N, ..., M, K) times (N, ..., "
                    "K, N2) with equal leading axes (no broadcasting)",
                    node_name(n), batch_text(&sa, ta, sizeof ta), batch_text(&sb, tb, sizeof tb));
    return define_output(im, n, li, 0);
}

/* The per-sample shape of value x as the graph sees it: a flattened one (N, C*H*W) has one
 * axis. */
static void seen_shape(model_builder_t *b, const value_t *x, model_shape_t *s)
{
    model_build_shape_nd(b, x->layer, s);
    if (!x->flat) return;
    int n = 1;
    for (int d = 0; d < s->rank; d++) n *= s->dims[d];
    *s = (model_shape_t){.rank = 1, .dims = {n}};
}

/* x's layer, or a reshape of it to s (seen_shape's) where its own shape is another: what a
 * layer normalising along the graph's axes reads. */
static int as_seen(model_builder_t *b, const value_t *x, const model_shape_t *s)
{
    model_shape_t own;
    model_build_shape_nd(b, x->layer, &own);
    return model_shape_equal(&own, s) ? x->layer : model_build_reshape(b, x->layer, s);
}

/* n (ReduceMean, keepdims 1) averages the last axes of a sample of rank r: the first of them
 * (a non-batch index), or -1. */
static int mean_axis(const Onnx__NodeProto *n, int r)
{
    /* n may be no node (a probe's sole reader that is none): not a match */
    const Onnx__AttributeProto *a = n ? attr(n, "axes") : NULL;
    if (!op_is(n, "ReduceMean") || n->n_input != 1 || n->n_output != 1 || !a || a->n_ints < 1 ||
        a->n_ints > (size_t)r || attr_int(n, "keepdims", 1) != 1)
        return -1;
    unsigned seen = 0;
    for (size_t i = 0; i < a->n_ints; i++) {
        const int64_t ax = a->ints[i] < 0 ? a->ints[i] + r + 1 : a->ints[i]; /* ONNX's: the batch 0 */
        if (ax < 1 || ax > r || (seen & (1u << ax))) return -1;
        seen |= 1u << ax;
    }
    const int first = r + 1 - (int)a->n_ints; /* the last n_ints axes, each once */
    for (int ax = first; ax <= r; ax++)
        if (!(seen & (1u << ax))) return -1;
    return first - 1;
}

/* n is op reading a and an initializer of count floats (either order): that initializer's
 * name, or NULL. */
static const char *op_weight(imp_t *im, const Onnx__NodeProto *n, const char *op, const char *a, size_t count)
{
    if (!op_is(n, op) || n->n_input != 2 || n->n_output != 1) return NULL;
    for (int k = 0; k < 2; k++) {
        const value_t *w = strcmp(n->input[k], a) == 0 ? find_value(im, n->input[1 - k]) : NULL;
        if (w && w->kind == V_TENSOR && !w->constant_node && tensor_count(w->tensor) == (int64_t)count &&
            strlen(n->input[1 - k]) < MODEL_TENSOR_NAME_MAX)
            return n->input[1 - k];
    }
    return NULL;
}

/* torch 1.13's nn.LayerNorm below opset 17: ReduceMean (the last axes), Sub, Pow 2,
 * ReduceMean, Add eps, Sqrt, Div, Mul weight, Add bias, each value read by the pattern alone
 * (the Sub's by the Pow and the Div). At the first ReduceMean: one LAYER_LAYERNORM with the
 * weight and bias under their names; 1 where n does not start the pattern. */
static int match_layernorm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x = find_value(im, n->input[0]);
    model_shape_t s;
    if (!x || x->kind != V_LAYER || im->nfused + 8 > (int)(sizeof im->fused / sizeof im->fused[0])) return 1;
    seen_shape(b, x, &s);
    const int axis = mean_axis(n, s.rank);
    if (axis < 0) return 1;
    size_t D = 1;
    for (int d = axis; d < s.rank; d++) D *= (size_t)s.dims[d];
    const Onnx__NodeProto *sub = sole_reader(im, n->output[0]), *r[2];
    if (!op_is(sub, "Sub") || sub->n_input != 2 || sub->n_output != 1 || strcmp(sub->input[0], n->input[0]) != 0 ||
        strcmp(sub->input[1], n->output[0]) != 0 || readers(im, sub->output[0], r, 2) != 2)
        return 1;
    const Onnx__NodeProto *pw = r[0], *dv = r[1];
    if (!is_op_scalar(im, pw, "Pow", sub->output[0], 2.0f)) return 1;
    const Onnx__NodeProto *m2 = sole_reader(im, pw->output[0]);
    if (mean_axis(m2, s.rank) != axis) return 1;
    const Onnx__NodeProto *ad = sole_reader(im, m2->output[0]);
    float eps = 0.0f;
    if (!op_is(ad, "Add") || ad->n_input != 2 || ad->n_output != 1 || strcmp(ad->input[0], m2->output[0]) != 0 ||
        !scalar_value(im, ad->input[1], &eps) || !(eps > 0.0f))
        return 1;
    const Onnx__NodeProto *sq = sole_reader(im, ad->output[0]);
    if (!op_is(sq, "Sqrt") || sq->n_input != 1 || sq->n_output != 1 || sole_reader(im, sq->output[0]) != dv ||
        !op_is(dv, "Div") || dv->n_input != 2 || dv->n_output != 1 || strcmp(dv->input[0], sub->output[0]) != 0 ||
        strcmp(dv->input[1], sq->output[0]) != 0)
        return 1;
    const Onnx__NodeProto *mu = sole_reader(im, dv->output[0]);
    const char *w = op_weight(im, mu, "Mul", dv->output[0], D);
    const Onnx__NodeProto *ab = w ? sole_reader(im, mu->output[0]) : NULL;
    const char *bias = ab ? op_weight(im, ab, "Add", mu->output[0], D) : NULL;
    if (!bias) return 1;
    const Onnx__NodeProto *const later[8] = {sub, pw, m2, ad, sq, dv, mu, ab};
    for (int k = 0; k < 8; k++) im->fused[im->nfused++] = later[k];
    return define_output(im, ab, model_build_layernorm(b, as_seen(b, x, &s), axis, eps, w, bias), 0);
}

/* ONNX LayerNormalization (opset 17): over the axes from axis (a non-batch one) to the last,
 * the scale and the bias (optional: zeros) initializers of those axes' size. */
static int do_layernorm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", "epsilon", "stash_type", NULL};
    const value_t *x;
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    model_shape_t s;
    seen_shape(b, x, &s);
    const int64_t given = attr_int(n, "axis", -1), ax = given < 0 ? given + s.rank + 1 : given;
    const float eps = attr_float(n, "epsilon", 1e-5f);
    if (ax < 1 || ax > s.rank)
        return fail(im, "node '%s' (LayerNormalization): axis %lld: only a non-batch axis (1 to %d) is supported",
                    node_name(n), (long long)given, s.rank);
    if (!(eps > 0.0f) || !isfinite(eps))
        return fail(im, "node '%s' (LayerNormalization): epsilon %g must be positive and finite", node_name(n), eps);
    size_t D = 1;
    for (int d = (int)ax - 1; d < s.rank; d++) D *= (size_t)s.dims[d];
    const Onnx__TensorProto *w = input_tensor(im, n, 1), *bt = input_tensor(im, n, 2);
    if (n->n_input < 3 || !w || !bt || tensor_count(w) != (int64_t)D || tensor_count(bt) != (int64_t)D)
        return fail(im, "node '%s' (LayerNormalization): scale and bias must be initializers of %zu elements",
                    node_name(n), D);
    if (weight_name_ok(im, n, 1) || weight_name_ok(im, n, 2)) return -1;
    return define_output(im, n, model_build_layernorm(b, as_seen(b, x, &s), (int)ax - 1, eps, n->input[1], n->input[2]),
                         0);
}

/* Gather on axis 0 of a Transpose that moved the batch axis (x->defer; q, k, v = qkv[0],
 * qkv[1], qkv[2] after Swin's qkv.permute(2, 0, 3, 1, 4)): the element of the source's
 * axis perm[0] (a LAYER_SLICE and a LAYER_RESHAPE without it), then the rest of perm, which
 * must bring the batch axis first (a LAYER_TRANSPOSE). */
static int gather_deferred(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x,
                           const model_shape_t *s, int64_t index, int scalar)
{
    const int L = x->lead ? 0 : 1, R = s->rank + L, q = x->perm[0];
    if (attr_int(n, "axis", 0) != 0 || !scalar || x->perm[1] != 0 || q - L < 0 || R < 3)
        return fail(im,
                    "node '%s' (Gather): of a Transpose that moves the batch axis: one index on axis 0, the batch "
                    "axis then first",
                    node_name(n));
    const int ax = q - L, dim = s->dims[ax];
    const int64_t k = index < 0 ? index + dim : index;
    if (k < 0 || k >= dim)
        return fail(im, "node '%s' (Gather): index %lld is out of range for an axis of %d", node_name(n),
                    (long long)index, dim);
    model_shape_t to = {.rank = s->rank - 1};
    for (int d = 0, o = 0; d < s->rank; d++)
        if (d != ax) to.dims[o++] = s->dims[d];
    int li = model_build_reshape(b, model_build_slice(b, x->layer, ax, (int)k, (int)k + 1, 1), &to);
    /* output axis j (the graph's j + L) is the source's graph axis perm[j + L + 1] */
    int perm[MODEL_MAX_RANK], identity = 1;
    for (int j = 0; j < to.rank; j++) {
        const int p = x->perm[j + L + 1] - L;
        perm[j] = p < ax ? p : p - 1;
        identity &= perm[j] == j;
    }
    if (!identity) li = model_build_transpose(b, li, perm);
    if (model_build_failed(b)) return fail(im, "node '%s' (Gather): of a Transpose: not supported", node_name(n));
    if (define_output(im, n, li, 0)) return -1;
    im->vals[im->nvals - 1].lead = x->lead;
    im->vals[im->nvals - 1].defer = 0;
    return 0;
}

/* Gather of an activation along a non-batch axis by one constant index (ViT's class token,
 * x[:, 0]): a LAYER_SLICE of that element, and for a scalar index a LAYER_RESHAPE without
 * the axis. Gather of shapes is do_shape_op's. */
static int do_gather(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", NULL};
    const value_t *x;
    int64_t idx[INTS_MAX];
    int ni, scalar;
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    if (n->n_input != 2 || input_ints(im, n, 1, idx, &ni, &scalar) || ni != 1)
        return fail(im, "node '%s' (Gather): the indices of an activation must be one constant integer", node_name(n));
    model_shape_t s;
    seen_shape(b, x, &s);
    if (x->defer) return gather_deferred(im, b, n, x, &s, idx[0], scalar);
    if (x->lead)
        return fail(im, "node '%s' (Gather): of a value whose batch axis holds several of the sample's elements",
                    node_name(n));
    const int64_t given = attr_int(n, "axis", 0), ax = given < 0 ? given + s.rank + 1 : given;
    if (ax < 1 || ax > s.rank)
        return fail(im, "node '%s' (Gather): axis %lld: only a non-batch axis (1 to %d) is supported", node_name(n),
                    (long long)given, s.rank);
    const int dim = s.dims[ax - 1];
    const int64_t k = idx[0] < 0 ? idx[0] + dim : idx[0];
    if (k < 0 || k >= dim)
        return fail(im, "node '%s' (Gather): index %lld is out of range for an axis of %d", node_name(n),
                    (long long)idx[0], dim);
    int li = model_build_slice(b, as_seen(b, x, &s), (int)ax - 1, (int)k, (int)k + 1, 1);
    if (scalar) {
        model_shape_t to = {.rank = s.rank - 1};
        for (int d = 0, o = 0; d < s.rank; d++)
            if (d != ax - 1) to.dims[o++] = s.dims[d];
        li = model_build_reshape(b, li, &to);
    }
    return define_output(im, n, li, 0);
}

/* Softmax and LogSoftmax along one non-batch axis. Opset 13's normalise that axis alone;
 * before 13 they normalise the axis and every axis after it together (the input seen as 2-D),
 * which is the same only for the last axis: any other is refused by name. A flattened value
 * (N, C*H*W) is reshaped to its one axis first. */
static int do_softmax(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", NULL};
    const value_t *x;
    if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
    if (n->n_input != 1) return fail(im, "node '%s' (%s): %zu inputs, want 1", node_name(n), n->op_type, n->n_input);
    model_shape_t s;
    seen_shape(b, x, &s);
    const int li = as_seen(b, x, &s);
    const int64_t given = attr_int(n, "axis", im->opset >= 13 ? -1 : 1);
    /* ONNX's: the batch axis 0; of a lead value, the graph's axis a >= 1 is the sample's a */
    const int64_t ax = (given < 0 ? given + s.rank + 1 - x->lead : given) + x->lead;
    if (ax < 1 + x->lead || ax > s.rank)
        return fail(im, "node '%s' (%s): axis %lld: only a non-batch axis (1 to %d) is supported", node_name(n),
                    n->op_type, (long long)given, s.rank);
    if (im->opset < 13 && ax != s.rank)
        return fail(im,
                    "node '%s' (%s): axis %lld in opset %lld normalises that axis and every later one together; "
                    "only the last axis is supported before opset 13",
                    node_name(n), n->op_type, (long long)given, (long long)im->opset);
    const layer_kind_t k = n->op_type[0] == 'L' ? LAYER_LOG_SOFTMAX : LAYER_SOFTMAX;
    return define_output(im, n, model_build_softmax(b, k, li, (int)ax - 1), 0);
}

/* Whether n reads two activations of which one is a lead value (its batch axis holding
 * the sample's axis 0) and the other not: no operator pairs them. */
static int mixed_lead(imp_t *im, const Onnx__NodeProto *n)
{
    int seen = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const value_t *x = n->input[i][0] ? find_value(im, n->input[i]) : NULL;
        if (!x || x->kind != V_LAYER) continue;
        seen |= 1 << (x->lead != 0);
    }
    return seen == 3;
}

static int do_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);

/* ---- views: the batch axis moved or merged (value_t's view) ----------------------------- */

/* The view of value x: its own, or its layer's output as it is (x not flattened). */
static void view_get(const model_builder_t *b, const value_t *x, view_t *v)
{
    if (x->viewed) {
        *v = x->view;
        return;
    }
    model_shape_t s;
    model_build_shape_nd(b, x->layer, &s);
    v->np = v->ng = 1 + s.rank;
    for (int d = 0; d < v->np; d++) {
        v->pd[d] = d ? s.dims[d - 1] : 1;
        v->gn[d] = 1;
        v->ax[d] = d;
    }
}

/* Whether v reads its layer's output as it is. */
static int view_is_plain(const view_t *v)
{
    if (v->ng != v->np) return 0;
    for (int d = 0; d < v->np; d++)
        if (v->ax[d] != d) return 0;
    return 1;
}

/* The graph's shape of v: group products, the batch's group a multiple k N (is_batch). */
static void view_dims(const view_t *v, int64_t *dims)
{
    for (int g = 0, k = 0; g < v->ng; g++) {
        int64_t p = 1;
        int nb = 0;
        for (int e = 0; e < v->gn[g]; e++, k++) {
            nb |= v->ax[k] == 0;
            p *= v->pd[v->ax[k]];
        }
        dims[g] = nb ? batch_times(p) : p;
    }
}

/* "(L, N * 4, 8)" of v into buf; returns buf. */
static const char *view_text(const view_t *v, char *buf, size_t len)
{
    int64_t d[VIEW_AXES];
    size_t o = 0;
    view_dims(v, d);
    for (int g = 0; g < v->ng && o < len; g++) {
        const int w = is_batch(d[g])
                          ? (batch_k(d[g]) > 1
                                 ? snprintf(buf + o, len - o, "%sN * %lld", g ? ", " : "(", (long long)batch_k(d[g]))
                                 : snprintf(buf + o, len - o, "%sN", g ? ", " : "("))
                          : snprintf(buf + o, len - o, "%s%lld", g ? ", " : "(", (long long)d[g]);
        if (w < 0) break;
        o += (size_t)w;
    }
    if (o < len) snprintf(buf + o, len - o, ")");
    return buf;
}

/* Defines output `out` of n as layer li read through v (plain: no view). */
static int view_define(imp_t *im, const Onnx__NodeProto *n, size_t out, int li, const view_t *v)
{
    value_t *x = add_value(im, n->output[out], V_LAYER);
    if (!x) return fail(im, "out of memory");
    x->layer = li;
    x->viewed = !view_is_plain(v);
    if (x->viewed) x->view = *v;
    return 0;
}

/* The physical sample shape of v (its axes but the batch). */
static model_shape_t view_sample(const view_t *v)
{
    model_shape_t s = {.rank = v->np - 1};
    for (int d = 1; d < v->np; d++) s.dims[d - 1] = v->pd[d];
    return s;
}

/* view_normal's mark of a physical axis of 1 dropped from the batch's group */
#define DROPPED INT32_MIN

/* Rewrites layer *li and v into the normal form: the physical axes in the graph's order but
 * the batch first (a LAYER_TRANSPOSE), and each group without the batch one physical axis
 * (a LAYER_RESHAPE). Then a group without the batch is one axis in place, the last group is
 * the last physical axis where it has no batch, and v is plain where the batch is the
 * first group alone. */
static void view_normal(model_builder_t *b, int *li, view_t *v)
{
    int order[VIEW_AXES], pos[VIEW_AXES], k = 1, moved = 0;
    order[0] = 0;
    for (int e = 0; e < v->np; e++)
        if (v->ax[e] != 0) order[k++] = v->ax[e];
    for (int d = 0; d < v->np; d++) {
        pos[order[d]] = d;
        moved |= order[d] != d;
    }
    if (moved) {
        int perm[MODEL_MAX_RANK];
        for (int d = 1; d < v->np; d++) perm[d - 1] = order[d] - 1;
        *li = model_build_transpose(b, *li, perm);
        int pd[VIEW_AXES] = {0};
        for (int d = 0; d < v->np; d++) pd[d] = v->pd[order[d]];
        memcpy(v->pd, pd, sizeof pd);
        for (int e = 0; e < v->np; e++) v->ax[e] = pos[v->ax[e]];
    }
    /* merge each batch-less group into one axis: they are adjacent now, in order; the axes
     * of 1 in the batch's group are dropped (DROPPED: what a Squeeze left beside it) */
    view_t w = {.np = 1, .pd = {1}, .ng = v->ng};
    int map[VIEW_AXES], merged = 0;
    map[0] = 0;
    for (int g = 0, e = 0; g < v->ng; e += v->gn[g++]) {
        int nb = 0;
        for (int f = 0; f < v->gn[g]; f++) nb |= v->ax[e + f] == 0;
        if (nb) {
            for (int f = 0; f < v->gn[g]; f++) {
                const int a = v->ax[e + f];
                if (a != 0 && v->pd[a] == 1) map[a] = DROPPED, merged = 1;
                else if (a != 0) map[a] = w.np, w.pd[w.np++] = v->pd[a];
            }
            continue;
        }
        int p = 1;
        for (int f = 0; f < v->gn[g]; f++) p *= v->pd[v->ax[e + f]], map[v->ax[e + f]] = -1 - w.np;
        merged |= v->gn[g] > 1;
        w.pd[w.np++] = p;
    }
    if (!merged) return;
    /* the physical axes are numbered in order: rebuild the groups from the merged ones */
    for (int g = 0, e = 0, o = 0; g < v->ng; e += v->gn[g++]) {
        int nb = 0;
        for (int f = 0; f < v->gn[g]; f++) nb |= v->ax[e + f] == 0;
        if (!nb) {
            w.gn[g] = 1;
            w.ax[o++] = -1 - map[v->ax[e]];
            continue;
        }
        w.gn[g] = 0;
        for (int f = 0; f < v->gn[g]; f++)
            if (map[v->ax[e + f]] != DROPPED) w.ax[o++] = map[v->ax[e + f]], w.gn[g]++;
    }
    model_shape_t to = view_sample(&w);
    *li = model_build_reshape(b, *li, &to);
    *v = w;
}

/* Makes value x (V_LAYER, viewed) plain for a node that reads its input as it is: normal
 * form, which must leave the batch the first axis alone. */
static int view_plain(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, value_t *x)
{
    view_t v = x->view;
    int li = x->layer;
    char t[96];
    view_normal(b, &li, &v);
    if (!view_is_plain(&v))
        return fail(im,
                    "node '%s' (%s): input '%s' is %s, its batch axis moved or merged by a Transpose or Reshape; "
                    "only Transpose, Reshape, Squeeze, Unsqueeze, Shape, MatMul, Gemm, Softmax, Slice, Split, Gather and "
                    "elementwise operators read such a tensor",
                    node_name(n), n->op_type, x->name, view_text(&x->view, t, sizeof t));
    x->layer = li;
    x->viewed = 0;
    return 0;
}

/* Whether the last group of v is one physical axis, the last, not the batch: what an
 * operator along the last axis (MatMul by a weight, Softmax, a bias) reads in place. */
static int view_last_ok(const view_t *v) { return v->gn[v->ng - 1] == 1 && v->ax[v->np - 1] == v->np - 1 && v->np > 1; }

/* x's view with its last axis in place (view_normal where needed), its layer in *li. */
static int view_last(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, int *li, view_t *v)
{
    char t[96];
    view_get(b, x, v);
    *li = x->layer;
    if (!view_last_ok(v)) view_normal(b, li, v);
    if (!view_last_ok(v))
        return fail(im, "node '%s' (%s): input '%s' is %s: its last axis holds the batch", node_name(n), n->op_type,
                    x->name, view_text(&x->view, t, sizeof t));
    return 0;
}

/* Transpose of a view, or one that moves the batch axis: the groups reordered, no layer. */
static int view_transpose(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    view_t v, w;
    view_get(b, x, &v);
    const Onnx__AttributeProto *a = attr(n, "perm");
    int first[VIEW_AXES], seen = 0;
    for (int g = 0, e = 0; g < v.ng; e += v.gn[g++]) first[g] = e;
    if (!a || (int)a->n_ints != v.ng)
        return fail(im, "node '%s' (Transpose): perm must name the %d axes", node_name(n), v.ng);
    w = v;
    for (int g = 0, o = 0; g < v.ng; g++) {
        const int64_t p = a->ints[g];
        if (p < 0 || p >= v.ng || (seen >> p & 1))
            return fail(im, "node '%s' (Transpose): perm is not a permutation", node_name(n));
        seen |= 1 << p;
        w.gn[g] = v.gn[p];
        for (int f = 0; f < v.gn[p]; f++) w.ax[o++] = v.ax[first[p] + f];
    }
    return view_define(im, n, 0, x->layer, &w);
}

/* Reshape of a view, or one whose shape holds the batch elsewhere than first alone (a
 * multiple k N, or not first): the graph's axes regrouped along the physical ones in their
 * order, a physical axis cut where a new axis ends inside it (a LAYER_RESHAPE of the
 * layer). sh: the shape (0 copies an axis, one -1 takes what is left). */
static int view_reshape(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, const int64_t *sh,
                        int nsh)
{
    view_t v;
    char t[96];
    view_get(b, x, &v);
    int64_t cur[VIEW_AXES], tk[VIEW_AXES];
    int tn[VIEW_AXES], infer = -1;
    int64_t rest = 1, known = 1; /* the physical elements but the batch; the known target's */
    int known_n = 0;
    view_dims(&v, cur);
    for (int d = 1; d < v.np; d++) rest *= v.pd[d];
    if (nsh < 1 || nsh > VIEW_AXES) goto refuse;
    for (int i = 0; i < nsh; i++) {
        int64_t s = sh[i] == 0 && i < v.ng ? cur[i] : sh[i];
        tn[i] = is_batch(s);
        tk[i] = tn[i] ? batch_k(s) : s;
        if (s == -1 && infer < 0) {
            infer = i;
            continue;
        }
        if (tk[i] < 1 || tk[i] > DIM_MAX || (tn[i] && known_n) || model_dim_mul(known, tk[i], &known) != 0) goto refuse;
        known_n |= tn[i];
        if (known > rest) goto refuse;
    }
    if (infer >= 0) {
        if (rest % known) goto refuse;
        tk[infer] = rest / known;
        tn[infer] = !known_n;
    } else if (known != rest || !known_n) goto refuse;
    /* the walk: the physical axes in the graph's order, cut into pieces, each target axis
     * the pieces whose product it is */
    int pieces[VIEW_AXES][VIEW_AXES], np[VIEW_AXES] = {0}, gp[VIEW_AXES * 2][2], ngp = 0, gn[VIEW_AXES];
    int e = 0;
    int64_t left = v.pd[v.ax[0]]; /* what is left of the current physical axis */
    for (int i = 0; i < nsh; i++) {
        int64_t acc = 1;
        int accn = 0;
        gn[i] = 0;
        if (tk[i] == 1 && !tn[i]) {
            /* a new axis of 1: a piece of 1 cut in front of what is left (or after the last) */
            const int p = e < v.np ? v.ax[e] : v.ax[v.np - 1];
            if (np[p] >= VIEW_AXES) goto refuse;
            pieces[p][np[p]] = 1;
            gp[ngp][0] = p, gp[ngp][1] = np[p]++, ngp++, gn[i] = 1;
            continue;
        }
        while (acc != tk[i] || accn != tn[i]) {
            if (e >= v.np || ngp >= 2 * VIEW_AXES) goto refuse;
            const int p = v.ax[e];
            int64_t take;
            if (p == 0) {
                if (!tn[i] || accn) goto refuse;
                accn = 1, take = 1;
            } else {
                if (tk[i] % acc) goto refuse;
                const int64_t need = tk[i] / acc;
                if (left <= need && need % left == 0) take = left;
                else if (need > 1 && left % need == 0) take = need;
                else goto refuse;
                acc *= take;
            }
            if (np[p] >= VIEW_AXES) goto refuse;
            pieces[p][np[p]] = (int)take;
            gp[ngp][0] = p, gp[ngp][1] = np[p]++, ngp++, gn[i]++;
            left = p == 0 ? 1 : left / take;
            if (left == 1 && ++e < v.np) left = v.pd[v.ax[e]];
        }
    }
    /* axes of 1 left over join the last group */
    for (; e < v.np; e++) {
        const int p = v.ax[e];
        if (v.pd[p] != 1 || np[p] || np[p] >= VIEW_AXES) goto refuse;
        pieces[p][np[p]] = 1;
        gp[ngp][0] = p, gp[ngp][1] = np[p]++, ngp++, gn[nsh - 1]++;
    }
    /* the new physical axes: each old one's pieces in order */
    view_t w = {.ng = nsh};
    int base[VIEW_AXES], cut = 0;
    w.np = 0;
    for (int p = 0; p < v.np; p++) {
        base[p] = w.np;
        if (w.np + np[p] > VIEW_AXES) goto refuse;
        cut |= np[p] != 1;
        for (int k = 0; k < np[p]; k++) w.pd[w.np++] = p == 0 ? 1 : pieces[p][k];
    }
    for (int i = 0, o = 0; i < nsh; i++) {
        w.gn[i] = gn[i];
        for (int f = 0; f < gn[i]; f++, o++) w.ax[o] = base[gp[o][0]] + gp[o][1];
    }
    int li = x->layer;
    if (cut) {
        model_shape_t to = view_sample(&w);
        li = model_build_reshape(b, li, &to);
    }
    return view_define(im, n, 0, li, &w);
refuse:
    if (im->batch_dim > 0 && !known_n)
        /* torch folded the batch of the example input into the shape: (L, N * heads, d)
         * and (L * N, E) both became constants without N, so where N goes is lost */
        return fail(im,
                    "node '%s' (%s): %s to a constant shape of %d axes without the batch: the file fixes the "
                    "batch to %d, so the shape no longer says which axis holds it; export with a dynamic batch "
                    "(torch.onnx.export(..., dynamic_axes={'%.64s': {0: 'N'}}))",
                    node_name(n), n->op_type, view_text(&v, t, sizeof t), nsh, im->batch_dim,
                    im->input ? im->input : "input");
    return fail(im, "node '%s' (%s): %s cannot be read as the shape given (its axes regrouped in order)", node_name(n),
                n->op_type, view_text(&v, t, sizeof t));
}

/* Runs n's own handler on the physical layers of its viewed inputs (all of view v, layer li
 * for x), then gives every activation it defined the view v with its layer's sizes: for the
 * operators that work on the physical axes as they are (elementwise ones, and those along
 * the last axis once view_last put it in place). */
static int view_through(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const view_t *v)
{
    size_t hidden[8], nh = 0, first = im->nvals;
    for (size_t i = 0; i < n->n_input && nh < 8; i++) {
        value_t *x = n->input[i][0] ? find_value(im, n->input[i]) : NULL;
        if (x && x->kind == V_LAYER && x->viewed) x->viewed = 0, hidden[nh++] = (size_t)(x - im->vals);
    }
    int rc = do_node(im, b, n);
    for (size_t k = 0; k < nh; k++) im->vals[hidden[k]].viewed = 1;
    for (size_t k = first; rc == 0 && k < im->nvals; k++) {
        value_t *o = &im->vals[k];
        model_shape_t s;
        if (o->kind != V_LAYER) continue;
        model_build_shape_nd(b, o->layer, &s);
        if (s.rank != v->np - 1 || o->flat)
            return fail(im, "node '%s' (%s): its output does not keep the axes of its input's view", node_name(n),
                        n->op_type);
        o->viewed = 1;
        o->view = *v;
        for (int d = 1; d < v->np; d++) o->view.pd[d] = s.dims[d - 1];
    }
    return rc;
}

/* Slice of a view: each axis sliced one physical axis without the batch. */
static int view_slice(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    static const char *const none[] = {NULL};
    int64_t s[4][INTS_MAX];
    int cnt[4] = {0, 0, 0, 0}, sc;
    view_t v;
    char t[96];
    view_get(b, x, &v);
    int li = x->layer, first[VIEW_AXES];
    for (int g = 0, e = 0; g < v.ng; e += v.gn[g++]) first[g] = e;
    if (check_attrs(im, n, none)) return -1;
    for (int i = 0; i < 4; i++)
        if ((size_t)i + 1 < n->n_input && n->input[i + 1][0] &&
            input_ints(im, n, (size_t)i + 1, s[i], &cnt[i], &sc) != 0)
            return fail(im, "node '%s' (Slice): starts, ends, axes and steps must be constants", node_name(n));
    if (cnt[0] < 1 || cnt[1] != cnt[0] || (cnt[2] && cnt[2] != cnt[0]) || (cnt[3] && cnt[3] != cnt[0]))
        return fail(im, "node '%s' (Slice): starts, ends, axes and steps of one length are required", node_name(n));
    for (int k = 0; k < cnt[0]; k++) {
        const int64_t ax = cnt[2] ? (s[2][k] < 0 ? s[2][k] + v.ng : s[2][k]) : k, step = cnt[3] ? s[3][k] : 1;
        const int p = ax >= 0 && ax < v.ng && v.gn[ax] == 1 ? v.ax[first[ax]] : 0;
        if (p == 0 || step == 0 || step > DIM_MAX || step < -DIM_MAX)
            return fail(im, "node '%s' (Slice): axis %lld of %s: only an axis without the batch, a step not 0",
                        node_name(n), (long long)ax, view_text(&v, t, sizeof t));
        const int64_t st = slice_bound_step(s[0][k], v.pd[p], step), en = slice_bound_step(s[1][k], v.pd[p], step);
        if (step > 0 ? st >= en : st <= en)
            return fail(im, "node '%s' (Slice): an empty slice is not supported", node_name(n));
        li = model_build_slice(b, li, p - 1, (int)st, (int)en, (int)step);
        model_shape_t o;
        model_build_shape_nd(b, li, &o);
        v.pd[p] = o.dims[p - 1];
    }
    return view_define(im, n, 0, li, &v);
}

/* Gather of a view by one constant index along a graph axis that is one physical axis
 * without the batch (Swin's q, k, v = qkv[0], qkv[1], qkv[2] after qkv.permute(2, 0, 3, 1,
 * 4)): a LAYER_SLICE of that element, and for a scalar index a LAYER_RESHAPE without the
 * axis, the view then without its group. */
static int view_gather(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    static const char *const known[] = {"axis", NULL};
    int64_t idx[INTS_MAX];
    int ni, scalar, first[VIEW_AXES];
    view_t v;
    char t[96];
    view_get(b, x, &v);
    for (int g = 0, e = 0; g < v.ng; e += v.gn[g++]) first[g] = e;
    if (check_attrs(im, n, known)) return -1;
    if (n->n_input != 2 || input_ints(im, n, 1, idx, &ni, &scalar) || ni != 1)
        return fail(im, "node '%s' (Gather): the indices of an activation must be one constant integer", node_name(n));
    const int64_t given = attr_int(n, "axis", 0), g = given < 0 ? given + v.ng : given;
    const int p = g >= 0 && g < v.ng && v.gn[g] == 1 ? v.ax[first[g]] : 0;
    if (p == 0)
        return fail(im, "node '%s' (Gather): axis %lld of %s: only an axis without the batch", node_name(n),
                    (long long)given, view_text(&v, t, sizeof t));
    const int64_t k = idx[0] < 0 ? idx[0] + v.pd[p] : idx[0];
    if (k < 0 || k >= v.pd[p])
        return fail(im, "node '%s' (Gather): index %lld is out of range for an axis of %d", node_name(n),
                    (long long)idx[0], v.pd[p]);
    int li = model_build_slice(b, x->layer, p - 1, (int)k, (int)k + 1, 1);
    v.pd[p] = 1;
    if (!scalar) return view_define(im, n, 0, li, &v);
    /* drop physical axis p and group g */
    view_t w = {.np = v.np - 1, .ng = v.ng - 1};
    for (int d = 0; d < v.np; d++)
        if (d != p) w.pd[d - (d > p)] = v.pd[d];
    for (int h = 0, o = 0; h < v.ng; h++) {
        if (h == g) continue;
        w.gn[h - (h > g)] = v.gn[h];
        for (int f = 0; f < v.gn[h]; f++) {
            const int a = v.ax[first[h] + f];
            w.ax[o++] = a - (a > p);
        }
    }
    model_shape_t to = view_sample(&w);
    return view_define(im, n, 0, model_build_reshape(b, li, &to), &w);
}

/* Split of a view along a graph axis that is one physical axis without the batch (timm's
 * q, k, v = qkv.unbind(0) after qkv.permute(2, 0, 3, 1, 4), which torch writes as a Split
 * on axis 0 and a Squeeze of each part): a LAYER_SLICE per output, each the view with that
 * axis's size its part. Sizes as do_split takes them: the attribute (before opset 13), the
 * constant input, or equal parts. */
static int view_split(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    static const char *const known[] = {"axis", "split", NULL};
    int64_t sz[INTS_MAX];
    int ns = 0, sc, first[VIEW_AXES];
    view_t v;
    char t[96];
    view_get(b, x, &v);
    for (int g = 0, e = 0; g < v.ng; e += v.gn[g++]) first[g] = e;
    if (check_attrs(im, n, known)) return -1;
    const int64_t given = attr_int(n, "axis", 0), g = given < 0 ? given + v.ng : given;
    const int p = g >= 0 && g < v.ng && v.gn[g] == 1 ? v.ax[first[g]] : 0;
    if (p == 0 || n->n_output < 1 || n->n_output > INTS_MAX)
        return fail(im, "node '%s' (Split): axis %lld of %s: only an axis without the batch, into 1 to %d outputs",
                    node_name(n), (long long)given, view_text(&v, t, sizeof t), INTS_MAX);
    const int dim = v.pd[p];
    const Onnx__AttributeProto *a = attr(n, "split");
    if (a && a->n_ints <= INTS_MAX)
        for (size_t i = 0; i < a->n_ints; i++) sz[ns++] = a->ints[i];
    else if (n->n_input > 1 && n->input[1][0] && input_ints(im, n, 1, sz, &ns, &sc) != 0)
        return fail(im, "node '%s' (Split): split must be a constant", node_name(n));
    if (!ns) {
        ns = (int)n->n_output;
        for (int i = 0; i < ns; i++) sz[i] = dim / ns;
    }
    int64_t total = 0; /* each size bounded before any is summed */
    for (int i = 0; i < ns; i++) {
        if (sz[i] < 1 || sz[i] > dim)
            return fail(im, "node '%s' (Split): size %d is %lld, not in [1, %d] (the axis)", node_name(n), i,
                        (long long)sz[i], dim);
        total += sz[i];
    }
    if (ns != (int)n->n_output || total != dim)
        return fail(im, "node '%s' (Split): %d sizes for %zu outputs do not split the axis of %d", node_name(n), ns,
                    n->n_output, dim);
    for (int i = 0, off = 0; i < ns; off += (int)sz[i++]) {
        if (!n->output[i][0]) continue;
        view_t w = v;
        w.pd[p] = (int)sz[i];
        if (view_define(im, n, (size_t)i, model_build_slice(b, x->layer, p - 1, off, off + (int)sz[i], 1), &w))
            return -1;
    }
    return 0;
}

/* Squeeze or Unsqueeze of a view: a Reshape of it (view_reshape) to its shape without the
 * axes of 1 named (all of them when none are), or with axes of 1 inserted there. The axes:
 * an attribute before opset 13, a constant input from it. */
static int view_squeeze(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, int unsqueeze)
{
    static const char *const known[] = {"axes", NULL};
    int64_t axes[INTS_MAX], cur[VIEW_AXES], sh[VIEW_AXES];
    int na = 0, sc, nsh = 0;
    unsigned named = 0;
    view_t v;
    char t[96];
    view_get(b, x, &v);
    view_dims(&v, cur);
    if (check_attrs(im, n, known)) return -1;
    const Onnx__AttributeProto *a = attr(n, "axes");
    if (a && a->n_ints <= INTS_MAX)
        for (size_t i = 0; i < a->n_ints; i++) axes[na++] = a->ints[i];
    else if (a || (n->n_input > 1 && n->input[1][0] && input_ints(im, n, 1, axes, &na, &sc) != 0))
        return fail(im, "node '%s' (%s): axes must be a constant of at most %d values", node_name(n), n->op_type,
                    INTS_MAX);
    const int out_rank = unsqueeze ? v.ng + na : v.ng;
    for (int i = 0; i < na; i++) {
        const int64_t k = axes[i] < 0 ? axes[i] + out_rank : axes[i];
        if (k < 0 || k >= out_rank || k >= VIEW_AXES || (named >> k & 1))
            return fail(im, "node '%s' (%s): axis %lld of %s: out of range or named twice", node_name(n), n->op_type,
                        (long long)axes[i], view_text(&v, t, sizeof t));
        named |= 1u << k;
    }
    for (int d = 0, g = 0; d < out_rank; d++) {
        const int pick = (named >> d & 1) || (!unsqueeze && !na && cur[g] == 1);
        if (unsqueeze) {
            sh[nsh++] = pick ? 1 : cur[g++];
            continue;
        }
        if (pick && cur[g] != 1)
            return fail(im, "node '%s' (Squeeze): axis %d of %s is not of size 1", node_name(n), d,
                        view_text(&v, t, sizeof t));
        if (!pick) sh[nsh++] = cur[g];
        g++;
    }
    if (nsh < 1 || nsh > VIEW_AXES)
        return fail(im, "node '%s' (%s): %s would have %d axes (1 to %d)", node_name(n), n->op_type,
                    view_text(&v, t, sizeof t), nsh, VIEW_AXES);
    return view_reshape(im, b, n, x, sh, nsh);
}

/* MatMul of two activations, either a view: both in normal form with the batch in their
 * first axis and grouped alike ((N * heads, L, d) times (N * heads, d, L)) */
static int view_bmm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, const value_t *y)
{
    view_t v[2];
    int li[2];
    char t[2][96];
    const value_t *xy[2] = {x, y};
    for (int k = 0; k < 2; k++) {
        view_get(b, xy[k], &v[k]);
        li[k] = xy[k]->layer;
        view_normal(b, &li[k], &v[k]);
    }
    int same = v[0].ng == v[1].ng && v[0].np == v[1].np && v[0].ax[0] == 0 && v[1].ax[0] == 0;
    for (int g = 0; same && g < v[0].ng; g++) same = v[0].gn[g] == v[1].gn[g];
    const int lo = same ? model_build_bmm(b, li[0], li[1]) : -1;
    if (!same || model_build_failed(b))
        return fail(im,
                    "node '%s' (MatMul): %s times %s: two activations multiply as (N, ..., M, K) times (N, ..., K, "
                    "N2) with equal leading axes (no broadcasting)",
                    node_name(n), view_text(&v[0], t[0], sizeof t[0]), view_text(&v[1], t[1], sizeof t[1]));
    model_shape_t o;
    model_build_shape_nd(b, lo, &o);
    for (int d = 1; d < v[0].np; d++) v[0].pd[d] = o.dims[d - 1];
    return view_define(im, n, 0, lo, &v[0]);
}

/* Gemm of a 2-D view ((L * N, E): the out-projection of nn.MultiheadAttention): a
 * LAYER_LINEAR along its last axis, alpha and beta 1 */
static int view_gemm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    static const char *const known[] = {"alpha", "beta", "transA", "transB", NULL};
    view_t v;
    int li;
    if (check_attrs(im, n, known) || view_last(im, b, n, x, &li, &v)) return -1;
    const int64_t tb = attr_int(n, "transB", 0);
    const int transB = tb == 1;
    const Onnx__TensorProto *w = input_tensor(im, n, 1), *c = input_tensor(im, n, 2);
    const int IN = v.pd[v.np - 1];
    if (v.ng != 2 || attr_int(n, "transA", 0) != 0 || (tb != 0 && tb != 1) || attr_float(n, "alpha", 1.0f) != 1.0f ||
        attr_float(n, "beta", 1.0f) != 1.0f || !w || w->n_dims != 2 || w->dims[transB ? 1 : 0] != IN ||
        w->dims[transB ? 0 : 1] < 1 || w->dims[transB ? 0 : 1] > DIM_MAX ||
        (n->n_input > 2 && n->input[2][0] && (!c || c->n_dims != 1 || c->dims[0] != w->dims[transB ? 0 : 1])))
        return fail(im,
                    "node '%s' (Gemm): of a view of the batch: alpha and beta 1, transA 0, B an initializer of %d "
                    "inputs, C 1-D or none",
                    node_name(n), IN);
    if (weight_name_ok(im, n, 1) || (c && weight_name_ok(im, n, 2))) return -1;
    const int OUT = (int)w->dims[transB ? 0 : 1];
    li = model_build_linear_layout(b, li, OUT, transB ? GEMM_W_OUT_IN : GEMM_W_IN_OUT, n->input[1]);
    if (c) li = model_build_fc_bias(b, li, n->input[2]);
    v.pd[v.np - 1] = OUT;
    return view_define(im, n, 0, li, &v);
}

/* Whether the constant input i of n varies along the last axis at most (a bias, a scale):
 * what a view with its last axis in place broadcasts as its physical layer does. */
static int last_axis_const(imp_t *im, const Onnx__NodeProto *n, size_t i)
{
    const Onnx__TensorProto *t = input_tensor(im, n, i);
    if (!t || tensor_count(t) < 1) return 0;
    for (size_t d = 0; d + 1 < t->n_dims; d++)
        if (t->dims[d] != 1) return 0;
    return 1;
}

/* The rank of Concat input i when it is a constant (an initializer, or a constant folded at
 * import: V_ARRAY), its dimensions into dims (at most ARR_DIMS); -1 for an activation. */
#define ARR_DIMS 8
static int concat_constant_dims(imp_t *im, const Onnx__NodeProto *n, size_t i, int64_t *dims)
{
    const value_t *v = i < n->n_input && n->input[i][0] ? find_value(im, n->input[i]) : NULL;
    if (!v || v->transposed || (v->kind != V_TENSOR && v->kind != V_ARRAY)) return -1;
    const int rank = v->kind == V_TENSOR ? (int)v->tensor->n_dims : v->arank;
    if (rank > ARR_DIMS) return ARR_DIMS + 1; /* refused by the caller's shape check */
    for (int d = 0; d < rank; d++) dims[d] = v->kind == V_TENSOR ? v->tensor->dims[d] : v->adims[d];
    return rank;
}

/* Input i of a Concat along sample axis ax as a layer: an activation, or a parameter of
 * the activations' shape but along ax with a leading 1 for the batch, expanded to every
 * sample (torch.cat([cls, x], dim=1) exported with the batch fixed to 1: the class token
 * then stands for every sample's) */
static int concat_operand(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, size_t i, const model_shape_t *like,
                          int ax, int *li)
{
    int64_t dims[ARR_DIMS];
    const int rank = concat_constant_dims(im, n, i, dims);
    const value_t *y;
    if (rank < 0) {
        if (input_layer(im, n, i, &y)) return -1;
        *li = y->layer;
        return 0;
    }
    int ok = rank == like->rank + 1 && dims[0] == 1;
    for (int d = 0; ok && d < like->rank; d++)
        ok = d == ax ? dims[d + 1] >= 1 && dims[d + 1] <= DIM_MAX : dims[d + 1] == like->dims[d];
    char s[96];
    if (!ok)
        return fail(im,
                    "node '%s' (Concat): constant input %zu must be (1, ...) of the activations' %s but along axis "
                    "%d: one parameter for every sample",
                    node_name(n), i, batch_text(like, s, sizeof s), ax + 1);
    model_shape_t to = *like;
    to.dims[ax] = (int)dims[ax + 1];
    int lc;
    if (binary_operand(im, b, n, i, like->rank, &lc)) return -1;
    *li = model_build_expand(b, lc, &to);
    return 0;
}

/* The nodes that read a view or make one (view_t); 1 when n is none of them, its viewed
 * inputs then made plain for its own handler. */
static int view_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const elementwise[] = {"Dropout", "Erf",         "Relu",      "LeakyRelu",  "Sigmoid", "Tanh",
                                              "Exp",     "Neg",         "Sqrt",      "Reciprocal", "Abs",     "Pow",
                                              "Clip",    "HardSigmoid", "HardSwish", "Identity",   NULL};
    const char *op = n->op_type;
    value_t *in[4] = {NULL, NULL, NULL, NULL};
    int viewed = 0, flat = 0, lead = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        value_t *x = n->input[i][0] ? find_value(im, n->input[i]) : NULL;
        if (!x || x->kind != V_LAYER) continue;
        if (i < 4) in[i] = x; /* the operands the view readers look at */
        viewed |= x->viewed;
        flat |= x->flat;
        lead |= x->lead || x->defer;
    }
    value_t *x = in[0];
    /* a lead or deferred value (Swin's windows in the batch, see view_t) is its own
     * handlers'; no operator pairs it with a view */
    if (lead && viewed)
        return fail(im,
                    "node '%s' (%s): reads a Reshape to (N * k, ...) and a tensor whose batch axis a Transpose or "
                    "Reshape moved or merged",
                    node_name(n), op);
    if (lead || flat || (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)) return 1;
    if (strcmp(op, "Transpose") == 0 && x) {
        static const char *const known[] = {"perm", NULL};
        const Onnx__AttributeProto *a = attr(n, "perm");
        if (!x->viewed && !(a && a->n_ints > 0 && a->ints[0] != 0)) return 1;
        return check_attrs(im, n, known) ? -1 : view_transpose(im, b, n, x);
    }
    if (strcmp(op, "Reshape") == 0 && x) {
        static const char *const known[] = {"allowzero", NULL};
        int64_t sh[INTS_MAX];
        int nsh, ssh, moved = 0;
        if (input_ints(im, n, 1, sh, &nsh, &ssh) != 0) return 1;
        /* the batch first, even times k, is do_reshape's (k > 1: a lead value) */
        for (int i = 1; i < nsh; i++) moved |= is_batch(sh[i]);
        if (!x->viewed && !moved) return 1;
        if (check_attrs(im, n, known) || attr_int(n, "allowzero", 0) != 0)
            return fail(im, "node '%s' (Reshape): allowzero = 1 is not supported", node_name(n));
        return view_reshape(im, b, n, x, sh, nsh);
    }
    if (!viewed) return 1;
    view_t v;
    int li;
    if (strcmp(op, "Shape") == 0) {
        static const char *const none[] = {NULL};
        int64_t d[VIEW_AXES];
        if (check_attrs(im, n, none)) return -1;
        view_get(b, x, &v);
        view_dims(&v, d);
        return define_ints(im, n, d, v.ng, 0);
    }
    for (int k = 0; elementwise[k]; k++)
        if (strcmp(op, elementwise[k]) == 0 && x && x->viewed) return view_through(im, b, n, &x->view);
    const int binary = strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 ||
                       strcmp(op, "Div") == 0;
    if (binary && n->n_input == 2 && in[0] && in[1] && in[0]->viewed && in[1]->viewed &&
        memcmp(&in[0]->view, &in[1]->view, sizeof(view_t)) == 0 && in[0]->layer >= 0 && in[1]->layer >= 0)
        return view_through(im, b, n, &in[0]->view);
    const int ci = !in[0] ? 0 : !in[1] ? 1 : -1; /* the constant operand of a binary node */
    const int softmax = strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0;
    const int matmul_w = strcmp(op, "MatMul") == 0 && x && n->n_input == 2 && !in[1];
    if ((binary && n->n_input == 2 && ci >= 0 && last_axis_const(im, n, (size_t)ci)) || matmul_w || softmax) {
        value_t *a = binary ? in[ci == 0 ? 1 : 0] : x;
        if (!a || !a->viewed) goto plain;
        view_get(b, a, &v);
        const int64_t ax = attr_int(n, "axis", -1);
        if (softmax && ax != -1 && ax != v.ng - 1)
            return fail(im, "node '%s' (%s): of a view of the batch: only along the last axis", node_name(n), op);
        const size_t ai = (size_t)(a - im->vals);
        if (view_last(im, b, n, a, &li, &v)) return -1;
        a = &im->vals[ai];
        a->layer = li; /* the view in normal form, for later readers too */
        a->view = v;
        a->viewed = !view_is_plain(&v);
        if (!a->viewed) return 1;
        if (softmax)
            return view_define(im, n, 0,
                               model_build_softmax(b, op[0] == 'L' ? LAYER_LOG_SOFTMAX : LAYER_SOFTMAX, li, v.np - 2),
                               &v);
        return view_through(im, b, n, &v);
    }
    if (strcmp(op, "Gemm") == 0 && x && x->viewed) return view_gemm(im, b, n, x);
    if (strcmp(op, "MatMul") == 0 && n->n_input == 2 && in[0] && in[1]) return view_bmm(im, b, n, in[0], in[1]);
    if (strcmp(op, "Slice") == 0 && x && x->viewed) return view_slice(im, b, n, x);
    if (strcmp(op, "Gather") == 0 && x && x->viewed) return view_gather(im, b, n, x);
    if (strcmp(op, "Split") == 0 && x && x->viewed) return view_split(im, b, n, x);
    if ((strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0) && x && x->viewed)
        return view_squeeze(im, b, n, x, op[0] == 'U');
plain:
    /* every input, a Concat's fifth too */
    for (size_t i = 0; i < n->n_input; i++) {
        value_t *y = n->input[i][0] ? find_value(im, n->input[i]) : NULL;
        if (y && y->kind == V_LAYER && y->viewed && view_plain(im, b, n, y)) return -1;
    }
    return 1;
}

/* Expand of a constant or an activation to a shape whose first axis is the batch (N; 1 or
 * N for an activation): a LAYER_EXPAND of a LAYER_CONST or of the activation (the class
 * token: class_token.expand(N, -1, -1), torch's Shape .. Where arithmetic folded). */
static int do_expand(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    int64_t sh[INTS_MAX];
    int nsh, ssh, li;
    if (check_attrs(im, n, none)) return -1;
    if (n->n_input != 2 || input_ints(im, n, 1, sh, &nsh, &ssh) != 0 || ssh || nsh < 1 || nsh > 1 + MODEL_MAX_RANK)
        return fail(im, "node '%s' (Expand): the shape must be a constant vector of 1 to %d values", node_name(n),
                    1 + MODEL_MAX_RANK);
    const value_t *x = find_value(im, n->input[0]);
    model_shape_t in = {0}, to = {0}, seen = {0};
    int R = nsh;
    if (x && x->kind == V_TENSOR && !x->transposed) {
        const Onnx__TensorProto *t = x->tensor;
        if (t->n_dims > (size_t)MODEL_MAX_RANK + 1)
            return fail(im, "node '%s' (Expand): the input has more than %d axes", node_name(n), MODEL_MAX_RANK + 1);
        if ((int)t->n_dims > R) R = (int)t->n_dims;
        in.rank = (int)t->n_dims;
        for (int d = 0; d < in.rank; d++) in.dims[d] = t->dims[d] > DIM_MAX ? -1 : (int)t->dims[d];
    } else {
        if (input_layer(im, n, 0, &x)) return -1;
        seen_shape(b, x, &in);
        seen = in;
        memmove(in.dims + 1, in.dims, (size_t)in.rank * sizeof *in.dims);
        in.dims[0] = 1; /* the batch broadcasts as itself */
        in.rank++;
        if (nsh > in.rank)
            return fail(im,
                        "node '%s' (Expand): a shape of %d axes for an activation of %d: new leading axes would "
                        "move the batch axis",
                        node_name(n), nsh, in.rank);
        R = in.rank;
    }
    /* NumPy's rule, right-aligned: equal, or 1 in one of them; the first axis the batch */
    for (int d = 0; d < R; d++) {
        const int di = d - (R - in.rank), ds = d - (R - nsh);
        const int64_t a = di >= 0 ? in.dims[di] : 1, s = ds >= 0 ? sh[ds] : 1;
        /* the batch: its symbol, the size the file fixes it to, or (an activation's) 1 */
        const int sb = is_batch(s) ||
                       (d == 0 && ((im->batch_dim > 0 && s == im->batch_dim) || (s == 1 && x->kind == V_LAYER)));
        if ((d == 0) != (sb && (!is_batch(s) || batch_k(s) == 1)) || (sb && d) || (!sb && (s < 1 || s > DIM_MAX)) ||
            (!sb && a != 1 && s != 1 && a != s) || a < 1)
            return fail(im,
                        "node '%s' (Expand): input axis %d of %lld to %s: only a broadcast to the batch first and "
                        "constant sizes after it is supported",
                        node_name(n), d, (long long)a, sb ? "the batch" : "a constant");
        if (d) to.dims[to.rank++] = (int)(a > s ? a : s);
    }
    if (x->kind == V_TENSOR) {
        if (binary_operand(im, b, n, 0, R - 1, &li)) return -1;
    } else li = as_seen(b, x, &seen);
    return define_output(im, n, model_build_expand(b, li, &to), 0);
}

static int do_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    if (!n->op_type || !n->op_type[0]) return fail(im, "node '%s': no operator", node_name(n));
    if (fused_away(im, n)) return 0;
    const char *op = n->op_type;
    const value_t *x;
    if (n->domain && strcmp(n->domain, "ai.pacer") == 0) return do_pacer_node(im, b, n);
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return fail(im, "node '%s' (%s): operator domain '%s' is not supported", node_name(n), op, n->domain);
    if (n->n_output < 1 || !n->output[0][0]) return fail(im, "node '%s' (%s): no output", node_name(n), op);
    int rc = fold_array(im, n);
    if (rc != 1) return rc;
    rc = view_node(im, b, n);
    if (rc != 1) return rc;
    if (mixed_lead(im, n))
        return fail(im,
                    "node '%s' (%s): reads values whose batch axes hold different things (one a Reshape to (N * "
                    "k, ...), one not)",
                    node_name(n), op);
    const value_t *g0 = op_is(n, "Gather") && n->n_input > 0 ? find_value(im, n->input[0]) : NULL;
    if (g0 && g0->kind == V_LAYER) return do_gather(im, b, n);
    rc = do_shape_op(im, b, n);
    if (rc != 1) return rc;
    if (strcmp(op, "Expand") == 0) return do_expand(im, b, n);
    if (strcmp(op, "Conv") == 0) return do_conv(im, b, n);
    if (strcmp(op, "MaxPool") == 0) return do_pool(im, b, n, 1);
    if (strcmp(op, "AveragePool") == 0) return do_pool(im, b, n, 0);
    if (strcmp(op, "BatchNormalization") == 0) return do_bn(im, b, n);
    if (strcmp(op, "Gemm") == 0) return do_gemm(im, b, n);
    if (strcmp(op, "Reshape") == 0) return do_reshape(im, b, n);
    if (strcmp(op, "Pad") == 0) return do_pad(im, n);
    if (strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0) return do_softmax(im, b, n);
    if (strcmp(op, "Div") == 0 && n->n_input == 2 && (rc = match_gelu(im, b, n)) != 1) return rc;
    if (strcmp(op, "ReduceMean") == 0 && n->n_input == 1 && (rc = match_layernorm(im, b, n)) != 1) return rc;
    if (strcmp(op, "LayerNormalization") == 0) return do_layernorm(im, b, n);
    if (strcmp(op, "MatMul") == 0 && n->n_input == 2 && input_layer(im, n, 0, NULL) == 0 &&
        input_layer(im, n, 1, NULL) == 0)
        return do_bmm(im, b, n);
    if (strcmp(op, "Erf") == 0) {
        if (check_attrs(im, n, none) || input_layer(im, n, 0, &x)) return -1;
        if (n->n_input != 1) return fail(im, "node '%s' (Erf): %zu inputs, want 1", node_name(n), n->n_input);
        return define_output(im, n, model_build_unary(b, LAYER_ERF, x->layer, 0.0f), x->flat);
    }
    if (strcmp(op, "Identity") == 0 && n->n_input == 1 && n->n_output == 1 && input_tensor(im, n, 0)) {
        /* a constant under another name (the exporter's way of using one weight twice) */
        if (check_attrs(im, n, none)) return -1;
        value_t *v = add_value(im, n->output[0], V_TENSOR);
        if (!v) return fail(im, "out of memory");
        v->tensor = input_tensor(im, n, 0);
        return 0;
    }
    if (strcmp(op, "Relu") == 0 || strcmp(op, "GlobalAveragePool") == 0 || strcmp(op, "Identity") == 0) {
        if (check_attrs(im, n, none) || input_layer(im, n, 0, &x)) return -1;
        if (op[0] == 'I') return define_output(im, n, x->layer, x->flat);
        if (op[0] == 'G' && image_input(im, b, n, x)) return -1;
        int li = op[0] == 'R' ? model_build_relu(b, x->layer) : model_build_gap(b, x->layer);
        return define_output(im, n, li, op[0] == 'R' ? x->flat : 0);
    }
    if (strcmp(op, "LeakyRelu") == 0 || strcmp(op, "Sigmoid") == 0 || strcmp(op, "Tanh") == 0) {
        static const char *const known[] = {"alpha", NULL};
        if (check_attrs(im, n, op[0] == 'L' ? known : none) || input_layer(im, n, 0, &x)) return -1;
        const float alpha = attr_float(n, "alpha", 0.01f);
        if (op[0] == 'L' && !(alpha >= 0.0f))
            return fail(im, "node '%s' (LeakyRelu): alpha %g: a negative slope is not supported", node_name(n), alpha);
        const layer_kind_t k = op[0] == 'L' ? LAYER_LEAKY_RELU : op[0] == 'S' ? LAYER_SIGMOID : LAYER_TANH;
        return define_output(im, n, model_build_elementwise(b, k, x->layer, alpha), x->flat);
    }
    {
        /* functions of one input (the table's unary rows); Pow's exponent a constant scalar */
        static const char *const names[] = {"Exp", "Neg", "Sqrt", "Reciprocal", "Abs", "Pow"};
        for (int k = 0; k < 6; k++) {
            if (strcmp(op, names[k]) != 0) continue;
            const layer_kind_t kind = (layer_kind_t)(LAYER_EXP + k);
            if (check_attrs(im, n, none) || input_layer(im, n, 0, &x)) return -1;
            float a = 0.0f;
            if (kind == LAYER_POW) {
                const Onnx__TensorProto *t = n->n_input == 2 ? input_tensor(im, n, 1) : NULL;
                if (!t || tensor_count(t) != 1 || tensor_floats(im, t, &a, 1) != 0 || !isfinite(a))
                    return fail(im, "node '%s' (Pow): the exponent must be a constant finite float scalar",
                                node_name(n));
            } else if (n->n_input != 1)
                return fail(im, "node '%s' (%s): %zu inputs, want 1", node_name(n), op, n->n_input);
            return define_output(im, n, model_build_unary(b, kind, x->layer, a), x->flat);
        }
    }
    if (strcmp(op, "ReduceMean") == 0 || strcmp(op, "ReduceSum") == 0) return do_reduce(im, b, n);
    if (strcmp(op, "Clip") == 0) {
        /* the bounds: attributes up to opset 10, optional constant inputs from 11 (torch's
         * ReLU6 and Hardtanh) */
        static const char *const known[] = {"min", "max", NULL};
        if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
        float bound[2] = {attr_float(n, "min", -INFINITY), attr_float(n, "max", INFINITY)};
        if (n->n_input > 3) return fail(im, "node '%s' (Clip): more than 3 inputs", node_name(n));
        for (size_t i = 1; i < n->n_input; i++) {
            if (!n->input[i][0]) continue;
            const Onnx__TensorProto *t = input_tensor(im, n, i);
            if (!t || tensor_count(t) != 1 || tensor_floats(im, t, &bound[i - 1], 1) != 0)
                return fail(im, "node '%s' (Clip): %s must be a constant float scalar", node_name(n),
                            i == 1 ? "min" : "max");
        }
        if (isnan(bound[0]) || isnan(bound[1])) return fail(im, "node '%s' (Clip): a bound is NaN", node_name(n));
        return define_output(im, n, model_build_clip(b, x->layer, bound[0], bound[1]), x->flat);
    }
    if (strcmp(op, "HardSigmoid") == 0 || strcmp(op, "HardSwish") == 0) {
        static const char *const known[] = {"alpha", "beta", NULL};
        const int sig = op[4] == 'S' && op[5] == 'i';
        if (check_attrs(im, n, sig ? known : none) || input_layer(im, n, 0, &x)) return -1;
        if (!sig) return define_output(im, n, model_build_hardswish(b, x->layer), x->flat);
        const float alpha = attr_float(n, "alpha", 0.2f), beta = attr_float(n, "beta", 0.5f);
        if (!isfinite(alpha) || !isfinite(beta))
            return fail(im, "node '%s' (HardSigmoid): alpha %g and beta %g must be finite", node_name(n), alpha, beta);
        return define_output(im, n, model_build_hardsigmoid(b, x->layer, alpha, beta), x->flat);
    }
    if (strcmp(op, "Mul") == 0) {
        /* of two activations: the same shape, or a per-channel (C, 1, 1) one against a
         * (C, H, W) one (SiLU as x * Sigmoid(x), HardSwish as x * HardSigmoid(x),
         * squeeze-excitation's scale): LAYER_MUL; anything else broadcasts (do_binary) */
        const value_t *y;
        if (check_attrs(im, n, none)) return -1;
        if (n->n_input != 2) return fail(im, "node '%s' (Mul): %zu inputs, want 2", node_name(n), n->n_input);
        if (const_input(im, n, 0) || const_input(im, n, 1)) return do_binary(im, b, n, LAYER_BMUL);
        if (input_layer(im, n, 0, &x) || input_layer(im, n, 1, &y)) return -1;
        int C1, H1, W1, C2, H2, W2;
        model_shape_t s1, s2;
        model_build_shape(b, x->layer, &C1, &H1, &W1);
        model_build_shape(b, y->layer, &C2, &H2, &W2);
        model_build_shape_nd(b, x->layer, &s1);
        model_build_shape_nd(b, y->layer, &s2);
        const int same = model_shape_equal(&s1, &s2) && x->flat == y->flat;
        const int per_channel = C1 == C2 && s1.rank == s2.rank && !x->flat && !y->flat &&
                                ((H1 == 1 && W1 == 1) || (H2 == 1 && W2 == 1));
        /* the fast row where it applies, else the broadcasting one */
        if (!same && !per_channel) return do_binary(im, b, n, LAYER_BMUL);
        return define_output(im, n, model_build_mul(b, x->layer, y->layer), same && x->flat);
    }
    if (strcmp(op, "Dropout") == 0) {
        /* ratio: an attribute up to opset 11, an optional constant input from 12; pacer drops
         * while training and not at evaluation, whatever the training_mode input says; the
         * mask output is never defined (no node may read it) */
        static const char *const known[] = {"ratio", "seed", NULL};
        if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
        float p = attr_float(n, "ratio", 0.5f);
        if (n->n_input > 1 && n->input[1][0]) {
            const Onnx__TensorProto *r = input_tensor(im, n, 1);
            if (!r || tensor_count(r) != 1 || tensor_floats(im, r, &p, 1) != 0)
                return fail(im, "node '%s' (Dropout): ratio must be a constant float", node_name(n));
        }
        if (n->n_input > 2 && n->input[2][0] && !input_tensor(im, n, 2))
            return fail(im, "node '%s' (Dropout): training_mode must be a constant", node_name(n));
        if (!(p >= 0.0f && p < 1.0f))
            return fail(im, "node '%s' (Dropout): ratio %g is not in [0, 1)", node_name(n), p);
        /* ratio 0 (torchvision's ViT by default): the identity, no layer to copy through */
        if (p == 0.0f) return define_output(im, n, x->layer, x->flat);
        return define_output(im, n, model_build_elementwise(b, LAYER_DROPOUT, x->layer, p), x->flat);
    }
    if (strcmp(op, "Concat") == 0) {
        /* of activations along a non-batch axis (Concat of shapes was do_shape_op's): a
         * chain of two-input concatenations */
        static const char *const known[] = {"axis", NULL};
        size_t first = 0; /* the first activation: a parameter may come before it */
        int64_t cd[ARR_DIMS];
        while (first + 1 < n->n_input && concat_constant_dims(im, n, first, cd) >= 0) first++;
        if (check_attrs(im, n, known)) return -1;
        if (n->n_input < 1 || input_layer(im, n, first, &x))
            return fail(im, "node '%s' (Concat): no inputs", node_name(n));
        model_shape_t s0;
        model_build_shape_nd(b, x->layer, &s0);
        int64_t ax = attr_int(n, "axis", 0);
        if (ax < 0) ax += s0.rank + 1;
        if (ax < 1 || ax > s0.rank || (x->flat && ax != 1))
            return fail(im, "node '%s' (Concat): axis %lld: activations join along a non-batch axis only", node_name(n),
                        (long long)attr_int(n, "axis", 0));
        int li = -1;
        for (size_t i = 0; i < n->n_input; i++) {
            int yl = -1;
            if (concat_operand(im, b, n, i, &s0, (int)ax - 1, &yl)) return -1;
            if (i == 0) {
                li = yl;
                continue;
            }
            model_shape_t s1, s2;
            char t1[96], t2[96];
            model_build_shape_nd(b, li, &s1);
            model_build_shape_nd(b, yl, &s2);
            if (s2.rank == s1.rank) s2.dims[ax - 1] = s1.dims[ax - 1]; /* the axis joined may differ */
            if (!model_shape_equal(&s1, &s2))
                return fail(im, "node '%s' (Concat): input %zu is %s, the others %s (equal but for axis %lld)",
                            node_name(n), i, batch_text(&s2, t2, sizeof t2), batch_text(&s1, t1, sizeof t1),
                            (long long)ax);
            li = model_build_concat_axis(b, li, yl, (int)ax - 1);
        }
        return define_output(im, n, li, n->n_input == 1 ? x->flat : 0);
    }
    if (strcmp(op, "Flatten") == 0) {
        static const char *const known[] = {"axis", NULL};
        if (check_attrs(im, n, known) || input_layer(im, n, 0, &x)) return -1;
        /* axis k of a rank R + 1 batch (negative: from the end) gives (N * the sizes of axes
         * 1 .. k - 1, the rest): axis 1's (N, rest) where those sizes are all 1; any other
         * merges the batch with other axes (axis 0: the whole batch one row) */
        model_shape_t s;
        model_build_shape_nd(b, x->layer, &s);
        const int R = x->flat ? 1 : s.rank;
        int64_t ax = attr_int(n, "axis", 1);
        if (ax < 0) ax += R + 1;
        int merges = ax < 1 || ax > R + 1;
        for (int64_t d = 1; !merges && d < ax && !x->flat; d++) merges = s.dims[d - 1] != 1;
        if (merges)
            return fail(im,
                        "node '%s' (Flatten): axis %lld merges the batch axis with others (axis 0 is the batch; "
                        "only axis 1, or one after axes of size 1, is supported)",
                        node_name(n), (long long)attr_int(n, "axis", 1));
        return define_output(im, n, x->layer, 1);
    }
    if (strcmp(op, "MatMul") == 0) return do_matmul(im, b, n);
    if (strcmp(op, "Sub") == 0) return do_binary(im, b, n, LAYER_SUB);
    if (strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0) return do_squeeze(im, b, n, op[0] == 'U');
    if (strcmp(op, "Transpose") == 0) return do_transpose(im, b, n);
    if (strcmp(op, "Slice") == 0) return do_slice(im, b, n);
    if (strcmp(op, "Split") == 0) return do_split(im, b, n);
    if (strcmp(op, "Div") == 0) return do_binary(im, b, n, LAYER_DIV);
    if (strcmp(op, "Add") == 0) {
        const value_t *y;
        /* MatMul + Add(bias): the bias joins the MatMul's layer when nothing else reads the
         * MatMul's output and no layer came after it */
        const size_t mi = n->n_input == 2 && input_tensor(im, n, 0) ? 1 : 0; /* either order */
        const value_t *mm = n->n_input == 2 ? find_value(im, n->input[mi]) : NULL;
        const Onnx__TensorProto *bias = n->n_input == 2 ? input_tensor(im, n, 1 - mi) : NULL;
        if (mm && mm->kind == V_LAYER && mm->matmul && bias) {
            int C, H, last = mm->layer;
            model_shape_t ms;
            model_build_shape_nd(b, mm->layer, &ms);
            C = ms.dims[ms.rank - 1]; /* the outputs: the last axis (rank 1 for LAYER_FC) */
            if (check_attrs(im, n, none)) return -1;
            if (bias->n_dims != 1 || bias->dims[0] != C || uses(im, n->input[mi]) != 1 ||
                model_build_shape(b, last + 1, &H, &H, &H) == 0)
                return fail(im,
                            "node '%s' (Add): a bias after MatMul must be a 1-D initializer of %d values read "
                            "right after it",
                            node_name(n), C);
            if (weight_name_ok(im, n, 1 - mi)) return -1;
            model_build_fc_bias(b, mm->layer, n->input[1 - mi]);
            return define_output(im, n, mm->layer, 0);
        }
        if (const_input(im, n, 0) || const_input(im, n, 1)) return do_binary(im, b, n, LAYER_BADD);
        if (check_attrs(im, n, none) || input_layer(im, n, 0, &x) || input_layer(im, n, 1, &y)) return -1;
        if (x->kind == V_PADDED) {
            const value_t *t = x;
            x = y;
            y = t;
        }
        if (x->kind == V_PADDED) return fail(im, "node '%s' (Add): both inputs are Pads of channels", node_name(n));
        int C1, H1, W1, C2, H2, W2;
        model_build_shape(b, x->layer, &C1, &H1, &W1);
        model_build_shape(b, y->layer, &C2, &H2, &W2);
        if (y->kind == V_PADDED) {
            /* x + channels of y zero-padded: LAYER_ADD's shortcut, whose C channels sit at
             * offset (OC - C) / 2 */
            const int64_t OC = (int64_t)C2 + y->cpads[0] + y->cpads[1]; /* each below 2^31 */
            if (OC != C1 || y->cpads[0] != (OC - C2) / 2 || H1 != H2 || W1 != W2 || x->layer < 0 || y->layer < 0)
                return fail(im,
                            "node '%s' (Add): a shortcut of %d channels padded by %d before and %d after must "
                            "give the other input's %dx%dx%d with the padding split evenly (more after)",
                            node_name(n), C2, y->cpads[0], y->cpads[1], C1, H1, W1);
            return define_output(im, n, model_build_add(b, x->layer, y->layer), x->flat);
        }
        model_shape_t s1, s2;
        model_build_shape_nd(b, x->layer, &s1);
        model_build_shape_nd(b, y->layer, &s2);
        /* two activations of one shape: the residual add (fused where it can be) */
        if (!model_shape_equal(&s1, &s2) || x->layer < 0 || y->layer < 0 || x->flat != y->flat)
            return do_binary(im, b, n, LAYER_BADD);
        return define_output(im, n, model_build_add(b, x->layer, y->layer), x->flat);
    }
    if (strcmp(op, "Constant") == 0) {
        static const char *const known[] = {"value", NULL};
        if (check_attrs(im, n, known)) return -1;
        const Onnx__AttributeProto *a = attr(n, "value");
        if (!a || !a->t || n->n_output < 1)
            return fail(im, "node '%s' (Constant): only a tensor 'value' is supported", node_name(n));
        value_t *v = add_value(im, n->output[0], V_TENSOR);
        if (!v) return fail(im, "out of memory");
        v->tensor = a->t;
        v->constant_node = 1;
        return 0;
    }
    return fail(im,
                "node '%s': operator %s is not supported (`pacer-worker --list-ops` lists the operators that import, "
                "as does docs/JOB_SPEC.md, \"What imports\")",
                node_name(n), op);
}

/* Refuses node n when a layer it added is larger than any buffer can be, or when the
 * model's buffers so far (model_build_bytes, from the declared shapes and attributes)
 * exceed the memory bound: checked after each node, so that no list grows far past the
 * bound and nothing large is allocated before the refusal. *built: layers already checked. */
/* Refuses node n for a layer it added whose output has more elements per sample than any
 * kernel indexes (model.h's MODEL_SAMPLE_MAX: a Reshape, Expand, Concat or broadcast to an
 * impossible shape); 0 when there is none. */
static int check_too_large(imp_t *im, const model_builder_t *b, const Onnx__NodeProto *n)
{
    model_shape_t s;
    if (model_build_too_large(b, &s) < 0) return 0;
    char t[96] = "";
    if (s.rank >= 0) batch_text(&s, t, sizeof t);
    return fail(im, "node '%s' (%s): its output %s%shas more than %lld elements per sample: the shape is too large",
                node_name(n), n->op_type, t, t[0] ? " " : "", MODEL_SAMPLE_MAX);
}

static int check_bound(imp_t *im, const model_builder_t *b, const Onnx__NodeProto *n, int *built)
{
    /* a layer's output at the batch, in floats: 2^40 keeps every sum model.c makes exact */
    const uint64_t LAYER_MAX = (uint64_t)1 << 40;
    int C, H, W;
    for (; model_build_shape(b, *built, &C, &H, &W) == 0; (*built)++) {
        uint64_t e;
        if (__builtin_mul_overflow((uint64_t)C * (uint64_t)H, (uint64_t)W * (uint64_t)im->max_batch, &e) ||
            e > LAYER_MAX)
            return fail(im, "node '%s' (%s): its output (%d, %d, %d) at batch %d is too large for any memory",
                        node_name(n), n->op_type, C, H, W, im->max_batch);
    }
    size_t need = model_build_bytes(b), bound = onnx_import_memory_bound();
    if (need > bound)
        return fail(im,
                    "node '%s' (%s): the model needs %s or more at batch %d (its shapes as declared), more than the "
                    "memory bound of %s",
                    node_name(n), n->op_type, size_text(need).s, im->max_batch, size_text(bound).s);
    return check_too_large(im, b, n);
}

/* The model_build_fn: every node in order, then the output must be the last layer. */
static int build_graph(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    imp_t *im = ctx;
    im->err = err;
    im->errlen = errlen;
    value_t *in = add_value(im, im->input, V_LAYER);
    if (!in) return fail(im, "out of memory");
    in->layer = -1;
    int built = 0; /* layers checked against the bound */
    for (size_t i = 0; i < im->g->n_node; i++) {
        /* a node refused after a layer it added was too large: the bounds give the reason */
        if (do_node(im, b, im->g->node[i]) != 0) {
            if (model_build_too_large(b, NULL) >= 0) check_bound(im, b, im->g->node[i], &built);
            return -1;
        }
        if (check_bound(im, b, im->g->node[i], &built) != 0) return -1;
    }
    value_t *o = find_value(im, im->output);
    if (o && o->kind == V_LAYER && o->defer)
        return fail(im,
                    "the graph's output '%s' is a Transpose that moves the batch axis (only a Gather on axis 0 may "
                    "read one)",
                    im->output);
    if (o && o->kind == V_LAYER && o->viewed) {
        /* the output read plain: the batch first alone (a last Transpose or Reshape) */
        view_t v = o->view;
        int li = o->layer;
        char t[96];
        view_normal(b, &li, &v);
        if (!view_is_plain(&v))
            return fail(im, "the graph's output '%s' is %s: its batch axis moved or merged by a Transpose or Reshape",
                        im->output, view_text(&o->view, t, sizeof t));
        o->layer = li;
        o->viewed = 0;
    }
    int C, H, W, Cl, Hl, Wl, last = 0;
    while (model_build_shape(b, last + 1, &Cl, &Hl, &Wl) == 0) last++;
    if (im->any_output && o && o->kind == V_LAYER && !o->viewed && (o->layer < 0 || o->layer != last)) {
        /* a case's output that is the input itself (Identity, a Reshape to its own shape) or
         * not the last layer (one of a Split's outputs): a copy of it is the model's output
         * (a flat value: its samples flat) */
        model_shape_t s;
        model_build_shape_nd(b, o->layer, &s);
        if (o->flat) s = (model_shape_t){.rank = 1, .dims = {(int)model_shape_count(&s)}};
        o->layer = last = model_build_reshape(b, o->layer, &s);
        o->flat = 0;
    }
    if (!o || o->kind != V_LAYER || o->layer < 0)
        return fail(im, "the graph's output '%s' is not computed by a supported node", im->output);
    model_build_shape(b, o->layer, &C, &H, &W);
    if (o->layer != last)
        return fail(im, "the graph's output '%s' is not its last layer (a branch computed after it is unused)",
                    im->output);
    if (!im->any_output && (H != 1 || W != 1)) {
        model_shape_t s;
        char t[96];
        model_build_shape_nd(b, o->layer, &s);
        return fail(im, "the graph's output is not (N, classes): its shape is %s", batch_text(&s, t, sizeof t));
    }
    return 0;
}

/* ---- the file ---------------------------------------------------------------------------- */

/* Dimension i of a graph input's or output's declared shape: its value, 0 when symbolic,
 * -1 when absent. */
static int64_t vi_dim(const Onnx__ValueInfoProto *vi, size_t i, size_t *ndims)
{
    *ndims = 0;
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !vi->type->tensor_type ||
        !vi->type->tensor_type->shape)
        return -1;
    const Onnx__TensorShapeProto *s = vi->type->tensor_type->shape;
    *ndims = s->n_dim;
    if (i >= s->n_dim) return -1;
    return s->dim[i]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? s->dim[i]->dim_value : 0;
}

/* The per-sample shape of a graph input or output (N, ...) of rank 1 to 1 + MODEL_MAX_RANK
 * with every dimension after the batch fixed; 0, or -1. */
static int vi_shape(const Onnx__ValueInfoProto *vi, model_shape_t *s)
{
    size_t nd;
    vi_dim(vi, 0, &nd);
    if (nd < 1 || nd > 1 + MODEL_MAX_RANK) return -1;
    s->rank = (int)nd - 1;
    for (size_t i = 1; i < nd; i++) {
        const int64_t d = vi_dim(vi, i, &nd);
        if (d < 1 || d > DIM_MAX) return -1;
        s->dims[i - 1] = (int)d;
    }
    return 0;
}

/* onnx_import_case: elements per sample of an output (N, ...) with every other dimension
 * fixed, or -1. */
static int64_t case_output_count(const Onnx__ValueInfoProto *vi)
{
    model_shape_t s;
    int64_t n = 1;
    if (vi_shape(vi, &s) != 0) return -1;
    for (int d = 0; d < s.rank; d++) {
        n *= s.dims[d];
        if (n > DIM_MAX) return -1;
    }
    return n;
}

static int is_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && strcmp(g->initializer[i]->name, name) == 0) return 1;
    return 0;
}

static int import_model(const Onnx__ModelProto *mp, const char *name, int max_batch, int any_output, model_t **out,
                        char *err, size_t errlen)
{
    const Onnx__GraphProto *g = mp->graph;
    if (!g) return snprintf(err, errlen, "onnx: the model has no graph"), -1;
    int64_t opset = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0) opset = o->has_version ? o->version : -1;
    }
    /* from 6: what changed since is read by version or refused as an unknown attribute */
    if (opset < 6 || opset > 17)
        return snprintf(err, errlen, "onnx: opset %lld is not supported (6 to 17)", (long long)opset), -1;
    if (g->n_node > ONNX_MAX_NODES || g->n_initializer > ONNX_MAX_INITIALIZERS)
        return snprintf(err, errlen, "onnx: %zu nodes and %zu initializers exceed the bounds (%d, %d)", g->n_node,
                        g->n_initializer, ONNX_MAX_NODES, ONNX_MAX_INITIALIZERS),
               -1;
    if (g->n_sparse_initializer > 0) return snprintf(err, errlen, "onnx: sparse initializers are not supported"), -1;

    imp_t im = {.g = g, .max_batch = max_batch, .opset = opset};
    /* the image input: the one graph input that is not an initializer */
    const Onnx__ValueInfoProto *input = NULL;
    for (size_t i = 0; i < g->n_input; i++) {
        if (!g->input[i]->name || is_initializer(g, g->input[i]->name)) continue;
        if (input) return snprintf(err, errlen, "onnx: the graph has more than one input (one image input only)"), -1;
        input = g->input[i];
    }
    if (!input) return snprintf(err, errlen, "onnx: the graph has no input"), -1;
    if (g->n_output != 1 || !g->output[0]->name)
        return snprintf(err, errlen, "onnx: the graph has %zu outputs (one logits output only)", g->n_output), -1;
    if (!input->type || input->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !input->type->tensor_type ||
        input->type->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return snprintf(err, errlen, "onnx: input '%s' is not a float tensor", input->name), -1;
    size_t nod;
    model_shape_t in_shape;
    if (vi_shape(input, &in_shape) != 0)
        return snprintf(err, errlen,
                        "onnx: input '%s' must be a batch (N, ...) of rank 1 to %d with every dimension after N fixed",
                        input->name, 1 + MODEL_MAX_RANK),
               -1;
    size_t in_count;
    if (model_shape_count_checked(&in_shape, &in_count) != 0) {
        char t[96];
        return snprintf(err, errlen,
                        "onnx: input '%s' is %s: more than %lld elements per sample: the shape is too large",
                        input->name, batch_text(&in_shape, t, sizeof t), MODEL_SAMPLE_MAX),
               -1;
    }
    const int64_t batch = vi_dim(input, 0, &nod);
    int64_t classes = vi_dim(g->output[0], 1, &nod);
    /* a case's output of another rank than (N, classes): compared whole, as N-D */
    const int out_nd = any_output && nod != 2;
    if (out_nd) classes = case_output_count(g->output[0]), nod = 2;
    if (nod != 2 || classes < 1 || classes > DIM_MAX)
        return snprintf(err, errlen, "onnx: output '%s' must have the shape (N, classes) with classes fixed",
                        g->output[0]->name),
               -1;
    im.input = input->name;
    im.output = g->output[0]->name;
    im.batch_dim = batch > 0 && batch <= DIM_MAX ? (int)batch : 0;
    im.any_output = any_output;
    for (size_t i = 0; i < g->n_initializer; i++) {
        value_t *v = add_value(&im, g->initializer[i]->name ? g->initializer[i]->name : "", V_TENSOR);
        if (!v) return free_values(&im), snprintf(err, errlen, "onnx: out of memory"), -1;
        v->tensor = g->initializer[i];
    }

    model_t *m = NULL;
    if (model_create_custom_shape(name, &in_shape, (int)classes, max_batch, build_graph, &im, &m, err, errlen) != 0) {
        free_values(&im);
        return -1;
    }
    const layer_t *ll = &m->layers[m->nlayers - 1];
    if ((any_output ? (int64_t)ll->OC * ll->OH * ll->OW : ll->OC) != classes) {
        snprintf(err, errlen, "onnx: the last layer has %d outputs, the graph's output declares %lld classes",
                 m->layers[m->nlayers - 1].OC, (long long)classes);
        goto fail;
    }
    model_shape_t out_shape;
    if (out_nd && (vi_shape(g->output[0], &out_shape) != 0 || !model_shape_equal(&out_shape, &ll->shape))) {
        char t[96];
        snprintf(err, errlen, "onnx: the last layer gives %s, the graph's output declares another shape",
                 batch_text(&ll->shape, t, sizeof t));
        goto fail;
    }
    /* One initializer read by two layers would be two tensors trained apart: refused
     * rather than silently untied. */
    for (int i = 0; i < m->ntensors; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(m->tensors[i].name, m->tensors[j].name) == 0) {
                snprintf(err, errlen, "onnx: initializer '%s' is used by two layers (shared weights are not supported)",
                         m->tensors[i].name);
                goto fail;
            }
    /* the starting weights: every tensor from the initializer of its name */
    im.err = err;
    im.errlen = errlen;
    for (int i = 0; i < m->ntensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        const value_t *v = find_value(&im, t->name);
        float *dst = (t->is_buffer ? m->buffers : m->params) + t->offset;
        if (v && v->kind == V_ARRAY && v->acount == t->count) {
            /* a folded constant (a mask), or a gathered parameter's indices */
            for (size_t k = 0; k < t->count; k++) dst[k] = (float)v->arr[k];
            continue;
        }
        if (!v || v->kind != V_TENSOR) {
            snprintf(err, errlen, "onnx: no initializer '%s'", t->name);
            goto fail;
        }
        if (tensor_floats(&im, v->tensor, dst, t->count) != 0) goto fail;
    }
    free_values(&im);
    *out = m;
    return 0;
fail:
    free_values(&im);
    model_free(m);
    return -1;
}

/* ---- the wire format, before protobuf-c ------------------------------------------------- */

/* protobuf-c's unpack recurses once per nested message and allocates every message and
 * repeated entry the bytes declare before the importer sees a count: a file of nested If
 * subgraphs overflowed its stack, one of empty initializer entries took gigabytes. This
 * walk reads the same bytes with the same descriptors (onnx.pb-c.c), without allocating,
 * and refuses what would go beyond ONNX_MAX_DEPTH, ONNX_MAX_REPEATED or the bytes the
 * decoding may take. A malformed file is left to protobuf-c, which refuses it too. */

enum { WIRE_OK = 0, WIRE_MALFORMED = -1, WIRE_BOUND = -2 };

typedef struct {
    size_t bytes, limit; /* what the decoding would allocate (estimated from above), its bound */
    char *err;
    size_t errlen;
} wire_t;

static int wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t c = *(*p)++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return *v = r, 0;
    }
    return -1;
}

/* Adds n to the decoding's bytes; WIRE_BOUND with the message beyond the limit. */
static int wire_take(wire_t *w, size_t n)
{
    if (__builtin_add_overflow(w->bytes, n, &w->bytes) || w->bytes > w->limit) {
        snprintf(w->err, w->errlen,
                 "onnx: decoding the file would take more than %s (its messages and entries as declared; the "
                 "bound is %d x its size + 64 MiB, and at most the memory bound)",
                 size_text(w->limit).s, ONNX_MAX_DECODE_FACTOR);
        return WIRE_BOUND;
    }
    return WIRE_OK;
}

/* The elements of a packed repeated scalar field of len bytes. */
static size_t wire_packed_count(const ProtobufCFieldDescriptor *f, const uint8_t *p, size_t len)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT: return len / 4;
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return len / 8;
    default: break;
    }
    size_t n = 0; /* varints: one ends at each byte without the continuation bit */
    for (size_t i = 0; i < len; i++) n += !(p[i] & 0x80);
    return n;
}

static int wire_message(wire_t *w, const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len, int depth)
{
    if (depth > ONNX_MAX_DEPTH) {
        snprintf(w->err, w->errlen,
                 "onnx: %s at nesting level %d: messages nest deeper than the bound of %d (subgraphs of If, Loop or "
                 "Scan inside each other?)",
                 d->short_name, depth, ONNX_MAX_DEPTH);
        return WIRE_BOUND;
    }
    int rc = wire_take(w, d->sizeof_message);
    /* entries of each repeated field of this message, by field index, and unknown fields */
    uint32_t counts[64] = {0}, unknown = 0;
    const uint8_t *end = p + len;
    while (rc == WIRE_OK && p < end) {
        uint64_t tag, v;
        if (wire_varint(&p, end, &tag) != 0) return WIRE_MALFORMED;
        const unsigned wt = (unsigned)(tag & 7);
        const uint64_t num = tag >> 3;
        const ProtobufCFieldDescriptor *f = num <= UINT32_MAX
                                                ? protobuf_c_message_descriptor_get_field(d, (unsigned)num)
                                                : NULL;
        const uint8_t *body = p;
        size_t blen = 0;
        switch (wt) {
        case 0:
            if (wire_varint(&p, end, &v) != 0) return WIRE_MALFORMED;
            break;
        case 1:
        case 5:
            if ((size_t)(end - p) < (wt == 1 ? 8u : 4u)) return WIRE_MALFORMED;
            p += wt == 1 ? 8 : 4;
            break;
        case 2:
            if (wire_varint(&p, end, &v) != 0 || v > (uint64_t)(end - p)) return WIRE_MALFORMED;
            body = p;
            blen = (size_t)v;
            p += blen;
            break;
        default: return WIRE_MALFORMED; /* groups: not in onnx.proto */
        }
        blen = wt == 2 ? blen : (size_t)(p - body);
        if (!f) {
            /* kept by protobuf-c as an unknown field: its record and a copy of its bytes */
            if (++unknown > ONNX_MAX_REPEATED) {
                snprintf(w->err, w->errlen, "onnx: %s: more than %d unknown fields (the bound)", d->short_name,
                         ONNX_MAX_REPEATED);
                return WIRE_BOUND;
            }
            rc = wire_take(w, sizeof(ProtobufCMessageUnknownField) + blen);
            continue;
        }
        const size_t fi = (size_t)(f - d->fields);
        const int repeated = f->label == PROTOBUF_C_LABEL_REPEATED;
        const int scalar = f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING &&
                           f->type != PROTOBUF_C_TYPE_BYTES;
        if (repeated && scalar) {
            /* packed or one by one: at most 8 bytes an element, bounded by the file's bytes */
            size_t n = wt == 2 ? wire_packed_count(f, body, blen) : 1;
            rc = wire_take(w, n * 8);
            continue;
        }
        if (repeated && fi < 64 && ++counts[fi] > ONNX_MAX_REPEATED) {
            snprintf(w->err, w->errlen, "onnx: %s.%s: more than %d entries (the bound)", d->short_name, f->name,
                     ONNX_MAX_REPEATED);
            return WIRE_BOUND;
        }
        if (wt != 2) continue; /* a mismatched wire type: protobuf-c refuses the file */
        rc = wire_take(w, (repeated ? sizeof(void *) + sizeof(ProtobufCBinaryData) : 0) + blen + 1);
        if (rc == WIRE_OK && f->type == PROTOBUF_C_TYPE_MESSAGE)
            rc = wire_message(w, f->descriptor, body, blen, depth + 1);
    }
    return rc;
}

/* The walk over a ModelProto of len bytes: WIRE_OK, WIRE_MALFORMED, or WIRE_BOUND with err. */
static int wire_check(const uint8_t *data, size_t len, char *err, size_t errlen)
{
    size_t bound = onnx_import_memory_bound(), limit = (size_t)ONNX_MAX_DECODE_FACTOR * len + ((size_t)64 << 20);
    wire_t w = {.limit = limit < bound ? limit : bound, .err = err, .errlen = errlen};
    return wire_message(&w, &onnx__model_proto__descriptor, data, len, 0);
}

int onnx_import_buffer(const uint8_t *data, size_t len, const char *name, int max_batch, model_t **out, char *err,
                       size_t errlen)
{
    *out = NULL;
    if (len == 0) return snprintf(err, errlen, "onnx: empty input"), -1;
    if (len > ONNX_MAX_BYTES)
        return snprintf(err, errlen, "onnx: %zu bytes exceed the limit of %zu", len, ONNX_MAX_BYTES), -1;
    if (wire_check(data, len, err, errlen) == WIRE_BOUND) return -1;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp) return snprintf(err, errlen, "onnx: not an ONNX model, or truncated (the protobuf does not decode)"), -1;
    int rc = import_model(mp, name, max_batch, 0, out, err, errlen);
    onnx__model_proto__free_unpacked(mp, NULL);
    return rc;
}

int onnx_read_file(const char *path, uint8_t **data, size_t *len, char *err, size_t errlen)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(err, errlen, "onnx: cannot open %s: %s", path, strerror(errno)), -1;
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            if (cap >= ONNX_MAX_BYTES) {
                fclose(f);
                free(buf);
                return snprintf(err, errlen, "onnx: %s is larger than %zu bytes", path, ONNX_MAX_BYTES), -1;
            }
            cap = cap ? 2 * cap : (size_t)1 << 16;
            uint8_t *p = realloc(buf, cap + 1);
            if (!p) {
                fclose(f);
                free(buf);
                return snprintf(err, errlen, "onnx: out of memory reading %s", path), -1;
            }
            buf = p;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int rd_err = ferror(f);
    fclose(f);
    if (rd_err) {
        free(buf);
        return snprintf(err, errlen, "onnx: error reading %s", path), -1;
    }
    *data = buf;
    *len = n;
    return 0;
}

int onnx_import_file(const char *path, const char *name, int max_batch, model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    uint8_t *buf;
    size_t len;
    if (onnx_read_file(path, &buf, &len, err, errlen) != 0) return -1;
    int rc = onnx_import_buffer(buf, len, name, max_batch, out, err, errlen);
    free(buf);
    return rc;
}

int onnx_is_model(const uint8_t *data, size_t len)
{
    if (len == 0 || len > ONNX_MAX_BYTES) return 0;
    /* beyond a bound: a model the importer refuses with the reason (422), not "not ONNX" */
    char why[256];
    int w = wire_check(data, len, why, sizeof why);
    if (w != WIRE_OK) return w == WIRE_BOUND;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    int ok = mp && mp->graph;
    if (mp) onnx__model_proto__free_unpacked(mp, NULL);
    return ok;
}

int onnx_import_describe(const uint8_t *data, size_t len, const char *name, catalog_model_t *out, char *err,
                         size_t errlen)
{
    model_t *m = NULL;
    if (onnx_import_buffer(data, len, name, 1, &m, err, errlen) != 0) return -1;
    model_describe(m, out);
    model_free(m);
    out->source = CATALOG_ONNX;
    return 0;
}

int onnx_import_catalog_add_buffer(const uint8_t *data, size_t len, const char *name, const char *title,
                                   catalog_source_t source, char *err, size_t errlen)
{
    catalog_model_t e;
    char why[768];
    if (onnx_import_describe(data, len, name, &e, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", strncmp(why, "onnx: ", 6) == 0 ? why + 6 : why);
        return -1;
    }
    e.source = source;
    if (source == CATALOG_UPLOADED) sha256_hex(data, len, e.sha256);
    snprintf(e.title, sizeof e.title, "%.*s", (int)sizeof e.title - 1, title);
    if (catalog_model_add(&e, err, errlen) == 0) return 0;
    /* another rank of this process (pacer-sim) added it meanwhile */
    catalog_model_t had;
    if (catalog_model_get(name, &had) == 0 && had.source == source) return 0;
    return -1;
}

int onnx_import_catalog_add(const char *path, const char *name, const char *sha256, char *err, size_t errlen)
{
    if (sha256 && sha256[0])
        return snprintf(err, errlen,
                        "uploaded model %s: its bytes are read by pacer-worker (--models-dir, else Redis), not here",
                        path),
               -1;
    uint8_t *buf;
    size_t len;
    char why[768];
    if (onnx_read_file(path, &buf, &len, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", strncmp(why, "onnx: ", 6) == 0 ? why + 6 : why);
        return -1;
    }
    const char *base = strrchr(path, '/');
    int rc = onnx_import_catalog_add_buffer(buf, len, name, base ? base + 1 : path, CATALOG_ONNX, why, sizeof why);
    free(buf);
    /* the message names the file once: "cannot open PATH: ..." does already */
    if (rc != 0) snprintf(err, errlen, "%s: %s", path, why);
    return rc;
}

/* ---- conformance cases (pacer-worker --onnx-case) -------------------------------------- */

/* ONNX's TensorProto.DataType names, by number (onnx.proto). */
static const char *dtype_name(int t)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",  "INT16",
                                        "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16", "DOUBLE",
                                        "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

int onnx_tensor_decode(const uint8_t *data, size_t len, onnx_tensor_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len > ONNX_CASE_TENSOR_MAX_BYTES)
        return snprintf(err, errlen, "%zu bytes exceed the limit of %zu", len, (size_t)ONNX_CASE_TENSOR_MAX_BYTES), -1;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, data);
    if (!t) return snprintf(err, errlen, "not a TensorProto, or truncated (the protobuf does not decode)"), -1;
    int rc = -1;
    const int64_t n = tensor_count(t);
    const int is_int = t->has_data_type && t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    const size_t esz = is_int ? sizeof(int64_t) : sizeof(float),
                 nval = is_int ? t->n_int64_data : t->n_float_data; /* without raw data */
    const void *src = t->has_raw_data ? (const void *)t->raw_data.data
                      : is_int        ? (const void *)t->int64_data
                                      : (const void *)t->float_data;
    void *dst = NULL;
    if (!is_int && (!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT))
        snprintf(err, errlen, "data type %s (%d): only float32 and int64 tensors are supported",
                 dtype_name(t->data_type), (int)t->data_type);
    else if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        snprintf(err, errlen, "external data is not supported");
    else if (n < 0 || (size_t)n > ONNX_CASE_TENSOR_MAX_BYTES / esz)
        snprintf(err, errlen, "shape of %zu dimensions is negative, too large or has more than 8", t->n_dims);
    else if (t->has_raw_data ? t->raw_data.len != (size_t)n * esz : nval != (size_t)n)
        snprintf(err, errlen, "%zu %s for %lld elements", t->has_raw_data ? t->raw_data.len : nval,
                 t->has_raw_data ? "bytes of raw data"
                 : is_int        ? "int64 values"
                                 : "float values",
                 (long long)n);
    else if (!(dst = malloc((size_t)(n ? n : 1) * esz))) snprintf(err, errlen, "out of memory");
    else {
        /* little-endian, as in tensor_floats; an empty tensor may have no data at all
         * (NULL), which memcpy must not be given even for 0 bytes */
        if (n) memcpy(dst, src, (size_t)n * esz);
        if (is_int) out->ints = dst;
        else out->data = dst;
        out->count = (size_t)n;
        out->ndims = (int)t->n_dims;
        for (size_t i = 0; i < t->n_dims; i++) out->dims[i] = t->dims[i];
        snprintf(out->name, sizeof out->name, "%s", t->name ? t->name : "");
        rc = 0;
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    return rc;
}

void onnx_tensor_free(onnx_tensor_t *t)
{
    free(t->data);
    free(t->ints);
    t->data = NULL;
    t->ints = NULL;
}

int onnx_graph_ops(const uint8_t *data, size_t len, char *out, size_t outlen)
{
    out[0] = '\0';
    if (len == 0 || len > ONNX_MAX_BYTES) return -1;
    char why[256];
    if (wire_check(data, len, why, sizeof why) != WIRE_OK) return -1;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp || !mp->graph) {
        if (mp) onnx__model_proto__free_unpacked(mp, NULL);
        return -1;
    }
    size_t used = 0;
    for (size_t i = 0; i < mp->graph->n_node && i < ONNX_MAX_NODES; i++) {
        const char *op = mp->graph->node[i]->op_type ? mp->graph->node[i]->op_type : "?";
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = mp->graph->node[j]->op_type && strcmp(mp->graph->node[j]->op_type, op) == 0;
        if (seen) continue;
        int w = snprintf(out + used, outlen - used, "%s%.64s", used ? "," : "", op);
        if (w < 0 || (size_t)w >= outlen - used) break; /* the list is cut, never overrun */
        used += (size_t)w;
    }
    onnx__model_proto__free_unpacked(mp, NULL);
    return 0;
}

/* ---- a case's inputs fed as activations ----------------------------------------------------
 * A case's graph input that has the activation's rank and batch (input_0's first
 * dimension), is float32 and is read as data, not as a weight (Conv's, Gemm's and a
 * normalisation's parameters, a 2-D MatMul's second operand), is an activation like
 * input_0, not a constant: onnx_import_case_inputs feeds them all as one model input of
 * (N, S), each sample theirs one after the other, and puts in front of the graph a Slice of
 * its part and a Reshape to its shape for each (the importer's own layers), so that an Add
 * of two (3, 4, 5) inputs is an Add of two activations. The Slice takes its bounds as
 * inputs (opset 10 on): in older opsets the inputs stay constants. */

#define PACK_INPUT "pacer_case_inputs"
#define NPACK (ONNX_CASE_MAX_TENSORS + 1)

/* Whether graph input `name` is read by some node as a weight (see above). */
static int read_as_weight(const Onnx__GraphProto *g, const char *name, int ndims)
{
    static const char *const weights[] = {
        "Conv", "ConvTranspose", "Gemm", "BatchNormalization", "LayerNormalization", "InstanceNormalization", "PRelu",
        NULL};
    for (size_t i = 0; i < g->n_node && i < ONNX_MAX_NODES; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 1; k < n->n_input; k++) {
            if (!n->input[k] || strcmp(n->input[k], name) != 0 || !n->op_type) continue;
            for (const char *const *w = weights; *w; w++)
                if (strcmp(n->op_type, *w) == 0) return 1;
            if (strcmp(n->op_type, "MatMul") == 0 && ndims == 2) return 1;
        }
    }
    return 0;
}

/* Whether case input t (after the first; graph input name) is an activation like in0. */
static int is_activation(const Onnx__GraphProto *g, const char *name, const onnx_tensor_t *t, const onnx_tensor_t *in0)
{
    return t->data && t->ndims == in0->ndims && t->ndims >= 1 && t->dims[0] == in0->dims[0] && t->dims[0] >= 1 &&
           !read_as_weight(g, name, t->ndims);
}

/* The rewritten graph's parts, which the graph borrows while it is imported: the packed
 * input vi, and per packed input k the constants starts, ends and shape, a Slice into
 * name[k][0] and a Reshape into the input's own name. */
typedef struct {
    Onnx__ValueInfoProto vi, *vip;
    Onnx__TypeProto tp;
    Onnx__TypeProto__Tensor tt;
    Onnx__TensorShapeProto sh;
    Onnx__TensorShapeProto__Dimension dim[2], *dimp[2];
    Onnx__NodeProto nodes[2 * NPACK];
    Onnx__TensorProto consts[3 * NPACK + 1];
    int64_t starts[NPACK], ends[NPACK], shapes[NPACK][8], axis1, cdims[3 * NPACK + 1];
    char axes_name[48], name[NPACK][4][48];
    char *slice_in[NPACK][4], *slice_out[NPACK], *reshape_in[NPACK][2], *reshape_out[NPACK];
} pack_t;

static void int64_const(pack_t *p, size_t c, char *name, int64_t *v, size_t n)
{
    Onnx__TensorProto *t = &p->consts[c];
    onnx__tensor_proto__init(t);
    t->name = name;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->n_int64_data = n;
    t->int64_data = v;
    p->cdims[c] = (int64_t)n;
    t->n_dims = 1;
    t->dims = &p->cdims[c];
}

static void node_init(Onnx__NodeProto *n, char *op, char *name, char **in, size_t nin, char **out)
{
    onnx__node_proto__init(n);
    n->op_type = op;
    n->name = name;
    n->n_input = nin;
    n->input = in;
    n->n_output = 1;
    n->output = out;
}

/* The packed input's value info: float32 (N, S). */
static void pack_input(pack_t *p, int64_t N, int64_t S)
{
    static char input[] = PACK_INPUT;
    onnx__value_info_proto__init(&p->vi);
    onnx__type_proto__init(&p->tp);
    onnx__type_proto__tensor__init(&p->tt);
    onnx__tensor_shape_proto__init(&p->sh);
    for (int d = 0; d < 2; d++) {
        onnx__tensor_shape_proto__dimension__init(&p->dim[d]);
        p->dim[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        p->dim[d].dim_value = d ? S : N;
        p->dimp[d] = &p->dim[d];
    }
    p->sh.n_dim = 2;
    p->sh.dim = p->dimp;
    p->tt.has_elem_type = 1;
    p->tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    p->tt.shape = &p->sh;
    p->tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    p->tp.tensor_type = &p->tt;
    p->vi.name = input;
    p->vi.type = &p->tp;
    p->vip = &p->vi;
}

/* p for the npk packed inputs in[k] (graph inputs names[k]): the packed input (N, S), and
 * per input a Slice of elements [off, off + its sample size) of each sample and a Reshape
 * to its shape (p->nodes[2k], [2k + 1]), their constants (p->consts, 3 npk + 1). */
static void pack_graph(pack_t *p, const onnx_tensor_t *const *in, char *const *names, int npk, int64_t S)
{
    static char slice[] = "Slice", reshape[] = "Reshape", input[] = PACK_INPUT;
    memset(p, 0, sizeof *p);
    pack_input(p, in[0]->dims[0], S);
    p->axis1 = 1;
    snprintf(p->axes_name, sizeof p->axes_name, "%s_axes", PACK_INPUT);
    int64_const(p, 0, p->axes_name, &p->axis1, 1);
    int64_t off = 0;
    for (int k = 0; k < npk; k++) {
        const onnx_tensor_t *t = in[k];
        char(*nm)[48] = p->name[k];
        snprintf(nm[0], 48, "%s_%d", PACK_INPUT, k);
        snprintf(nm[1], 48, "%s_%d_starts", PACK_INPUT, k);
        snprintf(nm[2], 48, "%s_%d_ends", PACK_INPUT, k);
        snprintf(nm[3], 48, "%s_%d_shape", PACK_INPUT, k);
        p->starts[k] = off;
        off += (int64_t)t->count / t->dims[0];
        p->ends[k] = off;
        p->shapes[k][0] = 0; /* the batch, copied */
        for (int d = 1; d < t->ndims && d < 8; d++) p->shapes[k][d] = t->dims[d];
        int64_const(p, 1 + 3 * (size_t)k, nm[1], &p->starts[k], 1);
        int64_const(p, 2 + 3 * (size_t)k, nm[2], &p->ends[k], 1);
        int64_const(p, 3 + 3 * (size_t)k, nm[3], p->shapes[k], (size_t)t->ndims);
        p->slice_in[k][0] = input;
        p->slice_in[k][1] = nm[1];
        p->slice_in[k][2] = nm[2];
        p->slice_in[k][3] = p->axes_name;
        p->slice_out[k] = nm[0];
        p->reshape_in[k][0] = nm[0];
        p->reshape_in[k][1] = nm[3];
        p->reshape_out[k] = names[k];
        node_init(&p->nodes[2 * k], slice, nm[0], p->slice_in[k], 4, &p->slice_out[k]);
        node_init(&p->nodes[2 * k + 1], reshape, names[k], p->reshape_in[k], 2, &p->reshape_out[k]);
    }
}

/* Whether g has a node that computes its training form (BatchNormalization's
 * training_mode 1: the batch's statistics), which --onnx-case's forward in evaluation mode
 * (the running statistics) does not: 1 with err set naming it. */
static int training_node(const Onnx__GraphProto *g, char *err, size_t errlen)
{
    for (size_t i = 0; i < g->n_node && i < ONNX_MAX_NODES; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (!n->op_type || strcmp(n->op_type, "BatchNormalization") != 0) continue;
        for (size_t a = 0; a < n->n_attribute; a++)
            if (n->attribute[a]->name && strcmp(n->attribute[a]->name, "training_mode") == 0 && n->attribute[a]->i)
                return snprintf(err, errlen,
                                "node '%s' (BatchNormalization): training_mode 1: a case runs the forward in evaluation "
                                "mode (the running statistics)",
                                n->name ? n->name : "?"),
                       1;
    }
    return 0;
}

/* The ai.onnx opset mp imports, or -1. */
static int64_t case_opset(const Onnx__ModelProto *mp)
{
    int64_t opset = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0) opset = o->has_version ? o->version : -1;
    }
    return opset;
}

/* t as the constant b of graph input name (its data borrowed). */
static Onnx__TensorProto *bound_tensor(Onnx__TensorProto *t, char *name, const onnx_tensor_t *b)
{
    onnx__tensor_proto__init(t);
    t->name = name;
    t->has_data_type = 1;
    t->n_dims = (size_t)b->ndims;
    t->dims = (int64_t *)b->dims;
    if (b->ints) {
        /* a shape argument: a constant the importer folds (input_ints) */
        t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        t->n_int64_data = b->count;
        t->int64_data = b->ints;
    } else {
        t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        t->n_float_data = b->count;
        t->float_data = b->data;
    }
    return t;
}

/* onnx_import_case and onnx_import_case_inputs: in0 NULL (no input fed as an activation
 * but the first) or the first input, whose batch the others' is compared with. */
static int case_import(const uint8_t *data, size_t len, const onnx_tensor_t *in0, const onnx_tensor_t *bound,
                       int nbound, int max_batch, int output, int *packed, model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (len == 0 || len > ONNX_MAX_BYTES)
        return snprintf(err, errlen, "onnx: %zu bytes: empty, or over the limit of %zu", len, ONNX_MAX_BYTES), -1;
    if (nbound < 0 || nbound > ONNX_CASE_MAX_TENSORS)
        return snprintf(err, errlen, "onnx: %d bound inputs (at most %d)", nbound, ONNX_CASE_MAX_TENSORS), -1;
    if (wire_check(data, len, err, errlen) == WIRE_BOUND) return -1;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp) return snprintf(err, errlen, "onnx: not an ONNX model, or truncated (the protobuf does not decode)"), -1;
    Onnx__GraphProto *g = mp->graph;
    int rc = -1, npk = 0;
    Onnx__TensorProto tp[ONNX_CASE_MAX_TENSORS];
    Onnx__TensorProto **inits = NULL;
    Onnx__NodeProto **nodes = NULL;
    pack_t *p = NULL;
    const onnx_tensor_t *pk[NPACK];
    char *pk_names[NPACK];
    size_t n_init = g ? g->n_initializer : 0;
    if (!g) {
        snprintf(err, errlen, "onnx: the model has no graph");
        goto out;
    }
    if (training_node(g, err, errlen)) goto out;
    /* The graph inputs that no initializer fills: the first is the activation, the others
     * (a single-operator case's weights and data) are bound, in order, to the given
     * tensors: activations like the first (is_activation) join it in the packed input,
     * the rest become initializers of the graph for the importer, which then sees one
     * input. */
    int k = 0;
    for (size_t i = 0; i < g->n_input; i++)
        if (g->input[i]->name && !is_initializer(g, g->input[i]->name)) k++;
    if (k != nbound + 1) {
        snprintf(err, errlen, "onnx: the graph has %d inputs, the case gives %d", k, nbound + 1);
        goto out;
    }
    inits = malloc((n_init + (size_t)nbound + 3 * NPACK + 1) * sizeof *inits);
    if (!inits) {
        snprintf(err, errlen, "onnx: out of memory");
        goto out;
    }
    if (n_init) memcpy(inits, g->initializer, n_init * sizeof *inits);
    const int feed = in0 && case_opset(mp) >= 10;
    int j = -1, nb = 0; /* j -1: the activation is still to come */
    for (size_t i = 0; i < g->n_input; i++) {
        if (!g->input[i]->name || is_initializer(g, g->input[i]->name)) continue;
        if (j < 0) {
            pk[0] = in0, pk_names[0] = g->input[i]->name;
            j = 0;
            continue;
        }
        const onnx_tensor_t *b = &bound[j];
        if (packed) packed[j + 1] = 0;
        if (feed && is_activation(g, g->input[i]->name, b, in0)) {
            if (packed) packed[j + 1] = 1;
            pk[++npk] = b, pk_names[npk] = g->input[i]->name;
            j++;
            continue;
        }
        inits[n_init + (size_t)nb++] = bound_tensor(&tp[j++], g->input[i]->name, b);
    }
    if (packed) packed[0] = 1;
    /* the graph borrows the arrays and the tensors only for the import: restored below,
     * before free_unpacked frees what protobuf-c allocated */
    Onnx__TensorProto **orig = g->initializer;
    Onnx__ValueInfoProto **orig_in = g->input;
    Onnx__NodeProto **orig_nodes = g->node;
    Onnx__ValueInfoProto **orig_out = g->output;
    const size_t orig_nin = g->n_input, orig_nn = g->n_node, orig_nout = g->n_output;
    if (output >= 0 && (size_t)output >= g->n_output) {
        snprintf(err, errlen, "onnx: the graph has %zu outputs, the case gives more", g->n_output);
        goto out;
    }
    if (output >= 0) g->output += output, g->n_output = 1; /* that output alone */
    size_t n_new = n_init + (size_t)nb;
    if (npk > 0) {
        int64_t S = 0;
        npk++; /* the first input's part too */
        for (int q = 0; q < npk; q++) S += (int64_t)pk[q]->count / pk[q]->dims[0];
        if (!(p = malloc(sizeof *p)) || !(nodes = malloc((orig_nn + 2 * (size_t)npk) * sizeof *nodes))) {
            snprintf(err, errlen, "onnx: out of memory");
            goto out;
        }
        pack_graph(p, pk, pk_names, npk, S);
        for (size_t c = 0; c < 3 * (size_t)npk + 1; c++) inits[n_new++] = &p->consts[c];
        for (int q = 0; q < 2 * npk; q++) nodes[q] = &p->nodes[q];
        if (orig_nn) memcpy(nodes + 2 * npk, orig_nodes, orig_nn * sizeof *nodes);
        g->node = nodes;
        g->n_node = orig_nn + 2 * (size_t)npk;
        g->input = &p->vip;
        g->n_input = 1;
    }
    g->initializer = inits;
    g->n_initializer = n_new;
    rc = import_model(mp, "onnx-case", max_batch, 1, out, err, errlen);
    g->initializer = orig;
    g->n_initializer = n_init;
    g->input = orig_in;
    g->n_input = orig_nin;
    g->node = orig_nodes;
    g->n_node = orig_nn;
    g->output = orig_out;
    g->n_output = orig_nout;
out:
    free(inits);
    free(nodes);
    free(p);
    onnx__model_proto__free_unpacked(mp, NULL);
    return rc;
}

int onnx_import_case(const uint8_t *data, size_t len, const onnx_tensor_t *bound, int nbound, int max_batch,
                     model_t **out, char *err, size_t errlen)
{
    return case_import(data, len, NULL, bound, nbound, max_batch, -1, NULL, out, err, errlen);
}

int onnx_import_case_inputs(const uint8_t *data, size_t len, const onnx_tensor_t *in, int nin, int max_batch,
                            int output, int *packed, model_t **out, char *err, size_t errlen)
{
    if (nin < 1) return *out = NULL, snprintf(err, errlen, "onnx: no input"), -1;
    return case_import(data, len, &in[0], &in[1], nin - 1, max_batch, output, packed, out, err, errlen);
}
