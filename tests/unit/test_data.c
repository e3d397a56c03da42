/* tests/unit/test_data.c - data set loaders, sharding and batch gathering.
 *
 * The format tests write small IDX and CIFAR files (raw and gzip) into a fresh mkdtemp()
 * directory per test, so they run anywhere. The real-data tests load MNIST, Fashion-MNIST
 * and CIFAR-10 where the files are present and skip with a message where they are not.
 * Run from the repository root (../shared is then the shared directory).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_util.h"

#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data.h"
#include "rng.h"

#define ERRLEN 512

/* ---- fixture: one temporary directory per test ------------------------------------- */

typedef struct {
    char dir[64];
    char path[8][512]; /* scratch paths, built by tpath() */
} fixture_t;

static int setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    strcpy(fx->dir, "/tmp/pacer-test-data-XXXXXX");
    if (!mkdtemp(fx->dir)) {
        free(fx);
        return -1;
    }
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

/* fx->path[slot] = <dir>/<name> */
static const char *tpath(fixture_t *fx, int slot, const char *name)
{
    char dir[sizeof fx->dir]; /* a copy: snprintf's source must not share fx with its target */
    memcpy(dir, fx->dir, sizeof dir);
    snprintf(fx->path[slot], sizeof fx->path[slot], "%s/%s", dir, name);
    return fx->path[slot];
}

/* ---- file builders ----------------------------------------------------------------- */

static void write_file(const char *path, int gz, const void *data, size_t len)
{
    if (gz) {
        gzFile f = gzopen(path, "wb");
        assert_non_null(f);
        if (len > 0) assert_int_equal(gzwrite(f, data, (unsigned)len), (int)len);
        assert_int_equal(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        if (len > 0) assert_int_equal(fwrite(data, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
    }
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* The known pixel of image i at flat offset k. */
static uint8_t pix(int i, int k) { return (uint8_t)(i * 37 + k * 3 + 1); }

enum { NIMG = 5, SIDE = 28 };
static const uint8_t LABELS5[NIMG] = {3, 0, 9, 7, 1};

/* An IDX images file: header (magic, n, rows, cols) then `have` images of the pattern,
 * then `extra` trailing bytes. */
static void write_idx_images(const char *path, int gz, uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols,
                             int have, size_t extra)
{
    size_t img = (size_t)rows * cols, len = 16 + have * img + extra;
    uint8_t *buf = calloc(1, len);
    assert_non_null(buf);
    put_be32(buf, magic);
    put_be32(buf + 4, n);
    put_be32(buf + 8, rows);
    put_be32(buf + 12, cols);
    for (int i = 0; i < have; i++)
        for (size_t k = 0; k < img; k++) buf[16 + i * img + k] = pix(i, (int)k);
    write_file(path, gz, buf, len);
    free(buf);
}

/* An IDX labels file: header (magic, n) then `have` labels from `labels`. */
static void write_idx_labels(const char *path, int gz, uint32_t magic, uint32_t n, const uint8_t *labels, int have)
{
    uint8_t buf[64];
    assert_true(8 + have <= (int)sizeof buf);
    put_be32(buf, magic);
    put_be32(buf + 4, n);
    memcpy(buf + 8, labels, (size_t)have);
    write_file(path, gz, buf, 8 + (size_t)have);
}

/* A valid 5-image set: writes images to slot 0, labels to slot 1. */
static void write_valid_idx(fixture_t *fx, int gz)
{
    write_idx_images(tpath(fx, 0, gz ? "img.gz" : "img"), gz, 0x803, NIMG, SIDE, SIDE, NIMG, 0);
    write_idx_labels(tpath(fx, 1, gz ? "lab.gz" : "lab"), gz, 0x801, NIMG, LABELS5, NIMG);
}

enum { CIFAR_REC = 3073, CIFAR_IMG = 3072 };

/* The known CIFAR pixel of global record i at flat CHW offset k. */
static uint8_t cpix(int i, int k) { return (uint8_t)(i * 11 + k * 5 + (k / 1024) * 17); }

/* nrec records with labels[first..] and pixels cpix(first + r, k), then extra bytes. */
static void write_cifar(const char *path, int gz, const uint8_t *labels, int first, int nrec, size_t extra)
{
    size_t len = (size_t)nrec * CIFAR_REC + extra;
    uint8_t *buf = calloc(1, len ? len : 1);
    assert_non_null(buf);
    for (int r = 0; r < nrec; r++) {
        uint8_t *rec = buf + (size_t)r * CIFAR_REC;
        rec[0] = labels[first + r];
        for (int k = 0; k < CIFAR_IMG; k++) rec[1 + k] = cpix(first + r, k);
    }
    write_file(path, gz, buf, len);
    free(buf);
}

/* Every error names the file and says what is wrong. */
static void assert_err(const char *err, const char *path, const char *word)
{
    if (!strstr(err, path) || !strstr(err, word))
        fail_msg("error message \"%s\" should name \"%s\" and contain \"%s\"", err, path, word);
    assert_null(strchr(err, '\n'));
}

static void assert_empty(const dataset_t *d)
{
    assert_int_equal(d->n, 0);
    assert_null(d->pixels);
    assert_null(d->labels);
}

/* ---- IDX: valid files -------------------------------------------------------------- */

static void check_valid_idx(fixture_t *fx, int gz)
{
    dataset_t d;
    char err[ERRLEN] = "";
    write_valid_idx(fx, gz);
    int rc = dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err);
    if (rc != DATA_OK) fail_msg("load failed: %s", err);
    assert_int_equal(d.n, NIMG);
    assert_int_equal(d.C, 1);
    assert_int_equal(d.H, SIDE);
    assert_int_equal(d.W, SIDE);
    assert_int_equal(d.num_classes, 10);
    assert_float_equal(d.mean[0], 0.0f, 0.0f);
    assert_float_equal(d.std[0], 1.0f, 0.0f);
    for (int i = 0; i < NIMG; i++) {
        assert_int_equal(d.labels[i], LABELS5[i]);
        for (int k = 0; k < SIDE * SIDE; k++) assert_int_equal(d.pixels[i * SIDE * SIDE + k], pix(i, k));
    }
    dataset_truncate(&d, 2);
    assert_int_equal(d.n, 2);
    dataset_truncate(&d, 10); /* never grows */
    assert_int_equal(d.n, 2);
    dataset_free(&d);
    assert_null(d.pixels);
    dataset_free(&d); /* a freed data set can be freed again */
}

static void test_idx_valid_raw(void **state) { check_valid_idx(*state, 0); }
static void test_idx_valid_gz(void **state) { check_valid_idx(*state, 1); }

/* Raw images with gzip labels: the two files are opened independently. */
static void test_idx_valid_mixed(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_idx_images(tpath(fx, 0, "img"), 0, 0x803, NIMG, SIDE, SIDE, NIMG, 0);
    write_idx_labels(tpath(fx, 1, "lab.gz"), 1, 0x801, NIMG, LABELS5, NIMG);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_OK);
    assert_int_equal(d.n, NIMG);
    assert_int_equal(d.labels[2], 9);
    dataset_free(&d);
}

/* ---- IDX: one test per bad input --------------------------------------------------- */

static void test_idx_missing_images(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 0);
    const char *missing = tpath(fx, 2, "no-such-images");
    assert_int_equal(dataset_load_idx(missing, fx->path[1], 10, &d, err, sizeof err), DATA_ENOENT);
    assert_err(err, missing, "cannot open");
    assert_empty(&d);
}

/* A FIFO where the images are: refused at once by name (the open never waits for a writer:
 * an alarm would end the test), the same for a directory. */
static void test_idx_fifo_images(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 0);
    const char *fifo = tpath(fx, 2, "fifo-images");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(30);
    assert_int_equal(dataset_load_idx(fifo, fx->path[1], 10, &d, err, sizeof err), DATA_ENOENT);
    alarm(0);
    assert_err(err, fifo, "a FIFO, not a regular file");
    assert_empty(&d);
    unlink(fifo);
}

