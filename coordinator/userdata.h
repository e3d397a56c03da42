/* coordinator/userdata.h - the users' data sets the data roots hold, for
 * GET /api/v1/datasets and the new-job form: each image folder (a directory with train/
 * and test/ or val/) and each .npz directly under a root, probed without decoding
 * (common/dsprobe.h).
 *
 * An entry: {"name": the file or folder name, "source": "user", "format": "imagefolder" |
 * "npz", "path", "classes", "train_samples", "test_samples", "input": [C, H, W] (an
 * .npz's; null for a folder, whose images only decoding measures)}, or, when the probe
 * refuses it, {"name", "source", "format", "path", "error": the reason} so that a user can
 * see why a data set is not offered. The probe lists a folder's files (no stat, no
 * decoding): a root with folders of millions of images makes the listing take seconds. */
#ifndef PACER_USERDATA_H
#define PACER_USERDATA_H

#include <jansson.h>

#define USERDATA_LIST_MAX 256 /* entries listed, over all roots */

/* Appends the entries of every root, in root order, names sorted byte-wise; returns how
 * many. A root that cannot be read adds nothing. */
int userdata_list(const char *const *roots, int nroots, json_t *list);

#endif
