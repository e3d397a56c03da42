/* tests/fakecuda/backend.c - a stand-in for libpacer_cuda.so in tests: the same table
 * (model/backend_cuda_abi.h), whose "device" is a second copy of the model in host memory,
 * computed by the CPU reference (model/model.c, kernels/cpu). pacer-worker loads it through
 * PACER_CUDA_LIB exactly like the real backend, so the integration tests run the worker's
 * GPU path (device selection, page-locked buffers, the device optimizer, who owns the
 * weights and the batch-norm statistics when, evaluation on the device) on a machine without
 * a GPU. What the worker uploads, downloads or leaves on the "device" stays apart from its own
 * model as on a GPU: a transfer the worker forgets shows as a result that differs from the
 * CPU path's, and a correct worker gives bit-identical results (the same code in the same
 * order; the optimizer below is worker_apply_gradient's rule, as cuda_model_sgd is).
 *
 * Every layer kind the CPU reference runs runs here (imported ONNX graphs included), and
 * dropout counts its steps from the host's like model_cuda.cu, so an imported model's GPU
 * path is checked against its CPU path too.
 *
 * PACER_FAKE_PROBE_FAIL=KIND (a cuda_probe_kind_t number) makes the probe fail with that
 * kind, for the fallback paths. Built as $(BUILD)/tests/libpacer_fakecuda.so with its own
 * copy of the model code (-Bsymbolic), so nothing is shared with the worker's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_abi.h"
#include "ops.h"

struct cuda_model {
    model_t *m;     /* the "device": params, grads, momentum, buffers, arenas */
    float *x;       /* (max_batch, C, H, W) the batch of the last forward */
    int32_t *y;     /* (max_batch) */
    float *h_grads; /* the "pinned staging" (nparams + MODEL_GRAD_EXTRA) */
    float *h_x;
    int32_t *h_y;
    float *logits; /* (max_batch * positions, num_classes) */
    size_t in_floats;
    int fwd_B;      /* batch of the last training forward; 0: none */
    int registered; /* buffers the worker page-locked */
    void (*progress)(void *ctx);
    void *progress_ctx;
    char err[256];
};

static int fail(cuda_model_t *cm, const char *what)
{
    snprintf(cm->err, sizeof cm->err, "fake CUDA backend: %s", what);
    return -1;
}

static int probe(int device, int driver_version, cuda_probe_t *p)
{
    p->runtime_version = 13000;
    p->driver_version = driver_version;
    p->devices = 1;
    p->device = device < 0 ? 0 : device;
    p->cc_major = 9;
    p->cc_minor = 0;
    snprintf(p->name, sizeof p->name, "pacer fake CUDA device (host memory)");
    p->reason[0] = '\0';
    const char *f = getenv("PACER_FAKE_PROBE_FAIL");
    p->kind = f && *f ? atoi(f) : CUDA_PROBE_OK;
    if (p->kind != CUDA_PROBE_OK) snprintf(p->reason, sizeof p->reason, "fake CUDA backend: probe kind %d", p->kind);
    return p->kind;
}

static int classify_error(int cuda_error, int driver_version)
{
    (void)driver_version;
    return cuda_error == 0 ? CUDA_PROBE_OK : CUDA_PROBE_ERROR;
}

static void build_info(char *buf, size_t len)
{
    snprintf(buf, len, "fake CUDA backend for tests: the CPU reference on host memory");
}

static int device_count(void) { return 1; }
static int pick_device(void) { return 0; }
static int device_name(int device, char *name, size_t len)
{
    (void)device;
    snprintf(name, len, "pacer fake CUDA device (host memory)");
    return 0;
}
static int memory_info(size_t *free_bytes, size_t *total_bytes)
{
    *free_bytes = *total_bytes = 0;
    return 0;
}

static void model_free_(cuda_model_t *cm)
{
    if (!cm) return;
    model_free(cm->m);
    free(cm->x);
    free(cm->y);
    free(cm->h_grads);
    free(cm->h_x);
    free(cm->h_y);
    free(cm->logits);
    free(cm);
}

static cuda_model_t *model_create_(const model_t *m, int device, char *err, size_t errlen)
{
    (void)device;
    cuda_model_t *cm = calloc(1, sizeof *cm);
    if (!cm) {
        snprintf(err, errlen, "fake CUDA backend: out of memory");
        return NULL;
    }
    /* The device's copy of the host's layer list, never rebuilt by name: the catalog of
     * this library is not the worker's (it may not hold a model the worker added). */
    if (model_clone(m, &cm->m, err, errlen) != 0) {
        free(cm);
        return NULL;
    }
    cm->in_floats = (size_t)m->C * m->H * m->W;
    const size_t B = (size_t)m->max_batch, rows = B * (size_t)m->positions; /* a label per position */
    cm->x = calloc(B * cm->in_floats, sizeof(float));
    cm->h_x = calloc(B * cm->in_floats, sizeof(float));
    cm->y = calloc(rows, sizeof(int32_t));
    cm->h_y = calloc(rows, sizeof(int32_t));
    cm->h_grads = calloc(m->nparams + MODEL_GRAD_EXTRA, sizeof(float));
    cm->logits = calloc(rows * (size_t)m->num_classes, sizeof(float));
    if (!cm->x || !cm->h_x || !cm->y || !cm->h_y || !cm->h_grads || !cm->logits) {
        snprintf(err, errlen, "fake CUDA backend: out of memory");
        model_free_(cm);
        return NULL;
    }
    return cm;
}

