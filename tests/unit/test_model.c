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

/* d(loss)/d(param) by central differences in float against the backward pass, for two
 * parameters of every tensor. This guards the wiring of the graph (a missing residual
 * branch or a wrong sign is a 100% error); precision is the per-op tests' job. In float
 * the difference is noisy: rounding of the loss (~2e-7) over 2h, and ReLU kinks crossed
 * within +-h. Small nets: h = 1e-2, pass if relative error < 5e-2 or absolute < 2e-3.
 * resnet20 (19 convolutions with batch norm, many units near a kink): h = 1e-3, pass if
 * relative < 1e-1 or absolute < 5e-3 (measured worst: conv1.weight 6% at h = 1e-3, which
 * shrinks as h does, the mark of a kink and not of a wrong gradient). */
static void fd_check(const char *name, int C, int H, int W, float h, double tol_rel, double tol_abs)
{
    const int B = 2;
    model_t *m = make(name, B);
    size_t n = (size_t)B * C * H * W;
    float x[2 * 3 * 32 * 32];
    int32_t y[2] = { 3, 7 };
    rng_t r;
    rng_seed(&r, 5);
    for (size_t i = 0; i < n; i++) x[i] = rng_normal(&r);
    model_forward(m, x, y, B, 1);
    model_backward(m, x, y, B, 1.0f);
    int checked = 0;
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *ti = &m->tensors[t];
        if (ti->is_buffer) continue;
        for (int k = 0; k < 2; k++) {
            size_t idx = ti->offset + (size_t)((k * 7919 + t * 31) % (int)ti->count);
            float keep = m->params[idx];
            /* Saving and restoring the running statistics keeps batch norm's buffers out
             * of the difference; the loss itself uses batch statistics in train mode. */
            m->params[idx] = keep + h;
            float lp = model_forward(m, x, y, B, 1);
            m->params[idx] = keep - h;
            float lm = model_forward(m, x, y, B, 1);
            m->params[idx] = keep;
            double fd = ((double)lp - (double)lm) / (2.0 * h), an = m->grads[idx];
            double err_abs = fabs(fd - an), err_rel = err_abs / fmax(fabs(fd), fabs(an));
            if (err_abs > tol_abs && err_rel > tol_rel)
                fail_msg("%s %s[%zu]: backward %.6g, finite difference %.6g", name, ti->name,
                         idx - ti->offset, an, fd);
            checked++;
        }
    }
    print_message("%s: %d parameters checked against finite differences\n", name, checked);
    model_free(m);
}

static void test_fd_mlp(void **state) { (void)state; fd_check("mlp", 1, 28, 28, 1e-2f, 5e-2, 2e-3); }
static void test_fd_lenet5(void **state) { (void)state; fd_check("lenet5", 1, 28, 28, 1e-2f, 5e-2, 2e-3); }
static void test_fd_cifar10_quick(void **state)
{
    (void)state;
    fd_check("cifar10_quick", 3, 32, 32, 1e-2f, 5e-2, 2e-3);
}
static void test_fd_resnet20(void **state) { (void)state; fd_check("resnet20", 3, 32, 32, 1e-3f, 1e-1, 5e-3); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts),
        cmocka_unit_test(test_fd_mlp),
        cmocka_unit_test(test_fd_lenet5),
        cmocka_unit_test(test_fd_cifar10_quick),
        cmocka_unit_test(test_fd_resnet20),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
