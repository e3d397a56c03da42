/* worker/compress.c - see compress.h.
 *
 * Letters: a compressed matrix is n x m (n = out rows, m = in x kh x kw), r its rank;
 * P is (n, r), Q is (m, r), both row-major. */
#include "compress.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "comm_mpi.h"
#include "compress_mem.h"
#include "rng.h"

/* The memory estimate's count (common/compress_mem.h) speaks of the same extras. */
_Static_assert(COMPRESS_MEM_EXTRA == MODEL_GRAD_EXTRA, "common/compress_mem.h's extras are model.h's");

typedef struct {
    size_t off;  /* into grads: the weight's gradient, (n, m) */
    int n, m;    /* rows, columns */
    size_t eoff; /* into err: (n, m) */
    size_t poff; /* into fused: (n, r) */
    size_t qoff; /* into q: (m, r) */
} matrix_t;

typedef struct {
    size_t off, count; /* a run of grads sent as is */
} segment_t;

struct compress {
    compress_kind_t kind;
    int r, warmup, nranks;
    size_t nparams;
    /* The trainable tensors' runs of grads (no_update 0, adjacent ones merged), ntrain
     * floats in all: every kind sends these and the extras, never a frozen tensor's
     * gradient. One run ending at nparams (or none): the plain message is grads from its
     * start, in place; else packed into `packed` and back. */
    segment_t *runs;
    int nruns;
    size_t ntrain;
    float *packed;  /* (plain_floats) or NULL */
    matrix_t *mats; /* (nmats), by offset */
    int nmats;
    segment_t *segs; /* (nsegs) the uncompressed runs, extras included */
    int nsegs;
    size_t err_floats, q_floats, p_floats, plain_floats, fused_floats;
    size_t plain_report;   /* the floats compress_plain_bytes counts (compress_set_plain_extra) */
    float *err;            /* (err_floats) this rank's error feedback e */
    float *q;              /* (q_floats) Q of every matrix, the reduced one after a step */
    float *fused;          /* (fused_floats) P of every matrix, then the uncompressed runs */
    uint16_t *words;       /* (nparams) bf16: the rounded gradient */
    float *all_err;        /* (nranks, err_floats) at the checkpoint writer, or NULL */
    long all_step;         /* the step count all_err was gathered at; -1: never */
    MPI_Op op;             /* bf16: compress_bf16_sum; MPI_OP_NULL without MPI */
    step_phases_t *phases; /* the worker's step timer, or NULL */
    /* compress_set_auto: the probe (see compress.h) */
    double min_gain;               /* 0: no probe */
    int probe;                     /* calls timed on each side */
    compress_verdict_t verdict;    /* COMPRESS_UNDECIDED until the probe's end */
    double sums[COMPRESS_PROBE_N]; /* PROBE_* */
    double last_wall;              /* phases->total_wall (or the clock) at the last call */
    long last_step;                /* ... and that call's step */
    int have_last;                 /* last_wall and last_step are this process's */
    int flush;                     /* PLAIN: the next plain call sends the error feedback */
    /* compress_create_push: a push's header and statistics (bytes, floats); push 0: a
     * collective's plan */
    int push;
    size_t push_header, push_stats;
};

uint16_t compress_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* a quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float compress_from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void compress_bf16_sum(const uint16_t *in, uint16_t *inout, size_t n)
{
    for (size_t i = 0; i < n; i++)
        inout[i] = compress_to_bf16(compress_from_bf16(in[i]) + compress_from_bf16(inout[i]));
}

void compress_bf16_widen(const uint16_t *in, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = compress_from_bf16(in[i]);
}

void compress_bf16_feedback(const float *g, float *err, uint16_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const float v = g[i] + err[i];
        out[i] = compress_to_bf16(v);
        err[i] = v - compress_from_bf16(out[i]);
    }
}

/* MPI may hand the op any piece of the message: it sums element by element. */
static void bf16_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    compress_bf16_sum(in, inout, (size_t)*len);
}

/* Orthonormalises the r columns of p (n x r, row-major) in place by Gram-Schmidt; a
 * column that is (numerically) in the span of the ones before it becomes 0. */
