/* model/model_cuda.cu - the device model behind model/backend_cuda.h. It is part of the
 * shared object libpacer_cuda.so and reached only through the table its one exported
 * function returns (backend_cuda_abi.h), so every function here is static but that one.
 *
 * A cuda_model_t keeps a copy of the host model's layer list (model_t with its pointers
 * cleared) and walks it exactly as model/model.c does: forward in order, backward in
 * reverse with input gradients accumulating, every layer output gradient zeroed for the
 * first B samples before the loss writes the last one. All offsets are the host's, so a
 * tensor is at the same offset in m->params and in the device params. Every layer kind of
 * model.h runs here, in every geometry the CPU takes; dropout draws its masks from the same
 * key as model.c (dropout_key(dropout_seed, dropout_step, layer)): the device model counts
 * its training forwards in meta.dropout_step, starting from the host's at cuda_model_upload
 * and handing it back at cuda_model_download_params, so a rank's masks are those the CPU
 * would draw in its place.
 *
 * Memory: one cudaMalloc per fused buffer (params, grads + MODEL_GRAD_EXTRA, momentum,
 * buffers), one per arena (activations, their gradients, batch-norm saved statistics,
 * maxpool argmax, softmax probabilities), the input batch, one convolution workspace shared
 * by every layer (the largest any layer's algorithms need at max_batch), one layer-norm
 * workspace likewise (cuda_layernorm_workspace), and pinned host
 * staging for the batch, the gradients, the logits and the loss. Nothing is allocated after
 * cuda_model_create; a step enqueues kernels and copies on one stream and synchronises once.
 * A caller's own host buffers can be page-locked too (cuda_model_host_register): the worker
 * registers its fused params and grads and its batch buffers, so their copies are DMA
 * straight from and into them, with no pageable bounce and no extra host copy.
 *
 * The device probe and the build facts the table also carries are model/cuda_probe.cu's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_abi.h"
#include "cuda_common.h"
#include "cuda_probe.h"

struct cuda_model {
    cuda_ctx_t *ctx;
    model_t meta;        /* the host model's sizes; layers and tensors are copies owned here,
                            every other pointer NULL */
    float *params;       /* (nparams) */
    float *grads;        /* (nparams + MODEL_GRAD_EXTRA) */
    float *momentum;     /* (nparams) */
    float *moment2;      /* (nparams) AdamW's second moment when the host model has one, else NULL */
    float *buffers;      /* (nbuffers) */
    float *acts, *dacts; /* (act_floats) each */
    float *aux;          /* (aux_floats) bn saved mean / invstd */
    int32_t *argmax;     /* (argmax_ints) */
    float *probs;        /* (max_batch * positions, num_classes): a row per label */
    float *x;            /* (max_batch, C, H, W) */
    int32_t *y;          /* (max_batch * positions): a label per position */
    float *loss;         /* (1) */
    float *scale;        /* (1) clipped gradient scale for cuda_model_sgd */
    float *bn_dx;        /* (max_batch, C, H, W) where a batch norm reads the model input:
                            cuDNN always writes an input gradient, which nothing reads */
    void *ws;
    size_t ws_bytes;
    void *ln_ws; /* the layer norms' backward workspace: the largest any needs at max_batch */
    size_t ln_ws_bytes;
    void *embed_ws;           /* the embeddings' backward workspace (their rows' chains) at max_batch */
    cuda_conv_plan_t **plans; /* (nlayers): a convolution's plan, NULL for other layers */
    float *h_x;               /* pinned (max_batch, C, H, W) */
    int32_t *h_y;             /* pinned (max_batch * positions): a label per position */
    float *h_grads;           /* pinned (nparams + MODEL_GRAD_EXTRA) */
    float *h_logits;          /* pinned (max_batch * positions, num_classes) */
    float *h_loss;            /* pinned (1) */
    struct {
        void *p;
        size_t bytes;
    } pinned[8]; /* caller buffers page-locked by host_register */
    int npinned;
    size_t in_floats; /* C*H*W of one sample */
    size_t aux_floats, argmax_ints;
    size_t device_bytes;
    int fwd_B; /* batch of the last training forward with labels; 0: none */
    void (*progress)(void *ctx);
    void *progress_ctx;
    struct layer_profile *prof; /* PACER_CUDA_PROFILE=1 at creation, else NULL */
    int prof_active;            /* inside a training step that is timed */
};

/* The device time of each layer's forward and backward in the training steps
 * (PACER_CUDA_PROFILE=1 when the model is created: bench/gpu_bench's per-layer profile,
 * where no Nsight Systems runs): events around every layer, read after each step's one
 * wait, the table written to stderr when the model is freed, outside every step. Without
 * the variable it costs a branch a layer. */
struct layer_profile {
    cudaEvent_t *fwd, *bwd;  /* (nlayers + 1) boundaries each; bwd[0] before the last layer */
    double *fwd_ms, *bwd_ms; /* (nlayers) summed over the steps */
    long steps;
};

static void profile_free(cuda_model_t *cm)
{
    struct layer_profile *p = cm->prof;
    if (!p) return;
    const int n = cm->meta.nlayers;
    if (p->steps > 0) {
        double tf = 0.0, tb = 0.0;
        for (int i = 0; i < n; i++) tf += p->fwd_ms[i], tb += p->bwd_ms[i];
        fprintf(stderr, "cuda profile %s: %ld training steps at batch %d: forward %.3f ms, backward %.3f ms a step\n",
                cm->meta.name, p->steps, cm->fwd_B, tf / p->steps, tb / p->steps);
        for (int i = 0; i < n; i++) {
            const layer_t *l = &cm->meta.layers[i];
            fprintf(stderr, "cuda profile %s: layer %d kind %d out %dx%dx%d: forward %.4f ms, backward %.4f ms\n",
                    cm->meta.name, i, (int)l->kind, l->OC, l->OH, l->OW, p->fwd_ms[i] / p->steps,
                    p->bwd_ms[i] / p->steps);
        }
    }
    for (int i = 0; i <= n; i++) {
        if (p->fwd && p->fwd[i]) cudaEventDestroy(p->fwd[i]);
        if (p->bwd && p->bwd[i]) cudaEventDestroy(p->bwd[i]);
    }
    free(p->fwd);
    free(p->bwd);
    free(p->fwd_ms);
    free(p->bwd_ms);
    free(p);
    cm->prof = NULL;
}

/* 0, or -1 (the profile is then left off: it is a measurement, never a failure) */
static int profile_create(cuda_model_t *cm)
{
    const char *v = getenv("PACER_CUDA_PROFILE");
    if (!v || strcmp(v, "1") != 0) return 0;
    const int n = cm->meta.nlayers;
    struct layer_profile *p = (struct layer_profile *)calloc(1, sizeof *p);
    if (!p) return -1;
    cm->prof = p;
    p->fwd = (cudaEvent_t *)calloc((size_t)n + 1, sizeof *p->fwd);
    p->bwd = (cudaEvent_t *)calloc((size_t)n + 1, sizeof *p->bwd);
    p->fwd_ms = (double *)calloc((size_t)n, sizeof *p->fwd_ms);
    p->bwd_ms = (double *)calloc((size_t)n, sizeof *p->bwd_ms);
    if (!p->fwd || !p->bwd || !p->fwd_ms || !p->bwd_ms) goto fail;
    for (int i = 0; i <= n; i++)
        if (cudaEventCreate(&p->fwd[i]) != cudaSuccess || cudaEventCreate(&p->bwd[i]) != cudaSuccess) goto fail;
    return 0;
fail:
    profile_free(cm);
    return -1;
}

/* After a timed step's wait: each layer's share. */
static void profile_add(cuda_model_t *cm)
{
    struct layer_profile *p = cm->prof;
    const int n = cm->meta.nlayers;
    float ms;
    for (int i = 0; i < n; i++) {
        if (cudaEventElapsedTime(&ms, p->fwd[i], p->fwd[i + 1]) == cudaSuccess) p->fwd_ms[i] += ms;
        /* backward runs the layers from the last: layer i between bwd[n - 1 - i] and the next */
        if (cudaEventElapsedTime(&ms, p->bwd[n - 1 - i], p->bwd[n - i]) == cudaSuccess) p->bwd_ms[i] += ms;
    }
    p->steps++;
}

