/* worker/train.c - set-up, resuming, the synchronous training loop around algo_step and
 * the summary: the top of worker/'s training room. What both loops share (the records,
 * collapse detection, checkpoints, the epoch end, the end-of-step policies) is in loop.c,
 * the step primitives the algorithms call in step.c. */
#include "train.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "adaptive.h"
#include "algo.h"
#include "backend_cuda.h"
#include "blas_core.h"
#include "conv_direct.h"
#include "checkpoint.h"
#include "ckptdir.h"
#include "fs.h"
#include "gpt.h"
#include "clock.h"
#include "compress.h"
#include "dcache.h"
#include "emulate.h"
#include "errmsg.h"
#include "evalsample.h"
#include "hash.h"
#include "hostname.h"
#include "init_weights.h"
#include "loop.h"
#include "memest.h"
#include "modelfetch.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "passert.h"
#include "planner.h"
#include "shard.h"
#include "sim.h"
#include "step.h"
#include "sigterm.h"
#include "textdata.h"

/* ---- set-up ------------------------------------------------------------------------------ */

static void hostname_once(char *out, size_t len)
{
    if (sim_host_name(out, len) == 0) return; /* a simulated rank: its simulated host */
    host_name(out, len);
}

/* device "cpu": the reference path. "cuda": GPU local_rank % device_count; a rank that
 * cannot use it fails with the reason, before training. "auto": the GPU when the probe
 * passes, else the CPU, after saying why on stderr and in the summary (per_rank[].device,
 * and the job's "device"). Ranks choose independently, so one job may mix GPU and CPU
 * ranks (the node profiles show each rank's device, and dynamic batching balances them).
 * The CUDA backend (model/backend_cuda.h) is a library loaded here, never for "cpu":
 * "cuda" loads it first (a library that cannot be loaded is the error); "auto" first asks
 * the driver, so a machine without a GPU maps no CUDA library. The probe tells "no driver",
 * "no device", "driver too old" and "no kernel image for this GPU" apart, and runs a
 * kernel on the device, so none of them surfaces as a failure in the first step. */
static int select_device(worker_t *w, char *err, size_t errlen)
{
    const char *dev = w->spec->device;
    snprintf(w->record.device, sizeof w->record.device, "cpu");
    w->device_reason[0] = '\0';
    if (strcmp(dev, "cpu") == 0) return 0;
    if (w->role == ROLE_PS) {
        snprintf(w->device_reason, sizeof w->device_reason, "the parameter server computes on the CPU");
        return 0;
    }
    /* The spec refuses cuda with it: only the CPU path synchronises batch norms. */
    if (w->spec->sync_batchnorm) {
        snprintf(w->device_reason, sizeof w->device_reason, "sync_batchnorm computes on the CPU");
        fprintf(stderr, "device auto: rank %d: %s; training on the CPU\n", w->rank, w->device_reason);
        return 0;
    }
    /* Likewise bf16 products (kernels/cpu/matmul.h): the CUDA backend's are float32. */
    if (strcmp(w->spec->precision, "bf16") == 0) {
        snprintf(w->device_reason, sizeof w->device_reason, "precision bf16 computes on the CPU");
        fprintf(stderr, "device auto: rank %d: %s; training on the CPU\n", w->rank, w->device_reason);
        return 0;
    }
    /* Likewise the sharded optimizer (worker/shard.h) runs on the host. */
    if (w->spec->algorithm.shard.stage > 0) {
        snprintf(w->device_reason, sizeof w->device_reason, "algorithm.shard updates on the CPU");
        fprintf(stderr, "device auto: rank %d: %s; training on the CPU\n", w->rank, w->device_reason);
        return 0;
    }
    const int want_cuda = strcmp(dev, "cuda") == 0;
    char why[sizeof w->device_reason];
    cuda_probe_t p;
    if (want_cuda && cuda_backend_load(why, sizeof why) != 0) goto fallback;
    if (cuda_probe(-1, &p) != CUDA_PROBE_OK) {
        snprintf(why, sizeof why, "%s", p.reason);
        goto fallback;
    }
    w->gpu = cuda_model_create(w->model, p.device, why, sizeof why);
    if (w->gpu && cuda_model_upload(w->gpu, w->model) != 0) snprintf(why, sizeof why, "%s", cuda_model_error(w->gpu));
    else if (w->gpu) {
        snprintf(w->record.device, sizeof w->record.device, "cuda");
        w->gpu_device = p.device;
        fprintf(stderr, "rank %d: training on GPU %d (%s)\n", w->rank, p.device, p.name);
        return 0;
    }
    cuda_model_free(w->gpu);
    w->gpu = NULL;
fallback:
    if (want_cuda) {
        snprintf(err, errlen, "device: cuda: %s", why);
        return -1;
    }
    snprintf(w->device_reason, sizeof w->device_reason, "%s", why);
    fprintf(stderr, "device auto: rank %d: %s; training on the CPU\n", w->rank, why);
    return 0;
}

/* Page-locks the host buffers every step copies to or from the device (the batch, params,
 * grads), so those copies are DMA from where the worker keeps them. Each is its own pages
 * (page_alloc, model_create's fused buffers). A buffer the driver will not lock stays
 * pageable: slower copies, same results. */
static void pin_host_buffers(worker_t *w)
{
    model_t *m = w->model;
    size_t img = (size_t)m->C * m->H * m->W;
    struct {
        void *p;
        size_t bytes;
    } bufs[] = {
        {w->x, (size_t)w->max_batch * img * sizeof(float)},
        {w->y, (size_t)w->max_batch * m->positions * sizeof(int32_t)},
        {m->params, m->nparams * sizeof(float)},
        {m->grads, (m->nparams + MODEL_GRAD_EXTRA) * sizeof(float)},
    };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (cuda_model_host_register(w->gpu, bufs[i].p, bufs[i].bytes) != 0)
            fprintf(stderr, "rank %d: %s; copies through it stay pageable\n", w->rank, cuda_model_error(w->gpu));
}

/* Whole pages of zeroes: a buffer that may be page-locked must not share a page with one
 * that is locked separately. */
static void *page_alloc(size_t bytes)
{
    const size_t page = 4096;
    size_t n = (bytes + page - 1) / page * page;
    void *p = aligned_alloc(page, n ? n : page);
    if (p) memset(p, 0, n ? n : page);
    return p;
}

int worker_setup(worker_t *w, const job_spec_t *spec, int rank, int world, char *err, size_t errlen)
{
    return worker_setup_world(w, spec, rank, world, spec->workers, err, errlen);
}

/* Bytes this process maps now (VmSize, what RLIMIT_AS counts); -1 if unknown. */
static double mapped_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    unsigned long long pages;
    int ok = f && fscanf(f, "%llu", &pages) == 1;
    if (f) fclose(f);
    return ok ? (double)pages * (double)sysconf(_SC_PAGESIZE) : -1;
}

int worker_check_memory(const job_spec_t *spec, int nworkers, int host_ranks, const worker_host_ranks_t *known,
                        char *err, size_t errlen)
{
    memest_t e, eh; /* one rank (this one, or a sharded job's largest), and the mean of the host's ranks */
    if (known) {
        if (memest_ranks(spec, nworkers, &known->rank, 1, known->mem, &e, err, errlen) != 0) return -1;
        if (memest_ranks(spec, nworkers, known->ids, host_ranks, known->mem, &eh, err, errlen) != 0) return -1;
    } else {
        if (memest_host_rank(spec, nworkers, 1, &e, err, errlen) != 0) return -1; /* never unchecked */
        if (memest_host_rank(spec, nworkers, host_ranks, &eh, err, errlen) != 0) return -1;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        double mapped = mapped_bytes(), limit = (double)rl.rlim_cur;
        if (mapped >= 0) {
            char where[128], a[32], b[32];
            snprintf(where, sizeof where,
                     "address space this process has left under RLIMIT_AS (ulimit -v %s, %s mapped)",
                     memest_fmt(limit, a, sizeof a), memest_fmt(mapped, b, sizeof b));
            if (memest_check(&e, 1, limit - mapped, where, err, errlen) != 0) return -1;
        }
    }
    double avail = memest_meminfo("MemAvailable");
    if (avail > 0) {
        char host[256], where[320];
        hostname_once(host, sizeof host);
        snprintf(where, sizeof where, "MemAvailable on %s (for its %d rank%s)", host, host_ranks,
                 host_ranks == 1 ? "" : "s");
        if (memest_check(&eh, host_ranks, avail, where, err, errlen) != 0) return -1;
    }
    return 0;
}

