/* model/model_buffers.c - the checks of a model's buffers as read from outside (a
 * checkpoint's, worker/checkpoint.c): on its own (and shape.c), so that the checkpoint
 * reader's fuzzers (fuzz/fuzz_checkpoint.c, fuzz_ef.c) link it without the model's
 * kernels. */
#include <math.h>
#include <stdio.h>

#include "model.h"

int model_check_buffers(const model_t *m, char *err, size_t errlen)
{
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        if (l->kind != LAYER_GATHER_PARAM) continue;
        const size_t n = model_shape_count(&l->shape), t = model_shape_count(&l->gp_table);
        const float *map = m->buffers + l->rm_off;
        for (size_t j = 0; j < n; j++) {
            const float k = map[j];
            if (k >= 0.0f && k < (float)t && k == floorf(k)) continue;
            snprintf(err, errlen,
                     "layer %d (gather param): element %zu of its index map is %g, not an index of its table of %zu "
                     "values",
                     i, j, (double)k, t);
            return -1;
        }
    }
    return 0;
}
