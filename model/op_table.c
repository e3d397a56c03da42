/* model/op_table.c - see op_table.h: the operator table and each kind's CPU step.
 *
 * A step reads its layer's descriptor and the fused buffers at the layer's offsets. The
 * fused paths are decided once at build time (plan.c's fuse_layers sets fused_relu and
 * fused_add, mark_set_grads sets grad_setter); a step only follows those marks: a fused
 * batch norm writes the output of the layer its mark names (the ReLU after it, or the ReLU
 * after the residual add after it), and the layers it stands in for do nothing.
 */
#include "op_table.h"

#include <stdio.h>
#include <string.h>

#include "plan.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* The output of layer `in`, or the model input x for -1. */
static const float *input_of(const model_t *m, const float *x, int in)
{
    return in < 0 ? x : m->acts + m->layers[in].out_off;
}

/* Layer `in`'s output is stored in bf16 (plan.h's act_bf16; the model input never is). */
static int act_bf16(const model_t *m, int in) { return in >= 0 && model_layer_plan(m, in)->act_bf16; }

/* That output, as stored. */
static uint16_t *act16(const model_t *m, int in) { return (uint16_t *)(void *)(m->acts + m->layers[in].out_off); }

/* The gradient of layer `in`'s output, or NULL for the model input (never needed). */
static float *dinput_of(const model_t *m, int in) { return in < 0 ? NULL : m->dacts + m->plan->dact_off[in]; }

static size_t out_count(const layer_t *l, int B) { return (size_t)B * l->OC * l->OH * l->OW; }

/* dinput_of, or NULL where no layer at or before `in` takes an update (model.h's
 * grad_needed: nothing reads that gradient). For the layers with parameters, whose kernels
 * take a NULL input gradient: the first trainable layer after a frozen start computes no
 * gradient into it. */
static float *dinput_needed(const model_t *m, int in)
{
    return in >= 0 && m->plan->grad_needed && !m->plan->grad_needed[in] ? NULL : dinput_of(m, in);
}

/* The layer's backward writes input `in`'s gradient first and whole, or its part of it
 * (a Slice of a gradient split by Slices) (mark_set_grads). */
static int sets_grad(const model_t *m, int in, int i)
{
    return in >= 0 && (m->plan->layers[in].grad_setter == i || m->plan->layers[in].grad_split);
}

/* The gradient of layer i's weight (which 0) or bias (1) in grads, counted in
 * grads_computed; NULL where that tensor takes no update (model.h's no_update), counted
 * in grads_skipped: the backward then leaves it out (its product not computed). */
static float *param_grad(model_t *m, int i, int which)
{
    const int t = m->plan->layer_tensor ? m->plan->layer_tensor[2 * i + which] : -1;
    const layer_t *l = &m->layers[i];
    if (t < 0) return m->grads + (which ? l->b_off : l->w_off); /* not found: as before */
    if (m->tensors[t].no_update) {
        m->grads_skipped++;
        return NULL;
    }
    m->grads_computed[t]++;
    return m->grads + m->tensors[t].offset;
}

/* The bias gradient of a layer that may have none (has_bias 0: NULL, nothing counted) */
static float *bias_grad_of(model_t *m, int i) { return m->layers[i].has_bias ? param_grad(m, i, 1) : NULL; }

/* ---- shape inference, workspace, FLOPs ---------------------------------------------------- */

/* A rank-3 shape (C, H, W). */
static void set_chw(layer_t *l, int C, int H, int W)
{
    l->shape.rank = 3;
    l->shape.dims[0] = C;
    l->shape.dims[1] = H;
    l->shape.dims[2] = W;
}

static int infer_same(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    l->shape = *in;
    return 0;
}

/* Convolutions and pools take images (C, H, W) and sequences (C, L): a sequence folds to
 * (C, L, 1), so its geometry is the 2-D one's with a width of 1 (KW, sW, dW 1, no pads
 * left or right: the importer's), and its output stays (OC, OL). Another rank is refused,
 * not folded. */
static int conv_rank_ok(const model_shape_t *in, int KW, int sW, int dW, int pad_l, int pad_r)
{
    return in->rank == 3 || (in->rank == 2 && KW == 1 && sW == 1 && dW == 1 && pad_l == 0 && pad_r == 0);
}

/* The (C, H, W) output, or (C, H) for a sequence's input (rank 2). */
static void set_conv_shape(layer_t *l, int in_rank, int C, int H, int W)
{
    set_chw(l, C, H, W);
    if (in_rank == 2) l->shape.rank = 2;
}

static int infer_conv(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    /* the geometry's filters, stride, pads, dilation and groups on this layer's input */
    const conv2d_desc_t *g = &l->op.conv;
    l->op.conv.C = l->C;
    l->op.conv.H = l->H;
    l->op.conv.W = l->W;
    const int bad = !conv_rank_ok(in, g->KW, g->sW, g->dW, g->pad_l, g->pad_r) || conv2d_setup(&l->op.conv) != 0;
    set_conv_shape(l, in->rank, l->op.conv.OC, l->op.conv.OH, l->op.conv.OW);
    return bad ? -1 : 0;
}

/* The output size is the descriptor's OH, OW where the builder gave one (an output padding
 * or ONNX's output_shape), else the size without padding. */
static int infer_conv_transpose(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    const conv2d_desc_t *g = &l->op.conv;
    l->op.conv.C = l->C;
    l->op.conv.H = l->H;
    l->op.conv.W = l->W;
    const int bad = !conv_rank_ok(in, g->KW, g->sW, g->dW, g->pad_l, g->pad_r) ||
                    conv_transpose2d_setup(&l->op.conv) != 0;
    set_conv_shape(l, in->rank, l->op.conv.OC, l->op.conv.OH, l->op.conv.OW);
    return bad ? -1 : 0;
}

static int infer_pool(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    const pool2d_desc_t *g = &l->op.pool;
    l->op.pool.C = l->C;
    l->op.pool.H = l->H;
    l->op.pool.W = l->W;
    const int bad = !conv_rank_ok(in, g->KW, g->sW, g->dW, g->pad_l, g->pad_r) || pool2d_setup(&l->op.pool) != 0;
    set_conv_shape(l, in->rank, l->C, l->op.pool.OH, l->op.pool.OW);
    return bad ? -1 : 0;
}

/* FC flattens its input: (B, C, H, W) is read as (B, C*H*W); gemm.OUT is set. */
static int infer_fc(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    l->C = l->C * l->H * l->W;
    l->H = 1;
    l->W = 1;
    l->shape.rank = 1;
    l->shape.dims[0] = l->op.gemm.OUT;
    l->op.gemm.IN = l->C;
    return l->op.gemm.OUT < 1 ? -1 : 0;
}

/* the last axis (gemm.IN) mapped to gemm.OUT; rank 2 at least (else LAYER_FC) */
static int infer_linear(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    l->shape = *in;
    if (in->rank < 2 || l->op.gemm.OUT < 1) return -1;
    l->op.gemm.IN = in->dims[in->rank - 1];
    l->shape.dims[in->rank - 1] = l->op.gemm.OUT;
    return 0;
}

static int infer_gap(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    set_chw(l, l->C, 1, 1);
    return in->rank != 3 ? -1 : 0;
}

/* out = in + shortcut(in2): in2 the same shape (any rank), or the option-A shortcut of a
 * larger plane (by an integer stride) and fewer channels (images only). */
static int infer_add(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    int C2, H2, W2;
    model_shape_fold(in2, &C2, &H2, &W2);
    l->shape = *in;
    /* two empty tensors of one shape: an empty sum, which the forward skips (no shortcut) */
    if (model_shape_equal(in, in2) && model_shape_count(in) == 0) return 0;
    const int stride = H2 / (l->H > 0 ? l->H : 1);
    if (shortcut_init(&l->op.sc, C2, H2, W2, l->C, stride) != 0 || l->op.sc.OH != l->H || l->op.sc.OW != l->W)
        return -1;
    return model_shape_equal(in, in2) || (in->rank == 3 && in2->rank == 3) ? 0 : -1;
}

/* axis op.concat.axis of in, then of in2 (0: the channels; every other dimension the same) */
static int infer_concat(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    const int ax = l->op.concat.axis;
    l->shape = *in;
    if (ax < 0 || ax >= in->rank || in2->rank != in->rank) return -1;
    for (int d = 0; d < in->rank; d++)
        if (d != ax && in->dims[d] != in2->dims[d]) return -1;
    /* in 64 bits: model_build_concat_axis refuses a sum past the sample bound first */
    const int64_t joined = (int64_t)in->dims[ax] + in2->dims[ax];
    if (joined > MODEL_SAMPLE_MAX) return -1;
    l->shape.dims[ax] = (int)joined;
    l->op.concat.first = in->dims[ax];
    return 0;
}

/* in * in2: in2 of in's shape, or of its rank with dims (C, 1, ...) (bcast);
 * model_build_mul puts the full one first */
static int infer_mul(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    int C2, H2, W2;
    model_shape_fold(in2, &C2, &H2, &W2);
    l->shape = *in;
    l->op.mul.bcast = H2 == 1 && W2 == 1 && (l->H != 1 || l->W != 1);
    if (in2->rank != in->rank) return -1;
    return C2 != l->C || (!l->op.mul.bcast && (H2 != l->H || W2 != l->W)) ? -1 : 0;
}