static void cuda_model_free(cuda_model_t *cm);

/* Whether [p, p + bytes) is page-locked host memory this model may DMA from or into. */
static int is_pinned(const cuda_model_t *cm, const void *p, size_t bytes)
{
    const char *c = (const char *)p;
    for (int i = 0; i < cm->npinned; i++) {
        const char *b = (const char *)cm->pinned[i].p;
        if (c >= b && c + bytes <= b + cm->pinned[i].bytes) return 1;
    }
    return 0;
}

/* A call the model cannot serve (bad batch size, wrong order): recorded like a CUDA error. */
#define FAIL(cm, what, hint) pacer_cuda_fail((cm)->ctx, __FILE__, __LINE__, (what), "invalid call", (hint))

static int dev_alloc(cuda_model_t *cm, void **p, size_t bytes)
{
    CUDA_CHECK(cm->ctx, cudaMalloc(p, bytes ? bytes : 256), "out of device memory: try a smaller batch");
    /* on the model's stream: a plain cudaMemset runs on the legacy default stream, which a
     * non-blocking stream does not wait for */
    CUDA_CHECK(cm->ctx, cudaMemsetAsync(*p, 0, bytes ? bytes : 256, cm->ctx->stream), "memset");
    cm->device_bytes += bytes;
    return 0;
}

static int host_alloc(cuda_model_t *cm, void **p, size_t bytes)
{
    CUDA_CHECK(cm->ctx, cudaHostAlloc(p, bytes ? bytes : 256, cudaHostAllocDefault), "out of pinned host memory");
    memset(*p, 0, bytes ? bytes : 256);
    return 0;
}

static void layernorm_geometry(const layer_t *l, int B, int *rows, int *D);
static size_t embed_rows(const layer_t *l, int B);

static int model_setup(cuda_model_t *cm, const model_t *m)
{
    model_t *mm = &cm->meta;
    const size_t F = sizeof(float);
    /* The host builder keeps the arena sizes to itself; recompute them from the layers. */
    for (int i = 0; i < mm->nlayers; i++) {
        const layer_t *l = &mm->layers[i];
        if (l->kind == LAYER_BN && l->aux_off + 2 * (size_t)l->C > cm->aux_floats)
            cm->aux_floats = l->aux_off + 2 * (size_t)l->C;
        if (l->kind == LAYER_MAXPOOL) {
            size_t end = l->aux_off + (size_t)mm->max_batch * l->OC * l->OH * l->OW;
            if (end > cm->argmax_ints) cm->argmax_ints = end;
        }
    }
    cm->in_floats = (size_t)m->C * m->H * m->W;
    /* the loss's rows: one per label, positions of them per sample (a language model's
     * window), as model_forward's softmax_xent_forward over B * positions rows */
    const size_t maxb = (size_t)mm->max_batch, ncls = (size_t)mm->num_classes, rows = maxb * (size_t)mm->positions;
    if (dev_alloc(cm, (void **)&cm->params, mm->nparams * F) ||
        dev_alloc(cm, (void **)&cm->grads, (mm->nparams + MODEL_GRAD_EXTRA) * F) ||
        dev_alloc(cm, (void **)&cm->momentum, mm->nparams * F) ||
        (m->moment2 && dev_alloc(cm, (void **)&cm->moment2, mm->nparams * F)) ||
        dev_alloc(cm, (void **)&cm->buffers, mm->nbuffers * F) ||
        dev_alloc(cm, (void **)&cm->acts, mm->act_floats * F) ||
        dev_alloc(cm, (void **)&cm->dacts, mm->act_floats * F) || dev_alloc(cm, (void **)&cm->aux, cm->aux_floats * F) ||
        dev_alloc(cm, (void **)&cm->argmax, cm->argmax_ints * sizeof(int32_t)) ||
        dev_alloc(cm, (void **)&cm->probs, rows * ncls * F) ||
        dev_alloc(cm, (void **)&cm->x, maxb * cm->in_floats * F) ||
        dev_alloc(cm, (void **)&cm->y, rows * sizeof(int32_t)) || dev_alloc(cm, (void **)&cm->loss, F) ||
        dev_alloc(cm, (void **)&cm->scale, F))
        return -1;
    for (int i = 0; i < mm->nlayers; i++)
        if (mm->layers[i].kind == LAYER_BN && mm->layers[i].in < 0) {
            if (dev_alloc(cm, (void **)&cm->bn_dx, maxb * cm->in_floats * F)) return -1;
            break;
        }

    /* Convolution plans for max_batch; the shared workspace is the largest need. */
    size_t ws = 0;
    for (int i = 0; i < mm->nlayers; i++) {
        if (mm->layers[i].kind != LAYER_CONV) continue;
        if (cuda_conv2d_plan_create(cm->ctx, &mm->layers[i].op.conv, mm->max_batch, 0, &cm->plans[i]) != 0) return -1;
        size_t need = cuda_conv2d_plan_workspace(cm->plans[i]);
        if (need > ws) ws = need;
    }
    cm->ws_bytes = ws;
    if (dev_alloc(cm, &cm->ws, ws)) return -1;
    size_t ln = 0;
    for (int i = 0; i < mm->nlayers; i++) {
        if (mm->layers[i].kind != LAYER_LAYERNORM) continue;
        int rows, D;
        layernorm_geometry(&mm->layers[i], mm->max_batch, &rows, &D);
        const size_t need = cuda_layernorm_workspace(rows, D);
        if (need > ln) ln = need;
    }
    cm->ln_ws_bytes = ln;
    if (ln && dev_alloc(cm, &cm->ln_ws, ln)) return -1;
    size_t emb = 0;
    for (int i = 0; i < mm->nlayers; i++) {
        const layer_t *l = &mm->layers[i];
        const size_t need = l->kind == LAYER_EMBED ? cuda_embed_workspace(embed_rows(l, mm->max_batch)) : 0;
        if (need > emb) emb = need;
    }
    if (emb && dev_alloc(cm, &cm->embed_ws, emb)) return -1;

    if (host_alloc(cm, (void **)&cm->h_x, maxb * cm->in_floats * F) ||
        host_alloc(cm, (void **)&cm->h_y, rows * sizeof(int32_t)) ||
        host_alloc(cm, (void **)&cm->h_grads, (mm->nparams + MODEL_GRAD_EXTRA) * F) ||
        host_alloc(cm, (void **)&cm->h_logits, rows * ncls * F) || host_alloc(cm, (void **)&cm->h_loss, F))
        return -1;
    return 0;
}

/* The layers this backend runs: every kind of model.h in every geometry ops.h takes (the
 * table CUDA_OPS below). What it cannot run is refused with the layer named, never run
 * without it: a kind whose row is empty ("not on the GPU"), and a geometry a row's refuse
 * names (a batch-norm epsilon below this cuDNN's CUDNN_BN_MIN_EPSILON: 0 in cuDNN 9; an
 * older cuDNN had a positive minimum). */
static const char *cuda_layer_unsupported(const layer_t *l);

