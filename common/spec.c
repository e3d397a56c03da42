/* common/spec.c - see spec.h.
 *
 * Every field is one row of FIELDS below: its dotted path in the JSON document, its C
 * type and place in job_spec_t, its bounds or allowed values, its default and a line of
 * documentation. Parsing, defaults, serialisation and the docs table are all loops over
 * that one table, so a new field is one new row (plus a cross-field rule in
 * spec_check.c if it needs one) and cannot be half-supported. The names a spec gives are
 * resolved (spec_resolve.c) and the fields checked together (spec_check.c) after the
 * table's walk.
 */
#include "spec.h"

#include "catalog.h"
#include "ckptdir.h"
#include "errmsg.h"
#include "freeze.h"
#include "hash.h"
#include "sha256.h"
#include "spec_check.h"
#include "spec_resolve.h"
#include "suggest.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Largest spec file spec_load_file accepts: a spec is a few KiB at most, and a bound
 * keeps a mistaken path (a data set, /dev/zero) from being read into memory whole. */
#define SPEC_FILE_MAX (1 << 20)

typedef enum {
    F_STR,     /* char buffer; with choices, an enum */
    F_INT,     /* int */
    F_LONG,    /* long */
    F_ULONG,   /* unsigned long (the seed) */
    F_DOUBLE,  /* double */
    F_BOOL,    /* int, 0 or 1 */
    F_DOUBLES, /* JSON array of numbers -> double[], its length into an int */
    F_OBJECTS, /* JSON array of objects, each parsed with a sub-table */
} ftype_t;

enum { R_MIN = 1, R_MAX = 2, R_MIN_EXCL = 4, R_MAX_EXCL = 8 };

/* Fields whose values are names of the catalog's (common/catalog.h), not a fixed list:
 * an entry added at run time (an imported model) is as valid as a built-in. */
enum { CAT_NONE, CAT_MODEL, CAT_DATASET };

typedef struct field field_t;
struct errbuf;
struct field {
    const char *path; /* "optimizer.lr"; sub-table rows: "emulate.schedule[].rank" */
    ftype_t type;
    size_t offset, size; /* of the member, in job_spec_t (or the array element) */
    unsigned range;      /* R_* bits; bounds also apply to each entry of F_DOUBLES */
    double min, max;
    const char *const *choices; /* NULL-terminated; F_STR only */
    int catalog;                /* F_STR: a name of the catalog's (CAT_*) */
    /* F_STR: may instead be given as an object of the rows under its path ("model":
     * {"onnx": PATH}); its value is then derived from theirs (resolve_model). */
    int or_object;
    const char *(*check)(const void *v); /* NULL when fine, else what is wrong */
    size_t count_offset;                 /* F_DOUBLES, F_OBJECTS: the int count */
    const field_t *sub;                  /* F_OBJECTS: the element's rows */
    size_t nsub, elem_size;
    /* A row that takes more than one JSON type (algorithm.shard.split: a name or a list of
     * numbers): its own parser and printer replace the type's; type_doc names its type in
     * the field table. */
    int (*parse)(struct errbuf *e, const field_t *f, json_t *v, unsigned char *base, const char *where);
    json_t *(*to_json)(const field_t *f, const unsigned char *base, int *prec);
    const char *type_doc;
    double def_num;          /* numbers, booleans, F_DOUBLES entries */
    const char *def_str;     /* strings */
    int required;            /* no default: must be given */
    int param;               /* may also sit under algorithm.params */
    int resume_free;         /* may differ between a checkpoint's run and
                                             the run resuming it: not in spec_hash */
    const char *default_doc; /* overrides the printed default */
    const char *allowed_doc; /* overrides the printed "allowed" column */
    const char *doc;
};

/* The member's offset, checked at compile time to have C type T: a row that points at a
 * member of another type (an int row on a long) would silently corrupt the struct, so
 * a mismatch makes a negative array size. Arrays decay, so strings check as char *. */
#define TYPECHECK(S, m, T) (0 * sizeof(char[_Generic(((S *)0)->m, T : 1, default : -1)]))
#define MEMBER(S, m, T) .offset = offsetof(S, m) + TYPECHECK(S, m, T), .size = sizeof(((S *)0)->m)
#define COUNT(m) .count_offset = offsetof(job_spec_t, m) + TYPECHECK(job_spec_t, m, int)

#define STR(m) .type = F_STR, MEMBER(job_spec_t, m, char *)
#define INT(m) .type = F_INT, MEMBER(job_spec_t, m, int)
#define LONG(m) .type = F_LONG, MEMBER(job_spec_t, m, long)
#define ULONG(m) .type = F_ULONG, MEMBER(job_spec_t, m, unsigned long)
#define DBL(m) .type = F_DOUBLE, MEMBER(job_spec_t, m, double)
#define BOOL(m) .type = F_BOOL, MEMBER(job_spec_t, m, int)

#define BETWEEN(lo, hi) .range = R_MIN | R_MAX, .min = (lo), .max = (hi)
#define IN_CO(lo, hi) .range = R_MIN | R_MAX | R_MAX_EXCL, .min = (lo), .max = (hi)
#define IN_OC(lo, hi) .range = R_MIN | R_MAX | R_MIN_EXCL, .min = (lo), .max = (hi)
#define GE(lo) .range = R_MIN, .min = (lo)
#define GT(lo) .range = R_MIN | R_MIN_EXCL, .min = (lo)

/* Upper bounds. Every numeric field has one: a value the worker would have to
 * convert to a narrower type (a float learning rate, a long step count made from epochs
 * x steps per epoch, a nanosleep from a slowdown) must fit it, and a sane job is far
 * inside each of them. tests/unit/test_spec.c checks every row has both bounds. */
#define MAX_BATCH 65536
#define MAX_EPOCHS 100000         /* also caps the epoch counts of the lr schedule */
#define MAX_COUNT 1000000000      /* step periods and sample counts kept in an int */
#define MAX_STEPS 1000000000000.0 /* global step numbers (a long; < 2^53, exact as double) */
#define MAX_LR 1000.0             /* rates are used as float */
#define MAX_COEF 1000.0           /* delay-compensation strengths */
#define MAX_SLOWDOWN 1000.0       /* emulated slowdown factors */
#define MAX_GLOBAL_BATCH 16777216 /* a global batch: MAX_BATCH x SPEC_MAX_WORKERS */

static const char *const ALGORITHMS[] = {"sgd",       "ssgd",    "hier-bsp", "hpsgd",   "local-sgd", "asgd",
                                         "nsoftsync", "dc-asgd", "ddc-asgd", "dbs-sgd", NULL};
static const char *const DEVICES[] = {"auto", "cpu", "cuda", NULL};
static const char *const PRECISIONS[] = {"fp32", "bf16", NULL};
static const char *const SCHEDULES[] = {"constant", "step", "cosine", NULL};
static const char *const DC_VARIANTS[] = {"c", "a", NULL};
static const char *const GOODPUT_MODELS[] = {"nodes", "equal", NULL};
static const char *const COMPRESSIONS[] = {"none", "bf16", "powersgd", NULL};
#define MAX_COMPRESS_RANK 64 /* worker/compress.h's COMPRESS_MAX_RANK */
static const char *const OPTIMIZERS[] = {"sgd", "adamw", NULL};
static const char *const NO_DECAY[] = {"default", "auto", "none", NULL};
static const char *const ASYNC_MOMENTA[] = {"explicit", "compensated", NULL};
static const char *const SHARD_SPLITS[] = {"even", "memory", NULL};
#define MAX_SHARD_WEIGHT 1e12 /* a weight may be bytes of memory */
static const char *const ON_COLLAPSE[] = {"continue", "fail", "restart", NULL};
static const char *const PRIORITIES[] = {"high", "normal", "low", NULL};
#define FORMAT_NAME(e, name, user, path_is) name,
static const char *const FORMATS[] = {"auto", CATALOG_FORMATS(FORMAT_NAME) NULL};
#undef FORMAT_NAME
static const char *const LAYOUTS[] = {"nhwc", "nchw", NULL};
static const char *const LORA_EXPORTS[] = {"merged", "separate", NULL};
#define MAX_LORA_ALPHA 1e6                                        /* lora.alpha: a float scale */
static const char *const TOKENIZERS[] = {"bytes", "chars", NULL}; /* the string form; bpe is an object */
static const char *const TOKENIZER_KINDS[] = {"bpe", NULL};
#define MAX_SIDE 16384 /* dataset.resize: worker/image.h's IMAGE_MAX_SIDE */

/* The job name ends up in file names (checkpoints, logs) and store keys, so it is kept
 * to characters that need no quoting anywhere. */
static const char *check_name(const void *v)
{
    const char *s = v;
    if (!*s) return "must not be empty";
    /* the catalog's name rule: its names and job names alike */
    if (!catalog_name_valid(s)) return "may contain only letters, digits, '.', '_' and '-', and may not be . or ..";
    return NULL;
}

/* The path goes into messages and log lines: one line, something to open. */
static const char *check_onnx_path(const void *v)
{
    const char *s = v;
    if (!*s) return "must not be empty";
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return "must not contain control characters";
    return NULL;
}

/* init's sources: "" (none, the default, what spec_to_json writes back) or a path / an id */
static const char *check_init_path(const void *v) { return *(const char *)v ? check_onnx_path(v) : NULL; }
static const char *check_init_job(const void *v) { return *(const char *)v ? check_name(v) : NULL; }

/* A content hash as sha256_hex writes it: what the stored bytes are checked against. */
static const char *check_sha256(const void *v)
{
    return sha256_hex_valid(v) ? NULL : "must be 64 lower-case hex digits (a SHA-256)";
}

static const char *check_nonempty(const void *v) { return *(const char *)v ? NULL : "must not be empty"; }

/* A prompt is text a tokenizer reads and a record carries as a JSON string (the JSON decoder
 * has refused what is not UTF-8 and NUL): no control characters other than tab and newline. */
static const char *check_eval_sample(const void *v)
{
    for (const unsigned char *p = v; *p; p++)
        if (*p < 0x20 && *p != '\t' && *p != '\n')
            return "must be text: control characters other than tab and newline are refused";
    return NULL;
}

/* simulate.platform / hostfile go onto smpirun's command line, which splits words on
 * white space: keep them to characters that need no quoting. */
static const char *check_sim_path(const void *v)
{
    for (const char *s = v; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                 c == '-' || c == '/' || c == '+';
        if (!ok) return "may contain only letters, digits, '.', '_', '-', '+' and '/'";
    }
    return NULL;
}

/* The field tables are laid out by hand, a few fields of a row per line. */
/* clang-format off */
static const field_t SCHEDULE_FIELDS[] = {
    {.path = "emulate.schedule[].step", .type = F_LONG,
     MEMBER(spec_slowdown_change_t, step, long), BETWEEN(0, MAX_STEPS), .required = 1,
     .doc = "Global step from which the change applies."},
    {.path = "emulate.schedule[].rank", .type = F_INT,
     MEMBER(spec_slowdown_change_t, rank, int), BETWEEN(0, SPEC_MAX_WORKERS - 1), .required = 1,
     .allowed_doc = ">= 0, < workers", .doc = "Worker rank whose speed changes."},
    {.path = "emulate.schedule[].slowdown", .type = F_DOUBLE,
     MEMBER(spec_slowdown_change_t, slowdown, double), BETWEEN(1, MAX_SLOWDOWN), .required = 1,
     .doc = "New slowdown factor of that rank (1 = full speed)."},
};

