/* common/catalog.h - what pacer knows about models and data sets: one table, read by spec
 * validation (spec.c: the names, the model/data-set pairing), the memory estimate
 * (memest.c), the data loaders (worker/data.c: files, format, classes, normalisation),
 * the model builders (model/model.c: input shape and classes) and the API
 * (GET /api/v1/models, /api/v1/datasets; the dashboard's form and `pacer models` ask it).
 *
 * Built-in entries are rows of catalog.c. An entry that is not built in (an ONNX model
 * imported at run time; a user's image folder or .npz under a data root, which
 * coordinator/userdata.c probes and adds) is added with catalog_model_add /
 * catalog_dataset_add by whoever parses it, with every figure filled in (a model's from
 * model_describe on the model it built), and from then on takes the same paths as a
 * built-in: the spec may name it, the memory estimate sizes it, the coordinator admits it
 * by it, the API lists it. Nothing in pacer knows a model or data set by name outside
 * this table; model/ keeps only its builder functions, by name.
 *
 * The figures of the built-in models are measured from model_create and model_describe
 * (model/model.c) at build time (tools/catalog_rows.c writes them into the generated
 * catalog_models.h that catalog.c includes), so a changed network changes its row;
 * test_catalog_matches_models (tests/unit/test_model.c) checks the rows at other batch
 * sizes and class counts (catalog_model_for_classes) against the networks built.
 *
 * Thread safety: one mutex guards the entries added at run time. Lookups copy the entry
 * out, so an entry removed meanwhile never leaves a caller with a dangling pointer; a
 * listing by index (catalog_model_at) may skip or repeat an entry added or removed
 * between two calls, never read a freed one. No allocation on lookups; nothing here is
 * called inside a training step.
 */
#ifndef PACER_CATALOG_H
#define PACER_CATALOG_H

#include <stddef.h>

#define CATALOG_NAME_MAX 64    /* names are job-spec values (SPEC_NAME_MAX) */
#define CATALOG_TITLE_MAX 64   /* what people read: "LeNet-5" */
#define CATALOG_FILES_MAX 8    /* files of one split of a data set */
#define CATALOG_FILE_MAX 64    /* one file name, relative to the data set's directory */
#define CATALOG_DIR_MAX 512    /* a fixed directory, or a user data set's folder or .npz */
#define CATALOG_CHANNELS_MAX 3 /* per-channel normalisation of a data set */
#define CATALOG_ADDED_MAX 256  /* entries added at run time, of each kind */
#define CATALOG_SHA256_LEN 64  /* hex digits of an uploaded model's content hash */
/* The most classes a model may be sized to (common/dsprobe.h's bound on a user's labels). */
#define CATALOG_CLASSES_MAX 65536

/* Where an entry comes from; the API says it as catalog_source_name gives it. */
typedef enum {
    CATALOG_BUILTIN = 0, /* "builtin": a row of catalog.c, built by model/model.c */
    CATALOG_ONNX = 1,    /* "onnx": an imported graph, added at run time */
    CATALOG_USER = 2,    /* "user": a user's data set, added at run time */
    /* "uploaded": an ONNX model uploaded through the API (PUT /api/v1/models/{name}),
     * stored by the coordinator under its content hash (coordinator/modelstore.c) */
    CATALOG_UPLOADED = 3,
} catalog_source_t;

/* How a data set's files are read: dataset.format's values, one row each (the one home of
 * the formats: the enum, their names, which are a user's, what dataset.path names; the
 * spec's choices, common/dsprobe.c's probes and worker/dsload.c's readers dispatch on it).
 *   idx          IDX images + labels (MNIST's), each maybe gzipped (worker/data.c)
 *   cifar        CIFAR-10 binary batches of 3073-byte records (worker/data.c)
 *   imagefolder  fixed_dir/train/CLASS/FILE, fixed_dir/test/CLASS/FILE (worker/dsload.c)
 *   npz          fixed_dir is a NumPy .npz: x_train, y_train, x_test, y_test (worker/dsload.c)
 *   text         train.txt and val.txt, a token per byte (common/tokfile.h, worker/textdata.c)
 *   tokens       train.bin and val.bin (or train_*.bin, val_*.bin) of uint16 ids (the same)
 * X(enum, name, a user's data set: read by the worker from one path, what that path is) */
#define CATALOG_FORMATS(X)                                                                    \
    X(CATALOG_FORMAT_IDX, "idx", 0, "")                                                       \
    X(CATALOG_FORMAT_CIFAR, "cifar", 0, "")                                                   \
    X(CATALOG_FORMAT_IMAGEFOLDER, "imagefolder", 1, "the folder that holds train/ and test/") \
    X(CATALOG_FORMAT_NPZ, "npz", 1, "the .npz file")                                          \
    X(CATALOG_FORMAT_TEXT, "text", 1, "the folder that holds train.txt and val.txt")          \
    X(CATALOG_FORMAT_TOKENS, "tokens", 1, "the folder that holds train.bin and val.bin (or train_*.bin, val_*.bin)")

