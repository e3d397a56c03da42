/* bench/gpu_bench.c - training throughput of the CUDA backend (one GPU, one process).
 *
 *   build/bench/gpu_bench [--batch N] [--steps N] [--warmup N] [--cpu-steps N] [model ...]
 *
 * Models default to lenet5 and resnet20, batch 256. A step is what a worker does on the
 * device: cuda_model_train_step (batch up, forward, backward, gradients down into pinned
 * host memory, one synchronisation) followed by cuda_model_sgd (momentum 0.9, weight decay
 * 5e-4, on the device), timed until the update has finished. The batch is random but fixed
 * (data loading is not measured). Prints one line per model:
 *   gpu_bench model=M batch=B steps=S step_ms=... samples_per_s=... model_mib=... device_used_mib=...
 * model_mib is what cuda_model_create allocated; device_used_mib is the device's used memory
 * (total - free) with the model loaded: CUDA context, cuDNN and cuBLAS included.
 * --cpu-steps N also times N steps of the CPU reference (model_forward, model_backward,
 * sgd_update) on the same batch for comparison (0, the default, skips it).
 *
 * Without a CUDA build or a visible GPU it prints "skip: ..." and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_cuda.h"
#include "clock.h"
#include "model.h"
#include "ops.h"

#ifdef PACER_WITH_CUDA
static unsigned long long g_rng = 88172645463325252ULL;
static float frand(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)(g_rng >> 40) / 16777216.0f;
}

static int bench_model(const char *name, int batch, int steps, int warmup, int cpu_steps, int device)
{
    char err[512];
    model_t *m = NULL;
    if (model_create(name, batch, &m, err, sizeof err) != 0) {
        fprintf(stderr, "gpu_bench: %s\n", err);
        return -1;
    }
    model_init_params(m, 42);
    const size_t in = (size_t)m->C * m->H * m->W;
    float *x = malloc((size_t)batch * in * sizeof(float));
    int32_t *y = malloc((size_t)batch * sizeof(int32_t));
    if (!x || !y) {
        fprintf(stderr, "gpu_bench: out of memory\n");
        free(x); free(y); model_free(m);
        return -1;
    }
    for (size_t i = 0; i < (size_t)batch * in; i++) x[i] = 2.0f * frand() - 1.0f;
    for (int b = 0; b < batch; b++) y[b] = (int32_t)(frand() * (float)m->num_classes) % m->num_classes;

    int rc = -1;
    cuda_model_t *cm = cuda_model_create(m, device, err, sizeof err);
    if (!cm) {
        fprintf(stderr, "gpu_bench: %s\n", err);
        goto out;
    }
    if (cuda_model_upload(cm, m) != 0) goto fail;
    float loss = 0.0f;
    for (int s = 0; s < warmup; s++)
        if (cuda_model_train_step(cm, x, y, batch, 1.0f, NULL, &loss) != 0 ||
            cuda_model_sgd(cm, 0.01f, 0.9f, 0, 5e-4f, 1.0f, 0.0f) != 0 || cuda_model_sync(cm) != 0)
            goto fail;
    double t0 = clock_mono_s();
    for (int s = 0; s < steps; s++)
        if (cuda_model_train_step(cm, x, y, batch, 1.0f, NULL, &loss) != 0 ||
            cuda_model_sgd(cm, 0.01f, 0.9f, 0, 5e-4f, 1.0f, 0.0f) != 0 || cuda_model_sync(cm) != 0)
            goto fail;
    const double dt = (clock_mono_s() - t0) / (steps > 0 ? steps : 1);
    size_t free_b = 0, total_b = 0;
    cuda_memory_info(&free_b, &total_b);
    char dev[256];
    cuda_device_name(device, dev, sizeof dev);
    printf("gpu_bench model=%s batch=%d steps=%d step_ms=%.3f samples_per_s=%.0f model_mib=%.1f "
           "device_used_mib=%.0f loss=%.4f device=\"%s\"\n",
           name, batch, steps, 1e3 * dt, (double)batch / dt, (double)cuda_model_device_bytes(cm) / (1 << 20),
           (double)(total_b - free_b) / (1 << 20), loss, dev);

    if (cpu_steps > 0) {
        double c0 = clock_mono_s();
        for (int s = 0; s < cpu_steps; s++) {
            model_forward(m, x, y, batch, 1);
            model_backward(m, x, y, batch, 1.0f);
            sgd_update(m->nparams, m->params, m->grads, m->momentum, 0.01f, 0.9f, 0, 5e-4f, 1.0f);
        }
        const double cdt = (clock_mono_s() - c0) / cpu_steps;
        printf("cpu_bench model=%s batch=%d steps=%d step_ms=%.3f samples_per_s=%.0f speedup=%.1fx\n", name, batch,
               cpu_steps, 1e3 * cdt, (double)batch / cdt, cdt / dt);
    }
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "gpu_bench %s: %s\n", name, cuda_model_error(cm));
out:
    cuda_model_free(cm);
    model_free(m);
    free(x);
    free(y);
    return rc;
}
#endif

int main(int argc, char **argv)
{
    int batch = 256, steps = 50, warmup = 5, cpu_steps = 0;
    const char *models[16];
    int nmodels = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) batch = atoi(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--cpu-steps") == 0 && i + 1 < argc) cpu_steps = atoi(argv[++i]);
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: %s [--batch N] [--steps N] [--warmup N] [--cpu-steps N] [model ...]\n", argv[0]);
            return 2;
        } else if (nmodels < 16) models[nmodels++] = argv[i];
    }
    if (nmodels == 0) {
        models[nmodels++] = "lenet5";
        models[nmodels++] = "resnet20";
    }
    if (batch < 1 || steps < 1 || warmup < 0 || cpu_steps < 0) {
        fprintf(stderr, "gpu_bench: batch and steps must be >= 1\n");
        return 2;
    }
#ifndef PACER_WITH_CUDA
    (void)models;
    printf("skip: built without CUDA (nvcc or cuDNN missing at build time)\n");
    return 0;
#else
    const int device = cuda_pick_device();
    if (device < 0) {
        printf("skip: no CUDA device visible\n");
        return 0;
    }
    int failed = 0;
    for (int i = 0; i < nmodels; i++) failed |= bench_model(models[i], batch, steps, warmup, cpu_steps, device) != 0;
    return failed ? 1 : 0;
#endif
}
