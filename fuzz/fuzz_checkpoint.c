/* fuzz/fuzz_checkpoint.c - libFuzzer target for the checkpoint reader (checkpoint_parse
 * and checkpoint_validate, worker/checkpoint.c). Build and run: make fuzz-checkpoint.
 *
 * The model is a hand-made one of 6 parameters and 2 buffers in 3 tensors, so a whole
 * checkpoint is about 1.2 KB and the fuzzer reaches every header field. Input, by the
 * low bits of its first byte:
 *   bit 0  0: the rest is a checkpoint file as it is (the seeds are real ones);
 *          1: the rest patches a valid checkpoint written at start-up: records of
 *             (offset low, offset high, byte), with an offset past the end truncating
 *             the file there (a CRC mismatch is then the common refusal: see bit 1);
 *   bit 1  recompute the CRC before reading, so the fields behind it are reached;
 *   bit 2  validate against the spec's expectations (what pacer-worker --resume does),
 *          else only the structure (what ckpt_diff does);
 *   bit 3  (with bit 2) the expectations of a spec with algorithm.goodput (version 4's
 *          global batch and progress fields, workers left out);
 *   bit 4  the model is named "mlp" (a built-in whose head takes the data set's classes)
 *          and has one class more than the checkpoint (NP + MLP_PER_CLASS parameters), and
 *          bit 0's valid checkpoint is one written under that name: the refusal that
 *          names both class counts (worker/checkpoint.c's other_classes);
 *   bit 5  (with bit 2, not 3) the expectations of a PowerSGD plan (version 6's Q and
 *          error feedback after the buffers: 3 and 2 floats here), restored into
 *          buffers the harness checks are written only on success;
 *   bit 6  the reading model is an AdamW run's (a second moment, model.h's moment2), and
 *          bit 0's valid checkpoint one written by such a run (version 7's opt_step and
 *          second moment after the buffers): validated, a file without a second moment is
 *          refused saying so, and a refused one leaves the second moment untouched.
 * Invariants: a refusal leaves the model's weights untouched and says which file; an
 * accepted checkpoint, validated, holds batch sizes inside the buffers and a position
 * inside the run (with the goodput planner: a plan summing to the checkpoint's global
 * batch, within [B0, max_global], never leaving worker 0 out), no batch or dropout
 * step past the workers, and restored only finite weights and momentum, a second moment
 * finite and >= 0, and PowerSGD state finite and within its bounds (CKPT_Q_BOUND,
 * CKPT_STATE_BOUND).
 *
 * PACER_FUZZ_WRITE_SEEDS=DIR writes the seed files (a fresh run, the same after 4 steps,
 * a finished run, a goodput run, a PowerSGD run, an AdamW run) into DIR at start-up:
 * fuzz/corpus/checkpoint/ holds their output, the first four as format 5 wrote them (kept,
 * so the fuzzer reads that format too), powersgd.bin in format 6, adamw.bin in format 7,
 * measured.bin (PowerSGD after min_gain's probe ruled plain: its verdict and sums) in 8,
 * and three whose CRC is right but whose floats are damage: powersgd-huge-error.bin (an
 * error of 1e30), adamw-negative-v.bin (a second moment of -1), nan-weight.bin.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"

enum { NP = 6, NB = 2, NW = 2 };
/* mlp's head is 128 wide: a class is 128 weights and a bias (common/catalog.c's head_in) */
enum { MLP_PER_CLASS = 129, NP_MLP = NP + MLP_PER_CLASS };
static model_t model, mlp;
static tensor_info_t tensors[3], mlp_tensors[3];
static float params[NP_MLP], momentum[NP_MLP], moment2[NP_MLP], buffers[NB];
static unsigned char *valid, *valid_mlp, *valid_adamw;
static size_t valid_len, valid_mlp_len, valid_adamw_len;
static const int64_t ADAMW_STEP = 14; /* the AdamW file's opt_step */
static const ckpt_expect_t WANT = {.spec_hash = 0x1234,
                                   .seed = 42,
                                   .nworkers = NW,
                                   .epochs = 3,
                                   .steps_per_epoch = 10,
                                   .train_n = 640,
                                   .global_batch = 64,
                                   .min_batch = 8,
                                   .max_batch = 48};
static const ckpt_expect_t WANT_GOODPUT = {.spec_hash = 0x1234,
                                           .seed = 42,
                                           .nworkers = NW,
                                           .epochs = 3,
                                           .steps_per_epoch = 10,
                                           .train_n = 640,
                                           .global_batch = 64,
                                           .min_batch = 8,
                                           .max_batch = 256,
                                           .goodput = 1,
                                           .max_global = 256};

