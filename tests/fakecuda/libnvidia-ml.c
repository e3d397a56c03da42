/* tests/fakecuda/libnvidia-ml.c - a stand-in for NVIDIA's management library
 * (libnvidia-ml.so.1) in tests, with only the entry points worker/nvml.c calls. Built as
 * $(BUILD)/tests/fakenvml/libnvidia-ml.so.1, a directory of its own: a test puts it on
 * LD_LIBRARY_PATH beside the fake driver's (libcuda.c), or leaves it out to show that a
 * worker without NVML runs as before and reports no GPU figures. Its one device answers to the bus
 * id the fake driver gives device 0 (PACER_FAKE_PCI_BUS_ID, default 0000:3B:00.0): a worker
 * that looked it up by anything else finds nothing. Scripted answers, from the environment:
 *   PACER_FAKE_NVML_UTIL        utilisation in percent (default 0)
 *   PACER_FAKE_NVML_MEM_USED    MiB of device memory in use (default 0)
 *   PACER_FAKE_NVML_MEM_TOTAL   MiB of device memory (default 16384)
 *   PACER_FAKE_NVML_INIT_ERROR  what nvmlInit_v2 returns (default 0)
 */
#include <stdlib.h>
#include <strings.h>

typedef struct {
    unsigned int gpu, memory;
} util_t;
typedef struct {
    unsigned long long total, free, used;
} mem_t;

static int the_device; /* its address is the handle */

static long long env_num(const char *name, long long dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoll(v) : dflt;
}

int nvmlInit_v2(void) { return (int)env_num("PACER_FAKE_NVML_INIT_ERROR", 0); }

int nvmlShutdown(void) { return 0; }

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev)
{
    const char *want = getenv("PACER_FAKE_PCI_BUS_ID");
    if (!bus || strcasecmp(bus, want && *want ? want : "0000:3B:00.0") != 0) return 6; /* NVML_ERROR_NOT_FOUND */
    *dev = &the_device;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **dev)
{
    (void)index;
    (void)dev;
    return 6; /* the worker must find the device by its bus id */
}

int nvmlDeviceGetUtilizationRates(void *dev, util_t *u)
{
    if (dev != &the_device) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    u->gpu = (unsigned)env_num("PACER_FAKE_NVML_UTIL", 0);
    u->memory = 0;
    return 0;
}

int nvmlDeviceGetMemoryInfo(void *dev, mem_t *m)
{
    if (dev != &the_device) return 2;
    m->total = (unsigned long long)env_num("PACER_FAKE_NVML_MEM_TOTAL", 16384) << 20;
    m->used = (unsigned long long)env_num("PACER_FAKE_NVML_MEM_USED", 0) << 20;
    m->free = m->total - m->used;
    return 0;
}
