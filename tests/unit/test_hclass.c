/* tests/unit/test_hclass.c - the daemon's host classes (coordinator/hclass.h, --policy
 * hetero|agnostic): hosts grouped by their measured speed into power-of-two buckets, the
 * same for the same profiles whatever their order; hosts with no profile in "unmeasured";
 * hosts not usable in none; each model's speed per class the mean of its profiles there.
 * Pure functions of the profiles: no Redis. And the daemon's mapping of the policy's
 * decisions to actions (run.c, hplan_apply): what kind of change a running job's new
 * allocation is, the world cap its relaunch runs under, and which hosts it runs on (those it
 * keeps first), from policy_plan's answers on small scripted clusters.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
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

/* policy_plan on one class of three 1-slot hosts, then run.c's mapping of its answer. */
#define NOW 10000.0
typedef struct {
    policy_class_t cl[2];
    double speed[2];
    policy_hetero_t h;
    policy_state_t s;
    policy_decision_t d[1];
    policy_resize_t rz[1];
    int nrz;
} round_t;

static int plan(round_t *r, const policy_running_t *run, const policy_hjob_t *hr, const policy_queued_t *q,
                const policy_hjob_t *hq, int nq)
{
    int nslots = r->cl[0].slots + r->cl[1].slots;
    r->h = (policy_hetero_t){.classes = r->cl,
                             .nclasses = r->cl[1].slots ? 2 : 1,
                             .ntypes = 1,
                             .speed = r->speed,
                             .running = hr,
                             .queued = hq,
                             .min_run_s = 600,
                             .resize_cost_s = 30,
                             .hysteresis = 0.05};
    r->s = (policy_state_t){.now = NOW,
                            .slots_total = nslots,
                            .slots_usable = nslots,
                            .running = run,
                            .nrunning = 1,
                            .queued = q,
                            .nqueued = nq,
                            .preempt_min_run_s = -1,
                            .hetero = &r->h};
    return policy_plan(POLICY_HETERO, &r->s, r->d, r->rz, &r->nrz);
}

static void test_plan_to_action(void **state)
{
    (void)state;
    round_t r = {.cl = {{"x1", 3}, {"x1/2", 0}}, .speed = {100, 0}};
    const int cls[] = {0, 0, 0};
    int take[3], cap;
    policy_running_t lo = {"j-4", 3, 0, -1, 0, NOW - 1000};
    policy_queued_t q = {"j-5", 1, 1, 0, 0, 0, NULL, 0};
    policy_hjob_t hq = {.min_slots = 1, .want = 1};
    /* j-4, elastic (1..3 ranks) on all three hosts past its minimum run: shrunk to admit j-5 */
    policy_hjob_t hr = {.elastic = 1, .min_slots = 1, .want = 3, .alloc = {3}, .changed = NOW - 1000};
    assert_int_equal(plan(&r, &lo, &hr, &q, &hq, 1), 1);
    assert_int_equal(r.nrz, 1);
    assert_string_equal(r.rz[0].reason, "shrunk from 3 x1 to 2 x1 slots to admit j-5 (hetero)");
    assert_int_equal(hclass_change(hr.alloc, r.rz[0].alloc, 1, 3, &cap), HCLASS_SHRINK);
    assert_int_equal(cap, 2);
    int fr[] = {0, 0, 0};
    assert_int_equal(hclass_pick_hosts(cls, (const int[]){1, 1, 1}, fr, 3, r.rz[0].alloc, 1, take), 2);
    assert_memory_equal(take, ((const int[]){1, 1, 0}), sizeof take);
    /* the host it gives up is where j-5 goes */
    fr[2] = 1;
    assert_int_equal(hclass_pick_hosts(cls, NULL, fr, 3, r.d[0].alloc, 1, take), 1);
    assert_memory_equal(take, ((const int[]){0, 0, 1}), sizeof take);
    /* without a checkpoint the daemon pins it (changed never old enough): j-5 waits */
    hr.changed = HUGE_VAL;
    assert_int_equal(plan(&r, &lo, &hr, &q, &hq, 1), 0);
    assert_int_equal(r.nrz, 0);
    /* j-5 has ended: j-4, on two hosts since long enough, grows back onto the third */
    policy_hjob_t shrunk = {.elastic = 1, .min_slots = 1, .want = 3, .alloc = {2}, .changed = NOW - 1000};
    lo.slots = 2;
    assert_int_equal(plan(&r, &lo, &shrunk, NULL, NULL, 0), 0);
    assert_int_equal(r.nrz, 1);
    assert_string_equal(r.rz[0].reason, "grown from 2 x1 to 3 x1 slots: slots free (hetero)");
    assert_int_equal(hclass_change(shrunk.alloc, r.rz[0].alloc, 1, 3, &cap), HCLASS_GROW);
    assert_int_equal(cap, 0);
    assert_int_equal(hclass_pick_hosts(cls, (const int[]){1, 1, 0}, fr, 3, r.rz[0].alloc, 1, take), 3);
    /* but not before its minimum run time since its last change */
    shrunk.changed = NOW - 10;
    assert_int_equal(plan(&r, &lo, &shrunk, NULL, NULL, 0), 0);
    assert_int_equal(r.nrz, 0);
}

/* A 1-rank job on the slow class while the fast one (4x for its type) is free: moved. */
static void test_plan_move(void **state)
{
    (void)state;
    round_t r = {.cl = {{"x1", 1}, {"x1/2", 1}}, .speed = {400, 100}};
    const int cls[] = {0, 1}, own[] = {0, 1}, fr[] = {1, 0};
    int take[2], cap;
    policy_running_t run = {"j-7", 1, 0, -1, 0, NOW - 1000};
    policy_hjob_t hr = {.min_slots = 1, .want = 1, .alloc = {0, 1}, .changed = NOW - 1000};
    assert_int_equal(plan(&r, &run, &hr, NULL, NULL, 0), 0);
    assert_int_equal(r.nrz, 1);
    assert_string_equal(r.rz[0].reason, "moved from 1 x1/2 to 1 x1 slots: 4.00x its speed on 1 slot of its slowest "
                                        "class, was 1.00x (hetero)");
    assert_int_equal(hclass_change(hr.alloc, r.rz[0].alloc, 2, 1, &cap), HCLASS_MOVE);
    assert_int_equal(cap, 0);
    assert_int_equal(hclass_pick_hosts(cls, own, fr, 2, r.rz[0].alloc, 2, take), 1);
    assert_memory_equal(take, ((const int[]){1, 0}), sizeof take);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets),    cmocka_unit_test(test_not_usable),     cmocka_unit_test(test_change),
        cmocka_unit_test(test_pick_hosts), cmocka_unit_test(test_plan_to_action), cmocka_unit_test(test_plan_move),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
