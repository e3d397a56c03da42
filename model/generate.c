/* model/generate.c - see generate.h. */
#include "generate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "gemv.h"
#include "matmul.h"
#include "ops.h"

typedef struct {
    const float *ln1w, *ln1b, *attnw, *attnb, *projw, *projb;
    const float *ln2w, *ln2b, *fcw, *fcb, *fc2w, *fc2b;
} gen_layer_t;

struct gen_state {
    model_gpt_t g;
    const float *wte, *wpe, *lnfw, *lnfb, *head;
    gen_layer_t *layers;
    float *kcache, *vcache; /* (layers, block, embd) each */
    /* GEN_ROWS positions at once (a prompt's chunk): (rows, embd), (rows, 3 embd), ... */
    float *x, *h, *qkv, *y, *mlp, *act, *scores, *logits;
    int pos;
    /* a language-model graph (gen_open_graph): no cache; the window's ids as the graph's
     * float input, and labels the loss it computes along reads (never used) */
    model_t *graph;
    float *window;
    int32_t *labels;
};

/* The parameter tensor name of count floats, or NULL with err (a bias the model lacks is
 * asked for with optional set and is no error). */
static const float *tensor(const model_t *m, const char *name, size_t count, int optional, char *err, size_t errlen)
{
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *ti = &m->tensors[t];
        if (ti->is_buffer || strcmp(ti->name, name) != 0) continue;
        if (ti->count == count) return m->params + ti->offset;
        snprintf(err, errlen, "generation: tensor %s has %zu elements, the GPT's shape needs %zu", name, ti->count,
                 count);
        return NULL;
    }
    if (!optional) snprintf(err, errlen, "generation: the model has no tensor %s (not a GPT?)", name);
    return NULL;
}

/* transformer.h.<i>.<part> of count floats into *out: 0, or -1 with err. */
static int block_tensor(const model_t *m, int i, const char *part, size_t count, int optional, const float **out,
                        char *err, size_t errlen)
{
    char name[MODEL_TENSOR_NAME_MAX];
    snprintf(name, sizeof name, "transformer.h.%d.%s", i, part);
    err[0] = '\0';
    *out = tensor(m, name, count, optional, err, errlen);
    return *out || (optional && err[0] == '\0') ? 0 : -1;
}

static int find_layer(const model_t *m, const model_gpt_t *g, int i, gen_layer_t *L, char *err, size_t errlen)
{
    const size_t E = (size_t)g->embd;
    const int nb = !g->bias; /* biases absent from a bias-less GPT */
    int rc = 0;
    rc |= block_tensor(m, i, "ln_1.weight", E, 0, &L->ln1w, err, errlen);
    rc |= rc ? 0 : block_tensor(m, i, "ln_1.bias", E, 0, &L->ln1b, err, errlen);
    rc |= rc ? 0 : block_tensor(m, i, "attn.c_attn.weight", 3 * E * E, 0, &L->attnw, err, errlen);
    rc |= rc ? 0 : block_tensor(m, i, "attn.c_attn.bias", 3 * E, nb, &L->attnb, err, errlen);
    rc |= rc ? 0 : block_tensor(m, i, "attn.c_proj.weight", E * E, 0, &L->projw, err, errlen);
    rc |= rc ? 0 : block_tensor(m, i, "attn.c_proj.bias", E, nb, &L->projb, err, errlen);
    rc |= rc ? 0 : block_tensor(m, i, "ln_2.weight", E, 0, &L->ln2w, err, errlen);
    rc |= rc ? 0 : block_tensor(m, i, "ln_2.bias", E, 0, &L->ln2b, err, errlen);
    rc |= rc ? 0 : block_tensor(m, i, "mlp.c_fc.weight", 4 * E * E, 0, &L->fcw, err, errlen);
    rc |= rc ? 0 : block_tensor(m, i, "mlp.c_fc.bias", 4 * E, nb, &L->fcb, err, errlen);
    rc |= rc ? 0 : block_tensor(m, i, "mlp.c_proj.weight", 4 * E * E, 0, &L->fc2w, err, errlen);
    rc |= rc ? 0 : block_tensor(m, i, "mlp.c_proj.bias", E, nb, &L->fc2b, err, errlen);
    return rc ? -1 : 0;
}

