/* worker/checkpoint.c - see checkpoint.h. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "errmsg.h"
#include "fs.h"
#include "hash.h"

/* Header fields after magic, version and header_bytes, written field by field (no struct
 * dump) so the format does not depend on the compiler's padding: model name, nparams,
 * nbuffers, spec hash, layout hash, then the state. */
#define HEADER_BYTES_V3 (MODEL_NAME_MAX + 2 * 8 + 2 * 8 + 4 * 8 + 8 + 16 + 8 + 8 + 8 + 4 + 4 * CKPT_MAX_WORKERS)
/* Version 4 appends global_batch, progress, pass, gain, efficiency and the gns_t state;
 * version 5 each worker's dropout step. */
#define HEADER_BYTES_V4 (HEADER_BYTES_V3 + 4 + 8 * 8)
#define HEADER_BYTES_V5 (HEADER_BYTES_V4 + 8 * CKPT_MAX_WORKERS)
/* Version 6 appends PowerSGD's counts (compress_q_floats, compress_err_floats, compress_ranks);
 * version 7 the optimizer's step and the second moment's floats (opt_step, moment2_floats);
 * version 8 compression's measured choice (compress_verdict, compress_probe). */
#define HEADER_BYTES_V6 (HEADER_BYTES_V5 + 8 + 8 + 4)
#define HEADER_BYTES_V7 (HEADER_BYTES_V6 + 8 + 8)
#define HEADER_BYTES (HEADER_BYTES_V7 + 4 + 8 * CKPT_PROBE_N)
/* The floats after the buffers that a header's compression counts announce. */
static uint64_t compress_floats(uint64_t q, uint64_t e, int64_t ranks) { return q + e * (uint64_t)ranks; }
#define PREFIX_BYTES 16 /* magic, version, header_bytes */
_Static_assert(HEADER_BYTES_V3 == MODEL_NAME_MAX + 12 * 8 + 16 + 4 + 4 * CKPT_MAX_WORKERS, "header size");
#define CKPT_READ_FLOOR ((size_t)64 << 20)

typedef struct {
    unsigned char *p;
    size_t len, cap;
} wbuf_t;

