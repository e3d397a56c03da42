/* tests/unit/test_userdata.c - users' own data sets: the .npy header parser, the .npz
 * reader, the image folder walk, the PNG and JPEG decoders, resizing and channel
 * conversion, the decoded cache and the loader that ties them together.
 *
 * Every input is written by the test itself into a fresh mkdtemp() directory: PNGs with
 * libpng's writer, JPEGs with libjpeg's, .npz files with libzip, so nothing outside is
 * needed. The integration test tests/integration/user_data.sh covers the same formats as
 * Python writes them (PIL, NumPy) and trains on them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>
#include <zip.h>

#include "data.h"
#include "dataroot.h"
#include "dcache.h"
#include "dsload.h"
#include "dsprobe.h"
#include "fs.h"
#include "image.h"
#include "imgfolder.h"
#include "npy.h"
#include "npz.h"
#include "catalog.h"
#include "userdata.h"

#define ERRLEN 1024

/* ---- fixture ------------------------------------------------------------------------------ */

typedef struct {
    char dir[64];
    char p[512]; /* scratch path */
} fx_t;

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    strcpy(fx->dir, "/tmp/pacer-test-userdata-XXXXXX");
    if (!mkdtemp(fx->dir)) {
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    int rc = rm_tree(fx->dir);
    free(fx);
    return rc;
}

static const char *pathf(fx_t *fx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *pathf(fx_t *fx, const char *fmt, ...)
{
    char rel[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    snprintf(fx->p, sizeof fx->p, "%s/%s", fx->dir, rel);
    return fx->p;
}

static void mkdirs(fx_t *fx, const char *rel)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/%s'", fx->dir, rel);
    assert_int_equal(system(cmd), 0);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)len + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return p;
}

#define ASSERT_HAS(err, text)                                                                      \
    do {                                                                                           \
        if (!strstr((err), (text))) fail_msg("message '%s' does not contain '%s'", (err), (text)); \
    } while (0)

/* ---- writers: PNG, JPEG, .npy, .npz ------------------------------------------------------- */

/* Pixels px: rows of w samples of the color type's channels, 8 or 16 bits (16: big-endian
 * pairs), 1..4-bit gray packed as libpng expects. */
static void write_png(const char *path, int w, int h, int ctype, int depth, int interlace, const uint8_t *px,
                      size_t rowbytes, const png_color *palette, int npalette)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    assert_non_null(png);
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng could not write %s", path);
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, ctype,
                 interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (palette) png_set_PLTE(png, info, (png_colorp)palette, npalette);
    png_write_info(png, info);
    png_bytep *rows = malloc((size_t)h * sizeof *rows);
    for (int y = 0; y < h; y++) rows[y] = (png_bytep)px + (size_t)y * rowbytes;
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    fclose(f);
}

/* A gray or RGB PNG of (h, w, c) 8-bit pixels. */
static void write_png8(const char *path, int w, int h, int c, const uint8_t *px)
{
    write_png(path, w, h, c == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, 8, 0, px, (size_t)w * c, NULL, 0);
}

static void write_jpeg(const char *path, int w, int h, J_COLOR_SPACE cs, int comps, const uint8_t *px, int quality,
                       int progressive)
{
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr je;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    ci.err = jpeg_std_error(&je);
    jpeg_create_compress(&ci);
    jpeg_stdio_dest(&ci, f);
    ci.image_width = (JDIMENSION)w;
    ci.image_height = (JDIMENSION)h;
    ci.input_components = comps;
    ci.in_color_space = cs;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, quality, TRUE);
    if (progressive) jpeg_simple_progression(&ci);
    jpeg_start_compress(&ci, TRUE);
    while (ci.next_scanline < ci.image_height) {
        JSAMPROW row = (JSAMPROW)px + (size_t)ci.next_scanline * w * comps;
        jpeg_write_scanlines(&ci, &row, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    fclose(f);
}

/* A .npy file's bytes: header for descr and shape, then data. *len gets the size. */
static uint8_t *make_npy(const char *descr, int fortran, const long long *shape, int ndim, const void *data,
                         size_t nbytes, size_t *len)
{
    char dict[256], sh[128] = "";
    size_t k = 0;
    for (int i = 0; i < ndim; i++) k += (size_t)snprintf(sh + k, sizeof sh - k, "%lld, ", shape[i]);
    if (ndim > 1) sh[k - 2] = 0; /* "(a, b)" ; a 1-tuple keeps "(a, )" -> trimmed below */
    if (ndim == 1) sh[k - 1] = 0;
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }", descr,
                     fortran ? "True" : "False", sh);
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)n + pad + 1;
    *len = 10 + hlen + nbytes;
    uint8_t *b = malloc(*len);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (uint8_t)(hlen & 0xff);
    b[9] = (uint8_t)(hlen >> 8);
    memcpy(b + 10, dict, (size_t)n);
    memset(b + 10 + n, ' ', pad);
    b[10 + hlen - 1] = '\n';
    if (nbytes) memcpy(b + 10 + hlen, data, nbytes);
    return b;
}

typedef struct {
    const char *name; /* "x_train" (".npy" added) */
    uint8_t *bytes;   /* make_npy's, freed by write_npz */
    size_t len;
} member_t;

static void write_npz(const char *path, member_t *m, int n, int deflate)
{
    int errc = 0;
    zip_t *za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &errc);
    assert_non_null(za);
    for (int i = 0; i < n; i++) {
        zip_source_t *src = zip_source_buffer(za, m[i].bytes, m[i].len, 1); /* freep: libzip frees it */
        assert_non_null(src);
        char name[64];
        snprintf(name, sizeof name, "%s.npy", m[i].name);
        zip_int64_t idx = zip_file_add(za, name, src, ZIP_FL_OVERWRITE);
        assert_true(idx >= 0);
        zip_set_file_compression(za, (zip_uint64_t)idx, deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
    }
    assert_int_equal(zip_close(za), 0);
}

/* An .npz of n train and m test uint8 images (N, H, W) with labels i % classes. */
static void write_simple_npz(const char *path, int n, int m, int H, int W, int classes, int deflate)
{
    long long xs0[3] = {n, H, W}, xs1[3] = {m, H, W}, ys0[1] = {n}, ys1[1] = {m};
    uint8_t *x0 = malloc((size_t)n * H * W), *x1 = malloc((size_t)m * H * W);
    int64_t *y0 = malloc((size_t)n * 8), *y1 = malloc((size_t)m * 8);
    for (size_t i = 0; i < (size_t)n * H * W; i++) x0[i] = (uint8_t)(i * 7);
    for (size_t i = 0; i < (size_t)m * H * W; i++) x1[i] = (uint8_t)(i * 3);
    for (int i = 0; i < n; i++) y0[i] = i % classes;
    for (int i = 0; i < m; i++) y1[i] = i % classes;
    member_t mem[4] = {{"x_train", NULL, 0}, {"y_train", NULL, 0}, {"x_test", NULL, 0}, {"y_test", NULL, 0}};
    mem[0].bytes = make_npy("|u1", 0, xs0, 3, x0, (size_t)n * H * W, &mem[0].len);
    mem[1].bytes = make_npy("<i8", 0, ys0, 1, y0, (size_t)n * 8, &mem[1].len);
    mem[2].bytes = make_npy("|u1", 0, xs1, 3, x1, (size_t)m * H * W, &mem[2].len);
    mem[3].bytes = make_npy("<i8", 0, ys1, 1, y1, (size_t)m * 8, &mem[3].len);
    write_npz(path, mem, 4, deflate);
    free(x0), free(x1), free(y0), free(y1);
}

/* ---- .npy header ------------------------------------------------------------------------- */

static void parse_text(const char *header, int version, npy_header_t *h, int want_rc, const char *want_msg)
{
    uint8_t buf[1024];
    size_t n = strlen(header), pre = version == 1 ? 10 : 12;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)version;
    buf[7] = 0;
    buf[8] = (uint8_t)(n & 0xff);
    buf[9] = (uint8_t)(n >> 8);
    if (version != 1) buf[10] = buf[11] = 0;
    memcpy(buf + pre, header, n);
    char err[ERRLEN] = "";
    int rc = npy_parse_header(buf, pre + n, h, err, sizeof err);
    if (rc != want_rc) fail_msg("header %s: rc %d, want %d (%s)", header, rc, want_rc, err);
    if (want_msg) ASSERT_HAS(err, want_msg);
}

static void test_npy_valid(void **state)
{
    (void)state;
    npy_header_t h;
    parse_text("{'descr': '|u1', 'fortran_order': False, 'shape': (60000, 28, 28), }      \n", 1, &h, 0, NULL);
    assert_int_equal(h.kind, 'u');
    assert_int_equal(h.itemsize, 1);
    assert_int_equal(h.ndim, 3);
    assert_int_equal(h.shape[0], 60000);
    assert_int_equal(h.count, 60000ull * 28 * 28);
    assert_int_equal(h.nbytes, h.count);
    assert_int_equal(h.data_offset,
                     10 + strlen("{'descr': '|u1', 'fortran_order': False, 'shape': (60000, 28, 28), }      \n"));
    /* version 2, other key order, double quotes, big-endian, Fortran order, Python 2 longs */
    parse_text("{\"shape\": (3L, 2L), \"fortran_order\": True, \"descr\": \">f4\"}\n", 2, &h, 0, NULL);
    assert_int_equal(h.kind, 'f');
    assert_int_equal(h.big_endian, 1);
    assert_int_equal(h.fortran_order, 1);
    assert_int_equal(h.nbytes, 24);
    assert_int_equal(h.data_offset, 12 + strlen("{\"shape\": (3L, 2L), \"fortran_order\": True, \"descr\": \">f4\"}\n"));
    /* a scalar and a 1-tuple */
    parse_text("{'descr': '<i8', 'fortran_order': False, 'shape': (), }\n", 1, &h, 0, NULL);
    assert_int_equal(h.ndim, 0);
    assert_int_equal(h.count, 1);
    parse_text("{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }\n", 3, &h, 0, NULL);
    assert_int_equal(h.ndim, 1);
    assert_int_equal(h.nbytes, 20);
    /* an empty array is a valid header (the data set checks refuse it) */
    parse_text("{'descr': '<i4', 'fortran_order': False, 'shape': (0, 3), }\n", 1, &h, 0, NULL);
    assert_int_equal(h.count, 0);
}

