/* worker/onnx_case.c - see onnx_case.h. Everything read here is outside input: every file
 * is bounded (ONNX_MAX_BYTES for the model, ONNX_CASE_TENSOR_MAX_BYTES per tensor, at most
 * ONNX_CASE_MAX_TENSORS + 1 inputs and outputs, ONNX_CASE_MAX_SETS data sets and
 * ONNX_CASE_MAX_ACT_FLOATS of activations), and anything the importer refuses (operator,
 * attribute, shape, type) is exit 2 with its message. The model is the importer's (model/onnx_import.h); this file only reads the
 * case, binds its inputs, runs the forward (in evaluation mode, or in training mode where a
 * batch norm computes its training form: onnx_case_training) and compares. */
#include "onnx_case.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model.h"
#include "onnx_import.h"

#define ONNX_CASE_MAX_SETS 64
#define NT (ONNX_CASE_MAX_TENSORS + 1)
/* Largest activation arena a case's batch may need (1 GiB of floats). */
#define ONNX_CASE_MAX_ACT_FLOATS ((size_t)1 << 28)

/* Reads and decodes dir/set/name.pb into t. 1 when the file does not exist, 0 when read,
 * -1 with err set (naming set/name.pb: the caller names dir). */
static int read_tensor(const char *dir, const char *set, const char *name, onnx_tensor_t *t, char *err, size_t errlen)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%.4096s/%s/%s.pb", dir, set, name);
    if (stat(path, &st) != 0)
        return errno == ENOENT ? 1 : (snprintf(err, errlen, "%s/%s.pb: %s", set, name, strerror(errno)), -1);
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size > ONNX_CASE_TENSOR_MAX_BYTES)
        return snprintf(err, errlen, "%s/%s.pb: not a regular file of at most %zu bytes", set, name,
                        (size_t)ONNX_CASE_TENSOR_MAX_BYTES),
               -1;
    uint8_t *buf;
    size_t len;
    char why[512];
    if (onnx_read_file(path, &buf, &len, why, sizeof why) != 0)
        return snprintf(err, errlen, "%s/%s.pb: cannot read it", set, name), -1;
    int rc = onnx_tensor_decode(buf, len, t, why, sizeof why);
    free(buf);
    if (rc != 0) snprintf(err, errlen, "%s/%s.pb: %s", set, name, why);
    return rc;
}

/* Reads set/prefix_0.pb, prefix_1.pb, ... (until one is missing) into t; their count, or
 * -1 with err set. */
static int read_tensors(const char *dir, const char *set, const char *prefix, onnx_tensor_t *t, char *err, size_t errlen)
{
    for (int k = 0;; k++) {
        char name[32];
        snprintf(name, sizeof name, "%s_%d", prefix, k);
        int rc = k < NT ? read_tensor(dir, set, name, &t[k], err, errlen) : 0;
        if (rc == 1) return k;
        if (rc < 0) return -1;
        if (k == NT) return snprintf(err, errlen, "%s: more than %d %s files", set, NT, prefix), -1;
    }
}

