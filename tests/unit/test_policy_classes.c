/* tests/unit/test_policy_classes.c - the class-aware policies (coordinator/policy.h, "Host
 * classes"; coordinator/policy_classes.c) on small scripted clusters: hetero places a job on
 * the class where it gains most while agnostic and fair take classes first-fit; an elastic
 * job is shrunk to admit a high-priority one and grown back once the slots free, but never
 * before its minimum run time (hysteresis); one may grow past its ask onto idle slots and
 * gives those back first when a job waits; an unmeasured speed is estimated from the
 * other types' class ratios; a trace's elastic flag and a spec's min_workers give the same
 * bounds (policy_hjob_bounds) and decisions. And the daemon's mapping of policy_plan's answers to actions
 * (run.c, hplan_apply; coordinator/hclass.h): the change's kind, the world cap of its
 * relaunch, the hosts it keeps first. No Redis, no clock: pure functions of their snapshots.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "hclass.h"
#include "policy.h"

#define NOW 10000.0

/* Two classes of 2 slots; type 0 ("conv") runs 4x faster on fast, type 1 ("rl") 1.2x. */
static const policy_class_t two_classes[] = {{"fast", 2}, {"slow", 2}};
static const double two_speeds[] = {400, 100, 120, 100};

/* One scripted round: the cluster, the jobs, and room for policy_plan's answers. */
typedef struct {
    policy_hetero_t h;
    policy_state_t s;
    policy_decision_t d[4];
    policy_resize_t rz[4];
    int nrz;
} scene_t;

static void scene(scene_t *sc, const policy_class_t *cl, int ncl, const double *speed, int ntypes,
                  const policy_running_t *run, const policy_hjob_t *hr, int nrun, const policy_queued_t *q,
                  const policy_hjob_t *hq, int nq)
{
    int slots = 0;
    for (int c = 0; c < ncl; c++) slots += cl[c].slots;
    sc->h = (policy_hetero_t){.classes = cl,
                              .nclasses = ncl,
                              .ntypes = ntypes,
                              .speed = speed,
                              .running = hr,
                              .queued = hq,
                              .min_run_s = 600,
                              .resize_cost_s = 30,
                              .hysteresis = 0.05};
    sc->s = (policy_state_t){.now = NOW,
                             .slots_total = slots,
                             .slots_usable = slots,
                             .running = run,
                             .nrunning = nrun,
                             .queued = q,
                             .nqueued = nq,
                             .preempt_min_run_s = -1,
                             .hetero = &sc->h};
    sc->nrz = -1;
}

static int plan(scene_t *sc, policy_kind_t k) { return policy_plan(k, &sc->s, sc->d, sc->rz, &sc->nrz); }

/* The rl job arrived first. agnostic (and fair) give it the fast slots, first-fit; hetero
 * gives them to the conv job, which gains 4x there against rl's 1.2x, and says so. */
static void test_placed_where_it_gains_most(void **unused)
{
    (void)unused;
    policy_queued_t q[] = {{"rl", 2, 2, 0, 0, 0, NULL, 0}, {"conv", 2, 2, 0, 0, 0, NULL, 0}};
    policy_hjob_t hq[] = {{.type = 1, .min_slots = 2, .want = 2}, {.type = 0, .min_slots = 2, .want = 2}};
    scene_t sc;
    scene(&sc, two_classes, 2, two_speeds, 2, NULL, NULL, 0, q, hq, 2);
    assert_int_equal(plan(&sc, POLICY_AGNOSTIC), 2);
    assert_int_equal(sc.nrz, 0);
    assert_int_equal(sc.d[0].alloc[0], 2);
    assert_int_equal(sc.d[1].alloc[1], 2);
    assert_int_equal(plan(&sc, POLICY_FAIR), 2);
    assert_int_equal(sc.d[0].alloc[0], 2);
    assert_string_equal(sc.d[0].placement, "placed on 2 fast slots: first fit, every slot alike (fair)");
    assert_int_equal(plan(&sc, POLICY_HETERO), 2);
    assert_int_equal(sc.d[0].alloc[1], 2);
    assert_int_equal(sc.d[1].alloc[0], 2);
    assert_int_equal(sc.d[1].world, 2);
    assert_string_equal(sc.d[1].placement,
                        "placed on 2 fast slots: 4.00x its speed on 2 slots of its slowest class (hetero)");
    assert_string_equal(sc.d[0].placement,
                        "placed on 2 slow slots: 1.00x its speed on 2 slots of its slowest class (hetero)");
}

