/* model/plan.c - see plan.h. */
#include "plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "matmul.h"
#include "op_table.h"

static int cmp_size(const void *a, const void *b)
{
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* tensor_info_t's no_decay: the tensors a layer reads as one value per channel (biases,
 * batch-norm gamma and beta), that is every 1-D parameter of the layer list. From the
 * layers, so a network of any origin (built-in or imported) gets it alike. The layers'
 * offsets are sorted and each parameter tensor looked up: n log n, as an imported graph
 * may have tens of thousands of both. 0, or -1 (out of memory). */
int model_plan_no_decay(model_t *m)
{
    size_t *offs = malloc(2 * (size_t)(m->nlayers ? m->nlayers : 1) * sizeof *offs), n = 0;
    if (!offs) return -1;
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        if (l->kind == LAYER_BN || l->kind == LAYER_LAYERNORM) offs[n++] = l->w_off;
        if (l->kind == LAYER_BN || l->has_bias) offs[n++] = l->b_off;
    }
    qsort(offs, n, sizeof *offs, cmp_size);
    for (int t = 0; t < m->ntensors; t++) {
        tensor_info_t *ti = &m->tensors[t];
        ti->no_decay = !ti->is_buffer && bsearch(&ti->offset, offs, n, sizeof *offs, cmp_size) != NULL;
    }
    free(offs);
    return 0;
}

/* The parameter tensor at params offset off: by binary search over order (the parameter
 * tensors' indices sorted by offset, n of them), or -1. */
static int tensor_by_offset(const model_t *m, const int *order, int n, size_t off)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        const int mid = lo + (hi - lo) / 2;
        const size_t at = m->tensors[order[mid]].offset;
        if (at == off) return order[mid];
        if (at < off) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* Whether layer l reads a parameter tensor at w_off, and at b_off. */
static int has_weight(const layer_t *l)
{
    switch (l->kind) {
    case LAYER_CONV:
    case LAYER_FC:
    case LAYER_LINEAR:
    case LAYER_BN:
    case LAYER_LAYERNORM:
    case LAYER_GATHER_PARAM:
    case LAYER_EMBED: return 1;
    case LAYER_CONST: return !l->op.cnst.frozen; /* else a tensor of buffers */
    default: return 0;
    }
}

static int has_bias_param(const layer_t *l)
{
    if (l->kind == LAYER_BN || l->kind == LAYER_LAYERNORM) return 1;
    return (l->kind == LAYER_CONV || l->kind == LAYER_FC || l->kind == LAYER_LINEAR) && l->has_bias;
}

/* The plan's layer_tensor and model_t's grads_computed. 0, or -1 (out of memory). */
int model_plan_tensors(model_t *m)
{
    m->plan->layer_tensor = malloc(2 * (size_t)(m->nlayers ? m->nlayers : 1) * sizeof *m->plan->layer_tensor);
    m->grads_computed = calloc((size_t)(m->ntensors ? m->ntensors : 1), sizeof *m->grads_computed);
    m->plan->grad_needed = malloc((size_t)(m->nlayers ? m->nlayers : 1));
    int *order = malloc((size_t)(m->ntensors ? m->ntensors : 1) * sizeof *order), n = 0;
    if (!m->plan->layer_tensor || !m->grads_computed || !m->plan->grad_needed || !order) {
        free(order);
        return -1;
    }
    memset(m->plan->grad_needed, 1, (size_t)m->nlayers); /* until a backward marks them */
    /* parameter tensors lie in params in list order, one after the other: sorted already */
    for (int t = 0; t < m->ntensors; t++)
        if (!m->tensors[t].is_buffer) order[n++] = t;
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        m->plan->layer_tensor[2 * i] = has_weight(l) ? tensor_by_offset(m, order, n, l->w_off) : -1;
        m->plan->layer_tensor[2 * i + 1] = has_bias_param(l) ? tensor_by_offset(m, order, n, l->b_off) : -1;
    }
    free(order);
    return 0;
}

/* Whether layer l (index i) has a weight or bias that takes an update (one not found
 * among the tensors counts as one: the backward then computes it as before). */
static int updates_params(const model_t *m, int i)
{
    const layer_t *l = &m->layers[i];
    const int w = m->plan->layer_tensor[2 * i], b = m->plan->layer_tensor[2 * i + 1];
    return (has_weight(l) && (w < 0 || !m->tensors[w].no_update)) ||
           (has_bias_param(l) && (b < 0 || !m->tensors[b].no_update));
}

/* The plan's grad_needed, from the layers' inputs (which come before them in the list).
 * Every layer's where no tensor is frozen: a model that trains everything computes every
 * gradient, the activations' too (the tests of a layer read its input's). */
void model_plan_grads(model_t *m)
{
    int frozen = 0;
    for (int t = 0; t < m->ntensors && !frozen; t++) frozen = !m->tensors[t].is_buffer && m->tensors[t].no_update;
    if (!frozen) {
        memset(m->plan->grad_needed, 1, (size_t)m->nlayers);
        return;
    }
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        m->plan->grad_needed[i] = updates_params(m, i) || (l->in >= 0 && m->plan->grad_needed[l->in]) ||
                                  (l->in2 >= 0 && m->plan->grad_needed[l->in2]);
    }
}

