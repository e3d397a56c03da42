/* common/ckptdir.h - the checkpoints a job keeps: their file names, the retention rule, the
 * listing. The worker writes and prunes them; the coordinator lists them for the API.
 *
 * DIR/NAME.ckpt is always the latest checkpoint (what --resume, the elastic restart and
 * the download read; worker/checkpoint.c writes it atomically). After each save the worker
 * links it (a hard link: no second copy) under a name that records what it is:
 *   NAME.step{S}-epoch{E}.ckpt          written at global step S, E epochs completed
 *   NAME.step{S}-epoch{E}-acc{A}.ckpt   the same, its weights evaluated: test accuracy A/1e6
 * and removes the linked names the retention rule (ckptdir_choose) does not keep. The next
 * save renames a new file over NAME.ckpt; the old one lives on under its linked name for as
 * long as the rule keeps it. The names are parsed strictly (digits only, bounded): a
 * directory is input from outside. */
#ifndef PACER_CKPTDIR_H
#define PACER_CKPTDIR_H

#include <stddef.h>

#define CKPTDIR_MAX 1024           /* linked names one listing holds; more is an error */
#define CKPTDIR_KEEP_LAST_MAX 1000 /* checkpoint.keep_last's bound (common/spec.c) */
#define CKPTDIR_FILE_MAX 128       /* a linked name: NAME (63 bytes at most) and the fields */

typedef struct {
    long long step;  /* global step when written; -1: unknown (a NAME.ckpt with no linked name) */
    long epoch;      /* epochs completed when written; -1: unknown */
    double accuracy; /* test accuracy of these weights; negative: not evaluated at that step */
    long long bytes; /* the file's size */
    unsigned long long ino;
    int latest;                  /* the same file as NAME.ckpt */
    int best;                    /* the highest accuracy (ties: the later step) */
    int keep;                    /* set by ckptdir_choose */
    char file[CKPTDIR_FILE_MAX]; /* the name inside the directory */
} ckpt_entry_t;

/* The linked name of a checkpoint into out; accuracy < 0 when not evaluated. Returns 0, or
 * -1 when it does not fit or a field is out of range. */
int ckptdir_name(char *out, size_t len, const char *name, long long step, long epoch, double accuracy);
/* Whether file is a linked name of job name's checkpoints: 0 with e's step, epoch,
 * accuracy and file filled (the rest zeroed), -1 otherwise. */
int ckptdir_parse(const char *file, const char *name, ckpt_entry_t *e);
/* The retention rule over n linked entries, one of which may be flagged latest. Sorts them
 * by step, newest first, and sets best and keep:
 *   - the latest is kept; entries newer than the latest belong to a run that was rolled
 *     back (it resumed from an older checkpoint) and are not kept;
 *   - of the others, the keep_last newest (the latest counts as one) are kept;
 *   - best: the highest test accuracy among evaluated entries no newer than the latest,
 *     ties to the later step; kept when keep_best;
 *   - with keep_upto >= 0, also the newest entry at or before step keep_upto: the last
 *     checkpoint written before a collapse of training began (worker/health.h), which an
 *     on_collapse "restart" resumes from; -1: none.
 * Entries of unknown step are never kept (callers do not pass NAME.ckpt itself). */
void ckptdir_choose(ckpt_entry_t *e, int n, int keep_last, int keep_best, long long keep_upto);
/* The checkpoints of job name in dir into out (at most max), newest first: every linked
 * name, and NAME.ckpt as an entry of unknown step when no linked name is the same file;
 * latest and best are set (ckptdir_choose's best; keep is not). *total_bytes: the space
 * they use, a file linked twice counted once. A missing directory is an empty list.
 * Returns the count, or -1 with err naming dir and the problem. */
int ckptdir_list(const char *dir, const char *name, ckpt_entry_t *out, int max, long long *total_bytes, char *err,
                 size_t errlen);
/* After NAME.ckpt was written at (step, epoch, accuracy): links it under its linked name
 * (replacing one of the same step) and removes the linked names the rule does not keep
 * (ckptdir_choose, with keep_upto). Returns 0, or -1 with err (the checkpoint itself
 * stays written). */
int ckptdir_retain(const char *dir, const char *name, long long step, long epoch, double accuracy, int keep_last,
                   int keep_best, long long keep_upto, char *err, size_t errlen);
/* The newest of the n listed entries (ckptdir_list) whose step is known and below
 * before: its index, or -1 when there is none. */
int ckptdir_before(const ckpt_entry_t *e, int n, long long before);

/* ---- the attempt fence (docs/ARCHITECTURE.md, "Stopping an attempt") -----------------
 * A rank of an attempt the coordinator has given up on (one it could not see go) must never
 * rename its checkpoint over the NAME.ckpt a newer attempt resumes from. DIR/NAME.fence
 * holds a generation (decimal digits; absent: 0): the coordinator passes it to each attempt
 * it launches (pacer-worker --fence G) and, once that attempt is over and before the slots
 * go to anyone else, raises it past G. A worker with --fence G writes its checkpoint under a
 * name of its own, then publishes it (the rename over NAME.ckpt and its linked name) only
 * while holding the fence's lock (flock) and reading G there; the coordinator raises it
 * under the same lock. So a publication either ended before the raise (and the next
 * attempt reads it) or is refused. The file is input from outside (ckptdir_fence_parse,
 * fuzz/fuzz_ckptfence.c). */
#define CKPTDIR_FENCE_MAX 1000000000000000LL
/* The fence file's text (len bytes): digits and an optional newline; empty is 0. 0 with
 * *gen, or -1 (more than CKPTDIR_FENCE_MAX, or anything else). */
int ckptdir_fence_parse(const char *text, size_t len, long long *gen);
/* The generation in DIR/NAME.fence into *gen (0 when there is none). 0, or -1 with err. */
int ckptdir_fence_read(const char *dir, const char *name, long long *gen, char *err, size_t errlen);
/* Raises the fence past gen (to gen + 1 when it is not already higher), without waiting:
 * 0 done, 1 a publication holds the lock now (try again), -1 with err. */
int ckptdir_fence_raise(const char *dir, const char *name, long long gen, char *err, size_t errlen);
/* Before a publication of generation gen: waits for the lock. 0: the fence still says gen,
 * the lock is held in *fd (ckptdir_fence_leave after the rename); 1: refused, err names
 * the generation that owns the checkpoints now; -1 with err. */
int ckptdir_fence_enter(const char *dir, const char *name, long long gen, int *fd, char *err, size_t errlen);
void ckptdir_fence_leave(int fd);
/* Where an attempt of generation gen writes its checkpoint before publishing it:
 * DIR/NAME.ckpt.fence{gen} (no linked name: listings pass it over). 0, or -1 when it does
 * not fit. ckptdir_fence_raise removes the one of the generation it ends. */
int ckptdir_fence_own(char *out, size_t len, const char *dir, const char *name, long long gen);

#endif
