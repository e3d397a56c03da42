/* worker/shard.c - see shard.h. */
#include "shard.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "comm_mpi.h"
#include "memest.h"
#include "shard_plan.h"
#include "step.h"

/* The reduce-scatter's rounds (start_round): at most SHARD_DEPTH in flight, each taking a
 * chunk of at most SHARD_CHUNK floats (1 MiB, Open MPI's eager limit as pacer launches it:
 * a message then needs no reply from its receiver to leave) from every rank's part, the
 * chunk smaller on larger worlds so that the rounds' scratch stays within
 * SHARD_SCRATCH floats (8 MiB), down to SHARD_CHUNK_MIN. Messages of one pair and tag
 * match in the order they were posted, and every rank posts the rounds in one order. */
#define SHARD_CHUNK ((size_t)1 << 18)
#define SHARD_CHUNK_MIN ((size_t)1 << 12)
#define SHARD_SCRATCH ((size_t)1 << 21)
#define SHARD_DEPTH 4
#define SHARD_TAG 0x5a4d
/* The smallest bucket: a sixteenth of the model up to SHARD_BUCKET (8 MiB of floats;
 * fewer, larger exchanges than one per layer, yet a small part of a model large enough to
 * need sharding; a small model gets several buckets all the same, as the tests' do). A
 * sixteenth, not an eighth: stage 2 keeps a finished bucket resident while it is in
 * transfer (SHARD_LAG), and smaller buckets keep that what it was when the pass waited
 * for each bucket. */

/* A range-sized state buffer, 64-byte aligned as the model's (the vector loops' reach),
 * zeroed, with src's range copied in when given (a restored state). */
static float *range_buffer(size_t n, const float *src)
{
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    float *p = aligned_alloc(64, bytes ? bytes : 64);
    if (!p) return NULL;
    memset(p, 0, bytes ? bytes : 64);
    if (src && n) memcpy(p, src, n * sizeof(float));
    return p;
}

/* "memory": each rank's weight is what its host has available (MemAvailable) shared by
 * the ranks of this job on that host, gathered from every rank; NULL in one process or
 * when a rank cannot read it (the split is then even, shard_weights). */
static double *memory_weights(worker_t *w, int n)
{
    if (strcmp(w->spec->algorithm.shard.split, "memory") != 0) return NULL;
    double *mem = calloc((size_t)n, sizeof *mem);
    if (!mem) return NULL;
    double mine = memest_meminfo("MemAvailable");
    if (!w->use_mpi) {
        mem[0] = mine;
        return mem;
    }
    MPI_Comm host;
    int on_host = 1;
    comm_split_machine(w->rank, &host);
    MPI_Comm_size(host, &on_host);
    MPI_Comm_free(&host);
    if (mine > 0) mine /= on_host;
    MPI_CHECK(MPI_Allgather(&mine, 1, MPI_DOUBLE, mem, 1, MPI_DOUBLE, MPI_COMM_WORLD));
    return mem;
}

/* PACER_SHARD_CHUNK (floats), for tests: the rounds' chunk instead of the one make_rounds
 * works out, so that a small model's buckets take several rounds each and the ring of
 * rounds wraps within a bucket, the path a model of millions of parameters takes
 * (tests/integration/mpi_shard.sh). A multiple of SHARD_ALIGN (the ranges' alignment)
 * from SHARD_ALIGN to SHARD_CHUNK; anything else is refused by name. 0 when unset. */
static int chunk_override(size_t *chunk, char *err, size_t errlen)
{
    const char *env = getenv("PACER_SHARD_CHUNK");
    *chunk = 0;
    if (!env || !*env) return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(env, &end, 10);
    if (errno || end == env || *end || *env == '-' || v < SHARD_ALIGN || v > SHARD_CHUNK || v % SHARD_ALIGN) {
        snprintf(err, errlen, "PACER_SHARD_CHUNK: \"%.40s\" is not a multiple of %d floats from %d to %zu", env,
                 SHARD_ALIGN, SHARD_ALIGN, SHARD_CHUNK);
        return -1;
    }
    *chunk = (size_t)v;
    return 0;
}

/* The ring of rounds: SHARD_DEPTH slots of n chunks and 2n requests each (none in one
 * process). 0, or -1 when memory runs out. */
