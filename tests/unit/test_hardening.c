/* tests/unit/test_hardening.c - hostile input from files and from Redis (issue 13, memory
 * safety): data sets whose shape or labels do not fit the model, checkpoints with a valid
 * CRC but hostile header fields, and Redis replies the assignment and profile parsers must
 * survive. Each case must end in an error that names the file and the field (or in the
 * reply being ignored), never in a write past a buffer (run under make check-asan).
 *
 * The data sets are tiny MNIST-format IDX files written into a mkdtemp() directory, so
 * the tests run anywhere; nothing here needs the real data sets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "loop.h"
#include "step.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "checkpoint.h"
#include "dynbatch.h"
#include "redis_report.h"
#include "spec.h"
#include "train.h"

typedef struct {
    char dir[64];
    char data[128], ckdir[128];
} fixture_t;

static int setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    strcpy(fx->dir, "/tmp/pacer-test-hardening-XXXXXX");
    if (!mkdtemp(fx->dir)) {
        free(fx);
        return -1;
    }
    snprintf(fx->data, sizeof fx->data, "%s/data", fx->dir);
    snprintf(fx->ckdir, sizeof fx->ckdir, "%s/ck", fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *fx = *state;
    int rc = rm_tree(fx->dir);
    free(fx);
    return rc;
}

/* ---- tiny IDX data sets ------------------------------------------------------------- */

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static void write_bytes(const char *path, const uint8_t *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* dir/<prefix>-images-idx3-ubyte with n images of rows x cols, and the labels file with
 * labels i % nclass. */
static void write_idx(const char *dir, const char *prefix, int n, int rows, int cols, int nclass)
{
    char path[256];
    size_t img = (size_t)rows * cols, len = 16 + (size_t)n * img;
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    put_be32(buf, 0x803), put_be32(buf + 4, (uint32_t)n), put_be32(buf + 8, (uint32_t)rows);
    put_be32(buf + 12, (uint32_t)cols);
    for (size_t k = 16; k < len; k++) buf[k] = (uint8_t)(k * 7);
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, prefix);
    write_bytes(path, buf, len);
    put_be32(buf, 0x801), put_be32(buf + 4, (uint32_t)n);
    for (int i = 0; i < n; i++) buf[8 + i] = (uint8_t)(i % nclass);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, prefix);
    write_bytes(path, buf, 8 + (size_t)n);
    free(buf);
}

static void make_data(fixture_t *fx, int test_side)
{
    assert_int_equal(mkdir(fx->data, 0755), 0);
    write_idx(fx->data, "train", 256, 28, 28, 10);
    write_idx(fx->data, "t10k", 64, test_side, test_side, 10);
}

static void parse_spec(const char *json, job_spec_t *s)
{
    char err[512];
    if (spec_parse(json, s, err, sizeof err) != 0) fail_msg("spec: %s", err);
}

/* A small lenet5 job on the fixture's data, checkpoints into fx->ckdir. */
static void lenet_spec(fixture_t *fx, job_spec_t *s, const char *extra)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"model\": \"lenet5\", \"name\": \"h\", \"dataset\": {\"name\": \"mnist\", \"path\": \"%s\"},"
             " \"batch_size\": 16, \"epochs\": 2, \"log_every\": 0, \"device\": \"cpu\","
             " \"checkpoint\": {\"every_steps\": 4, \"dir\": \"%s\"}%s}",
             fx->data, fx->ckdir, extra ? extra : "");
    parse_spec(json, s);
}

/* ---- data sets against the model ---------------------------------------------------- */

/* A test set of 40x40 images beside a 28x28 training set: before issue 13 only the
 * training set's shape was checked, and evaluation gathered 1600 floats per image into
 * a buffer sized for 784 (a heap overflow under ASan). Now set-up refuses it and names
 * the file. */
static void test_test_set_shape_mismatch(void **state)
{
    fixture_t *fx = *state;
    make_data(fx, 40);
    static job_spec_t spec;
    static worker_t w;
    lenet_spec(fx, &spec, NULL);
    char err[512] = "";
    int rc = worker_setup(&w, &spec, 0, 1, err, sizeof err);
    if (rc == 0) {
        float loss, acc;
        worker_evaluate(&w, &loss, &acc); /* the overflow this test guards against */
        worker_teardown(&w);
        fail_msg("a 40x40 test set was accepted for lenet5 (28x28)");
    }
    assert_non_null(strstr(err, "t10k-images-idx3-ubyte"));
    assert_non_null(strstr(err, "1x40x40"));
    assert_non_null(strstr(err, "1x28x28"));
    worker_teardown(&w);
}

static void test_train_set_shape_mismatch(void **state)
{
    fixture_t *fx = *state;
    assert_int_equal(mkdir(fx->data, 0755), 0);
    write_idx(fx->data, "train", 256, 32, 32, 10);
    write_idx(fx->data, "t10k", 64, 28, 28, 10);
    static job_spec_t spec;
    static worker_t w;
    lenet_spec(fx, &spec, NULL);
    char err[512] = "";
    assert_int_not_equal(worker_setup(&w, &spec, 0, 1, err, sizeof err), 0);
    assert_non_null(strstr(err, "train-images-idx3-ubyte"));
    assert_non_null(strstr(err, "1x32x32"));
    worker_teardown(&w);
}

/* The gather itself never writes past the buffer it is given, whatever the data set's
 * shape: it refuses instead. */
static void test_gather_refuses_what_does_not_fit(void **state)
{
    fixture_t *fx = *state;
    make_data(fx, 40);
    char ip[256], lp[256], err[512];
    snprintf(ip, sizeof ip, "%s/t10k-images-idx3-ubyte", fx->data);
    snprintf(lp, sizeof lp, "%s/t10k-labels-idx1-ubyte", fx->data);
    dataset_t d;
    assert_int_equal(dataset_load_idx(ip, lp, 10, &d, err, sizeof err), DATA_OK);
    /* room for three 28x28 images: one 40x40 image fits, two do not */
    float *x = malloc(3 * 784 * sizeof *x);
    int32_t y[2];
    int32_t idx[2] = {0, 1};
    assert_non_null(x);
    assert_int_equal(data_batch_gather(&d, idx, 2, x, 3 * 784, y, 0, NULL), -1);
    assert_int_equal(data_batch_gather(&d, idx, 1, x, 3 * 784, y, 0, NULL), 0);
    idx[0] = 64; /* past the end of the data set */
    assert_int_equal(data_batch_gather(&d, idx, 1, x, 3 * 784, y, 0, NULL), -1);
    idx[0] = -1;
    assert_int_equal(data_batch_gather(&d, idx, 1, x, 3 * 784, y, 0, NULL), -1);
    assert_int_equal(dataset_check_shape(&d, 1, 28, 28, 10, "lenet5", err, sizeof err), DATA_EFORMAT);
    assert_non_null(strstr(err, ip));
    assert_int_equal(dataset_check_shape(&d, 1, 40, 40, 10, "x", err, sizeof err), DATA_OK);
    /* labels are 0..9: a model with 5 classes cannot take them */
    assert_int_equal(dataset_check_shape(&d, 1, 40, 40, 5, "x", err, sizeof err), DATA_ELABEL);
    assert_non_null(strstr(err, lp));
    free(x);
    dataset_free(&d);
}

/* ---- checkpoints with a valid CRC and hostile fields --------------------------------- */

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*len);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

/* Trains the fixture's job to step 4 (a checkpoint there) and returns its path. */
static void make_checkpoint(fixture_t *fx, char *path, size_t len)
{
    make_data(fx, 28);
    static job_spec_t spec;
    static worker_t w;
    lenet_spec(fx, &spec, NULL);
    char err[512] = "";
    if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) fail_msg("%s", err);
    train_opts_t o = {.stop_after_steps = 4};
    if (worker_train(&w, &o, err, sizeof err) != 0) fail_msg("%s", err);
    worker_checkpoint_path(&w, path, len);
    worker_teardown(&w);
    assert_int_equal(access(path, R_OK), 0);
}

/* A copy of the checkpoint with field set to the little-endian value (size bytes as the
 * field has), CRC fixed. */
static void forge(const char *from, const char *to, const char *field, int64_t value)
{
    size_t len, off, size;
    unsigned char *buf = read_all(from, &len);
    if (checkpoint_field_at(field, &off, &size) != 0) fail_msg("unknown field %s", field);
    assert_true(off + size <= len);
    if (size == 4) {
        int32_t v = (int32_t)value;
        memcpy(buf + off, &v, 4);
    } else {
        memset(buf + off, 0, size);
        memcpy(buf + off, &value, 8);
    }
    checkpoint_fix_crc(buf, len);
    write_bytes(to, buf, len);
    free(buf);
}