static cuda_model_t *cuda_model_create(const model_t *m, int device, char *err, size_t errlen)
{
    for (int i = 0; i < m->nlayers; i++) {
        const char *what = cuda_layer_unsupported(&m->layers[i]);
        if (what) {
            snprintf(err, errlen, "cuda model %s: layer %d (%s) is not supported by the CUDA backend", m->name, i, what);
            return NULL;
        }
    }
    cuda_model_t *cm = (cuda_model_t *)calloc(1, sizeof *cm);
    if (!cm) {
        snprintf(err, errlen, "cuda model %s: out of host memory", m->name);
        return NULL;
    }
    if (m->nlayers < 1 || m->max_batch < 1) {
        snprintf(err, errlen, "cuda model %s: empty model", m->name);
        free(cm);
        return NULL;
    }
    if (cuda_ctx_create(device, &cm->ctx, err, errlen) != 0) {
        free(cm);
        return NULL;
    }
    cm->meta = *m;
    /* the copy keeps the layout only: no host pointer of the caller's may be followed
     * from the device side, and the layer and tensor lists are this model's own */
    model_t *mm = &cm->meta;
    mm->params = mm->grads = mm->momentum = mm->moment2 = mm->buffers = NULL;
    mm->acts = mm->dacts = mm->aux = mm->ws = mm->probs = mm->dinput = NULL;
    mm->argmax = NULL;
    mm->progress = NULL;
    mm->progress_ctx = NULL;
    mm->grads_computed = NULL;
    /* the host's fusions and frozen tensors: the device runs every layer on its own and
     * computes every gradient */
    mm->plan = NULL;
    mm->layers = (layer_t *)malloc((size_t)m->nlayers * sizeof *mm->layers);
    mm->tensors = (tensor_info_t *)malloc((size_t)(m->ntensors ? m->ntensors : 1) * sizeof *mm->tensors);
    cm->plans = (cuda_conv_plan_t **)calloc((size_t)m->nlayers, sizeof *cm->plans);
    if (!mm->layers || !mm->tensors || !cm->plans) {
        snprintf(err, errlen, "cuda model %s: out of host memory", m->name);
        cuda_model_free(cm);
        return NULL;
    }
    memcpy(mm->layers, m->layers, (size_t)m->nlayers * sizeof *mm->layers);
    memcpy(mm->tensors, m->tensors, (size_t)m->ntensors * sizeof *mm->tensors);
    if (model_setup(cm, m) != 0) {
        snprintf(err, errlen, "cuda model %s (batch %d) on device %d: %s", m->name, m->max_batch, device, cm->ctx->err);
        cuda_model_free(cm);
        return NULL;
    }
    if (profile_create(cm) != 0)
        fprintf(stderr, "cuda model %s: PACER_CUDA_PROFILE: no events; not profiled\n", m->name);
    return cm;
}

static void cuda_model_free(cuda_model_t *cm)
{
    if (!cm) return;
    if (cm->ctx) cudaStreamSynchronize(cm->ctx->stream);
    profile_free(cm);
    for (int i = 0; cm->plans && i < cm->meta.nlayers; i++) cuda_conv2d_plan_free(cm->plans[i]);
    free(cm->plans);
    free(cm->meta.layers);
    free(cm->meta.tensors);
    cudaFree(cm->params);
    cudaFree(cm->grads);
    cudaFree(cm->momentum);
    cudaFree(cm->moment2);
    cudaFree(cm->buffers);
    cudaFree(cm->acts);
    cudaFree(cm->dacts);
    cudaFree(cm->aux);
    cudaFree(cm->argmax);
    cudaFree(cm->probs);
    cudaFree(cm->x);
    cudaFree(cm->y);
    cudaFree(cm->loss);
    cudaFree(cm->scale);
    cudaFree(cm->bn_dx);
    cudaFree(cm->ws);
    cudaFree(cm->ln_ws);
    cudaFree(cm->embed_ws);
    cudaFreeHost(cm->h_x);
    cudaFreeHost(cm->h_y);
    cudaFreeHost(cm->h_grads);
    cudaFreeHost(cm->h_logits);
    cudaFreeHost(cm->h_loss);
    for (int i = 0; i < cm->npinned; i++) cudaHostUnregister(cm->pinned[i].p);
    cuda_ctx_free(cm->ctx);
    free(cm);
}

static const char *cuda_model_error(const cuda_model_t *cm) { return cm ? cuda_ctx_error(cm->ctx) : "no CUDA model"; }

static int same_layout(cuda_model_t *cm, const model_t *m)
{
    if (strcmp(m->name, cm->meta.name) != 0 || m->nparams != cm->meta.nparams || m->nbuffers != cm->meta.nbuffers)
        return FAIL(cm, "cuda_model_upload/download", "the host model is not the one this device model was built from");
    return 0;
}

static int cuda_model_upload(cuda_model_t *cm, const model_t *m)
{
    if (same_layout(cm, m) != 0) return -1;
    cudaStream_t s = cm->ctx->stream;
    const size_t F = sizeof(float);
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->params, m->params, m->nparams * F, cudaMemcpyHostToDevice, s),
               "upload params");
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->momentum, m->momentum, m->nparams * F, cudaMemcpyHostToDevice, s),
               "upload momentum");
    if (cm->moment2 && m->moment2)
        CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->moment2, m->moment2, m->nparams * F, cudaMemcpyHostToDevice, s),
                   "upload second moment");
    if (m->nbuffers)
        CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->buffers, m->buffers, m->nbuffers * F, cudaMemcpyHostToDevice, s),
                   "upload buffers");
    /* the dropout masks go on from the host's (a resumed run's step) */
    cm->meta.dropout_seed = m->dropout_seed;
    cm->meta.dropout_step = m->dropout_step;
    return cuda_ctx_sync(cm->ctx);
}

static int cuda_model_upload_params(cuda_model_t *cm, const float *params)
{
    cudaStream_t s = cm->ctx->stream;
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->params, params, cm->meta.nparams * sizeof(float), cudaMemcpyHostToDevice, s),
               "upload params");
    return cuda_ctx_sync(cm->ctx);
}

static int cuda_model_download_params(cuda_model_t *cm, model_t *m)
{
    if (same_layout(cm, m) != 0) return -1;
    cudaStream_t s = cm->ctx->stream;
    const size_t F = sizeof(float);
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(m->params, cm->params, m->nparams * F, cudaMemcpyDeviceToHost, s),
               "download params");
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(m->momentum, cm->momentum, m->nparams * F, cudaMemcpyDeviceToHost, s),
               "download momentum");
    if (cm->moment2 && m->moment2)
        CUDA_CHECK(cm->ctx, cudaMemcpyAsync(m->moment2, cm->moment2, m->nparams * F, cudaMemcpyDeviceToHost, s),
                   "download second moment");
    if (m->nbuffers)
        CUDA_CHECK(cm->ctx, cudaMemcpyAsync(m->buffers, cm->buffers, m->nbuffers * F, cudaMemcpyDeviceToHost, s),
                   "download buffers");
    m->dropout_step = cm->meta.dropout_step;
    return cuda_ctx_sync(cm->ctx);
}

static int cuda_model_download_buffers(cuda_model_t *cm, float *host_buffers)
{
    if (!cm->meta.nbuffers) return 0;
    cudaStream_t s = cm->ctx->stream;
    CUDA_CHECK(cm->ctx,
               cudaMemcpyAsync(host_buffers, cm->buffers, cm->meta.nbuffers * sizeof(float), cudaMemcpyDeviceToHost, s),
               "download buffers");
    return cuda_ctx_sync(cm->ctx);
}

static int cuda_model_upload_buffers(cuda_model_t *cm, const float *host_buffers)
{
    if (!cm->meta.nbuffers) return 0;
    CUDA_CHECK(cm->ctx,
               cudaMemcpyAsync(cm->buffers, host_buffers, cm->meta.nbuffers * sizeof(float), cudaMemcpyHostToDevice,
                               cm->ctx->stream),
               "upload buffers");
    return cuda_ctx_sync(cm->ctx);
}

static int cuda_model_host_register(cuda_model_t *cm, void *p, size_t bytes)
{
    if (!p || !bytes || is_pinned(cm, p, bytes)) return 0;
    const int max = (int)(sizeof cm->pinned / sizeof cm->pinned[0]);
    if (cm->npinned == max) return FAIL(cm, "cuda_model_host_register", "at most 8 registered buffers");
    CUDA_CHECK(cm->ctx, cudaHostRegister(p, bytes, cudaHostRegisterDefault),
               "page-locking a host buffer (it must not share a page with another registered one)");
    cm->pinned[cm->npinned].p = p;
    cm->pinned[cm->npinned].bytes = bytes;
    cm->npinned++;
    return 0;
}

static int cuda_model_prepare_batch(cuda_model_t *cm, int B)
{
    if (B < 1 || B > cm->meta.max_batch) return FAIL(cm, "cuda_model_prepare_batch", "batch must be in [1, max_batch]");
    for (int i = 0; i < cm->meta.nlayers; i++)
        if (cm->plans[i] && cuda_conv2d_plan_prepare(cm->ctx, cm->plans[i], B, cm->ws_bytes) != 0) return -1;
    return 0;
}