static int make_rounds(shard_t *sh)
{
    const size_t n = (size_t)sh->n;
    sh->chunk = SHARD_SCRATCH / (n * SHARD_DEPTH);
    if (sh->chunk > SHARD_CHUNK) sh->chunk = SHARD_CHUNK;
    if (sh->chunk < SHARD_CHUNK_MIN) sh->chunk = SHARD_CHUNK_MIN;
    if (sh->chunk_set) sh->chunk = sh->chunk_set;
    sh->from = calloc(n, sizeof *sh->from);
    sh->cnt = calloc(n, sizeof *sh->cnt);
    if (!sh->from || !sh->cnt) return -1;
    if (n < 2) return 0;
    sh->rounds = calloc(SHARD_DEPTH, sizeof *sh->rounds);
    if (!sh->rounds) return -1;
    for (int i = 0; i < SHARD_DEPTH; i++) {
        sh->rounds[i].scratch = range_buffer(n * sh->chunk, NULL);
        sh->rounds[i].reqs = calloc(2 * n, sizeof *sh->rounds[i].reqs);
        if (!sh->rounds[i].scratch || !sh->rounds[i].reqs) return -1;
    }
    return 0;
}

static int make_plan(worker_t *w, shard_t *sh, char *err, size_t errlen)
{
    const int n = sh->n;
    sh->bounds = calloc((size_t)n + 1, sizeof *sh->bounds);
    sh->counts = calloc((size_t)n, sizeof *sh->counts);
    sh->displs = calloc((size_t)n, sizeof *sh->displs);
    sh->weights = calloc((size_t)n, sizeof *sh->weights);
    double *mem = memory_weights(w, n);
    if (!sh->bounds || !sh->counts || !sh->displs || !sh->weights || make_rounds(sh) != 0) {
        free(mem);
        snprintf(err, errlen, "algorithm.shard: out of memory for the plan of %d ranks", n);
        return -1;
    }
    shard_weights(w->spec, n, mem, sh->weights, &sh->fallback);
    free(mem);
    const size_t np = w->model->nparams;
    if (np > (size_t)INT32_MAX || shard_plan(np, sh->weights, n, sh->bounds) != 0) {
        snprintf(err, errlen, "algorithm.shard: cannot split %zu parameters over %d ranks (MPI counts are ints)", np, n);
        return -1;
    }
    for (int r = 0; r < n; r++) {
        sh->displs[r] = (int)sh->bounds[r];
        sh->counts[r] = (int)(sh->bounds[r + 1] - sh->bounds[r]);
    }
    const int me = w->use_mpi ? w->rank : 0;
    sh->lo = sh->bounds[me];
    sh->hi = sh->bounds[me + 1];
    if (sh->fallback && w->rank == 0)
        fprintf(stderr, "algorithm.shard.split: %d weights for a world of %d ranks (an elastic restart): split evenly\n",
                w->spec->algorithm.shard.nweights, n);
    return 0;
}

/* The model's full-size state (restored or zero) becomes the range's: copied into
 * range-sized buffers and freed, except at rank 0 with checkpoints, whose range is a view
 * into the full buffers the checkpoints write. */
static int take_state(worker_t *w, shard_t *sh, char *err, size_t errlen)
{
    model_t *m = w->model;
    const size_t n = sh->hi - sh->lo;
    sh->states = m->moment2 ? 2 : 1;
    sh->full_at_root = w->rank == 0 && w->spec->checkpoint.every_steps > 0;
    if (sh->full_at_root) {
        sh->mom = m->momentum + sh->lo;
        sh->mom2 = m->moment2 ? m->moment2 + sh->lo : NULL;
        return 0;
    }
    sh->own_state = 1;
    sh->mom = range_buffer(n, m->momentum + sh->lo);
    sh->mom2 = m->moment2 ? range_buffer(n, m->moment2 + sh->lo) : NULL;
    if (!sh->mom || (m->moment2 && !sh->mom2)) {
        snprintf(err, errlen, "algorithm.shard: out of memory for the optimizer state of %zu parameters", n);
        return -1;
    }
    free(m->momentum);
    free(m->moment2);
    m->momentum = m->moment2 = NULL;
    return 0;
}

/* What rank r keeps: the state of its range (rank 0 with checkpoints: all of it), and the
 * gradient buffer (stage 2: its range and the extras once reduced). */
static void rank_bytes(const worker_t *w, const shard_t *sh, int r, double *state, double *grad)
{
    const double np = (double)w->model->nparams, mine = (double)(sh->bounds[r + 1] - sh->bounds[r]);
    *state = 4.0 * sh->states * (r == 0 && sh->full_at_root ? np : mine);
    *grad = 4.0 * ((sh->stage >= 2 ? mine : np) + MODEL_GRAD_EXTRA);
}

