/* model/onnx_export.c - see onnx_export.h.
 *
 * The decoded ModelProto is changed in place only through shallow edits (a node's counts and
 * op_type, an initializer's data pointers), each undone before protobuf-c frees the message,
 * so protobuf-c only ever frees what it allocated. */
#include "onnx_export.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "op_table.h"
#include "version.h"

/* One initializer's data as decoded, put back before the message is freed. */
typedef struct {
    Onnx__TensorProto *t;
    protobuf_c_boolean has_raw_data;
    ProtobufCBinaryData raw_data;
    size_t n_float_data;
} saved_tensor_t;

/* The tensor a value name holds: its initializer, or through Identity nodes (torch's
 * exporter writes one for each initializer equal to another, e.g. a fresh batch norm's
 * running variance and weight, both ones) the initializer or Constant behind it; NULL if
 * none. */
static const Onnx__TensorProto *source_tensor(const Onnx__GraphProto *g, const char *name)
{
    for (size_t hop = 0; name && hop <= g->n_node; hop++) {
        for (size_t k = 0; k < g->n_initializer; k++)
            if (g->initializer[k]->name && strcmp(g->initializer[k]->name, name) == 0) return g->initializer[k];
        const Onnx__NodeProto *n = NULL;
        for (size_t i = 0; i < g->n_node && !n; i++)
            if (g->node[i]->n_output == 1 && g->node[i]->output[0] && strcmp(g->node[i]->output[0], name) == 0)
                n = g->node[i];
        if (!n || !n->op_type) return NULL;
        if (strcmp(n->op_type, "Constant") == 0) {
            for (size_t a = 0; a < n->n_attribute; a++)
                if (n->attribute[a]->name && strcmp(n->attribute[a]->name, "value") == 0) return n->attribute[a]->t;
            return NULL;
        }
        if (strcmp(n->op_type, "Identity") != 0 || n->n_input != 1) return NULL;
        name = n->input[0];
    }
    return NULL;
}

/* The weights: every tensor of m into the initializer of its name, as raw little-endian
 * floats (the importer read them so, tensor_floats). A tensor whose name is not an
 * initializer's (an Identity of one, a Constant) gets an initializer of its own in extra
 * (trained, it no longer equals the one it was tied to), appended to the list in inits;
 * live_nodes then drops the node that defined the name. */
/* Whether tensor ti is a frozen LAYER_CONST's: a Constant node's value, which training
 * never changes; it stays the file's Constant (made an initializer, it would import as a
 * trainable parameter). So are a LAYER_GATHER_PARAM's indices (an int64 Constant). */
static int frozen_const(const model_t *m, const tensor_info_t *ti)
{
    for (int i = 0; i < m->nlayers; i++)
        if ((m->layers[i].kind == LAYER_CONST && m->layers[i].op.cnst.frozen && ti->is_buffer &&
             m->layers[i].w_off == ti->offset) ||
            (m->layers[i].kind == LAYER_GATHER_PARAM && ti->is_buffer && m->layers[i].rm_off == ti->offset))
            return 1;
    return 0;
}

static int put_weights(Onnx__GraphProto *g, const model_t *m, saved_tensor_t *saved, Onnx__TensorProto *extra,
                       Onnx__TensorProto **inits, char *err, size_t errlen)
{
    size_t nextra = 0;
    for (int i = 0; i < m->ntensors; i++) {
        const tensor_info_t *ti = &m->tensors[i];
        if (frozen_const(m, ti)) continue;
        Onnx__TensorProto *t = NULL;
        for (size_t k = 0; k < g->n_initializer && !t; k++)
            if (g->initializer[k]->name && strcmp(g->initializer[k]->name, ti->name) == 0) t = g->initializer[k];
        const Onnx__TensorProto *src = t ? t : source_tensor(g, ti->name);
        if (!src)
            return snprintf(err, errlen, "onnx: no initializer '%s' (not the file the model was imported from)",
                            ti->name),
                   -1;
        size_t count = 1;
        for (size_t d = 0; d < src->n_dims; d++) count *= src->dims[d] > 0 ? (size_t)src->dims[d] : 0;
        if (count != ti->count || src->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
            return snprintf(err, errlen,
                            "onnx: initializer '%s' has %zu elements of type %d, the model's tensor %zu floats "
                            "(not the file the model was imported from)",
                            ti->name, count, (int)src->data_type, ti->count),
                   -1;
        if (t) {
            saved[i] = (saved_tensor_t){t, t->has_raw_data, t->raw_data, t->n_float_data};
        } else {
            t = &extra[nextra];
            inits[g->n_initializer + nextra++] = t;
            onnx__tensor_proto__init(t);
            t->name = (char *)ti->name;
            t->n_dims = src->n_dims;
            t->dims = src->dims;
            t->has_data_type = 1;
            t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        }
        t->has_raw_data = 1;
        t->raw_data.data = (uint8_t *)((ti->is_buffer ? m->buffers : m->params) + ti->offset);
        t->raw_data.len = ti->count * sizeof(float);
        t->n_float_data = 0;
    }
    if (nextra) {
        memcpy(inits, g->initializer, g->n_initializer * sizeof *inits);
        g->initializer = inits;
        g->n_initializer += nextra;
    }
    return 0;
}

/* The inference form: a training-form batch norm keeps its first output and loses
 * training_mode; a Dropout or an ai.pacer:StochasticDepth is an Identity of its first input. attrs holds, per node, the
 * attribute array that leaves training_mode out (NULL when the node keeps its own). */
static int inference_form(Onnx__GraphProto *g, Onnx__AttributeProto ***attrs)
{
    for (size_t i = 0; i < g->n_node; i++) {
        Onnx__NodeProto *n = g->node[i];
        if (!n->op_type) continue;
        if (strcmp(n->op_type, "BatchNormalization") == 0) {
            if (n->n_output > 1) n->n_output = 1;
            size_t keep = 0;
            for (size_t a = 0; a < n->n_attribute; a++)
                if (!n->attribute[a]->name || strcmp(n->attribute[a]->name, "training_mode") != 0) keep++;
            if (keep == n->n_attribute) continue;
            attrs[i] = malloc((keep ? keep : 1) * sizeof **attrs);
            if (!attrs[i]) return -1;
            keep = 0;
            for (size_t a = 0; a < n->n_attribute; a++)
                if (!n->attribute[a]->name || strcmp(n->attribute[a]->name, "training_mode") != 0)
                    attrs[i][keep++] = n->attribute[a];
            n->attribute = attrs[i];
            n->n_attribute = keep;
        } else if (strcmp(n->op_type, "Dropout") == 0 ||
                   (n->domain && strcmp(n->domain, "ai.pacer") == 0 && strcmp(n->op_type, "StochasticDepth") == 0)) {
            /* stochastic depth, too, is the identity at evaluation: a runtime (onnxruntime)
             * that knows no ai.pacer operator runs the file */
            n->op_type = (char *)"Identity";
            n->domain = (char *)"";
            if (n->n_input > 1) n->n_input = 1;
            if (n->n_output > 1) n->n_output = 1;
            n->n_attribute = 0;
        }
    }
    return 0;
}

/* Whether a node or the graph's output reads value name. */
static int value_used(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++)
            if (g->node[i]->input[k] && strcmp(g->node[i]->input[k], name) == 0) return 1;
    for (size_t i = 0; i < g->n_output; i++)
        if (g->output[i]->name && strcmp(g->output[i]->name, name) == 0) return 1;
    return 0;
}

static int is_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t k = 0; k < g->n_initializer; k++)
        if (g->initializer[k]->name && strcmp(g->initializer[k]->name, name) == 0) return 1;
    return 0;
}

/* The nodes into kept, less the Constants nothing reads any more (a Dropout's ratio and
 * training_mode once it is an Identity), which runtimes warn about, and the Identity or
 * Constant nodes that defined a name put_weights made an initializer of; returns their
 * count. */
