/* tests/unit/test_model.c - the four networks: parameter counts from ALGORITHMS.md, the
 * fused layout (tensors tile the buffers exactly), and a finite-difference check of the
 * whole graph (residual branches, batch norm, pooling) on a few parameters per model. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "rng.h"

static model_t *make(const char *name, int B)
{
    model_t *m = NULL;
    char err[256];
    assert_int_equal(model_create(name, B, &m, err, sizeof err), 0);
    model_init_params(m, 1);
    return m;
}

static void test_param_counts(void **state)
{
    (void)state;
    static const struct { const char *name; size_t params; } want[] = {
        { "mlp", 235146 }, { "lenet5", 61706 }, { "cifar10_quick", 145578 },
        { "resnet20", 269722 },   /* "0.27M": 16/32/64 basic blocks, fc 64x10 */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        model_t *m = make(want[i].name, 2);
        if (m->nparams != want[i].params)
            fail_msg("%s: %zu parameters, want %zu", want[i].name, m->nparams, want[i].params);
        /* the tensors tile params and buffers with no gap or overlap */
        size_t p = 0, b = 0;
        for (int t = 0; t < m->ntensors; t++) {
            const tensor_info_t *ti = &m->tensors[t];
            size_t *next = ti->is_buffer ? &b : &p;
            assert_int_equal(ti->offset, *next);
            *next += ti->count;
        }
        assert_int_equal(p, m->nparams);
        assert_int_equal(b, m->nbuffers);
        model_free(m);
    }
    char err[256];
    model_t *m = NULL;
    assert_int_equal(model_create("vgg16", 2, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown model 'vgg16'"));
}

/* d(loss)/d(param) by central differences in float against the backward pass. This guards
 * the wiring of the graph (a missing residual branch, a wrong sign, a tensor whose
 * gradient is never written); precision is the per-op tests' job. Per tensor, FD_DIRS
 * directional derivatives along random +-1 vectors v over the WHOLE tensor,
 * (L(p + h v) - L(p - h v)) / 2h against <g, v>, so every entry takes part; plus the
 * entry where the backward pass is largest, alone.
 *
 * Criterion (combined absolute-relative): |an - fd| <= atol + rtol * |fd|. atol is the
 * noise of a float central difference: atol = FD_NOISE x max(1, |L|) / h, FD_NOISE
 * about 8 float ulps of the loss. rtol covers ReLU and max-pool kinks crossed within
 * +-h. With h = 1e-3 the worst error measured is 0.13 of the bound on the small nets and
 * 0.34 on resnet20. Unlike "absolute OR relative", this cannot pass a
 * zero or wrong-sign value where the difference stands above the noise
 * (|fd| > 2 atol / (1 - rtol)): then |an - fd| >= |fd| exceeds the bound. Every tensor
 * must have at least one such significant comparison, so a tensor whose gradient is
 * zeroed or negated always fails; test_fd_criterion shows it on lenet5 and resnet20.
 * h = 1e-3 (a unit step along the direction); rtol 5e-2, 1e-1 for resnet20 (19
 * convolutions with batch norm, many units near a kink). */
#define FD_DIRS 4   /* the gradient direction, two random ones, the largest entry */
#define FD_NOISE 2e-6

typedef enum { FD_REAL, FD_ZERO, FD_NEGATED } fd_mode_t;

/* Central difference of the loss along v (count entries of params from offset). */
static double fd_dir(model_t *m, const float *x, const int32_t *y, int B, size_t off, size_t count,
                     const float *v, float h, float *keep)
{
    float *p = m->params + off;
    memcpy(keep, p, count * sizeof(float));
    for (size_t i = 0; i < count; i++) p[i] = keep[i] + h * v[i];
    float lp = model_forward(m, x, y, B, 1);
    for (size_t i = 0; i < count; i++) p[i] = keep[i] - h * v[i];
    float lm = model_forward(m, x, y, B, 1);
    memcpy(p, keep, count * sizeof(float));
    return ((double)lp - (double)lm) / (2.0 * h);
}

/* Returns the number of tensors that fail (a bad comparison, or no significant one);
 * with FD_REAL it also fails the test, naming the first bad comparison. */
static int fd_check_mode(const char *name, int C, int H, int W, float h, double rtol, fd_mode_t mode)
{
    const int B = 2;
    model_t *m = make(name, B);
    size_t n = (size_t)B * C * H * W;
    float x[2 * 3 * 32 * 32];
    int32_t y[2] = { 3, 7 };
    rng_t r;
    rng_seed(&r, 5);
    for (size_t i = 0; i < n; i++) x[i] = rng_normal(&r);
    float loss = model_forward(m, x, y, B, 1);
    model_backward(m, x, y, B, 1.0f);
    float *v = malloc(m->nparams * sizeof(float)), *keep = malloc(m->nparams * sizeof(float));
    assert_non_null(v);
    assert_non_null(keep);
    double atol = FD_NOISE * fmax(1.0, fabs(loss)) / h, worst = 0;
    int checked = 0, bad_tensors = 0;
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *ti = &m->tensors[t];
        if (ti->is_buffer) continue;
        const float *g = m->grads + ti->offset;
        size_t big = 0;
        for (size_t i = 1; i < ti->count; i++)
            if (fabsf(g[i]) > fabsf(g[big])) big = i;
        int significant = 0, bad = 0;
        double gnorm = 0;
        for (size_t i = 0; i < ti->count; i++) gnorm += (double)g[i] * g[i];
        gnorm = sqrt(gnorm);
        for (int d = 0; d < FD_DIRS; d++) {
            /* unit directions: d = 0 along the backward pass's own gradient, 0 < d <
             * FD_DIRS - 1 random +-1/sqrt(count), the last the largest entry alone */
            double an = 0;
            for (size_t i = 0; i < ti->count; i++) {
                if (d == 0) v[i] = gnorm > 0 ? (float)(g[i] / gnorm) : (float)(1.0 / sqrt((double)ti->count));
                else if (d < FD_DIRS - 1) v[i] = (float)((rng_next(&r) & 1 ? 1.0 : -1.0) / sqrt((double)ti->count));
                else v[i] = i == big ? 1.0f : 0.0f;
                an += (double)v[i] * g[i];
            }
            double fd = fd_dir(m, x, y, B, ti->offset, ti->count, v, h, keep);
            if (mode == FD_ZERO) an = 0;
            if (mode == FD_NEGATED) an = -an;
            if (fabs(fd) > 2 * atol / (1 - rtol)) significant++;
            double e = fabs(an - fd) / (atol + rtol * fabs(fd));
            if (e > worst) worst = e;
            if (!(e <= 1.0)) {
                if (mode == FD_REAL && !bad)
                    fail_msg("%s %s (%s): backward %.6g, finite difference %.6g: |difference| %.3g > %.3g "
                             "(atol %.2g + rtol %.2g x |fd|)", name, ti->name,
                             d == 0 ? "along its gradient" : d < FD_DIRS - 1 ? "random direction" : "largest entry",
                             an, fd, fabs(an - fd),
                             atol + rtol * fabs(fd), atol, rtol);
                bad++;
            }
            checked++;
        }
        if (!significant && mode == FD_REAL)
            fail_msg("%s %s: no finite difference above the noise (%.2g): the check could not tell a "
                     "zero gradient from this one", name, ti->name, 2 * atol / (1 - rtol));
        if (bad || !significant) bad_tensors++;
    }
    if (mode == FD_REAL)
        print_message("%s: %d directional and single-entry differences, worst |an - fd| / bound = %.2f\n",
                      name, checked, worst);
    free(v);
    free(keep);
    model_free(m);
    return bad_tensors;
}

