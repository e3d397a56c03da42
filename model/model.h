/* model/model.h - the networks pacer trains, as a list of layers over fused buffers.
 *
 * Which networks exist, their input shape and classes, is the catalog's
 * (common/catalog.h); model/ keeps the builder of each built-in network, by name, and
 * describes a built model back to the catalog (model_describe).
 *
 * Memory layout (the llm.c habit): one allocation holds every parameter, one every
 * gradient, one the optimizer's momentum, one the non-trained buffers (batch-norm running
 * statistics). Each tensor is a view at an offset recorded in tensors[]. The same layout
 * serves the forward pass, the optimizer, checkpoint I/O, one fused MPI message and, later,
 * one device buffer per kind on the GPU with identical offsets.
 *
 * Activations live in one arena sized for max_batch, so the batch size may change between
 * steps (dynamic batching) without allocating. model_create is the only function here that
 * allocates; forward, backward and evaluation never do.
 */
#ifndef PACER_MODEL_H
#define PACER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "ops.h"

/* The layer and tensor lists are sized by the builder (they grow while it runs), so a
 * network has as many layers as it needs; these bound a list against a runaway graph. */
#define MODEL_MAX_LAYERS 65536
#define MODEL_MAX_TENSORS 65536
#define MODEL_NAME_MAX CATALOG_NAME_MAX /* the model's name: a catalog name */
/* A tensor's name, PyTorch's state_dict key: "layer3.1.bn2.running_var",
 * "features.denseblock4.denselayer16.conv2.weight". */
#define MODEL_TENSOR_NAME_MAX 128
/* grads has this many spare floats after the last gradient, so an algorithm can append
 * [batch, batch * loss, batch * |g|^2, 1 if batch > 0] (the last two for the gradient
 * noise scale, common/gns.h) and send gradients and weights in ONE fused message.
 * common/memest.c counts them (it cannot include this header): change both, and
 * PACER_CUDA_ABI (the CUDA library sizes its grads buffers by it). */
#define MODEL_GRAD_EXTRA 4
/* Momentum of the batch-norm running statistics (PyTorch's 0.1): the built-in networks'
 * and the default of an imported batch norm (layer_t's momentum, which the host model and
 * its CUDA twin, model_cuda.cu, pass to their batch-norm kernels). */
#define MODEL_BN_MOMENTUM 0.1f
/* Most axes of one sample's tensor (the batch axis not counted): ONNX's 5-D volumes and
 * sequences (N, C, D, H, W) are rank 4, the largest networks people train reach 5. */
#define MODEL_MAX_RANK 5

/* The N-D shape of one sample (the batch axis not counted): rank 0 is a scalar per sample.
 * Every kernel reads a 3-D folding of it (model_shape_fold): dim 0 is the channels C, dim 1
 * the height H, the product of the rest the width W, ranks below 3 padded with 1s; so a
 * layer's (C, H, W) and (OC, OH, OW) below are always its shapes' foldings. */
typedef struct {
    int rank;
    int dims[MODEL_MAX_RANK];
} model_shape_t;

/* The 3-D folding (C, H, W) of s. */
void model_shape_fold(const model_shape_t *s, int *C, int *H, int *W);
/* Whether a and b have the same rank and dimensions. */
int model_shape_equal(const model_shape_t *a, const model_shape_t *b);
/* The number of elements of s (1 for rank 0). */
size_t model_shape_count(const model_shape_t *s);
/* s as "(4, 5, 6)" ("()" for rank 0), cut to len, always terminated; returns buf. */
char *model_shape_text(const model_shape_t *s, char *buf, size_t len);

/* Most elements of one sample's tensor (the batch axis not counted), at any layer and at
 * the input: the kernels fold a sample into int (C, H, W) and index it with int
 * (model_shape_fold), so one more element would wrap. A builder refuses a layer whose
 * output is larger (model_build_too_large), model_create_custom_shape an input. */
#define MODEL_SAMPLE_MAX 2147483647LL
/* The elements of s (1 for rank 0) into *n: 0, or -1 when a dimension is negative or the
 * product exceeds MODEL_SAMPLE_MAX (*n is then not set). Every count of a shape that came
 * from outside goes through this before model_shape_fold or model_shape_count. */
int model_shape_count_checked(const model_shape_t *s, size_t *n);

/* Arithmetic on dimensions and shape values read from a file (an ONNX graph's shapes,
 * attributes and the integers its shape arithmetic folds): a + b, a - b, a * b into *out,
 * 0, or -1 when the exact result is beyond +-MODEL_DIM_ARITH_MAX (*out is then not set).
 * The bound is far beyond any real size, and checked on the exact result (so never an
 * int64 overflow); a caller refuses -1 as "overflows". */
#define MODEL_DIM_ARITH_MAX ((int64_t)1 << 62)
int model_dim_add(int64_t a, int64_t b, int64_t *out);
int model_dim_sub(int64_t a, int64_t b, int64_t *out);
int model_dim_mul(int64_t a, int64_t b, int64_t *out);

