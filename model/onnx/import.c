/* model/onnx/import.c - the importer's entry points declared in model/onnx_import.h: the file's graph
 * inputs and outputs, the builder callback that walks the nodes, the memory bound, the catalog. */
#include "onnx_import.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errmsg.h"
#include "onnx.pb-c.h"
#include "op_table.h"
#include "sha256.h"
#include "import_internal.h"
#include "view.h"
#include "nodes.h"
#include "wire.h"

/* The operators the importer takes that are no layer of their own (folded into constants,
 * aliases of their input, or the padding of the layer after them); the layers' own come
 * from the operator table (model/op_table.c). */
static const char GRAPH_OPS[] = "Flatten, Reshape, Identity, Constant, Pad (zeros before Conv or AveragePool; of "
                                "channels before Add), Shape, Gather, Unsqueeze, Concat, Cast, Add, Sub, Mul, Div, Equal, "
                                "Mod, Not, Where, Squeeze, Slice, Range, ScatterND, ConstantOfShape (of constant "
                                "shapes: folded)";

/* An operator the importer rewrites as other operators' nodes (model/onnx/einsum.c): its
 * layers are theirs. */
static const char EINSUM_OPS[] = "Einsum (a batched matrix product of two inputs, or one input permuted)";

size_t onnx_supported_ops(char *buf, size_t len)
{
    const size_t n = model_op_onnx_names(buf, len, GRAPH_OPS);
    if (n + 1 < len) snprintf(buf + n, len - n, ", %s", EINSUM_OPS);
    return n + 2 + strlen(EINSUM_OPS);
}

void onnx_print_supported_ops(FILE *f)
{
    fprintf(f, "| ONNX operators | pacer layer |\n| --- | --- |\n");
    /* a row with no ONNX operator (built in only: the language models') imports nothing */
    for (int k = 0; k < LAYER_KIND_COUNT; k++)
        if (*MODEL_OPS[k].onnx_import) fprintf(f, "| %s | %s |\n", MODEL_OPS[k].onnx_import, MODEL_OPS[k].name);
    fprintf(f, "| %s | matmul, or transpose |\n", EINSUM_OPS);
    fprintf(f,
            "| %s | none: folded into constants, aliases of their input, or the padding of the layer after them "
            "|\n",
            GRAPH_OPS);
}

/* ---- the memory bound ------------------------------------------------------------------ */

/* Set once by the program before it imports (pacer-worker's main); 0 = physical memory. */
static size_t g_memory_bound;

void onnx_import_set_memory_bound(size_t bytes) { g_memory_bound = bytes; }

size_t onnx_import_memory_bound(void)
{
    if (g_memory_bound) return g_memory_bound;
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || size <= 0) return (size_t)1 << 34; /* unknown: 16 GiB */
    return (size_t)pages * (size_t)size;
}

/* Frees the values and the arrays they own. */
static void free_values(imp_t *im)
{
    for (size_t i = 0; i < im->nvals; i++) free(im->vals[i].arr), free(im->vals[i].owned_name);
    free(im->vals);
    im->vals = NULL;
}

/* Refuses node n when a layer it added is larger than any buffer can be, or when the
 * model's buffers so far (model_build_bytes, from the declared shapes and attributes)
 * exceed the memory bound: checked after each node, so that no list grows far past the
 * bound and nothing large is allocated before the refusal. *built: layers already checked. */
/* Refuses node n for a layer it added whose output has more elements per sample than any
 * kernel indexes (model.h's MODEL_SAMPLE_MAX: a Reshape, Expand, Concat or broadcast to an
 * impossible shape); 0 when there is none. */
static int check_too_large(imp_t *im, const model_builder_t *b, const Onnx__NodeProto *n)
{
    model_shape_t s;
    if (model_build_too_large(b, &s) < 0) return 0;
    char t[96] = "";
    if (s.rank >= 0) imp_batch_text(&s, t, sizeof t);
    return imp_fail(im, "node '%s' (%s): its output %s%shas more than %lld elements per sample: the shape is too large",
                    imp_node_name(n), n->op_type, t, t[0] ? " " : "", MODEL_SAMPLE_MAX);
}