static void test_npy_refused(void **state)
{
    (void)state;
    npy_header_t h;
    parse_text("{'descr': '<U10', 'fortran_order': False, 'shape': (3,), }\n", 1, &h, -1, "dtype '<U10'");
    parse_text("{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }\n", 1, &h, -1, "dtype '<f2'");
    parse_text("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (3,), }\n", 1, &h, -1, "structured");
    parse_text("{'descr': '<i4', 'fortran_order': False, 'shape': (-3,), }\n", 1, &h, -1, "negative");
    parse_text("{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2, 3, 4, 5), }\n", 1, &h, -1,
               "more than 4 dimensions");
    parse_text("{'descr': '<i4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }\n", 1, &h, -1,
               "more than");
    parse_text("{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", 1, &h, -1,
               "larger than");
    parse_text("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), 'x': 1}\n", 1, &h, -1, "unknown key 'x'");
    parse_text("{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (3,)}\n", 1, &h, -1, "twice");
    parse_text("{'descr': '<i4', 'shape': (3,)}\n", 1, &h, -1, "no 'fortran_order'");
    parse_text("{'descr': '<i4', 'fortran_order': 0, 'shape': (3,)}\n", 1, &h, -1, "True or False");
    parse_text("{'descr': '<i4', 'fortran_order': False, 'shape': (3,)} x\n", 1, &h, -1, "after the closing");
    parse_text("['descr']\n", 1, &h, -1, "expected '{'");
    parse_text("{'descr': '<i4', 'fortran_order': False, 'shape': (3 4)}\n", 1, &h, -1, "expected ',' or ')'");
    parse_text("{'descr': '<i\\x34', 'fortran_order': False, 'shape': (3,)}\n", 1, &h, -1, "escapes");
    parse_text("{'descr': '<i4', 'fortran_order': False, 'shape': (3,)\x01}\n", 1, &h, -1, "not printable");

    char err[ERRLEN];
    uint8_t junk[16] = "GIF89a.........";
    assert_int_equal(npy_parse_header(junk, sizeof junk, &h, err, sizeof err), -1);
    ASSERT_HAS(err, "no \\x93NUMPY magic");
    uint8_t v9[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 9, 0, 4, 0, 0, 0};
    assert_int_equal(npy_parse_header(v9, sizeof v9, &h, err, sizeof err), -1);
    ASSERT_HAS(err, "version 9.0");
    /* header length beyond what the buffer holds: truncated */
    uint8_t short_hdr[20] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 200, 0, '{'};
    assert_int_equal(npy_parse_header(short_hdr, sizeof short_hdr, &h, err, sizeof err), -1);
    ASSERT_HAS(err, "truncated");
    /* version 2 with a 4-byte length beyond the bound */
    uint8_t big[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0, 0, 0x10, 0};
    assert_int_equal(npy_parse_header(big, sizeof big, &h, err, sizeof err), -1);
    ASSERT_HAS(err, "header of 1048576 bytes");
}