static void test_idx_missing_labels(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 0);
    const char *missing = tpath(fx, 2, "no-such-labels");
    assert_int_equal(dataset_load_idx(fx->path[0], missing, 10, &d, err, sizeof err), DATA_ENOENT);
    assert_err(err, missing, "cannot open");
    assert_empty(&d);
}

static void test_idx_unreadable_directory(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 0);
    /* A directory is refused as what it is, before a read. */
    assert_int_equal(dataset_load_idx(fx->dir, fx->path[1], 10, &d, err, sizeof err), DATA_ENOENT);
    assert_err(err, fx->dir, "a directory, not a regular file");
}

static void test_idx_wrong_magic_images(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 0);
    write_idx_images(fx->path[0], 0, 0x801, NIMG, SIDE, SIDE, NIMG, 0);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[0], "magic 0x00000801 (want 0x00000803)");
    assert_empty(&d);
}

static void test_idx_wrong_magic_labels(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 1);
    /* Images passed as labels: the header's magic is the images one. */
    write_idx_labels(fx->path[1], 1, 0x802, NIMG, LABELS5, NIMG);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[1], "wrong magic 0x00000802 (want 0x00000801)");
    assert_empty(&d);
}

static void test_idx_truncated_header(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    static const uint8_t head[7] = {0, 0, 8, 3, 0, 0, 0};
    write_valid_idx(fx, 0);
    write_file(fx->path[0], 0, head, sizeof head);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[0], "truncated: expected 16 bytes of header, got 7");
}

static void check_truncated_images(fixture_t *fx, int gz)
{
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, gz);
    /* The header says 5 images, the file holds 3. */
    write_idx_images(fx->path[0], gz, 0x803, NIMG, SIDE, SIDE, 3, 0);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[0], "truncated: expected 3920 bytes of pixel data, got 2352");
    assert_empty(&d);
}

static void test_idx_truncated_images_raw(void **state) { check_truncated_images(*state, 0); }
static void test_idx_truncated_images_gz(void **state) { check_truncated_images(*state, 1); }

/* A gzip file cut in the middle of its deflate stream (not a short but complete stream). */
static void test_idx_truncated_gzip_stream(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 1);
    FILE *f = fopen(fx->path[0], "rb");
    assert_non_null(f);
    uint8_t buf[8192];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(len > 40 && len < sizeof buf);
    write_file(fx->path[0], 0, buf, len / 2);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[0], "truncated");
    assert_empty(&d);
}

/* A gzip file whose CRC does not match: found although every payload byte arrives. */
static void test_idx_corrupt_gzip_crc(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 1);
    FILE *f = fopen(fx->path[1], "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, -8, SEEK_END), 0); /* trailer: CRC32, ISIZE */
    int c = fgetc(f);
    assert_int_equal(fseek(f, -8, SEEK_END), 0);
    fputc(c ^ 0xff, f);
    fclose(f);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[1], "gzip");
    assert_empty(&d);
}