/* One planned gradient: its size and its life in backward steps [lo, hi]. */
typedef struct {
    size_t off, n;
    int lo, hi;
} dact_slot_t;

static int by_offset(const void *a, const void *b)
{
    const dact_slot_t *x = *(const dact_slot_t *const *)a, *y = *(const dact_slot_t *const *)b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* The lowest offset (a multiple of 16 floats) where slot s fits beside every placed slot
 * live at any of its steps: first fit over the gaps between them. */
static size_t first_fit(const dact_slot_t *slots, const int *placed, int nplaced, const dact_slot_t *s,
                        const dact_slot_t **live)
{
    int nl = 0;
    for (int p = 0; p < nplaced; p++) {
        const dact_slot_t *o = &slots[placed[p]];
        if (o->lo <= s->hi && s->lo <= o->hi) live[nl++] = o;
    }
    qsort(live, (size_t)nl, sizeof *live, by_offset);
    size_t at = 0;
    for (int p = 0; p < nl; p++) {
        if (live[p]->off >= at + s->n) break;
        const size_t end = (live[p]->off + live[p]->n + 15) & ~(size_t)15;
        if (end > at) at = end;
    }
    return at;
}

/* The plan's dact_off, dact_first and dact_floats: each layer's output gradient lives from
 * the backward of its last reader (the loss's for the last layer) down to its own. Laid
 * out per sample (each slot the layer's output floats of one sample, offsets multiples of
 * 16) and scaled by max_batch: the arena is max_batch times a layout that does not depend
 * on the batch, so model_describe's per-sample figure is exact at every batch. */
int model_plan_dacts(model_t *m)
{
    const int n = m->nlayers;
    dact_slot_t *slots = calloc((size_t)(n ? n : 1), sizeof *slots);
    int *placed = calloc((size_t)(n ? n : 1), sizeof *placed);
    const dact_slot_t **live = calloc((size_t)(n ? n : 1), sizeof *live);
    m->plan->dact_off = calloc((size_t)(n ? n : 1), sizeof *m->plan->dact_off);
    m->plan->dact_first = calloc((size_t)(n ? n : 1), sizeof *m->plan->dact_first);
    if (!slots || !placed || !live || !m->plan->dact_off || !m->plan->dact_first) {
        free(slots), free(placed), free(live);
        return -1;
    }
    for (int j = 0; j < n; j++) {
        const layer_t *l = &m->layers[j];
        int hi = j;
        /* a chain's end sets the gradient of its source; a fused attention its q, k and v's,
         * at its merge's backward, before the chains that read them would */
        for (int k = j + 1; k < n; k++) {
            const layer_t *r = &m->layers[k];
            const layer_plan_t *rp = &m->plan->layers[k];
            if (r->in == j || r->in2 == j || (rp->chain == VIEW_CHAIN_RUN && rp->chain_src == j) ||
                (rp->attn == ATTN_RUN && (rp->attn_src[0] == j || rp->attn_src[1] == j || rp->attn_src[2] == j)))
                hi = k;
        }
        slots[j] = (dact_slot_t){0, (size_t)l->OC * l->OH * l->OW, j, hi};
        m->plan->dact_first[j] = hi;
    }
    /* fused kernels read a later layer's gradient in their own backward, below its life's
     * end: a batch norm or residual add of fused_relu its ReLU's, a batch norm of fused_add
     * the ReLU's after its add (op_table.c's bn_bwd and add_bwd) */
    for (int k = 0; k < n; k++) {
        const layer_plan_t *kp = &m->plan->layers[k];
        const int read = kp->fused_add ? k + 2 : kp->fused_relu ? k + 1 : -1;
        if (read >= 0 && read < n && slots[read].lo > k) slots[read].lo = k;
    }
    /* place in the order the backward brings gradients to life: the last reader first */
    size_t per_sample = 0;
    for (int step = n - 1, np = 0; step >= 0; step--)
        for (int j = n - 1; j >= 0; j--) {
            if (slots[j].hi != step) continue;
            slots[j].off = first_fit(slots, placed, np, &slots[j], live);
            placed[np++] = j;
            m->plan->dact_off[j] = slots[j].off * (size_t)m->max_batch;
            if (slots[j].off + slots[j].n > per_sample) per_sample = slots[j].off + slots[j].n;
        }
    m->plan->dact_floats = per_sample * (size_t)m->max_batch;
    free(slots), free(placed), free(live);
    return 0;
}

/* ---- bf16 activations (layer_plan_t's act_bf16) ------------------------------------------ */

/* Layer k reads layer j's output only as a product's left operand that rounds it to bf16
 * anyway: a fully connected or Linear layer of the (OUT, IN) layout (gemm_forward_a16 and
 * gemm_backward_a16 take it as stored), j its only input. */
static int reads_as_product(const layer_t *r, int j)
{
    return (r->kind == LAYER_LINEAR || r->kind == LAYER_FC) && r->op.gemm.layout == GEMM_W_OUT_IN && r->in == j &&
           r->in2 != j;
}

/* Layer k reads layer j's output: as an input, the source of a view chain, or one of a fused
 * attention's q, k and v */
static int reads_output(const model_t *m, int k, int j)
{
    const layer_t *r = &m->layers[k];
    const layer_plan_t *rp = &m->plan->layers[k];
    return r->in == j || r->in2 == j || rp->chain_src == j ||
           (rp->attn == ATTN_RUN && (rp->attn_src[0] == j || rp->attn_src[1] == j || rp->attn_src[2] == j));
}

/* Layer j's output may be stored in bf16: a producer that writes bf16 (a layer norm, whose
 * backward reads its input and saved statistics, not its output; a GELU, whose backward
 * reads its output rounded, saved_bf16; a fused attention's merge, whose backward reads
 * the weights, q, k and v, not its output), read by products alone (at least one), and
 * not the model's output (the logits). */
static int bf16_output(const model_t *m, int j)
{
    const layer_kind_t kind = m->layers[j].kind;
    const int merge = m->plan->layers[j].attn == ATTN_RUN;
    if ((kind != LAYER_LAYERNORM && kind != LAYER_GELU && !merge) || j == m->nlayers - 1) return 0;
    int readers = 0;
    for (int k = j + 1; k < m->nlayers; k++) {
        const int reads = reads_output(m, k, j);
        if (reads && !reads_as_product(&m->layers[k], j)) return 0;
        readers += reads;
    }
    return readers > 0;
}

/* A plain layer's plan: in no fusion, view chain or fused attention */
static int unfused(const layer_plan_t *p)
{
    return !p->fused_relu && !p->fused_add && p->chain == VIEW_CHAIN_NONE && p->attn == ATTN_NONE;
}

/* Layer k runs: not a link of a view chain or fused attention that another layer runs */
static int runs(const model_t *m, int k)
{
    return m->plan->layers[k].chain != VIEW_CHAIN_SKIP && m->plan->layers[k].attn != ATTN_SKIP;
}

/* Layer j is a plain Linear, not the model's output, of at most GEMM_ROUNDED_MAX_OUT
 * features: one gemm_forward_rounded may write its output */
static int roundable_linear(const model_t *m, int j)
{
    const layer_t *l = &m->layers[j];
    return l->kind == LAYER_LINEAR && j < m->nlayers - 1 && l->op.gemm.OUT <= GEMM_ROUNDED_MAX_OUT &&
           unfused(&m->plan->layers[j]);
}

/* Layer j's output may be stored in bf16 as a fused attention's q, k or v: a plain Linear's
 * of at most GEMM_ROUNDED_MAX_OUT features (written by gemm_forward_rounded) that only
 * fused attentions read (their view chains' links, which never run, aside), and not the
 * model's output. The attention's products round it to bf16 anyway: the same bits. */
static int attention_input(const model_t *m, int j)
{
    if (!roundable_linear(m, j)) return 0;
    int readers = 0;
    for (int k = j + 1; k < m->nlayers; k++) {
        if (!runs(m, k) || !reads_output(m, k, j)) continue;
        const layer_plan_t *rp = &m->plan->layers[k];
        if (rp->attn != ATTN_RUN || (rp->attn_src[0] != j && rp->attn_src[1] != j && rp->attn_src[2] != j)) return 0;
        readers++;
    }
    return readers > 0;
}

/* Layer j's output may be rounded to bf16 as it is written (the plan's rounded): a plain
 * Linear's of at most GEMM_ROUNDED_MAX_OUT features, read by one GELU of saved_bf16 alone,
 * and not the model's output. */
static int rounded_output(const model_t *m, int j)
{
    if (!roundable_linear(m, j)) return 0;
    int reader = -1;
    for (int k = j + 1; k < m->nlayers; k++)
        if (reads_output(m, k, j)) {
            if (reader >= 0) return 0;
            reader = k;
        }
    return reader >= 0 && m->layers[reader].kind == LAYER_GELU && m->layers[reader].in == j &&
           m->plan->layers[reader].saved_bf16 && unfused(&m->plan->layers[reader]);
}

/* Layer j's output may share the arena's one slot (act_shared): a float32 Linear output
 * read only by the plain residual Add right after it, once. */
static int shared_output(const model_t *m, int j)
{
    const layer_t *l = &m->layers[j];
    if ((l->kind != LAYER_LINEAR && l->kind != LAYER_FC) || j + 2 > m->nlayers - 1) return 0;
    const layer_t *add = &m->layers[j + 1];
    if (!unfused(&m->plan->layers[j]) || m->plan->layers[j].act_bf16 || !unfused(&m->plan->layers[j + 1]) ||
        add->kind != LAYER_ADD || (add->in == j) == (add->in2 == j))
        return 0;
    for (int k = j + 2; k < m->nlayers; k++)
        if (reads_output(m, k, j)) return 0;
    return 1;
}

/* Layer k's output is written by a training step: the layer runs (it is no link of a view
 * chain or fused attention that another layer runs) and is no batch norm or add whose
 * output a fused kernel skips (fused_relu, fused_add: the ReLU's output is written
 * instead), or it holds a fused attention's weights (attn_p). The forward of an unfused
 * attention (model_t's attention_unfused) and the CUDA library write the others too;
 * generation (decode.c) writes every output. */
static int written(const model_t *m, int k)
{
    if (m->plan->layers[k].fused_relu || m->plan->layers[k].fused_add) return 0;
    if (runs(m, k)) return 1;
    for (int i = k + 1; i < m->nlayers; i++)
        if (m->plan->layers[i].attn == ATTN_RUN && m->plan->layers[i].attn_p == k)
            return !m->plan->layers[i].weights_bf16;
    return 0;
}

size_t model_plan_weights_floats(const model_t *m, int i)
{
    const attn_desc_t *a = &m->plan->layers[i].attn_desc;
    if (!m->plan->layers[i].weights_bf16) return 0;
    return ((size_t)m->max_batch * a->H * a->T * (a->T + 1) / 2 + 1) / 2;
}

/* Each layer's place in the activation arena as the builder laid it (model.c's
 * reserve_layer: in list order, a layer norm's statistics right after its output), again:
 * the outputs a training step writes first, in list order, then those it never writes, so
 * that a step's pages are not interleaved with unwritten ones. The arena's huge pages
 * (model.c's alloc_arena) are resident whole once one byte of them is written: at GPT-2's
 * width the unwritten heads' copies, scores and products between the written outputs had
 * made about 44 MB of untouched floats resident. With share (bf16 outputs planned), the
 * outputs of act_bf16 in half the floats and those of act_shared in one slot at the
 * arena's start. -1 (nothing moved) where the layout is not the builder's or out of
 * memory. */
static int relayout(model_t *m, int share)
{
    const size_t mb = (size_t)m->max_batch;
    size_t *stats = malloc((size_t)(m->nlayers ? m->nlayers : 1) * sizeof *stats);
    if (!stats) return -1;
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        const size_t end = i + 1 < m->nlayers ? m->layers[i + 1].out_off : m->act_floats;
        const size_t n = mb * l->OC * l->OH * l->OW;
        if (l->out_off + n > end || (l->kind == LAYER_LAYERNORM && (l->aux_off < l->out_off + n || l->aux_off > end))) {
            free(stats);
            return -1;
        }
        stats[i] = l->kind == LAYER_LAYERNORM ? end - l->aux_off : 0;
    }
    size_t at = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        const size_t n = mb * l->OC * l->OH * l->OW;
        if ((m->plan->layers[i].act_shared = share && shared_output(m, i)) && n > at) at = n;
    }
    const size_t slot = at;
    for (int pass = 1; pass >= 0; pass--) {
        for (int i = 0; i < m->nlayers; i++) {
            layer_t *l = &m->layers[i];
            if (written(m, i) != pass) continue;
            const size_t n = mb * l->OC * l->OH * l->OW;
            if (m->plan->layers[i].act_shared) {
                l->out_off = 0;
                continue;
            }
            l->out_off = at;
            at += m->plan->layers[i].act_bf16 ? (n + 1) / 2 : n;
            if (m->plan->layers[i].weights_bf16) {
                l->aux_off = at;
                at += model_plan_weights_floats(m, i);
            }
            if (l->kind != LAYER_LAYERNORM) continue;
            at = (at + 1) & ~(size_t)1; /* doubles */
            l->aux_off = at;
            at += stats[i];
        }
        if (pass) m->plan->act_written_floats = at > slot ? at : slot;
    }
    m->act_floats = at > slot ? at : slot;
    free(stats);
    return 0;
}

