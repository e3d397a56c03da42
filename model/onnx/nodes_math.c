/* model/onnx/nodes_math.c - see nodes_math.h. */
#include "nodes_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nodes_common.h"

/* Whether input i of n is a constant operand: a tensor or a folded array. */
static int const_input(imp_t *im, const Onnx__NodeProto *n, size_t i)
{
    const value_t *v = i < n->n_input && n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
    return v && (v->kind == V_TENSOR || v->kind == V_ARRAY);
}

/* How many nodes read value name, plus 1 when it is the graph's output. */
static int uses(const imp_t *im, const char *name)
{
    int k = strcmp(im->output, name) == 0;
    for (size_t i = 0; i < im->g->n_node; i++)
        for (size_t j = 0; j < im->g->node[i]->n_input; j++) k += strcmp(im->g->node[i]->input[j], name) == 0;
    return k;
}

/* pacer's own domain, ai.pacer: StochasticDepth(p, mode) as the Python client writes
 * torchvision.ops.StochasticDepth (clients/python/pacer/client.py): mode "row" (one draw
 * per sample, EfficientNet's and ConvNeXt's), p in [0, 1). */
int do_pacer_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const char *op = n->op_type;
    const value_t *x;
    if (strcmp(op, "StochasticDepth") != 0)
        return imp_fail(im, "node '%s': operator ai.pacer:%s is not supported (ai.pacer has StochasticDepth only)",
                        imp_node_name(n), op);
    static const char *const known[] = {"p", "mode", NULL};
    if (n->n_input != 1) return imp_fail(im, "node '%s' (StochasticDepth): want one input", imp_node_name(n));
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    const Onnx__AttributeProto *mode = imp_attr(n, "mode");
    if (mode && !(mode->has_s && mode->s.len == 3 && memcmp(mode->s.data, "row", 3) == 0))
        return imp_fail(im,
                        "node '%s' (StochasticDepth): mode '%.*s' is not supported (\"row\" only: one draw per sample)",
                        imp_node_name(n), mode->has_s ? (int)(mode->s.len > 32 ? 32 : mode->s.len) : 0,
                        mode->has_s ? (const char *)mode->s.data : "");
    const Onnx__AttributeProto *pa = imp_attr(n, "p");
    if (!pa || !pa->has_f) return imp_fail(im, "node '%s' (StochasticDepth): no float attribute p", imp_node_name(n));
    const float p = pa->f;
    if (!(p >= 0.0f && p < 1.0f))
        return imp_fail(im, "node '%s' (StochasticDepth): p %g is not in [0, 1)", imp_node_name(n), p);
    if (p == 0.0f) return define_output(im, n, x->layer, x->flat); /* the identity, as Dropout's ratio 0 */
    return define_output(im, n, model_build_elementwise(b, LAYER_STOCHASTIC_DEPTH, x->layer, p), x->flat);
}

/* Add's, Sub's, Mul's and Div's attributes: none from opset 7; before, broadcast, whose 1
 * aligns B with A's last axes (NumPy's rule on the shapes opset 6 allows) and whose 0 wants
 * equal shapes (which broadcasting leaves as they are), so both read as opset 7; an axis
 * (another alignment) is refused as any unknown attribute is. */
static int binary_attrs(imp_t *im, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL}, *const six[] = {"broadcast", NULL};
    if (imp_check_attrs(im, n, im->opset < 7 ? six : none)) return -1;
    const int64_t bc = imp_attr_int(n, "broadcast", 0);
    if (bc != 0 && bc != 1)
        return imp_fail(im, "node '%s' (%s): broadcast must be 0 or 1", imp_node_name(n), n->op_type);
    return 0;
}

/* Add, Sub, Mul, Div with NumPy broadcasting (kind LAYER_BADD .. LAYER_DIV): two
 * activations, or an activation and a constant. */
int do_binary(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind)
{
    if (binary_attrs(im, n)) return -1;
    if (n->n_input != 2)
        return imp_fail(im, "node '%s' (%s): %zu inputs, want 2", imp_node_name(n), n->op_type, n->n_input);
    const int t0 = const_input(im, n, 0), t1 = const_input(im, n, 1);
    if (t0 && t1)
        return imp_fail(im, "node '%s' (%s): both operands are constants (export with constant folding)",
                        imp_node_name(n), n->op_type);
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
        return imp_fail(im, "node '%s' (%s): shapes %s and %s%s do not broadcast", imp_node_name(n), n->op_type,
                        imp_batch_text(&sa, ta, sizeof ta), c_const ? "the constant " : "",
                        c_const ? model_shape_text(&sc, tc, sizeof tc) : imp_batch_text(&sc, tc, sizeof tc));
    return define_output(im, n, li, 0);
}

