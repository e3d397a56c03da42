/* model/model_cuda.cu - the device model behind model/backend_cuda.h. It is part of the
 * shared object libpacer_cuda.so and reached only through the table its one exported
 * function returns (backend_cuda_abi.h), so every function here is static.
 *
 * A cuda_model_t keeps a copy of the host model's layer list (model_t with its pointers
 * cleared) and walks it exactly as model/model.c does: forward in order, backward in
 * reverse with input gradients accumulating, every layer output gradient zeroed for the
 * first B samples before the loss writes the last one. All offsets are the host's, so a
 * tensor is at the same offset in m->params and in the device params.
 *
 * Memory: one cudaMalloc per fused buffer (params, grads + MODEL_GRAD_EXTRA, momentum,
 * buffers), one per arena (activations, their gradients, batch-norm saved statistics,
 * maxpool argmax, softmax probabilities), the input batch, one convolution workspace shared
 * by every layer (the largest any layer's algorithms need at max_batch), and pinned host
 * staging for the batch, the gradients, the logits and the loss. Nothing is allocated after
 * cuda_model_create; a step enqueues kernels and copies on one stream and synchronises once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_abi.h"
#include "cuda_common.h"

struct cuda_model {
    cuda_ctx_t *ctx;
    model_t meta;            /* the host model's layers, tensors and sizes; pointers NULL */
    float *params;           /* (nparams) */
    float *grads;            /* (nparams + MODEL_GRAD_EXTRA) */
    float *momentum;         /* (nparams) */
    float *buffers;          /* (nbuffers) */
    float *acts, *dacts;     /* (act_floats) each */
    float *aux;              /* (aux_floats) bn saved mean / invstd */
    int32_t *argmax;         /* (argmax_ints) */
    float *probs;            /* (max_batch, num_classes) */
    float *x;                /* (max_batch, C, H, W) */
    int32_t *y;              /* (max_batch) */
    float *loss;             /* (1) */
    float *scale;            /* (1) clipped gradient scale for cuda_model_sgd */
    void *ws;
    size_t ws_bytes;
    cuda_conv_plan_t *plans[MODEL_MAX_LAYERS];
    float *h_x;              /* pinned (max_batch, C, H, W) */
    int32_t *h_y;            /* pinned (max_batch) */
    float *h_grads;          /* pinned (nparams + MODEL_GRAD_EXTRA) */
    float *h_logits;         /* pinned (max_batch, num_classes) */
    float *h_loss;           /* pinned (1) */
    size_t in_floats;        /* C*H*W of one sample */
    size_t aux_floats, argmax_ints;
    size_t device_bytes;
    int fwd_B;               /* batch of the last training forward with labels; 0: none */
    void (*progress)(void *ctx);
    void *progress_ctx;
};

static void cuda_model_free(cuda_model_t *cm);

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

