/* tests/unit/test_hclass.c - the daemon's host classes (coordinator/hclass.h, --policy
 * hetero|agnostic): hosts grouped by their measured speed into power-of-two buckets, the
 * same for the same profiles whatever their order; hosts with no profile in "unmeasured";
 * hosts not usable in none; each model's speed per class the mean of its profiles there.
 * Pure functions of the profiles: no Redis.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "hclass.h"

static const char *const hosts[] = {"a", "b", "c", "d", "e"};
static const int slots[] = {1, 2, 1, 1, 4};

/* a: the fastest; b at 0.8 (x1); c at a quarter for lenet5, 0.8 for mlp (mean ratio 0.45:
 * x1/2); d at 1/16 (x1/16); e: no profile (unmeasured). */
static const hclass_profile_t profiles[] = {
    {"a", "lenet5", 1000}, {"b", "lenet5", 800}, {"c", "lenet5", 250},
    {"d", "lenet5", 62.5}, {"a", "mlp", 1000},   {"c", "mlp", 800},
};
#define NP ((int)(sizeof profiles / sizeof profiles[0]))

/* One grouping of the five hosts: each one's class, and the classes. */
typedef struct {
    int nc, cls[5];
    policy_class_t classes[POLICY_CLASSES_MAX];
    char names[POLICY_CLASSES_MAX][HCLASS_NAME_MAX];
} grouping_t;

static void group(const hclass_profile_t *p, int np, const int *usable, grouping_t *g)
{
    g->nc = hclass_group(p, np, hosts, slots, usable, 5, g->cls, g->classes, g->names);
}

static void test_buckets(void **state)
{
    (void)state;
    int usable[] = {1, 1, 1, 1, 1};
    grouping_t g, g2;
    group(profiles, NP, usable, &g);
    policy_class_t *classes = g.classes;
    int *cls = g.cls;
    assert_int_equal(g.nc, 4);
    assert_string_equal(classes[0].name, "x1");
    assert_int_equal(classes[0].slots, 3);
    assert_string_equal(classes[1].name, "x1/2");
    assert_int_equal(classes[1].slots, 1);
    assert_string_equal(classes[2].name, "x1/16");
    assert_string_equal(classes[3].name, "unmeasured");
    assert_int_equal(classes[3].slots, 4);
    int want[] = {0, 0, 1, 2, 3};
    for (int i = 0; i < 5; i++) assert_int_equal(cls[i], want[i]);
    /* speeds: the mean of a class's profiles; none there: 0 (policy_speed estimates it) */
    assert_true(hclass_speed(profiles, NP, hosts, cls, 5, "lenet5", 0) == 900);
    assert_true(hclass_speed(profiles, NP, hosts, cls, 5, "mlp", 1) == 800);
    assert_true(hclass_speed(profiles, NP, hosts, cls, 5, "mlp", 2) == 0);
    assert_true(hclass_speed(profiles, NP, hosts, cls, 5, "resnet20", 0) == 0);
    /* the same classes whatever the profiles' order */
    hclass_profile_t rev[NP];
    for (int i = 0; i < NP; i++) rev[i] = profiles[NP - 1 - i];
    group(rev, NP, usable, &g2);
    assert_int_equal(g2.nc, 4);
    assert_memory_equal(g.cls, g2.cls, sizeof g.cls);
}

static void test_not_usable(void **state)
{
    (void)state;
    /* a down: the fastest usable is b, which becomes the reference; d is not usable either */
    int usable[] = {0, 1, 1, 0, 0};
    grouping_t g;
    group(profiles, NP, usable, &g);
    int *cls = g.cls;
    assert_int_equal(g.nc, 2);
    assert_int_equal(cls[0], -1);
    assert_int_equal(cls[1], 0);
    assert_int_equal(cls[2], 1);
    assert_int_equal(cls[3], -1);
    assert_int_equal(cls[4], -1);
    /* no usable host: no class */
    int none[] = {0, 0, 0, 0, 0};
    group(profiles, NP, none, &g);
    assert_int_equal(g.nc, 0);
    /* no profile at all: one class, every host unmeasured */
    group(NULL, 0, usable, &g);
    assert_int_equal(g.nc, 1);
    assert_string_equal(g.classes[0].name, "unmeasured");
    assert_int_equal(g.classes[0].slots, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_not_usable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
