/* worker/image.c - see image.h.
 *
 * Both libraries report errors by calling a function that must not return. Their
 * defaults print to stderr and exit (libjpeg) or longjmp to a buffer set by the caller
 * (libpng). Here both store the message and longjmp back into the decoder, which then
 * frees what it holds and returns an error code. Everything that must survive the
 * longjmp lives in a context struct, never in a local variable changed after setjmp.
 */
#include "image.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>

#include "dataroot.h"
#include "errmsg.h"

#define MSG_MAX 512


void image_free(image_t *img)
{
    free(img->px);
    memset(img, 0, sizeof *img);
}

/* Makes room for (h, w, c) pixels; the sizes are bounded by the caller first. */
static int image_reserve(image_t *img, int w, int h, int c)
{
    size_t need = (size_t)w * (size_t)h * (size_t)c;
    if (need > img->cap) {
        uint8_t *p = realloc(img->px, need);
        if (!p) return -1;
        img->px = p;
        img->cap = need;
    }
    img->w = w;
    img->h = h;
    img->c = c;
    return 0;
}

/* The documented bounds, checked from the header before pixel memory is allocated. */
static int check_size(unsigned long w, unsigned long h, const char *name, char *err, size_t errlen)
{
    if (w == 0 || h == 0) return errmsg_code(err, errlen, IMAGE_EFORMAT, "%s: image of %lu x %lu pixels", name, w, h);
    if (w > IMAGE_MAX_SIDE || h > IMAGE_MAX_SIDE || (unsigned long long)w * h > (unsigned long long)IMAGE_MAX_PIXELS)
        return errmsg_code(
            err, errlen, IMAGE_ETOOBIG,
            "%s: image of %lu x %lu pixels is larger than pacer decodes (sides up to %d, at most %ld pixels): "
            "resize it offline",
            name, w, h, IMAGE_MAX_SIDE, (long)IMAGE_MAX_PIXELS);
    return IMAGE_OK;
}

/* ---- PNG ------------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *buf;
    size_t len, pos;
    png_bytep *rows;
    int code;
    char msg[MSG_MAX];
} png_ctx_t;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_ctx_t *ctx = png_get_error_ptr(png);
    if (!ctx->msg[0]) snprintf(ctx->msg, sizeof ctx->msg, "%s", msg);
    png_longjmp(png, 1);
}

/* Warnings (an unknown ancillary chunk, a bad CRC in one) leave the pixels intact. */
static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void png_read_mem(png_structp png, png_bytep out, size_t n)
{
    png_ctx_t *ctx = png_get_io_ptr(png);
    if (n > ctx->len - ctx->pos) {
        snprintf(ctx->msg, sizeof ctx->msg, "truncated: the file ends inside the image data");
        png_error(png, ctx->msg);
    }
    memcpy(out, ctx->buf + ctx->pos, n);
    ctx->pos += n;
}

/* Drops every alpha sample of (h, w, n) pixels in place: n = 2 -> 1, 4 -> 3. */
static void strip_alpha(uint8_t *px, size_t npix, int n)
{
    int keep = n - 1;
    for (size_t i = 0; i < npix; i++)
        for (int k = 0; k < keep; k++) px[i * keep + k] = px[i * n + k];
}

/* ctx belongs to the caller: what the error path reads must not be a local of the
 * function that called setjmp (C11 7.13.2.1: such locals are indeterminate after the
 * longjmp when they changed in between). */
