/* coordinator/policy.h - the scheduling policy: which queued jobs start now, and for each
 * one that waits its position, why it waits and when it should start.
 *
 * A pure function of a snapshot (policy_state_t: the slots, the running jobs with their
 * measured progress, the queued jobs in order with their demands), with no Redis, no I/O
 * and no clock inside: the daemon's tick (schedule.c, schedule_tick) builds the snapshot from
 * Redis and its runs, claims the jobs the decisions start and publishes the rest (the
 * `queue` object of a queued job in the API); a unit test or a simulator calls it on
 * snapshots of its own. A new policy is a new value of policy_kind_t and a branch of
 * policy_decide, reading the same state and returning the same decisions.
 */
#ifndef PACER_POLICY_H
#define PACER_POLICY_H

#include <stddef.h>

/* Host classes a class-aware policy tells apart (policy_plan, below). */
#define POLICY_CLASSES_MAX 8

typedef enum {
    POLICY_FIFO = 0, /* arrival order, no backfilling: the head waits for slots rather than be overtaken */
    /* priority classes (high, normal, low); within one, weighted fair share (the owner's
       decayed slot-seconds over their weight, lowest first), then arrival order; and
       backfilling: a job that fits the free slots starts ahead of the head when that
       cannot delay the head's estimated start */
    POLICY_FAIR,
    /* Class-aware (policy_plan; the scheduler simulator, sim/sched_sim.c): fair's admission
       (priority, share, backfilling) on the slots counted with elastic jobs at their
       minimum, then placement on host classes and elastic resizes that maximise the
       cluster's normalised throughput (docs/ARCHITECTURE.md "Heterogeneous classes"). */
    POLICY_HETERO,
    /* hetero's algorithm with every class taken as equally fast: the same admission and
       elastic shrink/grow, classes chosen first-fit (the heterogeneity-agnostic baseline). */
    POLICY_AGNOSTIC,
} policy_kind_t;

/* Spec priorities (spec `priority`): higher starts first under POLICY_FAIR; FIFO ignores them. */
#define POLICY_PRIO_LOW (-1)
#define POLICY_PRIO_NORMAL 0
#define POLICY_PRIO_HIGH 1
/* "high", "normal", "low" -> POLICY_PRIO_*; anything else is normal. */
int policy_priority(const char *name);

/* "fifo", "fair", "agnostic", "hetero" -> POLICY_* (the daemon's policies). Returns 0, or -1
 * with err naming the values accepted. */
int policy_parse(const char *name, policy_kind_t *out, char *err, size_t errlen);
/* The same (the simulator's: every policy the daemon has). */
int policy_parse_any(const char *name, policy_kind_t *out, char *err, size_t errlen);
const char *policy_name(policy_kind_t k);

/* A running (or restarting) job: what it holds and when it should end. */
typedef struct {
    const char *id;
    int slots;        /* ranks it holds on the launcher's slots (0: a simulation) */
    int simulated;    /* holds one of the sim launcher's slots instead */
    double finish_at; /* estimated end (unix s) from its measured progress; < 0 = unknown */
    /* For preemption (policy_preempt): its spec's priority (POLICY_PRIO_*) and when its
     * current attempt started (unix s; 0 = unknown, never preempted). */
    int priority;
    double started;
} policy_running_t;

/* A queued job, in queue order: what it asks for. */
typedef struct {
    const char *id;
    int world;     /* the spec's processes (workers, + 1 with a parameter server) */
    int min_world; /* the fewest an elastic start may use (min_workers, + 1 with a parameter server) */
    int simulated; /* runs in the sim launcher (one of its slots), not on the launcher's */
    int bad;       /* its record or spec cannot be read: started at once, to be failed */
    int priority;  /* POLICY_PRIO_* (0 = normal) */
    /* Fair share (POLICY_FAIR): the owner (NULL: none recorded) and its share, the owner's
     * decayed usage in slot-seconds divided by its weight (run.c, policy_share); jobs of
     * one class start lowest share first. 0 for every job keeps arrival order. */
    const char *owner;
    double share;
} policy_queued_t;

