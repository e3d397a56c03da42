/* model/shape.c - model_shape_t's arithmetic (model.h): pure functions of a shape, on
 * their own so that code outside the model's room links them without its kernels (the
 * checkpoint reader's fuzzers, through model_buffers.c). */
#include <stdio.h>

#include "model.h"

void model_shape_fold(const model_shape_t *s, int *C, int *H, int *W)
{
    *C = s->rank > 0 ? s->dims[0] : 1;
    *H = s->rank > 1 ? s->dims[1] : 1;
    *W = 1;
    for (int d = 2; d < s->rank && d < MODEL_MAX_RANK; d++) *W *= s->dims[d];
}

int model_shape_equal(const model_shape_t *a, const model_shape_t *b)
{
    if (a->rank != b->rank) return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return 0;
    return 1;
}

size_t model_shape_count(const model_shape_t *s)
{
    size_t n = 1;
    for (int d = 0; d < s->rank; d++) n *= (size_t)s->dims[d];
    return n;
}

char *model_shape_text(const model_shape_t *s, char *buf, size_t len)
{
    size_t n = 0;
    if (!len) return buf;
    buf[0] = '\0';
    for (int d = 0; d <= s->rank && d <= MODEL_MAX_RANK && n < len; d++) {
        const int w = d == s->rank || d == MODEL_MAX_RANK
                          ? snprintf(buf + n, len - n, "%s)", d ? "" : "(")
                          : snprintf(buf + n, len - n, "%s%d", d ? ", " : "(", s->dims[d]);
        if (w < 0) break;
        n += (size_t)w;
    }
    return buf;
}
