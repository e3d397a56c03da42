/* model/onnx/nodes_norm.c - see nodes_norm.h. */
#include "nodes_norm.h"

#include <math.h>
#include <string.h>

#include "nodes_common.h"

int do_bn(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    /* opset 6's is_test: which statistics an inference reads, as training_mode says from
     * opset 14; pacer trains with the batch's and evaluates with the running ones either way */
    static const char *const known[] = {"epsilon", "momentum", "training_mode", "spatial", NULL};
    static const char *const known6[] = {"epsilon", "momentum", "spatial", "is_test", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, im->opset < 7 ? known6 : known) || imp_input_layer(im, n, 0, &x)) return -1;
    if (imp_attr_int(n, "spatial", 1) != 1)
        return imp_fail(im, "node '%s' (BatchNormalization): spatial = 0 is not supported", imp_node_name(n));
    /* any epsilon and momentum; ONNX's momentum weighs the old running statistics, PyTorch's
     * (layer_t's) the batch's: 1 - it. The exporters' 0.9 is PyTorch's default 0.1 itself
     * (MODEL_BN_MOMENTUM, the same bits as the built-in networks'), not 1 - 0.9f. */
    const float eps = imp_attr_float(n, "epsilon", 1e-5f), mom = imp_attr_float(n, "momentum", 0.9f);
    if (!(eps > 0.0f) || !(eps < 1.0f))
        return imp_fail(im, "node '%s' (BatchNormalization): epsilon %g is out of range (0, 1)", imp_node_name(n), eps);
    if (!(mom >= 0.0f && mom <= 1.0f))
        return imp_fail(im, "node '%s' (BatchNormalization): momentum %g is out of range [0, 1]", imp_node_name(n), mom);
    const float torch_mom = fabsf(mom - (1.0f - MODEL_BN_MOMENTUM)) <= 1e-7f ? MODEL_BN_MOMENTUM
                                                                             : (float)(1.0 - (double)mom);
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    const char *names[4];
    for (int i = 0; i < 4; i++) {
        const Onnx__TensorProto *t = imp_input_tensor(im, n, (size_t)i + 1);
        if (!t || t->n_dims != 1 || t->dims[0] != C)
            return imp_fail(im, "node '%s' (BatchNormalization): input %d must be an initializer of %d values",
                            imp_node_name(n), i + 1, C);
        if (imp_weight_name_ok(im, n, (size_t)i + 1)) return -1;
        names[i] = n->input[i + 1];
    }
    int li = model_build_bn_momentum(b, x->layer, names, eps, torch_mom);
    return define_output(im, n, li, 0);
}

/* n (ReduceMean, keepdims 1) averages the last axes of a sample of rank r: the first of them
 * (a non-batch index), or -1. */
static int mean_axis(const Onnx__NodeProto *n, int r)
{
    /* n may be no node (a probe's sole reader that is none): not a match */
    const Onnx__AttributeProto *a = n ? imp_attr(n, "axes") : NULL;
    if (!op_is(n, "ReduceMean") || n->n_input != 1 || n->n_output != 1 || !a || a->n_ints < 1 ||
        a->n_ints > (size_t)r || imp_attr_int(n, "keepdims", 1) != 1)
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
        const value_t *w = strcmp(n->input[k], a) == 0 ? imp_find_value(im, n->input[1 - k]) : NULL;
        if (w && w->kind == V_TENSOR && !w->constant_node && imp_tensor_count(w->tensor) == (int64_t)count &&
            strlen(n->input[1 - k]) < MODEL_TENSOR_NAME_MAX)
            return n->input[1 - k];
    }
    return NULL;
}

/* torch 1.13's nn.LayerNorm below opset 17: ReduceMean (the last axes), Sub, Pow 2,
 * ReduceMean, Add eps, Sqrt, Div, Mul weight, Add bias, each value read by the pattern alone
 * (the Sub's by the Pow and the Div). At the first ReduceMean: one LAYER_LAYERNORM with the
 * weight and bias under their names; 1 where n does not start the pattern. */
int match_layernorm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x = imp_find_value(im, n->input[0]);
    model_shape_t s;
    if (!x || x->kind != V_LAYER || im->nfused + 8 > (int)(sizeof im->fused / sizeof im->fused[0])) return 1;
    seen_shape(b, x, &s);
    const int axis = mean_axis(n, s.rank);
    if (axis < 0) return 1;
    size_t D = 1;
    for (int d = axis; d < s.rank; d++) D *= (size_t)s.dims[d];
    const Onnx__NodeProto *sub = sole_reader(im, n->output[0]), *r[2];
    if (!op_is(sub, "Sub") || sub->n_input != 2 || sub->n_output != 1 || strcmp(sub->input[0], n->input[0]) != 0 ||
        strcmp(sub->input[1], n->output[0]) != 0 || imp_readers(im, sub->output[0], r, 2) != 2)
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

/* Defines the value name (a node's output after its first) as layer li. */
static int define_named(imp_t *im, const char *name, int li)
{
    value_t *v = imp_add_value(im, name, V_LAYER);
    if (!v) return imp_fail(im, "out of memory");
    v->layer = li;
    return 0;
}

/* LayerNormalization's Mean and InvStdDev outputs, where a node or the graph's output reads
 * them: the statistics over the normalised sample axes axis.. r - 1, kept as axes of 1,
 * through the layers the operator's definition spells (ReduceMean; Sub, Pow 2, ReduceMean,
 * Add epsilon, Sqrt, Reciprocal) on in, the normalised layer's input. pacer's layer norm
 * keeps its statistics to itself, and only a graph that reads them pays for these. */
