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

#include "catalog.h"
#include "clock.h"
#include "dcache.h"
#include "dsprobe.h"
#include "errmsg.h"
#include "fs.h"
#include "hash.h"
#include "image.h"
#include "imgfolder.h"
#include "memest.h"
#include "npz.h"

/* Changes whenever the preprocessing would give other bytes for the same source and
 * request, so caches of an older pipeline are rebuilt rather than reused. */
#define DSLOAD_PIPELINE "decode-v1 bilinear-halfpixel-v1 luma601-pil"
/* what a built-in set's cache holds: dataset_load's images and labels as read */
#define DSLOAD_BUILTIN_PIPELINE "builtin-v1"
/* The bound of check_size when this host's memory cannot be read. */
#define DSLOAD_MAX_BYTES_UNKNOWN (64ull << 30)


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
        return errmsg_code(err, errlen, DATA_EFORMAT,
                           "%s: image is %dx%d, the model takes %dx%d (set dataset.resize to [%d, %d] to resize it)",
                           name, h, w, H, W, H, W);
    if (grow(&s->conv, &s->conv_cap, (size_t)h * w * C) != 0 || grow(&s->sized, &s->sized_cap, (size_t)H * W * C) != 0)
        return errmsg_code(err, errlen, DATA_ENOMEM, "%s: out of memory", name);
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

typedef struct reader reader_t;

typedef struct {
    const reader_t *reader; /* its format's row of READERS */
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

/* An image folder: its files listed (with their labels) and counted. */
static int open_folder(const dsload_opts_t *o, source_t *src, char *err, size_t errlen)
{
    if (imgfolder_scan(o->path, 1, &src->folder, err, errlen) != 0) return DATA_EFORMAT;
    src->probe.classes = src->folder.nclasses;
    src->probe.ntrain = src->folder.ntrain;
    src->probe.ntest = src->folder.ntest;
    src->probe.fingerprint = src->folder.fingerprint;
    return DATA_OK;
}

/* An .npz: opened, its arrays' headers and labels read (common/dsprobe.h). */
static int open_npz(const dsload_opts_t *o, source_t *src, char *err, size_t errlen)
{
    if (npz_open(o->path, &src->z, err, errlen) != 0) return DATA_ENOENT;
    if (dsprobe_npz(src->z, o->layout, &src->probe, src->labels, src->xh, err, errlen) != 0) return DATA_EFORMAT;
    return DATA_OK;
}

/* Per-channel mean and standard deviation of the training pixels on the [0, 1] scale
 * (population, exact integer sums), gathered image by image as a build writes them, so
 * that the pixels are not read again (the build keeps only a chunk resident). A channel
 * without variation gets std 1, so that normalising never divides by zero. */
typedef struct {
    uint64_t s1[DATA_MAX_CHANNELS], s2[DATA_MAX_CHANNELS];
    uint64_t n;
} chstats_t;

/* One (C, H, W) image; a NULL a adds nothing (the test split). */
static void chstats_add(chstats_t *a, const uint8_t *img, int C, size_t plane)
{
    if (!a) return;
    for (int k = 0; k < C; k++) {
        const uint8_t *p = img + (size_t)k * plane;
        uint64_t s1 = 0, s2 = 0;
        for (size_t j = 0; j < plane; j++) {
            s1 += p[j];
            s2 += (uint64_t)p[j] * p[j];
        }
        a->s1[k] += s1;
        a->s2[k] += s2;
    }
    a->n++;
}

static void chstats_finish(const chstats_t *a, int C, size_t plane, double *mean, double *std)
{
    for (int k = 0; k < C; k++) {
        double cnt = (double)a->n * (double)plane;
        double m = (double)a->s1[k] / cnt / 255.0, var = (double)a->s2[k] / cnt / (255.0 * 255.0) - m * m;
        mean[k] = m;
        std[k] = var > 1e-12 ? sqrt(var) : 1.0;
    }
    for (int k = C; k < DATA_MAX_CHANNELS; k++) mean[k] = 0.0, std[k] = 1.0;
}

/* Bytes of an .npz's x array read at a time: whole samples, at least one. */
#define DSLOAD_CHUNK_BYTES (8u << 20)
/* Images written between two dcache_build_release calls of an image folder. */
#define DSLOAD_RELEASE_EVERY 256

/* Decodes every image of an image folder's split into the build; the training split's
 * images go into stats as well. */
static int fill_folder(const dsload_opts_t *o, source_t *src, int split, dcache_build_t *b, chstats_t *stats, char *err,
                       size_t errlen)
{
    const imgfolder_file_t *files = split ? src->folder.test : src->folder.train;
    const int n = b->h.n[split]; /* the first n files (train_max, test_max) */
    const size_t image = (size_t)o->C * o->H * o->W;
    uint8_t *pixels = b->pixels[split];
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
        chstats_add(stats, pixels + (size_t)i * image, o->C, (size_t)o->H * o->W);
        b->labels[split][i] = files[i].label;
        if ((i + 1) % DSLOAD_RELEASE_EVERY == 0) dcache_build_release(b, split, (uint64_t)(i + 1) * image);
    }
    free(buf);
    image_free(&img);
    free(s.conv);
    free(s.sized);
    return rc;
}

