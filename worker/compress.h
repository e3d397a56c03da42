/* worker/compress.h - gradient compression of ssgd's all-reduce (algorithm.compression),
 * and of the model averages of local-sgd and hier-bsp (worker/algo_local_sgd.c,
 * local_average: there the "gradient" is each rank's weighted parameter delta since the
 * last average, with its own error feedback, the same plan and buffers).
 *
 * The plain path all-reduces the fused gradient buffer, nparams + MODEL_GRAD_EXTRA floats
 * (model.h): each rank's b_i g_i and the extras [b_i, b_i loss_i, b_i |g_i|^2, 1], and
 * the update then applies 1 / sum(b_i). Compression replaces that one collective and
 * leaves m->grads as the update expects it (an estimate of sum(b_i g_i), and the exact
 * extras), so dynamic batching weighs the ranks as before and the averaging is the same.
 *
 *   bf16      every gradient float rounded to bfloat16 (round to nearest even) and
 *             all-reduced as 16-bit words (MPI_UINT16_T) under a user-defined MPI_Op
 *             that widens both operands to fp32, adds, and rounds the sum back
 *             (compress_bf16_sum): each reduction step adds at most half a bf16 ulp of
 *             its partial sum. The extras go in a second, 16-byte float all-reduce:
 *             batch counts are not exact in bf16. Half the bytes.
 *   powersgd  Vogels, Karimireddy and Jaggi 2019, per layer: a convolution's or a fully
 *             connected layer's weight gradient, as a matrix (out, in x kh x kw), or a
 *             last-axis linear's (LAYER_LINEAR, an N-D MatMul by a weight) as its weight
 *             is stored, (in, out), is compressed when it is large (COMPRESS_MIN_ELEMS)
 *             and rank r pays at least twice ((out + in') r <= out in' / 2). With e the
 *             rank's error feedback:
 *               M = G + e;  P = M Q;  all-reduce P (a sum, as the plain path sums);
 *               P^ = Gram-Schmidt(P);  Q = M^T P^;  all-reduce Q;  M^ = P^ Q^T;
 *               e = M - M^ / N  (N ranks: the ranks' errors then sum to sum(M) - M^,
 *               so what was sent over the steps telescopes to the true sum);
 *             the update uses M^. Q starts from the job's seed (the same on every rank)
 *             and is warm-started from the previous step's reduced Q. Every other float
 *             (biases, batch-norm parameters, small layers) and the extras travel
 *             uncompressed in the same fused buffer as the P factors. The first
 *             warmup_steps steps all-reduce the plain buffer (e stays 0).
 *
 * Frozen tensors (model.h's no_update, marked before compress_create) are in no message of
 * any kind: the plain path sends the trainable tensors' gradients and the extras (in place
 * when they are one run that ends at nparams, else packed and unpacked), bf16 rounds
 * those alone, PowerSGD compresses no frozen matrix and sends no frozen float; the
 * frozen gradients in grads are left as they were (0: the backward never writes them).
 *
 * Every buffer (e, Q, the fused buffer, the bf16 words) is allocated by compress_create;
 * a step allocates nothing. Products are OpenBLAS sgemm. With compress_set_phases,
 * compress_allreduce books its own compute (before, between and after the collectives of
 * a compressed step) as PHASE_COMPRESS and the collectives as PHASE_COMM; a plain step
 * (kind none, warm-up) marks nothing, so its caller books it as before.
 *
 * The step is split in three so that tests can stand in for MPI (tests/unit/
 * test_compress.c sums the messages of several simulated ranks): compress_begin gives
 * the first messages, compress_middle the second (PowerSGD's Q), compress_end unpacks.
 * compress_allreduce runs the three with the all-reduces in between (a stage's second
 * message, bf16's extras, non-blocking beside the first: their latencies overlap). */
#ifndef PACER_COMPRESS_H
#define PACER_COMPRESS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "phase.h"

#define COMPRESS_MAX_RANK 64    /* common/spec.c's MAX_COMPRESS_RANK */
#define COMPRESS_MIN_ELEMS 1024 /* smaller weight matrices go uncompressed */
#define COMPRESS_MIN_RATIO 2    /* ... and those where rank r saves less than this factor */

typedef enum { COMPRESS_NONE = 0, COMPRESS_BF16, COMPRESS_POWERSGD } compress_kind_t;

typedef struct compress compress_t;

/* One all-reduce (a SUM, or the bf16 sum op) that the caller runs in place. */
typedef struct {
    void *buf;
    int count;
    int bf16; /* 1: count uint16 bf16 words under compress's op; 0: floats, MPI_SUM */
} compress_msg_t;