/* A 3-slot job of the conv type spans classes when one class has too few: 2 fast + 1 slow. */
static void test_spans_classes(void **unused)
{
    (void)unused;
    policy_queued_t q[] = {{"big", 3, 3, 0, 0, 0, NULL, 0}};
    policy_hjob_t hq[] = {{.type = 0, .min_slots = 3, .want = 3}};
    scene_t sc;
    scene(&sc, two_classes, 2, two_speeds, 2, NULL, NULL, 0, q, hq, 1);
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_string_equal(sc.d[0].placement,
                        "placed on 2 fast + 1 slow slots: 3.00x its speed on 3 slots of its slowest class (hetero)");
}

/* One class of 4 slots. An elastic normal-priority job holds all 4; a high-priority 2-slot
 * job arrives: before the elastic job's minimum run time nothing changes (it waits), after
 * it the elastic job is shrunk to 2 and the high one starts; once the high one has gone and
 * the shrunk job's own minimum run time has passed, it grows back to 4. */
static void test_shrink_to_admit_then_grow_back(void **unused)
{
    (void)unused;
    static const policy_class_t one[] = {{"fast", 4}};
    static const double sp[] = {100};
    policy_running_t run[] = {{"elastic", 4, 0, -1, POLICY_PRIO_NORMAL, NOW - 100}};
    policy_hjob_t hr[] = {{.type = 0, .elastic = 1, .min_slots = 1, .want = 4, .alloc = {4}, .changed = NOW - 100}};
    policy_queued_t q[] = {{"urgent", 2, 2, 0, 0, POLICY_PRIO_HIGH, NULL, 0}};
    policy_hjob_t hq[] = {{.type = 0, .min_slots = 2, .want = 2}};
    scene_t sc;
    scene(&sc, one, 1, sp, 1, run, hr, 1, q, hq, 1);
    /* 100 s into a 600 s minimum run: no resize, the urgent job waits for slots */
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    assert_int_equal(sc.nrz, 0);
    assert_int_equal(sc.d[0].start, 0);
    assert_string_equal(policy_reason_name(sc.d[0].reason), "slots");
    /* past it: shrunk to 2, and the urgent job gets the other 2 */
    hr[0].changed = NOW - 700;
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_int_equal(sc.nrz, 1);
    assert_int_equal(sc.rz[0].running, 0);
    assert_int_equal(sc.rz[0].alloc[0], 2);
    assert_string_equal(sc.rz[0].reason, "shrunk from 4 fast to 2 fast slots to admit urgent (hetero)");
    assert_int_equal(sc.d[0].start, 1);
    assert_int_equal(sc.d[0].alloc[0], 2);
    /* the urgent job has gone; the elastic one was shrunk 100 s ago: it keeps its 2 */
    hr[0].alloc[0] = 2;
    hr[0].changed = NOW - 100;
    run[0].slots = 2;
    sc.s.nqueued = 0;
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    assert_int_equal(sc.nrz, 0);
    /* 700 s after the shrink: grown back to 4 */
    hr[0].changed = NOW - 700;
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    assert_int_equal(sc.nrz, 1);
    assert_int_equal(sc.rz[0].alloc[0], 4);
    assert_string_equal(sc.rz[0].reason, "grown from 2 fast to 4 fast slots: slots free (hetero)");
}

/* The daemon and the simulator feed the policy one rule (policy_hjob_bounds): a trace's
 * "elastic": true job (least 1) is a spec's min_workers 1, "elastic": false (least = most =
 * want) a spec's min_workers = max_workers = workers; they give the policy the jobs the
 * simulator made by hand before, and the same decisions. One class of 3 slots, a rigid job
 * holding 2: a queued elastic 2-worker job starts on the free slot, a rigid one waits. */