static int parse_shard_split(struct errbuf *e, const field_t *f, json_t *v, unsigned char *base, const char *where);
static json_t *shard_split_json(const field_t *f, const unsigned char *base, int *prec);
static json_t *real_json(double x, int *prec);
static int parse_freeze(struct errbuf *e, const field_t *f, json_t *v, unsigned char *base, const char *where);
static int parse_lora_targets(struct errbuf *e, const field_t *f, json_t *v, unsigned char *base, const char *where);
static json_t *lora_targets_json(const field_t *f, const unsigned char *base, int *prec);
static json_t *freeze_to_json(const field_t *f, const unsigned char *base, int *prec);

/* Table order is document order: spec_to_json and spec_print_fields follow it. */
static const field_t FIELDS[] = {
    {.path = "name", STR(name), .def_str = "job", .check = check_name, .resume_free = 1,
     .allowed_doc = "letters, digits, `.` `_` `-`; at most 63 bytes",
     .doc = "Job name; used in checkpoint file names and logs."},
    {.path = "model", STR(model), .catalog = CAT_MODEL, .required = 1, .or_object = 1,
     .doc = "Network to train: a model of the catalog (`GET /api/v1/models`, `pacer models`), or "
            "`{\"onnx\": PATH}`, an ONNX file, or `{\"onnx\": NAME}`, an uploaded model (`model.onnx`)."},
    {.path = "model.onnx", STR(model_onnx), .def_str = "", .check = check_onnx_path, .resume_free = 1,
     .default_doc = "none", .allowed_doc = "a path; at most 511 bytes",
     .doc = "The ONNX file to import and train (`\"model\": {\"onnx\": PATH}`): read by the worker and "
            "pacer-sim, named in the catalog by its base name (`cnn.onnx`); its initializers are the "
            "starting weights (docs/JOB_SPEC.md, ONNX models). Through the REST API: the name of an "
            "uploaded model (`PUT /api/v1/models/{name}`)."},
    {.path = "model.sha256", STR(model_sha256), .def_str = "", .check = check_sha256, .resume_free = 1,
     .default_doc = "none", .allowed_doc = "64 lower-case hex digits",
     .doc = "SHA-256 of an uploaded model's ONNX file (`\"model\": {\"onnx\": NAME, \"sha256\": HEX}`): "
            "filled in by the coordinator when a spec names an uploaded model; the worker reads the "
            "bytes by it (its `--models-dir`, else Redis) and checks them against it."},
    {.path = "model.gpt.layers", INT(gpt.layers), BETWEEN(0, 96), .def_num = 0, .default_doc = "none",
     .allowed_doc = "1 to 96 in a gpt object",
     .doc = "The built-in GPT (`\"model\": {\"gpt\": {...}}`, GPT-2's pre-norm blocks: docs/JOB_SPEC.md, "
            "\"Language models\"): its transformer blocks. Required in a gpt object."},
    {.path = "model.gpt.heads", INT(gpt.heads), BETWEEN(1, 128), .def_num = 4,
     .doc = "gpt: attention heads per block (embd a multiple of them, else refused at submission)."},
    {.path = "model.gpt.embd", INT(gpt.embd), BETWEEN(1, 16384), .def_num = 128,
     .doc = "gpt: the width of the residual stream (the MLP is 4x as wide)."},
    {.path = "model.gpt.block_size", INT(gpt.block_size), BETWEEN(0, 8192), .def_num = 0,
     .default_doc = "`dataset.block_size`, else 64",
     .doc = "gpt: positions per window (learned position embeddings of this many)."},
    {.path = "model.gpt.vocab_size", INT(gpt.vocab_size), BETWEEN(0, 1048576), .def_num = 0,
     .default_doc = "the data set's (256 for text)",
     .doc = "gpt: the vocabulary (the embedding's rows, the logits): at least 2, and at most the tokenizer's "
            "(bytes 256, a token set's `dataset.vocab_size`, a BPE's or chars' ids), else refused."},
    {.path = "model.gpt.dropout", DBL(gpt.dropout), IN_CO(0, 1), .def_num = 0,
     .doc = "gpt: dropout after the embeddings, on the attention weights and on each residual branch."},
    {.path = "model.gpt.bias", BOOL(gpt.bias), .def_num = 1,
     .doc = "gpt: biases in the linear layers (the layer norms keep theirs either way)."},
    {.path = "model.gpt.tie_embeddings", BOOL(gpt.tie_embeddings), .def_num = 1,
     .doc = "gpt: the head onto the vocabulary reads the token embedding (one tensor, both gradients summed)."},
    {.path = "dataset.name", STR(dataset.name), .catalog = CAT_DATASET, .def_str = "fashion-mnist",
     .doc = "Data set (`GET /api/v1/datasets`); its image shape must be the model's, its classes an imported "
            "model's outputs (a built-in model's last layer takes them). A user's "
            "(an image folder or .npz under a data root) is read from its path in its format."},
    {.path = "dataset.path", STR(dataset.path), .def_str = "", .resume_free = 1,
     .doc = "Directory of the data set files; empty = where the catalog finds them (\"Built-in data sets\"; the "
            "coordinator stores that directory here at submission)."},
    {.path = "dataset.train_subset", INT(dataset.train_subset), BETWEEN(0, MAX_COUNT), .def_num = 0,
     .doc = "Train on the first N training samples only; 0 = all."},
    {.path = "dataset.test_subset", INT(dataset.test_subset), BETWEEN(0, MAX_COUNT), .def_num = 0,
     .doc = "Evaluate on the first N test samples only; 0 = all."},
    {.path = "dataset.augment", BOOL(dataset.augment), .def_num = 0,
     .doc = "Augment training images: a random crop of the image padded by `crop_padding` pixels, "
            "and a horizontal flip (`hflip`), drawn from the seed."},
    {.path = "dataset.crop_padding", INT(dataset.crop_padding), BETWEEN(0, 256), .def_num = 4,
     .doc = "Augmentation: zero padding on each side before the random crop; 0 = no crop."},
    {.path = "dataset.hflip", BOOL(dataset.hflip), .def_num = 1,
     .doc = "Augmentation: mirror each image with probability 1/2 (turn off for digits and text)."},
    {.path = "dataset.format", STR(dataset.format), .choices = FORMATS, .def_str = "auto",
     .doc = "How the data set is read: idx (MNIST's files), cifar (CIFAR-10 binary batches), "
            "imagefolder (`path`/train/CLASS/FILE and `path`/test/CLASS/FILE, PNG or JPEG), "
            "npz (a NumPy .npz at `path` with x_train, y_train, x_test, y_test), "
            "text (`path`/train.txt and `path`/val.txt, a token per byte), tokens (`path`/train.bin and "
            "`path`/val.bin, or train_*.bin and val_*.bin, of uint16 ids: llm.c's shards or nanoGPT's arrays); "
            "auto = the format of `dataset.name`."},
    {.path = "dataset.resize", .type = F_DOUBLES, MEMBER(job_spec_t, dataset.resize, double *),
     COUNT(dataset.nresize), BETWEEN(1, MAX_SIDE), .def_num = 0, .default_doc = "`[]` (no resizing)",
     .allowed_doc = "`[]` or `[H, W]`, integers from 1 to 16384",
     .doc = "Resize every image to H x W, bilinearly (torchvision's convention without antialiasing: "
            "docs/JOB_SPEC.md); `[]` = every image must already have the model's size."},
    {.path = "dataset.mean", .type = F_DOUBLES, MEMBER(job_spec_t, dataset.mean, double *),
     COUNT(dataset.nmean), BETWEEN(0, 1), .def_num = 0, .default_doc = "`[]` (the data set's own)",
     .allowed_doc = "`[]`, one value (every channel) or one per channel, each between 0 and 1",
     .doc = "Per-channel mean on the [0, 1] scale: a pixel p becomes (p/255 - mean) / std. `[]` = the "
            "data set's own: a built-in's fixed figures, a user data set's computed once from its "
            "training split (the summary's `dataset.mean`)."},
    {.path = "dataset.std", .type = F_DOUBLES, MEMBER(job_spec_t, dataset.std, double *),
     COUNT(dataset.nstd), IN_OC(0, 10), .def_num = 1, .default_doc = "`[]` (the data set's own)",
     .allowed_doc = "`[]`, one value or one per channel, each in (0, 10]",
     .doc = "Per-channel standard deviation on the [0, 1] scale; see `mean`."},
    {.path = "dataset.layout", STR(dataset.layout), .choices = LAYOUTS, .def_str = "nhwc",
     .doc = "npz: the axes of a 4-D x array, (N, H, W, C) as Keras saves it or (N, C, H, W) as PyTorch "
            "holds it (3-D arrays are (N, H, W))."},
    {.path = "dataset.cache_dir", STR(dataset.cache_dir), .def_str = "", .resume_free = 1,
     .allowed_doc = "at most 511 bytes; not through the REST API",
     .doc = "imagefolder, npz, and text with a tokenizer other than bytes (its ids as llm.c shards): the "
            "directory of the decoded cache; \"\" = the worker's `--data-cache` "
            "(the coordinator passes STATE_DIR/data-cache), else $XDG_CACHE_HOME/pacer/data "
            "(~/.cache/pacer/data)."},
    {.path = "dataset.block_size", INT(dataset.block_size), BETWEEN(0, 8192), .def_num = 0,
     .default_doc = "the model's", .allowed_doc = "0 to 8192; text and tokens only",
     .doc = "text, tokens: tokens per window (a sample); each position's target is the next token. 0 = the "
            "model's positions (`model.gpt.block_size`, an imported model's input length)."},
    {.path = "dataset.vocab_size", INT(dataset.vocab_size), BETWEEN(0, 65536), .def_num = 0,
     .default_doc = "none", .allowed_doc = "tokens: 1 to 65536 (required); text: 0 or 256",
     .doc = "tokens: every id of every file must be below it (checked before training)."},
    {.path = "dataset.tokenizer", STR(dataset.tokenizer), .choices = TOKENIZERS, .def_str = "bytes", .or_object = 1,
     .allowed_doc = "bytes, chars, or a bpe object",
     .doc = "text: how text becomes tokens (common/tokenizer.h). bytes = each byte is a token (vocabulary 256); "
            "chars = each distinct UTF-8 character of train.txt and val.txt, in code point order (the text must be "
            "UTF-8); `{\"kind\": \"bpe\", \"vocab\": PATH, \"merges\": PATH}` or `{\"kind\": \"bpe\", \"file\": "
            "PATH}` = GPT-2's byte-level BPE. The model's vocabulary defaults to the tokenizer's; the tokenizer is "
            "saved beside the checkpoints (NAME.tokenizer)."},
    {.path = "dataset.tokenizer.kind", STR(dataset.tokenizer_kind), .choices = TOKENIZER_KINDS, .def_str = "",
     .default_doc = "none", .allowed_doc = "bpe (required in a tokenizer object)",
     .doc = "text: the object form's tokenizer, GPT-2's byte-level BPE."},
    {.path = "dataset.tokenizer.vocab", STR(dataset.tokenizer_vocab), .def_str = "", .check = check_nonempty,
     .default_doc = "none", .allowed_doc = "a path; at most 511 bytes",
     .doc = "bpe: GPT-2's vocab.json (token string -> id); with merges. Through the REST API: an absolute path "
            "under a data root, as dataset.path."},
    {.path = "dataset.tokenizer.merges", STR(dataset.tokenizer_merges), .def_str = "", .check = check_nonempty,
     .default_doc = "none", .allowed_doc = "a path; at most 511 bytes",
     .doc = "bpe: GPT-2's merges.txt (ranked merges); with vocab."},
    {.path = "dataset.tokenizer.file", STR(dataset.tokenizer_file), .def_str = "", .check = check_nonempty,
     .default_doc = "none", .allowed_doc = "a path; at most 511 bytes",
     .doc = "bpe: a Hugging Face tokenizer.json of the BPE kind, instead of vocab and merges."},
    {.path = "batch_size", INT(batch_size), BETWEEN(1, MAX_BATCH), .def_num = 64,
     .doc = "Mini-batch size per worker (the starting size when batches are re-planned)."},
    {.path = "epochs", INT(epochs), BETWEEN(1, MAX_EPOCHS), .def_num = 1,
     .doc = "Passes over the training set."},
    {.path = "workers", INT(workers), BETWEEN(1, SPEC_MAX_WORKERS), .def_num = 1,
     .doc = "Training processes; asynchronous algorithms add a parameter server."},
    {.path = "max_workers", INT(max_workers), BETWEEN(1, SPEC_MAX_WORKERS), .def_num = 0, .resume_free = 1,
     .default_doc = "`workers` (never grows)",
     .allowed_doc = "between `workers` and 256, at most the global batch (workers x batch_size); ssgd, hier-bsp, "
                    "hpsgd and local-sgd only",
     .doc = "Elastic growth: the coordinator may run the job on up to this many ranks when slots are idle "
            "(--policy hetero), as Horovod's --max-np; the ranks share the global batch of `workers x batch_size`."},
    {.path = "min_workers", INT(min_workers), BETWEEN(1, SPEC_MAX_WORKERS), .def_num = 1, .resume_free = 1,
     .allowed_doc = "between 1 and `workers`",
     .doc = "Elastic shrink: the fewest workers the coordinator may start the job on or shrink it to, as Horovod's "
            "--min-np; `workers` (with `max_workers` left out) makes it rigid, never resized by --policy hetero."},
    {.path = "device", STR(device), .choices = DEVICES, .def_str = "auto", .resume_free = 1,
     .doc = "Where to compute; auto = CUDA when built with it and a GPU is usable, else the CPU after saying why (log line and summary `device.reason`); cuda = a rank that cannot use its GPU fails with the reason."},
    {.path = "precision", STR(precision), .choices = PRECISIONS, .def_str = "fp32", .resume_free = 1,
     .allowed_doc = "fp32 or bf16; bf16 on CPU ranks (device cpu or auto)",
     .doc = "The matrix products' arithmetic. bf16 = mixed precision as PyTorch's autocast and Megatron: the "
            "operands of every matrix product (Linear, Gemm, MatMul, attention's two products, the tied head, "
            "convolutions) rounded to bfloat16, their sums in float32; weights, gradients, "
            "optimizer state, softmax, normalisation, the loss and every reduction float32. Runs on the CPU's "
            "AMX tiles or AVX512-BF16 where it has them, else a portable path (summary `kernels`; "
            "PACER_CPU_ISA caps the choice). A checkpoint resumes at either precision."},
    {.path = "seed", ULONG(seed), BETWEEN(0, (double)LLONG_MAX), .def_num = 42,
     .doc = "Seed of weight init, shuffling and augmentation; same seed, same run."},
    {.path = "threads", INT(threads), BETWEEN(1, 256), .def_num = 1, .resume_free = 1,
     .doc = "CPU threads per worker process: its convolutions, batch norms, ReLUs, residual adds and fully connected layers split over them (kernels/cpu/parallel.h)."},
    {.path = "sync_batchnorm", BOOL(sync_batchnorm), .def_num = 0,
     .allowed_doc = "`true` with ssgd (or sgd, one process); CPU ranks; not with algorithm.goodput",
     .doc = "Batch norms normalise by the statistics of the whole global batch, every rank's share of it, "
            "all-reduced in each step's forward and backward (PyTorch's nn.SyncBatchNorm), so that 2 ranks "
            "train as one process with their batches together; false = each rank normalises by its own "
            "share (DDP without SyncBatchNorm). The running statistics follow the whole batch's too. "
            "Evaluation is unchanged (running statistics)."},
    {.path = "target_accuracy", DBL(target_accuracy), BETWEEN(0, 1), .def_num = 0,
     .doc = "Stop at the first evaluation (an epoch end, or every eval_every_steps) whose test accuracy "
            "reaches it; the summary's time_to_target_s says when. 0 = off."},
    {.path = "eval_every_steps", LONG(eval_every_steps), BETWEEN(0, MAX_STEPS), .def_num = 0, .resume_free = 1,
     .doc = "Also evaluate on the test set every N steps (synchronous algorithms: global steps; the "
            "parameter-server family: updates), so time to accuracy is measured finer than an epoch; "
            "0 = at epoch ends only."},
    {.path = "eval_sample", STR(eval_sample), .def_str = "", .check = check_eval_sample, .resume_free = 1,
     .default_doc = "none", .allowed_doc = "1 to 255 bytes of text (no control characters but tab and newline); a language model (the built-in GPT or an imported one) on text or tokens only",
     .doc = "A prompt the model continues at each evaluation: rank 0 decodes eval_sample_tokens greedily from it "
            "with the weights just evaluated (as `pacer-generate --temperature 0` from that checkpoint) and the "
            "text goes with the evaluation's record (`eval_sample` in the metrics and the history's `accuracy` "
            "entries; the job page shows the newest). A token data set needs its tokenizer (`pacer tokenize`'s "
            "tokens.tokenizer) to encode it."},
    {.path = "eval_sample_tokens", INT(eval_sample_tokens), BETWEEN(1, SPEC_EVAL_SAMPLE_TOKENS_MAX), .def_num = 32,
     .resume_free = 1, .doc = "eval_sample: the tokens generated at each evaluation."},
    {.path = "log_every", INT(log_every), BETWEEN(0, MAX_COUNT), .def_num = 100, .resume_free = 1,
     .doc = "Print a progress line every N steps; 0 = none."},
    {.path = "on_collapse", STR(on_collapse), .choices = ON_COLLAPSE, .def_str = "continue", .resume_free = 1,
     .doc = "What a collapse of training (the loss at the level of a uniform guess, or grown to twice its best, "
            "or test accuracy at chance: \"Collapse\" below) does: continue = report it and go on; fail = stop, "
            "the job FAILED with the reason; restart = the coordinator restarts the job from the last checkpoint "
            "written before the collapse began, with the learning rate halved."},
    {.path = "priority", STR(priority), .choices = PRIORITIES, .def_str = "normal", .resume_free = 1,
     .doc = "The job's place in the queue under the coordinator's `--policy fair`: high before normal before "
            "low; within one, the owner with the least recent usage per weight first, then arrival order "
            "(docs/ARCHITECTURE.md, \"Scheduling policies\"; `--policy fifo` keeps arrival order only); the "
            "queued job's `queue.reason` says `a higher priority` while it waits behind one."},

    {.path = "optimizer.kind", STR(optimizer.kind), .choices = OPTIMIZERS, .def_str = "sgd",
     .doc = "sgd = PyTorch's SGD (momentum, nesterov, weight decay added to the gradient); adamw = "
            "torch.optim.AdamW (betas, eps; weight decay decoupled: w -= lr * weight_decay * w), its step "
            "count and two moments in every checkpoint (at the parameter server in its family). adamw is "
            "refused with ddc-asgd."},
    {.path = "optimizer.lr", DBL(optimizer.lr), IN_OC(0, MAX_LR), .def_num = 0.01,
     .doc = "Learning rate (peak rate when a schedule is set)."},
    {.path = "optimizer.momentum", DBL(optimizer.momentum), IN_CO(0, 1), .def_num = 0.9,
     .doc = "sgd: momentum; 0 = plain SGD (adamw ignores it and nesterov)."},
    {.path = "optimizer.nesterov", BOOL(optimizer.nesterov), .def_num = 0,
     .doc = "Nesterov momentum."},
    {.path = "optimizer.weight_decay", DBL(optimizer.weight_decay), BETWEEN(0, 1), .def_num = 0,
     .doc = "sgd: L2 penalty added to the gradient; adamw: decoupled decay, w -= lr * weight_decay * w "
            "(optimizer.no_decay says which tensors are exempt)."},
    {.path = "optimizer.clip_norm", DBL(optimizer.clip_norm), BETWEEN(0, 1e6), .def_num = 0,
     .doc = "Clip the gradient to this global L2 norm; 0 = no clipping."},
    {.path = "optimizer.betas", .type = F_DOUBLES, MEMBER(job_spec_t, optimizer.betas, double *),
     COUNT(optimizer.nbetas), IN_CO(0, 1), .def_num = 0, .default_doc = "`[0.9, 0.999]`",
     .allowed_doc = "`[]` or `[b1, b2]`, each in [0, 1)",
     .doc = "adamw: decay rates of the first and second moments; `[]` = the default."},
    {.path = "optimizer.eps", DBL(optimizer.eps), IN_OC(0, 1), .def_num = 1e-8,
     .doc = "adamw: added to the square root of the second moment."},
    {.path = "optimizer.no_decay", STR(optimizer.no_decay), .choices = NO_DECAY, .def_str = "default",
     .doc = "Which tensors get no weight decay: auto = every bias and normalisation parameter (the model's "
            "1-D parameters: batch-norm gamma and beta, convolution and linear biases; timm's and "
            "torchvision's recipes), none = none (torch's plain optimizers); default = auto with adamw, none "
            "with sgd."},
    {.path = "optimizer.async_momentum", STR(optimizer.async_momentum), .choices = ASYNC_MOMENTA,
     .def_str = "compensated",
     .doc = "Asynchronous algorithms: explicit = the parameter server applies optimizer.momentum as given; "
            "compensated = it applies less, so that with the momentum the measured staleness adds the total "
            "stays at optimizer.momentum (\"Asynchronous momentum\" below). Synchronous algorithms have no "
            "staleness: both mean the same there."},
    {.path = "optimizer.lr_schedule.kind", STR(optimizer.lr_schedule.kind),
     .choices = SCHEDULES, .def_str = "constant",
     .doc = "Learning-rate schedule after the warm-up."},
    {.path = "optimizer.lr_schedule.warmup_epochs", DBL(optimizer.lr_schedule.warmup_epochs),
     BETWEEN(0, MAX_EPOCHS), .def_num = 0,
     .doc = "Linear warm-up from 0 to lr over this many epochs."},
    {.path = "optimizer.lr_schedule.step_epochs", DBL(optimizer.lr_schedule.step_epochs),
     IN_OC(0, MAX_EPOCHS), .def_num = 1,
     .doc = "step: multiply the rate by gamma every this many epochs."},
    {.path = "optimizer.lr_schedule.gamma", DBL(optimizer.lr_schedule.gamma), IN_OC(0, 1),
     .def_num = 0.1, .doc = "step: decay factor."},
    {.path = "optimizer.lr_schedule.min_lr", DBL(optimizer.lr_schedule.min_lr),
     BETWEEN(0, MAX_LR), .def_num = 0, .allowed_doc = "between 0 and optimizer.lr",
     .doc = "cosine: the rate at the end of training."},

    {.path = "loss.label_smoothing", DBL(loss.label_smoothing), IN_CO(0, 1), .def_num = 0,
     .doc = "Cross-entropy label smoothing (torch.nn.CrossEntropyLoss's): loss = (1 - x) * nll + x * the "
            "mean over classes of -log p; the evaluation loss too."},

    {.path = "algorithm.name", STR(algorithm.name), .choices = ALGORITHMS, .def_str = "sgd",
     .doc = "Training algorithm; sgd is single-process (workers must be 1)."},
    {.path = "algorithm.dynamic_batch", BOOL(algorithm.dynamic_batch), .def_num = 0,
     .param = 1, .allowed_doc = "forced true by dbs-sgd",
     .doc = "Re-plan per-worker batch sizes from measured speeds."},
    {.path = "algorithm.replan_steps", INT(algorithm.replan_steps), BETWEEN(1, MAX_COUNT), .def_num = 20,
     .param = 1, .doc = "Dynamic batching: re-plan every this many steps."},
    {.path = "algorithm.min_batch", INT(algorithm.min_batch), BETWEEN(0, MAX_BATCH),
     .def_num = 0, .param = 1, .doc = "Dynamic batching: smallest batch; 0 = derived."},
    {.path = "algorithm.max_batch", INT(algorithm.max_batch), BETWEEN(0, MAX_BATCH),
     .def_num = 0, .param = 1, .allowed_doc = "between 0 and 65536, >= min_batch",
     .doc = "Dynamic batching: largest batch; 0 = derived."},
    {.path = "algorithm.goodput", BOOL(algorithm.goodput), .def_num = 0, .param = 1,
     .allowed_doc = "ssgd, workers >= 2; not with dynamic_batch",
     .doc = "Goodput planner (common/goodput.h): re-plan the global batch in [workers x batch_size, "
            "max_global_batch], its split over the nodes and which nodes take part from measured node "
            "speeds and the gradient noise scale; the learning rate is scaled by AdaScale's gain and "
            "epochs count progress at the spec's batch."},
    {.path = "algorithm.goodput_model", STR(algorithm.goodput_model), .choices = GOODPUT_MODELS,
     .def_str = "nodes", .param = 1,
     .doc = "Goodput: nodes = a speed model per node (uneven split, slow nodes may be left out); "
            "equal = AdaptDL's model (every node takes part, even split), for comparison."},
    {.path = "algorithm.max_global_batch", INT(algorithm.max_global_batch), BETWEEN(0, MAX_GLOBAL_BATCH),
     .def_num = 0, .param = 1, .allowed_doc = "0, or between workers x batch_size and 16777216",
     .default_doc = "0 (8 x workers x batch_size)",
     .doc = "Goodput: the largest global batch the planner may choose (the training set's size caps it too)."},
    {.path = "algorithm.k_steps", INT(algorithm.k_steps), BETWEEN(1, MAX_COUNT), .def_num = 8, .param = 1,
     .doc = "hier-bsp: steps between global averages."},
    {.path = "algorithm.group_size", INT(algorithm.group_size),
     BETWEEN(0, SPEC_MAX_WORKERS), .def_num = 0, .param = 1,
     .allowed_doc = "between 0 and workers (hier-bsp)",
     .doc = "hier-bsp: ranks per group; 0 = the ranks of one host."},
    {.path = "algorithm.local_steps", INT(algorithm.local_steps), BETWEEN(1, MAX_COUNT), .def_num = 8,
     .param = 1, .doc = "local-sgd: local steps H between averages."},
    {.path = "algorithm.n", INT(algorithm.n), BETWEEN(1, SPEC_MAX_WORKERS), .def_num = 1, .param = 1,
     .allowed_doc = "between 1 and workers (nsoftsync)",
     .doc = "nsoftsync: the server updates after every workers/n gradients."},
    {.path = "algorithm.dc_variant", STR(algorithm.dc_variant), .choices = DC_VARIANTS,
     .def_str = "a", .param = 1,
     .doc = "dc-asgd: c = constant lambda, a = adaptive (mean-square scaled)."},
    {.path = "algorithm.lambda0", DBL(algorithm.lambda0), BETWEEN(0, MAX_COEF), .def_num = NAN, .param = 1,
     .default_doc = "0.04 (dc-asgd c), 2 (dc-asgd a), 1 (ddc-asgd), else 0",
     .doc = "dc-asgd / ddc-asgd: delay-compensation strength."},
    {.path = "algorithm.dc_m", DBL(algorithm.dc_m), IN_CO(0, 1), .def_num = 0.95, .param = 1,
     .doc = "dc-asgd a: decay of the gradient mean square."},
    {.path = "algorithm.kappa", DBL(algorithm.kappa), BETWEEN(0, MAX_COEF), .def_num = 1, .param = 1,
     .doc = "ddc-asgd: kappa."},
    {.path = "algorithm.gamma", DBL(algorithm.gamma), BETWEEN(0, 1), .def_num = 0.9,
     .param = 1, .doc = "ddc-asgd: gamma."},
    {.path = "algorithm.eps", DBL(algorithm.eps), IN_OC(0, 1), .def_num = 1e-7, .param = 1,
     .doc = "dc-asgd / ddc-asgd: epsilon of the adaptive scaling."},
    {.path = "algorithm.tau_max", INT(algorithm.tau_max), BETWEEN(0, MAX_COUNT), .def_num = 0, .param = 1,
     .doc = "Asynchronous: drop gradients staler than this many updates; 0 = keep all."},
    {.path = "algorithm.compression.kind", STR(algorithm.compression.kind), .choices = COMPRESSIONS,
     .def_str = "none",
     .allowed_doc = "`none`, `bf16`, `powersgd`; other than none: ssgd, local-sgd, hier-bsp, hpsgd, and bf16 the "
                    "parameter-server family; not with goodput",
     .doc = "Gradient compression of ssgd's all-reduce, local-sgd's and hier-bsp's model averages and hpsgd's "
            "rounds (\"Gradient compression\" below): none; bf16 = the "
            "gradient sent in bfloat16, summed in fp32; powersgd = each large weight gradient sent as rank-r "
            "factors (Vogels et al. 2019) with error feedback, small tensors uncompressed."},
    {.path = "algorithm.compression.rank", INT(algorithm.compression.rank), BETWEEN(1, MAX_COMPRESS_RANK),
     .def_num = 2, .doc = "powersgd: the rank r of each layer's factors P (out x r) and Q (in x r)."},
    {.path = "algorithm.compression.warmup_steps", INT(algorithm.compression.warmup_steps), BETWEEN(0, MAX_COUNT),
     .def_num = 0, .doc = "powersgd: this many steps of plain (uncompressed) all-reduce first (not with hpsgd)."},
    {.path = "algorithm.compression.min_gain", DBL(algorithm.compression.min_gain), BETWEEN(0, 1), .def_num = 0,
     .doc = "powersgd: 0 compresses after the warm-up, come what may; above 0 the last probe_steps plain steps "
            "and the first probe_steps compressed ones are timed, and compression stays on only if it "
            "shortens a step by at least this fraction (0.15: PowerSGD rank 2 needs about 10% more steps), "
            "else the job goes on uncompressed (\"Compress only where it pays\" below)."},
    {.path = "algorithm.compression.probe_steps", INT(algorithm.compression.probe_steps), BETWEEN(1, 10000),
     .def_num = 20, .doc = "powersgd with min_gain: the steps timed on each side (at most warmup_steps)."},
    {.path = "algorithm.shard.stage", INT(algorithm.shard.stage), BETWEEN(0, 2), .def_num = 0, .resume_free = 1,
     .allowed_doc = "0, 1, 2; above 0 ssgd only",
     .doc = "ZeRO sharding of ssgd (\"Sharded optimizer state\" below): 0 = off; 1 = each rank keeps the "
            "optimizer state (momentum, AdamW's moments) of its range of the parameters only, gradients "
            "reduce-scattered and the updated parameters all-gathered; 2 = also the gradient outside the "
            "range is not kept after its reduction."},
    {.path = "algorithm.shard.split", STR(algorithm.shard.split), .choices = SHARD_SPLITS, .def_str = "even",
     .resume_free = 1, .parse = parse_shard_split, .to_json = shard_split_json, .type_doc = "enum or array of numbers",
     .allowed_doc = "`even`, `memory`, or one weight > 0 per worker",
     .doc = "How the parameters are split over the ranks: even; memory = by the memory each rank's host has "
            "available (MemAvailable shared by its ranks on that host); `[w0, w1, ...]` = by these weights."},

    {.path = "checkpoint.every_steps", LONG(checkpoint.every_steps), BETWEEN(0, MAX_STEPS), .def_num = 0,
     .resume_free = 1,
     .doc = "Write a checkpoint every N steps; 0 = no periodic checkpoints."},
    {.path = "checkpoint.dir", STR(checkpoint.dir), .def_str = "checkpoints", .resume_free = 1,
     .check = check_nonempty,
     .allowed_doc = "non-empty, at most 511 bytes", .doc = "Directory of the checkpoint files."},
    {.path = "checkpoint.keep_last", INT(checkpoint.keep_last), BETWEEN(1, CKPTDIR_KEEP_LAST_MAX), .def_num = 1, .resume_free = 1,
     .doc = "Checkpoints kept, the newest first (the latest is NAME.ckpt; each is also linked as "
            "NAME.step{S}-epoch{E}[-acc{A}].ckpt); older ones are removed."},
    {.path = "checkpoint.keep_best", BOOL(checkpoint.keep_best), .def_num = 0, .resume_free = 1,
     .doc = "Also keep the checkpoint with the best test accuracy; with checkpoints on (every_steps > 0) "
            "one is then also written at every epoch end, after its evaluation."},

    {.path = "init.checkpoint", STR(init.checkpoint), .def_str = "", .check = check_init_path, .resume_free = 1,
     .default_doc = "none", .allowed_doc = "a path; at most 511 bytes",
     .doc = "Start from the weights of this pacer checkpoint of the same model (not its optimizer state, "
            "step or data position: a fresh run from those weights; a resumed run ignores init). At most "
            "one of init.checkpoint, init.safetensors, init.job. Through the REST API the path lies under a "
            "data root."},
    {.path = "init.safetensors", STR(init.safetensors), .def_str = "", .check = check_init_path,
     .resume_free = 1, .default_doc = "none", .allowed_doc = "a path; at most 511 bytes",
     .doc = "Start from the F32, BF16 or F16 tensors of this safetensors file, matched to the model's tensors "
            "by name (the built-in GPT's nanoGPT names or Hugging Face GPT-2's, an imported model's initializer "
            "names) and shape (`--export-safetensors` writes such a file). Through the REST API the path lies "
            "under a data root."},
    {.path = "init.job", STR(init.job), .def_str = "", .check = check_init_job, .resume_free = 1,
     .default_doc = "none", .allowed_doc = "a job id the user may read",
     .doc = "Start from another job's latest weights (its model.safetensors): the coordinator resolves it "
            "at submission; pacer-worker on its own refuses it."},
    {.path = "init.strict", BOOL(init.strict), .def_num = 1, .resume_free = 1,
     .doc = "true: every tensor of the model and of the source matched by name and shape, any other "
            "refused by name; false: the matching ones loaded, the rest reported (summary `init`: "
            "loaded, missing, unexpected, mismatched)."},

    {.path = "freeze", STR(freeze), .def_str = "", .parse = parse_freeze, .to_json = freeze_to_json,
     .type_doc = "array of strings", .default_doc = "`[]`", .allowed_doc = "up to 64 globs of 1 to 127 bytes",
     .doc = "Globs (fnmatch) over parameter names (the built-in GPT's nanoGPT names, an imported model's "
            "initializer names): the tensors they match take no weight update: no gradient computed, no "
            "optimizer update, no all-reduce traffic (\"Frozen tensors\" below). Each glob must match a "
            "tensor: checked at submission for a built-in model and an uploaded one whose names were "
            "recorded (400 naming the glob), else at the worker's start (\"Which names are checked when\" "
            "below). The summary has trainable_parameters and frozen_parameters."},

    {.path = "lora.rank", INT(lora.rank), BETWEEN(1, SPEC_LORA_MAX_RANK), .def_num = 8,
     .doc = "LoRA: the adapters' rank r (A is r x IN, B OUT x r). Only with lora.targets."},
    {.path = "lora.alpha", DBL(lora.alpha), IN_OC(0, MAX_LORA_ALPHA), .def_num = 8,
     .doc = "LoRA: the adapters' output is scaled by alpha / rank (PEFT's lora_alpha)."},
    {.path = "lora.dropout", DBL(lora.dropout), IN_CO(0, 1), .def_num = 0,
     .doc = "LoRA: dropout of each adapter's input, in training only (PEFT's lora_dropout)."},
    {.path = "lora.targets", STR(lora.targets), .def_str = "", .parse = parse_lora_targets, .to_json = lora_targets_json,
     .type_doc = "array of strings", .default_doc = "`[]` (no adapters)",
     .allowed_doc = "1 to 64 globs of 1 to 127 bytes",
     .doc = "LoRA (Hu et al., 2021): globs (fnmatch) over the weights of matrix products (the built-in GPT's "
            "nanoGPT names such as transformer.h.0.attn.c_attn.weight, an imported model's initializer names "
            "of Gemm and MatMul weights); each must match one: checked at submission for a built-in model and "
            "an uploaded one whose names were recorded (400 naming the glob), else at the worker's start "
            "(\"Which names are checked when\" below). Each matched product y = x W' gets an adapter, "
            "y + (alpha / rank) B A dropout(x), A Kaiming-uniform from the seed as PEFT's, B zero; every other "
            "parameter is frozen (only the adapters are trained, all-reduced and counted in "
            "trainable_parameters). A product whose weight another layer reads too (a tied head) takes none."},
    {.path = "lora.export", STR(lora.export_), .choices = LORA_EXPORTS, .def_str = "merged", .resume_free = 1,
     .doc = "LoRA: what the exports give (ONNX, safetensors, the job's model.safetensors) and generation "
            "reads: merged = the weights W + (alpha / rank) B A under the model's names; separate = in "
            "safetensors the base weights W under their names and the adapters under PEFT's "
            "(base_model.model.<module>.lora_A.weight, .lora_B.weight); ONNX and generation are always merged."},

    {.path = "emulate.slowdown", .type = F_DOUBLES,
     MEMBER(job_spec_t, emulate.slowdown, double *), COUNT(emulate.nslowdown),
     BETWEEN(1, MAX_SLOWDOWN), .def_num = 1, .default_doc = "`[]` (all 1)",
     .allowed_doc = "each between 1 and 1000; `[]` or one entry per worker",
     .doc = "Per-rank slowdown factor (rank r computes slowdown[r] times slower, sleeping through the extra "
            "time); [] = none. With any slowdown or schedule set, every rank waits for messages politely "
            "(polls, then naps ~0.1 ms) instead of spinning, as on an oversubscribed host: its peers' waits for a "
            "sleeping rank leave the cores to other work."},
    {.path = "emulate.schedule", .type = F_OBJECTS,
     MEMBER(job_spec_t, emulate.schedule, spec_slowdown_change_t *),
     COUNT(emulate.nschedule), .sub = SCHEDULE_FIELDS, .nsub = ARRAY_LEN(SCHEDULE_FIELDS),
     .elem_size = sizeof(spec_slowdown_change_t), .default_doc = "`[]`",
     .allowed_doc = "at most 64 entries, steps in non-decreasing order",
     .doc = "Slowdown changes during the run (objects with step, rank, slowdown)."},

    /* The simulated cluster (build/pacer-sim); a real run ignores these rows. */
    {.path = "simulate.enabled", BOOL(simulate.enabled), .def_num = 0,
     .doc = "Simulation: the coordinator runs this job on the simulated cluster below (pacer-sim) "
            "instead of for real; pacer-sim itself simulates any spec."},
    {.path = "simulate.platform", STR(simulate.platform), .def_str = "", .check = check_sim_path,
     .allowed_doc = "a path: letters, digits, `.` `_` `-` `+` `/`",
     .doc = "Simulation: SimGrid platform file; \"\" = generate one from the fields below."},
    {.path = "simulate.hostfile", STR(simulate.hostfile), .def_str = "", .check = check_sim_path,
     .allowed_doc = "a path, only with `simulate.platform`",
     .doc = "Simulation: the worker hosts of that platform, one per line; \"\" = its `<host>` elements."},
    {.path = "simulate.slowdown", .type = F_DOUBLES,
     MEMBER(job_spec_t, simulate.slowdown, double *), COUNT(simulate.nslowdown), BETWEEN(1, 1000),
     .def_num = 1, .default_doc = "`[]` (all 1)",
     .allowed_doc = "each between 1 and 1000; `[]` or one entry per worker",
     .doc = "Simulation: worker i's host computes slowdown[i] times slower than `gflops`."},
    {.path = "simulate.gflops", DBL(simulate.gflops), IN_OC(0, 1e6), .def_num = 10,
     .doc = "Simulation: speed of a slowdown-1 host (Gflop/s); also what this machine's CPU counts as."},
    {.path = "simulate.bf16_gflops", DBL(simulate.bf16_gflops), BETWEEN(0, 1e6), .def_num = 0,
     .allowed_doc = "between 0 and 1000000; above 0 only with `precision` bf16",
     .doc = "Simulation: speed of a slowdown-1 host at `precision` bf16 (Gflop/s), its matrix products on the "
            "CPU's bf16 units (AMX, AVX512-BF16); 0 = `gflops` (a CPU without them runs the portable path, "
            "float32 FMAs). Also what this machine's CPU counts as at bf16."},
    {.path = "simulate.bandwidth_gbps", DBL(simulate.bandwidth_gbps), IN_OC(0, 1e5),
     .def_num = 10, .doc = "Simulation: each node's link to the switch, Gbit/s."},
    {.path = "simulate.latency_us", DBL(simulate.latency_us), BETWEEN(0, 1e6), .def_num = 5,
     .doc = "Simulation: one-way latency between two nodes, microseconds."},
    {.path = "simulate.gpus_per_node", INT(simulate.gpus_per_node), BETWEEN(1, SPEC_MAX_WORKERS),
     .def_num = 1, .allowed_doc = "between 1 and 256; workers of one node share its slowdown",
     .doc = "Simulation: workers per node; they talk over the intra-node link."},
    {.path = "simulate.intra_bandwidth_gbps", DBL(simulate.intra_bandwidth_gbps), IN_OC(0, 1e5),
     .def_num = 200, .doc = "Simulation: bandwidth between workers of one node, Gbit/s."},
    {.path = "simulate.intra_latency_us", DBL(simulate.intra_latency_us), BETWEEN(0, 1e6),
     .def_num = 1, .doc = "Simulation: latency between workers of one node, microseconds."},
    {.path = "simulate.deterministic", BOOL(simulate.deterministic), .def_num = 0,
     .doc = "Simulation: charge compute by a cost model (FLOPs per sample) instead of timing it; "
            "same spec, same summary."},
    {.path = "simulate.skip_compute", BOOL(simulate.skip_compute), .def_num = 0,
     .allowed_doc = "only with `simulate.deterministic`",
     .doc = "Simulation: charge the cost model's time without running forward and backward passes "
            "(gradients are zero, nothing is learned, accuracy is not measured): time-per-epoch what-ifs."},
    {.path = "simulate.jitter", DBL(simulate.jitter), BETWEEN(0, 0.5), .def_num = 0,
     .allowed_doc = "between 0 and 0.5, only with `simulate.deterministic`",
     .doc = "Simulation: each training step's charged compute is scaled by a factor uniform in "
            "[1 - jitter, 1 + jitter], drawn from the seed, the rank and the step (still reproducible). "
            "Real steps vary; without it equal hosts stay in exact lockstep."},
};
/* clang-format on */

