/* kernels/cpu/attention.c - causal self-attention of one layer in one pass per head (ops.h's
 * attention_causal_forward): what model.c's fused attention runs in place of the layers a
 * GPT's attention is built of (the q, k and v head splits, Q K^T, the causal softmax, A V,
 * the heads merged), with the bits of those layers.
 *
 * The layers copy q, k and v out of the projection into head-major tensors, write the scores
 * and the merged heads through memory, and their backward copies every gradient back: at
 * nanoGPT's CPU shape 2.4 MB a layer written and read again, most of it cold by then. Here
 * each head's products read q, k and v where the projection wrote them (bmm_small.h's
 * strided kernel), the scores go into the softmax's own output and are normalised there in
 * place, and the merged output and the q, k, v gradients are written where their readers
 * look. Each product is the one the layers compute, sum for sum (bmm_strided's sums do not
 * depend on the strides; the key gradient's products are the transposed layer's with their
 * factors swapped, which a fused multiply-add rounds alike, after the same zeros), and the
 * softmax is causal_softmax_forward's and _backward's own, so the results are the layers'
 * bit for bit (test_gpt's test_gpt_attention_fused). The (sample, head) pairs are split over
 * the kernels' threads (parallel.h), the same bits on any number.
 *
 * At bf16 products (matmul.h) each pair's products go through mm_sgemm, the bf16 GEMM of
 * the matrix units where the CPU has them (gemm_bf16.h), which rounds the operands to bf16
 * as it packs them: q, k and v, the weights P, the output's gradient and the scores'; the
 * sums stay float32. The backward reads P rounded to bf16 (bf16.h's bf16_round), whether
 * kept so (attn_bf16_t's p: the lower triangles' rows, half the floats of a triangle) or
 * float32: the same bits either way. Its product dV = P^T dY rounds P anyway; the
 * softmax's backward dS = P (dP - sum_c P dP) then has P off by a relative 2^-8 at most,
 * so dS_ic by 2^-8 P_ic (|dP_ic - r_i| + sum_c P_ic |dP_ic|) beyond float32's: row by row
 * (sum_c P_ic = 1) the size of the rounding dS gets as the operand of dQ's and dK's
 * products. */
#include "bf16.h"
#include "bmm_small.h"
#include "gemm_bf16_act.h"
#include "matmul.h"
#include "ops.h"
#include "parallel.h"

int attention_fits(int T, int D) { return T >= 1 && D >= 1 && bmm_small_ok(T, D, T) && bmm_small_ok(T, T, D); }

/* element (b, h, 0, 0) of an operand */
static size_t at(const attn_operand_t *o, int b, int h) { return o->off + (size_t)b * o->ss + (size_t)h * o->hs; }

/* One call's operands, split over the kernels' threads by (sample, head) pairs: each pair
 * reads and writes its own parts only (its weights, its columns of y and of the q, k and
 * v gradients), so any split gives the same bits. */
typedef struct {
    const attn_desc_t *a;
    int B;
    const float *q, *k, *v, *p, *dy;
    float *pw, *y, *dq, *dk, *dv;
    uint16_t *y16;                   /* y stored in bf16 instead (attention_causal_forward_bf16) */
    const uint16_t *q16, *k16, *v16; /* q, k, v stored in bf16 instead, where not NULL */
    uint16_t *p16;                   /* the weights kept in bf16 triangles instead of pw / p */
} attn_job_t;

/* A pair's triangle of weights in p16: T (T + 1) / 2 values, row i's i + 1 after row i - 1's */
static size_t tri_at(const attn_desc_t *a, long bh) { return (size_t)bh * a->T * (a->T + 1) / 2; }

/* P's (S x S, zeros above the diagonal) lower triangle rounded into tri */
static void tri_store(int S, const float *P, uint16_t *tri)
{
    for (int i = 0; i < S; i++, tri += i)
        for (int c = 0; c <= i; c++) tri[c] = bf16_from_float(P[(size_t)i * S + c]);
}

/* The weights the backward reads (S x S into pf): tri widened, or P rounded; zeros above */
static void weights_rounded(int S, const uint16_t *tri, const float *P, float *pf)
{
    for (int i = 0; i < S; i++) {
        float *row = pf + (size_t)i * S;
        if (tri) {
            for (int c = 0; c <= i; c++) row[c] = bf16_to_float(tri[c]);
            tri += i + 1;
        } else
            for (int c = 0; c <= i; c++) row[c] = bf16_round(P[(size_t)i * S + c]);
        for (int c = i + 1; c < S; c++) row[c] = 0.0f;
    }
}

/* A pair's operand at bf16 products: where it lies, float32 (f) or stored in bf16 (h) */
typedef struct {
    const float *f;
    const uint16_t *h;
    int ld;
} attn_in_t;

static attn_in_t pair_input(const float *x, const uint16_t *x16, const attn_operand_t *o, int b, int h)
{
    if (x16) return (attn_in_t){.h = x16 + at(o, b, h), .ld = (int)o->rs};
    return (attn_in_t){.f = x + at(o, b, h), .ld = (int)o->rs};
}

