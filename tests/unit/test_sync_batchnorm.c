/* tests/unit/test_sync_batchnorm.c - the synchronised batch norm (kernels/cpu/ops.h
 * batchnorm_forward_train_sync, batchnorm_backward_sync): two processes, played by two
 * threads whose reduce adds their vectors together, each on its part of a batch, give what
 * one batch norm over the whole batch gives: the output and input gradient of each part,
 * the statistics and running statistics, and dgamma and dbeta as the parts' own (their sum
 * the whole batch's). Also an empty part (B 0), the fused ReLU and residual add, more
 * channels than one reduction block, planes below the small-plane size, two kernel
 * threads, and a one-process reduce (the identity).
 *
 * Tolerance: the synchronised sums are the whole batch's, taken in another order and
 * around another shift (the running mean instead of the first value), in double: they
 * differ by a few units of double rounding, so each float coefficient (mean, inverse std,
 * the affine map's a, b, k) is the whole batch's or its neighbouring float, 2^-24
 * relative. An output a*(x - m) + b then moves by at most a few float roundings of its
 * terms: TOL = 1e-6 of the largest value compared (16 ulps of it), far below a wrong
 * statistic (a part's own mean or variance moves the outputs by 1e-1 here). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "parallel.h"

#define TOL 1e-6

/* Two processes' all-reduce, between two threads: each adds its vector into the sum,
 * waits for the other, and reads the sum back. */
typedef struct {
    pthread_barrier_t bar;
    double sum[2 * BN_SYNC_BLOCK + 1];
    int calls[2];
} pair_t;

typedef struct {
    pair_t *pair;
    int who;
} party_t;

static pthread_mutex_t add_lock = PTHREAD_MUTEX_INITIALIZER;

static void pair_reduce(double *v, int n, void *ctx)
{
    party_t *p = ctx;
    pair_t *pr = p->pair;
    assert_true(n >= 3 && n <= 2 * BN_SYNC_BLOCK + 1);
    pthread_mutex_lock(&add_lock);
    for (int i = 0; i < n; i++) pr->sum[i] += v[i];
    pthread_mutex_unlock(&add_lock);
    pthread_barrier_wait(&pr->bar);
    memcpy(v, pr->sum, (size_t)n * sizeof *v);
    pthread_barrier_wait(&pr->bar);
    if (p->who == 0) memset(pr->sum, 0, sizeof pr->sum);
    pthread_barrier_wait(&pr->bar);
    pr->calls[p->who]++;
}

static void identity_reduce(double *v, int n, void *ctx)
{
    (void)v;
    (void)n;
    (*(int *)ctx)++;
}

/* One batch norm's tensors for a batch of B: the input, its residual, the output gradient,
 * and what the calls write. */
typedef struct {
    int B, C, HW, relu, add;
    float *x, *res, *g, *out, *dx, *mean, *invstd, *rm, *rv, *dgamma, *dbeta;
    const float *gamma, *beta;
} bn_case_t;

static float *floats(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof *p);
    assert_non_null(p);
    return p;
}

static float urand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 65536.0f;
}

static void case_alloc(bn_case_t *c, int B, int C, int HW)
{
    const size_t n = (size_t)B * C * HW;
    c->B = B, c->C = C, c->HW = HW, c->relu = 0, c->add = 0;
    c->x = floats(n), c->res = floats(n), c->g = floats(n), c->out = floats(n), c->dx = floats(n);
    c->mean = floats(C), c->invstd = floats(C), c->rm = floats(C), c->rv = floats(C);
    c->dgamma = floats(C), c->dbeta = floats(C);
    for (int k = 0; k < C; k++) c->rv[k] = 1.0f;
}

static void case_free(bn_case_t *c)
{
    free(c->x), free(c->res), free(c->g), free(c->out), free(c->dx);
    free(c->mean), free(c->invstd), free(c->rm), free(c->rv), free(c->dgamma), free(c->dbeta);
}

/* images [b0, b0 + B) of whole as a case of its own (its running statistics the whole's
 * before the call) */
static void case_part(bn_case_t *part, const bn_case_t *whole, const float *rm0, const float *rv0, int b0, int B)
{
    case_alloc(part, B, whole->C, whole->HW);
    part->relu = whole->relu, part->add = whole->add, part->gamma = whole->gamma, part->beta = whole->beta;
    const size_t per = (size_t)whole->C * whole->HW, at = (size_t)b0 * per, n = (size_t)B * per;
    if (n) {
        memcpy(part->x, whole->x + at, n * sizeof(float));
        memcpy(part->res, whole->res + at, n * sizeof(float));
        memcpy(part->g, whole->g + at, n * sizeof(float));
    }
    memcpy(part->rm, rm0, (size_t)whole->C * sizeof(float));
    memcpy(part->rv, rv0, (size_t)whole->C * sizeof(float));
}

