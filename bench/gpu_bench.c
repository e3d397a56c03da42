/* bench/gpu_bench.c - training throughput of the CUDA backend (one GPU, one process).
 *
 *   build/bench/gpu_bench [--batch N] [--steps N] [--warmup N] [--cpu-steps N] [model ...]
 *
 * Models default to lenet5 and resnet20, batch 256; gpt-char and gpt2 are language models
 * (create_model below: their batch is windows, each with a label per position, and a
 * second line gives tokens_per_s). A step is exactly what a worker does on
 * a GPU rank (worker/train.c), with its host buffers page-locked as the worker's are:
 *   path=local     sgd, local-sgd: cuda_model_train_step (batch up, forward, backward,
 *                  gradient down into the host's gradient buffer, one wait), then
 *                  cuda_model_sgd on the device's own gradient;
 *   path=exchange  ssgd, hier-bsp: the same, then the (here not reduced) host gradient
 *                  uploaded again before cuda_model_sgd, as after an allreduce;
 * each with momentum 0.9 and weight decay 5e-4, timed until the update has finished. The
 * batch is random but fixed (data loading and MPI are not measured). One line per model and
 * path:
 *   gpu_bench model=M batch=B params=N path=P steps=S step_ms=... samples_per_s=... model_mib=...
 *             device_used_mib=... loss=... device="..."
 * model_mib is what cuda_model_create allocated; device_used_mib is the device's used memory
 * (total - free) with the model loaded: CUDA context, cuDNN and cuBLAS included. Then
 *   gpu_bench model=M replan_ms=... cached_ms=...
 * the time cuda_model_prepare_batch takes for a batch size never seen (cuDNN's algorithm
 * choice for every convolution: what a re-plan of dynamic batching costs, outside the step)
 * and for one seen before.
 * --cpu-steps N also times N steps of the CPU reference (model_forward, model_backward,
 * sgd_update) on the same batch for comparison (0, the default, skips it).
 *
 * PACER_CUDA_CONV=any: cuDNN's first-ranked convolution algorithms of any kind
 * (kernels/cuda/conv.cu's conv_any), to measure what the default's restrictions cost.
 * PACER_CUDA_PROFILE=1 in the environment: each model's device time per layer, forward and
 * backward, averaged over its training steps, to stderr when the model is freed
 * ("cuda profile M: layer I kind K out CxHxW: forward ... ms, backward ... ms";
 * model/model_cuda.cu's events around each layer), where no Nsight Systems runs.
 *
 * Without a CUDA build or a usable GPU it prints "skip: " and the reason, and exits 0; with
 * PACER_REQUIRE_GPU=1 it exits 1 instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_cuda.h"
#include "clock.h"
#include "gpt.h"
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

/* Whole pages: page-locked buffers must not share one. */
static void *page_alloc(size_t bytes) { return aligned_alloc(4096, (bytes + 4095) / 4096 * 4096); }

/* steps of one path; returns seconds per step, or -1 */
static double time_path(cuda_model_t *cm, model_t *m, const float *x, const int32_t *y, int batch, int steps,
                        int exchange, float *loss)
{
    double t0 = clock_mono_s();
    for (int s = 0; s < steps; s++) {
        if (cuda_model_train_step(cm, x, y, batch, 1.0f, m->grads, loss) != 0) return -1;
        if (exchange && cuda_model_upload_grads(cm, m->grads) != 0) return -1;
        if (cuda_model_sgd(cm, 0.01f, 0.9f, 0, 5e-4f, 1.0f, 0.0f) != 0 || cuda_model_sync(cm) != 0) return -1;
    }
    return (clock_mono_s() - t0) / (steps > 0 ? steps : 1);
}

/* The language models by name: nanoGPT's shakespeare_char shape (6 x 384, 6 heads, block
 * 256, 65 characters) and GPT-2 124M's (12 x 768, 12 heads, block 1024, vocabulary 50257),
 * with biases and tied embeddings and no dropout, as bench/torch_gpu_bench.py builds them;
 * any other name is the catalog's. */
static int create_model(const char *name, int batch, model_t **m, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        model_gpt_t g;
    } gpts[] = {
        {"gpt-char", {.layers = 6, .heads = 6, .embd = 384, .block = 256, .vocab = 65, .bias = 1, .tie = 1}},
        {"gpt2", {.layers = 12, .heads = 12, .embd = 768, .block = 1024, .vocab = 50257, .bias = 1, .tie = 1}},
    };
    for (size_t i = 0; i < sizeof gpts / sizeof gpts[0]; i++) {
        if (strcmp(name, gpts[i].name) != 0) continue;
        if (model_create_gpt(name, &gpts[i].g, batch, m, err, errlen) != 0) return -1;
        model_gpt_init(*m, gpts[i].g.layers, 42);
        return 0;
    }
    if (model_create(name, batch, m, err, errlen) != 0) return -1;
    model_init_params(*m, 42);
    return 0;
}

