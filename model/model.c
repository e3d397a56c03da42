/* model/model.c - see model.h. Builds each network as a layer list in two passes: the
 * builder records layers and counts floats (the layer and tensor lists grow as it goes),
 * then one allocation per fused buffer is made and every offset becomes a view. Forward
 * walks the list calling each layer's row of the operator table (model/op_table.c);
 * backward walks it in reverse, accumulating input gradients so residual branches sum (the
 * ops.h convention). Which steps are fused, where gradients are set and which layers need
 * a backward is planned once from the built list (plan.h), never by the steps peeking at
 * their neighbours' kinds. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lora.h"
#include "matmul.h"
#include "op_table.h"
#include "plan.h"
#include "rng.h"

/* ---- builder ------------------------------------------------------------------------- */

/* model.h's model_builder_t: the built-in builders below and an outside one (an ONNX
 * graph, model/onnx_import.c) fill the same lists through the same functions. */
struct model_builder {
    model_t *m;
    int cap_layers, cap_tensors;
    int failed;              /* 1: geometry, a list bound or a name too long; 2: out of memory */
    int too_large;           /* 1 + the first layer whose output has more than MODEL_SAMPLE_MAX elements */
    model_shape_t too_shape; /* that output's shape (rank -1 where it has no int dimensions) */
    int refused;             /* 1 + the first layer whose operator refused its input's shape */
    layer_t scratch;         /* what a layer that could not be added writes into */
};
typedef model_builder_t builder_t;

/* The first capacity of each list: small, so that the built-in networks exercise the
 * growth (resnet20 has 68 layers). */
#define LIST_FIRST_CAP 16

/* Makes room for one more entry of a list; 0, or -1 with b->failed set. */
static int grow(builder_t *b, void **list, int n, int *cap, size_t size, int bound)
{
    if (n < *cap) return 0;
    if (n >= bound) return b->failed = 1, -1;
    int c = *cap ? 2 * *cap : LIST_FIRST_CAP;
    if (c > bound) c = bound;
    void *p = realloc(*list, (size_t)c * size);
    if (!p) return b->failed = 2, -1;
    *list = p;
    *cap = c;
    return 0;
}

/* A tensor named name (the full state_dict key). */
static size_t add_tensor_named(builder_t *b, const char *name, size_t count, int is_buffer)
{
    model_t *m = b->m;
    size_t *total = is_buffer ? &m->nbuffers : &m->nparams;
    if (grow(b, (void **)&m->tensors, m->ntensors, &b->cap_tensors, sizeof *m->tensors, MODEL_MAX_TENSORS) != 0)
        return 0;
    tensor_info_t *t = &m->tensors[m->ntensors++];
    memset(t, 0, sizeof *t);
    int n = snprintf(t->name, sizeof t->name, "%s", name ? name : "");
    if (n <= 0 || (size_t)n >= sizeof t->name) b->failed = 1; /* a name too long is an error, never cut */
    t->offset = *total;
    t->count = count;
    t->is_buffer = is_buffer;
    *total += count;
    return t->offset;
}

/* Layer li, or the scratch layer when li is not one (a layer that could not be added):
 * a builder goes on without checking each call, and model_create discards the result. */
static layer_t *layer_at(builder_t *b, int li)
{
    return li >= 0 && li < b->m->nlayers ? &b->m->layers[li] : &b->scratch;
}

/* The N-D output shape of layer li, or the model input's for li < 0 (the scratch layer's
 * for a layer that could not be added). */
static const model_shape_t *shape_at(builder_t *b, int li)
{
    return li < 0 ? &b->m->in_shape : &layer_at(b, li)->shape;
}

/* Appends a layer reading the output of `in` (-1: model input); returns its index, or -1
 * with b->failed set. */
static int add_layer(builder_t *b, layer_kind_t kind, int in)
{
    model_t *m = b->m;
    int li = -1;
    if (grow(b, (void **)&m->layers, m->nlayers, &b->cap_layers, sizeof *m->layers, MODEL_MAX_LAYERS) == 0)
        li = m->nlayers++;
    layer_t *l = layer_at(b, li);
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->in = in;
    l->in2 = -1;
    /* Same shape by default; infer_layer sets the output's. */
    l->shape = *shape_at(b, in);
    model_shape_fold(&l->shape, &l->C, &l->H, &l->W);
    l->OC = l->C;
    l->OH = l->H;
    l->OW = l->W;
    return li;
}

/* Marks the builder failed for layer li's size, its output s (NULL: not representable);
 * the first such layer is the one named. */
static void too_large(builder_t *b, int li, const model_shape_t *s)
{
    b->failed = 1;
    if (b->too_large) return;
    b->too_large = 1 + (li >= 0 ? li : b->m->nlayers);
    b->too_shape = s ? *s : (model_shape_t){.rank = -1};
}

/* The layer's output shape from its row's shape inference (model/op_table.c), given the
 * second input's shape (NULL for one input), folded into (OC, OH, OW); 0, or -1 with
 * b->failed set. */
static int infer_layer(builder_t *b, int li, const model_shape_t *in2)
{
    layer_t *l = layer_at(b, li);
    const model_op_t *op = model_op(l->kind); /* NULL: a builder was given no kind */
    const model_shape_t in = *shape_at(b, l->in);
    int ok = op && op->infer_shape(l, &in, in2) == 0;
    size_t n;
    if (model_shape_count_checked(&l->shape, &n) != 0) {
        /* an output no kernel can index (model.h, MODEL_SAMPLE_MAX), or no shape at all:
         * the builder fails. Kept, sizes and workspace, where its folding (C, H, W) is
         * still ints, so that the importer's memory bound counts it as it would any layer
         * (its figure is the more useful one then: model_build_bytes); else replaced, so
         * that nothing folds or sizes it. */
        int dims_ok = l->shape.rank >= 0 && l->shape.rank <= MODEL_MAX_RANK;
        int64_t w = 1;
        for (int d = 0; dims_ok && d < l->shape.rank; d++) {
            dims_ok = l->shape.dims[d] >= 0;
            if (d >= 2 && w <= INT32_MAX) w *= l->shape.dims[d]; /* below 2^31 * 2^31 */
        }
        if (dims_ok) too_large(b, li, &l->shape);
        b->failed = 1;
        if (!dims_ok || w > INT32_MAX) l->shape = (model_shape_t){.rank = 0}, ok = 0;
    }
    model_shape_fold(&l->shape, &l->OC, &l->OH, &l->OW);
    if (ok) return 0; /* b->failed may be set all the same: a kept shape too large */
    if (!b->refused && op) b->refused = 1 + li;
    b->failed = 1;
    return -1;
}

/* The layer's output in the activation arena and, where its shape was inferred (shape_ok),
 * its row's workspace in the shared one (none for a geometry that was refused: its sizes
 * are not meaningful). */
static void finish_layer(builder_t *b, int li, int shape_ok)
{
    layer_t *l = layer_at(b, li);
    const model_op_t *op = model_op(l->kind);
    if (shape_ok && op && op->workspace) {
        size_t ws = op->workspace(l, b->m->max_batch);
        if (ws > b->m->ws_floats) b->m->ws_floats = ws;
    }
    l->out_off = b->m->act_floats;
    b->m->act_floats += (size_t)b->m->max_batch * l->OC * l->OH * l->OW;
}

/* The elements of s's axes from `from` to the last. */
static size_t axes_count(const model_shape_t *s, int from)
{
    size_t n = 1;
    for (int d = from; d < s->rank; d++) n *= (size_t)s->dims[d];
    return n;
}

/* finish_layer, and the arenas of the kinds that keep more than their output: a max
 * pool's argmax, a batch norm's saved statistics, a layer norm's rows' statistics (its
 * rows' mean and 1 / std in double, for the backward (op_table.c's ln_stats): two doubles
 * a row of D, on an even offset of the page-aligned activation arena). One home, so that a
 * layer copied into another model (model_build_copy) gets what its builder gave it. */
