/* tests/unit/test_policy.c - the scheduling policy (coordinator/policy.h) on scripted
 * snapshots: which queued jobs FIFO starts, and for the others their positions, reasons,
 * sentences and estimated starts, from the running jobs' measured ends; what it says when
 * nothing can be estimated (null, and why); fair's priority order and backfilling (never
 * delaying the head's estimated start); fair share between users (usage / weight,
 * decayed); a user's slot limit (held jobs block nobody); the oversubscription sentence;
 * --policy. No
 * Redis, no processes, no clock: the policy is a pure function of its snapshot.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "policy.h"

#define NOW 1000.0

static policy_state_t state(int total, int usable, const policy_running_t *run, int nrun, const policy_queued_t *q,
                            int nq)
{
    return (policy_state_t){.now = NOW,
                            .slots_total = total,
                            .slots_usable = usable,
                            .sim_slots = 1,
                            .running = run,
                            .nrunning = nrun,
                            .queued = q,
                            .nqueued = nq};
}

/* Two slots, one 2-rank job running that should end at 1100, three 2-rank jobs queued:
 * none starts; the first waits for slots and starts at 1100; the next two wait behind it
 * and cannot be estimated (the first's duration is not measured), with the sentence. */
static void test_fifo_positions_and_estimates(void **unused)
{
    (void)unused;
    policy_running_t run[] = {{"j-1", 2, 0, 1100.0, 0, 0}};
    policy_queued_t q[] = {{"j-2", 2, 1, 0, 0, 0, NULL, 0},
                           {"j-3", 2, 1, 0, 0, 0, NULL, 0},
                           {"j-4", 1, 1, 0, 0, 0, NULL, 0}};
    policy_state_t s = state(2, 2, run, 1, q, 3);
    policy_decision_t d[3];
    assert_int_equal(policy_decide(POLICY_FIFO, &s, d), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(d[i].start, 0);
        assert_int_equal(d[i].position, i + 1);
        assert_string_equal(policy_reason_name(d[i].reason), "slots");
    }
    assert_true(d[0].estimated_start == 1100.0);
    assert_non_null(strstr(d[0].detail, "waits for 2 slots: 0 of 2 free"));
    assert_true(d[1].estimated_start < 0);
    assert_non_null(strstr(d[1].detail, "start not estimated: j-2, ahead of it, has not started yet"));
    /* j-4 would fit one slot but FIFO keeps it behind j-2 */
    assert_true(d[2].estimated_start < 0);
    assert_non_null(strstr(d[2].detail, "waits for 1 slot: 0 of 2 free"));
}

/* A running job without measured progress: the head's start is null, and it says why. */
static void test_fifo_unmeasured(void **unused)
{
    (void)unused;
    policy_running_t run[] = {{"j-1", 2, 0, -1, 0, 0}};
    policy_queued_t q[] = {{"j-2", 2, 1, 0, 0, 0, NULL, 0}};
    policy_state_t s = state(2, 2, run, 1, q, 1);
    policy_decision_t d[1];
    assert_int_equal(policy_decide(POLICY_FIFO, &s, d), 0);
    assert_true(d[0].estimated_start < 0);
    assert_non_null(strstr(d[0].detail, "start not estimated: j-1 has measured no progress yet"));
}

/* Free slots: the fitting prefix starts, with the world it gets; the first that does not
 * fit waits, and the job behind it waits behind it whatever it asks. The estimate uses
 * the soonest ends first: j-1 (1 slot, ends 1050) frees enough for j-3 while j-9 (not
 * measured) runs on; j-4 then needs j-9's slot, whose end nobody knows. */
static void test_fifo_starts_prefix(void **unused)
{
    (void)unused;
    policy_running_t run[] = {{"j-9", 1, 0, -1, 0, 0}, {"j-1", 1, 0, 1050.0, 0, 0}};
    policy_queued_t q[] = {{"j-2", 1, 1, 0, 0, 0, NULL, 0},
                           {"j-3", 2, 1, 0, 0, 0, NULL, 0},
                           {"j-4", 1, 1, 0, 0, 0, NULL, 0}};
    policy_state_t s = state(4, 4, run, 2, q, 3);
    policy_decision_t d[3];
    assert_int_equal(policy_decide(POLICY_FIFO, &s, d), 1);
    assert_int_equal(d[0].start, 1);
    assert_int_equal(d[0].world, 1);
    assert_int_equal(d[1].start, 0);
    assert_int_equal(d[1].position, 1);
    assert_true(d[1].estimated_start == 1050.0);
    assert_int_equal(d[2].position, 2);
    assert_string_equal(policy_reason_name(d[2].reason), "slots");
    assert_non_null(strstr(d[2].detail, "waits behind j-3"));
    assert_true(d[2].estimated_start < 0);
    assert_non_null(strstr(d[2].detail, "start not estimated: j-9 has measured no progress yet"));
}