typedef enum {
    LAYER_CONV,
    LAYER_MAXPOOL,
    LAYER_AVGPOOL,
    LAYER_RELU,
    LAYER_FC,
    LAYER_BN,
    LAYER_GAP,
    LAYER_ADD,
    /* from imported graphs (model/onnx_import.c); the CUDA backend runs them too */
    LAYER_LEAKY_RELU, /* alpha */
    LAYER_SIGMOID,
    LAYER_TANH,
    LAYER_CONCAT,      /* op.concat's axis (the channels: 0) of in, then of in2 (an n-way Concat: a chain) */
    LAYER_DROPOUT,     /* p; the identity at evaluation */
    LAYER_CLIP,        /* lo, hi (ReLU6: 0, 6) */
    LAYER_HARDSIGMOID, /* max(0, min(1, alpha * x + beta)) */
    LAYER_HARDSWISH,   /* x * max(0, min(1, x / 6 + 1 / 2)) */
    LAYER_MUL,         /* in * in2: in2 of in's shape, or (C, 1, 1) broadcast over the plane (bcast) */
    /* p; dropout of whole samples (torchvision's StochasticDepth, mode "row", the Python
     * client's ai.pacer:StochasticDepth): the identity at evaluation */
    LAYER_STOCHASTIC_DEPTH,
    /* functions of one input, any shape (ops.h's unary_forward): ONNX's Exp, Neg, Sqrt,
     * Reciprocal, Abs, and Pow with a constant exponent (alpha) */
    LAYER_EXP,
    LAYER_NEG,
    LAYER_SQRT,
    LAYER_RECIPROCAL,
    LAYER_ABS,
    LAYER_POW,
    /* A constant or parameter read by a binary operator (an ONNX initializer or Constant
     * that is no Conv, batch-norm or Gemm weight): no batch axis, its shape the tensor's;
     * trainable (a tensor of params, with a gradient: a layer scale, a positional
     * embedding) or frozen (a tensor of buffers: a Constant node's). Its forward copies
     * the tensor into its output (the first of the max_batch slots it is given), its
     * backward the gradient its readers summed there into grads. */
    LAYER_CONST,
    /* in op in2 with NumPy broadcasting over the N-D shapes and the batch (bc); either
     * input may be a LAYER_CONST. An Add of two activations of one shape stays LAYER_ADD,
     * a Mul of equal or (C, 1, 1) shapes LAYER_MUL: their kernels are faster. */
    LAYER_BADD,
    LAYER_SUB,
    LAYER_BMUL,
    LAYER_DIV,
    /* Data movement of the non-batch axes. LAYER_RESHAPE: the same elements in another
     * shape (ONNX's Reshape, Squeeze, Unsqueeze): a copy. LAYER_TRANSPOSE: the axes in the
     * order perm. LAYER_SLICE: elements start, start + step, ... below end of one axis
     * (ONNX's Slice, one layer per axis, and Split, one per output). */
    LAYER_RESHAPE,
    LAYER_TRANSPOSE,
    LAYER_SLICE,
    /* ONNX's ReduceMean and ReduceSum over the non-batch axes op.view.red_mask (bit d: sample axis
     * d), keepdims red_keep; bc the walk over the input (ops.h's reduce_forward) */
    LAYER_REDUCE_MEAN,
    LAYER_REDUCE_SUM,
    /* ONNX MatMul of an activation of rank > 1 per sample and an (IN, OUT) initializer
     * (torch.nn.Linear on (B, T, C)): gemm over the last axis, IN its size, B * T rows of
     * one GEMM; an Add of a bias after it joins it (has_bias). LAYER_FC flattens instead. */
    LAYER_LINEAR,
    /* The transformers' operators (after the older kinds: a kind's value never changes, the
     * CUDA backend's ABI counts on it). LAYER_SOFTMAX, LAYER_LOG_SOFTMAX: along the
     * non-batch axis op.softmax.axis (ONNX opset 13's Softmax and LogSoftmax). */
    LAYER_SOFTMAX,
    LAYER_LOG_SOFTMAX,
    /* ONNX's Erf, and the exact GELU (torch 1.13's nn.GELU export, x * 0.5 * (1 + Erf(x /
     * sqrt(2))), matched at import into this one row): model_build_unary's */
    LAYER_ERF,
    LAYER_GELU,
    /* ONNX MatMul of two activations (attention's Q K^T and A V): in (..., M, K) times in2
     * (..., K, N), the leading axes equal (no broadcasting), both batched; op.bmm.K: K */
    LAYER_BMM,
    /* ONNX LayerNormalization (opset 17) and torch 1.13's decomposed nn.LayerNorm (ReduceMean,
     * Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul weight, Add bias, matched at import):
     * over the non-batch axes op.norm.axis.. to the last, eps, weight w_off and bias b_off of those
     * axes' size (has_bias 1) */
    LAYER_LAYERNORM,
    /* Swin's relative position bias. LAYER_GATHER_PARAM: a parameter table gathered by constant
     * indices (a relative position bias: table[index]), without a batch axis like a
     * LAYER_CONST (in -1, read by a broadcasting operator): out (shape) = params[w_off +
     * map[j]], map the float-coded flat indices into the table (buffers at rm_off, exact
     * below 2^24), the table's shape op.table.shape; the backward scatter-adds into the table. An
     * index outside the table (a hostile checkpoint's buffer) reads 0 and gets no gradient. */
    LAYER_GATHER_PARAM,
    /* The vision transformers' class token. LAYER_EXPAND: ONNX Expand, in broadcast to the shape
     * (NumPy's rules, bc: sa the input's strides, 0 along the axes it is repeated on, the
     * batch too for a batch-less LAYER_CONST: ViT's class_token.expand(N, -1, -1)); its
     * backward sums over the repeated axes */
    LAYER_EXPAND,
    /* The language models' rows. LAYER_EMBED: an embedding table (params at w_off,
     * of shape op.table.shape (V, E)) read by the float-coded token ids of its input (the model
     * input (T) of a GPT): out (T, E) = table[ids]; an id outside [0, V) reads zeros (the
     * data loader refuses such ids first). Its backward scatter-adds into the table, after
     * zeroing it unless `tied` (model_build_linear_tied: a later layer reads the table as its weight
     * and its backward, which runs first, wrote the table's gradient). LAYER_CAUSAL_SOFTMAX:
     * row i of each (T, T) matrix of its input, softmax(op.softmax.scale * x[i, 0..i]), zeros after i
     * (attention's lower-triangular mask and its scale 1/sqrt(head size) in one row; the
     * masked half is never computed). */
    LAYER_EMBED,
    LAYER_CAUSAL_SOFTMAX,
    /* ONNX's Pow of an exponent that is a tensor (a constant of any shape, or an activation):
     * in ^ in2 with NumPy broadcasting like LAYER_BADD (bc); its backward adds into both
     * inputs' gradients (binary_backward), which it never sets */
    LAYER_BPOW,
    /* ONNX's ConvTranspose (2-D, and of a sequence): conv describes it, input (C, H, W),
     * output (OC, OH, OW), weight (C, OC/groups, KH, KW) (ops.h's conv_transpose2d_*); the
     * output padding is OH, OW beyond the size without it */
    LAYER_CONV_TRANSPOSE,
    /* the number of kinds: model/op_table.c has one row per kind above */
    LAYER_KIND_COUNT
} layer_kind_t;

