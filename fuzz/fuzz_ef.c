/* fuzz/fuzz_ef.c - libFuzzer target for the reader of the parameter-server workers' error
 * feedback files (checkpoint_ef_parse, worker/checkpoint.c). Build and run: make fuzz-ef.
 *
 * The input is a file as it is; the reader expects version 40, worker 1 of 2 and N
 * floats. fuzz/corpus/ef/ holds a valid file (written by the harness's own
 * checkpoint_ef_save with PACER_FUZZ_WRITE_SEEDS=DIR) and variants of its header.
 * Invariants: a refusal leaves the error buffer untouched and names the file; an
 * accepted file is exactly the header and N floats, all of them copied. */
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
        const float e[N] = {0.5f, -0.25f, 1e-3f, 0, 3};
        char path[1024], msg[1400];
        snprintf(path, sizeof path, "%s/valid.bin", dir);
        if (checkpoint_ef_save(path, 40, 2, 1, e, N, msg, sizeof msg) != 0) fprintf(stderr, "%s\n", msg);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    float err[N];
    for (int i = 0; i < N; i++) err[i] = SENTINEL;
    char msg[1400] = "";
    int rc = checkpoint_ef_parse(data, size, "fuzz.ef1", 40, 2, 1, err, N, msg, sizeof msg);
    if (rc != 0) {
        if (!strstr(msg, "fuzz.ef1")) abort();
        for (int i = 0; i < N; i++)
            if (memcmp(&err[i], &SENTINEL, sizeof SENTINEL) != 0) abort();
        return 0;
    }
    if (size != CKPT_EF_HEADER + N * sizeof(float) || memcmp(err, data + CKPT_EF_HEADER, sizeof err) != 0) abort();
    return 0;
}
