/* model/decode.c - see decode.h. */
#include "decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_bf16_act.h"
#include "gemv.h"
#include "matmul.h"
#include "op_table.h"
#include "ops.h"
#include "plan.h"

/* How a layer runs by positions. */
typedef enum {
    STEP_ONCE,    /* reads no id: its own step (op_table.h) when a window starts */
    STEP_EMBED,   /* the ids' rows of the table */
    STEP_UNARY,   /* element-wise (op: unary_op_t) */
    STEP_COPY,    /* Dropout and stochastic depth: the identity at evaluation */
    STEP_ADD,     /* a residual add of equal shapes */
    STEP_BINARY,  /* with broadcasting (op: binary_op_t) */
    STEP_NORM,    /* layer norm over axes after the position's */
    STEP_LINEAR,  /* a product with a weight over the last axis */
    STEP_VIEW,    /* Slice, Transpose: the view's walk */
    STEP_RESHAPE, /* a copy keeping the position axis */
    STEP_SCORES,  /* queries' rows x keys' columns: columns up to p1 */
    STEP_MIX,     /* causal weights x values' rows: summed over positions up to p1 */
    STEP_CAUSAL,  /* the causal softmax of scores */
} decode_step_t;

/* pos: the output's axis of positions (-1: the layer reads no id); key: an axis that
 * indexes earlier positions (the scores' columns), or -1 */
typedef struct {
    decode_step_t step;
    int op, pos, key;
} decode_layer_t;

struct decode_plan {
    int n, cache_products;
    decode_layer_t *l;
};

static const model_shape_t *shape_of(const model_t *m, int li) { return &m->layers[li].shape; }

static int refuse(const model_t *m, int i, const char *what, char *why, size_t len)
{
    snprintf(why, len, "layer %d (%s) %s", i, MODEL_OPS[m->layers[i].kind].name, what);
    return -1;
}

/* The kind's function of one input (model_unary_of) where it takes at most one parameter,
 * unary_forward's; -1 else (Clip's and HardSigmoid's two are not run by positions) */
static int unary_of(const layer_t *l)
{
    float a, b;
    const unary_op_t op = model_unary_of(l, &a, &b);
    return op == UNARY_OP_COUNT || op == UNARY_CLIP || op == UNARY_HARDSIGMOID ? -1 : (int)op;
}

static int binary_of(layer_kind_t k)
{
    switch (k) {
    case LAYER_BADD: return BINARY_ADD;
    case LAYER_SUB: return BINARY_SUB;
    case LAYER_BMUL: return BINARY_MUL;
    case LAYER_DIV: return BINARY_DIV;
    default: return -1;
    }
}

/* A layer that reads no id, computed whole by its own step: one whose step writes its own
 * output (no fusion or view chain of the training plan stands in for it). */
static int plan_once(const model_t *m, int i, decode_layer_t *d, char *why, size_t len)
{
    const layer_plan_t *lp = model_layer_plan(m, i);
    if (lp->chain != VIEW_CHAIN_NONE || lp->attn != ATTN_NONE || lp->fused_relu || lp->fused_add || lp->act_bf16 ||
        lp->act_shared)
        return refuse(m, i, "reads no id but is computed by a fused step", why, len);
    d->step = STEP_ONCE;
    return 0;
}

/* The axis of x's axis ax (of an input of rank r) in a broadcast output of rank R. */
static int aligned(int ax, int r, int R) { return ax < 0 ? -1 : ax + R - r; }

/* Add, Sub, Mul, Div: the inputs that read ids agree on the axes */
static int plan_binary(const model_t *m, int i, const decode_layer_t *a, const decode_layer_t *b, decode_layer_t *d,
                       char *why, size_t len)
{
    const layer_t *l = &m->layers[i];
    const int R = l->shape.rank, ra = shape_of(m, l->in)->rank, rb = shape_of(m, l->in2)->rank;
    const int pa = aligned(a->pos, ra, R), ka = aligned(a->key, ra, R);
    const int pb = aligned(b->pos, rb, R), kb = aligned(b->key, rb, R);
    if (pa >= 0 && pb >= 0 && (pa != pb || ka != kb))
        return refuse(m, i, "combines two inputs along different axes of positions", why, len);
    d->pos = pa >= 0 ? pa : pb;
    d->key = pa >= 0 ? ka : kb;
    return 0;
}