/* The end of the params tensor holding off (0 when none: a layer without parameters
 * whose offsets are 0, or a buffer's offset, only makes the plan more cautious). */
static size_t tensor_end(const model_t *m, size_t off)
{
    const tensor_info_t *t = model_tensor_at(m, off, 0);
    return t ? t->offset + t->count : 0;
}

/* final_below and the bucket edges (shard.h). Layers write gradients only at their w_off
 * and b_off tensors (a tied head at its embedding's), and a backward runs from the last
 * layer to the first: after layer i's, no parameter above every tensor of layers 0..i-1
 * is written again in this pass. */
static int plan_buckets(const model_t *m, shard_t *sh)
{
    const int nl = m->nlayers;
    sh->final_below = calloc((size_t)(nl > 0 ? nl : 1), sizeof *sh->final_below);
    sh->edge = calloc((size_t)(nl > 0 ? nl : 1) + 2, sizeof *sh->edge);
    if (!sh->final_below || !sh->edge) return -1;
    size_t below = 0; /* the highest end of a tensor of layers 0..i-1 */
    for (int i = 0; i < nl; i++) {
        sh->final_below[i] = below;
        const layer_t *l = &m->layers[i];
        size_t e = tensor_end(m, l->w_off), f = tensor_end(m, l->b_off);
        if (e > below) below = e;
        if (f > below) below = f;
    }
    const size_t least = m->nparams / 16 < SHARD_BUCKET ? m->nparams / 16 + 1 : SHARD_BUCKET;
    int k = 0;
    sh->edge[k] = m->nparams;
    for (int i = nl - 1; i >= 0; i--)
        if (sh->edge[k] >= sh->final_below[i] + least) sh->edge[++k] = sh->final_below[i];
    if (sh->edge[k] > 0) sh->edge[++k] = 0;
    sh->nbuckets = k;
    sh->ready = sh->posted = sh->reduced = k; /* none pending until shard_begin_step */
    return 0;
}

/* Copies the trainable runs' floats inside rank r's range between params and packed (from
 * tdispls[r] on, in the order of the runs): to_packed 1 packs, 0 unpacks. */
static void copy_trainable(const model_t *m, const shard_t *sh, int r, float *params, int to_packed)
{
    size_t off, cnt, at = (size_t)sh->tdispls[r];
    int ti = 0, nd;
    const size_t a = sh->bounds[r], b = sh->bounds[r + 1];
    while (model_decay_run(m, 0, &ti, &off, &cnt, &nd)) {
        const size_t lo = off > a ? off : a, hi = off + cnt < b ? off + cnt : b;
        if (lo >= hi) continue;
        if (to_packed) memcpy(sh->packed + at, params + lo, (hi - lo) * sizeof *params);
        else memcpy(params + lo, sh->packed + at, (hi - lo) * sizeof *params);
        at += hi - lo;
    }
}

/* The packed all-gather's counts, displacements and buffer (shard_t's tcounts). */
static int plan_packed_gather(const model_t *m, shard_t *sh)
{
    sh->tcounts = calloc((size_t)sh->n, sizeof *sh->tcounts);
    sh->tdispls = calloc((size_t)sh->n, sizeof *sh->tdispls);
    sh->packed = malloc((sh->ntrain ? sh->ntrain : 1) * sizeof *sh->packed);
    if (!sh->tcounts || !sh->tdispls || !sh->packed) return -1;
    size_t off, cnt;
    for (int r = 0; r < sh->n; r++) {
        int ti = 0, nd;
        size_t c = 0;
        while (model_decay_run(m, 0, &ti, &off, &cnt, &nd)) {
            const size_t lo = off > sh->bounds[r] ? off : sh->bounds[r];
            const size_t hi = off + cnt < sh->bounds[r + 1] ? off + cnt : sh->bounds[r + 1];
            if (lo < hi) c += hi - lo;
        }
        sh->tcounts[r] = (int)c; /* at most the rank's count, an int already */
        sh->tdispls[r] = r ? sh->tdispls[r - 1] + sh->tcounts[r - 1] : 0;
    }
    return 0;
}