static void compress_orthogonalise(float *p, int n, int r)
{
    for (int j = 0; j < r; j++) {
        for (int k = 0; k < j; k++) {
            double d = 0;
            for (int i = 0; i < n; i++) d += (double)p[(size_t)i * r + j] * p[(size_t)i * r + k];
            for (int i = 0; i < n; i++) p[(size_t)i * r + j] -= (float)d * p[(size_t)i * r + k];
        }
        double s = 0;
        for (int i = 0; i < n; i++) s += (double)p[(size_t)i * r + j] * p[(size_t)i * r + j];
        /* A column with nothing left: 0 (its term of M^ vanishes) rather than noise. */
        float inv = s > 1e-30 ? (float)(1.0 / sqrt(s)) : 0.0f;
        for (int i = 0; i < n; i++) p[(size_t)i * r + j] *= inv;
    }
}

static int by_offset(const void *a, const void *b)
{
    const matrix_t *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static int seg_by_offset(const void *a, const void *b)
{
    const segment_t *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* c->runs and c->ntrain from m's tensors; 0, or -1 (out of memory). */
static int plan_runs(compress_t *c, const model_t *m)
{
    c->runs = calloc((size_t)(m->ntensors > 0 ? m->ntensors : 1), sizeof *c->runs);
    if (!c->runs) return -1;
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *x = &m->tensors[t];
        if (x->is_buffer || x->no_update || x->count == 0) continue;
        segment_t *last = c->nruns ? &c->runs[c->nruns - 1] : NULL;
        if (last && last->off + last->count == x->offset) last->count += x->count;
        else c->runs[c->nruns++] = (segment_t){.off = x->offset, .count = x->count};
        c->ntrain += x->count;
    }
    return 0;
}

/* Whether the plain message is grads itself from the one run's start (see runs). */
static int plain_in_place(const compress_t *c)
{
    return c->nruns == 0 || (c->nruns == 1 && c->runs[0].off + c->runs[0].count == c->nparams);
}

/* The plain message's buffer: grads from the trainable run's start, or the runs and the
 * extras packed. */
static float *plain_pack(compress_t *c, float *grads)
{
    if (plain_in_place(c)) return grads + (c->nruns ? c->runs[0].off : c->nparams);
    float *to = c->packed;
    for (int i = 0; i < c->nruns; i++) {
        memcpy(to, grads + c->runs[i].off, c->runs[i].count * sizeof *to);
        to += c->runs[i].count;
    }
    memcpy(to, grads + c->nparams, MODEL_GRAD_EXTRA * sizeof *to);
    return c->packed;
}

static void plain_unpack(const compress_t *c, float *grads)
{
    if (plain_in_place(c)) return;
    const float *from = c->packed;
    for (int i = 0; i < c->nruns; i++) {
        memcpy(grads + c->runs[i].off, from, c->runs[i].count * sizeof *from);
        from += c->runs[i].count;
    }
    memcpy(grads + c->nparams, from, MODEL_GRAD_EXTRA * sizeof *from);
}

/* The weight matrices worth compressing: a convolution's (OC, C/groups x KH x KW), a
 * fully connected layer's (OC, count / OC) or a last-axis linear's (IN, OUT) as it is
 * stored (an imported N-D MatMul by a weight: a transformer's projections), large
 * enough and paying COMPRESS_MIN_RATIO. */
static int plan_matrices(compress_t *c, const model_t *m)
{
    c->mats = calloc((size_t)(m->nlayers > 0 ? m->nlayers : 1), sizeof *c->mats);
    if (!c->mats) return -1;
    /* The parameter tensors by offset, so each layer finds its weight's size in log time
     * (an imported graph may have tens of thousands of layers and tensors). */
    segment_t *by = calloc((size_t)(m->ntensors > 0 ? m->ntensors : 1), sizeof *by);
    if (!by) return -1;
    int nby = 0;
    /* a frozen tensor (no_update) is none of them: nothing of it is sent */
    for (int t = 0; t < m->ntensors; t++)
        if (!m->tensors[t].is_buffer && !m->tensors[t].no_update)
            by[nby++] = (segment_t){.off = m->tensors[t].offset, .count = m->tensors[t].count};
    qsort(by, (size_t)nby, sizeof *by, seg_by_offset);
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        if (l->kind != LAYER_CONV && l->kind != LAYER_FC && l->kind != LAYER_LINEAR) continue;
        const segment_t key = {.off = l->w_off};
        const segment_t *hit = bsearch(&key, by, (size_t)nby, sizeof *by, seg_by_offset);
        size_t count = hit ? hit->count : 0;
        int n = l->kind == LAYER_LINEAR ? l->op.gemm.IN : l->OC;
        if (n < 2 || count == 0 || count % (size_t)n != 0 || count < COMPRESS_MIN_ELEMS) continue;
        size_t cols = count / (size_t)n;
        if (cols < 2 || cols > 0x7fffffff) continue;
        if ((size_t)COMPRESS_MIN_RATIO * (size_t)c->r * ((size_t)n + cols) > count) continue;
        c->mats[c->nmats++] = (matrix_t){.off = l->w_off, .n = n, .m = (int)cols};
    }
    free(by);
    qsort(c->mats, (size_t)c->nmats, sizeof *c->mats, by_offset);
    for (int i = 0; i < c->nmats; i++) {
        matrix_t *x = &c->mats[i];
        /* Two layers sharing a weight would overlap: keep the first. */
        if (i > 0 && x->off < c->mats[i - 1].off + (size_t)c->mats[i - 1].n * (size_t)c->mats[i - 1].m) {
            memmove(x, x + 1, (size_t)(c->nmats - i - 1) * sizeof *x);
            c->nmats--;
            i--;
            continue;
        }
        x->eoff = c->err_floats;
        x->poff = c->p_floats;
        x->qoff = c->q_floats;
        c->err_floats += (size_t)x->n * (size_t)x->m;
        c->p_floats += (size_t)x->n * (size_t)c->r;
        c->q_floats += (size_t)x->m * (size_t)c->r;
    }
    /* The trainable runs (c->runs) less the matrices, in order, then the extras. A
     * matrix is one trainable tensor's: it lies inside one run. */
    c->segs = calloc((size_t)c->nmats + (size_t)c->nruns + 1, sizeof *c->segs);
    if (!c->segs) return -1;
    size_t sent = 0;
    int k = 0;
    for (int r = 0; r < c->nruns; r++) {
        size_t at = c->runs[r].off;
        const size_t end = at + c->runs[r].count;
        for (; k < c->nmats && c->mats[k].off < end; k++) {
            if (c->mats[k].off > at) c->segs[c->nsegs++] = (segment_t){.off = at, .count = c->mats[k].off - at};
            at = c->mats[k].off + (size_t)c->mats[k].n * (size_t)c->mats[k].m;
        }
        if (end > at) c->segs[c->nsegs++] = (segment_t){.off = at, .count = end - at};
    }
    c->segs[c->nsegs++] = (segment_t){.off = m->nparams, .count = MODEL_GRAD_EXTRA};
    for (int i = 0; i < c->nsegs; i++) sent += c->segs[i].count;
    c->fused_floats = c->p_floats + sent;
    return 0;
}

