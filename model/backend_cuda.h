/* model/backend_cuda.h - the GPU copy of a model_t: the same layer list and the same fused
 * buffers (params, grads + MODEL_GRAD_EXTRA, momentum, buffers) at the same offsets, in
 * device memory, plus an activation arena for max_batch. Implemented in
 * model/model_cuda.cu on the ops of kernels/cuda/ops_cuda.h.
 *
 * Life of a training step on the device (what the worker does, worker/train.c):
 *   cuda_model_train_step  copy x, y up -> forward -> backward -> grads down into the
 *                          worker's model->grads (page-locked with cuda_model_host_register,
 *                          so the copies are DMA) -> one wait
 *   exchange               model->grads go to MPI as on a CPU rank
 *   update                 on the device: cuda_model_upload_grads of the reduced gradient
 *                          (skipped when the rank's own gradient is applied), then
 *                          cuda_model_optimize; or on the host by the algorithm (a PS
 *                          worker; hpsgd's merge), whose new weights go up with the next step
 *
 * Ownership: the device holds the authoritative batch-norm running statistics (forward
 * updates them there) and, after cuda_model_optimize, the weights and moments; the host copy is
 * refreshed by the download functions and pushed back by the upload ones. worker.h says
 * when the worker does which.
 *
 * Errors: functions returning int give 0 or -1; cuda_model_forward returns -1.0f (a
 * cross-entropy loss is never negative). The message is cuda_model_error(cm). Nothing here
 * exits or prints.
 *
 * Loading: the implementation is the shared object libpacer_cuda.so (built when nvcc and
 * cuDNN are found), which alone links cudart, cuDNN and cuBLAS. This file's functions are
 * implemented by model/backend_cuda.c, which loads it with dlopen: cuda_backend_load()
 * says why it cannot. Before it is loaded cuda_device_count() is 0, cuda_pick_device()
 * -1 and cuda_model_create fails with the reason; those four device functions and
 * cuda_model_create load it on first use, and cuda_model_free(NULL) never does. A
 * pacer-worker that trains on the CPU never loads it, so it runs where CUDA is absent:
 * device "cpu" never, "auto" only when the driver reports a device.
 */
#ifndef PACER_BACKEND_CUDA_H
#define PACER_BACKEND_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "backend_cuda_abi.h" /* cuda_probe_t and its kinds */
#include "model.h"

typedef struct cuda_model cuda_model_t;