static void test_npy_elements(void **state)
{
    (void)state;
    npy_header_t h;
    parse_text("{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }\n", 1, &h, 0, NULL);
    uint64_t st[NPY_MAX_DIMS];
    npy_strides(&h, st);
    assert_int_equal(st[0], 2);
    assert_int_equal(st[1], 4);
    uint8_t be[2] = {0xff, 0xfe}; /* -2 big-endian */
    int over = 0;
    assert_int_equal(npy_get_i64(&h, be, &over), -2);
    assert_int_equal(over, 0);
    parse_text("{'descr': '<u8', 'fortran_order': False, 'shape': (2, 3), }\n", 1, &h, 0, NULL);
    npy_strides(&h, st);
    assert_int_equal(st[0], 24);
    assert_int_equal(st[1], 8);
    uint8_t huge[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    npy_get_i64(&h, huge, &over);
    assert_int_equal(over, 1);
    parse_text("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", 1, &h, 0, NULL);
    float half = 0.5f;
    uint8_t fb[4];
    memcpy(fb, &half, 4);
    assert_true(npy_get_f64(&h, fb) == 0.5);
}

/* ---- .npz ------------------------------------------------------------------------------- */

static void test_npz_reads_arrays(void **state)
{
    fx_t *fx = *state;
    for (int deflate = 0; deflate < 2; deflate++) {
        const char *path = pathf(fx, "a%d.npz", deflate);
        write_simple_npz(path, 10, 4, 3, 2, 3, deflate);
        npz_t *z;
        char err[ERRLEN];
        assert_int_equal(npz_open(path, &z, err, sizeof err), 0);
        dsprobe_t p;
        int32_t *lab[2];
        assert_int_equal(dsprobe_npz(z, "nhwc", &p, lab, NULL, err, sizeof err), 0);
        assert_int_equal(p.classes, 3);
        assert_int_equal(p.ntrain, 10);
        assert_int_equal(p.ntest, 4);
        assert_int_equal(p.C, 1);
        assert_int_equal(p.H, 3);
        assert_int_equal(p.W, 2);
        assert_int_equal(lab[0][4], 1);
        assert_int_equal(lab[1][3], 0);
        free(lab[0]), free(lab[1]);
        npz_array_t a;
        assert_int_equal(npz_array_open(z, "x_train", &a, err, sizeof err), 0);
        uint8_t *x = malloc(a.h.nbytes);
        assert_int_equal(npz_array_read(z, &a, x, err, sizeof err), 0);
        assert_int_equal(x[5], 35);
        free(x);
        npz_array_close(&a);
        npz_close(z);
    }
}

static void expect_probe_error(fx_t *fx, member_t *m, int n, const char *layout, const char *want)
{
    const char *path = pathf(fx, "bad.npz");
    write_npz(path, m, n, 1);
    dsprobe_t p;
    char err[ERRLEN] = "";
    assert_int_equal(dsprobe("npz", path, layout, &p, err, sizeof err), -1);
    ASSERT_HAS(err, "bad.npz");
    ASSERT_HAS(err, want);
}

static void test_npz_bad_arrays(void **state)
{
    fx_t *fx = *state;
    long long xs[3] = {4, 2, 2}, x4[4] = {4, 2, 2, 4}, ys[1] = {4}, ys3[1] = {3}, y2[2] = {4, 2};
    uint8_t x[64] = {0};
    int64_t y[4] = {0, 1, 2, 1}, yneg[4] = {0, -1, 0, 0}, ybig[4] = {0, 1, 7, 1}, y8[8] = {0};
    float yf[4] = {0};

#define MEMBERS(xd, xsh, xn, ysh, yn, yd, ybytes, ydata)                                                              \
    member_t m[4] = {{"x_train", NULL, 0}, {"y_train", NULL, 0}, {"x_test", NULL, 0}, {"y_test", NULL, 0}};           \
    m[0].bytes = make_npy(xd, 0, xsh, xn, x, 16 * (sizeof(x[0])) * ((xd)[2] - '0') * ((xn) == 4 ? 4 : 1), &m[0].len); \
    m[1].bytes = make_npy(yd, 0, ysh, yn, ydata, ybytes, &m[1].len);                                                  \
    m[2].bytes = make_npy("|u1", 0, xs, 3, x, 16, &m[2].len);                                                         \
    m[3].bytes = make_npy("<i8", 0, ys, 1, y, 32, &m[3].len);

    {
        MEMBERS("|u1", xs, 3, ys, 1, "<i8", 32, y);
        free(m[3].bytes); /* left out */
        expect_probe_error(fx, m, 3, "nhwc", "no array y_test");
    }
    {
        MEMBERS("|u1", xs, 3, ys, 1, "<i8", 32, y);
        free(m[0].bytes), free(m[1].bytes); /* left out */
        expect_probe_error(fx, m + 2, 2, "nhwc", "no arrays x_train y_train");
    }
    {
        MEMBERS("<i2", xs, 3, ys, 1, "<i8", 32, y);
        expect_probe_error(fx, m, 4, "nhwc", "x_train: dtype '<i2'");
    }
    {
        MEMBERS("|u1", x4, 4, ys, 1, "<i8", 32, y);
        expect_probe_error(fx, m, 4, "nhwc", "4 channels");
    }
    {
        MEMBERS("|u1", xs, 3, ys3, 1, "<i8", 24, y);
        expect_probe_error(fx, m, 4, "nhwc", "y_train has 3 labels, x_train has 4 images");
    }
    {
        MEMBERS("|u1", xs, 3, ys, 1, "<f4", 16, yf);
        expect_probe_error(fx, m, 4, "nhwc", "y_train: dtype '<f4': labels must be integers");
    }
    {
        MEMBERS("|u1", xs, 3, y2, 2, "<i8", 64, y8);
        expect_probe_error(fx, m, 4, "nhwc", "labels must be (N,) or (N, 1)");
    }
    {
        MEMBERS("|u1", xs, 3, ys, 1, "<i8", 32, yneg);
        expect_probe_error(fx, m, 4, "nhwc", "label -1 at index 1");
    }
    {
        /* the test split has label 3, the training labels are 0..2 */
        MEMBERS("|u1", xs, 3, ys, 1, "<i8", 32, y);
        free(m[3].bytes);
        int64_t yt[4] = {0, 3, 0, 0};
        m[3].bytes = make_npy("<i8", 0, ys, 1, yt, 32, &m[3].len);
        expect_probe_error(fx, m, 4, "nhwc", "y_test: label 3 at index 1 is not a training class");
    }
    {
        MEMBERS("|u1", xs, 3, ys, 1, "<i8", 32, ybig);
        (void)ybig;
        /* fine: 8 classes (labels up to 7) */
        const char *path = pathf(fx, "ok.npz");
        write_npz(path, m, 4, 0);
        dsprobe_t p;
        char err[ERRLEN];
        assert_int_equal(dsprobe("npz", path, "nhwc", &p, err, sizeof err), 0);
        assert_int_equal(p.classes, 8);
    }
    {
        /* a member whose header announces more data than it holds */
        long long more[3] = {40, 2, 2};
        MEMBERS("|u1", xs, 3, ys, 1, "<i8", 32, y);
        free(m[0].bytes);
        m[0].bytes = make_npy("|u1", 0, more, 3, x, 16, &m[0].len);
        expect_probe_error(fx, m, 4, "nhwc", "x_train: truncated");
    }
#undef MEMBERS
}

static void test_npz_damaged_archive(void **state)
{
    fx_t *fx = *state;
    char err[ERRLEN];
    npz_t *z;
    const char *path = pathf(fx, "plain.npz");
    write_bytes(path, "not a zip at all", 16);
    assert_int_equal(npz_open(path, &z, err, sizeof err), -1);
    ASSERT_HAS(err, "not a zip archive");
    assert_int_equal(npz_open(pathf(fx, "missing.npz"), &z, err, sizeof err), -1);
    ASSERT_HAS(err, "missing.npz: no such file");

    /* a stored archive with one byte of x_train's data flipped: the CRC catches it */
    path = pathf(fx, "crc.npz");
    write_simple_npz(path, 10, 4, 3, 2, 3, 0);
    size_t n;
    uint8_t *b = read_file(path, &n);
    /* the data of x_train follows its local header ("x_train.npy") and the .npy header */
    uint8_t *at = memmem(b, n, "x_train.npy", 11);
    assert_non_null(at);
    at = memmem(at, n - (size_t)(at - b), "}", 1);
    assert_non_null(at);
    at = memchr(at, '\n', 80);
    assert_non_null(at);
    at[3] ^= 0x55;
    write_bytes(path, b, n);
    free(b);
    assert_int_equal(npz_open(path, &z, err, sizeof err), 0);
    npz_array_t a;
    assert_int_equal(npz_array_open(z, "x_train", &a, err, sizeof err), 0);
    uint8_t *x = malloc(a.h.nbytes);
    assert_int_equal(npz_array_read(z, &a, x, err, sizeof err), -1);
    ASSERT_HAS(err, "x_train: CRC error");
    free(x);
    npz_array_close(&a);
    npz_close(z);

    /* cut in half: the central directory is gone */
    path = pathf(fx, "cut.npz");
    write_simple_npz(path, 10, 4, 3, 2, 3, 1);
    b = read_file(path, &n);
    write_bytes(path, b, n / 2);
    free(b);
    assert_int_equal(npz_open(path, &z, err, sizeof err), -1);
    ASSERT_HAS(err, "cut.npz");
}

/* ---- images ----------------------------------------------------------------------------- */

static void decode_file(const char *path, image_t *img, int want_rc, const char *want_msg)
{
    uint8_t *buf = NULL;
    size_t cap = 0;
    char err[ERRLEN] = "";
    int rc = image_load(path, &buf, &cap, img, err, sizeof err);
    free(buf);
    if (rc != want_rc) fail_msg("%s: rc %d, want %d (%s)", path, rc, want_rc, err);
    if (want_msg) {
        ASSERT_HAS(err, path);
        ASSERT_HAS(err, want_msg);
    }
}

static void test_png_kinds(void **state)
{
    fx_t *fx = *state;
    image_t img = {0};
    enum { W = 5, H = 3 };
    uint8_t rgb[H * W * 3], gray[H * W], rgba[H * W * 4], ga[H * W * 2], g16[H * W * 2], pal[H * W], g1[H * 1];
    for (int i = 0; i < H * W; i++) {
        gray[i] = (uint8_t)(i * 17);
        for (int k = 0; k < 3; k++) rgb[3 * i + k] = (uint8_t)(i * 10 + k);
        for (int k = 0; k < 3; k++) rgba[4 * i + k] = rgb[3 * i + k];
        rgba[4 * i + 3] = 7;
        ga[2 * i] = gray[i], ga[2 * i + 1] = 9;
        g16[2 * i] = gray[i], g16[2 * i + 1] = 0x80; /* big-endian: gray[i] * 256 + 128 */
        pal[i] = (uint8_t)(i % 2);
    }
    for (int y = 0; y < H; y++) g1[y] = 0xa0; /* 1-bit: 1 0 1 0 0 */

    write_png8(pathf(fx, "rgb.png"), W, H, 3, rgb);
    decode_file(fx->p, &img, IMAGE_OK, NULL);
    assert_int_equal(img.c, 3), assert_int_equal(img.w, W), assert_int_equal(img.h, H);
    assert_memory_equal(img.px, rgb, sizeof rgb);

    write_png8(pathf(fx, "gray.png"), W, H, 1, gray);
    decode_file(fx->p, &img, IMAGE_OK, NULL);
    assert_int_equal(img.c, 1);
    assert_memory_equal(img.px, gray, sizeof gray);

    write_png(pathf(fx, "rgba.png"), W, H, PNG_COLOR_TYPE_RGB_ALPHA, 8, 0, rgba, W * 4, NULL, 0);
    decode_file(fx->p, &img, IMAGE_OK, NULL);
    assert_int_equal(img.c, 3);
    assert_memory_equal(img.px, rgb, sizeof rgb); /* alpha dropped, colour untouched */

    write_png(pathf(fx, "ga.png"), W, H, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 0, ga, W * 2, NULL, 0);
    decode_file(fx->p, &img, IMAGE_OK, NULL);
    assert_int_equal(img.c, 1);
    assert_memory_equal(img.px, gray, sizeof gray);

    write_png(pathf(fx, "g16.png"), W, H, PNG_COLOR_TYPE_GRAY, 16, 0, g16, W * 2, NULL, 0);
    decode_file(fx->p, &img, IMAGE_OK, NULL);
    assert_int_equal(img.c, 1);
    /* (v * 256 + 128) scaled to 8 bits with rounding is v for v < 255 (libpng's scale_16) */
    for (int i = 0; i < H * W; i++) assert_true(abs((int)img.px[i] - gray[i]) <= 1);

    png_color palette[2] = {{10, 20, 30}, {200, 100, 50}};
    write_png(pathf(fx, "pal.png"), W, H, PNG_COLOR_TYPE_PALETTE, 8, 0, pal, W, palette, 2);
    decode_file(fx->p, &img, IMAGE_OK, NULL);
    assert_int_equal(img.c, 3);
    assert_int_equal(img.px[0], 10), assert_int_equal(img.px[3], 200), assert_int_equal(img.px[5], 50);

    write_png(pathf(fx, "g1.png"), W, H, PNG_COLOR_TYPE_GRAY, 1, 0, g1, 1, NULL, 0);
    decode_file(fx->p, &img, IMAGE_OK, NULL);
    assert_int_equal(img.c, 1);
    assert_int_equal(img.px[0], 255), assert_int_equal(img.px[1], 0), assert_int_equal(img.px[2], 255);

    write_png(pathf(fx, "interlaced.png"), W, H, PNG_COLOR_TYPE_RGB, 8, 1, rgb, W * 3, NULL, 0);
    decode_file(fx->p, &img, IMAGE_OK, NULL);
    assert_memory_equal(img.px, rgb, sizeof rgb);
    image_free(&img);
}

static void test_jpeg_kinds(void **state)
{
    fx_t *fx = *state;
    image_t img = {0};
    enum { W = 16, H = 8 };
    uint8_t rgb[H * W * 3], gray[H * W], cmyk[H * W * 4];
    for (int i = 0; i < H * W; i++) {
        gray[i] = 128;
        rgb[3 * i] = 200, rgb[3 * i + 1] = 50, rgb[3 * i + 2] = 20;
        for (int k = 0; k < 4; k++) cmyk[4 * i + k] = 100;
    }
    write_jpeg(pathf(fx, "rgb.jpg"), W, H, JCS_RGB, 3, rgb, 95, 0);
    decode_file(fx->p, &img, IMAGE_OK, NULL);
    assert_int_equal(img.c, 3), assert_int_equal(img.w, W), assert_int_equal(img.h, H);
    for (int i = 0; i < H * W * 3; i++) assert_true(abs((int)img.px[i] - rgb[i]) <= 4); /* lossy */

    write_jpeg(pathf(fx, "gray.jpg"), W, H, JCS_GRAYSCALE, 1, gray, 95, 1);
    decode_file(fx->p, &img, IMAGE_OK, NULL);
    assert_int_equal(img.c, 1);
    for (int i = 0; i < H * W; i++) assert_true(abs((int)img.px[i] - 128) <= 2);

    write_jpeg(pathf(fx, "cmyk.jpg"), W, H, JCS_CMYK, 4, cmyk, 90, 0);
    decode_file(fx->p, &img, IMAGE_EUNSUPPORTED, "CMYK JPEG is not supported");
    image_free(&img);
}

static void test_image_bad_files(void **state)
{
    fx_t *fx = *state;
    image_t img = {0};
    uint8_t rgb[4 * 4 * 3] = {0};
    size_t n;

    write_bytes(pathf(fx, "empty.png"), "", 0);
    decode_file(fx->p, &img, IMAGE_EFORMAT, "empty file (0 bytes)");
    write_bytes(pathf(fx, "text.png"), "hello world", 11);
    decode_file(fx->p, &img, IMAGE_EFORMAT, "text.png: format not recognised (pacer reads PNG and JPEG images)");
    write_bytes(pathf(fx, "gif.jpg"), "GIF89a\x01\x00\x01\x00", 10);
    decode_file(fx->p, &img, IMAGE_EFORMAT, "format not recognised");
    {
        /* never a byte of the file in the message: neither as text nor as hex */
        char err[ERRLEN] = "";
        uint8_t *buf = NULL;
        size_t cap = 0;
        write_bytes(pathf(fx, "pw.png"), "root:x:0:0:root", 15);
        assert_int_equal(image_load(fx->p, &buf, &cap, &img, err, sizeof err), IMAGE_EFORMAT);
        assert_null(strstr(err, "root:x"));
        assert_null(strstr(err, "72 6f"));
        assert_null(strstr(err, "starts with"));
        free(buf);
    }
    decode_file(pathf(fx, "nope.png"), &img, IMAGE_EIO, "nope.png: no such file");

    /* truncated PNG: cut in the image data, and cut just before IEND */
    write_png8(pathf(fx, "t.png"), 4, 4, 3, rgb);
    uint8_t *b = read_file(fx->p, &n);
    write_bytes(pathf(fx, "cut.png"), b, n / 2);
    decode_file(fx->p, &img, IMAGE_EFORMAT, "corrupt PNG");
    write_bytes(pathf(fx, "noend.png"), b, n - 12);
    decode_file(fx->p, &img, IMAGE_EFORMAT, "truncated");
    /* a flipped byte in IDAT: CRC error */
    uint8_t *idat = memmem(b, n, "IDAT", 4);
    assert_non_null(idat);
    idat[6] ^= 0xff;
    write_bytes(pathf(fx, "crc.png"), b, n);
    decode_file(fx->p, &img, IMAGE_EFORMAT, "corrupt PNG");
    free(b);

    /* truncated and corrupt JPEG: libjpeg would fill with gray; here it is an error */
    write_jpeg(pathf(fx, "t.jpg"), 16, 16, JCS_RGB, 3, (uint8_t[16 * 16 * 3]){0}, 90, 0);
    b = read_file(fx->p, &n);
    write_bytes(pathf(fx, "cut.jpg"), b, n - 40);
    decode_file(fx->p, &img, IMAGE_EFORMAT, "corrupt JPEG");
    write_bytes(pathf(fx, "head.jpg"), b, 3);
    decode_file(fx->p, &img, IMAGE_EFORMAT, "corrupt JPEG");
    free(b);

    /* decompression bombs: headers announcing more than the bounds, refused from IHDR / SOF */
    /* A PNG of 20000 x 20000: only its header (the IHDR, written by libpng itself so that
     * its CRC is right); the rows are never needed. */
    {
        FILE *f = fopen(pathf(fx, "bomb.png"), "wb");
        png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
        png_infop info = png_create_info_struct(png);
        png_init_io(png, f);
        png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
        png_set_IHDR(png, info, 20000, 20000, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                     PNG_FILTER_TYPE_DEFAULT);
        png_write_info(png, info);
        static const png_byte idat_tag[] = "IDAT", iend_tag[] = "IEND";
        png_write_chunk(png, idat_tag, (png_const_bytep) "\x78\x9c", 2);
        png_write_chunk(png, iend_tag, NULL, 0);
        png_destroy_write_struct(&png, &info);
        fclose(f);
    }
    decode_file(pathf(fx, "bomb.png"), &img, IMAGE_ETOOBIG, "larger than pacer decodes");
    /* JPEG: a SOF announcing 20000 x 20000 */
    write_jpeg(pathf(fx, "j.jpg"), 16, 16, JCS_GRAYSCALE, 1, (uint8_t[256]){0}, 90, 0);
    b = read_file(fx->p, &n);
    uint8_t *sof = memmem(b, n, "\xff\xc0", 2);
    assert_non_null(sof);
    sof[5] = 0x4e, sof[6] = 0x20, sof[7] = 0x4e, sof[8] = 0x20; /* height, width 20000 */
    write_bytes(pathf(fx, "jbomb.jpg"), b, n);
    free(b);
    decode_file(fx->p, &img, IMAGE_ETOOBIG, "20000 x 20000");
    image_free(&img);
}

static void test_resize_matches_torch(void **state)
{
    (void)state;
    /* torch.nn.functional.interpolate(x.float(), size, mode="bilinear",
     * align_corners=False).round() of this 3 x 3 image (torch 1.13, Debian's python3-torch):
     * the convention torchvision's resize(antialias=False) uses for uint8 tensors. */
    const uint8_t src[9] = {0, 100, 7, 200, 255, 30, 13, 77, 250};
    const uint8_t want54[20] = {0, 62, 65, 7, 80, 131, 107, 16, 200, 234, 171, 30, 88, 126, 153, 162, 13, 53, 142, 250};
    const uint8_t want22[4] = {72, 44, 75, 177};
    const uint8_t want25[10] = {50, 86, 139, 63, 13, 60, 84, 122, 166, 195};
    const uint8_t want77[49] = {0,   14,  57, 100, 60,  20,  7,   29,  42,  82, 122, 74,  26,  10,  114, 125, 157,
                                189, 116, 44, 20,  200, 208, 231, 255, 159, 62, 30,  120, 128, 153, 179, 155, 132,
                                124, 40,  49, 76,  102, 152, 202, 219, 13,  22, 50,  77,  151, 225, 250};
    uint8_t out[64];
    image_resize_bilinear(src, 3, 3, 1, out, 5, 4);
    assert_memory_equal(out, want54, sizeof want54); /* 62.5 -> 62, ties to even */
    image_resize_bilinear(src, 3, 3, 1, out, 2, 2);
    assert_memory_equal(out, want22, sizeof want22);
    image_resize_bilinear(src, 3, 3, 1, out, 2, 5);
    assert_memory_equal(out, want25, sizeof want25); /* 85.5 -> 86 */
    image_resize_bilinear(src, 3, 3, 1, out, 7, 7);
    assert_memory_equal(out, want77, sizeof want77);
    image_resize_bilinear(src, 3, 3, 1, out, 1, 1);
    assert_int_equal(out[0], 255);
    /* three channels resize independently */
    uint8_t src3[27], out3[60];
    for (int i = 0; i < 9; i++) src3[3 * i] = src[i], src3[3 * i + 1] = 0, src3[3 * i + 2] = (uint8_t)(255 - src[i]);
    image_resize_bilinear(src3, 3, 3, 3, out3, 5, 4);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(out3[3 * i], want54[i]);
        assert_int_equal(out3[3 * i + 1], 0);
    }
}

