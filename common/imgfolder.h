/* common/imgfolder.h - an image folder data set (torchvision's ImageFolder convention):
 *
 *   DIR/train/CLASS/FILE ...   the training split, one folder per class
 *   DIR/test/CLASS/FILE ...    the test split (or DIR/val/; not both)
 *
 * Classes are the folder names of train/, sorted byte-wise (Python's sorted() on the
 * names), and label i is the i-th; the test split's folders must each be one of them
 * (it may lack some). Files in a class folder are sorted the same way, so the sample
 * order, and with it a run, is reproducible. Names that start with '.' (.DS_Store,
 * ._x.jpg, .git) are ignored everywhere; anything else that is not where a class or an
 * image belongs is an error, never a silent skip: a file directly in train/, a folder
 * inside a class folder, a class folder with no files. The one exception: a symbolic link
 * (a class folder or a file) that leaves the data roots (common/dataroot.h) is skipped
 * and counted in skipped, and a set or split that leaves them is refused; links that stay
 * under a root are followed. What the files hold is the
 * decoder's business (worker/image.h); this module only walks and lists.
 *
 * Shared by the worker (which decodes the files) and the coordinator (which checks a
 * folder at submission and lists the data roots). Every message names the path. */
#ifndef PACER_IMGFOLDER_H
#define PACER_IMGFOLDER_H

#include <stddef.h>
#include <stdint.h>

#define IMGFOLDER_MAX_CLASSES 65536
#define IMGFOLDER_MAX_FILES (1 << 28) /* per split */
#define IMGFOLDER_NAME_MAX 256        /* a class folder's name, bytes */

typedef struct {
    char *path;       /* DIR/SPLIT/CLASS/FILE, owned */
    int64_t size;     /* bytes (0 when not stat'ed) */
    int64_t mtime_ns; /* modification time (0 when not stat'ed) */
    int32_t label;    /* index into classes */
} imgfolder_file_t;

typedef struct {
    int nclasses;
    char **classes; /* sorted names of train/'s class folders, owned */
    imgfolder_file_t *train, *test;
    int ntrain, ntest;
    const char *test_split; /* "test" or "val" */
    uint64_t fingerprint;   /* FNV-1a over every file's relative path, size and mtime; 0 without stat */
    int skipped;            /* class folders and files skipped: links that leave the data roots */
} imgfolder_t;

/* Walks DIR. With stat_files, every file is stat'ed (size, modification time: the
 * fingerprint the decoded cache is checked against) and must be a regular file;
 * without, only the names are listed (the coordinator's listing of a data root).
 * Returns 0, or -1 with err naming the path and the problem, and *out empty. */
int imgfolder_scan(const char *dir, int stat_files, imgfolder_t *out, char *err, size_t errlen);
void imgfolder_free(imgfolder_t *f);

/* 1 when DIR looks like an image folder (has train/ and test/ or val/), without
 * walking it: for the listing of a data root. */
int imgfolder_detect(const char *dir);

#endif