/* (.., M, K) x (.., K, N) of activations: the scores (a query's rows x keys' columns), the
 * mix (weights over earlier positions x values' rows), or a product with a constant */
static int plan_bmm(const model_t *m, int i, const decode_layer_t *a, const decode_layer_t *b, decode_layer_t *d,
                    int *cache, char *why, size_t len)
{
    const int R = m->layers[i].shape.rank;
    if (a->pos != R - 2) return refuse(m, i, "has no positions along its rows", why, len);
    d->pos = R - 2;
    if (a->key < 0 && b->pos == R - 1 && b->key < 0) {
        d->step = STEP_SCORES;
        d->key = R - 1;
        ++*cache;
    } else if (a->key == R - 1 && b->pos == R - 2 && b->key < 0) {
        d->step = STEP_MIX;
        d->key = -1;
        ++*cache;
    } else if (a->key < 0 && b->pos < 0)
        d->step = STEP_SCORES; /* a constant right operand: its columns are no positions */
    else return refuse(m, i, "multiplies positions in a way generation does not cache", why, len);
    return 0;
}

/* Reshape: the axis of the output whose leading elements and size are the input's position
 * axis's (the data is contiguous: a position's block moves whole) */
static int plan_reshape(const model_t *m, int i, const decode_layer_t *a, decode_layer_t *d, char *why, size_t len)
{
    const model_shape_t *in = shape_of(m, m->layers[i].in), *out = &m->layers[i].shape;
    size_t before = 1, lead = 1;
    for (int k = 0; k < a->pos; k++) before *= (size_t)in->dims[k];
    for (int k = 0; k < out->rank; k++) {
        if (lead == before && out->dims[k] == in->dims[a->pos] && a->key < 0) {
            d->pos = k;
            return 0;
        }
        lead *= (size_t)out->dims[k];
    }
    return refuse(m, i, "reshapes the axis of positions", why, len);
}

/* The layers after the embedding of the ids: the step and the axes */
static int plan_reader(const model_t *m, int i, decode_layer_t *L, int *cache, char *why, size_t len)
{
    const layer_t *l = &m->layers[i];
    decode_layer_t *d = &L[i];
    const decode_layer_t *a = &L[l->in], *b = MODEL_OPS[l->kind].ninputs == 2 ? &L[l->in2] : NULL;
    const int R = l->shape.rank;
    d->pos = a->pos;
    d->key = a->key;
    if (unary_of(l) >= 0) {
        d->step = STEP_UNARY;
        d->op = unary_of(l);
    } else if (binary_of(l->kind) >= 0) {
        d->step = STEP_BINARY;
        d->op = binary_of(l->kind);
        return plan_binary(m, i, a, b, d, why, len);
    }
    switch (l->kind) {
    case LAYER_DROPOUT:
    case LAYER_STOCHASTIC_DEPTH: d->step = STEP_COPY; break;
    case LAYER_ADD:
        if (!model_shape_equal(shape_of(m, l->in), &l->shape) || !model_shape_equal(shape_of(m, l->in2), &l->shape) ||
            (a->pos >= 0 && b->pos >= 0 && (a->pos != b->pos || a->key != b->key)))
            return refuse(m, i, "adds inputs of other shapes or axes", why, len);
        d->step = STEP_ADD;
        d->pos = a->pos >= 0 ? a->pos : b->pos;
        d->key = a->pos >= 0 ? a->key : b->key;
        break;
    case LAYER_LAYERNORM:
        if (a->key >= 0 || a->pos >= l->op.norm.axis) return refuse(m, i, "normalises along positions", why, len);
        d->step = STEP_NORM;
        break;
    case LAYER_LINEAR:
        if (a->key >= 0 || a->pos >= R - 1) return refuse(m, i, "sums along positions", why, len);
        d->step = STEP_LINEAR;
        break;
    case LAYER_SLICE:
        if (l->op.view.axis == a->pos || l->op.view.axis == a->key) return refuse(m, i, "slices positions", why, len);
        d->step = STEP_VIEW;
        break;
    case LAYER_TRANSPOSE:
        d->step = STEP_VIEW;
        for (int k = 0; k < R; k++) {
            if (l->op.view.perm[k] == a->pos) d->pos = k;
            if (l->op.view.perm[k] == a->key) d->key = k;
        }
        break;
    case LAYER_RESHAPE: d->step = STEP_RESHAPE; return plan_reshape(m, i, a, d, why, len);
    case LAYER_BMM: return plan_bmm(m, i, a, b, d, cache, why, len);
    case LAYER_CAUSAL_SOFTMAX:
        if (a->pos != R - 2 || a->key != R - 1) return refuse(m, i, "masks no scores of positions", why, len);
        d->step = STEP_CAUSAL;
        break;
    default:
        if (unary_of(l) < 0) return refuse(m, i, "cannot run by positions", why, len);
    }
    return 0;
}

