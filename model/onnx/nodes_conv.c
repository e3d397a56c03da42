/* model/onnx/nodes_conv.c - see nodes_conv.h. */
#include "nodes_conv.h"

#include <math.h>
#include <string.h>

#include "nodes_common.h"

/* A list of exactly count ints (default dflt when absent); 0, or -1 with the reason. */
static int attr_ints(imp_t *im, const Onnx__NodeProto *n, const char *name, int count, int dflt, int *out)
{
    const Onnx__AttributeProto *a = imp_attr(n, name);
    for (int i = 0; i < count; i++) out[i] = dflt;
    if (!a) return 0;
    if ((int)a->n_ints != count)
        return imp_fail(im, "node '%s' (%s): attribute %s has %zu values, want %d (one or two per spatial axis)",
                        imp_node_name(n), n->op_type, name, a->n_ints, count);
    for (int i = 0; i < count; i++) {
        if (a->ints[i] < 0 || a->ints[i] > DIM_MAX)
            return imp_fail(im, "node '%s' (%s): attribute %s[%d] = %lld is out of range", imp_node_name(n), n->op_type,
                            name, i, (long long)a->ints[i]);
        out[i] = (int)a->ints[i];
    }
    return 0;
}

/* "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER": 0..3, or -1. */
static int auto_pad(const Onnx__NodeProto *n)
{
    const Onnx__AttributeProto *a = imp_attr(n, "auto_pad");
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
    return imp_fail(im,
                    "node '%s' (%s): auto_pad's padding of a %dx%d kernel (strides %d, %d, dilations %d, %d) is too "
                    "large (more than %lld on a side)",
                    imp_node_name(n), n->op_type, ks[0], ks[1], st[0], st[1], dl[0], dl[1], (long long)DIM_MAX);
}

/* The spatial axes of Conv's and the pools' input x: 2 for images (N, C, H, W), 1 for
 * sequences (N, C, L), which run as images of width 1 (the layer keeps their rank);
 * another rank is refused (0), naming volumes (N, C, D, H, W) too where the caller took
 * them before (Conv, MaxPool, AveragePool: conv_volume, pool_volume). */