static int check_bound(imp_t *im, const model_builder_t *b, const Onnx__NodeProto *n, int *built)
{
    /* a layer's output at the batch, in floats: 2^40 keeps every sum model.c makes exact */
    const uint64_t LAYER_MAX = (uint64_t)1 << 40;
    int C, H, W;
    for (; model_build_shape(b, *built, &C, &H, &W) == 0; (*built)++) {
        uint64_t e;
        if (__builtin_mul_overflow((uint64_t)C * (uint64_t)H, (uint64_t)W * (uint64_t)im->max_batch, &e) ||
            e > LAYER_MAX)
            return imp_fail(im, "node '%s' (%s): its output (%d, %d, %d) at batch %d is too large for any memory",
                            imp_node_name(n), n->op_type, C, H, W, im->max_batch);
    }
    size_t need = model_build_bytes(b), bound = onnx_import_memory_bound();
    if (need > bound)
        return imp_fail(im,
                        "node '%s' (%s): the model needs %s or more at batch %d (its shapes as declared), more than the "
                        "memory bound of %s",
                        imp_node_name(n), n->op_type, imp_size_text(need).s, im->max_batch, imp_size_text(bound).s);
    return check_too_large(im, b, n);
}

/* The model_build_fn: every node in order, then the output must be the last layer. */
static int build_graph(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    imp_t *im = ctx;
    im->err = err;
    im->errlen = errlen;
    value_t *in = imp_add_value(im, im->input, V_LAYER);
    if (!in) return imp_fail(im, "out of memory");
    in->layer = -1;
    int built = 0; /* layers checked against the bound */
    for (size_t i = 0; i < im->g->n_node; i++) {
        /* a node refused after a layer it added was too large: the bounds give the reason */
        im->sym_refused = 0;
        if (do_node(im, b, im->g->node[i]) != 0) {
            if (model_build_too_large(b, NULL) >= 0) check_bound(im, b, im->g->node[i], &built);
            return -1;
        }
        if (check_bound(im, b, im->g->node[i], &built) != 0) return -1;
    }
    im->sym_refused = 0;
    value_t *o = imp_find_value(im, im->output);
    if (o && o->kind == V_LAYER && o->defer)
        return imp_fail(im,
                        "the graph's output '%s' is a Transpose that moves the batch axis (only a Gather on axis 0 may "
                        "read one)",
                        im->output);
    if (o && o->kind == V_LAYER && o->viewed) {
        /* the output read plain: the batch first alone (a last Transpose or Reshape) */
        view_t v = o->view;
        int li = o->layer;
        char t[96];
        view_normal(b, &li, &v);
        if (!view_is_plain(&v))
            return imp_fail(
                im, "the graph's output '%s' is %s: its batch axis moved or merged by a Transpose, Reshape or Concat",
                im->output, view_text(&o->view, t, sizeof t));
        o->layer = li;
        o->viewed = 0;
    }
    int C, H, W, Cl, Hl, Wl, last = 0;
    while (model_build_shape(b, last + 1, &Cl, &Hl, &Wl) == 0) last++;
    if (im->any_output && o && o->kind == V_LAYER && !o->viewed && (o->layer < 0 || o->layer != last)) {
        /* a case's output that is the input itself (Identity, a Reshape to its own shape) or
         * not the last layer (one of a Split's outputs): a copy of it is the model's output
         * (a flat value: its samples flat) */
        model_shape_t s;
        model_build_shape_nd(b, o->layer, &s);
        if (o->flat) s = (model_shape_t){.rank = 1, .dims = {(int)model_shape_count(&s)}};
        o->layer = last = model_build_reshape(b, o->layer, &s);
        o->flat = 0;
    }
    if (!o || o->kind != V_LAYER || o->layer < 0)
        return imp_fail(im, "the graph's output '%s' is not computed by a supported node", im->output);
    model_build_shape(b, o->layer, &C, &H, &W);
    if (o->layer != last)
        return imp_fail(im, "the graph's output '%s' is not its last layer (a branch computed after it is unused)",
                        im->output);
    model_shape_t s;
    model_build_shape_nd(b, o->layer, &s);
    if (im->int_input && s.rank == 2) return 0; /* a language model's (N, T, V) logits */
    if (!im->any_output && (H != 1 || W != 1)) {
        char t[96];
        return imp_fail(im, "the graph's output is not (N, classes): its shape is %s", imp_batch_text(&s, t, sizeof t));
    }
    return 0;
}

/* ---- the file ---------------------------------------------------------------------------- */