static void test_convert_channels(void **state)
{
    (void)state;
    uint8_t g[2] = {7, 200}, rgb[6];
    image_convert_channels(g, 1, rgb, 3, 1, 2);
    assert_memory_equal(rgb, ((uint8_t[6]){7, 7, 7, 200, 200, 200}), 6);
    uint8_t c[6] = {255, 0, 0, 10, 20, 30}, l[2];
    image_convert_channels(c, 3, l, 1, 1, 2);
    /* PIL: Image.new("RGB", (1, 1), (255, 0, 0)).convert("L") is 76; (10, 20, 30) is 18 */
    assert_int_equal(l[0], 76);
    assert_int_equal(l[1], 18);
}

/* ---- image folders ------------------------------------------------------------------------ */

/* DIR/SPLIT/CLASS/NAME as an 4 x 4 RGB PNG of value v. */
static void put_png(fx_t *fx, const char *rel, uint8_t v)
{
    uint8_t px[4 * 4 * 3];
    memset(px, v, sizeof px);
    char dir[400];
    snprintf(dir, sizeof dir, "%s", rel);
    *strrchr(dir, '/') = 0;
    mkdirs(fx, dir);
    write_png8(pathf(fx, "%s", rel), 4, 4, 3, px);
}

static void expect_scan_error(fx_t *fx, const char *root, const char *want)
{
    imgfolder_t f;
    char err[ERRLEN] = "";
    assert_int_equal(imgfolder_scan(pathf(fx, "%s", root), 1, &f, err, sizeof err), -1);
    ASSERT_HAS(err, want);
}

static void test_folder_scan(void **state)
{
    fx_t *fx = *state;
    put_png(fx, "ds/train/dog/b.png", 1);
    put_png(fx, "ds/train/dog/a.png", 2);
    put_png(fx, "ds/train/cat/z.png", 3);
    put_png(fx, "ds/train/Zebra/1.png", 4);
    put_png(fx, "ds/test/dog/q.png", 5);
    write_bytes(pathf(fx, "ds/train/dog/.DS_Store"), "x", 1); /* hidden: ignored */
    mkdirs(fx, "ds/train/.git");
    imgfolder_t f;
    char err[ERRLEN];
    assert_int_equal(imgfolder_scan(pathf(fx, "ds"), 1, &f, err, sizeof err), 0);
    assert_int_equal(f.nclasses, 3);
    /* byte order: upper case first, as Python's sorted() */
    assert_string_equal(f.classes[0], "Zebra");
    assert_string_equal(f.classes[1], "cat");
    assert_string_equal(f.classes[2], "dog");
    assert_int_equal(f.ntrain, 4);
    assert_int_equal(f.ntest, 1);
    assert_non_null(strstr(f.train[2].path, "dog/a.png"));
    assert_int_equal(f.train[2].label, 2);
    assert_int_equal(f.test[0].label, 2);
    assert_string_equal(f.test_split, "test");
    uint64_t fp = f.fingerprint;
    imgfolder_free(&f);
    /* a new modification time changes the fingerprint */
    struct timeval tv[2] = {{1000000, 0}, {1000000, 0}};
    assert_int_equal(utimes(pathf(fx, "ds/train/dog/a.png"), tv), 0);
    assert_int_equal(imgfolder_scan(pathf(fx, "ds"), 1, &f, err, sizeof err), 0);
    assert_true(f.fingerprint != fp);
    imgfolder_free(&f);
    assert_int_equal(imgfolder_detect(pathf(fx, "ds")), 1);
    assert_int_equal(imgfolder_detect(pathf(fx, "ds/train")), 0);

    expect_scan_error(fx, "nothing", "nothing: No such file");
    put_png(fx, "a/test/x/1.png", 1);
    expect_scan_error(fx, "a", "a: no train/ folder");
    put_png(fx, "b/train/x/1.png", 1);
    expect_scan_error(fx, "b", "b: no test/ (or val/) folder");
    put_png(fx, "c/train/x/1.png", 1);
    put_png(fx, "c/test/x/1.png", 1);
    put_png(fx, "c/val/x/1.png", 1);
    expect_scan_error(fx, "c", "both test/ and val/");
    put_png(fx, "d/train/x/1.png", 1);
    put_png(fx, "d/train/readme.png", 1);
    put_png(fx, "d/val/x/1.png", 1);
    expect_scan_error(fx, "d", "d/train/readme.png: a file outside the class folders");
    put_png(fx, "e/train/x/sub/1.png", 1);
    put_png(fx, "e/test/x/1.png", 1);
    expect_scan_error(fx, "e", "e/train/x/sub: a folder inside a class folder");
    put_png(fx, "f/train/x/1.png", 1);
    mkdirs(fx, "f/train/y");
    put_png(fx, "f/test/x/1.png", 1);
    expect_scan_error(fx, "f", "f/train/y: a class folder without images");
    put_png(fx, "g/train/x/1.png", 1);
    put_png(fx, "g/test/w/1.png", 1);
    expect_scan_error(fx, "g", "g/test/w: a class the training split");
    mkdirs(fx, "h/train");
    put_png(fx, "h/test/w/1.png", 1);
    expect_scan_error(fx, "h", "h/train: no class folders");
}

/* ---- the decoded cache -------------------------------------------------------------------- */

static void test_cache_header(void **state)
{
    (void)state;
    dcache_header_t h = {.key = 1, .fingerprint = 2, .C = 3, .H = 32, .W = 30, .classes = 10};
    h.n[0] = 100, h.n[1] = 7;
    for (int c = 0; c < 3; c++) h.mean[c] = 0.5, h.std[c] = 0.25;
    strcpy(h.source, "/data/x");
    assert_int_equal(dcache_layout(&h), 0);
    assert_int_equal(h.offset[0], DCACHE_HEADER_BYTES);
    assert_int_equal(h.offset[1] % 4096, 0);
    assert_int_equal(h.file_bytes, h.offset[1] + dcache_region_bytes(7, 3, 32, 30));
    uint8_t buf[DCACHE_HEADER_BYTES];
    dcache_header_write(&h, buf);
    dcache_header_t got;
    char err[ERRLEN];
    assert_int_equal(dcache_header_parse(buf, sizeof buf, h.file_bytes, &got, err, sizeof err), 0);
    assert_int_equal(got.n[0], 100);
    assert_int_equal(got.W, 30);
    assert_string_equal(got.source, "/data/x");
    assert_true(got.std[2] == 0.25);
    /* every damage is refused */
    assert_int_equal(dcache_header_parse(buf, sizeof buf, h.file_bytes - 1, &got, err, sizeof err), -1);
    ASSERT_HAS(err, "file of");
    assert_int_equal(dcache_header_parse(buf, 100, h.file_bytes, &got, err, sizeof err), -1);
    buf[40] ^= 1;
    assert_int_equal(dcache_header_parse(buf, sizeof buf, h.file_bytes, &got, err, sizeof err), -1);
    ASSERT_HAS(err, "CRC");
    dcache_header_t bad = h;
    bad.std[1] = 0;
    dcache_header_write(&bad, buf);
    assert_int_equal(dcache_header_parse(buf, sizeof buf, h.file_bytes, &got, err, sizeof err), -1);
    ASSERT_HAS(err, "statistics");
    bad = h;
    bad.C = 4;
    dcache_header_write(&bad, buf);
    assert_int_equal(dcache_header_parse(buf, sizeof buf, h.file_bytes, &got, err, sizeof err), -1);
    bad = h;
    bad.offset[1] += 4096;
    dcache_header_write(&bad, buf);
    assert_int_equal(dcache_header_parse(buf, sizeof buf, h.file_bytes, &got, err, sizeof err), -1);
    ASSERT_HAS(err, "offset");
    memcpy(buf, "PACERDC2", 8);
    assert_int_equal(dcache_header_parse(buf, sizeof buf, h.file_bytes, &got, err, sizeof err), -1);
    ASSERT_HAS(err, "magic");

    char path[256];
    assert_int_equal(dcache_path("/c", "my data/set", 0xabc, path, sizeof path), 0);
    assert_string_equal(path, "/c/my_data_set-0000000000000abc.pdc");
}

