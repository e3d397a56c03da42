/* model/onnx/nodes_common.c - see nodes_common.h. */
#include "nodes_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

/* Defines the node's first output as layer li (flat as given); refuses further outputs that
 * are named (BatchNormalization's training outputs and MaxPool's Indices are not values
 * any later node may read, so they are simply not defined). */
int define_output(imp_t *im, const Onnx__NodeProto *n, int li, int flat)
{
    if (n->n_output < 1 || !n->output[0] || !n->output[0][0])
        return imp_fail(im, "node '%s' (%s): no output", imp_node_name(n), n->op_type);
    int lead = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const value_t *x = n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
        lead |= x && x->kind == V_LAYER && x->lead;
    }
    value_t *v = imp_add_value(im, n->output[0], V_LAYER);
    if (!v) return imp_fail(im, "out of memory");
    v->layer = li;
    v->flat = flat;
    v->lead = lead && !flat; /* the elementwise and axis-keeping readers' (lead_reader) */
    return 0;
}

/* A frozen constant of one element, value f, named "<of>/<what>" (a name no node gives: a
 * value of that name in the graph is refused), whose buffer import_model fills. */
int scalar_constant(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const char *of, const char *what, float f,
                    int *li)
{
    char name[MODEL_TENSOR_NAME_MAX];
    if (snprintf(name, sizeof name, "%s/%s", of, what) >= (int)sizeof name || imp_find_value(im, name))
        return imp_fail(im, "node '%s' (%s): no room for a constant named '%.64s/%s'", imp_node_name(n), n->op_type, of,
                        what);
    char *own = strdup(name);
    double *arr = malloc(sizeof *arr);
    value_t *v = own && arr ? imp_add_value(im, own, V_ARRAY) : NULL;
    if (!v) return free(own), free(arr), imp_fail(im, "out of memory");
    v->owned_name = own;
    v->arr = arr;
    arr[0] = f;
    v->acount = 1;
    v->afloat = 1;
    *li = model_build_const(b, &(model_shape_t){.rank = 0}, own, 1);
    v->const_layer = *li + 1;
    return 0;
}

/* Whether n is a node of operator op (a node of the graph may have none: do_node refuses it
 * when it gets there, a pattern probe only passes it by). */
int op_is(const Onnx__NodeProto *n, const char *op) { return n && n->op_type && strcmp(n->op_type, op) == 0; }

/* The node that alone reads value name (the graph's output is read by the caller too), or
 * NULL. */
const Onnx__NodeProto *sole_reader(const imp_t *im, const char *name)
{
    const Onnx__NodeProto *r[1];
    return imp_readers(im, name, r, 1) == 1 ? r[0] : NULL;
}

/* Whether value name is a float scalar (then in *f): an initializer or Constant seen
 * already, or a Constant node later in the graph (torch writes a pattern's constants where
 * it uses them). */
int scalar_value(imp_t *im, const char *name, float *f)
{
    const value_t *val = imp_find_value(im, name);
    const Onnx__TensorProto *t = val && val->kind == V_TENSOR ? val->tensor : NULL;
    for (size_t i = 0; !val && i < im->g->n_node; i++) {
        const Onnx__NodeProto *c = im->g->node[i];
        const Onnx__AttributeProto *a = op_is(c, "Constant") && c->n_output == 1 && strcmp(c->output[0], name) == 0
                                            ? imp_attr(c, "value")
                                            : NULL;
        if (a && a->t) t = a->t;
    }
    const size_t keep = im->errlen; /* a probe: tensor_floats' refusal is not this node's (not written) */
    im->errlen = 0;
    const int ok = t && imp_tensor_count(t) == 1 && imp_tensor_floats(im, t, f, 1) == 0;
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
int is_op_scalar(imp_t *im, const Onnx__NodeProto *n, const char *op, const char *a, float v)
{
    if (!op_is(n, op) || n->n_input != 2 || n->n_output != 1 || n->n_attribute) return 0;
    if (!a) return is_scalar(im, n->input[1], v, 1e-6f);
    for (int k = 0; k < 2; k++)
        if (strcmp(n->input[k], a) == 0 && is_scalar(im, n->input[1 - k], v, 1e-6f)) return 1;
    return 0;
}

/* The per-sample shape of value x as the graph sees it: a flattened one (N, C*H*W) has one
 * axis. */
void seen_shape(model_builder_t *b, const value_t *x, model_shape_t *s)
{
    model_build_shape_nd(b, x->layer, s);
    if (!x->flat) return;
    int n = 1;
    for (int d = 0; d < s->rank; d++) n *= s->dims[d];
    *s = (model_shape_t){.rank = 1, .dims = {n}};
}

/* x's layer, or a reshape of it to s (seen_shape's) where its own shape is another: what a
 * layer normalising along the graph's axes reads. */
int as_seen(model_builder_t *b, const value_t *x, const model_shape_t *s)
{
    model_shape_t own;
    model_build_shape_nd(b, x->layer, &own);
    return model_shape_equal(&own, s) ? x->layer : model_build_reshape(b, x->layer, s);
}
