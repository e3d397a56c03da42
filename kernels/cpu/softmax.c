/* kernels/cpu/softmax.c - fused softmax + cross-entropy, its gradient, and accuracy.
 *
 * Each row is shifted by its maximum before exponentiating, so exp never overflows and
 * the largest term is exactly 1 (the sum is in [1, N]); the loss is then
 *   log(sum_j exp(x_j - m)) - (x_label - m),
 * which stays finite and accurate for logits of any magnitude. Label smoothing eps is
 * PyTorch's (torch.nn.CrossEntropyLoss): (1 - eps) * that + eps * the mean over classes of
 * -log p_j, whose gradient is p - ((1 - eps) * onehot + eps / N).
 */
#include <math.h>

#include "ops.h"

float softmax_xent_forward(int B, int N, const float *logits, const int32_t *labels, float smoothing, float *probs)
{
    if (B <= 0 || N <= 0) return 0.0f;
    const double eps = smoothing;
    double total = 0.0;
    for (int b = 0; b < B; b++) {
        const float *x = logits + (size_t)b * N; /* (N) */
        float *p = probs + (size_t)b * N;        /* (N) */
        float m = x[0];
        for (int j = 1; j < N; j++) m = x[j] > m ? x[j] : m;
        double sum = 0.0;
        for (int j = 0; j < N; j++) {
            p[j] = expf(x[j] - m);
            sum += p[j];
        }
        const float inv = (float)(1.0 / sum);
        for (int j = 0; j < N; j++) p[j] *= inv;
        const double nll = log(sum) - ((double)x[labels[b]] - (double)m);
        if (eps == 0.0) {
            total += nll; /* the same bits as before label smoothing existed */
            continue;
        }
        /* the mean over classes of -log p_j = log(sum) - (x_j - m) */
        double xs = 0.0;
        for (int j = 0; j < N; j++) xs += (double)x[j];
        const double smooth = log(sum) - (xs / N - (double)m);
        total += (1.0 - eps) * nll + eps * smooth;
    }
    return (float)(total / B);
}

void softmax_xent_backward(int B, int N, const float *probs, const int32_t *labels, float smoothing, float scale,
                           float *dlogits)
{
    if (B <= 0) return;
    const float k = scale / (float)B;
    /* the smoothed target: 1 - eps + eps/N at the label, eps/N elsewhere; with eps = 0
     * the expressions below are the unsmoothed ones bit for bit */
    const float off = smoothing / (float)N, on = (1.0f - smoothing) + off;
    for (int b = 0; b < B; b++) {
        const float *p = probs + (size_t)b * N;
        float *g = dlogits + (size_t)b * N;
        for (int j = 0; j < N; j++) g[j] = k * (p[j] - off);
        g[labels[b]] = k * (p[labels[b]] - on);
    }
}

int count_correct(int B, int N, const float *logits, const int32_t *labels)
{
    int correct = 0;
    for (int b = 0; b < B; b++) {
        const float *x = logits + (size_t)b * N;
        int best = 0;
        /* strict > keeps the lowest index among ties */
        for (int j = 1; j < N; j++)
            if (x[j] > x[best]) best = j;
        correct += best == labels[b];
    }
    return correct;
}

/* One line at a time: its elements lie inner apart; the sums in double, as the loss's. */
void softmax_axis_forward(int take_log, int rows, int n, int inner, const float *inp, float *out)
{
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < inner; k++) {
            const float *a = inp + (size_t)r * n * inner + k;
            float *o = out + (size_t)r * n * inner + k;
            float m = a[0];
            for (int j = 1; j < n; j++) m = a[(size_t)j * inner] > m ? a[(size_t)j * inner] : m;
            double s = 0.0;
            for (int j = 0; j < n; j++) s += exp((double)a[(size_t)j * inner] - m);
            const double ls = log(s);
            for (int j = 0; j < n; j++) {
                const double v = (double)a[(size_t)j * inner] - m;
                o[(size_t)j * inner] = (float)(take_log ? v - ls : exp(v - ls));
            }
        }
}

void softmax_axis_backward(int take_log, int rows, int n, int inner, const float *out, const float *dout, float *dinp)
{
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < inner; k++) {
            const size_t base = (size_t)r * n * inner + k;
            const float *y = out + base, *g = dout + base;
            float *d = dinp + base;
            double s = 0.0;
            for (int j = 0; j < n; j++)
                s += take_log ? (double)g[(size_t)j * inner] : (double)g[(size_t)j * inner] * y[(size_t)j * inner];
            for (int j = 0; j < n; j++) {
                const size_t o = (size_t)j * inner;
                d[o] += take_log ? (float)(g[o] - exp((double)y[o]) * s) : (float)(y[o] * (g[o] - s));
            }
        }
}