#define CATALOG_FORMAT_ENUM(e, name, user, path_is) e,
typedef enum { CATALOG_FORMATS(CATALOG_FORMAT_ENUM) CATALOG_FORMAT_N } catalog_format_t;
#undef CATALOG_FORMAT_ENUM

typedef struct {
    char name[CATALOG_NAME_MAX]; /* the spec's "model" */
    char title[CATALOG_TITLE_MAX];
    catalog_source_t source;
    int C, H, W; /* input of one sample */
    int classes; /* output width: the logits, one per class */
    /* A built-in network's head (its last layer, fully connected) is sized to the job's
     * data set, as torchvision's num_classes: the figures of this row are for `classes`
     * (10), and catalog_model_for_classes gives them for any other count. head_in is the
     * head's input width: each class adds head_in + 1 parameters, one activation per
     * sample and 2 x head_in + 5 FLOPs per sample (the head and the softmax). 0 = the
     * width is the model's own (an imported one): only a data set of `classes` fits. */
    int head_in;
    int layers; /* entries of model/'s layer list */
    /* Sizes in elements (floats unless named), as model_create allocates them; the
     * memory estimate (memest.h) is made of these. */
    long params;  /* trainable parameters */
    long buffers; /* non-trained buffers (batch-norm running statistics) */
    /* Floats that do not grow with the batch: batch-norm saved statistics + the largest
     * convolution workspace (its column budget caps it). */
    long fixed;
    long acts_per_sample; /* one activation arena, per sample of the batch */
    /* the activation gradients' arena, per sample: planned by liveness (model/plan.c's
     * model_plan_dacts), most models' a fraction of acts_per_sample; where a model's
     * figures predate it (an uploaded model's index entry), acts_per_sample */
    long dacts_per_sample;
    long argmax_per_sample; /* int32, maxpool argmax, per sample */
    /* The forward pass of one sample (a multiply-add is 2): the cost model of sim/cost.c
     * (training is 3x). */
    double flops_per_sample;
    /* The data set it is usually trained on (the form's and a benchmark's default); "" =
     * none. */
    char dataset[CATALOG_NAME_MAX];
    /* SHA-256 of the ONNX file (64 hex digits) of an uploaded model: the job spec's
     * model.sha256, the key its bytes are stored under; "" for any other. */
    char sha256[CATALOG_SHA256_LEN + 1];
} catalog_model_t;

typedef struct {
    char name[CATALOG_NAME_MAX]; /* the spec's "dataset.name" */
    char title[CATALOG_TITLE_MAX];
    catalog_source_t source;
    catalog_format_t format;
    /* One image. An image folder's entry has 0x0x0: only decoding tells its images'
     * sizes (the API says null); a job resizes them or needs them at the model's size. */
    int C, H, W;
    int classes;          /* labels are in [0, classes) */
    long train_n, test_n; /* samples of the files (before train_subset / test_subset) */
    /* Under the data set's directory; each may also be there as NAME.gz. IDX: images
     * then labels; CIFAR: the batches in order. imagefolder, npz: none (ntrain = ntest
     * = 0; fixed_dir is the folder or the file). */
    char train_files[CATALOG_FILES_MAX][CATALOG_FILE_MAX];
    int ntrain;
    char test_files[CATALOG_FILES_MAX][CATALOG_FILE_MAX];
    int ntest;
    /* Its directory's name under a data root and under $PACER_SHARED/datasets. */
    char dir[CATALOG_NAME_MAX];
    /* Its default directory when that is fixed (a Debian package's; a user's image
     * folder or .npz file, where it is); "" = $PACER_SHARED/datasets/DIR. */
    char fixed_dir[CATALOG_DIR_MAX];
    /* Per channel, on the [0,1] scale, of the training split: x = (pixel/255 - mean) / std.
     * imagefolder, npz: std 0 = not known before decoding (the worker computes them once
     * and keeps them in the decoded cache; the summary reports them). */
    float mean[CATALOG_CHANNELS_MAX];
    float std[CATALOG_CHANNELS_MAX];
    /* dataset.augment (random crop with padding, horizontal flip) allowed: every
     * built-in and user data set (hflip can be turned off for digits and text). */
    int augment;
} catalog_dataset_t;

/* ---- models ------------------------------------------------------------------------- */

/* The entry named name, copied into *out: 0, or -1 when the catalog has none. */
int catalog_model_get(const char *name, catalog_model_t *out);
/* The i-th entry (built-ins first, in table order, then the added ones in the order they
 * came): 0, or -1 past the end. */
int catalog_model_at(size_t i, catalog_model_t *out);
/* Adds an entry that is not built in. Every figure is checked (a valid name that is not
 * taken, a source other than builtin (onnx or uploaded; an uploaded one with its sha256,
 * any other without), positive shape, classes, layers, parameters,
 * activations and FLOPs, a known data set or ""), so an entry in the catalog can always
 * be estimated and paired. 0, or -1 with err naming the field. */
int catalog_model_add(const catalog_model_t *m, char *err, size_t errlen);
/* Removes an added entry: 0, or -1 when name is not an added one (built-ins stay). */
int catalog_model_remove(const char *name);

