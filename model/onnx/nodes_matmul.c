/* model/onnx/nodes_matmul.c - see nodes_matmul.h. */
#include "nodes_matmul.h"

#include <math.h>

#include "nodes_common.h"

/* Gemm of a lead value (N * k, IN), x.view(B * T, C) before an nn.Linear: a LAYER_LINEAR
 * along the sample's last axis of (k, IN), the output a lead value again; alpha and beta 1,
 * C a vector of the outputs or none */
static int lead_gemm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    model_shape_t s;
    model_build_shape_nd(b, x->layer, &s);
    int OUT, rc = 1;
    gemm_layout_t layout;
    const char *bias;
    if (s.rank != 2 || x->flat || (rc = imp_gemm_linear(im, n, s.dims[1], &OUT, &layout, &bias)) == 1)
        return imp_fail(im,
                        "node '%s' (Gemm): of a value whose batch axis holds several of the sample's elements: A (N * "
                        "k, IN), alpha and beta 1, B an initializer of IN inputs, C a vector of the outputs or none",
                        imp_node_name(n));
    if (rc) return -1;
    int li = model_build_linear_layout(b, x->layer, OUT, layout, n->input[1]);
    if (bias) li = model_build_fc_bias(b, li, bias);
    return define_output(im, n, li, 0);
}

int do_gemm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    /* opset 6's broadcast: 1 is the rule opset 7 made (C broadcast to (M, N)); with 0, C
     * must already be (M, N), which broadcasting leaves as it is, so both read as opset 7 */
    static const char *const known[] = {"alpha", "beta", "transA", "transB", NULL};
    static const char *const known6[] = {"alpha", "beta", "transA", "transB", "broadcast", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, im->opset < 7 ? known6 : known) || imp_input_layer(im, n, 0, &x)) return -1;
    const int64_t bcast = imp_attr_int(n, "broadcast", 1);
    if (bcast != 0 && bcast != 1) return imp_fail(im, "node '%s' (Gemm): broadcast must be 0 or 1", imp_node_name(n));
    if (imp_attr_int(n, "transA", 0) != 0)
        return imp_fail(im, "node '%s' (Gemm): transA = 1 is not supported (A is the activation)", imp_node_name(n));
    const int64_t tb = imp_attr_int(n, "transB", 0);
    if (tb != 0 && tb != 1) return imp_fail(im, "node '%s' (Gemm): transB must be 0 or 1", imp_node_name(n));
    const int transB = (int)tb;
    if (x->lead) return lead_gemm(im, b, n, x);
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    if (!x->flat && (H != 1 || W != 1))
        return imp_fail(im, "node '%s' (Gemm): input is not 2-D (Flatten or Reshape it first)", imp_node_name(n));
    const Onnx__TensorProto *w = imp_input_tensor(im, n, 1), *c = imp_input_tensor(im, n, 2);
    const int64_t IN = (int64_t)C * H * W;
    /* B is (OUT, IN) with transB = 1 (PyTorch's Linear), (IN, OUT) with transB = 0 */
    if (!w || w->n_dims != 2 || w->dims[transB ? 1 : 0] != IN || w->dims[transB ? 0 : 1] < 1)
        return imp_fail(im, "node '%s' (Gemm): B must be an initializer %s", imp_node_name(n),
                        transB ? "(OUT, IN) for transB = 1" : "(IN, OUT) for transB = 0");
    const int64_t OUT = w->dims[transB ? 0 : 1];
    const gemm_desc_t g = {.layout = transB ? GEMM_W_OUT_IN : GEMM_W_IN_OUT,
                           .alpha = imp_attr_float(n, "alpha", 1.0f),
                           .beta = imp_attr_float(n, "beta", 1.0f)};
    if (!isfinite(g.alpha) || !isfinite(g.beta))
        return imp_fail(im, "node '%s' (Gemm): alpha and beta must be finite", imp_node_name(n));
    const int has_c = n->n_input > 2 && n->input[2][0], vec = c && imp_bias_vector(c, OUT);
    if (imp_weight_name_ok(im, n, 1) || (vec && imp_weight_name_ok(im, n, 2))) return -1;
    int li = model_build_gemm(b, x->layer, (int)OUT, &g, n->input[1], vec ? n->input[2] : NULL);
    if (has_c && !vec) {
        /* any other C that broadcasts to the (N, OUT) output (a scalar; with the batch, an
         * activation): added after the product, which has no bias to scale by beta */
        int cl;
        if (g.beta != 1.0f)
            return imp_fail(im,
                            "node '%s' (Gemm): beta %g with a C other than a vector of the %lld outputs: only beta 1",
                            imp_node_name(n), g.beta, (long long)OUT);
        if (binary_operand(im, b, n, 2, 1, &cl)) return -1;
        li = model_build_binary(b, LAYER_BADD, li, cl);
        if (model_build_failed(b))
            return imp_fail(im, "node '%s' (Gemm): C does not broadcast to the (N, %lld) output", imp_node_name(n),
                            (long long)OUT);
    }
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
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    int C, H, W;
    model_shape_t s;
    model_build_shape(b, x->layer, &C, &H, &W);
    model_build_shape_nd(b, x->layer, &s);
    const Onnx__TensorProto *w = imp_input_tensor(im, n, 1);
    /* an (OUT, IN) weight through a Transpose (torch's Linear on a 3-D input) */
    const value_t *wv = n->n_input > 1 ? imp_find_value(im, n->input[1]) : NULL;
    const int tr = wv && wv->transposed, two = w && w->n_dims == 2;
    const int64_t win = two ? w->dims[tr ? 1 : 0] : 0, wout = two ? w->dims[tr ? 0 : 1] : 0;
    const int flat = x->flat || (H == 1 && W == 1), last = s.rank >= 2 && !x->flat ? s.dims[s.rank - 1] : -1;
    /* the flattening FC where the weight takes the whole sample (what it always did), else
     * the last axis */
    const int fc = flat && two && win == (int64_t)C * H * W;
    const int64_t IN = fc ? (int64_t)C * H * W : last;
    if (!two || IN < 1 || win != IN || wout < 1 || wout > DIM_MAX) {
        char sh[96];
        return imp_fail(im,
                        "node '%s' (MatMul): the second input must be an initializer (IN, OUT), IN the input's last "
                        "axis or, of a 2-D input, its features: input %s",
                        imp_node_name(n), imp_batch_text(&s, sh, sizeof sh));
    }
    if (imp_weight_name_ok(im, n, 1)) return -1;
    const gemm_desc_t g = {.layout = tr ? GEMM_W_OUT_IN : GEMM_W_IN_OUT, .alpha = 1.0f, .beta = 1.0f};
    const int OUT = (int)wout;
    const char *wname = tr ? wv->weight : n->input[1];
    int li = fc ? model_build_gemm(b, x->layer, OUT, &g, wname, NULL)
                : model_build_linear_layout(b, x->layer, OUT, g.layout, wname);
    if (define_output(im, n, li, 0)) return -1;
    im->vals[im->nvals - 1].matmul = 1;
    return 0;
}

