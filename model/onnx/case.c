/* model/onnx/case.c - see case.h. */
#include "case.h"
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
#include "unit.h"
#include "wire.h"

/* ---- conformance cases (pacer-worker --onnx-case) -------------------------------------- */

/* ONNX's TensorProto.DataType names, by number (onnx.proto). */
static const char *dtype_name(int t)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",  "INT16",
                                        "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16", "DOUBLE",
                                        "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

int onnx_tensor_decode(const uint8_t *data, size_t len, onnx_tensor_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len > ONNX_CASE_TENSOR_MAX_BYTES)
        return snprintf(err, errlen, "%zu bytes exceed the limit of %zu", len, (size_t)ONNX_CASE_TENSOR_MAX_BYTES), -1;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, data);
    if (!t) return snprintf(err, errlen, "not a TensorProto, or truncated (the protobuf does not decode)"), -1;
    int rc = -1;
    const int64_t n = imp_tensor_count(t);
    const int is_int = t->has_data_type && t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    const size_t esz = is_int ? sizeof(int64_t) : sizeof(float),
                 nval = is_int ? t->n_int64_data : t->n_float_data; /* without raw data */
    const void *src = t->has_raw_data ? (const void *)t->raw_data.data
                      : is_int        ? (const void *)t->int64_data
                                      : (const void *)t->float_data;
    void *dst = NULL;
    if (!is_int && (!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT))
        snprintf(err, errlen, "data type %s (%d): only float32 and int64 tensors are supported",
                 dtype_name(t->data_type), (int)t->data_type);
    else if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        snprintf(err, errlen, "external data is not supported");
    else if (n < 0 || (size_t)n > ONNX_CASE_TENSOR_MAX_BYTES / esz)
        snprintf(err, errlen, "shape of %zu dimensions is negative, too large or has more than 8", t->n_dims);
    else if (t->has_raw_data ? t->raw_data.len != (size_t)n * esz : nval != (size_t)n)
        snprintf(err, errlen, "%zu %s for %lld elements", t->has_raw_data ? t->raw_data.len : nval,
                 t->has_raw_data ? "bytes of raw data"
                 : is_int        ? "int64 values"
                                 : "float values",
                 (long long)n);
    else if (!(dst = malloc((size_t)(n ? n : 1) * esz))) snprintf(err, errlen, "out of memory");
    else {
        /* little-endian, as in tensor_floats; an empty tensor may have no data at all
         * (NULL), which memcpy must not be given even for 0 bytes */
        if (n) memcpy(dst, src, (size_t)n * esz);
        if (is_int) out->ints = dst;
        else out->data = dst;
        out->count = (size_t)n;
        out->ndims = (int)t->n_dims;
        for (size_t i = 0; i < t->n_dims; i++) out->dims[i] = t->dims[i];
        snprintf(out->name, sizeof out->name, "%s", t->name ? t->name : "");
        rc = 0;
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    return rc;
}

void onnx_tensor_free(onnx_tensor_t *t)
{
    free(t->data);
    free(t->ints);
    t->data = NULL;
    t->ints = NULL;
}

int onnx_graph_ops(const uint8_t *data, size_t len, char *out, size_t outlen)
{
    out[0] = '\0';
    if (len == 0 || len > ONNX_MAX_BYTES) return -1;
    char why[256];
    if (wire_check(data, len, onnx_import_memory_bound(), why, sizeof why) != WIRE_OK) return -1;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp || !mp->graph) {
        if (mp) onnx__model_proto__free_unpacked(mp, NULL);
        return -1;
    }
    size_t used = 0;
    for (size_t i = 0; i < mp->graph->n_node && i < ONNX_MAX_NODES; i++) {
        const char *op = mp->graph->node[i]->op_type ? mp->graph->node[i]->op_type : "?";
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = mp->graph->node[j]->op_type && strcmp(mp->graph->node[j]->op_type, op) == 0;
        if (seen) continue;
        int w = snprintf(out + used, outlen - used, "%s%.64s", used ? "," : "", op);
        if (w < 0 || (size_t)w >= outlen - used) break; /* the list is cut, never overrun */
        used += (size_t)w;
    }
    onnx__model_proto__free_unpacked(mp, NULL);
    return 0;
}