/* ---- the loader --------------------------------------------------------------------------- */

static dsload_opts_t opts_for(const char *format, const char *path, int C, int H, int W, int resize, const char *cache)
{
    catalog_format_t f;
    assert_int_equal(catalog_format_parse(format, &f), 0);
    dsload_opts_t o = {f, path, "nhwc", C, H, W, resize, cache, 0, 0};
    return o;
}

static void test_load_folder_cached(void **state)
{
    fx_t *fx = *state;
    /* classes a (value 10) and b (value 20), 3 + 2 training images, 1 + 1 test; one JPEG */
    put_png(fx, "ds/train/a/1.png", 10);
    put_png(fx, "ds/train/a/2.png", 10);
    put_png(fx, "ds/train/b/1.png", 20);
    put_png(fx, "ds/train/b/2.png", 20);
    put_png(fx, "ds/test/a/1.png", 10);
    put_png(fx, "ds/test/b/1.png", 20);
    uint8_t gray[4 * 4];
    memset(gray, 10, sizeof gray);
    write_jpeg(pathf(fx, "ds/train/a/3.jpg"), 4, 4, JCS_GRAYSCALE, 1, gray, 100, 0);
    char ds[300], cache[300], err[ERRLEN];
    snprintf(ds, sizeof ds, "%s/ds", fx->dir);
    snprintf(cache, sizeof cache, "%s/cache", fx->dir);
    dataset_t tr, te;
    dsload_info_t info;
    dsload_opts_t o = opts_for("imagefolder", ds, 3, 4, 4, 0, cache);
    if (dsload_user(&o, &tr, &te, &info, err, sizeof err) != DATA_OK) fail_msg("%s", err);
    assert_int_equal(info.classes, 2);
    assert_int_equal(info.cache_built, 1);
    assert_int_equal(tr.n, 5);
    assert_int_equal(te.n, 2);
    assert_int_equal(tr.C, 3);
    assert_int_equal(tr.num_classes, 2);
    assert_non_null(tr.map);
    assert_int_equal(tr.labels[2], 0); /* a/3.jpg */
    assert_int_equal(tr.labels[3], 1);
    assert_int_equal(tr.pixels[0], 10);
    assert_true(abs((int)tr.pixels[2 * 48 + 47] - 10) <= 1); /* the gray JPEG as RGB */
    assert_int_equal(tr.pixels[3 * 48 + 20], 20);
    /* mean: 3 images of ~10 and 2 of 20, on [0, 1] */
    assert_true(fabs(info.mean[0] - (3 * 10 + 2 * 20) / 5.0 / 255.0) < 0.002);
    assert_true(fabs(tr.mean[1] - info.mean[1]) < 1e-6);
    char built[4096];
    snprintf(built, sizeof built, "%s", info.cache_path);
    assert_non_null(strstr(built, "/cache/ds-"));
    dataset_free(&tr);
    dataset_free(&te);

    /* again: the cache is mapped, nothing decoded */
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_OK);
    assert_int_equal(info.cache_built, 0);
    assert_string_equal(info.cache_path, built);
    assert_true(info.decode_s == 0);
    dataset_free(&tr);
    dataset_free(&te);

    /* a changed file rebuilds it, in place of the old one */
    put_png(fx, "ds/train/b/2.png", 30);
    struct timeval tv[2] = {{2000000, 0}, {2000000, 0}};
    utimes(pathf(fx, "ds/train/b/2.png"), tv);
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_OK);
    assert_int_equal(info.cache_built, 1);
    ASSERT_HAS(info.cache_note, "stale");
    assert_int_equal(tr.pixels[4 * 48], 30);
    dataset_free(&tr);
    dataset_free(&te);

    /* a damaged cache file is rebuilt too */
    FILE *f = fopen(built, "r+b");
    fseek(f, 33, SEEK_SET);
    fputc(0x7f, f);
    fclose(f);
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_OK);
    assert_int_equal(info.cache_built, 1);
    ASSERT_HAS(info.cache_note, "damaged");
    dataset_free(&tr);
    dataset_free(&te);

    /* gray model: RGB images become luma; resize 4x4 -> 2x3 */
    o = opts_for("imagefolder", ds, 1, 2, 3, 1, cache);
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_OK);
    assert_int_equal(tr.C, 1);
    assert_int_equal(tr.H, 2);
    assert_int_equal(tr.W, 3);
    assert_int_equal(tr.pixels[0], 10);
    dataset_free(&tr);
    dataset_free(&te);

    /* without resize, an image of another size is an error naming it */
    o = opts_for("imagefolder", ds, 3, 8, 8, 0, cache);
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_EFORMAT);
    ASSERT_HAS(err, "ds/train/a/1.png: image is 4x4, the model takes 8x8 (set dataset.resize to [8, 8]");

    /* a built-in reader's format (or no format) has no reader here: refused by name */
    o = opts_for("imagefolder", ds, 3, 4, 4, 0, cache);
    o.format = CATALOG_FORMAT_CIFAR;
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_EUNKNOWN);
    ASSERT_HAS(err, "dataset.format cifar is not a user's format (imagefolder or npz)");
    o.format = CATALOG_FORMAT_N;
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_EUNKNOWN);
    ASSERT_HAS(err, "dataset.format unknown is not a user's format");

    /* no cache directory usable: decoded into memory, and said why */
    write_bytes(pathf(fx, "file"), "x", 1);
    o = opts_for("imagefolder", ds, 3, 4, 4, 0, fx->p);
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_OK);
    assert_string_equal(info.cache_path, "");
    ASSERT_HAS(info.cache_note, "cannot create the cache directory");
    assert_int_equal(tr.pixels[0], 10);
    dataset_free(&tr);
    dataset_free(&te);
}

static void test_load_folder_bad_image(void **state)
{
    fx_t *fx = *state;
    put_png(fx, "ds/train/a/1.png", 10);
    put_png(fx, "ds/test/a/1.png", 10);
    write_bytes(pathf(fx, "ds/train/a/2.png"), "", 0);
    char ds[300], cache[300], err[ERRLEN];
    snprintf(ds, sizeof ds, "%s/ds", fx->dir);
    snprintf(cache, sizeof cache, "%s/cache", fx->dir);
    dataset_t tr, te;
    dsload_info_t info;
    dsload_opts_t o = opts_for("imagefolder", ds, 3, 4, 4, 0, cache);
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_EFORMAT);
    ASSERT_HAS(err, "ds/train/a/2.png: empty file");
    /* nothing half-built is left behind as a cache */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls %s | grep -v '\\.lock$' | grep -q .", cache);
    assert_int_not_equal(system(cmd), 0);
}

static void test_load_npz(void **state)
{
    fx_t *fx = *state;
    char cache[300], err[ERRLEN];
    snprintf(cache, sizeof cache, "%s/cache", fx->dir);
    const char *path = pathf(fx, "d.npz");
    write_simple_npz(path, 10, 4, 3, 2, 3, 1);
    dataset_t tr, te;
    dsload_info_t info;
    dsload_opts_t o = opts_for("npz", path, 1, 3, 2, 0, cache);
    if (dsload_user(&o, &tr, &te, &info, err, sizeof err) != DATA_OK) fail_msg("%s", err);
    assert_int_equal(tr.n, 10);
    assert_int_equal(te.n, 4);
    assert_int_equal(tr.num_classes, 3);
    for (int i = 0; i < 60; i++) assert_int_equal(tr.pixels[i], (uint8_t)(i * 7));
    for (int i = 0; i < 24; i++) assert_int_equal(te.pixels[i], (uint8_t)(i * 3));
    assert_int_equal(tr.labels[5], 2);
    ASSERT_HAS(tr.label_source, "d.npz: y_train");
    dataset_free(&tr);
    dataset_free(&te);

    /* float32 (N, C, H, W) with layout nchw, values on [0, 1], to a 3-channel model */
    long long xs[4] = {2, 3, 1, 2}, ys[1] = {2};
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)i / 11.0f;
    int32_t y[2] = {1, 0};
    member_t m[4] = {{"x_train", NULL, 0}, {"y_train", NULL, 0}, {"x_test", NULL, 0}, {"y_test", NULL, 0}};
    m[0].bytes = make_npy("<f4", 0, xs, 4, x, sizeof x, &m[0].len);
    m[1].bytes = make_npy("<i4", 0, ys, 1, y, sizeof y, &m[1].len);
    m[2].bytes = make_npy("<f4", 0, xs, 4, x, sizeof x, &m[2].len);
    m[3].bytes = make_npy("<i4", 0, ys, 1, y, sizeof y, &m[3].len);
    path = pathf(fx, "f.npz");
    write_npz(path, m, 4, 0);
    o = opts_for("npz", path, 3, 1, 2, 0, cache);
    o.layout = "nchw";
    if (dsload_user(&o, &tr, &te, &info, err, sizeof err) != DATA_OK) fail_msg("%s", err);
    /* sample 0, channel 1, pixel 1 is element 3: 3/11 * 255 = 69.5 -> 70 */
    assert_int_equal(tr.pixels[3], 70);
    assert_int_equal(tr.pixels[6 + 0], (uint8_t)lrint(6 / 11.0 * 255));
    dataset_free(&tr);
    dataset_free(&te);

    /* float pixels beyond [0, 1] are refused, not silently clipped */
    x[5] = 255.0f;
    m[0].bytes = make_npy("<f4", 0, xs, 4, x, sizeof x, &m[0].len);
    m[1].bytes = make_npy("<i4", 0, ys, 1, y, sizeof y, &m[1].len);
    m[2].bytes = make_npy("<f4", 0, xs, 4, x, sizeof x, &m[2].len);
    m[3].bytes = make_npy("<i4", 0, ys, 1, y, sizeof y, &m[3].len);
    path = pathf(fx, "g.npz");
    write_npz(path, m, 4, 0);
    o = opts_for("npz", path, 3, 1, 2, 0, cache);
    o.layout = "nchw";
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_EFORMAT);
    ASSERT_HAS(err, "g.npz: x_train: value 255 of sample 0 is outside [0, 1]");
}

/* Names in dir containing ".tmp." (a build's temporary file), 0 when none. */
static int count_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* An .npz of n (N, H, W) uint8 training images, in C or Fortran order, pixel (i, y, x) =
 * i * 7 + y * 13 + x; one test image; labels i % 2. */
