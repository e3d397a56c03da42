/* worker/data.c - see data.h.
 *
 * Every file goes through zlib's gz* interface, which reads gzip and raw files alike,
 * so the loaders never care which one they got. Every read is checked for a short
 * count: a truncated file is an error with the expected and actual byte counts, never
 * a data set with garbage at the end.
 *
 * Error messages are one line, "<path>: <problem>", e.g.
 *   data/t10k-labels-idx1-ubyte: wrong magic 0x00000802 (want 0x00000801)
 *   data/train-images-idx3-ubyte: truncated: expected 47040000 bytes of pixel data, got 4096
 * On any error *out is left empty (all zero), so dataset_free(out) is always safe.
 *
 * Decisions:
 * - Trailing bytes after the data an IDX header announces are rejected (DATA_EFORMAT,
 *   "trailing data"): they mean the header and the content disagree, and silently
 *   dropping samples is worse than refusing the file. The same check also drives zlib to
 *   the end of a gzip stream, so a bad CRC or a missing gzip trailer is reported too.
 * - Buffers grow as data arrives instead of being sized from the header: a header that
 *   claims two billion images costs no more memory than the file really holds, and the
 *   answer is "truncated", not an allocation failure.
 * - A header with 0 samples, or a CIFAR file with no records, is an error: an empty
 *   data set is never what a training job meant.
 */
#include "data.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "dataroot.h"
#include "errmsg.h"

#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u
#define IDX_MAX_SIDE 1024u /* rows/cols beyond this are a corrupt header */
#define CIFAR_SIDE 32
#define CIFAR_IMAGE_BYTES (3 * CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_RECORD_BYTES (1 + CIFAR_IMAGE_BYTES)
#ifndef CIFAR_INITIAL_RECORDS
#define CIFAR_INITIAL_RECORDS 1024
#endif
/* These buffer sizes (and CIFAR_INITIAL_RECORDS above) may be set at build time: the
 * fuzzers (fuzz/fuzz.mk) make them small, which is both faster per input and drives the
 * growing paths harder. */
#ifndef READ_INITIAL_BYTES
#define READ_INITIAL_BYTES ((size_t)16 << 20) /* first buffer of a growing read */
#endif
#ifndef READ_CHUNK_BYTES
#define READ_CHUNK_BYTES ((size_t)1 << 20) /* bytes per gzread call */
#endif
#ifndef GZ_BUFFER_BYTES
#define GZ_BUFFER_BYTES (256u << 10) /* zlib's buffer; the default 8K is slow */
#endif
#define AUG_PAD 4 /* data_batch_gather's (CIFAR's) augmentation: pad, crop 0..2*PAD */

/* ---- errors ------------------------------------------------------------------------ */

/* Every error path is a single statement through common/errmsg.h: rc = errmsg_code(err,
 * errlen, DATA_E..., "..."); goto out; */

const char *data_strerror(int code)
{
    switch (code) {
    case DATA_OK: return "success";
    case DATA_ENOENT: return "file missing or unreadable";
    case DATA_EFORMAT: return "bad file format";
    case DATA_ELABEL: return "label out of range";
    case DATA_ENOMEM: return "out of memory";
    case DATA_EUNKNOWN: return "unknown data set";
    default: return "unknown error";
    }
}

/* ---- reading through zlib ---------------------------------------------------------- */

static int open_file(const char *path, gzFile *f, char *err, size_t errlen)
{
    /* The checked open's test of the file's type (dataroot.h): a FIFO is refused at once,
     * not waited on. Not its test of place: a built-in set may be read from outside the data
     * roots (PACER_SHARED's datasets). */
    char why[512];
    const int fd = dataroot_open_own(path, why, sizeof why);
    if (fd < 0)
        return errno == ENOENT ? errmsg_code(err, errlen, DATA_ENOENT, "%s: cannot open: %s", path, strerror(ENOENT))
                               : errmsg_code(err, errlen, DATA_ENOENT, "%s", why);
    *f = gzdopen(fd, "rb");
    if (!*f) {
        close(fd);
        return errmsg_code(err, errlen, DATA_ENOMEM, "%s: cannot open: out of memory", path);
    }
    gzbuffer(*f, GZ_BUFFER_BYTES);
    return DATA_OK;
}