/* its own shape, set by model_build_const (it reads no input) */
static int infer_const(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    model_shape_fold(&l->shape, &l->C, &l->H, &l->W);
    return 0;
}

/* Contiguous strides of shape s right-aligned to rank R (axes 1..R of d, axis 0 the
 * batch), 0 where s has 1 or no axis; the batch stride (set by the builder: 0 for a
 * constant, 1 for an activation) becomes the sample's element count or stays 0. */
static void bcast_strides(const model_shape_t *s, int R, size_t *st)
{
    size_t run = 1;
    for (int ax = R; ax >= 1; ax--) {
        const int d = ax - 1 - (R - s->rank); /* s's axis, < 0 where s has none */
        st[ax] = d >= 0 && s->dims[d] > 1 ? run : 0;
        if (d >= 0) run *= (size_t)s->dims[d];
    }
    st[0] = st[0] ? run : 0;
}

/* NumPy broadcasting of the two per-sample shapes, right-aligned: each axis equal, or 1 in
 * one of them; the output's rank the larger. */
static int infer_binary(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    const int R = in->rank > in2->rank ? in->rank : in2->rank;
    l->shape.rank = R;
    for (int ax = 0; ax < R; ax++) {
        const int da = ax - (R - in->rank), db = ax - (R - in2->rank);
        const int x = da >= 0 ? in->dims[da] : 1, y = db >= 0 ? in2->dims[db] : 1;
        if (x != y && x != 1 && y != 1) return -1;
        l->shape.dims[ax] = x > y ? x : y;
        l->op.view.bc.dims[ax + 1] = l->shape.dims[ax];
    }
    l->op.view.bc.rank = R + 1;
    bcast_strides(in, R, l->op.view.bc.sa);
    bcast_strides(in2, R, l->op.view.bc.sb);
    return 0;
}

static size_t shape_count(const model_shape_t *s)
{
    size_t n = 1;
    for (int d = 0; d < s->rank; d++) n *= (size_t)s->dims[d];
    return n;
}

/* the target shape, set by model_build_reshape: as many elements as the input */
static int infer_reshape(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    for (int d = 0; d < l->shape.rank; d++)
        if (l->shape.dims[d] < 0) return -1;
    return shape_count(&l->shape) == shape_count(in) ? 0 : -1;
}

/* The view's walk (bc) over the output, reading the input at its contiguous strides
 * st[0..rank) (st: the input's, picked per output axis by the caller). */
static void view_desc(layer_t *l, const model_shape_t *in)
{
    l->op.view.bc.rank = l->shape.rank + 1;
    l->op.view.bc.dims[0] = 0; /* the batch: given per call */
    for (int d = 0; d < l->shape.rank; d++) l->op.view.bc.dims[d + 1] = l->shape.dims[d];
    l->op.view.bc.sa[0] = shape_count(in);
}

static void contiguous_strides(const model_shape_t *s, size_t *st)
{
    size_t run = 1;
    for (int d = s->rank - 1; d >= 0; d--) {
        st[d] = run;
        run *= (size_t)s->dims[d];
    }
}

static int infer_transpose(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    size_t st[MODEL_MAX_RANK];
    int seen = 0;
    contiguous_strides(in, st);
    l->shape.rank = in->rank;
    for (int d = 0; d < in->rank; d++) {
        const int p = l->op.view.perm[d];
        if (p < 0 || p >= in->rank || (seen & (1 << p))) return -1;
        seen |= 1 << p;
        l->shape.dims[d] = in->dims[p];
    }
    view_desc(l, in);
    for (int d = 0; d < in->rank; d++) l->op.view.bc.sa[d + 1] = st[l->op.view.perm[d]];
    l->op.view.off = 0;
    return 0;
}

static int infer_slice(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    layer_view_t *v = &l->op.view;
    const int ax = v->axis, up = v->step > 0;
    /* start == end: an empty slice (a dimension of 0), its walk never taken */
    if (ax < 0 || ax >= in->rank || v->step == 0 ||
        (up ? v->start < 0 || v->start > v->end || v->end > in->dims[ax]
            : v->end < -1 || v->end > v->start || v->start >= in->dims[ax]))
        return -1;
    size_t st[MODEL_MAX_RANK];
    const int span = up ? v->end - v->start : v->start - v->end, by = up ? v->step : -v->step;
    contiguous_strides(in, st);
    l->shape = *in;
    l->shape.dims[ax] = (span + by - 1) / by;
    view_desc(l, in);
    /* a negative step's stride wraps (size_t arithmetic is modular): the walk adds it and
     * lands on start - step, start - 2 step, ... inside the sample */
    for (int d = 0; d < in->rank; d++) v->bc.sa[d + 1] = st[d] * (d == ax ? (size_t)(ptrdiff_t)v->step : 1);
    v->off = v->start == v->end ? 0 : st[ax] * (size_t)v->start;
    return 0;
}

/* The kept axes (red_keep: the reduced ones as 1s); the walk over the input, its output
 * strides 0 along the reduced axes (reduce_forward). */
static int infer_reduce(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    size_t st[MODEL_MAX_RANK], run = 1;
    if (!l->op.view.red_mask || (l->op.view.red_mask >> in->rank)) return -1;
    contiguous_strides(in, st);
    l->shape.rank = 0;
    for (int d = in->rank - 1; d >= 0; d--) {
        const int red = l->op.view.red_mask >> d & 1;
        l->op.view.bc.sb[d + 1] = red ? 0 : run;
        if (!red) run *= (size_t)in->dims[d];
    }
    for (int d = 0; d < in->rank; d++)
        if (!(l->op.view.red_mask >> d & 1) || l->op.view.red_keep)
            l->shape.dims[l->shape.rank++] = l->op.view.red_mask >> d & 1 ? 1 : in->dims[d];
    l->op.view.bc.rank = in->rank + 1;
    l->op.view.bc.dims[0] = 0; /* the batch: given per call */
    for (int d = 0; d < in->rank; d++) {
        l->op.view.bc.dims[d + 1] = in->dims[d];
        l->op.view.bc.sa[d + 1] = st[d];
    }
    l->op.view.bc.sa[0] = shape_count(in);
    l->op.view.bc.sb[0] = run;
    return 0;
}

static size_t ws_conv(const layer_t *l, int B) { return conv2d_workspace(&l->op.conv, B); }

/* convolutions and fully connected layers 2 per multiply-add, others one per input element */
static double flops_conv(const layer_t *l)
{
    return 2.0 * ((double)l->OC * l->OH * l->OW) * (l->op.conv.C / l->op.conv.groups) * l->op.conv.KH * l->op.conv.KW;
}
static size_t ws_conv_transpose(const layer_t *l, int B) { return conv_transpose2d_workspace(&l->op.conv, B); }
/* the multiply-adds of the convolution whose input gradient it is */
static double flops_conv_transpose(const layer_t *l)
{
    return 2.0 * ((double)l->C * l->H * l->W) * (l->OC / l->op.conv.groups) * l->op.conv.KH * l->op.conv.KW;
}
static double flops_fc(const layer_t *l) { return 2.0 * ((double)l->OC * l->OH * l->OW) * l->C; }
static double flops_linear(const layer_t *l) { return 2.0 * ((double)l->OC * l->OH * l->OW) * l->op.gemm.IN; }
static double flops_pass(const layer_t *l) { return (double)l->C * l->H * l->W; }

/* ---- CPU steps ---------------------------------------------------------------------------- */

static void conv_fwd(model_t *m, int i, const float *x, int B, int train)
{
    layer_t *l = &m->layers[i];
    const float *bias = l->has_bias ? m->params + l->b_off : NULL;
    conv2d_forward(&l->op.conv, B, input_of(m, x, l->in), m->params + l->w_off, bias, m->acts + l->out_off, m->ws);
}

static void conv_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    const float *inp = input_of(m, x, l->in), *w = m->params + l->w_off, *dout = m->dacts + m->plan->dact_off[i];
    float *dinp = dinput_needed(m, l->in), *dw = param_grad(m, i, 0), *db = bias_grad_of(m, i);
    const int t = m->plan->layer_tensor ? m->plan->layer_tensor[2 * i] : -1;
    if (!dw && !dinp && !db) return; /* frozen, and the model input's gradient is not needed */
    if (!dw) {
        /* the convolution kernels always write dweight: computed into the frozen tensor's
         * own gradient for the input's sake, and zeroed again (counted as computed) */
        dw = m->grads + l->w_off;
        m->grads_skipped--;
        m->grads_computed[t]++;
    }
    /* the input's gradient set rather than added where this backward is its first */
    if (sets_grad(m, l->in, i)) conv2d_backward_set(&l->op.conv, B, inp, w, dout, dinp, dw, db, m->ws);
    else conv2d_backward(&l->op.conv, B, inp, w, dout, dinp, dw, db, m->ws);
    if (t >= 0 && m->tensors[t].no_update) memset(dw, 0, m->tensors[t].count * sizeof(float));
}

