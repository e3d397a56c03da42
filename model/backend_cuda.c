/* model/backend_cuda.c - backend_cuda.h on top of libpacer_cuda.so, loaded with dlopen
 * (backend_cuda_abi.h says why and what the library exports). */
#include "backend_cuda.h"

#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cuda_abi.h"
#include "plan.h"

#define CUDA_LIB_NAME "libpacer_cuda.so"

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static const pacer_cuda_backend_t *backend; /* set once, under load_lock */
static char load_error[PATH_MAX + 1024];    /* why the last attempt failed */

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
        snprintf(buf, len, "%s", CUDA_LIB_NAME); /* the dynamic loader's search path */
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
        snprintf(load_error, sizeof load_error, "cannot load the CUDA backend %s: %s", path,
                 why ? why : "unknown error");
        return -1;
    }
    const pacer_cuda_backend_t *(*entry)(void) = NULL;
    *(void **)&entry = dlsym(h, PACER_CUDA_ENTRY); /* the POSIX way to read a function pointer */
    const pacer_cuda_backend_t *t = entry ? entry() : NULL;
    if (!t) {
        snprintf(load_error, sizeof load_error, "%s is not a pacer CUDA backend (no %s)", path, PACER_CUDA_ENTRY);
    } else if (cuda_backend_check(t, path, load_error, sizeof load_error) != 0) {
        t = NULL;
    }
    if (!t) {
        dlclose(h);
        return -1;
    }
    backend = t; /* the handle stays open for the life of the process */
    return 0;
}

