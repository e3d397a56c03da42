/* kernels/cuda/bcast.cu - the broadcasting binary operators (Add, Sub, Mul, Div with NumPy
 * broadcasting), the strided views (Transpose, Slice) and the reductions (ReduceSum,
 * ReduceMean) of ops.h, as index-mapping kernels over a bcast_desc_t.
 *
 * Letters: B batch, R the descriptor's rank (axis 0 the batch), o a flat index into the
 * output (B, dims[1], ..., dims[R - 1]).
 *
 * Every value is scalar_fn.h's, with the CPU's roundings, and every sum is in the CPU's
 * order: the backward gives one thread to each element of an input's gradient, which walks
 * the outputs that read that element (the axes the input broadcasts along, the batch too
 * for a batch-less constant) in increasing o, as binary_backward's loop meets them, adding
 * each term into its float accumulator. So the results are the CPU's, bit for bit, and no
 * atomics are needed. A reduction likewise: one thread per output sums its inputs in the
 * order of the CPU's walk; its backward one thread per input element.
 */
#include <string.h>

#include "cuda_common.h"

/* A descriptor as the kernels read it: the batch in dims[0], the output's contiguous
 * strides, and the strides of the input(s) read. */
typedef struct {
    int rank;
    size_t dims[BCAST_MAX_AXES];
    size_t ost[BCAST_MAX_AXES]; /* the output's contiguous strides */
    size_t sa[BCAST_MAX_AXES], sb[BCAST_MAX_AXES];
} bcast_dev_t;

/* the device descriptor of d at batch B; returns the output's element count */
static size_t bcast_dev(const bcast_desc_t *d, int B, bcast_dev_t *g)
{
    size_t run = 1;
    memset(g, 0, sizeof *g);
    g->rank = d->rank;
    for (int ax = d->rank - 1; ax >= 0; ax--) {
        g->dims[ax] = ax ? (size_t)d->dims[ax] : (size_t)B;
        g->ost[ax] = run;
        g->sa[ax] = d->sa[ax];
        g->sb[ax] = d->sb[ax];
        run *= g->dims[ax];
    }
    return run;
}

/* Where the walk's element o reads an input of strides s: its coordinates times s. */
static OPS_HD size_t walk_at(const bcast_dev_t *g, size_t o, const size_t *s)
{
    size_t i = 0;
    for (int ax = 0; ax < g->rank; ax++) i += o / g->ost[ax] % g->dims[ax] * s[ax];
    return i;
}

/* out[o] = op(a at sa, b at sb); one thread per output element */
__global__ void binary_fwd_kernel(binary_op_t op, bcast_dev_t g, const float *a, const float *b, float *out, size_t n)
{
    GRID_STRIDE(o, n) out[o] = binary_fn(op, a[walk_at(&g, o, g.sa)], b[walk_at(&g, o, g.sb)]);
}

/* The gradient of one input (of_b 0: a, read at sa; 1: b, at sb), one thread per element
 * e of it: its coordinates on the axes it has, then every combination of the axes it
 * broadcasts along, the last fastest (increasing o), the other input read at its strides. */
__global__ void binary_bwd_kernel(binary_op_t op, bcast_dev_t g, int of_b, const float *a, const float *b,
                                  const float *dout, float *dx, size_t n_in)
{
    GRID_STRIDE(e, n_in)
    {
        const size_t *s = of_b ? g.sb : g.sa, *so = of_b ? g.sa : g.sb;
        const float *other = of_b ? a : b;
        size_t o0 = 0, io0 = 0;
        int bax[BCAST_MAX_AXES], nb = 0;
        for (int ax = 0; ax < g.rank; ax++) {
            if (s[ax]) {
                const size_t c = e / s[ax] % g.dims[ax];
                o0 += c * g.ost[ax];
                io0 += c * so[ax];
            } else if (g.dims[ax] > 1) {
                bax[nb++] = ax;
            }
        }
        size_t cnt[BCAST_MAX_AXES] = {0};
        const float ye = of_b ? b[e] : a[e]; /* the input's own value, which its term reads */
        float acc = dx[e];
        for (;;) {
            size_t o = o0, io = io0;
            for (int k = 0; k < nb; k++) {
                o += cnt[k] * g.ost[bax[k]];
                io += cnt[k] * so[bax[k]];
            }
            const float gv = dout[o], ov = other[io];
            acc = __fadd_rn(acc, of_b ? binary_grad_y(op, gv, ov, ye) : binary_grad_xy(op, gv, ye, ov));
            int k = nb - 1;
            for (; k >= 0; k--) {
                if (++cnt[k] < g.dims[bax[k]]) break;
                cnt[k] = 0;
            }
            if (k < 0) break;
        }
        dx[e] = acc;
    }
}

/* A view: out[o] = inp[off + the walk of sa]; or (fwd 0) dinp at that place += dout[o].
 * The view is injective (Transpose, Slice): no two threads touch one dinp element. */
__global__ void view_kernel(bcast_dev_t g, size_t off, const float *src, float *dst, size_t n, int fwd)
{
    GRID_STRIDE(o, n)
    {
        const size_t ia = off + walk_at(&g, o, g.sa);
        if (fwd) dst[o] = src[ia];
        else dst[ia] = __fadd_rn(dst[ia], src[o]);
    }
}

/* One output of a reduction (reduce_forward: the walk g over the input, sa its strides,
 * sb the output's, 0 along a reduced axis): the output o's coordinates on the kept axes,
 * then every combination of the reduced ones, the last fastest, which is the CPU's order
 * of the input walk; the float sum times scale, as there. */