int shard_setup(worker_t *w, char *err, size_t errlen)
{
    const job_spec_t *s = w->spec;
    if (s->algorithm.shard.stage <= 0 || w->shard) return 0;
    if (w->gpu) {
        snprintf(err, errlen, "algorithm.shard: implemented on CPU ranks only");
        return -1;
    }
    shard_t *sh = calloc(1, sizeof *sh);
    if (!sh) {
        snprintf(err, errlen, "algorithm.shard: out of memory");
        return -1;
    }
    w->shard = sh;
    sh->stage = s->algorithm.shard.stage;
    sh->n = w->use_mpi ? w->world : 1;
    if (sh->n > SPEC_MAX_WORKERS) {
        snprintf(err, errlen, "algorithm.shard: at most %d ranks, the world has %d", SPEC_MAX_WORKERS, sh->n);
        return -1;
    }
    sh->gathered_step = w->global_step;
    if (chunk_override(&sh->chunk_set, err, errlen) != 0) return -1;
    if (make_plan(w, sh, err, errlen) != 0 || take_state(w, sh, err, errlen) != 0) return -1;
    sh->pieces = w->any_frozen;
    size_t off, cnt;
    int ti = 0, nd;
    sh->ntrain = w->any_frozen ? 0 : w->model->nparams;
    while (w->any_frozen && model_decay_run(w->model, 0, &ti, &off, &cnt, &nd)) sh->ntrain += cnt;
    if (sh->pieces && w->use_mpi && plan_packed_gather(w->model, sh) != 0) {
        snprintf(err, errlen, "algorithm.shard: out of memory for the %zu trainable floats' gather", sh->ntrain);
        return -1;
    }
    if (plan_buckets(w->model, sh) != 0) {
        snprintf(err, errlen, "algorithm.shard: out of memory for the buckets of %d layers", w->model->nlayers);
        return -1;
    }
    if (w->report_shard) { /* the node hash: the job page's node table shows each rank's share */
        double state, grad;
        const int me = w->use_mpi ? w->rank : 0;
        rank_bytes(w, sh, me, &state, &grad);
        w->report_shard(w, (long long)(sh->hi - sh->lo), (long long)state, (long long)grad);
    }
    return 0;
}

void shard_free(worker_t *w)
{
    shard_t *sh = w->shard;
    if (!sh) return;
    if (sh->own_state) {
        free(sh->mom);
        free(sh->mom2);
    }
    free(sh->bounds);
    free(sh->counts);
    free(sh->displs);
    free(sh->weights);
    for (int i = 0; sh->rounds && i < SHARD_DEPTH; i++) {
        free(sh->rounds[i].scratch);
        free(sh->rounds[i].reqs);
    }
    free(sh->rounds);
    free(sh->from);
    free(sh->cnt);
    free(sh->edge);
    free(sh->final_below);
    free(sh->tcounts);
    free(sh->tdispls);
    free(sh->packed);
    free(sh);
    w->model->grad_done = NULL;
    w->shard = NULL;
}

/* Hands back the pages wholly inside [a, b) (stage 2: the gradient outside the range, not
 * kept once reduced; the next backward pass gets them zeroed). */
