/* fuzz/fuzz_idx.c - libFuzzer target for the IDX loader (MNIST, Fashion-MNIST): header
 * and body of an images file and a labels file, raw or gzip (zlib reads both). Build and
 * run: make fuzz-idx.
 *
 * Input: two little-endian bytes n, then the images file (the next n bytes, or fewer
 * when the input ends) and the labels file (the rest). The seeds in fuzz/corpus/idx/
 * are valid pairs, raw and gzipped, so mutations start from files that load.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    size_t n = (size_t)data[0] | (size_t)data[1] << 8;
    data += 2, size -= 2;
    if (n > size) n = size;
    char ip[64], lp[64], err[512];
    int fi = fuzz_memfile(data, n, ip, sizeof ip);
    int fl = fuzz_memfile(data + n, size - n, lp, sizeof lp);
    if (fi >= 0 && fl >= 0) {
        dataset_t d;
        err[0] = 0;
        int rc = dataset_load_idx(ip, lp, 10, &d, err, sizeof err);
        if (rc == DATA_OK) {
            if (d.n < 1 || d.C != 1 || d.H < 1 || d.W < 1 || !d.pixels || !d.labels) abort();
            fuzz_use_dataset(&d, 1, 28, 28);
            fuzz_use_dataset(&d, 1, d.H, d.W);
        } else if (!err[0] || !strstr(err, "/proc/self/fd/")) {
            abort(); /* every refusal names the file */
        }
        dataset_free(&d);
    }
    if (fi >= 0) close(fi);
    if (fl >= 0) close(fl);
    return 0;
}
