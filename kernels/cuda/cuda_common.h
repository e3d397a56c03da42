/* kernels/cuda/cuda_common.h - what the .cu files of the CUDA backend share (C++ only): the
 * context struct behind the opaque cuda_ctx_t, the check macros and launch helpers.
 *
 * Check macros (the llm.c habit, minus the exit): on failure they record
 *   "file:line: call failed: <library message> (hint)"
 * in ctx->err and make the enclosing function return -1. Kernel launchers end with
 * KERNEL_CHECK, which checks cudaGetLastError() (launch-configuration errors; faults inside
 * the kernel surface at the next synchronising call).
 */
#ifndef PACER_CUDA_COMMON_H
#define PACER_CUDA_COMMON_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <stddef.h>
#include <stdint.h>

#include "ops_cuda.h"

/* Blocks used by the deterministic two-pass reductions (sum of squares). */
#define CUDA_RED_BLOCKS 512
#define CUDA_RED_THREADS 256

struct cuda_ctx {
    int device;
    cudaStream_t stream;
    cudaEvent_t done; /* blocking-sync event every wait records and waits on */
    cudnnHandle_t cudnn;
    cublasHandle_t cublas;
    cudnnTensorDescriptor_t td_x; /* scratch descriptors for batch norm, set per call */
    cudnnTensorDescriptor_t td_bn;
    double *d_partials; /* (CUDA_RED_BLOCKS) reduction partials */
    double *d_result;   /* (1) reduction result */
    int *d_count;       /* (1) count_correct */
    float *d_scratch;   /* (1) clip coefficient for cuda_clip_grad_norm */
    double *h_result;   /* pinned (1) */
    int *h_count;       /* pinned (1) */
    char err[512];
};

/* Records the failure in ctx->err (ctx may be NULL) and returns -1. */
int pacer_cuda_fail(cuda_ctx_t *ctx, const char *file, int line, const char *call, const char *msg, const char *hint);
const char *pacer_cublas_status_string(cublasStatus_t s);

#define CUDA_CHECK(ctx, call, hint)                                                                   \
    do {                                                                                              \
        cudaError_t e_ = (call);                                                                      \
        if (e_ != cudaSuccess)                                                                        \
            return pacer_cuda_fail((ctx), __FILE__, __LINE__, #call, cudaGetErrorString(e_), (hint)); \
    } while (0)

#define CUDNN_CHECK(ctx, call, hint)                                                                   \
    do {                                                                                               \
        cudnnStatus_t s_ = (call);                                                                     \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                                \
            return pacer_cuda_fail((ctx), __FILE__, __LINE__, #call, cudnnGetErrorString(s_), (hint)); \
    } while (0)

#define CUBLAS_CHECK(ctx, call, hint)                                                                         \
    do {                                                                                                      \
        cublasStatus_t s_ = (call);                                                                           \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                                      \
            return pacer_cuda_fail((ctx), __FILE__, __LINE__, #call, pacer_cublas_status_string(s_), (hint)); \
    } while (0)

#define KERNEL_CHECK(ctx, what) CUDA_CHECK((ctx), cudaGetLastError(), "launch of " what)

/* Grid for a grid-stride loop over n elements (n > 0). */
static inline unsigned pacer_grid(size_t n, unsigned threads)
{
    size_t blocks = (n + threads - 1) / threads;
    if (blocks > 65535u * 16u) blocks = 65535u * 16u; /* grid-stride loops cover the rest */
    return (unsigned)(blocks ? blocks : 1);
}

/* Sum of v over the block in double, in a fixed tree order (deterministic); every thread
 * gets the result. blockDim.x must be THREADS (a power of two). */
template <int THREADS> static __device__ __forceinline__ double block_sum(double v)
{
    __shared__ double sh[THREADS];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads(); /* a second call may overwrite sh only after everyone has read it */
    return r;
}

/* The block's maximum of v by `a > b ? a : b` (the CPU's comparison: a NaN that starts every
 * thread's scan stays, later NaNs are passed over), to every thread. */
template <int THREADS> static __device__ __forceinline__ float block_max(float v)
{
    __shared__ float sh[THREADS];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) {
            const float o = sh[threadIdx.x + s];
            sh[threadIdx.x] = o > sh[threadIdx.x] ? o : sh[threadIdx.x];
        }
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

/* Double-precision twins of scalar_fn.h's UFN_*: on the device __dadd_rn and friends, which
 * nvcc never fuses into an FMA (it would, by default, contract a * b + c), so a kernel's
 * sums in double round as the CPU's C loops do; plain operators in host code. */
#if defined(__CUDA_ARCH__)
#define DFN_ADD(x, y) __dadd_rn((x), (y))
#define DFN_SUB(x, y) __dsub_rn((x), (y))
#define DFN_MUL(x, y) __dmul_rn((x), (y))
#else
#define DFN_ADD(x, y) ((x) + (y))
#define DFN_SUB(x, y) ((x) - (y))
#define DFN_MUL(x, y) ((x) * (y))
#endif

#define GRID_STRIDE(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

#endif
