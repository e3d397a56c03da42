/* common/spec.h - the job spec: one JSON document that describes a training job.
 *
 * Shared by pacer-worker (which trains it) and pacer-coordinator / the REST API (which
 * validate it before accepting a job). Validation is table-driven: every field is a row
 * of one static table in spec.c giving its path, type, bounds and default; the same
 * table prints docs (spec_print_fields) so docs/JOB_SPEC.md cannot drift from the code.
 *
 * Errors name the field: "optimizer.lr: must be > 0", "batch_sise: unknown field".
 */
#ifndef PACER_SPEC_H
#define PACER_SPEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define SPEC_NAME_MAX 64
#define SPEC_PATH_MAX 512
#define SPEC_EVAL_SAMPLE_MAX 256        /* eval_sample: bytes with the NUL */
#define SPEC_EVAL_SAMPLE_TOKENS_MAX 256 /* eval_sample_tokens */
#define SPEC_MAX_WORKERS 256
#define SPEC_MAX_SCHEDULE 64
#define SPEC_MAX_CHANNELS 3     /* dataset.mean / dataset.std entries */
#define SPEC_LORA_MAX_RANK 4096 /* lora.rank: model/lora.h's LORA_MAX_RANK */

typedef struct {
    long step;       /* from this global step on ... */
    int rank;        /* ... this rank ... */
    double slowdown; /* ... runs this many times slower (>= 1) */
} spec_slowdown_change_t;

