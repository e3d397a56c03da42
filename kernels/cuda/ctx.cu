/* kernels/cuda/ctx.cu - the CUDA context (handles, stream, scratch), device queries, error
 * recording and the memory helpers of ops_cuda.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_common.h"

int pacer_cuda_fail(cuda_ctx_t *ctx, const char *file, int line, const char *call, const char *msg, const char *hint)
{
    /* keep only the file name: the path depends on where make ran */
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (ctx)
        snprintf(ctx->err, sizeof ctx->err, "%s:%d: %s failed: %s (%s)", base, line, call, msg ? msg : "?",
                 hint ? hint : "");
    return -1;
}

const char *pacer_cublas_status_string(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case CUBLAS_STATUS_MAPPING_ERROR: return "mapping error";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "license error";
    default: return "unknown cuBLAS status";
    }
}

extern "C" int cuda_device_count(void)
{
    int n = 0;
    /* No driver, no device, or a driver older than the runtime: all mean "no GPU here".
     * The error is not sticky; cudaGetLastError clears it so later calls start clean. */
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" int cuda_device_name(int device, char *name, size_t len)
{
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        (void)cudaGetLastError();
        if (len) name[0] = '\0';
        return -1;
    }
    snprintf(name, len, "%s", prop.name);
    return 0;
}

extern "C" int cuda_memory_info(size_t *free_bytes, size_t *total_bytes)
{
    if (cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return 0;
}

extern "C" int cuda_device_activate(int device)
{
    /* Blocking sync: a host thread waiting for the device sleeps on an interrupt instead of
     * spinning, so an MPI rank that waits for its GPU leaves the core to MPI progress and
     * to the other ranks of the node. The flag must reach the primary context when it is
     * created (cudaInitDevice, CUDA 12+); cudaSetDevice then makes it current. */
#if CUDART_VERSION >= 12000
    cudaError_t e = cudaInitDevice(device, cudaDeviceScheduleBlockingSync, cudaInitDeviceFlagsAreValid);
#else
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
    if (e == cudaErrorSetOnActiveProcess) e = cudaSuccess; /* initialised earlier: keep its flags */
#endif
    if (e == cudaSuccess) e = cudaSetDevice(device);
    if (e != cudaSuccess) (void)cudaGetLastError();
    return (int)e;
}

static int ctx_init(cuda_ctx_t *c, int device)
{
    CUDA_CHECK(c, (cudaError_t)cuda_device_activate(device),
               "no such device? check nvidia-smi and CUDA_VISIBLE_DEVICES");
    CUDA_CHECK(c, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), "stream");
    CUDA_CHECK(c, cudaEventCreateWithFlags(&c->done, cudaEventBlockingSync | cudaEventDisableTiming), "event");
    CUDNN_CHECK(c, cudnnCreate(&c->cudnn), "cuDNN initialisation: is libcudnn 9 installed for this CUDA?");
    CUDNN_CHECK(c, cudnnSetStream(c->cudnn, c->stream), "cuDNN stream");
    CUBLAS_CHECK(c, cublasCreate(&c->cublas), "cuBLAS initialisation");
    CUBLAS_CHECK(c, cublasSetStream(c->cublas, c->stream), "cuBLAS stream");
    /* DEFAULT_MATH keeps fp32 GEMMs in fp32 (TF32 only with CUBLAS_TF32_TENSOR_OP_MATH):
     * parity with the fp32 CPU reference depends on it. */
    CUBLAS_CHECK(c, cublasSetMathMode(c->cublas, CUBLAS_DEFAULT_MATH), "cuBLAS math mode");
    CUDNN_CHECK(c, cudnnCreateTensorDescriptor(&c->td_x), "descriptor");
    CUDNN_CHECK(c, cudnnCreateTensorDescriptor(&c->td_bn), "descriptor");
    CUDA_CHECK(c, cudaMalloc((void **)&c->d_partials, CUDA_RED_BLOCKS * sizeof(double)), "out of device memory");
    CUDA_CHECK(c, cudaMalloc((void **)&c->d_result, sizeof(double)), "out of device memory");
    CUDA_CHECK(c, cudaMalloc((void **)&c->d_count, sizeof(int)), "out of device memory");
    CUDA_CHECK(c, cudaMalloc((void **)&c->d_scratch, sizeof(float)), "out of device memory");
    CUDA_CHECK(c, cudaHostAlloc((void **)&c->h_result, sizeof(double), cudaHostAllocDefault), "pinned memory");
    CUDA_CHECK(c, cudaHostAlloc((void **)&c->h_count, sizeof(int), cudaHostAllocDefault), "pinned memory");
    return 0;
}