/* ---- a case's inputs fed as activations ----------------------------------------------------
 * A case's graph input that has the activation's rank and batch (input_0's first
 * dimension), is float32 and is read as data, not as a weight (Conv's, Gemm's B and a
 * normalisation's parameters, a 2-D MatMul's second operand), is an activation like
 * input_0, not a constant: onnx_import_case_inputs feeds them all as one model input of
 * (N, S), each sample theirs one after the other, and puts in front of the graph a Slice of
 * its part and a Reshape to its shape for each (the importer's own layers), so that an Add
 * of two (3, 4, 5) inputs is an Add of two activations. The Slice takes its bounds as
 * inputs (opset 10 on): in older opsets the inputs stay constants. */

#define PACK_INPUT "pacer_case_inputs"
#define NPACK (ONNX_CASE_MAX_TENSORS + 1)

/* Whether graph input `name` is read by some node as a weight (see above). */
static int read_as_weight(const Onnx__GraphProto *g, const char *name, int ndims)
{
    static const char *const weights[] = {
        "Conv", "ConvTranspose", "Gemm", "BatchNormalization", "LayerNormalization", "InstanceNormalization", "PRelu",
        NULL};
    for (size_t i = 0; i < g->n_node && i < ONNX_MAX_NODES; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 1; k < n->n_input; k++) {
            if (!n->input[k] || strcmp(n->input[k], name) != 0 || !n->op_type) continue;
            if (k == 2 && strcmp(n->op_type, "Gemm") == 0) continue; /* C: data, added to the product */
            for (const char *const *w = weights; *w; w++)
                if (strcmp(n->op_type, *w) == 0) return 1;
            if (strcmp(n->op_type, "MatMul") == 0 && ndims == 2) return 1;
        }
    }
    return 0;
}

/* Whether case input t (after the first; graph input name) is an activation like in0. */
static int is_activation(const Onnx__GraphProto *g, const char *name, const onnx_tensor_t *t, const onnx_tensor_t *in0)
{
    return t->data && t->ndims == in0->ndims && t->ndims >= 1 && t->dims[0] == in0->dims[0] && t->dims[0] >= 1 &&
           !read_as_weight(g, name, t->ndims);
}

/* The rewritten graph's parts, which the graph borrows while it is imported: the packed
 * input vi, and per packed input k the constants starts, ends and shape, a Slice into
 * name[k][0] and a Reshape into the input's own name. */
typedef struct {
    Onnx__ValueInfoProto vi, *vip;
    Onnx__TypeProto tp;
    Onnx__TypeProto__Tensor tt;
    Onnx__TensorShapeProto sh;
    Onnx__TensorShapeProto__Dimension dim[2], *dimp[2];
    Onnx__NodeProto nodes[2 * NPACK];
    Onnx__TensorProto consts[3 * NPACK + 1];
    int64_t starts[NPACK], ends[NPACK], shapes[NPACK][9], axis1, cdims[3 * NPACK + 1];
    char axes_name[48], name[NPACK][4][48];
    char *slice_in[NPACK][4], *slice_out[NPACK], *reshape_in[NPACK][2], *reshape_out[NPACK];
    /* allowzero = 1 on the Reshape of an empty input: its 0s are dimensions of 0 */
    Onnx__AttributeProto allowzero, *allowzerop[1];
} pack_t;

static void int64_const(pack_t *p, size_t c, char *name, int64_t *v, size_t n)
{
    Onnx__TensorProto *t = &p->consts[c];
    onnx__tensor_proto__init(t);
    t->name = name;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->n_int64_data = n;
    t->int64_data = v;
    p->cdims[c] = (int64_t)n;
    t->n_dims = 1;
    t->dims = &p->cdims[c];
}

static void node_init(Onnx__NodeProto *n, char *op, char *name, char **in, size_t nin, char **out)
{
    onnx__node_proto__init(n);
    n->op_type = op;
    n->name = name;
    n->n_input = nin;
    n->input = in;
    n->n_output = 1;
    n->output = out;
}

