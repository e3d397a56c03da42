/* worker/dsload.h - a user's data set (an image folder or an .npz, docs/JOB_SPEC.md
 * "Your own data") decoded, preprocessed and cached, ready as two dataset_t; the
 * catalog's built-in sets cached the same way.
 *
 * The pipeline, for every image, once: decode (PNG, JPEG: worker/image.h; .npz arrays:
 * common/npz.h), convert the channels to the model's (gray to RGB, RGB to gray), resize
 * bilinearly to the target size when asked (worker/image.h has the convention), store as
 * uint8 (C, H, W). The result goes into the decoded cache (worker/dcache.h) under
 * cache_dir, which the next job on this host (and every other rank here) maps instead of
 * decoding again; the training split's per-channel mean and standard deviation are
 * computed then and kept in the cache's header. When no cache can be written there, the
 * data is decoded into this process's memory instead, with a line on stderr saying why.
 *
 * Nothing here runs inside a training step: the datasets it returns are read by
 * data_batch_gather like any other.
 */
#ifndef PACER_DSLOAD_H
#define PACER_DSLOAD_H

#include <stddef.h>

#include "catalog.h"
#include "data.h"

typedef struct {
    /* a user's format (common/catalog.h): CATALOG_FORMAT_IMAGEFOLDER or CATALOG_FORMAT_NPZ;
     * dsload.c's READERS has the reader of each */
    catalog_format_t format;
    const char *path;      /* the folder or the .npz file */
    const char *layout;    /* npz, 4-D x: "nhwc" (Keras) or "nchw" */
    int C, H, W;           /* what to produce: the model's channels, the target size */
    int resize;            /* 1: resize every image to H x W; 0: every image must be H x W */
    const char *cache_dir; /* NULL or "": decode into memory, no cache */
    /* dataset.train_subset, test_subset: decode only the first N samples of the split (a
     * cache of its own; the statistics are of those N), 0 = all */
    int train_max, test_max;
} dsload_opts_t;

typedef struct {
    int classes;
    double mean[DATA_MAX_CHANNELS], std[DATA_MAX_CHANNELS]; /* the training split's, [0, 1] scale */
    char cache_path[4096];                                  /* the cache file mapped; "" when decoded into memory */
    int cache_built;      /* 1: this run decoded and wrote it; 0: an existing cache was mapped */
    char cache_note[512]; /* why there is no cache, or why it was rebuilt; "" when neither */
    double decode_s;      /* seconds spent decoding (0 when a cache was mapped) */
    long cache_bytes;     /* the cache file's size (or the memory decoded into) */
} dsload_info_t;

/* Loads both splits. On success train and test own their memory (dataset_free) and their
 * mean/std are the data set's own. Returns DATA_OK or a DATA_* code with err naming the
 * file and the problem (a corrupt image, a class folder without images, a missing
 * array, mismatched lengths, an unreadable dtype, an image of the wrong size without
 * resize; DATA_EUNKNOWN for a format that is not a user's). */
int dsload_user(const dsload_opts_t *o, dataset_t *train, dataset_t *test, dsload_info_t *info, char *err,
                size_t errlen);

/* A built-in data set of the catalog (IDX, CIFAR; dataset_load's name and dir), both
 * splits: mapped from the decoded cache under cache_dir when there is one for these files
 * as they are now (their real paths, sizes and modification times), else decoded as
 * dataset_load does and written there first, so that decompressing the files (CIFAR-10's
 * 170 MB of gzip) happens once per host, not once per rank and job. Without cache_dir,
 * or when no cache can be written (info->cache_note says why), decoded into this
 * process's memory. The images, labels and the catalog's statistics are dataset_load's
 * either way. Returns DATA_OK or dataset_load's DATA_* error. */
int dsload_builtin(const char *name, const char *dir, const char *cache_dir, dataset_t *train, dataset_t *test,
                   dsload_info_t *info, char *err, size_t errlen);

/* A built-in data set (IDX, CIFAR: uint8 (C, H, W) already in memory) brought to
 * C x H x W the way a user's images are: channels converted, resized when resize (else
 * its images must have that size). *out owns new pixels and labels; in is unchanged (its
 * owner frees it). Its mean/std stay in's for the channels both have; a channel the
 * conversion adds takes channel 0's. */
int dsload_convert(const dataset_t *in, int C, int H, int W, int resize, dataset_t *out, char *err, size_t errlen);

/* Per-channel mean and standard deviation of d's pixels on the [0, 1] scale (population
 * figures; a channel without variation gets std 1), into d->mean and d->std. What a user
 * data set's cache holds for its training split; used for a built-in set whose images
 * were converted. */
void dsload_stats(dataset_t *d);

/* The default cache directory when neither the spec nor --data-cache names one:
 * $XDG_CACHE_HOME/pacer/data, else $HOME/.cache/pacer/data; "" when neither is set. */
void dsload_default_cache_dir(char *out, size_t len);

#endif
