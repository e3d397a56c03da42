/* bench/gns_direct.c - the gradient noise scale measured directly, to check the estimate a
 * run reports (common/gns.h, issue 28): the per-sample gradients of a checkpoint's
 * weights on a fixed batch (the first N training samples in file order, no
 * augmentation), one forward and backward pass per sample, give
 *     tr(Sigma) = N / (N - 1) (mean |g_s|^2 - |g|^2)   (g the batch's mean gradient)
 *     |G|^2     = |g|^2 - tr(Sigma) / N                  (unbiased for the true gradient)
 * and phi = tr(Sigma) / |G|^2. Prints one JSON line per checkpoint:
 *     {"checkpoint", "step", "samples", "trace", "g2", "noise_scale",
 *      "frozen": {"steps", "trace", "g2", "noise_scale"}}
 * "frozen" is the run's estimator (common/gns.h's gns_sample) on the same per-sample
 * gradients at the same weights: the N samples cut into consecutive steps of SPLIT's
 * local batches (the run's plan, e.g. 24,24,23,24,12,12,6,3), the per-step estimates of
 * tr(Sigma) and |G|^2 averaged over the steps, phi their ratio. It separates the
 * estimator's formula (same weights, same samples: it should agree with the direct
 * figure) from the run's moving average over weights that change (issue 28).
 * Usage: gns_direct SPEC N CHECKPOINT... [--split B1,B2,...] (the spec the checkpoints
 * were written under; computes on the CPU). bench/gns_check.sh compares the figures with
 * the run's records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gns.h"
#include "ops.h"
#include "train.h"

#define MAX_SPLIT 256

static int split[MAX_SPLIT], nsplit; /* --split: the local batches of one step */

static double norm2(size_t np, const double *v)
{
    double s = 0;
    for (size_t k = 0; k < np; k++) s += v[k] * v[k];
    return s;
}

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
    /* The frozen-weights estimator: cur the running sum of this local batch, tot the
     * step's; local_sum = sum(b_i |g_i|^2) = sum(|cur|^2 / b_i). */
    double *cur = calloc(np, sizeof *cur), *tot = calloc(np, sizeof *tot);
    double local_sum = 0, f_trace = 0, f_g2 = 0;
    int part = 0, in_part = 0, in_step = 0, step_b = 0, f_steps = 0;
    for (int i = 0; i < nsplit; i++) step_b += split[i];
    if (!sum || !cur || !tot) {
        free(sum);
        free(cur);
        free(tot);
        return -1;
    }
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
        if (!nsplit) continue;
        for (size_t k = 0; k < np; k++) cur[k] += m->grads[k];
        in_step++;
        if (++in_part < split[part]) continue;
        local_sum += norm2(np, cur) / split[part];
        for (size_t k = 0; k < np; k++) tot[k] += cur[k];
        memset(cur, 0, np * sizeof *cur);
        in_part = 0;
        if (++part < nsplit) continue;
        gns_sample_t e;
        if (gns_sample(local_sum, norm2(np, tot) / ((double)step_b * step_b), step_b, nsplit, &e) == 0) {
            f_trace += e.trace;
            f_g2 += e.g2;
            f_steps++;
        }
        memset(tot, 0, np * sizeof *tot);
        local_sum = 0;
        part = in_step = 0;
    }
    double mean2 = 0;
    for (size_t k = 0; k < np; k++) mean2 += (sum[k] / n) * (sum[k] / n);
    free(sum);
    free(cur);
    free(tot);
    double trace = (double)n / (n - 1) * (sq / n - mean2), g2 = mean2 - trace / n;
    printf("{\"checkpoint\":\"%s\",\"step\":%ld,\"samples\":%d,\"trace\":%.9g,\"g2\":%.9g,\"noise_scale\":%.9g", path,
           w->global_step, n, trace, g2, trace / g2);
    if (f_steps > 0)
        printf(",\"frozen\":{\"steps\":%d,\"trace\":%.9g,\"g2\":%.9g,\"noise_scale\":%.9g}", f_steps, f_trace / f_steps,
               f_g2 / f_steps, f_trace / f_g2);
    printf("}\n");
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[argc - 2], "--split") == 0) {
        char *p = argv[argc - 1], *end;
        while (*p && nsplit < MAX_SPLIT) {
            long b = strtol(p, &end, 10);
            if (end == p || b < 1 || b > 1000000 || (*end && *end != ',')) {
                fprintf(stderr, "gns_direct: --split wants positive local batches separated by commas, not %s\n",
                        argv[argc - 1]);
                return 2;
            }
            split[nsplit++] = (int)b;
            p = *end ? end + 1 : end;
        }
        if (nsplit < 2 || *p) {
            fprintf(stderr, "gns_direct: --split wants 2 to %d local batches\n", MAX_SPLIT);
            return 2;
        }
        argc -= 2;
    }
    if (argc < 4) {
        fprintf(stderr, "usage: gns_direct SPEC N CHECKPOINT... [--split B1,B2,...]\n");
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