/* Each kind's own parameters (layer_t's op): one member of the union per family of kinds,
 * named by the kind's MODEL_OPS row (op_table.h's params), which is the only member a layer
 * of that kind sets or reads; model_build_* write it, the kernels' calls read it. A new
 * parameter of a kind goes into its family's struct here and nowhere else. */

/* LAYER_LEAKY_RELU: alpha the negative slope; LAYER_HARDSIGMOID: alpha the slope, beta the
 * offset; LAYER_POW: alpha the exponent; LAYER_CLIP: lo, hi the bounds (-inf, +inf where
 * the file gives none). Every kind of model_unary_of reads these (0 where unset). */
typedef struct {
    float alpha, beta;
    float lo, hi;
} layer_unary_t;

/* LAYER_DROPOUT, LAYER_STOCHASTIC_DEPTH: the probability of dropping */
typedef struct {
    float p;
} layer_dropout_t;

/* LAYER_BN: eps, and the running statistics' update weight in PyTorch's convention (new =
 * (1 - momentum) * old + momentum * batch; ONNX's attribute is 1 - this):
 * MODEL_BN_MOMENTUM for the built-in networks, the file's for imported ones.
 * LAYER_LAYERNORM: over the non-batch axes axis.. to the last, eps. */
typedef struct {
    float eps, momentum;
    int axis;
} layer_norm_t;

/* Views and broadcasts of the non-batch axes: bc the walk over the inputs (ops.h's
 * bcast_desc_t) of LAYER_BADD to LAYER_DIV, LAYER_BPOW and LAYER_EXPAND (from the inputs'
 * shapes; EXPAND: sa the input's strides, 0 along the axes it is repeated on, the batch too
 * for a batch-less LAYER_CONST), the view's strides of LAYER_TRANSPOSE and LAYER_SLICE
 * (ops.h's view_forward), the walk of LAYER_REDUCE_*. off: the view's first element in a
 * sample. LAYER_TRANSPOSE: output axis i is input axis perm[i]. LAYER_SLICE: the axis
 * (non-batch, 0 = the channels), 0 <= start < end <= its size for step >= 1, size > start
 * > end >= -1 for step <= -1 (ONNX's walk down). LAYER_REDUCE_*: red_mask the reduced
 * sample axes (bit d: axis d), red_keep keepdims (a reduced axis stays, of size 1). */
typedef struct {
    bcast_desc_t bc;
    size_t off;
    int perm[MODEL_MAX_RANK];
    int axis, start, end, step;
    unsigned red_mask;
    int red_keep;
} layer_view_t;

/* LAYER_SOFTMAX, LAYER_LOG_SOFTMAX: along the non-batch axis axis. LAYER_CAUSAL_SOFTMAX:
 * scale, the scores' factor inside the softmax (1 / sqrt(head size)). */
typedef struct {
    int axis;
    float scale;
} layer_softmax_t;

/* LAYER_CONCAT: the axis joined (0 = the channels, the only one on the GPU), first the
 * first input's size along it */
typedef struct {
    int axis, first;
} layer_concat_t;

/* LAYER_BMM: K, the products' inner size */
typedef struct {
    int K;
} layer_bmm_t;

/* LAYER_GATHER_PARAM, LAYER_EMBED: the table's shape (its params at w_off). LAYER_EMBED:
 * tied, its table is a later layer's weight too (model_build_linear_tied's); read by the
 * CPU and CUDA backwards alike. */
typedef struct {
    model_shape_t shape;
    int tied;
} layer_table_t;

/* LAYER_CONST: frozen, a tensor of buffers (no gradient), else of params */
typedef struct {
    int frozen;
} layer_const_t;

