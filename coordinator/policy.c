/* coordinator/policy.c - see policy.h. */
#include "policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hosts.h"

/* The policies by name; daemon: what pacer-coordinator --policy accepts (all of them: the
 * tick builds the class-aware ones' host classes, schedule.c and hclass.h). */
static const struct {
    const char *name;
    policy_kind_t kind;
    int daemon;
} policy_names[] = {
    {"fifo", POLICY_FIFO, 1},
    {"fair", POLICY_FAIR, 1},
    {"hetero", POLICY_HETERO, 1},
    {"agnostic", POLICY_AGNOSTIC, 1},
};
#define POLICY_NNAMES (sizeof policy_names / sizeof policy_names[0])

static int parse_kind(const char *name, int daemon_only, policy_kind_t *out, char *err, size_t errlen)
{
    for (size_t i = 0; i < POLICY_NNAMES; i++)
        if (name && (!daemon_only || policy_names[i].daemon) && strcmp(name, policy_names[i].name) == 0) {
            *out = policy_names[i].kind;
            return 0;
        }
    snprintf(err, errlen, "--policy: '%.40s' is not a policy: %s", name ? name : "", "fifo, fair, agnostic or hetero");
    return -1;
}

int policy_parse(const char *name, policy_kind_t *out, char *err, size_t errlen)
{
    return parse_kind(name, 1, out, err, errlen);
}

int policy_parse_any(const char *name, policy_kind_t *out, char *err, size_t errlen)
{
    return parse_kind(name, 0, out, err, errlen);
}

const char *policy_name(policy_kind_t k)
{
    for (size_t i = 0; i < POLICY_NNAMES; i++)
        if (policy_names[i].kind == k) return policy_names[i].name;
    return "fifo";
}

int policy_priority(const char *name)
{
    if (name && strcmp(name, "high") == 0) return POLICY_PRIO_HIGH;
    if (name && strcmp(name, "low") == 0) return POLICY_PRIO_LOW;
    return POLICY_PRIO_NORMAL;
}

const char *policy_reason_name(policy_reason_t r)
{
    switch (r) {
    case POLICY_REASON_SLOTS: return "slots";
    case POLICY_REASON_HOSTS_DOWN: return "hosts down";
    case POLICY_REASON_SIMULATIONS: return "simulations";
    case POLICY_REASON_PRIORITY: return "a higher priority";
    case POLICY_REASON_FAIR_SHARE: return "its user over their fair share";
    case POLICY_REASON_USER_SLOTS: return "its user's slot limit";
    case POLICY_REASON_VIEW: return "behind the scheduler's view";
    case POLICY_REASON_DRAIN: return "a host drains";
    case POLICY_REASON_NONE: break;
    }
    return "";
}

double policy_usage_decay(double usage, double dt, double half_life, int slots)
{
    if (!isfinite(usage) || usage < 0) usage = 0;
    if (!(dt > 0)) return usage;
    if (half_life > 0) usage *= exp2(-dt / half_life);
    return usage + (slots > 0 ? slots * dt : 0);
}

double policy_share(double usage, double weight)
{
    if (!isfinite(usage) || usage < 0) usage = 0;
    if (!isfinite(weight) || weight <= 0) weight = 1;
    return usage / weight;
}

int policy_ranks(const policy_state_t *s, const policy_queued_t *q)
{
    return hosts_elastic_world(q->world, q->min_world, s->slots_total, s->slots_usable);
}

int policy_oversubscribed(int ranks, int slots, char *out, size_t len)
{
    if (len) out[0] = 0;
    if (slots <= 0 || ranks <= slots) return 0;
    snprintf(out, len, "%d ranks on %d slot%s: oversubscribed %.3gx", ranks, slots, slots == 1 ? "" : "s",
             (double)ranks / slots);
    return 1;
}

/* What holds slots in the estimate's timeline: the running jobs, then the queued ones
 * as the timeline starts them (their end unknown: nothing measured their progress). */
typedef struct {
    const char *id;
    int slots, simulated, active, running;
    double finish; /* < 0 unknown */
} holder_t;

/* Releases holders, soonest end first, until `fits` says the job fits; *t advances to
 * each end. Returns 0, or -1 with *blocker the first holder whose end is unknown. */