static void test_idx_truncated_labels(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 0);
    write_idx_labels(fx->path[1], 0, 0x801, NIMG, LABELS5, 2);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[1], "truncated: expected 5 bytes of label data, got 2");
    assert_empty(&d);
}

/* Both headers agree on two billion samples, the files hold five: the answer must be
 * "truncated" (not an attempt to allocate 1.5 TB, nor a crash). */
static void test_idx_huge_count_short_file(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    const uint32_t huge = 2000000000u;
    write_idx_images(tpath(fx, 0, "img"), 0, 0x803, huge, SIDE, SIDE, NIMG, 0);
    write_idx_labels(tpath(fx, 1, "lab"), 0, 0x801, huge, LABELS5, NIMG);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[0], "truncated: expected 1568000000000 bytes of pixel data, got 3920");
    assert_empty(&d);
}

static void test_idx_absurd_dimensions(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 0);
    const uint32_t bad[][3] = {{NIMG, 0, SIDE}, {NIMG, SIDE, 100000}, {0, SIDE, SIDE}, {0x80000000u, SIDE, SIDE}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_idx_images(fx->path[0], 0, 0x803, bad[i][0], bad[i][1], bad[i][2], 0, 0);
        assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_EFORMAT);
        assert_err(err, fx->path[0], "absurd dimensions");
        assert_empty(&d);
    }
}

static void test_idx_count_mismatch(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 0);
    write_idx_labels(fx->path[1], 0, 0x801, NIMG - 1, LABELS5, NIMG - 1);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[1], "count mismatch: 4 labels");
    assert_err(err, fx->path[0], "5 images");
    assert_empty(&d);
}

static void test_idx_label_out_of_range(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    const uint8_t bad[NIMG] = {3, 0, 9, 10, 1};
    write_valid_idx(fx, 0);
    write_idx_labels(fx->path[1], 0, 0x801, NIMG, bad, NIMG);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_ELABEL);
    assert_err(err, fx->path[1], "label 10 at index 3");
    assert_empty(&d);
}

