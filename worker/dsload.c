/* worker/dsload.c - see dsload.h.
 *
 * Order of work: probe the source (list the folder and stat its files, or read the
 * .npz's headers and labels), which gives the counts and the fingerprint; with those,
 * map an existing cache, or take the build lock, look again (another rank or job may
 * have built it meanwhile), and decode. Errors in the data stop the build and name the
 * file; a cache that cannot be written is not an error (the data is decoded into memory,
 * and the log says why).
 */
#include "dsload.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "dcache.h"
#include "dsprobe.h"
#include "fs.h"
#include "hash.h"
#include "image.h"
#include "imgfolder.h"
#include "npz.h"

/* Changes whenever the preprocessing would give other bytes for the same source and
 * request, so caches of an older pipeline are rebuilt rather than reused. */
#define DSLOAD_PIPELINE "decode-v1 bilinear-halfpixel-v1 luma601-pil"

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ---- one image into the cache's layout ------------------------------------------------ */

/* Scratch buffers of the pipeline, grown once to the largest image seen. */
typedef struct {
    uint8_t *conv, *sized;
    size_t conv_cap, sized_cap;
} scratch_t;

static int grow(uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    uint8_t *q = realloc(*p, need);
    if (!q) return -1;
    *p = q;
    *cap = need;
    return 0;
}

/* (h, w, c) pixels -> channels C, size H x W (resized when allowed), written as (C, H, W)
 * into dst. name is for the message when the size is wrong and resizing is off. */
static int place_image(const dsload_opts_t *o, const uint8_t *px, int h, int w, int c, scratch_t *s, uint8_t *dst,
                       const char *name, char *err, size_t errlen)
{
    const int C = o->C, H = o->H, W = o->W;
    if (!o->resize && (h != H || w != W))
        return fail(err, errlen, DATA_EFORMAT,
                    "%s: image is %dx%d, the model takes %dx%d (set dataset.resize to [%d, %d] to resize it)", name, h,
                    w, H, W, H, W);
    if (grow(&s->conv, &s->conv_cap, (size_t)h * w * C) != 0 || grow(&s->sized, &s->sized_cap, (size_t)H * W * C) != 0)
        return fail(err, errlen, DATA_ENOMEM, "%s: out of memory", name);
    const uint8_t *hwc = px;
    if (c != C) {
        image_convert_channels(px, c, s->conv, C, h, w);
        hwc = s->conv;
    }
    if (h != H || w != W) {
        image_resize_bilinear(hwc, h, w, C, s->sized, H, W);
        hwc = s->sized;
    }
    const size_t plane = (size_t)H * W;
    for (int k = 0; k < C; k++)
        for (size_t i = 0; i < plane; i++) dst[k * plane + i] = hwc[i * C + k];
    return DATA_OK;
}

/* ---- sources ---------------------------------------------------------------------------- */

typedef struct {
    int is_npz;
    imgfolder_t folder;
    npz_t *z;
    dsprobe_t probe;
    int32_t *labels[2]; /* npz */
    npy_header_t xh[2]; /* npz */
} source_t;

static void source_free(source_t *src)
{
    imgfolder_free(&src->folder);
    npz_close(src->z);
    free(src->labels[0]);
    free(src->labels[1]);
    memset(src, 0, sizeof *src);
}

static int source_open(const dsload_opts_t *o, source_t *src, char *err, size_t errlen)
{
    memset(src, 0, sizeof *src);
    src->is_npz = strcmp(o->format, "npz") == 0;
    if (!src->is_npz) {
        if (imgfolder_scan(o->path, 1, &src->folder, err, errlen) != 0) return DATA_EFORMAT;
        src->probe.classes = src->folder.nclasses;
        src->probe.ntrain = src->folder.ntrain;
        src->probe.ntest = src->folder.ntest;
        src->probe.fingerprint = src->folder.fingerprint;
        return DATA_OK;
    }
    if (npz_open(o->path, &src->z, err, errlen) != 0) return DATA_ENOENT;
    if (dsprobe_npz(src->z, o->layout, &src->probe, src->labels, src->xh, err, errlen) != 0) return DATA_EFORMAT;
    return DATA_OK;
}

