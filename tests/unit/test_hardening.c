/* tests/unit/test_hardening.c - the worker against hostile input from files (issue 13,
 * memory safety): data sets whose shape or labels do not fit the model, and checkpoints
 * with a valid CRC but hostile header fields. Each case must end in an error that names
 * the file and the field, never in a write past a buffer (run under make check-asan).
 *
 * The data sets are tiny MNIST-format IDX files written into a mkdtemp() directory, so
 * the tests run anywhere; nothing here needs the real data sets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "checkpoint.h"
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
    assert_int_equal(dataset_load_idx(ip, lp, &d, err, sizeof err), DATA_OK);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_test_set_shape_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_train_set_shape_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gather_refuses_what_does_not_fit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