enum { CQ = 3, CE = 2 }; /* a PowerSGD plan's Q and error floats (fuzz's own sizes) */
static float cq_buf[CQ], ce_buf[CE];
static const float CQ_SAVED[CQ] = {1, 2, 3}, CE_SAVED[NW * CE] = {4, 5, 6, 7};
static ckpt_expect_t WANT_PSGD; /* WANT with the plan: LLVMFuzzerInitialize */

static void make_model(void)
{
    snprintf(model.name, sizeof model.name, "fuzz");
    model.nparams = NP, model.nbuffers = NB, model.ntensors = 3;
    model.params = params, model.momentum = momentum, model.buffers = buffers, model.tensors = tensors;
    snprintf(tensors[0].name, sizeof tensors[0].name, "w"), tensors[0].count = 4;
    snprintf(tensors[1].name, sizeof tensors[1].name, "b"), tensors[1].offset = 4, tensors[1].count = 2;
    snprintf(tensors[2].name, sizeof tensors[2].name, "rm"), tensors[2].count = 2, tensors[2].is_buffer = 1;
    for (int i = 0; i < NP; i++) params[i] = (float)i, momentum[i] = -(float)i;
    buffers[0] = 0.5f, buffers[1] = 2.0f;
    /* the same buffers under a built-in's name, one class wider (its first tensor) */
    mlp = model;
    snprintf(mlp.name, sizeof mlp.name, "mlp");
    mlp.nparams = NP_MLP, mlp.num_classes = 11, mlp.tensors = mlp_tensors;
    memcpy(mlp_tensors, tensors, sizeof tensors);
    mlp_tensors[0].count += MLP_PER_CLASS, mlp_tensors[1].offset += MLP_PER_CLASS;
}

/* A state that validates against WANT: step k of epoch e. */
static void state(ckpt_state_t *st, int64_t epoch, int64_t k)
{
    memset(st, 0, sizeof *st);
    st->spec_hash = WANT.spec_hash, st->seed = WANT.seed;
    st->epoch = epoch, st->step_in_epoch = k, st->cursor = k * WANT.global_batch;
    st->global_step = epoch * WANT.steps_per_epoch + k;
    st->aug_rng.s[0] = 7, st->aug_rng.s[1] = 9;
    st->epoch_loss_sum = 2.5 * (double)k, st->epoch_loss_samples = k * WANT.global_batch;
    st->nworkers = NW, st->batch_of[0] = 40, st->batch_of[1] = 24;
    st->global_batch = WANT.global_batch, st->gain = st->efficiency = 1;
    st->progress = (double)st->global_step;
}

/* DIR/NAME.bin: the mode byte, then the checkpoint's bytes (PACER_FUZZ_WRITE_SEEDS). */
static void write_seed(const char *dir, const char *name, int mode, const unsigned char *b, size_t len)
{
    char out[512];
    snprintf(out, sizeof out, "%s/%s.bin", dir, name);
    FILE *f = fopen(out, "wb");
    if (!f || fputc(mode, f) == EOF || fwrite(b, 1, len, f) != len || fclose(f) != 0) abort();
}