/* LAYER_MUL: bcast, in2 is (C, 1, 1), read once per plane */
typedef struct {
    int bcast;
} layer_mul_t;

/* Which member of layer_t's op a kind's layers use (model_op_t's params) */
typedef enum {
    LAYER_PARAMS_NONE,
    LAYER_PARAMS_CONV,
    LAYER_PARAMS_POOL,
    LAYER_PARAMS_SC,
    LAYER_PARAMS_GEMM,
    LAYER_PARAMS_UNARY,
    LAYER_PARAMS_DROPOUT,
    LAYER_PARAMS_NORM,
    LAYER_PARAMS_VIEW,
    LAYER_PARAMS_SOFTMAX,
    LAYER_PARAMS_CONCAT,
    LAYER_PARAMS_BMM,
    LAYER_PARAMS_TABLE,
    LAYER_PARAMS_CONST,
    LAYER_PARAMS_MUL,
} layer_params_t;

/* What a layer is: its kind, inputs, shapes, its kind's parameters and its places in the
 * fused buffers. How it runs (its fusions, gradient routing) is its entry in model_t's plan
 * (plan.h). */
typedef struct {
    layer_kind_t kind;
    int in;                /* producing layer of the input; -1 = the model input */
    int in2;               /* the second input of a two-input kind; -1 = none */
    int C, H, W;           /* input shape of one sample: the 3-D folding of its producer's shape */
    int OC, OH, OW;        /* output shape of one sample: the 3-D folding of shape */
    model_shape_t shape;   /* output shape of one sample, N-D (its inputs': their producers') */
    int has_bias;          /* convolutions, FC, Linear: a bias at b_off; LAYER_LAYERNORM: 1 */
    size_t w_off, b_off;   /* params: conv/fc weight and bias, bn gamma and beta, a table */
    size_t rm_off, rv_off; /* buffers: bn running mean and variance; a gather's indices */
    size_t out_off;        /* activation arena: (max_batch, OC, OH, OW) */
    /* maxpool argmax arena, or bn saved mean/invstd (2*OC); a layer norm's rows' statistics
     * (2 doubles a row, after its output in the activation arena) */
    size_t aux_off;
    union {
        conv2d_desc_t conv;  /* LAYER_CONV, LAYER_CONV_TRANSPOSE */
        pool2d_desc_t pool;  /* LAYER_MAXPOOL, LAYER_AVGPOOL */
        shortcut_desc_t sc;  /* LAYER_ADD: the shortcut (identity or strided, zero-padded) */
        gemm_desc_t gemm;    /* LAYER_FC, LAYER_LINEAR: weight layout, alpha, beta, IN, OUT */
        layer_unary_t unary; /* the functions of one input with parameters */
        layer_dropout_t dropout;
        layer_norm_t norm;
        layer_view_t view;
        layer_softmax_t softmax;
        layer_concat_t concat;
        layer_bmm_t bmm;
        layer_table_t table;
        layer_const_t cnst;
        layer_mul_t mul;
    } op;
} layer_t;

/* The function of one input a layer's kind computes (scalar_fn.h's table: the CPU's
 * generation and the CUDA backend run it) and its parameters a and b, or UNARY_OP_COUNT
 * for a kind that is none. */
static inline unary_op_t model_unary_of(const layer_t *l, float *a, float *b)
{
    *a = l->op.unary.alpha;
    *b = 0.0f;
    switch (l->kind) {
    case LAYER_RELU: return UNARY_RELU;
    case LAYER_LEAKY_RELU: return UNARY_LEAKY_RELU;
    case LAYER_SIGMOID: return UNARY_SIGMOID;
    case LAYER_TANH: return UNARY_TANH;
    case LAYER_CLIP: *a = l->op.unary.lo, *b = l->op.unary.hi; return UNARY_CLIP;
    case LAYER_HARDSIGMOID: *b = l->op.unary.beta; return UNARY_HARDSIGMOID;
    case LAYER_HARDSWISH: return UNARY_HARDSWISH;
    case LAYER_EXP: return UNARY_EXP;
    case LAYER_NEG: return UNARY_NEG;
    case LAYER_SQRT: return UNARY_SQRT;
    case LAYER_RECIPROCAL: return UNARY_RECIPROCAL;
    case LAYER_ABS: return UNARY_ABS;
    case LAYER_POW: return UNARY_POW;
    case LAYER_ERF: return UNARY_ERF;
    case LAYER_GELU: return UNARY_GELU;
    default: *a = 0.0f; return UNARY_OP_COUNT;
    }
}

/* How a model's layers run (model/plan.h) */
typedef struct model_plan model_plan_t;

typedef struct {
    char name[MODEL_TENSOR_NAME_MAX]; /* "conv1.weight" */
    size_t offset, count;             /* into params (or buffers when is_buffer) */
    int is_buffer;
    /* A bias or normalisation parameter (every 1-D parameter: batch-norm gamma and beta,
     * convolution and linear biases), which optimizer.no_decay "auto" exempts from weight
     * decay. Set by model_create from the layer list. */
    int no_decay;
    /* Frozen (the spec's freeze, worker/init_weights.h): no gradient computed (plan.h's
     * layer_tensor), no optimizer update (model_decay_run), no all-reduce
     * (worker/compress.h). Set by the owner after model_create, then
     * model_zero_frozen_grads; 0 by default. */
    int no_update;
} tensor_info_t;