/* The packed input's value info: float32 (N, S). */
static void pack_input(pack_t *p, int64_t N, int64_t S)
{
    static char input[] = PACK_INPUT;
    onnx__value_info_proto__init(&p->vi);
    onnx__type_proto__init(&p->tp);
    onnx__type_proto__tensor__init(&p->tt);
    onnx__tensor_shape_proto__init(&p->sh);
    for (int d = 0; d < 2; d++) {
        onnx__tensor_shape_proto__dimension__init(&p->dim[d]);
        p->dim[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        p->dim[d].dim_value = d ? S : N;
        p->dimp[d] = &p->dim[d];
    }
    p->sh.n_dim = 2;
    p->sh.dim = p->dimp;
    p->tt.has_elem_type = 1;
    p->tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    p->tt.shape = &p->sh;
    p->tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    p->tp.tensor_type = &p->tt;
    p->vi.name = input;
    p->vi.type = &p->tp;
    p->vip = &p->vi;
}

/* p for the npk packed inputs in[k] (graph inputs names[k]): the packed input (N, S), and
 * per input a Slice of elements [off, off + its sample size) of each sample and a Reshape
 * to its shape (p->nodes[2k], [2k + 1]), their constants (p->consts, 3 npk + 1). */
static void pack_graph(pack_t *p, const onnx_tensor_t *const *in, char *const *names, int npk, int64_t S, int unit)
{
    static char slice[] = "Slice", reshape[] = "Reshape", input[] = PACK_INPUT;
    memset(p, 0, sizeof *p);
    pack_input(p, unit ? 1 : in[0]->dims[0], S);
    p->axis1 = 1;
    snprintf(p->axes_name, sizeof p->axes_name, "%s_axes", PACK_INPUT);
    int64_const(p, 0, p->axes_name, &p->axis1, 1);
    int64_t off = 0;
    for (int k = 0; k < npk; k++) {
        const onnx_tensor_t *t = in[k];
        char(*nm)[48] = p->name[k];
        snprintf(nm[0], 48, "%s_%d", PACK_INPUT, k);
        snprintf(nm[1], 48, "%s_%d_starts", PACK_INPUT, k);
        snprintf(nm[2], 48, "%s_%d_ends", PACK_INPUT, k);
        snprintf(nm[3], 48, "%s_%d_shape", PACK_INPUT, k);
        p->starts[k] = off;
        off += unit ? (int64_t)t->count : (int64_t)t->count / t->dims[0];
        p->ends[k] = off;
        p->shapes[k][0] = 0; /* the batch, copied */
        /* unit: the whole tensor one sample, after the batch's leading 1 */
        int empty = 0;
        for (int d = unit ? 0 : 1; d < t->ndims && d + unit < 9; d++)
            empty |= (p->shapes[k][d + unit] = t->dims[d]) == 0;
        int64_const(p, 1 + 3 * (size_t)k, nm[1], &p->starts[k], 1);
        int64_const(p, 2 + 3 * (size_t)k, nm[2], &p->ends[k], 1);
        int64_const(p, 3 + 3 * (size_t)k, nm[3], p->shapes[k], (size_t)(t->ndims + unit));
        p->slice_in[k][0] = input;
        p->slice_in[k][1] = nm[1];
        p->slice_in[k][2] = nm[2];
        p->slice_in[k][3] = p->axes_name;
        p->slice_out[k] = nm[0];
        p->reshape_in[k][0] = nm[0];
        p->reshape_in[k][1] = nm[3];
        p->reshape_out[k] = names[k];
        node_init(&p->nodes[2 * k], slice, nm[0], p->slice_in[k], 4, &p->slice_out[k]);
        node_init(&p->nodes[2 * k + 1], reshape, names[k], p->reshape_in[k], 2, &p->reshape_out[k]);
        if (empty) {
            /* a 0 is then a dimension of 0 after the batch, which is given, not copied */
            p->shapes[k][0] = unit ? 1 : in[0]->dims[0];
            p->nodes[2 * k + 1].n_attribute = 1;
            p->nodes[2 * k + 1].attribute = p->allowzerop;
        }
    }
    static char allowzero[] = "allowzero";
    onnx__attribute_proto__init(&p->allowzero);
    p->allowzero.name = allowzero;
    p->allowzero.has_type = 1;
    p->allowzero.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    p->allowzero.has_i = 1;
    p->allowzero.i = 1;
    p->allowzerop[0] = &p->allowzero;
}

/* Whether node n computes BatchNormalization's training form (the batch's statistics, the
 * running ones updated): training_mode 1 (opset 14 on), is_test 0 (its default) below
 * opset 7, more than one output named in opsets 7 to 13 (ONNX's output case #1). */
static int bn_training(const Onnx__NodeProto *n, int64_t opset)
{
    if (!n->op_type || strcmp(n->op_type, "BatchNormalization") != 0) return 0;
    int training = 0, is_test = 0, outputs = 0;
    for (size_t a = 0; a < n->n_attribute; a++) {
        const char *an = n->attribute[a]->name;
        training |= an && strcmp(an, "training_mode") == 0 && n->attribute[a]->i;
        is_test |= an && strcmp(an, "is_test") == 0 && n->attribute[a]->i;
    }
    for (size_t o = 1; o < n->n_output; o++) outputs += n->output[o] && n->output[o][0];
    return opset < 7 ? !is_test : opset < 14 ? outputs > 0 : training;
}

/* The training form of g (a node of bn_training): the case's forward then runs in
 * training mode, as ONNX's reference does for that node; *train 1 when g has one, else 0.
 * Graph output `output` (-1: none) is compared as *stat 1 or 2 when it is such a node's
 * running mean or variance (then *y the graph output that is the node's Y, the model read
 * for it), else *stat 0. 0, or -1 with err set: its saved mean or inverse standard
 * deviation (opsets 9 to 13's outputs 3 and 4) asked for, its Y not a graph output, or a
 * Dropout or a batch norm in inference form beside it (which a forward in training mode
 * would apply in training form too, ONNX's as their own attributes say). */
static int case_training(const Onnx__GraphProto *g, int64_t opset, int output, int *train, int *stat, int *y, char *err,
                         size_t errlen)
{
    const char *want = output >= 0 && (size_t)output < g->n_output ? g->output[output]->name : NULL;
    const Onnx__NodeProto *other = NULL; /* a Dropout, or a batch norm in inference form */
    *train = *stat = 0;
    *y = output;
    for (size_t i = 0; i < g->n_node && i < ONNX_MAX_NODES; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (n->op_type && (strcmp(n->op_type, "Dropout") == 0 || strcmp(n->op_type, "BatchNormalization") == 0))
            other = bn_training(n, opset) ? other : n;
        if (!bn_training(n, opset)) continue;
        *train = 1;
        for (size_t o = 1; want && o < n->n_output; o++) {
            if (!n->output[o] || strcmp(n->output[o], want) != 0) continue;
            if (o > 2)
                return snprintf(err, errlen,
                                "onnx: node '%s' (BatchNormalization): output %zu (the saved statistics) is not "
                                "compared: only Y and the running mean and variance",
                                n->name ? n->name : "?", o),
                       -1;
            *stat = (int)o;
            *y = -1;
            for (size_t k = 0; k < g->n_output && n->output[0]; k++)
                if (g->output[k]->name && strcmp(g->output[k]->name, n->output[0]) == 0) *y = (int)k;
            if (*y < 0)
                return snprintf(err, errlen,
                                "onnx: node '%s' (BatchNormalization): its running statistics are compared "
                                "where its Y is a graph output only",
                                n->name ? n->name : "?"),
                       -1;
        }
    }
    if (*train && other)
        return snprintf(err, errlen,
                        "onnx: node '%s' (%s) beside a BatchNormalization in training form: the case's forward in "
                        "training mode would apply it in training form too, ONNX's as its own attributes say",
                        other->name ? other->name : "?", other->op_type),
               -1;
    return 0;
}

/* The ai.onnx opset mp imports, or -1. */
static int64_t case_opset(const Onnx__ModelProto *mp)
{
    int64_t opset = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0) opset = o->has_version ? o->version : -1;
    }
    return opset;
}

