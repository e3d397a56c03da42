/* model/lora.c - see lora.h. */
#include "lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "freeze.h"
#include "hash.h"
#include "matmul.h"
#include "rng.h"

/* The parameter tensor at params offset off, or -1. */
static int param_tensor_at(const model_t *m, size_t off)
{
    for (int t = 0; t < m->ntensors; t++)
        if (!m->tensors[t].is_buffer && m->tensors[t].offset == off && m->tensors[t].count > 0) return t;
    return -1;
}

/* The weight tensor of product layer i that an adapter may take, or -1: a LAYER_FC or
 * LAYER_LINEAR whose weight no other layer reads (a tied head's is its embedding's). */
static int product_weight(const model_t *m, int i)
{
    const layer_t *l = &m->layers[i];
    if (l->kind != LAYER_FC && l->kind != LAYER_LINEAR) return -1;
    for (int k = 0; k < m->nlayers; k++) {
        const layer_kind_t kk = m->layers[k].kind;
        if (k != i && m->layers[k].w_off == l->w_off && (kk == LAYER_FC || kk == LAYER_LINEAR || kk == LAYER_EMBED))
            return -1;
    }
    return param_tensor_at(m, l->w_off);
}

/* "<W's name without .weight>.lora_<which>.weight" into out; 0, or -1 when it does not fit. */
static int adapter_name(const char *w, char which, char *out, size_t len)
{
    size_t n = strlen(w);
    if (n > 7 && strcmp(w + n - 7, ".weight") == 0) n -= 7;
    const int k = snprintf(out, len, "%.*s.lora_%c.weight", (int)n, w, which);
    return k > 0 && (size_t)k < len ? 0 : -1;
}

typedef struct {
    const model_t *src;
    const lora_opts_t *o;
    const int *target; /* per layer of src: its weight tensor when it takes an adapter, else -1 */
    int *map;          /* per layer of src: the new model's layer that stands for its output */
    lora_adapter_t *ad;
    int n;
} apply_ctx_t;

static int mapped(const apply_ctx_t *c, int li) { return li >= 0 ? c->map[li] : -1; }

/* The adapter beside product layer i of src, copied as li: its layers, and the Add that
 * stands for the product's output from now on. */
static int add_adapter(model_builder_t *b, apply_ctx_t *c, int i, int li)
{
    const layer_t *p = &c->src->layers[i];
    const lora_opts_t *o = c->o;
    char an[MODEL_TENSOR_NAME_MAX], bn[MODEL_TENSOR_NAME_MAX];
    const char *w = c->src->tensors[c->target[i]].name;
    adapter_name(w, 'A', an, sizeof an); /* fits: model_lora_apply checked */
    adapter_name(w, 'B', bn, sizeof bn);
    int x = mapped(c, p->in);
    if (o->dropout > 0.0f) x = model_build_elementwise(b, LAYER_DROPOUT, x, o->dropout);
    const gemm_desc_t ga = {.layout = GEMM_W_OUT_IN, .alpha = 1.0f, .beta = 1.0f};
    const gemm_desc_t gb = {.layout = GEMM_W_OUT_IN, .alpha = o->alpha / (float)o->rank, .beta = 1.0f};
    int a, bb;
    if (p->kind == LAYER_FC) { /* flattening, as the product */
        a = model_build_gemm(b, x, o->rank, &ga, an, NULL);
        bb = model_build_gemm(b, a, p->op.gemm.OUT, &gb, bn, NULL);
    } else {
        a = model_build_linear_gemm(b, x, o->rank, &ga, an);
        bb = model_build_linear_gemm(b, a, p->op.gemm.OUT, &gb, bn);
    }
    const int add = model_build_add(b, li, bb);
    c->ad[c->n++] = (lora_adapter_t){.weight = c->target[i],
                                     .layout = p->op.gemm.layout,
                                     .w_alpha = p->op.gemm.alpha,
                                     .in = p->op.gemm.IN,
                                     .out = p->op.gemm.OUT,
                                     .product = li,
                                     .add = add};
    return add;
}

static int build_apply(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    apply_ctx_t *c = ctx;
    const model_t *src = c->src;
    (void)err, (void)errlen;
    model_build_tensors_of(b, src, src->ntensors);
    for (int i = 0; i < src->nlayers; i++) {
        const layer_t *l = &src->layers[i];
        const int li = model_build_copy(b, l, mapped(c, l->in), mapped(c, l->in2));
        c->map[i] = c->target[i] >= 0 ? add_adapter(b, c, i, li) : li;
    }
    return 0;
}

/* Each glob of o's matches a product's weight (pw: product_weight of each layer): 0, or -1
 * with err naming the first that does not, and some that would. */