/* Decodes every image of an image folder's split into the build. */
static int fill_folder(const dsload_opts_t *o, const source_t *src, int split, uint8_t *pixels, int32_t *labels,
                       char *err, size_t errlen)
{
    const imgfolder_file_t *files = split ? src->folder.test : src->folder.train;
    const int n = split ? src->folder.ntest : src->folder.ntrain;
    const size_t image = (size_t)o->C * o->H * o->W;
    uint8_t *buf = NULL;
    size_t cap = 0;
    image_t img = {0};
    scratch_t s = {0};
    int rc = DATA_OK;
    for (int i = 0; i < n && rc == DATA_OK; i++) {
        int irc = image_load(files[i].path, &buf, &cap, &img, err, errlen);
        if (irc != IMAGE_OK) {
            rc = irc == IMAGE_ENOMEM ? DATA_ENOMEM : irc == IMAGE_EIO ? DATA_ENOENT : DATA_EFORMAT;
            break;
        }
        rc = place_image(o, img.px, img.h, img.w, img.c, &s, pixels + (size_t)i * image, files[i].path, err, errlen);
        labels[i] = files[i].label;
    }
    free(buf);
    image_free(&img);
    free(s.conv);
    free(s.sized);
    return rc;
}

/* Reads an .npz's x array of a split and converts every image into the build. */
static int fill_npz(const dsload_opts_t *o, source_t *src, int split, uint8_t *pixels, int32_t *labels, char *err,
                    size_t errlen)
{
    const char *name = split ? "x_test" : "x_train";
    const int nchw = strcmp(o->layout, "nchw") == 0;
    npz_array_t a;
    uint8_t *raw = NULL, *hwc = NULL;
    scratch_t s = {0};
    int rc = DATA_OK;
    if (npz_array_open(src->z, name, &a, err, errlen) != 0) return DATA_EFORMAT;
    const npy_header_t *h = &a.h;
    /* the layout was checked by dsprobe_npz */
    const int n = (int)h->shape[0], four = h->ndim == 4;
    const int c = four ? (int)(nchw ? h->shape[1] : h->shape[3]) : 1;
    const int ih = (int)(four && nchw ? h->shape[2] : h->shape[1]);
    const int iw = (int)(four && nchw ? h->shape[3] : h->shape[2]);
    uint64_t st[NPY_MAX_DIMS];
    npy_strides(h, st);
    /* byte strides of sample, row, column, channel */
    const uint64_t sn = st[0], sy = four && nchw ? st[2] : st[1], sx = four && nchw ? st[3] : st[2];
    const uint64_t sc = four ? (nchw ? st[1] : st[3]) : 0;
    raw = malloc(h->nbytes ? h->nbytes : 1);
    hwc = malloc((size_t)ih * iw * c);
    if (!raw || !hwc) {
        rc = fail(err, errlen, DATA_ENOMEM, "%s: %s: out of memory (%llu bytes)", o->path, name,
                  (unsigned long long)h->nbytes);
        goto out;
    }
    if (npz_array_read(src->z, &a, raw, err, errlen) != 0) {
        rc = DATA_EFORMAT;
        goto out;
    }
    char where[600];
    snprintf(where, sizeof where, "%s: %s", o->path, name);
    const size_t image = (size_t)o->C * o->H * o->W;
    for (int i = 0; i < n && rc == DATA_OK; i++) {
        for (int y = 0; y < ih; y++)
            for (int x = 0; x < iw; x++)
                for (int k = 0; k < c; k++) {
                    const uint8_t *p = raw + (uint64_t)i * sn + (uint64_t)y * sy + (uint64_t)x * sx + (uint64_t)k * sc;
                    uint8_t v;
                    if (h->kind == 'u') {
                        v = *p;
                    } else {
                        double f = npy_get_f64(h, p);
                        if (!(f >= 0.0 && f <= 1.0)) {
                            rc = fail(err, errlen, DATA_EFORMAT,
                                      "%s: value %g of sample %d is outside [0, 1] (float pixels are read on the [0, 1] "
                                      "scale; save uint8 for 0..255)",
                                      where, f, i);
                            goto out;
                        }
                        v = (uint8_t)lrint(f * 255.0);
                    }
                    hwc[((size_t)y * iw + x) * c + k] = v;
                }
        char what[700];
        snprintf(what, sizeof what, "%s[%d]", where, i);
        rc = place_image(o, hwc, ih, iw, c, &s, pixels + (size_t)i * image, what, err, errlen);
    }
    memcpy(labels, src->labels[split], (size_t)n * sizeof *labels);
out:
    npz_array_close(&a);
    free(raw);
    free(hwc);
    free(s.conv);
    free(s.sized);
    return rc;
}