static void release_pages(const float *a, const float *b)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = ((uintptr_t)a + page - 1) & ~(page - 1), hi = (uintptr_t)b & ~(page - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* One chunk of the owner's sum, in the order of Open MPI's basic linear reduction
 * (g0 + (g1 + (... + g[n-1]))): in[i] is rank i's part, acc receives the sum. */
static void sum_in_rank_order(int n, const float *const *in, float *acc, size_t c)
{
    memcpy(acc, in[n - 1], c * sizeof *acc);
    for (int i = n - 2; i >= 0; i--) {
        const float *x = in[i];
        for (size_t k = 0; k < c; k++) acc[k] = x[k] + acc[k];
    }
}

/* Stage 2: bucket k's pages outside this rank's range, once its sends are done. */
static void release_bucket(worker_t *w, const shard_t *sh, int k)
{
    float *g = w->model->grads;
    const size_t a = sh->edge[k + 1], b = sh->edge[k];
    if (sh->stage < 2) return;
    if (a < sh->lo) release_pages(g + a, g + (b < sh->lo ? b : sh->lo));
    if (b > sh->hi) release_pages(g + (a > sh->hi ? a : sh->hi), g + b);
}

/* The first trainable run's part inside [from, b) into [*pa, *pb); 0 where there is none:
 * with frozen tensors a bucket's rounds go piece by piece (shard.h, pieces). */
static int next_piece(const model_t *m, size_t from, size_t b, size_t *pa, size_t *pb)
{
    size_t off, cnt;
    int ti = 0, nd;
    while (model_decay_run(m, 0, &ti, &off, &cnt, &nd)) {
        const size_t lo = off > from ? off : from, hi = off + cnt < b ? off + cnt : b;
        if (lo < hi) {
            *pa = lo;
            *pb = hi;
            return 1;
        }
    }
    return 0;
}

/* Starts the next round of the reduce-scatter, of bucket sh->posted (its parts worked out
 * at its first round, or at each piece's): this rank receives every other rank's chunk of
 * its own part into the slot's scratch and sends every other rank its chunk of that
 * rank's part, from grads in place. MPI_Reduce_scatter would do a bucket in one call, but Open MPI's
 * allocates scratch the size of the whole buffer (what the sharding saves), its summation
 * order differs from the all-reduce's, and it blocks. */
static void start_round(worker_t *w, shard_t *sh)
{
    float *g = w->model->grads;
    const int n = sh->n, me = w->rank;
    if (sh->off == 0) { /* the piece's first round: rank r's part of [a, b) */
        size_t a = sh->edge[sh->posted + 1], b = sh->edge[sh->posted];
        if (sh->pieces && !next_piece(w->model, a > sh->piece_from ? a : sh->piece_from, b, &a, &b)) a = b;
        sh->piece_from = b;
        sh->covered += b - a;
        sh->most = 0;
        for (int r = 0; r < n; r++) {
            const size_t lo = sh->bounds[r] > a ? sh->bounds[r] : a, hi = sh->bounds[r + 1] < b ? sh->bounds[r + 1] : b;
            sh->from[r] = lo;
            sh->cnt[r] = hi > lo ? hi - lo : 0;
            if (sh->cnt[r] > sh->most) sh->most = sh->cnt[r];
        }
    }
    shard_round_t *rd = &sh->rounds[(sh->head + sh->inflight) % SHARD_DEPTH];
    const size_t off = sh->off, len = sh->cnt[me], ch = sh->chunk;
    rd->nreq = 0;
    rd->c = off < len ? (len - off < ch ? len - off : ch) : 0;
    rd->at = sh->from[me] + off;
    for (int r = 0; r < n && rd->c > 0; r++)
        if (r != me)
            MPI_CHECK(MPI_Irecv(rd->scratch + (size_t)r * ch, (int)rd->c, MPI_FLOAT, r, SHARD_TAG, MPI_COMM_WORLD,
                                &rd->reqs[rd->nreq++]));
    for (int r = 0; r < n; r++) {
        if (r == me || off >= sh->cnt[r]) continue;
        const size_t cr = sh->cnt[r] - off < ch ? sh->cnt[r] - off : ch;
        MPI_CHECK(
            MPI_Isend(g + sh->from[r] + off, (int)cr, MPI_FLOAT, r, SHARD_TAG, MPI_COMM_WORLD, &rd->reqs[rd->nreq++]));
    }
    rd->last_of = -1;
    sh->off += ch;
    if (sh->off >= sh->most) {
        size_t pa, pb;
        sh->off = 0;
        if (!sh->pieces || !next_piece(w->model, sh->piece_from, sh->edge[sh->posted], &pa, &pb)) {
            rd->last_of = sh->posted++;
            sh->piece_from = 0;
        }
    }
    sh->inflight++;
}

/* The oldest round, arrived: the sum of this rank's chunk into its slot of the scratch,
 * then over its part of grads (read as an input first); at a bucket's last round, stage
 * 2's release of the bucket. */
static void finish_round(worker_t *w, shard_t *sh)
{
    shard_round_t *rd = &sh->rounds[sh->head];
    float *g = w->model->grads;
    const int n = sh->n, me = w->rank;
    if (rd->c > 0) {
        const float *in[SPEC_MAX_WORKERS];
        for (int r = 0; r < n; r++) in[r] = r == me ? g + rd->at : rd->scratch + (size_t)r * sh->chunk;
        float *acc = rd->scratch + (size_t)me * sh->chunk;
        sum_in_rank_order(n, in, acc, rd->c);
        memcpy(g + rd->at, acc, rd->c * sizeof *acc);
    }
    if (rd->last_of >= 0) {
        release_bucket(w, sh, rd->last_of);
        sh->reduced = rd->last_of + 1;
    }
    sh->head = (sh->head + 1) % SHARD_DEPTH;
    sh->inflight--;
}

/* Moves the reduce-scatter on: starts the rounds of the finished buckets while slots are
 * free and finishes the oldest round once it arrived, oldest first, until no more than
 * lag finished buckets are left unreduced, waiting for the oldest round while more are
 * (politely on a shared host, comm_wait); then returns at the first round not yet
 * arrived (MPI_Testall also moves the others' transfers on). lag 0: every finished
 * bucket reduced. */
static void pump(worker_t *w, shard_t *sh, int lag)
{
    for (;;) {
        while (sh->inflight < SHARD_DEPTH && sh->posted < sh->ready) start_round(w, sh);
        if (sh->inflight == 0) return;
        shard_round_t *rd = &sh->rounds[sh->head];
        if (sh->ready - sh->reduced > lag) {
            for (int i = 0; i < rd->nreq; i++) comm_wait(w, &rd->reqs[i]);
        } else {
            int done = 0;
            MPI_CHECK(MPI_Testall(rd->nreq, rd->reqs, &done, MPI_STATUSES_IGNORE));
            if (!done) return;
        }
        finish_round(w, sh);
    }
}

/* Bucket k is final: its share of the local gradient's norm (before the sums overwrite
 * this rank's range), then its rounds may start (in one process: stage 2's release). */
static void hand_over(worker_t *w, shard_t *sh, int k)
{
    const size_t a = sh->edge[k + 1], b = sh->edge[k];
    sh->local_sumsq += sum_squares(b - a, w->model->grads + a);
    sh->ready = k + 1;
    if (w->use_mpi && sh->n > 1) return;
    release_bucket(w, sh, k);
    sh->posted = sh->reduced = k + 1;
}

/* model_t's grad_done: the buckets wholly above final_below[layer] handed over, from the
 * top down, and the rounds in flight moved on. */
static void grad_done(void *ctx, int layer)
{
    worker_t *w = ctx;
    shard_t *sh = w->shard;
    const int more = sh->ready < sh->nbuckets && sh->edge[sh->ready + 1] >= sh->final_below[layer];
    if (!more && sh->inflight == 0) return;
    phase_mark(&w->phases, PHASE_COMPUTE); /* the backward so far */
    const double t0 = clock_mono_s();
    while (sh->ready < sh->nbuckets && sh->edge[sh->ready + 1] >= sh->final_below[layer]) hand_over(w, sh, sh->ready);
    /* Stage 1 keeps the whole gradient anyway: the pass never waits. Stage 2 waits for
     * all but the newest SHARD_LAG buckets, so that at most those are resident outside
     * its range besides the one the pass writes. */
    pump(w, sh, sh->stage >= 2 ? SHARD_LAG : sh->nbuckets);
    phase_mark(&w->phases, PHASE_COMM);
    sh->hook_s += clock_mono_s() - t0;
}

void shard_begin_step(worker_t *w)
{
    shard_t *sh = w->shard;
    if (!sh) return;
    sh->ready = sh->posted = sh->reduced = 0;
    sh->off = 0;
    sh->piece_from = 0;
    sh->covered = 0;
    sh->local_sumsq = 0.0;
    sh->hook_s = 0.0;
    w->model->grad_done = grad_done;
    w->model->grad_done_ctx = w;
}

void shard_finish_grad(worker_t *w)
{
    shard_t *sh = w->shard;
    if (!sh) return;
    w->model->grad_done = NULL;
    /* the time inside the backward pass was communication, not compute */
    w->stats.step_compute_s -= sh->hook_s;
    w->stats.compute_s -= sh->hook_s;
    const double t0 = clock_mono_s();
    waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
    while (sh->ready < sh->nbuckets) hand_over(w, sh, sh->ready);
    pump(w, sh, 0);
    waitmark_leave(&w->wait);
    phase_mark(&w->phases, PHASE_COMM);
    sh->hook_s += clock_mono_s() - t0;
}

double shard_reduce(worker_t *w)
{
    shard_t *sh = w->shard;
    model_t *m = w->model;
    const size_t n = sh->hi - sh->lo;
    double t0 = clock_mono_s();
    waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
    /* the extras and the range's squared norm, summed in double (exact for the batch
     * sizes and counts; the loss and the norms lose nothing a float sum keeps) */
    double x[MODEL_GRAD_EXTRA + 1];
    for (int i = 0; i < MODEL_GRAD_EXTRA; i++) x[i] = m->grads[m->nparams + i];
    /* adaptive_pack's b |g_i|^2 from the norms the buckets took before their reduction
     * (the buffer no longer holds this rank's whole gradient) */
    const float b = m->grads[m->nparams];
    x[2] = b > 0 ? (float)(sh->local_sumsq / b) : 0.0f;
    x[MODEL_GRAD_EXTRA] = sum_squares(n, m->grads + sh->lo);
    if (w->use_mpi)
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, x, MODEL_GRAD_EXTRA + 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    waitmark_leave(&w->wait);
    for (int i = 0; i < MODEL_GRAD_EXTRA; i++) m->grads[m->nparams + i] = (float)x[i];
    if (sh->stage >= 2) {
        release_pages(m->grads, m->grads + sh->lo);
        release_pages(m->grads + sh->hi, m->grads + m->nparams);
    }
    phase_mark(&w->phases, PHASE_COMM);
    const double dt = clock_mono_s() - t0 + sh->hook_s;
    w->stats.step_comm_s += dt;
    w->stats.comm_s += dt;
    if (w->use_mpi) { /* the gradient once (the floats the rounds took), as ssgd's all-reduce counts it */
        const size_t sent = sh->n > 1 ? sh->covered : sh->ntrain;
        w->stats.comm_bytes += (double)(sent + MODEL_GRAD_EXTRA) * sizeof(float);
        w->stats.comm_steps++;
    }
    return x[MODEL_GRAD_EXTRA];
}

/* The update of [lo, hi): the rule over each weight-decay run's part inside the range,
 * the summed gradient in place, the state at mom[0]. */
static void update_range(worker_t *w, const shard_t *sh, float grad_scale, double sumsq)
{
    model_t *m = w->model;
    optim_step_t o;
    worker_optim_step(w, grad_scale, &o);
    float gs = o.grad_scale;
    if (o.clip_norm > 0) { /* model_apply_optimizer's clipping, on the global norm */
        float norm = gs * (float)sqrt(sumsq);
        if (norm > o.clip_norm) gs *= o.clip_norm / norm;
    }
    adamw_hparams_t h = o.h;
    int ti = 0, exempt;
    size_t off, cnt;
    while (model_decay_run(m, o.groups, &ti, &off, &cnt, &exempt)) {
        size_t a = off > sh->lo ? off : sh->lo, b = off + cnt < sh->hi ? off + cnt : sh->hi;
        if (a >= b) continue;
        const size_t k = a - sh->lo;
        h.weight_decay = exempt ? 0.0 : o.h.weight_decay;
        if (o.adamw) adamw_update(b - a, m->params + a, m->grads + a, sh->mom + k, sh->mom2 + k, &h, o.step, gs);
        else
            sgd_update(b - a, m->params + a, m->grads + a, sh->mom + k, (float)h.lr, o.momentum, o.nesterov,
                       (float)h.weight_decay, gs);
    }
    phase_mark(&w->phases, PHASE_OPTIMIZER);
}

void shard_update(worker_t *w, float grad_scale, double sumsq)
{
    shard_t *sh = w->shard;
    update_range(w, sh, grad_scale, sumsq);
    if (!w->use_mpi) return;
    double t0 = clock_mono_s();
    waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
    if (sh->packed) {
        model_t *m = w->model;
        copy_trainable(m, sh, w->rank, m->params, 1);
        MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, sh->packed, sh->tcounts, sh->tdispls, MPI_FLOAT,
                                 MPI_COMM_WORLD));
        for (int r = 0; r < sh->n; r++)
            if (r != w->rank) copy_trainable(m, sh, r, m->params, 0);
    } else {
        MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, w->model->params, sh->counts, sh->displs,
                                 MPI_FLOAT, MPI_COMM_WORLD));
    }
    waitmark_leave(&w->wait);
    phase_mark(&w->phases, PHASE_COMM);
    const double dt = clock_mono_s() - t0;
    w->stats.step_comm_s += dt;
    w->stats.comm_s += dt;
}

