/* bench/layer_profile.c - where a CPU training step's time goes, per layer kind (issue 27).
 *
 *   build/bench/layer_profile [--batch 128] [--steps 10] [--threads 1] [model | FILE.onnx]   (default resnet20)
 *
 * A name ending in .onnx is a network imported as a job's "model": {"onnx": FILE} is
 * (model/onnx_import.h), from the file's own weights; a built-in one starts from seed 42.
 * gpt:L,H,E,T[,V] is the built-in GPT ("model": {"gpt": ...}: L blocks, H heads, width E,
 * block T, vocabulary V, 256 by default; biases, tied head, no dropout) on random tokens,
 * with AdamW (lr 1e-3, weight decay 0.1) as its jobs train: `gpt:4,4,128,64 --batch 12`
 * is nanoGPT's CPU shape, bench/gpt_speed.sh's.
 * Times STEPS training steps of the CPU reference (model_forward, model_backward,
 * sgd_update with momentum 0.9 and weight decay 5e-4) on a random fixed batch, as a worker
 * does them, after two warm-up steps. The model's per-layer progress hook (model.h) marks the
 * end of every layer, so the thread CPU time between two marks is one layer's; CPU time,
 * not wall time, so that other processes on a shared machine do not count. Prints, per
 * layer kind and pass, milliseconds per step, the share of the step, and for convolutions
 * and fully connected layers the GEMM FLOP rate (FLOP per cycle needs the clock: pass it
 * in Hz as PACER_CLOCK_HZ, e.g. from build/bench/cpu_clock). Then the convolutions'
 * backward split: the weight gradient alone (conv2d_backward without dinp, im2col
 * included, or the direct kernel's gathering) timed per layer outside the step, the input
 * gradient as the difference.
 * --threads N: the kernels' threads (kernels/cpu/parallel.h, a job's `threads`); with
 * more than one every time is wall time instead, as the other threads' work is not on
 * this thread's clock (run it on an otherwise idle machine).
 * --precision bf16: the matrix products in bf16 (kernels/cpu/matmul.h, a job's `precision`),
 * on the path PACER_CPU_ISA allows.
 * --layers: also one line per layer (its inputs, output shape, which reader sets its
 * gradient, forward and backward ms a step), to see which layer of a kind costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpt.h"
#include "matmul.h"
#include "model.h"
#include "onnx_import.h"
#include "op_table.h"
#include "ops.h"
#include "parallel.h"
#include "plan.h"

static clockid_t g_clock = CLOCK_THREAD_CPUTIME_ID;

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    const model_t *m;
    int backward; /* marks count down from the last layer */
    int next;     /* the layer whose end the next mark is */
    double last;
    double *fwd, *bwd; /* seconds per layer, summed over steps */
} prof_t;

static void mark(void *ctx)
{
    prof_t *p = ctx;
    double t = thread_cpu_s();
    if (p->backward) p->bwd[p->next--] += t - p->last;
    else p->fwd[p->next++] += t - p->last;
    p->last = t;
}

/* the operator table's name of the kind (model/op_table.h): one pointer per kind */
static const char *kind_name(layer_kind_t k) { return MODEL_OPS[k].name; }

/* Convolutions counted as one shape in the per-shape lines: the same kernel, channels,
 * groups, planes and stride (ResNet-18's 3x3 and 1x1 stride-2 layers are two shapes). */
static int same_shape(const layer_t *a, const layer_t *b)
{
    return a->kind == LAYER_CONV && b->kind == LAYER_CONV && a->C == b->C && a->OC == b->OC && a->H == b->H &&
           a->OH == b->OH && a->op.conv.sH == b->op.conv.sH && a->op.conv.KH == b->op.conv.KH &&
           a->op.conv.KW == b->op.conv.KW && a->op.conv.groups == b->op.conv.groups;
}