/* Turns the state of a gzFile whose read failed or stopped early into an error.
 * Returns DATA_OK when the stream simply ended (a clean EOF). */
static int stream_error(gzFile f, const char *path, char *err, size_t errlen)
{
    int errnum = Z_OK;
    const char *msg = gzerror(f, &errnum);
    if (errnum == Z_OK) return DATA_OK;
    if (errnum == Z_ERRNO) return errmsg_code(err, errlen, DATA_ENOENT, "%s: read error: %s", path, strerror(errno));
    if (errnum == Z_MEM_ERROR) return errmsg_code(err, errlen, DATA_ENOMEM, "%s: out of memory in zlib", path);
    if (errnum == Z_BUF_ERROR) /* the gzip stream stops before its end */
        return errmsg_code(err, errlen, DATA_EFORMAT, "%s: truncated gzip stream (%s)", path, msg);
    return errmsg_code(err, errlen, DATA_EFORMAT, "%s: corrupt gzip data: %s", path, msg);
}

/* Reads up to len bytes into buf, stopping only at len, at the end of the stream or at
 * an error. *got says how many arrived. A gzip stream cut short counts as a short read
 * (the caller's "truncated" message is the useful one), any other failure is an error. */
static int read_upto(gzFile f, const char *path, void *buf, size_t len, size_t *got, char *err, size_t errlen)
{
    uint8_t *p = buf;
    *got = 0;
    while (*got < len) {
        size_t want = len - *got;
        if (want > READ_CHUNK_BYTES) want = READ_CHUNK_BYTES;
        int r = gzread(f, p + *got, (unsigned)want);
        if (r < 0) return stream_error(f, path, err, errlen);
        if (r == 0) {
            int errnum = Z_OK;
            gzerror(f, &errnum);
            if (errnum != Z_OK && errnum != Z_BUF_ERROR) return stream_error(f, path, err, errlen);
            break;
        }
        *got += (size_t)r;
    }
    return DATA_OK;
}

/* True when the gzip stream was cut short (as opposed to a raw file that just ends). */
static int gz_cut_short(gzFile f)
{
    int errnum = Z_OK;
    gzerror(f, &errnum);
    return errnum == Z_BUF_ERROR;
}

/* Reads exactly want bytes into a new buffer (*out, owned by the caller on success).
 * The buffer grows as data arrives, so a lying header cannot make us allocate more
 * than the file holds plus READ_INITIAL_BYTES. what names the data in the message. */
static int read_payload(gzFile f, const char *path, size_t want, const char *what, uint8_t **out, char *err,
                        size_t errlen)
{
    size_t cap = want < READ_INITIAL_BYTES ? want : READ_INITIAL_BYTES;
    size_t got = 0;
    int rc = DATA_OK;
    uint8_t *buf = malloc(cap ? cap : 1);

    *out = NULL;
    if (!buf) return errmsg_code(err, errlen, DATA_ENOMEM, "%s: out of memory (%zu bytes)", path, cap);
    while (got < want) {
        if (got == cap) {
            size_t ncap = cap > want / 2 ? want : cap * 2;
            uint8_t *nbuf = realloc(buf, ncap);
            if (!nbuf) {
                rc = errmsg_code(err, errlen, DATA_ENOMEM, "%s: out of memory (%zu bytes)", path, ncap);
                goto out;
            }
            buf = nbuf;
            cap = ncap;
        }
        size_t n = 0;
        rc = read_upto(f, path, buf + got, cap - got, &n, err, errlen);
        if (rc) goto out;
        got += n;
        if (got < cap) break; /* end of stream before the buffer filled: short */
    }
    if (got < want) {
        rc = errmsg_code(err, errlen, DATA_EFORMAT, "%s: truncated: expected %zu bytes of %s data, got %zu%s", path,
                         want, what, got, gz_cut_short(f) ? " (gzip stream ends early)" : "");
        goto out;
    }
    *out = buf;
    buf = NULL;
out:
    free(buf);
    return rc;
}

/* After the payload the stream must end. Reading one more byte also makes zlib reach
 * the gzip trailer and check its CRC, which a read of exactly the payload may not. */
