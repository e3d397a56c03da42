/* worker/data.h - data sets: IDX (MNIST, Fashion-MNIST) and CIFAR-10 binary loaders,
 * normalisation, seeded shuffling, sharding by rank, augmentation. A user's image folder
 * or .npz arrives here decoded (worker/dsload.h) and is gathered the same way.
 *
 * A dataset_t owns its memory. Pixels stay as the file's uint8 (a quarter of float32:
 * every MPI rank holds a copy, and peak memory is a benchmark target); they are
 * normalised to float32 NCHW when a batch is gathered. Loading happens once before
 * training; inside a training step only data_batch_gather runs, which writes into
 * caller-owned buffers and never allocates.
 */
#ifndef PACER_DATA_H
#define PACER_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "rng.h"

#define DATA_MAX_CHANNELS 3
#define DATA_SOURCE_MAX 512 /* file names kept for error messages (truncated beyond) */
#define DATA_PATH_MAX 4096  /* a data file's path (dataset_files) */

/* A text or token data set's split (worker/textdata.h): its files mapped read-only (the
 * page cache's one copy, shared by every rank of a host), each file's tokens in windows of
 * block tokens, each window's targets the tokens one position on. Window w is file f's
 * (w - first[f])-th, covering its tokens [k block, k block + block] (the last of them the
 * last target): windows never overlap and a file's tail that fills none is left out. */
typedef struct {
    int block;  /* tokens per window: the model's positions */
    int vocab;  /* ids are below it (checked at load) */
    int max_id; /* the largest id of the split */
    int width;  /* bytes per token: 1 (text) or 2 (uint16 ids) */
    int nfiles;
    const uint8_t **tokens; /* (nfiles): each file's first token */
    int64_t *first;         /* (nfiles + 1): the first window of each file; first[nfiles] = windows */
    void **maps;            /* (nfiles): the mappings, unmapped by dataset_free */
    size_t *map_lens;
} data_tokens_t;

typedef struct {
    int n;                              /* number of samples (windows of a text or token set) */
    int C, H, W;                        /* image shape */
    int num_classes;                    /* the catalog's classes of the data set */
    uint8_t *pixels;                    /* (n, C, H, W) as stored in the file */
    int32_t *labels;                    /* (n), each in [0, num_classes) */
    float mean[DATA_MAX_CHANNELS];      /* per channel, on the [0,1] scale */
    float std[DATA_MAX_CHANNELS];       /* gathered x = (pixel/255 - mean) / std */
    char source[DATA_SOURCE_MAX];       /* the file the images came from (IDX images file,
                                       first CIFAR batch), for error messages */
    char label_source[DATA_SOURCE_MAX]; /* the file the labels came from */
    /* A read-only mapping that holds pixels and labels (a split of the decoded cache,
     * worker/dcache.h), unmapped by dataset_free; NULL when both are malloc'ed. */
    void *map;
    size_t map_len;
    /* A text or token data set: its windows (pixels and labels NULL; C = block, H = W = 1,
     * num_classes = the vocabulary); NULL for images. Owned, freed by dataset_free. */
    data_tokens_t *tok;
} dataset_t;

/* Error codes: every failure also writes into err one line naming the file and the
 * problem, e.g. "data/t10k-labels-idx1-ubyte: wrong magic 0x00000802 (want 0x00000801)". */
enum {
    DATA_OK = 0,
    DATA_ENOENT = -1,  /* file missing or unreadable */
    DATA_EFORMAT = -2, /* wrong magic, bad header, truncated, mismatched counts */
    DATA_ELABEL = -3,  /* label out of range */
    DATA_ENOMEM = -4,
    DATA_EUNKNOWN = -5, /* unknown data set name */
};

/* Loads the split (train or test) of the catalog's data set name (common/catalog.h: its
 * format, files, classes and statistics; "mnist", "fashion-mnist": IDX files of the
 * standard names, "cifar10": data_batch_1..5.bin and test_batch.bin) from dir, or from the
 * data set's default directory when dir is NULL or "" (catalog_dataset_default_dir).
 * Every file may be raw or gzip-compressed: the raw name is tried first, then name +
 * ".gz" (zlib reads both transparently). mean/std are set to the data set's fixed
 * training-split statistics, so train and test use the same transform. */
