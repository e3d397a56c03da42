/* common/spec_check.c - see spec_check.h. */
#include "spec_check.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "errmsg.h"

static const char *const ASYNC_ALGORITHMS[] = {"asgd", "nsoftsync", "dc-asgd", "ddc-asgd", "dbs-sgd", NULL};

/* Writes one line into the caller's buffer and returns -1. Control characters (a key
 * or value from the document may hold "\n") become '?', so the message stays one line
 * in a log or an HTTP error body. */
int spec_fail(errbuf_t *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errmsg_v(e->buf, e->len, -1, fmt, ap);
    va_end(ap);
    errmsg_one_line(e->buf, e->len);
    return -1;
}

int spec_in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0) return 1;
    return 0;
}

/* Integers print as integers (65536, not 6.5536e+04); others with %g. */
const char *spec_fmt_num(char buf[32], double x)
{
    /* LLONG_MAX (the seed's bound) reads back as 2^63 in a double: say what is meant. */
    if (x == (double)LLONG_MAX) snprintf(buf, 32, "%lld", LLONG_MAX);
    else if (x == floor(x) && fabs(x) < 1e15) snprintf(buf, 32, "%.0f", x);
    else snprintf(buf, 32, "%g", x);
    return buf;
}

/* The simulate section: a given platform file sets host speeds and links itself, so the
 * generator's per-worker fields would be silently unused next to it. */
static int cross_check_simulate(errbuf_t *e, const job_spec_t *s)
{
    const int k = s->simulate.gpus_per_node, n = s->simulate.nslowdown;
    if (n > 0 && n != s->workers)
        return spec_fail(e, "simulate.slowdown: has %d entries, workers is %d", n, s->workers);
    if (s->simulate.platform[0] && n > 0)
        return spec_fail(e, "simulate.slowdown: not used with simulate.platform (the platform file sets host speeds)");
    if (s->simulate.platform[0] && k > 1)
        return spec_fail(e,
                         "simulate.gpus_per_node: not used with simulate.platform (the platform file sets the nodes)");
    if (s->simulate.hostfile[0] && !s->simulate.platform[0])
        return spec_fail(e, "simulate.hostfile: only with simulate.platform");
    /* Without the cost model the simulated time is the timed computation: skipping it
     * would make every step free. */
    if (s->simulate.skip_compute && !s->simulate.deterministic)
        return spec_fail(
            e, "simulate.skip_compute: only with simulate.deterministic (the cost model charges the skipped compute)");
    if (s->simulate.jitter > 0 && !s->simulate.deterministic)
        return spec_fail(e, "simulate.jitter: only with simulate.deterministic (timed compute varies by itself)");
    if (s->simulate.bf16_gflops > 0 && strcmp(s->precision, "bf16") != 0)
        return spec_fail(e, "simulate.bf16_gflops: only with precision bf16 (an fp32 job's hosts compute at "
                            "simulate.gflops)");
    /* A node is one simulated host with k cores: one speed for all its workers. */
    for (int i = 0; i < n; i++)
        if (s->simulate.slowdown[i] != s->simulate.slowdown[i - i % k])
            return spec_fail(e,
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
        return spec_fail(e, "dataset.name: %s is no longer in the catalog", ds);
    catalog_format_t f;
    int named = catalog_format_parse(fmt, &f) == 0; /* not "auto" */
    if (named && !catalog_format_is_user(f) && f != d.format)
        return spec_fail(e, "dataset.format: %s is not the format of dataset.name %s (%s)", fmt, ds,
                         catalog_format_name(d.format));
    if (spec_dataset_is_user(s) && !s->dataset.path[0])
        return spec_fail(e, "dataset.path: required with dataset.format %s (%s)", fmt,
                         catalog_format_path_is(named ? f : CATALOG_FORMAT_IMAGEFOLDER));
    if (s->dataset.nresize != 0 && s->dataset.nresize != 2)
        return spec_fail(e, "dataset.resize: must be [H, W] or [], has %d entr%s", s->dataset.nresize,
                         s->dataset.nresize == 1 ? "y" : "ies");
    for (int i = 0; i < s->dataset.nresize; i++)
        if (s->dataset.resize[i] != floor(s->dataset.resize[i]))
            return spec_fail(e, "dataset.resize[%d]: must be an integer", i);
    if (s->dataset.nmean == 2)
        return spec_fail(e, "dataset.mean: one value (every channel) or one per channel (3), has 2");
    if (s->dataset.nstd == 2)
        return spec_fail(e, "dataset.std: one value (every channel) or one per channel (3), has 2");
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
        return spec_fail(e, "model.gpt: trains on dataset.format text or tokens, not %s", spec_dataset_format(s));
    if (spec_dataset_is_text(s) && !spec_model_is_gpt(s) && !s->model_onnx[0])
        return spec_fail(e,
                         "dataset.format %s: trains the built-in GPT (\"model\": {\"gpt\": {...}}) or an imported "
                         "language model (\"model\": {\"onnx\": ...}); %s takes images",
                         spec_dataset_format(s), s->model);
    if (spec_dataset_is_text(s) && s->dataset.augment)
        return spec_fail(e, "dataset.augment: crops and flips images, not text");
    if (!spec_dataset_is_text(s) && (s->dataset.block_size || s->dataset.vocab_size))
        return spec_fail(e, "dataset.%s: only with dataset.format text or tokens",
                         s->dataset.block_size ? "block_size" : "vocab_size");
    if (spec_model_is_gpt(s)) return 0;
    if (catalog_model_get(s->model, &m) != 0) return spec_fail(e, "model: %s is no longer in the catalog", s->model);
    if (spec_dataset_is_user(s)) return 0;
    if (catalog_dataset_get(s->dataset.name, &d) != 0)
        return spec_fail(e, "dataset.name: %s is no longer in the catalog", s->dataset.name);
    if (s->dataset.nresize == 2) {
        d.C = m.C;
        d.H = m.H;
        d.W = m.W;
    }
    if (catalog_pair_check(&m, &d, why, sizeof why) != 0) return spec_fail(e, "%s", why);
    if (s->dataset.augment && !d.augment) {
        char allowed[256] = "";
        catalog_dataset_t o;
        for (size_t i = 0; catalog_dataset_at(i, &o) == 0; i++)
            if (o.augment)
                snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", allowed[0] ? ", " : "",
                         o.name);
        return spec_fail(e, "dataset.augment: only for %s, dataset.name is %s", allowed[0] ? allowed : "no data set",
                         s->dataset.name);
    }
    return 0;
}