_Static_assert(SPEC_NAME_MAX == CATALOG_NAME_MAX, "a spec's model and data set names are catalog names");

/* Walks keep a "seen" flag per row of the table being walked. */
#define MAX_ROWS 128
_Static_assert(ARRAY_LEN(FIELDS) <= MAX_ROWS, "raise MAX_ROWS");
_Static_assert(ARRAY_LEN(SCHEDULE_FIELDS) <= MAX_ROWS, "raise MAX_ROWS");

/* ---- small helpers ------------------------------------------------------------------ */


static int in_catalog(int which, const char *name)
{
    catalog_model_t m;
    catalog_dataset_t d;
    if (which == CAT_MODEL) return catalog_model_get(name, &m) == 0;
    return catalog_dataset_get(name, &d) == 0;
}

static void catalog_names(int which, char *buf, size_t n, const char *quote, int builtin_only)
{
    if (which == CAT_MODEL) catalog_model_names(buf, n, quote, builtin_only);
    else catalog_dataset_names(buf, n, quote, builtin_only);
}

static void join_list(char *buf, size_t n, const char *const *list, const char *quote)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const char *const *p = list; *p && used < n; p++) {
        int w = snprintf(buf + used, n - used, "%s%s%s%s", p == list ? "" : ", ", quote, *p, quote);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* "between 1 and 65536", "in [0, 1)", "> 0", ">= 1"; "" without bounds. */
static void range_text(const field_t *f, char *buf, size_t n)
{
    char lo[32], hi[32];
    spec_fmt_num(lo, f->min);
    spec_fmt_num(hi, f->max);
    unsigned r = f->range;
    if ((r & R_MIN) && (r & R_MAX)) {
        if (r & (R_MIN_EXCL | R_MAX_EXCL))
            snprintf(buf, n, "in %c%s, %s%c", (r & R_MIN_EXCL) ? '(' : '[', lo, hi, (r & R_MAX_EXCL) ? ')' : ']');
        else snprintf(buf, n, "between %s and %s", lo, hi);
    } else if (r & R_MIN) {
        snprintf(buf, n, "%s %s", (r & R_MIN_EXCL) ? ">" : ">=", lo);
    } else if (r & R_MAX) {
        snprintf(buf, n, "%s %s", (r & R_MAX_EXCL) ? "<" : "<=", hi);
    } else {
        buf[0] = '\0';
    }
}

static int in_range(const field_t *f, double x)
{
    unsigned r = f->range;
    if (r & R_MIN) {
        if ((r & R_MIN_EXCL) ? !(x > f->min) : !(x >= f->min)) return 0;
    }
    if (r & R_MAX) {
        if ((r & R_MAX_EXCL) ? !(x < f->max) : !(x <= f->max)) return 0;
    }
    return 1;
}

static int check_range(errbuf_t *e, const field_t *f, double x, const char *where)
{
    if (in_range(f, x)) return 0;
    char txt[96];
    range_text(f, txt, sizeof txt);
    return spec_fail(e, "%s: must be %s", where, txt);
}

/* The part of path after "prefix.", or NULL when path is not under prefix. */
static const char *under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    if (n == 0) return path;
    if (strncmp(path, prefix, n) != 0 || path[n] != '.') return NULL;
    return path + n + 1;
}