/* t as the constant b of graph input name (its data borrowed). */
static Onnx__TensorProto *bound_tensor(Onnx__TensorProto *t, char *name, const onnx_tensor_t *b)
{
    onnx__tensor_proto__init(t);
    t->name = name;
    t->has_data_type = 1;
    t->n_dims = (size_t)b->ndims;
    t->dims = (int64_t *)b->dims;
    if (b->ints) {
        /* a shape argument: a constant the importer folds (input_ints) */
        t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        t->n_int64_data = b->count;
        t->int64_data = b->ints;
    } else {
        t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        t->n_float_data = b->count;
        t->float_data = b->data;
    }
    return t;
}

/* The graph's parts a case's import replaces, borrowed by the graph only while it is
 * imported: the initializers (the graph's, the bound inputs', the packing's and the unit
 * rewrite's), the nodes, the packing, the unit rewrite and its output. */
typedef struct {
    Onnx__TensorProto tp[ONNX_CASE_MAX_TENSORS];
    Onnx__TensorProto **inits;
    size_t n_inits;
    Onnx__NodeProto **nodes;
    pack_t *p;
    unit_t *unit;
    Onnx__ValueInfoProto *out_vi;
    const onnx_tensor_t *pk[NPACK];
    char *pk_names[NPACK];
    int npk;
    unit_shape_t known[NPACK + ONNX_CASE_MAX_TENSORS];
    int nknown;
} edits_t;