/* Decision under test: bytes after the announced data are rejected, not ignored. */
static void test_idx_trailing_garbage(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_valid_idx(fx, 1);
    write_idx_images(fx->path[0], 1, 0x803, NIMG, SIDE, SIDE, NIMG, 3);
    assert_int_equal(dataset_load_idx(fx->path[0], fx->path[1], 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[0], "trailing data after 3920 bytes");
    assert_empty(&d);
}

/* err may be NULL: the code alone is returned. */
static void test_idx_null_err(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    assert_int_equal(dataset_load_idx(tpath(fx, 0, "none"), tpath(fx, 1, "none"), 10, &d, NULL, 0), DATA_ENOENT);
}

/* ---- CIFAR ------------------------------------------------------------------------- */

static const uint8_t CLABELS[6] = {6, 9, 0, 4, 1, 2};

static void check_valid_cifar(fixture_t *fx, int gz)
{
    dataset_t d;
    char err[ERRLEN] = "";
    write_cifar(tpath(fx, 0, gz ? "a.bin.gz" : "a.bin"), gz, CLABELS, 0, 3, 0);
    write_cifar(tpath(fx, 1, gz ? "b.bin.gz" : "b.bin"), gz, CLABELS, 3, 2, 0);
    const char *paths[2] = {fx->path[0], fx->path[1]};
    int rc = dataset_load_cifar(paths, 2, 10, &d, err, sizeof err);
    if (rc != DATA_OK) fail_msg("load failed: %s", err);
    assert_int_equal(d.n, 5);
    assert_int_equal(d.C, 3);
    assert_int_equal(d.H, 32);
    assert_int_equal(d.W, 32);
    assert_int_equal(d.num_classes, 10);
    for (int c = 0; c < 3; c++) {
        assert_float_equal(d.mean[c], 0.0f, 0.0f);
        assert_float_equal(d.std[c], 1.0f, 0.0f);
    }
    for (int i = 0; i < 5; i++) {
        assert_int_equal(d.labels[i], CLABELS[i]);
        for (int k = 0; k < CIFAR_IMG; k++) /* the record's R, G, B planes are C, H, W */
            assert_int_equal(d.pixels[(size_t)i * CIFAR_IMG + k], cpix(i, k));
    }
    dataset_free(&d);
}

static void test_cifar_valid_raw(void **state) { check_valid_cifar(*state, 0); }
static void test_cifar_valid_gz(void **state) { check_valid_cifar(*state, 1); }

/* More records than the first allocation holds, so the buffers grow and shrink. */
static void test_cifar_many_records(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    enum { N = 2500 };
    static uint8_t labels[N];
    for (int i = 0; i < N; i++) labels[i] = (uint8_t)(i % 10);
    write_cifar(tpath(fx, 0, "many.bin.gz"), 1, labels, 0, N, 0);
    const char *paths[1] = {fx->path[0]};
    assert_int_equal(dataset_load_cifar(paths, 1, 10, &d, err, sizeof err), DATA_OK);
    assert_int_equal(d.n, N);
    for (int i = 0; i < N; i += 499) {
        assert_int_equal(d.labels[i], i % 10);
        assert_int_equal(d.pixels[(size_t)i * CIFAR_IMG + 2000], cpix(i, 2000));
    }
    dataset_free(&d);
}

static void test_cifar_missing_file(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_cifar(tpath(fx, 0, "a.bin"), 0, CLABELS, 0, 3, 0);
    const char *paths[2] = {fx->path[0], tpath(fx, 1, "missing.bin")};
    assert_int_equal(dataset_load_cifar(paths, 2, 10, &d, err, sizeof err), DATA_ENOENT);
    assert_err(err, fx->path[1], "cannot open");
    assert_empty(&d);
    assert_int_equal(dataset_load_cifar(paths, 0, 10, &d, err, sizeof err), DATA_ENOENT);
}

static void test_cifar_label_out_of_range(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    const uint8_t bad[3] = {1, 2, 10};
    write_cifar(tpath(fx, 0, "a.bin"), 0, CLABELS, 0, 3, 0);
    write_cifar(tpath(fx, 1, "b.bin.gz"), 1, bad, 0, 3, 0);
    const char *paths[2] = {fx->path[0], fx->path[1]};
    assert_int_equal(dataset_load_cifar(paths, 2, 10, &d, err, sizeof err), DATA_ELABEL);
    assert_err(err, fx->path[1], "label 10 at index 2");
    assert_empty(&d);
}

static void check_cifar_truncated(fixture_t *fx, int gz)
{
    dataset_t d;
    char err[ERRLEN];
    /* Two whole records and 100 bytes of a third. */
    write_cifar(tpath(fx, 0, "a.bin"), gz, CLABELS, 0, 2, 100);
    const char *paths[1] = {fx->path[0]};
    assert_int_equal(dataset_load_cifar(paths, 1, 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[0], "truncated record: 6246 bytes is not a multiple of 3073");
    assert_empty(&d);
}

static void test_cifar_truncated_record_raw(void **state) { check_cifar_truncated(*state, 0); }
static void test_cifar_truncated_record_gz(void **state) { check_cifar_truncated(*state, 1); }

static void test_cifar_empty_file(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    write_cifar(tpath(fx, 0, "a.bin"), 0, CLABELS, 0, 3, 0);
    write_file(tpath(fx, 1, "empty.bin"), 0, "", 0);
    const char *paths[2] = {fx->path[0], fx->path[1]};
    assert_int_equal(dataset_load_cifar(paths, 2, 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[1], "empty");
    assert_empty(&d);
    /* An empty gzip stream is an empty file too. */
    write_file(tpath(fx, 2, "empty.bin.gz"), 1, "", 0);
    paths[1] = fx->path[2];
    assert_int_equal(dataset_load_cifar(paths, 2, 10, &d, err, sizeof err), DATA_EFORMAT);
    assert_err(err, fx->path[2], "empty");
}

/* ---- dataset_load: names, directories, raw-then-.gz probing ------------------------ */

static void test_load_probes_raw_then_gz(void **state)
{
    fixture_t *fx = *state;
    dataset_t d;
    char err[ERRLEN];
    char p[600];
    const uint8_t ones[NIMG] = {1, 1, 1, 1, 1}, twos[NIMG] = {2, 2, 2, 2, 2};

    /* train: images only as .gz, labels both raw (label 1) and .gz (label 2): raw wins. */
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", fx->dir);
    write_idx_images(p, 1, 0x803, NIMG, SIDE, SIDE, NIMG, 0);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte", fx->dir);
    write_idx_labels(p, 0, 0x801, NIMG, ones, NIMG);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", fx->dir);
    write_idx_labels(p, 1, 0x801, NIMG, twos, NIMG);
    /* test: raw images, .gz labels. */
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", fx->dir);
    write_idx_images(p, 0, 0x803, 3, SIDE, SIDE, 3, 0);
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte.gz", fx->dir);
    write_idx_labels(p, 1, 0x801, 3, LABELS5, 3);

    assert_int_equal(dataset_load("mnist", fx->dir, 1, &d, err, sizeof err), DATA_OK);
    assert_int_equal(d.n, NIMG);
    assert_int_equal(d.labels[0], 1);
    assert_int_equal(d.pixels[SIDE * SIDE + 5], pix(1, 5));
    assert_float_equal(d.mean[0], 0.1307f, 0.0f);
    assert_float_equal(d.std[0], 0.3081f, 0.0f);
    dataset_free(&d);

    assert_int_equal(dataset_load("fashion-mnist", fx->dir, 0, &d, err, sizeof err), DATA_OK);
    assert_int_equal(d.n, 3);
    assert_int_equal(d.labels[2], 9);
    assert_float_equal(d.mean[0], 0.2860f, 0.0f);
    assert_float_equal(d.std[0], 0.3530f, 0.0f);
    dataset_free(&d);

    /* cifar10: batches 1..5 alternate raw and .gz, test only .gz. */
    for (int b = 1; b <= 5; b++) {
        snprintf(p, sizeof p, "%s/data_batch_%d.bin%s", fx->dir, b, b % 2 ? ".gz" : "");
        write_cifar(p, b % 2, CLABELS, b - 1, 2, 0);
    }
    snprintf(p, sizeof p, "%s/test_batch.bin.gz", fx->dir);
    write_cifar(p, 1, CLABELS, 0, 1, 0);
    assert_int_equal(dataset_load("cifar10", fx->dir, 1, &d, err, sizeof err), DATA_OK);
    assert_int_equal(d.n, 10);
    assert_int_equal(d.C, 3);
    for (int b = 0; b < 5; b++) {
        assert_int_equal(d.labels[2 * b], CLABELS[b]);
        assert_int_equal(d.pixels[(size_t)(2 * b + 1) * CIFAR_IMG + 7], cpix(b + 1, 7));
    }
    const float cm[3] = {0.4914f, 0.4822f, 0.4465f}, cs[3] = {0.2470f, 0.2435f, 0.2616f};
    for (int c = 0; c < 3; c++) {
        assert_float_equal(d.mean[c], cm[c], 0.0f);
        assert_float_equal(d.std[c], cs[c], 0.0f);
    }
    dataset_free(&d);
    assert_int_equal(dataset_load("cifar10", fx->dir, 0, &d, err, sizeof err), DATA_OK);
    assert_int_equal(d.n, 1);
    dataset_free(&d);

    /* A missing file: the message names the raw path and says .gz was tried too. */
    snprintf(p, sizeof p, "%s/data_batch_4.bin", fx->dir);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(dataset_load("cifar10", fx->dir, 1, &d, err, sizeof err), DATA_ENOENT);
    assert_err(err, p, "not found");
    assert_non_null(strstr(err, ".gz"));
    assert_empty(&d);
}

static void test_load_unknown_name(void **state)
{
    dataset_t d;
    char err[ERRLEN];
    assert_int_equal(dataset_load("imagenet", "/tmp", 1, &d, err, sizeof err), DATA_EUNKNOWN);
    assert_non_null(strstr(err, "imagenet"));
    /* the names come from the catalog */
    assert_non_null(strstr(err, "known: fashion-mnist, mnist, cifar10"));
    assert_empty(&d);
}

/* The default directory of a catalog data set (catalog_dataset_default_dir). */
static const char *default_dir(const char *name)
{
    static char dir[1024];
    catalog_dataset_t e;
    assert_int_equal(catalog_dataset_get(name, &e), 0);
    assert_int_equal(catalog_dataset_default_dir(&e, dir, sizeof dir), 0);
    return dir;
}

/* Restores PACER_SHARED after the test changes it; the real-data tests read it. */
static void test_default_dir(void **state)
{
    const char *orig = getenv("PACER_SHARED");
    char *saved = orig ? strdup(orig) : NULL;

    assert_string_equal(default_dir("fashion-mnist"), "/usr/share/datasets/fashion-mnist");
    setenv("PACER_SHARED", "/srv/shared", 1);
    assert_string_equal(default_dir("mnist"), "/srv/shared/datasets/mnist");
    assert_string_equal(default_dir("cifar10"), "/srv/shared/datasets/cifar-10");
    unsetenv("PACER_SHARED");
    assert_string_equal(default_dir("mnist"), "../shared/datasets/mnist");
    assert_string_equal(default_dir("cifar10"), "../shared/datasets/cifar-10");
    /* too long for the buffer: -1, never cut */
    catalog_dataset_t e;
    char small[8];
    assert_int_equal(catalog_dataset_get("mnist", &e), 0);
    assert_int_equal(catalog_dataset_default_dir(&e, small, sizeof small), -1);

    if (saved) {
        setenv("PACER_SHARED", saved, 1);
        free(saved);
    }
}

/* catalog_dataset_locate, the one rule of the listing, a submission and a retry: the
 * default directory first, then DIR under each root in order; the first that holds every
 * file (raw or .gz) wins; when none does, every place tried is named, absolute. */
static void test_locate(void **state)
{
    fixture_t *fx = *state;
    const char *orig = getenv("PACER_SHARED");
    char *saved = orig ? strdup(orig) : NULL;
    char r1[600], r2[600], shared[600], out[1024], looked[2048], want[PATH_MAX + 64];
    snprintf(r1, sizeof r1, "%s/r1", fx->dir);
    snprintf(r2, sizeof r2, "%s/r2", fx->dir);
    snprintf(shared, sizeof shared, "%s/none", fx->dir);
    assert_int_equal(mkdir(r1, 0700), 0);
    assert_int_equal(mkdir(r2, 0700), 0);
    catalog_dataset_t e;
    assert_int_equal(catalog_dataset_get("mnist", &e), 0);
    const char *roots[] = {r1, r2};
    setenv("PACER_SHARED", shared, 1);

    assert_int_equal(catalog_dataset_locate(&e, roots, 2, out, sizeof out, looked, sizeof looked), -1);
    assert_string_equal(out, "");
    snprintf(want, sizeof want, "%s/datasets/mnist, %s/mnist, %s/mnist", shared, r1, r2);
    assert_string_equal(looked, want);

    /* r2 holds every file (one gzipped), r1 all but one: r2 */
    char dir[700], f[800];
    for (int k = 0; k < 2; k++) {
        snprintf(dir, sizeof dir, "%s/mnist", k ? r2 : r1);
        assert_int_equal(mkdir(dir, 0700), 0);
        for (int i = 0; i < e.ntrain + e.ntest; i++) {
            const char *name = i < e.ntrain ? e.train_files[i] : e.test_files[i - e.ntrain];
            if (k == 0 && i == 3) continue;
            snprintf(f, sizeof f, "%s/%s%s", dir, name, i == 0 ? ".gz" : "");
            write_file(f, 0, "x", 1);
        }
    }
    assert_int_equal(catalog_dataset_locate(&e, roots, 2, out, sizeof out, NULL, 0), 0);
    assert_string_equal(out, dir);
    /* the default wins over any root, made absolute from a relative PACER_SHARED */
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(fx->dir), 0);
    assert_int_equal(rename("r2/mnist", "mnist"), 0);
    assert_int_equal(mkdir("s", 0700), 0);
    assert_int_equal(mkdir("s/datasets", 0700), 0);
    assert_int_equal(rename("mnist", "s/datasets/mnist"), 0);
    setenv("PACER_SHARED", "s", 1);
    int rc = catalog_dataset_locate(&e, roots, 2, out, sizeof out, NULL, 0);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, 0);
    char real[PATH_MAX];
    assert_non_null(realpath(fx->dir, real));
    snprintf(want, sizeof want, "%s/s/datasets/mnist", real);
    assert_string_equal(out, want);

    if (saved) setenv("PACER_SHARED", saved, 1);
    else unsetenv("PACER_SHARED");
    free(saved);
}

static void test_strerror(void **state)
{
    const int codes[] = {DATA_OK, DATA_ENOENT, DATA_EFORMAT, DATA_ELABEL, DATA_ENOMEM, DATA_EUNKNOWN};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        assert_non_null(data_strerror(codes[i]));
        for (size_t j = 0; j < i; j++) assert_string_not_equal(data_strerror(codes[i]), data_strerror(codes[j]));
    }
    assert_non_null(data_strerror(12345));
}