/* A pair's scores into the softmax's output (normalised there), then its output. */
static void forward_pair(const attn_job_t *j, int b, int h, float *ph)
{
    const attn_desc_t *a = j->a;
    const int S = a->T, D = a->D;
    const float *qh = j->q + at(&a->q, b, h), *kh = j->k + at(&a->k, b, h), *vh = j->v + at(&a->v, b, h);
    bmm_strided(S, S, D, qh, a->q.rs, 1, kh, 1, a->k.rs, ph, (size_t)S, 1, BMM_TRI_OUT_LOWER);
    if (a->pre_scale != 1.0f) /* the Mul's product, of what the softmax reads */
        for (int i = 0; i < S; i++)
            for (int c = 0; c <= i; c++) ph[(size_t)i * S + c] *= a->pre_scale;
    causal_softmax_forward(1, S, a->scale, ph, ph);
    bmm_strided(S, D, S, ph, (size_t)S, 1, vh, a->v.rs, 1, j->y + at(&a->y, b, h), a->y.rs, 1, BMM_TRI_K_LE_ROW);
}

/* The same at bf16 products: both through mm_sgemm (the matrix units where the CPU has
 * them; operands rounded as they are packed), whole S x S products (the scores above the
 * diagonal are computed and left to the softmax, which writes zeros there; the weights'
 * zeros make the second product's upper terms vanish): at the matrix units' rate the
 * triangle's saving is worth less than the fp32 kernel's strided packing it would need. */
static void forward_pair_bf16(const attn_job_t *j, int b, int h, float *ph, float *yb)
{
    const attn_desc_t *a = j->a;
    const int S = a->T, D = a->D;
    const attn_in_t q = pair_input(j->q, j->q16, &a->q, b, h), k = pair_input(j->k, j->k16, &a->k, b, h);
    const attn_in_t v = pair_input(j->v, j->v16, &a->v, b, h);
    mm_sgemm_mixed(MM_N, MM_T, S, S, D, a->pre_scale, q.f, q.h, q.ld, k.f, k.h, k.ld, 0.0f, ph, S);
    causal_softmax_forward(1, S, a->scale, ph, ph);
    if (!j->y16) {
        mm_sgemm_mixed(MM_N, MM_N, S, D, S, 1.0f, ph, NULL, S, v.f, v.h, v.ld, 0.0f, j->y + at(&a->y, b, h),
                       (int)a->y.rs);
        return;
    }
    /* the same product into yb, then its rows rounded where the merge would put them */
    mm_sgemm_mixed(MM_N, MM_N, S, D, S, 1.0f, ph, NULL, S, v.f, v.h, v.ld, 0.0f, yb, D);
    for (int t = 0; t < S; t++) bf16_act_store((size_t)D, yb + (size_t)t * D, j->y16 + at(&a->y, b, h) + t * a->y.rs);
}

static void forward_part(void *arg, int t, int T)
{
    const attn_job_t *j = arg;
    const attn_desc_t *a = j->a;
    long lo, hi;
    par_range((long)j->B * a->H, t, T, &lo, &hi);
    const int bf16 = mm_precision() == MM_BF16;
    float yb[BMM_PACK_MAX], pb[BMM_PACK_MAX]; /* T x D and T x T within attention_fits' bound */
    for (long bh = lo; bh < hi; bh++) {
        const int b = (int)(bh / a->H), h = (int)(bh % a->H);
        float *ph = j->p16 ? pb : j->pw + (size_t)bh * a->T * a->T;
        if (bf16) forward_pair_bf16(j, b, h, ph, yb);
        else forward_pair(j, b, h, ph);
        if (j->p16) tri_store(a->T, ph, j->p16 + tri_at(a, bh));
    }
}

void attention_causal_forward(const attn_desc_t *a, int B, const float *q, const float *k, const float *v, float *p,
                              float *y)
{
    attn_job_t j = {.a = a, .B = B, .q = q, .k = k, .v = v, .pw = p, .y = y};
    par_run(forward_part, &j);
}

void attention_causal_forward_bf16(const attn_desc_t *a, int B, const float *q, const float *k, const float *v,
                                   const attn_bf16_t *s16, float *p, float *y)
{
    attn_job_t j = {.a = a,
                    .B = B,
                    .q = q,
                    .k = k,
                    .v = v,
                    .pw = p,
                    .y = y,
                    .q16 = s16->q,
                    .k16 = s16->k,
                    .v16 = s16->v,
                    .y16 = s16->y,
                    .p16 = s16->p};
    par_run(forward_part, &j);
}

/* A pair's gradients: the weights' into ds, then the scores' in its place (T x T within
 * bmm_small_ok's bound: M times N rounded up to 8 at most BMM_PACK_MAX floats). */