/* Dimension i of a graph input's or output's declared shape: its value (0: an empty axis),
 * -1 when symbolic or absent. */
static int64_t vi_dim(const Onnx__ValueInfoProto *vi, size_t i, size_t *ndims)
{
    *ndims = 0;
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !vi->type->tensor_type ||
        !vi->type->tensor_type->shape)
        return -1;
    const Onnx__TensorShapeProto *s = vi->type->tensor_type->shape;
    *ndims = s->n_dim;
    if (i >= s->n_dim) return -1;
    return s->dim[i]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? s->dim[i]->dim_value : -1;
}

/* The per-sample shape of a graph input or output (N, ...) of rank 1 to 1 + MODEL_MAX_RANK
 * with every dimension after the batch fixed (0 for an empty axis); 0, or -1. */
static int vi_shape(const Onnx__ValueInfoProto *vi, model_shape_t *s)
{
    size_t nd;
    vi_dim(vi, 0, &nd);
    if (nd < 1 || nd > 1 + MODEL_MAX_RANK) return -1;
    s->rank = (int)nd - 1;
    for (size_t i = 1; i < nd; i++) {
        const int64_t d = vi_dim(vi, i, &nd);
        if (d < 0 || d > DIM_MAX) return -1;
        s->dims[i - 1] = (int)d;
    }
    return 0;
}

/* onnx_import_case: elements per sample of an output (N, ...) with every other dimension
 * fixed, or -1. */
static int64_t case_output_count(const Onnx__ValueInfoProto *vi)
{
    model_shape_t s;
    int64_t n = 1;
    if (vi_shape(vi, &s) != 0) return -1;
    for (int d = 0; d < s.rank; d++) {
        n *= s.dims[d];
        if (n > DIM_MAX) return -1;
    }
    return n;
}

int imp_is_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && strcmp(g->initializer[i]->name, name) == 0) return 1;
    return 0;
}

/* The built model against what the graph declares: the token ids' embeddings (each holds
 * every id below the classes, which bound the data set's ids) and the output's shape (a
 * language model's (N, T, V), a case's N-D one, else (N, classes)); 0, or -1 with the
 * reason. */
/* A model to train computes no empty tensor (a dimension of 0): the forward skips one, and
 * its backward would need every kernel's empty walk; a case's Slice, Split and Reshape may
 * give one (model.c refuses a layer reading one into a non-empty output). 0, or -1 with
 * the reason. */
static int check_empty(const imp_t *im, const model_t *m, char *err, size_t errlen)
{
    for (int i = 0; !im->any_output && i < m->nlayers; i++) {
        char t[96];
        if (!model_layer_empty(m, i)) continue;
        snprintf(err, errlen,
                 "onnx: layer %d (%s) gives an empty tensor %s (a dimension of 0): a model to train "
                 "computes none",
                 i, MODEL_OPS[m->layers[i].kind].name, imp_batch_text(&m->layers[i].shape, t, sizeof t));
        return -1;
    }
    return 0;
}

static int check_built(const imp_t *im, const model_t *m, int out_seq, int out_nd, int64_t classes, char *err,
                       size_t errlen)
{
    const layer_t *ll = &m->layers[m->nlayers - 1];
    if (check_empty(im, m, err, errlen) != 0) return -1;
    if (im->int_input && im->nembeds == 0) {
        snprintf(err, errlen,
                 "onnx: input '%s' holds token ids, but no embedding (Gather of an initializer) reads them", im->input);
        return -1;
    }
    if (im->int_input && im->min_vocab < classes) {
        /* ids are bounded by the classes (the data set's check): each embedding must hold them */
        snprintf(err, errlen, "onnx: an embedding of the token ids has %d rows, fewer than the %lld classes",
                 im->min_vocab, (long long)classes);
        return -1;
    }
    if (out_seq) {
        size_t nd;
        const int64_t T = vi_dim(im->g->output[0], 1, &nd);
        if (ll->shape.rank != 2 || ll->shape.dims[1] != classes || (T > 0 && T != ll->shape.dims[0])) {
            char t[96];
            snprintf(err, errlen, "onnx: the last layer gives %s, the graph's output declares (N, %lld, %lld) logits",
                     imp_batch_text(&ll->shape, t, sizeof t), (long long)T, (long long)classes);
            return -1;
        }
    } else if ((im->any_output ? (int64_t)ll->OC * ll->OH * ll->OW : ll->OC) != classes) {
        snprintf(err, errlen, "onnx: the last layer has %d outputs, the graph's output declares %lld classes",
                 m->layers[m->nlayers - 1].OC, (long long)classes);
        return -1;
    }
    model_shape_t out_shape;
    if (out_nd && (vi_shape(im->g->output[0], &out_shape) != 0 || !model_shape_equal(&out_shape, &ll->shape))) {
        char t[96];
        snprintf(err, errlen, "onnx: the last layer gives %s, the graph's output declares another shape",
                 imp_batch_text(&ll->shape, t, sizeof t));
        return -1;
    }
    return 0;
}

