/* model/onnx/nodes_shape.c - see nodes_shape.h. */
#include "nodes_shape.h"

#include <stdio.h>
#include <string.h>

#include "onnx_import.h"
#include "fold.h"
#include "view.h"
#include "nodes_common.h"

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
    return imp_fail(im, "node '%s' (Reshape): the shape %s overflows (its product is beyond 2^62)", imp_node_name(n),
                    ints_text(sh, nsh, t, sizeof t));
}

/* Reshape to (batch, -1): a constant shape [0 or -1 or the batch, -1 or C*H*W]. */
int do_reshape(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"allowzero", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    /* allowzero = 1: a 0 after the batch is a dimension of 0 (an empty tensor), not a copy
     * of the input's axis; the batch itself cannot be empty */
    const int allowzero = imp_attr_int(n, "allowzero", 0) != 0;
    int64_t sh[INTS_MAX];
    int nsh = 0, ssh;
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    const int64_t flat = (int64_t)C * H * W;
    const int batch0 = imp_input_ints(im, n, 1, sh, &nsh, &ssh) == 0 && nsh >= 1 && nsh <= 1 + MODEL_MAX_RANK &&
                       (is_batch(sh[0]) || (sh[0] == 0 && !allowzero) || sh[0] == -1 ||
                        (im->batch_dim > 0 && sh[0] == im->batch_dim));
    if (!batch0 && im->batch_dim > 0 && nsh >= 1)
        /* torch folded the example input's batch into the shape (Swin's B * windows) */
        return imp_fail(im,
                        "node '%s' (Reshape): the shape's first value %lld is a constant that is not the batch: the "
                        "file fixes the batch to %d, so the shape no longer says which axis holds it; export with a "
                        "dynamic batch (torch.onnx.export(..., dynamic_axes={'%.64s': {0: 'N'}}))",
                        imp_node_name(n), (long long)sh[0], im->batch_dim, im->input ? im->input : "input");
    if (!batch0)
        return imp_fail(im,
                        "node '%s' (Reshape): the shape must be a constant of 1 to %d values whose first is the batch "
                        "(the batch, 0 or -1)",
                        imp_node_name(n), 1 + MODEL_MAX_RANK);
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
        if (v == 0 && !allowzero && !x->flat && d + 1 - L < in.rank) v = in.dims[d + 1 - L];
        if (v == -1 && infer < 0 && k != -1 && !allowzero) infer = d;
        else if (v < (allowzero ? 0 : 1) || v > DIM_MAX)
            return imp_fail(im,
                            "node '%s' (Reshape): dimension %d of the shape is %lld (at most one -1, 0 only where the "
                            "input has that axis, and no -1 with a -1 batch)",
                            imp_node_name(n), d + 1, (long long)sh[d + 1]);
        else if (model_dim_mul(prod, v, &prod) != 0) return reshape_overflows(im, n, sh, nsh);
        else dims[d] = v;
        if (prod > flat && !allowzero) break; /* allowzero: a later 0 may empty it */
    }
    /* prod 0 (an empty shape) leaves nothing to infer a -1 from */
    if (k == -1 && prod > 0 && prod <= flat && flat % prod == 0) k = flat / prod, prod = flat;
    else if (k >= 1 && prod <= flat) {
        if (model_dim_mul(prod, k, &prod) != 0) return reshape_overflows(im, n, sh, nsh);
        if (infer >= 0 && prod > 0 && prod <= flat && flat % prod == 0) dims[infer] = flat / prod, prod = flat;
    }
    if (prod != flat)
        return imp_fail(im, "node '%s' (Reshape): the shape does not hold the input's %lld elements per sample",
                        imp_node_name(n), (long long)flat);
    to.rank = rest + (k > 1);
    if (to.rank > MODEL_MAX_RANK)
        return imp_fail(im,
                        "node '%s' (Reshape): a sample of rank %d (the batch axis holding %lld of its elements; at "
                        "most %d)",
                        imp_node_name(n), to.rank, (long long)k, MODEL_MAX_RANK);
    if (k > 1) to.dims[0] = (int)k;
    for (int d = 0; d < rest; d++) to.dims[d + (k > 1)] = (int)dims[d];
    if (define_output(im, n, model_build_reshape(b, x->layer, &to), 0)) return -1;
    im->vals[im->nvals - 1].lead = k > 1;
    return 0;
}

