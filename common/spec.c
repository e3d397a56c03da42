/* common/spec.c - see spec.h.
 *
 * Every field is one row of FIELDS below: its dotted path in the JSON document, its C
 * type and place in job_spec_t, its bounds or allowed values, its default and a line of
 * documentation. Parsing, defaults, serialisation and the docs table are all loops over
 * that one table, so a new field is one new row (plus a cross-field rule if it needs
 * one) and cannot be half-supported.
 */
#include "spec.h"

#include "catalog.h"
#include "ckptdir.h"
#include "errmsg.h"
#include "freeze.h"
#include "hash.h"
#include "sha256.h"
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
static const char *const ASYNC_ALGORITHMS[] = {"asgd", "nsoftsync", "dc-asgd", "ddc-asgd", "dbs-sgd", NULL};
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
            "convolutions through their GEMM) rounded to bfloat16, their sums in float32; weights, gradients, "
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
     .default_doc = "none", .allowed_doc = "1 to 255 bytes of text (no control characters but tab and newline); the built-in GPT on text or tokens only",
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
            "tensor. The summary has trainable_parameters and frozen_parameters."},

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
            "of Gemm and MatMul weights); each must match one. Each matched product y = x W' gets an adapter, "
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

typedef struct errbuf {
    char *buf;
    size_t len;
} errbuf_t;

/* Writes one line into the caller's buffer and returns -1. Control characters (a key
 * or value from the document may hold "\n") become '?', so the message stays one line
 * in a log or an HTTP error body. */
__attribute__((format(printf, 2, 3))) static int fail(errbuf_t *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errmsg_v(e->buf, e->len, -1, fmt, ap);
    va_end(ap);
    for (char *p = e->buf; p && e->len > 0 && *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return -1;
}

static int in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0) return 1;
    return 0;
}

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

/* Integers print as integers (65536, not 6.5536e+04); others with %g. */
static const char *fmt_num(char buf[32], double x)
{
    /* LLONG_MAX (the seed's bound) reads back as 2^63 in a double: say what is meant. */
    if (x == (double)LLONG_MAX) snprintf(buf, 32, "%lld", LLONG_MAX);
    else if (x == floor(x) && fabs(x) < 1e15) snprintf(buf, 32, "%.0f", x);
    else snprintf(buf, 32, "%g", x);
    return buf;
}

/* "between 1 and 65536", "in [0, 1)", "> 0", ">= 1"; "" without bounds. */
static void range_text(const field_t *f, char *buf, size_t n)
{
    char lo[32], hi[32];
    fmt_num(lo, f->min);
    fmt_num(hi, f->max);
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
    return fail(e, "%s: must be %s", where, txt);
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
        return fail(e, "%s: must be an object of the GPT's fields, or \"gpt2\" (GPT-2 124M's shape)", where);
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
    if (!json_is_array(v)) return fail(e, "%s: must be an array", where);
    size_t n = json_array_size(v), cap = f->size / f->elem_size;
    if (n > cap) return fail(e, "%s: at most %zu entries, has %zu", where, cap, n);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s[]", f->path);
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        char at[256];
        pathf(at, sizeof at, "%s[%zu]", where, i);
        if (!json_is_object(item)) return fail(e, "%s: must be an object", at);
        unsigned char *elem = base + f->offset + i * f->elem_size;
        unsigned char seen[MAX_ROWS] = {0};
        memset(elem, 0, f->elem_size);
        fill_defaults(f->sub, f->nsub, elem);
        if (walk_object(e, item, f->sub, f->nsub, prefix, at, 0, elem, seen) < 0) return -1;
        for (size_t k = 0; k < f->nsub; k++)
            if (f->sub[k].required && !seen[k]) return fail(e, "%s.%s: required", at, leaf_key(f->sub[k].path));
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
        if (!json_is_string(v)) return fail(e, "%s: must be a string", where);
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (f->choices && !in_list(s, f->choices)) {
            char list[256], hint[SUGGEST_NAME_MAX + 32];
            suggest_t sg;
            suggest_init(&sg, s, n);
            for (const char *const *c = f->choices; *c; c++) suggest_offer(&sg, *c, strlen(*c));
            join_list(list, sizeof list, f->choices, "");
            suggest_hint(&sg, NULL, hint, sizeof hint);
            return fail(e, "%s: must be one of %s%s", where, list, hint);
        }
        /* dataset.name is checked by resolve_dataset, once dataset.format and
         * dataset.path are known too (a user's set read from its path needs no entry) */
        if (f->catalog == CAT_MODEL && !in_catalog(f->catalog, s)) {
            char list[512];
            catalog_names(f->catalog, list, sizeof list, "", 0);
            return fail(e, "%s: must be one of %s", where, list);
        }
        if (n >= f->size) return fail(e, "%s: too long (%zu bytes, at most %zu)", where, n, f->size - 1);
        const char *why = f->check ? f->check(s) : NULL;
        if (why) return fail(e, "%s: %s", where, why);
        memset(p, 0, f->size);
        memcpy(p, s, n);
        return 0;
    }
    case F_INT:
    case F_LONG:
    case F_ULONG: {
        if (!json_is_integer(v)) return fail(e, "%s: must be an integer", where);
        json_int_t x = json_integer_value(v);
        if (check_range(e, f, (double)x, where) < 0) return -1;
        /* The C type's own limits, for rows whose table bounds are open-ended. */
        long long lo = f->type == F_INT ? INT_MIN : f->type == F_LONG ? LONG_MIN : 0;
        long long hi = f->type == F_INT ? INT_MAX : LLONG_MAX;
        if (x < lo) return fail(e, "%s: must be >= %lld", where, lo);
        if (x > hi) return fail(e, "%s: must be <= %lld", where, hi);
        if (f->type == F_INT) *(int *)p = (int)x;
        else if (f->type == F_LONG) *(long *)p = (long)x;
        else *(unsigned long *)p = (unsigned long)x;
        return 0;
    }
    case F_DOUBLE: {
        if (!json_is_number(v)) return fail(e, "%s: must be a number", where);
        double x = json_number_value(v);
        if (check_range(e, f, x, where) < 0) return -1;
        *(double *)p = x;
        return 0;
    }
    case F_BOOL:
        if (!json_is_boolean(v)) return fail(e, "%s: must be true or false", where);
        *(int *)p = json_is_true(v);
        return 0;
    case F_DOUBLES: {
        if (!json_is_array(v)) return fail(e, "%s: must be an array of numbers", where);
        size_t n = json_array_size(v), cap = f->size / sizeof(double);
        if (n > cap) return fail(e, "%s: at most %zu entries, has %zu", where, cap, n);
        for (size_t i = 0; i < n; i++) {
            json_t *item = json_array_get(v, i);
            char at[256];
            pathf(at, sizeof at, "%s[%zu]", where, i);
            if (!json_is_number(item)) return fail(e, "%s: must be a number", at);
            double x = json_number_value(item);
            if (check_range(e, f, x, at) < 0) return -1;
            ((double *)p)[i] = x;
        }
        *(int *)(base + f->count_offset) = (int)n;
        return 0;
    }
    case F_OBJECTS: return parse_objects(e, f, v, base, where);
    }
    return fail(e, "%s: internal error: unknown field type", where);
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
    return fail(e, "%s: unknown field%s", where, hint);
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
            return fail(e, "%s: unknown field (keys cannot contain '.'; nest objects instead)", where);
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
                return fail(e, "%s: an empty object (give %s)", where,
                            strcmp(leaf->path, "model") == 0 ? "{\"onnx\": PATH}"
                                                             : "{\"kind\": \"bpe\", \"vocab\": PATH, \"merges\": PATH}");
            if (walk_object(e, v, rows, nrows, leaf->path, where, 0, base, seen) < 0) return -1;
        } else if (leaf && (!params_only || leaf->param)) {
            if (seen[idx]) {
                /* Only algorithm parameters have two spellings; duplicate keys in one
                 * object are rejected by the JSON decoder already. */
                char other[256];
                if (params_only) join_path(other, sizeof other, "algorithm", key);
                else join_path(other, sizeof other, "algorithm.params", key);
                return fail(e, "%s: also given as %s", where, other);
            }
            seen[idx] = 1;
            if (parse_value(e, leaf, v, base, where) < 0) return -1;
        } else if (nested && !params_only && json_is_string(v) && strcmp(prefix, "model") == 0 &&
                   strcmp(key, "gpt") == 0) {
            if (gpt_preset(e, json_string_value(v), (job_spec_t *)base, where) < 0) return -1;
        } else if (nested && !params_only) {
            if (!json_is_object(v)) return fail(e, "%s: must be an object", where);
            char sub[128];
            join_path(sub, sizeof sub, prefix, key);
            if (walk_object(e, v, rows, nrows, sub, where, 0, base, seen) < 0) return -1;
        } else if (!params_only && strcmp(prefix, "algorithm") == 0 && strcmp(key, "params") == 0) {
            if (!json_is_object(v)) return fail(e, "%s: must be an object", where);
            if (walk_object(e, v, rows, nrows, "algorithm", where, 1, base, seen) < 0) return -1;
        } else {
            return unknown_field(e, rows, nrows, prefix, shown, params_only, key, where);
        }
    }
    return 0;
}

