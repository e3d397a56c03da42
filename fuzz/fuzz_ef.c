/* fuzz/fuzz_ef.c - libFuzzer target for the reader of the parameter-server workers' error
 * feedback files (checkpoint_ef_parse, worker/checkpoint.c). Build and run: make fuzz-ef.
 *
 * The input is a file as it is; the reader expects version 40, worker 1 of 2 and N
 * floats. fuzz/corpus/ef/ holds valid files (written by the harness's own
 * checkpoint_ef_save with PACER_FUZZ_WRITE_SEEDS=DIR: valid.bin, and nan.bin and
 * huge.bin, whole files with a right CRC whose element 2 is NaN or 1e30), variants of the
 * first format's header (no CRC; version41.bin, count_huge.bin, short.bin) and
 * other-version.bin (a whole file of version 41, its CRC right).
 * Invariants: a refusal leaves the error buffer untouched and names the file, and only a
 * whole file (its size and CRC right) or the first format is "another checkpoint's"
 * (CKPT_EF_OTHER) rather than damage; an accepted file is exactly the header, N floats,
 * all of them finite and within CKPT_STATE_BOUND and copied, and the CRC32. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"

enum { N = 5 };
static const float SENTINEL = -7.25f;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *dir = getenv("PACER_FUZZ_WRITE_SEEDS");
    if (dir) {
        static const struct {
            const char *file;
            int64_t version;
            float e2;
        } SEEDS[] = {{"valid.bin", 40, 1e-3f},
                     {"nan.bin", 40, NAN},
                     {"huge.bin", 40, 1e30f},
                     {"other-version.bin", 41, 1e-3f}};
        for (size_t k = 0; k < sizeof SEEDS / sizeof SEEDS[0]; k++) {
            const float e[N] = {0.5f, -0.25f, SEEDS[k].e2, 0, 3};
            char path[1024], msg[1400];
            snprintf(path, sizeof path, "%s/%s", dir, SEEDS[k].file);
            if (checkpoint_ef_save(path, SEEDS[k].version, 2, 1, e, N, msg, sizeof msg) != 0)
                fprintf(stderr, "%s\n", msg);
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    float err[N];
    for (int i = 0; i < N; i++) err[i] = SENTINEL;
    char msg[1400] = "";
    const size_t whole = CKPT_EF_HEADER + N * sizeof(float) + 4;
    int rc = checkpoint_ef_parse(data, size, "fuzz.ef1", 40, 2, 1, err, N, msg, sizeof msg);
    if (rc != 0) {
        if (!strstr(msg, "fuzz.ef1") || (rc != -1 && rc != CKPT_EF_OTHER)) abort();
        for (int i = 0; i < N; i++)
            if (memcmp(&err[i], &SENTINEL, sizeof SENTINEL) != 0) abort();
        /* "another checkpoint's": the first format, or a whole file, its CRC right */
        if (rc == CKPT_EF_OTHER && !(size >= 8 && memcmp(data, CKPT_EF_MAGIC_V1, 8) == 0)) {
            unsigned char *copy = malloc(size);
            if (!copy) abort();
            memcpy(copy, data, size);
            checkpoint_ef_fix_crc(copy, size);
            if (size != whole || memcmp(copy, data, size) != 0) abort();
            free(copy);
        }
        return 0;
    }
    if (size != whole || memcmp(data, CKPT_EF_MAGIC, 8) != 0 || memcmp(err, data + CKPT_EF_HEADER, sizeof err) != 0)
        abort();
    for (int i = 0; i < N; i++)
        if (!isfinite(err[i]) || fabsf(err[i]) > CKPT_STATE_BOUND) abort();
    return 0;
}