static void reserve_layer(builder_t *b, int li, int shape_ok)
{
    layer_t *l = layer_at(b, li);
    if (l->kind == LAYER_MAXPOOL) {
        l->aux_off = b->m->argmax_ints;
        b->m->argmax_ints += (size_t)b->m->max_batch * l->OC * l->OH * l->OW;
    } else if (l->kind == LAYER_BN) {
        l->aux_off = b->m->aux_floats;
        b->m->aux_floats += 2 * (size_t)l->C;
    }
    finish_layer(b, li, shape_ok);
    if (l->kind != LAYER_LAYERNORM) return;
    const size_t D = l->op.norm.axis >= 0 ? axes_count(shape_at(b, l->in), l->op.norm.axis) : 0;
    const size_t rows = D ? model_shape_count(&l->shape) / D : 0;
    b->m->act_floats = (b->m->act_floats + 1) & ~(size_t)1;
    l->aux_off = b->m->act_floats;
    b->m->act_floats += 4 * (size_t)b->m->max_batch * rows;
}

int model_build_conv(model_builder_t *b, int in, const conv2d_desc_t *geom, int bias, const char *wname,
                     const char *bname)
{
    int li = add_layer(b, LAYER_CONV, in);
    layer_t *l = layer_at(b, li);
    l->op.conv = *geom;
    const int ok = infer_layer(b, li, NULL) == 0;
    l->has_bias = bias;
    const int groups = l->op.conv.groups > 0 ? l->op.conv.groups : 1;
    l->w_off = add_tensor_named(b, wname, (size_t)l->OC * (l->C / groups) * l->op.conv.KH * l->op.conv.KW, 0);
    if (bias) l->b_off = add_tensor_named(b, bname, (size_t)l->OC, 0);
    finish_layer(b, li, ok);
    return li;
}

int model_build_conv_transpose(model_builder_t *b, int in, const conv2d_desc_t *geom, int bias, const char *wname,
                               const char *bname)
{
    int li = add_layer(b, LAYER_CONV_TRANSPOSE, in);
    layer_t *l = layer_at(b, li);
    l->op.conv = *geom;
    const int ok = infer_layer(b, li, NULL) == 0;
    l->has_bias = bias;
    const int groups = l->op.conv.groups > 0 ? l->op.conv.groups : 1;
    l->w_off = add_tensor_named(b, wname, (size_t)l->C * (l->OC / groups) * l->op.conv.KH * l->op.conv.KW, 0);
    if (bias) l->b_off = add_tensor_named(b, bname, (size_t)l->OC, 0);
    finish_layer(b, li, ok);
    return li;
}

/* The built-in networks' square convolutions: weights "name.weight", "name.bias". */
static int conv(builder_t *b, const char *name, int in, int OC, int K, int stride, int pad, int bias)
{
    const conv2d_desc_t g = {.OC = OC,
                             .KH = K,
                             .KW = K,
                             .sH = stride,
                             .sW = stride,
                             .pad_t = pad,
                             .pad_l = pad,
                             .pad_b = pad,
                             .pad_r = pad,
                             .dH = 1,
                             .dW = 1,
                             .groups = 1};
    char wn[MODEL_TENSOR_NAME_MAX], bn_[MODEL_TENSOR_NAME_MAX];
    if ((size_t)snprintf(wn, sizeof wn, "%s.weight", name) >= sizeof wn ||
        (size_t)snprintf(bn_, sizeof bn_, "%s.bias", name) >= sizeof bn_)
        b->failed = 1;
    return model_build_conv(b, in, &g, bias, wn, bn_);
}

int model_build_pool(model_builder_t *b, layer_kind_t kind, int in, const pool2d_desc_t *geom)
{
    int li = add_layer(b, kind, in);
    layer_t *l = layer_at(b, li);
    l->op.pool = *geom;
    const int ok = (kind == LAYER_MAXPOOL || kind == LAYER_AVGPOOL) ? infer_layer(b, li, NULL) == 0 : 0;
    if (!ok) b->failed = 1;
    reserve_layer(b, li, ok);
    return li;
}

/* The built-in networks' pools: K x K, no padding (pool2d_init's geometry). */
static int pool(builder_t *b, layer_kind_t kind, int in, int K, int stride, int ceil_mode)
{
    const pool2d_desc_t g = {.KH = K, .KW = K, .sH = stride, .sW = stride, .dH = 1, .dW = 1, .ceil_mode = ceil_mode};
    return model_build_pool(b, kind, in, &g);
}

