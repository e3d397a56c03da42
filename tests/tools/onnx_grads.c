/* tests/tools/onnx_grads.c - what pacer computes for an ONNX file on one fixed batch, for a
 * comparison with PyTorch's from the same weights (tests/tools/onnx_families.py --compare).
 * usage: onnx_grads MODEL.onnx X.bin N STEPS LR OUTDIR
 * First, the model written from its layers (onnx_export_layers) and imported again must
 * give its evaluation logits (exit 1 otherwise; the difference printed on stdout).
 * Imports MODEL.onnx as pacer-worker does (model/onnx_import.h), reads N images of X.bin
 * (float32 little-endian, (N, C, H, W) of the model's input), labels i % classes, and
 * writes into OUTDIR:
 *   eval_logits.bin   the evaluation forward's logits (N, classes) (the file's running
 *                     statistics);
 *   train_logits.bin  the training forward's logits (batch statistics);
 *   tensors.txt       "name count kind" per tensor in the model's order, kind "grad" for a
 *                     parameter, "buffer" for a running statistic;
 *   tensors.bin       per tensor of tensors.txt: the parameter's gradient of the mean
 *                     cross-entropy after that training step, or the buffer after it (the
 *                     running statistics moved by the file's momentum);
 *   losses.txt        the loss of STEPS steps of plain SGD (w -= LR * g) on the same batch,
 *                     one per line, the first the step above.
 * Exits 0, or 2 with a message when a file cannot be read or does not fit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_export.h"
#include "onnx_import.h"

static int write_floats(const char *dir, const char *name, const float *v, size_t n)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(v, sizeof *v, n, f) != n) {
        if (f) fclose(f);
        return fprintf(stderr, "onnx_grads: cannot write %s\n", p), -1;
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* The model written as ONNX from its layers (onnx_export_layers: every row's export) and
 * imported again gives the evaluation logits m just computed: bit for bit but where opset
 * 13 has no operator of a row's own (hard swish as x * HardSigmoid(x)): within 1e-6 of the
 * largest. Prints the difference; 0, or -1 with the reason. */
static int round_trip(const model_t *m, const float *x, int n)
{
    char err[1024];
    uint8_t *buf = NULL;
    size_t len = 0;
    model_t *back = NULL;
    int rc = -1;
    if (onnx_export_layers(m, &buf, &len, err, sizeof err) != 0 ||
        onnx_import_buffer(buf, len, "round-trip", n, &back, err, sizeof err) != 0) {
        fprintf(stderr, "onnx_grads: exported from its layers and imported again: %s\n", err);
        goto out;
    }
    int32_t *y = calloc((size_t)n, sizeof *y);
    if (!y) goto out;
    model_forward(back, x, y, n, 0);
    free(y);
    const size_t nl = (size_t)n * m->num_classes;
    double e = 0, s = 0;
    for (size_t i = 0; i < nl; i++) {
        e = fmax(e, fabs((double)model_logits(back)[i] - model_logits(m)[i]));
        s = fmax(s, fabs((double)model_logits(m)[i]));
    }
    printf("round trip: %zu bytes from %d layers, evaluation logits max_rel %.2e (tol 1e-6)\n", len, m->nlayers,
           s > 0 ? e / s : e);
    if (e <= 1e-6 * s) rc = 0;
    else fprintf(stderr, "onnx_grads: exported and imported again, the evaluation logits differ\n");
out:
    free(buf);
    model_free(back);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: onnx_grads MODEL.onnx X.bin N STEPS LR OUTDIR\n");
        return 2;
    }
    const long n = strtol(argv[3], NULL, 10), steps = strtol(argv[4], NULL, 10);
    const float lr = strtof(argv[5], NULL);
    const char *dir = argv[6];
    if (n < 1 || n > 256 || steps < 1 || steps > 1000)
        return fprintf(stderr, "onnx_grads: N 1 to 256, STEPS 1 to 1000\n"), 2;
    char err[1024];
    model_t *m = NULL;
    if (onnx_import_file(argv[1], "grads-check", (int)n, &m, err, sizeof err) != 0)
        return fprintf(stderr, "onnx_grads: %s\n", err), 2;
    const size_t img = (size_t)m->C * m->H * m->W, k = (size_t)m->num_classes;
    float *x = malloc((size_t)n * img * sizeof *x);
    int32_t *y = malloc((size_t)n * sizeof *y);
    FILE *f = fopen(argv[2], "rb");
    int rc = 2;
    if (!x || !y || !f || fread(x, sizeof *x, (size_t)n * img, f) != (size_t)n * img) {
        fprintf(stderr, "onnx_grads: %s: cannot read %ld images of %zu floats\n", argv[2], n, img);
        goto done;
    }
    for (long i = 0; i < n; i++) y[i] = (int32_t)(i % (long)k);

    model_forward(m, x, y, (int)n, 0);
    if (write_floats(dir, "eval_logits.bin", model_logits(m), (size_t)n * k)) goto done;
    if (round_trip(m, x, (int)n) != 0) {
        rc = 1;
        goto done;
    }
    char p[4096];
    snprintf(p, sizeof p, "%s/losses.txt", dir);
    FILE *losses = fopen(p, "w");
    if (!losses) goto done;
    for (long s = 0; s < steps; s++) {
        const float loss = model_forward(m, x, y, (int)n, 1);
        model_backward(m, x, y, (int)n, 1.0f);
        fprintf(losses, "%.9g\n", loss);
        if (s == 0) {
            if (write_floats(dir, "train_logits.bin", model_logits(m), (size_t)n * k)) break;
            snprintf(p, sizeof p, "%s/tensors.txt", dir);
            FILE *txt = fopen(p, "w");
            snprintf(p, sizeof p, "%s/tensors.bin", dir);
            FILE *bin = fopen(p, "wb");
            int bad = !txt || !bin;
            for (int t = 0; t < m->ntensors && !bad; t++) {
                const tensor_info_t *ti = &m->tensors[t];
                const float *v = (ti->is_buffer ? m->buffers : m->grads) + ti->offset;
                fprintf(txt, "%s %zu %s\n", ti->name, ti->count, ti->is_buffer ? "buffer" : "grad");
                bad = fwrite(v, sizeof *v, ti->count, bin) != ti->count;
            }
            if (txt) bad |= fclose(txt) != 0;
            if (bin) bad |= fclose(bin) != 0;
            if (bad) break;
        }
        for (size_t i = 0; i < m->nparams; i++) m->params[i] -= lr * m->grads[i];
        if (s == steps - 1) rc = 0;
    }
    if (fclose(losses) != 0) rc = 2;
    if (rc) fprintf(stderr, "onnx_grads: cannot write into %s\n", dir);
done:
    if (f) fclose(f);
    free(x);
    free(y);
    model_free(m);
    return rc;
}
