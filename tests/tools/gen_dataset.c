/* tests/tools/gen_dataset.c - small, learnable data sets in the real file formats, so the
 * loaders and the models that need MNIST or CIFAR-10 run in every CI, with or without
 * ../shared/datasets (which the repository never copies).
 *
 * usage: gen_dataset idx|cifar DIR NTRAIN NTEST [SEED]
 *   idx    MNIST layout: train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz (gzip, as
 *          MNIST is distributed), t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (raw):
 *          1 x 28 x 28, 10 classes;
 *   cifar  CIFAR-10 binary layout: data_batch_1.bin .. data_batch_5.bin (NTRAIN records
 *          spread over the five) and test_batch.bin: records of 1 label byte + 3072 pixel
 *          bytes (the R, G and B planes of 32 x 32).
 * Class c is a smooth pattern of its own (a sum of two 2-D sinusoids per channel with
 * class-specific frequencies and phases), each image that pattern at a random contrast
 * with pixel noise, so a network separates the classes within an epoch or two while
 * every pixel still varies. Labels cycle through the classes in a shuffled order. Same
 * arguments, same bytes. Exit 0, or 1 with a line on stderr. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include "rng.h"

#define CLASSES 10

typedef struct {
    double fx[3][2], fy[3][2], ph[3][2]; /* per channel, two sinusoids */
} pattern_t;

static void make_patterns(pattern_t *p, int channels, rng_t *r)
{
    for (int c = 0; c < CLASSES; c++)
        for (int ch = 0; ch < channels; ch++)
            for (int k = 0; k < 2; k++) {
                p[c].fx[ch][k] = 0.15 + 0.5 * rng_uniform(r);
                p[c].fy[ch][k] = 0.15 + 0.5 * rng_uniform(r);
                p[c].ph[ch][k] = 6.283185307 * rng_uniform(r);
            }
}

/* One image of class c into out (channels x side x side, planar). */
static void make_image(const pattern_t *p, int c, int channels, int side, rng_t *r, unsigned char *out)
{
    double contrast = 50.0 + 40.0 * rng_uniform(r);
    for (int ch = 0; ch < channels; ch++)
        for (int y = 0; y < side; y++)
            for (int x = 0; x < side; x++) {
                double v = 0;
                for (int k = 0; k < 2; k++) v += sin(p[c].fx[ch][k] * x + p[c].fy[ch][k] * y + p[c].ph[ch][k]);
                v = 128.0 + contrast * v + 24.0 * rng_normal(r);
                out[((size_t)ch * side + y) * side + x] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
}

/* Labels 0..9 in a shuffled cycle, so every class is present in any prefix of 10. */
static int label_at(const int32_t *order, long i) { return order[i % CLASSES]; }

typedef struct {
    FILE *f;
    gzFile g;
} out_t;

static int out_open(out_t *o, const char *dir, const char *name, int gz)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, gz ? ".gz" : "");
    o->f = NULL;
    o->g = NULL;
    if (gz) o->g = gzopen(path, "wb6");
    else o->f = fopen(path, "wb");
    if (!o->f && !o->g) {
        fprintf(stderr, "gen_dataset: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int out_write(out_t *o, const void *p, size_t n)
{
    if (o->g) return gzwrite(o->g, p, (unsigned)n) == (int)n ? 0 : -1;
    return fwrite(p, 1, n, o->f) == n ? 0 : -1;
}

static int out_close(out_t *o)
{
    if (o->g) return gzclose(o->g) == Z_OK ? 0 : -1;
    return fclose(o->f) == 0 ? 0 : -1;
}

static void be32(unsigned char *b, unsigned v)
{
    b[0] = (unsigned char)(v >> 24);
    b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8);
    b[3] = (unsigned char)v;
}

static int write_idx(const char *dir, const char *prefix, long n, int gz, const pattern_t *p, rng_t *r,
                     const int32_t *order)
{
    char name[64];
    out_t im, lb;
    unsigned char h[16], img[28 * 28];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    if (out_open(&im, dir, name, gz) != 0) return -1;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    if (out_open(&lb, dir, name, gz) != 0) return -1;
    be32(h, 0x803);
    be32(h + 4, (unsigned)n);
    be32(h + 8, 28);
    be32(h + 12, 28);
    int bad = out_write(&im, h, 16);
    be32(h, 0x801);
    bad |= out_write(&lb, h, 8);
    for (long i = 0; i < n && !bad; i++) {
        unsigned char c = (unsigned char)label_at(order, i);
        make_image(p, c, 1, 28, r, img);
        bad |= out_write(&im, img, sizeof img) | out_write(&lb, &c, 1);
    }
    bad |= out_close(&im) | out_close(&lb);
    return bad ? -1 : 0;
}

static int write_cifar(const char *dir, const char *name, long first, long n, const pattern_t *p, rng_t *r,
                       const int32_t *order)
{
    out_t o;
    unsigned char rec[1 + 3072];
    if (out_open(&o, dir, name, 0) != 0) return -1;
    int bad = 0;
    for (long i = first; i < first + n && !bad; i++) {
        rec[0] = (unsigned char)label_at(order, i);
        make_image(p, rec[0], 3, 32, r, rec + 1);
        bad |= out_write(&o, rec, sizeof rec);
    }
    bad |= out_close(&o);
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6 || (strcmp(argv[1], "idx") != 0 && strcmp(argv[1], "cifar") != 0)) {
        fprintf(stderr, "usage: gen_dataset idx|cifar DIR NTRAIN NTEST [SEED]\n");
        return 1;
    }
    const char *dir = argv[2];
    long ntrain = strtol(argv[3], NULL, 10), ntest = strtol(argv[4], NULL, 10);
    unsigned long seed = argc > 5 ? strtoul(argv[5], NULL, 10) : 1;
    if (ntrain < CLASSES || ntest < CLASSES || ntrain > 1000000 || ntest > 1000000) {
        fprintf(stderr, "gen_dataset: NTRAIN and NTEST must be between %d and 1000000\n", CLASSES);
        return 1;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "gen_dataset: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    int cifar = strcmp(argv[1], "cifar") == 0;
    rng_t r;
    rng_seed(&r, seed);
    pattern_t pat[CLASSES];
    make_patterns(pat, cifar ? 3 : 1, &r);
    int32_t order[CLASSES];
    for (int i = 0; i < CLASSES; i++) order[i] = i;
    rng_shuffle(&r, order, CLASSES);
    int rc = 0;
    if (!cifar) {
        rc = write_idx(dir, "train", ntrain, 1, pat, &r, order);
        if (!rc) rc = write_idx(dir, "t10k", ntest, 0, pat, &r, order);
    } else {
        long first = 0;
        for (int b = 1; b <= 5 && !rc; b++) {
            char name[32];
            long n = ntrain / 5 + (b <= ntrain % 5);
            snprintf(name, sizeof name, "data_batch_%d.bin", b);
            rc = write_cifar(dir, name, first, n, pat, &r, order);
            first += n;
        }
        if (!rc) rc = write_cifar(dir, "test_batch.bin", 0, ntest, pat, &r, order);
    }
    if (rc) {
        fprintf(stderr, "gen_dataset: writing into %s failed\n", dir);
        return 1;
    }
    return 0;
}