static int spatial_axes(imp_t *im, const model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, int volumes)
{
    model_shape_t s;
    char t[96];
    model_build_shape_nd(b, x->layer, &s);
    if (!x->flat && (s.rank == 3 || s.rank == 2)) return s.rank - 1;
    imp_fail(im, "node '%s' (%s): input '%s' is %s%s: %s takes images (N, C, H, W)%s sequences (N, C, L)%s only",
             imp_node_name(n), n->op_type, n->input[0], imp_batch_text(&s, t, sizeof t), x->flat ? " flattened" : "",
             n->op_type, volumes ? "," : " and", volumes ? " and volumes (N, C, D, H, W)" : "");
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

/* li with zeros (zero: a scalar constant 0, expanded) before and after it along sample
 * axis ax of its shape s, which grows by them. */
static int pad_axis(model_builder_t *b, int li, model_shape_t *s, int ax, int before, int after, int zero)
{
    model_shape_t z = *s;
    if (before > 0) {
        z.dims[ax] = before;
        li = model_build_concat_axis(b, model_build_expand(b, zero, &z), li, ax);
    }
    if (after > 0) {
        z.dims[ax] = after;
        li = model_build_concat_axis(b, li, model_build_expand(b, zero, &z), ax);
    }
    s->dims[ax] += before + after;
    return li;
}

/* A convolution of a volume (C, D, H, W) as pacer's 2-D one, the depth gathered into the
 * channels: the input zero-padded along D, and for each tap kd of the kernel's depth the
 * planes kd * dD, kd * dD + sD, ... (OD of them), stacked as (C, KD, OD, H, W), so that
 * the channels (C * KD, c first) are in the order of the weight's (OC, C / group, KD, KH,
 * KW), which the 2-D convolution reads as (OC, C * KD / group, KH, KW) unchanged. The OD
 * planes run as one image (C * KD, OD * H2, W): each plane padded along H to H2 rows (its
 * pads, then up to a multiple of the stride, so every plane's outputs start on a row of
 * their own), the last by the kernel's extent less 1 more. Rows whose window crosses
 * into the next plane are cut off after: (OC, OD, H2 / sH, OW) sliced to OH rows. Exact:
 * each output sums the same products, only in another order. */
static int conv_volume(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int in, const model_shape_t *s,
                       const Onnx__TensorProto *w, const Onnx__TensorProto *bias, int group)
{
    int ks[3], st[3], dl[3], pd[6], zero;
    if (attr_ints(im, n, "kernel_shape", 3, -1, ks) || attr_ints(im, n, "strides", 3, 1, st) ||
        attr_ints(im, n, "dilations", 3, 1, dl) || attr_ints(im, n, "pads", 6, 0, pd))
        return -1;
    const int OC = (int)w->dims[0], KD = (int)w->dims[2], KH = (int)w->dims[3], KW = (int)w->dims[4];
    if ((ks[0] != -1 && (ks[0] != KD || ks[1] != KH || ks[2] != KW)) || auto_pad(n) > 1 || auto_pad(n) < 0 ||
        st[0] < 1 || st[1] < 1 || dl[0] < 1 || dl[1] < 1)
        return imp_fail(im,
                        "node '%s' (Conv): of a volume: kernel_shape the weight's, auto_pad NOTSET or VALID, strides "
                        "and dilations at least 1",
                        imp_node_name(n));
    model_shape_t v = *s;
    const int C = v.dims[0], H = v.dims[2], W = v.dims[3];
    const int64_t Dp = (int64_t)v.dims[1] + pd[0] + pd[3], ext_d = (int64_t)dl[0] * (KD - 1) + 1;
    const int64_t Hp = (int64_t)H + pd[1] + pd[4], ext_h = (int64_t)dl[1] * (KH - 1) + 1;
    if (Dp < ext_d || Hp < ext_h || Dp > DIM_MAX || Hp > DIM_MAX)
        return imp_fail(im, "node '%s' (Conv): geometry gives no output on a %dx%dx%dx%d input", imp_node_name(n), C,
                        v.dims[1], H, W);
    const int OD = (int)((Dp - ext_d) / st[0] + 1), OH = (int)((Hp - ext_h) / st[1] + 1);
    const int H2 = (int)((Hp + st[1] - 1) / st[1] * st[1]);
    if (scalar_constant(im, b, n, n->output[0], "zero", 0.0f, &zero)) return -1;
    int li = pad_axis(b, in, &v, 1, pd[0], pd[3], zero), stack = -1;
    const model_shape_t tap = {.rank = 5, .dims = {C, 1, OD, H, W}};
    for (int kd = 0; kd < KD; kd++) {
        const int t = model_build_reshape(
            b, model_build_slice(b, li, 1, kd * dl[0], kd * dl[0] + (OD - 1) * st[0] + 1, st[0]), &tap);
        stack = kd ? model_build_concat_axis(b, stack, t, 1) : t;
    }
    v = (model_shape_t){.rank = 4, .dims = {C * KD, OD, H, W}};
    li = pad_axis(b, model_build_reshape(b, stack, &v), &v, 2, pd[1], pd[4] + H2 - (int)Hp, zero);
    v = (model_shape_t){.rank = 3, .dims = {C * KD, OD * H2, W}};
    li = pad_axis(b, model_build_reshape(b, li, &v), &v, 1, 0, (int)ext_h - 1, zero);
    const conv2d_desc_t g = {.OC = OC,
                             .KH = KH,
                             .KW = KW,
                             .sH = st[1],
                             .sW = st[2],
                             .pad_l = pd[2],
                             .pad_r = pd[5],
                             .dH = dl[1],
                             .dW = dl[2],
                             .groups = group};
    li = model_build_conv(b, li, &g, bias != NULL, n->input[1], bias ? n->input[2] : NULL);
    int c2, rows, OW;
    model_build_shape(b, li, &c2, &rows, &OW);
    li = model_build_reshape(b, li, &(model_shape_t){.rank = 4, .dims = {OC, OD, H2 / st[1], OW}});
    if (OH < H2 / st[1]) li = model_build_slice(b, li, 2, 0, OH, 1);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (Conv): geometry gives no output on a %dx%dx%dx%d input", imp_node_name(n), C,
                        s->dims[1], H, W);
    return define_output(im, n, li, 0);
}