static int release_until(holder_t *h, int nh, int simulated, int *used, int need, int cap, double *t,
                         const holder_t **blocker)
{
    while (*used > 0 && *used + need > cap) {
        int best = -1;
        *blocker = NULL;
        for (int i = 0; i < nh; i++) {
            if (!h[i].active || h[i].simulated != simulated) continue;
            if (h[i].finish < 0) {
                if (!*blocker) *blocker = &h[i];
                continue;
            }
            if (best < 0 || h[i].finish < h[best].finish) best = i;
        }
        if (best < 0) return -1;
        h[best].active = 0;
        *used -= simulated ? 1 : h[best].slots;
        if (h[best].finish > *t) *t = h[best].finish;
    }
    return 0;
}

/* The estimates: the queue (in the policy's order) replayed on a timeline where each
 * running job ends when its measured progress says; a waiting job starts once the jobs
 * ahead of it have started and enough slots are free. The jobs started now hold their
 * slots with an end nobody knows yet. Past the first job that cannot be estimated, none
 * can (the order is kept). Unknown ones get why appended to their detail. */
static void estimate(const policy_state_t *s, const policy_queued_t *qs, const unsigned char *held,
                     policy_decision_t *out)
{
    int nh = s->nrunning + s->nqueued, used = 0, sims = 0;
    holder_t *h = calloc(nh > 0 ? (size_t)nh : 1, sizeof *h);
    int k = 0;
    for (int i = 0; h && i < s->nrunning; i++) {
        h[k++] = (holder_t){s->running[i].id,       s->running[i].slots, s->running[i].simulated, 1, 1,
                            s->running[i].finish_at};
        if (s->running[i].simulated) sims++;
        else used += s->running[i].slots;
    }
    for (int i = 0; h && i < s->nqueued; i++)
        if (out[i].start && !qs[i].bad && !(qs[i].simulated && s->sim_slots <= 0)) {
            h[k++] = (holder_t){qs[i].id, out[i].world, qs[i].simulated, 1, 1, -1};
            if (qs[i].simulated) sims++;
            else used += out[i].world;
        }
    double t = s->now;
    char unknown[POLICY_DETAIL_MAX] = "";
    for (int i = 0; i < s->nqueued; i++) {
        const policy_queued_t *q = &qs[i];
        policy_decision_t *d = &out[i];
        if (d->start) continue;
        d->estimated_start = -1;
        if (held && held[i]) continue; /* when its user's other jobs end is not known either */
        if (!h) snprintf(unknown, sizeof unknown, "start not estimated: out of memory");
        if (unknown[0]) {
            snprintf(d->detail + strlen(d->detail), sizeof d->detail - strlen(d->detail), "; %s", unknown);
            continue;
        }
        const holder_t *blocker = NULL;
        int need = q->simulated ? 1 : policy_ranks(s, q);
        int rc;
        if (q->bad || (q->simulated && s->sim_slots <= 0)) rc = 0; /* started at once, to be failed */
        else if (q->simulated) rc = release_until(h, k, 1, &sims, 1, s->sim_slots, &t, &blocker);
        else if (s->slots_usable <= 0) {
            snprintf(unknown, sizeof unknown, "start not estimated: no host is usable");
            rc = -2;
        } else rc = release_until(h, k, 0, &used, need, s->slots_usable, &t, &blocker);
        if (rc == -1) {
            if (blocker && blocker->running)
                snprintf(unknown, sizeof unknown, "start not estimated: %s has measured no progress yet", blocker->id);
            else
                snprintf(unknown, sizeof unknown, "start not estimated: %s, ahead of it, has not started yet",
                         blocker ? blocker->id : "a job");
        }
        if (rc != 0) {
            snprintf(d->detail + strlen(d->detail), sizeof d->detail - strlen(d->detail), "; %s", unknown);
            continue;
        }
        d->estimated_start = t;
        if (q->bad || (q->simulated && s->sim_slots <= 0)) continue;
        h[k++] = (holder_t){q->id, need, q->simulated, 1, 0, -1};
        if (q->simulated) sims++;
        else used += need;
    }
    free(h);
}

/* Slots the jobs running now (and those started now, whose end is unknown) still hold at
 * time t: every measured end at or before t has freed its slots. */
static int used_at(const policy_state_t *s, int used_now, double t)
{
    int used = used_now;
    for (int i = 0; i < s->nrunning; i++) {
        const policy_running_t *r = &s->running[i];
        if (!r->simulated && r->finish_at >= 0 && (r->finish_at <= t || r->finish_at <= s->now)) used -= r->slots;
    }
    return used;
}