static void edits_free(edits_t *e)
{
    free(e->inits);
    free(e->nodes);
    free(e->p);
    unit_free(e->unit);
    free(e);
}

/* The graph inputs that no initializer fills: the first is the activation (in0), the
 * others (a single-operator case's weights and data) are bound, in order, to bound[]:
 * activations like the first (is_activation; with unit, every float one not read as a
 * weight) join it in the packed input (e->pk), the rest become initializers of the graph
 * (e->inits) for the importer, which then sees one input. */
static void bind_inputs(const Onnx__GraphProto *g, const onnx_tensor_t *in0, const onnx_tensor_t *bound, int feed,
                        int unit, int *packed, edits_t *e)
{
    int j = -1; /* -1: the activation is still to come */
    for (size_t i = 0; i < g->n_input; i++) {
        char *name = g->input[i]->name;
        if (!name || imp_is_initializer(g, name)) continue;
        const onnx_tensor_t *b = j < 0 ? in0 : &bound[j];
        if (b) e->known[e->nknown++] = (unit_shape_t){.name = name, .ndims = b->ndims, .dims = b->dims};
        if (j < 0) {
            e->pk[0] = in0, e->pk_names[0] = name;
            j = 0;
            continue;
        }
        if (packed) packed[j + 1] = 0;
        const int act = feed && (unit ? b->data && !read_as_weight(g, name, b->ndims) : is_activation(g, name, b, in0));
        if (act) {
            if (packed) packed[j + 1] = 1;
            e->pk[++e->npk] = b, e->pk_names[e->npk] = name;
            j++;
            continue;
        }
        e->inits[e->n_inits++] = bound_tensor(&e->tp[j], name, b);
        j++;
    }
    if (packed) packed[0] = 1;
}

/* The packed input (e->npk inputs after the first; with unit, the first alone too) in
 * front of nodes (n_nodes of them): g's nodes, inputs and initializers set to the
 * rewritten ones. 0, or -1 when out of memory. */
static int pack_in_front(Onnx__GraphProto *g, edits_t *e, Onnx__NodeProto **nodes, size_t n_nodes, int unit)
{
    if (e->npk == 0 && !unit) return 0;
    int64_t S = 0;
    const int npk = ++e->npk; /* the first input's part too */
    for (int q = 0; q < npk; q++) S += unit ? (int64_t)e->pk[q]->count : (int64_t)e->pk[q]->count / e->pk[q]->dims[0];
    if (!(e->p = malloc(sizeof *e->p)) || !(e->nodes = malloc((n_nodes + 2 * (size_t)npk) * sizeof *e->nodes)))
        return -1;
    pack_graph(e->p, e->pk, e->pk_names, npk, S, unit);
    for (size_t c = 0; c < 3 * (size_t)npk + 1; c++) e->inits[e->n_inits++] = &e->p->consts[c];
    for (int q = 0; q < 2 * npk; q++) e->nodes[q] = &e->p->nodes[q];
    if (n_nodes) memcpy(e->nodes + 2 * npk, nodes, n_nodes * sizeof *nodes);
    g->node = e->nodes;
    g->n_node = n_nodes + 2 * (size_t)npk;
    g->input = &e->p->vip;
    g->n_input = 1;
    return 0;
}