/* Resuming from path must fail with want in the message and leave the weights alone. */
static void expect_refused(worker_t *w, const char *path, const char *want)
{
    char err[1024] = "";
    size_t np = w->model->nparams;
    float *before = malloc(np * sizeof *before);
    assert_non_null(before);
    memcpy(before, w->model->params, np * sizeof *before);
    long step = w->global_step;
    if (worker_resume(w, path, err, sizeof err) == 0) fail_msg("resumed from a checkpoint that wants \"%s\"", want);
    if (!strstr(err, want)) fail_msg("refusal \"%s\"\n  does not say \"%s\"", err, want);
    if (!strstr(err, path)) fail_msg("refusal \"%s\" does not name the file", err);
    assert_memory_equal(before, w->model->params, np * sizeof *before);
    assert_int_equal(w->global_step, step);
    free(before);
}

static void test_checkpoint_hostile_fields(void **state)
{
    fixture_t *fx = *state;
    char good[512], bad[600];
    make_checkpoint(fx, good, sizeof good);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", fx->dir);

    static job_spec_t spec;
    static worker_t w;
    lenet_spec(fx, &spec, NULL);
    char err[512] = "";
    if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) fail_msg("%s", err);
    /* 256 samples / batch 16 = 16 steps per epoch, 2 epochs, one worker */
    assert_int_equal(w.steps_per_epoch, 16);

    static const struct {
        const char *field;
        int64_t value;
        const char *want;
    } CASES[] = {
        /* the example: a batch far past the buffers */
        {"batch_of[0]", 100000, "batch_of[0] = 100000 is outside [1, 16]"},
        {"batch_of[0]", 17, "batch_of[0] = 17 is outside [1, 16]"},
        {"batch_of[0]", 0, "batch_of[0] = 0 is outside"},
        {"batch_of[0]", -5, "batch_of[0] = -5 is outside"},
        {"batch_of[1]", 16, "batch_of[1] = 16 past nworkers (1), want 0"},
        {"batch_of[255]", 1, "batch_of[255] = 1 past nworkers"},
        {"nworkers", 300, "invalid counters"},
        {"nworkers", -1, "invalid counters"},
        {"nworkers", 2, "nworkers = 2 is outside [1, 1]"},
        {"nworkers", 0, "nworkers = 0 is outside [1, 1]"},
        {"epoch", 3, "epoch = 3 is outside [0, 2]"},
        {"epoch", INT64_MAX, "epoch = 9223372036854775807 is outside"},
        {"epoch", -1, "invalid counters"},
        {"epoch", 2, "step_in_epoch = 4 is outside [0, 0]"},
        {"step_in_epoch", 17, "step_in_epoch = 17 is outside [0, 16]"},
        {"step_in_epoch", INT64_MAX, "step_in_epoch = 9223372036854775807 is outside"},
        {"step_in_epoch", -1, "invalid counters"},
        {"cursor", 65, "cursor = 65 is outside [64, 64]"},
        {"cursor", (int64_t)1 << 40, "cursor = 1099511627776 is outside"},
        {"cursor", -64, "invalid counters"},
        {"global_step", 5, "global_step = 5 is outside [4, 4]"},
        {"global_step", (int64_t)1 << 50, "global_step = 1125899906842624 is outside"},
        {"global_step", INT64_MIN, "invalid counters"},
        {"epoch_loss_samples", -1, "epoch_loss_samples = -1 is outside [0, 64]"},
        {"epoch_loss_samples", 65, "epoch_loss_samples = 65 is outside [0, 64]"},
        {"ps_version", 99, "ps_version = 99 is outside [0, 4]"},
        {"ps_version", -1, "ps_version = -1 is outside"},
        {"aug_rng", 0, "aug_rng is all zero"},
        {"seed", 43, "seed 43, spec has 42"},
        {"spec_hash", 1, "another job spec"},
        {"layout_hash", 1, "parameter layout"},
        {"nparams", 61707, "truncated or oversized checkpoint"},
        {"nparams", INT64_MAX, "truncated or oversized checkpoint"},
        {"nbuffers", 1, "truncated or oversized checkpoint"},
        {"version", 1, "checkpoint format version 1 is from an older pacer-worker, which did not record"},
        {"version", 2, "checkpoint format version 2 is from an older pacer-worker, which kept model names in 32"},
        {"version", 9, "unsupported checkpoint version 9 (this build reads 3 to 8)"},
        {"version", 3, "checkpoint field header_bytes = "},
        {"version", 4, "checkpoint field header_bytes = "},
        {"version", 5, "checkpoint field header_bytes = "},
        {"version", 6, "checkpoint field header_bytes = "},
        {"version", 7, "checkpoint field header_bytes = "},
        {"version", -1, "unsupported checkpoint version 4294967295"},
        {"header_bytes", 100, "checkpoint field header_bytes = 100, version 8 has"},
        /* version 8's: the measured compression choice */
        {"compress_verdict", 3,
         "checkpoint field compress_verdict = 3 is not a verdict (0 undecided, 1 compress, 2 plain)"},
        {"compress_verdict", -1, "checkpoint field compress_verdict = -1 is not a verdict"},
        {"compress_probe[2]", (int64_t)0x7ff8000000000000LL, "checkpoint field compress_probe[2] = nan is not a sum"},
        {"compress_probe[0]", (int64_t)0xbff0000000000000LL, "checkpoint field compress_probe[0] = -1 is not a sum"},
        /* version 6's: PowerSGD's state, bounded before anything is read by it */
        {"compress_q_floats", (int64_t)1 << 41, "compress_q_floats = 2199023255552, compress_err_floats = 0"},
        {"compress_ranks", 300, "compress_ranks = 300 are not a PowerSGD state"},
        /* version 7's: the optimizer's step and second moment */
        {"moment2_floats", 5, "checkpoint field moment2_floats = 5, want 0 or nparams (61706)"},
        {"moment2_floats", 61706, "truncated or oversized checkpoint"},
        {"opt_step", 3, "checkpoint field opt_step = 3 is not an AdamW step count (0 without a second moment)"},
        {"opt_step", -1, "checkpoint field opt_step = -1 is not an AdamW step count"},
        {"compress_ranks", -1, "compress_ranks = -1 are not a PowerSGD state"},
        {"compress_err_floats", 5, "compress_err_floats = 5, compress_ranks = 0 are not a PowerSGD state"},
        {"compress_q_floats", 10, "truncated or oversized checkpoint"},
        /* version 5's: each worker's dropout step */
        {"dropout_step[1]", 1, "dropout_step[1] = 1 past nworkers (1), want 0"},
        {"dropout_step[0]", (int64_t)1 << 50, "dropout_step[0] = 1125899906842624 is outside [0, "},
        /* version 4's fields: the global batch in force, the goodput planner's pass, the
         * noise scale's averages */
        {"global_batch", 65, "global_batch = 65 is outside [16, 16]"},
        {"global_batch", -1, "invalid counters"},
        {"pass", 1, "pass = 1 without algorithm.goodput, want 0"},
        {"pass", -1, "invalid counters"},
        {"gns_weight", (int64_t)0x4000000000000000LL, "gns_* are not a noise-scale estimate"},
        {"gns_samples", -1, "gns_* are not a noise-scale estimate"},
        {"gns_g2", (int64_t)0x7ff8000000000000LL, "gns_* are not a noise-scale estimate"},
        {"model", 0x01706c6d, "checkpoint is for model mlp? with"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        forge(good, bad, CASES[i].field, CASES[i].value);
        expect_refused(&w, bad, CASES[i].want);
    }
    /* negative and NaN loss sums: the first is impossible, the second a diverged run */
    size_t len, off, size;
    unsigned char *buf = read_all(good, &len);
    assert_int_equal(checkpoint_field_at("epoch_loss_sum", &off, &size), 0);
    double v = -1.0;
    memcpy(buf + off, &v, 8);
    checkpoint_fix_crc(buf, len);
    write_bytes(bad, buf, len);
    expect_refused(&w, bad, "epoch_loss_sum = -1 is negative");
    v = NAN;
    memcpy(buf + off, &v, 8);
    checkpoint_fix_crc(buf, len);
    write_bytes(bad, buf, len);
    assert_int_equal(worker_resume(&w, bad, err, sizeof err), 0);
    free(buf);

    /* the file as written resumes */
    if (worker_resume(&w, good, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(w.global_step, 4);
    assert_int_equal(w.cursor, 64);
    worker_teardown(&w);
}

/* text with every DATA replaced by the fixture's data directory and every DIR by its
 * temporary directory. */
static void subst(char *out, size_t len, const char *text, const fixture_t *fx)
{
    size_t o = 0;
    while (*text && o + 1 < len) {
        const char *rep = !strncmp(text, "DATA", 4) ? fx->data : !strncmp(text, "DIR", 3) ? fx->dir : NULL;
        if (rep) {
            o += (size_t)snprintf(out + o, len - o, "%s", rep);
            text += rep == fx->data ? 4 : 3;
        } else {
            out[o++] = *text++;
        }
    }
    out[o < len ? o : len - 1] = 0;
}

/* The spec hash: any field that shapes the run refuses the checkpoint; the ones a
 * resumed run may change (name, paths, device, threads, log_every, checkpoint.*) do not. */
static void test_checkpoint_spec_hash(void **state)
{
    fixture_t *fx = *state;
    char good[512];
    make_checkpoint(fx, good, sizeof good);
#define BASE "\"model\": \"lenet5\", \"batch_size\": 16, \"dataset\": {\"name\": \"mnist\", \"path\": \"DATA\"}"
    static const struct {
        const char *json;
        int ok;
    } CASES[] = {
        {"{" BASE ", \"name\": \"h\", \"epochs\": 2, \"log_every\": 0, \"device\": \"cpu\","
         " \"checkpoint\": {\"every_steps\": 4, \"dir\": \"DIR/ck\"}}",
         1},
        /* the fields a resumed run may change, all changed at once */
        {"{" BASE ", \"name\": \"other\", \"epochs\": 2, \"log_every\": 7, \"device\": \"auto\", \"threads\": 2,"
         " \"checkpoint\": {\"every_steps\": 9, \"dir\": \"DIR/elsewhere\"}}",
         1},
        /* and fields that shape the run, one at a time */
        {"{" BASE ", \"name\": \"h\", \"epochs\": 3}", 0},
        {"{" BASE ", \"name\": \"h\", \"epochs\": 2, \"optimizer\": {\"lr\": 0.02}}", 0},
        {"{" BASE ", \"name\": \"h\", \"epochs\": 2, \"emulate\": {\"slowdown\": [2]}}", 0},
        {"{" BASE ", \"name\": \"h\", \"epochs\": 2, \"target_accuracy\": 0.5}", 0},
        {"{" BASE ", \"name\": \"h\", \"epochs\": 2, \"optimizer\": {\"lr_schedule\": {\"kind\": \"cosine\"}}}", 0},
    };
#undef BASE
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        static job_spec_t spec;
        static worker_t w;
        char json[2048], err[1024] = "";
        subst(json, sizeof json, CASES[i].json, fx);
        parse_spec(json, &spec);
        if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) fail_msg("case %zu: %s", i, err);
        int rc = worker_resume(&w, good, err, sizeof err);
        if (CASES[i].ok && rc != 0) fail_msg("case %zu refused: %s", i, err);
        if (!CASES[i].ok && (rc == 0 || !strstr(err, "another job spec")))
            fail_msg("case %zu: rc %d, \"%s\"", i, rc, err);
        worker_teardown(&w);
    }
}

