/* worker/image.h - decoding PNG and JPEG files into 8-bit pixels, and the two
 * preprocessing steps a data set's images go through before they are cached: channel
 * conversion and bilinear resizing.
 *
 * Decoding (libpng, libjpeg-turbo, both from Debian):
 * - PNG: gray, gray + alpha, RGB, RGBA, palette; 1, 2, 4, 8 and 16 bits; interlaced or
 *   not. Alpha (and a tRNS transparency chunk) is dropped, a palette is expanded to RGB,
 *   16-bit samples are scaled to 8 bits with rounding (libpng's png_set_scale_16), so
 *   every PNG comes out as 1 (gray) or 3 (RGB) channels.
 * - JPEG: gray and YCbCr/RGB, baseline or progressive. CMYK and YCCK are refused with a
 *   message: their conversion to RGB needs a colour profile pacer does not have.
 *   Every libjpeg warning (a premature end of data, corrupt entropy data, extraneous
 *   bytes) is an error: libjpeg would fill the rest of the image with gray and go on,
 *   which is a silently damaged sample.
 * - The libraries' errors come back through setjmp/longjmp into an error code and a
 *   message: nothing inside them may print or exit.
 * - Decompression bombs: an image wider or taller than IMAGE_MAX_SIDE, or with more than
 *   IMAGE_MAX_PIXELS pixels, is refused from its header, before any pixel memory is
 *   allocated; libjpeg's own working memory is capped at IMAGE_JPEG_MAX_MEMORY and a
 *   progressive JPEG at IMAGE_JPEG_MAX_SCANS scans (many tiny scans make decoding
 *   quadratic); libpng keeps its default cap on a chunk's memory (8 MB).
 *
 * Output pixels are (H, W, C), row-major, C = 1 or 3, the usual layout of image files;
 * the cache stores (C, H, W) (worker/dcache.h). Everything here runs once per image
 * while a data set is decoded, never inside a training step.
 */
#ifndef PACER_IMAGE_H
#define PACER_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#ifndef IMAGE_MAX_SIDE
#define IMAGE_MAX_SIDE 16384
#endif
#ifndef IMAGE_MAX_PIXELS
#define IMAGE_MAX_PIXELS (1L << 26) /* 64 Mpx: 8192 x 8192, 192 MiB as RGB */
#endif
#ifndef IMAGE_MAX_FILE_BYTES
#define IMAGE_MAX_FILE_BYTES (256L << 20) /* a larger file is not one image of a data set */
#endif
#define IMAGE_JPEG_MAX_MEMORY (512L << 20)
#define IMAGE_JPEG_MAX_SCANS 500

/* A decoded image. px is owned and reused: image_decode grows it as needed, so decoding
 * many images of one size allocates once. */
typedef struct {
    int w, h, c; /* c = 1 (gray) or 3 (RGB) */
    uint8_t *px; /* (h, w, c) */
    size_t cap;  /* bytes px holds */
} image_t;

enum {
    IMAGE_OK = 0,
    IMAGE_EFORMAT = -1,      /* not PNG or JPEG, corrupt, truncated */
    IMAGE_EUNSUPPORTED = -2, /* a valid file pacer does not read (CMYK JPEG) */
    IMAGE_ETOOBIG = -3,      /* beyond the documented bounds */
    IMAGE_ENOMEM = -4,
    IMAGE_EIO = -5, /* the file cannot be read */
};

/* Decodes the PNG or JPEG in buf[0 .. len) (told apart by their magic bytes, not by a
 * file name) into img. name is only for messages: every error writes
 * "NAME: what is wrong" into err. */
int image_decode(const uint8_t *buf, size_t len, const char *name, image_t *img, char *err, size_t errlen);

/* Reads the file at path (at most IMAGE_MAX_FILE_BYTES; *buf grows as needed, *cap its
 * size) and decodes it. A zero-byte file is its own error. */
int image_load(const char *path, uint8_t **buf, size_t *cap, image_t *img, char *err, size_t errlen);

void image_free(image_t *img);

/* The width and height in a PNG or JPEG header, without decoding: what the fuzzers and
 * the header checks use. Returns IMAGE_OK or an error code with err. */
int image_probe(const uint8_t *buf, size_t len, const char *name, int *w, int *h, int *c, char *err, size_t errlen);

/* Converts (h, w, sc) pixels to (h, w, dc) pixels, dc and sc in {1, 3}: gray to RGB
 * copies the value into each channel; RGB to gray is ITU-R 601 luma with PIL's integer
 * weights, L = (19595 R + 38470 G + 7471 B + 32768) >> 16 (Image.convert("L")). */
void image_convert_channels(const uint8_t *src, int sc, uint8_t *dst, int dc, int h, int w);

/* Bilinear resize of (sh, sw, c) pixels to (dh, dw, c), the convention of torchvision's
 * resize of a uint8 tensor with antialias=False (torch.nn.functional.interpolate,
 * mode "bilinear", align_corners=False): output pixel x samples the input at
 * (x + 0.5) * sw / dw - 0.5, clamped to >= 0, between its two neighbours (the right one
 * clamped to the last column), likewise for rows; computed in float and rounded to the
 * nearest integer, ties to even (torch.round), then clamped to [0, 255]. Without
 * antialiasing a large reduction aliases, as torchvision's does: resize offline when
 * images are much larger than the model's input. Equal sizes copy. */
void image_resize_bilinear(const uint8_t *src, int sh, int sw, int c, uint8_t *dst, int dh, int dw);

#endif