static unsigned char *write_read(const char *path, const ckpt_state_t *st, size_t *len)
{
    char err[512];
    if (checkpoint_save(path, &model, st, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_checkpoint: %s\n", err);
        abort();
    }
    FILE *f = fopen(path, "rb");
    if (!f) abort();
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*len);
    if (!buf || fread(buf, 1, *len, f) != *len) abort();
    fclose(f);
    return buf;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    make_model();
    WANT_PSGD = WANT;
    WANT_PSGD.compress_q = cq_buf, WANT_PSGD.compress_err = ce_buf;
    WANT_PSGD.compress_q_floats = CQ, WANT_PSGD.compress_err_floats = CE, WANT_PSGD.compress_index = 1;
    char dir[] = "/tmp/pacer-fuzz-ckpt-XXXXXX", path[64];
    if (!mkdtemp(dir)) abort();
    snprintf(path, sizeof path, "%s/c.ckpt", dir);
    ckpt_state_t st;
    state(&st, 1, 4);
    valid = write_read(path, &st, &valid_len);
    /* the model's NP parameters as "mlp" wrote them: 10 classes to mlp's 11 */
    snprintf(model.name, sizeof model.name, "mlp");
    valid_mlp = write_read(path, &st, &valid_mlp_len);
    snprintf(model.name, sizeof model.name, "fuzz");
    /* an AdamW run's: the step count and the second moment */
    for (int i = 0; i < NP; i++) moment2[i] = 0.25f * (float)(i + 1);
    model.moment2 = moment2;
    st.opt_step = ADAMW_STEP;
    valid_adamw = write_read(path, &st, &valid_adamw_len);
    st.opt_step = 0;
    model.moment2 = NULL;
    const char *seeds = getenv("PACER_FUZZ_WRITE_SEEDS");
    if (seeds) {
        static const struct {
            const char *name;
            int epoch, k;
        } S[] = {{"fresh", 0, 0}, {"mid-epoch", 1, 4}, {"done", 3, 0}};
        size_t len;
        unsigned char *b;
        for (size_t i = 0; i < sizeof S / sizeof S[0]; i++) {
            state(&st, S[i].epoch, S[i].k);
            b = write_read(path, &st, &len);
            write_seed(seeds, S[i].name, 4, b, len); /* mode byte: raw file, CRC as is, validated */
            free(b);
        }
        /* A goodput run's (mode byte 12: validated with WANT_GOODPUT): global batch 128 at
         * gain 1.5, worker 1 left out. */
        state(&st, 1, 4);
        st.global_batch = 128, st.batch_of[0] = 128, st.batch_of[1] = 0, st.cursor = 500;
        st.gain = 1.5, st.efficiency = 0.75, st.progress = 16, st.epoch_loss_samples = 400;
        st.gns_g2 = 0.5, st.gns_trace = 40, st.gns_weight = 0.6, st.gns_samples = 90;
        b = write_read(path, &st, &len);
        write_seed(seeds, "goodput", 12, b, len);
        free(b);
        /* mode byte 20: mlp's checkpoint of 10 classes, read by an 11-class mlp */
        write_seed(seeds, "other-classes", 20, valid_mlp, valid_mlp_len);
        /* A PowerSGD run's (mode byte 36: validated with WANT_PSGD): Q and both workers'
         * errors after the buffers. */
        state(&st, 1, 4);
        st.compress_q = CQ_SAVED, st.compress_err = CE_SAVED;
        st.compress_q_floats = CQ, st.compress_err_floats = CE, st.compress_ranks = NW;
        b = write_read(path, &st, &len);
        write_seed(seeds, "powersgd", 36, b, len);
        free(b);
        /* The same after min_gain's probe ruled plain (version 8's verdict and sums). */
        st.compress_verdict = 2;
        const double probe[CKPT_PROBE_N] = {0.4, 20, 2.2, 20, 0.5, 20};
        memcpy(st.compress_probe, probe, sizeof probe);
        b = write_read(path, &st, &len);
        write_seed(seeds, "measured", 36, b, len);
        free(b);
        st.compress_verdict = 0;
        memset(st.compress_probe, 0, sizeof st.compress_probe);
        /* mode byte 68: an AdamW run's, validated by an AdamW run */
        write_seed(seeds, "adamw", 68, valid_adamw, valid_adamw_len);
        /* Damage behind a right CRC, each refused when validated: a PowerSGD error of 1e30
         * (mode 36), an AdamW second moment of -1 (68), a NaN weight (4). */
        const float huge[NW * CE] = {4, 5, 1e30f, 7};
        state(&st, 1, 4);
        st.compress_q = CQ_SAVED, st.compress_err = huge;
        st.compress_q_floats = CQ, st.compress_err_floats = CE, st.compress_ranks = NW;
        b = write_read(path, &st, &len);
        write_seed(seeds, "powersgd-huge-error", 36, b, len);
        free(b);
        state(&st, 1, 4);
        model.moment2 = moment2, moment2[2] = -1, st.opt_step = ADAMW_STEP;
        b = write_read(path, &st, &len);
        write_seed(seeds, "adamw-negative-v", 68, b, len);
        free(b);
        model.moment2 = NULL, moment2[2] = 0.75f, st.opt_step = 0;
        params[3] = NAN;
        b = write_read(path, &st, &len);
        write_seed(seeds, "nan-weight", 4, b, len);
        free(b);
        params[3] = 3;
    }
    unlink(path);
    rmdir(dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int mode = data[0];
    data++, size--;
    unsigned char *buf;
    size_t len;
    const int adamw = (mode & 64) && !(mode & 16);
    model_t *m = (mode & 16) ? &mlp : &model;
    model.moment2 = adamw ? moment2 : NULL;
    if (mode & 1) {
        const unsigned char *base = (mode & 16) ? valid_mlp : adamw ? valid_adamw : valid;
        const size_t base_len = (mode & 16) ? valid_mlp_len : adamw ? valid_adamw_len : valid_len;
        len = base_len;
        buf = malloc(len);
        if (!buf) return 0;
        memcpy(buf, base, len);
        for (size_t i = 0; i + 3 <= size; i += 3) {
            size_t off = (size_t)data[i] | (size_t)data[i + 1] << 8;
            if (off < base_len) buf[off] = data[i + 2];
            else if (off - base_len < len) len = off - base_len; /* truncate */
        }
    } else {
        len = size;
        buf = malloc(len ? len : 1);
        if (!buf) return 0;
        memcpy(buf, data, len);
    }
    if (mode & 2) checkpoint_fix_crc(buf, len);
    float before[NP_MLP + NP_MLP + NB], before_m2[NP_MLP];
    memcpy(before_m2, moment2, sizeof moment2);
    memcpy(before, params, sizeof params);
    memcpy(before + NP_MLP, momentum, sizeof momentum);
    memcpy(before + 2 * NP_MLP, buffers, sizeof buffers);
    ckpt_state_t st;
    char err[1024];
    err[0] = 0;
    const ckpt_expect_t *want = !(mode & 4) ? NULL : (mode & 8) ? &WANT_GOODPUT : (mode & 32) ? &WANT_PSGD : &WANT;
    memset(cq_buf, 0, sizeof cq_buf);
    memset(ce_buf, 0, sizeof ce_buf);
    const int rc = checkpoint_parse(buf, len, "fuzz.ckpt", m, want, &st, err, sizeof err);
    if (rc != 0) {
        if (strncmp(err, "fuzz.ckpt: ", 11) != 0 || strchr(err, '\n')) abort();
        for (int i = 0; i < CQ; i++)
            if (cq_buf[i] != 0) abort(); /* a refused file restores nothing */
        for (int i = 0; i < CE; i++)
            if (ce_buf[i] != 0) abort();
        /* mlp's own 10-class checkpoint, unchanged: the refusal names both counts */
        if (m == &mlp && len == valid_mlp_len && memcmp(buf, valid_mlp, len) == 0 &&
            !strstr(err, "checkpoint is for model mlp with 10 classes (6 parameters), the job's data set has 11 (135)"))
            abort();
        if (memcmp(before, params, sizeof params) || memcmp(before + NP_MLP, momentum, sizeof momentum) ||
            memcmp(before + 2 * NP_MLP, buffers, sizeof buffers) || memcmp(before_m2, moment2, sizeof moment2))
            abort();
        /* the AdamW run's own file, unchanged, is accepted; a validated AdamW run refuses a
         * file without a second moment only by saying so */
        if (adamw && (mode & 1) && size == 0 && !(mode & (8 | 32))) abort();
    } else if (adamw && want && st.moment2_floats != NP) {
        abort(); /* an AdamW run resumed without its second moment */
    } else if (want) {
        int64_t sum = 0;
        for (int i = 0; i < CKPT_MAX_WORKERS; i++) {
            int left_out = want->goodput && i > 0 && st.batch_of[i] == 0;
            if (i < NW && !left_out && (st.batch_of[i] < want->min_batch || st.batch_of[i] > want->max_batch)) abort();
            if (i >= NW && (st.batch_of[i] != 0 || st.dropout_step[i] != 0)) abort();
            sum += st.batch_of[i];
        }
        if (sum != st.global_batch || st.global_batch < want->global_batch ||
            st.global_batch > (want->goodput ? want->max_global : want->global_batch) || st.epoch < 0 ||
            st.epoch > want->epochs || st.cursor < 0 || st.cursor > want->train_n || st.global_step < 0)
            abort();
        /* compression state: none, or exactly the plan's sizes, from at most CKPT_MAX_WORKERS ranks */
        if (st.compress_q_floats &&
            (st.compress_q_floats != want->compress_q_floats || st.compress_err_floats != want->compress_err_floats))
            abort();
        if (st.compress_ranks < 0 || st.compress_ranks > CKPT_MAX_WORKERS) abort();
        /* every restored float as a resume may use it */
        for (size_t i = 0; i < m->nparams; i++)
            if (!isfinite(m->params[i]) || !isfinite(m->momentum[i]) ||
                (adamw && (!isfinite(moment2[i]) || moment2[i] < 0)))
                abort();
        for (int i = 0; want == &WANT_PSGD && i < CQ; i++)
            if (!isfinite(cq_buf[i]) || fabsf(cq_buf[i]) > CKPT_Q_BOUND) abort();
        for (int i = 0; want == &WANT_PSGD && i < CE; i++)
            if (!isfinite(ce_buf[i]) || fabsf(ce_buf[i]) > CKPT_STATE_BOUND) abort();
    }
    /* the measured choice: a verdict of three and sums of seconds and counts, bounded */
    if (rc == 0) {
        if (st.compress_verdict < 0 || st.compress_verdict > 2) abort();
        for (int i = 0; i < CKPT_PROBE_N; i++)
            if (!(st.compress_probe[i] >= 0 && st.compress_probe[i] <= 1e12)) abort();
    }
    /* every input starts from the same model */
    memcpy(params, before, sizeof params);
    memcpy(momentum, before + NP_MLP, sizeof momentum);
    memcpy(buffers, before + 2 * NP_MLP, sizeof buffers);
    memcpy(moment2, before_m2, sizeof moment2);
    model.moment2 = NULL;
    free(buf);
    return 0;
}