/* MatMul of two activations (attention's Q K^T, A V): one rank >= 3 with the batch, the
 * leading axes equal; a MatMul by a weight is do_matmul's. */
static int do_bmm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x, *y;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x) || imp_input_layer(im, n, 1, &y)) return -1;
    model_shape_t sa, sb;
    char ta[96], tb[96];
    model_build_shape_nd(b, x->layer, &sa);
    model_build_shape_nd(b, y->layer, &sb);
    const int li = model_build_bmm(b, x->layer, y->layer);
    if (x->flat || y->flat || model_build_failed(b))
        return imp_fail(im,
                        "node '%s' (MatMul): %s times %s: two activations multiply as (N, ..., M, K) times (N, ..., "
                        "K, N2) with equal leading axes (no broadcasting)",
                        imp_node_name(n), imp_batch_text(&sa, ta, sizeof ta), imp_batch_text(&sb, tb, sizeof tb));
    return define_output(im, n, li, 0);
}

/* MatMul of two activations -> LAYER_BMM, else by a weight (do_matmul) */
int do_matmul_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    if (n->n_input == 2 && imp_input_layer(im, n, 0, NULL) == 0 && imp_input_layer(im, n, 1, NULL) == 0)
        return do_bmm(im, b, n);
    return do_matmul(im, b, n);
}