static int cuda_pick_device(void)
{
    int n = cuda_device_count();
    if (n <= 0) return -1;
    static const char *const vars[] = { "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID" };
    int local = 0;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            local = atoi(v);
            break;
        }
    }
    if (local < 0) local = 0;
    return local % n;
}

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
    const size_t maxb = (size_t)mm->max_batch, ncls = (size_t)mm->num_classes;
    if (dev_alloc(cm, (void **)&cm->params, mm->nparams * F) ||
        dev_alloc(cm, (void **)&cm->grads, (mm->nparams + MODEL_GRAD_EXTRA) * F) ||
        dev_alloc(cm, (void **)&cm->momentum, mm->nparams * F) ||
        dev_alloc(cm, (void **)&cm->buffers, mm->nbuffers * F) ||
        dev_alloc(cm, (void **)&cm->acts, mm->act_floats * F) ||
        dev_alloc(cm, (void **)&cm->dacts, mm->act_floats * F) ||
        dev_alloc(cm, (void **)&cm->aux, cm->aux_floats * F) ||
        dev_alloc(cm, (void **)&cm->argmax, cm->argmax_ints * sizeof(int32_t)) ||
        dev_alloc(cm, (void **)&cm->probs, maxb * ncls * F) ||
        dev_alloc(cm, (void **)&cm->x, maxb * cm->in_floats * F) ||
        dev_alloc(cm, (void **)&cm->y, maxb * sizeof(int32_t)) ||
        dev_alloc(cm, (void **)&cm->loss, F) ||
        dev_alloc(cm, (void **)&cm->scale, F))
        return -1;

    /* Convolution plans for max_batch; the shared workspace is the largest need. */
    size_t ws = 0;
    for (int i = 0; i < mm->nlayers; i++) {
        if (mm->layers[i].kind != LAYER_CONV) continue;
        if (cuda_conv2d_plan_create(cm->ctx, &mm->layers[i].conv, mm->max_batch, 0, &cm->plans[i]) != 0)
            return -1;
        size_t need = cuda_conv2d_plan_workspace(cm->plans[i]);
        if (need > ws) ws = need;
    }
    cm->ws_bytes = ws;
    if (dev_alloc(cm, &cm->ws, ws)) return -1;

    if (host_alloc(cm, (void **)&cm->h_x, maxb * cm->in_floats * F) ||
        host_alloc(cm, (void **)&cm->h_y, maxb * sizeof(int32_t)) ||
        host_alloc(cm, (void **)&cm->h_grads, (mm->nparams + MODEL_GRAD_EXTRA) * F) ||
        host_alloc(cm, (void **)&cm->h_logits, maxb * ncls * F) ||
        host_alloc(cm, (void **)&cm->h_loss, F))
        return -1;
    return 0;
}

static cuda_model_t *cuda_model_create(const model_t *m, int device, char *err, size_t errlen)
{
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
    /* the copy keeps the layout only: no host pointer may be followed from the device side */
    model_t *mm = &cm->meta;
    mm->params = mm->grads = mm->momentum = mm->buffers = NULL;
    mm->acts = mm->dacts = mm->aux = mm->ws = mm->probs = mm->dinput = NULL;
    mm->argmax = NULL;
    mm->progress = NULL;
    mm->progress_ctx = NULL;
    if (model_setup(cm, m) != 0) {
        snprintf(err, errlen, "cuda model %s (batch %d) on device %d: %s", m->name, m->max_batch, device,
                 cm->ctx->err);
        cuda_model_free(cm);
        return NULL;
    }
    return cm;
}

static void cuda_model_free(cuda_model_t *cm)
{
    if (!cm) return;
    if (cm->ctx) cudaStreamSynchronize(cm->ctx->stream);
    for (int i = 0; i < MODEL_MAX_LAYERS; i++) cuda_conv2d_plan_free(cm->plans[i]);
    cudaFree(cm->params); cudaFree(cm->grads); cudaFree(cm->momentum); cudaFree(cm->buffers);
    cudaFree(cm->acts); cudaFree(cm->dacts); cudaFree(cm->aux); cudaFree(cm->argmax);
    cudaFree(cm->probs); cudaFree(cm->x); cudaFree(cm->y); cudaFree(cm->loss); cudaFree(cm->scale);
    cudaFree(cm->ws);
    cudaFreeHost(cm->h_x); cudaFreeHost(cm->h_y); cudaFreeHost(cm->h_grads);
    cudaFreeHost(cm->h_logits); cudaFreeHost(cm->h_loss);
    cuda_ctx_free(cm->ctx);
    free(cm);
}

static const char *cuda_model_error(const cuda_model_t *cm)
{
    return cm ? cuda_ctx_error(cm->ctx) : "no CUDA model";
}

static int same_layout(cuda_model_t *cm, const model_t *m)
{
    if (strcmp(m->name, cm->meta.name) != 0 || m->nparams != cm->meta.nparams ||
        m->nbuffers != cm->meta.nbuffers)
        return FAIL(cm, "cuda_model_upload/download", "the host model is not the one this device model was built from");
    return 0;
}