/* A tokenizer other than bytes reads text: a token data set is ids already, and its
 * vocabulary (dataset.vocab_size) is the tokenizer's, not the spec's. */
static int cross_check_tokenizer(errbuf_t *e, const job_spec_t *s)
{
    if (strcmp(s->dataset.tokenizer, "bytes") == 0) return 0;
    catalog_format_t f;
    if (catalog_format_parse(spec_dataset_format(s), &f) != 0 || f != CATALOG_FORMAT_TEXT)
        return spec_fail(e, "dataset.tokenizer: %s reads text (dataset.format text), not %s", s->dataset.tokenizer,
                         spec_dataset_format(s));
    if (s->dataset.vocab_size)
        return spec_fail(e, "dataset.vocab_size: the %s tokenizer's vocabulary is its own; leave vocab_size out",
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
        return spec_fail(e, "model.gpt.heads: %d does not divide model.gpt.embd %d (each head is embd / heads wide)",
                         s->gpt.heads, s->gpt.embd);
    if (s->gpt.vocab_size == 1)
        return spec_fail(e, "model.gpt.vocab_size: 1, must be at least 2 (or left out: the data set's vocabulary)");
    catalog_format_t f;
    if (!s->gpt.vocab_size || catalog_format_parse(spec_dataset_format(s), &f) != 0) return 0;
    const int bytes = f == CATALOG_FORMAT_TEXT && (!s->dataset.tokenizer[0] || !strcmp(s->dataset.tokenizer, "bytes"));
    const int have = bytes ? 256 : f == CATALOG_FORMAT_TOKENS ? s->dataset.vocab_size : 0;
    if (have && s->gpt.vocab_size > have)
        return spec_fail(e,
                         "model.gpt.vocab_size: %d, more than the %d ids of the data set's %s: the model would sample "
                         "ids nothing decodes; leave it out (the data set's) or give at most %d",
                         s->gpt.vocab_size, have, bytes ? "bytes (text read as bytes)" : "tokens (dataset.vocab_size)",
                         have);
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
        return spec_fail(e,
                         "algorithm.compression.kind: %s needs one Q shared by all ranks, which the asynchronous "
                         "pushes of %s do not have; use bf16 (each worker keeps its own error feedback) or none",
                         kind, a);
    if (!spec_is_async(s) && strcmp(a, "ssgd") != 0 && strcmp(a, "local-sgd") != 0 && strcmp(a, "hier-bsp") != 0 &&
        strcmp(a, "hpsgd") != 0)
        return spec_fail(e,
                         "algorithm.compression.kind: %s is implemented for ssgd, local-sgd, hier-bsp, hpsgd and (bf16) "
                         "the parameter-server family only (algorithm.name is %s); use one of them or kind none",
                         kind, a);
    if (strcmp(a, "hpsgd") == 0 && s->algorithm.compression.warmup_steps > 0)
        return spec_fail(e, "algorithm.compression.warmup_steps: hpsgd has no warm-up (its ranks start a round at "
                            "different steps); set 0");
    const int probe = s->algorithm.compression.probe_steps, warm = s->algorithm.compression.warmup_steps;
    if (s->algorithm.compression.min_gain > 0 && strcmp(kind, "powersgd") != 0)
        return spec_fail(e, "algorithm.compression.min_gain: the measured choice is powersgd's (kind is %s); set 0",
                         kind);
    if (s->algorithm.compression.min_gain > 0 && warm < probe)
        return spec_fail(e,
                         "algorithm.compression.min_gain: the probe times the warm-up's last probe_steps (%d) plain "
                         "steps, and warmup_steps is %d: set warmup_steps to at least %d, or probe_steps lower",
                         probe, warm, probe);
    if (s->algorithm.goodput)
        return spec_fail(e,
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
        return spec_fail(e, "min_workers: must be <= workers (%d), is %d", s->workers, s->min_workers);
    if (s->max_workers < s->workers)
        return spec_fail(e, "max_workers: must be >= workers (%d), is %d", s->workers, s->max_workers);
    if (s->max_workers == s->workers) return 0;
    if (!spec_in_list(s->algorithm.name, GROWS))
        return spec_fail(e,
                         "max_workers: algorithm %s does not grow past its workers (only ssgd, hier-bsp, hpsgd and "
                         "local-sgd do); leave max_workers out or set it to workers (%d)",
                         s->algorithm.name, s->workers);
    if (s->simulate.enabled)
        return spec_fail(
            e, "max_workers: a simulated job (simulate.enabled) runs on its workers (%d); leave max_workers out",
            s->workers);
    /* Each rank takes at least one sample of the global batch (algorithm.min_batch when
     * given: the planner's smallest batch). */
    long global = (long)s->workers * s->batch_size;
    long least = s->algorithm.min_batch > 0 ? s->algorithm.min_batch : 1;
    if ((long)s->max_workers * least > global)
        return spec_fail(e,
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
        return spec_fail(e,
                         "sync_batchnorm: only ssgd (or sgd, one process) has every rank take every step together, "
                         "which the batch norms' all-reduces need; algorithm.name is %s: use ssgd, or leave "
                         "sync_batchnorm false",
                         alg);
    if (s->algorithm.goodput)
        return spec_fail(e, "sync_batchnorm: the goodput planner may leave a rank out of a step, which then takes no "
                            "part in the batch norms' all-reduce; set one of sync_batchnorm and algorithm.goodput");
    if (strcmp(s->device, "cuda") == 0)
        return spec_fail(e, "sync_batchnorm: implemented on CPU ranks only (device cuda has no synchronised batch "
                            "norm); use device cpu or auto (which then computes on the CPU)");
    return 0;
}

/* precision bf16: the CPU's products only so far; device cuda is refused, auto computes on
 * the CPU (worker/train.c select_device). */
static int cross_check_precision(errbuf_t *e, const job_spec_t *s)
{
    if (strcmp(s->precision, "bf16") == 0 && strcmp(s->device, "cuda") == 0)
        return spec_fail(e, "precision bf16: implemented on CPU ranks only (the CUDA products are float32); use "
                            "device cpu or auto (which then computes on the CPU), or precision fp32");
    return 0;
}

/* lora's other fields say how to adapt what lora.targets names: without targets they would
 * be silently unused. */
static int cross_check_lora(errbuf_t *e, const job_spec_t *s)
{
    if (s->lora.targets[0]) return 0;
    if (s->lora.rank != 8 || s->lora.alpha != 8 || s->lora.dropout != 0 || strcmp(s->lora.export_, "merged") != 0)
        return spec_fail(e, "lora: lora.targets is missing (the globs of the matrix products' weights to adapt)");
    return 0;
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
            return spec_fail(e,
                             "algorithm.shard.split: only with algorithm.shard.stage 1 or 2 (stage is 0: no sharding)");
        return 0;
    }
    if (strcmp(s->algorithm.name, "ssgd") != 0)
        return spec_fail(e,
                         "algorithm.shard: implemented for ssgd only (algorithm.name is %s: its ranks do not apply one "
                         "update to one gradient together); use ssgd, or leave algorithm.shard out",
                         s->algorithm.name);
    if (strcmp(s->algorithm.compression.kind, "none") != 0)
        return spec_fail(e,
                         "algorithm.shard: does not work with algorithm.compression.kind %s (its error feedback and "
                         "factors span whole tensors of the full gradient); set kind none or leave algorithm.shard out",
                         s->algorithm.compression.kind);
    if (strcmp(s->device, "cuda") == 0)
        return spec_fail(e, "algorithm.shard: implemented on CPU ranks only (the device optimizer updates the whole "
                            "buffer); use device cpu or auto (which then computes on the CPU)");
    if (s->simulate.enabled)
        return spec_fail(e, "algorithm.shard: not simulated (pacer-sim's cost model has no reduce-scatter); leave "
                            "simulate.enabled false or algorithm.shard out");
    if (nw > 0 && nw != s->workers)
        return spec_fail(e, "algorithm.shard.split: has %d weights, workers is %d (one weight per worker)", nw,
                         s->workers);
    return 0;
}

/* Rules between fields, checked once every field has its value. */
int spec_cross_check(errbuf_t *e, const job_spec_t *s)
{
    const char *alg = s->algorithm.name;
    char num[32];

    if (cross_check_dataset(e, s) < 0) return -1;
    if (cross_check_tokenizer(e, s) < 0) return -1;
    if (cross_check_catalog(e, s) < 0) return -1;
    if (cross_check_gpt(e, s) < 0) return -1;
    if (cross_check_lora(e, s) < 0) return -1;
    /* a model on text reads token ids (the worker's check): the built-in GPT, or an imported
     * language model, which the worker's generator takes (or refuses by name) at start */
    if (s->eval_sample[0] && ((!spec_model_is_gpt(s) && !s->model_onnx[0]) || !spec_dataset_is_text(s)))
        return spec_fail(e,
                         "eval_sample: only for a language model (the built-in GPT, or an ONNX model that reads "
                         "token ids) on dataset.format text or tokens, not model %s on %s",
                         s->model, spec_dataset_format(s));

    if (strcmp(alg, "sgd") == 0 && s->workers != 1)
        return spec_fail(e, "algorithm.name: sgd is single-process; use ssgd for workers > 1");
    if (strcmp(alg, "nsoftsync") == 0 && (s->algorithm.n < 1 || s->algorithm.n > s->workers))
        return spec_fail(e, "algorithm.n: must be between 1 and workers (%d)", s->workers);
    /* DDC-ASGD's momentum rule (ALGORITHMS.md section 5) adapts mu per update and has no
     * Nesterov form; clip_norm it honours (worker/algo_ddc_asgd.c). */
    if (strcmp(alg, "ddc-asgd") == 0 && s->optimizer.nesterov)
        return spec_fail(e, "optimizer.nesterov: ddc-asgd's delay-adapted momentum has no Nesterov form; "
                            "set it to false or choose another algorithm");
    if (strcmp(alg, "hier-bsp") == 0 && s->algorithm.group_size > s->workers)
        return spec_fail(e, "algorithm.group_size: must be <= workers (%d)", s->workers);
    if (s->algorithm.min_batch > 0 && s->algorithm.max_batch > 0 && s->algorithm.min_batch > s->algorithm.max_batch)
        return spec_fail(e, "algorithm.min_batch: must be <= algorithm.max_batch (%d)", s->algorithm.max_batch);
    /* Every worker starts at batch_size: the bounds must hold it (common/planner.h). */
    if (s->algorithm.min_batch > s->batch_size)
        return spec_fail(e, "algorithm.min_batch: must be <= batch_size (%d)", s->batch_size);
    if (s->algorithm.max_batch > 0 && s->algorithm.max_batch < s->batch_size)
        return spec_fail(e, "algorithm.max_batch: must be >= batch_size (%d)", s->batch_size);

    if (s->algorithm.goodput) {
        if (strcmp(alg, "ssgd") != 0)
            return spec_fail(e,
                             "algorithm.goodput: only for ssgd (the other algorithms report the noise scale but do "
                             "not plan by it), algorithm.name is %s",
                             alg);
        if (s->workers < 2)
            return spec_fail(e, "algorithm.goodput: needs workers >= 2 (the noise scale is measured between the "
                                "workers' gradients)");
        if (s->algorithm.dynamic_batch)
            return spec_fail(e, "algorithm.dynamic_batch: the goodput planner splits the batches itself; set one of "
                                "dynamic_batch and goodput");
    } else if (s->algorithm.max_global_batch > 0) {
        return spec_fail(e, "algorithm.max_global_batch: only with algorithm.goodput");
    }
    if (s->algorithm.max_global_batch > 0 && s->algorithm.max_global_batch < (long)s->workers * s->batch_size)
        return spec_fail(e, "algorithm.max_global_batch: must be >= workers x batch_size (%ld)",
                         (long)s->workers * s->batch_size);

    if (cross_check_compression(e, s) < 0) return -1;
    if (cross_check_growth(e, s) < 0) return -1;
    if (cross_check_sync_bn(e, s) < 0) return -1;
    if (cross_check_precision(e, s) < 0) return -1;
    if (cross_check_shard(e, s) < 0) return -1;

    if (s->optimizer.nbetas != 0 && s->optimizer.nbetas != 2)
        return spec_fail(e, "optimizer.betas: must be [b1, b2], has %d entries", s->optimizer.nbetas);
    /* The parameter server applies AdamW through worker_apply_gradient as a synchronous
     * rank does (its moments and step count are the server's, checkpointed), except in
     * ddc-asgd, whose update is its own staleness-damped momentum rule (ddc_step). */
    if (spec_is_adamw(s) && strcmp(alg, "ddc-asgd") == 0)
        return spec_fail(e,
                         "optimizer.kind: adamw is not applied by ddc-asgd, whose update is its own momentum rule; use "
                         "asgd, dc-asgd, nsoftsync, dbs-sgd or a synchronous algorithm, or optimizer.kind sgd");

    if (strcmp(s->optimizer.lr_schedule.kind, "cosine") == 0 && s->optimizer.lr_schedule.min_lr > s->optimizer.lr)
        return spec_fail(e, "optimizer.lr_schedule.min_lr: must be <= optimizer.lr (%s)",
                         spec_fmt_num(num, s->optimizer.lr));

    if (s->emulate.nslowdown > 0 && s->emulate.nslowdown != s->workers)
        return spec_fail(e, "emulate.slowdown: has %d entries, workers is %d", s->emulate.nslowdown, s->workers);
    for (int i = 0; i < s->emulate.nschedule; i++) {
        const spec_slowdown_change_t *c = &s->emulate.schedule[i];
        if (c->rank >= s->workers)
            return spec_fail(e, "emulate.schedule[%d].rank: must be < workers (%d)", i, s->workers);
        /* The worker applies changes in one forward pass over the list. */
        if (i > 0 && c->step < s->emulate.schedule[i - 1].step)
            return spec_fail(e, "emulate.schedule[%d].step: must be >= the previous entry's step (%ld)", i,
                             s->emulate.schedule[i - 1].step);
    }
    return cross_check_simulate(e, s);
}

int spec_is_async(const job_spec_t *s) { return spec_in_list(s->algorithm.name, ASYNC_ALGORITHMS); }

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
                 spec_fmt_num(m, s->optimizer.momentum), s->algorithm.name, s->workers, 1.0 - 1.0 / s->workers,
                 s->workers);
    }
    return n;
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
