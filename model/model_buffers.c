/* model/model_buffers.c - the checks of a model's buffers as read from outside (a
 * checkpoint's, worker/checkpoint.c): on its own (and shape.c), so that the checkpoint
 * reader's fuzzers (fuzz/fuzz_checkpoint.c, fuzz_ef.c) link it without the model's
 * kernels. */
#include <math.h>
#include <stdio.h>

#include "model.h"

const tensor_info_t *model_tensor_at(const model_t *m, size_t off, int is_buffer)
{
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *x = &m->tensors[t];
        if ((x->is_buffer != 0) == (is_buffer != 0) && off >= x->offset && off - x->offset < x->count) return x;
    }
    return NULL;
}

/* A gathered parameter's index map: every element a whole index into its table. */
static int check_gather_map(const model_t *m, int i, const float *buffers, char *err, size_t errlen)
{
    const layer_t *l = &m->layers[i];
    const size_t n = model_shape_count(&l->shape), t = model_shape_count(&l->op.table.shape);
    const float *map = buffers + l->rm_off;
    for (size_t j = 0; j < n; j++) {
        const float k = map[j];
        if (k >= 0.0f && k < (float)t && k == floorf(k)) continue;
        snprintf(err, errlen,
                 "layer %d (gather param): element %zu of its index map is %g, not an index of its table of %zu "
                 "values",
                 i, j, (double)k, t);
        return -1;
    }
    return 0;
}

/* A batch norm's running statistics: the mean finite, the variance finite and >= 0 (the
 * evaluation divides by sqrt(var + eps): a negative or NaN one makes every output NaN). */
static int check_bn_stats(const model_t *m, int i, const float *buffers, char *err, size_t errlen)
{
    const layer_t *l = &m->layers[i];
    for (int s = 0; s < 2; s++) {
        const size_t off = s ? l->rv_off : l->rm_off;
        const float *v = buffers + off;
        for (int c = 0; c < l->C; c++) {
            if (isfinite(v[c]) && (s == 0 || v[c] >= 0.0f)) continue;
            const tensor_info_t *t = model_tensor_at(m, off + (size_t)c, 1);
            snprintf(err, errlen, "layer %d (batch norm): element %d of its running %s (%s) is %g, want %s", i, c,
                     s ? "variance" : "mean", t ? t->name : "?", (double)v[c], s ? "finite and >= 0" : "finite");
            return -1;
        }
    }
    return 0;
}

int model_check_buffers(const model_t *m, const float *buffers, char *err, size_t errlen)
{
    for (int i = 0; i < m->nlayers; i++) {
        const layer_kind_t k = m->layers[i].kind;
        if (k == LAYER_GATHER_PARAM && check_gather_map(m, i, buffers, err, errlen) != 0) return -1;
        if (k == LAYER_BN && check_bn_stats(m, i, buffers, err, errlen) != 0) return -1;
    }
    return 0;
}