/* ---- sharding, shuffling ----------------------------------------------------------- */

static void test_shard_covers_epoch(void **state)
{
    const int sizes[] = {1, 3, 10, 11, 13, 97};
    int32_t perm[97], shard[97 + 8];
    int seen[97];
    rng_t r;
    rng_seed(&r, 7);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int n = sizes[s];
        for (int i = 0; i < n; i++) perm[i] = i;
        rng_shuffle(&r, perm, n);
        for (int world = 1; world <= 4; world++) {
            memset(seen, 0, sizeof seen);
            int total = 0;
            for (int rank = 0; rank < world; rank++) {
                const int cap = n / world + 1;
                for (int i = 0; i < (int)(sizeof shard / sizeof shard[0]); i++)
                    shard[i] = -7; /* canary beyond the documented capacity */
                int len = data_shard(perm, n, rank, world, shard);
                assert_in_range(len, n / world, cap);
                for (int i = cap; i < (int)(sizeof shard / sizeof shard[0]); i++) assert_int_equal(shard[i], -7);
                for (int k = 0; k < len; k++) {
                    assert_int_equal(shard[k], perm[rank + k * world]);
                    seen[shard[k]]++;
                }
                total += len;
            }
            assert_int_equal(total, n);
            for (int i = 0; i < n; i++) assert_int_equal(seen[i], 1); /* disjoint and covering */
        }
    }
    assert_int_equal(data_shard(perm, 10, 4, 4, shard), 0); /* rank outside world */
    assert_int_equal(data_shard(perm, 10, 0, 0, shard), 0);
}