/* A built-in set whose images are not the model's shape is converted the way a user's
 * are (worker/dsload.h); its fixed statistics then no longer describe it, so they are
 * computed from the converted training split. */
static int convert_builtin(worker_t *w, int C, int H, int W, int resize, char *err, size_t errlen)
{
    dataset_t t[2];
    dataset_t *d[2] = {&w->train, &w->test};
    for (int s = 0; s < 2; s++) {
        int rc = dsload_convert(d[s], C, H, W, resize, &t[s], err, errlen);
        if (rc != DATA_OK) {
            if (s) dataset_free(&t[0]);
            return rc;
        }
    }
    for (int s = 0; s < 2; s++) {
        sim_dataset_free(d[s]); /* the loaded copy (a simulation's shared one stays shared) */
        *d[s] = t[s];
    }
    dsload_stats(&w->train);
    memcpy(w->test.mean, w->train.mean, sizeof w->test.mean);
    memcpy(w->test.std, w->train.std, sizeof w->test.std);
    return DATA_OK;
}

/* dataset.mean / dataset.std, when given, replace the data set's own figures. */
static int apply_normalisation(worker_t *w, const job_spec_t *spec, const char *model, int C, char *err, size_t errlen)
{
    const double *v[2] = {spec->dataset.mean, spec->dataset.std};
    const int n[2] = {spec->dataset.nmean, spec->dataset.nstd};
    static const char *const name[2] = {"dataset.mean", "dataset.std"};
    for (int k = 0; k < 2; k++) {
        if (n[k] == 0) continue;
        if (n[k] != 1 && n[k] != C) {
            snprintf(err, errlen, "%s: %d values, model %s takes %d channel%s: give 1 or %d", name[k], n[k], model, C,
                     C == 1 ? "" : "s", C);
            return DATA_EFORMAT;
        }
        for (int c = 0; c < C; c++) {
            float x = (float)v[k][n[k] == 1 ? 0 : c];
            if (k == 0) w->train.mean[c] = w->test.mean[c] = x;
            else w->train.std[c] = w->test.std[c] = x;
        }
    }
    return DATA_OK;
}

/* Loads the training and test sets in the model's shape (or dataset.resize's size), with
 * the statistics they are normalised by, and records what they are in w->data. m is the
 * model's catalog entry: a built-in's head is then sized to w->data.classes; a model of
 * its own width (head_in 0) must have as many outputs. */
/* The text's tokenizer beside the job's checkpoints (CHECKPOINT_DIR/NAME.tokenizer), written
 * by rank 0 before training, so that a process that generates from any checkpoint of this
 * job rebuilds the ids it was trained on (common/tokenizer.h). */
static int save_tokenizer(const worker_t *w, const job_spec_t *spec, const tokenizer_t *tok, char *err, size_t errlen)
{
    if (!tok || w->rank != 0) return DATA_OK;
    char path[SPEC_PATH_MAX + SPEC_NAME_MAX + 16], why[1024];
    if (tokenizer_path_for_job(path, sizeof path, spec->checkpoint.dir, spec->name) != 0)
        return errmsg_code(err, errlen, DATA_EFORMAT, "checkpoint.dir: %s: path too long", spec->checkpoint.dir);
    if (fs_mkdir_p(spec->checkpoint.dir, 0755) != 0)
        return errmsg_code(err, errlen, DATA_ENOENT, "checkpoint.dir: %s: %s", spec->checkpoint.dir, strerror(errno));
    if (tokenizer_save(tok, path, why, sizeof why) != 0)
        return errmsg_code(err, errlen, DATA_ENOENT, "the tokenizer: %s", why);
    return DATA_OK;
}

/* The tokenizer `pacer tokenize` left beside a token data set's shards
 * (DIR/tokens.tokenizer), into *tok: DATA_OK with NULL when there is none (shards from
 * elsewhere: their ids mean what the user says), or an error when it does not read back or
 * has more ids than dataset.vocab_size (the model could not embed them). */
static int tokens_tokenizer(const job_spec_t *spec, tokenizer_t **tok, char *err, size_t errlen)
{
    char path[SPEC_PATH_MAX + sizeof TOKENIZER_DATASET_FILE + 1], why[1024];
    *tok = NULL;
    snprintf(path, sizeof path, "%s/%s", spec->dataset.path, TOKENIZER_DATASET_FILE);
    if (access(path, F_OK) != 0) return DATA_OK;
    if (!(*tok = tokenizer_load(path, why, sizeof why)))
        return errmsg_code(err, errlen, DATA_EFORMAT, "dataset.path: the tokenizer %s", why);
    if (tokenizer_vocab_size(*tok) > spec->dataset.vocab_size) {
        const int n = tokenizer_vocab_size(*tok);
        tokenizer_free(*tok);
        *tok = NULL;
        return errmsg_code(err, errlen, DATA_EFORMAT,
                           "dataset.vocab_size %d is smaller than the vocabulary of %s (%d ids): it must be at least "
                           "%d",
                           spec->dataset.vocab_size, path, n, n);
    }
    return DATA_OK;
}

/* A text or token data set in windows of block tokens (its vocabulary into w->data.classes).
 * keep not NULL: the tokenizer (NULL for a token data set without one) is handed over there
 * instead of freed. */
static int load_text(worker_t *w, const job_spec_t *spec, int block, tokenizer_t **keep, char *err, size_t errlen)
{
    catalog_format_t f = CATALOG_FORMAT_N;
    catalog_format_parse(spec_dataset_format(spec), &f);
    tokenizer_t *tok = NULL;
    if (f == CATALOG_FORMAT_TEXT) {
        char why[1024];
        tok = tokenizer_for_dataset(spec->dataset.tokenizer, spec->dataset.path, spec->dataset.tokenizer_vocab,
                                    spec->dataset.tokenizer_merges, spec->dataset.tokenizer_file, why, sizeof why);
        if (!tok) return errmsg_code(err, errlen, DATA_EFORMAT, "dataset.tokenizer: %s", why);
    } else if (tokens_tokenizer(spec, &tok, err, errlen) != DATA_OK) {
        return DATA_EFORMAT;
    }
    char cache[SPEC_PATH_MAX];
    if (spec->dataset.cache_dir[0]) snprintf(cache, sizeof cache, "%s", spec->dataset.cache_dir);
    else dsload_default_cache_dir(cache, sizeof cache);
    const textdata_opts_t o = {.format = f,
                               .path = spec->dataset.path,
                               .block = block,
                               .vocab = spec->dataset.vocab_size,
                               .tokenizer = f == CATALOG_FORMAT_TEXT ? tok : NULL,
                               .cache_dir = cache,
                               .stop = sigterm_heard};
    snprintf(w->data_format, sizeof w->data_format, "%s", catalog_format_name(f));
    memset(&w->data, 0, sizeof w->data);
    int rc = textdata_load(&o, &w->train, &w->test, err, errlen);
    w->data.classes = textdata_vocab(&o);
    rc = rc == DATA_OK ? save_tokenizer(w, spec, tok, err, errlen) : rc;
    if (keep && rc == DATA_OK) *keep = tok;
    else tokenizer_free(tok);
    return rc;
}

/* An imported model reads token ids (its input goes only to embeddings: the importer lets
 * nothing else read integer ids) exactly when its data set is text or tokens, whose ids
 * dataset_check_shape bounds by the model's vocabulary (the importer's embeddings have at
 * least as many rows); the window is the model's input length. */
static int check_token_input(const model_t *m, const job_spec_t *spec, char *err, size_t errlen)
{
    int embeds = 0;
    for (int i = 0; i < m->nlayers; i++) embeds |= m->layers[i].in == -1 && m->layers[i].kind == LAYER_EMBED;
    if (embeds && !spec_dataset_is_text(spec))
        return errmsg_code(err, errlen, DATA_EFORMAT,
                           "model %s takes token ids: dataset.format must be text or tokens, not %s", m->name,
                           spec_dataset_format(spec));
    if (!embeds && spec_dataset_is_text(spec))
        return errmsg_code(err, errlen, DATA_EFORMAT,
                           "dataset.format %s: model %s does not take token ids (an int64 or int32 input read by an "
                           "embedding)",
                           spec_dataset_format(spec), m->name);
    if (embeds && spec->dataset.block_size && spec->dataset.block_size != m->C)
        return errmsg_code(err, errlen, DATA_EFORMAT, "dataset.block_size %d: model %s takes windows of %d tokens",
                           spec->dataset.block_size, m->name, m->C);
    return DATA_OK;
}