static void convt_fwd(model_t *m, int i, const float *x, int B, int train)
{
    layer_t *l = &m->layers[i];
    const float *bias = l->has_bias ? m->params + l->b_off : NULL;
    conv_transpose2d_forward(&l->op.conv, B, input_of(m, x, l->in), m->params + l->w_off, bias, m->acts + l->out_off,
                             m->ws);
}

static void convt_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    const float *inp = input_of(m, x, l->in), *w = m->params + l->w_off, *dout = m->dacts + m->plan->dact_off[i];
    float *dinp = dinput_of(m, l->in), *dw = m->grads + l->w_off, *db = l->has_bias ? m->grads + l->b_off : NULL;
    conv_transpose2d_backward(&l->op.conv, B, inp, w, dout, dinp, dw, db, m->ws, sets_grad(m, l->in, i));
}

static void maxpool_fwd(model_t *m, int i, const float *x, int B, int train)
{
    layer_t *l = &m->layers[i];
    maxpool2d_forward(&l->op.pool, B, input_of(m, x, l->in), m->acts + l->out_off, m->argmax + l->aux_off);
}

static void maxpool_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *dinp = dinput_of(m, l->in);
    if (dinp) maxpool2d_backward(&l->op.pool, B, m->dacts + m->plan->dact_off[i], m->argmax + l->aux_off, dinp);
}

static void avgpool_fwd(model_t *m, int i, const float *x, int B, int train)
{
    layer_t *l = &m->layers[i];
    avgpool2d_forward(&l->op.pool, B, input_of(m, x, l->in), m->acts + l->out_off);
}

static void avgpool_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *dinp = dinput_of(m, l->in);
    if (dinp) avgpool2d_backward(&l->op.pool, B, m->dacts + m->plan->dact_off[i], dinp);
}

static void relu_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    /* computed by the fused batch norm before it (its plan's fused_relu) */
    if (!(l->in >= 0 && m->plan->layers[l->in].fused_relu))
        relu_forward(out_count(l, B), input_of(m, x, l->in), m->acts + l->out_off);
}

static void relu_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *dinp = dinput_of(m, l->in);
    if (dinp && !m->plan->layers[l->in].fused_relu) /* dinp: l->in >= 0 */
        (sets_grad(m, l->in, i) ? relu_backward_set : relu_backward)(out_count(l, B), m->acts + l->out_off,
                                                                     m->dacts + m->plan->dact_off[i], dinp);
}

static void fc_fwd(model_t *m, int i, const float *x, int B, int train)
{
    layer_t *l = &m->layers[i];
    const float *bias = l->has_bias ? m->params + l->b_off : NULL;
    if (act_bf16(m, l->in))
        gemm_forward_a16(&l->op.gemm, B, act16(m, l->in), m->params + l->w_off, bias, m->acts + l->out_off);
    else gemm_forward(&l->op.gemm, B, input_of(m, x, l->in), m->params + l->w_off, bias, m->acts + l->out_off);
}

static void fc_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *db = bias_grad_of(m, i);
    if (act_bf16(m, l->in))
        gemm_backward_a16(&l->op.gemm, B, act16(m, l->in), m->params + l->w_off, m->dacts + m->plan->dact_off[i],
                          dinput_needed(m, l->in), param_grad(m, i, 0), db, sets_grad(m, l->in, i));
    else
        (sets_grad(m, l->in, i) ? gemm_backward_set : gemm_backward)(&l->op.gemm, B, input_of(m, x, l->in),
                                                                     m->params + l->w_off,
                                                                     m->dacts + m->plan->dact_off[i],
                                                                     dinput_needed(m, l->in), param_grad(m, i, 0), db);
}

/* one GEMM over every sample's rows (a sample's elements / IN of them) */
static int linear_rows(const layer_t *l, int B) { return B * (l->C * l->H * l->W / l->op.gemm.IN); }

static void linear_fwd(model_t *m, int i, const float *x, int B, int train)
{
    layer_t *l = &m->layers[i];
    const float *bias = l->has_bias ? m->params + l->b_off : NULL;
    /* rounded: stored in bf16, or as the rounded floats; else stored in bf16 for products
     * (a fused attention's q, k, v) */
    if (model_layer_plan(m, i)->rounded || act_bf16(m, i))
        gemm_forward_rounded(&l->op.gemm, linear_rows(l, B), act_bf16(m, l->in) ? NULL : input_of(m, x, l->in),
                             act_bf16(m, l->in) ? act16(m, l->in) : NULL, m->params + l->w_off, bias,
                             m->acts + l->out_off, act_bf16(m, i) ? act16(m, i) : NULL);
    else if (act_bf16(m, l->in))
        gemm_forward_a16(&l->op.gemm, linear_rows(l, B), act16(m, l->in), m->params + l->w_off, bias,
                         m->acts + l->out_off);
    else
        gemm_forward(&l->op.gemm, linear_rows(l, B), input_of(m, x, l->in), m->params + l->w_off, bias,
                     m->acts + l->out_off);
}

static void linear_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *db = bias_grad_of(m, i);
    if (act_bf16(m, l->in))
        gemm_backward_a16(&l->op.gemm, linear_rows(l, B), act16(m, l->in), m->params + l->w_off,
                          m->dacts + m->plan->dact_off[i], dinput_needed(m, l->in), param_grad(m, i, 0), db,
                          sets_grad(m, l->in, i));
    else
        (sets_grad(m, l->in, i) ? gemm_backward_set : gemm_backward)(&l->op.gemm, linear_rows(l, B),
                                                                     input_of(m, x, l->in), m->params + l->w_off,
                                                                     m->dacts + m->plan->dact_off[i],
                                                                     dinput_needed(m, l->in), param_grad(m, i, 0), db);
}

/* bn_fwd synchronised (model.h's bn_sync): every process's statistics, the fused add and
 * ReLU after it applied as bn_fwd applies them */
static void bn_fwd_sync(model_t *m, int i, const float *x, int B)
{
    layer_t *l = &m->layers[i];
    const layer_plan_t *lp = model_layer_plan(m, i);
    const float *inp = input_of(m, x, l->in), *w = m->params + l->w_off, *beta = m->params + l->b_off;
    float *mean = m->aux + l->aux_off, *invstd = mean + l->C;
    const float *res = lp->fused_add ? input_of(m, x, m->layers[i + 1].in2) : NULL;
    const int after = lp->fused_add ? 2 : lp->fused_relu ? 1 : 0; /* the layer whose output it writes */
    batchnorm_forward_train_sync(B, l->C, l->H * l->W, inp, w, beta, res, after > 0,
                                 m->acts + m->layers[i + after].out_off, mean, invstd, m->buffers + l->rm_off,
                                 m->buffers + l->rv_off, l->op.norm.momentum, l->op.norm.eps, m->bn_sync);
}

static void bn_fwd(model_t *m, int i, const float *x, int B, int train)
{
    if (train && m->bn_sync) {
        bn_fwd_sync(m, i, x, B);
        return;
    }
    layer_t *l = &m->layers[i];
    const layer_plan_t *lp = model_layer_plan(m, i);
    const float *inp = input_of(m, x, l->in), *w = m->params + l->w_off, *beta = m->params + l->b_off;
    float *mean = m->aux + l->aux_off, *invstd = mean + l->C;
    float *rm = m->buffers + l->rm_off, *rv = m->buffers + l->rv_off;
    const int HW = l->H * l->W;
    if (lp->fused_add) {
        /* the residual add after it and the ReLU after that (fuse_layers) */
        const float *res = input_of(m, x, m->layers[i + 1].in2);
        float *rout = m->acts + m->layers[i + 2].out_off;
        if (train)
            batchnorm_add_relu_forward_train_eps(B, l->C, HW, inp, w, beta, res, rout, mean, invstd, rm, rv,
                                                 l->op.norm.momentum, l->op.norm.eps);
        else batchnorm_add_relu_forward_eval_eps(B, l->C, HW, inp, w, beta, rm, rv, res, rout, l->op.norm.eps);
    } else if (lp->fused_relu) {
        float *rout = m->acts + m->layers[i + 1].out_off;
        if (train)
            batchnorm_relu_forward_train_eps(B, l->C, HW, inp, w, beta, rout, mean, invstd, rm, rv, l->op.norm.momentum,
                                             l->op.norm.eps);
        else batchnorm_relu_forward_eval_eps(B, l->C, HW, inp, w, beta, rm, rv, rout, l->op.norm.eps);
    } else if (train)
        batchnorm_forward_train_eps(B, l->C, HW, inp, w, beta, m->acts + l->out_off, mean, invstd, rm, rv,
                                    l->op.norm.momentum, l->op.norm.eps);
    else batchnorm_forward_eval_eps(B, l->C, HW, inp, w, beta, rm, rv, m->acts + l->out_off, l->op.norm.eps);
}

