/* model/backend_cuda.c - backend_cuda.h on top of libpacer_cuda.so, loaded with dlopen
 * (backend_cuda_abi.h says why and what the library exports). */
#include "backend_cuda.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cuda_abi.h"

#define CUDA_LIB_NAME "libpacer_cuda.so"

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static const pacer_cuda_backend_t *backend;   /* set once, under load_lock */
static char load_error[PATH_MAX + 1024];      /* why the last attempt failed */

const char *cuda_backend_path(char *buf, size_t len)
{
    const char *env = getenv("PACER_CUDA_LIB");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return buf;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(buf, len, "%s", CUDA_LIB_NAME);   /* the dynamic loader's search path */
        return buf;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(buf, len, "%s/%s", self, CUDA_LIB_NAME);
    return buf;
}

/* Under load_lock. */
static int load_locked(void)
{
    if (backend) return 0;
    char path[PATH_MAX + 32];
    /* A process that links the library (tests, benchmarks) uses that copy. */
    void *h = dlopen(CUDA_LIB_NAME, RTLD_NOW | RTLD_NOLOAD);
    if (h) {
        snprintf(path, sizeof path, "%s (linked)", CUDA_LIB_NAME);
    } else {
        cuda_backend_path(path, sizeof path);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load the CUDA backend %s: %s", path, why ? why : "unknown error");
        return -1;
    }
    const pacer_cuda_backend_t *(*entry)(void) = NULL;
    *(void **)&entry = dlsym(h, PACER_CUDA_ENTRY);   /* the POSIX way to read a function pointer */
    const pacer_cuda_backend_t *t = entry ? entry() : NULL;
    if (!t) {
        snprintf(load_error, sizeof load_error, "%s is not a pacer CUDA backend (no %s)", path, PACER_CUDA_ENTRY);
    } else if (t->abi != PACER_CUDA_ABI || t->model_bytes != sizeof(model_t)) {
        snprintf(load_error, sizeof load_error,
                 "%s was built from another version of pacer (backend ABI %d with a %zu-byte model_t; this "
                 "program: ABI %d, %zu bytes): rebuild both",
                 path, t->abi, t->model_bytes, PACER_CUDA_ABI, sizeof(model_t));
        t = NULL;
    }
    if (!t) {
        dlclose(h);
        return -1;
    }
    backend = t;   /* the handle stays open for the life of the process */
    return 0;
}

int cuda_backend_load(char *err, size_t errlen)
{
    pthread_mutex_lock(&load_lock);
    int rc = load_locked();
    if (rc != 0 && err && errlen) snprintf(err, errlen, "%s", load_error);
    pthread_mutex_unlock(&load_lock);
    return rc;
}

/* The table, loading the library on first use; NULL when it cannot be loaded. */
static const pacer_cuda_backend_t *use(void)
{
    pthread_mutex_lock(&load_lock);
    const pacer_cuda_backend_t *t = load_locked() == 0 ? backend : NULL;
    pthread_mutex_unlock(&load_lock);
    return t;
}

/* ---- devices: usable before (and without) the library ----------------------------------- */

int cuda_driver_device_count(void)
{
    /* The driver library only: the backend would map cudart, cuDNN and cuBLAS to ask. It
     * stays loaded (the driver keeps state once initialised, and the backend uses it). */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return -1;
    int (*init)(unsigned) = NULL, (*count)(int *) = NULL;
    *(void **)&init = dlsym(h, "cuInit");
    *(void **)&count = dlsym(h, "cuDeviceGetCount");
    int n = 0;
    if (!init || !count || init(0) != 0 || count(&n) != 0) n = 0;   /* CUresult 0: success */
    return n;
}

int cuda_device_count(void)
{
    const pacer_cuda_backend_t *t = use();
    return t ? t->device_count() : 0;
}

int cuda_pick_device(void)
{
    const pacer_cuda_backend_t *t = use();
    return t ? t->pick_device() : -1;
}

