/* common/memest.c - see memest.h. */
#include "memest.h"

#include <stdio.h>
#include <string.h>

#include "compress_mem.h"
#include "dsprobe.h"
#include "planner.h"
#include "shard_plan.h"

/* The classes of s's data set, which a built-in model's head is sized to: the catalog's
 * (a built-in set, or a user's the catalog lists by dataset.name), else the probe of
 * dataset.path (a folder listed, an .npz's labels read: the same the coordinator's
 * submission and the worker's loading make). 0, or -1 with err. */
static int dataset_classes(const job_spec_t *s, int *classes, char *err, size_t errlen)
{
    catalog_dataset_t d;
    if (s->dataset.name[0] && catalog_dataset_get(s->dataset.name, &d) == 0) {
        *classes = d.classes;
        return 0;
    }
    if (!spec_dataset_is_user(s)) {
        snprintf(err, errlen, "dataset.name: %s is not in the catalog: no memory estimate", s->dataset.name);
        return -1;
    }
    dsprobe_t p;
    char why[512];
    if (dsprobe(spec_dataset_format(s), s->dataset.path, s->dataset.layout, &p, why, sizeof why) != 0) {
        snprintf(err, errlen, "dataset.path: %s: no memory estimate", why);
        return -1;
    }
    *classes = p.classes;
    return 0;
}

void memest_model(const catalog_model_t *m, double *model_bytes, double *bytes_per_sample)
{
    const double input = (double)m->C * m->H * m->W;
    *model_bytes = 4.0 * (3.0 * (double)m->params + 4 /* MODEL_GRAD_EXTRA */ + (double)m->buffers + (double)m->fixed);
    /* both arenas, argmax, probabilities; the sample's x (floats) and y; the worker's
     * eval_idx (int) and undisturbed_s (double) per batch slot */
    *bytes_per_sample = 4.0 * ((double)m->acts_per_sample + (double)m->dacts_per_sample + (double)m->argmax_per_sample +
                               m->classes + input + 1 + 1) +
                        8.0;
}

/* The built-in GPT's figures from its fields (model/gpt.h's layer list, counted here: this
 * room cannot build it). Per block: 12 E^2 weights, 9 E of biases (with bias), 4 E of
 * layer norms. Activations a sample: per block 29 T E (norms, projections, the heads'
 * views, the MLP's 4 E twice), 2 H T^2 (the scores and their softmax) and 8 T (the norms'
 * statistics); 4 T E + 4 T outside the blocks and the logits T V; with dropout, its masks'
 * outputs, 2 T E + H T^2 a block and T E. The loss's probabilities are the classes, T V.
 * The gradients' arena (planned by liveness) holds at once the most of: a block's MLP
 * (11 T E), its attention (2 H T^2 + 4 T E) or the logits' (T V + T E), each counted with
 * a T E to spare for the slots' alignment. test_model's test_gpt_estimate checks them
 * against the built model. The text set's files are mapped, not loaded: no data bytes. */
static double gpt_vocab(const job_spec_t *s)
{
    /* A tokenizer's vocabulary is only known once its files are read: a BPE's is counted as
     * GPT-2's 50257 (the common one), a chars one as 256 (character sets are smaller). */
    return s->gpt.vocab_size                          ? s->gpt.vocab_size
           : s->dataset.vocab_size                    ? s->dataset.vocab_size
           : strcmp(s->dataset.tokenizer, "bpe") == 0 ? 50257
                                                      : 256;
}