int main(int argc, char **argv)
{
    int B = 128, steps = 10, threads = 1, per_layer = 0;
    const char *name = "resnet20";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) B = atoi(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--layers") == 0) per_layer = 1;
        else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc) {
            mm_precision_t p;
            if (mm_precision_parse(argv[++i], &p) != 0) {
                fprintf(stderr, "layer_profile: --precision fp32 or bf16\n");
                return 2;
            }
            mm_set_precision(p);
        } else name = argv[i];
    }
    if (B < 1 || steps < 1) {
        fprintf(stderr, "layer_profile: --batch and --steps must be positive\n");
        return 2;
    }
    if (par_set_threads(threads) != 0) {
        fprintf(stderr, "layer_profile: --threads must be 1 to %d\n", PAR_MAX_THREADS);
        return 2;
    }
    if (threads > 1) g_clock = CLOCK_MONOTONIC;
    char err[256];
    model_t *m;
    const size_t len = strlen(name);
    const int onnx = len > 5 && strcmp(name + len - 5, ".onnx") == 0;
    model_gpt_t g = {.vocab = 256, .bias = 1, .tie = 1};
    const int gpt = strncmp(name, "gpt:", 4) == 0;
    if (gpt && sscanf(name + 4, "%d,%d,%d,%d,%d", &g.layers, &g.heads, &g.embd, &g.block, &g.vocab) < 4) {
        fprintf(stderr, "layer_profile: %s: want gpt:LAYERS,HEADS,EMBD,BLOCK[,VOCAB]\n", name);
        return 2;
    }
    if ((onnx  ? onnx_import_file(name, "imported", B, &m, err, sizeof err)
         : gpt ? model_create_gpt("gpt", &g, B, &m, err, sizeof err)
               : model_create(name, B, &m, err, sizeof err)) != 0) {
        fprintf(stderr, "layer_profile: %s\n", err);
        return 2;
    }
    if (gpt) model_gpt_init(m, g.layers, 42);
    else if (!onnx) model_init_params(m, 42);
    /* a language model's sample is its positions' tokens, each with a target */
    const size_t in = (size_t)B * m->C * m->H * m->W, np = model_param_count(m), ny = (size_t)B * m->positions;
    float *x = malloc(in * sizeof(float));
    int32_t *y = malloc(ny * sizeof(int32_t));
    double *fwd = calloc((size_t)m->nlayers, sizeof(double)), *bwd = calloc((size_t)m->nlayers, sizeof(double));
    if (!x || !y || !fwd || !bwd || (gpt && model_alloc_moment2(m) != 0)) return 2;
    const adamw_hparams_t adamw = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
    srand(1);
    for (size_t i = 0; i < in; i++)
        x[i] = gpt ? (float)(rand() % g.vocab) : 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;
    for (size_t i = 0; i < ny; i++) y[i] = rand() % m->num_classes;

    prof_t p = {.m = m, .fwd = fwd, .bwd = bwd};
    double sgd_s = 0, loss_s = 0, zero_s = 0, total = 0;
    for (int s = -2; s < steps; s++) {
        if (s == 0) {
            memset(fwd, 0, (size_t)m->nlayers * sizeof(double));
            memset(bwd, 0, (size_t)m->nlayers * sizeof(double));
            sgd_s = loss_s = zero_s = 0;
        }
        double t0 = thread_cpu_s();
        m->progress = mark;
        m->progress_ctx = &p;
        p.backward = 0;
        p.next = 0;
        p.last = t0;
        model_forward(m, x, y, B, 1);
        /* the forward's last mark is the last layer's end; the loss follows it */
        double t1 = thread_cpu_s();
        loss_s += t1 - p.last;
        p.backward = 1;
        p.next = m->nlayers - 1;
        /* the gradient zeroing and the loss's backward run before the first mark: they
         * land on the last layer, which is subtracted below by timing them alone */
        p.last = t1;
        model_backward(m, x, y, B, 1.0f);
        double t2 = thread_cpu_s();
        if (gpt) adamw_update(np, m->params, m->grads, m->momentum, m->moment2, &adamw, s + 3, 1.0f);
        else sgd_update(np, m->params, m->grads, m->momentum, 0.01f, 0.9f, 0, 5e-4f, 1.0f);
        double t3 = thread_cpu_s();
        sgd_s += t3 - t2;
        if (s >= 0) total += t3 - t0;
        /* the zeroing of the activation gradients, alone, as model_backward does it */
        double z0 = thread_cpu_s();
        model_zero_dacts(m, B);
        zero_s += thread_cpu_s() - z0;
    }
    m->progress = NULL;
    /* the last layer's backward mark includes the zeroing */
    bwd[m->nlayers - 1] -= zero_s;

    const char *kinds[16];
    int nk = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const char *k = kind_name(m->layers[i].kind);
        int seen = 0;
        for (int j = 0; j < nk; j++) seen |= kinds[j] == k;
        if (!seen && nk < 16) kinds[nk++] = k;
    }
    const double hz = getenv("PACER_CLOCK_HZ") ? atof(getenv("PACER_CLOCK_HZ")) : 0;
    printf("layer_profile model=%s batch=%d steps=%d threads=%d gemm=%s step_ms=%.2f (%s)\n", name, B, steps, threads,
           mm_kernel(), 1e3 * total / steps, threads > 1 ? "wall time" : "thread CPU time");
    /* FLOPs as a direct convolution does them: Winograd's layers (conv2d_winograd) do a
     * quarter of the multiplies, so their rate is an effective one and passes the peak */
    printf("%-16s %-8s %9s %7s %10s\n", "kind", "pass", "ms/step", "share", "FLOP/cycle");
    for (int j = 0; j < nk; j++)
        for (int pass = 0; pass < 2; pass++) {
            double t = 0, fl = 0;
            for (int i = 0; i < m->nlayers; i++) {
                const layer_t *l = &m->layers[i];
                if (kind_name(l->kind) != kinds[j]) continue;
                t += pass ? bwd[i] : fwd[i];
                double macs = 0;
                if (l->kind == LAYER_CONV)
                    macs = (double)B * l->OC * l->OH * l->OW * (l->op.conv.C / l->op.conv.groups) * l->op.conv.KH *
                           l->op.conv.KW;
                else if (l->kind == LAYER_FC) macs = (double)B * l->OC * l->C;
                /* backward: weight gradient, and the input gradient unless it is the first layer */
                fl += 2 * macs * (pass ? (l->in < 0 ? 1 : 2) : 1);
            }
            t /= steps;
            char rate[32] = "";
            if (fl > 0 && hz > 0) snprintf(rate, sizeof rate, "%.1f", fl / t / hz);
            printf("%-16s %-8s %9.2f %6.1f%% %10s\n", kinds[j], pass ? "backward" : "forward", 1e3 * t,
                   100 * t * steps / total, rate);
        }
    /* convolutions by shape (input channels, output channels, output size, stride) */
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        if (l->kind != LAYER_CONV) continue;
        int first = 1;
        for (int k = 0; k < i; k++) {
            const layer_t *o = &m->layers[k];
            if (same_shape(o, l)) first = 0;
        }
        if (!first) continue;
        double tf = 0, tb = 0, macs = 0;
        int n = 0;
        for (int k = i; k < m->nlayers; k++) {
            const layer_t *o = &m->layers[k];
            if (!same_shape(o, l)) continue;
            tf += fwd[k] / steps;
            tb += bwd[k] / steps;
            macs = (double)B * o->OC * o->OH * o->OW * (o->C / o->op.conv.groups) * o->op.conv.KH * o->op.conv.KW;
            n++;
        }
        char rf[32] = "", rb[32] = "";
        if (hz > 0) {
            snprintf(rf, sizeof rf, "%.1f", 2 * macs * n / tf / hz);
            snprintf(rb, sizeof rb, "%.1f", 2 * macs * n * (l->in < 0 ? 1 : 2) / tb / hz);
        }
        printf("  conv %dx%d %2dx%dx%d -> %2dx%dx%d stride %d (x%d): forward %7.2f ms %5s FLOP/cycle, backward %7.2f ms %5s "
               "FLOP/cycle\n",
               l->op.conv.KH, l->op.conv.KW, l->C, l->H, l->W, l->OC, l->OH, l->OW, l->op.conv.sH, n, 1e3 * tf, rf,
               1e3 * tb, rb);
    }
    for (int i = 0; per_layer && i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        char shape[64] = "";
        for (int d = 0, n = 0; d < l->shape.rank && n < (int)sizeof shape; d++)
            n += snprintf(shape + n, sizeof shape - (size_t)n, "%s%d", d ? "x" : "", l->shape.dims[d]);
        printf("  layer %3d %-16s in %3d %3d  %-14s set by %3d: forward %6.3f ms, backward %6.3f ms\n", i,
               kind_name(l->kind), l->in, l->in2, shape, model_layer_plan(m, i)->grad_setter, 1e3 * fwd[i] / steps,
               1e3 * bwd[i] / steps);
    }
    printf("%-16s %-8s %9.2f %6.1f%%\n", "loss", "forward", 1e3 * loss_s / steps, 100 * loss_s / total);
    printf("%-16s %-8s %9.2f %6.1f%%\n", "zero dacts", "backward", 1e3 * zero_s / steps, 100 * zero_s / total);
    printf("%-16s %-8s %9.2f %6.1f%%\n", "sgd", "update", 1e3 * sgd_s / steps, 100 * sgd_s / total);

    /* the convolutions' backward split, layer by layer outside the step */
    double wg = 0, all = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        if (l->kind != LAYER_CONV) continue;
        const float *inp = l->in < 0 ? x : m->acts + m->layers[l->in].out_off;
        float *dinp = l->in < 0 ? NULL : m->dacts + m->plan->dact_off[l->in];
        const float *w = m->params + l->w_off;
        for (int r = 0; r < steps; r++) {
            double a = thread_cpu_s();
            conv2d_backward(&l->op.conv, B, inp, w, m->dacts + m->plan->dact_off[i], NULL, m->grads + l->w_off, NULL,
                            m->ws);
            double b = thread_cpu_s();
            conv2d_backward(&l->op.conv, B, inp, w, m->dacts + m->plan->dact_off[i], dinp, m->grads + l->w_off, NULL,
                            m->ws);
            double c = thread_cpu_s();
            wg += b - a;
            all += c - b;
        }
    }
    printf("conv backward, timed alone: weight gradient (with its lowering) %.2f ms/step, input gradient "
           "(the difference) %.2f ms/step\n",
           1e3 * wg / steps, 1e3 * (all - wg) / steps);
    /* the floats a step writes (plan.h's act_written_floats), of the arena sized for B */
    const double mib = (double)sizeof(float) / (1 << 20);
    printf("activations a step writes: %.1f MiB at batch %d (of an arena of %.1f MiB); their gradients' arena "
           "%.1f MiB\n",
           mib * (double)m->plan->act_written_floats, B, mib * (double)m->act_floats,
           mib * (double)m->plan->dact_floats);
    model_free(m);
    free(x);
    free(y);
    free(fwd);
    free(bwd);
    return 0;
}