int cuda_device_name(int device, char *name, size_t len)
{
    const pacer_cuda_backend_t *t = use();
    if (t) return t->device_name(device, name, len);
    if (len) name[0] = '\0';
    return -1;
}

int cuda_memory_info(size_t *free_bytes, size_t *total_bytes)
{
    const pacer_cuda_backend_t *t = use();
    return t ? t->memory_info(free_bytes, total_bytes) : -1;
}

cuda_model_t *cuda_model_create(const model_t *m, int device, char *err, size_t errlen)
{
    if (cuda_backend_load(err, errlen) != 0) return NULL;
    return backend->model_create(m, device, err, errlen);
}

void cuda_model_free(cuda_model_t *cm)
{
    if (cm) backend->model_free(cm);   /* a model exists only once the library is loaded */
}

/* ---- a model's calls: cm exists, so the library is loaded ------------------------------- */

const char *cuda_model_error(const cuda_model_t *cm) { return backend->model_error(cm); }
int cuda_model_upload(cuda_model_t *cm, const model_t *m) { return backend->model_upload(cm, m); }
int cuda_model_upload_params(cuda_model_t *cm, const float *params) { return backend->model_upload_params(cm, params); }
int cuda_model_download_params(cuda_model_t *cm, model_t *m) { return backend->model_download_params(cm, m); }
int cuda_model_download_buffers(cuda_model_t *cm, float *host_buffers)
{
    return backend->model_download_buffers(cm, host_buffers);
}
float *cuda_model_grads_host(cuda_model_t *cm) { return backend->model_grads_host(cm); }
float *cuda_model_input_host(cuda_model_t *cm) { return backend->model_input_host(cm); }
int32_t *cuda_model_labels_host(cuda_model_t *cm) { return backend->model_labels_host(cm); }
int cuda_model_download_grads(cuda_model_t *cm, float *host_grads, int async)
{
    return backend->model_download_grads(cm, host_grads, async);
}
int cuda_model_upload_grads(cuda_model_t *cm, const float *host_grads) { return backend->model_upload_grads(cm, host_grads); }
int cuda_model_sync(cuda_model_t *cm) { return backend->model_sync(cm); }
float cuda_model_forward(cuda_model_t *cm, const float *host_x, const int32_t *host_y, int B, int train)
{
    return backend->model_forward(cm, host_x, host_y, B, train);
}
int cuda_model_backward(cuda_model_t *cm, int B, float loss_scale) { return backend->model_backward(cm, B, loss_scale); }
int cuda_model_train_step(cuda_model_t *cm, const float *host_x, const int32_t *host_y, int B, float loss_scale,
                          float *host_grads, float *loss)
{
    return backend->model_train_step(cm, host_x, host_y, B, loss_scale, host_grads, loss);
}
int cuda_model_sgd(cuda_model_t *cm, float lr, float momentum, int nesterov, float weight_decay, float grad_scale,
                   float clip_norm)
{
    return backend->model_sgd(cm, lr, momentum, nesterov, weight_decay, grad_scale, clip_norm);
}
const float *cuda_model_logits_host(cuda_model_t *cm, int B) { return backend->model_logits_host(cm, B); }
int cuda_model_upload_forward_state(cuda_model_t *cm, const model_t *m, int B)
{
    return backend->model_upload_forward_state(cm, m, B);
}
void cuda_model_set_progress(cuda_model_t *cm, void (*fn)(void *ctx), void *ctx)
{
    backend->model_set_progress(cm, fn, ctx);
}
size_t cuda_model_device_bytes(const cuda_model_t *cm) { return backend->model_device_bytes(cm); }
float *cuda_model_device_params(cuda_model_t *cm) { return backend->model_device_params(cm); }
float *cuda_model_device_grads(cuda_model_t *cm) { return backend->model_device_grads(cm); }
