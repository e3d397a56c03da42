/* model/backend_cuda_abi.h - the contract between pacer-worker and its CUDA backend, the
 * shared object libpacer_cuda.so (model/model_cuda.cu and kernels/cuda/, linked with
 * cudart, cuDNN and cuBLAS). The library exports one C symbol, pacer_cuda_backend(), which
 * returns this table; model/backend_cuda.c loads the library with dlopen when a rank
 * asks for a GPU and calls through the table. Nothing else of the library is called by
 * name from the worker, so a CPU-only run never maps the CUDA libraries and a binary
 * built on a machine with CUDA runs on one without it.
 *
 * A library from another build is refused (cuda_backend_check): abi must be PACER_CUDA_ABI,
 * and model_bytes, layer_bytes and tensor_bytes the sizes of model_t, layer_t and
 * tensor_info_t, each checked apart (the device model copies the host's model, layer list
 * and tensor list): a struct that grows or shrinks (a kind's new field) is refused by its
 * size, with no change here. Change PACER_CUDA_ABI whenever the table or the meaning of an
 * entry or field changes, or a struct's layout changes at the same size (a field moved).
 * It reads no execution plan (plan.h): a fusion changes nothing here. The entries are the
 * functions of model/backend_cuda.h, documented there.
 */
#ifndef PACER_BACKEND_CUDA_ABI_H
#define PACER_BACKEND_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "model.h" /* C declarations: inside extern "C" when model_cuda.cu includes this */

/* 4: MODEL_GRAD_EXTRA 4 (the noise scale's extras), the grads buffers' size; 5: every layer
 * kind runs, upload and download_params carry the dropout seed and step; 6: layer_t's clip,
 * hard sigmoid, mul and batch-norm momentum fields (ReLU6, hard-swish, SiLU and
 * squeeze-excitation networks); 7:
 * LAYER_STOCHASTIC_DEPTH; 8: model_t's moment2 and label_smoothing, tensor_info_t's no_decay,
 * model_optimize (AdamW, parameter groups);
 * 9: layer_t's and model_t's N-D shapes (model_shape_t), the unary kinds LAYER_EXP to LAYER_POW
 * and the broadcast, constant and movement kinds (empty rows: not on the GPU);
 * 10: layer_t's red_mask and red_keep, LAYER_REDUCE_MEAN, LAYER_REDUCE_SUM and
 * LAYER_LINEAR (empty rows);
 * 11: the transformers' kinds LAYER_SOFTMAX to LAYER_LAYERNORM (Erf and GELU through the unary
 * launcher);
 * 12: Swin's LAYER_GATHER_PARAM and layer_t's gp_table;
 * 13: the vision transformers' LAYER_EXPAND (the class token);
 * 14: the language models' kinds LAYER_EMBED and LAYER_CAUSAL_SOFTMAX,
 * layer_t's tied and model_t's positions;
 * 15: LAYER_BPOW (Pow of a tensor exponent);
 * 16: layer_t's causal_bmm;
 * 17: labels, probabilities and logits of B * positions rows (a language model's loss);
 * 18: LAYER_CONV_TRANSPOSE (an empty row: not on the GPU);
 * 19: model_t's lora (the adapters' list, model/lora.h);
 * 20: layer_t's fusion marks and model_t's dact_* moved to model_t's plan (plan.h; the device reads
 * none of it); the table's layer_bytes and tensor_bytes;
 * 21: layer_t's per-kind parameters in the union op (one member per family of kinds) */
#define PACER_CUDA_ABI 21
#define PACER_CUDA_ENTRY "pacer_cuda_backend"

typedef struct cuda_model cuda_model_t;

/* Why a GPU can or cannot be used (cuda_probe in backend_cuda.h). The kinds are what a
 * person does about it: install a driver, find a GPU, update the driver, rebuild for this
 * GPU, or read the CUDA error. */
typedef enum {
    CUDA_PROBE_OK = 0,
    CUDA_PROBE_NO_LIBRARY,      /* libpacer_cuda.so (or a library it needs) cannot be loaded */
    CUDA_PROBE_NO_DRIVER,       /* no NVIDIA driver: libcuda.so.1 absent, or the toolkit's stub */
    CUDA_PROBE_NO_DEVICE,       /* the driver sees no GPU (or CUDA_VISIBLE_DEVICES hides them) */
    CUDA_PROBE_DRIVER_TOO_OLD,  /* the driver predates the CUDA runtime the backend was built with */
    CUDA_PROBE_NO_KERNEL_IMAGE, /* the backend has no code this GPU can run (SASS or PTX) */
    CUDA_PROBE_ERROR,           /* anything else; the reason carries the CUDA error */
} cuda_probe_kind_t;

typedef struct {
    int kind;               /* cuda_probe_kind_t */
    int devices;            /* devices the driver reports (0 when it was not asked) */
    int device;             /* the device probed, -1 when none was reached */
    int cc_major, cc_minor; /* its compute capability */
    int driver_version;     /* cuDriverGetVersion: 12040 = CUDA 12.4; 0 = no driver */
    int runtime_version;    /* CUDART_VERSION the backend was built with; 0 = not loaded */
    char name[256];         /* the device's name, when reached */
    char reason[768];       /* what is wrong and what to do about it; "" when kind is OK */
} cuda_probe_t;

typedef struct {
    int abi;             /* PACER_CUDA_ABI of the library's build */
    size_t model_bytes;  /* sizeof(model_t) of the library's build */
    size_t layer_bytes;  /* sizeof(layer_t) */
    size_t tensor_bytes; /* sizeof(tensor_info_t) */
    /* Probes device (-1: the local rank's, as pick_device) for a training run: the driver's
     * version against the runtime's (driver_version from libcuda, 0 if unknown), the
     * runtime's device count, activation, and a trivial kernel launched and waited for,
     * so a GPU without a matching kernel image is found here, not in the first step. */
    int (*probe)(int device, int driver_version, cuda_probe_t *out);
    /* The cuda_probe_kind_t of a cudaError_t (driver_version as above). Host-only. */
    int (*classify_error)(int cuda_error, int driver_version);
    /* One line: the CUDA runtime and cuDNN the library was built with, the driver that
     * runtime needs, and the GPU architectures it has code for. */
    void (*build_info)(char *buf, size_t len);
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
    int (*model_upload_buffers)(cuda_model_t *cm, const float *host_buffers);
    int (*model_host_register)(cuda_model_t *cm, void *p, size_t bytes);
    int (*model_prepare_batch)(cuda_model_t *cm, int B);
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
    int (*model_optimize)(cuda_model_t *cm, const optim_step_t *o);
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