/* Shape, Gather, Unsqueeze and Concat on small int vectors (the exporter's shape arithmetic);
 * 1 when n is not such a node. */
int do_shape_op(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL}, *const axis[] = {"axis", NULL}, *const axes[] = {"axes", NULL};
    const char *op = n->op_type;
    int64_t a[INTS_MAX], r[INTS_MAX];
    int na, sa;
    if (strcmp(op, "Shape") == 0) {
        const value_t *x = n->n_input == 1 ? imp_find_value(im, n->input[0]) : NULL;
        if (x && x->kind == V_INTS) {
            /* of a shape vector: its length (torch's expand(n, -1, -1)) */
            const int64_t len = x->nints;
            return imp_check_attrs(im, n, none) ? -1 : imp_define_ints(im, n, &len, x->scalar ? 0 : 1, 0);
        }
        if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
        int C, H, W;
        model_shape_t s;
        model_build_shape(b, x->layer, &C, &H, &W);
        model_build_shape_nd(b, x->layer, &s);
        int64_t sh[1 + MODEL_MAX_RANK] = {BATCH, (int64_t)C * H * W};
        if (x->flat) return imp_define_ints(im, n, sh, 2, 0);
        if (x->defer)
            return imp_fail(im, "node '%s' (Shape): of a Transpose that moves the batch axis", imp_node_name(n));
        for (int d = 0; d < s.rank; d++) sh[1 + d] = s.dims[d];
        if (x->lead) sh[1] = batch_times(s.dims[0]); /* (N * k, ...) */
        return imp_define_ints(im, n, sh + x->lead, 1 + s.rank - x->lead, 0);
    }
    if (strcmp(op, "Gather") == 0) {
        int64_t idx[INTS_MAX];
        int ni, si;
        if (imp_check_attrs(im, n, axis) || imp_attr_int(n, "axis", 0) != 0 || imp_input_sym(im, n, 0, a, &na, &sa) ||
            imp_input_ints(im, n, 1, idx, &ni, &si) || sa)
            return imp_fail(im, "node '%s' (Gather): only gathering from a constant or a Shape is supported",
                            imp_node_name(n));
        for (int i = 0; i < ni; i++) {
            int64_t k = idx[i] < 0 ? idx[i] + na : idx[i];
            if (k < 0 || k >= na)
                return imp_fail(im, "node '%s' (Gather): index %lld out of range", imp_node_name(n), (long long)idx[i]);
            r[i] = a[k];
        }
        return imp_define_ints(im, n, r, ni, si);
    }
    if (strcmp(op, "Unsqueeze") == 0) {
        /* axes: an attribute up to opset 12, an input from 13 */
        int64_t ax[INTS_MAX];
        int nx = 0, sx;
        const Onnx__AttributeProto *at = imp_attr(n, "axes");
        if (imp_check_attrs(im, n, axes) || imp_input_sym(im, n, 0, a, &na, &sa)) return 1;
        if (at && at->n_ints == 1) ax[0] = at->ints[0], nx = 1;
        else if (!at && imp_input_ints(im, n, 1, ax, &nx, &sx) != 0) nx = 0;
        if (!sa || nx != 1 || ax[0] != 0)
            return imp_fail(im, "node '%s' (Unsqueeze): only a scalar to a 1-element vector is supported",
                            imp_node_name(n));
        return imp_define_ints(im, n, a, 1, 0);
    }
    if (strcmp(op, "Reshape") == 0) {
        /* of a shape vector to one axis ([-1] or its length; torch's x.expand(n, -1, -1)
         * writes one) or of a 1-element one to a scalar: the same values */
        static const char *const known[] = {"allowzero", NULL};
        int64_t t[INTS_MAX];
        int nt, st;
        if (imp_input_sym(im, n, 0, a, &na, &sa) != 0) return 1;
        if (imp_check_attrs(im, n, known) || imp_input_ints(im, n, 1, t, &nt, &st) != 0 || nt > 1 ||
            (nt == 1 && t[0] != -1 && t[0] != na) || (nt == 0 && na != 1))
            return imp_fail(im,
                            "node '%s' (Reshape): of a shape vector: only to one axis ([-1] or its length) is folded",
                            imp_node_name(n));
        return imp_define_ints(im, n, a, na, nt == 0);
    }
    if (strcmp(op, "Cast") == 0) {
        /* of ints (the exporter's shape arithmetic casts them to int64): the same values */
        static const char *const to[] = {"to", NULL};
        if (imp_check_attrs(im, n, to) || imp_input_sym(im, n, 0, a, &na, &sa) != 0) return 1;
        return imp_define_ints(im, n, a, na, sa);
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
            if (imp_input_sym(im, n, i, a, &na, &sa) != 0) return 1; /* not int vectors: not this kind of Concat */
            if (sa || total + na > INTS_MAX)
                return imp_fail(im, "node '%s' (Concat): a shape of more than %d values", imp_node_name(n), INTS_MAX);
            memcpy(r + total, a, (size_t)na * sizeof *a);
            total += na;
        }
        if (imp_check_attrs(im, n, axis) || imp_attr_int(n, "axis", 0) != 0)
            return imp_fail(im, "node '%s' (Concat): shape vectors join along axis 0", imp_node_name(n));
        return imp_define_ints(im, n, r, total, 0);
    }
    return 1;
}