/* A parameter server's checkpoint of a 2-worker job (spec fingerprint spec_hash) and what
 * a resume of spec 7 expects of it. */
static void async_checkpoint(ckpt_state_t *st, ckpt_expect_t *want, uint64_t spec_hash)
{
    memset(st, 0, sizeof *st);
    st->spec_hash = spec_hash, st->seed = 1, st->nworkers = 2, st->epoch = 1, st->cursor = 100, st->global_step = 150;
    st->aug_rng.s[0] = 1, st->batch_of[0] = 32, st->batch_of[1] = 32, st->epoch_loss_samples = 100;
    st->global_batch = 64;
    *want = (ckpt_expect_t){.spec_hash = 7,
                            .seed = 1,
                            .nworkers = 2,
                            .epochs = 3,
                            .train_n = 1000,
                            .global_batch = 64,
                            .max_batch = 64,
                            .async = 1};
}

/* The parameter server's positions: checked against the training set, not steps. */
static void test_checkpoint_validate_async(void **state)
{
    (void)state;
    ckpt_state_t st;
    ckpt_expect_t want;
    async_checkpoint(&st, &want, 7);
    char err[512];
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), 0);
    st.cursor = 1001;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "cursor = 1001 is outside [0, 1000]"));
    /* the PS counts the updates of the epoch: at most one per pushed sample */
    st.cursor = 100, st.step_in_epoch = 100;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), 0);
    st.step_in_epoch = 101;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "step_in_epoch = 101 is outside [0, 100]"));
    st.step_in_epoch = 0, st.global_step = 2001;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "global_step = 2001 is outside [0, 2000]"));
    st.global_step = 150, st.batch_of[1] = 31;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "batch_of sums to 63, want 64"));
    /* The spec's min_batch holds a checkpoint's plan as it holds every other plan
     * (common/planner.h): checkpoint_validate is its one check on resume. */
    st.batch_of[0] = 4, st.batch_of[1] = 60, want.min_batch = 8;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "batch_of[0] = 4 is outside [8, 64]"));
    want.min_batch = 4;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), 0);
}

/* pacer-worker --adopt-checkpoint (a PBT trial continuing from a better trial's weights
 * under its own optimizer values): another spec's fingerprint is taken, nothing else is
 * waived. */
static void test_checkpoint_validate_adopt(void **state)
{
    (void)state;
    ckpt_state_t st;
    ckpt_expect_t want;
    async_checkpoint(&st, &want, 8);
    char err[512];
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "another job spec"));
    want.any_spec = 1;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), 0);
    st.seed = 2; /* the data order and the augmentation are the seed's: still compared */
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "seed 2"));
    st.seed = 1, st.epoch = 4;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
}

/* A goodput run's checkpoint (algorithm.goodput): the global batch within [B0,
 * max_global], a plan that may leave workers out (never worker 0) and sums to it, the
 * position counted in samples, progress consistent with the epoch and the steps (each
 * step worth 1 to max_global / B0 steps at B0), gain and efficiency in range. */
static void test_checkpoint_validate_goodput(void **state)
{
    (void)state;
    ckpt_state_t st;
    memset(&st, 0, sizeof st);
    st.spec_hash = 7, st.seed = 1, st.nworkers = 2, st.epoch = 1, st.step_in_epoch = 3, st.global_step = 12;
    st.cursor = 300, st.global_batch = 128, st.batch_of[0] = 100, st.batch_of[1] = 28, st.aug_rng.s[0] = 1;
    st.progress = 14.5, st.gain = 1.5, st.efficiency = 0.75, st.pass = 1, st.epoch_loss_samples = 384;
    ckpt_expect_t want = {.spec_hash = 7,
                          .seed = 1,
                          .nworkers = 2,
                          .spec_workers = 2,
                          .epochs = 3,
                          .steps_per_epoch = 10,
                          .train_n = 640,
                          .global_batch = 64,
                          .max_batch = 256,
                          .goodput = 1,
                          .max_global = 256};
    char err[512];
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), 0);
    st.batch_of[1] = 0, st.batch_of[0] = 128; /* worker 1 left out */
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), 0);
    st.batch_of[0] = 0, st.batch_of[1] = 128; /* worker 0 always takes part */
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "batch_of[0] = 0 is outside"));
    st.batch_of[0] = 100, st.batch_of[1] = 28;
    /* one field wrong in each case (set in the loop) */
    static const struct {
        const char *what, *want;
    } CASES[] = {
        {"global batch", "global_batch = 512 is outside [64, 256]"},
        {"progress", "progress = 9 does not fit epoch 1"},
        {"gain", "gain = 5 is outside [1, 4]"},
        {"efficiency", "efficiency = 0 is outside (0, 1]"},
        {"pass", "pass = 4 is outside [0, 3]"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        ckpt_state_t b = st;
        if (i == 0) b.global_batch = 512;
        if (i == 1) b.progress = 9;
        if (i == 2) b.gain = 5;
        if (i == 3) b.efficiency = 0;
        if (i == 4) b.pass = 4;
        assert_int_equal(checkpoint_validate(&b, &want, "p", err, sizeof err), -1);
        if (!strstr(err, CASES[i].want)) fail_msg("%s: \"%s\" does not say \"%s\"", CASES[i].what, err, CASES[i].want);
    }
}

/* Checkpoints do not depend on the world size (issue 14): one of 3 workers is valid for
 * a run of 2 of the spec's 3 (its batches may exceed this run's buffers: re-planned),
 * one of more workers than the spec's is not, and its batches still sum to the global
 * batch and stay within it. */
