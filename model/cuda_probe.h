/* model/cuda_probe.h - the CUDA backend's device probe and build facts (model/cuda_probe.cu,
 * C++ only, part of libpacer_cuda.so): before a rank trains, the library compares the driver
 * with the runtime it was built with, asks the runtime for the devices, activates one and
 * runs a trivial kernel, so that each of "no driver", "no device", "driver too old" and "no
 * kernel image for this GPU" is named with the CUDA error and what to do about it. These are
 * rows of the library's table (model_cuda.cu's pacer_cuda_backend; backend_cuda_abi.h says
 * what each answers); the worker reaches them only through it. */
#ifndef PACER_MODEL_CUDA_PROBE_H
#define PACER_MODEL_CUDA_PROBE_H

#include <stddef.h>

#include "backend_cuda_abi.h"

/* the table's probe: device (-1: the local rank's, probe_pick_device) checked for training */
int probe_device(int device, int driver_version, cuda_probe_t *p);
/* the table's classify_error: a CUDA error as a CUDA_PROBE_* kind */
int probe_classify_error(int e, int driver_version);
/* the table's build_info: the runtime, cuDNN and GPU code this library was built with */
void probe_build_info(char *buf, size_t len);
/* the table's pick_device: the local rank's device, its local rank modulo the devices seen */
int probe_pick_device(void);

#endif