/* The slots each user's jobs hold (running, and started by this decision), for their
 * max_slots (policy_queued_t.owner_max_slots). */
typedef struct {
    const char **owner;
    int *used;
    int n, cap;
} owner_slots_t;

static int owner_slots_init(owner_slots_t *o, const policy_state_t *s)
{
    o->cap = s->nrunning + s->nqueued + 1;
    o->n = 0;
    o->owner = calloc((size_t)o->cap, sizeof *o->owner);
    o->used = calloc((size_t)o->cap, sizeof *o->used);
    if (o->owner && o->used) return 0;
    free(o->owner);
    free(o->used);
    *o = (owner_slots_t){0};
    return -1;
}

static void owner_slots_free(owner_slots_t *o)
{
    free(o->owner);
    free(o->used);
}

/* The count of owner's slots (NULL: none, out of memory too). */
static int *owner_slots_of(owner_slots_t *o, const char *owner)
{
    if (!owner || !o->owner || !o->used) return NULL;
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->owner[i], owner) == 0) return &o->used[i];
    if (o->n >= o->cap) return NULL;
    o->owner[o->n] = owner;
    o->used[o->n] = 0;
    return &o->used[o->n++];
}

/* queued[i]'s owner's max_slots (0: no limit). */
static int max_slots_of(const policy_state_t *s, int i)
{
    return s->queued_max_slots && s->queued_max_slots[i] > 0 ? s->queued_max_slots[i] : 0;
}

/* Whether queued job i, starting with need slots, would take its owner past their max_slots. */
static int over_user_slots(const policy_state_t *s, owner_slots_t *o, int i, int need)
{
    const policy_queued_t *q = &s->queued[i];
    int *used = q->simulated || q->bad || !max_slots_of(s, i) ? NULL : owner_slots_of(o, q->owner);
    return used && *used + need > max_slots_of(s, i);
}

static void owner_slots_take(owner_slots_t *o, const policy_queued_t *q, int slots)
{
    int *used = q->simulated ? NULL : owner_slots_of(o, q->owner);
    if (used) *used += slots;
}

/* How a queue was ordered, for the waiting jobs' details: arrival (each one's index in
 * arrival order; NULL under fifo), and with a key (policy_decide_keyed; NULL: fair's share)
 * its value per job in the same order, its name and the policy's label. */
typedef struct {
    const int *arrival;
    const double *key;
    const char *key_name, *label;
} order_t;

/* What a decision has counted so far: the launcher's slots and the simulations in use,
 * each user's slots, and which waiting jobs their user's max_slots holds back (held NULL,
 * out of memory: then no count is kept either, and nothing is held back). */
typedef struct {
    int used, sims;
    owner_slots_t os;
    unsigned char *held;
} tally_t;

/* The starts over qs, the queue in the policy's order: the prefix that fits now, in order
 * (a job its user's max_slots holds back is passed over: it blocks nobody); with backfill,
 * jobs behind the first waiting one (the head) that fit now and cannot delay the head's
 * estimated start: they fit in the slots left over at that time once the head has its own
 * (their own ends are not measured yet, so they are counted as holding their slots past
 * it). A head without an estimate lets nothing ahead of it but simulations (which use other
 * slots). Returns the head's index, -1 when none waits. */