static void test_shuffle_same_seed_same_permutation(void **state)
{
    enum { N = 1000 };
    int32_t a[N], b[N], c[N];
    int seen[N] = {0};
    rng_t r1, r2, r3;
    for (int i = 0; i < N; i++) a[i] = b[i] = c[i] = i;
    rng_seed(&r1, 42);
    rng_seed(&r2, 42);
    rng_seed(&r3, 43);
    rng_shuffle(&r1, a, N);
    rng_shuffle(&r2, b, N);
    rng_shuffle(&r3, c, N);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    for (int i = 0; i < N; i++) seen[a[i]]++;
    for (int i = 0; i < N; i++) assert_int_equal(seen[i], 1);
}

/* ---- batch gathering --------------------------------------------------------------- */

/* A small in-memory CIFAR-shaped data set with random non-zero pixels (so the zero
 * padding is distinguishable from image content). */
static void make_rgb_dataset(dataset_t *d, int n, uint64_t seed)
{
    rng_t r;
    rng_seed(&r, seed);
    memset(d, 0, sizeof *d);
    d->n = n;
    d->C = 3;
    d->H = d->W = 32;
    d->num_classes = 10;
    d->pixels = malloc((size_t)n * CIFAR_IMG);
    d->labels = malloc((size_t)n * sizeof *d->labels);
    assert_non_null(d->pixels);
    assert_non_null(d->labels);
    for (size_t i = 0; i < (size_t)n * CIFAR_IMG; i++) d->pixels[i] = (uint8_t)(1 + rng_below(&r, 255));
    for (int i = 0; i < n; i++) d->labels[i] = i % 10;
    const float m[3] = {0.4914f, 0.4822f, 0.4465f}, s[3] = {0.2470f, 0.2435f, 0.2616f};
    memcpy(d->mean, m, sizeof m);
    memcpy(d->std, s, sizeof s);
}

static float norm(const dataset_t *d, int c, int p) { return ((float)p / 255.0f - d->mean[c]) / d->std[c]; }

static void test_gather_normalises(void **state)
{
    dataset_t d;
    make_rgb_dataset(&d, 6, 1);
    d.pixels[4 * CIFAR_IMG + 0] = 0;             /* sample 4, R(0,0) */
    d.pixels[4 * CIFAR_IMG + 1024 + 33] = 255;   /* sample 4, G(1,1) */
    d.pixels[4 * CIFAR_IMG + 2048 + 1023] = 128; /* sample 4, B(31,31) */
    const int32_t idx[3] = {4, 0, 5};
    float x[3 * CIFAR_IMG + 1];
    int32_t y[3];
    x[3 * CIFAR_IMG] = 12345.0f; /* canary */

    assert_int_equal(data_batch_gather(&d, idx, 3, x, 3 * CIFAR_IMG, y, 0, NULL), 0);
    assert_float_equal(x[3 * CIFAR_IMG], 12345.0f, 0.0f);
    assert_float_equal(x[0], -0.4914f / 0.2470f, 1e-6);
    assert_float_equal(x[1024 + 33], (1.0f - 0.4822f) / 0.2435f, 1e-6);
    assert_float_equal(x[2048 + 1023], (128.0f / 255.0f - 0.4465f) / 0.2616f, 1e-6);
    for (int b = 0; b < 3; b++) {
        assert_int_equal(y[b], d.labels[idx[b]]);
        for (int k = 0; k < CIFAR_IMG; k++)
            assert_float_equal(x[b * CIFAR_IMG + k], norm(&d, k / 1024, d.pixels[(size_t)idx[b] * CIFAR_IMG + k]), 1e-6);
    }
    /* y may be NULL (inference without labels). */
    assert_int_equal(data_batch_gather(&d, idx, 1, x, 3 * CIFAR_IMG, NULL, 0, NULL), 0);
    dataset_free(&d);
}