/* The axes of n (an attribute up to opset 12, input 1 from 13) as non-batch axes of a
 * sample of rank r (ONNX's axis a of the batch tensor is the sample's a - 1; negative ones
 * count from the end of rank r + 1); sorted flags in *mask. 0, or -1 with the reason. */
static int sample_axes(imp_t *im, const Onnx__NodeProto *n, int r, unsigned *mask)
{
    int64_t ax[INTS_MAX];
    int na = 0, sa;
    const Onnx__AttributeProto *at = imp_attr(n, "axes");
    *mask = 0;
    if (at) {
        if (at->n_ints > INTS_MAX) return imp_fail(im, "node '%s' (%s): too many axes", imp_node_name(n), n->op_type);
        for (size_t i = 0; i < at->n_ints; i++) ax[na++] = at->ints[i];
    } else if (n->n_input > 1 && n->input[1][0] && imp_input_ints(im, n, 1, ax, &na, &sa) != 0)
        return imp_fail(im, "node '%s' (%s): axes must be a constant", imp_node_name(n), n->op_type);
    for (int i = 0; i < na; i++) {
        const int64_t a = ax[i] < 0 ? ax[i] + r + 1 : ax[i];
        if (a == 0) return imp_fail(im, "node '%s' (%s): axis 0 is the batch axis", imp_node_name(n), n->op_type);
        if (a < 1 || a > r || (*mask & (1u << (a - 1))))
            return imp_fail(im, "node '%s' (%s): axis %lld is out of range or repeated", imp_node_name(n), n->op_type,
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
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &in);
    if (x->flat) {
        int C, H, W;
        model_build_shape(b, x->layer, &C, &H, &W);
        in = (model_shape_t){.rank = 1, .dims = {C * H * W}};
    }
    if (unsqueeze) {
        /* the axes count in the output's rank */
        const Onnx__AttributeProto *at = imp_attr(n, "axes");
        int64_t ax[INTS_MAX];
        int na = 0, sa;
        if (at) na = (int)at->n_ints;
        else if (imp_input_ints(im, n, 1, ax, &na, &sa) != 0) na = 0;
        if (sample_axes(im, n, in.rank + na, &mask)) return -1;
        to.rank = in.rank + na;
        if (na < 1 || to.rank > MODEL_MAX_RANK)
            return imp_fail(im, "node '%s' (Unsqueeze): %d axes on a sample of rank %d (at most %d)", imp_node_name(n),
                            na, in.rank, MODEL_MAX_RANK);
        for (int d = 0, k = 0; d < to.rank; d++) to.dims[d] = (mask & (1u << d)) ? 1 : in.dims[k++];
    } else {
        if (sample_axes(im, n, in.rank, &mask)) return -1;
        for (int d = 0; d < in.rank; d++) {
            const int drop = mask ? (mask >> d) & 1 : in.dims[d] == 1;
            if (drop && in.dims[d] != 1)
                return imp_fail(im, "node '%s' (Squeeze): axis %d has %d elements, not 1", imp_node_name(n), d + 1,
                                in.dims[d]);
            if (!drop) to.dims[to.rank++] = in.dims[d];
        }
    }
    return define_output(im, n, model_build_reshape(b, x->layer, &to), 0);
}

/* Transpose of the non-batch axes (perm[0] = 0). */
int do_transpose(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"perm", NULL};
    const value_t *x;
    model_shape_t in;
    const Onnx__AttributeProto *a = imp_attr(n, "perm");
    const Onnx__TensorProto *t = imp_input_tensor(im, n, 0);
    if (t && t->n_dims == 2 && imp_check_attrs(im, n, known) == 0) {
        /* of a 2-D initializer: an (OUT, IN) weight for the MatMul that reads it */
        if (a && (a->n_ints != 2 || a->ints[0] != 1 || a->ints[1] != 0))
            return imp_fail(im, "node '%s' (Transpose): of an initializer: only a 2-D one's perm (1, 0)",
                            imp_node_name(n));
        if (imp_weight_name_ok(im, n, 0)) return -1; /* the name the MatMul's layer gives the weight */
        value_t *v = imp_add_value(im, n->output[0], V_TENSOR);
        if (!v) return imp_fail(im, "out of memory");
        v->tensor = t;
        v->transposed = 1;
        v->weight = n->input[0];
        return 0;
    }
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &in);
    const int L = x->lead ? 0 : 1, R = in.rank + L; /* the graph's rank; its axis q is the sample's q - L */
    if (a && (int)a->n_ints == R && x->lead && !x->flat && !x->defer && a->ints[0] != 0) {
        /* qkv.permute(2, 0, 3, 1, 4) of a lead value: moves the batch axis; left to the
         * Gathers on axis 0 that read it (do_gather), each of which takes one index of axis
         * perm[0] (any other such Transpose is a view: view_node) */
        unsigned seen = 0;
        for (int d = 0; d < R; d++) {
            if (a->ints[d] < 0 || a->ints[d] >= R || (seen >> a->ints[d]) & 1)
                return imp_fail(im, "node '%s' (Transpose): perm is not a permutation", imp_node_name(n));
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
        return imp_fail(im,
                        "node '%s' (Transpose): perm must name the %d axes with the batch axis first (a perm that "
                        "moves the batch axis of an input not flattened is read as a view)",
                        imp_node_name(n), R);
    int perm[MODEL_MAX_RANK];
    for (int d = 0; d < in.rank; d++)
        perm[d] = a->ints[d + L] >= L && a->ints[d + L] < R ? (int)a->ints[d + L] - L : -1;
    const int li = model_build_transpose(b, x->layer, perm);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (Transpose): perm is not a permutation", imp_node_name(n));
    return define_output(im, n, li, 0);
}

/* Slice with constant starts, ends, axes and steps (not 0; a negative one walks down) of
 * non-batch axes: one LAYER_SLICE per axis. */
int do_slice(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    int64_t v[4][INTS_MAX];
    int cnt[4] = {0, 0, 0, 0}, sc;
    model_shape_t s;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    for (int i = 0; i < 4; i++)
        if ((size_t)i + 1 < n->n_input && n->input[i + 1][0] &&
            imp_input_ints(im, n, (size_t)i + 1, v[i], &cnt[i], &sc) != 0)
            return imp_fail(im, "node '%s' (Slice): starts, ends, axes and steps must be constants", imp_node_name(n));
    if (cnt[0] < 1 || cnt[1] != cnt[0] || (cnt[2] && cnt[2] != cnt[0]) || (cnt[3] && cnt[3] != cnt[0]) || x->flat)
        return imp_fail(im, "node '%s' (Slice): starts, ends, axes and steps of one length are required",
                        imp_node_name(n));
    int li = x->layer;
    for (int k = 0; k < cnt[0]; k++) {
        model_build_shape_nd(b, li, &s);
        const int64_t ax = cnt[2] ? (v[2][k] < 0 ? v[2][k] + s.rank + 1 : v[2][k]) : k, step = cnt[3] ? v[3][k] : 1;
        if (ax < 1 || ax > s.rank || step == 0)
            return imp_fail(im,
                            "node '%s' (Slice): axis %lld step %lld: only non-batch axes and steps not 0 are supported",
                            imp_node_name(n), (long long)ax, (long long)step);
        const int dim = s.dims[ax - 1];
        const int64_t st = slice_bound_step(v[0][k], dim, step), en = slice_bound_step(v[1][k], dim, step);
        if (step > DIM_MAX || step < -DIM_MAX)
            return imp_fail(im, "node '%s' (Slice): step %lld: outside +-%lld", imp_node_name(n), (long long)step,
                            (long long)DIM_MAX);
        /* bounds that cross are an empty slice: a dimension of 0 (import_model refuses one
         * in a model to train) */
        li = model_build_slice(b, li, (int)ax - 1, (int)st, (int)((step > 0 ? st >= en : st <= en) ? st : en),
                               (int)step);
    }
    return define_output(im, n, li, 0);
}

/* Split of a non-batch axis: sizes from the input (opset 13) or the attribute, or equal;
 * output i a LAYER_SLICE. */
int do_split(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", "split", NULL};
    const value_t *x;
    model_shape_t s;
    int64_t sz[INTS_MAX];
    int ns = 0, sc;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &s);
    int64_t ax = imp_attr_int(n, "axis", 0);
    if (ax < 0) ax += s.rank + 1;
    /* a flat value of one axis is that axis (a Reshape to (N, k) of a sample of k) */
    if (ax < 1 || ax > s.rank || (x->flat && s.rank != 1) || n->n_output < 1 || n->n_output > INTS_MAX)
        return imp_fail(im, "node '%s' (Split): axis %lld: only a non-batch axis into 1 to %d outputs is supported",
                        imp_node_name(n), (long long)imp_attr_int(n, "axis", 0), INTS_MAX);
    const int dim = s.dims[ax - 1];
    const Onnx__AttributeProto *a = imp_attr(n, "split");
    if (a && a->n_ints <= INTS_MAX)
        for (size_t i = 0; i < a->n_ints; i++) sz[ns++] = a->ints[i];
    else if (n->n_input > 1 && n->input[1][0] && imp_input_ints(im, n, 1, sz, &ns, &sc) != 0)
        return imp_fail(im, "node '%s' (Split): split must be a constant", imp_node_name(n));
    if (!ns) {
        ns = (int)n->n_output;
        for (int i = 0; i < ns; i++) sz[i] = dim / ns;
    }
    /* each size in [0, dim] before any is summed: sizes of 2^63 - 1 must not wrap to dim (a
     * size of 0 is an empty part) */
    int64_t total = 0;
    for (int i = 0; i < ns; i++)
        if (sz[i] < 0 || sz[i] > dim)
            return imp_fail(im, "node '%s' (Split): size %d is %lld, not in [0, %d] (the axis)", imp_node_name(n), i,
                            (long long)sz[i], dim);
        else total += sz[i];
    if (ns != (int)n->n_output || total != dim)
        return imp_fail(im, "node '%s' (Split): %d sizes for %zu outputs do not split the axis of %d", imp_node_name(n),
                        ns, n->n_output, dim);
    int off = 0;
    for (int i = 0; i < ns; i++) {
        const int li = model_build_slice(b, x->layer, (int)ax - 1, off, off + (int)sz[i], 1);
        off += (int)sz[i];
        if (!n->output[i][0]) continue;
        value_t *v = imp_add_value(im, n->output[i], V_LAYER);
        if (!v) return imp_fail(im, "out of memory");
        v->layer = li;
    }
    return 0;
}