/* Per-channel mean and standard deviation of the training pixels on the [0, 1] scale
 * (population, exact integer sums). A channel without variation gets std 1, so that
 * normalising never divides by zero. */
static void channel_stats(const uint8_t *px, int n, int C, int H, int W, double *mean, double *std)
{
    const size_t plane = (size_t)H * W;
    for (int k = 0; k < C; k++) {
        uint64_t s1 = 0, s2 = 0;
        for (int i = 0; i < n; i++) {
            const uint8_t *p = px + ((size_t)i * C + k) * plane;
            for (size_t j = 0; j < plane; j++) {
                s1 += p[j];
                s2 += (uint64_t)p[j] * p[j];
            }
        }
        double cnt = (double)n * (double)plane;
        double m = (double)s1 / cnt / 255.0, var = (double)s2 / cnt / (255.0 * 255.0) - m * m;
        mean[k] = m;
        std[k] = var > 1e-12 ? sqrt(var) : 1.0;
    }
    for (int k = C; k < DATA_MAX_CHANNELS; k++) mean[k] = 0.0, std[k] = 1.0;
}

/* ---- the cache --------------------------------------------------------------------------- */

static uint64_t request_key(const dsload_opts_t *o, const char *real)
{
    char text[4096 + 256];
    snprintf(text, sizeof text, "%s|%s|%s|%d|%d|%d|%d|%s", DSLOAD_PIPELINE, o->format, real,
             strcmp(o->format, "npz") == 0 ? (strcmp(o->layout, "nchw") == 0) : 0, o->C, o->H, o->W,
             o->resize ? "resize" : "exact");
    return hash_fnv1a(HASH_FNV1A_INIT, text, strlen(text));
}

/* Decodes into a new cache file at path (NULL: into memory); *h gets the layout and the
 * statistics. Returns DATA_OK, a DATA_* error of the data, or 1 when the cache file could
 * not be written (the caller then decodes into memory). */
static int build(const dsload_opts_t *o, source_t *src, dcache_header_t *h, const char *path, dcache_split_t split[2],
                 char *err, size_t errlen)
{
    dcache_build_t b;
    if (dcache_build_begin(&b, h, path, err, errlen) != 0) return path ? 1 : DATA_ENOMEM; /* 1: try in memory */
    int rc = DATA_OK;
    for (int s = 0; s < 2 && rc == DATA_OK; s++)
        rc = src->is_npz ? fill_npz(o, src, s, b.pixels[s], b.labels[s], err, errlen)
                         : fill_folder(o, src, s, b.pixels[s], b.labels[s], err, errlen);
    if (rc != DATA_OK) {
        dcache_build_abort(&b);
        return rc;
    }
    channel_stats(b.pixels[0], b.h.n[0], b.h.C, b.h.H, b.h.W, b.h.mean, b.h.std);
    *h = b.h;
    if (dcache_build_commit(&b, split, err, errlen) != 0) return path ? 1 : DATA_ENOMEM;
    return DATA_OK;
}

/* Fills a dataset_t from a mapped split. */
static void take_split(dataset_t *d, dcache_split_t *s, const dcache_header_t *h, int split, const char *path,
                       const char *test_split)
{
    memset(d, 0, sizeof *d);
    d->n = h->n[split];
    d->C = h->C, d->H = h->H, d->W = h->W;
    d->num_classes = h->classes;
    d->pixels = s->pixels;
    d->labels = s->labels;
    d->map = s->map;
    d->map_len = s->map_len;
    for (int c = 0; c < DATA_MAX_CHANNELS; c++) {
        d->mean[c] = c < h->C ? (float)h->mean[c] : 0.0f;
        d->std[c] = c < h->C ? (float)h->std[c] : 1.0f;
    }
    if (test_split) {
        snprintf(d->source, sizeof d->source, "%s/%s", path, split ? test_split : "train");
        snprintf(d->label_source, sizeof d->label_source, "%s/%s", path, split ? test_split : "train");
    } else {
        snprintf(d->source, sizeof d->source, "%s: %s", path, split ? "x_test" : "x_train");
        snprintf(d->label_source, sizeof d->label_source, "%s: %s", path, split ? "y_test" : "y_train");
    }
    memset(s, 0, sizeof *s);
}

