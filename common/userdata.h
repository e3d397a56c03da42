/* common/userdata.h - the users' data sets the data roots hold, in the catalog
 * (common/catalog.h), for GET /api/v1/datasets and the new-job form: each image folder (a
 * directory with train/ and test/ or val/) and each .npz directly under a root, probed
 * without decoding (common/dsprobe.h) and added as a "user" entry named by the folder or
 * file name ("pets", "digits.npz"), with its format, classes, sample counts, image shape
 * (an .npz's; 0x0x0 for a folder, whose images only decoding measures) and path.
 *
 * The catalog is the one list: this file only keeps its user entries in step with the
 * disks. What a root holds that cannot be offered (a probe's refusal, a name the catalog
 * cannot take, a built-in's name, a name already found under an earlier root) is not a
 * data set and is not in the catalog: it is reported, with the reason, so that a user can
 * see why it is not offered. The probe lists a folder's files (no stat, no decoding): a
 * root with folders of millions of images makes a sync take seconds. */
#ifndef PACER_USERDATA_H
#define PACER_USERDATA_H

#include <jansson.h>
#include <stdint.h>

#define USERDATA_LIST_MAX 256 /* entries found, over all roots (the catalog's CATALOG_ADDED_MAX) */

/* Brings the catalog's user entries of format imagefolder or npz in step with what the
 * roots hold now: new ones added, changed ones replaced, vanished ones removed (in root
 * order, names sorted byte-wise; a root that cannot be read adds nothing). When refused
 * is not NULL, appends {"name", "format", "path", "error"} for each one that cannot be
 * offered. Returns how many entries the roots hold now. Serialised: concurrent calls
 * run one after the other. */
int userdata_sync(const char *const *roots, int nroots, json_t *refused);

/* userdata_sync when the roots' fingerprint changed since the last sync made here (or
 * there was none), else nothing: what GET /api/v1/datasets and a submission call, so
 * that a request probes (lists image folders, reads .npz labels) only after a change.
 * *probed says whether it did. refused receives the last sync's refusals either way.
 * Returns how many entries the roots held at that sync. Serialised. */
int userdata_refresh(const char *const *roots, int nroots, json_t *refused, int *probed);

#endif