/* Nothing running: a job larger than the cluster starts alone (oversubscribed) with the
 * elastic world; an overdue estimate counts as now, never before it. */
static void test_fifo_oversubscribed_alone_and_overdue(void **unused)
{
    (void)unused;
    policy_queued_t q[] = {{"j-1", 8, 1, 0, 0, 0, NULL, 0}, {"j-2", 1, 1, 0, 0, 0, NULL, 0}};
    policy_state_t s = state(2, 2, NULL, 0, q, 2);
    policy_decision_t d[2];
    assert_int_equal(policy_decide(POLICY_FIFO, &s, d), 1);
    assert_int_equal(d[0].world, 8);
    assert_int_equal(d[1].position, 1);
    assert_true(d[1].estimated_start < 0); /* j-1's end is not measured */

    policy_running_t late[] = {{"j-1", 2, 0, NOW - 30, 0, 0}};
    policy_queued_t q2[] = {{"j-2", 2, 1, 0, 0, 0, NULL, 0}};
    s = state(2, 2, late, 1, q2, 1);
    assert_int_equal(policy_decide(POLICY_FIFO, &s, d), 0);
    assert_true(d[0].estimated_start == NOW);
}

/* Every host down: nothing starts, the reason says so and no start is estimated. A
 * simulation waits for the sim launcher's slot, not for hosts. A bad job (its record
 * unreadable) starts at once, to be failed. */
static void test_fifo_hosts_down_sims_bad(void **unused)
{
    (void)unused;
    policy_running_t run[] = {{"j-5", 0, 1, 1200.0, 0, 0}};
    policy_queued_t q[] = {{"j-6", 0, 0, 0, 1, 0, NULL, 0},
                           {"j-7", 2, 1, 0, 0, 0, NULL, 0},
                           {"j-8", 3, 1, 1, 0, 0, NULL, 0}};
    policy_state_t s = state(2, 0, run, 1, q, 3);
    policy_decision_t d[3];
    assert_int_equal(policy_decide(POLICY_FIFO, &s, d), 1);
    assert_int_equal(d[0].start, 1);
    assert_string_equal(policy_reason_name(d[1].reason), "hosts down");
    assert_true(d[1].estimated_start < 0);
    assert_non_null(strstr(d[1].detail, "no host is usable"));
    assert_int_equal(d[2].position, 2);
    assert_string_equal(policy_reason_name(d[2].reason), "simulations");

    policy_queued_t q2[] = {{"j-8", 3, 1, 1, 0, 0, NULL, 0}};
    s = state(2, 2, run, 1, q2, 1);
    assert_int_equal(policy_decide(POLICY_FIFO, &s, d), 0);
    assert_string_equal(policy_reason_name(d[0].reason), "simulations");
    assert_true(d[0].estimated_start == 1200.0);
}

/* Fair share: within a class, the owner with the lowest usage / weight first. Two slots,
 * alice's j-1 holds both; alice's j-2 came first, then bob's j-3, then alice's j-4. bob has
 * used nothing, so j-3 is next; j-2 waits behind it only because of alice's usage, with
 * the sentence; j-4, which came after j-3, waits for slots like anyone behind. */
