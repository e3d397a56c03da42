/* worker/checkpoint.h - versioned binary checkpoints of the fused buffers.
 *
 * Layout (little-endian, as written by x86-64), version 8:
 *   "PACERCKP" | u32 version | u32 header_bytes | header fields (the order of
 *   checkpoint_save: model name (MODEL_NAME_MAX = 64 bytes, a catalog name, NUL-padded),
 *   nparams, nbuffers, spec hash, layout hash (tensor names of up to
 *   MODEL_TENSOR_NAME_MAX bytes, offsets and counts), then
 *   ckpt_state_t's fields; version 7, still read, ends the header at moment2_floats: no
 *   measured compression choice (a run without min_gain's); version 6 at compress_ranks: no
 *   optimizer step or second moment (an SGD run's file; an AdamW run refuses it, naming
 *   what is missing); version 5 at dropout_step: no
 *   compression state; version 4 at gns_samples: no dropout steps; version 3 at batch_of:
 *   no goodput or noise-scale state either) | params (nparams f32) | momentum (nparams f32)
 *   | buffers (nbuffers f32) | version 6: PowerSGD's Q (compress_q_floats f32) and
 *   errors (compress_ranks x compress_err_floats f32) | version 7: AdamW's second moment
 *   (moment2_floats f32: nparams, or 0 for SGD) | u32 CRC32 (zlib) of every byte
 *   before it. An AdamW run keeps its first moment where SGD keeps its momentum.
 * Written to a temporary file in the same directory, fsync'ed and renamed over the
 * target, so a reader sees the old checkpoint or the new one, never half of one.
 *
 * A checkpoint is input from outside (a file on disk, possibly from another job or
 * another version): a valid CRC only says the bytes are the ones written. So the reader
 * checks the model (name, counts, a hash of the parameter layout), the spec (a hash of
 * the fields that shape the run, spec_hash) and then every counter and batch size of
 * the header against what this run can hold, before anything is used; each refusal is
 * one line naming the file and the field. A version whose bytes would be read wrongly is
 * refused, saying so: 1 had no hashes, 2 a 32-byte model name (before the catalog's
 * 64-byte names). Versions 3 and 4 are version 5 without the fields each later one
 * appends, so they are read: version 3 as a run without the goodput planner, both with
 * every worker's dropout step at the global step (see ckpt_state_t).
 */
#ifndef PACER_CHECKPOINT_H
#define PACER_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "rng.h"

#define CKPT_MAGIC "PACERCKP"
#define CKPT_PROBE_N 6 /* compress.h's COMPRESS_PROBE_N */
#define CKPT_VERSION 8u
#define CKPT_MAX_WORKERS 256

/* Everything besides the buffers that a resumed run needs to continue bit for bit. */
typedef struct {
    int64_t global_step;   /* steps completed */
    int64_t epoch;         /* epoch the next step belongs to */
    int64_t step_in_epoch; /* steps completed in that epoch */
    int64_t cursor;        /* next sample position in the epoch order */
    uint64_t seed;
    rng_t aug_rng;
    double epoch_loss_sum; /* the epoch's running loss, for the summary */
    int64_t epoch_loss_samples;
    int64_t ps_version; /* parameter server's update counter (async), else 0 */
    int32_t nworkers;
    int32_t batch_of[CKPT_MAX_WORKERS]; /* the batch plan in force; 0 past nworkers (and,
                                           with algorithm.goodput, for a worker left out) */
    uint64_t spec_hash;                 /* spec_hash() of the run's spec */
    /* Version 4 (worker/adaptive.h): the global batch in force (workers x batch_size
     * without the goodput planner), the planner's progress, data pass, gain and
     * efficiency, and the noise scale's running averages (gns_t). A version 3 file reads
     * as global batch 0 (= workers x batch_size), no progress, gain 1, no estimate. */
    int32_t global_batch;
    double progress;
    int64_t pass;
    double gain, efficiency;
    double gns_g2, gns_trace, gns_weight;
    int64_t gns_samples;
    /* Version 5 (model.h, dropout_step): each worker's dropout step, the training
     * forwards it has taken, so that a resumed worker draws the masks it would have drawn
     * next. The ranks of a synchronous algorithm step together (one forward a global step,
     * a worker the goodput planner leaves out counting its step too), so the writer (rank
     * 0) records its own for each; the parameter server records each worker's from its
     * latest push. 0 past nworkers. Versions 3 and 4 read as the global step for every
     * worker (what their resumed runs took: exact for a synchronous algorithm, masks not
     * used before for an asynchronous one's workers). */
    uint64_t dropout_step[CKPT_MAX_WORKERS];
    /* Version 6 (worker/compress.h): PowerSGD's state after the buffers: Q (the same on
     * every rank) and the error feedback of compress_ranks ranks, rank after rank, each
     * of compress_err_floats. compress_ranks is 0 when the writer did not have every
     * rank's error at this step (see step.c, worker_compress_gather): a resume then
     * starts the errors at zero. All 0 without PowerSGD, and in versions 3 to 5. */
    uint64_t compress_q_floats, compress_err_floats;
    int32_t compress_ranks;
    /* Version 7: the optimizer's step count (AdamW's t of its bias corrections: updates
     * applied; 0 for SGD) and the floats of the second moment after the compression state
     * (nparams when the writer's model had one, m->moment2; else 0). Both 0 before. */
    int64_t opt_step;
    uint64_t moment2_floats;
    /* Version 8: compression's measured choice (algorithm.compression.min_gain,
     * compress.h): the verdict (0 undecided, 1 compress, 2 plain) and the probe's sums
     * (compress.h's PROBE_*: seconds and counts). 0 without one, and before version 8. */
    int32_t compress_verdict;
    double compress_probe[CKPT_PROBE_N];
    /* Writing only (not header fields): the floats above, or NULL. */
    const float *compress_q, *compress_err;
} ckpt_state_t;