static int decode_png(png_ctx_t *x, const char *name, image_t *img, char *err, size_t errlen)
{
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, x, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return errmsg_code(err, errlen, IMAGE_ENOMEM, "%s: out of memory", name);
    }
    if (setjmp(png_jmpbuf(png))) {
        free(x->rows);
        png_destroy_read_struct(&png, &info, NULL);
        if (x->code == IMAGE_EFORMAT) return errmsg_code(err, errlen, x->code, "%s: corrupt PNG: %s", name, x->msg);
        return errmsg_code(err, errlen, x->code, "%s", x->msg);
    }
    png_set_read_fn(png, x, png_read_mem);
    png_read_info(png, info);
    png_uint_32 w = 0, h = 0;
    int depth = 0, ctype = 0;
    png_get_IHDR(png, info, &w, &h, &depth, &ctype, NULL, NULL, NULL);
    int rc = check_size(w, h, name, x->msg, sizeof x->msg);
    if (rc != IMAGE_OK) {
        x->code = rc;
        png_longjmp(png, 1);
    }
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_scale_16(png);
    png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int n = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (n < 1 || n > 4 || rowbytes != (size_t)w * (size_t)n) {
        snprintf(x->msg, sizeof x->msg, "unexpected layout after conversion (%d channels, %zu bytes a row)", n,
                 rowbytes);
        png_longjmp(png, 1);
    }
    x->rows = malloc((size_t)h * sizeof *x->rows);
    if (!x->rows || image_reserve(img, (int)w, (int)h, n) != 0) {
        x->code = IMAGE_ENOMEM;
        snprintf(x->msg, sizeof x->msg, "%s: out of memory (%u x %u pixels)", name, (unsigned)w, (unsigned)h);
        png_longjmp(png, 1);
    }
    for (png_uint_32 y = 0; y < h; y++) x->rows[y] = img->px + (size_t)y * rowbytes;
    png_read_image(png, x->rows);
    /* The chunks after the image data, up to IEND: a file cut after IDAT is truncated. */
    png_read_end(png, NULL);
    free(x->rows);
    png_destroy_read_struct(&png, &info, NULL);
    if (n == 2 || n == 4) {
        strip_alpha(img->px, (size_t)w * h, n);
        img->c = n - 1;
    }
    return IMAGE_OK;
}

/* ---- JPEG ------------------------------------------------------------------------------ */

typedef struct {
    struct jpeg_error_mgr pub; /* first: libjpeg sees a jpeg_error_mgr */
    jmp_buf jb;
    int code;
    char msg[JMSG_LENGTH_MAX + 64];
} jpeg_err_t;

static void jpeg_on_error(j_common_ptr ci)
{
    jpeg_err_t *e = (jpeg_err_t *)ci->err;
    if (!e->msg[0]) (*ci->err->format_message)(ci, e->msg);
    longjmp(e->jb, 1);
}

/* Level -1 is a warning: corrupt or missing data that libjpeg would paper over. Trace
 * messages (level >= 0) are ignored. */
static void jpeg_on_message(j_common_ptr ci, int level)
{
    if (level < 0) jpeg_on_error(ci);
}

typedef struct {
    struct jpeg_progress_mgr pub;
    j_decompress_ptr ci;
} jpeg_progress_t;

static void jpeg_on_progress(j_common_ptr c)
{
    jpeg_progress_t *p = (jpeg_progress_t *)c->progress;
    if (p->ci->input_scan_number > IMAGE_JPEG_MAX_SCANS) {
        jpeg_err_t *e = (jpeg_err_t *)c->err;
        snprintf(e->msg, sizeof e->msg, "more than %d progressive scans", IMAGE_JPEG_MAX_SCANS);
        longjmp(e->jb, 1);
    }
}

typedef struct {
    struct jpeg_decompress_struct ci;
    jpeg_err_t je;
    jpeg_progress_t prog;
} jpeg_ctx_t;