void memest_gpt_figures(const job_spec_t *s, catalog_model_t *m)
{
    const double L = s->gpt.layers, H = s->gpt.heads, E = s->gpt.embd;
    const double T = s->gpt.block_size ? s->gpt.block_size : s->dataset.block_size ? s->dataset.block_size : 64;
    const double V = gpt_vocab(s);
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "gpt");
    m->C = (int)T;
    m->H = m->W = 1;
    m->classes = (int)(T * V);
    const double TE = T * E, HTT = H * T * T;
    m->params = (long)(V * E * (s->gpt.tie_embeddings ? 1 : 2) + T * E + L * (12 * E * E + (s->gpt.bias ? 13 : 4) * E) +
                       2 * E);
    m->acts_per_sample = (long)(L * (29 * TE + 2 * HTT + 8 * T) + 4 * TE + 4 * T + T * V +
                                (s->gpt.dropout > 0 ? L * (2 * TE + HTT) + TE : 0));
    const double mlp = 12 * TE, attention = 2 * HTT + 5 * TE, logits = T * V + 2 * TE;
    m->dacts_per_sample = (long)(mlp > attention && mlp > logits ? mlp : attention > logits ? attention : logits);
    m->flops_per_sample = 2.0 * (double)m->params * T + L * 4.0 * T * T * E;
}

/* Text read by a tokenizer other than bytes is tokenized in memory (worker/textdata.c), each
 * split's file in turn: the encoder's ids take 4 bytes a byte of text (common/bpe.h,
 * tokenizer.h: at most one id a byte), then the ids are laid out as uint16 in anonymous
 * memory (2 bytes a byte at most) before the 4-byte ones are freed, and the run keeps the 2
 * bytes a byte of both splits. The load's peak is the larger of train's 6 bytes a byte and
 * train's kept 2 beside val's 6. The sizes are the files' (dsprobe: one token a byte); a set
 * the probe cannot read adds nothing here (the submission and the load refuse it, by name).
 * Bytes are mapped where they lie: the page cache, not the rank, holds them. */
static void tokenized_text(const job_spec_t *s, memest_t *out)
{
    catalog_format_t f;
    if (catalog_format_parse(spec_dataset_format(s), &f) != 0 || f != CATALOG_FORMAT_TEXT || !s->dataset.tokenizer[0] ||
        strcmp(s->dataset.tokenizer, "bytes") == 0)
        return;
    dsprobe_t p;
    char why[512];
    if (dsprobe("text", s->dataset.path, s->dataset.layout, &p, why, sizeof why) != 0) return;
    const double tr = p.ntrain, te = p.ntest;
    const double load = 6.0 * tr > 2.0 * tr + 6.0 * te ? 6.0 * tr : 2.0 * tr + 6.0 * te;
    out->load_bytes += load;
    out->data_bytes += 2.0 * (tr + te);
}