static int check_targets(const model_t *m, const int *pw, const lora_opts_t *o, char *err, size_t errlen)
{
    char g[FREEZE_GLOB_MAX];
    size_t at = 0;
    while (freeze_next(o->targets, &at, g)) {
        int hit = 0;
        for (int i = 0; i < m->nlayers && !hit; i++) hit = pw[i] >= 0 && freeze_matches(g, m->tensors[pw[i]].name);
        if (hit) continue;
        char some[400] = "";
        size_t k = 0;
        int shown = 0;
        for (int i = 0; i < m->nlayers && shown < 4; i++) {
            const int t = pw[i];
            if (t < 0 || k >= sizeof some) continue;
            k += (size_t)snprintf(some + k, sizeof some - k, "%s%s", shown ? ", " : "", m->tensors[t].name);
            shown++;
        }
        return snprintf(err, errlen,
                        "lora.targets: '%s' matches no matrix product's weight of the model (a Gemm's, MatMul's or "
                        "linear layer's not shared with another layer; %s%s)",
                        g, shown ? "some are: " : "the model has none", some),
               -1;
    }
    return 0;
}

int model_lora_apply(const model_t *base, const lora_opts_t *o, model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (o->rank < 1 || o->rank > LORA_MAX_RANK || !(o->alpha > 0.0f) || !isfinite(o->alpha) ||
        !(o->dropout >= 0.0f && o->dropout < 1.0f) || !o->targets[0])
        return snprintf(err, errlen, "lora: rank 1..%d, alpha > 0, dropout in [0, 1) and targets are required",
                        LORA_MAX_RANK),
               -1;
    apply_ctx_t c = {.src = base, .o = o};
    int *target = malloc((size_t)base->nlayers * sizeof *target);
    c.map = malloc((size_t)base->nlayers * sizeof *c.map);
    c.ad = calloc((size_t)base->nlayers, sizeof *c.ad);
    model_lora_t *l = calloc(1, sizeof *l);
    int rc = -1;
    if (!target || !c.map || !c.ad || !l) {
        snprintf(err, errlen, "lora: out of memory");
        goto out;
    }
    for (int i = 0; i < base->nlayers; i++) target[i] = product_weight(base, i);
    if (check_targets(base, target, o, err, errlen) != 0) goto out;
    c.target = target;
    for (int i = 0; i < base->nlayers; i++) {
        const int t = target[i];
        char name[MODEL_TENSOR_NAME_MAX];
        target[i] = t >= 0 && freeze_matches(o->targets, base->tensors[t].name) ? t : -1;
        if (target[i] >= 0 && adapter_name(base->tensors[t].name, 'A', name, sizeof name) != 0) {
            snprintf(err, errlen, "lora: the adapter of '%s' would have a name of more than %d bytes",
                     base->tensors[t].name, MODEL_TENSOR_NAME_MAX - 1);
            goto out;
        }
    }
    model_t *m;
    if (model_create_custom_shape(base->name, &base->in_shape, base->num_classes, base->max_batch, build_apply, &c, &m,
                                  err, errlen) != 0)
        goto out;
    *l = (model_lora_t){.rank = o->rank,
                        .alpha = o->alpha,
                        .scale = o->alpha / (float)o->rank,
                        .base_tensors = base->ntensors,
                        .base_params = base->nparams,
                        .base_buffers = base->nbuffers,
                        .n = c.n,
                        .ad = c.ad};
    for (int k = 0; k < c.n; k++) { /* A and B: the two tensors the adapter's products added, in order */
        const layer_t *bl = &m->layers[m->layers[c.ad[k].add].in2], *al = &m->layers[bl->in];
        c.ad[k].a = param_tensor_at(m, al->w_off);
        c.ad[k].b = param_tensor_at(m, bl->w_off);
    }
    c.ad = NULL;
    m->lora = l;
    l = NULL;
    memcpy(m->params, base->params, base->nparams * sizeof *m->params);
    memcpy(m->buffers, base->buffers, base->nbuffers * sizeof *m->buffers);
    m->dropout_seed = base->dropout_seed;
    m->dropout_step = base->dropout_step;
    m->label_smoothing = base->label_smoothing;
    m->attention_unfused = base->attention_unfused;
    *out = m;
    rc = 0;
out:
    free(target);
    free(c.map);
    free(c.ad);
    free(l);
    return rc;
}

void model_lora_init(model_t *m, uint64_t seed)
{
    if (!m->lora) return;
    static const char what[] = "lora";
    rng_t r;
    rng_seed(&r, hash_fnv1a(hash_fnv1a(HASH_FNV1A_INIT, &seed, sizeof seed), what, sizeof what));
    for (int k = 0; k < m->lora->n; k++) {
        const lora_adapter_t *a = &m->lora->ad[k];
        const tensor_info_t *ta = &m->tensors[a->a], *tb = &m->tensors[a->b];
        /* kaiming_uniform_(a = sqrt(5)): gain sqrt(2 / (1 + 5)), bound gain sqrt(3 / IN) = 1 / sqrt(IN) */
        const float bound = 1.0f / sqrtf((float)a->in);
        for (size_t i = 0; i < ta->count; i++) m->params[ta->offset + i] = bound * (2.0f * rng_uniform(&r) - 1.0f);
        memset(m->params + tb->offset, 0, tb->count * sizeof *m->params);
    }
}

