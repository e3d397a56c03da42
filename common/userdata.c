/* common/userdata.c - see userdata.h. */
#include "userdata.h"

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catalog.h"
#include "dataroot.h"
#include "dsprobe.h"
#include "imgfolder.h"

static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;

static int not_hidden(const struct dirent *e) { return e->d_name[0] != '.'; }
static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n > k && strcmp(s + n - k, tail) == 0;
}

static void refuse(json_t *refused, const char *name, catalog_format_t f, const char *path, const char *why)
{
    if (refused)
        json_array_append_new(refused, json_pack("{s:s, s:s, s:s, s:s}", "name", name, "format", catalog_format_name(f),
                                                 "path", path, "error", why));
}

/* The catalog entry of the data set at path, probed: 0, or -1 with why. */
static int entry_probe(const char *name, catalog_format_t f, const char *path, catalog_dataset_t *d, char *why,
                       size_t len)
{
    dsprobe_t p;
    memset(d, 0, sizeof *d);
    if (!catalog_name_valid(name)) {
        snprintf(why, len, "not a catalog name: 1 to %d letters, digits, '.', '_' or '-'", CATALOG_NAME_MAX - 1);
        return -1;
    }
    if (strlen(path) >= sizeof d->fixed_dir) {
        snprintf(why, len, "path longer than %zu bytes", sizeof d->fixed_dir - 1);
        return -1;
    }
    if (dsprobe(catalog_format_name(f), path, "nhwc", &p, why, len) != 0) return -1;
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->title, sizeof d->title, "%s", name);
    snprintf(d->fixed_dir, sizeof d->fixed_dir, "%s", path);
    d->source = CATALOG_USER;
    d->format = f;
    d->C = p.C;
    d->H = p.H;
    d->W = p.W;
    d->classes = p.classes;
    d->train_n = p.ntrain;
    d->test_n = p.ntest;
    d->augment = 1;
    return 0;
}

/* Puts d in the catalog unless the same entry is there: 0, or -1 with why. */
static int entry_put(const catalog_dataset_t *d, char *why, size_t len)
{
    catalog_dataset_t old;
    if (catalog_dataset_get(d->name, &old) == 0) {
        if (old.source != CATALOG_USER || !catalog_format_is_user(old.format)) {
            snprintf(why, len, "the catalog has a %s data set of that name", catalog_source_name(old.source));
            return -1;
        }
        if (memcmp(&old, d, sizeof old) == 0) return 0;
        catalog_dataset_remove(d->name);
    }
    return catalog_dataset_add(d, why, len);
}

static int found_has(char (*found)[CATALOG_NAME_MAX], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(found[i], name) == 0) return 1;
    return 0;
}

int userdata_sync(const char *const *roots, int nroots, json_t *refused)
{
    char(*found)[CATALOG_NAME_MAX] = calloc(USERDATA_LIST_MAX, CATALOG_NAME_MAX);
    catalog_dataset_t *d = malloc(sizeof *d);
    int nfound = 0;
    if (!found || !d) {
        free(found);
        free(d);
        return -1;
    }
    /* The roots' real paths, for the rule on links (dataroot.h); one that does not
     * resolve holds nothing. */
    char(*real_roots)[DATAROOT_PATH] = calloc(nroots > 0 ? (size_t)nroots : 1, DATAROOT_PATH);
    const char **realv = calloc(nroots > 0 ? (size_t)nroots : 1, sizeof *realv);
    int nreal = 0;
    if (!real_roots || !realv) {
        free(real_roots);
        free(realv);
        free(found);
        free(d);
        return -1;
    }
    for (int r = 0; r < nroots; r++)
        if (realpath(roots[r], real_roots[nreal])) { /* DATAROOT_PATH is PATH_MAX */
            realv[nreal] = real_roots[nreal];
            nreal++;
        }
    pthread_mutex_lock(&sync_lock);
    for (int r = 0; r < nroots; r++) {
        struct dirent **names = NULL;
        int n = scandir(roots[r], &names, not_hidden, by_name);
        for (int i = 0; i < n; i++) {
            char path[PATH_MAX], why[1024];
            struct stat st;
            const char *name = names[i]->d_name;
            int format = -1, out = 0;
            int len = snprintf(path, sizeof path, "%s/%s", roots[r], name);
            if (len > 0 && (size_t)len < sizeof path && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
                /* A link: the same rule as a submission's dataset.path (dataroot.h). One
                 * that leaves the roots is refused by its name, without a look at what
                 * it leads to (neither its kind nor its target is said). */
                char real[DATAROOT_PATH];
                out = dataroot_resolve(realv, nreal, path, real) == DATAROOT_OUTSIDE;
                if (out) format = ends_with(name, ".npz") ? CATALOG_FORMAT_NPZ : CATALOG_FORMAT_IMAGEFOLDER;
            }
            if (!out && len > 0 && (size_t)len < sizeof path && stat(path, &st) == 0) {
                if (S_ISDIR(st.st_mode) && imgfolder_detect(path)) format = CATALOG_FORMAT_IMAGEFOLDER;
                else if (S_ISREG(st.st_mode) && ends_with(name, ".npz")) format = CATALOG_FORMAT_NPZ;
            }
            if (format < 0) {
                /* not a data set: nothing to say */
            } else if (out) {
                refuse(refused, name, format, path,
                       "a symbolic link that leaves the data roots (only what resolves under a --data-root is read)");
            } else if (nfound >= USERDATA_LIST_MAX) {
                refuse(refused, name, format, path, "more data sets under the data roots than the catalog lists");
            } else if (found_has(found, nfound, name)) {
                refuse(refused, name, format, path, "a data set of that name was found under an earlier data root");
            } else if (entry_probe(name, format, path, d, why, sizeof why) != 0 || entry_put(d, why, sizeof why) != 0) {
                refuse(refused, name, format, path, why);
            } else {
                snprintf(found[nfound++], CATALOG_NAME_MAX, "%s", name);
            }
            free(names[i]);
        }
        free(names);
    }
    /* Gone from the disks (or now refused): out of the catalog. Names first, removal
     * after, as a removal shifts the indices. */
    char(*gone)[CATALOG_NAME_MAX] = calloc(CATALOG_ADDED_MAX, CATALOG_NAME_MAX);
    int ngone = 0;
    for (size_t i = 0; gone && catalog_dataset_at(i, d) == 0; i++)
        if (d->source == CATALOG_USER && catalog_format_is_user(d->format) && !found_has(found, nfound, d->name) &&
            ngone < CATALOG_ADDED_MAX)
            snprintf(gone[ngone++], CATALOG_NAME_MAX, "%s", d->name);
    for (int i = 0; i < ngone; i++) catalog_dataset_remove(gone[i]);
    pthread_mutex_unlock(&sync_lock);
    free(real_roots);
    free(realv);
    free(gone);
    free(found);
    free(d);
    return nfound;
}