typedef struct {
    double now;
    int slots_total;  /* all the hosts' slots */
    int slots_usable; /* those of hosts up (0: every host down) */
    int sim_slots;    /* simulations at a time; 0 = no sim launcher (such jobs start, to be failed) */
    const policy_running_t *running;
    int nrunning;
    const policy_queued_t *queued;
    int nqueued;
    /* Preemption (policy_preempt): a running job may be stopped for a higher-priority
     * one only after running this long (s), so that nothing thrashes; < 0 = never. */
    double preempt_min_run_s;
    /* Host classes (policy_plan); NULL: none, every slot alike. */
    const struct policy_hetero *hetero;
    /* Users' slot limits (max_slots, common/users.h), parallel to running[] and queued[];
     * NULL: none. running_owner[i]: the user whose slots running[i]'s count to (NULL:
     * nobody); queued_max_slots[i]: the most slots queued[i].owner's jobs may hold at once
     * (0: no limit). A queued job that would take its owner past it waits (reason
     * POLICY_REASON_USER_SLOTS) without holding up anyone else's; simulations hold none. */
    const char *const *running_owner;
    const int *queued_max_slots;
} policy_state_t;

/* Why a queued job waits (POLICY_REASON_NONE: it starts now). */
typedef enum {
    POLICY_REASON_NONE = 0,
    POLICY_REASON_SLOTS,       /* not enough free slots, for it or for the jobs ahead of it */
    POLICY_REASON_HOSTS_DOWN,  /* no usable host */
    POLICY_REASON_SIMULATIONS, /* every sim launcher slot is busy */
    POLICY_REASON_PRIORITY,    /* it would fit, but waits behind a job of a higher priority */
    POLICY_REASON_FAIR_SHARE,  /* it waits behind a later job of another user with less usage */
    POLICY_REASON_USER_SLOTS,  /* its user's running jobs hold their max_slots: it would pass it */
    POLICY_REASON_VIEW,        /* not among the queued jobs the daemon gives the policy (run.c) */
    POLICY_REASON_DRAIN,       /* a host's drain stopped it, and fewer slots are usable than it needs (schedule.c) */
} policy_reason_t;

/* The API's word for a reason: "slots", "hosts down", "simulations", "a higher priority",
 * "its user over their fair share", "its user's slot limit", "behind the scheduler's view", "a host drains". */
const char *policy_reason_name(policy_reason_t r);

#define POLICY_DETAIL_MAX 256

/* One decision per queued job, in the same order. */
typedef struct {
    int start;                      /* 1: claim it now (fifo: the jobs started form a prefix of
                                       the queue; fair: any, the backfilled ones included) */
    int backfilled;                 /* started ahead of the head of the policy's order (fair) */
    int world;                      /* when started: the processes it starts with (elastic: may be fewer) */
    int position;                   /* when waiting: 1 = next to start (fair: in priority order) */
    policy_reason_t reason;         /* when waiting */
    double estimated_start;         /* when waiting: unix s, >= now; < 0 = cannot be estimated */
    char detail[POLICY_DETAIL_MAX]; /* when waiting: the reason and the estimate in a sentence */
    /* policy_plan, when started: its slots per host class (summing to world), and why there */
    int alloc[POLICY_CLASSES_MAX];
    char placement[POLICY_DETAIL_MAX];
} policy_decision_t;

/* Fills out[0..s->nqueued). Returns the number of jobs started. */
int policy_decide(policy_kind_t k, const policy_state_t *s, policy_decision_t *out);

/* fair's decision (priority classes, backfilling) with another order within a class: the
 * larger key[i] first (key parallel to s->queued), then fair's. A waiting job overtaken by a
 * larger key says so in its detail, as `key_name` (e.g. "response ratio"), named `label`
 * ("hetero"). Returns the number of jobs started, -1 when out of memory (nothing decided). */
int policy_decide_keyed(const policy_state_t *s, const double *key, const char *key_name, const char *label,
                        policy_decision_t *out);

/* Fair share's decay: usage (slot-seconds) as of dt seconds ago, halved every half_life
 * seconds, plus slots held through those dt seconds (counted at full weight: the decay of
 * one tick's own use is below a tick's precision). half_life <= 0: no decay. */