/* The input's element type: float (images, features), or token ids (int64, int32), which
 * travel as floats, exact below 2^24, which bounds every vocabulary (DIM_MAX); only an
 * embedding Gather may read them (model/onnx/lm.c). 0, or -1 with the reason. */
static int input_type(imp_t *im, const Onnx__ValueInfoProto *input, char *err, size_t errlen)
{
    const int elem = input->type && input->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
                             input->type->tensor_type
                         ? input->type->tensor_type->elem_type
                         : -1;
    im->int_input = elem == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || elem == ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    if (elem != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && !im->int_input)
        return snprintf(err, errlen, "onnx: input '%s' is not a float tensor nor int64/int32 token ids", input->name),
               -1;
    return 0;
}

/* Below opset 6 the operators that changed by 6 (consumed_inputs, is_test, the broadcast
 * attribute, Reshape's shape attribute, Concat's default axis, ...) mean something else:
 * such a graph is read only when every operator in it has had one definition from opset 1
 * through 6, so that it means what it would at 6. */
static int as_at_opset6(const Onnx__GraphProto *g)
{
    static const char *const unchanged[] = {"GlobalAveragePool", "GlobalMaxPool"};
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        int found = 0;
        if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) return 0;
        for (size_t k = 0; k < sizeof unchanged / sizeof unchanged[0]; k++)
            found |= n->op_type && strcmp(n->op_type, unchanged[k]) == 0;
        if (!found) return 0;
    }
    return 1;
}