/* The simulate section: a given platform file sets host speeds and links itself, so the
 * generator's per-worker fields would be silently unused next to it. */
static int cross_check_simulate(errbuf_t *e, const job_spec_t *s)
{
    const int k = s->simulate.gpus_per_node, n = s->simulate.nslowdown;
    if (n > 0 && n != s->workers) return fail(e, "simulate.slowdown: has %d entries, workers is %d", n, s->workers);
    if (s->simulate.platform[0] && n > 0)
        return fail(e, "simulate.slowdown: not used with simulate.platform (the platform file sets host speeds)");
    if (s->simulate.platform[0] && k > 1)
        return fail(e, "simulate.gpus_per_node: not used with simulate.platform (the platform file sets the nodes)");
    if (s->simulate.hostfile[0] && !s->simulate.platform[0])
        return fail(e, "simulate.hostfile: only with simulate.platform");
    /* Without the cost model the simulated time is the timed computation: skipping it
     * would make every step free. */
    if (s->simulate.skip_compute && !s->simulate.deterministic)
        return fail(
            e, "simulate.skip_compute: only with simulate.deterministic (the cost model charges the skipped compute)");
    if (s->simulate.jitter > 0 && !s->simulate.deterministic)
        return fail(e, "simulate.jitter: only with simulate.deterministic (timed compute varies by itself)");
    if (s->simulate.bf16_gflops > 0 && strcmp(s->precision, "bf16") != 0)
        return fail(e, "simulate.bf16_gflops: only with precision bf16 (an fp32 job's hosts compute at "
                       "simulate.gflops)");
    /* A node is one simulated host with k cores: one speed for all its workers. */
    for (int i = 0; i < n; i++)
        if (s->simulate.slowdown[i] != s->simulate.slowdown[i - i % k])
            return fail(e,
                        "simulate.slowdown[%d]: must equal simulate.slowdown[%d]: the workers of a node "
                        "(gpus_per_node %d) share its speed",
                        i, i - i % k, k);
    return 0;
}

const char *spec_dataset_format(const job_spec_t *s)
{
    catalog_dataset_t d;
    if (strcmp(s->dataset.format, "auto") != 0) return s->dataset.format;
    /* a user's entry named alone had its format filled in by resolve_dataset */
    if (catalog_dataset_get(s->dataset.name, &d) != 0 || catalog_format_is_user(d.format))
        return catalog_format_name(CATALOG_FORMAT_IDX);
    return catalog_format_name(d.format);
}

int spec_model_is_gpt(const job_spec_t *s) { return s->gpt.layers > 0; }

int spec_dataset_is_text(const job_spec_t *s)
{
    catalog_format_t f;
    return catalog_format_parse(spec_dataset_format(s), &f) == 0 &&
           (f == CATALOG_FORMAT_TEXT || f == CATALOG_FORMAT_TOKENS);
}

int spec_dataset_is_user(const job_spec_t *s)
{
    catalog_format_t f;
    return catalog_format_parse(spec_dataset_format(s), &f) == 0 && catalog_format_is_user(f);
}

/* The dataset section: a format that fits the name, a path where the format needs one,
 * and arrays of the lengths they may have. */