/* every layer's act_bf16, act_shared and weights_bf16 0 (saved_bf16, the numbers, stays) */
static void act_bf16_clear(model_t *m)
{
    for (int j = 0; j < m->nlayers; j++)
        m->plan->layers[j].act_bf16 = m->plan->layers[j].act_shared = m->plan->layers[j].weights_bf16 = 0;
    m->plan->act_bf16_outputs = 0;
}

void model_plan_arena(model_t *m)
{
    act_bf16_clear(m);
    m->plan->act_written_floats = m->act_floats; /* the builder's layout, until relayout */
    for (int j = 0; j < m->nlayers; j++) m->plan->layers[j].saved_bf16 = m->plan->layers[j].rounded = 0;
    if (mm_precision() != MM_BF16) {
        (void)relayout(m, 0); /* the builder's layout stays where it fails */
        return;
    }
    /* what the layers compute does not depend on where the outputs are stored */
    for (int j = 0; j < m->nlayers; j++)
        m->plan->layers[j].saved_bf16 = m->layers[j].kind == LAYER_GELU && bf16_output(m, j);
    for (int j = 0; j < m->nlayers; j++) m->plan->layers[j].rounded = rounded_output(m, j);
    const char *env = getenv("PACER_BF16_ACTS");
    if (!env || strcmp(env, "0") != 0)
        for (int j = 0; j < m->nlayers; j++)
            m->plan->act_bf16_outputs += m->plan->layers[j].act_bf16 = bf16_output(m, j) ||
                                                                       m->plan->layers[j].rounded ||
                                                                       attention_input(m, j);
    for (int j = 0; j < m->nlayers; j++)
        m->plan->layers[j].weights_bf16 = m->plan->act_bf16_outputs > 0 && m->plan->layers[j].attn == ATTN_RUN;
    if (relayout(m, m->plan->act_bf16_outputs > 0) != 0) act_bf16_clear(m);
}