int do_conv(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad", NULL};
    const value_t *x;
    int sp;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_shape_t vs;
    model_build_shape_nd(b, x->layer, &vs);
    const int volume = vs.rank == 4 && !x->flat && x->kind == V_LAYER;
    if (!volume && !(sp = spatial_axes(im, b, n, x, 1))) return -1;
    if (volume) sp = 3;
    const Onnx__TensorProto *w = imp_input_tensor(im, n, 1), *bias = imp_input_tensor(im, n, 2);
    if (!w || w->n_dims != (size_t)sp + 2 || imp_tensor_count(w) <= 0)
        return imp_fail(im, "node '%s' (Conv): the weight must be a %d-D initializer (OC, C/group, %s)",
                        imp_node_name(n), sp + 2,
                        sp == 3   ? "KD, KH, KW"
                        : sp == 2 ? "KH, KW"
                                  : "K");
    if (n->n_input > 2 && n->input[2][0] && !bias)
        return imp_fail(im, "node '%s' (Conv): the bias must be an initializer", imp_node_name(n));
    if (n->n_input > 3) return imp_fail(im, "node '%s' (Conv): more than 3 inputs", imp_node_name(n));
    if (imp_weight_name_ok(im, n, 1) || (bias && imp_weight_name_ok(im, n, 2))) return -1;
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    int ks[2], st[2], dl[2], pd[4];
    /* bounded before it becomes an int (a group of 2^32 + 1 is not a group of 1) */
    const int64_t group64 = imp_attr_int(n, "group", 1);
    const int group = group64 >= 1 && group64 <= DIM_MAX ? (int)group64 : 0;
    if (volume) {
        C = vs.dims[0];
        if (group < 1 || group > C || (int64_t)w->dims[1] * group != C || w->dims[0] % group != 0 || w->dims[0] < 1 ||
            (bias && (bias->n_dims != 1 || bias->dims[0] != w->dims[0])))
            return imp_fail(im, "node '%s' (Conv): the weight and bias do not fit %d input channels in %lld groups",
                            imp_node_name(n), C, (long long)group64);
        return conv_volume(im, b, n, x->layer, &vs, w, bias, group);
    }
    if (window_attrs(im, n, sp, ks, st, dl, pd)) return -1;
    const int KH = (int)w->dims[2], KW = sp == 2 ? (int)w->dims[3] : 1, OC = (int)w->dims[0];
    if ((ks[0] != -1 && ks[0] != KH) || (ks[1] != -1 && ks[1] != KW))
        return imp_fail(im, "node '%s' (Conv): kernel_shape %dx%d differs from the weight's %dx%d", imp_node_name(n),
                        ks[0], ks[1], KH, KW);
    if (group < 1 || group > C || (int64_t)w->dims[1] * group != C || OC % group != 0)
        return imp_fail(im, "node '%s' (Conv): weight (%d, %lld, %d, %d) with group %lld does not fit %d input channels",
                        imp_node_name(n), OC, (long long)w->dims[1], KH, KW, (long long)group64, C);
    if (bias && (bias->n_dims != 1 || bias->dims[0] != OC))
        return imp_fail(im, "node '%s' (Conv): the bias must have %d elements", imp_node_name(n), OC);
    const int ap = auto_pad(n);
    if (ap < 0) return imp_fail(im, "node '%s' (Conv): unknown auto_pad", imp_node_name(n));
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
        return imp_fail(im, "node '%s' (Conv): geometry gives no output on a %dx%dx%d input", imp_node_name(n), C, H, W);
    return define_output(im, n, li, 0);
}

/* ONNX's pads of one axis from the output size out a ConvTranspose is asked for (its
 * output_shape, or the input's size times the stride under auto_pad SAME_*): the total
 * padding stride * (in - 1) + output padding + the kernel's extent - out, split as ONNX's
 * reference splits it (floor division: a negative total gives the end a negative pad, an
 * output padding, which the output size already holds). -1 when the beginning's would be
 * negative or a pad exceeds DIM_MAX. */
static int convt_pads(int in, int k, int s, int d, int op, int64_t out, int upper, int *begin, int *end)
{
    const int64_t total = (int64_t)s * (in - 1) + op + ((int64_t)k - 1) * d + 1 - out;
    const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
    const int64_t b0 = upper ? half : total - half, e0 = total - b0;
    if (b0 < 0 || b0 > DIM_MAX || e0 > DIM_MAX || out < 1 || out > DIM_MAX) return -1;
    *begin = (int)b0;
    *end = e0 > 0 ? (int)e0 : 0;
    return 0;
}