typedef struct {
    char name[MODEL_NAME_MAX];
    int C, H, W, num_classes; /* input and output of the network (the catalog's) */
    /* Loss rows per sample: the logits of one sample are (positions, num_classes) and each
     * position has its label (a language model's T next tokens); 1 for a classifier. Set
     * by model_create from the last layer's shape (its element count over num_classes). */
    int positions;
    model_shape_t in_shape; /* the input of one sample, N-D; (C, H, W) is its folding */
    int max_batch;
    int kaiming_conv; /* init: convolutions Kaiming normal (resnet20), else uniform */
    /* Dropout masks: training forward t (counted by model_forward, the backward after it
     * reuses its masks) of layer i uses dropout_key(dropout_seed, t, i). The owner sets
     * dropout_seed (the job's seed mixed with the rank); nothing else depends on it. */
    uint64_t dropout_seed, dropout_step;

    layer_t *layers; /* (nlayers), allocated by model_create */
    int nlayers;
    tensor_info_t *tensors; /* (ntensors) */
    int ntensors;

    size_t nparams;  /* floats in params, grads and momentum */
    size_t nbuffers; /* floats in buffers */
    float *params;   /* fused parameters */
    float *grads;    /* fused gradients, same offsets, + MODEL_GRAD_EXTRA */
    float *momentum; /* optimizer state, same offsets: SGD's buffer, AdamW's first moment */
    float *moment2;  /* AdamW's second moment, same offsets; NULL until model_alloc_moment2 */
    float *buffers;  /* bn running stats */
    /* The loss's label smoothing (softmax_xent_forward's), set by the owner; 0 = none */
    float label_smoothing;

    size_t act_floats;  /* per arena */
    size_t aux_floats;  /* bn saved statistics */
    size_t argmax_ints; /* maxpool argmax */
    float *acts;        /* every layer's output */
    float *dacts;       /* gradient of every layer's output */
    float *aux;         /* bn saved statistics */
    int32_t *argmax;    /* maxpool argmax */
    float *ws;          /* conv workspace */
    size_t ws_floats;
    float *probs;  /* (max_batch, num_classes) softmax of the logits */
    float *dinput; /* NULL: the input gradient is never needed */

    /* Called between layers in forward and backward when set: lets an algorithm drive a
     * nonblocking MPI collective (MPI_Test) while the step computes, since Open MPI only
     * progresses nonblocking collectives inside MPI calls. */
    void (*progress)(void *ctx);
    void *progress_ctx;
    /* Called in a training backward right after layer i's backward, when set: from then on
     * no later backward writes the gradients of the parameters no layer before i reads, so
     * an algorithm may reduce them (and give their pages back) while the pass goes on. */
    void (*grad_done)(void *ctx, int layer);
    void *grad_done_ctx;
    /* 1: a fused attention's layers run one by one (plan.h's attn), as on a CPU without
     * the fused kernel; the results are the same bits. 0 (model_create's) fuses. */
    int attention_unfused;
    /* Synchronised batch norm (kernels/cpu/ops.h bn_sync_t; a job's sync_batchnorm): while
     * set, a training forward's batch norms and their backward take the statistics of every
     * process's part of the global batch through it. NULL: each process's own batch. Its
     * owner sets it around a training step only, which every process takes: any other
     * training forward (a timing) must not reduce. */
    const bn_sync_t *bn_sync;
    /* Counts that tests read: per tensor, the parameter gradients host backwards have
     * computed into it (a tied table counts its two); and the ones skipped as frozen. */
    long long *grads_computed; /* (ntensors) */
    long long grads_skipped;
    long long backward_skipped; /* the layers whose backward was skipped (plan.h's grad_needed) */
    /* The low-rank adapters a job's lora added to the graph (model/lora.h), or NULL. */
    struct model_lora *lora;
    /* How the layers run (plan.h): their fusions, gradient routing and the activation
     * gradients' places in dacts, set by model_create and model_clone from the layer list. */
    model_plan_t *plan;
} model_t;

/* Builds the catalog's model name (its input shape and classes from the catalog, its
 * layers from model/'s builder of that name) for batches of up to max_batch. Returns 0,
 * or -1 with err set (not in the catalog, no builder for it, out of memory). */
int model_create(const char *name, int max_batch, model_t **out, char *err, size_t errlen);
/* The same with its head (the last, fully connected layer) sized to `classes` outputs, as
 * torchvision's num_classes: what a job builds for its data set's classes (a built-in
 * network trains on a data set of any class count; catalog_model_for_classes has its
 * figures). classes 0 = the catalog's; else 1 to CATALOG_CLASSES_MAX, or -1 with err. */
int model_create_classes(const char *name, int classes, int max_batch, model_t **out, char *err, size_t errlen);
/* Networks from outside (an ONNX graph, model/onnx_import.c) are built on the same layer
 * list through these, in order: each returns the new layer's index (the `in` of a later
 * layer; -1 is the model input), shapes follow from the input's. Tensor names are given
 * whole (the state_dict keys). A call that fails (bad geometry, a list bound, a name longer
 * than MODEL_TENSOR_NAME_MAX - 1) marks the builder failed and the model is not made. */
typedef struct model_builder model_builder_t;
/* geom: every field of conv2d_desc_t but C, H, W (the input's) and OH, OW */
int model_build_conv(model_builder_t *b, int in, const conv2d_desc_t *geom, int bias, const char *wname,
                     const char *bname);
