/* kernels/cpu/softmax.c - fused softmax + cross-entropy, its gradient, and accuracy.
 *
 * Each row is shifted by its maximum before exponentiating, so exp never overflows and
 * the largest term is exactly 1 (the sum is in [1, N]); the loss is then
 *   log(sum_j exp(x_j - m)) - (x_label - m),
 * which stays finite and accurate for logits of any magnitude.
 */
#include <math.h>

#include "ops.h"

float softmax_xent_forward(int B, int N, const float *logits, const int32_t *labels, float *probs)
{
    if (B <= 0 || N <= 0) return 0.0f;
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
        total += log(sum) - ((double)x[labels[b]] - (double)m);
    }
    return (float)(total / B);
}

void softmax_xent_backward(int B, int N, const float *probs, const int32_t *labels, float scale, float *dlogits)
{
    if (B <= 0) return;
    const float k = scale / (float)B;
    for (int b = 0; b < B; b++) {
        const float *p = probs + (size_t)b * N;
        float *g = dlogits + (size_t)b * N;
        for (int j = 0; j < N; j++) g[j] = k * p[j];
        g[labels[b]] = k * (p[labels[b]] - 1.0f);
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
