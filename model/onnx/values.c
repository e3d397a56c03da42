/* model/onnx/values.c - the importer's values (what a node input names) and the helpers every translation uses (import_internal.h). */
#include "import_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errmsg.h"
#include "onnx_import.h"
#include "onnx.pb-c.h"
#include "op_table.h"
#include "sha256.h"

int imp_fail(imp_t *im, const char *fmt, ...)
{
    if (im->sym_refused) return -1; /* input_ints's message names the cause */
    va_list ap;
    va_start(ap, fmt);
    const int rc = errmsg_v(im->err, im->errlen, -1, fmt, ap);
    va_end(ap);
    return rc;
}

size_text_t imp_size_text(size_t bytes)
{
    size_text_t t;
    if (bytes < (1 << 20)) snprintf(t.s, sizeof t.s, "%zu bytes", bytes);
    else snprintf(t.s, sizeof t.s, "%.0f MiB", (double)bytes / (1 << 20));
    return t;
}

/* ---- values --------------------------------------------------------------------------- */

value_t *imp_find_value(imp_t *im, const char *name)
{
    /* the latest definition wins (names are unique in a valid graph) */
    for (size_t i = im->nvals; i-- > 0;)
        if (strcmp(im->vals[i].name, name) == 0) return &im->vals[i];
    return NULL;
}

value_t *imp_add_value(imp_t *im, const char *name, vkind_t kind)
{
    if (im->nvals == im->cap) {
        size_t c = im->cap ? 2 * im->cap : 64;
        value_t *v = realloc(im->vals, c * sizeof *v);
        if (!v) return NULL;
        im->vals = v;
        im->cap = c;
    }
    value_t *v = &im->vals[im->nvals++];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->kind = kind;
    return v;
}

/* Elements of t (product of its dims), or -1 when a dimension is negative or too large. */
int64_t imp_tensor_count(const Onnx__TensorProto *t)
{
    int64_t n = 1;
    if (t->n_dims > 8) return -1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || t->dims[i] > DIM_MAX) return -1;
        n *= t->dims[i];
        if (n > ((int64_t)1 << 31)) return -1;
    }
    return n;
}

/* Copies a FLOAT tensor of exactly n elements into dst; 0, or -1 with the reason. */
int imp_tensor_floats(imp_t *im, const Onnx__TensorProto *t, float *dst, size_t n)
{
    if (!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return imp_fail(im, "initializer '%s': data type %d, only float (1) is supported", t->name ? t->name : "",
                        (int)t->data_type);
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return imp_fail(im, "initializer '%s': external data is not supported (save the model with its weights inside)",
                        t->name ? t->name : "");
    if (imp_tensor_count(t) != (int64_t)n)
        return imp_fail(im, "initializer '%s': %lld elements, the layer needs %zu", t->name ? t->name : "",
                        (long long)imp_tensor_count(t), n);
    if (t->has_raw_data) {
        if (t->raw_data.len != n * sizeof(float))
            return imp_fail(im, "initializer '%s': %zu bytes of raw data for %zu floats", t->name ? t->name : "",
                            t->raw_data.len, n);
        /* little-endian IEEE 754, as ONNX stores it and as the hosts pacer runs on are */
        memcpy(dst, t->raw_data.data, n * sizeof(float));
        return 0;
    }
    if (t->n_float_data != n)
        return imp_fail(im, "initializer '%s': %zu float values for %zu elements", t->name ? t->name : "",
                        t->n_float_data, n);
    memcpy(dst, t->float_data, n * sizeof(float));
    return 0;
}

/* The int64 values of a small INT64 tensor (a shape, pads); their count, or -1. */
int imp_tensor_ints(const Onnx__TensorProto *t, int64_t *dst, int max)
{
    if (!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64) return -1;
    int64_t n = imp_tensor_count(t);
    if (n < 0 || n > max) return -1;
    /* an empty tensor (a shape with no axes) may have no data at all */
    if (t->has_raw_data) {
        if (t->raw_data.len != (size_t)n * 8) return -1;
        if (n) memcpy(dst, t->raw_data.data, (size_t)n * 8);
    } else {
        if (t->n_int64_data != (size_t)n) return -1;
        if (n) memcpy(dst, t->int64_data, (size_t)n * 8);
    }
    return (int)n;
}

const char *imp_node_name(const Onnx__NodeProto *n)
{
    if (n->name && n->name[0]) return n->name;
    return n->n_output > 0 && n->output[0] ? n->output[0] : "(unnamed)";
}

const Onnx__AttributeProto *imp_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
    return NULL;
}