/* ---- the cached sync ---------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t fnv_stat(uint64_t h, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return fnv(h, "-", 1);
    int64_t v[5] = {(int64_t)st.st_ino, (int64_t)st.st_size, (int64_t)st.st_mode, (int64_t)st.st_mtim.tv_sec,
                    (int64_t)st.st_mtim.tv_nsec};
    return fnv(h, v, sizeof v);
}

/* A split folder's class folders: names and their stat (a file added to, removed from or
 * renamed in a class folder changes its mtime). */
static uint64_t fnv_split(uint64_t h, const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, not_hidden, by_name);
    h = fnv(h, &n, sizeof n);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        h = fnv(h, names[i]->d_name, strlen(names[i]->d_name) + 1);
        if (snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name) < (int)sizeof path) h = fnv_stat(h, path);
        free(names[i]);
    }
    free(names);
    return h;
}

/* What the roots hold, as far as a sync could see it without probing: the roots, the
 * names and stat (size, modification time, inode) of the entries directly under them,
 * and of a folder's train/, test/, val/ and their class folders (whose mtime changes when
 * an image is added, removed or renamed). Lists folders, never a class folder's files. */
static uint64_t userdata_fingerprint(const char *const *roots, int nroots)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int r = 0; r < nroots; r++) {
        struct dirent **names = NULL;
        h = fnv(h, roots[r], strlen(roots[r]) + 1);
        h = fnv_stat(h, roots[r]);
        int n = scandir(roots[r], &names, not_hidden, by_name);
        for (int i = 0; i < n; i++) {
            char path[PATH_MAX], sub[PATH_MAX + 8];
            struct stat st;
            int len = snprintf(path, sizeof path, "%s/%s", roots[r], names[i]->d_name);
            h = fnv(h, names[i]->d_name, strlen(names[i]->d_name) + 1);
            if (len > 0 && (size_t)len < sizeof path && stat(path, &st) == 0) {
                h = fnv_stat(h, path);
                if (S_ISDIR(st.st_mode)) {
                    static const char *const SPLITS[] = {"train", "test", "val"};
                    for (size_t k = 0; k < sizeof SPLITS / sizeof *SPLITS; k++) {
                        snprintf(sub, sizeof sub, "%s/%s", path, SPLITS[k]);
                        h = fnv_split(fnv_stat(h, sub), sub);
                    }
                }
            }
            free(names[i]);
        }
        free(names);
    }
    return h;
}

/* The last sync's fingerprint, count and refusals, under cache_lock (held across the
 * comparison and the sync, so that two requests after a change probe once). */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t cached_print;
static int cached_valid, cached_count;
static json_t *cached_refused;

int userdata_refresh(const char *const *roots, int nroots, json_t *refused, int *probed)
{
    uint64_t now = userdata_fingerprint(roots, nroots);
    int n;
    *probed = 0;
    pthread_mutex_lock(&cache_lock);
    if (!cached_valid || now != cached_print) {
        json_t *fresh = json_array();
        n = userdata_sync(roots, nroots, fresh);
        json_decref(cached_refused);
        cached_refused = fresh;
        cached_print = now;
        cached_count = n;
        /* a failed sync (out of memory) is tried again by the next call */
        cached_valid = n >= 0 && fresh != NULL;
        *probed = 1;
    }
    n = cached_count;
    if (refused && cached_refused) json_array_extend(refused, cached_refused);
    pthread_mutex_unlock(&cache_lock);
    return n;
}
