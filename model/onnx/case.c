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
#include "fold.h"
#include "view.h"
#include "nodes.h"
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
    if (wire_check(data, len, why, sizeof why) != WIRE_OK) return -1;
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

int onnx_import_case(const uint8_t *data, size_t len, const onnx_tensor_t *bound, int nbound, int max_batch,
                     model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (len == 0 || len > ONNX_MAX_BYTES)
        return snprintf(err, errlen, "onnx: %zu bytes: empty, or over the limit of %zu", len, ONNX_MAX_BYTES), -1;
    if (nbound < 0 || nbound > ONNX_CASE_MAX_TENSORS)
        return snprintf(err, errlen, "onnx: %d bound inputs (at most %d)", nbound, ONNX_CASE_MAX_TENSORS), -1;
    if (wire_check(data, len, err, errlen) == WIRE_BOUND) return -1;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp) return snprintf(err, errlen, "onnx: not an ONNX model, or truncated (the protobuf does not decode)"), -1;
    Onnx__GraphProto *g = mp->graph;
    int rc = -1;
    Onnx__TensorProto tp[ONNX_CASE_MAX_TENSORS];
    Onnx__TensorProto **inits = NULL;
    size_t n_init = g ? g->n_initializer : 0;
    if (!g) {
        snprintf(err, errlen, "onnx: the model has no graph");
        goto out;
    }
    /* The graph inputs that no initializer fills: the first is the activation, the others
     * (a single-operator case's weights) are bound, in order, to the given tensors: they
     * become initializers of the graph for the importer, which then sees one input. */
    int k = 0;
    for (size_t i = 0; i < g->n_input; i++)
        if (g->input[i]->name && !imp_is_initializer(g, g->input[i]->name)) k++;
    if (k != nbound + 1) {
        snprintf(err, errlen, "onnx: the graph has %d inputs, the case gives %d", k, nbound + 1);
        goto out;
    }
    inits = malloc((n_init + (size_t)nbound + 1) * sizeof *inits);
    if (!inits) {
        snprintf(err, errlen, "onnx: out of memory");
        goto out;
    }
    if (n_init) memcpy(inits, g->initializer, n_init * sizeof *inits);
    int j = -1; /* -1: the activation is still to come */
    for (size_t i = 0; i < g->n_input; i++) {
        if (!g->input[i]->name || imp_is_initializer(g, g->input[i]->name)) continue;
        if (j < 0) {
            j = 0;
            continue;
        }
        const onnx_tensor_t *b = &bound[j];
        Onnx__TensorProto *t = &tp[j];
        onnx__tensor_proto__init(t);
        t->name = g->input[i]->name;
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
        inits[n_init + (size_t)j++] = t;
    }
    /* the graph borrows the array and the tensors only for the import: restored below,
     * before free_unpacked frees what protobuf-c allocated */
    Onnx__TensorProto **orig = g->initializer;
    g->initializer = inits;
    g->n_initializer = n_init + (size_t)nbound;
    rc = import_model(mp, "onnx-case", max_batch, 1, out, err, errlen);
    g->initializer = orig;
    g->n_initializer = n_init;
out:
    free(inits);
    onnx__model_proto__free_unpacked(mp, NULL);
    return rc;
}