static void bn_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    const layer_plan_t *lp = model_layer_plan(m, i);
    const float *inp = input_of(m, x, l->in), *w = m->params + l->w_off;
    float *dinp = dinput_needed(m, l->in), *dw = param_grad(m, i, 0), *db = param_grad(m, i, 1);
    const float *mean = m->aux + l->aux_off, *invstd = mean + l->C;
    const int HW = l->H * l->W, sets_in = sets_grad(m, l->in, i);
    /* g: this layer's output gradient, or with rout the ReLU's, read through its mask
     * (fused_relu; fused_add: through the add unchanged). Where the add has just set its
     * shortcut's gradient, that buffer holds the masked gradient itself, bit for bit: read
     * once instead of masking the ReLU's again. */
    const float *g = m->dacts + m->plan->dact_off[i], *rout = NULL;
    const int sc = lp->fused_add ? m->layers[i + 1].in2 : -1;
    if (sc >= 0 && m->plan->layers[sc].grad_setter == i + 1) g = m->dacts + m->plan->dact_off[sc];
    else if (lp->fused_relu || lp->fused_add) {
        const layer_t *r = &m->layers[i + (lp->fused_add ? 2 : 1)];
        rout = m->acts + r->out_off;
        g = m->dacts + m->plan->dact_off[i + (lp->fused_add ? 2 : 1)];
    }
    if (m->bn_sync)
        batchnorm_backward_sync(B, l->C, HW, inp, w, mean, invstd, rout, g, dinp, dw, db, sets_in, m->bn_sync);
    else if (rout && sets_in) batchnorm_relu_backward_set(B, l->C, HW, inp, w, mean, invstd, rout, g, dinp, dw, db);
    else if (rout) batchnorm_relu_backward(B, l->C, HW, inp, w, mean, invstd, rout, g, dinp, dw, db);
    else if (sets_in) batchnorm_backward_set(B, l->C, HW, inp, w, mean, invstd, g, dinp, dw, db);
    else batchnorm_backward(B, l->C, HW, inp, w, mean, invstd, g, dinp, dw, db);
}

static void gap_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    gap_forward(B, l->C, l->H * l->W, input_of(m, x, l->in), m->acts + l->out_off);
}

static void gap_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *dinp = dinput_of(m, l->in);
    if (dinp) gap_backward(B, l->C, l->H * l->W, m->dacts + m->plan->dact_off[i], dinp);
}

static void add_fwd(model_t *m, int i, const float *x, int B, int train)
{
    layer_t *l = &m->layers[i];
    /* computed by the fused batch norm before it (its plan's fused_add) */
    if (!(l->in >= 0 && m->plan->layers[l->in].fused_add))
        residual_add_forward(&l->op.sc, B, input_of(m, x, l->in), input_of(m, x, l->in2), m->acts + l->out_off);
}

static void add_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    const layer_plan_t *lp = model_layer_plan(m, i);
    float *dx = dinput_of(m, l->in2);
    const int sets_x = sets_grad(m, l->in2, i);
    if (lp->fused_relu) {
        /* the shortcut's gradient is the ReLU's input gradient (an identity shortcut,
         * fuse_layers); the batch norm's is read through (fused_add) */
        const layer_t *r = &m->layers[i + 1];
        if (dx)
            (sets_x ? relu_backward_set : relu_backward)(out_count(l, B), m->acts + r->out_off,
                                                         m->dacts + m->plan->dact_off[i + 1], dx);
    } else
        residual_add_backward_set(&l->op.sc, B, m->dacts + m->plan->dact_off[i], dinput_of(m, l->in),
                                  sets_grad(m, l->in, i), dx, sets_x);
}

static void leaky_relu_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    leaky_relu_forward(out_count(l, B), l->op.unary.alpha, input_of(m, x, l->in), m->acts + l->out_off);
}

static void leaky_relu_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *dinp = dinput_of(m, l->in);
    if (dinp)
        leaky_relu_backward(out_count(l, B), l->op.unary.alpha, m->acts + l->out_off, m->dacts + m->plan->dact_off[i],
                            dinp);
}

static void sigmoid_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    sigmoid_forward(out_count(l, B), input_of(m, x, l->in), m->acts + l->out_off);
}

static void sigmoid_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *dinp = dinput_of(m, l->in);
    if (dinp) sigmoid_backward(out_count(l, B), m->acts + l->out_off, m->dacts + m->plan->dact_off[i], dinp);
}

static void tanh_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    tanh_forward(out_count(l, B), input_of(m, x, l->in), m->acts + l->out_off);
}

static void tanh_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *dinp = dinput_of(m, l->in);
    if (dinp) tanh_backward(out_count(l, B), m->acts + l->out_off, m->dacts + m->plan->dact_off[i], dinp);
}

/* Along the output's axis ax (the kind's: a concatenation's, a softmax's, a layer norm's),
 * a sample is (outer, size along it, inner): the kernels' (rows, n, inner) with B * outer
 * rows (outer 1 and inner H * W for the channels). */
static void axis_geometry(const layer_t *l, int ax, int B, int *rows, int *inner)
{
    *rows = B;
    *inner = 1;
    for (int d = 0; d < l->shape.rank; d++) {
        if (d < ax) *rows *= l->shape.dims[d];
        if (d > ax) *inner *= l->shape.dims[d];
    }
}

/* Concat: C2 the two inputs' sizes along the axis */
static void concat_geometry(const layer_t *l, int B, int *rows, int *inner, int C2[2])
{
    axis_geometry(l, l->op.concat.axis, B, rows, inner);
    C2[0] = l->op.concat.first;
    C2[1] = l->shape.dims[l->op.concat.axis] - l->op.concat.first;
}

static void concat_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    int rows, inner, C2[2];
    concat_geometry(l, B, &rows, &inner, C2);
    const float *const in2[2] = {input_of(m, x, l->in), input_of(m, x, l->in2)};
    concat_forward(rows, inner, 2, C2, in2, m->acts + l->out_off);
}

static void concat_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    int rows, inner, C2[2];
    concat_geometry(l, B, &rows, &inner, C2);
    float *const d2[2] = {dinput_of(m, l->in), dinput_of(m, l->in2)};
    concat_backward(rows, inner, 2, C2, m->dacts + m->plan->dact_off[i], d2);
}

static void dropout_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    const float *inp = input_of(m, x, l->in);
    float *out = m->acts + l->out_off;
    if (train)
        dropout_forward(out_count(l, B), l->op.dropout.p, dropout_key(m->dropout_seed, m->dropout_step, (uint32_t)i),
                        inp, out);
    else memcpy(out, inp, out_count(l, B) * sizeof(float));
}

static void dropout_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *dinp = dinput_of(m, l->in);
    if (dinp)
        (sets_grad(m, l->in, i) ? dropout_backward_set
                                : dropout_backward)(out_count(l, B), l->op.dropout.p,
                                                    dropout_key(m->dropout_seed, m->dropout_step, (uint32_t)i),
                                                    m->dacts + m->plan->dact_off[i], dinp);
}

/* dropout_fwd and dropout_bwd with one draw per sample: the same key (job seed, step,
 * layer), so a resumed run draws the same masks */
static void sdepth_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    const float *inp = input_of(m, x, l->in);
    float *out = m->acts + l->out_off;
    if (train)
        stochastic_depth_forward(out_count(l, B), out_count(l, 1), l->op.dropout.p,
                                 dropout_key(m->dropout_seed, m->dropout_step, (uint32_t)i), inp, out);
    else memcpy(out, inp, out_count(l, B) * sizeof(float));
}

static void sdepth_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *dinp = dinput_of(m, l->in);
    if (dinp)
        (sets_grad(m, l->in, i) ? stochastic_depth_backward_set
                                : stochastic_depth_backward)(out_count(l, B), out_count(l, 1), l->op.dropout.p,
                                                             dropout_key(m->dropout_seed, m->dropout_step, (uint32_t)i),
                                                             m->dacts + m->plan->dact_off[i], dinp);
}

static void clip_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    clip_forward(out_count(l, B), l->op.unary.lo, l->op.unary.hi, input_of(m, x, l->in), m->acts + l->out_off);
}

static void clip_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    clip_backward(out_count(l, B), l->op.unary.lo, l->op.unary.hi, m->acts + l->out_off,
                  m->dacts + m->plan->dact_off[i], dinput_of(m, l->in));
}

static void hardsigmoid_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    hardsigmoid_forward(out_count(l, B), l->op.unary.alpha, l->op.unary.beta, input_of(m, x, l->in),
                        m->acts + l->out_off);
}

static void hardsigmoid_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    hardsigmoid_backward(out_count(l, B), l->op.unary.alpha, m->acts + l->out_off, m->dacts + m->plan->dact_off[i],
                         dinput_of(m, l->in));
}

static void hardswish_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    hardswish_forward(out_count(l, B), input_of(m, x, l->in), m->acts + l->out_off);
}

static void hardswish_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    hardswish_backward(out_count(l, B), input_of(m, x, l->in), m->dacts + m->plan->dact_off[i], dinput_of(m, l->in));
}

static void mul_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    mul_forward(B, l->C, l->H * l->W, l->op.mul.bcast ? 1 : l->H * l->W, input_of(m, x, l->in), input_of(m, x, l->in2),
                m->acts + l->out_off);
}

/* Both inputs' gradients are added to (mark_set_grads never makes a Mul a setter). */
static void mul_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    mul_backward(B, l->C, l->H * l->W, l->op.mul.bcast ? 1 : l->H * l->W, input_of(m, x, l->in), input_of(m, x, l->in2),
                 m->dacts + m->plan->dact_off[i], dinput_of(m, l->in), dinput_of(m, l->in2));
}