static void write_big_npz(const char *path, int n, int H, int W, int fortran)
{
    const size_t len = (size_t)n * H * W;
    uint8_t *x = malloc(len);
    for (int i = 0; i < n; i++)
        for (int y = 0; y < H; y++)
            for (int k = 0; k < W; k++) {
                size_t at = fortran ? (size_t)i + (size_t)n * ((size_t)y + (size_t)H * k) : ((size_t)i * H + y) * W + k;
                x[at] = (uint8_t)(i * 7 + y * 13 + k);
            }
    int64_t *y = malloc((size_t)n * 8), yt[1] = {0};
    for (int i = 0; i < n; i++) y[i] = i % 2;
    long long xs[3] = {n, H, W}, ys[1] = {n}, ts[3] = {1, H, W}, tys[1] = {1};
    uint8_t *xt = calloc((size_t)H * W, 1);
    member_t m[4] = {{"x_train", NULL, 0}, {"y_train", NULL, 0}, {"x_test", NULL, 0}, {"y_test", NULL, 0}};
    m[0].bytes = make_npy("|u1", fortran, xs, 3, x, len, &m[0].len);
    m[1].bytes = make_npy("<i8", 0, ys, 1, y, (size_t)n * 8, &m[1].len);
    m[2].bytes = make_npy("|u1", 0, ts, 3, xt, (size_t)H * W, &m[2].len);
    m[3].bytes = make_npy("<i8", 0, tys, 1, yt, 8, &m[3].len);
    write_npz(path, m, 4, 1);
    free(x), free(y), free(xt);
}

/* Issue 42: x is streamed into the cache 8 MiB of samples at a time. An array of 40
 * images of 512 x 512 (10 MiB: two chunks) decodes to the same pixels and the same
 * statistics as from the mapped pixels afterwards (dsload_stats, the old computation
 * over the whole split), and a Fortran-order copy (read whole) to the same bytes. */
static void test_load_npz_streamed(void **state)
{
    fx_t *fx = *state;
    char cache[300], err[ERRLEN];
    snprintf(cache, sizeof cache, "%s/cache", fx->dir);
    const int n = 40, H = 512, W = 512;
    dataset_t tr[2], te;
    dsload_info_t info;
    for (int f = 0; f < 2; f++) {
        const char *path = pathf(fx, "big%d.npz", f);
        write_big_npz(path, n, H, W, f);
        dsload_opts_t o = opts_for("npz", path, 1, H, W, 0, cache);
        if (dsload_user(&o, &tr[f], &te, &info, err, sizeof err) != DATA_OK) fail_msg("%s", err);
        assert_int_equal(info.cache_built, 1);
        dataset_free(&te);
    }
    for (int i = 0; i < n; i += 13)
        for (int y = 0; y < H; y += 37)
            for (int k = 0; k < W; k += 41)
                assert_int_equal(tr[0].pixels[((size_t)i * H + y) * W + k], (uint8_t)(i * 7 + y * 13 + k));
    assert_memory_equal(tr[0].pixels, tr[1].pixels, (size_t)n * H * W);
    float mean = tr[0].mean[0], std = tr[0].std[0];
    assert_true(mean == tr[1].mean[0] && std == tr[1].std[0]);
    dsload_stats(&tr[0]);
    assert_true(mean == tr[0].mean[0] && std == tr[0].std[0]);
    dataset_free(&tr[0]);
    dataset_free(&tr[1]);
    assert_int_equal(count_tmp(cache), 0);
}

/* Issue 42: train_subset / test_subset (train_max, test_max) decode only the first N
 * samples: 35 of 40 images of 512 x 512 (a chunk of 32, then 3; the rest not read), into
 * a cache of their own with the statistics of those 35; a subset of at least the whole
 * split is the whole split's cache. */
static void test_load_npz_subset(void **state)
{
    fx_t *fx = *state;
    char cache[300], err[ERRLEN], full[4096];
    snprintf(cache, sizeof cache, "%s/cache", fx->dir);
    const int H = 512, W = 512;
    const char *path = pathf(fx, "sub.npz");
    write_big_npz(path, 40, H, W, 0);
    dataset_t tr, te;
    dsload_info_t info;
    dsload_opts_t o = opts_for("npz", path, 1, H, W, 0, cache);
    if (dsload_user(&o, &tr, &te, &info, err, sizeof err) != DATA_OK) fail_msg("%s", err);
    snprintf(full, sizeof full, "%s", info.cache_path);
    dataset_free(&tr);
    dataset_free(&te);
    o.train_max = 35;
    o.test_max = 1;
    if (dsload_user(&o, &tr, &te, &info, err, sizeof err) != DATA_OK) fail_msg("%s", err);
    assert_int_equal(info.cache_built, 1);
    assert_string_not_equal(info.cache_path, full);
    assert_int_equal(tr.n, 35);
    assert_int_equal(te.n, 1);
    assert_int_equal(tr.labels[34], 0);
    assert_int_equal(tr.pixels[(34 * (size_t)H + 100) * W + 7], (uint8_t)(34 * 7 + 100 * 13 + 7));
    float mean = tr.mean[0], std = tr.std[0];
    dsload_stats(&tr);
    assert_true(mean == tr.mean[0] && std == tr.std[0]);
    dataset_free(&tr);
    dataset_free(&te);
    o.train_max = 40;
    o.test_max = 5;
    if (dsload_user(&o, &tr, &te, &info, err, sizeof err) != DATA_OK) fail_msg("%s", err);
    assert_int_equal(info.cache_built, 0);
    assert_string_equal(info.cache_path, full);
    assert_int_equal(tr.n, 40);
    dataset_free(&tr);
    dataset_free(&te);
}

/* Issue 42: a declared size beyond the bound (PACER_DATA_MAX_MB here) is refused before
 * anything is decoded, naming the array, its shape and the bound; so is a cache that
 * would be larger; a failed build leaves no temporary file. */
static void test_load_npz_bound(void **state)
{
    fx_t *fx = *state;
    char cache[300], err[ERRLEN];
    snprintf(cache, sizeof cache, "%s/cache", fx->dir);
    dataset_t tr, te;
    dsload_info_t info;
    const char *path = pathf(fx, "two.npz");
    write_simple_npz(path, 2000, 4, 28, 28, 3, 1); /* x_train: 1,568,000 bytes */
    dsload_opts_t o = opts_for("npz", path, 1, 28, 28, 0, cache);
    setenv("PACER_DATA_MAX_MB", "1", 1);
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_EFORMAT);
    ASSERT_HAS(err, "two.npz: x_train: shape (2000, 28, 28) of '|u1' declares 1568000 bytes, more than the 1048576 "
                    "bytes a data set may decode to (PACER_DATA_MAX_MB)");
    assert_int_equal(count_tmp(cache), 0);

    /* small arrays, but resized to a cache beyond the bound */
    path = pathf(fx, "small.npz");
    write_simple_npz(path, 10, 4, 3, 2, 3, 1);
    o = opts_for("npz", path, 1, 512, 512, 1, cache);
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_EFORMAT);
    ASSERT_HAS(err, "small.npz: 10 training and 4 test images of 1x512x512 decode to ");
    ASSERT_HAS(err, "more than the 1048576 bytes a data set may decode to (PACER_DATA_MAX_MB)");

    setenv("PACER_DATA_MAX_MB", "lots", 1);
    o = opts_for("npz", path, 1, 3, 2, 0, cache);
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_EFORMAT);
    ASSERT_HAS(err, "PACER_DATA_MAX_MB: 'lots' is not a number of MiB");
    unsetenv("PACER_DATA_MAX_MB");
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_OK);
    dataset_free(&tr);
    dataset_free(&te);

    /* a build that fails in its second split (x_test's float pixels) removes its file */
    long long xs[3] = {4, 28, 28}, ts[3] = {2, 28, 28}, ys[1] = {4}, tys[1] = {2};
    uint8_t x[4 * 28 * 28] = {0};
    float xt[2 * 28 * 28] = {0};
    xt[28 * 28 + 5] = 2.0f;
    int64_t y[4] = {0, 1, 0, 1}, yt[2] = {0, 1};
    member_t m[4] = {{"x_train", NULL, 0}, {"y_train", NULL, 0}, {"x_test", NULL, 0}, {"y_test", NULL, 0}};
    m[0].bytes = make_npy("|u1", 0, xs, 3, x, sizeof x, &m[0].len);
    m[1].bytes = make_npy("<i8", 0, ys, 1, y, sizeof y, &m[1].len);
    m[2].bytes = make_npy("<f4", 0, ts, 3, xt, sizeof xt, &m[2].len);
    m[3].bytes = make_npy("<i8", 0, tys, 1, yt, sizeof yt, &m[3].len);
    path = pathf(fx, "late.npz");
    write_npz(path, m, 4, 1);
    o = opts_for("npz", path, 1, 28, 28, 0, cache);
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_EFORMAT);
    ASSERT_HAS(err, "late.npz: x_test: value 2 of sample 1 is outside [0, 1]");
    assert_int_equal(count_tmp(cache), 0);
}

/* Issue 42: the temporary files of builders that died are removed (a dead PID: above any
 * pid_max, 2^22), a live process's kept (it may be building), other names untouched;
 * a prefix limits the sweep to one cache file's. */
static int swept;
static void on_swept(const char *path, long long bytes, void *ctx)
{
    (void)ctx;
    assert_non_null(strstr(path, ".tmp.999999999."));
    assert_int_equal(bytes, 1);
    swept++;
}

static void test_sweep_temp_files(void **state)
{
    fx_t *fx = *state;
    char mine[64];
    snprintf(mine, sizeof mine, "a.pdc.tmp.%ld.0", (long)getpid());
    const char *names[] = {"a.pdc.tmp.999999999.0", "b.pdc.tmp.999999999.3", mine, "a.pdc", "a.pdc.lock",
                           "c.pdc.tmp.x.0",         "d.pdc.tmp.999999999.0x"};
    mkdirs(fx, "c");
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) write_bytes(pathf(fx, "c/%s", names[i]), "x", 1);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/c", fx->dir);
    swept = 0;
    assert_int_equal(fs_atomic_sweep(dir, "a.pdc.tmp.", on_swept, NULL), 1);
    assert_int_equal(swept, 1);
    assert_int_equal(access(pathf(fx, "c/a.pdc.tmp.999999999.0"), F_OK), -1);
    assert_int_equal(access(pathf(fx, "c/b.pdc.tmp.999999999.3"), F_OK), 0);
    assert_int_equal(fs_atomic_sweep(dir, NULL, on_swept, NULL), 1);
    assert_int_equal(swept, 2);
    for (size_t i = 2; i < sizeof names / sizeof *names; i++)
        assert_int_equal(access(pathf(fx, "c/%s", names[i]), F_OK), 0);
    assert_int_equal(fs_atomic_sweep(pathf(fx, "none"), NULL, NULL, NULL), 0);
}

/* Two loaders of one cache share its pages: the second maps the file the first wrote,
 * and /proc/self/smaps counts the pages as shared (Pss below Rss) once both are mapped
 * in two processes. Here, the same process maps it twice; the integration test checks
 * two ranks. What this checks: the mapping is of the cache file, read-only. */