double policy_usage_decay(double usage, double dt, double half_life, int slots);

/* An owner's share: usage / weight (weight <= 0 or not finite counts as 1). */
double policy_share(double usage, double weight);

/* Preemption (POLICY_FAIR; fifo never preempts): whether stopping running jobs of a lower
 * priority would let the first waiting job in the policy's order (the lowest position of
 * out, policy_decide's decisions, that its user's max_slots does not hold back) start now. Victims: only jobs of a priority below its own
 * that have run at least s->preempt_min_run_s (and hold launcher slots), lowest priority
 * first, then the most recently started, taken until the freed slots fit it. Writes their
 * indices into s->running to victims (at most max) and the queued job's index to
 * *beneficiary. Returns the number of victims, 0 when none is needed or none would free
 * enough (then nothing is stopped). */
int policy_preempt(policy_kind_t k, const policy_state_t *s, const policy_decision_t *out, int *victims, int max,
                   int *beneficiary);

/* policy_preempt, where a victim may shrink instead of stopping (an elastic restart from
 * its checkpoint on fewer ranks): min_slots[i] is the fewest ranks s->running[i] may go
 * on with (0: it cannot shrink). The first victim in the same order whose shrink to no
 * fewer than that covers what is still missing is shrunk (keep[v]: the ranks it keeps)
 * and the choice ends there; the others are stopped (keep[v] = 0). keep has room for max
 * entries. */
int policy_preempt_elastic(policy_kind_t k, const policy_state_t *s, const policy_decision_t *out, const int *min_slots,
                           int *victims, int *keep, int max, int *beneficiary);

/* The processes a job with that world runs with on these slots (hosts_elastic_world). */
int policy_ranks(const policy_state_t *s, const policy_queued_t *q);

/* "8 ranks on 2 slots: oversubscribed 4x" into out when ranks exceed slots (> 0); returns
 * 1 then, else 0 with out "". */
int policy_oversubscribed(int ranks, int slots, char *out, size_t len);

/* ---- Host classes -------------------------------------------------------
 * Hosts grouped by class (fast, half, quarter: one GPU generation each), each job type with
 * a measured speed per class. A job's throughput on an allocation is the sum of its slots'
 * speeds: pacer's per-node batch split (dynamic batching) gives each slot a batch in
 * proportion to its speed, so a job spanning classes loses nothing to its slowest member.
 * Its normalised throughput is that over the throughput of the same number of slots of the
 * job type's slowest class; hetero maximises the sum over jobs. */
typedef struct {
    const char *name;
    int slots; /* usable slots of the class (hosts x slots per host) */
} policy_class_t;

/* What the class-aware policies know of a job, parallel to the state's running[] or
 * queued[] (same index). */
typedef struct {
    int type;      /* row of speed[] */
    int elastic;   /* runs on min_slots..want (max_slots) slots and may be resized (from its checkpoint) */
    int min_slots; /* the fewest it runs on (= want when not elastic) */
    int want;      /* the slots it asks for (workers) */
    /* The most it may grow to onto idle slots (elastic; Pollux's growth past the ask): past
     * want it runs at policy_grow_factor of its slots' speeds, and the slots past want are
     * the first a waiting job takes back, even before min_run_s. <= want: never past its
     * ask (the daemon's jobs: a worker runs on at most its spec's workers). */
    int max_slots;
    /* running: slots held per class, and when its allocation last changed (started,
     * moved or resized; the state's clock) */
    int alloc[POLICY_CLASSES_MAX];
    double changed;
    /* Its remaining work in samples (the speeds' unit), and when it was submitted (the
     * state's clock); not > 0 (or NaN) = unknown. Known for every job in the round, hetero
     * orders admission by response ratio and weighs slots by completion rate (policy_plan);
     * one unknown and the round is fair's order and the throughput objective. */
    double work;
    double submitted;
    /* What the job is worth beside others (hetero): its term in the objective is multiplied
     * by it. A trial of an ASHA search at rung k is worth rf^k (coordinator/experiment.c,
     * sim/sched_exp.c): the trials the search promoted, the likeliest to train to the end,
     * take the fast slots and new trials fill the slow ones. Not > 0 (or NaN): 1. */
    double worth;
} policy_hjob_t;