static void shape_str(const onnx_tensor_t *t, char *out, size_t outlen)
{
    size_t used = (size_t)snprintf(out, outlen, "(");
    for (int i = 0; i < t->ndims && used < outlen; i++)
        used += (size_t)snprintf(out + used, outlen - used, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    if (used < outlen) snprintf(out + used, outlen - used, ")");
}

/* Compares got with want (want->count values): prints the output's line, returns 0 when
 * every value is within the tolerances (NaN matches NaN and an infinity itself, as the
 * suite's assert_allclose). */
static int compare(const char *set, int k, const onnx_tensor_t *want, const float *got)
{
    size_t bad = 0, worst = 0;
    double maxerr = 0;
    for (size_t i = 0; i < want->count; i++) {
        const double e = want->data[i], a = got[i];
        if ((isnan(e) && isnan(a)) || a == e) continue; /* also infinities of one sign */
        const double d = fabs(a - e);
        if (!(d <= ONNX_CASE_ATOL + ONNX_CASE_RTOL * fabs(e))) bad++;
        if (!(d <= maxerr)) { /* NaN (one side only) counts as the largest */
            maxerr = isnan(d) ? INFINITY : d;
            worst = i;
        }
    }
    char shape[160];
    shape_str(want, shape, sizeof shape);
    printf("%s output_%d '%s' %s: %zu values, largest error %.3g at %zu (got %.9g, want %.9g): %s", set, k, want->name,
           shape, want->count, maxerr, worst, want->count ? got[worst] : 0.0, want->count ? want->data[worst] : 0.0,
           bad ? "MISMATCH" : "ok");
    if (bad) printf(" (%zu values outside %g + %g * |want|)", bad, ONNX_CASE_ATOL, ONNX_CASE_RTOL);
    printf("\n");
    return bad ? 1 : 0;
}

/* The model's input: input_0's data alone (*shape its shape), or with the other inputs fed as
 * activations (packed[k]: onnx_import_case_inputs) each sample theirs one after the other,
 * (N, S), malloc'ed, into *out; 0, or -1 when out of memory. */
static int pack_inputs(const onnx_tensor_t *in, int nin, const int *packed, int whole, float **out, onnx_tensor_t *shape)
{
    /* whole: the inputs are one sample of a batch of 1 (onnx_import_case_inputs' *whole) */
    const size_t N = whole ? 1 : (size_t)in[0].dims[0];
    size_t S = 0;
    int more = whole;
    for (int k = 0; k < nin; k++)
        if (packed[k]) S += in[k].count / N, more |= k > 0;
    *shape = (onnx_tensor_t){.ndims = in[0].ndims};
    memcpy(shape->dims, in[0].dims, sizeof shape->dims);
    *out = in[0].data;
    if (!more) return 0;
    *shape = (onnx_tensor_t){.ndims = 2, .dims = {(int64_t)N, (int64_t)S}};
    float *x = malloc((N * S > 0 ? N * S : 1) * sizeof *x);
    if (!(*out = x)) return -1;
    for (size_t b = 0, o = 0; b < N; b++)
        for (int k = 0; k < nin; k++) {
            if (!packed[k]) continue;
            const size_t per = in[k].count / N;
            memcpy(x + o, in[k].data + b * per, per * sizeof *x);
            o += per;
        }
    return 0;
}

/* The verdict of two: a mismatch (1) over a refusal (2) over a pass (0), so that a refused
 * output never hides another's wrong values. */
static int worse(int a, int b) { return a == 1 || b == 1 ? 1 : a > b ? a : b; }

/* ONNX's running mean (stat 1) or variance (2) of batch norm l after a forward in training
 * mode, into out (l->C values): momentum * before + (1 - momentum) * the batch's, where
 * before is the statistic the forward started from and ONNX's momentum is 1 - l's (layer_t
 * keeps PyTorch's). The batch's are what the forward normalised with, saved for the
 * backward (the mean, 1 / sqrt(var + eps)); the variance is the population's, as ONNX's
 * reference computes it, not the unbiased estimate pacer's own running variance keeps
 * (PyTorch's, what a training job updates: kernels/cpu/batchnorm.c). */
static void bn_running(const model_t *m, const layer_t *l, int stat, const float *before, float *out)
{
    const float *mean = m->aux + l->aux_off, *invstd = mean + l->C;
    const double tm = l->op.norm.momentum;
    for (int c = 0; c < l->C; c++) {
        const double is = invstd[c], cur = stat == 1 ? mean[c] : 1.0 / (is * is) - (double)l->op.norm.eps;
        out[c] = (float)((1.0 - tm) * before[c] + tm * cur);
    }
}

/* Output k of one data set (want, its expected values): the model of the case for that
 * output, run on the inputs; the exit status, err set for 2. */
static int run_output(const char *set, const uint8_t *onnx, size_t onnx_len, const onnx_tensor_t *in, int nin,
                      const onnx_tensor_t *want, int k, char *err, size_t errlen)
{
    const onnx_tensor_t *x = &in[0];
    int N = x->ndims ? (int)x->dims[0] : 1, packed[NT + 1], whole, rc = 2, stat;
    model_t *m = NULL;
    int32_t *y = NULL;
    float *xp = NULL, *stats = NULL;
    /* a batch norm's training form: the forward in training mode; its running statistics
     * compared through the model of its Y */
    const int train = onnx_case_training(onnx, onnx_len, k, &stat);
    onnx_tensor_t pshape;
    /* The batch is the file's: the model is built for one sample first, so that a batch
     * whose activations would not fit is refused before they are allocated and touched.
     * The inputs that are activations like input_0 are fed with it (packed). */
    if (onnx_import_case_inputs(onnx, onnx_len, in, nin, 1, k, packed, &whole, &m, err, errlen) != 0) goto out;
    if (whole) N = 1; /* the inputs whole, one sample */
    if ((double)m->act_floats * (double)N > (double)ONNX_CASE_MAX_ACT_FLOATS) {
        snprintf(err, errlen, "%s/input_0.pb: a batch of %d needs %.3g floats of activations (at most %.3g)", set, N,
                 (double)m->act_floats * (double)N, (double)ONNX_CASE_MAX_ACT_FLOATS);
        goto out;
    }
    model_free(m);
    m = NULL;
    if (N < 1) {
        snprintf(err, errlen, "%s/input_0.pb: its axis 0, the batch, is 0: an empty batch is not supported", set);
        goto out;
    }
    if (onnx_import_case_inputs(onnx, onnx_len, in, nin, N, k, packed, &whole, &m, err, errlen) != 0) goto out;
    if (pack_inputs(in, nin, packed, whole, &xp, &pshape) != 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    int same = m->in_shape.rank == pshape.ndims - 1;
    for (int d = 0; same && d < m->in_shape.rank; d++) same = m->in_shape.dims[d] == pshape.dims[d + 1];
    if (!same) {
        char s[160], t[96];
        shape_str(x, s, sizeof s);
        snprintf(err, errlen, "%s/input_0.pb: shape %s, the graph's input is (N, %s", set, s,
                 model_shape_text(&m->in_shape, t, sizeof t) + 1);
        goto out;
    }
    const layer_t *bn = stat ? &m->layers[m->nlayers - 1] : NULL;
    if (bn && bn->kind != LAYER_BN) {
        snprintf(err, errlen, "output_%d '%.128s': a batch norm's running statistic, its Y not the model's last layer",
                 k, want->name);
        goto out;
    }
    rc = 1;
    if (want->count != (bn ? (size_t)bn->C : (size_t)N * (size_t)m->num_classes)) {
        printf("%s output_%d '%s': %zu values expected, the model computes %d x %d: MISMATCH\n", set, k, want->name,
               want->count, bn ? 1 : N, bn ? bn->C : m->num_classes);
        goto out;
    }
    /* the loss the forward also computes is not looked at: labels 0 are valid ones; stats:
     * the running statistic before the forward, then ONNX's after it */
    if (!(y = calloc((size_t)N, sizeof *y)) || (bn && !(stats = malloc(2 * (size_t)bn->C * sizeof *stats)))) {
        snprintf(err, errlen, "out of memory");
        rc = 2;
        goto out;
    }
    if (bn) memcpy(stats, m->buffers + (stat == 1 ? bn->rm_off : bn->rv_off), (size_t)bn->C * sizeof *stats);
    model_forward(m, xp, y, N, train);
    if (bn) bn_running(m, bn, stat, stats, stats + bn->C);
    rc = compare(set, k, want, bn ? stats + bn->C : model_logits(m));
out:
    if (xp != x->data) free(xp);
    free(y);
    free(stats);
    model_free(m);
    return rc;
}

/* One data set: every output compared (each through its own model: run_output); returns
 * the exit status, the worse of the outputs' (worse()). */
static int run_set(const char *dir, const char *set, const uint8_t *onnx, size_t onnx_len)
{
    char err[1024];
    onnx_tensor_t in[NT + 1], want[NT + 1];
    int nin = -1, nout = -1, rc = 2;
    memset(in, 0, sizeof in);
    memset(want, 0, sizeof want);
    if ((nin = read_tensors(dir, set, "input", in, err, sizeof err)) < 0 ||
        (nout = read_tensors(dir, set, "output", want, err, sizeof err)) < 0)
        goto out;
    if (nin < 1 || nout < 1) {
        snprintf(err, sizeof err, "%s: no input_0.pb or no output_0.pb", set);
        goto out;
    }
    /* int64 inputs after the first are shape arguments (bound as constants); the
     * activation and the outputs compared are float32 */
    for (int k = 0; k < nin + nout; k++) {
        const onnx_tensor_t *t = k < nin ? &in[k] : &want[k - nin];
        if (t->ints && (k == 0 || k >= nin)) {
            snprintf(err, sizeof err, "%s/%s_%d.pb: data type INT64 (7): only float32 %s", set,
                     k < nin ? "input" : "output", k < nin ? k : k - nin,
                     k ? "outputs are compared" : "activations are read");
            goto out;
        }
    }
    /* rank 0: one sample of a scalar (onnx_import_case_inputs reads it as one sample) */
    if (in[0].ndims > 1 + MODEL_MAX_RANK) {
        char s[160];
        shape_str(&in[0], s, sizeof s);
        snprintf(err, sizeof err, "%s/input_0.pb: shape %s: the activation must be a batch (N, ...) of rank 0 to %d",
                 set, s, 1 + MODEL_MAX_RANK);
        goto out;
    }
    rc = 0;
    for (int k = 0; k < nout; k++) {
        char why[1024];
        const int r = run_output(set, onnx, onnx_len, in, nin, &want[k], k, why, sizeof why);
        if (r == 2 && rc == 0) snprintf(err, sizeof err, "%s", why);
        rc = worse(rc, r);
    }
out:
    if (rc == 2) fprintf(stderr, "pacer-worker: --onnx-case %s: %s\n", dir, err);
    for (int i = 0; i <= NT; i++) onnx_tensor_free(&in[i]), onnx_tensor_free(&want[i]);
    return rc;
}

int onnx_case_run(const char *dir)
{
    char path[4200], err[1024], ops[512];
    uint8_t *onnx;
    size_t len;
    snprintf(path, sizeof path, "%.4096s/model.onnx", dir);
    if (onnx_read_file(path, &onnx, &len, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-worker: --onnx-case %s: %s\n", dir, strncmp(err, "onnx: ", 6) == 0 ? err + 6 : err);
        return 2;
    }
    if (onnx_graph_ops(onnx, len, ops, sizeof ops) != 0) {
        fprintf(stderr, "pacer-worker: --onnx-case %s: model.onnx is not an ONNX model\n", dir);
        free(onnx);
        return 2;
    }
    printf("ops: %s\n", ops);
    fflush(stdout);
    int worst = 0, sets = 0;
    while (sets < ONNX_CASE_MAX_SETS && worst != 2) { /* a refusal is the verdict */
        char set[32];
        struct stat st;
        snprintf(set, sizeof set, "test_data_set_%d", sets);
        snprintf(path, sizeof path, "%.4000s/%s", dir, set);
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) break;
        worst = worse(worst, run_set(dir, set, onnx, len));
        sets++;
    }
    free(onnx);
    if (sets == 0) {
        fprintf(stderr, "pacer-worker: --onnx-case %s: no test_data_set_0 directory\n", dir);
        return 2;
    }
    return worst;
}