int compress_create(const model_t *m, const char *kind, int rank, int warmup_steps, uint64_t seed, int nranks,
                    int with_mpi, compress_t **out, char *err, size_t errlen)
{
    *out = NULL;
    compress_t *c = calloc(1, sizeof *c);
    if (!c) goto oom;
    c->op = MPI_OP_NULL;
    c->all_step = -1;
    c->nparams = m->nparams;
    if (plan_runs(c, m) != 0) goto oom;
    c->plain_floats = c->ntrain + MODEL_GRAD_EXTRA;
    c->plain_report = c->plain_floats;
    if (!plain_in_place(c) && !(c->packed = malloc(c->plain_floats * sizeof *c->packed))) goto oom;
    c->nranks = nranks > 0 ? nranks : 1;
    c->warmup = warmup_steps > 0 ? warmup_steps : 0;
    if (strcmp(kind, "none") == 0) c->kind = COMPRESS_NONE;
    else if (strcmp(kind, "bf16") == 0) c->kind = COMPRESS_BF16;
    else if (strcmp(kind, "powersgd") == 0) c->kind = COMPRESS_POWERSGD;
    else {
        snprintf(err, errlen, "algorithm.compression.kind: unknown kind \"%.32s\" (none, bf16, powersgd)", kind);
        compress_free(c);
        return -1;
    }
    if (c->kind == COMPRESS_POWERSGD && (rank < 1 || rank > COMPRESS_MAX_RANK)) {
        snprintf(err, errlen, "algorithm.compression.rank: %d is outside [1, %d]", rank, COMPRESS_MAX_RANK);
        compress_free(c);
        return -1;
    }
    c->r = rank;
    if (c->kind == COMPRESS_BF16) {
        c->words = malloc((c->ntrain ? c->ntrain : 1) * sizeof *c->words);
        if (!c->words) goto oom;
        if (with_mpi) MPI_CHECK(MPI_Op_create(bf16_op, 1, &c->op));
    } else if (c->kind == COMPRESS_POWERSGD) {
        if (plan_matrices(c, m) != 0) goto oom;
        c->err = calloc(c->err_floats ? c->err_floats : 1, sizeof *c->err);
        c->q = malloc((c->q_floats ? c->q_floats : 1) * sizeof *c->q);
        c->fused = malloc(c->fused_floats * sizeof *c->fused);
        if (!c->err || !c->q || !c->fused) goto oom;
        /* Q's start: the same draws on every rank (the job's seed), whatever its rank. */
        rng_t g;
        rng_seed(&g, seed ^ 0x706f77657273676dull); /* "powersgm" */
        for (size_t i = 0; i < c->q_floats; i++) c->q[i] = rng_normal(&g);
    }
    *out = c;
    return 0;
oom:
    snprintf(err, errlen, "algorithm.compression: out of memory for the %s buffers", kind);
    compress_free(c);
    return -1;
}

