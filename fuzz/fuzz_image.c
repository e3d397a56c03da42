/* fuzz/fuzz_image.c - libFuzzer target for the PNG and JPEG decoders (worker/image.c):
 * libpng's and libjpeg-turbo's own parsers behind pacer's error handling, which turns
 * every library error and every libjpeg warning into a longjmp back and a message.
 * Build and run: make fuzz-image (built with small bounds, IMAGE_MAX_PIXELS 2^20 and
 * sides up to 4096, so that inputs announcing large images are refused quickly: the
 * size check itself is the code under test, at any bound).
 *
 * Invariants: a refusal is one line that names the file and never quotes the file's
 * first bytes (a file that is not an image may be one the client must not read); a decoded image has 1 or 3
 * channels and sides within the bounds; the pixels it returns are then converted to the
 * other channel count and resized to 7 x 5 as a data set's would be (ASan checks the
 * buffers). Seeds in fuzz/corpus/image/: PNGs (gray, RGB, RGBA, palette, 16-bit,
 * interlaced) and JPEGs (gray, RGB, progressive, CMYK) written by PIL.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static image_t img;
    char err[1024] = "";
    int rc = image_decode(data, size, "fuzz.img", &img, err, sizeof err);
    if (rc != IMAGE_OK) {
        if (strncmp(err, "fuzz.img: ", 10) != 0 || strchr(err, '\n')) abort();
        /* never the file's leading bytes, as hex (issue 42: /etc/passwd quoted) */
        char hex[3 * 4] = "";
        if (size >= 4) {
            snprintf(hex, sizeof hex, "%02x %02x %02x", data[0], data[1], data[2]);
            if (strstr(err, hex) && !(data[0] == 0xff || data[0] == 0x89)) abort();
        }
        return 0;
    }
    if ((img.c != 1 && img.c != 3) || img.w < 1 || img.h < 1 || img.w > IMAGE_MAX_SIDE || img.h > IMAGE_MAX_SIDE ||
        (long)img.w * img.h > IMAGE_MAX_PIXELS)
        abort();
    int oc = 4 - img.c; /* 1 <-> 3 */
    uint8_t *conv = malloc((size_t)img.w * img.h * oc), out[7 * 5 * 3];
    if (!conv) return 0;
    image_convert_channels(img.px, img.c, conv, oc, img.h, img.w);
    image_resize_bilinear(conv, img.h, img.w, oc, out, 7, 5);
    free(conv);
    return 0;
}