int dsload_user(const dsload_opts_t *o, dataset_t *train, dataset_t *test, dsload_info_t *info, char *err, size_t errlen)
{
    source_t src;
    dcache_header_t h;
    dcache_split_t split[2];
    char path[4096] = "", real[PATH_MAX], why[600] = "";
    int lock = -1, rc;

    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    memset(info, 0, sizeof *info);
    memset(split, 0, sizeof split);
    if (o->C < 1 || o->C > DATA_MAX_CHANNELS || o->H < 1 || o->W < 1 || o->H > DCACHE_MAX_SIDE || o->W > DCACHE_MAX_SIDE)
        return fail(err, errlen, DATA_EFORMAT, "%s: target shape %dx%dx%d out of bounds", o->path, o->C, o->H, o->W);
    if (!realpath(o->path, real)) return fail(err, errlen, DATA_ENOENT, "%s: %s", o->path, strerror(errno));
    rc = source_open(o, &src, err, errlen);
    if (rc != DATA_OK) goto out;

    memset(&h, 0, sizeof h);
    h.key = request_key(o, real);
    h.fingerprint = src.probe.fingerprint;
    h.C = o->C, h.H = o->H, h.W = o->W;
    h.classes = src.probe.classes;
    h.n[0] = src.probe.ntrain;
    h.n[1] = src.probe.ntest;
    /* for people reading the header; a longer path is cut (the key holds all of it) */
    snprintf(h.source, sizeof h.source, "%.*s", (int)sizeof h.source - 1, real);
    info->classes = h.classes;

    if (o->cache_dir && *o->cache_dir) {
        const char *base = strrchr(real, '/');
        if (fs_mkdir_p(o->cache_dir, 0755) != 0)
            snprintf(info->cache_note, sizeof info->cache_note, "cannot create the cache directory %s: %s",
                     o->cache_dir, strerror(errno));
        else if (dcache_path(o->cache_dir, base && base[1] ? base + 1 : real, h.key, path, sizeof path) != 0)
            snprintf(info->cache_note, sizeof info->cache_note, "cache directory path too long: %s", o->cache_dir);
    }
    if (path[0]) {
        dcache_header_t got;
        rc = dcache_open(path, h.key, h.fingerprint, &got, split, why, sizeof why);
        if (rc == 0) {
            /* Take the build lock, then look again: whoever held it may have just built it. */
            lock = dcache_lock(path, why, sizeof why);
            if (lock >= 0) rc = dcache_open(path, h.key, h.fingerprint, &got, split, why, sizeof why);
        }
        if (rc == 1) {
            h = got;
            snprintf(info->cache_path, sizeof info->cache_path, "%s", path);
        } else if (lock >= 0) {
            if (strstr(why, "stale") || strstr(why, "damaged"))
                snprintf(info->cache_note, sizeof info->cache_note, "rebuilt: %.500s", why);
            double t0 = clock_mono_s();
            rc = build(o, &src, &h, path, split, err, errlen);
            info->decode_s = clock_mono_s() - t0;
            if (rc == DATA_OK) {
                dcache_header_t mapped;
                rc = dcache_open(path, h.key, h.fingerprint, &mapped, split, why, sizeof why) == 1 ? DATA_OK : 1;
                if (rc == DATA_OK) {
                    h = mapped;
                    info->cache_built = 1;
                    snprintf(info->cache_path, sizeof info->cache_path, "%s", path);
                } else {
                    snprintf(err, errlen, "%s", why);
                }
            }
            if (rc == 1) {
                snprintf(info->cache_note, sizeof info->cache_note, "cannot write the cache: %s", err);
                path[0] = 0;
            } else if (rc != DATA_OK) {
                goto out;
            }
        } else {
            snprintf(info->cache_note, sizeof info->cache_note, "%.500s", why);
            path[0] = 0;
        }
    }
    if (!info->cache_path[0]) {
        double t0 = clock_mono_s();
        rc = build(o, &src, &h, NULL, split, err, errlen);
        info->decode_s = clock_mono_s() - t0;
        if (rc != DATA_OK) goto out;
    }
    take_split(train, &split[0], &h, 0, o->path, src.is_npz ? NULL : src.folder.test_split);
    take_split(test, &split[1], &h, 1, o->path, src.is_npz ? NULL : src.folder.test_split);
    for (int c = 0; c < DATA_MAX_CHANNELS; c++) {
        info->mean[c] = c < h.C ? h.mean[c] : 0.0;
        info->std[c] = c < h.C ? h.std[c] : 1.0;
    }
    info->cache_bytes = (long)h.file_bytes;
    rc = DATA_OK;
out:
    dcache_unlock(lock);
    dcache_split_free(&split[0]);
    dcache_split_free(&split[1]);
    source_free(&src);
    return rc;
}

