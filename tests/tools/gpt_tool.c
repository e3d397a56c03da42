/* tests/tools/gpt_tool.c - the built-in GPT (model/gpt.h) for a comparison with torch
 * (tests/tools/gpt_torch.py): builds a GPT of the given shape, initialises it from the seed
 * as pacer-worker does (model_gpt_init), and on the windows of OUTDIR/ids.i32 (int32, N rows
 * of BLOCK + 1 token ids: a window and its next tokens) runs one training forward and
 * backward (dropout 0), writing into OUTDIR:
 *   names.txt   one line per parameter tensor: its state_dict name and element count, in
 *               the order of the fused buffer
 *   init.f32    the initial parameters (float32, that order)
 *   logits.f32  (N, BLOCK, VOCAB) logits
 *   grads.f32   the gradient of the mean loss over every position, that order
 *   loss.txt    the mean loss
 * Usage: gpt_tool LAYERS HEADS EMBD BLOCK VOCAB TIE BIAS SEED OUTDIR
 *        gpt_tool --onnx MODEL.onnx OUTDIR
 * The second imports a language model (int64 token ids (N, T) in, (N, T, V) logits out)
 * as pacer-worker does, from its own weights (init.f32 its initializers), at most 64 windows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"
#include "model.h"
#include "onnx_import.h"

static int write_all(const char *dir, const char *name, const void *p, size_t bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "gpt_tool: cannot write %s\n", path);
        if (f) fclose(f);
        return -1;
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* the windows: x the first BLOCK ids of each row, y the last BLOCK */
static int read_ids(const char *dir, int T, int V, float **x, int32_t **y, int *N)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ids.i32", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "gpt_tool: cannot read %s\n", path), -1;
    fseek(f, 0, SEEK_END);
    const long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    const long row = (long)(T + 1) * 4;
    *N = (int)(bytes / row);
    int32_t *ids = malloc((size_t)bytes);
    *x = malloc((size_t)*N * T * sizeof **x);
    *y = malloc((size_t)*N * T * sizeof **y);
    int ok = *N >= 1 && bytes % row == 0 && ids && *x && *y && fread(ids, 1, (size_t)bytes, f) == (size_t)bytes;
    fclose(f);
    for (int n = 0; ok && n < *N; n++)
        for (int t = 0; t < T; t++) {
            const int32_t a = ids[n * (T + 1) + t], b = ids[n * (T + 1) + t + 1];
            ok = a >= 0 && a < V && b >= 0 && b < V;
            (*x)[n * T + t] = (float)a;
            (*y)[n * T + t] = b;
        }
    free(ids);
    if (!ok) fprintf(stderr, "gpt_tool: %s: not rows of %d ids below %d\n", path, T + 1, V);
    return ok ? 0 : -1;
}

/* the model: imported (--onnx MODEL OUTDIR) or the built-in GPT of argv's shape; its
 * windows read from OUTDIR */
static model_t *make_model(int argc, char **argv, const char **dir, float **x, int32_t **y, int *N)
{
    char err[512];
    model_t *m = NULL;
    if (argc == 4 && strcmp(argv[1], "--onnx") == 0) {
        *dir = argv[3];
        if (onnx_import_file(argv[2], "lm", 64, &m, err, sizeof err) != 0)
            return fprintf(stderr, "gpt_tool: %s\n", err), NULL;
        if (read_ids(*dir, m->C, m->num_classes, x, y, N) != 0 || *N > 64) return model_free(m), NULL;
        return m;
    }
    if (argc != 10) {
        fprintf(stderr, "usage: gpt_tool LAYERS HEADS EMBD BLOCK VOCAB TIE BIAS SEED OUTDIR\n"
                        "       gpt_tool --onnx MODEL.onnx OUTDIR\n");
        return NULL;
    }
    const model_gpt_t g = {.layers = atoi(argv[1]),
                           .heads = atoi(argv[2]),
                           .embd = atoi(argv[3]),
                           .block = atoi(argv[4]),
                           .vocab = atoi(argv[5]),
                           .tie = atoi(argv[6]),
                           .bias = atoi(argv[7])};
    *dir = argv[9];
    if (read_ids(*dir, g.block, g.vocab, x, y, N) != 0) return NULL;
    if (model_create_gpt("gpt", &g, *N, &m, err, sizeof err) != 0) {
        fprintf(stderr, "gpt_tool: %s\n", err);
        return NULL;
    }
    model_gpt_init(m, g.layers, strtoull(argv[8], NULL, 10));
    return m;
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    float *x = NULL;
    int32_t *y = NULL;
    int N = 0;
    model_t *m = make_model(argc, argv, &dir, &x, &y, &N);
    if (!m) return 2;
    FILE *names = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/names.txt", dir);
    if (!(names = fopen(path, "w"))) return 1;
    for (int t = 0; t < m->ntensors; t++)
        if (!m->tensors[t].is_buffer) fprintf(names, "%s %zu\n", m->tensors[t].name, m->tensors[t].count);
    fclose(names);
    if (write_all(dir, "init.f32", m->params, m->nparams * sizeof(float)) != 0) return 1;
    const float loss = model_forward(m, x, y, N, 1);
    model_backward(m, x, y, N, 1.0f);
    if (write_all(dir, "logits.f32", model_logits(m), (size_t)N * m->positions * m->num_classes * sizeof(float)) != 0 ||
        write_all(dir, "grads.f32", m->grads, m->nparams * sizeof(float)) != 0)
        return 1;
    snprintf(path, sizeof path, "%s/loss.txt", dir);
    FILE *lf = fopen(path, "w");
    if (!lf) return 1;
    fprintf(lf, "%.9g\n", loss);
    fclose(lf);
    model_free(m);
    free(x);
    free(y);
    return 0;
}