/* The unit rewrite of g (unit.h) for output `output`: its nodes in *nodes, its constants
 * added to e->inits (room for UNIT_MORE). 0, or -1 with err set. */
static int unit_edit(Onnx__GraphProto *g, int64_t opset, int output, edits_t *e, Onnx__NodeProto ***nodes,
                     size_t *n_nodes, char *err, size_t errlen)
{
    Onnx__TensorProto **ui;
    size_t nui;
    if (unit_rewrite(g, opset, e->inits, e->n_inits, e->known, e->nknown, (size_t)output, &e->unit, nodes, n_nodes, &ui,
                     &nui, &e->out_vi, err, errlen) != 0)
        return -1;
    Onnx__TensorProto **more = realloc(e->inits, (e->n_inits + nui + 3 * NPACK + 1) * sizeof *more);
    if (!more) return snprintf(err, errlen, "onnx: out of memory"), -1;
    e->inits = more;
    for (size_t i = 0; i < nui; i++) e->inits[e->n_inits++] = ui[i];
    return 0;
}

/* onnx_import_case and onnx_import_case_inputs: in0 NULL (no input fed as an activation
 * but the first) or the first input, whose batch the others' is compared with; unit: the
 * graph read as one sample (unit.h; every input given, one output), *rewrite_refused set
 * when the rewrite refused it (not the importer). */
static int case_import(const uint8_t *data, size_t len, const onnx_tensor_t *in0, const onnx_tensor_t *bound,
                       int nbound, int max_batch, int output, int unit, int *packed, int *rewrite_refused,
                       model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (len == 0 || len > ONNX_MAX_BYTES)
        return snprintf(err, errlen, "onnx: %zu bytes: empty, or over the limit of %zu", len, ONNX_MAX_BYTES), -1;
    if (nbound < 0 || nbound > ONNX_CASE_MAX_TENSORS)
        return snprintf(err, errlen, "onnx: %d bound inputs (at most %d)", nbound, ONNX_CASE_MAX_TENSORS), -1;
    if (wire_refused(wire_check(data, len, onnx_import_memory_bound(), err, errlen))) return -1;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp) return snprintf(err, errlen, "onnx: not an ONNX model, or truncated (the protobuf does not decode)"), -1;
    Onnx__GraphProto *g = mp->graph;
    int rc = -1;
    edits_t *e = calloc(1, sizeof *e);
    const size_t n_init = g ? g->n_initializer : 0;
    const int64_t opset = case_opset(mp);
    if (!e) {
        snprintf(err, errlen, "onnx: out of memory");
        goto out;
    }
    if (!g) {
        snprintf(err, errlen, "onnx: the model has no graph");
        goto out;
    }
    int train, stat;
    if (case_training(g, opset, output, &train, &stat, &output, err, errlen) != 0) goto out;
    int k = 0;
    for (size_t i = 0; i < g->n_input; i++)
        if (g->input[i]->name && !imp_is_initializer(g, g->input[i]->name)) k++;
    if (k != nbound + 1) {
        snprintf(err, errlen, "onnx: the graph has %d inputs, the case gives %d", k, nbound + 1);
        goto out;
    }
    if (output >= 0 && (size_t)output >= g->n_output) {
        snprintf(err, errlen, "onnx: the graph has %zu outputs, the case gives more", g->n_output);
        goto out;
    }
    if (unit && (!in0 || !in0->data || output < 0)) {
        snprintf(err, errlen, "onnx: read as one sample of fixed shape: every input given");
        if (rewrite_refused) *rewrite_refused = 1;
        goto out;
    }
    if (!(e->inits = malloc((n_init + (size_t)nbound + 3 * NPACK + 1) * sizeof *e->inits))) {
        snprintf(err, errlen, "onnx: out of memory");
        goto out;
    }
    if (n_init) memcpy(e->inits, g->initializer, n_init * sizeof *e->inits);
    e->n_inits = n_init;
    bind_inputs(g, in0, bound, unit || (in0 && in0->ndims >= 1 && opset >= 10), unit, packed, e);
    Onnx__NodeProto **nodes = g->node;
    size_t n_nodes = g->n_node;
    if (unit && unit_edit(g, opset, output, e, &nodes, &n_nodes, err, errlen) != 0) {
        if (rewrite_refused) *rewrite_refused = !e->unit;
        goto out;
    }
    /* the graph borrows the arrays and the tensors only for the import: restored below,
     * before free_unpacked frees what protobuf-c allocated */
    Onnx__TensorProto **orig = g->initializer;
    Onnx__ValueInfoProto **orig_in = g->input;
    Onnx__NodeProto **orig_nodes = g->node;
    Onnx__ValueInfoProto **orig_out = g->output;
    const size_t orig_nin = g->n_input, orig_nn = g->n_node, orig_nout = g->n_output;
    if (pack_in_front(g, e, nodes, n_nodes, unit) != 0) {
        snprintf(err, errlen, "onnx: out of memory");
        goto restore;
    }
    if (unit) g->output = &e->out_vi, g->n_output = 1;
    else if (output >= 0) g->output += output, g->n_output = 1; /* that output alone */
    g->initializer = e->inits;
    g->n_initializer = e->n_inits;
    rc = import_model(mp, "onnx-case", max_batch, 1, out, err, errlen);