void model_plan_act_bf16_as(model_t *m, const model_t *src)
{
    for (int j = 0; j < m->nlayers; j++) {
        m->plan->layers[j].act_bf16 = src->plan->layers[j].act_bf16;
        m->plan->layers[j].saved_bf16 = src->plan->layers[j].saved_bf16;
        m->plan->layers[j].rounded = src->plan->layers[j].rounded;
        m->plan->layers[j].act_shared = src->plan->layers[j].act_shared;
        m->plan->layers[j].weights_bf16 = src->plan->layers[j].weights_bf16;
    }
    m->plan->act_bf16_outputs = src->plan->act_bf16_outputs;
    m->plan->act_written_floats = src->plan->act_written_floats;
}

/* The one layer that reads layer j's output (as in or in2), or -1 when none or several do. */
static int only_reader(const model_t *m, int j)
{
    int reader = -1, readers = 0;
    for (int k = j + 1; k < m->nlayers; k++) {
        const int n = (m->layers[k].in == j) + (m->layers[k].in2 == j); /* in2 is -1 where unused */
        if (n) reader = k;
        readers += n;
    }
    return readers == 1 ? reader : -1;
}

/* Layer j + 1 is a ReLU and the only reader of layer j's output. */
static int relu_only_next(const model_t *m, int j)
{
    return j + 1 < m->nlayers && m->layers[j + 1].kind == LAYER_RELU && m->layers[j + 1].in == j &&
           only_reader(m, j) == j + 1;
}