static int find_weights(gen_state_t *s, const model_t *m, char *err, size_t errlen)
{
    const model_gpt_t *g = &s->g;
    const size_t E = (size_t)g->embd, V = (size_t)g->vocab;
    if (!(s->wte = tensor(m, "transformer.wte.weight", V * E, 0, err, errlen))) return -1;
    if (!(s->wpe = tensor(m, "transformer.wpe.weight", (size_t)g->block * E, 0, err, errlen))) return -1;
    if (!(s->lnfw = tensor(m, "transformer.ln_f.weight", E, 0, err, errlen))) return -1;
    if (!(s->lnfb = tensor(m, "transformer.ln_f.bias", E, 0, err, errlen))) return -1;
    s->head = g->tie ? s->wte : tensor(m, "lm_head.weight", V * E, 0, err, errlen);
    if (!s->head) return -1;
    for (int i = 0; i < g->layers; i++)
        if (find_layer(m, g, i, &s->layers[i], err, errlen) != 0) return -1;
    return 0;
}

int gen_open(const model_t *m, const model_gpt_t *g, gen_state_t **out, char *err, size_t errlen)
{
    *out = NULL;
    gen_state_t *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->g = *g;
    const size_t E = (size_t)g->embd, cache = (size_t)g->layers * (size_t)g->block * E;
    s->layers = calloc((size_t)g->layers, sizeof *s->layers);
    s->kcache = malloc(cache * sizeof(float));
    s->vcache = malloc(cache * sizeof(float));
    const size_t R = GEN_ROWS;
    s->x = malloc(R * E * sizeof(float));
    s->h = malloc(R * E * sizeof(float));
    s->y = malloc(R * E * sizeof(float));
    s->qkv = malloc(R * 3 * E * sizeof(float));
    s->mlp = malloc(R * 4 * E * sizeof(float));
    s->act = malloc(R * 4 * E * sizeof(float));
    s->scores = malloc((size_t)g->block * sizeof(float));
    s->logits = malloc((size_t)g->vocab * sizeof(float));
    if (!s->layers || !s->kcache || !s->vcache || !s->x || !s->h || !s->y || !s->qkv || !s->mlp || !s->act ||
        !s->scores || !s->logits) {
        gen_close(s);
        goto oom;
    }
    if (find_weights(s, m, err, errlen) != 0) {
        gen_close(s);
        return -1;
    }
    *out = s;
    return 0;
oom:
    snprintf(err, errlen, "generation: out of memory for the key/value cache (%d layers x %d positions x %d)",
             g->layers, g->block, g->embd);
    return -1;
}

void gen_close(gen_state_t *s)
{
    if (!s) return;
    free(s->layers);
    free(s->kcache);
    free(s->vcache);
    free(s->x);
    free(s->h);
    free(s->y);
    free(s->qkv);
    free(s->mlp);
    free(s->act);
    free(s->scores);
    free(s->logits);
    free(s->window);
    free(s->labels);
    free(s);
}

void gen_reset(gen_state_t *s) { s->pos = 0; }
int gen_position(const gen_state_t *s) { return s->pos; }

/* out (rows, OUT) = in (rows, IN) x w (OUT, IN)^T + b (b may be NULL). At bf16 products
 * (matmul.h) one row too goes through the GEMM, whose tiles read the weight packed once
 * for the whole generation (fc.c keeps it; generation never changes it), half the bytes
 * of the float32 matrix-vector product's. */
static void linear(int rows, int IN, int OUT, const float *in, const float *w, const float *b, float *out)
{
    if (rows == 1 && mm_precision() == MM_FP32) {
        gemv_forward(IN, OUT, in, w, b, out); /* a new token: the weights read faster */
        return;
    }
    const gemm_desc_t d = {.IN = IN, .OUT = OUT, .layout = GEMM_W_OUT_IN, .alpha = 1.0f, .beta = 1.0f};
    gemm_forward(&d, rows, in, w, b, out);
}