static int decide_starts(const policy_state_t *s, const policy_queued_t *qs, policy_decision_t *out, int backfill,
                         tally_t *t)
{
    int n = s->nqueued, started = 0;
    for (; started < n; started++) {
        const policy_queued_t *q = &qs[started];
        policy_decision_t *d = &out[started];
        if (q->bad) {
            d->start = 1;
            continue;
        }
        if (q->simulated) {
            if (s->sim_slots > 0 && t->sims >= s->sim_slots) break;
            d->start = 1;
            d->world = q->world;
            t->sims++;
            continue;
        }
        if (s->slots_usable <= 0) break;
        int fits = policy_ranks(s, q);
        if (t->held && over_user_slots(s, &t->os, started, fits)) {
            t->held[started] = 1;
            continue;
        }
        if (t->used > 0 && t->used + fits > s->slots_usable) break;
        d->start = 1;
        d->world = fits;
        t->used += fits;
        owner_slots_take(&t->os, q, fits);
    }
    int head = started < n ? started : -1;
    if (!backfill || head < 0) return head;
    const policy_queued_t *hq = &qs[head];
    policy_decision_t *scratch = malloc((size_t)n * sizeof *scratch);
    double th = -1;
    if (scratch) {
        memcpy(scratch, out, (size_t)n * sizeof *scratch);
        estimate(s, qs, t->held, scratch);
        th = scratch[head].estimated_start;
        free(scratch);
    }
    long spare = -1; /* launcher slots a backfilled job may take; -1 = none */
    if (hq->simulated) spare = s->slots_usable;
    else if (th >= 0 && s->slots_usable > 0)
        spare = (long)s->slots_usable - used_at(s, t->used, th) - policy_ranks(s, hq);
    for (int i = head + 1; i < n; i++) {
        const policy_queued_t *q = &qs[i];
        policy_decision_t *d = &out[i];
        if (q->bad) {
            d->start = d->backfilled = 1;
        } else if (q->simulated) {
            if (hq->simulated || (s->sim_slots > 0 && t->sims >= s->sim_slots)) continue;
            d->start = d->backfilled = 1;
            d->world = q->world;
            t->sims++;
        } else {
            int need = policy_ranks(s, q);
            if (s->slots_usable <= 0 || t->used + need > s->slots_usable || need > spare ||
                over_user_slots(s, &t->os, i, need))
                continue;
            d->start = d->backfilled = 1;
            d->world = need;
            t->used += need;
            spare -= need;
            owner_slots_take(&t->os, q, need);
        }
    }
    return head;
}

/* The sentence of queued job i, which its user's max_slots holds back. */
static void held_detail(const policy_state_t *s, owner_slots_t *os, int i, int need, policy_decision_t *d)
{
    const policy_queued_t *q = &s->queued[i];
    int *used = owner_slots_of(os, q->owner);
    snprintf(d->detail, sizeof d->detail,
             "waits for its user %.32s's running jobs to hold fewer slots: they hold %d, their limit (max_slots) "
             "is %d, and it needs %d",
             q->owner ? q->owner : "(none)", used ? *used : 0, max_slots_of(s, i), need);
}

/* The waiting jobs' positions, reasons and sentences (not their estimates): each its own
 * reason when it would not fit now (or its user's max_slots holds it back), else the
 * head's (or the head's priority, when higher than its own). Returns the jobs started. */
static int decide_waits(const policy_state_t *s, const policy_queued_t *qs, const order_t *o, const char *label,
                        int head, tally_t *t, policy_decision_t *out)
{
    const int *arrival = o ? o->arrival : NULL;
    policy_reason_t head_reason = POLICY_REASON_NONE;
    int position = 0, nstarted = 0, used = t->used, sims = t->sims;
    for (int i = 0; i < s->nqueued; i++) {
        const policy_queued_t *q = &qs[i];
        policy_decision_t *d = &out[i];
        if (d->start) {
            nstarted++;
            continue;
        }
        d->position = ++position;
        int need = q->simulated ? 1 : policy_ranks(s, q);
        if (t->held && (t->held[i] || (head >= 0 && i > head && over_user_slots(s, &t->os, i, need)))) {
            t->held[i] = 1;
            d->reason = POLICY_REASON_USER_SLOTS;
            held_detail(s, &t->os, i, need, d);
            continue;
        }
        policy_reason_t own = POLICY_REASON_NONE;
        if (q->simulated && s->sim_slots > 0 && sims >= s->sim_slots) own = POLICY_REASON_SIMULATIONS;
        else if (!q->simulated && !q->bad && s->slots_usable <= 0) own = POLICY_REASON_HOSTS_DOWN;
        else if (!q->simulated && !q->bad && used > 0 && used + need > s->slots_usable) own = POLICY_REASON_SLOTS;
        if (i == head) head_reason = own ? own : POLICY_REASON_SLOTS;
        int higher = head >= 0 && i != head && qs[head].priority > q->priority;
        /* Overtaken only because another user has used less (or, keyed, another job's key
         * is larger): a job ahead of it in the policy's order (the head, or one started now)
         * of the same class, with a smaller share (a larger key), that arrived after it.
         * Said even when it would not fit now: without that it would be ahead of that job. */
        int by = -1;
        for (int b = 0; arrival && b < i && by < 0 && (own == POLICY_REASON_NONE || own == POLICY_REASON_SLOTS); b++)
            if ((b == head || out[b].start) && qs[b].priority == q->priority && arrival[b] > arrival[i] &&
                (o->key ? o->key[b] > o->key[i] : qs[b].share < q->share))
                by = b;
        int keyed = by >= 0 && o->key;
        d->reason = by >= 0 && !keyed ? POLICY_REASON_FAIR_SHARE
                    : own             ? own
                    : higher          ? POLICY_REASON_PRIORITY
                                      : head_reason;
        int freeslots = s->slots_usable - used > 0 ? s->slots_usable - used : 0;
        if (d->reason == POLICY_REASON_HOSTS_DOWN)
            snprintf(d->detail, sizeof d->detail, "waits for a usable host: every host is down");
        else if (keyed)
            snprintf(d->detail, sizeof d->detail, "%s %s, submitted later: its %s is %.2f against %.2f (%s)",
                     out[by].start ? "overtaken by" : "waits behind", qs[by].id, o->key_name ? o->key_name : "key",
                     o->key[by], o->key[i], label);
        else if (by >= 0)
            snprintf(d->detail, sizeof d->detail,
                     "%s %s, submitted later: its user %.32s is over their fair share (usage/weight %.0f slot-s "
                     "against %.32s's %.0f) (fair)",
                     out[by].start ? "overtaken by" : "waits behind", qs[by].id, q->owner ? q->owner : "(none)",
                     q->share, qs[by].owner ? qs[by].owner : "(none)", qs[by].share);
        else if (own == POLICY_REASON_SIMULATIONS)
            snprintf(d->detail, sizeof d->detail, "waits for a simulation slot: %d of %d in use", sims, s->sim_slots);
        else if (own == POLICY_REASON_SLOTS || head < 0)
            snprintf(d->detail, sizeof d->detail, "waits for %d slot%s: %d of %d free", need, need == 1 ? "" : "s",
                     freeslots, s->slots_usable);
        else if (higher)
            snprintf(d->detail, sizeof d->detail, "waits behind %s, of a higher priority (%s)", qs[head].id, label);
        else
            snprintf(d->detail, sizeof d->detail, "waits behind %s, ahead of it in the queue (%s)", qs[head].id, label);
    }
    return nstarted;
}

