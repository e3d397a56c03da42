/* model/shape.c - model_shape_t's arithmetic (model.h): pure functions of a shape, and the
 * checked arithmetic of dimensions read from files (model_dim_*: the one home of the
 * overflow checks the ONNX importer makes), on their own so that code outside the model's
 * room links them without its kernels (the checkpoint reader's fuzzers, through
 * model_buffers.c). */
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

int model_shape_count_checked(const model_shape_t *s, size_t *n)
{
    int64_t c = 1;
    if (s->rank < 0 || s->rank > MODEL_MAX_RANK) return -1;
    for (int d = 0; d < s->rank; d++) {
        /* each step stays below 2^31 * 2^31: no overflow before the bound is seen */
        if (s->dims[d] < 0) return -1;
        c *= s->dims[d];
        if (c > MODEL_SAMPLE_MAX) return -1;
    }
    *n = (size_t)c;
    return 0;
}

/* The exact result of a checked operation within the bound, or -1. */
static int dim_result(int overflowed, int64_t r, int64_t *out)
{
    if (overflowed || r > MODEL_DIM_ARITH_MAX || r < -MODEL_DIM_ARITH_MAX) return -1;
    *out = r;
    return 0;
}

int model_dim_add(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    const int o = __builtin_add_overflow(a, b, &r);
    return dim_result(o, r, out);
}

int model_dim_sub(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    const int o = __builtin_sub_overflow(a, b, &r);
    return dim_result(o, r, out);
}

int model_dim_mul(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    const int o = __builtin_mul_overflow(a, b, &r);
    return dim_result(o, r, out);
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