static void test_trace_elastic_is_spec_bounds(void **unused)
{
    (void)unused;
    static const policy_class_t one[] = {{"fast", 3}};
    static const double sp[] = {100};
    /* as sched_sim.c made them: elastic {1, min 1, want 2, max 2}; rigid {0, 2, 2, 2} */
    const policy_hjob_t by_hand[2] = {{.type = 0, .elastic = 1, .min_slots = 1, .want = 2, .max_slots = 2},
                                      {.type = 0, .elastic = 0, .min_slots = 2, .want = 2, .max_slots = 2}};
    for (int e = 0; e < 2; e++) {
        int least = e == 0 ? 1 : 2; /* min_workers: 1 (elastic) or workers (rigid) */
        policy_hjob_t hq[1] = {{.type = 0, .min_slots = 2, .want = 2, .max_slots = 2}};
        policy_hjob_bounds(&hq[0], 2, least, 2, 3, 3);
        assert_int_equal(hq[0].elastic, by_hand[e].elastic);
        assert_int_equal(hq[0].min_slots, by_hand[e].min_slots);
        assert_int_equal(hq[0].want, by_hand[e].want);
        assert_int_equal(hq[0].max_slots, by_hand[e].max_slots);
        policy_running_t run[] = {{"rigid", 2, 0, -1, POLICY_PRIO_NORMAL, NOW - 700}};
        policy_hjob_t hr[] = {{.type = 0, .min_slots = 2, .want = 2, .alloc = {2}, .changed = NOW - 700}};
        policy_hjob_bounds(&hr[0], 2, 2, 2, 3, 2);
        assert_int_equal(hr[0].elastic, 0);
        policy_queued_t q[] = {{"next", 2, hq[0].min_slots, 0, 0, POLICY_PRIO_NORMAL, NULL, 0}};
        scene_t sc, hand;
        scene(&sc, one, 1, sp, 1, run, hr, 1, q, hq, 1);
        scene(&hand, one, 1, sp, 1, run, hr, 1, q, &by_hand[e], 1);
        assert_int_equal(plan(&sc, POLICY_HETERO), e == 0 ? 1 : 0);
        assert_int_equal(plan(&hand, POLICY_HETERO), e == 0 ? 1 : 0);
        assert_int_equal(sc.nrz, 0);
        assert_int_equal(sc.d[0].start, hand.d[0].start);
        assert_int_equal(sc.d[0].world, hand.d[0].world);
        assert_string_equal(sc.d[0].placement, hand.d[0].placement);
        if (e == 0) {
            assert_int_equal(sc.d[0].world, 1);
            assert_int_equal(sc.d[0].alloc[0], 1);
            assert_string_equal(sc.d[0].placement,
                                "placed on 1 fast slots: 1.00x its speed on 1 slot of its slowest class (hetero)");
        } else {
            assert_string_equal(policy_reason_name(sc.d[0].reason), "slots");
        }
    }
    /* growth alone makes a job elastic (min_workers = workers, max_workers above them), and
     * the bounds are capped at the usable slots (a running job's floor at what it holds) */
    policy_hjob_t g = {.min_slots = 2, .want = 2};
    policy_hjob_bounds(&g, 2, 2, 5, 4, 4);
    assert_int_equal(g.elastic, 1);
    assert_int_equal(g.min_slots, 2);
    assert_int_equal(g.max_slots, 4);
    policy_hjob_bounds(&g, 6, 1, 6, 4, 3);
    assert_int_equal(g.want, 4);
    assert_int_equal(g.min_slots, 1);
}

/* A running rl job holds the fast slots (placed first-fit); a conv job arrives wanting 2:
 * hetero moves rl to the slow slots and gives conv the fast ones, once rl may move. */