static float *cuda_model_grads_host(cuda_model_t *cm) { return cm->h_grads; }
static float *cuda_model_input_host(cuda_model_t *cm) { return cm->h_x; }
static int32_t *cuda_model_labels_host(cuda_model_t *cm) { return cm->h_y; }
static float *cuda_model_device_params(cuda_model_t *cm) { return cm->params; }
static float *cuda_model_device_grads(cuda_model_t *cm) { return cm->grads; }
static size_t cuda_model_device_bytes(const cuda_model_t *cm) { return cm->device_bytes; }

static void cuda_model_set_progress(cuda_model_t *cm, void (*fn)(void *ctx), void *ctx)
{
    cm->progress = fn;
    cm->progress_ctx = ctx;
}

static int enqueue_grads_download(cuda_model_t *cm, float *dst)
{
    CUDA_CHECK(cm->ctx,
               cudaMemcpyAsync(dst ? dst : cm->h_grads, cm->grads, cm->meta.nparams * sizeof(float),
                               cudaMemcpyDeviceToHost, cm->ctx->stream),
               "download grads");
    return 0;
}

static int cuda_model_download_grads(cuda_model_t *cm, float *host_grads, int async)
{
    if (enqueue_grads_download(cm, host_grads) != 0) return -1;
    return async ? 0 : cuda_ctx_sync(cm->ctx);
}

static int cuda_model_upload_grads(cuda_model_t *cm, const float *host_grads)
{
    cudaStream_t s = cm->ctx->stream;
    CUDA_CHECK(cm->ctx,
               cudaMemcpyAsync(cm->grads, host_grads, cm->meta.nparams * sizeof(float), cudaMemcpyHostToDevice, s),
               "upload grads");
    return cuda_ctx_sync(cm->ctx);
}

static int cuda_model_sync(cuda_model_t *cm) { return cuda_ctx_sync(cm->ctx); }

/* ---- forward / backward ----------------------------------------------------------------- */

static const float *layer_input(const cuda_model_t *cm, int in)
{
    return in < 0 ? cm->x : cm->acts + cm->meta.layers[in].out_off;
}

static const float *logits_dev(const cuda_model_t *cm)
{
    return cm->acts + cm->meta.layers[cm->meta.nlayers - 1].out_off;
}

/* ---- the CUDA table: one row per layer kind, as model/op_table.c's ---------------------- */

/* One layer's step on the model's stream (model/op_table.h's, on the device): 0, or -1 with
 * the CUDA error recorded. The device model runs no fused steps: every layer writes its own
 * output and every output gradient is zeroed before the backward, so readers only add. */
typedef int (*cuda_op_forward_fn)(cuda_model_t *cm, int i, int B, int train);
typedef int (*cuda_op_backward_fn)(cuda_model_t *cm, int i, int B);

typedef struct {
    layer_kind_t kind; /* the row's own index (checked at compile time below) */
    cuda_op_forward_fn forward;
    cuda_op_backward_fn backward;
    /* NULL, or what of this layer's geometry the backend cannot run (NULL: it can); on an
     * empty row (forward NULL), the refusal that names its operator */
    const char *(*refuse)(const layer_t *l);
} cuda_op_t;

static const layer_t *layer_of(const cuda_model_t *cm, int i) { return &cm->meta.layers[i]; }
static float *out_of(const cuda_model_t *cm, int i) { return cm->acts + cm->meta.layers[i].out_off; }
static float *dout_of(const cuda_model_t *cm, int i) { return cm->dacts + cm->meta.layers[i].out_off; }
static float *dinput_of(const cuda_model_t *cm, int in)
{
    return in < 0 ? NULL : cm->dacts + cm->meta.layers[in].out_off;
}
static size_t out_count(const layer_t *l, int B) { return (size_t)B * l->OC * l->OH * l->OW; }

static int conv_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    const float *bias = l->has_bias ? cm->params + l->b_off : NULL;
    return cuda_conv2d_forward(cm->ctx, cm->plans[i], B, layer_input(cm, l->in), cm->params + l->w_off, bias,
                               out_of(cm, i), cm->ws, cm->ws_bytes);
}
static int conv_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    float *db = l->has_bias ? cm->grads + l->b_off : NULL;
    return cuda_conv2d_backward(cm->ctx, cm->plans[i], B, layer_input(cm, l->in), cm->params + l->w_off, dout_of(cm, i),
                                dinput_of(cm, l->in), cm->grads + l->w_off, db, cm->ws, cm->ws_bytes);
}

static int maxpool_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_maxpool2d_forward(cm->ctx, &l->op.pool, B, layer_input(cm, l->in), out_of(cm, i),
                                  cm->argmax + l->aux_off);
}
static int maxpool_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    float *dinp = dinput_of(cm, l->in);
    return dinp ? cuda_maxpool2d_backward(cm->ctx, &l->op.pool, B, dout_of(cm, i), cm->argmax + l->aux_off, dinp) : 0;
}

static int avgpool_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_avgpool2d_forward(cm->ctx, &l->op.pool, B, layer_input(cm, l->in), out_of(cm, i));
}
static int avgpool_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    float *dinp = dinput_of(cm, l->in);
    return dinp ? cuda_avgpool2d_backward(cm->ctx, &l->op.pool, B, dout_of(cm, i), dinp) : 0;
}

static int fc_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    const float *bias = l->has_bias ? cm->params + l->b_off : NULL;
    return cuda_gemm_forward(cm->ctx, &l->op.gemm, B, layer_input(cm, l->in), cm->params + l->w_off, bias,
                             out_of(cm, i));
}
static int fc_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    float *db = l->has_bias ? cm->grads + l->b_off : NULL;
    return cuda_gemm_backward(cm->ctx, &l->op.gemm, B, layer_input(cm, l->in), cm->params + l->w_off, dout_of(cm, i),
                              dinput_of(cm, l->in), cm->grads + l->w_off, db);
}

static int bn_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    const float *inp = layer_input(cm, l->in), *w = cm->params + l->w_off;
    if (train)
        return cuda_batchnorm_forward_train_eps(cm->ctx, B, l->C, l->H * l->W, inp, w, cm->params + l->b_off,
                                                out_of(cm, i), cm->aux + l->aux_off, cm->aux + l->aux_off + l->C,
                                                cm->buffers + l->rm_off, cm->buffers + l->rv_off, l->op.norm.momentum,
                                                l->op.norm.eps);
    return cuda_batchnorm_forward_eval_eps(cm->ctx, B, l->C, l->H * l->W, inp, w, cm->params + l->b_off,
                                           cm->buffers + l->rm_off, cm->buffers + l->rv_off, out_of(cm, i),
                                           l->op.norm.eps);
}
static int bn_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    float *dinp = dinput_of(cm, l->in);
    return cuda_batchnorm_backward_eps(cm->ctx, B, l->C, l->H * l->W, layer_input(cm, l->in), cm->params + l->w_off,
                                       cm->aux + l->aux_off, cm->aux + l->aux_off + l->C, dout_of(cm, i),
                                       dinp ? dinp : cm->bn_dx, cm->grads + l->w_off, cm->grads + l->b_off,
                                       l->op.norm.eps);
}
static const char *bn_refuse(const layer_t *l)
{
    return (double)l->op.norm.eps < CUDNN_BN_MIN_EPSILON ? "a batch norm with epsilon below cuDNN's minimum" : NULL;
}

static int gap_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_gap_forward(cm->ctx, B, l->C, l->H * l->W, layer_input(cm, l->in), out_of(cm, i));
}
static int gap_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    float *dinp = dinput_of(cm, l->in);
    return dinp ? cuda_gap_backward(cm->ctx, B, l->C, l->H * l->W, dout_of(cm, i), dinp) : 0;
}

static int add_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_residual_add_forward(cm->ctx, &l->op.sc, B, layer_input(cm, l->in), layer_input(cm, l->in2),
                                     out_of(cm, i));
}
static int add_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_residual_add_backward(cm->ctx, &l->op.sc, B, dout_of(cm, i), dinput_of(cm, l->in),
                                      dinput_of(cm, l->in2));
}

