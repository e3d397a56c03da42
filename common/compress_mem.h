/* common/compress_mem.h - the one count of algorithm.compression's buffers per rank,
 * shared by the memory estimate (common/memest.c, which cannot link worker/compress.c:
 * that needs MPI and OpenBLAS) and the test that holds it to what the worker allocates
 * (tests/unit/test_compress.c, test_memest_counts_compression).
 *
 * By algorithm, what compression itself adds to a rank (the algorithm's own buffers,
 * counted or not by the estimate as before, are left out):
 *   bf16, ssgd and hpsgd      compress.c's rounded words: one 16-bit word per parameter;
 *   bf16, local-sgd/hier-bsp  the words, and algo_local_sgd.c's last average (nparams
 *                             floats) and weighted delta (nparams + MODEL_GRAD_EXTRA);
 *   bf16, the parameter-server family (spec_is_async)  no plan buffers
 *                             (compress_create_push); a worker keeps its error feedback
 *                             (nparams floats) and with checkpoints the same before its
 *                             last push (ps.c), the parameter server the widened push
 *                             with its statistics (nparams + nbuffers): the larger of
 *                             the two bounds a rank;
 *   powersgd                  an upper bound from the parameter count alone (the catalog
 *                             has no layer shapes): the error at most every parameter, Q
 *                             at most half of them (a matrix is compressed only when
 *                             2r(n + m) <= n m), the fused buffer (P and the uncompressed
 *                             rest, extras included) at most nparams + MODEL_GRAD_EXTRA;
 *                             with checkpoints rank 0 also keeps every worker's error;
 *                             local-sgd and hier-bsp add their average and delta as above.
 * In bytes. */
#ifndef PACER_COMPRESS_MEM_H
#define PACER_COMPRESS_MEM_H

#include <string.h>

#define COMPRESS_MEM_EXTRA 4 /* model.h's MODEL_GRAD_EXTRA (common/ cannot include model/) */

static inline double compress_mem_bytes(const char *algorithm, int async, const char *kind, double nparams,
                                        double nbuffers, int nworkers, int checkpoints)
{
    const int avg = strcmp(algorithm, "local-sgd") == 0 || strcmp(algorithm, "hier-bsp") == 0;
    const double avg_bytes = avg ? 4.0 * (2 * nparams + COMPRESS_MEM_EXTRA) : 0;
    if (strcmp(kind, "bf16") == 0 && async) {
        const double worker = (checkpoints ? 2 : 1) * nparams, server = nparams + nbuffers;
        return 4.0 * (worker > server ? worker : server);
    }
    if (strcmp(kind, "bf16") == 0) return 2.0 * nparams + avg_bytes;
    if (strcmp(kind, "powersgd") != 0 || async) return 0;
    double floats = nparams + nparams / 2 + nparams + COMPRESS_MEM_EXTRA;
    if (checkpoints) floats += (double)nworkers * nparams;
    return 4.0 * floats + avg_bytes;
}

#endif