static int layernorm_statistics(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int in, int axis, int r,
                                float eps)
{
    const char *mean_name = n->n_output > 1 ? n->output[1] : "", *inv_name = n->n_output > 2 ? n->output[2] : "";
    const int want_mean = mean_name[0] && imp_readers(im, mean_name, NULL, 0) > 0;
    const int want_inv = inv_name[0] && imp_readers(im, inv_name, NULL, 0) > 0;
    if (!want_mean && !want_inv) return 0;
    unsigned mask = 0;
    for (int d = axis; d < r; d++) mask |= 1u << d;
    const int mean = model_build_reduce(b, LAYER_REDUCE_MEAN, in, mask, 1);
    if (want_mean && define_named(im, mean_name, mean)) return -1;
    if (!want_inv) return 0;
    const int sq = model_build_unary(b, LAYER_POW, model_build_binary(b, LAYER_SUB, in, mean), 2.0f);
    const int var = model_build_reduce(b, LAYER_REDUCE_MEAN, sq, mask, 1);
    int e = -1;
    if (scalar_constant(im, b, n, inv_name, "epsilon", eps, &e)) return -1;
    const int sd = model_build_unary(b, LAYER_SQRT, model_build_binary(b, LAYER_BADD, var, e), 0.0f);
    const int inv = model_build_unary(b, LAYER_RECIPROCAL, sd, 0.0f);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (LayerNormalization): its Mean and InvStdDev outputs: not supported",
                        imp_node_name(n));
    return define_named(im, inv_name, inv);
}

/* ONNX LayerNormalization (opset 17): over the axes from axis (a non-batch one) to the last,
 * the scale and the bias (optional: zeros) initializers of those axes' size; its Mean and
 * InvStdDev outputs where they are read (layernorm_statistics). */
int do_layernorm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", "epsilon", "stash_type", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_shape_t s;
    seen_shape(b, x, &s);
    const int64_t given = imp_attr_int(n, "axis", -1), ax = given < 0 ? given + s.rank + 1 : given;
    const float eps = imp_attr_float(n, "epsilon", 1e-5f);
    if (ax < 1 || ax > s.rank)
        return imp_fail(im, "node '%s' (LayerNormalization): axis %lld: only a non-batch axis (1 to %d) is supported",
                        imp_node_name(n), (long long)given, s.rank);
    if (!(eps > 0.0f) || !isfinite(eps))
        return imp_fail(im, "node '%s' (LayerNormalization): epsilon %g must be positive and finite", imp_node_name(n),
                        eps);
    size_t D = 1;
    for (int d = (int)ax - 1; d < s.rank; d++) D *= (size_t)s.dims[d];
    const Onnx__TensorProto *w = imp_input_tensor(im, n, 1), *bt = imp_input_tensor(im, n, 2);
    if (n->n_input < 3 || !w || !bt || imp_tensor_count(w) != (int64_t)D || imp_tensor_count(bt) != (int64_t)D)
        return imp_fail(im, "node '%s' (LayerNormalization): scale and bias must be initializers of %zu elements",
                        imp_node_name(n), D);
    if (imp_weight_name_ok(im, n, 1) || imp_weight_name_ok(im, n, 2)) return -1;
    const int in = as_seen(b, x, &s);
    if (define_output(im, n, model_build_layernorm(b, in, (int)ax - 1, eps, n->input[1], n->input[2]), 0)) return -1;
    return layernorm_statistics(im, b, n, in, (int)ax - 1, s.rank, eps);
}

/* Softmax and LogSoftmax along one non-batch axis. Opset 13's normalise that axis alone;
 * before 13 they normalise the axis and every axis after it together (the input seen as 2-D),
 * which is the same only for the last axis: any other is refused by name. A flattened value
 * (N, C*H*W) is reshaped to its one axis first. */
int do_softmax(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    if (n->n_input != 1)
        return imp_fail(im, "node '%s' (%s): %zu inputs, want 1", imp_node_name(n), n->op_type, n->n_input);
    model_shape_t s;
    seen_shape(b, x, &s);
    const int li = as_seen(b, x, &s);
    const int64_t given = imp_attr_int(n, "axis", im->opset >= 13 ? -1 : 1);
    /* ONNX's: the batch axis 0; of a lead value, the graph's axis a >= 1 is the sample's a.
     * An axis beyond any rank is refused before the sum (2^63 - 1 overflowed it: fuzz_onnx). */
    const int64_t ax = given < -(int64_t)s.rank - 1 || given > s.rank
                           ? -1
                           : (given < 0 ? given + s.rank + 1 - x->lead : given) + x->lead;
    if (ax < 1 + x->lead || ax > s.rank)
        return imp_fail(im, "node '%s' (%s): axis %lld: only a non-batch axis (1 to %d) is supported", imp_node_name(n),
                        n->op_type, (long long)given, s.rank);
    if (im->opset < 13 && ax != s.rank)
        return imp_fail(im,
                        "node '%s' (%s): axis %lld in opset %lld normalises that axis and every later one together; "
                        "only the last axis is supported before opset 13",
                        imp_node_name(n), n->op_type, (long long)given, (long long)im->opset);
    const layer_kind_t k = n->op_type[0] == 'L' ? LAYER_LOG_SOFTMAX : LAYER_SOFTMAX;
    return define_output(im, n, model_build_softmax(b, k, li, (int)ax - 1), 0);
}