restore:
    g->initializer = orig;
    g->n_initializer = n_init;
    g->input = orig_in;
    g->n_input = orig_nin;
    g->node = orig_nodes;
    g->n_node = orig_nn;
    g->output = orig_out;
    g->n_output = orig_nout;
out:
    if (e) edits_free(e);
    onnx__model_proto__free_unpacked(mp, NULL);
    return rc;
}

int onnx_import_case(const uint8_t *data, size_t len, const onnx_tensor_t *bound, int nbound, int max_batch,
                     model_t **out, char *err, size_t errlen)
{
    return case_import(data, len, NULL, bound, nbound, max_batch, -1, 0, NULL, NULL, out, err, errlen);
}

int onnx_import_case_inputs(const uint8_t *data, size_t len, const onnx_tensor_t *in, int nin, int max_batch,
                            int output, int *packed, int *whole, model_t **out, char *err, size_t errlen)
{
    *whole = 0;
    if (nin < 1) return *out = NULL, snprintf(err, errlen, "onnx: no input"), -1;
    if (case_import(data, len, &in[0], &in[1], nin - 1, max_batch, output, 0, packed, NULL, out, err, errlen) == 0)
        return 0;
    /* refused as batches: read as one sample of fixed shape, where the graph's own axis 0
     * is an axis like any other; a node that cannot be read so keeps the first refusal,
     * another refusal of the graph so read follows it */
    char why[1024];
    int rewrite_refused = 0;
    if (case_import(data, len, &in[0], &in[1], nin - 1, max_batch, output, 1, packed, &rewrite_refused, out, why,
                    sizeof why) == 0)
        return *whole = 1, 0;
    const size_t used = strlen(err);
    if (!rewrite_refused && strcmp(err, why) != 0 && used < errlen)
        snprintf(err + used, errlen - used, " (read as one sample of fixed shape: %s)",
                 strncmp(why, "onnx: ", 6) == 0 ? why + 6 : why);
    return -1;
}

int onnx_case_training(const uint8_t *data, size_t len, int output, int *stat)
{
    char err[512];
    *stat = 0;
    if (len == 0 || len > ONNX_MAX_BYTES ||
        wire_refused(wire_check(data, len, onnx_import_memory_bound(), err, sizeof err)))
        return 0;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp) return 0;
    int train = 0, y;
    if (!mp->graph || case_training(mp->graph, case_opset(mp), output, &train, stat, &y, err, sizeof err) != 0)
        train = *stat = 0; /* the import refuses it, with its message */
    onnx__model_proto__free_unpacked(mp, NULL);
    return train;
}