static void test_checkpoint_validate_other_world(void **state)
{
    (void)state;
    ckpt_state_t st;
    memset(&st, 0, sizeof st);
    st.spec_hash = 7, st.seed = 1, st.nworkers = 3, st.epoch = 1, st.step_in_epoch = 2, st.cursor = 192;
    st.global_step = 12, st.aug_rng.s[0] = 1, st.epoch_loss_samples = 192;
    st.batch_of[0] = 64, st.batch_of[1] = 16, st.batch_of[2] = 16, st.global_batch = 96;
    ckpt_expect_t want = {.spec_hash = 7,
                          .seed = 1,
                          .nworkers = 2,
                          .spec_workers = 3,
                          .epochs = 3,
                          .steps_per_epoch = 10,
                          .train_n = 1000,
                          .global_batch = 96,
                          .max_batch = 48};
    char err[512];
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), 0);
    want.nworkers = 3; /* the same world: the buffers' capacity holds again */
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(
        strstr(err, "batch_of[0] = 64 is outside [1, 48] (algorithm.min_batch and the batch buffers' capacity)"));
    want.nworkers = 2, st.batch_of[0] = 97, st.batch_of[1] = 0, st.batch_of[2] = 0, st.nworkers = 1;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "batch_of[0] = 97 is outside [1, 96] (algorithm.min_batch and the global batch)"));
    /* The spec's min_batch holds for a plan of any world. */
    want.min_batch = 8, st.nworkers = 3, st.batch_of[0] = 4, st.batch_of[1] = 46, st.batch_of[2] = 46;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "batch_of[0] = 4 is outside [8, 96] (algorithm.min_batch and the global batch)"));
    want.min_batch = 0;
    st.nworkers = 4, st.batch_of[0] = 24, st.batch_of[1] = 24, st.batch_of[2] = 24, st.batch_of[3] = 24;
    assert_int_equal(checkpoint_validate(&st, &want, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "nworkers = 4 is outside [1, 3]"));
}

/* buf (len bytes, a checkpoint of this build without compression state or a second
 * moment: an SGD run's) as version v (3 to 6) wrote it: the header without the fields
 * later versions append (version 7's optimizer step and second-moment count; for 5 also
 * version 6's compression counts; for 4 also version 5's dropout steps; for 3 also
 * version 4's global batch, goodput and noise-scale fields), header_bytes and version to
 * match; the CRC is left to the caller. */
static void to_version(unsigned char *buf, size_t *len, uint32_t v)
{
    size_t off, size, hoff, hsize;
    assert_int_equal(checkpoint_field_at(v == 3   ? "global_batch"
                                         : v == 4 ? "dropout_step"
                                         : v == 5 ? "compress_q_floats"
                                         : v == 6 ? "opt_step"
                                                  : "compress_verdict",
                                         &off, &size),
                     0);
    /* that field .. the header's end (every later version appends to the header; an
     * SGD file without compression state has nothing after the buffers) */
    uint32_t hdr;
    assert_int_equal(checkpoint_field_at("header_bytes", &hoff, &hsize), 0);
    memcpy(&hdr, buf + hoff, 4);
    const size_t extra = hoff + 4 + hdr - off;
    memmove(buf + off, buf + off + extra, *len - off - extra);
    *len -= extra;
    hdr -= (uint32_t)extra;
    memcpy(buf + 8, &v, 4);
    memcpy(buf + hoff, &hdr, 4);
}
static void to_version3(unsigned char *buf, size_t *len) { to_version(buf, len, 3); }

/* This build's checkpoint rewritten as version v wrote it resumes (at step 4, at the
 * spec's global batch); returns the bytes the rewrite dropped. */
static size_t resumes_as_version(fixture_t *fx, uint32_t v)
{
    char good[512], old[600];
    make_checkpoint(fx, good, sizeof good);
    snprintf(old, sizeof old, "%s/v%u.ckpt", fx->dir, v);
    size_t len, whole;
    unsigned char *buf = read_all(good, &len);
    whole = len;
    to_version(buf, &len, v);
    checkpoint_fix_crc(buf, len);
    write_bytes(old, buf, len);
    free(buf);
    static job_spec_t spec;
    static worker_t w;
    lenet_spec(fx, &spec, NULL);
    char err[1024] = "";
    if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) fail_msg("%s", err);
    if (worker_resume(&w, old, err, sizeof err) != 0) fail_msg("version %u refused: %s", v, err);
    assert_int_equal(w.global_step, 4);
    assert_int_equal(w.global_batch, 16);
    worker_teardown(&w);
    return whole - len;
}

/* A version 7 checkpoint (before the measured compression choice) still resumes, as a
 * run without one. */
static void test_checkpoint_reads_version7(void **state)
{
    assert_int_equal(resumes_as_version(*state, 7), 4 + 8 * CKPT_PROBE_N);
}

/* A version 3 checkpoint (main's format before the goodput planner: the header without
 * version 4's global batch, goodput and noise-scale fields) still resumes: written
 * before this build, it resumes as a run at the spec's global batch with no noise-scale
 * estimate yet. */
static void test_checkpoint_reads_version3(void **state) { resumes_as_version(*state, 3); }

/* A version 4 checkpoint (before the dropout steps were kept) still resumes, with the
 * dropout step at the global step as that version's runs took it; a version 5 one gives
 * the rank its own recorded step (here one that is not the global step, as an
 * asynchronous worker's is not), and a checkpoint records the rank's. */
static void test_checkpoint_dropout_step(void **state)
{
    fixture_t *fx = *state;
    char good[512], old[600], own[600];
    make_checkpoint(fx, good, sizeof good);
    size_t len, off, size;
    unsigned char *buf = read_all(good, &len);
    uint64_t d;
    assert_int_equal(checkpoint_field_at("dropout_step[0]", &off, &size), 0);
    assert_int_equal(size, 8);
    memcpy(&d, buf + off, 8);
    assert_int_equal(d, 4); /* 4 training forwards (the calibration's do not count) */
    snprintf(old, sizeof old, "%s/v4.ckpt", fx->dir);
    to_version(buf, &len, 4);
    checkpoint_fix_crc(buf, len);
    write_bytes(old, buf, len);
    free(buf);
    snprintf(own, sizeof own, "%s/own.ckpt", fx->dir);
    forge(good, own, "dropout_step[0]", 3);
    static job_spec_t spec;
    static worker_t w;
    lenet_spec(fx, &spec, NULL);
    char err[1024] = "";
    if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) fail_msg("%s", err);
    w.model->dropout_step = 99;
    if (worker_resume(&w, old, err, sizeof err) != 0) fail_msg("version 4 refused: %s", err);
    assert_int_equal(w.global_step, 4);
    assert_int_equal(w.model->dropout_step, 4);
    if (worker_resume(&w, own, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(w.global_step, 4);
    assert_int_equal(w.model->dropout_step, 3);
    /* version 5 (before the compression state) reads with its own dropout steps */
    char v5[600];
    snprintf(v5, sizeof v5, "%s/v5.ckpt", fx->dir);
    buf = read_all(own, &len);
    to_version(buf, &len, 5);
    checkpoint_fix_crc(buf, len);
    write_bytes(v5, buf, len);
    free(buf);
    if (worker_resume(&w, v5, err, sizeof err) != 0) fail_msg("version 5 refused: %s", err);
    assert_int_equal(w.model->dropout_step, 3);
    worker_teardown(&w);
}

/* The field table of checkpoint_field_at is the order checkpoint_save writes. */
static void test_checkpoint_field_table(void **state)
{
    fixture_t *fx = *state;
    char good[512];
    make_checkpoint(fx, good, sizeof good);
    size_t len, off, size;
    unsigned char *buf = read_all(good, &len);
    int64_t v;
    int32_t i32;
    assert_int_equal(checkpoint_field_at("global_step", &off, &size), 0);
    memcpy(&v, buf + off, 8);
    assert_int_equal(v, 4);
    assert_int_equal(checkpoint_field_at("cursor", &off, &size), 0);
    memcpy(&v, buf + off, 8);
    assert_int_equal(v, 64);
    assert_int_equal(checkpoint_field_at("seed", &off, &size), 0);
    memcpy(&v, buf + off, 8);
    assert_int_equal(v, 42);
    assert_int_equal(checkpoint_field_at("nworkers", &off, &size), 0);
    memcpy(&i32, buf + off, 4);
    assert_int_equal(i32, 1);
    assert_int_equal(checkpoint_field_at("batch_of[0]", &off, &size), 0);
    memcpy(&i32, buf + off, 4);
    assert_int_equal(i32, 16);
    assert_int_equal(checkpoint_field_at("model", &off, &size), 0);
    assert_string_equal((char *)buf + off, "lenet5");
    assert_int_equal(checkpoint_field_at("batch_of[256]", &off, &size), -1);
    assert_int_equal(checkpoint_field_at("nope", &off, &size), -1);
    free(buf);
}

/* A checkpoint of format version 2 (the model name in 32 bytes, the header 32 bytes
 * shorter than version 3's), laid out byte for byte as that pacer-worker wrote it, is
 * refused for its version, with a message that says what to do: not for its size or its
 * CRC. */
static void test_checkpoint_old_format(void **state)
{
    fixture_t *fx = *state;
    char good[512], old[600];
    make_checkpoint(fx, good, sizeof good);
    snprintf(old, sizeof old, "%s/v2.ckpt", fx->dir);
    size_t len, off, size;
    unsigned char *buf = read_all(good, &len);
    to_version3(buf, &len);
    assert_int_equal(checkpoint_field_at("model", &off, &size), 0);
    assert_int_equal(size, 64);
    /* version 2: u32 2, u32 header_bytes 32 less, a 32-byte name, the rest as it is */
    unsigned char *v2 = malloc(len);
    assert_non_null(v2);
    uint32_t version = 2, hdr;
    memcpy(&hdr, buf + 12, 4);
    hdr -= 32;
    memcpy(v2, buf, 8);
    memcpy(v2 + 8, &version, 4);
    memcpy(v2 + 12, &hdr, 4);
    memcpy(v2 + off, buf + off, 32);
    memcpy(v2 + off + 32, buf + off + 64, len - off - 64);
    checkpoint_fix_crc(v2, len - 32);
    write_bytes(old, v2, len - 32);

    static job_spec_t spec;
    static worker_t w;
    lenet_spec(fx, &spec, NULL);
    char err[512] = "";
    if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) fail_msg("%s", err);
    expect_refused(&w, old,
                   "checkpoint format version 2 is from an older pacer-worker, which kept model names in 32 "
                   "bytes (now 64, and tensor names 128); this one reads versions 3 to 8 only: start the job "
                   "afresh");
    worker_teardown(&w);
    free(v2);
    free(buf);
}