/* The last component of a path: the key inside its object. */
static const char *leaf_key(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

/* Paths in messages are truncated if absurdly long (a 300-byte unknown key), never
 * overflowed; going through vsnprintf says so to the compiler's truncation warnings. */
__attribute__((format(printf, 3, 4))) static void pathf(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

static void join_path(char *buf, size_t n, const char *a, const char *b)
{
    pathf(buf, n, "%s%s%s", a, *a ? "." : "", b);
}

/* ---- defaults ----------------------------------------------------------------------- */

static void fill_defaults(const field_t *rows, size_t nrows, unsigned char *base)
{
    for (size_t i = 0; i < nrows; i++) {
        const field_t *f = &rows[i];
        void *p = base + f->offset;
        switch (f->type) {
        case F_STR:
            memset(p, 0, f->size);
            if (f->def_str) memcpy(p, f->def_str, strlen(f->def_str));
            break;
        case F_INT:
        case F_BOOL: *(int *)p = (int)f->def_num; break;
        case F_LONG: *(long *)p = (long)f->def_num; break;
        case F_ULONG: *(unsigned long *)p = (unsigned long)f->def_num; break;
        case F_DOUBLE: *(double *)p = f->def_num; break;
        case F_DOUBLES:
            for (size_t k = 0; k < f->size / sizeof(double); k++) ((double *)p)[k] = f->def_num;
            *(int *)(base + f->count_offset) = 0;
            break;
        case F_OBJECTS:
            memset(p, 0, f->size);
            *(int *)(base + f->count_offset) = 0;
            break;
        }
    }
}

/* Defaults that depend on other fields, resolved once the document is read: lambda0 is
 * NAN ("not given") until then, because its default differs per algorithm. */
static void resolve(job_spec_t *s)
{
    if (isnan(s->algorithm.lambda0)) {
        if (strcmp(s->algorithm.name, "dc-asgd") == 0)
            s->algorithm.lambda0 = strcmp(s->algorithm.dc_variant, "c") == 0 ? 0.04 : 2.0;
        else if (strcmp(s->algorithm.name, "ddc-asgd") == 0) s->algorithm.lambda0 = 1.0;
        else s->algorithm.lambda0 = 0.0;
    }
    /* DBS-SGD is dynamic batching by definition. */
    if (strcmp(s->algorithm.name, "dbs-sgd") == 0) s->algorithm.dynamic_batch = 1;
    /* Not given: the job never grows past its ask. */
    if (s->max_workers == 0) s->max_workers = s->workers;
}

void spec_defaults(job_spec_t *s)
{
    /* Zeroed first so padding and unused buffer bytes are deterministic: two specs with
     * equal fields then compare equal with memcmp. */
    memset(s, 0, sizeof *s);
    fill_defaults(FIELDS, ARRAY_LEN(FIELDS), (unsigned char *)s);
    resolve(s);
}

/* ---- parsing ------------------------------------------------------------------------ */

/* "model": {"gpt": "gpt2"}: GPT-2 124M's shape (12 blocks of 12 heads, width 768, block
 * 1024, GPT-2's vocabulary of 50257, biases, the head tied), the fields' other values the
 * defaults. */
static int gpt_preset(errbuf_t *e, const char *name, job_spec_t *s, const char *where)
{
    if (strcmp(name, "gpt2") != 0)
        return spec_fail(e, "%s: must be an object of the GPT's fields, or \"gpt2\" (GPT-2 124M's shape)", where);
    s->gpt.layers = 12;
    s->gpt.heads = 12;
    s->gpt.embd = 768;
    s->gpt.block_size = 1024;
    s->gpt.vocab_size = 50257;
    return 0;
}

static int walk_object(errbuf_t *e, json_t *obj, const field_t *rows, size_t nrows, const char *prefix,
                       const char *shown, int params_only, unsigned char *base, unsigned char *seen);

static int parse_objects(errbuf_t *e, const field_t *f, json_t *v, unsigned char *base, const char *where)
{
    if (!json_is_array(v)) return spec_fail(e, "%s: must be an array", where);
    size_t n = json_array_size(v), cap = f->size / f->elem_size;
    if (n > cap) return spec_fail(e, "%s: at most %zu entries, has %zu", where, cap, n);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s[]", f->path);
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        char at[256];
        pathf(at, sizeof at, "%s[%zu]", where, i);
        if (!json_is_object(item)) return spec_fail(e, "%s: must be an object", at);
        unsigned char *elem = base + f->offset + i * f->elem_size;
        unsigned char seen[MAX_ROWS] = {0};
        memset(elem, 0, f->elem_size);
        fill_defaults(f->sub, f->nsub, elem);
        if (walk_object(e, item, f->sub, f->nsub, prefix, at, 0, elem, seen) < 0) return -1;
        for (size_t k = 0; k < f->nsub; k++)
            if (f->sub[k].required && !seen[k]) return spec_fail(e, "%s.%s: required", at, leaf_key(f->sub[k].path));
    }
    *(int *)(base + f->count_offset) = (int)n;
    return 0;
}

static int parse_value(errbuf_t *e, const field_t *f, json_t *v, unsigned char *base, const char *where)
{
    if (f->parse) return f->parse(e, f, v, base, where);
    void *p = base + f->offset;
    switch (f->type) {
    case F_STR: {
        if (!json_is_string(v)) return spec_fail(e, "%s: must be a string", where);
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (f->choices && !spec_in_list(s, f->choices)) {
            char list[256], hint[SUGGEST_NAME_MAX + 32];
            suggest_t sg;
            suggest_init(&sg, s, n);
            for (const char *const *c = f->choices; *c; c++) suggest_offer(&sg, *c, strlen(*c));
            join_list(list, sizeof list, f->choices, "");
            suggest_hint(&sg, NULL, hint, sizeof hint);
            return spec_fail(e, "%s: must be one of %s%s", where, list, hint);
        }
        /* dataset.name is checked by resolve_dataset, once dataset.format and
         * dataset.path are known too (a user's set read from its path needs no entry) */
        if (f->catalog == CAT_MODEL && !in_catalog(f->catalog, s)) {
            char list[512];
            catalog_names(f->catalog, list, sizeof list, "", 0);
            return spec_fail(e, "%s: must be one of %s", where, list);
        }
        if (n >= f->size) return spec_fail(e, "%s: too long (%zu bytes, at most %zu)", where, n, f->size - 1);
        const char *why = f->check ? f->check(s) : NULL;
        if (why) return spec_fail(e, "%s: %s", where, why);
        memset(p, 0, f->size);
        memcpy(p, s, n);
        return 0;
    }
    case F_INT:
    case F_LONG:
    case F_ULONG: {
        if (!json_is_integer(v)) return spec_fail(e, "%s: must be an integer", where);
        json_int_t x = json_integer_value(v);
        if (check_range(e, f, (double)x, where) < 0) return -1;
        /* The C type's own limits, for rows whose table bounds are open-ended. */
        long long lo = f->type == F_INT ? INT_MIN : f->type == F_LONG ? LONG_MIN : 0;
        long long hi = f->type == F_INT ? INT_MAX : LLONG_MAX;
        if (x < lo) return spec_fail(e, "%s: must be >= %lld", where, lo);
        if (x > hi) return spec_fail(e, "%s: must be <= %lld", where, hi);
        if (f->type == F_INT) *(int *)p = (int)x;
        else if (f->type == F_LONG) *(long *)p = (long)x;
        else *(unsigned long *)p = (unsigned long)x;
        return 0;
    }
    case F_DOUBLE: {
        if (!json_is_number(v)) return spec_fail(e, "%s: must be a number", where);
        double x = json_number_value(v);
        if (check_range(e, f, x, where) < 0) return -1;
        *(double *)p = x;
        return 0;
    }
    case F_BOOL:
        if (!json_is_boolean(v)) return spec_fail(e, "%s: must be true or false", where);
        *(int *)p = json_is_true(v);
        return 0;
    case F_DOUBLES: {
        if (!json_is_array(v)) return spec_fail(e, "%s: must be an array of numbers", where);
        size_t n = json_array_size(v), cap = f->size / sizeof(double);
        if (n > cap) return spec_fail(e, "%s: at most %zu entries, has %zu", where, cap, n);
        for (size_t i = 0; i < n; i++) {
            json_t *item = json_array_get(v, i);
            char at[256];
            pathf(at, sizeof at, "%s[%zu]", where, i);
            if (!json_is_number(item)) return spec_fail(e, "%s: must be a number", at);
            double x = json_number_value(item);
            if (check_range(e, f, x, at) < 0) return -1;
            ((double *)p)[i] = x;
        }
        *(int *)(base + f->count_offset) = (int)n;
        return 0;
    }
    case F_OBJECTS: return parse_objects(e, f, v, base, where);
    }
    return spec_fail(e, "%s: internal error: unknown field type", where);
}

/* The refusal of key, unknown in the object at prefix (shown as shown): with the known key
 * of that object a typo away, if there is one ("epoch: unknown field (did you mean
 * epochs?)"). params_only: the object is algorithm.params. */
static int unknown_field(errbuf_t *e, const field_t *rows, size_t nrows, const char *prefix, const char *shown,
                         int params_only, const char *key, const char *where)
{
    suggest_t s;
    suggest_init(&s, key, strlen(key));
    for (size_t i = 0; i < nrows; i++) {
        const char *rest = under(rows[i].path, prefix);
        if (!rest || (params_only && (!rows[i].param || strchr(rest, '.')))) continue;
        suggest_offer(&s, rest, strcspn(rest, ".")); /* a nested row offers its object's key */
    }
    if (!params_only && strcmp(prefix, "algorithm") == 0) suggest_offer(&s, "params", 6);
    char hint[SUGGEST_NAME_MAX + 300], at[256];
    join_path(at, sizeof at, shown, "");
    suggest_hint(&s, at, hint, sizeof hint);
    return spec_fail(e, "%s: unknown field%s", where, hint);
}

/* Matches each key of obj against the rows under prefix. prefix is the table path of obj
 * ("optimizer.lr_schedule", "emulate.schedule[]"), shown the path errors print
 * ("algorithm.params", "emulate.schedule[2]"). params_only: obj is algorithm.params,
 * where only algorithm parameters may appear. */
static int walk_object(errbuf_t *e, json_t *obj, const field_t *rows, size_t nrows, const char *prefix,
                       const char *shown, int params_only, unsigned char *base, unsigned char *seen)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        char where[256];
        join_path(where, sizeof where, shown, *key ? key : "\"\"");
        /* Table paths are dotted, so without this {"optimizer.lr": 1} would match a row;
         * one spelling per field keeps documents and their error paths unambiguous. */
        if (strchr(key, '.'))
            return spec_fail(e, "%s: unknown field (keys cannot contain '.'; nest objects instead)", where);
        size_t klen = strlen(key);
        const field_t *leaf = NULL;
        size_t idx = 0;
        int nested = 0;
        for (size_t i = 0; i < nrows; i++) {
            const char *rest = under(rows[i].path, prefix);
            if (!rest) continue;
            if (strcmp(rest, key) == 0) {
                leaf = &rows[i];
                idx = i;
                break;
            }
            if (strncmp(rest, key, klen) == 0 && rest[klen] == '.') nested = 1;
        }
        if (leaf && leaf->or_object && !params_only && json_is_object(v)) {
            /* "model": {"onnx": PATH}: the row counts as given; its value is derived once
             * the whole document is read (resolve_model). */
            seen[idx] = 1;
            if (json_object_size(v) == 0)
                return spec_fail(e, "%s: an empty object (give %s)", where,
                                 strcmp(leaf->path, "model") == 0
                                     ? "{\"onnx\": PATH}"
                                     : "{\"kind\": \"bpe\", \"vocab\": PATH, \"merges\": PATH}");
            if (walk_object(e, v, rows, nrows, leaf->path, where, 0, base, seen) < 0) return -1;
        } else if (leaf && (!params_only || leaf->param)) {
            if (seen[idx]) {
                /* Only algorithm parameters have two spellings; duplicate keys in one
                 * object are rejected by the JSON decoder already. */
                char other[256];
                if (params_only) join_path(other, sizeof other, "algorithm", key);
                else join_path(other, sizeof other, "algorithm.params", key);
                return spec_fail(e, "%s: also given as %s", where, other);
            }
            seen[idx] = 1;
            if (parse_value(e, leaf, v, base, where) < 0) return -1;
        } else if (nested && !params_only && json_is_string(v) && strcmp(prefix, "model") == 0 &&
                   strcmp(key, "gpt") == 0) {
            if (gpt_preset(e, json_string_value(v), (job_spec_t *)base, where) < 0) return -1;
        } else if (nested && !params_only) {
            if (!json_is_object(v)) return spec_fail(e, "%s: must be an object", where);
            char sub[128];
            join_path(sub, sizeof sub, prefix, key);
            if (walk_object(e, v, rows, nrows, sub, where, 0, base, seen) < 0) return -1;
        } else if (!params_only && strcmp(prefix, "algorithm") == 0 && strcmp(key, "params") == 0) {
            if (!json_is_object(v)) return spec_fail(e, "%s: must be an object", where);
            if (walk_object(e, v, rows, nrows, "algorithm", where, 1, base, seen) < 0) return -1;
        } else {
            return unknown_field(e, rows, nrows, prefix, shown, params_only, key, where);
        }
    }
    return 0;
}