typedef struct {
    char name[SPEC_NAME_MAX];  /* job name, default "job" */
    char model[SPEC_NAME_MAX]; /* a model of the catalog (common/catalog.h) */
    /* "model": {"onnx": PATH}: the ONNX file the model is imported from ("" = a catalog
     * model by name). model is then the file's base name (spec_onnx_name), the catalog
     * entry the spec's ONNX loader added (spec_set_onnx_loader). */
    char model_onnx[SPEC_PATH_MAX];
    /* "model": {"onnx": NAME, "sha256": HEX}: the content hash of an uploaded model
     * (PUT /api/v1/models/{name}; "" = none). The coordinator fills it in when a spec
     * names an uploaded model; the worker then reads NAME's bytes by it (its
     * --models-dir, else Redis) and checks them against it. */
    char model_sha256[65];
    /* "model": {"gpt": {...}}: the built-in language model (model/gpt.h); layers 0 = none.
     * model is then "gpt". block_size and vocab_size 0 = the data set's. */
    struct {
        int layers, heads, embd, block_size, vocab_size;
        double dropout;
        int bias, tie_embeddings;
    } gpt;
    struct {
        char name[SPEC_NAME_MAX]; /* a data set of the catalog */
        char path[SPEC_PATH_MAX]; /* "" = the data set's default directory */
        int train_subset;         /* 0 = all; else the first N training samples */
        int test_subset;          /* 0 = all */
        int augment;              /* random crop + flip */
        int crop_padding;         /* augmentation: pixels of padding around the crop */
        int hflip;                /* augmentation: mirror with probability 1/2 */
        char format[16];          /* auto | idx | cifar | imagefolder | npz */
        double resize[2];         /* [H, W]; nresize 0 = no resizing */
        int nresize;
        double mean[SPEC_MAX_CHANNELS]; /* nmean 0 = the data set's own; 1 = every channel */
        int nmean;
        double std[SPEC_MAX_CHANNELS];
        int nstd;
        char layout[8];                /* npz 4-D x arrays: nhwc | nchw */
        char cache_dir[SPEC_PATH_MAX]; /* decoded cache; "" = the worker's --data-cache */
        int block_size;                /* text, tokens: tokens per window; 0 = the model's */
        int vocab_size;                /* tokens: ids are below it; text: 0 (bytes, 256) */
        char tokenizer[16];            /* text: bytes | chars | bpe (common/tokenizer.h) */
        /* "tokenizer": {"kind": "bpe", "vocab": PATH, "merges": PATH} or {..., "file": PATH}:
         * kind is "" for the string form */
        char tokenizer_kind[8];
        char tokenizer_vocab[SPEC_PATH_MAX];  /* vocab.json */
        char tokenizer_merges[SPEC_PATH_MAX]; /* merges.txt */
        char tokenizer_file[SPEC_PATH_MAX];   /* a Hugging Face tokenizer.json */
    } dataset;
    struct {
        char name[SPEC_NAME_MAX]; /* sgd (single process) | ssgd | hier-bsp |
                                                 hpsgd | local-sgd | asgd | nsoftsync |
                                                 dc-asgd | ddc-asgd | dbs-sgd */
        int dynamic_batch;        /* planner on (dbs-sgd forces it) */
        int replan_steps;         /* re-plan period, steps */
        int min_batch, max_batch; /* planner bounds; 0 = derived */
        int k_steps;              /* hier-bsp averaging period */
        int group_size;           /* hier-bsp; 0 = ranks of one host */
        int local_steps;          /* local-sgd H */
        int n;                    /* nsoftsync split */
        char dc_variant[8];       /* dc-asgd: "c" | "a" */
        double lambda0;           /* dc-asgd / ddc-asgd */
        double dc_m;              /* dc-asgd-a MS decay, 0.95 */
        double kappa, gamma;      /* ddc-asgd */
        double eps;               /* dc/ddc epsilon, 1e-7 */
        int tau_max;              /* drop gradients staler than this; 0 = off */
        int goodput;              /* the goodput planner (common/goodput.h) */
        char goodput_model[8];    /* "nodes" | "equal" */
        int max_global_batch;     /* goodput: largest global batch; 0 = derived */
        /* Gradient compression of the synchronous all-reduce (worker/compress.h). */
        struct {
            char kind[16];    /* none | bf16 | powersgd */
            int rank;         /* powersgd: the factors' rank r */
            int warmup_steps; /* powersgd: plain all-reduce steps first */
            double min_gain;  /* powersgd: > 0 keeps it only if it saves this much of a step */
            int probe_steps;  /* ... timed on each side of the warm-up's end */
        } compression;
        /* Sharding of ssgd's optimizer state (stage 1) and gradient (stage 2) over the
         * ranks (worker/shard.h); stage 0 = off. split: "even", "memory" (each rank's
         * share of its host's available memory) or "weights" (the spec gave split as a
         * list: weights[nweights], one per worker). */
        struct {
            int stage;
            char split[16];
            double weights[SPEC_MAX_WORKERS];
            int nweights;
        } shard;
    } algorithm;
    struct {
        char kind[8]; /* sgd | adamw */
        double lr;
        double momentum;
        int nesterov;
        double weight_decay;
        double clip_norm; /* 0 = no clipping */
        /* adamw: the moments' decay rates; nbetas 0 = (0.9, 0.999), spec_adamw_betas */
        double betas[2];
        int nbetas;
        double eps; /* adamw: added to the second moment's square root */
        /* default | auto | none: the tensors without weight decay (spec_no_decay) */
        char no_decay[8];
        /* explicit | compensated: the parameter-server family's momentum (worker/ps.c) */
        char async_momentum[16];
        struct {
            char kind[16]; /* constant | step | cosine */
            double warmup_epochs;
            double step_epochs; /* step: decay period in epochs */
            double gamma;       /* step: decay factor */
            double min_lr;      /* cosine floor */
        } lr_schedule;
    } optimizer;
    struct {
        double label_smoothing; /* the cross-entropy's, PyTorch's definition */
    } loss;
    int batch_size; /* per worker */
    int epochs;
    int workers;
    /* The most ranks it may grow to onto idle slots (>= workers; = workers when not
     * given): they share the global batch of workers x batch_size. */
    int max_workers;
    /* The fewest it may be started on or shrunk to (1..workers; 1 when not given): elastic
     * for the scheduler when below workers or max_workers is above them. */
    int min_workers;
    char device[8]; /* auto | cpu | cuda */
    /* fp32 | bf16: the matrix products' operands (kernels/cpu/matmul.h); fp32 weights,
     * optimizer state and every other operation either way */
    char precision[8];
    unsigned long seed;
    int threads; /* CPU kernel threads per rank (kernels/cpu/parallel.h); default 1 */
    /* Batch norms normalise by the whole global batch's statistics, all-reduced over the
     * ranks each step (PyTorch's SyncBatchNorm); 0 = each rank's own batch (default) */
    int sync_batchnorm;
    struct {
        long every_steps;        /* 0 = no periodic checkpoints */
        char dir[SPEC_PATH_MAX]; /* default "checkpoints" */
        int keep_last;           /* checkpoints kept, newest first; default 1 (common/ckptdir.h) */
        int keep_best;           /* also keep the best by test accuracy; checkpoint at epoch ends */
    } checkpoint;
    struct {
        double slowdown[SPEC_MAX_WORKERS]; /* per rank, >= 1; default all 1 */
        int nslowdown;                     /* 0 when not given */
        spec_slowdown_change_t schedule[SPEC_MAX_SCHEDULE];
        int nschedule;
    } emulate;
    /* Read only by build/pacer-sim and the simulated worker (sim/, docs/ARCHITECTURE.md
     * "Simulation"); a real run ignores this section. */
    struct {
        int enabled;                                   /* the coordinator runs it with pacer-sim */
        char platform[SPEC_PATH_MAX];                  /* SimGrid platform file; "" = generated */
        char hostfile[SPEC_PATH_MAX];                  /* worker hosts of that file; "" = its <host>s */
        double slowdown[SPEC_MAX_WORKERS];             /* per worker, >= 1: host speed gflops / f */
        int nslowdown;                                 /* 0 when not given (all 1) */
        double gflops;                                 /* speed of a slowdown-1 host, Gflop/s */
        double bf16_gflops;                            /* ... at precision bf16; 0 = gflops */
        double bandwidth_gbps, latency_us;             /* each node's link to the switch */
        int gpus_per_node;                             /* ranks per simulated node */
        double intra_bandwidth_gbps, intra_latency_us; /* between ranks of one node */
        int deterministic;                             /* charge compute by a cost model */
        int skip_compute;                              /* deterministic only: charge it, never run it */
        double jitter;                                 /* deterministic only: step cost x U[1-j, 1+j] */
    } simulate;
    double target_accuracy; /* 0 = off; stop at the first evaluation
                                                 that reaches it */
    long eval_every_steps;  /* also evaluate every N steps (PS: updates); 0 = off */
    /* A prompt rank 0 continues greedily at each evaluation, eval_sample_tokens long, its
     * text in the evaluation's record (worker/evalsample.h); "" = none. */
    char eval_sample[SPEC_EVAL_SAMPLE_MAX];
    int eval_sample_tokens;
    int log_every;        /* progress line period in steps */
    char on_collapse[16]; /* continue | fail | restart (worker/health.h) */
    char priority[8];     /* high | normal | low: the order of the queue under --policy fair */
    /* The weights a fresh run starts from (not their optimizer state, step or data
     * position; a resumed run ignores them): at most one source, "" = none
     * (worker/init_weights.h). */
    struct {
        char checkpoint[SPEC_PATH_MAX];  /* a pacer checkpoint of the same model */
        char safetensors[SPEC_PATH_MAX]; /* tensors matched by name and shape */
        char job[64];                    /* a coordinator's job: its latest weights */
        int strict;                      /* 1: every tensor matched, else refused by name */
    } init;
    /* Globs over parameter names whose tensors take no weight update, '\n'-separated
     * (common/freeze.h); "" = none. */
    char freeze[2048];
    /* Low-rank adapters on the matrix products whose weights targets names (model/lora.h):
     * targets '\n'-separated globs as freeze's, "" = none (no adapters, the other fields
     * unused). */
    struct {
        int rank;
        double alpha, dropout;
        char targets[2048];
        char export_[16]; /* merged | separate */
    } lora;
} job_spec_t;