int model_lora_is_adapter(const model_t *m, int t) { return m->lora && t >= m->lora->base_tensors; }

void model_lora_targetable(const model_t *m, unsigned char *is_target)
{
    memset(is_target, 0, (size_t)m->ntensors);
    for (int i = 0; i < m->nlayers; i++) {
        const int t = product_weight(m, i);
        if (t >= 0) is_target[t] = 1;
    }
}

typedef struct {
    const model_t *src;
    int *map;
    int *skip; /* per layer of src: 1 for an adapter's layer, 2 for its Add */
    int *stands;
} base_ctx_t;

static int build_base(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    base_ctx_t *c = ctx;
    const model_t *src = c->src;
    (void)err, (void)errlen;
    model_build_tensors_of(b, src, src->lora->base_tensors);
    for (int i = 0; i < src->nlayers; i++) {
        const layer_t *l = &src->layers[i];
        if (c->skip[i] == 2) c->map[i] = c->map[c->stands[i]]; /* the Add: the product's output */
        if (c->skip[i]) continue;
        c->map[i] = model_build_copy(b, l, l->in >= 0 ? c->map[l->in] : -1, l->in2 >= 0 ? c->map[l->in2] : -1);
    }
    return 0;
}

int model_lora_base(const model_t *m, int max_batch, int merge, model_t **out, char *err, size_t errlen)
{
    *out = NULL;
    base_ctx_t c = {.src = m};
    c.map = calloc((size_t)m->nlayers, sizeof *c.map);
    c.skip = calloc((size_t)m->nlayers, sizeof *c.skip);
    c.stands = calloc((size_t)m->nlayers, sizeof *c.stands);
    int rc = -1;
    if (!c.map || !c.skip || !c.stands) {
        snprintf(err, errlen, "lora: out of memory");
        goto out;
    }
    for (int k = 0; k < m->lora->n; k++) {
        const lora_adapter_t *a = &m->lora->ad[k];
        for (int i = a->product + 1; i < a->add; i++) c.skip[i] = 1;
        c.skip[a->add] = 2;
        c.stands[a->add] = a->product;
    }
    model_t *base;
    if (model_create_custom_shape(m->name, &m->in_shape, m->num_classes, max_batch, build_base, &c, &base, err,
                                  errlen) != 0)
        goto out;
    base->dropout_seed = m->dropout_seed;
    base->label_smoothing = m->label_smoothing;
    memcpy(base->params, m->params, base->nparams * sizeof *base->params);
    memcpy(base->buffers, m->buffers, base->nbuffers * sizeof *base->buffers);
    if (merge) model_lora_merge(m, base);
    *out = base;
    rc = 0;
out:
    free(c.map);
    free(c.skip);
    free(c.stands);
    return rc;
}

void model_lora_merge(const model_t *m, model_t *base)
{
    memcpy(base->params, m->params, base->nparams * sizeof *base->params);
    memcpy(base->buffers, m->buffers, base->nbuffers * sizeof *base->buffers);
    for (int k = 0; k < m->lora->n; k++) {
        const lora_adapter_t *a = &m->lora->ad[k];
        const int r = m->lora->rank, IN = a->in, OUT = a->out;
        const float *A = m->params + m->tensors[a->a].offset; /* (r, IN) */
        const float *B = m->params + m->tensors[a->b].offset; /* (OUT, r) */
        float *W = base->params + m->tensors[a->weight].offset;
        /* the product computes w_alpha x W': W gains scale / w_alpha B A */
        const double s = (double)m->lora->scale / (double)a->w_alpha;
        for (int o = 0; o < OUT; o++)
            for (int i = 0; i < IN; i++) {
                double d = 0;
                for (int j = 0; j < r; j++) d += (double)B[(size_t)o * r + j] * A[(size_t)j * IN + i];
                float *w = W + (a->layout == GEMM_W_OUT_IN ? (size_t)o * IN + i : (size_t)i * OUT + o);
                *w = (float)((double)*w + s * d);
            }
    }
    mm_weights_changed(); /* packings of base's old weights (matmul.h) are stale */
}

void model_lora_set_base(model_t *m, const model_t *base)
{
    memcpy(m->params, base->params, m->lora->base_params * sizeof *m->params);
    memcpy(m->buffers, base->buffers, m->lora->base_buffers * sizeof *m->buffers);
}

int model_lora_peft_name(const model_t *m, int t, char *out, size_t len)
{
    if (!model_lora_is_adapter(m, t)) return -1;
    const int k = snprintf(out, len, "base_model.model.%s", m->tensors[t].name);
    return k > 0 && (size_t)k < len ? 0 : -1;
}

void model_lora_free(model_lora_t *l)
{
    if (l) free(l->ad);
    free(l);
}
