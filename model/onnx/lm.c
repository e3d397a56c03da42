/* model/onnx/lm.c - see lm.h. */
#include "lm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The node's first output as layer li (these translations read no lead value). */
static int define_layer(imp_t *im, const Onnx__NodeProto *n, int li)
{
    if (n->n_output < 1 || !n->output[0] || !n->output[0][0])
        return imp_fail(im, "node '%s' (%s): no output", imp_node_name(n), n->op_type);
    value_t *v = imp_add_value(im, n->output[0], V_LAYER);
    if (!v) return imp_fail(im, "out of memory");
    v->layer = li;
    return 0;
}

/* Gather(table, ids) of a 2-D initializer by the graph's integer input along axis 0:
 * nn.Embedding, a LAYER_EMBED (its table a parameter of the initializer's name). */
static int do_embed(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const Onnx__TensorProto *t)
{
    static const char *const known[] = {"axis", NULL};
    if (imp_check_attrs(im, n, known)) return -1;
    if (imp_attr_int(n, "axis", 0) != 0)
        return imp_fail(im, "node '%s' (Gather): an embedding gathers rows (axis 0) of its table", imp_node_name(n));
    if (t->n_dims != 2 || t->dims[0] < 1 || t->dims[0] > DIM_MAX || t->dims[1] < 1 || t->dims[1] > DIM_MAX)
        return imp_fail(im, "node '%s' (Gather): an embedding table must be 2-D (vocabulary, width), each below %lld",
                        imp_node_name(n), (long long)DIM_MAX);
    if (im->nembeds >= LM_MAX_EMBEDS)
        return imp_fail(im, "node '%s' (Gather): more than %d embeddings of the token ids", imp_node_name(n),
                        LM_MAX_EMBEDS);
    if (imp_weight_name_ok(im, n, 0)) return -1;
    const int V = (int)t->dims[0], E = (int)t->dims[1];
    const int li = model_build_embed(b, -1, V, E, n->input[0]);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (Gather): an embedding of %d x %d is too large", imp_node_name(n), V, E);
    im->embeds[im->nembeds].name = n->input[0];
    im->embeds[im->nembeds++].layer = li;
    if (im->min_vocab == 0 || V < im->min_vocab) im->min_vocab = V;
    return define_layer(im, n, li);
}

/* Whether a is a causal mask: (1, .., 1, T, T) with a[i][j] != 0 exactly where j > i (the
 * positions after i: masked_fill's condition) when upper, exactly where j <= i (the
 * positions kept: torch.where's, GPT-2's) otherwise. */
static int is_causal_mask(const value_t *a, int T, int upper)
{
    if (a->kind != V_ARRAY || a->arank < 2 || a->adims[a->arank - 1] != T || a->adims[a->arank - 2] != T) return 0;
    for (int d = 0; d < a->arank - 2; d++)
        if (a->adims[d] != 1) return 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++)
            if ((a->arr[(size_t)i * T + j] != 0.0) != ((j > i) == upper)) return 0;
    return 1;
}

/* Whether value name is a constant that masks a score out: -inf (masked_fill's), or at
 * most -1e9 (torch.finfo(float32).min, GPT-2's), whose exp underflows to exactly 0 beside
 * any finite score. */
static int is_mask_value(imp_t *im, const char *name)
{
    const value_t *v = imp_find_value(im, name);
    float f = 0.0f;
    if (v && v->kind == V_ARRAY && v->acount == 1) f = (float)v->arr[0];
    else if (!v || v->kind != V_TENSOR || imp_tensor_count(v->tensor) != 1 ||
             imp_tensor_floats(im, v->tensor, &f, 1) != 0)
        return 0;
    return f <= -1e9f;
}

/* Where(mask, -inf, scores) (masked_fill) or Where(kept, scores, finfo.min) (GPT-2's
 * torch.where) read only by Softmax over the last axis: attention's causal mask, which the
 * Softmax computes as a LAYER_CAUSAL_SOFTMAX (the masked half never computed). 1 when n is
 * not such a Where. */
