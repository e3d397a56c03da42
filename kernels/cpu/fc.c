/* kernels/cpu/fc.c - fully connected layer and ONNX Gemm, out = alpha * inp x W' + beta * bias,
 * on OpenBLAS. fc_* is gemm with the (OUT, IN) layout and alpha = beta = 1: the same calls,
 * the same bits. */
#include <cblas.h>
#include <string.h>

#include "bf16.h"
#include "cpu_isa.h"
#include "gemm_bf16_act.h"
#include "gemm_bf16_pack.h"
#include "matmul.h"
#include "ops.h"
#include "prefetch.h"
#include "parallel.h"

/* On several threads (parallel.h) each GEMM is split where no sum is: the forward and the
 * input gradient by rows of the batch, the weight gradient by rows of dW (each thread
 * reducing over the whole batch for its rows), so no partial sums are added; results
 * differ from one thread's in rounding only, where OpenBLAS's edge tiles fall on other
 * rows. A GEMM under PAR_MIN_MACS multiply-adds stays on one thread: waking the others
 * costs more (LeNet-5's last layer is 840 per image). */
#define PAR_MIN_MACS 65536.0

typedef struct {
    const gemm_desc_t *d;
    int B;
    const float *inp, *weight, *dout;
    const uint16_t *inp16; /* the input stored in bf16 (gemm_forward_a16), or NULL */
    const float *bias;     /* the forward's bias added as the products are written (bf16) */
    float *out, *dinp, *dweight;
    float cbeta;       /* the forward GEMM's beta: 1 on a bias pre-filled out */
    uint16_t *out16;   /* gemm_forward_rounded's output in bf16, or NULL (out as floats) */
    const float *fill; /* gemm_forward_rounded: a bias to pre-fill with (beta's), or NULL */
    float dbeta;       /* the input gradient's: 1 adds to dinp, 0 sets it (gemm_backward_set) */
} gemm_job_t;

static void run(gemm_job_t *j, par_fn fn, double macs)
{
    if (macs < PAR_MIN_MACS) fn(j, 0, 1);
    else par_run(fn, j);
}

/* The forward's weight operand: W^T of the (OUT, IN) layout, W of (IN, OUT), and its row
 * stride */
static mm_trans_t weight_trans(const gemm_desc_t *d) { return d->layout == GEMM_W_OUT_IN ? MM_T : MM_N; }
static int weight_ld(const gemm_desc_t *d) { return d->layout == GEMM_W_OUT_IN ? d->IN : d->OUT; }

static void forward_part(void *arg, int t, int T)
{
    const gemm_job_t *j = arg;
    const int IN = j->d->IN, OUT = j->d->OUT;
    long b0, b1;
    par_range(j->B, t, T, &b0, &b1);
    if (b1 == b0) return;
    float *o = j->out + (size_t)b0 * OUT;
    /* out (B, OUT) = alpha * inp (B, IN) x W^T (IN, OUT), or x W (IN, OUT) */
    const mm_trans_t tw = weight_trans(j->d);
    const int ldw = weight_ld(j->d);
    if (j->inp16) {
        mm_sgemm_a16(tw, (int)(b1 - b0), OUT, IN, j->d->alpha, j->inp16 + (size_t)b0 * IN, IN, j->weight, ldw, j->bias,
                     j->cbeta, o, OUT);
        return;
    }
    const float *x = j->inp + (size_t)b0 * IN;
    if (j->bias) mm_sgemm_bias(MM_N, tw, (int)(b1 - b0), OUT, IN, j->d->alpha, x, IN, j->weight, ldw, j->bias, o, OUT);
    else mm_sgemm(MM_N, tw, (int)(b1 - b0), OUT, IN, j->d->alpha, x, IN, j->weight, ldw, j->cbeta, o, OUT);
}

