/* tests/unit/test_hclass.c - the daemon's host classes (coordinator/hclass.h, --policy
 * hetero|agnostic): hosts grouped by their measured speed into power-of-two buckets, the
 * same for the same profiles whatever their order; hosts with no profile in "unmeasured";
 * hosts not usable in none; each model's speed per class the mean of its profiles there.
 * Pure functions of the profiles: no Redis. And the daemon's actions for the policy's
 * changes of a running job (run.c, hplan_apply): what kind of change a new allocation is,
 * the world cap its relaunch runs under, and which hosts it runs on (those it keeps first);
 * test_policy_classes maps policy_plan's answers through them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
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

/* A profile read from Redis (HMGET's reply): its fields are strings the reply's lengths
 * bound, with NULs possibly inside; one that reads as an empty host or model is skipped
 * (fuzz_redis found a host of "\0|u" taken as ""), one with a NUL later is cut there. */
static void test_parse_profile(void **state)
{
    (void)state;
    redisReply f[3] = {{.type = REDIS_REPLY_STRING, .str = "\0|u", .len = 3},
                       {.type = REDIS_REPLY_STRING, .str = "lenet5", .len = 6},
                       {.type = REDIS_REPLY_STRING, .str = "1500.5", .len = 6}};
    redisReply *el[3] = {&f[0], &f[1], &f[2]};
    const redisReply r = {.type = REDIS_REPLY_ARRAY, .elements = 3, .element = el};
    hclass_profile_t p;
    assert_int_equal(hclass_parse_profile(&r, &p), 0); /* host "" */
    f[0].str = "h\0|u";
    assert_int_equal(hclass_parse_profile(&r, &p), 1);
    assert_string_equal(p.host, "h");
    assert_string_equal(p.model, "lenet5");
    assert_true(p.samples_per_s == 1500.5);
    f[1].str = "\0enet5";
    assert_int_equal(hclass_parse_profile(&r, &p), 0); /* model "" */
    assert_true(p.samples_per_s == 0);
    f[1].str = "lenet5";
    f[2].str = "1e999x";
    assert_int_equal(hclass_parse_profile(&r, &p), 0); /* not a finite number */
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

static void test_change(void **state)
{
    (void)state;
    int cap = -1;
    const int three[] = {3, 0}, two[] = {2, 0}, moved[] = {1, 1};
    assert_int_equal(hclass_change(three, three, 2, 3, &cap), HCLASS_KEEP);
    assert_int_equal(cap, 0);
    assert_int_equal(hclass_change(three, two, 2, 3, &cap), HCLASS_SHRINK);
    assert_int_equal(cap, 2); /* its relaunch runs 2 of its 3 ranks */
    assert_int_equal(hclass_change(two, three, 2, 3, &cap), HCLASS_GROW);
    assert_int_equal(cap, 0); /* back to its full world: no cap */
    assert_int_equal(hclass_change(two, moved, 2, 3, &cap), HCLASS_MOVE);
    assert_int_equal(cap, 2);
    assert_string_equal(hclass_change_name(HCLASS_MOVE), "move");
    /* issue 46: a spec of 2 workers grown onto 3 slots runs 3 ranks; at or below its ask the
     * cap (or none) applies, so the take-back 3 -> 2 clears the grow */
    assert_int_equal(hclass_grown_world(three, 2, 2), 3);
    assert_int_equal(hclass_grown_world(two, 2, 2), 0);
    assert_int_equal(hclass_grown_world(moved, 2, 3), 0);
    assert_int_equal(hclass_change(three, two, 2, 2, &cap), HCLASS_SHRINK);
    assert_int_equal(cap, 0); /* back at its ask: no cap */
}

static void test_pick_hosts(void **state)
{
    (void)state;
    /* hosts 0..3 in class 0 with 1, 2, 1, 1 slots, host 4 not usable; the job holds host 2
     * (1 slot) and host 1 (1 of its 2); host 0 and host 1's other slot are free */
    const int cls[] = {0, 0, 0, 0, -1}, own[] = {0, 1, 1, 0, 0}, fr[] = {1, 1, 0, 0, 4};
    int take[5];
    /* a shrink to 1 keeps its first own host */
    assert_int_equal(hclass_pick_hosts(cls, own, fr, 5, (const int[]){1}, 1, take), 1);
    assert_memory_equal(take, ((const int[]){0, 1, 0, 0, 0}), sizeof take);
    /* a grow to 4: its own hosts (host 1 with its free slot), then host 0 */
    assert_int_equal(hclass_pick_hosts(cls, own, fr, 5, (const int[]){4}, 1, take), 3);
    assert_memory_equal(take, ((const int[]){1, 2, 1, 0, 0}), sizeof take);
    /* more than there is (host 4 is not usable): nothing */
    assert_int_equal(hclass_pick_hosts(cls, own, fr, 5, (const int[]){5}, 1, take), -1);
    /* a job not started yet takes free slots only */
    assert_int_equal(hclass_pick_hosts(cls, NULL, fr, 5, (const int[]){2}, 1, take), 2);
    assert_memory_equal(take, ((const int[]){1, 1, 0, 0, 0}), sizeof take);
}

/* The simulator's cluster file from the same profiles, every host counted: x1 (a: 1 slot,
 * b: 2) written as three 1-slot hosts, x1/2 and x1/16 one host each, unmeasured (e) one
 * 4-slot host; each model's speeds the mean over its class's profiles (x1: lenet5 900), a
 * class with none absent; a model whose name the simulator cannot take is left out, said. */
static void test_cluster_json(void **state)
{
    (void)state;
    hclass_profile_t p[NP + 1];
    memcpy(p, profiles, sizeof profiles);
    p[NP] = (hclass_profile_t){"a", "a-model-name-longer-than-31-bytes", 5};
    json_t *j = hclass_cluster_json(p, NP + 1, hosts, slots, 5);
    assert_non_null(j);
    char *txt = json_dumps(json_object_get(j, "cluster"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(txt, "{\"classes\":[{\"hosts\":3,\"name\":\"x1\",\"slots\":1},{\"hosts\":1,\"name\":\"x1/"
                             "2\",\"slots\":1},{\"hosts\":1,\"name\":\"x1/16\",\"slots\":1},{\"hosts\":1,\"name\":"
                             "\"unmeasured\",\"slots\":4}],\"speeds\":{\"lenet5\":{\"x1\":900.0,\"x1/16\":62.5,\"x1/"
                             "2\":250.0},\"mlp\":{\"x1\":1000.0,\"x1/2\":800.0}}}");
    free(txt);
    txt = json_dumps(json_object_get(j, "hosts_by_class"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(txt, "{\"unmeasured\":[\"e\"],\"x1\":[\"a\",\"b\"],\"x1/16\":[\"d\"],\"x1/2\":[\"c\"]}");
    free(txt);
    txt = json_dumps(json_object_get(j, "left_out"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(txt,
                        "[{\"model\":\"a-model-name-longer-than-31-bytes\",\"why\":\"a name longer than 31 bytes\"}]");
    free(txt);
    json_decref(j);
}

/* A job's work for hetero's order (policy_hjob_t.work): epochs over its training set, the
 * catalog's count or train_subset; 0 (unknown) for a data set the catalog does not count. */
static void test_job_work(void **state)
{
    (void)state;
    static job_spec_t spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.dataset.name, sizeof spec.dataset.name, "fashion-mnist");
    spec.epochs = 3;
    assert_true(hclass_job_work(&spec) == 3 * 60000.0);
    spec.dataset.train_subset = 512;
    assert_true(hclass_job_work(&spec) == 3 * 512.0);
    snprintf(spec.dataset.name, sizeof spec.dataset.name, "no-such-set");
    assert_true(hclass_job_work(&spec) == 0);
    assert_true(hclass_job_work(NULL) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_profile), cmocka_unit_test(test_buckets),    cmocka_unit_test(test_not_usable),
        cmocka_unit_test(test_change),        cmocka_unit_test(test_pick_hosts), cmocka_unit_test(test_cluster_json),
        cmocka_unit_test(test_job_work),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