/* What the resuming run can take, to validate a checkpoint's fields against. */
typedef struct {
    uint64_t spec_hash, seed;
    int any_spec;     /* adopting another run's checkpoint (pacer-worker --adopt-checkpoint): spec_hash not compared */
    int32_t nworkers; /* this run's workers */
    int32_t spec_workers;    /* the spec's max_workers (a checkpoint may come from 1 to this many) */
    int64_t epochs;          /* the spec's */
    int64_t steps_per_epoch; /* synchronous loop; ignored when async */
    int64_t train_n;         /* training samples */
    int32_t global_batch;    /* workers x batch_size: a plan's sum */
    int32_t min_batch;       /* a plan's smallest batch (planner_bounds); 0 = 1 */
    int32_t max_batch;       /* a plan's largest batch: the batch buffers' capacity */
    int async;               /* parameter server: positions count PS updates */
    int goodput;             /* algorithm.goodput: the global batch may grow */
    int32_t max_global;      /* ... up to this (planner_max_global) */
    /* PowerSGD's plan (compress.h; 0 and NULL without): a checkpoint's state must be of
     * these sizes; Q is restored into compress_q, and this worker's error (index
     * compress_index) into compress_err when the file carries nworkers ranks' errors. */
    uint64_t compress_q_floats, compress_err_floats;
    float *compress_q, *compress_err;
    int32_t compress_index;
} ckpt_expect_t;

/* Returns 0, or -1 with err naming the path and the problem. */
int checkpoint_save(const char *path, const model_t *m, const ckpt_state_t *st, char *err, size_t errlen);
/* Reads path and restores it through checkpoint_parse. */
int checkpoint_load(const char *path, model_t *m, const ckpt_expect_t *want, ckpt_state_t *st, char *err, size_t errlen);
/* The checkpoint in buf (len bytes; path only names it in messages): verifies magic,
 * version, size and CRC, that the model name, parameter counts and layout hash match m,
 * and, unless want is NULL (tools that only compare weights), checkpoint_validate and
 * every float array it restores (a CRC only says the bytes are the ones written, and a
 * diverged or damaged run writes a valid one): parameters finite, momentum (AdamW's first
 * moment) finite and bounded (CKPT_STATE_BOUND), AdamW's second moment finite, >= 0 and
 * bounded (CKPT_MOMENT2_BOUND), PowerSGD's Q and every rank's error finite and bounded
 * (CKPT_Q_BOUND, CKPT_STATE_BOUND); and, want or not, the
 * buffers (model_check_buffers: batch-norm statistics, gathered parameters' index maps).
 * A refusal names the file, the array, the element (and its tensor) and its value. Then
 * restores params, momentum, buffers and st (a model without optimizer state,
 * model_drop_optimizer_state's, takes the weights and buffers alone). On any failure m
 * and st are unchanged. */
int checkpoint_parse(const unsigned char *buf, size_t len, const char *path, model_t *m, const ckpt_expect_t *want,
                     ckpt_state_t *st, char *err, size_t errlen);
/* Every field of st against want: the spec hash and seed; nworkers (this run's, or any
 * from 1 to spec_workers: checkpoints do not depend on the world size, the caller
 * re-plans the batches); the position (epoch, step in epoch, cursor, global step) inside
 * the run; each batch in [min_batch, max_batch] (the bounds every plan keeps,
 * common/planner.h; [min_batch, global_batch] when written by another number of
 * workers), summing to global_batch, and zero past nworkers; each dropout step at most
 * one per sample of the epochs so far, and zero past nworkers; the loss accumulators and
 * the rng state. Returns 0, or -1 with one line naming path and the field. */
int checkpoint_validate(const ckpt_state_t *st, const ckpt_expect_t *want, const char *path, char *err, size_t errlen);

/* The largest magnitude an element of error feedback may have in a file (a checkpoint's
 * PowerSGD errors, a CKPT.ef<index> file's bf16 errors): larger is refused as damage. The
 * error is gradient not yet sent: bf16's is what rounding to 8 significant bits left of
 * gradient plus error (|e| <= 2^-8 |g + e|, so about |g| / 255), PowerSGD's what its
 * rank-r approximation left of the same sum (at most that sum). Either is of the
 * gradients' size, which a run that still learns keeps near the weights' (of order 1 in
 * the networks pacer trains: normalised inputs, initialised at +-1/sqrt(fan_in)): a
 * gradient element of 1e6 moves its weight by 1e6 x lr in one step, which no run survives
 * (a diverged run's gradients become infinite or NaN, refused as such). So 1e6 is far
 * above any error of a healthy run and far below a forged 1e30, which trained on silently
 * (0.13 accuracy where the run had 0.47, health "ok"). */