int dataset_load(const char *name, const char *dir, int train, dataset_t *out, char *err, size_t errlen);
/* The files dataset_load(name, dir, train) reads, as it finds them (raw or .gz), into
 * paths (CATALOG_FILES_MAX rows), and the catalog's entry into *info: returns how many
 * (> 0), or a DATA_* code with err. */
int dataset_files(const char *name, const char *dir, int train, catalog_dataset_t *info, char paths[][DATA_PATH_MAX],
                  char *err, size_t errlen);

/* The parsers, exposed for tests. Paths are used exactly as given (no ".gz" probing;
 * zlib's gzread reads raw files too). IDX: images (magic 0x00000803, n, rows, cols,
 * then n*rows*cols bytes) and labels (magic 0x00000801, n, then n bytes); the counts
 * must match, labels must be < classes. CIFAR: one or more files of 3073-byte records
 * (label byte, 1024 R, 1024 G, 1024 B); a size that is not a multiple of 3073 is a
 * truncated file. num_classes is set to classes; mean/std are left at 0/1. */
int dataset_load_idx(const char *images_path, const char *labels_path, int classes, dataset_t *out, char *err,
                     size_t errlen);
int dataset_load_cifar(const char *const *paths, int npaths, int classes, dataset_t *out, char *err, size_t errlen);

/* Whether d fits a model that takes C x H x W images and num_classes classes: the same
 * shape, and every label below num_classes. Checked once after loading, for the training
 * and the test set alike, so that gathering a batch into buffers sized for the model can
 * never write past them. Returns DATA_OK, or DATA_EFORMAT / DATA_ELABEL with err naming
 * the file, e.g. "d/t10k-images-idx3-ubyte: images are 1x40x40, model lenet5 takes
 * 1x28x28". model names the model in the message. */
int dataset_check_shape(const dataset_t *d, int C, int H, int W, int num_classes, const char *model, char *err,
                        size_t errlen);

/* Keeps only the first n samples (subsets for quick runs); no reallocation. */
void dataset_truncate(dataset_t *d, int n);
void dataset_free(dataset_t *d);
/* Human-readable text for an error code. */
const char *data_strerror(int code);

/* Rank r of `world` takes every world-th position of the (shuffled) epoch order,
 * starting at r: with the same perm on every rank the shards are disjoint and cover
 * the epoch. Writes the shard's sample indices into shard (capacity >= n/world + 1)
 * and returns its length. */
int data_shard(const int32_t *perm, int n, int rank, int world, int32_t *shard);

/* Copies samples idx[0 .. count) into x (count, C, H, W), normalised, and y (count; may
 * be NULL). A text or token set's windows: x (count, block) the float-coded ids, y (count,
 * block) the next token of each position (no augmentation). x holds x_floats floats: a batch that would not fit, or an index outside the
 * data set, writes nothing and returns -1 (the caller's bug, or a shape check that was
 * skipped: never a write past x); 0 otherwise. No allocation, no logging.
 * With augment != 0 (CIFAR): random crop from the image zero-padded by 4 pixels, and a
 * horizontal flip with probability 1/2, drawn from r. */
int data_batch_gather(const dataset_t *d, const int32_t *idx, int count, float *x, size_t x_floats, int32_t *y,
                      int augment, rng_t *r);

/* Augmentation of any data set (dataset.augment, crop_padding, hflip). */
typedef struct {
    int pad;  /* random crop from the image zero-padded by pad pixels on each side; 0 = none */
    int flip; /* horizontal flip with probability 1/2 */
} data_augment_t;
#define DATA_AUG_PAD_MAX 256

/* data_batch_gather with the augmentation aug (NULL = none): per sample, draws oy and ox
 * in [0, 2 pad] when pad > 0, then the flip when flip is on, in that order (with pad 4
 * and flip on, exactly data_batch_gather's CIFAR augmentation, draw for draw). */
int data_batch_gather_aug(const dataset_t *d, const int32_t *idx, int count, float *x, size_t x_floats, int32_t *y,
                          const data_augment_t *aug, rng_t *r);

#endif
