/* model/generate.c - see generate.h. */
#include "generate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "matmul.h"

struct gen_state {
    model_t *m;
    int block, vocab, pos;
    /* the plan that runs positions (NULL: each token recomputes the window, for why) */
    decode_plan_t *plan;
    char why[256];
    int use_cache; /* gen_use_cache's */
    /* the window's ids as the graph's float input; labels for the loss model_forward
     * computes along (never used) */
    float *window;
    int32_t *labels;
};

void gen_close(gen_state_t *s)
{
    if (!s) return;
    decode_plan_free(s->plan);
    free(s->window);
    free(s->labels);
    free(s);
}

void gen_reset(gen_state_t *s) { s->pos = 0; }
int gen_position(const gen_state_t *s) { return s->pos; }

int gen_cached(const gen_state_t *s, const char **why)
{
    if (why) *why = !s->plan ? s->why : s->use_cache ? NULL : "the cache is turned off";
    return s->plan && s->use_cache;
}

void gen_use_cache(gen_state_t *s, int on)
{
    s->use_cache = on;
    gen_reset(s); /* a window recomputed leaves no cache behind (fused layers write none) */
}

int gen_graph_check(const model_t *m, char *err, size_t errlen)
{
    int embeds = 0;
    for (int i = 0; i < m->nlayers; i++) embeds |= m->layers[i].in == -1 && m->layers[i].kind == LAYER_EMBED;
    if (!embeds || m->H != 1 || m->W != 1 || m->positions != m->C || m->C < 1 || m->num_classes < 2) {
        snprintf(err, errlen,
                 "generation: model %s is no language model (token ids (N, T) in, logits (N, T, vocabulary) out): "
                 "it takes %dx%dx%d and gives %d position(s) of %d",
                 m->name, m->C, m->H, m->W, m->positions, m->num_classes);
        return -1;
    }
    return 0;
}

int gen_open(model_t *m, gen_state_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (gen_graph_check(m, err, errlen) != 0) return -1;
    gen_state_t *s = calloc(1, sizeof *s);
    const size_t T = (size_t)m->C;
    if (s) {
        s->m = m;
        s->block = m->C;
        s->vocab = m->num_classes;
        s->window = calloc(T, sizeof(float));
        s->labels = calloc(T, sizeof(int32_t));
    }
    if (!s || !s->window || !s->labels) {
        gen_close(s);
        snprintf(err, errlen, "generation: out of memory for a window of %zu positions", T);
        return -1;
    }
    /* a graph that cannot run by positions still generates, recomputing windows */
    if (decode_plan(m, &s->plan, s->why, sizeof s->why) != 0) s->plan = NULL;
    s->use_cache = 1;
    *out = s;
    return 0;
}

/* The graph's forward over the whole window after rows new ids (the positions past them
 * hold id 0: a causal model's logits at the last id do not read them). */
static void graph_feed(gen_state_t *s, int rows)
{
    s->pos += rows;
    for (int t = s->pos; t < s->block; t++) s->window[t] = 0.0f;
    model_forward(s->m, s->window, s->labels, 1, 0);
}

/* rows (1..T) tokens at the next positions; the last one's logits into *logits. */
static int feed_rows(gen_state_t *s, const uint32_t *ids, int rows, const float **logits, char *err, size_t errlen)
{
    for (int r = 0; r < rows; r++)
        if (ids[r] >= (uint32_t)s->vocab) {
            snprintf(err, errlen, "generation: token id %u is outside the vocabulary (%d)", ids[r], s->vocab);
            return -1;
        }
    if (s->pos + rows > s->block) {
        snprintf(err, errlen, "generation: the window of %d positions is full", s->block);
        return -1;
    }
    for (int r = 0; r < rows; r++) s->window[s->pos + r] = (float)ids[r];
    if (gen_cached(s, NULL)) {
        decode_rows(s->m, s->plan, s->window, s->pos, s->pos + rows);
        s->pos += rows;
    } else graph_feed(s, rows);
    *logits = model_logits(s->m) + (size_t)(s->pos - 1) * (size_t)s->vocab;
    return 0;
}