/* Refuses an attribute of n not in the NULL-terminated list known. */
int imp_check_attrs(imp_t *im, const Onnx__NodeProto *n, const char *const *known)
{
    for (size_t i = 0; i < n->n_attribute; i++) {
        const char *a = n->attribute[i]->name ? n->attribute[i]->name : "";
        int ok = 0;
        for (const char *const *k = known; *k; k++) ok |= strcmp(*k, a) == 0;
        if (!ok)
            return imp_fail(im, "node '%s' (%s): attribute '%s' is not supported", imp_node_name(n), n->op_type, a);
    }
    return 0;
}

int64_t imp_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = imp_attr(n, name);
    return a && a->has_i ? a->i : dflt;
}

float imp_attr_float(const Onnx__NodeProto *n, const char *name, float dflt)
{
    const Onnx__AttributeProto *a = imp_attr(n, name);
    return a && a->has_f ? a->f : dflt;
}

/* Whether node n may read value name as an activation: the integer token ids are read only
 * by lm_node's embedding Gathers (lm.c, which takes them before this is asked) and Shape;
 * every value else, 1. */
static int ids_reader_ok(const imp_t *im, const Onnx__NodeProto *n, const char *name)
{
    if (!im->int_input || strcmp(name, im->input) != 0) return 1;
    return strcmp(n->op_type, "Shape") == 0;
}

/* The activation a node reads as input i: the graph input or a layer's output. */
int imp_input_layer(imp_t *im, const Onnx__NodeProto *n, size_t i, const value_t **vout)
{
    if (i >= n->n_input || !n->input[i] || !n->input[i][0])
        return imp_fail(im, "node '%s' (%s): input %zu is missing", imp_node_name(n), n->op_type, i);
    const value_t *v = imp_find_value(im, n->input[i]);
    if (!v)
        return imp_fail(im,
                        "node '%s' (%s): input '%s' is produced by no earlier node (unsupported output or "
                        "unsorted graph)",
                        imp_node_name(n), n->op_type, n->input[i]);
    if (!ids_reader_ok(im, n, n->input[i]))
        return imp_fail(im,
                        "node '%s' (%s): input '%s' holds integer token ids, which only an embedding (Gather of an "
                        "initializer's rows) reads",
                        imp_node_name(n), n->op_type, n->input[i]);
    if (v->transposed)
        return imp_fail(im, "node '%s' (%s): input '%s' is a Transpose of an initializer, which only MatMul reads",
                        imp_node_name(n), n->op_type, n->input[i]);
    if (v->kind == V_TENSOR || v->kind == V_ARRAY || v->kind == V_INTS)
        return imp_fail(im, "node '%s' (%s): input '%s' is a constant where an activation is expected",
                        imp_node_name(n), n->op_type, n->input[i]);
    const int cpad = v->kind == V_PADDED && (v->cpads[0] || v->cpads[1]);
    if (v->kind == V_PADDED && !cpad && strcmp(n->op_type, "AveragePool") != 0 && strcmp(n->op_type, "Conv") != 0)
        return imp_fail(im, "node '%s' (%s): reads the output of a Pad; only Conv and AveragePool may",
                        imp_node_name(n), n->op_type);
    if (cpad && strcmp(n->op_type, "Add") != 0)
        return imp_fail(im, "node '%s' (%s): reads a Pad of channels; only Add may (a residual's shortcut)",
                        imp_node_name(n), n->op_type);
    if (v->defer && strcmp(n->op_type, "Gather") != 0)
        return imp_fail(im,
                        "node '%s' (%s): reads '%s', a Transpose that moves the batch axis; only a Gather on axis 0 "
                        "may",
                        imp_node_name(n), n->op_type, n->input[i]);
    static const char *const lead_reader[] = {"Reshape", "Transpose", "MatMul",   "Gemm",    "Add",    "Sub",
                                              "Mul",     "Div",       "Relu",     "Sigmoid", "Tanh",   "Erf",
                                              "Softmax", "Dropout",   "Identity", "Shape",   "Gather", NULL};
    int ok = !v->lead;
    for (const char *const *r = lead_reader; !ok && *r; r++) ok = strcmp(*r, n->op_type) == 0;
    if (!ok)
        return imp_fail(
            im,
            "node '%s' (%s): reads '%s', whose batch axis holds several of the sample's elements (a "
            "Reshape to (N * k, ...)); only Reshape, Transpose, MatMul, Gemm, Add, Sub, Mul, Div, Relu, Sigmoid, "
            "Tanh, Erf, Softmax, "
            "Dropout, Identity, Shape and Gather read such a value",
            imp_node_name(n), n->op_type, n->input[i]);
    if (vout) *vout = v;
    return 0;
}