static void test_move_when_it_pays(void **unused)
{
    (void)unused;
    policy_running_t run[] = {{"rl", 2, 0, -1, 0, NOW - 700}};
    policy_hjob_t hr[] = {{.type = 1, .min_slots = 2, .want = 2, .alloc = {2, 0}, .changed = NOW - 700}};
    policy_queued_t q[] = {{"conv", 2, 2, 0, 0, 0, NULL, 0}};
    policy_hjob_t hq[] = {{.type = 0, .min_slots = 2, .want = 2}};
    scene_t sc;
    scene(&sc, two_classes, 2, two_speeds, 2, run, hr, 1, q, hq, 1);
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_int_equal(sc.nrz, 1);
    assert_int_equal(sc.rz[0].alloc[1], 2);
    assert_int_equal(sc.d[0].alloc[0], 2);
    assert_non_null(strstr(sc.rz[0].reason, "moved from 2 fast to 2 slow slots"));
    /* within rl's minimum run time it stays; conv takes the slow slots */
    hr[0].changed = NOW - 100;
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_int_equal(sc.nrz, 0);
    assert_int_equal(sc.d[0].alloc[1], 2);
    /* agnostic never moves a job */
    hr[0].changed = NOW - 700;
    assert_int_equal(plan(&sc, POLICY_AGNOSTIC), 1);
    assert_int_equal(sc.nrz, 0);
}

/* Two running trials of one search, one slot each, same type, works unknown: t0 (a first
 * rung trial) got a fast slot first, t1 (promoted twice, worth rf^2 = 9) a slow one. With
 * worths hetero swaps them: the promoted trial is the one the fast slot is worth most to;
 * without worths (or under agnostic) nothing moves, the two being alike. */
static void test_promoted_trial_takes_fast_slot(void **unused)
{
    (void)unused;
    static const policy_class_t one_each[] = {{"fast", 1}, {"slow", 1}};
    policy_running_t run[] = {{"t0", 1, 0, -1, 0, NOW - 700}, {"t1", 1, 0, -1, 0, NOW - 700}};
    policy_hjob_t hr[] = {{.type = 0, .min_slots = 1, .want = 1, .alloc = {1, 0}, .changed = NOW - 700, .worth = 1},
                          {.type = 0, .min_slots = 1, .want = 1, .alloc = {0, 1}, .changed = NOW - 700, .worth = 9}};
    scene_t sc;
    scene(&sc, one_each, 2, two_speeds, 2, run, hr, 2, NULL, NULL, 0);
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    assert_int_equal(sc.nrz, 2);
    for (int r = 0; r < 2; r++) {
        int who = sc.rz[r].running;
        assert_int_equal(sc.rz[r].alloc[0], who == 1 ? 1 : 0);
        assert_int_equal(sc.rz[r].alloc[1], who == 1 ? 0 : 1);
    }
    assert_int_equal(plan(&sc, POLICY_AGNOSTIC), 0);
    assert_int_equal(sc.nrz, 0);
    hr[1].worth = 0;
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    assert_int_equal(sc.nrz, 0);
}

/* One 1-slot class, two queued jobs of one type (100 samples/s): a 10 h one submitted an
 * hour ago and a 10 min one submitted 5 min ago. With both works known hetero admits the
 * higher response ratio, (waited + run) / run: the short job's 1.50 over the long one's 1.10,
 * and says so; the long one's grows as it waits (10 h waited: 2.00, first again); a higher
 * priority still goes first; one unknown work and the order is fair's (arrival here). */