static void test_fair_share_order(void **unused)
{
    (void)unused;
    policy_running_t run[] = {{"j-1", 2, 0, 1100.0, 0, 0}};
    double alice = policy_share(3600, 1), bob = policy_share(0, 1);
    policy_queued_t q[] = {{"j-2", 2, 1, 0, 0, 0, "alice", alice},
                           {"j-3", 2, 1, 0, 0, 0, "bob", bob},
                           {"j-4", 2, 1, 0, 0, 0, "alice", alice}};
    policy_state_t s = state(2, 2, run, 1, q, 3);
    policy_decision_t d[3];
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 0);
    assert_int_equal(d[1].position, 1);
    assert_string_equal(policy_reason_name(d[1].reason), "slots");
    assert_true(d[1].estimated_start == 1100.0);
    assert_int_equal(d[0].position, 2);
    assert_string_equal(policy_reason_name(d[0].reason), "its user over their fair share");
    assert_non_null(strstr(d[0].detail, "waits behind j-3, submitted later: its user alice is over their fair share "
                                        "(usage/weight 3600 slot-s against bob's 0) (fair)"));
    assert_int_equal(d[2].position, 3);
    assert_string_equal(policy_reason_name(d[2].reason), "slots");
    /* fifo ignores usage */
    assert_int_equal(policy_decide(POLICY_FIFO, &s, d), 0);
    assert_int_equal(d[0].position, 1);
    assert_int_equal(d[1].position, 2);
    /* a higher priority still comes first, whatever its user used */
    q[0].priority = POLICY_PRIO_HIGH;
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 0);
    assert_int_equal(d[0].position, 1);
    assert_int_equal(d[1].position, 2);
    assert_string_equal(policy_reason_name(d[1].reason), "slots");
}

/* Weights: alice's weight 4 makes her 3600 slot-s count as 900, below bob's 1800 at
 * weight 1, so her job starts on the two free slots and bob's, which came first, waits
 * with the fair-share reason. Equal shares keep arrival order. */
static void test_fair_share_weights(void **unused)
{
    (void)unused;
    policy_queued_t q[] = {{"j-2", 2, 1, 0, 0, 0, "bob", policy_share(1800, 1)},
                           {"j-3", 2, 1, 0, 0, 0, "alice", policy_share(3600, 4)}};
    policy_state_t s = state(2, 2, NULL, 0, q, 2);
    policy_decision_t d[2];
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 1);
    assert_int_equal(d[1].start, 1);
    assert_int_equal(d[0].start, 0);
    assert_string_equal(policy_reason_name(d[0].reason), "its user over their fair share");
    assert_non_null(strstr(
        d[0].detail,
        "overtaken by j-3, submitted later: its user bob is over their fair share (usage/weight 1800 slot-s against "
        "alice's 900)"));
    q[1].share = q[0].share;
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 1);
    assert_int_equal(d[0].start, 1);
    assert_string_equal(policy_reason_name(d[1].reason), "slots");
    /* a weight of 0 or below, or not a number, counts as 1 */
    assert_true(policy_share(100, 0) == 100.0);
    assert_true(policy_share(100, -2) == 100.0);
}

/* The decay: halved every half-life, plus the slots held through the interval. */
static void test_fair_share_decay(void **unused)
{
    (void)unused;
    assert_true(policy_usage_decay(100, 3600, 3600, 0) == 50.0);
    assert_true(policy_usage_decay(100, 7200, 3600, 0) == 25.0);
    assert_true(policy_usage_decay(0, 10, 3600, 2) == 20.0);
    assert_true(policy_usage_decay(100, 0, 3600, 2) == 100.0);
    assert_true(policy_usage_decay(100, 10, 0, 1) == 110.0);
    assert_true(policy_usage_decay(-5, 10, 3600, 0) == 0.0);
}

/* Preemption: two slots held by two 1-slot low jobs (j-1 started at 100, j-2 at 500) and
 * a normal one (j-3, 1 slot) and j-9 (low, start unknown) on five slots; a high 2-worker job waits. Victims: the
 * lowest priority first, then the most recently started, until it fits: j-2 then j-1,
 * never j-3 while the lows suffice. A job younger than the minimum run time is spared,
 * and with too little to free nothing is stopped; fifo never preempts; a job of the same
 * priority is never a victim. */