/* ConvTranspose of images (N, C, H, W) and sequences (N, C, L) -> LAYER_CONV_TRANSPOSE:
 * kernel_shape the weight's, strides, pads, dilations, group, output_padding; or the output
 * size (output_shape, or auto_pad SAME_UPPER / SAME_LOWER: the input's times the stride),
 * the pads following from it. */
int do_conv_transpose(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"kernel_shape", "strides",        "pads",         "dilations", "group",
                                        "auto_pad",     "output_padding", "output_shape", NULL};
    const value_t *x;
    int sp;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    if (x->kind == V_PADDED)
        return imp_fail(im, "node '%s' (ConvTranspose): reads a Pad's channels, which only Add takes", imp_node_name(n));
    if (!(sp = spatial_axes(im, b, n, x, 0))) return -1;
    const Onnx__TensorProto *w = imp_input_tensor(im, n, 1), *bias = imp_input_tensor(im, n, 2);
    if (!w || w->n_dims != (size_t)sp + 2 || imp_tensor_count(w) <= 0)
        return imp_fail(im, "node '%s' (ConvTranspose): the weight must be a %d-D initializer (C, OC/group, %s)",
                        imp_node_name(n), sp + 2, sp == 2 ? "KH, KW" : "K");
    if (n->n_input > 2 && n->input[2][0] && !bias)
        return imp_fail(im, "node '%s' (ConvTranspose): the bias must be an initializer", imp_node_name(n));
    if (n->n_input > 3) return imp_fail(im, "node '%s' (ConvTranspose): more than 3 inputs", imp_node_name(n));
    if (imp_weight_name_ok(im, n, 1) || (bias && imp_weight_name_ok(im, n, 2))) return -1;
    int C, H, W, ks[2], st[2], dl[2], pd[4], op[2] = {0, 0}, os[2] = {0, 0};
    model_build_shape(b, x->layer, &C, &H, &W);
    const int64_t group64 = imp_attr_int(n, "group", 1);
    const int group = group64 >= 1 && group64 <= DIM_MAX ? (int)group64 : 0;
    if (window_attrs(im, n, sp, ks, st, dl, pd) || attr_ints(im, n, "output_padding", sp, 0, op)) return -1;
    const int shape_given = imp_attr(n, "output_shape") != NULL;
    if (shape_given && attr_ints(im, n, "output_shape", sp, 0, os)) return -1;
    const int KH = (int)w->dims[2], KW = sp == 2 ? (int)w->dims[3] : 1;
    if ((ks[0] != -1 && ks[0] != KH) || (ks[1] != -1 && ks[1] != KW))
        return imp_fail(im, "node '%s' (ConvTranspose): kernel_shape %dx%d differs from the weight's %dx%d",
                        imp_node_name(n), ks[0], ks[1], KH, KW);
    if (group < 1 || group > C || w->dims[0] != C || C % group != 0 || w->dims[1] < 1 || w->dims[1] * group64 > DIM_MAX)
        return imp_fail(im,
                        "node '%s' (ConvTranspose): weight (%lld, %lld, %d, %d) with group %lld does not fit %d input "
                        "channels",
                        imp_node_name(n), (long long)w->dims[0], (long long)w->dims[1], KH, KW, (long long)group64, C);
    const int OC = (int)w->dims[1] * group;
    if (bias && (bias->n_dims != 1 || bias->dims[0] != OC))
        return imp_fail(im, "node '%s' (ConvTranspose): the bias must have %d elements", imp_node_name(n), OC);
    const int ap = auto_pad(n);
    if (ap < 0) return imp_fail(im, "node '%s' (ConvTranspose): unknown auto_pad", imp_node_name(n));
    if (ap == 1) pd[0] = pd[1] = pd[2] = pd[3] = 0;
    int OH = 0, OW = 0;
    if (shape_given || ap >= 2) {
        /* the output's size given: the pads follow (ONNX's total padding) */
        const int64_t oh = shape_given ? os[0] : (int64_t)H * st[0], ow = shape_given ? os[1] : (int64_t)W * st[1];
        const int upper = ap == 2;
        if (convt_pads(H, KH, st[0], dl[0], op[0], oh, upper, &pd[0], &pd[2]) ||
            (sp == 2 && convt_pads(W, KW, st[1], dl[1], op[1], ow, upper, &pd[1], &pd[3])))
            return imp_fail(im, "node '%s' (ConvTranspose): an output of %lldx%lld needs pads pacer does not take",
                            imp_node_name(n), (long long)oh, (long long)(sp == 2 ? ow : 1));
        OH = (int)oh;
        OW = sp == 2 ? (int)ow : 1;
    } else {
        /* the size without output padding, plus it (64 bits: each term is bounded) */
        const int64_t oh = (int64_t)st[0] * (H - 1) + op[0] + ((int64_t)KH - 1) * dl[0] + 1 - pd[0] - pd[2];
        const int64_t ow = (int64_t)st[1] * (W - 1) + op[1] + ((int64_t)KW - 1) * dl[1] + 1 - pd[1] - pd[3];
        if (oh < 1 || ow < 1 || oh > DIM_MAX || ow > DIM_MAX)
            return imp_fail(im, "node '%s' (ConvTranspose): geometry gives no output on a %dx%dx%d input",
                            imp_node_name(n), C, H, W);
        OH = (int)oh;
        OW = (int)ow;
    }
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
                             .groups = group,
                             .OH = OH,
                             .OW = OW};
    int li = model_build_conv_transpose(b, x->layer, &g, bias != NULL, n->input[1], bias ? n->input[2] : NULL);
    if (model_build_failed(b))
        return imp_fail(im,
                        "node '%s' (ConvTranspose): no output of %dx%d on a %dx%dx%d input (strides, dilations at least "
                        "1, an output padding below the stride or the dilation)",
                        imp_node_name(n), OH, OW, C, H, W);
    return define_output(im, n, li, 0);
}