/* The unary rows' steps, one pair per kind (OP_STEPS): the kind's function of ops.h. */
static void unary_fwd(model_t *m, int i, const float *x, int B, unary_op_t op)
{
    const layer_t *l = &m->layers[i];
    unary_forward(op, l->op.unary.alpha, out_count(l, B), input_of(m, x, l->in), m->acts + l->out_off);
}

static void unary_bwd(model_t *m, int i, const float *x, int B, unary_op_t op)
{
    const layer_t *l = &m->layers[i];
    (sets_grad(m, l->in, i) ? unary_backward_set : unary_backward)(op, l->op.unary.alpha, out_count(l, B),
                                                                   input_of(m, x, l->in), m->acts + l->out_off,
                                                                   m->dacts + m->plan->dact_off[i], dinput_of(m, l->in));
}

/* name_fwd and name_bwd of a row whose steps are family_fwd and family_bwd with the row's
 * operator op (the unary and the broadcasting rows) */
#define OP_STEPS(name, family, op)                                                                                \
    static void name##_fwd(model_t *m, int i, const float *x, int B, int train) { family##_fwd(m, i, x, B, op); } \
    static void name##_bwd(model_t *m, int i, const float *x, int B) { family##_bwd(m, i, x, B, op); }
OP_STEPS(exp, unary, UNARY_EXP)
OP_STEPS(neg, unary, UNARY_NEG)
OP_STEPS(sqrt, unary, UNARY_SQRT)
OP_STEPS(reciprocal, unary, UNARY_RECIPROCAL)
OP_STEPS(abs, unary, UNARY_ABS)
OP_STEPS(pow, unary, UNARY_POW)
OP_STEPS(erf, unary, UNARY_ERF)

/* GELU: at bf16 products its output may be stored in bf16 and its backward read it rounded
 * (plan.h's act_bf16 and saved_bf16), and its input may be a Linear's output stored in
 * bf16 (rounded) */
static void gelu_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    const int in16 = act_bf16(m, l->in);
    if (act_bf16(m, i))
        unary_forward_bf16(UNARY_GELU, l->op.unary.alpha, out_count(l, B), in16 ? NULL : input_of(m, x, l->in),
                           in16 ? act16(m, l->in) : NULL, act16(m, i));
    else unary_fwd(m, i, x, B, UNARY_GELU);
}

static void gelu_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    if (!model_layer_plan(m, i)->saved_bf16) {
        unary_bwd(m, i, x, B, UNARY_GELU);
        return;
    }
    const int stored = act_bf16(m, i), in16 = act_bf16(m, l->in);
    unary_backward_bf16(UNARY_GELU, l->op.unary.alpha, out_count(l, B), in16 ? NULL : input_of(m, x, l->in),
                        in16 ? act16(m, l->in) : NULL, stored ? NULL : m->acts + l->out_off, stored ? act16(m, i) : NULL,
                        m->dacts + m->plan->dact_off[i], dinput_of(m, l->in), sets_grad(m, l->in, i));
}

/* A constant's output is its tensor (one sample's slot; readers read it at batch stride 0);
 * its gradient, which the readers summed into that slot, is its parameter's. */
static void const_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    memcpy(m->acts + l->out_off, (l->op.cnst.frozen ? m->buffers : m->params) + l->w_off,
           out_count(l, 1) * sizeof(float));
}

static void const_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *g = l->op.cnst.frozen ? NULL : param_grad(m, i, 0);
    if (g) memcpy(g, m->dacts + m->plan->dact_off[i], out_count(l, 1) * sizeof(float));
}

/* A gathered parameter (Swin's relative position bias): like a constant, one sample's slot
 * at batch stride 0; its gradient, summed there by the readers, scatter-adds into the table. */
static size_t table_count(const layer_t *l) { return model_shape_count(&l->op.table.shape); }

static void gather_param_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    gather_param_forward(out_count(l, 1), table_count(l), m->buffers + l->rm_off, m->params + l->w_off,
                         m->acts + l->out_off);
}

static void gather_param_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *g = param_grad(m, i, 0);
    if (g)
        gather_param_backward(out_count(l, 1), table_count(l), m->buffers + l->rm_off, m->dacts + m->plan->dact_off[i],
                              g);
}

/* The gradient a binary row sums into its input `in`, or NULL for a frozen constant's
 * (a tensor of buffers, or a parameter that takes no update), which nothing reads
 * (const_bwd): a constant scale (attention's q / sqrt(D)) would otherwise be summed over
 * every output element for nothing. */
static float *dbinary_of(const model_t *m, int in)
{
    if (in < 0 || m->layers[in].kind != LAYER_CONST) return dinput_of(m, in);
    const int t = m->plan->layer_tensor ? m->plan->layer_tensor[2 * in] : -1;
    return m->layers[in].op.cnst.frozen || (t >= 0 && m->tensors[t].no_update) ? NULL : dinput_of(m, in);
}

/* The binary rows' steps, one pair per kind (OP_STEPS): the kind's operator of ops.h, by
 * rows; an input's gradient written where this layer sets it (mark_set_grads) */
static void binary_fwd(model_t *m, int i, const float *x, int B, binary_op_t op)
{
    const layer_t *l = &m->layers[i];
    binary_rows_forward(op, &l->op.view.bc, B, input_of(m, x, l->in), input_of(m, x, l->in2), m->acts + l->out_off);
}

static void binary_bwd(model_t *m, int i, const float *x, int B, binary_op_t op)
{
    const layer_t *l = &m->layers[i];
    binary_rows_backward(op, &l->op.view.bc, B, input_of(m, x, l->in), input_of(m, x, l->in2),
                         m->dacts + m->plan->dact_off[i], dbinary_of(m, l->in), sets_grad(m, l->in, i),
                         dbinary_of(m, l->in2), sets_grad(m, l->in2, i));
}

OP_STEPS(badd, binary, BINARY_ADD)
OP_STEPS(sub, binary, BINARY_SUB)
OP_STEPS(bmul, binary, BINARY_MUL)
OP_STEPS(div, binary, BINARY_DIV)

/* Pow of a tensor exponent: the broadcast walk of ops.h's binary_forward and
 * binary_backward (the row kernels take Add to Div), which adds into both gradients */
static void bpow_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    binary_forward(BINARY_POW, &l->op.view.bc, B, input_of(m, x, l->in), input_of(m, x, l->in2), m->acts + l->out_off);
}

static void bpow_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    binary_backward(BINARY_POW, &l->op.view.bc, B, input_of(m, x, l->in), input_of(m, x, l->in2),
                    m->dacts + m->plan->dact_off[i], dbinary_of(m, l->in), dbinary_of(m, l->in2));
}

static double flops_none(const layer_t *l) { return 0.0; }

/* A view chain's links (the plan's chain): its end copies from the chain's source in one walk
 * and sets the source's gradient (its part) back in one; the links before do nothing. */
static void chain_fwd(model_t *m, int i, const float *x, int B)
{
    const layer_plan_t *lp = model_layer_plan(m, i);
    if (lp->chain == VIEW_CHAIN_RUN)
        view_rows_forward(&lp->chain_bc, lp->chain_off, B, input_of(m, x, lp->chain_src),
                          m->acts + m->layers[i].out_off);
}

static void chain_bwd(model_t *m, int i, int B)
{
    const layer_plan_t *lp = model_layer_plan(m, i);
    if (lp->chain == VIEW_CHAIN_RUN)
        view_rows_backward_set(&lp->chain_bc, lp->chain_off, B, m->dacts + m->plan->dact_off[i],
                               dinput_of(m, lp->chain_src));
}

/* a copy of the contiguous data (the shape is the layer's); the gradient added back, or
 * copied back where this layer sets it */
static void reshape_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    const layer_plan_t *lp = model_layer_plan(m, i);
    if (lp->chain != VIEW_CHAIN_NONE) {
        chain_fwd(m, i, x, B);
        return;
    }
    memcpy(m->acts + l->out_off, input_of(m, x, l->in), out_count(l, B) * sizeof(float));
}

static void reshape_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    const layer_plan_t *lp = model_layer_plan(m, i);
    if (lp->chain != VIEW_CHAIN_NONE) {
        chain_bwd(m, i, B);
        return;
    }
    if (sets_grad(m, l->in, i)) {
        /* the identity view of a sample's floats (one run: view_rows' set) */
        const bcast_desc_t id = {.rank = 2, .dims = {0, (int)out_count(l, 1)}, .sa = {out_count(l, 1), 1}};
        view_rows_backward_set(&id, 0, B, m->dacts + m->plan->dact_off[i], dinput_of(m, l->in));
    } else add_backward(out_count(l, B), m->dacts + m->plan->dact_off[i], dinput_of(m, l->in), NULL);
}

/* Transpose, Slice and Expand: the view (op.view's bc and off) copied out by rows; the gradient
 * added back, or written where this layer sets it (a Transpose only: mark_set_grads) */
static void view_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    const layer_plan_t *lp = model_layer_plan(m, i);
    if (lp->chain != VIEW_CHAIN_NONE) {
        chain_fwd(m, i, x, B);
        return;
    }
    view_rows_forward(&l->op.view.bc, l->op.view.off, B, input_of(m, x, l->in), m->acts + l->out_off);
}