int gen_feed(gen_state_t *s, uint32_t token, const float **logits, char *err, size_t errlen)
{
    return feed_rows(s, &token, 1, logits, err, errlen);
}

static int desc_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

static uint32_t argmax(const float *l, int V)
{
    int best = 0;
    for (int i = 1; i < V; i++)
        if (l[i] > l[best]) best = i;
    return (uint32_t)best;
}

uint32_t gen_sample(const float *logits, int V, double temperature, int top_k, rng_t *r, float *scratch)
{
    if (!(temperature > 0.0)) return argmax(logits, V);
    const int k = top_k <= 0 || top_k >= V ? V : top_k;
    /* the k-th largest logit: ids above it are candidates, ids equal to it too in id order
     * until k are taken */
    memcpy(scratch, logits, (size_t)V * sizeof(float));
    qsort(scratch, (size_t)V, sizeof(float), desc_float);
    const float kth = scratch[k - 1], mx = scratch[0];
    int above = 0;
    for (int i = 0; i < V; i++) above += logits[i] > kth;
    int ties = k - above;
    double total = 0.0;
    for (int i = 0, t = ties; i < V; i++) {
        const int in = logits[i] > kth || (logits[i] == kth && t-- > 0);
        scratch[i] = in ? 1.0f : 0.0f;
        if (in) total += exp(((double)logits[i] - mx) / temperature);
    }
    const double u = (double)rng_uniform(r) * total;
    double run = 0.0;
    int last = 0;
    for (int i = 0; i < V; i++) {
        if (scratch[i] == 0.0f) continue;
        run += exp(((double)logits[i] - mx) / temperature);
        last = i;
        if (run > u) return (uint32_t)i;
    }
    return (uint32_t)last;
}

/* Feeds n ids from position 0 in one call (one product per weight for the whole prompt);
 * the last one's logits into *logits. */
static int prefill(gen_state_t *s, const uint32_t *ids, size_t n, const float **logits, char *err, size_t errlen)
{
    gen_reset(s);
    return feed_rows(s, ids, (int)n, logits, err, errlen);
}

int gen_run(gen_state_t *s, const uint32_t *prompt, size_t n, const gen_opts_t *o, gen_token_fn on_token, void *ctx,
            uint32_t *out, size_t *cut, char *err, size_t errlen)
{
    const size_t block = (size_t)s->block;
    if (n == 0 || o->max_tokens < 1 || o->max_tokens > GEN_MAX_TOKENS) {
        snprintf(err, errlen, n == 0 ? "generation: the prompt has no tokens" : "generation: max_tokens must be 1..%d",
                 GEN_MAX_TOKENS);
        return -1;
    }
    *cut = n > block ? n - block : 0;
    const size_t np = n - *cut, len = np + (size_t)o->max_tokens;
    uint32_t *seq = malloc(len * sizeof *seq);
    float *scratch = malloc((size_t)s->vocab * sizeof *scratch);
    const float *logits = NULL;
    int count = -1;
    if (!seq || !scratch) {
        snprintf(err, errlen, "generation: out of memory");
        goto done;
    }
    memcpy(seq, prompt + *cut, np * sizeof *seq);
    mm_weights_changed(); /* the weights may have changed since the last run (bf16's packings) */
    if (prefill(s, seq, np, &logits, err, errlen) != 0) goto done;
    rng_t r;
    rng_seed(&r, o->seed);
    size_t have = np;
    const int V = o->vocab_limit > 0 && o->vocab_limit < s->vocab ? o->vocab_limit : s->vocab;
    for (count = 0; count < o->max_tokens;) {
        const uint32_t tok = gen_sample(logits, V, o->temperature, o->top_k, &r, scratch);
        out[count] = seq[have++] = tok;
        count++;
        if ((on_token && on_token(ctx, tok, count - 1) != 0) || count == o->max_tokens) break;
        /* a full window: nanoGPT's crop to the last block tokens, recomputed */
        const int rc = gen_position(s) < (int)block ? gen_feed(s, tok, &logits, err, errlen)
                                                    : prefill(s, seq + have - block, block, &logits, err, errlen);
        if (rc != 0) {
            count = -1;
            break;
        }
    }
done:
    free(seq);
    free(scratch);
    return count;
}