const Onnx__TensorProto *imp_input_tensor(imp_t *im, const Onnx__NodeProto *n, size_t i)
{
    if (i >= n->n_input || !n->input[i] || !n->input[i][0]) return NULL;
    const value_t *v = imp_find_value(im, n->input[i]);
    if (v && v->transposed && strcmp(n->op_type, "MatMul") != 0) return NULL;
    return v && v->kind == V_TENSOR ? v->tensor : NULL;
}

/* A weight's tensor is named by the value the node reads (an initializer's name, or the
 * name the exporter gave a deduplicated copy through Identity), and loaded from that
 * value's data. */
int imp_weight_name_ok(imp_t *im, const Onnx__NodeProto *n, size_t i)
{
    const char *name = n->input[i];
    if (!name[0] || strlen(name) >= MODEL_TENSOR_NAME_MAX)
        return imp_fail(im, "node '%s' (%s): weight name '%.64s' is empty or longer than %d bytes", imp_node_name(n),
                        n->op_type, name, MODEL_TENSOR_NAME_MAX - 1);
    return 0;
}

int imp_bias_vector(const Onnx__TensorProto *c, int64_t OUT)
{
    if (c->n_dims < 1 || c->dims[c->n_dims - 1] != OUT) return 0;
    for (size_t d = 0; d + 1 < c->n_dims; d++)
        if (c->dims[d] != 1) return 0;
    return 1;
}

int imp_gemm_linear(imp_t *im, const Onnx__NodeProto *n, int IN, int *out, gemm_layout_t *layout, const char **bias)
{
    const int64_t tb = imp_attr_int(n, "transB", 0);
    const Onnx__TensorProto *w = imp_input_tensor(im, n, 1), *c = imp_input_tensor(im, n, 2);
    const int has_c = n->n_input > 2 && n->input[2][0], t = tb == 1;
    if ((tb != 0 && tb != 1) || imp_attr_float(n, "alpha", 1.0f) != 1.0f || imp_attr_float(n, "beta", 1.0f) != 1.0f ||
        IN < 1 || !w || w->n_dims != 2 || w->dims[t ? 1 : 0] != IN || w->dims[t ? 0 : 1] < 1 ||
        w->dims[t ? 0 : 1] > DIM_MAX || (has_c && (!c || !imp_bias_vector(c, w->dims[t ? 0 : 1]))))
        return 1;
    if (imp_weight_name_ok(im, n, 1) || (has_c && imp_weight_name_ok(im, n, 2))) return -1;
    *out = (int)w->dims[t ? 0 : 1];
    *layout = t ? GEMM_W_OUT_IN : GEMM_W_IN_OUT;
    *bias = has_c ? n->input[2] : NULL;
    return 0;
}