/* A pool of a volume (N, C, D, H, W) as two of the 2-D pools, the window being a box: over
 * (H, W) of the (C * D, H, W) planes, then over D of (C, D, OH * OW) with a window (KD, 1),
 * reshaped back to (C, OD, OH, OW). The maximum of the maxima is the maximum, and the
 * average of averages is the average because the taps a window counts (inside the input,
 * or the pads too with count_include_pad) are a box too: their count is the product of
 * each axis's. The pads are given (auto_pad VALID or NOTSET). */
static int pool_volume(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int in, const model_shape_t *s,
                       layer_kind_t kind)
{
    int ks[3], st[3], dl[3], pd[6];
    if (attr_ints(im, n, "kernel_shape", 3, -1, ks) || attr_ints(im, n, "strides", 3, 1, st) ||
        attr_ints(im, n, "dilations", 3, 1, dl) || attr_ints(im, n, "pads", 6, 0, pd))
        return -1;
    if (ks[0] < 1 || ks[1] < 1 || ks[2] < 1)
        return imp_fail(im, "node '%s' (%s): kernel_shape is required", imp_node_name(n), n->op_type);
    if (auto_pad(n) > 1 || auto_pad(n) < 0)
        return imp_fail(im, "node '%s' (%s): auto_pad of a 3-D pool: only NOTSET and VALID are supported",
                        imp_node_name(n), n->op_type);
    const int C = s->dims[0], D = s->dims[1], H = s->dims[2], W = s->dims[3],
              ceil_mode = imp_attr_int(n, "ceil_mode", 0) != 0, cip = imp_attr_int(n, "count_include_pad", 0) != 0;
    const pool2d_desc_t plane = {.KH = ks[1],
                                 .KW = ks[2],
                                 .sH = st[1],
                                 .sW = st[2],
                                 .pad_t = pd[1],
                                 .pad_l = pd[2],
                                 .pad_b = pd[4],
                                 .pad_r = pd[5],
                                 .dH = dl[1],
                                 .dW = dl[2],
                                 .ceil_mode = ceil_mode,
                                 .count_include_pad = cip};
    const pool2d_desc_t depth = {.KH = ks[0],
                                 .KW = 1,
                                 .sH = st[0],
                                 .sW = 1,
                                 .pad_t = pd[0],
                                 .pad_b = pd[3],
                                 .dH = dl[0],
                                 .dW = 1,
                                 .ceil_mode = ceil_mode,
                                 .count_include_pad = cip};
    int li = model_build_reshape(b, in, &(model_shape_t){.rank = 3, .dims = {C * D, H, W}});
    li = model_build_pool(b, kind, li, &plane);
    int c2, OH, OW;
    model_build_shape(b, li, &c2, &OH, &OW);
    li = model_build_pool(b, kind, model_build_reshape(b, li, &(model_shape_t){.rank = 3, .dims = {C, D, OH * OW}}),
                          &depth);
    int c3, OD, one;
    model_build_shape(b, li, &c3, &OD, &one);
    li = model_build_reshape(b, li, &(model_shape_t){.rank = 4, .dims = {C, OD, OH, OW}});
    if (model_build_failed(b))
        return imp_fail(im,
                        "node '%s' (%s): geometry gives no output (or a window of padding only) on a %dx%dx%dx%d input",
                        imp_node_name(n), n->op_type, C, D, H, W);
    return define_output(im, n, li, 0);
}

