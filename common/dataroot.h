/* common/dataroot.h - the one rule for what a data root holds: a path is under a data
 * root when its real path (realpath: every symbolic link and ".." resolved) is one of
 * the roots' real paths or below one. A symbolic link that stays under a root (a set
 * linked from another root, an image linked from another class) is followed; one that
 * leaves every root is not: the set itself is refused, a class folder or an image inside
 * a set is skipped (common/imgfolder.h counts them). The coordinator's listing (common/
 * userdata.h), its check of a spec's dataset.path (coordinator/api.c) and the walks and
 * opens of users' data (common/imgfolder.c, and dataroot_open below for every file a job
 * reads: common/npz.c, worker/image.c, common/tokfile.c, worker/textdata.c,
 * common/tokenizer.c, common/bpe.c) all ask here.
 *
 * The process-wide roots (dataroot_set) are what the walks and opens check against: the
 * coordinator sets its --data-root dirs at its start, the worker the --data-root dirs it
 * was given (the coordinator passes its own). None set (a worker run by hand, a unit
 * test that sets none): nothing is confined, the operator's paths are read as given.
 * Set once before threads start; afterwards only appended to (dataroot_add: a default
 * root of the coordinator that did not exist at its start and exists now), which
 * threads reading them meanwhile may do. */
#ifndef PACER_DATAROOT_H
#define PACER_DATAROOT_H

#include <stddef.h>

#define DATAROOT_MAX 16    /* process-wide roots (the coordinator's COORD_DATA_ROOTS_MAX) */
#define DATAROOT_PATH 4096 /* PATH_MAX: what realpath writes */

enum {
    DATAROOT_OK = 0,       /* under a root; real holds the resolved path */
    DATAROOT_OUTSIDE = -1, /* resolves outside every root, or does not resolve and its
                            * nearest existing folder is outside: the same answer whether or
                            * not the path exists, so that it tells nothing of what is there */
    DATAROOT_MISSING = -2, /* does not resolve (errno says why) and its nearest existing
                            * folder is under a root */
};

/* Resolves path and says where it is against roots (real paths, as realpath gives
 * them). real (DATAROOT_PATH bytes) receives the resolved path on DATAROOT_OK. On
 * DATAROOT_MISSING errno is the resolution's. */
int dataroot_resolve(const char *const *roots, int nroots, const char *path, char *real);

/* The process-wide roots, each resolved: 0, or -1 with err naming the root that cannot
 * be resolved (none is set then). nroots 0 clears them. */
int dataroot_set(const char *const *roots, int nroots, char *err, size_t errlen);
int dataroot_count(void);

/* Appends root, resolved, to the process-wide roots (nothing when it is one already):
 * 0, or -1 with err saying why (it does not resolve, or DATAROOT_MAX are set). Safe
 * while other threads check paths: they see the roots before or after it. */
int dataroot_add(const char *root, char *err, size_t errlen);

/* Against the process-wide roots (always 0 when none is set): 0 when path stays under
 * one, else -1 with err "PATH: WHAT leaves the data roots (...)" naming only path, never
 * where it leads. what says what path is ("a symbolic link", "the data set"). */
int dataroot_check(const char *path, const char *what, char *err, size_t errlen);

/* The same for a file already open (what the descriptor reached, read back from
 * /proc/self/fd, so that a link swapped in after a check is still caught): 0, or -1
 * with err naming path. */
int dataroot_check_fd(int fd, const char *path, char *err, size_t errlen);

/* The one open of a file a job reads (an image, an .npz, a text or token file, a shard,
 * a tokenizer's vocab.json, merges.txt or tokenizer.json): opened O_NONBLOCK, so that a
 * FIFO or a device never blocks the caller (an HTTP thread of a submission, a worker's
 * start); what the descriptor reached checked against the roots (dataroot_check_fd);
 * refused unless it is a regular file ("PATH: a FIFO, not a regular file"); then made
 * blocking again. The descriptor (O_CLOEXEC, the caller closes it), or -1 with err
 * naming path and errno set (ENOENT for a missing file, EACCES for one refused here). */
int dataroot_open(const char *path, char *err, size_t errlen);
/* The same checks of what the file is, none of where it is: for pacer's own files that
 * lie outside the data roots (the decoded cache's token shards, a checkpoint's
 * tokenizer), which must not block a reader either. */
int dataroot_open_own(const char *path, char *err, size_t errlen);

#endif
