/* common/catalog.c - see catalog.h. The built-in rows are the tables below; the entries
 * added at run time live in one growable array per kind behind one mutex. */
#include "catalog.h"
#include "dataroot.h"
#include "errmsg.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h> /* PATH_MAX */
#include <unistd.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The built-in networks: what a person decides (name, title, input, classes, the data set
 * it usually trains on) is written here; what model/ decides (head width, layers, sizes,
 * FLOPs) is FIGURES(name), measured at build time by tools/catalog_rows.c from model_create
 * and model_describe into $(BUILD)/gen/catalog_models.h, so a changed network or kernel
 * workspace changes its row with it. The coordinator, which may not link model/, reads
 * the same figures. A row added here needs a builder of its name in model/model.c (the
 * tool fails the build without one). CATALOG_BOOTSTRAP is the tool's own copy of this
 * file: the rows without figures, which it measures. */
#ifdef CATALOG_BOOTSTRAP
#define FIGURES(name) .layers = 0
#else
#include "catalog_models.h"
#define FIGURES(name) CATALOG_FIGURES_##name
#endif
/* clang-format off */
static const catalog_model_t MODELS[] = {
    {.name = "mlp", .title = "MLP", .source = CATALOG_BUILTIN, .C = 1, .H = 28, .W = 28, .classes = 10,
     .dataset = "fashion-mnist", FIGURES(mlp)},
    {.name = "lenet5", .title = "LeNet-5", .source = CATALOG_BUILTIN, .C = 1, .H = 28, .W = 28, .classes = 10,
     .dataset = "fashion-mnist", FIGURES(lenet5)},
    {.name = "cifar10_quick", .title = "CIFAR-10 quick", .source = CATALOG_BUILTIN, .C = 3, .H = 32, .W = 32,
     .classes = 10, .dataset = "cifar10", FIGURES(cifar10_quick)},
    {.name = "resnet20", .title = "ResNet-20", .source = CATALOG_BUILTIN, .C = 3, .H = 32, .W = 32, .classes = 10,
     .dataset = "cifar10", FIGURES(resnet20)},
};
#undef FIGURES

/* The files and statistics worker/data.c reads; sample counts of the standard files. */
static const catalog_dataset_t DATASETS[] = {
    {.name = "fashion-mnist", .title = "Fashion-MNIST", .source = CATALOG_BUILTIN, .format = CATALOG_FORMAT_IDX,
     .C = 1, .H = 28, .W = 28, .classes = 10, .train_n = 60000, .test_n = 10000,
     .train_files = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}, .ntrain = 2,
     .test_files = {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}, .ntest = 2,
     .dir = "fashion-mnist", .fixed_dir = "/usr/share/datasets/fashion-mnist",
     .mean = {0.2860f}, .std = {0.3530f}, .augment = 1},
    {.name = "mnist", .title = "MNIST", .source = CATALOG_BUILTIN, .format = CATALOG_FORMAT_IDX,
     .C = 1, .H = 28, .W = 28, .classes = 10, .train_n = 60000, .test_n = 10000,
     .train_files = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}, .ntrain = 2,
     .test_files = {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}, .ntest = 2,
     .dir = "mnist", .fixed_dir = "", .mean = {0.1307f}, .std = {0.3081f}, .augment = 1},
    {.name = "cifar10", .title = "CIFAR-10", .source = CATALOG_BUILTIN, .format = CATALOG_FORMAT_CIFAR,
     .C = 3, .H = 32, .W = 32, .classes = 10, .train_n = 50000, .test_n = 10000,
     .train_files = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                     "data_batch_5.bin"}, .ntrain = 5,
     .test_files = {"test_batch.bin"}, .ntest = 1,
     .dir = "cifar-10", .fixed_dir = "", .mean = {0.4914f, 0.4822f, 0.4465f}, .std = {0.2470f, 0.2435f, 0.2616f},
     .augment = 1},
};
/* clang-format on */

/* ---- the entries added at run time ----------------------------------------------------- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
    void *items; /* catalog_model_t[] or catalog_dataset_t[] */
    size_t n, cap, size;
} added_t;

static added_t added_models = {NULL, 0, 0, sizeof(catalog_model_t)};
static added_t added_datasets = {NULL, 0, 0, sizeof(catalog_dataset_t)};

/* Both entry types begin with their name. */
_Static_assert(offsetof(catalog_model_t, name) == 0, "a model entry begins with its name");
_Static_assert(offsetof(catalog_dataset_t, name) == 0, "a data set entry begins with its name");
static const char *item_name(const added_t *a, size_t i) { return (const char *)a->items + i * a->size; }