/* Copies src into dst[len], cut to fit. */
int cuda_backend_check(const pacer_cuda_backend_t *t, const char *path, char *err, size_t errlen)
{
    /* abi first: the sizes' places in the table are this ABI's */
    if (t->abi != PACER_CUDA_ABI) {
        snprintf(err, errlen,
                 "%s was built from another version of pacer (backend ABI %d; this program: ABI %d): rebuild both",
                 path, t->abi, PACER_CUDA_ABI);
        return -1;
    }
    const struct {
        const char *name;
        size_t lib, here;
    } sizes[] = {{"model_t", t->model_bytes, sizeof(model_t)},
                 {"layer_t", t->layer_bytes, sizeof(layer_t)},
                 {"tensor_info_t", t->tensor_bytes, sizeof(tensor_info_t)}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        if (sizes[k].lib != sizes[k].here) {
            snprintf(err, errlen,
                     "%s was built from another version of pacer (a %zu-byte %s; this program's: %zu bytes): "
                     "rebuild both",
                     path, sizes[k].lib, sizes[k].name, sizes[k].here);
            return -1;
        }
    return 0;
}

static void set_str(char *dst, size_t len, const char *src)
{
    if (!len) return;
    size_t n = strlen(src);
    if (n >= len) n = len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

int cuda_backend_load(char *err, size_t errlen)
{
    pthread_mutex_lock(&load_lock);
    int rc = load_locked();
    if (rc != 0 && err) set_str(err, errlen, load_error);
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

/* CUresult values the driver probe tells apart (cuda.h; the host side has no CUDA headers). */
enum { CU_SUCCESS = 0, CU_ERROR_STUB_LIBRARY = 34, CU_ERROR_NO_DEVICE = 100 };

const char *cuda_probe_kind_name(int kind)
{
    static const char *const names[] = {"ok",        "no-library",     "no-driver",
                                        "no-device", "driver-too-old", "no-kernel-image",
                                        "cuda-error"};
    return kind >= 0 && kind <= CUDA_PROBE_ERROR ? names[kind] : "unknown";
}

/* The kernel module's release ("580.65.06") from /proc, or "" when there is none. */
static void driver_release(char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "Kernel Module");
        if (p) {
            p += strlen("Kernel Module");
            while (*p == ' ' || *p == '\t') p++;
            size_t n = 0;
            while (p[n] && (isdigit((unsigned char)p[n]) || p[n] == '.')) n++;
            if (n && n < len) {
                memcpy(buf, p, n);
                buf[n] = '\0';
            }
        }
    }
    fclose(f);
}

int cuda_device_pci_bus_id(int device, char *buf, size_t len)
{
    /* The probe (or the backend) has loaded and initialised the driver already; this only
     * takes another reference to it. */
    if (device < 0 || len < 2 || len > 1024) return -1;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return -1;
    int (*init)(unsigned) = NULL, (*get)(int *, int) = NULL, (*bus)(char *, int, int) = NULL;
    *(void **)&init = dlsym(h, "cuInit");
    *(void **)&get = dlsym(h, "cuDeviceGet");
    *(void **)&bus = dlsym(h, "cuDeviceGetPCIBusId");
    int dev = 0;
    int rc = init && get && bus && init(0) == CU_SUCCESS && get(&dev, device) == CU_SUCCESS &&
                     bus(buf, (int)len, dev) == CU_SUCCESS
                 ? 0
                 : -1;
    if (rc == 0) buf[len - 1] = '\0';
    dlclose(h);
    return rc;
}

/* What the CUDA driver says (libcuda.so.1: cuDriverGetVersion, cuInit, cuDeviceGetCount),
 * without loading the backend and the libraries it maps: what device "auto" asks before it
 * loads anything. Fills p (kind, devices, driver_version, reason) and returns p->kind:
 * CUDA_PROBE_OK when at least one device is visible, else NO_DRIVER, NO_DEVICE or ERROR. */
static int cuda_driver_probe(cuda_probe_t *p)
{
    memset(p, 0, sizeof *p);
    p->device = -1;
    /* The driver library only: the backend would map cudart, cuDNN and cuBLAS to ask. It
     * stays loaded (the driver keeps state once initialised, and the backend uses it). */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        p->kind = CUDA_PROBE_NO_DRIVER;
        snprintf(p->reason, sizeof p->reason, "no NVIDIA driver: %s%s", why ? why : "libcuda.so.1 not found",
                 access("/dev/nvidia0", F_OK) == 0 ? " (/dev/nvidia0 exists: is the driver's user-space library "
                                                     "missing from this container?)"
                                                   : "");
        return p->kind;
    }
    int (*init)(unsigned) = NULL, (*count)(int *) = NULL, (*version)(int *) = NULL;
    int (*err_name)(int, const char **) = NULL, (*err_text)(int, const char **) = NULL;
    *(void **)&init = dlsym(h, "cuInit");
    *(void **)&count = dlsym(h, "cuDeviceGetCount");
    *(void **)&version = dlsym(h, "cuDriverGetVersion");
    *(void **)&err_name = dlsym(h, "cuGetErrorName");
    *(void **)&err_text = dlsym(h, "cuGetErrorString");
    if (!init || !count || !version) {
        p->kind = CUDA_PROBE_NO_DRIVER;
        snprintf(p->reason, sizeof p->reason, "no NVIDIA driver: libcuda.so.1 lacks cuInit/cuDeviceGetCount");
        return p->kind;
    }
    if (version(&p->driver_version) != CU_SUCCESS) p->driver_version = 0;
    char rel[64];
    driver_release(rel, sizeof rel);
    int rc = init(0);
    if (rc != CU_SUCCESS) {
        const char *name = NULL, *text = NULL;
        if (!err_name || err_name(rc, &name) != CU_SUCCESS) name = NULL;
        if (!err_text || err_text(rc, &text) != CU_SUCCESS) text = NULL;
        p->kind = rc == CU_ERROR_NO_DEVICE      ? CUDA_PROBE_NO_DEVICE
                  : rc == CU_ERROR_STUB_LIBRARY ? CUDA_PROBE_NO_DRIVER
                                                : CUDA_PROBE_ERROR;
        snprintf(p->reason, sizeof p->reason, "%s: cuInit: %s (%s; error %d)%s%s",
                 p->kind == CUDA_PROBE_NO_DEVICE   ? "no CUDA device"
                 : p->kind == CUDA_PROBE_NO_DRIVER ? "no NVIDIA driver (libcuda.so.1 is the CUDA toolkit's stub)"
                                                   : "the NVIDIA driver failed to start",
                 name ? name : "?", text ? text : "no description", rc, rel[0] ? "; driver " : "", rel);
        return p->kind;
    }
    int n = 0;
    if (count(&n) != CU_SUCCESS) n = 0;
    p->devices = n;
    if (n <= 0) {
        const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
        p->kind = CUDA_PROBE_NO_DEVICE;
        snprintf(p->reason, sizeof p->reason, "no CUDA device: the NVIDIA driver%s%s (CUDA %d.%d) reports none%s%s",
                 rel[0] ? " " : "", rel, p->driver_version / 1000, p->driver_version % 1000 / 10,
                 cvd ? " with CUDA_VISIBLE_DEVICES=" : "", cvd ? cvd : "");
        return p->kind;
    }
    p->kind = CUDA_PROBE_OK;
    return p->kind;
}