static void backward_part(void *arg, int t, int T)
{
    const gemm_job_t *j = arg;
    const int IN = j->d->IN, OUT = j->d->OUT, B = j->B;
    const float alpha = j->d->alpha;
    long r0, r1, b0, b1;
    par_range(j->d->layout == GEMM_W_OUT_IN ? OUT : IN, t, T, &r0, &r1);
    par_range(B, t, T, &b0, &b1);
    const int rows = (int)(r1 - r0), nb = (int)(b1 - b0);
    if (j->d->layout == GEMM_W_OUT_IN) {
        /* dW rows [r0, r1) (OUT, IN) = alpha * dout^T (OUT, B) x inp (B, IN) */
        if (rows > 0 && j->dweight && j->inp16)
            mm_sgemm_b16(MM_T, rows, IN, B, alpha, j->dout + r0, OUT, j->inp16, IN, 0.0f, j->dweight + (size_t)r0 * IN,
                         IN);
        else if (rows > 0 && j->dweight)
            mm_sgemm(MM_T, MM_N, rows, IN, B, alpha, j->dout + r0, OUT, j->inp, IN, 0.0f, j->dweight + (size_t)r0 * IN,
                     IN);
        /* dinp (B, IN) += alpha * dout (B, OUT) x W (OUT, IN) */
        if (j->dinp && nb > 0)
            mm_sgemm(MM_N, MM_N, nb, IN, OUT, alpha, j->dout + (size_t)b0 * OUT, OUT, j->weight, IN, j->dbeta,
                     j->dinp + (size_t)b0 * IN, IN);
    } else {
        /* dW rows [r0, r1) (IN, OUT) = alpha * inp^T (IN, B) x dout (B, OUT) */
        if (rows > 0 && j->dweight)
            mm_sgemm(MM_T, MM_N, rows, OUT, B, alpha, j->inp + r0, IN, j->dout, OUT, 0.0f,
                     j->dweight + (size_t)r0 * OUT, OUT);
        /* dinp (B, IN) += alpha * dout (B, OUT) x W^T (OUT, IN) */
        if (j->dinp && nb > 0)
            mm_sgemm(MM_N, MM_T, nb, IN, OUT, alpha, j->dout + (size_t)b0 * OUT, OUT, j->weight, OUT, j->dbeta,
                     j->dinp + (size_t)b0 * IN, IN);
    }
}

static const gemm_desc_t *fc_desc(gemm_desc_t *d, int IN, int OUT)
{
    *d = (gemm_desc_t){.IN = IN, .OUT = OUT, .layout = GEMM_W_OUT_IN, .alpha = 1.0f, .beta = 1.0f};
    return d;
}

void fc_forward(int B, int IN, int OUT, const float *inp, const float *weight, const float *bias, float *out)
{
    gemm_desc_t d;
    gemm_forward(fc_desc(&d, IN, OUT), B, inp, weight, bias, out);
}

void fc_backward(int B, int IN, int OUT, const float *inp, const float *weight, const float *dout, float *dinp,
                 float *dweight, float *dbias)
{
    gemm_desc_t d;
    gemm_backward(fc_desc(&d, IN, OUT), B, inp, weight, dout, dinp, dweight, dbias);
}

/* At bf16 the forward's weight is packed once, here, for every thread's product (on one
 * thread the product packs it as it goes: gemm_bf16_keep_b) */
static void keep_weight(const gemm_desc_t *d, const float *weight)
{
    mm_keep_weight(weight_trans(d), d->IN, d->OUT, weight, weight_ld(d));
}

/* rows x OUT of out set to beta * bias (beta 1: a plain copy, no rounding); out is cold
 * (written last by the step before): its lines asked for ahead */
static void fill_bias(int rows, int OUT, float beta, const float *bias, float *out)
{
    for (int b = 0; b < rows; b++) {
        float *o = out + (size_t)b * OUT;
        for (int j = 0; j < OUT; j += 16) prefetch_ahead(o, (size_t)j, 1);
        if (beta == 1.0f) memcpy(o, bias, (size_t)OUT * sizeof(float));
        else
            for (int j = 0; j < OUT; j++) o[j] = beta * bias[j];
    }
}

/* gemm_forward on inp, or on inp16 (bf16) where not NULL */
static void forward_any(const gemm_desc_t *d, int B, const float *inp, const uint16_t *inp16, const float *weight,
                        const float *bias, float *out)
{
    const int IN = d->IN, OUT = d->OUT;
    const float beta = d->beta;
    if (B <= 0 || OUT <= 0) return;
    /* Pre-filling out with beta * bias and using beta = 1 in the GEMM adds it for free
     * (beta = 1: a plain copy, no rounding). At bf16 the products add a bias of beta 1 as
     * they write out (the same bits), which saves that pass over out. */
    const int epilogue = bias && beta == 1.0f && IN > 0 && (inp16 || mm_precision() == MM_BF16);
    if (bias && !epilogue) fill_bias(B, OUT, beta, bias, out);
    if (IN <= 0) {
        /* no GEMM with an empty inner dimension: OpenBLAS rejects lda = 0 */
        if (!bias) memset(out, 0, (size_t)B * OUT * sizeof(float));
        return;
    }
    gemm_job_t j = {.d = d,
                    .B = B,
                    .inp = inp,
                    .inp16 = inp16,
                    .weight = weight,
                    .out = out,
                    .bias = epilogue ? bias : NULL,
                    .cbeta = bias ? 1.0f : 0.0f};
    keep_weight(d, weight);
    run(&j, forward_part, (double)B * IN * OUT);
}

