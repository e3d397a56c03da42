/* model/onnx/unit.c - see unit.h. The rewritten graph borrows what it does not change (the
 * original nodes, their names and inputs); what it changes are shallow copies and arrays of
 * its own, freed by unit_free, so the decoded model is never written. */
#include "unit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import_internal.h"
#include "onnx_import.h"

/* Most values of an axes, perm, shape or pads list the rewrite reads (pads: two per axis of
 * a rank-8 tensor). */
#define UNIT_INTS 16

struct unit {
    void **blocks; /* every allocation, freed together */
    size_t nblocks, capblocks;
    void **nodes; /* the rewritten nodes (Onnx__NodeProto *) */
    size_t nnodes, capnodes;
    void **inits; /* the constants they read (Onnx__TensorProto *) */
    size_t ninits, capinits;
    const Onnx__GraphProto *g;
    int64_t opset;
    Onnx__TensorProto *const *inits0;
    size_t n_inits0;
    const unit_shape_t *known;
    int nknown, nmade;
    char *err;
    size_t errlen;
};

static char empty_name[] = "";

static int ufail(unit_t *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int ufail(unit_t *u, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->err, u->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Appends p to the list *arr of *n (capacity *cap); 0, or -1 when out of memory. */
static int push(void ***arr, size_t *n, size_t *cap, void *p)
{
    if (*n == *cap) {
        const size_t c = *cap ? 2 * *cap : 16;
        void **a = realloc(*arr, c * sizeof *a);
        if (!a) return -1;
        *arr = a;
        *cap = c;
    }
    (*arr)[(*n)++] = p;
    return 0;
}

/* n zeroed bytes owned by u, or NULL. */
static void *ualloc(unit_t *u, size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (p && push(&u->blocks, &u->nblocks, &u->capblocks, p) != 0) {
        free(p);
        p = NULL;
    }
    return p;
}

static char *ustrdup(unit_t *u, const char *s)
{
    char *c = ualloc(u, strlen(s) + 1);
    if (c) memcpy(c, s, strlen(s) + 1);
    return c;
}

static int push_node(unit_t *u, const Onnx__NodeProto *n)
{
    return push(&u->nodes, &u->nnodes, &u->capnodes, (void *)n) ? ufail(u, "out of memory") : 0;
}

static const unit_shape_t *known_shape(const unit_t *u, const char *name)
{
    for (int i = 0; name && i < u->nknown; i++)
        if (u->known[i].name && strcmp(u->known[i].name, name) == 0) return &u->known[i];
    return NULL;
}

/* The int64 values of constant `name` (an initializer, a bound input or a Constant node's)
 * into v; their count, or -1 when it is no such constant of at most UNIT_INTS values. */
static int const_ints(const unit_t *u, const char *name, int64_t *v)
{
    for (size_t i = 0; i < u->n_inits0; i++)
        if (u->inits0[i]->name && strcmp(u->inits0[i]->name, name) == 0)
            return imp_tensor_ints(u->inits0[i], v, UNIT_INTS);
    for (size_t i = 0; i < u->g->n_node && i < ONNX_MAX_NODES; i++) {
        const Onnx__NodeProto *n = u->g->node[i];
        if (!n->op_type || strcmp(n->op_type, "Constant") != 0 || n->n_output < 1 || !n->output[0] ||
            strcmp(n->output[0], name) != 0)
            continue;
        const Onnx__AttributeProto *a = imp_attr(n, "value");
        if (a && a->t) return imp_tensor_ints(a->t, v, UNIT_INTS);
        a = imp_attr(n, "value_ints");
        if (!a || a->n_ints > UNIT_INTS) return -1;
        if (a->n_ints) memcpy(v, a->ints, a->n_ints * sizeof *v);
        return (int)a->n_ints;
    }
    return -1;
}

/* A new int64 constant of v[0..k) (a 1-D tensor); its name, or NULL when out of memory. */
static char *new_const(unit_t *u, const int64_t *v, int k)
{
    Onnx__TensorProto *t = ualloc(u, sizeof *t);
    int64_t *data = ualloc(u, ((size_t)k + 1) * sizeof *data), *dims = ualloc(u, sizeof *dims);
    char *name = ualloc(u, 48);
    if (!t || !data || !dims || !name) return NULL;
    onnx__tensor_proto__init(t);
    snprintf(name, 48, "pacer_unit_%d", u->nmade++);
    if (k) memcpy(data, v, (size_t)k * sizeof *v);
    dims[0] = k;
    t->name = name;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->n_int64_data = (size_t)k;
    t->int64_data = data;
    t->n_dims = 1;
    t->dims = dims;
    if (push(&u->inits, &u->ninits, &u->capinits, t) != 0) return NULL;
    return name;
}

/* A copy of n (its arrays shared until set_attr or set_input replaces them) appended to the
 * rewritten nodes, or NULL (err set). */
static Onnx__NodeProto *copy_node(unit_t *u, const Onnx__NodeProto *n)
{
    Onnx__NodeProto *c = ualloc(u, sizeof *c);
    if (!c) return ufail(u, "out of memory"), NULL;
    *c = *n;
    return push_node(u, c) ? NULL : c;
}

/* c's attribute `name` as the ints v[0..k) (is_int: the one int v[0]), replaced or added. */
static int set_attr(unit_t *u, Onnx__NodeProto *c, const char *name, const int64_t *v, int k, int is_int)
{
    Onnx__AttributeProto **arr = ualloc(u, (c->n_attribute + 1) * sizeof *arr), *a = ualloc(u, sizeof *a);
    int64_t *ints = ualloc(u, ((size_t)k + 1) * sizeof *ints);
    char *nm = ustrdup(u, name);
    if (!arr || !a || !ints || !nm) return ufail(u, "out of memory");
    size_t m = 0;
    for (size_t i = 0; i < c->n_attribute; i++)
        if (!c->attribute[i]->name || strcmp(c->attribute[i]->name, name) != 0) arr[m++] = c->attribute[i];
    onnx__attribute_proto__init(a);
    a->name = nm;
    a->has_type = 1;
    if (is_int) {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = 1;
        a->i = v[0];
    } else {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        if (k) memcpy(ints, v, (size_t)k * sizeof *v);
        a->n_ints = (size_t)k;
        a->ints = ints;
    }
    arr[m++] = a;
    c->attribute = arr;
    c->n_attribute = m;
    return 0;
}

/* c's input i as name (inputs before it that c lacks: absent, ""). */
static int set_input(unit_t *u, Onnx__NodeProto *c, size_t i, char *name)
{
    const size_t nin = c->n_input > i ? c->n_input : i + 1;
    char **arr = ualloc(u, nin * sizeof *arr);
    if (!arr || !name) return ufail(u, "out of memory");
    for (size_t k = 0; k < nin; k++) arr[k] = k < c->n_input ? c->input[k] : empty_name;
    arr[i] = name;
    c->input = arr;
    c->n_input = nin;
    return 0;
}

/* The refusal of node n that the rewrite cannot read as one sample: why. */
static int refuse(unit_t *u, const Onnx__NodeProto *n, const char *why)
{
    return ufail(u, "node '%s' (%s): read as one sample of fixed shape: %s", imp_node_name(n), n->op_type, why);
}

/* Axis a counted one further when it counts from the front (a negative one counts from
 * the end, which the leading 1 leaves where it was); the largest int64 stays as it is, for
 * the node's own refusal. */
static int64_t shifted(int64_t a) { return a >= 0 && a < INT64_MAX ? a + 1 : a; }

/* n's attribute axis (default dflt) one further. */
static int shift_axis_attr(unit_t *u, const Onnx__NodeProto *n, int64_t dflt)
{
    const int64_t a = shifted(imp_attr_int(n, "axis", dflt));
    Onnx__NodeProto *c = copy_node(u, n);
    return c ? set_attr(u, c, "axis", &a, 1, 1) : -1;
}

/* Whether n takes its axes as an attribute at the graph's opset (else as input 1). */
static int axes_attr_form(const unit_t *u, const Onnx__NodeProto *n)
{
    return strcmp(n->op_type, "ReduceMean") == 0 || u->opset < 13;
}

/* Squeeze, Unsqueeze, ReduceMean and ReduceSum: each axis one further; no axes (every axis
 * reduced, every axis of size 1 squeezed) named from the input's known shape. */
static int shift_axes(unit_t *u, const Onnx__NodeProto *n)
{
    int64_t v[UNIT_INTS];
    int k = 0;
    const Onnx__AttributeProto *a = imp_attr(n, "axes");
    const int reduce = strncmp(n->op_type, "Reduce", 6) == 0;
    if (a) {
        if (a->n_ints > UNIT_INTS) return refuse(u, n, "too many axes");
        for (size_t i = 0; i < a->n_ints; i++) v[k++] = a->ints[i];
    } else if (n->n_input > 1 && n->input[1][0] && (k = const_ints(u, n->input[1], v)) < 0)
        return refuse(u, n, "its axes are not a constant");
    if (k == 0 && reduce && imp_attr_int(n, "noop_with_empty_axes", 0)) return push_node(u, n);
    if (k == 0 && strcmp(n->op_type, "Unsqueeze") != 0) {
        const unit_shape_t *s = n->n_input ? known_shape(u, n->input[0]) : NULL;
        if (!s) return refuse(u, n, "no axes, and its input's shape is not known");
        for (int d = 0; d < s->ndims && k < UNIT_INTS; d++)
            if (reduce || s->dims[d] == 1) v[k++] = d;
    }
    for (int i = 0; i < k; i++) v[i] = shifted(v[i]);
    Onnx__NodeProto *c = copy_node(u, n);
    if (!c) return -1;
    if (axes_attr_form(u, n)) return set_attr(u, c, "axes", v, k, 0);
    return set_input(u, c, 1, new_const(u, v, k));
}

/* Slice (opset 10 on: starts, ends, axes and steps as inputs): each axis one further; no
 * axes (the first ones) named. */
static int shift_slice(unit_t *u, const Onnx__NodeProto *n)
{
    int64_t v[UNIT_INTS];
    int k;
    if (u->opset < 10) return refuse(u, n, "opset 10 or later only");
    if (n->n_input > 3 && n->input[3][0]) {
        if ((k = const_ints(u, n->input[3], v)) < 0) return refuse(u, n, "its axes are not a constant");
    } else {
        if (n->n_input < 2 || (k = const_ints(u, n->input[1], v)) < 0)
            return refuse(u, n, "its starts are not a constant");
        for (int i = 0; i < k; i++) v[i] = i;
    }
    for (int i = 0; i < k; i++) v[i] = shifted(v[i]);
    Onnx__NodeProto *c = copy_node(u, n);
    return c ? set_input(u, c, 3, new_const(u, v, k)) : -1;
}

/* Transpose: the leading 1 stays first, the others' perm one further (none: the reverse of
 * the input's known rank). */
static int shift_perm(unit_t *u, const Onnx__NodeProto *n)
{
    int64_t v[UNIT_INTS];
    int k = 0;
    const Onnx__AttributeProto *a = imp_attr(n, "perm");
    if (a) {
        if (a->n_ints + 1 > UNIT_INTS) return refuse(u, n, "too many axes");
        v[k++] = 0;
        for (size_t i = 0; i < a->n_ints; i++) v[k++] = a->ints[i] + 1;
    } else {
        const unit_shape_t *s = n->n_input ? known_shape(u, n->input[0]) : NULL;
        if (!s || s->ndims + 1 > UNIT_INTS) return refuse(u, n, "no perm, and its input's rank is not known");
        v[k++] = 0;
        for (int d = s->ndims; d >= 1; d--) v[k++] = d;
    }
    Onnx__NodeProto *c = copy_node(u, n);
    return c ? set_attr(u, c, "perm", v, k, 0) : -1;
}

/* A Reshape of x to the shape v[0..k) (a new node, output `out`); 0 or -1. */
/* A new node op of inputs x[0..nin) and output `out`, appended; the node, or NULL (err set). */
static Onnx__NodeProto *add_node(unit_t *u, const char *op, char *const *x, int nin, char *out)
{
    Onnx__NodeProto *c = ualloc(u, sizeof *c);
    char **in = ualloc(u, (size_t)nin * sizeof *in), **outs = ualloc(u, sizeof *outs), *o = ustrdup(u, op);
    int ok = c && in && outs && o && out;
    for (int i = 0; ok && i < nin; i++) ok = (in[i] = x[i]) != NULL;
    if (!ok) return ufail(u, "out of memory"), NULL;
    onnx__node_proto__init(c);
    outs[0] = out;
    c->op_type = o;
    c->name = out;
    c->n_input = (size_t)nin;
    c->input = in;
    c->n_output = 1;
    c->output = outs;
    return push_node(u, c) ? NULL : c;
}

static int add_reshape(unit_t *u, char *x, const int64_t *v, int k, char *out)
{
    char *in[2] = {x, new_const(u, v, k)};
    return add_node(u, "Reshape", in, 2, out) ? 0 : -1;
}

/* A name for a value the rewrite makes, or NULL. */
static char *made_name(unit_t *u)
{
    char name[48];
    snprintf(name, sizeof name, "pacer_unit_%d_made", u->nmade++);
    return ustrdup(u, name);
}

/* A new float32 scalar constant of v; its name, or NULL when out of memory. */
static char *new_float(unit_t *u, float v)
{
    Onnx__TensorProto *t = ualloc(u, sizeof *t);
    float *data = ualloc(u, sizeof *data);
    char *name = made_name(u);
    if (!t || !data || !name) return NULL;
    onnx__tensor_proto__init(t);
    *data = v;
    t->name = name;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->n_float_data = 1;
    t->float_data = data;
    return push(&u->inits, &u->ninits, &u->capinits, t) ? NULL : name;
}

/* Gemm, whose A is no longer 2-D: alpha * A' B' + beta * C as MatMul (A', B': A and B, or
 * their Transposes), Mul and Add, which broadcast. C a constant other than with beta 1
 * would be a product of two constants, which the importer does not fold: refused. */
static int gemm_matmul(unit_t *u, const Onnx__NodeProto *n)
{
    static const int64_t perm_a[3] = {0, 2, 1}, perm_b[2] = {1, 0};
    const float alpha = imp_attr_float(n, "alpha", 1.0f), beta = imp_attr_float(n, "beta", 1.0f);
    const int has_c = n->n_input > 2 && n->input[2][0];
    if (n->n_input < 2 || n->n_output < 1 || !n->output[0][0]) return refuse(u, n, "inputs A and B and an output");
    int64_t c_ints[UNIT_INTS];
    if (has_c && beta != 1.0f && const_ints(u, n->input[2], c_ints) >= 0)
        return refuse(u, n, "beta other than 1 with a constant C");
    for (size_t i = 0; has_c && beta != 1.0f && i < u->n_inits0; i++)
        if (u->inits0[i]->name && strcmp(u->inits0[i]->name, n->input[2]) == 0)
            return refuse(u, n, "beta other than 1 with a constant C");
    char *in[2] = {n->input[0], n->input[1]}, *y;
    for (int k = 0; k < 2; k++) {
        if (!imp_attr_int(n, k ? "transB" : "transA", 0)) continue;
        Onnx__NodeProto *t = add_node(u, "Transpose", &in[k], 1, made_name(u));
        if (!t || set_attr(u, t, "perm", k ? perm_b : perm_a, k ? 2 : 3, 0)) return -1;
        in[k] = t->output[0];
    }
    const int last = alpha == 1.0f && !has_c;
    if (!add_node(u, "MatMul", in, 2, y = last ? n->output[0] : made_name(u))) return -1;
    if (alpha != 1.0f) {
        char *m[2] = {y, new_float(u, alpha)};
        if (!add_node(u, "Mul", m, 2, y = has_c ? made_name(u) : n->output[0])) return -1;
    }
    if (!has_c) return 0;
    char *c[2] = {n->input[2], new_float(u, beta)}, *sum[2] = {y, n->input[2]};
    if (beta != 1.0f && !add_node(u, "Mul", c, 2, sum[1] = made_name(u))) return -1;
    return add_node(u, "Add", sum, 2, n->output[0]) ? 0 : -1;
}

/* Reshape and Expand: the shape with a leading 1. An Expand to more axes than its input
 * has first gets the input reshaped to that rank (its new axes after the leading 1), which
 * needs the input's known shape. */
static int shift_shape(unit_t *u, const Onnx__NodeProto *n)
{
    /* v: the leading 1, then the shape's up to UNIT_INTS values (const_ints' bound) */
    int64_t v[UNIT_INTS + 1], w[UNIT_INTS + 1];
    int k;
    if (n->n_input < 2 || (k = const_ints(u, n->input[1], v + 1)) < 0 || k + 1 > UNIT_INTS)
        return refuse(u, n, "its shape is not a constant of at most 15 values");
    v[0] = 1;
    char *x = n->input[0];
    const unit_shape_t *s = known_shape(u, x);
    if (strcmp(n->op_type, "Expand") == 0 && (!s || s->ndims < k)) {
        if (!s) return refuse(u, n, "its input's shape is not known");
        w[0] = 1;
        for (int d = 0; d < k - s->ndims; d++) w[1 + d] = 1;
        for (int d = 0; d < s->ndims; d++) w[1 + k - s->ndims + d] = s->dims[d];
        char *ranked = made_name(u);
        if (add_reshape(u, x, w, k + 1, ranked)) return -1;
        x = ranked;
    }
    Onnx__NodeProto *c = copy_node(u, n);
    return c && set_input(u, c, 0, x) == 0 ? set_input(u, c, 1, new_const(u, v, k + 1)) : -1;
}

/* Pad: no padding of the leading 1 (pads: the starts of every axis, then the ends). */
static int shift_pads(unit_t *u, const Onnx__NodeProto *n)
{
    int64_t v[UNIT_INTS], w[UNIT_INTS];
    int k = 0;
    const Onnx__AttributeProto *a = u->opset < 11 ? imp_attr(n, "pads") : NULL;
    if (a && a->n_ints <= UNIT_INTS - 2)
        for (size_t i = 0; i < a->n_ints; i++) v[k++] = a->ints[i];
    else if (u->opset < 11 || n->n_input < 2 || (k = const_ints(u, n->input[1], v)) < 0)
        return refuse(u, n, "its pads are not a constant");
    if (k % 2 || k + 2 > UNIT_INTS) return refuse(u, n, "its pads are not two per axis");
    for (int i = 0, r = k / 2; i < r; i++) w[1 + i] = v[i], w[2 + r + i] = v[r + i];
    w[0] = w[1 + k / 2] = 0;
    Onnx__NodeProto *c = copy_node(u, n);
    if (!c) return -1;
    return u->opset < 11 ? set_attr(u, c, "pads", w, k + 2, 0) : set_input(u, c, 1, new_const(u, w, k + 2));
}

/* Flatten to (A, B): a Reshape to (1, A, B), from the input's known shape. */
static int flatten_reshape(unit_t *u, const Onnx__NodeProto *n)
{
    const unit_shape_t *s = n->n_input ? known_shape(u, n->input[0]) : NULL;
    if (!s || n->n_output < 1) return refuse(u, n, "its input's shape is not known");
    int64_t ax = imp_attr_int(n, "axis", 1);
    if (ax < 0) ax += s->ndims;
    if (ax < 0 || ax > s->ndims) return refuse(u, n, "its axis is out of range");
    int64_t v[3] = {1, 1, 1};
    for (int d = 0; d < s->ndims; d++) v[d < ax ? 1 : 2] *= s->dims[d]; /* the case's counts: bounded */
    return add_reshape(u, n->input[0], v, 3, n->output[0]);
}

/* Node n of the graph as one sample's: as it is, or rewritten. */
static int unit_node(unit_t *u, const Onnx__NodeProto *n)
{
    static const char *const same[] = {"Abs",       "Add",        "Sub",      "Mul",
                                       "Div",       "Pow",        "Exp",      "Neg",
                                       "Sqrt",      "Reciprocal", "Relu",     "LeakyRelu",
                                       "Sigmoid",   "Tanh",       "Clip",     "HardSigmoid",
                                       "HardSwish", "Erf",        "Where",    "Identity",
                                       "Dropout",   "Cast",       "Constant", "Equal",
                                       "Not",       "Mod",        "MatMul",   "ConstantOfShape",
                                       "Range",     "ScatterND",  NULL};
    const char *op = n->op_type ? n->op_type : "";
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return refuse(u, n, "an operator of another domain");
    for (const char *const *s = same; *s; s++)
        if (strcmp(op, *s) == 0) return push_node(u, n);
    if (strcmp(op, "Concat") == 0 || strcmp(op, "Split") == 0 || strcmp(op, "Gather") == 0)
        return shift_axis_attr(u, n, 0);
    if (strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0)
        return shift_axis_attr(u, n, u->opset < 13 ? 1 : -1);
    if (strcmp(op, "LayerNormalization") == 0) return shift_axis_attr(u, n, -1);
    if (strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0 || strcmp(op, "ReduceMean") == 0 ||
        strcmp(op, "ReduceSum") == 0)
        return shift_axes(u, n);
    if (strcmp(op, "Slice") == 0) return shift_slice(u, n);
    if (strcmp(op, "Transpose") == 0) return shift_perm(u, n);
    if (strcmp(op, "Reshape") == 0 || strcmp(op, "Expand") == 0) return shift_shape(u, n);
    if (strcmp(op, "Pad") == 0) return shift_pads(u, n);
    if (strcmp(op, "Flatten") == 0) return flatten_reshape(u, n);
    if (strcmp(op, "Gemm") == 0) return gemm_matmul(u, n);
    return refuse(u, n, "an operator of batches only");
}

/* vi with a leading 1 before its declared dimensions (every one fixed), or NULL (err set). */
static Onnx__ValueInfoProto *unit_value_info(unit_t *u, const Onnx__ValueInfoProto *vi)
{
    const Onnx__TensorShapeProto *s = vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
                                              vi->type->tensor_type
                                          ? vi->type->tensor_type->shape
                                          : NULL;
    if (!s || s->n_dim + 1 > UNIT_INTS)
        return ufail(u, "output '%s': read as one sample of fixed shape: its shape is not declared",
                     vi->name ? vi->name : "?"),
               NULL;
    Onnx__ValueInfoProto *o = ualloc(u, sizeof *o);
    Onnx__TypeProto *tp = ualloc(u, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = ualloc(u, sizeof *tt);
    Onnx__TensorShapeProto *sh = ualloc(u, sizeof *sh);
    Onnx__TensorShapeProto__Dimension *dim = ualloc(u, (s->n_dim + 1) * sizeof *dim),
                                      **dimp = ualloc(u, (s->n_dim + 1) * sizeof *dimp);
    if (!o || !tp || !tt || !sh || !dim || !dimp) return ufail(u, "out of memory"), NULL;
    for (size_t d = 0; d <= s->n_dim; d++) {
        onnx__tensor_shape_proto__dimension__init(&dim[d]);
        dim[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        if (d && s->dim[d - 1]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            return ufail(u, "output '%s': read as one sample of fixed shape: dimension %zu is not fixed",
                         vi->name ? vi->name : "?", d - 1),
                   NULL;
        dim[d].dim_value = d ? s->dim[d - 1]->dim_value : 1;
        dimp[d] = &dim[d];
    }
    onnx__value_info_proto__init(o);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = s->n_dim + 1;
    sh->dim = dimp;
    *tt = *vi->type->tensor_type;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    o->name = vi->name;
    o->type = tp;
    return o;
}

int unit_rewrite(const Onnx__GraphProto *g, int64_t opset, Onnx__TensorProto *const *inits0, size_t n_inits0,
                 const unit_shape_t *known, int nknown, size_t output, unit_t **out, Onnx__NodeProto ***nodes,
                 size_t *n_nodes, Onnx__TensorProto ***inits, size_t *n_inits, Onnx__ValueInfoProto **out_vi, char *err,
                 size_t errlen)
{
    *out = NULL;
    unit_t *u = calloc(1, sizeof *u);
    if (!u) return snprintf(err, errlen, "onnx: out of memory"), -1;
    *u = (unit_t){.g = g,
                  .opset = opset,
                  .inits0 = inits0,
                  .n_inits0 = n_inits0,
                  .known = known,
                  .nknown = nknown,
                  .err = err,
                  .errlen = errlen};
    int rc = output < g->n_output ? 0 : ufail(u, "onnx: no output %zu", output);
    for (size_t i = 0; rc == 0 && i < g->n_node && i < ONNX_MAX_NODES; i++) rc = unit_node(u, g->node[i]);
    if (rc == 0 && !(*out_vi = unit_value_info(u, g->output[output]))) rc = -1;
    if (rc != 0) {
        unit_free(u);
        return -1;
    }
    Onnx__NodeProto **na = ualloc(u, (u->nnodes + 1) * sizeof *na);
    Onnx__TensorProto **ia = ualloc(u, (u->ninits + 1) * sizeof *ia);
    if (!na || !ia) {
        snprintf(err, errlen, "onnx: out of memory");
        unit_free(u);
        return -1;
    }
    for (size_t i = 0; i < u->nnodes; i++) na[i] = u->nodes[i];
    for (size_t i = 0; i < u->ninits; i++) ia[i] = u->inits[i];
    *nodes = na;
    *n_nodes = u->nnodes;
    *inits = ia;
    *n_inits = u->ninits;
    *out = u;
    return 0;
}

void unit_free(unit_t *u)
{
    if (!u) return;
    for (size_t i = 0; i < u->nblocks; i++) free(u->blocks[i]);
    free(u->blocks);
    free(u->nodes);
    free(u->inits);
    free(u);
}