static int plan_layer(const model_t *m, int i, decode_layer_t *L, int *cache, char *why, size_t len)
{
    const layer_t *l = &m->layers[i];
    decode_layer_t *d = &L[i];
    d->pos = d->key = -1;
    if (l->kind == LAYER_CONST || l->kind == LAYER_GATHER_PARAM) return plan_once(m, i, d, why, len);
    if (l->kind == LAYER_EMBED && l->in < 0) {
        if (l->shape.rank != 2) return refuse(m, i, "embeds ids of more than one axis", why, len);
        d->step = STEP_EMBED;
        d->pos = 0;
        return 0;
    }
    const int two = MODEL_OPS[l->kind].ninputs == 2;
    if (l->in < 0 || (two && l->in2 < 0)) return refuse(m, i, "reads the ids other than by an embedding", why, len);
    if (L[l->in].pos < 0 && (!two || L[l->in2].pos < 0)) return plan_once(m, i, d, why, len);
    /* an output stored in bf16 is read by products alone (plan.h's act_bf16), by the GELU a
     * rounded Linear's feeds, or by the views a fused attention's q, k and v chains begin
     * with (whose walks widen it) */
    if ((model_layer_plan(m, l->in)->act_bf16 || (two && model_layer_plan(m, l->in2)->act_bf16)) &&
        l->kind != LAYER_LINEAR && !(l->kind == LAYER_GELU && model_layer_plan(m, l->in)->rounded) &&
        l->kind != LAYER_SLICE && l->kind != LAYER_TRANSPOSE)
        return refuse(m, i, "reads an output stored in bf16", why, len);
    if (plan_reader(m, i, L, cache, why, len) != 0) return -1;
    /* the rows and columns decode_rows computes are window positions: an axis of another
     * size (a graph that only looks like it) is refused, not indexed past */
    if ((d->pos >= 0 && l->shape.dims[d->pos] != m->C) || (d->key >= 0 && l->shape.dims[d->key] != m->C))
        return refuse(m, i, "has an axis of positions that is not the window's length", why, len);
    return 0;
}

int decode_plan(const model_t *m, decode_plan_t **out, char *why, size_t len)
{
    *out = NULL;
    decode_plan_t *p = calloc(1, sizeof *p);
    if (p) p->l = calloc((size_t)m->nlayers, sizeof *p->l);
    if (!p || !p->l) {
        decode_plan_free(p);
        snprintf(why, len, "out of memory");
        return -1;
    }
    p->n = m->nlayers;
    for (int i = 0; i < m->nlayers; i++)
        if (plan_layer(m, i, p->l, &p->cache_products, why, len) != 0) {
            decode_plan_free(p);
            return -1;
        }
    const decode_layer_t *last = &p->l[m->nlayers - 1];
    if (last->pos != 0 || last->key >= 0 || m->layers[m->nlayers - 1].shape.rank != 2) {
        decode_plan_free(p);
        return refuse(m, m->nlayers - 1, "gives no logits per position", why, len);
    }
    *out = p;
    return 0;
}

