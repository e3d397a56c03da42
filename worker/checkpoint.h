/* worker/checkpoint.h - versioned binary checkpoints of the fused buffers.
 *
 * Layout (little-endian, as written by x86-64):
 *   "PACERCKP" | u32 version | u32 header_bytes | header fields (ckpt_header_t order)
 *   | params (nparams f32) | momentum (nparams f32) | buffers (nbuffers f32)
 *   | u32 CRC32 (zlib) of every byte before it
 * Written to a temporary file in the same directory, fsync'ed and renamed over the
 * target, so a reader sees the old checkpoint or the new one, never half of one.
 */
#ifndef PACER_CHECKPOINT_H
#define PACER_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "rng.h"

#define CKPT_MAGIC "PACERCKP"
#define CKPT_VERSION 1u
#define CKPT_MAX_WORKERS 256

/* Everything besides the buffers that a resumed run needs to continue bit for bit. */
typedef struct {
    int64_t global_step;        /* steps completed */
    int64_t epoch;              /* epoch the next step belongs to */
    int64_t step_in_epoch;      /* steps completed in that epoch */
    int64_t cursor;             /* next sample position in the epoch order */
    uint64_t seed;
    rng_t aug_rng;
    double epoch_loss_sum;      /* the epoch's running loss, for the summary */
    int64_t epoch_loss_samples;
    int64_t ps_version;         /* parameter server's update counter (async), else 0 */
    int32_t nworkers;
    int32_t batch_of[CKPT_MAX_WORKERS]; /* the batch plan in force */
} ckpt_state_t;

/* Returns 0, or -1 with err naming the path and the problem. */
int checkpoint_save(const char *path, const model_t *m, const ckpt_state_t *st,
                    char *err, size_t errlen);
/* Verifies magic, version, size, CRC and that the model name and parameter counts match
 * m, then restores params, momentum, buffers and st. On any failure m is unchanged. */
int checkpoint_load(const char *path, model_t *m, ckpt_state_t *st, char *err, size_t errlen);

#endif