int model_build_relu(model_builder_t *b, int in)
{
    int li = add_layer(b, LAYER_RELU, in);
    finish_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_fc(model_builder_t *b, int in, int OUT, const char *wname, const char *bname)
{
    const gemm_desc_t g = {.layout = GEMM_W_OUT_IN, .alpha = 1.0f, .beta = 1.0f};
    return model_build_gemm(b, in, OUT, &g, wname, bname);
}

int model_build_gemm(model_builder_t *b, int in, int OUT, const gemm_desc_t *g, const char *wname, const char *bname)
{
    int li = add_layer(b, LAYER_FC, in);
    layer_t *l = layer_at(b, li);
    l->has_bias = bname != NULL;
    l->op.gemm = *g;
    l->op.gemm.OUT = OUT;
    /* FC flattens its input: (B, C, H, W) is read as (B, C*H*W) */
    const int ok = infer_layer(b, li, NULL) == 0;
    l->w_off = add_tensor_named(b, wname, (size_t)OUT * l->C, 0);
    if (bname) l->b_off = add_tensor_named(b, bname, (size_t)OUT, 0);
    finish_layer(b, li, ok);
    return li;
}

int model_build_linear(model_builder_t *b, int in, int OUT, const char *wname)
{
    return model_build_linear_layout(b, in, OUT, GEMM_W_IN_OUT, wname);
}

int model_build_linear_layout(model_builder_t *b, int in, int OUT, gemm_layout_t layout, const char *wname)
{
    const gemm_desc_t g = {.layout = layout, .alpha = 1.0f, .beta = 1.0f};
    return model_build_linear_gemm(b, in, OUT, &g, wname);
}

int model_build_linear_gemm(model_builder_t *b, int in, int OUT, const gemm_desc_t *g, const char *wname)
{
    int li = add_layer(b, LAYER_LINEAR, in);
    layer_t *l = layer_at(b, li);
    l->op.gemm = (gemm_desc_t){.layout = g->layout, .alpha = g->alpha, .beta = 1.0f, .OUT = OUT};
    if (!isfinite(g->alpha)) b->failed = 1;
    const int ok = infer_layer(b, li, NULL) == 0; /* sets gemm.IN */
    l->w_off = add_tensor_named(b, wname, ok ? (size_t)OUT * l->op.gemm.IN : 0, 0);
    finish_layer(b, li, ok);
    return li;
}

static int fc(builder_t *b, const char *name, int in, int OUT)
{
    char wn[MODEL_TENSOR_NAME_MAX], bn_[MODEL_TENSOR_NAME_MAX];
    if ((size_t)snprintf(wn, sizeof wn, "%s.weight", name) >= sizeof wn ||
        (size_t)snprintf(bn_, sizeof bn_, "%s.bias", name) >= sizeof bn_)
        b->failed = 1;
    return model_build_fc(b, in, OUT, wn, bn_);
}

int model_build_fc_bias(model_builder_t *b, int li, const char *bname)
{
    if (li < 0 || li != b->m->nlayers - 1 ||
        (b->m->layers[li].kind != LAYER_FC && b->m->layers[li].kind != LAYER_LINEAR) || b->m->layers[li].has_bias) {
        b->failed = 1;
        return -1;
    }
    layer_t *l = &b->m->layers[li];
    l->has_bias = 1;
    l->b_off = add_tensor_named(b, bname, (size_t)l->op.gemm.OUT, 0);
    return li;
}

int model_build_bn(model_builder_t *b, int in, const char *const names[4])
{
    return model_build_bn_eps(b, in, names, BN_EPS);
}

int model_build_bn_eps(model_builder_t *b, int in, const char *const names[4], float eps)
{
    return model_build_bn_momentum(b, in, names, eps, MODEL_BN_MOMENTUM);
}

int model_build_bn_momentum(model_builder_t *b, int in, const char *const names[4], float eps, float momentum)
{
    int li = add_layer(b, LAYER_BN, in);
    layer_t *l = layer_at(b, li);
    l->op.norm.eps = eps;
    l->op.norm.momentum = momentum;
    if (!(eps > 0.0f) || !(momentum >= 0.0f && momentum <= 1.0f)) b->failed = 1;
    l->w_off = add_tensor_named(b, names[0], (size_t)l->C, 0);
    l->b_off = add_tensor_named(b, names[1], (size_t)l->C, 0);
    l->rm_off = add_tensor_named(b, names[2], (size_t)l->C, 1);
    l->rv_off = add_tensor_named(b, names[3], (size_t)l->C, 1);
    reserve_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

static int bn(builder_t *b, const char *name, int in)
{
    static const char *const what[4] = {"weight", "bias", "running_mean", "running_var"};
    char nm[4][MODEL_TENSOR_NAME_MAX];
    const char *names[4];
    for (int i = 0; i < 4; i++) {
        if ((size_t)snprintf(nm[i], sizeof nm[i], "%s.%s", name, what[i]) >= sizeof nm[i]) b->failed = 1;
        names[i] = nm[i];
    }
    return model_build_bn(b, in, names);
}

int model_build_gap(model_builder_t *b, int in)
{
    int li = add_layer(b, LAYER_GAP, in);
    finish_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

/* out = a + shortcut(x) */
int model_build_add(model_builder_t *b, int a, int x)
{
    int li = add_layer(b, LAYER_ADD, a);
    layer_t *l = layer_at(b, li);
    l->in2 = x;
    const int ok = x >= 0 && infer_layer(b, li, shape_at(b, x)) == 0;
    if (!ok) b->failed = 1;
    finish_layer(b, li, ok);
    return li;
}

int model_build_elementwise(model_builder_t *b, layer_kind_t kind, int in, float arg)
{
    int li = add_layer(b, kind, in);
    layer_t *l = layer_at(b, li);
    if (kind == LAYER_LEAKY_RELU) {
        l->op.unary.alpha = arg;
        if (!(arg >= 0.0f)) b->failed = 1; /* the backward reads the sign of the output (ops.h) */
    } else if (kind == LAYER_DROPOUT || kind == LAYER_STOCHASTIC_DEPTH) {
        l->op.dropout.p = arg;
        if (!(arg >= 0.0f && arg <= 1.0f)) b->failed = 1;
    } else if (kind != LAYER_SIGMOID && kind != LAYER_TANH) {
        b->failed = 1;
    }
    finish_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_unary(model_builder_t *b, layer_kind_t kind, int in, float a)
{
    int li = add_layer(b, kind, in);
    layer_t *l = layer_at(b, li);
    l->op.unary.alpha = kind == LAYER_POW ? a : 0.0f;
    /* the table's plain rows of one input (a new one needs nothing here), and three of
     * their own: Pow's exponent, Erf, and GELU (matched from a pattern of nodes) */
    const model_op_t *op = model_op(kind);
    const int plain = op && op->onnx_form == MODEL_OP_ONNX_PLAIN && op->ninputs == 1;
    if (!plain && kind != LAYER_POW && kind != LAYER_ERF && kind != LAYER_GELU) b->failed = 1;
    if (!isfinite(l->op.unary.alpha)) b->failed = 1;
    finish_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_const(model_builder_t *b, const model_shape_t *s, const char *name, int frozen)
{
    int ok = s->rank >= 0 && s->rank <= MODEL_MAX_RANK;
    size_t count = 1;
    for (int d = 0; ok && d < s->rank; d++) ok = s->dims[d] >= 1;
    if (ok && model_shape_count_checked(s, &count) != 0) ok = 0, too_large(b, b->m->nlayers, s);
    if (!ok) b->failed = 1;
    int li = add_layer(b, LAYER_CONST, -1);
    layer_t *l = layer_at(b, li);
    l->op.cnst.frozen = frozen != 0;
    if (ok) l->shape = *s;
    l->w_off = add_tensor_named(b, name, ok ? count : 0, l->op.cnst.frozen);
    /* its output slots: max_batch of them like any layer's (model_zero_dacts zeroes B) */
    finish_layer(b, li, ok && infer_layer(b, li, NULL) == 0);
    return li;
}

/* Whether layer li's output has no batch axis (a constant, or a gathered parameter). */
static int batchless(builder_t *b, int li)
{
    return li >= 0 && (layer_at(b, li)->kind == LAYER_CONST || layer_at(b, li)->kind == LAYER_GATHER_PARAM);
}

int model_build_gather_param(model_builder_t *b, const model_shape_t *s, const model_shape_t *table, const char *tname,
                             const char *mname)
{
    size_t count = 1, tcount = 1;
    int ok = s->rank >= 0 && s->rank <= MODEL_MAX_RANK && table->rank >= 1 && table->rank <= MODEL_MAX_RANK;
    for (int d = 0; ok && d < s->rank; d++) ok = s->dims[d] >= 1;
    for (int d = 0; ok && d < table->rank; d++) ok = table->dims[d] >= 1;
    ok = ok && model_shape_count_checked(s, &count) == 0 && model_shape_count_checked(table, &tcount) == 0;
    /* float-coded indices are exact below 2^24 */
    ok = ok && tcount < ((size_t)1 << 24) && count <= ((size_t)1 << 24);
    if (!ok) b->failed = 1;
    int li = add_layer(b, LAYER_GATHER_PARAM, -1);
    layer_t *l = layer_at(b, li);
    if (ok) l->shape = *s, l->op.table.shape = *table;
    l->w_off = add_tensor_named(b, tname, ok ? tcount : 0, 0);
    l->rm_off = add_tensor_named(b, mname, ok ? count : 0, 1);
    finish_layer(b, li, ok && infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_binary(model_builder_t *b, layer_kind_t kind, int a, int x)
{
    const int ca = batchless(b, a), cx = batchless(b, x);
    int li = add_layer(b, kind, a);
    layer_t *l = layer_at(b, li);
    l->in2 = x;
    /* the batch strides: 0 for a batch-less constant (infer_binary sets the others) */
    l->op.view.bc.sa[0] = !ca;
    l->op.view.bc.sb[0] = !cx;
    const int ok = ((kind >= LAYER_BADD && kind <= LAYER_DIV) || kind == LAYER_BPOW) && !(ca && cx) &&
                   infer_layer(b, li, shape_at(b, x)) == 0;
    if (!ok) b->failed = 1;
    finish_layer(b, li, ok);
    return li;
}

int model_build_reshape(model_builder_t *b, int in, const model_shape_t *to)
{
    int li = add_layer(b, LAYER_RESHAPE, in);
    layer_t *l = layer_at(b, li);
    const int ok = to->rank >= 0 && to->rank <= MODEL_MAX_RANK;
    if (ok) l->shape = *to; /* what infer_reshape checks against the input */
    finish_layer(b, li, ok && infer_layer(b, li, NULL) == 0);
    if (!ok) b->failed = 1;
    return li;
}

int model_build_transpose(model_builder_t *b, int in, const int *perm)
{
    int li = add_layer(b, LAYER_TRANSPOSE, in);
    layer_t *l = layer_at(b, li);
    for (int d = 0; d < l->shape.rank && d < MODEL_MAX_RANK; d++) l->op.view.perm[d] = perm[d];
    finish_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_slice(model_builder_t *b, int in, int axis, int start, int end, int step)
{
    int li = add_layer(b, LAYER_SLICE, in);
    layer_t *l = layer_at(b, li);
    l->op.view.axis = axis;
    l->op.view.start = start;
    l->op.view.end = end;
    l->op.view.step = step;
    finish_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_expand(model_builder_t *b, int in, const model_shape_t *to)
{
    int li = add_layer(b, LAYER_EXPAND, in);
    layer_t *l = layer_at(b, li);
    const int ok = to->rank >= 0 && to->rank <= MODEL_MAX_RANK;
    if (ok) l->shape = *to; /* what infer_expand checks the input against */
    /* the batch stride: 0 for a batch-less constant (infer_expand sets the others) */
    l->op.view.bc.sa[0] = !(in >= 0 && layer_at(b, in)->kind == LAYER_CONST);
    finish_layer(b, li, ok && infer_layer(b, li, NULL) == 0);
    if (!ok) b->failed = 1;
    return li;
}

int model_build_reduce(model_builder_t *b, layer_kind_t kind, int in, unsigned mask, int keep)
{
    int li = add_layer(b, kind, in);
    layer_t *l = layer_at(b, li);
    l->op.view.red_mask = mask;
    l->op.view.red_keep = keep != 0;
    const int ok = kind == LAYER_REDUCE_MEAN || kind == LAYER_REDUCE_SUM;
    if (!ok) b->failed = 1;
    finish_layer(b, li, ok && infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_bmm(model_builder_t *b, int a, int x)
{
    int li = add_layer(b, LAYER_BMM, a);
    layer_t *l = layer_at(b, li);
    l->in2 = x;
    /* a constant has no batch axis: a weight is a Gemm's (model_build_gemm) */
    if (batchless(b, a) || batchless(b, x)) b->failed = 1;
    finish_layer(b, li, infer_layer(b, li, shape_at(b, x)) == 0);
    return li;
}

/* Elements of s's axes from to the last (a layer norm's weight) */
int model_build_layernorm(model_builder_t *b, int in, int axis, float eps, const char *wname, const char *bname)
{
    int li = add_layer(b, LAYER_LAYERNORM, in);
    layer_t *l = layer_at(b, li);
    const size_t D = axis >= 0 ? axes_count(shape_at(b, in), axis) : 0;
    l->op.norm.axis = axis;
    l->op.norm.eps = eps;
    l->has_bias = 1;
    if (!(eps > 0.0f)) b->failed = 1;
    l->w_off = add_tensor_named(b, wname, D, 0);
    l->b_off = add_tensor_named(b, bname, D, 0);
    reserve_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_embed(model_builder_t *b, int in, int V, int E, const char *tname)
{
    int li = add_layer(b, LAYER_EMBED, in);
    layer_t *l = layer_at(b, li);
    const model_shape_t *s = shape_at(b, in);
    const int ok_dims = V > 0 && E > 0 && (int64_t)V * E <= MODEL_SAMPLE_MAX && s->rank < MODEL_MAX_RANK;
    if (!ok_dims) b->failed = 1;
    l->op.table.shape = (model_shape_t){.rank = 2, .dims = {V, E}};
    l->w_off = add_tensor_named(b, tname, ok_dims ? (size_t)V * (size_t)E : 0, 0);
    finish_layer(b, li, ok_dims && infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_linear_tied(model_builder_t *b, int in, int embed_li)
{
    const layer_t *e = layer_at(b, embed_li);
    const int ok = embed_li >= 0 && embed_li < b->m->nlayers && e->kind == LAYER_EMBED;
    const int V = e->op.table.shape.dims[0], E = e->op.table.shape.dims[1];
    const size_t table = e->w_off;
    int li = add_layer(b, LAYER_LINEAR, in);
    layer_t *l = layer_at(b, li);
    l->op.gemm = (gemm_desc_t){.layout = GEMM_W_OUT_IN, .alpha = 1.0f, .beta = 1.0f, .OUT = ok ? V : 0};
    const int shaped = infer_layer(b, li, NULL) == 0; /* sets gemm.IN */
    if (!ok || l->op.gemm.IN != E) b->failed = 1;
    l->w_off = table; /* no tensor of its own: the embedding's */
    finish_layer(b, li, ok && shaped);
    if (ok) layer_at(b, embed_li)->op.table.tied = 1; /* its backward adds to what this one's wrote */
    return li;
}

int model_build_causal_softmax(model_builder_t *b, int in, float scale)
{
    int li = add_layer(b, LAYER_CAUSAL_SOFTMAX, in);
    layer_t *l = layer_at(b, li);
    l->op.softmax.scale = scale;
    if (!(scale > 0.0f) || !isfinite(scale)) b->failed = 1;
    finish_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_softmax(model_builder_t *b, layer_kind_t kind, int in, int axis)
{
    int li = add_layer(b, kind, in);
    layer_t *l = layer_at(b, li);
    l->op.softmax.axis = axis;
    if (kind != LAYER_SOFTMAX && kind != LAYER_LOG_SOFTMAX) b->failed = 1;
    finish_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_clip(model_builder_t *b, int in, float lo, float hi)
{
    int li = add_layer(b, LAYER_CLIP, in);
    layer_t *l = layer_at(b, li);
    l->op.unary.lo = lo;
    l->op.unary.hi = hi;
    if (isnan(lo) || isnan(hi)) b->failed = 1;
    finish_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_hardsigmoid(model_builder_t *b, int in, float alpha, float beta)
{
    int li = add_layer(b, LAYER_HARDSIGMOID, in);
    layer_t *l = layer_at(b, li);
    l->op.unary.alpha = alpha;
    l->op.unary.beta = beta;
    if (!isfinite(alpha) || !isfinite(beta)) b->failed = 1;
    finish_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

int model_build_hardswish(model_builder_t *b, int in)
{
    int li = add_layer(b, LAYER_HARDSWISH, in);
    finish_layer(b, li, infer_layer(b, li, NULL) == 0);
    return li;
}

/* The full-plane input is `in`, the (C, 1, 1) one (if any) in2: the steps read them so. */
int model_build_mul(model_builder_t *b, int a, int x)
{
    int Ca, Ha, Wa, Cx, Hx, Wx;
    if (model_build_shape(b, a, &Ca, &Ha, &Wa) != 0 || model_build_shape(b, x, &Cx, &Hx, &Wx) != 0) {
        b->failed = 1;
        Ha = Hx = Wa = Wx = 1;
    }
    if ((size_t)Ha * Wa < (size_t)Hx * Wx) {
        const int t = a;
        a = x;
        x = t;
    }
    int li = add_layer(b, LAYER_MUL, a);
    layer_t *l = layer_at(b, li);
    l->in2 = x;
    finish_layer(b, li, infer_layer(b, li, shape_at(b, x)) == 0);
    return li;
}

int model_build_concat(model_builder_t *b, int a, int x) { return model_build_concat_axis(b, a, x, 0); }

int model_build_concat_axis(model_builder_t *b, int a, int x, int axis)
{
    const model_shape_t *sa = shape_at(b, a), *sx = shape_at(b, x);
    /* the joined axis's sum, in 64 bits: two axes of a sample each may be near the bound */
    const int64_t joined = axis >= 0 && axis < sa->rank && axis < sx->rank ? (int64_t)sa->dims[axis] + sx->dims[axis]
                                                                           : 0;
    int li = add_layer(b, LAYER_CONCAT, a);
    layer_t *l = layer_at(b, li);
    l->in2 = x;
    l->op.concat.axis = axis;
    if (joined > MODEL_SAMPLE_MAX) {
        too_large(b, li, NULL);
        finish_layer(b, li, 0);
        return li;
    }
    finish_layer(b, li, infer_layer(b, li, shape_at(b, x)) == 0);
    return li;
}

void model_build_tensors_of(model_builder_t *b, const model_t *src, int n)
{
    for (int t = 0; t < n && t < src->ntensors; t++) {
        const tensor_info_t *x = &src->tensors[t];
        /* in src's order each lands at src's offset: both count from 0 in list order */
        if (add_tensor_named(b, x->name, x->count, x->is_buffer) != x->offset) b->failed = 1;
    }
}

int model_build_copy(model_builder_t *b, const layer_t *src, int in, int in2)
{
    int li = add_layer(b, src->kind, in);
    if (li < 0) return -1;
    layer_t *l = layer_at(b, li);
    *l = *src; /* model_create's passes set their marks afresh */
    l->in = in;
    l->in2 = in2;
    reserve_layer(b, li, 1);
    return li;
}

int model_build_shape(const model_builder_t *b, int li, int *C, int *H, int *W)
{
    const model_t *m = b->m;
    if (li < 0) {
        *C = m->C, *H = m->H, *W = m->W;
        return 0;
    }
    if (li >= m->nlayers) return -1;
    const layer_t *l = &m->layers[li];
    *C = l->OC, *H = l->OH, *W = l->OW;
    return 0;
}

int model_build_shape_nd(const model_builder_t *b, int li, model_shape_t *out)
{
    const model_t *m = b->m;
    if (li >= m->nlayers) return -1;
    *out = li < 0 ? m->in_shape : m->layers[li].shape;
    return 0;
}

int model_build_failed(const model_builder_t *b) { return b->failed; }

int model_build_too_large(const model_builder_t *b, model_shape_t *shape)
{
    if (shape) *shape = b->too_large ? b->too_shape : (model_shape_t){.rank = -1};
    return b->too_large - 1;
}

/* a + k * n, saturating at SIZE_MAX */
static size_t sat_add_mul(size_t a, size_t k, size_t n)
{
    size_t p;
    if (__builtin_mul_overflow(k, n, &p) || __builtin_add_overflow(a, p, &p)) return SIZE_MAX;
    return p;
}

size_t model_build_bytes(const model_builder_t *b)
{
    const model_t *m = b->m;
    const size_t f = sizeof(float);
    /* params, grads (+ MODEL_GRAD_EXTRA), momentum; activations and their gradients */
    size_t n = sat_add_mul(0, 3 * f, m->nparams);
    n = sat_add_mul(n, f, MODEL_GRAD_EXTRA + m->nbuffers);
    n = sat_add_mul(n, 2 * f, m->act_floats);
    n = sat_add_mul(n, f, m->aux_floats);
    n = sat_add_mul(n, sizeof *m->argmax, m->argmax_ints);
    n = sat_add_mul(n, f, m->ws_floats);
    return sat_add_mul(n, f * (size_t)m->max_batch, (size_t)m->num_classes);
}

/* ---- the built-in networks (shapes from ALGORITHMS.md; input the catalog's, classes the job's) ---- */

static void build_mlp(builder_t *b)
{
    int x = fc(b, "fc1", -1, 256);
    x = model_build_relu(b, x);
    x = fc(b, "fc2", x, 128);
    x = model_build_relu(b, x);
    fc(b, "fc3", x, b->m->num_classes);
}

static void build_lenet5(builder_t *b)
{
    /* conv -> ReLU -> max pool, computed as conv -> max pool -> ReLU: ReLU is monotonic,
     * so max(relu(x)) == relu(max(x)) bit for bit, and the gradient reaching the conv
     * output is identical too (the first maximum gets it when it is positive, nothing
     * does otherwise). ReLU then runs on a quarter of the elements. */
    int x = conv(b, "conv1", -1, 6, 5, 1, 2, 1); /* 28x28 -> 6x28x28 */
    x = pool(b, LAYER_MAXPOOL, x, 2, 2, 0);      /* -> 6x14x14 */
    x = model_build_relu(b, x);
    x = conv(b, "conv2", x, 16, 5, 1, 0, 1); /* -> 16x10x10 */
    x = pool(b, LAYER_MAXPOOL, x, 2, 2, 0);  /* -> 16x5x5 */
    x = model_build_relu(b, x);
    x = fc(b, "fc1", x, 120);
    x = model_build_relu(b, x);
    x = fc(b, "fc2", x, 84);
    x = model_build_relu(b, x);
    fc(b, "fc3", x, b->m->num_classes);
}

static void build_cifar10_quick(builder_t *b)
{
    /* Caffe's cifar10_quick: ceil-mode pooling gives 32 -> 16 -> 8 -> 4 (fc in 1024). */
    int x = conv(b, "conv1", -1, 32, 5, 1, 2, 1);
    x = pool(b, LAYER_MAXPOOL, x, 3, 2, 1);
    x = model_build_relu(b, x);
    x = conv(b, "conv2", x, 32, 5, 1, 2, 1);
    x = model_build_relu(b, x);
    x = pool(b, LAYER_AVGPOOL, x, 3, 2, 1);
    x = conv(b, "conv3", x, 64, 5, 1, 2, 1);
    x = model_build_relu(b, x);
    x = pool(b, LAYER_AVGPOOL, x, 3, 2, 1);
    x = fc(b, "fc1", x, 64);
    fc(b, "fc2", x, b->m->num_classes);
}

static void build_resnet20(builder_t *b)
{
    char name[64]; /* roomy: gcc cannot see that s and k stay below 3 */
    int x = conv(b, "conv1", -1, 16, 3, 1, 1, 0);
    x = bn(b, "bn1", x);
    x = model_build_relu(b, x);
    static const int widths[3] = {16, 32, 64};
    for (int s = 0; s < 3; s++) {
        for (int k = 0; k < 3; k++) {
            int stride = (s > 0 && k == 0) ? 2 : 1;
            int in = x;
            snprintf(name, sizeof name, "layer%d.%d.conv1", s + 1, k);
            int y = conv(b, name, in, widths[s], 3, stride, 1, 0);
            snprintf(name, sizeof name, "layer%d.%d.bn1", s + 1, k);
            y = bn(b, name, y);
            y = model_build_relu(b, y);
            snprintf(name, sizeof name, "layer%d.%d.conv2", s + 1, k);
            y = conv(b, name, y, widths[s], 3, 1, 1, 0);
            snprintf(name, sizeof name, "layer%d.%d.bn2", s + 1, k);
            y = bn(b, name, y);
            y = model_build_add(b, y, in);
            x = model_build_relu(b, y);
        }
    }
    x = model_build_gap(b, x);
    fc(b, "fc", x, b->m->num_classes);
}

/* The builder of each built-in network, by catalog name (common/catalog.c has its
 * figures; test_catalog_matches_models checks that every built-in entry has a builder
 * here and that they agree). */
typedef struct {
    const char *name;
    void (*build)(builder_t *b);
    int kaiming_conv; /* convolutions start Kaiming normal: what He et al. train resnets with */
} builtin_t;

static const builtin_t BUILDERS[] = {
    {"mlp", build_mlp, 0},
    {"lenet5", build_lenet5, 0},
    {"cifar10_quick", build_cifar10_quick, 0},
    {"resnet20", build_resnet20, 1},
};

static const builtin_t *find_builder(const char *name)
{
    for (size_t i = 0; i < sizeof BUILDERS / sizeof BUILDERS[0]; i++)
        if (strcmp(BUILDERS[i].name, name) == 0) return &BUILDERS[i];
    return NULL;
}

/* Layer i's backward, not run: its parameters' gradients counted as skipped (every one
 * is frozen). */
static void skip_backward(model_t *m, int i)
{
    m->backward_skipped++;
    for (int k = 0; k < 2; k++) m->grads_skipped += m->plan->layer_tensor[2 * i + k] >= 0;
}

void model_zero_frozen_grads(model_t *m)
{
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *x = &m->tensors[t];
        if (!x->is_buffer && x->no_update) memset(m->grads + x->offset, 0, x->count * sizeof(float));
    }
}

/* Zeroes a buffer of whole pages (its start page-aligned, its size a multiple of 4096, as
 * every fused buffer here is) without touching them: the kernel hands them back and maps
 * zero pages on the next access, so a buffer nobody writes (the optimizer state of a
 * sharded job outside a rank's range, worker/shard.h) never becomes resident. memset
 * where the kernel says no. */
static void zero_pages(void *p, size_t bytes)
{
    if (bytes && ((uintptr_t)p & 4095) == 0 && (bytes & 4095) == 0 && madvise(p, bytes, MADV_DONTNEED) == 0) return;
    memset(p, 0, bytes);
}

static void *alloc_arena(size_t bytes);

int model_alloc_moment2(model_t *m)
{
    if (m->moment2) return 0;
    const size_t bytes = (m->nparams * sizeof(float) + 4095) & ~(size_t)4095;
    m->moment2 = alloc_arena(bytes);
    if (!m->moment2) return -1;
    zero_pages(m->moment2, bytes ? bytes : 4096);
    return 0;
}

/* HUGE_ARENA: 2 MiB, the x86-64 transparent huge page */
#define HUGE_ARENA ((size_t)2 << 20)

/* bytes (a multiple of 4096) for an arena that every step walks whole (the activations,
 * their gradients, the parameters, the optimizer state): from HUGE_ARENA up on 2 MiB
 * boundaries, whole 2 MiB pages asked of the kernel (transparent huge pages in "madvise"
 * mode, Debian's default, are given only where asked; elsewhere the ask is a no-op). A GPT
 * step at nanoGPT's CPU shape walks ~100 MB in passes of a few MB, ~25,000 pages of 4 KiB
 * against a TLB of a couple of thousand: on huge pages its CPU time fell 2.7% (the
 * activations and parameters), then 2% more (the optimizer state), in alternating runs.
 * The optimizer state stays untouched until written (zero_pages), faulted in 2 MiB at a time
 * after; not the gradients, whose pages a sharded backward gives back bucket by bucket
 * (worker/shard.h): on huge pages a stage 2 rank's peak resident set rose 3 MB, half the
 * margin of mpi_shard_memory. */
static void *alloc_arena(size_t bytes)
{
    if (bytes < HUGE_ARENA) return aligned_alloc(4096, bytes ? bytes : 4096);
    const size_t whole = (bytes + HUGE_ARENA - 1) & ~(HUGE_ARENA - 1);
    void *p = aligned_alloc(HUGE_ARENA, whole);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, whole, MADV_HUGEPAGE);
#endif
    return p;
}

/* One allocation per fused buffer and arena, sized by the layer list m already has, in
 * whole 4 KiB pages: aligned for AVX loads, and a GPU rank can page-lock params and grads
 * (cudaHostRegister) without two registrations sharing a page. 0, or -1 (out of memory;
 * what was allocated stays for model_free). */
static int alloc_buffers(model_t *m)
{
#define ALLOC(ptr, n)                                                 \
    do {                                                              \
        size_t bytes_ = ((n) * sizeof *(ptr) + 4095) & ~(size_t)4095; \
        (ptr) = aligned_alloc(4096, bytes_ ? bytes_ : 4096);          \
        if (!(ptr)) return -1;                                        \
        memset((ptr), 0, bytes_ ? bytes_ : 4096);                     \
    } while (0)
#define ALLOC_ARENA(ptr, n)                                           \
    do {                                                              \
        size_t bytes_ = ((n) * sizeof *(ptr) + 4095) & ~(size_t)4095; \
        (ptr) = alloc_arena(bytes_);                                  \
        if (!(ptr)) return -1;                                        \
        memset((ptr), 0, bytes_ ? bytes_ : 4096);                     \
    } while (0)
    /* the optimizer state and the activation arenas: zero but not resident until written
     * (zero_pages): generation writes the outputs of the positions it reaches and never
     * their gradients, and a training step writes both whole anyway */
#define ALLOC_UNTOUCHED(ptr, n, huge)                                                       \
    do {                                                                                    \
        size_t bytes_ = ((n) * sizeof *(ptr) + 4095) & ~(size_t)4095;                       \
        (ptr) = (huge) ? alloc_arena(bytes_) : aligned_alloc(4096, bytes_ ? bytes_ : 4096); \
        if (!(ptr)) return -1;                                                              \
        zero_pages((ptr), bytes_ ? bytes_ : 4096);                                          \
    } while (0)
    ALLOC_ARENA(m->params, m->nparams);
    /* untouched too: a sharded backward (stage 2) reduces the gradient bucket by bucket
     * and gives each bucket's pages back, so it must not start out wholly resident */
    ALLOC_UNTOUCHED(m->grads, m->nparams + MODEL_GRAD_EXTRA, 0);
    ALLOC_UNTOUCHED(m->momentum, m->nparams, 1);
    ALLOC(m->buffers, m->nbuffers);
    ALLOC_UNTOUCHED(m->acts, m->act_floats, 1);
    if (model_plan_dacts(m) != 0) return -1;
    ALLOC_UNTOUCHED(m->dacts, m->plan->dact_floats, 1);
    ALLOC(m->aux, m->aux_floats);
    ALLOC(m->argmax, m->argmax_ints);
    ALLOC(m->ws, m->ws_floats);
    ALLOC(m->probs, (size_t)m->max_batch * m->positions * m->num_classes);
#undef ALLOC
#undef ALLOC_ARENA
#undef ALLOC_UNTOUCHED
    return 0;
}

/* Layer i's part in a fused attention as this model runs it: ATTN_NONE where its attention
 * runs as layers (model_t's attention_unfused) */
static int attn_mode(const model_t *m, int i)
{
    /* a plan with bf16 outputs may store the attention's in bf16, which only the fused
     * attention writes: such a model always runs it fused */
    return m->attention_unfused && !m->plan->act_bf16_outputs ? ATTN_NONE : m->plan->layers[i].attn;
}

/* The fused attention whose merge is layer i (ATTN_RUN), forward and backward: its
 * description with the scores' constant scale as the buffers hold it now (an imported
 * model's are loaded after model_create) */
static attn_desc_t attention_desc(const model_t *m, const layer_plan_t *l)
{
    attn_desc_t a = l->attn_desc;
    if (l->attn_const >= 0) a.pre_scale = m->buffers[m->layers[l->attn_const].w_off];
    return a;
}

/* its q, k and v: the outputs of attn_src, and those stored in bf16 (plan.h's act_bf16) in
 * s16; its output stored so there too where it is */
static void attention_sources(const model_t *m, int i, const float *src[3], attn_bf16_t *s16)
{
    const layer_plan_t *l = model_layer_plan(m, i);
    const uint16_t *h[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        const int j = l->attn_src[k];
        src[k] = m->acts + m->layers[j].out_off;
        if (model_layer_plan(m, j)->act_bf16) h[k] = (const uint16_t *)(const void *)src[k];
    }
    *s16 = (attn_bf16_t){.q = h[0],
                         .k = h[1],
                         .v = h[2],
                         .y = l->act_bf16 ? (uint16_t *)(void *)(m->acts + m->layers[i].out_off) : NULL,
                         .p = l->weights_bf16 ? (uint16_t *)(void *)(m->acts + m->layers[i].aux_off) : NULL};
}

/* its weights in float32: the softmax's output, or NULL where they are kept in bf16 */
static float *attention_weights(const model_t *m, const layer_plan_t *l)
{
    return l->weights_bf16 ? NULL : m->acts + m->layers[l->attn_p].out_off;
}

static void attention_run_forward(model_t *m, int i, int B)
{
    const layer_plan_t *l = model_layer_plan(m, i);
    const attn_desc_t a = attention_desc(m, l);
    const float *src[3];
    attn_bf16_t s16;
    attention_sources(m, i, src, &s16);
    attention_causal_forward_bf16(&a, B, src[0], src[1], src[2], &s16, attention_weights(m, l),
                                  m->acts + m->layers[i].out_off);
}

static void attention_run_backward(model_t *m, int i, int B)
{
    const layer_plan_t *l = model_layer_plan(m, i);
    const attn_desc_t a = attention_desc(m, l);
    const float *src[3];
    attn_bf16_t s16;
    attention_sources(m, i, src, &s16);
    float *dsrc[3];
    for (int k = 0; k < 3; k++) dsrc[k] = m->dacts + m->plan->dact_off[l->attn_src[k]];
    attention_causal_backward_bf16(&a, B, src[0], src[1], src[2], &s16, attention_weights(m, l),
                                   m->dacts + m->plan->dact_off[i], dsrc[0], dsrc[1], dsrc[2]);
}

static int run_builtin(model_builder_t *b, void *ctx, char *err, size_t errlen);
static int create_with(const char *name, const model_shape_t *in, int classes, int max_batch, int kaiming_conv,
                       model_build_fn build, void *ctx, model_t **out, char *err, size_t errlen);

/* The rank-3 shape (C, H, W) of the built-in networks' images. */
static model_shape_t chw_shape(int C, int H, int W) { return (model_shape_t){.rank = 3, .dims = {C, H, W}}; }

int model_create(const char *name, int max_batch, model_t **out, char *err, size_t errlen)
{
    return model_create_classes(name, 0, max_batch, out, err, errlen);
}

int model_create_classes(const char *name, int classes, int max_batch, model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    catalog_model_t e;
    if (!name || catalog_model_get(name, &e) != 0) {
        char known[512];
        catalog_model_names(known, sizeof known, "", 0);
        snprintf(err, errlen, "model: unknown model '%.64s' (known: %s)", name ? name : "(null)", known);
        return -1;
    }
    const builtin_t *def = find_builder(name);
    if (!def) {
        snprintf(err, errlen, "model %s: no builder for this %s model in model/", name, catalog_source_name(e.source));
        return -1;
    }
    if (classes != 0 && catalog_model_for_classes(&e, classes, &e, err, errlen) != 0) return -1;
    const model_shape_t in = chw_shape(e.C, e.H, e.W);
    return create_with(name, &in, e.classes, max_batch, def->kaiming_conv, run_builtin, (void *)def, out, err, errlen);
}

/* A built-in network's builder, as create_with calls a builder. */
static int run_builtin(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    ((const builtin_t *)ctx)->build(b);
    return 0;
}

int model_layer_empty(const model_t *m, int i)
{
    const layer_t *l = &m->layers[i];
    return l->OC == 0 || l->OH == 0 || l->OW == 0;
}

/* The first layer that reads an empty tensor (an input layer of no elements, or the
 * model's input of none) into a non-empty output, or -1: the forward skips empty outputs
 * only (an ONNX case's Slice, Split and Reshape), so no kernel walks an empty input. A
 * constant and a gathered parameter read neither. */
static int reads_empty(const model_t *m)
{
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        if (model_layer_empty(m, i) || l->kind == LAYER_CONST || l->kind == LAYER_GATHER_PARAM) continue;
        const int ins[2] = {l->in, l->in2};
        for (int k = 0; k < MODEL_OPS[l->kind].ninputs && k < 2; k++)
            if (ins[k] < 0 ? model_shape_count(&m->in_shape) == 0 : ins[k] < i && model_layer_empty(m, ins[k]))
                return i;
    }
    return -1;
}

/* The two passes of every model: build the lists, then allocate. */
static int create_with(const char *name, const model_shape_t *in, int classes, int max_batch, int kaiming_conv,
                       model_build_fn build, void *ctx, model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (max_batch < 1) {
        snprintf(err, errlen, "model: batch size must be >= 1");
        return -1;
    }
    model_t *m = calloc(1, sizeof *m);
    if (!m) goto oom;
    snprintf(m->name, sizeof m->name, "%s", name);
    m->in_shape = *in;
    model_shape_fold(in, &m->C, &m->H, &m->W);
    m->num_classes = classes;
    m->max_batch = max_batch;
    m->kaiming_conv = kaiming_conv;

    builder_t b = {.m = m};
    err[0] = '\0';
    int rc = build(&b, ctx, err, errlen);
    if (b.failed == 2) goto oom;
    if (rc != 0 || b.failed || m->nlayers < 1) {
        char t[96];
        const layer_t *r = b.refused ? &m->layers[b.refused - 1] : NULL;
        if ((!err[0] || rc == 0) && r)
            snprintf(err, errlen, "model %s: layer %d (%s) cannot take its input %s (its geometry refused)", name,
                     b.refused - 1, MODEL_OPS[r->kind].name, model_shape_text(shape_at(&b, r->in), t, sizeof t));
        else if (!err[0] || rc == 0)
            snprintf(err, errlen, "model %s: a list bound, a tensor name too long or bad geometry", name);
        model_free(m);
        return -1;
    }
    if (model_plan_fusions(m) != 0) goto oom;
    const int re = reads_empty(m);
    if (re >= 0) {
        char t[96];
        snprintf(err, errlen, "model %s: layer %d (%s) reads an empty tensor (a dimension of 0) into %s: not supported",
                 name, re, MODEL_OPS[m->layers[re].kind].name, model_shape_text(&m->layers[re].shape, t, sizeof t));
        model_free(m);
        return -1;
    }
    if (model_plan_positions(m) != 0) {
        snprintf(err, errlen, "model %s: its output (%zu values per sample) is no whole number of rows of %d classes",
                 name, model_shape_count(&m->layers[m->nlayers - 1].shape), classes);
        model_free(m);
        return -1;
    }
    if (model_plan_no_decay(m) != 0 || model_plan_tensors(m) != 0) goto oom;
    model_plan_arena(m);
    if (alloc_buffers(m) != 0) goto oom;
    *out = m;
    return 0;
oom:
    model_free(m);
    snprintf(err, errlen, "model %s: out of memory for batch %d", name, max_batch);
    return -1;
}

int model_create_custom(const char *name, int C, int H, int W, int classes, int max_batch, model_build_fn build,
                        void *ctx, model_t **out, char *err, size_t errlen)
{
    const model_shape_t in = chw_shape(C, H, W);
    return model_create_custom_shape(name, &in, classes, max_batch, build, ctx, out, err, errlen);
}

int model_create_custom_shape(const char *name, const model_shape_t *in, int classes, int max_batch,
                              model_build_fn build, void *ctx, model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    /* an empty input or output (a dimension of 0, no classes) computes nothing: an ONNX
     * case's, never a model that trains (model_empty_tensor) */
    int ok = in->rank >= 0 && in->rank <= MODEL_MAX_RANK && classes >= 0;
    for (int d = 0; ok && d < in->rank; d++) ok = in->dims[d] >= 0;
    if (!ok) {
        snprintf(err, errlen, "model %s: input shape (rank 0 to %d) and classes must not be negative", name,
                 MODEL_MAX_RANK);
        return -1;
    }
    size_t n;
    if (model_shape_count_checked(in, &n) != 0) {
        char t[96];
        snprintf(err, errlen, "model %s: input shape %s has more than %lld elements per sample (too large)", name,
                 model_shape_text(in, t, sizeof t), MODEL_SAMPLE_MAX);
        return -1;
    }
    return create_with(name, in, classes, max_batch, 0, build, ctx, out, err, errlen);
}

int model_clone(const model_t *src, model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    model_t *m = calloc(1, sizeof *m);
    if (!m) goto oom;
    *m = *src;
    /* the copy owns nothing of src's */
    m->layers = NULL;
    m->tensors = NULL;
    m->params = m->grads = m->momentum = m->moment2 = m->buffers = m->acts = m->dacts = m->aux = m->ws = m->probs = NULL;
    m->argmax = NULL;
    m->dinput = NULL;
    m->progress = NULL;
    m->progress_ctx = NULL;
    m->grad_done = NULL;
    m->grad_done_ctx = NULL;
    m->bn_sync = NULL;
    m->grads_computed = NULL;
    m->grads_skipped = 0;
    m->backward_skipped = 0;
    m->lora = NULL; /* the adapters' list is the source's; a copy runs the same layers */
    m->plan = NULL; /* planned afresh below */
    m->layers = malloc((size_t)(src->nlayers ? src->nlayers : 1) * sizeof *m->layers);
    m->tensors = malloc((size_t)(src->ntensors ? src->ntensors : 1) * sizeof *m->tensors);
    if (!m->layers || !m->tensors) goto oom;
    memcpy(m->layers, src->layers, (size_t)src->nlayers * sizeof *m->layers);
    memcpy(m->tensors, src->tensors, (size_t)src->ntensors * sizeof *m->tensors);
    /* as create_with planned src; its layers' out_off are src's: the same outputs in bf16 */
    if (model_plan_fusions(m) != 0 || model_plan_tensors(m) != 0) goto oom;
    model_plan_act_bf16_as(m, src);
    if (alloc_buffers(m) != 0) goto oom;
    *out = m;
    return 0;
oom:
    model_free(m);
    snprintf(err, errlen, "model %s: out of memory for a copy at batch %d", src->name, src->max_batch);
    return -1;
}

void model_free(model_t *m)
{
    if (!m) return;
    mm_weights_changed(); /* its weights' packings (matmul.h) must not outlive them */
    free(m->layers);
    free(m->tensors);
    free(m->params);
    free(m->grads);
    free(m->momentum);
    free(m->moment2);
    free(m->buffers);
    free(m->acts);
    free(m->dacts);
    free(m->grads_computed);
    free(m->aux);
    free(m->argmax);
    free(m->ws);
    free(m->probs);
    if (m->lora) free(m->lora->ad); /* model/lora.h's list: no call into lora.c, which calls here */
    free(m->lora);
    model_plan_free(m->plan);
    free(m);
}

/* FLOPs of the forward pass of one sample, counted from the layer list: convolutions and
 * fully connected layers 2 per multiply-add, other layers one per input element, the
 * loss 5 per class (the simulator's cost model, sim/cost.c). */
static double model_forward_flops(const model_t *m)
{
    double f = 0;
    for (int i = 0; i < m->nlayers; i++) f += MODEL_OPS[m->layers[i].kind].flops(&m->layers[i]);
    return f + 5.0 * m->num_classes * m->positions; /* softmax and cross-entropy */
}

size_t model_param_count(const model_t *m) { return m->nparams; }

/* The batch at which a convolution's workspace is measured for model_describe: the spec's
 * largest (its batch bounds), where the column budget caps every layer's need. */
#define DESCRIBE_BATCH 65536

void model_describe(const model_t *m, catalog_model_t *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", m->name);
    out->source = CATALOG_BUILTIN;
    out->C = m->C;
    out->H = m->H;
    out->W = m->W;
    out->classes = m->num_classes;
    out->layers = m->nlayers;
    out->params = (long)m->nparams;
    out->buffers = (long)m->nbuffers;
    size_t ws = 0, argmax = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        if (MODEL_OPS[l->kind].workspace) {
            /* non-decreasing in the batch (kernels/cpu/conv.c) */
            size_t w = MODEL_OPS[l->kind].workspace(l, DESCRIBE_BATCH);
            if (w > ws) ws = w;
        }
        if (l->kind == LAYER_MAXPOOL) argmax += (size_t)l->OC * l->OH * l->OW;
    }
    out->fixed = (long)(m->aux_floats + ws);
    out->acts_per_sample = (long)(m->act_floats / (size_t)m->max_batch);
    out->dacts_per_sample = (long)(m->plan->dact_floats / (size_t)m->max_batch); /* exact: plan.c */
    out->argmax_per_sample = (long)argmax;
    out->flops_per_sample = model_forward_flops(m);
}

void model_init_params(model_t *m, uint64_t seed)
{
    rng_t r;
    rng_seed(&r, seed);
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        float *w = m->params + l->w_off;
        float *bias = m->params + l->b_off;
        if (l->kind == LAYER_CONV || l->kind == LAYER_FC || l->kind == LAYER_LINEAR) {
            /* a last-axis linear's fan-in is that axis (gemm.IN), its outputs gemm.OUT */
            const int lin = l->kind == LAYER_LINEAR, nout = lin ? l->op.gemm.OUT : l->OC;
            size_t fan_in = l->kind == LAYER_CONV ? (size_t)(l->C / l->op.conv.groups) * l->op.conv.KH * l->op.conv.KW
                            : lin                 ? (size_t)l->op.gemm.IN
                                                  : (size_t)l->C;
            size_t nw = (size_t)nout * fan_in;
            float bound = 1.0f / sqrtf((float)fan_in);
            if (m->kaiming_conv && l->kind == LAYER_CONV) {
                /* Kaiming normal, fan_in, ReLU gain. */
                float stdv = sqrtf(2.0f / (float)fan_in);
                for (size_t k = 0; k < nw; k++) w[k] = stdv * rng_normal(&r);
            } else {
                for (size_t k = 0; k < nw; k++) w[k] = bound * (2.0f * rng_uniform(&r) - 1.0f);
            }
            if (l->has_bias)
                for (int k = 0; k < nout; k++) bias[k] = bound * (2.0f * rng_uniform(&r) - 1.0f);
        } else if (l->kind == LAYER_CONV_TRANSPOSE) {
            /* torch's nn.ConvTranspose2d: its fan-in is the weight's dims 1 to 3 */
            const size_t fan_in = (size_t)(l->OC / l->op.conv.groups) * l->op.conv.KH * l->op.conv.KW;
            const float bound = 1.0f / sqrtf((float)fan_in);
            for (size_t k = 0; k < (size_t)l->C * fan_in; k++) w[k] = bound * (2.0f * rng_uniform(&r) - 1.0f);
            if (l->has_bias)
                for (int k = 0; k < l->OC; k++) bias[k] = bound * (2.0f * rng_uniform(&r) - 1.0f);
        } else if (l->kind == LAYER_LAYERNORM) {
            /* torch's nn.LayerNorm: weight 1, bias 0 over the normalised axes */
            const size_t D = axes_count(&l->shape, l->op.norm.axis);
            for (size_t k = 0; k < D; k++) w[k] = 1.0f, bias[k] = 0.0f;
        } else if (l->kind == LAYER_BN) {
            for (int k = 0; k < l->C; k++) {
                w[k] = 1.0f;
                bias[k] = 0.0f;
                m->buffers[l->rm_off + k] = 0.0f;
                m->buffers[l->rv_off + k] = 1.0f;
            }
        }
    }
    model_zero_state(m);
}

void model_drop_optimizer_state(model_t *m)
{
    free(m->momentum);
    free(m->moment2);
    m->momentum = m->moment2 = NULL;
}

void model_zero_state(model_t *m)
{
    /* whole pages, as allocated: zero without making them resident (zero_pages) */
    const size_t state = (m->nparams * sizeof(float) + 4095) & ~(size_t)4095;
    if (m->momentum) zero_pages(m->momentum, state ? state : 4096);
    if (m->moment2) zero_pages(m->moment2, state ? state : 4096);
}

/* ---- forward / backward ----------------------------------------------------------------- */

const float *model_logits(const model_t *m) { return m->acts + m->layers[m->nlayers - 1].out_off; }

float model_forward(model_t *m, const float *x, const int32_t *y, int B, int train)
{
    /* a pass: at bf16 each weight is packed once for the products of this forward and its
     * backward (matmul.h), and never across an update */
    mm_weights_changed();
    if (train) m->dropout_step++; /* new masks; the backward after this forward reuses them */
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        const int attn = attn_mode(m, i);
        if (attn == ATTN_RUN) attention_run_forward(m, i, B);
        /* an empty output (a dimension of 0, an ONNX case's): nothing to compute, and its
         * walk must not be taken */
        else if (attn == ATTN_NONE && !model_layer_empty(m, i)) MODEL_OPS[l->kind].forward(m, i, x, B, train);
        if (m->progress) m->progress(m->progress_ctx);
    }
    return softmax_xent_forward(B * m->positions, m->num_classes, model_logits(m), y, m->label_smoothing, m->probs);
}

/* Whether layer i's output gradient is zeroed for its readers to add into. */
static int dact_accumulates(const model_t *m, int i)
{
    const layer_plan_t *l = model_layer_plan(m, i);
    if (i == m->nlayers - 1) return 0;           /* written by the loss */
    if (l->fused_relu || l->fused_add) return 0; /* never read: the fused backward reads the ReLU's */
    if (l->grad_setter >= 0) return 0;           /* written whole by the reader whose backward runs first */
    return !l->grad_split;                       /* else written in parts by its Slices */
}

void model_zero_dacts(model_t *m, int B)
{
    /* Input gradients accumulate, so every layer's output gradient starts at zero; the
     * last layer's is written by the loss. Only the first B samples are touched. */
    for (int i = 0; i < m->nlayers; i++)
        if (dact_accumulates(m, i))
            zero_floats((size_t)B * m->layers[i].OC * m->layers[i].OH * m->layers[i].OW,
                        m->dacts + m->plan->dact_off[i]);
}

void model_zero_dacts_at(model_t *m, int B, int step)
{
    for (int i = 0; i <= step; i++)
        if (m->plan->dact_first[i] == step && dact_accumulates(m, i))
            zero_floats((size_t)B * m->layers[i].OC * m->layers[i].OH * m->layers[i].OW,
                        m->dacts + m->plan->dact_off[i]);
}

void model_backward(model_t *m, const float *x, const int32_t *y, int B, float loss_scale)
{
    softmax_xent_backward(B * m->positions, m->num_classes, m->probs, y, m->label_smoothing, loss_scale,
                          m->dacts + m->plan->dact_off[m->nlayers - 1]);

    model_plan_grads(m); /* the tensors' no_update may change between backwards */
    for (int i = m->nlayers - 1; i >= 0; i--) {
        const int attn = attn_mode(m, i);
        /* its inputs' gradients (the ones zeroed here) are not needed either */
        if (m->plan->grad_needed[i]) model_zero_dacts_at(m, B, i);
        if (attn == ATTN_SKIP) {
        } else if (!m->plan->grad_needed[i]) skip_backward(m, i);
        else if (attn == ATTN_RUN) attention_run_backward(m, i, B);
        else if (attn == ATTN_NONE) MODEL_OPS[m->layers[i].kind].backward(m, i, x, B);
        if (m->progress) m->progress(m->progress_ctx);
        if (m->grad_done) m->grad_done(m->grad_done_ctx, i);
    }
    mm_weights_changed(); /* the optimizer comes next */
}

void model_apply_optimizer(model_t *m, const float *g, const optim_step_t *o)
{
    float grad_scale = o->grad_scale;
    if (o->clip_norm > 0) {
        /* Clip the gradient the update will use, grad_scale * g, to clip_norm. */
        float norm = grad_scale * (float)sqrt(sum_squares(m->nparams, g));
        if (norm > o->clip_norm) grad_scale *= o->clip_norm / norm;
    }
    adamw_hparams_t h = o->h;
    int ti = 0, exempt;
    size_t off, n;
    while (model_decay_run(m, o->groups, &ti, &off, &n, &exempt)) {
        h.weight_decay = exempt ? 0.0 : o->h.weight_decay;
        if (o->adamw)
            adamw_update(n, m->params + off, g + off, m->momentum + off, m->moment2 + off, &h, o->step, grad_scale);
        else
            sgd_update(n, m->params + off, g + off, m->momentum + off, (float)h.lr, o->momentum, o->nesterov,
                       (float)h.weight_decay, grad_scale);
    }
}