/* ctx belongs to the caller, as in decode_png. */
static int decode_jpeg(jpeg_ctx_t *x, const uint8_t *buf, size_t len, const char *name, image_t *img, char *err,
                       size_t errlen)
{
    x->ci.err = jpeg_std_error(&x->je.pub);
    x->je.pub.error_exit = jpeg_on_error;
    x->je.pub.emit_message = jpeg_on_message;
    x->je.code = IMAGE_EFORMAT;
    if (setjmp(x->je.jb)) {
        jpeg_destroy_decompress(&x->ci);
        if (x->je.code == IMAGE_EFORMAT)
            return errmsg_code(err, errlen, x->je.code, "%s: corrupt JPEG: %s", name, x->je.msg);
        return errmsg_code(err, errlen, x->je.code, "%s", x->je.msg);
    }
    jpeg_create_decompress(&x->ci);
    x->ci.mem->max_memory_to_use = IMAGE_JPEG_MAX_MEMORY;
    x->prog.pub.progress_monitor = jpeg_on_progress;
    x->prog.ci = &x->ci;
    x->ci.progress = &x->prog.pub;
    jpeg_mem_src(&x->ci, buf, (unsigned long)len);
    jpeg_read_header(&x->ci, TRUE);
    int rc = check_size(x->ci.image_width, x->ci.image_height, name, x->je.msg, sizeof x->je.msg);
    if (rc != IMAGE_OK) {
        x->je.code = rc;
        longjmp(x->je.jb, 1);
    }
    if (x->ci.jpeg_color_space == JCS_CMYK || x->ci.jpeg_color_space == JCS_YCCK) {
        x->je.code = IMAGE_EUNSUPPORTED;
        snprintf(x->je.msg, sizeof x->je.msg,
                 "%s: CMYK JPEG is not supported (convert it to RGB, e.g. with ImageMagick)", name);
        longjmp(x->je.jb, 1);
    }
    x->ci.out_color_space = x->ci.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&x->ci);
    int c = x->ci.output_components;
    if ((c != 1 && c != 3) || x->ci.output_width != x->ci.image_width || x->ci.output_height != x->ci.image_height) {
        snprintf(x->je.msg, sizeof x->je.msg, "unexpected output: %d components", c);
        longjmp(x->je.jb, 1);
    }
    if (image_reserve(img, (int)x->ci.output_width, (int)x->ci.output_height, c) != 0) {
        x->je.code = IMAGE_ENOMEM;
        snprintf(x->je.msg, sizeof x->je.msg, "%s: out of memory", name);
        longjmp(x->je.jb, 1);
    }
    size_t stride = (size_t)x->ci.output_width * (size_t)c;
    while (x->ci.output_scanline < x->ci.output_height) {
        JSAMPROW row = img->px + (size_t)x->ci.output_scanline * stride;
        if (jpeg_read_scanlines(&x->ci, &row, 1) != 1) {
            snprintf(x->je.msg, sizeof x->je.msg, "no progress at line %u", x->ci.output_scanline);
            longjmp(x->je.jb, 1);
        }
    }
    jpeg_finish_decompress(&x->ci);
    jpeg_destroy_decompress(&x->ci);
    return IMAGE_OK;
}

/* ---- entry points ---------------------------------------------------------------------- */

int image_decode(const uint8_t *buf, size_t len, const char *name, image_t *img, char *err, size_t errlen)
{
    static const uint8_t PNG_SIG[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len == 0) return errmsg_code(err, errlen, IMAGE_EFORMAT, "%s: empty file (0 bytes)", name);
    if (len >= 8 && memcmp(buf, PNG_SIG, 8) == 0) {
        png_ctx_t ctx = {.buf = buf, .len = len, .code = IMAGE_EFORMAT};
        return decode_png(&ctx, name, img, err, errlen);
    }
    if (len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff) {
        jpeg_ctx_t *ctx = calloc(1, sizeof *ctx);
        if (!ctx) return errmsg_code(err, errlen, IMAGE_ENOMEM, "%s: out of memory", name);
        int rc = decode_jpeg(ctx, buf, len, name, img, err, errlen);
        free(ctx);
        return rc;
    }
    /* Never the file's bytes: the message reaches API clients, and the file may be one
     * they must not read. */
    return errmsg_code(err, errlen, IMAGE_EFORMAT, "%s: format not recognised (pacer reads PNG and JPEG images)", name);
}