/* Index of name among a's entries, or -1. Called with the lock held. */
static long added_find(const added_t *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(item_name(a, i), name) == 0) return (long)i;
    return -1;
}

/* Copies the entry name (or the i-th when name is NULL) into out: 0, or -1. */
static int added_get(const added_t *a, const char *name, size_t i, void *out)
{
    pthread_mutex_lock(&lock);
    long k = name ? added_find(a, name) : (i < a->n ? (long)i : -1);
    if (k >= 0) memcpy(out, item_name(a, (size_t)k), a->size);
    pthread_mutex_unlock(&lock);
    return k >= 0 ? 0 : -1;
}

static int added_put(added_t *a, const void *entry, char *err, size_t errlen, const char *what)
{
    const char *name = entry;
    int rc = -1;
    pthread_mutex_lock(&lock);
    if (added_find(a, name) >= 0) {
        snprintf(err, errlen, "%s %s: already in the catalog", what, name);
    } else if (a->n >= CATALOG_ADDED_MAX) {
        snprintf(err, errlen, "%s %s: the catalog holds at most %d added %ss", what, name, CATALOG_ADDED_MAX, what);
    } else {
        if (a->n == a->cap) {
            size_t cap = a->cap ? 2 * a->cap : 8;
            void *p = realloc(a->items, cap * a->size);
            if (!p) {
                snprintf(err, errlen, "%s %s: out of memory", what, name);
                goto out;
            }
            a->items = p;
            a->cap = cap;
        }
        memcpy((char *)a->items + a->n * a->size, entry, a->size);
        a->n++;
        rc = 0;
    }
out:
    pthread_mutex_unlock(&lock);
    return rc;
}

static int added_remove(added_t *a, const char *name)
{
    pthread_mutex_lock(&lock);
    long k = name ? added_find(a, name) : -1;
    if (k >= 0) {
        char *base = a->items;
        memmove(base + (size_t)k * a->size, base + (size_t)(k + 1) * a->size, (a->n - (size_t)k - 1) * a->size);
        a->n--;
    }
    pthread_mutex_unlock(&lock);
    return k >= 0 ? 0 : -1;
}

static int added_has(const added_t *a, const char *name)
{
    pthread_mutex_lock(&lock);
    long k = added_find(a, name);
    pthread_mutex_unlock(&lock);
    return k >= 0;
}

static const catalog_model_t *builtin_model(const char *name);
static const catalog_dataset_t *builtin_dataset(const char *name);

/* ---- checks ---------------------------------------------------------------------------- */

int catalog_name_valid(const char *name)
{
    if (!name || !*name || strlen(name) >= CATALOG_NAME_MAX) return 0;
    /* "." and ".." name folders, never a model, a data set or a job (an upload named ".."
     * would be a path out of models/) */
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return 0;
    for (const char *s = name; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                 c == '-';
        if (!ok) return 0;
    }
    return 1;
}

/* A string member of a struct that came from outside must end inside its buffer. */
#define TERMINATED(a) (memchr((a), 0, sizeof(a)) != NULL)

/* A file name under the data set's directory: a name, never a path. */
static int file_name_ok(const char *f, size_t len)
{
    return memchr(f, 0, len) && f[0] && !strchr(f, '/') && strcmp(f, ".") != 0 && strcmp(f, "..") != 0;
}

