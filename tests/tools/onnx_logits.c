/* tests/tools/onnx_logits.c - pacer's evaluation logits of an ONNX file (the export tests).
 * usage: onnx_logits MODEL.onnx X.bin N OUT.bin
 * Imports MODEL.onnx as pacer-worker does (model/onnx_import.h), runs the evaluation
 * forward pass on the N images of X.bin (float32 little-endian, (N, C, H, W) of the
 * model's input) and writes the (N, classes) logits to OUT.bin. Exits 0, or 2 with a
 * message when a file cannot be read or does not fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

#define BATCH 64

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: onnx_logits MODEL.onnx X.bin N OUT.bin\n");
        return 2;
    }
    long n = strtol(argv[3], NULL, 10);
    char err[1024];
    model_t *m = NULL;
    if (n < 1 || n > 1000000) return fprintf(stderr, "onnx_logits: N %s: 1 to 1000000\n", argv[3]), 2;
    if (onnx_import_file(argv[1], "export-check", BATCH, &m, err, sizeof err) != 0)
        return fprintf(stderr, "onnx_logits: %s\n", err), 2;
    size_t img = (size_t)m->C * m->H * m->W, k = (size_t)m->num_classes;
    float *x = malloc((size_t)n * img * sizeof *x), *out = malloc((size_t)n * k * sizeof *out);
    int32_t y[BATCH] = {0};
    FILE *f = fopen(argv[2], "rb");
    int rc = 2;
    if (!x || !out || !f || fread(x, sizeof *x, (size_t)n * img, f) != (size_t)n * img) {
        fprintf(stderr, "onnx_logits: %s: cannot read %ld images of %zu floats\n", argv[2], n, img);
        goto done;
    }
    for (long i = 0; i < n; i += BATCH) {
        int b = (int)(n - i < BATCH ? n - i : BATCH);
        model_forward(m, x + (size_t)i * img, y, b, 0);
        memcpy(out + (size_t)i * k, model_logits(m), (size_t)b * k * sizeof *out);
    }
    FILE *o = fopen(argv[4], "wb");
    if (!o || fwrite(out, sizeof *out, (size_t)n * k, o) != (size_t)n * k || fclose(o) != 0) {
        fprintf(stderr, "onnx_logits: cannot write %s\n", argv[4]);
        goto done;
    }
    rc = 0;
done:
    if (f) fclose(f);
    free(x);
    free(out);
    model_free(m);
    return rc;
}