int image_load(const char *path, uint8_t **buf, size_t *cap, image_t *img, char *err, size_t errlen)
{
    /* The coordinator checked the folder at submission; a link swapped in since (or a
     * worker's own walk racing a change) is caught on what was opened, and a FIFO is
     * refused, not waited on (dataroot.h). */
    int fd = dataroot_open(path, err, errlen);
    if (fd < 0) return IMAGE_EIO;
    struct stat st;
    int rc = IMAGE_OK;
    if (fstat(fd, &st) != 0) {
        rc = errmsg_code(err, errlen, IMAGE_EIO, "%s: cannot stat: %s", path, strerror(errno));
        goto out;
    }
    if (st.st_size > IMAGE_MAX_FILE_BYTES) {
        rc = errmsg_code(err, errlen, IMAGE_ETOOBIG, "%s: %lld bytes, more than the %ld an image may have", path,
                         (long long)st.st_size, (long)IMAGE_MAX_FILE_BYTES);
        goto out;
    }
    size_t size = (size_t)st.st_size;
    if (size > *cap) {
        uint8_t *p = realloc(*buf, size);
        if (!p) {
            rc = errmsg_code(err, errlen, IMAGE_ENOMEM, "%s: out of memory (%zu bytes)", path, size);
            goto out;
        }
        *buf = p;
        *cap = size;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t k = read(fd, *buf + got, size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            rc = errmsg_code(err, errlen, IMAGE_EIO, "%s: read error: %s", path, strerror(errno));
            goto out;
        }
        if (k == 0) break; /* shrank while read: decode what is there, which will say truncated */
        got += (size_t)k;
    }
    rc = image_decode(*buf, got, path, img, err, errlen);
out:
    close(fd);
    return rc;
}

/* ---- preprocessing ----------------------------------------------------------------------- */

void image_convert_channels(const uint8_t *src, int sc, uint8_t *dst, int dc, int h, int w)
{
    size_t n = (size_t)h * (size_t)w;
    if (sc == dc) {
        memmove(dst, src, n * (size_t)sc);
    } else if (sc == 1) {
        /* backwards: dst may be src's buffer grown in place */
        for (size_t i = n; i-- > 0;) dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[i];
    } else {
        for (size_t i = 0; i < n; i++) {
            const uint8_t *p = src + 3 * i;
            dst[i] = (uint8_t)((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 32768u) >> 16);
        }
    }
}

/* One axis of the resize: for each output coordinate, its two input neighbours and the
 * weight of the second (torch's area_pixel_compute_source_index, align_corners false). */
static void axis_weights(int in, int out, int *i0, int *i1, float *l1, int k)
{
    const float scale = (float)in / (float)out;
    float src = scale * ((float)k + 0.5f) - 0.5f;
    if (src < 0) src = 0;
    int a = (int)src;
    if (a > in - 1) a = in - 1;
    *i0 = a;
    *i1 = a + (a < in - 1 ? 1 : 0);
    *l1 = src - (float)a;
}

void image_resize_bilinear(const uint8_t *src, int sh, int sw, int c, uint8_t *dst, int dh, int dw)
{
    if (sh == dh && sw == dw) {
        memcpy(dst, src, (size_t)sh * sw * c);
        return;
    }
    for (int y = 0; y < dh; y++) {
        int y0, y1;
        float ly;
        axis_weights(sh, dh, &y0, &y1, &ly, y);
        const float hy0 = 1.0f - ly;
        const uint8_t *r0 = src + (size_t)y0 * sw * c, *r1 = src + (size_t)y1 * sw * c;
        for (int x = 0; x < dw; x++) {
            int x0, x1;
            float lx;
            axis_weights(sw, dw, &x0, &x1, &lx, x);
            const float wx0 = 1.0f - lx;
            for (int k = 0; k < c; k++) {
                float v = hy0 * (wx0 * r0[x0 * c + k] + lx * r0[x1 * c + k]) +
                          ly * (wx0 * r1[x0 * c + k] + lx * r1[x1 * c + k]);
                v = nearbyintf(v);
                dst[((size_t)y * dw + x) * c + k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    }
}