/* Marks the batch norms that run a following ReLU, or a following identity residual add
 * and ReLU, in their kernels (the plan's fused_relu and fused_add). */
static void fuse_layers(model_t *m)
{
    for (int j = 0; j < m->nlayers; j++) m->plan->layers[j].fused_relu = m->plan->layers[j].fused_add = 0;
    for (int j = 0; j + 1 < m->nlayers; j++) {
        const layer_t *l = &m->layers[j];
        layer_plan_t *lp = &m->plan->layers[j];
        if (l->kind != LAYER_BN) continue;
        const layer_t *add = &m->layers[j + 1];
        if (add->kind == LAYER_ADD && add->in == j && only_reader(m, j) == j + 1 && add->in2 >= 0 &&
            add->op.sc.stride == 1 && add->op.sc.C == add->op.sc.OC && relu_only_next(m, j + 1)) {
            lp->fused_add = 1;
            m->plan->layers[j + 1].fused_relu = 1;
        } else lp->fused_relu = relu_only_next(m, j);
    }
}

/* The elementwise functions that op_table.c's unary steps run (unary_backward_set): the GPT's
 * GELU set its input's gradient instead of zeroing 1.6 M floats a step for it to add into. */
static int unary_kind(layer_kind_t k)
{
    return k == LAYER_EXP || k == LAYER_NEG || k == LAYER_SQRT || k == LAYER_RECIPROCAL || k == LAYER_ABS ||
           k == LAYER_POW || k == LAYER_ERF || k == LAYER_GELU;
}

/* The one-input kinds whose backward can write its input's whole gradient instead of
 * adding to it (a _set kernel): each reads every input element into exactly one output
 * (Transpose is a permutation; Slice and Expand are not, so they only add). */
static int writes_whole_grad(layer_kind_t k)
{
    return k == LAYER_BN || k == LAYER_CONV || k == LAYER_RELU || k == LAYER_FC || k == LAYER_LINEAR ||
           k == LAYER_TRANSPOSE || k == LAYER_RESHAPE || k == LAYER_DROPOUT || k == LAYER_STOCHASTIC_DEPTH ||
           k == LAYER_SOFTMAX || k == LAYER_LOG_SOFTMAX || k == LAYER_LAYERNORM || k == LAYER_CAUSAL_SOFTMAX ||
           unary_kind(k);
}

/* The kinds that run binary_rows_backward: it sets either input's gradient whose every
 * element one output reads (the input as large as the output: not broadcast). */
static int broadcasting_binary(layer_kind_t k)
{
    return k == LAYER_BADD || k == LAYER_SUB || k == LAYER_BMUL || k == LAYER_DIV;
}

/* Whether layer j's readers are all Slices of step 1 along one axis that cover it exactly
 * once (the plan's grad_split): each then writes its part of the gradient. At most 64
 * readers, in any order of their parts. */
static int split_by_slices(const model_t *m, int j)
{
    int ax = -1, n = 0, start[64], end[64];
    for (int k = j + 1; k < m->nlayers; k++) {
        const layer_t *r = &m->layers[k];
        if (r->in != j && r->in2 != j) continue;
        if (r->kind != LAYER_SLICE || r->in2 == j || r->op.view.step != 1 || (ax >= 0 && r->op.view.axis != ax) ||
            n == 64)
            return 0;
        ax = r->op.view.axis;
        start[n] = r->op.view.start;
        end[n++] = r->op.view.end;
    }
    if (n < 2) return 0;
    /* a chain from 0 to the axis's size, each part taken once */
    int at = 0, used = 0;
    while (at < m->layers[j].shape.dims[ax]) {
        int next = -1;
        for (int q = 0; q < n && next < 0; q++)
            if (start[q] == at) next = q;
        if (next < 0) return 0;
        at = end[next];
        start[next] = -1; /* taken */
        used++;
    }
    return used == n;
}