/* Finds the (oy, ox, flip) for which out is the crop of the zero-padded image src;
 * returns how many candidates match (the test wants exactly one). */
static int match_crop(const dataset_t *d, const uint8_t *src, const float *out, int *oy_out, int *ox_out, int *flip_out)
{
    int matches = 0;
    for (int oy = 0; oy <= 8; oy++)
        for (int ox = 0; ox <= 8; ox++)
            for (int flip = 0; flip <= 1; flip++) {
                int ok = 1;
                for (int c = 0; c < 3 && ok; c++)
                    for (int i = 0; i < 32 && ok; i++)
                        for (int j = 0; j < 32 && ok; j++) {
                            int sy = i + oy - 4, sx = (flip ? 31 - j : j) + ox - 4;
                            int p = (sy < 0 || sy >= 32 || sx < 0 || sx >= 32) ? 0 : src[c * 1024 + sy * 32 + sx];
                            ok = fabsf(out[c * 1024 + i * 32 + j] - norm(d, c, p)) <= 1e-6f;
                        }
                if (ok) {
                    matches++;
                    *oy_out = oy, *ox_out = ox, *flip_out = flip;
                }
            }
    return matches;
}

static void test_gather_augment(void **state)
{
    enum { B = 4, ROUNDS = 100 };
    dataset_t d;
    make_rgb_dataset(&d, 8, 2);
    const int32_t idx[B] = {7, 1, 1, 3};
    static float x1[B * CIFAR_IMG + 1], x2[B * CIFAR_IMG + 1];
    int32_t y[B];
    rng_t r1, r2;
    int flips = 0, oy_seen[9] = {0}, ox_seen[9] = {0};

    rng_seed(&r1, 99);
    rng_seed(&r2, 99);
    x1[B * CIFAR_IMG] = x2[B * CIFAR_IMG] = -999.0f; /* canaries: the shape is kept */
    for (int round = 0; round < ROUNDS; round++) {
        assert_int_equal(data_batch_gather(&d, idx, B, x1, B * CIFAR_IMG, y, 1, &r1), 0);
        assert_int_equal(data_batch_gather(&d, idx, B, x2, B * CIFAR_IMG, y, 1, &r2), 0);
        /* Same seed, same stream: bitwise the same batches. */
        assert_memory_equal(x1, x2, sizeof x1);
        for (int b = 0; b < B; b++) {
            int oy = -1, ox = -1, flip = -1;
            assert_int_equal(y[b], d.labels[idx[b]]);
            assert_int_equal(match_crop(&d, d.pixels + (size_t)idx[b] * CIFAR_IMG, x1 + b * CIFAR_IMG, &oy, &ox, &flip),
                             1);
            oy_seen[oy]++;
            ox_seen[ox]++;
            flips += flip;
        }
    }
    assert_float_equal(x1[B * CIFAR_IMG], -999.0f, 0.0f);
    /* Every offset in [0, 8] occurs and about half the samples are flipped. */
    for (int o = 0; o <= 8; o++) {
        assert_true(oy_seen[o] > 0);
        assert_true(ox_seen[o] > 0);
    }
    assert_in_range(flips, B * ROUNDS / 2 - 60, B * ROUNDS / 2 + 60);

    /* A different seed gives different crops. */
    rng_seed(&r2, 100);
    assert_int_equal(data_batch_gather(&d, idx, B, x2, B * CIFAR_IMG, y, 1, &r2), 0);
    assert_memory_not_equal(x1, x2, B * CIFAR_IMG * sizeof(float));
    dataset_free(&d);
}

/* ---- real data, where it is installed ---------------------------------------------- */

/* True if dir/file or dir/file.gz exists. */
static int have_file(const char *dir, const char *file)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    if (access(p, R_OK) == 0) return 1;
    snprintf(p, sizeof p, "%s/%s.gz", dir, file);
    return access(p, R_OK) == 0;
}

static int have_files(const char *dir, const char *const *files, int n)
{
    for (int i = 0; i < n; i++)
        if (!dir || !have_file(dir, files[i])) return 0;
    return 1;
}

static void load_checked(const char *name, int train, dataset_t *d)
{
    char err[ERRLEN] = "";
    int rc = dataset_load(name, NULL, train, d, err, sizeof err);
    if (rc != DATA_OK) fail_msg("%s %s: %s (%s)", name, train ? "train" : "test", err, data_strerror(rc));
}

static void class_counts(const dataset_t *d, int *counts)
{
    memset(counts, 0, 10 * sizeof *counts);
    for (int i = 0; i < d->n; i++) {
        assert_in_range(d->labels[i], 0, 9);
        counts[d->labels[i]]++;
    }
}

static const char *const IDX_FILES[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                         "t10k-labels-idx1-ubyte"};