/* The built-in GPT on a text data set: the data first (the model's vocabulary and window
 * default to the data set's), then the model, initialised as GPT-2 from the seed. */
static int setup_gpt(worker_t *w, const job_spec_t *spec, char *err, size_t errlen)
{
    const int block = spec->gpt.block_size       ? spec->gpt.block_size
                      : spec->dataset.block_size ? spec->dataset.block_size
                                                 : 64;
    if (spec->gpt.block_size && spec->dataset.block_size && spec->gpt.block_size != spec->dataset.block_size) {
        snprintf(err, errlen, "dataset.block_size %d differs from model.gpt.block_size %d: give one, or both alike",
                 spec->dataset.block_size, spec->gpt.block_size);
        return -1;
    }
    /* eval_sample: rank 0 samples (a simulation that skips the compute has no weights to) */
    const int sample = spec->eval_sample[0] && w->rank == 0 && !sim_skip_compute(w);
    tokenizer_t *tok = NULL;
    int rc = load_text(w, spec, block, sample ? &tok : NULL, err, errlen);
    if (rc != DATA_OK) return rc;
    /* the spec and the coordinator refuse what they can know; a chars tokenizer's size is
     * known only now: no id the tokenizer lacks may be sampled */
    if (spec->gpt.vocab_size > w->data.classes) {
        tokenizer_free(tok);
        return errmsg_code(err, errlen, DATA_EFORMAT,
                           "model.gpt.vocab_size: %d, more than the %d ids of the data set's tokenizer: leave it out "
                           "(the tokenizer's) or give at most %d",
                           spec->gpt.vocab_size, w->data.classes, w->data.classes);
    }
    const model_gpt_t g = {.layers = spec->gpt.layers,
                           .heads = spec->gpt.heads,
                           .embd = spec->gpt.embd,
                           .block = block,
                           .vocab = spec->gpt.vocab_size ? spec->gpt.vocab_size : w->data.classes,
                           .dropout = (float)spec->gpt.dropout,
                           .bias = spec->gpt.bias,
                           .tie = spec->gpt.tie_embeddings};
    if (model_create_gpt(spec->model, &g, sim_model_batch(w), &w->model, err, errlen) != 0) {
        tokenizer_free(tok);
        return -1;
    }
    /* the generator runs the model's own graph: allocated once here, never in a step */
    return sample ? evalsample_open(spec, tok, w->model, &w->eval_sample, err, errlen) : 0;
}

/* An imported language model on a text data set: its windows are the model's input length;
 * its eval_sample runs the graph as the built-in GPT's does (the generator refuses, by
 * name, a graph that gives no logits per position). */
static int setup_imported_lm(worker_t *w, const job_spec_t *spec, char *err, size_t errlen)
{
    const int sample = spec->eval_sample[0] && w->rank == 0 && !sim_skip_compute(w);
    tokenizer_t *tok = NULL;
    const int rc = load_text(w, spec, w->model->C, sample ? &tok : NULL, err, errlen);
    if (rc != DATA_OK) return rc;
    return sample ? evalsample_open(spec, tok, w->model, &w->eval_sample, err, errlen) : 0;
}

/* Where a job's decoded data sets are cached: the spec's dataset.cache_dir (a
 * coordinator's --data-cache-dir), else the user's cache directory. */
static void data_cache_dir(const job_spec_t *spec, char *dir, size_t len)
{
    if (spec->dataset.cache_dir[0]) snprintf(dir, len, "%s", spec->dataset.cache_dir);
    else dsload_default_cache_dir(dir, len);
}

/* A catalog's built-in set, both splits. pacer-sim's ranks share one decoded copy in its
 * process; a worker maps the host's decoded cache. */
static int load_builtin(worker_t *w, const job_spec_t *spec, char *err, size_t errlen)
{
    const char *dir = spec->dataset.path[0] ? spec->dataset.path : NULL;
#ifdef PACER_SIM
    int rc = sim_dataset_load(spec->dataset.name, dir, 1, &w->train, err, errlen);
    if (rc == 0) rc = sim_dataset_load(spec->dataset.name, dir, 0, &w->test, err, errlen);
    return rc;
#else
    char cache[SPEC_PATH_MAX];
    data_cache_dir(spec, cache, sizeof cache);
    int rc = dsload_builtin(spec->dataset.name, dir, cache, &w->train, &w->test, &w->data, err, errlen);
    if (rc == 0 && w->rank == 0 && w->data.cache_note[0]) fprintf(stderr, "data: %s\n", w->data.cache_note);
    return rc;
#endif
}

static int load_data(worker_t *w, const job_spec_t *spec, const catalog_model_t *m, char *err, size_t errlen)
{
    const int resize = spec->dataset.nresize == 2;
    const int H = resize ? (int)spec->dataset.resize[0] : m->H, W = resize ? (int)spec->dataset.resize[1] : m->W;
    const char *fmt = spec_dataset_format(spec);
    int rc;
    snprintf(w->data_format, sizeof w->data_format, "%s", fmt);
    memset(&w->data, 0, sizeof w->data);
    if (spec_dataset_is_user(spec)) {
        char dir[SPEC_PATH_MAX];
        data_cache_dir(spec, dir, sizeof dir);
        catalog_format_t f = CATALOG_FORMAT_N; /* a valid spec's: dsload_user refuses anything else */
        catalog_format_parse(fmt, &f);
        const dsload_opts_t o = {.format = f,
                                 .path = spec->dataset.path,
                                 .layout = spec->dataset.layout,
                                 .C = m->C,
                                 .H = H,
                                 .W = W,
                                 .resize = resize,
                                 .cache_dir = dir,
                                 .train_max = spec->dataset.train_subset,
                                 .test_max = spec->dataset.test_subset};
        rc = dsload_user(&o, &w->train, &w->test, &w->data, err, errlen);
        if (rc != DATA_OK) return rc;
        if (w->rank == 0 && w->data.cache_note[0]) fprintf(stderr, "data: %s\n", w->data.cache_note);
        if (m->head_in == 0 && w->data.classes != m->classes) {
            snprintf(err, errlen, "%s: %d classes, model %s has %d outputs (one per class)", spec->dataset.path,
                     w->data.classes, m->name, m->classes);
            return DATA_ELABEL;
        }
    } else {
        rc = load_builtin(w, spec, err, errlen);
        if (rc != 0) return rc;
        /* Resized when asked, converted when only the channels differ; any other
         * mismatch is left to dataset_check_shape's message, which names both shapes. */
        int sized = w->train.H == H && w->train.W == W && w->test.H == H && w->test.W == W;
        int recolour = w->train.C != m->C || w->test.C != m->C;
        if ((resize && !sized) || (recolour && (sized || resize))) {
            rc = convert_builtin(w, m->C, H, W, resize, err, errlen);
            if (rc != DATA_OK) return rc;
        }
        w->data.classes = w->train.num_classes;
    }
    rc = apply_normalisation(w, spec, m->name, m->C, err, errlen);
    for (int c = 0; c < DATA_MAX_CHANNELS; c++) {
        w->data.mean[c] = w->train.mean[c];
        w->data.std[c] = w->train.std[c];
    }
    return rc;
}

/* The batch buffers (x, y: max_batch samples; pinned on a GPU rank), the epoch order, the
 * per-worker plan arrays with an even first plan, and the undisturbed step costs. 0, or -1
 * with err when out of memory. */
