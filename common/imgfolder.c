/* common/imgfolder.c - see imgfolder.h.
 *
 * Names are sorted with strcmp, never with strcoll (alphasort): the order must not
 * depend on the locale of whoever starts the worker, or two hosts would disagree about
 * which label is which.
 */
#include "imgfolder.h"
#include "errmsg.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dataroot.h"
#include "hash.h"

#define PATH_BYTES 4096

/* out = a/b, or an error naming the path when it does not fit. */
static int join(char out[PATH_BYTES], const char *a, const char *b, char *err, size_t errlen)
{
    int n = snprintf(out, PATH_BYTES, "%s/%s", a, b);
    if (n < 0 || n >= PATH_BYTES) return errmsg(err, errlen, "%s/%s: path too long", a, b);
    return 0;
}

static int not_hidden(const struct dirent *e) { return e->d_name[0] != '.'; }

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

enum { E_DIR, E_FILE, E_OTHER, E_GONE, E_OUT };

/* What the entry is, following symbolic links (a class folder may be a link to
 * elsewhere under the data roots); st is filled when a stat was needed or asked for. A
 * link that leaves the data roots (common/dataroot.h) is E_OUT: the caller skips it and
 * counts it, without looking at what it leads to. */
static int kind_of(const char *path, const struct dirent *e, int want_stat, struct stat *st)
{
    if (!want_stat && e->d_type == DT_DIR) return E_DIR;
    if (!want_stat && e->d_type == DT_REG) return E_FILE;
    if (dataroot_count() > 0 && (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) && lstat(path, st) == 0 &&
        S_ISLNK(st->st_mode) && dataroot_check(path, "a symbolic link", NULL, 0) != 0)
        return E_OUT;
    if (stat(path, st) != 0) return E_GONE;
    if (S_ISDIR(st->st_mode)) return E_DIR;
    if (S_ISREG(st->st_mode)) return E_FILE;
    return E_OTHER;
}

static int list_dir(const char *path, struct dirent ***names, char *err, size_t errlen)
{
    int n = scandir(path, names, not_hidden, by_name);
    if (n < 0) return errmsg(err, errlen, "%s: cannot list: %s", path, strerror(errno));
    return n;
}

static void free_names(struct dirent **names, int n)
{
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

typedef struct {
    imgfolder_file_t *v;
    int n, cap;
} files_t;

static int push_file(files_t *fs, const char *path, const struct stat *st, int stat_files, int32_t label)
{
    if (fs->n == fs->cap) {
        int ncap = fs->cap ? fs->cap * 2 : 256;
        imgfolder_file_t *nv = realloc(fs->v, (size_t)ncap * sizeof *nv);
        if (!nv) return -1;
        fs->v = nv;
        fs->cap = ncap;
    }
    imgfolder_file_t *f = &fs->v[fs->n];
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(path))) return -1;
    if (stat_files) {
        f->size = (int64_t)st->st_size;
        f->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    }
    f->label = label;
    fs->n++;
    return 0;
}