static void test_load_maps_the_file(void **state)
{
    fx_t *fx = *state;
    char cache[300], err[ERRLEN];
    snprintf(cache, sizeof cache, "%s/cache", fx->dir);
    const char *path = pathf(fx, "d.npz");
    write_simple_npz(path, 10, 4, 3, 2, 3, 1);
    dataset_t tr, te;
    dsload_info_t info;
    dsload_opts_t o = opts_for("npz", path, 1, 3, 2, 0, cache);
    assert_int_equal(dsload_user(&o, &tr, &te, &info, err, sizeof err), DATA_OK);
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, info.cache_path)) {
            found++;
            assert_non_null(strstr(line, " r--s ")); /* read-only, shared */
        }
    fclose(f);
    assert_int_equal(found, 2); /* one mapping per split */
    dataset_free(&tr);
    dataset_free(&te);
}

/* An IDX file of n images (or labels when side is 0) as MNIST ships them. */
static void write_idx(const char *path, int n, int side, int seed)
{
    uint8_t head[16] = {0, 0, 8, side ? 3 : 1, 0, 0, (uint8_t)(n >> 8), (uint8_t)n};
    if (side) head[11] = (uint8_t)side, head[15] = (uint8_t)side;
    size_t body = side ? (size_t)n * side * side : (size_t)n, hl = side ? 16 : 8;
    uint8_t *buf = malloc(hl + body);
    assert_non_null(buf);
    memcpy(buf, head, hl);
    for (size_t i = 0; i < body; i++) buf[hl + i] = (uint8_t)(side ? (i * 7 + seed) & 0xff : (i + seed) % 10);
    write_bytes(path, buf, hl + body);
    free(buf);
}

static void write_mnist(fx_t *fx, int seed)
{
    write_idx(pathf(fx, "m/train-images-idx3-ubyte"), 12, 28, seed);
    write_idx(pathf(fx, "m/train-labels-idx1-ubyte"), 12, 0, seed);
    write_idx(pathf(fx, "m/t10k-images-idx3-ubyte"), 5, 28, seed + 1);
    write_idx(pathf(fx, "m/t10k-labels-idx1-ubyte"), 5, 0, seed + 1);
}

/* dsload_builtin gives what dataset_load reads, byte for byte, with its statistics and
 * file names. */
static void assert_same_split(const dataset_t *got, const char *dir, int train)
{
    dataset_t want;
    char err[ERRLEN];
    assert_int_equal(dataset_load("mnist", dir, train, &want, err, sizeof err), DATA_OK);
    assert_int_equal(got->n, want.n);
    assert_int_equal(got->C * 1000000 + got->H * 1000 + got->W, want.C * 1000000 + want.H * 1000 + want.W);
    assert_int_equal(got->num_classes, want.num_classes);
    assert_memory_equal(got->pixels, want.pixels, (size_t)want.n * want.C * want.H * want.W);
    assert_memory_equal(got->labels, want.labels, (size_t)want.n * sizeof *want.labels);
    assert_memory_equal(got->mean, want.mean, sizeof want.mean[0] * (size_t)want.C);
    assert_memory_equal(got->std, want.std, sizeof want.std[0] * (size_t)want.C);
    assert_non_null(strstr(got->source, train ? "train-images" : "t10k-images"));
    dataset_free(&want);
}

/* A built-in set (here "mnist" at a path) is decoded once into the cache and mapped by
 * every later load; a changed file rebuilds it; a bad file gets dataset_load's message;
 * without a cache directory, or with one that cannot be made, it is decoded in memory. */
static void test_load_builtin_cached(void **state)
{
    fx_t *fx = *state;
    char cache[300], dir[300], err[ERRLEN];
    snprintf(cache, sizeof cache, "%s/cache", fx->dir);
    snprintf(dir, sizeof dir, "%s/m", fx->dir);
    mkdirs(fx, "m");
    write_mnist(fx, 3);
    dataset_t tr, te;
    dsload_info_t info;
    for (int pass = 0; pass < 2; pass++) { /* built, then mapped */
        assert_int_equal(dsload_builtin("mnist", dir, cache, &tr, &te, &info, err, sizeof err), DATA_OK);
        assert_int_equal(info.cache_built, pass == 0);
        assert_non_null(strstr(info.cache_path, "/cache/mnist-"));
        assert_string_equal(info.cache_note, "");
        assert_non_null(tr.map);
        assert_same_split(&tr, dir, 1);
        assert_same_split(&te, dir, 0);
        dataset_free(&tr);
        dataset_free(&te);
    }
    /* the training images rewritten (another time stamp): a stale cache is rebuilt */
    write_idx(pathf(fx, "m/train-images-idx3-ubyte"), 12, 28, 9);
    struct timespec later[2] = {{0, UTIME_OMIT}, {2000000000, 0}};
    assert_int_equal(utimensat(AT_FDCWD, pathf(fx, "m/train-images-idx3-ubyte"), later, 0), 0);
    assert_int_equal(dsload_builtin("mnist", dir, cache, &tr, &te, &info, err, sizeof err), DATA_OK);
    assert_int_equal(info.cache_built, 1);
    assert_non_null(strstr(info.cache_note, "rebuilt"));
    assert_same_split(&tr, dir, 1);
    dataset_free(&tr);
    dataset_free(&te);
    /* no cache directory, or one that cannot be created: decoded in memory */
    write_bytes(pathf(fx, "file"), "x", 1);
    const char *nodirs[] = {"", pathf(fx, "file/sub")};
    for (int i = 0; i < 2; i++) {
        char nd[400];
        snprintf(nd, sizeof nd, "%s", nodirs[i]);
        assert_int_equal(dsload_builtin("mnist", dir, nd, &tr, &te, &info, err, sizeof err), DATA_OK);
        assert_null(tr.map);
        assert_int_equal(!!info.cache_note[0], i == 1);
        assert_same_split(&tr, dir, 1);
        assert_same_split(&te, dir, 0);
        dataset_free(&tr);
        dataset_free(&te);
    }
    /* a label out of range: dataset_load's message, nothing cached for it */
    uint8_t bad[8 + 5] = {0, 0, 8, 1, 0, 0, 0, 5, 1, 2, 3, 4, 200};
    write_bytes(pathf(fx, "m/t10k-labels-idx1-ubyte"), bad, sizeof bad);
    assert_int_equal(dsload_builtin("mnist", dir, cache, &tr, &te, &info, err, sizeof err), DATA_ELABEL);
    assert_non_null(strstr(err, "t10k-labels-idx1-ubyte: label 200 at index 4 out of range"));
    /* a missing file: named */
    unlink(pathf(fx, "m/t10k-images-idx3-ubyte"));
    assert_int_equal(dsload_builtin("mnist", dir, cache, &tr, &te, &info, err, sizeof err), DATA_ENOENT);
    assert_non_null(strstr(err, "t10k-images-idx3-ubyte: not found"));
}

/* What GET /api/v1/datasets lists for the data roots: every image folder and .npz
 * directly under a root, probed and put in the catalog as a user entry; a broken one not
 * in the catalog but reported with its reason; other files and hidden names not at all.
 * A second sync after a change follows the disks: a vanished entry leaves the catalog. */
static void test_list_data_roots(void **state)
{
    fx_t *fx = *state;
    put_png(fx, "root/pets/train/cat/1.png", 1);
    put_png(fx, "root/pets/train/dog/1.png", 1);
    put_png(fx, "root/pets/val/dog/2.png", 1);
    put_png(fx, "root/.hidden/train/a/1.png", 1);
    put_png(fx, "root/mnist/train/a/1.png", 1); /* a built-in's name */
    put_png(fx, "root/mnist/test/a/1.png", 1);
    write_simple_npz(pathf(fx, "root/digits.npz"), 10, 4, 3, 2, 3, 1);
    write_bytes(pathf(fx, "root/broken.npz"), "nope", 4);
    write_bytes(pathf(fx, "root/readme.txt"), "x", 1);
    mkdirs(fx, "root/not-a-dataset/sub");
    char root[300];
    snprintf(root, sizeof root, "%s/root", fx->dir);
    const char *roots[2] = {root, "/nonexistent-root"};
    json_t *refused = json_array();
    assert_int_equal(userdata_sync(roots, 2, refused), 2);
    assert_int_equal(json_array_size(refused), 2);
    json_t *e = json_array_get(refused, 0);
    assert_string_equal(json_string_value(json_object_get(e, "name")), "broken.npz");
    assert_non_null(strstr(json_string_value(json_object_get(e, "error")), "not a zip archive"));
    e = json_array_get(refused, 1);
    assert_string_equal(json_string_value(json_object_get(e, "name")), "mnist");
    assert_string_equal(json_string_value(json_object_get(e, "error")),
                        "the catalog has a builtin data set of that name");
    catalog_dataset_t d;
    assert_int_equal(catalog_dataset_get("broken.npz", &d), -1);
    assert_int_equal(catalog_dataset_get("digits.npz", &d), 0);
    assert_int_equal(d.source, CATALOG_USER);
    assert_string_equal(catalog_format_name(d.format), "npz");
    assert_int_equal(d.classes, 3);
    assert_int_equal(d.train_n, 10);
    assert_int_equal(d.H, 3);
    assert_non_null(strstr(d.fixed_dir, "/root/digits.npz"));
    assert_int_equal(catalog_dataset_get("pets", &d), 0);
    assert_string_equal(catalog_format_name(d.format), "imagefolder");
    assert_int_equal(d.classes, 2);
    assert_int_equal(d.test_n, 1);
    assert_int_equal(d.C, 0); /* only decoding tells a folder's image size */
    json_decref(refused);
    /* the same again: nothing changes; then digits.npz goes away, and leaves the catalog */
    assert_int_equal(userdata_sync(roots, 1, NULL), 2);
    assert_int_equal(unlink(pathf(fx, "root/digits.npz")), 0);
    assert_int_equal(userdata_sync(roots, 1, NULL), 1);
    assert_int_equal(catalog_dataset_get("digits.npz", &d), -1);
    assert_int_equal(catalog_dataset_get("pets", &d), 0);
    assert_int_equal(userdata_sync(NULL, 0, NULL), 0);
    assert_int_equal(catalog_dataset_get("pets", &d), -1);
}


/* Issue 42, item 4: symbolic links under a data root (common/dataroot.h). A link that
 * stays under a root is followed; one that leaves every root is skipped (an image, a
 * class folder: counted) or refused (the set itself, an .npz), by its name, never with
 * a byte of what it leads to; the listing and the walk apply the same rule. Item 8: a
 * path outside the roots gets the same answer whether or not it exists. Every link and
 * file is made here, at run time. */
