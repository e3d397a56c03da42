/* tests/fakecuda/libcuda.c - a stand-in for the NVIDIA driver's libcuda.so.1 in tests, with
 * only the entry points pacer's driver probe calls (cuda_driver_probe, model/backend_cuda.c).
 * Built as $(BUILD)/tests/fakecuda/libcuda.so.1; a test puts that directory on
 * LD_LIBRARY_PATH. Its answers come from the environment:
 *   PACER_FAKE_DRIVER_VERSION  what cuDriverGetVersion says (default 13000: CUDA 13.0)
 *   PACER_FAKE_DEVICES         what cuDeviceGetCount says (default 1)
 *   PACER_FAKE_INIT_ERROR      what cuInit returns (default 0; 100: CUDA_ERROR_NO_DEVICE)
 *   PACER_FAKE_PCI_BUS_ID      device 0's PCI bus id (default 0000:3B:00.0; device d: bus 3B + d),
 *                              which the fake NVML (tests/fakecuda/libnvidia-ml.c) checks
 * It has none of the rest of the driver API, so the real CUDA runtime must never reach it:
 * a test pairs it with the fake backend (tests/fakecuda/backend.c), or with a driver
 * version or error that stops the probe before the runtime starts.
 */
#include <stdio.h>
#include <stdlib.h>

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

int cuInit(unsigned flags)
{
    (void)flags;
    return env_int("PACER_FAKE_INIT_ERROR", 0);
}

int cuDriverGetVersion(int *version)
{
    *version = env_int("PACER_FAKE_DRIVER_VERSION", 13000);
    return 0;
}

int cuDeviceGetCount(int *count)
{
    *count = env_int("PACER_FAKE_DEVICES", 1);
    return 0;
}

int cuGetErrorName(int error, const char **name)
{
    *name = error == 100 ? "CUDA_ERROR_NO_DEVICE" : error == 0 ? "CUDA_SUCCESS" : "CUDA_ERROR_UNKNOWN";
    return 0;
}

int cuGetErrorString(int error, const char **text)
{
    *text = error == 100 ? "no CUDA-capable device is detected" : error == 0 ? "no error" : "unknown error";
    return 0;
}

int cuDeviceGet(int *device, int ordinal)
{
    if (ordinal < 0 || ordinal >= env_int("PACER_FAKE_DEVICES", 1)) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *device = ordinal;
    return 0;
}

int cuDeviceGetPCIBusId(char *buf, int len, int device)
{
    const char *id = getenv("PACER_FAKE_PCI_BUS_ID");
    if (device == 0 && id && *id) snprintf(buf, (size_t)len, "%s", id);
    else snprintf(buf, (size_t)len, "0000:%02X:00.0", 0x3B + device);
    return 0;
}