void gemm_forward(const gemm_desc_t *d, int B, const float *inp, const float *weight, const float *bias, float *out)
{
    forward_any(d, B, inp, NULL, weight, bias, out);
}

void gemm_forward_a16(const gemm_desc_t *d, int B, const uint16_t *inp, const float *weight, const float *bias,
                      float *out)
{
    forward_any(d, B, NULL, inp, weight, bias, out);
}

/* ---- the forward rounded to bf16 ------------------------------------------------------- */

/* Rows a rounded forward computes at a time into float32 scratch where the product cannot
 * round as it writes (rounded_by_product: a bias pre-filled at beta != 1, or no scratch)
 * on the bf16 units' paths (whose sums do not depend on the rows taken together): a
 * multiple of the tiles' 16 (AMX reads a bf16 input's tiles as stored), and few enough
 * that the block stays in the L2 cache (64 x 3072 floats: 768 KB) until it is rounded. */
#define ROUND_ROWS 64
/* floats of the stack block a row at a time takes where the scratch cannot be had */
#define ROUND_STACK GEMM_ROUNDED_MAX_OUT

/* n floats of s rounded as bf16_act_store rounds them, into out16 or as floats into out */
static void store_rounded(size_t n, const float *s, uint16_t *out16, float *out)
{
    if (out16) {
        bf16_act_store(n, s, out16);
        return;
    }
    uint16_t h[2048];
    for (size_t o = 0; o < n; o += 2048) {
        const size_t c = n - o < 2048 ? n - o : 2048;
        bf16_act_store(c, s + o, h);
        for (size_t i = 0; i < c; i++) out[o + i] = bf16_to_float(h[i]);
    }
}

/* rows [r, r + rows) of the product into s (rows x OUT), as forward_any computes them */
static void rounded_block(const gemm_job_t *j, long r, int rows, float *s)
{
    const int IN = j->d->IN, OUT = j->d->OUT;
    if (j->fill) fill_bias(rows, OUT, j->d->beta, j->fill, s);
    gemm_job_t c = *j;
    c.B = rows;
    c.inp = j->inp ? j->inp + (size_t)r * IN : NULL;
    c.inp16 = j->inp16 ? j->inp16 + (size_t)r * IN : NULL;
    c.out = s;
    forward_part(&c, 0, 1);
}

/* Rows [b0, b1) of the product rounded as it is written, on the bf16 units' paths, where
 * the bias (if any) is added by the product: 0, or -1 (the caller rounds a float32 block) */
static int rounded_by_product(const gemm_job_t *j, long b0, long b1)
{
    const int IN = j->d->IN, OUT = j->d->OUT, rows = (int)(b1 - b0);
    if (j->fill) return -1;
    return gemm_bf16_rounded_on(cpu_isa(), weight_trans(j->d) == MM_T, rows, OUT, IN, j->d->alpha,
                                j->inp ? j->inp + (size_t)b0 * IN : NULL, j->inp16 ? j->inp16 + (size_t)b0 * IN : NULL,
                                IN, j->weight, weight_ld(j->d), j->bias, j->out16 ? NULL : j->out + (size_t)b0 * OUT,
                                j->out16 ? j->out16 + (size_t)b0 * OUT : NULL, OUT);
}

static void rounded_part(void *arg, int t, int T)
{
    const gemm_job_t *j = arg;
    const int OUT = j->d->OUT;
    long b0, b1;
    par_range(j->B, t, T, &b0, &b1);
    if (b1 == b0 || rounded_by_product(j, b0, b1) == 0) return;
    /* the portable path's OpenBLAS may sum otherwise for fewer rows: its rows in one block,
     * so that they get gemm_forward's bits */
    const int block = cpu_isa() == CPU_ISA_PORTABLE ? (int)(b1 - b0) : ROUND_ROWS;
    float *s = gemm_bf16_scratch(2, (size_t)block * OUT * sizeof(float)), one[ROUND_STACK];
    const int step = s ? block : 1;
    if (!s) s = one; /* OUT <= GEMM_ROUNDED_MAX_OUT */
    for (long r = b0; r < b1; r += step) {
        const int rows = b1 - r < step ? (int)(b1 - r) : step;
        rounded_block(j, r, rows, s);
        store_rounded((size_t)rows * OUT, s, j->out16 ? j->out16 + (size_t)r * OUT : NULL,
                      j->out16 ? NULL : j->out + (size_t)r * OUT);
    }
}