/* The files of one class folder, in name order. */
static int scan_class(const char *cdir, int32_t label, int stat_files, files_t *fs, int *skipped, char *err,
                      size_t errlen)
{
    struct dirent **names = NULL;
    int n = list_dir(cdir, &names, err, errlen);
    if (n < 0) return -1;
    int rc = 0, before = fs->n, skipped0 = *skipped;
    for (int i = 0; i < n && rc == 0; i++) {
        char path[PATH_BYTES];
        struct stat st;
        if ((rc = join(path, cdir, names[i]->d_name, err, errlen)) != 0) break;
        int k = kind_of(path, names[i], stat_files, &st);
        if (k == E_OUT) (*skipped)++;
        else if (k == E_DIR)
            rc = errmsg(err, errlen,
                        "%s: a folder inside a class folder (classes are one level deep: SPLIT/CLASS/FILE)", path);
        else if (k == E_GONE) rc = errmsg(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        else if (k == E_OTHER) rc = errmsg(err, errlen, "%s: not a regular file", path);
        else if (fs->n >= IMGFOLDER_MAX_FILES)
            rc = errmsg(err, errlen, "%s: more than %d files in the split", path, IMGFOLDER_MAX_FILES);
        else if (push_file(fs, path, &st, stat_files, label) != 0) rc = errmsg(err, errlen, "%s: out of memory", path);
    }
    free_names(names, n);
    if (rc == 0 && fs->n == before && *skipped > skipped0)
        rc = errmsg(err, errlen,
                    "%s: a class folder without images (%d symbolic links that leave the data roots skipped)", cdir,
                    *skipped - skipped0);
    else if (rc == 0 && fs->n == before) rc = errmsg(err, errlen, "%s: a class folder without images", cdir);
    return rc;
}

/* The class folders of a split, sorted; a file where a class folder belongs is an error. */
static int class_dirs(const char *sdir, char ***out, int *nout, int *skipped, char *err, size_t errlen)
{
    struct dirent **names = NULL;
    int n = list_dir(sdir, &names, err, errlen);
    if (n < 0) return -1;
    char **v = calloc((size_t)(n ? n : 1), sizeof *v);
    int k = 0, rc = v ? 0 : errmsg(err, errlen, "%s: out of memory", sdir);
    for (int i = 0; i < n && rc == 0; i++) {
        char path[PATH_BYTES];
        struct stat st;
        if ((rc = join(path, sdir, names[i]->d_name, err, errlen)) != 0) break;
        int kind = kind_of(path, names[i], 0, &st);
        if (kind == E_OUT) (*skipped)++;
        else if (kind == E_FILE)
            rc = errmsg(err, errlen, "%s: a file outside the class folders (%s holds one folder per class)", path, sdir);
        else if (kind == E_GONE) rc = errmsg(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        else if (kind == E_OTHER) rc = errmsg(err, errlen, "%s: neither a class folder nor a file", path);
        else if (strlen(names[i]->d_name) >= IMGFOLDER_NAME_MAX)
            rc = errmsg(err, errlen, "%s: class name longer than %d bytes", path, IMGFOLDER_NAME_MAX - 1);
        else if (k >= IMGFOLDER_MAX_CLASSES)
            rc = errmsg(err, errlen, "%s: more than %d classes", sdir, IMGFOLDER_MAX_CLASSES);
        else if (!(v[k++] = strdup(names[i]->d_name))) rc = errmsg(err, errlen, "%s: out of memory", sdir);
    }
    free_names(names, n);
    if (rc == 0 && k == 0) rc = errmsg(err, errlen, "%s: no class folders (it holds one folder per class)", sdir);
    if (rc != 0) {
        for (int i = 0; v && i < k; i++) free(v[i]);
        free(v);
        return -1;
    }
    *out = v;
    *nout = k;
    return 0;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int imgfolder_detect(const char *dir)
{
    char p[PATH_BYTES];
    if (join(p, dir, "train", NULL, 0) || !is_dir(p)) return 0;
    if (join(p, dir, "test", NULL, 0) == 0 && is_dir(p)) return 1;
    return join(p, dir, "val", NULL, 0) == 0 && is_dir(p);
}

static uint64_t fingerprint(const char *dir, const files_t *split, uint64_t h)
{
    size_t skip = strlen(dir) + 1;
    for (int i = 0; i < split->n; i++) {
        const imgfolder_file_t *f = &split->v[i];
        const char *rel = strlen(f->path) > skip ? f->path + skip : f->path;
        h = hash_fnv1a(h, rel, strlen(rel) + 1);
        int64_t sm[2] = {f->size, f->mtime_ns};
        h = hash_fnv1a(h, sm, sizeof sm);
    }
    return hash_fnv1a(h, &split->n, sizeof split->n);
}

int imgfolder_scan(const char *dir, int stat_files, imgfolder_t *out, char *err, size_t errlen)
{
    char train[PATH_BYTES], test[PATH_BYTES], val[PATH_BYTES];
    files_t tr = {0}, te = {0};
    char **tclasses = NULL;
    int ntclasses = 0, rc = -1;
    struct stat st;

    memset(out, 0, sizeof *out);
    if (dataroot_check(dir, "the data set", err, errlen) != 0) return -1;
    if (stat(dir, &st) != 0) return errmsg(err, errlen, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return errmsg(err, errlen, "%s: not a folder (an image folder holds train/ and test/)", dir);
    if (join(train, dir, "train", err, errlen) || join(test, dir, "test", err, errlen) ||
        join(val, dir, "val", err, errlen))
        return -1;
    if (!is_dir(train))
        return errmsg(err, errlen, "%s: no train/ folder (an image folder holds train/CLASS/FILE and test/CLASS/FILE)",
                      dir);
    int has_test = is_dir(test), has_val = is_dir(val);
    if (has_test && has_val)
        return errmsg(err, errlen, "%s: both test/ and val/: which is the test split? keep one", dir);
    if (!has_test && !has_val) return errmsg(err, errlen, "%s: no test/ (or val/) folder beside train/", dir);
    const char *tdir = has_test ? test : val;
    /* the splits are the set itself: a split linked out of the roots refuses it */
    if (dataroot_check(train, "a split folder", err, errlen) != 0 ||
        dataroot_check(tdir, "a split folder", err, errlen) != 0)
        return -1;
    out->test_split = has_test ? "test" : "val";

    if (class_dirs(train, &out->classes, &out->nclasses, &out->skipped, err, errlen) != 0) goto out;
    for (int c = 0; c < out->nclasses; c++) {
        char cdir[PATH_BYTES];
        if (join(cdir, train, out->classes[c], err, errlen) != 0) goto out;
        if (scan_class(cdir, c, stat_files, &tr, &out->skipped, err, errlen) != 0) goto out;
    }
    if (class_dirs(tdir, &tclasses, &ntclasses, &out->skipped, err, errlen) != 0) goto out;
    for (int c = 0; c < ntclasses; c++) {
        char cdir[PATH_BYTES];
        if (join(cdir, tdir, tclasses[c], err, errlen) != 0) goto out;
        char **hit = bsearch(&tclasses[c], out->classes, (size_t)out->nclasses, sizeof *out->classes, cmp_str);
        if (!hit) {
            errmsg(err, errlen, "%s: a class the training split (%s) does not have", cdir, train);
            goto out;
        }
        if (scan_class(cdir, (int32_t)(hit - out->classes), stat_files, &te, &out->skipped, err, errlen) != 0) goto out;
    }
    out->train = tr.v;
    out->ntrain = tr.n;
    out->test = te.v;
    out->ntest = te.n;
    tr.v = te.v = NULL;
    tr.n = te.n = 0;
    if (stat_files)
        out->fingerprint = fingerprint(dir, &(files_t){out->test, out->ntest, 0},
                                       fingerprint(dir, &(files_t){out->train, out->ntrain, 0}, HASH_FNV1A_INIT));
    rc = 0;
out:
    for (int i = 0; i < tr.n; i++) free(tr.v[i].path);
    for (int i = 0; i < te.n; i++) free(te.v[i].path);
    free(tr.v);
    free(te.v);
    for (int i = 0; i < ntclasses; i++) free(tclasses[i]);
    free(tclasses);
    if (rc != 0) imgfolder_free(out);
    return rc;
}

void imgfolder_free(imgfolder_t *f)
{
    if (!f) return;
    for (int i = 0; i < f->nclasses; i++) free(f->classes[i]);
    free(f->classes);
    for (int i = 0; i < f->ntrain; i++) free(f->train[i].path);
    for (int i = 0; i < f->ntest; i++) free(f->test[i].path);
    free(f->train);
    free(f->test);
    memset(f, 0, sizeof *f);
}