static int cross_check_dataset(errbuf_t *e, const job_spec_t *s)
{
    const char *fmt = s->dataset.format, *ds = s->dataset.name;
    catalog_dataset_t d;
    /* resolve_dataset checked dataset.name (a user's set by path may carry any label) */
    if (catalog_dataset_get(ds, &d) != 0 && !spec_dataset_is_user(s))
        return fail(e, "dataset.name: %s is no longer in the catalog", ds);
    catalog_format_t f;
    int named = catalog_format_parse(fmt, &f) == 0; /* not "auto" */
    if (named && !catalog_format_is_user(f) && f != d.format)
        return fail(e, "dataset.format: %s is not the format of dataset.name %s (%s)", fmt, ds,
                    catalog_format_name(d.format));
    if (spec_dataset_is_user(s) && !s->dataset.path[0])
        return fail(e, "dataset.path: required with dataset.format %s (%s)", fmt,
                    catalog_format_path_is(named ? f : CATALOG_FORMAT_IMAGEFOLDER));
    if (s->dataset.nresize != 0 && s->dataset.nresize != 2)
        return fail(e, "dataset.resize: must be [H, W] or [], has %d entr%s", s->dataset.nresize,
                    s->dataset.nresize == 1 ? "y" : "ies");
    for (int i = 0; i < s->dataset.nresize; i++)
        if (s->dataset.resize[i] != floor(s->dataset.resize[i]))
            return fail(e, "dataset.resize[%d]: must be an integer", i);
    if (s->dataset.nmean == 2) return fail(e, "dataset.mean: one value (every channel) or one per channel (3), has 2");
    if (s->dataset.nstd == 2) return fail(e, "dataset.std: one value (every channel) or one per channel (3), has 2");
    return 0;
}

/* The model and the data set, as the catalog has them: the same image shape, as many
 * classes as an imported model has outputs (a built-in's head takes the data set's:
 * catalog_pair_check), augmentation only where the data set allows it. A built-in data
 * set resized (its channels converted too) is paired by its classes alone; a user's (imagefolder, npz) is not in the spec's catalog lookup at all: the
 * coordinator probes its classes at submission and the worker checks the shape it
 * decodes, both naming the model and the data set. */
static int cross_check_catalog(errbuf_t *e, const job_spec_t *s)
{
    catalog_model_t m;
    catalog_dataset_t d;
    char why[256];
    /* a language model on text pairs by its vocabulary and window, which the worker checks
     * against the files (the built-in GPT is in no catalog: its figures are its fields') */
    if (spec_model_is_gpt(s) && !spec_dataset_is_text(s))
        return fail(e, "model.gpt: trains on dataset.format text or tokens, not %s", spec_dataset_format(s));
    if (spec_dataset_is_text(s) && !spec_model_is_gpt(s) && !s->model_onnx[0])
        return fail(e,
                    "dataset.format %s: trains the built-in GPT (\"model\": {\"gpt\": {...}}) or an imported "
                    "language model (\"model\": {\"onnx\": ...}); %s takes images",
                    spec_dataset_format(s), s->model);
    if (spec_dataset_is_text(s) && s->dataset.augment)
        return fail(e, "dataset.augment: crops and flips images, not text");
    if (!spec_dataset_is_text(s) && (s->dataset.block_size || s->dataset.vocab_size))
        return fail(e, "dataset.%s: only with dataset.format text or tokens",
                    s->dataset.block_size ? "block_size" : "vocab_size");
    if (spec_model_is_gpt(s)) return 0;
    if (catalog_model_get(s->model, &m) != 0) return fail(e, "model: %s is no longer in the catalog", s->model);
    if (spec_dataset_is_user(s)) return 0;
    if (catalog_dataset_get(s->dataset.name, &d) != 0)
        return fail(e, "dataset.name: %s is no longer in the catalog", s->dataset.name);
    if (s->dataset.nresize == 2) {
        d.C = m.C;
        d.H = m.H;
        d.W = m.W;
    }
    if (catalog_pair_check(&m, &d, why, sizeof why) != 0) return fail(e, "%s", why);
    if (s->dataset.augment && !d.augment) {
        char allowed[256] = "";
        catalog_dataset_t o;
        for (size_t i = 0; catalog_dataset_at(i, &o) == 0; i++)
            if (o.augment)
                snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", allowed[0] ? ", " : "",
                         o.name);
        return fail(e, "dataset.augment: only for %s, dataset.name is %s", allowed[0] ? allowed : "no data set",
                    s->dataset.name);
    }
    return 0;
}

/* ---- ONNX models -------------------------------------------------------------------- */

static spec_onnx_loader_fn onnx_loader;

void spec_set_onnx_loader(spec_onnx_loader_fn fn) { onnx_loader = fn; }

void spec_onnx_name(const char *path, char *out, size_t len)
{
    if (len == 0) return;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!*base) base = "model.onnx";
    size_t n = 0;
    for (; base[n] && n + 1 < len && n + 1 < SPEC_NAME_MAX; n++) {
        unsigned char c = (unsigned char)base[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                 c == '-';
        out[n] = ok ? (char)c : '_';
    }
    out[n] = '\0';
    /* a '.' keeps the name apart from the built-in ones, which have none */
    if (!memchr(out, '.', n)) {
        size_t room = len < SPEC_NAME_MAX ? len : SPEC_NAME_MAX;
        if (n + sizeof ".onnx" > room) n = room > sizeof ".onnx" ? room - sizeof ".onnx" : 0;
        snprintf(out + n, len - n, ".onnx");
    }
}

/* "model": {"onnx": PATH}: the model is the catalog's entry named after the file, added
 * by the loader (the worker's and pacer-sim's onnx_import_catalog_add) unless the process
 * has it already (pacer-sim's ranks share one catalog). "model": {"onnx": NAME} naming an
 * uploaded model (the coordinator's catalog has it, source uploaded): that entry, its
 * sha256 copied into model.sha256; with a sha256 (what the coordinator launches) the
 * model keeps NAME and the loader finds the bytes by the hash. Runs before the pairing
 * checks, so they read the imported model's figures. */