static void test_data_root_links(void **state)
{
    fx_t *fx = *state;
    char root[300], real_root[PATH_MAX], err[ERRLEN] = "", real[DATAROOT_PATH];
    put_png(fx, "root/set/train/a/1.png", 1);
    put_png(fx, "root/set/train/b/1.png", 2);
    put_png(fx, "root/set/test/a/1.png", 3);
    put_png(fx, "out/real.png", 4); /* a real image outside the root */
    put_png(fx, "out/set2/train/a/1.png", 5);
    put_png(fx, "out/set2/test/a/1.png", 5);
    assert_int_equal(symlink("/etc/passwd", pathf(fx, "root/set/train/a/passwd.png")), 0);
    char target[400];
    snprintf(target, sizeof target, "%s/out/real.png", fx->dir);
    assert_int_equal(symlink(target, pathf(fx, "root/set/train/b/outside.png")), 0);
    assert_int_equal(symlink("/etc", pathf(fx, "root/set/train/etc")), 0);
    assert_int_equal(symlink("../../test/a/1.png", pathf(fx, "root/set/train/b/inside.png")), 0);
    snprintf(target, sizeof target, "%s/out/set2", fx->dir);
    assert_int_equal(symlink(target, pathf(fx, "root/linked")), 0);
    assert_int_equal(symlink("/etc/passwd", pathf(fx, "root/pw.npz")), 0);
    assert_int_equal(symlink("set", pathf(fx, "root/alias")), 0); /* a whole set, inside */
    snprintf(root, sizeof root, "%s/root", fx->dir);
    assert_non_null(realpath(root, real_root));
    const char *roots[1] = {root}, *real_roots[1] = {real_root};

    /* the one rule, on its own */
    assert_int_equal(dataroot_resolve(real_roots, 1, pathf(fx, "root/set/train/b/inside.png"), real), DATAROOT_OK);
    assert_int_equal(dataroot_resolve(real_roots, 1, pathf(fx, "root/set/train/a/passwd.png"), real), DATAROOT_OUTSIDE);
    assert_int_equal(dataroot_resolve(real_roots, 1, pathf(fx, "root/set/train/etc/passwd"), real), DATAROOT_OUTSIDE);
    assert_int_equal(dataroot_resolve(real_roots, 1, pathf(fx, "root/../out/real.png"), real), DATAROOT_OUTSIDE);
    assert_int_equal(dataroot_resolve(real_roots, 1, pathf(fx, "root/nothing/here"), real), DATAROOT_MISSING);
    /* outside: an existing and a missing path are told apart by nothing */
    assert_int_equal(dataroot_resolve(real_roots, 1, "/etc/passwd", real), DATAROOT_OUTSIDE);
    assert_int_equal(dataroot_resolve(real_roots, 1, "/etc/no-such-file-here", real), DATAROOT_OUTSIDE);
    assert_int_equal(dataroot_resolve(real_roots, 1, "/no-such-dir/x", real), DATAROOT_OUTSIDE);
    assert_int_equal(dataroot_resolve(real_roots, 1, pathf(fx, "root/linked/nothing"), real), DATAROOT_OUTSIDE);
    /* a dangling link under the root tells nothing of what is missing outside */
    assert_int_equal(symlink("/etc/no-such-file-here", pathf(fx, "root/dangling")), 0);
    assert_int_equal(dataroot_resolve(real_roots, 1, pathf(fx, "root/dangling"), real), DATAROOT_OUTSIDE);
    assert_int_equal(dataroot_resolve(real_roots, 1, pathf(fx, "root/dangling/x"), real), DATAROOT_OUTSIDE);
    assert_int_equal(unlink(pathf(fx, "root/dangling")), 0);

    assert_int_equal(dataroot_set(roots, 1, err, sizeof err), 0);
    assert_int_equal(dataroot_count(), 1);

    /* the walk: the links out skipped and counted, the one inside followed */
    imgfolder_t f;
    assert_int_equal(imgfolder_scan(pathf(fx, "root/set"), 1, &f, err, sizeof err), 0);
    assert_int_equal(f.nclasses, 2); /* a, b: not etc */
    assert_int_equal(f.ntrain, 3);   /* a/1, b/1, b/inside */
    assert_int_equal(f.skipped, 3);  /* passwd.png, outside.png, etc */
    for (int i = 0; i < f.ntrain; i++) assert_null(strstr(f.train[i].path, "passwd"));
    imgfolder_free(&f);
    assert_int_equal(imgfolder_scan(pathf(fx, "root/alias"), 0, &f, err, sizeof err), 0);
    imgfolder_free(&f);
    /* the set itself linked from outside: refused by its name, its target not said */
    assert_int_equal(imgfolder_scan(pathf(fx, "root/linked"), 0, &f, err, sizeof err), -1);
    ASSERT_HAS(err, "root/linked: the data set that leaves the data roots");
    assert_null(strstr(err, "out/set2"));
    /* an .npz linked to /etc/passwd: not opened as an archive, not a byte quoted */
    npz_t *z = NULL;
    assert_int_equal(npz_open(pathf(fx, "root/pw.npz"), &z, err, sizeof err), -1);
    ASSERT_HAS(err, "root/pw.npz: a file that leaves the data roots");
    assert_null(strstr(err, "root:x"));
    assert_null(z);
    /* the worker's open (after the walk: a link swapped in since is caught on the fd) */
    image_t img = {0};
    uint8_t *buf = NULL;
    size_t cap = 0;
    assert_int_equal(image_load(pathf(fx, "root/set/train/a/passwd.png"), &buf, &cap, &img, err, sizeof err), IMAGE_EIO);
    ASSERT_HAS(err, "train/a/passwd.png: a file that leaves the data roots");
    assert_null(strstr(err, "root:x"));
    assert_null(strstr(err, "72 6f"));
    assert_int_equal(image_load(pathf(fx, "root/set/train/b/inside.png"), &buf, &cap, &img, err, sizeof err), IMAGE_OK);
    image_free(&img);
    free(buf);

    /* the listing: the same rule; refusals name the entry, not where it leads */
    json_t *refused = json_array();
    assert_int_equal(userdata_sync(roots, 1, refused), 2); /* alias, set */
    catalog_dataset_t d;
    assert_int_equal(catalog_dataset_get("set", &d), 0);
    assert_int_equal(d.train_n, 3);
    assert_int_equal(catalog_dataset_get("alias", &d), 0);
    assert_int_equal(catalog_dataset_get("linked", &d), -1);
    assert_int_equal(catalog_dataset_get("pw.npz", &d), -1);
    assert_int_equal(json_array_size(refused), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *e = json_array_get(refused, i);
        const char *why = json_string_value(json_object_get(e, "error"));
        assert_string_equal(
            why, "a symbolic link that leaves the data roots (only what resolves under a --data-root is read)");
        assert_null(strstr(json_string_value(json_object_get(e, "path")), "/out"));
        assert_null(strstr(json_string_value(json_object_get(e, "path")), "/etc"));
    }
    assert_string_equal(json_string_value(json_object_get(json_array_get(refused, 0), "name")), "linked");
    assert_string_equal(json_string_value(json_object_get(json_array_get(refused, 1), "name")), "pw.npz");
    json_decref(refused);
    assert_int_equal(userdata_sync(NULL, 0, NULL), 0);

    /* none set: nothing confined (a worker run by hand reads what its operator names) */
    assert_int_equal(dataroot_set(NULL, 0, err, sizeof err), 0);
    assert_int_equal(imgfolder_scan(pathf(fx, "root/linked"), 0, &f, err, sizeof err), 0);
    imgfolder_free(&f);
}

/* A root added while the process runs (dataroot_add: the coordinator's default root that
 * did not exist at its start): checked against from then on, once however often it is
 * added, and one that does not resolve is refused by name. */
static void test_data_root_added(void **state)
{
    fx_t *fx = *state;
    char a[300], b[300], err[ERRLEN] = "";
    mkdirs(fx, "a");
    put_png(fx, "b/x.png", 1);
    snprintf(a, sizeof a, "%s/a", fx->dir);
    snprintf(b, sizeof b, "%s/b", fx->dir);
    const char *roots[1] = {a};
    assert_int_equal(dataroot_set(roots, 1, err, sizeof err), 0);
    assert_int_equal(dataroot_check(pathf(fx, "b/x.png"), "a file", err, sizeof err), -1);
    ASSERT_HAS(err, "leaves the data roots");
    assert_int_equal(dataroot_add(b, err, sizeof err), 0);
    assert_int_equal(dataroot_count(), 2);
    assert_int_equal(dataroot_check(pathf(fx, "b/x.png"), "a file", err, sizeof err), 0);
    assert_int_equal(dataroot_add(b, err, sizeof err), 0); /* already one */
    assert_int_equal(dataroot_count(), 2);
    assert_int_equal(dataroot_add(pathf(fx, "c"), err, sizeof err), -1);
    ASSERT_HAS(err, "/c: No such file or directory");
    assert_int_equal(dataroot_count(), 2);
    assert_int_equal(dataroot_set(NULL, 0, err, sizeof err), 0);
}

/* The data-set formats are one table (common/catalog.h): each name parses back to its
 * format, a user's format (and only one) has a probe, and its dsload reader follows the
 * same name. */
static void test_format_table(void **state)
{
    (void)state;
    catalog_format_t f;
    for (int i = 0; i < CATALOG_FORMAT_N; i++) {
        const char *name = catalog_format_name((catalog_format_t)i);
        assert_int_equal(catalog_format_parse(name, &f), 0);
        assert_int_equal(f, i);
        dsprobe_t p;
        char err[512] = "";
        assert_int_equal(dsprobe(name, "/nonexistent/pacer-format-table", "nhwc", &p, err, sizeof err), -1);
        int none = strstr(err, "has nothing to probe") != NULL;
        if (none == catalog_format_is_user((catalog_format_t)i))
            fail_msg("format %s: probe and table disagree: %s", name, err);
        assert_int_equal(catalog_format_path_is((catalog_format_t)i)[0] != 0,
                         catalog_format_is_user((catalog_format_t)i));
    }
    assert_int_equal(catalog_format_parse("auto", &f), -1);
    assert_int_equal(catalog_format_parse(NULL, &f), -1);
    assert_string_equal(catalog_format_name(CATALOG_FORMAT_N), "unknown");
    assert_false(catalog_format_is_user(CATALOG_FORMAT_N));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_table),
        cmocka_unit_test(test_npy_valid),
        cmocka_unit_test(test_npy_refused),
        cmocka_unit_test(test_npy_elements),
        T(test_npz_reads_arrays),
        T(test_npz_bad_arrays),
        T(test_npz_damaged_archive),
        T(test_png_kinds),
        T(test_jpeg_kinds),
        T(test_image_bad_files),
        cmocka_unit_test(test_resize_matches_torch),
        cmocka_unit_test(test_convert_channels),
        T(test_folder_scan),
        cmocka_unit_test(test_cache_header),
        T(test_load_folder_cached),
        T(test_load_folder_bad_image),
        T(test_load_npz),
        T(test_load_npz_streamed),
        T(test_load_npz_subset),
        T(test_load_npz_bound),
        T(test_sweep_temp_files),
        T(test_load_maps_the_file),
        T(test_load_builtin_cached),
        T(test_list_data_roots),
        T(test_data_root_links),
        T(test_data_root_added),
    };
    return cmocka_run_group_tests_name("userdata", tests, NULL, NULL);
}