/* torch 1.13's nn.GELU(): Div(x, sqrt(2)), Erf, Add 1, Mul by x, Mul by 0.5, each value
 * but the last read by the next node alone. At the Div: builds one LAYER_GELU for the five
 * and defines the last Mul's output; 1 where n does not start the pattern (the Div is then
 * an ordinary one). */
static int match_gelu(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x = imp_find_value(im, n->input[0]);
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

/* Erf -> LAYER_ERF */
int do_erf(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    if (n->n_input != 1) return imp_fail(im, "node '%s' (Erf): %zu inputs, want 1", imp_node_name(n), n->n_input);
    return define_output(im, n, model_build_unary(b, LAYER_ERF, x->layer, 0.0f), x->flat);
}

/* Relu -> LAYER_RELU */
int do_relu(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    return define_output(im, n, model_build_relu(b, x->layer), x->flat);
}

/* LeakyRelu, Sigmoid, Tanh -> their elementwise layers */
int do_activation(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const char *op = n->op_type;
    const value_t *x;
    static const char *const known[] = {"alpha", NULL};
    if (imp_check_attrs(im, n, op[0] == 'L' ? known : none) || imp_input_layer(im, n, 0, &x)) return -1;
    const float alpha = imp_attr_float(n, "alpha", 0.01f);
    if (op[0] == 'L' && !(alpha >= 0.0f))
        return imp_fail(im, "node '%s' (LeakyRelu): alpha %g: a negative slope is not supported", imp_node_name(n),
                        alpha);
    const layer_kind_t k = op[0] == 'L' ? LAYER_LEAKY_RELU : op[0] == 'S' ? LAYER_SIGMOID : LAYER_TANH;
    return define_output(im, n, model_build_elementwise(b, k, x->layer, alpha), x->flat);
}

/* Clip -> LAYER_CLIP */
int do_clip(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    /* the bounds: attributes up to opset 10, optional constant inputs from 11 (torch's
     * ReLU6 and Hardtanh) */
    static const char *const known[] = {"min", "max", NULL};
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    float bound[2] = {imp_attr_float(n, "min", -INFINITY), imp_attr_float(n, "max", INFINITY)};
    if (n->n_input > 3) return imp_fail(im, "node '%s' (Clip): more than 3 inputs", imp_node_name(n));
    for (size_t i = 1; i < n->n_input; i++) {
        if (!n->input[i][0]) continue;
        const Onnx__TensorProto *t = imp_input_tensor(im, n, i);
        if (!t || imp_tensor_count(t) != 1 || imp_tensor_floats(im, t, &bound[i - 1], 1) != 0)
            return imp_fail(im, "node '%s' (Clip): %s must be a constant float scalar", imp_node_name(n),
                            i == 1 ? "min" : "max");
    }
    if (isnan(bound[0]) || isnan(bound[1])) return imp_fail(im, "node '%s' (Clip): a bound is NaN", imp_node_name(n));
    return define_output(im, n, model_build_clip(b, x->layer, bound[0], bound[1]), x->flat);
}

/* HardSigmoid, HardSwish -> their layers */
int do_hard(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const char *op = n->op_type;
    const value_t *x;
    static const char *const known[] = {"alpha", "beta", NULL};
    const int sig = op[4] == 'S' && op[5] == 'i';
    if (imp_check_attrs(im, n, sig ? known : none) || imp_input_layer(im, n, 0, &x)) return -1;
    if (!sig) return define_output(im, n, model_build_hardswish(b, x->layer), x->flat);
    const float alpha = imp_attr_float(n, "alpha", 0.2f), beta = imp_attr_float(n, "beta", 0.5f);
    if (!isfinite(alpha) || !isfinite(beta))
        return imp_fail(im, "node '%s' (HardSigmoid): alpha %g and beta %g must be finite", imp_node_name(n), alpha,
                        beta);
    return define_output(im, n, model_build_hardsigmoid(b, x->layer, alpha, beta), x->flat);
}

/* Mul -> LAYER_MUL, or broadcast (do_binary) */
int do_mul(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    /* of two activations: the same shape, or a per-channel (C, 1, 1) one against a
     * (C, H, W) one (SiLU as x * Sigmoid(x), HardSwish as x * HardSigmoid(x),
     * squeeze-excitation's scale): LAYER_MUL; anything else broadcasts (do_binary) */
    const value_t *y;
    if (binary_attrs(im, n)) return -1;
    if (n->n_input != 2) return imp_fail(im, "node '%s' (Mul): %zu inputs, want 2", imp_node_name(n), n->n_input);
    if (const_input(im, n, 0) || const_input(im, n, 1)) return do_binary(im, b, n, LAYER_BMUL);
    if (imp_input_layer(im, n, 0, &x) || imp_input_layer(im, n, 1, &y)) return -1;
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

/* Dropout -> LAYER_DROPOUT (or none at ratio 0) */
int do_dropout(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    /* ratio: an attribute up to opset 11, an optional constant input from 12; pacer drops
     * while training and not at evaluation, whatever the training_mode input says; the
     * mask output is never defined (no node may read it) */
    static const char *const known[] = {"ratio", "seed", NULL};
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    float p = imp_attr_float(n, "ratio", 0.5f);
    if (n->n_input > 1 && n->input[1][0]) {
        const Onnx__TensorProto *r = imp_input_tensor(im, n, 1);
        if (!r || imp_tensor_count(r) != 1 || imp_tensor_floats(im, r, &p, 1) != 0)
            return imp_fail(im, "node '%s' (Dropout): ratio must be a constant float", imp_node_name(n));
    }
    if (n->n_input > 2 && n->input[2][0] && !imp_input_tensor(im, n, 2))
        return imp_fail(im, "node '%s' (Dropout): training_mode must be a constant", imp_node_name(n));
    if (!(p >= 0.0f && p < 1.0f))
        return imp_fail(im, "node '%s' (Dropout): ratio %g is not in [0, 1)", imp_node_name(n), p);
    /* ratio 0 (torchvision's ViT by default): the identity, no layer to copy through */
    if (p == 0.0f) return define_output(im, n, x->layer, x->flat);
    return define_output(im, n, model_build_elementwise(b, LAYER_DROPOUT, x->layer, p), x->flat);
}

/* Add -> LAYER_ADD (or a MatMul's bias, or broadcast: do_binary) */
int do_add(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    const value_t *y;
    /* MatMul + Add(bias): the bias joins the MatMul's layer when nothing else reads the
     * MatMul's output and no layer came after it */
    const size_t mi = n->n_input == 2 && imp_input_tensor(im, n, 0) ? 1 : 0; /* either order */
    const value_t *mm = n->n_input == 2 ? imp_find_value(im, n->input[mi]) : NULL;
    const Onnx__TensorProto *bias = n->n_input == 2 ? imp_input_tensor(im, n, 1 - mi) : NULL;
    if (mm && mm->kind == V_LAYER && mm->matmul && bias) {
        int C, H, last = mm->layer;
        model_shape_t ms;
        model_build_shape_nd(b, mm->layer, &ms);
        C = ms.dims[ms.rank - 1]; /* the outputs: the last axis (rank 1 for LAYER_FC) */
        if (binary_attrs(im, n)) return -1;
        if (bias->n_dims != 1 || bias->dims[0] != C || uses(im, n->input[mi]) != 1 ||
            model_build_shape(b, last + 1, &H, &H, &H) == 0)
            return imp_fail(im,
                            "node '%s' (Add): a bias after MatMul must be a 1-D initializer of %d values read "
                            "right after it",
                            imp_node_name(n), C);
        if (imp_weight_name_ok(im, n, 1 - mi)) return -1;
        model_build_fc_bias(b, mm->layer, n->input[1 - mi]);
        return define_output(im, n, mm->layer, 0);
    }
    if (const_input(im, n, 0) || const_input(im, n, 1)) return do_binary(im, b, n, LAYER_BADD);
    if (binary_attrs(im, n) || imp_input_layer(im, n, 0, &x) || imp_input_layer(im, n, 1, &y)) return -1;
    if (x->kind == V_PADDED) {
        const value_t *t = x;
        x = y;
        y = t;
    }
    if (x->kind == V_PADDED) return imp_fail(im, "node '%s' (Add): both inputs are Pads of channels", imp_node_name(n));
    int C1, H1, W1, C2, H2, W2;
    model_build_shape(b, x->layer, &C1, &H1, &W1);
    model_build_shape(b, y->layer, &C2, &H2, &W2);
    if (y->kind == V_PADDED) {
        /* x + channels of y zero-padded: LAYER_ADD's shortcut, whose C channels sit at
         * offset (OC - C) / 2 */
        const int64_t OC = (int64_t)C2 + y->cpads[0] + y->cpads[1]; /* each below 2^31 */
        if (OC != C1 || y->cpads[0] != (OC - C2) / 2 || H1 != H2 || W1 != W2 || x->layer < 0 || y->layer < 0)
            return imp_fail(im,
                            "node '%s' (Add): a shortcut of %d channels padded by %d before and %d after must "
                            "give the other input's %dx%dx%d with the padding split evenly (more after)",
                            imp_node_name(n), C2, y->cpads[0], y->cpads[1], C1, H1, W1);
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

/* Pow's exponent as one finite float into *a: a constant of one float32 or int64 value; 0,
 * or -1 (a tensor of another size, or no constant: the broadcasting LAYER_BPOW's). */
static int pow_scalar(imp_t *im, const Onnx__NodeProto *n, float *a)
{
    const Onnx__TensorProto *t = n->n_input == 2 ? imp_input_tensor(im, n, 1) : NULL;
    int64_t v;
    if (!t || imp_tensor_count(t) != 1) return -1;
    if (imp_tensor_ints(t, &v, 1) == 1) return *a = (float)v, 0;
    return t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && imp_tensor_floats(im, t, a, 1) == 0 && isfinite(*a)
               ? 0
               : -1;
}

/* Pow's exponent an int64 initializer that only Pow nodes read as their exponent: its values
 * as a folded array of floats (V_ARRAY, each exact: at most 2^24 in magnitude), which the
 * broadcasting Pow reads as a constant operand like a float one; anything else is left as
 * it is (a binary operand's refusal of its type then says why). */
static void pow_int_exponent(imp_t *im, const Onnx__NodeProto *n)
{
    enum { MAX_EXPONENTS = 1 << 16 };
    value_t *v = imp_find_value(im, n->input[1]);
    const Onnx__NodeProto *r[8];
    const int k = imp_readers(im, n->input[1], r, 8);
    if (!v || v->kind != V_TENSOR || !v->tensor->has_data_type ||
        v->tensor->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || v->tensor->n_dims > 8 || k < 1 || k > 8)
        return;
    for (int i = 0; i < k; i++)
        if (!r[i]->op_type || strcmp(r[i]->op_type, "Pow") != 0 || r[i]->n_input != 2 ||
            strcmp(r[i]->input[0], n->input[1]) == 0)
            return;
    const int64_t cnt = imp_tensor_count(v->tensor);
    if (cnt < 1 || cnt > MAX_EXPONENTS) return;
    int64_t *ints = malloc((size_t)cnt * sizeof *ints);
    double *arr = malloc((size_t)cnt * sizeof *arr);
    int ok = ints && arr && imp_tensor_ints(v->tensor, ints, (int)cnt) == cnt;
    for (int64_t i = 0; ok && i < cnt; i++) {
        ok = ints[i] >= -DIM_MAX && ints[i] <= DIM_MAX;
        arr[i] = (double)ints[i];
    }
    free(ints);
    if (!ok) {
        free(arr);
        return;
    }
    v->kind = V_ARRAY;
    v->arr = arr;
    v->acount = (size_t)cnt;
    v->afloat = 1;
    v->arank = (int)v->tensor->n_dims;
    for (int d = 0; d < v->arank; d++) v->adims[d] = v->tensor->dims[d];
}

/* functions of one input (the table's unary rows); Pow's exponent a constant scalar (any
 * other exponent: the broadcasting LAYER_BPOW) */
int do_unary_kind(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind)
{
    static const char *const none[] = {NULL};
    const char *op = n->op_type;
    const value_t *x;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    float a = 0.0f;
    if (kind == LAYER_POW) {
        if (n->n_input != 2) return imp_fail(im, "node '%s' (Pow): %zu inputs, want 2", imp_node_name(n), n->n_input);
        if (pow_scalar(im, n, &a) != 0) {
            pow_int_exponent(im, n);
            return do_binary(im, b, n, LAYER_BPOW);
        }
    } else if (n->n_input != 1)
        return imp_fail(im, "node '%s' (%s): %zu inputs, want 1", imp_node_name(n), op, n->n_input);
    return define_output(im, n, model_build_unary(b, kind, x->layer, a), x->flat);
}

/* Div: torch 1.13's nn.GELU nodes start with one (match_gelu), else broadcast */
int do_div(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    int rc;
    if (n->n_input == 2 && (rc = match_gelu(im, b, n)) != 1) return rc;
    return do_binary(im, b, n, LAYER_DIV);
}