/* The whole batch's forward and backward through the ordinary kernels (the fused ReLU's
 * backward reads the output, as model.c's fused layers do). */
static void run_whole(bn_case_t *c)
{
    const float mom = 0.01f, eps = 1e-3f;
    if (c->add)
        batchnorm_add_relu_forward_train_eps(c->B, c->C, c->HW, c->x, c->gamma, c->beta, c->res, c->out, c->mean,
                                             c->invstd, c->rm, c->rv, mom, eps);
    else if (c->relu)
        batchnorm_relu_forward_train_eps(c->B, c->C, c->HW, c->x, c->gamma, c->beta, c->out, c->mean, c->invstd, c->rm,
                                         c->rv, mom, eps);
    else
        batchnorm_forward_train_eps(c->B, c->C, c->HW, c->x, c->gamma, c->beta, c->out, c->mean, c->invstd, c->rm,
                                    c->rv, mom, eps);
    if (c->relu || c->add)
        batchnorm_relu_backward_set(c->B, c->C, c->HW, c->x, c->gamma, c->mean, c->invstd, c->out, c->g, c->dx,
                                    c->dgamma, c->dbeta);
    else
        batchnorm_backward_set(c->B, c->C, c->HW, c->x, c->gamma, c->mean, c->invstd, c->g, c->dx, c->dgamma, c->dbeta);
}

static void run_sync(bn_case_t *c, const bn_sync_t *sync)
{
    const int relu = c->relu || c->add;
    batchnorm_forward_train_sync(c->B, c->C, c->HW, c->x, c->gamma, c->beta, c->add ? c->res : NULL, relu, c->out,
                                 c->mean, c->invstd, c->rm, c->rv, 0.01f, 1e-3f, sync);
    batchnorm_backward_sync(c->B, c->C, c->HW, c->x, c->gamma, c->mean, c->invstd, relu ? c->out : NULL, c->g, c->dx,
                            c->dgamma, c->dbeta, 1, sync);
}

typedef struct {
    bn_case_t *c;
    bn_sync_t sync;
} job_t;

static void *party_main(void *arg)
{
    job_t *j = arg;
    run_sync(j->c, &j->sync);
    return NULL;
}

static double largest(const float *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i]));
    return m > 0 ? m : 1.0;
}

/* got (n) within TOL of want's largest value */
static void assert_close(const char *what, const float *got, const float *want, size_t n)
{
    const double scale = largest(want, n);
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - (double)want[i]) <= TOL * scale))
            fail_msg("%s[%zu]: %.9g, the whole batch's %.9g (scale %.3g)", what, i, got[i], want[i], scale);
}

/* Two parties of b0 and B - b0 images against the whole batch of B. */
static void check_pair(int B, int b0, int C, int HW, int relu, int add)
{
    bn_case_t whole;
    case_alloc(&whole, B, C, HW);
    whole.relu = relu, whole.add = add;
    float *gamma = floats(C), *beta = floats(C), *rm0 = floats(C), *rv0 = floats(C);
    unsigned s = 7u + (unsigned)(B * 131 + C * 7 + HW);
    for (int k = 0; k < C; k++) {
        gamma[k] = 0.5f + urand(&s), beta[k] = urand(&s) - 0.5f;
        rm0[k] = whole.rm[k] = 2.0f * urand(&s), rv0[k] = whole.rv[k] = 0.5f + urand(&s);
    }
    whole.gamma = gamma, whole.beta = beta;
    for (size_t i = 0; i < (size_t)B * C * HW; i++) {
        const int k = (int)(i / (size_t)HW % (size_t)C);
        whole.x[i] = 3.0f + (float)k * 0.1f + 2.0f * urand(&s); /* a mean far from 0 */
        whole.res[i] = urand(&s) - 0.5f;
        whole.g[i] = urand(&s) - 0.5f;
    }
    bn_case_t part[2];
    case_part(&part[0], &whole, rm0, rv0, 0, b0);
    case_part(&part[1], &whole, rm0, rv0, b0, B - b0);
    run_whole(&whole);

    pair_t pr;
    memset(&pr, 0, sizeof pr);
    pthread_barrier_init(&pr.bar, NULL, 2);
    party_t who[2] = {{&pr, 0}, {&pr, 1}};
    job_t jobs[2];
    pthread_t th[2];
    for (int r = 0; r < 2; r++) {
        jobs[r].c = &part[r];
        jobs[r].sync.reduce = pair_reduce;
        jobs[r].sync.ctx = &who[r];
        assert_int_equal(pthread_create(&th[r], NULL, party_main, &jobs[r]), 0);
    }
    for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
    pthread_barrier_destroy(&pr.bar);
    /* one reduction per block of channels, forward and backward, by each party alike */
    const int blocks = (C + BN_SYNC_BLOCK - 1) / BN_SYNC_BLOCK;
    assert_int_equal(pr.calls[0], 2 * blocks);
    assert_int_equal(pr.calls[1], 2 * blocks);

    const size_t per = (size_t)C * HW;
    for (int r = 0; r < 2; r++) {
        const size_t at = r ? (size_t)b0 * per : 0, n = (size_t)part[r].B * per;
        assert_close("out", part[r].out, whole.out + at, n);
        assert_close("dx", part[r].dx, whole.dx + at, n);
        assert_close("mean", part[r].mean, whole.mean, (size_t)C);
        assert_close("invstd", part[r].invstd, whole.invstd, (size_t)C);
        assert_close("running_mean", part[r].rm, whole.rm, (size_t)C);
        assert_close("running_var", part[r].rv, whole.rv, (size_t)C);
    }
    /* the running statistics are the same bits on both: the next step's common shift */
    assert_memory_equal(part[0].rm, part[1].rm, (size_t)C * sizeof(float));
    assert_memory_equal(part[0].rv, part[1].rv, (size_t)C * sizeof(float));
    /* dgamma and dbeta: each party's own part's, adding up to the whole batch's */
    float *dg = floats(C), *db = floats(C);
    for (int k = 0; k < C; k++)
        dg[k] = part[0].dgamma[k] + part[1].dgamma[k], db[k] = part[0].dbeta[k] + part[1].dbeta[k];
    assert_close("dgamma (sum of the parts)", dg, whole.dgamma, (size_t)C);
    assert_close("dbeta (sum of the parts)", db, whole.dbeta, (size_t)C);
    if (b0 > 0 && b0 < B) {
        /* a part's own differ from the whole's: not the reduced sums */
        int differ = 0;
        for (int k = 0; k < C; k++)
            differ |= fabsf(part[0].dbeta[k] - whole.dbeta[k]) > 1e-3f * (float)largest(whole.dbeta, (size_t)C);
        assert_true(differ);
    }
    free(dg), free(db), free(gamma), free(beta), free(rm0), free(rv0);
    case_free(&part[0]), case_free(&part[1]), case_free(&whole);
}

