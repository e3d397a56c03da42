/* tests/fakecuda/libcuda.c - a stand-in for the NVIDIA driver's libcuda.so.1 in tests, with
 * only the entry points pacer's driver probe calls (cuda_driver_probe, model/backend_cuda.c).
 * Built as $(BUILD)/tests/fakecuda/libcuda.so.1; a test puts that directory on
 * LD_LIBRARY_PATH. Its answers come from the environment:
 *   PACER_FAKE_DRIVER_VERSION  what cuDriverGetVersion says (default 13000: CUDA 13.0)
 *   PACER_FAKE_DEVICES         what cuDeviceGetCount says (default 1)
 *   PACER_FAKE_INIT_ERROR      what cuInit returns (default 0; 100: CUDA_ERROR_NO_DEVICE)
 * It has none of the rest of the driver API, so the real CUDA runtime must never reach it:
 * a test pairs it with the fake backend (tests/fakecuda/backend.c), or with a driver
 * version or error that stops the probe before the runtime starts.
 */
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