static void test_response_ratio_admission(void **unused)
{
    (void)unused;
    static const policy_class_t one[] = {{"x1", 1}};
    static const double sp[] = {100};
    policy_queued_t q[] = {{"long", 1, 1, 0, 0, 0, NULL, 0}, {"short", 1, 1, 0, 0, 0, NULL, 0}};
    policy_hjob_t hq[] = {{.min_slots = 1, .want = 1, .work = 100 * 36000.0, .submitted = NOW - 3600},
                          {.min_slots = 1, .want = 1, .work = 100 * 600.0, .submitted = NOW - 300}};
    scene_t sc;
    scene(&sc, one, 1, sp, 1, NULL, NULL, 0, q, hq, 2);
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_int_equal(sc.d[1].start, 1);
    assert_int_equal(sc.d[0].start, 0);
    assert_string_equal(policy_reason_name(sc.d[0].reason), "slots");
    assert_string_equal(sc.d[0].detail,
                        "overtaken by short, submitted later: its response ratio is 1.50 against 1.10 (hetero); start "
                        "not estimated: short has measured no progress yet");
    /* agnostic admits alike (only the placement is blind to classes) */
    assert_int_equal(plan(&sc, POLICY_AGNOSTIC), 1);
    assert_int_equal(sc.d[1].start, 1);
    hq[0].submitted = NOW - 36000;
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_int_equal(sc.d[0].start, 1);
    hq[0].submitted = NOW - 3600;
    q[0].priority = POLICY_PRIO_HIGH;
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_int_equal(sc.d[0].start, 1);
    q[0].priority = POLICY_PRIO_NORMAL;
    hq[1].work = NAN;
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_int_equal(sc.d[0].start, 1);
    assert_string_equal(sc.d[1].detail, "waits for 1 slot: 0 of 1 free; start not estimated: long has measured no "
                                        "progress yet");
}

/* Shortest remaining first on the fastest: a long job of the conv type (4x on fast) holds
 * the fast slot, past its minimum run; a short one of the same type arrives. With both works
 * known hetero's objective is the sum of completion rates: the long job moves to the slow
 * slot and the short one takes the fast one (it finishes 4x sooner; the long one is slowed
 * for that while, then can move back). Without the works every job weighs 1: no gain in
 * exchanging two slots of one type, nothing moves. */
static void test_shortest_on_fastest(void **unused)
{
    (void)unused;
    static const policy_class_t two[] = {{"fast", 1}, {"slow", 1}};
    policy_running_t run[] = {{"long", 1, 0, -1, 0, NOW - 700}};
    policy_hjob_t hr[] = {{.min_slots = 1, .want = 1, .alloc = {1, 0}, .changed = NOW - 700, .work = 4e8}};
    policy_queued_t q[] = {{"short", 1, 1, 0, 0, 0, NULL, 0}};
    policy_hjob_t hq[] = {{.min_slots = 1, .want = 1, .work = 4e5, .submitted = NOW}};
    scene_t sc;
    scene(&sc, two, 2, two_speeds, 2, run, hr, 1, q, hq, 1);
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_int_equal(sc.d[0].alloc[0], 1);
    assert_string_equal(sc.d[0].placement,
                        "placed on 1 fast slots: 4.00x its speed on 1 slot of its slowest class (hetero)");
    assert_int_equal(sc.nrz, 1);
    assert_string_equal(sc.rz[0].reason, "moved from 1 fast to 1 slow slots: 1.00x its speed on 1 slot of its "
                                         "slowest class, was 4.00x (hetero)");
    hr[0].work = 0;
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_int_equal(sc.nrz, 0);
    assert_int_equal(sc.d[0].alloc[1], 1);
}

/* One free slot of three, two elastic jobs on one slot each (past their minimum run) that
 * want three: the one that finishes sooner (less work left) grows first; without the works,
 * fair's order (arrival here). */
static void test_shortest_grows_first(void **unused)
{
    (void)unused;
    static const policy_class_t one[] = {{"x1", 3}};
    static const double sp[] = {100};
    policy_running_t run[] = {{"long", 1, 0, -1, 0, NOW - 700}, {"short", 1, 0, -1, 0, NOW - 700}};
    policy_hjob_t hr[] = {{.elastic = 1, .min_slots = 1, .want = 3, .alloc = {1}, .changed = NOW - 700, .work = 1e8},
                          {.elastic = 1, .min_slots = 1, .want = 3, .alloc = {1}, .changed = NOW - 700, .work = 1e5}};
    scene_t sc;
    scene(&sc, one, 1, sp, 1, run, hr, 2, NULL, NULL, 0);
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    assert_int_equal(sc.nrz, 1);
    assert_int_equal(sc.rz[0].running, 1);
    assert_string_equal(sc.rz[0].reason, "grown from 1 x1 to 2 x1 slots: slots free (hetero)");
    hr[1].work = 0;
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    assert_int_equal(sc.nrz, 1);
    assert_int_equal(sc.rz[0].running, 0);
}