static int alloc_batch_buffers(worker_t *w, char *err, size_t errlen)
{
    const model_t *m = w->model;
    size_t img = (size_t)m->C * m->H * m->W;
    w->x = page_alloc((size_t)w->max_batch * img * sizeof(float));
    w->y = page_alloc((size_t)w->max_batch * m->positions * sizeof *w->y); /* a label per position */
    w->eval_idx = calloc((size_t)w->max_batch, sizeof *w->eval_idx);
    w->perm = calloc((size_t)w->train.n, sizeof *w->perm);
    w->batch_of = calloc((size_t)w->nworkers, sizeof *w->batch_of);
    w->dropout_of = calloc((size_t)w->nworkers, sizeof *w->dropout_of);
    w->plan_next = calloc((size_t)w->nworkers, sizeof *w->plan_next);
    w->plan_speeds = calloc((size_t)w->nworkers, sizeof *w->plan_speeds);
    w->undisturbed_s = calloc((size_t)w->max_batch + 1, sizeof *w->undisturbed_s);
    if (!w->x || !w->y || !w->eval_idx || !w->perm || !w->batch_of || !w->dropout_of || !w->plan_next ||
        !w->plan_speeds || !w->undisturbed_s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (w->gpu) pin_host_buffers(w);
    planner_even(w->global_batch, w->nworkers, w->batch_of);
    return 0;
}

/* The spec's learning-rate schedule, over the steps of an epoch w has now. */
static void lr_schedule_setup(worker_t *w)
{
    const char *kind = w->spec->optimizer.lr_schedule.kind;
    w->sched.kind = strcmp(kind, "step") == 0 ? LR_STEP : strcmp(kind, "cosine") == 0 ? LR_COSINE : LR_CONSTANT;
    worker_schedule_steps(w, w->steps_per_epoch);
    w->sched.gamma = (float)w->spec->optimizer.lr_schedule.gamma;
    w->sched.min_lr = (float)w->spec->optimizer.lr_schedule.min_lr;
}

int worker_setup_world(worker_t *w, const job_spec_t *spec, int rank, int world, int nworkers, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->eval_step = w->ckpt_step = -1;
    w->notice_rank = -1;
    w->time_to_target_s = NAN;
    /* Not measured until they are (the summary shows null, never a 0 from memset). */
    w->test_loss = w->test_accuracy = w->train_loss = w->train_loss_running = NAN;
    if (nworkers < 1 || nworkers > spec_max_workers(spec)) {
        snprintf(err, errlen, "%d workers: must be 1 to the spec's max_workers (%d)", nworkers, spec_max_workers(spec));
        return -1;
    }
    w->spec = spec;
    w->rank = rank;
    w->world = world;
    w->algo = algo_find(spec->algorithm.name);
    if (!w->algo) {
        snprintf(err, errlen, "algorithm.name: '%s' is not built into this worker", spec->algorithm.name);
        return -1;
    }
    int async = spec_is_async(spec);
    w->nworkers = nworkers;
    w->role = (async && rank == 0) ? ROLE_PS : ROLE_WORKER;
    w->worker_index = async ? rank - 1 : rank;
    w->global_batch = spec->workers * spec->batch_size;
    /* Buffers hold the largest batch a plan may assign (common/planner.h's bounds, the
     * same the coordinator plans within; plans outside them are refused); evaluation
     * uses them too. Fewer workers than the spec asks (elastic) share its global batch,
     * so the upper bound grows to hold each one's share; more (max_workers) take smaller
     * shares of it, within the same bounds. */
    planner_bounds_world(spec, nworkers, &w->min_batch, &w->max_batch);

    /* The data is brought to the model's input shape (the catalog's), and a built-in
     * model's head is sized to the data's classes, so an imported model is built first
     * (its figures are its own) and a built-in one after the data. An imported model
     * starts from the file's initializers (the user's own initialisation), the same on
     * every rank; a built-in one from the job's seed. */
    const int onnx = spec->model_onnx[0] != '\0', gpt = spec_model_is_gpt(spec);
    catalog_model_t shape;
    if (!onnx && !gpt && catalog_model_get(spec->model, &shape) != 0) {
        snprintf(err, errlen, "model: %s is not in the catalog", spec->model);
        return -1;
    }
    int rc = 0;
    if (onnx && spec->model_sha256[0]) {
        /* an uploaded model: the bytes the spec's loader read (worker/modelfetch.h) */
        const uint8_t *bytes;
        size_t nbytes;
        rc = modelfetch_bytes(spec->model_onnx, spec->model_sha256, &bytes, &nbytes, err, errlen);
        if (rc == 0) rc = onnx_import_buffer(bytes, nbytes, spec->model, sim_model_batch(w), &w->model, err, errlen);
    } else if (onnx) rc = onnx_import_file(spec->model_onnx, spec->model, sim_model_batch(w), &w->model, err, errlen);
    if (rc != 0) return -1;
    if (onnx) model_describe(w->model, &shape); /* head_in 0: its own width */
    if (onnx) rc = check_token_input(w->model, spec, err, errlen);
    if (rc != 0) return rc;
    if (gpt) rc = setup_gpt(w, spec, err, errlen);
    else if (onnx && spec_dataset_is_text(spec)) rc = setup_imported_lm(w, spec, err, errlen);
    else rc = load_data(w, spec, &shape, err, errlen);
    if (rc != 0) return rc;
    if (!onnx && !gpt &&
        model_create_classes(spec->model, w->data.classes, sim_model_batch(w), &w->model, err, errlen) != 0)
        return -1;
    model_t *m = w->model;
    /* Dropout masks differ between ranks (each its own samples), and between runs of
     * different seeds. */
    const uint64_t seed_rank[2] = {(uint64_t)spec->seed, (uint64_t)rank};
    m->dropout_seed = hash_fnv1a(HASH_FNV1A_INIT, seed_rank, sizeof seed_rank);
    if (spec->dataset.train_subset > 0) dataset_truncate(&w->train, spec->dataset.train_subset);
    if (spec->dataset.test_subset > 0) dataset_truncate(&w->test, spec->dataset.test_subset);

    /* Both sets, once: every later copy into x/y relies on the shape matching the model
     * (the spec's model/dataset pairing says nothing about what the files hold). */
    rc = dataset_check_shape(&w->train, m->C, m->H, m->W, m->num_classes, m->name, err, errlen);
    if (rc == 0) rc = dataset_check_shape(&w->test, m->C, m->H, m->W, m->num_classes, m->name, err, errlen);
    if (rc != 0) return rc;
    if (gpt) model_gpt_init(m, spec->gpt.layers, spec->seed);
    else if (!onnx) model_init_params(m, spec->seed);
    /* lora: the graph with its adapters replaces the model, before any copy is made of it */
    if (spec->lora.targets[0] && worker_apply_lora(w, err, errlen) != 0) return -1;
    m = w->model;
    /* The loss and the optimizer's state, before a device copy is made of the model. */
    m->label_smoothing = (float)spec->loss.label_smoothing;
    if (spec_is_adamw(spec) && model_alloc_moment2(m) != 0) {
        snprintf(err, errlen, "out of memory for AdamW's second moment (%zu floats)", m->nparams);
        return -1;
    }
    /* before the device copy and a resume's compression plan: both leave frozen ones out */
    if (worker_apply_freeze(w, err, errlen) != 0) return -1;
    if (select_device(w, err, errlen) != 0) return -1;
    w->momentum = (float)spec->optimizer.momentum;
    w->lr_scale = 1.0;
    w->fence = -1;
    /* Rank 0 judges the run (the PS in the asynchronous family: it sees every push's
     * loss); a simulation that skips the computation learns nothing by design. */
    if (rank == 0 && !sim_skip_compute(w)) {
        health_init(&w->health, m->num_classes);
        w->health.lm = w->train.tok != NULL; /* its reasons in a language model's words */
    }

    if (alloc_batch_buffers(w, err, errlen) != 0) return -1;

    w->steps_per_epoch = w->train.n / w->global_batch;
    if (w->steps_per_epoch < 1) {
        snprintf(err, errlen, "batch_size: global batch %d (workers x batch_size) exceeds the %d training samples",
                 w->global_batch, w->train.n);
        return -1;
    }
    lr_schedule_setup(w);
    rng_seed(&w->aug_rng, (uint64_t)spec->seed * 7919u + (uint64_t)rank + 1);
    w->augment.pad = spec->dataset.crop_padding;
    w->augment.flip = spec->dataset.hflip;
    w->slowdown = worker_slowdown_now(w);
    w->record.rank = rank;
    w->record.role = w->role;
    hostname_once(w->record.host, sizeof w->record.host);
    return adaptive_setup(w, err, errlen);
}

void worker_teardown(worker_t *w)
{
    if (w->algo && w->algo->fini) w->algo->fini(w);
    compress_free(w->compress); /* before MPI_Finalize (its MPI_Op) */
    w->compress = NULL;
    adaptive_free(w);
    cuda_model_free(w->gpu);
    evalsample_free(w->eval_sample); /* reads the model's parameters: before them */
    json_decref(w->init_report);
    model_free(w->lora_sample);
    model_free(w->model);
    sim_dataset_free(&w->train);
    sim_dataset_free(&w->test);
    free(w->x);
    free(w->y);
    free(w->eval_idx);
    free(w->perm);
    free(w->batch_of);
    free(w->dropout_of);
    free(w->plan_next);
    free(w->plan_speeds);
    free(w->emulation.hosts);
    free(w->undisturbed_s);
    memset(w, 0, sizeof *w);
}

/* ---- resuming from checkpoints ---------------------------------------------------------- */

/* One candidate of worker_resume_latest: 1 resumed; 0 refused (the previous refusal, if
 * any, is printed first, so each refusal is one line: the last one is the caller's). */
static int try_resume(worker_t *w, const char *cand, int *tried, char *last, size_t lastlen, char *first,
                      size_t firstlen, char *err, size_t errlen)
{
    if (*tried) fprintf(stderr, "pacer-worker: %s; trying the older %s\n", last, cand);
    *tried = 1;
    if (worker_resume(w, cand, err, errlen) == 0) return 1;
    snprintf(last, lastlen, "%s", err);
    if (!first[0]) snprintf(first, firstlen, "%s", err);
    return 0;
}

int worker_resume_latest(worker_t *w, char *path, size_t len, char *err, size_t errlen)
{
    const job_spec_t *s = w->spec;
    char first[1400] = "", last[1400] = "";
    int tried = 0;
    worker_checkpoint_path(w, path, len);
    struct stat lst;
    unsigned long long lino = 0;
    if (stat(path, &lst) == 0) {
        lino = (unsigned long long)lst.st_ino;
        if (try_resume(w, path, &tried, last, sizeof last, first, sizeof first, err, errlen)) return 1;
    }
    /* Then the older ones the job kept, newest first (the allocation is outside any step). */
    ckpt_entry_t *e = malloc(CKPTDIR_MAX * sizeof *e);
    long long bytes;
    int n = e ? ckptdir_list(s->checkpoint.dir, s->name, e, CKPTDIR_MAX, &bytes, err, errlen) : -1;
    if (!e) snprintf(err, errlen, "%s: out of memory", s->checkpoint.dir);
    if (n < 0 && !first[0]) snprintf(first, sizeof first, "%s", err);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (e[i].step < 0 || (lino && e[i].ino == lino)) continue; /* NAME.ckpt itself, tried above */
        char older[1100];
        snprintf(older, sizeof older, "%s/%s", s->checkpoint.dir, e[i].file);
        if ((rc = try_resume(w, older, &tried, last, sizeof last, first, sizeof first, err, errlen)))
            snprintf(path, len, "%s", older);
    }
    free(e);
    if (rc) return 1;
    if (tried && last[0] && strcmp(last, first) != 0) fprintf(stderr, "pacer-worker: %s\n", last);
    if (!tried && !first[0]) return 0;
    snprintf(err, errlen, "%s", first);
    return -1;
}