/* The batch shape of per-sample shape s, "(N, 4, 5)" or "(N)", into buf; returns buf. */
const char *imp_batch_text(const model_shape_t *s, char *buf, size_t len)
{
    char t[80];
    model_shape_text(s, t, sizeof t);
    snprintf(buf, len, "(N%s%s", s->rank ? ", " : ")", s->rank ? t + 1 : "");
    return buf;
}

/* Input i of n as a small int vector (a constant INT64 tensor or a V_INTS); 0, or -1. */
static int input_ints(imp_t *im, const Onnx__NodeProto *n, size_t i, int64_t *out, int *count, int *scalar, int sym)
{
    if (i >= n->n_input || !n->input[i][0]) return -1;
    const value_t *v = imp_find_value(im, n->input[i]);
    if (!v) return -1;
    if (v->kind == V_INTS) {
        for (int k = 0; !sym && k < v->nints; k++)
            if (is_affine(v->ints[k])) {
                int64_t bk, bc;
                char times[32] = "";
                sym_parts(v->ints[k], &bk, &bc);
                if (bk > 1) snprintf(times, sizeof times, " * %lld", (long long)bk);
                imp_fail(im,
                         "node '%s' (%s): input '%s' holds N%s %c %lld, the batch size plus a constant, which only "
                         "shape arithmetic reads (a size, bound or index of it is not supported)",
                         imp_node_name(n), n->op_type, n->input[i], times, bc < 0 ? '-' : '+',
                         (long long)(bc < 0 ? -bc : bc));
                im->sym_refused = 1;
                return -1;
            }
        memcpy(out, v->ints, (size_t)v->nints * sizeof *out);
        *count = v->nints;
        *scalar = v->scalar;
        return 0;
    }
    if (v->kind == V_ARRAY) {
        if (v->table || v->arank > 1 || v->acount > INTS_MAX) return -1;
        for (size_t k = 0; k < v->acount; k++) {
            if (!(fabs(v->arr[k]) <= (double)DIM_MAX * DIM_MAX) || v->arr[k] != floor(v->arr[k])) return -1;
            out[k] = (int64_t)v->arr[k];
        }
        *count = (int)v->acount;
        *scalar = v->arank == 0;
        return 0;
    }
    if (v->kind != V_TENSOR) return -1;
    int c = imp_tensor_ints(v->tensor, out, INTS_MAX);
    if (c < 0 || v->tensor->n_dims > 1) return -1;
    *count = c;
    *scalar = v->tensor->n_dims == 0;
    return 0;
}

int imp_input_ints(imp_t *im, const Onnx__NodeProto *n, size_t i, int64_t *out, int *count, int *scalar)
{
    return input_ints(im, n, i, out, count, scalar, 0);
}

int imp_input_sym(imp_t *im, const Onnx__NodeProto *n, size_t i, int64_t *out, int *count, int *scalar)
{
    return input_ints(im, n, i, out, count, scalar, 1);
}

int imp_define_ints(imp_t *im, const Onnx__NodeProto *n, const int64_t *ints, int count, int scalar)
{
    value_t *v = imp_add_value(im, n->output[0], V_INTS);
    if (!v) return imp_fail(im, "out of memory");
    memcpy(v->ints, ints, (size_t)count * sizeof *ints);
    v->nints = count;
    v->scalar = scalar;
    return 0;
}

/* The nodes that read value name into r[0..max), in graph order; returns how many there are
 * (max + 1 for more than max; the graph's output counts as a reader that is no node). */
int imp_readers(const imp_t *im, const char *name, const Onnx__NodeProto **r, int max)
{
    int k = strcmp(im->output, name) == 0 ? max + 1 : 0;
    for (size_t i = 0; i < im->g->n_node && k <= max; i++)
        for (size_t j = 0; j < im->g->node[i]->n_input && k <= max; j++)
            if (strcmp(im->g->node[i]->input[j], name) == 0) {
                if (k < max) r[k] = im->g->node[i];
                k++;
                break; /* a node reading it twice is one reader */
            }
    return k;
}