static void put(wbuf_t *b, const void *src, size_t n)
{
    if (n == 0) return; /* a model without buffers may have none allocated (NULL) */
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

/* FNV-1a of the model's name, counts and every tensor's name, offset, size and kind:
 * two models with the same counts but another arrangement differ. */
static uint64_t checkpoint_layout_hash(const model_t *m)
{
    uint64_t h = HASH_FNV1A_INIT, v[3];
    h = hash_fnv1a(h, m->name, strnlen(m->name, sizeof m->name) + 1);
    v[0] = m->nparams, v[1] = m->nbuffers, v[2] = (uint64_t)m->ntensors;
    h = hash_fnv1a(h, v, sizeof v);
    for (int t = 0; t < m->ntensors && t < MODEL_MAX_TENSORS; t++) {
        const tensor_info_t *ti = &m->tensors[t];
        h = hash_fnv1a(h, ti->name, strnlen(ti->name, sizeof ti->name) + 1);
        v[0] = ti->offset, v[1] = ti->count, v[2] = (uint64_t)ti->is_buffer;
        h = hash_fnv1a(h, v, sizeof v);
    }
    return h;
}

int checkpoint_save(const char *path, const model_t *m, const ckpt_state_t *st, char *err, size_t errlen)
{
    int rc = -1;
    char dir[1024];
    const uint64_t cq = st->compress_q ? st->compress_q_floats : 0;
    const int32_t cr = cq && st->compress_err ? st->compress_ranks : 0;
    const uint64_t ce = cq ? st->compress_err_floats : 0;
    const uint64_t m2 = m->moment2 ? m->nparams : 0;
    size_t bytes = PREFIX_BYTES + HEADER_BYTES +
                   (2 * m->nparams + m->nbuffers + compress_floats(cq, ce, cr) + m2) * sizeof(float);
    wbuf_t b = {.p = malloc(bytes + 4), .cap = bytes + 4};
    if (!b.p) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }

    snprintf(dir, sizeof dir, "%s", path);
    char *d = dirname(dir);
    if (fs_mkdir_p(d, 0755) != 0) {
        snprintf(err, errlen, "%s: cannot create directory %s: %s", path, d, strerror(errno));
        goto out;
    }

    uint32_t version = CKPT_VERSION, hdr = HEADER_BYTES;
    put(&b, CKPT_MAGIC, 8);
    put(&b, &version, 4);
    put(&b, &hdr, 4);
    char name[MODEL_NAME_MAX] = {0};
    snprintf(name, sizeof name, "%s", m->name);
    put(&b, name, sizeof name);
    uint64_t np = m->nparams, nb = m->nbuffers, layout = checkpoint_layout_hash(m);
    put(&b, &np, 8);
    put(&b, &nb, 8);
    put(&b, &st->spec_hash, 8);
    put(&b, &layout, 8);
    put(&b, &st->global_step, 8);
    put(&b, &st->epoch, 8);
    put(&b, &st->step_in_epoch, 8);
    put(&b, &st->cursor, 8);
    put(&b, &st->seed, 8);
    put(&b, st->aug_rng.s, 16);
    put(&b, &st->epoch_loss_sum, 8);
    put(&b, &st->epoch_loss_samples, 8);
    put(&b, &st->ps_version, 8);
    put(&b, &st->nworkers, 4);
    put(&b, st->batch_of, 4 * CKPT_MAX_WORKERS);
    put(&b, &st->global_batch, 4);
    put(&b, &st->progress, 8);
    put(&b, &st->pass, 8);
    put(&b, &st->gain, 8);
    put(&b, &st->efficiency, 8);
    put(&b, &st->gns_g2, 8);
    put(&b, &st->gns_trace, 8);
    put(&b, &st->gns_weight, 8);
    put(&b, &st->gns_samples, 8);
    put(&b, st->dropout_step, 8 * CKPT_MAX_WORKERS);
    put(&b, &cq, 8);
    put(&b, &ce, 8);
    put(&b, &cr, 4);
    put(&b, &st->opt_step, 8);
    put(&b, &m2, 8);
    put(&b, &st->compress_verdict, 4);
    put(&b, st->compress_probe, 8 * CKPT_PROBE_N);
    put(&b, m->params, m->nparams * sizeof(float));
    put(&b, m->momentum, m->nparams * sizeof(float));
    put(&b, m->buffers, m->nbuffers * sizeof(float));
    if (cq) put(&b, st->compress_q, cq * sizeof(float));
    if (cr) put(&b, st->compress_err, ce * (uint64_t)cr * sizeof(float));
    if (m2) put(&b, m->moment2, m2 * sizeof(float));
    uint32_t crc = (uint32_t)crc32(0L, b.p, (uInt)b.len);
    put(&b, &crc, 4);

    /* Durable (the data, the rename, the directory): a checkpoint survives a power cut. */
    if (fs_atomic_write(path, b.p, b.len, 0644) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    free(b.p);
    return rc;
}

/* The header after the prefix, in file order (checkpoint_save writes it in this order;
 * test_hardening checks the two agree). */
static const struct {
    const char *name;
    size_t size, elem; /* elem: an array's element size (name[i]), else 0 */
} HEADER_FIELDS[] = {
    {"model", MODEL_NAME_MAX, 0},
    {"nparams", 8, 0},
    {"nbuffers", 8, 0},
    {"spec_hash", 8, 0},
    {"layout_hash", 8, 0},
    {"global_step", 8, 0},
    {"epoch", 8, 0},
    {"step_in_epoch", 8, 0},
    {"cursor", 8, 0},
    {"seed", 8, 0},
    {"aug_rng", 16, 0},
    {"epoch_loss_sum", 8, 0},
    {"epoch_loss_samples", 8, 0},
    {"ps_version", 8, 0},
    {"nworkers", 4, 0},
    {"batch_of", 4 * CKPT_MAX_WORKERS, 4},
    {"global_batch", 4, 0},
    {"progress", 8, 0},
    {"pass", 8, 0},
    {"gain", 8, 0},
    {"efficiency", 8, 0},
    {"gns_g2", 8, 0},
    {"gns_trace", 8, 0},
    {"gns_weight", 8, 0},
    {"gns_samples", 8, 0},
    {"dropout_step", 8 * CKPT_MAX_WORKERS, 8},
    {"compress_q_floats", 8, 0},
    {"compress_err_floats", 8, 0},
    {"compress_ranks", 4, 0},
    {"opt_step", 8, 0},
    {"moment2_floats", 8, 0},
    {"compress_verdict", 4, 0},
    {"compress_probe", 8 * CKPT_PROBE_N, 8},
};

int checkpoint_field_at(const char *field, size_t *off, size_t *size)
{
    if (strcmp(field, "version") == 0) return *off = 8, *size = 4, 0;
    if (strcmp(field, "header_bytes") == 0) return *off = 12, *size = 4, 0;
    size_t o = PREFIX_BYTES;
    for (size_t i = 0; i < sizeof HEADER_FIELDS / sizeof HEADER_FIELDS[0]; i++) {
        size_t n = strlen(HEADER_FIELDS[i].name);
        if (strncmp(field, HEADER_FIELDS[i].name, n) == 0) {
            if (field[n] == 0) return *off = o, *size = HEADER_FIELDS[i].size, 0;
            /* batch_of[i], dropout_step[i] */
            unsigned k;
            char close = 0;
            const size_t e = HEADER_FIELDS[i].elem;
            if (e && sscanf(field + n, "[%u%c", &k, &close) == 2 && close == ']' && k < CKPT_MAX_WORKERS)
                return *off = o + e * (size_t)k, *size = e, 0;
        }
        o += HEADER_FIELDS[i].size;
    }
    return -1;
}

void checkpoint_fix_crc(unsigned char *buf, size_t len)
{
    if (len < 4) return;
    uint32_t crc = (uint32_t)crc32(0L, buf, (uInt)(len - 4));
    memcpy(buf + len - 4, &crc, 4);
}

int checkpoint_data_at(const unsigned char *buf, size_t len, const char *name, size_t *off)
{
    uint32_t version, hdr;
    uint64_t np, nb, cq, ce, m2;
    int32_t cr;
    if (len < PREFIX_BYTES + HEADER_BYTES + 4) return -1;
    memcpy(&version, buf + 8, 4);
    memcpy(&hdr, buf + 12, 4);
    if (version != CKPT_VERSION || hdr != HEADER_BYTES) return -1;
    memcpy(&np, buf + PREFIX_BYTES + MODEL_NAME_MAX, 8);
    memcpy(&nb, buf + PREFIX_BYTES + MODEL_NAME_MAX + 8, 8);
    memcpy(&cq, buf + PREFIX_BYTES + HEADER_BYTES_V6 - 20, 8);
    memcpy(&ce, buf + PREFIX_BYTES + HEADER_BYTES_V6 - 12, 8);
    memcpy(&cr, buf + PREFIX_BYTES + HEADER_BYTES_V6 - 4, 4);
    memcpy(&m2, buf + PREFIX_BYTES + HEADER_BYTES_V6 + 8, 8);
    if (np > ((uint64_t)1 << 40) || nb > ((uint64_t)1 << 40) || cq > ((uint64_t)1 << 40) || ce > ((uint64_t)1 << 40) ||
        cr < 0 || cr > CKPT_MAX_WORKERS || m2 > np)
        return -1;
    /* the arrays in file order, each with its count */
    const struct {
        const char *name;
        uint64_t n;
    } A[] = {{"params", np}, {"momentum", np}, {"buffers", nb}, {"compress_q", cq}, {"compress_err", ce * (uint64_t)cr},
             {"moment2", m2}};
    uint64_t at = PREFIX_BYTES + HEADER_BYTES;
    for (size_t k = 0; k < sizeof A / sizeof A[0]; k++) {
        const size_t w = strlen(A[k].name);
        unsigned long long i;
        char close = 0;
        if (strncmp(name, A[k].name, w) == 0 && sscanf(name + w, "[%llu%c", &i, &close) == 2 && close == ']' &&
            i < A[k].n && at + (i + 1) * sizeof(float) + 4 <= len)
            return *off = (size_t)(at + i * sizeof(float)), 0;
        at += A[k].n * sizeof(float);
    }
    return -1;
}

/* ---- reading: every field is checked before it is used --------------------------------- */

typedef struct {
    const unsigned char *p;
    size_t off;
} rbuf_t;
/* Only called once the file's length has been checked against the header's counts. */
static void get(rbuf_t *r, void *dst, size_t n)
{
    if (n == 0) return;
    memcpy(dst, r->p + r->off, n);
    r->off += n;
}

/* A name read from the file, for a message: bytes other than [A-Za-z0-9_-] become '?'
 * (error lines never carry raw bytes from a file). */
static void printable_name(char *out, size_t len, const char *in)
{
    size_t i = 0;
    for (; i + 1 < len && in[i]; i++) {
        unsigned char c = (unsigned char)in[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        out[i] = ok ? (char)c : '?';
    }
    out[i] = 0;
}

__attribute__((format(printf, 4, 5))) static int refuse(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    errmsg_v(what, sizeof what, -1, fmt, ap);
    va_end(ap);
    return errmsg(err, errlen, "%s: %s", path, what);
}

/* The class count a checkpoint of m's built-in network was written for when only its head
 * differs (another data set's classes: each class is head_in + 1 parameters), else 0. */
static long long other_classes(const model_t *m, const char *name, uint64_t np, uint64_t nb)
{
    catalog_model_t e;
    if (strcmp(name, m->name) != 0 || nb != m->nbuffers || np == m->nparams || catalog_model_get(m->name, &e) != 0 ||
        e.head_in <= 0)
        return 0;
    const long long per = (long long)e.head_in + 1, diff = (long long)np - (long long)m->nparams;
    const long long k = m->num_classes + diff / per;
    return diff % per == 0 && k >= 1 && k <= CATALOG_CLASSES_MAX ? k : 0;
}

/* field in [lo, hi], or a refusal that names it and says why the bound is what it is. */
#define IN_RANGE(field, lo, hi, why)                                                                                \
    do {                                                                                                            \
        long long v_ = (long long)st->field, lo_ = (long long)(lo), hi_ = (long long)(hi);                          \
        if (v_ < lo_ || v_ > hi_)                                                                                   \
            return refuse(err, errlen, path, "checkpoint field %s = %lld is outside [%lld, %lld] (%s)", #field, v_, \
                          lo_, hi_, why);                                                                           \
    } while (0)

/* The goodput planner's progress (steps at B0: each step adds a gain in [1, max_global /
 * B0]), its gain and efficiency. */
static int refuse_progress(const ckpt_state_t *st, const ckpt_expect_t *want, const char *path, char *err, size_t errlen)
{
    const double most = (double)want->max_global / want->global_batch, spe = (double)want->steps_per_epoch;
    if (!(st->gain >= 1 && st->gain <= most * (1 + 1e-9)))
        return refuse(err, errlen, path, "checkpoint field gain = %g is outside [1, %g] (max_global_batch / B0)",
                      st->gain, most);
    if (!(st->efficiency > 0 && st->efficiency <= 1 + 1e-9))
        return refuse(err, errlen, path, "checkpoint field efficiency = %g is outside (0, 1]", st->efficiency);
    double lo = (double)st->epoch * spe - 1e-6, hi = ((double)st->epoch + 1) * spe + most;
    if (!(st->progress >= lo && st->progress <= hi && st->progress >= (double)st->global_step - 1e-6 &&
          st->progress <= (double)st->global_step * most + 1e-6))
        return refuse(err, errlen, path,
                      "checkpoint field progress = %g does not fit epoch %lld and global_step %lld (each step adds "
                      "1 to %g)",
                      st->progress, (long long)st->epoch, (long long)st->global_step, most);
    return 0;
}

int checkpoint_validate(const ckpt_state_t *st, const ckpt_expect_t *want, const char *path, char *err, size_t errlen)
{
    if (!want->any_spec && st->spec_hash != want->spec_hash)
        return refuse(
            err, errlen, path,
            "checkpoint was written for another job spec (spec hash %016" PRIx64 ", this spec %016" PRIx64
            "): only name, dataset.path, device, precision, threads, log_every and checkpoint.* may change on resume",
            st->spec_hash, want->spec_hash);
    if (st->seed != want->seed)
        return refuse(err, errlen, path, "checkpoint was written with seed %" PRIu64 ", spec has %" PRIu64, st->seed,
                      want->seed);
    /* Any world the spec allows: an elastic restart resumes on fewer (or again more)
     * workers; 0 for spec_workers means a caller that knows only its own count. */
    int32_t most = want->spec_workers > 0 ? want->spec_workers : want->nworkers;
    IN_RANGE(nworkers, 1, most, "1 to the spec's max_workers");
    /* A batch of another world's plan may exceed this run's buffers: it is re-planned. */
    const int32_t cap = st->nworkers == want->nworkers ? want->max_batch
                        : want->goodput                ? want->max_global
                                                       : want->global_batch;
    IN_RANGE(epoch, 0, want->epochs, "the spec's epochs");
    const int64_t n = want->train_n;
    if (want->goodput) {
        IN_RANGE(global_batch, want->global_batch, want->max_global, "workers x batch_size to max_global_batch");
    } else {
        IN_RANGE(global_batch, want->global_batch, want->global_batch, "workers x batch_size");
    }
    const int64_t gb = st->global_batch;
    if (want->goodput && (refuse_progress(st, want, path, err, errlen) != 0)) return -1;
    if (!want->goodput && !want->async) {
        const int64_t spe = want->steps_per_epoch;
        /* A finished run has moved on to epoch == epochs with nothing done in it. */
        IN_RANGE(step_in_epoch, 0, st->epoch == want->epochs ? 0 : spe, "steps per epoch");
        /* Every step consumes one global batch of the epoch order. */
        IN_RANGE(cursor, st->step_in_epoch * gb, st->step_in_epoch * gb, "step_in_epoch x global batch");
        /* A time budget or a target accuracy ends an epoch early, so fewer is possible. */
        IN_RANGE(global_step, st->step_in_epoch, st->epoch * spe + st->step_in_epoch,
                 "the steps of the epochs before it");
        IN_RANGE(epoch_loss_samples, 0, st->step_in_epoch * gb, "samples of the epoch's steps");
    } else if (want->goodput) {
        /* The goodput planner's steps take between B0 and max_global samples and may start
         * further passes over the epoch order; each is worth at least one step at B0, so
         * an epoch still has at most steps_per_epoch of them. */
        const int64_t spe = want->steps_per_epoch;
        IN_RANGE(step_in_epoch, 0, st->epoch == want->epochs ? 0 : spe, "steps per epoch");
        IN_RANGE(cursor, 0, n, "training samples");
        IN_RANGE(global_step, st->step_in_epoch, st->epoch * spe + st->step_in_epoch,
                 "the steps of the epochs before it");
        IN_RANGE(epoch_loss_samples, 0, st->step_in_epoch * (int64_t)want->max_global, "samples of the epoch's steps");
        IN_RANGE(pass, 0, st->step_in_epoch, "one step per pass at least");
    } else {
        /* Parameter server: the cursor hands out ranges of the epoch order, every update
         * takes at least one pushed sample, and pushes of ranges handed out before the
         * epoch ended (one per worker) may still count. */
        IN_RANGE(cursor, 0, n, "training samples");
        IN_RANGE(global_step, 0, (st->epoch + 1) * n, "one sample per update at least");
        IN_RANGE(epoch_loss_samples, 0,
                 n + (int64_t)(st->nworkers > want->nworkers ? st->nworkers : want->nworkers) *
                         (want->max_batch > want->global_batch ? want->max_batch : want->global_batch),
                 "samples handed out in the epoch");
        /* step_in_epoch: the updates applied in this epoch, each from one pushed sample at
         * least (and part of global_step). */
        IN_RANGE(step_in_epoch, 0, st->epoch_loss_samples < st->global_step ? st->epoch_loss_samples : st->global_step,
                 "one pushed sample per update at least, and within global_step");
    }
    IN_RANGE(ps_version, 0, st->global_step, "updates so far");
    if (st->epoch_loss_sum < 0) /* NaN passes: a diverged run checkpoints one */
        return refuse(err, errlen, path, "checkpoint field epoch_loss_sum = %g is negative", st->epoch_loss_sum);
    if (st->aug_rng.s[0] == 0 && st->aug_rng.s[1] == 0)
        return refuse(err, errlen, path, "checkpoint field aug_rng is all zero (not a generator state)");
    if (!want->goodput && st->pass != 0)
        return refuse(err, errlen, path, "checkpoint field pass = %lld without algorithm.goodput, want 0",
                      (long long)st->pass);
    if (!(isfinite(st->gns_g2) && isfinite(st->gns_trace) && st->gns_weight >= 0 && st->gns_weight <= 1 &&
          st->gns_samples >= 0))
        return refuse(err, errlen, path, "checkpoint fields gns_* are not a noise-scale estimate");
    /* Each training forward takes one sample at least, and each epoch is one pass over
     * the training set (the goodput planner's further passes are steps of the epoch,
     * each of one forward per worker at most; steps are within train_n). */
    const uint64_t most_forwards = (uint64_t)(st->epoch + 1) * (uint64_t)(n > 0 ? n : 1);
    for (int i = 0; i < CKPT_MAX_WORKERS; i++) {
        uint64_t d = st->dropout_step[i];
        if (i >= st->nworkers && d != 0)
            return refuse(err, errlen, path,
                          "checkpoint field dropout_step[%d] = %" PRIu64 " past nworkers (%d), want 0", i, d,
                          (int)st->nworkers);
        if (d > most_forwards)
            return refuse(err, errlen, path,
                          "checkpoint field dropout_step[%d] = %" PRIu64 " is outside [0, %" PRIu64
                          "] (one training sample per forward at least)",
                          i, d, most_forwards);
    }
    int64_t sum = 0;
    const int32_t lo = want->min_batch > 1 ? want->min_batch : 1;
    for (int i = 0; i < CKPT_MAX_WORKERS; i++) {
        int32_t b = st->batch_of[i];
        if (i >= st->nworkers) {
            if (b != 0)
                return refuse(err, errlen, path, "checkpoint field batch_of[%d] = %d past nworkers (%d), want 0", i,
                              (int)b, (int)st->nworkers);
            continue;
        }
        if (want->goodput && b == 0 && i > 0) continue; /* a worker the goodput planner left out */
        if (b < lo || b > cap)
            return refuse(err, errlen, path,
                          "checkpoint field batch_of[%d] = %d is outside [%d, %d] (algorithm.min_batch and %s)", i,
                          (int)b, (int)lo, (int)cap,
                          cap == want->max_batch ? "the batch buffers' capacity" : "the global batch");
        sum += b;
    }
    if (sum != gb)
        return refuse(err, errlen, path, "checkpoint field batch_of sums to %" PRId64 ", want %" PRId64 " (%s)", sum,
                      gb, want->goodput ? "the checkpoint's global_batch" : "workers x batch_size");
    return 0;
}

/* Version 6 to 8's fields at the header's end, read (and bounded) first: the compression
 * counts and the second moment's size the file. All 0 in a file without them. */
typedef struct {
    uint64_t cq, ce, m2; /* PowerSGD's Q and per-rank error floats; the second moment's */
    int32_t cr;          /* ranks whose errors the file holds */
    int64_t opt_step;
    int32_t verdict;
    double probe[CKPT_PROBE_N];
} tail_t;

static int read_tail(const unsigned char *buf, uint32_t version, uint64_t np, const char *path, tail_t *t, char *err,
                     size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (version >= 6) {
        size_t at = PREFIX_BYTES + HEADER_BYTES_V6 - 20;
        memcpy(&t->cq, buf + at, 8);
        memcpy(&t->ce, buf + at + 8, 8);
        memcpy(&t->cr, buf + at + 16, 4);
        if (t->cq > ((uint64_t)1 << 40) || t->ce > ((uint64_t)1 << 40) || t->cr < 0 || t->cr > CKPT_MAX_WORKERS ||
            (t->cq == 0 && (t->ce != 0 || t->cr != 0)))
            return refuse(err, errlen, path,
                          "checkpoint fields compress_q_floats = %" PRIu64 ", compress_err_floats = %" PRIu64
                          ", compress_ranks = %d are not a PowerSGD state (each at most 2^40 floats, ranks in [0, "
                          "%d])",
                          t->cq, t->ce, (int)t->cr, CKPT_MAX_WORKERS);
    }
    /* Version 7's optimizer fields follow; the second moment is all the parameters or none. */
    if (version >= 7) {
        memcpy(&t->opt_step, buf + PREFIX_BYTES + HEADER_BYTES_V6, 8);
        memcpy(&t->m2, buf + PREFIX_BYTES + HEADER_BYTES_V6 + 8, 8);
        if (t->m2 != 0 && t->m2 != np)
            return refuse(err, errlen, path,
                          "checkpoint field moment2_floats = %" PRIu64 ", want 0 or nparams (%" PRIu64 ")", t->m2, np);
        if (t->opt_step < 0 || (t->m2 == 0 && t->opt_step != 0))
            return refuse(err, errlen, path, "checkpoint field opt_step = %" PRId64 " is not an AdamW step count (%s)",
                          t->opt_step, t->m2 ? ">= 0" : "0 without a second moment");
    }
    /* Version 8's measured choice: a verdict of three, sums of seconds and counts. */
    if (version >= 8) {
        memcpy(&t->verdict, buf + PREFIX_BYTES + HEADER_BYTES_V7, 4);
        memcpy(t->probe, buf + PREFIX_BYTES + HEADER_BYTES_V7 + 4, sizeof t->probe);
        if (t->verdict < 0 || t->verdict > 2)
            return refuse(err, errlen, path,
                          "checkpoint field compress_verdict = %d is not a verdict (0 undecided, 1 compress, 2 "
                          "plain)",
                          (int)t->verdict);
        for (int i = 0; i < CKPT_PROBE_N; i++)
            if (!(t->probe[i] >= 0 && t->probe[i] <= 1e12))
                return refuse(err, errlen, path,
                              "checkpoint field compress_probe[%d] = %g is not a sum of seconds or steps (want 0 "
                              "to 1e12)",
                              i, t->probe[i]);
    }
    return 0;
}

/* The state after the layout hash, in file order: the fields version has (read after the
 * length and CRC are checked), the rest as a file of that version meant them. */
static void read_state(rbuf_t *r, uint32_t version, const ckpt_expect_t *want, const tail_t *t, ckpt_state_t *s)
{
    get(r, &s->global_step, 8);
    get(r, &s->epoch, 8);
    get(r, &s->step_in_epoch, 8);
    get(r, &s->cursor, 8);
    get(r, &s->seed, 8);
    get(r, s->aug_rng.s, 16);
    get(r, &s->epoch_loss_sum, 8);
    get(r, &s->epoch_loss_samples, 8);
    get(r, &s->ps_version, 8);
    get(r, &s->nworkers, 4);
    get(r, s->batch_of, 4 * CKPT_MAX_WORKERS);
    s->gain = s->efficiency = 1.0;
    if (version >= 4) {
        get(r, &s->global_batch, 4);
        get(r, &s->progress, 8);
        get(r, &s->pass, 8);
        get(r, &s->gain, 8);
        get(r, &s->efficiency, 8);
        get(r, &s->gns_g2, 8);
        get(r, &s->gns_trace, 8);
        get(r, &s->gns_weight, 8);
        get(r, &s->gns_samples, 8);
    } else if (want) {
        s->global_batch = want->global_batch; /* version 3: no goodput planner then */
    }
    if (version >= 5) get(r, s->dropout_step, 8 * CKPT_MAX_WORKERS);
    else
        for (int i = 0; i < s->nworkers && i < CKPT_MAX_WORKERS; i++) s->dropout_step[i] = (uint64_t)s->global_step;
    if (version >= 6) r->off += 20;                  /* the compression counts: read_tail's */
    if (version >= 7) r->off += 16;                  /* the optimizer's fields */
    if (version >= 8) r->off += 4 + sizeof t->probe; /* the measured choice */
    s->compress_q_floats = t->cq, s->compress_err_floats = t->ce, s->compress_ranks = t->cr;
    s->compress_verdict = t->verdict;
    memcpy(s->compress_probe, t->probe, sizeof t->probe);
    s->opt_step = t->opt_step, s->moment2_floats = t->m2;
}

/* One float array of the file a resume restores, and what each element must be: finite,
 * and where set >= 0 or of magnitude at most bound. */
typedef struct {
    const char *what;
    size_t off, n; /* bytes into the file; floats */
    int of_params; /* element i is parameter i (the message names its tensor) */
    int rank;      /* >= 0: a rank's PowerSGD error (the message names the rank) */
    int nonneg;
    double bound;    /* 0: none */
    const char *why; /* what the rule stands for, for the message */
} region_t;

static int check_region(const unsigned char *buf, const region_t *g, const model_t *m, const char *path, char *err,
                        size_t errlen)
{
    for (size_t i = 0; i < g->n; i++) {
        float x;
        memcpy(&x, buf + g->off + i * sizeof x, sizeof x);
        if (isfinite(x) && !(g->nonneg && x < 0.0f) && !(g->bound > 0 && fabs((double)x) > g->bound)) continue;
        const tensor_info_t *t = g->of_params ? model_tensor_at(m, i, 0) : NULL;
        char where[200] = "", rank[32] = "";
        if (t) snprintf(where, sizeof where, " (%s[%zu])", t->name, i - t->offset);
        if (g->rank >= 0) snprintf(rank, sizeof rank, " of rank %d", g->rank);
        return refuse(err, errlen, path, "checkpoint's %s%s: element %zu%s is %g, want %s", g->what, rank, i, where,
                      (double)x, g->why);
    }
    return 0;
}

/* Every float array a resume restores (after the header's checks, before anything is
 * restored): parameters finite, momentum (AdamW's first moment) finite and bounded, the
 * second moment finite, >= 0 and bounded, PowerSGD's Q and every rank's error finite and
 * bounded (checkpoint.h, CKPT_STATE_BOUND, CKPT_MOMENT2_BOUND). data: the parameters'
 * offset. */
static int check_restored(const unsigned char *buf, size_t data, const model_t *m, const tail_t *t, const char *path,
                          char *err, size_t errlen)
{
    char why_err[160], why_q[160], why_m[160], why_m2[160];
    snprintf(why_err, sizeof why_err, "finite, of magnitude at most %g (gradient not yet sent)", CKPT_STATE_BOUND);
    snprintf(why_q, sizeof why_q, "finite, of magnitude at most %g", CKPT_Q_BOUND);
    snprintf(why_m, sizeof why_m, "finite, of magnitude at most %g (a running sum of gradients)", CKPT_STATE_BOUND);
    snprintf(why_m2, sizeof why_m2, "finite, >= 0 and at most %g (a mean of squared gradients)", CKPT_MOMENT2_BOUND);
    const size_t np = m->nparams, f = sizeof(float);
    const size_t comp = data + (2 * np + m->nbuffers) * f, m2 = comp + compress_floats(t->cq, t->ce, t->cr) * f;
    region_t g[3 + CKPT_MAX_WORKERS] = {
        {"parameters", data, np, 1, -1, 0, 0, "finite"},
        {m->moment2 ? "AdamW first moment" : "momentum", data + np * f, np, 1, -1, 0, CKPT_STATE_BOUND, why_m},
        {"AdamW second moment", m2, m->moment2 ? t->m2 : 0, 1, -1, 1, CKPT_MOMENT2_BOUND, why_m2},
        {"PowerSGD Q", comp, t->cq, 0, -1, 0, CKPT_Q_BOUND, why_q},
    };
    int ng = 4;
    for (int r = 0; r < t->cr; r++)
        g[ng++] = (region_t){"PowerSGD error feedback",
                             comp + (t->cq + t->ce * (uint64_t)r) * f,
                             t->ce,
                             0,
                             r,
                             0,
                             CKPT_STATE_BOUND,
                             why_err};
    for (int i = 0; i < ng; i++)
        if (check_region(buf, &g[i], m, path, err, errlen) != 0) return -1;
    return 0;
}

/* The float arrays after the header into m (and want's PowerSGD buffers), once every check
 * passed: the buffers are checked first on a copy (model_check_buffers), so that a refusal
 * leaves m as it was. r is at the parameters. */
static int restore(rbuf_t *r, model_t *m, const ckpt_expect_t *want, const tail_t *t, const char *path, char *err,
                   size_t errlen)
{
    if (want && check_restored(r->p, r->off, m, t, path, err, errlen) != 0) return -1;
    const size_t f = sizeof(float), at_buffers = r->off + 2 * m->nparams * f;
    float *b = malloc((m->nbuffers ? m->nbuffers : 1) * f);
    if (!b) return refuse(err, errlen, path, "out of memory for the checkpoint's %zu buffers", m->nbuffers);
    memcpy(b, r->p + at_buffers, m->nbuffers * f);
    char why[256];
    const int bad = model_check_buffers(m, b, why, sizeof why);
    free(b);
    if (bad) return refuse(err, errlen, path, "checkpoint's %s", why);
    get(r, m->params, m->nparams * f);
    if (m->momentum) get(r, m->momentum, m->nparams * f);
    else r->off += m->nparams * f; /* a model without optimizer state (model_drop_optimizer_state) */
    get(r, m->buffers, m->nbuffers * f);
    /* Q always (any world: it is every rank's); this worker's error only when the file has
     * every rank's of a world of this size (an elastic restart drops them: the caller
     * says so). */
    if (want && t->cq && want->compress_q) {
        memcpy(want->compress_q, r->p + r->off, t->cq * f);
        int idx = want->compress_index;
        if (want->compress_err && t->cr == want->nworkers && idx >= 0 && idx < t->cr)
            memcpy(want->compress_err, r->p + r->off + (t->cq + t->ce * (uint64_t)idx) * f, t->ce * f);
    }
    if (t->m2 && m->moment2) memcpy(m->moment2, r->p + r->off + compress_floats(t->cq, t->ce, t->cr) * f, t->m2 * f);
    return 0;
}

/* Magic, version and header size; the header's size for version, or 0 with err set. */
static uint32_t check_prefix(const unsigned char *buf, size_t len, const char *path, uint32_t *version, char *err,
                             size_t errlen)
{
    uint32_t hdr;
    if (len < PREFIX_BYTES + 4) return refuse(err, errlen, path, "not a pacer checkpoint (only %zu bytes)", len), 0;
    if (memcmp(buf, CKPT_MAGIC, 8) != 0) return refuse(err, errlen, path, "not a pacer checkpoint (bad magic)"), 0;
    memcpy(version, buf + 8, 4);
    memcpy(&hdr, buf + 12, 4);
    if (*version < 3)
        return refuse(err, errlen, path,
                      "checkpoint format version %u is from an older pacer-worker, %s; this one reads versions 3 to "
                      "%u only: start the job afresh, or resume it with the pacer-worker that wrote it",
                      *version,
                      *version <= 1 ? "which did not record the job spec and model layout"
                                    : "which kept model names in 32 bytes (now 64, and tensor names 128)",
                      CKPT_VERSION),
               0;
    if (*version > CKPT_VERSION)
        return refuse(err, errlen, path, "unsupported checkpoint version %u (this build reads 3 to %u)", *version,
                      CKPT_VERSION),
               0;
    const uint32_t header = *version == 3   ? HEADER_BYTES_V3
                            : *version == 4 ? HEADER_BYTES_V4
                            : *version == 5 ? HEADER_BYTES_V5
                            : *version == 6 ? HEADER_BYTES_V6
                            : *version == 7 ? HEADER_BYTES_V7
                                            : HEADER_BYTES;
    if (hdr != header)
        return refuse(err, errlen, path, "checkpoint field header_bytes = %u, version %u has %u", hdr, *version,
                      (unsigned)header),
               0;
    if (len < PREFIX_BYTES + (size_t)header + 4)
        return refuse(err, errlen, path, "truncated checkpoint (%zu bytes)", len), 0;
    return header;
}

int checkpoint_parse(const unsigned char *buf, size_t len, const char *path, model_t *m, const ckpt_expect_t *want,
                     ckpt_state_t *st, char *err, size_t errlen)
{
    uint32_t version;
    const uint32_t header = check_prefix(buf, len, path, &version, err, errlen);
    if (!header) return -1;
    rbuf_t r = {.p = buf, .off = PREFIX_BYTES};
    char name[MODEL_NAME_MAX];
    uint64_t np, nb, layout;
    ckpt_state_t s;
    memset(&s, 0, sizeof s);
    get(&r, name, sizeof name);
    name[MODEL_NAME_MAX - 1] = 0;
    get(&r, &np, 8);
    get(&r, &nb, 8);
    tail_t t;
    if (read_tail(buf, version, np, path, &t, err, errlen) != 0) return -1;
    if (np > ((uint64_t)1 << 40) || nb > ((uint64_t)1 << 40) ||
        len != PREFIX_BYTES + (size_t)header +
                   (2 * np + nb + compress_floats(t.cq, t.ce, t.cr) + t.m2) * sizeof(float) + 4)
        return refuse(err, errlen, path,
                      "truncated or oversized checkpoint (%zu bytes, header says %" PRIu64 " parameters, %" PRIu64
                      " buffers, %" PRIu64 " floats of compression state and %" PRIu64 " of second moment)",
                      len, np, nb, compress_floats(t.cq, t.ce, t.cr), t.m2);
    uint32_t crc_file, crc = (uint32_t)crc32(0L, buf, (uInt)(len - 4));
    memcpy(&crc_file, buf + len - 4, 4);
    if (crc != crc_file)
        return refuse(err, errlen, path, "checkpoint is corrupt (CRC32 %08x, stored %08x)", crc, crc_file);
    char shown[MODEL_NAME_MAX];
    printable_name(shown, sizeof shown, name);
    long long ckpt_classes = other_classes(m, name, np, nb);
    if (ckpt_classes > 0)
        return refuse(err, errlen, path,
                      "checkpoint is for model %s with %lld classes (%" PRIu64 " parameters), the job's data set has %d "
                      "(%zu): resume on a data set of %lld classes, or start without this checkpoint",
                      m->name, ckpt_classes, np, m->num_classes, m->nparams, ckpt_classes);
    if (strcmp(name, m->name) != 0 || np != m->nparams || nb != m->nbuffers)
        return refuse(err, errlen, path, "checkpoint is for model %s with %" PRIu64 " parameters, job runs %s with %zu",
                      shown, np, m->name, m->nparams);
    get(&r, &s.spec_hash, 8);
    get(&r, &layout, 8);
    if (layout != checkpoint_layout_hash(m))
        return refuse(err, errlen, path,
                      "checkpoint's parameter layout (hash %016" PRIx64 ") is not model %s's "
                      "(%016" PRIx64 "): written by another version of the model",
                      layout, m->name, checkpoint_layout_hash(m));
    read_state(&r, version, want, &t, &s);
    /* An AdamW run (m->moment2, resuming: want) needs both moments and the step; an SGD
     * run reading an AdamW file takes the weights and the first moment only (its spec hash
     * refuses it first), a tool (want NULL) what the file has. */
    if (want && m->moment2 && t.m2 == 0)
        return refuse(err, errlen, path,
                      "checkpoint has no AdamW second moment (format version %u, written by an optimizer.kind sgd "
                      "run%s): an adamw job cannot resume from it; start afresh or resume with optimizer.kind sgd",
                      version, version < 7 ? " or an older pacer-worker" : "");
    /* The same spec (its hash) and model give the same PowerSGD plan: other sizes are a
     * damaged or forged file. */
    if (want && t.cq && (t.cq != want->compress_q_floats || t.ce != want->compress_err_floats))
        return refuse(err, errlen, path,
                      "checkpoint's PowerSGD state (Q %" PRIu64 " floats, error %" PRIu64
                      ") is not this run's plan (Q %" PRIu64 ", error %" PRIu64 ")",
                      t.cq, t.ce, want->compress_q_floats, want->compress_err_floats);
    /* Counters any run needs sane, even a tool that compares weights (want NULL). */
    if (s.global_step < 0 || s.epoch < 0 || s.step_in_epoch < 0 || s.cursor < 0 || s.nworkers < 0 ||
        s.nworkers > CKPT_MAX_WORKERS || s.pass < 0 || s.global_batch < 0)
        return refuse(err, errlen, path, "checkpoint header has invalid counters");
    if (want && checkpoint_validate(&s, want, path, err, errlen) != 0) return -1;
    if (restore(&r, m, want, &t, path, err, errlen) != 0) return -1;
    *st = s;
    return 0;
}

int checkpoint_load(const char *path, model_t *m, const ckpt_expect_t *want, ckpt_state_t *st, char *err, size_t errlen)
{
    int rc = -1;
    unsigned char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open checkpoint: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        goto out;
    }
    /* A file larger than this model's checkpoint and than any pacer model's (so that the
     * parser can still say which model a real checkpoint is for) is refused unread. */
    size_t len = (size_t)sb.st_size;
    size_t extra = want ? compress_floats(want->compress_q_floats, want->compress_err_floats, CKPT_MAX_WORKERS) : 0;
    size_t most = PREFIX_BYTES + HEADER_BYTES + (3 * m->nparams + m->nbuffers + extra) * sizeof(float) + 4;
    if (most < CKPT_READ_FLOOR) most = CKPT_READ_FLOOR;
    if (len > most) {
        snprintf(err, errlen, "%s: truncated or oversized checkpoint (%zu bytes, model %s needs %zu)", path, len,
                 m->name, PREFIX_BYTES + HEADER_BYTES + (2 * m->nparams + m->nbuffers) * sizeof(float) + 4);
        goto out;
    }
    buf = malloc(len ? len : 1);
    if (!buf || fread(buf, 1, len, f) != len) {
        snprintf(err, errlen, "%s: read failed", path);
        goto out;
    }
    rc = checkpoint_parse(buf, len, path, m, want, st, err, errlen);
out:
    free(buf);
    fclose(f);
    return rc;
}

/* ---- the parameter-server workers' error feedback (checkpoint.h) ------------------------- */

/* CRC32 (zlib's) of n bytes after crc, in pieces zlib's uInt length holds. */
static uint32_t crc_of(uint32_t crc, const unsigned char *p, size_t n)
{
    uLong c = crc;
    for (size_t done = 0; done < n;) {
        const size_t part = n - done > ((size_t)1 << 30) ? (size_t)1 << 30 : n - done;
        c = crc32(c, p + done, (uInt)part);
        done += part;
    }
    return (uint32_t)c;
}

void checkpoint_ef_path(const char *ckpt_path, int index, char *out, size_t len)
{
    snprintf(out, len, "%s.ef%d", ckpt_path, index);
}

int checkpoint_ef_save(const char *path, int64_t version, int32_t workers, int32_t index, const float *err, size_t n,
                       char *msg, size_t msglen)
{
    unsigned char h[CKPT_EF_HEADER];
    const uint64_t count = n;
    memcpy(h, CKPT_EF_MAGIC, 8);
    memcpy(h + 8, &version, 8);
    memcpy(h + 16, &workers, 4);
    memcpy(h + 20, &index, 4);
    memcpy(h + 24, &count, 8);
    /* the CRC32 of the header and the floats, as the checkpoint's trailer */
    const uint32_t crc = crc_of(crc_of(0, h, sizeof h), (const unsigned char *)err, n * sizeof(float));
    char tmp[1200];
    int fd = fs_atomic_begin(path, tmp, sizeof tmp, 0644);
    if (fd < 0) goto fail;
    if (fs_write_all(fd, h, sizeof h) != 0 || fs_write_all(fd, err, n * sizeof(float)) != 0 ||
        fs_write_all(fd, &crc, sizeof crc) != 0) {
        int e = errno;
        fs_atomic_abort(fd, tmp);
        errno = e;
        goto fail;
    }
    if (fs_atomic_commit(fd, tmp, path) != 0) goto fail;
    return 0;
fail:
    snprintf(msg, msglen, "%s: cannot write the error feedback: %s", path, strerror(errno));
    return -1;
}

void checkpoint_ef_fix_crc(unsigned char *buf, size_t len)
{
    if (len < 4) return;
    const uint32_t crc = crc_of(0, buf, len - 4);
    memcpy(buf + len - 4, &crc, 4);
}

/* The floats of a whole, checked file (at p, n of them): each finite and within
 * CKPT_STATE_BOUND; 0, or -1 naming the element. */
static int ef_values_ok(const unsigned char *p, size_t n, const char *path, char *msg, size_t msglen)
{
    for (size_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, p + i * sizeof x, sizeof x);
        if (isfinite(x) && fabs((double)x) <= CKPT_STATE_BOUND) continue;
        snprintf(msg, msglen,
                 "%s: the error feedback's element %zu is %g, want finite, of magnitude at most %g (gradient not yet "
                 "sent)",
                 path, i, (double)x, CKPT_STATE_BOUND);
        return -1;
    }
    return 0;
}

