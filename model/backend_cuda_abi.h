/* model/backend_cuda_abi.h - the contract between pacer-worker and its CUDA backend, the
 * shared object libpacer_cuda.so (model/model_cuda.cu and kernels/cuda/, linked with
 * cudart, cuDNN and cuBLAS). The library exports one C symbol, pacer_cuda_backend(), which
 * returns this table; model/backend_cuda.c loads the library with dlopen when a rank
 * asks for a GPU and calls through the table. Nothing else of the library is called by
 * name from the worker, so a CPU-only run never maps the CUDA libraries and a binary
 * built on a machine with CUDA runs on one without it.
 *
 * A library from another build is refused: abi must be PACER_CUDA_ABI and model_bytes
 * sizeof(model_t) (the device model copies the host's layer list). Change PACER_CUDA_ABI
 * whenever the table or the meaning of an entry changes. The entries are the functions of
 * model/backend_cuda.h, documented there.
 */
#ifndef PACER_BACKEND_CUDA_ABI_H
#define PACER_BACKEND_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "model.h" /* C declarations: inside extern "C" when model_cuda.cu includes this */

#define PACER_CUDA_ABI 1
#define PACER_CUDA_ENTRY "pacer_cuda_backend"

typedef struct cuda_model cuda_model_t;

typedef struct {
    int abi;                 /* PACER_CUDA_ABI of the library's build */
    size_t model_bytes;      /* sizeof(model_t) of the library's build */
    int (*device_count)(void);
    int (*pick_device)(void);
    int (*device_name)(int device, char *name, size_t len);
    int (*memory_info)(size_t *free_bytes, size_t *total_bytes);
    cuda_model_t *(*model_create)(const model_t *m, int device, char *err, size_t errlen);
    void (*model_free)(cuda_model_t *cm);
    const char *(*model_error)(const cuda_model_t *cm);
    int (*model_upload)(cuda_model_t *cm, const model_t *m);
    int (*model_upload_params)(cuda_model_t *cm, const float *params);
    int (*model_download_params)(cuda_model_t *cm, model_t *m);
    int (*model_download_buffers)(cuda_model_t *cm, float *host_buffers);
    float *(*model_grads_host)(cuda_model_t *cm);
    float *(*model_input_host)(cuda_model_t *cm);
    int32_t *(*model_labels_host)(cuda_model_t *cm);
    int (*model_download_grads)(cuda_model_t *cm, float *host_grads, int async);
    int (*model_upload_grads)(cuda_model_t *cm, const float *host_grads);
    int (*model_sync)(cuda_model_t *cm);
    float (*model_forward)(cuda_model_t *cm, const float *host_x, const int32_t *host_y, int B, int train);
    int (*model_backward)(cuda_model_t *cm, int B, float loss_scale);
    int (*model_train_step)(cuda_model_t *cm, const float *host_x, const int32_t *host_y, int B, float loss_scale,
                            float *host_grads, float *loss);
    int (*model_sgd)(cuda_model_t *cm, float lr, float momentum, int nesterov, float weight_decay, float grad_scale,
                     float clip_norm);
    const float *(*model_logits_host)(cuda_model_t *cm, int B);
    int (*model_upload_forward_state)(cuda_model_t *cm, const model_t *m, int B);
    void (*model_set_progress)(cuda_model_t *cm, void (*fn)(void *ctx), void *ctx);
    size_t (*model_device_bytes)(const cuda_model_t *cm);
    float *(*model_device_params)(cuda_model_t *cm);
    float *(*model_device_grads)(cuda_model_t *cm);
} pacer_cuda_backend_t;

/* The library's one entry point (PACER_CUDA_ENTRY). */
const pacer_cuda_backend_t *pacer_cuda_backend(void);

#ifdef __cplusplus
}
#endif

#endif