/* algorithm.shard.split: a name (even, memory), or a list of weights, one per worker, kept
 * in algorithm.shard.weights with split "weights". Top-level row: base is the spec. */
static int parse_shard_split(errbuf_t *e, const field_t *f, json_t *v, unsigned char *base, const char *where)
{
    job_spec_t *s = (job_spec_t *)base;
    s->algorithm.shard.nweights = 0;
    if (json_is_string(v)) {
        field_t name = *f;
        name.parse = NULL;
        return parse_value(e, &name, v, base, where);
    }
    if (!json_is_array(v)) return spec_fail(e, "%s: must be \"even\", \"memory\" or an array of weights", where);
    size_t n = json_array_size(v);
    if (n == 0) return spec_fail(e, "%s: an empty list (give one weight per worker)", where);
    if (n > SPEC_MAX_WORKERS) return spec_fail(e, "%s: at most %d entries, has %zu", where, SPEC_MAX_WORKERS, n);
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        double x = json_is_number(item) ? json_number_value(item) : NAN;
        if (!(x > 0 && x <= MAX_SHARD_WEIGHT))
            return spec_fail(e, "%s[%zu]: must be a number > 0 and <= 1e12 (a rank's share is its weight over the sum)",
                             where, i);
        s->algorithm.shard.weights[i] = x;
    }
    s->algorithm.shard.nweights = (int)n;
    snprintf(s->algorithm.shard.split, sizeof s->algorithm.shard.split, "weights");
    return 0;
}