static int model_check(const catalog_model_t *m, char *err, size_t errlen)
{
    if (!TERMINATED(m->name) || !catalog_name_valid(m->name))
        return errmsg(err, errlen, "model name: must be 1 to %d letters, digits, '.', '_' or '-'", CATALOG_NAME_MAX - 1);
    const char *n = m->name;
    if (!TERMINATED(m->title) || !TERMINATED(m->dataset)) return errmsg(err, errlen, "model %s: unterminated text", n);
    if (m->source != CATALOG_ONNX && m->source != CATALOG_UPLOADED)
        return errmsg(err, errlen,
                      "model %s: source must be onnx or uploaded (built-in models are rows of common/catalog.c)", n);
    if (!TERMINATED(m->sha256) || (m->source == CATALOG_UPLOADED) != (m->sha256[0] != '\0'))
        return errmsg(err, errlen, "model %s: an uploaded model has its sha256, any other none", n);
    for (const char *h = m->sha256; *h; h++)
        if (!((*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'f')) || h - m->sha256 >= CATALOG_SHA256_LEN)
            return errmsg(err, errlen, "model %s: sha256 must be %d lower-case hex digits", n, CATALOG_SHA256_LEN);
    if (m->sha256[0] && strlen(m->sha256) != CATALOG_SHA256_LEN)
        return errmsg(err, errlen, "model %s: sha256 must be %d lower-case hex digits", n, CATALOG_SHA256_LEN);
    if (m->C < 1 || m->H < 1 || m->W < 1 || (long)m->C * m->H * m->W > (1L << 30))
        return errmsg(err, errlen, "model %s: input shape %dx%dx%d is not a shape", n, m->C, m->H, m->W);
    if (m->classes < 1) return errmsg(err, errlen, "model %s: classes must be >= 1 (is %d)", n, m->classes);
    if (m->head_in != 0)
        return errmsg(err, errlen, "model %s: only a built-in network's head takes the data set's classes (head_in %d)",
                      n, m->head_in);
    if (m->layers < 1) return errmsg(err, errlen, "model %s: layers must be >= 1 (is %d)", n, m->layers);
    if (m->params < 1 || m->buffers < 0 || m->fixed < 0 || m->acts_per_sample < 1 || m->dacts_per_sample < 1 ||
        m->argmax_per_sample < 0)
        return errmsg(err, errlen,
                      "model %s: sizes must be known (parameters %ld, buffers %ld, fixed %ld, activations per "
                      "sample %ld, their gradients per sample %ld, argmax per sample %ld)",
                      n, m->params, m->buffers, m->fixed, m->acts_per_sample, m->dacts_per_sample, m->argmax_per_sample);
    if (!(m->flops_per_sample > 0) || m->flops_per_sample > 1e18)
        return errmsg(err, errlen, "model %s: FLOPs per sample must be known (is %g)", n, m->flops_per_sample);
    if (m->dataset[0] && !builtin_dataset(m->dataset) && !added_has(&added_datasets, m->dataset))
        return errmsg(err, errlen, "model %s: data set %s is not in the catalog", n, m->dataset);
    if (builtin_model(n)) return errmsg(err, errlen, "model %s: a built-in model has that name", n);
    return 0;
}

/* An image folder or .npz (dataset_check has checked the name, text, source, format):
 * where it is, and what the probe could tell without decoding. */
static int user_dataset_check(const catalog_dataset_t *d, char *err, size_t errlen)
{
    const char *n = d->name;
    const int unknown = d->C == 0 && d->H == 0 && d->W == 0;
    if (!unknown && (d->C < 1 || d->C > CATALOG_CHANNELS_MAX || d->H < 1 || d->W < 1 || (long)d->H * d->W > (1L << 28)))
        return errmsg(err, errlen, "data set %s: image shape %dx%dx%d is not one pacer reads (at most %d channels)", n,
                      d->C, d->H, d->W, CATALOG_CHANNELS_MAX);
    if (d->classes < 1) return errmsg(err, errlen, "data set %s: classes must be >= 1 (is %d)", n, d->classes);
    if (d->train_n < 1 || d->test_n < 1)
        return errmsg(err, errlen, "data set %s: sample counts must be >= 1 (train %ld, test %ld)", n, d->train_n,
                      d->test_n);
    if (d->ntrain != 0 || d->ntest != 0)
        return errmsg(err, errlen, "data set %s: an %s data set has no file list (train %d, test %d)", n,
                      catalog_format_name(d->format), d->ntrain, d->ntest);
    if (d->fixed_dir[0] != '/')
        return errmsg(err, errlen, "data set %s: fixed_dir must be the absolute path of its %s", n,
                      d->format == CATALOG_FORMAT_NPZ ? ".npz file" : "folder");
    int known = 0;
    for (int c = 0; c < CATALOG_CHANNELS_MAX; c++) known |= d->std[c] != 0;
    for (int c = 0; known && c < (d->C ? d->C : 1); c++)
        if (!(d->std[c] > 0) || !(d->mean[c] >= 0 && d->mean[c] <= 1))
            return errmsg(err, errlen, "data set %s: channel %d's mean must be in [0, 1] and its std > 0", n, c);
    if (builtin_dataset(n)) return errmsg(err, errlen, "data set %s: a built-in data set has that name", n);
    return 0;
}