int import_model(const Onnx__ModelProto *mp, const char *name, int max_batch, int any_output, model_t **out, char *err,
                 size_t errlen)
{
    const Onnx__GraphProto *g = mp->graph;
    if (!g) return snprintf(err, errlen, "onnx: the model has no graph"), -1;
    int64_t opset = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0) opset = o->has_version ? o->version : -1;
    }
    /* from 6: what changed since is read by version or refused as an unknown attribute */
    if ((opset < 6 && !(opset >= 1 && as_at_opset6(g))) || opset > 17)
        return snprintf(err, errlen,
                        "onnx: opset %lld is not supported (6 to 17; 1 to 5 for graphs of operators defined once "
                        "since opset 1 only: GlobalAveragePool, GlobalMaxPool)",
                        (long long)opset),
               -1;
    if (g->n_node > ONNX_MAX_NODES || g->n_initializer > ONNX_MAX_INITIALIZERS)
        return snprintf(err, errlen, "onnx: %zu nodes and %zu initializers exceed the bounds (%d, %d)", g->n_node,
                        g->n_initializer, ONNX_MAX_NODES, ONNX_MAX_INITIALIZERS),
               -1;
    if (g->n_sparse_initializer > 0) return snprintf(err, errlen, "onnx: sparse initializers are not supported"), -1;

    imp_t im = {.g = g, .max_batch = max_batch, .opset = opset};
    /* the image input: the one graph input that is not an initializer */
    const Onnx__ValueInfoProto *input = NULL;
    for (size_t i = 0; i < g->n_input; i++) {
        if (!g->input[i]->name || imp_is_initializer(g, g->input[i]->name)) continue;
        if (input) return snprintf(err, errlen, "onnx: the graph has more than one input (one image input only)"), -1;
        input = g->input[i];
    }
    if (!input) return snprintf(err, errlen, "onnx: the graph has no input"), -1;
    if (g->n_output != 1 || !g->output[0]->name)
        return snprintf(err, errlen, "onnx: the graph has %zu outputs (one logits output only)", g->n_output), -1;
    if (input_type(&im, input, err, errlen) != 0) return -1;
    size_t nod;
    model_shape_t in_shape;
    if (vi_shape(input, &in_shape) != 0)
        return snprintf(err, errlen,
                        "onnx: input '%s' must be a batch (N, ...) of rank 1 to %d with every dimension after N fixed",
                        input->name, 1 + MODEL_MAX_RANK),
               -1;
    size_t in_count;
    if (model_shape_count_checked(&in_shape, &in_count) != 0) {
        char t[96];
        return snprintf(err, errlen,
                        "onnx: input '%s' is %s: more than %lld elements per sample: the shape is too large",
                        input->name, imp_batch_text(&in_shape, t, sizeof t), MODEL_SAMPLE_MAX),
               -1;
    }
    const int64_t batch = vi_dim(input, 0, &nod);
    int64_t classes = vi_dim(g->output[0], 1, &nod);
    /* a case's output of another rank than (N, classes): compared whole, as N-D */
    const int out_nd = any_output && nod != 2;
    if (out_nd) classes = case_output_count(g->output[0]), nod = 2;
    /* a language model's (N, T, V) logits over token ids: V classes at each of T positions
     * (torch leaves T unnamed; the last layer's shape says it) */
    const int out_seq = !any_output && im.int_input && nod == 3;
    if (out_seq) classes = vi_dim(g->output[0], 2, &nod), nod = 2;
    /* a case's output may be empty (an empty Slice's); a model to train gives a class at least */
    if (nod != 2 || classes < (any_output ? 0 : 1) || classes > DIM_MAX)
        return snprintf(err, errlen, "onnx: output '%s' must have the shape (N, classes) with classes fixed",
                        g->output[0]->name),
               -1;
    im.input = input->name;
    im.output = g->output[0]->name;
    im.batch_dim = batch > 0 && batch <= DIM_MAX ? (int)batch : 0;
    im.any_output = any_output;
    for (size_t i = 0; i < g->n_initializer; i++) {
        value_t *v = imp_add_value(&im, g->initializer[i]->name ? g->initializer[i]->name : "", V_TENSOR);
        if (!v) return free_values(&im), snprintf(err, errlen, "onnx: out of memory"), -1;
        v->tensor = g->initializer[i];
    }

    model_t *m = NULL;
    if (model_create_custom_shape(name, &in_shape, (int)classes, max_batch, build_graph, &im, &m, err, errlen) != 0) {
        free_values(&im);
        return -1;
    }
    if (check_built(&im, m, out_seq, out_nd, classes, err, errlen) != 0) goto fail;
    /* One initializer read by two layers would be two tensors trained apart: refused
     * rather than silently untied. */
    for (int i = 0; i < m->ntensors; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(m->tensors[i].name, m->tensors[j].name) == 0) {
                snprintf(err, errlen, "onnx: initializer '%s' is used by two layers (shared weights are not supported)",
                         m->tensors[i].name);
                goto fail;
            }
    /* the starting weights: every tensor from the initializer of its name */
    im.err = err;
    im.errlen = errlen;
    for (int i = 0; i < m->ntensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        const value_t *v = imp_find_value(&im, t->name);
        float *dst = (t->is_buffer ? m->buffers : m->params) + t->offset;
        if (v && v->kind == V_ARRAY && v->acount == t->count) {
            /* a folded constant (a mask), or a gathered parameter's indices */
            for (size_t k = 0; k < t->count; k++) dst[k] = (float)v->arr[k];
            continue;
        }
        if (!v || v->kind != V_TENSOR) {
            snprintf(err, errlen, "onnx: no initializer '%s'", t->name);
            goto fail;
        }
        if (imp_tensor_floats(&im, v->tensor, dst, t->count) != 0) goto fail;
    }
    free_values(&im);
    *out = m;
    return 0;
fail:
    free_values(&im);
    model_free(m);
    return -1;
}

int onnx_import_buffer(const uint8_t *data, size_t len, const char *name, int max_batch, model_t **out, char *err,
                       size_t errlen)
{
    *out = NULL;
    if (len == 0) return snprintf(err, errlen, "onnx: empty input"), -1;
    if (len > ONNX_MAX_BYTES)
        return snprintf(err, errlen, "onnx: %zu bytes exceed the limit of %zu", len, ONNX_MAX_BYTES), -1;
    if (wire_refused(wire_check(data, len, onnx_import_memory_bound(), err, errlen))) return -1;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp) return snprintf(err, errlen, "onnx: not an ONNX model, or truncated (the protobuf does not decode)"), -1;
    int rc = import_model(mp, name, max_batch, 0, out, err, errlen);
    onnx__model_proto__free_unpacked(mp, NULL);
    return rc;
}

