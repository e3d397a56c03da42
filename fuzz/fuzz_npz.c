/* fuzz/fuzz_npz.c - libFuzzer target for the .npz reader (common/npz.c, libzip) and the
 * data-set rules on its arrays (common/dsprobe.c): the input is an .npz file, opened by
 * path as a data set is (npz_open: open, the data-root check on the descriptor, then
 * libzip's zip_fdopen; a memfd, as the IDX harness does). Build and run:
 * make fuzz-npz.
 *
 * Invariants: a refusal names the file; an accepted archive has at least one training
 * and one test sample, at least one class, and every label read below that count; the
 * x arrays it accepted are then read in full into buffers of their announced size
 * (ASan checks that nothing is written past them), once whole and once in parts of a
 * size the input's second-to-last byte picks (npz_array_read_part / npz_array_finish,
 * as worker/dsload.c streams them, issue 42): both give the same verdict and the same
 * bytes, and a part past the array's end is refused. Seeds: small .npz files NumPy
 * wrote, stored and deflated, one with zip64 headers (zipfile's force_zip64, as a
 * streamed writer makes them) and one of deflated zeros (a miniature bomb).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsprobe.h"
#include "fuzz_data.h"
#include "npz.h"

/* Reads array `name` again in parts of 1 + pick * 37 bytes; its verdict (whole: 0 or -1)
 * and bytes must be those of the whole read into ref. */
static void read_in_parts(npz_t *z, const char *name, const uint8_t *ref, int whole, uint8_t pick)
{
    char err[512] = "";
    npz_array_t a;
    if (npz_array_open(z, name, &a, err, sizeof err) != 0) abort(); /* it opened a moment ago */
    const uint64_t step = 1 + (uint64_t)pick * 37;
    uint8_t *part = malloc(step);
    int rc = part ? 0 : -2;
    for (uint64_t at = 0; rc == 0 && at < a.h.nbytes; at += step) {
        uint64_t n = a.h.nbytes - at < step ? a.h.nbytes - at : step;
        rc = npz_array_read_part(z, &a, part, n, err, sizeof err);
        if (rc == 0 && whole == 0 && memcmp(part, ref + at, n) != 0) abort();
    }
    if (rc == 0) {
        /* nothing past the end */
        if (npz_array_read_part(z, &a, part, 1, err, sizeof err) != -1 || !strstr(err, "past the array's end")) abort();
        rc = npz_array_finish(z, &a, err, sizeof err);
    }
    if (rc == -1 && !strstr(err, "/proc/self/fd/")) abort();
    if (rc != -2 && rc != whole) abort();
    free(part);
    npz_array_close(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512] = "";
    int fd = fuzz_memfile(data, size, path, sizeof path);
    if (fd < 0) return 0;
    npz_t *z = NULL;
    if (npz_open(path, &z, err, sizeof err) != 0) {
        if (!strstr(err, "/proc/self/fd/")) abort();
        close(fd);
        return 0;
    }
    dsprobe_t p;
    int32_t *lab[2] = {NULL, NULL};
    npy_header_t xh[2];
    const char *layout = size && (data[size - 1] & 1) ? "nchw" : "nhwc";
    if (dsprobe_npz(z, layout, &p, lab, xh, err, sizeof err) != 0) {
        if (!strstr(err, "/proc/self/fd/")) abort();
    } else {
        if (p.ntrain < 1 || p.ntest < 1 || p.classes < 1) abort();
        for (int s = 0; s < 2; s++)
            for (int i = 0; i < (s ? p.ntest : p.ntrain); i++)
                if (lab[s][i] < 0 || lab[s][i] >= p.classes) abort();
        static const char *const X[2] = {"x_train", "x_test"};
        for (int s = 0; s < 2; s++) {
            npz_array_t a;
            if (npz_array_open(z, X[s], &a, err, sizeof err) != 0) continue;
            if (a.h.nbytes <= (1u << 24)) {
                uint8_t *buf = malloc(a.h.nbytes ? a.h.nbytes : 1);
                int whole = buf ? npz_array_read(z, &a, buf, err, sizeof err) : -2;
                if (whole == -1 && !strstr(err, "/proc/self/fd/")) abort();
                npz_array_close(&a);
                if (whole != -2) read_in_parts(z, X[s], buf, whole, size >= 2 ? data[size - 2] : 0);
                free(buf);
                continue;
            }
            npz_array_close(&a);
        }
    }
    free(lab[0]);
    free(lab[1]);
    npz_close(z);
    close(fd);
    return 0;
}