size_t compress_push_bytes(size_t header_bytes, size_t nparams, size_t nbuffers, int bf16)
{
    return header_bytes + nparams * (bf16 ? sizeof(uint16_t) : sizeof(float)) + nbuffers * sizeof(float);
}

int compress_create_push(const model_t *m, const char *kind, size_t header_bytes, compress_t **out, char *err,
                         size_t errlen)
{
    *out = NULL;
    if (strcmp(kind, "none") != 0 && strcmp(kind, "bf16") != 0) {
        snprintf(err, errlen,
                 "algorithm.compression.kind: the parameter server's pushes take none or bf16, not \"%.32s\"", kind);
        return -1;
    }
    compress_t *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "algorithm.compression: out of memory for the push plan");
        return -1;
    }
    c->kind = strcmp(kind, "bf16") == 0 ? COMPRESS_BF16 : COMPRESS_NONE;
    c->op = MPI_OP_NULL;
    c->all_step = -1;
    c->nranks = 1;
    c->nparams = m->nparams;
    c->push = 1;
    c->push_header = header_bytes;
    c->push_stats = m->nbuffers;
    if (plan_runs(c, m) != 0) { /* a push carries the trainable tensors' gradient only */
        compress_free(c);
        snprintf(err, errlen, "algorithm.compression: out of memory for the push plan");
        return -1;
    }
    *out = c;
    return 0;
}

void compress_free(compress_t *c)
{
    if (!c) return;
    if (c->op != MPI_OP_NULL) MPI_Op_free(&c->op);
    free(c->mats);
    free(c->segs);
    free(c->runs);
    free(c->packed);
    free(c->err);
    free(c->q);
    free(c->fused);
    free(c->words);
    free(c->all_err);
    free(c);
}

void compress_set_phases(compress_t *c, step_phases_t *phases)
{
    if (c) c->phases = phases;
}

/* Books the time since the last mark as ph, on a compressed step with a timer only. */
static void mark(const compress_t *c, long step, phase_t ph)
{
    if (c->phases && compress_active(c, step)) phase_mark(c->phases, ph);
}

void compress_set_plain_extra(compress_t *c, int extra)
{
    if (c && extra >= 0) c->plain_report = c->ntrain + (size_t)extra;
}

void compress_set_nranks(compress_t *c, int nranks)
{
    if (c && nranks >= 1) c->nranks = nranks;
}

MPI_Op compress_bf16_op(const compress_t *c) { return c->op; }

size_t compress_msg_bytes(const compress_msg_t *msg)
{
    return (size_t)msg->count * (msg->bf16 ? sizeof(uint16_t) : sizeof(float));
}

compress_kind_t compress_kind(const compress_t *c) { return c ? c->kind : COMPRESS_NONE; }

int compress_active(const compress_t *c, long step)
{
    if (!c || c->kind == COMPRESS_NONE) return 0;
    return c->kind == COMPRESS_BF16 || (step >= c->warmup && c->verdict != COMPRESS_PLAIN);
}

void compress_set_auto(compress_t *c, double min_gain, int probe_steps)
{
    if (!c || c->kind != COMPRESS_POWERSGD || !(min_gain > 0) || probe_steps < 1) return;
    c->min_gain = min_gain;
    c->probe = probe_steps;
}

