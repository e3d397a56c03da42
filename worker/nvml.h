/* worker/nvml.h - a GPU rank's device utilisation and memory, from NVIDIA's management
 * library (NVML), for the nodes table (docs/REDIS.md: the node hash's gpu_* fields).
 *
 * libnvidia-ml.so.1 is loaded with dlopen by nvml_open, on GPU ranks only: pacer-worker
 * never links it, and where it is absent (no driver, a container without it) or does not
 * know the device, nvml_open returns NULL without a word and the columns stay empty.
 * Sampling is the Redis sink's thread's job (worker/redis_report.c), at its publishing
 * cadence: never a training step's.
 */
#ifndef PACER_NVML_H
#define PACER_NVML_H

typedef struct {
    double util_pct;              /* percent of the last sample period a kernel ran */
    unsigned long long mem_used;  /* bytes of device memory in use (every process) */
    unsigned long long mem_total; /* bytes of device memory */
} gpu_sample_t;

typedef struct nvml nvml_t;

/* NVML's handle for CUDA device cuda_device of this process (found by its PCI bus id, so
 * CUDA_VISIBLE_DEVICES cannot point it at another GPU; by index where the bus id is not
 * known). NULL when NVML cannot be used. Allocates once. */
nvml_t *nvml_open(int cuda_device);
/* One sample into out: 0, or -1 when NVML does not answer (out unchanged). Thread-safe for
 * one caller; no allocation. */
int nvml_sample(nvml_t *n, gpu_sample_t *out);
/* Shuts NVML down and frees n (NULL is fine). */
void nvml_close(nvml_t *n);

#endif