int checkpoint_ef_parse(const unsigned char *buf, size_t len, const char *path, int64_t version, int32_t workers,
                        int32_t index, float *err, size_t n, char *msg, size_t msglen)
{
    const size_t want = CKPT_EF_HEADER + n * sizeof(float) + 4;
    if (len >= 8 && memcmp(buf, CKPT_EF_MAGIC_V1, 8) == 0) {
        snprintf(msg, msglen,
                 "%s: an error-feedback file of the older format %s, without a checksum: not read (the errors it "
                 "holds cannot be verified)",
                 path, CKPT_EF_MAGIC_V1);
        return CKPT_EF_OTHER;
    }
    if (len < 8 || memcmp(buf, CKPT_EF_MAGIC, 8) != 0) {
        snprintf(msg, msglen, "%s: not an error-feedback file (no %s header): damaged or written by something else",
                 path, CKPT_EF_MAGIC);
        return -1;
    }
    if (len != want) {
        snprintf(msg, msglen,
                 "%s: %zu bytes, where this model's error feedback of %zu floats takes %zu (truncated or damaged)",
                 path, len, n, want);
        return -1;
    }
    uint32_t crc_file, crc = crc_of(0, buf, len - 4);
    memcpy(&crc_file, buf + len - 4, 4);
    if (crc != crc_file) {
        snprintf(msg, msglen, "%s: the error feedback is corrupt (CRC32 %08x, stored %08x)", path, crc, crc_file);
        return -1;
    }
    int64_t v;
    int32_t wk, ix;
    uint64_t count;
    memcpy(&v, buf + 8, 8);
    memcpy(&wk, buf + 16, 4);
    memcpy(&ix, buf + 20, 4);
    memcpy(&count, buf + 24, 8);
    if (v != version || wk != workers || ix != index) {
        snprintf(msg, msglen,
                 "%s: the error feedback of version %" PRId64 ", worker %d of %d, not of this checkpoint's version "
                 "%" PRId64 ", worker %d of %d",
                 path, v, ix, wk, version, index, workers);
        return CKPT_EF_OTHER;
    }
    if (count != n) {
        snprintf(msg, msglen, "%s: the header announces %" PRIu64 " floats in a file of this model's %zu", path, count,
                 n);
        return -1;
    }
    if (ef_values_ok(buf + CKPT_EF_HEADER, n, path, msg, msglen) != 0) return -1;
    memcpy(err, buf + CKPT_EF_HEADER, n * sizeof(float));
    return 0;
}