double compress_probe_gain(const double *v)
{
    if (!(v[PROBE_PLAIN_N] > 0 && v[PROBE_STEP_N] > 0 && v[PROBE_COMP_N] > 0 && v[PROBE_STEP_S] > 0)) return NAN;
    const double plain = v[PROBE_PLAIN_S] / v[PROBE_PLAIN_N], comp = v[PROBE_COMP_S] / v[PROBE_COMP_N];
    return (plain - comp) / (v[PROBE_STEP_S] / v[PROBE_STEP_N]);
}

/* The probe's end: every rank of comm reaches it at the same call. */
static void decide(compress_t *c, int use_mpi, MPI_Comm comm)
{
    if (use_mpi) MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, c->sums, COMPRESS_PROBE_N, MPI_DOUBLE, MPI_SUM, comm));
    const double gain = compress_probe_gain(c->sums);
    int keep = isnan(gain) || gain >= c->min_gain;
    if (use_mpi) MPI_CHECK(MPI_Bcast(&keep, 1, MPI_INT, 0, comm)); /* one verdict, whatever the rounding */
    c->verdict = keep ? COMPRESS_KEEP : COMPRESS_PLAIN;
    c->flush = !keep;
}

/* The warm-up's last probe_steps steps: the plain side of the probe. */
static int plain_window(const compress_t *c, long step) { return step >= c->warmup - c->probe && step < c->warmup; }

void compress_observe(compress_t *c, long step, double spent_s, int use_mpi, MPI_Comm comm)
{
    if (!c || c->probe == 0 || c->verdict != COMPRESS_UNDECIDED) return;
    /* The steps closed since the last call (the phases timer's, training time only; the
     * clock without one, in tests) are the last call's step and those after it up to this
     * one: a plain step's wall is counted once it has closed, with its own call inside
     * it, so a plain call never outweighs the step it is part of. */
    const double wall = c->phases ? c->phases->total_wall : clock_mono_s();
    const double since = wall - c->last_wall;
    if (c->have_last && plain_window(c, c->last_step) && since > 0)
        c->sums[PROBE_STEP_S] += since, c->sums[PROBE_STEP_N] += 1;
    c->last_wall = wall, c->last_step = step, c->have_last = 1;
    if (plain_window(c, step)) {
        c->sums[PROBE_PLAIN_S] += spent_s, c->sums[PROBE_PLAIN_N] += 1;
    } else if (step >= c->warmup && step < (long)c->warmup + c->probe) {
        c->sums[PROBE_COMP_S] += spent_s, c->sums[PROBE_COMP_N] += 1;
    }
    if (step >= (long)c->warmup + c->probe - 1) decide(c, use_mpi, comm);
}

compress_verdict_t compress_verdict(const compress_t *c, double *probe)
{
    if (probe) {
        for (int i = 0; i < COMPRESS_PROBE_N; i++) probe[i] = c ? c->sums[i] : 0;
    }
    return c ? c->verdict : COMPRESS_UNDECIDED;
}

void compress_restore_verdict(compress_t *c, compress_verdict_t v, const double *probe)
{
    if (!c || c->probe == 0) return;
    c->verdict = v;
    for (int i = 0; i < COMPRESS_PROBE_N; i++) c->sums[i] = probe[i];
    c->flush = v == COMPRESS_PLAIN;
}

/* After a PLAIN verdict: this rank's error feedback joins the first plain call's buffer,
 * so what was dropped while compressing is sent once, and e is 0 from then on. */
static void flush_error(compress_t *c, float *grads)
{
    for (int i = 0; i < c->nmats; i++) {
        const matrix_t *x = &c->mats[i];
        float *e = c->err + x->eoff, *g = grads + x->off;
        for (size_t k = 0; k < (size_t)x->n * (size_t)x->m; k++) g[k] += e[k];
    }
    memset(c->err, 0, c->err_floats * sizeof *c->err);
    c->flush = 0;
}