static int resolve_model(errbuf_t *e, job_spec_t *s)
{
    if (s->gpt.layers > 0 && s->model_onnx[0]) return fail(e, "model: give onnx or gpt, not both");
    if (s->gpt.layers > 0) {
        snprintf(s->model, sizeof s->model, "gpt");
        return 0;
    }
    if (!s->model_onnx[0]) {
        if (s->model_sha256[0]) return fail(e, "model.sha256: only with model.onnx (an uploaded model's name)");
        /* an object with neither onnx nor a gpt's layers */
        if (!s->model[0]) return fail(e, "model.gpt.layers: required in a gpt object (1 to 96 transformer blocks)");
        return 0;
    }
    catalog_model_t m;
    /* a catalog name holds no '/': never a path */
    const int bare = catalog_name_valid(s->model_onnx);
    if (bare && catalog_model_get(s->model_onnx, &m) == 0 && m.source == CATALOG_UPLOADED) {
        if (s->model_sha256[0] && strcmp(s->model_sha256, m.sha256) != 0)
            return fail(e, "model.sha256: uploaded model %s is %.12s... now, not %.12s... (replaced since)",
                        s->model_onnx, m.sha256, s->model_sha256);
        snprintf(s->model, sizeof s->model, "%.*s", (int)sizeof s->model - 1, s->model_onnx);
        snprintf(s->model_sha256, sizeof s->model_sha256, "%s", m.sha256);
        return 0;
    }
    if (s->model_sha256[0]) {
        if (!bare)
            return fail(e, "model.onnx: with model.sha256, the name of an uploaded model (letters, digits, '.', '_', "
                           "'-'), not a path");
        snprintf(s->model, sizeof s->model, "%.*s", (int)sizeof s->model - 1, s->model_onnx);
    } else {
        spec_onnx_name(s->model_onnx, s->model, sizeof s->model);
    }
    if (catalog_model_get(s->model, &m) == 0) {
        /* an upload never takes a built-in's name: a hand-written spec must not train
         * ONNX bytes under a built-in's figures */
        if (s->model_sha256[0] && m.source != CATALOG_UPLOADED)
            return fail(e, "model.onnx: %s is a %s model, not an uploaded one", s->model, catalog_source_name(m.source));
        return 0;
    }
    if (!onnx_loader) {
        if (bare)
            return fail(e,
                        "model.onnx: %s is not an uploaded model (GET /api/v1/models lists them; PUT "
                        "/api/v1/models/%s uploads one); ONNX files by path are read by pacer-worker and pacer-sim",
                        s->model_onnx, s->model_onnx);
        return fail(e, "model.onnx: %s: ONNX files are read by pacer-worker and pacer-sim; %s is not in this catalog",
                    s->model_onnx, s->model);
    }
    char why[768];
    if (onnx_loader(s->model_onnx, s->model, s->model_sha256, why, sizeof why) != 0)
        return fail(e, "model.onnx: %s", why);
    return 0;
}

/* "dataset": {"name": NAME} of a user's data set (an image folder or .npz that a data
 * root holds, put in the catalog by common/userdata.h: GET /api/v1/datasets lists it) is
 * read from where the catalog found it, in its format: format and path are filled in
 * here, so that the coordinator checks the path against its data roots, stores the
 * spec with both and its workers read the path, as for a spec that gave them. A name
 * that is not in this process's catalog is still a valid label of a user's set given by
 * format and path (a worker without --data-root reading the coordinator's spec);
 * otherwise it gets the catalog's names. */
static int resolve_dataset(errbuf_t *e, job_spec_t *s)
{
    catalog_dataset_t d;
    if (catalog_dataset_get(s->dataset.name, &d) != 0) {
        if (spec_dataset_is_user(s) && s->dataset.path[0]) return 0;
        char list[512];
        catalog_dataset_names(list, sizeof list, "", 0);
        return fail(e, "dataset.name: must be one of %s", list);
    }
    if (!catalog_format_is_user(d.format)) return 0;
    const char *f = catalog_format_name(d.format);
    catalog_format_t given;
    if (catalog_format_parse(s->dataset.format, &given) == 0 && given != d.format) /* "auto" is none */
        return fail(e, "dataset.format: %s is not the format of dataset.name %s (%s)", s->dataset.format,
                    s->dataset.name, f);
    if (s->dataset.path[0] && strcmp(s->dataset.path, d.fixed_dir) != 0)
        return fail(e, "dataset.path: %s is not where dataset.name %s is (%s): give one or the other", s->dataset.path,
                    s->dataset.name, d.fixed_dir);
    if (strlen(d.fixed_dir) >= sizeof s->dataset.path)
        return fail(e, "dataset.name: %s: its path is too long for dataset.path", s->dataset.name);
    snprintf(s->dataset.format, sizeof s->dataset.format, "%s", f);
    snprintf(s->dataset.path, sizeof s->dataset.path, "%s", d.fixed_dir);
    return 0;
}

/* "tokenizer": {"kind": "bpe", ...}: the object form names GPT-2's BPE and its files (either
 * vocab.json and merges.txt, or one tokenizer.json); the row's own value becomes "bpe". */
static int resolve_tokenizer(errbuf_t *e, job_spec_t *s)
{
    const int vocab = s->dataset.tokenizer_vocab[0] != 0, merges = s->dataset.tokenizer_merges[0] != 0,
              file = s->dataset.tokenizer_file[0] != 0;
    if (!s->dataset.tokenizer_kind[0] && !vocab && !merges && !file) return 0;
    if (!s->dataset.tokenizer_kind[0])
        return fail(e, "dataset.tokenizer.kind: required in a tokenizer object: \"bpe\" (bytes and chars are "
                       "given as strings)");
    if (file && (vocab || merges))
        return fail(e, "dataset.tokenizer.file: give a tokenizer.json or vocab and merges, not both");
    if (!file && !(vocab && merges))
        return fail(e,
                    "dataset.tokenizer.%s: required with %s (GPT-2's vocab.json and merges.txt), or give file "
                    "(a tokenizer.json)",
                    vocab ? "merges" : "vocab",
                    vocab    ? "vocab"
                    : merges ? "merges"
                             : "kind bpe");
    snprintf(s->dataset.tokenizer, sizeof s->dataset.tokenizer, "%s", s->dataset.tokenizer_kind);
    return 0;
}

/* A tokenizer other than bytes reads text: a token data set is ids already, and its
 * vocabulary (dataset.vocab_size) is the tokenizer's, not the spec's. */