/* Growth past the ask (policy_hjob_t.max_slots; the simulator's --grow-past-ask): one class
 * of 8 slots. An elastic job asking 2 (at most 4) grows onto idle slots, its rate scaled by
 * the grow overhead (a fifth of a step at its ask does not shrink); a job whose max_slots is
 * its ask (the daemon's) does not. When a job waits, the lent slots come back first: from
 * the grown job, though it changed 100 s ago (inside its minimum run time) and another
 * elastic job of a lower priority could shrink, and only down to its ask. */
static void test_grow_past_ask_then_lend_back(void **unused)
{
    (void)unused;
    static const policy_class_t one[] = {{"fast", 8}};
    static const double sp[] = {100};
    /* the rate: 2 slots at the ask, 4 at 4 / (1 + 0.2 x 2 / 2) of their sum */
    assert_true(fabs(policy_grow_factor(2, 2, 0.2) - 1) < 1e-12);
    assert_true(fabs(policy_grow_factor(4, 2, 0.2) - 1 / 1.2) < 1e-12);
    int a[] = {3, 1};
    double two[] = {100, 50};
    assert_true(fabs(policy_alloc_rate(two, a, 2, 2, 0.2) - 350 / 1.2) < 1e-9);
    assert_true(fabs(policy_alloc_rate(two, a, 2, 4, 0.2) - 350) < 1e-9);

    policy_running_t run[] = {{"grower", 2, 0, -1, POLICY_PRIO_NORMAL, NOW - 700}};
    policy_hjob_t hr[] = {
        {.type = 0, .elastic = 1, .min_slots = 1, .want = 2, .max_slots = 4, .alloc = {2}, .changed = NOW - 700}};
    scene_t sc;
    scene(&sc, one, 1, sp, 1, run, hr, 1, NULL, NULL, 0);
    sc.h.grow_overhead = 0.2;
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    assert_int_equal(sc.nrz, 1);
    assert_int_equal(sc.rz[0].alloc[0], 4);
    assert_string_equal(sc.rz[0].reason,
                        "grown from 2 fast to 4 fast slots onto idle hosts (past its ask of 2) (hetero)");
    hr[0].max_slots = 0; /* the daemon's: never past its ask */
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    assert_int_equal(sc.nrz, 0);

    /* grown to 4 100 s ago; a low-priority elastic job holds 4 more (past its minimum run);
     * a 2-slot job arrives and nothing is free */
    policy_running_t run2[] = {{"grower", 4, 0, -1, POLICY_PRIO_NORMAL, NOW - 700},
                               {"low", 4, 0, -1, POLICY_PRIO_LOW, NOW - 700}};
    policy_hjob_t hr2[] = {
        {.type = 0, .elastic = 1, .min_slots = 1, .want = 2, .max_slots = 4, .alloc = {4}, .changed = NOW - 100},
        {.type = 0, .elastic = 1, .min_slots = 1, .want = 4, .max_slots = 4, .alloc = {4}, .changed = NOW - 700}};
    policy_queued_t q[] = {{"new", 2, 2, 0, 0, POLICY_PRIO_NORMAL, NULL, 0}};
    policy_hjob_t hq[] = {{.type = 0, .min_slots = 2, .want = 2}};
    scene(&sc, one, 1, sp, 1, run2, hr2, 2, q, hq, 1);
    sc.h.grow_overhead = 0.2;
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_int_equal(sc.d[0].start, 1);
    assert_int_equal(sc.d[0].alloc[0], 2);
    assert_int_equal(sc.nrz, 1);
    assert_int_equal(sc.rz[0].running, 0);
    assert_int_equal(sc.rz[0].alloc[0], 2);
    assert_string_equal(sc.rz[0].reason, "shrunk from 4 fast to 2 fast slots to admit new (hetero)");
    /* a second waiting job of 2: the grower is at its ask and inside its minimum run, so the
     * low-priority job gives up 2 */
    hr2[0].alloc[0] = 2;
    run2[0].slots = 2;
    policy_queued_t q2[] = {{"more", 2, 2, 0, 0, POLICY_PRIO_NORMAL, NULL, 0}};
    policy_running_t run3[] = {run2[0], run2[1], {"new", 2, 0, -1, POLICY_PRIO_NORMAL, NOW - 10}};
    policy_hjob_t hr3[] = {hr2[0], hr2[1], {.type = 0, .min_slots = 2, .want = 2, .alloc = {2}, .changed = NOW - 10}};
    scene(&sc, one, 1, sp, 1, run3, hr3, 3, q2, hq, 1);
    sc.h.grow_overhead = 0.2;
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    assert_int_equal(sc.nrz, 1);
    assert_int_equal(sc.rz[0].running, 1);
    assert_int_equal(sc.rz[0].alloc[0], 2);
}