static void test_fair_preempt(void **unused)
{
    (void)unused;
    policy_running_t run[] = {{"j-1", 1, 0, -1, POLICY_PRIO_LOW, 100.0},
                              {"j-2", 1, 0, -1, POLICY_PRIO_LOW, 500.0},
                              {"j-3", 1, 0, -1, POLICY_PRIO_NORMAL, 200.0},
                              {"j-9", 1, 0, -1, POLICY_PRIO_LOW, 0}};
    policy_queued_t q[] = {{"j-4", 2, 2, 0, 0, POLICY_PRIO_HIGH, NULL, 0}};
    policy_state_t s = state(5, 5, run, 4, q, 1);
    s.preempt_min_run_s = 60;
    policy_decision_t d[1];
    int v[4], who;
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 0);
    /* j-9's start is unknown: never a victim. One slot free, so one more is enough. */
    assert_int_equal(policy_preempt(POLICY_FAIR, &s, d, v, 4, &who), 1);
    assert_int_equal(who, 0);
    assert_string_equal(run[v[0]].id, "j-2");
    /* a 3-rank job needs two more slots: j-2, then j-1 */
    q[0].world = q[0].min_world = 3;
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 0);
    assert_int_equal(policy_preempt(POLICY_FAIR, &s, d, v, 4, &who), 2);
    assert_string_equal(run[v[0]].id, "j-2");
    assert_string_equal(run[v[1]].id, "j-1");
    /* j-2 has run only 40 s of the 60 s minimum: j-1, then j-3 (normal, below high) */
    run[1].started = NOW - 40;
    assert_int_equal(policy_preempt(POLICY_FAIR, &s, d, v, 4, &who), 2);
    assert_string_equal(run[v[0]].id, "j-1");
    assert_string_equal(run[v[1]].id, "j-3");
    /* 4 ranks: even every eligible job would not free enough; nothing is stopped */
    q[0].world = q[0].min_world = 4;
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 0);
    assert_int_equal(policy_preempt(POLICY_FAIR, &s, d, v, 4, &who), 0);
    assert_int_equal(who, -1);
    /* a normal job waits: only lower (low) jobs may go, and j-1 alone is eligible */
    q[0].world = q[0].min_world = 2;
    q[0].priority = POLICY_PRIO_NORMAL;
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 0);
    assert_int_equal(policy_preempt(POLICY_FAIR, &s, d, v, 4, &who), 1);
    assert_string_equal(run[v[0]].id, "j-1");
    q[0].priority = POLICY_PRIO_LOW;
    assert_int_equal(policy_preempt(POLICY_FAIR, &s, d, v, 4, &who), 0);
    /* fifo never preempts, nor does a negative minimum (preemption off) */
    q[0].priority = POLICY_PRIO_HIGH;
    assert_int_equal(policy_preempt(POLICY_FIFO, &s, d, v, 4, &who), 0);
    s.preempt_min_run_s = -1;
    assert_int_equal(policy_preempt(POLICY_FAIR, &s, d, v, 4, &who), 0);
}

/* A user's max_slots (policy_state_t.queued_max_slots): on four slots alice's 2-rank job
 * runs and her limit is 2, so her next queued jobs wait with the reason and a sentence
 * naming the limit, and hold up nobody: under fifo bob's job behind hers starts, under fair
 * too. Two of hers queued with room for one: the first starts, the second is held. Her
 * held job is never the one preemption frees slots for: bob's high job behind it is. */