static int cross_check_tokenizer(errbuf_t *e, const job_spec_t *s)
{
    if (strcmp(s->dataset.tokenizer, "bytes") == 0) return 0;
    catalog_format_t f;
    if (catalog_format_parse(spec_dataset_format(s), &f) != 0 || f != CATALOG_FORMAT_TEXT)
        return fail(e, "dataset.tokenizer: %s reads text (dataset.format text), not %s", s->dataset.tokenizer,
                    spec_dataset_format(s));
    if (s->dataset.vocab_size)
        return fail(e, "dataset.vocab_size: the %s tokenizer's vocabulary is its own; leave vocab_size out",
                    s->dataset.tokenizer);
    return 0;
}

/* The built-in GPT's shape: its heads split the width evenly (each head embd / heads
 * wide), and its vocabulary has at least 2 ids and none the data's tokenizer lacks (a
 * sampled id it cannot decode would fail generation), where the spec alone says the
 * tokenizer's size: text read as bytes has 256, a token data set dataset.vocab_size. A BPE's
 * is its files' (checked at submission by the coordinator, which reads them), a chars
 * one's its text's (checked by the worker once it has read it). */
static int cross_check_gpt(errbuf_t *e, const job_spec_t *s)
{
    if (!spec_model_is_gpt(s)) return 0;
    if (s->gpt.embd % s->gpt.heads != 0)
        return fail(e, "model.gpt.heads: %d does not divide model.gpt.embd %d (each head is embd / heads wide)",
                    s->gpt.heads, s->gpt.embd);
    if (s->gpt.vocab_size == 1)
        return fail(e, "model.gpt.vocab_size: 1, must be at least 2 (or left out: the data set's vocabulary)");
    catalog_format_t f;
    if (!s->gpt.vocab_size || catalog_format_parse(spec_dataset_format(s), &f) != 0) return 0;
    const int bytes = f == CATALOG_FORMAT_TEXT && (!s->dataset.tokenizer[0] || !strcmp(s->dataset.tokenizer, "bytes"));
    const int have = bytes ? 256 : f == CATALOG_FORMAT_TOKENS ? s->dataset.vocab_size : 0;
    if (have && s->gpt.vocab_size > have)
        return fail(e,
                    "model.gpt.vocab_size: %d, more than the %d ids of the data set's %s: the model would sample "
                    "ids nothing decodes; leave it out (the data set's) or give at most %d",
                    s->gpt.vocab_size, have, bytes ? "bytes (text read as bytes)" : "tokens (dataset.vocab_size)", have);
    return 0;
}

/* Gradient compression is wired into ssgd's all-reduce (worker/algo_ssgd.c), the model
 * averages of local-sgd and hier-bsp (worker/algo_local_sgd.c), hpsgd's rounds
 * (worker/algo_hpsgd.c) and, bf16 only, the parameter-server family's pushes
 * (worker/ps.c: PowerSGD's Q must be the same on every rank, which pushes applied one
 * at a time never agree on): the other algorithms, and the goodput planner (whose noise
 * scale needs the uncompressed gradients' norms), are refused rather than run
 * uncompressed in silence. hpsgd has no warm-up: its ranks start a round at different
 * steps, so no step count tells them alike whether a round is compressed. */
static int cross_check_compression(errbuf_t *e, const job_spec_t *s)
{
    const char *kind = s->algorithm.compression.kind, *a = s->algorithm.name;
    if (strcmp(kind, "none") == 0) return 0;
    if (spec_is_async(s) && strcmp(kind, "bf16") != 0)
        return fail(e,
                    "algorithm.compression.kind: %s needs one Q shared by all ranks, which the asynchronous "
                    "pushes of %s do not have; use bf16 (each worker keeps its own error feedback) or none",
                    kind, a);
    if (!spec_is_async(s) && strcmp(a, "ssgd") != 0 && strcmp(a, "local-sgd") != 0 && strcmp(a, "hier-bsp") != 0 &&
        strcmp(a, "hpsgd") != 0)
        return fail(e,
                    "algorithm.compression.kind: %s is implemented for ssgd, local-sgd, hier-bsp, hpsgd and (bf16) "
                    "the parameter-server family only (algorithm.name is %s); use one of them or kind none",
                    kind, a);
    if (strcmp(a, "hpsgd") == 0 && s->algorithm.compression.warmup_steps > 0)
        return fail(e, "algorithm.compression.warmup_steps: hpsgd has no warm-up (its ranks start a round at "
                       "different steps); set 0");
    const int probe = s->algorithm.compression.probe_steps, warm = s->algorithm.compression.warmup_steps;
    if (s->algorithm.compression.min_gain > 0 && strcmp(kind, "powersgd") != 0)
        return fail(e, "algorithm.compression.min_gain: the measured choice is powersgd's (kind is %s); set 0", kind);
    if (s->algorithm.compression.min_gain > 0 && warm < probe)
        return fail(e,
                    "algorithm.compression.min_gain: the probe times the warm-up's last probe_steps (%d) plain "
                    "steps, and warmup_steps is %d: set warmup_steps to at least %d, or probe_steps lower",
                    probe, warm, probe);
    if (s->algorithm.goodput)
        return fail(e,
                    "algorithm.compression.kind: %s does not work with algorithm.goodput (the noise scale "
                    "needs the uncompressed gradients); set one of them",
                    kind);
    return 0;
}

/* min_workers and max_workers, the elastic bounds around workers (the coordinator's
 * --policy hetero starts, shrinks and grows a job within them: run.c spec_worlds, policy_hjob_bounds).
 * min_workers has no algorithm rule: every job already shrinks to one worker on lost hosts.
 * max_workers: a job grown past workers keeps its global batch (workers x batch_size),
 * split over more ranks (worker/train.c worker_setup_world). That generalises where the
 * ranks already share it after an elastic shrink and every rank is a peer: ssgd,
 * hier-bsp, hpsgd, local-sgd. sgd is one process; the parameter-server family's world
 * (workers + 1, staleness bounds, nsoftsync's n) and a simulated job's per-worker host
 * list are sized by workers, so they do not grow. */