static int do_causal_where(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    if (n->n_input != 3) return 1;
    const value_t *x2 = imp_find_value(im, n->input[2]);
    const int upper = x2 && x2->kind == V_LAYER; /* the scores last: masked_fill's form */
    const value_t *cond = imp_find_value(im, n->input[0]), *x = upper ? x2 : imp_find_value(im, n->input[1]);
    if (!cond || cond->kind != V_ARRAY || !x || x->kind != V_LAYER || x->viewed || x->lead || x->defer) return 1;
    model_shape_t s;
    model_build_shape_nd(b, x->layer, &s);
    const Onnx__NodeProto *r[4];
    const int nr = imp_readers(im, n->output[0], r, 4);
    if (s.rank < 2 || s.dims[s.rank - 1] != s.dims[s.rank - 2] || !is_causal_mask(cond, s.dims[s.rank - 1], upper) ||
        !is_mask_value(im, n->input[upper ? 1 : 2]))
        return 1;
    for (int k = 0; k < nr; k++) {
        /* a later node, not checked yet: it may lack an operator (fuzz_onnx) */
        const char *op = r[k]->op_type ? r[k]->op_type : "a node without an operator";
        const int64_t ax = imp_attr_int(r[k], "axis", -1);
        if (nr > 4 || strcmp(op, "Softmax") != 0 || im->opset < 13 || (ax != -1 && ax != s.rank))
            return imp_fail(im,
                            "node '%s' (Where): a causal mask read by %s; only by Softmax over the last axis (opset "
                            "13 on) is it attention's",
                            imp_node_name(n), strcmp(op, "Softmax") == 0 ? "Softmax of another axis" : op);
    }
    if (define_layer(im, n, x->layer)) return -1;
    im->vals[im->nvals - 1].causal = 1;
    return 0;
}

/* MatMul(x, Transpose(table)) of an embedding's table: the output projection tied to it
 * (one tensor, both gradients summed). 1 when n is not such a MatMul. */
/* Whether initializer w (IN, OUT) holds exactly the transpose of embedding table t (OUT,
 * IN): torch.onnx's constant folding (its default) writes a tied head's weight.T as an
 * initializer of its own, which would otherwise be trained apart from the table. */
static int is_folded_transpose(imp_t *im, const Onnx__TensorProto *t, const Onnx__TensorProto *w)
{
    if (t->n_dims != 2 || w->n_dims != 2 || w->dims[0] != t->dims[1] || w->dims[1] != t->dims[0]) return 0;
    const size_t V = (size_t)t->dims[0], E = (size_t)t->dims[1];
    float *a = malloc(V * E * sizeof *a), *c = malloc(V * E * sizeof *c);
    int same = a && c && imp_tensor_floats(im, t, a, V * E) == 0 && imp_tensor_floats(im, w, c, V * E) == 0;
    for (size_t v = 0; same && v < V; v++)
        for (size_t e = 0; same && e < E; e++) same = memcmp(&a[v * E + e], &c[e * V + v], sizeof *a) == 0;
    free(a);
    free(c);
    return same;
}

static int do_tied(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *w = n->n_input == 2 ? imp_find_value(im, n->input[1]) : NULL;
    if (!w || w->kind != V_TENSOR || (w->transposed && !w->weight)) return 1;
    for (int e = 0; e < im->nembeds; e++) {
        const value_t *t = imp_find_value(im, im->embeds[e].name);
        if (w->transposed ? strcmp(im->embeds[e].name, w->weight) != 0
                          : !t || t->kind != V_TENSOR || !is_folded_transpose(im, t->tensor, w->tensor))
            continue;
        const value_t *x;
        if (imp_input_layer(im, n, 0, &x)) return -1;
        if (x->viewed || x->lead || x->defer)
            return imp_fail(im, "node '%s' (MatMul): a tied projection of a reshaped batch", imp_node_name(n));
        const int li = model_build_linear_tied(b, x->layer, im->embeds[e].layer);
        if (model_build_failed(b))
            return imp_fail(im, "node '%s' (MatMul): the input's last axis is not the width of embedding '%s'",
                            imp_node_name(n), im->embeds[e].name);
        return define_layer(im, n, li);
    }
    return 1;
}

int lm_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const char *op = n->op_type;
    if (strcmp(op, "Gather") == 0 && n->n_input == 2 && im->int_input && strcmp(n->input[1], im->input) == 0) {
        const value_t *t = imp_find_value(im, n->input[0]);
        if (!t || t->kind != V_TENSOR || t->transposed)
            return imp_fail(im, "node '%s' (Gather): the token ids '%s' may only gather rows of an initializer",
                            imp_node_name(n), im->input);
        return do_embed(im, b, n, t->tensor);
    }
    if (strcmp(op, "Where") == 0) return do_causal_where(im, b, n);
    if (strcmp(op, "MatMul") == 0) return do_tied(im, b, n);
    if (strcmp(op, "Softmax") == 0 && n->n_input == 1) {
        const value_t *x = imp_find_value(im, n->input[0]);
        if (!x || !x->causal) return 1;
        const int li = model_build_causal_softmax(b, x->layer, 1.0f);
        if (model_build_failed(b)) return imp_fail(im, "node '%s' (Softmax): a causal softmax", imp_node_name(n));
        return define_layer(im, n, li);
    }
    return 1;
}
