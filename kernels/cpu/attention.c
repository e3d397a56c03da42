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
 * At bf16 products (matmul.h) each product's operands are rounded to bf16 first, into each
 * pair's own copies: q, k and v, the weights P (the softmax keeps its float32 ones for its
 * backward, as autocast does), the output's gradient and the scores'; the sums stay
 * float32, FMAs as bf16 products' portable path (gemm_bf16.h) computes them. */
#include "bf16.h"
#include "bmm_small.h"
#include "matmul.h"
#include "ops.h"
#include "parallel.h"

int attention_fits(int T, int D) { return T >= 1 && D >= 1 && bmm_small_ok(T, D, T) && bmm_small_ok(T, T, D); }

/* element (b, h, 0, 0) of an operand */
static size_t at(const attn_operand_t *o, int b, int h) { return o->off + (size_t)b * o->ss + (size_t)h * o->hs; }

/* The lower triangle (the diagonal included) of an S x S matrix rounded to bf16 into dst,
 * zeros above it (as the softmax writes: the small products read whole blocks) */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void round_lower(int S, const float *restrict src,
                                                                                     float *restrict dst)
{
    for (int r = 0; r < S; r++) {
        for (int c = 0; c <= r; c++) dst[(size_t)r * S + c] = bf16_round(src[(size_t)r * S + c]);
        for (int c = r + 1; c < S; c++) dst[(size_t)r * S + c] = 0.0f;
    }
}

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
    const int bf16 = mm_precision() == MM_BF16;
    float qr[BMM_PACK_MAX], kr[BMM_PACK_MAX], vr[BMM_PACK_MAX], pr[BMM_PACK_MAX]; /* bf16's rounded copies */
    for (long bh = lo; bh < hi; bh++) {
        const int b = (int)(bh / a->H), h = (int)(bh % a->H);
        const float *qh = j->q + at(&a->q, b, h), *kh = j->k + at(&a->k, b, h), *vh = j->v + at(&a->v, b, h);
        size_t qs = a->q.rs, ks = a->k.rs, vs = a->v.rs;
        float *ph = j->pw + (size_t)bh * S * S;
        if (bf16) {
            bf16_round_rows(S, D, qh, qs, qr), bf16_round_rows(S, D, kh, ks, kr), bf16_round_rows(S, D, vh, vs, vr);
            qh = qr, kh = kr, vh = vr, qs = ks = vs = (size_t)D;
        }
        /* the scores into the softmax's output, normalised there */
        bmm_strided(S, S, D, qh, qs, 1, kh, 1, ks, ph, (size_t)S, 1, BMM_TRI_OUT_LOWER);
        if (a->pre_scale != 1.0f) /* the Mul's product, of what the softmax reads */
            for (int i = 0; i < S; i++)
                for (int c = 0; c <= i; c++) ph[(size_t)i * S + c] *= a->pre_scale;
        causal_softmax_forward(1, S, a->scale, ph, ph);
        const float *pa = ph;
        if (bf16) round_lower(S, ph, pr), pa = pr;
        bmm_strided(S, D, S, pa, (size_t)S, 1, vh, vs, 1, j->y + at(&a->y, b, h), a->y.rs, 1, BMM_TRI_K_LE_ROW);
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
    const int bf16 = mm_precision() == MM_BF16;
    /* bf16's rounded copies: q, k, v, the weights, the output's gradient, the scores' */
    float qr[BMM_PACK_MAX], kr[BMM_PACK_MAX], vr[BMM_PACK_MAX], pr[BMM_PACK_MAX], dyr[BMM_PACK_MAX], dsr[BMM_PACK_MAX];
    long lo, hi;
    par_range((long)j->B * a->H, t, T, &lo, &hi);
    for (long bh = lo; bh < hi; bh++) {
        const int b = (int)(bh / a->H), h = (int)(bh % a->H);
        const size_t qo = at(&a->q, b, h), ko = at(&a->k, b, h), vo = at(&a->v, b, h);
        const float *ph = j->p + (size_t)bh * S * S, *dyh = j->dy + at(&a->y, b, h);
        const float *qh = j->q + qo, *kh = j->k + ko, *vh = j->v + vo, *pa = ph, *dsa = ds;
        size_t qs = a->q.rs, ks = a->k.rs, vs = a->v.rs, ys = a->y.rs;
        if (bf16) {
            bf16_round_rows(S, D, qh, qs, qr), bf16_round_rows(S, D, kh, ks, kr), bf16_round_rows(S, D, vh, vs, vr);
            bf16_round_rows(S, D, dyh, ys, dyr), round_lower(S, ph, pr);
            qh = qr, kh = kr, vh = vr, dyh = dyr, pa = pr, qs = ks = vs = ys = (size_t)D;
        }
        bmm_strided(S, S, D, dyh, ys, 1, vh, 1, vs, ds, (size_t)S, 1, BMM_TRI_OUT_LOWER);
        bmm_strided(S, D, S, pa, 1, (size_t)S, dyh, ys, 1, j->dv + vo, a->v.rs, 1, BMM_TRI_K_GE_ROW);
        causal_softmax_backward(1, S, a->scale, ph, ds, ds, 1);
        if (a->pre_scale != 1.0f) /* the Mul's backward: g c, + 0 where it sets (as into zeros) */
            for (size_t e = 0; e < (size_t)S * S; e++) ds[e] = ds[e] * a->pre_scale + 0.0f;
        if (bf16) round_lower(S, ds, dsr), dsa = dsr;
        bmm_strided(S, D, S, dsa, (size_t)S, 1, kh, ks, 1, j->dq + qo, a->q.rs, 1, BMM_TRI_K_LE_ROW);
        bmm_strided(S, D, S, dsa, 1, (size_t)S, qh, qs, 1, j->dk + ko, a->k.rs, 1, BMM_TRI_K_GE_ROW);
    }
}

void attention_causal_backward(const attn_desc_t *a, int B, const float *q, const float *k, const float *v,
                               const float *p, const float *dy, float *dq, float *dk, float *dv)
{
    attn_job_t j = {.a = a, .B = B, .q = q, .k = k, .v = v, .p = p, .dy = dy, .dq = dq, .dk = dk, .dv = dv};
    par_run(backward_part, &j);
}