int compress_begin(compress_t *c, float *grads, long step, compress_msg_t *msgs)
{
    if (!compress_active(c, step)) {
        if (c->flush) flush_error(c, grads);
        msgs[0] = (compress_msg_t){.buf = plain_pack(c, grads), .count = (int)c->plain_floats};
        return 1;
    }
    if (c->kind == COMPRESS_BF16) {
        uint16_t *to = c->words;
        for (int r = 0; r < c->nruns; r++)
            for (size_t i = 0; i < c->runs[r].count; i++) *to++ = compress_to_bf16(grads[c->runs[r].off + i]);
        msgs[0] = (compress_msg_t){.buf = c->words, .count = (int)c->ntrain, .bf16 = 1};
        msgs[1] = (compress_msg_t){.buf = grads + c->nparams, .count = MODEL_GRAD_EXTRA};
        return 2;
    }
    const int r = c->r;
    for (int i = 0; i < c->nmats; i++) {
        const matrix_t *x = &c->mats[i];
        float *e = c->err + x->eoff; /* becomes M = G + e */
        const float *g = grads + x->off;
        for (size_t k = 0; k < (size_t)x->n * (size_t)x->m; k++) e[k] += g[k];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, x->n, r, x->m, 1.0f, e, x->m, c->q + x->qoff, r, 0.0f,
                    c->fused + x->poff, r);
    }
    float *rest = c->fused + c->p_floats;
    for (int i = 0; i < c->nsegs; i++) {
        memcpy(rest, grads + c->segs[i].off, c->segs[i].count * sizeof *rest);
        rest += c->segs[i].count;
    }
    msgs[0] = (compress_msg_t){.buf = c->fused, .count = (int)c->fused_floats};
    return 1;
}

int compress_middle(compress_t *c, float *grads, long step, compress_msg_t *msgs)
{
    if (!compress_active(c, step)) {
        plain_unpack(c, grads);
        return 0;
    }
    if (c->kind == COMPRESS_BF16) {
        const uint16_t *from = c->words;
        for (int r = 0; r < c->nruns; from += c->runs[r].count, r++)
            compress_bf16_widen(from, grads + c->runs[r].off, c->runs[r].count);
        return 0;
    }
    const float *rest = c->fused + c->p_floats;
    for (int i = 0; i < c->nsegs; i++) {
        memcpy(grads + c->segs[i].off, rest, c->segs[i].count * sizeof *rest);
        rest += c->segs[i].count;
    }
    const int r = c->r;
    for (int i = 0; i < c->nmats; i++) {
        const matrix_t *x = &c->mats[i];
        float *p = c->fused + x->poff;
        compress_orthogonalise(p, x->n, r);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, x->m, r, x->n, 1.0f, c->err + x->eoff, x->m, p, r, 0.0f,
                    c->q + x->qoff, r);
    }
    if (c->q_floats == 0) return 0;
    msgs[0] = (compress_msg_t){.buf = c->q, .count = (int)c->q_floats};
    return 1;
}

void compress_end(compress_t *c, float *grads, long step)
{
    if (!compress_active(c, step) || c->kind != COMPRESS_POWERSGD) return;
    const int r = c->r;
    const float share = 1.0f / (float)c->nranks;
    for (int i = 0; i < c->nmats; i++) {
        const matrix_t *x = &c->mats[i];
        float *g = grads + x->off;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, x->n, x->m, r, 1.0f, c->fused + x->poff, r, c->q + x->qoff,
                    r, 0.0f, g, x->m);
        float *e = c->err + x->eoff;
        for (size_t k = 0; k < (size_t)x->n * (size_t)x->m; k++) e[k] -= share * g[k];
    }
}

static size_t reduce(compress_t *c, const compress_msg_t *msg, int use_mpi, MPI_Comm comm)
{
    if (!use_mpi || msg->count == 0) return 0; /* nothing handed to MPI */
    size_t bytes = compress_msg_bytes(msg);
    if (msg->bf16) MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, msg->buf, msg->count, MPI_UINT16_T, c->op, comm));
    else MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, msg->buf, msg->count, MPI_FLOAT, MPI_SUM, comm));
    return bytes;
}

/* One stage's messages, which do not depend on each other (bf16's words and its fp32
 * extras): the later ones start first as non-blocking all-reduces, the first runs
 * blocking meanwhile, so their latencies overlap instead of adding up: in sequence they
 * cost bf16 about 6 ms a step on the namespace cluster at 10 Gbit/s, 4 ranks on 2 cores
 * (docs/PERFORMANCE.md, "Gradient compression on slow links"). Every rank starts them in
 * the same order, as MPI requires. */