static void test_user_slot_limit(void **unused)
{
    (void)unused;
    policy_running_t run[] = {{"j-1", 2, 0, -1, POLICY_PRIO_LOW, 100.0}};
    const char *owners[] = {"alice"};
    policy_queued_t q[] = {{"j-2", 2, 2, 0, 0, 0, "alice", 0}, {"j-3", 2, 2, 0, 0, 0, "bob", 0}};
    int maxs[] = {2, 0};
    policy_state_t s = state(4, 4, run, 1, q, 2);
    s.running_owner = owners;
    s.queued_max_slots = maxs;
    policy_decision_t d[2];
    for (int k = 0; k < 2; k++) {
        policy_kind_t kind = k ? POLICY_FAIR : POLICY_FIFO;
        assert_int_equal(policy_decide(kind, &s, d), 1);
        assert_int_equal(d[0].start, 0);
        assert_int_equal(d[1].start, 1); /* bob's, behind hers in the queue */
        assert_string_equal(policy_reason_name(d[0].reason), "its user's slot limit");
        assert_int_equal(d[0].position, 1);
        assert_true(d[0].estimated_start < 0);
        assert_string_equal(d[0].detail, "waits for its user alice's running jobs to hold fewer slots: they hold 2, "
                                         "their limit (max_slots) is 2, and it needs 2");
    }
    /* without the limit she is the head, and bob's job waits behind her */
    s.queued_max_slots = NULL;
    assert_int_equal(policy_decide(POLICY_FIFO, &s, d), 1);
    assert_int_equal(d[0].start, 1);
    assert_int_equal(d[1].start, 0);
    /* nothing of hers runs: room for one 2-rank job of her limit 2, the next is held */
    policy_queued_t q2[] = {{"j-4", 2, 2, 0, 0, 0, "alice", 0}, {"j-5", 2, 2, 0, 0, 0, "alice", 0}};
    int maxs2[] = {2, 2};
    s = state(4, 4, NULL, 0, q2, 2);
    s.queued_max_slots = maxs2;
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 1);
    assert_int_equal(d[0].start, 1);
    assert_int_equal(d[1].reason, POLICY_REASON_USER_SLOTS);
    assert_non_null(strstr(d[1].detail, "they hold 2, their limit (max_slots) is 2"));
    /* preemption: alice's held high job is passed over; bob's high job, behind it, gets the
     * low job's slots */
    policy_running_t low[] = {{"j-6", 4, 0, -1, POLICY_PRIO_LOW, 100.0}};
    const char *lowner[] = {"alice"};
    policy_queued_t q3[] = {{"j-7", 2, 2, 0, 0, POLICY_PRIO_HIGH, "alice", 0},
                            {"j-8", 2, 2, 0, 0, POLICY_PRIO_HIGH, "bob", 0}};
    int maxs3[] = {4, 0};
    s = state(4, 4, low, 1, q3, 2);
    s.running_owner = lowner;
    s.queued_max_slots = maxs3;
    s.preempt_min_run_s = 60;
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 0);
    assert_int_equal(d[0].reason, POLICY_REASON_USER_SLOTS);
    int v[2], who;
    assert_int_equal(policy_preempt(POLICY_FAIR, &s, d, v, 2, &who), 1);
    assert_int_equal(who, 1);
    /* a simulation holds no slots: never held back */
    q3[0].simulated = 1;
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 1);
    assert_int_equal(d[0].start, 1);
}

/* Preemption by shrinking (policy_preempt_elastic): on four slots a low 3-rank job (j-1)
 * and a low 1-rank one (j-2, the later start) run; a high job waits. Needing 1 slot, j-2
 * is the first victim but cannot shrink (its minimum is its 1 rank): it stops. Needing 2
 * with j-2 unable to shrink: j-2 stops, then j-1 shrinks by the one still missing (3 -> 2).
 * With j-2 spared (too young), j-1 alone shrinks 3 -> 1 for 2 slots, but not below its
 * minimum 2: stopped then. Without min_slots (policy_preempt) nothing shrinks. */
static void test_fair_preempt_shrink(void **unused)
{
    (void)unused;
    policy_running_t run[] = {{"j-1", 3, 0, -1, POLICY_PRIO_LOW, 100.0}, {"j-2", 1, 0, -1, POLICY_PRIO_LOW, 500.0}};
    int minw[] = {1, 1};
    policy_queued_t q[] = {{"j-3", 1, 1, 0, 0, POLICY_PRIO_HIGH, NULL, 0}};
    policy_state_t s = state(4, 4, run, 2, q, 1);
    s.preempt_min_run_s = 60;
    policy_decision_t d[1];
    int v[4], keep[4], who;
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 0);
    assert_int_equal(policy_preempt_elastic(POLICY_FAIR, &s, d, minw, v, keep, 4, &who), 1);
    assert_string_equal(run[v[0]].id, "j-2");
    assert_int_equal(keep[0], 0);
    q[0].world = q[0].min_world = 2;
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 0);
    assert_int_equal(policy_preempt_elastic(POLICY_FAIR, &s, d, minw, v, keep, 4, &who), 2);
    assert_string_equal(run[v[0]].id, "j-2");
    assert_int_equal(keep[0], 0);
    assert_string_equal(run[v[1]].id, "j-1");
    assert_int_equal(keep[1], 2);
    run[1].started = NOW - 10;
    assert_int_equal(policy_preempt_elastic(POLICY_FAIR, &s, d, minw, v, keep, 4, &who), 1);
    assert_string_equal(run[v[0]].id, "j-1");
    assert_int_equal(keep[0], 1);
    assert_int_equal(who, 0);
    minw[0] = 2;
    assert_int_equal(policy_preempt_elastic(POLICY_FAIR, &s, d, minw, v, keep, 4, &who), 1);
    assert_int_equal(keep[0], 0);
    minw[0] = 1;
    assert_int_equal(policy_preempt(POLICY_FAIR, &s, d, v, 4, &who), 1);
    assert_string_equal(run[v[0]].id, "j-1");
}