int checkpoint_ef_load(const char *path, int64_t version, int32_t workers, int32_t index, float *err, size_t n,
                       char *msg, size_t msglen)
{
    const size_t want = CKPT_EF_HEADER + n * sizeof(float) + 4;
    int rc = -1;
    unsigned char *buf = NULL;
    FILE *f = fopen(path, "rbe");
    struct stat st;
    if (!f) {
        /* none written for this checkpoint (a worker stopped before its reply): not damage */
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? CKPT_EF_OTHER : -1;
    }
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(msg, msglen, "%s: not a regular file", path);
        goto out;
    }
    /* bounded before reading: no file larger than this model's is read */
    const size_t len = (size_t)st.st_size;
    if ((uint64_t)st.st_size > (uint64_t)want) {
        snprintf(msg, msglen, "%s: %lld bytes, more than this model's error feedback of %zu floats takes (%zu)", path,
                 (long long)st.st_size, n, want);
        goto out;
    }
    if (!(buf = malloc(len ? len : 1)) || fread(buf, 1, len, f) != len) {
        snprintf(msg, msglen, "%s: cannot read %zu bytes", path, len);
        goto out;
    }
    rc = checkpoint_ef_parse(buf, len, path, version, workers, index, err, n, msg, msglen);
out:
    fclose(f);
    free(buf);
    return rc;
}