int do_pool(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind)
{
    const int is_max = kind == LAYER_MAXPOOL;
    static const char *const kmax[] = {"kernel_shape", "strides",       "pads",     "dilations",
                                       "ceil_mode",    "storage_order", "auto_pad", NULL};
    static const char *const kavg[] = {"kernel_shape",      "strides",  "pads", "ceil_mode",
                                       "count_include_pad", "auto_pad", NULL};
    const value_t *x;
    int sp;
    if (imp_check_attrs(im, n, is_max ? kmax : kavg) || imp_input_layer(im, n, 0, &x)) return -1;
    if (is_max && imp_attr_int(n, "storage_order", 0) != 0)
        return imp_fail(im, "node '%s' (MaxPool): storage_order 1 is not supported", imp_node_name(n));
    if (n->n_output > 1 && n->output[1] && n->output[1][0])
        return imp_fail(im, "node '%s' (MaxPool): the Indices output is not supported", imp_node_name(n));
    model_shape_t vs;
    model_build_shape_nd(b, x->layer, &vs);
    if (vs.rank == 4 && !x->flat && x->kind == V_LAYER) return pool_volume(im, b, n, x->layer, &vs, kind);
    if (!(sp = spatial_axes(im, b, n, x, 1))) return -1;
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    int ks[2], st[2], dl[2], pd[4];
    if (window_attrs(im, n, sp, ks, st, dl, pd)) return -1;
    if (ks[0] < 1 || ks[1] < 1)
        return imp_fail(im, "node '%s' (%s): kernel_shape is required", imp_node_name(n), n->op_type);
    const int ap = auto_pad(n);
    if (ap < 0) return imp_fail(im, "node '%s' (%s): unknown auto_pad", imp_node_name(n), n->op_type);
    if (ap > 0 && auto_pads(im, n, ap, H, W, ks, st, dl, pd)) return -1;
    int cip = imp_attr_int(n, "count_include_pad", 0) != 0;
    if (x->kind == V_PADDED) {
        /* zero Pad + AveragePool: the zeros are elements the average counts, which is
         * count_include_pad over the pool's own pads (ops.h); the pool's pads must be 0 */
        if (pd[0] || pd[1] || pd[2] || pd[3] || ap > 0)
            return imp_fail(im, "node '%s' (AveragePool): padded twice (a Pad and its own pads)", imp_node_name(n));
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
                             .ceil_mode = imp_attr_int(n, "ceil_mode", 0) != 0,
                             .count_include_pad = cip};
    int li = model_build_pool(b, is_max ? LAYER_MAXPOOL : LAYER_AVGPOOL, x->layer, &g);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (%s): geometry gives no output (or a window of padding only) on a %dx%dx%d input",
                        imp_node_name(n), n->op_type, C, H, W);
    return define_output(im, n, li, 0);
}

/* Whether every reader of Pad n's output is a Conv, an AveragePool or an Add, which take
 * zero padding in their own geometry (and nothing else reads it, the graph's output neither). */
static int pad_fuses(const imp_t *im, const Onnx__NodeProto *n)
{
    const Onnx__NodeProto *r[8];
    const int k = imp_readers(im, n->output[0], r, 8);
    if (k < 1 || k > 8) return 0;
    for (int i = 0; i < k; i++)
        if (!r[i]->op_type || (strcmp(r[i]->op_type, "Conv") != 0 && strcmp(r[i]->op_type, "AveragePool") != 0 &&
                               strcmp(r[i]->op_type, "Add") != 0))
            return 0;
    return 1;
}

/* Pad's modes: the value's blocks, the input mirrored at its ends (not repeating the end:
 * PyTorch's ReflectionPad), the end repeated (ReplicationPad). */
enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };

/* li padded along sample axis ax of its shape s (which grows) by mode reflect or edge:
 * its elements before .. 1 (reflect, a slice walking down) or its first expanded (edge)
 * before it, and likewise after it. */
static int pad_axis_copy(model_builder_t *b, int li, model_shape_t *s, int ax, int before, int after, int mode)
{
    const int dim = s->dims[ax];
    model_shape_t z = *s;
    int lo = li, hi = li;
    if (before > 0) {
        z.dims[ax] = before;
        lo = mode == PAD_REFLECT ? model_build_slice(b, li, ax, before, 0, -1)
                                 : model_build_expand(b, model_build_slice(b, li, ax, 0, 1, 1), &z);
    }
    if (after > 0) {
        z.dims[ax] = after;
        hi = mode == PAD_REFLECT ? model_build_slice(b, li, ax, dim - 2, dim - 2 - after, -1)
                                 : model_build_expand(b, model_build_slice(b, li, ax, dim - 1, dim, 1), &z);
    }
    if (before > 0) li = model_build_concat_axis(b, lo, li, ax);
    if (after > 0) li = model_build_concat_axis(b, li, hi, ax);
    s->dims[ax] += before + after;
    return li;
}

/* A Pad as layers: along each non-batch axis, the value's blocks before and after
 * (pad_axis), for a reader that takes no padding of its own, or the input's own elements
 * (pad_axis_copy: reflect needs pads below the axis's size, edge an axis not empty). */
static int pad_layers(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, const int64_t *p,
                      int np, float value, int mode)
{
    model_shape_t s;
    model_build_shape_nd(b, x->layer, &s);
    const int R = s.rank + 1;
    if (x->flat || np != 2 * R || p[0] != 0 || p[R] != 0)
        return imp_fail(im, "node '%s' (Pad): pads must be 2 x %d values, none of the batch axis", imp_node_name(n), R);
    int z = -1, li = x->layer;
    if (mode == PAD_CONSTANT && scalar_constant(im, b, n, n->output[0], "value", value, &z)) return -1;
    for (int a = 1; a < R; a++) {
        if (mode == PAD_CONSTANT) {
            li = pad_axis(b, li, &s, a - 1, (int)p[a], (int)p[R + a], z);
            continue;
        }
        const int dim = s.dims[a - 1], lim = mode == PAD_REFLECT ? dim - 1 : dim > 0 ? DIM_MAX : 0;
        if ((p[a] || p[R + a]) && (p[a] > lim || p[R + a] > lim))
            return imp_fail(im, "node '%s' (Pad): pads %lld, %lld of an axis of %d: %s", imp_node_name(n),
                            (long long)p[a], (long long)p[R + a], dim,
                            mode == PAD_REFLECT ? "reflect pads below the axis's size" : "edge pads a non-empty axis");
        li = pad_axis_copy(b, li, &s, a - 1, (int)p[a], (int)p[R + a], mode);
    }
    if (model_build_failed(b)) return imp_fail(im, "node '%s' (Pad): the padded shape is too large", imp_node_name(n));
    return define_output(im, n, li, x->flat);
}

/* Pad's mode attribute: PAD_CONSTANT (the default), PAD_REFLECT, PAD_EDGE, or -1. */
static int pad_mode(const Onnx__NodeProto *n)
{
    static const char *const modes[] = {"constant", "reflect", "edge"};
    const Onnx__AttributeProto *a = imp_attr(n, "mode");
    if (!a || !a->has_s) return PAD_CONSTANT;
    for (int i = 0; i < 3; i++)
        if (a->s.len == strlen(modes[i]) && memcmp(a->s.data, modes[i], a->s.len) == 0) return i;
    return -1;
}

/* Pad: the pads an input (opset 11 on) or an attribute (before), as the value. Zeros on
 * the two spatial dimensions, or on the channels alone, read by Conv, AveragePool or Add
 * (pad_fuses): no layer of its own, the reader pads (V_PADDED); any other padding of
 * non-batch axes (a value, mode reflect or edge): pad_layers. */