static void view_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    const layer_plan_t *lp = model_layer_plan(m, i);
    if (lp->chain != VIEW_CHAIN_NONE) {
        chain_bwd(m, i, B);
        return;
    }
    (sets_grad(m, l->in, i) ? view_rows_backward_set : view_rows_backward)(&l->op.view.bc, l->op.view.off, B,
                                                                           m->dacts + m->plan->dact_off[i],
                                                                           dinput_of(m, l->in));
}

/* ReduceMean and ReduceSum: the sum over the walk, scaled by 1 / the count summed (mean) */
static float reduce_scale(const layer_t *l, layer_kind_t k)
{
    const size_t in = (size_t)l->C * l->H * l->W, out = (size_t)l->OC * l->OH * l->OW;
    return k == LAYER_REDUCE_MEAN ? 1.0f / (float)(in / out) : 1.0f;
}

static void reduce_fwd(model_t *m, int i, const float *x, int B, layer_kind_t k)
{
    const layer_t *l = &m->layers[i];
    reduce_forward(&l->op.view.bc, B, reduce_scale(l, k), input_of(m, x, l->in), m->acts + l->out_off, out_count(l, B));
}

static void reduce_bwd(model_t *m, int i, const float *x, int B, layer_kind_t k)
{
    const layer_t *l = &m->layers[i];
    reduce_backward(&l->op.view.bc, B, reduce_scale(l, k), m->dacts + m->plan->dact_off[i], dinput_of(m, l->in));
}

OP_STEPS(reduce_mean, reduce, LAYER_REDUCE_MEAN)
OP_STEPS(reduce_sum, reduce, LAYER_REDUCE_SUM)

/* (..., M, K) x (..., K, N): one rank >= 2, the leading axes equal */
static int infer_bmm(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    const int r = in->rank;
    l->shape = *in;
    if (r < 2 || in2->rank != r || in->dims[r - 1] != in2->dims[r - 2]) return -1;
    for (int d = 0; d < r - 2; d++)
        if (in->dims[d] != in2->dims[d]) return -1;
    l->shape.dims[r - 1] = in2->dims[r - 1];
    l->op.bmm.K = in->dims[r - 1];
    return 0;
}

/* The matrices of a LAYER_BMM at batch B: G pairs of (M, K) and (K, N). */
static void bmm_geometry(const layer_t *l, int B, int *G, int *M, int *K, int *N)
{
    const int r = l->shape.rank;
    *G = B;
    for (int d = 0; d < r - 2; d++) *G *= l->shape.dims[d];
    *M = l->shape.dims[r - 2];
    *N = l->shape.dims[r - 1];
    *K = l->op.bmm.K;
}

static void bmm_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    const layer_plan_t *lp = model_layer_plan(m, i);
    int G, M, K, N;
    bmm_geometry(l, B, &G, &M, &K, &N);
    bmm_forward_causal((bmm_causal_t)lp->causal_bmm, G, M, K, N, input_of(m, x, l->in), input_of(m, x, l->in2),
                       m->acts + l->out_off);
}

static void bmm_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    const layer_plan_t *lp = model_layer_plan(m, i);
    int G, M, K, N;
    bmm_geometry(l, B, &G, &M, &K, &N);
    bmm_backward_causal((bmm_causal_t)lp->causal_bmm, G, M, K, N, input_of(m, x, l->in), input_of(m, x, l->in2),
                        m->dacts + m->plan->dact_off[i], dinput_of(m, l->in), sets_grad(m, l->in, i),
                        dinput_of(m, l->in2), sets_grad(m, l->in2, i));
}

/* 2 per multiply-add: each output element is K of them */
static double flops_bmm(const layer_t *l) { return 2.0 * ((double)l->OC * l->OH * l->OW) * l->op.bmm.K; }

/* The input's shape, along (or from) an axis ax it has: Softmax's, LayerNorm's */
static int infer_along(layer_t *l, int ax, const model_shape_t *in)
{
    l->shape = *in;
    return ax < 0 || ax >= in->rank ? -1 : 0;
}

static int infer_softmax(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    return infer_along(l, l->op.softmax.axis, in);
}

static int infer_layernorm(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    return infer_along(l, l->op.norm.axis, in);
}

/* a layer norm's rows' statistics, kept by the forward for the backward (model.c's
 * model_build_layernorm places them after its output) */
static double *ln_stats(const model_t *m, const layer_t *l) { return (double *)(void *)(m->acts + l->aux_off); }

/* Layer norm over the axes op.norm.axis.. to the last: rows of D = size(axis) * inner */
static void layernorm_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    int rows, inner;
    axis_geometry(l, l->op.norm.axis, B, &rows, &inner);
    if (act_bf16(m, i))
        layernorm_forward_saving_bf16(rows, l->shape.dims[l->op.norm.axis] * inner, l->op.norm.eps,
                                      input_of(m, x, l->in), m->params + l->w_off, m->params + l->b_off, act16(m, i),
                                      ln_stats(m, l));
    else
        layernorm_forward_saving(rows, l->shape.dims[l->op.norm.axis] * inner, l->op.norm.eps, input_of(m, x, l->in),
                                 m->params + l->w_off, m->params + l->b_off, m->acts + l->out_off, ln_stats(m, l));
}

static void layernorm_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    int rows, inner;
    axis_geometry(l, l->op.norm.axis, B, &rows, &inner);
    layernorm_backward_saved(rows, l->shape.dims[l->op.norm.axis] * inner, l->op.norm.eps, input_of(m, x, l->in),
                             m->params + l->w_off, ln_stats(m, l), m->dacts + m->plan->dact_off[i],
                             dinput_needed(m, l->in), sets_grad(m, l->in, i), param_grad(m, i, 0), param_grad(m, i, 1));
}

/* Softmax and LogSoftmax along op.softmax.axis: a sample is (outer, n, inner) */
static void softmax_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    int rows, inner;
    axis_geometry(l, l->op.softmax.axis, B, &rows, &inner);
    softmax_axis_forward(l->kind == LAYER_LOG_SOFTMAX, rows, l->shape.dims[l->op.softmax.axis], inner,
                         input_of(m, x, l->in), m->acts + l->out_off);
}

static void softmax_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *dinp = dinput_of(m, l->in);
    int rows, inner;
    axis_geometry(l, l->op.softmax.axis, B, &rows, &inner);
    if (dinp)
        (sets_grad(m, l->in, i) ? softmax_axis_backward_set
                                : softmax_axis_backward)(l->kind == LAYER_LOG_SOFTMAX, rows,
                                                         l->shape.dims[l->op.softmax.axis], inner, m->acts + l->out_off,
                                                         m->dacts + m->plan->dact_off[i], dinp);
}

/* ---- the vision transformers' rows ------------------------------------------------------------ */

/* Expand: the input's axes right-aligned to the target's (l->shape, set by
 * model_build_expand), each equal or 1; the walk reads the input at stride 0 along the
 * axes it is repeated on (the batch too for a batch-less constant: bc.sa[0] 0, from the
 * builder), and its backward adds every copy's gradient back (view_backward's walk, in
 * increasing output order, so the CUDA twin sums in the same order). */
static int infer_expand(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    const int R = l->shape.rank;
    if (in->rank > R) return -1;
    for (int d = 0; d < in->rank; d++) {
        const int x = in->dims[d], y = l->shape.dims[R - in->rank + d];
        if (x != y && x != 1) return -1;
    }
    memset(l->op.view.bc.sb, 0, sizeof l->op.view.bc.sb);
    l->op.view.bc.rank = R + 1;
    l->op.view.bc.dims[0] = 0; /* the batch: given per call */
    for (int d = 0; d < R; d++) l->op.view.bc.dims[d + 1] = l->shape.dims[d];
    bcast_strides(in, R, l->op.view.bc.sa);
    l->op.view.off = 0;
    return 0;
}

/* ---- the table ---------------------------------------------------------------------------- */

/* ---- the language models' rows ------------------------------------------------------------ */

/* the ids' shape with the table's width appended: (T) -> (T, E) */
static int infer_embed(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    l->shape = *in;
    if (in->rank >= MODEL_MAX_RANK) return -1;
    l->shape.dims[in->rank] = l->op.table.shape.dims[1];
    l->shape.rank = in->rank + 1;
    return 0;
}

static size_t embed_rows(const layer_t *l, int B) { return out_count(l, B) / (size_t)l->op.table.shape.dims[1]; }

static void embed_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    embed_forward(embed_rows(l, B), l->op.table.shape.dims[0], l->op.table.shape.dims[1], input_of(m, x, l->in),
                  m->params + l->w_off, m->acts + l->out_off);
}

/* the ids get no gradient; the table's is scatter-added (onto the tied reader's, which ran
 * first) */
static void embed_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *g = param_grad(m, i, 0);
    if (g)
        embed_backward(embed_rows(l, B), l->op.table.shape.dims[0], l->op.table.shape.dims[1], input_of(m, x, l->in),
                       m->dacts + m->plan->dact_off[i], g, l->op.table.tied);
}

/* a copy per row read, no arithmetic */
static double flops_embed(const layer_t *l) { return 0.0; }