/* geom: every field of conv2d_desc_t but C, H, W (the input's); OH, OW the output's size
 * (with its output padding), or both 0 for the size without one */
int model_build_conv_transpose(model_builder_t *b, int in, const conv2d_desc_t *geom, int bias, const char *wname,
                               const char *bname);
/* kind LAYER_MAXPOOL or LAYER_AVGPOOL; geom: every field but C, H, W, OH, OW */
int model_build_pool(model_builder_t *b, layer_kind_t kind, int in, const pool2d_desc_t *geom);
int model_build_relu(model_builder_t *b, int in);
/* flattens its input; weight (OUT, C*H*W) */
int model_build_fc(model_builder_t *b, int in, int OUT, const char *wname, const char *bname);
/* ONNX Gemm: flattens its input; g's layout, alpha and beta (IN and OUT are filled in);
 * bname NULL: no bias */
int model_build_gemm(model_builder_t *b, int in, int OUT, const gemm_desc_t *g, const char *wname, const char *bname);
/* A LAYER_LINEAR of in's last axis (weight (IN, OUT), IN that axis's size; in of rank >= 2)
 * without bias */
int model_build_linear(model_builder_t *b, int in, int OUT, const char *wname);
/* The same with the weight's layout: GEMM_W_IN_OUT (the above), or GEMM_W_OUT_IN, an (OUT,
 * IN) weight (torch's Linear exported as MatMul by a Transpose of its weight) */
int model_build_linear_layout(model_builder_t *b, int in, int OUT, gemm_layout_t layout, const char *wname);
/* The same with g's layout and alpha: out = alpha * x W' (g's IN, OUT and beta are not
 * read; alpha finite) */
int model_build_linear_gemm(model_builder_t *b, int in, int OUT, const gemm_desc_t *g, const char *wname);
/* Gives the last layer, a fully connected one (LAYER_FC or LAYER_LINEAR) without bias, the bias bname (ONNX MatMul
 * followed by Add); -1 (and the builder failed) for any other layer. */
int model_build_fc_bias(model_builder_t *b, int li, const char *bname);
/* names: gamma, beta, running mean, running variance */
int model_build_bn(model_builder_t *b, int in, const char *const names[4]);
/* the same with another epsilon */
int model_build_bn_eps(model_builder_t *b, int in, const char *const names[4], float eps);
/* the same with another momentum too (PyTorch's convention, in [0, 1]) */
int model_build_bn_momentum(model_builder_t *b, int in, const char *const names[4], float eps, float momentum);
/* min(max(x, lo), hi); lo or hi may be infinite, neither NaN (ONNX Clip: hi wins where lo > hi) */
int model_build_clip(model_builder_t *b, int in, float lo, float hi);
/* max(0, min(1, alpha * x + beta)), alpha and beta finite */
int model_build_hardsigmoid(model_builder_t *b, int in, float alpha, float beta);
int model_build_hardswish(model_builder_t *b, int in);
/* a * x elementwise: x of a's shape, or either of them (C, 1, 1) against the other's
 * (C, H, W) (squeeze-excitation's scale); the order does not matter */
int model_build_mul(model_builder_t *b, int a, int x);
/* kind LAYER_LEAKY_RELU (arg: alpha >= 0), LAYER_SIGMOID, LAYER_TANH, LAYER_DROPOUT and
 * LAYER_STOCHASTIC_DEPTH (arg: p in [0, 1]) */
int model_build_elementwise(model_builder_t *b, layer_kind_t kind, int in, float arg);
/* A LAYER_CONST of shape s (no batch axis), the tensor name in params (frozen 0) or in
 * buffers (frozen 1) */
int model_build_const(model_builder_t *b, const model_shape_t *s, const char *name, int frozen);
/* kind LAYER_BADD, LAYER_SUB, LAYER_BMUL, LAYER_DIV or LAYER_BPOW: a op x, broadcast; not
 * both constants */
int model_build_binary(model_builder_t *b, layer_kind_t kind, int a, int x);
/* in's elements in the shape to (the same count) */
int model_build_reshape(model_builder_t *b, int in, const model_shape_t *to);
/* in's axes in the order perm (a permutation of 0 .. rank - 1) */
int model_build_transpose(model_builder_t *b, int in, const int *perm);
/* in's axis elements start, start + step, ... before end (0 <= start < end <= size, step >= 1;
 * or size > start > end >= -1, step <= -1) */
int model_build_slice(model_builder_t *b, int in, int axis, int start, int end, int step);
/* kind LAYER_REDUCE_MEAN or LAYER_REDUCE_SUM of in over its sample axes mask (bit d: axis
 * d; not 0, below its rank), keepdims keep */
int model_build_reduce(model_builder_t *b, layer_kind_t kind, int in, unsigned mask, int keep);
/* kind LAYER_EXP to LAYER_POW, LAYER_ERF or LAYER_GELU (a: Pow's exponent, finite; ignored
 * by the others) */
int model_build_unary(model_builder_t *b, layer_kind_t kind, int in, float a);
/* a (..., M, K) times x (..., K, N), activations of one rank >= 2 whose leading axes are
 * equal (neither a LAYER_CONST) */
int model_build_bmm(model_builder_t *b, int a, int x);
/* layer normalisation of in over its non-batch axes axis.. to the last, eps > 0, with the
 * weight wname and bias bname of those axes' element count */
