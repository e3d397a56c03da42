/* common/dsprobe.c - see dsprobe.h. */
#include "dsprobe.h"
#include "errmsg.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "imgfolder.h"
#include "tokfile.h"

#define DSPROBE_MAX_SIDE 16384

/* "(60000, 28, 28)" */
static const char *shape_text(const npy_header_t *h, char *buf, size_t len)
{
    size_t k = 0;
    k += (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < h->ndim && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)h->shape[i]);
    if (k < len) snprintf(buf + k, len - k, "%s)", h->ndim == 1 ? "," : "");
    return buf;
}

/* x: the image array's dtype and shape; *C, *H, *W its image shape. */
static int check_x(const npz_t *z, const char *name, const npy_header_t *h, int nchw, int *C, int *H, int *W, char *err,
                   size_t errlen)
{
    char sh[128];
    if (!((h->kind == 'u' && h->itemsize == 1) || h->kind == 'f'))
        return errmsg(err, errlen, "%s: %s: dtype '%s': images must be uint8 (0..255) or float32/float64 (0..1)",
                      npz_path(z), name, h->descr);
    if (h->ndim != 3 && h->ndim != 4)
        return errmsg(err, errlen, "%s: %s: shape %s: images must be (N, H, W), (N, H, W, C) or (N, C, H, W)",
                      npz_path(z), name, shape_text(h, sh, sizeof sh));
    int64_t c = 1, hh = h->shape[1], ww = h->shape[2];
    if (h->ndim == 4) {
        c = nchw ? h->shape[1] : h->shape[3];
        hh = nchw ? h->shape[2] : h->shape[1];
        ww = nchw ? h->shape[3] : h->shape[2];
    }
    if (c != 1 && c != 3)
        return errmsg(err, errlen,
                      "%s: %s: shape %s has %lld channels with dataset.layout %s (pacer reads 1 or 3; the layout says "
                      "which axis is the channel)",
                      npz_path(z), name, shape_text(h, sh, sizeof sh), (long long)c, nchw ? "nchw" : "nhwc");
    if (h->shape[0] < 1 || h->shape[0] > INT32_MAX)
        return errmsg(err, errlen, "%s: %s: shape %s: %lld samples (want 1 to %d)", npz_path(z), name,
                      shape_text(h, sh, sizeof sh), (long long)h->shape[0], INT32_MAX);
    if (hh < 1 || ww < 1 || hh > DSPROBE_MAX_SIDE || ww > DSPROBE_MAX_SIDE)
        return errmsg(err, errlen, "%s: %s: shape %s: images of %lld x %lld pixels (sides 1 to %d)", npz_path(z), name,
                      shape_text(h, sh, sizeof sh), (long long)hh, (long long)ww, DSPROBE_MAX_SIDE);
    *C = (int)c, *H = (int)hh, *W = (int)ww;
    return 0;
}

/* y: an integer vector of n labels, each in [0, limit); read into *out. *max gets the
 * largest. */
static int read_y(npz_t *z, const char *name, int64_t n, int limit, const char *xname, int32_t **out, int *max,
                  char *err, size_t errlen)
{
    npz_array_t a;
    char sh[128];
    uint8_t *raw = NULL;
    int32_t *lab = NULL;
    int rc = -1;
    *out = NULL;
    if (npz_array_open(z, name, &a, err, errlen) != 0) return -1;
    const npy_header_t *h = &a.h;
    if (h->kind != 'u' && h->kind != 'i') {
        errmsg(err, errlen, "%s: %s: dtype '%s': labels must be integers", npz_path(z), name, h->descr);
        goto out;
    }
    if (!(h->ndim == 1 || (h->ndim == 2 && h->shape[1] == 1))) {
        errmsg(err, errlen, "%s: %s: shape %s: labels must be (N,) or (N, 1)", npz_path(z), name,
               shape_text(h, sh, sizeof sh));
        goto out;
    }
    if (h->shape[0] != n) {
        errmsg(err, errlen, "%s: %s has %lld labels, %s has %lld images", npz_path(z), name, (long long)h->shape[0],
               xname, (long long)n);
        goto out;
    }
    raw = malloc(h->nbytes ? h->nbytes : 1);
    lab = malloc((size_t)n * sizeof *lab);
    if (!raw || !lab) {
        errmsg(err, errlen, "%s: %s: out of memory", npz_path(z), name);
        goto out;
    }
    if (npz_array_read(z, &a, raw, err, errlen) != 0) goto out;
    *max = -1;
    for (int64_t i = 0; i < n; i++) {
        int over = 0;
        int64_t v = npy_get_i64(h, raw + (size_t)i * (size_t)h->itemsize, &over);
        if (over || v < 0 || v >= limit) {
            if (!over && v >= 0 && limit < DSPROBE_MAX_CLASSES)
                errmsg(err, errlen,
                       "%s: %s: label %lld at index %lld is not a training class (y_train's labels are 0..%d)",
                       npz_path(z), name, (long long)v, (long long)i, limit - 1);
            else
                errmsg(err, errlen,
                       "%s: %s: label %s%lld at index %lld out of range (labels are 0 .. classes - 1, at most %d classes)",
                       npz_path(z), name, over ? ">" : "", (long long)v, (long long)i, DSPROBE_MAX_CLASSES);
            goto out;
        }
        lab[i] = (int32_t)v;
        if (v > *max) *max = (int)v;
    }
    *out = lab;
    lab = NULL;
    rc = 0;
out:
    npz_array_close(&a);
    free(raw);
    free(lab);
    return rc;
}