extern "C" int cuda_ctx_create(int device, cuda_ctx_t **out, char *err, size_t errlen)
{
    *out = NULL;
    cuda_ctx_t *c = (cuda_ctx_t *)calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    c->device = device;
    if (ctx_init(c, device) != 0) {
        snprintf(err, errlen, "cuda device %d: %s", device, c->err);
        cuda_ctx_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

extern "C" void cuda_ctx_free(cuda_ctx_t *c)
{
    if (!c) return;
    if (c->stream) cudaStreamSynchronize(c->stream);
    if (c->done) cudaEventDestroy(c->done);
    if (c->td_x) cudnnDestroyTensorDescriptor(c->td_x);
    if (c->td_bn) cudnnDestroyTensorDescriptor(c->td_bn);
    cudaFree(c->d_partials);
    cudaFree(c->d_result);
    cudaFree(c->d_count);
    cudaFree(c->d_scratch);
    cudaFreeHost(c->h_result);
    cudaFreeHost(c->h_count);
    if (c->cublas) cublasDestroy(c->cublas);
    if (c->cudnn) cudnnDestroy(c->cudnn);
    if (c->stream) cudaStreamDestroy(c->stream);
    (void)cudaGetLastError();
    free(c);
}

extern "C" const char *cuda_ctx_error(const cuda_ctx_t *ctx) { return ctx ? ctx->err : "no CUDA context"; }

extern "C" void *cuda_ctx_stream(cuda_ctx_t *ctx) { return (void *)ctx->stream; }

extern "C" int cuda_ctx_sync(cuda_ctx_t *ctx) { return cuda_ctx_sync_progress(ctx, NULL, NULL); }

extern "C" int cuda_ctx_sync_progress(cuda_ctx_t *ctx, void (*progress)(void *), void *progress_ctx)
{
    CUDA_CHECK(ctx, cudaEventRecord(ctx->done, ctx->stream), "record the end of the work");
    if (progress) {
        /* Open MPI moves a nonblocking collective only inside MPI calls: poll the event and
         * call progress (an MPI_Test) between polls, sleeping ~100 us each time so that the
         * core stays free for the rank's other work. */
        const struct timespec nap = {0, 100000};
        for (;;) {
            cudaError_t e = cudaEventQuery(ctx->done);
            if (e == cudaSuccess) return 0;
            if (e != cudaErrorNotReady) CUDA_CHECK(ctx, e, "an earlier kernel or copy failed");
            progress(progress_ctx);
            nanosleep(&nap, NULL);
        }
    }
    CUDA_CHECK(ctx, cudaEventSynchronize(ctx->done), "an earlier kernel or copy failed");
    return 0;
}

extern "C" int cuda_malloc(cuda_ctx_t *ctx, void **ptr, size_t bytes)
{
    *ptr = NULL;
    CUDA_CHECK(ctx, cudaMalloc(ptr, bytes ? bytes : 4), "out of device memory");
    return 0;
}

extern "C" void cuda_free(void *ptr) { cudaFree(ptr); }

extern "C" int cuda_upload(cuda_ctx_t *ctx, void *dst_dev, const void *src_host, size_t bytes)
{
    if (!bytes) return 0;
    CUDA_CHECK(ctx, cudaMemcpyAsync(dst_dev, src_host, bytes, cudaMemcpyHostToDevice, ctx->stream), "upload");
    CUDA_CHECK(ctx, cudaStreamSynchronize(ctx->stream), "upload");
    return 0;
}

extern "C" int cuda_download(cuda_ctx_t *ctx, void *dst_host, const void *src_dev, size_t bytes)
{
    if (!bytes) return 0;
    CUDA_CHECK(ctx, cudaMemcpyAsync(dst_host, src_dev, bytes, cudaMemcpyDeviceToHost, ctx->stream), "download");
    CUDA_CHECK(ctx, cudaStreamSynchronize(ctx->stream), "download (or an earlier kernel failed)");
    return 0;
}

extern "C" int cuda_memset0(cuda_ctx_t *ctx, void *dst_dev, size_t bytes)
{
    if (!bytes) return 0;
    CUDA_CHECK(ctx, cudaMemsetAsync(dst_dev, 0, bytes, ctx->stream), "memset");
    return 0;
}