int model_build_layernorm(model_builder_t *b, int in, int axis, float eps, const char *wname, const char *bname);
/* A LAYER_GATHER_PARAM of shape s: table tname (params, of shape table), gathered by the
 * flat indices of buffer mname (s's element count of them, each below the table's count,
 * which is below 2^24) */
int model_build_gather_param(model_builder_t *b, const model_shape_t *s, const model_shape_t *table, const char *tname,
                             const char *mname);
/* A LAYER_EMBED of in's elements (float-coded ids) into rows of table tname (params, V x E):
 * its output in's shape with an axis E appended (in of rank < MODEL_MAX_RANK) */
int model_build_embed(model_builder_t *b, int in, int V, int E, const char *tname);
/* A LAYER_LINEAR of in's last axis (E) to V outputs whose weight is embedding layer
 * embed_li's table (V, E), read as an (OUT, IN) weight: tied input and output embeddings,
 * both gradients summed into the one tensor */
int model_build_linear_tied(model_builder_t *b, int in, int embed_li);
/* A LAYER_CAUSAL_SOFTMAX of in (rank >= 2, its last two axes equal: T x T scores), scale > 0 */
int model_build_causal_softmax(model_builder_t *b, int in, float scale);
/* kind LAYER_SOFTMAX or LAYER_LOG_SOFTMAX of in along its non-batch axis axis (0 .. rank - 1) */
int model_build_softmax(model_builder_t *b, layer_kind_t kind, int in, int axis);
/* in (an activation, or a batch-less LAYER_CONST) broadcast to the sample shape to: its
 * axes right-aligned to to's, each equal or 1 */
int model_build_expand(model_builder_t *b, int in, const model_shape_t *to);
/* channels of a, then of x (same H, W) */
int model_build_concat(model_builder_t *b, int a, int x);
/* the same along non-batch axis axis (0: the channels) of two inputs of one rank, equal but
 * along it */
int model_build_concat_axis(model_builder_t *b, int a, int x, int axis);
int model_build_gap(model_builder_t *b, int in);
/* a + x, x of a's shape (or the option-A shortcut of a smaller x, model.h's LAYER_ADD) */
int model_build_add(model_builder_t *b, int a, int x);
/* A rewrite of another model's graph (model/lora.c's adapters) replays its lists: first
 * src's first n tensors, each at src's offset (n: every one of src's parameters and
 * buffers that the new model keeps, the first in src's order), then layers of src each
 * copied to read the new model's in and in2 (-1: the model input, or none for in2), with
 * what its builder reserved in the arenas reserved anew; layers the rewrite adds come
 * through the calls above. */
void model_build_tensors_of(model_builder_t *b, const model_t *src, int n);
int model_build_copy(model_builder_t *b, const layer_t *src, int in, int in2);
/* Output shape of layer li (-1: the model input); 0, or -1 for no such layer. */
int model_build_shape(const model_builder_t *b, int li, int *C, int *H, int *W);
/* The same, N-D. */
int model_build_shape_nd(const model_builder_t *b, int li, model_shape_t *out);
/* 0 while every call succeeded. */
int model_build_failed(const model_builder_t *b);
/* The first layer whose output has more than MODEL_SAMPLE_MAX elements per sample (a call
 * refused for that: bad geometry is model_build_failed's alone), its shape in *shape
 * (unless NULL; rank -1 when no shape of int dimensions holds it), else -1. */
int model_build_too_large(const model_builder_t *b, model_shape_t *shape);
/* The bytes model_create_custom will allocate for the lists built so far (alloc_buffers:
 * every fused buffer and arena at the builder's batch), saturating at SIZE_MAX: what an
 * importer of outside files bounds before anything large is allocated. */
size_t model_build_bytes(const model_builder_t *b);
/* Fills a builder; returns 0, or -1 with err set (what it refused, and why). */
typedef int (*model_build_fn)(model_builder_t *b, void *ctx, char *err, size_t errlen);
/* A model named name (not looked up in the catalog) of input (C, H, W) and classes
 * outputs, its layers from build(b, ctx). Returns 0, or -1 with err set. */
int model_create_custom(const char *name, int C, int H, int W, int classes, int max_batch, model_build_fn build,
                        void *ctx, model_t **out, char *err, size_t errlen);
/* The same for an input of any rank 0..MODEL_MAX_RANK (every dimension positive). */
int model_create_custom_shape(const char *name, const model_shape_t *in, int classes, int max_batch,
                              model_build_fn build, void *ctx, model_t **out, char *err, size_t errlen);

/* A model with src's name, layer and tensor lists and sizes, and buffers of its own
 * (zeroed): a twin that never depends on looking the name up again (the stand-in device
 * of tests/fakecuda). Returns 0, or -1 with err set (out of memory). */
int model_clone(const model_t *src, model_t **out, char *err, size_t errlen);
void model_free(model_t *m);

/* The catalog's figures of a built model (common/catalog.h): name, input shape, classes,
 * layers, parameters, buffers, what does not grow with the batch (batch-norm saved
 * statistics and the largest convolution workspace any batch can need), activations and
 * argmax per sample, forward FLOPs per sample. Title, data set and source are left empty
 * (source builtin): the caller's, as who adds an imported model to the catalog knows
 * them. Independent of m->max_batch. */