/* Which reader sets each layer's output gradient (the plan's grad_setter). */
static void mark_set_grads(model_t *m)
{
    for (int j = 0; j < m->nlayers; j++) {
        m->plan->layers[j].grad_setter = -1;
        m->plan->layers[j].grad_split = 0;
        int k = m->nlayers - 1; /* the last reader: its backward runs first */
        while (k > j && m->layers[k].in != j && m->layers[k].in2 != j) k--;
        if (k == j) continue; /* no reader */
        /* a batch-less output's one slot is summed over the batch by its readers */
        if (m->layers[j].kind == LAYER_CONST || m->layers[j].kind == LAYER_GATHER_PARAM) continue;
        const layer_t *r = &m->layers[k];
        int sets;
        if (r->in == j && r->in2 == j) sets = 0; /* Add(x, x): one buffer, two sums */
        else if (r->kind == LAYER_ADD) sets = r->in == j || r->op.sc.stride == 1;
        else if (r->kind == LAYER_BMM) sets = 1; /* either input: bmm_backward_set's flags */
        else if (broadcasting_binary(r->kind))   /* either input that is not broadcast, the batch included */
            sets = (size_t)m->layers[j].OC * m->layers[j].OH * m->layers[j].OW == (size_t)r->OC * r->OH * r->OW &&
                   (r->in == j ? r->op.view.bc.sa[0] : r->op.view.bc.sb[0]) != 0;
        else sets = r->in == j && writes_whole_grad(r->kind);
        if (sets) m->plan->layers[j].grad_setter = k;
        else m->plan->layers[j].grad_split = split_by_slices(m, j);
    }
}

/* ---- view chains (the plan's chain) ---------------------------------------------------- */

/* Walk d, its strides into the contiguous output of view layer w and *off an offset there,
 * rewritten to read w's input instead. Each axis of d must step along one axis of w's output
 * (its stride a multiple of that axis's contiguous stride) and, with the offset's index
 * there and the other axes stepping along it, stay inside that axis: then no step carries
 * into the next axis, and the output index is linear in d's indices, as the input offset
 * is in the output's. 0, or -1 where d is no such walk. */
static int view_through(const layer_t *w, bcast_desc_t *d, size_t *off)
{
    const model_shape_t *s = &w->shape;
    size_t cs[MODEL_MAX_RANK], reach[MODEL_MAX_RANK], rest = *off, at = w->op.view.off, run = 1;
    for (int a = s->rank - 1; a >= 0; a--) {
        cs[a] = run;
        run *= (size_t)s->dims[a];
    }
    for (int a = 0; a < s->rank; a++) {
        reach[a] = rest / cs[a];
        rest %= cs[a];
        at += reach[a] * w->op.view.bc.sa[a + 1]; /* modular: a Slice walking down wraps its stride */
    }
    for (int ax = 1; ax < d->rank; ax++) {
        if (d->dims[ax] <= 1) {
            d->sa[ax] = 0;
            continue;
        }
        const size_t st = d->sa[ax];
        int a = s->rank - 1; /* the outermost axis whose contiguous stride is at most st */
        while (a > 0 && cs[a - 1] <= st) a--;
        if (st == 0 || st % cs[a] != 0) return -1;
        reach[a] += (size_t)(d->dims[ax] - 1) * (st / cs[a]);
        if (reach[a] >= (size_t)s->dims[a]) return -1;
        d->sa[ax] = st / cs[a] * w->op.view.bc.sa[a + 1];
    }
    d->sa[0] = w->op.view.bc.sa[0];
    *off = at;
    return 0;
}

enum { VIEW_CHAIN_MAX = 16 }; /* links: longer chains are cut into several */

static int chain_kind(layer_kind_t k) { return k == LAYER_SLICE || k == LAYER_RESHAPE || k == LAYER_TRANSPOSE; }

/* Layer j is a link: a view whose backward sets its input's gradient (its part of it:
 * op_table.c's sets_grad), so that a chain's one walk can set it for all of them; not an
 * empty one (its walk's strides would divide by 0, and the forward skips it anyway). */
static int chain_link(const model_t *m, int j)
{
    const layer_t *l = &m->layers[j];
    return chain_kind(l->kind) && l->in >= 0 && !model_layer_empty(m, j) &&
           (m->plan->layers[l->in].grad_setter == j || m->plan->layers[l->in].grad_split);
}

/* The walk of the chain of links c[0..n) (c[0] reads the source) into the source's output:
 * the last view's own walk (a Reshape keeps the order of the floats), composed back through
 * the views before it. 0, or -1 where they do not compose into one walk. */
static int chain_walk(const model_t *m, const int *c, int n, bcast_desc_t *d, size_t *off)
{
    int k = n - 1;
    while (k >= 0 && m->layers[c[k]].kind == LAYER_RESHAPE) k--;
    if (k < 0) {
        const size_t count = model_shape_count(&m->layers[c[n - 1]].shape); /* Reshapes only */
        *d = (bcast_desc_t){.rank = 2, .dims = {0, (int)count}, .sa = {count, 1}};
        *off = 0;
        return count <= INT32_MAX ? 0 : -1;
    }
    *d = m->layers[c[k]].op.view.bc;
    *off = m->layers[c[k]].op.view.off;
    while (--k >= 0)
        if (m->layers[c[k]].kind != LAYER_RESHAPE && view_through(&m->layers[c[k]], d, off) != 0) return -1;
    return 0;
}

/* Marks the view chains (the plan's chain): each chain ends at a link whose only reader
 * continues none, and reaches back through the links that are their next one's only
 * input. The q/k/v head splits and attention's output then copy once each way instead of
 * three and two times (the GPT at nanoGPT's CPU shape: 4.5% less CPU time a run). */