static const char *model_error(const cuda_model_t *cm) { return cm ? cm->err : "no model"; }

static int model_upload(cuda_model_t *cm, const model_t *m)
{
    if (m->nparams != cm->m->nparams || m->nbuffers != cm->m->nbuffers) return fail(cm, "another model");
    memcpy(cm->m->params, m->params, m->nparams * sizeof(float));
    memcpy(cm->m->momentum, m->momentum, m->nparams * sizeof(float));
    if (m->moment2) {
        if (!cm->m->moment2 && model_alloc_moment2(cm->m) != 0) return fail(cm, "out of memory");
        memcpy(cm->m->moment2, m->moment2, m->nparams * sizeof(float));
    }
    memcpy(cm->m->buffers, m->buffers, m->nbuffers * sizeof(float));
    /* the dropout masks go on from the host's, as on the real device */
    cm->m->dropout_seed = m->dropout_seed;
    cm->m->dropout_step = m->dropout_step;
    return 0;
}

static int upload_params(cuda_model_t *cm, const float *params)
{
    memcpy(cm->m->params, params, cm->m->nparams * sizeof(float));
    return 0;
}

static int download_params(cuda_model_t *cm, model_t *m)
{
    if (m->nparams != cm->m->nparams || m->nbuffers != cm->m->nbuffers) return fail(cm, "another model");
    memcpy(m->params, cm->m->params, m->nparams * sizeof(float));
    memcpy(m->momentum, cm->m->momentum, m->nparams * sizeof(float));
    if (m->moment2 && cm->m->moment2) memcpy(m->moment2, cm->m->moment2, m->nparams * sizeof(float));
    memcpy(m->buffers, cm->m->buffers, m->nbuffers * sizeof(float));
    m->dropout_step = cm->m->dropout_step;
    return 0;
}

static int download_buffers(cuda_model_t *cm, float *host)
{
    memcpy(host, cm->m->buffers, cm->m->nbuffers * sizeof(float));
    return 0;
}

static int upload_buffers(cuda_model_t *cm, const float *host)
{
    memcpy(cm->m->buffers, host, cm->m->nbuffers * sizeof(float));
    return 0;
}

static int host_register(cuda_model_t *cm, void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
    cm->registered++;
    return 0;
}

static int prepare_batch(cuda_model_t *cm, int B)
{
    return B >= 1 && B <= cm->m->max_batch ? 0 : fail(cm, "batch must be in [1, max_batch]");
}

static float *grads_host(cuda_model_t *cm) { return cm->h_grads; }
static float *input_host(cuda_model_t *cm) { return cm->h_x; }
static int32_t *labels_host(cuda_model_t *cm) { return cm->h_y; }

static int download_grads(cuda_model_t *cm, float *host, int async)
{
    (void)async;
    memcpy(host ? host : cm->h_grads, cm->m->grads, cm->m->nparams * sizeof(float));
    return 0;
}

static int upload_grads(cuda_model_t *cm, const float *host)
{
    memcpy(cm->m->grads, host, cm->m->nparams * sizeof(float));
    return 0;
}

static int sync_(cuda_model_t *cm)
{
    (void)cm;
    return 0;
}

/* The batch is copied "up" first, as the device would: the caller may reuse its buffers. */
static float forward(cuda_model_t *cm, const float *x, const int32_t *y, int B, int train)
{
    cm->fwd_B = 0;
    if (B < 1 || B > cm->m->max_batch) return (float)fail(cm, "batch must be in [1, max_batch]");
    memcpy(cm->x, x, (size_t)B * cm->in_floats * sizeof(float));
    const size_t rows = (size_t)B * cm->m->positions;
    if (y) memcpy(cm->y, y, rows * sizeof(int32_t));
    else memset(cm->y, 0, rows * sizeof(int32_t));
    float loss = model_forward(cm->m, cm->x, cm->y, B, train);
    memcpy(cm->logits, model_logits(cm->m), rows * cm->m->num_classes * sizeof(float));
    if (y && train) cm->fwd_B = B;
    return y ? loss : 0.0f;
}