int worker_resume_before(worker_t *w, long before, char *path, size_t len, char *err, size_t errlen)
{
    const job_spec_t *s = w->spec;
    char first[1400] = "", last[1400] = "";
    int tried = 0, rc = 0;
    ckpt_entry_t *e = malloc(CKPTDIR_MAX * sizeof *e);
    long long bytes;
    int n = e ? ckptdir_list(s->checkpoint.dir, s->name, e, CKPTDIR_MAX, &bytes, err, errlen) : -1;
    if (!e) snprintf(err, errlen, "%s: out of memory", s->checkpoint.dir);
    if (n < 0) {
        free(e);
        return -1;
    }
    /* Newest first below the step; each refusal one line, as worker_resume_latest. */
    for (int i; !rc && (i = ckptdir_before(e, n, before)) >= 0;) {
        snprintf(path, len, "%s/%s", s->checkpoint.dir, e[i].file);
        before = e[i].step;
        rc = try_resume(w, path, &tried, last, sizeof last, first, sizeof first, err, errlen);
    }
    free(e);
    if (rc) return 1;
    if (tried) fprintf(stderr, "pacer-worker: %s\n", last);
    return 0;
}

int worker_resume(worker_t *w, const char *path, char *err, size_t errlen)
{
    size_t nq = 0, ne = 0;
    /* Everything the checkpoint's fields are checked against before any is used: the
     * batch sizes index the buffers, the cursor the epoch order. */
    ckpt_expect_t want = {
        .spec_hash = spec_hash(w->spec),
        .any_spec = w->adopt_any_spec,
        .seed = (uint64_t)w->spec->seed,
        .nworkers = w->nworkers,
        .spec_workers = spec_max_workers(w->spec),
        .epochs = w->spec->epochs,
        .steps_per_epoch = w->steps_per_epoch,
        .train_n = w->train.n,
        .global_batch = w->global_batch,
        .min_batch = w->min_batch,
        .max_batch = w->max_batch,
        .async = spec_is_async(w->spec),
        .goodput = w->spec->algorithm.goodput,
        .max_global = planner_max_global(w->spec, w->train.n),
    };
    if (worker_compress_setup(w, err, errlen) != 0) return -1;
    want.compress_q = compress_q(w->compress, &nq);
    want.compress_err = compress_error(w->compress, &ne);
    want.compress_q_floats = nq, want.compress_err_floats = ne;
    want.compress_index = w->worker_index;
    ckpt_state_t st;
    if (checkpoint_load(path, w->model, &want, &st, err, errlen) != 0) return -1;
    if (nq > 0 && st.compress_ranks != w->nworkers && w->rank == 0)
        fprintf(stderr,
                "checkpoint %s carries PowerSGD's error feedback of %d ranks, this run has %d: the errors start at "
                "zero (what they held is not applied), Q is kept\n",
                path, (int)st.compress_ranks, w->nworkers);
    /* min_gain's verdict and probe go on (the ranks share rank 0's sums). */
    compress_restore_verdict(w->compress, (compress_verdict_t)st.compress_verdict, st.compress_probe);
    w->global_step = st.global_step;
    w->opt_step = (long)st.opt_step;
    /* A worker goes on with its own dropout masks (checkpoint.h, dropout_step); one the
     * checkpoint's world did not have (an elastic restart on more workers) takes the
     * global step, as every worker did before version 5. */
    const int wi = w->worker_index;
    w->model->dropout_step = wi >= 0 && wi < st.nworkers ? st.dropout_step[wi] : (uint64_t)st.global_step;
    for (int i = 0; i < w->nworkers; i++)
        w->dropout_of[i] = i < st.nworkers ? st.dropout_step[i] : (uint64_t)st.global_step;
    w->epoch = st.epoch;
    w->step_in_epoch = st.step_in_epoch;
    w->cursor = st.cursor;
    w->aug_rng = st.aug_rng;
    w->epoch_loss_sum = st.epoch_loss_sum;
    w->epoch_loss_samples = st.epoch_loss_samples;
    w->pass = st.pass;
    if (w->gpu && cuda_model_upload(w->gpu, w->model) != 0) {
        snprintf(err, errlen, "CUDA: %s", cuda_model_error(w->gpu));
        return -1;
    }
    w->gpu_ahead = 0;
    adaptive_restore(w, &st);
    if (st.nworkers == w->nworkers) {
        /* checkpoint_validate has held the plan to this spec's bounds (planner_bounds). */
        for (int i = 0; i < w->nworkers; i++) w->batch_of[i] = st.batch_of[i];
    } else {
        /* Written by another world (an elastic restart): the same global batch over this
         * run's workers; a planner (dynamic batching, the coordinator's "resize"
         * assignment) refines it at its next re-plan. Set-up already split it evenly. */
        if (w->rank == 0) {
            fprintf(stderr,
                    "checkpoint %s was written by %d workers; resuming with %d: the global batch %d is "
                    "re-planned:",
                    path, (int)st.nworkers, w->nworkers, w->global_batch);
            worker_print_plan(w);
        }
    }
    return 0;
}