static int cross_check_growth(errbuf_t *e, const job_spec_t *s)
{
    static const char *const GROWS[] = {"ssgd", "hier-bsp", "hpsgd", "local-sgd", NULL};
    if (s->min_workers > s->workers)
        return fail(e, "min_workers: must be <= workers (%d), is %d", s->workers, s->min_workers);
    if (s->max_workers < s->workers)
        return fail(e, "max_workers: must be >= workers (%d), is %d", s->workers, s->max_workers);
    if (s->max_workers == s->workers) return 0;
    if (!in_list(s->algorithm.name, GROWS))
        return fail(e,
                    "max_workers: algorithm %s does not grow past its workers (only ssgd, hier-bsp, hpsgd and "
                    "local-sgd do); leave max_workers out or set it to workers (%d)",
                    s->algorithm.name, s->workers);
    if (s->simulate.enabled)
        return fail(e, "max_workers: a simulated job (simulate.enabled) runs on its workers (%d); leave max_workers out",
                    s->workers);
    /* Each rank takes at least one sample of the global batch (algorithm.min_batch when
     * given: the planner's smallest batch). */
    long global = (long)s->workers * s->batch_size;
    long least = s->algorithm.min_batch > 0 ? s->algorithm.min_batch : 1;
    if ((long)s->max_workers * least > global)
        return fail(e,
                    "max_workers: %d ranks cannot share the global batch of %ld (workers x batch_size) with at "
                    "least %ld sample%s each; at most %ld",
                    s->max_workers, global, least, least == 1 ? "" : "s", global / least);
    return 0;
}

/* sync_batchnorm: one all-reduce per batch norm in every step's forward and backward, which
 * every rank must call in step: the algorithms whose ranks all take every step together
 * (ssgd; sgd, one process, has nothing to synchronise), and never a rank the goodput
 * planner leaves out of a step. The CUDA path has no synchronised batch norm: device cuda
 * is refused, auto computes on the CPU (worker/train.c select_device). */
static int cross_check_sync_bn(errbuf_t *e, const job_spec_t *s)
{
    if (!s->sync_batchnorm) return 0;
    const char *alg = s->algorithm.name;
    if (strcmp(alg, "ssgd") != 0 && strcmp(alg, "sgd") != 0)
        return fail(e,
                    "sync_batchnorm: only ssgd (or sgd, one process) has every rank take every step together, "
                    "which the batch norms' all-reduces need; algorithm.name is %s: use ssgd, or leave "
                    "sync_batchnorm false",
                    alg);
    if (s->algorithm.goodput)
        return fail(e, "sync_batchnorm: the goodput planner may leave a rank out of a step, which then takes no "
                       "part in the batch norms' all-reduce; set one of sync_batchnorm and algorithm.goodput");
    if (strcmp(s->device, "cuda") == 0)
        return fail(e, "sync_batchnorm: implemented on CPU ranks only (device cuda has no synchronised batch "
                       "norm); use device cpu or auto (which then computes on the CPU)");
    return 0;
}

/* precision bf16: the CPU's products only so far; device cuda is refused, auto computes on
 * the CPU (worker/train.c select_device). */