/* ReduceMean and ReduceSum over non-batch axes (attribute axes, or input 1 from opset 13
 * for ReduceSum and 18 for ReduceMean) -> LAYER_REDUCE_*; the mean over an image's plane
 * (axes 2 and 3, or -2 and -1: torch's x.mean([2, 3]), as MNASNet ends) stays a global
 * average pool, keepdims 0 leaving (N, C) flat. */
int do_reduce(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axes", "keepdims", "noop_with_empty_axes", NULL};
    const int mean = n->op_type[6] == 'M';
    const value_t *x;
    model_shape_t in;
    unsigned mask;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &in);
    if (x->flat && in.rank != 1)
        return imp_fail(im, "node '%s' (%s): of a flattened input (Flatten, Reshape to (N, -1)): not supported",
                        imp_node_name(n), n->op_type);
    if (sample_axes(im, n, in.rank, &mask)) return -1;
    const int keep = imp_attr_int(n, "keepdims", 1) != 0;
    if (!mask && imp_attr_int(n, "noop_with_empty_axes", 0)) return define_output(im, n, x->layer, x->flat);
    if (!mask)
        return imp_fail(im,
                        "node '%s' (%s): no axes: the reduction over every axis, the batch axis too, is not supported",
                        imp_node_name(n), n->op_type);
    if (mean && in.rank == 3 && !x->flat && mask == 6u)
        return define_output(im, n, model_build_gap(b, x->layer), !keep);
    return define_output(im, n,
                         model_build_reduce(b, mean ? LAYER_REDUCE_MEAN : LAYER_REDUCE_SUM, x->layer, mask, keep), 0);
}