static void check_idx_real(const char *name, const char *label, const int *train_counts, const int *test_counts,
                           int train0, int test0)
{
    const char *dir = default_dir(name);
    if (!have_files(dir, IDX_FILES, 4)) {
        printf("skip: %s not found at %s\n", label, dir ? dir : "(no default directory)");
        skip();
    }
    dataset_t d;
    int counts[10];
    catalog_dataset_t e;
    assert_int_equal(catalog_dataset_get(name, &e), 0);
    load_checked(name, 1, &d);
    assert_int_equal(d.n, 60000);
    /* the catalog's counts and shape are the files' (the memory estimate uses them) */
    assert_int_equal(d.n, e.train_n);
    assert_int_equal(d.C * 10000 + d.H * 100 + d.W, e.C * 10000 + e.H * 100 + e.W);
    assert_int_equal(d.num_classes, e.classes);
    assert_int_equal(d.C, 1);
    assert_int_equal(d.H, 28);
    assert_int_equal(d.W, 28);
    assert_int_equal(d.labels[0], train0);
    class_counts(&d, counts);
    for (int c = 0; c < 10; c++) assert_int_equal(counts[c], train_counts[c]);
    dataset_free(&d);

    load_checked(name, 0, &d);
    assert_int_equal(d.n, 10000);
    assert_int_equal(d.n, e.test_n);
    assert_int_equal(d.H, 28);
    assert_int_equal(d.W, 28);
    assert_int_equal(d.labels[0], test0);
    class_counts(&d, counts);
    for (int c = 0; c < 10; c++) assert_int_equal(counts[c], test_counts[c]);
    dataset_free(&d);
}

static void test_real_fashion_mnist(void **state)
{
    static const int train[10] = {6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000};
    static const int test[10] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
    /* First labels: ankle boot (9) in train, ankle boot (9) in test. */
    check_idx_real("fashion-mnist", "Fashion-MNIST", train, test, 9, 9);
}

static void test_real_mnist(void **state)
{
    /* The well-known class counts of MNIST; the first digits are a 5 and a 7. */
    static const int train[10] = {5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949};
    static const int test[10] = {980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009};
    check_idx_real("mnist", "MNIST", train, test, 5, 7);
}

static void test_real_cifar10(void **state)
{
    static const char *const files[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                         "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
    /* Per-class counts of data_batch_1 (shared/datasets/SOURCES.md). */
    static const int batch1[10] = {1005, 974, 1032, 1016, 999, 937, 1030, 1001, 1025, 981};
    const char *dir = default_dir("cifar10");
    if (!have_files(dir, files, 6)) {
        printf("skip: CIFAR-10 not found at %s\n", dir ? dir : "(no default directory)");
        skip();
    }
    dataset_t d;
    int counts[10];
    catalog_dataset_t e;
    assert_int_equal(catalog_dataset_get("cifar10", &e), 0);
    load_checked("cifar10", 1, &d);
    assert_int_equal(d.n, 50000);
    assert_int_equal(d.n, e.train_n);
    assert_int_equal(d.C, 3);
    assert_int_equal(d.H, 32);
    assert_int_equal(d.W, 32);
    assert_int_equal(d.labels[0], 6); /* frog */
    assert_int_equal(d.labels[1], 9); /* truck */
    class_counts(&d, counts);
    for (int c = 0; c < 10; c++) assert_int_equal(counts[c], 5000);
    dataset_truncate(&d, 10000);
    class_counts(&d, counts);
    for (int c = 0; c < 10; c++) assert_int_equal(counts[c], batch1[c]);
    dataset_free(&d);

    load_checked("cifar10", 0, &d);
    assert_int_equal(d.n, 10000);
    assert_int_equal(d.n, e.test_n);
    assert_int_equal(d.labels[0], 3); /* cat */
    class_counts(&d, counts);
    for (int c = 0; c < 10; c++) assert_int_equal(counts[c], 1000);
    dataset_free(&d);
}

/* ---- main -------------------------------------------------------------------------- */

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_idx_valid_raw),
        T(test_idx_valid_gz),
        T(test_idx_valid_mixed),
        T(test_idx_missing_images),
        T(test_idx_fifo_images),
        T(test_idx_missing_labels),
        T(test_idx_unreadable_directory),
        T(test_idx_wrong_magic_images),
        T(test_idx_wrong_magic_labels),
        T(test_idx_truncated_header),
        T(test_idx_truncated_images_raw),
        T(test_idx_truncated_images_gz),
        T(test_idx_truncated_gzip_stream),
        T(test_idx_corrupt_gzip_crc),
        T(test_idx_truncated_labels),
        T(test_idx_huge_count_short_file),
        T(test_idx_absurd_dimensions),
        T(test_idx_count_mismatch),
        T(test_idx_label_out_of_range),
        T(test_idx_trailing_garbage),
        T(test_idx_null_err),
        T(test_cifar_valid_raw),
        T(test_cifar_valid_gz),
        T(test_cifar_many_records),
        T(test_cifar_missing_file),
        T(test_cifar_label_out_of_range),
        T(test_cifar_truncated_record_raw),
        T(test_cifar_truncated_record_gz),
        T(test_cifar_empty_file),
        T(test_load_probes_raw_then_gz),
        cmocka_unit_test(test_load_unknown_name),
        cmocka_unit_test(test_default_dir),
        T(test_locate),
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_shard_covers_epoch),
        cmocka_unit_test(test_shuffle_same_seed_same_permutation),
        cmocka_unit_test(test_gather_normalises),
        cmocka_unit_test(test_gather_augment),
        cmocka_unit_test(test_real_fashion_mnist),
        cmocka_unit_test(test_real_mnist),
        cmocka_unit_test(test_real_cifar10),
    };
    return cmocka_run_group_tests_name("data", tests, NULL, NULL);
}