static int cuda_model_upload(cuda_model_t *cm, const model_t *m)
{
    if (same_layout(cm, m) != 0) return -1;
    cudaStream_t s = cm->ctx->stream;
    const size_t F = sizeof(float);
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->params, m->params, m->nparams * F, cudaMemcpyHostToDevice, s), "upload params");
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->momentum, m->momentum, m->nparams * F, cudaMemcpyHostToDevice, s), "upload momentum");
    if (m->nbuffers)
        CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->buffers, m->buffers, m->nbuffers * F, cudaMemcpyHostToDevice, s),
                   "upload buffers");
    CUDA_CHECK(cm->ctx, cudaStreamSynchronize(s), "upload");
    return 0;
}

static int cuda_model_upload_params(cuda_model_t *cm, const float *params)
{
    cudaStream_t s = cm->ctx->stream;
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->params, params, cm->meta.nparams * sizeof(float), cudaMemcpyHostToDevice, s),
               "upload params");
    CUDA_CHECK(cm->ctx, cudaStreamSynchronize(s), "upload params");
    return 0;
}

static int cuda_model_download_params(cuda_model_t *cm, model_t *m)
{
    if (same_layout(cm, m) != 0) return -1;
    cudaStream_t s = cm->ctx->stream;
    const size_t F = sizeof(float);
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(m->params, cm->params, m->nparams * F, cudaMemcpyDeviceToHost, s), "download params");
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(m->momentum, cm->momentum, m->nparams * F, cudaMemcpyDeviceToHost, s),
               "download momentum");
    if (m->nbuffers)
        CUDA_CHECK(cm->ctx, cudaMemcpyAsync(m->buffers, cm->buffers, m->nbuffers * F, cudaMemcpyDeviceToHost, s),
                   "download buffers");
    CUDA_CHECK(cm->ctx, cudaStreamSynchronize(s), "download (or an earlier kernel failed)");
    return 0;
}

static int cuda_model_download_buffers(cuda_model_t *cm, float *host_buffers)
{
    if (!cm->meta.nbuffers) return 0;
    cudaStream_t s = cm->ctx->stream;
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(host_buffers, cm->buffers, cm->meta.nbuffers * sizeof(float),
                                        cudaMemcpyDeviceToHost, s),
               "download buffers");
    CUDA_CHECK(cm->ctx, cudaStreamSynchronize(s), "download buffers (or an earlier kernel failed)");
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
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(dst ? dst : cm->h_grads, cm->grads, cm->meta.nparams * sizeof(float),
                                        cudaMemcpyDeviceToHost, cm->ctx->stream),
               "download grads");
    return 0;
}

static int cuda_model_download_grads(cuda_model_t *cm, float *host_grads, int async)
{
    if (enqueue_grads_download(cm, host_grads) != 0) return -1;
    if (!async) CUDA_CHECK(cm->ctx, cudaStreamSynchronize(cm->ctx->stream), "download grads (or an earlier kernel failed)");
    return 0;
}

static int cuda_model_upload_grads(cuda_model_t *cm, const float *host_grads)
{
    cudaStream_t s = cm->ctx->stream;
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->grads, host_grads, cm->meta.nparams * sizeof(float), cudaMemcpyHostToDevice, s),
               "upload grads");
    CUDA_CHECK(cm->ctx, cudaStreamSynchronize(s), "upload grads");
    return 0;
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

/* Copies the batch up and enqueues every layer and the loss; the loss is copied into h_loss
 * (valid after the next synchronisation). */