int do_pad(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"mode", NULL}, *const known2[] = {"mode", "pads", "value", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, im->opset < 11 ? known2 : known) || imp_input_layer(im, n, 0, &x)) return -1;
    const int mode = pad_mode(n);
    if (mode < 0)
        return imp_fail(im, "node '%s' (Pad): only modes 'constant', 'reflect' and 'edge' are supported",
                        imp_node_name(n));
    const Onnx__TensorProto *val = im->opset < 11 ? NULL : imp_input_tensor(im, n, 2);
    const Onnx__AttributeProto *pa = im->opset < 11 ? imp_attr(n, "pads") : NULL;
    int64_t p[2 * VIEW_AXES];
    int np = 0, sc = 0, zero = 1;
    float value = im->opset < 11 ? imp_attr_float(n, "value", 0.0f) : 0.0f;
    if (pa) {
        np = (int)pa->n_ints;
        for (int i = 0; i < np && i < 2 * VIEW_AXES; i++) p[i] = pa->ints[i];
    }
    /* pads folded from shapes (F.pad's of Swin's windows) read like a constant's */
    if (im->opset < 11 ? !pa || np > 2 * VIEW_AXES : imp_input_ints(im, n, 1, p, &np, &sc) != 0 || sc)
        return imp_fail(im, "node '%s' (Pad): pads must be a constant of at most %d int64 values", imp_node_name(n),
                        2 * VIEW_AXES);
    if (val && (imp_tensor_count(val) != 1 || imp_tensor_floats(im, val, &value, 1)))
        return imp_fail(im, "node '%s' (Pad): the value must be one float", imp_node_name(n));
    if (n->n_input > 2 && n->input[2][0] && !val && im->opset >= 11)
        return imp_fail(im, "node '%s' (Pad): the value must be a constant", imp_node_name(n));
    if (!isfinite(value)) return imp_fail(im, "node '%s' (Pad): the value must be finite", imp_node_name(n));
    for (int i = 0; i < np; i++) {
        zero &= p[i] == 0;
        if (p[i] < 0 || p[i] > DIM_MAX) return imp_fail(im, "node '%s' (Pad): negative or huge pads", imp_node_name(n));
    }
    if (zero && x->kind == V_LAYER) return define_output(im, n, x->layer, x->flat); /* no padding: the identity */
    if (x->kind == V_PADDED)
        return imp_fail(im, "node '%s' (Pad): two Pads in a row are not supported", imp_node_name(n));
    if (value != 0.0f || mode != PAD_CONSTANT || !pad_fuses(im, n)) return pad_layers(im, b, n, x, p, np, value, mode);
    if (np != 8) return imp_fail(im, "node '%s' (Pad): pads must be a constant of 8 int64 values", imp_node_name(n));
    /* (N, C, H, W): begins p[0..3], ends p[4..7]. Channels are padded only on their own,
     * for an Add to read (the option-A shortcut of a CIFAR ResNet, as pacer exports
     * resnet20: model.h's LAYER_ADD) */
    const int chan = p[1] || p[5];
    if (p[0] || p[4] || (chan && (p[2] || p[3] || p[6] || p[7])))
        return imp_fail(
            im, "node '%s' (Pad): padding of the batch dimension, or of channels and pixels at once, is not supported",
            imp_node_name(n));
    value_t *v = imp_add_value(im, n->output[0], V_PADDED);
    if (!v) return imp_fail(im, "out of memory");
    v->layer = x->layer;
    v->pads[0] = (int)p[2], v->pads[1] = (int)p[3], v->pads[2] = (int)p[6], v->pads[3] = (int)p[7];
    v->cpads[0] = (int)p[1], v->cpads[1] = (int)p[5];
    return 0;
}

/* GlobalAveragePool of an image -> LAYER_GAP (its kernels are the plane's mean); of a
 * sequence (N, C, L), and GlobalMaxPool of either, -> the pool whose one window is the whole
 * plane (L x 1 for a sequence, as the pools run it): the output (N, C, 1, 1) or (N, C, 1). */
int do_global_pool(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    int sp;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x) || !(sp = spatial_axes(im, b, n, x, 0)))
        return -1;
    if (kind == LAYER_AVGPOOL && sp == 2) return define_output(im, n, model_build_gap(b, x->layer), 0);
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    const pool2d_desc_t g = {.KH = H, .KW = W, .sH = 1, .sW = 1, .dH = 1, .dW = 1};
    const int li = model_build_pool(b, kind, x->layer, &g);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (%s): no pool over a %dx%dx%d input", imp_node_name(n), n->op_type, C, H, W);
    return define_output(im, n, li, 0);
}