void model_describe(const model_t *m, catalog_model_t *out);

/* PyTorch's default initialisation (uniform +-1/sqrt(fan_in) for weights and biases of
 * conv and fc; Kaiming normal for resnet20 convolutions; bn gamma 1, beta 0, running
 * mean 0, running var 1), drawn from seed. Zeroes the momentum. */
void model_init_params(model_t *m, uint64_t seed);
/* Zeroes the optimizer state (momentum, and moment2 when allocated) without making its
 * pages resident: what a sharded job never writes outside a rank's range stays out of
 * its memory (worker/shard.h). The initialisers call it. */
void model_zero_state(model_t *m);
/* For a process that never updates the weights (pacer-generate): frees the optimizer state
 * (momentum, AdamW's second moment; NULL after), so that a checkpoint restores the weights
 * and buffers alone (worker/checkpoint.h) and the state is never made resident. Such a
 * model is not trained nor saved. */
void model_drop_optimizer_state(model_t *m);
/* Whether buffers (nbuffers floats laid out as m's: what a file holds for them, a
 * checkpoint's, before they are restored) hold what the layers can use: every gathered
 * parameter's index map (a float per output element) a whole index into its table, every
 * batch norm's running mean finite and running variance finite and >= 0. 0, or -1 with
 * err naming the layer, the buffer (its tensor), the element and its value. The kernels
 * bound the indices anyway (an index out of range reads 0), but not the statistics: this
 * is what makes a damaged or forged buffer an error instead of silently wrong outputs. */
int model_check_buffers(const model_t *m, const float *buffers, char *err, size_t errlen);
/* The tensor of params (is_buffer 0) or buffers (1) that holds flat element off, or NULL:
 * what a message about one element names. */
const tensor_info_t *model_tensor_at(const model_t *m, size_t off, int is_buffer);

/* Forward pass of B <= max_batch samples x (B, C, H, W). train selects batch-norm mode
 * (and running-stat updates). Returns the mean cross-entropy loss against y (B x
 * positions labels: the mean over every position of every sample); the logits are
 * model_logits(m), (B, positions, num_classes). */
float model_forward(model_t *m, const float *x, const int32_t *y, int B, int train);
/* Backward pass after a training forward on the same x, y, B: writes the gradient of
 * loss_scale * mean loss into m->grads (every tensor written, nothing accumulated). */
void model_backward(model_t *m, const float *x, const int32_t *y, int B, float loss_scale);
/* The first pass of model_backward: zeroes the output gradients its layers accumulate
 * into, for the first B samples (bench/layer_profile times it alone). */
void model_zero_dacts(model_t *m, int B);
/* The zeroing of model_zero_dacts for the gradients whose life begins at backward step
 * `step` only (plan.h's dact_first): what model_backward does before each layer's
 * backward, since a gradient may share memory with one that dies before it is born. */
void model_zero_dacts_at(model_t *m, int B, int step);
const float *model_logits(const model_t *m);
/* Whether layer i's output is empty (a dimension of 0): the forward computes nothing for it. */
int model_layer_empty(const model_t *m, int i);

/* Allocates the zeroed second-moment buffer (m->moment2) an AdamW run needs; the one
 * allocation outside model_create, so that an SGD run does not pay for it. 0, or -1 (out
 * of memory). */
int model_alloc_moment2(model_t *m);
/* The parameters in runs of adjacent tensors of one weight-decay group: from *ti = 0,
 * each call gives the next run's offset and float count into params and whether it is
 * exempt from decay (tensor_info_t's no_decay; groups 0: one run of every parameter, not
 * exempt) and returns 1; 0 past the last. Frozen tensors (no_update) are in no run: the
 * optimizer never touches them. Allocates nothing (a training step's). Inline: the CUDA
 * library (model_cuda.cu, which does not link model.c) walks the same runs. */
static inline int model_decay_run(const model_t *m, int groups, int *ti, size_t *off, size_t *count, int *no_decay)
{
    /* parameter tensors lie in params in list order, one after the other */
    int t = *ti;
    while (t < m->ntensors && (m->tensors[t].is_buffer || m->tensors[t].no_update)) t++;
    if (t >= m->ntensors) return 0;
    const int nd = groups && m->tensors[t].no_decay;
    *off = m->tensors[t].offset;
    *count = 0;
    for (; t < m->ntensors; t++) {
        const tensor_info_t *x = &m->tensors[t];
        if (x->is_buffer) continue;
        if (x->no_update || (groups && x->no_decay) != nd) break;
        *count += x->count;
    }
    *ti = t;
    *no_decay = nd;
    return 1;
}

/* One optimizer step (ops.h's optim_step_t) on the gradient g (nparams floats): clipping,
 * then the rule over the weight-decay runs, in params, momentum and (AdamW) moment2.
 * worker_apply_gradient's host path, and the stand-in device's (tests/fakecuda). */
void model_apply_optimizer(model_t *m, const float *g, const optim_step_t *o);

/* Zeroes the gradients of the tensors that take no update (no_update), once after they are
 * marked: a backward never writes them (plan.h's layer_tensor), so they stay 0 and
 * whatever reads the whole of grads (a norm, a sum over ranks) reads nothing of theirs. */
void model_zero_frozen_grads(model_t *m);

/* Number of trainable parameters (for --help and tests). */
size_t model_param_count(const model_t *m);

#endif