int dsload_convert(const dataset_t *in, int C, int H, int W, int resize, dataset_t *out, char *err, size_t errlen)
{
    const dsload_opts_t o = {.C = C, .H = H, .W = W, .resize = resize};
    const size_t iimage = (size_t)in->C * in->H * in->W, oimage = (size_t)C * H * W, plane = (size_t)in->H * in->W;
    scratch_t s = {0};
    int rc = DATA_OK;
    memset(out, 0, sizeof *out);
    if (C < 1 || C > DATA_MAX_CHANNELS || H < 1 || W < 1 || H > DCACHE_MAX_SIDE || W > DCACHE_MAX_SIDE)
        return fail(err, errlen, DATA_EFORMAT, "%s: target shape %dx%dx%d out of bounds", in->source, C, H, W);
    uint8_t *px = malloc((size_t)in->n * oimage), *hwc = malloc(iimage);
    int32_t *lab = malloc((size_t)in->n * sizeof *lab);
    if (!px || !hwc || !lab) {
        rc = fail(err, errlen, DATA_ENOMEM, "%s: out of memory converting %d images", in->source, in->n);
        goto out;
    }
    for (int i = 0; i < in->n && rc == DATA_OK; i++) {
        const uint8_t *src = in->pixels + (size_t)i * iimage;
        for (int k = 0; k < in->C; k++)
            for (size_t j = 0; j < plane; j++) hwc[j * in->C + k] = src[k * plane + j];
        char name[DATA_SOURCE_MAX + 32];
        snprintf(name, sizeof name, "%s[%d]", in->source, i);
        rc = place_image(&o, hwc, in->H, in->W, in->C, &s, px + (size_t)i * oimage, name, err, errlen);
    }
    if (rc != DATA_OK) goto out;
    memcpy(lab, in->labels, (size_t)in->n * sizeof *lab);
    *out = *in;
    out->C = C, out->H = H, out->W = W;
    out->pixels = px;
    out->labels = lab;
    out->map = NULL;
    out->map_len = 0;
    for (int k = in->C; k < C; k++) out->mean[k] = in->mean[0], out->std[k] = in->std[0];
    px = NULL;
    lab = NULL;
out:
    free(px);
    free(hwc);
    free(lab);
    free(s.conv);
    free(s.sized);
    return rc;
}

void dsload_default_cache_dir(char *out, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg == '/') snprintf(out, len, "%s/pacer/data", xdg);
    else if (home && *home == '/') snprintf(out, len, "%s/.cache/pacer/data", home);
    else if (len) out[0] = 0;
}

void dsload_stats(dataset_t *d)
{
    double mean[DATA_MAX_CHANNELS], std[DATA_MAX_CHANNELS];
    channel_stats(d->pixels, d->n, d->C, d->H, d->W, mean, std);
    for (int c = 0; c < DATA_MAX_CHANNELS; c++) d->mean[c] = (float)mean[c], d->std[c] = (float)std[c];
}
