/* fuzz/fuzz_cifar.c - libFuzzer target for the CIFAR-10 binary loader: one or two batch
 * files of 3073-byte records (label, 1024 R, 1024 G, 1024 B), raw or gzip. Build and
 * run: make fuzz-cifar.
 *
 * Input: a byte whose low bit picks one or two files, two little-endian bytes n, then
 * the first file (n bytes, or fewer when the input ends) and the second (the rest).
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    int two = data[0] & 1;
    size_t n = (size_t)data[1] | (size_t)data[2] << 8;
    data += 3, size -= 3;
    if (!two || n > size) n = size;
    char p0[64], p1[64], err[512];
    int f0 = fuzz_memfile(data, n, p0, sizeof p0);
    int f1 = two ? fuzz_memfile(data + n, size - n, p1, sizeof p1) : -1;
    if (f0 >= 0 && (!two || f1 >= 0)) {
        const char *paths[2] = {p0, p1};
        dataset_t d;
        err[0] = 0;
        int rc = dataset_load_cifar(paths, two ? 2 : 1, 10, &d, err, sizeof err);
        if (rc == DATA_OK) {
            if (d.n < 1 || d.C != 3 || d.H != 32 || d.W != 32) abort();
            fuzz_use_dataset(&d, 3, 32, 32);
            fuzz_use_dataset(&d, 1, 28, 28);
        } else if (!err[0] || !strstr(err, "/proc/self/fd/")) {
            abort();
        }
        dataset_free(&d);
    }
    if (f0 >= 0) close(f0);
    if (f1 >= 0) close(f1);
    return 0;
}