static int enqueue_forward(cuda_model_t *cm, const float *x, const int32_t *y, int B, int train)
{
    const model_t *m = &cm->meta;
    cuda_ctx_t *ctx = cm->ctx;
    cudaStream_t s = ctx->stream;
    cm->fwd_B = 0;
    if (B < 1 || B > m->max_batch) return FAIL(cm, "cuda_model_forward", "batch must be in [1, max_batch]");

    /* Through the pinned staging (skipped when the caller gathered there), so the copy is a
     * true asynchronous DMA. Every entry point ends with a synchronisation, so the staging
     * is free again when the next step writes it. */
    const size_t xb = (size_t)B * cm->in_floats * sizeof(float);
    if (x != cm->h_x) memcpy(cm->h_x, x, xb);
    CUDA_CHECK(ctx, cudaMemcpyAsync(cm->x, cm->h_x, xb, cudaMemcpyHostToDevice, s), "upload batch");
    if (y) {
        if (y != cm->h_y) memcpy(cm->h_y, y, (size_t)B * sizeof(int32_t));
        CUDA_CHECK(ctx, cudaMemcpyAsync(cm->y, cm->h_y, (size_t)B * sizeof(int32_t), cudaMemcpyHostToDevice, s),
                   "upload labels");
    }

    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        const float *inp = layer_input(cm, l->in);
        float *out = cm->acts + l->out_off;
        const float *w = cm->params + l->w_off;
        const float *bias = l->has_bias ? cm->params + l->b_off : NULL;
        const size_t n_out = (size_t)B * l->OC * l->OH * l->OW;
        int rc = 0;
        switch (l->kind) {
        case LAYER_CONV:
            rc = cuda_conv2d_forward(ctx, cm->plans[i], B, inp, w, bias, out, cm->ws, cm->ws_bytes);
            break;
        case LAYER_MAXPOOL: rc = cuda_maxpool2d_forward(ctx, &l->pool, B, inp, out, cm->argmax + l->aux_off); break;
        case LAYER_AVGPOOL: rc = cuda_avgpool2d_forward(ctx, &l->pool, B, inp, out); break;
        case LAYER_RELU: rc = cuda_relu_forward(ctx, n_out, inp, out); break;
        case LAYER_FC: rc = cuda_fc_forward(ctx, B, l->C, l->OC, inp, w, bias, out); break;
        case LAYER_BN:
            if (train)
                rc = cuda_batchnorm_forward_train(ctx, B, l->C, l->H * l->W, inp, w, cm->params + l->b_off, out,
                                                  cm->aux + l->aux_off, cm->aux + l->aux_off + l->C,
                                                  cm->buffers + l->rm_off, cm->buffers + l->rv_off,
                                                  MODEL_BN_MOMENTUM);
            else
                rc = cuda_batchnorm_forward_eval(ctx, B, l->C, l->H * l->W, inp, w, cm->params + l->b_off,
                                                 cm->buffers + l->rm_off, cm->buffers + l->rv_off, out);
            break;
        case LAYER_GAP: rc = cuda_gap_forward(ctx, B, l->C, l->H * l->W, inp, out); break;
        case LAYER_ADD: rc = cuda_residual_add_forward(ctx, &l->sc, B, inp, layer_input(cm, l->in2), out); break;
        }
        if (rc != 0) return -1;
        if (cm->progress) cm->progress(cm->progress_ctx);
    }
    if (y) {
        if (cuda_softmax_xent_forward(ctx, B, m->num_classes, logits_dev(cm), cm->y, cm->probs, cm->loss) != 0)
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
        CUDA_CHECK(ctx, cudaMemsetAsync(cm->dacts + l->out_off, 0, (size_t)B * l->OC * l->OH * l->OW * sizeof(float),
                                        ctx->stream),
                   "zero activation gradients");
    }
    const layer_t *last = &m->layers[m->nlayers - 1];
    if (cuda_softmax_xent_backward(ctx, B, m->num_classes, cm->probs, cm->y, loss_scale, cm->dacts + last->out_off) != 0)
        return -1;

    for (int i = m->nlayers - 1; i >= 0; i--) {
        const layer_t *l = &m->layers[i];
        const float *inp = layer_input(cm, l->in);
        float *dinp = l->in < 0 ? NULL : cm->dacts + m->layers[l->in].out_off;
        const float *out = cm->acts + l->out_off;
        const float *dout = cm->dacts + l->out_off;
        const float *w = cm->params + l->w_off;
        float *dw = cm->grads + l->w_off;
        float *db = l->has_bias ? cm->grads + l->b_off : NULL;
        const size_t n_out = (size_t)B * l->OC * l->OH * l->OW;
        int rc = 0;
        switch (l->kind) {
        case LAYER_CONV:
            rc = cuda_conv2d_backward(ctx, cm->plans[i], B, inp, w, dout, dinp, dw, db, cm->ws, cm->ws_bytes);
            break;
        case LAYER_MAXPOOL:
            if (dinp) rc = cuda_maxpool2d_backward(ctx, &l->pool, B, dout, cm->argmax + l->aux_off, dinp);
            break;
        case LAYER_AVGPOOL: if (dinp) rc = cuda_avgpool2d_backward(ctx, &l->pool, B, dout, dinp); break;
        case LAYER_RELU: if (dinp) rc = cuda_relu_backward(ctx, n_out, out, dout, dinp); break;
        case LAYER_FC: rc = cuda_fc_backward(ctx, B, l->C, l->OC, inp, w, dout, dinp, dw, db); break;
        case LAYER_BN:
            rc = cuda_batchnorm_backward(ctx, B, l->C, l->H * l->W, inp, w, cm->aux + l->aux_off,
                                         cm->aux + l->aux_off + l->C, dout, dinp, dw, cm->grads + l->b_off);
            break;
        case LAYER_GAP: if (dinp) rc = cuda_gap_backward(ctx, B, l->C, l->H * l->W, dout, dinp); break;
        case LAYER_ADD: {
            float *dx = l->in2 < 0 ? NULL : cm->dacts + m->layers[l->in2].out_off;
            rc = cuda_residual_add_backward(ctx, &l->sc, B, dout, dinp, dx);
            break;
        }
        }
        if (rc != 0) return -1;
        if (cm->progress) cm->progress(cm->progress_ctx);
    }
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