static size_t live_nodes(const Onnx__GraphProto *g, Onnx__NodeProto **kept)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        Onnx__NodeProto *node = g->node[i];
        int one = node->op_type && node->n_output == 1 && node->output[0];
        int constant = one && strcmp(node->op_type, "Constant") == 0;
        int dead = constant && !value_used(g, node->output[0]);
        if ((constant || (one && strcmp(node->op_type, "Identity") == 0)) && is_initializer(g, node->output[0]))
            dead = 1;
        if (!dead) kept[n++] = node;
    }
    return n;
}

int onnx_export_buffer(const uint8_t *src, size_t len, const model_t *m, uint8_t **out, size_t *outlen, char *err,
                       size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, src);
    if (!mp || !mp->graph) {
        if (mp) onnx__model_proto__free_unpacked(mp, NULL);
        return snprintf(err, errlen, "onnx: the source is not an ONNX model with a graph"), -1;
    }
    Onnx__GraphProto *g = mp->graph;
    int rc = -1;
    saved_tensor_t *saved = calloc((size_t)(m->ntensors ? m->ntensors : 1), sizeof *saved);
    Onnx__NodeProto *nodes = malloc((g->n_node ? g->n_node : 1) * sizeof *nodes);
    Onnx__AttributeProto ***attrs = calloc(g->n_node ? g->n_node : 1, sizeof *attrs);
    Onnx__NodeProto **kept = malloc((g->n_node ? g->n_node : 1) * sizeof *kept);
    Onnx__TensorProto *extra = calloc((size_t)(m->ntensors ? m->ntensors : 1), sizeof *extra);
    Onnx__TensorProto **inits = malloc((g->n_initializer + (size_t)m->ntensors + 1) * sizeof *inits);
    Onnx__TensorProto **own_inits = g->initializer;
    size_t own_ninit = g->n_initializer;
    /* the opset imports less ai.pacer, whose nodes the inference form made Identities */
    Onnx__OperatorSetIdProto **own_opsets = mp->opset_import;
    const size_t own_nopsets = mp->n_opset_import;
    Onnx__OperatorSetIdProto **opsets = malloc((own_nopsets ? own_nopsets : 1) * sizeof *opsets);
    if (!saved || !nodes || !attrs || !kept || !extra || !inits || !opsets) {
        snprintf(err, errlen, "onnx: out of memory");
        goto out;
    }
    for (size_t i = 0; i < g->n_node; i++) nodes[i] = *g->node[i];
    if (inference_form(g, attrs) != 0) {
        snprintf(err, errlen, "onnx: out of memory");
        goto restore;
    }
    if (put_weights(g, m, saved, extra, inits, err, errlen) != 0) goto restore;
    Onnx__NodeProto **all = g->node;
    size_t nall = g->n_node, n;
    g->n_node = live_nodes(g, kept);
    g->node = kept;
    mp->n_opset_import = 0;
    mp->opset_import = opsets;
    for (size_t i = 0; i < own_nopsets; i++)
        if (!own_opsets[i]->domain || strcmp(own_opsets[i]->domain, "ai.pacer") != 0)
            opsets[mp->n_opset_import++] = own_opsets[i];
    n = onnx__model_proto__get_packed_size(mp);
    *out = malloc(n ? n : 1);
    if (*out) *outlen = onnx__model_proto__pack(mp, *out);
    else snprintf(err, errlen, "onnx: out of memory (%zu bytes)", n);
    g->node = all;
    g->n_node = nall;
    rc = *out ? 0 : -1;
restore:
    mp->opset_import = own_opsets;
    mp->n_opset_import = own_nopsets;
    g->initializer = own_inits;
    g->n_initializer = own_ninit;
    for (int i = 0; i < m->ntensors; i++) {
        if (!saved[i].t) continue;
        saved[i].t->has_raw_data = saved[i].has_raw_data;
        saved[i].t->raw_data = saved[i].raw_data;
        saved[i].t->n_float_data = saved[i].n_float_data;
    }
    for (size_t i = 0; i < g->n_node; i++) {
        *g->node[i] = nodes[i];
        free(attrs[i]);
    }
out:
    free(opsets);
    free(extra);
    free(inits);
    free(kept);
    free(saved);
    free(nodes);
    free(attrs);
    onnx__model_proto__free_unpacked(mp, NULL);
    return rc;
}

int onnx_export_file(const char *src_path, const model_t *m, const char *out_path, char *err, size_t errlen)
{
    uint8_t *src = NULL;
    size_t len = 0;
    if (src_path && src_path[0] && onnx_read_file(src_path, &src, &len, err, errlen) != 0) return -1;
    int rc = onnx_export_to_file(src, len, m, out_path, err, errlen);
    free(src);
    return rc;
}

int onnx_export_to_file(const uint8_t *src, size_t len, const model_t *m, const char *out_path, char *err, size_t errlen)
{
    uint8_t *dst;
    size_t n;
    int rc = src ? onnx_export_buffer(src, len, m, &dst, &n, err, errlen) : onnx_export_layers(m, &dst, &n, err, errlen);
    if (rc != 0) return -1;
    if (fs_atomic_write(out_path, dst, n, 0644) != 0) {
        snprintf(err, errlen, "onnx: cannot write %s: %s", out_path, strerror(errno));
        rc = -1;
    }
    free(dst);
    return rc;
}

/* ---- a graph from the layer list (the built-in networks) -------------------------------- */

/* Everything the generated ModelProto points to is allocated here and freed at once:
 * protobuf-c only packs it. */
typedef struct {
    void **blocks;
    size_t n, cap;
    int failed;
    Onnx__GraphProto *g;
    size_t node_cap, init_cap;
} gen_t;

static void *gen_alloc(gen_t *x, size_t size)
{
    if (x->failed) return NULL;
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 256;
        void **p = realloc(x->blocks, cap * sizeof *p);
        if (!p) return x->failed = 1, NULL;
        x->blocks = p;
        x->cap = cap;
    }
    void *b = calloc(1, size ? size : 1);
    if (!b) return x->failed = 1, NULL;
    return x->blocks[x->n++] = b;
}

static char *gen_str(gen_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *gen_str(gen_t *x, const char *fmt, ...)
{
    char buf[MODEL_TENSOR_NAME_MAX + 32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *s = gen_alloc(x, strlen(buf) + 1);
    if (s) strcpy(s, buf);
    return s;
}

/* Appends p to the array *arr of *n elements (capacity *cap). */
static void gen_push(gen_t *x, void ***arr, size_t *n, size_t *cap, void *p)
{
    if (x->failed || !p) return (void)(x->failed = 1);
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        void **a = gen_alloc(x, c * sizeof *a);
        if (!a) return;
        if (*n) memcpy(a, *arr, *n * sizeof *a);
        *arr = a;
        *cap = c;
    }
    (*arr)[(*n)++] = p;
}

/* A node op(inputs) -> output, named name; attributes follow through gen_attr_*. */
static Onnx__NodeProto *gen_node(gen_t *x, const char *op, const char *name, const char *out, int nin, ...)
{
    Onnx__NodeProto *n = gen_alloc(x, sizeof *n);
    char **in = gen_alloc(x, (size_t)(nin ? nin : 1) * sizeof *in);
    char **o = gen_alloc(x, sizeof *o);
    if (!n || !in || !o) return NULL;
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)name;
    va_list ap;
    va_start(ap, nin);
    for (int i = 0; i < nin; i++) in[i] = va_arg(ap, char *);
    va_end(ap);
    n->input = in;
    n->n_input = (size_t)nin;
    o[0] = (char *)out;
    n->output = o;
    n->n_output = 1;
    gen_push(x, (void ***)&x->g->node, &x->g->n_node, &x->node_cap, n);
    return n;
}

static Onnx__AttributeProto *gen_attr(gen_t *x, Onnx__NodeProto *n, const char *name, int type)
{
    if (!n) return NULL;
    Onnx__AttributeProto *a = gen_alloc(x, sizeof *a);
    Onnx__AttributeProto **arr = gen_alloc(x, (n->n_attribute + 1) * sizeof *arr);
    if (!a || !arr) return NULL;
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = type;
    if (n->n_attribute) memcpy(arr, n->attribute, n->n_attribute * sizeof *arr);
    arr[n->n_attribute++] = a;
    n->attribute = arr;
    return a;
}

