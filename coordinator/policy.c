/* coordinator/policy.c - see policy.h. */
#include "policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hosts.h"

/* The policies by name; daemon: what pacer-coordinator --policy accepts (all of them: the
 * tick builds the class-aware ones' host classes, run.c run_schedule and hclass.h). */
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
static void estimate(const policy_state_t *s, const policy_queued_t *qs, policy_decision_t *out)
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

/* How a queue was ordered, for the waiting jobs' details: arrival (each one's index in
 * arrival order; NULL under fifo), and with a key (policy_decide_keyed; NULL: fair's share)
 * its value per job in the same order, its name and the policy's label. */
typedef struct {
    const int *arrival;
    const double *key;
    const char *key_name, *label;
} order_t;

/* The decisions over qs, the queue in the policy's order (o: how; NULL under fifo). backfill: jobs behind the first
 * waiting one (the head) start when they fit now and cannot delay the head's estimated
 * start: they fit in the slots left over at that time once the head has its own (their
 * own ends are not measured yet, so they are counted as holding their slots past it). A
 * head without an estimate lets nothing ahead of it but simulations (which use other
 * slots). */
static int decide_ordered(const policy_state_t *s, const policy_queued_t *qs, const order_t *o, policy_decision_t *out,
                          int backfill)
{
    const int *arrival = o ? o->arrival : NULL;
    const char *label = o && o->label ? o->label : backfill ? "fair" : "fifo";
    int used = 0, sims = 0, n = s->nqueued;
    for (int i = 0; i < s->nrunning; i++) {
        if (s->running[i].simulated) sims++;
        else used += s->running[i].slots;
    }
    memset(out, 0, (size_t)n * sizeof *out);
    int started = 0;
    /* Starts: the prefix that fits now, in order. */
    for (; started < n; started++) {
        const policy_queued_t *q = &qs[started];
        policy_decision_t *d = &out[started];
        if (q->bad) {
            d->start = 1;
            continue;
        }
        if (q->simulated) {
            if (s->sim_slots > 0 && sims >= s->sim_slots) break;
            d->start = 1;
            d->world = q->world;
            sims++;
            continue;
        }
        if (s->slots_usable <= 0) break;
        int fits = policy_ranks(s, q);
        if (used > 0 && used + fits > s->slots_usable) break;
        d->start = 1;
        d->world = fits;
        used += fits;
    }
    int head = started < n ? started : -1;
    if (backfill && head >= 0) {
        const policy_queued_t *hq = &qs[head];
        policy_decision_t *scratch = malloc((size_t)n * sizeof *scratch);
        double th = -1;
        if (scratch) {
            memcpy(scratch, out, (size_t)n * sizeof *scratch);
            estimate(s, qs, scratch);
            th = scratch[head].estimated_start;
            free(scratch);
        }
        long spare = -1; /* launcher slots a backfilled job may take; -1 = none */
        if (hq->simulated) spare = s->slots_usable;
        else if (th >= 0 && s->slots_usable > 0)
            spare = (long)s->slots_usable - used_at(s, used, th) - policy_ranks(s, hq);
        for (int i = head + 1; i < n; i++) {
            const policy_queued_t *q = &qs[i];
            policy_decision_t *d = &out[i];
            if (q->bad) {
                d->start = d->backfilled = 1;
            } else if (q->simulated) {
                if (hq->simulated || (s->sim_slots > 0 && sims >= s->sim_slots)) continue;
                d->start = d->backfilled = 1;
                d->world = q->world;
                sims++;
            } else {
                int need = policy_ranks(s, q);
                if (s->slots_usable <= 0 || used + need > s->slots_usable || need > spare) continue;
                d->start = d->backfilled = 1;
                d->world = need;
                used += need;
                spare -= need;
            }
        }
    }
    /* The rest wait: each its own reason when it would not fit now, else the head's (or
     * the head's priority, when higher than its own). */
    policy_reason_t head_reason = POLICY_REASON_NONE;
    int position = 0, nstarted = 0;
    for (int i = 0; i < n; i++) {
        const policy_queued_t *q = &qs[i];
        policy_decision_t *d = &out[i];
        if (d->start) {
            nstarted++;
            continue;
        }
        d->position = ++position;
        int need = q->simulated ? 1 : policy_ranks(s, q);
        policy_reason_t own = POLICY_REASON_NONE;
        if (q->simulated && s->sim_slots > 0 && sims >= s->sim_slots) own = POLICY_REASON_SIMULATIONS;
        else if (!q->simulated && !q->bad && s->slots_usable <= 0) own = POLICY_REASON_HOSTS_DOWN;
        else if (!q->simulated && !q->bad && used > 0 && used + need > s->slots_usable) own = POLICY_REASON_SLOTS;
        if (i == head) head_reason = own ? own : POLICY_REASON_SLOTS;
        int higher = i != head && qs[head].priority > q->priority;
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
        else if (own == POLICY_REASON_SLOTS)
            snprintf(d->detail, sizeof d->detail, "waits for %d slot%s: %d of %d free", need, need == 1 ? "" : "s",
                     freeslots, s->slots_usable);
        else if (higher)
            snprintf(d->detail, sizeof d->detail, "waits behind %s, of a higher priority (%s)", qs[head].id, label);
        else
            snprintf(d->detail, sizeof d->detail, "waits behind %s, ahead of it in the queue (%s)", qs[head].id, label);
    }
    estimate(s, qs, out);
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
    int started = -1;
    if (ord && qs && d && (ks || !key)) {
        for (int i = 0; i < n; i++) {
            int j = i;
            for (; j > 0 && after(s, key, ord[j - 1], i); j--) ord[j] = ord[j - 1];
            ord[j] = i;
        }
        for (int i = 0; i < n; i++) {
            qs[i] = s->queued[ord[i]];
            if (ks) ks[i] = key[ord[i]];
        }
        policy_state_t st = *s;
        st.queued = qs;
        order_t o = {ord, ks, key_name, label};
        started = decide_ordered(&st, qs, &o, d, 1);
        for (int i = 0; i < n; i++) out[ord[i]] = d[i];
    }
    free(ord);
    free(qs);
    free(d);
    free(ks);
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
    for (int i = 0; i < s->nqueued && head < 0; i++)
        if (!out[i].start && out[i].position == 1) head = i;
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