static void gather_one(worker_t *w, const shard_t *sh, float *full, float *mine)
{
    if (w->rank == 0)
        MPI_CHECK(MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, full, sh->counts, sh->displs, MPI_FLOAT, 0,
                              MPI_COMM_WORLD));
    else
        MPI_CHECK(MPI_Gatherv(mine, (int)(sh->hi - sh->lo), MPI_FLOAT, NULL, NULL, NULL, MPI_FLOAT, 0, MPI_COMM_WORLD));
}

void shard_gather_state(worker_t *w, int at_epoch_end)
{
    shard_t *sh = w->shard;
    const job_spec_t *s = w->spec;
    const long every = s->checkpoint.every_steps;
    if (!sh || every <= 0) return;
    /* in a step, the checkpoint the loop writes after it at every_steps (the epoch end's
     * own gather covers keep_best's and the final one) */
    const long next = at_epoch_end ? w->global_step : w->global_step + 1;
    if (!at_epoch_end && next % every != 0) return;
    if (w->use_mpi) {
        waitmark_enter(&w->wait, WAIT_GATHER, -1);
        gather_one(w, sh, w->model->momentum, sh->mom);
        if (sh->states == 2) gather_one(w, sh, w->model->moment2, sh->mom2);
        waitmark_leave(&w->wait);
        phase_mark(&w->phases, PHASE_COMM);
    }
    sh->gathered_step = next;
}