void decode_plan_free(decode_plan_t *p)
{
    if (!p) return;
    free(p->l);
    free(p);
}

int decode_cache_products(const decode_plan_t *p) { return p->cache_products; }

/* ---- running ---------------------------------------------------------------------------- */

static float *out_of(const model_t *m, int li) { return m->acts + m->layers[li].out_off; }
static uint16_t *out16_of(const model_t *m, int li) { return (uint16_t *)(void *)out_of(m, li); }

/* Shape s around axis a: outer (the axes before), n (a's size), inner (the axes after). */
static void around(const model_shape_t *s, int a, size_t *outer, size_t *n, size_t *inner)
{
    *outer = *inner = 1;
    for (int k = 0; k < s->rank; k++) {
        if (k < a) *outer *= (size_t)s->dims[k];
        if (k > a) *inner *= (size_t)s->dims[k];
    }
    *n = (size_t)s->dims[a];
}

/* The rows r0..r1 of the output's axis a, as runs: outer o's run starts at first(o) and
 * holds len floats. */
typedef struct {
    size_t outer, n, inner, len;
    int r0, r1;
} runs_t;

static runs_t runs_of(const model_shape_t *s, int a, int r0, int r1)
{
    runs_t r = {.r0 = r0, .r1 = r1};
    around(s, a, &r.outer, &r.n, &r.inner);
    r.len = (size_t)(r1 - r0) * r.inner;
    return r;
}

static size_t run_first(const runs_t *r, size_t o) { return (o * r->n + (size_t)r->r0) * r->inner; }

/* d (a walk of rank R + 1 over the output, batch first) cut to outer o's run: the batch
 * axis becomes axis a's rows r0..r1, the axes after it stay; *ia and *ib the inputs'
 * offsets of the run's first element (the strides sa and sb) */
static bcast_desc_t sub_walk(const bcast_desc_t *d, const model_shape_t *s, int a, size_t o, int r0, size_t *ia,
                             size_t *ib)
{
    bcast_desc_t w = {.rank = s->rank - a};
    size_t rem = o;
    *ia = *ib = 0;
    for (int k = a - 1; k >= 0; k--) {
        const size_t idx = rem % (size_t)s->dims[k];
        rem /= (size_t)s->dims[k];
        *ia += idx * d->sa[k + 1];
        *ib += idx * d->sb[k + 1];
    }
    *ia += (size_t)r0 * d->sa[a + 1];
    *ib += (size_t)r0 * d->sb[a + 1];
    for (int k = 0; k < w.rank; k++) {
        w.dims[k] = k ? d->dims[a + 1 + k] : 0;
        w.sa[k] = d->sa[a + 1 + k];
        w.sb[k] = d->sb[a + 1 + k];
    }
    return w;
}

static void run_elementwise(model_t *m, int i, const decode_layer_t *d, const runs_t *r)
{
    const layer_t *l = &m->layers[i];
    const float *a = out_of(m, l->in), *b = d->step == STEP_ADD ? out_of(m, l->in2) : NULL;
    float *y = out_of(m, i);
    for (size_t o = 0; o < r->outer; o++) {
        const size_t f = run_first(r, o);
        if (d->step == STEP_UNARY && model_layer_plan(m, i)->act_bf16) { /* a GELU read by products alone */
            const int in16 = model_layer_plan(m, l->in)->act_bf16;       /* a rounded Linear's output */
            unary_forward_bf16((unary_op_t)d->op, l->op.unary.alpha, r->len, in16 ? NULL : a + f,
                               in16 ? out16_of(m, l->in) + f : NULL, out16_of(m, i) + f);
        } else if (d->step == STEP_UNARY) unary_forward((unary_op_t)d->op, l->op.unary.alpha, r->len, a + f, y + f);
        else if (d->step == STEP_COPY) memcpy(y + f, a + f, r->len * sizeof *y);
        else
            for (size_t k = 0; k < r->len; k++) y[f + k] = a[f + k] + b[f + k];
    }
}

