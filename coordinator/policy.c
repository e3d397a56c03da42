/* coordinator/policy.c - see policy.h. */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hosts.h"

int policy_parse(const char *name, policy_kind_t *out, char *err, size_t errlen)
{
    if (name && strcmp(name, "fifo") == 0) {
        *out = POLICY_FIFO;
        return 0;
    }
    snprintf(err, errlen, "--policy: '%.40s' is not a policy; the one there is: fifo", name ? name : "");
    return -1;
}

const char *policy_name(policy_kind_t k)
{
    (void)k;
    return "fifo";
}

const char *policy_reason_name(policy_reason_t r)
{
    switch (r) {
    case POLICY_REASON_SLOTS: return "slots";
    case POLICY_REASON_HOSTS_DOWN: return "hosts down";
    case POLICY_REASON_SIMULATIONS: return "simulations";
    case POLICY_REASON_NONE: break;
    }
    return "";
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

/* FIFO's estimates: the queue replayed on a timeline where each job ends when its measured
 * progress says; a waiting job starts once the jobs ahead of it have started and enough
 * slots are free. Past the first job that cannot be estimated, none can (FIFO keeps the
 * order). */
static void fifo_estimate(const policy_state_t *s, policy_decision_t *out, int first, int used, int sims)
{
    int nh = s->nrunning + s->nqueued;
    holder_t *h = calloc(nh > 0 ? (size_t)nh : 1, sizeof *h);
    int k = 0;
    for (int i = 0; h && i < s->nrunning; i++)
        h[k++] = (holder_t){s->running[i].id,       s->running[i].slots, s->running[i].simulated, 1, 1,
                            s->running[i].finish_at};
    for (int i = 0; h && i < first; i++)
        if (!s->queued[i].bad) /* started now, ends when nobody knows */
            h[k++] = (holder_t){s->queued[i].id, out[i].world, s->queued[i].simulated, 1, 1, -1};
    double t = s->now;
    char unknown[POLICY_DETAIL_MAX] = "";
    for (int i = first; i < s->nqueued; i++) {
        const policy_queued_t *q = &s->queued[i];
        policy_decision_t *d = &out[i];
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

int policy_decide(policy_kind_t k, const policy_state_t *s, policy_decision_t *out)
{
    (void)k; /* FIFO is the only policy so far */
    int used = 0, sims = 0;
    for (int i = 0; i < s->nrunning; i++) {
        if (s->running[i].simulated) sims++;
        else used += s->running[i].slots;
    }
    int started = 0;
    memset(out, 0, (size_t)s->nqueued * sizeof *out);
    /* Starts: the queue's prefix that fits now, in order. */
    for (; started < s->nqueued; started++) {
        const policy_queued_t *q = &s->queued[started];
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
    /* The rest wait: each its own reason when it would not fit now, else the one of the
     * job ahead that holds the queue. */
    policy_reason_t head_reason = POLICY_REASON_NONE;
    const char *head_id = NULL;
    for (int i = started; i < s->nqueued; i++) {
        const policy_queued_t *q = &s->queued[i];
        policy_decision_t *d = &out[i];
        d->position = i - started + 1;
        int need = q->simulated ? 1 : policy_ranks(s, q);
        policy_reason_t own = POLICY_REASON_NONE;
        if (q->simulated && s->sim_slots > 0 && sims >= s->sim_slots) own = POLICY_REASON_SIMULATIONS;
        else if (!q->simulated && !q->bad && s->slots_usable <= 0) own = POLICY_REASON_HOSTS_DOWN;
        else if (!q->simulated && !q->bad && used > 0 && used + need > s->slots_usable) own = POLICY_REASON_SLOTS;
        if (i == started) {
            head_reason = own ? own : POLICY_REASON_SLOTS;
            head_id = q->id;
        }
        d->reason = own ? own : head_reason;
        int freeslots = s->slots_usable - used > 0 ? s->slots_usable - used : 0;
        if (d->reason == POLICY_REASON_HOSTS_DOWN)
            snprintf(d->detail, sizeof d->detail, "waits for a usable host: every host is down");
        else if (own == POLICY_REASON_SIMULATIONS)
            snprintf(d->detail, sizeof d->detail, "waits for a simulation slot: %d of %d in use", sims, s->sim_slots);
        else if (own == POLICY_REASON_SLOTS)
            snprintf(d->detail, sizeof d->detail, "waits for %d slot%s: %d of %d free", need, need == 1 ? "" : "s",
                     freeslots, s->slots_usable);
        else snprintf(d->detail, sizeof d->detail, "waits behind %s, ahead of it in the queue (fifo)", head_id);
    }
    fifo_estimate(s, out, started, used, sims);
    return started;
}