/* Gather on axis 0 of a Transpose that moved the batch axis (x->defer; q, k, v = qkv[0],
 * qkv[1], qkv[2] after Swin's qkv.permute(2, 0, 3, 1, 4)): the element of the source's
 * axis perm[0] (a LAYER_SLICE and a LAYER_RESHAPE without it), then the rest of perm, which
 * must bring the batch axis first (a LAYER_TRANSPOSE). */
static int gather_deferred(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x,
                           const model_shape_t *s, int64_t index, int scalar)
{
    const int L = x->lead ? 0 : 1, R = s->rank + L, q = x->perm[0];
    if (imp_attr_int(n, "axis", 0) != 0 || !scalar || x->perm[1] != 0 || q - L < 0 || R < 3)
        return imp_fail(im,
                        "node '%s' (Gather): of a Transpose that moves the batch axis: one index on axis 0, the batch "
                        "axis then first",
                        imp_node_name(n));
    const int ax = q - L, dim = s->dims[ax];
    const int64_t k = index < 0 ? index + dim : index;
    if (k < 0 || k >= dim)
        return imp_fail(im, "node '%s' (Gather): index %lld is out of range for an axis of %d", imp_node_name(n),
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
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (Gather): of a Transpose: not supported", imp_node_name(n));
    if (define_output(im, n, li, 0)) return -1;
    im->vals[im->nvals - 1].lead = x->lead;
    im->vals[im->nvals - 1].defer = 0;
    return 0;
}

/* Gather's indices (input 1 of n): a constant of at most INTS_MAX integers, of any rank
 * (its dimensions in idims[0..*irank)); their count, or -1. */
static int gather_indices(imp_t *im, const Onnx__NodeProto *n, int64_t *idx, int64_t *idims, int *irank)
{
    int ni, scalar;
    if (n->n_input != 2) return -1;
    if (imp_input_ints(im, n, 1, idx, &ni, &scalar) == 0) {
        *irank = scalar ? 0 : 1;
        idims[0] = ni;
        return ni;
    }
    const Onnx__TensorProto *t = imp_input_tensor(im, n, 1);
    if (!t || t->n_dims > MODEL_MAX_RANK || (ni = imp_tensor_ints(t, idx, INTS_MAX)) < 1) return -1;
    *irank = (int)t->n_dims;
    for (size_t d = 0; d < t->n_dims; d++) idims[d] = t->dims[d];
    return ni;
}

/* Gather of an activation along a non-batch axis by constant indices (ViT's class token,
 * x[:, 0]: one scalar index; or a list of any shape): a LAYER_SLICE of each element, joined
 * by LAYER_CONCATs along the axis, and a LAYER_RESHAPE putting the indices' shape in place
 * of the axis where it is not one axis. Gather of shapes is do_shape_op's. */
int do_gather(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", NULL};
    const value_t *x;
    int64_t idx[INTS_MAX], idims[MODEL_MAX_RANK];
    int irank = 0, ni;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    if ((ni = gather_indices(im, n, idx, idims, &irank)) < 1)
        return imp_fail(im, "node '%s' (Gather): the indices of an activation must be a constant of 1 to %d integers",
                        imp_node_name(n), INTS_MAX);
    model_shape_t s;
    seen_shape(b, x, &s);
    if (x->defer) {
        if (ni != 1) return imp_fail(im, "node '%s' (Gather): of a Transpose: one index only", imp_node_name(n));
        return gather_deferred(im, b, n, x, &s, idx[0], irank == 0);
    }
    if (x->lead)
        return imp_fail(im, "node '%s' (Gather): of a value whose batch axis holds several of the sample's elements",
                        imp_node_name(n));
    const int64_t given = imp_attr_int(n, "axis", 0), ax = given < 0 ? given + s.rank + 1 : given;
    if (ax < 1 || ax > s.rank)
        return imp_fail(im, "node '%s' (Gather): axis %lld: only a non-batch axis (1 to %d) is supported",
                        imp_node_name(n), (long long)given, s.rank);
    if (s.rank - 1 + irank > MODEL_MAX_RANK)
        return imp_fail(im, "node '%s' (Gather): an output of more than %d axes per sample", imp_node_name(n),
                        MODEL_MAX_RANK);
    const int dim = s.dims[ax - 1], src = as_seen(b, x, &s);
    int li = -1;
    for (int j = 0; j < ni; j++) {
        const int64_t k = idx[j] < 0 ? idx[j] + dim : idx[j];
        if (k < 0 || k >= dim)
            return imp_fail(im, "node '%s' (Gather): index %lld is out of range for an axis of %d", imp_node_name(n),
                            (long long)idx[j], dim);
        const int one = model_build_slice(b, src, (int)ax - 1, (int)k, (int)k + 1, 1);
        li = j ? model_build_concat_axis(b, li, one, (int)ax - 1) : one;
    }
    if (irank != 1) {
        model_shape_t to = {.rank = s.rank - 1 + irank};
        for (int d = 0, o = 0; d < s.rank; d++)
            if (d != ax - 1) to.dims[o++] = s.dims[d];
            else
                for (int q = 0; q < irank; q++) to.dims[o++] = (int)idims[q];
        li = model_build_reshape(b, li, &to);
    }
    return define_output(im, n, li, 0);
}

/* Expand of a constant or an activation to a shape whose first axis is the batch (N; 1 or
 * N for an activation): a LAYER_EXPAND of a LAYER_CONST or of the activation (the class
 * token: class_token.expand(N, -1, -1), torch's Shape .. Where arithmetic folded). */
int do_expand(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    int64_t sh[INTS_MAX];
    int nsh, ssh, li;
    if (imp_check_attrs(im, n, none)) return -1;
    if (n->n_input != 2 || imp_input_ints(im, n, 1, sh, &nsh, &ssh) != 0 || ssh || nsh < 1 || nsh > 1 + MODEL_MAX_RANK)
        return imp_fail(im, "node '%s' (Expand): the shape must be a constant vector of 1 to %d values",
                        imp_node_name(n), 1 + MODEL_MAX_RANK);
    const value_t *x = imp_find_value(im, n->input[0]);
    model_shape_t in = {0}, to = {0}, seen = {0};
    int R = nsh;
    if (x && x->kind == V_TENSOR && !x->transposed) {
        const Onnx__TensorProto *t = x->tensor;
        if (t->n_dims > (size_t)MODEL_MAX_RANK + 1)
            return imp_fail(im, "node '%s' (Expand): the input has more than %d axes", imp_node_name(n),
                            MODEL_MAX_RANK + 1);
        if ((int)t->n_dims > R) R = (int)t->n_dims;
        in.rank = (int)t->n_dims;
        for (int d = 0; d < in.rank; d++) in.dims[d] = t->dims[d] > DIM_MAX ? -1 : (int)t->dims[d];
    } else {
        if (imp_input_layer(im, n, 0, &x)) return -1;
        seen_shape(b, x, &in);
        seen = in;
        memmove(in.dims + 1, in.dims, (size_t)in.rank * sizeof *in.dims);
        in.dims[0] = 1; /* the batch broadcasts as itself */
        in.rank++;
        if (nsh > in.rank)
            return imp_fail(im,
                            "node '%s' (Expand): a shape of %d axes for an activation of %d: new leading axes would "
                            "move the batch axis",
                            imp_node_name(n), nsh, in.rank);
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
            return imp_fail(im,
                            "node '%s' (Expand): input axis %d of %lld to %s: only a broadcast to the batch first and "
                            "constant sizes after it is supported",
                            imp_node_name(n), d, (long long)a, sb ? "the batch" : "a constant");
        if (d) to.dims[to.rank++] = (int)(a > s ? a : s);
    }
    if (x->kind == V_TENSOR) {
        if (binary_operand(im, b, n, 0, R - 1, &li)) return -1;
    } else li = as_seen(b, x, &seen);
    return define_output(im, n, model_build_expand(b, li, &to), 0);
}

/* Identity: an alias of its input (a constant, or an activation), no layer */
int do_identity(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    if (n->n_input == 1 && n->n_output == 1 && imp_input_tensor(im, n, 0)) {
        /* a constant under another name (the exporter's way of using one weight twice) */
        if (imp_check_attrs(im, n, none)) return -1;
        value_t *v = imp_add_value(im, n->output[0], V_TENSOR);
        if (!v) return imp_fail(im, "out of memory");
        v->tensor = imp_input_tensor(im, n, 0);
        return 0;
    }
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    return define_output(im, n, x->layer, x->flat);
}

/* Concat of activations -> a chain of LAYER_CONCAT */
int do_concat(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    /* of activations along a non-batch axis (Concat of shapes was do_shape_op's): a
     * chain of two-input concatenations */
    static const char *const known[] = {"axis", NULL};
    size_t first = 0; /* the first activation: a parameter may come before it */
    int64_t cd[ARR_DIMS];
    while (first + 1 < n->n_input && concat_constant_dims(im, n, first, cd) >= 0) first++;
    if (imp_check_attrs(im, n, known)) return -1;
    if (n->n_input < 1 || imp_input_layer(im, n, first, &x))
        return imp_fail(im, "node '%s' (Concat): no inputs", imp_node_name(n));
    model_shape_t s0;
    model_build_shape_nd(b, x->layer, &s0);
    if (x->flat) { /* concat_operand reads it as one axis */
        for (int d = 1; d < s0.rank; d++) s0.dims[0] *= s0.dims[d];
        s0.rank = 1;
    }
    int64_t ax = imp_attr_int(n, "axis", 0);
    if (ax < 0) ax += s0.rank + 1;
    if (ax < 1 || ax > s0.rank || (x->flat && ax != 1))
        return imp_fail(im, "node '%s' (Concat): axis %lld: activations join along a non-batch axis only",
                        imp_node_name(n), (long long)imp_attr_int(n, "axis", 0));
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
            return imp_fail(im, "node '%s' (Concat): input %zu is %s, the others %s (equal but for axis %lld)",
                            imp_node_name(n), i, imp_batch_text(&s2, t2, sizeof t2), imp_batch_text(&s1, t1, sizeof t1),
                            (long long)ax);
        li = model_build_concat_axis(b, li, yl, (int)ax - 1);
    }
    return define_output(im, n, li, n->n_input == 1 ? x->flat : 0);
}