int worker_apply_batch_plan(worker_t *w, const char *plan, char *err, size_t errlen)
{
    int n = 0;
    const char *p = plan;
    char why[160] = "";
    while (*p && n <= w->nworkers) {
        char *end;
        long b = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || b < 0 || b > 1 << 30) {
            n = -1;
            break;
        }
        if (n < w->nworkers) w->plan_next[n] = (int)b;
        n++;
        p = *end == ',' ? end + 1 : end;
    }
    if (n != w->nworkers) snprintf(why, sizeof why, "it must be %d comma-separated batch sizes", w->nworkers);
    else planner_check(w->plan_next, n, w->global_batch, w->min_batch, w->max_batch, why, sizeof why);
    if (why[0]) {
        snprintf(err, errlen, "--batch-plan: '%s': %s", plan, why);
        return -1;
    }
    memcpy(w->batch_of, w->plan_next, (size_t)n * sizeof(int));
    return 0;
}

/* ---- the loop ---------------------------------------------------------------------------- */

/* Test hook (--weight-digest): one line "STEP HASH start" when the step loop starts (after
 * the algorithm's init: broadcast or resumed weights), then "STEP HASH" per step and "STEP
 * HASH epoch" per epoch end, HASH the FNV-1a 64 of the bytes of params and buffers, so a
 * test can see which ranks hold identical weights when. Off (fd < 0) in every real run. A GPU rank's weights are read
 * back first (a test of GPU ranks then syncs every step, which it may). */
static void write_digest(worker_t *w, int fd, const char *tag)
{
    if (fd < 0) return;
    worker_model_to_host(w);
    const model_t *m = w->model;
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = (const unsigned char *)m->params;
    for (size_t i = 0; i < m->nparams * sizeof(float); i++) h = (h ^ p[i]) * 1099511628211ull;
    p = (const unsigned char *)m->buffers;
    for (size_t i = 0; i < m->nbuffers * sizeof(float); i++) h = (h ^ p[i]) * 1099511628211ull;
    char line[96];
    int n = snprintf(line, sizeof line, "%ld %016llx%s\n", w->global_step, (unsigned long long)h, tag);
    if (write(fd, line, (size_t)n) != n) {}
}

static int train_loop(worker_t *w, const train_opts_t *o, int digest_fd, char *err, size_t errlen);

int worker_train(worker_t *w, const train_opts_t *o, char *err, size_t errlen)
{
    int digest_fd = -1;
    if (o->weight_digest) {
        char path[1100];
        snprintf(path, sizeof path, "%s.rank%d", o->weight_digest, w->rank);
        digest_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
        if (digest_fd < 0) {
            snprintf(err, errlen, "--weight-digest: cannot create %s: %s", path, strerror(errno));
            return -1;
        }
    }
    int rc = train_loop(w, o, digest_fd, err, errlen);
    if (digest_fd >= 0) close(digest_fd);
    return rc;
}

static int train_loop(worker_t *w, const train_opts_t *o, int digest_fd, char *err, size_t errlen)
{
    const job_spec_t *s = w->spec;
    int rc = 0;
    int printer = (w->rank == 0);
    w->opts = o;
    if (w->algo->init && (rc = w->algo->init(w)) != 0) {
        snprintf(err, errlen, "algorithm %s failed to start", w->algo->name);
        return rc;
    }
    w->loop_s = 0;
    double t_start = clock_mono_s();
    if (w->algo->run) {
        /* Algorithms with their own loop (the parameter server family). */
        rc = w->algo->run(w);
        w->wall_s = clock_mono_s() - t_start;
        if (rc != 0) {
            snprintf(err, errlen, "algorithm %s failed", w->algo->name);
            return rc;
        }
        worker_report_epoch(w, METRICS_FINAL, w->nothing_left);
        /* The PS (rank 0) holds the final weights: their loss on the fixed subset, and its
         * last checkpoint is the end of the job, as for the step loop below. */
        if (w->role == ROLE_PS && w->stop != STOP_TEST_HOOK) {
            /* a notice leaves little time: the checkpoint only */
            if (w->stop != STOP_NOTICE) w->train_loss = worker_final_train_loss(w);
            if (worker_final_checkpoint_due(w) && worker_save_checkpoint(w, err, errlen) != 0) return -1;
        }
        return 0;
    }
    write_digest(w, digest_fd, " start");
    if (w->epoch >= s->epochs) worker_finish_resumed(w);
    while (w->epoch < s->epochs && !w->stop) {
        worker_epoch_order(w);
        double t_log = clock_mono_s();
        long samples_log = w->stats.samples;
        while (adaptive_epoch_running(w) && !w->stop) {
            double t0 = clock_mono_s();
            phase_begin(&w->phases, w->global_step + 1);
            w->lr = lr_at(&w->sched, (float)(s->optimizer.lr * w->lr_scale), adaptive_schedule_step(w), w->total_steps);
            w->slowdown = worker_slowdown_now(w);
            w->step_loss = NAN;
            if ((rc = algo_step(w)) != 0) {
                snprintf(err, errlen, "algorithm %s: step %ld failed", w->algo->name, w->global_step);
                return rc;
            }
            /* Algorithms that know the global loss (ssgd) report it in step_loss over
             * step_samples; otherwise the rank's own batch loss is used. */
            if (isnan(w->step_loss)) {
                w->step_loss = w->stats.last_loss;
                w->step_samples = w->batch;
            }
            w->epoch_loss_sum += (double)w->step_loss * w->step_samples;
            w->epoch_loss_samples += w->step_samples;
            w->cursor += w->global_batch;
            w->step_in_epoch++;
            w->global_step++;
            w->stats.steps++;
            /* The detector reads the loss the loop has anyway: a few comparisons. */
            worker_health_loss(w, w->global_step, w->step_loss);
            /* The step's metrics record is part of the step's cost: it is inside train_s
             * (bench/redis_overhead.sh compares it with and without --redis). */
            phase_end(&w->phases);
            worker_report_step(w);
            w->loop_s += clock_mono_s() - t0;
            write_digest(w, digest_fd, "");

            if (printer && s->log_every > 0 && w->global_step % s->log_every == 0) {
                double t = clock_mono_s();
                const int block = w->train.tok ? w->train.tok->block : 1; /* a window's tokens */
                fprintf(stderr, "epoch %ld/%d step %ld/%ld loss %.4f lr %.5f %s %.0f\n", w->epoch + 1, s->epochs,
                        w->step_in_epoch, w->steps_per_epoch, w->step_loss, w->lr,
                        w->train.tok ? "tokens/s" : "samples/s",
                        (double)(w->stats.samples - samples_log) * w->nworkers * block / (t - t_log));
                t_log = t;
                samples_log = w->stats.samples;
            }
            if (worker_checkpoint_due(w) && worker_save_checkpoint(w, err, errlen) != 0) return -1;
            step_end_t end = {.may_evaluate = adaptive_epoch_running(w)};
            if (worker_step_end(w, &end) != STEP_GO_ON) break; /* STEP_FINISH: the epoch end below */
        }
        if (w->stop == STOP_TEST_HOOK || w->stop == STOP_NOTICE) break;
        if (w->algo->epoch_end && (rc = w->algo->epoch_end(w)) != 0) {
            snprintf(err, errlen, "algorithm %s: epoch end failed", w->algo->name);
            return rc;
        }
        write_digest(w, digest_fd, " epoch");
        w->train_loss_running = w->epoch_loss_samples ? (float)(w->epoch_loss_sum / (double)w->epoch_loss_samples) : NAN;
        if (w->algo->evaluate) w->algo->evaluate(w);
        else worker_evaluate(w, &w->test_loss, &w->test_accuracy);
        if (worker_epoch_done(w, err, errlen) != 0) return -1;
        /* The evaluation may have found the run at chance: stop before another epoch. */
        if (!w->stop) worker_health_agree(w, 1);
        if (w->stop == STOP_BUDGET && w->rank == 0)
            fprintf(stderr, "time budget of %.1f s used: stopped in epoch %ld\n", o->time_budget_s, w->epoch);
        if (w->stop == STOP_COLLAPSE && w->rank == 0) fprintf(stderr, "collapse: stopped in epoch %ld\n", w->epoch);
    }
    w->wall_s = clock_mono_s() - t_start;
    worker_report_epoch(w, METRICS_FINAL, w->nothing_left);
    /* Rank 0 holds the final (merged) weights after the last epoch end. */
    if (w->rank == 0 && w->stop != STOP_TEST_HOOK && w->stop != STOP_NOTICE) w->train_loss = worker_final_train_loss(w);
    if (worker_final_checkpoint_due(w) && worker_save_checkpoint(w, err, errlen) != 0) return -1;
    return 0;
}