static void test_two_parts(void **state)
{
    (void)state;
    check_pair(12, 7, 3, 10, 0, 0); /* unequal parts */
    check_pair(8, 4, 5, 64, 0, 0);  /* equal parts, 8x8 planes */
    check_pair(9, 2, 4, 4, 0, 0);   /* planes below BN_SMALL_PLANE */
}

static void test_fused(void **state)
{
    (void)state;
    check_pair(10, 3, 6, 16, 1, 0); /* batch norm + ReLU */
    check_pair(10, 6, 6, 16, 0, 1); /* batch norm + residual add + ReLU */
}

/* A part of no images still takes part in every reduction (the other's statistics are the
 * whole batch's), and more channels than one block reduce block by block. */
static void test_empty_part_and_blocks(void **state)
{
    (void)state;
    check_pair(6, 0, 3, 9, 0, 0);
    check_pair(6, 6, 3, 9, 1, 0);
    check_pair(3, 1, BN_SYNC_BLOCK + 5, 2, 0, 0);
}

/* One process whose reduce leaves the sums as they are (sync_batchnorm with nothing to
 * synchronise) is the ordinary batch norm within rounding, on one kernel thread and two. */
static void test_identity_reduce(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++) {
        assert_int_equal(par_set_threads(threads), 0);
        bn_case_t a, b;
        case_alloc(&a, 64, 8, 64);
        case_alloc(&b, 64, 8, 64);
        float *gamma = floats(8), *beta = floats(8);
        unsigned s = 99;
        for (int k = 0; k < 8; k++) gamma[k] = 0.5f + urand(&s), beta[k] = urand(&s);
        a.gamma = b.gamma = gamma, a.beta = b.beta = beta;
        for (size_t i = 0; i < (size_t)64 * 8 * 64; i++) {
            a.x[i] = b.x[i] = 1.0f + urand(&s);
            a.g[i] = b.g[i] = urand(&s) - 0.5f;
        }
        int calls = 0;
        bn_sync_t one = {identity_reduce, &calls};
        run_whole(&a);
        run_sync(&b, &one);
        assert_int_equal(calls, 2);
        assert_close("out", b.out, a.out, (size_t)64 * 8 * 64);
        assert_close("dx", b.dx, a.dx, (size_t)64 * 8 * 64);
        assert_close("running_var", b.rv, a.rv, 8);
        assert_close("dgamma", b.dgamma, a.dgamma, 8);
        assert_close("dbeta", b.dbeta, a.dbeta, 8);
        free(gamma), free(beta);
        case_free(&a), case_free(&b);
    }
    assert_int_equal(par_set_threads(1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_parts),
        cmocka_unit_test(test_fused),
        cmocka_unit_test(test_empty_part_and_blocks),
        cmocka_unit_test(test_identity_reduce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
