/* worker/nvml.c - see nvml.h. The few NVML declarations used are written out here (the
 * ABI of nvml.h, stable since the _v2 entry points) so that no NVIDIA header is needed to
 * build. */
#include "nvml.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "backend_cuda.h"

typedef struct nvml_dev *nvml_dev_t; /* nvmlDevice_t */
typedef struct {
    unsigned int gpu, memory; /* nvmlUtilization_t, percent */
} nvml_util_t;
typedef struct {
    unsigned long long total, free, used; /* nvmlMemory_t, bytes */
} nvml_mem_t;
#define NVML_SUCCESS 0

struct nvml {
    void *lib;
    nvml_dev_t dev;
    int (*shutdown)(void);
    int (*util)(nvml_dev_t, nvml_util_t *);
    int (*mem)(nvml_dev_t, nvml_mem_t *);
};

nvml_t *nvml_open(int cuda_device)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return NULL;
    int (*init)(void) = NULL, (*by_bus)(const char *, nvml_dev_t *) = NULL, (*by_index)(unsigned, nvml_dev_t *) = NULL;
    nvml_t *n = calloc(1, sizeof *n);
    if (!n) goto fail;
    *(void **)&init = dlsym(lib, "nvmlInit_v2");
    *(void **)&by_bus = dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&by_index = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&n->shutdown = dlsym(lib, "nvmlShutdown");
    *(void **)&n->util = dlsym(lib, "nvmlDeviceGetUtilizationRates");
    *(void **)&n->mem = dlsym(lib, "nvmlDeviceGetMemoryInfo");
    if (!init || !n->shutdown || !n->util || !n->mem || init() != NVML_SUCCESS) goto fail;
    char bus[64];
    int found = by_bus && cuda_device_pci_bus_id(cuda_device, bus, sizeof bus) == 0 &&
                by_bus(bus, &n->dev) == NVML_SUCCESS;
    /* NVML numbers every GPU of the machine; CUDA's index is the same only when nothing
     * (CUDA_VISIBLE_DEVICES) renumbers them: the fallback where the bus id is unknown. */
    if (!found) found = by_index && cuda_device >= 0 && by_index((unsigned)cuda_device, &n->dev) == NVML_SUCCESS;
    if (!found) {
        n->shutdown();
        goto fail;
    }
    n->lib = lib;
    return n;
fail:
    free(n);
    dlclose(lib);
    return NULL;
}

int nvml_sample(nvml_t *n, gpu_sample_t *out)
{
    nvml_util_t u;
    nvml_mem_t m;
    if (!n || n->util(n->dev, &u) != NVML_SUCCESS || n->mem(n->dev, &m) != NVML_SUCCESS) return -1;
    out->util_pct = u.gpu > 100 ? 100.0 : (double)u.gpu;
    out->mem_total = m.total;
    out->mem_used = m.total && m.used > m.total ? m.total : m.used; /* a library's reply: held to sense */
    return 0;
}

void nvml_close(nvml_t *n)
{
    if (!n) return;
    n->shutdown();
    dlclose(n->lib);
    free(n);
}