static int dataset_check(const catalog_dataset_t *d, char *err, size_t errlen)
{
    if (!TERMINATED(d->name) || !catalog_name_valid(d->name))
        return errmsg(err, errlen, "data set name: must be 1 to %d letters, digits, '.', '_' or '-'",
                      CATALOG_NAME_MAX - 1);
    const char *n = d->name;
    if (!TERMINATED(d->title) || !TERMINATED(d->fixed_dir))
        return errmsg(err, errlen, "data set %s: unterminated text", n);
    if (d->source != CATALOG_USER)
        return errmsg(err, errlen, "data set %s: source must be user (built-in data sets are rows of common/catalog.c)",
                      n);
    if ((unsigned)d->format >= CATALOG_FORMAT_N)
        return errmsg(err, errlen, "data set %s: unknown format %d", n, (int)d->format);
    if (catalog_format_is_user(d->format)) return user_dataset_check(d, err, errlen);
    if (d->C < 1 || d->C > CATALOG_CHANNELS_MAX || d->H < 1 || d->W < 1 || (long)d->H * d->W > (1L << 28))
        return errmsg(err, errlen, "data set %s: image shape %dx%dx%d is not one pacer reads (at most %d channels)", n,
                      d->C, d->H, d->W, CATALOG_CHANNELS_MAX);
    if (d->classes < 1) return errmsg(err, errlen, "data set %s: classes must be >= 1 (is %d)", n, d->classes);
    if (d->train_n < 1 || d->test_n < 1)
        return errmsg(err, errlen, "data set %s: sample counts must be >= 1 (train %ld, test %ld)", n, d->train_n,
                      d->test_n);
    if (d->ntrain < 1 || d->ntrain > CATALOG_FILES_MAX || d->ntest < 1 || d->ntest > CATALOG_FILES_MAX)
        return errmsg(err, errlen, "data set %s: 1 to %d files per split (train %d, test %d)", n, CATALOG_FILES_MAX,
                      d->ntrain, d->ntest);
    for (int i = 0; i < d->ntrain; i++)
        if (!file_name_ok(d->train_files[i], sizeof d->train_files[i]))
            return errmsg(err, errlen, "data set %s: training file %d is not a file name", n, i);
    for (int i = 0; i < d->ntest; i++)
        if (!file_name_ok(d->test_files[i], sizeof d->test_files[i]))
            return errmsg(err, errlen, "data set %s: test file %d is not a file name", n, i);
    if (!file_name_ok(d->dir, sizeof d->dir)) return errmsg(err, errlen, "data set %s: dir is not a directory name", n);
    for (int c = 0; c < d->C; c++)
        if (!(d->std[c] > 0) || !(d->mean[c] >= 0 && d->mean[c] <= 1))
            return errmsg(err, errlen, "data set %s: channel %d's mean must be in [0, 1] and its std > 0", n, c);
    if (builtin_dataset(n)) return errmsg(err, errlen, "data set %s: a built-in data set has that name", n);
    return 0;
}

/* ---- models ---------------------------------------------------------------------------- */

static const catalog_model_t *builtin_model(const char *name)
{
    for (size_t i = 0; name && i < ARRAY_LEN(MODELS); i++)
        if (strcmp(MODELS[i].name, name) == 0) return &MODELS[i];
    return NULL;
}

int catalog_model_get(const char *name, catalog_model_t *out)
{
    const catalog_model_t *b = builtin_model(name);
    if (b) return *out = *b, 0;
    return name ? added_get(&added_models, name, 0, out) : -1;
}

int catalog_model_at(size_t i, catalog_model_t *out)
{
    if (i < ARRAY_LEN(MODELS)) {
        *out = MODELS[i];
        return 0;
    }
    return added_get(&added_models, NULL, i - ARRAY_LEN(MODELS), out);
}

int catalog_model_add(const catalog_model_t *m, char *err, size_t errlen)
{
    if (!m) return errmsg(err, errlen, "model: no entry");
    if (model_check(m, err, errlen) != 0) return -1;
    return added_put(&added_models, m, err, errlen, "model");
}

int catalog_model_remove(const char *name) { return added_remove(&added_models, name); }

/* ---- data sets ------------------------------------------------------------------------- */

static const catalog_dataset_t *builtin_dataset(const char *name)
{
    for (size_t i = 0; name && i < ARRAY_LEN(DATASETS); i++)
        if (strcmp(DATASETS[i].name, name) == 0) return &DATASETS[i];
    return NULL;
}

int catalog_dataset_get(const char *name, catalog_dataset_t *out)
{
    const catalog_dataset_t *b = builtin_dataset(name);
    if (b) return *out = *b, 0;
    return name ? added_get(&added_datasets, name, 0, out) : -1;
}