/* Operand i of a binary operator as a layer: an activation (not flattened, unless it has
 * one axis), or a constant (an initializer: a parameter; a Constant node: a buffer) as a
 * LAYER_CONST, made once per value, whose shape loses a leading 1 that stands for the batch
 * (act_rank: the other operand's per-sample rank, -1 when both are constants). */
int binary_operand(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, size_t i, int act_rank, int *li)
{
    value_t *v = i < n->n_input && n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
    if (v && v->transposed)
        return imp_fail(im, "node '%s' (%s): input '%s' is a Transpose of an initializer, which only MatMul reads",
                        imp_node_name(n), n->op_type, n->input[i]);
    if (v && (v->kind == V_TENSOR || v->kind == V_ARRAY)) {
        if (v->const_layer) return *li = v->const_layer - 1, 0;
        const Onnx__TensorProto *t = v->kind == V_TENSOR ? v->tensor : NULL;
        model_shape_t s = {.rank = t ? (int)t->n_dims : v->arank};
        const int64_t count = t ? imp_tensor_count(t) : (int64_t)v->acount;
        int ok = count > 0 && s.rank <= MODEL_MAX_RANK + 1;
        for (int d = 0; ok && d < s.rank; d++) s.dims[d] = (int)(t ? t->dims[d] : v->adims[d]);
        if (ok && act_rank >= 0 && s.rank == act_rank + 1 && s.dims[0] == 1) {
            s.rank--;
            memmove(s.dims, s.dims + 1, (size_t)s.rank * sizeof *s.dims);
        }
        if (!ok || s.rank > MODEL_MAX_RANK || (act_rank >= 0 && s.rank > act_rank)) {
            char ts[96];
            return imp_fail(im,
                            "node '%s' (%s): constant '%s' is %s: a constant operand has elements and at most the %d "
                            "axes of the activation's samples (and a leading 1 for the batch)",
                            imp_node_name(n), n->op_type, n->input[i],
                            ok ? model_shape_text(&s, ts, sizeof ts) : "empty", act_rank);
        }
        if (imp_weight_name_ok(im, n, i)) return -1;
        if (v->kind == V_ARRAY && v->table) {
            /* a gathered parameter (a relative position bias): the table and its indices */
            const value_t *tv = imp_find_value(im, v->table);
            model_shape_t ts = {.rank = tv && tv->kind == V_TENSOR ? (int)tv->tensor->n_dims : 0};
            for (int d = 0; d < ts.rank && d < MODEL_MAX_RANK; d++) ts.dims[d] = (int)tv->tensor->dims[d];
            if (strlen(v->table) >= MODEL_TENSOR_NAME_MAX)
                return imp_fail(im, "node '%s' (%s): parameter name '%.64s' is longer than %d bytes", imp_node_name(n),
                                n->op_type, v->table, MODEL_TENSOR_NAME_MAX - 1);
            *li = model_build_gather_param(b, &s, &ts, v->table, n->input[i]);
            if (model_build_failed(b))
                return imp_fail(im,
                                "node '%s' (%s): parameter '%s' gathered into %lld elements: at most 2^24 of a table "
                                "below 2^24",
                                imp_node_name(n), n->op_type, v->table, (long long)count);
        } else *li = model_build_const(b, &s, n->input[i], v->constant_node || v->kind == V_ARRAY);
        v->const_layer = *li + 1;
        return 0;
    }
    const value_t *x;
    model_shape_t s;
    if (imp_input_layer(im, n, i, &x)) return -1;
    model_build_shape_nd(b, x->layer, &s);
    if (x->flat && s.rank > 1)
        return imp_fail(im, "node '%s' (%s): input '%s' is flattened: broadcasting reads N-D activations only",
                        imp_node_name(n), n->op_type, n->input[i]);
    *li = x->layer;
    return 0;
}