/* Along the output's axis ax (the kind's) a sample is (outer, size along it, inner): the
 * kernels' (rows, n, inner) with B * outer rows (op_table.c's axis_geometry and the
 * geometries below are static there, and this library links no host model code). */
static void axis_geometry(const layer_t *l, int ax, int B, int *rows, int *inner)
{
    *rows = B;
    *inner = 1;
    for (int d = 0; d < l->shape.rank; d++) {
        if (d < ax) *rows *= l->shape.dims[d];
        if (d > ax) *inner *= l->shape.dims[d];
    }
}

/* Concat: the channel kernel's (B, C, HW) with B * outer rows, C2 the inputs' sizes */
static void concat_geometry(const layer_t *l, int B, int *rows, int *inner, int C2[2])
{
    axis_geometry(l, l->op.concat.axis, B, rows, inner);
    C2[0] = l->op.concat.first;
    C2[1] = l->shape.dims[l->op.concat.axis] - l->op.concat.first;
}

static int concat_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    int rows, inner, C2[2];
    concat_geometry(l, B, &rows, &inner, C2);
    const float *const in2[2] = {layer_input(cm, l->in), layer_input(cm, l->in2)};
    return cuda_concat_forward(cm->ctx, rows, inner, 2, C2, in2, out_of(cm, i));
}
static int concat_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    int rows, inner, C2[2];
    concat_geometry(l, B, &rows, &inner, C2);
    float *const d2[2] = {dinput_of(cm, l->in), dinput_of(cm, l->in2)};
    return cuda_concat_backward(cm->ctx, rows, inner, 2, C2, dout_of(cm, i), d2);
}

static int dropout_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    const model_t *m = &cm->meta;
    const size_t n_out = out_count(l, B);
    if (train)
        return cuda_dropout_forward(cm->ctx, n_out, l->op.dropout.p,
                                    dropout_key(m->dropout_seed, m->dropout_step, (uint32_t)i), layer_input(cm, l->in),
                                    out_of(cm, i));
    CUDA_CHECK(cm->ctx,
               cudaMemcpyAsync(out_of(cm, i), layer_input(cm, l->in), n_out * sizeof(float), cudaMemcpyDeviceToDevice,
                               cm->ctx->stream),
               "dropout at evaluation (a copy)");
    return 0;
}
static int dropout_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    const model_t *m = &cm->meta;
    float *dinp = dinput_of(cm, l->in);
    return dinp
               ? cuda_dropout_backward(cm->ctx, out_count(l, B), l->op.dropout.p,
                                       dropout_key(m->dropout_seed, m->dropout_step, (uint32_t)i), dout_of(cm, i), dinp)
               : 0;
}

static int sdepth_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    const model_t *m = &cm->meta;
    const size_t n_out = out_count(l, B);
    if (train)
        return cuda_stochastic_depth_forward(cm->ctx, n_out, out_count(l, 1), l->op.dropout.p,
                                             dropout_key(m->dropout_seed, m->dropout_step, (uint32_t)i),
                                             layer_input(cm, l->in), out_of(cm, i));
    CUDA_CHECK(cm->ctx,
               cudaMemcpyAsync(out_of(cm, i), layer_input(cm, l->in), n_out * sizeof(float), cudaMemcpyDeviceToDevice,
                               cm->ctx->stream),
               "stochastic depth at evaluation (a copy)");
    return 0;
}
static int sdepth_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    const model_t *m = &cm->meta;
    float *dinp = dinput_of(cm, l->in);
    return dinp ? cuda_stochastic_depth_backward(cm->ctx, out_count(l, B), out_count(l, 1), l->op.dropout.p,
                                                 dropout_key(m->dropout_seed, m->dropout_step, (uint32_t)i),
                                                 dout_of(cm, i), dinp)
                : 0;
}

static int mul_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    const int HW = l->H * l->W;
    return cuda_mul_forward(cm->ctx, B, l->C, HW, l->op.mul.bcast ? 1 : HW, layer_input(cm, l->in),
                            layer_input(cm, l->in2), out_of(cm, i));
}
static int mul_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    const int HW = l->H * l->W;
    return cuda_mul_backward(cm->ctx, B, l->C, HW, l->op.mul.bcast ? 1 : HW, layer_input(cm, l->in),
                             layer_input(cm, l->in2), dout_of(cm, i), dinput_of(cm, l->in), dinput_of(cm, l->in2));
}

/* The functions of one input (model.h's model_unary_of), all through cuda_unary_forward /
 * cuda_unary_backward, which refuse UNARY_OP_COUNT. */
static int unary_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    float a, b;
    const unary_op_t op = model_unary_of(l, &a, &b);
    return cuda_unary_forward(cm->ctx, op, a, b, out_count(l, B), layer_input(cm, l->in), out_of(cm, i));
}
static int unary_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    float a, b;
    const unary_op_t op = model_unary_of(l, &a, &b);
    return cuda_unary_backward(cm->ctx, op, a, b, out_count(l, B), layer_input(cm, l->in), out_of(cm, i),
                               dout_of(cm, i), dinput_of(cm, l->in));
}

/* A constant's output is its tensor, in the first sample's slot (its readers read it at
 * batch stride 0 and sum their gradients over the batch into that slot, which becomes the
 * parameter's gradient: op_table.c's const_fwd and const_bwd). */
static int const_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    const float *src = (l->op.cnst.frozen ? cm->buffers : cm->params) + l->w_off;
    CUDA_CHECK(cm->ctx,
               cudaMemcpyAsync(out_of(cm, i), src, out_count(l, 1) * sizeof(float), cudaMemcpyDeviceToDevice,
                               cm->ctx->stream),
               "constant (a copy)");
    return 0;
}
static int const_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    if (l->op.cnst.frozen) return 0;
    CUDA_CHECK(cm->ctx,
               cudaMemcpyAsync(cm->grads + l->w_off, dout_of(cm, i), out_count(l, 1) * sizeof(float),
                               cudaMemcpyDeviceToDevice, cm->ctx->stream),
               "constant's gradient (a copy)");
    return 0;
}

/* A gathered parameter (op_table.c's gather_param_fwd and gather_param_bwd): one sample's
 * slot like a constant's; the gradient summed there scatter-adds into the table. */
static size_t gp_table_count(const layer_t *l)
{
    size_t n = 1;
    for (int d = 0; d < l->op.table.shape.rank; d++) n *= (size_t)l->op.table.shape.dims[d];
    return n;
}
static int gather_param_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_gather_param_forward(cm->ctx, out_count(l, 1), gp_table_count(l), cm->buffers + l->rm_off,
                                     cm->params + l->w_off, out_of(cm, i));
}
static int gather_param_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_gather_param_backward(cm->ctx, out_count(l, 1), gp_table_count(l), cm->buffers + l->rm_off,
                                      dout_of(cm, i), cm->grads + l->w_off);
}

/* The language models' rows (op_table.c's embed_fwd .. causal_bwd). The device zeroes
 * every output gradient before the backward, so the causal softmax adds; the embedding's
 * table gradient is written whole unless a tied reader wrote it first, as on the CPU. */
static size_t embed_rows(const layer_t *l, int B) { return out_count(l, B) / (size_t)l->op.table.shape.dims[1]; }
static int embed_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_embed_forward(cm->ctx, embed_rows(l, B), l->op.table.shape.dims[0], l->op.table.shape.dims[1],
                              layer_input(cm, l->in), cm->params + l->w_off, out_of(cm, i));
}
static int embed_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_embed_backward(cm->ctx, embed_rows(l, B), l->op.table.shape.dims[0], l->op.table.shape.dims[1],
                               layer_input(cm, l->in), dout_of(cm, i), cm->grads + l->w_off, l->op.table.tied,
                               cm->embed_ws);
}
static int causal_T(const layer_t *l) { return l->shape.dims[l->shape.rank - 1]; }
static size_t causal_mats(const layer_t *l, int B) { return out_count(l, B) / ((size_t)causal_T(l) * causal_T(l)); }
static int causal_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_causal_softmax_forward(cm->ctx, causal_mats(l, B), causal_T(l), l->op.softmax.scale,
                                       layer_input(cm, l->in), out_of(cm, i));
}
static int causal_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    float *dinp = dinput_of(cm, l->in);
    return dinp ? cuda_causal_softmax_backward(cm->ctx, causal_mats(l, B), causal_T(l), l->op.softmax.scale,
                                               out_of(cm, i), dout_of(cm, i), dinp, 0)
                : 0;
}