/* Rank 0 without full-size state buffers (no periodic checkpoints): they are allocated for
 * a notice's checkpoint, the run's last act, and its own range copied in. 0, or -1 when
 * memory runs out (the ranks still take part in the gather: rank 0 then exits naming it). */
static int root_full_state(worker_t *w, shard_t *sh)
{
    model_t *m = w->model;
    const size_t np = (size_t)m->nparams, n = sh->hi - sh->lo;
    if (w->rank != 0 || sh->full_at_root || m->momentum) return 0;
    m->momentum = calloc(np, sizeof(float));
    if (sh->states == 2) m->moment2 = calloc(np, sizeof(float));
    if (!m->momentum || (sh->states == 2 && !m->moment2)) return -1;
    memcpy(m->momentum + sh->lo, sh->mom, n * sizeof(float));
    if (sh->states == 2) memcpy(m->moment2 + sh->lo, sh->mom2, n * sizeof(float));
    return 0;
}

void shard_gather_for_notice(worker_t *w)
{
    shard_t *sh = w->shard;
    if (!sh || sh->gathered_step == w->global_step) return;
    int ok = root_full_state(w, sh) == 0;
    if (w->use_mpi) {
        /* every rank agreed on the notice at this step: every rank is here */
        MPI_CHECK(MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD));
        if (ok) {
            gather_one(w, sh, w->model->momentum, sh->mom);
            if (sh->states == 2) gather_one(w, sh, w->model->moment2, sh->mom2);
        }
    }
    if (!ok) {
        if (w->rank == 0)
            fprintf(stderr,
                    "notice: out of memory for the whole optimizer state (%ld parameters) of the checkpoint; "
                    "the run stops without one\n",
                    (long)w->model->nparams);
        if (w->use_mpi) MPI_Abort(MPI_COMM_WORLD, 1);
        exit(1);
    }
    sh->gathered_step = w->global_step;
}

