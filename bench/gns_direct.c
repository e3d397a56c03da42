/* bench/gns_direct.c - the gradient noise scale measured directly, to check the estimate a
 * run reports (common/gns.h, issue 28): the per-sample gradients of a checkpoint's
 * weights on a fixed batch (the first N training samples in file order, no
 * augmentation), one forward and backward pass per sample, give
 *     tr(Sigma) = N / (N - 1) (mean |g_s|^2 - |g|^2)   (g the batch's mean gradient)
 *     |G|^2     = |g|^2 - tr(Sigma) / N                  (unbiased for the true gradient)
 * and phi = tr(Sigma) / |G|^2. Prints one JSON line per checkpoint:
 *     {"checkpoint", "step", "samples", "trace", "g2", "noise_scale"}
 * Usage: gns_direct SPEC N CHECKPOINT... (the spec the checkpoints were written under;
 * computes on the CPU). bench/gns_check.sh compares the figures with the run's records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "train.h"

static int measure(worker_t *w, const char *path, int n)
{
    char err[1400];
    if (worker_resume(w, path, err, sizeof err) != 0) {
        fprintf(stderr, "gns_direct: %s\n", err);
        return -1;
    }
    model_t *m = w->model;
    size_t np = m->nparams;
    double *sum = calloc(np, sizeof *sum), sq = 0;
    if (!sum) return -1;
    for (int s = 0; s < n; s++) {
        int32_t idx = s;
        size_t x_floats = (size_t)w->max_batch * (size_t)m->C * (size_t)m->H * (size_t)m->W;
        if (data_batch_gather(&w->train, &idx, 1, w->x, x_floats, w->y, 0, NULL) != 0) {
            free(sum);
            return -1;
        }
        model_forward(m, w->x, w->y, 1, 1);
        model_backward(m, w->x, w->y, 1, 1.0f);
        sq += sum_squares(np, m->grads);
        for (size_t k = 0; k < np; k++) sum[k] += m->grads[k];
    }
    double mean2 = 0;
    for (size_t k = 0; k < np; k++) mean2 += (sum[k] / n) * (sum[k] / n);
    free(sum);
    double trace = (double)n / (n - 1) * (sq / n - mean2), g2 = mean2 - trace / n;
    printf("{\"checkpoint\":\"%s\",\"step\":%ld,\"samples\":%d,\"trace\":%.9g,\"g2\":%.9g,\"noise_scale\":%.9g}\n",
           path, w->global_step, n, trace, g2, trace / g2);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: gns_direct SPEC N CHECKPOINT...\n");
        return 2;
    }
    static job_spec_t spec;
    char err[1400];
    if (spec_load_file(argv[1], &spec, err, sizeof err) != 0) {
        fprintf(stderr, "gns_direct: %s\n", err);
        return 2;
    }
    snprintf(spec.device, sizeof spec.device, "cpu"); /* resume-free: the checkpoints still fit */
    int n = atoi(argv[2]);
    if (n < 2) {
        fprintf(stderr, "gns_direct: N must be at least 2\n");
        return 2;
    }
    int rc = 0;
    for (int i = 3; i < argc && rc == 0; i++) {
        static worker_t w;
        if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) {
            fprintf(stderr, "gns_direct: %s\n", err);
            return 2;
        }
        if (n > w.train.n) n = w.train.n;
        rc = measure(&w, argv[i], n);
        worker_teardown(&w);
    }
    return rc ? 1 : 0;
}
