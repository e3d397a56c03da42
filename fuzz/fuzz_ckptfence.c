/* fuzz/fuzz_ckptfence.c - libFuzzer target for the checkpoint fence file's reader
 * (ckptdir_fence_parse, common/ckptdir.h): DIR/NAME.fence lies in a directory that ranks on
 * other hosts write, so its text is input from outside. Build and run: make fuzz-ckptfence.
 *
 * Properties beyond no crash / UB: accepted exactly when the input is decimal digits (none
 * is 0) and at most one newline after them, with a value of at most CKPTDIR_FENCE_MAX; an
 * accepted value prints back (with the newline the coordinator writes) to text that parses
 * to the same value.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckptdir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *t = (const char *)data;
    long long g = -1, again = -1;
    size_t digits = 0;
    while (digits < size && t[digits] >= '0' && t[digits] <= '9') digits++;
    int shape = digits == size || (digits + 1 == size && t[digits] == '\n');
    int rc = ckptdir_fence_parse(t, size, &g);
    if (rc == 0) {
        if (!shape || g < 0 || g > CKPTDIR_FENCE_MAX) abort();
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%lld\n", g);
        if (ckptdir_fence_parse(buf, (size_t)n, &again) != 0 || again != g) abort();
    } else if (rc != -1 || (shape && digits <= 15)) {
        /* 15 digits never exceed CKPTDIR_FENCE_MAX (10^15): such a shape is always taken */
        abort();
    }
    return 0;
}