/* Add to Div with broadcasting, and the views (Slice, Transpose): their walks cut to runs */
static void run_walk(model_t *m, int i, const decode_layer_t *d, const runs_t *r)
{
    const layer_t *l = &m->layers[i];
    for (size_t o = 0; o < r->outer; o++) {
        size_t ia, ib;
        const bcast_desc_t w = sub_walk(&l->op.view.bc, &l->shape, d->pos, o, r->r0, &ia, &ib);
        float *y = out_of(m, i) + run_first(r, o);
        if (d->step == STEP_VIEW && model_layer_plan(m, l->in)->act_bf16) /* q, k or v stored in bf16 */
            view_rows_forward16(&w, l->op.view.off + ia, r->r1 - r->r0, out16_of(m, l->in), y);
        else if (d->step == STEP_VIEW) view_rows_forward(&w, l->op.view.off + ia, r->r1 - r->r0, out_of(m, l->in), y);
        else
            binary_rows_forward((binary_op_t)d->op, &w, r->r1 - r->r0, out_of(m, l->in) + ia, out_of(m, l->in2) + ib, y);
    }
}

static void run_norm(model_t *m, int i, const runs_t *r)
{
    const layer_t *l = &m->layers[i];
    size_t outer, n, D;
    around(&l->shape, l->op.norm.axis, &outer, &n, &D);
    D *= n;                                                   /* the normalised axes' elements */
    const int rows = (int)(r->len / D);                       /* of one run */
    double *stats = (double *)(void *)(m->acts + l->aux_off); /* 2 a row, as the training step's */
    for (size_t o = 0; o < r->outer; o++) {
        const size_t f = run_first(r, o);
        const float *x = out_of(m, l->in) + f, *w = m->params + l->w_off, *b = m->params + l->b_off;
        if (model_layer_plan(m, i)->act_bf16)
            layernorm_forward_saving_bf16(rows, (int)D, l->op.norm.eps, x, w, b, out16_of(m, i) + f,
                                          stats + 2 * (f / D));
        else layernorm_forward(rows, (int)D, l->op.norm.eps, x, w, b, out_of(m, i) + f);
    }
}

static void run_linear(model_t *m, int i, const runs_t *r)
{
    const layer_t *l = &m->layers[i];
    const int IN = l->op.gemm.IN, OUT = l->op.gemm.OUT, rows = (int)(r->len / (size_t)OUT);
    const float *w = m->params + l->w_off, *bias = l->has_bias ? m->params + l->b_off : NULL;
    const int a16 = model_layer_plan(m, l->in)->act_bf16, rounded = model_layer_plan(m, i)->rounded;
    for (size_t o = 0; o < r->outer; o++) {
        const size_t f = run_first(r, o), fin = f / (size_t)OUT * (size_t)IN;
        float *y = out_of(m, i) + f;
        /* read by its GELU rounded, stored so or not (the plan's rounded); or stored in bf16
         * for a fused attention's products */
        if (rounded || model_layer_plan(m, i)->act_bf16)
            gemm_forward_rounded(&l->op.gemm, rows, a16 ? NULL : out_of(m, l->in) + fin,
                                 a16 ? out16_of(m, l->in) + fin : NULL, w, bias, y,
                                 model_layer_plan(m, i)->act_bf16 ? out16_of(m, i) + f : NULL);
        else if (a16) gemm_forward_a16(&l->op.gemm, rows, out16_of(m, l->in) + fin, w, bias, y);
        else if (rows == 1 && mm_precision() == MM_FP32 && l->op.gemm.layout == GEMM_W_OUT_IN &&
                 l->op.gemm.alpha == 1.0f && l->op.gemm.beta == 1.0f)
            gemv_forward(IN, OUT, out_of(m, l->in) + fin, w, bias, y); /* a new token: the weights read faster */
        else gemm_forward(&l->op.gemm, rows, out_of(m, l->in) + fin, w, bias, y);
    }
}