/* Adds the model of the ONNX file at path to the catalog under name (a model of source
 * CATALOG_ONNX with every figure: model/onnx_import.c's onnx_import_catalog_add). With a
 * sha256 (model.sha256) path is an uploaded model's name and the loader finds its bytes
 * by that hash (the worker's: its --models-dir, else Redis). 0, or -1 with err saying
 * why (unreadable, not ONNX, an unsupported operator). */
typedef int (*spec_onnx_loader_fn)(const char *path, const char *name, const char *sha256, char *err, size_t errlen);
/* Who may read ONNX files named by a spec: the worker and the simulator set it before they
 * parse a spec, so that "model": {"onnx": PATH} is in the catalog before the model and
 * data set are paired (the pairing, the memory estimate and the classes check then read
 * the imported model's figures). Without a loader (the coordinator) such a spec is valid
 * only when the catalog already has the name. Process-wide; NULL removes it. */
void spec_set_onnx_loader(spec_onnx_loader_fn fn);
/* The catalog name of the model imported from path: its base name with every character a
 * catalog name cannot hold replaced by '_', cut to SPEC_NAME_MAX - 1 bytes ("cnn.onnx"
 * for "/data/nets/cnn.onnx"). Never a built-in name (those hold no '.'), unless the base
 * name has no '.', in which case ".onnx" is appended. */