#define CKPT_STATE_BOUND 1e6
/* The optimizer's state is of the same size and bounded the same way: SGD's momentum
 * buffer u = mu*u + g (+ weight decay's wd*w) and AdamW's first moment m = b1*m + (1-b1)*g
 * are running sums of gradients, at most |g| / (1 - mu) (ten gradients at mu 0.9), so also
 * far below CKPT_STATE_BOUND in a healthy run; a forged 1e30 in either trained on silently
 * (AdamW 0.117 test accuracy where the run had 0.719, health "ok"). AdamW's second moment
 * is a running mean of squared gradients: at most CKPT_STATE_BOUND squared. */
#define CKPT_MOMENT2_BOUND (CKPT_STATE_BOUND * CKPT_STATE_BOUND)
/* PowerSGD's Q: the sum over the ranks (at most CKPT_MAX_WORKERS) of M^T P, M = gradient +
 * error (each element within CKPT_STATE_BOUND), P's columns orthonormal; an element is at
 * most the ranks times a column norm of M, sqrt(rows) x CKPT_STATE_BOUND, rows below 2^24
 * (4096 = sqrt(2^24)). */
#define CKPT_Q_BOUND ((double)CKPT_MAX_WORKERS * 4096.0 * CKPT_STATE_BOUND)

/* The parameter-server family's error feedback (algorithm.compression bf16, worker/ps.c):
 * each worker keeps its own, so each writes it beside the checkpoint the parameter server
 * wrote, in its own file CKPT.ef<index> (checkpoint_ef_path), once its next reply says
 * which checkpoint (its version) it belongs to. The file: CKPT_EF_MAGIC, int64 version,
 * int32 workers, int32 index, uint64 count, then count floats, then the CRC32 (zlib) of
 * every byte before it, in host order like the checkpoint; written atomically.
 * checkpoint_ef_parse takes a file's bytes and restores err (n floats) only when the file
 * is whole (its size, its CRC), for this version, workers, index and n, and every float
 * finite and within CKPT_STATE_BOUND: 0. A whole file of another checkpoint (version,
 * workers or index: an older checkpoint's, an elastic restart's), and a file of the
 * first format (CKPT_EF_MAGIC_V1, before the checksum; not read: nothing verifies it), is
 * CKPT_EF_OTHER: the caller starts the errors at zero, saying why (the line in msg).
 * Anything else is damage, -1 with a line naming the file and what is wrong (the element
 * and its value for a float): the caller refuses to train. err is untouched unless 0.
 * checkpoint_ef_load reads path (its size bounded by n first) through it; a missing file
 * is CKPT_EF_OTHER, one it cannot read -1. */
#define CKPT_EF_MAGIC "PACEREF2"
#define CKPT_EF_MAGIC_V1 "PACEREF1"
#define CKPT_EF_HEADER 32
#define CKPT_EF_OTHER 1
void checkpoint_ef_path(const char *ckpt_path, int index, char *out, size_t len);
int checkpoint_ef_save(const char *path, int64_t version, int32_t workers, int32_t index, const float *err, size_t n,
                       char *msg, size_t msglen);
int checkpoint_ef_parse(const unsigned char *buf, size_t len, const char *path, int64_t version, int32_t workers,
                        int32_t index, float *err, size_t n, char *msg, size_t msglen);
int checkpoint_ef_load(const char *path, int64_t version, int32_t workers, int32_t index, float *err, size_t n,
                       char *msg, size_t msglen);
/* Recomputes the trailing CRC32 of an error-feedback file image of len bytes in place
 * (tests and tools that forge one). */
void checkpoint_ef_fix_crc(unsigned char *buf, size_t len);

/* For tests and tools that forge checkpoints: where a field sits in a file of this
 * version ("version", "header_bytes", "model", "nparams", "nbuffers", "spec_hash",
 * "layout_hash", the ckpt_state_t fields by name, "batch_of[i]", "dropout_step[i]").
 * Returns 0 with the
 * byte offset and size, or -1 for an unknown name. */
int checkpoint_field_at(const char *field, size_t *off, size_t *size);
/* Recomputes the trailing CRC32 of a checkpoint image of len bytes in place. */
void checkpoint_fix_crc(unsigned char *buf, size_t len);
/* For the same: where element i of a float array sits in the checkpoint image buf of len
 * bytes (this version's, its counts as its header says): name "params[i]", "momentum[i]"
 * (AdamW's first moment), "buffers[i]", "compress_q[i]", "compress_err[i]" (rank after
 * rank) or "moment2[i]". 0 with the byte offset, or -1 (unknown name, i past the array,
 * or not a file of this version). */
int checkpoint_data_at(const unsigned char *buf, size_t len, const char *name, size_t *off);

#endif
