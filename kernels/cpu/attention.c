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
 * the kernels' threads (parallel.h), the same bits on any number. */
#include "bmm_small.h"
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
} attn_job_t;

static void forward_part(void *arg, int t, int T)
{
    const attn_job_t *j = arg;
    const attn_desc_t *a = j->a;
    const int S = a->T, D = a->D;
    long lo, hi;
    par_range((long)j->B * a->H, t, T, &lo, &hi);
    for (long bh = lo; bh < hi; bh++) {
        const int b = (int)(bh / a->H), h = (int)(bh % a->H);
        const float *qh = j->q + at(&a->q, b, h), *kh = j->k + at(&a->k, b, h), *vh = j->v + at(&a->v, b, h);
        float *ph = j->pw + (size_t)bh * S * S;
        /* the scores into the softmax's output, normalised there */
        bmm_strided(S, S, D, qh, a->q.rs, 1, kh, 1, a->k.rs, ph, (size_t)S, 1, BMM_TRI_OUT_LOWER);
        if (a->pre_scale != 1.0f) /* the Mul's product, of what the softmax reads */
            for (int i = 0; i < S; i++)
                for (int c = 0; c <= i; c++) ph[(size_t)i * S + c] *= a->pre_scale;
        causal_softmax_forward(1, S, a->scale, ph, ph);
        bmm_strided(S, D, S, ph, (size_t)S, 1, vh, a->v.rs, 1, j->y + at(&a->y, b, h), a->y.rs, 1, BMM_TRI_K_LE_ROW);
    }
}

void attention_causal_forward(const attn_desc_t *a, int B, const float *q, const float *k, const float *v, float *p,
                              float *y)
{
    attn_job_t j = {.a = a, .B = B, .q = q, .k = k, .v = v, .pw = p, .y = y};
    par_run(forward_part, &j);
}

static void backward_part(void *arg, int t, int T)
{
    const attn_job_t *j = arg;
    const attn_desc_t *a = j->a;
    const int S = a->T, D = a->D;
    /* the weights' gradient, then the scores' in its place: T x T within bmm_small_ok's
     * bound (M times N rounded up to 8 at most BMM_PACK_MAX floats) */
    float ds[BMM_PACK_MAX];
    long lo, hi;
    par_range((long)j->B * a->H, t, T, &lo, &hi);
    for (long bh = lo; bh < hi; bh++) {
        const int b = (int)(bh / a->H), h = (int)(bh % a->H);
        const size_t qo = at(&a->q, b, h), ko = at(&a->k, b, h), vo = at(&a->v, b, h);
        const float *ph = j->p + (size_t)bh * S * S, *dyh = j->dy + at(&a->y, b, h);
        bmm_strided(S, S, D, dyh, a->y.rs, 1, j->v + vo, 1, a->v.rs, ds, (size_t)S, 1, BMM_TRI_OUT_LOWER);
        bmm_strided(S, D, S, ph, 1, (size_t)S, dyh, a->y.rs, 1, j->dv + vo, a->v.rs, 1, BMM_TRI_K_GE_ROW);
        causal_softmax_backward(1, S, a->scale, ph, ds, ds, 1);
        if (a->pre_scale != 1.0f) /* the Mul's backward: g c, + 0 where it sets (as into zeros) */
            for (size_t e = 0; e < (size_t)S * S; e++) ds[e] = ds[e] * a->pre_scale + 0.0f;
        bmm_strided(S, D, S, ds, (size_t)S, 1, j->k + ko, a->k.rs, 1, j->dq + qo, a->q.rs, 1, BMM_TRI_K_LE_ROW);
        bmm_strided(S, D, S, ds, 1, (size_t)S, j->q + qo, a->q.rs, 1, j->dk + ko, a->k.rs, 1, BMM_TRI_K_GE_ROW);
    }
}

void attention_causal_backward(const attn_desc_t *a, int B, const float *q, const float *k, const float *v,
                               const float *p, const float *dy, float *dq, float *dk, float *dv)
{
    attn_job_t j = {.a = a, .B = B, .q = q, .k = k, .v = v, .p = p, .dy = dy, .dq = dq, .dk = dk, .dv = dv};
    par_run(backward_part, &j);
}