/* The products of G pairs (M, K) x (K, N): rows r0..r1 of each output; the scores'
 * columns (or a mix's sum) up to r1 only, where they are positions */
static void run_bmm(model_t *m, int i, const decode_layer_t *d, int r0, int r1)
{
    const layer_t *l = &m->layers[i];
    const model_shape_t *s = &l->shape;
    const int R = s->rank, M = s->dims[R - 2], N = s->dims[R - 1], K = l->op.bmm.K;
    size_t G = 1;
    for (int k = 0; k < R - 2; k++) G *= (size_t)s->dims[k];
    const int cols = d->step == STEP_SCORES && d->key >= 0 ? r1 : N, sum = d->step == STEP_MIX ? r1 : K;
    const float *a = out_of(m, l->in), *b = out_of(m, l->in2);
    float *y = out_of(m, i);
    for (size_t g = 0; g < G; g++)
        mm_sgemm(MM_N, MM_N, r1 - r0, cols, sum, 1.0f, a + (g * (size_t)M + (size_t)r0) * (size_t)K, K,
                 b + g * (size_t)K * (size_t)N, N, 0.0f, y + (g * (size_t)M + (size_t)r0) * (size_t)N, N);
}

static void run_causal(model_t *m, int i, int r0, int r1)
{
    const layer_t *l = &m->layers[i];
    const int T = l->shape.dims[l->shape.rank - 1];
    const size_t mats = model_shape_count(&l->shape) / ((size_t)T * (size_t)T);
    for (size_t g = 0; g < mats; g++) {
        const size_t at = g * (size_t)T * (size_t)T;
        causal_softmax_rows(T, r0, r1, l->op.softmax.scale, out_of(m, l->in) + at, out_of(m, i) + at);
    }
}

static void run_layer(model_t *m, const decode_layer_t *d, int i, const float *x, int r0, int r1)
{
    const layer_t *l = &m->layers[i];
    const runs_t r = d->pos >= 0 ? runs_of(&l->shape, d->pos, r0, r1) : (runs_t){0};
    switch (d->step) {
    case STEP_ONCE: break;
    case STEP_EMBED:
        embed_forward((size_t)(r1 - r0), l->op.table.shape.dims[0], l->op.table.shape.dims[1], x + r0,
                      m->params + l->w_off, out_of(m, i) + (size_t)r0 * (size_t)l->op.table.shape.dims[1]);
        break;
    case STEP_UNARY:
    case STEP_COPY:
    case STEP_ADD: run_elementwise(m, i, d, &r); break;
    case STEP_BINARY:
    case STEP_VIEW: run_walk(m, i, d, &r); break;
    case STEP_NORM: run_norm(m, i, &r); break;
    case STEP_LINEAR: run_linear(m, i, &r); break;
    case STEP_RESHAPE:
        for (size_t o = 0; o < r.outer; o++) {
            const size_t f = run_first(&r, o);
            if (model_layer_plan(m, i)->act_bf16) /* a fused attention's merge, read by products alone */
                bf16_act_store(r.len, out_of(m, l->in) + f, out16_of(m, i) + f);
            else memcpy(out_of(m, i) + f, out_of(m, l->in) + f, r.len * sizeof(float));
        }
        break;
    case STEP_SCORES:
    case STEP_MIX: run_bmm(m, i, d, r0, r1); break;
    case STEP_CAUSAL: run_causal(m, i, r0, r1); break;
    }
}

void decode_rows(model_t *m, const decode_plan_t *p, const float *x, int p0, int p1)
{
    if (p0 == 0) {
        for (int i = 0; i < p->n; i++)
            if (p->l[i].step == STEP_ONCE) MODEL_OPS[m->layers[i].kind].forward(m, i, x, 1, 0);
    }
    for (int i = 0; i < p->n - 1; i++) run_layer(m, &p->l[i], i, x, p0, p1);
    run_layer(m, &p->l[p->n - 1], p->n - 1, x, p1 - 1, p1); /* the logits of the last position alone */
}