static int backward(cuda_model_t *cm, int B, float loss_scale)
{
    if (cm->fwd_B != B) return fail(cm, "backward needs a training forward of the same batch");
    model_backward(cm->m, cm->x, cm->y, B, loss_scale);
    return 0;
}

static int train_step(cuda_model_t *cm, const float *x, const int32_t *y, int B, float loss_scale, float *host_grads,
                      float *loss)
{
    if (!y) return fail(cm, "labels are required");
    float l = forward(cm, x, y, B, 1);
    if (l < 0 || backward(cm, B, loss_scale) != 0) return -1;
    if (cm->progress) cm->progress(cm->progress_ctx); /* the wait's MPI progress */
    download_grads(cm, host_grads, 0);
    if (loss) *loss = l;
    return 0;
}

/* worker_apply_gradient's rule, as the real backend's cuda_clip_scale + cuda_sgd_update. */
static int sgd(cuda_model_t *cm, float lr, float momentum, int nesterov, float weight_decay, float grad_scale,
               float clip_norm)
{
    model_t *m = cm->m;
    if (clip_norm > 0) {
        float norm = grad_scale * (float)sqrt(sum_squares(m->nparams, m->grads));
        if (norm > clip_norm) grad_scale *= clip_norm / norm;
    }
    sgd_update(m->nparams, m->params, m->grads, m->momentum, lr, momentum, nesterov, weight_decay, grad_scale);
    return 0;
}

/* worker_apply_gradient's host rule on the device's grads, as cuda_model_optimize. */
static int optimize(cuda_model_t *cm, const optim_step_t *o)
{
    if (o->adamw && !cm->m->moment2 && model_alloc_moment2(cm->m) != 0) return fail(cm, "out of memory");
    model_apply_optimizer(cm->m, cm->m->grads, o);
    return 0;
}

static const float *logits_host(cuda_model_t *cm, int B)
{
    if (B < 1 || B > cm->m->max_batch) {
        fail(cm, "batch must be in [1, max_batch]");
        return NULL;
    }
    return cm->logits;
}

/* model_cuda.cu's: the host's activations, saved statistics, argmax and probabilities
 * replace the device's after a training forward of the same batch. */
static int upload_forward_state(cuda_model_t *cm, const model_t *m, int B)
{
    model_t *d = cm->m;
    if (m->nparams != d->nparams || m->act_floats != d->act_floats || m->aux_floats != d->aux_floats ||
        m->argmax_ints != d->argmax_ints)
        return fail(cm, "another model");
    if (cm->fwd_B != B) return fail(cm, "upload_forward_state needs a training forward of the same batch first");
    memcpy(d->acts, m->acts, m->act_floats * sizeof(float));
    memcpy(d->aux, m->aux, m->aux_floats * sizeof(float));
    memcpy(d->argmax, m->argmax, m->argmax_ints * sizeof(int32_t));
    memcpy(d->probs, m->probs, (size_t)B * m->positions * m->num_classes * sizeof(float));
    return 0;
}

static void set_progress(cuda_model_t *cm, void (*fn)(void *ctx), void *ctx)
{
    cm->progress = fn;
    cm->progress_ctx = ctx;
}

static size_t device_bytes(const cuda_model_t *cm)
{
    (void)cm;
    return 0;
}
static float *device_params(cuda_model_t *cm) { return cm->m->params; }
static float *device_grads(cuda_model_t *cm) { return cm->m->grads; }

const pacer_cuda_backend_t *pacer_cuda_backend(void)
{
    static const pacer_cuda_backend_t table = {
        .abi = PACER_CUDA_ABI,
        .model_bytes = sizeof(model_t),
        .layer_bytes = sizeof(layer_t),
        .tensor_bytes = sizeof(tensor_info_t),
        .probe = probe,
        .classify_error = classify_error,
        .build_info = build_info,
        .device_count = device_count,
        .pick_device = pick_device,
        .device_name = device_name,
        .memory_info = memory_info,
        .model_create = model_create_,
        .model_free = model_free_,
        .model_error = model_error,
        .model_upload = model_upload,
        .model_upload_params = upload_params,
        .model_download_params = download_params,
        .model_download_buffers = download_buffers,
        .model_upload_buffers = upload_buffers,
        .model_host_register = host_register,
        .model_prepare_batch = prepare_batch,
        .model_grads_host = grads_host,
        .model_input_host = input_host,
        .model_labels_host = labels_host,
        .model_download_grads = download_grads,
        .model_upload_grads = upload_grads,
        .model_sync = sync_,
        .model_forward = forward,
        .model_backward = backward,
        .model_train_step = train_step,
        .model_sgd = sgd,
        .model_optimize = optimize,
        .model_logits_host = logits_host,
        .model_upload_forward_state = upload_forward_state,
        .model_set_progress = set_progress,
        .model_device_bytes = device_bytes,
        .model_device_params = device_params,
        .model_device_grads = device_grads,
    };
    return &table;
}
