/* fuzz/fuzz_data.h - shared by the data set harnesses (fuzz_idx.c, fuzz_cifar.c): the
 * fuzz input becomes files the loaders open by path, in memory (memfd, opened again
 * through /proc/self/fd), so the real gzopen path is what gets fuzzed; and what a loader
 * accepts is put through the shape check and the batch gather as the worker would. */
#ifndef PACER_FUZZ_DATA_H
#define PACER_FUZZ_DATA_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data.h"

/* A memory file holding len bytes; path gets its name. -1 when the kernel refuses. */
static int fuzz_memfile(const uint8_t *p, size_t len, char *path, size_t pathlen)
{
    int fd = memfd_create("fuzz", 0);
    if (fd < 0) return -1;
    size_t off = 0;
    while (off < len) {
        ssize_t k = write(fd, p + off, len - off);
        if (k <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)k;
    }
    snprintf(path, pathlen, "/proc/self/fd/%d", fd);
    return fd;
}

/* What the worker does with a loaded set: the shape check against a model of C x H x W,
 * then a gather of up to 4 samples into a buffer sized for that model. Whatever the
 * file said, the gather either fits or refuses; after a passing check it must fit. */
static void fuzz_use_dataset(const dataset_t *d, int C, int H, int W)
{
    enum { B = 4 };
    char err[256];
    size_t image = (size_t)C * H * W;
    float *x = malloc(B * image * sizeof *x);
    int32_t y[B], idx[B];
    if (!x) return;
    int n = d->n < B ? d->n : B;
    for (int i = 0; i < n; i++) idx[i] = d->n - 1 - i;
    int fits = dataset_check_shape(d, C, H, W, 10, "fuzz", err, sizeof err) == DATA_OK;
    int rc = data_batch_gather(d, idx, n, x, B * image, y, 0, NULL);
    if (fits && rc != 0) abort();
    if (rc == 0)
        for (int i = 0; i < n; i++)
            if (y[i] < 0 || y[i] >= 10) abort();
    if (fits && C == 3) {
        rng_t r;
        rng_seed(&r, 1);
        if (data_batch_gather(d, idx, n, x, B * image, y, 1, &r) != 0) abort();
    }
    free(x);
}

#endif