static void gen_attr_int(gen_t *x, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = gen_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) a->has_i = 1, a->i = v;
}

static void gen_attr_float(gen_t *x, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = gen_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) a->has_f = 1, a->f = v;
}

static void gen_attr_str(gen_t *x, Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = gen_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (a) a->has_s = 1, a->s.data = (uint8_t *)v, a->s.len = strlen(v);
}

static void gen_attr_ints(gen_t *x, Onnx__NodeProto *n, const char *name, int count, const int *v)
{
    Onnx__AttributeProto *a = gen_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *ints = gen_alloc(x, (size_t)count * sizeof *ints);
    if (!a || !ints) return;
    for (int i = 0; i < count; i++) ints[i] = v[i];
    a->ints = ints;
    a->n_ints = (size_t)count;
}

/* A float tensor named name of the given dims, its data data (not copied). */
static Onnx__TensorProto *gen_tensor(gen_t *x, const char *name, int nd, const int64_t *dims, const void *data,
                                     size_t bytes, int type)
{
    Onnx__TensorProto *t = gen_alloc(x, sizeof *t);
    int64_t *d = gen_alloc(x, (size_t)(nd ? nd : 1) * sizeof *d);
    if (!t || !d) return NULL;
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    memcpy(d, dims, (size_t)nd * sizeof *d);
    t->dims = d;
    t->n_dims = (size_t)nd;
    t->has_data_type = 1;
    t->data_type = type;
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t *)data;
    t->raw_data.len = bytes;
    return t;
}

/* The initializer of model tensor name (its values, in m's order of tensors) shaped dims. */
static void gen_init(gen_t *x, const model_t *m, const char *name, int nd, const int64_t *dims)
{
    /* a tensor two layers read (a tied head's embedding table) is one initializer */
    for (size_t k = 0; name && k < x->g->n_initializer; k++)
        if (x->g->initializer[k]->name && strcmp(x->g->initializer[k]->name, name) == 0) return;
    for (int i = 0; name && i < m->ntensors; i++) {
        const tensor_info_t *ti = &m->tensors[i];
        if (strcmp(ti->name, name) != 0) continue;
        const float *data = (ti->is_buffer ? m->buffers : m->params) + ti->offset;
        gen_push(x, (void ***)&x->g->initializer, &x->g->n_initializer, &x->init_cap,
                 gen_tensor(x, ti->name, nd, dims, data, ti->count * sizeof(float),
                            ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT));
        return;
    }
    x->failed = 1;
}

/* A node Constant named name whose value is the tensor (nd, dims) of bytes of data (copied:
 * the tensor points at its bytes until packed) and ONNX type type; returns name, or NULL
 * (out of memory, x marked failed). */