static binary_op_t binary_of(const layer_t *l)
{
    return l->kind == LAYER_SUB    ? BINARY_SUB
           : l->kind == LAYER_BMUL ? BINARY_MUL
           : l->kind == LAYER_DIV  ? BINARY_DIV
           : l->kind == LAYER_BPOW ? BINARY_POW
                                   : BINARY_ADD;
}
static int binary_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_binary_forward(cm->ctx, binary_of(l), &l->op.view.bc, B, layer_input(cm, l->in),
                               layer_input(cm, l->in2), out_of(cm, i));
}
static int binary_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_binary_backward(cm->ctx, binary_of(l), &l->op.view.bc, B, layer_input(cm, l->in),
                                layer_input(cm, l->in2), dout_of(cm, i), dinput_of(cm, l->in), dinput_of(cm, l->in2));
}

/* a copy of the contiguous data; the gradient added back */
static int reshape_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    CUDA_CHECK(cm->ctx,
               cudaMemcpyAsync(out_of(cm, i), layer_input(cm, l->in), out_count(l, B) * sizeof(float),
                               cudaMemcpyDeviceToDevice, cm->ctx->stream),
               "reshape (a copy)");
    return 0;
}
static int reshape_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    float *dinp = dinput_of(cm, l->in);
    return dinp ? cuda_accumulate(cm->ctx, out_count(l, B), dout_of(cm, i), dinp) : 0;
}

/* Transpose and Slice: the view (op.view's bc and off) copied out; the gradient added back */
static int view_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_view_forward(cm->ctx, &l->op.view.bc, l->op.view.off, B, layer_input(cm, l->in), out_of(cm, i));
}
static int view_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_view_backward(cm->ctx, &l->op.view.bc, l->op.view.off, B, dout_of(cm, i), dinput_of(cm, l->in));
}

/* ReduceMean and ReduceSum: the CPU's walk (bc) and scale, 1 / the count summed for the
 * mean (op_table.c's reduce_scale) */
static float reduce_scale(const layer_t *l)
{
    const size_t in = (size_t)l->C * l->H * l->W, out = (size_t)l->OC * l->OH * l->OW;
    return l->kind == LAYER_REDUCE_MEAN ? 1.0f / (float)(in / out) : 1.0f;
}
static int reduce_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_reduce_forward(cm->ctx, &l->op.view.bc, B, reduce_scale(l), layer_input(cm, l->in), out_of(cm, i),
                               out_count(l, B));
}
static int reduce_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    return cuda_reduce_backward(cm->ctx, &l->op.view.bc, B, reduce_scale(l), dout_of(cm, i), dinput_of(cm, l->in));
}

/* Linear: one GEMM over every sample's rows (a sample's elements / IN of them: op_table.c's
 * linear_rows), the FC kernels' */
static int linear_rows(const layer_t *l, int B) { return B * (l->C * l->H * l->W / l->op.gemm.IN); }
static int linear_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    const float *bias = l->has_bias ? cm->params + l->b_off : NULL;
    return cuda_gemm_forward(cm->ctx, &l->op.gemm, linear_rows(l, B), layer_input(cm, l->in), cm->params + l->w_off,
                             bias, out_of(cm, i));
}
static int linear_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    float *db = l->has_bias ? cm->grads + l->b_off : NULL;
    return cuda_gemm_backward(cm->ctx, &l->op.gemm, linear_rows(l, B), layer_input(cm, l->in), cm->params + l->w_off,
                              dout_of(cm, i), dinput_of(cm, l->in), cm->grads + l->w_off, db);
}

/* Softmax and LogSoftmax along op.softmax.axis */
static int softmax_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    int rows, inner;
    axis_geometry(l, l->op.softmax.axis, B, &rows, &inner);
    return cuda_softmax_axis_forward(cm->ctx, l->kind == LAYER_LOG_SOFTMAX, rows, l->shape.dims[l->op.softmax.axis],
                                     inner, layer_input(cm, l->in), out_of(cm, i));
}
static int softmax_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    int rows, inner;
    axis_geometry(l, l->op.softmax.axis, B, &rows, &inner);
    return cuda_softmax_axis_backward(cm->ctx, l->kind == LAYER_LOG_SOFTMAX, rows, l->shape.dims[l->op.softmax.axis],
                                      inner, out_of(cm, i), dout_of(cm, i), dinput_of(cm, l->in));
}

/* (..., M, K) x (..., K, N): G = B times the leading axes pairs (op_table.c's bmm_geometry) */
static void bmm_geometry(const layer_t *l, int B, int *G, int *M, int *K, int *N)
{
    const int r = l->shape.rank;
    *G = B;
    for (int d = 0; d < r - 2; d++) *G *= l->shape.dims[d];
    *M = l->shape.dims[r - 2];
    *N = l->shape.dims[r - 1];
    *K = l->op.bmm.K;
}
static int bmm_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    int G, M, K, N;
    bmm_geometry(l, B, &G, &M, &K, &N);
    return cuda_bmm_forward(cm->ctx, G, M, K, N, layer_input(cm, l->in), layer_input(cm, l->in2), out_of(cm, i));
}
static int bmm_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    int G, M, K, N;
    bmm_geometry(l, B, &G, &M, &K, &N);
    return cuda_bmm_backward(cm->ctx, G, M, K, N, layer_input(cm, l->in), layer_input(cm, l->in2), dout_of(cm, i),
                             dinput_of(cm, l->in), dinput_of(cm, l->in2));
}

/* Layer norm over the axes op.norm.axis.. to the last: rows of D = size(axis) * inner */
static void layernorm_geometry(const layer_t *l, int B, int *rows, int *D)
{
    int inner;
    axis_geometry(l, l->op.norm.axis, B, rows, &inner);
    *D = l->shape.dims[l->op.norm.axis] * inner;
}
static int layernorm_fwd(cuda_model_t *cm, int i, int B, int train)
{
    const layer_t *l = layer_of(cm, i);
    int rows, D;
    layernorm_geometry(l, B, &rows, &D);
    return cuda_layernorm_forward(cm->ctx, rows, D, l->op.norm.eps, layer_input(cm, l->in), cm->params + l->w_off,
                                  cm->params + l->b_off, out_of(cm, i));
}
static int layernorm_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    int rows, D;
    layernorm_geometry(l, B, &rows, &D);
    return cuda_layernorm_backward(cm->ctx, rows, D, l->op.norm.eps, layer_input(cm, l->in), cm->params + l->w_off,
                                   dout_of(cm, i), dinput_of(cm, l->in), cm->grads + l->w_off, cm->grads + l->b_off,
                                   cm->ln_ws, cm->ln_ws_bytes);
}

/* Expand: the broadcast copy is a view (stride 0 along the repeated axes); its backward
 * sums every copy into the input's gradient, which the binary backward of an Add does for
 * its first input (each gradient element walks its copies in increasing output order, as
 * the CPU's view_backward; the layer's sb is all 0, so the second operand, dout, is only
 * read at 0 and never differentiated) */
static int expand_bwd(cuda_model_t *cm, int i, int B)
{
    const layer_t *l = layer_of(cm, i);
    float *dinp = dinput_of(cm, l->in);
    return dinp ? cuda_binary_backward(cm->ctx, BINARY_ADD, &l->op.view.bc, B, dout_of(cm, i), dout_of(cm, i),
                                       dout_of(cm, i), dinp, NULL)
                : 0;
}

/* In layer_kind_t's order (C++ has no designated array initializers: the static_asserts
 * below check the order and the length). A row {kind, NULL, NULL, NULL} would mean "not on
 * the GPU": cuda_model_create refuses such a layer, and the worker falls back as for any
 * refusal. */
/* An empty row's refusal that names its operator. */
static const char *convt_refuse(const layer_t *l)
{
    (void)l;
    return "ConvTranspose, a kind without a CUDA kernel: not on the GPU";
}

