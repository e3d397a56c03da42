/* tests/tools/epoch_order.c - the training set's sample order of each epoch, as every
 * rank of a job computes it (worker_epoch_order in worker/train.c, called here, not
 * copied), for a test that replays a pacer run's batches in PyTorch
 * (tests/integration/onnx_zoo_families.sh).
 * usage: epoch_order SEED N EPOCHS
 * Prints one line per epoch: the N sample indices of that epoch's order, space-separated.
 * A step of global batch B takes the next B positions of the line, rank i the batch_of[i]
 * after the shares of the ranks before it (worker_next_batch). Exit 0, or 2 on a bad
 * argument. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step.h"
#include "worker.h"

static int arg_long(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    long seed, n, epochs;
    if (argc != 4 || arg_long(argv[1], 0, 0x7fffffffL, &seed) || arg_long(argv[2], 1, 1L << 24, &n) ||
        arg_long(argv[3], 1, 100000, &epochs)) {
        fprintf(stderr, "usage: epoch_order SEED N EPOCHS (SEED 0..2^31-1, N 1..2^24, EPOCHS 1..100000)\n");
        return 2;
    }
    job_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.seed = seed;
    worker_t w;
    memset(&w, 0, sizeof w);
    w.spec = &spec;
    w.train.n = (int)n;
    w.perm = malloc((size_t)n * sizeof *w.perm);
    if (!w.perm) {
        fprintf(stderr, "epoch_order: out of memory for %ld indices\n", n);
        return 1;
    }
    for (w.epoch = 0; w.epoch < epochs; w.epoch++) {
        worker_epoch_order(&w);
        for (long i = 0; i < n; i++) printf(i ? " %d" : "%d", w.perm[i]);
        putchar('\n');
    }
    free(w.perm);
    return 0;
}