/* The plan for model m: kind "none", "bf16" or "powersgd" (the spec's), rank r, warmup
 * steps, the job's seed (Q's start), nranks (N, the ranks that sum). with_mpi: create the
 * bf16 MPI_Op (MPI must be initialised); 0 in tests and in one process. Returns 0, or -1
 * with err (an unknown kind, a rank out of range, out of memory). */
int compress_create(const model_t *m, const char *kind, int rank, int warmup_steps, uint64_t seed, int nranks,
                    int with_mpi, compress_t **out, char *err, size_t errlen);
void compress_free(compress_t *c);
/* The ranks that sum (N in e = M - M^ / N), once known after compress_create: hier-bsp
 * compresses its global averages among the group leaders only (worker/algo_hier_bsp.c). */
void compress_set_nranks(compress_t *c, int nranks);
/* The floats a plain (uncompressed) step of the caller sends after the parameters, for
 * compress_plain_bytes, when not MODEL_GRAD_EXTRA: hpsgd's plain round sends 2 (its
 * weight and weighted steps). Only the reported plain bytes change. */
void compress_set_plain_extra(compress_t *c, int extra);
/* The step timer compress_allreduce marks (worker/phase.h; NULL: none, in tests). */
void compress_set_phases(compress_t *c, step_phases_t *phases);

/* Compress only where it pays (algorithm.compression.min_gain > 0; powersgd after a
 * warm-up of at least probe_steps): the caller times each compress_allreduce, with its
 * own compute (pacer-sim's charge included), and hands the seconds to compress_observe.
 * The last probe_steps calls of the warm-up (plain) and the first probe_steps compressed
 * ones are summed, and so is the wall time of those plain steps, each with its own call
 * (the closed steps of the phases timer: evaluations are not in it; local-sgd's period of
 * several steps from an average to the next is one "step" here), so a plain call's mean
 * is at most the plain step's and the gain below is under 1. At the last compressed call of the probe the ranks
 * of comm sum their timings (one all-reduce of COMPRESS_PROBE_N doubles, once per job,
 * and rank 0's verdict broadcast, so that all agree) and
 *   gain = (mean plain call - mean compressed call) / mean plain step;
 * compression stays on (COMPRESS_KEEP) when gain >= min_gain, else every later call is
 * plain (COMPRESS_PLAIN) and the first of them adds this rank's error feedback to what
 * it sends (the dropped residue is sent, not lost). No plain or compressed call timed
 * (a resume past the probe, a local-sgd period longer than it): KEEP, as asked. Why a
 * gain and not "faster": PowerSGD needs more steps to a target (about 10% for ResNet-20
 * rank 2, docs/RESULTS.md), so a step only slightly shorter loses time to accuracy. */
typedef enum { COMPRESS_UNDECIDED = 0, COMPRESS_KEEP = 1, COMPRESS_PLAIN = 2 } compress_verdict_t;
/* The sums: plain calls' seconds and count, plain steps' seconds and count, compressed
 * calls' seconds and count (this rank's until the verdict, comm's sums after it). */
#define COMPRESS_PROBE_N 6
enum { PROBE_PLAIN_S, PROBE_PLAIN_N, PROBE_STEP_S, PROBE_STEP_N, PROBE_COMP_S, PROBE_COMP_N };
void compress_set_auto(compress_t *c, double min_gain, int probe_steps);
void compress_observe(compress_t *c, long step, double spent_s, int use_mpi, MPI_Comm comm);
/* The verdict and the sums (probe may be NULL); COMPRESS_UNDECIDED without min_gain. */
compress_verdict_t compress_verdict(const compress_t *c, double *probe);
/* The gain the sums give, NAN where a mean is missing. */
double compress_probe_gain(const double *probe);
/* A checkpoint's verdict and sums (every rank gets rank 0's: the means do not change
 * when every rank sums the same). PLAIN sends whatever error feedback was restored. */
void compress_restore_verdict(compress_t *c, compress_verdict_t v, const double *probe);

compress_kind_t compress_kind(const compress_t *c);
/* Whether the step numbered step (0-based global step) is compressed (after warm-up). */
int compress_active(const compress_t *c, long step);

/* The three phases of one step over grads (nparams + MODEL_GRAD_EXTRA floats, as packed
 * by adaptive_pack). Each fills msgs (at most 2) and returns how many; the caller sums
 * each message over the ranks in place between the calls (a plain step's is unpacked by
 * compress_middle). */