void spec_onnx_name(const char *path, char *out, size_t len);

/* Fills every field with its default (the defaults of the table). */
void spec_defaults(job_spec_t *s);

/* Parses and validates a JSON text / file. On failure returns -1 and writes one line
 * into err naming the field and what is wrong. Cross-field rules checked here:
 * emulate.slowdown length == workers, schedule ranks < workers, dataset/model pairing
 * (image shape and classes, as the catalog has them: catalog_pair_check). Rules that
 * need the MPI world size are checked by the worker. */
int spec_parse(const char *json_text, job_spec_t *out, char *err, size_t errlen);
int spec_load_file(const char *path, job_spec_t *out, char *err, size_t errlen);
/* The same on a document the caller decoded (with JSON_REJECT_DUPLICATES: a repeated key
 * is an error, as in spec_parse), so that text is decoded once; root is not kept. */
int spec_from_json(json_t *root, job_spec_t *out, char *err, size_t errlen);
/* spec_parse's message for a text that did not decode (jerr from json_loads); returns -1. */
int spec_json_error(const json_error_t *jerr, char *err, size_t errlen);

/* Serialises the (normalised, defaults filled) spec as compact JSON; returns a
 * malloc'ed string the caller frees, or NULL on out-of-memory. */
char *spec_to_json(const job_spec_t *s);
/* The same, and (doc not NULL) the document it was printed from, which the caller owns:
 * equal to what decoding the text would give, without decoding it. */
char *spec_to_json_doc(const job_spec_t *s, json_t **doc);

/* A fingerprint of everything in the spec that shapes the training run: the normalised
 * spec without the fields a resumed run may change (resume_free: name, dataset.path, dataset.cache_dir,
 * model.onnx,
 * device, threads, log_every, checkpoint.every_steps, dir, keep_last, keep_best, eval_sample,
 * eval_sample_tokens, ...: the rows marked resume_free), keys sorted, FNV-1a
 * 64. Checkpoints carry it; a resume with a spec of another hash is refused. */
uint64_t spec_hash(const job_spec_t *s);

/* 1 when name is a valid job name (the "name" field's rule: 1-63 letters, digits, '.',
 * '_' and '-'): safe as a file name, never a path. For names read back from elsewhere. */
int spec_name_valid(const char *name);

/* The format the data set is read in: dataset.format, or for "auto" the catalog's format
 * of dataset.name ("idx" for mnist and fashion-mnist, "cifar" for cifar10). */
