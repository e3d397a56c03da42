/* common/dsprobe.h - what a user's data set holds, found without decoding an image: its
 * classes, its sample counts and (for an .npz) the shape of its images.
 *
 * The coordinator probes a submitted job's data set (a clear 422 before the job is
 * queued instead of a failed job later) and lists the data roots with it
 * (GET /api/v1/datasets); the worker probes the same way before it decodes, so both
 * refuse the same inputs with the same messages. What only decoding can tell (a corrupt
 * image, an image of the wrong size) is the worker's (worker/dsload.h).
 *
 * The .npz rules (Keras' convention): x_train, y_train, x_test, y_test; x uint8 (pixels
 * 0..255) or float32/float64 (pixels on the [0, 1] scale), shaped (N, H, W), or
 * (N, H, W, C) / (N, C, H, W) as dataset.layout says, with C 1 or 3; y of an integer
 * dtype, shaped (N) or (N, 1), each label >= 0; as many labels as images; the classes
 * are 0 .. the largest training label, and every test label must be one of them.
 */
#ifndef PACER_DSPROBE_H
#define PACER_DSPROBE_H

#include <stddef.h>
#include <stdint.h>

#include "npz.h"

#define DSPROBE_MAX_CLASSES 65536

typedef struct {
    int classes;
    int ntrain, ntest;
    int C, H, W;          /* npz: the arrays' image shape; imagefolder: 0 (only decoding tells) */
    uint64_t fingerprint; /* npz: npz_fingerprint; imagefolder: 0 (the worker stats the files) */
} dsprobe_t;

/* Checks the four arrays of an open .npz (headers, then the labels, which are read).
 * layout is "nhwc" or "nchw". With labels not NULL, labels[0] and labels[1] receive the
 * training and test labels as int32 (the caller frees them). xh receives the two x
 * headers when not NULL. Returns 0, or -1 with err naming the archive and the array. */
int dsprobe_npz(npz_t *z, const char *layout, dsprobe_t *out, int32_t *labels[2], npy_header_t xh[2], char *err,
                size_t errlen);

/* Probes a data set of format "imagefolder" (path a folder: common/imgfolder.h, listed
 * without stat) or "npz" (path a file). Returns 0, or -1 with err. */
int dsprobe(const char *format, const char *path, const char *layout, dsprobe_t *out, char *err, size_t errlen);

#endif