int compress_begin(compress_t *c, float *grads, long step, compress_msg_t *msgs);
int compress_middle(compress_t *c, float *grads, long step, compress_msg_t *msgs);
void compress_end(compress_t *c, float *grads, long step);

/* The whole step over comm (use_mpi 0: one process, no collective). Returns the bytes of
 * payload handed to MPI_Allreduce (count x element size, summed over the collectives;
 * 0 in one process, which hands nothing to MPI). */
size_t compress_allreduce(compress_t *c, float *grads, long step, int use_mpi, MPI_Comm comm);

/* The bf16 sum operation for callers that start their own (non-blocking) all-reduces of
 * compress_begin's messages (worker/algo_hpsgd.c); MPI_OP_NULL without MPI. */
MPI_Op compress_bf16_op(const compress_t *c);
/* A message's payload in bytes (count x its element's size). */
size_t compress_msg_bytes(const compress_msg_t *msg);

/* bf16 helpers: round to nearest even (NaN stays NaN), and the exact widening. */
uint16_t compress_to_bf16(float f);
float compress_from_bf16(uint16_t h);
/* inout[i] = bf16(fp32(in[i]) + fp32(inout[i])): the MPI_Op's body. */
void compress_bf16_sum(const uint16_t *in, uint16_t *inout, size_t n);
/* out[i] = fp32(in[i]), exact. */
void compress_bf16_widen(const uint16_t *in, float *out, size_t n);
/* A push of the parameter-server family with error feedback (worker/ps.c): with
 * v = g + err, out = bf16(v) and err = v - fp32(out), so what a worker has pushed over its
 * pushes sums to the sum of its gradients less what err holds (at most half a bf16 ulp
 * of the last v). */
void compress_bf16_feedback(const float *g, float *err, uint16_t *out, size_t n);

/* PowerSGD's state, for checkpoints and tests: Q (the same on every rank) and this
 * rank's error feedback, their float counts (0 for the other kinds), and the
 * compressed matrices' count and floats. */
float *compress_q(compress_t *c, size_t *n);
float *compress_error(compress_t *c, size_t *n);
int compress_matrices(const compress_t *c);
/* For checkpoints (rank 0 writes them, and the errors differ per rank): keep_all makes
 * room for nranks ranks' errors at the root (once, at set-up; -1 out of memory);
 * compress_gather_errors (collective over comm, or a copy in one process) collects them
 * there after step at_step (the global step count once the step is done);
 * compress_all_errors gives them and that step (NULL when never gathered). */
int compress_keep_all(compress_t *c, int nranks);
void compress_gather_errors(compress_t *c, int use_mpi, MPI_Comm comm, long at_step);
const float *compress_all_errors(const compress_t *c, long *at_step);

/* The floating-point operations of one compressed step's own compute, by the same plan:
 * PowerSGD per matrix (n x m, rank r) M = G + e (n m), P = M Q, Q = M^T P and
 * M^ = P Q^T (2 n m r each), Gram-Schmidt on P (about 2 n r^2 + 3 n r) and the error's
 * update (2 n m); bf16 one rounding and one widening per parameter. 0 for none. What
 * pacer-sim charges in deterministic mode (worker/sim.h, sim_charge_compress). */
double compress_step_flops(const compress_t *c);
/* The bytes a compressed step hands to MPI (after warm-up), and a plain step's. */
size_t compress_step_bytes(const compress_t *c);
size_t compress_plain_bytes(const compress_t *c);
/* The parameter-server family's pushes (worker/ps.c): a push is a header of header_bytes,
 * the gradient (nparams floats, or bf16 words: the trainable tensors' only, no frozen
 * one's) and the model's nbuffers batch-norm statistics as floats. compress_push_bytes is its size, the one both ends use;
 * compress_create_push makes a plan of kind none or bf16 (powersgd: -1 with err) whose
 * step and plain bytes are a push's, so the summary's compression object and the step
 * records' compression_ratio read it as they read ssgd's. It holds no step buffers (ps.c
 * keeps the error feedback, the parameter server its widened push). */
size_t compress_push_bytes(size_t header_bytes, size_t nparams, size_t nbuffers, int bf16);
int compress_create_push(const model_t *m, const char *kind, size_t header_bytes, compress_t **out, char *err,
                         size_t errlen);
/* The extra floats compression keeps for model m (error + Q + fused buffer, bf16 words
 * as half floats), for the memory estimate: computed by the same plan. */
size_t compress_state_floats(const compress_t *c);

#endif