int cuda_probe(int device, cuda_probe_t *p)
{
    if (cuda_driver_probe(p) != CUDA_PROBE_OK) return p->kind;
    if (cuda_backend_load(p->reason, sizeof p->reason) != 0) {
        p->kind = CUDA_PROBE_NO_LIBRARY;
        return p->kind;
    }
    return backend->probe(device, p->driver_version, p);
}

int cuda_classify_error(int cuda_error, int driver_version)
{
    const pacer_cuda_backend_t *t = use();
    return t ? t->classify_error(cuda_error, driver_version) : -1;
}

int cuda_backend_info(char *buf, size_t len)
{
    if (cuda_backend_load(buf, len) != 0) return -1;
    backend->build_info(buf, len);
    return 0;
}

void cuda_driver_info(char *buf, size_t len)
{
    cuda_probe_t p;
    char rel[64];
    driver_release(rel, sizeof rel);
    if (cuda_driver_probe(&p) == CUDA_PROBE_NO_DRIVER) {
        snprintf(buf, len, "%s", p.reason);
        return;
    }
    snprintf(buf, len, "NVIDIA driver%s%s (CUDA %d.%d), %d device(s)%s%s", rel[0] ? " " : "", rel,
             p.driver_version / 1000, p.driver_version % 1000 / 10, p.devices, p.kind == CUDA_PROBE_OK ? "" : ": ",
             p.kind == CUDA_PROBE_OK ? "" : p.reason);
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
    /* its arena keeps every output float32 at the host's offsets */
    if (m->plan && m->plan->act_bf16_outputs) {
        snprintf(err, errlen,
                 "model %s: built at bf16 products, some activations stored in bf16: the CUDA backend "
                 "computes float32 only",
                 m->name);
        return NULL;
    }
    if (cuda_backend_load(err, errlen) != 0) return NULL;
    return backend->model_create(m, device, err, errlen);
}

void cuda_model_free(cuda_model_t *cm)
{
    if (cm) backend->model_free(cm); /* a model exists only once the library is loaded */
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
int cuda_model_upload_buffers(cuda_model_t *cm, const float *host_buffers)
{
    return backend->model_upload_buffers(cm, host_buffers);
}
int cuda_model_host_register(cuda_model_t *cm, void *p, size_t bytes)
{
    return backend->model_host_register(cm, p, bytes);
}
int cuda_model_prepare_batch(cuda_model_t *cm, int B) { return backend->model_prepare_batch(cm, B); }
float *cuda_model_grads_host(cuda_model_t *cm) { return backend->model_grads_host(cm); }
float *cuda_model_input_host(cuda_model_t *cm) { return backend->model_input_host(cm); }
int32_t *cuda_model_labels_host(cuda_model_t *cm) { return backend->model_labels_host(cm); }
int cuda_model_download_grads(cuda_model_t *cm, float *host_grads, int async)
{
    return backend->model_download_grads(cm, host_grads, async);
}
int cuda_model_upload_grads(cuda_model_t *cm, const float *host_grads)
{
    return backend->model_upload_grads(cm, host_grads);
}
int cuda_model_sync(cuda_model_t *cm) { return backend->model_sync(cm); }
float cuda_model_forward(cuda_model_t *cm, const float *host_x, const int32_t *host_y, int B, int train)
{
    return backend->model_forward(cm, host_x, host_y, B, train);
}
int cuda_model_backward(cuda_model_t *cm, int B, float loss_scale)
{
    return backend->model_backward(cm, B, loss_scale);
}
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
int cuda_model_optimize(cuda_model_t *cm, const optim_step_t *o) { return backend->model_optimize(cm, o); }
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