#ifdef __cplusplus
extern "C" {
#endif

/* Loads the backend unless it is loaded: a copy the process already links (the parity
 * tests, gpu_bench), else the file cuda_backend_path() names. Returns 0, or -1 with err
 * naming the file and what the loader said (dlerror), or why the library was refused
 * (not a pacer backend, or built from another version of pacer). Thread-safe. */
int cuda_backend_load(char *err, size_t errlen);
/* Whether t, the table of the library at path, was built from this program's sources: its
 * ABI number, then the sizes of model_t, layer_t and tensor_info_t, each checked apart.
 * 0, or -1 with err naming the library, what differs and both values. */
int cuda_backend_check(const pacer_cuda_backend_t *t, const char *path, char *err, size_t errlen);
/* $PACER_CUDA_LIB when set, else libpacer_cuda.so in the directory of this executable
 * (symbolic links resolved). Returns buf. */
const char *cuda_backend_path(char *buf, size_t len);
/* Whether a rank can train on device (-1: the local rank's, as cuda_pick_device): the
 * driver probe, the backend loaded, the driver's CUDA version against the runtime the
 * backend was built with, the runtime's device count, the device activated and a trivial
 * kernel run on it. Returns p->kind; p->reason says what is wrong and what to do. */
int cuda_probe(int device, cuda_probe_t *p);
/* "ok", "no-driver", "no-device", "driver-too-old", "no-kernel-image", ... */
const char *cuda_probe_kind_name(int kind);
/* The cuda_probe_kind_t of a cudaError_t value (loads the backend; -1 when it cannot be). */
int cuda_classify_error(int cuda_error, int driver_version);
/* One line on the backend: the CUDA runtime and cuDNN it was built with, the driver that
 * needs, the GPU architectures it has code for. Loads it (and the CUDA libraries it links,
 * but does not initialise CUDA); returns 0, or -1 with buf saying why it cannot be loaded. */
int cuda_backend_info(char *buf, size_t len);
/* One line on the driver found: release, CUDA version and devices, or why there is none.
 * Never loads the backend. */
void cuda_driver_info(char *buf, size_t len);

/* Visible devices; 0 when there is no driver or GPU, whatever the reason (cuda_probe says
 * which). Never prints, never fails. */
int cuda_device_count(void);
/* The device this process should use: local rank % device count, the local rank taken from
 * OMPI_COMM_WORLD_LOCAL_RANK (then MPI_LOCALRANKID, SLURM_LOCALID; 0 when none is set).
 * Returns -1 when no device is visible. */
int cuda_pick_device(void);
int cuda_device_name(int device, char *name, size_t len);
/* The PCI bus id of this process's CUDA device (e.g. "0000:3B:00.0", what NVML looks a
 * device up by), from the driver library (cuDeviceGetPCIBusId) without the backend.
 * Returns 0, or -1 when there is no driver or no such device. */
int cuda_device_pci_bus_id(int device, char *buf, size_t len);
/* Free and total memory of the current device in bytes; 0 or -1. */
int cuda_memory_info(size_t *free_bytes, size_t *total_bytes);

/* Builds the device model for m (its layer list, sizes and max_batch; not its values: call
 * cuda_model_upload next). Every layer kind of model.h runs on the device; a model the
 * backend cannot run is refused here with the layer named. Returns NULL with err set on
 * failure. */
cuda_model_t *cuda_model_create(const model_t *m, int device, char *err, size_t errlen);
void cuda_model_free(cuda_model_t *cm);
const char *cuda_model_error(const cuda_model_t *cm);

/* Host <-> device copies of the fused buffers; synchronous. m must be the model cm was
 * built from (same name and sizes). */
/* upload also takes m's dropout_seed and dropout_step (the device counts its own training
 * forwards from there, as model_forward does), download_params gives the step back. */
int cuda_model_upload(cuda_model_t *cm, const model_t *m);           /* params, momentum, buffers */
int cuda_model_upload_params(cuda_model_t *cm, const float *params); /* (nparams) only */
int cuda_model_download_params(cuda_model_t *cm, model_t *m);        /* params, momentum, buffers */
/* Only the non-trained buffers (batch-norm running statistics, nbuffers floats), which the
 * device forward updates: what a host-side optimizer setup must fetch before a checkpoint or
 * a host evaluation (download_params would also overwrite the host momentum). */
int cuda_model_download_buffers(cuda_model_t *cm, float *host_buffers);
/* The reverse: after the host changed them (averaged, broadcast, restored). */
int cuda_model_upload_buffers(cuda_model_t *cm, const float *host_buffers);
/* Page-locks bytes of the caller's host memory at p for the life of cm (undone by
 * cuda_model_free, which must come before the memory is freed), so copies to and from it
 * are DMA: the batch (x, y), params, grads. p must not share a page with memory already
 * registered. At most 8 buffers. 0, or -1 (the memory then stays pageable and still works). */
int cuda_model_host_register(cuda_model_t *cm, void *p, size_t bytes);
/* Readies every convolution for batch B (1 <= B <= max_batch): algorithms chosen before for
 * B are reused, a new B gets its choice now. The step does this itself; calling it before
 * the timed part keeps cuDNN's heuristics out of the step time after a re-plan. */
int cuda_model_prepare_batch(cuda_model_t *cm, int B);

/* Pinned host staging, owned by cm: grads has nparams + MODEL_GRAD_EXTRA floats (the host
 * layout, so an algorithm can append [batch, batch*loss] and hand it to MPI directly);
 * input/labels hold max_batch samples: a batch gathered there skips one host copy. A batch
 * from memory neither here nor registered is copied here first. */
float *cuda_model_grads_host(cuda_model_t *cm);
float *cuda_model_input_host(cuda_model_t *cm);
int32_t *cuda_model_labels_host(cuda_model_t *cm);

/* Copies the nparams gradient floats to host_grads (NULL: the pinned staging). async = 0
 * waits for the copy; async = 1 returns at once and cuda_model_sync waits. */
int cuda_model_download_grads(cuda_model_t *cm, float *host_grads, int async);
/* Copies nparams floats of (e.g. allreduced) gradient from the host into the device grads. */
int cuda_model_upload_grads(cuda_model_t *cm, const float *host_grads);
int cuda_model_sync(cuda_model_t *cm);

/* Forward pass of B <= max_batch samples x (B, C, H, W) from host memory; train selects
 * batch-norm mode (and running-stat updates). Returns the mean cross-entropy against y
 * (y may be NULL: logits only, returns 0), or -1.0f on error. Waits for the result. */
float cuda_model_forward(cuda_model_t *cm, const float *host_x, const int32_t *host_y, int B, int train);
/* Backward after a training forward of the same B: writes the gradient of
 * loss_scale * mean loss into the device grads (every tensor written). Asynchronous. */
int cuda_model_backward(cuda_model_t *cm, int B, float loss_scale);
/* forward(train) + backward + gradient download into host_grads (NULL: the pinned
 * staging) with a single synchronisation at the end; *loss receives the mean loss. */
int cuda_model_train_step(cuda_model_t *cm, const float *host_x, const int32_t *host_y, int B, float loss_scale,
                          float *host_grads, float *loss);
/* The worker's update on the device grads (worker_apply_gradient): clip grad_scale*g to
 * clip_norm (<= 0: off; the norm is computed on the device, no round trip), then
 * sgd_update with grad_scale. Asynchronous. */
int cuda_model_sgd(cuda_model_t *cm, float lr, float momentum, int nesterov, float weight_decay, float grad_scale,
                   float clip_norm);
/* The worker's step (ops.h's optim_step_t, model_apply_optimizer's rule) on the device
 * grads: clipping over the whole gradient, then sgd or AdamW over the weight-decay runs,
 * the moments on the device (uploaded and downloaded with the momentum). Asynchronous. */
int cuda_model_optimize(cuda_model_t *cm, const optim_step_t *o);
/* The logits (B, num_classes) of the last forward, copied to pinned host memory owned by
 * cm; NULL on error. */
const float *cuda_model_logits_host(cuda_model_t *cm, int B);
/* For parity tests and debugging: after model_forward(m, x, y, B, 1) on the host and
 * cuda_model_forward(cm, x, y, B, 1) on the device, replaces the device's forward state
 * (activations, batch-norm saved statistics, maxpool argmax, softmax probabilities) by the
 * host's, so that cuda_model_backward runs on exactly the host's activations (same ReLU
 * gates and argmax) and its gradients can be compared tightly. Synchronous. */
int cuda_model_upload_forward_state(cuda_model_t *cm, const model_t *m, int B);

/* Called every ~100 us while the host waits for cuda_model_train_step (lets an algorithm
 * drive MPI_Test on a nonblocking collective while the device computes). */
void cuda_model_set_progress(cuda_model_t *cm, void (*fn)(void *ctx), void *ctx);
/* Device memory this model allocated, in bytes (cuDNN/cuBLAS handles not included). */
size_t cuda_model_device_bytes(const cuda_model_t *cm);
/* Device pointers of the fused buffers (for CUDA-aware MPI; nparams floats each). */
float *cuda_model_device_params(cuda_model_t *cm);
float *cuda_model_device_grads(cuda_model_t *cm);

#ifdef __cplusplus
}
#endif

#endif