/* freeze: an array of globs held as one string (common/freeze.h) */
static int parse_freeze(errbuf_t *e, const field_t *f, json_t *v, unsigned char *base, const char *where)
{
    char why[256];
    (void)f;
    if (freeze_parse(v, ((job_spec_t *)base)->freeze, why, sizeof why) != 0) return spec_fail(e, "%s: %s", where, why);
    return 0;
}

static json_t *freeze_to_json(const field_t *f, const unsigned char *base, int *prec)
{
    (void)f, (void)prec;
    return freeze_json(((const job_spec_t *)base)->freeze);
}

/* lora.targets: freeze's list, at least one glob when given */
static int parse_lora_targets(errbuf_t *e, const field_t *f, json_t *v, unsigned char *base, const char *where)
{
    char why[256];
    (void)f;
    if (json_is_array(v) && json_array_size(v) == 0)
        return spec_fail(e, "%s: an empty list; give at least one glob of the products to adapt", where);
    if (freeze_parse(v, ((job_spec_t *)base)->lora.targets, why, sizeof why) != 0)
        return spec_fail(e, "%s: %s", where, why);
    return 0;
}

static json_t *lora_targets_json(const field_t *f, const unsigned char *base, int *prec)
{
    (void)f, (void)prec;
    return freeze_json(((const job_spec_t *)base)->lora.targets);
}

