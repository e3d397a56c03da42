/* kernels/cpu/view.c - the strided views of Transpose, Slice and Expand copied by rows
 * (ops.h's view_rows_*): the same walk as elementwise.c's view_forward and view_backward,
 * element for element in the same order, but with the per-element carry of that walk
 * (bcast_next) replaced by a plain loop over the innermost axis, after merging the axes
 * that are contiguous with each other. A ViT's head split (a (T, heads, D) tensor read as
 * (heads, T, D)) and ConvNeXt's NCHW <-> NHWC permutes are then loops over runs of 16 to
 * 64 floats instead of one carry test per float (issue 44's speed goal). */
#include <stddef.h>

#include "ops.h"

/* A view in output order: n[0] the outermost axis, s the input's stride along each (in
 * floats, negative for a Slice walking down), after merging. */
typedef struct {
    int rank;
    long n[BCAST_MAX_AXES];
    ptrdiff_t s[BCAST_MAX_AXES];
} rows_t;

/* The descriptor at batch B with adjacent axes merged where the outer one's stride is the
 * inner one's times its size (the pair is then one axis of their product); axes of size 1
 * are dropped. At least one axis remains. */
static void rows_setup(const bcast_desc_t *d, int B, rows_t *r)
{
    r->rank = 0;
    for (int ax = 0; ax < d->rank; ax++) {
        const long n = ax ? d->dims[ax] : B;
        const ptrdiff_t s = (ptrdiff_t)d->sa[ax];
        if (n == 1) continue;
        const int k = r->rank - 1;
        if (k >= 0 && r->s[k] == s * n) {
            /* the previous (outer) axis continues this one: one axis */
            r->n[k] *= n;
            r->s[k] = s;
            continue;
        }
        r->n[r->rank] = n;
        r->s[r->rank++] = s;
    }
    if (r->rank == 0) {
        r->n[0] = 1;
        r->s[0] = 0;
        r->rank = 1;
    }
}

/* The rows in output order: a row is n[rank - 1] outputs, s[rank - 1] apart in the
 * input; rows_next moves *ia from one row's first input to the next row's (idx: the
 * outer axes' counters, zeroed by the caller) and returns 0 after the last row. */
static int rows_next(const rows_t *r, long *idx, ptrdiff_t *ia)
{
    for (int ax = r->rank - 2; ax >= 0; ax--) {
        *ia += r->s[ax];
        if (++idx[ax] < r->n[ax]) return 1;
        *ia -= r->s[ax] * (ptrdiff_t)r->n[ax];
        idx[ax] = 0;
    }
    return 0;
}

void view_rows_forward(const bcast_desc_t *d, size_t off, int B, const float *inp, float *out)
{
    rows_t r;
    if (B <= 0) return;
    rows_setup(d, B, &r);
    const long len = r.n[r.rank - 1];
    const ptrdiff_t st = r.s[r.rank - 1];
    long idx[BCAST_MAX_AXES] = {0};
    ptrdiff_t ia = (ptrdiff_t)off;
    for (float *y = out;; y += len) {
        const float *x = inp + ia;
        if (st == 1)
            for (long j = 0; j < len; j++) y[j] = x[j];
        else
            for (long j = 0; j < len; j++) y[j] = x[j * st];
        if (!rows_next(&r, idx, &ia)) return;
    }
}

/* set: dinp = dout + 0.0f instead of += (what += gives into zeros, bit for bit: +0 for -0);
 * the caller guarantees a view that reads every input once */
static void rows_backward(const bcast_desc_t *d, size_t off, int B, const float *dout, float *dinp, int set)
{
    rows_t r;
    if (!dinp || B <= 0) return;
    rows_setup(d, B, &r);
    const long len = r.n[r.rank - 1];
    const ptrdiff_t st = r.s[r.rank - 1];
    long idx[BCAST_MAX_AXES] = {0};
    ptrdiff_t ia = (ptrdiff_t)off;
    for (const float *g = dout;; g += len) {
        float *x = dinp + ia;
        if (set && st == 1)
            for (long j = 0; j < len; j++) x[j] = g[j] + 0.0f;
        else if (set)
            for (long j = 0; j < len; j++) x[j * st] = g[j] + 0.0f;
        else if (st == 1)
            for (long j = 0; j < len; j++) x[j] += g[j];
        else
            for (long j = 0; j < len; j++) x[j * st] += g[j];
        if (!rows_next(&r, idx, &ia)) return;
    }
}

void view_rows_backward(const bcast_desc_t *d, size_t off, int B, const float *dout, float *dinp)
{
    rows_backward(d, off, B, dout, dinp, 0);
}

void view_rows_backward_set(const bcast_desc_t *d, size_t off, int B, const float *dout, float *dinp)
{
    rows_backward(d, off, B, dout, dinp, 1);
}