/* One head of one query over the T cached positions (each E floats apart): scores, their
 * softmax, y (D) = the scores' mix of the values. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
attend_head(int T, int D, size_t E, float scale, const float *restrict q, const float *restrict kc,
            const float *restrict vc, float *restrict scores, float *restrict y, int bf16)
{
    float mx = -INFINITY, sum = 0.0f;
    for (int t = 0; t < T; t++) {
        scores[t] = gemv_dot(D, q, kc + (size_t)t * E) * scale; /* 16 lanes: no chain of D additions */
        if (scores[t] > mx) mx = scores[t];
    }
    for (int t = 0; t < T; t++) sum += scores[t] = expf(scores[t] - mx);
    memset(y, 0, (size_t)D * sizeof(float));
    for (int t = 0; t < T; t++) {
        /* at bf16 the weights are rounded as the fused attention's (attention.c) */
        const float p = bf16 ? bf16_round(scores[t] / sum) : scores[t] / sum, *v = vc + (size_t)t * E;
        for (int d = 0; d < D; d++) y[d] += p * v[d];
    }
}

/* Causal self-attention of the rows positions from s->pos on of layer l: their q, k, v in
 * s->qkv, their k and v appended to the cache first (row r sees the positions up to its
 * own), the heads' outputs into s->y. */
static void attend(gen_state_t *s, int l, int rows)
{
    const int E = s->g.embd, H = s->g.heads, D = E / H;
    float *kc = s->kcache + (size_t)l * s->g.block * E, *vc = s->vcache + (size_t)l * s->g.block * E;
    const int bf16 = mm_precision() == MM_BF16;
    for (int r = 0; r < rows; r++) {
        float *q = s->qkv + (size_t)r * 3 * E, *k = kc + (size_t)(s->pos + r) * E, *v = vc + (size_t)(s->pos + r) * E;
        /* at bf16 the products' operands rounded: q where it is, k and v as they are cached */
        if (bf16) {
            bf16_round_rows(1, E, q, (size_t)E, q);
            bf16_round_rows(1, E, q + E, (size_t)E, k);
            bf16_round_rows(1, E, q + 2 * E, (size_t)E, v);
        } else {
            memcpy(k, q + E, (size_t)E * sizeof(float));
            memcpy(v, q + 2 * E, (size_t)E * sizeof(float));
        }
    }
    const float scale = 1.0f / sqrtf((float)D);
    for (int r = 0; r < rows; r++)
        for (int hh = 0; hh < H; hh++)
            attend_head(s->pos + r + 1, D, (size_t)E, scale, s->qkv + (size_t)r * 3 * E + hh * D, kc + hh * D,
                        vc + hh * D, s->scores, s->y + (size_t)r * E + hh * D, bf16);
}