static char *gen_constant(gen_t *x, char *name, int nd, const int64_t *dims, const void *data, size_t bytes, int type)
{
    void *copy = gen_alloc(x, bytes ? bytes : 1);
    if (!name || !copy) return NULL;
    memcpy(copy, data, bytes);
    Onnx__NodeProto *n = gen_node(x, "Constant", name, name, 0);
    Onnx__AttributeProto *a = gen_attr(x, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    if (a) a->t = gen_tensor(x, NULL, nd, dims, copy, bytes, type);
    return name;
}

/* a 0-D float Constant (an operator's constant input: Clip's bounds, Pow's exponent) */
static char *gen_scalar(gen_t *x, char *name, float v)
{
    return gen_constant(x, name, 0, &(int64_t){0}, &v, sizeof v, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
}

/* a 1-D int64 Constant of n values (shapes, Slice's bounds) */
static char *gen_ints(gen_t *x, char *name, int n, const int64_t *v)
{
    const int64_t d[1] = {n};
    return gen_constant(x, name, 1, d, v, (size_t)n * sizeof *v, ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
}

/* A float tensor value (batch, dims...) for the graph's input or output. */
static Onnx__ValueInfoProto *gen_value_info(gen_t *x, const char *name, int nd, const int64_t *dims)
{
    Onnx__ValueInfoProto *v = gen_alloc(x, sizeof *v);
    Onnx__TypeProto *tp = gen_alloc(x, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = gen_alloc(x, sizeof *tt);
    Onnx__TensorShapeProto *sh = gen_alloc(x, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dim = gen_alloc(x, (size_t)(nd + 1) * sizeof *dim);
    if (!v || !tp || !tt || !sh || !dim) return NULL;
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int i = 0; i <= nd; i++) {
        dim[i] = gen_alloc(x, sizeof *dim[i]);
        if (!dim[i]) return NULL;
        onnx__tensor_shape_proto__dimension__init(dim[i]);
        if (i == 0) {
            dim[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim[i]->dim_param = (char *)"batch";
        } else {
            dim[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim[i]->dim_value = dims[i - 1];
        }
    }
    sh->dim = dim;
    sh->n_dim = (size_t)nd + 1;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->name = (char *)name;
    v->type = tp;
    return v;
}

/* The module name of a layer's weight ("layer1.0.conv1" of "layer1.0.conv1.weight"): the
 * node's name, as torch.onnx names nodes after modules. */
static char *gen_module(gen_t *x, const model_t *m, const layer_t *l, const char *op, int li)
{
    for (int i = 0; i < m->ntensors; i++) {
        const tensor_info_t *ti = &m->tensors[i];
        if (ti->is_buffer || ti->offset != l->w_off) continue;
        const char *dot = strrchr(ti->name, '.');
        return gen_str(x, "%.*s", dot ? (int)(dot - ti->name) : (int)strlen(ti->name), ti->name);
    }
    return gen_str(x, "%s_%d", op, li);
}

static const char *tensor_name_at(const model_t *m, size_t off, int is_buffer)
{
    for (int i = 0; i < m->ntensors; i++)
        if (m->tensors[i].offset == off && m->tensors[i].is_buffer == is_buffer) return m->tensors[i].name;
    return NULL;
}

/* The pads [begin..., end...] of a (t, l, b, r) geometry, ONNX's order. */
#define GEN_PADS(d)                                \
    {                                              \
        (d).pad_t, (d).pad_l, (d).pad_b, (d).pad_r \
    }

/* One layer's export: the layer, the values it reads and writes ("input": the model input,
 * "t<i>": layer i's output, "logits": the last layer's) and the ONNX operator of its table
 * row. flat[i]: layer i's output is (N, features), not (N, C, H, W); gen_layer starts a
 * layer's at its input's and the export sets it where it changes. */
typedef struct {
    const model_t *m;
    const layer_t *l;
    int li;
    char *in, *in2; /* in2: the second input of a two-input kind, else NULL */
    int in_flat;
    char *out;
    const char *op; /* MODEL_OPS[kind].onnx_export */
    char **val;
    int *flat;
    char *err;
    size_t errlen;
} layer_exp_t;

/* The node of the row's own operator, named "<op>_<i>", reading in (and in2: nin 2). */
static Onnx__NodeProto *gen_op(gen_t *x, const layer_exp_t *ex, int nin)
{
    return gen_node(x, ex->op, gen_str(x, "%s_%d", ex->op, ex->li), ex->out, nin, ex->in, ex->in2);
}

/* A convolution's or pool's window: kernel, strides and pads pd (t, l, b, r); sp spatial
 * axes (1: a sequence (N, C, L), which runs as an image of width 1). */
static void gen_window(gen_t *x, Onnx__NodeProto *n, int sp, const int *ks, const int *st, const int *pd)
{
    const int pd1[2] = {pd[0], pd[2]};
    gen_attr_ints(x, n, "kernel_shape", sp, ks);
    gen_attr_ints(x, n, "strides", sp, st);
    gen_attr_ints(x, n, "pads", 2 * sp, sp == 2 ? pd : pd1);
}

/* LAYER_CONV */
static void export_conv(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    const conv2d_desc_t *c = &ex->l->op.conv;
    const char *w = tensor_name_at(ex->m, ex->l->w_off, 0),
               *b = ex->l->has_bias ? tensor_name_at(ex->m, ex->l->b_off, 0) : NULL;
    char *name = gen_module(x, ex->m, ex->l, ex->op, ex->li);
    n = b ? gen_node(x, ex->op, name, ex->out, 3, ex->in, w, b) : gen_node(x, ex->op, name, ex->out, 2, ex->in, w);
    /* a sequence (N, C, L) runs as an image of width 1: written with one spatial axis */
    const int sp = ex->l->shape.rank == 2 ? 1 : 2;
    const int ks[2] = {c->KH, c->KW}, st[2] = {c->sH, c->sW}, dl[2] = {c->dH, c->dW}, pd[4] = GEN_PADS(*c);
    gen_window(x, n, sp, ks, st, pd);
    gen_attr_ints(x, n, "dilations", sp, dl);
    gen_attr_int(x, n, "group", c->groups > 0 ? c->groups : 1);
    const int64_t dims[4] = {ex->l->OC, ex->l->C / (c->groups > 0 ? c->groups : 1), c->KH, c->KW}, bd[1] = {ex->l->OC};
    gen_init(x, ex->m, w, sp + 2, dims);
    if (b) gen_init(x, ex->m, b, 1, bd);
    ex->flat[ex->li] = 0;
}

/* LAYER_CONV_TRANSPOSE: the output padding is OH, OW beyond the size without it */
static void export_conv_transpose(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    const conv2d_desc_t *c = &ex->l->op.conv;
    const char *w = tensor_name_at(ex->m, ex->l->w_off, 0),
               *b = ex->l->has_bias ? tensor_name_at(ex->m, ex->l->b_off, 0) : NULL;
    char *name = gen_module(x, ex->m, ex->l, ex->op, ex->li);
    n = b ? gen_node(x, ex->op, name, ex->out, 3, ex->in, w, b) : gen_node(x, ex->op, name, ex->out, 2, ex->in, w);
    const int sp = ex->l->shape.rank == 2 ? 1 : 2; /* a sequence (N, C, L): one spatial axis */
    const int ks[2] = {c->KH, c->KW}, st[2] = {c->sH, c->sW}, dl[2] = {c->dH, c->dW}, pd[4] = GEN_PADS(*c);
    const int op[2] = {c->OH - (c->sH * (c->H - 1) + c->dH * (c->KH - 1) + 1 - c->pad_t - c->pad_b),
                       c->OW - (c->sW * (c->W - 1) + c->dW * (c->KW - 1) + 1 - c->pad_l - c->pad_r)};
    gen_window(x, n, sp, ks, st, pd);
    gen_attr_ints(x, n, "dilations", sp, dl);
    gen_attr_int(x, n, "group", c->groups);
    if (op[0] || op[1]) gen_attr_ints(x, n, "output_padding", sp, op);
    const int64_t dims[4] = {ex->l->C, ex->l->OC / c->groups, c->KH, c->KW}, bd[1] = {ex->l->OC};
    gen_init(x, ex->m, w, sp + 2, dims);
    if (b) gen_init(x, ex->m, b, 1, bd);
    ex->flat[ex->li] = 0;
}

/* LAYER_MAXPOOL, LAYER_AVGPOOL */
static void export_maxpool(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    const pool2d_desc_t *p = &ex->l->op.pool;
    const int mx = ex->l->kind == LAYER_MAXPOOL;
    if (!mx && (p->dH != 1 || p->dW != 1)) {
        snprintf(ex->err, ex->errlen, "onnx: layer %d: AveragePool has no dilations in opset 13", ex->li);
        x->failed = 1;
        return;
    }
    n = gen_op(x, ex, 1);
    const int sp = ex->l->shape.rank == 2 ? 1 : 2; /* a sequence's pool: one spatial axis */
    const int ks[2] = {p->KH, p->KW}, st[2] = {p->sH, p->sW}, dl[2] = {p->dH, p->dW}, pd[4] = GEN_PADS(*p);
    gen_window(x, n, sp, ks, st, pd);
    gen_attr_int(x, n, "ceil_mode", p->ceil_mode);
    if (mx && (p->dH != 1 || p->dW != 1)) gen_attr_ints(x, n, "dilations", sp, dl);
    if (!mx) gen_attr_int(x, n, "count_include_pad", p->count_include_pad);
    ex->flat[ex->li] = 0;
}

/* The kinds of one input and no attributes (the unary functions, ReLU, sigmoid, tanh, erf):
 * their row's operator. */
static void export_unary(gen_t *x, const layer_exp_t *ex) { gen_op(x, ex, 1); }

/* LAYER_CONST */
static void export_const(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    /* its value is its tensor's name: an initializer (a parameter) or a Constant node
     * (a buffer), which the importer makes a LAYER_CONST again */
    const char *name = tensor_name_at(ex->m, ex->l->w_off, ex->l->op.cnst.frozen);
    int64_t dims[MODEL_MAX_RANK];
    for (int d = 0; d < ex->l->shape.rank; d++) dims[d] = ex->l->shape.dims[d];
    if (!name) {
        x->failed = 1;
        return;
    }
    ex->val[ex->li] = (char *)name;
    ex->flat[ex->li] = 0;
    if (!ex->l->op.cnst.frozen) {
        gen_init(x, ex->m, name, ex->l->shape.rank, dims);
        return;
    }
    n = gen_node(x, "Constant", name, name, 0);
    Onnx__AttributeProto *a = gen_attr(x, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    if (a)
        a->t = gen_tensor(x, NULL, ex->l->shape.rank, dims, ex->m->buffers + ex->l->w_off,
                          (size_t)ex->l->OC * ex->l->OH * ex->l->OW * sizeof(float),
                          ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
}

/* LAYER_GATHER_PARAM */
static void export_gather_param(gen_t *x, const layer_exp_t *ex)
{
    /* Gather of the flattened table by its int64 indices (a Constant of the output's
     * shape), which the importer folds back into this layer */
    const char *t = tensor_name_at(ex->m, ex->l->w_off, 0), *mp = tensor_name_at(ex->m, ex->l->rm_off, 1);
    const size_t cnt = (size_t)ex->l->OC * ex->l->OH * ex->l->OW;
    int64_t td[MODEL_MAX_RANK], od[MODEL_MAX_RANK];
    int64_t *idx = gen_alloc(x, cnt * sizeof *idx);
    if (!t || !mp || !idx) {
        x->failed = 1;
        return;
    }
    for (int d = 0; d < ex->l->op.table.shape.rank; d++) td[d] = ex->l->op.table.shape.dims[d];
    for (int d = 0; d < ex->l->shape.rank; d++) od[d] = ex->l->shape.dims[d];
    for (size_t j = 0; j < cnt; j++) idx[j] = (int64_t)ex->m->buffers[ex->l->rm_off + j];
    gen_init(x, ex->m, t, ex->l->op.table.shape.rank, td);
    const int64_t all = -1;
    char *tf = gen_str(x, "%s_flat%d", t, ex->li);
    gen_node(x, "Reshape", gen_str(x, "Reshape_%d_table", ex->li), tf, 2, t,
             gen_ints(x, gen_str(x, "Reshape_%d_table_shape", ex->li), 1, &all));
    char *ix = gen_constant(x, (char *)mp, ex->l->shape.rank, od, idx, cnt * sizeof *idx,
                            ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
    gen_node(x, "Gather", gen_module(x, ex->m, ex->l, "Gather", ex->li), ex->out, 2, tf, ix);
    ex->flat[ex->li] = 0;
}

/* LAYER_RESHAPE */
static void export_reshape(gen_t *x, const layer_exp_t *ex)
{
    /* 0 keeps the batch */
    int64_t sh[1 + MODEL_MAX_RANK] = {0};
    for (int d = 0; d < ex->l->shape.rank; d++) sh[d + 1] = ex->l->shape.dims[d];
    char *s = gen_ints(x, gen_str(x, "Reshape_%d_shape", ex->li), 1 + ex->l->shape.rank, sh);
    if (!s) return;
    gen_node(x, ex->op, gen_str(x, "%s_%d", ex->op, ex->li), ex->out, 2, ex->in, s);
    ex->flat[ex->li] = 0;
}

/* LAYER_TRANSPOSE */
static void export_transpose(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    int perm[1 + MODEL_MAX_RANK] = {0};
    for (int d = 0; d < ex->l->shape.rank; d++) perm[d + 1] = ex->l->op.view.perm[d] + 1;
    n = gen_op(x, ex, 1);
    gen_attr_ints(x, n, "perm", 1 + ex->l->shape.rank, perm);
    ex->flat[ex->li] = 0;
}

/* LAYER_SLICE */
static void export_slice(gen_t *x, const layer_exp_t *ex)
{
    /* a negative step's end -1 (before the first element) is written as -(size + 1):
     * ONNX reads -1 as the last element */
    const int64_t end = ex->l->op.view.end < 0 ? -(int64_t)ex->l->C * ex->l->H * ex->l->W - 1 : ex->l->op.view.end;
    const int64_t v[4] = {ex->l->op.view.start, end, ex->l->op.view.axis + 1, ex->l->op.view.step};
    static const char *const what[4] = {"starts", "ends", "axes", "steps"};
    char *c[4];
    for (int i = 0; i < 4; i++)
        if (!(c[i] = gen_ints(x, gen_str(x, "Slice_%d_%s", ex->li, what[i]), 1, &v[i]))) return;
    gen_node(x, ex->op, gen_str(x, "%s_%d", ex->op, ex->li), ex->out, 5, ex->in, c[0], c[1], c[2], c[3]);
    ex->flat[ex->li] = 0;
}

/* LAYER_REDUCE_MEAN, LAYER_REDUCE_SUM */
static void export_reduce_mean(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    /* opset 13: ReduceMean's axes an attribute, ReduceSum's an input */
    int64_t ax[MODEL_MAX_RANK];
    int axi[MODEL_MAX_RANK], na = 0;
    for (int d = 0; d < MODEL_MAX_RANK; d++)
        if (ex->l->op.view.red_mask >> d & 1) axi[na] = (int)(ax[na] = d + 1), na++;
    char *c = ex->l->kind == LAYER_REDUCE_SUM ? gen_ints(x, gen_str(x, "ReduceSum_%d_axes", ex->li), na, ax) : NULL;
    if (ex->l->kind == LAYER_REDUCE_SUM && !c) return; /* out of memory (gen_alloc marked it) */
    n = gen_node(x, ex->op, gen_str(x, "%s_%d", ex->op, ex->li), ex->out, c ? 2 : 1, ex->in, c);
    if (!c) gen_attr_ints(x, n, "axes", na, axi);
    gen_attr_int(x, n, "keepdims", ex->l->op.view.red_keep);
    ex->flat[ex->li] = 0;
}

/* The kinds of two inputs and no attributes (the broadcasting binaries, Mul): their row's
 * operator. */
static void export_binary(gen_t *x, const layer_exp_t *ex) { gen_op(x, ex, 2); }

/* LAYER_POW */
static void export_pow(gen_t *x, const layer_exp_t *ex)
{
    /* the exponent: a 0-D Constant input */
    char *e = gen_scalar(x, gen_str(x, "Pow_%d_exponent", ex->li), ex->l->op.unary.alpha);
    if (!e) return; /* out of memory (gen_alloc marked it) */
    gen_node(x, ex->op, gen_str(x, "%s_%d", ex->op, ex->li), ex->out, 2, ex->in, e);
}

/* LAYER_LEAKY_RELU */
static void export_leaky_relu(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    n = gen_op(x, ex, 1);
    gen_attr_float(x, n, "alpha", ex->l->op.unary.alpha);
}

/* LAYER_CLIP */
static void export_clip(gen_t *x, const layer_exp_t *ex)
{
    /* opset 13: the bounds are inputs, here 0-D Constants (an infinite one left out) */
    char *b[2] = {(char *)"", (char *)""};
    const float *v[2] = {&ex->l->op.unary.lo, &ex->l->op.unary.hi};
    for (int i = 0; i < 2; i++) {
        if (isinf(*v[i])) continue;
        b[i] = gen_scalar(x, gen_str(x, "Clip_%d_%s", ex->li, i ? "max" : "min"), *v[i]);
        if (!b[i]) return; /* out of memory (gen_alloc marked it) */
    }
    gen_node(x, ex->op, gen_str(x, "%s_%d", ex->op, ex->li), ex->out,
             b[1][0]   ? 3
             : b[0][0] ? 2
                       : 1,
             ex->in, b[0], b[1]);
}

/* LAYER_HARDSIGMOID */
static void export_hardsigmoid(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    n = gen_op(x, ex, 1);
    gen_attr_float(x, n, "alpha", ex->l->op.unary.alpha);
    gen_attr_float(x, n, "beta", ex->l->op.unary.beta);
}

/* LAYER_HARDSWISH */
static void export_hardswish(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    /* opset 13 has no HardSwish: x * HardSigmoid(x) (alpha 1/6, beta 1/2), as torch 1.13
     * exports nn.Hardswish */
    char *hs = gen_str(x, "%s_hsig", ex->out);
    n = gen_node(x, "HardSigmoid", gen_str(x, "HardSwish_%d_hsig", ex->li), hs, 1, ex->in);
    gen_attr_float(x, n, "alpha", 1.0f / 6.0f);
    gen_attr_float(x, n, "beta", 0.5f);
    gen_node(x, "Mul", gen_str(x, "HardSwish_%d", ex->li), ex->out, 2, ex->in, hs);
}

/* LAYER_STOCHASTIC_DEPTH */
static void export_stochastic_depth(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    /* pacer's own operator, as imported (the file's opset_import names ai.pacer): a
     * model trained again keeps its stochastic depth */
    n = gen_node(x, "StochasticDepth", gen_str(x, "StochasticDepth_%d", ex->li), ex->out, 1, ex->in);
    if (n) n->domain = (char *)"ai.pacer";
    gen_attr_float(x, n, "p", ex->l->op.dropout.p);
    gen_attr_str(x, n, "mode", "row");
}

/* the inference form: dropout is the identity (the table's export column) */
/* LAYER_DROPOUT */
static void export_dropout(gen_t *x, const layer_exp_t *ex)
{
    gen_node(x, ex->op, gen_str(x, "Dropout_%d", ex->li), ex->out, 1, ex->in);
}

/* LAYER_GAP */
static void export_gap(gen_t *x, const layer_exp_t *ex)
{
    gen_op(x, ex, 1);
    ex->flat[ex->li] = 0;
}

/* LAYER_GELU */
static void export_gelu(gen_t *x, const layer_exp_t *ex)
{
    /* opset 13 has no Gelu: x * (1 + Erf(x / sqrt(2))) * 0.5, the nodes torch 1.13 writes
     * for nn.GELU (the importer matches them back into one row) */
    char *c[3] = {gen_scalar(x, gen_str(x, "Gelu_%d_sqrt2", ex->li), (float)M_SQRT2),
                  gen_scalar(x, gen_str(x, "Gelu_%d_one", ex->li), 1.0f),
                  gen_scalar(x, gen_str(x, "Gelu_%d_half", ex->li), 0.5f)};
    char *v[4] = {gen_str(x, "%s_div", ex->out), gen_str(x, "%s_erf", ex->out), gen_str(x, "%s_add", ex->out),
                  gen_str(x, "%s_mul", ex->out)};
    for (int i = 0; i < 4; i++)
        if (!v[i] || (i < 3 && !c[i])) return; /* out of memory (gen_alloc marked it) */
    gen_node(x, "Div", gen_str(x, "Gelu_%d_div", ex->li), v[0], 2, ex->in, c[0]);
    gen_node(x, "Erf", gen_str(x, "Gelu_%d_erf", ex->li), v[1], 1, v[0]);
    gen_node(x, "Add", gen_str(x, "Gelu_%d_add", ex->li), v[2], 2, v[1], c[1]);
    gen_node(x, "Mul", gen_str(x, "Gelu_%d_mul", ex->li), v[3], 2, ex->in, v[2]);
    gen_node(x, "Mul", gen_str(x, "Gelu_%d", ex->li), ex->out, 2, v[3], c[2]);
}

/* LAYER_BMM */
static void export_bmm(gen_t *x, const layer_exp_t *ex)
{
    gen_op(x, ex, 2);
    ex->flat[ex->li] = 0;
}

/* LAYER_LAYERNORM */
static void export_layernorm(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    /* opset 13 has no LayerNormalization: the nodes torch 1.13 writes for nn.LayerNorm
     * (the importer matches them back into one row); the weight and bias of the
     * normalised axes' shape */
    const char *w = tensor_name_at(ex->m, ex->l->w_off, 0), *bias = tensor_name_at(ex->m, ex->l->b_off, 0);
    int axes[MODEL_MAX_RANK];
    int64_t d[MODEL_MAX_RANK];
    const int k = ex->l->shape.rank - ex->l->op.norm.axis;
    for (int i = 0; i < k; i++) axes[i] = -k + i, d[i] = ex->l->shape.dims[ex->l->op.norm.axis + i];
    char *c[2] = {gen_scalar(x, gen_str(x, "LayerNorm_%d_two", ex->li), 2.0f),
                  gen_scalar(x, gen_str(x, "LayerNorm_%d_eps", ex->li), ex->l->op.norm.eps)};
    static const char *const what[8] = {"mean", "sub", "pow", "var", "add", "sqrt", "div", "mul"};
    char *v[8];
    for (int i = 0; i < 8; i++)
        if (!(v[i] = gen_str(x, "%s_%s", ex->out, what[i]))) return; /* out of memory (gen_alloc marked it) */
    if (!c[0] || !c[1]) return;
    n = gen_node(x, "ReduceMean", gen_str(x, "LayerNorm_%d_mean", ex->li), v[0], 1, ex->in);
    gen_attr_ints(x, n, "axes", k, axes);
    gen_node(x, "Sub", gen_str(x, "LayerNorm_%d_sub", ex->li), v[1], 2, ex->in, v[0]);
    gen_node(x, "Pow", gen_str(x, "LayerNorm_%d_pow", ex->li), v[2], 2, v[1], c[0]);
    n = gen_node(x, "ReduceMean", gen_str(x, "LayerNorm_%d_var", ex->li), v[3], 1, v[2]);
    gen_attr_ints(x, n, "axes", k, axes);
    gen_node(x, "Add", gen_str(x, "LayerNorm_%d_add", ex->li), v[4], 2, v[3], c[1]);
    gen_node(x, "Sqrt", gen_str(x, "LayerNorm_%d_sqrt", ex->li), v[5], 1, v[4]);
    gen_node(x, "Div", gen_str(x, "LayerNorm_%d_div", ex->li), v[6], 2, v[1], v[5]);
    gen_node(x, "Mul", gen_str(x, "LayerNorm_%d_mul", ex->li), v[7], 2, v[6], w);
    gen_node(x, "Add", gen_str(x, "LayerNorm_%d", ex->li), ex->out, 2, v[7], bias);
    gen_init(x, ex->m, w, k, d);
    gen_init(x, ex->m, bias, k, d);
}

/* LAYER_EXPAND */
static void export_expand(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    /* Expand to (the batch of the model input, the sample's shape): the batch from
     * Shape(input)[0:1], the rest constants */
    int64_t d[MODEL_MAX_RANK], one = 1, zero = 0;
    for (int i = 0; i < ex->l->shape.rank; i++) d[i] = ex->l->shape.dims[i];
    char *v[3] = {gen_str(x, "%s_inshape", ex->out), gen_str(x, "%s_batch", ex->out), gen_str(x, "%s_shape", ex->out)};
    char *c[3] = {gen_ints(x, gen_str(x, "Expand_%d_zero", ex->li), 1, &zero),
                  gen_ints(x, gen_str(x, "Expand_%d_one", ex->li), 1, &one),
                  gen_ints(x, gen_str(x, "Expand_%d_dims", ex->li), ex->l->shape.rank, d)};
    for (int i = 0; i < 3; i++)
        if (!v[i] || !c[i]) return; /* out of memory (gen_alloc marked it) */
    gen_node(x, "Shape", gen_str(x, "Expand_%d_inshape", ex->li), v[0], 1, "input");
    gen_node(x, "Slice", gen_str(x, "Expand_%d_batch", ex->li), v[1], 3, v[0], c[0], c[1]);
    n = gen_node(x, "Concat", gen_str(x, "Expand_%d_shape", ex->li), v[2], 2, v[1], c[2]);
    gen_attr_int(x, n, "axis", 0);
    /* an activation of a lower rank gets its new axes (1s) after the batch first: ONNX
     * aligns the ranks from the right */
    const layer_t *src = ex->l->in >= 0 ? &ex->m->layers[ex->l->in] : NULL;
    const model_shape_t *is = src ? &src->shape : &ex->m->in_shape;
    char *e = ex->in;
    if (!(src && src->kind == LAYER_CONST) && is->rank < ex->l->shape.rank) {
        int64_t sh[1 + MODEL_MAX_RANK] = {0};
        const int lead = ex->l->shape.rank - is->rank;
        for (int i = 0; i < ex->l->shape.rank; i++) sh[1 + i] = i < lead ? 1 : is->dims[i - lead];
        char *s = gen_ints(x, gen_str(x, "Expand_%d_rank", ex->li), 1 + ex->l->shape.rank, sh);
        if (!s || !(e = gen_str(x, "%s_ranked", ex->out))) return;
        gen_node(x, "Reshape", gen_str(x, "Expand_%d_ranked", ex->li), e, 2, ex->in, s);
    }
    gen_node(x, ex->op, gen_str(x, "%s_%d", ex->op, ex->li), ex->out, 2, e, v[2]);
    ex->flat[ex->li] = 0;
}

/* LAYER_EMBED: Gather of the table's rows by the int64 token ids (the graph's input) */
static void export_embed(gen_t *x, const layer_exp_t *ex)
{
    const char *w = tensor_name_at(ex->m, ex->l->w_off, 0);
    const int64_t wd[2] = {ex->l->op.table.shape.dims[0], ex->l->op.table.shape.dims[1]};
    gen_node(x, ex->op, gen_str(x, "%s_%d", ex->op, ex->li), ex->out, 2, w, ex->in);
    gen_init(x, ex->m, w, 2, wd);
    ex->flat[ex->li] = 0;
}

/* LAYER_CAUSAL_SOFTMAX over the last axis of (..., T, T) scores: Mul by the scale, then
 * nanoGPT's masked_fill as torch exports it, Where(mask, -inf, scores) with a (T, T) bool
 * mask true above the diagonal (key j after query i; a Cast of a float Constant, which the
 * importer folds), then Softmax: each row's weights
 * over the keys up to its own position, the masked ones exactly 0. The importer reads that
 * Where and Softmax as one causal softmax again (model/onnx/lm.c). */
static void export_causal_softmax(gen_t *x, const layer_exp_t *ex)
{
    const int T = ex->l->shape.dims[ex->l->shape.rank - 1];
    float *mask = gen_alloc(x, (size_t)T * (size_t)T * sizeof *mask);
    if (!mask) return;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) mask[(size_t)i * (size_t)T + (size_t)j] = j > i ? 1.0f : 0.0f;
    const int64_t md[2] = {T, T};
    char *alpha = gen_scalar(x, gen_str(x, "CausalSoftmax_%d_scale", ex->li), ex->l->op.softmax.scale),
         *ninf = gen_scalar(x, gen_str(x, "CausalSoftmax_%d_ninf", ex->li), -INFINITY),
         *m = gen_constant(x, gen_str(x, "CausalSoftmax_%d_mask01", ex->li), 2, md, mask,
                           (size_t)T * (size_t)T * sizeof *mask, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT),
         *cond = gen_str(x, "CausalSoftmax_%d_mask", ex->li), *scaled = gen_str(x, "%s_scaled", ex->out),
         *masked = gen_str(x, "%s_masked", ex->out);
    if (!alpha || !ninf || !m || !cond) return;
    Onnx__NodeProto *c = gen_node(x, "Cast", gen_str(x, "CausalSoftmax_%d_cast", ex->li), cond, 1, m);
    gen_attr_int(x, c, "to", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL);
    gen_node(x, "Mul", gen_str(x, "CausalSoftmax_%d_mul", ex->li), scaled, 2, ex->in, alpha);
    gen_node(x, "Where", gen_str(x, "CausalSoftmax_%d_where", ex->li), masked, 3, cond, ninf, scaled);
    Onnx__NodeProto *n = gen_node(x, "Softmax", gen_str(x, "CausalSoftmax_%d", ex->li), ex->out, 1, masked);
    gen_attr_int(x, n, "axis", -1);
    ex->flat[ex->li] = 0;
}

/* LAYER_SOFTMAX, LAYER_LOG_SOFTMAX */
static void export_softmax(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    /* opset 13's: the one axis (a flat input is rank 1: its axis 1 either way) */
    n = gen_op(x, ex, 1);
    gen_attr_int(x, n, "axis", 1 + ex->l->op.softmax.axis);
}

/* LAYER_CONCAT */
static void export_concat(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    n = gen_op(x, ex, 2);
    gen_attr_int(x, n, "axis", 1 + ex->l->op.concat.axis);
    ex->flat[ex->li] = 0;
}

/* LAYER_BN */
static void export_bn(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    const char *nm[4] = {tensor_name_at(ex->m, ex->l->w_off, 0), tensor_name_at(ex->m, ex->l->b_off, 0),
                         tensor_name_at(ex->m, ex->l->rm_off, 1), tensor_name_at(ex->m, ex->l->rv_off, 1)};
    n = gen_node(x, ex->op, gen_module(x, ex->m, ex->l, ex->op, ex->li), ex->out, 5, ex->in, nm[0], nm[1], nm[2], nm[3]);
    gen_attr_float(x, n, "epsilon", ex->l->op.norm.eps);
    /* ONNX's momentum weighs the old running statistics: 1 - PyTorch's */
    gen_attr_float(x, n, "momentum", 1.0f - ex->l->op.norm.momentum);
    const int64_t d[1] = {ex->l->C};
    for (int i = 0; i < 4; i++) gen_init(x, ex->m, nm[i], 1, d);
}

/* LAYER_FC */
static void export_fc(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    /* Gemm reads (N, features): a spatial input is flattened first */
    char *a = ex->in;
    if (!ex->in_flat) {
        a = gen_str(x, "%s_flat", ex->in);
        gen_node(x, "Flatten", gen_str(x, "Flatten_%d", ex->li), a, 1, ex->in);
    }
    const char *w = tensor_name_at(ex->m, ex->l->w_off, 0),
               *b = ex->l->has_bias ? tensor_name_at(ex->m, ex->l->b_off, 0) : NULL;
    char *name = gen_module(x, ex->m, ex->l, ex->op, ex->li);
    n = b ? gen_node(x, ex->op, name, ex->out, 3, a, w, b) : gen_node(x, ex->op, name, ex->out, 2, a, w);
    gen_attr_float(x, n, "alpha", ex->l->op.gemm.alpha);
    gen_attr_float(x, n, "beta", ex->l->op.gemm.beta);
    gen_attr_int(x, n, "transB", ex->l->op.gemm.layout == GEMM_W_OUT_IN);
    const int64_t wd[2] = {ex->l->op.gemm.layout == GEMM_W_OUT_IN ? ex->l->OC : ex->l->C,
                           ex->l->op.gemm.layout == GEMM_W_OUT_IN ? ex->l->C : ex->l->OC},
                  bd[1] = {ex->l->OC};
    gen_init(x, ex->m, w, 2, wd);
    if (b) gen_init(x, ex->m, b, 1, bd);
    ex->flat[ex->li] = 1;
}

/* LAYER_LINEAR */
static void export_linear(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    /* MatMul by the (IN, OUT) weight over the last axis, then Add of the bias (the pair
     * the importer joins again) */
    const char *w = tensor_name_at(ex->m, ex->l->w_off, 0),
               *b = ex->l->has_bias ? tensor_name_at(ex->m, ex->l->b_off, 0) : NULL;
    char *mm = b ? gen_str(x, "%s_mm", ex->out) : ex->out;
    /* a weight (OUT, IN) (torch's nn.Linear) is read through its Transpose, as torch writes it */
    const int out_in = ex->l->op.gemm.layout == GEMM_W_OUT_IN;
    char *wt = out_in ? gen_str(x, "%s_t%d", w ? w : "", ex->li) : (char *)w;
    if (out_in) {
        n = gen_node(x, "Transpose", gen_str(x, "Transpose_%d_weight", ex->li), wt, 1, w);
        const int perm[2] = {1, 0};
        gen_attr_ints(x, n, "perm", 2, perm);
    }
    gen_node(x, "MatMul", gen_module(x, ex->m, ex->l, "MatMul", ex->li), mm, 2, ex->in, wt);
    const int64_t wd[2] = {out_in ? ex->l->op.gemm.OUT : ex->l->op.gemm.IN,
                           out_in ? ex->l->op.gemm.IN : ex->l->op.gemm.OUT},
                  bd[1] = {ex->l->op.gemm.OUT};
    gen_init(x, ex->m, w, 2, wd);
    if (b) {
        gen_node(x, "Add", gen_str(x, "Add_%d_bias", ex->li), ex->out, 2, mm, b);
        gen_init(x, ex->m, b, 1, bd);
    }
    ex->flat[ex->li] = 0;
}

/* LAYER_ADD */
static void export_add(gen_t *x, const layer_exp_t *ex)
{
    Onnx__NodeProto *n = NULL;
    char *sc = ex->in2;
    const shortcut_desc_t *s = &ex->l->op.sc;
    if (s->stride != 1 || s->C != s->OC) {
        /* He et al.'s option A: x subsampled by the stride (a 1x1 max pool of that
         * stride picks x[:, :, ::s, ::s]) and its channels zero-padded to OC, the C
         * real ones at offset (OC - C) / 2 (ops.h) */
        if (s->stride != 1) {
            char *sub = gen_str(x, "%s_sub%d", sc, ex->li);
            n = gen_node(x, "MaxPool", gen_str(x, "Shortcut_%d_subsample", ex->li), sub, 1, sc);
            const int k[2] = {1, 1}, st[2] = {s->stride, s->stride};
            gen_attr_ints(x, n, "kernel_shape", 2, k);
            gen_attr_ints(x, n, "strides", 2, st);
            sc = sub;
        }
        if (s->C != s->OC) {
            const int lo = (s->OC - s->C) / 2;
            int64_t *pads = gen_alloc(x, 8 * sizeof *pads);
            if (!pads) return;
            pads[1] = lo;
            pads[5] = s->OC - s->C - lo;
            const int64_t d[1] = {8};
            char *pv = gen_str(x, "Shortcut_%d_pads", ex->li), *padded = gen_str(x, "%s_pad%d", sc, ex->li);
            n = gen_node(x, "Constant", gen_str(x, "Shortcut_%d_pads", ex->li), pv, 0);
            Onnx__AttributeProto *v = gen_attr(x, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
            if (v) v->t = gen_tensor(x, NULL, 1, d, pads, 8 * sizeof *pads, ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
            gen_node(x, "Pad", gen_str(x, "Shortcut_%d_pad", ex->li), padded, 2, sc, pv);
            sc = padded;
        }
    }
    gen_node(x, ex->op, gen_str(x, "%s_%d", ex->op, ex->li), ex->out, 2, ex->in, sc);
    ex->flat[ex->li] = ex->in_flat;
}

/* Each layer kind's export of its own: its ONNX nodes and initializers. A PLAIN row of the
 * operator table has no entry (export_of gives it the shared translation); a row that names
 * no ONNX operator has none either, and is refused. */
static void (*const EXPORTS[LAYER_KIND_COUNT])(gen_t *x, const layer_exp_t *ex) = {
    [LAYER_CONV] = export_conv,
    [LAYER_CONV_TRANSPOSE] = export_conv_transpose,
    [LAYER_MAXPOOL] = export_maxpool,
    [LAYER_AVGPOOL] = export_maxpool,
    [LAYER_RELU] = export_unary,
    [LAYER_SIGMOID] = export_unary,
    [LAYER_TANH] = export_unary,
    [LAYER_CONST] = export_const,
    [LAYER_GATHER_PARAM] = export_gather_param,
    [LAYER_RESHAPE] = export_reshape,
    [LAYER_TRANSPOSE] = export_transpose,
    [LAYER_SLICE] = export_slice,
    [LAYER_REDUCE_MEAN] = export_reduce_mean,
    [LAYER_REDUCE_SUM] = export_reduce_mean,
    [LAYER_BADD] = export_binary,
    [LAYER_BMUL] = export_binary,
    [LAYER_DIV] = export_binary,
    [LAYER_BPOW] = export_binary,
    [LAYER_POW] = export_pow,
    [LAYER_LEAKY_RELU] = export_leaky_relu,
    [LAYER_CLIP] = export_clip,
    [LAYER_HARDSIGMOID] = export_hardsigmoid,
    [LAYER_HARDSWISH] = export_hardswish,
    [LAYER_MUL] = export_binary,
    [LAYER_STOCHASTIC_DEPTH] = export_stochastic_depth,
    [LAYER_DROPOUT] = export_dropout,
    [LAYER_GAP] = export_gap,
    [LAYER_ERF] = export_unary,
    [LAYER_GELU] = export_gelu,
    [LAYER_BMM] = export_bmm,
    [LAYER_LAYERNORM] = export_layernorm,
    [LAYER_EXPAND] = export_expand,
    [LAYER_SOFTMAX] = export_softmax,
    [LAYER_LOG_SOFTMAX] = export_softmax,
    [LAYER_CONCAT] = export_concat,
    [LAYER_BN] = export_bn,
    [LAYER_FC] = export_fc,
    [LAYER_LINEAR] = export_linear,
    [LAYER_EMBED] = export_embed,
    [LAYER_CAUSAL_SOFTMAX] = export_causal_softmax,
    [LAYER_ADD] = export_add,
};

/* Kind k's translation, or NULL: a row naming no ONNX operator is not exported. */
static void (*export_of(layer_kind_t k))(gen_t *x, const layer_exp_t *ex)
{
    const model_op_t *op = model_op(k);
    if (!op || !*op->onnx_export) return NULL;
    if (op->onnx_form == MODEL_OP_ONNX_PLAIN) return op->ninputs == 2 ? export_binary : export_unary;
    return EXPORTS[k];
}

/* One layer's nodes (layer_exp_t names its values). A kind whose table row names no ONNX
 * operator (the language models' rows) is refused by name. */
static void gen_layer(gen_t *x, const model_t *m, int li, char **val, int *flat, char *err, size_t errlen)
{
    const layer_t *l = &m->layers[li];
    const model_op_t *op = model_op(l->kind);
    flat[li] = l->in < 0 ? 0 : flat[l->in];
    void (*fn)(gen_t *, const layer_exp_t *) = export_of(l->kind);
    if (!fn) {
        snprintf(err, errlen, "onnx: layer %d (%s): not exported to ONNX yet", li, op ? op->name : "no kind");
        x->failed = 1;
        return;
    }
    const layer_exp_t ex = {.m = m,
                            .l = l,
                            .li = li,
                            .in = l->in < 0 ? (char *)"input" : val[l->in],
                            .in2 = op->ninputs < 2 ? NULL
                                   : l->in2 < 0    ? (char *)"input"
                                                   : val[l->in2],
                            .in_flat = l->in < 0 ? 0 : flat[l->in],
                            .out = val[li],
                            .op = op->onnx_export,
                            .val = val,
                            .flat = flat,
                            .err = err,
                            .errlen = errlen};
    fn(x, &ex);
}

int onnx_export_has_kind(layer_kind_t k)
{
    const model_op_t *op = model_op(k);
    return op && (EXPORTS[k] || op->onnx_form == MODEL_OP_ONNX_PLAIN);
}

int onnx_export_layers(const model_t *m, uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    snprintf(err, errlen, "onnx: out of memory");
    gen_t x = {0};
    Onnx__ModelProto mp;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto op, pacer_op;
    Onnx__OperatorSetIdProto *ops[2] = {&op, &pacer_op};
    onnx__model_proto__init(&mp);
    onnx__graph_proto__init(&g);
    onnx__operator_set_id_proto__init(&op);
    onnx__operator_set_id_proto__init(&pacer_op);
    pacer_op.domain = (char *)"ai.pacer"; /* StochasticDepth's domain, named when a layer uses it */
    pacer_op.has_version = 1;
    pacer_op.version = 1;
    x.g = &g;
    op.domain = (char *)"";
    op.has_version = 1;
    op.version = ONNX_EXPORT_OPSET;
    mp.has_ir_version = 1;
    mp.ir_version = 7; /* the IR of opset 13 */
    mp.opset_import = ops;
    mp.n_opset_import = 1;
    for (int i = 0; i < m->nlayers; i++)
        if (m->layers[i].kind == LAYER_STOCHASTIC_DEPTH) mp.n_opset_import = 2;
    mp.producer_name = (char *)"pacer";
    mp.producer_version = (char *)PACER_VERSION;
    mp.graph = &g;
    g.name = (char *)m->name;
    char **val = gen_alloc(&x, (size_t)(m->nlayers ? m->nlayers : 1) * sizeof *val);
    int *flat = gen_alloc(&x, (size_t)(m->nlayers ? m->nlayers : 1) * sizeof *flat);
    for (int i = 0; val && i < m->nlayers; i++) val[i] = i == m->nlayers - 1 ? (char *)"logits" : gen_str(&x, "t%d", i);
    /* the logits are (N, classes): a last layer of (N, classes, 1, 1) (a convolution or a
     * pool) writes "logits4d", which a Flatten makes the output */
    /* a language model's head (LAYER_LINEAR over the last axis) writes its (N, T, V) logits */
    const int last_linear = m->nlayers > 0 && m->layers[m->nlayers - 1].kind == LAYER_LINEAR;
    const int last_spatial = m->nlayers > 0 && m->layers[m->nlayers - 1].kind != LAYER_FC && !last_linear;
    if (val && last_spatial) val[m->nlayers - 1] = (char *)"logits4d";
    err[0] = '\0';
    for (int i = 0; val && flat && i < m->nlayers && !x.failed; i++) gen_layer(&x, m, i, val, flat, err, errlen);
    if (last_spatial && !x.failed)
        gen_node(&x, flat[m->nlayers - 1] ? "Identity" : "Flatten", "Flatten_logits", "logits", 1, "logits4d");
    /* the input's N-D shape (the builders' images are (C, H, W)) */
    int64_t in_dims[MODEL_MAX_RANK], out_dims[MODEL_MAX_RANK] = {m->num_classes};
    int out_rank = 1, ids = 0;
    for (int d = 0; d < m->in_shape.rank; d++) in_dims[d] = m->in_shape.dims[d];
    if (last_linear) {
        const model_shape_t *os = &m->layers[m->nlayers - 1].shape;
        out_rank = os->rank;
        for (int d = 0; d < os->rank; d++) out_dims[d] = os->dims[d];
    }
    /* token ids (an embedding reads the input): int64, as torch exports them */
    for (int i = 0; i < m->nlayers; i++) ids |= m->layers[i].in == -1 && m->layers[i].kind == LAYER_EMBED;
    Onnx__ValueInfoProto *io[2] = {gen_value_info(&x, "input", m->in_shape.rank, in_dims),
                                   gen_value_info(&x, "logits", out_rank, out_dims)};
    if (ids && io[0]) io[0]->type->tensor_type->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    g.input = &io[0];
    g.n_input = 1;
    g.output = &io[1];
    g.n_output = 1;
    int rc = -1;
    if (x.failed || m->nlayers < 1) {
        if (!err[0]) snprintf(err, errlen, "onnx: out of memory, or a layer without its tensors");
    } else {
        size_t n = onnx__model_proto__get_packed_size(&mp);
        *out = malloc(n ? n : 1);
        if (*out) {
            *outlen = onnx__model_proto__pack(&mp, *out);
            rc = 0;
        } else {
            snprintf(err, errlen, "onnx: out of memory (%zu bytes)", n);
        }
    }
    for (size_t i = 0; i < x.n; i++) free(x.blocks[i]);
    free(x.blocks);
    return rc;
}