/* AdamW's state (issue 44): an adamw run refuses an SGD run's checkpoint, of this format
 * or of version 6 (before the optimizer's fields), naming the file and what is missing;
 * its own checkpoint carries the step count and the second moment, and a resume takes
 * both back. */
static void test_checkpoint_adamw(void **state)
{
    fixture_t *fx = *state;
    char good[512], v6[600], err[1024] = "";
    make_checkpoint(fx, good, sizeof good);
    snprintf(v6, sizeof v6, "%s/v6.ckpt", fx->dir);
    size_t len;
    unsigned char *buf = read_all(good, &len);
    to_version(buf, &len, 6);
    checkpoint_fix_crc(buf, len);
    write_bytes(v6, buf, len);
    free(buf);
    static job_spec_t spec;
    static worker_t w;
    lenet_spec(fx, &spec, ", \"optimizer\": {\"kind\": \"adamw\", \"lr\": 0.001, \"weight_decay\": 0.05}");
    if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) fail_msg("%s", err);
    assert_non_null(w.model->moment2);
    expect_refused(&w, good,
                   "checkpoint has no AdamW second moment (format version 8, written by an optimizer.kind sgd run): "
                   "an adamw job cannot resume from it; start afresh or resume with optimizer.kind sgd");
    expect_refused(&w, v6,
                   "checkpoint has no AdamW second moment (format version 6, written by an optimizer.kind sgd run or "
                   "an older pacer-worker)");
    train_opts_t o = {.stop_after_steps = 4};
    if (worker_train(&w, &o, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(w.opt_step, 4);
    const size_t np = w.model->nparams;
    float *m2 = malloc(np * sizeof *m2);
    assert_non_null(m2);
    memcpy(m2, w.model->moment2, np * sizeof *m2);
    char path[512];
    worker_checkpoint_path(&w, path, sizeof path);
    worker_teardown(&w);
    size_t off, size;
    buf = read_all(path, &len);
    int64_t t;
    assert_int_equal(checkpoint_field_at("opt_step", &off, &size), 0);
    memcpy(&t, buf + off, 8);
    assert_int_equal(t, 4);
    free(buf);
    if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) fail_msg("%s", err);
    if (worker_resume(&w, path, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(w.opt_step, 4);
    assert_memory_equal(m2, w.model->moment2, np * sizeof *m2);
    double sum = 0;
    for (size_t i = 0; i < np; i++) sum += m2[i];
    assert_true(sum > 0); /* a second moment, not zeros */
    worker_teardown(&w);
    free(m2);
}

/* A model without optimizer state (model_drop_optimizer_state: pacer-generate's) takes a
 * checkpoint's weights and buffers alone (a ResNet-20's batch-norm statistics, stored after
 * the state), the same as a model with it takes them. */
static void test_checkpoint_weights_only(void **state)
{
    fixture_t *fx = *state;
    model_t *a = NULL, *b = NULL, *c = NULL;
    char err[512], path[600];
    assert_int_equal(model_create("resnet20", 2, &a, err, sizeof err), 0);
    assert_int_equal(model_create("resnet20", 2, &b, err, sizeof err), 0);
    assert_int_equal(model_create("resnet20", 2, &c, err, sizeof err), 0);
    model_init_params(a, 7);
    for (size_t i = 0; i < a->nparams; i++) a->momentum[i] = 0.5f;
    for (size_t i = 0; i < a->nbuffers; i++) a->buffers[i] = 0.25f + (float)(i % 7); /* after the state in the file */
    assert_true(a->nbuffers > 0);
    snprintf(path, sizeof path, "%s/weights.ckpt", fx->dir);
    ckpt_state_t st = {.seed = 7, .nworkers = 1, .aug_rng = {{1, 2}}};
    assert_int_equal(checkpoint_save(path, a, &st, err, sizeof err), 0);
    model_drop_optimizer_state(b);
    assert_null(b->momentum);
    assert_null(b->moment2);
    ckpt_state_t got;
    if (checkpoint_load(path, b, NULL, &got, err, sizeof err) != 0) fail_msg("%s", err);
    if (checkpoint_load(path, c, NULL, &got, err, sizeof err) != 0) fail_msg("%s", err);
    assert_memory_equal(a->params, b->params, a->nparams * sizeof(float));
    assert_memory_equal(a->buffers, b->buffers, a->nbuffers * sizeof(float));
    assert_memory_equal(c->buffers, b->buffers, a->nbuffers * sizeof(float));
    assert_true(c->momentum[0] == 0.5f); /* the state is in the file, and read where wanted */
    model_free(a);
    model_free(b);
    model_free(c);
}

/* Tensor names longer than the old 32 bytes (PyTorch's state_dict keys) are kept whole:
 * a checkpoint round-trips with them, and two names that differ only past byte 32 are
 * two layouts, not one. */
static void test_checkpoint_long_tensor_names(void **state)
{
    fixture_t *fx = *state;
    static const char *const LONG1 = "features.denseblock4.denselayer16.conv2.weight";
    static const char *const LONG2 = "features.denseblock4.denselayer17.conv2.weight";
    model_t *a = NULL, *b = NULL;
    char err[512], path[600];
    assert_int_equal(model_create("lenet5", 2, &a, err, sizeof err), 0);
    assert_int_equal(model_create("lenet5", 2, &b, err, sizeof err), 0);
    model_init_params(a, 7);
    assert_true(strlen(LONG1) > 32 && strlen(LONG1) < MODEL_TENSOR_NAME_MAX);
    snprintf(a->tensors[0].name, sizeof a->tensors[0].name, "%s", LONG1);
    snprintf(b->tensors[0].name, sizeof b->tensors[0].name, "%s", LONG1);
    assert_string_equal(a->tensors[0].name, LONG1);
    snprintf(path, sizeof path, "%s/long.ckpt", fx->dir);
    ckpt_state_t st = {.seed = 7, .nworkers = 1, .aug_rng = {{1, 2}}};
    assert_int_equal(checkpoint_save(path, a, &st, err, sizeof err), 0);
    ckpt_state_t got;
    if (checkpoint_load(path, b, NULL, &got, err, sizeof err) != 0) fail_msg("%s", err);
    assert_memory_equal(a->params, b->params, a->nparams * sizeof(float));
    snprintf(b->tensors[0].name, sizeof b->tensors[0].name, "%s", LONG2);
    assert_int_equal(checkpoint_load(path, b, NULL, &got, err, sizeof err), -1);
    assert_non_null(strstr(err, "parameter layout"));
    model_free(a);
    model_free(b);
}

/* A network of one gathered parameter (Swin's relative position bias): x (1, 5, 4) plus
 * table[map], the table (7, 2), then the head. */
static int build_gathered(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    (void)ctx, (void)err, (void)errlen;
    const model_shape_t s = {.rank = 2, .dims = {5, 4}}, t = {.rank = 2, .dims = {7, 2}};
    int x = model_build_relu(b, -1); /* -1: the network's input */
    x = model_build_binary(b, LAYER_BADD, x, model_build_gather_param(b, &s, &t, "bias.table", "bias.map"));
    return model_build_fc(b, x, 3, "head.weight", "head.bias") < 0 ? -1 : 0;
}

/* A checkpoint whose gathered parameter's index map is damaged (with a right CRC: written
 * by checkpoint_save) is refused by name, not trained on with the kernels' bounded reads
 * quietly giving 0s. */
static void test_checkpoint_gather_map_checked(void **state)
{
    fixture_t *fx = *state;
    model_t *a = NULL, *b = NULL;
    char err[512], path[600];
    for (int k = 0; k < 2; k++) {
        model_t **m = k ? &b : &a;
        if (model_create_custom("gathered", 1, 5, 4, 3, 2, build_gathered, NULL, m, err, sizeof err) != 0)
            fail_msg("%s", err);
    }
    model_init_params(a, 7);
    int gl = -1;
    for (int i = 0; i < a->nlayers; i++)
        if (a->layers[i].kind == LAYER_GATHER_PARAM) gl = i;
    assert_true(gl >= 0);
    float *map = a->buffers + a->layers[gl].rm_off;
    for (int j = 0; j < 20; j++) map[j] = (float)((3 * j + 1) % 14);
    snprintf(path, sizeof path, "%s/gathered.ckpt", fx->dir);
    ckpt_state_t st = {.seed = 7, .nworkers = 1, .aug_rng = {{1, 2}}}, got;
    assert_int_equal(checkpoint_save(path, a, &st, err, sizeof err), 0);
    if (checkpoint_load(path, b, NULL, &got, err, sizeof err) != 0) fail_msg("%s", err);
    assert_memory_equal(a->buffers, b->buffers, a->nbuffers * sizeof(float));
    const float bad[] = {14.0f, -1.0f, 2.5f, NAN};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        map[3] = bad[k];
        assert_int_equal(checkpoint_save(path, a, &st, err, sizeof err), 0);
        assert_int_equal(checkpoint_load(path, b, NULL, &got, err, sizeof err), -1);
        assert_non_null(strstr(err, "element 3 of its index map"));
        assert_non_null(strstr(err, "table of 14 values"));
    }
    model_free(a);
    model_free(b);
}

/* ---- the float arrays a resume restores ------------------------------------------------- */

/* A copy of from with the float element name (checkpoint_data_at's "params[123]", ...) set
 * to v, the CRC fixed: a valid file whose contents are what a diverged or damaged run (or
 * a forger) wrote. */
static void forge_float(const char *from, const char *to, const char *name, float v)
{
    size_t len, off;
    unsigned char *buf = read_all(from, &len);
    if (checkpoint_data_at(buf, len, name, &off) != 0) fail_msg("no element %s in %s", name, from);
    memcpy(buf + off, &v, sizeof v);
    checkpoint_fix_crc(buf, len);
    write_bytes(to, buf, len);
    free(buf);
}

/* Resuming from a copy of good with what[i] (its array in the file) set to v is refused,
 * naming the array (as the message calls it: label), the element, its tensor and value. */
static void refused_float(worker_t *w, const char *good, const char *bad, const char *what, size_t i, float v,
                          const char *label, const char *rule)
{
    char name[64], want[512];
    snprintf(name, sizeof name, "%s[%zu]", what, i);
    forge_float(good, bad, name, v);
    const tensor_info_t *t = model_tensor_at(w->model, i, 0);
    assert_non_null(t);
    snprintf(want, sizeof want, "checkpoint's %s: element %zu (%s[%zu]) is %g, want %s", label, i, t->name,
             i - t->offset, (double)v, rule);
    expect_refused(w, bad, want);
}

/* Parameters and momentum of a checkpoint with a valid CRC must be finite, and momentum
 * bounded: before, a NaN weight resumed (and trained on, every loss NaN, the worker exiting
 * 0). */
static void test_checkpoint_params_momentum_checked(void **state)
{
    fixture_t *fx = *state;
    char good[512], bad[600], err[1024] = "";
    make_checkpoint(fx, good, sizeof good);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", fx->dir);
    static job_spec_t spec;
    static worker_t w;
    lenet_spec(fx, &spec, NULL);
    if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) fail_msg("%s", err);
    refused_float(&w, good, bad, "params", 123, NAN, "parameters", "finite");
    refused_float(&w, good, bad, "params", 0, -INFINITY, "parameters", "finite");
    refused_float(&w, good, bad, "params", w.model->nparams - 1, INFINITY, "parameters", "finite");
    refused_float(&w, good, bad, "momentum", 7, INFINITY, "momentum", "finite");
    refused_float(&w, good, bad, "momentum", 61000, NAN, "momentum", "finite");
    /* a momentum of 1e30 resumed and trained on, silently (health "ok"): it is a running
     * sum of gradients, bounded as the error feedback is */
    const char *mom = "finite, of magnitude at most 1e+06 (a running sum of gradients)";
    refused_float(&w, good, bad, "momentum", 7, 1e30f, "momentum", mom);
    refused_float(&w, good, bad, "momentum", 8, -2e6f, "momentum", mom);
    forge_float(good, bad, "momentum[7]", 1e5f);
    if (worker_resume(&w, bad, err, sizeof err) != 0) fail_msg("%s", err);
    assert_true(w.model->momentum[7] == 1e5f);
    /* large but finite is a weight, not damage */
    forge_float(good, bad, "params[5]", 1e30f);
    if (worker_resume(&w, bad, err, sizeof err) != 0) fail_msg("%s", err);
    assert_true(w.model->params[5] == 1e30f);
    if (worker_resume(&w, good, err, sizeof err) != 0) fail_msg("%s", err);
    worker_teardown(&w);
}