static constexpr cuda_op_t CUDA_OPS[] = {
    {LAYER_CONV, conv_fwd, conv_bwd, NULL},
    {LAYER_MAXPOOL, maxpool_fwd, maxpool_bwd, NULL},
    {LAYER_AVGPOOL, avgpool_fwd, avgpool_bwd, NULL},
    {LAYER_RELU, unary_fwd, unary_bwd, NULL},
    {LAYER_FC, fc_fwd, fc_bwd, NULL},
    {LAYER_BN, bn_fwd, bn_bwd, bn_refuse},
    {LAYER_GAP, gap_fwd, gap_bwd, NULL},
    {LAYER_ADD, add_fwd, add_bwd, NULL},
    {LAYER_LEAKY_RELU, unary_fwd, unary_bwd, NULL},
    {LAYER_SIGMOID, unary_fwd, unary_bwd, NULL},
    {LAYER_TANH, unary_fwd, unary_bwd, NULL},
    {LAYER_CONCAT, concat_fwd, concat_bwd, NULL},
    {LAYER_DROPOUT, dropout_fwd, dropout_bwd, NULL},
    {LAYER_CLIP, unary_fwd, unary_bwd, NULL},
    {LAYER_HARDSIGMOID, unary_fwd, unary_bwd, NULL},
    {LAYER_HARDSWISH, unary_fwd, unary_bwd, NULL},
    {LAYER_MUL, mul_fwd, mul_bwd, NULL},
    {LAYER_STOCHASTIC_DEPTH, sdepth_fwd, sdepth_bwd, NULL},
    {LAYER_EXP, unary_fwd, unary_bwd, NULL},
    {LAYER_NEG, unary_fwd, unary_bwd, NULL},
    {LAYER_SQRT, unary_fwd, unary_bwd, NULL},
    {LAYER_RECIPROCAL, unary_fwd, unary_bwd, NULL},
    {LAYER_ABS, unary_fwd, unary_bwd, NULL},
    {LAYER_POW, unary_fwd, unary_bwd, NULL},
    {LAYER_CONST, const_fwd, const_bwd, NULL},
    {LAYER_BADD, binary_fwd, binary_bwd, NULL},
    {LAYER_SUB, binary_fwd, binary_bwd, NULL},
    {LAYER_BMUL, binary_fwd, binary_bwd, NULL},
    {LAYER_DIV, binary_fwd, binary_bwd, NULL},
    {LAYER_RESHAPE, reshape_fwd, reshape_bwd, NULL},
    {LAYER_TRANSPOSE, view_fwd, view_bwd, NULL},
    {LAYER_SLICE, view_fwd, view_bwd, NULL},
    {LAYER_REDUCE_MEAN, reduce_fwd, reduce_bwd, NULL},
    {LAYER_REDUCE_SUM, reduce_fwd, reduce_bwd, NULL},
    {LAYER_LINEAR, linear_fwd, linear_bwd, NULL},
    /* the transformers' kinds; Erf and GELU through the unary launcher */
    {LAYER_SOFTMAX, softmax_fwd, softmax_bwd, NULL},
    {LAYER_LOG_SOFTMAX, softmax_fwd, softmax_bwd, NULL},
    {LAYER_ERF, unary_fwd, unary_bwd, NULL},
    {LAYER_GELU, unary_fwd, unary_bwd, NULL},
    {LAYER_BMM, bmm_fwd, bmm_bwd, NULL},
    {LAYER_LAYERNORM, layernorm_fwd, layernorm_bwd, NULL},
    /* Swin's relative position bias */
    {LAYER_GATHER_PARAM, gather_param_fwd, gather_param_bwd, NULL},
    /* the vision transformers' class token */
    {LAYER_EXPAND, view_fwd, expand_bwd, NULL},
    /* the language models' rows (a model whose loss covers several positions is refused
     * by cuda_model_create: the rank stays on the CPU) */
    {LAYER_EMBED, embed_fwd, embed_bwd, NULL},
    {LAYER_CAUSAL_SOFTMAX, causal_fwd, causal_bwd, NULL},
    {LAYER_BPOW, binary_fwd, binary_bwd, NULL},
    /* not on the GPU yet: cudnnConvolutionBackwardData would be its forward */
    {LAYER_CONV_TRANSPOSE, NULL, NULL, convt_refuse},
};
static_assert(sizeof CUDA_OPS / sizeof CUDA_OPS[0] == LAYER_KIND_COUNT, "one CUDA row per layer kind");
static constexpr bool cuda_ops_in_order(int k)
{
    return k == LAYER_KIND_COUNT || (CUDA_OPS[k].kind == (layer_kind_t)k && cuda_ops_in_order(k + 1));
}
static_assert(cuda_ops_in_order(0), "CUDA_OPS rows in layer_kind_t's order");

static const char *cuda_layer_unsupported(const layer_t *l)
{
    if ((unsigned)l->kind >= (unsigned)LAYER_KIND_COUNT) return "a layer kind this backend does not know";
    if (!CUDA_OPS[l->kind].forward)
        return CUDA_OPS[l->kind].refuse ? CUDA_OPS[l->kind].refuse(l) : "a kind without a CUDA kernel: not on the GPU";
    return CUDA_OPS[l->kind].refuse ? CUDA_OPS[l->kind].refuse(l) : NULL;
}

/* Copies the batch up and enqueues every layer and the loss; the loss is copied into h_loss
 * (valid after the next synchronisation). */
static int enqueue_forward(cuda_model_t *cm, const float *x, const int32_t *y, int B, int train)
{
    const model_t *m = &cm->meta;
    cuda_ctx_t *ctx = cm->ctx;
    cudaStream_t s = ctx->stream;
    cm->fwd_B = 0;
    if (B < 1 || B > m->max_batch) return FAIL(cm, "cuda_model_forward", "batch must be in [1, max_batch]");
    if (train) cm->meta.dropout_step++; /* new masks (model_forward); the backward reuses them */

    /* From page-locked memory, so the copy is a true asynchronous DMA: the caller's own
     * buffer when it is registered (or is the staging), else through the pinned staging.
     * Every entry point ends with a synchronisation, so the buffers are free again when the
     * next step writes them. */
    const int rows = B * m->positions; /* labels and loss rows */
    const size_t xb = (size_t)B * cm->in_floats * sizeof(float), yb = (size_t)rows * sizeof(int32_t);
    if (x != cm->h_x && !is_pinned(cm, x, xb)) x = (const float *)memcpy(cm->h_x, x, xb);
    CUDA_CHECK(ctx, cudaMemcpyAsync(cm->x, x, xb, cudaMemcpyHostToDevice, s), "upload batch");
    if (y) {
        if (y != cm->h_y && !is_pinned(cm, y, yb)) y = (const int32_t *)memcpy(cm->h_y, y, yb);
        CUDA_CHECK(ctx, cudaMemcpyAsync(cm->y, y, yb, cudaMemcpyHostToDevice, s), "upload labels");
    }

    for (int i = 0; i < m->nlayers; i++) {
        if (cm->prof_active) cudaEventRecord(cm->prof->fwd[i], s);
        if (CUDA_OPS[m->layers[i].kind].forward(cm, i, B, train) != 0) return -1;
    }
    if (cm->prof_active) cudaEventRecord(cm->prof->fwd[m->nlayers], s);
    if (y) {
        if (cuda_softmax_xent_forward(ctx, rows, m->num_classes, logits_dev(cm), cm->y, m->label_smoothing, cm->probs,
                                      cm->loss) != 0)
            return -1;
        CUDA_CHECK(ctx, cudaMemcpyAsync(cm->h_loss, cm->loss, sizeof(float), cudaMemcpyDeviceToHost, s),
                   "download loss");
        if (train) cm->fwd_B = B;
    } else {
        *cm->h_loss = 0.0f;
    }
    return 0;
}

