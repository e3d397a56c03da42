/* tests/tools/ckpt_diff.c - compares two pacer checkpoints (the equivalence tests).
 * usage: ckpt_diff [--ignore FIELD]... A.ckpt B.ckpt [TOL]
 * Prints the max absolute and max relative difference of the parameters, the momentum (AdamW's
 * first moment), AdamW's second moment (zeros in an SGD file) and the batch-norm buffers. Exits 0 when the two describe the same point of training within
 * TOL (default 0): same model, same step, epoch, position and parameter-server version,
 * every value finite in both, and max abs difference of parameters, momentum and buffers
 * <= TOL. Exits 1 on any difference (a NaN or an infinity anywhere is one, even in both
 * files: a diverged run is never "equal"), 2 when a file cannot be read or the models
 * differ. --ignore FIELD leaves one position field out (printed as ignored): comparing
 * a parameter-server run with a synchronous one, ps_version is the PS's update count on
 * one side and 0 on the other. */
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

typedef struct {
    double max_abs, max_rel;
    size_t nonfinite, worst; /* values that are NaN or Inf in either file; index of max_abs */
} cmp_t;

static cmp_t compare(const float *a, const float *b, size_t n)
{
    cmp_t c = {0};
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) {
            if (c.nonfinite++ == 0) c.worst = i;
            continue;
        }
        double d = fabs((double)a[i] - (double)b[i]);
        double r = d / fmax(1e-12, fmax(fabs(a[i]), fabs(b[i])));
        if (d > c.max_abs) {
            c.max_abs = d;
            if (!c.nonfinite) c.worst = i;
        }
        if (r > c.max_rel && d > 1e-9) c.max_rel = r;
    }
    return c;
}

static int report(const char *what, const cmp_t *c, double tol)
{
    printf("  %s: max abs diff %.3g, max rel diff %.3g", what, c->max_abs, c->max_rel);
    if (c->nonfinite) printf(", %zu non-finite values (first at [%zu])", c->nonfinite, c->worst);
    int bad = c->nonfinite > 0 || !(c->max_abs <= tol);
    printf("%s\n", bad ? "  <- DIFFERENT" : "");
    return bad;
}

int main(int argc, char **argv)
{
    const char *ignore[8];
    int nignore = 0;
    while (argc > 2 && strcmp(argv[1], "--ignore") == 0 && nignore < 8) {
        ignore[nignore++] = argv[2];
        argv += 2;
        argc -= 2;
    }
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: ckpt_diff [--ignore FIELD]... A.ckpt B.ckpt [TOL]\n");
        return 2;
    }
    char *end = NULL;
    double tol = argc > 3 ? strtod(argv[3], &end) : 0.0;
    if (argc > 3 && (end == argv[3] || *end || !isfinite(tol) || tol < 0)) {
        fprintf(stderr, "ckpt_diff: TOL '%s' is not a finite number >= 0\n", argv[3]);
        return 2;
    }
    char name[MODEL_NAME_MAX], name_b[MODEL_NAME_MAX], err[512];
    for (int k = 1; k <= 2; k++)
        if (model_name(argv[k], k == 1 ? name : name_b, sizeof name) != 0) {
            fprintf(stderr, "%s: not a pacer checkpoint\n", argv[k]);
            return 2;
        }
    if (strcmp(name, name_b) != 0) {
        fprintf(stderr, "ckpt_diff: models differ: %s vs %s\n", name, name_b);
        return 2;
    }
    model_t *a = NULL, *b = NULL;
    if (model_create(name, 1, &a, err, sizeof err) != 0 || model_create(name, 1, &b, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    /* AdamW's second moment is compared too (zeros on both sides for an SGD file) */
    if (model_alloc_moment2(a) != 0 || model_alloc_moment2(b) != 0) {
        fprintf(stderr, "ckpt_diff: out of memory\n");
        return 2;
    }
    ckpt_state_t sa, sb;
    if (checkpoint_load(argv[1], a, NULL, &sa, err, sizeof err) != 0 ||
        checkpoint_load(argv[2], b, NULL, &sb, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    int bad = 0;
    printf("%s: %zu parameters, %zu buffers\n", name, a->nparams, a->nbuffers);
    /* The position in training: two runs that stopped at different steps are different
     * runs whatever their weights. */
    struct {
        const char *what;
        long long x, y;
    } pos[] = {
        {"global_step", (long long)sa.global_step, (long long)sb.global_step},
        {"epoch", (long long)sa.epoch, (long long)sb.epoch},
        {"step_in_epoch", (long long)sa.step_in_epoch, (long long)sb.step_in_epoch},
        {"cursor", (long long)sa.cursor, (long long)sb.cursor},
        {"ps_version", (long long)sa.ps_version, (long long)sb.ps_version},
        {"opt_step", (long long)sa.opt_step, (long long)sb.opt_step},
    };
    int known = 0;
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        int ignored = 0;
        for (int k = 0; k < nignore; k++)
            if (strcmp(ignore[k], pos[i].what) == 0) ignored = 1, known++;
        int differ = !ignored && pos[i].x != pos[i].y;
        printf("  %s: %lld vs %lld%s\n", pos[i].what, pos[i].x, pos[i].y,
               ignored  ? "  (ignored)"
               : differ ? "  <- DIFFERENT"
                        : "");
        bad |= differ;
    }
    if (known != nignore) {
        fprintf(stderr, "ckpt_diff: --ignore takes global_step, epoch, step_in_epoch, cursor, ps_version or opt_step\n");
        return 2;
    }
    cmp_t p = compare(a->params, b->params, a->nparams);
    cmp_t m = compare(a->momentum, b->momentum, a->nparams);
    cmp_t f = compare(a->buffers, b->buffers, a->nbuffers);
    cmp_t v = compare(a->moment2, b->moment2, a->nparams);
    bad |= report("parameters", &p, tol);
    bad |= report("momentum", &m, tol);
    bad |= report("second moment", &v, tol);
    bad |= report("buffers", &f, tol);
    printf("%s (tolerance %g)\n", bad ? "DIFFERENT" : "same", tol);
    model_free(a);
    model_free(b);
    return bad ? 1 : 0;
}