/* fair: the queue by priority (high, normal, low; arrival order within one), positions in
 * that order; fifo ignores priorities. */
static void test_fair_priority_order(void **unused)
{
    (void)unused;
    policy_running_t run[] = {{"j-1", 2, 0, 1100.0, 0, 0}};
    policy_queued_t q[] = {{"j-2", 2, 1, 0, 0, POLICY_PRIO_LOW, NULL, 0},
                           {"j-3", 2, 1, 0, 0, POLICY_PRIO_NORMAL, NULL, 0},
                           {"j-4", 2, 1, 0, 0, POLICY_PRIO_HIGH, NULL, 0},
                           {"j-5", 2, 1, 0, 0, POLICY_PRIO_NORMAL, NULL, 0}};
    policy_state_t s = state(2, 2, run, 1, q, 4);
    policy_decision_t d[4];
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 0);
    assert_int_equal(d[2].position, 1); /* j-4, high */
    assert_int_equal(d[1].position, 2); /* j-3, normal, before j-5 */
    assert_int_equal(d[3].position, 3);
    assert_int_equal(d[0].position, 4); /* j-2, low */
    assert_true(d[2].estimated_start == 1100.0);
    assert_true(d[1].estimated_start < 0);
    assert_non_null(strstr(d[1].detail, "start not estimated: j-4, ahead of it, has not started yet"));
    assert_int_equal(policy_decide(POLICY_FIFO, &s, d), 0);
    assert_int_equal(d[0].position, 1);
    assert_int_equal(d[2].position, 3);
}

/* Backfilling: 4 slots, j-1 holds 3 until 1100; the head j-2 needs 2 and starts at 1100,
 * when 4 are free: j-3 (1 slot) fits now and leaves the head its 2 then, so it starts
 * (low priority or not). A job that fits but would not leave the head its slots waits,
 * and says behind whom; a lower-priority one says so. */
static void test_fair_backfill(void **unused)
{
    (void)unused;
    policy_running_t run[] = {{"j-1", 3, 0, 1100.0, 0, 0}};
    policy_queued_t q[] = {{"j-2", 2, 1, 0, 0, 0, NULL, 0}, {"j-3", 1, 1, 0, 0, POLICY_PRIO_LOW, NULL, 0}};
    policy_state_t s = state(4, 4, run, 1, q, 2);
    policy_decision_t d[2];
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 1);
    assert_int_equal(d[0].start, 0);
    assert_int_equal(d[0].position, 1);
    assert_true(d[0].estimated_start == 1100.0); /* not delayed */
    assert_int_equal(d[1].start, 1);
    assert_int_equal(d[1].backfilled, 1);
    assert_int_equal(d[1].world, 1);
    /* fifo: no backfilling */
    assert_int_equal(policy_decide(POLICY_FIFO, &s, d), 0);
    assert_int_equal(d[1].position, 2);

    /* j-9 (1 slot, end unknown) runs too: at 1100 only 3 are free, all the head's (it
     * needs 3 now); j-3 would take one of them: it waits. */
    policy_running_t run2[] = {{"j-1", 2, 0, 1100.0, 0, 0}, {"j-9", 1, 0, -1, 0, 0}};
    policy_queued_t q2[] = {{"j-2", 3, 1, 0, 0, 0, NULL, 0},
                            {"j-3", 1, 1, 0, 0, 0, NULL, 0},
                            {"j-4", 1, 1, 0, 0, POLICY_PRIO_LOW, NULL, 0}};
    s = state(4, 4, run2, 2, q2, 3);
    policy_decision_t d2[3];
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d2), 0);
    assert_true(d2[0].estimated_start == 1100.0);
    assert_int_equal(d2[1].position, 2);
    assert_string_equal(policy_reason_name(d2[1].reason), "slots");
    assert_non_null(strstr(d2[1].detail, "waits behind j-2, ahead of it in the queue (fair)"));
    assert_string_equal(policy_reason_name(d2[2].reason), "a higher priority");
    assert_non_null(strstr(d2[2].detail, "waits behind j-2, of a higher priority (fair)"));

    /* A head without an estimate lets nothing ahead of it. */
    policy_running_t run3[] = {{"j-1", 3, 0, -1, 0, 0}};
    s = state(4, 4, run3, 1, q, 2);
    assert_int_equal(policy_decide(POLICY_FAIR, &s, d), 0);
    assert_int_equal(d[1].start, 0);
}