static int expect_end(gzFile f, const char *path, size_t payload, const char *what, char *err, size_t errlen)
{
    if (gzgetc(f) != -1)
        return errmsg_code(err, errlen, DATA_EFORMAT, "%s: trailing data after %zu bytes of %s data", path, payload,
                           what);
    return stream_error(f, path, err, errlen);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads an IDX header of 4-byte big-endian words (magic first) into h[0..nwords). */
static int read_idx_header(gzFile f, const char *path, uint32_t magic, uint32_t *h, int nwords, char *err, size_t errlen)
{
    uint8_t raw[16];
    size_t want = (size_t)nwords * 4, got = 0;
    assert(nwords >= 1 && want <= sizeof raw);

    int rc = read_upto(f, path, raw, want, &got, err, errlen);
    if (rc) return rc;
    /* Check the magic as soon as there is one: a wrong file type is the better message. */
    if (got >= 4 && be32(raw) != magic)
        return errmsg_code(err, errlen, DATA_EFORMAT, "%s: wrong magic 0x%08x (want 0x%08x)", path, (unsigned)be32(raw),
                           (unsigned)magic);
    if (got < want)
        return errmsg_code(err, errlen, DATA_EFORMAT, "%s: truncated: expected %zu bytes of header, got %zu%s", path,
                           want, got, gz_cut_short(f) ? " (gzip stream ends early)" : "");
    for (int i = 0; i < nwords; i++) h[i] = be32(raw + 4 * i);
    return DATA_OK;
}

/* Parser results start from an empty data set with the identity transform. */
static void dataset_init(dataset_t *d)
{
    memset(d, 0, sizeof *d);
    for (int c = 0; c < DATA_MAX_CHANNELS; c++) d->std[c] = 1.0f;
}

/* ---- IDX --------------------------------------------------------------------------- */

int dataset_load_idx(const char *images_path, const char *labels_path, int classes, dataset_t *out, char *err,
                     size_t errlen)
{
    gzFile fi = NULL, fl = NULL;
    uint8_t *pixels = NULL, *lab8 = NULL;
    int32_t *labels = NULL;
    uint32_t ih[4] = {0}, lh[2] = {0}; /* zeroed: GCC -O3 cannot see read_idx_header fill them */
    int rc;

    dataset_init(out);
    if (classes < 1)
        return errmsg_code(err, errlen, DATA_EFORMAT, "%s: %d classes is not a class count", labels_path, classes);
    /* Both headers first: a count mismatch is found before any large read. */
    rc = open_file(images_path, &fi, err, errlen);
    if (rc) goto out;
    rc = read_idx_header(fi, images_path, IDX_IMAGES_MAGIC, ih, 4, err, errlen);
    if (rc) goto out;
    uint32_t n = ih[1], rows = ih[2], cols = ih[3];
    if (n == 0 || n > INT_MAX || rows == 0 || rows > IDX_MAX_SIDE || cols == 0 || cols > IDX_MAX_SIDE) {
        rc = errmsg_code(err, errlen, DATA_EFORMAT,
                         "%s: absurd dimensions %u images of %u x %u (want 1..%d images, sides "
                         "1..%u)",
                         images_path, (unsigned)n, (unsigned)rows, (unsigned)cols, INT_MAX, IDX_MAX_SIDE);
        goto out;
    }
    rc = open_file(labels_path, &fl, err, errlen);
    if (rc) goto out;
    rc = read_idx_header(fl, labels_path, IDX_LABELS_MAGIC, lh, 2, err, errlen);
    if (rc) goto out;
    if (lh[1] != n) {
        rc = errmsg_code(err, errlen, DATA_EFORMAT, "%s: count mismatch: %u labels, but %s has %u images", labels_path,
                         (unsigned)lh[1], images_path, (unsigned)n);
        goto out;
    }

    size_t npix = (size_t)n * rows * cols; /* < 2^31 * 2^20: no overflow in 64 bits */
    rc = read_payload(fi, images_path, npix, "pixel", &pixels, err, errlen);
    if (rc) goto out;
    rc = expect_end(fi, images_path, npix, "pixel", err, errlen);
    if (rc) goto out;
    rc = read_payload(fl, labels_path, n, "label", &lab8, err, errlen);
    if (rc) goto out;
    rc = expect_end(fl, labels_path, n, "label", err, errlen);
    if (rc) goto out;

    labels = malloc((size_t)n * sizeof *labels);
    if (!labels) {
        rc = errmsg_code(err, errlen, DATA_ENOMEM, "%s: out of memory (%u labels)", labels_path, (unsigned)n);
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (lab8[i] >= classes) {
            rc = errmsg_code(err, errlen, DATA_ELABEL, "%s: label %u at index %u out of range [0, %d)", labels_path,
                             (unsigned)lab8[i], (unsigned)i, classes);
            goto out;
        }
        labels[i] = lab8[i];
    }

    out->n = (int)n;
    out->C = 1;
    out->H = (int)rows;
    out->W = (int)cols;
    out->num_classes = classes;
    out->pixels = pixels;
    out->labels = labels;
    snprintf(out->source, sizeof out->source, "%s", images_path);
    snprintf(out->label_source, sizeof out->label_source, "%s", labels_path);
    pixels = NULL;
    labels = NULL;
out:
    free(pixels);
    free(lab8);
    free(labels);
    if (fi) gzclose(fi);
    if (fl) gzclose(fl);
    return rc;
}

/* ---- CIFAR-10 binary --------------------------------------------------------------- */

/* Makes room for one more record in the growing pixel and label arrays. */
static int cifar_reserve(uint8_t **pixels, int32_t **labels, size_t *cap, size_t n, const char *path, char *err,
                         size_t errlen)
{
    if (n < *cap) return DATA_OK;
    size_t ncap = *cap ? *cap * 2 : CIFAR_INITIAL_RECORDS;
    uint8_t *np = realloc(*pixels, ncap * CIFAR_IMAGE_BYTES);
    if (!np) return errmsg_code(err, errlen, DATA_ENOMEM, "%s: out of memory (%zu records)", path, ncap);
    *pixels = np;
    int32_t *nl = realloc(*labels, ncap * sizeof **labels);
    if (!nl) return errmsg_code(err, errlen, DATA_ENOMEM, "%s: out of memory (%zu records)", path, ncap);
    *labels = nl;
    *cap = ncap;
    return DATA_OK;
}

/* Appends the records of one file. A record's image bytes are already C, H, W order
 * (1024 R, then G, then B, each row-major), so they are copied as they are. */
static int cifar_read_file(const char *path, int classes, uint8_t **pixels, int32_t **labels, size_t *cap, size_t *n,
                           char *err, size_t errlen)
{
    gzFile f = NULL;
    uint8_t rec[CIFAR_RECORD_BYTES];
    size_t first = *n;
    int rc = open_file(path, &f, err, errlen);
    if (rc) goto out;
    for (;;) {
        size_t got = 0;
        rc = read_upto(f, path, rec, sizeof rec, &got, err, errlen);
        if (rc) goto out;
        if (got == 0) break;
        size_t k = *n - first; /* record index within this file */
        if (got < sizeof rec) {
            rc = errmsg_code(err, errlen, DATA_EFORMAT, "%s: truncated record: %zu bytes is not a multiple of %d%s",
                             path, k * CIFAR_RECORD_BYTES + got, CIFAR_RECORD_BYTES,
                             gz_cut_short(f) ? " (gzip stream ends early)" : "");
            goto out;
        }
        if (rec[0] >= classes) {
            rc = errmsg_code(err, errlen, DATA_ELABEL, "%s: label %u at index %zu out of range [0, %d)", path,
                             (unsigned)rec[0], k, classes);
            goto out;
        }
        if (*n >= (size_t)INT_MAX) {
            rc = errmsg_code(err, errlen, DATA_EFORMAT, "%s: more than %d records in total", path, INT_MAX);
            goto out;
        }
        rc = cifar_reserve(pixels, labels, cap, *n, path, err, errlen);
        if (rc) goto out;
        memcpy(*pixels + *n * CIFAR_IMAGE_BYTES, rec + 1, CIFAR_IMAGE_BYTES);
        (*labels)[*n] = rec[0];
        (*n)++;
    }
    if (*n == first)
        rc = errmsg_code(err, errlen, DATA_EFORMAT, "%s: empty file (no %d-byte records)", path, CIFAR_RECORD_BYTES);
out:
    if (f) gzclose(f);
    return rc;
}

int dataset_load_cifar(const char *const *paths, int npaths, int classes, dataset_t *out, char *err, size_t errlen)
{
    uint8_t *pixels = NULL;
    int32_t *labels = NULL;
    size_t cap = 0, n = 0;
    int rc = DATA_OK;

    dataset_init(out);
    if (!paths || npaths <= 0) return errmsg_code(err, errlen, DATA_ENOENT, "cifar10: no files given");
    if (classes < 1)
        return errmsg_code(err, errlen, DATA_EFORMAT, "%s: %d classes is not a class count", paths[0], classes);
    for (int i = 0; i < npaths; i++) {
        rc = cifar_read_file(paths[i], classes, &pixels, &labels, &cap, &n, err, errlen);
        if (rc) goto out;
    }
    /* Give back the unused tail of the last doubling; shrinking cannot fail in a way
     * that matters, so the old block is kept if it does. */
    if (n < cap) {
        uint8_t *np = realloc(pixels, n * CIFAR_IMAGE_BYTES);
        if (np) pixels = np;
        int32_t *nl = realloc(labels, n * sizeof *labels);
        if (nl) labels = nl;
    }
    out->n = (int)n;
    out->C = 3;
    out->H = CIFAR_SIDE;
    out->W = CIFAR_SIDE;
    out->num_classes = classes;
    out->pixels = pixels;
    out->labels = labels;
    snprintf(out->source, sizeof out->source, "%s", paths[0]);
    snprintf(out->label_source, sizeof out->label_source, "%s", paths[0]);
    pixels = NULL;
    labels = NULL;
out:
    free(pixels);
    free(labels);
    return rc;
}

/* ---- named data sets: the catalog's (common/catalog.h) ------------------------------- */

/* Finds dir/file, trying the raw name first and then file.gz; writes the one that exists
 * into path. When neither does, the message names the raw path. */
static int probe_file(const char *dir, const char *file, char *path, size_t pathlen, char *err, size_t errlen)
{
    int len = snprintf(path, pathlen, "%s/%s.gz", dir, file);
    if (len < 0 || (size_t)len >= pathlen)
        return errmsg_code(err, errlen, DATA_ENOENT, "%s/%s: path too long", dir, file);
    path[len - 3] = '\0'; /* the raw name */
    if (access(path, F_OK) == 0) return DATA_OK;
    path[len - 3] = '.';
    if (access(path, F_OK) == 0) return DATA_OK;
    path[len - 3] = '\0';
    return errmsg_code(err, errlen, DATA_ENOENT, "%s: not found (nor %s.gz)", path, file);
}

int dataset_files(const char *name, const char *dir, int train, catalog_dataset_t *info, char paths[][DATA_PATH_MAX],
                  char *err, size_t errlen)
{
    char def[DATA_PATH_MAX];
    if (!name || catalog_dataset_get(name, info) != 0) {
        char known[512];
        catalog_dataset_names(known, sizeof known, "", 0);
        return errmsg_code(err, errlen, DATA_EUNKNOWN, "unknown data set '%s' (known: %s)", name ? name : "(null)",
                           known);
    }
    if (!dir || !*dir) {
        if (catalog_dataset_default_dir(info, def, sizeof def) != 0)
            return errmsg_code(err, errlen, DATA_ENOENT, "%s: default directory path too long", name);
        dir = def;
    }
    const char(*files)[CATALOG_FILE_MAX] = train ? info->train_files : info->test_files;
    int nfiles = train ? info->ntrain : info->ntest;
    for (int i = 0; i < nfiles; i++) {
        int rc = probe_file(dir, files[i], paths[i], DATA_PATH_MAX, err, errlen);
        if (rc) return rc;
    }
    return nfiles;
}

int dataset_load(const char *name, const char *dir, int train, dataset_t *out, char *err, size_t errlen)
{
    char paths[CATALOG_FILES_MAX][DATA_PATH_MAX];
    const char *pp[CATALOG_FILES_MAX];
    catalog_dataset_t info;
    int rc;

    dataset_init(out);
    const int nfiles = dataset_files(name, dir, train, &info, paths, err, errlen);
    if (nfiles < 0) return nfiles;
    for (int i = 0; i < nfiles; i++) pp[i] = paths[i];
    switch (info.format) {
    case CATALOG_FORMAT_IDX: rc = dataset_load_idx(pp[0], pp[1], info.classes, out, err, errlen); break;
    case CATALOG_FORMAT_CIFAR: rc = dataset_load_cifar(pp, nfiles, info.classes, out, err, errlen); break;
    default:
        rc = errmsg_code(err, errlen, DATA_EUNKNOWN, "%s: format %s has no loader", name,
                         catalog_format_name(info.format));
    }
    if (rc) return rc;
    for (int c = 0; c < out->C && c < DATA_MAX_CHANNELS && c < CATALOG_CHANNELS_MAX; c++) {
        out->mean[c] = info.mean[c];
        out->std[c] = info.std[c];
    }
    return DATA_OK;
}

/* ---- fitting a model ---------------------------------------------------------------- */

/* A text or token set: windows of the model's positions, ids below its outputs. */
static int tokens_check_shape(const dataset_t *d, int C, int H, int W, int num_classes, const char *model, char *err,
                              size_t errlen)
{
    if (d->C != C || H != 1 || W != 1)
        return errmsg_code(err, errlen, DATA_EFORMAT,
                           "%s: windows of %d tokens, model %s takes %dx%dx%d (a language model takes (block_size))",
                           d->source, d->C, model, C, H, W);
    if (d->tok->max_id >= num_classes)
        return errmsg_code(err, errlen, DATA_ELABEL, "%s: token id %d, model %s has a vocabulary of %d (vocab_size)",
                           d->source, d->tok->max_id, model, num_classes);
    return DATA_OK;
}

int dataset_check_shape(const dataset_t *d, int C, int H, int W, int num_classes, const char *model, char *err,
                        size_t errlen)
{
    if (d->tok) return tokens_check_shape(d, C, H, W, num_classes, model, err, errlen);
    if (d->C != C || d->H != H || d->W != W)
        return errmsg_code(err, errlen, DATA_EFORMAT, "%s: images are %dx%dx%d, model %s takes %dx%dx%d", d->source,
                           d->C, d->H, d->W, model, C, H, W);
    for (int i = 0; i < d->n; i++)
        if (d->labels[i] < 0 || d->labels[i] >= num_classes)
            return errmsg_code(err, errlen, DATA_ELABEL, "%s: label %d at index %d out of range [0, %d) of model %s",
                               d->label_source, (int)d->labels[i], i, num_classes, model);
    return DATA_OK;
}

/* ---- ownership --------------------------------------------------------------------- */

void dataset_truncate(dataset_t *d, int n)
{
    if (n >= 0 && n < d->n) d->n = n;
}

void dataset_free(dataset_t *d)
{
    if (!d) return;
    if (d->tok) {
        for (int f = 0; f < d->tok->nfiles; f++)
            if (d->tok->maps[f]) munmap(d->tok->maps[f], d->tok->map_lens[f]);
        free(d->tok->tokens);
        free(d->tok->first);
        free(d->tok->maps);
        free(d->tok->map_lens);
        free(d->tok);
    }
    if (d->map) {
        munmap(d->map, d->map_len);
    } else {
        free(d->pixels);
        free(d->labels);
    }
    memset(d, 0, sizeof *d);
}

/* ---- the training-step side: sharding and batch gathering ------------------------- */

int data_shard(const int32_t *perm, int n, int rank, int world, int32_t *shard)
{
    if (world <= 0 || rank < 0 || rank >= world || n <= 0) return 0;
    int k = 0;
    /* long long: i + world must not overflow int when n is close to INT_MAX. */
    for (long long i = rank; i < n; i += world) shard[k++] = perm[i];
    return k;
}

int data_batch_gather(const dataset_t *d, const int32_t *idx, int count, float *x, size_t x_floats, int32_t *y,
                      int augment, rng_t *r)
{
    static const data_augment_t CIFAR = {AUG_PAD, 1};
    return data_batch_gather_aug(d, idx, count, x, x_floats, y, augment ? &CIFAR : NULL, r);
}

/* The token of file f at index k */
static int token_at(const data_tokens_t *t, int f, int64_t k)
{
    const uint8_t *p = t->tokens[f] + (size_t)k * (size_t)t->width;
    return t->width == 1 ? p[0] : p[0] | p[1] << 8;
}

/* Windows idx into x (the ids) and y (the next ids): the bounds checked first, as below. */
static int gather_windows(const dataset_t *d, const int32_t *idx, int count, float *x, size_t x_floats, int32_t *y)
{
    const data_tokens_t *t = d->tok;
    const int T = t->block;
    if (count < 0 || T < 1 || (size_t)count > x_floats / (size_t)T) return -1;
    for (int b = 0; b < count; b++)
        if (idx[b] < 0 || idx[b] >= d->n) return -1;
    for (int b = 0; b < count; b++) {
        int f = 0;
        while (f + 1 < t->nfiles && t->first[f + 1] <= idx[b]) f++; /* a few files: a walk */
        const int64_t k0 = (idx[b] - t->first[f]) * (int64_t)T;
        float *xs = x + (size_t)b * T;
        int32_t *ys = y ? y + (size_t)b * T : NULL;
        for (int i = 0; i < T; i++) {
            xs[i] = (float)token_at(t, f, k0 + i);
            if (ys) ys[i] = token_at(t, f, k0 + i + 1);
        }
    }
    return 0;
}

int data_batch_gather_aug(const dataset_t *d, const int32_t *idx, int count, float *x, size_t x_floats, int32_t *y,
                          const data_augment_t *aug, rng_t *r)
{
    if (d->tok) return gather_windows(d, idx, count, x, x_floats, y);
    const int C = d->C, H = d->H, W = d->W;
    const size_t plane = (size_t)H * W, image = (size_t)C * plane;
    float lut[DATA_MAX_CHANNELS][256]; /* normalised value of each pixel byte, per channel */

    /* The bounds are checked before anything is written: the buffer is sized for the
     * model, the shape comes from a file. image >= 1 and count >= 0 here, so the
     * division cannot overflow where count * image could. */
    if (C < 1 || C > DATA_MAX_CHANNELS || H < 1 || W < 1 || count < 0 || (aug && !r) ||
        (aug && (aug->pad < 0 || aug->pad > DATA_AUG_PAD_MAX)) || (size_t)count > x_floats / image)
        return -1;
    for (int b = 0; b < count; b++)
        if (idx[b] < 0 || idx[b] >= d->n) return -1;
    /* The table makes the per-pixel work a load and removes a division; its entries are
     * exactly the documented (pixel/255 - mean) / std. */
    for (int c = 0; c < C; c++)
        for (int p = 0; p < 256; p++) lut[c][p] = ((float)p / 255.0f - d->mean[c]) / d->std[c];

    for (int b = 0; b < count; b++) {
        const int32_t s = idx[b];
        const uint8_t *src = d->pixels + (size_t)s * image; /* (C, H, W) */
        float *dst = x + (size_t)b * image;                 /* (C, H, W) */
        if (y) y[b] = d->labels[s];
        if (!aug) {
            for (int c = 0; c < C; c++)
                for (size_t i = 0; i < plane; i++) dst[c * plane + i] = lut[c][src[c * plane + i]];
            continue;
        }
        /* Crop an H x W window at (oy, ox) out of the image padded by pad on each side,
         * then mirror it with probability 1/2 (each when asked for). Draw order per sample:
         * oy, ox, flip. The padding is pixel value 0, i.e. black before normalisation, which becomes
         * -mean/std after it (the usual torchvision RandomCrop(padding=4) on uint8). */
        const int crop = aug->pad;
        const int oy = crop ? (int)rng_below(r, (uint32_t)(2 * crop + 1)) : 0;
        const int ox = crop ? (int)rng_below(r, (uint32_t)(2 * crop + 1)) : 0;
        const int flip = aug->flip ? (int)rng_below(r, 2) : 0;
        for (int c = 0; c < C; c++) {
            const uint8_t *sp = src + c * plane;
            float *dp = dst + c * plane;
            const float pad = lut[c][0];
            for (int i = 0; i < H; i++) {
                const int sy = i + oy - crop;
                float *row = dp + (size_t)i * W;
                if (sy < 0 || sy >= H) {
                    for (int j = 0; j < W; j++) row[j] = pad;
                    continue;
                }
                const uint8_t *srow = sp + (size_t)sy * W;
                for (int j = 0; j < W; j++) {
                    const int sx = (flip ? W - 1 - j : j) + ox - crop;
                    row[j] = (sx < 0 || sx >= W) ? pad : lut[c][srow[sx]];
                }
            }
        }
    }
    return 0;
}