static OPS_HD float reduce_out(const bcast_dev_t *g, size_t o, float scale, const float *inp)
{
    size_t i0 = 0, cnt[BCAST_MAX_AXES] = {0};
    int rax[BCAST_MAX_AXES], nr = 0;
    for (int ax = 0; ax < g->rank; ax++) {
        if (g->sb[ax]) i0 += o / g->sb[ax] % g->dims[ax] * g->sa[ax];
        else if (g->dims[ax] > 1) rax[nr++] = ax;
    }
    float acc = 0.0f;
    for (;;) {
        size_t i = i0;
        for (int k = 0; k < nr; k++) i += cnt[k] * g->sa[rax[k]];
        acc = UFN_ADD(acc, inp[i]);
        int k = nr - 1;
        for (; k >= 0; k--) {
            if (++cnt[k] < g->dims[rax[k]]) break;
            cnt[k] = 0;
        }
        if (k < 0) break;
    }
    return UFN_MUL(acc, scale);
}

/* one thread per output element (no atomics: each sums its own inputs) */
__global__ void reduce_fwd_kernel(bcast_dev_t g, float scale, const float *inp, float *out, size_t nout)
{
    GRID_STRIDE(o, nout) out[o] = reduce_out(&g, o, scale, inp);
}

/* one thread per input element i (the walk's o: the input is contiguous): i's gradient
 * gets scale * dout of the output it was summed into */
__global__ void reduce_bwd_kernel(bcast_dev_t g, float scale, const float *dout, float *dinp, size_t n)
{
    GRID_STRIDE(i, n) dinp[i] = UFN_ADD(dinp[i], UFN_MUL(scale, dout[walk_at(&g, i, g.sb)]));
}

extern "C" int cuda_reduce_forward(cuda_ctx_t *ctx, const bcast_desc_t *d, int B, float scale, const float *inp,
                                   float *out, size_t nout)
{
    bcast_dev_t g;
    if (B <= 0 || !nout || !bcast_dev(d, B, &g)) return 0;
    reduce_fwd_kernel<<<pacer_grid(nout, 128), 128, 0, ctx->stream>>>(g, scale, inp, out, nout);
    KERNEL_CHECK(ctx, "reduce_fwd_kernel");
    return 0;
}

extern "C" int cuda_reduce_backward(cuda_ctx_t *ctx, const bcast_desc_t *d, int B, float scale, const float *dout,
                                    float *dinp)
{
    bcast_dev_t g;
    const size_t n = B > 0 && dinp ? bcast_dev(d, B, &g) : 0;
    if (!n) return 0;
    reduce_bwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(g, scale, dout, dinp, n);
    KERNEL_CHECK(ctx, "reduce_bwd_kernel");
    return 0;
}

extern "C" int cuda_binary_forward(cuda_ctx_t *ctx, binary_op_t op, const bcast_desc_t *d, int B, const float *a,
                                   const float *b, float *out)
{
    bcast_dev_t g;
    const size_t n = B > 0 ? bcast_dev(d, B, &g) : 0;
    if (!n) return 0;
    binary_fwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(op, g, a, b, out, n);
    KERNEL_CHECK(ctx, "binary_fwd_kernel");
    return 0;
}

/* the element count of the input read at strides s: the product of the axes it has */
static size_t input_count(const bcast_dev_t *g, const size_t *s)
{
    size_t n = 1;
    for (int ax = 0; ax < g->rank; ax++)
        if (s[ax]) n *= g->dims[ax];
    return n;
}

/* da's launch first, then db's, on the one stream: where da and db are one buffer (the
 * same tensor on both sides, so no broadcast) each element gets its two terms in the CPU's
 * order. */
extern "C" int cuda_binary_backward(cuda_ctx_t *ctx, binary_op_t op, const bcast_desc_t *d, int B, const float *a,
                                    const float *b, const float *dout, float *da, float *db)
{
    bcast_dev_t g;
    if (B <= 0 || !bcast_dev(d, B, &g)) return 0;
    for (int of_b = 0; of_b < 2; of_b++) {
        float *dx = of_b ? db : da;
        if (!dx) continue;
        const size_t n_in = input_count(&g, of_b ? g.sb : g.sa);
        binary_bwd_kernel<<<pacer_grid(n_in, 128), 128, 0, ctx->stream>>>(op, g, of_b, a, b, dout, dx, n_in);
        KERNEL_CHECK(ctx, "binary_bwd_kernel");
    }
    return 0;
}

static int view_run(cuda_ctx_t *ctx, const bcast_desc_t *d, size_t off, int B, const float *src, float *dst, int fwd)
{
    bcast_dev_t g;
    const size_t n = B > 0 && dst ? bcast_dev(d, B, &g) : 0;
    if (!n) return 0;
    view_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(g, off, src, dst, n, fwd);
    KERNEL_CHECK(ctx, "view_kernel");
    return 0;
}

extern "C" int cuda_view_forward(cuda_ctx_t *ctx, const bcast_desc_t *d, size_t off, int B, const float *inp, float *out)
{
    return view_run(ctx, d, off, B, inp, out, 1);
}

extern "C" int cuda_view_backward(cuda_ctx_t *ctx, const bcast_desc_t *d, size_t off, int B, const float *dout,
                                  float *dinp)
{
    return view_run(ctx, d, off, B, dout, dinp, 0);
}
