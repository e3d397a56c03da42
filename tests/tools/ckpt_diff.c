/* tests/tools/ckpt_diff.c - compares the parameters of two pacer checkpoints.
 * usage: ckpt-diff A.ckpt B.ckpt [TOL]
 * Prints the max absolute and max relative difference of the parameters (and of the
 * batch-norm buffers); exits 0 when the max absolute difference is <= TOL (default 0),
 * 1 when larger, 2 when a file cannot be read or the models differ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "checkpoint.h"

/* Reads the model name from a checkpoint header (right after magic, version, size). */
static int model_name(const char *path, char *name, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char buf[16 + MODEL_NAME_MAX];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (n != sizeof buf || memcmp(buf, CKPT_MAGIC, 8) != 0) return -1;
    snprintf(name, len, "%.*s", MODEL_NAME_MAX - 1, buf + 16);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ckpt-diff A.ckpt B.ckpt [TOL]\n");
        return 2;
    }
    double tol = argc > 3 ? atof(argv[3]) : 0.0;
    char name[MODEL_NAME_MAX], err[512];
    if (model_name(argv[1], name, sizeof name) != 0) {
        fprintf(stderr, "%s: not a pacer checkpoint\n", argv[1]);
        return 2;
    }
    model_t *a = NULL, *b = NULL;
    if (model_create(name, 1, &a, err, sizeof err) != 0 || model_create(name, 1, &b, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    ckpt_state_t sa, sb;
    if (checkpoint_load(argv[1], a, NULL, &sa, err, sizeof err) != 0 ||
        checkpoint_load(argv[2], b, NULL, &sb, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    double max_abs = 0, max_rel = 0;
    for (size_t i = 0; i < a->nparams; i++) {
        double d = fabs((double)a->params[i] - (double)b->params[i]);
        double r = d / fmax(1e-12, fmax(fabs(a->params[i]), fabs(b->params[i])));
        if (d > max_abs) max_abs = d;
        if (r > max_rel && d > 1e-9) max_rel = r;
    }
    double max_buf = 0;
    for (size_t i = 0; i < a->nbuffers; i++) {
        double d = fabs((double)a->buffers[i] - (double)b->buffers[i]);
        if (d > max_buf) max_buf = d;
    }
    printf("%s: %zu parameters, steps %lld vs %lld: max abs diff %.3g, max rel diff %.3g, buffers max abs %.3g\n",
           name, a->nparams, (long long)sa.global_step, (long long)sb.global_step, max_abs, max_rel, max_buf);
    model_free(a);
    model_free(b);
    return max_abs <= tol ? 0 : 1;
}