/* ---- summary ---------------------------------------------------------------------------- */

/* The job's device: {"requested", "used": "cuda" when every computing rank used a GPU,
 * "cpu" when none did, else "mixed"; "gpu_ranks"; "reason": the first fallback's reason}. */
static json_t *job_device_json(const job_spec_t *s, json_t *per_rank)
{
    size_t i;
    json_t *r;
    int gpu = 0, cpu = 0;
    const char *reason = NULL;
    json_array_foreach(per_rank, i, r)
    {
        const char *role = json_string_value(json_object_get(r, "role"));
        if (!role || strcmp(role, "worker") != 0) continue;
        json_t *d = json_object_get(r, "device");
        const char *used = json_string_value(json_object_get(d, "used"));
        if (used && strcmp(used, "cuda") == 0) gpu++;
        else cpu++;
        if (!reason) reason = json_string_value(json_object_get(d, "reason"));
    }
    json_t *out = json_pack("{s:s, s:s, s:i}", "requested", s->device, "used",
                            gpu && cpu ? "mixed"
                            : gpu      ? "cuda"
                                       : "cpu",
                            "gpu_ranks", gpu);
    if (out && reason) json_object_set_new(out, "reason", json_string(reason));
    return out;
}

/* One field of the worker ranks' device objects: the one name every worker rank ran, or,
 * where ranks ran different ones (a CPU without bf16 units beside one with), the distinct
 * ones in rank order; null where no worker rank reported one (GPU ranks). */
static json_t *ranks_kernel(json_t *per_rank, const char *field)
{
    json_t *seen = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(per_rank, i, r)
    {
        const char *role = json_string_value(json_object_get(r, "role"));
        const char *g = json_string_value(json_object_get(json_object_get(r, "device"), field));
        if (!seen || !role || strcmp(role, "worker") != 0 || !g) continue;
        size_t j;
        json_t *v;
        int dup = 0;
        json_array_foreach(seen, j, v) dup |= strcmp(json_string_value(v), g) == 0;
        if (!dup) json_array_append_new(seen, json_string(g));
    }
    json_t *k = !seen || json_array_size(seen) == 0 ? json_null()
                : json_array_size(seen) == 1        ? json_incref(json_array_get(seen, 0))
                                                    : json_incref(seen);
    json_decref(seen);
    return k;
}

/* {"gemm": the products' kernels (matmul.h's mm_kernel), "conv": the convolutions'
 * (conv2d_kernel)} */
static json_t *job_kernels_json(json_t *per_rank)
{
    return json_pack("{s:o, s:o}", "gemm", ranks_kernel(per_rank, "gemm"), "conv", ranks_kernel(per_rank, "conv"));
}

long worker_train_samples(json_t *per_rank)
{
    long n = 0;
    size_t i;
    json_t *r;
    json_array_foreach(per_rank, i, r) if (strcmp(json_string_value(json_object_get(r, "role")) ?: "", "worker") == 0)
        n += (long)json_integer_value(json_object_get(r, "samples"));
    return n;
}

/* The summary's "dataset": what was trained on, as loaded: {name, format, path (a user's),
 * classes, train_samples, test_samples (after train_subset / test_subset), shape [C, H, W],
 * mean, std (what the gather normalised with), cache}. cache is the decoded cache this rank
 * mapped ({path, built, bytes, decode_s}; decode_s null when mapped, and in a simulation,
 * whose clock does not run while a rank decodes), or null: a set decoded into memory says
 * why in cache_note (pacer-sim's built-in sets, shared in its process, have none). */
/* How a language model's data became tokens: a text's tokenizer (bytes, chars, bpe), or
 * "tokens" for ids read from token files. */
static const char *tokenizer_name(const job_spec_t *s)
{
    if (strcmp(spec_dataset_format(s), "tokens") == 0) return "tokens";
    if (s->dataset.tokenizer_kind[0]) return s->dataset.tokenizer_kind;
    return s->dataset.tokenizer[0] ? s->dataset.tokenizer : "bytes";
}

static json_t *dataset_json(const worker_t *w)
{
    const job_spec_t *s = w->spec;
    const int user = spec_dataset_is_user(s);
    const char *base = strrchr(s->dataset.path, '/');
    base = base && base[1] ? base + 1 : s->dataset.path;
    json_t *mean = json_array(), *std = json_array();
    for (int c = 0; c < w->train.C && c < DATA_MAX_CHANNELS; c++) {
        json_array_append_new(mean, json_real(w->data.mean[c]));
        json_array_append_new(std, json_real(w->data.std[c]));
    }
    json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:i, s:[iii], s:o, s:o}", "name", user ? base : s->dataset.name,
                          "format", w->data_format, "classes", w->data.classes, "train_samples", w->train.n,
                          "test_samples", w->test.n, "shape", w->train.C, w->train.H, w->train.W, "mean", mean, "std",
                          std);
    if (!o) return NULL;
    if (user) json_object_set_new(o, "path", json_string(s->dataset.path));
    if (w->train.tok) {
        /* a language model's data set: a sample is a window of block_size tokens, the
         * classes its vocabulary; readers name them so (the page, pacer get) */
        json_object_set_new(o, "vocab_size", json_integer(w->data.classes));
        json_object_set_new(o, "tokenizer", json_string(tokenizer_name(s)));
        json_object_set_new(o, "block_size", json_integer(w->train.tok->block));
        json_object_set_new(o, "train_windows", json_integer(w->train.n));
        json_object_set_new(o, "test_windows", json_integer(w->test.n));
    }
    json_t *cache = json_null();
    if (w->data.cache_path[0])
        cache = json_pack("{s:s, s:b, s:I, s:o}", "path", w->data.cache_path, "built", w->data.cache_built, "bytes",
                          (json_int_t)w->data.cache_bytes, "decode_s",
                          w->data.cache_built && !sim_active() ? json_real(w->data.decode_s) : json_null());
    json_object_set_new(o, "cache", cache);
    if (w->data.cache_note[0]) json_object_set_new(o, "cache_note", json_string(w->data.cache_note));
    return o;
}

static json_t *mean_or_null(double sum, double n) { return n > 0 ? json_real(sum / n) : json_null(); }

/* min_gain's probe (compress.h): the verdict (null while undecided), the means of comm's
 * ranks (this rank's before the verdict) and the gain; null where not measured. */
static json_t *probe_summary(const worker_t *w)
{
    const job_spec_t *s = w->spec;
    double v[COMPRESS_PROBE_N];
    const compress_verdict_t verdict = compress_verdict(w->compress, v);
    const double gain = compress_probe_gain(v);
    return json_pack("{s:f, s:i, s:o, s:o, s:o, s:o, s:o}", "min_gain", s->algorithm.compression.min_gain,
                     "probe_steps", s->algorithm.compression.probe_steps, "verdict",
                     verdict == COMPRESS_KEEP    ? json_string("compress")
                     : verdict == COMPRESS_PLAIN ? json_string("plain")
                                                 : json_null(),
                     "plain_call_s", mean_or_null(v[PROBE_PLAIN_S], v[PROBE_PLAIN_N]), "compressed_call_s",
                     mean_or_null(v[PROBE_COMP_S], v[PROBE_COMP_N]), "plain_step_s",
                     mean_or_null(v[PROBE_STEP_S], v[PROBE_STEP_N]), "gain",
                     isnan(gain) ? json_null() : json_real(gain));
}

/* The payload per step as measured (worker_stats_t.comm_bytes: what rank 0 handed to
 * MPI; in ssgd and local-sgd every rank sends the same, in hier-bsp rank 0 is a leader):
 * ssgd's all-reduce, local-sgd's and hier-bsp's averages (and hier-bsp's group traffic)
 * and hpsgd's rounds spread over the steps; missing where not measured (the other
 * algorithms); with algorithm.compression also what it did: the payload of a compressed
 * step and of a plain one, their ratio, the matrices PowerSGD compressed and min_gain's
 * probe. */