int dsprobe_npz(npz_t *z, const char *layout, dsprobe_t *out, int32_t *labels[2], npy_header_t xh[2], char *err,
                size_t errlen)
{
    static const char *const X[2] = {"x_train", "x_test"}, *const Y[2] = {"y_train", "y_test"};
    int nchw = layout && strcmp(layout, "nchw") == 0;
    int32_t *lab[2] = {NULL, NULL};
    memset(out, 0, sizeof *out);
    /* Name every missing array at once: a file saved with other names is the likely case. */
    char missing[64] = "";
    for (int s = 0; s < 2; s++) {
        if (!npz_has(z, X[s])) snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s", X[s]);
        if (!npz_has(z, Y[s])) snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s", Y[s]);
    }
    if (missing[0])
        return errmsg(err, errlen, "%s: no array%s%s (an .npz for pacer holds x_train, y_train, x_test, y_test)",
                      npz_path(z), strchr(missing + 1, ' ') ? "s" : "", missing);
    int64_t n[2];
    for (int s = 0; s < 2; s++) {
        npz_array_t a;
        int C = 0, H = 0, W = 0;
        if (npz_array_open(z, X[s], &a, err, errlen) != 0) return -1;
        int bad = check_x(z, X[s], &a.h, nchw, &C, &H, &W, err, errlen);
        if (!bad && xh) xh[s] = a.h;
        npz_array_close(&a);
        if (bad) return -1;
        n[s] = a.h.shape[0];
        if (s == 0) out->C = C, out->H = H, out->W = W;
    }
    int max_train = -1, max_test = -1;
    if (read_y(z, Y[0], n[0], DSPROBE_MAX_CLASSES, X[0], &lab[0], &max_train, err, errlen) != 0) return -1;
    if (read_y(z, Y[1], n[1], max_train + 1, X[1], &lab[1], &max_test, err, errlen) != 0) {
        free(lab[0]);
        return -1;
    }
    out->classes = max_train + 1;
    out->ntrain = (int)n[0];
    out->ntest = (int)n[1];
    out->fingerprint = npz_fingerprint(z);
    if (labels) {
        labels[0] = lab[0];
        labels[1] = lab[1];
    } else {
        free(lab[0]);
        free(lab[1]);
    }
    return 0;
}

/* The probes of the formats that have one (a user's: the built-in readers' files are the
 * catalog's own), indexed by the format (common/catalog.h). */
static int probe_npz(const char *path, const char *layout, dsprobe_t *out, char *err, size_t errlen)
{
    npz_t *z;
    if (npz_open(path, &z, err, errlen) != 0) return -1;
    int rc = dsprobe_npz(z, layout, out, NULL, NULL, err, errlen);
    npz_close(z);
    return rc;
}

static int probe_folder(const char *path, const char *layout, dsprobe_t *out, char *err, size_t errlen)
{
    (void)layout;
    imgfolder_t f;
    if (imgfolder_scan(path, 0, &f, err, errlen) != 0) return -1;
    out->classes = f.nclasses;
    out->ntrain = f.ntrain;
    out->ntest = f.ntest;
    imgfolder_free(&f);
    return 0;
}

/* Text and token data sets: the tokens of each split from the files' sizes and headers
 * (their ids are the worker's to check); classes the vocabulary where the format fixes it
 * (256 for bytes), else 0 (dataset.vocab_size says). ntrain, ntest: tokens, at most
 * INT_MAX counted. */
static int probe_tokens_of(const char *path, int width, dsprobe_t *out, char *err, size_t errlen)
{
    static const char *const SPLITS[2] = {"train", "val"};
    char(*paths)[TOKFILE_PATH_MAX] = malloc((size_t)TOKFILE_MAX_SHARDS * TOKFILE_PATH_MAX);
    if (!paths) return errmsg(err, errlen, "%s: out of memory", path);
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        const int n = tokfile_split_files(path, SPLITS[s], width, paths, err, errlen);
        uint64_t total = 0;
        rc = n < 0 ? -1 : 0;
        for (int i = 0; i < n && rc == 0; i++) {
            tokfile_layout_t lay;
            rc = tokfile_open_layout(paths[i], width, &lay, err, errlen);
            total += rc == 0 ? lay.ntokens : 0;
        }
        *(s == 0 ? &out->ntrain : &out->ntest) = total > INT_MAX ? INT_MAX : (int)total;
    }
    free(paths);
    out->classes = width == 1 ? 256 : 0;
    return rc;
}

static int probe_text(const char *path, const char *layout, dsprobe_t *out, char *err, size_t errlen)
{
    return probe_tokens_of(path, 1, out, err, errlen);
}

static int probe_tokens(const char *path, const char *layout, dsprobe_t *out, char *err, size_t errlen)
{
    return probe_tokens_of(path, 2, out, err, errlen);
}

static int (*const PROBES[CATALOG_FORMAT_N])(const char *, const char *, dsprobe_t *, char *, size_t) = {
    [CATALOG_FORMAT_IMAGEFOLDER] = probe_folder,
    [CATALOG_FORMAT_NPZ] = probe_npz,
    [CATALOG_FORMAT_TEXT] = probe_text,
    [CATALOG_FORMAT_TOKENS] = probe_tokens,
};

int dsprobe(const char *format, const char *path, const char *layout, dsprobe_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    catalog_format_t f;
    if (catalog_format_parse(format, &f) == 0 && PROBES[f]) return PROBES[f](path, layout, out, err, errlen);
    return errmsg(err, errlen, "dataset.format: %s has nothing to probe (only imagefolder, npz, text and tokens)",
                  format);
}
