/* kernels/cpu/optim.c - SGD and AdamW steps, gradient norm and clipping, learning-rate
 * schedules.
 *
 * sgd_update follows torch.optim.SGD (dampening 0) operation by operation, in float,
 * so a run can be compared with PyTorch step for step:
 *   d = grad_scale*g + wd*w;  u = mu*u + d;  step = nesterov ? d + mu*u : u;  w = w - lr*step.
 * (PyTorch sets u = d on the first step; with the buffer starting at zero, mu*0 + d is
 * the same value.) The AVX2 clones use no FMA, so every machine rounds alike.
 *
 * adamw_update follows torch.optim.AdamW (torch 1.13, single-tensor form) operation by
 * operation, in float with its scalars from double as torch computes them in Python:
 *   w = w * (1 - lr*wd);  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g;
 *   w = w - (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
 */
#include <math.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ops.h"
#include "parallel.h"

/* M_PI is POSIX, not C11 */
static const double PI = 3.14159265358979323846;

__attribute__((target_clones("avx2", "default"))) static void
sgd_plain(size_t n, float *restrict w, const float *restrict g, float gs, float lr, float wd)
{
    for (size_t i = 0; i < n; i++) {
        const float d = gs * g[i] + wd * w[i];
        w[i] = w[i] - lr * d;
    }
}

__attribute__((target_clones("avx2", "default"))) static void sgd_momentum(size_t n, float *restrict w,
                                                                           const float *restrict g, float gs,
                                                                           float *restrict u, float lr, float mu,
                                                                           float wd)
{
    for (size_t i = 0; i < n; i++) {
        const float d = gs * g[i] + wd * w[i];
        const float v = mu * u[i] + d;
        u[i] = v;
        w[i] = w[i] - lr * v;
    }
}

__attribute__((target_clones("avx2", "default"))) static void sgd_nesterov(size_t n, float *restrict w,
                                                                           const float *restrict g, float gs,
                                                                           float *restrict u, float lr, float mu,
                                                                           float wd)
{
    for (size_t i = 0; i < n; i++) {
        const float d = gs * g[i] + wd * w[i];
        const float v = mu * u[i] + d;
        u[i] = v;
        w[i] = w[i] - lr * (d + mu * v);
    }
}

/* One update's arguments, split by element ranges over the kernels' threads: every
 * element is computed as one thread computes it, so the result does not depend on them
 * (LeNet-5's 61,706 parameters were 4% of a two-thread step on one thread). */
typedef struct {
    float *w, *u;
    const float *g;
    size_t n;
    float lr, momentum, weight_decay, grad_scale;
    int nesterov;
} sgd_job_t;

static void sgd_part(void *arg, int t, int T)
{
    const sgd_job_t *j = arg;
    long lo, hi;
    par_range((long)j->n, t, T, &lo, &hi);
    const size_t n = (size_t)(hi - lo);
    float *w = j->w + lo, *u = j->u ? j->u + lo : NULL;
    const float *g = j->g + lo;
    if (j->momentum == 0.0f) sgd_plain(n, w, g, j->grad_scale, j->lr, j->weight_decay); /* u is not touched */
    else if (j->nesterov) sgd_nesterov(n, w, g, j->grad_scale, u, j->lr, j->momentum, j->weight_decay);
    else sgd_momentum(n, w, g, j->grad_scale, u, j->lr, j->momentum, j->weight_decay);
}

void sgd_update(size_t n, float *w, const float *g, float *u, float lr, float momentum, int nesterov,
                float weight_decay, float grad_scale)
{
    /* u may be NULL without momentum */
    sgd_job_t j = {.w = w,
                   .u = u,
                   .g = g,
                   .n = n,
                   .lr = lr,
                   .momentum = momentum,
                   .weight_decay = weight_decay,
                   .grad_scale = grad_scale,
                   .nesterov = nesterov};
    par_run_min(sgd_part, &j, n);
}

/* The scalars of one AdamW step, computed once per step in double (as torch does in
 * Python) and rounded to float where the elementwise code uses them. */
typedef struct {
    float decay;     /* 1 - lr*wd */
    float b1, c1;    /* beta1, 1 - beta1 */
    float b2, c2;    /* beta2, 1 - beta2 */
    float step_size; /* lr / (1 - beta1^t) */
    float bc2_sqrt;  /* sqrt(1 - beta2^t) */
    float eps, gs;
} adamw_scalars_t;

/* One element of the step, in torch's order; adamw_lanes8 is the same operations on eight. */
static inline void adamw_one(float *w, const float *g, float *m, float *v, const adamw_scalars_t *s)
{
    const float gi = s->gs * *g;
    const float wi = *w * s->decay;
    const float mi = s->b1 * *m + s->c1 * gi;
    /* addcmul's order: v*b2 + (c2*g)*g */
    const float vi = s->b2 * *v + s->c2 * gi * gi;
    *m = mi;
    *v = vi;
    const float denom = sqrtf(vi) / s->bc2_sqrt + s->eps;
    *w = wi - s->step_size * (mi / denom);
}

#if defined(__x86_64__)
/* Written with intrinsics because sqrtf's errno kept the compiler's clone of the loop
 * scalar (perf record of the GPT at nanoGPT's CPU shape: AdamW 2.9% of the step's samples
 * scalar, 1.9% in these lanes). No FMA, and sqrt and division are correctly rounded in
 * both, so every lane is adamw_one's value bit for bit. */