static void fd_check(const char *name, int C, int H, int W, float h, double rtol)
{
    assert_int_equal(fd_check_mode(name, C, H, W, h, rtol, FD_REAL), 0);
}

static void test_fd_mlp(void **state) { (void)state; fd_check("mlp", 1, 28, 28, 1e-3f, 5e-2); }
static void test_fd_lenet5(void **state) { (void)state; fd_check("lenet5", 1, 28, 28, 1e-3f, 5e-2); }
static void test_fd_cifar10_quick(void **state)
{
    (void)state;
    fd_check("cifar10_quick", 3, 32, 32, 1e-3f, 5e-2);
}
static void test_fd_resnet20(void **state) { (void)state; fd_check("resnet20", 3, 32, 32, 1e-3f, 1e-1); }

/* The criterion itself: with the backward pass replaced by zero or by its negation, every
 * tensor of the model fails (the old "relative OR absolute" check passed both wherever
 * the gradient was below its absolute tolerance). */
static void test_fd_criterion(void **state)
{
    (void)state;
    static const struct { const char *name; int C, H, W; float h; double rtol; } nets[] = {
        { "lenet5", 1, 28, 28, 1e-3f, 5e-2 }, { "resnet20", 3, 32, 32, 1e-3f, 1e-1 },
    };
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
        model_t *m = make(nets[i].name, 2);
        int tensors = 0;
        for (int t = 0; t < m->ntensors; t++) tensors += !m->tensors[t].is_buffer;
        model_free(m);
        for (fd_mode_t mode = FD_ZERO; mode <= FD_NEGATED; mode++) {
            int bad = fd_check_mode(nets[i].name, nets[i].C, nets[i].H, nets[i].W, nets[i].h, nets[i].rtol, mode);
            if (bad != tensors)
                fail_msg("%s: a %s gradient passed the check in %d of %d tensors", nets[i].name,
                         mode == FD_ZERO ? "zero" : "negated", tensors - bad, tensors);
        }
        print_message("%s: zero and negated gradients fail in all %d tensors\n", nets[i].name, tensors);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts),
        cmocka_unit_test(test_fd_mlp),
        cmocka_unit_test(test_fd_lenet5),
        cmocka_unit_test(test_fd_cifar10_quick),
        cmocka_unit_test(test_fd_resnet20),
        cmocka_unit_test(test_fd_criterion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