static json_t *shard_split_json(const field_t *f, const unsigned char *base, int *prec)
{
    const job_spec_t *s = (const job_spec_t *)base;
    (void)f;
    if (strcmp(s->algorithm.shard.split, "weights") != 0) return json_string(s->algorithm.shard.split);
    json_t *arr = json_array();
    for (int i = 0; arr && i < s->algorithm.shard.nweights; i++) {
        const double x = s->algorithm.shard.weights[i];
        /* whole weights as written ([1, 2, 3], not [1.0, 2.0, 3.0]) */
        json_t *v = x == floor(x) && x < 9007199254740992.0 ? json_integer((json_int_t)x) : real_json(x, prec);
        if (json_array_append_new(arr, v) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

int spec_parse(const char *json_text, job_spec_t *out, char *err, size_t errlen)
{
    errbuf_t e = {err, errlen};
    if (!json_text) return spec_fail(&e, "spec: no text");

    json_error_t jerr;
    /* DECODE_ANY so that "42" gets the clearer "must be a JSON object" below; duplicate
     * keys are an error rather than last-one-wins, which would hide a typo'd copy. */
    json_t *root = json_loads(json_text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return spec_json_error(&jerr, err, errlen);
    int rc = spec_from_json(root, out, err, errlen);
    json_decref(root);
    return rc;
}

int spec_json_error(const json_error_t *jerr, char *err, size_t errlen)
{
    errbuf_t e = {err, errlen};
    return spec_fail(&e, "spec: invalid JSON at line %d column %d: %s", jerr->line, jerr->column, jerr->text);
}

int spec_from_json(json_t *root, job_spec_t *out, char *err, size_t errlen)
{
    errbuf_t e = {err, errlen};
    int rc = -1;
    /* Parsed into a local copy: on failure *out is left as it was. */
    job_spec_t s;
    memset(&s, 0, sizeof s);
    fill_defaults(FIELDS, ARRAY_LEN(FIELDS), (unsigned char *)&s);
    unsigned char seen[MAX_ROWS] = {0};

    if (!json_is_object(root)) {
        spec_fail(&e, "spec: must be a JSON object");
        goto done;
    }
    if (walk_object(&e, root, FIELDS, ARRAY_LEN(FIELDS), "", "", 0, (unsigned char *)&s, seen) < 0) goto done;
    for (size_t i = 0; i < ARRAY_LEN(FIELDS); i++) {
        if (FIELDS[i].required && !seen[i]) {
            spec_fail(&e, "%s: required", FIELDS[i].path);
            goto done;
        }
    }
    resolve(&s);
    if (spec_resolve_model(&e, &s) < 0) goto done;
    if (spec_resolve_dataset(&e, &s) < 0) goto done;
    if (spec_resolve_tokenizer(&e, &s) < 0) goto done;
    if (spec_cross_check(&e, &s) < 0) goto done;
    memcpy(out, &s, sizeof s);
    rc = 0;
done:
    return rc;
}

int spec_load_file(const char *path, job_spec_t *out, char *err, size_t errlen)
{
    errbuf_t e = {err, errlen};
    FILE *f = fopen(path, "rb");
    if (!f) return spec_fail(&e, "%s: %s", path, strerror(errno));
    char *text = malloc(SPEC_FILE_MAX + 1);
    if (!text) {
        fclose(f);
        return spec_fail(&e, "%s: out of memory", path);
    }
    size_t n = fread(text, 1, SPEC_FILE_MAX + 1, f);
    int read_error = ferror(f);
    fclose(f);
    int rc = -1;
    if (read_error) {
        spec_fail(&e, "%s: read error", path);
    } else if (n > SPEC_FILE_MAX) {
        spec_fail(&e, "%s: larger than %d bytes, not a job spec", path, SPEC_FILE_MAX);
    } else if (memchr(text, '\0', n)) {
        spec_fail(&e, "%s: contains a NUL byte, not a job spec", path);
    } else {
        text[n] = '\0';
        char msg[512];
        rc = spec_parse(text, out, msg, sizeof msg);
        if (rc < 0) spec_fail(&e, "%s: %s", path, msg);
    }
    free(text);
    return rc;
}

/* ---- serialisation ------------------------------------------------------------------ */

/* Fewest significant digits that read back as exactly x. */
static int digits_for(double x)
{
    char buf[40];
    for (int p = 1; p < 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, x);
        if (strtod(buf, NULL) == x) return p;
    }
    return 17;
}

/* The object at path's parent, created as needed; *key gets the last component. The
 * returned object is borrowed from root. */
static json_t *parent_of(json_t *root, const char *path, char *keybuf, size_t keylen)
{
    json_t *obj = root;
    const char *p = path, *dot;
    while ((dot = strchr(p, '.')) != NULL) {
        char seg[64];
        snprintf(seg, sizeof seg, "%.*s", (int)(dot - p), p);
        json_t *next = json_object_get(obj, seg);
        if (!next) {
            next = json_object();
            if (!next || json_object_set_new(obj, seg, next) < 0) return NULL;
        }
        obj = next;
        p = dot + 1;
    }
    snprintf(keybuf, keylen, "%s", p);
    return obj;
}

static json_t *value_json(const field_t *f, const unsigned char *base, int *prec);

static json_t *objects_json(const field_t *f, const unsigned char *base, int *prec)
{
    json_t *arr = json_array();
    int n = *(const int *)(base + f->count_offset);
    for (int i = 0; arr && i < n; i++) {
        const unsigned char *elem = base + f->offset + (size_t)i * f->elem_size;
        json_t *obj = json_object();
        if (!obj || json_array_append_new(arr, obj) < 0) goto oom;
        for (size_t k = 0; k < f->nsub; k++) {
            json_t *v = value_json(&f->sub[k], elem, prec);
            if (!v || json_object_set_new(obj, leaf_key(f->sub[k].path), v) < 0) goto oom;
        }
    }
    return arr;
oom:
    json_decref(arr);
    return NULL;
}

static json_t *real_json(double x, int *prec)
{
    int p = digits_for(x);
    if (p > *prec) *prec = p;
    return json_real(x); /* NULL for NaN / infinity, which JSON cannot carry */
}

static json_t *value_json(const field_t *f, const unsigned char *base, int *prec)
{
    if (f->to_json) return f->to_json(f, base, prec);
    const void *p = base + f->offset;
    switch (f->type) {
    case F_STR: return json_string(p); /* NULL if not UTF-8 (only if set by hand) */
    case F_INT: return json_integer(*(const int *)p);
    case F_LONG: return json_integer(*(const long *)p);
    case F_ULONG: return json_integer((json_int_t) * (const unsigned long *)p);
    case F_DOUBLE: return real_json(*(const double *)p, prec);
    case F_BOOL: return json_boolean(*(const int *)p);
    case F_DOUBLES: {
        json_t *arr = json_array();
        int n = *(const int *)(base + f->count_offset);
        for (int i = 0; arr && i < n; i++) {
            if (json_array_append_new(arr, real_json(((const double *)p)[i], prec)) < 0) {
                json_decref(arr);
                return NULL;
            }
        }
        return arr;
    }
    case F_OBJECTS: return objects_json(f, base, prec);
    }
    return NULL;
}

/* The or_object row whose object holds row f ("model" for "model.onnx"), or NULL. */
static const field_t *object_parent(const field_t *f)
{
    for (size_t k = 0; k < ARRAY_LEN(FIELDS); k++)
        if (FIELDS[k].or_object && under(f->path, FIELDS[k].path)) return &FIELDS[k];
    return NULL;
}

/* Row f's value; an or_object row as it was given: the object of its rows (F_STR, each
 * set one printed) when one is set, else its own string. The hash takes the string (the
 * catalog name), not where the model was read from. */
/* "model": {"gpt": {...}}: every model.gpt row (the hash too: the shape is the model) */
static json_t *gpt_json(const job_spec_t *s, int *prec)
{
    json_t *gpt = json_object(), *obj = json_object();
    if (!gpt || !obj || json_object_set_new(obj, "gpt", gpt) < 0) {
        json_decref(obj);
        return NULL;
    }
    for (size_t k = 0; k < ARRAY_LEN(FIELDS); k++)
        if (under(FIELDS[k].path, "model.gpt") &&
            json_object_set_new(gpt, leaf_key(FIELDS[k].path), value_json(&FIELDS[k], (const unsigned char *)s, prec)) <
                0) {
            json_decref(obj);
            return NULL;
        }
    return obj;
}

static json_t *row_json(const field_t *f, const job_spec_t *s, int for_hash, int *prec)
{
    const unsigned char *base = (const unsigned char *)s;
    if (f->or_object && strcmp(f->path, "model") == 0 && spec_model_is_gpt(s)) return gpt_json(s, prec);
    if (!f->or_object || for_hash) return value_json(f, base, prec);
    json_t *obj = NULL;
    for (size_t k = 0; k < ARRAY_LEN(FIELDS); k++) {
        const field_t *r = &FIELDS[k];
        if (object_parent(r) != f || r->type != F_STR || !*(const char *)(base + r->offset)) continue;
        if (!obj && !(obj = json_object())) return NULL;
        if (json_object_set_new(obj, leaf_key(r->path), value_json(r, base, prec)) < 0) {
            json_decref(obj);
            return NULL;
        }
    }
    return obj ? obj : value_json(f, base, prec);
}

/* The normalised spec as compact JSON; with for_hash, only the rows a resumed run must
 * keep (no resume_free rows) and keys sorted, so the text depends on nothing but those
 * values. */
static char *spec_text(const job_spec_t *s, int for_hash, json_t **doc)
{
    if (doc) *doc = NULL;
    json_t *root = json_object();
    if (!root) return NULL;
    int prec = 1;
    for (size_t i = 0; i < ARRAY_LEN(FIELDS); i++) {
        if (for_hash && FIELDS[i].resume_free) continue;
        if (object_parent(&FIELDS[i])) continue; /* inside its parent's object (row_json) */
        char key[64];
        json_t *parent = parent_of(root, FIELDS[i].path, key, sizeof key);
        json_t *v = parent ? row_json(&FIELDS[i], s, for_hash, &prec) : NULL;
        /* json_object_set_new takes v even when it fails, and fails on a NULL v. */
        if (!parent || json_object_set_new(parent, key, v) < 0) {
            json_decref(root);
            return NULL;
        }
    }
    /* No compression hashes as before compression existed, so checkpoints written by
     * earlier versions still resume (kind none ignores rank and warmup_steps). */
    if (for_hash && strcmp(s->algorithm.compression.kind, "none") == 0)
        json_object_del(json_object_get(root, "algorithm"), "compression");
    /* Likewise compression without the measured choice (min_gain 0) as before it existed. */
    if (for_hash && !(s->algorithm.compression.min_gain > 0)) {
        json_t *c = json_object_get(json_object_get(root, "algorithm"), "compression");
        json_object_del(c, "min_gain");
        json_object_del(c, "probe_steps");
    }
    /* Likewise sgd (which reads no AdamW field) without label smoothing or parameter
     * groups hashes as before they existed: sgd checkpoints of earlier versions resume. */
    if (for_hash && !spec_is_adamw(s)) {
        json_t *opt = json_object_get(root, "optimizer");
        json_object_del(opt, "kind");
        json_object_del(opt, "betas");
        json_object_del(opt, "eps");
        if (!spec_no_decay(s)) json_object_del(opt, "no_decay");
    }
    if (for_hash && s->loss.label_smoothing == 0.0) json_object_del(root, "loss");
    /* Likewise without sync_batchnorm, as before it existed. */
    if (for_hash && !s->sync_batchnorm) json_object_del(root, "sync_batchnorm");
    /* No lora (no targets: its other fields unused) is no lora object, in the hash as before
     * it existed and in the text, which reads back the same (an empty targets is refused). */
    if (!s->lora.targets[0]) json_object_del(root, "lora");
    /* One precision for the whole document: the largest any number needs to read back
     * exactly, so 0.01 prints as 0.01 rather than 0.010000000000000000208. */
    char *text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(prec) | (for_hash ? JSON_SORT_KEYS : 0));
    if (text && doc) *doc = root;
    else json_decref(root);
    return text;
}

char *spec_to_json(const job_spec_t *s) { return spec_text(s, 0, NULL); }

char *spec_to_json_doc(const job_spec_t *s, json_t **doc) { return spec_text(s, 0, doc); }

int spec_name_valid(const char *name) { return name && strlen(name) < SPEC_NAME_MAX && check_name(name) == NULL; }

uint64_t spec_hash(const job_spec_t *s)
{
    char *text = spec_text(s, 1, NULL);
    /* Out of memory: a value no spec hashes to in practice, so a resume is refused
     * rather than trusted. */
    if (!text) return 0;
    uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, text, strlen(text));
    free(text);
    return h;
}

/* ---- queries and docs --------------------------------------------------------------- */

/* Rows in document order: each F_OBJECTS row followed by its element rows. */
static const field_t *field_at(size_t i)
{
    for (size_t k = 0; k < ARRAY_LEN(FIELDS); k++) {
        if (i == 0) return &FIELDS[k];
        i--;
        if (FIELDS[k].type == F_OBJECTS) {
            if (i < FIELDS[k].nsub) return &FIELDS[k].sub[i];
            i -= FIELDS[k].nsub;
        }
    }
    return NULL;
}

const char *spec_field_path(size_t i)
{
    const field_t *f = field_at(i);
    return f ? f->path : NULL;
}

int spec_field_info(size_t i, spec_field_info_t *out)
{
    const field_t *f = field_at(i);
    if (!f) return -1;
    memset(out, 0, sizeof *out);
    out->path = f->path;
    out->integer = f->type == F_INT || f->type == F_LONG || f->type == F_ULONG;
    out->array = f->type == F_DOUBLES;
    out->numeric = out->integer || f->type == F_DOUBLE || out->array;
    out->has_min = (f->range & R_MIN) != 0;
    out->has_max = (f->range & R_MAX) != 0;
    out->min_excl = (f->range & R_MIN_EXCL) != 0;
    out->max_excl = (f->range & R_MAX_EXCL) != 0;
    out->min = f->min;
    out->max = f->max;
    out->resume_free = f->resume_free;
    return 0;
}

static const char *type_name(const field_t *f)
{
    if (f->type_doc) return f->type_doc;
    switch (f->type) {
    case F_STR: return f->choices ? "enum" : "string"; /* a catalog name is a string */
    case F_INT:
    case F_LONG:
    case F_ULONG: return "integer";
    case F_DOUBLE: return "number";
    case F_BOOL: return "boolean";
    case F_DOUBLES: return "array of numbers";
    case F_OBJECTS: return "array of objects";
    }
    return "?";
}

void spec_print_fields(FILE *out)
{
    fprintf(out, "| field | type | default | allowed | description |\n");
    fprintf(out, "|---|---|---|---|---|\n");
    const field_t *f;
    for (size_t i = 0; (f = field_at(i)) != NULL; i++) {
        char def[128], allowed[256], num[32];
        if (f->default_doc) snprintf(def, sizeof def, "%s", f->default_doc);
        else if (f->required) snprintf(def, sizeof def, "required");
        else if (f->type == F_STR) snprintf(def, sizeof def, "`\"%s\"`", f->def_str ? f->def_str : "");
        else if (f->type == F_BOOL) snprintf(def, sizeof def, "%s", f->def_num != 0 ? "true" : "false");
        else snprintf(def, sizeof def, "%s", spec_fmt_num(num, f->def_num));

        if (f->allowed_doc) snprintf(allowed, sizeof allowed, "%s", f->allowed_doc);
        else if (f->choices) join_list(allowed, sizeof allowed, f->choices, "`");
        else if (f->catalog) {
            char names[192];
            catalog_names(f->catalog, names, sizeof names, "`", 1);
            snprintf(allowed, sizeof allowed, "a name of the catalog; built in: %s", names);
        } else if (f->type == F_STR) snprintf(allowed, sizeof allowed, "at most %zu bytes", f->size - 1);
        else if (f->type == F_BOOL) snprintf(allowed, sizeof allowed, "`true`, `false`");
        else range_text(f, allowed, sizeof allowed);

        fprintf(out, "| `%s` | %s | %s | %s | %s |\n", f->path, type_name(f), def, allowed, f->doc);
    }
}
