/* common/memest.c - see memest.h. */
#include "memest.h"

#include <stdio.h>
#include <string.h>

#include "planner.h"

/* Measured from model_create (model/model.c) and checked against it by
 * test_memest_matches_models: change a model, change its row. */
static const memest_model_t MODELS[] = {
    {"mlp", 235146, 0, 0, 778, 0, 784, 10},
    {"lenet5", 61706, 0, 28800, 9874, 1576, 784, 10},
    {"cifar10_quick", 145578, 0, 279040, 76874, 8192, 3072, 10},
    {"resnet20", 269722, 1376, 193952, 651338, 0, 3072, 10},
};

const memest_model_t *memest_model(const char *name)
{
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
        if (name && strcmp(MODELS[i].name, name) == 0) return &MODELS[i];
    return NULL;
}

int memest_dataset(const char *name, long *train_n, long *test_n, long *image_bytes)
{
    if (!name) return -1;
    if (strcmp(name, "mnist") == 0 || strcmp(name, "fashion-mnist") == 0) {
        *train_n = 60000;
        *test_n = 10000;
        *image_bytes = 28 * 28;
        return 0;
    }
    if (strcmp(name, "cifar10") == 0) {
        *train_n = 50000;
        *test_n = 10000;
        *image_bytes = 3 * 32 * 32;
        return 0;
    }
    return -1;
}

int memest_rank(const job_spec_t *s, int nworkers, memest_t *out)
{
    memset(out, 0, sizeof *out);
    const memest_model_t *m = memest_model(s->model);
    long train_n, test_n, img;
    if (!m || memest_dataset(s->dataset.name, &train_n, &test_n, &img) != 0) return -1;
    int min_b, max_b;
    planner_bounds_world(s, nworkers >= 1 ? nworkers : s->workers, &min_b, &max_b);
    double B = max_b;
    out->max_batch = max_b;
    out->model_bytes = 4.0 *
                       (3.0 * (double)m->params + 4 /* MODEL_GRAD_EXTRA */ + (double)m->buffers + (double)m->fixed);
    /* both arenas, argmax, probabilities; the batch's x (floats) and y; the worker's
     * eval_idx (int) and undisturbed_s (double) per batch slot */
    out->batch_bytes = B * (4.0 * (2.0 * (double)m->acts_per_sample + (double)m->argmax_per_sample + m->classes +
                                   (double)m->input_per_sample + 1 + 1) +
                            8.0);
    long kept_train = s->dataset.train_subset > 0 && s->dataset.train_subset < train_n ? s->dataset.train_subset
                                                                                       : train_n;
    long kept_test = s->dataset.test_subset > 0 && s->dataset.test_subset < test_n ? s->dataset.test_subset : test_n;
    /* pixels + int32 labels; the permutation is one int32 per training sample */
    out->data_bytes = (double)(kept_train + kept_test) * (double)(img + 4) + 4.0 * (double)kept_train;
    out->load_bytes = (double)(train_n + test_n) * (double)(img + 4);
    double run = out->model_bytes + out->batch_bytes + out->data_bytes;
    out->rank_bytes = run > out->load_bytes ? run : out->load_bytes;
    return 0;
}

const char *memest_fmt(double bytes, char *out, size_t len)
{
    const double MiB = 1024.0 * 1024.0;
    if (bytes >= 10.0 * 1024 * MiB) snprintf(out, len, "%.1f GiB", bytes / (1024 * MiB));
    else snprintf(out, len, "%.0f MiB", bytes / MiB + 0.5);
    return out;
}

int memest_check(const memest_t *e, int ranks, double avail_bytes, const char *where, char *err, size_t errlen)
{
    if (ranks < 1) ranks = 1;
    double need = (double)ranks * e->rank_bytes;
    if (need <= avail_bytes) return 0;
    char a[32], b[32], c[32], d[32], t[32], h[32];
    snprintf(err, errlen,
             "estimated memory %s = %d rank%s x %s per rank (model %s, activations and batch %s for the largest "
             "batch %d, data %s) is more than the %s of %s",
             memest_fmt(need, t, sizeof t), ranks, ranks == 1 ? "" : "s", memest_fmt(e->rank_bytes, a, sizeof a),
             memest_fmt(e->model_bytes, b, sizeof b), memest_fmt(e->batch_bytes, c, sizeof c), e->max_batch,
             memest_fmt(e->data_bytes, d, sizeof d), memest_fmt(avail_bytes, h, sizeof h), where);
    return -1;
}

double memest_meminfo(const char *field)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f) return -1;
    char line[256];
    size_t n = strlen(field);
    double v = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (strncmp(line, field, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%llu", &kb) == 1) {
            v = (double)kb * 1024.0;
            break;
        }
    }
    fclose(f);
    return v;
}