static void compression_summary(const worker_t *w, json_t *root)
{
    const job_spec_t *s = w->spec;
    if (w->stats.comm_steps > 0)
        json_object_set_new(root, "comm_bytes_per_step", json_real(w->stats.comm_bytes / (double)w->stats.comm_steps));
    const compress_t *c = w->compress;
    if (!c || compress_kind(c) == COMPRESS_NONE) return;
    const double step = (double)compress_step_bytes(c), plain = (double)compress_plain_bytes(c);
    json_t *o = json_pack("{s:s, s:f, s:f, s:f}", "kind", s->algorithm.compression.kind, "compressed_bytes_per_step",
                          step, "plain_bytes_per_step", plain, "ratio", step > 0 ? plain / step : 1.0);
    if (o && compress_kind(c) == COMPRESS_POWERSGD) {
        json_object_set_new(o, "rank", json_integer(s->algorithm.compression.rank));
        json_object_set_new(o, "warmup_steps", json_integer(s->algorithm.compression.warmup_steps));
        json_object_set_new(o, "matrices", json_integer(compress_matrices(c)));
        if (s->algorithm.compression.min_gain > 0) json_object_set_new(o, "auto", probe_summary(w));
    }
    json_object_set_new(root, "compression", o);
}

int worker_write_summary(const worker_t *w, const char *path, json_t *per_rank, int exit_status, char *err,
                         size_t errlen)
{
    const job_spec_t *s = w->spec;
    /* Every training sample once: the workers computed them; the training time is rank
     * 0's time in training steps (the PS: serving), evaluation and checkpoints left out. */
    long train_samples = worker_train_samples(per_rank);
    size_t i;
    json_t *r;
    double peak = NAN; /* stays NaN (null) when no rank measured it (a simulation) */
    json_array_foreach(per_rank, i, r)
    {
        json_t *p = json_object_get(r, "peak_rss_mb");
        if (json_is_number(p) && !(json_number_value(p) <= peak)) peak = json_number_value(p);
    }
    /* A run that diverged has NaN or infinite losses, which JSON cannot hold (jansson
     * refuses them): they are written as null, and "diverged" says why. A figure the run
     * did not measure is null too, and says nothing about divergence: the test figures
     * before the first evaluation, train_loss_running of a run resumed after its last
     * epoch (not in the checkpoint), train_loss of a run stopped by the test hook, every
     * loss and accuracy of a simulation that skips the compute. */
    const int skip = sim_skip_compute(w);
    const int tested = w->eval_step >= 0 && !skip, ran = tested && !w->nothing_left,
              trained = w->stop != STOP_TEST_HOOK && !skip;
    int diverged = (trained && !isfinite(w->train_loss)) || (ran && !isfinite(w->train_loss_running)) ||
                   (tested && (!isfinite(w->test_loss) || !isfinite(w->test_accuracy)));
    json_t *root =
        json_pack("{s:s, s:s, s:o, s:s, s:i, s:i, s:I, s:o, s:o, s:i, s:o, s:o, s:b, s:f, s:f, s:I, s:o, s:o, s:O}",
                  "name", s->name, "model", s->model, "dataset", dataset_json(w), "algorithm", s->algorithm.name,
                  "workers", s->workers, "epochs", s->epochs, "steps", (json_int_t)w->global_step, "train_loss",
                  worker_json_finite(w->train_loss), "train_loss_running", worker_json_finite(w->train_loss_running),
                  "train_loss_samples", w->train.n < TRAIN_LOSS_SAMPLES ? w->train.n : TRAIN_LOSS_SAMPLES, "test_loss",
                  worker_json_finite(w->test_loss), "test_accuracy", worker_json_finite(w->test_accuracy), "diverged",
                  diverged, "wall_s", w->wall_s, "train_s", w->loop_s, "train_samples", (json_int_t)train_samples,
                  "train_samples_per_s", worker_json_rate((double)train_samples, w->loop_s), "peak_rss_mb",
                  worker_json_finite(peak), "per_rank", per_rank);
    if (!root) {
        snprintf(err, errlen, "summary: cannot build the JSON (a non-finite figure, or out of memory)");
        return -1;
    }
    if (w->init_report) json_object_set(root, "init", w->init_report);
    json_object_set_new(root, "trainable_parameters", json_integer(w->trainable_params));
    json_object_set_new(root, "frozen_parameters", json_integer(w->frozen_params));
    /* The job's staleness is rank 0's (this rank's): the parameter server records every
     * applied update once, and in the synchronous families every rank applies every
     * update with the same tau. Exact: it comes from the counts, not the histogram. */
    json_object_set_new(root, "staleness", staleness_json(&w->staleness.s));
    json_object_set_new(root, "health", worker_health_json(w));
    /* The world that trained last (the spec's workers unless an elastic resize shrank or
     * grew it, max_workers) and the global batch its ranks shared. */
    json_object_set_new(root, "world_workers", json_integer(w->nworkers));
    /* The epochs ended, counted from the job's start: what its epoch records say, kept here
     * too because those records go through Redis, which may be down when the run ends (an
     * experiment's trial then takes its epochs from here). */
    json_object_set_new(root, "epochs_trained", json_integer(w->epoch));
    json_object_set_new(root, "global_batch", json_integer(w->global_batch));
    if (w->train.tok) {
        /* a text job: a sample is a window, its loss nats per token */
        const double tokens = (double)train_samples * w->train.tok->block;
        json_object_set_new(root, "block_size", json_integer(w->train.tok->block));
        json_object_set_new(root, "vocab_size", json_integer(w->model->num_classes));
        json_object_set_new(root, "train_tokens", json_integer((json_int_t)tokens));
        json_object_set_new(root, "train_tokens_per_s", worker_json_rate(tokens, w->loop_s));
        json_object_set_new(root, "test_perplexity", worker_json_finite(tested ? expf(w->test_loss) : NAN));
    }
    json_object_set_new(root, "lr_scale", json_real(w->lr_scale));
    json_object_set_new(root, "precision", json_string(s->precision));
    json_object_set_new(root, "kernels", job_kernels_json(per_rank));
    /* every rank's verdict (one reduction): 0 is a finished run whatever mpirun's own
     * status, which a signal to mpirun after the last step still makes 1 */
    json_object_set_new(root, "exit_status", json_integer(exit_status));
    json_object_set_new(root, "device", job_device_json(s, per_rank));
    json_object_set_new(root, "emulation", emulate_summary_json(w));
    adaptive_summary(w, root);
    compression_summary(w, root);
    if (w->shard) json_object_set_new(root, "shard", shard_json(w));
    /* Training seconds until the first evaluation that reached the target (simulated
     * seconds under pacer-sim); null when it was never reached. */
    if (s->target_accuracy > 0) json_object_set_new(root, "time_to_target_s", worker_json_finite(w->time_to_target_s));
    sim_summary(w, root);
    if (w->role == ROLE_PS) {
        /* The momentum it applied at the end (optimizer.async_momentum; ps.c) and the
         * smoothed staleness that set it. */
        json_t *mom = json_pack("{s:s, s:f, s:f, s:f}", "mode", s->optimizer.async_momentum, "requested",
                                s->optimizer.momentum, "applied", round((double)w->momentum * 1e6) / 1e6,
                                "staleness_smoothed", w->ps_tau_avg);
        json_object_set_new(root, "parameter_server",
                            json_pack("{s:I, s:o, s:f, s:I, s:o}", "updates", (json_int_t)w->ps_updates, "updates_per_s",
                                      worker_json_rate((double)w->ps_updates, w->loop_s), "busy_fraction",
                                      w->ps_busy_fraction, "dropped", (json_int_t)w->ps_dropped, "momentum", mom));
    }
    /* written whole (fs_atomic_write): the coordinator may read the summary meanwhile */
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    int rc = text ? fs_atomic_write(path, text, strlen(text), 0644) : (errno = ENOMEM, -1);
    free(text);
    if (rc != 0) snprintf(err, errlen, "%s: cannot write summary: %s", path, strerror(errno));
    return rc;
}