/* AdamW's moments: the first finite and bounded, the second finite, >= 0 (a mean of
 * squared gradients; sqrt of a negative one is NaN in every later update) and bounded.
 * Both were resumed whatever they held. */
static void test_checkpoint_adamw_moments_checked(void **state)
{
    fixture_t *fx = *state;
    char bad[600], path[512], err[1024] = "";
    make_data(fx, 28);
    static job_spec_t spec;
    static worker_t w;
    lenet_spec(fx, &spec, ", \"optimizer\": {\"kind\": \"adamw\", \"lr\": 0.001, \"weight_decay\": 0.05}");
    if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) fail_msg("%s", err);
    train_opts_t o = {.stop_after_steps = 4};
    if (worker_train(&w, &o, err, sizeof err) != 0) fail_msg("%s", err);
    worker_checkpoint_path(&w, path, sizeof path);
    worker_teardown(&w);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", fx->dir);
    if (worker_setup(&w, &spec, 0, 1, err, sizeof err) != 0) fail_msg("%s", err);
    const char *sq = "finite, >= 0 and at most 1e+12 (a mean of squared gradients)";
    refused_float(&w, path, bad, "moment2", 5, -1.0f, "AdamW second moment", sq);
    refused_float(&w, path, bad, "moment2", 5, NAN, "AdamW second moment", sq);
    refused_float(&w, path, bad, "moment2", 60000, INFINITY, "AdamW second moment", sq);
    refused_float(&w, path, bad, "moment2", 6, 1e30f, "AdamW second moment", sq);
    refused_float(&w, path, bad, "momentum", 3, NAN, "AdamW first moment", "finite");
    /* the first moment all 1e30 trained on to 0.117 test accuracy (0.719 without) */
    refused_float(&w, path, bad, "momentum", 3, 1e30f, "AdamW first moment",
                  "finite, of magnitude at most 1e+06 (a running sum of gradients)");
    /* a second moment of 0 is a parameter whose gradient was 0 so far */
    forge_float(path, bad, "moment2[5]", 0.0f);
    if (worker_resume(&w, bad, err, sizeof err) != 0) fail_msg("%s", err);
    assert_true(w.model->moment2[5] == 0.0f);
    worker_teardown(&w);
}

/* PowerSGD's state in a checkpoint (lenet5 with a made-up plan of Q 6 floats and errors of
 * 10 per rank, 2 ranks): Q and every rank's error finite and bounded (checkpoint.h,
 * CKPT_STATE_BOUND, CKPT_Q_BOUND). An error of 1e30 used to resume: the next step sent it
 * and the run went on at 0.13 accuracy (0.47 without), its health "ok". A refusal
 * restores nothing: the weights and the plan's buffers keep what they held. */