/* Flatten: an alias seen flat */
int do_flatten(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    static const char *const known[] = {"axis", NULL};
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    /* axis k of a rank R + 1 batch (negative: from the end) gives (N * the sizes of axes
     * 1 .. k - 1, the rest): axis 1's (N, rest) where those sizes are all 1; any other
     * merges the batch with other axes (axis 0: the whole batch one row) */
    model_shape_t s;
    model_build_shape_nd(b, x->layer, &s);
    const int R = x->flat ? 1 : s.rank;
    int64_t ax = imp_attr_int(n, "axis", 1);
    if (ax < 0) ax += R + 1;
    int merges = ax < 1 || ax > R + 1;
    for (int64_t d = 1; !merges && d < ax && !x->flat; d++) merges = s.dims[d - 1] != 1;
    if (merges)
        return imp_fail(im,
                        "node '%s' (Flatten): axis %lld merges the batch axis with others (axis 0 is the batch; "
                        "only axis 1, or one after axes of size 1, is supported)",
                        imp_node_name(n), (long long)imp_attr_int(n, "axis", 1));
    return define_output(im, n, x->layer, 1);
}

/* Constant -> a value */
int do_constant(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"value", NULL};
    if (imp_check_attrs(im, n, known)) return -1;
    const Onnx__AttributeProto *a = imp_attr(n, "value");
    if (!a || !a->t || n->n_output < 1)
        return imp_fail(im, "node '%s' (Constant): only a tensor 'value' is supported", imp_node_name(n));
    value_t *v = imp_add_value(im, n->output[0], V_TENSOR);
    if (!v) return imp_fail(im, "out of memory");
    v->tensor = a->t;
    v->constant_node = 1;
    return 0;
}

int do_squeeze_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n) { return do_squeeze(im, b, n, 0); }
int do_unsqueeze(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n) { return do_squeeze(im, b, n, 1); }