int onnx_read_file(const char *path, uint8_t **data, size_t *len, char *err, size_t errlen)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(err, errlen, "onnx: cannot open %s: %s", path, strerror(errno)), -1;
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            if (cap >= ONNX_MAX_BYTES) {
                fclose(f);
                free(buf);
                return snprintf(err, errlen, "onnx: %s is larger than %zu bytes", path, ONNX_MAX_BYTES), -1;
            }
            cap = cap ? 2 * cap : (size_t)1 << 16;
            uint8_t *p = realloc(buf, cap + 1);
            if (!p) {
                fclose(f);
                free(buf);
                return snprintf(err, errlen, "onnx: out of memory reading %s", path), -1;
            }
            buf = p;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int rd_err = ferror(f);
    fclose(f);
    if (rd_err) {
        free(buf);
        return snprintf(err, errlen, "onnx: error reading %s", path), -1;
    }
    *data = buf;
    *len = n;
    return 0;
}

int onnx_import_file(const char *path, const char *name, int max_batch, model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    uint8_t *buf;
    size_t len;
    if (onnx_read_file(path, &buf, &len, err, errlen) != 0) return -1;
    int rc = onnx_import_buffer(buf, len, name, max_batch, out, err, errlen);
    free(buf);
    return rc;
}

int onnx_is_model(const uint8_t *data, size_t len)
{
    if (len == 0 || len > ONNX_MAX_BYTES) return 0;
    /* beyond a bound: a model the importer refuses with the reason (422), not "not ONNX" */
    char why[256];
    int w = wire_check(data, len, onnx_import_memory_bound(), why, sizeof why);
    if (w != WIRE_OK) return w == WIRE_BOUND;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    int ok = mp && mp->graph;
    if (mp) onnx__model_proto__free_unpacked(mp, NULL);
    return ok;
}

int onnx_import_describe(const uint8_t *data, size_t len, const char *name, catalog_model_t *out, char *err,
                         size_t errlen)
{
    model_t *m = NULL;
    if (onnx_import_buffer(data, len, name, 1, &m, err, errlen) != 0) return -1;
    model_describe(m, out);
    model_free(m);
    out->source = CATALOG_ONNX;
    return 0;
}

int onnx_import_catalog_add_buffer(const uint8_t *data, size_t len, const char *name, const char *title,
                                   catalog_source_t source, char *err, size_t errlen)
{
    catalog_model_t e;
    char why[768];
    if (onnx_import_describe(data, len, name, &e, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", strncmp(why, "onnx: ", 6) == 0 ? why + 6 : why);
        return -1;
    }
    e.source = source;
    if (source == CATALOG_UPLOADED) sha256_hex(data, len, e.sha256);
    snprintf(e.title, sizeof e.title, "%.*s", (int)sizeof e.title - 1, title);
    if (catalog_model_add(&e, err, errlen) == 0) return 0;
    /* another rank of this process (pacer-sim) added it meanwhile */
    catalog_model_t had;
    if (catalog_model_get(name, &had) == 0 && had.source == source) return 0;
    return -1;
}

int onnx_import_catalog_add(const char *path, const char *name, const char *sha256, char *err, size_t errlen)
{
    if (sha256 && sha256[0])
        return snprintf(err, errlen,
                        "uploaded model %s: its bytes are read by pacer-worker (--models-dir, else Redis), not here",
                        path),
               -1;
    uint8_t *buf;
    size_t len;
    char why[768];
    if (onnx_read_file(path, &buf, &len, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", strncmp(why, "onnx: ", 6) == 0 ? why + 6 : why);
        return -1;
    }
    const char *base = strrchr(path, '/');
    int rc = onnx_import_catalog_add_buffer(buf, len, name, base ? base + 1 : path, CATALOG_ONNX, why, sizeof why);
    free(buf);
    /* the message names the file once: "cannot open PATH: ..." does already */
    if (rc != 0) snprintf(err, errlen, "%s: %s", path, why);
    return rc;
}