static void test_oversubscribed_text_and_parse(void **unused)
{
    (void)unused;
    char t[128], err[160];
    assert_int_equal(policy_oversubscribed(8, 2, t, sizeof t), 1);
    assert_string_equal(t, "8 ranks on 2 slots: oversubscribed 4x");
    assert_int_equal(policy_oversubscribed(3, 2, t, sizeof t), 1);
    assert_string_equal(t, "3 ranks on 2 slots: oversubscribed 1.5x");
    assert_int_equal(policy_oversubscribed(2, 2, t, sizeof t), 0);
    assert_string_equal(t, "");
    assert_int_equal(policy_oversubscribed(5, 0, t, sizeof t), 0);
    policy_kind_t k;
    assert_int_equal(policy_parse("fifo", &k, err, sizeof err), 0);
    assert_int_equal(k, POLICY_FIFO);
    assert_string_equal(policy_name(k), "fifo");
    assert_int_equal(policy_parse("fair", &k, err, sizeof err), 0);
    assert_int_equal(k, POLICY_FAIR);
    assert_string_equal(policy_name(k), "fair");
    assert_int_equal(policy_priority("high"), POLICY_PRIO_HIGH);
    assert_int_equal(policy_priority("low"), POLICY_PRIO_LOW);
    assert_int_equal(policy_priority("normal"), POLICY_PRIO_NORMAL);
    assert_int_equal(policy_parse("lottery", &k, err, sizeof err), -1);
    assert_string_equal(err, "--policy: 'lottery' is not a policy: fifo, fair, agnostic or hetero");
}

/* Lost hosts and min_workers (issue 46): fewer usable slots than a job asks shrink it to
 * the slots (one rank each), never below its min_world (min_workers, + 1 with a parameter
 * server); fewer slots than that and it runs min_world ranks oversubscribed on them. */
static void test_ranks_not_below_min_workers(void **state)
{
    (void)state;
    policy_state_t s = {.slots_total = 3, .slots_usable = 1};
    policy_queued_t elastic = {"e", 2, 1, 0, 0, POLICY_PRIO_NORMAL, NULL, 0};
    policy_queued_t rigid = {"r", 2, 2, 0, 0, POLICY_PRIO_NORMAL, NULL, 0};
    assert_int_equal(policy_ranks(&s, &elastic), 1);
    assert_int_equal(policy_ranks(&s, &rigid), 2); /* 2 ranks on the 1 slot */
    s.slots_usable = 3;
    assert_int_equal(policy_ranks(&s, &rigid), 2);
    /* asgd, workers 3, min_workers 2: a world of 4, not below 3 */
    policy_queued_t ps = {"p", 4, 3, 0, 0, POLICY_PRIO_NORMAL, NULL, 0};
    s.slots_total = 4;
    s.slots_usable = 2;
    assert_int_equal(policy_ranks(&s, &ps), 3);
    s.slots_usable = 4;
    assert_int_equal(policy_ranks(&s, &ps), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_positions_and_estimates),
        cmocka_unit_test(test_fifo_unmeasured),
        cmocka_unit_test(test_fifo_starts_prefix),
        cmocka_unit_test(test_fifo_oversubscribed_alone_and_overdue),
        cmocka_unit_test(test_fifo_hosts_down_sims_bad),
        cmocka_unit_test(test_fair_priority_order),
        cmocka_unit_test(test_fair_backfill),
        cmocka_unit_test(test_fair_share_order),
        cmocka_unit_test(test_fair_share_weights),
        cmocka_unit_test(test_fair_share_decay),
        cmocka_unit_test(test_fair_preempt),
        cmocka_unit_test(test_fair_preempt_shrink),
        cmocka_unit_test(test_user_slot_limit),
        cmocka_unit_test(test_oversubscribed_text_and_parse),
        cmocka_unit_test(test_ranks_not_below_min_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