static void block_forward(gen_state_t *s, int l, int rows)
{
    const gen_layer_t *L = &s->layers[l];
    const int E = s->g.embd;
    const size_t n = (size_t)rows * E;
    layernorm_forward(rows, E, 1e-5f, s->x, L->ln1w, L->ln1b, s->h);
    linear(rows, E, 3 * E, s->h, L->attnw, L->attnb, s->qkv);
    attend(s, l, rows);
    linear(rows, E, E, s->y, L->projw, L->projb, s->h);
    for (size_t i = 0; i < n; i++) s->x[i] += s->h[i];
    layernorm_forward(rows, E, 1e-5f, s->x, L->ln2w, L->ln2b, s->h);
    linear(rows, E, 4 * E, s->h, L->fcw, L->fcb, s->mlp);
    unary_forward(UNARY_GELU, 0.0f, 4 * n, s->mlp, s->act); /* not in place: it rereads its input */
    linear(rows, 4 * E, E, s->act, L->fc2w, L->fc2b, s->h);
    for (size_t i = 0; i < n; i++) s->x[i] += s->h[i];
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

int gen_open_graph(model_t *m, gen_state_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (gen_graph_check(m, err, errlen) != 0) return -1;
    gen_state_t *s = calloc(1, sizeof *s);
    const size_t T = (size_t)m->C;
    if (s) {
        s->graph = m;
        s->g = (model_gpt_t){.block = m->C, .vocab = m->num_classes};
        s->window = calloc(T, sizeof(float));
        s->labels = calloc(T, sizeof(int32_t));
    }
    if (!s || !s->window || !s->labels) {
        gen_close(s);
        snprintf(err, errlen, "generation: out of memory for a window of %zu positions", T);
        return -1;
    }
    *out = s;
    return 0;
}

/* rows ids (checked by feed_rows) appended to the window, then the graph's forward over the
 * whole window (the positions past it hold id 0: a causal model's logits at the last id do
 * not read them), the last id's logits into *logits. */
static void graph_feed(gen_state_t *s, const uint32_t *ids, int rows, const float **logits)
{
    for (int r = 0; r < rows; r++) s->window[s->pos + r] = (float)ids[r];
    s->pos += rows;
    for (int t = s->pos; t < s->g.block; t++) s->window[t] = 0.0f;
    model_forward(s->graph, s->window, s->labels, 1, 0);
    *logits = model_logits(s->graph) + (size_t)(s->pos - 1) * (size_t)s->g.vocab;
}

/* rows (1..GEN_ROWS) tokens at the next positions; the last one's logits into *logits. */
static int feed_rows(gen_state_t *s, const uint32_t *ids, int rows, const float **logits, char *err, size_t errlen)
{
    for (int r = 0; r < rows; r++)
        if (ids[r] >= (uint32_t)s->g.vocab) {
            snprintf(err, errlen, "generation: token id %u is outside the vocabulary (%d)", ids[r], s->g.vocab);
            return -1;
        }
    if (s->pos + rows > s->g.block) {
        snprintf(err, errlen, "generation: the window of %d positions is full", s->g.block);
        return -1;
    }
    if (s->graph) {
        graph_feed(s, ids, rows, logits);
        return 0;
    }
    const int E = s->g.embd;
    for (int r = 0; r < rows; r++) {
        const float *te = s->wte + (size_t)ids[r] * E, *pe = s->wpe + (size_t)(s->pos + r) * E;
        for (int i = 0; i < E; i++) s->x[(size_t)r * E + i] = te[i] + pe[i];
    }
    for (int l = 0; l < s->g.layers; l++) block_forward(s, l, rows);
    const float *last = s->x + (size_t)(rows - 1) * E;
    layernorm_forward(1, E, 1e-5f, last, s->lnfw, s->lnfb, s->h);
    linear(1, E, s->g.vocab, s->h, s->head, NULL, s->logits);
    s->pos += rows;
    *logits = s->logits;
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

/* Feeds n ids from an empty cache, GEN_ROWS at a time (one GEMM per weight for each chunk,
 * not one matrix-vector product per token: a prompt's first token comes that much sooner);
 * the last one's logits into *logits. */
static int prefill(gen_state_t *s, const uint32_t *ids, size_t n, const float **logits, char *err, size_t errlen)
{
    gen_reset(s);
    /* a graph computes the whole window per call: the prompt at once (n <= block) */
    const size_t chunk = s->graph ? n : GEN_ROWS;
    for (size_t i = 0; i < n; i += chunk) {
        const int rows = n - i < chunk ? (int)(n - i) : (int)chunk;
        if (feed_rows(s, ids + i, rows, logits, err, errlen) != 0) return -1;
    }
    return 0;
}

int gen_run(gen_state_t *s, const uint32_t *prompt, size_t n, const gen_opts_t *o, gen_token_fn on_token, void *ctx,
            uint32_t *out, size_t *cut, char *err, size_t errlen)
{
    const size_t block = (size_t)s->g.block;
    if (n == 0 || o->max_tokens < 1 || o->max_tokens > GEN_MAX_TOKENS) {
        snprintf(err, errlen, n == 0 ? "generation: the prompt has no tokens" : "generation: max_tokens must be 1..%d",
                 GEN_MAX_TOKENS);
        return -1;
    }
    *cut = n > block ? n - block : 0;
    const size_t np = n - *cut, len = np + (size_t)o->max_tokens;
    uint32_t *seq = malloc(len * sizeof *seq);
    float *scratch = malloc((size_t)s->g.vocab * sizeof *scratch);
    const float *logits = NULL;
    int count = -1;
    if (!seq || !scratch) {
        snprintf(err, errlen, "generation: out of memory");
        goto done;
    }
    memcpy(seq, prompt + *cut, np * sizeof *seq);
    if (prefill(s, seq, np, &logits, err, errlen) != 0) goto done;
    rng_t r;
    rng_seed(&r, o->seed);
    size_t have = np;
    const int V = o->vocab_limit > 0 && o->vocab_limit < s->g.vocab ? o->vocab_limit : s->g.vocab;
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