/* ---- data sets ----------------------------------------------------------------------- */

int catalog_dataset_get(const char *name, catalog_dataset_t *out);
int catalog_dataset_at(size_t i, catalog_dataset_t *out);
/* As catalog_model_add: a valid new name, a known format, positive shape (at most
 * CATALOG_CHANNELS_MAX channels), classes and sample counts, files of safe names, a
 * positive std per channel. An imagefolder or npz entry has no files but an absolute
 * fixed_dir (its folder or file); its shape may be 0x0x0 (unknown) and its std all 0
 * (unknown). */
int catalog_dataset_add(const catalog_dataset_t *d, char *err, size_t errlen);
int catalog_dataset_remove(const char *name);

/* The directory a data set is read from when the spec gives no dataset.path: fixed_dir,
 * else $PACER_SHARED/datasets/DIR ($PACER_SHARED defaults to ../shared, relative to the
 * current directory). 0, or -1 when it does not fit in len. */
int catalog_dataset_default_dir(const catalog_dataset_t *d, char *out, size_t len);
/* Whether directory dir holds every file of both splits (each raw or .gz): 1 or 0. An
 * imagefolder or npz entry: whether dir (its folder or file) is readable. */
int catalog_dataset_present(const catalog_dataset_t *d, const char *dir);

/* Where this machine has data set d: the one rule of the data set listing (GET
 * /api/v1/datasets, `pacer datasets`), of a submission and of a retry (the coordinator
 * fills a built-in's dataset.path with it, coordinator/api.c). Tried in order: the
 * default directory (catalog_dataset_default_dir: fixed_dir, else
 * $PACER_SHARED/datasets/DIR), then DIR under each of roots (the --data-root
 * directories, resolved; a DIR linked out of every root is not offered, common/
 * dataroot.h; a user's set only at its fixed_dir); the first that holds every file
 * (catalog_dataset_present) wins. 0 with its absolute path in out (the default
 * resolved by realpath, so that it means the same to a process started elsewhere), or -1
 * with looked (may be NULL) naming every absolute place tried, ", "-separated (cut at
 * lookedlen). Touches the file system (access, realpath): not for a training step. */
int catalog_dataset_locate(const catalog_dataset_t *d, const char *const *roots, int nroots, char *out, size_t len,
                           char *looked, size_t lookedlen);

/* ---- both ---------------------------------------------------------------------------- */

/* Whether model m can train on data set d: the same image shape, and as many classes as
 * the model has outputs unless its head takes the data set's (head_in > 0: every
 * built-in). 0, or -1 with err naming both, e.g. "model: lenet5 takes 1x28x28 images,
 * dataset.name cifar10 has 3x32x32" or "model: net has 100 outputs (classes),
 * dataset.name cifar10 has 10 classes". */
int catalog_pair_check(const catalog_model_t *m, const catalog_dataset_t *d, char *err, size_t errlen);

/* m's figures for a data set of `classes` classes, into *out (out may be m): a built-in's
 * head sized to them (head_in > 0), a model of its own width unchanged when it has as many
 * outputs. 0, or -1 with err: classes outside [1, CATALOG_CLASSES_MAX], or a model of its
 * own width that has other outputs ("model: net.onnx has 100 outputs (classes), the data
 * set has 4 classes: an imported model keeps its own width"). */
int catalog_model_for_classes(const catalog_model_t *m, int classes, catalog_model_t *out, char *err, size_t errlen);

/* The names of every model (or data set) in catalog order, joined by ", ", each wrapped
 * in quote; only the built-ins when builtin_only. Cut (never overflowed) at len. */
void catalog_model_names(char *buf, size_t len, const char *quote, int builtin_only);
void catalog_dataset_names(char *buf, size_t len, const char *quote, int builtin_only);

/* The name rule of the catalog and of job names (spec.c): 1 to CATALOG_NAME_MAX - 1
 * letters, digits, '.', '_' and '-' (no quoting needed in a URL, a log line or a shell),
 * and not "." or "..". */
int catalog_name_valid(const char *name);
/* The rule in words, for refusals: printf with CATALOG_NAME_MAX - 1. */
#define CATALOG_NAME_RULE "1 to %d letters, digits, '.', '_' or '-', and not . or .."

/* "builtin", "onnx", "user", "uploaded"; "idx", "cifar", "imagefolder", "npz". */
const char *catalog_source_name(catalog_source_t s);
const char *catalog_format_name(catalog_format_t f);
/* 1 for the formats a user's data set comes in (imagefolder, npz: read by worker/dsload.c
 * from one path, decoded into the shared cache), 0 for the built-in readers' (idx, cifar). */
int catalog_format_is_user(catalog_format_t f);
/* What dataset.path names for a user's format ("" for the built-in readers'). */
const char *catalog_format_path_is(catalog_format_t f);
/* The format called name: 0, or -1 when none is ("auto" is none). */
int catalog_format_parse(const char *name, catalog_format_t *out);

#endif