/* scores (..., T, T) */
static int infer_causal(layer_t *l, const model_shape_t *in, const model_shape_t *in2)
{
    l->shape = *in;
    return in->rank < 2 || in->dims[in->rank - 1] != in->dims[in->rank - 2] ? -1 : 0;
}

static int causal_T(const layer_t *l) { return l->shape.dims[l->shape.rank - 1]; }
static size_t causal_mats(const layer_t *l, int B)
{
    return out_count(l, B) / ((size_t)causal_T(l) * (size_t)causal_T(l));
}

static void causal_fwd(model_t *m, int i, const float *x, int B, int train)
{
    const layer_t *l = &m->layers[i];
    causal_softmax_forward(causal_mats(l, B), causal_T(l), l->op.softmax.scale, input_of(m, x, l->in),
                           m->acts + l->out_off);
}

static void causal_bwd(model_t *m, int i, const float *x, int B)
{
    const layer_t *l = &m->layers[i];
    float *dinp = dinput_of(m, l->in);
    if (dinp)
        causal_softmax_backward(causal_mats(l, B), causal_T(l), l->op.softmax.scale, m->acts + l->out_off,
                                m->dacts + m->plan->dact_off[i], dinp, sets_grad(m, l->in, i));
}

/* half the matrix: a scale, an exponential and a division per unmasked element */
static double flops_causal(const layer_t *l) { return 1.5 * (double)l->C * l->H * l->W; }

#define IN1 MODEL_OP_GRAD_IN
#define IN12 (MODEL_OP_GRAD_IN | MODEL_OP_GRAD_IN2)
#define OWN MODEL_OP_ONNX_OWN
#define PLAIN MODEL_OP_ONNX_PLAIN
#define P_NONE LAYER_PARAMS_NONE
#define P_CONV LAYER_PARAMS_CONV
#define P_POOL LAYER_PARAMS_POOL
#define P_SC LAYER_PARAMS_SC
#define P_GEMM LAYER_PARAMS_GEMM
#define P_UNARY LAYER_PARAMS_UNARY
#define P_DROPOUT LAYER_PARAMS_DROPOUT
#define P_NORM LAYER_PARAMS_NORM
#define P_VIEW LAYER_PARAMS_VIEW
#define P_SOFTMAX LAYER_PARAMS_SOFTMAX
#define P_CONCAT LAYER_PARAMS_CONCAT
#define P_BMM LAYER_PARAMS_BMM
#define P_TABLE LAYER_PARAMS_TABLE
#define P_CONST LAYER_PARAMS_CONST
#define P_MUL LAYER_PARAMS_MUL