int memest_rank(const job_spec_t *s, int nworkers, memest_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    catalog_model_t m;
    catalog_dataset_t d = {0};
    if (spec_model_is_gpt(s)) memest_gpt_figures(s, &m);
    else if (catalog_model_get(s->model, &m) != 0) {
        snprintf(err, errlen, "model: %s is not in the catalog: no memory estimate", s->model);
        return -1;
    }
    if (!spec_dataset_is_user(s) && catalog_dataset_get(s->dataset.name, &d) != 0) {
        snprintf(err, errlen, "dataset.name: %s is not in the catalog: no memory estimate", s->dataset.name);
        return -1;
    }
    /* a built-in's head is the data set's width (one of its own keeps its figures: a
     * mismatch is the pairing's refusal, not the estimate's) */
    int classes;
    if (m.head_in > 0 && (dataset_classes(s, &classes, err, errlen) != 0 ||
                          catalog_model_for_classes(&m, classes, &m, err, errlen) != 0))
        return -1;
    const long train_n = d.train_n, test_n = d.test_n, img = (long)d.C * d.H * d.W;
    int min_b, max_b;
    planner_bounds_world(s, nworkers >= 1 ? nworkers : s->workers, &min_b, &max_b);
    double per_sample;
    out->max_batch = max_b;
    memest_model(&m, &out->model_bytes, &per_sample);
    out->params = (double)m.params;
    /* threads: T > 1 gives each of the CPU kernels' threads its own slice of the
     * convolution workspace and its own weight-gradient partial (kernels/cpu/conv.c), each
     * at most one thread's workspace (within fixed) plus one layer's weights (within
     * params): T x (fixed + params) bounds them, one fixed is counted above. */
    if (s->threads > 1)
        out->model_bytes += 4.0 * ((double)s->threads * ((double)m.fixed + (double)m.params) - (double)m.fixed);
    out->model_bytes += compress_mem_bytes(s->algorithm.name, spec_is_async(s), s->algorithm.compression.kind,
                                           (double)m.params, (double)m.buffers, nworkers >= 1 ? nworkers : s->workers,
                                           s->checkpoint.every_steps > 0);
    /* AdamW keeps two moments: the first where SGD keeps its momentum (counted above), the
     * second in one more fused buffer (model.h's moment2). */
    if (spec_is_adamw(s)) out->model_bytes += 4.0 * (double)m.params;
    out->batch_bytes = (double)max_b * per_sample;
    long kept_train = s->dataset.train_subset > 0 && s->dataset.train_subset < train_n ? s->dataset.train_subset
                                                                                       : train_n;
    long kept_test = s->dataset.test_subset > 0 && s->dataset.test_subset < test_n ? s->dataset.test_subset : test_n;
    /* pixels + int32 labels; the permutation is one int32 per training sample */
    out->data_bytes = (double)(kept_train + kept_test) * (double)(img + 4) + 4.0 * (double)kept_train;
    out->load_bytes = (double)(train_n + test_n) * (double)(img + 4);
    tokenized_text(s, out);
    double run = out->model_bytes + out->batch_bytes + out->data_bytes;
    out->rank_bytes = run > out->load_bytes ? run : out->load_bytes;
    return 0;
}

/* The built-in GPT's largest tensor: the token embedding (V x E) or an MLP matrix (4 E^2). */
static double gpt_largest_tensor(const job_spec_t *s)
{
    const double E = s->gpt.embd, V = gpt_vocab(s);
    return V * E > 4 * E * E ? V * E : 4 * E * E;
}

int memest_rank_of(const job_spec_t *s, int nworkers, int rank, const double *mem, memest_t *out, char *err,
                   size_t errlen)
{
    if (memest_rank(s, nworkers, out, err, errlen) != 0) return -1;
    const int n = nworkers >= 1 ? nworkers : s->workers;
    if (s->algorithm.shard.stage <= 0 || n < 2 || rank < 0 || rank >= n) return 0;
    if (rank == 0 && s->checkpoint.every_steps > 0) return 0;
    const double params = out->params;
    double w[SPEC_MAX_WORKERS];
    size_t bounds[SPEC_MAX_WORKERS + 1];
    int fallback;
    if (n > SPEC_MAX_WORKERS) return 0;
    shard_weights(s, n, mem, w, &fallback);
    if (shard_plan((size_t)params, w, n, bounds) != 0) return 0;
    /* SGD's momentum buffer (allocated with or without momentum) and AdamW's second moment */
    const double state = 4.0 * params * (spec_is_adamw(s) ? 2.0 : 1.0);
    const double share = params > 0 ? (double)(bounds[rank + 1] - bounds[rank]) / params : 1.0;
    out->model_bytes -= state * (1.0 - share);
    /* Stage 2: the gradient outside the range is resident only until the backward pass has
     * reduced its bucket (worker/shard.h): the bucket being written and up to SHARD_LAG
     * finished ones still in transfer, each at most SHARD_BUCKET floats and twice the
     * largest tensor (the one being written, and a tied embedding the head writes first).
     * Only the built-in GPT's tensors are known here: another model's gradient stays
     * counted whole. */
    if (s->algorithm.shard.stage >= 2 && spec_model_is_gpt(s)) {
        const double outside = params * (1.0 - share),
                     pending = (1.0 + SHARD_LAG) * ((double)SHARD_BUCKET + 2.0 * gpt_largest_tensor(s));
        if (outside > pending) out->model_bytes -= 4.0 * (outside - pending);
    }
    double run = out->model_bytes + out->batch_bytes + out->data_bytes;
    out->rank_bytes = run > out->load_bytes ? run : out->load_bytes;
    return 0;
}