const char *spec_dataset_format(const job_spec_t *s);
/* 1 when the model is the built-in GPT ("model": {"gpt": {...}}). */
int spec_model_is_gpt(const job_spec_t *s);
/* 1 when the data set is text or tokens (a sample is a window of tokens). */
int spec_dataset_is_text(const job_spec_t *s);
/* 1 when the data set is a user's (format imagefolder or npz: read from dataset.path,
 * decoded and cached), 0 for a built-in one. */
int spec_dataset_is_user(const job_spec_t *s);

/* Whether the algorithm runs with a parameter server on rank 0 (world = workers + 1). */
int spec_is_async(const job_spec_t *s);
/* The most training ranks the job may run on: max_workers, never fewer than workers (a
 * spec built by hand may leave max_workers 0). */
int spec_max_workers(const job_spec_t *s);
/* The processes a job runs as (the parameter-server family adds its server): full, what it
 * asks (workers); least, the fewest it may start on or shrink to (spec_min_workers); most,
 * the most it may grow to (spec_max_workers; the parameter-server family never grows). One
 * home for the coordinator's bounds (queue, runs, launches) and the worker's check of the
 * world it was started as (comm_check_world). */
void spec_worlds(const job_spec_t *s, int *full, int *least, int *most);
/* The device of a job's node profiles (pacer:profile:{host}:{device}:{model}, docs/REDIS.md):
 * device itself, or "cpu-bf16" for a CPU rank of a precision bf16 job, whose products run
 * on other units at another speed than the fp32 profile's. */
void spec_profile_device(const job_spec_t *s, const char *device, char *out, size_t len);
/* A simulated slowdown-1 host's speed for s, flop/s: simulate.gflops, or at precision bf16
 * simulate.bf16_gflops when given (the products on the host's bf16 units). The same node
 * computes at another rate by precision, as its profiles (spec_profile_device) measure. */
double spec_sim_host_flops(const job_spec_t *s);

/* optimizer.kind is adamw. */
int spec_is_adamw(const job_spec_t *s);
/* optimizer.betas, or AdamW's defaults (0.9, 0.999) when the spec gives none. */
void spec_adamw_betas(const job_spec_t *s, double *beta1, double *beta2);
/* Whether biases and normalisation parameters go without weight decay: optimizer.no_decay
 * "auto", or "default" with adamw (sgd's default decays every tensor, as before). */
int spec_no_decay(const job_spec_t *s);

/* Combinations that are valid but known to train badly, each as one line into warn[i]
 * (at most max of them); returns how many. The coordinator returns them in the answer to
 * a submission and logs them; the worker prints them on stderr at start-up. Today one:
 * an asynchronous algorithm with optimizer.async_momentum "explicit", momentum >=
 * SPEC_WARN_ASYNC_MOMENTUM and workers >= SPEC_WARN_ASYNC_WORKERS, the combination that
 * collapsed in docs/RESULTS.md ("Asynchronous momentum"). */
#define SPEC_WARNING_MAX 512
#define SPEC_WARN_ASYNC_MOMENTUM 0.9
#define SPEC_WARN_ASYNC_WORKERS 3
int spec_warnings(const job_spec_t *s, char warn[][SPEC_WARNING_MAX], int max);

/* Prints the field table as a Markdown table (the generator for docs/JOB_SPEC.md). */
void spec_print_fields(FILE *f);

/* The i-th field path of that table, in its order ("optimizer.lr", and the element
 * fields of arrays of objects as "emulate.schedule[].rank"); NULL past the end. Lets
 * tests check that docs and other consumers cover every field. */
const char *spec_field_path(size_t i);

/* What the i-th row of that table accepts, for tests that walk every field (range
 * errors of every numeric field, say). numeric: integer, number, or array of numbers
 * (array: bounds then apply to each entry); integer: JSON integer literals only. Every numeric
 * field has both bounds. Returns 0, or -1 past the end. */
typedef struct {
    const char *path;
    int numeric, integer, array;
    int has_min, has_max, min_excl, max_excl;
    double min, max;
    int resume_free; /* left out of spec_hash */
} spec_field_info_t;
int spec_field_info(size_t i, spec_field_info_t *out);

#endif