/* Unknown speeds: type 1 measured only on fast (200/s) is estimated on slow from type 0's
 * ratio (100/400): 50/s; a type measured nowhere runs at 1 everywhere. */
static void test_speed_estimate(void **unused)
{
    (void)unused;
    double sp[] = {400, 100, 200, NAN, 0, -1};
    scene_t sc;
    scene(&sc, two_classes, 2, sp, 3, NULL, NULL, 0, NULL, NULL, 0);
    const policy_hetero_t *h = &sc.h;
    assert_true(policy_speed(h, 0, 1) == 100);
    assert_true(fabs(policy_speed(h, 1, 1) - 50) < 1e-9);
    assert_true(policy_speed(h, 2, 0) == 1);
    assert_true(policy_speed(h, 7, 0) == 1);
    policy_kind_t k;
    char err[128];
    assert_int_equal(policy_parse_any("hetero", &k, err, sizeof err), 0);
    assert_int_equal(k, POLICY_HETERO);
    assert_string_equal(policy_name(POLICY_AGNOSTIC), "agnostic");
    /* the daemon's too (run_schedule builds the classes) */
    assert_int_equal(policy_parse("agnostic", &k, err, sizeof err), 0);
    assert_int_equal(k, POLICY_AGNOSTIC);
    assert_int_equal(policy_parse_any("lottery", &k, err, sizeof err), -1);
    assert_string_equal(err, "--policy: 'lottery' is not a policy: fifo, fair, agnostic or hetero");
}

/* The one change plan() answered: its reason, its kind from cur (nc classes) and the world
 * cap of the relaunch of a job of full ranks. */
static void expect_change(const scene_t *sc, const int *cur, int nc, int full, hclass_change_t kind, int cap,
                          const char *reason)
{
    int got = -1;
    assert_int_equal(sc->nrz, 1);
    assert_string_equal(sc->rz[0].reason, reason);
    assert_int_equal(hclass_change(cur, sc->rz[0].alloc, nc, full, &got), kind);
    assert_int_equal(got, cap);
}

/* The daemon's actions for policy_plan's answers, on one class of three 1-slot hosts: an
 * elastic job shrunk to admit another keeps two of its hosts under a world cap of 2, the
 * admitted job gets the third; without a checkpoint (the daemon pins it: changed never old
 * enough) nothing changes; once alone it grows back onto the third host, but not within its
 * minimum run time. */