/* clang-format off */
const model_op_t MODEL_OPS[] = {
    /* {kind, name, ONNX import, ONNX export, inputs, gradients, infer_shape, workspace, flops, forward, backward,
     *  converter, parameters} */
    [LAYER_CONV]       = {LAYER_CONV, "conv", "Conv", "Conv", 1, IN1, infer_conv, ws_conv, flops_conv, conv_fwd, conv_bwd, OWN, P_CONV},
    [LAYER_MAXPOOL]    = {LAYER_MAXPOOL, "maxpool", "MaxPool, GlobalMaxPool", "MaxPool", 1, IN1, infer_pool, NULL, flops_pass, maxpool_fwd, maxpool_bwd, OWN, P_POOL},
    [LAYER_AVGPOOL]    = {LAYER_AVGPOOL, "avgpool", "AveragePool, GlobalAveragePool (of a sequence)", "AveragePool", 1, IN1, infer_pool, NULL, flops_pass, avgpool_fwd, avgpool_bwd, OWN, P_POOL},
    [LAYER_RELU]       = {LAYER_RELU, "relu", "Relu", "Relu", 1, IN1, infer_same, NULL, flops_pass, relu_fwd, relu_bwd, OWN, P_NONE},
    [LAYER_FC]         = {LAYER_FC, "fc", "Gemm, MatMul (+ Add)", "Gemm", 1, IN1, infer_fc, NULL, flops_fc, fc_fwd, fc_bwd, OWN, P_GEMM},
    [LAYER_BN]         = {LAYER_BN, "batchnorm", "BatchNormalization", "BatchNormalization", 1, IN1, infer_same, NULL, flops_pass, bn_fwd, bn_bwd, OWN, P_NORM},
    [LAYER_GAP]        = {LAYER_GAP, "global avg pool", "GlobalAveragePool, ReduceMean (axes 2, 3)", "GlobalAveragePool", 1, IN1, infer_gap, NULL, flops_pass, gap_fwd, gap_bwd, OWN, P_NONE},
    [LAYER_ADD]        = {LAYER_ADD, "residual add", "Add", "Add", 2, IN12, infer_add, NULL, flops_pass, add_fwd, add_bwd, OWN, P_SC},
    [LAYER_LEAKY_RELU] = {LAYER_LEAKY_RELU, "leaky relu", "LeakyRelu", "LeakyRelu", 1, IN1, infer_same, NULL, flops_pass, leaky_relu_fwd, leaky_relu_bwd, OWN, P_UNARY},
    [LAYER_SIGMOID]    = {LAYER_SIGMOID, "sigmoid", "Sigmoid", "Sigmoid", 1, IN1, infer_same, NULL, flops_pass, sigmoid_fwd, sigmoid_bwd, OWN, P_NONE},
    [LAYER_TANH]       = {LAYER_TANH, "tanh", "Tanh", "Tanh", 1, IN1, infer_same, NULL, flops_pass, tanh_fwd, tanh_bwd, OWN, P_NONE},
    [LAYER_CONCAT]     = {LAYER_CONCAT, "concat", "Concat, Pad (of its value; reflect, edge)", "Concat", 2, IN12, infer_concat, NULL, flops_pass, concat_fwd, concat_bwd, OWN, P_CONCAT},
    /* the inference form: dropout is exported as the identity */
    [LAYER_DROPOUT]    = {LAYER_DROPOUT, "dropout", "Dropout", "Identity", 1, IN1, infer_same, NULL, flops_pass, dropout_fwd, dropout_bwd, OWN, P_DROPOUT},
    /* exported in opset 13's form: the bounds as constant inputs */
    [LAYER_CLIP]       = {LAYER_CLIP, "clip", "Clip", "Clip", 1, IN1, infer_same, NULL, flops_pass, clip_fwd, clip_bwd, OWN, P_UNARY},
    [LAYER_HARDSIGMOID] = {LAYER_HARDSIGMOID, "hard sigmoid", "HardSigmoid", "HardSigmoid", 1, IN1, infer_same, NULL, flops_pass, hardsigmoid_fwd, hardsigmoid_bwd, OWN, P_UNARY},
    /* opset 13 has no HardSwish: exported as x * HardSigmoid(x), what torch 1.13 writes */
    [LAYER_HARDSWISH]  = {LAYER_HARDSWISH, "hard swish", "HardSwish", "HardSigmoid, Mul", 1, IN1, infer_same, NULL, flops_pass, hardswish_fwd, hardswish_bwd, OWN, P_NONE},
    [LAYER_MUL]        = {LAYER_MUL, "mul", "Mul", "Mul", 2, IN12, infer_mul, NULL, flops_pass, mul_fwd, mul_bwd, OWN, P_MUL},
    /* pacer's own domain: the Python client writes torchvision's StochasticDepth so */
    [LAYER_STOCHASTIC_DEPTH] = {LAYER_STOCHASTIC_DEPTH, "stochastic depth", "ai.pacer:StochasticDepth", "ai.pacer:StochasticDepth", 1, IN1, infer_same, NULL, flops_pass, sdepth_fwd, sdepth_bwd, OWN, P_DROPOUT},
    /* functions of one input: scalar_fn.h's table, on the CPU and the GPU alike */
    [LAYER_EXP]        = {LAYER_EXP, "exp", "Exp", "Exp", 1, IN1, infer_same, NULL, flops_pass, exp_fwd, exp_bwd, PLAIN, P_NONE},
    [LAYER_NEG]        = {LAYER_NEG, "neg", "Neg", "Neg", 1, IN1, infer_same, NULL, flops_pass, neg_fwd, neg_bwd, PLAIN, P_NONE},
    [LAYER_SQRT]       = {LAYER_SQRT, "sqrt", "Sqrt", "Sqrt", 1, IN1, infer_same, NULL, flops_pass, sqrt_fwd, sqrt_bwd, PLAIN, P_NONE},
    [LAYER_RECIPROCAL] = {LAYER_RECIPROCAL, "reciprocal", "Reciprocal", "Reciprocal", 1, IN1, infer_same, NULL, flops_pass, reciprocal_fwd, reciprocal_bwd, PLAIN, P_NONE},
    [LAYER_ABS]        = {LAYER_ABS, "abs", "Abs", "Abs", 1, IN1, infer_same, NULL, flops_pass, abs_fwd, abs_bwd, PLAIN, P_NONE},
    /* the exponent a constant scalar (exported as a 0-D Constant input) */
    [LAYER_POW]        = {LAYER_POW, "pow", "Pow (constant exponent)", "Pow", 1, IN1, infer_same, NULL, flops_pass, pow_fwd, pow_bwd, OWN, P_UNARY},
    /* an initializer (params) or a Constant (buffers) read by a binary operator */
    [LAYER_CONST]      = {LAYER_CONST, "constant", "Constant or initializer operand", "initializer, Constant", 1, IN1, infer_const, NULL, flops_none, const_fwd, const_bwd, OWN, P_CONST},
    /* broadcasting: either input a constant */
    [LAYER_BADD]       = {LAYER_BADD, "broadcast add", "Add (broadcast, constant operand)", "Add", 2, IN12, infer_binary, NULL, flops_pass, badd_fwd, badd_bwd, OWN, P_VIEW},
    [LAYER_SUB]        = {LAYER_SUB, "sub", "Sub", "Sub", 2, IN12, infer_binary, NULL, flops_pass, sub_fwd, sub_bwd, PLAIN, P_VIEW},
    [LAYER_BMUL]       = {LAYER_BMUL, "broadcast mul", "Mul (broadcast, constant operand)", "Mul", 2, IN12, infer_binary, NULL, flops_pass, bmul_fwd, bmul_bwd, OWN, P_VIEW},
    [LAYER_DIV]        = {LAYER_DIV, "div", "Div", "Div", 2, IN12, infer_binary, NULL, flops_pass, div_fwd, div_bwd, OWN, P_VIEW},
    /* data movement; a reshape is a copy of the contiguous data */
    [LAYER_RESHAPE]    = {LAYER_RESHAPE, "reshape", "Reshape, Squeeze, Unsqueeze (non-batch axes)", "Reshape", 1, IN1, infer_reshape, NULL, flops_none, reshape_fwd, reshape_bwd, OWN, P_NONE},
    [LAYER_TRANSPOSE]  = {LAYER_TRANSPOSE, "transpose", "Transpose (the batch axis first)", "Transpose", 1, IN1, infer_transpose, NULL, flops_none, view_fwd, view_bwd, OWN, P_VIEW},
    [LAYER_SLICE]      = {LAYER_SLICE, "slice", "Slice, Split (non-batch axes, constant bounds)", "Slice", 1, IN1, infer_slice, NULL, flops_none, view_fwd, view_bwd, OWN, P_VIEW},
    /* the mean over an image's plane stays LAYER_GAP */
    [LAYER_REDUCE_MEAN] = {LAYER_REDUCE_MEAN, "reduce mean", "ReduceMean (non-batch axes)", "ReduceMean", 1, IN1, infer_reduce, NULL, flops_pass, reduce_mean_fwd, reduce_mean_bwd, OWN, P_VIEW},
    [LAYER_REDUCE_SUM] = {LAYER_REDUCE_SUM, "reduce sum", "ReduceSum (non-batch axes)", "ReduceSum", 1, IN1, infer_reduce, NULL, flops_pass, reduce_sum_fwd, reduce_sum_bwd, OWN, P_VIEW},
    [LAYER_LINEAR] = {LAYER_LINEAR, "linear", "MatMul (+ Add) over the last axis", "MatMul (+ Add)", 1, IN1, infer_linear, NULL, flops_linear, linear_fwd, linear_bwd, OWN, P_GEMM},

    /* the transformers' rows (a kind's value never changes: new kinds come last) */
    [LAYER_SOFTMAX]    = {LAYER_SOFTMAX, "softmax", "Softmax (a non-batch axis)", "Softmax", 1, IN1, infer_softmax, NULL, flops_pass, softmax_fwd, softmax_bwd, OWN, P_SOFTMAX},
    [LAYER_LOG_SOFTMAX] = {LAYER_LOG_SOFTMAX, "log softmax", "LogSoftmax (a non-batch axis)", "LogSoftmax", 1, IN1, infer_softmax, NULL, flops_pass, softmax_fwd, softmax_bwd, OWN, P_SOFTMAX},
    [LAYER_ERF]        = {LAYER_ERF, "erf", "Erf", "Erf", 1, IN1, infer_same, NULL, flops_pass, erf_fwd, erf_bwd, OWN, P_NONE},
    /* opset 13 has no Gelu: exported as torch 1.13 writes it, which the importer matches back */
    [LAYER_GELU]       = {LAYER_GELU, "gelu", "Div, Erf, Add, Mul, Mul (nn.GELU's pattern)", "Div, Erf, Add, Mul, Mul", 1, IN1, infer_same, NULL, flops_pass, gelu_fwd, gelu_bwd, OWN, P_NONE},
    [LAYER_BMM]        = {LAYER_BMM, "matmul", "MatMul (two activations)", "MatMul", 2, IN12, infer_bmm, NULL, flops_bmm, bmm_fwd, bmm_bwd, OWN, P_BMM},
    /* opset 13 has no LayerNormalization: exported as torch 1.13 writes nn.LayerNorm there */
    [LAYER_LAYERNORM]  = {LAYER_LAYERNORM, "layernorm", "LayerNormalization, nn.LayerNorm's ReduceMean .. Add pattern", "ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add", 1, IN1, infer_layernorm, NULL, flops_pass, layernorm_fwd, layernorm_bwd, OWN, P_NORM},
    /* Swin's relative position bias */
    [LAYER_GATHER_PARAM] = {LAYER_GATHER_PARAM, "gather param", "Gather (of a parameter by constant indices)", "Reshape, Gather", 1, IN1, infer_const, NULL, flops_none, gather_param_fwd, gather_param_bwd, OWN, P_TABLE},

    /* the vision transformers' class token */
    /* exported as Expand to (the batch, the sample's shape) */
    [LAYER_EXPAND]     = {LAYER_EXPAND, "expand", "Expand (to the batch, a constant shape)", "Expand", 1, IN1, infer_expand, NULL, flops_none, view_fwd, view_bwd, OWN, P_VIEW},

    /* the language models' rows: built in (model/gpt.c), not imported or exported yet */
    [LAYER_EMBED]      = {LAYER_EMBED, "embedding", "", "Gather", 1, 0, infer_embed, NULL, flops_embed, embed_fwd, embed_bwd, OWN, P_TABLE},
    [LAYER_CAUSAL_SOFTMAX] = {LAYER_CAUSAL_SOFTMAX, "causal softmax", "", "Softmax", 1, IN1, infer_causal, NULL, flops_causal, causal_fwd, causal_bwd, OWN, P_SOFTMAX},
    /* broadcasting like LAYER_BADD; the exponent a constant or an activation */
    [LAYER_BPOW]       = {LAYER_BPOW, "broadcast pow", "Pow (tensor exponent)", "Pow", 2, IN12, infer_binary, NULL, flops_pass, bpow_fwd, bpow_bwd, OWN, P_VIEW},
    /* the input gradient of a convolution: generative image models' upsampling */
    [LAYER_CONV_TRANSPOSE] = {LAYER_CONV_TRANSPOSE, "conv transpose", "ConvTranspose", "ConvTranspose", 1, IN1, infer_conv_transpose, ws_conv_transpose, flops_conv_transpose, convt_fwd, convt_bwd, OWN, P_CONV},
};
/* clang-format on */
/* A kind without a row would leave a zero row here (a designated initializer skipped):
 * test_model's table walk checks every row's kind, name and functions. */
_Static_assert(sizeof MODEL_OPS / sizeof MODEL_OPS[0] == LAYER_KIND_COUNT, "one operator row per layer kind");

size_t model_op_params_bytes(layer_params_t p)
{
    const layer_t *l = NULL;
    switch (p) {
    case LAYER_PARAMS_CONV: return sizeof l->op.conv;
    case LAYER_PARAMS_POOL: return sizeof l->op.pool;
    case LAYER_PARAMS_SC: return sizeof l->op.sc;
    case LAYER_PARAMS_GEMM: return sizeof l->op.gemm;
    case LAYER_PARAMS_UNARY: return sizeof l->op.unary;
    case LAYER_PARAMS_DROPOUT: return sizeof l->op.dropout;
    case LAYER_PARAMS_NORM: return sizeof l->op.norm;
    case LAYER_PARAMS_VIEW: return sizeof l->op.view;
    case LAYER_PARAMS_SOFTMAX: return sizeof l->op.softmax;
    case LAYER_PARAMS_CONCAT: return sizeof l->op.concat;
    case LAYER_PARAMS_BMM: return sizeof l->op.bmm;
    case LAYER_PARAMS_TABLE: return sizeof l->op.table;
    case LAYER_PARAMS_CONST: return sizeof l->op.cnst;
    case LAYER_PARAMS_MUL: return sizeof l->op.mul;
    default: return 0;
    }
}

const model_op_t *model_op(layer_kind_t k) { return (unsigned)k < (unsigned)LAYER_KIND_COUNT ? &MODEL_OPS[k] : NULL; }

size_t model_op_onnx_names(char *buf, size_t len, const char *extra)
{
    size_t n = 0; /* the whole list's length so far, written or not */
    if (len) buf[0] = '\0';
    for (int k = 0; k <= LAYER_KIND_COUNT; k++) {
        const char *s = k < LAYER_KIND_COUNT ? MODEL_OPS[k].onnx_import : extra;
        if (!s || !*s) continue;
        const char *sep = n ? ", " : "";
        if (n < len) snprintf(buf + n, len - n, "%s%s", sep, s);
        n += strlen(sep) + strlen(s);
    }
    return n;
}