int catalog_dataset_at(size_t i, catalog_dataset_t *out)
{
    if (i < ARRAY_LEN(DATASETS)) {
        *out = DATASETS[i];
        return 0;
    }
    return added_get(&added_datasets, NULL, i - ARRAY_LEN(DATASETS), out);
}

int catalog_dataset_add(const catalog_dataset_t *d, char *err, size_t errlen)
{
    if (!d) return errmsg(err, errlen, "data set: no entry");
    if (dataset_check(d, err, errlen) != 0) return -1;
    return added_put(&added_datasets, d, err, errlen, "data set");
}

int catalog_dataset_remove(const char *name) { return added_remove(&added_datasets, name); }

int catalog_dataset_default_dir(const catalog_dataset_t *d, char *out, size_t len)
{
    int n;
    if (d->fixed_dir[0]) {
        n = snprintf(out, len, "%s", d->fixed_dir);
    } else {
        const char *shared = getenv("PACER_SHARED");
        if (!shared || !*shared) shared = "../shared";
        n = snprintf(out, len, "%s/datasets/%s", shared, d->dir);
    }
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int file_there(const char *dir, const char *file)
{
    char path[CATALOG_DIR_MAX * 4];
    int n = snprintf(path, sizeof path, "%s/%s.gz", dir, file);
    if (n < 0 || (size_t)n >= sizeof path) return 0;
    if (access(path, R_OK) == 0) return 1;
    path[n - 3] = '\0';
    return access(path, R_OK) == 0;
}

int catalog_dataset_present(const catalog_dataset_t *d, const char *dir)
{
    if (!dir || !*dir) return 0;
    if (catalog_format_is_user(d->format)) return access(dir, R_OK) == 0;
    for (int i = 0; i < d->ntrain; i++)
        if (!file_there(dir, d->train_files[i])) return 0;
    for (int i = 0; i < d->ntest; i++)
        if (!file_there(dir, d->test_files[i])) return 0;
    return 1;
}

/* dir made absolute for a message or an answer: resolved when it exists, else joined to
 * the current directory (a place that does not exist still means one place). */
static void absolute_dir(const char *dir, char *out, size_t len)
{
    char real[PATH_MAX], cwd[PATH_MAX];
    int n;
    if (realpath(dir, real)) n = snprintf(out, len, "%s", real);
    else if (dir[0] != '/' && getcwd(cwd, sizeof cwd)) n = snprintf(out, len, "%s/%s", cwd, dir);
    else n = snprintf(out, len, "%s", dir);
    if (n < 0 || (size_t)n >= len) snprintf(out, len, "%s", dir); /* cut: as given */
}

int catalog_dataset_locate(const catalog_dataset_t *d, const char *const *roots, int nroots, char *out, size_t len,
                           char *looked, size_t lookedlen)
{
    char def[CATALOG_DIR_MAX * 2], dir[PATH_MAX + CATALOG_NAME_MAX + 2];
    size_t used = 0;
    if (looked && lookedlen) looked[0] = '\0';
    for (int i = -1; i < nroots; i++) {
        if (i < 0) {
            /* the default: fixed_dir, or $PACER_SHARED/datasets/DIR (maybe relative) */
            if (catalog_dataset_default_dir(d, def, sizeof def) != 0) continue;
            absolute_dir(def, dir, sizeof dir);
        } else {
            /* a user's set is where it is (fixed_dir): no other place holds it */
            if (!roots || !roots[i] || catalog_format_is_user(d->format)) continue;
            snprintf(dir, sizeof dir, "%s/%s", roots[i], d->dir);
        }
        /* under a root, the submission's rule (dataroot.h): a DIR linked out of the roots
         * is not offered */
        char real[DATAROOT_PATH];
        int usable = i < 0 || dataroot_resolve(roots, nroots, dir, real) == DATAROOT_OK;
        if (usable && catalog_dataset_present(d, dir) && strlen(dir) < len) {
            snprintf(out, len, "%s", dir);
            return 0;
        }
        if (looked && used < lookedlen) {
            int n = snprintf(looked + used, lookedlen - used, "%s%s", used ? ", " : "", dir);
            if (n > 0) used += (size_t)n;
        }
    }
    if (len) out[0] = '\0';
    return -1;
}

/* ---- both ------------------------------------------------------------------------------ */

int catalog_pair_check(const catalog_model_t *m, const catalog_dataset_t *d, char *err, size_t errlen)
{
    if (m->C != d->C || m->H != d->H || m->W != d->W)
        return errmsg(err, errlen, "model: %s takes %dx%dx%d images, dataset.name %s has %dx%dx%d", m->name, m->C, m->H,
                      m->W, d->name, d->C, d->H, d->W);
    if (m->head_in == 0 && m->classes != d->classes)
        return errmsg(err, errlen, "model: %s has %d outputs (classes), dataset.name %s has %d classes", m->name,
                      m->classes, d->name, d->classes);
    return 0;
}

int catalog_model_for_classes(const catalog_model_t *m, int classes, catalog_model_t *out, char *err, size_t errlen)
{
    if (classes < 1 || classes > CATALOG_CLASSES_MAX)
        return errmsg(err, errlen, "model: %s cannot be sized to %d classes (1 to %d)", m->name, classes,
                      CATALOG_CLASSES_MAX);
    if (m->head_in == 0 && m->classes != classes)
        return errmsg(err, errlen,
                      "model: %s has %d outputs (classes), the data set has %d classes: an imported model keeps its "
                      "own width",
                      m->name, m->classes, classes);
    const long d = (long)classes - m->classes;
    if (out != m) *out = *m;
    out->classes = classes;
    out->params += d * ((long)m->head_in + 1);
    out->acts_per_sample += d;
    /* the logits' gradient, placed first (the loss's), takes the classes a sample with its
     * end aligned to 16 floats (model/plan.c): the arena moves by that slot's change */
    out->dacts_per_sample += (classes + 15L) / 16 * 16 - (classes - d + 15) / 16 * 16; /* m may be out */
    out->flops_per_sample += (double)d * (2.0 * m->head_in + 5.0);
    return 0;
}

static void join(char *buf, size_t len, size_t *used, const char *quote, const char *name)
{
    if (*used >= len) return;
    int w = snprintf(buf + *used, len - *used, "%s%s%s%s", *used ? ", " : "", quote, name, quote);
    if (w > 0) *used += (size_t)w;
}

void catalog_model_names(char *buf, size_t len, const char *quote, int builtin_only)
{
    size_t used = 0;
    catalog_model_t m;
    if (len) buf[0] = '\0';
    for (size_t i = 0; (!builtin_only || i < ARRAY_LEN(MODELS)) && catalog_model_at(i, &m) == 0; i++)
        join(buf, len, &used, quote, m.name);
}

void catalog_dataset_names(char *buf, size_t len, const char *quote, int builtin_only)
{
    size_t used = 0;
    if (len) buf[0] = '\0';
    for (size_t i = 0; i < ARRAY_LEN(DATASETS); i++) join(buf, len, &used, quote, DATASETS[i].name);
    /* Names only: the entries themselves are large, so no copy of each. */
    pthread_mutex_lock(&lock);
    for (size_t i = 0; !builtin_only && i < added_datasets.n; i++)
        join(buf, len, &used, quote, item_name(&added_datasets, i));
    pthread_mutex_unlock(&lock);
}

const char *catalog_source_name(catalog_source_t s)
{
    switch (s) {
    case CATALOG_BUILTIN: return "builtin";
    case CATALOG_ONNX: return "onnx";
    case CATALOG_USER: return "user";
    case CATALOG_UPLOADED: return "uploaded";
    }
    return "unknown";
}

static const struct {
    const char *name;
    int user;
    const char *path_is;
} FORMATS[] = {
#define CATALOG_FORMAT_ROW(e, name, user, path_is) [e] = {name, user, path_is},
    CATALOG_FORMATS(CATALOG_FORMAT_ROW)
#undef CATALOG_FORMAT_ROW
};
_Static_assert(sizeof FORMATS / sizeof FORMATS[0] == CATALOG_FORMAT_N, "a row per format");

const char *catalog_format_name(catalog_format_t f)
{
    return (unsigned)f < CATALOG_FORMAT_N ? FORMATS[f].name : "unknown";
}

int catalog_format_is_user(catalog_format_t f) { return (unsigned)f < CATALOG_FORMAT_N && FORMATS[f].user; }

const char *catalog_format_path_is(catalog_format_t f)
{
    return (unsigned)f < CATALOG_FORMAT_N ? FORMATS[f].path_is : "";
}

int catalog_format_parse(const char *name, catalog_format_t *out)
{
    for (int f = 0; name && f < CATALOG_FORMAT_N; f++)
        if (strcmp(FORMATS[f].name, name) == 0) {
            *out = (catalog_format_t)f;
            return 0;
        }
    return -1;
}
