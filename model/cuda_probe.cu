/* model/cuda_probe.cu - see cuda_probe.h. */
#include "cuda_probe.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_common.h"

/* The GPU architectures the Makefile compiled for (CUDA_ARCHS, CUDA_PTX). */
#ifndef PACER_CUDA_ARCHS
#define PACER_CUDA_ARCHS "unknown (built without the Makefile's CUDA_ARCHS)"
#endif

/* The oldest driver the runtime we were built with runs on (CUDA minor version
 * compatibility: NVIDIA's CUDA Compatibility guide, Linux). */
#if CUDART_VERSION >= 13000
#define MIN_DRIVER "580"
#elif CUDART_VERSION >= 12000
#define MIN_DRIVER "525.60.13"
#elif CUDART_VERSION >= 11000
#define MIN_DRIVER "450.80.02"
#else
#define MIN_DRIVER "the one in this CUDA's release notes"
#endif

#define PROBE_MAGIC 0x70616365 /* "pace" */

/* The smallest kernel there is: if it cannot run, no kernel of this library can. */
__global__ void probe_kernel(int *flag)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) *flag = PROBE_MAGIC;
}

void probe_build_info(char *buf, size_t len)
{
    snprintf(buf, len,
             "built with the CUDA %d.%d runtime (needs an NVIDIA driver >= %s) and cuDNN %d.%d.%d; GPU code: %s",
             CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, MIN_DRIVER, CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL,
             PACER_CUDA_ARCHS);
}

int probe_classify_error(int e, int driver_version)
{
    switch ((cudaError_t)e) {
    case cudaSuccess: return CUDA_PROBE_OK;
    case cudaErrorNoDevice: return CUDA_PROBE_NO_DEVICE;
    case cudaErrorStubLibrary: return CUDA_PROBE_NO_DRIVER;
    /* the runtime says this both without any driver and with an old one */
    case cudaErrorInsufficientDriver: return driver_version > 0 ? CUDA_PROBE_DRIVER_TOO_OLD : CUDA_PROBE_NO_DRIVER;
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorCompatNotSupportedOnDevice: return CUDA_PROBE_DRIVER_TOO_OLD;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidKernelImage:
    case cudaErrorInvalidPtx:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorJitCompilerNotFound:
    case cudaErrorJitCompilationDisabled: return CUDA_PROBE_NO_KERNEL_IMAGE;
    default: return CUDA_PROBE_ERROR;
    }
}

static int probe_say(cuda_probe_t *p, int kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
    p->kind = kind;
    return kind;
}

/* A failed runtime call, named with its error and what to do about its kind. */
static int probe_cuda_error(cuda_probe_t *p, const char *call, cudaError_t e, int driver_version)
{
    const int kind = probe_classify_error((int)e, driver_version);
    const char *name = cudaGetErrorName(e), *text = cudaGetErrorString(e);
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    switch (kind) {
    case CUDA_PROBE_NO_DRIVER:
        return probe_say(p, kind,
                         "no NVIDIA driver: %s: %s (%s); install the driver, or give the container the GPU "
                         "(libcuda.so.1 must be the driver's, not the CUDA toolkit's stub)",
                         call, name, text);
    case CUDA_PROBE_NO_DEVICE:
        return probe_say(p, kind, "no CUDA device: %s: %s (%s); check nvidia-smi%s%s", call, name, text,
                         cvd ? " and CUDA_VISIBLE_DEVICES=" : "", cvd ? cvd : "");
    case CUDA_PROBE_DRIVER_TOO_OLD:
        return probe_say(p, kind,
                         "the NVIDIA driver is too old: %s: %s (%s); this backend was built with the CUDA "
                         "%d.%d runtime, which needs a driver >= %s",
                         call, name, text, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, MIN_DRIVER);
    case CUDA_PROBE_NO_KERNEL_IMAGE:
        return probe_say(p, kind,
                         "no kernel image for this GPU: %s: %s (%s); %s is compute capability %d.%d and "
                         "libpacer_cuda.so has code for %s: rebuild with make CUDA_ARCHS=%d%d",
                         call, name, text, p->name[0] ? p->name : "the device", p->cc_major, p->cc_minor,
                         PACER_CUDA_ARCHS, p->cc_major, p->cc_minor);
    default:
        return probe_say(p, kind, "CUDA error on device %d%s%s%s: %s: %s (%s)", p->device, p->name[0] ? " (" : "",
                         p->name, p->name[0] ? ")" : "", call, name, text);
    }
}

int probe_device(int device, int driver_version, cuda_probe_t *p)
{
    p->runtime_version = CUDART_VERSION;
    p->device = -1;
    p->name[0] = '\0';
    p->reason[0] = '\0';
    p->driver_version = driver_version;
    const int rt_major = CUDART_VERSION / 1000, rt_minor = CUDART_VERSION % 1000 / 10;
    /* Minor version compatibility: a driver of the same major release runs the runtime;
     * an older major does not (and the runtime may not even say why). */
    if (driver_version > 0 && driver_version / 1000 < rt_major)
        return probe_say(p, CUDA_PROBE_DRIVER_TOO_OLD,
                         "the NVIDIA driver is too old: it supports CUDA %d.%d, and libpacer_cuda.so was built with "
                         "the CUDA %d.%d runtime, which needs a driver >= %s; update the driver, or build pacer with "
                         "a CUDA %d.x toolkit (docs/PERFORMANCE.md, \"GPU: first run\")",
                         driver_version / 1000, driver_version % 1000 / 10, rt_major, rt_minor, MIN_DRIVER,
                         driver_version / 1000);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return probe_cuda_error(p, "cudaGetDeviceCount", e, driver_version);
    }
    p->devices = n;
    if (n == 0) return probe_cuda_error(p, "cudaGetDeviceCount", cudaErrorNoDevice, driver_version);
    if (device < 0) device = probe_pick_device();
    if (device < 0 || device >= n)
        return probe_say(p, CUDA_PROBE_ERROR, "CUDA device %d does not exist (%d visible)", device, n);
    p->device = device;
    cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) {
        (void)cudaGetLastError();
        return probe_cuda_error(p, "cudaGetDeviceProperties", e, driver_version);
    }
    snprintf(p->name, sizeof p->name, "%s", prop.name);
    p->cc_major = prop.major;
    p->cc_minor = prop.minor;
    if ((e = (cudaError_t)cuda_device_activate(device)) != cudaSuccess)
        return probe_cuda_error(p, "cudaInitDevice/cudaSetDevice", e, driver_version);
    int *flag = NULL, got = 0;
    if ((e = cudaMalloc((void **)&flag, sizeof(int))) != cudaSuccess) {
        (void)cudaGetLastError();
        return probe_cuda_error(p, "cudaMalloc", e, driver_version);
    }
    e = cudaMemset(flag, 0, sizeof(int));
    if (e == cudaSuccess) {
        probe_kernel<<<1, 32>>>(flag);
        e = cudaGetLastError(); /* a missing kernel image is reported here */
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpy(&got, flag, sizeof got, cudaMemcpyDeviceToHost);
    cudaFree(flag);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return probe_cuda_error(p, "a probe kernel", e, driver_version);
    }
    if (got != PROBE_MAGIC)
        return probe_say(p, CUDA_PROBE_ERROR, "a probe kernel on device %d (%s) ran but wrote %#x instead of %#x",
                         device, p->name, got, PROBE_MAGIC);
    p->kind = CUDA_PROBE_OK;
    return CUDA_PROBE_OK;
}

int probe_pick_device(void)
{
    int n = cuda_device_count();
    if (n <= 0) return -1;
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
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