/* The decisions over qs, the queue in the policy's order (o: how; NULL under fifo; backfill
 * under every policy but fifo): decide_starts, decide_waits, then the estimates. */
static int decide_ordered(const policy_state_t *s, const policy_queued_t *qs, const order_t *o, policy_decision_t *out,
                          int backfill)
{
    const char *label = o && o->label ? o->label : backfill ? "fair" : "fifo";
    int n = s->nqueued;
    tally_t t = {0};
    t.held = calloc((size_t)n + 1, 1);
    /* out of memory: no user's max_slots holds anything back (over_user_slots finds no count) */
    if (t.held && owner_slots_init(&t.os, s) != 0) {
        free(t.held);
        t.held = NULL;
    }
    for (int i = 0; i < s->nrunning; i++) {
        if (s->running[i].simulated) t.sims++;
        else t.used += s->running[i].slots;
        int *u = s->running[i].simulated || !s->running_owner ? NULL : owner_slots_of(&t.os, s->running_owner[i]);
        if (u) *u += s->running[i].slots;
    }
    memset(out, 0, (size_t)n * sizeof *out);
    int head = decide_starts(s, qs, out, backfill, &t);
    int nstarted = decide_waits(s, qs, o, label, head, &t, out);
    estimate(s, qs, t.held, out);
    free(t.held);
    owner_slots_free(&t.os);
    return nstarted;
}

/* fair's order: 1 when queued job a must come after b (a lower priority; or the same and,
 * with a key, a smaller key; or an equal key and a larger share). */
static int after(const policy_state_t *s, const double *key, int a, int b)
{
    const policy_queued_t *x = &s->queued[a], *y = &s->queued[b];
    if (x->priority != y->priority) return x->priority < y->priority;
    if (key && key[a] != key[b]) return key[a] < key[b];
    return x->share > y->share;
}

/* fair (key NULL) or keyed: the queue by priority, then key (largest first), then share
 * (lowest first), arrival order among equals (a stable insertion sort of the indices),
 * decided as FIFO with backfilling, the decisions put back in queue order. -1 when out of
 * memory. */