static void backward_pair(const attn_job_t *j, int b, int h, const float *ph, float *ds)
{
    const attn_desc_t *a = j->a;
    const int S = a->T, D = a->D;
    const size_t qo = at(&a->q, b, h), ko = at(&a->k, b, h), vo = at(&a->v, b, h);
    const float *dyh = j->dy + at(&a->y, b, h);
    bmm_strided(S, S, D, dyh, a->y.rs, 1, j->v + vo, 1, a->v.rs, ds, (size_t)S, 1, BMM_TRI_OUT_LOWER);
    bmm_strided(S, D, S, ph, 1, (size_t)S, dyh, a->y.rs, 1, j->dv + vo, a->v.rs, 1, BMM_TRI_K_GE_ROW);
    causal_softmax_backward(1, S, a->scale, ph, ds, ds, 1);
    if (a->pre_scale != 1.0f) /* the Mul's backward: g c, + 0 where it sets (as into zeros) */
        for (size_t e = 0; e < (size_t)S * S; e++) ds[e] = ds[e] * a->pre_scale + 0.0f;
    bmm_strided(S, D, S, ds, (size_t)S, 1, j->k + ko, a->k.rs, 1, j->dq + qo, a->q.rs, 1, BMM_TRI_K_LE_ROW);
    bmm_strided(S, D, S, ds, 1, (size_t)S, j->q + qo, a->q.rs, 1, j->dk + ko, a->k.rs, 1, BMM_TRI_K_GE_ROW);
}

/* The same at bf16 products, through mm_sgemm as the forward's, from the weights rounded
 * (ph: weights_rounded's). The weights' gradient above the diagonal is computed and
 * multiplied by the weights' zeros there; the scores' gradient the softmax writes there is
 * zero, so the products' upper terms vanish. */
static void backward_pair_bf16(const attn_job_t *j, int b, int h, const float *ph, float *ds)
{
    const attn_desc_t *a = j->a;
    const int S = a->T, D = a->D;
    const size_t qo = at(&a->q, b, h), ko = at(&a->k, b, h), vo = at(&a->v, b, h);
    const float *dyh = j->dy + at(&a->y, b, h);
    const attn_in_t q = pair_input(j->q, j->q16, &a->q, b, h), k = pair_input(j->k, j->k16, &a->k, b, h);
    const attn_in_t v = pair_input(j->v, j->v16, &a->v, b, h);
    const int qs = (int)a->q.rs, ks = (int)a->k.rs, vs = (int)a->v.rs, ys = (int)a->y.rs;
    mm_sgemm_mixed(MM_N, MM_T, S, S, D, 1.0f, dyh, NULL, ys, v.f, v.h, v.ld, 0.0f, ds, S);
    mm_sgemm(MM_T, MM_N, S, D, S, 1.0f, ph, S, dyh, ys, 0.0f, j->dv + vo, vs);
    causal_softmax_backward(1, S, a->scale, ph, ds, ds, 1);
    if (a->pre_scale != 1.0f) /* the Mul's backward: the products' operand is dS' c */
        for (size_t e = 0; e < (size_t)S * S; e++) ds[e] *= a->pre_scale;
    mm_sgemm_mixed(MM_N, MM_N, S, D, S, 1.0f, ds, NULL, S, k.f, k.h, k.ld, 0.0f, j->dq + qo, qs);
    mm_sgemm_mixed(MM_T, MM_N, S, D, S, 1.0f, ds, NULL, S, q.f, q.h, q.ld, 0.0f, j->dk + ko, ks);
}

static void backward_part(void *arg, int t, int T)
{
    const attn_job_t *j = arg;
    const attn_desc_t *a = j->a;
    float ds[BMM_PACK_MAX], pf[BMM_PACK_MAX];
    const int bf16 = mm_precision() == MM_BF16;
    long lo, hi;
    par_range((long)j->B * a->H, t, T, &lo, &hi);
    for (long bh = lo; bh < hi; bh++) {
        const int b = (int)(bh / a->H), h = (int)(bh % a->H);
        const float *ph = j->p16 ? NULL : j->p + (size_t)bh * a->T * a->T;
        if (!bf16) {
            backward_pair(j, b, h, ph, ds);
            continue;
        }
        weights_rounded(a->T, j->p16 ? j->p16 + tri_at(a, bh) : NULL, ph, pf);
        backward_pair_bf16(j, b, h, pf, ds);
    }
}

void attention_causal_backward(const attn_desc_t *a, int B, const float *q, const float *k, const float *v,
                               const float *p, const float *dy, float *dq, float *dk, float *dv)
{
    attn_job_t j = {.a = a, .B = B, .q = q, .k = k, .v = v, .p = p, .dy = dy, .dq = dq, .dk = dk, .dv = dv};
    par_run(backward_part, &j);
}

void attention_causal_backward_bf16(const attn_desc_t *a, int B, const float *q, const float *k, const float *v,
                                    const attn_bf16_t *s16, const float *p, const float *dy, float *dq, float *dk,
                                    float *dv)
{
    attn_job_t j = {.a = a,
                    .B = B,
                    .q = q,
                    .k = k,
                    .v = v,
                    .p = p,
                    .dy = dy,
                    .dq = dq,
                    .dk = dk,
                    .dv = dv,
                    .q16 = s16->q,
                    .k16 = s16->k,
                    .v16 = s16->v,
                    .p16 = s16->p};
    par_run(backward_part, &j);
}