int memest_host_rank(const job_spec_t *s, int nworkers, int ranks, memest_t *out, char *err, size_t errlen)
{
    const int n = nworkers >= 1 ? nworkers : s->workers;
    if (memest_rank(s, n, out, err, errlen) != 0) return -1;
    if (s->algorithm.shard.stage <= 0 || n < 2 || n > SPEC_MAX_WORKERS) return 0;
    double each[SPEC_MAX_WORKERS];
    for (int r = 0; r < n; r++) {
        memest_t e;
        if (memest_rank_of(s, n, r, NULL, &e, err, errlen) != 0) return -1;
        each[r] = e.rank_bytes;
        if (r == 0 || e.model_bytes > out->model_bytes) *out = e; /* the largest rank's breakdown */
    }
    /* the `ranks` largest, by selection (n is at most SPEC_MAX_WORKERS) */
    const int k = ranks < 1 ? 1 : ranks > n ? n : ranks;
    double sum = 0;
    for (int i = 0; i < k; i++) {
        int best = i;
        for (int j = i + 1; j < n; j++)
            if (each[j] > each[best]) best = j;
        double t = each[i];
        each[i] = each[best];
        each[best] = t;
        sum += each[i];
    }
    out->rank_bytes = sum / k;
    return 0;
}

int memest_ranks(const job_spec_t *s, int nworkers, const int *ranks, int k, const double *mem, memest_t *out,
                 char *err, size_t errlen)
{
    if (k < 1 || !ranks) return memest_rank(s, nworkers, out, err, errlen);
    double sum = 0, largest = -1;
    for (int i = 0; i < k; i++) {
        memest_t e;
        if (memest_rank_of(s, nworkers, ranks[i], mem, &e, err, errlen) != 0) return -1;
        sum += e.rank_bytes;
        if (e.rank_bytes > largest) {
            largest = e.rank_bytes;
            *out = e;
        }
    }
    out->rank_bytes = sum / k;
    return 0;
}

const char *memest_fmt(double bytes, char *out, size_t len)
{
    const double MiB = 1024.0 * 1024.0;
    if (bytes >= 10.0 * 1024 * MiB) snprintf(out, len, "%.1f GiB", bytes / (1024 * MiB));
    else snprintf(out, len, "%.0f MiB", bytes / MiB + 0.5);
    return out;
}

int memest_check(const memest_t *e, int ranks, double avail_bytes, const char *where, char *err, size_t errlen)
{
    if (ranks < 1) ranks = 1;
    double need = (double)ranks * e->rank_bytes;
    if (need <= avail_bytes) return 0;
    char a[32], b[32], c[32], d[32], t[32], h[32];
    snprintf(err, errlen,
             "estimated memory %s = %d rank%s x %s per rank (model %s, activations and batch %s for the largest "
             "batch %d, data %s) is more than the %s of %s",
             memest_fmt(need, t, sizeof t), ranks, ranks == 1 ? "" : "s", memest_fmt(e->rank_bytes, a, sizeof a),
             memest_fmt(e->model_bytes, b, sizeof b), memest_fmt(e->batch_bytes, c, sizeof c), e->max_batch,
             memest_fmt(e->data_bytes, d, sizeof d), memest_fmt(avail_bytes, h, sizeof h), where);
    return -1;
}

double memest_meminfo(const char *field)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f) return -1;
    char line[256];
    size_t n = strlen(field);
    double v = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (strncmp(line, field, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%llu", &kb) == 1) {
            v = (double)kb * 1024.0;
            break;
        }
    }
    fclose(f);
    return v;
}
