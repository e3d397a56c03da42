/* fuzz/fuzz_npz.c - libFuzzer target for the .npz reader (common/npz.c, libzip) and the
 * data-set rules on its arrays (common/dsprobe.c): the input is an .npz file, opened by
 * path as a data set is (npz_open: open, the data-root check on the descriptor, then
 * libzip's zip_fdopen; a memfd, as the IDX harness does). Build and run:
 * make fuzz-npz.
 *
 * Invariants: a refusal names the file; an accepted archive has at least one training
 * and one test sample, at least one class, and every label read below that count; the
 * x arrays it accepted are then read in full into buffers of their announced size
 * (ASan checks that nothing is written past them). Seeds: small .npz files NumPy wrote,
 * stored and deflated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsprobe.h"
#include "fuzz_data.h"
#include "npz.h"

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
                if (buf && npz_array_read(z, &a, buf, err, sizeof err) != 0 && !strstr(err, "/proc/self/fd/")) abort();
                free(buf);
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