static size_t reduce_stage(compress_t *c, compress_msg_t *msgs, int n, int use_mpi, MPI_Comm comm)
{
    MPI_Request req[2];
    int nreq = 0;
    size_t bytes = 0;
    for (int i = 1; i < n && i < 2 && use_mpi; i++) {
        if (msgs[i].count == 0) continue;
        bytes += compress_msg_bytes(&msgs[i]);
        if (msgs[i].bf16)
            MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, msgs[i].buf, msgs[i].count, MPI_UINT16_T, c->op, comm, &req[nreq++]));
        else
            MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, msgs[i].buf, msgs[i].count, MPI_FLOAT, MPI_SUM, comm, &req[nreq++]));
    }
    if (n > 0) bytes += reduce(c, &msgs[0], use_mpi, comm);
    if (nreq > 0) MPI_CHECK(MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE));
    return bytes;
}

size_t compress_allreduce(compress_t *c, float *grads, long step, int use_mpi, MPI_Comm comm)
{
    compress_msg_t msgs[2];
    size_t bytes = 0;
    int n = compress_begin(c, grads, step, msgs);
    mark(c, step, PHASE_COMPRESS);
    bytes += reduce_stage(c, msgs, n, use_mpi, comm);
    mark(c, step, PHASE_COMM);
    n = compress_middle(c, grads, step, msgs);
    mark(c, step, PHASE_COMPRESS);
    bytes += reduce_stage(c, msgs, n, use_mpi, comm);
    mark(c, step, PHASE_COMM);
    compress_end(c, grads, step);
    mark(c, step, PHASE_COMPRESS);
    return bytes;
}

float *compress_q(compress_t *c, size_t *n)
{
    *n = c ? c->q_floats : 0;
    return c ? c->q : NULL;
}

float *compress_error(compress_t *c, size_t *n)
{
    *n = c ? c->err_floats : 0;
    return c ? c->err : NULL;
}

int compress_matrices(const compress_t *c) { return c ? c->nmats : 0; }

size_t compress_plain_bytes(const compress_t *c)
{
    if (c->push) return compress_push_bytes(c->push_header, c->ntrain, c->push_stats, 0);
    return c->plain_report * sizeof(float);
}

size_t compress_step_bytes(const compress_t *c)
{
    if (c->push) return compress_push_bytes(c->push_header, c->ntrain, c->push_stats, c->kind == COMPRESS_BF16);
    switch (c->kind) {
    case COMPRESS_BF16: return c->ntrain * sizeof(uint16_t) + MODEL_GRAD_EXTRA * sizeof(float);
    case COMPRESS_POWERSGD: return (c->fused_floats + c->q_floats) * sizeof(float);
    default: return compress_plain_bytes(c);
    }
}

double compress_step_flops(const compress_t *c)
{
    if (!c) return 0;
    if (c->kind == COMPRESS_BF16) return 2.0 * (double)c->ntrain;
    if (c->kind != COMPRESS_POWERSGD) return 0;
    const double r = c->r;
    double f = 0;
    for (int i = 0; i < c->nmats; i++) {
        const double n = c->mats[i].n, m = c->mats[i].m;
        f += 6.0 * n * m * r + 3.0 * n * m + 2.0 * n * r * r + 3.0 * n * r;
    }
    return f;
}

size_t compress_state_floats(const compress_t *c)
{
    if (!c) return 0;
    return c->err_floats + c->q_floats + c->fused_floats + (c->words ? (c->ntrain + 1) / 2 : 0) +
           (c->packed ? c->plain_floats : 0) + (c->all_err ? c->err_floats * (size_t)c->nranks : 0);
}

int compress_keep_all(compress_t *c, int nranks)
{
    if (!c || c->err_floats == 0 || c->all_err) return 0;
    c->all_err = malloc(c->err_floats * (size_t)nranks * sizeof *c->all_err);
    return c->all_err ? 0 : -1;
}

void compress_gather_errors(compress_t *c, int use_mpi, MPI_Comm comm, long at_step)
{
    if (!c || c->err_floats == 0) return;
    if (!use_mpi) {
        if (c->all_err) memcpy(c->all_err, c->err, c->err_floats * sizeof *c->err);
    } else {
        MPI_CHECK(MPI_Gather(c->err, (int)c->err_floats, MPI_FLOAT, c->all_err, (int)c->err_floats, MPI_FLOAT, 0, comm));
    }
    c->all_step = at_step;
}

const float *compress_all_errors(const compress_t *c, long *at_step)
{
    *at_step = c ? c->all_step : -1;
    return c && c->all_step >= 0 ? c->all_err : NULL;
}