static int enqueue_backward(cuda_model_t *cm, int B, float loss_scale)
{
    const model_t *m = &cm->meta;
    cuda_ctx_t *ctx = cm->ctx;
    if (cm->fwd_B != B || B < 1)
        return FAIL(cm, "cuda_model_backward", "needs a training forward with labels on the same batch size first");

    /* Input gradients accumulate, so every layer's output gradient starts at zero; the
     * last layer's is written by the loss. Only the first B samples are touched. */
    for (int i = 0; i < m->nlayers - 1; i++) {
        const layer_t *l = &m->layers[i];
        CUDA_CHECK(ctx,
                   cudaMemsetAsync(cm->dacts + l->out_off, 0, (size_t)B * l->OC * l->OH * l->OW * sizeof(float),
                                   ctx->stream),
                   "zero activation gradients");
    }
    const layer_t *last = &m->layers[m->nlayers - 1];
    if (cuda_softmax_xent_backward(ctx, B * m->positions, m->num_classes, cm->probs, cm->y, m->label_smoothing,
                                   loss_scale, cm->dacts + last->out_off) != 0)
        return -1;

    for (int i = m->nlayers - 1; i >= 0; i--) {
        if (cm->prof_active) cudaEventRecord(cm->prof->bwd[m->nlayers - 1 - i], ctx->stream);
        if (CUDA_OPS[m->layers[i].kind].backward(cm, i, B) != 0) return -1;
    }
    if (cm->prof_active) cudaEventRecord(cm->prof->bwd[m->nlayers], ctx->stream);
    return 0;
}

static float cuda_model_forward(cuda_model_t *cm, const float *host_x, const int32_t *host_y, int B, int train)
{
    if (enqueue_forward(cm, host_x, host_y, B, train) != 0) return -1.0f;
    if (cuda_ctx_sync(cm->ctx) != 0) return -1.0f;
    return *cm->h_loss;
}

static int cuda_model_backward(cuda_model_t *cm, int B, float loss_scale)
{
    return enqueue_backward(cm, B, loss_scale);
}

static int cuda_model_train_step(cuda_model_t *cm, const float *host_x, const int32_t *host_y, int B, float loss_scale,
                                 float *host_grads, float *loss)
{
    if (!host_y) return FAIL(cm, "cuda_model_train_step", "labels are required");
    /* One wait for the whole step; with a progress callback (hpsgd) the host drives MPI while
     * the device computes instead of sleeping through it. */
    cm->prof_active = cm->prof != NULL;
    const int rc = enqueue_forward(cm, host_x, host_y, B, 1) != 0 || enqueue_backward(cm, B, loss_scale) != 0 ||
                   enqueue_grads_download(cm, host_grads) != 0 ||
                   cuda_ctx_sync_progress(cm->ctx, cm->progress, cm->progress_ctx) != 0;
    if (cm->prof_active && !rc) profile_add(cm);
    cm->prof_active = 0;
    if (rc) return -1;
    if (loss) *loss = *cm->h_loss;
    return 0;
}

static int cuda_model_sgd(cuda_model_t *cm, float lr, float momentum, int nesterov, float weight_decay,
                          float grad_scale, float clip_norm)
{
    const size_t n = cm->meta.nparams;
    const float *scale_dev = NULL;
    if (clip_norm > 0.0f) {
        if (cuda_clip_scale(cm->ctx, n, cm->grads, grad_scale, clip_norm, cm->scale) != 0) return -1;
        scale_dev = cm->scale;
    }
    return cuda_sgd_update(cm->ctx, n, cm->params, cm->grads, cm->momentum, lr, momentum, nesterov, weight_decay,
                           grad_scale, scale_dev);
}

static int cuda_model_optimize(cuda_model_t *cm, const optim_step_t *o)
{
    const size_t n = cm->meta.nparams;
    if (o->adamw && !cm->moment2)
        return FAIL(cm, "cuda_model_optimize", "AdamW needs the second moment: the host model had none at creation");
    const float *scale_dev = NULL;
    if (o->clip_norm > 0.0f) {
        if (cuda_clip_scale(cm->ctx, n, cm->grads, o->grad_scale, o->clip_norm, cm->scale) != 0) return -1;
        scale_dev = cm->scale;
    }
    adamw_hparams_t h = o->h;
    int ti = 0, exempt;
    size_t off, cnt;
    while (model_decay_run(&cm->meta, o->groups, &ti, &off, &cnt, &exempt)) {
        h.weight_decay = exempt ? 0.0 : o->h.weight_decay;
        const int rc = o->adamw ? cuda_adamw_update(cm->ctx, cnt, cm->params + off, cm->grads + off, cm->momentum + off,
                                                    cm->moment2 + off, &h, o->step, o->grad_scale, scale_dev)
                                : cuda_sgd_update(cm->ctx, cnt, cm->params + off, cm->grads + off, cm->momentum + off,
                                                  (float)h.lr, o->momentum, o->nesterov, (float)h.weight_decay,
                                                  o->grad_scale, scale_dev);
        if (rc != 0) return -1;
    }
    return 0;
}

static const float *cuda_model_logits_host(cuda_model_t *cm, int B)
{
    if (B < 1 || B > cm->meta.max_batch) {
        FAIL(cm, "cuda_model_logits_host", "batch must be in [1, max_batch]");
        return NULL;
    }
    const size_t bytes = (size_t)B * cm->meta.positions * cm->meta.num_classes * sizeof(float);
    cudaError_t e = cudaMemcpyAsync(cm->h_logits, logits_dev(cm), bytes, cudaMemcpyDeviceToHost, cm->ctx->stream);
    if (e != cudaSuccess) {
        pacer_cuda_fail(cm->ctx, __FILE__, __LINE__, "cudaMemcpyAsync", cudaGetErrorString(e), "download logits");
        return NULL;
    }
    if (cuda_ctx_sync(cm->ctx) != 0) return NULL;
    return cm->h_logits;
}

static int cuda_model_upload_forward_state(cuda_model_t *cm, const model_t *m, int B)
{
    if (same_layout(cm, m) != 0) return -1;
    if (cm->fwd_B != B)
        return FAIL(cm, "cuda_model_upload_forward_state",
                    "run a training forward of the same batch on the device first");
    cudaStream_t s = cm->ctx->stream;
    const size_t F = sizeof(float);
    /* whole arenas: the layouts are the host's, offsets included */
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->acts, m->acts, cm->meta.act_floats * F, cudaMemcpyHostToDevice, s),
               "upload activations");
    if (cm->aux_floats)
        CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->aux, m->aux, cm->aux_floats * F, cudaMemcpyHostToDevice, s),
                   "upload bn statistics");
    if (cm->argmax_ints)
        CUDA_CHECK(cm->ctx,
                   cudaMemcpyAsync(cm->argmax, m->argmax, cm->argmax_ints * sizeof(int32_t), cudaMemcpyHostToDevice, s),
                   "upload argmax");
    CUDA_CHECK(cm->ctx,
               cudaMemcpyAsync(cm->probs, m->probs, (size_t)B * cm->meta.positions * cm->meta.num_classes * F,
                               cudaMemcpyHostToDevice, s),
               "upload probabilities");
    return cuda_ctx_sync(cm->ctx);
}

/* ---- the library's entry point (backend_cuda_abi.h) -------------------------------------- */

extern "C" const pacer_cuda_backend_t *pacer_cuda_backend(void)
{
    static const pacer_cuda_backend_t table = {
        PACER_CUDA_ABI,
        sizeof(model_t),
        sizeof(layer_t),
        sizeof(tensor_info_t),
        probe_device,
        probe_classify_error,
        probe_build_info,
        cuda_device_count,
        probe_pick_device,
        cuda_device_name,
        cuda_memory_info,
        cuda_model_create,
        cuda_model_free,
        cuda_model_error,
        cuda_model_upload,
        cuda_model_upload_params,
        cuda_model_download_params,
        cuda_model_download_buffers,
        cuda_model_upload_buffers,
        cuda_model_host_register,
        cuda_model_prepare_batch,
        cuda_model_grads_host,
        cuda_model_input_host,
        cuda_model_labels_host,
        cuda_model_download_grads,
        cuda_model_upload_grads,
        cuda_model_sync,
        cuda_model_forward,
        cuda_model_backward,
        cuda_model_train_step,
        cuda_model_sgd,
        cuda_model_optimize,
        cuda_model_logits_host,
        cuda_model_upload_forward_state,
        cuda_model_set_progress,
        cuda_model_device_bytes,
        cuda_model_device_params,
        cuda_model_device_grads,
    };
    return &table;
}