static void test_checkpoint_powersgd_state_checked(void **state)
{
    fixture_t *fx = *state;
    enum { NQ = 6, NE = 10, NR = 2 };
    model_t *a = NULL, *b = NULL;
    char err[1024], path[600], bad[600];
    assert_int_equal(model_create("lenet5", 48, &a, err, sizeof err), 0);
    assert_int_equal(model_create("lenet5", 48, &b, err, sizeof err), 0);
    model_init_params(a, 3);
    float q[NQ], e[NR * NE], q2[NQ], e2[NE];
    for (int i = 0; i < NQ; i++) q[i] = 0.5f * (float)(i + 1);
    for (int i = 0; i < NR * NE; i++) e[i] = 0.01f * (float)(i - 7);
    ckpt_state_t st;
    memset(&st, 0, sizeof st);
    st.spec_hash = 1, st.seed = 42, st.epoch = 1, st.step_in_epoch = 4, st.cursor = 256, st.global_step = 14;
    st.aug_rng.s[0] = 7, st.aug_rng.s[1] = 9, st.epoch_loss_samples = 256, st.nworkers = NR;
    st.batch_of[0] = 40, st.batch_of[1] = 24, st.global_batch = 64, st.gain = st.efficiency = 1;
    st.compress_q = q, st.compress_err = e, st.compress_q_floats = NQ, st.compress_err_floats = NE;
    st.compress_ranks = NR;
    snprintf(path, sizeof path, "%s/psgd.ckpt", fx->dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", fx->dir);
    assert_int_equal(checkpoint_save(path, a, &st, err, sizeof err), 0);
    ckpt_expect_t want = {.spec_hash = 1,
                          .seed = 42,
                          .nworkers = NR,
                          .spec_workers = NR,
                          .epochs = 3,
                          .steps_per_epoch = 10,
                          .train_n = 640,
                          .global_batch = 64,
                          .min_batch = 8,
                          .max_batch = 48,
                          .compress_q_floats = NQ,
                          .compress_err_floats = NE,
                          .compress_q = q2,
                          .compress_err = e2,
                          .compress_index = 1};
    ckpt_state_t got;
    if (checkpoint_load(path, b, &want, &got, err, sizeof err) != 0) fail_msg("%s", err);
    assert_memory_equal(q2, q, sizeof q);
    assert_memory_equal(e2, e + NE, sizeof e2);
    static const struct {
        const char *name;
        float v;
        const char *want;
    } CASES[] = {
        {"compress_err[14]", 1e30f,
         "checkpoint's PowerSGD error feedback of rank 1: element 4 is 1e+30, want finite, of magnitude at most 1e+06"},
        {"compress_err[0]", -2e6f, "checkpoint's PowerSGD error feedback of rank 0: element 0 is -2e+06"},
        {"compress_err[9]", NAN, "checkpoint's PowerSGD error feedback of rank 0: element 9 is nan"},
        {"compress_q[2]", INFINITY, "checkpoint's PowerSGD Q: element 2 is inf, want finite, of magnitude at most"},
        {"compress_q[5]", 1e30f, "checkpoint's PowerSGD Q: element 5 is 1e+30"},
    };
    memset(b->params, 0, b->nparams * sizeof(float));
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        forge_float(path, bad, CASES[k].name, CASES[k].v);
        memset(q2, 0, sizeof q2);
        memset(e2, 0, sizeof e2);
        assert_int_equal(checkpoint_load(bad, b, &want, &got, err, sizeof err), -1);
        if (!strstr(err, CASES[k].want) || !strstr(err, bad))
            fail_msg("%s: refusal '%s' does not say '%s'", CASES[k].name, err, CASES[k].want);
        for (int i = 0; i < NQ; i++) assert_true(q2[i] == 0.0f);
        for (int i = 0; i < NE; i++) assert_true(e2[i] == 0.0f);
        for (size_t i = 0; i < b->nparams; i++) assert_true(b->params[i] == 0.0f);
    }
    /* the bound itself is an error a run may hold */
    forge_float(path, bad, "compress_err[14]", 1e6f);
    if (checkpoint_load(bad, b, &want, &got, err, sizeof err) != 0) fail_msg("%s", err);
    assert_true(e2[4] == 1e6f);
    model_free(a);
    model_free(b);
}

/* x (2, 3, 3) through a batch norm "bn", then the head. */
static int build_bn(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    (void)ctx, (void)err, (void)errlen;
    static const char *const names[4] = {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"};
    const int x = model_build_bn(b, -1, names);
    return model_build_fc(b, x, 3, "head.weight", "head.bias") < 0 ? -1 : 0;
}

/* A batch norm's running statistics in a checkpoint: the mean finite, the variance finite
 * and >= 0 (evaluation divides by sqrt(var + eps)). Checked for any reader, as the gathered
 * parameters' maps are, and a refusal leaves the model's buffers as they were. */
static void test_checkpoint_bn_stats_checked(void **state)
{
    fixture_t *fx = *state;
    model_t *a = NULL, *b = NULL;
    char err[512], path[600];
    for (int k = 0; k < 2; k++)
        if (model_create_custom("bnnet", 2, 3, 3, 3, 2, build_bn, NULL, k ? &b : &a, err, sizeof err) != 0)
            fail_msg("%s", err);
    model_init_params(a, 7);
    model_init_params(b, 8);
    const layer_t *bn = &a->layers[0];
    assert_int_equal(bn->kind, LAYER_BN);
    snprintf(path, sizeof path, "%s/bn.ckpt", fx->dir);
    ckpt_state_t st = {.seed = 7, .nworkers = 1, .aug_rng = {{1, 2}}}, got;
    a->buffers[bn->rv_off + 1] = 0.0f; /* a constant channel's variance */
    assert_int_equal(checkpoint_save(path, a, &st, err, sizeof err), 0);
    if (checkpoint_load(path, b, NULL, &got, err, sizeof err) != 0) fail_msg("%s", err);
    static const struct {
        int var;
        float v;
        const char *want;
    } CASES[] = {
        {1, -1.0f,
         "layer 0 (batch norm): element 1 of its running variance (bn.running_var) is -1, want finite and >= 0"},
        {1, NAN, "element 1 of its running variance (bn.running_var) is nan"},
        {0, INFINITY, "layer 0 (batch norm): element 1 of its running mean (bn.running_mean) is inf, want finite"},
    };
    float *keep = malloc(b->nbuffers * sizeof *keep);
    assert_non_null(keep);
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        const float was = a->buffers[(CASES[k].var ? bn->rv_off : bn->rm_off) + 1];
        a->buffers[(CASES[k].var ? bn->rv_off : bn->rm_off) + 1] = CASES[k].v;
        assert_int_equal(checkpoint_save(path, a, &st, err, sizeof err), 0);
        a->buffers[(CASES[k].var ? bn->rv_off : bn->rm_off) + 1] = was;
        memcpy(keep, b->buffers, b->nbuffers * sizeof *keep);
        assert_int_equal(checkpoint_load(path, b, NULL, &got, err, sizeof err), -1);
        if (!strstr(err, CASES[k].want)) fail_msg("refusal '%s' does not say '%s'", err, CASES[k].want);
        assert_memory_equal(keep, b->buffers, b->nbuffers * sizeof *keep);
    }
    free(keep);
    model_free(a);
    model_free(b);
}

/* The parameter-server workers' error-feedback files (CKPT.ef<index>): a CRC and finite,
 * bounded floats. A NaN file used to be "restored (sum |e| nan)" and trained on. Damage is
 * -1 with the element or what is wrong (the worker refuses to train); a whole file of
 * another checkpoint, the first format without a checksum, or none: CKPT_EF_OTHER (the
 * errors start at zero). err is untouched unless the file is restored. */
static void test_checkpoint_ef_checked(void **state)
{
    fixture_t *fx = *state;
    enum { N = 10 };
    float e[N], got[N];
    char path[600], msg[1024];
    for (int i = 0; i < N; i++) e[i] = 0.001f * (float)(i - 4);
    snprintf(path, sizeof path, "%s/ck.ckpt.ef1", fx->dir);
    assert_int_equal(checkpoint_ef_load(path, 40, 2, 1, got, N, msg, sizeof msg), CKPT_EF_OTHER); /* none yet */
    assert_int_equal(checkpoint_ef_save(path, 40, 2, 1, e, N, msg, sizeof msg), 0);
    if (checkpoint_ef_load(path, 40, 2, 1, got, N, msg, sizeof msg) != 0) fail_msg("%s", msg);
    assert_memory_equal(got, e, sizeof e);
    size_t len;
    unsigned char *good = read_all(path, &len);
    assert_int_equal(len, CKPT_EF_HEADER + N * sizeof(float) + 4);
    assert_memory_equal(good, CKPT_EF_MAGIC, 8);
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    static const struct {
        int what; /* 0: float 3 set to v, CRC fixed; 1: the same, CRC not fixed; 2: cut to len - 4; 3: the first
                     format's magic; 4: version 41, CRC fixed; 5: count 11, CRC fixed */
        float v;
        int rc;
        const char *want;
    } CASES[] = {
        {0, NAN, -1, "the error feedback's element 3 is nan, want finite, of magnitude at most 1e+06"},
        {0, -INFINITY, -1, "the error feedback's element 3 is -inf"},
        {0, 1e30f, -1, "the error feedback's element 3 is 1e+30"},
        {1, 0.5f, -1, "the error feedback is corrupt (CRC32 "},
        {2, 0, -1, "bytes, where this model's error feedback of 10 floats takes 76 (truncated or damaged)"},
        {3, 0, CKPT_EF_OTHER, "an error-feedback file of the older format PACEREF1, without a checksum: not read"},
        {4, 0, CKPT_EF_OTHER, "the error feedback of version 41, worker 1 of 2, not of this checkpoint's version 40"},
        {5, 0, -1, "the header announces 11 floats in a file of this model's 10"},
    };
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        size_t n = len;
        memcpy(buf, good, len);
        const int w = CASES[k].what;
        if (w <= 1) memcpy(buf + CKPT_EF_HEADER + 3 * sizeof(float), &CASES[k].v, sizeof(float));
        if (w == 2) n = len - 4;
        if (w == 3) memcpy(buf, CKPT_EF_MAGIC_V1, 8);
        if (w == 4) buf[8] = 41;
        if (w == 5) buf[24] = 11;
        if (w == 0 || w >= 4) checkpoint_ef_fix_crc(buf, n);
        write_bytes(path, buf, n);
        for (int i = 0; i < N; i++) got[i] = 7.0f;
        const int rc = checkpoint_ef_load(path, 40, 2, 1, got, N, msg, sizeof msg);
        if (rc != CASES[k].rc || !strstr(msg, CASES[k].want) || !strstr(msg, path))
            fail_msg("case %zu: %d '%s', want %d '%s'", k, rc, msg, CASES[k].rc, CASES[k].want);
        for (int i = 0; i < N; i++) assert_true(got[i] == 7.0f);
    }
    /* larger than the model's file: refused by its size, unread */
    memcpy(buf, good, len);
    write_bytes(path, buf, len);
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fputc(0, f);
    fclose(f);
    assert_int_equal(checkpoint_ef_load(path, 40, 2, 1, got, N, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "77 bytes, more than this model's error feedback of 10 floats takes (76)"));
    free(buf);
    free(good);
}