void shard_before_checkpoint(const worker_t *w)
{
    const shard_t *sh = w->shard;
    if (!sh || sh->n < 2 || w->rank != 0 || sh->gathered_step == w->global_step) return;
    fprintf(stderr,
            "checkpoint at step %ld: the optimizer state of ranks 1 to %d in it is that of step %ld (gathered for "
            "the last planned checkpoint); the weights are this step's\n",
            w->global_step, sh->n - 1, sh->gathered_step);
}

json_t *shard_json(const worker_t *w)
{
    const shard_t *sh = w->shard;
    if (!sh) return NULL;
    const job_spec_t *s = w->spec;
    json_t *split;
    if (sh->fallback || strcmp(s->algorithm.shard.split, "weights") != 0) {
        split = json_string(sh->fallback ? "even" : s->algorithm.shard.split);
    } else {
        split = json_array();
        for (int r = 0; r < sh->n; r++) json_array_append_new(split, json_real(sh->weights[r]));
    }
    json_t *state = json_array(), *grad = json_array(), *share = json_array();
    for (int r = 0; r < sh->n; r++) {
        double a, b;
        rank_bytes(w, sh, r, &a, &b);
        json_array_append_new(state, json_integer((json_int_t)a));
        json_array_append_new(grad, json_integer((json_int_t)b));
        json_array_append_new(share, json_integer((json_int_t)(sh->bounds[r + 1] - sh->bounds[r])));
    }
    /* the floats step 5's all-gather moves in all (the trainable ones with frozen tensors) */
    const double gathered = sh->packed ? (double)sh->ntrain : (double)w->model->nparams;
    return json_pack("{s:i, s:o, s:o, s:o, s:o, s:f}", "stage", sh->stage, "split", split, "params_per_rank", share,
                     "state_bytes_per_rank", state, "gradient_bytes_per_rank", grad, "gathered_floats_per_step",
                     gathered);
}
