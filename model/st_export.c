/* model/st_export.c - see st_export.h. */
#include "st_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "safetensors.h"

/* Tensor t's shape from the graph's initializer of its name and element count, else 1-D. */
static void tensor_shape(const Onnx__GraphProto *g, const tensor_info_t *ti, st_tensor_t *t)
{
    t->rank = 1;
    t->dims[0] = (int64_t)ti->count;
    for (size_t i = 0; g && i < g->n_initializer; i++) {
        const Onnx__TensorProto *x = g->initializer[i];
        if (!x->name || strcmp(x->name, ti->name) != 0 || x->n_dims > ST_MAX_RANK) continue;
        size_t count = 1;
        for (size_t d = 0; d < x->n_dims; d++) count *= x->dims[d] > 0 ? (size_t)x->dims[d] : 0;
        if (count != ti->count) continue;
        t->rank = (int)x->n_dims;
        for (size_t d = 0; d < x->n_dims; d++) t->dims[d] = x->dims[d];
        return;
    }
}

int st_model_tensors(const uint8_t *src, size_t len, const model_t *m, st_tensor_t **out, int *n, char *err,
                     size_t errlen)
{
    *out = NULL;
    *n = 0;
    uint8_t *gen = NULL;
    size_t genlen = 0;
    if (!src && onnx_export_layers(m, &gen, &genlen, err, errlen) != 0) return -1;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, src ? len : genlen, src ? src : gen);
    free(gen);
    if (!mp || !mp->graph) {
        if (mp) onnx__model_proto__free_unpacked(mp, NULL);
        return snprintf(err, errlen, "safetensors: the model's ONNX graph does not decode"), -1;
    }
    st_tensor_t *t = calloc((size_t)(m->ntensors ? m->ntensors : 1), sizeof *t);
    if (!t) {
        onnx__model_proto__free_unpacked(mp, NULL);
        return snprintf(err, errlen, "safetensors: out of memory"), -1;
    }
    /* parameters first, then buffers: the model's order within each */
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < m->ntensors; i++) {
            const tensor_info_t *ti = &m->tensors[i];
            if (ti->is_buffer != pass) continue;
            snprintf(t[k].name, sizeof t[k].name, "%s", ti->name);
            t[k].count = ti->count;
            t[k].data = (pass ? m->buffers : m->params) + ti->offset;
            tensor_shape(mp->graph, ti, &t[k]);
            k++;
        }
    onnx__model_proto__free_unpacked(mp, NULL);
    *out = t;
    *n = k;
    return 0;
}

int st_export_to_file(const uint8_t *src, size_t len, const model_t *m, const st_out_t *o, const char *out_path,
                      char *err, size_t errlen)
{
    st_tensor_t *t;
    int n;
    if (st_model_tensors(src, len, m, &t, &n, err, errlen) != 0) return -1;
    int rc = o ? st_out_apply(t, n, o, err, errlen) : 0;
    if (rc == 0) rc = st_write_file(out_path, t, n, err, errlen);
    free(t);
    return rc;
}

int st_export_file(const char *src_path, const model_t *m, const st_out_t *o, const char *out_path, char *err,
                   size_t errlen)
{
    uint8_t *src = NULL;
    size_t len = 0;
    if (src_path && src_path[0] && onnx_read_file(src_path, &src, &len, err, errlen) != 0) return -1;
    int rc = st_export_to_file(src, len, m, o, out_path, err, errlen);
    free(src);
    return rc;
}