void gemm_forward_rounded(const gemm_desc_t *d, int B, const float *inp, const uint16_t *inp16, const float *weight,
                          const float *bias, float *out, uint16_t *out16)
{
    const int IN = d->IN, OUT = d->OUT;
    if (B <= 0 || OUT <= 0 || OUT > GEMM_ROUNDED_MAX_OUT) return;
    if (IN <= 0) { /* forward_any's: the bias, or zeros */
        float row[ROUND_STACK];
        if (bias) fill_bias(1, OUT, d->beta, bias, row);
        else memset(row, 0, (size_t)OUT * sizeof(float));
        for (int b = 0; b < B; b++)
            store_rounded((size_t)OUT, row, out16 ? out16 + (size_t)b * OUT : NULL,
                          out16 ? NULL : out + (size_t)b * OUT);
        return;
    }
    const int epilogue = bias && d->beta == 1.0f;
    gemm_job_t j = {.d = d,
                    .B = B,
                    .inp = inp,
                    .inp16 = inp16,
                    .weight = weight,
                    .out = out,
                    .out16 = out16,
                    .bias = epilogue ? bias : NULL,
                    .fill = epilogue ? NULL : bias,
                    .cbeta = bias ? 1.0f : 0.0f};
    keep_weight(d, weight);
    run(&j, rounded_part, (double)B * IN * OUT);
}

/* dbias (OUT) = the column sums of dout (B, OUT), row by row so the inner loop is
 * contiguous and vectorises: each column summed over the rows in order, so the AVX2 clone
 * gives the default's bits (it ran as SSE inside backward_beta: 0.7% of the GPT's step at
 * nanoGPT's CPU shape) */
__attribute__((target_clones("avx2", "default"))) static void bias_grad(int B, int OUT, const float *dout, float *dbias)
{
    if (B <= 0) memset(dbias, 0, (size_t)OUT * sizeof(float));
    else memcpy(dbias, dout, (size_t)OUT * sizeof(float));
    for (int b = 1; b < B; b++) {
        const float *g = dout + (size_t)b * OUT;
        for (int o = 0; o < OUT; o++) dbias[o] += g[o];
    }
}

/* dbeta: 1 adds the input gradient to dinp, 0 writes it (OpenBLAS's beta = 0 writes C
 * without reading it; with beta = 1 it adds the same product, so the bits are those of
 * adding into zeros) */
static void backward_beta(const gemm_desc_t *d, int B, const float *inp, const uint16_t *inp16, const float *weight,
                          const float *dout, float *dinp, float *dweight, float *dbias, float dbeta)
{
    const int IN = d->IN, OUT = d->OUT;
    if (OUT <= 0) {
        /* no product: nothing to add, zeros to set */
        if (dbeta == 0.0f && dinp && B > 0 && IN > 0) memset(dinp, 0, (size_t)B * IN * sizeof(float));
        return;
    }
    if (dbias) {
        bias_grad(B, OUT, dout, dbias);
        if (d->beta != 1.0f)
            for (int o = 0; o < OUT; o++) dbias[o] *= d->beta;
    }
    if (IN <= 0 || (!dweight && !dinp)) return;
    if (B <= 0) {
        /* parameter gradients are written even when nothing flows into them */
        if (dweight) memset(dweight, 0, (size_t)OUT * IN * sizeof(float));
        return;
    }
    gemm_job_t j = {.d = d,
                    .B = B,
                    .inp = inp,
                    .inp16 = inp16,
                    .weight = weight,
                    .dout = dout,
                    .dinp = dinp,
                    .dweight = dweight,
                    .dbeta = dbeta};
    if (dinp) {
        if (d->layout == GEMM_W_OUT_IN) mm_keep_weight(MM_N, OUT, IN, weight, IN);
        else mm_keep_weight(MM_T, OUT, IN, weight, OUT);
    }
    run(&j, backward_part, (double)B * IN * OUT);
}

void gemm_backward(const gemm_desc_t *d, int B, const float *inp, const float *weight, const float *dout, float *dinp,
                   float *dweight, float *dbias)
{
    backward_beta(d, B, inp, NULL, weight, dout, dinp, dweight, dbias, 1.0f);
}

void gemm_backward_set(const gemm_desc_t *d, int B, const float *inp, const float *weight, const float *dout,
                       float *dinp, float *dweight, float *dbias)
{
    backward_beta(d, B, inp, NULL, weight, dout, dinp, dweight, dbias, 0.0f);
}

void gemm_backward_a16(const gemm_desc_t *d, int B, const uint16_t *inp, const float *weight, const float *dout,
                       float *dinp, float *dweight, float *dbias, int set)
{
    backward_beta(d, B, NULL, inp, weight, dout, dinp, dweight, dbias, set ? 0.0f : 1.0f);
}