static int cross_check_precision(errbuf_t *e, const job_spec_t *s)
{
    if (strcmp(s->precision, "bf16") == 0 && strcmp(s->device, "cuda") == 0)
        return fail(e, "precision bf16: implemented on CPU ranks only (the CUDA products are float32); use "
                       "device cpu or auto (which then computes on the CPU), or precision fp32");
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
    if (!json_is_array(v)) return fail(e, "%s: must be \"even\", \"memory\" or an array of weights", where);
    size_t n = json_array_size(v);
    if (n == 0) return fail(e, "%s: an empty list (give one weight per worker)", where);
    if (n > SPEC_MAX_WORKERS) return fail(e, "%s: at most %d entries, has %zu", where, SPEC_MAX_WORKERS, n);
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        double x = json_is_number(item) ? json_number_value(item) : NAN;
        if (!(x > 0 && x <= MAX_SHARD_WEIGHT))
            return fail(e, "%s[%zu]: must be a number > 0 and <= 1e12 (a rank's share is its weight over the sum)",
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
    if (freeze_parse(v, ((job_spec_t *)base)->freeze, why, sizeof why) != 0) return fail(e, "%s: %s", where, why);
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
        return fail(e, "%s: an empty list; give at least one glob of the products to adapt", where);
    if (freeze_parse(v, ((job_spec_t *)base)->lora.targets, why, sizeof why) != 0) return fail(e, "%s: %s", where, why);
    return 0;
}

static json_t *lora_targets_json(const field_t *f, const unsigned char *base, int *prec)
{
    (void)f, (void)prec;
    return freeze_json(((const job_spec_t *)base)->lora.targets);
}

/* lora's other fields say how to adapt what lora.targets names: without targets they would
 * be silently unused. */
static int cross_check_lora(errbuf_t *e, const job_spec_t *s)
{
    if (s->lora.targets[0]) return 0;
    if (s->lora.rank != 8 || s->lora.alpha != 8 || s->lora.dropout != 0 || strcmp(s->lora.export_, "merged") != 0)
        return fail(e, "lora: lora.targets is missing (the globs of the matrix products' weights to adapt)");
    return 0;
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

/* algorithm.shard: the sharded update is ssgd's (worker/shard.h). What does not work on a
 * rank's range of the gradient is refused by name rather than run unsharded: compression
 * (PowerSGD's factors and bf16's error feedback span whole tensors of the full gradient),
 * the device optimizer (it updates the whole buffer), a simulation (pacer-sim's cost model
 * has no reduce-scatter) and an explicit list of weights whose length is not workers (an
 * elastic restart on another world splits evenly instead: worker/shard.c says so). */
static int cross_check_shard(errbuf_t *e, const job_spec_t *s)
{
    const int stage = s->algorithm.shard.stage, nw = s->algorithm.shard.nweights;
    if (stage == 0) {
        if (nw > 0 || strcmp(s->algorithm.shard.split, "even") != 0)
            return fail(e, "algorithm.shard.split: only with algorithm.shard.stage 1 or 2 (stage is 0: no sharding)");
        return 0;
    }
    if (strcmp(s->algorithm.name, "ssgd") != 0)
        return fail(e,
                    "algorithm.shard: implemented for ssgd only (algorithm.name is %s: its ranks do not apply one "
                    "update to one gradient together); use ssgd, or leave algorithm.shard out",
                    s->algorithm.name);
    if (strcmp(s->algorithm.compression.kind, "none") != 0)
        return fail(e,
                    "algorithm.shard: does not work with algorithm.compression.kind %s (its error feedback and "
                    "factors span whole tensors of the full gradient); set kind none or leave algorithm.shard out",
                    s->algorithm.compression.kind);
    if (strcmp(s->device, "cuda") == 0)
        return fail(e, "algorithm.shard: implemented on CPU ranks only (the device optimizer updates the whole "
                       "buffer); use device cpu or auto (which then computes on the CPU)");
    if (s->simulate.enabled)
        return fail(e, "algorithm.shard: not simulated (pacer-sim's cost model has no reduce-scatter); leave "
                       "simulate.enabled false or algorithm.shard out");
    if (nw > 0 && nw != s->workers)
        return fail(e, "algorithm.shard.split: has %d weights, workers is %d (one weight per worker)", nw, s->workers);
    return 0;
}

/* Rules between fields, checked once every field has its value. */
static int cross_check(errbuf_t *e, const job_spec_t *s)
{
    const char *alg = s->algorithm.name;
    char num[32];

    if (cross_check_dataset(e, s) < 0) return -1;
    if (cross_check_tokenizer(e, s) < 0) return -1;
    if (cross_check_catalog(e, s) < 0) return -1;
    if (cross_check_gpt(e, s) < 0) return -1;
    if (cross_check_lora(e, s) < 0) return -1;
    if (s->eval_sample[0] && (!spec_model_is_gpt(s) || !spec_dataset_is_text(s)))
        return fail(e,
                    "eval_sample: only for the built-in GPT (\"model\": {\"gpt\": {...}}) on dataset.format text or "
                    "tokens, not model %s on %s",
                    s->model, spec_dataset_format(s));

    if (strcmp(alg, "sgd") == 0 && s->workers != 1)
        return fail(e, "algorithm.name: sgd is single-process; use ssgd for workers > 1");
    if (strcmp(alg, "nsoftsync") == 0 && (s->algorithm.n < 1 || s->algorithm.n > s->workers))
        return fail(e, "algorithm.n: must be between 1 and workers (%d)", s->workers);
    /* DDC-ASGD's momentum rule (ALGORITHMS.md section 5) adapts mu per update and has no
     * Nesterov form; clip_norm it honours (worker/algo_ddc_asgd.c). */
    if (strcmp(alg, "ddc-asgd") == 0 && s->optimizer.nesterov)
        return fail(e, "optimizer.nesterov: ddc-asgd's delay-adapted momentum has no Nesterov form; "
                       "set it to false or choose another algorithm");
    if (strcmp(alg, "hier-bsp") == 0 && s->algorithm.group_size > s->workers)
        return fail(e, "algorithm.group_size: must be <= workers (%d)", s->workers);
    if (s->algorithm.min_batch > 0 && s->algorithm.max_batch > 0 && s->algorithm.min_batch > s->algorithm.max_batch)
        return fail(e, "algorithm.min_batch: must be <= algorithm.max_batch (%d)", s->algorithm.max_batch);
    /* Every worker starts at batch_size: the bounds must hold it (common/planner.h). */
    if (s->algorithm.min_batch > s->batch_size)
        return fail(e, "algorithm.min_batch: must be <= batch_size (%d)", s->batch_size);
    if (s->algorithm.max_batch > 0 && s->algorithm.max_batch < s->batch_size)
        return fail(e, "algorithm.max_batch: must be >= batch_size (%d)", s->batch_size);

    if (s->algorithm.goodput) {
        if (strcmp(alg, "ssgd") != 0)
            return fail(e,
                        "algorithm.goodput: only for ssgd (the other algorithms report the noise scale but do "
                        "not plan by it), algorithm.name is %s",
                        alg);
        if (s->workers < 2)
            return fail(e, "algorithm.goodput: needs workers >= 2 (the noise scale is measured between the "
                           "workers' gradients)");
        if (s->algorithm.dynamic_batch)
            return fail(e, "algorithm.dynamic_batch: the goodput planner splits the batches itself; set one of "
                           "dynamic_batch and goodput");
    } else if (s->algorithm.max_global_batch > 0) {
        return fail(e, "algorithm.max_global_batch: only with algorithm.goodput");
    }
    if (s->algorithm.max_global_batch > 0 && s->algorithm.max_global_batch < (long)s->workers * s->batch_size)
        return fail(e, "algorithm.max_global_batch: must be >= workers x batch_size (%ld)",
                    (long)s->workers * s->batch_size);

    if (cross_check_compression(e, s) < 0) return -1;
    if (cross_check_growth(e, s) < 0) return -1;
    if (cross_check_sync_bn(e, s) < 0) return -1;
    if (cross_check_precision(e, s) < 0) return -1;
    if (cross_check_shard(e, s) < 0) return -1;

    if (s->optimizer.nbetas != 0 && s->optimizer.nbetas != 2)
        return fail(e, "optimizer.betas: must be [b1, b2], has %d entries", s->optimizer.nbetas);
    /* The parameter server applies AdamW through worker_apply_gradient as a synchronous
     * rank does (its moments and step count are the server's, checkpointed), except in
     * ddc-asgd, whose update is its own staleness-damped momentum rule (ddc_step). */
    if (spec_is_adamw(s) && strcmp(alg, "ddc-asgd") == 0)
        return fail(e, "optimizer.kind: adamw is not applied by ddc-asgd, whose update is its own momentum rule; use "
                       "asgd, dc-asgd, nsoftsync, dbs-sgd or a synchronous algorithm, or optimizer.kind sgd");

    if (strcmp(s->optimizer.lr_schedule.kind, "cosine") == 0 && s->optimizer.lr_schedule.min_lr > s->optimizer.lr)
        return fail(e, "optimizer.lr_schedule.min_lr: must be <= optimizer.lr (%s)", fmt_num(num, s->optimizer.lr));

    if (s->emulate.nslowdown > 0 && s->emulate.nslowdown != s->workers)
        return fail(e, "emulate.slowdown: has %d entries, workers is %d", s->emulate.nslowdown, s->workers);
    for (int i = 0; i < s->emulate.nschedule; i++) {
        const spec_slowdown_change_t *c = &s->emulate.schedule[i];
        if (c->rank >= s->workers) return fail(e, "emulate.schedule[%d].rank: must be < workers (%d)", i, s->workers);
        /* The worker applies changes in one forward pass over the list. */
        if (i > 0 && c->step < s->emulate.schedule[i - 1].step)
            return fail(e, "emulate.schedule[%d].step: must be >= the previous entry's step (%ld)", i,
                        s->emulate.schedule[i - 1].step);
    }
    return cross_check_simulate(e, s);
}

int spec_parse(const char *json_text, job_spec_t *out, char *err, size_t errlen)
{
    errbuf_t e = {err, errlen};
    if (!json_text) return fail(&e, "spec: no text");

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
    return fail(&e, "spec: invalid JSON at line %d column %d: %s", jerr->line, jerr->column, jerr->text);
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
        fail(&e, "spec: must be a JSON object");
        goto done;
    }
    if (walk_object(&e, root, FIELDS, ARRAY_LEN(FIELDS), "", "", 0, (unsigned char *)&s, seen) < 0) goto done;
    for (size_t i = 0; i < ARRAY_LEN(FIELDS); i++) {
        if (FIELDS[i].required && !seen[i]) {
            fail(&e, "%s: required", FIELDS[i].path);
            goto done;
        }
    }
    resolve(&s);
    if (resolve_model(&e, &s) < 0) goto done;
    if (resolve_dataset(&e, &s) < 0) goto done;
    if (resolve_tokenizer(&e, &s) < 0) goto done;
    if (cross_check(&e, &s) < 0) goto done;
    memcpy(out, &s, sizeof s);
    rc = 0;
done:
    return rc;
}

int spec_load_file(const char *path, job_spec_t *out, char *err, size_t errlen)
{
    errbuf_t e = {err, errlen};
    FILE *f = fopen(path, "rb");
    if (!f) return fail(&e, "%s: %s", path, strerror(errno));
    char *text = malloc(SPEC_FILE_MAX + 1);
    if (!text) {
        fclose(f);
        return fail(&e, "%s: out of memory", path);
    }
    size_t n = fread(text, 1, SPEC_FILE_MAX + 1, f);
    int read_error = ferror(f);
    fclose(f);
    int rc = -1;
    if (read_error) {
        fail(&e, "%s: read error", path);
    } else if (n > SPEC_FILE_MAX) {
        fail(&e, "%s: larger than %d bytes, not a job spec", path, SPEC_FILE_MAX);
    } else if (memchr(text, '\0', n)) {
        fail(&e, "%s: contains a NUL byte, not a job spec", path);
    } else {
        text[n] = '\0';
        char msg[512];
        rc = spec_parse(text, out, msg, sizeof msg);
        if (rc < 0) fail(&e, "%s: %s", path, msg);
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

int spec_is_async(const job_spec_t *s) { return in_list(s->algorithm.name, ASYNC_ALGORITHMS); }

int spec_max_workers(const job_spec_t *s) { return s->max_workers > s->workers ? s->max_workers : s->workers; }

/* The fewest training ranks the job may start on or shrink to: min_workers, 1 when not
 * given (0 in a spec built by hand), never more than workers. */
static int spec_min_workers(const job_spec_t *s)
{
    return s->min_workers < 1 ? 1 : s->min_workers > s->workers ? s->workers : s->min_workers;
}

void spec_worlds(const job_spec_t *s, int *full, int *least, int *most)
{
    const int ps = spec_is_async(s) ? 1 : 0;
    *full = s->workers + ps;
    *least = spec_min_workers(s) + ps;
    *most = ps ? *full : spec_max_workers(s);
}

int spec_is_adamw(const job_spec_t *s) { return strcmp(s->optimizer.kind, "adamw") == 0; }

void spec_adamw_betas(const job_spec_t *s, double *beta1, double *beta2)
{
    const int given = s->optimizer.nbetas == 2;
    *beta1 = given ? s->optimizer.betas[0] : 0.9;
    *beta2 = given ? s->optimizer.betas[1] : 0.999;
}

int spec_no_decay(const job_spec_t *s)
{
    if (strcmp(s->optimizer.no_decay, "default") == 0) return spec_is_adamw(s);
    return strcmp(s->optimizer.no_decay, "auto") == 0;
}

int spec_warnings(const job_spec_t *s, char warn[][SPEC_WARNING_MAX], int max)
{
    int n = 0;
    /* Hard-sync n-softsync (n = 1) waits for every worker: no staleness, no implicit
     * momentum. */
    int stale = spec_is_async(s) && !(strcmp(s->algorithm.name, "nsoftsync") == 0 && s->algorithm.n <= 1);
    if (n < max && stale && strcmp(s->optimizer.async_momentum, "explicit") == 0 &&
        s->optimizer.momentum >= SPEC_WARN_ASYNC_MOMENTUM && s->workers >= SPEC_WARN_ASYNC_WORKERS) {
        char m[32];
        snprintf(warn[n++], SPEC_WARNING_MAX,
                 "optimizer.momentum %s with %s on %d workers and optimizer.async_momentum \"explicit\" is known to "
                 "collapse: asynchrony adds momentum of its own (about 1 - 1/N = %.2f for N = %d workers, Mitliagkas "
                 "et al. 2016), so the total is well past what was asked (docs/RESULTS.md, \"Asynchronous "
                 "momentum\"); set optimizer.async_momentum to \"compensated\" or lower the momentum",
                 fmt_num(m, s->optimizer.momentum), s->algorithm.name, s->workers, 1.0 - 1.0 / s->workers, s->workers);
    }
    return n;
}

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
        else snprintf(def, sizeof def, "%s", fmt_num(num, f->def_num));

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

void spec_profile_device(const job_spec_t *s, const char *device, char *out, size_t len)
{
    if (strcmp(s->precision, "bf16") == 0 && strcmp(device, "cpu") == 0) snprintf(out, len, "%s-bf16", device);
    else snprintf(out, len, "%s", device);
}

double spec_sim_host_flops(const job_spec_t *s)
{
    const int bf16 = strcmp(s->precision, "bf16") == 0 && s->simulate.bf16_gflops > 0;
    return (bf16 ? s->simulate.bf16_gflops : s->simulate.gflops) * 1e9;
}