static int cuda_model_train_step(cuda_model_t *cm, const float *host_x, const int32_t *host_y, int B,
                                 float loss_scale, float *host_grads, float *loss)
{
    if (!host_y) return FAIL(cm, "cuda_model_train_step", "labels are required");
    if (enqueue_forward(cm, host_x, host_y, B, 1) != 0 || enqueue_backward(cm, B, loss_scale) != 0 ||
        enqueue_grads_download(cm, host_grads) != 0 || cuda_ctx_sync(cm->ctx) != 0)
        return -1;
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

static const float *cuda_model_logits_host(cuda_model_t *cm, int B)
{
    if (B < 1 || B > cm->meta.max_batch) {
        FAIL(cm, "cuda_model_logits_host", "batch must be in [1, max_batch]");
        return NULL;
    }
    const size_t bytes = (size_t)B * cm->meta.num_classes * sizeof(float);
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
        return FAIL(cm, "cuda_model_upload_forward_state", "run a training forward of the same batch on the device first");
    cudaStream_t s = cm->ctx->stream;
    const size_t F = sizeof(float);
    /* whole arenas: the layouts are the host's, offsets included */
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->acts, m->acts, cm->meta.act_floats * F, cudaMemcpyHostToDevice, s),
               "upload activations");
    if (cm->aux_floats)
        CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->aux, m->aux, cm->aux_floats * F, cudaMemcpyHostToDevice, s),
                   "upload bn statistics");
    if (cm->argmax_ints)
        CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->argmax, m->argmax, cm->argmax_ints * sizeof(int32_t),
                                            cudaMemcpyHostToDevice, s),
                   "upload argmax");
    CUDA_CHECK(cm->ctx, cudaMemcpyAsync(cm->probs, m->probs, (size_t)B * cm->meta.num_classes * F,
                                        cudaMemcpyHostToDevice, s),
               "upload probabilities");
    CUDA_CHECK(cm->ctx, cudaStreamSynchronize(s), "upload forward state");
    return 0;
}

/* ---- the library's entry point (backend_cuda_abi.h) -------------------------------------- */

extern "C" const pacer_cuda_backend_t *pacer_cuda_backend(void)
{
    static const pacer_cuda_backend_t table = {
        PACER_CUDA_ABI,
        sizeof(model_t),
        cuda_device_count,
        cuda_pick_device,
        cuda_device_name,
        cuda_memory_info,
        cuda_model_create,
        cuda_model_free,
        cuda_model_error,
        cuda_model_upload,
        cuda_model_upload_params,
        cuda_model_download_params,
        cuda_model_download_buffers,
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
        cuda_model_logits_host,
        cuda_model_upload_forward_state,
        cuda_model_set_progress,
        cuda_model_device_bytes,
        cuda_model_device_params,
        cuda_model_device_grads,
    };
    return &table;
}