typedef struct policy_hetero {
    const policy_class_t *classes;
    int nclasses; /* 1..POLICY_CLASSES_MAX */
    int ntypes;
    /* [type * nclasses + class]: samples/s per slot, measured; not > 0 (or NaN) = unknown,
     * estimated by policy_speed */
    const double *speed;
    /* parallel to the state's running[] and queued[] (required when those are not empty) */
    const policy_hjob_t *running;
    const policy_hjob_t *queued;
    /* A running job's allocation does not change (move, shrink or grow) before it has held
     * it this long (s): the minimum run time between changes. */
    double min_run_s;
    /* Seconds of no progress a start, move or resize costs (a restart from the checkpoint);
     * a change must pay it back within min_run_s. */
    double resize_cost_s;
    /* Hysteresis: a move of running jobs must raise the objective by at least this
     * fraction of the moved jobs' terms of it (0.05 = 5%); a grow must add at least this
     * fraction of the job's slots (and one slot). */
    double hysteresis;
    /* A job grown past its ask (policy_hjob_t.max_slots) keeps its global batch: each rank
     * computes a smaller share while what they exchange per step does not shrink. This is
     * that fixed share of a step at the ask (0.2: a fifth), policy_grow_factor. Not in
     * [0, 1): 0, linear. */
    double grow_overhead;
} policy_hetero_t;

/* A running job's new allocation (policy_plan): grown, shrunk or moved. */
typedef struct {
    int running; /* index into the state's running[] */
    int alloc[POLICY_CLASSES_MAX];
    char reason[POLICY_DETAIL_MAX];
} policy_resize_t;

/* What a job on n slots that asks for want runs at, relative to the sum of its slots'
 * speeds: 1 up to its ask (the per-node batch split, dynamic batching); beyond it Amdahl's
 * law with the step's fixed share overhead (policy_hetero_t.grow_overhead): a step at the
 * ask is (1 - overhead) compute, split over the ranks, and overhead exchange, so on n slots
 * it takes (1 - overhead) want / n + overhead of the ask's time, and the job's rate is
 * n / want times the ask's over 1 + overhead (n - want) / want. */
double policy_grow_factor(int n, int want, double overhead);
/* A job's samples/s on alloc[0..nc) (slots per class; speed[c]: one slot's on class c):
 * the sum of its slots' speeds times policy_grow_factor. The simulator's throughput model
 * and the policy's objective, one rule. */
double policy_alloc_rate(const double *speed, const int *alloc, int nc, int want, double overhead);

/* A job's elastic bounds (policy_hjob_t), one rule for the daemon (run.c: the spec's
 * min_workers and max_workers, queued and running) and the simulator (a trace's "elastic":
 * true is least 1, false least = most = want): elastic when least < want or most > want;
 * then min_slots = least (at most room: the slots a running job holds, every usable slot for
 * a queued one), want at most usable, max_slots = most (at most usable). A rigid job's
 * min_slots, want and max_slots are left as the caller set them. */
void policy_hjob_bounds(policy_hjob_t *j, int want, int least, int most, int usable, int room);

/* A type's speed per slot on a class: the measured one, or the estimate when unknown: its
 * speed on the class where it was measured (the fastest such) scaled by the classes'
 * relative speed as the other types measured both (the geometric mean of their ratios;
 * 1 when no type measured both); 1 when the type was measured nowhere (every class alike). */
double policy_speed(const policy_hetero_t *h, int type, int cls);

/* policy_decide with host classes (s->hetero set): the same decisions, each started job's
 * slots per class in alloc (fifo and fair: first-fit in class order, every slot alike), and
 * for hetero and agnostic the running jobs' changes into rz (room for s->nrunning), their
 * count in *nrz. Returns the number of jobs started, -1 when s->hetero is NULL or lacks its
 * classes or jobs, or out of memory (then nothing is decided). */
int policy_plan(policy_kind_t k, const policy_state_t *s, policy_decision_t *out, policy_resize_t *rz, int *nrz);

#endif