static void test_plan_to_action(void **unused)
{
    (void)unused;
    static const policy_class_t one[] = {{"x1", 3}};
    static const double speed[] = {100};
    const int cls[] = {0, 0, 0};
    int take[3];
    policy_running_t lo = {"j-4", 3, 0, -1, 0, NOW - 1000};
    policy_queued_t q[] = {{"j-5", 1, 1, 0, 0, 0, NULL, 0}};
    policy_hjob_t hq[] = {{.min_slots = 1, .want = 1}};
    policy_hjob_t hr = {.elastic = 1, .min_slots = 1, .want = 3, .alloc = {3}, .changed = NOW - 1000};
    scene_t sc;
    scene(&sc, one, 1, speed, 1, &lo, &hr, 1, q, hq, 1);
    assert_int_equal(plan(&sc, POLICY_HETERO), 1);
    expect_change(&sc, hr.alloc, 1, 3, HCLASS_SHRINK, 2, "shrunk from 3 x1 to 2 x1 slots to admit j-5 (hetero)");
    int fr[] = {0, 0, 0};
    assert_int_equal(hclass_pick_hosts(cls, (const int[]){1, 1, 1}, fr, 3, sc.rz[0].alloc, 1, take), 2);
    assert_memory_equal(take, ((const int[]){1, 1, 0}), sizeof take);
    fr[2] = 1; /* the host it gives up is where j-5 goes */
    assert_int_equal(hclass_pick_hosts(cls, NULL, fr, 3, sc.d[0].alloc, 1, take), 1);
    assert_memory_equal(take, ((const int[]){0, 0, 1}), sizeof take);
    hr.changed = HUGE_VAL;
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    assert_int_equal(sc.nrz, 0);
    /* j-5 has ended: j-4, on two hosts long enough, grows back onto the third */
    policy_hjob_t shrunk = {.elastic = 1, .min_slots = 1, .want = 3, .alloc = {2}, .changed = NOW - 1000};
    lo.slots = 2;
    scene(&sc, one, 1, speed, 1, &lo, &shrunk, 1, NULL, NULL, 0);
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    expect_change(&sc, shrunk.alloc, 1, 3, HCLASS_GROW, 0, "grown from 2 x1 to 3 x1 slots: slots free (hetero)");
    assert_int_equal(hclass_pick_hosts(cls, (const int[]){1, 1, 0}, fr, 3, sc.rz[0].alloc, 1, take), 3);
    shrunk.changed = NOW - 10;
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    assert_int_equal(sc.nrz, 0);
}

/* A 1-rank job on the slow class while the fast one (4x for its type) is free: a move, at
 * the same world (no cap), onto the fast host. */
static void test_move_to_action(void **unused)
{
    (void)unused;
    static const policy_class_t two[] = {{"x1", 1}, {"x1/2", 1}};
    static const double speed[] = {400, 100};
    const int cls[] = {0, 1}, own[] = {0, 1}, fr[] = {1, 0};
    int take[2];
    policy_running_t run = {"j-7", 1, 0, -1, 0, NOW - 1000};
    policy_hjob_t hr = {.min_slots = 1, .want = 1, .alloc = {0, 1}, .changed = NOW - 1000};
    scene_t sc;
    scene(&sc, two, 2, speed, 1, &run, &hr, 1, NULL, NULL, 0);
    assert_int_equal(plan(&sc, POLICY_HETERO), 0);
    expect_change(&sc, hr.alloc, 2, 1, HCLASS_MOVE, 0,
                  "moved from 1 x1/2 to 1 x1 slots: 4.00x its speed on 1 slot of its slowest class, was 1.00x (hetero)");
    assert_int_equal(hclass_pick_hosts(cls, own, fr, 2, sc.rz[0].alloc, 2, take), 1);
    assert_memory_equal(take, ((const int[]){1, 0}), sizeof take);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placed_where_it_gains_most),
        cmocka_unit_test(test_spans_classes),
        cmocka_unit_test(test_shrink_to_admit_then_grow_back),
        cmocka_unit_test(test_move_when_it_pays),
        cmocka_unit_test(test_promoted_trial_takes_fast_slot),
        cmocka_unit_test(test_response_ratio_admission),
        cmocka_unit_test(test_shortest_on_fastest),
        cmocka_unit_test(test_shortest_grows_first),
        cmocka_unit_test(test_grow_past_ask_then_lend_back),
        cmocka_unit_test(test_trace_elastic_is_spec_bounds),
        cmocka_unit_test(test_speed_estimate),
        cmocka_unit_test(test_plan_to_action),
        cmocka_unit_test(test_move_to_action),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
