/* fuzz/fuzz_npy.c - libFuzzer target for the .npy header parser (common/npy.c): the bytes
 * of a .npy file, header and data. Build and run: make fuzz-npy.
 *
 * Invariants: a refusal is one line; an accepted header has at most NPY_MAX_DIMS
 * dimensions, a data offset inside the bytes it was given, nbytes = count x itemsize
 * within NPY_MAX_BYTES, and count the product of the shape; when the data is all there,
 * every element's offset from npy_strides lies inside it, and reading the first and the
 * last element (as a double and as an integer) stays inside it (ASan checks the reads).
 * The seeds in fuzz/corpus/npy/ are files NumPy wrote (uint8, int64, float32, Fortran
 * order, big-endian, versions 1 and 2).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    npy_header_t h;
    char err[256] = "";
    size_t need = npy_header_size(data, size);
    if (npy_parse_header(data, size, &h, err, sizeof err) != 0) {
        if (!err[0] || strchr(err, '\n')) abort();
        return 0;
    }
    if (need == 0 || h.data_offset != need || h.data_offset > size) abort();
    if (h.ndim < 0 || h.ndim > NPY_MAX_DIMS || h.itemsize < 1 || h.itemsize > 8) abort();
    uint64_t count = 1;
    for (int i = 0; i < h.ndim; i++) {
        if (h.shape[i] < 0) abort();
        count *= (uint64_t)h.shape[i];
    }
    if (count != h.count || h.nbytes != h.count * (uint64_t)h.itemsize || h.nbytes > NPY_MAX_BYTES) abort();
    if (h.count == 0 || h.nbytes > size - h.data_offset) return 0;
    uint64_t st[NPY_MAX_DIMS], last = 0;
    npy_strides(&h, st);
    for (int i = 0; i < h.ndim; i++) last += (uint64_t)(h.shape[i] - 1) * st[i];
    if (last + (uint64_t)h.itemsize > h.nbytes) abort();
    const uint8_t *p = data + h.data_offset;
    int over;
    volatile double d = npy_get_f64(&h, p) + npy_get_f64(&h, p + last);
    volatile uint64_t v = (uint64_t)npy_get_i64(&h, p, &over) ^ (uint64_t)npy_get_i64(&h, p + last, &over);
    (void)d, (void)v;
    return 0;
}
