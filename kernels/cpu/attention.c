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
 * bit for bit: test_ops's test_attention_fused holds that, and test_gpt the model. */
#include "bmm_small.h"
#include "ops.h"

int attention_fits(int T, int D) { return T >= 1 && D >= 1 && bmm_small_ok(T, D, T) && bmm_small_ok(T, T, D); }

/* element (b, h, 0, 0) of an operand */
static size_t at(const attn_operand_t *o, int b, int h) { return o->off + (size_t)b * o->ss + (size_t)h * o->hs; }

void attention_causal_forward(const attn_desc_t *a, int B, const float *q, const float *k, const float *v, float *p,
                              float *y)
{
    const int T = a->T, D = a->D;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < a->H; h++) {
            const float *qh = q + at(&a->q, b, h), *kh = k + at(&a->k, b, h), *vh = v + at(&a->v, b, h);
            float *ph = p + ((size_t)b * a->H + (size_t)h) * T * T;
            /* the scores into the softmax's output, normalised there */
            bmm_strided(T, T, D, qh, a->q.rs, 1, kh, 1, a->k.rs, ph, (size_t)T, 1, BMM_TRI_OUT_LOWER);
            causal_softmax_forward(1, T, a->scale, ph, ph);
            bmm_strided(T, D, T, ph, (size_t)T, 1, vh, a->v.rs, 1, y + at(&a->y, b, h), a->y.rs, 1, BMM_TRI_K_LE_ROW);
        }
}

void attention_causal_backward(const attn_desc_t *a, int B, const float *q, const float *k, const float *v,
                               const float *p, const float *dy, float *dq, float *dk, float *dv)
{
    const int T = a->T, D = a->D;
    /* the weights' gradient, then the scores' in its place: T x T within bmm_small_ok's
     * bound (M times N rounded up to 8 at most BMM_PACK_MAX floats) */
    float ds[8192];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < a->H; h++) {
            const size_t qo = at(&a->q, b, h), ko = at(&a->k, b, h), vo = at(&a->v, b, h);
            const float *ph = p + ((size_t)b * a->H + (size_t)h) * T * T, *dyh = dy + at(&a->y, b, h);
            bmm_strided(T, T, D, dyh, a->y.rs, 1, v + vo, 1, a->v.rs, ds, (size_t)T, 1, BMM_TRI_OUT_LOWER);
            bmm_strided(T, D, T, ph, 1, (size_t)T, dyh, a->y.rs, 1, dv + vo, a->v.rs, 1, BMM_TRI_K_GE_ROW);
            causal_softmax_backward(1, T, a->scale, ph, ds, ds, 1);
            bmm_strided(T, D, T, ds, (size_t)T, 1, k + ko, a->k.rs, 1, dq + qo, a->q.rs, 1, BMM_TRI_K_LE_ROW);
            bmm_strided(T, D, T, ds, 1, (size_t)T, q + qo, a->q.rs, 1, dk + ko, a->k.rs, 1, BMM_TRI_K_GE_ROW);
        }
}