static int bench_model(const char *name, int batch, int steps, int warmup, int cpu_steps, int device)
{
    char err[512];
    model_t *m = NULL;
    if (create_model(name, batch, &m, err, sizeof err) != 0) {
        fprintf(stderr, "gpu_bench: %s\n", err);
        return -1;
    }
    /* a language model reads token ids (float-coded) and has a label per position */
    const int tokens = m->layers[0].kind == LAYER_EMBED;
    const size_t in = (size_t)m->C * m->H * m->W, labels = (size_t)batch * m->positions;
    float *x = page_alloc((size_t)batch * in * sizeof(float));
    int32_t *y = page_alloc(labels * sizeof(int32_t));
    if (!x || !y) {
        fprintf(stderr, "gpu_bench: out of memory\n");
        free(x);
        free(y);
        model_free(m);
        return -1;
    }
    for (size_t i = 0; i < (size_t)batch * in; i++)
        x[i] = tokens ? (float)((int)(frand() * (float)m->num_classes) % m->num_classes) : 2.0f * frand() - 1.0f;
    for (size_t b = 0; b < labels; b++) y[b] = (int32_t)(frand() * (float)m->num_classes) % m->num_classes;

    int rc = -1;
    cuda_model_t *cm = cuda_model_create(m, device, err, sizeof err);
    if (!cm) {
        fprintf(stderr, "gpu_bench: %s\n", err);
        goto out;
    }
    if (cuda_model_upload(cm, m) != 0) goto fail;
    /* as the worker: its batch, params and grads page-locked (worker/train.c) */
    if (cuda_model_host_register(cm, x, (size_t)batch * in * sizeof(float)) != 0 ||
        cuda_model_host_register(cm, y, labels * sizeof(int32_t)) != 0 ||
        cuda_model_host_register(cm, m->params, m->nparams * sizeof(float)) != 0 ||
        cuda_model_host_register(cm, m->grads, (m->nparams + MODEL_GRAD_EXTRA) * sizeof(float)) != 0)
        goto fail;
    float loss = 0.0f;
    double dt = 0.0;
    if (time_path(cm, m, x, y, batch, warmup, 0, &loss) < 0) goto fail;
    size_t free_b = 0, total_b = 0;
    cuda_memory_info(&free_b, &total_b);
    char dev[256];
    cuda_device_name(device, dev, sizeof dev);
    static const char *const paths[] = {"local", "exchange"};
    for (int p = 0; p < 2; p++) {
        if ((dt = time_path(cm, m, x, y, batch, steps, p, &loss)) < 0) goto fail;
        printf("gpu_bench model=%s batch=%d params=%zu path=%s steps=%d step_ms=%.3f samples_per_s=%.0f "
               "model_mib=%.1f device_used_mib=%.0f loss=%.4f device=\"%s\"\n",
               name, batch, m->nparams, paths[p], steps, 1e3 * dt, (double)batch / dt,
               (double)cuda_model_device_bytes(cm) / (1 << 20), (double)(total_b - free_b) / (1 << 20), loss, dev);
        if (m->positions > 1)
            printf("gpu_bench model=%s path=%s tokens_per_s=%.0f\n", name, paths[p], (double)labels / dt);
    }
    if (batch > 1) {
        /* a batch size never seen, then one seen before */
        double r0 = clock_mono_s();
        if (cuda_model_prepare_batch(cm, batch - 1) != 0) goto fail;
        double r1 = clock_mono_s();
        if (cuda_model_prepare_batch(cm, batch) != 0) goto fail;
        double r2 = clock_mono_s();
        printf("gpu_bench model=%s replan_ms=%.3f cached_ms=%.3f\n", name, 1e3 * (r1 - r0), 1e3 * (r2 - r1));
    }

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
    const char *req = getenv("PACER_REQUIRE_GPU");
    const int required = req && strcmp(req, "1") == 0;
#ifndef PACER_WITH_CUDA
    (void)models;
    printf("%s: built without CUDA (nvcc or cuDNN missing at build time)\n", required ? "FAIL" : "skip");
    return required ? 1 : 0;
#else
    cuda_probe_t probe;
    if (cuda_probe(-1, &probe) != CUDA_PROBE_OK) {
        printf("%s: %s\n", required ? "FAIL" : "skip", probe.reason);
        return required ? 1 : 0;
    }
    const int device = probe.device;
    int failed = 0;
    for (int i = 0; i < nmodels; i++) failed |= bench_model(models[i], batch, steps, warmup, cpu_steps, device) != 0;
    return failed ? 1 : 0;
#endif
}