static int decide_sorted(const policy_state_t *s, const double *key, const char *key_name, const char *label,
                         policy_decision_t *out)
{
    int n = s->nqueued;
    size_t m = (size_t)(n > 0 ? n : 1);
    int *ord = malloc(m * sizeof *ord);
    policy_queued_t *qs = calloc(m, sizeof *qs);
    policy_decision_t *d = malloc(m * sizeof *d);
    double *ks = key ? malloc(m * sizeof *ks) : NULL;
    int *mx = s->queued_max_slots ? malloc(m * sizeof *mx) : NULL;
    int started = -1;
    if (ord && qs && d && (ks || !key) && (mx || !s->queued_max_slots)) {
        for (int i = 0; i < n; i++) {
            int j = i;
            for (; j > 0 && after(s, key, ord[j - 1], i); j--) ord[j] = ord[j - 1];
            ord[j] = i;
        }
        for (int i = 0; i < n; i++) {
            qs[i] = s->queued[ord[i]];
            if (ks) ks[i] = key[ord[i]];
            if (mx) mx[i] = s->queued_max_slots[ord[i]];
        }
        policy_state_t st = *s;
        st.queued = qs;
        st.queued_max_slots = mx;
        order_t o = {ord, ks, key_name, label};
        started = decide_ordered(&st, qs, &o, d, 1);
        for (int i = 0; i < n; i++) out[ord[i]] = d[i];
    }
    free(ord);
    free(qs);
    free(d);
    free(ks);
    free(mx);
    return started;
}

int policy_decide(policy_kind_t k, const policy_state_t *s, policy_decision_t *out)
{
    int started = k == POLICY_FIFO ? -1 : decide_sorted(s, NULL, NULL, NULL, out);
    /* fifo, or out of memory: the plain order, which needs none of it */
    return started >= 0 ? started : decide_ordered(s, s->queued, NULL, out, 0);
}

int policy_decide_keyed(const policy_state_t *s, const double *key, const char *key_name, const char *label,
                        policy_decision_t *out)
{
    return decide_sorted(s, key, key_name, label, out);
}

int policy_preempt(policy_kind_t k, const policy_state_t *s, const policy_decision_t *out, int *victims, int max,
                   int *beneficiary)
{
    return policy_preempt_elastic(k, s, out, NULL, victims, NULL, max, beneficiary);
}

int policy_preempt_elastic(policy_kind_t k, const policy_state_t *s, const policy_decision_t *out, const int *min_slots,
                           int *victims, int *keep, int max, int *beneficiary)
{
    *beneficiary = -1;
    if (k != POLICY_FAIR || s->preempt_min_run_s < 0 || s->slots_usable <= 0) return 0;
    int head = -1;
    for (int i = 0; i < s->nqueued; i++)
        if (!out[i].start && out[i].reason != POLICY_REASON_USER_SLOTS &&
            (head < 0 || out[i].position < out[head].position))
            head = i;
    if (head < 0) return 0;
    const policy_queued_t *q = &s->queued[head];
    if (q->bad || q->simulated) return 0;
    int used = 0, nv = 0;
    for (int i = 0; i < s->nrunning; i++)
        if (!s->running[i].simulated) used += s->running[i].slots;
    for (int i = 0; i < s->nqueued; i++)
        if (out[i].start && !s->queued[i].simulated && !s->queued[i].bad) used += out[i].world;
    int need = policy_ranks(s, q), freed = s->slots_usable - used;
    /* A selection sort over the few running jobs: the next victim is the eligible one of
     * the lowest priority, then the latest start, not taken yet. */
    while (freed < need && nv < max) {
        int best = -1;
        for (int i = 0; i < s->nrunning; i++) {
            const policy_running_t *r = &s->running[i];
            int taken = 0;
            for (int v = 0; v < nv && !taken; v++) taken = victims[v] == i;
            if (taken || r->simulated || r->slots <= 0 || r->priority >= q->priority || r->started <= 0 ||
                s->now - r->started < s->preempt_min_run_s)
                continue;
            const policy_running_t *b = best >= 0 ? &s->running[best] : NULL;
            if (!b || r->priority < b->priority || (r->priority == b->priority && r->started > b->started)) best = i;
        }
        if (best < 0) break;
        const policy_running_t *b = &s->running[best];
        /* keep NULL: victims only stop (policy_preempt) */
        int spare = keep && min_slots && min_slots[best] > 0 ? b->slots - min_slots[best] : 0;
        if (keep) keep[nv] = spare >= need - freed ? b->slots - (need - freed) : 0;
        victims[nv++] = best;
        freed += keep && keep[nv - 1] ? need - freed : b->slots;
    }
    if (freed < need) return 0;
    *beneficiary = head;
    return nv;
}