static void mark_view_chains(model_t *m)
{
    for (int j = 0; j < m->nlayers; j++) m->plan->layers[j].chain = VIEW_CHAIN_NONE, m->plan->layers[j].chain_src = -1;
    for (int j = 0; j < m->nlayers; j++) {
        const int next = only_reader(m, j);
        if (!chain_link(m, j) || (next >= 0 && chain_link(m, next) && m->layers[next].in == j)) continue;
        int c[VIEW_CHAIN_MAX], n = 0;
        for (int k = j; n < VIEW_CHAIN_MAX; k = m->layers[k].in) {
            c[n++] = k;
            const int p = m->layers[k].in;
            if (p < 0 || !chain_link(m, p) || only_reader(m, p) != k) break;
        }
        if (n < 2) continue;
        for (int a = 0, b = n - 1; a < b; a++, b--) { /* into reading order */
            const int t = c[a];
            c[a] = c[b];
            c[b] = t;
        }
        layer_plan_t *last = &m->plan->layers[j];
        if (chain_walk(m, c, n, &last->chain_bc, &last->chain_off) != 0) continue;
        last->chain = VIEW_CHAIN_RUN;
        last->chain_src = m->layers[c[0]].in;
        for (int k = 0; k + 1 < n; k++) m->plan->layers[c[k]].chain = VIEW_CHAIN_SKIP;
    }
}

/* Marks attention's products under a causal mask (the plan's causal_bmm): the scores whose
 * only reader is a causal softmax (not the model's output), and the products whose left
 * input is a causal softmax's output. */
static void mark_causal_bmm(model_t *m)
{
    for (int j = 0; j < m->nlayers; j++) m->plan->layers[j].causal_bmm = BMM_CAUSAL_NONE;
    for (int j = 0; j < m->nlayers; j++) {
        const layer_t *s = &m->layers[j];
        if (s->kind != LAYER_CAUSAL_SOFTMAX) continue;
        const int q = s->in;
        if (q >= 0 && m->layers[q].kind == LAYER_BMM && only_reader(m, q) == j)
            m->plan->layers[q].causal_bmm = BMM_CAUSAL_OUT;
        for (int k = j + 1; k < m->nlayers; k++) {
            const layer_t *v = &m->layers[k];
            layer_plan_t *vp = &m->plan->layers[k];
            if (v->kind == LAYER_BMM && v->in == j && v->in2 != j)
                vp->causal_bmm = vp->causal_bmm == BMM_CAUSAL_NONE ? BMM_CAUSAL_LEFT : BMM_CAUSAL_NONE;
        }
    }
}

/* The view chain that ends at a layer (its plan r) as a head-major operand (H, T, D) of its
 * source, (b, h, t, d) at off + b ss + h hs + t rs + d: the chain's walk over (H, T, D), or
 * over (H, D, T) where transposed (a key's), each position's D floats contiguous. 0, or -1
 * where it is not. */
static int attn_operand(const layer_plan_t *r, int H, int T, int D, int transposed, attn_operand_t *o)
{
    const bcast_desc_t *w = &r->chain_bc;
    const int t = transposed ? 3 : 2, d = transposed ? 2 : 3;
    if (r->chain != VIEW_CHAIN_RUN || w->rank != 4 || w->dims[1] != H || w->dims[t] != T || w->dims[d] != D ||
        w->sa[d] != 1)
        return -1;
    *o = (attn_operand_t){.off = r->chain_off, .ss = w->sa[0], .hs = w->sa[1], .rs = w->sa[t]};
    return 0;
}

/* The view chain that merges the heads of layer o's (H, T, D) output into (T, H D): its
 * last link, or -1. Its links must be o's reader's chain, its walk o's transpose. */
static int attn_merge(const model_t *m, int o, int H, int T, int D)
{
    int r = -1;
    for (int k = o + 1; k < m->nlayers && r < 0; k++)
        if (m->plan->layers[k].chain == VIEW_CHAIN_RUN && m->plan->layers[k].chain_src == o) r = k;
    if (r < 0) return -1;
    int c = r;
    while (m->layers[c].in != o) {
        c = m->layers[c].in;
        if (c < 0 || m->plan->layers[c].chain != VIEW_CHAIN_SKIP) return -1;
    }
    const bcast_desc_t *w = &m->plan->layers[r].chain_bc;
    const size_t hd = (size_t)H * D, htd = hd * T;
    if (only_reader(m, o) != c || m->plan->layers[r].chain_off != 0 || w->rank != 4 || w->dims[1] != T ||
        w->dims[2] != H || w->dims[3] != D || w->sa[0] != htd || w->sa[1] != (size_t)D || w->sa[2] != (size_t)T * D ||
        w->sa[3] != 1)
        return -1;
    return r;
}

/* The scores layer behind causal softmax j: its input, a product under the causal mask
 * (mark_causal_bmm's), or the product behind a Mul by a one-element frozen constant (an
 * imported graph's scale: the constant in *c, the Mul in *mul; else both -1), each read by
 * the next alone. -1 else. */
