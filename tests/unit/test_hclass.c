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

static void test_buckets(void **state)
{
    (void)state;
    int usable[] = {1, 1, 1, 1, 1}, cls[5];
    policy_class_t classes[POLICY_CLASSES_MAX];
    char names[POLICY_CLASSES_MAX][HCLASS_NAME_MAX];
    int nc = hclass_group(profiles, NP, hosts, slots, usable, 5, cls, classes, names);
    assert_int_equal(nc, 4);
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
    int cls2[5];
    assert_int_equal(hclass_group(rev, NP, hosts, slots, usable, 5, cls2, classes, names), 4);
    assert_memory_equal(cls, cls2, sizeof cls);
}

static void test_not_usable(void **state)
{
    (void)state;
    /* a down: the fastest usable is b, which becomes the reference; d is not usable either */
    int usable[] = {0, 1, 1, 0, 0}, cls[5];
    policy_class_t classes[POLICY_CLASSES_MAX];
    char names[POLICY_CLASSES_MAX][HCLASS_NAME_MAX];
    int nc = hclass_group(profiles, NP, hosts, slots, usable, 5, cls, classes, names);
    assert_int_equal(nc, 2);
    assert_int_equal(cls[0], -1);
    assert_int_equal(cls[1], 0);
    assert_int_equal(cls[2], 1);
    assert_int_equal(cls[3], -1);
    assert_int_equal(cls[4], -1);
    /* no usable host: no class */
    int none[] = {0, 0, 0, 0, 0};
    assert_int_equal(hclass_group(profiles, NP, hosts, slots, none, 5, cls, classes, names), 0);
    /* no profile at all: one class, every host unmeasured */
    assert_int_equal(hclass_group(NULL, 0, hosts, slots, usable, 5, cls, classes, names), 1);
    assert_string_equal(classes[0].name, "unmeasured");
    assert_int_equal(classes[0].slots, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_not_usable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