/* Streams an .npz's x array of a split into the build, a chunk of samples at a time:
 * read, convert each image, write it, release the written pages, so that neither the
 * array nor the decoded split is ever resident whole (read whole, a 4.7 GB array grew the
 * worker to 8.5 GB). A C-order array holds each sample's bytes together; a
 * Fortran-order one spreads every sample over the whole array, so it is read whole (a
 * rare layout, within the same bound, dsload_user). */
static int fill_npz(const dsload_opts_t *o, source_t *src, int split, dcache_build_t *b, chstats_t *stats, char *err,
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
    /* samples per chunk */
    const int whole = h->fortran_order || sn == 0;
    const uint64_t per = whole ? (uint64_t)(n ? n : 1) : (sn >= DSLOAD_CHUNK_BYTES ? 1 : DSLOAD_CHUNK_BYTES / sn);
    /* the first nuse samples (train_max, test_max): the rest of a C-order array is not
     * read, nor its CRC checked */
    const int nuse = b->h.n[split];
    const uint64_t chunk = whole ? h->nbytes : per * sn;
    raw = malloc(chunk ? chunk : 1);
    hwc = malloc((size_t)ih * iw * c);
    if (!raw || !hwc) {
        rc = errmsg_code(err, errlen, DATA_ENOMEM, "%s: %s: out of memory (%llu bytes)", o->path, name,
                         (unsigned long long)chunk);
        goto out;
    }
    char where[600];
    snprintf(where, sizeof where, "%s: %s", o->path, name);
    const size_t image = (size_t)o->C * o->H * o->W;
    uint8_t *pixels = b->pixels[split];
    for (int i0 = 0; i0 < nuse && rc == DATA_OK; i0 += (int)per) {
        const int m = (uint64_t)(nuse - i0) < per ? nuse - i0 : (int)per;
        if (npz_array_read_part(src->z, &a, raw, whole ? h->nbytes : (uint64_t)m * sn, err, errlen) != 0) {
            rc = DATA_EFORMAT;
            goto out;
        }
        for (int i = i0; i < i0 + m && rc == DATA_OK; i++) {
            const uint8_t *sample = raw + (uint64_t)(i - i0) * sn;
            for (int y = 0; y < ih; y++)
                for (int x = 0; x < iw; x++)
                    for (int k = 0; k < c; k++) {
                        const uint8_t *p = sample + (uint64_t)y * sy + (uint64_t)x * sx + (uint64_t)k * sc;
                        uint8_t v;
                        if (h->kind == 'u') {
                            v = *p;
                        } else {
                            double f = npy_get_f64(h, p);
                            if (!(f >= 0.0 && f <= 1.0)) {
                                rc = errmsg_code(
                                    err, errlen, DATA_EFORMAT,
                                    "%s: value %g of sample %d is outside [0, 1] (float pixels are read on the [0, "
                                    "1] scale; save uint8 for 0..255)",
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
            chstats_add(stats, pixels + (size_t)i * image, o->C, (size_t)o->H * o->W);
        }
        dcache_build_release(b, split, (uint64_t)(i0 + m) * image);
    }
    if (rc == DATA_OK && (whole || nuse == n) && npz_array_finish(src->z, &a, err, errlen) != 0) rc = DATA_EFORMAT;
    if (rc == DATA_OK) memcpy(b->labels[split], src->labels[split], (size_t)nuse * sizeof *b->labels[split]);
out:
    npz_array_close(&a);
    free(raw);
    free(hwc);
    free(s.conv);
    free(s.sized);
    return rc;
}

/* ---- the readers, one per user format -------------------------------------------------- */

/* What dsload does differently for each of a user's formats (common/catalog.h's
 * CATALOG_FORMATS): the one place that tells an image folder from an .npz. */
struct reader {
    /* Lists or opens o->path into src (src->probe: classes, counts, fingerprint). */
    int (*open)(const dsload_opts_t *o, source_t *src, char *err, size_t errlen);
    /* Decodes split's first b->h.n[split] samples into the build (the training split's
     * into stats too). */
    int (*fill)(const dsload_opts_t *o, source_t *src, int split, dcache_build_t *b, chstats_t *stats, char *err,
                size_t errlen);
    /* dataset.layout matters (an .npz's 4-D x: nhwc or nchw), so it is in the cache's key */
    int has_layout;
    /* the splits' names in data sources and messages: "train" and the folder's test split
     * (a folder), else the arrays' ("x_train", "x_test") */
    int folder_splits;
};

static const reader_t READERS[CATALOG_FORMAT_N] = {
    [CATALOG_FORMAT_IMAGEFOLDER] = {open_folder, fill_folder, 0, 1},
    [CATALOG_FORMAT_NPZ] = {open_npz, fill_npz, 1, 0},
};

static int source_open(const dsload_opts_t *o, source_t *src, char *err, size_t errlen)
{
    memset(src, 0, sizeof *src);
    if ((unsigned)o->format >= CATALOG_FORMAT_N || !READERS[o->format].open)
        return errmsg_code(err, errlen, DATA_EUNKNOWN, "%s: dataset.format %s is not a user's format (%s)", o->path,
                           catalog_format_name(o->format), "imagefolder or npz");
    src->reader = &READERS[o->format];
    return src->reader->open(o, src, err, errlen);
}

/* ---- the cache --------------------------------------------------------------------------- */

/* The request's hash; a cache of the first n[0] / n[1] samples only (train_max, test_max
 * below the source's counts) is another request, and the key of every other stays as it
 * was before subsets shortened the decoding. */
static uint64_t request_key(const dsload_opts_t *o, const char *real, const int n[2], const dsprobe_t *p)
{
    char text[4096 + 256];
    /* the format by its catalog name: the key of every cache written when it was a string */
    int k = snprintf(text, sizeof text, "%s|%s|%s|%d|%d|%d|%d|%s", DSLOAD_PIPELINE, catalog_format_name(o->format),
                     real, READERS[o->format].has_layout ? (strcmp(o->layout, "nchw") == 0) : 0, o->C, o->H, o->W,
                     o->resize ? "resize" : "exact");
    if ((n[0] < p->ntrain || n[1] < p->ntest) && k > 0 && (size_t)k < sizeof text)
        snprintf(text + k, sizeof text - (size_t)k, "|first %d %d", n[0], n[1]);
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
    chstats_t stats = {0};
    for (int s = 0; s < 2 && rc == DATA_OK; s++) rc = src->reader->fill(o, src, s, &b, s ? NULL : &stats, err, errlen);
    if (rc != DATA_OK) {
        /* the one cleanup of a failed build: the temporary file goes */
        dcache_build_abort(&b);
        return rc;
    }
    chstats_finish(&stats, b.h.C, (size_t)b.h.H * b.h.W, b.h.mean, b.h.std);
    *h = b.h;
    if (dcache_build_commit(&b, split, err, errlen) != 0) return path ? 1 : DATA_ENOMEM;
    return DATA_OK;
}

/* The most bytes a user's data set may decode to (each x array as its header declares it,
 * and the decoded cache): PACER_DATA_MAX_MB when set, else this host's memory (MemTotal),
 * since the decoded set is mapped whole for training and a larger one could never train.
 * Returns 0 with err when PACER_DATA_MAX_MB is not a number of MiB. */
static uint64_t data_max_bytes(const char **from, char *err, size_t errlen)
{
    const char *env = getenv("PACER_DATA_MAX_MB");
    if (env && *env) {
        char *end;
        errno = 0;
        unsigned long long mb = strtoull(env, &end, 10);
        if (errno || *end || mb < 1 || mb > (1ull << 30) || *env < '0' || *env > '9') {
            errmsg_code(err, errlen, DATA_EFORMAT, "PACER_DATA_MAX_MB: '%.40s' is not a number of MiB (1 .. 2^30)", env);
            return 0;
        }
        *from = "PACER_DATA_MAX_MB";
        return (uint64_t)mb << 20;
    }
    double mem = memest_meminfo("MemTotal");
    *from = mem > 0 ? "this host's memory (MemTotal); PACER_DATA_MAX_MB sets another" : "a fixed bound";
    return mem > 0 ? (uint64_t)mem : DSLOAD_MAX_BYTES_UNKNOWN;
}

/* "(6000000, 28, 28)" */
static const char *shape_str(const npy_header_t *h, char *out, size_t len)
{
    size_t k = (size_t)snprintf(out, len, "(");
    for (int i = 0; i < h->ndim && k < len; i++)
        k += (size_t)snprintf(out + k, len - k, "%s%lld", i ? ", " : "", (long long)h->shape[i]);
    if (k < len) snprintf(out + k, len - k, "%s)", h->ndim == 1 ? "," : "");
    return out;
}

/* Refuses, before anything is decoded, a data set whose declared size is beyond
 * data_max_bytes: an .npz's x array by its header (a 4.6 MB archive of deflated zeros may
 * declare 4.7 GB), and what the cache would hold at the model's shape. */
static int check_size(const dsload_opts_t *o, const source_t *src, const dcache_header_t *h, char *err, size_t errlen)
{
    const char *from = "";
    uint64_t max = data_max_bytes(&from, err, errlen);
    if (!max) return DATA_EFORMAT;
    /* an .npz's x arrays by their headers (a folder has none: 0 bytes declared) */
    for (int s = 0; s < 2; s++) {
        char shape[128];
        if (src->xh[s].nbytes > max)
            return errmsg_code(
                err, errlen, DATA_EFORMAT,
                "%s: %s: shape %s of '%s' declares %llu bytes, more than the %llu bytes a data set may decode "
                "to (%s)",
                o->path, s ? "x_test" : "x_train", shape_str(&src->xh[s], shape, sizeof shape), src->xh[s].descr,
                (unsigned long long)src->xh[s].nbytes, (unsigned long long)max, from);
    }
    dcache_header_t l = *h;
    if (dcache_layout(&l) != 0 || l.file_bytes > max)
        return errmsg_code(err, errlen, DATA_EFORMAT,
                           "%s: %d training and %d test images of %dx%dx%d decode to %llu bytes, more than the %llu bytes a "
                           "data set may decode to (%s)",
                           o->path, h->n[0], h->n[1], h->C, h->H, h->W, (unsigned long long)l.file_bytes,
                           (unsigned long long)max, from);
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

/* What builds a cache's content: at path (NULL: in memory), h's key and fingerprint
 * set; h gets the layout and statistics. DATA_OK, a DATA_* error of the data, or 1 when
 * the file could not be written. */
typedef int (*cache_make_fn)(void *ctx, dcache_header_t *h, const char *path, dcache_split_t split[2], char *err,
                             size_t errlen);

/* Maps DIR/NAME-KEY.pdc when its header carries h's key and fingerprint, else builds it
 * with make under the build lock (ranks starting together: one decodes, the others wait
 * and map its file). Returns DATA_OK with split[] mapped, *h the file's header and
 * info->cache_path set; 1 when there is no cache to use (info->cache_note says why: the
 * caller decodes into memory); or a DATA_* error of the data. */
static int cache_open_or_build(const char *dir, const char *name, dcache_header_t *h, cache_make_fn make, void *ctx,
                               dcache_split_t split[2], dsload_info_t *info, char *err, size_t errlen)
{
    char path[4096], why[600] = "";
    dcache_header_t got;
    if (fs_mkdir_p(dir, 0755) != 0) {
        snprintf(info->cache_note, sizeof info->cache_note, "cannot create the cache directory %s: %s", dir,
                 strerror(errno));
        return 1;
    }
    if (dcache_path(dir, name, h->key, path, sizeof path) != 0) {
        snprintf(info->cache_note, sizeof info->cache_note, "cache directory path too long: %s", dir);
        return 1;
    }
    int lock = -1, rc = dcache_open(path, h->key, h->fingerprint, &got, split, why, sizeof why);
    if (rc == 0) {
        /* Take the build lock, then look again: whoever held it may have just built it. */
        lock = dcache_lock(path, why, sizeof why);
        if (lock >= 0) rc = dcache_open(path, h->key, h->fingerprint, &got, split, why, sizeof why);
    }
    if (rc == 1) {
        *h = got;
        rc = DATA_OK;
    } else if (lock >= 0) {
        if (strstr(why, "stale") || strstr(why, "damaged"))
            snprintf(info->cache_note, sizeof info->cache_note, "rebuilt: %.500s", why);
        /* A builder of this file killed before left its temporary file; swept as long as
         * any name path holds: a cut prefix would sweep other files. */
        char tmps[sizeof path + 8];
        const char *slash = strrchr(path, '/');
        snprintf(tmps, sizeof tmps, "%s.tmp.", slash ? slash + 1 : path);
        fs_atomic_sweep(dir, tmps, NULL, NULL);
        double t0 = clock_mono_s();
        rc = make(ctx, h, path, split, err, errlen);
        info->decode_s = clock_mono_s() - t0;
        if (rc == DATA_OK) {
            rc = dcache_open(path, h->key, h->fingerprint, &got, split, why, sizeof why) == 1 ? DATA_OK : 1;
            if (rc == DATA_OK) {
                *h = got;
                info->cache_built = 1;
            } else {
                snprintf(err, errlen, "%s", why);
            }
        }
        if (rc == 1) snprintf(info->cache_note, sizeof info->cache_note, "cannot write the cache: %s", err);
    } else {
        snprintf(info->cache_note, sizeof info->cache_note, "%.500s", why);
        rc = 1;
    }
    dcache_unlock(lock);
    if (rc == DATA_OK) snprintf(info->cache_path, sizeof info->cache_path, "%s", path);
    return rc;
}

typedef struct {
    const dsload_opts_t *o;
    source_t *src;
} user_make_t;

static int make_user(void *ctx, dcache_header_t *h, const char *path, dcache_split_t split[2], char *err, size_t errlen)
{
    const user_make_t *u = ctx;
    return build(u->o, u->src, h, path, split, err, errlen);
}

int dsload_user(const dsload_opts_t *o, dataset_t *train, dataset_t *test, dsload_info_t *info, char *err, size_t errlen)
{
    source_t src;
    dcache_header_t h;
    dcache_split_t split[2];
    char real[PATH_MAX];
    int rc;

    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    memset(info, 0, sizeof *info);
    memset(split, 0, sizeof split);
    if (o->C < 1 || o->C > DATA_MAX_CHANNELS || o->H < 1 || o->W < 1 || o->H > DCACHE_MAX_SIDE || o->W > DCACHE_MAX_SIDE)
        return errmsg_code(err, errlen, DATA_EFORMAT, "%s: target shape %dx%dx%d out of bounds", o->path, o->C, o->H,
                           o->W);
    if (!realpath(o->path, real)) return errmsg_code(err, errlen, DATA_ENOENT, "%s: %s", o->path, strerror(errno));
    rc = source_open(o, &src, err, errlen);
    if (rc != DATA_OK) goto out;

    memset(&h, 0, sizeof h);
    h.fingerprint = src.probe.fingerprint;
    h.C = o->C, h.H = o->H, h.W = o->W;
    /* the classes are the whole training split's (the model's outputs must match them) */
    h.classes = src.probe.classes;
    h.n[0] = o->train_max > 0 && o->train_max < src.probe.ntrain ? o->train_max : src.probe.ntrain;
    h.n[1] = o->test_max > 0 && o->test_max < src.probe.ntest ? o->test_max : src.probe.ntest;
    h.key = request_key(o, real, h.n, &src.probe);
    /* for people reading the header; a longer path is cut (the key holds all of it) */
    snprintf(h.source, sizeof h.source, "%.*s", (int)sizeof h.source - 1, real);
    info->classes = h.classes;
    rc = check_size(o, &src, &h, err, errlen);
    if (rc != DATA_OK) goto out;

    if (o->cache_dir && *o->cache_dir) {
        const char *base = strrchr(real, '/');
        user_make_t u = {o, &src};
        rc = cache_open_or_build(o->cache_dir, base && base[1] ? base + 1 : real, &h, make_user, &u, split, info, err,
                                 errlen);
        if (rc != DATA_OK && rc != 1) goto out;
    }
    if (!info->cache_path[0]) {
        double t0 = clock_mono_s();
        rc = build(o, &src, &h, NULL, split, err, errlen);
        info->decode_s = clock_mono_s() - t0;
        if (rc != DATA_OK) goto out;
    }
    take_split(train, &split[0], &h, 0, o->path, src.reader->folder_splits ? src.folder.test_split : NULL);
    take_split(test, &split[1], &h, 1, o->path, src.reader->folder_splits ? src.folder.test_split : NULL);
    for (int c = 0; c < DATA_MAX_CHANNELS; c++) {
        info->mean[c] = c < h.C ? h.mean[c] : 0.0;
        info->std[c] = c < h.C ? h.std[c] : 1.0;
    }
    info->cache_bytes = (long)h.file_bytes;
    rc = DATA_OK;
out:
    dcache_split_free(&split[0]);
    dcache_split_free(&split[1]);
    source_free(&src);
    return rc;
}

/* ---- the catalog's built-in sets (IDX, CIFAR) ----------------------------------------- */

typedef struct {
    const char *name, *dir;
} builtin_make_t;

/* Decodes both splits as dataset_load does and writes them, with the catalog's fixed
 * statistics, into a cache at path. */
static int make_builtin(void *ctx, dcache_header_t *h, const char *path, dcache_split_t split[2], char *err,
                        size_t errlen)
{
    const builtin_make_t *m = ctx;
    dataset_t d[2];
    memset(d, 0, sizeof d);
    int rc = dataset_load(m->name, m->dir, 1, &d[0], err, errlen);
    if (rc == DATA_OK) rc = dataset_load(m->name, m->dir, 0, &d[1], err, errlen);
    /* One shape per cache: splits that differ are left to the model's shape check, which
     * names the file (1: decoded into memory instead). */
    if (rc == DATA_OK && (d[0].C != d[1].C || d[0].H != d[1].H || d[0].W != d[1].W || d[0].C > DCACHE_MAX_CHANNELS))
        rc = errmsg_code(err, errlen, 1, "training images %dx%dx%d, test images %dx%dx%d (%s): not cached", d[0].C,
                         d[0].H, d[0].W, d[1].C, d[1].H, d[1].W, d[1].source);
    if (rc != DATA_OK) goto out;
    h->C = d[0].C, h->H = d[0].H, h->W = d[0].W;
    h->classes = d[0].num_classes;
    h->n[0] = d[0].n, h->n[1] = d[1].n;
    for (int c = 0; c < DCACHE_MAX_CHANNELS; c++) {
        h->mean[c] = c < h->C ? d[0].mean[c] : 0.0;
        h->std[c] = c < h->C ? d[0].std[c] : 1.0;
    }
    dcache_build_t b;
    if (dcache_build_begin(&b, h, path, err, errlen) != 0) {
        rc = 1;
        goto out;
    }
    for (int s = 0; s < 2; s++) {
        memcpy(b.pixels[s], d[s].pixels, (size_t)d[s].n * h->C * h->H * h->W);
        memcpy(b.labels[s], d[s].labels, (size_t)d[s].n * sizeof *d[s].labels);
    }
    *h = b.h;
    rc = dcache_build_commit(&b, split, err, errlen) != 0 ? 1 : DATA_OK;
out:
    dataset_free(&d[0]);
    dataset_free(&d[1]);
    return rc;
}

/* What a built-in set's cache is of: the files as found (real paths) and, for the
 * fingerprint, their sizes and modification times. DATA_OK or a DATA_* error. */
static int builtin_identity(const char *name, const char *dir, dcache_header_t *h, char first[2][PATH_MAX], char *err,
                            size_t errlen)
{
    char paths[CATALOG_FILES_MAX][DATA_PATH_MAX], real[PATH_MAX];
    catalog_dataset_t info;
    uint64_t key = hash_fnv1a(HASH_FNV1A_INIT, DSLOAD_BUILTIN_PIPELINE, strlen(DSLOAD_BUILTIN_PIPELINE));
    uint64_t fp = HASH_FNV1A_INIT;
    key = hash_fnv1a(key, name, strlen(name) + 1);
    for (int train = 1; train >= 0; train--) {
        int n = dataset_files(name, dir, train, &info, paths, err, errlen);
        if (n < 0) return n;
        for (int i = 0; i < n; i++) {
            struct stat st;
            if (!realpath(paths[i], real) || stat(real, &st) != 0)
                return errmsg_code(err, errlen, DATA_ENOENT, "%s: %s", paths[i], strerror(errno));
            if (i == 0) snprintf(first[!train], PATH_MAX, "%s", real);
            key = hash_fnv1a(key, real, strlen(real) + 1);
            const int64_t id[3] = {(int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec};
            fp = hash_fnv1a(fp, id, sizeof id);
        }
    }
    h->key = key;
    h->fingerprint = fp;
    return DATA_OK;
}

int dsload_builtin(const char *name, const char *dir, const char *cache_dir, dataset_t *train, dataset_t *test,
                   dsload_info_t *info, char *err, size_t errlen)
{
    dcache_header_t h;
    dcache_split_t split[2];
    char first[2][PATH_MAX] = {"", ""};
    memset(info, 0, sizeof *info);
    memset(split, 0, sizeof split);
    memset(&h, 0, sizeof h);
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    int rc = DATA_OK;
    /* Files that cannot be found or read are not cached: dataset_load below names what
     * is wrong, the training split's files first. */
    if (cache_dir && *cache_dir && builtin_identity(name, dir, &h, first, err, errlen) == DATA_OK) {
        snprintf(h.source, sizeof h.source, "%.*s", (int)sizeof h.source - 1, first[0]);
        builtin_make_t m = {name, dir};
        rc = cache_open_or_build(cache_dir, name, &h, make_builtin, &m, split, info, err, errlen);
        if (rc != DATA_OK && rc != 1) return rc;
    }
    if (!info->cache_path[0]) { /* no cache: decoded into this process's memory, as before */
        double t0 = clock_mono_s();
        rc = dataset_load(name, dir, 1, train, err, errlen);
        if (rc == DATA_OK) rc = dataset_load(name, dir, 0, test, err, errlen);
        info->decode_s = clock_mono_s() - t0;
        if (rc != DATA_OK) dataset_free(train);
        return rc;
    }
    take_split(train, &split[0], &h, 0, first[0], NULL);
    take_split(test, &split[1], &h, 1, first[1], NULL);
    /* messages name the files the images came from, as dataset_load's do */
    for (int s = 0; s < 2; s++) {
        dataset_t *d = s ? test : train;
        snprintf(d->source, sizeof d->source, "%.*s", (int)sizeof d->source - 1, first[s]);
        snprintf(d->label_source, sizeof d->label_source, "%.*s", (int)sizeof d->label_source - 1, first[s]);
    }
    info->classes = h.classes;
    info->cache_bytes = (long)h.file_bytes;
    for (int c = 0; c < DATA_MAX_CHANNELS; c++) {
        info->mean[c] = c < h.C ? h.mean[c] : 0.0;
        info->std[c] = c < h.C ? h.std[c] : 1.0;
    }
    return DATA_OK;
}

int dsload_convert(const dataset_t *in, int C, int H, int W, int resize, dataset_t *out, char *err, size_t errlen)
{
    const dsload_opts_t o = {.C = C, .H = H, .W = W, .resize = resize};
    const size_t iimage = (size_t)in->C * in->H * in->W, oimage = (size_t)C * H * W, plane = (size_t)in->H * in->W;
    scratch_t s = {0};
    int rc = DATA_OK;
    memset(out, 0, sizeof *out);
    if (C < 1 || C > DATA_MAX_CHANNELS || H < 1 || W < 1 || H > DCACHE_MAX_SIDE || W > DCACHE_MAX_SIDE)
        return errmsg_code(err, errlen, DATA_EFORMAT, "%s: target shape %dx%dx%d out of bounds", in->source, C, H, W);
    uint8_t *px = malloc((size_t)in->n * oimage), *hwc = malloc(iimage);
    int32_t *lab = malloc((size_t)in->n * sizeof *lab);
    if (!px || !hwc || !lab) {
        rc = errmsg_code(err, errlen, DATA_ENOMEM, "%s: out of memory converting %d images", in->source, in->n);
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
    const size_t plane = (size_t)d->H * d->W;
    chstats_t a = {0};
    for (int i = 0; i < d->n; i++) chstats_add(&a, d->pixels + (size_t)i * d->C * plane, d->C, plane);
    chstats_finish(&a, d->C, plane, mean, std);
    for (int c = 0; c < DATA_MAX_CHANNELS; c++) d->mean[c] = (float)mean[c], d->std[c] = (float)std[c];
}