__attribute__((target("avx2"))) static size_t adamw_lanes8(size_t n, float *restrict w, const float *restrict g,
                                                           float *restrict m, float *restrict v,
                                                           const adamw_scalars_t *s)
{
    const __m256 gs = _mm256_set1_ps(s->gs), decay = _mm256_set1_ps(s->decay), b1 = _mm256_set1_ps(s->b1),
                 c1 = _mm256_set1_ps(s->c1), b2 = _mm256_set1_ps(s->b2), c2 = _mm256_set1_ps(s->c2),
                 bc2 = _mm256_set1_ps(s->bc2_sqrt), eps = _mm256_set1_ps(s->eps), step = _mm256_set1_ps(s->step_size);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 gi = _mm256_mul_ps(gs, _mm256_loadu_ps(g + i));
        const __m256 wi = _mm256_mul_ps(_mm256_loadu_ps(w + i), decay);
        const __m256 mi = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(c1, gi));
        const __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)),
                                        _mm256_mul_ps(_mm256_mul_ps(c2, gi), gi));
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), bc2), eps);
        _mm256_storeu_ps(w + i, _mm256_sub_ps(wi, _mm256_mul_ps(step, _mm256_div_ps(mi, denom))));
    }
    return i;
}
#endif

static void adamw_span(size_t n, float *restrict w, const float *restrict g, float *restrict m, float *restrict v,
                       const adamw_scalars_t *k)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) i = adamw_lanes8(n, w, g, m, v, k);
#endif
    for (; i < n; i++) adamw_one(w + i, g + i, m + i, v + i, k);
}

typedef struct {
    float *w, *m, *v;
    const float *g;
    size_t n;
    adamw_scalars_t k;
} adamw_job_t;

static void adamw_part(void *arg, int t, int T)
{
    const adamw_job_t *j = arg;
    long lo, hi;
    par_range((long)j->n, t, T, &lo, &hi);
    adamw_span((size_t)(hi - lo), j->w + lo, j->g + lo, j->m + lo, j->v + lo, &j->k);
}

void adamw_update(size_t n, float *w, const float *g, float *m, float *v, const adamw_hparams_t *h, long step,
                  float grad_scale)
{
    const double t = (double)(step < 1 ? 1 : step);
    const double bc1 = 1.0 - pow(h->beta1, t), bc2 = 1.0 - pow(h->beta2, t);
    adamw_job_t j = {.w = w,
                     .m = m,
                     .v = v,
                     .g = g,
                     .n = n,
                     .k = {.decay = (float)(1.0 - h->lr * h->weight_decay),
                           .b1 = (float)h->beta1,
                           .c1 = (float)(1.0 - h->beta1),
                           .b2 = (float)h->beta2,
                           .c2 = (float)(1.0 - h->beta2),
                           .step_size = (float)(h->lr / bc1),
                           .bc2_sqrt = (float)sqrt(bc2),
                           .eps = (float)h->eps,
                           .gs = grad_scale}};
    par_run_min(adamw_part, &j, n);
}

/* Eight explicit double lanes: vectorised without reassociation, so the sum is the
 * same on every ISA and for every clone. */
__attribute__((target_clones("avx2", "default"))) double sum_squares(size_t n, const float *g)
{
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) {
            const double v = (double)g[i + j];
            acc[j] += v * v;
        }
    double s = 0.0;
    for (; i < n; i++) s += (double)g[i] * (double)g[i];
    for (int j = 0; j < 8; j++) s += acc[j];
    return s;
}

__attribute__((target_clones("avx2", "default"))) static void scale_inplace(size_t n, float *restrict g, float k)
{
    for (size_t i = 0; i < n; i++) g[i] *= k;
}

float clip_grad_norm(size_t n, float *g, float max_norm)
{
    const double norm = sqrt(sum_squares(n, g));
    if (max_norm > 0.0f) {
        /* torch.nn.utils.clip_grad_norm_: coefficient max_norm / (norm + 1e-6), capped at 1 */
        const double coef = (double)max_norm / (norm + 1e-6);
        if (coef < 1.0) scale_inplace(n, g, (float)coef);
    }
    return (float)norm;
}

float lr_at(const lr_schedule_t *s, float base_lr, long step, long total_steps)
{
    const double lr = base_lr;
    if (step < 0) step = 0;
    if (s->warmup_steps > 0 && step < s->warmup_steps)
        return (float)(lr * (double)(step + 1) / (double)s->warmup_steps);
    const long t = step - (s->warmup_steps > 0 ? s->warmup_steps : 0);
    switch (s->kind) {
    case LR_STEP:
        if (s->step_size <= 0) return base_lr;
        return (float)(lr * pow((double)s->gamma, (double)(t / s->step_size)));
    case LR_COSINE: {
        const long span = total_steps - (s->warmup_steps > 0 ? s->warmup_steps : 0);
        const double min_lr = s->min_lr;
        if (span <= 0) return s->min_lr;
        double frac = (double)t / (double)span;
        if (frac > 1.0) frac = 1.0;
        return (float)(min_lr + 0.5 * (lr - min_lr) * (1.0 + cos(PI * frac)));
    }
    case LR_CONSTANT:
    default: return base_lr;
    }
}