static int attn_scores(const model_t *m, int j, int *c, int *mul)
{
    int s = m->layers[j].in;
    *c = -1, *mul = -1;
    if (s < 0 || only_reader(m, s) != j) return -1;
    const layer_t *l = &m->layers[s];
    if (l->kind == LAYER_BMUL) {
        const int k = l->in2 >= 0 && m->layers[l->in2].kind == LAYER_CONST ? l->in2 : l->in;
        const int p = k == l->in ? l->in2 : l->in;
        const layer_t *K = k >= 0 ? &m->layers[k] : NULL;
        if (!K || K->kind != LAYER_CONST || !K->op.cnst.frozen || model_shape_count(&K->shape) != 1 || p < 0 ||
            only_reader(m, p) != s)
            return -1;
        *c = k, *mul = s;
        s = p;
    } else if (m->plan->layers[s].causal_bmm != BMM_CAUSAL_OUT) return -1;
    return m->layers[s].kind == LAYER_BMM ? s : -1;
}

/* Marks the fused attentions (the plan's attn) at each causal softmax j whose pattern is
 * whole: scores s = q k^T of two chains read by s alone (attn_scores: or through a Mul by a
 * constant), o = j v j's only reader, v a chain read by o alone, o's output merged by a
 * chain; the weights' product under the causal mask (mark_causal_bmm's), shapes (H, T, T)
 * and (H, T, D) that attention_fits. */
static void mark_attention(model_t *m)
{
    for (int j = 0; j < m->nlayers; j++) m->plan->layers[j].attn = ATTN_NONE;
    for (int j = 0; j < m->nlayers; j++) {
        const layer_t *sm = &m->layers[j];
        int c, mul;
        const int o = only_reader(m, j), s = sm->kind == LAYER_CAUSAL_SOFTMAX ? attn_scores(m, j, &c, &mul) : -1;
        if (s < 0 || o < 0) continue;
        const layer_t *S = &m->layers[s], *O = &m->layers[o];
        if (O->kind != LAYER_BMM || O->in != j || m->plan->layers[o].causal_bmm != BMM_CAUSAL_LEFT ||
            S->shape.rank != 3 || O->shape.rank != 3)
            continue;
        const int H = S->shape.dims[0], T = S->shape.dims[1], D = S->op.bmm.K;
        if (S->shape.dims[2] != T || O->shape.dims[0] != H || O->shape.dims[1] != T || O->shape.dims[2] != D ||
            !attention_fits(T, D))
            continue;
        const int qr = S->in, kr = S->in2, vr = O->in2;
        attn_desc_t a = {.H = H, .T = T, .D = D, .scale = sm->op.softmax.scale, .pre_scale = 1.0f};
        if (qr < 0 || kr < 0 || vr < 0 || only_reader(m, qr) != s || only_reader(m, kr) != s ||
            only_reader(m, vr) != o || attn_operand(&m->plan->layers[qr], H, T, D, 0, &a.q) != 0 ||
            attn_operand(&m->plan->layers[kr], H, T, D, 1, &a.k) != 0 ||
            attn_operand(&m->plan->layers[vr], H, T, D, 0, &a.v) != 0)
            continue;
        const int yr = attn_merge(m, o, H, T, D);
        if (yr < 0 || m->plan->layers[qr].chain_src < 0 || m->plan->layers[kr].chain_src < 0 ||
            m->plan->layers[vr].chain_src < 0)
            continue;
        a.y = (attn_operand_t){.off = 0, .ss = (size_t)T * H * D, .hs = (size_t)D, .rs = (size_t)H * D};
        layer_plan_t *y = &m->plan->layers[yr];
        y->attn = ATTN_RUN;
        y->attn_desc = a;
        y->attn_src[0] = m->plan->layers[qr].chain_src;
        y->attn_src[1] = m->plan->layers[kr].chain_src;
        y->attn_src[2] = m->plan->layers[vr].chain_src;
        y->attn_p = j;
        y->attn_const = c;
        const int skip[7] = {qr, kr, vr, s, j, o, mul};
        for (int k = 0; k < 7; k++)
            if (skip[k] >= 0) m->plan->layers[skip[k]].attn = ATTN_SKIP;
    }
}

/* model_t's positions: the last layer's elements per sample over the classes (1 for a
 * classifier's (classes) output, T for a language model's (T, V)); -1 when they do not
 * divide or the last axis is not the classes' (a (V, T) output would be read wrongly). */
int model_plan_positions(model_t *m)
{
    const model_shape_t *s = &m->layers[m->nlayers - 1].shape;
    const size_t n = model_shape_count(s);
    m->positions = 1;
    if (m->num_classes < 1 || n == (size_t)m->num_classes) return 0;
    if (n % (size_t)m->num_classes != 0 || s->rank < 2 || s->dims[s->rank - 1] != m->num_classes ||
        n / (size_t)m->num_classes > (size_t)INT32_MAX)
        return -1;
    m->positions = (int)(n / (size_t)m->num_classes);
    return 0;
}

void model_plan_free(model_plan_t *p)
{
    if (!p) return;
    free(p->layers);
    free(p->dact_off);
    free(p->dact_first);
    free(p->layer_tensor);
    free(p->grad_needed);
    free(p);
}

int model_plan_fusions(model_t *m)
{
    if (!m->plan) {
        m->plan = calloc(1, sizeof *m->plan);
        if (!m->plan) return -1;
        m->plan->layers = calloc((size_t)(m->nlayers ? m->nlayers : 1), sizeof *m->plan->layers);
        if (!m->plan->layers) return -1; /* model_free frees the plan */
    }
    fuse_layers(m);
    mark_set_grads(m);
    mark_view_chains(m);
    mark_causal_bmm(m);
    mark_attention(m);
    return 0;
}