/* ---- Redis replies ---------------------------------------------------------------------- */

/* The reply hiredis builds from RESP bytes (what a Redis server, or something posing as
 * one, sends); NULL when the bytes are not one complete reply. */
static redisReply *resp(const char *bytes, size_t len)
{
    redisReader *rd = redisReaderCreate();
    assert_non_null(rd);
    void *reply = NULL;
    if (redisReaderFeed(rd, bytes, len) != REDIS_OK || redisReaderGetReply(rd, &reply) != REDIS_OK) reply = NULL;
    redisReaderFree(rd);
    return reply;
}
#define RESP(lit) resp(lit, sizeof lit - 1)

static void test_redis_assignment_parser(void **state)
{
    (void)state;
    int b[8], n = -1;
    int64_t v = 0;
    redisReply *r = RESP("*2\r\n$1\r\n3\r\n$9\r\n[10,20,2]\r\n");
    assert_int_equal(redis_report_parse_assignment(r, &v, b, 8, &n), 1);
    assert_true(v == 3 && n == 3 && b[0] == 10 && b[1] == 20 && b[2] == 2);
    freeReplyObject(r);
    static const struct {
        const char *bytes;
        size_t len;
        int want;
    } CASES[] = {
#define C(lit, w) {lit, sizeof lit - 1, w}
        C("*2\r\n$-1\r\n$-1\r\n", 0), /* no assignment */
        C("*1\r\n$1\r\n3\r\n", 0),    /* not the reply asked for */
        C("$5\r\nhello\r\n", 0),
        C("*2\r\n:3\r\n$3\r\n[1]\r\n", 0),                 /* version as an integer reply */
        C("*2\r\n$1\r\n3\r\n$12\r\n[2147483648]\r\n", -1), /* above INT_MAX */
        C("*2\r\n$1\r\n3\r\n$4\r\n[-1]\r\n", -1),
        C("*2\r\n$1\r\n3\r\n$5\r\n[1.5]\r\n", -1),
        C("*2\r\n$1\r\n3\r\n$19\r\n[1,1,1,1,1,1,1,1,1]\r\n", -1),     /* more than cap */
        C("*2\r\n$1\r\n3\r\n$3\r\n[1\0]\r\n", -1),                    /* a NUL inside */
        C("*2\r\n$3\r\nabc\r\n$3\r\n[1]\r\n", -1),                    /* version not a number */
        C("*2\r\n$21\r\n999999999999999999999\r\n$3\r\n[1]\r\n", -1), /* version overflows */
        C("*2\r\n$1\r\n0\r\n$3\r\n[1]\r\n", -1),                      /* versions start at 1 */
        C("*2\r\n$1\r\n3\r\n:5\r\n", -1),
#undef C
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        r = resp(CASES[i].bytes, CASES[i].len);
        assert_non_null(r);
        int got = redis_report_parse_assignment(r, &v, b, 8, &n);
        if (got != CASES[i].want) fail_msg("case %zu: %d, want %d", i, got, CASES[i].want);
        if (got <= 0) assert_int_equal(n, 0);
        freeReplyObject(r);
    }
}

static void test_redis_dynbatch_parsers(void **state)
{
    (void)state;
    int cur[3];
    long long ver = -1;
    redisReply *r = RESP("*2\r\n$1\r\n7\r\n$23\r\n[5,2147483648,-3,99999]\r\n");
    assert_non_null(r);
    dynbatch_parse_assignment(r, 3, 64, cur, &ver); /* 4 entries for 3 workers: not this job's */
    assert_true(ver == 7 && cur[0] == 64 && cur[1] == 64 && cur[2] == 64);
    freeReplyObject(r);
    r = RESP("*2\r\n$2\r\n-7\r\n$17\r\n[5,2147483648,-3]\r\n");
    assert_non_null(r);
    dynbatch_parse_assignment(r, 3, 64, cur, &ver); /* entries out of range keep the default */
    assert_true(ver == 0 && cur[0] == 5 && cur[1] == 64 && cur[2] == 64);
    freeReplyObject(r);

    char host[64], dev[16];
    double v = 0;
    r = RESP("*5\r\n$2\r\nh1\r\n$3\r\ncpu\r\n$4\r\n1000\r\n$1\r\n2\r\n$6\r\nworker\r\n");
    assert_int_equal(dynbatch_parse_node(r, host, sizeof host, dev, sizeof dev, &v), 1);
    assert_string_equal(host, "h1");
    assert_true(v == 2000);
    freeReplyObject(r);
    static const char *const BAD[] = {
        "*5\r\n$2\r\nh1\r\n$3\r\ncpu\r\n$4\r\n1000\r\n$1\r\n2\r\n$2\r\nps\r\n",        /* the PS */
        "*5\r\n$2\r\nh1\r\n$3\r\ncpu\r\n$3\r\nnan\r\n$1\r\n2\r\n$-1\r\n",              /* NaN speed */
        "*5\r\n$2\r\nh1\r\n$3\r\ncpu\r\n$5\r\n1e400\r\n$1\r\n2\r\n$-1\r\n",            /* infinite */
        "*5\r\n$2\r\nh1\r\n$3\r\ncpu\r\n$5\r\n1e300\r\n$5\r\n1e300\r\n$-1\r\n",        /* finite x finite = inf */
        "*5\r\n$2\r\nh1\r\n$17\r\ncpucpucpucpucpucp\r\n$1\r\n1\r\n$1\r\n1\r\n$-1\r\n", /* device too long */
        "*4\r\n$2\r\nh1\r\n$3\r\ncpu\r\n$1\r\n1\r\n$1\r\n1\r\n",
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        r = resp(BAD[i], strlen(BAD[i]));
        assert_non_null(r);
        if (dynbatch_parse_node(r, host, sizeof host, dev, sizeof dev, &v) != 0) fail_msg("case %zu accepted", i);
        freeReplyObject(r);
    }
    r = RESP("$3\r\ninf\r\n");
    assert_true(dynbatch_parse_speed(r) == 0);
    freeReplyObject(r);
    r = RESP("$5\r\n12.5x\r\n");
    assert_true(dynbatch_parse_speed(r) == 0);
    freeReplyObject(r);
    r = RESP(":40\r\n");
    assert_true(dynbatch_parse_speed(r) == 40);
    freeReplyObject(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_test_set_shape_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_train_set_shape_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gather_refuses_what_does_not_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_hostile_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_spec_hash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_reads_version7, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_reads_version3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_dropout_step, setup, teardown),
        cmocka_unit_test(test_checkpoint_validate_goodput),
        cmocka_unit_test(test_checkpoint_validate_async),
        cmocka_unit_test(test_checkpoint_validate_adopt),
        cmocka_unit_test(test_checkpoint_validate_other_world),
        cmocka_unit_test_setup_teardown(test_checkpoint_field_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_old_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_adamw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_weights_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_long_tensor_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_gather_map_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_params_momentum_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_adamw_moments_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_powersgd_state_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_bn_stats_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_ef_checked, setup, teardown),
        cmocka_unit_test(test_redis_assignment_parser),
        cmocka_unit_test(test_redis_dynbatch_parsers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
